"""Run every benchmark in turn (`make bench`); `--full` for the issue-sized runs.

Each benchmark prints its own table with ratios against a reference measured in the same run
(untraced and strace -f, GNU diff, a bare BPF counting program, an empty bcc program, a bare
polars scan). The quick sizes take a few minutes in all; the full sizes (1M-event diff,
100M-event learn, 10,000-host audit, 1,000-host week through the DAGs) take much longer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

BENCHES = [
    ("bench.bench_record", "tracer record vs untraced vs strace -f"),
    ("bench.scenario_accuracy", "top-1 bifurcation accuracy on real fault scenarios"),
    ("bench.bench_diff", "baseline diff on 2 x 1M events vs GNU diff"),
    ("bench.bench_fleet", "per-invocation BPF cost vs a bare counter; daemon CPU; bytes/record"),
    ("bench.bench_start", "compile + load per BPF program at a start vs an empty bcc program"),
    ("bench.bench_dataset", "simulator throughput and bytes on disk per event"),
    ("bench.bench_audit", "baseline learn throughput/RSS; audit of a fleet day"),
    ("bench.bench_ingest", "ingest per spool snapshot vs reading the files; idempotent rerun"),
    ("bench.coverage_pipeline", "DAG run times on a simulated fleet week"),
    ("bench.bench_export", "Trace Event JSON export vs read+json; HTML reports vs one chart"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="issue-sized runs instead of --quick")
    parser.add_argument("--only", nargs="*", metavar="MODULE", help="e.g. bench.bench_diff")
    args = parser.parse_args(argv)
    failed = []
    for module, what in BENCHES:
        if args.only and module not in args.only:
            continue
        print(f"\n=== {module}: {what}", flush=True)
        start = time.perf_counter()
        cmd = [sys.executable, "-m", module] + ([] if args.full else ["--quick"])
        if subprocess.run(cmd).returncode != 0:
            failed.append(module)
        print(f"=== {module}: {time.perf_counter() - start:.1f} s", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
