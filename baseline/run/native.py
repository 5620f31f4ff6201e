"""The differ's compiled hot loops (`_hotloops.c`), when built: one pass over the arrays each.

Each function returns None when the library is not there (no C compiler at install time, or
``TRACEBASE_NATIVE=0`` in the environment): the caller then runs its numpy version, which gives
the same numbers (tests/test_native.py runs both). Built by ``python -m baseline.run.native``
(scripts/setup.sh) and by the wheel's build hook (hatch_build.py).
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pyarrow as pa

from baseline.run._build_native import HERE, build, library_name

__all__ = ["available", "build", "compress_loops", "contains_literal", "number_runs", "random_prefilter", "factorize_strings", "first_appearance", "gather_codes", "pack_fields", "read_dictionary_chunk", "read_int_dictionary_chunk", "seen_in", "set_lookup", "window_set", "stable_order", "take", "take_through", "window_hashes"]

_UNSET = object()
_lib: ctypes.CDLL | None | object = _UNSET
_P = ctypes.c_void_p
_I = ctypes.c_int64
_W = ctypes.c_int


def _load() -> ctypes.CDLL | None:
    global _lib
    if _lib is _UNSET:
        _lib = None
        path = HERE / library_name()
        if os.environ.get("TRACEBASE_NATIVE", "1") != "0" and path.exists():
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:  # another architecture's or a damaged build: the numpy versions
                lib = None
            if lib is not None:
                lib.window_hashes.argtypes = [_P, _P, _W, _I, _P, _I, ctypes.c_uint64, _P]
                lib.seen_in.argtypes = [_P, _I, _P, _I, _P, _I, _P]
                lib.window_set.argtypes = [_P, _P, _W, _I, _P, _I, ctypes.c_uint64, _P, _I]
                lib.window_set.restype = _W
                lib.set_lookup.argtypes = [_P, _I, _W, _P, _I, _P]
                lib.stable_order.argtypes = [_P, _W, _I, _P, _P, _W]
                lib.first_appearance.argtypes = [_P, _W, _P, _W, _I, _I, _I, _I, _P, _P, _P]
                lib.first_appearance.restype = _I
                lib.compress_pass.argtypes = [_P, _P, _W, _P, _W, _I, _I, _P]
                lib.compress_pass.restype = _I
                lib.number_runs.argtypes = [_P, _P, _I, ctypes.c_char_p, _I, _W, _P, _P]
                lib.number_runs.restype = _I
                lib.random_prefilter.argtypes = [_P, _P, _I, _P]
                lib.random_prefilter.restype = None
                lib.contains_literal.argtypes = [_P, _P, _I, ctypes.c_char_p, _I, _P]
                lib.contains_literal.restype = None
                lib.pack_fields.argtypes = [_W, _P, _P, _P, _P, _P, _I, _P]
                lib.pack_fields.restype = None
                lib.gather_codes.argtypes = [_W, _P, _P, _P, _P, _P, _P, _P, _P, _W, _I, _P, _W]
                lib.gather_codes.restype = _I
                lib.take.argtypes = [_P, _W, _I, _P, _W, _I, _P]
                lib.take.restype = _I
                lib.take2.argtypes = [_P, _I, _P, _W, _I, _P, _W, _I, _P]
                lib.take2.restype = _I
                lib.factorize_strings.argtypes = [_P, _P, _I, _P, _I, _P, _P]
                lib.factorize_strings.restype = _I
                lib.parquet_dictionary_info.argtypes = [_P, _I, _P]
                lib.parquet_dictionary_info.restype = _I
                lib.parquet_dictionary_chunk.argtypes = [_P, _I, _W, _P, _P, _W, _I, _I, _P, _P, _I, _P, _P]
                lib.parquet_dictionary_chunk.restype = _I
                lib.parquet_int_dictionary_chunk.argtypes = [_P, _I, _W, _P, _P, _W, _I, _I, _P, _P, _P, _P, _W]
                lib.parquet_int_dictionary_chunk.restype = _I
                for f in (lib.window_hashes, lib.seen_in, lib.set_lookup, lib.stable_order):
                    f.restype = None
                _lib = lib
    return _lib  # type: ignore[return-value]


def available() -> bool:
    """Whether the compiled loops are used in this process."""
    return _load() is not None


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _ids(a: np.ndarray) -> np.ndarray:
    """`a` as contiguous signed integers of 2, 4 or 8 bytes (the widths the C side reads)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind != "i" or a.dtype.itemsize not in (2, 4, 8):
        a = a.astype(np.int64)
    return a


def window_hashes(tok: np.ndarray, sid: np.ndarray, role_hash: np.ndarray, k: int, pad: np.uint64) -> np.ndarray | None:
    """align.window_hashes in one pass, or None without the library."""
    lib = _load()
    if lib is None:
        return None
    tok = np.ascontiguousarray(tok, dtype=np.uint64)
    sid = _ids(sid)
    role_hash = np.ascontiguousarray(role_hash, dtype=np.uint64)
    n = len(tok)
    if n and (int(sid.min()) < 0 or int(sid.max()) >= len(role_hash)):
        return None  # (numpy raises its IndexError for this)
    out = np.empty(n, dtype=np.uint64)
    lib.window_hashes(_ptr(tok), _ptr(sid), sid.dtype.itemsize, n, _ptr(role_hash), int(k), int(pad), _ptr(out))
    return out


def seen_in(values: np.ndarray, model: np.ndarray) -> np.ndarray | None:
    """align.seen_in with a hash set of the model, or None without the library. The set's
    table is the model's size rounded up to a power of two with at least a fifth free
    (8 bytes a slot: at most ~2.5x the model, against the sorted copy and the sort keys of
    the numpy version)."""
    lib = _load()
    if lib is None:
        return None
    values = np.ascontiguousarray(values, dtype=np.uint64)
    model = np.ascontiguousarray(model, dtype=np.uint64)
    size = _set_size(len(model))
    table = np.zeros(size, dtype=np.uint64)
    out = np.empty(len(values), dtype=bool)
    lib.seen_in(_ptr(values), len(values), _ptr(model), len(model), _ptr(table), size, _ptr(out))
    return out


def _set_size(n: int) -> int:
    """Slots of the hash set of `n` values: a power of two with at least a fifth free."""
    return 1 << max(int(n + n // 4).bit_length(), 4)


class WindowSet:
    """The compiled hash set of a model's window hashes (`window_set`), for `set_lookup`."""

    def __init__(self, table: np.ndarray, has_zero: bool):
        self.table, self.has_zero = table, has_zero


def window_set(tok: np.ndarray, sid: np.ndarray, role_hash: np.ndarray, k: int, pad: np.uint64) -> WindowSet | None:
    """The set of the window hashes of the streams (tok, sid), put in as they are made (no
    array of them), or None without the library."""
    lib = _load()
    if lib is None:
        return None
    tok = np.ascontiguousarray(tok, dtype=np.uint64)
    sid = _ids(sid)
    role_hash = np.ascontiguousarray(role_hash, dtype=np.uint64)
    m = len(tok)
    if m and (int(sid.min()) < 0 or int(sid.max()) >= len(role_hash)):
        return None
    size = _set_size(m)
    table = np.zeros(size, dtype=np.uint64)
    has_zero = lib.window_set(_ptr(tok), _ptr(sid), sid.dtype.itemsize, m, _ptr(role_hash), int(k), int(pad),
                              _ptr(table), size)
    return WindowSet(table, bool(has_zero))


def set_lookup(values: np.ndarray, windows: WindowSet) -> np.ndarray:
    """Which `values` are in the set `window_set` made."""
    lib = _load()
    values = np.ascontiguousarray(values, dtype=np.uint64)
    out = np.empty(len(values), dtype=bool)
    lib.set_lookup(_ptr(windows.table), len(windows.table), int(windows.has_zero), _ptr(values), len(values),
                   _ptr(out))
    return out


def stable_order(codes: np.ndarray, starts: np.ndarray, out_dtype: type) -> np.ndarray | None:
    """normalize._stable_order (a counting sort; `starts`: each code's first slot), or None."""
    lib = _load()
    if lib is None:
        return None
    codes = _ids(codes)
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(starts)):
        return None  # not dense codes 0..len(starts)-1: the numpy version says so
    nxt = np.array(starts, dtype=np.int64)  # a copy: advanced in place
    out = np.empty(len(codes), dtype=out_dtype)
    lib.stable_order(_ptr(codes), codes.dtype.itemsize, len(codes), _ptr(nxt), _ptr(out), out.dtype.itemsize)
    return out


def first_appearance(tkey: np.ndarray, tid: np.ndarray, t_lo: int, tid_lo: int, tid_span: int,
                     span: int) -> tuple[np.ndarray, np.ndarray] | None:
    """normalize._first_appearance_codes through its direct-address table (`span` slots; the
    caller checked every key falls in it): int32 codes and the rows of each code (np.bincount
    of them, counted in the same pass); or None without the library."""
    lib = _load()
    if lib is None or len(tid) >= 2**31:
        return None
    tkey, tid = _ids(tkey), _ids(tid)
    table = np.full(span, -1, dtype=np.int32)
    out = np.empty(len(tid), dtype=np.int32)
    counts = np.empty(min(span, len(tid)), dtype=np.int64)  # (only the codes' slots are written)
    n_codes = lib.first_appearance(_ptr(tkey), tkey.dtype.itemsize, _ptr(tid), tid.dtype.itemsize, len(tid), t_lo,
                                   tid_lo, tid_span, _ptr(table), _ptr(out), _ptr(counts))
    return out, counts[:n_codes].copy()


def compress_loops(tok: np.ndarray, sid: np.ndarray, orig: np.ndarray, periods: list[int],
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """align.compress_loops's passes (one per period in `periods`) in place: the arrays'
    fronts hold the kept positions, returned as views of them. None without the library or
    for arrays it cannot write in place (the caller then runs the numpy passes)."""
    lib = _load()
    arrays = (tok, sid, orig)
    if lib is None or not all(a.flags.c_contiguous and a.flags.writeable for a in arrays) or (
            tok.dtype != np.uint64 or any(a.dtype.kind != "i" or a.dtype.itemsize not in (2, 4, 8) for a in (sid, orig))):
        return None
    n = len(tok)
    drop = np.empty(n, dtype=np.uint8)
    for p in periods:
        n = lib.compress_pass(_ptr(tok), _ptr(sid), sid.dtype.itemsize, _ptr(orig), orig.dtype.itemsize, n, p,
                              _ptr(drop))
    return tok[:n], sid[:n], orig[:n]


# number_runs' flags: which alternatives beside [0-9]+ (see _hotloops.c)
HEX_ADDRESSES = 1  # 0[xX][0-9a-fA-F]+
LONG_HEX = 2  # [0-9a-fA-F]{16,}


def _strings(data: object, offsets: np.ndarray) -> tuple[int, np.ndarray, int] | None:
    """A string array's buffers as the string passes take them: (the data buffer's address, the
    n + 1 int32 offsets, n), or None for no offsets."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int32)
    if len(offsets) < 1:
        return None
    return (data.address if data is not None else 0), offsets, len(offsets) - 1  # type: ignore[attr-defined]


def number_runs(data: object, offsets: np.ndarray, replacement: bytes, flags: int = 0
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """RE2's replace of ``[0-9]+`` (with `flags`, also ``0[xX][0-9a-fA-F]+`` and/or
    ``[0-9a-fA-F]{16,}`` before it) by `replacement` on a string array's buffers: `data` the
    data buffer (anything with an ``address``, e.g. a pyarrow.Buffer; None for no bytes),
    `offsets` its n + 1 int32 offsets into it. Returns (new int32 offsets, new bytes), or None
    without the library or when the output might not fit int32 offsets (the caller then runs
    numpy or RE2)."""
    lib, strings = _load(), _strings(data, offsets)
    if lib is None or strings is None:
        return None
    base, offsets, n = strings
    # room for the worst case (every byte a number of its own); pages never written are never
    # touched, so only the output's real size is resident
    room = int(offsets[-1] - offsets[0]) * max(len(replacement), 1) if n else 0
    if room >= 2**31:
        return None
    out = np.empty(room, dtype=np.uint8)
    new_offsets = np.empty(n + 1, dtype=np.int32)
    size = lib.number_runs(base, _ptr(offsets), n, replacement, len(replacement), flags, _ptr(out),
                           _ptr(new_offsets))
    return new_offsets, out[:size]


def contains_literal(data: object, offsets: np.ndarray, literal: bytes) -> np.ndarray | None:
    """Arrow's match_substring(literal) of each string of a string array's buffers (as
    `number_runs` takes them): a bool per string, or None without the library."""
    lib, strings = _load(), _strings(data, offsets)
    if lib is None or strings is None:
        return None
    base, offsets, n = strings
    hit = np.empty(n, dtype=np.uint8)
    lib.contains_literal(base, _ptr(offsets), n, literal, len(literal), _ptr(hit))
    return hit.view(bool)


def random_prefilter(data: object, offsets: np.ndarray) -> np.ndarray | None:
    """normalize.mask_random_tokens' prefilter (RE2's match of `_RANDOM_PREFILTER`) of each
    string of a string array's buffers (as `number_runs` takes them): a bool per string, or
    None without the library."""
    lib, strings = _load(), _strings(data, offsets)
    if lib is None or strings is None:
        return None
    base, offsets, n = strings
    hit = np.empty(n, dtype=np.uint8)
    lib.random_prefilter(base, _ptr(offsets), n, _ptr(hit))
    return hit.view(bool)


def pack_fields(values: list[np.ndarray], radix: list[int], offset: list[int], n: int) -> np.ndarray | None:
    """normalize._pack's exact branch (the product of the radices below 2**63) in one pass, or
    None without the library or for a field that is not a 1-D signed integer array of 2, 4 or
    8 bytes, contiguous or one value broadcast (the caller then runs the numpy passes)."""
    lib = _load()
    if lib is None or not values:
        return None
    arrays, steps = [], []
    for v in values:
        if not isinstance(v, np.ndarray) or v.ndim != 1 or len(v) != n or v.dtype.kind != "i" or v.dtype.itemsize not in (2, 4, 8):
            return None
        if n > 1 and v.strides[0] == 0:
            steps.append(0)
        elif v.flags.c_contiguous:
            steps.append(1)
        else:
            return None
        arrays.append(v)
    k = len(arrays)
    ptrs = (ctypes.c_void_p * k)(*(_ptr(a) for a in arrays))
    widths = (ctypes.c_int * k)(*(a.dtype.itemsize for a in arrays))
    step = (ctypes.c_int * k)(*steps)
    radices = np.array(radix, dtype=np.uint64)
    offsets = np.array([o % (1 << 64) for o in offset], dtype=np.uint64)
    out = np.empty(n, dtype=np.uint64)
    lib.pack_fields(k, ptrs, widths, step, _ptr(radices), _ptr(offsets), n, _ptr(out))
    return out


def gather_codes(chunks: list[tuple[np.ndarray, object, int, np.ndarray]], order: np.ndarray,
                 out_dtype: type) -> np.ndarray | None:
    """normalize._coded_column's row pass and the gather into stream order in one pass:
    ``out[i]`` = the code of source row ``order[i]``. `chunks`: per Arrow chunk, in row order,
    (its dictionary indices as a numpy view of 2, 4 or 8-byte signed integers, its validity
    buffer (anything with an ``address``) or None, that buffer's bit offset, its int32 code
    table with -1 appended). None without the library or for other index widths (the caller
    then gathers with numpy)."""
    lib = _load()
    if lib is None or np.dtype(out_dtype) not in (np.dtype(np.int16), np.dtype(np.int32)):
        return None
    chunks = [c for c in chunks if len(c[0])]
    if any(i.dtype.kind != "i" or i.dtype.itemsize not in (2, 4, 8) or not i.flags.c_contiguous
           or t.dtype != np.int32 or not len(t) or not t.flags.c_contiguous for i, _, _, t in chunks):
        return None
    order = _ids(order)
    out = np.empty(len(order), dtype=out_dtype)
    if not len(order):
        return out
    k = len(chunks)
    bounds = np.zeros(k + 1, dtype=np.int64)
    np.cumsum([len(c[0]) for c in chunks], out=bounds[1:])
    idx = (ctypes.c_void_p * k)(*(_ptr(i) for i, _, _, _ in chunks))
    width = (ctypes.c_int * k)(*(i.dtype.itemsize for i, _, _, _ in chunks))
    valid = (ctypes.c_void_p * k)(*(v.address if v is not None else None for _, v, _, _ in chunks))  # type: ignore[attr-defined]
    valid_off = np.array([o for _, _, o, _ in chunks], dtype=np.int64)
    tables = (ctypes.c_void_p * k)(*(_ptr(t) for _, _, _, t in chunks))
    table_len = np.array([len(t) for _, _, _, t in chunks], dtype=np.int64)
    if lib.gather_codes(k, idx, width, valid, _ptr(valid_off), _ptr(bounds), tables, _ptr(table_len), _ptr(order),
                        order.dtype.itemsize, len(order), _ptr(out), out.dtype.itemsize) >= 0:
        return None  # not rows of these chunks (checked in the pass): the numpy gather says so
    return out


# Below this many indices numpy's gather is as quick as the call through ctypes.
TAKE_MIN = 1 << 12


def search_sorted(a: np.ndarray, v: object, side: str = "left") -> np.ndarray | np.integer:
    """`np.searchsorted(a, v, side)` without converting `a`: numpy casts both to a common type
    first, so a narrow sorted array (the differ's int16/int32 stream ids and kept rows)
    searched for int64 values was copied whole on every call (~1 ms per 2M elements, tens of
    calls a diff). Integer values that fit `a`'s type are cast instead (the same positions);
    anything else is numpy's own."""
    if isinstance(a, np.ndarray) and a.dtype.kind in "iu":
        w = np.asarray(v)
        if w.dtype != a.dtype and w.dtype.kind in "iu" and w.size:
            info = np.iinfo(a.dtype)
            if info.min <= int(w.min()) and int(w.max()) <= info.max:
                return np.searchsorted(a, w.astype(a.dtype), side)  # type: ignore[call-overload]
    return np.searchsorted(a, v, side)  # type: ignore[call-overload]


def _index_array(a: object) -> bool:
    return isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype.kind == "i" and a.dtype.itemsize in (2, 4, 8)


def take(src: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """``src[idx]`` for a 1-D contiguous array of 1, 2, 4 or 8-byte elements and 1-D signed
    integer indices of 2, 4 or 8 bytes (negative ones count from the end), in one compiled
    pass; None without the library, for other arrays, for fewer than `TAKE_MIN` indices or
    for an index out of range (the caller then indexes with numpy, which raises for that)."""
    if not (isinstance(src, np.ndarray) and src.ndim == 1 and src.flags.c_contiguous
            and src.dtype.itemsize in (1, 2, 4, 8) and not src.dtype.hasobject
            and _index_array(idx) and len(idx) >= TAKE_MIN):
        return None
    lib = _load()
    if lib is None:
        return None
    idx = np.ascontiguousarray(idx)
    out = np.empty(len(idx), dtype=src.dtype)
    if lib.take(_ptr(src), src.dtype.itemsize, len(src), _ptr(idx), idx.dtype.itemsize, len(idx), _ptr(out)) >= 0:
        return None
    return out


def take_through(table: np.ndarray, codes: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
    """``table[codes[rows]]`` in one compiled pass (no array of the rows' codes): `table`
    int32, `codes` int16 or int32, `rows` signed integers of 2, 4 or 8 bytes (negative ones
    count from the end, in both gathers); None as for `take`."""
    if not (isinstance(table, np.ndarray) and table.ndim == 1 and table.dtype == np.int32 and table.flags.c_contiguous
            and _index_array(codes) and codes.dtype.itemsize in (2, 4) and codes.flags.c_contiguous
            and _index_array(rows) and len(rows) >= TAKE_MIN):
        return None
    lib = _load()
    if lib is None:
        return None
    rows = np.ascontiguousarray(rows)
    out = np.empty(len(rows), dtype=np.int32)
    if lib.take2(_ptr(table), len(table), _ptr(codes), codes.dtype.itemsize, len(codes), _ptr(rows),
                 rows.dtype.itemsize, len(rows), _ptr(out)) >= 0:
        return None
    return out


def factorize_strings(data: object, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Arrow's ``dictionary_encode`` of a string array without nulls, from its buffers:
    `data` its data buffer (anything with an ``address``; None for no bytes), `offsets` its
    n + 1 int32 offsets. Returns (int32 code of each string, numbered by first appearance;
    int32 row of each distinct string's first appearance), or None without the library."""
    lib = _load()
    if lib is None:
        return None
    offsets = np.ascontiguousarray(offsets, dtype=np.int32)
    n = len(offsets) - 1
    if n < 0 or n >= 2**31 - 1:
        return None
    size = _set_size(n)
    # 16-byte slots (hash, code, row), emptied there: 8 MiB for the two path dictionaries, from
    # Arrow's allocator, not glibc's (a block this size freed raises glibc's mmap threshold to
    # it, and the later arrays up to that size then stay in its heap: peak RSS)
    table = pa.allocate_buffer(16 * size)
    codes = np.empty(n, dtype=np.int32)
    first = np.empty(n, dtype=np.int32)
    base = data.address if data is not None else 0  # type: ignore[attr-defined]
    distinct = lib.factorize_strings(base, _ptr(offsets), n, table.address, size, _ptr(codes), _ptr(first))
    return codes, first[:distinct].copy()


# Parquet's codec numbers (parquet.thrift's CompressionCodec) the chunk reader decompresses
_CODECS = {"UNCOMPRESSED": 0, "ZSTD": 6}
_zstd: tuple[int, int] | None | object = _UNSET
_contexts = threading.local()


def _zstd_decompress() -> tuple[int, int] | None:
    """(the address of libzstd's ZSTD_decompressDCtx, this thread's decompression context),
    or None where the library is missing. libzstd.so.1 is dlopen'd (every Debian system has
    it, as dpkg depends on it; no headers needed); each thread that reads keeps one context
    (~100 KiB) for the process's life, as Arrow's readers make one per column chunk."""
    global _zstd
    if _zstd is _UNSET:
        try:
            lib = ctypes.CDLL("libzstd.so.1")
            lib.ZSTD_createDCtx.restype = ctypes.c_void_p
            _zstd = (ctypes.cast(lib.ZSTD_decompressDCtx, ctypes.c_void_p).value, lib.ZSTD_createDCtx)
        except (OSError, AttributeError):
            _zstd = None
    if _zstd is None:
        return None
    fn, create = _zstd  # type: ignore[misc]
    dctx = getattr(_contexts, "dctx", None)
    if dctx is None:
        dctx = _contexts.dctx = create()
    return (fn, dctx) if dctx else None


def _chunk_bytes(fh: object, chunk: object, physical: str) -> tuple[np.ndarray, int, tuple[int, int], int, int] | None:
    """A dictionary-encoded column chunk's bytes as stored, with (its codec, the zstd
    decompressor and context, its dictionary's values, its dictionary page's bytes
    uncompressed); None for a chunk the compiled reader does not know or cannot read."""
    lib = _load()
    codec = _CODECS.get(chunk.compression)  # type: ignore[attr-defined]
    zstd = _zstd_decompress() if codec == 6 else (0, 0)
    if lib is None or codec is None or zstd is None or chunk.physical_type != physical or not chunk.has_dictionary_page:  # type: ignore[attr-defined]
        return None
    start, size = chunk.dictionary_page_offset, chunk.total_compressed_size  # type: ignore[attr-defined]
    if not start or start >= chunk.data_page_offset or size <= 0:  # type: ignore[attr-defined]
        return None  # (a writer's offset 0 for "none": not a dictionary page at byte 0)
    buf = np.empty(size, dtype=np.uint8)
    try:
        fh.seek(start)  # type: ignore[attr-defined]
        if fh.readinto(buf) != size:  # type: ignore[attr-defined]
            return None
    except OSError:
        return None
    info = np.zeros(2, dtype=np.int64)
    if lib.parquet_dictionary_info(_ptr(buf), size, _ptr(info)) < 0 or not 0 <= int(info[0]) < 2**31 - 1:
        return None
    return buf, codec, zstd, int(info[0]), int(info[1])


def read_dictionary_chunk(fh: object, chunk: object, max_def: int, rows: int) -> pa.DictionaryArray | None:
    """A dictionary-encoded string column chunk of a Parquet file (`chunk`: pyarrow's
    ColumnChunkMetaData of a flat column, `max_def` its maximum definition level, `rows` its
    row group's rows; `fh` the open file) as Arrow's reader gives it with ``read_dictionary``:
    the dictionary page's values in order, the rows' int32 indices, nulls where undefined.
    Without Arrow's memo table (it hashes every dictionary page: ~30 % of a path column's
    read) or its dictionary builder. None without the library, and for any chunk it does not
    know (a codec other than zstd or none, plain pages after the dictionary, levels other than
    RLE, pages it cannot parse, values beyond the dictionary, an unreadable file): the caller
    then reads the column through Arrow, which decodes or refuses it as it always has."""
    if max_def not in (0, 1) or not 0 <= rows < 2**31 - 1:
        return None
    got = _chunk_bytes(fh, chunk, "BYTE_ARRAY")
    if got is None:
        return None
    buf, codec, zstd, n_dict, plain = got
    data_cap = plain - 4 * n_dict  # the page's bytes less each value's 4-byte length
    if data_cap < 0:
        return None
    offsets = pa.allocate_buffer(4 * (n_dict + 1))
    data = pa.allocate_buffer(max(data_cap, 1))
    indices = pa.allocate_buffer(4 * rows)
    valid = pa.allocate_buffer((rows + 7) // 8)
    nulls = _lib.parquet_dictionary_chunk(_ptr(buf), len(buf), codec, *zstd, max_def, rows, n_dict,  # type: ignore[union-attr]
                                          offsets.address, data.address, data_cap, indices.address, valid.address)
    if nulls < 0:
        return None
    dictionary = pa.Array.from_buffers(pa.string(), n_dict, [None, offsets, data])
    codes = pa.Array.from_buffers(pa.int32(), rows, [valid if nulls else None, indices], null_count=nulls)
    # safe=False: every index was checked against the dictionary's size as it was decoded
    return pa.DictionaryArray.from_arrays(codes, dictionary, safe=False)


def read_int_dictionary_chunk(fh: object, chunk: object, max_def: int, rows: int, kind: pa.DataType) -> pa.Array | None:
    """A dictionary-encoded INT32 column chunk (see `read_dictionary_chunk`) as Arrow reads
    it when its type is `kind` (pa.int32() or pa.int16(): the caller's reading of the file's
    schema): each row's value, null where undefined. None as for `read_dictionary_chunk`, and
    for any other type or a value beyond it."""
    width = {pa.int32(): 4, pa.int16(): 2}.get(kind)
    if width is None or max_def not in (0, 1) or not 0 <= rows < 2**31 - 1:
        return None
    got = _chunk_bytes(fh, chunk, "INT32")
    if got is None:
        return None
    buf, codec, zstd, n_dict, _ = got
    scratch = np.empty(n_dict + rows, dtype=np.int32)  # the dictionary, then the rows' indices
    values = pa.allocate_buffer(width * rows)
    valid = pa.allocate_buffer((rows + 7) // 8)
    nulls = _lib.parquet_int_dictionary_chunk(_ptr(buf), len(buf), codec, *zstd, max_def, rows, n_dict,  # type: ignore[union-attr]
                                              _ptr(scratch), _ptr(scratch) + 4 * n_dict, valid.address,
                                              values.address, width)
    if nulls < 0:
        return None
    return pa.Array.from_buffers(kind, rows, [valid if nulls else None, values], null_count=nulls)


def _main() -> int:
    existed = (HERE / library_name()).exists()
    built = build()
    if built is None:
        print("baseline.run.native: not built (numpy versions used)")
    else:  # (setup prints every action it takes: a library already there was not built again)
        print(f"baseline.run.native: {'up to date' if existed else 'built'} {built}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

