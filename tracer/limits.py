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
