"""What the dbt project's files say: its folder, its fingerprint, its sources
and which of its models are incremental by dataset or panel.

Read by the build (:mod:`warehouse.dbt_runner`), its change detection
(:mod:`warehouse.build_changes`) and the publishing of marts
(:mod:`warehouse.mart_publish`).
"""

from __future__ import annotations

import hashlib
import re

from warehouse.connections import REPO_ROOT

#: The dbt project shipped with ragledger (profiles.yml is committed inside it).
PROJECT_DIR = REPO_ROOT / "dbt_project"


def project_fingerprint() -> str:
    """sha256 of the dbt project's models, macros and dbt_project.yml."""
    digest = hashlib.sha256()
    files = [PROJECT_DIR / "dbt_project.yml"]
    for folder in ("models", "macros"):
        files += sorted(
            path for path in (PROJECT_DIR / folder).rglob("*") if path.is_file()
        )
    for path in files:
        digest.update(str(path.relative_to(PROJECT_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def incremental_models() -> dict[str, str]:
    """Model name -> partition key of every dataset-partitioned incremental model."""
    return {
        name: key
        for name, (key, incremental) in _partitioned_models().items()
        if incremental
    }


def dataset_partitioned_models() -> dict[str, str]:
    """Model name -> partition key of every model kept by dataset.

    The incremental models (strategy ``dataset_partitions``) and the mart views
    with a ``partition_key`` in their config (``materialized='view'``): the lake
    stores a view's rows, so publishing refreshes its changed datasets as it
    does an incremental mart's.
    """
    return {name: key for name, (key, _) in _partitioned_models().items()}


def _partitioned_models() -> dict[str, tuple[str, bool]]:
    """Model name -> (partition key, incremental) of the models kept by dataset."""
    found = {}
    for path in sorted((PROJECT_DIR / "models").rglob("*.sql")):
        text = path.read_text(encoding="utf-8")
        incremental = "incremental_strategy='dataset_partitions'" in text
        view = "materialized='view'" in text and "partition_key='" in text
        if incremental or view:
            key = "panel_id" if "partition_key='panel_id'" in text else "dataset_id"
            found[path.stem] = (key, incremental)
    return found


def source_selectors() -> dict[str, tuple[str, ...]]:
    """Lake table ("schema.table") -> the dbt sources reading it (``source:a.b``)."""
    import yaml

    # libyaml's loader where PyYAML has it (the pure-Python one took ~1 s of
    # every incremental build); only files declaring sources are parsed
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found: dict[str, list[str]] = {}
    for path in sorted((PROJECT_DIR / "models").rglob("*.yml")):
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^sources\s*:", text, flags=re.MULTILINE):
            continue
        document = yaml.load(text, Loader=loader) or {}  # noqa: S506 - a safe loader
        for source in document.get("sources") or ():
            schema = source.get("schema", source["name"])
            for table in source.get("tables") or ():
                name = table.get("identifier", table["name"])
                found.setdefault(f"{schema}.{name}", []).append(
                    f"source:{source['name']}.{table['name']}"
                )
    return {table: tuple(selectors) for table, selectors in found.items()}
