"""CLI commands that run dbt and read the panel marts: build, panels."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
