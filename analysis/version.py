"""The analysis code version stored with every audit row."""

from __future__ import annotations

#: Bumped when a statistic's definition or numbers change; stored with every row.
CODE_VERSION = "analysis-3"
