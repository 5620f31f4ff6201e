"""The scheduled pipeline as plain functions of the pipeline config.

Each Airflow task in dags/ is one call into this module, and so is each step when the pipeline
runs without Airflow (the embedded default: cron, a shell loop, or by hand). Every function
takes a validated `PipelineConfig` and returns a small JSON-friendly dict (an XCom value).

ingest_once        spool -> dataset (idempotent), with quarantine; publishes the ingest watermark
tidy               compact small files and closed days (across hosts), drop data and quarantine past retention
refresh_baseline   fit the good-trace baseline on the last `baseline_window_days`
refresh_expected   learn fleet expected errors and merge them into expected_errors.yaml
audit_new_failures audit failures of the last `audit_window_hours` into a staging directory
                   (findings, clusters, host alerts and the HTML report)
publish_findings   move the staged audit into findings/<stamp>/, point findings/LATEST at the
                   newest run, expire runs older than `retention.findings_days`
weekly_coverage    the weekly probe-coverage report (+ application failures from NCCL logs)

Consistency: the readers (refresh_*, audit, coverage) hold the dataset's shared lock and the
writers (ingest, tidy) its exclusive one (baseline.pipeline.ingest.dataset_lock), so a model is
never fitted, nor an audit run, on an interval ingest is still writing.
Retries: every task can run again with the same arguments: ingest and compaction are idempotent,
the audit rewrites its staging directory, and publishing an already published run succeeds.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from baseline.pipeline.config import ConfigError, PipelineConfig
from tracer import atomic, units
from tracer.errors import TracebaseError

STAGING_PREFIX = ".staging-"
LATEST = "LATEST"
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


_STAMP = re.compile(r"\d{8}T\d{6}Z", re.ASCII)
_F = TypeVar("_F", bound=Callable[..., Any])


def _now(now: Any, what: str = "now") -> dt.datetime:
    """The run's time: a datetime (naive = UTC, as every reader takes it), an ISO string (what an
    XCom or `airflow dags test` conf carries), or None (the clock). Anything else, or a time
    outside what int64-nanosecond timestamps hold (a clock set to 9999), is one line naming
    `what` -- was an AttributeError from deep inside a task, or a message naming `--since`."""
    if now is None:
        now = dt.datetime.now(dt.UTC)
    elif isinstance(now, dt.datetime):
        pass
    elif isinstance(now, str | dt.date):
        now = units.parse_time(now, what)
    else:
        raise TracebaseError(f"{what}: expected a date-time, found {type(now).__name__} {now!r:.80}")
    now = now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    try:
        in_range = units.MIN_TIME + dt.timedelta(days=400) <= now <= units.MAX_TIME
    except OverflowError:
        in_range = False
    if not in_range:
        raise TracebaseError(f"{what}: expected a time between {units.MIN_TIME:%Y} and {units.MAX_TIME:%Y} "
                             f"(int64-nanosecond timestamps), found {now.isoformat()} (is the system clock right?)")
    return now


class TaskFailed(SystemExit):
    """A task's failure as the one line a CLI prints (the library's message), for Airflow.

    Airflow's task runner logs every exception it catches with its traceback -- some 40 lines
    of its own frames around the one line that says what is wrong (a missing spool, a file
    that is not Parquet) -- except SystemExit, which it logs as one line, `Task exited
    exit_code=<message>`, and then fails or retries the task as it would for any other error.
    Raised only by `one_line_failure`, around a DAG task's library call."""


@contextmanager
def one_line_failure() -> Iterator[None]:
    """Turn the library's one-line errors (TracebaseError: a bad config, a bad input, a lock
    held too long) and OS errors (a full or read-only disk, EACCES) raised inside into
    TaskFailed carrying that line. Anything else -- a bug -- keeps its traceback."""
    try:
        yield
    except TracebaseError as exc:
        raise TaskFailed(str(exc)) from None
    except OSError as exc:
        where = f"{os.fsdecode(exc.filename)}: " if exc.filename is not None else ""
        raise TaskFailed(f"{where}{exc.strerror or exc}") from None


def _checked_config(fn: _F) -> _F:
    """Every task function's first argument is a loaded config: a path, None or a dict (what a
    DAG or a caller may hand over by mistake) is one line saying how to get one, not an
    AttributeError naming `.spool`."""

    @functools.wraps(fn)
    def wrapper(cfg: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(cfg, PipelineConfig):
            raise TracebaseError(f"cfg: expected a PipelineConfig (baseline.pipeline.config.load_config(path)), "
                                 f"found {type(cfg).__name__} {cfg!r:.80}")
        return fn(cfg, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


@_checked_config
def ingest_once(cfg: PipelineConfig) -> dict:
    from baseline.pipeline.ingest import ingest_spool

    # Not created here: a mistyped spool path would otherwise be made empty and every run would
    # report 0 snapshots, forever, with nothing said. The hosts' upload target is set up with them.
    if not cfg.spool.is_dir():
        what = "a file" if cfg.spool.exists() else "nothing"
        raise ConfigError(cfg.source, "paths.spool", "the directory the tracer hosts upload to",
                          f"{what} at {cfg.spool} (create it, or correct the path)")
    return ingest_spool(cfg.spool, cfg.dataset, cfg.quarantine, workers=cfg.ingest_workers).to_dict()


@_checked_config
def tidy(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.pipeline.ingest import apply_retention, compact_dataset

    # retention first: a date past it is dropped, not compacted across hosts and then dropped
    # (and a compaction stopped by the task's timeout no longer keeps retention from running)
    expired = apply_retention(
        cfg.dataset,
        cfg.quarantine,
        dataset_days=cfg.retention.dataset_days,
        quarantine_days=cfg.retention.quarantine_days,
        today=_now(now).date(),
    )
    compacted = compact_dataset(
        cfg.dataset,
        min_files=cfg.thresholds.compact_min_files,
        small_file_bytes=int(cfg.thresholds.compact_small_file_mb * (1 << 20)),
        days_after=cfg.thresholds.compact_days_after or None,
        today=_now(now).date(),
        quarantine=cfg.quarantine,
    )
    return {"compact": compacted.to_dict(), "expired": expired}


def _window_start(now: dt.datetime | None, **delta: float) -> dt.datetime:
    return _now(now) - dt.timedelta(**delta)


@contextmanager
def _reading(cfg: PipelineConfig):
    """The dataset's shared lock while a task reads it (waits for a running ingest to finish).

    A file whose pages do not decode fails the task naming that file (polars does not)."""
    from baseline.pipeline.ingest import dataset_lock
    from tracer.schema import unreadable_file_error

    with dataset_lock(cfg.dataset, exclusive=False) as held:
        try:
            yield held
        except Exception as exc:
            named = unreadable_file_error(exc, under=cfg.dataset)
            if named is None:
                raise
            raise named from exc


@_checked_config
def refresh_baseline(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.fleet.model import fit_baseline

    since = _window_start(now, days=cfg.thresholds.baseline_window_days)
    atomic.make_dirs(cfg.model.parent)
    with _reading(cfg):
        model = fit_baseline(cfg.dataset, out=cfg.model, since=since)
    header = model.header()
    return {"model": str(cfg.model), "since": since.isoformat(), "traces": header["n_traces"],
            "events": header["n_events"], "operations": len(header["operations"])}


@_checked_config
def refresh_expected(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    from baseline.fleet.expected import learn_fleet_expected, merge_into_file

    since = _window_start(now, days=cfg.thresholds.baseline_window_days)
    with _reading(cfg):
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
    return _now(now).strftime(STAMP_FORMAT)


@_checked_config
def audit_new_failures(cfg: PipelineConfig, now: dt.datetime | None = None) -> dict:
    """Audit the recent window into findings/.staging-<stamp>/ (published by publish_findings):
    findings, clusters and host alerts Parquet plus the HTML report beside them."""
    from baseline.fleet.audit import run_audit
    from baseline.fleet.report import write_html
    from baseline.pipeline.ingest import read_watermark

    stamp = run_stamp(now)
    staging = cfg.findings / f"{STAGING_PREFIX}{stamp}"
    if staging.exists():  # a retried attempt: start from a clean directory
        shutil.rmtree(staging)
    since = _window_start(now, hours=cfg.thresholds.audit_window_hours)
    expected = _expected_list(cfg)
    model = cfg.model if cfg.model.exists() else None
    with _reading(cfg):
        watermark = read_watermark(cfg.dataset)
        result = run_audit(cfg.dataset, staging, since=since, model=model, expected=expected, learn_expected=False)
    html = write_html(result, staging / "report.html")
    return {
        "staging": str(staging),
        "stamp": stamp,
        "since": since.isoformat(),
        "ingested_until": (watermark or {}).get("committed_until"),  # the data this audit saw
        "traces_audited": result.traces_audited,
        "findings": result.findings.height,
        "open_findings": result.open_findings.height,
        "clusters": result.clusters.height,
        "host_alerts": result.host_alerts.height,
        "stale_summary_hosts": result.stale_summary_hosts,
        "report": str(html),
    }


@_checked_config
def refresh_stale_summaries(cfg: PipelineConfig, audited: dict, now: dt.datetime | None = None) -> dict:
    """After an audit that read some hosts' counters whole because their summaries were stale
    (written before the counters' bucket rule changed: `baseline summarize`), the summaries of
    the audited window's dates are written anew, so the next audit reads summaries again. Does
    nothing (``ran: False``) when the audit found none stale: a check of every file costs ~60 us
    each, paid by no audit that does not need it. Older dates stay as they are
    (`baseline summarize` rewrites them)."""
    if not audited.get("stale_summary_hosts"):
        return {"ran": False}
    from baseline.pipeline.summaries import summarize_dataset

    since = dt.datetime.fromisoformat(audited["since"]).date()
    dates = [str(since + dt.timedelta(days=i)) for i in range((_now(now).date() - since).days + 1)]
    result = summarize_dataset(cfg.dataset, dates=dates)
    return {"ran": True, "dates": dates, **result.to_dict()}


@_checked_config
def publish_findings(cfg: PipelineConfig, audited: dict, now: dt.datetime | None = None) -> dict:
    """Rename the staged audit to findings/<stamp>/, point findings/LATEST at the newest
    published run (atomically) and expire runs past `retention.findings_days`.

    Safe to retry: when the staged directory is gone because this run was already published,
    the published directory is taken as it is."""
    staging, stamp = _staged(cfg, audited)
    final = cfg.findings / stamp
    if staging.is_dir():
        old = None
        if final.exists():  # a rerun of the same interval replaces its own output, never leaving a gap
            old = final.with_name(f".replaced-{stamp}-{os.getpid()}")
            os.replace(final, old)
        os.replace(staging, final)
        atomic.fsync_dir(cfg.findings)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    elif not (final / "findings.parquet").exists():
        raise TracebaseError(f"{staging}: no staged audit output to publish and no published run {final} "
                             f"(rerun the audit task)")
    latest = cfg.findings / LATEST
    current = latest.read_text().strip() if latest.is_file() else ""
    if not current or not (cfg.findings / current).is_dir() or stamp >= current:  # stamps sort by time
        atomic.write_text(latest, stamp + "\n")
    expired = expire_findings(cfg, now or _stamp_time(stamp))
    report = final / "report.html"
    return {**audited, "published": str(final), "report": str(report) if report.exists() else None,
            "latest": (cfg.findings / LATEST).read_text().strip(), "expired": expired}


def _staged(cfg: PipelineConfig, audited: Any) -> tuple[Path, str]:
    """The staged directory and stamp of the audit task's result. The stamp names a directory
    under findings/ that publishing renames over: only a stamp as run_stamp makes it, and only
    the staging directory the audit made for it (a stamp of `../x` would have moved the audit
    out of findings/ and replaced whatever was there)."""
    if not isinstance(audited, Mapping):
        raise TracebaseError(f"audited: expected the audit task's result (a mapping with 'staging' and 'stamp'), "
                             f"found {type(audited).__name__} {audited!r:.80}")
    stamp = audited.get("stamp")
    if not isinstance(stamp, str) or not _STAMP.fullmatch(stamp):
        raise TracebaseError(f"audited: 'stamp': expected a run stamp like 20261128T003000Z, found {stamp!r:.80}")
    staging = audited.get("staging")
    expected = cfg.findings / f"{STAGING_PREFIX}{stamp}"
    if not isinstance(staging, str | os.PathLike) or Path(staging) != expected:
        raise TracebaseError(f"audited: 'staging': expected {expected} (the audit's staging directory for "
                             f"its stamp), found {staging!r:.120}")
    return expected, stamp


def _stamp_time(stamp: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(stamp, STAMP_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


@_checked_config
def expire_findings(cfg: PipelineConfig, now: dt.datetime | None = None) -> list[str]:
    """Remove published runs (and abandoned staging directories) older than
    `retention.findings_days`; the run LATEST names is always kept."""
    if not cfg.findings.is_dir():
        return []
    cutoff = _now(now) - dt.timedelta(days=cfg.retention.findings_days)
    latest = (cfg.findings / LATEST).read_text().strip() if (cfg.findings / LATEST).is_file() else None
    removed = []
    for entry in sorted(cfg.findings.iterdir()):
        if entry.name.startswith(".replaced-") and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)  # the old copy a publish killed mid-replace left
            removed.append(entry.name)
            continue
        stamp = entry.name.removeprefix(STAGING_PREFIX)
        when = _stamp_time(stamp)
        if when is None or entry.name == latest or entry.is_symlink() or not entry.is_dir():
            continue
        if when < cutoff:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def coverage_week(logical_date: dt.datetime | None, data_interval_end: dt.datetime | None = None,
                  now: dt.datetime | None = None) -> str:
    """The ISO week a weekly-coverage run reports: the last complete ISO week (Monday to Sunday,
    UTC) before the run's time. The run's time is the later of its logical date and the end of
    its data interval: a scheduled run on Monday 00:00 reports the week that just ended, and a
    manual run reports the last week complete when it was triggered (its data interval is the
    last scheduled one, which may lag)."""
    from baseline.pipeline.coverage import week_label

    times = [_now(t, what) for t, what in ((logical_date, "logical_date"), (data_interval_end, "data_interval_end"))
             if t is not None]
    end = max(times) if times else _now(now)
    this_monday = end.date() - dt.timedelta(days=end.weekday())
    return week_label(this_monday - dt.timedelta(days=7))


@_checked_config
def weekly_coverage(cfg: PipelineConfig, week: str | None = None) -> dict:
    """The weekly coverage report of `week` (ISO, e.g. 2026-W48; None: the week of the newest
    data; the DAG passes coverage_week() of its run)."""
    from baseline.pipeline.coverage import weekly_report, write_report
    from baseline.pipeline.nccl import load_app_failures

    if week is not None and not isinstance(week, str):  # a DAG conf {"week": 48}
        raise TracebaseError(f"week: expected an ISO week like 2026-W48, found {type(week).__name__} {week!r:.80}")

    parsed = load_app_failures(cfg.nccl_logs) if cfg.nccl_logs else None
    with _reading(cfg):
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
