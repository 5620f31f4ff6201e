"""The audit scored on tests/fleetgen40, a fortieth fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator, the
other generators, or the audit).

What it is for: MANY TENANTS ON SHARED HOSTS. 10 mlx5 RoCE hosts for 3 hours, each running 2-4 job
slots of different tenants at once (job_id; tenant in the metadata), several processes a job
(hydra_pmi_proxy, a python3 driver, two workers: atlas-trainer, cinder_srv or python3 ranks). The
rdma cgroup is per tenant. Routine: tenant atlas's framework probes the maximum QP count and backs
off on EAGAIN at ib_rdmacg_try_charge under create_qp (set aside, learned for atlas's processes).
Faults: borealis's cgroup limit set too low on 2 hosts (the same EAGAIN at the same frames under
create_qp, its python3 ranks die), and one host's bad cable (INIT->RTR ETIMEDOUT at
rdma_addr_find_l2_eth_by_grh for every tenant there). Each fault must be its own cluster, the
routine set aside with no finding or alert, and the control (faults=False) must raise nothing.
generator.py gives the reasons.
"""

from __future__ import annotations

import polars as pl
import pytest
from fleet_harness import (
    assert_counters_agree_with_the_records,
    assert_every_cause_found,
    assert_files_valid_and_truth_one_row_per_record,
    assert_generator_is_blind,
    assert_trees_from_the_reference,
    audited_fleet,
    dataset_events,
    dataset_truth,
    findings_with_truth,
    roots_with_truth,
)
from fleetgen40 import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREE_FAMILY, TREES, generate

from tracer.schema import metadata_dict

# 10 hosts x 3 h (~5 s to build); the control: the same tenants and routine, no fault
SHAPE = {"hosts": 10, "hours": 3, "seed": 40}
CONTROL = {"hosts": 10, "hours": 3, "seed": 4040, "faults": False}
# the upper end: 14 hosts x 4 h (the same roles by index); the same-name variant: atlas's workers
# are python3 like borealis's ranks (only tenant, job and host tell the callers apart), and its control
BIG = {"hosts": 14, "hours": 4, "seed": 4114}
SAME_NAME = {"hosts": 10, "hours": 3, "seed": 40, "atlas_comm": "python3"}
SAME_NAME_CONTROL = {"hosts": 10, "hours": 3, "seed": 4040, "faults": False, "atlas_comm": "python3"}
# the retrying variant: borealis's library retries the refused create_qp twice, then its abort path
# destroys its two QPs before the rank exits
RETRYING = {"hosts": 10, "hours": 3, "seed": 4041, "borealis_retries": 2, "abort_cleanup": True}
fleet40 = audited_fleet("fleet40", generate, package="fleetgen40", **SHAPE)
retrying40 = audited_fleet("retrying40", generate, package="fleetgen40", **RETRYING)
control40 = audited_fleet("control40", generate, package="fleetgen40", **CONTROL)
big40 = audited_fleet("big40", generate, package="fleetgen40", **BIG)
samename40 = audited_fleet("samename40", generate, package="fleetgen40", **SAME_NAME)
samename_control40 = audited_fleet("samename_control40", generate, package="fleetgen40", **SAME_NAME_CONTROL)

KEY = ["host", "trace_id"]
CGROUP, CABLE, PROBE = "borealis_cgroup_too_low", "bad_cable_rtr_timeout", "atlas_qp_probe"
MEMLOCK = "cinder_memlock_probe"


def _weights(root) -> pl.DataFrame:
    return dataset_events(root).filter(pl.col("seq") == 0).select(
        *KEY, pl.col("repeat_count").fill_null(1).alias("w"))


def _tenant(roots: pl.DataFrame) -> pl.DataFrame:
    return roots.with_columns(pl.col("metadata").map_elements(lambda m: metadata_dict(m).get("tenant"),
                                                              return_dtype=pl.String).alias("tenant"))


# --------------------------------------------------------------------------------------------
# the generator and its data
# --------------------------------------------------------------------------------------------
def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen40", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; EAGAIN is the reference's errno at
    ib_rdmacg_try_charge (the rdma cgroup's limit), ETIMEDOUT at rdma_addr_find_l2_eth_by_grh (a
    neighbour never resolved); every failing frame of a tree fails with its family's errno."""
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)
    # the routine and the cgroup fault are one call site: the same origin, errno and layer
    assert FAMILIES[PROBE] == FAMILIES[CGROUP]


def test_every_file_validates_and_truth_is_one_row_per_record(fleet40):
    root, _, _, _ = fleet40
    assert_files_valid_and_truth_one_row_per_record(root)


def test_counters_agree_with_the_records(fleet40):
    """No record is lost or cut here: per (probe, errno) the counters' failures are the records'
    failing frames weighted by repeat_count."""
    root, summary, _, _ = fleet40
    assert_counters_agree_with_the_records(root, FAMILIES)
    # no aggregated example stands for another caller's tree: each record's weight is its family's
    assert summary["mixed_aggregates"] == {}, summary["mixed_aggregates"]


def test_tenants_share_every_host(fleet40):
    """Each host runs 2-4 tenants' jobs at once (their records interleave in time), every trace
    carries its job_id and tenant, and a job's processes have different names: the MPI helper,
    the python3 driver and the tenant's workers."""
    root, summary, _, _ = fleet40
    roots = _tenant(dataset_events(root).filter(pl.col("seq") == 0))
    assert roots["job_id"].null_count() == 0 and roots["tenant"].null_count() == 0
    for host, slots in summary["slots"].items():
        r = roots.filter(pl.col("host") == host)
        assert set(r["tenant"]) == set(slots) and 2 <= len(slots) <= 4, (host, set(r["tenant"]), slots)
        # tenants at once: in some 10-minute span records of every slot's tenant
        spans = r.with_columns(pl.col("start_time").dt.truncate("10m").alias("span")).group_by("span").agg(
            pl.col("tenant").n_unique().alias("n"))
        assert spans["n"].max() == len(slots), (host, spans["n"].max())
    by_tenant = roots.group_by("tenant").agg(pl.col("comm").unique())
    comms = {t: set(c) for t, c in by_tenant.iter_rows()}
    assert comms["atlas"] == {"hydra_pmi_proxy", "python3", "atlas-trainer"}, comms
    assert comms["cinder"] == {"hydra_pmi_proxy", "python3", "cinder_srv"}, comms
    assert {"hydra_pmi_proxy", "python3"} <= comms["borealis"] and {"hydra_pmi_proxy", "python3"} <= comms["dune"]
    # a job's processes: the helper starts the driver, the driver the workers
    jobs = roots.group_by("job_id").agg(pl.col("comm").n_unique().alias("n"), pl.col("pid").n_unique().alias("p"))
    assert jobs.filter(pl.col("p") >= 3).height > 0


def test_one_call_site_two_callers(fleet40):
    """The routine and the cgroup fault are the same tree (frames, depths, errnos) under create_qp;
    atlas's trainers go on after it (a later record of the same pid, often), borealis's ranks never
    do (their EAGAIN is their last record); borealis's QPs pass on the other hosts and on the fault
    hosts before the push; atlas's probe is on every host, the fault on two."""
    root, summary, _, _ = fleet40
    ev = dataset_events(root)
    roots = _tenant(roots_with_truth(root, ev))
    last = roots.group_by("host", "pid").agg(pl.col("ts_ns").max().alias("last"))
    j = roots.join(last, on=["host", "pid"])
    shapes = {}
    for fam in (PROBE, CGROUP):
        ids = roots.filter(pl.col("root_cause") == fam).select(KEY)
        frames = ev.join(ids, on=KEY).sort("trace_id", "seq").group_by(KEY, maintain_order=True).agg(
            pl.struct("probe", "depth", "errno").alias("f"))
        shapes[fam] = {tuple((x["probe"], x["depth"], x["errno"]) for x in f) for f in frames["f"]}
    assert len(shapes[PROBE]) == 1 and shapes[PROBE] == shapes[CGROUP], shapes
    routine = j.filter(pl.col("root_cause") == PROBE)
    assert set(routine["comm"]) == {"atlas-trainer"} and set(routine["tenant"]) == {"atlas"}
    assert set(routine["host"]) == set(summary["hosts"])
    assert (routine["ts_ns"] < routine["last"]).mean() >= 0.5, (routine["ts_ns"] < routine["last"]).mean()
    fatal = j.filter(pl.col("root_cause") == CGROUP)
    assert set(fatal["comm"]) == {"python3"} and set(fatal["tenant"]) == {"borealis"}
    assert set(fatal["host"]) == set(summary["cgroup_hosts"]) and len(summary["cgroup_hosts"]) == 2
    assert (fatal["ts_ns"] == fatal["last"]).all()
    ok = roots.filter((pl.col("tenant") == "borealis") & (pl.col("command") == "create_qp")
                      & pl.col("root_cause").is_null())
    # (good trees are only sampled in capture windows: most borealis hosts, one fault host at least)
    borealis_hosts = {h for h, slots in summary["slots"].items() if "borealis" in slots}
    assert len(set(ok["host"]) & borealis_hosts) >= 4 and set(ok["host"]) & set(summary["cgroup_hosts"]), set(
        ok["host"])


def test_memlock_probe_is_cinders_and_goes_on(fleet40):
    """ENOMEM at ib_umem_get under reg_mr: only cinder_srv, on every host running cinder, and its
    processes usually have a later record (the halved registration, and on)."""
    root, summary, _, _ = fleet40
    roots = _tenant(roots_with_truth(root))
    last = roots.group_by("host", "pid").agg(pl.col("ts_ns").max().alias("last"))
    m = roots.join(last, on=["host", "pid"]).filter(pl.col("root_cause") == MEMLOCK)
    assert set(m["comm"]) == {"cinder_srv"} and set(m["tenant"]) == {"cinder"}
    assert set(m["host"]) == {h for h, slots in summary["slots"].items() if "cinder" in slots}
    assert (m["ts_ns"] < m["last"]).mean() >= 0.5, (m["ts_ns"] < m["last"]).mean()


def test_the_bad_cable_hits_every_tenant_on_its_host(fleet40):
    """Every tenant's workers on the cable host die at INIT->RTR with ETIMEDOUT; nowhere else."""
    root, summary, _, _ = fleet40
    roots = _tenant(roots_with_truth(root))
    c = roots.filter(pl.col("root_cause") == CABLE)
    assert set(c["host"]) == {summary["cable_host"]}
    assert set(c["tenant"]) == set(summary["slots"][summary["cable_host"]])
    assert set(c["arg"]) == {"INIT->RTR"}


# --------------------------------------------------------------------------------------------
# the audit
# --------------------------------------------------------------------------------------------
def _assert_cause_reported(root, result, cause: str) -> int:
    """`cause`'s records are open findings (each record once) with the right bifurcation and
    origin layer, in one cluster that holds nothing else, with its failure weight and host count."""
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    probe, errno, layer = ROOT_CAUSES[cause]
    got = findings.filter(pl.col("root_cause") == cause)
    want = truth.filter(pl.col("root_cause") == cause).height
    assert got.height == want, (cause, f"{got.height} findings for {want} records")
    assert not got["expected"].fill_null(False).any(), (
        cause, f"{got['expected'].fill_null(False).sum()} of {want} records set aside as routine",
        got.filter(pl.col("expected").fill_null(False)).group_by("host", "comm").len().rows())
    ids = set(got["cluster_id"].to_list())
    assert len(ids) == 1 and None not in ids, (cause, f"spread over clusters {ids}")
    (cid,) = ids
    members = set(findings.filter(pl.col("cluster_id") == cid)["root_cause"].to_list())
    assert members == {cause}, (cause, f"cluster {cid} also holds {members - {cause}}")
    assert set(zip(got["bifurcation_probe"], got["bifurcation_errno"], got["origin_layer"], strict=True)) == {
        (probe, errno, layer)}, (cause, got.group_by("bifurcation_probe", "bifurcation_errno", "origin_layer").len())
    row = result.clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
    failures = got.select(KEY).unique().join(_weights(root), on=KEY)["w"].sum()
    assert row["failures"] == failures and row["hosts"] == got["host"].n_unique(), (cause, failures, row)
    return cid


def test_the_cgroup_fault_is_found_not_set_aside_as_atlas_routine(fleet40):
    """Borealis's EAGAIN on its 2 hosts: every record an open finding at ib_rdmacg_try_charge
    EAGAIN, one cluster of its own on those 2 hosts."""
    root, summary, result, _ = fleet40
    cid = _assert_cause_reported(root, result, CGROUP)
    f = findings_with_truth(root).filter(pl.col("cluster_id") == cid)
    assert set(f["host"]) == set(summary["cgroup_hosts"]) and set(f["comm"]) == {"python3"}


def test_the_bad_cable_is_one_cluster_naming_its_host(fleet40):
    root, summary, result, _ = fleet40
    cid = _assert_cause_reported(root, result, CABLE)
    f = findings_with_truth(root).filter(pl.col("cluster_id") == cid)
    assert set(f["host"]) == {summary["cable_host"]}
    assert result.clusters.filter(pl.col("cluster_id") == cid)["hosts"].item() == 1


def _assert_routine_set_aside(root) -> None:
    findings = findings_with_truth(root)
    truth = dataset_truth(root)
    for family in ROUTINE:
        want = truth.filter(pl.col("root_cause") == family).height
        got = findings.filter(pl.col("root_cause") == family)
        open_ = got.filter(~pl.col("expected").fill_null(False))
        assert want > 0 and got.height == want and open_.height == 0, (
            family, want, got.height, open_.height, open_.group_by("host").len().sort("host").rows())
        assert got["cluster_id"].is_null().all(), (family, "a routine record was clustered")


def test_atlas_probe_is_set_aside_on_every_host(fleet40):
    """Every atlas probe record -- on the cgroup and cable hosts too -- is set aside, in no cluster."""
    root, _, _, _ = fleet40
    _assert_routine_set_aside(root)


def test_every_cause_is_found(fleet40):
    """Perfect scores: each cause detected on every record, none set aside; the routine all set
    aside; one cluster per cause and none more."""
    _, _, result, scores = fleet40
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] > 0 and e["set_aside_as_expected"] == 0, (cause, e)
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0 and e["open_findings"] == 0, (family, e)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


def _acceptable_alerts(summary) -> dict[str, set]:
    acceptable: dict[str, set] = {}
    for cause, (_, errno, _) in ROOT_CAUSES.items():
        frames = {fn for name, (_, _, fr) in TREES.items() if TREE_FAMILY.get(name) in (cause, PROBE)
                  and FAMILIES[TREE_FAMILY[name]][1] == errno for _, fn, e in fr if e == errno}
        for h in summary["family_hosts"].get(cause, []):
            acceptable.setdefault(h, set()).update({(fn, errno) for fn in frames} | {(fn, None) for fn in frames})
    return acceptable


def test_no_host_alert_off_a_causes_frames(fleet40):
    """An alert is acceptable only on a cause's host at a frame failing with its errno (EAGAIN on
    the 2 cgroup hosts, ETIMEDOUT on the cable host); atlas's EAGAIN alerts nowhere else."""
    _, summary, result, _ = fleet40
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    false = [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())]
    assert not false, false


def _assert_control_raises_nothing(root, summary, result, scores) -> None:
    assert set(summary["counts"]) == set(ROUTINE), summary["counts"]
    opened = findings_with_truth(root).filter(~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.group_by("root_cause", "host", "comm", "bifurcation_probe",
                                                "bifurcation_errno").len()
    assert result.clusters.height == 0, result.clusters
    assert result.host_alerts.height == 0, result.host_alerts
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] > 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_control_fleet_raises_nothing(control40):
    """The tenants and atlas's probe alone: no cluster, no alert, no open finding."""
    _assert_control_raises_nothing(*control40)


def test_larger_fleet_every_cause_found(big40):
    """14 hosts x 4 h, the same roles by index: each fault its own cluster, the probe set aside."""
    root, summary, result, scores = big40
    assert summary["mixed_aggregates"] == {}, summary["mixed_aggregates"]
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_retries_and_abort_cleanup_still_the_cause(retrying40):
    """Borealis's ranks go on after their first EAGAIN only to be refused again twice and to free
    their QPs (cleanup only, then exit): the data shows later records of the same pid after the
    first EAGAIN, none a success of anything but cleanup; every EAGAIN record is still the cause,
    one cluster of its own; atlas's probe set aside; the cable fault its own cluster."""
    root, summary, result, scores = retrying40
    assert summary["mixed_aggregates"] == {}, summary["mixed_aggregates"]
    roots = roots_with_truth(root)
    fatal = roots.filter(pl.col("root_cause") == CGROUP)
    first = fatal.group_by("host", "pid").agg(pl.col("ts_ns").min().alias("first"))
    after = roots.join(first, on=["host", "pid"]).filter(pl.col("ts_ns") > pl.col("first"))
    assert after.height > 0
    assert set(after["command"]) <= {"create_qp", "destroy_qp"}
    assert after.filter(pl.col("command") == "create_qp")["root_cause"].eq(CGROUP).all()
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    _assert_routine_set_aside(root)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    acceptable = _acceptable_alerts(summary)
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    assert not [r for r in rows if (r[2], r[3]) not in acceptable.get(r[0], set())], rows
    assert_every_cause_found(scores, ROOT_CAUSES)


# --------------------------------------------------------------------------------------------
# the same-name variant: atlas's workers are python3 too
# --------------------------------------------------------------------------------------------
def test_same_name_data_differs_only_by_tenant(samename40):
    """The routine and the cgroup fault now share operation, frames, errno and process name; the
    tenant (metadata), the jobs and the hosts still differ: atlas's python3 go on everywhere
    (on the 2 cgroup hosts too), borealis's die, on those 2 hosts only."""
    root, summary, _, _ = samename40
    roots = _tenant(roots_with_truth(root))
    last = roots.group_by("host", "pid").agg(pl.col("ts_ns").max().alias("last"))
    j = roots.join(last, on=["host", "pid"])
    routine = j.filter(pl.col("root_cause") == PROBE)
    fatal = j.filter(pl.col("root_cause") == CGROUP)
    assert set(routine["comm"]) == set(fatal["comm"]) == {"python3"}
    assert set(routine["tenant"]) == {"atlas"} and set(fatal["tenant"]) == {"borealis"}
    on_fault_hosts = routine.filter(pl.col("host").is_in(summary["cgroup_hosts"]))
    assert on_fault_hosts.height > 0 and (on_fault_hosts["ts_ns"] < on_fault_hosts["last"]).mean() >= 0.5
    assert (fatal["ts_ns"] == fatal["last"]).all() and set(fatal["host"]) == set(summary["cgroup_hosts"])


def test_same_name_fault_not_hidden(samename40):
    """Whatever the audit makes of atlas's probe, no borealis record is set aside as routine, and
    the cable fault is still its own cluster on its host."""
    root, summary, result, _ = samename40
    f = findings_with_truth(root)
    boreal = f.filter(pl.col("root_cause") == CGROUP)
    assert boreal.height == dataset_truth(root).filter(pl.col("root_cause") == CGROUP).height
    assert not boreal["expected"].fill_null(False).any() and boreal["cluster_id"].null_count() == 0
    _assert_cause_reported(root, result, CABLE)


@pytest.mark.xfail(strict=True, reason=(
    "audit: a family whose callers share a process name is judged per comm only; atlas's python3 "
    "probe (EAGAIN at ib_rdmacg_try_charge under create_qp), gone on from on all 10 hosts, is opened "
    "on every host (254 open findings) and clustered with borealis's fatal EAGAIN (cluster purity "
    "0.52), because borealis's python3 ranks die of it on 2 hosts; the tenant in the metadata, the "
    "jobs and the hosts separate the two behaviours (cinder's memlock probe is still set aside there)"))
def test_same_name_routine_set_aside_and_fault_its_own_cluster(samename40):
    """The ideal on the same-name fleet: atlas's probe set aside everywhere, the cgroup fault one
    cluster of its own, perfect scores."""
    root, _, result, scores = samename40
    _assert_routine_set_aside(root)
    for cause in ROOT_CAUSES:
        _assert_cause_reported(root, result, cause)
    assert result.clusters.height == len(ROOT_CAUSES), result.clusters
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_same_name_control_raises_nothing(samename_control40):
    """Without the faults the same-name probe is consistent fleet-wide: set aside, nothing raised."""
    _assert_control_raises_nothing(*samename_control40)
