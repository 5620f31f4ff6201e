"""Alignment and diff on synthetic traces, written as real Parquet through tracer.schema."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from baseline.run import align
from baseline.run.allowlist import Entry, ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NO_ALLOWLIST = ExpectedErrors([], source="<test>")

# A small program: dynamic loading, read an input file in a loop, write the output.
STARTUP = [
    ("execve", None, "/usr/bin/prog"),
    ("openat", None, "/etc/ld.so.cache"),
    ("openat", None, "/lib/x86_64-linux-gnu/libc.so.6"),
    ("read", None, None),
    ("mmap", None, None),
    ("close", None, None),
]
WORK = [
    ("openat", None, "/srv/data/input.txt"),
    ("newfstatat", None, None),
    *[("read", None, None)] * 4,
    ("close", None, None),
    ("openat", None, "/srv/data/out/result.txt"),
    ("write", None, None),
    ("close", None, None),
    ("exit_group", None, None),
]
PROGRAM = STARTUP + WORK


def events(seq, pid=100, tid=None, ppid=1, comm="prog"):
    """Per-thread event tuples from (probe, errno, path) triples."""
    return [(pid, tid or pid, ppid, comm, probe, errno, path) for probe, errno, path in seq]


def write_trace(path: Path, rows, trace_id: str = "t", kind: str = "good", command: str = "prog input.txt",
                interleave_seed: int | None = None) -> Path:
    """Write one trace; `rows` is a list of per-thread event lists, interleaved in order or at random."""
    streams = [list(r) for r in rows]
    merged = []
    if interleave_seed is None:
        for s in streams:
            merged += s
    else:
        rng = random.Random(interleave_seed)
        pos = [0] * len(streams)
        while any(p < len(s) for p, s in zip(pos, streams, strict=True)):
            i = rng.choice([i for i, s in enumerate(streams) if pos[i] < len(s)])
            merged.append(streams[i][pos[i]])
            pos[i] += 1
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * len(merged),
            "seq": list(range(len(merged))),
            "ts_ns": [1_000 * i for i in range(len(merged))],
            "pid": [e[0] for e in merged],
            "tid": [e[1] for e in merged],
            "ppid": [e[2] for e in merged],
            "comm": [e[3] for e in merged],
            "probe": [e[4] for e in merged],
            "depth": [0] * len(merged),
            "ret": [-1 if e[5] else 3 + (i % 7) for i, e in enumerate(merged)],
            "errno": [e[5] for e in merged],
            "path": [e[6] for e in merged],
            "kind": [kind] * len(merged),
            "command": [command] * len(merged),
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "good.parquet", [events(PROGRAM)], "good-1")


def run(good_paths, bad_path, **kw):
    kw.setdefault("expected", NO_ALLOWLIST)
    return diff_traces(good_paths if isinstance(good_paths, list) else [good_paths], bad_path, **kw)


# ------------------------------------------------------------------------------------------
# no anomaly: noise the diff must see through
# ------------------------------------------------------------------------------------------
def test_identical_trace_has_no_anomaly(tmp_path, good):
    bad = write_trace(tmp_path / "bad.parquet", [events(PROGRAM)], "bad-1")
    report = run(good, bad)
    assert not report.anomaly
    assert report.bifurcation is None
    assert report.to_dict()["anomalies"] == []


def test_pid_fd_and_temp_name_noise_is_no_anomaly(tmp_path):
    def prog(pid, tmp):
        return events(
            [*STARTUP, ("openat", None, f"/proc/{pid}/status"), ("openat", None, f"/tmp/{tmp}/scratch.0"),
             ("readlink", None, f"/proc/self/fd/{pid % 9}"), *WORK], pid=pid)

    g = write_trace(tmp_path / "g.parquet", [prog(4242, "tmpab12cd_x")], "g")
    b = write_trace(tmp_path / "b.parquet", [prog(977, "tmpzq81_k0p")], "b")
    mk = write_trace(tmp_path / "m.parquet", [prog(31337, "tmp.Xa9Zq1b2c3")], "m")
    mk2 = write_trace(tmp_path / "m2.parquet", [prog(5, "tmp.P0o9I8u7Y6")], "m2")
    assert not run(g, b).anomaly
    assert not run(mk, mk2).anomaly


def test_interleaved_threads_and_child_processes_are_no_anomaly(tmp_path):
    worker = [("futex", None, None), ("read", None, None), ("write", None, None)] * 3
    child = [("execve", None, "/usr/bin/gzip"), ("read", None, None), ("write", None, None), ("exit_group", None, None)]

    def trace(path, base, seed):
        main = events(PROGRAM, pid=base)
        t1 = events(worker, pid=base, tid=base + 1)
        t2 = events(worker[:-1] + [("exit", None, None)], pid=base, tid=base + 2)
        kid = events(child, pid=base + 5, ppid=base, comm="gzip")
        return write_trace(path, [main, t1, t2, kid], path.stem, interleave_seed=seed)

    g = trace(tmp_path / "g.parquet", 100, 1)
    b = trace(tmp_path / "b.parquet", 7000, 99)
    report = run(g, b)
    assert not report.anomaly, report.render_text()


def test_different_loop_counts_are_no_anomaly(tmp_path):
    def prog(n_reads, n_polls):
        body = [("openat", None, "/srv/data/input.txt")] + [("read", None, None)] * n_reads
        body += [("poll", None, None), ("recvfrom", None, None)] * n_polls + [("close", None, None), ("exit_group", None, None)]
        return events(STARTUP + body)

    g = write_trace(tmp_path / "g.parquet", [prog(3, 2)], "g")
    b = write_trace(tmp_path / "b.parquet", [prog(11, 9)], "b")
    assert not run(g, b).anomaly


def test_search_path_walks_of_different_length_are_no_anomaly(tmp_path):
    def prog(dirs):
        walk = [("openat", "ENOENT", f"{d}/libfoo.so.1") for d in dirs]
        return events(STARTUP + walk + [("openat", None, "/usr/lib/libfoo.so.1")] + WORK)

    g = write_trace(tmp_path / "g.parquet", [prog(["/opt/a/lib", "/opt/b/lib"])], "g")
    b = write_trace(tmp_path / "b.parquet", [prog(["/home/u/lib", "/tmp/x", "/opt/c/lib64", "/opt/d"])], "b")
    report = run(g, b, learn=True)
    assert not report.anomaly, report.render_text()


# ------------------------------------------------------------------------------------------
# anomalies
# ------------------------------------------------------------------------------------------
def test_inserted_error_is_the_bifurcation_with_context(tmp_path, good):
    i = PROGRAM.index(("openat", None, "/srv/data/input.txt"))
    failing = PROGRAM[:i] + [("openat", "EACCES", "/srv/data/input.txt"), ("write", None, None), ("exit_group", None, None)]
    bad = write_trace(tmp_path / "bad.parquet", [events(failing, pid=555)], "bad-1", kind="failure")
    report = run(good, bad)
    assert report.anomaly
    b = report.bifurcation
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "EACCES", "/srv/data/input.txt")
    assert b["position"] == i
    assert b["process"]["pid"] == 555 and b["process"]["role"] == "prog#0"
    assert not b["recovered"]
    # mmap (i - 2) is allocator noise and left out of the streams.
    assert [e["probe"] for e in b["last_common"]] == ["openat", "read", "close"]
    assert [e["seq"] for e in b["last_common"]] == [i - 4, i - 3, i - 1]
    instead = b["good_instead"]
    assert (instead[0]["probe"], instead[0]["path"], instead[0]["errno"]) == ("openat", "/srv/data/input.txt", None)
    assert instead[0]["trace_id"] == "good-1"
    assert [e["probe"] for e in instead] == ["openat", "newfstatat", "read"]


def test_good_instead_in_a_loop_is_the_same_call(tmp_path):
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    body = [c for n in names for c in (("openat", None, f"/srv/in/{n}.dat"), ("read", None, None), ("close", None, None))]
    g = write_trace(tmp_path / "g.parquet", [events(STARTUP + body + [("exit_group", None, None)])], "g")
    i = body.index(("openat", None, "/srv/in/delta.dat"))
    bad_body = body[:i] + [("openat", "EACCES", "/srv/in/delta.dat"), ("write", None, None)] + body[i + 3 :]
    b = write_trace(tmp_path / "b.parquet", [events(STARTUP + bad_body + [("exit_group", None, None)])], "b")
    bif = run(g, b).bifurcation
    assert (bif["errno"], bif["path"]) == ("EACCES", "/srv/in/delta.dat")
    assert bif["good_instead"][0]["path"] == "/srv/in/delta.dat"
    assert bif["last_common"][-1]["probe"] == "close"


def test_substituted_path_is_an_error_free_bifurcation(tmp_path, good):
    i = PROGRAM.index(("openat", None, "/srv/data/out/result.txt"))
    other = list(PROGRAM)
    other[i] = ("openat", None, "/srv/data/quarantine/result.txt")
    bad = write_trace(tmp_path / "bad.parquet", [events(other)], "bad-1")
    b = run(good, bad).bifurcation
    assert b is not None
    assert b["errno"] is None and b["kind"] == "divergence"
    assert (b["probe"], b["path"], b["position"]) == ("openat", "/srv/data/quarantine/result.txt", i)
    assert b["good_instead"][0]["path"] == "/srv/data/out/result.txt"


def test_thread_stopping_early_is_reported_at_its_end(tmp_path, good):
    bad = write_trace(tmp_path / "bad.parquet", [events(PROGRAM[:-4])], "bad-1")
    b = run(good, bad).bifurcation
    assert b["probe"] == "(end of thread)"
    assert b["good_instead"][0]["probe"] == "openat"


def test_expected_errors_are_ignored_and_counted(tmp_path):
    probe_rdma = [("openat", "ENOENT", "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/rx_write")]
    retry = [("recvfrom", "EAGAIN", None)]
    g = write_trace(tmp_path / "g.parquet", [events(STARTUP + retry + WORK)], "g")
    b = write_trace(tmp_path / "b.parquet", [events(STARTUP + probe_rdma * 2 + retry * 3 + WORK)], "b")
    curated = ExpectedErrors(
        [Entry(id="rdma", source="curated", reason="disabled feature", probe="*", errno="ENOENT",
               path="/sys/class/infiniband/**")]
    )
    report = run(g, b, expected=curated, learn=True)
    assert not report.anomaly, report.render_text()
    ign = report.expected_ignored
    assert ign["total"] == 5
    assert ign["by_entry"]["rdma"]["count"] == 2
    learned = [v for v in ign["by_entry"].values() if v["source"] == "learned"]
    assert learned == [{"count": 3, "source": "learned", "probe": "recvfrom", "errno": "EAGAIN", "path": None,
                        "context": "prog"}]
    # Without learning and without the allowlist both errors are anomalies.
    plain = run(g, b, learn=False)
    assert plain.anomaly and plain.bifurcation["errno"] in ("ENOENT", "EAGAIN")


def test_repo_allowlist_is_the_default(tmp_path):
    g = write_trace(tmp_path / "g.parquet", [events(PROGRAM)], "g")
    b = write_trace(tmp_path / "b.parquet", [events(STARTUP + [("ioctl", "ENOTTY", None)] + WORK)], "b")
    report = diff_traces([g], b)  # expected=None: the repo's expected_errors.yaml
    assert not report.anomaly
    assert report.expected_ignored["by_entry"]["curated-enotty-isatty"]["count"] == 1


def test_multiple_good_runs_with_different_branches_each_explain(tmp_path):
    branch_a = STARTUP + [("openat", None, "/etc/prog/config.yaml"), ("read", None, None)] + WORK
    branch_b = STARTUP + [("openat", "ENOENT", "/etc/prog/config.yaml"), ("openat", None, "/usr/share/prog/defaults.yaml"),
                          ("read", None, None)] + WORK
    ga = write_trace(tmp_path / "ga.parquet", [events(branch_a)], "ga")
    gb = write_trace(tmp_path / "gb.parquet", [events(branch_b)], "gb")
    for name, prog in (("a", branch_a), ("b", branch_b)):
        bad = write_trace(tmp_path / f"bad-{name}.parquet", [events(prog, pid=999)], f"bad-{name}")
        assert not run([ga, gb], bad).anomaly, name
    # A third branch neither good run took is a divergence.
    branch_c = STARTUP + [("openat", None, "/home/u/.prog.yaml"), ("read", None, None)] + WORK
    bc = write_trace(tmp_path / "bad-c.parquet", [events(branch_c)], "bad-c")
    b = run([ga, gb], bc).bifurcation
    assert (b["path"], b["errno"]) == ("/home/u/.prog.yaml", None)


def test_injected_hard_error_outranks_earlier_routine_enoent(tmp_path, good):
    i = PROGRAM.index(("openat", None, "/srv/data/out/result.txt"))
    bad_prog = (STARTUP[:1] + [("newfstatat", "ENOENT", "/home/u/.cache/prog")] + PROGRAM[1:i]
                + [("openat", "EROFS", "/srv/data/out/result.txt"), ("write", None, None), ("exit_group", None, None)])
    bad = write_trace(tmp_path / "bad.parquet", [events(bad_prog)], "bad-1")
    report = run(good, bad)
    assert report.anomaly_count == 2
    top, second = report.anomalies
    assert (top["errno"], top["path"]) == ("EROFS", "/srv/data/out/result.txt")
    assert (second["errno"], second["recovered"]) == ("ENOENT", True)
    assert report.first_unexplained == second["position"] < top["position"]


def test_unrecovered_divergence_outranks_recovered_soft_error(tmp_path, good):
    corrupt = (STARTUP[:1] + [("newfstatat", "ENOENT", "/home/u/.cache/prog")] + STARTUP[1:]
               + [("openat", None, "/srv/data/input.txt"), ("newfstatat", None, None), ("read", None, None),
                  ("openat", None, "/usr/share/prog/recovery.txt"), ("write", None, None), ("exit_group", None, None)])
    bad = write_trace(tmp_path / "bad.parquet", [events(corrupt)], "bad-1")
    report = run(good, bad)
    top = report.bifurcation
    assert top["errno"] is None and not top["recovered"]
    assert top["path"] == "/usr/share/prog/recovery.txt"
    assert report.anomalies[1]["errno"] == "ENOENT"


def test_reordered_known_events_are_not_an_anomaly(tmp_path, good):
    i = PROGRAM.index(("newfstatat", None, None))
    swapped = list(PROGRAM)
    swapped[i - 1], swapped[i] = swapped[i], swapped[i - 1]  # fstat before openat: timing-like
    bad = write_trace(tmp_path / "bad.parquet", [events(swapped)], "bad-1")
    report = run(good, bad)
    assert not report.anomaly and report.bifurcation is None
    assert report.reorderings and report.reorderings[0]["kind"] == "reordering"


def test_allocator_and_signal_noise_is_ignored_but_its_errors_are_not(tmp_path, good):
    noisy = STARTUP[:3] + [("brk", None, None), ("futex", None, None), ("rt_sigreturn", None, None)] + STARTUP[3:] + WORK
    bad = write_trace(tmp_path / "bad.parquet", [events(noisy)], "bad-1")
    assert not run(good, bad).anomaly
    failing = STARTUP + [("mmap", "ENOMEM", None)] + WORK
    bad2 = write_trace(tmp_path / "bad2.parquet", [events(failing)], "bad-2")
    assert run(good, bad2).bifurcation["errno"] == "ENOMEM"


def test_new_child_process_is_an_anomaly(tmp_path, good):
    helper = events([("execve", None, "/usr/bin/curl"), ("connect", None, None), ("exit_group", None, None)],
                    pid=300, ppid=100, comm="curl")
    bad = write_trace(tmp_path / "bad.parquet", [events(PROGRAM), helper], "bad-1")
    b = run(good, bad).bifurcation
    assert b["process"]["comm"] == "curl" and b["probe"] == "execve"


def test_missing_child_process_is_an_anomaly(tmp_path):
    kid = events([("execve", None, "/usr/bin/gzip"), ("exit_group", None, None)], pid=300, ppid=100, comm="gzip")
    g = write_trace(tmp_path / "g.parquet", [events(PROGRAM), kid], "g")
    b = write_trace(tmp_path / "b.parquet", [events(PROGRAM)], "b")
    report = run(g, b)
    assert report.anomaly
    assert any(a["kind"] == "missing_process" and a["process"]["role"] == "prog/gzip" for a in report.anomalies)


# ------------------------------------------------------------------------------------------
# the numpy core on its own
# ------------------------------------------------------------------------------------------
def _streams(*seqs):
    tok = np.concatenate([np.asarray(s, dtype=np.uint64) for s in seqs])
    sid = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(seqs)])
    return align.Streams(tok, sid, np.arange(len(tok), dtype=np.int64))


def test_compress_loops_collapses_repeated_ngrams_within_streams():
    s = align.compress_loops(_streams([1, 2, 3, 3, 3, 4, 5, 4, 5, 4, 5, 6], [6, 6, 7]))
    assert s.tok.tolist() == [1, 2, 3, 4, 5, 6, 6, 7]
    assert s.sid.tolist() == [0, 0, 0, 0, 0, 0, 1, 1]
    # A single occurrence of a would-be loop body stays (not a repetition).
    assert align.compress_loops(_streams([1, 2, 1, 3])).tok.tolist() == [1, 2, 1, 3]


def test_divergence_regions_merge_within_k_and_split_streams():
    s = _streams([1] * 10, [2] * 4)
    explained = np.ones(14, dtype=bool)
    explained[[2, 4, 9, 10]] = False  # 2 and 4 merge (gap 1 < k=3); 9 | 10 cross a stream boundary
    r = align.divergence_regions(s, explained, k=3)
    assert r.start.tolist() == [2, 9, 10]
    assert r.end.tolist() == [4, 9, 10]
    assert r.sid.tolist() == [0, 0, 1]


def test_seen_in_is_exact_membership_on_64_bits():
    rng = np.random.default_rng(7)
    model = rng.integers(0, 2**64, size=5000, dtype=np.uint64)
    values = np.concatenate([model[::3], rng.integers(0, 2**64, size=4000, dtype=np.uint64),
                             model[:10] ^ np.uint64(1)])  # differ in the lowest bit only
    rng.shuffle(values)
    assert (align.seen_in(values, model) == np.isin(values, model)).all()
    assert not align.seen_in(values[:0], model).size and not align.seen_in(values, model[:0]).any()


def test_window_hashes_pad_each_stream_start():
    s = align.Streams(np.array([5, 6, 7, 5, 6, 7], dtype=np.uint64), np.array([0, 0, 0, 1, 1, 1]),
                      np.arange(6))
    h = align.window_hashes(s, np.zeros(2, dtype=np.uint64), 2)
    assert (h[:3] == h[3:]).all() and len(set(h[:3].tolist())) == 3


def test_compaction_in_place_equals_a_gather_across_blocks():
    rng = np.random.default_rng(3)
    n = 3 * align._BLOCK + 11
    keep = rng.random(n) < 0.7
    keep[: align._BLOCK] = True  # a whole block kept, then sparser ones
    keep[2 * align._BLOCK : 2 * align._BLOCK + 1000] = False
    for dtype in (np.uint64, np.int32, np.int16):
        a = rng.integers(0, 30000, size=n).astype(dtype)
        want = a[keep]
        got = align._compact(a, keep)
        assert got.dtype == dtype and (got == want).all()


def test_compress_loops_handed_over_equals_compress_loops_on_a_copy():
    # the owned path compacts in place; the borrowed one gathers: same streams either way
    rng = np.random.default_rng(4)
    n = 2 * align._BLOCK + 77
    tok = rng.integers(0, 3, size=n).astype(np.uint64)  # short loops everywhere
    sid = np.sort(rng.integers(0, 40, size=n)).astype(np.int16)
    orig = np.arange(n, dtype=np.int32)
    borrowed = align.compress_loops(align.Streams(tok, sid, orig))
    owned = align.compress_loops([align.Streams(tok.copy(), sid.copy(), orig.copy())])
    for name in ("tok", "sid", "orig"):
        assert (getattr(owned, name) == getattr(borrowed, name)).all()


def test_end_slots_left_by_the_caller_equal_with_end_tokens(tmp_path):
    """baseline diff packs its tokens with the END slots already in place (row -1): the
    streams must equal align.with_end_tokens of the streams without them."""
    from baseline.run.normalize import prepare
    from tracer.schema import conform

    rng = np.random.default_rng(6)
    n = align._BLOCK + 5000  # two token blocks
    probes = ["openat", "read", "close", "futex", "ibv_reg_mr", "ibv_create_qp"]
    errnos = [None, None, None, "ENOENT", "EAGAIN", "EINVAL"]
    df = pl.DataFrame({
        "trace_id": ["t"] * n, "tid": rng.integers(1, 9, size=n), "pid": [1] * n,
        "ppid": [None] * n, "comm": ["prog"] * n,
        "probe": [probes[i] for i in rng.integers(0, len(probes), size=n)],
        "errno": [errnos[i] for i in rng.integers(0, len(errnos), size=n)],
        "path": [f"/data/f{i}" if i % 3 else None for i in rng.integers(0, 500, size=n)],
    }).with_columns(pl.int_range(0, n).alias("seq"), pl.lit(0).alias("ts_ns"), pl.lit(0).alias("depth"),
                    pl.lit(0).alias("ret"), pl.lit("good").alias("kind"))
    p = prepare(conform(df, "events"), np.zeros(n, dtype=np.int64))
    keep = np.flatnonzero(rng.random(n) < 0.8).astype(np.int32)
    sid = np.asarray(p.sid)[keep].astype(np.int16)
    open_end = np.zeros(int(sid.max()) + 1, dtype=bool)
    open_end[2] = True  # a cut-off thread: no END
    want = align.with_end_tokens(align.Streams(p.tokens(keep), sid, keep), open_end)
    pos = align.end_slots(sid, open_end)
    orig = np.insert(keep, pos, -1)
    got = align.Streams(p.tokens(orig, end=align.END), np.insert(sid, pos, sid[pos - 1]), orig)
    assert len(pos) == int(sid.max())  # every stream but the open one
    for name in ("tok", "sid", "orig"):
        assert (getattr(got, name) == getattr(want, name)).all()


def test_window_hashes_across_blocks_equal_the_whole_array_at_once():
    # streams of many lengths (a few longer than a block), hashed all at once by the definition:
    # the k tokens ending at each position, oldest first, PAD before the stream's start
    rng = np.random.default_rng(9)
    lengths = [1, 2, 5, align._BLOCK + 3, 17, align._BLOCK // 2, 1, 40_000]
    sid = np.repeat(np.arange(len(lengths)), lengths)
    tok = rng.integers(0, 50, size=len(sid)).astype(np.uint64)
    role_hash = rng.integers(0, 2**63, size=len(lengths)).astype(np.uint64)
    pos = np.concatenate([np.arange(m) for m in lengths])
    for k in (1, 4):
        want = role_hash[sid].copy()
        for j in range(k):
            t = np.full(len(tok), align.PAD, dtype=np.uint64)
            t[j:] = tok[: len(tok) - j]
            t[pos < j] = align.PAD
            want = align._mix(want ^ t)
        got = align.window_hashes(align.Streams(tok, sid, np.arange(len(tok))), role_hash, k)
        assert (got == want).all()


def test_seen_in_across_blocks_equals_isin():
    rng = np.random.default_rng(10)
    model = rng.integers(0, 2**64 - 1, size=50_000, dtype=np.uint64)
    values = np.concatenate([rng.choice(model, size=align._BLOCK), rng.integers(0, 2**64 - 1, size=align._BLOCK + 9,
                                                                                   dtype=np.uint64)])
    rng.shuffle(values)
    assert (align.seen_in(values, model) == np.isin(values, model)).all()


def test_a_regions_max_is_over_its_own_positions():
    # np.maximum.reduceat over the starts alone ran on past a region's end, into events outside
    # every region (a worker thread cut off by its process's exit, whose region was dropped):
    # xz -T2's main thread's read/write interleaving, a reordering, took the workers' cut-off
    # ends for novel events of its own and was named in good-vs-good diffs under load
    regions = align.Regions(np.array([2, 7]), np.array([3, 7]), np.array([0, 1]))
    flags = np.zeros(10, dtype=bool)
    flags[5] = flags[9] = True  # outside both regions
    assert regions.max_over(flags).tolist() == [False, False]
    flags[3] = True
    assert regions.max_over(flags).tolist() == [True, False]
    levels = np.array([0, 4, 1, 2, 0, 4, 0, 1, 0, 4], dtype=np.int8)
    assert regions.max_over(levels).tolist() == [2, 1] and regions.max_over(levels).dtype == np.int8
    # adjacent regions, one at the very end
    regions = align.Regions(np.array([0, 4, 9]), np.array([3, 8, 9]), np.array([0, 0, 1]))
    assert regions.max_over(levels).tolist() == [4, 4, 4]
    assert regions.max_over(levels == 1).tolist() == [True, True, False]


def test_split_between_outcome_changes_is_linear_in_marks_per_region():
    """A region is split only where the thread re-joined the good runs between two outcome
    changes; 100,000 regions over 2M positions with 200,000 marks are answered by binary search
    per region (the filter of every mark per region took over a minute)."""
    import time

    from baseline.run.align import Regions, split_between_outcome_changes

    explained = np.array([0, 0, 1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
    changes = np.array([0, 1, 0, 0, 0, 1, 0, 0, 1, 0], dtype=bool)
    regions = Regions(np.array([0]), np.array([9]), np.array([3]))
    out, split = split_between_outcome_changes(regions, explained, changes)
    # re-joined at 2-3 between the marks 1 and 5, and at 7 between 5 and 8
    assert (out.start.tolist(), out.end.tolist(), out.sid.tolist(), split.tolist()) == (
        [0, 4, 8], [1, 6, 9], [3, 3, 3], [True, True, False])

    n = 2_000_000
    explained = np.zeros(n, dtype=bool)
    explained[5::20] = True
    changes = np.zeros(n, dtype=bool)
    changes[2::20] = True
    changes[8::20] = True
    starts = np.arange(0, n - 20, 20)
    regions = Regions(starts, starts + 10, np.zeros(len(starts), dtype=np.int64))
    began = time.process_time()
    out, split = split_between_outcome_changes(regions, explained, changes)
    took = time.process_time() - began
    assert len(out) == 2 * len(regions) and split.sum() == len(regions)
    assert took < 30, f"{took:.1f} CPU s"


def test_a_walk_turn_followed_by_an_eventfd_wakeup_is_still_a_walk_turn(tmp_path):
    """node's module resolution looks for package.json in each ancestor directory (ENOENT each);
    a libuv worker's eventfd write (no path) landing between two turns made the turn before it
    look like the walk's last, kept at its path and named (real set 75's node worker threads:
    1 in 5-10 good-vs-good diffs)."""
    walk = [("openat", "ENOENT", "/srv/app/lib/package.json"), ("openat", "ENOENT", "/srv/app/package.json"),
            ("openat", "ENOENT", "/srv/package.json"), ("openat", "ENOENT", "/package.json"),
            ("openat", None, "/srv/app/lib/pool.js"), ("read", None, "/srv/app/lib/pool.js")]
    wake = ("write", None, None)
    plain = STARTUP + walk + WORK
    woken = STARTUP + walk[:2] + [wake] + walk[2:] + WORK
    goods = [write_trace(tmp_path / f"g{i}.parquet", [events(plain, pid=100 + i)], trace_id=f"g{i}") for i in range(2)]
    bad = write_trace(tmp_path / "b.parquet", [events(woken, pid=200)], trace_id="b", kind="good")
    report = diff_traces(good=goods, bad=bad)
    assert not report.anomaly, report.bifurcation
