"""Ingest cost per spool snapshot, against reading the same files, measured in the same run.

A simulated spool (HOSTS hosts, MINUTES of non-idle 5 s snapshots) is ingested into an empty
dataset (the checks of every file: footer, schema, nulls, symlinks, names; one write per host
partition; the lock, stale-temporary sweep and watermark), then ingested again (the idempotent
rerun: every snapshot found already in the dataset). The reference is the floor for any
ingest: one pyarrow read of every spool file.

    .venv/bin/python -m bench.bench_ingest                   # 100 hosts x 30 min
    .venv/bin/python -m bench.bench_ingest --quick           # 20 hosts x 10 min (make bench)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=3, help="take the best of N runs (default 3)")
    ap.add_argument("--quick", action="store_true", help="20 hosts x 10 min")
    args = ap.parse_args(argv)
    if args.quick:
        args.hosts, args.minutes = 20, 10.0

    import pyarrow.parquet as pq

    from baseline.pipeline.ingest import ingest_spool
    from baseline.simulator.simulate import simulate

    work = Path(tempfile.mkdtemp(prefix="tracebase-bench-ingest-"))
    try:
        simulate(work, hosts=args.hosts, hours=args.minutes / 60, seed=1, start="2026-11-28T00:00:00Z", spool=True)
        spool = work / "spool"
        files = sorted(spool.rglob("*.parquet"))
        snapshots = len({f.parent for f in files})

        def reference() -> float:
            t = time.perf_counter()
            for f in files:
                pq.ParquetFile(f).read()
            return time.perf_counter() - t

        def first() -> float:
            dataset = work / "ds"
            shutil.rmtree(dataset, ignore_errors=True)
            t = time.perf_counter()
            ingest_spool(spool, dataset, work / "q", remove_ingested=False)
            return time.perf_counter() - t

        def rerun() -> float:
            t = time.perf_counter()
            ingest_spool(spool, work / "ds", work / "q", remove_ingested=False)
            return time.perf_counter() - t

        ref = min(reference() for _ in range(args.repeat))
        ing = min(first() for _ in range(args.repeat))
        again = min(rerun() for _ in range(args.repeat))
        print(f"spool: {args.hosts} hosts x {args.minutes:g} min -> {snapshots:,} snapshots, {len(files):,} files")
        print(f"reference: read every spool file once      {ref:7.2f} s  ({ref / snapshots * 1e3:5.2f} ms/snapshot)")
        print(f"ingest into an empty dataset               {ing:7.2f} s  ({ing / snapshots * 1e3:5.2f} ms/snapshot, "
              f"{ing / ref:.1f}x the reference)")
        print(f"rerun (all already ingested)               {again:7.2f} s  ({again / snapshots * 1e3:5.2f} ms/snapshot, "
              f"{again / ref:.1f}x the reference)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
