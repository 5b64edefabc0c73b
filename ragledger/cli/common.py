"""Pieces every command module shares: the error handler and the database option."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from warehouse.errors import WarehouseError

F = TypeVar("F", bound=Callable[..., Any])


def error_handler(func: F) -> F:
    """Turn domain errors into one-line messages and exit code 1.

    ``RAGLEDGER_DEBUG=1`` re-raises them with the traceback.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WarehouseError as error:
            if os.environ.get("RAGLEDGER_DEBUG"):
                raise
            raise click.ClickException(str(error)) from error

    return wrapper  # type: ignore[return-value]


def database_path(ctx: click.Context) -> Path | None:
    """The ``--db`` given to the group (None means the default file)."""
    root = ctx.find_root()
    value = (root.obj or {}).get("database")
    return Path(value) if value else None
