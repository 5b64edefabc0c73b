"""ragledger: a DuckDB warehouse for RAG evaluation (command line on top of the layers)."""

__version__ = "0.1.0"
