"""The baseline CLI configures polars' allocator (jemalloc) before polars is first imported.

Real processes: the command runs as a subprocess with jemalloc's `confirm_conf` option, with which
jemalloc itself prints, when it initialises, every setting it reads and from where. A setting made
after polars' import would not appear there (jemalloc reads its configuration once)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from baseline.cli import ALLOCATOR_CONF, configure_allocator

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("allocfleet")
    simulate(root, hosts=4, hours=1, seed=5)
    return root


def _settings(argv: list[str], conf: str) -> tuple[subprocess.CompletedProcess, list[tuple[str, str]]]:
    env = {**os.environ, "_RJEM_MALLOC_CONF": conf}
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r, re.findall(r"<jemalloc>: -- Set conf value: (\w+):(\S+)", r.stderr)


def _last(settings: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in settings if k == name]
    return values[-1] if values else None


@pytest.mark.parametrize("how", ["module", "console-script"])
def test_audit_runs_with_the_allocator_setting(fleet, tmp_path, how):
    args = ["audit", str(fleet), "--refit", "-o", str(tmp_path / "audit")]
    argv = ([sys.executable, "-m", "baseline.cli", *args] if how == "module"
            else [sys.executable, "-c", "from baseline.cli import entry; entry()", *args])
    r, settings = _settings(argv, "confirm_conf:true")
    assert settings, f"jemalloc printed no settings (is polars still built with jemalloc?): {r.stderr[-1000:]}"
    # polars' own defaults first, then ours: the value jemalloc keeps is ours
    assert _last(settings, "muzzy_decay_ms") == "0", settings
    assert ("muzzy_decay_ms", "1000") in settings, "polars no longer sets its own decay: revisit ALLOCATOR_CONF"
    # dirty pages purged after 100 ms, not polars' 500: the peak RSS is the live set plus what
    # was freed within the decay time (bench_audit --audit; docs/benchmarks.md, round twenty-one)
    assert _last(settings, "dirty_decay_ms") == "100", settings
    assert (tmp_path / "audit" / "findings.parquet").exists()


@pytest.mark.parametrize(("command", "out"), [(["learn"], "model.parquet"), (["expected", "learn"], "expected.yaml")])
def test_streaming_learners_keep_polars_own_setting(fleet, tmp_path, command, out):
    """`baseline learn` and `baseline expected learn` stream a dataset a batch at a time: with
    freed pages purged after 100 ms every batch's buffers were faulted in again (learn over
    101.5M events: 14-19 s in the kernel against 5.6-9 s; docs/benchmarks.md, round thirty-seven)."""
    argv = [sys.executable, "-c", "from baseline.cli import entry; entry()", *command, str(fleet),
            "-o", str(tmp_path / out)]
    r, settings = _settings(argv, "confirm_conf:true")
    assert settings, f"jemalloc printed no settings: {r.stderr[-1000:]}"
    assert _last(settings, "muzzy_decay_ms") == "1000" and _last(settings, "dirty_decay_ms") == "500", settings
    assert (tmp_path / out).exists()


def test_a_users_setting_wins(fleet, tmp_path):
    argv = [sys.executable, "-m", "baseline.cli", "audit", str(fleet), "--refit", "-o", str(tmp_path / "audit")]
    _, settings = _settings(argv, "muzzy_decay_ms:250,confirm_conf:true")
    assert _last(settings, "muzzy_decay_ms") == "250", settings


# What an Airflow task process does before the task body runs: parse its DAG file (here with
# DagBag, as the task runner does), then the body imports baseline.pipeline and with it polars.
# Printed: whether polars or numpy was imported by the parse, OpenBLAS's thread count once numpy
# is loaded (threadpoolctl asks the library itself), then jemalloc's settings on stderr.
DAG_TASK_ORDER = """
import sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
assert not bag.import_errors, bag.import_errors
print("polars or numpy imported by the parse:", "polars" in sys.modules or "numpy" in sys.modules)
from baseline.pipeline import tasks  # the task bodies' own import
import polars as pl
print(pl.Series(range(100_000)).sum())
import numpy, threadpoolctl
print("openblas threads:", [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["internal_api"] == "openblas"])
"""


@pytest.mark.parametrize("dag_file", ["baseline_audit.py", "trace_ingest.py", "probe_coverage_weekly.py"])
def test_a_dag_task_process_runs_with_the_console_scripts_settings(dag_file, monkeypatch):
    """Airflow runs a task in a process that parses the DAG file, then runs the task body, which
    imports polars: the settings the console scripts make must be made by then (jemalloc kept
    polars' dirty_decay_ms 500 and muzzy_decay_ms 1000 in the audit task until round twenty-one;
    OpenBLAS started a spinning thread per further CPU until round thirty-eight)."""
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    argv = [sys.executable, "-c", DAG_TASK_ORDER, os.path.join(REPO, "dags", dag_file)]
    r, settings = _settings(argv, "confirm_conf:true")
    assert "polars or numpy imported by the parse: False" in r.stdout, r.stdout  # else no setting could reach them
    assert _last(settings, "muzzy_decay_ms") == "0", settings
    assert _last(settings, "dirty_decay_ms") == "100", settings
    assert "openblas threads: [1]" in r.stdout, r.stdout


def test_configure_allocator_is_idempotent():
    env = {"_RJEM_MALLOC_CONF": "narenas:2"}
    configure_allocator(env)
    configure_allocator(env)  # a DAG file parsed twice in one process
    assert env["_RJEM_MALLOC_CONF"] == f"{ALLOCATOR_CONF},narenas:2"


def test_configure_allocator_keeps_the_users_options_last():
    env: dict[str, str] = {}
    configure_allocator(env)
    assert env == {"_RJEM_MALLOC_CONF": ALLOCATOR_CONF}
    env = {"_RJEM_MALLOC_CONF": "narenas:2"}
    configure_allocator(env)
    assert env["_RJEM_MALLOC_CONF"] == f"{ALLOCATOR_CONF},narenas:2"


def test_bench_stages_names_each_stage_of_the_audit(fleet, tmp_path):
    """bench_audit --stages: where an audit's memory peaks, per stage, in a fresh process."""
    r = subprocess.run([sys.executable, "-m", "bench.bench_audit", "--stages", str(fleet), "--dir", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # stage, RSS, anonymous, LazyFree (MiB); wall, user, system (s); page faults
    rows = {m.group(1): ([int(v) for v in m.groups()[1:4]], [float(v) for v in m.groups()[4:7]])
            for m in re.finditer(r"^  (\S+(?: \S+)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d,]+"
                                 r"\s+[\d.]+\s+[\d.]+$", r.stdout, re.M)}  # then the main thread's CPU and waits
    for stage in ("collect_traces", "expected_from_traces", "host_alerts", "write_audit"):
        assert stage in rows, r.stdout
    # the counters are bucketed on a thread of their own, beside the events pass
    assert re.search(r"^  beside the main thread: counter_buckets\s+[\d.]+ s wall", r.stdout, re.M), r.stdout
    main = re.search(r"^  main thread: ([\d.]+) CPU s \+ ([\d.]+) s waiting", r.stdout, re.M)
    assert main and float(main.group(1)) > 0, r.stdout
    peak = float(re.search(r"peak RSS (\d+) MiB", r.stdout).group(1))
    wall = float(re.search(r"in-process: ([\d.]+) s", r.stdout).group(1))
    for name, ((rss, anon, lazy), _times) in rows.items():
        if rss or name in ("collect_traces", "expected_from_traces", "host_alerts", "write_audit"):
            assert 0 < anon < rss <= peak + 1 and 0 <= lazy <= rss, name
        # (else a stretch between two stages too short for a memory sample: its times only)
    # the stages' wall times add up to the run's: together they cover it, and all but "start"
    # (the import before run_audit, then run_audit's steps before its first stage) fit inside
    # it. The import itself has no bound: 9.7 s at load 41, over the 5 s this once allowed it.
    total = sum(times[0] for _, times in rows.values())
    assert 0.5 * wall < total and total - rows["start"][1][0] < wall + 2, r.stdout
    assert sum(times[1] for _, times in rows.values()) > 0, r.stdout


def test_bench_timeline_charges_every_threads_cpu_to_a_stage(fleet, tmp_path):
    """bench_audit --timeline: each thread's CPU (schedstat, sampled) charged to the main thread's
    stage, the serial part of it (one runnable thread) no more than the stage's CPU, and the
    stages' CPU together the audit process's (less the sampler's own thread). No wall-time
    bounds: the figures are the ones the machine's load does not change."""
    r = subprocess.run([sys.executable, "-m", "bench.bench_audit", "--timeline", str(fleet), "--dir", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # stage, wall, CPU, serial CPU, serial wall, two-core estimate, main thread's CPU, RSS, CPU by thread
    rows = {m.group(1): [float(v) for v in m.groups()[1:8]]
            for m in re.finditer(r"^  (\S+(?: \S+)?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                                 r"\s+(\d+)  \S", r.stdout, re.M)}
    for stage in ("collect_traces", "expected_from_traces", "host_alerts", "write_audit"):
        assert stage in rows, r.stdout
    for name, (wall, cpu, serial, serial_wall, two_core, main, rss) in rows.items():
        assert 0 <= serial <= cpu + 0.01 and serial_wall <= wall + 0.01, name
        assert main <= cpu + 0.01 and two_core <= cpu + 0.01, name
        assert rss > 0 or wall < 0.2, name
    run = re.search(r"^round 1 this: [\d.]+ s wall, ([\d.]+) CPU s, ([\d.]+) serial CPU s", r.stdout, re.M)
    assert run, r.stdout
    cpu, serial = float(run.group(1)), float(run.group(2))
    assert 0.7 * cpu <= sum(v[1] for v in rows.values()) <= cpu + 0.1, r.stdout
    assert serial == pytest.approx(sum(v[2] for v in rows.values()), abs=0.02)
    # threads named, main apart (in some stage: a small fleet's collect_traces can leave the main
    # thread's sampled CPU out of its row's top threads under load, CI 140)
    assert re.search(r"^  collect_traces .* (polars|python|async-executor|tokio-rt-worker|main) [\d.]+", r.stdout, re.M)
    assert re.search(r"^  \S+(?: \S+)?\s.*(?:  |, )main [\d.]+", r.stdout, re.M), r.stdout
    assert "outputs the same in every run" in r.stdout
