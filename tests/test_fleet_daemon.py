"""`tracer run` as users run it: a real daemon process on the fakeverbs library (uprobes) and on
the syscall set, writing a real spool; plus its error paths."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from fleet_support import (
    LAYER_PEER,
    LAYER_UMEM,
    Daemon,
    build_fakeverbs,
    run_driver,
    write_fake_set,
)

from tracer.fleet.daemon import Enricher
from tracer.fleet.spool import list_snapshots, read_snapshot, read_spool
from tracer.schema import validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]


@pytest.fixture(scope="module")
def fake(tmp_path_factory, need_bpf, need_cc):  # noqa: ARG001
    out = tmp_path_factory.mktemp("fakeverbs-daemon")
    lib, driver = build_fakeverbs(out, need_cc)
    return write_fake_set(out / "fakeverbs.yaml", lib), driver, lib


def test_sigterm_flushes_a_final_snapshot_with_every_failure(fake, tmp_path):
    set_file, driver, _ = fake
    meta = tmp_path / "job.yaml"
    meta.write_text("job_id: '4242'\ncluster: c1\n")
    spool = tmp_path / "spool"
    d = Daemon([str(set_file), "-x", "-i", "60s", "--metadata-file", str(meta), "--prom", str(tmp_path / "t.prom")], spool)
    env = dict(os.environ, SLURM_JOB_ID="9001")
    # the process lingers: enrichment reads /proc/<pid> when the record is read (<= 100 ms later)
    assert run_driver(driver, "reg_mr", 30, LAYER_PEER, errno.EFAULT, env=env, end_wait_ms=400) == 30
    run_driver(driver, "reg_mr", 10)
    time.sleep(0.3)
    assert d.stop() == 0
    snaps = list_snapshots(spool)
    assert len(snaps) == 1  # the interval never elapsed: only SIGTERM's final snapshot
    events, counters = read_snapshot(snaps[0])
    traces = events.group_by("trace_id").len()
    assert traces.height == 30 and set(traces["len"]) == {4}
    assert set(events["kind"]) == {"failure"} and set(events["errno"]) == {"EFAULT"}
    assert set(events["job_id"]) == {"9001"}  # the traced process's SLURM_JOB_ID wins
    meta_keys = {m["key"] for row in events["metadata"] for m in row}
    assert {"cgroup", "cluster", "job_id"} <= meta_keys
    top = counters.filter(counters["probe"] == "fv_uverbs_reg_mr").row(0, named=True)
    assert (top["invocations"], top["failures"], top["lost_records"]) == (40, 30, 0)
    assert top["errno_counts"] == [{"errno": "EFAULT", "count": 30}] and top["live"] is True
    prom = (tmp_path / "t.prom").read_text()
    assert 'tracebase_probe_failures_total{host="h1",set="fakeverbs",probe="fv_uverbs_reg_mr",layer="uverbs"} 30' in prom
    assert 'errno="EFAULT"} 30' in prom


def test_snapshot_cadence_and_atomicity_under_a_concurrent_reader(fake, tmp_path):
    set_file, driver, _ = fake
    spool = tmp_path / "spool"
    seen: dict[str, int] = {}
    problems: list[str] = []
    stop = threading.Event()

    def reader() -> None:  # lists and reads every snapshot as fast as it can
        while not stop.is_set():
            try:
                snaps = list_snapshots(spool) if spool.exists() else []
            except Exception as exc:  # noqa: BLE001
                problems.append(f"list: {exc}")
                continue
            for snap in snaps:
                if snap.name in seen:
                    continue
                try:
                    for table in ("events", "counters"):
                        validate_file(snap / f"{table}.parquet", table)
                    seen[snap.name] = read_snapshot(snap)[1].height
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{snap.name}: {exc}")

    thread = threading.Thread(target=reader)
    thread.start()
    d = Daemon([str(set_file), "-x", "-i", "0.5s", "-d", "3s", "--ringbuf-kb", "64"], spool)
    for _ in range(5):
        run_driver(driver, "reg_mr", 200, LAYER_UMEM, errno.ENOMEM)
        time.sleep(0.2)
    assert d.proc.wait(timeout=30) == 0
    stop.set()
    thread.join()
    assert problems == []
    snaps = list_snapshots(spool)
    assert 5 <= len(snaps) <= 8  # 3 s at 0.5 s, plus the final one
    assert all(seen.get(s.name, 6) == 6 for s in snaps)  # every snapshot has one counter row per probe
    counters = read_spool(spool, "counters")
    times = counters.group_by("snapshot_time").agg().sort("snapshot_time")["snapshot_time"]
    gaps = [(b - a).total_seconds() for a, b in zip(times[:-2], times[1:-1], strict=True)]
    # every 0.5 s; the loop never bursts to catch up after a slow write (the first includes warm-up)
    assert gaps and 0.45 < sorted(gaps)[len(gaps) // 2] < 0.6 and max(gaps) < 1.2, gaps
    top = counters.filter(counters["probe"] == "fv_uverbs_reg_mr")
    assert top["failures"].sum() == 1000 and top["invocations"].sum() == 1000
    events = read_spool(spool, "events")
    lost = counters.group_by("snapshot_time").agg(pl.col("lost_records").first())["lost_records"].sum()
    assert events["trace_id"].n_unique() + lost == 1000
    assert not any(p.name.startswith(".") for p in (spool / "h1").iterdir())


def test_capture_windows_on_schedule_on_signal_and_control_file(fake, tmp_path):
    set_file, driver, _ = fake
    control = tmp_path / "capture-now"
    d = Daemon([str(set_file), "-i", "0.5s", "--good-window", "1s", "--good-every", "1h", "--sample", "1",
                "--control-file", str(control)], tmp_path / "spool")
    run_driver(driver, "reg_mr", 3)  # first window opens at start: a fresh baseline
    d.wait_for("capture window closed")
    run_driver(driver, "reg_mr", 7)  # outside any window: counted, never recorded
    d.proc.send_signal(signal.SIGUSR1)
    d.wait_for("capture window open", count=2)
    run_driver(driver, "alloc_pd", 4)
    d.wait_for("capture window closed", count=2)
    control.touch()
    d.wait_for("capture window open", count=3)
    run_driver(driver, "reg_mr", 2, delay_us=80_000)  # over the 50 ms bound: not a good trace
    run_driver(driver, "reg_mr", 1, LAYER_PEER, errno.EIO)
    assert d.stop() == 0
    assert not control.exists()
    events = read_spool(tmp_path / "spool", "events")
    per_kind = events.filter(events["seq"] == 0).group_by("kind", "command").len().sort("kind", "command").rows()
    assert per_kind == [("failure", "reg_mr", 1), ("good", "alloc_pd", 4), ("good", "reg_mr", 3)]
    counters = read_spool(tmp_path / "spool", "counters")
    assert counters.filter(counters["probe"] == "fv_uverbs_reg_mr")["invocations"].sum() == 13


def test_best_effort_runs_without_the_probes_that_cannot_attach(fake, tmp_path):
    _, driver, lib = fake
    set_file = write_fake_set(tmp_path / "partial.yaml", lib, extra_symbols=("fv_missing_symbol",))
    strict = subprocess.run([*TRACER, "run", str(set_file), "-d", "1s", "--spool", str(tmp_path / "s1")],
                            cwd=REPO, capture_output=True, text=True)
    assert strict.returncode == 2
    assert strict.stderr.strip().splitlines()[-1].startswith(
        f"tracer: error: probe fv_missing_symbol of set fakeverbs: cannot attach: no function symbol fv_missing_symbol in {lib}")
    assert "Traceback" not in strict.stderr

    d = Daemon([str(set_file), "--best-effort", "-x", "-i", "30s"], tmp_path / "s2")
    assert any("fv_missing_symbol of set fakeverbs not attached" in line for line in d.log)
    assert any("6/7 probes live" in line for line in d.log)
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EFAULT)
    time.sleep(0.2)
    assert d.stop(signal.SIGINT) == 0
    counters = read_spool(tmp_path / "s2", "counters")
    live = dict(counters.select("probe", "live").iter_rows())
    assert live["fv_missing_symbol"] is False and live["fv_uverbs_reg_mr"] is True
    assert read_spool(tmp_path / "s2", "events")["trace_id"].n_unique() == 2


def test_syscalls_set_runs_against_a_real_program(fake, tmp_path):
    _, driver, _ = fake
    # the shell waits for a line, then execs the driver under the same pid the daemon follows
    proc = subprocess.Popen(["sh", "-c", 'read _; exec "$0" syscalls 5', str(driver)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    d = Daemon(["syscalls", "-p", str(proc.pid), "-x", "-i", "1s"], tmp_path / "spool")
    proc.communicate("go\n", timeout=30)
    assert proc.returncode == 0
    time.sleep(0.3)
    assert d.stop() == 0
    events = read_spool(tmp_path / "spool", "events")
    assert set(events["pid"]) == {proc.pid}
    readlink = events.filter(events["probe"] == "readlink")
    assert readlink.height == 5 and set(readlink["errno"]) == {"ENOENT"} and set(readlink["layer"]) == {"syscall"}
    assert events.filter((events["probe"] == "close") & (events["errno"] == "EBADF")).height == 5
    counters = read_spool(tmp_path / "spool", "counters")
    assert counters.filter(counters["probe"] == "readlink")["failures"].sum() == 5


# --------------------------------------------------------------------------------------------
# error paths (no BPF needed: they fail before anything is compiled)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["syscalls", "-i", "soon"], "tracer: error: -i/--interval: expected a duration like 100us, 5ms, 10s, 2m, 1h, 1d or plain seconds, greater than 0, found 'soon'"),
        (["nosuchset"], "tracer: error: probe set 'nosuchset': expected one of rdma, rdma-queries, syscalls, verbs-user or a .yaml path"),
        (["syscalls", "-p", "999999999"], "tracer: error: -p/--pid: expected a running process, found no process 999999999"),
        (["syscalls", "--sample", "0"], "tracer: error: --sample: expected a positive integer, found '0'"),
        (["syscalls", "--ringbuf-kb", "0"], "tracer: error: --ringbuf-kb: expected a positive integer, found '0'"),
    ],
)
def test_run_bad_input_is_one_line_exit_2(tmp_path, args, message):
    out = subprocess.run([*TRACER, "run", *args, "--spool", str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith(message) and len(out.stderr.strip().splitlines()) == 1


def test_run_bad_metadata_file(tmp_path):
    bad = tmp_path / "meta.yaml"
    bad.write_text("- a list\n")
    out = subprocess.run([*TRACER, "run", "syscalls", "--metadata-file", str(bad), "--spool", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == f"tracer: error: {bad}: expected a mapping of key: value, found list"


def test_enricher_reads_job_from_process_environment_and_cgroup(tmp_path):
    meta = tmp_path / "m.json"
    meta.write_text('{"job_id": "file-job", "partition": "gpu"}')
    enricher = Enricher(meta, environ={"SLURM_JOB_ID": "env-job", "SLURM_JOB_NAME": "train"})
    proc = subprocess.Popen(["sleep", "5"], env={"SLURM_JOB_ID": "proc-job", "PATH": os.environ["PATH"]})
    try:
        job, data = enricher.for_pid(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert job == "proc-job"
    assert data["partition"] == "gpu" and data["SLURM_JOB_NAME"] == "train" and "cgroup" in data
    job, _ = enricher.for_pid(999999999)  # a process already gone: the file's job id
    assert job == "file-job"
