"""Four machines, one lake on PostgreSQL: ``python -m benchmarks pg_writers --scale 1|10``.

Issue 19 item 7, the distributed path at size. A PostgreSQL server (Debian's
``postgresql`` package, started here in a temporary folder) holds the lake's
catalog; the Parquet files go to one shared data folder. Four writer
"machines" each have their own warehouse folder (``--db mK/w.duckdb``: their own
``tmp/``, journals and lock files) and their own ``TMPDIR``, and share only the
catalog and the data folder. Each machine ingests its own generated matrix
(``benchmarks/matrix_file.py``; the four files together are ``--scale`` times
the released 176,864 rows, so ``--scale 10`` is 1.77M rows) and replays its own
echo reader over the bundled HotpotQA example (100 items x raw + summary x
``--seeds`` seeds), in batches of ``--batch-calls``; machines 0 and 2 ingest
first, 1 and 3 replay first, so ingests and replay batches commit in between
each other. A command refused on a conflict is run again (it is idempotent:
the rerun adds no row twice) and counted.

Meanwhile a reader (plain duckdb with the lake attached read-only, an outside
client) polls; each poll is one statement, so one snapshot: every release's
matrix rows, and every reader's generations, attempts and scores. A committed
state has each release whole or absent, and each reader's attempts equal to
its generations and its scores a fixed multiple of them (a replay batch commits
all three together); counts never go down between polls.

Prints: commits (lake snapshots made), conflicts retried, rows expected vs
found per release and per reader, duplicates, polls and inconsistent polls,
wall and CPU seconds. Exits 1 if a row is lost or doubled or a poll saw a state
no commit made.
"""

from __future__ import annotations

import argparse
import getpass
import glob
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.echo_server import echo_server

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"
RAGLEDGER = Path(sys.executable).with_name("ragledger")
MACHINES = 4
#: what a refused commit says (warehouse.connections.transaction)
CONFLICT_WORDS = ("conflict", "refused the commit")


# ------------------------------------------------------------ PostgreSQL


@contextmanager
def postgres_server() -> Iterator[dict]:
    """A throwaway PostgreSQL cluster on a Unix socket; yields its connection
    keywords (``host``, ``port``, ``user``, ``bindir``, ``as_user``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise SystemExit("no PostgreSQL server: apt-get install -y postgresql")
    bindir = Path(found[-1]).parent
    as_user: list[str] = []
    user = getpass.getuser()
    folder = Path(tempfile.mkdtemp(prefix="ragledger-pg-"))
    if os.geteuid() == 0:  # postgres refuses to run as root
        as_user, user = ["runuser", "-u", "postgres", "--"], "postgres"
        shutil.chown(folder, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(folder / "data"), "-A",
         "trust", "-U", user],
        check=True, capture_output=True,
    )  # fmt: skip
    log = open(folder / "server.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [*as_user, str(bindir / "postgres"), "-D", str(folder / "data"), "-k",
         str(folder), "-p", str(port), "-c", "listen_addresses=", "-c",
         "fsync=off", "-c", "max_connections=200"],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(
            [str(bindir / "pg_isready"), "-h", str(folder), "-p", str(port)],
            capture_output=True,
        ).returncode:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((folder / "server.log").read_text())
            time.sleep(0.2)
        yield {"bindir": bindir, "host": str(folder), "port": port, "user": user,
               "as_user": as_user}  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def create_database(postgres: dict, name: str) -> str:
    """A new database on the server; returns its ``RAGLEDGER_CATALOG`` value."""
    subprocess.run(
        [str(postgres["bindir"] / "createdb"), "-h", postgres["host"], "-p",
         str(postgres["port"]), "-U", postgres["user"], name],
        check=True, capture_output=True,
    )  # fmt: skip
    return (
        f"postgres:host={postgres['host']} port={postgres['port']} "
        f"dbname={name} user={postgres['user']}"
    )


# ------------------------------------------------------------ the run


@dataclass
class Figures:
    """What one run measured."""

    rows_expected: dict[str, int]
    calls_expected: dict[str, int]
    rows_found: dict[str, int] = field(default_factory=dict)
    calls_found: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    commits: int = 0
    conflicts_retried: int = 0
    failures: list[str] = field(default_factory=list)
    polls: int = 0
    inconsistent: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            not self.failures
            and not self.inconsistent
            and self.duplicates == 0
            and self.rows_found == self.rows_expected
            and self.calls_found == self.calls_expected
            and self.polls > 0
        )


def _env(catalog: str, data_path: Path, machine: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RAGLEDGER_DB", "RAGLEDGER_DEBUG"):
        env.pop(name, None)
    env.update(
        PYTHONPATH=str(REPO),
        RAGLEDGER_CATALOG=catalog,
        RAGLEDGER_DATA_PATH=f"{data_path}/",
        RAGLEDGER_PUBLISH="0",  # each machine's snapshot file is not the subject
        TMPDIR=str(machine / "tmp"),
        COLUMNS="200",
    )
    return env


def _run(db: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RAGLEDGER), "--db", str(db), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=7200,
    )  # fmt: skip


def _writer(
    machine: Path, env: dict, commands: list[list[str]], figures: Figures, lock
) -> None:
    """Run one machine's commands in order, each again after a conflict."""
    db = machine / "w.duckdb"
    for command in commands:
        for _ in range(20):
            done = _run(db, env, *command)
            if done.returncode == 0:
                break
            said = (done.stdout + done.stderr).lower()
            if not any(word in said for word in CONFLICT_WORDS):
                with lock:
                    figures.failures.append(
                        f"{machine.name} {command[0]}: {done.stderr.strip()[-500:]}"
                    )
                return
            with lock:
                figures.conflicts_retried += 1
        else:
            with lock:
                figures.failures.append(f"{machine.name} {command[0]}: 20 conflicts")
            return


POLLER = """
import json, sys, time
from pathlib import Path
import duckdb
catalog, data_path, out, stop = sys.argv[1:5]
con = duckdb.connect()
con.execute(
    f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data_path}/', READ_ONLY)"
)
query = '''
select
  (select coalesce(json_group_object(release, n), '{}') from
     (select release, count(*) as n from lake.raw.matrix_rows group by 1)),
  (select coalesce(json_group_object(reader_id, n), '{}') from
     (select reader_id, count(*) as n from lake.raw.generations
      where reader_id like 'echo-%' group by 1)),
  (select coalesce(json_group_object(reader_id, n), '{}') from
     (select g.reader_id, count(*) as n from lake.raw.generation_attempts a
      join lake.raw.generations g using (generation_id)
      where g.reader_id like 'echo-%' and a.call_kind = 'reader' group by 1)),
  (select coalesce(json_group_object(reader_id, n), '{}') from
     (select g.reader_id, count(*) as n from lake.raw.scores s
      join lake.raw.generations g using (generation_id)
      where g.reader_id like 'echo-%' group by 1))
'''
with open(out, "w") as handle:
    while not Path(stop).exists():
        try:
            row = con.execute(query).fetchone()
        except duckdb.Error as error:
            handle.write(json.dumps({"error": str(error).splitlines()[0]}) + "\\n")
        else:
            handle.write(json.dumps([json.loads(x) for x in row]) + "\\n")
        handle.flush()
        time.sleep(0.2)
"""


def run(
    folder: Path,
    catalog: str,
    *,
    scale: float,
    seeds: int = 1,
    limit: int | None = None,
    batch_calls: int = 50,
    concurrency: int = 2,
) -> Figures:
    """Four writer machines and one polling reader on the lake whose catalog is
    ``catalog``, all under ``folder``; returns the figures."""
    data_path = folder / "files"
    data_path.mkdir(parents=True)
    machines = [folder / f"m{k}" for k in range(MACHINES)]
    envs = []
    for machine in machines:
        (machine / "tmp").mkdir(parents=True)
        envs.append(_env(catalog, data_path, machine))
    setup = _run(machines[0] / "w.duckdb", envs[0], "init")
    for step in (setup, _run(machines[0] / "w.duckdb", envs[0], "ingest",
                             "ragscale", str(EXAMPLE))):  # fmt: skip
        if step.returncode:
            raise RuntimeError(step.stdout + step.stderr)
    sys.path.insert(0, str(REPO))
    from benchmarks.matrix_file import write_matrix

    keys = _evidence_keys(catalog, data_path, limit)
    figures = Figures({}, {})
    files = []
    for k in range(MACHINES):
        path = folder / f"w{k}.csv.gz"
        figures.rows_expected[f"w{k}"] = write_matrix(
            path, seed=100 + k, scale=scale / MACHINES
        )
        figures.calls_expected[f"echo-{k}"] = keys * seeds
        files.append(path)
    with echo_server(envs[0]) as url:
        config = folder / "readers.yaml"
        config.write_text(
            "readers:\n"
            + "".join(
                f"  echo-{k}:\n    model: openai/echo\n    family: echo\n"
                f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
                for k in range(MACHINES)
            )
        )
        figures.commits = -_snapshots(catalog, data_path)
        _together(folder, catalog, data_path, machines, envs, files, config,
                  figures, seeds=seeds, limit=limit, batch_calls=batch_calls,
                  concurrency=concurrency)  # fmt: skip
        figures.commits += _snapshots(catalog, data_path)
    _final(catalog, data_path, figures)
    return figures


def _together(folder, catalog, data_path, machines, envs, files, config, figures,
              *, seeds, limit, batch_calls, concurrency) -> None:  # fmt: skip
    """The four writers at once, and the reader polling until they end."""
    polls, stop = folder / "polls.jsonl", folder / "stop"
    poller = subprocess.Popen(
        [sys.executable, "-c", POLLER, catalog, str(data_path), str(polls),
         str(stop)],
        cwd=REPO, env=envs[0],
    )  # fmt: skip
    lock = threading.Lock()
    clock, usage = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    threads = []
    for k, machine in enumerate(machines):
        ingest = ["ingest", "matrix", str(files[k])]
        replay = [
            "replay", "--dataset", DATASET, "--readers", f"echo-{k}", "--config",
            str(config), "--evidence", f"raw,{SUMMARY}", "--seeds",
            ",".join(str(seed) for seed in range(seeds)), "--concurrency",
            str(concurrency), "--batch-calls", str(batch_calls), "--max-attempts",
            "1", "--rate-limit-retries", "0", "--backoff", "0",
        ]  # fmt: skip
        if limit is not None:
            replay += ["--limit", str(limit)]
        commands = [ingest, replay] if k % 2 == 0 else [replay, ingest]
        thread = threading.Thread(
            target=_writer, args=(machine, envs[k], commands, figures, lock)
        )
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    stop.touch()
    poller.wait(timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures.wall_s = time.perf_counter() - clock
    figures.cpu_s = (after.ru_utime - usage.ru_utime) + (
        after.ru_stime - usage.ru_stime
    )
    _check_polls(polls, figures)


def _outside(catalog: str, data_path: Path):
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data_path}/', READ_ONLY)"
    )
    return con


def _evidence_keys(catalog: str, data_path: Path, limit: int | None) -> int:
    """(item, policy) pairs of the dataset's first ``limit`` items whose artifact
    text is stored: the answers one reader gives per seed (an artifact without
    text is refused; the bundled example has two under its raw policy; its two
    policies are the replay's raw and summary evidence). Read by
    the outside client from what the ingest stored, not from the replay."""
    con = _outside(catalog, data_path)
    try:
        return con.execute(
            "select count(*) from lake.raw.artifact_compilations c "
            "join lake.raw.artifacts a using (artifact_hash) "
            "where c.dataset_id = ? and a.text is not null "  # both its policies
            "and c.item_id in (select item_id from lake.raw.items where "
            "dataset_id = ? order by item_id limit ?)",
            [DATASET, DATASET, limit or 1_000_000],
        ).fetchone()[0]
    finally:
        con.close()


def _snapshots(catalog: str, data_path: Path) -> int:
    con = _outside(catalog, data_path)
    try:
        return con.execute(
            "select count(*) from ducklake_snapshots('lake')"
        ).fetchone()[0]
    finally:
        con.close()


def _final(catalog: str, data_path: Path, figures: Figures) -> None:
    con = _outside(catalog, data_path)
    try:
        figures.rows_found = {
            release: rows
            for release, rows in con.execute(
                "select release, count(*) from lake.raw.matrix_rows group by 1"
            ).fetchall()
            if release in figures.rows_expected
        }
        figures.calls_found = dict(
            con.execute(
                "select reader_id, count(*) from lake.raw.generations "
                "where reader_id like 'echo-%' group by 1"
            ).fetchall()
        )
        figures.duplicates = con.execute(
            "select (select count(*) - count(distinct generation_id) from "
            "lake.raw.generations) + (select count(*) from (select call_id, attempt "
            "from lake.raw.generation_attempts group by all having count(*) > 1)) + "
            "(select count(*) - count(distinct (release, dataset, example_id, "
            "reader_model, method)) from lake.raw.matrix_rows)"
        ).fetchone()[0]
    finally:
        con.close()


def _check_polls(path: Path, figures: Figures) -> None:
    """Every poll a committed state; no count ever goes down."""
    per_score = None
    previous: list[dict] | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        poll = json.loads(line)
        if isinstance(poll, dict):
            figures.inconsistent.append(f"poll {number}: error {poll['error']}")
            continue
        figures.polls += 1
        releases, generations, attempts, scores = poll
        for release, rows in releases.items():
            if (
                release in figures.rows_expected
                and rows != figures.rows_expected[release]
            ):
                figures.inconsistent.append(f"poll {number}: {release} has {rows} rows")
        for reader, made in generations.items():
            if attempts.get(reader, 0) != made:
                figures.inconsistent.append(
                    f"poll {number}: {reader} {made} answers, "
                    f"{attempts.get(reader, 0)} attempts"
                )
            per = scores.get(reader, 0) / made
            per_score = per if per_score is None else per_score
            if per != per_score:
                figures.inconsistent.append(
                    f"poll {number}: {reader} {scores.get(reader, 0)} scores for "
                    f"{made} answers"
                )
        if previous is not None:
            for before, now in zip(previous, poll, strict=True):
                if any(now.get(key, 0) < value for key, value in before.items()):
                    figures.inconsistent.append(f"poll {number}: a count went down")
        previous = poll


def report(figures: Figures) -> str:
    lines = [
        f"commits (lake snapshots made): {figures.commits}",
        f"conflicts retried: {figures.conflicts_retried}",
        f"failures: {len(figures.failures)}",
        *(f"  {failure}" for failure in figures.failures),
        f"matrix rows expected {sum(figures.rows_expected.values()):,} found "
        f"{sum(figures.rows_found.values()):,}",
        *(
            f"  {release}: expected {rows:,} found {figures.rows_found.get(release, 0):,}"
            for release, rows in sorted(figures.rows_expected.items())
        ),
        f"replay answers expected {sum(figures.calls_expected.values()):,} found "
        f"{sum(figures.calls_found.values()):,}",
        f"duplicates: {figures.duplicates}",
        f"reader polls: {figures.polls}, inconsistent: {len(figures.inconsistent)}",
        *(f"  {line}" for line in figures.inconsistent[:10]),
        f"wall {figures.wall_s:.1f} s, CPU of the writers and reader "
        f"{figures.cpu_s:.1f} s",
        "verdict: " + ("ok" if figures.ok else "FAILED"),
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pg_writers")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="the four matrices together, x 176,864 rows")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=None,
                        help="replay seeds per machine (default: the scale, 1..5)")  # fmt: skip
    parser.add_argument("--batch-calls", type=int, default=50)
    args = parser.parse_args(argv)
    seeds = args.seeds or max(1, min(5, round(args.scale / 2)))
    with postgres_server() as postgres, tempfile.TemporaryDirectory() as folder:
        catalog = create_database(postgres, "writers")
        figures = run(
            Path(folder), catalog, scale=args.scale, seeds=seeds,
            batch_calls=args.batch_calls,
        )  # fmt: skip
    print(f"pg_writers --scale {args.scale:g} ({MACHINES} machines, {seeds} seed(s))")  # noqa: T201
    print(report(figures))  # noqa: T201
    if not figures.ok:
        sys.exit(1)
