"""A cluster names the job-metadata value its hosts share (a GPU driver version, when nothing the
kernel shows tells the fault's hosts apart): every host of the cluster shows that value alone for
its key, and the hosts showing it are (nearly) the cluster's. A fleet-wide default, a value most
of whose hosts are elsewhere, or one host's cluster (the host names it) say nothing more.

The metadata is read from real events Parquet (tracer.schema's writer) by host_metadata, as the
audit reads it; tests/test_fleetgen21.py checks the whole audit on a generated fleet."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from baseline.fleet.audit import host_metadata, name_shared_metadata
from baseline.fleet.model import collect_traces
from tracer.schema import polars_schema, write_table

T0 = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)


def _events(path: Path, hosts: dict[str, list[dict[str, str]]]) -> Path:
    """One single-frame trace per metadata dict of each host, written as an events file."""
    rows: dict[str, list] = {name: [] for name in polars_schema("events").names()}
    n = 0
    for host, metas in hosts.items():
        for meta in metas:
            n += 1
            values = {"trace_id": f"{host}.{n}", "seq": 0, "ts_ns": n, "pid": 100 + n, "tid": 100 + n, "ppid": 1,
                      "comm": "python3", "probe": "ib_uverbs_reg_mr", "layer": "uverbs", "depth": 0, "ret": 0,
                      "kind": "good", "command": "reg_mr", "exit_status": 0, "start_time": T0 + dt.timedelta(seconds=n),
                      "end_time": T0 + dt.timedelta(seconds=n), "host": host, "kernel_release": "5.15.0-1067-nvidia",
                      "lost_events": 0, "job_id": f"{host}-job",
                      "metadata": [{"key": k, "value": v} for k, v in meta.items()]}
            for name in rows:
                rows[name].append(values.get(name))
    frame = pl.DataFrame(rows, schema=polars_schema("events"))
    write_table(frame, path, "events")
    return path


def test_the_hosts_shared_driver_is_named_and_nothing_else(tmp_path):
    drivers = {f"h{i:02d}": "560.35.03" if i < 4 else "550.90.07" for i in range(16)}
    fleet = {
        host: [{"gpu_driver": driver, "tenant": "aria", "rack": f"r{int(host[1:]) // 2}", "requeue": str(r)}
               for r in (0, 1)]
        for host, driver in drivers.items()
    }
    metadata = host_metadata(_events(tmp_path / "events.parquet", fleet))
    assert set(metadata.filter(pl.col("host") == "h00").select("key", "value").iter_rows()) == {
        ("gpu_driver", "560.35.03"), ("tenant", "aria"), ("rack", "r0"), ("requeue", "0"), ("requeue", "1")}
    clusters = pl.DataFrame({"cluster_id": [0, 1, 2, 3], "signature": ["peer", "one", "racks", "mixed"]},
                            schema={"cluster_id": pl.Int32, "signature": pl.String})
    findings = pl.DataFrame({
        "cluster_id": [0] * 4 + [1] + [2, 2] + [3, 3, 3],
        # 0: the four 560 hosts; 1: one host; 2: two hosts of one rack (both its hosts) but of
        # different drivers; 3: three 550 hosts of thirteen
        "host": ["h00", "h01", "h02", "h03", "h05", "h06", "h07", "h08", "h10", "h12"],
    }, schema_overrides={"cluster_id": pl.Int32})
    named = dict(name_shared_metadata(clusters, findings, metadata).select("cluster_id", "signature").iter_rows())
    assert named == {0: "peer | hosts share gpu_driver=560.35.03 (4 of 4 hosts with it)", 1: "one",
                     2: "racks | hosts share rack=r3 (2 of 2 hosts with it)", 3: "mixed"}, named


def test_no_metadata_no_change(tmp_path):
    metadata = host_metadata(_events(tmp_path / "events.parquet", {"h1": [{}], "h2": [{}]}))
    assert metadata.is_empty() and metadata.columns == ["host", "key", "value"]
    clusters = pl.DataFrame({"cluster_id": [0], "signature": ["x"]}, schema={"cluster_id": pl.Int32, "signature": pl.String})
    findings = pl.DataFrame({"cluster_id": [0, 0], "host": ["h1", "h2"]}, schema_overrides={"cluster_id": pl.Int32})
    assert name_shared_metadata(clusters, findings, metadata).equals(clusters)


def test_the_audits_events_pass_takes_the_metadata_a_read_of_its_own_finds(tmp_path):
    """run_audit takes the hosts' metadata from its one events pass (collect_traces'
    host_metadata, the wide column dropped as each batch is read): the same rows host_metadata
    reads, over batches that split the hosts, and nothing of it left in the per-trace table."""
    fleet = {f"h{i:02d}": [{"gpu_driver": "560.35.03" if i < 3 else "550.90.07", "requeue": str(r)} for r in (0, 1)]
             for i in range(8)}
    fleet["h07"] = [{}]
    events = _events(tmp_path / "events.parquet", fleet)
    parts: list[pl.DataFrame] = []
    traces, _chains = collect_traces(events, batch_rows=3, host_metadata=parts)
    taken = pl.concat(parts).unique().sort(pl.all())
    assert taken.equals(host_metadata(events).sort(pl.all()))
    assert taken.filter(pl.col("host") == "h01").rows() == [
        ("h01", "gpu_driver", "560.35.03"), ("h01", "requeue", "0"), ("h01", "requeue", "1")]
    assert "metadata" not in traces.columns and traces.height == 15


def _job_case(carriers: int, others: int, failing: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Ten hosts, each running jobs of both submit hosts; cluster 0's `failing` jobs all from
    login03, which submitted `carriers` of the jobs on those hosts (`others` from login01)."""
    hosts = [f"h{i}" for i in range(10)]
    jobs = [(f"j{i}", "login03") for i in range(carriers)] + [(f"k{i}", "login01") for i in range(others)]
    findings = pl.DataFrame({"cluster_id": [0] * failing, "host": [hosts[i % 10] for i in range(failing)],
                             "job_id": [jobs[i][0] for i in range(failing)]},
                            schema={"cluster_id": pl.Int32, "host": pl.String, "job_id": pl.String})
    clusters = pl.DataFrame({"cluster_id": [0], "signature": ["create_cq: ib_umem_get EPERM | origin core"]},
                            schema={"cluster_id": pl.Int32, "signature": pl.String})
    pairs = pl.DataFrame([(h, "submit_host", v) for h in hosts for v in ("login01", "login03")],
                         schema=["host", "key", "value"], orient="row")
    per_job = pl.DataFrame([(hosts[i % 10], j, "submit_host", v) for i, (j, v) in enumerate(jobs)],
                           schema=["host", "job_id", "key", "value"], orient="row")
    return clusters, findings, pairs, per_job


def test_jobs_sharing_a_seldom_value_name_it_and_a_common_one_does_not():
    from baseline.fleet.audit import name_shared_job_metadata

    read: list[list[str]] = []

    def reader(per_job):
        return lambda hosts: read.append(sorted(hosts)) or per_job

    clusters, findings, pairs, per_job = _job_case(carriers=30, others=60, failing=12)
    named = name_shared_job_metadata(clusters, findings, pairs, reader(per_job))
    assert named["signature"][0].endswith("| jobs share submit_host=login03 (12 of 12 jobs; 30 of 90 on its hosts)")
    assert read == [[f"h{i}" for i in range(10)]]
    # the same twelve jobs where login03 submitted 80 of 90: (8/9) ** 12 is no rarity
    clusters, findings, pairs, per_job = _job_case(carriers=80, others=10, failing=12)
    assert name_shared_job_metadata(clusters, findings, pairs, reader(per_job)).equals(clusters)
    # two jobs are too few to say anything, and nothing is read for them
    clusters, findings, pairs, per_job = _job_case(carriers=30, others=60, failing=2)
    read.clear()
    assert name_shared_job_metadata(clusters, findings, pairs, reader(per_job)).equals(clusters) and not read


def test_each_cluster_weighs_the_jobs_of_its_own_hosts():
    """Two clusters on two groups of hosts, read at once: every job on the first group's hosts
    carries its NIC's firmware (and every job on the second group's the other one). Among the
    pooled jobs of both groups that firmware looked rare -- 21 of 38 -- and named the first
    cluster (tests/fleetgen34); among its own hosts' jobs it is everyone's, and names nothing.
    A value rare on a cluster's own hosts still names it."""
    from baseline.fleet.audit import name_shared_job_metadata

    groups = {0: ["a1", "a2"], 1: ["b1", "b2"]}
    rows, failing = [], []
    for cid, hosts in groups.items():
        for i in range(20):
            host, job = hosts[i % 2], f"{cid}-j{i}"
            rows.append((host, job, "nic_fw", f"fw-{cid}"))
            # the second group's failing jobs are the 5 of its 20 from one image: (5/20) ** 5 < 1e-3
            rows.append((host, job, "image", "nccl-new" if cid == 1 and i < 5 else "nccl-old"))
            if (cid == 0 and i < 10) or (cid == 1 and i < 5):
                failing.append((cid, host, job))
    per_job = pl.DataFrame(rows, schema=["host", "job_id", "key", "value"], orient="row")
    findings = pl.DataFrame(failing, schema={"cluster_id": pl.Int32, "host": pl.String, "job_id": pl.String},
                            orient="row")
    clusters = pl.DataFrame({"cluster_id": [0, 1], "signature": ["fw", "image"]},
                            schema={"cluster_id": pl.Int32, "signature": pl.String})
    pairs = per_job.select("host", "key", "value").unique()
    named = dict(name_shared_job_metadata(clusters, findings, pairs, lambda hosts: per_job)
                 .select("cluster_id", "signature").iter_rows())
    assert named == {0: "fw", 1: "image | jobs share image=nccl-new (5 of 5 jobs; 5 of 20 on its hosts)"}, named
