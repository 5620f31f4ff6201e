"""Benchmark the fleet simulator: N hosts x 1 day -> events, wall time, events/s, bytes per event.

Reported for one run (all scenarios, default good-trace rate unless --events-target):
* rows written per table, traces, failures, good traces, calls simulated (counters carry them);
* generation wall time, events/s and simulated calls/s; CPU seconds of this process and its
  workers, and events per CPU second (the figure that holds on a machine shared with other jobs);
* bytes on disk: events table per event row, whole dataset (events+counters+truth) per event row
  (file sizes), blocks allocated per event row (what `du` counts), and per host-day;
* the reference in the same run: writing up to 2 million of the generated event rows as ONE
  Parquet file (write_table, same schema, default options) — the bytes/event of one big file and
  the cost of writing without any simulation or per-host partitioning.

    .venv/bin/python -m bench.bench_dataset [--quick] [--hosts N] [--hours H] [--workers W]
                                            [--events-target N] [--keep DIR]

--quick: 40 hosts. Default: 500 hosts. The real figures: --hosts 10000 --workers 2 (one day of a
10,000-host fleet) and --hosts 2000 --workers 2 --events-target 100000000 (capture-heavy).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import polars as pl

from baseline.simulator.simulate import simulate
from tracer.schema import dataset_files, write_table


def _reference_write(out: Path, n_events: int, tmp: Path) -> dict:
    """Write n_events rows (the generated rows, repeated) as one file: bytes/event floor."""
    files = dataset_files(out, "events")[:200]
    sample = pl.concat([pl.read_parquet(f) for f in files], how="vertical_relaxed")
    reps = max(1, -(-n_events // max(sample.height, 1)))
    big = pl.concat([sample] * reps).head(n_events)
    t = time.perf_counter()
    path = write_table(big, tmp / "one-file-events.parquet", "events")
    wall = time.perf_counter() - t
    return {"rows": big.height, "bytes": path.stat().st_size, "wall_s": round(wall, 3),
            "bytes_per_event": round(path.stat().st_size / max(big.height, 1), 2)}


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its (reaped) worker processes."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _allocated_bytes(root: Path) -> int:
    """Disk blocks allocated under root (files and directories), as `du` counts them."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        total += os.stat(dirpath).st_blocks * 512
        total += sum(os.stat(os.path.join(dirpath, f)).st_blocks * 512 for f in files)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="40 hosts")
    ap.add_argument("--hosts", type=int, default=None)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--events-target", type=int, default=None)
    ap.add_argument("--keep", metavar="DIR", help="write the dataset here and keep it")
    args = ap.parse_args(argv)
    hosts = args.hosts or (40 if args.quick else 500)
    tmp = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    out = Path(args.keep) if args.keep else tmp / "fleet"
    try:
        cpu0 = _cpu_s()
        summary = simulate(out, hosts=hosts, hours=args.hours, seed=args.seed, workers=args.workers,
                           events_target=args.events_target)
        wall = summary["wall_s"]
        cpu = _cpu_s() - cpu0
        allocated = _allocated_bytes(out)
        ev = summary["events"]
        total_bytes = sum(summary["bytes"].values())
        ref = _reference_write(out, min(ev, 2_000_000), tmp)
        host_days = hosts * args.hours / 24
        report = {
            "hosts": hosts, "hours": args.hours, "workers": args.workers, "good_rate": summary["good_rate"],
            "events": ev, "traces": summary["traces"], "failures": summary["failures"], "good": summary["good"],
            "counters": summary["counters"], "truth": summary["truth"], "calls_simulated": summary["calls"],
            "wall_s": wall, "events_per_s": round(ev / wall), "calls_per_s": round(summary["calls"] / wall),
            "cpu_s": round(cpu, 1), "events_per_cpu_s": round(ev / max(cpu, 1e-9)),
            "allocated_bytes": allocated, "allocated_bytes_per_event": round(allocated / max(ev, 1), 2),
            "bytes": summary["bytes"],
            "events_bytes_per_event": round(summary["bytes"].get("events", 0) / max(ev, 1), 2),
            "total_bytes_per_event": round(total_bytes / max(ev, 1), 2),
            "events_per_host_day": round(ev / host_days), "bytes_per_host_day": round(total_bytes / host_days),
            "reference_one_file": ref,
            "ratio_bytes_per_event_vs_one_file": round(summary["bytes"].get("events", 0) / max(ev, 1) / ref["bytes_per_event"], 2),
            "root_causes": summary["root_causes"],
        }
        print(json.dumps(report, indent=1))
        print(f"\n{hosts} hosts x {args.hours:g} h: {ev:,} events in {wall:.1f} s = {ev / wall:,.0f} events/s "
              f"({summary['calls'] / wall:,.0f} calls/s simulated); events {report['events_bytes_per_event']} B/event "
              f"(one-file reference {ref['bytes_per_event']} B/event, ratio {report['ratio_bytes_per_event_vs_one_file']}), "
              f"all tables {report['total_bytes_per_event']} B/event ({report['allocated_bytes_per_event']} B/event "
              f"allocated on disk); {cpu:.0f} CPU s = {report['events_per_cpu_s']:,} events per CPU s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
