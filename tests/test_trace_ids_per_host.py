"""Trace ids numbered per host. The data model's record key is (host, trace_id, seq): a trace id
names a trace on its host. The tracer and the simulator write ids that start with "<host>:", but
another collector may number each host's traces from 1, so that "t:1" is a trace on every host.
The audit, the learned model and the scores must not depend on which: the same fleet with its ids
renamed per host gives the same findings (ids as the data names them), the same clusters, the
same alerts and the same scores. (Before, the audit keyed a trace on its id alone: on a 40-host
fleet 3,164 traces became 427, and 7 root-cause clusters 22.)"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from baseline.fleet.audit import run_audit
from baseline.fleet.evaluate import evaluate
from baseline.fleet.model import GoodTraceBaseline, _ids_name_their_host
from baseline.pipeline.ingest import compact_days
from baseline.run.allowlist import ExpectedErrors
from baseline.simulator.simulate import simulate
from tracer.schema import dataset_files, read, validate_file, write_partition

PER_HOST = "t:"  # every host's ids start so: "gpu00003:17" becomes "t:17" (":unobserved-" marks kept)


def _renamed(src: Path, dst: Path, rename: bool = True, statistics: bool = True) -> Path:
    """A copy of the dataset `src` whose events' and truth's trace ids drop their host: "t:<n>"
    (rename=False: the same ids), rewritten by pyarrow with its default column statistics or
    (statistics=False) none."""
    shutil.copytree(src, dst)
    for table in ("events", "truth"):
        for f in (dst / table).rglob("*.parquet"):
            data = pq.read_table(f)
            at = data.schema.get_field_index("trace_id")
            ids = pc.replace_substring_regex(data["trace_id"], r"^[^:]*:", PER_HOST) if rename else data["trace_id"]
            pq.write_table(data.set_column(at, data.schema.field(at), ids), f, write_statistics=statistics)
    return dst


def _as_per_host(ids: pl.Expr) -> pl.Expr:
    return ids.str.replace(r"^[^:]*:", PER_HOST)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    base = tmp_path_factory.mktemp("per_host_ids")
    simulate(base / "given", hosts=40, hours=3, seed=11)
    return base / "given", _renamed(base / "given", base / "renamed")


def _audit(root: Path):
    result = run_audit(root, out_dir=root / "audit", expected=ExpectedErrors([]))
    return result, evaluate(root, root / "audit")


def test_the_renamed_ids_repeat_across_hosts(fleets):
    _, renamed = fleets
    events = read(dataset_files(renamed, "events"), "events")
    assert events["trace_id"].n_unique() < events.select("host", "trace_id").n_unique() / 5
    assert events.filter(pl.col("trace_id") == "t:0")["host"].n_unique() == 40


def test_footer_statistics_tell_which_files_need_their_host(fleets, tmp_path):
    """Files whose id statistics start with "<host>:" are read as they are (the simulator's, as
    the daemon's and ingest's, keep them); the others (other ids, or no statistics to tell) have
    their ids checked a row at a time -- with the same findings."""
    given, renamed = fleets
    with_statistics = _renamed(given, tmp_path / "with_statistics", rename=False)
    without = _renamed(given, tmp_path / "without_statistics", rename=False, statistics=False)
    for root, named in ((given, True), (with_statistics, True), (without, False), (renamed, False)):
        files = dataset_files(root, "events")
        assert {_ids_name_their_host(validate_file(f, "events"), f) for f in files} == {named}, root.name
    key = ["host", "trace_id"]
    assert _audit(without)[0].findings.sort(key).equals(_audit(given)[0].findings.sort(key))


def test_audit_is_the_same_whatever_the_ids(fleets):
    given, renamed = fleets
    (a, scores_a), (b, scores_b) = _audit(given), _audit(renamed)
    assert a.traces_audited == b.traces_audited > 2000
    assert a.findings.height == b.findings.height > 1000
    key = ["host", "trace_id"]
    expect = a.findings.with_columns(_as_per_host(pl.col("trace_id"))).sort(key)
    assert b.findings.sort(key).equals(expect)
    assert b.clusters.drop("example_trace_id").equals(a.clusters.drop("example_trace_id"))
    assert b.clusters["example_trace_id"].to_list() == [
        i.replace(i.split(":")[0] + ":", PER_HOST) for i in a.clusters["example_trace_id"].to_list()]
    assert b.host_alerts.equals(a.host_alerts)
    # the written findings name the traces as the events do: (host, id) pairs of the dataset
    written = read([renamed / "audit" / "findings.parquet"], "findings")
    events = read(dataset_files(renamed, "events"), "events").select(key).unique()
    assert written.select(key).join(events, on=key, how="anti").is_empty()
    assert scores_b == scores_a
    assert scores_a["cluster_purity"] == 1.0 and scores_a["bifurcation_top1"] > 0.9


def test_day_files_across_hosts_read_the_same(fleets, tmp_path):
    """Closed days compacted into day files of many hosts store the host column: the ids are
    checked a row at a time there, with the same answer."""
    _, renamed = fleets
    compacted = tmp_path / "compacted"
    shutil.copytree(renamed, compacted)
    shutil.rmtree(compacted / "audit", ignore_errors=True)
    compact_days(compacted, days_after=1, today=dt.date(9999, 1, 1))
    files = dataset_files(compacted, "events")
    assert not any(_ids_name_their_host(validate_file(f, "events"), f) for f in files)
    b = run_audit(renamed, expected=ExpectedErrors([]))
    c = run_audit(compacted, expected=ExpectedErrors([]))
    key = ["host", "trace_id"]
    assert c.findings.sort(key).equals(b.findings.sort(key))


def test_learned_model_is_the_same_whatever_the_ids(fleets):
    given, renamed = fleets
    a, b = GoodTraceBaseline().fit(given), GoodTraceBaseline().fit(renamed)
    assert a.n_traces_ == b.n_traces_ > 500
    assert a.edges_.sort(a.edges_.columns).equals(b.edges_.sort(b.edges_.columns))
    assert a.operations_.sort(a.operations_.columns).equals(b.operations_.sort(b.operations_.columns))


def _tree(trace_id: str, start: dt.datetime, errno: str | None) -> dict[str, list]:
    """A create_qp call tree of the reference (uverbs -> core -> driver), failing with `errno`
    at the driver or succeeding."""
    frames = [("ib_uverbs_create_qp", "uverbs", 0), ("ib_create_qp_user", "core", 1), ("mlx5_ib_create_qp", "driver", 2)]
    t0 = int(start.timestamp() * 1e9)
    cols: dict[str, list] = {c: [] for c in ("trace_id", "seq", "ts_ns", "pid", "tid", "comm", "probe", "layer",
                                             "depth", "ret", "errno", "kind", "start_time", "end_time",
                                             "kernel_release", "job_id")}
    for seq, (probe, layer, depth) in enumerate(frames):
        cols["trace_id"].append(trace_id)
        cols["seq"].append(seq)
        cols["ts_ns"].append(t0 + seq * 1000)
        cols["pid"].append(4242)
        cols["tid"].append(4242)
        cols["comm"].append("trainer")
        cols["probe"].append(probe)
        cols["layer"].append(layer)
        cols["depth"].append(depth)
        cols["ret"].append(-12 if errno else 0)
        cols["errno"].append(errno)
        cols["kind"].append("failure" if errno else "good")
        cols["start_time"].append(start)
        cols["end_time"].append(start + dt.timedelta(microseconds=5))
        cols["kernel_release"].append("6.8.0")
        cols["job_id"].append("j1")
    return cols


def test_one_id_on_two_hosts_is_two_traces(tmp_path):
    """Host a's "1" failed with ENOMEM, host b's "1" succeeded: one finding, on host a; with
    the ids as one trace, the failing tree was the good one's continuation."""
    day = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    for h, host in enumerate(("nodea", "nodeb")):
        trees = [_tree(str(i), day + dt.timedelta(minutes=i, seconds=h), None) for i in range(1, 40)]
        if host == "nodea":
            trees[0] = _tree("1", day + dt.timedelta(minutes=1), "ENOMEM")
        table = pl.concat([pl.DataFrame(t) for t in trees]).with_columns(
            pl.col("start_time", "end_time").cast(pl.Datetime("ns", "UTC")))
        write_partition(table, tmp_path, "events", "2026-11-02", host, "part-0.parquet")
    result = run_audit(tmp_path, out_dir=tmp_path / "audit", expected=ExpectedErrors([]))
    assert result.traces_audited == 78
    found = result.findings.select("host", "trace_id", "bifurcation_probe", "bifurcation_errno").rows()
    assert found == [("nodea", "1", "mlx5_ib_create_qp", "ENOMEM")]


@pytest.mark.parametrize("name", ["gpu0000[0]", "gpu*", "gpu0000?", "gpu["])
def test_a_host_named_with_glob_characters_is_read_as_named(tmp_path, name):
    """A host directory named with glob characters (another tool's dataset: ingest refuses such
    names) is that host's files alone: `gpu0000[0]` read gpu00000's files in its place (findings
    and an alert lost, exit 0), `gpu*` and `gpu[` were internal errors."""
    given = tmp_path / "given"
    simulate(given, hosts=6, hours=2, seed=3)
    renamed = tmp_path / "renamed"
    shutil.copytree(given, renamed)
    for table in ("events", "counters", "counter_buckets", "truth"):
        for part in (renamed / table).glob("date=*/host=gpu00001"):
            part.rename(part.with_name(f"host={name}"))
    a = run_audit(given, expected=ExpectedErrors([]))
    b = run_audit(renamed, expected=ExpectedErrors([]))
    assert b.traces_audited == a.traces_audited
    as_named = pl.col("host").cast(pl.String).replace("gpu00001", name)
    key = ["host", "trace_id"]
    assert b.findings.with_columns(pl.col("host").cast(pl.String)).sort(key).equals(
        a.findings.with_columns(as_named).sort(key))
    assert b.host_alerts.with_columns(pl.col("host").cast(pl.String)).equals(a.host_alerts.with_columns(as_named))
