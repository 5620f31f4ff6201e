"""Rules that decide which divergence is named: an outcome change against a new error, the
first of a cascade or of repeats (`_first_of_cascade`, `_first_of_repeats`), the first turn of
a search walk that found nothing (`_first_of_failed_walk`), the error a
message reports (`_quoted_error`, `_silent_before_reported`), a known error that came with a new
one (`_allowlisted_cause`), the path a two-path call's errno blames (`_blames_target`) and an
exit status the good runs never had (`_exit_anomaly`)."""

from __future__ import annotations

import errno as errno_names
import os
import posixpath
from typing import Any

import numpy as np
import pyarrow as pa

from baseline.run import align, native
from baseline.run import compute as pc
from baseline.run.normalize import (
    BETWEEN_ANY_CALLS,
    SEARCH_ERRNOS,
    SEARCH_KEY_OFFSET,
    PerStream,
    Prepared,
    code_in,
    codes_where,
    in_sorted,
    isin,
    numpy_of,
    take,
    unique_ints,
)
from baseline.run.rules.base import (
    DESCRIPTOR_RELEASES,
    MESSAGE_WRITES,
    NOT_RECOVERED_BONUS,
    RETRY_GAP,
    SEVERITY,
    SOFT_ERRNOS,
    TWO_PATH_PROBES,
    _bad_row_count,
    _call_keys,
    _error_before,
    _good_rows_where,
    _near,
    _Rows,
    _strip,
)

# Calls that only duplicate a descriptor (a shell setting up `>&2`): error-free, they say a
# redirection is being made, not what went wrong.
DESCRIPTOR_PLUMBING = frozenset({"fcntl", "dup", "dup2", "dup3"})
TARGET_ERRNOS = frozenset({"EEXIST", "ENOTEMPTY", "EISDIR", "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT",
                           "EMLINK", "ENOENT", "ENOTDIR", "ELOOP", "ENAMETOOLONG"})
# ... except these, which a two-path call's kernel check raises about its source: link(2)'s
# EPERM comes from may_linkat() on the existing file (fs.protected_hardlinks: not its owner
# and not writable; a directory), never from the new name's directory (that is EACCES).
SOURCE_ERRNOS = {"link": frozenset({"EPERM"}), "linkat": frozenset({"EPERM"})}


def _seen_events(bad: align.Streams, good: align.Streams, role_hash: np.ndarray) -> np.ndarray:
    """Which `bad` positions' events (token under the stream's role) some good position has:
    `align.seen_in` of the length-1 window hashes, computed for the good positions whose
    role-mixed token is one of the bad ones (a binary search into the few bad values) instead
    of hashing and sorting every good position. The hash is a bijection of that value, so
    the result is the same."""
    if len(bad) == 0 or len(good) == 0:
        return np.zeros(len(bad), dtype=bool)
    wanted = unique_ints(role_hash[bad.sid] ^ bad.tok)
    hit = np.zeros(len(good), dtype=bool)
    for a in range(0, len(good), align._BLOCK):
        b = min(len(good), a + align._BLOCK)
        mixed = take(role_hash, good.sid[a:b])
        mixed ^= good.tok[a:b]
        # a hash set of the few wanted values (compiled): a binary search per position into
        # them took ~2 % of a 2 x 1M diff's main thread
        found = native.seen_in(mixed, wanted)
        hit[a:b] = in_sorted(mixed, wanted) if found is None else found
    return align.seen_in(align.window_hashes(bad, role_hash, 1), align.window_hashes(good.take(hit), role_hash, 1))


def _raw_outcome_changes(p: Prepared, nb: int, cand: np.ndarray, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows of `cand` (bad errors) whose call -- probe and path as recorded -- the good runs
    completed successfully and never failed with that errno. Only the call sites the good
    runs completed are looked at; raw paths are fetched for those rows only and compared in
    Arrow (call key, raw path, errno joined into one string)."""
    out = np.zeros(len(p), dtype=bool)
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return out
    good = _good_rows_where(code_in(p.probe[nb:], p.probe[cand], len(p.probe_values)), nb)
    good = good[in_sorted(_call_keys(p, good), unique_ints(_call_keys(p, cand)))]
    def keys(rows: np.ndarray, errno: np.ndarray | None) -> pa.Array:
        raw = p.raw_paths(rows)
        parts = [pc.cast(pa.array(_call_keys(p, rows)), pa.string()), pc.fill_null(raw, "")]
        if errno is not None:
            parts.append(pc.cast(pa.array(errno.astype(np.int64)), pa.string()))
        return pc.binary_join_element_wise(*parts, "\x00")

    ok = good[p.errno[good] < 0]
    failed = good[p.errno[good] >= 0]
    done = pc.is_in(keys(cand, None), value_set=keys(ok, None)).to_numpy(zero_copy_only=False)
    same_fail = pc.is_in(keys(cand, p.errno[cand]), value_set=keys(failed, p.errno[failed])).to_numpy(
        zero_copy_only=False)
    out[cand] = done & ~same_fail
    return out


def _explained_without(bs: align.Streams, gh: np.ndarray, role_hash: np.ndarray, k: int, start: int, end: int,
                       drop: np.ndarray, bounds: tuple, sid: int) -> bool:
    """Whether the bad stream `sid` around the region [start, end] -- from k-1 positions before
    it to k-1 after -- has only windows some good stream has once positions `drop` are left out."""
    lo = max(int(bounds[0][sid]), start - (k - 1))
    hi = min(int(bounds[1][sid]), end + k)
    idx = np.arange(lo, hi)
    idx = idx[~isin(idx, drop)]
    if not len(idx):
        return True
    h = align.window_hashes(bs.take(idx), role_hash, k)
    if lo != int(bounds[0][sid]):
        h = h[k - 1 :]  # the first k-1 windows would be padded as if the stream began there
    return bool(align.seen_in(h, gh).all())


def _found_where_good_missed(p: Prepared, bs: align.Streams, cand: np.ndarray, good_calls: np.ndarray,
                             good_ok_calls: np.ndarray, n_errnos: np.int64, good_outcomes: np.ndarray) -> np.ndarray:
    """Bad positions of `cand` that succeed at a call site (probe, plain normalised path)
    where the good runs only ever failed, with soft errors (`SOFT_ERRNOS`: rm -f's ENOENT)."""
    out = np.zeros(len(bs), dtype=bool)
    pos = np.flatnonzero(cand & (bs.orig >= 0))
    rows = bs.orig[pos]
    ok = (p.errno[rows] < 0) & (p.plainpath[rows] >= 0)
    pos, rows = pos[ok], rows[ok]
    if not len(pos):
        return out
    calls = _call_keys(p, rows)
    hit = isin(calls, good_calls) & ~isin(calls, good_ok_calls)
    hard = codes_where(p.errno_values, lambda v: v not in SOFT_ERRNOS).astype(np.int64) + 1
    for i in np.flatnonzero(hit).tolist():  # few: the good runs' outcomes there are soft errors only
        hit[i] = not isin(calls[i] * n_errnos + hard, good_outcomes).any()
    out[pos[hit]] = True
    return out


def _leftover_then_message(p: Prepared, bs: align.Streams, gh: np.ndarray, role_hash: np.ndarray, k: int,
                           region: tuple[int, int, int], message_row: int, bounds: tuple, sid: int,
                           good: tuple) -> bool:
    """An error-free region (start, end, named position) of a run that exits with another
    status, named by a success where the good runs only failed softly (a cache or state file
    an earlier run left), which goes on to write the run's last message (`message_row`): the
    leftover is not why when, its path's events left out, every position up to the message
    is one the good runs have -- the run did their work, then failed on something else."""
    start, end, pos = region
    at = np.flatnonzero(bs.orig[start : end + 1] == message_row)
    if not len(at) or bs.orig[pos] < 0:
        return False
    q = start + int(at[0])
    one = np.zeros(len(bs), dtype=bool)
    one[pos] = True
    if not _found_where_good_missed(p, bs, one, *good)[pos]:
        return False
    lo = max(int(bounds[0][sid]), start - (k - 1))
    idx = np.arange(lo, q)
    rows = bs.orig[idx]
    left = (rows >= 0) & (np.asarray(p.plainpath[np.maximum(rows, 0)]) == int(p.plainpath[int(bs.orig[pos])]))
    # the good runs' work: at least a window of positions between the leftover and the message
    # (a job refusing to start because of a state file says so right after reading it)
    if q - (lo + int(np.flatnonzero(left)[-1])) - 1 < k:
        return False
    idx = idx[~left]
    h = align.window_hashes(bs.take(idx), role_hash, k)
    if lo != int(bounds[0][sid]):
        h = h[k - 1 :]
    return bool(align.seen_in(h, gh).all())


def _known_errors_after_new(regions: align.Regions, novel: np.ndarray, b_cls: np.ndarray, b_oc: np.ndarray,
                            weight: np.ndarray) -> None:
    """In a region that opens with an error-free event no good run of its role had (a message
    written, a call on a new path), an error after it that the good runs of the role made as
    well (the same call, path and errno: no novelty) and that changes no outcome there names
    nothing: it is the program's ordinary flow going on, inside the region only because the new
    event shares its window (sqlite3 writing 'UNIQUE constraint failed' mid-load, then its next
    statement's hot-journal check, ENOENT as between any two of the good runs' statements; the
    call also succeeds there while a transaction is open, so no entry covers it). Sets the
    weight of those errors to 0 in place."""
    opens_new = np.flatnonzero(novel[regions.start] & (b_cls[regions.start] == 0))
    n = (regions.end[opens_new] - regions.start[opens_new]).astype(np.int64)  # positions after the opening one
    if not n.sum():
        return
    # every position after the opening event of those regions, as one index array
    pos = np.repeat(regions.start[opens_new] + 1 - np.cumsum(np.r_[0, n[:-1]]), n) + np.arange(n.sum())
    known = (b_cls[pos] > 0) & ~b_oc[pos] & ~novel[pos]
    weight[pos[known]] = 0


def _first_of_cascade(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray, b_cls: np.ndarray,
                      b_oc: np.ndarray) -> None:
    """A region named by a hard error that changes an outcome (the good runs made that call
    there successfully) which the thread already met, earlier in the region, in the same
    directory (the same call, the same errno) on a name the good runs never had: the earlier
    one is where the run left them -- the first of the cascade (lz4 -m over a read-only
    directory, the first segment that of a host new today: EROFS there, then at each segment
    the good runs also wrote). Names that one, carrying the outcome change. Soft errors (a
    lookup's ENOENT) are left alone: a miss before the one that matters is often a probe."""
    for r in np.flatnonzero(b_oc[named] & (b_cls[named] == 2)).tolist():
        at = int(named[r])
        row = int(bs.orig[at])
        if row < 0 or p.plainpath[row] < 0:
            continue
        lo = int(regions.start[r])
        rows = bs.orig[lo:at]
        same = np.flatnonzero((rows >= 0) & (b_cls[lo:at] == 2) & ~b_oc[lo:at])
        if not len(same):
            continue
        same = same[(p.probe[rows[same]] == p.probe[row]) & (p.errno[rows[same]] == p.errno[row])]
        directory = os.path.dirname(str(p.value("path", row)))
        for q in same.tolist():
            earlier = p.value("path", int(rows[q]))
            if earlier is not None and os.path.dirname(str(earlier)) == directory:
                named[r] = lo + q
                b_oc[lo + q] = True  # (the cascade's outcome change: scored as the named event)
                break


def _first_of_repeats(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                      errors: np.ndarray, score: np.ndarray) -> None:
    """Regions named (`errors`) by the same failed call (probe, errno) in one thread on paths of
    one directory are one failure met again: each takes the group's highest score, so the first
    ranks first (c_rehash on a read-only certs volume: the first link's EROFS, after which it
    went on, and the second's, after which it gave up -- the second only scored the give-up).
    A failure the thread got past at once at the same path (`_handled_at_once`: sqlite opening
    its database read-only after the read-write open's EACCES) is no such first: it was dealt
    with, the later one was not."""
    at = np.flatnonzero(errors)
    if len(at) < 2:
        return
    rows = bs.orig[named[at]]
    releases = frozenset(codes_where(p.probe_values, DESCRIPTOR_RELEASES).tolist())
    groups: dict[tuple[int, int, int, str], list[int]] = {}
    for r, row in zip(at.tolist(), rows.tolist(), strict=True):
        if row < 0 or p.plainpath[row] < 0 or _handled_at_once(p, row, releases):
            continue
        directory = p.npath_values[int(p.plainpath[row])].rsplit("/", 1)[0]
        groups.setdefault((int(regions.sid[r]), int(p.probe[row]), int(p.errno[row]), directory), []).append(r)
    for members in groups.values():
        if len(members) > 1:
            score[members] = score[members].max()


def _first_of_failed_walk(p: Prepared, row: int, nb: int, cache: dict[str, Any] | None = None) -> int:
    """The row to name for a region named by `row`, the last turn of a search walk that found
    nothing (a failed lookup after failed lookups of the same file name in other directories,
    in its thread, with only the scheduler's and allocator's calls between): the walk's first
    turn at a path where no good run failed, when that is an earlier turn; else -1.

    The last turn is named only because it is the one normalize does not mask as ``<search>``
    (no lookup follows it), while the turns before it match the good runs' routine misses of
    the same walk. Its path is where the program gave up, the least telling one: setlocale
    asked for en_UK.UTF-8 and then tried its own respellings, en_UK.utf8 ... en, the last named
    (the good runs' C.UTF-8 miss, then C.utf8 found); a $PATH lookup of a removed tool fails
    in every directory, the good runs' misses before the one where they found it. The first
    turn no good run missed is what the program asked for, or where the good runs found it."""
    if row < 0 or row >= nb or p.errno[row] < 0 or int(p.pathkey[row]) >= SEARCH_KEY_OFFSET:
        return -1
    if p.errno_values[int(p.errno[row])] not in SEARCH_ERRNOS or p.plainpath[row] < 0:
        return -1
    name = posixpath.basename(p.npath_values[int(p.plainpath[row])].rstrip("/"))
    cache = {} if cache is None else cache  # (the codes and the good runs' misses, once a diff)
    if "search" not in cache:
        cache["between"] = frozenset(codes_where(p.probe_values, BETWEEN_ANY_CALLS).tolist())
        cache["search"] = frozenset(codes_where(p.errno_values, SEARCH_ERRNOS).tolist())
    between, search = cache["between"], cache["search"]
    walk = [row]
    turn_dir = posixpath.dirname(str(p.value("path", row)).rstrip("/"))
    q = row - 1
    while q >= 0 and p.tid[q] == p.tid[row] and p.tkey[q] == p.tkey[row]:
        if int(p.probe[q]) in between or p.value("path", q) == turn_dir:
            q -= 1  # (ld.so checks the directory of each failed turn before its next)
            continue
        key = int(p.pathkey[q])
        if (int(p.errno[q]) not in search or key < SEARCH_KEY_OFFSET
                or p.base_values[key - SEARCH_KEY_OFFSET] != name):
            break
        walk.append(q)
        turn_dir = posixpath.dirname(str(p.value("path", q)).rstrip("/"))
        q -= 1
    if len(walk) < 2:
        return -1
    walk.reverse()
    # the good runs' failed lookups of this file name: the masked turns of their walks, and
    # the unmasked last turns at the paths the walk's turns normalise to
    turns = np.array(walk, dtype=np.int64)
    if "failed" not in cache:
        codes = np.array(sorted(search), dtype=p.errno.dtype)
        cache["failed"] = np.flatnonzero(isin(p.errno[nb:], codes)) + nb
    failed = cache["failed"]
    keys = p.pathkey[failed] if len(failed) else np.zeros(0, dtype=np.int64)
    same = (keys == int(p.pathkey[walk[0]])) | isin(p.plainpath[failed], unique_ints(p.plainpath[turns]))
    missed = frozenset(p.raw_path[failed[same]].tolist()) if p.raw_path is not None else frozenset()
    first = next((t for t in walk if int(p.raw_path[t]) not in missed), row) if p.raw_path is not None else row
    return -1 if first == row else first


def _handled_at_once(p: Prepared, row: int, releases: frozenset[int]) -> bool:
    """A call of the thread at the same path succeeded within RETRY_GAP rows after the failed
    `row` (rows are in stream order: a thread's rows run together). Giving the descriptor back
    is no such call: shutil closing both files after the sendfile that filled the disk
    (real_fortysixth's `copytree_tmpfs_fills_late`) dealt with nothing (`releases`: their probe
    codes)."""
    for q in range(row + 1, min(len(p.tid), row + 1 + RETRY_GAP)):
        if p.tid[q] != p.tid[row] or p.tkey[q] != p.tkey[row]:
            return False
        if p.plainpath[q] == p.plainpath[row] and p.errno[q] < 0 and int(p.probe[q]) not in releases:
            return True
    return False


def _last_output(p: Prepared, nb: int) -> int:
    """The bad row that wrote last to stdout/stderr/a tty/a pipe (the events column output),
    -1 when the bad run wrote nothing: when the run exits with a status no good run had, what
    it said last is why (an error message)."""
    if p.order is None or "output" not in p.table.column_names:
        return -1
    col = p.table.column("output")
    if col.null_count == len(col):
        return -1
    written = np.flatnonzero(numpy_of(col.is_valid())[p.order[:nb]])
    return int(written[np.argmax(p.seq[written])]) if len(written) else -1


def _message_translated(p: Prepared, bs: align.Streams, pos: int, stop: int, novel: np.ndarray, window: int) -> int:
    """The bad row of the message a message catalog lookup (bad position `pos`) was made for:
    the first write to stdout/stderr/a tty/a pipe (the events column output) of its thread
    after it, within `window` positions (`stop`: the end of the thread's positions), that is new
    to the good runs (`novel`); -1 when there is none. gettext opens the catalog on the first
    message it translates, so that write is the run's error message, even when the program goes
    on writing its other output after it (tsort reporting a loop, then printing the order it
    could make, exit 1). A write the good runs make too before it is passed over: coreutils'
    error() flushes stdout before it writes the message (join's joined lines so far)."""
    if p.order is None or "output" not in p.table.column_names:
        return -1
    span = np.arange(pos + 1, min(stop, pos + 1 + window))
    rows = bs.orig[span]
    span, rows = span[rows >= 0], rows[rows >= 0]
    if not len(rows):
        return -1
    # (the window's rows only: the whole column's validity is two million values)
    taken = p.table.column("output").take(pa.array(np.asarray(p.order)[rows]))
    written = numpy_of(taken.is_valid())
    hit = np.flatnonzero(written & novel[span])
    return int(rows[hit[0]]) if len(hit) else -1


def _message_after(p: Prepared, bs: align.Streams, row: int, start: int, seq_rows: np.ndarray) -> bool:
    """Whether bad row `row` (the run's last message) is its thread's, at or after bad position
    `start` (a region running to the thread's end: the message is inside it)."""
    at = int(bs.orig[start])
    return at >= 0 and int(p.tid[at]) == int(p.tid[row]) and int(seq_rows[row]) >= int(seq_rows[at])


def _says_nothing(ev: dict[str, Any]) -> bool:
    """An event with no error, no path and no output: exit_group, a signal mask, the end of a
    thread; or a descriptor duplicated without error (a redirection being set up)."""
    return ev["errno"] is None and not ev.get("output") and (ev["path"] is None or ev["probe"] in DESCRIPTOR_PLUMBING)


def _silent_before_reported(p: Prepared, bs: align.Streams, regions: align.Regions, named: np.ndarray,
                            weights: tuple[np.ndarray, np.ndarray], message_row: int, timing_codes: np.ndarray,
                            noise: frozenset[int]) -> None:
    """Rename, in place, a region named by an error its thread passed over in silence when the
    run's last message (a run exiting with another status) reports a later error of the same
    region, as severe, at another path: the message says which failure stopped the program.
    zstd --rm of another account's log in a sticky spool: copying the log's owner to the .zst
    fails chown EPERM twice, ignored (chmod and the rest go on as in the good runs), then the
    unlink of the log fails EPERM and is what zstd reports -- the first error in the region was
    no more the cause than the second. The earlier error keeps the name when the thread wrote
    anything between the two (it was reported too: tar's "Cannot mkdir" before the next
    member's error) or when the later error's path is the earlier's or under it (a directory
    that could not be made, then a file in it: the earlier one is the cause)."""
    weight, max_weight = weights
    q = _error_before(p, message_row, timing_codes, noise)
    if q < 0:
        return
    at = np.flatnonzero(bs.orig == q)
    if not len(at):
        return
    pos = int(at[0])
    r = np.flatnonzero((regions.start <= pos) & (regions.end >= pos))
    if not len(r):
        return
    r = int(r[0])
    first = int(named[r])
    row = int(bs.orig[first])
    if (pos <= first or row < 0 or max_weight[r] <= 0 or weight[pos] != max_weight[r] or weight[first] != max_weight[r]
            or int(p.tid[row]) != int(p.tid[q]) or int(p.tkey[row]) != int(p.tkey[q]) or p.errno[row] < 0):
        return
    if p.plainpath[row] < 0 or p.plainpath[q] < 0:
        return
    earlier, later = p.path_string(int(p.plainpath[row])), p.path_string(int(p.plainpath[q]))
    if not earlier or not later or later == earlier or later.startswith(earlier.rstrip("/") + "/"):
        return
    if "output" in p.table.column_names and p.order is not None and q - row > 1:
        between = numpy_of(p.table.column("output").is_valid())[np.asarray(p.order[row + 1 : q])]
        same = (np.asarray(p.tid[row + 1 : q]) == int(p.tid[q]))
        if bool((between & same).any()):
            return
    named[r] = pos


def _reported_error(p: Prepared, bs: align.Streams, pos: int, timing_codes: np.ndarray, noise: frozenset[int]) -> int:
    """The bad row of the error a message catalog lookup at bad position `pos` reports: the
    thread's call right before the lookup (noise calls aside), when it failed with an errno
    that is not timing; -1 otherwise. The message's own first writes (error()'s "prog: "
    prefix goes out before strerror's text is translated) are passed over too."""
    return _error_before(p, int(bs.orig[pos]), timing_codes, noise)


def _allowlisted_cause(p: Prepared, bs: align.Streams, pos: int, message_row: int,
                       sites: tuple[np.ndarray, np.ndarray], timing_codes: np.ndarray, noise: frozenset[int],
                       k: int) -> int:
    """The bad row of the error the run's last message (`message_row`, near bad position `pos`
    in its thread) reports -- or, when the region is named by its thread's exit with no message
    near, the error right before that exit -- when that error is no call the good runs made -- its (call,
    path) is at no call site of theirs, or, for a call without a path, no good process of its
    name failed that call with that errno as often (`_new_pathless_errors`), so only a broad allowlist entry set it aside (a
    sysfs glob; prctl EINVAL, libcap's probe) -- else -1. A miss the good runs make too (a
    learned entry, a probe they survive) is not the cause: they went on after it -- unless the
    bad run made it more often than each of them (`_failed_more_often`).
    `sites`: the good runs' call sites (`good_calls`), the new pathless errors (a row mask)."""
    good_calls, new_pathless = sites
    row = int(bs.orig[pos])
    if message_row >= 0 and (row == message_row or _near(p, message_row, bs, pos, 4 * k)):
        anchor = message_row
    elif row >= 0 and p.probe_values[int(p.probe[row])] in ("exit_group", "exit"):
        anchor = row  # no message: the exit itself (a launcher's `[ -r $f ] || exit 3`)
    else:
        return -1
    q = _error_before(p, anchor, timing_codes, noise)
    while q >= 0 and _terminal_query_of_message(p, q):
        q = _error_before(p, q, timing_codes, noise)
    if q < 0:
        return -1
    if p.plainpath[q] < 0:
        return q if new_pathless[q] else -1
    if not bool(isin(_call_keys(p, q), good_calls)):
        return q
    return q if _failed_more_often(p, q) else -1


def _terminal_query_of_message(p: Prepared, q: int) -> bool:
    """Whether bad row `q` is an ioctl's ENOTTY on the path its thread writes a message to right
    after: the program asking whether the descriptor it is about to print on is a terminal (its
    width, isatty) -- part of printing the message, not what it reports (unzip's " bad CRC" of a
    garbled member after TIOCGWINSZ on stdout, /dev/null)."""
    if p.probe_values[int(p.probe[q])] != "ioctl" or p.errno_values[int(p.errno[q])] != "ENOTTY":
        return False
    nxt = q + 1
    if nxt >= len(p) or int(p.tkey[nxt]) != int(p.tkey[q]) or int(p.tid[nxt]) != int(p.tid[q]):
        return False
    return (p.probe_values[int(p.probe[nxt])] in MESSAGE_WRITES and p.errno[nxt] < 0
            and p.plainpath[q] >= 0 and p.plainpath[nxt] == p.plainpath[q])


def _failed_more_often(p: Prepared, q: int) -> bool:
    """Whether the bad run's failure at bad row `q` is one its call site turned from a success:
    the bad run failed that (call, path, errno) more often than every good run did and
    succeeded at that (call, path) fewer times than every good run did. A call site is keyed by
    path, not by what else the call names: an optional tag missing on a file in every run and
    the required one missing on the same file in the bad run are two getxattr ENODATA of one
    site (the attribute's name is not in the trace), where each good run has one miss and then
    reads the required tag. A call only asked more often (bash's isatty probe of /dev/null,
    ENOTTY in every run, once more to print a message) is no such turn. A site no good run ever
    failed so is one too, however its successes count: a site whose successes cannot be told
    apart shares its path with other objects (every pipe is `pipe:`), and a non-blocking write's
    EAGAIN before the job's "write stdout: Resource temporarily unavailable" meets a site the
    good runs wrote to as often, on their other pipes (real_fortyseventh's
    `nonblocking_record_over_pipe`, which the curated entry for pipe EAGAIN set aside)."""
    nb = _bad_row_count(p)
    site = (p.probe == p.probe[q]) & (p.plainpath == p.plainpath[q])
    failed, ok = site & (p.errno == p.errno[q]), site & (p.errno < 0)
    good_failed = _per_good_counts(p, _good_rows_where(failed[nb:], nb))
    if not good_failed.any():
        return True
    if int(np.count_nonzero(ok[:nb])) >= int(_per_good_counts(p, _good_rows_where(ok[nb:], nb)).min()):
        return False
    return int(np.count_nonzero(failed[:nb])) > int(good_failed.max())


def _per_good_counts(p: Prepared, rows: np.ndarray) -> np.ndarray:
    """How many of `rows` (good rows) each good trace has, 0 for a trace with none."""
    tkey = p.tkey
    n_good = int(np.max(tkey.values if isinstance(tkey, PerStream) else np.asarray(tkey))) + 1
    if not len(rows):
        return np.zeros(max(n_good, 1), dtype=np.int64)
    return np.bincount(np.asarray(p.tkey[rows]).astype(np.int64), minlength=max(n_good, 1))


def _new_pathless_errors(p: Prepared, nb: int, err_any: np.ndarray) -> np.ndarray:
    """Row mask: bad errors of calls without a path whose (call, errno, process name) the bad
    run has more often than every good run -- none of them has it at all, or each met it
    fewer times and went on (`err_any`: the rows with an error). A call without a path has no
    call site to tell the routine failures from the new one: three optional interfaces
    missing in every run (SIOCGIFINDEX ENODEV) and the required one missing in the bad run
    are four of one (ioctl, ENODEV); SO_RCVBUFFORCE refused to nobody before its fallback and
    then SO_PRIORITY 7 refused are two of one (setsockopt, EPERM). The count says one failure
    is new."""
    out = np.zeros(len(p), dtype=bool)
    rows = err_any[p.plainpath[err_any] < 0]
    if not len(rows):
        return out
    comm = np.asarray(p.ncomm[rows]).astype(np.int64) + 1
    key = ((p.probe[rows].astype(np.int64) * np.int64(len(p.errno_values) + 1) + p.errno[rows])
           * np.int64(len(p.ncomm_values) + 2) + comm)
    bad = rows < nb
    bad_keys, bad_counts = np.unique(key[bad], return_counts=True)
    if not len(bad_keys):
        return out
    # the most times one good run has each of the bad run's keys (0: none has it)
    good_max = np.zeros(len(bad_keys), dtype=np.int64)
    good = ~bad & isin(key, bad_keys)
    if good.any():
        pairs, counts = np.unique(np.stack([np.asarray(p.tkey[rows[good]]).astype(np.int64), key[good]]),
                                  axis=1, return_counts=True)
        at = np.searchsorted(bad_keys, pairs[1])
        np.maximum.at(good_max, at, counts)
    more = bad_keys[bad_counts > good_max]
    out[rows[bad]] = isin(key[bad], more)
    return out


def _quoted_error(p: Prepared, row: int, nb: int, noise: frozenset[int]) -> int:
    """The bad row of the call that failed right before bad row `row` in its thread when `row`
    is a message write whose text holds that error's description (strerror: "Resource
    temporarily unavailable" for EAGAIN, what perror and err(3) print); -1 otherwise."""
    if not 0 <= row < nb or p.order is None or "output" not in p.table.column_names \
            or p.probe_values[int(p.probe[row])] not in MESSAGE_WRITES:
        return -1
    text = p.table.column("output")[int(p.order[row])].as_py()
    if not text:
        return -1
    q = _error_before(p, row, np.zeros(0, dtype=np.int32), noise)
    if q < 0:
        return -1
    number = getattr(errno_names, p.errno_values[int(p.errno[q])], None)
    return q if isinstance(number, int) and os.strerror(number) in text else -1


def _exit_anomaly(p: Prepared, rows: _Rows, nb: int, message_row: int, context: int,
                  noise: frozenset[int]) -> dict[str, Any]:
    """The anomaly of a bad run whose calls all look like the good runs' but which exits with
    a status none of them had: named by what it wrote last (`message_row`), else by its last
    event."""
    row = message_row if message_row >= 0 else int(np.argmax(p.seq[:nb]))
    ev = rows.event(row)
    before = []
    q = row - 1
    while q >= 0 and len(before) < context and int(p.tid[q]) == ev["tid"]:
        if int(p.probe[q]) not in noise:
            before.append(_strip(rows.event(q)))
        q -= 1
    return {
        "rank": 1, "score": SEVERITY[0] + NOT_RECOVERED_BONUS, "kind": "divergence",
        "probe": ev["probe"], "errno": ev["errno"], "path": ev["path"], "npath": ev["npath"],
        "path2": ev["path2"], "then_wrote": rows.output_after(nb, ev["seq"], ev["pid"]), "next_event": None,
        "process": {"pid": ev["pid"], "tid": ev["tid"], "comm": ev["comm"], "role": ev["comm"] or ""},
        "position": ev["seq"], "recovered": False, "unexplained_events": 0,
        "last_common": before[::-1], "good_instead": [],
    }


def _blames_target(p: Prepared, row: int, nb: int, probe: str, errno: str | None,
                   paths: tuple[str | None, str | None] = (None, None)) -> bool:
    """Whether the error of a two-path call (rename/link: source, target; `paths` as recorded)
    is the target's: errors about the destination are (but not a RENAME_NOREPLACE rename's
    EPERM); a lookup error (ENOENT, ENOTDIR, ...) is unless the bad run showed the source failing
    the same way before, or the target's directory is on the source's path
    (`_target_directory_on_source_path`)."""
    if probe not in TWO_PATH_PROBES or errno not in TARGET_ERRNOS or row < 0:
        return False
    if errno in SOURCE_ERRNOS.get(probe, ()):
        return False
    if errno in ("ENOENT", "ENOTDIR", "ELOOP") and _target_directory_on_source_path(*paths):
        return False
    if errno in ("ENOENT", "ENOTDIR", "ELOOP", "ENAMETOOLONG"):
        same = (p.plainpath[:nb] == p.plainpath[row]) & (p.errno[:nb] == p.errno[row]) & (p.seq[:nb] < p.seq[row])
        return not bool(same.any())
    return not (errno == "EPERM" and _no_replace_rename(p, row))


def _target_directory_on_source_path(source: str | None, target: str | None) -> bool:
    """Whether the target's directory is the source's or one of its ancestors: then a lookup
    error of the call (ENOENT, ENOTDIR, ELOOP) cannot be the target directory's alone -- the
    source's lookup walks the same components -- and is the source's (a log rotation's `mv
    log.3 log.4` when log.3 is the missing generation: the target's directory is there)."""
    if not source or not target:
        return False
    src_dir, dst_dir = posixpath.dirname(source), posixpath.dirname(target)
    if not dst_dir:  # the working directory: on the path of every relative source
        return not source.startswith("/")
    return src_dir == dst_dir or src_dir.startswith(dst_dir.rstrip("/") + "/")


def _no_replace_rename(p: Prepared, row: int) -> bool:
    """Whether `row` is a rename asked with RENAME_NOREPLACE (mv's first try, renameat2 -n):
    its target did not exist (it would have failed EEXIST), so an EPERM is not the target's
    inode (immutable, append-only, another's in a sticky directory) but the source's -- the
    file a log rotation moves after chattr +i/+a, or another user's in a sticky directory."""
    if "arg" not in p.table.column_names:  # (the per-row narg is released before the report)
        return False
    flags = p.value("arg", row)
    return isinstance(flags, str) and "RENAME_NOREPLACE" in flags


def _enotty_known_there(p: Prepared, row: int, good_outcomes: np.ndarray, n_errnos: np.int64) -> bool:
    """`row` fails ENOTTY at a call site where the good runs failed ENOTTY too: the descriptor
    is no terminal in their runs as well, so ENOTTY says nothing new about it, however many
    other ioctls succeeded there (python's open() of a script asks isatty -- TCGETS, ENOTTY --
    besides FIOCLEX's success; a traceback reopening the script repeats the question). The
    ENOTTY exclusion from the covered timing errnos is for a node the good runs' ioctl answered
    and never refused so."""
    if p.errno_values[p.errno[row]] != "ENOTTY":
        return False
    return bool(isin(_call_keys(p, row) * n_errnos + (p.errno[row] + 1), good_outcomes).any())


def _loop_turns_before_divergence(p: Prepared, bs: align.Streams, regions: align.Regions, explained: np.ndarray,
                                  novel: np.ndarray, b_cls: np.ndarray, message_row: int) -> align.Regions:
    """Regions that open with turns of a loop the good runs made too -- known, error-free calls
    of the probe the one before was (find's newfstatat of each entry of a directory), whose
    window of k is new only because the entries come in another order (names are the run's
    data) -- and go on to a new event or an error: the region opens at that event (find -delete's
    unlinkat of a listed file it reaped; the stats of its directory's entries before it are the
    walk every good run made). The same order of known calls followed by nothing new stays as it
    is (the reorderings' rules judge it), and so does a region in the thread whose message a run
    exiting with another status ends with (`message_row`, -1 if none): its known turns may be a
    search going on past where the good runs' stopped, which the message rules read (python's
    import of a module left out, stat-ing each further directory of sys.path)."""
    if not len(regions):
        return regions
    start = regions.start.copy()
    probe = p.probe
    for r in range(len(start)):
        lo, hi = int(start[r]), int(regions.end[r])
        if message_row >= 0 and _message_after(p, bs, message_row, lo, p.seq):
            continue
        at = lo
        while at < hi and _a_known_loop_turn(probe, bs, at, explained, novel, b_cls):
            at += 1
        if at > lo and (novel[at] or b_cls[at] > 0):
            start[r] = at
    if (start == regions.start).all():
        return regions
    return align.Regions(start, regions.end, regions.sid)


def _a_known_loop_turn(probe: np.ndarray, bs: align.Streams, at: int, explained: np.ndarray, novel: np.ndarray,
                       b_cls: np.ndarray) -> bool:
    """Position `at` is a good run's event again or another turn of the call before it in its
    stream (known, error-free, the same probe)."""
    if explained[at]:
        return True
    if novel[at] or b_cls[at] > 0 or at == 0 or bs.sid[at - 1] != bs.sid[at]:
        return False
    row, before = int(bs.orig[at]), int(bs.orig[at - 1])
    return row >= 0 and before >= 0 and probe[row] == probe[before]
