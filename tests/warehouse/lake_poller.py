"""A reader process for the lake concurrency tests (run as a script, not collected).

``python lake_poller.py MODE OUT STOP [ARG]`` polls the warehouse every 0.25 s
until the file STOP exists, appending one JSON line per poll to OUT:
``{"seen": [matrix_rows, outcomes]}`` or ``{"error": "..."}``. Modes:

``attach``      the ``duckdb_sql_statements`` of ``ragledger connect --json``
                (ARG: that JSON file), a fresh DuckDB connection every 10th poll
``sqlalchemy``  duckdb-engine with the recipe's url, connect_args and
                on_connect statements run in the ``connect`` event (pooled)
``ibis``        ``warehouse.sql_guard.ibis_connection`` (ARG: --db), fresh every 10th
``ibis_recipe`` the recipe's ibis snippet, run once; polls on that backend
``held``        one connection (attach recipe) with a partially fetched result
                held open for the whole run; at the end the rest of the result
                is fetched and must be as long as the table was when it began
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

COUNT_QUERY = (
    "select (select count(*) from raw.matrix_rows) as matrix_rows, "
    "(select count(*) from marts.fct_outcomes) as outcomes"
)


def main() -> None:
    mode, out_path, stop_path = sys.argv[1:4]
    arg = sys.argv[4] if len(sys.argv) > 4 else None
    out = open(out_path, "a", buffering=1)  # noqa: SIM115
    stop = Path(stop_path)

    def record(**fields) -> None:
        out.write(json.dumps(fields) + "\n")

    poll = make_poll(mode, arg, record)
    while True:
        try:
            record(seen=list(poll()), t=time.time())
        except Exception as error:  # noqa: BLE001 - every failure is a finding
            record(
                error=f"{type(error).__name__}: {' '.join(str(error).split())[:400]}"
            )
        if stop.exists():
            break
        time.sleep(0.25)
    finish = getattr(poll, "finish", None)
    if finish is not None:
        try:
            finish()
        except Exception as error:  # noqa: BLE001
            record(error=f"{type(error).__name__}: {error}")


def make_poll(mode: str, arg: str | None, record):
    if mode in ("attach", "sqlalchemy", "ibis_recipe", "held"):
        recipes = json.loads(Path(arg).read_text())
    if mode == "attach":
        import duckdb

        state = {"con": None, "polls": 0}

        def poll():
            # a fresh attach every 10th poll; the polls between reuse it
            if state["polls"] % 10 == 0:
                if state["con"] is not None:
                    state["con"].close()
                state["con"] = duckdb.connect()
                for statement in recipes["duckdb_sql_statements"]:
                    state["con"].execute(statement)
            state["polls"] += 1
            return state["con"].execute(COUNT_QUERY).fetchone()

        return poll
    if mode == "sqlalchemy":
        import sqlalchemy
        from sqlalchemy import event

        spec = recipes["sqlalchemy_on_connect"]
        engine = sqlalchemy.create_engine(
            spec["url"], connect_args=spec["connect_args"]
        )

        @event.listens_for(engine, "connect")
        def on_connect(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            for statement in spec["on_connect"]:
                cursor.execute(statement)
            cursor.close()

        def poll():
            with engine.connect() as connection:
                return tuple(connection.execute(sqlalchemy.text(COUNT_QUERY)).one())

        return poll
    if mode == "ibis":
        from warehouse.sql_guard import ibis_connection

        state = {"backend": None, "polls": 0}

        def poll():
            if state["polls"] % 10 == 0:
                if state["backend"] is not None:
                    state["backend"].disconnect()
                state["backend"] = ibis_connection(arg)
            state["polls"] += 1
            table = state["backend"].sql(COUNT_QUERY).to_pyarrow()
            return tuple(table.to_pylist()[0].values())

        return poll
    if mode == "ibis_recipe":
        namespace: dict = {}
        exec(recipes["ibis"], namespace)  # noqa: S102 - the recipe users paste
        backend = namespace["con"]

        def poll():
            return tuple(backend.sql(COUNT_QUERY).to_pyarrow().to_pylist()[0].values())

        return poll
    if mode == "held":
        import duckdb

        con = duckdb.connect()
        for statement in recipes["duckdb_sql_statements"]:
            con.execute(statement)
        expected = con.execute(COUNT_QUERY).fetchone()
        held = con.cursor()  # a cursor is a new session: USE is not inherited
        held.execute("select * from lake.raw.matrix_rows")
        first = held.fetchmany(5)
        state = {"polls": 0}

        def poll():
            state["polls"] += 1
            return expected

        def finish():
            rest = held.fetchall()
            total = len(first) + len(rest)
            if total != expected[0]:
                record(error=f"held result had {total} rows, not {expected[0]}")
            held.close()
            con.close()

        poll.finish = finish
        return poll
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
