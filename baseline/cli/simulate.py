"""`baseline simulate` (write a simulated fleet dataset) and `baseline evaluate` (score an audit)."""

from __future__ import annotations

import argparse
import sys

from baseline.pipeline import layout
from tracer import units
from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import printable

SIMULATE_EPILOG = """\
examples:
  baseline simulate --hosts 50 --hours 24 --seed 1 --out /tmp/fleet
      50 hosts for one day, every scenario, dataset layout <out>/<table>/date=/host=/part-*.parquet
  baseline simulate --hosts 4 --hours 1 --out /tmp/spool --spool
      the spool layout of `tracer run`: <out>/spool/<host>/snap-<time>-<seq>/{events,counters}.parquet
  baseline simulate --hosts 10000 --hours 24 --workers 2 --out /data/fleet
      a 10,000-host day (a few minutes)
  baseline simulate --hosts 2000 --events-target 100000000 --out /data/big
      capture-heavy good traces until about 100 million event rows
  baseline simulate --hosts 20 --scenario efault_peer_cascade,crash_loop_fw_bad_state --out /tmp/f
      only some injected root causes (names: see --scenario help)
  baseline simulate --hosts 8 --hours 2 --start 2h --spool --out /tmp/trial
      trial data for the pipeline: the last two hours, so the audit's window (now - 2 h) holds it
  baseline simulate --hosts 10 --hours 2 --out /tmp/f && baseline learn /tmp/f && baseline audit /tmp/f
      then: baseline evaluate /tmp/f   (each finds the previous one's output inside /tmp/f)
"""

EVALUATE_EPILOG = """\
examples:
  baseline evaluate /tmp/fleet                      findings from /tmp/fleet/audit (audit's default)
  baseline evaluate /tmp/fleet --findings /tmp/out --json
  baseline evaluate /tmp/fleet --findings /srv/tracebase/findings   a pipeline findings dir: its LATEST run
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from baseline.simulator.plan import SCENARIOS  # not the catalog: --help needs only the names

    p = subparsers.add_parser(
        "simulate", help="write a simulated RDMA fleet (events, counters, ground truth)",
        description="Simulate the fleet tracer's output on N hosts with injected root causes and ground truth.",
        formatter_class=HelpFormatter, epilog=SIMULATE_EPILOG,
    )
    p.add_argument("--hosts", default="10", help="number of hosts (default 10, at most 1,000,000)")
    p.add_argument("--hours", default="24", help="simulated hours (default 24)")
    p.add_argument("--seed", default="0", help="random seed (default 0)")
    common.add_output(p, metavar="DIR", help="output directory", required=True, dest="out")
    p.add_argument("--start", metavar="T", default=None, type=common.since,
                   help="UTC start time: ISO date/time, 'now', or a time ago (2h: trial data the audit's "
                        "default window sees); default 2026-11-28T00:00:00Z")
    p.add_argument("--spool", action="store_true", help="write the tracer's spool layout (small fleets only)")
    p.add_argument("--scenario", default="all", metavar="NAMES",
                   help=f"comma-separated root causes to inject: all (default), none, or {', '.join(SCENARIOS)}")
    p.add_argument("--good-rate", default=None, metavar="P",
                   help="probability that a successful call is captured as a good trace (default 0.005)")
    p.add_argument("--events-target", default=None, metavar="N",
                   help="raise the good-trace rate until about N event rows are written")
    p.add_argument("--workers", default="1", help="worker processes (default 1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_simulate)

    e = subparsers.add_parser(
        "evaluate", help="score audit findings against the simulator's ground truth",
        description="Compare the audit's findings/clusters with the truth table of a simulated dataset.",
        formatter_class=HelpFormatter, epilog=EVALUATE_EPILOG,
    )
    e.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"), help="simulated dataset directory (holds truth/)")
    e.add_argument("--findings", metavar="DIR", default=None, type=common.input_path("the findings"),
                   help="output of `baseline audit` or a pipeline findings directory (its LATEST run); "
                        "default DATASET/audit (where `baseline audit DATASET` writes), else DATASET/findings")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=_evaluate)


def _simulate(args: argparse.Namespace) -> int:
    import json

    from baseline.simulator.plan import DEFAULT_GOOD_RATE, check_simulate

    # Numbers are parsed here (not by argparse `type=`) with the shared parsers, so a bad value
    # gives the one-line `baseline: error: --flag: expected ..., found ...` and exit status 2;
    # the simulator's own limits (MAX_HOSTS, the span of int64-ns timestamps, --scenario, --out
    # a file) are checked by baseline.simulator.plan, which `simulate` goes through too.
    hosts = units.positive_int(args.hosts, "--hosts")
    hours = units.positive_float(args.hours, "--hours")
    workers = units.positive_int(args.workers, "--workers")
    seed = units.non_negative_int(args.seed, "--seed")  # numpy's SeedSequence takes no negative seed
    events_target = None if args.events_target is None else units.positive_int(args.events_target, "--events-target")
    good_rate = DEFAULT_GOOD_RATE if args.good_rate is None else units.fraction(args.good_rate, "--good-rate")
    layout.refuse_inside_a_table(args.out, "-o/--output", "a dataset directory")
    check_simulate(args.out, hosts, hours, seed, args.start, spool=args.spool, scenarios=args.scenario,
                   good_rate=good_rate, events_target=events_target, workers=workers)
    # The simulator (polars, pyarrow, numpy, pandas: ~1 s) is imported once everything it
    # would refuse has been checked, so a mistyped flag is refused at once.
    from baseline.simulator.simulate import simulate

    def progress(n: int, _r: dict) -> None:
        if sys.stderr.isatty() and (n % 100 == 0 or n == hosts):
            print(f"\r{n}/{hosts} hosts", end="", file=sys.stderr, flush=True)

    summary = simulate(
        args.out, hosts=hosts, hours=hours, seed=seed, start=args.start, spool=args.spool,
        scenarios=args.scenario, good_rate=good_rate, events_target=events_target,
        workers=workers, progress=progress,
    )
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 0
    total = sum(summary["bytes"].values())
    print(f"{summary['hosts']} hosts x {summary['hours']} h -> {printable(str(args.out))}  ({summary['wall_s']} s)")
    print(f"  events {summary['events']:,} rows in {summary['traces']:,} traces "
          f"({summary['failures']:,} failures, {summary['good']:,} good), counters {summary['counters']:,}, "
          f"truth {summary['truth']:,}; {total / 1e6:.1f} MB")
    for cause, c in sorted(summary["root_causes"].items()):
        print(f"  {cause:34s} {c['traces']:>9,} traces on {c['hosts']:>6,} hosts")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    import json

    from baseline.fleet import paths
    from baseline.pipeline import layout

    findings = layout.find_audit(args.dataset, args.findings)  # None: evaluate names what it looked for
    paths.dataset_dir(args.dataset)  # evaluate's first check, before polars is imported
    from baseline.fleet.evaluate import evaluate, format_report

    scores = evaluate(args.dataset, findings)
    if args.json:
        print(json.dumps(scores, sort_keys=True))
    else:
        print(format_report(scores))
    return 0
