"""Round fourteen: robust13's leftovers, each a defect of main shown by a real run (no mocks).

- `tracer run -i 1ms` was accepted (a snapshot directory written as fast as the disk allows);
- spool readers ordered a host's snapshots by the wall-clock time in their names, so a clock
  stepped back put a later interval first;
- `tracer record` recreated an output directory removed while the command ran;
- a snapshot name already taken ended the daemon ("snapshot already exists"), held intervals and
  all.
The wider battery is `bench/robust_battery.py --group round14`."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracer.schema import read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]
BUSY = "ls -lR /usr/lib/python3.11 >/dev/null"


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize(("value", "found"), [("1ms", "found 0.001s"), ("0.05s", "found 0.05s"),
                                              ("2h", "found 7200s"), ("1d", "found 86400s")])
def test_run_interval_outside_100ms_to_1h_is_refused_before_anything_starts(tmp_path, value, found):
    """-i 1ms was taken: the daemon then wrote a snapshot directory (two fsynced Parquet files)
    on every pass of its loop. The interval is now 100 ms to 1 h, refused otherwise in one line
    naming the flag, the range and the value, before a spool directory is made."""
    spool = tmp_path / "spool"
    proc = subprocess.run([*TRACER, "run", "syscalls", "-i", value, "-d", "1s", "--spool", str(spool)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_line(proc)
    assert "-i/--interval: expected a snapshot interval from 100ms to 1h" in line and found in line, line
    assert not spool.exists()


def test_spool_readers_order_by_sequence_number_when_the_clock_steps_back(tmp_path):
    """Snapshot names carry the wall-clock time and a sequence number; readers sorted by the
    time, so after the clock stepped back 10 s snapshot 2 came before snapshots 0 and 1. A
    host's snapshots now read in sequence order (the names, and so every existing spool, are
    unchanged); `baseline ingest` writes the rows in that order too."""
    import polars as pl

    from tracer.fleet.spool import (
        counters_table,
        events_table,
        list_snapshots,
        read_spool,
        write_snapshot,
    )
    from tracer.schema import read

    spool = tmp_path / "spool"
    t0 = 1_764_900_000_000_000_000  # 2025-12-05T02:00:00Z
    whens = [t0, t0 + 5 * 10**9, t0 - 5 * 10**9, t0]  # stepped back 10 s after #1; #3 ties #0's time
    for seq, when in enumerate(whens):
        counters = counters_table([{"host": "h1", "snapshot_time": when, "interval_s": 5.0, "probe": "openat",
                                    "layer": "syscall", "live": True, "invocations": seq + 1, "failures": 0}])
        write_snapshot(spool, "h1", events_table([]), counters, when, seq, durable=False)
    other = t0 - 60 * 10**9
    write_snapshot(spool, "h0", events_table([]), counters_table([]), other, 7, durable=False)

    seqs = [int(p.name.rsplit("-", 1)[1]) for p in list_snapshots(spool, "h1")]
    assert seqs == [0, 1, 2, 3], seqs
    assert [p.parent.name for p in list_snapshots(spool)] == ["h0"] + ["h1"] * 4  # host by host
    assert read_spool(spool, "counters", "h1")["invocations"].to_list() == [1, 2, 3, 4]

    dataset = tmp_path / "dataset"
    proc = subprocess.run([*TRACER[:-1], "baseline.cli", "ingest", str(spool), str(dataset)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    parts = sorted((dataset / "counters").glob("date=*/host=h1/part-*.parquet"))
    assert len(parts) == 1, parts
    assert read(parts, "counters").select(pl.col("invocations")).to_series().to_list() == [1, 2, 3, 4]


def test_record_output_directory_removed_mid_run_is_not_recreated(need_bpf, tmp_path):  # noqa: ARG001
    """The output's directory removed while the command ran was silently recreated, trace and
    all, and the command's status returned. Now nothing is recreated: the trace is kept in
    $TMPDIR and one line names the output, the directory, and where the trace is; exit 2."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    spare = tmp_path / "spare"
    spare.mkdir()
    out = out_dir / "t.parquet"
    proc = subprocess.run([*TRACER, "record", "-o", str(out), "--", "/bin/sh", "-c", f"{BUSY}; rm -r {out_dir}"],
                          cwd=REPO, capture_output=True, text=True, timeout=180, env={**os.environ, "TMPDIR": str(spare)})
    assert proc.returncode == 2, proc.stderr
    line = _one_line(proc)
    assert line.startswith(f"tracer: error: {out}: its directory {out_dir} was removed while recording"), line
    assert not out_dir.exists(), "the removed directory was recreated"
    saved = Path(line.split("was saved to ", 1)[1].removesuffix(" instead"))
    assert saved.parent == spare, line
    validate_file(saved, "events")
    assert read_events(saved).height > 1000


def test_snapshot_name_already_taken_never_ends_the_daemon(tmp_path):
    """A directory already at the name of the snapshot being written (copied in from another
    spool, or made by a second writer) raised "snapshot already exists" out of write_held and
    ended the daemon, every held interval lost. Now the held intervals are numbered past the
    highest in the directory and written, the other directory untouched, and the numbering
    goes on from there. The daemon's own write path; no BPF needed."""
    from tracer.fleet.daemon import Daemon as FleetDaemon
    from tracer.fleet.daemon import HeldSnapshot, RunConfig
    from tracer.fleet.spool import counters_table, events_table, list_snapshots, snapshot_name

    log = io.StringIO()
    spool = tmp_path / "spool"
    d = FleetDaemon(RunConfig(sets=["syscalls"], spool=spool, host="h1", log=log))
    d.prepare()
    try:
        when = time.time_ns()
        taken = spool / "h1" / snapshot_name(when, 0)
        taken.mkdir()
        (taken / "events.parquet").write_bytes(b"not ours")
        d.held.append(HeldSnapshot(events_table([]), counters_table([]), when, 0))
        d.held.append(HeldSnapshot(events_table([]), counters_table([]), when + 10**9, 1))
        d._seq = 2
        last = d.write_held()
        assert last is not None and not d.held, log.getvalue()
        assert (taken / "events.parquet").read_bytes() == b"not ours"
        assert "already exists" in log.getvalue() and "sequence number 1" in log.getvalue(), log.getvalue()
        seqs = [int(p.name.rsplit("-", 1)[1]) for p in list_snapshots(spool)]
        assert seqs == [0, 1, 2], seqs
        assert d._seq == 3  # the next interval follows on
    finally:
        d.close()



_TWICE = """
import os, signal, sys, time

def register(sub):
    sub.add_parser("work").set_defaults(func=work)

def work(args):
    try:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
        time.sleep(10)
    finally:
        os.kill(os.getpid(), signal.SIGINT)  # pressed again while the cleanup runs
        time.sleep(0.3)
        print("cleanup finished", file=sys.stderr)
"""


def _ctrl_c_not_ignored() -> None:
    """SIGINT back to its default in the child: a suite started in the background by a
    non-interactive shell (`cmd &`, as a CI runner may) inherits SIGINT ignored, and Python then
    rightly leaves it ignored -- the Ctrl-C this test presses would never arrive."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_command(tmp_path, name: str, source: str) -> subprocess.CompletedProcess:
    """Module `name` (`source`: a `register(sub)` adding the command `work`) run as a real
    command by tracer.cli.common.run in a fresh process, SIGINT at its default there."""
    (tmp_path / f"{name}.py").write_text(source)
    code = ("import sys; from tracer.cli import common; "
            f"common.exit_process(common.run({name!r}, 'test', [{name!r}], ['work']))")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=env, preexec_fn=_ctrl_c_not_ignored)


def test_ctrl_c_pressed_again_during_the_cleanup_exits_130_without_a_traceback(tmp_path):
    """A second SIGINT (Ctrl-C pressed twice; round fourteen's battery: 1 in 6 trials of
    `learn`/`simulate`) raised KeyboardInterrupt again inside the first one's cleanup (there, a
    pool's shutdown): a traceback, the process dead by SIGINT, the cleanup cut short. Only the
    first stop signal unwinds now. A real command run by tracer.cli.common.run whose cleanup
    gets the second Ctrl-C at a known point; then `baseline simulate` given a storm of them."""
    import signal

    proc = _run_command(tmp_path, "twice", _TWICE)
    assert proc.returncode == 130 and "cleanup finished" in proc.stderr, (proc.returncode, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr, proc.stderr[-800:]

    out = tmp_path / "sim"
    proc = subprocess.Popen([*TRACER[:-1], "baseline.cli", "simulate", "--hosts", "40", "--hours", "6", "--seed", "1",
                             "-o", str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"},
                            preexec_fn=_ctrl_c_not_ignored)
    deadline = time.monotonic() + 120
    while len(list(tmp_path.iterdir())) < 2 and proc.poll() is None:  # its staging directory: at work
        assert time.monotonic() < deadline, "simulate never started writing"
        time.sleep(0.02)
    time.sleep(0.3)
    end = time.monotonic() + 3
    while proc.poll() is None and time.monotonic() < end:
        proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err[-800:])
    assert "Traceback" not in err, err[-800:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["twice.py"], (err[-800:], list(tmp_path.iterdir()))


_IN_A_CALLBACK = """
import os, signal, sys, time, weakref

class Thing:
    pass

def register(sub):
    sub.add_parser("work").set_defaults(func=work)

def work(args):
    try:
        thing = Thing()

        def gone(ref):  # Ctrl-C lands while a weakref callback runs: the handler runs in it
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100000):
                pass

        ref = weakref.ref(thing, gone)
        del thing
        time.sleep(5)
        print("went on after the stop", file=sys.stderr)
    finally:
        print("cleanup finished", file=sys.stderr)
"""


def test_ctrl_c_landing_in_a_weakref_callback_still_stops_the_command(tmp_path):
    """The first Ctrl-C's handler ran inside a weakref callback (a storm of them on `baseline
    simulate`, 1 in ~8, a fresh-clone CI): Python cannot propagate an exception from there, so it
    printed "Exception ignored in: ... Traceback ... KeyboardInterrupt" and the command went on,
    the stop spent. It is delivered again once the callback returns: exit 130, the cleanup run,
    no traceback, nothing done after the stop."""
    proc = _run_command(tmp_path, "in_callback", _IN_A_CALLBACK)
    assert proc.returncode == 130 and "cleanup finished" in proc.stderr, (proc.returncode, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr and "went on" not in proc.stderr, proc.stderr[-800:]


_RAISED_BY_A_LIBRARY = """
import os, signal, sys, time

def register(sub):
    sub.add_parser("work").set_defaults(func=work)

def work(args):
    try:
        raise KeyboardInterrupt  # what polars' own SIGINT handler makes a collect raise
    finally:
        os.kill(os.getpid(), signal.SIGINT)  # the same Ctrl-C, reaching Python's handler after
        time.sleep(0.3)
        print("cleanup finished", file=sys.stderr)
"""


def test_a_stop_a_library_raised_itself_is_not_raised_again_in_the_cleanup(tmp_path):
    """Polars chains a SIGINT handler of its own before Python's: a Ctrl-C during a collect
    raises polars' KeyboardInterrupt, then our handler runs at the unwinding's first bytecode
    (a `with` block's exit) and, having heard no stop yet, raised a second one there: the
    staging directory's removal was skipped (a storm of Ctrl-C on `baseline simulate`, 1 in ~3
    after this round's other stop fixes). A stop already unwinding is the first."""
    proc = _run_command(tmp_path, "by_library", _RAISED_BY_A_LIBRARY)
    assert proc.returncode == 130 and "cleanup finished" in proc.stderr, (proc.returncode, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr, proc.stderr[-800:]


_AT_EXIT = """
import atexit, os, signal, sys, time

def register(sub):
    sub.add_parser("work").set_defaults(func=work)

def pressed_again_while_exiting():  # (like a pool's shutdown at exit, met by a held Ctrl-C)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.3)
    print("exit work finished", file=sys.stderr)

def work(args):
    atexit.register(pressed_again_while_exiting)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)
"""


def test_ctrl_c_while_a_stopped_command_exits_is_dropped(tmp_path):
    """Once a command has unwound from a stop, its process still has exit work to do (atexit:
    a pool's shutdown, bcc's cleanup). Our handlers were gone by then, so one more Ctrl-C of a
    storm raised KeyboardInterrupt there: "Exception ignored in ...", a traceback, or death by
    SIGINT (a fresh-clone CI, `baseline simulate`). They are dropped until the process ends."""
    proc = _run_command(tmp_path, "at_exit", _AT_EXIT)
    assert proc.returncode == 130 and "exit work finished" in proc.stderr, (proc.returncode, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr, proc.stderr[-800:]


def test_a_later_command_in_the_process_hears_ctrl_c_again():
    """The dropping ends with the next command run in the same process (a library caller, the
    test suite): its Ctrl-C unwinds it, and after it the disposition from before is back."""
    import signal

    from tracer.cli import common

    # (Python's own handler first: a suite started in the background inherits SIGINT ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_twice_in_one_process(common)
    finally:
        signal.signal(signal.SIGINT, inherited)


def _ctrl_c_twice_in_one_process(common) -> None:
    import signal

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), common._stop_signals_unwind():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    assert signal.getsignal(signal.SIGINT) is common._late_stop
    os.kill(os.getpid(), signal.SIGINT)  # dropped
    time.sleep(0.05)
    with pytest.raises(KeyboardInterrupt), common._stop_signals_unwind():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    with common._stop_signals_unwind():
        pass
    assert signal.getsignal(signal.SIGINT) is before


def test_allowlist_learn_into_a_learned_list_of_millions_of_lines_is_refused_quickly(tmp_path):
    """`baseline allowlist learn` merges into ./expected_errors.learned.yaml keeping its comments
    (a round-trip YAML parse whose time grows faster than the lines): into 20 MB of comment
    lines it ran for minutes (round fourteen's battery: > 90 s, killed). Now a file past
    200,000 lines is refused in one line naming it, before anything is written, left byte for
    byte."""
    from test_bad_inputs import PROGRAM, _events, _write

    good = [_write(_events(f"g{i}", PROGRAM, 10 + i), tmp_path / f"good{i}.parquet") for i in (1, 2)]
    learned = tmp_path / "expected_errors.learned.yaml"
    text = b"version: 1\nentries: []\n" + b"# pad\n" * ((20 << 20) // 6)
    learned.write_bytes(text)
    started = time.monotonic()
    proc = subprocess.run([*TRACER[:-1], "baseline.cli", "allowlist", "learn", *map(str, good)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"})
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr[-500:]
    line = _one_line(proc)
    assert "expected_errors.learned.yaml: expected a YAML file of at most 200,000 lines" in line, line
    assert learned.read_bytes() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected_errors.learned.yaml", "good1.parquet", "good2.parquet"]
    assert took < 60, took  # on main: minutes


@pytest.mark.parametrize("command", ["allowlist", "expected"])
def test_a_list_too_long_to_merge_into_is_refused_before_it_is_parsed(tmp_path, command):
    """The line count is checked on the text, before the YAML parse (a 4 MB list was refused
    only after 8 s of parsing, battery 43): a list whose end is not even YAML says its length."""
    from test_bad_inputs import PROGRAM, _events, _write

    target = tmp_path / "list.yaml"
    text = b"version: 1\nentries: []\n" + b"# pad\n" * 200_001 + b"entries: [unclosed\n"
    target.write_bytes(text)
    if command == "allowlist":
        good = _write(_events("g1", PROGRAM, 11), tmp_path / "good1.parquet")
        argv = ["allowlist", "learn", str(good), "-o", str(target)]
    else:
        (tmp_path / "dataset").mkdir()
        argv = ["expected", "learn", str(tmp_path / "dataset"), "-o", str(target)]
    proc = subprocess.run([*TRACER[:-1], "baseline.cli", *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr[-500:]
    line = _one_line(proc)
    assert "list.yaml: expected a YAML file of at most 200,000 lines to merge into" in line, line
    assert "found 200,004 lines" in line, line
    assert target.read_bytes() == text
