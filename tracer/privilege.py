"""Can this machine load our BPF programs? Each missing piece raises EnvironmentProblem with a
one-line message naming what is missing and the command that fixes it."""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from tracer.errors import EnvironmentProblem
from tracer.inputs import cwd_removed

TRACEFS_CANDIDATES = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))


def check_root(what: str = "tracer record") -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            f"{what} needs root to load BPF programs (running as uid {os.geteuid()}): "
            "run it with sudo"
        )


# Where distributions install bcc's Python bindings (python3-bpfcc, python3-bcc): the system
# interpreter's package directories, which a venv made by another interpreter (pyenv, uv's
# managed Pythons, a venv without --system-site-packages) does not see.
SYSTEM_BCC_DIRS = ("/usr/lib/python3/dist-packages", "/usr/lib/python3/site-packages")


@contextlib.contextmanager
def compiler_locale() -> Iterator[None]:
    """LC_CTYPE set to C.UTF-8 (else C) while bcc's built-in clang runs: under a Turkish
    LC_CTYPE clang lower-cases its own option names with the dotless i and refuses them
    ("unknown argument '-discard-value-names'"), and the compile failed as if the kernel
    had refused BPF. Python's own text encoding is fixed at start-up and stays."""
    import locale

    try:
        before = locale.setlocale(locale.LC_CTYPE)
    except locale.Error:
        before = None
    for name in ("C.UTF-8", "C"):
        try:
            locale.setlocale(locale.LC_CTYPE, name)
            break
        except locale.Error:
            continue
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(locale.Error):
                locale.setlocale(locale.LC_CTYPE, before)


@contextlib.contextmanager
def existing_cwd() -> Iterator[None]:
    """The current directory, when it was removed (`cd D && rmdir ../D`: getcwd fails), is
    left for / while bcc's clang runs and entered again after: clang's getcwd failed, and the
    compile was reported as the kernel refusing BPF. The command traced later still starts in
    the directory it was given, removed or not."""
    if not cwd_removed():
        yield
        return
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.chdir("/")
        yield
    finally:
        os.fchdir(here)
        os.close(here)


@contextlib.contextmanager
def compiler_environment() -> Iterator[None]:
    """What bcc's built-in clang needs around it: a C locale (compiler_locale) and a current
    directory that exists (existing_cwd)."""
    with existing_cwd(), compiler_locale():
        yield


def load_bcc() -> ModuleType:
    """bcc's Python bindings: the importable ones, else the system package's.

    Debian's bcc is pure Python over libbcc.so (ctypes), so it runs under any Python 3. Only
    the bcc package is loaded from the system directory: putting the whole directory on
    sys.path would shadow the venv's numpy/pyarrow with the distribution's."""
    try:
        import bcc

        return bcc
    except ImportError:
        pass
    import importlib.machinery
    import importlib.util

    for where in SYSTEM_BCC_DIRS:
        spec = importlib.machinery.PathFinder.find_spec("bcc", [where])
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules["bcc"] = module  # before running it: its own `from bcc.x import` needs it
        try:
            spec.loader.exec_module(module)
        except Exception:  # noqa: BLE001 - a broken or mismatched system copy: not usable
            sys.modules.pop("bcc", None)
            continue
        return module
    raise EnvironmentProblem(
        "bcc Python bindings are not importable: apt-get install python3-bpfcc bpfcc-tools "
        f"(looked in this interpreter's path and in {', '.join(SYSTEM_BCC_DIRS)})"
    )


def check_bcc() -> None:
    load_bcc()


def nearest_installed_headers(src: Path = Path("/usr/src")) -> Path | None:
    """The newest Debian kernel headers tree installed (linux-headers-<version>-<arch>), for a
    kernel that has no headers package of its own: our programs need only its generic headers."""
    machine = os.uname().machine  # platform.machine()'s answer, without importing platform
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)

    def version(path: Path) -> tuple:
        return tuple(int(part) if part.isdigit() else 0 for part in path.name.replace("-", ".").split("."))

    trees = [d for d in src.glob(f"linux-headers-*-{arch}") if (d / "include").is_dir()]
    return max(trees, key=version, default=None)


def check_kernel_headers() -> None:
    release = os.uname().release
    build = Path("/lib/modules") / release / "build"
    if (build / "include").is_dir():
        return
    nearest = nearest_installed_headers()
    if nearest is None:
        fix = (f"apt-get install linux-headers-{release}, or linux-headers-amd64 when the kernel has "
               "no package, then run scripts/setup.sh, which links them")
    else:
        # Debian splits a tree in -<arch> (generated) and -common (the rest); bcc reads both
        common = nearest.with_name(nearest.name.rsplit("-", 1)[0] + "-common")
        fix = (f"this kernel has no headers package; link the nearest installed ones: "
               f"mkdir -p {build.parent} && ln -sfn {nearest} {build}"
               + (f" && ln -sfn {common} {build.parent / 'source'}" if common.is_dir() else "")
               + " (scripts/setup.sh does this)")
    raise EnvironmentProblem(f"kernel headers for {release} are missing at {build}: {fix}")


def tracefs_dir() -> Path | None:
    """Where tracefs is mounted (bcc reads tracepoint formats and removes probe events there)."""
    for candidate in TRACEFS_CANDIDATES:
        if (candidate / "events").is_dir():
            return candidate
    return None


def _mount(source: str, target: Path, fstype: str) -> str | None:
    """mount(2) through libc (no dependency on mount(8)); returns the error text or None."""
    # ctypes.util (subprocess, tempfile) imported here: `tracer run`'s option checks import
    # this module before refusing a typo, and only a mount needs libc
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.mount(source.encode(), str(target).encode(), fstype.encode(), 0, None) == 0:
        return None
    err = ctypes.get_errno()
    return f"{os.strerror(err)} ({errno.errorcode.get(err, err)})"


def ensure_tracefs() -> str | None:
    """Mount tracefs if it is not mounted. Every entry point that attaches BPF calls this first:
    a fresh machine (or a container) may have no tracefs, and bcc then attaches uprobes (through
    the perf PMU) but fails to remove them at exit, so the tracer would die at cleanup.

    Returns a note describing what was done, or None when nothing was needed.
    """
    if tracefs_dir() is not None:
        return None
    tried = []
    # /sys/kernel/tracing first (kernel >= 4.1); the debugfs path as the old-kernel fallback,
    # where tracefs is automounted under debugfs.
    for source, target, fstype in (
        ("nodev", TRACEFS_CANDIDATES[0], "tracefs"),
        ("nodev", Path("/sys/kernel/debug"), "debugfs"),
    ):
        if not target.is_dir():
            tried.append(f"{target}: no such directory")
            continue
        problem = _mount(source, target, fstype)
        if problem is None and tracefs_dir() is not None:
            return f"mounted {fstype} at {target} (bcc needs tracefs to attach and detach probes)"
        tried.append(f"mount -t {fstype} {source} {target}: {problem or 'mounted, but no events directory'}")
    raise EnvironmentProblem(
        "tracefs is not mounted and mounting it failed (" + "; ".join(tried) + "): "
        f"mount -t tracefs nodev {TRACEFS_CANDIDATES[0]} (in a container, bind-mount the host's "
        f"{TRACEFS_CANDIDATES[0]})"
    )


def release_bpf(bpf: Any) -> list[str]:
    """Detach and free everything a bcc.BPF object holds; never raises.

    bcc's own cleanup() stops at the first probe it cannot detach (e.g. "Failed to detach BPF
    from uprobe" when tracefs went away) and leaves the rest attached, then runs again from its
    atexit hook on half-closed fds. Here every probe is detached on its own; one that fails is
    forgotten (its perf fd is already closed, which is what removes a PMU-created probe).
    Returns the problems, for a log line.
    """
    problems: list[str] = []
    for table, detach in (
        ("kprobe_fds", "detach_kprobe_event"),
        ("uprobe_fds", "detach_uprobe_event"),
        ("tracepoint_fds", "detach_tracepoint"),
        ("raw_tracepoint_fds", "detach_raw_tracepoint"),
        ("kfunc_entry_fds", "detach_kfunc"),
        ("kfunc_exit_fds", "detach_kretfunc"),
        ("lsm_fds", "detach_lsm"),
    ):
        fds = getattr(bpf, table, None)
        if not isinstance(fds, dict):
            continue
        for key in list(fds):
            try:
                getattr(bpf, detach)(key)
            except Exception as exc:  # noqa: BLE001 - bcc raises bare Exception
                name = key.decode(errors="replace") if isinstance(key, bytes) else str(key)
                problems.append(f"{name}: {exc}")
                fds.pop(key, None)
    try:
        bpf.cleanup()  # what is left: perf buffers, program fds, the module, the ring buffer
    except Exception as exc:  # noqa: BLE001
        problems.append(f"cleanup: {exc}")
    atexit.unregister(bpf.cleanup)  # bcc registered it at construction; nothing is left to do
    return problems


def check_bpf_environment(what: str) -> str | None:
    """Everything an entry point that loads and attaches BPF needs (`tracer run`, `tracer probes
    check --attach`, benchmarks, tests): root, bcc, kernel headers, tracefs. Returns a note if
    tracefs had to be mounted."""
    check_root(what)
    check_bcc()
    check_kernel_headers()
    return ensure_tracefs()


def check_arch() -> None:
    machine = os.uname().machine
    if machine != "x86_64":
        raise EnvironmentProblem(f"tracer record supports x86_64 only (this machine is {machine})")


# The initial PID namespace's inode number, fixed by the kernel (PROC_PID_INIT_INO).
INIT_PID_NS_INO = 0xEFFFFFFC


def check_pid_namespace(what: str = "tracer record") -> None:
    """Refuse to run inside a PID namespace other than the initial one (a container without
    --pid=host, `unshare -p`): BPF programs see the initial namespace's pids, this process its
    own, so the command's or -p PID's syscalls would never match and the trace come out empty."""
    try:
        ino = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return  # no /proc/self/ns (a very old kernel, or /proc not mounted): nothing to tell
    if ino != INIT_PID_NS_INO:
        raise EnvironmentProblem(
            f"{what} runs in a PID namespace (pid:[{ino}]) other than the host's (pid:[{INIT_PID_NS_INO}]): "
            "the kernel reports the host's pids, which this process cannot see; run it in the host's "
            "PID namespace (docker/podman --pid=host, Kubernetes hostPID: true)"
        )


PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread (include/linux/sched.h)


def check_target_process(pid: int, flag: str = "-p") -> None:
    """Raise TracebaseError unless `pid` is a live user process that can be traced: not a thread
    id (/proc/TID exists for every thread, but the kernel side follows processes), not a kernel
    thread (it makes no system calls: a recording of it stays empty until it exits)."""
    from tracer.errors import TracebaseError

    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        raise TracebaseError(f"{flag} {pid}: no such process") from None
    except OSError as exc:
        raise TracebaseError(f"{flag} {pid}: cannot read /proc/{pid}: {exc.strerror}") from None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    tgid = int(fields.get("Tgid", str(pid)).strip() or pid)
    if tgid != pid:
        raise TracebaseError(f"{flag} {pid}: expected a process id, found a thread of process {tgid} (use -p {tgid})")
    comm = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode("utf-8", "replace")
    state, *rest = stat[stat.rindex(b")") + 2:].split()
    if state in (b"Z", b"X"):
        raise TracebaseError(f"{flag} {pid}: process has already exited (state {state.decode()})")
    if int(rest[5]) & PF_KTHREAD:
        raise TracebaseError(f"{flag} {pid}: expected a user process, found kernel thread [{comm}] (it makes no system calls)")


def check_recording_environment() -> str | None:
    """All checks `tracer record` needs, cheapest and most likely first; returns a note if
    tracefs had to be mounted."""
    check_root()
    check_pid_namespace()
    check_arch()
    check_bcc()
    check_kernel_headers()
    return ensure_tracefs()
