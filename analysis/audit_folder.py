"""The audit folder: ``summary.json``, ``REPORT.md``, a self-contained ``report.html`` and
``figures/`` (the PNGs report.html embeds, linked from REPORT.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.panel_audit import PanelAudit
from analysis.report import html_report, markdown_report, panel_figures
from analysis.selection import SelectionResult
from analysis.summary_json import dumps


def write_folder(
    folder: str | Path,
    document: Mapping[str, Any],
    audits: Sequence[PanelAudit],
    *,
    pairs: Sequence[DeclaredPairResult] = (),
    selections: Sequence[SelectionResult] = (),
) -> dict[str, Path]:
    """Write the files (created or replaced) and return their paths."""
    target = Path(folder)
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
            path.write_bytes(data)
            written.add(path)
            files[-1].append((alt, f"figures/{path.name}"))
    if figure_dir.is_dir():  # figures of an earlier audit into this folder
        for stale in figure_dir.glob("*.png"):
            if stale not in written:
                stale.unlink()
    paths["summary"].write_text(dumps(document), encoding="utf-8")
    paths["report"].write_text(
        markdown_report(
            document, audits, pairs=pairs, selections=selections, figure_files=files
        ),
        encoding="utf-8",
    )
    paths["html"].write_text(
        html_report(
            document,
            audits,
            pairs=pairs,
            selections=selections,
            panel_figure_data=drawn,
        ),
        encoding="utf-8",
    )
    if written:
        paths["figures"] = figure_dir
    return paths
