"""How long each DAG run takes on a simulated fleet week (issue 5's figure).

Runs the three DAGs with dag.test() (in-process, SQLite metadata DB in a temp AIRFLOW_HOME) on
simulated data and prints wall times, plus a reference measured in the same run: one full scan
of the dataset's events and counters with polars (the least any task reading them could cost).

* baseline_audit and probe_coverage_weekly run on a simulated dataset of HOSTS x HOURS.
* trace_ingest runs on one 5-minute interval of spool snapshots from SPOOL_HOSTS hosts (the
  simulator's spool mode is capped at 200 hosts), then reruns (idempotency cost); the per-run
  figure for HOSTS is extrapolated linearly from it, which is what one run handles.

    .venv/bin/python -m bench.coverage_pipeline                 # 1,000 hosts x 168 h
    .venv/bin/python -m bench.coverage_pipeline --quick         # 20 hosts x 24 h
    .venv/bin/python -m bench.coverage_pipeline --dataset DIR   # reuse a simulated dataset
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

START = "2026-11-23T00:00:00Z"  # Monday of ISO week 2026-W48


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=168.0)
    ap.add_argument("--spool-hosts", type=int, default=200)
    ap.add_argument("--dataset", help="reuse a simulated dataset (start must be 2026-11-23)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="20 hosts x 24 h, 20 spool hosts")
    ap.add_argument("--dags", default="trace_ingest,baseline_audit,probe_coverage_weekly",
                    help="comma-separated subset of DAGs to time")
    args = ap.parse_args(argv)
    if args.quick:
        args.hosts, args.hours, args.spool_hosts = 20, 24.0, 20

    work = Path(tempfile.mkdtemp(prefix="tracebase-bench-"))
    os.environ["AIRFLOW_HOME"] = str(work / "airflow")
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parents[1] / "dags")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"

    import polars as pl
    import yaml

    from baseline.pipeline.config import write_default_config
    from baseline.simulator.simulate import simulate
    from tracer.schema import dataset_files, scan

    def timed(label: str, fn):
        t0 = time.perf_counter()
        out = fn()
        secs = time.perf_counter() - t0
        print(f"{label:<48} {secs:8.1f} s", flush=True)
        return out, secs

    if args.dataset:
        dataset = Path(args.dataset)
    else:
        dataset = work / "sim"
        timed(f"simulate {args.hosts} hosts x {args.hours:g} h (dataset)",
              lambda: simulate(dataset, hosts=args.hosts, hours=args.hours, seed=3, start=START, workers=args.workers))
    ev_files, co_files = dataset_files(dataset, "events"), dataset_files(dataset, "counters")
    (ev_rows, co_rows), ref = timed(
        "reference: full polars scan of events+counters",
        lambda: (scan(ev_files, "events").select(pl.len()).collect().item(),
                 scan(co_files, "counters").select(pl.col("failures").sum(), pl.len()).collect()["len"].item()),
    )
    print(f"dataset: {ev_rows:,} event rows, {co_rows:,} counter rows, {len(ev_files) + len(co_files):,} files")

    end = dt.datetime.fromisoformat(START.replace("Z", "+00:00")) + dt.timedelta(hours=args.hours)
    root = work / "pipeline"
    config = write_default_config(root / "pipeline.yaml", root)
    doc = yaml.safe_load(config.read_text())
    doc["paths"]["dataset"] = str(dataset)
    doc["probe_set"] = str(Path(__file__).resolve().parents[1] / "bpf" / "probes" / "rdma.yaml")
    doc["thresholds"]["audit_window_hours"] = 1.0
    config.write_text(yaml.safe_dump(doc))

    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db
    from airflow.utils.state import DagRunState

    db.initdb()
    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])

    def run(dag_id: str, conf: dict, when: dt.datetime) -> str:
        dr = bag.get_dag(dag_id).test(run_conf=conf, logical_date=when)
        tis = dr.get_task_instances()
        if dr.state != DagRunState.SUCCESS:
            raise SystemExit(f"{dag_id} failed: {({ti.task_id: ti.state for ti in tis})}")
        tasks = ", ".join(f"{ti.task_id} {ti.duration or 0:.1f}s" for ti in sorted(tis, key=lambda t: t.start_date or end))
        print(f"    tasks: {tasks}", flush=True)
        return dr.state

    wanted = set(args.dags.split(","))
    results = {}
    if "baseline_audit" in wanted:
        _, results["baseline_audit"] = timed("dag baseline_audit (7-day baseline, 1 h audit)",
                                             lambda: run("baseline_audit", {"config": str(config)}, end))
    if "probe_coverage_weekly" in wanted:
        _, results["probe_coverage_weekly"] = timed(
            "dag probe_coverage_weekly (2026-W48)",
            lambda: run("probe_coverage_weekly", {"config": str(config), "week": "2026-W48"}, end))
    if "trace_ingest" in wanted:
        results.update(time_ingest(args, work, end, run, timed))
    print()
    print(f"per-run wall time at {args.hosts} hosts ({args.hours:g} h of data), ratio to the reference scan ({ref:.1f} s):")
    for dag_id, secs in results.items():
        if dag_id == "trace_ingest":
            print(f"  trace_ingest           {secs * args.hosts / args.spool_hosts:8.1f} s  "
                  f"(measured {secs:.1f} s at {args.spool_hosts} hosts, scaled linearly; rerun {results['rerun']:.1f} s)")
        elif dag_id != "rerun":
            print(f"  {dag_id:<22} {secs:8.1f} s  ({secs / ref:.1f}x reference)")
    print(f"report: {root / 'reports' / '2026-W48' / 'report.html'}  (work dir {work}; delete when done)")
    return 0


def time_ingest(args, work: Path, end: dt.datetime, run, timed) -> dict[str, float]:
    import yaml

    from baseline.pipeline.config import write_default_config
    from baseline.simulator.simulate import simulate

    spool_root = work / "spool-sim"
    timed(f"simulate spool: {args.spool_hosts} hosts x 5 min",
          lambda: simulate(spool_root, hosts=args.spool_hosts, hours=5 / 60, seed=4, start=START, spool=True))
    snaps = sum(1 for _ in (spool_root / "spool").glob("*/snap-*"))
    ingest_root = work / "ingest"
    ingest_cfg = write_default_config(ingest_root / "pipeline.yaml", ingest_root)
    doc = yaml.safe_load(ingest_cfg.read_text())
    doc["paths"]["spool"] = str(spool_root / "spool")
    ingest_cfg.write_text(yaml.safe_dump(doc))
    _, secs = timed(f"dag trace_ingest ({snaps:,} snapshots)", lambda: run("trace_ingest", {"config": str(ingest_cfg)}, end))
    _, rerun = timed("dag trace_ingest rerun (empty spool)", lambda: run("trace_ingest", {"config": str(ingest_cfg)}, end))
    return {"trace_ingest": secs, "rerun": rerun}


if __name__ == "__main__":
    sys.exit(main())
