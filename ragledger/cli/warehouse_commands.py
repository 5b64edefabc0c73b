"""Warehouse commands: init, sql, export, build, panels."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
