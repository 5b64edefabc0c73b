"""The ``ragledger`` command: a click group wiring commands to library functions.

Each command module owns one area and exports ``COMMANDS`` (click commands or
groups). This package is the only place that imports every layer.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from ragledger import __version__

#: command name -> (module in ragledger.cli, its one-line help). Modules are
#: imported only when their command runs, so ``ragledger --help`` and a
#: ``ragledger sql`` load no other command's dependencies. The help lines are
#: what ``--help`` lists; tests/cli/test_lazy_commands.py checks that they and
#: the names match the modules' ``COMMANDS``.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("audit_commands", "Audit panels from the marts: retention, bootstraps, flips, nulls, EIV, McNemar."),
    "build": ("dbt_commands", "Refresh the marts: run `dbt build` (models, unit tests, data tests)."),
    "compile": ("compile_commands", "Compile one evidence artifact per item for POLICY at BUDGET."),
    "connect": ("connect_commands", "Print how to reach the warehouse now: DuckDB SQL, SQLAlchemy, ibis, a file."),
    "export": ("warehouse_commands", "Export warehouse tables to files."),
    "ingest": ("ingest_commands", "Load outcome and benchmark files into the warehouse (each load is one transaction)."),
    "init": ("warehouse_commands", "Create the warehouse (or bring its schema up to date) and load the default family map."),
    "maintain": ("warehouse_commands", "Compact small data files, expire old snapshots and remove orphan files."),
    "migrate": ("warehouse_commands", "Convert a ragledger 0.1 single-file warehouse OLD into a lake."),
    "panels": ("panels_commands", "List the panels of the marts with their footprint and verdict."),
    "replay": ("replay_commands", "Run readers on a dataset's stored evidence artifacts and store the answers."),
    "replay-audit": ("audit_commands", "ragscale's replay-audit on its own file, with no warehouse, plus every audit statistic."),
    "rescore": ("rescore_commands", "Rescore a dataset's stored answers under one scorer version."),
    "runs": ("runs_commands", "List the runs recorded in raw.runs, newest first."),
    "scorers": ("rescore_commands", "List the scorers (NAME@VERSION), their metrics and the benchmark defaults."),
    "sql": ("warehouse_commands", "Run QUERY read-only and print the result."),
}  # fmt: skip
#: every module that exports COMMANDS
COMMAND_MODULES = tuple(dict.fromkeys(module for module, _ in LAZY_COMMANDS.values()))


class _Commands(dict):
    """``group.commands``: looking one name up loads one module; listing loads all."""

    def __init__(self, group: LazyGroup, commands: dict[str, click.Command]) -> None:
        super().__init__(commands)
        self.group = group

    def _all(self) -> None:
        self.group.load_all()

    def __iter__(self):  # noqa: ANN204
        self._all()
        return super().__iter__()

    def __len__(self) -> int:
        self._all()
        return super().__len__()

    def keys(self):  # noqa: ANN201
        self._all()
        return super().keys()

    def values(self):  # noqa: ANN201
        self._all()
        return super().values()

    def items(self):  # noqa: ANN201
        self._all()
        return super().items()


class LazyGroup(click.Group):
    """A click group that imports a command's module only when it is used.

    click's documented lazy-loading pattern, with ``--help`` listing the
    commands from its table (``lazy``: name -> (module in ragledger.cli, help);
    :data:`LAZY_COMMANDS` by default) without importing any of them; code that
    walks ``group.commands`` sees every command. A loaded command accepts
    ``--db`` (:func:`ragledger.cli.common.accept_database_everywhere`).
    """

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = LAZY_COMMANDS if lazy is None else lazy
        self.modules = tuple(dict.fromkeys(module for module, _ in self.lazy.values()))
        self.loaded: set[str] = set()
        self.commands = _Commands(self, self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy) | set(dict.keys(self.commands)))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in dict.keys(self.commands):
            entry = self.lazy.get(cmd_name)
            for module in (entry[0],) if entry else self.modules:
                self.load(module)
                if cmd_name in dict.keys(self.commands):
                    break
        return dict.get(self.commands, cmd_name)

    def load(self, module_name: str) -> None:
        """Import one module of the table and add its ``COMMANDS``."""
        if module_name in self.loaded:
            return
        self.loaded.add(module_name)
        module = importlib.import_module(f"ragledger.cli.{module_name}")
        from ragledger.cli.common import accept_database_everywhere

        for command in module.COMMANDS:
            accept_database_everywhere(command)
            self.add_command(command)

    def load_all(self) -> click.Group:
        """Import every module of the table (tests and documentation tools)."""
        for module_name in self.modules:
            self.load(module_name)
        return self

    def format_commands(
        self, ctx: click.Context, formatter: click.HelpFormatter
    ) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy:
                text = click.utils.make_default_short_help(self.lazy[name][1], limit)
            else:
                text = dict.__getitem__(self.commands, name).get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def load_all() -> click.Group:
    """Import every command module (tests and documentation tools)."""
    return main.load_all()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragledger")
@click.option(
    "--db",
    "database",
    envvar="RAGLEDGER_DB",
    type=click.Path(dir_okay=False),
    help=(
        "Warehouse: the published snapshot file NAME.duckdb, whose lake is "
        "NAME.lake/ beside it (default data/warehouse.duckdb; env RAGLEDGER_DB)."
    ),
)
@click.pass_context
def main(ctx: click.Context, database: str | None) -> None:
    """ragledger: a DuckDB warehouse for RAG evaluation.

    Load reader outcomes (the released interaction matrix, ragscale audits,
    benchmark files), compile evidence artifacts, run readers, refresh marts
    with dbt and audit whether compression preserves reader comparisons.
    """
    from ragledger.cli.console import fit_width

    fit_width()  # COLUMNS as this invocation sees it
    if database is not None and not database.strip():
        raise click.BadParameter(
            "is empty; name a warehouse (NAME.duckdb) or leave --db out",
            ctx,
            param_hint="'--db'",
        )
    ctx.obj = {"database": database}
    ctx.call_on_close(_publish_snapshots)


def _publish_snapshots() -> None:
    """Bring the snapshot file of every lake this command wrote to up to date.

    The file is a copy for tools that open only a file; a file that already
    matches the lake costs nothing (a lake merely opened for writing is
    checked too, so a file left stale by a killed publish is refreshed by the
    next writing command, even one that changes nothing). A failure to refresh
    it never fails the command: one warning line when the command committed,
    and the next writing command retries.
    """
    connections = sys.modules.get("warehouse.connections")
    if connections is None or not (connections.COMMITTED or connections.OPENED):
        return
    from warehouse.redaction import redact
    from warehouse.snapshot_file import publish

    committed = {str(location.root) for location in connections.COMMITTED}
    pending = {str(location.root): location for location in connections.OPENED}
    pending.update((str(location.root), location) for location in connections.COMMITTED)
    connections.COMMITTED.clear()
    connections.OPENED.clear()
    for root, location in sorted(pending.items()):
        if not location.root.is_dir():
            continue  # a lake the command removed again (a failed migrate's)
        try:
            publish(location)
        except Exception as error:  # noqa: BLE001 - the job itself has ended
            if root not in committed:
                continue
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            click.echo(
                f"warning: snapshot file {location.snapshot_file} not refreshed "
                f"(the job's data is committed in the lake): {redact(first)}; the "
                "next writing command retries",
                err=True,
            )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
