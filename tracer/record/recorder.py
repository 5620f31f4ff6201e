"""Record every syscall of a command (or a running process) and its descendants with a bcc
program on the raw syscall tracepoints, into one tracebase `events` table.

    with SyscallRecorder() as recorder:          # compiles and loads bpf/syscall_recorder.c once
        rec = recorder.record(["ls", "-l"], label="good")
        rec.write("ls.parquet")
        rec = recorder.attach(1234, duration=30)   # tracer record -p 1234 -d 30

How a command is started: we fork; the child blocks on a pipe until the parent has put its
pid into the BPF `traced` map, then execs. From then on the kernel follows it: the
sched_process_fork tracepoint adds every child of a traced process to the map and
sched_process_exit removes it, so nothing is polled from /proc. The child's own syscalls
between fork and exec (the pipe read) are dropped: the trace starts at the command's execve.
Recording stops when the command itself exits, or after `duration` (the command is left
running, like bcc tools leave the traced program alone); descendants still running then are
no longer followed.

Attaching (-p): the running process's pid goes into the same map, so its threads and the
children it creates from then on are followed the same way; its cwd and fd table come from
/proc (tracer.record.procfs). Recording stops when it exits (seen through a pidfd), after
`duration`, or on SIGINT/SIGTERM.

Events arrive in the ring buffer in exit order and per CPU; tracer.record.decode sorts them by entry
time, replays the calls that need it through tracer.record.fdtable to resolve relative paths, dirfds
and fds, and builds the table columnar with the trace-level columns on every row (see
tracer.schema).
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import os
import select
import shlex
import shutil
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer import resources
from tracer.errors import EnvironmentProblem, TracebaseError
from tracer.record.decode import HEADER, HEADER_SIZE, Decoded, build_table, decode, resolve_columns
from tracer.record.syscalls import X86_64_NAMES, bpf_spec_table, syscall_names
from tracer.schema import write_table

BPF_SOURCE = resources.BPF_DIR / "syscall_recorder.c"
LABEL_KINDS = {"good": "good", "bad": "failure", None: "full"}
POLL_MS = 10

__all__ = ["HEADER", "HEADER_SIZE", "Recording", "SyscallRecorder", "resolve_command"]


class CommandNotFound(TracebaseError):
    """Like a shell: the command could not be found (exit status 127)."""

    exit_status = 127


def resolve_command(name: str, env: Mapping[str, str] | None = None) -> str:
    """The executable `name` refers to (searching PATH like execvp); CommandNotFound if none."""
    if "/" in name:
        if not os.path.exists(name):
            raise CommandNotFound(f"{name}: no such file")
        if os.path.isdir(name) or not os.access(name, os.X_OK):
            raise CommandNotFound(f"{name}: not an executable file")
        return name
    search = (env or os.environ).get("PATH", os.defpath)
    found = shutil.which(name, path=search)
    if not found:
        raise CommandNotFound(f"{name}: command not found (PATH={search})")
    return found


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
    stop_reason: str = "exited"  # exited | duration | signal

    @property
    def duration_s(self) -> float:
        return (self.end_time - self.start_time).total_seconds()

    def write(self, path: str | os.PathLike) -> Path:
        """Write the trace as one Parquet file, atomically."""
        return write_table(self.events, path, "events", {"recorder": "tracer record"})


class SyscallRecorder:
    """Compiles and loads the BPF program once; records commands one after another.

    ringbuf_mb: ring buffer size (rounded to a power of two of pages).
    max_path: bytes kept per path argument.
    failures_only: record only failing calls (`tracer record -x`).
    """

    def __init__(self, ringbuf_mb: int = 64, max_path: int = 512, failures_only: bool = False,
                 wakeup_every: int = 64):
        if max_path & (max_path - 1) or not 64 <= max_path <= 4096:
            raise TracebaseError(f"max_path: expected a power of two in 64..4096, found {max_path}")
        if not 1 <= ringbuf_mb <= 1024:
            raise TracebaseError(f"ringbuf_mb: expected 1..1024, found {ringbuf_mb}")
        self.ringbuf_mb = ringbuf_mb
        self.max_path = max_path
        self.failures_only = failures_only
        self.wakeup_every = wakeup_every
        self.bpf = None
        self._sink: list[bytes] = []
        self._names = syscall_names()
        self.notes: list[str] = []

    # -- loading ---------------------------------------------------------------------------
    def cflags(self) -> list[str]:
        pages = 1 << max(0, (self.ringbuf_mb * 1024 * 1024 // os.sysconf("SC_PAGE_SIZE")) - 1).bit_length()
        return [
            f"-DRINGBUF_PAGES={pages}",
            f"-DMAX_PATH={self.max_path}",
            f"-DFAILURES_ONLY={int(self.failures_only)}",
            f"-DWAKEUP_EVERY={self.wakeup_every}",
        ]

    def load(self) -> SyscallRecorder:
        if self.bpf is not None:
            return self
        from tracer.privilege import check_recording_environment

        note = check_recording_environment()
        if note:
            self.notes.append(note)
        from bcc import BPF

        try:
            self.bpf = BPF(src_file=str(BPF_SOURCE).encode(), cflags=self.cflags())
        except Exception as exc:  # bcc raises bare Exceptions for compile/load failures
            raise EnvironmentProblem(
                f"loading {BPF_SOURCE.name} failed ({str(exc).splitlines()[0]}); "
                "check `dmesg` and that the kernel allows BPF tracepoint programs"
            ) from None
        specs = self.bpf[b"specs"]
        for nr, bits in bpf_spec_table().items():
            specs[ct.c_uint(nr)] = ct.c_uint(bits)

        sink_owner = self

        def on_record(_ctx, data, size):
            sink_owner._sink.append(ct.string_at(data, size))
            return 0

        self._callback = on_record  # keep a reference: bcc holds only a ctypes pointer
        self.bpf[b"events"].open_ring_buffer(on_record)
        return self

    def close(self) -> None:
        if self.bpf is not None:
            self.bpf.cleanup()
            self.bpf = None

    def __enter__(self) -> SyscallRecorder:
        return self.load()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- recording -------------------------------------------------------------------------
    def _reset(self) -> None:
        b = self.bpf
        b[b"traced"].clear()
        b[b"inflight"].clear()
        b[b"lost"].clear()
        self._drain()
        self._sink = []

    def _drain(self) -> None:
        while True:
            before = len(self._sink)
            self.bpf.ring_buffer_consume()
            if len(self._sink) == before:
                return

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
    ) -> Recording:
        """Run argv under the tracer and return its Recording (not yet written).

        stdin/stdout/stderr: file descriptors for the child (default: inherit).
        timeout: SIGKILL the command after this many seconds (exit status 137).
        duration: stop recording after this many seconds and leave the command running (like
        bcc tools, which stop tracing, not the traced program); its exit status is then None
        and the caller may wait for Recording.pid.
        """
        if label not in LABEL_KINDS:
            raise TracebaseError(f"label: expected good or bad, found {label!r}")
        if not argv:
            raise TracebaseError("no command to record")
        self.load()
        env = dict(os.environ if env is None else env)
        exe = resolve_command(argv[0], env)
        run_cwd = os.path.abspath(cwd if cwd is not None else os.getcwd())
        if not os.path.isdir(run_cwd):
            raise TracebaseError(f"{run_cwd}: working directory does not exist")
        initial_fds = _describe_fds({0: stdin, 1: stdout, 2: stderr})
        self._reset()

        gate_read, gate_write = os.pipe()
        start_time = datetime.now(UTC)
        pid = os.fork()
        if pid == 0:  # child: wait until traced, then become the command
            _child(exe, list(argv), env, run_cwd, gate_read, gate_write, (stdin, stdout, stderr))
        os.close(gate_read)
        self.bpf[b"traced"][ct.c_uint(pid)] = ct.c_uint(os.getpid())
        os.write(gate_write, b"go")
        os.close(gate_write)

        status = self._follow(pid, timeout, duration)
        chunks, lost, end_time = self._stop()
        exit_status = exit_status_of(status) if status is not None else None
        info = {
            "cwd": run_cwd,
            "uid": str(os.getuid()),
            "label": label or "",
            "failures_only": str(self.failures_only).lower(),
            "argv": shlex.join(argv),
        }
        if status is None:
            info["stopped"] = "duration"
        decoded = self._decode(chunks, trim_before_exec_of=pid)
        return self._recording(
            decoded, raw_records=len(chunks), pid=pid, command=shlex.join(argv),
            exit_status=exit_status, lost=lost, start_time=start_time, end_time=end_time,
            label=label, host=host, meta=meta, info=info, cwd=run_cwd, initial_fds=initial_fds,
            stop_reason="exited" if status is not None else "duration",
        )

    def attach(
        self,
        pid: int,
        *,
        duration: float | None = None,
        label: str | None = None,
        host: str | None = None,
        meta: Mapping[str, str] | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> Recording:
        """Record an already running process (`tracer record -p PID`) and the descendants it
        creates from now on, until it exits, `duration` seconds pass, or SIGINT/SIGTERM.

        Its cwd and fd table are read from /proc first so paths resolve. Its exit status comes
        from its exit_group call when recorded; None when it is still running (or was killed
        by a signal: only its parent can wait for it). on_start is called once recording has
        begun and SIGINT/SIGTERM stop it cleanly (e.g. to tell the user).
        """
        from tracer.record.procfs import snapshot

        if label not in LABEL_KINDS:
            raise TracebaseError(f"label: expected good or bad, found {label!r}")
        if pid == os.getpid():
            raise TracebaseError(f"-p {pid}: that is the recorder itself")
        self.load()
        try:
            pidfd = os.pidfd_open(pid)  # before reading /proc: pins the process we inspect
        except ProcessLookupError:
            raise TracebaseError(f"-p {pid}: no such process") from None
        try:
            target = snapshot(pid)
            self._reset()
            start_time = datetime.now(UTC)
            self.bpf[b"traced"][ct.c_uint(pid)] = ct.c_uint(target.ppid)
            stop_reason = self._follow_attached(pidfd, duration, on_start)
        finally:
            os.close(pidfd)
        chunks, lost, end_time = self._stop()
        decoded = self._decode(chunks, trim_before_exec_of=None)
        exit_status = _exit_group_status(decoded.head, pid) if stop_reason == "exited" else None
        info = {
            "cwd": target.cwd,
            "uid": str(target.uid),
            "label": label or "",
            "failures_only": str(self.failures_only).lower(),
            "argv": target.command,
            "attached_pid": str(pid),
            "stopped": stop_reason,
        }
        return self._recording(
            decoded, raw_records=len(chunks), pid=pid, command=target.command,
            exit_status=exit_status, lost=lost, start_time=start_time, end_time=end_time,
            label=label, host=host, meta=meta, info=info, cwd=target.cwd,
            initial_fds=target.fds, cloexec_fds=target.cloexec_fds, stop_reason=stop_reason,
        )

    def _stop(self) -> tuple[list[bytes], int, datetime]:
        """Stop following everything, drain the ring buffer; (records, lost, end time)."""
        end_time = datetime.now(UTC)
        self.bpf[b"traced"].clear()  # stop following descendants that outlive the command
        self._drain()
        lost = self._lost()
        chunks, self._sink = self._sink, []
        return chunks, lost, end_time

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

    def _follow(self, pid: int, timeout: float | None, duration: float | None = None) -> int | None:
        """Consume the ring buffer until the command exits; returns its wait status, or None
        when `duration` elapsed first (the command is left running).

        SIGINT reaches the command through the terminal; the recorder keeps going so the
        trace of the interrupted command is still written. A second SIGINT kills it.
        """
        interrupts = 0

        def on_sigint(_sig, _frame):
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                _kill(pid)

        try:
            previous = signal.signal(signal.SIGINT, on_sigint)
        except ValueError:  # not the main thread
            previous = None
        now = time.monotonic()
        deadline = now + timeout if timeout else None
        stop_at = now + duration if duration else None
        try:
            while True:
                self.bpf.ring_buffer_poll(POLL_MS)
                self.bpf.ring_buffer_consume()
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return status
                now = time.monotonic()
                if stop_at and now >= stop_at:
                    return None
                if deadline and now > deadline:
                    _kill(pid)
                    deadline = None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _follow_attached(self, pidfd: int, duration: float | None,
                         on_start: Callable[[], None] | None = None) -> str:
        """Consume the ring buffer until the process exits ("exited"), the duration elapses
        ("duration") or SIGINT/SIGTERM arrives ("signal")."""
        stop: list[str] = []

        def on_signal(_sig, _frame):
            stop.append("signal")

        previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            # not the main thread: no handlers, the caller stops us by duration or exit
            with contextlib.suppress(ValueError):
                previous[sig] = signal.signal(sig, on_signal)
        exited = select.poll()
        exited.register(pidfd, select.POLLIN)
        stop_at = time.monotonic() + duration if duration else None
        try:
            if on_start is not None:
                on_start()
            while not stop:
                self.bpf.ring_buffer_poll(POLL_MS)
                self.bpf.ring_buffer_consume()
                if exited.poll(0):
                    return "exited"
                if stop_at and time.monotonic() >= stop_at:
                    return "duration"
            return stop[0]
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # -- decoding (tracer.record.decode) -----------------------------------------------------------
    def _decode(self, chunks: list[bytes], trim_before_exec_of: int | None) -> Decoded:
        execve_nrs = [nr for nr, name in self._names.items() if name in ("execve", "execveat")]
        return decode(chunks, execve_nrs, trim_before_exec_of)

    def _events_table(self, decoded: Decoded, cwd: str, initial_fds: dict[int, str | None],
                      trace: dict, cloexec_fds: frozenset[int] = frozenset()) -> pa.Table:
        paths, args = resolve_columns(decoded, self._names, cwd, initial_fds, cloexec_fds)
        return build_table(decoded.head, paths, args, self._names, trace, self.failures_only)


def _exit_group_status(head: np.ndarray, pid: int) -> int | None:
    """The status a process passed to exit_group (or its leader to exit), from its records."""
    exits = [nr for nr, name in X86_64_NAMES.items() if name in ("exit_group", "exit")]
    calls = np.flatnonzero((head["pid"] == pid) & (head["tid"] == pid) & np.isin(head["nr"], exits))
    if not len(calls):
        return None
    return int(head["args"][calls[-1]][0]) & 0xFF


def _describe_fds(fds: dict[int, int | None]) -> dict[int, str | None]:
    """What the command's fds 0-2 will point to (from this process's view), for path labels."""
    out: dict[int, str | None] = {}
    for target, source in fds.items():
        try:
            out[target] = os.readlink(f"/proc/self/fd/{source if source is not None else target}")
        except OSError:
            out[target] = None
    return out


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _child(exe: str, argv: list[str], env: dict[str, str], cwd: str, gate_read: int,
           gate_write: int, stdio: tuple[int | None, int | None, int | None]) -> None:
    """In the forked child: set up, wait for the parent's go, exec. Never returns."""
    code = 127
    try:
        os.close(gate_write)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        for target, source in enumerate(stdio):
            if source is not None:
                os.dup2(source, target, inheritable=True)
        os.chdir(cwd)
        os.read(gate_read, 2)
        os.close(gate_read)
        code = 126
        os.execve(exe, argv, env)
    except BaseException as exc:  # noqa: BLE001 - must never return into the parent's code
        try:
            os.write(2, f"tracer: {argv[0]}: {getattr(exc, 'strerror', None) or exc}\n".encode())
        finally:
            os._exit(code)
