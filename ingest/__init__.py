"""Loaders: files -> the ``raw`` schema (released matrix, ragscale audit files, benchmark files)."""
