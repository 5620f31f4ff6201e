"""`tracer record` after the command exits: the linger. Recording goes on while descendants the
command left running are alive (a start script's daemon, `cmd &`, a double-forked setsid'd
server), at most --linger, and stops when the last one exits; threads still running when it
stops are cut off (tracer.schema.CUT_OFF_KEY) and the differ does not call their end an
anomaly. Real programs, real BPF (root + bcc; need_bpf), real CLI runs for the signals.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from record_support import ENV, record

from tracer.schema import (
    CUT_OFF_KEY,
    cut_off_tids,
    format_tids,
    metadata_list,
    read_events,
    write_table,
)

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli", "record"]


def kill_all(tids) -> None:
    """SIGKILL what a recording left running (the daemons these tests start)."""
    for tid in tids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(tid, signal.SIGKILL)


def meta_of(rec) -> dict[str, str]:
    return dict(rec.metadata)


def failing_opens(df: pl.DataFrame, path: str) -> pl.DataFrame:
    return df.filter((pl.col("path") == path) & (pl.col("errno") == "ENOENT"))


# --- the library ------------------------------------------------------------------------------
def test_daemon_failing_after_the_script_returned_is_recorded_by_default(recorder, tmp_path):
    conf = tmp_path / "daemon.conf"
    script = f"( /usr/bin/sleep 0.3; exec /usr/bin/cat {conf} ) & echo started; exit 5"
    rec, df = record(recorder, ["/bin/sh", "-c", script])
    assert rec.exit_status == 5 and df["exit_status"][0] == 5  # the script's, not the daemon's
    assert rec.stop_reason == "exited" and not rec.cut_off and CUT_OFF_KEY not in meta_of(rec)
    assert meta_of(rec)["linger_s"] == "3"
    # the daemon's failure, 0.3 s after the script returned, is in the trace ...
    fail = failing_opens(df, str(conf))
    assert fail.height == 1 and fail["comm"][0] == "cat"
    # ... and the recording stopped as soon as it exited, not at the end of the linger: the
    # linger says "exited" only when it saw no descendant left before its time ran out (a wall
    # time bound here, 2.5 s, measured the machine: 11.9 s for this 0.3 s script at load 40)
    script_exit = df.filter((pl.col("pid") == rec.pid) & (pl.col("probe") == "exit_group"))["ts_ns"][0]
    assert fail["ts_ns"][0] - script_exit > 0.2e9


def test_linger_zero_stops_with_the_command_and_marks_what_was_left(recorder, tmp_path):
    conf, made = tmp_path / "daemon.conf", tmp_path / "made"
    # The command exits once the subshell has made its first call (the file `made`; on an idle
    # machine sh exited before the child it forked had run at all, and nothing of it was
    # recorded to be marked cut off). The subshell's cat comes 0.5 s after the command is
    # reaped ($$ gone), which is when the recording stops: 0.5 s after the fork, as before,
    # was overrun by counting to 50,000 in the shell at load 29, and the cat was recorded.
    # Both wait in shell builtins, so no short-lived process of theirs is in the trace.
    script = (f"( : > {made}; while kill -0 $$ 2>/dev/null; do :; done; /usr/bin/sleep 0.5; "
              f"exec /usr/bin/cat {conf} ) & while [ ! -e {made} ]; do :; done; echo started")
    rec, df = record(recorder, ["/bin/sh", "-c", script], linger=0)
    try:
        assert rec.stop_reason == "exited" and rec.exit_status == 0
        assert failing_opens(df, str(conf)).height == 0  # today's behaviour: not followed
        # the subshell (and its sleep) were alive when the recording stopped: cut off, and
        # the trace says so
        sub = df.filter(pl.col("pid") != rec.pid)["pid"].unique().to_list()
        assert sub and set(sub) <= rec.cut_off
        assert cut_off_tids(df["metadata"][0]) == rec.cut_off
        assert meta_of(rec)["linger_s"] == "0"
    finally:
        kill_all(rec.cut_off)


DAEMON = ("( while :; do /usr/bin/cat /etc/hostname >/dev/null; /usr/bin/sleep 0.02; done ) "
          ">/dev/null 2>&1 & echo started")


def test_daemon_outliving_the_linger_is_cut_off_and_good_runs_stay_quiet(recorder, tmp_path):
    from baseline.run.diff import diff_traces

    files, left = [], set()
    try:
        for i in range(3):
            t0 = time.monotonic()
            rec, df = record(recorder, ["/bin/sh", "-c", DAEMON], linger=0.4 + 0.1 * i)
            took = time.monotonic() - t0
            left |= rec.cut_off
            kill_all(rec.cut_off)
            assert rec.stop_reason == "linger" and rec.exit_status == 0 and meta_of(rec)["stopped"] == "linger"
            # at the linger's end, not before; the upper bound only catches a linger read in
            # the wrong unit: a whole recording took 12 s at load 40, so 2.5 s of slack failed
            assert 0.4 + 0.1 * i <= took < 0.4 + 0.1 * i + 60, took
            # the loop's subshell is among the threads cut off, the script's own shell is not
            loop_pid = df.filter((pl.col("ppid") == rec.pid) & (pl.col("pid") != rec.pid))["pid"][0]
            assert loop_pid in rec.cut_off and rec.pid not in rec.cut_off
            assert cut_off_tids(df["metadata"][0]) == rec.cut_off
            assert df.filter(pl.col("path") == "/etc/hostname").height >= 3  # followed meanwhile
            files.append(tmp_path / f"g{i}.parquet")
            rec.write(files[-1])
    finally:
        kill_all(left)
    for i in range(3):
        others = [f for j, f in enumerate(files) if j != i]
        report = diff_traces(good=others, bad=files[i])
        assert not report.anomaly, report.render_text()


def test_double_forked_setsid_daemon_is_followed(recorder, tmp_path):
    """A daemon that double-forks and calls setsid is reparented to init (or a subreaper) in
    another session: the kernel side follows processes by descent, not by parent or session."""
    conf = tmp_path / "srv.conf"
    inner = f"/usr/bin/sleep 0.3; exec /usr/bin/cat {conf}"
    script = f"/usr/bin/setsid -f /bin/sh -c '{inner}' </dev/null >/dev/null 2>&1; echo started"
    rec, df = record(recorder, ["/bin/sh", "-c", script], linger=math.inf)
    assert rec.exit_status == 0 and rec.stop_reason == "exited" and not rec.cut_off
    assert meta_of(rec)["linger_s"] == "inf"
    fail = failing_opens(df, str(conf))
    assert fail.height == 1
    daemon = fail["pid"][0]
    # it called setsid (a new session), and was started by a process the trace follows
    setsid = df.filter((pl.col("probe") == "setsid") & (pl.col("ret") >= 0))
    assert setsid.height >= 1
    assert df.filter(pl.col("pid") == daemon)["ppid"][0] in set(df["pid"].to_list())


def test_duration_shorter_than_the_linger_stops_the_recording(recorder, tmp_path):
    t0 = time.monotonic()
    # a linger (10 min) far beyond what load adds to a recording (12 s at load 40)
    rec, df = record(recorder, ["/bin/sh", "-c", DAEMON], linger=600, duration=0.6)
    took = time.monotonic() - t0
    try:
        assert rec.stop_reason == "duration" and meta_of(rec)["stopped"] == "duration"
        assert rec.exit_status == 0  # the command had exited: its status is known
        assert 0.6 <= took < 60, took
        assert rec.cut_off and rec.pid not in rec.cut_off
    finally:
        kill_all(rec.cut_off)


def test_timeout_kills_the_descendants_too(recorder):
    """The timeout ends the recording however long the linger: the command and the
    descendants followed are SIGKILLed (a shell killed alone would leave its sleep running,
    and the linger waiting for it)."""
    t0 = time.monotonic()
    # an hour's sleep: the 0.5 s timeout and the command's own end stay apart at any load (a
    # 30 s sleep with a 10 s bound left 20 s for a recording that took 12 s at load 40)
    rec, df = record(recorder, ["/bin/sh", "-c", "/usr/bin/sleep 3600; echo never"], linger=math.inf,
                     timeout=0.5)
    assert time.monotonic() - t0 < 120
    assert rec.exit_status == 137 and not rec.cut_off
    sleeper = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/sleep"))["pid"][0]
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{sleeper}") and time.monotonic() < deadline:
        time.sleep(0.05)  # killed; reaped by init once it is reparented
    assert not os.path.exists(f"/proc/{sleeper}"), f"sleep {sleeper} still running"


def test_attached_process_children_are_followed_after_it_exits(recorder, tmp_path):
    """-p: the children a process creates while recorded are followed after it exits, the
    same linger as a command's."""
    conf, go = tmp_path / "child.conf", tmp_path / "go"
    script = (f"while [ ! -e {go} ]; do /usr/bin/sleep 0.02; done; "
              f"( /usr/bin/sleep 0.3; exec /usr/bin/cat {conf} ) & exit 0")
    proc = subprocess.Popen(["/bin/sh", "-c", script], env=ENV, stdout=subprocess.DEVNULL)
    try:
        rec = recorder.attach(proc.pid, on_start=go.touch)
    finally:
        proc.wait(timeout=30)
    df = pl.from_arrow(rec.events)
    assert rec.stop_reason == "exited" and rec.exited and not rec.cut_off
    assert rec.exit_status == 0
    assert failing_opens(df, str(conf)).height == 1


# --- the CLI: signals during the linger ---------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_during_the_linger_ends_it_and_leaves_the_daemon(need_bpf, tmp_path, sig):
    out, ready, pidfile = tmp_path / "t.parquet", tmp_path / "ready", tmp_path / "daemon.pid"
    # an hour's linger, so that "at once" and "at its end" stay apart at any load (a 60 s linger
    # with a 10 s bound failed at load 40: 11.3 s from the signal to the exit)
    script = (f"/bin/sh -c 'echo $$ > {pidfile}; exec /usr/bin/sleep 3600' </dev/null >/dev/null 2>&1 & "
              f"while [ ! -s {pidfile} ]; do /usr/bin/sleep 0.01; done; echo $$ > {ready}.tmp; "
              f"mv {ready}.tmp {ready}; exit 4")
    proc = subprocess.Popen([*TRACER, "--linger", "1h", "-o", str(out), "--", "/bin/sh", "-c", script],
                            cwd=REPO, stderr=subprocess.PIPE, text=True)
    daemon = None
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the script never got ready"
            time.sleep(0.02)
        daemon = int(pidfile.read_text())
        # the script has exited and the recorder reaped it: it is in the linger (a fixed 0.5 s
        # was a guess; a signal before the reap is forwarded to the script instead)
        script_pid = int(ready.read_text())
        while os.path.exists(f"/proc/{script_pid}"):
            assert time.monotonic() < deadline and proc.poll() is None, "the script was never reaped"
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=600)  # at once, not at the end of the hour's linger
        assert proc.returncode == 4, err  # the script's exit status, not the signal's
        assert os.path.exists(f"/proc/{daemon}")  # not forwarded: the daemon is left alone
        assert f"stopped by {sig.name}, exit status 4; " in err and "still running when" in err, err
        df = read_events(out)
        meta = {m["key"]: m["value"] for m in df["metadata"][0]}
        assert meta["stopped"] == "signal" and meta["signal"] == sig.name
        assert daemon in cut_off_tids(meta)
        assert df["exit_status"][0] == 4
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        if daemon:
            kill_all([daemon])


def test_cli_linger_summary_and_json(need_bpf, tmp_path):
    out = tmp_path / "t.parquet"
    proc = subprocess.run([*TRACER, "--linger", "300ms", "--json", "-o", str(out), "--", "/bin/sh", "-c",
                           "/usr/bin/sleep 30 </dev/null >/dev/null 2>&1 & exit 3"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    meta = {m["key"]: m["value"] for m in read_events(out)["metadata"][0]}
    kill_all(cut_off_tids(meta))
    assert proc.returncode == 3, proc.stderr
    assert summary["stop_reason"] == "linger" and summary["exit_status"] == 3 and summary["cut_off_threads"] == 1
    assert "exit status 3; 1 descendant thread still running after the 0.3s linger, cut off" in proc.stderr
    assert meta["linger_s"] == "0.3"


# --- the differ: a stream the recording cut off is no thread ending early -----------------------
def _cut(df: pl.DataFrame, tid: int, keep: int, mark: bool) -> pl.DataFrame:
    """The trace as if its recording had stopped after `keep` calls of thread `tid` (its later
    calls and every call after that moment dropped), with the thread marked cut off or not."""
    rows = df.filter(pl.col("tid") == tid).sort("seq")
    stop_ts = rows["ts_ns"][keep]
    cut = df.filter(pl.col("ts_ns") < stop_ts)
    if mark:
        meta = {m["key"]: m["value"] for m in df["metadata"][0]}
        meta[CUT_OFF_KEY] = format_tids({tid})
        cut = cut.with_columns(pl.Series("metadata", [metadata_list(meta)] * cut.height,
                                         dtype=cut.schema["metadata"]))
    return cut


def test_differ_skips_the_end_of_a_cut_off_thread_only(recorder, tmp_path):
    """From real recordings of a script whose background child lists a directory: the child's
    stream cut short is '(end of thread)' unless its trace marks it cut off; a good run cut off
    earlier than the bad one says nothing past its cut; a child that ended early where the good
    runs' records go on is still reported."""
    from baseline.run.diff import diff_traces

    (tmp_path / "d").mkdir()
    for n in range(5):
        (tmp_path / "d" / f"f{n}").write_text("x")
    # (the child starts after the script has exited: no run's shell sees it end)
    # (and ls fails on one argument: an error of its own in every run, before the listing)
    argv = ["/bin/sh", "-c", f"( /usr/bin/sleep 0.05; exec /usr/bin/ls -l {tmp_path / 'missing'} {tmp_path / 'd'} ) "
            ">/dev/null 2>&1 & echo started"]
    runs = []
    for _ in range(3):
        rec, df = record(recorder, argv)
        assert rec.stop_reason == "exited" and not rec.cut_off
        child = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/ls"))["tid"][0]
        runs.append((df, child, df.filter(pl.col("tid") == child).height))
    full = [df for df, _, _ in runs]
    assert not diff_traces(good=pl.concat(full[:2]), bad=full[2]).anomaly

    df, child, n = runs[2]
    # the bad run's ls cut off half-way: quiet when marked, the thread 'ended early' when not
    assert not diff_traces(good=pl.concat(full[:2]), bad=_cut(df, child, n // 2, mark=True)).anomaly
    unmarked = diff_traces(good=pl.concat(full[:2]), bad=_cut(df, child, n // 2, mark=False))
    assert unmarked.anomaly and unmarked.bifurcation["probe"] == "(end of thread)"
    # good runs cut off after ls's last failing call (at two different points), the bad one
    # complete: its further calls and its end are past the good records: quiet
    def last_error(d, c):
        return int(d.filter(pl.col("tid") == c).sort("seq").with_row_index()
                   .filter(pl.col("errno").is_not_null())["index"].max())

    cut_goods = [_cut(d, c, last_error(d, c) + 2 + i, mark=True) for i, (d, c, m) in enumerate(runs[:2])]
    assert all(last_error(d, c) + 3 < m for d, c, m in runs[:2])
    assert not diff_traces(good=pl.concat(cut_goods), bad=full[2]).anomaly
    # (an error past the good records is still reported: the good runs never got there)
    assert full[2].filter((pl.col("tid") == child) & (pl.col("path") == str(tmp_path / "missing"))
                          & (pl.col("errno") == "ENOENT")).height
    early_goods = [_cut(d, c, 2, mark=True) for d, c, _ in runs[:2]]
    assert diff_traces(good=pl.concat(early_goods), bad=full[2]).bifurcation["errno"] is not None
    # ... but a bad child ending (unmarked) before the point where the good records stop is
    # still a thread stopping early
    late_goods = [_cut(d, c, 3 * m // 4, mark=True) for d, c, m in runs[:2]]
    early = diff_traces(good=pl.concat(late_goods), bad=_cut(df, child, n // 3, mark=False))
    assert early.anomaly and early.bifurcation["probe"] == "(end of thread)"


def test_a_locale_walk_cut_between_its_two_turns_is_quiet(recorder, tmp_path):
    """cat under LANG=C.UTF-8 looks each locale category up in C.UTF-8/ (ENOENT), then in
    C.utf8/. A recording whose linger ended between the two (CI 53: a daemon's cat cut after
    'openat .../C.UTF-8/LC_NUMERIC ENOENT') holds the first turn of a walk without its next:
    it is the same walk's turn as elsewhere in the traces, not an error of its own. From real
    recordings; the cut is made as the recording would have made it."""
    from baseline.run.diff import diff_traces

    argv = ["/bin/sh", "-c", "for i in 1 2 3; do /usr/bin/cat /etc/hostname; done >/dev/null"]
    runs = [record(recorder, argv)[1] for _ in range(3)]
    df = runs[2]
    cats = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/cat"))["tid"].to_list()
    last = cats[-1]
    rows = df.filter(pl.col("tid") == last).sort("seq").with_row_index()
    misses = rows.filter((pl.col("errno") == "ENOENT") & pl.col("path").str.contains("/C.UTF-8/LC_"))
    assert misses.height >= 2, rows.select("probe", "errno", "path").to_dicts()  # the walk this is about
    cut_at = int(misses["index"][1]) + 1  # right after the walk's second category's first turn
    goods = pl.concat(runs[:2])
    assert not diff_traces(good=goods, bad=df).anomaly
    cut = _cut(df, last, cut_at, mark=False)
    # every thread the cut left running is marked, as the recording marks them (cat, its shell)
    ended = set(cut.filter(pl.col("probe").is_in(["exit", "exit_group"]))["tid"].to_list())
    running = set(cut["tid"].to_list()) - ended
    assert {last, cut["pid"][0]} <= running
    meta = {m["key"]: m["value"] for m in df["metadata"][0]} | {CUT_OFF_KEY: format_tids(running)}
    marked = cut.with_columns(pl.Series("metadata", [metadata_list(meta)] * cut.height, dtype=cut.schema["metadata"]))
    report = diff_traces(good=goods, bad=marked)
    assert not report.anomaly, report.render_text()
    # the same cut not marked is threads that stopped early
    assert diff_traces(good=goods, bad=cut).anomaly


def test_cut_off_metadata_reads_from_files_and_frames(recorder, tmp_path):
    """The differ reads the marker from one row of a one-trace file and from frames alike."""
    from baseline.run.traces import cut_off_threads, load_table

    rec, df = record(recorder, ["/bin/sh", "-c", "/usr/bin/sleep 30 </dev/null >/dev/null 2>&1 & echo started"],
                     linger=0.2)
    kill_all(rec.cut_off)
    assert rec.cut_off
    path = rec.write(tmp_path / "t.parquet")
    expected = {rec.trace_id: rec.cut_off}
    assert cut_off_threads(load_table(path)) == expected
    assert cut_off_threads(load_table(pl.read_parquet(path))) == expected
    # two traces in one file: each its own
    other, _ = record(recorder, ["/bin/true"])
    both = tmp_path / "both.parquet"
    write_table(pa.concat_tables([rec.events, other.events]), both, "events")
    assert cut_off_threads(load_table(both)) == expected


def test_cli_linger_0_names_why_the_threads_were_cut_off(need_bpf, tmp_path):
    """--linger 0 stops with the command: the summary said "still running when None stopped the
    recording" (no signal stopped it)."""
    out = tmp_path / "t.parquet"
    proc = subprocess.run([*TRACER, "--linger", "0", "-o", str(out), "--", "/bin/sh", "-c",
                           "/usr/bin/sleep 30 </dev/null >/dev/null 2>&1 & exit 0"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    kill_all(cut_off_tids({m["key"]: m["value"] for m in read_events(out)["metadata"][0]}))
    assert proc.returncode == 0, proc.stderr
    assert "1 descendant thread still running when the command exited (--linger 0), cut off" in proc.stderr
    assert "None" not in proc.stderr
