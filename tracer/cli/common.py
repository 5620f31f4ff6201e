"""Shared plumbing for the `tracer` and `baseline` command lines.

Each subcommand lives in its own module exposing ``register(subparsers)``; it adds its parser
with ``set_defaults(func=handler)`` where ``handler(args) -> int`` returns the exit status.
Subcommand modules import heavy libraries inside their handlers so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tracer.errors import TracebaseError


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-written examples in epilogs as they are."""


def build_parser(prog: str, description: str, modules: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def run(prog: str, description: str, modules: Sequence[str], argv: Sequence[str] | None) -> int:
    parser = build_parser(prog, description, modules)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except TracebaseError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
