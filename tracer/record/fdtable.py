"""User-space bookkeeping that turns raw syscall arguments into absolute paths.

The BPF program records path strings exactly as the program passed them, and raw argument
registers. Relative paths, `*at` dirfds and calls on an fd only mean something together with
each process's cwd and fd table, which this module replays from the recorded calls
themselves: open/openat/dup/fcntl(F_DUPFD)/close/close_range/socket/connect,
pipe/pipe2/socketpair (their new fds arrive as the int[2] the BPF side reads at exit, labelled
PIPE_LABEL / SOCKETPAIR_LABEL), chdir/fchdir, fork/clone (the child starts with a copy of its
parent's state) and execve (drops O_CLOEXEC fds). Calls must be fed in entry-time order; a call that uses an fd enters after the call
that created it returned, so that order is causal.

Nothing is normalised beyond making paths absolute and dropping "." and empty components
(".." is kept: resolving it lexically would be wrong across symlinks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.record.syscalls import (
    AT_EMPTY_PATH,
    AT_FDCWD,
    CLONE_THREAD,
    F_DUPFD,
    F_DUPFD_CLOEXEC,
    F_SETFD,
    FD_CLOEXEC,
    O_CLOEXEC,
    Spec,
    render_arg,
)

CLOSE_RANGE_CLOEXEC = 4
# Labels of fds made by pipe()/socketpair() (the kernel's inode number is not visible to us;
# inherited ones read from /proc look like "pipe:[123]", "socket:[123]").
PIPE_LABEL = "pipe:"
SOCKETPAIR_LABEL = "socketpair:"
# A POSIX message queue's name (mq_open, mq_unlink) and the calls on its descriptor: the
# queue lives in the IPC namespace's mqueue file system, not under the cwd.
MQUEUE_LABEL = "mqueue:/"


def as_int32(register: int) -> int:
    """An int argument from its 64-bit register (AT_FDCWD arrives as 0xffffff9c)."""
    value = int(register) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _empty_path(spec: Spec, args) -> bool:
    """An *at call whose path string was not read but whose flags say AT_EMPTY_PATH: the call
    is about its dirfd (see Spec.empty_flags)."""
    return spec.empty_flags is not None and bool(int(args[spec.empty_flags]) & AT_EMPTY_PATH)


def clean(path: str) -> str:
    if (path.startswith("/") and "//" not in path and "/./" not in path
            and not path.endswith(("/", "/."))):
        return path  # already clean: the common case, no split/join
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return "/" + "/".join(parts)


def _is_pipe(label: str | None) -> bool:
    """A pipe's label: ours (PIPE_LABEL) or one read from /proc for an inherited fd ("pipe:[123]")."""
    return label is not None and label.startswith(PIPE_LABEL)


@dataclass
class ProcessState:
    cwd: str
    fds: dict[int, tuple[str | None, bool]] = field(default_factory=dict)  # fd -> (path, cloexec)
    # fd -> (tid, exit time, the entry it replaced) of the call that last gave the fd out: see
    # `close`. Not copied to a child: a new process's table is its own.
    given: dict[int, tuple[int, int, tuple[str | None, bool] | None]] = field(default_factory=dict)

    def copy(self) -> ProcessState:
        return ProcessState(self.cwd, dict(self.fds))

    def install(self, fd: int, entry: tuple[str | None, bool], tid: int | None, end_ns: int) -> None:
        """fd now names `entry`, given out by thread `tid`'s call that returned at end_ns."""
        if tid is not None:
            self.given[fd] = (tid, end_ns, self.fds.get(fd))
        self.fds[fd] = entry

    def close(self, fd: int, tid: int | None, ts_ns: int) -> tuple[str | None, bool] | None:
        """The entry a close of fd entering at ts_ns released (and forget it).

        Calls are fed in entry order, but a descriptor is given out inside the call: another
        thread's open that entered first can return the very number this close frees (its path
        copied in, a page fault, a preemption, before the kernel picked the lowest free fd). A
        close entering while that call was still in progress on another thread freed the file
        before it, so the new one stays -- else the opener's fstat, writes and close lost their
        path: a thread pool's worker then looked like it took a path no good run took."""
        given = self.given.get(fd)
        if given is not None and tid is not None and given[0] != tid and given[1] > ts_ns:
            self.given[fd] = (given[0], given[1], None)
            return given[2]
        return self.fds.pop(fd, None)

    def fd_path(self, fd: int, tid: int | None = None, ts_ns: int = 0) -> str | None:
        """What fd names for thread `tid`'s call entering at ts_ns. A number another thread's
        call gave out that had not returned yet when this call entered is still the file it
        replaced for this one: the kernel frees a descriptor's number early in close, so a
        socket() entering before a thread's close can return that thread's number while the
        thread's own read on it -- entering after the socket() -- is still on the old file
        (a client pool's read of its connection was left without a path)."""
        entry = self.fds.get(fd)
        given = self.given.get(fd) if tid is not None else None
        if given is not None and given[0] != tid and given[1] > ts_ns:
            entry = given[2]
        return entry[0] if entry else None


class PathResolver:
    """Replays cwd and fd-table changes per thread group; resolves each call's paths.

    initial_cwd: cwd of the recorded command at exec.
    initial_fds: what its inherited fds point to (e.g. {0: "/dev/null"}), when known.
    cloexec_fds: which of those are close-on-exec (known when attaching to a running process).
    """

    def __init__(self, initial_cwd: str, initial_fds: dict[int, str | None] | None = None,
                 cloexec_fds: frozenset[int] | set[int] = frozenset()):
        self.initial = ProcessState(
            clean(initial_cwd),
            {fd: (path, fd in cloexec_fds) for fd, path in (initial_fds or {}).items()},
        )
        self.procs: dict[int, ProcessState] = {}

    def state(self, pid: int, ppid: int) -> ProcessState:
        st = self.procs.get(pid)
        if st is None:
            # Normally created at the parent's fork; this is the first process, or a child
            # whose fork we did not see (clone3 from an untraced thread, -x mode).
            parent = self.procs.get(ppid)
            st = parent.copy() if parent is not None else self.initial.copy()
            self.procs[pid] = st
        return st

    def resolve(self, st: ProcessState, path: str, dirfd: int | None) -> str | None:
        if path.startswith("/"):
            return clean(path)
        if dirfd is None or dirfd == AT_FDCWD:
            base: str | None = st.cwd
        else:
            base = st.fd_path(dirfd)
        if path == "":  # AT_EMPTY_PATH: the call is about the dirfd itself
            return base  # None when the fd is a pipe/socket or unknown
        if base is None or not base.startswith("/"):
            return path  # relative to an fd we know nothing about: keep it as recorded
        return clean(f"{base}/{path}")

    def apply(
        self,
        pid: int,
        ppid: int,
        name: str,
        spec: Spec | None,
        args,
        ret: int,
        failed: bool,
        str1: str | None,
        str2: str | None,
        fdpair: tuple[int, int] | None = None,
        tid: int | None = None,
        ts_ns: int = 0,
        end_ns: int = 0,
    ) -> tuple[str | None, str | None, str | None]:
        """Feed one call (in entry order); returns its (path, path2, arg) columns.

        fdpair: the two fds a successful pipe/pipe2/socketpair returned (read by BPF at exit).
        tid, ts_ns, end_ns: the calling thread, the call's entry and return (see
        `ProcessState.close`; without a tid, every close frees the latest entry).
        """
        st = self.state(pid, ppid)
        if spec is None:
            return None, None, None
        path: str | None = None
        if spec.sockaddr is not None and str1 is not None:
            path = str1
        elif spec.path_kind == "mqueue":
            path = None if str1 is None else MQUEUE_LABEL + str1.lstrip("/")
        elif spec.path is not None and (str1 is not None or _empty_path(spec, args)):
            dirfd = as_int32(args[spec.path[1]]) if spec.path[1] is not None else None
            path = self.resolve(st, "" if str1 is None else str1, dirfd)
        elif spec.fd is not None:  # also sendto on a connected socket (no address given)
            path = st.fd_path(as_int32(args[spec.fd]), tid, ts_ns)
        path2: str | None = None
        if spec.path2 is not None and str2 is not None:
            if spec.path2_kind == "raw":
                path2 = str2
            else:
                dirfd2 = as_int32(args[spec.path2[1]]) if spec.path2[1] is not None else None
                path2 = self.resolve(st, str2, dirfd2)
        elif spec.fd2 is not None:
            path2 = st.fd_path(as_int32(args[spec.fd2]), tid, ts_ns)
            if spec.pipe_second and _is_pipe(path) and path2 is not None and not _is_pipe(path2):
                path, path2 = path2, path
        arg = render_arg(spec, args)
        if spec.role is not None:
            self._update(st, pid, name, spec, args, ret, failed, path, fdpair, tid, ts_ns, end_ns)
        return path, path2, arg

    def _update(self, st: ProcessState, pid: int, name: str, spec: Spec, args, ret: int,
                failed: bool, path: str | None, fdpair: tuple[int, int] | None = None,
                tid: int | None = None, ts_ns: int = 0, end_ns: int = 0) -> None:
        role = spec.role
        if role == "close":
            st.close(as_int32(args[0]), tid, ts_ns)  # Linux releases the fd even on EINTR/EIO
            return
        if role == "connect":
            st.fds[as_int32(args[0])] = (path, st.fds.get(as_int32(args[0]), (None, False))[1])
            return
        if failed:
            return
        if role == "open":
            flags = int(args[spec.arg_index]) if spec.arg_index is not None else 0
            st.install(ret, (path, bool(flags & O_CLOEXEC)), tid, end_ns)
        elif role == "newfd":
            st.install(ret, (path if spec.path is not None else None, False), tid, end_ns)
        elif role == "dup":
            source = st.fd_path(as_int32(args[0]))
            cloexec = name == "dup3" and bool(int(args[2]) & O_CLOEXEC)
            st.install(ret, (source, cloexec), tid, end_ns)
        elif role == "fcntl":
            cmd = as_int32(args[1])
            fd = as_int32(args[0])
            if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
                st.install(ret, (st.fd_path(fd), cmd == F_DUPFD_CLOEXEC), tid, end_ns)
            elif cmd == F_SETFD and fd in st.fds:
                st.fds[fd] = (st.fds[fd][0], bool(int(args[2]) & FD_CLOEXEC))
        elif role == "close_range":
            first, last = int(args[0]) & 0xFFFFFFFF, int(args[1]) & 0xFFFFFFFF
            for fd in [f for f in st.fds if first <= f <= last]:
                if int(args[2]) & CLOSE_RANGE_CLOEXEC:
                    st.fds[fd] = (st.fds[fd][0], True)
                else:
                    del st.fds[fd]
        elif role == "pipe":
            if fdpair is not None:
                label = SOCKETPAIR_LABEL if name == "socketpair" else PIPE_LABEL
                # pipe2 flags / socketpair type: O_CLOEXEC and SOCK_CLOEXEC are the same bit
                flags_arg = int(args[1]) if name in ("pipe2", "socketpair") else 0
                for fd in fdpair:
                    st.install(fd, (label, bool(flags_arg & O_CLOEXEC)), tid, end_ns)
        elif role == "chdir":
            if path:
                st.cwd = path
        elif role == "fchdir":
            target = st.fd_path(as_int32(args[0]))
            if target:
                st.cwd = target
        elif role == "fork":
            if ret > 0 and not (name == "clone" and int(args[0]) & CLONE_THREAD):
                self.procs[ret] = st.copy()
        elif role == "exec":
            st.fds = {fd: entry for fd, entry in st.fds.items() if not entry[1]}
