"""Good runs that differ from each other in ways a program's own design makes timing or
history, shaped as strace shows the real programs of tests/scenarios/real_twentysecond.py
(Python 3.11's os.fork + a SIGCHLD handler, a cache checked with os.path.exists and filled
with a temporary renamed onto it, logging's RotatingFileHandler), written as real Parquet
through tracer.schema: the variation alone must be quiet, and the guard beside each rule says
which look-alike still names its region."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")
START = [("execve", None, "/usr/bin/python3", None, None, 0), ("openat", None, "/etc/ld.so.cache", None,
                                                                  "O_RDONLY|O_CLOEXEC", 3),
         ("close", None, "/etc/ld.so.cache", None, None, 0)]


def trace(path: Path, threads: dict[int, list], trace_id: str, kind: str = "good", pid0: int = 0) -> Path:
    """threads: {pid: [(probe, errno, path, path2, arg, ret)]}, each a one-thread process; the
    first is the parent of the others. pid0 shifts every pid (and every returned child pid)
    so runs have pids of their own."""
    cols: dict[str, list] = {k: [] for k in ("pid", "ppid", "probe", "errno", "path", "path2", "arg", "ret")}
    first = min(threads)
    for pid, rows in threads.items():
        for probe, errno, p, p2, arg, ret in rows:
            cols["pid"].append(pid + pid0)
            cols["ppid"].append(1 if pid == first else first + pid0)
            cols["probe"].append(probe)
            cols["errno"].append(errno)
            cols["path"].append(p)
            cols["path2"].append(p2)
            cols["arg"].append(arg)
            cols["ret"].append(ret + pid0 if probe in ("clone", "wait4") and ret > 0 else ret)
    n = len(cols["pid"])
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
            "pid": cols["pid"], "tid": cols["pid"], "ppid": cols["ppid"], "comm": ["python3"] * n,
            "probe": cols["probe"], "depth": [0] * n, "ret": cols["ret"], "errno": cols["errno"],
            "path": cols["path"], "path2": cols["path2"], "arg": cols["arg"], "kind": [kind] * n,
            "command": ["python3 job.py"] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16, "ret": pl.Int64},
    )
    return write_table(df, path, "events")


def _diff(tmp_path: Path, goods: list[dict], bad: dict, kind: str = "good"):
    g = [trace(tmp_path / f"g{i}.parquet", t, f"g{i}", pid0=1000 * (i + 1)) for i, t in enumerate(goods)]
    b = trace(tmp_path / "b.parquet", bad, "b", kind=kind, pid0=9000)
    return diff_traces(g, b, expected=NONE)


# --- a child reaped by the program's own SIGCHLD handler before the main line waits ----------------
EXIT = ("exit_group", None, None, None, None, 0)
CHILD = {101: [("openat", None, "/srv/job/part.txt", None, "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", 3),
               ("write", None, "/srv/job/part.txt", None, None, 900), ("close", None, "/srv/job/part.txt", None, None, 0),
               EXIT]}
PUBLISH = [("rename", None, "/srv/job/part.txt", "/srv/job/out/final.txt", None, 0),
           ("openat", None, "/srv/job/status.txt", None, "O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC", 3),
           ("write", None, "/srv/job/status.txt", None, None, 40), ("close", None, "/srv/job/status.txt", None, None, 0),
           EXIT]


def _parent(reaped_by_handler: bool, sigchld_ignored: bool = False) -> dict:
    fork = [("rt_sigaction", None, None, None, None, 0), ("clone", None, None, None, None, 101),
            ("clock_nanosleep", None, None, None, None, 0)]
    if sigchld_ignored:  # the kernel reaped the child: no wait of the process returns it
        waits = [("wait4", "ECHILD", None, None, "pid", -10)]
    elif reaped_by_handler:  # the child ended during the sleep: the handler reaped it first
        waits = [("rt_sigreturn", None, None, None, None, 0), ("wait4", None, None, None, None, 101),
                 ("wait4", "ECHILD", None, None, None, -10), ("wait4", "ECHILD", None, None, "pid", -10)]
    else:  # the main line's wait returned it; the handler then found none left
        waits = [("wait4", None, None, None, "pid", 101), ("rt_sigreturn", None, None, None, None, 0),
                 ("wait4", "ECHILD", None, None, None, -10)]
    return {100: START + fork + waits + PUBLISH, **CHILD}


def test_a_child_its_own_sigchld_handler_reaped_first_is_not_lost(tmp_path):
    r = _diff(tmp_path, [_parent(False), _parent(False)], _parent(True))
    assert not r.anomaly, r.bifurcation


def test_a_child_the_kernel_reaped_is_still_lost(tmp_path):
    # SIGCHLD ignored: no wait of the process returned the child, so its wait's ECHILD is the fault
    r = _diff(tmp_path, [_parent(False), _parent(False)], _parent(False, sigchld_ignored=True), kind="failure")
    bif = r.bifurcation
    assert r.anomaly and (bif["probe"], bif["errno"]) == ("wait4", "ECHILD"), bif


# --- a cache the good runs found warm, cold in this run ------------------------------------------
ENTRY = "/srv/job/cache/features.bin"
MODEL_SUM = [("openat", None, "/srv/job/out/model.sum", None, "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", 3),
             ("write", None, "/srv/job/out/model.sum", None, None, 33),
             ("close", None, "/srv/job/out/model.sum", None, None, 0), EXIT]


def _cache_run(warm: bool, fill: str = "rename") -> dict:
    if warm:
        body = [("newfstatat", None, ENTRY, None, None, 0), ("openat", None, ENTRY, None, "O_RDONLY|O_CLOEXEC", 3),
                ("read", None, ENTRY, None, None, 16384), ("read", None, ENTRY, None, None, 0),
                ("close", None, ENTRY, None, None, 0)]
    else:
        body = [("newfstatat", "ENOENT", ENTRY, None, None, -2),
                ("openat", None, "/srv/job/params.txt", None, "O_RDONLY|O_CLOEXEC", 3),
                ("read", None, "/srv/job/params.txt", None, None, 17), ("close", None, "/srv/job/params.txt", None, None, 0),
                ("newfstatat", None, "/srv/job", None, None, 0), ("mkdir", None, "/srv/job/cache", None, None, 0)]
        if fill == "rename":  # computed, written to a temporary, published onto the entry
            body += [("openat", None, ENTRY + ".part", None, "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", 3),
                     ("write", None, ENTRY + ".part", None, None, 16384), ("close", None, ENTRY + ".part", None, None, 0),
                     ("rename", None, ENTRY + ".part", ENTRY, None, 0)]
        else:  # a state file started afresh in place: no publish
            body += [("openat", None, ENTRY, None, "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", 3),
                     ("write", None, ENTRY, None, None, 16384), ("close", None, ENTRY, None, None, 0)]
    return {100: START + body + MODEL_SUM}


def test_a_warm_cache_missed_and_refilled_is_quiet(tmp_path):
    r = _diff(tmp_path, [_cache_run(True), _cache_run(True)], _cache_run(False))
    assert not r.anomaly, r.bifurcation


def test_a_file_the_good_runs_found_written_afresh_in_place_is_still_named(tmp_path):
    r = _diff(tmp_path, [_cache_run(True), _cache_run(True)], _cache_run(False, fill="in place"))
    bif = r.bifurcation
    assert r.anomaly and (bif["probe"], bif["errno"], bif["path"]) == ("newfstatat", "ENOENT", ENTRY), bif


# --- a log rotating on size in one run only -------------------------------------------------------
LOG = "/srv/job/logs/app.log"
APPEND = "O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC"


def _writes(n: int) -> list:
    return [r for _ in range(n) for r in (("lseek", None, LOG, None, None, 0), ("write", None, LOG, None, None, 75))]


def _log_run(rotate: str | None) -> dict:
    body = [("openat", None, LOG, None, APPEND, 3), ("newfstatat", None, LOG, None, None, 0)] + _writes(6)
    if rotate == "ok":  # RotatingFileHandler(backupCount=1): close, drop the old backup, rename aside, reopen
        body += [("close", None, LOG, None, None, 0), ("newfstatat", "ENOENT", LOG + ".1", None, None, -2),
                 ("newfstatat", None, LOG, None, None, 0), ("rename", None, LOG, LOG + ".1", None, 0),
                 ("openat", None, LOG, None, APPEND, 3), ("newfstatat", None, LOG, None, None, 0)] + _writes(6)
    elif rotate == "blocked":  # a directory where the backup goes: the removal fails, nothing renamed
        body += [("close", None, LOG, None, None, 0), ("newfstatat", None, LOG + ".1", None, None, 0),
                 ("unlink", "EISDIR", LOG + ".1", None, None, -21),
                 ("openat", None, LOG, None, APPEND, 3), ("newfstatat", None, LOG, None, None, 0)] + _writes(6)
    return {100: START + body + [("close", None, LOG, None, None, 0), EXIT]}


def test_a_log_rotated_in_one_run_only_is_quiet(tmp_path):
    r = _diff(tmp_path, [_log_run(None), _log_run(None)], _log_run("ok"))
    assert not r.anomaly, r.bifurcation


def test_a_rotation_that_fails_is_still_named(tmp_path):
    r = _diff(tmp_path, [_log_run(None), _log_run(None)], _log_run("blocked"))
    bif = r.bifurcation
    assert r.anomaly and (bif["probe"], bif["errno"], bif["path"]) == ("unlink", "EISDIR", LOG + ".1"), bif


# --- a pool of /proc scanner threads taking pids from a shared counter ---------------------------
def _scan(pid: int, kernel: bool) -> list[tuple]:
    """One pid of a /proc scan as procps-like code makes it: its stat read, its exe resolved (a
    kernel thread has none: readlink ENOENT)."""
    return [("openat", None, f"/proc/{pid}/stat", 3), ("read", None, f"/proc/{pid}/stat", 300),
            ("close", None, f"/proc/{pid}/stat", 0),
            ("readlink", "ENOENT" if kernel else None, f"/proc/{pid}/exe", -2 if kernel else 15)]


def _pool_trace(path: Path, shares: dict[int, list[int]], trace_id: str, pid: int) -> Path:
    """A scanner process (pid) whose worker threads (tid -> the pids it took) scan /proc; pids
    under 10 are kernel threads. The main thread starts the workers and joins them."""
    rows = [(pid, "execve", None, "/usr/bin/procscan", 0)]
    rows += [(pid, "clone", None, None, pid + 1 + i) for i in range(len(shares))]
    for i, (_, pids) in enumerate(sorted(shares.items())):
        rows += [(pid + 1 + i, *call) for q in pids for call in _scan(q, q < 10)]
    rows += [(pid, "exit_group", None, None, 0)]
    n = len(rows)
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
            "pid": [pid] * n, "tid": [r[0] for r in rows], "ppid": [1] * n, "comm": ["procscan"] * n,
            "probe": [r[1] for r in rows], "depth": [0] * n, "ret": [r[4] for r in rows],
            "errno": [r[2] for r in rows], "path": [r[3] for r in rows], "path2": [None] * n, "arg": [None] * n,
            "kind": ["good"] * n, "command": ["procscan"] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16, "ret": pl.Int64},
    )
    return write_table(df, path, "events")


def test_which_pool_worker_meets_the_kernel_threads_is_timing(tmp_path):
    """Four scanner threads take pids from a shared counter: in the good runs one worker met the
    kernel threads (no exe: readlink ENOENT), in the third another worker met one of them (pid 4)
    as the last pid it took. The scan is the process's, not a thread's: quiet (it named readlink
    ENOENT /proc/4/exe -- tests/scenarios/real_twentyninth.py's tb29-procscan, 1 run in 4)."""
    user = list(range(1000, 1040))
    # (the last worker starts when the counter is nearly spent: a pid or two)
    goods = [{0: [2, 3, 4, *user[:13]], 1: user[13:26], 2: user[26:39], 3: user[39:]},
             {0: user[:13], 1: [2, 3, 4, *user[13:26]], 2: user[26:38], 3: user[38:]}]
    bad = {0: [2, 3, *user[:14]], 1: user[14:27], 2: user[27:40], 3: [4]}
    files = [_pool_trace(tmp_path / f"g{i}.parquet", g, f"g{i}", 5000 + 100 * i) for i, g in enumerate(goods)]
    report = diff_traces(files, _pool_trace(tmp_path / "b.parquet", bad, "b", 9000), expected=NONE)
    assert not report.anomaly, report.bifurcation
    # guard: a process that resolves one pid's exe (a pid file's daemon) and fails is named
    one = [_pool_trace(tmp_path / f"o{i}.parquet", {0: [1500]}, f"o{i}", 6000 + 100 * i) for i in range(2)]
    report = diff_traces(one, _pool_trace(tmp_path / "ob.parquet", {0: [4]}, "ob", 9500), expected=NONE)
    assert report.anomaly and (report.bifurcation["probe"], report.bifurcation["errno"]) == ("readlink", "ENOENT")


def test_traces_without_an_exit_or_a_signal_are_diffed(tmp_path):
    """Traces with no exit_group and no signal (a recording cut by -d or -p's detach, a trace
    another tool wrote) stopped the diff: an internal error (`_Teardowns` left without its
    per-stream arrays). A bad run doing something else is named; the same run is quiet."""
    good = {100: [("openat", None, "/srv/in.txt", None, "O_RDONLY", 3)]}
    report = _diff(tmp_path, [good], {100: [("read", None, "/srv/in.txt", None, None, 0)]})
    assert report.anomaly and report.bifurcation["probe"] == "read"
    assert not _diff(tmp_path / "same", [good, good], good).anomaly


def test_a_process_the_bad_run_never_started_is_shown_without_placeholders(tmp_path):
    """A good runs' process the bad run never started has no pid, tid or position: the text said
    "process python3 pid None tid None role ..., seq -1"."""
    child = {101: [("openat", None, "/srv/job/part.txt", None, "O_RDONLY", 3), EXIT]}
    parent = {100: [("clone", None, None, None, None, 101), ("wait4", None, None, None, None, 101), EXIT]}
    report = _diff(tmp_path, [{**parent, **child}] * 2, {100: [("exit_group", None, None, None, None, 0)]})
    text = report.render_text()
    assert report.anomaly and "missing_process" in {a["kind"] for a in report.anomalies}, text
    assert "None" not in text and "seq -1" not in text, text
