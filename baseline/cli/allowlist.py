"""`baseline allowlist learn`: learn expected errors from good runs into their own file
(./expected_errors.learned.yaml by default; `baseline diff` loads it beside the curated list)."""

from __future__ import annotations

import argparse

from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError, printable
from tracer.inputs import input_paths, refuse_overwriting_inputs

EPILOG = """\
examples:
  baseline allowlist learn good-runs/          # -> ./expected_errors.learned.yaml
  baseline allowlist learn g1.parquet g2.parquet --min-support 0.5 -o allow.yaml
  baseline allowlist learn good-runs/ -o team.learned.yaml --json | jq .added

Learned entries carry probe, errno, normalised path, process name (context), support
(good runs seen / total), first/last seen and source: learned. By default they go to their
own file, ./expected_errors.learned.yaml, which `baseline diff` run from the same directory
loads beside the curated expected_errors.yaml (never rewritten unless named with -o).
Curated entries already in the output file are never overwritten; learned entries the good
runs no longer show become stale; the file's comments and order are kept.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "allowlist",
        help="manage the expected-errors allowlist",
        description="Manage the expected-errors allowlist (expected_errors.yaml).",
        formatter_class=HelpFormatter,
        epilog=EPILOG,
    )
    sub = p.add_subparsers(dest="allowlist_command", metavar="ACTION")
    sub.required = True
    learn = sub.add_parser(
        "learn",
        help="learn the errors good runs produce",
        description="Learn the errors that GOOD runs produce and merge them into the allowlist.",
        formatter_class=HelpFormatter,
        epilog=EPILOG,
    )
    learn.add_argument("good", nargs="+", metavar="GOOD", help="good traces: Parquet files or directories")
    learn.add_argument("-o", "--output", default=None, metavar="FILE", type=common.output_path("the allowlist YAML (merged in place)", file=True),
                       help="allowlist to create or update (default: ./expected_errors.learned.yaml)")
    learn.add_argument("--min-support", type=common.fraction, default=0.0, metavar="F",
                       help="keep errors seen in at least this fraction of good runs (0..1, default 0)")
    learn.add_argument("--mixed", action="store_true", help="accept good traces of different commands")
    common.add_json(learn, "what was learned (counts and entries)")
    learn.set_defaults(func=handle_learn)


def handle_learn(args: argparse.Namespace) -> int:
    if not 0.0 <= args.min_support <= 1.0:
        raise TracebaseError(f"--min-support: expected a fraction between 0 and 1, found {args.min_support}")
    from pathlib import Path

    from baseline.run.allowlist import LEARNED_NAME, ExpectedErrors, learn_expected

    out = Path(args.output or LEARNED_NAME)
    if out.is_dir():
        raise TracebaseError(f"{out}: -o: expected a YAML file, found a directory")
    refuse_overwriting_inputs(out, "-o/--output", args.good)
    if out.exists():
        ExpectedErrors.load(out, to_merge=True)  # a list that cannot be merged into is refused before the work
    input_paths(args.good)  # a missing trace is refused before pyarrow is imported (~0.3 s)
    from baseline.run.traces import check_good_commands, check_good_kinds, load_table, prepare_side

    good = load_table(args.good)
    check_good_kinds(good, ", ".join(args.good))
    check_good_commands(good, ", ".join(args.good), args.mixed)
    prepared, ids = prepare_side(good, bad=False)
    entries = learn_expected(prepared, min_support=args.min_support)
    from tracer import atomic

    with atomic.merge_lock(out):  # the list as it is now: another run may have merged meanwhile
        allow = ExpectedErrors.load(out, to_merge=True) if out.exists() else ExpectedErrors([], source=str(out))
        counts = allow.merge_learned(entries)
        allow.save(out)
    n_traces = len(ids)
    if args.json:
        import json

        print(json.dumps({
            "output": str(out), "good_traces": n_traces, "learned": len(entries), **counts,
            "entries": [{"probe": e.probe, "errno": e.errno, "path": e.path, "context": e.context,
                         "support": e.support} for e in entries],
        }, default=str))
        return 0
    print(
        f"learned {len(entries)} expected error(s) from {n_traces} good trace(s): "
        f"{counts['added']} added, {counts['updated']} updated, {counts['stale']} now stale, "
        f"{counts['skipped_curated']} already covered by curated entries -> {printable(str(out))}"
    )
    for e in entries:
        sup = e.support or {}
        print(f"  {sup.get('runs')}/{sup.get('total')}  {e.probe} {e.errno}"
              + (f" {e.path}" if e.path else "") + (f"  [{e.context}]" if e.context else ""))
    return 0
