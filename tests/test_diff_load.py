"""How `baseline diff` loads its inputs (baseline.run.traces.EventColumns: a column at a time)
and the numpy helpers its speed rests on. Every input form gives the same report: files, a
directory, several files, polars frames, an Arrow table, a bad trace picked out of a file
holding several, a schema-version-1 file beside a version-2 one. Traces are real Parquet
written through tracer.schema; the reference for each helper is pyarrow/RE2/numpy itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from baseline.run import align
from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from baseline.run.normalize import (
    SEARCH_KEY_OFFSET,
    _pack,
    _replace_digit_runs,
    isin,
    numpy_of,
    unique_ints,
)
from tracer import schema
from tracer.schema import write_table

REPO = Path(__file__).resolve().parents[1]
NONE = ExpectedErrors([], source="<test>")
# A loader with two threads and a child: library search, per-file loop, one temp directory.
LIBS = ["/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"]


def events(trace_id: str, pid: int, tmp: str, fail: int | None = None, kind: str = "good",
           n_files: int = 40) -> pl.DataFrame:
    rows = [(pid, "execve", None, "/usr/bin/loader", None), (pid, "openat", "ENOENT", LIBS[0], None),
            (pid, "openat", None, LIBS[1], None), (pid, "mkdir", None, tmp, None),
            (pid, "clone", None, None, None)]
    worker = pid + 1
    for i in range(n_files):
        who = pid if i % 2 else worker
        name = f"/data/in/part-{i:04d}.bin"
        if i == fail:
            rows += [(who, "openat", "EACCES", name, None), (who, "write", None, None, f"cannot open {name}\n")]
            continue
        rows += [(who, "openat", None, name, None), (who, "read", None, None, None), (who, "read", None, None, None),
                 (who, "close", None, None, None), (who, "write", None, f"{tmp}/out", None)]
    rows += [(worker, "exit", None, None, None), (pid, "rename", None, f"{tmp}/out", None),
             (pid, "exit_group", None, None, None)]
    n = len(rows)
    return pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [100 * i for i in range(n)],
            "pid": [pid] * n, "tid": [r[0] for r in rows], "ppid": [1] * n, "comm": ["loader"] * n,
            "probe": [r[1] for r in rows], "depth": [0] * n, "ret": [-1 if r[2] else 0 for r in rows],
            "errno": [r[2] for r in rows], "path": [r[3] for r in rows], "output": [r[4] for r in rows],
            "kind": [kind] * n, "command": ["loader /data/in"] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16,
                          "errno": pl.String, "path": pl.String, "output": pl.String},
    )


def report(good, bad, **kw) -> dict:
    out = diff_traces(good, bad, expected=NONE, **kw).to_dict()
    out["settings"].pop("elapsed_s")
    return out


@pytest.fixture
def runs(tmp_path):
    g1 = events("g1", 100, "/tmp/tmpa1b2c3d4")
    g2 = events("g2", 200, "/tmp/tmpq9w8e7r6")
    bad = events("b1", 300, "/tmp/tmpz0x9c8v7", fail=17, kind="failure")
    (tmp_path / "good").mkdir()
    files = [write_table(g1, tmp_path / "good" / "g1.parquet", "events"),
             write_table(g2, tmp_path / "good" / "g2.parquet", "events")]
    bad_file = write_table(bad, tmp_path / "bad.parquet", "events")
    return {"frames": (g1, g2, bad), "files": files, "bad": bad_file, "dir": tmp_path / "good"}


def test_every_input_form_gives_the_same_report(runs, tmp_path):
    g1, g2, bad = runs["frames"]
    want = report(runs["files"], runs["bad"])
    assert want["anomaly"] and want["bifurcation"]["errno"] == "EACCES"
    assert want["bifurcation"]["path"] == "/data/in/part-0017.bin"
    assert want["bifurcation"]["then_wrote"] == "cannot open /data/in/part-0017.bin\n"
    assert report(runs["dir"], runs["bad"]) == want
    assert report(pl.concat([g1, g2]), bad) == want
    assert report(schema.conform(pl.concat([g1, g2]), "events"), bad.lazy()) == want
    # The bad trace picked from a file holding others (rows filtered as each column is read).
    mixed = write_table(pl.concat([g1.with_columns(pl.lit("other").alias("trace_id")), bad]),
                        tmp_path / "several.parquet", "events")
    assert report(runs["files"], mixed, trace_id="b1") == {**want}


def test_a_version_1_good_file_beside_a_version_2_bad_file(runs, tmp_path):
    """Columns schema version 2 added (path2, output) read as null on the older side."""
    v2 = pq.read_table(runs["files"][0])
    v1 = v2.drop_columns(sorted(schema.ADDED_COLUMNS["events"]))
    v1 = v1.replace_schema_metadata({schema.META_TABLE: b"events", schema.META_VERSION: b"1"})
    old = tmp_path / "old.parquet"
    pq.write_table(v1, old)
    got = report([old, runs["files"][1]], runs["bad"])
    assert got == report(runs["files"], runs["bad"])


def test_the_cli_imports_neither_pandas_nor_polars(runs):
    """pyarrow imports pandas on its first conversion when it is installed (~0.25 s of CPU and
    ~30 MiB a diff); the CLI settles that without it, never loads polars, avoids the plain
    np.unique that imports numpy.ma (~0.08 s), and pyarrow.compute (~0.03 s: the value rules'
    check of a column went through dictionary_decode, which imports it)."""
    code = ("import sys; from baseline.cli import main; rc = main(['diff', *sys.argv[1:], '--json']); "
            "print(rc, 'pandas' in sys.modules, 'polars' in sys.modules, 'numpy.ma' in sys.modules, "
            "'pyarrow.compute' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(runs["dir"]), str(runs["bad"])], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == "1 False False False False", (last, proc.stderr[-500:])
    assert json.loads(proc.stdout.strip().splitlines()[0])["bifurcation"]["errno"] == "EACCES"


def test_a_diff_of_thousands_of_paths_imports_no_numpy_ma(tmp_path):
    """Past normalize._FACTORIZE_MIN distinct paths the dictionaries are factorised by the
    compiled pass, whose first rows became an Arrow index array through pa.array, which looks
    at np.ma and so imports numpy.ma (12-20 ms of CPU a diff); the CLI imports none of it."""
    good = write_table(events("g1", 100, "/tmp/tmpa1b2c3d4", n_files=5000), tmp_path / "good.parquet", "events")
    bad = write_table(events("b1", 300, "/tmp/tmpz0x9c8v7", fail=4000, kind="failure", n_files=5000),
                      tmp_path / "bad.parquet", "events")
    code = ("import os, sys; from baseline.cli import main; rc = main(['diff', *sys.argv[1:], '--json']); "
            "print(rc, 'numpy.ma' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))")
    # (and OpenBLAS held to one thread, which would spin on the second core, unless the user
    # says otherwise)
    for given, want in ((None, "1"), ("2", "2")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        proc = subprocess.run([sys.executable, "-c", code, str(good), str(bad)], cwd=REPO, capture_output=True,
                              text=True, timeout=120, env={**env, **({"OPENBLAS_NUM_THREADS": given} if given else {})})
        last = proc.stdout.strip().splitlines()[-1]
        assert last == f"1 False {want}", (last, proc.stderr[-500:])
        assert json.loads(proc.stdout.strip().splitlines()[0])["bifurcation"]["path"] == "/data/in/part-4000.bin"


@pytest.mark.parametrize("arr", [
    pa.array([3, -1, 7], pa.int32()), pa.array(list(range(10)), pa.int64()).slice(3, 4),
    pa.array([1, 2, 3], pa.int16()), pa.array([True, False, True, True, False, False, True, False, True], pa.bool_()).slice(1),
    pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([3], pa.int32())]), pa.chunked_array([], pa.int32()),
    pa.array([1.5, 2.5], pa.float64()), pa.array([0, 5], pa.timestamp("ns", tz="UTC")),
])
def test_numpy_of_matches_arrow(arr):
    got = numpy_of(arr)
    want = arr.to_pylist()
    if pa.types.is_timestamp(arr.type):
        want = pc.cast(arr, pa.int64()).to_pylist()
    assert got.tolist() == want


def test_numpy_of_refuses_nulls():
    with pytest.raises(ValueError):
        numpy_of(pa.array([1, None]))


def test_digit_runs_match_re2_in_any_chunking(monkeypatch):
    """The numpy rewrite of ``[0-9]+`` equals RE2's on random text (multi-byte characters,
    nulls, sliced arrays, strings longer than a chunk)."""
    import baseline.run.normalize as norm

    rng = np.random.default_rng(7)
    alphabet = list("ab/_.9012345678é☃")
    for trial in range(300):
        n = int(rng.integers(0, 120))
        vals = ["".join(rng.choice(alphabet, int(rng.integers(0, 40)))) if rng.random() > 0.1 else None
                for _ in range(n)]
        arr = pa.array(vals, type=pa.string())
        if n > 3 and trial % 2:
            arr = arr.slice(int(rng.integers(0, 3)))
        monkeypatch.setattr(norm, "_DIGIT_CHUNK", int(rng.integers(1, 300)))
        want = pc.replace_substring_regex(arr, pattern="[0-9]+", replacement="<n>").to_pylist()
        assert _replace_digit_runs(arr, "<n>").to_pylist() == want, trial


def test_pack_is_the_mixed_radix_number():
    rng = np.random.default_rng(3)
    for _ in range(100):
        dims = [int(rng.integers(1, 5000)) for _ in range(int(rng.integers(1, 6)))]
        n = int(rng.integers(0, 60))
        ref = [rng.integers(0, d, n) for d in dims]
        # codes with -1 for null come with offset 1; others as they are, in narrow dtypes
        fields = [(v.astype(np.int16) - 1, d, 1) if d < 30000 and i % 2 else (v.astype(np.int32), d)
                  for i, (v, d) in enumerate(zip(ref, dims, strict=True))]
        want = np.ravel_multi_index(tuple(ref), tuple(dims)).astype(np.uint64) if n else np.zeros(0, np.uint64)
        assert _pack(fields).tolist() == want.tolist()


def test_loop_compression_of_handed_over_streams_is_the_same():
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 120))
        tok = rng.integers(0, 4, n).astype(np.uint64)
        sid = np.sort(rng.integers(0, 3, n))
        s = align.Streams(tok, sid, np.arange(n))
        a = align.compress_loops(s)
        b = align.compress_loops([align.Streams(tok.copy(), sid.copy(), np.arange(n))])
        assert a.tok.tolist() == b.tok.tolist() and a.orig.tolist() == b.orig.tolist()


@pytest.mark.parametrize("a", [np.array([3, -1, 3, 7, -1], np.int16), np.array([], np.int32),
                               np.array([2**40, 5, 2**40], np.int64), np.array([9], np.uint64)])
def test_unique_ints_is_np_unique(a):
    got = unique_ints(a)
    assert got.dtype == a.dtype and got.tolist() == np.unique(a).tolist()


@pytest.mark.parametrize(("values", "members"), [
    (np.array([3, -1, 3, 7, -1], np.int16), np.array([7, -1], np.int16)),
    (np.array([2**40, 5, 2**41], np.int64), np.array([2**41, 9, 2**41], np.int64)),  # spread: binary search
    (np.arange(100_000, dtype=np.int64), np.array([5, 99_999, 200_000])),  # narrow: lookup table
    (np.array([2**63 + 5, 1], np.uint64), np.array([2**63 + 5], np.uint64)),
    (np.array([], np.int32), np.array([1], np.int32)), (np.array([1, 2], np.int32), np.array([], np.int32)),
    (np.array(4, np.int64), np.array([4, 8])), (np.array([[1, 2], [3, 4]]), np.array([4, 1])),
    (np.array([1, 2], np.int64), np.array([2], np.uint64)),  # mixed signedness: numpy's own
    (np.array(["a", "b"]), np.array(["b"])),
])
def test_isin_is_np_isin(values, members):
    got = isin(values, members)
    want = np.isin(values, members)
    assert got.shape == want.shape and got.tolist() == want.tolist()


def test_the_differ_calls_no_numpy_set_routine_that_imports_numpy_ma():
    """np.isin's sort path, np.intersect1d and a plain np.unique import numpy.ma on first use
    (~10 ms of CPU a diff: the bench's 2 x 1M-event diff did, through one np.isin on its known
    errors); the differ goes through `isin` and `unique_ints` instead."""
    import re

    # a call with its arguments (one level of nested parentheses), over line breaks
    calls = re.compile(r"np\.(isin|in1d|intersect1d|setdiff1d|union1d|setxor1d|unique)\((?:[^()]|\([^()]*\))*\)")
    found = [f"{path.name}: {m.group(0)}" for path in sorted((REPO / "baseline" / "run").glob("*.py"))
             for m in calls.finditer(path.read_text())
             if not (m.group(1) == "unique" and "return_" in m.group(0))  # (those never look at np.ma)
             and m.group(0) != "np.isin(values, members)"]  # isin's own fallback: other dtypes
    assert not found, found


def test_columns_the_footer_describes_give_the_same_report(runs, tmp_path):
    """All-null and one-value columns are taken from the Parquet footer's statistics, not
    read: the same report as files written without statistics (every column read), and a
    file whose row groups hold different trace ids is read (no single value)."""
    want = report(runs["files"], runs["bad"])
    plain = []
    for f in [*runs["files"], runs["bad"]]:
        table = pq.read_table(f)
        out = tmp_path / f"nostats-{f.name}"
        pq.write_table(table, out, write_statistics=False)
        plain.append(out)
    assert pq.ParquetFile(plain[0]).metadata.row_group(0).column(0).statistics is None
    assert report(plain[:2], plain[2]) == want
    # two traces, one per row group: trace_id is constant within each group, not the file
    g1, _, bad = runs["frames"]
    both = pa.concat_tables([schema.conform(g1.with_columns(pl.lit("other").alias("trace_id")), "events"),
                             schema.conform(bad, "events")])
    both = both.replace_schema_metadata(pq.read_schema(runs["bad"]).metadata)  # tracebase table and version
    groups = tmp_path / "groups.parquet"
    pq.write_table(both, groups, row_group_size=g1.height)
    assert pq.ParquetFile(groups).metadata.num_row_groups == 2
    assert report(runs["files"], groups, trace_id="b1") == want
    with pytest.raises(Exception, match="expected one bad trace, found 2"):
        report(runs["files"], groups)


def test_compact_per_row_columns_read_like_arrays():
    """Prepared keeps trace key, tid and ppid once per stream (pid too when constant in every
    stream), the search-masked path key as the plain key plus its few walk rows, stream ids as
    stream starts and normalised paths through raw codes: each indexes like the full array."""
    from baseline.run.normalize import PerStream, StreamIds, prepare

    rows = {
        "trace_id": ["t"] * 9, "seq": list(range(9)), "ts_ns": [0] * 9,
        # tid 7 is reused by another process (pid 9 after pid 7): pid is not per stream then
        "tid": [7, 8, 7, 8, 7, 7, 8, 7, 7], "pid": [7, 8, 7, 8, 7, 9, 8, 9, 9], "ppid": [1, 7, 1, 7, 1, 1, 3, 1, 1],
        "comm": ["a"] * 9, "probe": ["openat", "read", "openat", "read", "openat", "openat", "close", "read", "exit"],
        "errno": ["ENOENT", None, "ENOENT", None, None, None, None, None, None],
        "path": ["/x/lib/libq.so", None, "/y/lib/libq.so", None, "/z/libq.so", "/data/1", None, None, None],
        "depth": [0] * 9, "ret": [0] * 9, "kind": ["good"] * 9,
    }
    table = schema.conform(pl.DataFrame(rows, schema_overrides={"tid": pl.Int32, "pid": pl.Int32, "ppid": pl.Int32,
                                                                "depth": pl.Int16}), "events")
    p = prepare(table, np.zeros(9, dtype=np.int64))
    order = np.asarray(p.order)
    assert isinstance(p.tid, PerStream) and isinstance(p.sid, StreamIds)
    assert np.asarray(p.tid).tolist() == np.array(rows["tid"])[order].tolist()
    assert np.asarray(p.sid).tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert not isinstance(p.pid, PerStream)  # tid 7 ran under two pids
    assert p.pid.tolist() == np.array(rows["pid"])[order].tolist()
    assert np.asarray(p.ppid).tolist() == [1] * 6 + [7] * 3  # the stream's first row's
    for idx in (np.array([5, 0, 8]), np.arange(9) % 2 == 0, slice(2, 7), 4, -1):
        for col in (p.tid, p.sid, p.tkey, p.pathkey, p.plainpath):
            assert np.array_equal(np.asarray(col)[idx], col[idx]), (col, idx)
    # the walk's first two lookups are search keys, the rest plain normalised paths
    keys = np.asarray(p.pathkey)
    assert (keys[:2] >= SEARCH_KEY_OFFSET).all() and (keys[2:] < SEARCH_KEY_OFFSET).all()
    data = int(np.flatnonzero(order == 5)[0])  # the stream row of source row 5
    assert p.value("path", 0) == "/x/lib/libq.so" and p.path_string(int(p.plainpath[data])) == "/data/<n>"
    assert p.value("comm", 3) == "a"


def test_a_process_forked_after_a_diff_reads_ahead_with_a_thread_of_its_own(runs):
    """The read-ahead thread does not survive fork(); a child diffing again must not queue its
    reads for the parent's thread (which would wait forever)."""
    import multiprocessing

    want = report(runs["files"], runs["bad"])
    ctx = multiprocessing.get_context("fork")
    # the worker starts with SIGTERM at its default, whatever handler this process has, so the
    # pool's terminate() ends it
    with ctx.Pool(1, initializer=signal.signal, initargs=(signal.SIGTERM, signal.SIG_DFL)) as pool:
        got = pool.apply_async(report, (runs["files"], runs["bad"])).get(timeout=60)
    assert got == want


def test_a_file_renamed_over_while_it_is_read_is_refused_naming_it(tmp_path):
    """The diff reads a file's footer once and its columns one by one, opening the path each
    time. A file renamed over the path in between (a writer replacing its output) was read with
    the first file's footer: columns of two files, of two lengths, and an internal error deep in
    the diff (battery 48's rename loop, 1 run in ~20). Now each read checks it opened the file
    whose footer was read, and refuses naming the path."""
    from baseline.run.traces import _File
    from tracer.errors import SchemaError

    path = write_table(events("t1", 100, "/tmp/x"), tmp_path / "moving.parquet", "events")
    other = write_table(events("t2", 200, "/tmp/y", n_files=60), tmp_path / "other.parquet", "events")
    opened = _File(path)
    assert len(opened.read("seq")) == opened.num_rows  # the file as it is: read
    os.replace(other, path)
    with pytest.raises(SchemaError) as err:
        opened.read("tid")
    assert str(err.value).startswith(f"{path}: ") and "replaced while being read" in str(err.value)
