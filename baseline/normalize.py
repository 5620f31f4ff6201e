"""Drain-style masking of run-to-run noise in event traces.

Two runs of the same program differ in things that carry no meaning for "did it behave the
same": pids and tids, file descriptor numbers, addresses, timings, random temp names, and
the order in which a library walks its search path. This module turns raw events into
*templates* that compare equal across runs:

* paths: mktemp names ``tmp.Xa9Zq1b2c3`` and Python ``tempfile`` names ``tmpab12cd_x`` ->
  ``tmp<rand>``; addresses (``0x7f3a...``), runs of 16+ hex digits and every other digit run
  -> ``<n>`` (so ``/proc/1234/fd/7`` -> ``/proc/<n>/fd/<n>``).
* search-path probing: a failed lookup (ENOENT/ENOTDIR) immediately followed, in the same
  thread, by a lookup of the same file name in another directory is a search-path walk (ld.so,
  Python imports, $PATH lookups); its directory becomes ``<search>`` so the number and order of
  directories tried does not matter once runs of identical templates are collapsed.
* process identity: a thread is named by its *role* -- its position in the fork tree and the
  command it exec'd (``bash/python3/~python3``) -- never by pid/tid.

Everything is polars expressions over the whole frame (regexes run once per *distinct* path),
so a million-event trace normalises in tens of milliseconds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

# Rust-regex rewrite rules applied in order to paths; each (pattern, replacement). Few rules on
# purpose: each is one pass over every distinct path.
PATH_RULES: list[tuple[str, str]] = [
    (r"\btmp(?:\.[A-Za-z0-9]{6,}|[a-z0-9_]{8}\b)", "tmp<rand>"),  # mktemp(1), Python tempfile
    # addresses, long hex ids, then any digit run: pids (/proc/<n>/), fds (fd/<n>), counters
    (r"0[xX][0-9a-fA-F]+|[0-9a-fA-F]{16,}|\d+", "<n>"),
]
# Rules for short free-form strings (arguments, thread names): numbers and addresses only.
ARG_RULES: list[tuple[str, str]] = [
    (r"0[xX][0-9a-fA-F]+|\d+", "<n>"),
]

# A failed lookup with one of these errnos, followed by the same name elsewhere, is a
# search-path walk.
SEARCH_ERRNOS = ("ENOENT", "ENOTDIR")
SEARCH_DIR = "<search>"

# Columns the analysis needs from the events table.
ANALYSIS_COLUMNS = [
    "trace_id", "seq", "pid", "tid", "ppid", "comm", "probe", "depth", "errno", "path", "arg",
    "kind", "command", "start_time",
]


def _apply_rules(expr: pl.Expr, rules: list[tuple[str, str]]) -> pl.Expr:
    for pattern, replacement in rules:
        expr = expr.str.replace_all(pattern, replacement)
    return expr


def normalize_path_expr(col: str = "path") -> pl.Expr:
    """Expression masking noise in a path column (null stays null)."""
    return _apply_rules(pl.col(col), PATH_RULES)


def normalize_string(value: str | None, rules: list[tuple[str, str]] | None = None) -> str | None:
    """Normalise one string with the same rules (for commands, tests and display)."""
    if value is None:
        return None
    out = pl.select(_apply_rules(pl.lit(value, dtype=pl.String), rules or PATH_RULES)).item()
    return out


def _mapped(df: pl.DataFrame, col: str, rules: list[tuple[str, str]], out: str) -> pl.DataFrame:
    """Add `out` = rules applied to `col`, computed once per distinct value and joined back."""
    uniq = df.select(pl.col(col).unique()).drop_nulls()
    uniq = uniq.with_columns(_apply_rules(pl.col(col), rules).alias(out))
    return df.join(uniq, on=col, how="left", nulls_equal=False)


def normalize_events(df: pl.DataFrame, stream_keys: tuple[str, ...] = ("trace_id", "tid")) -> pl.DataFrame:
    """Add normalised columns to an events frame and sort it into per-thread streams.

    The frame-level twin of `prepare` (same rules), for small frames and inspection: adds
    ``npath`` (masked path, search-path walks as ``<search>/name``), ``narg`` and ``ncomm``;
    the result is sorted by `stream_keys` then ``seq``.
    """
    df = df.sort([*stream_keys, "seq"])
    df = _mapped(df, "path", PATH_RULES, "npath")
    df = _mapped(df, "arg", PATH_RULES, "narg")
    df = _mapped(df, "comm", ARG_RULES, "ncomm")

    same_stream = pl.lit(True)
    for key in stream_keys:
        same_stream = same_stream & (pl.col(key).shift(-1) == pl.col(key))
    base = pl.col("npath").str.extract(r"([^/]+)/*$", 1)
    dirname = pl.col("npath").str.extract(r"^(.*)/[^/]+/*$", 1)
    searching = (
        pl.col("errno").is_in(SEARCH_ERRNOS)
        & same_stream.fill_null(False)
        & (base.shift(-1) == base).fill_null(False)
        & (dirname.shift(-1) != dirname).fill_null(False)
    )
    return df.with_columns(
        pl.when(searching).then(pl.lit(SEARCH_DIR + "/") + base).otherwise(pl.col("npath")).alias("npath")
    )


# ------------------------------------------------------------------------------------------
# the fast path: integer codes over Arrow dictionaries
# ------------------------------------------------------------------------------------------
DICT_COLUMNS = ["trace_id", "comm", "probe", "errno", "path", "arg", "kind", "command"]
SEARCH_KEY_OFFSET = 1 << 40  # path keys >= this are <search>/<basename #(key - offset)>


class Values:
    """Distinct values of a column (an Arrow string array), indexed by code."""

    def __init__(self, arrow: pa.Array):
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: int) -> str | None:
        return self.arrow[int(i)].as_py()

    def __iter__(self):
        return iter(self.arrow.to_pylist())

    def series(self) -> pl.Series:
        return pl.Series("v", self.arrow) if len(self.arrow) else pl.Series("v", [], dtype=pl.String)


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, Values]:
    """(int32 codes with -1 for null, distinct values) of a string or dictionary column."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    idx = pc.fill_null(col.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return idx, Values(col.dictionary)


def _factorize(arr: pa.Array | pl.Series) -> tuple[np.ndarray, Values]:
    """Codes of each element of `arr` into its distinct values (Arrow hash encoding)."""
    if isinstance(arr, pl.Series):
        arr = arr.to_arrow()
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int32), Values(pa.array([], type=pa.string()))
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int32), Values(enc.dictionary)


def _normalise_values(values: Values, rules: list[tuple[str, str]]) -> pl.Series:
    """`rules` applied to every distinct value (one regex pass per rule, in Rust)."""
    return values.series().to_frame().select(_apply_rules(pl.col("v"), rules)).to_series()


def _remap(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[codes] keeping -1 for null."""
    if len(table) == 0:
        return np.full(len(codes), -1, dtype=np.int32)
    return np.where(codes >= 0, table[np.maximum(codes, 0)], -1).astype(np.int32)


_NULL_HASH = np.uint64(0x6A09E667F3BCC909)


def _mix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def hash_strings(values: Values | pl.Series) -> np.ndarray:
    """Stable-within-process 64-bit hashes of strings (null -> a fixed value)."""
    series = values.series() if isinstance(values, Values) else values
    if len(series) == 0:
        return np.zeros(0, dtype=np.uint64)
    h = series.hash(seed=0x7B).to_numpy().astype(np.uint64)
    h[series.is_null().to_numpy()] = _NULL_HASH
    return h


def _take_hash(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    if len(table) == 0:
        return np.full(len(codes), _NULL_HASH, dtype=np.uint64)
    return np.where(codes >= 0, table[np.maximum(codes, 0)], _NULL_HASH)


@dataclass
class Prepared:
    """Events as integer arrays in stream order (per trace, per thread, by seq).

    Row ``i`` of every array is source row ``order[i]`` of the Arrow table. String columns are
    codes into the ``*_values`` lists (-1 = null). ``pathkey`` is the normalised path with
    search-path walks masked (see `path_string`); ``sid`` numbers the per-thread streams.
    """

    table: pa.Table
    order: np.ndarray
    tkey: np.ndarray
    tid: np.ndarray
    pid: np.ndarray
    ppid: np.ndarray
    seq: np.ndarray
    depth: np.ndarray
    probe: np.ndarray
    errno: np.ndarray
    pathkey: np.ndarray
    plainpath: np.ndarray
    narg: np.ndarray
    ncomm: np.ndarray
    sid: np.ndarray
    probe_values: Values
    errno_values: Values
    npath_values: Values
    base_values: Values
    narg_values: Values
    ncomm_values: Values

    def __len__(self) -> int:
        return len(self.order)

    def path_string(self, key: int) -> str | None:
        if key < 0:
            return None
        if key >= SEARCH_KEY_OFFSET:
            return f"{SEARCH_DIR}/{self.base_values[key - SEARCH_KEY_OFFSET]}"
        return self.npath_values[key]

    def token_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (uint64 token, uint64 call key = probe + path without errno). Hashes of
        *strings*, so tokens agree
        between separately prepared tables (good vs bad) without a shared dictionary."""
        probe_h = _take_hash(self.probe, hash_strings(self.probe_values))
        errno_h = _take_hash(self.errno, hash_strings(self.errno_values))
        arg_h = _take_hash(self.narg, hash_strings(self.narg_values))
        npath_h = hash_strings(self.npath_values)
        search_h = hash_strings(SEARCH_DIR + "/" + self.base_values.series())
        path_h = np.full(len(self), _NULL_HASH, dtype=np.uint64)
        plain = (self.pathkey >= 0) & (self.pathkey < SEARCH_KEY_OFFSET)
        path_h[plain] = npath_h[self.pathkey[plain]]
        srch = self.pathkey >= SEARCH_KEY_OFFSET
        path_h[srch] = search_h[self.pathkey[srch] - SEARCH_KEY_OFFSET]
        tok = probe_h
        for part in (errno_h, path_h, arg_h, self.depth.astype(np.uint64)):
            tok = _mix64(tok * np.uint64(0x100000001B3) ^ part)
        call = _mix64(probe_h * np.uint64(0x100000001B3) ^ path_h)
        return tok, call

    def value(self, column: str, i: int):
        """The recorded (raw) value of `column` at stream-ordered row i."""
        return self.table.column(column)[int(self.order[i])].as_py()


def prepare(table: pa.Table, tkey: np.ndarray) -> Prepared:
    """Normalise an events table (as from tracer.schema.read_arrow) into a `Prepared`.

    `tkey` gives each source row its trace number (the caller decides: e.g. -1 for the bad
    trace, 0.. for good traces). Regexes run once per distinct path/arg/comm; the search-path
    rule and everything per row are numpy.
    """
    n = table.num_rows
    tid = pc.fill_null(table.column("tid"), pc.fill_null(table.column("pid"), 0)).to_numpy().astype(np.int64)
    seq = table.column("seq").to_numpy().astype(np.int64)
    tkey = np.asarray(tkey, dtype=np.int64)
    # Stream order: stable sort by (trace, thread); rows already in seq order per trace (the
    # normal case) need no seq key, otherwise a full lexsort.
    stream_of = pc.dictionary_encode(pa.array(tkey * (1 << 32) + tid)).indices.to_numpy().astype(np.int64)
    same_trace = tkey[1:] == tkey[:-1]
    if np.all(seq[1:][same_trace] > seq[:-1][same_trace]):
        order = np.argsort(stream_of.astype(np.uint16) if stream_of.max(initial=0) < 65536 else stream_of, kind="stable")
    else:
        order = np.lexsort((seq, stream_of))
    sid_raw = stream_of[order]
    sid = np.cumsum(np.r_[0, sid_raw[1:] != sid_raw[:-1]], dtype=np.int64) if n else sid_raw
    del stream_of, sid_raw

    probe, probe_values = _codes(table.column("probe"))
    errno, errno_values = _codes(table.column("errno"))
    path, path_values = _codes(table.column("path"))
    arg, arg_values = _codes(table.column("arg"))
    comm, comm_values = _codes(table.column("comm"))

    npath_of_path, npath_values = _factorize(_normalise_values(path_values, PATH_RULES))
    narg_of_arg, narg_values = _factorize(_normalise_values(arg_values, PATH_RULES))
    ncomm_of_comm, ncomm_values = _factorize(_normalise_values(comm_values, ARG_RULES))
    probe, errno = probe[order], errno[order]
    npath = _remap(path[order], npath_of_path)
    pathkey = npath.astype(np.int64)
    base_index: dict[str, int] = {}
    search_errnos = np.array([i for i, v in enumerate(errno_values) if v in SEARCH_ERRNOS], dtype=np.int64)
    if n > 1 and len(search_errnos):
        # Failed lookups followed in the same thread by a lookup of another path: only these
        # few rows need their paths split into directory and name.
        cand = np.flatnonzero(
            np.isin(errno[:-1], search_errnos) & (sid[1:] == sid[:-1]) & (npath[:-1] >= 0) & (npath[1:] >= 0)
            & (npath[1:] != npath[:-1])
        )
        split: dict[int, tuple[str, str]] = {}
        for code in np.unique(np.r_[npath[cand], npath[cand + 1]]).tolist():
            split[code] = os.path.split(npath_values[code].rstrip("/"))
        for i in cand.tolist():
            (d0, b0), (d1, b1) = split[int(npath[i])], split[int(npath[i + 1])]
            if b0 and b0 == b1 and d0 != d1:
                pathkey[i] = SEARCH_KEY_OFFSET + base_index.setdefault(b0, len(base_index))
    base_values = Values(pa.array(list(base_index), type=pa.string()))

    def ints(name: str, fill: int = -1) -> np.ndarray:
        return pc.fill_null(table.column(name), fill).to_numpy().astype(np.int32)[order]

    return Prepared(
        table=table, order=order, tkey=tkey[order], tid=tid[order].astype(np.int32), pid=ints("pid"),
        ppid=ints("ppid"),
        seq=seq[order], depth=ints("depth", 0), probe=probe, errno=errno, pathkey=pathkey, plainpath=npath,
        narg=_remap(arg[order], narg_of_arg), ncomm=_remap(comm[order], ncomm_of_comm), sid=sid,
        probe_values=probe_values, errno_values=errno_values, npath_values=npath_values,
        base_values=base_values, narg_values=narg_values, ncomm_values=ncomm_values,
    )


def stream_summary(p: Prepared) -> pl.DataFrame:
    """One row per stream: tkey, tid, pid, ppid, ncomm (last name carried), first seq."""
    if len(p) == 0:
        return pl.DataFrame(schema={"sid": pl.Int64, "tkey": pl.Int64, "tid": pl.Int64, "pid": pl.Int64,
                                    "ppid": pl.Int64, "ncomm": pl.String, "first_seq": pl.Int64})
    first = np.flatnonzero(np.r_[True, p.sid[1:] != p.sid[:-1]])
    last = np.r_[first[1:], len(p)] - 1
    ncomm = [p.ncomm_values[c] if c >= 0 else None for c in p.ncomm[last]]
    return pl.DataFrame(
        {
            "sid": p.sid[first], "tkey": p.tkey[first], "tid": p.tid[first],
            "pid": np.where(p.pid[first] >= 0, p.pid[first], p.tid[first]),
            "ppid": p.ppid[first], "ncomm": ncomm, "first_seq": p.seq[first],
        }
    ).with_columns(pl.when(pl.col("ppid") >= 0).then(pl.col("ppid")).alias("ppid"))


def _fork_key(pid: int, comm: dict[int, str], parent: dict[int, int | None], cache: dict[int, str]) -> str:
    """Path of process names from the trace's root process down to `pid` (cycle-safe)."""
    chain, seen = [], set()
    cur: int | None = pid
    while cur is not None and cur in comm and cur not in seen and cur not in cache:
        seen.add(cur)
        chain.append(cur)
        cur = parent.get(cur)
    prefix = cache.get(cur, "") if cur is not None else ""
    for p in reversed(chain):
        prefix = f"{prefix}/{comm[p]}" if prefix else comm[p]
        cache[p] = prefix
    return cache[pid]


def process_roles(df: pl.DataFrame, trace_key: str = "trace_id") -> pl.DataFrame:
    """One row per (trace, tid): ``role_key`` (fork-tree path of exec'd names) and ``role``.

    A process's name is the last (post-exec) name its threads carried; its parent is its
    ``ppid`` when that process is in the trace. Threads other than the group leader get
    ``~name`` under their process. ``role`` adds ``#i``, the rank among siblings with the same
    key by first appearance, for display; matching uses ``role_key`` only, so siblings started
    in a different order still match.
    """
    if "first_seq" in df.columns:  # already one row per thread (stream_summary)
        per_tid = df.sort([trace_key, "first_seq"])
    else:
        per_tid = (
            df.group_by([trace_key, "tid"], maintain_order=True)
            .agg(
                pl.col("pid").drop_nulls().first(),
                pl.col("ppid").drop_nulls().first(),
                pl.col("ncomm").drop_nulls().last(),
                pl.col("seq").min().alias("first_seq"),
            )
            .sort([trace_key, "first_seq"])
        )
    out_trace, out_tid, out_key, out_role = [], [], [], []
    for (trace,), group in per_tid.group_by([trace_key], maintain_order=True):
        rows = group.to_dicts()
        comm_of_pid: dict[int, str] = {}
        parent_of_pid: dict[int, int | None] = {}
        first_of_pid: dict[int, int] = {}
        for r in rows:
            pid = r["pid"] if r["pid"] is not None else r["tid"]
            if r["tid"] == pid or pid not in comm_of_pid:
                comm_of_pid[pid] = r["ncomm"] or "?"
            parent_of_pid.setdefault(pid, r["ppid"])
            first_of_pid[pid] = min(first_of_pid.get(pid, r["first_seq"]), r["first_seq"])
        key_of_pid: dict[int, str] = {}
        ordinal: dict[str, int] = {}
        for r in rows:
            pid = r["pid"] if r["pid"] is not None else r["tid"]
            k = _fork_key(pid, comm_of_pid, parent_of_pid, key_of_pid)
            if r["tid"] != pid:
                k = f"{k}/~{r['ncomm'] or '?'}"
            n = ordinal.get(k, 0)
            ordinal[k] = n + 1
            out_trace.append(trace)
            out_tid.append(r["tid"])
            out_key.append(k)
            out_role.append(f"{k}#{n}")
    return pl.DataFrame(
        {trace_key: out_trace, "tid": out_tid, "role_key": out_key, "role": out_role},
        schema={trace_key: df.schema[trace_key], "tid": df.schema["tid"], "role_key": pl.String, "role": pl.String},
    )
