"""The scheduled pipeline as plain functions of the pipeline config.

Each Airflow task in dags/ is one call into this module, and so is each step when the pipeline
runs without Airflow (the embedded default: cron, a shell loop, or by hand). Every function
takes a validated `PipelineConfig` and returns a small JSON-friendly dict (an XCom value).

ingest_once        spool -> dataset (idempotent), with quarantine
tidy               compact small files, drop data and quarantine past retention
refresh_baseline   fit the good-trace baseline on the last `baseline_window_days`
refresh_expected   learn fleet expected errors and merge them into expected_errors.yaml
audit_new_failures audit failures of the last `audit_window_hours` into a staging directory
publish_findings   move the staged audit into findings/<stamp>/ and point findings/LATEST at it
weekly_coverage    the weekly probe-coverage report (+ application failures from NCCL logs)
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

from baseline.pipeline.config import PipelineConfig
from tracer import atomic
from tracer.errors import TracebaseError


def _now(now: dt.datetime | None) -> dt.datetime:
    now = now or dt.datetime.now(dt.UTC)
    return now if now.tzinfo else now.replace(tzinfo=dt.UTC)


def ingest_once(cfg: PipelineConfig) -> dict:
    from baseline.pipeline.ingest import ingest_spool

    atomic.make_dirs(cfg.spool)
    return ingest_spool(cfg.spool, cfg.dataset, cfg.quarantine, workers=cfg.ingest_workers).to_dict()


def tidy(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.pipeline.ingest import apply_retention, compact_dataset

    compacted = compact_dataset(
        cfg.dataset,
        min_files=cfg.thresholds.compact_min_files,
        small_file_bytes=int(cfg.thresholds.compact_small_file_mb * (1 << 20)),
    )
    expired = apply_retention(
        cfg.dataset,
        cfg.quarantine,
        dataset_days=cfg.retention.dataset_days,
        quarantine_days=cfg.retention.quarantine_days,
        today=_now(now).date(),
    )
    return {"compact": compacted.to_dict(), "expired": expired}


def _window_start(now: dt.datetime | None, **delta: float) -> dt.datetime:
    return _now(now) - dt.timedelta(**delta)


def refresh_baseline(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.fleet.model import fit_baseline

    since = _window_start(now, days=cfg.thresholds.baseline_window_days)
    atomic.make_dirs(cfg.model.parent)
    model = fit_baseline(cfg.dataset, out=cfg.model, since=since)
    header = model.header()
    return {"model": str(cfg.model), "since": since.isoformat(), "traces": header["n_traces"],
            "events": header["n_events"], "operations": len(header["operations"])}


def refresh_expected(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.fleet.expected import learn_fleet_expected, merge_into_file

    since = _window_start(now, days=cfg.thresholds.baseline_window_days)
    learned = learn_fleet_expected(cfg.dataset, since=since)
    counts = merge_into_file(cfg.expected_errors, learned.entries, now=_now(now).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return {"expected_errors": str(cfg.expected_errors), "learned": len(learned.entries), **counts}


def _expected_list(cfg: PipelineConfig):
    """The repo's curated list plus the pipeline's file (curated + learned), without duplicates."""
    from baseline.run.allowlist import DEFAULT_PATH, ExpectedErrors, load_default

    default = load_default()
    if not cfg.expected_errors.exists():
        return default
    if cfg.expected_errors.resolve() == DEFAULT_PATH.resolve():
        return ExpectedErrors.load(cfg.expected_errors)
    return default + ExpectedErrors.load(cfg.expected_errors)


def run_stamp(now: dt.datetime | None = None) -> str:
    return _now(now).strftime("%Y%m%dT%H%M%SZ")


def audit_new_failures(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    """Audit the recent window into findings/.staging-<stamp>/ (tables and report.html; published by
    publish_findings)."""
    from baseline.fleet.audit import run_audit

    stamp = run_stamp(now)
    staging = cfg.findings / f".staging-{stamp}"
    since = _window_start(now, hours=cfg.thresholds.audit_window_hours)
    expected = _expected_list(cfg)
    model = cfg.model if cfg.model.exists() else None
    result = run_audit(cfg.dataset, staging, since=since, model=model, expected=expected, learn_expected=False)
    # The HTML report is staged with the tables, so publish_findings moves both at once.
    from baseline.fleet.report import write_html

    write_html(result, staging / "report.html")
    return {
        "staging": str(staging),
        "stamp": stamp,
        "since": since.isoformat(),
        "traces_audited": result.traces_audited,
        "findings": result.findings.height,
        "open_findings": result.open_findings.height,
        "clusters": result.clusters.height,
        "host_alerts": result.host_alerts.height,
    }


def publish_findings(cfg: PipelineConfig, audited: dict) -> dict:
    """Rename the staged audit to findings/<stamp>/ and update findings/LATEST atomically."""
    staging = Path(audited["staging"])
    if not staging.is_dir():
        raise TracebaseError(f"{staging}: no staged audit output to publish")
    final = cfg.findings / audited["stamp"]
    if final.exists():  # a rerun of the same interval replaces its own output
        shutil.rmtree(final)
    os.replace(staging, final)
    latest = cfg.findings / "LATEST"
    atomic.write_text(latest, final.name + "\n")
    return {**audited, "published": str(final)}


def weekly_coverage(cfg: PipelineConfig, week: str | None = None) -> dict:
    from baseline.pipeline.coverage import weekly_report, write_report
    from baseline.pipeline.nccl import load_app_failures

    parsed = load_app_failures(cfg.nccl_logs) if cfg.nccl_logs else None
    report = weekly_report(
        cfg.dataset,
        week=week,
        probe_set=cfg.probe_set,
        app_failures=parsed.failures if parsed else None,
        parse_problems=parsed.problems if parsed else (),
        trend_change_pct=cfg.thresholds.trend_change_pct,
    )
    written = write_report(report, cfg.reports)
    return coverage_summary(report, written)


def coverage_summary(report, written: dict) -> dict:
    """The weekly coverage report in a few JSON-friendly numbers (XCom, `baseline coverage --json`)."""
    return {
        "week": report.week,
        "hosts": report.hosts,
        "probes": report.probes.height,
        "never_fired": report.never_fired,
        "app_failures": report.app_total,
        "app_probed_fraction": report.app_summary.get("probed"),
        "app_seen_fraction": report.app_summary.get("seen"),  # the headline: seen by a live probe
        "parse_problems": len(report.parse_problems),
        "files": {k: str(v) for k, v in written.items()},
    }
