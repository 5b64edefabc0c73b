"""The audit folder: ``summary.json``, ``REPORT.md`` and a self-contained ``report.html``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.declared_pair import DeclaredPairResult
from analysis.panel_audit import PanelAudit
from analysis.report import html_report, markdown_report
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
    """Write the three files (created or replaced) and return their paths."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    paths = {
        "summary": target / "summary.json",
        "report": target / "REPORT.md",
        "html": target / "report.html",
    }
    paths["summary"].write_text(dumps(document), encoding="utf-8")
    paths["report"].write_text(
        markdown_report(document, audits, pairs=pairs, selections=selections),
        encoding="utf-8",
    )
    paths["html"].write_text(
        html_report(document, audits, pairs=pairs, selections=selections),
        encoding="utf-8",
    )
    return paths
