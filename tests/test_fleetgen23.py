"""The audit scored on tests/fleetgen23, a twenty-third fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md and the other
generators' docstrings; without reading the simulator, the other generators, or the audit).

What it is for: an irdma (Intel E810) fleet with a bnxt_re island, of short-lived autoscaled
workers; a new container image's provider that leaves one model's bulk QP buffer unregistered
(ENODATA at irdma_create_qp, fatal, though ENODATA is an errno callers usually go on from); one
bnxt_re host out of QPs (EINVAL at bnxt_re_create_qp, a crash loop); one irdma host whose QP-context
allocations fail now and then (ENOMEM at irdma_create_qp); and two routine refusals every worker
goes on from (EINVAL at _ib_modify_qp for an alternate path on RoCE, every host; EINVAL at
irdma_reg_user_mr for a pool larger than max_mr_size, irdma hosts). generator.py gives the reasons
for the truth."""

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
from fleetgen23 import ROOT_CAUSES, ROUTINE, generate
from fleetgen23.generator import IMAGES, MODELS, TREES

from tracer.schema import dataset_files, metadata_dict, read

# 40 hosts x 3 h (~3 CPU s to build): 32 irdma hosts (16 on the new image), 8 bnxt_re hosts
SHAPE = {"hosts": 40, "hours": 3, "seed": 23}
fleet23 = audited_fleet("fleet23", generate, package="fleetgen23", **SHAPE)


def _traces(root) -> pl.DataFrame:
    events = read(dataset_files(root, "events"), "events")
    roots = events.filter(pl.col("seq") == 0)
    for key in ("image", "model"):
        roots = roots.with_columns(pl.col("metadata").map_elements(lambda m, k=key: metadata_dict(m).get(k),
                                                                   return_dtype=pl.String).alias(key))
    return roots


def _family(root, family: str) -> pl.DataFrame:
    """The root rows of one labelled family's traces (the truth's rows joined to them)."""
    truth = read(dataset_files(root, "truth"), "truth").filter(pl.col("root_cause") == family)
    return _traces(root).join(truth.select("trace_id", "host"), on=["trace_id", "host"])


def test_generator_is_blind():
    """It imports only the data model: nothing of the simulator, the other generators or the audit."""
    assert_generator_is_blind("fleetgen23", tracer_modules={"tracer.schema"})


def test_truth_comes_from_the_reference():
    """Every function of every tree is in the reference; every fault's and routine family's errno
    is one the reference gives near its origin."""
    assert_functions_in_reference({fn for tree in TREES.values() for _, fn, _, _ in tree})
    for key, (probe, errno, _) in {**ROOT_CAUSES, **ROUTINE}.items():
        assert_errno_from_reference(key, probe, errno)


def test_the_fleet_has_the_shapes_it_is_for(fleet23):
    root, summary, _, _ = fleet23
    roles = summary["roles"]
    traces = _traces(root)
    assert set(traces["kernel_release"]) == {"6.8.0-60-generic"}
    assert len(roles["irdma"]) == 32 and len(roles["bnxt_re"]) == 8
    # the alternate-path refusal: every host of both vendors
    alt = _family(root, "alt_path_refused_roce")
    assert set(alt["host"]) == set(roles["irdma"]) | set(roles["bnxt_re"]) and alt.height >= 500
    # the pool probe: irdma hosts only, all of them
    pool = _family(root, "irdma_pool_probe_einval")
    assert set(pool["host"]) == set(roles["irdma"]) and pool.height >= 500
    # the unregistered bulk QP buffer: llama-405b on the new image's irdma hosts only, most of them
    buf = _family(root, "irdma_qp_buf_unregistered")
    assert set(buf["image"]) == {IMAGES[1]} and set(buf["model"]) == {MODELS[1]}
    assert set(buf["host"]) <= set(roles["new_image_irdma"]) and buf["host"].n_unique() >= 12
    enodata = traces.filter(pl.col("errno") == "ENODATA")
    assert set(enodata["trace_id"]) == set(buf["trace_id"])
    # the new image's bnxt_re hosts and every llama-70b worker create their bulk QPs
    ok_qp = traces.filter(pl.col("command") == "create_qp", pl.col("exit_status") == 0)
    assert set(ok_qp.filter(pl.col("image") == IMAGES[1])["host"]) >= set(roles["new_image"])
    # the QP limit: one bnxt_re host, from its onset, a crash loop
    limit = _family(root, "bnxt_qp_limit_exhausted")
    assert set(limit["host"]) == set(roles["qp_limit"]) and limit.height >= 50
    assert limit["end_time"].min() >= datetime.fromisoformat(summary["qp_limit_onset"])
    # the QP-context ENOMEM: one irdma host, all window
    enomem = _family(root, "irdma_qp_ctx_dma_enomem")
    assert set(enomem["host"]) == set(roles["enomem"]) and enomem.height >= 10


def test_routine_families_are_set_aside(fleet23):
    """The alternate-path refusal and the pool's size probe are set aside everywhere."""
    _, _, _, scores = fleet23
    for family in ROUTINE:
        e = scores["per_root_cause"][family]
        assert e["set_aside_as_expected"] == e["traces"] >= 50 and e["open_findings"] == 0, (family, e)
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0


def test_every_cause_is_found(fleet23):
    """Each root cause is a finding on every trace, in its own pure cluster (the two causes at
    irdma_create_qp apart: ENODATA and ENOMEM)."""
    _, _, _, scores = fleet23
    for cause in ROOT_CAUSES:
        e = scores["per_root_cause"][cause]
        assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)
        assert e["dominant_cluster_purity"] == 1.0, (cause, e)
    assert_every_cause_found(scores, ROOT_CAUSES)


def test_the_unregistered_buffer_cluster_names_the_image(fleet23):
    """The ENODATA cluster is over exactly the new-image irdma hosts that failed, all of them
    showing image=serve:2026.12 and holding 75 % or more of the hosts that show it: the cluster
    says so."""
    root, summary, result, _ = fleet23
    hosts = summary["family_hosts"]["irdma_qp_buf_unregistered"]
    assert len(hosts) / len(summary["roles"]["new_image"]) >= 0.75
    rows = result.clusters.filter(pl.col("signature").str.contains("irdma_create_qp"),
                                  pl.col("signature").str.contains("ENODATA"))
    assert rows.height == 1, result.clusters
    row = rows.row(0, named=True)
    assert row["hosts"] == len(hosts), row
    assert f"image={IMAGES[1]}" in row["signature"], row


def test_host_alerts(fleet23):
    """The QP-limit host (EINVAL or a persistent bad state) and the ENOMEM host alert; no alert on
    a host without a fault, none naming a routine family's errno, and the image's ENODATA at most
    on the hosts it failed."""
    _, summary, result, _ = fleet23
    rows = list(result.host_alerts.select("host", "alert", "probe", "errno").iter_rows())
    missed = [host for host, errnos in summary["required_alert_hosts"].items()
              if not any(h == host and (e in errnos or (a == "persistent_bad_state" and e is None))
                         for h, a, _, e in rows)]
    assert not missed, (missed, rows)
    acceptable = summary["alert_hosts"]
    false = [(h, a, p, e) for h, a, p, e in rows
             if not (h in acceptable and (e in acceptable[h] or (e is None and a == "persistent_bad_state")))]
    assert not false, false


def test_one_cluster_per_cause(fleet23):
    """Three clusters, one per root cause, none for a routine family; the two single-host causes'
    clusters are over their one host each, with every failure the host's records stand for."""
    root, summary, result, _ = fleet23
    clusters = result.clusters
    assert clusters.height == len(ROOT_CAUSES), clusters
    for cause, role in (("bnxt_qp_limit_exhausted", "qp_limit"), ("irdma_qp_ctx_dma_enomem", "enomem")):
        probe, errno, _ = ROOT_CAUSES[cause]
        rows = clusters.filter(pl.col("signature").str.contains(probe), pl.col("signature").str.contains(errno))
        assert rows.height == 1, (cause, clusters)
        row = rows.row(0, named=True)
        traces = _family(root, cause)
        stands_for = int(traces["repeat_count"].fill_null(1).sum())
        assert row["hosts"] == len(summary["roles"][role]) == 1 and row["failures"] == stands_for, (cause, row)
