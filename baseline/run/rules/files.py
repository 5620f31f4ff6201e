"""Rules about file-system idioms whose details vary run to run without a failure: directories
made on demand (`_parents_made_on_demand`), caches missed and filled (`_cache_misses_filled`,
`_warm_caches_refilled`), locks published or discarded (`_lock_fates`), log rotations, sweeps
and walks of directories whose entries differ (`_sweep_turns`, `_listing_twins`), and the data
files of the run's environment (`_environment_data`)."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from baseline.run import align
from baseline.run import compute as pc
from baseline.run.allowlist import (
    ExpectedErrors,
)
from baseline.run.normalize import (
    Prepared,
    code_in,
    codes_where,
    in_sorted,
    isin,
    numpy_of,
    stream_starts,
    unique_ints,
)
from baseline.run.rules.base import (
    FIND_PROBES,
    LISTING_PROBES,
    MESSAGE_CATALOG,
    RETRY_GAP,
    SOFT_ERRNOS,
    _bad_row_count,
    _call_keys,
    _error_class,
    _good_rows_where,
    _news_all,
    _paths_new_to_bad,
    _with_previous,
)

# The data files of the run's locale and time zone: which of them a program reads is its
# environment's choice (LANG, LANGUAGE, LC_ALL, TZ), not its behaviour -- good runs recorded
# under LANG=C read no message catalog, one under LANGUAGE=de reads coreutils.mo; one with TZ
# unset reads /etc/localtime, one with TZ=Asia/Tokyo that zone's file. Their successful calls
# drop out (any call); a failed one still counts (a zone file or the locale archive missing).
# Matched on normalised paths ("Etc/GMT+<n>"), in the /usr subset first (a prefix test of every
# distinct path, a regex on the few that pass).
ENVIRONMENT_DATA = re.compile(r"^(?:/usr/share/locale/|/usr/share/locale-langpack/|/usr/lib/locale/|/usr/share/zoneinfo/"
                              r"|/usr/share/i18n/|/usr/lib/[^/]+/gconv/|/usr/lib/gconv/)|^/etc/localtime$")
# How far (rows of the stream-ordered table, in the same thread) a cache miss's fill is looked for (see
# _cache_misses_filled): python compiles the module between its bytecode cache's miss and the
# rename onto it, some twenty rows.
CACHE_FILL_ROWS = 64
# Calls that check what a path is (an idempotent mkdir's check that the path is a directory).
STAT_PROBES = frozenset({"stat", "lstat", "newfstatat", "statx"})
# Calls that plumb descriptors: which descriptor a child's stdin is can be timing (make -j
# gives stdin to one running job at a time, a broken pipe to the others: whether the first
# job has finished when the second starts decides which the second gets -- see
# _descriptor_plumbing). Not fcntl: a lock taken where the good runs took none is no plumbing.
PLUMBING_PROBES = frozenset({"dup", "dup2", "dup3", "pipe", "pipe2", "close"})
# Calls that set a file's attributes (times, mode, owner). One more of them, right after the
# thread's check of the same path, is the check having found the attribute off this time
# (see _attributes_retouched).
ATTRIBUTE_PROBES = frozenset({"utimensat", "futimesat", "utimes", "utime", "chmod", "fchmod", "fchmodat", "fchmodat2",
                              "chown", "fchown", "fchownat", "lchown"})
# Calls that only look a name up (nothing changed, nothing read from the object): one more of
# them in a loop over a listing is the listing being longer (see _extra_entries).
LOOKUP_PROBES = STAT_PROBES | {"statfs", "readlink", "readlinkat", "access", "faccessat", "faccessat2",
                               "getxattr", "lgetxattr"}
# Calls that create the object at their path (open* only with O_CREAT): failing ENOENT, the
# directory they create in is missing (see _parents_made_on_demand).
MADE_IN_PARENT_PROBES = frozenset({"open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat"})
MKDIR_PROBES = frozenset({"mkdir", "mkdirat"})
# Nested directories made on demand, innermost first (mkdir -p's walk up): levels at most.
MADE_ON_DEMAND_DEPTH = 8
# A lock or temp file created exclusively and then either published (renamed over its target)
# or discarded (unlinked): see _lock_fates.
CREATE_PROBES = frozenset({"open", "openat", "openat2"})
PUBLISH_PROBES = frozenset({"rename", "renameat", "renameat2"})
DISCARD_PROBES = frozenset({"unlink", "unlinkat"})
# A /proc scan (ps, top, pgrep, a monitor) stats /proc/<pid> and reads /proc/<pid>/... for every
# process it listed; one that exits in between gives ENOENT (or ESRCH) there. An error of that form is routine in
# a thread that made the same call for at least PROC_SCAN_MIN different pids; a check of one
# pid (a pid file's daemon) is not a scan: its ENOENT says the daemon is gone.
PROC_PID_PATH = re.compile(r"^/proc/(\d+)(?:/|$)", re.ASCII)
PROC_SCAN_ERRNOS = frozenset({"ENOENT", "ESRCH"})
PROC_SCAN_MIN = 3
# A directory walked: one good run made the same call with the same outcome at this many
# names of one directory at least (see _listing_twins)
LISTING_TWINS_MIN = 2
# Where the kernel lists the host's state (interfaces, processes, devices): an entry new there
# is the host's, and so are its files' contents; elsewhere only a new entry's routine errors
# are its siblings' twins (the extra file opened and read stays named: see _extra_entries)
KERNEL_LISTINGS = ("/proc/", "/sys/")


def _idem_mkdir_causes(bs: align.Streams, regions: align.Regions, rows: np.ndarray, b_cls: np.ndarray,
                       b_oc: np.ndarray, k: int, plain: np.ndarray) -> None:
    """Bad idempotent mkdirs (`rows`, taken for successes in the tokens) within `k` positions
    before a divergence region of their thread, or inside one: the region starts there, and
    the mkdir is a soft error -- an outcome change where the good runs created the directory.
    Not before a region that `plain` marks (per region: no error, no event new to the good
    runs, in a run exiting as they did): what follows such a mkdir is the good runs' work in
    another order, not a failure after the path turned out to be a file -- `mkdir -p a/b` as the
    last of its arguments ends without going back to its start directory, and whether the last
    line of a manifest is a top-level directory or a nested one is the data's."""
    if not len(rows):
        return
    pos = np.flatnonzero(isin(bs.orig, rows))
    for q in pos.tolist():
        r = np.flatnonzero((regions.sid == bs.sid[q]) & (regions.start - k <= q) & (regions.end >= q))
        if not len(r) or plain[int(r[0])]:
            continue
        r = int(r[0])
        regions.start[r] = min(int(regions.start[r]), q)
        b_cls[q] = 1
        b_oc[q] = True


def _lock_fates(p: Prepared) -> np.ndarray:
    """The rows (indices) to drop: the error-free calls on a file created exclusively (O_CREAT|O_EXCL: a
    `*.lock`, a mkstemp temp) when some runs published it (renamed it over its target) and
    others discarded it (unlinked it), the bad run among the runs that created it.

    Taking a lock and then deciding whether there is anything to write is the protocol's
    normal flow, not a divergence: `git status` always takes index.lock and renames its
    refreshed index over `index` only when it found entries racily clean (a clock question:
    the commit before it in the same second), else it unlinks the lock. The file's creation
    stays (EEXIST on it, a lock left by a crash, is a fault) and so does every error on it
    (a write's ENOSPC, a rename's EACCES): only which clean ending it had drops out, in every
    run alike. Keyed on the normalised path per trace, never on names."""
    none = np.zeros(0, dtype=np.int64)
    excl = codes_where(p.narg_values, lambda v: "O_CREAT" in v and "O_EXCL" in v)
    if not len(excl):
        return none
    n_probes = len(p.probe_values)
    ok = p.errno < 0
    created = np.flatnonzero(code_in(p.narg, excl, len(p.narg_values)) & ok
                             & code_in(p.probe, codes_where(p.probe_values, CREATE_PROBES), n_probes))
    if not len(created):
        return none
    path = np.asarray(p.plainpath)
    created = created[path[created] >= 0]
    paths = unique_ints(path[created].astype(np.int64))
    if not len(paths):
        return none
    on = np.flatnonzero(code_in(path, paths, len(p.npath_values)) & ok)
    # one key per (trace, path): trace numbers from 0 (the bad run is tkey -1)
    width = np.int64(len(p.npath_values) + 1)
    tkey = np.asarray(p.tkey[on]).astype(np.int64) + 1
    key_on = tkey * width + path[on]
    probe_on = p.probe[on]
    published = unique_ints(key_on[code_in(probe_on, codes_where(p.probe_values, PUBLISH_PROBES), n_probes)])
    discarded = unique_ints(key_on[code_in(probe_on, codes_where(p.probe_values, DISCARD_PROBES), n_probes)])
    made = unique_ints((np.asarray(p.tkey[created]).astype(np.int64) + 1) * width + path[created])
    pub, dis = isin(made, published), isin(made, discarded)
    made_path = made % width
    both = unique_ints(made_path[pub & ~dis])
    both = both[isin(both, made_path[dis & ~pub]) & isin(both, made_path[made // width == 0])]
    if not len(both):
        return none
    rows = on[isin(path[on], both)]
    return rows[~in_sorted(rows, created)]  # the creates stay: a create failing is a fault


def _proc_scan_races(p: Prepared) -> np.ndarray:
    """Rows of an error of `PROC_SCAN_ERRNOS` at /proc/<pid> or below in a process whose threads
    made the same call (probe, normalised path) for at least `PROC_SCAN_MIN` different pids: a
    scan meeting a process that exited between its listing and its read, or a kernel thread (no
    exe), see PROC_PID_PATH. The process's threads together: a pool of scanner threads takes
    pids from a shared counter, and which worker meets the kernel threads is timing (one that
    met a single pid, /proc/4/exe, was named)."""
    out = np.zeros(len(p), dtype=bool)
    codes = codes_where(p.errno_values, PROC_SCAN_ERRNOS)
    if not len(codes) or p.raw_path is None:
        return out
    cand = np.flatnonzero(code_in(p.errno, codes, len(p.errno_values)))
    cand = cand[p.plainpath[cand] >= 0]
    # only the few distinct normalised paths under /proc/ (raw paths fetched for those rows only)
    under = [c for c in unique_ints(np.asarray(p.plainpath[cand])).tolist()
             if (p.npath_values[c] or "").startswith("/proc/")]
    cand = cand[isin(np.asarray(p.plainpath[cand]), under)]
    if not len(cand):
        return out
    raw = p.raw_paths(cand).to_pylist()
    cand = cand[[i for i, path in enumerate(raw) if path and PROC_PID_PATH.match(path)]]
    if not len(cand):
        return out
    starts = np.r_[stream_starts(p), len(p)]
    # each stream's process: (trace, pid) of its first row; a stream without a pid is its own
    first = starts[:-1]
    pid = np.asarray(p.pid[first]).astype(np.int64)
    process = np.where(pid >= 0, np.asarray(p.tkey[first]).astype(np.int64) * (1 << 32) + pid,
                       -1 - np.arange(len(first), dtype=np.int64))
    of_cand = process[np.asarray(p.sid[cand])]
    plain = np.asarray(p.plainpath[cand])
    for key in {(int(a), int(b), int(c)) for a, b, c in zip(of_cand, p.probe[cand], plain, strict=True)}:
        pids: set[str] = set()
        for s in np.flatnonzero(process == key[0]).tolist():
            lo, hi = int(starts[s]), int(starts[s + 1])
            at = lo + np.flatnonzero((p.probe[lo:hi] == key[1]) & (np.asarray(p.plainpath[lo:hi]) == key[2]))
            pids |= {m.group(1) for path in p.raw_paths(at).to_pylist() if path and (m := PROC_PID_PATH.match(path))}
            if len(pids) >= PROC_SCAN_MIN:
                out[cand[(of_cand == key[0]) & (p.probe[cand] == key[1]) & (plain == key[2])]] = True
                break
    return out


def _listing_twins(p: Prepared, nb: int) -> np.ndarray:
    """Bad rows at a path no good run has, made of a directory entry new to the diffed run:
    a name N at some place of the (plain normalised) path where one good run made the very
    call with the very outcome (probe, errno) at LISTING_TWINS_MIN or more other names, the
    rest of the path the same. A walk of a directory with one entry more (an interface, a pid,
    a device the host has this time: /proc/sys/net/ipv4/conf/<iface>/..., /sys/class/net/...)
    makes for the new entry the calls, and gets the errors, every entry gets: one more turn
    of the walk, dropped like a retry -- its errors anywhere, its successful calls under
    `KERNEL_LISTINGS` only. A call or an outcome no sibling had (the new entry's file a
    symlink loop: ELOOP where the others' were missing) is no twin and stays."""
    out = np.zeros(len(p), dtype=bool)
    n = len(p)
    if nb == 0 or nb == n:
        return out
    plain = np.asarray(p.plainpath)
    cand = _paths_new_to_bad(plain, nb, len(p.npath_values))
    if not len(cand):
        return out
    n_paths, n_err = np.int64(len(p.npath_values) + 1), np.int64(len(p.errno_values) + 1)

    def call_keys(rows: np.ndarray) -> np.ndarray:  # (probe, errno, plain path) as one int64
        return (p.probe[rows].astype(np.int64) * n_err + (p.errno[rows].astype(np.int64) + 1)) * n_paths + (
            plain[rows] + 1)

    cand_keys = call_keys(cand)
    calls = unique_ints(cand_keys // n_paths)  # the candidates' (probe, errno)
    good = np.flatnonzero(plain[nb:] >= 0) + nb
    good_keys = call_keys(good)
    keep = in_sorted(good_keys // n_paths, calls)
    good, good_keys = good[keep], good_keys[keep]
    tkey = np.asarray(p.tkey[good]).astype(np.int64)
    # the candidates worth asking about (a successful call on a file's new entry is not: its
    # contents may matter, cat d/*), and the heads of their paths: (call, parts, the first i parts)
    asked = []
    for key in unique_ints(cand_keys).tolist():
        path = p.npath_values[int(key % n_paths) - 1] or ""
        call = key // n_paths
        if call % n_err or path.startswith(KERNEL_LISTINGS):
            asked.append((key, call, path.split("/")))
    heads = {(call, len(parts), "/".join(parts[:i])) for _key, call, parts in asked for i in range(1, len(parts))}
    # per (probe, errno, place, the path's head and tail): which names each good trace had there.
    # A good path is walked place by place only while its head is a candidate's (heads nest: once
    # none shares the first i parts, none shares more): a walk over every place of every good
    # path was quadratic in their depth and took seconds on a run of 50,000 files.
    names: dict[tuple, dict[int, set[str]]] = {}
    for t in unique_ints(tkey).tolist():
        for key in unique_ints(good_keys[tkey == t]).tolist():
            parts = (p.npath_values[int(key % n_paths) - 1] or "").split("/")
            call = key // n_paths
            head = parts[0]
            for i in range(1, len(parts)):
                if (call, len(parts), head) not in heads:
                    break
                names.setdefault((call, i, head, tuple(parts[i + 1:])), {}).setdefault(t, set()).add(parts[i])
                head = f"{head}/{parts[i]}"
    twin_keys = []
    for key, call, parts in asked:
        head = parts[0]
        for i in range(1, len(parts)):
            by_trace = names.get((call, i, head, tuple(parts[i + 1:])), {})
            if any(len(v) >= LISTING_TWINS_MIN and parts[i] not in v for v in by_trace.values()):
                twin_keys.append(key)
                break
            head = f"{head}/{parts[i]}"
    if twin_keys:
        out[cand[isin(cand_keys, np.array(twin_keys, dtype=np.int64))]] = True
    return out


def _sweep_turns(p: Prepared, nb: int, rules: ExpectedErrors) -> np.ndarray:
    """Bad rows of one more turn of a directory sweep, in a run that ended as the good runs did:
    a thread lists a directory D (getdents, successfully), then visits its entries one after
    the other, each visit a block of consecutive calls of the thread on D/<name>; a visit one
    of whose calls fails and all of whose errors are expected (an allowlist entry covers
    them) is one more turn of the walk (the caller asks only when the exit status is the good
    runs'). The HotSpot JVM
    sweeps /tmp/hsperfdata_<user>/ at start: for another JVM's file it opens it, takes a
    non-blocking flock and leaves it on EAGAIN (that JVM is alive) -- whether one runs is the
    host's, and the curated entry covers the EAGAIN but not the open of a path the good runs
    never took. A visit without an error (the dead JVM's file deleted), with an error no entry
    covers, not directly after the listing or another visit of D, of an entry whose raw path a
    good run visited too (the same directory's same file: the good runs explain it, or not), or
    in a run whose exit status changed (a stale lock the program then fails on) stays."""
    out = np.zeros(len(p), dtype=bool)
    if nb == 0 or nb == len(p) or p.raw_path is None:
        return out
    lists = codes_where(p.probe_values, LISTING_PROBES)
    if not len(lists):
        return out
    plain = np.asarray(p.plainpath)
    listed = np.flatnonzero(code_in(p.probe[:nb], lists, len(p.probe_values)) & (p.errno[:nb] < 0) & (plain[:nb] >= 0))
    if not len(listed):
        return out
    # the thread of a row is its stream: rows are grouped by stream, numbered as `sid` is
    starts = np.r_[stream_starts(p), len(p)]
    n_paths = np.int64(len(p.npath_values) + 1)
    listed_sid = np.searchsorted(starts, listed, side="right") - 1
    dirs = set(unique_ints(listed_sid.astype(np.int64) * n_paths + plain[listed]).tolist())  # (thread, directory)
    # a visit's error, in a thread that listed a directory: where a turn is looked for (the
    # plain path may be the good runs' too: /tmp/hsperfdata_root/<n> is also their own file)
    cand = np.flatnonzero((p.errno[:nb] >= 0) & (plain[:nb] >= 0))
    cand_sid = np.searchsorted(starts, cand, side="right") - 1
    keep = isin(cand_sid, listed_sid)
    cand, cand_sid = cand[keep], cand_sid[keep]
    if not len(cand):
        return out
    dir_code = {p.npath_values[c]: c for c in unique_ints(plain[listed]).tolist()}
    list_codes = set(lists.tolist())
    parents: dict[int, int | None] = {}

    def listed_parent(c: int) -> int | None:  # the code of the plain path's directory, when listed
        if c not in parents:
            parents[c] = dir_code.get(os.path.dirname((p.npath_values[c] or "").rstrip("/")))
        return parents[c]

    covered: dict[tuple[int, int, int, int], bool] = {}

    def expected(key: tuple[int, int, int, int]) -> bool:  # (probe, errno, plain path, comm) codes
        if key not in covered:  # a sweep's visits repeat one masked error: match it once
            comm = p.ncomm_values[key[3]] if key[3] >= 0 else None
            covered[key] = rules.match(p.probe_values[key[0]], p.errno_values[key[1]], p.npath_values[key[2]],
                                       comm, comm) is not None
        return covered[key]

    raw_new: np.ndarray | None = None  # bad rows at a raw path no good row has, once a visit qualifies
    done = -1  # the last row of the last visit looked at (candidates come in row order)
    for r, sid in zip(cand.tolist(), cand_sid.tolist(), strict=True):
        if r <= done:
            continue
        path = int(plain[r])
        d = listed_parent(path)
        if d is None or sid * int(n_paths) + d not in dirs:
            continue
        first, end = int(starts[sid]), min(int(starts[sid + 1]), nb)  # the thread's rows
        lo, hi = r, r + 1  # the visit: the thread's consecutive calls on this entry
        while lo > first and plain[lo - 1] == path:
            lo -= 1
        while hi < end and plain[hi] == path:
            hi += 1
        done = hi - 1
        # back to the listing over other entries' visits: nothing else in between
        k = lo - 1
        while k >= first and plain[k] >= 0 and plain[k] != d and listed_parent(int(plain[k])) == d:
            k -= 1
        if k < first or plain[k] != d or int(p.probe[k]) not in list_codes or p.errno[k] >= 0:
            continue
        errs = np.arange(lo, hi)[p.errno[lo:hi] >= 0]
        if not all(expected((int(p.probe[e]), int(p.errno[e]), path, int(p.ncomm[e]))) for e in errs.tolist()):
            continue
        # the entry itself new to the good runs (another JVM's pid): a visit of an entry they
        # visited too is theirs to explain (an `ls` cut off by the recording makes the same
        # visits as the complete run, and its last ones must still line up with the good runs')
        if raw_new is None:
            raw_new = np.zeros(nb, dtype=bool)
            raw_new[_paths_new_to_bad(np.asarray(p.raw_path), nb, len(p.raw_path_values))] = True
        if raw_new[lo:hi].all():
            out[lo:hi] = True
    return out


def _shadowing_find(p: Prepared, nb: int, anomaly: dict[str, Any], good_calls: np.ndarray,
                    good_ok_calls: np.ndarray, n_errnos: np.int64, good_outcomes: np.ndarray) -> int:
    """The first bad row of `anomaly`'s process, before it, that found a file (`FIND_PROBES`,
    success) at a call site where the good runs only failed softly, under a file name the
    good runs found (same call) in another directory; -1 if none. A leftover the good runs
    never found under any name (a cache file) does not qualify."""
    pid, seq = anomaly["process"].get("pid"), anomaly.get("position")
    if pid is None or seq is None or seq < 0:
        return -1
    finds = codes_where(p.probe_values, FIND_PROBES)
    rows = np.flatnonzero(code_in(p.probe[:nb], finds, len(p.probe_values))
                          & (p.errno[:nb] < 0) & (p.plainpath[:nb] >= 0) & (p.pid[:nb] == pid) & (p.seq[:nb] < seq))
    if not len(rows):
        return -1
    calls = _call_keys(p, rows)
    hit = isin(calls, good_calls) & ~isin(calls, good_ok_calls)
    hard = codes_where(p.errno_values, lambda v: v not in SOFT_ERRNOS).astype(np.int64) + 1
    for r in rows[hit][np.argsort(p.seq[rows[hit]], kind="stable")].tolist():
        call = _call_keys(p, np.array([r]))[0]
        if isin(call * n_errnos + hard, good_outcomes).any():
            continue
        name = os.path.basename(p.npath_values[int(p.plainpath[r])] or "")
        good = _good_rows_where((p.probe[nb:] == p.probe[r]) & (p.errno[nb:] < 0), nb)
        good = good[p.plainpath[good] >= 0]
        found = {os.path.basename(p.npath_values[int(c)] or "") for c in unique_ints(np.asarray(p.plainpath[good])).tolist()
                 if c != p.plainpath[r]}
        if name and name in found:
            return int(r)
    return -1


def _parents_made_on_demand(p: Prepared, noise_codes: np.ndarray) -> np.ndarray:
    """Rows (indices) of directories made on demand: a create (`MADE_IN_PARENT_PROBES`; an
    open only with O_CREAT) failing ENOENT whose thread's next call (noise probes passed over)
    is a successful mkdir of that path's parent directory, and whose next call of the same
    probe and flags, within `RETRY_GAP` rows of the mkdir, succeeds in that directory: the
    failed create and the mkdir. Together they are one step, the same as a create that
    found the directory: git writes each loose object into its fan-out directory
    (`objects/ab/`), making it on ENOENT, so whether the directory existed depends on the
    object's hash. A mkdir that fails, a second create that fails, or an ENOENT followed by
    anything but the parent's mkdir stays. A mkdir that is itself made on demand (mkdir -p
    walking up: `a/b` ENOENT, `a` made, `a/b` made) counts as made: levels are resolved
    innermost first."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    probes = codes_where(p.probe_values, MADE_IN_PARENT_PROBES)
    mkdirs = codes_where(p.probe_values, MKDIR_PROBES)
    if not len(enoent) or not len(mkdirs) or p.raw_path is None:
        return none
    n_probes = len(p.probe_values)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], probes, n_probes) & (p.plainpath[cand] >= 0) & (p.raw_path[cand] >= 0)]
    opens = code_in(p.probe[cand], codes_where(p.probe_values, CREATE_PROBES), n_probes)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = cand[~opens | code_in(p.narg[cand], creating, len(p.narg_values))]
    if not len(cand):
        return none
    # the rows that count as a thread's next call: not noise, not a step already resolved
    counted = ~code_in(p.probe, noise_codes, n_probes)
    made = np.zeros(len(p), dtype=bool)
    for _ in range(MADE_ON_DEMAND_DEPTH):
        rows = np.flatnonzero(counted & ~made)
        at = np.searchsorted(rows, cand, side="right")
        ok = at < len(rows)
        nxt = np.where(ok, rows[np.minimum(at, len(rows) - 1)], 0)
        ok &= (p.sid[nxt] == p.sid[cand]) & code_in(p.probe[nxt], mkdirs, n_probes) & (p.errno[nxt] < 0)
        ok &= (p.raw_path[nxt] >= 0) & ~made[cand]
        found = False
        for c, m in zip(cand[ok].tolist(), nxt[ok].tolist(), strict=True):
            created = p.raw_path_values[int(p.raw_path[c])]
            parent = p.raw_path_values[int(p.raw_path[m])].rstrip("/")
            if not parent or os.path.dirname(created.rstrip("/")) != parent:
                continue
            if _created_again_in(p, c, m, parent):
                made[c] = made[m] = True
                found = True
        if not found:
            break
    _made_top_down(p, cand[~made[cand]], counted, mkdirs, made)
    return np.flatnonzero(made)


def _created_again_in(p: Prepared, c: int, m: int, parent: str) -> bool:
    """Whether the failed create at row `c` was made again right after the mkdir at row `m`:
    the same call (probe and flags) of the thread within RETRY_GAP rows, its first one,
    succeeding in `parent`, the directory made. A mkstemp-style name is drawn anew for it, so
    the raw names differ and the masked ones may too (a draw that reads as a word)."""
    hi = min(m + RETRY_GAP + 1, len(p))
    again = np.flatnonzero((p.sid[m + 1:hi] == p.sid[c]) & (p.probe[m + 1:hi] == p.probe[c])
                           & (p.narg[m + 1:hi] == p.narg[c]))
    if not len(again):
        return False
    r = m + 1 + int(again[0])
    return bool(p.errno[r] < 0 and p.raw_path[r] >= 0
                and os.path.dirname(p.raw_path_values[int(p.raw_path[r])].rstrip("/")) == parent)


def _made_top_down(p: Prepared, cand: np.ndarray, counted: np.ndarray, mkdirs: np.ndarray, made: np.ndarray) -> None:
    """Directories made on demand from the top down (GNU tar extracting an archive without
    directory entries: a member's create fails ENOENT, then mkdirat of each ancestor, the
    existing ones failing EEXIST, down to its parent, made; then the create again): the failed
    create, the walk's mkdirs and their EEXISTs are one step with the create, marked in `made`.
    Which ancestors already existed follows the archive's order of members, not the program."""
    if not len(cand):
        return
    rows = np.flatnonzero(counted & ~made)
    at = np.searchsorted(rows, cand, side="right")
    ok = at < len(rows)
    nxt = np.where(ok, rows[np.minimum(at, len(rows) - 1)], 0)
    ok &= (p.sid[nxt] == p.sid[cand]) & code_in(p.probe[nxt], mkdirs, len(p.probe_values)) & (p.raw_path[nxt] >= 0)
    mkdir_codes = set(mkdirs.tolist())
    eexist = set(codes_where(p.errno_values, ("EEXIST",)).tolist())
    for c, first in zip(cand[ok].tolist(), at[ok].tolist(), strict=True):
        parent = os.path.dirname(p.raw_path_values[int(p.raw_path[c])].rstrip("/"))
        walk: list[int] = []
        depth = -1
        for m in rows[first:first + MADE_ON_DEMAND_DEPTH].tolist():
            if p.sid[m] != p.sid[c] or int(p.probe[m]) not in mkdir_codes or p.raw_path[m] < 0:
                break
            made_dir = p.raw_path_values[int(p.raw_path[m])].rstrip("/")
            if not made_dir or not (parent == made_dir or parent.startswith(made_dir + "/")) \
                    or made_dir.count("/") <= depth:
                break
            failed = int(p.errno[m])
            if failed >= 0 and failed not in eexist:
                break
            walk.append(m)
            depth = made_dir.count("/")
            if made_dir == parent:
                # the parent itself made here: then the create again, succeeding
                if failed < 0 and _created_again_in(p, c, m, parent):
                    made[c] = True
                    made[walk] = True
                break


def _cache_misses_filled(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss its thread fills: an open for reading (`CREATE_PROBES`
    without O_CREAT) failing ENOENT at a path the same thread then publishes within
    `CACHE_FILL_ROWS` rows -- renames a file onto it (`PUBLISH_PROBES`, the path as the
    target) or creates it (an open with O_CREAT) successfully -- at a call site (call, path)
    no good run opened successfully. Python's bytecode cache (``__pycache__/m.cpython-311.pyc``
    missing, the module compiled, the cache written to a temporary and renamed onto it),
    ccache, a font cache: which entries a run misses follows what it loads, and the fill says
    the miss was only a cache's. Left in, the miss of a module imported on another branch (an
    environment variable choosing the fallback backend) named its region instead of the new
    lookup that opens it. A miss where the good runs found the file is an outcome change and
    stays, filled or not (a state file missing, then written afresh)."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    opens = codes_where(p.probe_values, CREATE_PROBES)
    if not len(enoent) or not len(opens) or p.raw_path is None:
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    # one pass over the rows (the errno column), then the few misses only
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], opens, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[~isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return none
    # the fills: successful renames, and opens with O_CREAT. Only those within
    # CACHE_FILL_ROWS rows after a miss can count, so when the misses are few only those rows
    # are looked at (a pass over the probe column found every open: ~1M on the bench pair).
    after = np.arange(1, CACHE_FILL_ROWS + 1)
    if len(cand) * len(after) < len(p) // 8:
        fills = unique_ints((cand[:, None] + after).ravel())
        fills = fills[fills < len(p)]
        fills = fills[code_in(p.probe[fills], np.concatenate([publish, opens]), n_probes)]
    else:
        fills = np.flatnonzero(code_in(p.probe, np.concatenate([publish, opens]), n_probes))
    fills = fills[(p.errno[fills] < 0) & (code_in(p.probe[fills], publish, n_probes)
                                          | code_in(p.narg[fills], creating, n_args))]
    at = np.searchsorted(fills, cand, side="right")
    nxt = fills[np.minimum(at, max(len(fills) - 1, 0))] if len(fills) else cand
    cand = cand[(at < len(fills)) & (nxt - cand <= CACHE_FILL_ROWS) & (p.sid[nxt] == p.sid[cand])]
    out = []
    for c in cand.tolist():  # misses with a fill of their thread right after them: few
        want = p.raw_path_values[int(p.raw_path[c])]
        near = fills[(fills > c) & (fills <= c + CACHE_FILL_ROWS)]
        for r in near[p.sid[near] == p.sid[c]].tolist():
            moved = bool(code_in(p.probe[r : r + 1], publish, n_probes)[0])
            if (p.value("path2", r) if moved else p.value("path", r)) == want:
                out.append(c)
                break
    return np.array(out, dtype=np.int64)


# Calls that only ask whether a path is there (a cache's existence check, os.path.exists).
EXISTS_PROBES = STAT_PROBES | {"access", "faccessat", "faccessat2"}


def _warm_caches_refilled(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss at a call site the good runs completed (they found the
    cache warm) that its thread then fills by publishing: an existence check (`EXISTS_PROBES`)
    or an open for reading failing ENOENT, followed within `CACHE_FILL_ROWS` rows of the same
    thread by a successful rename (`PUBLISH_PROBES`) of a temporary onto that very path; the
    miss and the error-free rows up to and including the rename. A cache warm in some runs and
    cold in others (an earlier job on the host filled it, or not): the cold run computes what
    the warm one read, and publishes it atomically where the warm run found it; the thread
    then goes on as the warm runs did. Errors in between stay (the fill's own failures), and a
    miss filled some other way (written in place, or not at all: a state file the job starts
    afresh without) stays an outcome change. `_cache_misses_filled` is the same for call sites
    no good run completed (python's bytecode cache of a module only this run imports)."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    asks = codes_where(p.probe_values, EXISTS_PROBES | CREATE_PROBES)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    if not len(enoent) or not len(asks) or not len(publish) or p.raw_path is None or not p.has_column("path2"):
        return none  # (a table without second paths -- schema 1, or none recorded -- has no renames' targets)
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    # the successful renames first (one pass over the probe column): most runs have none, and
    # a miss counts only with one of its thread's right after it
    fills = np.flatnonzero(code_in(p.probe, publish, n_probes))
    fills = fills[p.errno[fills] < 0]
    if not len(fills):
        return none
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    at = np.searchsorted(fills, cand, side="right")
    nxt = fills[np.minimum(at, len(fills) - 1)]
    cand = cand[(at < len(fills)) & (nxt - cand <= CACHE_FILL_ROWS) & (p.sid[nxt] == p.sid[cand])]
    cand = cand[code_in(p.probe[cand], asks, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    out: list[np.ndarray] = []
    for c in cand.tolist():  # misses with a publish of their thread right after them: few
        want = p.raw_path_values[int(p.raw_path[c])]
        near = fills[(fills > c) & (fills <= c + CACHE_FILL_ROWS)]
        for r in near[p.sid[near] == p.sid[c]].tolist():
            if p.value("path2", r) == want:
                span = np.arange(c + 1, r + 1)
                span = span[(p.sid[span] == p.sid[c]) & (p.errno[span] < 0)]
                out.extend([np.array([c]), span])
                break
    return unique_ints(np.concatenate(out)) if out else none


def _warm_caches_refilled_by_children(p: Prepared, good_ok_calls: np.ndarray) -> np.ndarray:
    """Rows (indices) of a cache miss at a call site the good runs completed that the missing
    process then fills through *child processes* -- a shell script's ``[ -f cache/x ] || {
    mkdir -p cache; sha256sum p > cache/x.tmp && mv cache/x.tmp cache/x; }``, cold in one run
    only: an existence check (`EXISTS_PROBES`) or an open for reading failing ENOENT, then a
    successful rename (`PUBLISH_PROBES`) onto that very path by a child of the missing process
    that started after the miss, within `CACHE_FILL_ROWS` rows of the missing thread. The
    fill is the children the process started between the miss and the publisher, the
    publisher included (mkdir, sha256sum, mv: processes the warm runs never start), and the
    missing thread's rows up to the publisher's last. The miss drops out; so do the fill's
    rows without an error, the missing thread's lookups failing softly (its $PATH search for
    the commands) and its children's soft errors (`SOFT_ERRNOS`: libselinux's statfs
    of /sys/fs/selinux at every coreutils start, glibc's missing locale archive) -- programs a
    warm run never starts have no good run to be compared with, and their fill was published.
    A hard error of a fill's child (EACCES, ENOSPC) stays, and so does everything when nothing
    is published (sha256sum's input missing before `&&`: the miss is then an outcome change),
    but for the miss when the fill failed hard in the cache's directory (`_fills_failed_hard`).
    `_warm_caches_refilled` is the same fill made by the missing thread itself."""
    none = np.zeros(0, dtype=np.int64)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    asks = codes_where(p.probe_values, EXISTS_PROBES | CREATE_PROBES)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    if (not len(enoent) or not len(asks) or p.raw_path is None or p.pid is None or p.ppid is None
            or not p.has_column("path2")):
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    fills = np.flatnonzero(code_in(p.probe, publish, n_probes))
    fills = fills[p.errno[fills] < 0]  # (none at all: a fill may still have failed hard)
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    cand = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], asks, n_probes) & ~code_in(p.narg[cand], creating, n_args)]
    cand = cand[(p.raw_path[cand] >= 0) & (p.plainpath[cand] >= 0)]
    if not len(cand):
        return none
    cand = cand[isin(_call_keys(p, cand), good_ok_calls)]
    if not len(cand):
        return none
    # the renames onto a path some candidate missed (their targets read once each)
    wanted = {p.raw_path_values[int(p.raw_path[c])] for c in cand.tolist()}
    onto: dict[str, list[int]] = {}
    for r in fills.tolist():
        target = p.value("path2", r)
        if target in wanted:
            onto.setdefault(target, []).append(r)
    err_class = np.zeros(len(p.errno_values) + 1, dtype=np.int8)  # by errno code, -1 (none) last
    err_class[:-1] = [_error_class(v) for v in p.errno_values]
    out: list[np.ndarray] = []
    if len(wanted) > len(onto):
        out.append(_fills_failed_hard(p, cand, onto, err_class))
    if not onto:
        return unique_ints(np.concatenate(out)) if out else none
    pid, ppid, tkey, seq = (np.asarray(a) for a in (p.pid, p.ppid, p.tkey, p.seq))
    lookups = codes_where(p.probe_values, LOOKUP_PROBES)
    for c in cand.tolist():
        for r in onto.get(p.raw_path_values[int(p.raw_path[c])], ()):
            if tkey[r] != tkey[c] or pid[r] == pid[c] or ppid[r] != pid[c] or seq[r] <= seq[c]:
                continue
            trace = np.flatnonzero(tkey == tkey[c])
            publisher = trace[pid[trace] == pid[r]]
            start, end = seq[publisher].min(), seq[publisher].max()
            mine = trace[p.sid[trace] == p.sid[c]]
            if start <= seq[c] or np.count_nonzero((seq[mine] > seq[c]) & (seq[mine] < start)) > CACHE_FILL_ROWS:
                continue
            # the children the process started from the miss to the publisher (by their first row)
            kids = trace[(ppid[trace] == pid[c]) & (pid[trace] != pid[c])]
            first = {}
            for k, q in zip(pid[kids].tolist(), seq[kids].tolist(), strict=True):
                first[k] = min(q, first.get(k, q))
            fill_pids = [k for k, q in first.items() if seq[c] < q <= start]
            fill = kids[isin(pid[kids], fill_pids)]
            fill = fill[err_class[p.errno[fill]] < 2]
            # (the thread's lookups failing softly are its $PATH search for the commands it
            # starts: /usr/local/bin/mkdir before /usr/bin/mkdir; an open's error stays)
            span = mine[(seq[mine] > seq[c]) & (seq[mine] <= end)]
            span = span[(p.errno[span] < 0) | (code_in(p.probe[span], lookups, n_probes)
                                               & (err_class[p.errno[span]] == 1))]
            out.extend([np.array([c]), span, fill])
            break
    return unique_ints(np.concatenate(out)) if out else none


def _fills_failed_hard(p: Prepared, cand: np.ndarray, onto: dict[str, list[int]], err_class: np.ndarray) -> np.ndarray:
    """Rows (indices) of the cache misses of `cand` that nothing published onto (no key of
    `onto`) whose fill failed with a hard error: within `CACHE_FILL_ROWS` rows of the missing
    thread after the miss, the thread or a child process it started there met a hard error at
    a path in the missed path's directory (the shell's ``> cache/x.tmp`` in an immutable
    cache directory: openat EPERM). The miss, an outcome change, outranked that error in
    their region (5.5 against 4): it was only the cache being cold, the failed fill is what
    went wrong. So did the later misses of the same entry (ENOENT, the reads the fill was for:
    `cat cache/x`), which drop out too. A miss with no such error stays (a fill that failed
    softly: sha256sum's input missing)."""
    hard = np.flatnonzero(err_class[p.errno] == 2)  # one pass over the errno column; then the few
    hard = hard[p.raw_path[hard] >= 0]
    cand = cand[[p.raw_path_values[int(p.raw_path[c])] not in onto for c in cand.tolist()]]
    if not len(hard) or not len(cand):
        return np.zeros(0, dtype=np.int64)
    starts = stream_starts(p)
    h_tkey, h_seq, h_ppid, h_sid = (np.asarray(p.tkey[hard]), np.asarray(p.seq[hard]), np.asarray(p.ppid[hard]),
                                    np.asarray(p.sid[hard]))
    h_start_seq = np.asarray(p.seq[starts[h_sid]])  # when each hard error's thread began
    out: list[int] = []
    for c in cand.tolist():
        sid, seq = p.sid[c], p.seq[c]
        stop = min(c + CACHE_FILL_ROWS, len(p) - 1)
        while p.sid[stop] != sid:  # (the thread's last row, when it ends sooner)
            stop -= 1
        limit = p.seq[stop]
        near = (h_tkey == p.tkey[c]) & (h_seq > seq) & (
            ((h_sid == sid) & (h_seq <= limit))
            | ((h_ppid == p.pid[c]) & (h_start_seq > seq) & (h_start_seq <= limit)))
        want = p.raw_path_values[int(p.raw_path[c])]
        folder = os.path.dirname(want).rstrip("/") + "/"
        if folder != "/" and any(p.raw_path_values[int(p.raw_path[r])].startswith(folder) for r in hard[near].tolist()):
            # the miss, and the later misses of the same entry: the reads the fill was for
            # (`cat cache/x`, another outcome change, in a process of its own)
            later = np.flatnonzero(p.raw_path == p.raw_path[c])
            later = later[(np.asarray(p.tkey[later]) == p.tkey[c]) & (np.asarray(p.seq[later]) >= seq)]
            out.extend(later[p.errno[later] == p.errno[c]].tolist())
    return np.array(out, dtype=np.int64)


# Rows at most between a rotated file's close and its renaming aside (the backups shifted in
# between: an existence check, a removal and a rename for each), and between that rename and
# the file's creation again (see _rotations).
ROTATION_ROWS = 48
REOPEN_ROWS = 4


def _rotations(p: Prepared) -> np.ndarray:
    """Rows (indices) of a writer rotating its file: a successful rename of a path X to a longer
    name beginning with X (``app.log`` to ``app.log.1``; `PUBLISH_PROBES`), the same thread
    creating X again (an open with O_CREAT) within `REOPEN_ROWS` rows after it and having closed
    X within `ROTATION_ROWS` rows before it, every row in between on X or a name beginning with
    X (the backups shifted: existence checks, removals, renames). Those rows drop out when they
    succeed or miss (ENOENT: no such backup yet): a log rotating on size rotates 0, 1 or 2
    times as the run wrote less or more (Python's RotatingFileHandler, a logger's own size
    check). Any other error in the rotation stays (a directory where a backup goes: unlink
    EISDIR, and the rotation then has no rename to be found by)."""
    none = np.zeros(0, dtype=np.int64)
    publish = codes_where(p.probe_values, PUBLISH_PROBES)
    opens = codes_where(p.probe_values, CREATE_PROBES)
    closes = codes_where(p.probe_values, ("close",))
    if (not len(publish) or not len(opens) or not len(closes) or p.raw_path is None
            or not p.has_column("path2")):
        return none
    n_probes, n_args = len(p.probe_values), len(p.narg_values)
    cand = np.flatnonzero(code_in(p.probe, publish, n_probes))
    cand = cand[(p.errno[cand] < 0) & (p.raw_path[cand] >= 0)]
    if not len(cand):
        return none
    creating = codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    enoent = codes_where(p.errno_values, ("ENOENT",))
    # only renames followed closely by a successful create of their thread (vectorised: a trace
    # may hold thousands of renames -- git's objects, a build's outputs -- and few rotations)
    reopened = np.zeros(len(cand), dtype=bool)
    for d in range(1, REOPEN_ROWS + 1):
        a = np.minimum(cand + d, len(p) - 1)
        reopened |= ((cand + d < len(p)) & (p.sid[a] == p.sid[cand]) & code_in(p.probe[a], opens, n_probes)
                     & (p.errno[a] < 0) & code_in(p.narg[a], creating, n_args))
    cand = cand[reopened]
    out: list[np.ndarray] = []
    for r in cand.tolist():  # renames just before a create: few
        x = p.raw_path_values[int(p.raw_path[r])]
        aside = p.value("path2", r)
        if not aside or len(aside) <= len(x) or not aside.startswith(x):
            continue
        sid = p.sid[r]
        after = np.arange(r + 1, min(r + 1 + REOPEN_ROWS, len(p)))
        after = after[(p.sid[after] == sid) & code_in(p.probe[after], opens, n_probes) & (p.errno[after] < 0)
                      & code_in(p.narg[after], creating, n_args)]
        reopen = next((int(a) for a in after.tolist() if p.value("path", a) == x), -1)
        if reopen < 0:
            continue
        start = -1
        for b in range(r - 1, max(r - 1 - ROTATION_ROWS, -1), -1):
            if p.sid[b] != sid:
                break
            path = p.value("path", b)
            if not path or not path.startswith(x):
                break
            if path == x and code_in(p.probe[b : b + 1], closes, n_probes)[0]:
                start = b
                break
        if start < 0:
            continue
        span = np.arange(start, reopen + 1)
        keep = (p.errno[span] >= 0) & ~code_in(p.errno[span], enoent, len(p.errno_values))
        out.append(span[~keep])
    return unique_ints(np.concatenate(out)) if out else none


def _exit_time_stream_syncs(p: Prepared, noise_codes: np.ndarray) -> np.ndarray:
    """Rows (indices) of an exit-time sync of an input stream on a pipe: lseek failing ESPIPE
    as a thread's last call before it exits (its next call, noise probes passed over, is
    exit_group, or it has none). At exit, stdio gives back what an input stream read ahead
    but did not consume (POSIX: the descriptor's offset is set to the stream's position), an
    lseek back by that much; on a pipe it fails ESPIPE. A filter reading its first line with
    fgets and the rest with read(2) has unread data in the stream when the writer had already
    written more than the line when the first read came: timing (log_pipeline_timing_varies,
    under load). An ESPIPE before other work (a program needing a seekable input) stays; closes
    between it and the exit are the exit's."""
    none = np.zeros(0, dtype=np.int64)
    espipe = codes_where(p.errno_values, ("ESPIPE",))
    lseeks = codes_where(p.probe_values, ("lseek", "_llseek"))
    if not len(espipe) or not len(lseeks):
        return none
    n_probes = len(p.probe_values)
    cand = np.flatnonzero(code_in(p.errno, espipe, len(p.errno_values)))
    cand = cand[code_in(p.probe[cand], lseeks, n_probes)]
    if not len(cand):
        return none
    # the calls after it that count: noise passed over, and so are the standard streams' closes
    # that end a program (gnulib's close_stdin: fflush(stdin) -- the lseek --, close(0), then
    # close_stdout's close(1), close(2): cp, sort and friends, whose stdin make -j2 gives as a
    # broken pipe to all its jobs but the one it gives /dev/null to)
    closes = codes_where(p.probe_values, ("close",))
    passed = code_in(p.probe, noise_codes, n_probes) | (code_in(p.probe, closes, n_probes) & (p.errno < 0))
    counted = np.flatnonzero(~passed)
    del passed
    at = np.searchsorted(counted, cand, side="right")
    nxt = counted[np.minimum(at, len(counted) - 1)]
    last = (at >= len(counted)) | (p.sid[nxt] != p.sid[cand])  # nothing but noise after it in its thread
    exits = codes_where(p.probe_values, ("exit_group",))
    return cand[last | code_in(p.probe[nxt], exits, n_probes)]


def _existing_directories(p: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """Rows of an idempotent mkdir (`mkdir -p`, Python's makedirs(exist_ok=True)) that found
    its directory: mkdir failing EEXIST, then -- the next call of the thread -- a successful
    stat of that path checking it is a directory, where a good run's mkdir created it; (the
    mkdir rows, the stat rows). Whether
    the directory was left by an earlier run is the machine's state, not the program's
    behaviour (a file in its place still shows in what follows: the chdir into it fails)."""
    mkdirs = codes_where(p.probe_values, ("mkdir", "mkdirat"))
    stats = codes_where(p.probe_values, STAT_PROBES)
    eexist = codes_where(p.errno_values, ("EEXIST",))
    if not len(mkdirs) or not len(stats) or not len(eexist):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cand = np.flatnonzero(code_in(p.errno, eexist, len(p.errno_values)))
    cand = cand[isin(p.probe[cand], mkdirs) & (cand + 1 < len(p)) & (p.plainpath[cand] >= 0)]
    nxt = cand + 1
    checked = (isin(p.probe[nxt], stats) & (p.errno[nxt] < 0) & (p.sid[nxt] == p.sid[cand])
               & (p.plainpath[nxt] == p.plainpath[cand]))
    raced = ~checked & _made_earlier_in_run(p, cand, mkdirs)
    cand, nxt, checked = cand[checked | raced], nxt[checked | raced], checked[checked | raced]
    # only where a good run created the directory (where the good runs found it too, the
    # EEXIST is theirs as well: nothing to reinterpret)
    nb = _bad_row_count(p)
    made = _good_rows_where(code_in(p.probe[nb:], mkdirs, len(p.probe_values)) & (p.errno[nb:] < 0), nb)
    ok = isin(_call_keys(p, cand), _call_keys(p, made))
    return cand[ok], nxt[ok & checked]


def _made_earlier_in_run(p: Prepared, rows: np.ndarray, mkdirs: np.ndarray) -> np.ndarray:
    """For each mkdir row failing EEXIST (`rows`): whether its run made that directory before
    it -- a successful mkdir of the path, earlier in the trace, by any of its threads. Workers
    racing to make one directory (py_compile's os.makedirs under compileall -j, its
    FileExistsError caught, no check after it): which of them makes it is their timing, and
    the losers' EEXIST is the winner's directory. A directory in the path's place before the
    run started (an earlier run's, a file) has no such mkdir: it stays an error."""
    out = np.zeros(len(rows), dtype=bool)
    if not len(rows):
        return out
    path = p.plainpath[rows]
    made = np.flatnonzero(isin(p.plainpath, path) & (p.errno < 0))
    made = made[isin(p.probe[made], mkdirs)]
    if not len(made):
        return out
    tkey = np.asarray(p.tkey[made]).astype(np.int64)
    first: dict[tuple[int, int], int] = {}
    for t, q, seq in zip(tkey.tolist(), p.plainpath[made].tolist(), p.seq[made].tolist(), strict=True):
        if seq < first.get((t, q), seq + 1):
            first[(t, q)] = seq
    for i, (t, q, seq) in enumerate(zip(np.asarray(p.tkey[rows]).astype(np.int64).tolist(), path.tolist(),
                                         p.seq[rows].tolist(), strict=True)):
        out[i] = first.get((t, q), seq) < seq
    return out


def _environment_data(p: Prepared) -> np.ndarray:
    """Per row: a successful call on a data file of the run's locale or time zone
    (`ENVIRONMENT_DATA`), which drops out of the streams."""
    values = p.npath_values.arrow
    near = pc.fill_null(pc.or_(pc.starts_with(values, "/usr/"), pc.ends_with(values, "/etc/localtime")), False)
    if not pc.any(near).as_py():
        return np.zeros(len(p.probe), dtype=bool)
    codes = np.flatnonzero(numpy_of(near))
    found = codes[[ENVIRONMENT_DATA.search(v) is not None for v in pc.filter(values, near).to_pylist()]]
    if not len(found):
        return np.zeros(len(p.probe), dtype=bool)
    return code_in(p.plainpath, found, len(p.npath_values)) & (p.errno < 0)


def _extra_entries(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: every new event (`novel`) in it is a successful lookup (LOOKUP_PROBES) right
    after the same call on another name in its thread (or after such a new one) -- one more turn
    of a loop over a listing the good runs walked too: another session's mount in df's table, a
    file more in a scanned directory. A lookup that fails, a call that opens, reads or changes
    anything, or a first lookup of its kind in the thread is not one."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row, prow, ok = _with_previous(bs, pos)
    lookups = codes_where(p.probe_values, LOOKUP_PROBES)
    ok &= isin(p.probe[row], lookups) & (p.probe[prow] == p.probe[row])
    ok &= (p.errno[row] < 0) & (p.errno[prow] < 0) & (p.plainpath[row] >= 0) & (p.plainpath[row] != p.plainpath[prow])
    return _news_all(bs, regions, pos, ok)


def _descriptor_plumbing(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: it has new events (`novel`), each a successful call that plumbs descriptors
    (`PLUMBING_PROBES`: a pipe made, a descriptor duplicated onto another, one closed) -- make
    -j2's second job given a broken pipe for stdin (dup2 before its exec) when the first was
    still running, and none when it had finished."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row = bs.orig[pos]
    ok = row >= 0
    row = np.maximum(row, 0)
    ok &= code_in(p.probe[row], codes_where(p.probe_values, PLUMBING_PROBES), len(p.probe_values)) & (p.errno[row] < 0)
    return regions.max_over(novel) & _news_all(bs, regions, pos, ok)


def _attributes_retouched(p: Prepared, bs: align.Streams, regions: align.Regions, novel: np.ndarray) -> np.ndarray:
    """Per region: it has new events (`novel`), each a successful call setting the attributes
    of a path (`ATTRIBUTE_PROBES`) right after the thread's successful check of the same path
    (`STAT_PROBES`, or another such setting after it) -- rsync's generator stats each
    directory at the end and resets its time only when it differs: whether the receiver's last
    rename into it came after the generator's touch-up during the transfer is timing."""
    pos = np.flatnonzero(novel)
    if not len(pos) or not len(regions):
        return np.zeros(len(regions), dtype=bool)
    row, prow, ok = _with_previous(bs, pos)
    n_probes = len(p.probe_values)
    setters = codes_where(p.probe_values, ATTRIBUTE_PROBES)
    checks = codes_where(p.probe_values, STAT_PROBES | ATTRIBUTE_PROBES)
    ok &= code_in(p.probe[row], setters, n_probes) & code_in(p.probe[prow], checks, n_probes)
    ok &= (p.errno[row] < 0) & (p.errno[prow] < 0) & (p.plainpath[row] >= 0) & (p.plainpath[row] == p.plainpath[prow])
    return regions.max_over(novel) & _news_all(bs, regions, pos, ok)


def _catalog_lookups(p: Prepared, bs: align.Streams) -> np.ndarray:
    """Bad positions whose path is a gettext message catalog (`MESSAGE_CATALOG`)."""
    # Arrow finds the few candidate paths: the ~10^5 distinct paths are never made Python
    # strings (a list of them was the diff's peak memory, ~20 MiB, for a million events)
    near = np.flatnonzero(numpy_of(pc.fill_null(pc.match_substring(p.npath_values.arrow, "LC_MESSAGES/"), False)))
    codes = [i for i in near.tolist() if MESSAGE_CATALOG.search(p.npath_values[i])]
    rows = bs.orig
    if not codes:
        return np.zeros(len(bs), dtype=bool)
    plain = np.where(rows >= 0, p.plainpath[np.maximum(rows, 0)], -1)
    return isin(plain, codes) & (rows >= 0)


def _search_went_on(p: Prepared, bs: align.Streams, pos: int) -> bool:
    """Whether bad position `pos` is one more turn of a search: a successful lookup
    (LOOKUP_PROBES) right after the same call on another path in its thread (the next directory
    of a search path, where the good runs had found what they looked for)."""
    if pos < 1 or bs.sid[pos - 1] != bs.sid[pos]:
        return False
    row, prev = int(bs.orig[pos]), int(bs.orig[pos - 1])
    if row < 0 or prev < 0:
        return False
    return (p.probe_values[int(p.probe[row])] in LOOKUP_PROBES and p.probe[row] == p.probe[prev]
            and p.errno[row] < 0 and p.errno[prev] < 0 and p.plainpath[row] >= 0
            and p.plainpath[row] != p.plainpath[prev])


def _source_reread(p: Prepared, bs: align.Streams, pos: int, start: int) -> bool:
    """Whether bad position `pos` is an error-free open (CREATE_PROBES) of a path its stream
    (from bad position `start`, the stream's first) already opened without error: a file read
    again -- Python's traceback reopens the script and every module of its frames to quote
    their lines (linecache), after the interpreter read them to run them."""
    row = int(bs.orig[pos])
    if row < 0 or p.errno[row] >= 0 or p.plainpath[row] < 0:
        return False
    opens = codes_where(p.probe_values, CREATE_PROBES)
    if not isin(p.probe[row], opens):
        return False
    before = bs.orig[start:pos]
    before = before[before >= 0]
    return bool(np.any((p.plainpath[before] == p.plainpath[row]) & (p.errno[before] < 0)
                       & isin(p.probe[before], opens)))
