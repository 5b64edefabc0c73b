"""Helpers for the lake tests: the real CLI as a subprocess, lakes, fingerprints.

Fingerprints and counts do not use the warehouse package: the tests look at a
lake the way an outside client would (plain ``duckdb`` with the DuckLake extension attached
read-only), so a fingerprint does not depend on the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAGLEDGER = Path(sys.executable).with_name("ragledger")
#: A reduced generated matrix: ~3,500 rows (the full file has 176,864).
TEST_SCALE = 0.02


def cli_env(**extra: str) -> dict[str, str]:
    """The environment every ragledger subprocess gets (this checkout's code)."""
    env = dict(os.environ)
    env.pop("RAGLEDGER_DB", None)
    env.pop("RAGLEDGER_DEBUG", None)
    env["PYTHONPATH"] = str(REPO)
    env.setdefault("COLUMNS", "200")
    env.update(extra)
    return env


def ragledger(
    db: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run ``ragledger --db DB ARGS`` to completion."""
    done = subprocess.run(
        [str(RAGLEDGER), "--db", str(db), *args],
        cwd=REPO,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"ragledger {' '.join(args)} exited {done.returncode}:\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return done


def start(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``ragledger --db DB ARGS`` (stdout and stderr merged, line buffered)."""
    return subprocess.Popen(
        [str(RAGLEDGER), "--db", str(db), *args],
        cwd=REPO,
        env=env or cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )


def sql_json(db: Path, query: str, env: dict[str, str] | None = None) -> list[dict]:
    done = ragledger(db, "sql", "--format", "json", query, env=env)
    return json.loads(done.stdout)  # one JSON array of objects


def write_matrix(path: Path, *, seed: int, scale: float = TEST_SCALE) -> int:
    """A generated matrix file (benchmarks/matrix_file.py), ``seed`` picks the rows."""
    sys.path.insert(0, str(REPO))
    from benchmarks.matrix_file import write_matrix as write

    return write(path, seed=seed, scale=scale)


def lake_of(db: Path) -> Path:
    return db.with_suffix(".lake")


def clone_lake(source_db: Path, target_db: Path) -> None:
    """Copy a SQLite-catalog lake (and its snapshot file) to another place."""
    from warehouse.lake import copy_warehouse

    copy_warehouse(source_db, target_db)


def attach_statement(db: Path, catalog: str | None = None) -> str:
    """The ATTACH an outside client runs (read-only), written from DuckLake's docs.

    ``catalog``: a ``postgres:...`` catalog instead of the lake's SQLite file.
    """
    lake = lake_of(db)
    catalog = catalog or f"sqlite:{lake / 'catalog.sqlite'}"
    return (
        f"ATTACH 'ducklake:{catalog}' AS lake "
        f"(DATA_PATH '{lake / 'files'}/', READ_ONLY)"
    )


def outside_connection(db: Path, env: dict[str, str] | None = None):
    """Plain duckdb with the lake attached read-only (extensions already installed)."""
    import duckdb

    con = duckdb.connect()
    con.execute(attach_statement(db, (env or {}).get("RAGLEDGER_CATALOG")))
    con.execute("use lake")
    return con


def table_fingerprints(con, schema: str) -> dict[str, tuple[int, str]]:
    """``{table: (rows, md5 of the sorted rows as text)}`` for every table of a schema."""
    names = [
        name
        for (name,) in con.execute(
            "select table_name from duckdb_tables() where database_name = "
            "current_database() and schema_name = ? order by 1",
            [schema],
        ).fetchall()
    ]
    out = {}
    for name in names:
        rows, digest = con.execute(
            f"select count(*), md5(coalesce(string_agg(r, chr(10) order by r), '')) "
            f'from (select cast(t as varchar) as r from {schema}."{name}" t)'
        ).fetchone()
        out[name] = (int(rows), str(digest))
    return out


def row_counts(con, schemas=("raw", "marts", "analysis")) -> dict[str, int]:
    out = {}
    for schema, name in con.execute(
        "select schema_name, table_name from duckdb_tables() where database_name = "
        "current_database() and schema_name in (select unnest(?::varchar[])) "
        "order by 1, 2",
        [list(schemas)],
    ).fetchall():
        out[f"{schema}.{name}"] = con.execute(
            f'select count(*) from {schema}."{name}"'
        ).fetchone()[0]
    return out


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of every file under ``root``."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# ------------------------------------------------------------ polling readers

#: What one poll asks: the matrix row count and the outcomes mart's, in one
#: statement (so both come from one snapshot).
COUNT_QUERY = (
    "select (select count(*) from raw.matrix_rows) as matrix_rows, "
    "(select count(*) from marts.fct_outcomes) as outcomes"
)

POLLER = REPO / "tests" / "warehouse" / "lake_poller.py"


@dataclass
class Polling:
    """Readers running in other processes until :meth:`stop`."""

    folder: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    cli_seen: list[tuple[int, int]] = field(default_factory=list)
    cli_errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def stop_file(self) -> Path:
        return self.folder / "stop"

    def start_process(self, mode: str, *args: str, env=None) -> None:
        out = self.folder / f"{mode}.jsonl"
        self.processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(POLLER),
                    mode,
                    str(out),
                    str(self.stop_file),
                    *args,
                ],
                cwd=REPO,
                env=env or cli_env(),
                stdout=subprocess.DEVNULL,
                stderr=open(self.folder / f"{mode}.stderr", "w"),  # noqa: SIM115
            )
        )

    def start_cli(self, db: Path, env=None) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                done = ragledger(
                    db, "sql", "--format", "json", COUNT_QUERY, check=False, env=env
                )
                if done.returncode != 0:
                    self.cli_errors.append(done.stderr.strip() or done.stdout.strip())
                else:
                    row = json.loads(done.stdout)[-1]
                    self.cli_seen.append((row["matrix_rows"], row["outcomes"]))
                # a ragledger process costs ~1 s of CPU: leave the jobs a core
                time.sleep(1.0)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self.threads.append(thread)

    def wait_ready(self, timeout: float = 120) -> None:
        """Wait until every reader process has made its first observation."""
        deadline = time.monotonic() + timeout
        for process in self.processes:
            mode = Path(process.args[2]).stem
            out = self.folder / f"{mode}.jsonl"
            while not (out.exists() and out.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"reader {mode} did not start: "
                        + (self.folder / f"{mode}.stderr").read_text()
                    )
                time.sleep(0.1)
        while self.threads and not (self.cli_seen or self.cli_errors):
            if time.monotonic() > deadline:
                raise AssertionError("ragledger sql reader did not start")
            time.sleep(0.1)

    def stop(self) -> dict[str, dict]:
        """Stop every reader; return ``{mode: {"seen": [...], "errors": [...]}}``."""
        self._stop.set()
        self.stop_file.write_text("stop")
        for thread in self.threads:
            thread.join(timeout=120)
        results: dict[str, dict] = {}
        for process in self.processes:
            mode = Path(process.args[2]).stem
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            seen, errors = [], []
            for line in (self.folder / f"{mode}.jsonl").read_text().splitlines():
                record = json.loads(line)
                if "error" in record:
                    errors.append(record["error"])
                elif "seen" in record:
                    seen.append(tuple(record["seen"]))
            stderr = (self.folder / f"{mode}.stderr").read_text().strip()
            if process.returncode != 0:
                errors.append(f"exit {process.returncode}: {stderr[-500:]}")
            results[mode] = {"seen": seen, "errors": errors}
        if self.threads:
            results["ragledger sql"] = {
                "seen": self.cli_seen,
                "errors": self.cli_errors,
            }
        return results
