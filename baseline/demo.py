"""The main job end to end on the embedded default (local files, no server): `make demo`.

Part 1, record and diff (needs root and bcc; skipped with the reason otherwise): a bundled
program that loads a config and the data file it names is recorded twice as a good run and once
with the data file missing, with `tracer record`'s library; `baseline diff` names the
bifurcation. Part 2, the fleet pipeline, exactly the steps the Airflow DAGs run
(baseline.pipeline.tasks): simulate a fleet's snapshots -> fit the good-trace baseline -> learn
expected errors -> audit -> publish findings and reports -> score against the simulator's
ground truth -> weekly probe-coverage report.

    python -m baseline.demo [--out out/demo] [--hosts 40] [--hours 6] [--seed 7]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

from tracer import resources
from tracer.errors import TracebaseError

# The directory holding this `baseline` package (the checkout, or site-packages when installed):
# the simulator's subprocess runs there so that `-m baseline.cli` imports this same package.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

# The bundled "job": reads config.ini, then the data file it names. Python's own import-path
# probing (routine ENOENTs) happens in good and bad runs alike.
DEMO_JOB = textwrap.dedent(
    """
    import configparser, json, sys
    cfg = configparser.ConfigParser()
    cfg.read("config.ini")
    with open(cfg["job"]["data"]) as fh:
        rows = [json.loads(line) for line in fh]
    print(f"loaded {len(rows)} rows")
    """
)


def _say(msg: str) -> None:
    print(f"demo: {msg}", flush=True)


def _bpf_unavailable() -> str | None:
    from tracer.privilege import check_recording_environment

    try:
        check_recording_environment()
    except TracebaseError as exc:
        return str(exc)
    return None


def record_and_diff(out: Path) -> dict | None:
    """Part 1: two good runs and one bad run of the bundled job, recorded for real, then diffed."""
    reason = _bpf_unavailable()
    if reason:
        _say(f"skipping record+diff: {reason}")
        return None
    from baseline.run.diff import diff_traces
    from tracer.record.recorder import SyscallRecorder

    work = out / "record"
    shutil.rmtree(work, ignore_errors=True)
    (work / "job" / "data").mkdir(parents=True)
    job = work / "job"
    (job / "job.py").write_text(DEMO_JOB)
    (job / "config.ini").write_text("[job]\ndata = data/rows.jsonl\n")
    (job / "data" / "rows.jsonl").write_text("".join(json.dumps({"i": i}) + "\n" for i in range(50)))
    argv = [sys.executable, "-S", "job.py"]
    _say("recording 2 good runs and 1 bad run of the bundled job with tracer record")
    with SyscallRecorder() as recorder:
        for i in (1, 2):
            recorder.record(argv, cwd=str(job), label="good").write(work / f"good{i}.parquet")
        (job / "data" / "rows.jsonl").rename(job / "data" / "rows.jsonl.moved")
        # the bad run's own traceback reaches the terminal: said first, so it is not taken for
        # the demo failing
        _say("the bad run (its data file moved away) fails on purpose: the job's traceback below is the fault")
        bad = recorder.record(argv, cwd=str(job), label="bad")
        bad.write(work / "bad.parquet")
    report = diff_traces([work / "good1.parquet", work / "good2.parquet"], work / "bad.parquet")
    print(report.render_text())
    (work / "diff.json").write_text(json.dumps(report.to_dict(), indent=2, default=str))
    _say(f"diff written to {work / 'diff.json'} (bad run exit status {bad.exit_status})")
    from baseline.export import export_diff, write_json

    trace = write_json(export_diff([work / "good1.parquet", work / "good2.parquet"], work / "bad.parquet"),
                       work / "diff.trace.json")
    _say(f"good and bad run side by side, bifurcation marked: {trace} (open in ui.perfetto.dev or chrome://tracing)")
    return report.to_dict()


def fleet_pipeline(out: Path, hosts: int, hours: float, seed: int) -> dict:
    """Part 2: simulate -> learn -> expected errors -> audit -> publish -> evaluate -> coverage."""
    from baseline.fleet.evaluate import evaluate, format_report
    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.config import config_from_dict

    fleet = out / "fleet"
    shutil.rmtree(fleet, ignore_errors=True)
    end = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    start = end - dt.timedelta(hours=hours)
    _say(f"simulating {hosts} hosts x {hours:g} h (seed {seed}) into {fleet / 'dataset'}")
    t0 = time.perf_counter()
    # The simulator runs in its own process: its worker pool must not fork a process that
    # already holds polars' thread pool.
    subprocess.run(
        [sys.executable, "-m", "baseline.cli", "simulate", "--hosts", str(hosts), "--hours", str(hours),
         "--seed", str(seed), "--start", start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--out", str(fleet / "dataset")],
        check=True, cwd=PACKAGE_ROOT,
    )
    cfg = config_from_dict(
        {
            "version": 1,
            "paths": {name: str(fleet / name) for name in ("spool", "dataset", "quarantine", "findings", "reports")}
            | {"model": str(fleet / "model" / "baseline.parquet"),
               "expected_errors": str(fleet / "expected_errors.yaml")},
            "probe_set": str(resources.PROBES_DIR / "rdma.yaml"),
            # the simulator's job logs: NCCL WARN lines of the failures the applications saw
            "nccl_logs": [str(fleet / "dataset" / "joblogs" / "*.log")],
            "thresholds": {"audit_window_hours": hours, "baseline_window_days": max(1.0, hours / 24 + 1)},
        },
        source="<demo config>",
    )
    steps = {}
    for name, call in (
        ("refresh_baseline", lambda: pipeline.refresh_baseline(cfg, now=end)),
        ("refresh_expected", lambda: pipeline.refresh_expected(cfg, now=end)),
        ("audit_new_failures", lambda: pipeline.audit_new_failures(cfg, now=end)),
    ):
        t = time.perf_counter()
        steps[name] = call()
        _say(f"{name}: {time.perf_counter() - t:.1f} s")
    published = pipeline.publish_findings(cfg, steps["audit_new_failures"])
    findings_dir = Path(published["published"])
    from baseline.fleet.audit import read_audit
    from baseline.fleet.report import terminal_report

    result = read_audit(findings_dir)
    print(terminal_report(result))
    html = findings_dir / "report.html"  # published with the findings by the audit step
    scores = evaluate(fleet / "dataset", findings_dir)
    print(format_report(scores))
    coverage = pipeline.weekly_coverage(cfg, week=None)
    _say(f"fleet pipeline done in {time.perf_counter() - t0:.1f} s")
    _say(f"audit report: {html}")
    if coverage.get("app_failures"):
        from baseline.templates import pct

        _say(f"coverage: {pct(coverage['app_seen_fraction'] or 0)} of {coverage['app_failures']:,} application-labelled "
             "failures (NCCL job logs) were seen by a live probe")
    _say(f"coverage report: {coverage['files'].get('html')}")
    summary = {"steps": steps, "published": published, "scores": scores, "coverage": coverage}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baseline.demo", description=__doc__.split("\n\n")[0])
    # relative to the current directory (the checkout's top for `make demo`): an installed
    # package's parent is site-packages, no place for outputs (and read-only for a system install)
    parser.add_argument("--out", default=str(Path("out") / "demo"),
                        help="output directory (default: out/demo under the current directory)")
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-record", action="store_true", help="only the fleet pipeline")
    args = parser.parse_args(argv)
    out = Path(args.out).absolute()  # the simulator's subprocess runs in another directory
    try:
        out.mkdir(parents=True, exist_ok=True)
        lock = _only_demo_in(out)
    except TracebaseError as exc:
        print(f"demo: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"demo: error: {out}: cannot write the demo's outputs ({exc.strerror})", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        if not args.skip_record:
            record_and_diff(out)
        fleet_pipeline(out, args.hosts, args.hours, args.seed)
    except TracebaseError as exc:
        print(f"demo: error: {exc}", file=sys.stderr)
        return 2
    finally:
        os.close(lock)
    _say(f"all outputs under {out}")
    return 0


def _only_demo_in(out: Path) -> int:
    """An exclusive lock on `out` (its `.demo.lock`), held until the demo ends: two demos in one
    directory rebuilt and renamed each other's job files (one's good runs failed, then its
    rename of a file the other had moved was a traceback). The kernel drops it with the process."""
    import fcntl

    fd = os.open(out / ".demo.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise TracebaseError(f"{out}: another demo is running there (pid {holder}); wait for it, "
                             "or give this one another --out") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


if __name__ == "__main__":
    sys.exit(main())
