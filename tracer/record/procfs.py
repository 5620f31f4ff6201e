"""What /proc says about a running process, for `tracer record -p PID`.

Attaching to a process that is already running means its cwd and open fds were set up before
the recorder saw anything; they are read once from /proc/PID here so that relative paths,
`*at` dirfds and fd-labelled calls (read, write, fstat...) still resolve (tracer.record.fdtable).
"""

from __future__ import annotations

import os
import select
import shlex
import time
from dataclasses import dataclass, field

from tracer.errors import TracebaseError
from tracer.privilege import check_target_process
from tracer.record.syscalls import O_CLOEXEC


@dataclass
class ProcessSnapshot:
    """A running process as the recorder needs it at attach time."""

    pid: int
    ppid: int
    comm: str
    argv: list[str]
    uid: int
    cwd: str
    fds: dict[int, str | None] = field(default_factory=dict)
    cloexec_fds: frozenset[int] = frozenset()

    @property
    def command(self) -> str:
        """The command line as one string; `[comm]` when /proc shows no argv (kernel thread)."""
        return shlex.join(self.argv) if self.argv else f"[{self.comm}]"


@dataclass(frozen=True)
class PinnedProcess:
    """A process held by a pidfd from the moment `tracer record -p` checked it: its exit while
    the probes load (seconds of compiling) is seen as that exit, and a pid reused meanwhile is
    not taken for it."""

    pid: int
    fd: int
    since: float  # time.monotonic() when pinned


def pin_process(pid: int) -> PinnedProcess:
    """A pidfd on `pid` (TracebaseError when there is no such process); the caller closes it."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise TracebaseError(f"-p {pid}: no such process") from None
    return PinnedProcess(pid, fd, time.monotonic())


def process_exited(pidfd: int) -> bool:
    """Has the process of `pidfd` exited? (A pidfd polls readable once it has, reaped or not.)"""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def process_exists(pid: int) -> bool:
    return pid > 0 and os.path.isdir(f"/proc/{pid}") and _is_thread_group_leader(pid)


def _is_thread_group_leader(pid: int) -> bool:
    # /proc/TID exists for every thread too (hidden from listings); -p takes a process.
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    return int(line.split()[1]) == pid
    except OSError:
        return False
    return False


def snapshot(pid: int) -> ProcessSnapshot:
    """Read pid's parent, command line, uid, cwd and fd table from /proc.

    Raises TracebaseError when there is no such process, or it has already exited (zombie).
    """
    if not process_exists(pid):
        raise TracebaseError(f"-p {pid}: no such process")
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/stat", "rb") as f:
            stat = f.read()
        with open(f"{base}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"{base}/status") as f:
            status = f.read()
    except OSError:
        raise TracebaseError(f"-p {pid}: no such process") from None
    # comm may contain spaces and parentheses: it runs from the first "(" to the last ")".
    comm = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode("utf-8", "replace")
    state, ppid = stat[stat.rindex(b")") + 2:].split()[:2]
    if state in (b"Z", b"X"):
        raise TracebaseError(f"-p {pid}: process has already exited (state {state.decode()})")
    uid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")), -1)
    argv = [a.decode("utf-8", "surrogateescape") for a in cmdline.split(b"\0")[:-1]] if cmdline else []
    check_target_process(pid)  # a kernel thread (its stat flags; the zombie case was answered above)
    try:
        cwd = os.readlink(f"{base}/cwd")
    except FileNotFoundError:
        raise TracebaseError(f"-p {pid}: process has already exited") from None
    except OSError as exc:
        # EACCES even for root: a process in another user namespace, or one ptrace access
        # rules (Yama, a LSM) hide from us
        raise TracebaseError(f"-p {pid}: cannot read {base}/cwd: {exc.strerror}") from None
    fds, cloexec = _fd_table(base)
    return ProcessSnapshot(pid, int(ppid), comm, argv, uid, cwd, fds, frozenset(cloexec))


def _fd_table(base: str) -> tuple[dict[int, str | None], set[int]]:
    """fd -> what it points to (path, or e.g. 'pipe:[123]'), and the fds marked close-on-exec."""
    fds: dict[int, str | None] = {}
    cloexec: set[int] = set()
    try:
        names = os.listdir(f"{base}/fd")
    except OSError:
        return fds, cloexec
    for name in names:
        fd = int(name)
        try:
            fds[fd] = os.readlink(f"{base}/fd/{name}")
        except OSError:  # closed since the listing
            continue
        try:
            with open(f"{base}/fdinfo/{name}") as f:
                for line in f:
                    if line.startswith("flags:"):
                        if int(line.split()[1], 8) & O_CLOEXEC:
                            cloexec.add(fd)
                        break
        except (OSError, ValueError):
            pass
    return fds, cloexec
