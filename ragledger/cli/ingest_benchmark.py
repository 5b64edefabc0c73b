"""Subcommands of `ragledger ingest` for this source (filled by the issue that builds it)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
