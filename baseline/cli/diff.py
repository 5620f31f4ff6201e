"""`baseline diff`: name where a bad trace left known-good behaviour."""

from __future__ import annotations

import argparse
import sys

from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError
from tracer.inputs import input_paths
from tracer.startup import (
    M_ARENA_MAX,
    M_MMAP_THRESHOLD,
    NoPandas,
    own_default,
    set_malloc,
    single_threaded_blas,
)

EPILOG = """\
exit status (like diff(1)): 0 no anomaly, 1 anomaly found, 2 trouble (bad input, ...)

examples:
  baseline diff good.parquet bad.parquet
  baseline diff good-runs/ bad.parquet --json | jq .bifurcation
  baseline diff g1.parquet g2.parquet g3.parquet bad.parquet --context 5
  baseline diff good/ failures.parquet --trace-id host1:42 --allowlist expected_errors.yaml
  baseline diff good/ bad.parquet --no-learn     # only the allowlist makes errors expected
  baseline diff good/ bad.parquet --learned team.learned.yaml

The JSON object is documented in docs/diff-json.md.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diff",
        help="name the bifurcation point of a bad trace against good traces",
        description=(
            "Diff BAD against one or more GOOD traces (Parquet files or directories of them): "
            "print the first event no good run explains (the bifurcation point), the last "
            "common events and what good runs did instead, later anomalies ranked, and the "
            "errors ignored as expected."
        ),
        formatter_class=HelpFormatter,
        epilog=EPILOG,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="GOOD... then BAD (the last one)")
    p.add_argument("--allowlist", metavar="FILE", action="append", type=common.input_path("an allowlist"),
                   help="curated expected-errors YAML, repeatable (default: the package's expected_errors.yaml)")
    p.add_argument("--learned", metavar="FILE", action="append",
                   help="learned expected errors, loaded beside the allowlist, repeatable (default: "
                        "./expected_errors.learned.yaml when it exists; see `baseline allowlist learn`)")
    p.add_argument("--no-learn", action="store_true",
                   help="do not treat errors seen in the GOOD runs as expected")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/diff-json.md)")
    p.add_argument("--context", type=common.non_negative_int, default=3, metavar="N",
                   help="events shown before the divergence and of the good runs (default 3)")
    p.add_argument("--trace-id", metavar="ID", type=common.non_empty("a trace id"), help="the trace to diff when BAD holds several")
    p.add_argument("--mixed", action="store_true",
                   help="accept GOOD traces of different commands")
    p.add_argument("-k", "--window", type=common.positive_int, default=4, metavar="K",
                   help="window length of the good-behaviour model (default 4, at most 1000)")
    p.add_argument("--max-anomalies", type=common.positive_int, default=20, metavar="N",
                   help="anomalies listed at most (default 20)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if len(args.traces) < 2:
        raise TracebaseError(
            f"TRACE: expected at least one GOOD and one BAD trace, found {len(args.traces)} argument"
        )
    # A bug here is the dispatcher's like every command's: one line, exit 2 (never 1, "anomaly"),
    # the traceback in a file; printing it here put a traceback on stderr (an allowlist with a
    # 5,000-digit number did).
    from baseline.run.allowlist import diff_expected

    # The allowlists (YAML), then the traces' paths, are checked before pyarrow is imported
    # (~0.3 s of CPU): a mistyped path is refused at once, in the order the work reads them.
    expected = diff_expected(args.allowlist, args.learned)
    input_paths(args.traces)
    if "pyarrow" not in sys.modules:  # a fresh process: set up Arrow for a one-shot diff
        # Arrow buffers from the system allocator go back to the OS when freed (the default
        # mimalloc pool keeps ~100 MiB of read buffers for a million events mapped).
        own_default("ARROW_DEFAULT_MEMORY_POOL", "system")
        single_threaded_blas()  # (entry() did already, unless `main` is called in-process)
        _diff_malloc_settings()
        _arrow_without_pandas()
    from baseline.run.diff import diff_traces
    from baseline.run.report import write_report

    good, bad = args.traces[:-1], args.traces[-1]
    report = diff_traces(
        good,
        bad,
        expected=expected,
        learn=not args.no_learn,
        k=args.window,
        context=args.context,
        trace_id=args.trace_id,
        mixed=args.mixed,
        max_anomalies=args.max_anomalies,
    )
    for w in report.warnings:
        print(f"baseline diff: warning: {w}", file=sys.stderr)
    write_report(report, args.json)
    return 1 if report.anomaly else 0


# Blocks from 4 MiB up (a million events' int64 columns and their temporaries, 8 MiB each) are
# mapped on their own and unmapped when freed. glibc's threshold otherwise rises to the size of
# each such block freed (up to 32 MiB), after which they come from the heap, where freed memory
# stays in the RSS until reused: the same diff's peak was 197-245 MiB by the order the read-ahead
# thread's and this thread's blocks happened to be freed in. At 4 MiB, 197-202 MiB for the CPU
# of the default; at 1 MiB (the int32 columns mapped too) 180 MiB, for ~25 % more CPU in page
# faults (bench_diff, six paired runs each).
MMAP_THRESHOLD = 4 << 20


def _diff_malloc_settings() -> None:
    """One glibc malloc arena for the process, and a fixed mmap threshold (MMAP_THRESHOLD): the
    thread that reads Parquet columns ahead (baseline.run.traces) would otherwise allocate
    from an arena of its own, whose freed pages stay mapped (~40 MiB more at a two
    million-event diff's peak)."""
    set_malloc(M_ARENA_MAX, 1)
    set_malloc(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def _arrow_without_pandas() -> None:
    """Let pyarrow settle "no pandas" without importing it. pyarrow tries to import pandas
    lazily on its first conversion of Python or numpy data (pa.array, pa.scalar, to_numpy,
    ...) when it is installed, which costs a diff ~0.25 s of CPU and ~30 MiB; nothing here
    uses pandas. An explicit pandas conversion later (to_pandas) still imports it. (The console
    script refuses pandas for the whole process already: this is for `main` called in-process.)"""
    finder = NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        import pyarrow as pa

        pa.array([0])  # the one lazy attempt, refused
    finally:
        sys.meta_path.remove(finder)
