"""Apache Superset charts a mart through the recipe ``ragledger connect`` prints.

Superset runs from its own environment (``.venv-bi``, ``make bi-setup``) on
127.0.0.1. The database is added over the REST API with exactly the URL and
engine parameters of ``connect --json``; a bar chart of reader means per reader
(``marts.fct_panel_readers``) is created, queried while an ingest job writes the
lake, and checked in headless Chromium after logging in. Expected values come
from a plain DuckDB attach of the lake (tests/warehouse/lake_support.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.bi.superset_flow import (
    REPO,
    Api,
    Superset,
    free_port,
    install_extensions,
    screenshot,
)
from tests.warehouse.lake_support import (
    outside_connection,
    ragledger,
    start,
    write_matrix,
)

pytestmark = [pytest.mark.bi, pytest.mark.slow]

EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("bi") / "w.duckdb"
    ragledger(db, "init")
    ragledger(db, "ingest", "ragscale", str(EXAMPLE))
    ragledger(db, "build", timeout=1800)
    return db


@pytest.fixture(scope="module")
def superset(tmp_path_factory):
    server = Superset(tmp_path_factory.mktemp("superset"), free_port())
    server.setup()
    server.start()
    yield server
    server.stop()


def expected_means(lake: Path) -> dict[tuple[str, str], float]:
    con = outside_connection(lake)
    try:
        rows = con.execute(
            "select reader_id, avg(raw_mean), avg(compressed_mean) "
            "from marts.fct_panel_readers group by reader_id"
        ).fetchall()
    finally:
        con.close()
    assert rows
    means = {}
    for reader, raw, compressed in rows:
        means[reader, "raw mean"] = raw
        means[reader, "compressed mean"] = compressed
    return means


def charted(rows: list[dict]) -> dict[tuple[str, str], float]:
    return {
        (row["reader_id"], series): row[series]
        for row in rows
        for series in ("raw mean", "compressed mean")
    }


def test_superset_charts_a_mart_while_a_job_writes(lake, superset, tmp_path):
    recipes = json.loads(ragledger(lake, "connect", "--json").stdout)
    assert recipes["superset"]["sqlalchemy_uri"].startswith("duckdb:///ducklake:")
    install_extensions(recipes)  # the printed once-per-machine lines, in .venv-bi

    api = Api(superset.url)
    dataset = api.add_dataset(api.add_database(recipes))
    chart = api.add_chart(dataset)
    expected = expected_means(lake)
    assert charted(api.chart_rows(dataset)) == pytest.approx(expected)

    # a job writes the lake while Superset keeps querying it
    matrix = tmp_path / "m.csv.gz"
    write_matrix(matrix, seed=7, scale=0.1)
    job = start(lake, "ingest", "matrix", str(matrix))
    polls_during_job = 0
    try:
        while job.poll() is None:
            assert charted(api.chart_rows(dataset)) == pytest.approx(expected)
            polls_during_job += 1
    finally:
        output = job.communicate(timeout=600)[0]
    assert job.returncode == 0, output
    assert polls_during_job >= 1
    assert charted(api.chart_rows(dataset)) == pytest.approx(expected)

    # what a user sees: log in, open the chart
    image = tmp_path / "chart.png"
    page = screenshot(superset.url, chart, image)
    assert page["errors"] == [], page
    assert page["canvases"] >= 1 and "fct_panel_readers" in page["title"]
    from PIL import Image

    pixels = Image.open(image).convert("RGB")
    assert pixels.size[0] == 1000
    colours = pixels.getcolors(maxcolors=1 << 20)
    # bars in two series colours cover a good part of the frame, not a blank page
    drawn = sum(count for count, colour in colours if sum(colour) < 600)
    assert drawn > 0.05 * pixels.size[0] * pixels.size[1], drawn
    refresh = REPO / "docs" / "bi" / "superset-chart.png"
    if refresh.parent.exists() and not refresh.exists():
        shutil.copyfile(image, refresh)
