"""Record every syscall of a command and its descendants with a bcc program on the raw syscall
tracepoints, into one tracebase `events` table.

    with SyscallRecorder() as recorder:          # compiles and loads bpf/syscall_recorder.c once
        rec = recorder.record(["ls", "-l"], label="good")
        rec.write("ls.parquet")

How a command is started: we fork; the child blocks on a pipe until the parent has put its
pid into the BPF `traced` map, then execs. From then on the kernel follows it: the
sched_process_fork tracepoint adds every child of a traced process to the map and
sched_process_exit removes it, so nothing is polled from /proc. The child's own syscalls
between fork and exec (the pipe read) are dropped: the trace starts at the command's execve.
Recording stops when the command itself exits; descendants still running then are no longer
followed.

Events arrive in the ring buffer in exit order and per CPU; they are sorted by entry time,
replayed through tracer.fdtable to resolve relative paths, dirfds and fds, and written with
the trace-level columns on every row (see tracer.schema).
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import os
import shlex
import shutil
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.errnos import errno_name
from tracer.errors import EnvironmentProblem, TracebaseError
from tracer.fdtable import PathResolver
from tracer.schema import METADATA_TYPE, conform, metadata_list, write_table
from tracer.syscalls import SPEC_SOCKADDR, SPECS, bpf_spec_table, sockaddr_text, syscall_names

BPF_SOURCE = Path(__file__).resolve().parents[1] / "bpf" / "syscall_recorder.c"
LABEL_KINDS = {"good": "good", "bad": "failure", None: "full"}
POLL_MS = 10
F_AT_ENTER = 2

# struct event header in bpf/syscall_recorder.c; path bytes follow it
HEADER = np.dtype(
    [
        ("ts_ns", "<u8"), ("latency_ns", "<u8"), ("ret", "<i8"), ("args", "<u8", (6,)),
        ("pid", "<u4"), ("tid", "<u4"), ("ppid", "<u4"), ("nr", "<u2"), ("flags", "<u2"),
        ("len1", "<u2"), ("len2", "<u2"), ("spec", "<u4"), ("comm", "S16"),
    ]
)
HEADER_SIZE = HEADER.itemsize  # 112


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
    exit_status: int
    lost_events: int
    start_time: datetime
    end_time: datetime
    raw_records: int
    metadata: dict[str, str] = field(default_factory=dict)

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
    ) -> Recording:
        """Run argv under the tracer and return its Recording (not yet written).

        stdin/stdout/stderr: file descriptors for the child (default: inherit).
        timeout: SIGKILL the command after this many seconds (exit status 137).
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

        status = self._follow(pid, timeout)
        end_time = datetime.now(UTC)
        self.bpf[b"traced"].clear()  # stop following descendants that outlive the command
        self._drain()
        lost = self._lost()
        chunks, self._sink = self._sink, []

        host = host or socket.gethostname()
        trace_id = f"{host}:rec-{start_time:%Y%m%dT%H%M%S.%f}Z-{pid}"
        info = {
            "cwd": run_cwd,
            "uid": str(os.getuid()),
            "label": label or "",
            "failures_only": str(self.failures_only).lower(),
            "argv": shlex.join(argv),
            **dict(meta or {}),
        }
        exit_status = exit_status_of(status)
        events = self._events_table(
            chunks, root_pid=pid, cwd=run_cwd, initial_fds=initial_fds,
            trace=dict(
                trace_id=trace_id, kind=LABEL_KINDS[label], command=shlex.join(argv),
                exit_status=exit_status, start_time=start_time, end_time=end_time, host=host,
                kernel_release=os.uname().release, lost_events=lost,
                job_id=(meta or {}).get("job_id"), metadata=info,
            ),
        )
        return Recording(
            events=events, trace_id=trace_id, command=shlex.join(argv), exit_status=exit_status,
            lost_events=lost, start_time=start_time, end_time=end_time,
            raw_records=len(chunks), metadata=info,
        )

    def _follow(self, pid: int, timeout: float | None) -> int:
        """Consume the ring buffer until the command exits; returns its wait status.

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
        deadline = time.monotonic() + timeout if timeout else None
        try:
            while True:
                self.bpf.ring_buffer_poll(POLL_MS)
                self.bpf.ring_buffer_consume()
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return status
                if deadline and time.monotonic() > deadline:
                    _kill(pid)
                    deadline = None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    # -- decoding --------------------------------------------------------------------------
    def _events_table(self, chunks: list[bytes], root_pid: int, cwd: str,
                      initial_fds: dict[int, str | None], trace: dict) -> pa.Table:
        n = len(chunks)
        head = np.frombuffer(b"".join(c[:HEADER_SIZE] for c in chunks), dtype=HEADER)
        order = np.lexsort((head["tid"], head["ts_ns"]))
        head = head[order]
        chunks = [chunks[i] for i in order]

        # The trace starts at the command's execve: drop the fork-to-exec stub.
        root = head["pid"] == root_pid
        execve_nrs = [nr for nr, name in self._names.items() if name in ("execve", "execveat")]
        root_exec = np.flatnonzero(root & np.isin(head["nr"], execve_nrs))
        if len(root_exec):
            keep = ~root | (np.arange(n) >= root_exec[0])
            head = head[keep]
            chunks = [c for c, k in zip(chunks, keep, strict=True) if k]
            n = len(chunks)

        rets = head["ret"].astype(np.int64)
        failed = (rets < 0) & (rets >= -4095)
        paths: list[str | None] = [None] * n
        argcol: list[str | None] = [None] * n
        resolver = PathResolver(cwd, initial_fds)
        names = self._names
        for i in range(n):
            nr = int(head["nr"][i])
            name = names.get(nr, f"syscall_{nr}")
            spec = SPECS.get(name)
            if spec is None:
                continue
            len1, len2 = int(head["len1"][i]), int(head["len2"][i])
            chunk = chunks[i]
            str1 = str2 = None
            if len1:
                raw = chunk[HEADER_SIZE:HEADER_SIZE + len1]
                if int(head["spec"][i]) & SPEC_SOCKADDR:
                    str1 = sockaddr_text(raw)
                else:
                    str1 = raw.rstrip(b"\x00").decode("utf-8", "surrogateescape")
            elif spec.path is not None and spec.path2 is None:
                str1 = None
            if len2:
                raw2 = chunk[HEADER_SIZE + len1:HEADER_SIZE + len1 + len2]
                str2 = raw2.rstrip(b"\x00").decode("utf-8", "surrogateescape")
            paths[i], argcol[i] = resolver.apply(
                int(head["pid"][i]), int(head["ppid"][i]), name, spec, head["args"][i],
                int(rets[i]), bool(failed[i]), str1, str2,
            )

        if self.failures_only:
            keep_idx = np.flatnonzero(failed)
            head, rets, failed = head[keep_idx], rets[keep_idx], failed[keep_idx]
            paths = [paths[i] for i in keep_idx]
            argcol = [argcol[i] for i in keep_idx]
            n = len(keep_idx)
        return _build_table(head, rets, failed, paths, argcol, names, trace, n)


def _build_table(head, rets, failed, paths, argcol, names, trace: dict, n: int) -> pa.Table:
    at_enter = (head["flags"] & F_AT_ENTER) != 0
    nr_values, nr_index = np.unique(head["nr"], return_inverse=True)
    probe = pa.DictionaryArray.from_arrays(
        pa.array(nr_index.astype(np.int32)),
        pa.array([names.get(int(v), f"syscall_{int(v)}") for v in nr_values], pa.string()),
    )
    comm_values, comm_index = np.unique(head["comm"], return_inverse=True)
    comm = pa.DictionaryArray.from_arrays(
        pa.array(comm_index.astype(np.int32)),
        pa.array([c.split(b"\x00", 1)[0].decode("utf-8", "replace") for c in comm_values], pa.string()),
    )
    err_values, err_index = np.unique(np.where(failed, rets, 0), return_inverse=True)
    errno = pa.DictionaryArray.from_arrays(
        pa.array(err_index.astype(np.int32)),
        pa.array([errno_name(int(v)) for v in err_values], pa.string()),
    )
    latency = pa.array(head["latency_ns"].astype(np.int64), mask=at_enter)

    def constant(value, type_):
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], type_))

    def timestamp(dt: datetime):
        ns = int(dt.timestamp() * 1_000_000) * 1000
        return pa.array(np.full(n, ns, np.int64)).cast(pa.timestamp("ns", tz="UTC"))

    meta_items = pa.array(metadata_list(trace["metadata"]), METADATA_TYPE.value_type)
    k = len(meta_items)
    metadata = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n * k + 1, k, dtype=np.int32) if k else np.zeros(n + 1, np.int32)),
        meta_items.take(pa.array(np.tile(np.arange(k), n))) if k else meta_items,
    )
    columns = {
        "trace_id": constant(trace["trace_id"], pa.string()),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "ts_ns": pa.array(head["ts_ns"].astype(np.int64)),
        "pid": pa.array(head["pid"].astype(np.int32)),
        "tid": pa.array(head["tid"].astype(np.int32)),
        "ppid": pa.array(head["ppid"].astype(np.int32)),
        "comm": comm,
        "probe": probe,
        "layer": constant("syscall", pa.string()),
        "depth": pa.array(np.zeros(n, np.int16)),
        "ret": pa.array(rets),
        "errno": errno,
        "latency_ns": latency,
        "path": pa.array(paths, pa.string()),
        "arg": pa.array(argcol, pa.string()),
        "kind": constant(trace["kind"], pa.string()),
        "command": constant(trace["command"], pa.string()),
        "exit_status": pa.array(np.full(n, trace["exit_status"], np.int32)),
        "start_time": timestamp(trace["start_time"]),
        "end_time": timestamp(trace["end_time"]),
        "host": constant(trace["host"], pa.string()),
        "kernel_release": constant(trace["kernel_release"], pa.string()),
        "lost_events": pa.array(np.full(n, trace["lost_events"], np.int64)),
        "job_id": pa.nulls(n, pa.string()) if trace["job_id"] is None else constant(trace["job_id"], pa.string()),
        "metadata": metadata,
    }
    return conform(pa.table(columns), "events")


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
