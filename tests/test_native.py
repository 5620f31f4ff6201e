"""The differ's compiled hot loops (baseline.run.native) give the numbers of their numpy versions.

Each loop is run both ways on the same arrays -- stream ids of every width numpy narrows them
to, windows longer than their streams, hash values differing only in their high or low bits,
a zero value -- with numpy's own argsort / isin as the reference where one exists; then
`baseline diff` runs in two processes, one with the library and one without it
(TRACEBASE_NATIVE=0), on two recordings of a four-thread loader written to Parquet, and the
reports must be byte-identical. A machine without a C compiler builds nothing and diffs alike.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as arrow_compute  # the references: RE2 and Arrow's own kernels
import pytest

from baseline.run import _build_native, align, native, normalize
from baseline.run import compute as pc
from baseline.run.normalize import (
    _first_appearance_codes,
    _stable_order,
    _stable_order_numpy,
)
from bench.bench_diff import _file_names, synth_trace
from tracer.schema import write_table

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(need_cc) -> None:
    """The library of this checkout's source (scripts/setup.sh builds it; a no-op then)."""
    assert _build_native.build() is not None
    native._lib = native._UNSET  # (looked up again: a process that started before the build)
    assert native.available()


def _streams(rng: np.random.Generator, lengths: list[int], vocab: int, sid_dtype: type) -> align.Streams:
    sid = np.repeat(np.arange(len(lengths)), lengths).astype(sid_dtype)
    tok = rng.integers(0, vocab, size=len(sid)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return align.Streams(tok, sid, np.arange(len(sid)))


@pytest.mark.parametrize("sid_dtype", [np.int16, np.int32, np.int64])
@pytest.mark.parametrize("k", [1, 2, 4, 7])
def test_window_hashes_are_the_numpy_ones(built, sid_dtype, k):
    rng = np.random.default_rng(k)
    # streams shorter than, as long as and longer than a window; one empty stream id in between
    lengths = [1, k - 1 if k > 1 else 1, k, k + 1, 0, 5000, 3, 70_000]
    s = _streams(rng, lengths, 6, sid_dtype)
    role_hash = align._mix(rng.integers(1, 1 << 62, size=len(lengths)).astype(np.uint64))
    want = align._window_hashes_numpy(s, role_hash, k)
    got = native.window_hashes(s.tok, s.sid, role_hash, k, align.PAD)
    assert got is not None and got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(align.window_hashes(s, role_hash, k), want)


def test_window_hashes_of_no_positions(built):
    empty = align.Streams(np.zeros(0, np.uint64), np.zeros(0, np.int16), np.zeros(0, np.int64))
    assert len(align.window_hashes(empty, np.zeros(0, np.uint64), 3)) == 0


@pytest.mark.parametrize("n_model", [1, 3, 1000, 200_000])
def test_seen_in_is_exact_membership(built, n_model):
    rng = np.random.default_rng(n_model)
    model = rng.integers(0, 2**63, size=n_model, dtype=np.uint64) * np.uint64(2)
    model[: n_model // 3] = model[0]  # many duplicates, as repeated windows give
    hi_only = model[: min(n_model, 500)] ^ np.uint64(1 << 63)  # differ in the top bit only
    lo_only = model[: min(n_model, 500)] ^ np.uint64(1)  # ... in the bottom bit only
    # (200,000 distinct-ish values fill the table to ~0.76: long probe runs)
    edges = np.array([0, 1, 2**64 - 1], dtype=np.uint64)
    values = np.concatenate([model[::-1], hi_only, lo_only, edges])
    rng.shuffle(values)
    want = np.isin(values, model)
    np.testing.assert_array_equal(align._seen_in_numpy(values, model), want)
    got = native.seen_in(values, model)
    assert got is not None
    np.testing.assert_array_equal(got, want)
    with_zero = np.r_[model, np.uint64(0)]  # 0 marks an empty slot in the C table: kept apart
    np.testing.assert_array_equal(native.seen_in(values, with_zero), np.isin(values, with_zero))


@pytest.mark.parametrize("code_dtype", [np.int32, np.int64])
def test_stable_order_is_a_stable_argsort(built, code_dtype):
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 700, size=600_001).astype(code_dtype)  # more than one numpy block
    counts = np.bincount(codes)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    want = np.argsort(codes, kind="stable")
    np.testing.assert_array_equal(_stable_order_numpy(codes, counts, starts), want)
    got = _stable_order(codes, counts, starts)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    bad = codes.copy()
    bad[7] = len(starts)  # not a dense code: the C loop is not asked (it would write out of bounds)
    assert native.stable_order(bad, starts, np.int32) is None


def _diff(good: Path, bad: Path, env: dict[str, str], *flags: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "baseline.cli", "diff", str(good), str(bad), "--json", *flags],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr  # an anomaly was found
    out = json.loads(proc.stdout)
    out["settings"].pop("elapsed_s")
    return out


def test_reports_with_and_without_the_library_are_identical(built, tmp_path):
    rng = np.random.default_rng(1)
    names = _file_names(3000, rng)
    reads = rng.integers(1, 4, size=len(names))
    good = write_table(synth_trace(20_000, 11, 4100, "/tmp/tmpk3j9x_2a", None, names, reads, "good-1", "good"),
                       tmp_path / "good.parquet", "events")
    bad = write_table(synth_trace(20_000, 22, 9300, "/tmp/tmpq8w1zz_0", 1800, names, reads, "bad-1", "failure"),
                      tmp_path / "bad.parquet", "events")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    probe = "from baseline.run import native; print(native.available())"
    for flag, want in (("1", "True"), ("0", "False")):
        out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                             env={**env, "TRACEBASE_NATIVE": flag}, check=True)
        assert out.stdout.strip() == want
    for flags in ((), ("-k", "3", "--context", "5")):
        with_lib = _diff(good, bad, {**env, "TRACEBASE_NATIVE": "1"}, *flags)
        without = _diff(good, bad, {**env, "TRACEBASE_NATIVE": "0"}, *flags)
        assert with_lib == without
        b = with_lib["bifurcation"]
        assert (b["probe"], b["errno"]) == ("openat", "EACCES") and b["path"] == names[1800]


def test_no_compiler_builds_nothing_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))  # named but missing
    assert _build_native.build(dest=tmp_path) is None
    assert "no-such-cc" in capsys.readouterr().err
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, no gcc
    assert _build_native.build(dest=tmp_path) is None
    assert "no C compiler" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.so"))


def test_a_stale_build_is_never_loaded(tmp_path):
    src = tmp_path / "_hotloops.c"
    src.write_bytes(_build_native.SOURCE.read_bytes())
    same = _build_native.library_name(src)
    src.write_bytes(src.read_bytes() + b"\n/* edited */\n")
    assert _build_native.library_name(src) != same == _build_native.library_name()


@pytest.mark.parametrize("sid_dtype", [np.int16, np.int64])
@pytest.mark.parametrize("orig_dtype", [np.int32, np.int64])
def test_loop_compression_is_the_numpy_one(built, sid_dtype, orig_dtype, monkeypatch):
    rng = np.random.default_rng(3)
    # loops of bodies 1-5 long repeated 1-6 times (some shorter than their period), noise between
    parts, sids = [], []
    for stream in range(60):
        for _ in range(rng.integers(1, 40)):
            body = rng.integers(0, 5, size=rng.integers(1, 6))
            parts.append(np.tile(body, rng.integers(1, 7)))
            sids.append(np.full(len(parts[-1]), stream))
    tok = np.concatenate(parts).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    sid = np.concatenate(sids).astype(sid_dtype)
    orig = np.arange(len(tok), dtype=orig_dtype)
    orig[::97] = -1  # END slots
    got = align.compress_loops([align.Streams(tok.copy(), sid.copy(), orig.copy())])
    kept = align.Streams(tok.copy(), sid.copy(), orig.copy())
    again = align.compress_loops(kept)  # the caller keeps its streams: they stay as they were
    np.testing.assert_array_equal(kept.tok, tok)
    monkeypatch.setattr(native, "_lib", None)
    want = align.compress_loops([align.Streams(tok.copy(), sid.copy(), orig.copy())])
    assert len(want) < len(tok) * 0.8
    for a, b, c in ((got.tok, want.tok, again.tok), (got.sid, want.sid, again.sid), (got.orig, want.orig, again.orig)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, b)
        assert a.dtype == b.dtype


@pytest.mark.parametrize("compiled", [True, False])
def test_loops_compressed_side_by_side_in_two_threads_equal_the_whole(built, compiled, monkeypatch):
    """baseline diff compresses the bad streams (a prefix of the positions) in the worker
    thread and the good ones here, each in place in its own part of the arrays: the same
    streams as one pass over all of them, even with a loop running across the split (the
    last bad stream ends with the body the first good one starts with)."""
    if not compiled:
        monkeypatch.setattr(native, "_lib", None)
    rng = np.random.default_rng(8)
    streams = []
    for _ in range(30):  # loops of bodies 1-4 long repeated 1-5 times (some shorter than their period)
        streams.append(np.concatenate([np.tile(rng.integers(0, 4, size=rng.integers(1, 5)), rng.integers(1, 6))
                                       for _ in range(rng.integers(1, 30))]))
    body = np.array([7, 8, 9])
    streams[14] = np.r_[streams[14], np.tile(body, 5)]
    streams[15] = np.r_[np.tile(body, 4), streams[15]]
    tok = np.concatenate(streams).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    sid = np.concatenate([np.full(len(x), i) for i, x in enumerate(streams)]).astype(np.int16)
    orig = np.arange(len(tok), dtype=np.int32)
    split = int(np.searchsorted(sid, 15))
    whole = align.compress_loops([align.Streams(tok.copy(), sid.copy(), orig.copy())])
    s = align.Streams(tok.copy(), sid.copy(), orig.copy())
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(align.compress_loops, [s.slice(0, split)])
        second = align.compress_loops([s.slice(split, len(s))])
        first = first.result()
    assert len(whole) < len(tok) * 0.8
    for name in ("tok", "sid", "orig"):
        np.testing.assert_array_equal(np.concatenate([getattr(first, name), getattr(second, name)]), getattr(whole, name))


@pytest.mark.parametrize("tid_dtype", [np.int32, np.int64])
def test_first_appearance_codes_are_the_numpy_ones(built, tid_dtype, monkeypatch):
    rng = np.random.default_rng(9)
    # three traces (trace numbers as the differ narrows them), thread ids far from 0, interleaved
    tkey = np.repeat(np.array([-1, 0, 1], dtype=np.int16), [40_000, 30_000, 30_001])
    tid = rng.choice(np.array([4100, 4103, 4104, 9300, 9309, 70_001], dtype=tid_dtype), size=len(tkey))
    got = _first_appearance_codes(tkey, tid)[0]
    monkeypatch.setattr(native, "_lib", None)
    want = _first_appearance_codes(tkey, tid)[0]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    # the reference: pairs numbered in order of first appearance
    pairs = list(zip(tkey.tolist(), tid.tolist(), strict=True))
    first: dict = {}
    for p in pairs:
        first.setdefault(p, len(first))
    np.testing.assert_array_equal(want, [first[p] for p in pairs])
    # the rows of each code, counted in the same pass: np.bincount's
    monkeypatch.undo()
    codes, counts = _first_appearance_codes(tkey, tid)
    np.testing.assert_array_equal(codes, got)
    np.testing.assert_array_equal(counts, np.bincount(want))
    monkeypatch.setattr(native, "_lib", None)
    np.testing.assert_array_equal(_first_appearance_codes(tkey, tid)[1], np.bincount(want))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_windows_seen_as_they_are_hashed_are_the_numpy_ones(built, k, monkeypatch):
    rng = np.random.default_rng(11 + k)
    bad = _streams(rng, [1, 2, 400, 3000, k], 5, np.int16)
    good = _streams(rng, [k, 1, 2500, 0, 900, 7], 5, np.int16)
    good.sid += np.int16(5)  # good streams are numbered after the bad ones
    role_hash = align._mix(np.arange(1, 12, dtype=np.uint64))
    role_hash[5:10] = role_hash[:5]  # good stream 5 + i does bad stream i's job: windows match
    bh = align.window_hashes(bad, role_hash, k)
    got, gh = align.seen_windows(bh, good, role_hash, k)
    # the set built first (as the diff does while its worker hashes the bad side) is the same
    built_first, gh_too = align.seen_windows(bh, good, role_hash, k, [align.window_set(good, role_hash, k)])
    np.testing.assert_array_equal(built_first, got)
    np.testing.assert_array_equal(gh_too, gh)
    monkeypatch.setattr(native, "_lib", None)
    want_gh = align.window_hashes(good, role_hash, k)
    want, numpy_gh = align.seen_windows(bh, good, role_hash, k)
    np.testing.assert_array_equal(numpy_gh, want_gh)
    np.testing.assert_array_equal(gh, want_gh)
    np.testing.assert_array_equal(want, np.isin(bh, want_gh))
    np.testing.assert_array_equal(got, want)
    assert 0 < np.count_nonzero(want) < len(want)


@pytest.mark.parametrize("m", [1, 15, 16, 17, 33, 1000])
def test_set_lookups_asked_a_batch_ahead_change_nothing(built, m, monkeypatch):
    # The C set asks for the slots of the next 16 values before it adds or probes them: sizes
    # around that batch, a one-event bad run, and a bad run with nothing in common.
    rng = np.random.default_rng(m)
    good = _streams(rng, [m], 4, np.int16)
    one = _streams(rng, [1], 4, np.int16)
    other = align.Streams(good.tok[::-1] + np.uint64(1), good.sid.copy(), np.arange(m))  # no token in common
    role_hash = align._mix(np.arange(1, 3, dtype=np.uint64))
    for bad in (good, one, other):
        for k in (1, 4):
            bh = align.window_hashes(bad, role_hash, k)
            got, gh = align.seen_windows(bh, good, role_hash, k)
            got_set = native.seen_in(bh, gh)
            with monkeypatch.context() as numpy_only:
                numpy_only.setattr(native, "_lib", None)
                want, want_gh = align.seen_windows(bh, good, role_hash, k)
            np.testing.assert_array_equal(gh, want_gh)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got_set, want)
            np.testing.assert_array_equal(want, np.isin(bh, want_gh))
    assert align.seen_windows(align.window_hashes(other, role_hash, 1), good, role_hash, 1)[0].sum() == 0
    assert align.seen_windows(align.window_hashes(good, role_hash, 4), good, role_hash, 4)[0].all()


@pytest.mark.parametrize("replacement", ["<n>", "", "#", "<longer-than-a-digit>"])
def test_digit_runs_are_re2s_and_the_numpy_ones(built, replacement, monkeypatch):
    """The digit-run masking of path dictionaries: C, numpy (in 1 MiB parts) and RE2's own
    ``[0-9]+`` replacement agree, on the reference file's lines (kernel sources: mlx5, ib_uverbs
    ...), multi-byte UTF-8 around digits, runs at string starts and ends, empty strings, nulls,
    and a sliced array (its offsets start past its buffers' first)."""
    import pyarrow as pa

    from baseline.run import compute as pc
    from baseline.run import normalize

    lines = (REPO / "reference" / "rdma_control_path.yaml").read_text().splitlines()
    edge = ["", "7", "123", "a1b22c333", "9/x/9", "é1ü22€3", "1é", "/dev/infiniband/uverbs0",
            "/proc/12/task/345/stat", "no digits", None, "0x7f00dead", "٣ arabic-indic digit"]
    many = [f"/tmp/job_{i}/part-{i * 7919:08d}.bin" for i in range(60_000)]  # > 1 MiB of text: numpy in parts
    values = pa.array(edge + lines + edge + many, type=pa.string())
    for arr in (values, values.slice(5, len(values) - 9), pa.array([], type=pa.string()),
                pa.array([None, None], type=pa.string())):
        want = pc.replace_substring_regex(arr, pattern="[0-9]+", replacement=replacement)
        got = normalize._replace_digit_runs(arr, replacement)
        monkeypatch.setattr(native, "_lib", None)
        twin = normalize._replace_digit_runs(arr, replacement)
        monkeypatch.undo()
        native._lib = native._UNSET
        assert got.to_pylist() == want.to_pylist() == twin.to_pylist()
        assert got.equals(want) and got.null_count == arr.null_count


def _path_like_text(seed: int, n: int, alphabet: str) -> list[str | None]:
    """Random path-like strings over `alphabet`, some under a temp root, some null."""
    rng = np.random.default_rng(seed)
    chars = list(alphabet)
    roots = ["", "", "", "/tmp/", "/var/tmp/", "/dev/shm/", "/tmp", "/dev/shmx/", "0x"]
    out: list[str | None] = []
    for _ in range(n):
        if rng.random() < 0.02:
            out.append(None)
            continue
        out.append(str(rng.choice(roots)) + "".join(rng.choice(chars, int(rng.integers(0, 40)))))
    return out


_TEXT_EDGES = ["", "0x", "0xg", "0X1f", "00x1", "0x0x1", "x0x1y", "1234567890abcdef", "1234567890abcde",
               "g1234567890ABCDEFz", "abcdef0123456789abcdef", "deadbeef" * 2 + "0x12", "/tmp/abcdef",
               "/tmp/abcde\nf123456", "/tmp/\nabcdef", "/var/tmp/ab_cd1", "/dev/shm/x", "a1B", "B_1", "1_B",
               "1 B", "é1B", "Ab/1", "blob_553aa86b.bin", "٣٣B", "tmp", "objects/3a/", "tmpobjects"]


@pytest.mark.parametrize("alphabet", ["0123456789abcdefABCDEFxXgG_/.-\n é", "0123456789abcdefxX", "09xXaZ_/ \n"])
def test_number_rules_are_re2s(built, alphabet, monkeypatch):
    """The number rules (DIGIT_RULES' addresses, long hex ids and digit runs; ARG_RULES';
    plain digit runs) as one C pass give RE2's own global replace, leftmost first: a 0x
    address before a long hex run before digits, hex runs one short of 16, 0x with no hex
    after it, upper-case X, multi-byte characters, nulls, sliced arrays, the reference file's
    kernel lines; and the same without the library."""
    lines = (REPO / "reference" / "rdma_control_path.yaml").read_text().splitlines()
    values = pa.array(_TEXT_EDGES + lines + _path_like_text(len(alphabet), 30_000, alphabet), type=pa.string())
    rules = [(normalize.DIGIT_RULES[0][0], "<n>"), (normalize.ARG_RULES[0][0], "<n>"), ("[0-9]+", "<n>"),
             (normalize.DIGIT_RULES[0][0], "")]
    assert set(normalize._NUMBER_RULES) == {pattern for pattern, _ in rules}
    for arr in (values, values.slice(7, 3000), pa.array([], type=pa.string())):
        for pattern, replacement in rules:
            want = arrow_compute.replace_substring_regex(arr, pattern=pattern, replacement=replacement)
            got = normalize.apply_rules(arr, [(pattern, replacement)])
            assert got.equals(want), (pattern, [(a, b, c) for a, b, c in zip(arr.to_pylist(), want.to_pylist(),
                                                                             got.to_pylist(), strict=True) if b != c][:5])
            with monkeypatch.context() as numpy_only:
                numpy_only.setattr(native, "_lib", None)
                assert normalize.apply_rules(arr, [(pattern, replacement)]).equals(want)


@pytest.mark.parametrize("alphabet", ["0123456789abcdefABCDEFxXgG_/.-\n é", "aZ9_/\n", "tmpobjects/_9A"])
def test_string_prefilters_are_re2s(built, alphabet, monkeypatch):
    """The prefilters of the path rules in C -- random tokens (`_RANDOM_PREFILTER`: a temp root
    and a run of six word characters on its first line, or a word run holding a digit and an
    upper-case letter) and a rule's leading literal (Arrow's match_substring) -- pick the very
    strings RE2 and Arrow pick, on random text, the edges above and a sliced array."""
    values = pa.array(_TEXT_EDGES + _path_like_text(len(alphabet) + 1, 30_000, alphabet), type=pa.string())
    values = arrow_compute.drop_null(values)
    for arr in (values, values.slice(3, 2000)):
        want = arrow_compute.fill_null(arrow_compute.match_substring_regex(arr, normalize._RANDOM_PREFILTER), False)
        assert normalize._random_candidates(arr).equals(want)
        for literal in ("tmp", "objects", "0", "ab", "/t", "\n", "é", "tmpobjects"):
            assert normalize._containing(arr, literal).equals(arrow_compute.match_substring(arr, literal)), literal
        with monkeypatch.context() as numpy_only:
            numpy_only.setattr(native, "_lib", None)
            assert normalize._random_candidates(arr).equals(want)
    assert 0 < arrow_compute.sum(want).as_py() < len(want)


@pytest.mark.parametrize("rows", [None, 5000])
def test_packed_fields_are_the_numpy_ones(built, rows, monkeypatch):
    """`_pack`'s mixed-radix tokens in one C pass equal numpy's passes: codes of every width
    numpy narrows them to, with -1 (null) and offset 1, a broadcast field (an all-null column
    stored once), radices whose product is just below 2**63 (the top digit's highest value),
    lazily built fields; a uint field or a product past 2**63 leaves it to numpy (the hash)."""
    from baseline.run.normalize import _pack

    rng = np.random.default_rng(7)
    n = 200_000
    probe = rng.integers(-1, 300, n).astype(np.int16)
    errno = rng.integers(-1, 40_000, n).astype(np.int32)
    path = rng.integers(0, 2**30, n).astype(np.int64)
    absent = np.broadcast_to(np.full(1, -1, dtype=np.int16), (n,))
    depth = rng.integers(-3, 4, n).astype(np.int16)
    pick = None if rows is None else np.sort(rng.choice(n, rows, replace=False))

    def at(a):
        return a if pick is None else (lambda: a[pick])

    top = (1 << 63) // (301 * 40_001 * 2**30 * 2 * 7)  # the product just below 2**63
    last = rng.integers(0, top, n).astype(np.int32)
    last[:3] = top - 1  # the top digit's highest value
    cases = [
        [(at(probe), 301, 1), (at(errno), 40_001, 1), (at(path), 2**30), (at(absent), 2, 1),
         (lambda: (depth if pick is None else depth[pick]) + 3, 7), (at(last), top)],
        [(at(probe), 301, 1), (at(errno), 40_001, 1)],
        [(at(probe.astype(np.uint16) % 300), 301)],  # unsigned: numpy's passes
        [(at(path), 2**40), (at(path), 2**40)],  # past 2**63: the hash
    ]
    m = n if pick is None else len(pick)
    for fields in cases:
        got = _pack(list(fields), m)
        monkeypatch.setattr(native, "_lib", None)
        want = _pack(list(fields), m)
        monkeypatch.undo()
        assert got.dtype == np.uint64
        np.testing.assert_array_equal(got, want)
    assert 301 * 40_001 * 2**30 * 2 * 7 * top < 1 << 63 <= 301 * 40_001 * 2**30 * 2 * 7 * (top + 1)
    assert int(_pack(cases[0], m).max()) < 1 << 63
    values = [f[0]() if callable(f[0]) else f[0] for f in cases[0]]  # (the C pass was taken)
    assert native.pack_fields(values, [f[1] for f in cases[0]], [f[2] if len(f) > 2 else 0 for f in cases[0]], m) is not None


def _dict_chunk(pa, words: list[str | None], index_type) -> object:
    """One dictionary-encoded chunk of `words` with its own dictionary (first-appearance order)."""
    vocab = list(dict.fromkeys(w for w in words if w is not None))
    idx = pa.array([None if w is None else vocab.index(w) for w in words], type=index_type)
    return pa.DictionaryArray.from_arrays(idx, pa.array(vocab, type=pa.string()))


@pytest.mark.parametrize(("rows", "width"), [(0, 32), (1, 16), (5000, 16), (5000, 32), (5000, 64), (40_000, 32)])
def test_codes_gathered_in_stream_order_are_the_numpy_ones(built, rows, width, monkeypatch):
    """prepare's coded columns straight from the Arrow indices into stream order (one C pass,
    `_gather_in_order`) equal the numpy path (codes in source order, narrowed, gathered): the
    reference file's words as values, chunks with their own or a shared dictionary, int16,
    int32 or int64 indices, nulls, a sliced chunk, an empty chunk, and all rows different
    (past int16's codes: int32 out). The codes stand for the rows' strings."""
    import pyarrow as pa

    from baseline.run import normalize

    words = sorted(set((REPO / "reference" / "rdma_control_path.yaml").read_text().split()))
    rng = np.random.default_rng(rows)
    if rows == 40_000:  # all different
        pool = [f"{words[i % len(words)]}/{i}" for i in range(rows)]
        rows_words: list[str | None] = list(pool)
    else:
        rows_words = [None if x < 0 else words[x] for x in rng.integers(-1, len(words), rows)]
    cut = [0, rows // 3, rows // 3, rows // 2, rows]  # (an empty chunk between)
    chunks = []
    for i, (lo, hi) in enumerate(itertools.pairwise(cut)):
        part = rows_words[lo:hi]
        index_type = pa.int16() if width == 16 else pa.int32() if width == 32 else pa.int64()
        if i == 3 and part:  # a sliced chunk: its buffers start before its first row
            c = _dict_chunk(pa, ["pad", *part, "pad"], index_type).slice(1, len(part))
        else:
            c = _dict_chunk(pa, part, index_type)
        chunks.append(c.cast(pa.dictionary(index_type, pa.string())))
    if rows >= 2:
        chunks.append(chunks[-1].slice(0, 1))  # the same dictionary's buffers again: one group
        rows_words = rows_words + rows_words[cut[3] : cut[3] + 1]
    col = pa.chunked_array(chunks, type=chunks[0].type)
    n = len(rows_words)
    # a stream order: rows grouped by a random stream, in row order within each (as prepare's)
    stream = rng.integers(0, 7, n)
    order = np.argsort(stream, kind="stable").astype(np.int32)
    for rules in (None, normalize.ARG_RULES):
        groups, raw, values = normalize._column_maps(col, rules)
        got = normalize._gather_in_order(groups, raw, len(values), order)
        assert got is not None
        monkeypatch.setattr(native, "_lib", None)
        assert normalize._gather_in_order(groups, raw, len(values), order) is None
        want = normalize._narrow(normalize._gather_parts(groups, raw))[order]
        monkeypatch.undo()
        native._lib = native._UNSET
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if rules is None:  # and they name the rows' own strings (int32 past int16's codes)
            assert got.dtype == (np.int32 if rows == 40_000 else np.int16)
            assert [None if c < 0 else values[c] for c in got.tolist()] == [rows_words[r] for r in order.tolist()]


@pytest.mark.parametrize("src_dtype", [np.bool_, np.int8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float64])
@pytest.mark.parametrize("idx_dtype", [np.int16, np.int32, np.int64])
def test_gathers_are_numpys_indexing(built, src_dtype, idx_dtype):
    rng = np.random.default_rng(7)
    src = rng.integers(-(1 << 40), 1 << 40, size=30_000).astype(src_dtype)
    if src_dtype is np.float64:
        src[:3] = [np.nan, -0.0, np.inf]  # copied bit for bit
    hi = min(len(src), int(np.iinfo(idx_dtype).max))
    for idx in (
        rng.integers(-hi, hi, size=50_000).astype(idx_dtype),  # negative: from the end, as numpy
        np.sort(rng.integers(0, hi, size=native.TAKE_MIN)).astype(idx_dtype),  # the smallest size taken
        np.full(native.TAKE_MIN + 1, -1, dtype=idx_dtype),
        rng.integers(0, hi, size=20_000).astype(idx_dtype)[::3],  # not contiguous
    ):
        got = native.take(src, idx)
        assert got is not None and got.dtype == src.dtype
        np.testing.assert_array_equal(got.view(np.uint8), src[idx].view(np.uint8))
    # what numpy refuses or does otherwise is left to numpy: out of range (its IndexError),
    # a boolean mask, a 2-D or strided source, few indices
    assert native.take(src, np.r_[np.zeros(native.TAKE_MIN, dtype=idx_dtype), len(src)].astype(idx_dtype)) is None
    assert native.take(src, np.r_[np.zeros(native.TAKE_MIN, dtype=idx_dtype), -len(src) - 1].astype(idx_dtype)) is None
    assert native.take(src, np.ones(len(src), dtype=bool)) is None
    assert native.take(src[::2], np.zeros(native.TAKE_MIN, dtype=idx_dtype)) is None
    assert native.take(src, np.zeros(native.TAKE_MIN - 1, dtype=idx_dtype)) is None


@pytest.mark.parametrize("code_dtype", [np.int16, np.int32])
@pytest.mark.parametrize("row_dtype", [np.int16, np.int32, np.int64])
def test_gathers_through_codes_are_numpys(built, code_dtype, row_dtype):
    rng = np.random.default_rng(11)
    table = np.append(rng.integers(-1, 1 << 20, size=300).astype(np.int32), np.int32(-1))  # -1: null's entry
    codes = rng.integers(-1, 300, size=32_000).astype(code_dtype)
    rows = rng.integers(-len(codes), len(codes), size=40_000).astype(row_dtype)
    got = native.take_through(table, codes, rows)
    assert got is not None
    np.testing.assert_array_equal(got, table[codes[rows]])
    assert native.take_through(table, codes, np.r_[rows, len(codes)].astype(row_dtype)) is None  # a row out of range
    bad_codes = codes.copy()
    bad_codes[rows[5]] = len(table)  # a code out of the table
    assert native.take_through(table, bad_codes, rows) is None
    with pytest.raises(IndexError):  # (what the caller's numpy fallback then says)
        table[bad_codes[rows]]


def _arrow_factorized(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    enc = pc.dictionary_encode(arr, null_encoding="encode")
    return np.frombuffer(enc.indices.buffers()[1], dtype=np.int32)[enc.indices.offset :][: len(arr)], enc.dictionary


@pytest.mark.parametrize("compiled", [True, False])
def test_strings_factorized_are_arrows_dictionary_encoding(built, compiled, monkeypatch):
    """normalize._factorize (the compiled pass past _FACTORIZE_MIN strings) numbers strings by
    first appearance as Arrow's dictionary_encode does: the reference file's lines and words, each twice
    and in both orders, prefixes of one another, strings differing in their last byte, empty
    strings, multi-byte UTF-8, and a sliced array."""
    if not compiled:
        monkeypatch.setattr(native, "_lib", None)
    lines = (REPO / "reference" / "rdma_control_path.yaml").read_text().splitlines()
    words = [w for line in lines for w in line.split()]
    made = [f"/data/in/blob_{i:05x}.bin" for i in range(3000)] + ["", "/", "/tmp/é", "/tmp/é\u00e9", "a" * 70, "a" * 71]
    made += [w[: j + 1] for w in words[:200] for j in range(min(len(w), 9))]  # prefixes
    made += [m[:-1] + chr(ord(m[-1]) ^ 1) for m in made if m]  # the last byte changed
    values = lines + words + made
    values = values + values[::-1] + values[::3]
    arr = pa.array(values, type=pa.string())
    assert len(arr) > normalize._FACTORIZE_MIN
    for a in (arr, arr.slice(17, len(arr) - 40), arr.slice(5, normalize._FACTORIZE_MIN)):
        want_codes, want_values = _arrow_factorized(a)
        codes, got = normalize._factorize(a)
        assert codes.dtype == np.int32
        np.testing.assert_array_equal(codes, want_codes)
        assert got.arrow.equals(want_values)
    if compiled:  # the compiled pass ran (not Arrow's kernel)
        done = native.factorize_strings(arr.buffers()[2], np.frombuffer(arr.buffers()[1], dtype=np.int32)[: len(arr) + 1])
        assert done is not None and len(done[1]) == len(_arrow_factorized(arr)[1])


def test_codes_gathered_for_rows_out_of_the_chunks_are_left_to_numpy(built):
    """gather_codes checks the order's rows inside its pass (no min/max pass over it first):
    a row before the first or past the last gives None, and the numpy gather its IndexError."""
    arr = pa.array(["a", "b", None, "a"] * 2000).dictionary_encode()
    groups, raw, values = normalize._column_maps(pa.chunked_array([arr, arr.slice(3)]), None)
    n = 2 * len(arr) - 3
    order = np.arange(n, dtype=np.int32)[::-1].copy()
    got = normalize._gather_in_order(groups, raw, len(values), order)
    np.testing.assert_array_equal(got, normalize._gather_parts(groups, raw)[order])
    for bad in (n, -1):
        wrong = order.copy()
        wrong[n // 2] = bad
        assert normalize._gather_in_order(groups, raw, len(values), wrong) is None
    with pytest.raises(IndexError):
        normalize._gather_parts(groups, raw)[np.r_[order, n]]


@pytest.mark.parametrize("a_type", [np.int16, np.int32, np.int64, np.uint16, np.uint64])
@pytest.mark.parametrize("v_type", [np.int16, np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_sorted_search_is_numpys_whatever_the_value_types(a_type, v_type, side):
    """native.search_sorted casts the searched values to the array's type (numpy would copy the
    whole array to a common type on every call): the same positions, values beyond the
    array's type included (numpy's own then), scalars and empty searches too."""
    rng = np.random.default_rng(3)
    top = min(np.iinfo(a_type).max, 30_000)
    a = np.sort(rng.integers(0, top, 5_000)).astype(a_type)
    values = [rng.integers(0, top, 300).astype(v_type), np.arange(0, 40, dtype=v_type), np.zeros(0, dtype=v_type),
              np.array([np.iinfo(v_type).max, 0, 5], dtype=v_type)]
    if np.iinfo(v_type).min < 0:
        values.append(np.array([-1, np.iinfo(v_type).min, 7], dtype=v_type))
    for v in values:
        got, want = native.search_sorted(a, v, side), np.searchsorted(a, v, side)
        assert got.tolist() == want.tolist(), (v[:5], side)
    for scalar in (0, int(a[17]), top + 70_000, -3, np.int64(int(a[-1])), v_type(1)):
        assert int(native.search_sorted(a, scalar, side)) == int(np.searchsorted(a, scalar, side)), scalar
