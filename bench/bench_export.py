"""Benchmark `baseline export` (Chrome Trace Event JSON) and the two HTML reports.

Reported for one simulated fleet (all scenarios):
* export of every event (call trees of all hosts): wall time, events/s, JSON bytes per event;
  the reference in the same run: reading the same events and `json.dumps` of one plain dict per
  row (the floor of "read Parquet, write JSON"), and the ratio export / reference;
* the audit report (html_report) and the weekly coverage report (write_report): wall time, page
  size; the reference: one matplotlib PNG chart of the same style (the cost of one chart), and
  the ratio report / (charts in the report x one chart).

    .venv/bin/python -m bench.bench_export [--quick] [--hosts N] [--hours H]

--quick: 10 hosts x 6 h. Default: 40 hosts x 24 h.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import tempfile
import time
from pathlib import Path

from baseline.export import COLUMNS, export_trace
from baseline.fleet.audit import run_audit
from baseline.fleet.report import html_report
from baseline.pipeline.coverage import weekly_report, write_report
from baseline.pipeline.nccl import load_app_failures
from baseline.run.allowlist import ExpectedErrors
from baseline.simulator.simulate import simulate
from baseline.templates import charts
from tracer.schema import read_events

REPO = Path(__file__).resolve().parents[1]


def _best(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _reference_json(events_dir: Path) -> int:
    rows = read_events(events_dir).select(COLUMNS).to_dicts()
    return len(json.dumps([{k: v for k, v in r.items() if v is not None} for r in rows], default=str))


def _one_chart() -> charts.Chart:
    return charts.hbar("ref", "reference", [f"probe_{i}" for i in range(12)], [10 * i + 1 for i in range(12)],
                       xlabel="failures")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 hosts x 6 h")
    ap.add_argument("--hosts", type=int, default=None)
    ap.add_argument("--hours", type=float, default=None)
    args = ap.parse_args(argv)
    hosts = args.hosts or (10 if args.quick else 40)
    hours = args.hours or (6.0 if args.quick else 24.0)
    tmp = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        start = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
        simulate(tmp / "fleet", hosts=hosts, hours=hours, seed=3, start=start.isoformat())
        events = tmp / "fleet" / "events"
        n = read_events(events).height

        t_exp, trace = _best(lambda: export_trace(events))
        size = len(json.dumps(trace, separators=(",", ":")))
        t_ref, ref_size = _best(lambda: _reference_json(events))
        print(f"export: {hosts} hosts x {hours:g} h, {n:,} events")
        print(f"  baseline export       {t_exp:8.3f} s  {n / t_exp:12,.0f} events/s  {size / n:6.1f} B/event")
        print(f"  reference (read+json) {t_ref:8.3f} s  {n / t_ref:12,.0f} events/s  {ref_size / n:6.1f} B/event")
        print(f"  ratio export / reference: {t_exp / t_ref:.2f}")

        audit = run_audit(tmp / "fleet", expected=ExpectedErrors([]))
        now = start + dt.timedelta(hours=hours)
        t_audit, page = _best(lambda: html_report(audit, now=now))
        n_audit = page.count("<img ")
        app = load_app_failures([str(tmp / "fleet" / "joblogs" / "*.log")]).failures
        report = weekly_report(tmp / "fleet", probe_set=REPO / "bpf" / "probes" / "rdma.yaml", app_failures=app)
        t_cov, written = _best(lambda: write_report(report, tmp / "reports", now=now))
        cov_page = written["html"].read_text()
        n_cov = cov_page.count("<img ")
        t_chart, _ = _best(_one_chart)
        print("reports:")
        print(f"  audit report     {t_audit:7.3f} s  {len(page) / 1024:7.0f} KiB  {n_audit} charts  "
              f"ratio to {n_audit} x one chart: {t_audit / max(n_audit * t_chart, 1e-9):.2f}")
        print(f"  coverage report  {t_cov:7.3f} s  {len(cov_page) / 1024:7.0f} KiB  {n_cov} charts  "
              f"ratio to {n_cov} x one chart: {t_cov / max(n_cov * t_chart, 1e-9):.2f} (with Parquet + Markdown)")
        print(f"  reference: one chart {t_chart:.3f} s")
        print(f"  coverage headline: {report.app_summary.get('seen', 0):.1%} of {report.app_total:,} "
              "application-labelled failures seen by a live probe")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
