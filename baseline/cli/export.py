"""`baseline export`: traces as Chrome Trace Event JSON for the Perfetto UI and chrome://tracing."""

from __future__ import annotations

import argparse
import sys

from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError, printable
from tracer.inputs import input_paths, refuse_overwriting_inputs

EPILOG = """\
open the output in https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load).

examples:
  baseline export run.parquet -o run.json
      a `tracer record` trace: a track per process/thread, syscalls with errno/path args
  baseline export DATASET/events --host gpu00017 --kind failure -o failures.json
      fleet call trees of one host, nested frames on the calling thread
  baseline export DATASET/events --trace-id gpu00017:42 --align start -o tree.json
  baseline export --diff good1.parquet good2.parquet bad.parquet -o diff.json
      the bad run beside a good run, the bifurcation as an instant event
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="export traces (or a diff) as Chrome Trace Event JSON (Perfetto, chrome://tracing)",
        description=(
            "Write TRACE (events Parquet files or directories: a recording, a dataset's events) as "
            "Trace Event JSON: complete events per process/thread, nested call-tree frames. With "
            "--diff, TRACE... are GOOD... BAD: the bad run and a good run side by side with the "
            "bifurcation marked."
        ),
        formatter_class=HelpFormatter,
        epilog=EPILOG,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="events Parquet files or directories")
    common.add_output(p, help="output JSON file (default: stdout, also `-o -`)", default="-",
                      type=common.output_path("the JSON output", file=True, stdout=True))
    p.add_argument("--diff", action="store_true", help="TRACE... are GOOD... BAD: export the diff")
    p.add_argument("--trace-id", action="append", default=[], metavar="ID", type=common.non_empty("a trace id"),
                   help="only this trace (repeatable; with --diff: the bad trace when BAD holds several)")
    p.add_argument("--host", action="append", default=[], metavar="HOST", type=common.non_empty("a host name"),
                   help="only this host (repeatable)")
    p.add_argument("--kind", action="append", default=[], choices=["good", "failure", "full"],
                   help="only traces of this kind (repeatable)")
    p.add_argument("--align", choices=["wall", "start"], default="wall",
                   help="place traces at their wall-clock start (default) or all at 0")
    p.add_argument("--allowlist", metavar="FILE", action="append", type=common.input_path("an allowlist"), help="with --diff: expected-errors YAML (repeatable)")
    p.add_argument("--learned", metavar="FILE", action="append",
                   help="with --diff: learned expected errors, loaded beside the allowlist, as `baseline diff` "
                        "does, repeatable (default: ./expected_errors.learned.yaml when it exists)")
    p.add_argument("--mixed", action="store_true", help="with --diff: accept good traces of different commands")
    p.add_argument("--max-events", type=common.positive_int, default=None, metavar="N",
                   help="refuse to export more than N events (default 2,000,000)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.output != "-":
        refuse_overwriting_inputs(args.output, "-o/--output", [*args.traces, *(args.allowlist or []),
                                                                *(args.learned or [])])
    if args.diff:
        if len(args.traces) < 2:
            raise TracebaseError(f"TRACE: with --diff expected GOOD... BAD (two or more), found {len(args.traces)}")
        if len(args.trace_id) > 1:
            raise TracebaseError(f"--trace-id: with --diff expected one bad trace id, found {len(args.trace_id)}")
        if args.host or args.kind:
            raise TracebaseError("--host/--kind: expected no host or kind filter with --diff (use --trace-id), found one")
    elif args.allowlist or args.learned or args.mixed:
        raise TracebaseError("--allowlist/--learned/--mixed: expected only with --diff, found without")
    allowlist = None
    if args.diff:  # read first, as `baseline diff` reads them (YAML: before polars, like the traces' paths)
        from baseline.run.allowlist import diff_expected

        allowlist = diff_expected(args.allowlist, args.learned)
    input_paths(args.traces)  # a missing trace is refused before polars is imported (~0.5 s)
    from baseline import export
    from baseline.pipeline.ingest import reading_datasets

    max_events = export.DEFAULT_MAX_EVENTS if args.max_events is None else args.max_events
    with reading_datasets(args.traces):  # a dataset's events: a running ingest or compaction first
        if args.diff:
            trace = export.export_diff(args.traces[:-1], args.traces[-1], allowlist=allowlist,
                                       trace_id=args.trace_id[0] if args.trace_id else None, mixed=args.mixed,
                                       max_events=max_events)
        else:
            trace = export.export_trace(args.traces, trace_ids=args.trace_id, hosts=args.host, kinds=args.kind,
                                        align=args.align, max_events=max_events)
    n = sum(1 for e in trace["traceEvents"] if e["ph"] != "M")
    if args.output == "-":
        export.dump(trace, sys.stdout)
        return 0
    try:
        path = export.write_json(trace, args.output)
    except BrokenPipeError:
        raise  # -o /dev/stdout or a FIFO whose reader stopped early (| head): quiet, as for `-o -`
    except OSError as exc:
        raise TracebaseError(f"{args.output}: cannot write ({exc.strerror})") from None
    print(f"wrote {printable(str(path))}: {n} trace events", file=sys.stderr)
    return 0
