"""The ground floor of ragledger: the one place that opens DuckDB (and the lake).

It imports nothing else of ours. Everything above it (``ingest``, ``generation``,
``analysis`` and the CLI) opens the warehouse through :func:`connect` and writes
through :func:`transaction`.
"""

from __future__ import annotations

from warehouse.connections import (
    connect,
    current_snapshot,
    default_database_path,
    pin,
    transaction,
)
from warehouse.errors import InputError, WarehouseError
from warehouse.hashing import canonical_json, sha256_file, sha256_json, sha256_text
from warehouse.schema import SCHEMA_VERSION, migrate

__all__ = [
    "SCHEMA_VERSION",
    "InputError",
    "WarehouseError",
    "canonical_json",
    "connect",
    "current_snapshot",
    "default_database_path",
    "migrate",
    "pin",
    "sha256_file",
    "sha256_json",
    "sha256_text",
    "transaction",
]
