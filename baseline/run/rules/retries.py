"""Rules about loops that try again or try something else: retry loops a thread gets past
(`_retried`), probe loops over a numbered family (`_probe_misses`), a full descriptor table a
cache makes room in (`_descriptor_room_made`), retries given up (`_retries_given_up`) and
fallbacks that recovered (`_recovered_fallbacks`, judged by the messages good runs also wrote)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from baseline.run import align
from baseline.run import compute as pc
from baseline.run.normalize import (
    Prepared,
    code_in,
    codes_where,
    in_sorted,
    isin,
    numpy_of,
    stream_starts,
    unique_ints,
    view_in,
)
from baseline.run.rules.base import (
    DESCRIPTOR_RELEASES,
    EXIT_PROBES,
    MESSAGE_CATALOG,
    MESSAGE_WRITES,
    RETRY_GAP,
    SPAWN_PROBES,
    WALK_GAP,
    _call_keys,
    _error_before,
    _failing_with,
    _good_rows_where,
    _near,
    _Rows,
    good_output_column,
)

# How the recorder writes a struct sockaddr (tracer.record.syscalls): the peer of a connect
SOCKET_ADDRESS_PREFIXES = ("inet:", "inet6:", "unix:")
# Errnos of contention (a lock held, a resource busy for now): retried without end at a call the
# good runs got past, they are where the run stopped (see _retries_given_up).
CONTENTION_ERRNOS = frozenset({"EAGAIN", "EWOULDBLOCK"})
GIVE_UP_MIN = 3
# Errnos of a refusal a program falls back from (perf's kernel-time counter refused by
# perf_event_paranoid, retried user-only; SO_RCVBUFFORCE refused, then SO_RCVBUF): at a call
# without a path every good run got past, a bad run whose last attempt was refused too stopped
# there (see _pathless_retries_given_up).
FALLBACK_ERRNOS = frozenset({"EACCES", "EPERM"})
# Errnos of a full descriptor table: a cache that closes an entry and tries again gets past them
# (see _descriptor_room_made).
TABLE_FULL_ERRNOS = frozenset({"EMFILE", "ENFILE"})
# Calls a retry loop waits in between attempts.
WAIT_PROBES = frozenset({"nanosleep", "clock_nanosleep", "poll", "ppoll", "select", "pselect6", "epoll_wait",
                         "epoll_pwait", "epoll_pwait2", "wait4", "waitid", "pause", "sched_yield"})
# Calls that remove a path: a create failing EEXIST, then one of these on its path, then the
# create succeeding, is a file replaced (see _cleared_in_between).
REMOVE_PROBES = frozenset({"unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2"})
# The most calls a failed attempt of a shell's retry loop makes after its failure, its message
# aside (its descriptors closed, its exit: see _retried_by_parent).
GIVE_UP_TAIL = 32
# What a shell's retry loop waits out, attempt after attempt (see _retried_by_parent): a file not
# there yet, a lock directory or file still held, a service not up yet or dropping connections.
PARENT_RETRY_ERRNOS = frozenset({"ENOENT", "EEXIST", "EAGAIN", "EWOULDBLOCK", "ECONNREFUSED", "ECONNRESET",
                                 "ETIMEDOUT"})
# Targets as recorded that name one thing (a file, a socket address), not any anonymous pipe.
NAMED_TARGETS = ("/", *SOCKET_ADDRESS_PREFIXES)
# Programs a shell's retry loop waits with between two attempts (see _retried_by_parent).
WAIT_PROGRAMS = frozenset({"sleep", "usleep"})
# Errnos that say a candidate is not there: the misses of a loop trying the members of a
# numbered family until one answers (see _probe_misses).
PROBE_MISS_ERRNOS = frozenset({"ENOENT", "ENOTDIR"})
# The longest rest of a region after a refused call that is read event by event as a fallback:
# an alternative and the way back to the good runs' behaviour are a few events, and the rule
# stays off the diff's cost on a long region (a thread that went another way for good).
FALLBACK_TAIL = 256
# A message's numbers (pids, sizes, times) vary run to run: compared as <n> (see _GoodMessages)
_DIGITS = re.compile(r"[0-9]+")


def _probe_misses(p: Prepared, err_rows: np.ndarray) -> np.ndarray:
    """The misses of *probe loops*: a thread trying the members of a numbered family -- one
    call site (probe and plain normalised path: uverbs0..3 mask alike) at raw paths of its
    own -- until one answers. Per (thread, call site) the calls there are misses
    (`PROBE_MISS_ERRNOS`), each within `RETRY_GAP` rows of the last, ending in one success
    at a raw path none of them had; the misses are marked. Only at call sites where no thread
    of any run, good or bad, succeeded more than once or went on calling there after its
    success: a loop that stops at the first answer. A scan that opens every member (shards
    00000..00004, each worker's parts) succeeds many times per thread, so a member missing
    there stays an outcome change; a probe that finds no member (every candidate missing)
    keeps its misses, and a hard error (EACCES at a member) is never a miss."""
    out = np.zeros(len(p), dtype=bool)
    if p.raw_path is None or not len(err_rows):
        return out
    miss_codes = codes_where(p.errno_values, PROBE_MISS_ERRNOS)
    cand = err_rows[code_in(p.errno[err_rows], miss_codes, len(p.errno_values))]
    if not len(cand):
        return out
    # every row at those call sites (any outcome), grouped by (thread, call site) in time order:
    # the rows whose probe and plain path are both among the candidates' (two lookup tables,
    # one pass over the codes each), then their keys -- a few hundred rows, where the keys of
    # every row of the candidates' probes (~300,000 at a million openat calls) were made
    rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values))
                          & view_in(p.plainpath, p.plainpath[cand], len(p.npath_values)))
    calls = _call_keys(p, rows)
    keep = in_sorted(calls, unique_ints(_call_keys(p, cand)))
    rows, calls = rows[keep], calls[keep]
    order = np.lexsort((rows, calls, p.sid[rows]))
    rows, calls = rows[order], calls[order]
    sid = p.sid[rows].astype(np.int64)
    first = np.flatnonzero(np.r_[True, (sid[1:] != sid[:-1]) | (calls[1:] != calls[:-1])])
    last = np.r_[first[1:], len(rows)] - 1
    ok = p.errno[rows] < 0
    n_ok = np.add.reduceat(ok.astype(np.int64), first)
    # a call site where some thread succeeded twice, or called again after its success, is
    # no first-answer probe: none of its groups counts
    not_probe = (n_ok > 1) | ((n_ok == 1) & ~ok[last])
    bad_sites = unique_ints(calls[first[not_probe]])
    group = np.repeat(np.arange(len(first)), last - first + 1)
    # per group, before its answer: calls that are no miss, gaps too long for a
    # loop, and the raw path of the group's answer met before it (the same path failing then
    # answering is a wait, see _retried, not a probe)
    raw = p.raw_path[rows]
    odd = ~code_in(p.errno[rows], miss_codes, len(p.errno_values))
    odd[1:] |= (_gaps_past_misses(p, rows, miss_codes) > RETRY_GAP) & (group[1:] == group[:-1])
    odd |= raw == raw[last][group]
    odd[last] = False
    odd_before = np.add.reduceat(odd.astype(np.int64), first)
    probe = ~not_probe & (n_ok == 1) & (last > first) & (odd_before == 0) & (raw[last] >= 0)
    probe &= ~in_sorted(calls[first], bad_sites)
    hit = probe[group]
    hit[last] = False  # the answer itself stays
    out[rows[hit]] = True
    return out


def _gaps_past_misses(p: Prepared, rows: np.ndarray, miss_codes: np.ndarray,
                      free_probes: np.ndarray | None = None) -> np.ndarray:
    """Per pair of consecutive `rows` (sorted within each group): the rows between them, not
    counting misses (calls failing with `miss_codes`, ENOENT/ENOTDIR). A loader trying a
    library in each directory of its path first tries every hwcaps subdirectory of that
    directory (glibc-hwcaps/x86-64-v4 ... tls/haswell/x86_64: some thirty misses, each with a
    stat of the subdirectory) -- those misses are the same walk, not a pause between its steps;
    what else happened in between is what tells two loops apart (RETRY_GAP). Only gaps up to
    WALK_GAP rows are looked into (a directory's subdirectories are fewer): the work is bounded
    by their number, never the table's size. Rows whose probe is among `free_probes` (codes)
    are not counted either."""
    gaps = np.diff(rows)
    long = np.flatnonzero((gaps > RETRY_GAP) & (gaps <= WALK_GAP))
    if not len(long):
        return gaps
    gaps = gaps.copy()
    inner = gaps[long] - 1  # rows strictly between each pair
    # every row strictly between, pair by pair (each run of `inner` rows after the pair's first)
    pair = np.repeat(np.arange(len(long)), inner)
    offset = np.arange(int(inner.sum())) - np.repeat(np.cumsum(inner) - inner, inner)
    between = rows[long][pair] + 1 + offset
    errno = np.asarray(p.errno[between])
    missing = (errno >= 0) & code_in(np.maximum(errno, 0), miss_codes, len(p.errno_values))
    if free_probes is not None and len(free_probes):
        missing |= code_in(p.probe[between], free_probes, len(p.probe_values))
    gaps[long] = np.bincount(pair, weights=~missing, minlength=len(long)).astype(gaps.dtype) + 1
    return gaps


def _retried(p: Prepared, cand: np.ndarray, hard_codes: np.ndarray) -> np.ndarray:
    """The attempts of retry loops: a run of errors of `cand` at one call site (probe and
    plain normalised path) of a thread, each attempt at most `RETRY_GAP` rows after the last,
    ending in a success there, with a wait in between (`WAIT_PROBES`: a loop, not a second
    attempt with other flags such as sqlite's read-write then read-only open, nor a program
    creating what it did not find). Marks
    the rows from the first failed attempt up to the success, except hard errors
    (`hard_codes`: errors a retry loop does not wait out)."""
    n = len(p)
    out = np.zeros(n, dtype=bool)
    if not len(cand):
        return out
    # the rows at those call sites, keyed by (stream, call site)
    rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values)))
    calls = _call_keys(p, rows)
    keep = in_sorted(calls, unique_ints(_call_keys(p, cand)))
    rows, calls = rows[keep], calls[keep]
    radix = np.int64(calls.max()) + 1
    if radix * (np.int64(p.sid.max()) + 1) >= 2**62:
        return out
    key = p.sid[rows].astype(np.int64) * radix + calls
    is_cand = in_sorted(rows, cand)  # both sorted row numbers
    # an attempt right after another at the same call (no call in between) is no loop
    is_cand &= ~np.r_[(rows[1:] == rows[:-1] + 1) & (key[1:] == key[:-1]), False]
    ok = p.errno[rows] < 0
    # by site then time (rows are in stream order), cut into chains: a new chain at another
    # site, after a gap, after a success or another error
    order = np.lexsort((rows, key))
    rows, key, is_cand, ok = rows[order], key[order], is_cand[order], ok[order]
    # the rows between two attempts, not counting the message the thread wrote about the one
    # that failed, nor the lookups of its translation (libc.mo, ENOENT): curl's "Will retry in
    # 1 seconds" is ~90 one-byte writes between the refused connect and the next one
    gaps = _gaps_past_misses(p, rows, codes_where(p.errno_values, PROBE_MISS_ERRNOS),
                             codes_where(p.probe_values, MESSAGE_WRITES))
    cut = np.ones(len(rows), dtype=bool)
    cut[1:] = (key[1:] != key[:-1]) | (gaps > RETRY_GAP) | ~is_cand[:-1]
    first = np.flatnonzero(cut)
    last = np.r_[first[1:], len(rows)] - 1
    chains = is_cand[first] & ok[last] & (last > first)
    lo, hi = rows[first[chains]], rows[last[chains]]
    if len(lo):
        keep = _same_peer(p, lo, hi)
        lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return out
    # a loop waits between attempts (a sleep, a poll, a child's exit): a wait row in
    # [lo, hi); a program creating what it did not find (mkdir, then the create) does not.
    # A create that found its target already there, removed it and created it again (gzip
    # -f over the last run's output) is no loop either, but is the same outcome as the good
    # runs' create: transparent too.
    waits = np.flatnonzero(code_in(p.probe, codes_where(p.probe_values, WAIT_PROBES),
                                   len(p.probe_values)))
    keep = (np.searchsorted(waits, hi) > np.searchsorted(waits, lo)) | _cleared_in_between(p, lo, hi)
    lo, hi = lo[keep], hi[keep]
    if len(lo):
        edges = np.zeros(n + 1, dtype=np.int32)
        np.add.at(edges, lo, 1)
        np.add.at(edges, hi, -1)
        out = np.cumsum(edges[:-1]) > 0
        out &= ~code_in(p.errno, hard_codes, len(p.errno_values))
        out[_work_on_files(p, np.flatnonzero(out), p.plainpath[lo])] = False
    return out


def _retried_by_parent(p: Prepared, cand: np.ndarray) -> np.ndarray:
    """The attempts of a *shell's* retry loop -- `until mkdir lockd; do sleep 1; done`, `until
    nc -z head 29500; do sleep 1; done` -- where each attempt is a process of its own: an error
    of `cand` at a call site (probe, plain normalised path) in a process that exited without
    getting past it, whose parent then ran the same program again (its next child of the same
    name, after nothing but `WAIT_PROGRAMS`), which got past that call site -- or failed there
    again, the loop's next turn. How many turns a good run needed is timing, as in a thread's
    own loop (`_retried`). Marks every row of the failed attempts' processes and of the sleeps
    between, and the parent's rows from the start of the first failed attempt up to the start
    of the one that got through (its waits, its $PATH lookups of `sleep`).

    The work is per process, not per error: only errors in a process whose parent ran another
    of its name later are looked into, and each such process's call sites are keyed once."""
    out = np.zeros(len(p), dtype=bool)
    if not len(cand) or not len(p):
        return out
    starts = stream_starts(p)
    ends = np.r_[starts[1:], len(p)] - 1
    tkey = np.asarray(p.tkey[starts]).astype(np.int64)
    tid = np.asarray(p.tid[starts]).astype(np.int64)
    pid = np.asarray(p.pid[starts]).astype(np.int64)
    pid = np.where(pid >= 0, pid, tid)
    ppid = np.asarray(p.ppid[starts]).astype(np.int64)
    comm = np.asarray(p.ncomm[ends]).astype(np.int64)
    first_seq = np.asarray(p.seq[starts])
    # processes: (trace, pid) -> its streams; named and parented by its main thread's stream
    procs: dict[tuple[int, int], list[int]] = {}
    for sid in range(len(starts)):
        procs.setdefault((int(tkey[sid]), int(pid[sid])), []).append(sid)
    info: dict[tuple[int, int], tuple[int, int, int]] = {}  # ppid, comm, first seq
    children: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (trace, parent pid) -> children by start
    for key, sids in procs.items():
        main = next((s for s in sids if tid[s] == key[1]), sids[0])
        info[key] = (int(ppid[main]), int(comm[main]), int(first_seq[sids].min()))
        if info[key][0] >= 0:
            children.setdefault((key[0], info[key][0]), []).append(key)
    rerun: set[tuple[int, int]] = set()  # processes whose parent ran another of their name later
    for kids in children.values():
        kids.sort(key=lambda k: info[k][2])
        seen_later: set[int] = set()
        for kid in reversed(kids):
            if info[kid][1] in seen_later:
                rerun.add(kid)
            seen_later.add(info[kid][1])
    if not rerun:
        return out
    # errors a later attempt can get past (not ENOTTY, ESPIPE: what a descriptor is), at a
    # named target -- a file, a socket address -- not an anonymous pipe ("pipe:"), which every
    # process's pipes share as recorded
    cand = cand[isin(p.errno[cand], codes_where(p.errno_values, PARENT_RETRY_ERRNOS))]
    if p.raw_path is not None and len(cand):
        raw = np.asarray(p.raw_path[cand])
        names = p.raw_path_values
        cand = cand[np.fromiter((r >= 0 and names[int(r)].startswith(NAMED_TARGETS) for r in raw.tolist()),
                                dtype=bool, count=len(raw))]
    if not len(cand):
        return out
    row_sid = np.searchsorted(starts, cand, side="right") - 1
    in_rerun = np.fromiter(((int(tkey[s]), int(pid[s])) in rerun for s in row_sid.tolist()), dtype=bool,
                           count=len(cand))
    cand, row_sid = cand[in_rerun], row_sid[in_rerun]
    if not len(cand):
        return out
    waits = set(codes_where(p.ncomm_values, WAIT_PROGRAMS).tolist())
    spawn = codes_where(p.probe_values, SPAWN_PROBES)
    keyed: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
    proc_rows: dict[tuple[int, int], np.ndarray] = {}  # each keyed process's rows
    message_codes = codes_where(p.probe_values, MESSAGE_WRITES)
    miss_codes = codes_where(p.errno_values, PROBE_MISS_ERRNOS)

    def turn_at(proc: tuple[int, int], site: int, target: int) -> str:
        """"succeeded" (a call there, at the very path or peer `target` as recorded, succeeded),
        "failed" (every such call failed, and the process gave up: see below), "went on" or
        "absent". As recorded: xargs -P4's workers each
        open a file of their own (part1 .. part4, one call site once masked), and one worker's
        failure is no turn of a loop its siblings got past."""
        if proc not in keyed:
            rows = np.concatenate([np.arange(starts[s], ends[s] + 1) for s in procs[proc]])
            keyed[proc] = (_call_keys(p, rows), p.errno[rows] < 0,
                           None if p.raw_path is None else np.asarray(p.raw_path[rows]))
            proc_rows[proc] = rows
        keys, ok, raw = keyed[proc]
        there = keys == site
        if raw is not None:
            there &= raw == target
        if not there.any():
            return "absent"
        if bool(ok[there].any()):
            return "succeeded"
        # an attempt that gave up: the failure among its thread's last calls but for its message
        # and the lookups of its translation (a worker that went on for hundreds of calls after
        # a miss -- python's forkserver children at its import path -- was no failed attempt)
        last = np.flatnonzero(there)[-1]
        sid = int(np.searchsorted(starts, proc_rows[proc][last], side="right")) - 1
        tail = np.arange(proc_rows[proc][last] + 1, ends[sid] + 1)
        said = code_in(p.probe[tail], message_codes, len(p.probe_values)) | (
            (p.errno[tail] >= 0) & code_in(np.maximum(p.errno[tail], 0), miss_codes, len(p.errno_values)))
        return "failed" if int(np.count_nonzero(~said)) <= GIVE_UP_TAIL else "went on"

    targets = np.full(len(cand), -1, dtype=np.int64) if p.raw_path is None else np.asarray(p.raw_path[cand])
    done: set[tuple[int, int]] = set()
    # (process, site, target) of attempts whose chain of later siblings got through nowhere: a
    # later attempt of the chain walks a suffix of it and gets through nowhere either. Without
    # it every sibling walked all the later ones: 300 `cat`s of a shell loop, each meeting the
    # same locale misses at its end, took 12 s of a good-vs-good diff, 2,000 over ten minutes
    # (battery 53)
    dead_ends: set[tuple[tuple[int, int], int, int]] = set()
    for sid, site, target in zip(row_sid.tolist(), _call_keys(p, cand).tolist(), targets.tolist(), strict=True):
        first = (int(tkey[sid]), int(pid[sid]))
        if first in done or (first, site, target) in dead_ends or turn_at(first, site, target) != "failed":
            continue
        failed, sleeps, got_through = [first], [], None
        kids = children[(first[0], info[first][0])]
        for kid in kids[kids.index(first) + 1:]:
            if info[kid][1] in waits:
                sleeps.append(kid)
                continue
            if info[kid][1] != info[first][1]:
                break
            turn = turn_at(kid, site, target)
            if turn == "succeeded":
                got_through = kid
                break
            if turn != "failed":
                break
            failed.append(kid)
        if got_through is None:
            dead_ends.update((proc, site, target) for proc in failed)
            continue
        done.update(failed)
        for proc in failed + sleeps:
            for s in procs[proc]:
                out[starts[s]:ends[s] + 1] = True
        for s in procs.get((first[0], info[first][0]), []):
            rows = np.arange(starts[s], ends[s] + 1)
            seq = np.asarray(p.seq[rows])
            # from the spawn of the first failed attempt to the spawn of the one that got through
            spawned = rows[code_in(p.probe[rows], spawn, len(p.probe_values))]
            spawn_seq = np.asarray(p.seq[spawned])
            lo, hi = spawned[spawn_seq < info[first][2]], spawned[spawn_seq < info[got_through][2]]
            if len(lo) and len(hi):
                out[rows[(seq >= p.seq[lo[-1]]) & (seq < p.seq[hi[-1]])]] = True
    return out


def _work_on_files(p: Prepared, body: np.ndarray, loop_paths: np.ndarray) -> np.ndarray:
    """The rows of a retry loop's `body` that work on a file (a path, not a socket, a pipe or
    /dev, /proc, /sys, which a wait loop polls) other than the loop's own (`loop_paths`: gzip
    -f's removal of the output its create found there is the loop's): work the thread does
    while it waits, which the good runs do wherever they do it -- curl loads its CA file
    between its ClientHello and the server's answer, inside the wait where the answer was late
    (recvfrom EAGAIN, poll) and after it where it was there."""
    body = body[p.plainpath[body] >= 0]
    if not len(body):
        return body
    values = p.npath_values.arrow
    files = numpy_of(pc.fill_null(pc.match_substring_regex(values, "^/"), False)) & ~numpy_of(
        pc.fill_null(pc.match_substring_regex(values, "^/(dev|proc|sys)/"), False))
    # (a message catalog looked up is the loop's own message being translated: curl's "Will
    # retry", the libc.mo lookups of strerror at the first error a run prints)
    files &= ~numpy_of(pc.fill_null(pc.match_substring_regex(values, MESSAGE_CATALOG.pattern), False))
    body = body[files[p.plainpath[body]]]
    return body[~isin(p.plainpath[body], unique_ints(loop_paths))]


def _known_errors_gone_on(bs: align.Streams, known_rows: np.ndarray, explained: np.ndarray, k: int,
                          n_rows: int) -> np.ndarray:
    """Bad positions of an error the good runs had at the same call with the same errno
    (`known_rows`), after which the thread went on as they did -- the window the error opens
    is one of theirs: a known event, so a region it sits in is judged as one of known events
    (in another order: timing). rsync's sender probes each file with an O_DIRECTORY open
    (ENOTDIR, in every run) amid socket writes that interleave with its reads as the buffers
    fill. An error after which the thread goes another way than the good runs (no mkdir after
    the ENOENT they made the directory after: the program gave up) keeps its class."""
    if not len(known_rows):
        return np.zeros(0, dtype=np.int64)
    known = np.zeros(n_rows, dtype=bool)
    known[known_rows] = True
    pos = np.flatnonzero((bs.orig >= 0) & known[np.maximum(bs.orig, 0)])
    after = pos + (k - 1)
    ok = after < len(bs)
    ok[ok] = (bs.sid[after[ok]] == bs.sid[pos[ok]]) & explained[after[ok]]
    return pos[ok]


def _same_peer(p: Prepared, first: np.ndarray, success: np.ndarray) -> np.ndarray:
    """Per retry chain (its first failed attempt, its success): whether the success reached the
    address the attempt was refused at, when that is a socket address. Ports are masked in the
    call site (the kernel assigns them anew each run), but within a run a retry goes to the
    same peer: a pool worker refused by one backend (ECONNREFUSED) that then takes the next
    task, another backend's, and connects is no retry of the refused connect -- that backend is
    down (a thread pool reusing the worker that failed fast, where it usually starts a fifth)."""
    keep = np.ones(len(first), dtype=bool)
    if p.raw_path is None:
        return keep
    raw_a, raw_b = p.raw_path[first], p.raw_path[success]
    for i in np.flatnonzero(raw_a != raw_b).tolist():
        if int(raw_a[i]) >= 0 and p.raw_path_values[int(raw_a[i])].startswith(SOCKET_ADDRESS_PREFIXES):
            keep[i] = False
    return keep


def _descriptor_room_made(p: Prepared, err_any: np.ndarray) -> np.ndarray:
    """Rows of a full descriptor table the thread made room in: a call failing EMFILE/ENFILE
    (`TABLE_FULL_ERRNOS`) followed, within `RETRY_GAP` rows of its thread, by a descriptor given
    back (`DESCRIPTOR_RELEASES`) and then the same call -- probe, and path as recorded --
    succeeding, or failing so again where that attempt made room in its turn (one eviction
    after another). An fd cache evicting its oldest entry does this: which of its opens meets
    the limit (a file, a pipe, an eventfd) and how often is how its entries came and went, not a
    failure. A call failing with nothing given back before its next attempt, or never getting
    past, stays an error. Vectorised over a window of `RETRY_GAP` rows per failure (in blocks:
    an accept loop's EMFILE storm has a hundred thousand)."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, TABLE_FULL_ERRNOS)
    cand = err_any[code_in(p.errno[err_any], codes, len(p.errno_values))] if len(codes) else err_any[:0]
    if not len(cand):
        return out
    releases = codes_where(p.probe_values, DESCRIPTOR_RELEASES)
    n, step = len(p), np.arange(1, RETRY_GAP + 1)
    # only failures with a release within the window can have made room (a storm of EMFILE
    # with no close in between -- an accept loop spinning -- drops out here, cheaply)
    given_back = np.flatnonzero(code_in(p.probe, releases, len(p.probe_values)) & (p.errno < 0))
    at_next = np.searchsorted(given_back, cand, side="right")
    cand = cand[(at_next < len(given_back))
                & (given_back[np.minimum(at_next, max(len(given_back) - 1, 0))] - cand <= RETRY_GAP)]
    if not len(cand):
        return out

    def at(column: Any, rows: np.ndarray) -> np.ndarray:  # a column at a 2-D block of rows
        return np.asarray(column[rows.ravel()]).reshape(rows.shape)

    blocks = []
    for lo in range(0, len(cand), 1 << 16):
        r = cand[lo : lo + (1 << 16)]
        idx = np.minimum(r[:, None] + step, n - 1)
        mine = at(p.sid, r[:, None])
        # a thread's rows are contiguous: past its last row the window holds no more of it
        valid = np.logical_and.accumulate((r[:, None] + step < n) & (at(p.sid, idx) == mine), axis=1)
        same = valid & (at(p.probe, idx) == at(p.probe, r[:, None])) & (
            at(p.plainpath, idx) == at(p.plainpath, r[:, None]))
        if p.raw_path is not None:
            same &= at(p.raw_path, idx) == at(p.raw_path, r[:, None])
        errno = at(p.errno, idx)
        released = valid & code_in(at(p.probe, idx), releases, len(p.probe_values)) & (errno < 0)
        # a release before each position of the window
        released_before = np.logical_or.accumulate(np.c_[np.zeros(len(r), dtype=bool), released[:, :-1]], axis=1)
        blocks.append((r, idx, same & released_before, errno, at(p.errno, r[:, None])))
    for r, _, made_room, errno, _own in blocks:
        out[r] = (made_room & (errno < 0)).any(axis=1)
    # one eviction after another: an attempt that made room for the next failing one
    for _ in range(RETRY_GAP * 4):
        changed = False
        for r, idx, made_room, errno, own in blocks:
            more = ~out[r] & (made_room & (errno == own) & out[idx]).any(axis=1)
            if more.any():
                out[r[more]] = changed = True
        if not changed:
            break
    return out


def _room_made_first_met(p: Prepared, nb: int, room_made: np.ndarray) -> np.ndarray:
    """The bad rows of `room_made` (a full descriptor table the thread made room in, see
    _descriptor_room_made) whose call and errno no good run met: the bad run hit a limit the
    good runs never came near (a lower ``ulimit -n``). Sorted rows."""
    rows = np.flatnonzero(room_made[:nb])
    if not len(rows):
        return rows
    codes = codes_where(p.errno_values, TABLE_FULL_ERRNOS)
    good = _good_rows_where(code_in(p.errno[nb:], codes, len(p.errno_values)), nb)
    n_errnos = np.int64(len(p.errno_values) + 1)
    met = np.unique(p.probe[good].astype(np.int64) * n_errnos + p.errno[good])
    return rows[~np.isin(p.probe[rows].astype(np.int64) * n_errnos + p.errno[rows], met)]


def _room_made_cause(p: Prepared, bs: align.Streams, pos: int, first_met: np.ndarray, noise: frozenset[int]) -> int:
    """The bad row of a full descriptor table the thread made room in right before bad position
    `pos` (its clean-up's close passed over), where no good run met that limit (`first_met`,
    see _room_made_first_met) -- else -1. Making room is the thread's way around the limit, not
    a failure, so the error is settled as a retry; but when the thread then leaves the good
    runs' path (split -n r/48 under ``ulimit -n 32`` writes each part between closing one
    output and opening the next, where the good runs opened all 48 first), the limit is why."""
    row = int(bs.orig[pos])
    if row <= 0 or not len(first_met):
        return -1
    q = _error_before(p, row, np.zeros(0, dtype=np.int64), noise)
    return q if q >= 0 and bool(np.isin(q, first_met)) else -1


def _cleared_in_between(p: Prepared, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For retry chains (first failed attempt `lo`, success `hi`, same thread and call site):
    whether the first attempt failed with EEXIST and the thread removed that very path
    (`REMOVE_PROBES`, successfully) before the success -- replacing an existing file."""
    out = np.zeros(len(lo), dtype=bool)
    eexist = codes_where(p.errno_values, ("EEXIST",))
    removes = codes_where(p.probe_values, REMOVE_PROBES)
    if not len(eexist) or not len(removes):
        return out
    for i in np.flatnonzero(isin(p.errno[lo], eexist)).tolist():
        between = np.arange(lo[i] + 1, hi[i])
        out[i] = bool((isin(p.probe[between], removes) & (p.errno[between] < 0)
                       & (p.plainpath[between] == p.plainpath[lo[i]]) & (p.sid[between] == p.sid[lo[i]])).any())
    return out


def _fallback_lookups(p: Prepared, bs: align.Streams, soft_change: np.ndarray, novel: np.ndarray) -> np.ndarray:
    """Bad positions that are a fallback lookup: a soft error where the good runs succeeded
    (`soft_change`), answered by the very next event of the thread -- the same call, on a path
    no good run took (`novel`), succeeding: the XDG config missing and the dotfile found. The
    program recovered by itself; the error neither names nor scores its region. A directory
    opened for listing (O_DIRECTORY) right after a file's open failed is no other place for the
    file: it is the work the miss set off (a cache index missing, its sources listed to rebuild
    it), and the miss stays the region's outcome change."""
    out = np.zeros(len(bs), dtype=bool)
    cand = np.flatnonzero(soft_change[:-1])
    if not len(cand):
        return out
    nxt = cand + 1
    row, row2 = bs.orig[cand], bs.orig[nxt]
    ok = (bs.sid[nxt] == bs.sid[cand]) & (row >= 0) & (row2 >= 0) & novel[nxt]
    row, row2 = np.maximum(row, 0), np.maximum(row2, 0)
    ok &= (p.probe[row] == p.probe[row2]) & (p.errno[row2] < 0) & (p.plainpath[row] != p.plainpath[row2])
    for i in np.flatnonzero(ok).tolist():
        ok[i] = not _lists_a_directory_instead(p, int(row[i]), int(row2[i]))
    out[cand[ok]] = True
    return out


def _lists_a_directory_instead(p: Prepared, failed: int, answer: int) -> bool:
    """Whether `answer` opened a directory (O_DIRECTORY) where the `failed` open asked for none."""
    flags, asked = p.value("arg", answer), p.value("arg", failed)
    return "O_DIRECTORY" in str(flags or "") and "O_DIRECTORY" not in str(asked or "")


def _fallback_answers(p: Prepared, bs: align.Streams, fallback: np.ndarray) -> list[tuple[int, int, str]]:
    """Per fallback lookup (bad positions `fallback`, see _fallback_lookups): (its failed call's
    row, that row's seq, the raw path the next call answered with), in time order."""
    out = []
    for pos in np.flatnonzero(fallback).tolist():
        row, answer = int(bs.orig[pos]), int(bs.orig[pos + 1])
        path = p.value("path", answer)
        if path:
            out.append((row, int(p.seq[row]), str(path).rstrip("/") or "/"))
    return sorted(out, key=lambda f: f[1])


def _fallback_cause(p: Prepared, row: int, answers: list[tuple[int, int, str]]) -> int:
    """The failed call of the latest fallback lookup before bad row `row` whose answer is
    `row`'s path or a directory above it -- else -1. A program that found its temporary
    directory, config or tool elsewhere goes on there: its later calls on those paths are new to
    the good runs because the lookup fell back, and that soft error is the cause."""
    if row < 0:
        return -1
    path = p.value("path", row)
    if not path:
        return -1
    path, seq = str(path), int(p.seq[row])
    for failed, at, answer in reversed(answers):
        if at < seq and (path == answer or path.startswith(answer if answer.endswith("/") else answer + "/")):
            return failed
    return -1


def _recovered_fallbacks(p: Prepared, rows: _Rows, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                         b_cls: np.ndarray, novel: np.ndarray, recovered: np.ndarray, nb: int,
                         families: dict[tuple[str, str], frozenset[str]],
                         good_messages: _GoodMessages | None = None) -> np.ndarray:
    """Per region: a *recovered fallback* -- a call the diffed run's environment refused (its
    only error, one no good run of the role met), whose role the thread then gave to another
    means and went on with the good runs' work: the run did what they did by another route
    (io_uring refused by a container profile, then an epoll loop; copy_file_range EXDEV across
    two file systems, then read/write; mq_open O_CREAT|O_EXCL EEXIST, then a join of the queue).

    After the failed call, every event of the region is one of: the same call on the same path
    succeeding (the join); a call of the failed call's curated family (`fallback_calls.yaml`:
    (call, errno) -> the calls that take its role), error-free, on the failed call's paths when
    it has any and writing no message; a descriptor released (`DESCRIPTOR_RELEASES`: the
    alternative's descriptors closed); an event the good runs of the role have; the end of the
    thread. At least one event takes the failed call's role, and the thread reaches the good
    runs' behaviour again after it: the region re-joins it, or it reaches the end with a known
    event after the alternative and its own exit last. The thread writes no more messages than
    a good run's thread (stdout/stderr/tty/pipe writes at those call sites): a fault that is
    reported and skipped writes one; nor a message no good run's thread wrote there (the
    same count, other words: a fallback that ends in 'short checkpoint' instead of 'ok',
    compared with digit runs as <n>: `_GoodMessages`). The caller asks only when the run exits as the good runs
    did (a fault that stops the job exits otherwise: a pid file of a live process). An event
    after the failed call that is none of these (reading the pid file found, kill(pid, 0), a
    message, an early end) keeps the region named."""
    out = np.zeros(len(regions), dtype=bool)
    cand = np.flatnonzero(b_cls[named] > 0)
    if not len(cand):
        return out
    release = frozenset(codes_where(p.probe_values, DESCRIPTOR_RELEASES).tolist())
    exits = frozenset(codes_where(p.probe_values, EXIT_PROBES).tolist())
    for r in cand.tolist():
        e, lo, hi = int(named[r]), int(regions.start[r]), int(regions.end[r]) + 1
        row = int(bs.orig[e])
        if row < 0 or not novel[e] or hi - e > FALLBACK_TAIL or np.count_nonzero(b_cls[lo:hi]) != 1:
            continue
        failed = rows.event(row)
        family = families.get((failed["probe"], failed["errno"]), frozenset())
        own = {x for x in (failed["path"], failed["path2"]) if x}
        took_over, went_on, last_row = False, False, -1
        for q in range(e + 1, hi):
            o = int(bs.orig[q])
            if o < 0:
                continue  # the end of the thread
            last_row = o
            if p.errno[o] >= 0:
                break
            ev = rows.event(o)
            if ev["probe"] == failed["probe"] and failed["path"] is not None and ev["path"] == failed["path"]:
                took_over, went_on = True, False  # the same call, the same path: the join
            elif ev["probe"] in family and not ev.get("output") and (not own or ev["path"] is None
                                                                    or ev["path"] in own):
                took_over, went_on = True, False
            elif int(p.probe[o]) in release:
                continue
            elif not novel[q]:
                went_on = went_on or took_over
            else:
                break
        else:
            if not took_over:
                continue
            if not recovered[r] and not (went_on and last_row >= 0 and int(p.probe[last_row]) in exits):
                continue
            out[r] = not _more_messages(p, nb, row) and not (good_messages and good_messages.new_message(p, row))
    return out


class _GoodMessages:
    """The messages (events column ``output``) the good runs wrote, read on demand: the diff
    loads the good side without its output bytes (they are asked about only here, for a
    region about to pass as a recovered fallback). Good source row i is the prepared table's
    row nb + i (prepare_both concatenates [bad, good])."""

    def __init__(self, good: Any, nb: int):
        self.good, self.nb = good, nb
        self._by_site: dict[int, set[str]] | None = None
        self.usable = True

    def _sites(self, p: Prepared) -> dict[int, set[str]]:
        if self._by_site is None:
            self._by_site = {}
            col = good_output_column(self.good, p, self.nb)
            self.usable = col is not None
            if col is None or col.null_count == len(col):
                return self._by_site
            table_rows = np.flatnonzero(numpy_of(col.is_valid()))
            where = np.full(len(col), -1, dtype=np.int64)  # good source row -> prepared row
            good_rows = np.arange(self.nb, len(p), dtype=np.int64)
            src = np.asarray(p.order)[good_rows] - self.nb
            ok = (src >= 0) & (src < len(col))
            where[src[ok]] = good_rows[ok]
            rows = where[table_rows]
            texts = col.take(pa.array(table_rows)).to_pylist()
            for key, text in zip(_call_keys(p, rows[rows >= 0]).tolist(), np.array(texts, dtype=object)[rows >= 0],
                                 strict=True):
                self._by_site.setdefault(key, set()).add(_DIGITS.sub("<n>", text))
        return self._by_site

    def new_message(self, p: Prepared, row: int) -> bool:
        """Whether the thread of bad row `row` wrote, at some call site, a message (digit runs
        as <n>) no good run wrote there."""
        if p.order is None or "output" not in p.table.column_names:
            return False
        col = p.table.column("output")
        if col.null_count == len(col):
            return False
        written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:self.nb]])
        mine = written[(p.tid[written] == p.tid[row]) & (p.pid[written] == p.pid[row])]
        if not len(mine):
            return False
        sites = self._sites(p)
        return self.usable and any(_DIGITS.sub("<n>", p.value("output", int(m)) or "") not in sites.get(int(key), ())
                   for m, key in zip(mine.tolist(), _call_keys(p, mine).tolist(), strict=True))


def _more_messages(p: Prepared, nb: int, row: int) -> bool:
    """Whether the thread of bad row `row` wrote more messages (stdout/stderr/tty/pipe writes:
    the events column ``output``) at their call sites than any good run's thread did there."""
    if p.order is None or "output" not in p.table.column_names:
        return False
    col = p.table.column("output")
    if col.null_count == len(col):
        return False
    written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:nb]])
    mine = written[(p.tid[written] == p.tid[row]) & (p.pid[written] == p.pid[row])]
    if not len(mine):
        return False
    keys = _call_keys(p, mine)
    good = _good_rows_where(code_in(p.probe[nb:], p.probe[mine], len(p.probe_values)), nb)
    good = good[isin(_call_keys(p, good), keys)]
    if not len(good):
        return True
    thread = np.asarray(p.tkey[good]).astype(np.int64) * np.int64(1 << 32) + np.asarray(p.tid[good]).astype(np.int64)
    return len(mine) > int(np.unique(thread, return_counts=True)[1].max())


def _retries_given_up(p: Prepared, nb: int, bad_err: np.ndarray, good_ok_calls: np.ndarray) -> np.ndarray:
    """Bad rows of a retry loop that never got past its call: a contention errno
    (`CONTENTION_ERRNOS`: EAGAIN) at a call site (probe, plain normalised path) the good runs
    completed, failed at least `GIVE_UP_MIN` times by one thread that never completes that
    call. The good runs retried there too and got the lock, so the allowlist learned the errno
    as routine; retried without end (a lock its hung holder never lets go), it is where the run
    stopped, and no entry covers it."""
    out = np.zeros(len(p), dtype=bool)
    cand, calls = _failing_with(p, bad_err, CONTENTION_ERRNOS)
    if not len(cand):
        return out
    ok = isin(calls, good_ok_calls)
    cand, calls = cand[ok], calls[ok]
    sids = np.asarray(p.sid[cand]).astype(np.int64)
    for sid, call in {(int(a), int(b)) for a, b in zip(sids.tolist(), calls.tolist(), strict=True)}:  # few
        rows = cand[(sids == sid) & (calls == call)]
        if len(rows) < GIVE_UP_MIN:
            continue
        thread = np.flatnonzero(np.asarray(p.sid[:nb]) == sid)
        done = thread[p.errno[thread] < 0]
        if not (len(done) and (_call_keys(p, done) == call).any()):
            out[rows] = True
    return out


def _pathless_retries_given_up(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Bad rows of a retry loop at a call without a path that ended refused: per bad thread and
    probe, the trailing run of contention errors (`CONTENTION_ERRNOS`) -- the thread's last
    calls of that probe, none succeeding after them -- where every good run had that (probe,
    errno) in a process of the same name and ended its calls of that probe there with a
    success. The good runs met the limit and got past it (sigqueue retried after a drain,
    io_setup halved until the kernel took it), so the allowlist learned the errno as routine;
    the bad run's last attempt failed, and it is where the run stopped. Called for a run that
    exits with another status only: how a loop of a run that did not fail ends is timing."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, CONTENTION_ERRNOS | FALLBACK_ERRNOS)
    if not len(codes):
        return out
    cand = err_any[(p.plainpath[err_any] < 0) & code_in(p.errno[err_any], codes, len(p.errno_values))]
    bad_cand = cand[cand < nb]
    if not len(bad_cand):
        return out
    good_traces = unique_ints(np.asarray(p.tkey[nb:]).astype(np.int64))
    for probe, comm in {(int(a), int(b)) for a, b in zip(p.probe[bad_cand].tolist(),
                                                           np.asarray(p.ncomm[bad_cand]).tolist(), strict=True)}:
        rows = np.flatnonzero((p.probe == probe) & (np.asarray(p.ncomm) == comm))
        good = rows[rows >= nb]
        good_failed = good[code_in(p.errno[good], codes, len(p.errno_values))]
        failed_in = unique_ints(np.asarray(p.tkey[good_failed]).astype(np.int64))
        if len(failed_in) < len(good_traces):
            continue  # a good run that never met it: not a limit every run meets
        tkey = np.asarray(p.tkey[good]).astype(np.int64)
        if any(p.errno[good[tkey == t][-1]] >= 0 for t in good_traces.tolist()):
            continue  # a good run ended refused there too: how such a loop ends is no sign
        bad = rows[rows < nb]
        for sid in unique_ints(p.sid[bad]).tolist():
            thread = bad[p.sid[bad] == sid]
            refused = code_in(p.errno[thread], codes, len(p.errno_values))
            ok_at = np.flatnonzero(~refused)
            streak = thread[(ok_at[-1] + 1 if len(ok_at) else 0):]
            out[streak] = True
    return out


def _given_up_cause(p: Prepared, bs: align.Streams, pos: int, message_row: int, given_up: np.ndarray,
                    noise: frozenset[int], k: int) -> int:
    """The bad row of the call without a path the thread gave up retrying (`given_up`, see
    _pathless_retries_given_up) right before the run's message near bad position `pos` (or
    right before its thread's exit, no message near) -- else -1. Its contention errno is timing
    to `_allowlisted_cause`; a retry loop given up is not."""
    row = int(bs.orig[pos])
    if message_row >= 0 and (row == message_row or _near(p, message_row, bs, pos, 4 * k)):
        anchor = message_row
    elif row >= 0 and p.probe_values[int(p.probe[row])] in ("exit_group", "exit"):
        anchor = row
    else:
        return -1
    q = _error_before(p, anchor, np.zeros(0, dtype=np.int64), noise)
    return q if q >= 0 and given_up[q] else -1
