"""The metadata keys `tracer record` writes into a trace itself, and the check that keeps the
user's `--meta` keys apart from them. A module of its own, light to import: the command line
refuses a taken key before loading the recorder (bcc and the BPF program)."""

from __future__ import annotations

from collections.abc import Mapping

from tracer.errors import TracebaseError

# the recorder's own keys; the differ reads some ("cut_off_tids": tracer.schema.CUT_OFF_KEY, the
# threads the recording cut off; "failures_only": `-x`)
RECORDER_KEYS = frozenset({"argv", "attached_pid", "cut_off_tids", "cwd", "failures_only", "label", "linger_s",
                           "signal", "stopped", "uid"})


def check_user_meta(meta: Mapping[str, str] | None) -> None:
    """TracebaseError for user metadata naming a key the recorder writes: the user's value
    replaced the recorder's (`--meta cut_off_tids=x` lost the threads the recording cut off, and
    the differ then named their end)."""
    taken = sorted(set(meta or {}) & RECORDER_KEYS)
    if taken:
        raise TracebaseError(f"--meta {taken[0]}: expected a key of your own, found one the recorder writes "
                             f"itself ({', '.join(sorted(RECORDER_KEYS))})")
