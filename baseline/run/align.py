"""Alignment core: token streams, loop compression, a stide window model, divergence regions.

Everything here works on flat numpy arrays holding many streams back to back (one stream per
thread of each trace), so a million events cost a handful of vectorised passes:

* `compress_loops`: DiffTrace-style loop compression. For each period p = 1..4 (then 1
  again), an element equal to the one p positions earlier, inside a run of at least p such
  elements, is a repetition of a loop body and is dropped. ``ABABAB C`` and ``AB C`` compress
  alike, so different iteration counts do not look like divergences.
* `window_hashes`: the stide model (Forrest et al.): a hash of each length-k window ending at
  every position (padded at the stream start), mixed with the stream's role so windows are
  compared only between threads doing the same job.
* `divergence_regions`: given which bad windows the good model has seen, the maximal runs of
  unexplained positions per stream, with runs closer than k merged (a locality frame: one
  divergence makes k consecutive windows unseen).
* `anchor_in_good`: the alignment step -- re-anchor the bad stream in a good stream at the
  last window they share, to say what the good run did next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from baseline.run import native
from baseline.run.normalize import isin

PAD = np.uint64(0x9E3779B97F4A7C15)  # stands for "before the stream start"
END = np.uint64(0xD1B54A32D192ED03)  # virtual token appended to every stream
_MUL = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (vectorised, wrapping uint64 arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _MUL
    h = h ^ (h >> np.uint64(27))
    h = h * _MUL2
    return h ^ (h >> np.uint64(31))


def _mix_inplace(h: np.ndarray) -> None:
    """`_mix` in place (no temporaries beyond one shifted copy per step)."""
    h ^= h >> np.uint64(30)
    h *= _MUL
    h ^= h >> np.uint64(27)
    h *= _MUL2
    h ^= h >> np.uint64(31)


@dataclass
class Streams:
    """Many token streams back to back: ``tok[i]`` belongs to stream ``sid[i]``.

    ``orig[i]`` is the index of the source row (-1 for the virtual END token). Streams are
    contiguous and sid is non-decreasing.
    """

    tok: np.ndarray  # uint64
    sid: np.ndarray  # int64
    orig: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.tok)

    def take(self, keep: np.ndarray) -> Streams:
        return Streams(self.tok[keep], self.sid[keep], self.orig[keep])

    def slice(self, start: int, stop: int) -> Streams:
        """Positions start..stop-1 (views, no copy)."""
        return Streams(self.tok[start:stop], self.sid[start:stop], self.orig[start:stop])

    def bounds(self, n_streams: int) -> tuple[np.ndarray, np.ndarray]:
        """First and one-past-last position of every stream id in 0..n_streams-1."""
        ids = np.arange(n_streams)
        return native.search_sorted(self.sid, ids, "left"), native.search_sorted(self.sid, ids, "right")


def with_end_tokens(s: Streams | list[Streams], open_end: np.ndarray | None = None) -> Streams:
    """Append a virtual END token after the last element of every (non-empty) stream, except
    the streams `open_end` (bool per stream id) marks: threads the recording cut off, whose
    stream ends because the recording did, not because the thread ended.

    `s` may be a one-element list handing over the only reference to the streams: each of
    their arrays is then freed as soon as its copy with END tokens exists."""
    if isinstance(s, list):
        s = s.pop()
    if len(s) == 0:
        return s
    pos = end_slots(s.sid, open_end)
    tok, sid, orig = s.tok, s.sid, s.orig
    s.tok = s.sid = s.orig = None  # type: ignore[assignment]
    tok = np.insert(tok, pos, END)
    sid = np.insert(sid, pos, sid[pos - 1])
    return Streams(tok, sid, np.insert(orig, pos, -1))


def end_slots(sid: np.ndarray, open_end: np.ndarray | None = None) -> np.ndarray:
    """Where `with_end_tokens` inserts its END tokens (`np.insert` positions): after the last
    element of every stream in `sid` (non-decreasing), except the streams `open_end` marks.
    A caller building the streams can leave these slots itself (`np.insert` of the row
    numbers with -1) instead of copying every array once more."""
    if len(sid) == 0:
        return np.zeros(0, dtype=np.int64)
    last = np.flatnonzero(np.r_[sid[1:] != sid[:-1], True])
    if open_end is not None and open_end.any():
        last = last[~open_end[sid[last]]]
    return last + 1


_BLOCK = 1 << 18  # positions per block of the passes done a block at a time (hashing, compaction)


def _compact(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``a[keep]`` written over the front of `a` itself, returned as a view of it. A block
    at a time: every kept element moves down or stays, and a block's elements are read
    (into a block-sized temporary) before anything at or after the block is written."""
    w = 0
    for lo in range(0, len(a), _BLOCK):
        part = a[lo : lo + _BLOCK][keep[lo : lo + _BLOCK]]
        a[w : w + len(part)] = part
        w += len(part)
    return a[:w]


def _same_as_lag(s: Streams, p: int) -> np.ndarray:
    eq = np.zeros(len(s), dtype=bool)
    if len(s) > p:
        eq[p:] = (s.tok[p:] == s.tok[:-p]) & (s.sid[p:] == s.sid[:-p])
    return eq


def compress_loops(s: Streams | list[Streams], max_period: int = 4) -> Streams:
    """Collapse immediate repetitions of n-grams (n = 1..max_period) inside each stream.

    `s` may be a one-element list handing over the only reference to the streams: their
    arrays are then freed by the first pass instead of living alongside every copy."""
    owned = isinstance(s, list)
    if owned:
        s = s.pop()
    periods = [*range(1, max_period + 1), 1]
    if len(s) and native.available():
        # the compiled passes, in place (on a copy of streams the caller keeps)
        arrays = (s.tok, s.sid, s.orig) if owned else (s.tok.copy(), s.sid.copy(), s.orig.copy())
        fast = native.compress_loops(*arrays, periods)
        if fast is not None:
            return Streams(*fast)
    for p in periods:
        eq = _same_as_lag(s, p)
        if not eq.any():
            continue
        if p > 1:
            # Keep only runs of repeats at least one loop body long.
            edges = np.diff(eq.view(np.int8), prepend=np.int8(0), append=np.int8(0))
            starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
            del edges
            short = (ends - starts) < p
            if short.any():
                # Positions of the short runs (fewer than p each): a ramp per run.
                lo, length = starts[short], (ends - starts)[short]
                first = np.cumsum(length) - length
                eq[np.repeat(lo - first, length) + np.arange(int(length.sum()))] = False
        keep = ~eq
        del eq
        if owned:  # compacted in place: no new array per pass (each copy left a hole in the heap)
            s.tok = _compact(s.tok, keep)
            s.sid = _compact(s.sid, keep)
            s.orig = _compact(s.orig, keep)
        else:
            s, owned = s.take(keep), True
    return s


def _stream_firsts(sid: np.ndarray) -> np.ndarray:
    """The first position of each run of equal stream ids (sid is non-decreasing)."""
    first = np.flatnonzero(sid[1:] != sid[:-1])
    first += 1
    return np.r_[0, first] if len(sid) else first


def window_hashes(s: Streams, role_hash: np.ndarray, k: int) -> np.ndarray:
    """Hash of the length-k window ending at each position (stream start padded with PAD):
    the compiled loop when built (baseline.run.native), else `_window_hashes_numpy`."""
    fast = native.window_hashes(s.tok, s.sid, role_hash, k, PAD)
    return fast if fast is not None else _window_hashes_numpy(s, role_hash, k)


def _window_hashes_numpy(s: Streams, role_hash: np.ndarray, k: int) -> np.ndarray:
    """`window_hashes` a block of positions at a time (the same numbers as all at once)."""
    n = len(s)
    out = np.empty(n, dtype=np.uint64)
    # each position's place in its stream, a block at a time from the streams' first
    # positions (no per-position arrays beside the hashes: ~16 MiB of them at 2M positions)
    firsts = _stream_firsts(s.sid) if k > 1 else None
    for a in range(0, n, _BLOCK):
        b = min(n, a + _BLOCK)
        if firsts is not None:
            at = np.arange(a, b)
            pos = at - firsts[np.searchsorted(firsts, at, side="right") - 1]
            del at
        h = role_hash[s.sid[a:b]].astype(np.uint64, copy=False)
        t = np.empty(b - a, dtype=np.uint64)
        for j in range(k):
            # the token j places back (oldest first in the mixing order); PAD before the stream
            # start (positions i < j are such: their pos is i at most)
            lo = a - j
            if lo >= 0:
                t[:] = s.tok[lo : b - j]
            elif b - j > 0:
                t[-lo:] = s.tok[: b - j]
            if j:
                t[pos < j] = PAD
            h ^= t
            _mix_inplace(h)
        out[a:b] = h
    return out


def seen_in(values: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Boolean: which uint64 `values` occur in `model`: the compiled hash set when built
    (baseline.run.native, ~8x faster), else `_seen_in_numpy`."""
    if len(model) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    fast = native.seen_in(values, model)
    return fast if fast is not None else _seen_in_numpy(values, model)


def _seen_in_numpy(values: np.ndarray, model: np.ndarray) -> np.ndarray:
    """`seen_in` by a sort-merge, exact on all 64 bits: the model sorted, the values visited in (almost) sorted
    order -- sorted by their high bits packed with their index, so one plain `np.sort` (fast
    for integers) replaces an argsort -- and looked up with `searchsorted`, which is cache
    friendly on sorted queries; the lookups a block at a time (bounded temporaries)."""
    n = len(values)
    if len(model) == 0 or n == 0:
        return np.zeros(n, dtype=bool)
    values = np.asarray(values, dtype=np.uint64)
    m = np.sort(np.asarray(model, dtype=np.uint64))
    bits = max(int(n - 1).bit_length(), 1)
    low = np.uint64((1 << bits) - 1)
    visit = values & ~low
    visit |= np.arange(n, dtype=np.uint64)
    visit.sort()
    visit &= low
    visit = visit.view(np.int64)
    out = np.empty(n, dtype=bool)
    last = len(m) - 1
    for a in range(0, n, _BLOCK):
        idx = visit[a : a + _BLOCK]
        v = values[idx]
        pos = np.searchsorted(m, v)
        np.minimum(pos, last, out=pos)
        out[idx] = m[pos] == v
    return out


def window_set(model: Streams, role_hash: np.ndarray, k: int) -> native.WindowSet | None:
    """The compiled hash set of the model's window hashes (for `seen_windows`), or None (no
    library, or an empty model): made apart so that a caller can build it while another
    thread still makes the values to look up."""
    return native.window_set(model.tok, model.sid, role_hash, k, PAD) if len(model) else None


def seen_windows(values: np.ndarray, model: Streams, role_hash: np.ndarray, k: int,
                 model_set: list[native.WindowSet | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``seen_in(values, window_hashes(model, role_hash, k))`` and those model hashes. With
    the compiled loops the model's hashes go straight into the hash set (`window_set`; given
    in `model_set`, a one-element list handing over the only reference to it, when the caller
    built it already), and their array is made only once the set is freed: the set and the
    array never live at once (the heap's high-water mark of a diff is made here)."""
    seen, hashes = windows_seen(values, model, role_hash, k, model_set)
    return seen, hashes if hashes is not None else window_hashes(model, role_hash, k)


def windows_seen(values: np.ndarray, model: Streams, role_hash: np.ndarray, k: int,
                 model_set: list[native.WindowSet | None] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """`seen_windows`, with None for the model's hashes when the compiled set answered (the
    caller makes them when it needs them: the set is freed by then)."""
    windows = model_set.pop() if model_set else None
    if windows is None and len(model) and len(values):
        windows = window_set(model, role_hash, k)
    if windows is not None:
        return native.set_lookup(values, windows), None
    hashes = window_hashes(model, role_hash, k)
    return seen_in(values, hashes), hashes


@dataclass
class Regions:
    """Divergence regions of the bad streams: positions [start, end] inclusive."""

    start: np.ndarray
    end: np.ndarray
    sid: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def max_over(self, values: np.ndarray) -> np.ndarray:
        """Per region, the max of `values` (bool or integer, one per stream position) over
        its own positions. np.maximum.reduceat over the starts alone runs on to the next
        region's start, or to the end: into events outside every region (a thread cut off by
        its process's exit, whose region was dropped), which are not the region's."""
        # one reduceat over [start, end + 1) pairs (regions ascend and do not overlap); the
        # segments between regions are dropped, the last one runs to the array's end
        bounds = np.empty(2 * len(self.start), dtype=np.int64)
        bounds[0::2], bounds[1::2] = self.start, self.end + 1
        if len(bounds) and bounds[-1] >= len(values):
            bounds = bounds[:-1]
        return np.maximum.reduceat(values, bounds)[0::2]


def divergence_regions(s: Streams, explained: np.ndarray, k: int) -> Regions:
    """Maximal runs of unexplained positions per stream; runs less than k apart are merged."""
    u = ~explained
    if not u.any():
        empty = np.zeros(0, dtype=np.int64)
        return Regions(empty, empty, empty)
    edges = np.diff(np.r_[0, u.astype(np.int8), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    # A run crossing a stream boundary is two runs.
    cut = np.flatnonzero(u[1:] & u[:-1] & (s.sid[1:] != s.sid[:-1])) + 1
    if len(cut):
        starts = np.sort(np.r_[starts, cut])
        ends = np.sort(np.r_[ends, cut - 1])
    new = np.ones(len(starts), dtype=bool)
    new[1:] = (s.sid[starts[1:]] != s.sid[ends[:-1]]) | (starts[1:] - ends[:-1] - 1 >= k)
    group_first = np.flatnonzero(new)
    group_last = np.r_[group_first[1:], len(starts)] - 1
    return Regions(starts[group_first], ends[group_last], s.sid[starts[group_first]])


def split_between_outcome_changes(regions: Regions, explained: np.ndarray, changes: np.ndarray) -> tuple[Regions, np.ndarray]:
    """`regions` split where the thread re-joined known-good behaviour (at least one explained
    position: a whole window of the good runs' events) between two outcome changes (`changes`,
    per position): two independent faults a few known-good calls apart (an optional input
    missing, the next one read as the good runs read it, a third missing) are two anomalies,
    where merging runs less than k apart made them one and the second was listed nowhere.
    Also returns, per new region, whether it was split from the next one (it then counts as
    recovered only when the last part does: a cause's region keeps its weight against its
    consequences')."""
    none_split = np.zeros(len(regions), dtype=bool)
    if not len(regions) or not changes.any():
        return regions, none_split
    marks = np.flatnonzero(changes)
    # the marks inside each region, by binary search (a filter of all marks per region was
    # quadratic on a diff of two unrelated runs: ~1e5 regions and marks)
    first = np.searchsorted(marks, regions.start, "left")
    last = np.searchsorted(marks, regions.end, "right")
    cuts_of: dict[int, list[tuple[int, int]]] = {}
    for i in np.flatnonzero(last - first > 1).tolist():
        lo, hi = int(regions.start[i]), int(regions.end[i])
        inside = marks[first[i]:last[i]]
        known = np.flatnonzero(explained[lo : hi + 1]) + lo
        # the explained positions strictly between two consecutive marks a < b: known[ka:kb]
        ka = np.searchsorted(known, inside[:-1], "right")
        kb = np.searchsorted(known, inside[1:], "left")
        cuts = []
        for g0, g1, b in zip(ka.tolist(), kb.tolist(), inside[1:].tolist(), strict=True):
            if g1 > g0:  # the last unexplained position before the gap's end starts the next part
                gap_end = int(known[g1 - 1])
                nxt = gap_end + 1 + int(np.argmax(~explained[gap_end + 1 : b + 1]))
                cuts.append((int(known[g0]) - 1, nxt))
        if cuts:
            cuts_of[i] = cuts
    if not cuts_of:
        return regions, none_split
    pieces = np.ones(len(regions), dtype=np.int64)
    for i, cuts in cuts_of.items():
        pieces[i] += len(cuts)
    starts = np.repeat(regions.start.astype(np.int64), pieces)
    ends = np.repeat(regions.end.astype(np.int64), pieces)
    sids = np.repeat(regions.sid.astype(np.int64), pieces)
    split = np.zeros(len(starts), dtype=bool)
    offsets = np.cumsum(pieces) - pieces
    for i, cuts in cuts_of.items():
        at = int(offsets[i])
        for j, (end, nxt) in enumerate(cuts):
            ends[at + j] = end
            split[at + j] = True
            starts[at + j + 1] = nxt
    return Regions(starts, ends, sids), split


def anchor_in_good(
    bad_hash_before: np.uint64 | None,
    bad_rel_pos: float,
    good: Streams,
    good_hash: np.ndarray,
    good_start: np.ndarray,
    good_end: np.ndarray,
    candidate_streams: np.ndarray,
    call_of_row: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
    bad_call: np.uint64 | None = None,
) -> int | None:
    """Position in `good` right after the window the bad stream last shared with it.

    `bad_hash_before` is the bad window ending just before the divergence (None when the
    divergence is at the bad stream's start: then the start of a candidate stream is used).
    In a loop the same window recurs; occurrences followed by the same call as the bad event
    (same probe and path, any outcome: `call_of_row` / `bad_call`; `call_of_row` an array per
    row or a function of row numbers) win, then the one at the most similar relative position.
    """
    if len(candidate_streams) == 0:
        return None
    if bad_hash_before is None:
        return int(good_start[candidate_streams[0]])
    hits = np.flatnonzero(good_hash == bad_hash_before)
    if len(hits) == 0:
        return None
    sids = good.sid[hits]
    ok = isin(sids, candidate_streams)
    if ok.any():
        hits, sids = hits[ok], sids[ok]
    if call_of_row is not None and bad_call is not None:
        nxt = np.minimum(hits + 1, len(good) - 1)
        rows = good.orig[nxt]
        safe = np.maximum(rows, 0)
        calls = call_of_row(safe) if callable(call_of_row) else call_of_row[safe]
        same = (rows >= 0) & (good.sid[nxt] == sids) & (calls == bad_call)
        if same.any():
            hits, sids = hits[same], sids[same]
    length = np.maximum(good_end[sids] - good_start[sids], 1)
    rel = (hits - good_start[sids]) / length
    best = hits[int(np.argmin(np.abs(rel - bad_rel_pos)))]
    return int(best) + 1
