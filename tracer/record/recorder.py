"""Record every syscall of a command (or a running process) and its descendants with a bcc
program on the raw syscall tracepoints, into one tracebase `events` table.

    with SyscallRecorder() as recorder:          # compiles and loads bpf/syscall_recorder.c once
        rec = recorder.record(["ls", "-l"], label="good")
        rec.write("ls.parquet")
        rec = recorder.attach(1234, duration=30)   # tracer record -p 1234 -d 30

How a command is started: the BPF sched_process_fork hook is armed with the recorder's pid,
so the child subprocess spawns (with vfork: no copy of this process's page tables) is traced
from its birth. From then on the kernel follows it: the hook adds every child of a traced
process to the `traced` map and sched_process_exit removes it, so nothing is polled from
/proc. The child's own syscalls between its birth and its execve are dropped: the trace starts
at the command's execve.
When the command itself exits, recording goes on while a descendant it left behind (a daemon
a start script put in the background, `cmd &`, a double-forked and setsid'd server: every
process the kernel side follows, whatever its parent or session now) is still alive, up to
`linger` seconds (DEFAULT_LINGER; 0: stop with the command, like the recorder always did;
math.inf: until the last one exits, like strace -f), and stops as soon as the last one exits.
It stops after `duration` in any case (the command is left running, like bcc tools leave
the traced program alone). Threads still alive when recording stops are *cut off*, not
ended: their tids are kept in the trace's metadata (tracer.schema.CUT_OFF_KEY) so the differ
does not read the end of their stream as the thread stopping early. The exit status stays
the command's.

Signals while a command runs (main thread only): SIGTERM, SIGHUP and SIGINT are forwarded
to the command and the descendants it has (as a terminal signals a whole foreground job), and
the command ends the recording by exiting; if it is still alive `kill_after` seconds later,
it and its descendants are SIGKILLed. Except Ctrl-C: when the recorder runs in the foreground of a
terminal, the terminal sent SIGINT to the command too (same process group), so it is not sent
again; a second one SIGKILLs the command. Either way the recording keeps every event up to
the command's exit (and its descendants', during the linger) and Recording.signal names the
signal. A stop signal that arrives during the linger (the command has exited) ends the
recording at once and is not forwarded: what is left running is no longer the user's
foreground job (Ctrl-C reached those still in its process group anyway); they are cut off.
SIGUSR1 and SIGUSR2 are passed to the command alone and recording goes on (`FORWARDED_SIGNALS`);
with no command to pass them to (before its spawn, after its exit, attached), they are dropped.

Attaching (-p): the running process's pid goes into the same map, so its threads and the
children it creates from then on are followed the same way; its cwd and fd table come from
/proc (tracer.record.procfs). Recording stops when it exits (seen through a pidfd) and the
children it created since are gone (the same linger as a command's), after `duration`, or on
SIGINT/SIGTERM/SIGHUP (the process is not touched).

The BPF programs are attached for a recording only and detached after it: an attached
sys_enter/sys_exit program puts every syscall of the machine on the kernel's slow path.

Records are batched per CPU by the BPF program and reach the ring buffer a batch at a time, in
exit order; tracer.record.ringbuf copies what arrived from the mapped buffer every POLL_MS (no
wakeups, no per-record work while the command runs), and at the end the part-filled batches
are read from their map. tracer.record.decode splits the batches into records, sorts them by
entry time, replays the calls that need it through tracer.record.fdtable to resolve relative
paths, dirfds and fds (and which writes went to stdout/stderr, a tty or a pipe), and builds the
table columnar with the trace-level columns on every row (see tracer.schema).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes as ct
import errno
import math
import os
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer import resources
from tracer.errors import EnvironmentProblem, TracebaseError
from tracer.limits import require_open_files
from tracer.pools import children_waitable
from tracer.record.btf import pt_regs_cast_ids
from tracer.record.decode import (
    HEADER,
    HEADER_SIZE,
    Decoded,
    build_table,
    decode,
    resolve_columns,
    socket_errors,
    split_records,
)
from tracer.record.metadata_keys import check_user_meta
from tracer.record.procfs import PinnedProcess, pin_process, process_exited, snapshot
from tracer.record.ringbuf import Batch, RingReader, ring_reader, samples
from tracer.record.syscalls import X86_64_NAMES, bpf_spec_table, syscall_names
from tracer.schema import CUT_OFF_KEY, format_tids, write_table
from tracer.startup import users_environment

BPF_SOURCE = resources.BPF_DIR / "syscall_recorder.c"
LABEL_KINDS = {"good": "good", "bad": "failure", None: "full"}
POLL_MS = 10  # how often the ring buffer is read (the BPF side never wakes us)
MAX_OUTPUT = 256  # bytes of a write-like call's output kept (output column)
STAGE_FLUSH = 8192  # bytes of records the BPF side batches per CPU per ring buffer record
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Signals a wrapper passes on and goes on recording: they are the command's (a daemon's log
# reopen, a dump of its state), and their default action ended `tracer record` silently,
# losing the recording, with the command left running untraced. Attached (-p), ignored.
FORWARDED_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)
# Seconds recording goes on after the command exited while descendants it left are alive. A
# start script's daemon that fails does so as it starts (reading its config, binding its
# port): within ~1 s even on a loaded machine (an interpreter's start-up alone is 0.1-0.5 s
# here); 3 s leaves that a 3x margin, and a daemon that runs on costs the recording 3 s.
DEFAULT_LINGER = 3.0
KFUNC_PLACEHOLDER = 30000  # helper number syscall_recorder.c calls for bpf_rdonly_cast (see _patch_kfunc_calls)
_INSN = struct.Struct("<BBhi")  # struct bpf_insn: code, dst_reg | src_reg << 4, off, imm
BPF_CALL = 0x85
BPF_PSEUDO_KFUNC_CALL = 2

__all__ = ["DEFAULT_LINGER", "HEADER", "HEADER_SIZE", "Recording", "SyscallRecorder", "resolve_command"]


class CommandNotFound(TracebaseError):
    """Like a shell: the command could not be found (exit status 127)."""

    exit_status = 127


class CommandNotExecutable(TracebaseError):
    """Like a shell: the command was found but could not be executed (exit status 126)."""

    exit_status = 126


def resolve_command(name: str, env: Mapping[str, str] | None = None) -> str:
    """The executable `name` refers to (searching PATH like execvp); CommandNotFound if none."""
    if "/" in name:
        if not os.path.exists(name):
            raise CommandNotFound(f"{name}: no such file")
        # found but not runnable is 126 in every shell (`sh -c /tmp`: "Is a directory"), not
        # 127: a script telling "missing" from "broken" by the status reads it as a shell's
        if os.path.isdir(name):
            raise CommandNotExecutable(f"{name}: not an executable file (a directory)")
        if not os.access(name, os.X_OK):
            raise CommandNotExecutable(f"{name}: not an executable file (permission denied)")
        return name
    search = (env or os.environ).get("PATH", os.defpath)
    found = shutil.which(name, path=search)
    if not found:
        raise CommandNotFound(f"{name}: command not found (PATH={search})")
    return found


def thread_slots(limit: int = 1 << 16) -> int:
    """Per-thread slots of the BPF program: pid_max rounded up to a power of two, at most
    `limit` (a thread whose slot another traced thread holds uses a hash instead)."""
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = limit
    return min(limit, 1 << max(10, (pid_max - 1).bit_length()))


def tracepoint_format(event: str) -> str:
    """The format of tracepoint `event` ("sched/sched_process_exit"), or "" if the kernel has
    none (or tracefs cannot be read)."""
    from tracer.privilege import tracefs_dir

    base = tracefs_dir()
    try:
        return (base / "events" / event / "format").read_text() if base else ""
    except OSError:
        return ""


def exit_has_group_dead() -> bool:
    """Does the sched_process_exit tracepoint say whether the thread group ended (6.16+)?"""
    return "group_dead;" in tracepoint_format("sched/sched_process_exit")


def has_task_rename() -> bool:
    """Does the kernel have the task_rename tracepoint with the new name in its record?"""
    fmt = tracepoint_format("task/task_rename")
    return "newcomm[16];" in fmt and "pid_t pid;" in fmt


def exit_status_of(wait_status: int) -> int:
    """Shell convention: the exit code, or 128 + signal number when killed."""
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.waitstatus_to_exitcode(wait_status)


@dataclass
class Recording:
    """One recorded execution: the events table plus the trace-level facts."""

    events: pa.Table
    trace_id: str
    command: str
    exit_status: int | None  # None: still running when recording stopped, or not observable
    lost_events: int
    start_time: datetime
    end_time: datetime
    raw_records: int
    metadata: dict[str, str] = field(default_factory=dict)
    pid: int = 0  # the recorded process (the command, or the -p target)
    stop_reason: str = "exited"  # exited | duration | linger | signal
    signal: str | None = None  # the signal that stopped the recording (SIGTERM, ...), if any
    cut_off: frozenset[int] = frozenset()  # tids still running when recording stopped
    exited: bool = True  # the recorded process exited while recorded (else -d or a signal came first)

    @property
    def duration_s(self) -> float:
        return (self.end_time - self.start_time).total_seconds()

    def write(self, path: str | os.PathLike) -> Path:
        """Write the trace as one Parquet file, atomically."""
        return write_table(self.events, path, "events", {"recorder": "tracer record"})


# The fewest open files the recorder starts with: bcc's maps, programs, the ring buffer and the
# attached tracepoints take ~25-30 descriptors (measured: a recording of /bin/true failed at 24-28,
# ran at 30). Below, bcc printed "could not open bpf map ... Too many open files" and the load
# failed as "check `dmesg` and that the kernel allows BPF tracepoint programs".
RECORD_MIN_FILES = 32


class SyscallRecorder:
    """Compiles and loads the BPF program once; records commands one after another.

    ringbuf_mb: ring buffer size (rounded to a power of two of pages).
    max_path: bytes kept per path argument.
    failures_only: record only failing calls (`tracer record -x`).
    slots: per-thread slots of the BPF program (a power of two; default: pid_max rounded up,
    at most 65536); threads whose tids are equal modulo it share one, the later ones fall back
    to a hash (tests use a tiny number to exercise that).
    """

    def __init__(self, ringbuf_mb: int = 64, max_path: int = 4096, failures_only: bool = False,
                 slots: int | None = None):
        if max_path & (max_path - 1) or not 64 <= max_path <= 4096:
            raise TracebaseError(f"max_path: expected a power of two in 64..4096, found {max_path}")
        if slots is not None and (slots < 1 or slots & (slots - 1)):
            raise TracebaseError(f"slots: expected a power of two, found {slots}")
        self.slots = slots or thread_slots()
        if not 1 <= ringbuf_mb <= 1024:
            raise TracebaseError(f"--ringbuf-mb: expected 1..1024, found {ringbuf_mb}")
        self.ringbuf_mb = ringbuf_mb
        self.max_path = max_path
        self.failures_only = failures_only
        self.bpf = None
        self.regs_cast = False  # argument registers read through bpf_rdonly_cast (see load)
        self._generation = 0
        self._ring: RingReader | None = None
        self._spans: list[bytes] = []
        self._names = syscall_names()
        self.notes: list[str] = []

    # -- loading ---------------------------------------------------------------------------
    @property
    def ringbuf_pages(self) -> int:
        return 1 << max(0, (self.ringbuf_mb * 1024 * 1024 // os.sysconf("SC_PAGE_SIZE")) - 1).bit_length()

    def cflags(self, regs_cast: bool = False) -> list[str]:
        nr = {name: n for n, name in self._names.items()}
        ids = pt_regs_cast_ids() if regs_cast else None
        cast = [f"-DPT_REGS_BTF_ID={ids[0]}", f"-DKFUNC_PLACEHOLDER={KFUNC_PLACEHOLDER}"] if ids else []
        return [*cast,
            f"-DRINGBUF_PAGES={self.ringbuf_pages}",
            f"-DMAX_PATH={self.max_path}",
            f"-DMAX_OUTPUT={MAX_OUTPUT}",
            f"-DFAILURES_ONLY={int(self.failures_only)}",
            f"-DSTAGE_FLUSH={STAGE_FLUSH}",
            f"-DNR_EXECVE={nr['execve']}",
            f"-DNR_EXECVEAT={nr['execveat']}",
            f"-DNR_PRCTL={nr['prctl']}",
            f"-DNR_EXIT={nr['exit']}",
            f"-DNR_EXIT_GROUP={nr['exit_group']}",
            f"-DSLOTS={self.slots}",
            f"-DGROUP_DEAD={int(exit_has_group_dead())}",
            f"-DTASK_RENAME={int(has_task_rename())}",
        ]

    def load(self) -> SyscallRecorder:
        if self.bpf is not None:
            return self
        from tracer.privilege import check_recording_environment

        note = check_recording_environment()
        if note:
            self.notes.append(note)
        require_open_files(RECORD_MIN_FILES, "the BPF maps, programs and ring buffer",
                           "; a command that should meet a lower limit can set it itself: "
                           "tracer record -- sh -c 'ulimit -n 16; exec ./job'")
        # First with the argument registers read through bpf_rdonly_cast (kernels from 6.2
        # with BTF); a kernel without it, or refusing it, gets the helper calls instead.
        for regs_cast in ((True, False) if pt_regs_cast_ids() else (False,)):
            try:
                # a kernel that has the kfunc but refuses the call would have bcc print the
                # verifier's whole log on our stderr, for a load that then succeeds without it
                with _stderr_kept(quiet=regs_cast) as log:
                    self.bpf = self._compile(regs_cast)
                self.regs_cast = regs_cast
                break
            except Exception as exc:  # bcc raises bare Exceptions for compile/load failures
                if regs_cast:
                    first = next((line for line in log().splitlines() if line.strip()), str(exc))
                    self.notes.append(f"bpf_rdonly_cast refused ({first.strip()[:200]}); "
                                      "argument registers are read with bpf_probe_read_kernel")
                    continue
                raise EnvironmentProblem(
                    f"loading {BPF_SOURCE.name} failed ({str(exc).splitlines()[0]}); "
                    "check `dmesg` and that the kernel allows BPF tracepoint programs"
                ) from None
        try:
            specs = self.bpf[b"specs"]
            for nr, bits in bpf_spec_table().items():
                specs[ct.c_uint(nr)] = ct.c_uint(bits)
            # (bcc attached the tracepoint__* programs already: they stay, stopped by control[0]
            # like the others between recordings -- see _stop)
            self._set_recording(False)
            self._ring = ring_reader(self.bpf, b"events", self.ringbuf_pages)
        except BaseException:  # (`with` runs no __exit__ for a failed __enter__)
            self.close()
            raise
        return self

    def _compile(self, regs_cast: bool):
        """Compile and load the programs (bcc loads and attaches the sched tracepoints at
        once; the syscall programs are loaded here, after their kfunc calls are rewritten)."""
        from tracer.privilege import compiler_environment, load_bcc

        BPF = load_bcc().BPF  # noqa: N806 - bcc's class name
        with compiler_environment():
            bpf = BPF(src_file=str(BPF_SOURCE).encode(), cflags=self.cflags(regs_cast))
        # bcc registers its cleanup to run at exit; `close` runs it (and the kernel drops what
        # a killed process had attached). Run again at exit after a stop had cut ours short, it
        # detached what was gone: "Failed to detach BPF from tracepoint" and a traceback.
        atexit.unregister(bpf.cleanup)
        try:
            for _kind, _hook, fn in (p for p in self.PROGRAMS if p[0] == "raw"):
                if regs_cast:
                    _patch_kfunc_calls(bpf, fn, pt_regs_cast_ids()[1])
                bpf.load_func(fn, BPF.RAW_TRACEPOINT)
        except BaseException:  # (a stop too: bcc's cleanup no longer runs at exit)
            with contextlib.suppress(Exception):
                bpf.cleanup()
            raise
        return bpf

    # (kind, hook, function): attached for each recording, detached after it, so that between
    # recordings no process pays for the syscall tracepoints (each attached sys_enter/sys_exit
    # program puts every syscall of the machine on the kernel's slow path)
    PROGRAMS = (
        ("raw", b"sys_enter", b"syscall_enter"),
        ("raw", b"sys_exit", b"syscall_exit"),
        ("tp", b"sched:sched_process_fork", b"tracepoint__sched__sched_process_fork"),
        ("tp", b"sched:sched_process_exit", b"tracepoint__sched__sched_process_exit"),
    )

    def _attach(self) -> None:
        # (what is attached is bcc's: its tracepoint_fds and raw_tracepoint_fds)
        try:
            for kind, hook, fn in self.PROGRAMS:
                if kind == "raw":
                    if hook not in self.bpf.raw_tracepoint_fds:
                        self.bpf.attach_raw_tracepoint(tp=hook, fn_name=fn)
                elif hook not in self.bpf.tracepoint_fds:  # (bcc attaches tracepoint__* at load)
                    self.bpf.attach_tracepoint(tp=hook, fn_name=fn)
        except Exception as exc:  # bcc raises bare Exceptions
            self._detach()
            raise EnvironmentProblem(
                f"attaching {BPF_SOURCE.name} to {hook.decode()} failed "
                f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            ) from None

    def _detach(self, kinds: tuple[str, ...] = ("raw", "tp")) -> None:
        for kind, hook, _fn in self.PROGRAMS:
            if kind not in kinds:
                continue
            with contextlib.suppress(Exception):  # bcc raises bare Exceptions
                if kind == "raw":
                    self.bpf.detach_raw_tracepoint(hook)
                else:
                    self.bpf.detach_tracepoint(hook)

    def close(self) -> None:
        if self._ring is not None:
            self._ring.close()
            self._ring = None
        if self.bpf is not None:
            with contextlib.suppress(Exception):  # bcc's detach errors must not hide the result
                self.bpf.cleanup()  # (detaches every program still attached)
            self.bpf = None

    def __enter__(self) -> SyscallRecorder:
        return self.load()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- recording -------------------------------------------------------------------------
    def _set_recording(self, on: bool) -> None:
        """control[0] is the recording's generation (0: stopped). A new one per recording: the
        BPF side ignores per-thread slots of earlier recordings without our clearing them."""
        if on:
            self._generation = self._generation % 0xFFFFFFFF + 1
        self.bpf[b"control"][ct.c_int(0)] = ct.c_uint(self._generation if on else 0)

    def _reset(self) -> int:
        """Forget the previous recording and switch recording on; returns the CLOCK_MONOTONIC
        time from which records belong to the new one (threads still inside a call entered
        earlier are ignored)."""
        b = self.bpf
        self._set_recording(False)
        for name in (b"traced", b"lost", b"overflow", b"execs"):
            b[name].clear()
        b[b"control"][ct.c_int(1)] = ct.c_uint(0)
        self._take_stages()
        self._ring.skip()
        self._spans = []
        self._attach()
        since = time.monotonic_ns()  # bpf_ktime_get_ns is CLOCK_MONOTONIC too
        self._set_recording(True)
        return since

    def _take_stages(self) -> list[bytes]:
        """The part-filled per-CPU batches (records the BPF side has not handed to the ring
        buffer yet), emptied. Only while recording is switched off: nothing writes them then."""
        stages = self.bpf[b"stages"]
        per_cpu = stages[ct.c_int(0)]
        out = [ct.string_at(ct.addressof(v.buf), v.pos) for v in per_cpu if v.pos]
        if out:
            stages[ct.c_int(0)] = stages.Leaf()
        return out

    def _poll(self) -> None:
        """Take what the ring buffer holds once it is an eighth full (one copy, no per-record
        work): a command that fits in the buffer leaves it all to _drain, after it exited,
        so the recorder takes no CPU from it while it runs (on a small machine it competes
        for a core)."""
        if self._ring.pending() < self._ring.size // 8:
            return
        if (span := self._ring.take()) is not None:
            self._spans.append(span)

    def _drain(self) -> None:
        """Take everything committed (the end of a recording)."""
        for _ in range(100):
            while (span := self._ring.take(careful=True)) is not None:
                self._spans.append(span)
            if not self._ring.pending():
                return
            time.sleep(0.001)  # a record reserved but not yet committed: microseconds

    def _lost(self) -> int:
        return int(sum(self.bpf[b"lost"][ct.c_int(0)]))

    def record(
        self,
        argv: Sequence[str],
        *,
        label: str | None = None,
        host: str | None = None,
        meta: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None,
        env: Mapping[str, str] | None = None,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
        timeout: float | None = None,
        duration: float | None = None,
        kill_after: float = 5.0,
        linger: float = DEFAULT_LINGER,
    ) -> Recording:
        """Run argv under the tracer and return its Recording (not yet written).

        stdin/stdout/stderr: file descriptors for the child (default: inherit).
        timeout: SIGKILL the command and the descendants followed after this many seconds
        (exit status 137).
        duration: stop recording after this many seconds and leave the command running (like
        bcc tools, which stop tracing, not the traced program); its exit status is then None
        and the caller may wait for Recording.pid.
        kill_after: after forwarding SIGTERM/SIGHUP/SIGINT to the command, SIGKILL it if it
        is still running this many seconds later.
        linger: after the command exited, keep recording while descendants it left are
        alive, at most this many seconds (0: stop with the command; math.inf: until the last
        one exits). `duration` bounds it too.
        """
        check_user_meta(meta)
        if label not in LABEL_KINDS:
            raise TracebaseError(f"label: expected good or bad, found {label!r}")
        if not argv:
            raise TracebaseError("no command to record")
        linger = check_linger(linger)
        self.load()
        # (not this process's own settings: the command gets the environment we were given)
        env = users_environment() if env is None else dict(env)
        exe = resolve_command(argv[0], env)
        run_cwd = os.path.abspath(cwd if cwd is not None else os.getcwd())
        if not os.path.isdir(run_cwd):
            raise TracebaseError(f"{run_cwd}: working directory does not exist")
        initial_fds = _describe_fds({0: stdin, 1: stdout, 2: stderr})
        since_ns = self._reset()

        start_time = datetime.now(UTC)
        # Stop signals are noted from before the spawn (exec resets their handlers in the
        # child) so that none can kill the recorder before _follow reads them.
        with StopSignals((*STOP_SIGNALS, *FORWARDED_SIGNALS)) as held:
            pid = self._spawn(exe, list(argv), env, run_cwd, (stdin, stdout, stderr))
            status, stopped_by, stop_reason = self._follow(pid, timeout, duration, kill_after, held, linger)
        batch, lost, end_time, cut_off = self._stop()
        exit_status = exit_status_of(status) if status is not None else None
        info = {
            "cwd": run_cwd,
            "uid": str(os.getuid()),
            "label": label or "",
            "failures_only": str(self.failures_only).lower(),
            "argv": shlex.join(argv),
            "linger_s": f"{linger:g}",
        }
        if stop_reason != "exited":
            info["stopped"] = stop_reason
        if stopped_by:
            info["signal"] = stopped_by
        if cut_off:
            info[CUT_OFF_KEY] = format_tids(cut_off)
        decoded = self._decode(batch, trim_before_exec_of=pid, since_ns=since_ns)
        recording = self._recording(
            decoded, raw_records=len(batch), pid=pid, command=shlex.join(argv),
            exit_status=exit_status, lost=lost, start_time=start_time, end_time=end_time,
            label=label, host=host, meta=meta, info=info, cwd=run_cwd, initial_fds=initial_fds,
            stop_reason=stop_reason,
        )
        recording.signal = stopped_by
        recording.cut_off = cut_off
        recording.exited = status is not None
        return recording

    def _spawn(self, exe: str, argv: list[str], env: dict[str, str], cwd: str,
               stdio: tuple[int | None, int | None, int | None]) -> int:
        """Start the command, traced from its birth: the BPF fork hook follows the next child
        of this process while control[2] holds our pid. subprocess spawns it with vfork (no
        copy of this large process's page tables: os.fork and a gate cost 10-40 ms of the
        command's wall time); the child's own calls before its execve are trimmed at decode."""
        control = self.bpf[b"control"]
        children_waitable()  # an inherited SIG_IGN would let the kernel reap it: no exit status
        control[ct.c_int(2)] = ct.c_uint(os.getpid())
        try:
            proc = subprocess.Popen(argv, executable=exe, env=env, cwd=cwd, stdin=stdio[0],
                                    stdout=stdio[1], stderr=stdio[2], close_fds=False,
                                    restore_signals=True)
        except OSError as exc:
            self._stop()
            if exc.errno == errno.ENOENT:
                # the file exists (resolve_command saw it): what execve did not find is the
                # interpreter its #! line names, or its ELF loader; a shell says 127 for it
                raise CommandNotFound(f"{argv[0]}: cannot execute: required file not found "
                                      f"(the interpreter its #! line or its ELF header names)") from None
            raise CommandNotExecutable(f"{argv[0]}: {exc.strerror or exc}") from None
        finally:
            control[ct.c_int(2)] = ct.c_uint(0)
            self._forget_own_threads()
        # _follow waits for it; subprocess must never reap it behind our back (or a caller's,
        # when the recording stops before the command ends)
        proc._child_created = False
        return proc.pid

    def attach(
        self,
        pid: int,
        *,
        duration: float | None = None,
        label: str | None = None,
        host: str | None = None,
        meta: Mapping[str, str] | None = None,
        on_start: Callable[[], None] | None = None,
        linger: float = DEFAULT_LINGER,
        pinned: PinnedProcess | None = None,
    ) -> Recording:
        """Record an already running process (`tracer record -p PID`) and the descendants it
        creates from now on, until it exits (and, up to `linger` seconds, until those of its
        new descendants still alive then exit too, as for a command), `duration` seconds
        pass, or SIGINT/SIGTERM/SIGHUP.

        Its cwd and fd table are read from /proc first so paths resolve. Its exit status comes
        from its exit_group call when recorded; None when it is still running (or was killed
        by a signal: only its parent can wait for it). on_start is called once recording has
        begun and the stop signals are handled (e.g. to tell the user). `pinned`: the process
        as the caller pinned it before loading the probes (procfs.pin_process; closed here), so
        one that exits during the load is named so, not "no such process".
        """
        check_user_meta(meta)

        if label not in LABEL_KINDS:
            raise TracebaseError(f"label: expected good or bad, found {label!r}")
        if pid == os.getpid():
            raise TracebaseError(f"-p {pid}: that is the recorder itself")
        linger = check_linger(linger)
        pidfd = pinned.fd if pinned is not None else pin_process(pid).fd
        try:
            self.load()
            try:
                if process_exited(pidfd):
                    raise TracebaseError(f"-p {pid}: no such process")
                target = snapshot(pid)
            except TracebaseError:
                if not process_exited(pidfd):
                    raise
                took = f" ({time.monotonic() - pinned.since:.1f} s of loading the probes)" if pinned is not None else ""
                raise TracebaseError(
                    f"-p {pid}: expected a running process, found it exited during the attach{took}, before any of "
                    f"its calls could be recorded; record a short-lived program from its start: "
                    f"tracer record -- COMMAND") from None
            since_ns = self._reset()
            start_time = datetime.now(UTC)
            with StopSignals((*STOP_SIGNALS, *FORWARDED_SIGNALS)) as held:
                self.bpf[b"traced"][ct.c_uint(pid)] = ct.c_uint(target.ppid)
                stop_reason, stopped_by, gone = self._follow_attached(pidfd, duration, on_start, held, linger)
        finally:
            os.close(pidfd)
        batch, lost, end_time, cut_off = self._stop()
        decoded = self._decode(batch, trim_before_exec_of=None, since_ns=since_ns)
        exit_status = _exit_group_status(decoded.head, pid) if gone else None
        info = {
            "cwd": target.cwd,
            "uid": str(target.uid),
            "label": label or "",
            "failures_only": str(self.failures_only).lower(),
            "argv": target.command,
            "attached_pid": str(pid),
            "stopped": stop_reason,
            "linger_s": f"{linger:g}",
        }
        if stopped_by:
            info["signal"] = stopped_by
        if cut_off:
            info[CUT_OFF_KEY] = format_tids(cut_off)
        recording = self._recording(
            decoded, raw_records=len(batch), pid=pid, command=target.command,
            exit_status=exit_status, lost=lost, start_time=start_time, end_time=end_time,
            label=label, host=host, meta=meta, info=info, cwd=target.cwd,
            initial_fds=target.fds, cloexec_fds=target.cloexec_fds, stop_reason=stop_reason,
        )
        recording.signal = stopped_by
        recording.cut_off = cut_off
        recording.exited = gone
        return recording

    def _stop(self) -> tuple[Batch, int, datetime, frozenset[int]]:
        """Stop recording, drain the ring buffer and the per-CPU batches; (records, lost,
        end time, the threads still alive: cut off)."""
        end_time = datetime.now(UTC)
        # Threads alive right before the switch-off and right after it are cut off: one that
        # exits in between may have its end recorded or not, and a stream that merely stops
        # must never read as a thread ending early (marking one that did end costs less).
        cut_off = _threads_of(self._followed())
        self._set_recording(False)
        # The syscall programs are detached: attached, they put every syscall of the machine
        # on the kernel's slow path. The sched_process_fork/exit programs stay (they run at a
        # fork or an exit only: the fork's follows only a traced parent or the spawner, the
        # exit's frees the ending thread's slot and map entries): a perf-event
        # tracepoint's detach waits for an RCU grace period, ~75 ms each here, twice per
        # recording -- most of a short recording's time, minutes of the test suite's
        # thousands. close() detaches them.
        self._detach(kinds=("raw",))
        cut_off |= _threads_of(self._followed())
        self.bpf[b"traced"].clear()  # stop following descendants that outlive the recording
        time.sleep(0.002)  # programs already running finish in microseconds
        self._drain()
        batches = samples(self._spans) if self._spans else samples([b""])
        self._spans = []
        regions = [batches.data[o:o + n] for o, n in
                   zip(batches.offsets.tolist(), batches.lengths.tolist(), strict=True)]
        regions += self._take_stages()
        records = split_records(regions) if regions else split_records([b""])
        return records, self._lost() + batches.busy, end_time, cut_off

    def _recording(self, decoded, *, raw_records: int, pid: int, command: str,
                   exit_status: int | None, lost: int, start_time: datetime, end_time: datetime,
                   label: str | None, host: str | None, meta: Mapping[str, str] | None,
                   info: dict[str, str], cwd: str, initial_fds: dict[int, str | None],
                   cloexec_fds: frozenset[int] = frozenset(), stop_reason: str) -> Recording:
        host = host or socket.gethostname()
        trace_id = f"{host}:rec-{start_time:%Y%m%dT%H%M%S.%f}Z-{pid}"
        info = {**info, **dict(meta or {})}
        events = self._events_table(
            decoded, cwd=cwd, initial_fds=initial_fds, cloexec_fds=cloexec_fds,
            trace=dict(
                trace_id=trace_id, kind=LABEL_KINDS[label], command=command,
                exit_status=exit_status, start_time=start_time, end_time=end_time, host=host,
                kernel_release=os.uname().release, lost_events=lost,
                job_id=(meta or {}).get("job_id"), metadata=info,
            ),
        )
        return Recording(
            events=events, trace_id=trace_id, command=command, exit_status=exit_status,
            lost_events=lost, start_time=start_time, end_time=end_time,
            raw_records=raw_records, metadata=info, pid=pid, stop_reason=stop_reason,
        )

    def _follow(self, pid: int, timeout: float | None, duration: float | None,
                kill_after: float, held: StopSignals,
                linger: float = 0.0) -> tuple[int | None, str | None, str]:
        """Consume the ring buffer until the command exits, then through the linger (see
        _linger); returns (its wait status, or None when `duration` elapsed first and the
        command is left running; the name of the stop signal the recorder received, if any;
        why recording stopped: exited | duration | linger | signal). See the module docstring
        for signals."""
        pidfd = os.pidfd_open(pid)
        exited = select.poll()
        exited.register(pidfd, select.POLLIN)
        now = time.monotonic()
        deadline = now + timeout if timeout else None
        stop_at = now + duration if duration else None
        stopped_by: str | None = None
        terminal_interrupts = 0
        kill_at: float | None = None
        foreground = in_terminal_foreground()
        try:
            while True:
                exited.poll(POLL_MS)
                self._poll()
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                for sig in held.pending():
                    if sig in FORWARDED_SIGNALS:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, sig)  # (not reaped yet: the pid is still the command's)
                        continue
                    stopped_by = stopped_by or sig.name
                    if sig == signal.SIGINT and foreground:
                        # Ctrl-C: the terminal sent it to the command's process group too
                        terminal_interrupts += 1
                        if terminal_interrupts > 1:
                            self._signal_tree(pid, signal.SIGKILL)
                    else:
                        self._signal_tree(pid, sig)
                        if kill_at is None:
                            kill_at = time.monotonic() + kill_after
                now = time.monotonic()
                if stop_at and now >= stop_at:
                    return None, stopped_by, "duration"
                if deadline and now > deadline:
                    # the descendants too: with the command gone they would keep the linger
                    self._signal_tree(pid, signal.SIGKILL)
                    deadline = None
                if kill_at is not None and now > kill_at:
                    self._signal_tree(pid, signal.SIGKILL)  # it ignored the signal
                    kill_at = None
        finally:
            os.close(pidfd)
        # (the command is reaped: its pid may be another process's now, never signal it again)
        reason, late = self._linger(linger, stop_at, held, [t for t in (deadline, kill_at) if t is not None])
        return status, stopped_by or late, reason

    def _followed(self) -> list[int]:
        """The processes and threads the kernel side follows that are alive (the `traced`
        map: fork adds, exit removes; an id no longer in use -- a thread that exec'd left its
        old tid behind -- is skipped), never the recorder's own."""
        alive, ours = [], _own_threads()
        for key in self.bpf[b"traced"]:
            tid = int(key.value)
            if tid in ours:
                continue  # a thread of ours started while spawning the command (_forget_own_threads)
            try:
                os.kill(tid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            alive.append(tid)
        return alive

    def _linger(self, linger: float, stop_at: float | None, held: StopSignals,
                kill_at: list[float]) -> tuple[str, str | None]:
        """After the recorded process exited: keep recording while a process it left behind
        is followed and alive, at most `linger` seconds and not past `stop_at`; SIGKILL them
        at a pending kill time (`kill_at`: a forwarded stop signal's grace or the timeout).
        Returns why recording stops (exited: none left; linger; duration; signal, with its
        name: a stop signal ends the linger at once and is not forwarded)."""
        if linger <= 0:
            return "exited", None
        until = time.monotonic() + linger
        while self._followed():
            for sig in held.pending():
                if sig not in FORWARDED_SIGNALS:  # (the command is gone: nothing to pass them to)
                    return "signal", sig.name
            now = time.monotonic()
            if stop_at and now >= stop_at:
                return "duration", None
            if now >= until:
                return "linger", None
            if kill_at and now > min(kill_at):
                self._signal_tree(None, signal.SIGKILL)
                kill_at = []
            time.sleep(POLL_MS / 1000)
            self._poll()
        return "exited", None

    def _forget_own_threads(self) -> None:
        """Drop from the `traced` map the threads this process started while the fork hook
        followed its children (a library's worker pool growing during the spawn): kill() on a
        thread's id signals its whole process, so a forwarded stop signal, or the SIGKILL
        after the grace, would otherwise reach the recorder itself."""
        traced = self.bpf[b"traced"]
        for tid in _own_threads():
            with contextlib.suppress(KeyError):
                del traced[ct.c_uint(tid)]

    def _signal_tree(self, pid: int | None, sig: int) -> None:
        """Send sig to the command (None: it has been reaped) and to every descendant still
        followed, as a terminal does to a foreground job: a shell killed by it would
        otherwise leave its children running. Never to a thread of ours (see
        _forget_own_threads: one may have started since)."""
        targets = {int(k.value) for k in self.bpf[b"traced"]}
        if pid is not None:
            targets.add(pid)
        targets -= _own_threads()  # (our pid among them)
        for target in sorted(targets, key=lambda t: t != pid):  # the command first
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, sig)

    def _follow_attached(self, pidfd: int, duration: float | None,
                         on_start: Callable[[], None] | None,
                         held: StopSignals, linger: float = 0.0) -> tuple[str, str | None, bool]:
        """Consume the ring buffer until the process exits ("exited"; then through the
        linger, as for a command: "linger" when it ran out), the duration elapses
        ("duration") or a stop signal arrives ("signal", and its name); the process is not
        touched. The last item says whether it exited."""
        exited = select.poll()
        exited.register(pidfd, select.POLLIN)
        stop_at = time.monotonic() + duration if duration else None
        if on_start is not None:
            on_start()
        while True:
            exited.poll(POLL_MS)
            self._poll()
            if exited.poll(0):
                return (*self._linger(linger, stop_at, held, []), True)
            for sig in held.pending():
                if sig not in FORWARDED_SIGNALS:  # (not our process: never passed on)
                    return "signal", sig.name, False
            if stop_at and time.monotonic() >= stop_at:
                return "duration", None, False

    # -- decoding (tracer.record.decode) -----------------------------------------------------------
    def _decode(self, batch: Batch, trim_before_exec_of: int | None,
                since_ns: int = 0) -> Decoded:
        execve_nrs = [nr for nr, name in self._names.items() if name in ("execve", "execveat")]
        return decode(batch, execve_nrs, trim_before_exec_of, since_ns)

    def _events_table(self, decoded: Decoded, cwd: str, initial_fds: dict[int, str | None],
                      trace: dict, cloexec_fds: frozenset[int] = frozenset()) -> pa.Table:
        columns = resolve_columns(decoded, self._names, cwd, initial_fds, cloexec_fds)
        return build_table(decoded.head, columns, self._names, trace, self.failures_only,
                           socket_errors(decoded))


class StopSignals:
    """While active (main thread only), SIGINT/SIGTERM/SIGHUP only note themselves; the
    recording loop reads them with pending() and decides (see _follow). A handler rather than
    a blocked mask: library threads (OpenBLAS, Arrow) would otherwise take the signal with its
    default action. Nests: an inner one (a recording) takes the signals while it runs, the
    outer one (the CLI, covering the write too) gets those that arrive after."""

    def __init__(self, signals: Sequence[int] = STOP_SIGNALS):
        import threading

        main = threading.current_thread() is threading.main_thread()
        self.signals = tuple(signals) if main else ()
        self._got: list[int] = []
        self._previous: dict[int, object] = {}

    def _note(self, sig: int, _frame) -> None:
        self._got.append(sig)

    def __enter__(self) -> StopSignals:
        for sig in self.signals:
            if sig == signal.SIGHUP and signal.getsignal(sig) is signal.SIG_IGN:
                continue  # nohup's: it stays ignored, for the command too (README)
            self._previous[sig] = signal.signal(sig, self._note)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def pending(self) -> list[signal.Signals]:
        """The stop signals that arrived since the last call."""
        got, self._got = self._got, []
        return [signal.Signals(s) for s in got]


def check_linger(linger: float) -> float:
    """A linger in seconds: >= 0, math.inf for "until the last descendant exits"."""
    if isinstance(linger, bool) or not isinstance(linger, (int, float)) or math.isnan(linger) or linger < 0:
        raise TracebaseError(f"linger: expected seconds >= 0 or inf, found {linger!r}")
    return float(linger)


def _own_threads() -> frozenset[int]:
    """The ids of this process's threads."""
    try:
        return frozenset(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return frozenset({os.getpid()})


def _threads_of(pids: Sequence[int]) -> frozenset[int]:
    """Every live thread of these processes (ids of processes or of their threads)."""
    out: set[int] = set()
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                    state = fh.read().rpartition(b")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):  # exited, not yet reaped: its end is recorded
                out.add(int(tid))
    return frozenset(out)


def in_terminal_foreground() -> bool:
    """Is this process in the foreground process group of its controlling terminal? Then a
    SIGINT it gets is Ctrl-C, which the terminal sent to the command (same group) as well."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False  # no controlling terminal: a SIGINT came from kill(2)
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def _exit_group_status(head: np.ndarray, pid: int) -> int | None:
    """The status a process passed to exit_group (or its leader to exit), from its records."""
    exits = [nr for nr, name in X86_64_NAMES.items() if name in ("exit_group", "exit")]
    calls = np.flatnonzero((head["pid"] == pid) & (head["tid"] == pid) & np.isin(head["nr"], exits))
    if not len(calls):
        return None
    return int(head["args"][calls[-1]][0]) & 0xFF


@contextlib.contextmanager
def _stderr_kept(quiet: bool):
    """With quiet, what the C libraries write on file descriptor 2 meanwhile goes to a
    temporary file instead of the terminal; yields a function returning it."""
    if not quiet:
        yield lambda: ""
        return
    import tempfile

    kept: list[str] = []
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            yield lambda: "".join(kept)  # read after the block, when the load has failed
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept.append(sink.read(1 << 16).decode("utf-8", "replace"))


def _patch_kfunc_calls(bpf, fn: bytes, kfunc_id: int) -> int:
    """Rewrite fn's calls of helper KFUNC_PLACEHOLDER into calls of the kernel function with
    BTF id kfunc_id (bcc 0.26 cannot emit kfunc calls), in bcc's copy of the compiled program
    before it is loaded. Returns how many were rewritten."""
    from tracer.privilege import load_bcc

    lib = load_bcc().lib
    start = lib.bpf_function_start(bpf.module, fn)
    size = lib.bpf_function_size(bpf.module, fn)
    if not start:
        raise EnvironmentProblem(f"{BPF_SOURCE.name}: no function {fn.decode()}")
    code = ct.string_at(start, size)
    patched = 0
    for at in range(0, size - size % 8, 8):
        op, regs, _off, imm = _INSN.unpack_from(code, at)
        if op == BPF_CALL and regs == 0 and imm == KFUNC_PLACEHOLDER:
            ct.memmove(start + at, _INSN.pack(BPF_CALL, BPF_PSEUDO_KFUNC_CALL << 4, 0, kfunc_id), 8)
            patched += 1
    return patched


def _describe_fds(fds: dict[int, int | None]) -> dict[int, str | None]:
    """What the command's fds 0-2 will point to (from this process's view), for path labels."""
    out: dict[int, str | None] = {}
    for target, source in fds.items():
        try:
            out[target] = os.readlink(f"/proc/self/fd/{source if source is not None else target}")
        except OSError:
            out[target] = None
    return out

