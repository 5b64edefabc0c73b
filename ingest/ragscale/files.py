"""The files of a ragscale audit folder: where they are, and ``ragscale.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warehouse.errors import InputError, WarehouseError
from warehouse.files import read_text, read_yaml, yaml_lines

RESERVED_JSONL = {"artifact_manifest.jsonl", "records.jsonl", "call_cache.jsonl"}


@dataclass(frozen=True)
class RagscaleFiles:
    """The files of one ragscale audit folder."""

    dataset: Path
    manifest: Path
    scores: Path
    config: Path | None = None


def find_files(
    directory: str | Path,
    *,
    dataset: str | Path | None = None,
    scores: str | Path | None = None,
) -> RagscaleFiles:
    """Locate the dataset, manifest, scores and config of a ragscale audit folder.

    The dataset is ``dataset`` if given, else ``dataset.path`` of ``ragscale.yaml``
    (relative to the YAML, as ragscale resolves it), else the one other ``*.jsonl``.
    Scores are ``paired_scores.csv``, else ``records.jsonl``.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise WarehouseError(
            f"{folder}: not a directory (expected a ragscale audit folder)"
        )
    config = folder / "ragscale.yaml"
    config_path = config if config.exists() else None
    manifest = folder / "artifact_manifest.jsonl"
    if not manifest.exists():
        raise WarehouseError(
            f"{folder}: no artifact_manifest.jsonl (ragscale writes one per run)"
        )
    if scores is None:
        for name in ("paired_scores.csv", "records.jsonl"):
            if (folder / name).exists():
                scores = folder / name
                break
        else:
            raise WarehouseError(
                f"{folder}: neither paired_scores.csv nor records.jsonl found"
            )
    if dataset is None:
        dataset = _dataset_from_config(config_path, folder)
    if dataset is None:
        candidates = sorted(
            path for path in folder.glob("*.jsonl") if path.name not in RESERVED_JSONL
        )
        if len(candidates) != 1:
            raise WarehouseError(
                f"{folder}: cannot tell which JSONL is the dataset "
                f"({', '.join(p.name for p in candidates) or 'none found'}); pass --dataset"
            )
        dataset = candidates[0]
    return RagscaleFiles(Path(dataset), manifest, Path(scores), config_path)


def _dataset_from_config(config: Path | None, folder: Path) -> Path | None:
    """``dataset.path`` of ``ragscale.yaml``; refused when it names a missing file."""
    if config is None:
        return None
    settings = read_config(config)
    raw_path = dataset_settings(settings, config).get("path")
    if not raw_path:
        return None
    path = (
        (config.parent / raw_path)
        if not Path(raw_path).is_absolute()
        else Path(raw_path)
    )
    if path.exists():
        return path
    local = folder / Path(raw_path).name
    if local.exists():
        return local
    looked = " or ".join(dict.fromkeys(str(p) for p in (path, local)))
    raise InputError(
        f"names dataset file {raw_path!r}, which is missing (looked for {looked}); "
        "restore it or pass --dataset",
        file=str(config),
        line=yaml_lines(read_text(config)).get(("dataset", "path")),
        column="dataset.path",
    )


def dataset_settings(settings: dict[str, Any], config: Path | None) -> dict[str, Any]:
    value = settings.get("dataset") or {}
    if not isinstance(value, dict):
        raise InputError(
            "`dataset` must be a mapping (with path, name, ...)",
            file=str(config),
            column="dataset",
        )
    return value


def read_config(path: Path) -> dict[str, Any]:
    value = read_yaml(path)
    if not isinstance(value, dict):
        raise InputError("configuration must be a YAML mapping", file=str(path))
    return value
