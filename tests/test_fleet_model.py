"""GoodTraceBaseline: sklearn conventions, streaming fit, explanation of frames, save/load."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from sklearn.base import clone

from baseline.fleet.model import MODEL_VERSION, GoodTraceBaseline, NotFittedError, fit_baseline
from tracer.errnos import errno_number
from tracer.errors import TracebaseError
from tracer.schema import partition_path, write_table

T0 = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)

# reg_mr as the fleet tracer sees it: (depth, probe, layer)
REG_MR = [
    (0, "ib_uverbs_reg_mr", "uverbs"),
    (1, "mlx5_ib_reg_user_mr", "driver"),
    (2, "ib_umem_get_peer", "core"),
    (3, "__ib_umem_get", "core"),
    (2, "reg_create", "driver"),
]
REG_MR_PEER = [
    (0, "ib_uverbs_reg_mr", "uverbs"),
    (1, "mlx5_ib_reg_user_mr", "driver"),
    (2, "ib_umem_get_peer", "core"),
    (3, "__ib_umem_get", "core"),
    (4, "ib_peer_umem_get", "peer-mem"),
]


def trace_rows(
    trace_id: str,
    operation: str,
    frames: list[tuple],
    *,
    errnos: dict[int, str] | None = None,
    kind: str = "good",
    host: str = "h1",
    job: str = "j1",
    start: dt.datetime = T0,
) -> list[dict]:
    """Rows of one trace; errnos maps frame index -> errno name."""
    errnos = errnos or {}
    root_errno = errnos.get(0)
    rows = []
    for seq, (depth, probe, layer) in enumerate(frames):
        err = errnos.get(seq)
        rows.append(
            {
                "trace_id": trace_id, "seq": seq, "ts_ns": 1000 + seq, "probe": probe, "layer": layer,
                "depth": depth, "ret": -errno_number(err) if err else 0, "errno": err,
                "kind": kind, "command": operation,
                "exit_status": -errno_number(root_errno) if root_errno else 0,
                "start_time": start, "end_time": start + dt.timedelta(milliseconds=5),
                "host": host, "job_id": job,
            }
        )
    return rows


def good_fleet(n: int = 40) -> list[dict]:
    rows: list[dict] = []
    for i in range(n):
        host = f"h{i % 8}"
        rows += trace_rows(f"{host}:g{i}", "reg_mr", REG_MR, host=host, job=f"j{i % 5}",
                           start=T0 + dt.timedelta(minutes=i))
        if i % 4 == 0:  # GPU-direct registrations: EFAULT from pinning, peer memory takes over
            rows += trace_rows(f"{host}:p{i}", "reg_mr", REG_MR_PEER, errnos={3: "EFAULT"}, host=host,
                               start=T0 + dt.timedelta(minutes=i, seconds=1))
    return rows


def events_frame(rows: list[dict]) -> pl.DataFrame:
    from tracer.schema import conform

    return pl.from_arrow(conform(pl.DataFrame(rows, infer_schema_length=None), "events"))


def write_dataset(root, rows: list[dict]) -> None:
    df = events_frame(rows)
    for (date, host), part in df.group_by(
        pl.col("start_time").dt.date().cast(pl.String).alias("d"), "host"
    ):
        write_table(part, partition_path(root, "events", date, host, "part-0.parquet"), "events")


@pytest.fixture(scope="module")
def fitted() -> GoodTraceBaseline:
    return GoodTraceBaseline().fit(events_frame(good_fleet()))


def test_params_are_sklearn_cloneable():
    model = GoodTraceBaseline(min_support=3, batch_rows=10)
    copy = clone(model)
    assert copy is not model
    assert copy.get_params() == {"min_support": 3, "good_kinds": ("good",), "batch_rows": 10}
    assert not hasattr(copy, "edges_")
    with pytest.raises(ValueError, match="invalid parameter"):
        model.set_params(nope=1)


def test_use_before_fit_says_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        GoodTraceBaseline().predict(events_frame(good_fleet(2)))


def test_fit_learns_operations_edges_and_handled_errors(fitted):
    ops = fitted.operations_.row(0, named=True)
    assert ops["operation"] == "reg_mr" and ops["traces"] == 50 and ops["hosts"] == 8
    assert fitted.n_events_ == 40 * 5 + 10 * 5
    assert fitted.errors_.filter(pl.col("probe") == "__ib_umem_get")["errno"].to_list() == ["EFAULT"]
    assert fitted.chains_.height == 2
    assert sorted(fitted.chains_["count"].to_list()) == [10, 40]


def test_known_traces_score_normal_and_divergent_ones_do_not(fitted):
    rows = trace_rows("x:ok", "reg_mr", REG_MR)
    # EFAULT at every layer: the peer path itself fails
    rows += trace_rows("x:bad", "reg_mr", REG_MR_PEER, kind="failure",
                       errnos={0: "EFAULT", 1: "EFAULT", 2: "EFAULT", 3: "EFAULT", 4: "EFAULT"})
    # a path never taken by good traces
    rows += trace_rows("x:div", "reg_mr", REG_MR[:4] + [(2, "nv_peer_mem_get_pages", "peer-mem")])
    X = events_frame(rows)
    scores = fitted.trace_scores(X)
    assert scores["trace_id"].to_list() == ["x:bad", "x:div", "x:ok"]
    assert scores["unexplained"].to_list() == [4, 1, 0]
    assert scores["first_unexplained_seq"].to_list() == [0, 4, None]
    assert scores["known_chain"].to_list() == [False, False, True]
    assert fitted.predict(X).tolist() == [-1, -1, 1]
    assert np.all(fitted.decision_function(X)[:2] < 0) and fitted.decision_function(X)[2] > 0
    assert fitted.score(X) == pytest.approx(1 / 3)


def test_streaming_fit_from_dataset_matches_in_memory_fit(tmp_path, fitted):
    write_dataset(tmp_path / "ds", good_fleet())
    streamed = GoodTraceBaseline(batch_rows=30).fit(tmp_path / "ds")  # many small batches
    for attr in ("edges_", "errors_", "chains_", "operations_"):
        a, b = getattr(streamed, attr), getattr(fitted, attr)
        assert a.sort(a.columns).equals(b.sort(b.columns).select(a.columns)), attr


def _same_tables(a: GoodTraceBaseline, b: GoodTraceBaseline) -> None:
    for attr in ("edges_", "errors_", "chains_", "op_hosts_", "operations_"):
        x, y = getattr(a, attr), getattr(b, attr)
        assert x.sort(x.columns).equals(y.sort(y.columns).select(x.columns)), attr


def test_interleaved_and_reordered_traces_learn_the_same_model(fitted):
    # the fast path needs each trace as one contiguous run of rows; when two traces' rows
    # alternate (or a trace's rows come out of seq order) the grouping on trace_id takes over
    rows = good_fleet()
    a, b = [r for r in rows if r["trace_id"] == "h0:g0"], [r for r in rows if r["trace_id"] == "h0:p0"]
    rest = [r for r in rows if r["trace_id"] not in ("h0:g0", "h0:p0")]
    mixed = [r for pair in zip(a, b, strict=True) for r in pair] + rest[::-1]
    _same_tables(GoodTraceBaseline().fit(events_frame(mixed)), fitted)
    _same_tables(GoodTraceBaseline(batch_rows=7).fit(events_frame(mixed)), fitted)


def test_traces_without_command_fall_back_to_the_root_frame(fitted):
    rows = good_fleet()
    for r in rows:
        if r["trace_id"].endswith(("g1", "g2", "p4")):
            r["command"] = None if r["trace_id"].endswith("g1") else ""
    model = GoodTraceBaseline().fit(events_frame(rows))
    ops = dict(model.operations_.select("operation", "traces").iter_rows())
    assert ops == {"reg_mr": 47, "ib_uverbs_reg_mr": 3}
    assert model.n_events_ == fitted.n_events_
    # the chains and edges are those of the full fit, split by operation
    merged = model.edges_.with_columns(pl.lit("reg_mr").alias("operation")).group_by(
        "operation", "parent", "probe", "depth").agg(pl.col("count").sum())
    assert merged.sort(merged.columns).equals(fitted.edges_.sort(fitted.edges_.columns).select(merged.columns))


def test_same_chain_under_two_operations_stays_two_chains(fitted):
    # identical frames, different command (one host's traces): the chain hash alone must not merge them
    rows = good_fleet()
    for r in rows:
        if r["trace_id"] in ("h1:g1", "h1:g9"):
            r["command"] = "reg_mr dmabuf"
    model = GoodTraceBaseline().fit(events_frame(rows))
    ops = dict(model.operations_.select("operation", "traces").iter_rows())
    assert ops == {"reg_mr": 48, "reg_mr dmabuf": 2}
    chains = model.chains_.sort("operation", "count")
    assert chains.select("operation", "count").rows() == [("reg_mr", 10), ("reg_mr", 38), ("reg_mr dmabuf", 2)]
    assert chains["chain_hash"][1] == chains["chain_hash"][2]


def test_partial_fit_after_load_keeps_counting(tmp_path, fitted):
    # a saved model has no representative frames: a later batch brings its own
    loaded = GoodTraceBaseline.load(fitted.save(tmp_path / "m.parquet"))
    loaded.partial_fit(events_frame(good_fleet()))
    assert loaded.n_traces_ == 2 * fitted.n_traces_
    doubled = fitted.edges_.with_columns(pl.col("count") * 2)
    assert loaded.edges_.sort(["parent", "probe", "depth"]).select("count").equals(
        doubled.sort(["parent", "probe", "depth"]).select("count"))


def test_fit_since_keeps_only_later_traces(tmp_path):
    write_dataset(tmp_path / "ds", good_fleet())
    model = fit_baseline(tmp_path / "ds", since="2026-11-29T10:20:00Z")
    assert model.n_traces_ == 20 + 5


def test_save_load_round_trip(tmp_path, fitted):
    path = fitted.save(tmp_path / "model.parquet")
    loaded = GoodTraceBaseline.load(path)
    assert loaded.get_params() == fitted.get_params()
    for attr in ("edges_", "errors_", "chains_", "operations_"):
        a, b = getattr(loaded, attr), getattr(fitted, attr)
        assert a.sort(a.columns).equals(b.sort(b.columns).select(a.columns)), attr
    assert not list(tmp_path.glob(".*.tmp"))


def test_load_refuses_other_model_version(tmp_path, fitted):
    path = fitted.save(tmp_path / "model.parquet")
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    header = json.loads(meta[b"tracebase.model"])
    header["model_version"] = 99
    meta[b"tracebase.model"] = json.dumps(header).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(TracebaseError, match=f"expected model version {MODEL_VERSION}, found model version 99"):
        GoodTraceBaseline.load(path)


def test_load_refuses_a_non_model_file(tmp_path):
    path = write_table(events_frame(good_fleet(1)), tmp_path / "events.parquet", "events")
    with pytest.raises(TracebaseError, match="baseline_model"):
        GoodTraceBaseline.load(path)


def test_fit_without_good_traces_is_a_user_error():
    rows = trace_rows("f1", "reg_mr", REG_MR, kind="failure", errnos={0: "EINVAL"})
    with pytest.raises(TracebaseError, match="no good traces"):
        GoodTraceBaseline().fit(events_frame(rows))
