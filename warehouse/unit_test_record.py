"""Which dbt projects passed their unit tests: a full build runs them once per project.

dbt's unit tests check the models' SQL on the fixed rows of their YAML; they
read nothing of a warehouse. So a full ``ragledger build`` runs them the first
time it meets a project (its models, macros and tests, ``dbt_project.yml``,
the ``--vars``, and the dbt, dbt-duckdb and DuckDB versions), records that key
in ``dbt_project/target/unit_tests_passed`` when the build succeeds, and leaves
them out of later full builds of any warehouse with the same key. Incremental
builds never run them (the SQL they test is unchanged: a changed project is a
full refresh). ``dbt test --select test_type:unit``, run in dbt_project/,
runs them at any time.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from warehouse.dbt_project import PROJECT_DIR

#: The keys of the projects whose unit tests passed, one per line (the newest last).
RECORD = PROJECT_DIR / "target" / "unit_tests_passed"

#: How many keys the record keeps (other checkouts' projects, other --vars).
KEEP = 8


def project_key(project: str, arguments: Sequence[str]) -> str:
    """The key of the unit tests' run: ``project`` (a digest of the project's
    files) with the ``--vars`` given and the versions that run the SQL."""
    options = list(arguments)
    given = options[options.index("--vars") + 1] if "--vars" in options[:-1] else ""
    versions = " ".join(
        metadata.version(package) for package in ("dbt-core", "dbt-duckdb", "duckdb")
    )
    text = "\0".join((project, given, versions))
    return hashlib.sha256(text.encode()).hexdigest()


def passed(key: str, record: Path | None = None) -> bool:
    """The unit tests of ``key`` passed in an earlier build."""
    path = record or RECORD
    try:
        return key in path.read_text(encoding="utf-8").split()
    except OSError:
        return False


def record_pass(key: str, record: Path | None = None) -> None:
    """Add ``key`` to the record (written beside and renamed: never half a file)."""
    path = record or RECORD
    try:
        kept = [
            line for line in path.read_text(encoding="utf-8").split() if line != key
        ]
    except OSError:
        kept = []
    lines = [*kept[-(KEEP - 1) :], key]
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(partial, path)
    except OSError:  # a read-only checkout runs them again next time
        partial.unlink(missing_ok=True)
