"""An audit's --output folder is the user's: only the audit's own files are written,
atomically, nothing else is deleted or replaced, and no lake is written into.

Runs `replay-audit` as a user types it (click's CliRunner, the bundled ragscale
file, real folders) and compares every file outside the audit's own by content.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.analysis.test_audit_cli import FAST, one_line_error, run

OWN = {"summary.json", "REPORT.md", "report.html"}


@pytest.fixture(scope="module")
def csv_path(example_dir):
    return str(example_dir / "paired_scores.csv")


def audit(csv_path: str, folder: Path, *extra: str):
    return run(
        "replay-audit", "--input", csv_path, *FAST, "--output", str(folder), *extra
    )


def files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_new_folder_and_then_the_same_folder_again(csv_path, tmp_path):
    folder = tmp_path / "out"
    assert audit(csv_path, folder).exit_code == 0
    first = files(folder)
    assert set(first) >= OWN and any(name.startswith("figures/") for name in first)
    assert not [name for name in first if ".partial" in name]
    again = audit(csv_path, folder)  # an earlier audit's folder is replaced
    assert again.exit_code == 0, again.output
    assert set(files(folder)) == set(first)


def test_a_folder_of_the_users_is_refused_and_kept(csv_path, tmp_path):
    folder = tmp_path / "mydocs"
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work\n")
    before = files(folder)
    line = one_line_error(audit(csv_path, folder))
    assert "thesis.txt" in line and "--force" in line, line
    assert files(folder) == before


def test_a_figures_folder_of_the_users_is_never_written(csv_path, tmp_path):
    folder = tmp_path / "mydocs"
    (folder / "figures").mkdir(parents=True)
    (folder / "figures" / "01-mine-scatter.png").write_bytes(b"my own figure")
    before = files(folder)
    for extra in ((), ("--force",)):
        line = one_line_error(audit(csv_path, folder, *extra))
        assert "figures" in line, line
        assert files(folder) == before


def test_force_writes_beside_the_users_files_and_deletes_none(csv_path, tmp_path):
    folder = tmp_path / "mydocs"
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work\n")
    before = files(folder)
    done = audit(csv_path, folder, "--force")
    assert done.exit_code == 0, done.output
    after = files(folder)
    assert {k: after[k] for k in before} == before
    assert set(after) >= OWN
    # a second forced audit replaces its own files and keeps the user's, also
    # one the user put among the figures
    (folder / "figures" / "notes.txt").write_text("mine\n")
    assert audit(csv_path, folder, "--force").exit_code == 0
    kept = files(folder)
    assert kept["thesis.txt"] == before["thesis.txt"]
    assert "figures/notes.txt" in kept


def test_force_never_replaces_a_users_file_under_an_audit_name(csv_path, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "REPORT.md").write_text("# my own report\n")
    before = files(folder)
    line = one_line_error(audit(csv_path, folder, "--force"))
    assert "REPORT.md" in line, line
    assert files(folder) == before


def test_a_folder_inside_a_lake_is_refused(csv_path, tmp_path):
    lake = tmp_path / "w.lake"
    (lake / "files").mkdir(parents=True)
    (lake / "catalog.sqlite").write_bytes(b"")
    before = files(tmp_path)
    for target in (lake, lake / "files" / "audit"):
        line = one_line_error(audit(csv_path, target, "--force"))
        assert "inside the lake" in line, line
    assert files(tmp_path) == before
    assert not (lake / "files" / "audit").exists()
