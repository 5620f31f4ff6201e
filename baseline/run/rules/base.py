"""What every rule of the differ shares: the call tables several rules consult (errno classes,
probe families, the retry gap) and the row helpers they look at the prepared traces through
(`_Rows`, `_call_keys`, `_good_rows_where`, `_error_before`, ...). One definition each, so two
rules never disagree about what a call is."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from baseline.run import align
from baseline.run import compute as pc
from baseline.run.normalize import (
    ANALYSIS_COLUMNS,
    PerStream,
    Prepared,
    codes_where,
    isin,
    numpy_of,
    take,
)
from baseline.run.traces import (
    EventColumns,
    load_table,
)

SOFT_ERRNOS = frozenset(
    {
        "ENOENT", "ENOTDIR", "EAGAIN", "EWOULDBLOCK", "EINTR", "ENOTTY", "ECHILD", "EEXIST",
        "EINPROGRESS", "EALREADY", "ENODATA", "ERANGE", "ESPIPE", "ENOSYS", "ERESTARTSYS",
        "ERESTARTNOINTR", "ERESTARTNOHAND", "ERESTART_RESTARTBLOCK", "ETIMEDOUT", "ESRCH",
    }
)
# Errnos that are one call's answer rather than a failure: readlink's EINVAL says the path is
# no symbolic link (ld canonicalising its output path, which exists: a directory in the run
# that then fails EISDIR at the open -- that open names it, not the answer before it)
ANSWER_ERRNOS = frozenset({("readlink", "EINVAL"), ("readlinkat", "EINVAL")})
SEVERITY = {0: 1.0, 1: 2.0, 2: 4.0}  # no error, soft error, hard error
# Calls that only pass time. A region whose only difference from the good runs is that its
# thread slept (`_only_slept`) is a backoff's timing: HotSpot's VM Thread sleeps 1 ms at a time
# while it waits for the other threads to reach a safepoint, as often as they are slow.
SLEEP_PROBES = frozenset({"nanosleep", "clock_nanosleep"})
# ... and calls that only measure time (the clock, the CPU time used): one more or fewer is a
# timer's timing too -- G1's service thread samples its CPU time (getrusage) at each periodic
# task it runs, none in a run slow enough that the JVM shut down before the first.
TIMING_PROBES = SLEEP_PROBES | {"getrusage", "times", "clock_gettime", "clock_getres", "gettimeofday", "time"}
# Lookups that find a file: a success of one where the good runs failed, at a path whose name
# the good runs found elsewhere in a search path, is another copy shadowing theirs.
FIND_PROBES = frozenset({"open", "openat", "openat2", "execve", "execveat"})
# Two-path calls (source, target): which path an errno blames. The target for errors about
# the destination; for ENOENT/ENOTDIR too unless the bad run shows the source itself failing.
TWO_PATH_PROBES = frozenset({"rename", "renameat", "renameat2", "link", "linkat"})
OUTPUT_BYTES = 256
OUTPUT_WRITES_SEEN = 1000  # writes looked at for then_wrote's text
# Rows at most between two attempts of a retry loop (a wait, a close, a new socket, ...).
RETRY_GAP = 16
# The longest gap between two steps of a probe loop looked into for misses (see
# _gaps_past_misses): ld.so's subdirectories of one directory are some forty rows.
WALK_GAP = 256
NOT_RECOVERED_BONUS = 1.5
END_PROBE = "(end of thread)"
# Calls that list a directory: the start of a sweep over its entries (see _sweep_turns); a
# thread's first listing at a path coming back empty is another answer (see _EmptyAnswers)
LISTING_PROBES = frozenset({"getdents64", "getdents"})
# Calls that write a message out (passed over when looking for the error a message reports,
# and between two attempts of a retry loop: see rules.retries._retried).
MESSAGE_WRITES = frozenset({"write", "writev"})
# Calls whose return value is a new thread's or process's id (see _Teardowns._silent_children,
# rules.retries._retried_by_parent).
SPAWN_PROBES = frozenset({"clone", "clone3", "fork", "vfork"})
# Calls that give a descriptor back. Two rules pass over them as tidying up, not work: a
# library's clean-up between a failed call and its return with that error (glibc's
# if_nametoindex closes the socket its SIOCGIFINDEX failed on), when looking for the error a
# message reports (_error_before); a fallback's own descriptors closed (_recovered_fallbacks);
# with shutdown, a signal's unwinding giving back what its handler closed (_unwind_cleanups).
# One table: a call that tidies up after an error is the same call that tidies up after a
# fallback (close_range is not here: it closes a range no rule has seen opened).
DESCRIPTOR_RELEASES = frozenset({"close"})
# gettext's message catalogs, looked up (in each locale directory) to translate a message
MESSAGE_CATALOG = re.compile(r"/LC_MESSAGES/[^/]+\.mo$")


# ------------------------------------------------------------------------------------------
# the analysis
# ------------------------------------------------------------------------------------------
def _error_class(errno: str | None, probe: str | None = None) -> int:
    """0 no error, 1 soft (SOFT_ERRNOS, or an answer of `probe`'s: ANSWER_ERRNOS), 2 hard."""
    if errno is None:
        return 0
    return 1 if errno in SOFT_ERRNOS or (probe, errno) in ANSWER_ERRNOS else 2


class _Rows:
    """Display of prepared rows (bad rows first, then good rows)."""

    def __init__(self, prep: Prepared, bad_ids: list[str], good_ids: list[str]):
        self.p, self.bad_ids, self.good_ids = prep, bad_ids, good_ids

    def event(self, r: int) -> dict[str, Any]:
        p = self.p
        tkey = int(p.tkey[r])
        errno = p.errno_values[p.errno[r]] if p.errno[r] >= 0 else None
        probe = p.probe_values[p.probe[r]]
        return {
            "seq": int(p.seq[r]), "probe": probe, "errno": errno,
            "path": p.value("path", r), "npath": p.path_string(int(p.pathkey[r])),
            "path2": self.second_path(r, probe),
            "pid": int(p.pid[r]) if p.pid[r] >= 0 else None, "tid": int(p.tid[r]),
            "comm": p.value("comm", r), "trace_id": self.bad_ids[0] if tkey < 0 else self.good_ids[tkey],
            "output": self.p.value("output", r) if "output" in self.p.table.column_names else None,
        }

    def second_path(self, r: int, probe: str) -> str | None:
        """The second path of a two-path call: the events column ``path2`` (schema 2); older
        recordings kept a rename/link target in ``arg``."""
        cols = self.p.table.column_names
        second = self.p.value("path2", r) if "path2" in cols else None
        if second is None and probe in TWO_PATH_PROBES and "arg" in cols:
            arg = self.p.value("arg", r)
            second = arg if isinstance(arg, str) and arg.startswith("/") else None
        return second

    def output_after(self, nb: int, seq: int, pid: int | None) -> str | None:
        """The first OUTPUT_BYTES characters the bad run wrote to stdout/stderr/ttys/pipes from
        `seq` on (the events column ``output``): this process's writes, else any process's.
        Binary writes are passed over (`_is_text`): a forked git's 8-byte errno report to its
        parent over a pipe came first, and the message git printed after it was not shown."""
        p = self.p
        if "output" not in p.table.column_names:
            return None
        if not hasattr(self, "_has_output"):
            col = p.table.column("output")
            valid = numpy_of(pc.is_valid(col)) if col.null_count < len(col) else np.zeros(len(col), dtype=bool)
            self._has_output = np.flatnonzero(valid[p.order[:nb]]) if valid.any() else np.zeros(0, dtype=np.int64)
        rows = self._has_output
        rows = rows[p.seq[rows] >= seq]
        rows = rows[np.argsort(p.seq[rows], kind="stable")]
        text = self._text_of(rows[p.pid[rows] == pid]) if pid is not None else ""
        return (text or self._text_of(rows))[:OUTPUT_BYTES] or None

    def _text_of(self, rows: np.ndarray) -> str:
        """The text writes among `rows` (in order) up to OUTPUT_BYTES characters, looking at
        OUTPUT_WRITES_SEEN writes at most (a process piping megabytes of binary data)."""
        text = ""
        for r in rows[:OUTPUT_WRITES_SEEN].tolist():
            out = self.p.value("output", r) or ""
            if _is_text(out):
                text += out
                if len(text) >= OUTPUT_BYTES:
                    break
        return text


def _is_text(output: str) -> bool:
    """A write a person reads (a message, a line of output), not a binary record: no NUL, and
    three quarters of its characters printable or line layout."""
    if not output or "\x00" in output:
        return False
    shown = sum(c.isprintable() or c in "\n\r\t" for c in output[:OUTPUT_BYTES])
    return shown * 4 >= 3 * min(len(output), OUTPUT_BYTES)


def _paths_new_to_bad(plain: np.ndarray, nb: int, n_paths: int) -> np.ndarray:
    """The bad rows (0..nb-1) at a plain path (codes 0..n_paths-1, -1 none) no good row has.
    The good rows' paths are marked in a table over the path codes: sorting their million
    codes for the distinct values took ~25 ms of the ~35 `_listing_twins` took when, as
    almost always, no bad row is left. The table's last entry, null's, is never new."""
    in_good = np.zeros(n_paths + 1, dtype=bool)
    in_good[plain[nb:]] = True
    in_good[-1] = True
    return np.flatnonzero(~take(in_good, plain[:nb]))


EXIT_PROBES = frozenset({"exit", "exit_group"})


def _one_turn(side: align.Streams, idx: np.ndarray) -> np.ndarray:
    """`idx` without a position whose token repeats the one before it: the sleeps left out, a
    poll loop's checks come together (rsync's wait4(child, WNOHANG), 20 ms sleeps between:
    checked once where the child was gone at the first check, twice where a sleep came
    between), as loop compression folds them in a stream."""
    if len(idx) < 2:
        return idx
    tok = side.tok[idx]
    return idx[np.r_[True, tok[1:] != tok[:-1]]]


def _with_previous(bs: align.Streams, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of the events at positions `pos` and of the event before each in its thread,
    and whether both are real calls of one thread (not the stream's first event, no END)."""
    prev = np.maximum(pos - 1, 0)
    row, prow = bs.orig[pos], bs.orig[prev]
    ok = (pos > 0) & (row >= 0) & (prow >= 0) & (bs.sid[prev] == bs.sid[pos])
    return np.maximum(row, 0), np.maximum(prow, 0), ok


def _news_all(bs: align.Streams, regions: align.Regions, pos: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per region: whether every new event in it (positions `pos`) is one of its kind (`ok`,
    per position of `pos`); true for a region without new events."""
    misfit = np.zeros(len(bs), dtype=bool)
    misfit[pos[~ok]] = True
    return ~regions.max_over(misfit)


def _returned_at(p: Prepared, rows: np.ndarray, outcomes: EventColumns) -> np.ndarray:
    """When each of `rows` (-1: none, read as row 0) returned: ts_ns + latency_ns, in source
    order through p.order (the outcome columns are not in the prepared rows)."""
    src = np.asarray(p.order)[np.maximum(rows, 0)]
    ts = numpy_of(pc.fill_null(outcomes.column("ts_ns"), 0))[src]
    return ts + numpy_of(pc.fill_null(outcomes.column("latency_ns"), 0))[src]


def _interrupted(errno: str) -> bool:
    """An errno saying a signal interrupted the call (EINTR, the kernel's ERESTART*)."""
    return errno == "EINTR" or errno.startswith("ERESTART")


def _near(p: Prepared, row: int, bs: align.Streams, pos: int, window: int) -> bool:
    """Whether bad row `row` is an event of the same thread as bad position `pos`, at most
    `window` rows before or after it (rows of a stream are consecutive, in order)."""
    at = int(bs.orig[pos]) if bs.orig[pos] >= 0 else (int(bs.orig[pos - 1]) + 1 if pos > 0 else -1)
    if at < 0 or not 0 < abs(at - row) <= window:
        return False
    same = at if at < len(p) and int(p.tkey[at]) == -1 else at - 1  # END: the thread's last row
    return int(p.tid[same]) == int(p.tid[row]) and int(p.tkey[same]) == int(p.tkey[row]) == -1


def _error_before(p: Prepared, row: int, timing_codes: np.ndarray, noise: frozenset[int]) -> int:
    """The bad row of the thread's call right before bad row `row`, noise calls, message
    writes and a failed call's clean-up (`DESCRIPTOR_RELEASES`) passed over, when it failed with an errno that is not timing (and is no message
    catalog lookup); -1 otherwise."""
    if row <= 0:
        return -1

    def same_thread(q: int) -> bool:
        return q >= 0 and int(p.tkey[q]) == int(p.tkey[row]) and int(p.tid[q]) == int(p.tid[row])

    passed = set(codes_where(p.probe_values, MESSAGE_WRITES | DESCRIPTOR_RELEASES).tolist())
    q = row - 1
    while same_thread(q) and (int(p.probe[q]) in noise or (int(p.probe[q]) in passed and p.errno[q] < 0)):
        q -= 1
    if not same_thread(q) or p.errno[q] < 0 or int(p.errno[q]) in timing_codes:
        return -1
    path = p.path_string(int(p.plainpath[q])) if p.plainpath[q] >= 0 else None
    return -1 if path and MESSAGE_CATALOG.search(path) else q


def good_output_column(good: Any, p: Prepared, nb: int) -> Any:
    """The good side's events column ``output`` (the messages written), read on demand: the diff
    loads the good side without it. Good source row i is the prepared table's row nb + i
    (prepare_both concatenates [bad, good]); None when the good side is not the prepared
    table's tail (another row count: say nothing)."""
    if p.order is None:
        return None
    col = load_table(good, skip=tuple(c for c in ANALYSIS_COLUMNS if c != "output")).column("output")
    return col if len(col) == p.table.num_rows - nb else None


def _bad_row_count(p: Prepared) -> int:
    """Rows of the bad trace (trace key -1): prepare_both puts them first, rows 0..nb-1.
    Counted per stream when the trace key is stored so (no per-row array)."""
    tkey = p.tkey
    if isinstance(tkey, PerStream):
        lengths = np.diff(np.r_[tkey.starts, len(p)])
        return int(lengths[tkey.values < 0].sum())
    return int(np.count_nonzero(np.asarray(tkey) < 0))


def _good_rows_where(mask: np.ndarray, nb: int) -> np.ndarray:
    """Row numbers of the good rows (rows nb..) where `mask`, a bool per good row, holds:
    the tests run on the good rows' slice instead of every row and a trace-key mask."""
    found = np.flatnonzero(mask)
    found += nb
    return found


def _call_keys(p: Prepared, rows: np.ndarray | int) -> np.ndarray:
    """int64 key of (probe, plain normalised path) of `rows`: a call site across runs."""
    return p.probe[rows].astype(np.int64) * np.int64(len(p.npath_values) + 1) + (p.plainpath[rows] + 1)


def _failing_with(p: Prepared, bad_err: np.ndarray, errnos: Any) -> tuple[np.ndarray, np.ndarray]:
    """The rows of `bad_err` whose errno is one of `errnos` (names, or a test of a name), and
    their call sites (`_call_keys`): the candidates of the rules about one kind of error at a
    call the good runs completed (`_retries_given_up`, `_abandoned_waits`)."""
    codes = codes_where(p.errno_values, errnos)
    cand = bad_err[isin(p.errno[bad_err], codes)] if len(codes) else bad_err[:0]
    return cand, _call_keys(p, cand)


def _seq_of(s: align.Streams, pos: np.ndarray, seq_rows: np.ndarray) -> np.ndarray:
    """seq of the source row of each position; END tokens take the seq of the row before."""
    pos = np.asarray(pos)
    orig = s.orig[pos]
    prev = s.orig[np.maximum(pos - 1, 0)]
    row = np.where(orig >= 0, orig, prev)
    return np.where(row >= 0, seq_rows[np.maximum(row, 0)], -1)


def _strip(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e[k] for k in ("seq", "probe", "errno", "path", "path2", "pid", "tid", "comm", "trace_id", "output")}
