"""`baseline learn`, `baseline audit`, `baseline expected learn`, `baseline report`: fleet audit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError

LEARN_EPILOG = """\
examples:
  baseline learn fleet/                          # writes baseline-model.parquet
  baseline learn fleet/ -o model.parquet --since 2026-11-28
  baseline learn fleet/ --expected-out expected_errors.yaml   # also merge fleet-learned expected errors
"""
AUDIT_EPILOG = """\
examples:
  baseline audit fleet/                                   # learns the baseline on the fly
  baseline audit fleet/ --model model.parquet --since 2026-11-28T06:00:00Z --out audit/
  baseline audit fleet/ --html audit.html --allowlist expected_errors.yaml
"""
EXPECTED_EPILOG = """\
examples:
  baseline expected learn fleet/ -o expected_errors.yaml
  baseline expected learn fleet/ --since 2026-11-28 --min-hosts 5
"""
REPORT_EPILOG = """\
examples:
  baseline report audit/
  baseline report audit/ --html audit.html
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "learn", help="learn the good-trace baseline of a fleet dataset",
        description="Learn the known-good call chains per operation from the good traces of DATASET "
                    "(a fleet dataset root or Parquet files) and write a versioned model file.",
        formatter_class=HelpFormatter, epilog=LEARN_EPILOG,
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("-o", "--output", default="baseline-model.parquet", metavar="MODEL",
                   help="model file to write (default baseline-model.parquet)")
    p.add_argument("--since", metavar="T", type=common.since,
                   help="only traces starting at or after T (ISO date/time, UTC, or a time ago: 2h, 1d)")
    p.add_argument("--expected-out", metavar="YAML",
                   help="also learn fleet expected errors and merge them into this expected_errors.yaml")
    p.set_defaults(func=handle_learn)

    p = subparsers.add_parser(
        "audit", help="audit a fleet dataset: findings, root-cause clusters, host alerts",
        description="For every failure in DATASET: bifurcation against the good-trace baseline, "
                    "layered evidence, expected errors set aside; root-cause clusters by kernel-side "
                    "signature; host alerts from counters. Writes findings/clusters/host_alerts "
                    "Parquet into --out and prints a report.",
        formatter_class=HelpFormatter, epilog=AUDIT_EPILOG,
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--model", metavar="M", help="model from `baseline learn` (default: learn from DATASET)")
    p.add_argument("--since", metavar="T", type=common.since,
                   help="only traces/counters at or after T (ISO date/time, UTC, or a time ago: 2h, 1d)")
    p.add_argument("--out", default="audit", metavar="DIR", help="output directory (default ./audit)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--allowlist", metavar="FILE",
                   help="expected-errors YAML (default: the repo's expected_errors.yaml)")
    p.add_argument("--no-learn-expected", action="store_true",
                   help="do not add expected errors learned from DATASET")
    p.set_defaults(func=handle_audit)

    p = subparsers.add_parser(
        "expected", help="fleet expected-error learning",
        description="Expected errors learned across a fleet (see `baseline expected learn -h`).",
        formatter_class=HelpFormatter, epilog=EXPECTED_EPILOG,
    )
    sub = p.add_subparsers(dest="expected_command", metavar="ACTION")
    sub.required = True
    q = sub.add_parser(
        "learn", help="learn expected errors from a fleet dataset and merge them into a YAML file",
        description="An error (probe, errno, operation) is expected when it recurs in operations "
                    "the job survives, across hosts and jobs, and CBI's Increase(P) stays <= 0 at its "
                    "upper 95% bound. Curated entries win; stale learned entries are flagged.",
        formatter_class=HelpFormatter, epilog=EXPECTED_EPILOG,
    )
    q.add_argument("dataset", metavar="DATASET")
    q.add_argument("-o", "--output", default="expected_errors.yaml", metavar="YAML")
    q.add_argument("--since", metavar="T", type=common.since,
                   help="only traces at or after T (ISO date/time, UTC, or a time ago: 2h, 1d)")
    q.add_argument("--min-hosts", type=common.positive_int, default=3, metavar="N")
    q.set_defaults(func=handle_expected_learn)

    p = subparsers.add_parser(
        "report", help="print (and optionally render as HTML) an audit output directory",
        description="Terminal report of the findings/clusters/host_alerts written by `baseline audit`.",
        formatter_class=HelpFormatter, epilog=REPORT_EPILOG,
    )
    p.add_argument("findings_dir", metavar="FINDINGS_DIR")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.set_defaults(func=handle_report)


def _check_dataset(path: str) -> None:
    if not Path(path).exists():
        raise TracebaseError(f"{path}: no such dataset (file or directory)")


def _check_writable_file(path: str, flag: str) -> None:
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise TracebaseError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise TracebaseError(f"{flag} {path}: directory {parent} is not writable")


def handle_learn(args: argparse.Namespace) -> int:
    from baseline.fleet.model import fit_baseline, parse_since

    _check_dataset(args.dataset)
    since = parse_since(args.since)
    _check_writable_file(args.output, "-o")
    model = fit_baseline(args.dataset, out=args.output, since=since)
    print(f"learned {model.operations_.height} operations from {model.n_traces_} good traces "
          f"({model.n_events_} events) -> {args.output}")
    if args.expected_out:
        _learn_expected(args.dataset, since, args.expected_out)
    return 0


def _learn_expected(dataset: str, since, output: str, **params) -> None:
    from baseline.fleet.expected import learn_fleet_expected, merge_into_file

    _check_writable_file(output, "-o" if not output else "--expected-out")
    result = learn_fleet_expected(dataset, since=since, **params)
    counts = merge_into_file(output, result.entries)
    print(f"expected errors: {len(result.entries)} learned of {result.candidates.height} candidates; "
          + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" -> {output}")
    for e in result.entries:
        s = e.stats or {}
        print(f"  {e.context}: {e.probe} {e.errno}  increase {s.get('increase'):+.3f} "
              f"(upper {s.get('increase_upper'):+.3f}), {s.get('hosts')} hosts, {s.get('jobs')} jobs, "
              f"{s.get('traces')} traces")


def handle_expected_learn(args: argparse.Namespace) -> int:
    from baseline.fleet.model import parse_since

    _check_dataset(args.dataset)
    _learn_expected(args.dataset, parse_since(args.since), args.output, min_hosts=args.min_hosts)
    return 0


def handle_audit(args: argparse.Namespace) -> int:
    from baseline.fleet.audit import run_audit
    from baseline.fleet.model import parse_since
    from baseline.fleet.report import terminal_report, write_html

    _check_dataset(args.dataset)
    since = parse_since(args.since)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise TracebaseError(f"--out {out}: exists and is not a directory")
    existing = out.resolve()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        why = "not a directory" if not existing.is_dir() else "not writable"
        raise TracebaseError(f"--out {out}: cannot create or write the directory ({existing} is {why})")
    if args.html:
        _check_writable_file(args.html, "--html")
    result = run_audit(args.dataset, out_dir=out, since=since, model=args.model, expected=args.allowlist,
                       learn_expected=not args.no_learn_expected)
    sys.stdout.write(terminal_report(result))
    print(f"wrote {', '.join(str(p) for p in result.files.values())}")
    if args.html:
        print(f"wrote {write_html(result, args.html)}")
    return 0


def handle_report(args: argparse.Namespace) -> int:
    from baseline.fleet.audit import read_audit
    from baseline.fleet.report import terminal_report, write_html

    result = read_audit(args.findings_dir)
    sys.stdout.write(terminal_report(result))
    if args.html:
        _check_writable_file(args.html, "--html")
        print(f"wrote {write_html(result, args.html)}")
    return 0
