"""`tracer run` as users run it: a real daemon process on the fakeverbs library (uprobes) and on
the syscall set, writing a real spool; plus its error paths."""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import tools_run_as_nobody
from fleet_support import (
    LAYER_PEER,
    LAYER_UMEM,
    STARTUP_TIMEOUT_S,
    Daemon,
    build_fakeverbs,
    run_driver,
    write_fake_set,
)
from prometheus_client.parser import text_string_to_metric_families

from tracer.fleet.daemon import Enricher
from tracer.fleet.probes import load_probe_set
from tracer.fleet.program import DEFAULT_EXAMPLES, open_files_needed
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
    # Enrichment reads /proc/<pid> when a record is read, so the traced process must still be
    # there then: it waits after its calls until the daemon has stopped, whose final drain reads
    # every record. (It lingered 400 ms before, a margin a drain thread at load 30 can overrun.)
    lingering = subprocess.Popen([str(driver), "reg_mr", "30", str(LAYER_PEER), str(errno.EFAULT), "0", "0",
                                  "600000", "0"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert int(lingering.stdout.readline()) == 30  # its calls are made: it now sleeps
        run_driver(driver, "reg_mr", 10)
        assert d.stop() == 0
    finally:
        lingering.kill()
        lingering.communicate()
    snaps = list_snapshots(spool)
    assert len(snaps) == 1  # the interval never elapsed: only SIGTERM's final snapshot
    events, counters = read_snapshot(snaps[0])
    traces = events.group_by("trace_id").agg(pl.len(), pl.col("repeat_count").first())
    # one signature: its first examples in full, the rest counted in the kernel
    assert traces.height == DEFAULT_EXAMPLES and set(traces["len"]) == {4} and traces["repeat_count"].sum() == 30
    assert set(events["kind"]) == {"failure"} and set(events["errno"]) == {"EFAULT"}
    assert set(events["job_id"]) == {"9001"}  # the traced process's SLURM_JOB_ID wins
    meta_keys = {m["key"] for row in events["metadata"] for m in row}
    assert {"cgroup", "cluster", "job_id"} <= meta_keys
    top = counters.filter(counters["probe"] == "fv_uverbs_reg_mr").row(0, named=True)
    assert (top["invocations"], top["failures"], top["lost_records"]) == (40, 30, 0)
    assert top["errno_counts"] == [{"errno": "EFAULT", "count": 30}] and top["live"] is True
    families = {f.name: f for f in text_string_to_metric_families((tmp_path / "t.prom").read_text())}
    assert [n for n, f in families.items() if f.type == "unknown"] == []  # grouped, typed families
    assert families["tracebase_probe_failures"].type == "counter"
    failures = {s.labels["probe"]: s.value for s in families["tracebase_probe_failures"].samples
                if s.name == "tracebase_probe_failures_total"}
    assert failures["fv_uverbs_reg_mr"] == 30 and len(failures) == 6
    (efault,) = [s for s in families["tracebase_probe_errno"].samples
                 if s.labels["probe"] == "fv_uverbs_reg_mr" and s.name.endswith("_total")]
    assert efault.labels == {"host": "h1", "set": "fakeverbs", "probe": "fv_uverbs_reg_mr", "layer": "uverbs",
                             "errno": "EFAULT"} and efault.value == 30
    (last,) = families["tracebase_last_snapshot_timestamp_seconds"].samples
    assert families["tracebase_last_snapshot_timestamp_seconds"].type == "gauge"
    assert abs(last.value - snaps[0].stat().st_mtime) < 5


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
    # 3 s at 0.5 s plus the final one; fewer on a loaded machine, never more: the loop never
    # bursts to catch up after a slow write (no timing asserts beyond that: bench/ measures)
    assert 2 <= len(snaps) <= 8
    assert all(seen.get(s.name, 6) == 6 for s in snaps)  # every snapshot has one counter row per probe
    counters = read_spool(spool, "counters")
    times = counters.group_by("snapshot_time").agg().sort("snapshot_time")["snapshot_time"]
    assert times.len() == len(snaps)
    top = counters.filter(counters["probe"] == "fv_uverbs_reg_mr")
    assert top["failures"].sum() == 1000 and top["invocations"].sum() == 1000
    events = read_spool(spool, "events")
    lost = counters.group_by("snapshot_time").agg(pl.col("lost_records").first())["lost_records"].sum()
    examples = events.filter(pl.col("seq") == 0)
    assert examples["repeat_count"].sum() + lost == 1000 and lost == 0
    assert [p.name for p in (spool / "h1").iterdir() if p.name.startswith(".")] == [".tracer.lock"]


def test_capture_windows_on_schedule_on_signal_and_control_file(fake, tmp_path):
    set_file, driver, _ = fake
    control = tmp_path / "capture-now"
    # 3 s windows: each driver run (a process start, slow on a loaded machine) must fall inside one
    d = Daemon([str(set_file), "-i", "0.5s", "--good-window", "3s", "--good-every", "1h", "--sample", "1",
                "--control-file", str(control)], tmp_path / "spool")
    run_driver(driver, "reg_mr", 3)  # the start's window (a fresh baseline) is open before the probes attach
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


def test_sigusr2_writes_a_snapshot_now_and_the_daemon_goes_on(fake, tmp_path):
    """SIGUSR2 (default action: terminate) is "write what you have now": a snapshot of the
    interval so far, the daemon still running, the next interval counted from it."""
    set_file, driver, _ = fake
    spool = tmp_path / "spool"
    d = Daemon([str(set_file), "-x", "-i", "1h"], spool)
    run_driver(driver, "reg_mr", 5, LAYER_PEER, errno.EFAULT)
    d.proc.send_signal(signal.SIGUSR2)
    d.wait_for("SIGUSR2: snapshot")
    assert d.proc.poll() is None
    first = list_snapshots(spool)
    assert len(first) == 1 and any(str(first[0]) in line for line in d.log)
    run_driver(driver, "reg_mr", 3, LAYER_PEER, errno.EFAULT)
    assert d.stop() == 0
    snaps = list_snapshots(spool)
    assert snaps[0] == first[0] and len(snaps) == 2
    failures = [read_snapshot(s)[1].filter(pl.col("probe") == "fv_uverbs_reg_mr")["failures"].sum() for s in snaps]
    assert failures == [5, 3]


def test_a_window_is_open_in_the_kernel_when_its_line_is_written_and_closed_when_closed(fake, tmp_path):
    """What a window's log lines promise, at the three moments that were races: a call that
    starts once "probes live" is written is in the start's window (the window was opened in the
    main loop, after that line), one that starts once "capture window open" is written is in
    the window (the line came before the kernel's flag), and one that starts once "capture
    window closed" is written is not (the same). The daemon is held just before each line (its
    stderr pipe full), the driver runs, then the line is let through: no timing involved."""
    set_file, driver, _ = fake
    d = Daemon([str(set_file), "-i", "30s", "--good-window", "5s", "--good-every", "1h", "--sample", "1"],
               tmp_path / "spool", wait="compiling")
    d.hold()
    d.wait_blocked(timeout=STARTUP_TIMEOUT_S)  # compiled and attached: writing "probes live"
    run_driver(driver, "reg_mr", 3)
    assert "probes live" in d.release()
    d.wait_for("capture window open")
    d.hold()
    d.wait_blocked()  # the 5 s window ended: writing "capture window closed"
    run_driver(driver, "reg_mr", 5)
    assert "capture window closed" in d.release()
    d.hold()
    d.proc.send_signal(signal.SIGUSR1)
    d.wait_blocked()  # writing "capture window open"
    run_driver(driver, "alloc_pd", 4)
    assert "capture window open" in d.release()
    assert d.stop() == 0
    events = read_spool(tmp_path / "spool", "events")
    per_kind = events.filter(events["seq"] == 0).group_by("kind", "command").len().sort("kind", "command").rows()
    assert per_kind == [("good", "alloc_pd", 4), ("good", "reg_mr", 3)]
    counters = read_spool(tmp_path / "spool", "counters")
    assert counters.filter(counters["probe"] == "fv_uverbs_reg_mr")["invocations"].sum() == 8


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


@pytest.mark.parametrize("which", ["syscalls", "fakeverbs"])
def test_open_files_limit_checked_before_the_spool_and_enough_at_the_floor(fake, tmp_path, which):
    """Below the descriptors its probe sets hold, `tracer run` is one line naming the limit, exit
    2, and creates no spool (bcc said "could not compile", or the attach "--best-effort runs with
    the probes that attach", or the first snapshot's write failed after "probes live"); at that
    floor it runs and writes its snapshot, for raw syscall tracepoints and for uprobes alike."""
    set_arg = "syscalls" if which == "syscalls" else str(fake[0])
    need = open_files_needed([load_probe_set(set_arg)])

    def run(limit: int, spool: Path) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", f'ulimit -n {limit}; exec "$@"', "bash", *TRACER, "run", set_arg, "-x",
                               "-d", "1s", "--spool", str(spool)], cwd=REPO, capture_output=True, text=True, timeout=60)

    low = run(need - 1, tmp_path / "low")
    assert low.returncode == 2, low.stderr
    assert low.stderr.strip().splitlines() == [
        f"tracer: error: ulimit -n: expected room for at least {need} open files (the probe sets' BPF maps, programs "
        f"and links, and the snapshots' files), found a limit of {need - 1}"]
    assert not (tmp_path / "low").exists()
    enough = run(need, tmp_path / "enough")
    assert enough.returncode == 0, enough.stderr
    assert "Traceback" not in enough.stderr
    assert len(list_snapshots(tmp_path / "enough")) == 1


def test_syscalls_set_runs_against_a_real_program(fake, tmp_path):
    _, driver, _ = fake
    # the shell waits for a line, then execs the driver under the same pid the daemon follows
    proc = subprocess.Popen(["sh", "-c", 'read _; exec "$0" syscalls 5', str(driver)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    d = Daemon(["syscalls", "-p", str(proc.pid), "-x", "-i", "1s"], tmp_path / "spool")
    proc.communicate("go\n", timeout=30)
    assert proc.returncode == 0
    time.sleep(0.3)
    rc = d.stop()
    assert rc == 0, "".join(d.log[-15:])
    events = read_spool(tmp_path / "spool", "events")
    assert set(events["pid"]) == {proc.pid}
    readlink = events.filter(events["probe"] == "readlink")
    assert readlink.height == DEFAULT_EXAMPLES and readlink["repeat_count"].sum() == 5
    assert set(readlink["errno"]) == {"ENOENT"} and set(readlink["layer"]) == {"syscall"}
    assert events.filter((events["probe"] == "close") & (events["errno"] == "EBADF"))["repeat_count"].sum() == 5
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
        (["syscalls", "--examples", "0"], "tracer: error: --examples: expected a positive integer, found '0'"),
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
        # the environment is the new program's only once its exec is done (vfork spawns can
        # return first): wait for /proc to show sleep, as a record read 100 ms later would
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0] != b"sleep":
            assert time.monotonic() < deadline, "sleep never exec'd"
            time.sleep(0.01)
        job, data = enricher.for_pid(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert job == "proc-job"
    assert data["partition"] == "gpu" and data["SLURM_JOB_NAME"] == "train" and "cgroup" in data
    job, _ = enricher.for_pid(999999999)  # a process already gone: the file's job id
    assert job == "file-job"


# --------------------------------------------------------------------------------------------
# every option checked before anything is created
# --------------------------------------------------------------------------------------------
def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--host", ""], ["--host:", "expected a host name", "found ''"]),
        (["--host", "."], ["--host:", "found '.'"]),
        (["--host", ".."], ["--host:", "found '..'"]),
        (["--host", "/"], ["--host:", "found '/'"]),
        (["--host", "../../x"], ["--host:", "found '../../x'"]),
        (["--host", "a/b"], ["--host:", "found 'a/b'"]),
        (["--host", ".hidden"], ["--host:", "not starting with '.'", "found '.hidden'"]),
        (["--spool", "{d}/file"], ["--spool:", "expected a directory", "found a file {d}/file"]),
        (["--spool", "{d}/file/sub"], ["--spool:", "expected a directory", "found a file {d}/file"]),
        (["--spool", "{d}/ro/spool"], ["--spool:", "expected a writable directory", "{d}/ro not writable"]),
        (["--prom", "{d}/nodir/t.prom"], ["--prom:", "expected a file in an existing directory", "found no {d}/nodir"]),
        (["--prom", "{d}/adir.prom"], ["--prom:", "expected a file name", "found a directory {d}/adir.prom"]),
        (["--prom", "{d}/t.txt"], ["--prom:", "ending in .prom", "found '{d}/t.txt'"]),
        (["--prom", "{d}/ro/t.prom"], ["--prom:", "expected a writable directory", "{d}/ro not writable"]),
        (["--metadata-file", "{d}/none.yaml"], ["--metadata-file:", "expected a readable file", "found no {d}/none.yaml"]),
        (["--metadata-file", "{d}"], ["--metadata-file:", "expected a readable file", "found a directory {d}"]),
        (["--metadata-file", "{d}/latin1.yaml"], ["{d}/latin1.yaml: expected UTF-8 YAML/JSON, found an undecodable byte"]),
        (["--metadata-file", "{d}/file"], ["{d}/file: expected a mapping of key: value, found str"]),
        (["--control-file", "{d}/nodir/go"], ["--control-file:", "existing directory", "found no {d}/nodir"]),
        (["--control-file", "{d}"], ["--control-file:", "expected a file name", "found a directory {d}"]),
        (["{d}/adir.yaml"], ["{d}/adir.yaml: expected a probe set YAML file, found a directory"]),
        (["{d}/extra.yaml"], ["{d}/extra.yaml: expected only the keys", "found unknown key 'colour'"]),
        (["{d}/latin1.yaml"], ["{d}/latin1.yaml: expected UTF-8 YAML"]),
        (["--spool", ""], ["--spool: expected a path for the spool directory, found '' (an empty argument)"]),
        (["--prom", ""], ["--prom: expected a path for the Prometheus textfile, found '' (an empty argument)"]),
        (["--metadata-file", ""], ["--metadata-file: expected a path, found ''"]),
        (["--control-file", ""], ["--control-file: expected a path, found ''"]),
        (["syscalls", "-i", "0"], ["-i/--interval: expected a duration", "found '0'"]),
        (["syscalls", "--good-window", "0s"], ["--good-window: expected a duration", "found '0s'"]),
        (["syscalls", "--good-window", "2h"], ["--good-window: expected at most --good-every (3600s", "found 7200s"]),
        (["syscalls", "--good-every", "5s"], ["--good-window: expected at most --good-every (5s", "found 10s"]),
        (["syscalls", "--ringbuf-kb", "99999999"], ["--ringbuf-kb: expected a positive size in KiB of at most"]),
        (["syscalls", "--examples", "99999999999"], ["--examples: expected a positive number of call trees per signature of at most"]),
    ],
)
def test_run_checks_every_option_before_creating_anything(tmp_path, args, words):
    if os.geteuid() != 0:
        pytest.skip("these checks come after the root check")
    d = tmp_path / "d"
    d.mkdir()
    (d / "file").write_text("x")
    (d / "adir.prom").mkdir()
    (d / "adir.yaml").mkdir()
    (d / "extra.yaml").write_text("version: 1\nname: x\nattach: syscalls\ncolour: red\nprobes: [{symbol: openat, layer: syscall}]\n")
    (d / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    ro = d / "ro"
    ro.mkdir()
    before = _tree(tmp_path)
    argv = [a.replace("{d}", str(d)) for a in args]
    if not argv[0].startswith(("syscalls", str(d))):
        argv = ["syscalls", *argv]
    if "--spool" not in argv:
        argv += ["--spool", str(tmp_path / "spool")]
    if "--host" not in argv:
        argv += ["--host", "h1"]
    # a read-only directory even for root: a read-only bind mount in a private mount namespace
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               f'mount --bind "{ro}" "{ro}" && mount -o remount,bind,ro "{ro}" && exec "$@"', "ro"]
    out = subprocess.run([*wrapper, *TRACER, "run", *argv], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    for word in words:
        assert word.replace("{d}", str(d)) in out.stderr, out.stderr
    assert _tree(tmp_path) == before  # nothing created: no spool, no host dir, no textfile


@pytest.mark.parametrize("command", [["run", "syscalls", "-d", "1s"], ["probes", "check", "syscalls", "--attach"]])
def test_not_root_is_said_as_such(tmp_path, command):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the command as an unprivileged user")
    tools_run_as_nobody()
    tmp_path.chmod(0o777)
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-B",
                          "-m", "tracer.cli", *command, *(["--spool", str(tmp_path / "s")] if command[0] == "run" else [])],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    what = "tracer run" if command[0] == "run" else "tracer probes check --attach"
    assert out.stderr.strip() == (f"tracer: error: {what} needs root to load BPF programs (running as uid 65534): "
                                  "run it with sudo")
    assert list(tmp_path.iterdir()) == []


def test_failures_only_is_a_hidden_alias_of_failures():
    from tracer.cli import common

    parser = common.build_parser("tracer", "", ["tracer.cli.run"])
    assert parser.parse_args(["run", "-x"]).failures_only is True
    assert parser.parse_args(["run", "--failures"]).failures_only is True
    assert parser.parse_args(["run", "--failures-only"]).failures_only is True
    assert parser.parse_args(["run"]).failures_only is False
    helptext = subprocess.run([*TRACER, "run", "--help"], cwd=REPO, capture_output=True, text=True).stdout
    assert "-x, --failures " in helptext and "--failures-only" not in helptext


# --------------------------------------------------------------------------------------------
# crash safety, one writer, modes
# --------------------------------------------------------------------------------------------
def _temporaries(*dirs: Path) -> list[Path]:
    return [p for d in dirs if d.is_dir() for p in d.iterdir() if p.name.endswith(".tmp")]


def test_kill_9_mid_snapshot_then_restart_leaves_no_temporaries(fake, tmp_path):
    set_file, driver, _ = fake
    spool, prom_dir = tmp_path / "spool", tmp_path / "textfile"
    prom_dir.mkdir()
    host_dir = spool / "h1"
    args = [str(set_file), "-x", "-i", "0.1s", "--prom", str(prom_dir / "tracebase.prom")]
    caught: list[str] = []
    for _ in range(10):  # each try: a daemon snapshotting every 100 ms (the floor), killed when a temp exists
        d = Daemon(args, spool)
        storm = subprocess.Popen([str(driver), "reg_mr", "200000", str(LAYER_PEER), str(errno.EIO), "0", "0", "0"],
                                 stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not caught:
            if _temporaries(host_dir, prom_dir):
                d.proc.send_signal(signal.SIGSTOP)  # freeze it, then check the temp is still there
                caught = [p.name for p in _temporaries(host_dir, prom_dir)]
                if not caught:
                    d.proc.send_signal(signal.SIGCONT)
        d.proc.kill()
        d.proc.wait(timeout=30)
        storm.kill()
        storm.wait()
        if caught:
            break
    assert caught, "never caught the daemon mid-write"
    left = _temporaries(host_dir, prom_dir)
    assert left  # what a kill -9 leaves behind
    complete_before = list_snapshots(spool)

    d = Daemon([str(set_file), "-x", "-i", "60s", "--prom", str(prom_dir / "tracebase.prom")], spool)
    assert any(f"removed {len(left)} stale temporar" in line for line in d.log), d.log
    assert _temporaries(host_dir, prom_dir) == []
    assert d.stop() == 0
    assert _temporaries(host_dir, prom_dir) == []
    snaps = list_snapshots(spool)
    assert set(complete_before) < set(snaps)  # the restart kept every complete snapshot, added its own
    for snap in snaps:  # and every one of them is whole
        assert sorted(p.name for p in snap.iterdir()) == ["counters.parquet", "events.parquet"]
        for table in ("events", "counters"):
            validate_file(snap / f"{table}.parquet", table)
    assert [p.name for p in host_dir.iterdir() if not p.name.startswith("snap-")] == [".tracer.lock"]


def test_one_writer_per_spool_host(fake, tmp_path):
    set_file, _, _ = fake
    d = Daemon([str(set_file), "-x", "-i", "60s"], tmp_path / "spool")
    second = subprocess.run([*TRACER, "run", str(set_file), "-x", "-d", "1s", "--spool", str(tmp_path / "spool"),
                             "--host", "h1"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    assert second.stderr.strip() == (
        f"tracer: error: {tmp_path / 'spool' / 'h1'}: expected one tracer per spool host directory, found another "
        f"writer (pid {d.proc.pid}) holding .tracer.lock: use another --spool or --host")
    assert d.stop() == 0
    assert len(list_snapshots(tmp_path / "spool")) == 1  # the first one's work is untouched


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o077])
def test_outputs_honour_the_umask_and_no_directory_is_world_writable(fake, tmp_path, umask):
    set_file, driver, _ = fake
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    old = os.umask(umask)  # the daemon inherits it
    try:
        d = Daemon([str(set_file), "-x", "-i", "60s", "--prom", str(textfile / "t.prom")], tmp_path / "a" / "spool")
    finally:
        os.umask(old)
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EIO)
    assert d.stop() == 0
    (snap,) = list_snapshots(tmp_path / "a" / "spool")
    dirs = [tmp_path / "a", tmp_path / "a" / "spool", tmp_path / "a" / "spool" / "h1", snap]
    for path in dirs:
        assert stat.S_IMODE(path.stat().st_mode) == 0o775 & ~umask, path
    # node_exporter (its own user) reads the textfile; an unprivileged ingest reads the spool
    for path in (snap / "events.parquet", snap / "counters.parquet", textfile / "t.prom"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


def test_a_full_textfile_directory_never_stops_the_tracer(fake, tmp_path):
    """ENOSPC on the textfile (node_exporter's directory on a tiny tmpfs): logged once, the
    snapshots go on, the tracer exits 0 at the end."""
    set_file, driver, _ = fake
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    fill = f'mount -t tmpfs -o size=8k tmpfs "{textfile}" && head -c 8192 /dev/zero > "{textfile}/filler" 2>/dev/null; exec "$@"'
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c", fill, "full"]
    d = Daemon([str(set_file), "-x", "-i", "0.3s", "--prom", str(textfile / "t.prom")], tmp_path / "spool",
               wrapper=wrapper)
    run_driver(driver, "reg_mr", 3, LAYER_PEER, errno.EIO)
    d.wait_for("not written (No space left on device)")
    # a few more intervals, each failing to write the textfile after its snapshot (counted, not
    # slept: at load 30 one second may not hold even one interval)
    _wait_snapshots(d, len(list_snapshots(tmp_path / "spool")) + 3)
    assert d.proc.poll() is None  # still running
    assert d.stop() == 0, "".join(d.log)
    assert sum("not written" in line for line in d.log) == 1  # once per outage, not every interval
    assert read_spool(tmp_path / "spool", "events")["trace_id"].n_unique() == 3
    assert len(list_snapshots(tmp_path / "spool")) >= 2


def test_signals_during_start_and_sighup(fake, tmp_path):
    """SIGUSR1 while the program compiles opens a window instead of killing the tracer (its
    default action); SIGHUP (a closed terminal) stops it like SIGTERM: final snapshot, exit 0."""
    set_file, driver, _ = fake
    # a window long enough that no load closes it before the driver's calls
    d = Daemon([str(set_file), "-i", "60s", "--good-window", "10m", "--good-every", "1h", "--sample", "1"],
               tmp_path / "spool", wait="compiling")
    d.proc.send_signal(signal.SIGUSR1)
    d.wait_for("probes live", timeout=STARTUP_TIMEOUT_S)
    d.wait_for("capture window open")
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EIO)
    run_driver(driver, "alloc_pd", 3)  # in the window: recorded as good traces
    assert d.stop(signal.SIGHUP) == 0, "".join(d.log)
    # the early SIGUSR1 asked for the window the start opens anyway: one window, not two
    assert sum("capture window open" in line for line in d.log) == 1, "".join(d.log)
    events = read_spool(tmp_path / "spool", "events")
    assert events.filter(pl.col("kind") == "failure")["trace_id"].n_unique() == 2
    per_kind = events.filter(events["seq"] == 0).group_by("kind", "command").len().sort("kind", "command").rows()
    assert per_kind == [("failure", "reg_mr", 2), ("good", "alloc_pd", 3)]
    # and a stop asked for during the start still ends with a final snapshot
    d = Daemon([str(set_file), "-x", "-i", "60s"], tmp_path / "spool2", wait="compiling")
    assert d.stop(signal.SIGTERM) == 0, "".join(d.log)
    assert len(list_snapshots(tmp_path / "spool2")) == 1


def test_an_ignored_sighup_stays_ignored(fake, tmp_path):
    """Under nohup (SIGHUP ignored when it starts) a closed terminal does not stop the tracer;
    SIGTERM still does, with its final snapshot."""
    set_file, _, _ = fake
    spool = tmp_path / "spool"
    d = Daemon([str(set_file), "-x", "-i", "0.2s"], spool, sighup=signal.SIG_IGN)
    # the kernel drops a SIGHUP whose disposition is SIG_IGN: the daemon left it so
    assert _signal_mask(d.proc.pid, "SigIgn") & (1 << (signal.SIGHUP - 1)), "SIGHUP is not ignored"
    d.proc.send_signal(signal.SIGHUP)
    # Handled as a stop, it would end the run after at most two snapshots more than the spool
    # holds once it was sent (one being written then, the final one): three more, counted,
    # show the daemon running on, with no wait for nothing to happen
    _wait_snapshots(d, len(list_snapshots(spool)) + 3)
    assert d.proc.poll() is None, "".join(d.log)
    assert d.stop(signal.SIGTERM) == 0, "".join(d.log)
    assert sum("stopped:" in line for line in d.log) == 1, "".join(d.log)  # by the SIGTERM only


def test_control_file_that_cannot_be_removed_is_logged_not_fatal(fake, tmp_path):
    set_file, _, _ = fake
    control = tmp_path / "capture-now"
    d = Daemon([str(set_file), "-i", "0.2s", "--control-file", str(control)], tmp_path / "spool")
    control.mkdir()  # unlink() of a directory fails
    d.wait_for("--control-file: cannot remove")
    # the main loop looks at the control file several times per interval: three more intervals
    # (counted, not slept) are many more failed removals, none of them logged again
    _wait_snapshots(d, len(list_snapshots(tmp_path / "spool")) + 3)
    assert d.proc.poll() is None
    assert d.stop() == 0
    assert sum("--control-file: cannot remove" in line for line in d.log) == 1


def _signal_mask(pid: int, field: str) -> int:
    """A signal set of /proc/PID/status (SigIgn, SigCgt, ...) as a bit mask."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _wait_snapshots(d: Daemon, at_least: int, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Until the daemon's spool holds `at_least` snapshots: intervals that really passed, where a
    sleep would only guess how many a loaded machine lets pass."""
    deadline = time.monotonic() + timeout
    while len(list_snapshots(d.spool)) < at_least:
        assert d.proc.poll() is None, f"tracer run exited ({d.proc.returncode}): {''.join(d.log)}"
        assert time.monotonic() < deadline, f"fewer than {at_least} snapshots in {timeout:g} s: {''.join(d.log)}"
        time.sleep(0.05)


def _spool_outage_wrapper(spool: Path, marks: Path, tmpdir: Path, copy_to: Path | None = None) -> list[str]:
    """Run the tracer in a private mount namespace where `spool` is a 4 MiB tmpfs that a
    background job fills to the last block when marks/full appears (a real ENOSPC, for root
    too) and empties when marks/free does; when marks/done appears it copies the spool to
    `copy_to` (the tmpfs goes away with the namespace)."""
    wait = 'for i in $(seq 600); do [ -e "{m}" ] && break; sleep 0.05; done'
    copy = f'{wait.format(m=marks / "done")}; cp -a "{spool}/." "{copy_to}/"; ' if copy_to else ""
    script = (f'mkdir -p "{spool}" && mount -t tmpfs -o size=4m tracebase-test "{spool}" || exit 1; '
              f'export TMPDIR="{tmpdir}"; ( {wait.format(m=marks / "full")}; dd if=/dev/zero of="{spool}/filler" bs=64k 2>/dev/null; '
              f'touch "{marks}/is-full"; {wait.format(m=marks / "free")}; rm -f "{spool}/filler"; '
              f'{copy}touch "{marks}/finished" ) & exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "outage"]


def _held_snapshots(textfile: Path, at_least: int, timeout: float = 60.0) -> float:
    """The daemon's held-snapshots gauge once it reaches `at_least` (or its last value at the
    timeout: the caller's assertion then shows it)."""
    deadline, held = time.monotonic() + timeout, 0.0
    while time.monotonic() < deadline:
        if textfile.exists():
            families = {f.name: f for f in text_string_to_metric_families(textfile.read_text())}
            if "tracebase_held_snapshots" in families:
                held = families["tracebase_held_snapshots"].samples[0].value
                if held >= at_least:
                    break
        time.sleep(0.1)
    return held


def _wait_file(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_full_spool_holds_intervals_in_memory_and_writes_them_when_it_recovers(fake, tmp_path):
    """A full spool disk mid-run (ENOSPC; a read-only remount takes the same path) never stops
    the tracer: logged once, the closed intervals are held in memory and retried every interval
    (a gauge says how many), and when space is back every one of them lands in order with its
    own time; nothing is lost."""
    set_file, driver, _ = fake
    spool, marks, tmpdir, copy = tmp_path / "spool", tmp_path / "marks", tmp_path / "tmpdir", tmp_path / "copy"
    for d in (marks, tmpdir, copy):
        d.mkdir()
    textfile = tmp_path / "t.prom"
    d = Daemon([str(set_file), "-x", "-i", "0.3s", "--prom", str(textfile)], spool,
               wrapper=_spool_outage_wrapper(spool, marks, tmpdir, copy_to=copy))
    (marks / "full").touch()
    _wait_file(marks / "is-full")
    run_driver(driver, "reg_mr", 3, LAYER_PEER, errno.EIO)
    d.wait_for("not written (No space left on device)")
    # several more intervals close while the disk is full (waited for, not slept: on a loaded
    # machine 1.2 s did not always see a second interval close)
    held = _held_snapshots(textfile, at_least=2)
    assert held >= 2
    assert d.proc.poll() is None, "".join(d.log)
    (marks / "free").touch()
    d.wait_for("written again")
    assert d.stop() == 0, "".join(d.log)
    (marks / "done").touch()
    _wait_file(marks / "finished")
    assert sum("not written" in line for line in d.log) == 1, "".join(d.log)  # once per outage
    events = read_spool(copy, "events")
    assert events.filter(pl.col("kind") == "failure")["trace_id"].n_unique() == 3
    snaps = list_snapshots(copy)
    assert len(snaps) >= held + 1  # the held ones and the final one at least
    seqs = [int(s.name.rsplit("-", 1)[1]) for s in snaps]
    assert seqs == list(range(len(seqs)))  # every interval is a snapshot: in order, none twice, none lost
    assert list(tmpdir.iterdir()) == []  # nothing spilled: the spool took it all


def test_a_spool_still_full_at_exit_spills_to_tmpdir_and_says_where(fake, tmp_path):
    """Stopped while the spool disk is full: exit 2 with one line naming the spool, the reason
    and where the held snapshots went ($TMPDIR/tracebase-spool), and they are all there."""
    set_file, driver, _ = fake
    spool, marks, tmpdir = tmp_path / "spool", tmp_path / "marks", tmp_path / "tmpdir"
    marks.mkdir()
    tmpdir.mkdir()
    d = Daemon([str(set_file), "-x", "-i", "0.3s"], spool, wrapper=_spool_outage_wrapper(spool, marks, tmpdir))
    (marks / "full").touch()
    _wait_file(marks / "is-full")
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EIO)
    d.wait_for("not written (No space left on device)")
    rc = d.stop()
    (marks / "free").touch()  # lets the namespace's helper job end
    assert rc == 2, "".join(d.log)
    last = d.log[-1]
    assert "Traceback" not in "".join(d.log)
    assert last.startswith("tracer: error: --spool:") and "No space left on device" in last, last
    assert f"kept in {tmpdir / 'tracebase-spool'}" in last, last
    spilled = read_spool(tmpdir / "tracebase-spool", "events")
    assert spilled.filter(pl.col("kind") == "failure")["trace_id"].n_unique() == 2


def test_held_intervals_past_the_memory_bound_drop_the_oldest_trees_and_keep_counters(tmp_path, monkeypatch):
    """The memory bound of a long outage: the oldest held call trees go first, counted as lost;
    every interval keeps its counters and its place, the newest trees stay."""
    import pyarrow as pa

    from tracer.fleet import daemon as daemon_module
    from tracer.schema import COUNTERS, EVENTS

    d = daemon_module.Daemon(daemon_module.RunConfig(sets=[], spool=tmp_path / "spool", log=io.StringIO()))

    def interval(n_traces: int, when: int) -> daemon_module.HeldSnapshot:
        rows = [{"trace_id": f"t{when}-{i}", "seq": 0, "kind": "failure", "probe": "p", "depth": 0}
                for i in range(n_traces)]
        counters = pa.Table.from_pylist([{"probe": "p", "invocations": 5, "failures": n_traces}], schema=COUNTERS)
        return daemon_module.HeldSnapshot(pa.Table.from_pylist(rows, schema=EVENTS), counters, when, when)

    d.held = [interval(4, 1), interval(3, 2), interval(2, 3)]
    one = d.held[0].events.nbytes
    monkeypatch.setattr(daemon_module, "MAX_HELD_EVENT_BYTES", d.held[2].events.nbytes + one // 2)
    d._bound_held()
    assert [h.events.num_rows for h in d.held] == [0, 0, 2]
    assert [h.counters.num_rows for h in d.held] == [1, 1, 1] and [h.seq for h in d.held] == [1, 2, 3]
    assert d.lost == 7
    assert EVENTS.equals(d.held[0].events.schema)


def test_slot_collisions_reach_the_log_line_and_the_textfile(fake, need_cc, tmp_path):
    """`collided` (trees kept in task storage because another thread held their slot) is exported
    like the other health counts: the daemon's stop line and the Prometheus textfile. One slot
    for every thread, a slow and three fast threads: collisions happen, every tree stays whole."""
    from fleet_support import build_fakeverbs_threads

    from tracer.fleet import daemon as daemon_module
    from tracer.fleet.program import MAX_EXAMPLES

    set_file, _, lib = fake
    threads = build_fakeverbs_threads(tmp_path, lib, need_cc)
    log = io.StringIO()
    prom = tmp_path / "t.prom"
    cfg = daemon_module.RunConfig(sets=[str(set_file)], spool=tmp_path / "spool", interval_s=60.0, duration_s=0.3,
                                  failures_only=True, examples=MAX_EXAMPLES, slots=1, prom=prom, host="h1", log=log)
    d = daemon_module.Daemon(cfg)
    try:
        d.start()
        out = subprocess.run([str(threads), "3", "20000", "40", "3"], capture_output=True, text=True, check=True)
        assert d.run() == 0
    finally:
        d.close()
    failed = sum(map(int, out.stdout.split()[1::2]))
    assert failed == 3 + 3 * 40
    text = log.getvalue()
    assert "slots keyed by the saved-registers address" in text, text
    (stop,) = [line for line in text.splitlines() if "stopped:" in line]
    collided = int(stop.split(" lost, ")[1].split(" slot collisions")[0])
    assert collided >= 1, stop
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert families["tracebase_slot_collisions"].type == "counter"
    (sample,) = [s for s in families["tracebase_slot_collisions"].samples if s.name.endswith("_total")]
    assert sample.labels == {"host": "h1", "set": "fakeverbs"} and sample.value == collided
    events = read_spool(tmp_path / "spool", "events")
    trees = events.group_by("trace_id").agg(pl.len(), pl.col("tid").n_unique())
    assert trees.height == failed and set(trees["len"]) == {4} and set(trees["tid"]) == {1}
