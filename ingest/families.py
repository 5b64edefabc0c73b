"""Reader families: the default map the project ships and user CSVs that override it.

Families matter because the family-by-row bootstrap resamples families, not readers.
The default map covers the model ids of the paper's panels: the 20-reader HotpotQA
panel forms eleven family clusters (vendor/model line; DeepSeek R1 Distill Llama 70B
sits with the Llama family it was distilled into). A user CSV with columns
``reader_model,family`` overrides it row by row; the marts resolve a reader's family
as user map > family declared by the source > default map > vendor prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ingest.file_checks import repeated
from warehouse import transaction
from warehouse.errors import InputError
from warehouse.files import read_csv
from warehouse.hashing import sha256_file
from warehouse.raw_tables import write

DEFAULT_MAP = Path(__file__).with_name("data") / "default_reader_families.csv"
COLUMNS = ("reader_model", "family")


@dataclass(frozen=True)
class FamilyLoadResult:
    source: str
    rows: int
    families: int
    file_sha256: str

    def summary(self) -> str:
        return f"{self.rows} {self.source} reader families ({self.families} distinct) loaded"


def read_family_csv(path: str | Path) -> list[tuple[str, str]]:
    """``(reader_model, family)`` rows of a CSV, checked: both columns, no blanks, no duplicates."""
    path = Path(path)
    rows: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    table = read_csv(path)
    table.require_columns(COLUMNS)
    for line, row in zip(table.lines, table.records, strict=True):
        model = row["reader_model"].strip()
        family = row["family"].strip()
        for column, value in (("reader_model", model), ("family", family)):
            if not value:
                raise InputError(
                    "empty value", file=str(path), line=line, column=column
                )
        if model in seen:
            raise InputError(
                repeated("reader_model", seen[model]),
                file=str(path),
                line=line,
                column="reader_model",
            )
        seen[model] = line
        rows.append((model, family))
    return rows


def load_families(
    con: duckdb.DuckDBPyConnection,
    path: str | Path | None = None,
) -> FamilyLoadResult:
    """Load the default map (``path`` None) or a user CSV, replacing that source's rows."""
    source = "default" if path is None else "user"
    path = Path(path) if path is not None else DEFAULT_MAP
    rows = read_family_csv(path)
    digest = sha256_file(path)
    with transaction(con):
        if source == "default":
            con.execute("delete from raw.reader_families where source = 'default'")
        else:
            con.execute(
                "delete from raw.reader_families where source = 'user' and reader_model in "
                "(select unnest(?::varchar[]))",
                [[model for model, _ in rows]],
            )
        write(
            con,
            "raw.reader_families",
            ("reader_model", "family", "source", "source_file_sha256"),
            [(model, family, source, digest) for model, family in rows],
        )
    return FamilyLoadResult(
        source, len(rows), len({family for _, family in rows}), digest
    )
