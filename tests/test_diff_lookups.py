"""The differ's rules that look for a few rows among two million through lookup tables over
the codes (diffwall22): `view_in`, `_probe_misses`' call sites, `_cache_misses_filled`'s fills
in the rows right after its misses and `_listing_twins`' good paths. Each is checked against
the whole-table definition it replaced, on random tables whose names come from the RDMA
reference (/work/shared/reference/rdma_control_path.yaml: device nodes, sysfs attributes)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from baseline.run import normalize
from baseline.run.normalize import Recoded, code_in, prepare, unique_ints, view_in
from baseline.run.rules import base, files, retries
from tracer.schema import conform

# The reference's device files and attributes (uverbs char devices, the ib_core sysfs tree)
NAMES = ["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1", "/dev/infiniband/uverbs2", "/dev/infiniband/rdma_cm",
         "/sys/class/infiniband/mlx5_0/ports/1/gids/0", "/sys/class/infiniband/mlx5_0/ports/1/state",
         "/sys/class/infiniband/mlx5_1/node_guid", "/sys/class/infiniband_verbs/abi_version",
         "/var/cache/ibv/__pycache__/mlx5.cpython-311.pyc", "/var/cache/ibv/mlx5.tmp"]


@pytest.mark.parametrize("n", [50, 20_000])  # below and above the compiled take's threshold
@pytest.mark.parametrize("code_type", [np.int16, np.int32])
def test_view_in_through_a_recoded_view_is_code_in_of_its_codes(n, code_type):
    rng = np.random.default_rng(n)
    n_values = 40
    table = rng.integers(-1, n_values, size=300).astype(np.int32)  # some raw values without a code
    codes = rng.integers(-1, len(table), size=n).astype(code_type)
    view = Recoded(codes, table)
    plain = np.where(codes >= 0, table[np.maximum(codes, 0)], -1)
    for members in ([], [0], [n_values - 1], rng.integers(0, n_values, size=7).tolist(), list(range(n_values))):
        want = np.isin(plain, members) & (plain >= 0)
        got = view_in(view, np.array(members, dtype=np.int32), n_values)
        assert got.dtype == bool and (got == want).all()
        assert (view_in(plain, members, n_values) == want).all()  # a plain column: code_in
        assert (code_in(plain, members, n_values) == want).all()


def _table(rng: np.random.Generator, n: int, n_threads: int, miss_share: float) -> pl.DataFrame:
    """Random opens, stats and renames of the reference's names: misses (ENOENT, ENOTDIR),
    successes, a hard error now and then, O_CREAT opens and renames onto the names."""
    probes = np.array(["openat", "openat", "newfstatat", "rename", "read", "futex"])
    probe = probes[rng.integers(0, len(probes), size=n)]
    miss = rng.random(n) < miss_share
    errno = np.where(miss, np.where(rng.random(n) < 0.8, "ENOENT", "ENOTDIR"), None).astype(object)
    errno[rng.random(n) < 0.01] = "EACCES"
    errno[probe == "futex"] = None
    name = rng.integers(0, len(NAMES), size=n)
    path = np.array(NAMES, dtype=object)[name]
    path[np.isin(probe, ["read", "futex"])] = None
    # a member of a numbered family (uverbs<n>) at a raw path of its own
    fam = path == "/dev/infiniband/uverbs2"
    path[fam] = [f"/dev/infiniband/uverbs{k}" for k in rng.integers(0, 6, size=int(fam.sum()))]
    arg = np.where(probe == "openat", np.where(rng.random(n) < 0.3, "O_WRONLY|O_CREAT", "O_RDONLY"), None).astype(object)
    path2 = np.where(probe == "rename", np.array(NAMES, dtype=object)[rng.integers(0, len(NAMES), size=n)], None)
    return pl.DataFrame({
        "trace_id": ["t"] * n, "tid": rng.integers(1, n_threads + 1, size=n), "pid": [1] * n, "ppid": [None] * n,
        "comm": ["ibv_devinfo"] * n, "probe": probe.tolist(), "errno": errno.tolist(), "path": path.tolist(),
        "arg": arg.tolist(), "path2": path2.tolist(),
    }).with_columns(pl.int_range(0, n).alias("seq"), pl.lit(0).alias("ts_ns"), pl.lit(0).alias("depth"),
                    pl.lit(0).alias("ret"), pl.lit("good").alias("kind"))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("miss_share", [0.002, 0.3])  # few misses (the windows) and many (every row)
def test_cache_fills_found_near_the_misses_are_those_of_every_row(seed, miss_share):
    rng = np.random.default_rng(seed)
    n = 30_000
    p = prepare(conform(_table(rng, n, 3, miss_share), "events"), np.zeros(n, dtype=np.int64))
    no_good_calls = np.zeros(0, dtype=np.int64)
    got = files._cache_misses_filled(p, no_good_calls)
    # the definition: every fill of the table, the first within CACHE_FILL_ROWS after a miss
    # in its thread, a fill of the miss's path near it
    enoent = normalize.codes_where(p.errno_values, ("ENOENT",))
    opens = normalize.codes_where(p.probe_values, files.CREATE_PROBES)
    publish = normalize.codes_where(p.probe_values, files.PUBLISH_PROBES)
    creating = normalize.codes_where(p.narg_values, lambda v: "O_CREAT" in v)
    fills = np.flatnonzero((np.asarray(p.errno) < 0) & (
        code_in(p.probe, publish, len(p.probe_values))
        | (code_in(p.probe, opens, len(p.probe_values)) & code_in(np.asarray(p.narg), creating, len(p.narg_values)))))
    misses = np.flatnonzero(code_in(p.errno, enoent, len(p.errno_values)) & code_in(p.probe, opens, len(p.probe_values))
                            & ~code_in(np.asarray(p.narg), creating, len(p.narg_values)) & (np.asarray(p.raw_path) >= 0))
    sid = np.asarray(p.sid)
    want = []
    for c in misses.tolist():
        later = fills[(fills > c) & (fills <= c + files.CACHE_FILL_ROWS)]
        if not len(later) or sid[later[0]] != sid[c]:
            continue
        wanted = p.value("path", c)
        for r in later[sid[later] == sid[c]].tolist():
            moved = p.probe_values[int(p.probe[r])] in files.PUBLISH_PROBES
            if (p.value("path2", r) if moved else p.value("path", r)) == wanted:
                want.append(c)
                break
    assert got.tolist() == want
    assert len(want) > 0  # the tables do have misses their thread fills


@pytest.mark.parametrize("seed", range(6))
def test_probe_misses_and_listing_twins_are_their_whole_table_definitions(seed):
    rng = np.random.default_rng(100 + seed)
    n = 30_000
    good, bad = _table(rng, n, 4, 0.05), _table(rng, n, 4, 0.05)
    bad = bad.with_columns(pl.col("path").str.replace("node_guid", "node_desc"), pl.lit("b").alias("trace_id"))
    tkey = np.r_[np.full(n, -1), np.zeros(n)].astype(np.int64)
    p = prepare(conform(pl.concat([bad, good]), "events"), tkey)
    nb = int(np.count_nonzero(np.asarray(p.tkey) < 0))
    plain = np.asarray(p.plainpath).astype(np.int64)
    err_rows = np.flatnonzero((np.asarray(p.errno) >= 0) & (plain >= 0))
    # _probe_misses: the rows at the candidates' call sites, from the keys of every row of
    # their probes (its definition before the lookup tables)
    miss_codes = normalize.codes_where(p.errno_values, retries.PROBE_MISS_ERRNOS)
    cand = err_rows[code_in(p.errno[err_rows], miss_codes, len(p.errno_values))]
    rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values)))
    rows = rows[plain[rows] >= 0]
    sites = rows[np.isin(base._call_keys(p, rows), base._call_keys(p, cand))]
    lut_rows = np.flatnonzero(code_in(p.probe, p.probe[cand], len(p.probe_values))
                              & view_in(p.plainpath, p.plainpath[cand], len(p.npath_values)))
    assert sites.tolist() == lut_rows[np.isin(base._call_keys(p, lut_rows), base._call_keys(p, cand))].tolist()
    assert len(sites) > len(cand) > 0
    probed = retries._probe_misses(p, err_rows)
    assert probed.dtype == bool and len(probed) == len(p)
    # _listing_twins' candidates: bad rows at a plain path no good row has
    good_paths = unique_ints(plain[nb:][plain[nb:] >= 0])
    want_cand = np.flatnonzero(plain[:nb] >= 0)
    want_cand = want_cand[~np.isin(plain[want_cand], good_paths)]
    assert len(want_cand) > 0  # node_desc is the bad run's alone
    assert base._paths_new_to_bad(np.asarray(p.plainpath), nb, len(p.npath_values)).tolist() == want_cand.tolist()
    assert base._paths_new_to_bad(plain, nb, len(p.npath_values)).tolist() == want_cand.tolist()  # int64 codes
    twins = files._listing_twins(p, nb)
    assert not twins[nb:].any()
    assert set(np.flatnonzero(twins).tolist()) <= set(want_cand.tolist())
