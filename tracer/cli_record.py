"""Placeholder: subcommands of this module are not built yet."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds no subcommand until this module is implemented."""
