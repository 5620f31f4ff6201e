"""Can this machine load our BPF programs? Each missing piece raises EnvironmentProblem with a
one-line message naming what is missing and the command that fixes it."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from tracer.errors import EnvironmentProblem

TRACEFS_CANDIDATES = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))


def check_root(what: str = "tracer record") -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            f"{what} needs root to load BPF programs (running as uid {os.geteuid()}): "
            "run it with sudo"
        )


def check_bcc() -> None:
    try:
        import bcc  # noqa: F401
    except ImportError:
        raise EnvironmentProblem(
            "bcc Python bindings are not importable: apt-get install python3-bpfcc bpfcc-tools "
            "(scripts/setup.sh installs them and links them into .venv)"
        ) from None


def check_kernel_headers() -> None:
    release = os.uname().release
    build = Path("/lib/modules") / release / "build"
    if not (build / "include").is_dir():
        raise EnvironmentProblem(
            f"kernel headers for {release} are missing at {build}: "
            f"apt-get install linux-headers-{release} (or run scripts/setup.sh, which links "
            "the nearest available headers when the kernel has no package)"
        )


def tracefs_dir() -> Path | None:
    for candidate in TRACEFS_CANDIDATES:
        if (candidate / "events" / "raw_syscalls").is_dir():
            return candidate
    return None


def ensure_tracefs() -> str | None:
    """Mount tracefs if it is not mounted (bcc reads tracepoint formats from it).

    Returns a note describing what was done, or None when nothing was needed.
    """
    if tracefs_dir() is not None:
        return None
    target = TRACEFS_CANDIDATES[0]
    result = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(target)], capture_output=True, text=True
    )
    if result.returncode != 0 or tracefs_dir() is None:
        raise EnvironmentProblem(
            f"tracefs is not mounted and mounting it failed ({result.stderr.strip() or 'no events'}): "
            f"mount -t tracefs nodev {target}"
        )
    return f"mounted tracefs at {target} (syscall tracepoints are described there)"


def check_arch() -> None:
    if platform.machine() != "x86_64":
        raise EnvironmentProblem(
            f"tracer record supports x86_64 only (this machine is {platform.machine()})"
        )


def check_recording_environment() -> str | None:
    """All checks `tracer record` needs, cheapest and most likely first; returns a note if
    tracefs had to be mounted."""
    check_root()
    check_arch()
    check_bcc()
    check_kernel_headers()
    return ensure_tracefs()
