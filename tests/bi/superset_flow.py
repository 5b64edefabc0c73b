"""Drive Apache Superset (in ``.venv-bi``) the way a user would, over its REST API.

Used by tests/bi/test_superset.py (``make bi-check``); also runnable by hand to
refresh docs/bi/ (``python -m tests.bi.superset_flow --db PATH --docs``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
VENV_BI = REPO / ".venv-bi"
SUPERSET = VENV_BI / "bin" / "superset"
CONFIG = Path(__file__).with_name("superset_config.py")
ADMIN = ("admin", "admin-check")
#: the chart: reader means per reader (raw vs compressed), from marts.fct_panel_readers
CHART_TABLE = ("marts", "fct_panel_readers")
METRICS = [
    {
        "expressionType": "SIMPLE",
        "column": {"column_name": column},
        "aggregate": "AVG",
        "label": label,
    }
    for column, label in (
        ("raw_mean", "raw mean"),
        ("compressed_mean", "compressed mean"),
    )
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Superset:
    home: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV")
        }
        env.update(
            SUPERSET_HOME=str(self.home),
            SUPERSET_CONFIG_PATH=str(CONFIG),
            SUPERSET_SECRET_KEY="local-check-" + self.home.name,
            FLASK_APP="superset",
            PATH=f"{VENV_BI / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        )
        return env

    def cli(self, *args: str, timeout: float = 900) -> None:
        done = subprocess.run(
            [str(SUPERSET), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"superset {args[0]} failed:\n{done.stderr[-3000:]}")

    def setup(self) -> None:
        """``superset db upgrade``, ``fab create-admin``, ``init`` (the documented steps)."""
        self.cli("db", "upgrade")
        self.cli(
            "fab", "create-admin", "--username", ADMIN[0], "--password", ADMIN[1],
            "--firstname", "ragledger", "--lastname", "check",
            "--email", "admin@example.invalid",
        )  # fmt: skip
        self.cli("init")

    def start(self) -> None:
        log = open(self.home / "server.log", "w")  # noqa: SIM115 - lives with the server
        self.process = subprocess.Popen(
            [
                str(SUPERSET),
                "run",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--with-threads",
            ],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(1)
        raise AssertionError(
            "superset did not start: " + (self.home / "server.log").read_text()[-3000:]
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Api:
    """Superset's REST API with a bearer token (``/api/v1/security/login``)."""

    def __init__(self, base: str) -> None:
        self.client = httpx.Client(base_url=base, timeout=300)
        token = self.client.post(
            "/api/v1/security/login",
            json={
                "username": ADMIN[0],
                "password": ADMIN[1],
                "provider": "db",
                "refresh": False,
            },
        )
        token.raise_for_status()
        self.client.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def post(self, path: str, body: dict) -> dict:
        response = self.client.post(path, json=body)
        if response.status_code >= 400:
            raise AssertionError(f"POST {path}: {response.status_code} {response.text}")
        return response.json()

    def add_database(self, recipes: dict) -> int:
        """The database exactly as ``ragledger connect --json`` gives it."""
        superset = recipes["superset"]
        return self.post(
            "/api/v1/database/",
            {
                "database_name": "ragledger lake",
                "sqlalchemy_uri": superset["sqlalchemy_uri"],
                "extra": superset["extra"],
                "expose_in_sqllab": True,
            },
        )["id"]

    def add_dataset(self, database: int) -> int:
        schema, table = CHART_TABLE
        return self.post(
            "/api/v1/dataset/",
            # owners given: with a bearer token Superset 6.1 (as installed from
            # PyPI) otherwise records the anonymous user and fails
            {
                "database": database,
                "schema": schema,
                "table_name": table,
                "owners": [1],
            },
        )["id"]

    def add_chart(self, dataset: int) -> int:
        params = {
            "datasource": f"{dataset}__table",
            "viz_type": "echarts_timeseries_bar",
            "x_axis": "reader_id",
            "metrics": METRICS,
            "groupby": [],
            "adhoc_filters": [],
            "row_limit": 100,
            "orientation": "vertical",
            "show_legend": True,
            "x_axis_sort_asc": True,
            "y_axis_format": ".2f",
            "show_value": True,
        }
        return self.post(
            "/api/v1/chart/",
            {
                "slice_name": "Reader means per reader (fct_panel_readers)",
                "owners": [1],
                "viz_type": params["viz_type"],
                "datasource_id": dataset,
                "datasource_type": "table",
                "params": json.dumps(params),
                "query_context": json.dumps(query_context(dataset, params)),
            },
        )["id"]

    def chart_rows(self, dataset: int) -> list[dict]:
        """The chart's query, run by Superset now (no cache)."""
        body = query_context(dataset, {})
        body["force"] = True
        result = self.post("/api/v1/chart/data", body)
        return result["result"][0]["data"]


def query_context(dataset: int, form_data: dict) -> dict:
    return {
        "datasource": {"id": dataset, "type": "table"},
        "force": False,
        "queries": [
            {
                "columns": ["reader_id"],
                "metrics": METRICS,
                "orderby": [[METRICS[0], False]],
                "row_limit": 100,
            }
        ],
        "form_data": form_data,
        "result_format": "json",
        "result_type": "full",
    }


def screenshot(base: str, chart: int, target: Path) -> dict:
    """Log in and screenshot the chart in headless Chromium (tests/bi/browser.py)."""
    done = subprocess.run(
        [str(VENV_BI / "bin" / "python"), str(Path(__file__).with_name("browser.py")),
         base, str(chart), str(target)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    if done.returncode != 0 or not target.exists():
        raise AssertionError(f"browser failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def install_extensions(recipes: dict) -> None:
    """The recipe's once-per-machine INSTALL lines, run in the side environment."""
    done = subprocess.run(
        [str(VENV_BI / "bin" / "python"), "-c", recipes["install"]["python"]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr[-2000:])


def main() -> None:  # pragma: no cover - by hand, to refresh docs/bi/
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--home", default=None)
    parser.add_argument("--docs", action="store_true")
    args = parser.parse_args()
    recipes = json.loads(
        subprocess.run(
            [str(REPO / ".venv" / "bin" / "ragledger"), "--db", args.db, "connect", "--json"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    install_extensions(recipes)
    home = Path(args.home or tempfile.mkdtemp(prefix="superset-"))
    superset = Superset(home, free_port())
    if not (home / "superset.db").exists():
        superset.setup()
    superset.start()
    try:
        api = Api(superset.url)
        dataset = api.add_dataset(api.add_database(recipes))
        chart = api.add_chart(dataset)
        print(api.chart_rows(dataset))  # noqa: T201
        target = (
            (REPO / "docs" / "bi" / "superset-chart.png")
            if args.docs
            else home / "chart.png"
        )
        print(screenshot(superset.url, chart, target), target)  # noqa: T201
    finally:
        superset.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
