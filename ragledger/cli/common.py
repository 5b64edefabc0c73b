"""Pieces every command module shares: the error handler and the database option."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from warehouse.errors import WarehouseError
from warehouse.redaction import redact

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
            text = str(error)
            if _missing_data_file(text) or "no space left" in text.lower():
                text = describe_duckdb_error(error)
            raise click.ClickException(redact(text)) from error
        except Exception as error:
            if os.environ.get("RAGLEDGER_DEBUG") or not _is_duckdb_error(error):
                raise
            raise click.ClickException(describe_duckdb_error(error)) from error

    return wrapper  # type: ignore[return-value]


def _is_duckdb_error(error: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(error, duckdb.Error)


def _missing_data_file(text: str) -> bool:
    lowered = text.lower()
    return ".parquet" in lowered and (
        "no such file" in lowered or "no files found" in lowered
    )


def describe_duckdb_error(error: BaseException) -> str:
    """One line for an error DuckDB raised while a command read or wrote the lake."""
    text = str(error).strip()
    first = redact(text.splitlines()[0] if text else type(error).__name__)
    first = first.removeprefix("query failed: ")
    lowered = text.lower()
    if _missing_data_file(text):
        return (
            f"a data file of the lake is missing ({first}); restore the lake's "
            "files/ folder from a backup (nothing was changed)"
        )
    if "no space left" in lowered:
        return f"the disk is full ({first}); free space and run the command again"
    if "read-only" in lowered or "readonly" in lowered:
        return (
            f"the lake cannot be written here ({first}); reading works, writing "
            "needs a writable lake folder"
        )
    return f"the warehouse failed: {first}"


_DATABASE_KEY = "ragledger.database"


def database_path(ctx: click.Context) -> Path | None:
    """The warehouse file: ``--db`` of the command, else of the group, else None.

    None means the default file (``RAGLEDGER_DB``, else data/warehouse.duckdb).
    """
    value = ctx.meta.get(_DATABASE_KEY)
    if value is None:
        value = (ctx.find_root().obj or {}).get("database")
    return Path(value) if value else None


def _remember_database(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    if value is not None and not str(value).strip():
        raise click.BadParameter(
            "is empty; name a warehouse (NAME.duckdb) or leave --db out", ctx, _param
        )
    if value is not None:
        ctx.meta[_DATABASE_KEY] = value  # meta is shared by the whole context chain
    return value


_CONNECTION_KEY = "ragledger.connection"


def command_connection(
    ctx: click.Context,
    *,
    read_only: bool = False,
    at: int | None = None,
    location: Any = None,
    guarded: bool = False,
) -> Any:
    """The command's one connection to the warehouse, opened on first use.

    The warehouse is ``location`` (a :class:`warehouse.lake.Location`), else
    the command's ``--db`` (:func:`database_path`). ``read_only`` (``at``: a
    snapshot) opens a reader, else a writer (:func:`warehouse.connect`);
    ``guarded`` the locked-down reader of ``ragledger sql``
    (:func:`warehouse.sql_guard.reader_connection`). It is closed in one place,
    when the command's context closes (before the group publishes the snapshot
    file). A writer holds no lock while open: the lake's write lock is taken
    per transaction (:func:`warehouse.transaction`), so other jobs write
    meanwhile. Asking again returns the same connection; asking for another
    kind of connection in the same command is a programming error.
    """
    target = location if location is not None else database_path(ctx)
    wanted = (str(target), read_only or guarded, at, guarded)
    held = ctx.meta.get(_CONNECTION_KEY)
    if held is not None:
        if held[0] != wanted:
            raise RuntimeError(
                f"one connection per command: {held[0]} is open, {wanted} asked for"
            )
        return held[1]
    if guarded:
        from warehouse.sql_guard import reader_connection

        con = reader_connection(target, at=at)
    else:
        from warehouse import connect

        con = connect(target, read_only=read_only, at=at)
    ctx.meta[_CONNECTION_KEY] = (wanted, con)

    def close() -> None:
        ctx.meta.pop(_CONNECTION_KEY, None)
        con.close()

    ctx.call_on_close(close)
    return con


def database_option() -> click.Option:
    """``--db`` for one command; its value overrides the group's ``--db``."""
    return click.Option(
        ["--db"],
        type=click.Path(dir_okay=False),
        expose_value=False,
        callback=_remember_database,
        help="Warehouse file (overrides `ragledger --db` and RAGLEDGER_DB).",
    )


def accept_database_everywhere(command: click.Command) -> None:
    """Give ``command`` and every subcommand under it a ``--db`` option.

    ``ragledger --db W ingest matrix F`` and ``ragledger ingest matrix F --db W``
    then mean the same; a command's own ``--db`` wins over the group's.
    """
    if not any("--db" in param.opts for param in command.params):
        command.params.append(database_option())
    if isinstance(command, click.Group):
        # the subcommands loaded so far: a lazy group gives the others --db as
        # it loads them (ragledger.cli.LazyGroup)
        for sub in dict.values(command.commands):
            accept_database_everywhere(sub)


def batch_options(count_option: str, unit: str) -> Callable[[F], F]:
    """``count_option`` (``--batch-calls``, ``--batch-items``) and
    ``--batch-seconds``: one lake snapshot per batch, with the defaults and
    environment variables of :mod:`generation.journal`.

    ``unit`` says what a batch counts ("Answers", "Items").
    """
    from generation.journal import (
        BATCH_CALLS_ENV,
        BATCH_SECONDS_ENV,
        DEFAULT_BATCH_CALLS,
        DEFAULT_BATCH_SECONDS,
    )

    calls = click.option(
        count_option,
        type=int,
        envvar=BATCH_CALLS_ENV,
        default=DEFAULT_BATCH_CALLS,
        show_default=True,
        help=f"{unit} per lake commit (one snapshot per batch). Env: {BATCH_CALLS_ENV}.",
    )
    seconds = click.option(
        "--batch-seconds",
        type=float,
        envvar=BATCH_SECONDS_ENV,
        default=DEFAULT_BATCH_SECONDS,
        show_default=True,
        help=f"At most this many seconds between lake commits. Env: {BATCH_SECONDS_ENV}.",
    )

    def decorate(func: F) -> F:
        return calls(seconds(func))

    return decorate


def marks_job(kind: str) -> Callable[[F], F]:
    """Run the command as a job of ``kind`` (:func:`warehouse.runs.job`): a
    marker in the lake's ``tmp/`` while it runs (``ragledger runs`` shows it
    running, or interrupted if it is killed) and one raw.runs row written in
    the job's own commits (finished, with its rows and snapshot), or in one
    small commit when it commits nothing or fails. Put it under
    :func:`error_handler`."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from warehouse import lake
            from warehouse.runs import job

            ctx = click.get_current_context()
            try:
                location = lake.resolve(database_path(ctx))
            except WarehouseError:  # the command itself reports a bad --db
                return func(*args, **kwargs)
            with job(location, kind, command_line()):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def job_fields() -> dict[str, Any]:
    """The running job's ``run_id`` and the lake ``snapshot`` it committed (or
    read), for a command's csv/json record (see ``ragledger runs``)."""
    from warehouse.runs import current_job

    running = current_job()
    if running is None:
        return {"run_id": None, "snapshot": None}
    return {"run_id": running.run_id, "snapshot": running.snapshot}


def command_line() -> str:
    """This process's command line, for the record (secrets redacted)."""
    import shlex

    return redact(" ".join(["ragledger", *map(shlex.quote, sys.argv[1:])]))
