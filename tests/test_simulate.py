"""Fleet simulator: schema, determinism, injected root causes, counters, spool, streaming, CLI."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from baseline.cli import main as baseline_main
from baseline.simulator.catalog import INJECTED_CAUSES
from baseline.simulator.simulate import simulate
from tracer.errors import TracebaseError
from tracer.schema import dataset_files, parquet_files, read, validate_file

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("fleet")
    summary = simulate(out, hosts=12, hours=12, seed=1)
    return out, summary


@pytest.fixture(scope="module")
def tables(fleet) -> dict[str, pl.DataFrame]:
    out, _ = fleet
    return {t: read(dataset_files(out, t), t) for t in ("events", "counters", "truth")}


def _digest(root: Path) -> dict[str, str]:
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in parquet_files(root)}


def test_every_file_is_valid_and_partitioned(fleet):
    out, summary = fleet
    for table in ("events", "counters", "truth"):
        files = dataset_files(out, table)
        assert len(files) == 12, table  # one partition per host-day
        for f in files:
            validate_file(f, table)
            assert re.fullmatch(rf"{table}/date=2026-11-28/host=gpu\d{{5}}/part-00000\.parquet", str(f.relative_to(out)))
    assert summary["events"] > 1000 and summary["traces"] > 500


def test_same_seed_same_bytes_different_seed_differs(tmp_path):
    a, b, c, d = (tmp_path / n for n in "abcd")
    simulate(a, hosts=3, hours=2, seed=7)
    simulate(b, hosts=3, hours=2, seed=7)
    simulate(c, hosts=3, hours=2, seed=8)
    simulate(d, hosts=3, hours=2, seed=7, workers=2)  # parallel workers change nothing
    assert _digest(a) == _digest(b) == _digest(d)
    ea, ec = read(dataset_files(a, "events"), "events"), read(dataset_files(c, "events"), "events")
    assert not ea.equals(ec)


def test_hosts_are_independent_of_fleet_order(tmp_path):
    """A host's data depends on (seed, fleet size, index) only, so hosts can be generated in parallel."""
    from baseline.simulator.simulate import plan_fleet, simulate_host

    plan = plan_fleet(5, 2, 3)
    forward = [simulate_host(plan, i).events for i in range(5)]
    backward = [simulate_host(plan, i).events for i in reversed(range(5))][::-1]
    assert all(x.equals(y) for x, y in zip(forward, backward, strict=True))


def _trace_of(events: pl.DataFrame, truth: pl.DataFrame, cause: str) -> pl.DataFrame:
    tid = truth.filter(pl.col("root_cause") == cause)["trace_id"][0]
    return events.filter(pl.col("trace_id") == tid).sort("seq")


def test_each_injected_root_cause_has_truth_labels(tables):
    truth = tables["truth"]
    labels = truth.filter(pl.col("root_cause").is_not_null()).unique(
        ["root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer", "expected_error"]
    )
    got = {r["root_cause"]: r for r in labels.iter_rows(named=True)}
    for cause in INJECTED_CAUSES:
        assert cause in got, cause
    assert (got["efault_peer_cascade"]["bifurcation_probe"], got["efault_peer_cascade"]["bifurcation_errno"],
            got["efault_peer_cascade"]["origin_layer"]) == ("ib_peer_umem_get", "EFAULT", "peer-mem")
    assert (got["dmabuf_peer_fallback"]["bifurcation_probe"], got["dmabuf_peer_fallback"]["bifurcation_errno"],
            got["dmabuf_peer_fallback"]["origin_layer"]) == ("ib_peer_umem_get", None, "peer-mem")
    assert got["dmabuf_eperm_new_driver"]["bifurcation_errno"] == "EPERM"
    assert got["dmabuf_eperm_new_driver"]["origin_layer"] == "driver"
    assert got["mkey_cache_enomem"]["origin_layer"] == "driver"
    assert got["crash_loop_fw_bad_state"]["origin_layer"] == "driver"
    assert got["expected:gid_query_empty_slot"]["expected_error"] is True
    assert not any(got[c]["expected_error"] for c in INJECTED_CAUSES)


def test_efault_at_all_four_layers(tables):
    trace = _trace_of(tables["events"], tables["truth"], "efault_peer_cascade")
    failing = trace.filter(pl.col("errno").is_not_null())
    assert failing["probe"].to_list() == ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "__ib_umem_get", "ib_peer_umem_get"]
    assert set(failing["errno"]) == {"EFAULT"} and set(failing["ret"]) == {-14}
    assert failing["layer"].to_list() == ["uverbs", "driver", "core", "peer-mem"]
    assert failing["depth"].to_list() == [0, 1, 2, 3]
    assert trace["kind"].unique().to_list() == ["failure"] and trace["exit_status"][0] == -14
    assert trace["command"][0] == "reg_mr"


def test_dmabuf_fallback_is_a_path_divergence(tables):
    events, truth = tables["events"], tables["truth"]
    trace = _trace_of(events, truth, "dmabuf_peer_fallback")
    assert trace["probe"].to_list() == [
        "ib_uverbs_reg_mr", "rdma_lookup_get_uobject", "mlx5_ib_reg_user_mr", "__ib_umem_get",
        "ib_peer_umem_get", "ib_umem_activate_invalidation_notifier",
    ]
    assert trace["errno"].to_list() == ["EOPNOTSUPP", None, "EOPNOTSUPP", None, None, "EOPNOTSUPP"]
    # good reg_mr traces on the same platform never enter the peer path
    good = events.filter((pl.col("kind") == "good") & (pl.col("command") == "reg_mr"))
    assert good.height and "ib_peer_umem_get" not in set(good["probe"])
    meta = {d["key"]: d["value"] for d in trace["metadata"][0]}
    assert meta["image"].endswith("nodmabuf")


def test_other_causes_layered_patterns(tables):
    events, truth = tables["events"], tables["truth"]
    eperm = _trace_of(events, truth, "dmabuf_eperm_new_driver")
    assert eperm["probe"].to_list() == ["ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "bnxt_re_reg_user_mr_dmabuf"]
    assert set(eperm["errno"]) == {"EPERM"} and eperm["kernel_release"][0].startswith("6.11")
    enomem = _trace_of(events, truth, "mkey_cache_enomem")
    by_probe = dict(zip(enomem["probe"], enomem["errno"], strict=True))
    assert by_probe["mlx5_ib_reg_user_mr"] == "ENOMEM" and by_probe["__ib_umem_get"] is None  # pinning worked
    stale = _trace_of(events, truth, "stale_qp_handle")
    assert stale["errno"].to_list() == ["EINVAL", "ENOENT"]  # lookup ENOENT masked as EINVAL at the handler


def test_crash_loop_host_restarts_all_day(tables):
    events, truth = tables["events"], tables["truth"]
    crash = truth.filter(pl.col("root_cause") == "crash_loop_fw_bad_state")
    assert crash["host"].n_unique() >= 1
    host = crash["host"][0]
    fails = events.filter((pl.col("host") == host) & (pl.col("errno") == "EIO"))
    restarts = {d["value"] for m in fails["metadata"] for d in m if d["key"] == "restart"}
    assert len(restarts) >= 3  # the same job restarted again and again
    hours = fails["start_time"].dt.hour().n_unique()
    assert hours >= 3 and fails["probe"].unique().to_list() == ["mlx5_ib_alloc_pd"]


def test_unprobed_cleanup_failures_have_no_events(tables):
    events, truth = tables["events"], tables["truth"]
    unobserved = truth.filter(pl.col("root_cause") == "cleanup_ebusy_unprobed")
    assert unobserved.height >= 1
    assert unobserved["trace_id"].str.contains(":unobserved-").all()
    assert events.filter(pl.col("trace_id").is_in(unobserved["trace_id"].implode())).height == 0
    assert set(unobserved["bifurcation_errno"]) == {"EBUSY"}


def test_failures_cluster_at_job_initialisation(tables):
    """Most injected fatal failures happen in the first minutes of a job attempt."""
    events = tables["events"].filter(pl.col("kind") == "failure")
    traces = events.group_by("trace_id").agg(pl.col("host").first(), pl.col("job_id").first(),
                                              pl.col("start_time").first(), pl.col("metadata").first())
    assert traces.height > 100
    truth = tables["truth"].filter(pl.col("root_cause").is_in(["efault_peer_cascade", "dmabuf_eperm_new_driver",
                                                                "dmabuf_peer_fallback"]))
    assert truth.height > 0


def test_good_traces_are_fast_and_clean(tables):
    events, truth = tables["events"], tables["truth"]
    good = events.filter(pl.col("kind") == "good")
    assert good.height > 0 and good["errno"].null_count() == good.height
    roots = good.filter(pl.col("depth") == 0)
    assert (roots["latency_ns"] < 50_000_000).all()
    assert set(good["command"]) >= {"create_qp", "reg_mr", "modify_qp RESET->INIT", "modify_qp INIT->RTR",
                                    "modify_qp RTR->RTS", "reg_dmabuf_mr", "query_gid"}
    held = truth.filter(pl.col("held_out"))
    assert held.height > 0 and set(held["kind"]) == {"good"}
    # a parent's interval encloses its children's
    t = good.filter(pl.col("trace_id") == good["trace_id"][0]).sort("seq")
    root = t.row(0, named=True)
    assert all(r["ts_ns"] >= root["ts_ns"] and r["ts_ns"] + r["latency_ns"] <= root["ts_ns"] + root["latency_ns"]
               for r in t.iter_rows(named=True))


def test_vendor_namespace_gate_and_live_flags(tables):
    counters = tables["counters"]
    by_vendor = counters.group_by("vendor").agg(pl.col("probe").unique())
    names = {r["vendor"]: set(r["probe"]) for r in by_vendor.iter_rows(named=True)}
    assert "mlx5_ib_create_qp" in names["mlx5"]
    for vendor, probes in names.items():
        if vendor != "mlx5":
            assert not any(p.startswith("mlx5_") for p in probes)
            assert any(p.startswith(f"{vendor}_") for p in probes)
    upstream = counters.filter(~pl.col("kernel_release").str.contains("nvidia"))
    assert not upstream.filter(pl.col("probe").str.starts_with("ib_peer")).select(pl.col("live").any()).item()
    assert counters["probe"].n_unique() >= 15


def test_counters_consistent_with_events(tables):
    events, counters = tables["events"], tables["counters"]
    errs = counters.explode("errno_counts").filter(pl.col("errno_counts").is_not_null()).select(
        "host", "probe", pl.col("errno_counts").struct.field("errno"), pl.col("errno_counts").struct.field("count"))
    from_counters = errs.group_by("host", "probe", "errno").agg(pl.col("count").sum()).sort(["host", "probe", "errno"])
    from_events = (events.filter(pl.col("errno").is_not_null()).group_by("host", "probe", "errno").len()
                   .rename({"len": "count"}).with_columns(pl.col("count").cast(pl.Int64)).sort(["host", "probe", "errno"]))
    assert from_counters.equals(from_events)  # no loss simulated: failures are exact
    assert (counters["failures"] == counters["errno_counts"].list.eval(pl.element().struct.field("count")).list.sum()).all()
    inv = counters.group_by("host", "probe").agg(pl.col("invocations").sum())
    frames = events.group_by("host", "probe").len()
    both = frames.join(inv, on=["host", "probe"])
    assert both.height == frames.height and (both["invocations"] >= both["len"]).all()
    assert inv["invocations"].sum() > 20 * events.height  # success is not emitted outside capture
    assert (counters["interval_s"] == 5.0).all()


def test_spool_layout_matches_dataset(tmp_path):
    spool_root, data_root = tmp_path / "s", tmp_path / "d"
    simulate(spool_root, hosts=2, hours=0.5, seed=4, spool=True)
    simulate(data_root, hosts=2, hours=0.5, seed=4)
    hosts = sorted(p.name for p in (spool_root / "spool").iterdir())
    assert hosts == ["gpu00000", "gpu00001"]
    snaps = sorted((spool_root / "spool" / "gpu00000").iterdir())
    assert snaps and all(re.fullmatch(r"snap-\d{8}T\d{6}\.\d{3}Z-\d{6}", s.name) for s in snaps)
    assert not list((spool_root / "spool").rglob(".*"))  # no temp dirs left behind
    for s in snaps[:20]:
        validate_file(s / "events.parquet", "events")
        validate_file(s / "counters.parquet", "counters")
    spooled = read(list((spool_root / "spool").rglob("events.parquet")), "events").sort(["trace_id", "seq"])
    direct = read(dataset_files(data_root, "events"), "events").sort(["trace_id", "seq"])
    assert spooled.equals(direct)
    assert dataset_files(spool_root, "truth")


def test_streaming_writes_host_by_host_with_bounded_memory(tmp_path):
    """Peak RSS of a 40-host run stays close to that of a 4-host run: nothing fleet-wide is held."""
    code = ("import resource, sys; from baseline.simulator.simulate import simulate; "
            "simulate(sys.argv[1], hosts=int(sys.argv[2]), hours=24, seed=2); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    rss = {}
    for n in (4, 40):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / str(n)), str(n)], check=True,
                             capture_output=True, text=True, cwd=REPO)
        rss[n] = int(out.stdout.strip()) / 1024  # MiB
    assert len(dataset_files(tmp_path / "40", "events")) == 40
    assert rss[40] - rss[4] < 60, rss


def test_events_target_and_scenarios(tmp_path):
    s = simulate(tmp_path / "t", hosts=4, hours=6, seed=5, events_target=40_000)
    assert 25_000 < s["events"] < 60_000 and s["good_rate"] > 0.005
    quiet = simulate(tmp_path / "q", hosts=4, hours=6, seed=5, scenarios="none")
    assert quiet["root_causes"] == {}
    only = simulate(tmp_path / "o", hosts=4, hours=6, seed=5, scenarios="crash_loop_fw_bad_state")
    assert set(only["root_causes"]) == {"crash_loop_fw_bad_state"}


def test_library_errors_are_tracebase_errors(tmp_path):
    with pytest.raises(TracebaseError, match="--hosts"):
        simulate(tmp_path, hosts=0)
    with pytest.raises(TracebaseError, match="--scenario"):
        simulate(tmp_path, hosts=1, scenarios="bogus")
    with pytest.raises(TracebaseError, match="--start"):
        simulate(tmp_path, hosts=1, start="yesterday")
    with pytest.raises(TracebaseError, match="--spool"):
        simulate(tmp_path, hosts=500, spool=True)


@pytest.mark.parametrize("argv, message", [
    (["--hosts", "0"], "--hosts: expected a positive integer, found '0'"),
    (["--hosts", "many"], "--hosts: expected a positive integer, found 'many'"),
    (["--hosts", "2000000"], "--hosts: expected an integer in [1, 1000000], found 2000000"),
    (["--hours", "-1"], "--hours: expected a finite number > 0"),
    (["--hours", "1e300"], "--hours: expected a span ending before 2262"),
    (["--seed", "x"], "--seed: expected an integer"),
    (["--seed", "-3"], "--seed: expected an integer >= 0, found '-3'"),
    (["--good-rate", "2"], "--good-rate: expected a finite number in [0, 1]"),
    (["--scenario", "nope"], "--scenario: expected names from"),
    (["--start", "soon"], "--start: expected an ISO date or time"),
])
def test_cli_simulate_user_errors(tmp_path, capsys, argv, message):
    status = baseline_main(["simulate", "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("baseline: error: ") and message in err and err.count("\n") == 1


def test_cli_simulate_writes_and_reports(tmp_path, capsys):
    out = tmp_path / "cli"
    assert baseline_main(["simulate", "--hosts", "2", "--hours", "1", "--seed", "3", "--out", str(out), "--json",
                          "--start", "2026-12-01T06:00:00Z"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["hosts"] == 2 and summary["events"] > 0
    assert dataset_files(out, "events")[0].parts[-3] == "date=2026-12-01"


def test_cli_help_is_fast_and_has_examples():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "baseline.cli", "simulate", "--help"], capture_output=True,
                         text=True, check=True, env=env, cwd=REPO)
    assert "examples:" in out.stdout and "--spool" in out.stdout


def test_kill_9_half_way_leaves_no_dataset_and_the_rerun_cleans_up(tmp_path):
    """A simulate killed with -9 while writing leaves only its hidden staging directory, which
    no dataset scan reads, never a partial dataset under --out; the next run removes it."""
    import signal
    import time

    out = tmp_path / "sim"
    argv = [sys.executable, "-c", "import sys; from baseline.cli import main; sys.exit(main(sys.argv[1:]))",
            "simulate", "--hosts", "400", "--hours", "6", "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    staging = []
    while time.monotonic() < deadline and proc.poll() is None:
        # kill once the first host's files are written: a half-written dataset
        staging = [p for p in tmp_path.glob(".sim.*.tmp") if any(p.rglob("*.parquet"))]
        if staging:
            break
        time.sleep(0.05)
    assert proc.poll() is None and staging, "simulate finished before it could be killed: make it bigger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == [staging[0].name]
    simulate(out, hosts=2, hours=1, seed=1)
    assert [p.name for p in tmp_path.iterdir()] == ["sim"]
    assert dataset_files(out, "events")


def test_simulating_into_a_dataset_a_reader_holds_waits_for_it(tmp_path):
    """`simulate -o DS` into an existing dataset writes in place, file by file: an audit reading
    DS meanwhile took half of each seed (findings of one, clusters of the other: 2 of 15 trials
    of the adversarial battery). It takes the dataset's lock, as ingest does, so a reader's shared
    lock (held here as the audit holds it) keeps it waiting, and the dataset is untouched until
    the reader lets go."""
    import time

    from tracer.atomic import dataset_lock

    ds = tmp_path / "ds"
    simulate(ds, hosts=3, hours=1, seed=1)
    before = {f: f.read_bytes() for f in dataset_files(ds, "events")}
    err_file = tmp_path / "stderr"
    with dataset_lock(ds, exclusive=False) as held, err_file.open("w") as err:
        assert held
        proc = subprocess.Popen([str(Path(sys.executable).parent / "baseline"), "simulate", "--hosts", "3",
                                 "--hours", "1", "--seed", "2", "-o", str(ds)], stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        while "dataset lock" not in err_file.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # until the writer says it waits (after a second of waiting)
        assert proc.poll() is None, err_file.read_text()
        assert {f: f.read_bytes() for f in dataset_files(ds, "events")} == before
    assert proc.wait(timeout=120) == 0, err_file.read_text()
    assert "waiting" in err_file.read_text(), err_file.read_text()
    assert {f: f.read_bytes() for f in dataset_files(ds, "events")} != before
