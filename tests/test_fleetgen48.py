"""Blind set 48: a mixed fleet, two kernel/driver releases with different success paths.

24 hosts x 6 h, 12 on release A (OFED: peer-memory umem pinning, an SRQ init frame in
create_qp, AUTO counter mode: one firmware command more in RESET->INIT) and 12 on release B
(inbox upstream). Each release has its own routine error: A's GPU registrations fail the pin
EFAULT and the peer client takes the range (absorbed, the root succeeds); B's kernel refuses the
extended query_device with EOPNOTSUPP on every call and every process falls back. Three real
faults: reg_mr ENOMEM at ib_peer_umem_get on 2 A hosts, modify_qp INIT->RTR ETIMEDOUT at the
firmware command on 1 B host, create_cq EINVAL at create_cq_user on 3 hosts of both releases.
See tests/fleetgen48/generator.py. Every expectation below is from README.md /
docs/architecture.md / the help texts, written before the tool was run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.fleetgen48.generator import (
    FAULTS,
    HOSTS,
    RELEASE,
    RELEASE_A,
    RELEASE_B,
    RELEASE_OWN_FRAMES,
    generate,
)

BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
TIMEOUT = 300


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BASELINE, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleetgen48") / "fleet"
    manifest = generate(root)
    return root, manifest


@pytest.fixture(scope="module")
def audit(fleet):
    """`baseline audit DATASET -o DATASET/audit` with no saved model (learned from the data)."""
    root, _ = fleet
    out = root / "audit"
    proc = run("audit", str(root), "-o", str(out), "--json")
    return proc, out


@pytest.fixture(scope="module")
def evaluated(fleet, audit):
    root, _ = fleet
    return run("evaluate", str(root), "--json")


@pytest.fixture(scope="module")
def model_audit(fleet, audit, evaluated):
    """`baseline learn` then `baseline audit --model` (after the first audit and its evaluation)."""
    root, _ = fleet
    model = root.parent / "model.parquet"
    learned = run("learn", str(root), "-o", str(model))
    out = root.parent / "audit-model"
    proc = run("audit", str(root), "--model", str(model), "-o", str(out), "--json")
    return learned, proc, out


def tables(out: Path) -> dict[str, pl.DataFrame]:
    return {t: pl.read_parquet(out / f"{t}.parquet") for t in ("findings", "clusters", "host_alerts")}


def open_findings(out: Path) -> pl.DataFrame:
    return tables(out)["findings"].filter(~pl.col("expected").fill_null(False))


def causes(out: Path) -> dict[tuple[str, str, str], dict]:
    """(operation, bifurcation probe, errno) -> trace ids, hosts, origin layers, cluster ids."""
    found = {}
    for key, group in open_findings(out).group_by(["operation", "bifurcation_probe", "bifurcation_errno"]):
        found[tuple(key)] = {
            "trace_ids": set(group["trace_id"]),
            "hosts": set(group["host"]),
            "origin_layers": set(group["origin_layer"]),
            "cluster_ids": set(group["cluster_id"]),
        }
    return found


def fault_key(name: str) -> tuple[str, str, str]:
    f = FAULTS[name]
    return (f["operation"], f["probe"], f["errno"])


# ---------------------------------------------------------------------------------- the data
def test_generated_fleet_shape(fleet):
    _, m = fleet
    assert sorted(RELEASE.values()).count(RELEASE_A) == 12 and sorted(RELEASE.values()).count(RELEASE_B) == 12
    assert len(HOSTS) == 24
    assert {RELEASE[h] for h in FAULTS["peer_mem_enomem"]["hosts"]} == {RELEASE_A}
    assert {RELEASE[h] for h in FAULTS["fw_cmd_timeout"]["hosts"]} == {RELEASE_B}
    assert {RELEASE[h] for h in FAULTS["cq_bad_page_size"]["hosts"]} == {RELEASE_A, RELEASE_B}
    for f in m["faults"].values():
        assert len(f["trace_ids"]) >= 10 * len(f["hosts"])
    assert m["held_out"] > 100
    assert m["routine"]["b_ex_query_refused"]["hosts"] == {h for h in HOSTS if RELEASE[h] == RELEASE_B}
    assert m["routine"]["a_gpu_pin_absorbed"]["hosts"] == {h for h in HOSTS if RELEASE[h] == RELEASE_A}


def test_audit_reads_the_files(audit):
    """README: the readers take the documented layout; `baseline audit` exits 0 when done."""
    proc, out = audit
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    for t in ("findings", "clusters", "host_alerts"):
        assert (out / f"{t}.parquet").exists()


# ---------------------------------------------------------------------------------- findings
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_found_at_its_frame(fleet, audit, name):
    """Each planted fault: open findings with its probe and errno, on exactly its traces and
    hosts, origin in its layer (architecture: origin = deepest frame of the failing chain,
    bifurcation = first frame before it on an edge no good trace of the operation has)."""
    _, m = fleet
    _, out = audit
    found = causes(out)
    key = fault_key(name)
    assert key in found, f"{name}: no open finding {key}; open causes: {sorted(found)}"
    got = found[key]
    assert got["hosts"] == m["faults"][name]["hosts"]
    assert got["trace_ids"] == m["faults"][name]["trace_ids"]
    assert got["origin_layers"] == {FAULTS[name]["origin_layer"]}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_bifurcation_seq_is_the_fault_frame(fleet, audit, name):
    """findings.bifurcation_seq: the frame (seq) of the trace where it left good behaviour -- the
    fault's own frame, never a release's own success frame entered before it."""
    _, m = fleet
    _, out = audit
    f = FAULTS[name]
    rows = open_findings(out).filter((pl.col("operation") == f["operation"]) & (pl.col("bifurcation_probe") == f["probe"]))
    assert rows.height == len(m["faults"][name]["trace_ids"])
    got = dict(zip(rows["trace_id"], rows["bifurcation_seq"], strict=True))
    want = {t: m["bifurcation_seq"][t] for t in got}
    wrong = {t: (got[t], want[t]) for t in got if got[t] != want[t]}
    assert not wrong, f"{len(wrong)} findings at another seq, e.g. {list(wrong.items())[:3]} (got, want)"


def test_findings_carry_comm(audit):
    """architecture: the audit's findings carry each trace's `comm`."""
    _, out = audit
    assert set(open_findings(out)["comm"]) == {"python3"}


def test_no_open_finding_but_the_faults(fleet, audit):
    """Routine per-release errors (A's absorbed pin EFAULT, B's EOPNOTSUPP query) are set aside:
    the open findings are the planted faults' traces and nothing else."""
    _, m = fleet
    _, out = audit
    found = causes(out)
    assert set(found) == {fault_key(n) for n in FAULTS}
    planted = set().union(*(f["trace_ids"] for f in m["faults"].values()))
    assert set(open_findings(out)["trace_id"]) == planted


def test_bifurcation_never_on_a_release_own_success_frame(audit):
    _, out = audit
    probes = set(open_findings(out)["bifurcation_probe"])
    assert not probes & RELEASE_OWN_FRAMES


def test_routine_errors_never_open(fleet, audit):
    _, m = fleet
    _, out = audit
    findings = tables(out)["findings"]
    routine_ids = set().union(*(r["trace_ids"] for r in m["routine"].values()))
    opened = findings.filter(pl.col("trace_id").is_in(list(routine_ids)) & ~pl.col("expected").fill_null(False))
    assert opened.height == 0, opened.head(5)
    errnos = set(open_findings(out)["bifurcation_errno"])
    assert not errnos & {"EOPNOTSUPP", "EFAULT"}
    assert "query_device" not in set(open_findings(out)["operation"])


# ---------------------------------------------------------------------------------- clusters
def test_one_cluster_per_cause(fleet, audit):
    _, m = fleet
    _, out = audit
    found = causes(out)
    ids = {}
    for name in FAULTS:
        got = found.get(fault_key(name), {}).get("cluster_ids", set())
        assert len(got) == 1 and None not in got, f"{name}: clusters {got}"
        ids[name] = next(iter(got))
    assert len(set(ids.values())) == 3, ids
    clusters = tables(out)["clusters"]
    assert set(clusters["cluster_id"]) == set(ids.values()), clusters
    for name, cid in ids.items():
        row = clusters.filter(pl.col("cluster_id") == cid).row(0, named=True)
        assert row["hosts"] == len(FAULTS[name]["hosts"])
        assert row["failures"] == len(m["faults"][name]["trace_ids"])
        assert row["origin_layer"] == FAULTS[name]["origin_layer"]


def test_cross_release_fault_is_one_cluster_on_both_releases(fleet, audit):
    """cq_bad_page_size fails after each release's own pinning frames (A: ib_umem_get_peer ->
    __ib_umem_get, B: ib_umem_get): one cause, one cluster holding both releases' hosts."""
    _, out = audit
    found = causes(out)[fault_key("cq_bad_page_size")]
    assert len(found["cluster_ids"]) == 1
    assert {RELEASE[h] for h in found["hosts"]} == {RELEASE_A, RELEASE_B}


# ---------------------------------------------------------------------------------- host alerts
FAULTY_HOSTS = {h: name for name, f in FAULTS.items() for h in f["hosts"]}


def test_host_alerts_only_on_faulty_hosts(audit):
    _, out = audit
    alerts = tables(out)["host_alerts"]
    assert set(alerts["host"]) <= set(FAULTY_HOSTS), alerts
    assert not set(alerts["errno"].drop_nulls()) & {"EOPNOTSUPP", "EFAULT"}, alerts


def test_each_faulty_host_alerts_with_its_errno(audit):
    """recurring_errno: an unexpected errno back in 4+ buckets, 10+ times, its origin probe on at
    most 3 hosts and not every host of a platform -- each faulty host fails in ~all 24 buckets."""
    _, out = audit
    alerts = tables(out)["host_alerts"]
    for host, name in FAULTY_HOSTS.items():
        mine = alerts.filter(pl.col("host") == host)
        assert FAULTS[name]["errno"] in set(mine["errno"].drop_nulls()), (host, mine)


# ---------------------------------------------------------------------------------- learn + model
def test_learn_then_audit_with_model_same_causes(audit, model_audit):
    _, out = audit
    learned, proc, out2 = model_audit
    assert learned.returncode == 0, learned.stderr
    assert proc.returncode == 0, proc.stderr
    first, second = causes(out), causes(out2)
    assert set(second) == set(first)
    for key in first:
        assert second[key]["trace_ids"] == first[key]["trace_ids"]
        assert second[key]["hosts"] == first[key]["hosts"]
        assert len(second[key]["cluster_ids"]) == 1
    assert tables(out2)["clusters"].height == tables(out)["clusters"].height
    assert set(tables(out2)["host_alerts"]["host"]) == set(tables(out)["host_alerts"]["host"])


# ---------------------------------------------------------------------------------- evaluate
def test_evaluate_scores_perfect(fleet, evaluated):
    """The truth table (schema TRUTH) scored by `baseline evaluate`: the metric names are those
    docs/benchmarks.md prints."""
    _, m = fleet
    assert evaluated.returncode == 0, evaluated.stderr
    scores = json.loads(evaluated.stdout)
    flat = scores.get("scores", scores) if isinstance(scores, dict) else scores
    expected = {
        "cluster_purity": 1.0, "cluster_completeness": 1.0, "bifurcation_top1": 1.0, "origin_layer_top1": 1.0,
        "false_findings_on_good": 0, "false_findings": 0, "routine_set_aside": 1.0, "routine_open_findings": 0.0,
        "expected_error_precision": 1.0, "expected_error_recall": 1.0,
        "failures_scored": sum(len(f["trace_ids"]) for f in m["faults"].values()),
        "held_out_good_traces": m["held_out"],
    }
    got = {k: flat.get(k) for k in expected}
    assert got == pytest.approx(expected), got
