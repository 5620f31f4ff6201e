"""The recorder's per-thread bookkeeping with the real BPF program (root + bcc; need_bpf):
the call in progress lives in an array slot indexed by tid (bpf/syscall_recorder.c), so these
check what that must survive: threads whose tids share a slot, a thread other than the leader
calling execve (it comes back with the leader's pid), and that nothing stays attached to the
syscall tracepoints between recordings."""

from __future__ import annotations

import ctypes
import ctypes as ct
import textwrap

import polars as pl
import pytest
from record_support import record

THREADS = 6


def threaded_script(tmp_path) -> list[str]:
    """THREADS threads that are all inside a syscall (a pipe read) at once, then each open a
    file of its own: with one slot for all, every thread but one keeps its calls elsewhere."""
    script = tmp_path / "threads.py"
    script.write_text(textwrap.dedent(f"""
        import os, threading
        r, w = os.pipe()
        ready = threading.Barrier({THREADS} + 1)
        def work(i):
            ready.wait()
            os.read(r, 1)                      # all blocked in read at the same time
            try:
                os.stat({str(tmp_path)!r} + f"/missing-{{i}}.txt")
            except FileNotFoundError:
                pass
        threads = [threading.Thread(target=work, args=(i,)) for i in range({THREADS})]
        for t in threads:
            t.start()
        ready.wait()
        import time; time.sleep(0.2)
        os.write(w, b"x" * {THREADS})
        for t in threads:
            t.join()
    """))
    return ["/usr/bin/python3", "-S", str(script)]


def check_threads(rec, df, tmp_path) -> None:
    assert rec.exit_status == 0 and rec.lost_events == 0
    pid = rec.pid
    stats = df.filter(pl.col("path").str.starts_with(f"{tmp_path}/missing-"))
    assert sorted(stats["path"].to_list()) == [f"{tmp_path}/missing-{i}.txt" for i in range(THREADS)]
    assert set(stats["errno"]) == {"ENOENT"}
    assert stats["tid"].n_unique() == THREADS and set(stats["pid"]) == {pid}
    # every thread's blocking read of the pipe, with its one byte, and a latency covering the wait
    reads = df.filter((pl.col("probe") == "read") & (pl.col("tid") != pid) & pl.col("path").str.starts_with("pipe:"))
    assert reads.height == THREADS and set(reads["ret"]) == {1}
    assert reads["latency_ns"].min() > 1_000_000  # blocked for the main thread's 0.2 s sleep
    assert df["seq"].to_list() == list(range(df.height)) and df["ts_ns"].is_sorted()


def test_threads_sharing_one_slot_lose_nothing(need_bpf, tmp_path):
    from tracer.record.recorder import SyscallRecorder

    with SyscallRecorder(ringbuf_mb=4, slots=1) as crowded:  # every thread on slot 0
        rec, df = record(crowded, threaded_script(tmp_path))
        assert crowded.bpf[b"control"][ct.c_int(1)].value & 1  # the overflow hash was used
    check_threads(rec, df, tmp_path)


def test_threads_with_their_own_slots(recorder, tmp_path):
    rec, df = record(recorder, threaded_script(tmp_path))
    check_threads(rec, df, tmp_path)


def test_exec_from_a_thread_other_than_the_leader(recorder, tmp_path):
    """The exec'ing thread takes over the leader's pid: its execve (path read at entry) and
    everything the new image does are recorded under that pid."""
    script = tmp_path / "thread_exec.py"
    script.write_text(textwrap.dedent("""
        import os, platform, threading, time
        def run():
            # wait until the leader sleeps (in clock_nanosleep): calls it entered after the
            # execve would otherwise be its own (comm python3), legitimately recorded after it
            # (a fixed 0.3 s was a guess; on a loaded machine the leader may not be there yet)
            nr = {"x86_64": "230", "aarch64": "115"}[platform.machine()]
            while open(f"/proc/self/task/{os.getpid()}/syscall").read().split()[0] != nr:
                time.sleep(0.01)
            os.execv("/bin/echo", ["/bin/echo", "from-a-thread"])
        threading.Thread(target=run).start()
        time.sleep(30)
    """))
    rec, df = record(recorder, ["/usr/bin/python3", "-S", str(script)])
    assert rec.exit_status == 0 and rec.lost_events == 0
    pid = rec.pid
    execs = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/bin/echo"))
    assert execs.height == 1 and execs["ret"][0] == 0 and execs["pid"][0] == pid
    assert execs["tid"][0] != pid  # recorded with the tid it called execve from
    assert execs["comm"][0] == "echo" and execs["latency_ns"][0] > 0
    after = df.filter(pl.col("seq") > execs["seq"][0])
    assert set(after["tid"]) == {pid} and set(after["comm"]) == {"echo"}
    written = after.filter(pl.col("probe") == "write")
    assert written["output"].to_list() == ["from-a-thread\n"]
    assert after["probe"][-1] == "exit_group"


def test_nothing_attached_between_recordings(recorder):
    """Attached sys_enter/sys_exit programs put every syscall of the machine on the kernel's
    slow path: they are attached for a recording only. The sched fork/exit programs stay
    (a fork's or an exit's cost only; detaching them waits ~75 ms each), switched off, and so
    does the task_rename one (a rename's cost only)."""
    bpf = recorder.bpf
    rec, _ = record(recorder, ["/bin/true"])
    assert rec.exit_status == 0
    assert not bpf.raw_tracepoint_fds
    assert set(bpf.tracepoint_fds) <= {b"sched:sched_process_fork", b"sched:sched_process_exit", b"task:task_rename"}
    assert bpf[b"control"][ctypes.c_int(0)].value == 0
    with pytest.raises(Exception):  # noqa: B017 - bcc raises bare Exceptions
        bpf.detach_raw_tracepoint(b"sys_enter")


def test_dead_threads_leave_no_slot_behind(recorder):
    """sched_process_exit frees a dead thread's slot by the same key the syscall tracepoints
    use (its saved registers' address): after a recording of processes and threads that all
    ended, no slot of that recording is still held -- else a later thread on the same kernel
    stack would continue a dead one's call with its pid and comm."""
    rec, df = record(recorder, ["/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done; "
                                "/usr/bin/python3 -S -c 'import threading; "
                                "[threading.Thread(target=len, args=((),)).start() for _ in range(4)]'"])
    assert rec.exit_status == 0 and rec.lost_events == 0
    generation = recorder._generation
    used = [(v.key, v.owner) for v in recorder.bpf[b"slots"].values() if v.gen == generation]
    # (fewer slots than threads: a new thread often gets a dead one's kernel stack, so its key)
    assert used and not [u for u in used if u[0]]
    # each true process ran under its own pid and comm, none inherited a slot
    assert df.filter(pl.col("comm") == "python3")["tid"].n_unique() == 1 + 4
    trues = df.filter(pl.col("comm") == "true")
    assert trues["pid"].n_unique() == 5 and set(trues.group_by("pid").agg(pl.col("probe").first())["probe"]) == {"execve"}


def test_a_thread_renaming_itself_through_proc_is_seen_at_once(recorder):
    """A thread renaming itself by writing /proc/thread-self/comm (what pthread_setname_np does
    for another thread, and some runtimes for their own) carries the new name from that write on;
    the other threads keep theirs."""
    code = textwrap.dedent("""
        import os, threading
        def work():
            with open("/proc/thread-self/comm", "w") as f:
                f.write("loader-1")
            os.close(os.open("/dev/null", os.O_RDONLY))
        t = threading.Thread(target=work)
        t.start()
        t.join()
        os.close(os.open("/dev/zero", os.O_RDONLY))
    """)
    rec, df = record(recorder, ["/usr/bin/python3", "-S", "-c", code])
    assert rec.exit_status == 0 and rec.lost_events == 0
    worker = df.filter((pl.col("tid") != pl.col("pid")) & (pl.col("path") == "/dev/null"))
    assert worker["probe"].to_list() == ["openat", "close"]
    assert worker["comm"].to_list() == ["loader-1", "loader-1"]
    assert set(df.filter(pl.col("path") == "/dev/zero")["comm"]) == {"python3"}
