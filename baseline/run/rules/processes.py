"""Rules about processes, threads and signals: which bad process plays which good one's role
(`_match_by_exec_history`), how a run ended (`_Teardowns`: killed from outside, a child's
failure, a SIGPIPE'd writer), and the divergences that are only the consequence of another
process's failure (`_demote_consequences`, `_after_failed_child`, `_cause_in_another_process`)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from baseline.run import align
from baseline.run import compute as pc
from baseline.run.normalize import (
    Prepared,
    code_in,
    codes_where,
    isin,
    numpy_of,
    stream_starts,
    unique_ints,
)
from baseline.run.rules.base import (
    DESCRIPTOR_RELEASES,
    END_PROBE,
    EXIT_PROBES,
    FIND_PROBES,
    MESSAGE_WRITES,
    NOT_RECOVERED_BONUS,
    SEVERITY,
    SPAWN_PROBES,
    TIMING_PROBES,
    _interrupted,
    _returned_at,
    _seq_of,
    good_output_column,
)
from baseline.run.traces import (
    EventColumns,
)

# Errors that say the other end of a pipe or socket went away or is not there: a consequence
# when another process of the same run failed (see _demote_consequences).
PEER_ERRNOS = frozenset({"EPIPE", "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ENOTCONN"})
# Calls that send a signal: a successful one by another process of the run, to threads still
# running at that point, is a teardown (see _Teardowns).
SIGNAL_PROBES = frozenset({"kill", "tkill", "tgkill", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo"})
# A shell's report of a job a signal ended: dash's "Terminated", bash's "sh: line 1: 4242 Killed
# cmd", an interactive "[1]+  Terminated  cmd" (strsignal's words for the usual stops)
JOB_STATUS_LINE = re.compile(
    r"(?:\[\d+\][+-]? +)?(?:[^\n:]+: (?:line \d+: )?)?(?:\d+ +)?"
    r"(?:Terminated|Killed|Hangup|Interrupt|Quit|Alarm clock|User defined signal [12])(?: [^\n]*)?\n?",
    re.ASCII)
# A check whether a child has ended: returning 0 (WNOHANG) it is still running.
CHILD_CHECKS = frozenset({"wait4", "waitid"})
# Noise calls (a futex, a signal mask) passed over between a check and its kill, at most.
CHECK_LOOKBACK = 16
# A thread's own end: a stream ending without one was ended from outside (a signal, another
# thread's exit_group).
OWN_END_PROBES = frozenset({"exit", "exit_group"})
# Calls that write to a descriptor. One failing EPIPE as its thread's last call is the writer
# killed by SIGPIPE: its reader had gone (see _sigpipe_deaths).
WRITING_PROBES = frozenset({"write", "writev", "pwrite64", "pwritev", "pwritev2", "sendto", "sendmsg", "sendmmsg",
                            "splice", "sendfile", "sendfile64", "copy_file_range", "vmsplice", "tee"})
# Good streams of the same role compared when deciding a reordering at a thread's end.
MAX_SAME_ROLE = 32


def _match_by_exec_history(p: Prepared, s_rolekey: list[str], is_bad_stream: np.ndarray,
                           good_roles: set[str]) -> list[str]:
    """Role keys for the bad streams whose role no good run has, matched through the names
    their processes carried (`ncomm` at each call, in order): a process is named by its last
    exec'd name, so a launcher that stops before its final `exec job` (a check failing in
    `sh -c '... || exit 3; exec job'`) is `sh` where every good run's is `job`, and its
    children's keys differ by that parent too. A bad process maps to the good one under the
    same (mapped) parent whose names began with all of the bad one's (sh, unshare, sh, then
    job); its threads and children follow it. Other roles are left as they are."""
    starts = stream_starts(p)
    ends = np.r_[starts[1:], len(p)]
    comm = p.ncomm

    def names(i: int) -> tuple[int, ...]:
        c = np.asarray(comm[np.arange(starts[i], ends[i])])
        c = c[c >= 0]
        return tuple(c[np.r_[True, c[1:] != c[:-1]]].tolist()) if len(c) else ()

    good_procs: dict[str, list[tuple[int, ...]]] = {}
    for i in np.flatnonzero(~is_bad_stream).tolist():
        rk = s_rolekey[i]
        if "/~" not in rk:
            good_procs.setdefault(rk, []).append(names(i))
    mapping: dict[str, str] = {}
    bad = sorted(np.flatnonzero(is_bad_stream).tolist(), key=lambda i: s_rolekey[i].count("/"))
    for i in bad:
        rk = s_rolekey[i]
        if "/~" in rk or rk in mapping:
            continue
        parent, _, last = rk.rpartition("/")
        mparent = mapping.get(parent, parent)
        direct = f"{mparent}/{last}" if mparent else last
        if direct in good_roles:
            mapping[rk] = direct
            continue
        mine = names(i)
        for gk in sorted(good_procs):
            if gk.rpartition("/")[0] == mparent and mine and any(
                    len(g) > len(mine) and g[: len(mine)] == mine for g in good_procs[gk]):
                mapping[rk] = gk
                break
    out = list(s_rolekey)
    for i in np.flatnonzero(is_bad_stream).tolist():
        rk = s_rolekey[i]
        if rk in good_roles:
            continue
        proc, sep, thread = rk.partition("/~")
        key = mapping.get(proc, proc) + sep + thread
        if key in good_roles:
            out[i] = key
    return out


class _Teardowns:
    """Threads their run's teardown cut off: a signal (`SIGNAL_PROBES`) another process of
    the run sent successfully, at seq T, while the thread was still running -- it had begun
    before T and made calls after T, or, for a *checked* kill (right after the sender's
    wait4/waitid returned 0: its child was still running), its stream ends with no exit of
    its own (`OWN_END_PROBES`: killed where it stood). A multiprocessing pool terminating
    its workers, a start script's `kill $SRV_PID` ending a server whose daemon threads unwind
    in the middle of a request: where each thread stood when the signal came is timing.

    * A checked kill is itself timing (a good run's check found the child already gone and
      sent none): it is dropped from the streams (`checked`).
    * A good run's thread cut at T says nothing past T, like one the recording cut off: its
      stream gets no END token (`good_cut`, see _beyond_cut_off).
    * A bad thread cut at T by a checked kill, or by a signal the good runs also sent there
      (its window explained), has its error-free regions that reach past T dropped when
      every event of theirs before T is one the good runs have (`past_bad_cut`): its end, or
      how far it got, is the signal's timing. An error is never dropped, nor a thread that
      ended with no signal of its run after it (a crash).

    Signals are few: the work is per signal, over the streams' first and last rows."""

    def __init__(self, p: Prepared, outcomes: EventColumns, noise_codes: np.ndarray, nb: int):
        n = len(p)
        self.checked = np.zeros(0, dtype=np.int64)
        self.good_cut = np.zeros(0, dtype=bool)
        self.cut_by_exit = np.zeros(0, dtype=bool)  # per stream: its process's exit_group cut it
        self.any_bad = False
        sig = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, SIGNAL_PROBES), len(p.probe_values)))
        sig = sig[p.errno[sig] < 0]  # (one row-sized temporary: signals are few)
        starts = stream_starts(p)
        self.good_cut = np.zeros(len(starts), dtype=bool)
        self.cut_by_exit = np.zeros(len(starts), dtype=bool)
        s_tkey = np.asarray(p.tkey[starts]).astype(np.int64)
        self.bad_stream = s_tkey < 0
        # per stream: the first teardown that cut it (seq), for checked kills and for any signal
        inf = np.iinfo(np.int64).max
        self.cut_checked = np.full(len(starts), inf, dtype=np.int64)
        self.cut_any = np.full(len(starts), inf, dtype=np.int64)
        self.bad_signals: list[tuple[int, int]] = []  # (row, seq) of the bad run's unchecked signals
        self._spawned = (p, outcomes, starts)  # for _silent_children, worked out only when asked
        # a process's exit_group: the process's own end, cutting off its threads still running
        ends = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, ("exit_group",)), len(p.probe_values)))
        if not len(sig) and not len(ends):
            return  # (no teardown: a recording cut by -d or -p's detach, a trace another tool wrote)
        # the sender's call before each signal (noise passed over): a child check that said running
        prev = np.maximum(sig - 1, 0)
        moving = np.flatnonzero(code_in(p.probe[prev], noise_codes, len(p.probe_values)) & (prev > 0))
        for _ in range(CHECK_LOOKBACK):
            if not len(moving):
                break
            prev[moving] -= 1
            moving = moving[(prev[moving] > 0) & code_in(p.probe[prev[moving]], noise_codes, len(p.probe_values))]
        sig_stream = np.searchsorted(starts, sig, side="right") - 1
        check = (prev < sig) & (np.searchsorted(starts, prev, side="right") - 1 == sig_stream) & code_in(
            p.probe[prev], codes_where(p.probe_values, CHILD_CHECKS), len(p.probe_values))
        checked = np.zeros(len(sig), dtype=bool)
        if check.any():
            ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[prev[check]]]
            checked[np.flatnonzero(check)[ret == 0]] = True
        self.checked = sig[checked]
        last = np.r_[starts[1:], n] - 1
        s_pid = np.asarray(p.pid[starts]).astype(np.int64)
        first_seq, last_seq = np.asarray(p.seq[starts]), np.asarray(p.seq[last])
        silent = ~code_in(p.probe[last], codes_where(p.probe_values, OWN_END_PROBES), len(p.probe_values))
        sig_tkey = np.asarray(p.tkey[sig]).astype(np.int64)
        sig_pid = np.asarray(p.pid[sig]).astype(np.int64)
        sig_seq = np.asarray(p.seq[sig])
        for i in range(len(sig)):
            t = int(sig_seq[i])
            hit = (s_tkey == sig_tkey[i]) & (s_pid != sig_pid[i]) & (first_seq < t) & (
                (last_seq > t) | (silent & bool(checked[i])))
            self.cut_any[hit] = np.minimum(self.cut_any[hit], t)
            if checked[i]:
                self.cut_checked[hit] = np.minimum(self.cut_checked[hit], t)
            elif sig[i] < nb:
                self.bad_signals.append((int(sig[i]), t))
        self._cut_at_exit(p, ends, starts, (s_tkey, s_pid, first_seq), silent)
        self.good_cut = ~self.bad_stream & (self.cut_any < inf)
        self.any_bad = bool((self.bad_stream & (self.cut_any < inf)).any())

    def _cut_at_exit(self, p: Prepared, ends: np.ndarray, starts: np.ndarray, streams: tuple,
                     silent: np.ndarray) -> None:
        """Threads their process's exit cut off: another thread of the process called
        exit_group at seq T after the thread began, and the thread's stream ends with no exit
        of its own (killed where it stood: Python's interpreter exit with a daemon thread
        still tidying up, a C program returning from main while a worker flushes). Where such
        a thread stood at T is timing, like a checked kill's: cut in `cut_checked`."""
        if not len(ends):
            return
        s_tkey, s_pid, first_seq = streams
        # per process (trace, pid): the seq and stream of its first exit_group
        e_stream = np.searchsorted(starts, ends, side="right") - 1
        e_key = s_tkey[e_stream] * np.int64(1 << 32) + s_pid[e_stream]
        e_seq = np.asarray(p.seq[ends]).astype(np.int64)
        order = np.lexsort((e_seq, e_key))
        e_key, e_seq, e_stream = e_key[order], e_seq[order], e_stream[order]
        head = np.r_[True, e_key[1:] != e_key[:-1]]
        e_key, e_seq, e_stream = e_key[head], e_seq[head], e_stream[head]
        key = s_tkey * np.int64(1 << 32) + s_pid
        at = np.minimum(np.searchsorted(e_key, key), len(e_key) - 1)
        hit = (e_key[at] == key) & (e_stream[at] != np.arange(len(key))) & (first_seq < e_seq[at]) & silent
        t = np.where(hit, e_seq[at], np.iinfo(np.int64).max)
        np.minimum(self.cut_any, t, out=self.cut_any)
        np.minimum(self.cut_checked, t, out=self.cut_checked)
        self.cut_by_exit = hit

    def good_cut_points(self, gs: align.Streams, g_start: np.ndarray, g_end: np.ndarray, seq_rows: np.ndarray,
                        matched_role: list[str]) -> dict[str, np.ndarray]:
        """Per role: where each cut good thread stood when the teardown came -- the token of its
        last call before it (one token: loop compression folds a pair differently in a run
        that went on). What it did after (a daemon thread unwinding, loading libgcc_s) is the
        teardown's doing."""
        out: dict[str, list[int]] = {}
        for j in np.flatnonzero(self.good_cut & (g_end > g_start)).tolist():
            lo, hi = int(g_start[j]), int(g_end[j])
            orig = gs.orig[lo:hi]
            seqs = np.where(orig >= 0, seq_rows[np.maximum(orig, 0)], np.iinfo(np.int64).max)
            before = np.flatnonzero(seqs < self.cut_any[j])
            if len(before):
                out.setdefault(matched_role[j], []).append(int(gs.tok[lo + int(before[-1])]))
        return {role: np.array(keys, dtype=gs.tok.dtype) for role, keys in out.items()}

    def past_bad_cut(self, regions: align.Regions, bs: align.Streams, explained: np.ndarray, novel: np.ndarray,
                     b_cls: np.ndarray, seq_rows: np.ndarray, cleanups: np.ndarray) -> align.Regions:
        """`regions` without the error-free ones of bad threads cut by a teardown that reach past
        it and have, before it, only events the good runs have (see the class). A descriptor
        given back EBADF past the teardown (`cleanups`, see _unwind_cleanups) counts as no error
        there: the signal's unwinding tidying up a request its handler had already closed."""
        cut = self.cut_checked.copy()
        # an unchecked signal counts when the good runs sent it at that point too
        for row, t in self.bad_signals:
            at = np.flatnonzero(bs.orig == row)
            if len(at) and explained[at[0]]:
                hit = self.bad_stream & (self.cut_any == t)
                cut[hit] = np.minimum(cut[hit], t)
        inf = np.iinfo(np.int64).max
        keep = np.ones(len(regions), dtype=bool)
        for r in np.flatnonzero(cut[regions.sid] < inf).tolist():
            lo, hi = int(regions.start[r]), int(regions.end[r]) + 1
            orig = bs.orig[lo:hi]
            after = (orig < 0) | (seq_rows[np.maximum(orig, 0)] > cut[int(regions.sid[r])])
            if ((b_cls[lo:hi] > 0) & ~(cleanups[lo:hi] & after)).any():
                continue
            # past the teardown, and nothing new before it
            keep[r] = not (after.any() and not (novel[lo:hi] & ~explained[lo:hi] & ~after).any())
        if keep.all():
            return regions
        return align.Regions(regions.start[keep], regions.end[keep], regions.sid[keep])


    def _stood(self, gs: align.Streams, g_bounds: tuple, matched_role: list[str],
               seq_rows: np.ndarray) -> dict[str, list[int | None] | None]:
        """Per role: the token each cut good thread of it last made before its cut (None: cut
        before its first call), or None when some good thread of the role was not cut."""
        g_start, g_end = g_bounds
        stood: dict[str, list[int | None] | None] = {}
        for j in np.flatnonzero(~self.bad_stream).tolist():
            role = matched_role[j]
            if not self.good_cut[j]:
                stood[role] = None
                continue
            if role in stood and stood[role] is None:
                continue
            lo, hi = int(g_start[j]), int(g_end[j])
            orig = gs.orig[lo:hi]
            seqs = np.where(orig >= 0, seq_rows[np.maximum(orig, 0)], np.iinfo(np.int64).max)
            before = np.flatnonzero(seqs < self.cut_any[j])
            stood.setdefault(role, []).append(int(gs.tok[lo + int(before[-1])]) if len(before) else None)  # type: ignore[union-attr]
        # A thread role no good run has a stream of, where every good run's process of it made a
        # thread that never made a call: cut before its first one (a worker pool started as main
        # exited, whose threads the scheduler ran in some good runs and in none in others).
        absent = {matched_role[j] for j in np.flatnonzero(self.bad_stream).tolist()} - set(stood)
        absent = {role for role in absent if "/~" in role}
        if absent:
            silent = self._silent_children(matched_role)
            goods = int(np.count_nonzero(unique_ints(np.asarray(self._spawned[0].tkey[self._spawned[2]])) >= 0))
            for role in absent:
                parent = role.rsplit("/~", 1)[0]
                if goods and all(parent in roles for roles in silent.values()) and len(silent) == goods:
                    stood[role] = [None]
        return stood

    def _silent_children(self, matched_role: list[str]) -> dict[int, set[str]]:
        """Per good trace (tkey): the roles of the streams that made a thread or process
        (`SPAWN_PROBES`, its id returned) which made no call in that trace -- cut off by an exit
        before its first one."""
        p, outcomes, starts = self._spawned
        rows = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, SPAWN_PROBES), len(p.probe_values))
                              & (np.asarray(p.tkey) >= 0))
        if not len(rows):
            return {}
        ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[rows]]
        s_tkey = np.asarray(p.tkey[starts]).astype(np.int64)
        s_tid = np.asarray(p.tid[starts]).astype(np.int64)
        seen = set(zip(s_tkey.tolist(), s_tid.tolist(), strict=True))
        row_sid = np.searchsorted(starts, rows, side="right") - 1
        out: dict[int, set[str]] = {}
        for r, child, sid in zip(rows.tolist(), ret.tolist(), row_sid.tolist(), strict=True):
            tkey = int(p.tkey[r])
            if child > 0 and (tkey, int(child)) not in seen:
                out.setdefault(tkey, set()).add(matched_role[sid])
        return out

    def good_reach(self, bs: align.Streams, gs: align.Streams, b_bounds: tuple, g_bounds: tuple,
                   matched_role: list[str], seq_rows: np.ndarray) -> np.ndarray:
        """Per stream: for a bad thread every good thread of whose role a teardown or its
        process's exit cut off, the position just past the bad thread's last event of a token
        one of them was cut at -- how far the good runs saw that role go; what the bad thread
        did after (its own exit: rt_sigprocmask, madvise, exit, which the good runs' threads
        never reached) is no evidence either way. Else the stream's end."""
        b_start, b_end = b_bounds
        reach = np.asarray(b_end).copy()
        if not (self.good_cut & ~self.bad_stream).any():
            return reach
        stood = self._stood(gs, g_bounds, matched_role, seq_rows)
        for sid in np.flatnonzero(self.bad_stream[: len(reach)]).tolist():
            points = stood.get(matched_role[sid])
            if not points or None in points:
                continue
            lo, hi = int(b_start[sid]), int(b_end[sid])
            at = [np.flatnonzero(bs.tok[lo:hi] == t) for t in points]
            if all(len(a) for a in at):
                reach[sid] = lo + 1 + max(int(a[-1]) for a in at)
        return reach

    def past_every_good_cut(self, regions: align.Regions, bs: align.Streams, gs: align.Streams, b_start: np.ndarray,
                            g_bounds: tuple, b_cls: np.ndarray, matched_role: list[str],
                            seq_rows: np.ndarray) -> align.Regions:
        """`regions` without those of a bad thread its process's exit cut off that begin past
        the point where every good run's thread of its role was cut off too (by a teardown or
        its own process's exit) and hold soft errors at most: no good run saw that role go
        that far, so a routine miss there (a background poller's probe of an optional file,
        reached in this run only because main exited later) is no evidence either way. A hard
        error there, and any error before the good runs' farthest cut, is still reported."""
        if not len(regions) or not (self.cut_by_exit & self.bad_stream).any():
            return regions
        stood = self._stood(gs, g_bounds, matched_role, seq_rows)
        keep = np.ones(len(regions), dtype=bool)
        for r in np.flatnonzero(self.cut_by_exit[regions.sid]).tolist():
            start, end, sid = int(regions.start[r]), int(regions.end[r]), int(regions.sid[r])
            points = stood.get(matched_role[sid])
            if not points or (b_cls[start : end + 1] > 1).any():
                continue
            passed = bs.tok[int(b_start[sid]) : start]
            keep[r] = not all(t is None or bool((passed == t).any()) for t in points)
        if keep.all():
            return regions
        return align.Regions(regions.start[keep], regions.end[keep], regions.sid[keep])


def _unwind_cleanups(p: Prepared, bs: align.Streams) -> np.ndarray:
    """Bad positions that give a descriptor back failing EBADF (`DESCRIPTOR_RELEASES` and shutdown):
    past a teardown signal in the thread it interrupted, the unwinding's clean-up of a descriptor
    already gone -- SIGTERM landing in socketserver's process_request after the handler closed
    the request, whose `except: shutdown_request(request)` then shuts the closed socket down."""
    calls = codes_where(p.probe_values, DESCRIPTOR_RELEASES | {"shutdown"})
    ebadf = codes_where(p.errno_values, ("EBADF",))
    rows = np.maximum(bs.orig, 0)
    return (bs.orig >= 0) & code_in(p.probe[rows], calls, len(p.probe_values)) & code_in(
        p.errno[rows], ebadf, len(p.errno_values))


def _reordered_at_end(p: Prepared, sids: np.ndarray, bs: align.Streams, gs: align.Streams, b_bounds: tuple,
                      g_bounds: tuple, matched_role: list[str], s_tkey: np.ndarray,
                      same_exit: bool = False) -> np.ndarray:
    """For bad streams `sids` whose last region has no error and only events the good runs
    have: whether the thread did every kind of event a good thread of its role did -- or all
    the bad run's threads of its role together did what a good run's did (a thread pool shares
    its work differently each run). Then the region is the same work in another order (a set
    iterated under a per-run hash seed), not a thread stopping early. In a run exiting as the
    good runs did, so is a thread whose kinds missing from a good one's were all done by other
    threads of its process: work the program hands to a thread of its own in some runs (zstd
    -T0 reads a large enough input on its I/O thread, a smaller one on its main thread)."""
    streams_of: dict[tuple[str, int], list[int]] = {}
    for j in range(len(s_tkey)):
        streams_of.setdefault((matched_role[j], int(s_tkey[j])), []).append(j)
    sleeps = codes_where(p.probe_values, TIMING_PROBES)

    def tokens(side: align.Streams, bounds: tuple, js: list[int]) -> np.ndarray:
        lo, hi = bounds
        at = np.concatenate([np.arange(lo[j], hi[j]) for j in js]) if js else np.zeros(0, dtype=np.int64)
        # (a sleep is no kind of work: whether a thread slept in its exit handshake is timing)
        orig = side.orig[at]
        slept = (orig >= 0) & code_in(p.probe[np.maximum(orig, 0)], sleeps, len(p.probe_values))
        return unique_ints(side.tok[at[~slept]])

    out = np.zeros(len(sids), dtype=bool)
    threads_of: dict[int, list[int]] | None = None  # pid -> the bad run's streams of it (made when asked)
    for i, sid in enumerate(sids.tolist()):
        role = matched_role[sid]
        goods = [key for key in streams_of if key[0] == role and key[1] >= 0][:MAX_SAME_ROLE]
        mine = tokens(bs, b_bounds, [sid])
        singles = [j for key in goods for j in streams_of[key]][:MAX_SAME_ROLE]
        out[i] = any(isin(tokens(gs, g_bounds, [j]), mine).all() for j in singles)
        if not out[i] and goods:
            ours = tokens(bs, b_bounds, streams_of[(role, -1)])
            out[i] = any(isin(tokens(gs, g_bounds, streams_of[key]), ours).all() for key in goods)
        if not out[i] and same_exit and singles:
            if threads_of is None:
                threads_of = {}
                for j in np.flatnonzero(s_tkey == -1).tolist():
                    threads_of.setdefault(_stream_pid(p, bs, b_bounds, j), []).append(j)
            siblings = [j for j in threads_of.get(_stream_pid(p, bs, b_bounds, sid), []) if j != sid]
            theirs = tokens(bs, b_bounds, siblings)
            out[i] = any(isin(kinds[~isin(kinds, mine)], theirs).all()
                         for kinds in (tokens(gs, g_bounds, [j]) for j in singles))
    return out


def _stream_pid(p: Prepared, side: align.Streams, bounds: tuple, j: int) -> int:
    """The process of stream `j` (-1: no call of it in `side`)."""
    lo, hi = int(bounds[0][j]), int(bounds[1][j])
    rows = side.orig[lo:hi]
    rows = rows[rows >= 0]
    return int(p.pid[rows[0]]) if len(rows) else -1


# Programs that only wait: a role of theirs the bad trace lacks is no missing process -- how many
# waits a retry loop made (`until [ -e f ]; do sleep 0.02; done`: none when the file was there
# at once) is timing, and a fault that skips a wait shows in what the loop waited for.
WAIT_ONLY_PROGRAMS = frozenset({"sleep", "usleep"})


def _missing_roles(s_tkey: np.ndarray, s_rolekey: list[str], matched_role: list[str], is_bad_stream: np.ndarray,
                   n_good: int) -> list[str]:
    """Process roles every good trace has and the bad trace lacks (threads aside: their
    process's clone calls already diverge; programs that only wait aside: WAIT_ONLY_PROGRAMS),
    sorted."""
    per_trace_roles: dict[int, set[str]] = {}
    for tk, rk in zip(s_tkey, s_rolekey, strict=True):
        per_trace_roles.setdefault(int(tk), set()).add(rk)
    common = set.intersection(*(per_trace_roles.get(t, set()) for t in range(n_good))) if n_good else set()
    bad_roles = {matched_role[i] for i in np.flatnonzero(is_bad_stream)} | per_trace_roles.get(-1, set())
    # (role keys: no `#i` rank to strip)
    return [rk for rk in sorted(common - bad_roles)
            if not rk.rsplit("/", 1)[-1].startswith("~") and rk.rsplit("/", 1)[-1] not in WAIT_ONLY_PROGRAMS]


# Successful calls that change a file other processes may be using (see _cause_in_another_process).
CHANGING_CALLS = frozenset({"truncate", "ftruncate", "unlink", "unlinkat", "rename", "renameat", "renameat2"})


def _killed_threads(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, max_weight: np.ndarray,
                    recovered: np.ndarray, has_novel: np.ndarray, b_end: np.ndarray) -> None:
    """A region reaching the end of its thread, with no error, no event new to the good runs of
    the role, and no exit call of the thread's own before the end (its last call is an ordinary
    one: a read, a write) is a thread killed by a signal -- strace's `+++ killed by SIGSEGV +++`,
    SIGBUS, the OOM killer's SIGKILL; the recorder sees no signal, only the calls stopping. Its
    known calls before the end are in the region only because the end shares their window:
    the region is named by its end (`(end of thread)`), not by the first of them (a filter in a
    pipeline killed after a read of its input, where the good runs' filter read on). Updates
    `named` in place. A thread still running when its recording stopped has no end token and
    is never one of these. A thread's own `exit` is a noise probe, dropped from its stream, so a
    thread of a multi-threaded process stopping early with nothing new is named by its end
    too -- where it stopped, END's documented meaning; only a process's exit_group stays to say
    it ended by itself."""
    ends = regions.end
    last = bs.orig[np.maximum(ends - 1, 0)]
    cand = ((max_weight == 0) & ~recovered & ~has_novel & (ends == b_end[regions.sid] - 1) & (bs.orig[ends] < 0)
            & (ends > regions.start) & (last >= 0))
    if not cand.any():
        return
    exits = codes_where(p.probe_values, EXIT_PROBES)
    cand &= ~isin(p.probe[np.maximum(last, 0)], exits)
    named[cand] = ends[cand]


def _cause_in_another_process(p: Prepared, nb: int, anomalies: list[dict[str, Any]]) -> None:
    """The top anomaly -- an error at a path, or a thread's end with nothing failed (killed by
    a signal) -- put behind an error-free divergence of *another* process of the bad run that
    made it happen, which then ranks first (its score raised to the top one's; ties go to the
    earliest event). The divergence is a successful call that
    * changed the file the failing thread was using: a truncate, an unlink, a rename, an open
      with O_TRUNC (`CHANGING_CALLS`) at a path the ended thread's process had used before
      (a cleaner truncating a shard a job had mapped: the job dies of SIGBUS touching it), or
      at the very path of the error; or
    * went elsewhere where the good runs touched the error's path at that point (`good_instead`
      holds it): the build step writing its result to the directory its config names, so the
      publish step's cp finds no result where every good run's build had put it.
    The top anomaly is the consequence: what the person needs is the call that made it.
    Updates `anomalies` in place (order and ranks)."""
    if len(anomalies) < 2 or p.pid is None:
        return
    top = anomalies[0]
    ended = top["probe"] == END_PROBE and top["errno"] is None
    if not ended and (top["errno"] is None or not top["npath"]):
        return
    top_pid = top["process"]["pid"]
    used: set[int] | None = None
    for i, a in enumerate(anomalies[1:], start=1):
        row = a["_row"]
        if (a["kind"] != "divergence" or a["errno"] is not None or row < 0 or row >= nb
                or a["process"]["pid"] in (None, top_pid) or not a["npath"]):
            continue
        changing = a["probe"] in CHANGING_CALLS or (
            a["probe"] in FIND_PROBES and "O_TRUNC" in str(p.value("arg", row) or ""))
        if ended:
            if not changing:
                continue
            if used is None:
                mine = np.flatnonzero(p.pid[:nb] == top_pid)
                used = set(unique_ints(p.plainpath[mine]).tolist())
            hit = int(p.plainpath[row]) in used
        else:
            # (going elsewhere: a call at the error's own path that the good runs made there
            # too -- run-parts' stat of the script whose exec then failed, its loop's waits
            # interleaved another way under load -- is the same step, not its cause)
            hit = a["position"] < top["position"] and (
                (changing and a["npath"] == top["npath"])
                or (a["npath"] != top["npath"] and top["npath"] in a["_good_npaths"]))
        if hit:
            a["score"] = max(float(a["score"]), float(top["score"]))
            a["rank"], top["rank"] = top["rank"], a["rank"]
            anomalies.insert(0, anomalies.pop(i))
            return


def _raised_signals(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, max_cls: np.ndarray,
                    b_end: np.ndarray) -> None:
    """A region with no error reaching the end of its thread -- its END, no exit call of the
    thread's own -- whose last call, in the region, is a signal sent successfully
    (`SIGNAL_PROBES`) is a thread that signalled itself and died of it: abort() (glibc:
    gettid, getpid, tgkill SIGABRT) after a check failed, raise(), a script's kill of its own
    process group. strace shows `+++ killed by SIGABRT +++` right after that call; the region is
    named by it, not by the first new call of the abort's preamble (gettid says nothing).
    Nothing failed before it, so the region has no error to name. Updates `named` in place."""
    ends = regions.end
    last = bs.orig[np.maximum(ends - 1, 0)]
    cand = ((max_cls == 0) & (ends == b_end[regions.sid] - 1) & (bs.orig[ends] < 0) & (ends - 1 >= regions.start)
            & (last >= 0))
    if not cand.any():
        return
    signals = codes_where(p.probe_values, SIGNAL_PROBES)
    at = np.maximum(last, 0)
    cand &= isin(p.probe[at], signals) & (p.errno[at] < 0)
    named[cand] = ends[cand] - 1


# What a signal handler does between the signal and the re-raise that ends its process (coreutils
# sort's handler for SIGPIPE: its temporary files removed, the default action restored, then
# raise(): rt_sigaction, gettid, getpid, tgkill, rt_sigreturn), at most RERAISE_TAIL calls.
RERAISE_CALLS = SIGNAL_PROBES | {"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "gettid", "getpid",
                                 "getppid", "unlink", "unlinkat", "close", "munmap", "write"}
RERAISE_TAIL = 32


def _sigpipe_deaths(p: Prepared, s_tkey: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threads killed by SIGPIPE: a stream whose last call is a write (`WRITING_PROBES`) failing
    EPIPE -- the reader had gone, and the default action of the signal that comes with the
    error ended the process there (a writer that handles it goes on, or exits) -- or one to a
    pipe that returned what it had written when the reader left, or one whose handler of the
    signal cleaned up and raised it again after the failed write (`RERAISE_CALLS`: sort).
    Returns the failed (or last) writes' rows, the handler's rows after them, and per stream
    whether its process is one of them (every thread of a process the signal killed stops
    where it stood): `cut -f1 log | head -3` -- whether cut finished its file before head had
    its three lines, or was killed after 1 or 17 writes, is timing."""
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(len(s_tkey), dtype=bool))
    epipe = codes_where(p.errno_values, ("EPIPE",))
    if not len(s_tkey):
        return none
    starts = stream_starts(p)
    last = np.r_[starts[1:], len(p)] - 1
    writing = codes_where(p.probe_values, WRITING_PROBES)
    writes = code_in(p.probe[last], writing, len(p.probe_values))
    hit = writes & code_in(p.errno[last], epipe, len(p.errno_values))
    # ... or a write to a pipe that succeeded and was its thread's last call: a writer blocked
    # on a full pipe whose reader left wakes with what it wrote so far, and the next write's
    # signal kills it before that write's return is recorded (cat | grep -m2)
    ended_writing = writes & (p.errno[last] < 0) & (p.plainpath[last] >= 0)
    if ended_writing.any():  # (the few paths those writes name, not every distinct path)
        codes = unique_ints(p.plainpath[last[ended_writing]])
        pipes = codes[[str(p.npath_values[int(c)]).startswith("pipe:") for c in codes.tolist()]]
        hit |= ended_writing & isin(p.plainpath[last], pipes)
    write_rows = last.copy()
    tails: list[np.ndarray] = []
    # ... or a handler's re-raise after the failed write: the stream's last EPIPE write, then
    # only the handler's calls, one of them a signal sent
    n_probes = len(p.probe_values)
    reraise = codes_where(p.probe_values, RERAISE_CALLS)
    ending_in_handler = np.flatnonzero(~hit & code_in(p.probe[last], reraise, n_probes) & (len(epipe) > 0))
    if len(ending_in_handler):
        senders = codes_where(p.probe_values, SIGNAL_PROBES)
        for i in ending_in_handler.tolist():
            end = int(last[i])
            lo = max(int(starts[i]), end - RERAISE_TAIL)
            probes, errnos = p.probe[lo:end + 1], p.errno[lo:end + 1]
            written = code_in(probes, writing, n_probes)
            handler = code_in(probes, reraise, n_probes) & ~(written & (errnos >= 0))
            before = np.flatnonzero(~handler)  # the handler's calls run from after the last of these
            if not len(before):
                continue
            k = int(before[-1])
            if not (written[k] and code_in(errnos[k:k + 1], epipe, len(p.errno_values))[0]) \
                    or not code_in(probes[k + 1:], senders, n_probes).any():
                continue
            hit[i] = True
            write_rows[i] = lo + k
            tails.append(np.arange(lo + k + 1, end + 1, dtype=np.int64))
    if not hit.any():
        return none
    # (trace, pid) as one key: the trace number (-1 for the bad run) above the 32-bit pid
    process = (s_tkey.astype(np.int64) + 1) * (1 << 32) + np.asarray(p.pid[starts]).astype(np.int64)
    tail_rows = np.concatenate(tails) if tails else np.zeros(0, dtype=np.int64)
    return write_rows[hit].astype(np.int64), tail_rows, isin(process, unique_ints(process[hit]))


def _killed(p: Prepared, bs: align.Streams, named: np.ndarray, recovered: np.ndarray) -> np.ndarray:
    """Per region: named by the end of its thread, which its last call was no exit of its own
    -- a thread killed by a signal (see `_killed_threads`)."""
    end = (bs.orig[named] < 0) & ~recovered & (named > 0)
    last = bs.orig[np.maximum(named - 1, 0)]
    end &= (last >= 0) & (bs.sid[np.maximum(named - 1, 0)] == bs.sid[named])
    return end & ~isin(p.probe[np.maximum(last, 0)], codes_where(p.probe_values, EXIT_PROBES))


def _demote_consequences(p: Prepared, bs: align.Streams, named: np.ndarray, region_end: np.ndarray,
                         max_cls: np.ndarray, recovered: np.ndarray, b_start: np.ndarray, score: np.ndarray,
                         hard_change: np.ndarray, killed: np.ndarray, outcomes: EventColumns) -> None:
    """An error saying the other end went away (`PEER_ERRNOS`: EPIPE, ECONNREFUSED, ...) is a
    consequence when another process of the bad run failed -- without recovering, or with a
    hard error at a call the good runs completed, or with any error there right before its
    thread ended (`hard_change`) -- before its region ended: it
    is scored as a soft error without the outcome-change bonus, so the cause ranks first. A
    region's end, not the named call, is compared: a writer's blocked write enters before the
    reader fails and returns EPIPE after; a client refused while the server starts keeps being
    refused after the server died.

    A thread of another process *killed* (`killed`: named by its end, no error of its own --
    the pipeline's filter dying of SIGSEGV) is such a cause when it died before the error
    returned, and the error then ranks below the death. Sequence numbers cannot say that: they
    order calls by entry, and the writer's blocked write entered before the filter's last read
    in some runs, after it in others. Times can: the death came after its thread's last call
    returned (`ts_ns + latency_ns`), and the kernel answers EPIPE only after the reader is gone,
    so the error's return at or after that time says the death may have caused it."""
    rows = bs.orig[named]
    errno = np.where(rows >= 0, p.errno[np.maximum(rows, 0)], -1)
    _demote_killed_waits(p, named, rows, errno, max_cls, recovered, hard_change, score, outcomes)
    codes = codes_where(p.errno_values, PEER_ERRNOS)
    peer = isin(errno, codes) & (max_cls > 0)
    if not peer.any():
        return
    pid = p.pid[bs.orig[b_start[bs.sid[named]]]]  # each stream's first position is a real row
    seq = p.seq[np.maximum(rows, 0)]
    ended = _seq_of(bs, region_end, p.seq)
    # failed: without recovering, or with a hard error where the good runs succeeded (grep
    # unable to read its patterns exits the way a good grep does, but the pipe's reader is gone)
    fatal = (((max_cls > 0) & ~recovered) | hard_change) & ~peer
    killed = killed & ~peer
    returned = None
    if killed.any():  # when each peer error returned and each killed thread's last call did
        last = bs.orig[np.maximum(named - 1, 0)]
        ask = np.where(killed, last, np.where(peer, rows, -1))
        returned = np.where(ask >= 0, _returned_at(p, ask, outcomes), -1)
    for r in np.flatnonzero(peer):
        other = pid != pid[r]
        deaths = killed & other & (returned[r] >= returned) if returned is not None else killed & False
        if (fatal & other & (seq < ended[r])).any() or deaths.any():
            score[r] = SEVERITY[1] + (0.0 if recovered[r] else NOT_RECOVERED_BONUS)
        if deaths.any():  # below the death that caused it
            score[r] = min(score[r], float(score[deaths].max()) - SEVERITY[0] / 2)


def _demote_killed_waits(p: Prepared, named: np.ndarray, rows: np.ndarray, errno: np.ndarray, max_cls: np.ndarray,
                         recovered: np.ndarray, hard_change: np.ndarray, score: np.ndarray,
                         outcomes: EventColumns) -> None:
    """A wait interrupted by a signal (EINTR, ERESTART*: `_abandoned_waits`) that returned after
    another process of the bad run failed (without recovering, or a hard error where the good
    runs succeeded) ranks below that failure: the process was killed in its wait by whoever
    gave up -- perf's workload child blocked on its go pipe, killed once perf's counters were
    refused (real_fortyfifth). Sequence numbers order calls by entry, and the wait entered long
    before; its return (`ts_ns + latency_ns`) came after the failure's."""
    codes = codes_where(p.errno_values, _interrupted)
    waits = isin(errno, codes) & (max_cls > 0) if len(codes) else np.zeros(len(named), dtype=bool)
    if not waits.any():
        return
    fatal = (((max_cls > 0) & ~recovered) | hard_change) & ~waits & (rows >= 0)
    if not fatal.any():
        return
    returned = _returned_at(p, rows, outcomes)
    pid = p.pid[np.maximum(rows, 0)]
    for r in np.flatnonzero(waits & (rows >= 0)).tolist():
        causes = fatal & (pid != pid[r]) & (returned <= returned[r])
        if causes.any():
            score[r] = min(score[r], float(score[causes].max()) - SEVERITY[0] / 2)


# Calls that reap a child, and the calls that make one (their return value: its pid).
CHILD_WAITS = frozenset({"wait4", "waitid", "waitpid"})
CHILD_MAKERS = frozenset({"clone", "clone3", "fork", "vfork"})


def _after_failed_child(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                        error_free: np.ndarray, failing: np.ndarray, score: np.ndarray, b_start: np.ndarray,
                        outcomes: EventColumns, nb: int, k: int) -> None:
    """A region named by an error-free event (`error_free`) whose thread reaped a child within
    the `k` events before it -- a successful wait4/waitid -- after a region with an error
    (`failing`: within `k` events of its thread's end -- the child went from its error to its
    exit, no more work done) in a process that thread's process made (a descendant:
    clone/fork return values) began: the parent only reacted to how the child ended (``sh -e`` exiting instead
    of its next command after ``renice -p`` of a pid that is gone failed ESRCH). Tokens carry
    no exit status, so the reaction is an error-free divergence that never re-joins and
    scores above the child's soft error at a call without a path (no call site, so no
    outcome-change bonus); it is scored just below the child's error instead, so the cause
    ranks first. A child's error that is a fallback the child recovered from is a reordering
    (not in `failing`) and demotes nothing."""
    cand = np.flatnonzero(error_free)
    if not len(cand) or not failing.any():
        return
    waits = codes_where(p.probe_values, CHILD_WAITS)
    makers = codes_where(p.probe_values, CHILD_MAKERS)
    if not len(waits) or not len(makers):
        return
    bad_pid = np.asarray(p.pid[np.arange(nb)])
    made = np.flatnonzero(isin(p.probe[:nb], makers) & (p.errno[:nb] < 0))
    if not len(made):
        return
    ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[made]]
    children: dict[int, set[int]] = {}
    for parent, child in zip(bad_pid[made].tolist(), ret.tolist(), strict=True):
        if child > 0 and child != parent:
            children.setdefault(parent, set()).add(child)
    region_pid = bad_pid[bs.orig[b_start[regions.sid]]]  # each stream's first position is a real row
    started = _seq_of(bs, regions.start, p.seq)
    fail_idx = np.flatnonzero(failing)
    for r in cand.tolist():
        lo, start = max(int(b_start[regions.sid[r]]), int(regions.start[r]) - k), int(regions.start[r])
        before = bs.orig[lo:start]
        before = before[before >= 0]
        if not (isin(p.probe[before], waits) & (p.errno[before] < 0)).any():
            continue
        descendants, todo = set(), [int(region_pid[r])]
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in descendants:
                    descendants.add(c)
                    todo.append(c)
        hit = fail_idx[isin(region_pid[fail_idx], list(descendants)) & (started[fail_idx] < started[r])]
        if len(hit):
            score[r] = min(float(score[r]), float(score[hit].max()) - SEVERITY[0] / 2)


def _lost_children(p: Prepared, nb: int) -> np.ndarray:
    """Bad rows of a wait for one child (wait4(pid), waitid(P_PID/P_PIDFD): the recorder's
    arg "pid") failing ECHILD, of a call whose waits for one child never failed in the good
    runs and returned there at least once: the child was reaped behind the waiter's back
    (SIGCHLD ignored by whoever started it, so the kernel reaped it; another waiter). The
    curated ECHILD entry is for a reaper's wait for any child finding none left; a call whose
    waits for one child the good runs saw fail too is left to it. (Polls and blocking waits are
    one: whether a pool's join polls or blocks is timing.) A wait whose child the process's own
    reaper returned is a success by then (`_reaped_by_own_reaper`), not a candidate."""
    out = np.zeros(len(p), dtype=bool)
    one = codes_where(p.narg_values, {"pid"})
    echild = codes_where(p.errno_values, {"ECHILD"})
    if not len(one) or not len(echild):
        return out
    cand = np.flatnonzero(isin(p.narg[:nb], one) & isin(p.errno[:nb], echild))  # (no path: not in bad_err)
    if not len(cand):
        return out
    good = nb + np.flatnonzero(isin(p.narg[nb:], one))
    returned = unique_ints(p.probe[good[p.errno[good] < 0]])
    failed = unique_ints(p.probe[good[p.errno[good] >= 0]])
    out[cand[isin(p.probe[cand], returned) & ~isin(p.probe[cand], failed)]] = True
    return out


def _reaped_by_own_reaper(p: Prepared, outcomes: EventColumns) -> tuple[np.ndarray, np.ndarray]:
    """(rows of a wait for one child failing ECHILD that its process's own reaper made
    fail, rows of that reaper's waits that returned the child), in the bad run and the good
    runs alike (rsync's generator and sender poll wait4(pid, WNOHANG) between 20 ms sleeps while
    their SIGCHLD handler reaps: which gets the child differs run to run, and a good run's
    failed poll taken as it came, learned as routine and dropped, left the diffed run's taken
    one a call no good run made). A wait for one child
    (wait4(pid), waitid(P_PID): the recorder's arg "pid") finds its child gone when the
    process had already reaped, itself, every child it made before the wait (clone/fork return
    values, all returned by its own successful waits), at least one by a wait for *any* child
    (a SIGCHLD handler's waitpid(-1, WNOHANG)) that no wait for one child returned: the child
    ended before the main line waited, and the handler got there first. Which of the two
    reaps it is the child's timing, so the failed wait is taken for the success it stands for
    and the handler's reaping wait drops out -- the thread then reads like a run in which the
    main line reaped the child and the handler found none left. A child the kernel reaped
    (SIGCHLD ignored) was returned by no wait, and a pid that was never the process's child (a
    daemon that double-forked) leaves every wait for any child accounted for: both stay
    (`_lost_children`). Few rows: the loop is over the failed waits."""
    none = np.zeros(0, dtype=np.int64)
    one = codes_where(p.narg_values, {"pid"})
    echild = codes_where(p.errno_values, {"ECHILD"})
    waits = codes_where(p.probe_values, CHILD_WAITS)
    makers = codes_where(p.probe_values, CHILD_MAKERS)
    if not len(one) or not len(echild) or not len(waits) or not len(makers):
        return none, none
    cand = np.flatnonzero(code_in(p.errno, echild, len(p.errno_values)))  # (errors are few: the rest on them)
    cand = cand[isin(p.narg[cand], one) & isin(p.probe[cand], waits)]
    if not len(cand):
        return none, none
    # a process of a run: (trace, pid) -- runs reuse pids
    pid = np.asarray(p.pid).astype(np.int64)
    proc = np.asarray(p.tkey).astype(np.int64) * np.int64(1 << 32) + pid
    seq = np.asarray(p.seq)
    rows = np.flatnonzero(code_in(p.probe, np.r_[makers, waits], len(p.probe_values)) & (p.errno < 0))
    rows = rows[isin(proc[rows], proc[cand])]
    if not len(rows):
        return none, none
    ret = numpy_of(pc.fill_null(outcomes.column("ret"), -1))[np.asarray(p.order)[rows]]
    is_wait = isin(p.probe[rows], waits)
    for_one = is_wait & isin(p.narg[rows], one)
    hit, reapers = [], []
    for c in cand.tolist():
        mine = (proc[rows] == proc[c]) & (seq[rows] < seq[c]) & (ret > 0)
        made = {int(r) for r in ret[mine & ~is_wait].tolist()} - {int(pid[c])}
        by_one = {int(r) for r in ret[mine & for_one].tolist()}
        by_any = {int(r) for r in ret[mine & is_wait & ~for_one].tolist()}
        if made and made <= (by_one | by_any) and by_any - by_one:
            hit.append(c)
            reapers.extend(rows[mine & is_wait & ~for_one & isin(ret, list(by_any - by_one))].tolist())
    return np.array(hit, dtype=np.int64), unique_ints(np.array(reapers, dtype=np.int64))


def _killed_job_reports(p: Prepared, nb: int, good: Any) -> np.ndarray:
    """Rows (indices, good and bad runs alike) of a shell's report of a job killed by a signal
    the same thread sent (`kill "$srv"; wait "$srv"`): dash says "Terminated" when the job dies
    while it waits, and nothing when it reaped the job before (its SIGCHLD came first) -- timing
    (a start script stopping the http.server it started once its client is done). `good`: the
    good traces, whose messages are read only when such a write follows a signal there."""
    none = np.zeros(0, dtype=np.int64)
    if p.order is None or "output" not in p.table.column_names:
        return none
    n_probes = len(p.probe_values)
    sent = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, SIGNAL_PROBES), n_probes))
    sent = sent[p.errno[sent] < 0]
    if not len(sent):
        return none
    written = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, MESSAGE_WRITES), n_probes))
    # the same thread sent a signal before it (a thread's rows are contiguous, in seq order)
    last_sent = np.searchsorted(sent, written, side="left") - 1
    written = written[(last_sent >= 0) & (p.sid[sent[np.maximum(last_sent, 0)]] == p.sid[written])]
    if not len(written):
        return none
    texts = dict.fromkeys(written.tolist())
    for r in written[written < nb].tolist():
        texts[r] = p.value("output", r)
    if (written >= nb).any() and (good_col := good_output_column(good, p, nb)) is not None:
        for r in written[written >= nb].tolist():
            texts[r] = good_col[int(p.order[r]) - nb].as_py()
    return np.array([r for r, text in texts.items() if text and JOB_STATUS_LINE.fullmatch(text)], dtype=np.int64)
