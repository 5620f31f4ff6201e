"""The process limits a command must start with, checked before any work: one line naming the
limit (exit 2), not a library failing on it deep inside -- polars panicking when its runtime
cannot open its descriptors, bcc blaming the kernel when it cannot open its maps."""

from __future__ import annotations

from tracer.errors import EnvironmentProblem


def soft_limit(limit: int) -> int | None:
    """The soft value of a `resource.RLIMIT_*` limit; None when unlimited or unreadable."""
    import resource

    try:
        soft = resource.getrlimit(limit)[0]
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def require_open_files(minimum: int, for_what: str, hint: str = "") -> None:
    """Refuse a soft RLIMIT_NOFILE below `minimum` (`for_what` says what takes them; `hint`
    is appended to the message). The limit is never raised here: a command run under `tracer
    record` inherits it, and a recording of how it meets its limit is what such a user wants."""
    import resource

    soft = soft_limit(resource.RLIMIT_NOFILE)
    if soft is not None and soft < minimum:
        raise EnvironmentProblem(f"ulimit -n: expected room for at least {minimum} open files ({for_what}), "
                                 f"found a limit of {soft}{hint}")


def _address_space_in_use() -> int | None:
    """This process's mapped address space (VmSize): what counts against RLIMIT_AS."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_address_space(needed: int, for_what: str) -> None:
    """Under a finite `ulimit -v`, raise MemoryError (the command line's one out-of-memory line,
    naming the limit) when `needed` bytes more would not fit in what is left of the address
    space. For reads whose allocation would fail inside a native library (polars' allocator
    aborts the process: no handler sees it) and whose size is known beforehand. No limit, no
    cost."""
    import resource

    soft = soft_limit(resource.RLIMIT_AS)
    in_use = _address_space_in_use() if soft is not None else None
    if soft is None or in_use is None:
        return
    left = max(0, soft - in_use)
    if needed > left:
        raise MemoryError(f"{for_what} needs about {needed >> 20:,} MiB of memory, "
                          f"{left >> 20:,} MiB of the address space is left")
