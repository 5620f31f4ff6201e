"""Rules about time: calls that only waited or slept (`_only_slept`), waits that timed out or
answered empty because of timing (`_TimedOutWaits`, `_EmptyAnswers`), a known step met at
another moment (`_known_step_elsewhere`), reads whose count is timing (`_timing_reads`), and a
run killed inside its waits (`_killed_in_waits`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from baseline.run import align
from baseline.run import compute as pc
from baseline.run.normalize import (
    Prepared,
    code_in,
    codes_where,
    isin,
    numpy_of,
    unique_ints,
)
from baseline.run.rules.base import (
    LISTING_PROBES,
    TIMING_PROBES,
    WALK_GAP,
    _call_keys,
    _failing_with,
    _good_rows_where,
    _interrupted,
    _one_turn,
    _seq_of,
)
from baseline.run.rules.processes import _Teardowns
from baseline.run.traces import (
    EventColumns,
)

# Reading the kernel's random devices is getrandom by another door: where a reader refills its
# buffer is timing (a JVM's NativePRNG reads /dev/urandom again when its buffer is 100 ms old:
# between two createTempFile names in a slow run, before the first in a fast one). A read that
# fails still counts.
RANDOM_DEVICES = frozenset({"/dev/urandom", "/dev/random"})
RANDOM_READS = frozenset({"read", "pread64", "readv", "preadv", "preadv2"})
# Files the C library's allocator reads once per process, at the first moment it needs them,
# which is timing: glibc's malloc opens, reads and closes /proc/sys/vm/overcommit_memory when a
# thread's arena first gives memory back (check_may_shrink_heap) -- in 13 of 20 runs of pigz
# -p 4 on one input, by whichever worker exits first. Their successful calls drop out (any
# call: open, read, close); a failed one still counts.
ALLOCATOR_FILES = frozenset({"/proc/sys/vm/overcommit_memory"})
# How far back past a region `_only_slept` looks for k-1 calls that are no sleeps.
SLEPT_CONTEXT = 64
# The fewest calls of a step a thread repeats that the good runs made on another of the
# program's threads (`_known_step_elsewhere`): one call alone is found anywhere. And the most:
# a step is a few calls (the JVM's CPU count is 9), not a thread's whole other work.
KNOWN_STEP_MIN, KNOWN_STEP_MAX = 2, 64
# Waits for a descriptor that take a timeout: one that returned nothing ready after blocking
# timed out -- the peer never answered, the service never accepted (see _TimedOutWaits).
TIMEOUT_WAITS = frozenset({"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"})
# ... after blocking this long at least: a zero-timeout poll (a readiness check, curl's
# event loop between transfers) returns 0 within microseconds; a wait for an answer that does
# not come returns 0 when its timeout runs out, tens of milliseconds to seconds later.
TIMED_OUT_MIN_NS = 10_000_000
# ... and a wait returning nothing ready after blocking this long at least is a timer's expiry:
# an event loop sleeping until its next timer (node's setTimeout, libuv's epoll_pwait with the
# time left) returns 0 when the timer is due, a millisecond to seconds later.
TIMER_EXPIRY_MIN_NS = 1_000_000
# Reads of a file and listings of a directory: a thread's first one at a path coming back empty
# (read 0, a listing of nothing but "." and "..") where the good runs' first one there had
# content is a different answer from a successful call (see _EmptyAnswers).
FIRST_READ_PROBES = frozenset({"read", "pread64", "readv", "preadv", "preadv2"})
# ... and of a connection: a thread's first read from a peer returning 0 (it closed without
# answering) where the good runs' first read from it had the answer
SOCKET_READ_PROBES = frozenset({"recvfrom", "recvmsg"})
# the paths of a connection's peer (tracer.record.syscalls' socket addresses)
PEER_PREFIXES = ("inet:", "inet6:", "unix:")
# Calls that look at a file without using it: a sweep of a directory of other processes' files
# (HotSpot's start going through /tmp/hsperfdata_<user>/ for dead JVMs' files) opens, checks
# and tries to lock each entry, and leaves the ones another process holds (see _EmptyAnswers).
LOOK_ONLY_PROBES = frozenset({"openat", "open", "openat2", "newfstatat", "fstat", "statx", "lstat", "stat",
                              "fcntl", "flock", "close", "access", "faccessat", "faccessat2", "readlink",
                              "readlinkat"})
LOCK_PROBES = frozenset({"flock", "fcntl"})
LOCK_HELD_ERRNOS = frozenset({"EAGAIN", "EWOULDBLOCK", "EACCES"})
# An empty directory's listing: "." and "..", one 24-byte struct linux_dirent64 each.
EMPTY_LISTING_BYTES = 48


def _empty_listing_cause(p: Prepared, empties: _EmptyAnswers, matched_role: list[str], top: dict[str, Any]) -> int:
    """The row of an empty answer (see _EmptyAnswers) of the bad run before the top anomaly, a
    name not found (`MISSING_NAME_ERRNOS`) at a path under the directory it listed (or at the
    file it read): the shell's glob over an empty directory leaves its pattern as it is, and
    cat fails ENOENT on ``incoming/*.csv``; the listing that came back empty is where the run
    left the good runs' way, the error its consequence. Else -1. Return values are read only
    here, for a run whose top anomaly is such an error."""
    hits = empties.rows[empties._hits(matched_role)]
    if not len(hits):
        return -1
    hits = hits[p.seq[hits] < top["position"]]
    path = top["path"].rstrip("/")
    for r in hits[np.argsort(p.seq[hits])].tolist():
        d = (p.value("path", r) or "").rstrip("/")
        if d and (path == d or path.startswith(d + "/")):
            return int(r)
    return -1


def _timing_reads(p: Prepared) -> np.ndarray:
    """Per row: a successful read of a kernel random device (`RANDOM_DEVICES`), which drops out
    of the streams as getrandom does -- where a reader refills its buffer is timing -- or a
    successful call on a file the allocator reads when it first needs it (`ALLOCATOR_FILES`)."""
    out = np.zeros(len(p.probe), dtype=bool)
    # one Arrow pass over the distinct paths (a Python loop over 143k of them would show)
    watched = sorted(RANDOM_DEVICES | ALLOCATOR_FILES)
    found = numpy_of(pc.fill_null(pc.is_in(p.npath_values.arrow, value_set=pa.array(watched)), False))
    if not found.any():
        return out
    found_paths = p.npath_values.arrow.filter(pa.array(found)).to_pylist()
    codes = np.flatnonzero(found)
    devices = codes[[path in RANDOM_DEVICES for path in found_paths]]
    allocator = codes[[path in ALLOCATOR_FILES for path in found_paths]]
    ok = p.errno < 0
    if len(devices):
        reads = codes_where(p.probe_values, RANDOM_READS)
        out |= code_in(p.probe, reads, len(p.probe_values)) & code_in(p.plainpath, devices, len(p.npath_values))
    if len(allocator):
        out |= code_in(p.plainpath, allocator, len(p.npath_values))
    return out & ok


def _only_slept(p: Prepared, sides: tuple[align.Streams, align.Streams], regions: align.Regions,
                max_cls: np.ndarray, gh: np.ndarray, role_hash: np.ndarray, k: int,
                bounds: tuple[tuple, tuple], roles: tuple[list[str], np.ndarray]) -> np.ndarray:
    """Per region: error-free, and, once the successful sleeps and time measurements
    (`TIMING_PROBES`) are left out of its thread and of the good streams of its role, only
    windows those have: the thread slept where the good runs did not, or did not where they did,
    and did nothing else new -- a backoff's sleeps (HotSpot's VM Thread waiting 1 ms at a time
    for a safepoint, in some runs and not others), a periodic task's CPU-time samples (G1's
    service thread, whose first task a slow run's shutdown came before). A sleep followed by a
    call the good runs never made there keeps its
    region. `sides` is (bad, good) streams, `bounds` their (start, end) per stream and `roles`
    (matched role per stream, whether the stream is the bad run's)."""
    out = np.zeros(len(regions), dtype=bool)
    cand = np.flatnonzero(max_cls == 0)
    sleeps = codes_where(p.probe_values, TIMING_PROBES)
    if not len(cand) or not len(sleeps):
        return out
    (bs, gs), (b_bounds, g_bounds), (matched_role, is_bad_stream) = sides, bounds, roles

    def slept(side: align.Streams, lo: int, hi: int) -> np.ndarray:
        rows = side.orig[lo:hi]
        at = np.maximum(rows, 0)
        return (rows >= 0) & code_in(p.probe[at], sleeps, len(p.probe_values)) & (p.errno[at] < 0)

    awake: dict[str, np.ndarray | None] = {}  # role -> window hashes of its good streams without sleeps

    def good_awake(role: str) -> np.ndarray | None:
        if role not in awake:
            parts = []
            for j in np.flatnonzero(~is_bad_stream).tolist():
                if matched_role[j] == role:
                    lo, hi = int(g_bounds[0][j]), int(g_bounds[1][j])
                    asleep = slept(gs, lo, hi)
                    if asleep.any():
                        parts.append(gs.take(_one_turn(gs, lo + np.flatnonzero(~asleep))))
            awake[role] = None if not parts else align.window_hashes(
                align.Streams(*(np.concatenate([getattr(x, f) for x in parts]) for f in ("tok", "sid", "orig"))),
                role_hash, k)
        return awake[role]

    for r in cand.tolist():  # the error-free regions only, each with the windows through it
        sid, start, end = int(regions.sid[r]), int(regions.start[r]), int(regions.end[r])
        first = int(b_bounds[0][sid])
        lo, hi = max(first, start - (k - 1) - SLEPT_CONTEXT), min(int(b_bounds[1][sid]), end + k)
        asleep = slept(bs, lo, hi)
        model = good_awake(matched_role[sid])
        if model is None and not asleep[start - lo : end + 1 - lo].any():
            continue  # no sleep here nor in the good runs of the role: not this rule's
        idx = _one_turn(bs, lo + np.flatnonzero(~asleep))
        before = np.count_nonzero(idx < start)
        if before < k - 1 and lo != first:
            continue  # sleeps all the way back: too little context to tell (kept named)
        # every window ending in the region or in the k-1 positions after it, each with k-1
        # calls before it that are no sleeps (or the stream's start): a window of fewer would
        # be padded as if the stream began there and match any good stream's start
        idx = idx[max(0, before - (k - 1)) :]
        h = align.window_hashes(bs.take(idx), role_hash, k)[idx >= start]
        if not len(h) or (idx[0] != first and before < k - 1):
            continue
        seen = align.seen_in(h, gh)
        if model is not None:
            seen |= align.seen_in(h, model)
        out[r] = bool(seen.all())
    return out


def _known_step_elsewhere(sides: tuple[align.Streams, align.Streams], regions: align.Regions, max_cls: np.ndarray,
                          novel: np.ndarray, gh: np.ndarray, role_hash: np.ndarray, k: int,
                          b_bounds: tuple[np.ndarray, np.ndarray], reach: np.ndarray) -> np.ndarray:
    """Per region: error-free, its new events (`novel`: none of its role's good streams has
    them) inside one block of KNOWN_STEP_MIN..KNOWN_STEP_MAX calls (grown by up to k-1 of the region's
    other events each side, or of the calls leading into it: a step's first call may be one the
    thread makes in the good runs as well -- zstd's stat of its input, then the reads its I/O
    thread makes in runs of a larger input) that some good stream made in that very order (on another thread:
    the events' tokens know no role), and without that block its thread did only what the good
    runs of its role did (every window through the gap is one of theirs, a loop the block split
    joined again) -- one more turn of a step the program takes elsewhere: HotSpot's VM Thread,
    as its GC adds a worker, recounting the CPUs (sched_getaffinity, the cgroup's
    cpu.cfs_quota_us and cpu.cfs_period_us) the way the JVM's start did on its main thread, in
    some runs and not others. The caller asks only in a run exiting as the good runs did; a
    block with a call no good stream made there in that order, or after which the thread goes
    on otherwise, keeps its region. Past `reach` (Teardowns.good_reach: where every good
    thread of the role was cut off by its process's exit, the bad thread's own exit after) the
    thread is judged by nothing: no good run's thread of its role went that far."""
    bs, gs = sides
    out = np.zeros(len(regions), dtype=bool)
    for r in np.flatnonzero(max_cls == 0).tolist():
        sid, start, end = int(regions.sid[r]), int(regions.start[r]), int(regions.end[r])
        first, last = int(b_bounds[0][sid]), min(int(b_bounds[1][sid]), int(reach[sid]))
        new = start + np.flatnonzero(novel[start : min(end + 1, last)])
        if not len(new) or int(new[-1]) - int(new[0]) >= KNOWN_STEP_MAX:
            continue
        # the smallest blocks first: the new events alone, then up to k-1 of the region's
        # others (or of the calls before it) on each side
        blocks = [(int(new[0]) - before, int(new[-1]) + 1 + after)
                  for grow in range(2 * (k - 1) + 1) for before in range(min(grow, k - 1) + 1)
                  if (after := grow - before) <= k - 1]
        out[r] = any(_without_block_seen(bs, (lo_b, hi_b), (first, last), (start, end), gh, role_hash, k)
                     and _occurs_in(bs.tok[lo_b:hi_b], gs.tok)
                     for lo_b, hi_b in blocks
                     if lo_b >= max(first, start - (k - 1)) and hi_b <= end + 1 and hi_b - lo_b >= KNOWN_STEP_MIN
                     and not (bs.orig[lo_b:hi_b] < 0).any())
    return out


def _without_block_seen(bs: align.Streams, block: tuple[int, int], stream: tuple[int, int],
                        region: tuple[int, int], gh: np.ndarray, role_hash: np.ndarray, k: int) -> bool:
    """Every window of the thread ending in its `region` or k-1 events past it, once `block` is
    left out, is one of the good runs' (`gh`; see _known_step_elsewhere)."""
    (lo_b, hi_b), (first, last), (start, end) = block, stream, region
    lo, hi = max(first, min(start, lo_b) - (k - 1)), min(last, end + k)
    # a loop the block split (a sleep before it, one after): one turn again
    idx = _one_turn(bs, np.r_[np.arange(lo, lo_b), np.arange(hi_b, hi)])
    if np.count_nonzero(idx < lo_b) < k - 1 and lo != first:
        return False  # (too little context: a window of fewer would be padded as a stream's start)
    h = align.window_hashes(bs.take(idx), role_hash, k)[idx >= start]
    return bool(len(h)) and bool(align.seen_in(h, gh).all())


def _occurs_in(block: np.ndarray, tokens: np.ndarray) -> bool:
    """The token sequence `block` occurs contiguously in `tokens` (streams back to back: a
    match across two of them would need the END token between them, never in the caller's
    blocks of real calls; only a stream the recording cut off has no END)."""
    at = np.flatnonzero(tokens[: len(tokens) - len(block) + 1] == block[0])
    for j in range(1, len(block)):
        if not len(at):
            return False
        at = at[tokens[at + j] == block[j]]
    return bool(len(at))


class _TimedOutWaits:
    """Waits for a descriptor (`TIMEOUT_WAITS`) of the bad run that timed out: returned 0 after
    blocking `TIMED_OUT_MIN_NS` or more, in a thread whose role no good run ever saw time out.

    Their tokens cannot show it -- a token has no return value, and these calls are noise
    probes, dropped from the streams -- so an error-free divergence right after one (the
    program's reaction to the timeout: its message, a close, the exit) would otherwise name
    the reaction. A collector that is stopped, a service whose accept queue is full, a server
    that reads the request and never answers: the strace of each shows the poll returning 0.
    Return values and latencies are read for the waits only, and only when a region asks."""

    def __init__(self, p: Prepared, outcomes: EventColumns, nb: int):
        self.rows = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, TIMEOUT_WAITS),
                                           len(p.probe_values)))
        self.sid = p.sid[self.rows]
        self.p, self.outcomes, self.nb = p, outcomes, nb
        self.timed: np.ndarray | None = None  # per wait row: timed out (read on first use)
        self.waited: dict[int, float] = {}  # timed-out row -> milliseconds it waited
        self.timer_roles: set[str] = set()  # roles whose good runs' waits expired on a timer

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            src = self.p.order[self.rows]
            ret = numpy_of(pc.fill_null(self.outcomes.column("ret"), -1))[src]
            lat = numpy_of(pc.fill_null(self.outcomes.column("latency_ns"), 0))[src]
            timed = (ret == 0) & (lat >= TIMED_OUT_MIN_NS)
            self.waited = dict(zip(self.rows[timed].tolist(), (lat[timed] / 1e6).round(1).tolist(), strict=True))
            good = self.rows >= self.nb
            good_roles = {matched_role[int(j)] for j in self.sid[timed & good]}
            self.timer_roles = {matched_role[int(j)] for j in self.sid[(ret == 0) & (lat >= TIMER_EXPIRY_MIN_NS) & good]}
            self.timed = timed & (self.rows < self.nb) & np.array(
                [matched_role[int(j)] not in good_roles for j in self.sid], dtype=bool)
        return self.timed

    def openings(self, bs: align.Streams, regions: align.Regions, b_start: np.ndarray, seq_rows: np.ndarray,
                 matched_role: list[str], k: int, asked: np.ndarray, reach: int | None = None) -> np.ndarray:
        """Per region (where `asked`): the row of the first timed-out wait of its stream among
        the k events (`reach`, if given) before its start (a window of the model: the events a
        timeout is followed by -- a close, a message -- can match one by chance, the timeout
        itself never can) and its first event (its END: the thread's end); else -1."""
        out = np.full(len(regions), -1, dtype=np.int64)
        asked = asked & isin(regions.sid, self.sid)  # regions in a thread that waited at all
        if not asked.any():
            return out
        timed = self._hits(matched_role)
        if not timed.any():
            return out
        rows, sids, seqs = self.rows[timed], self.sid[timed], seq_rows[self.rows[timed]]
        for r in np.flatnonzero(asked & isin(regions.sid, sids)).tolist():  # in a thread that timed out
            sid, start = int(regions.sid[r]), int(regions.start[r])
            back = start - (k if reach is None else reach)
            lo = int(_seq_of(bs, np.array([back]), seq_rows)[0]) if back >= b_start[sid] else -1
            hi = int(seq_rows[bs.orig[start]]) if bs.orig[start] >= 0 else np.iinfo(np.int64).max
            hit = np.flatnonzero((sids == sid) & (seqs > lo) & (seqs < hi))
            if len(hit):
                out[r] = int(rows[hit[np.argmin(seqs[hit])]])
        return out

    def on_timers(self, rows: np.ndarray, matched_role: list[str]) -> np.ndarray:
        """Per timed-out wait row (of `openings`; -1: none): its thread's role waited for a
        timer in the good runs too -- some wait of theirs returned nothing ready after
        blocking `TIMER_EXPIRY_MIN_NS` or more, the program's own timers (a server answering
        each request after a random delay): how long this one waited is how the timers fell."""
        found = rows >= 0
        out = np.zeros(len(rows), dtype=bool)
        if found.any() and self.timer_roles:
            sids = self.sid[np.searchsorted(self.rows, rows[found])]  # (p.sid is released by now)
            out[found] = [matched_role[int(j)] in self.timer_roles for j in sids]
        return out


class _EmptyAnswers(_TimedOutWaits):
    """A thread's first read of a file (`FIRST_READ_PROBES`) returning 0, its first read from a
    connection's peer returning 0 (`SOCKET_READ_PROBES` too: the server closed without
    answering, real set 67), or its first listing
    of a directory (`LISTING_PROBES`) returning nothing but "." and "..", in the bad run, at a
    call site (role, call, plain normalised path) where a good run's thread made such a first
    call and none of them found it empty: the file or the directory had content in every good
    run and nothing in this one (a manifest its generator never wrote a line to, a staging
    directory a copy step left empty). The call succeeded; only its return value says so, and
    a token has none -- so the error-free divergence right after it (the program's message,
    the work it skips) would otherwise name the program's reaction instead. Named the way a
    wait that timed out is (see _TimedOutWaits.openings). A later read returning 0 is the end
    of the data, every run's; a first one the good runs saw empty too is the program's way.
    So is a listing whose content, in every good run, was only other processes' files the
    thread found held and left alone (`_foreign_content`): JVMs running beside the good runs
    when HotSpot swept /tmp/hsperfdata_<user>/, none beside this one.
    Return values are read for these calls only, and only when a region asks."""

    def __init__(self, p: Prepared, outcomes: EventColumns, nb: int):
        # every successful read or listing at a path (one pass over the probe column); which is
        # its thread's first at that path, and at a file, is worked out when a region asks
        self.reads = codes_where(p.probe_values, FIRST_READ_PROBES | SOCKET_READ_PROBES)
        self.listings = codes_where(p.probe_values, LISTING_PROBES)
        rows = np.flatnonzero(code_in(p.probe, np.concatenate([self.reads, self.listings]), len(p.probe_values)))
        self.rows = rows[(p.errno[rows] < 0) & (p.plainpath[rows] >= 0)]
        self.sid = p.sid[self.rows]
        self.p, self.outcomes, self.nb = p, outcomes, nb
        self.row_sid = p.sid  # (released from `p` before a region asks: a thread's rows are a run of them)
        self.timed = None
        self.waited = {}  # (no wait: nothing timed)

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            p, rows, sid = self.p, self.rows, self.sid
            self.timed = np.zeros(len(rows), dtype=bool)
            # each thread's first call of its kind at its path (seq orders a thread's rows)
            order = np.lexsort((p.seq[rows], p.plainpath[rows], p.probe[rows], sid))
            srt = rows[order]
            head = np.ones(len(srt), dtype=bool)
            head[1:] = ((sid[order][1:] != sid[order][:-1]) | (p.probe[srt[1:]] != p.probe[srt[:-1]])
                        | (p.plainpath[srt[1:]] != p.plainpath[srt[:-1]]))
            first = order[head]  # indices into rows
            # at a file or a directory, or from a connection's peer: not a pipe or a device
            codes = unique_ints(p.plainpath[rows[first]])
            files = codes[[(v.startswith("/") and not v.startswith("/dev/")) or v.startswith(PEER_PREFIXES) for v in
                           (p.npath_values[int(c)] for c in codes)]] if len(codes) else codes
            first = first[isin(p.plainpath[rows[first]], files)]
            if not len(first):
                return self.timed
            ret = numpy_of(pc.fill_null(self.outcomes.column("ret"), -1))[p.order[rows[first]]]
            listing = isin(p.probe[rows[first]], self.listings)
            empty = np.where(listing, (ret >= 0) & (ret <= EMPTY_LISTING_BYTES), ret == 0)
            # call sites keyed by (role, call, path): roles numbered per stream
            names: dict[str, int] = {}
            role_of = np.array([names.setdefault(r, len(names)) for r in matched_role], dtype=np.int64)
            key = ((role_of[sid[first]] * (len(p.probe_values) + 1) + p.probe[rows[first]]) * (len(p.npath_values) + 1)
                   + p.plainpath[rows[first]])
            good = rows[first] >= self.nb
            hit = empty & ~good & isin(key, key[good]) & ~isin(key, key[good & empty])
            if hit.any() and (good & listing).any():
                # a listing whose every good run found only other processes' files: no answer
                with_content = good & ~empty
                foreign = np.zeros(len(first), dtype=bool)
                for i in np.flatnonzero(with_content & listing & isin(key, key[hit])).tolist():
                    foreign[i] = self._foreign_content(int(rows[first[i]]))
                hit &= isin(key, key[with_content & ~foreign])
            self.timed[first[hit]] = True
        return self.timed

    def _foreign_content(self, row: int) -> bool:
        """The entries the thread went on to touch after the listing at `row` (calls under the
        listed directory, up to its next listing there) were only looked at -- opened, checked,
        a lock tried (LOOK_ONLY_PROBES) -- and some lock was refused: files another live process
        holds, which the thread leaves alone."""
        p, sid = self.p, self.row_sid
        directory = p.npath_values[int(p.plainpath[row])] + "/"
        locks = set(codes_where(p.probe_values, LOCK_PROBES).tolist())
        held = set(codes_where(p.errno_values, LOCK_HELD_ERRNOS).tolist())
        touched = refused = False
        for r in range(row + 1, min(len(sid), row + WALK_GAP)):
            if sid[r] != sid[row] or (p.plainpath[r] == p.plainpath[row] and p.probe[r] == p.probe[row]):
                break  # the thread's end, or its next listing of the directory
            path = p.npath_values[int(p.plainpath[r])] if p.plainpath[r] >= 0 else None
            if path is None or not path.startswith(directory):
                continue
            if p.probe_values[int(p.probe[r])] not in LOOK_ONLY_PROBES:
                return False  # an entry used: read, written, removed, mapped
            touched = True
            refused |= int(p.probe[r]) in locks and int(p.errno[r]) in held
        return touched and refused


class _KillsOnlyHere(_TimedOutWaits):
    """Checked kills (see _Teardowns) the bad run sent from a role whose good runs sent none:
    a supervisor whose child was still running when it decided to end it -- its deadline (read
    from a config) passed, a health check said stalled. A checked kill is dropped from the
    streams as timing (a pool's terminate finding its workers gone or not), so the sender's
    reaction after it (its message, its exit with another status) would name the region
    instead. Named the way a wait that timed out is (see _TimedOutWaits.openings), for a region
    of the sender that never re-joins the good runs: a kill that was only timing leaves the
    sender doing what the good runs did next."""

    def __init__(self, p: Prepared, teardown: _Teardowns, nb: int):
        self.rows = np.sort(teardown.checked)
        self.sid = p.sid[self.rows]
        self.p, self.nb = p, nb
        self.timed = None
        self.waited = {}

    def _hits(self, matched_role: list[str]) -> np.ndarray:
        if self.timed is None:
            good = self.rows >= self.nb
            roles = {matched_role[int(j)] for j in self.sid[good]}
            self.timed = ~good & np.array([matched_role[int(j)] not in roles for j in self.sid], dtype=bool)
        return self.timed


def _abandoned_waits(p: Prepared, nb: int, bad_err: np.ndarray, good_ok_calls: np.ndarray,
                     good_outcomes: np.ndarray, n_errnos: np.int64) -> np.ndarray:
    """Bad rows of a call interrupted by a signal (EINTR, ERESTART*) at a call site (probe,
    plain normalised path) the good runs completed and never saw interrupted, which the
    thread never completes afterwards: it gave up waiting (flock -w's own timer) or was killed
    in the wait (timeout's SIGTERM in an open of a FIFO nobody writes). Interrupted calls are
    routine when they are restarted and complete (the curated EINTR/ERESTART* entries), or
    when the good runs were interrupted there too; abandoned, they are where the run stopped."""
    out = np.zeros(len(p), dtype=bool)
    cand, calls = _failing_with(p, bad_err, _interrupted)
    if not len(cand):
        return out
    ok = isin(calls, good_ok_calls) & ~isin(calls * n_errnos + (p.errno[cand] + 1), good_outcomes)
    for r, call in zip(cand[ok].tolist(), calls[ok].tolist(), strict=True):  # few
        later = np.flatnonzero(p.sid[r + 1 : nb] == p.sid[r]) + r + 1
        done = later[p.errno[later] < 0]
        out[r] = not bool(len(done)) or not bool((_call_keys(p, done) == call).any())
    return out


def _killed_in_waits(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Bad rows of a call without a path interrupted by a signal (EINTR, ERESTART*) that is
    its thread's last call, in a run a signal ended (its exit status 128 + the signal, which no
    good run had: the caller checks), at a call the good runs of the process's name made and
    completed, never interrupted: the run was killed there (kill -9 of a job stuck in its
    nanosleep). `_abandoned_waits` judges the calls with a path; without one there is no call
    site, so the thread's end and the run's death stand in for it."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, _interrupted)
    if not len(codes):
        return out
    cand = err_any[(err_any < nb) & (p.plainpath[err_any] < 0)]
    cand = cand[isin(p.errno[cand], codes)]
    # the thread's last row (rows of a thread run together)
    cand = cand[(cand + 1 >= nb) | (p.sid[np.minimum(cand + 1, len(p) - 1)] != p.sid[cand])]
    if not len(cand):
        return out
    good = _good_rows_where(isin(p.probe[nb:], unique_ints(p.probe[cand])), nb)

    def key(rows: np.ndarray) -> np.ndarray:  # (call, process name)
        return (p.probe[rows].astype(np.int64) * np.int64(len(p.ncomm_values) + 1)
                + np.asarray(p.ncomm[rows]).astype(np.int64))

    good_keys = key(good)
    completed = unique_ints(good_keys[p.errno[good] < 0])
    interrupted = unique_ints(good_keys[isin(p.errno[good], codes)])
    cand_keys = key(cand)
    out[cand[isin(cand_keys, completed) & ~isin(cand_keys, interrupted)]] = True
    return out
