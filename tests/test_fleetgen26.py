"""The audit scored on tests/fleetgen26, a twenty-sixth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: faults that follow where a job came from rather than a host, and one operation in
two kernel call-chain shapes. A Slurm mlx5 fleet migrating between two container images (the old
rdma-core creates CQs and QPs through write(), the new one through the ioctl methods, two frames
deeper under ib_uverbs_ioctl); a login node whose limits.d push sets RLIMIT_MEMLOCK to 0 for every
job submitted there (every rank dies at its first pin: create_cq EPERM at ib_umem_get, on most
hosts, in both shapes: one cluster); one GPU's leaked BAR1 aperture failing its rank's dma-buf
attach now and then (reg_dmabuf_mr ENOMEM at dma_buf_dynamic_attach, one host, rare, mostly
untimed); routine: the new image's GID scan's empty slots (ENODATA at rdma_get_gid_attr) and a
checkpoint agent's registration cache evicting through its memlock limit (reg_mr ENOMEM at
ib_umem_get); artefacts: the migration, killed sibling ranks, a drained and rebooted host.
A control fleet with the same behaviour and no fault must give no cluster, no open finding and
no alert. generator.py gives the reasons for the truth."""

from __future__ import annotations

from datetime import datetime

import polars as pl
from fleet_harness import (
    assert_errno_from_reference,
    assert_every_cause_found,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
)
from fleetgen26 import ROOT_CAUSES, ROUTINE, TREES, generate

from tracer.schema import dataset_files, metadata_dict, read

# 40 hosts x 3 h (~3.5 CPU s to build); the control: 16 hosts x 2 h, no fault
SHAPE = {"hosts": 40, "hours": 3, "seed": 26}
CONTROL = {"hosts": 16, "hours": 2, "seed": 2626, "faults": False}
fleet26 = audited_fleet("fleet26", generate, package="fleetgen26", **SHAPE)
control26 = audited_fleet("control26", generate, package="fleetgen26", **CONTROL)


def _traces(root) -> pl.DataFrame:
    events = read(dataset_files(root, "events"), "events")
    return events.filter(pl.col("seq") == 0)


def _family(root, family: str) -> pl.DataFrame:
    """The root rows of one labelled family's traces (the truth's rows joined to them)."""
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("root_cause") == family)
    return _traces(root).join(truth.select("trace_id", "host"), on=["trace_id", "host"])


def _meta(rows: pl.DataFrame, key: str) -> list[str | None]:
    return [metadata_dict(m).get(key) for m in rows["metadata"].to_list()]


def _at(summary, key: str) -> datetime:
    return datetime.fromisoformat(summary["times"][key])


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen26", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's errno
    is one the reference gives near its origin."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet26):
    root, summary, _, _ = fleet26
    roles = summary["roles"]
    traces = _traces(root)
    everyone = set(roles["all"])
    assert len(everyone) == 40 and set(traces["kernel_release"]) == {summary["kernel_release"]}
    # the migration: one operation in two chain shapes, the new image's share rising
    cq = traces.filter(pl.col("command") == "create_cq", pl.col("kind") == "good")
    assert set(cq["probe"]) == {"ib_uverbs_create_cq", "ib_uverbs_ioctl"}
    images = pl.Series(_meta(cq, "image"))
    assert set(images) == {"ngc-24.03", "ngc-25.02"}
    assert ((cq["probe"] == "ib_uverbs_ioctl") == (images == "ngc-25.02")).all()
    # the login node's memlock: many hosts, few a host, both shapes, login03's jobs only, in its window
    eperm = _family(root, "login03_memlock_zero")
    assert eperm["host"].n_unique() >= 20 and eperm.group_by("host").len()["len"].max() <= 30
    assert set(eperm["probe"]) == {"ib_uverbs_create_cq", "ib_uverbs_ioctl"}
    assert set(_meta(eperm, "submit_host")) == {"login03"}
    assert eperm["start_time"].min() >= _at(summary, "push") and eperm["start_time"].max() <= _at(summary, "fix")
    assert eperm.select(pl.col("job_id").n_unique()).item() >= 30
    # the BAR1 leak: one host, GPU 3's rank only, rare, mostly untimed
    bar1 = _family(root, "gpu3_bar1_exhausted")
    assert set(bar1["host"]) == set(roles["bad_gpu"]) and 5 <= bar1.height <= 40
    assert set(_meta(bar1, "local_rank")) == {"3"}
    assert bar1["latency_ns"].null_count() >= 0.6 * bar1.height
    # routine: the GID scan on (nearly) every host, the new image only, rising with the migration
    gid = _family(root, "gid_scan_empty_slots")
    assert gid["host"].n_unique() >= 36 and set(_meta(gid, "image")) == {"ngc-25.02"}
    half = _at(summary, "start") + (_at(summary, "end") - _at(summary, "start")) / 2
    stands = pl.col("repeat_count").fill_null(1).sum()
    early = gid.filter(pl.col("start_time") < half).select(stands).item()
    late = gid.filter(pl.col("start_time") >= half).select(stands).item()
    assert late > 1.3 * early, (early, late)
    # routine: the agent's evictions, every host, the agent only, hundreds of failures
    evict = _family(root, "ckpt_rcache_memlock_evict")
    assert set(evict["host"]) == everyone and set(evict["comm"]) == {"ckpt-agent"}
    assert evict.select(stands).item() >= 1000
    # the artefacts: the rebooted host's two boot ids and its tracer gap
    host = roles["reboot"][0]
    boots = traces.filter(pl.col("host") == host)["trace_id"].str.split(":").list.get(1)
    assert boots.n_unique() == 2
    snaps = read(dataset_files(root, "counters"), "counters").filter(pl.col("host") == host)["snapshot_time"]
    assert snaps.unique().sort().diff().max().total_seconds() >= 180


def test_routine_families_are_set_aside(fleet26):
    """The GID scan's empty slots and the agent's evicted registrations are set aside on every
    host: the ranks and the agent went on."""
    _, _, _, scores = fleet26
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] >= 500 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_every_cause_is_found(fleet26):
    """Each root cause is a finding on every trace, in its own pure cluster: the login node's
    EPERM though spread over the fleet at a few a host and in two chain shapes, the BAR1 leak
    though rare and mostly untimed."""
    _, _, _, scores = fleet26
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_one_cluster_per_cause(fleet26):
    """Two clusters, one per root cause, none for a routine family or for the migration: the
    login node's EPERM in one cluster over both images' chain shapes and its many hosts, the
    BAR1 leak over its one host; each with every failure its records stand for."""
    root, summary, result, _ = fleet26
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    for cause, hosts in (("login03_memlock_zero", len(summary["roles"]["login03_hosts"])),
                         ("gpu3_bar1_exhausted", 1)):
        probe, errno, _ = ROOT_CAUSES[cause]
        rows = clusters.filter(pl.col("signature").str.contains(probe, literal=True),
                               pl.col("signature").str.contains(errno, literal=True))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        stands_for = int(_family(root, cause)["repeat_count"].fill_null(1).sum())
        assert row["hosts"] == hosts and row["failures"] == stands_for, (cause, row)


JOB_PROVENANCE = (
    "the login node's EPERM cluster (25 hosts, 52 jobs) does not name what its failures share: every one of its "
    "52 jobs was submitted from login03 (metadata submit_host=login03, a third of the fleet's 332 jobs), but the "
    "documented rule (docs/architecture.md: a cluster whose HOSTS all show one job-metadata value and hold >= 75 % "
    "of the hosts showing it) compares hosts, and login03's jobs ran on 38 of the 40 hosts (the cluster's 25 hold "
    "66 %); the value the failing traces share against the passing ones is job-level, which no rule compares. "
    "A limit of the documented rule, not a misreading of it")


def test_the_cluster_names_where_its_jobs_came_from(fleet26):
    """The one thing that tells login03's fault from a fleet-wide one is the jobs' origin: the
    EPERM cluster should say its jobs share submit_host=login03 (as a cluster of one driver's
    hosts says `| hosts share gpu_driver=...`). A strict xfail as written (JOB_PROVENANCE); the
    audit's job-level rule (audit.name_shared_job_metadata) names it now."""
    _, _, result, _ = fleet26
    rows = result.clusters.filter(pl.col("signature").str.contains("ib_umem_get EPERM", literal=True))
    assert rows.height == 1 and "submit_host=login03" in rows["signature"][0], rows


def test_host_alerts(fleet26):
    """No alert on a host without a host fault -- the rebooted host, the routine families' hosts
    -- and none naming a routine errno; the login node's EPERM is no host's (it is the cluster's),
    so an alert naming it is tolerated but not asked for."""
    _, summary, result, _ = fleet26
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not ((h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))
                     or e == "EPERM")]
    assert not false, false


def test_control_fleet_without_faults(control26):
    """The control: the same fleet's behaviour (both images, the GID scan, the agent's evictions,
    killed ranks, the reboot) with no fault: no cluster, no open finding, no alert, every routine
    failure set aside."""
    root, summary, result, scores = control26
    assert not summary["roles"]["bad_gpu"] and summary["counts"].get("login03_memlock_zero", 0) == 0
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    findings = read(root / "audit" / "findings.parquet", "findings")
    assert findings.filter(~pl.col("expected").fill_null(False)).height == 0
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0
