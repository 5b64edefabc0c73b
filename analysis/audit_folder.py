"""The audit folder: ``summary.json``, ``REPORT.md``, a self-contained ``report.html`` and
``figures/`` (the PNGs report.html embeds, linked from REPORT.md).

The folder is the user's: an audit writes only its own files, each one atomically
(written beside, renamed over), deletes only its own earlier figures, and never
writes inside a lake. A folder holding anything else is refused unless ``force``
(``--force``): then the audit's files go in beside the user's, and a file of the
user's under one of the audit's names is still refused.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.panel_audit import PanelAudit
from analysis.report import (
    html_report,
    markdown_report,
    panel_figures,
    recall_figures,
    selection_figures,
    summary_figures,
)
from analysis.selection import SelectionResult
from analysis.selection_recall import RecallPoint
from analysis.summary_json import dumps
from warehouse.errors import WarehouseError
from warehouse.exports import refuse_lake_folder


def write_folder(
    folder: str | Path,
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
    recall: Sequence[RecallPoint] = (),
    force: bool = False,
) -> dict[str, Path]:
    """Write the files (created or replaced) and return their paths."""
    target = Path(folder)
    earlier = check_output_folder(target, force=force)
    target.mkdir(parents=True, exist_ok=True)
    paths = {
        "summary": target / "summary.json",
        "report": target / "REPORT.md",
        "html": target / "report.html",
    }
    # Draw each figure once: report.html embeds the bytes, REPORT.md links the files.
    figure_dir = target / "figures"
    drawn = [panel_figures(audit) for audit in audits]
    files: list[list[tuple[str, str]]] = []
    written: set[Path] = set()
    for k, (audit, figs) in enumerate(zip(audits, drawn, strict=True)):
        panel = re.sub(r"[^A-Za-z0-9._-]+", "_", str(audit.panel["panel_id"]))[:60]
        files.append([])
        for slug, alt, data in figs:
            if not data:
                continue
            figure_dir.mkdir(exist_ok=True)
            path = figure_dir / f"{k + 1:02d}-{panel}-{slug}.png"
            _replace(path, data)
            written.add(path)
            files[-1].append((alt, f"figures/{path.name}"))
    summary = summary_figures(audits)
    by_selection = [selection_figures(sel) for sel in selections]
    recall_drawn = recall_figures(recall)
    extra = [("panels", summary), ("selection", recall_drawn)] + [
        (f"selection-{k + 1}", figs) for k, figs in enumerate(by_selection)
    ]
    extra_files = _write_extra_figures(figure_dir, extra, written)
    if earlier and figure_dir.is_dir():  # figures of an earlier audit into this folder
        for stale in figure_dir.iterdir():
            if stale not in written and _FIGURE.match(stale.name):
                stale.unlink()
    _replace(paths["summary"], dumps(document).encode("utf-8"))
    _replace(
        paths["report"],
        markdown_report(
            document,
            audits,
            pairs=pairs,
            selections=selections,
            figure_files=files,
            summary_figure_files=extra_files["panels"],
            selection_figure_files=[
                extra_files[f"selection-{k + 1}"] for k in range(len(selections))
            ],
            recall=recall,
            recall_figure_files=extra_files["selection"],
        ).encode("utf-8"),
    )
    _replace(
        paths["html"],
        html_report(
            document,
            audits,
            pairs=pairs,
            selections=selections,
            panel_figure_data=drawn,
            summary_figure_data=summary,
            selection_figure_data=by_selection,
            recall=recall,
            recall_figure_data=recall_drawn,
        ).encode("utf-8"),
    )
    if written:
        paths["figures"] = figure_dir
    return paths


def _write_extra_figures(
    figure_dir: Path, extra: Sequence[tuple[str, Any]], written: set[Path]
) -> dict[str, list[tuple[str, str]]]:
    """Write the figures outside any panel as ``00-<name>-<slug>.png`` (before every
    panel's figures, never one of them); (alt text, relative path) per name."""
    files: dict[str, list[tuple[str, str]]] = {}
    for name, figs in extra:
        files[name] = []
        for slug, alt, data in figs:
            if data:
                figure_dir.mkdir(exist_ok=True)
                path = figure_dir / f"00-{name}-{slug}.png"
                _replace(path, data)
                written.add(path)
                files[name].append((alt, f"figures/{path.name}"))
    return files


#: The files and folder an audit writes.
OWN_NAMES = ("summary.json", "REPORT.md", "report.html", "figures")
#: A figure file an audit writes: ``NN-<panel>-<kind>.png``.
_FIGURE = re.compile(r"^\d{2}-[A-Za-z0-9._-]+\.png$")


def check_output_folder(folder: str | Path, *, force: bool = False) -> bool:
    """Refuse an output folder the audit may not write; True when it holds an
    earlier audit (whose files the new one replaces).

    Refused: a folder inside a lake or holding one; a non-empty folder holding
    files no audit wrote, unless ``force``; with ``force``, a folder where a
    file of the user's carries one of the audit's names.
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise WarehouseError(f"{target} is a file; --output takes a folder")
    refuse_lake_folder(target)
    if not target.is_dir():
        return False
    earlier = _is_audit_summary(target / "summary.json")
    figures = target / "figures"
    foreign = [p.name for p in target.iterdir() if p.name not in OWN_NAMES]
    if figures.is_dir():
        foreign += [
            f"figures/{p.name}" for p in figures.iterdir() if not _FIGURE.match(p.name)
        ]
    # the audit's own names, held by files no audit wrote
    yours = [] if earlier else [n for n in OWN_NAMES if (target / n).exists()]
    if (foreign or yours) and not force:
        held = sorted(yours + foreign)
        listed = ", ".join(held[:3]) + (" ..." if len(held) > 3 else "")
        raise WarehouseError(
            f"{target} holds files no audit wrote ({listed}); write to a new or "
            "empty folder, or pass --force to put the audit beside them (nothing "
            "of yours is deleted or replaced)"
        )
    if yours:
        raise WarehouseError(
            f"{target} holds your own {', '.join(yours)}, which the audit would "
            "replace; choose another folder"
        )
    return earlier


def _is_audit_summary(path: Path) -> bool:
    """True when ``path`` is a summary.json an audit wrote."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(document, dict)
        and "schema_version" in document
        and "code_version" in document
    )


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` beside ``path`` and rename it over: readers see the old
    file or the new one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
