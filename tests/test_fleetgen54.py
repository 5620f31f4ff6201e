"""Blind test set 54: correlated fleet events (tests/fleetgen54).

Expectations come from README.md, docs/*.md, `--help`, tracer/schema.py and the RDMA reference
only. The generator writes a spool (tracer/schema.py's layout); everything here goes through the
real CLIs, `baseline ingest` -> `learn` -> `audit --json` -> `evaluate --json`, and reads the
tables the audit's --json names.

The fleet (tests/fleetgen54/generator.py): 56 mlx5 hosts in four racks over 08:00-18:00, every
job meeting two routine errors (an empty GID slot's ENODATA, GPU memory's pin EFAULT taken over by
the peer-memory client). What the docs promise about the four events:
* Rack rA's ToR switch fails every INIT->RTR of its 16 hosts with ETIMEDOUT for 90 minutes.
  Root-cause clusters are "by kernel-side signature" (README), and a cluster over two hosts or
  more whose hosts all show one job-metadata value, holding 75 % of the hosts with it, "says so"
  (architecture.md): ONE cluster over the 16 hosts, saying they share rack=rA. Host alerts:
  "a host down on the probe (>= 90 % of its calls failing, 3 or more), compared with the hosts not
  down (a rack's hosts each alert)" and "a rack's switch fails part of a platform and keeps its
  per-host alerts"; the outage is a run of six bad buckets, above the hour a persistent bad state
  needs: a persistent_bad_state alert on each rack host naming ETIMEDOUT.
* A kernel rollout to half of the fleet (racks rC, rD) makes every create_cq fail EOPNOTSUPP at
  create_cq_user, fatal to the rank. Is it an alert? The docs: "A failure shared by every host of
  one platform -- all hosts of a (vendor, kernel release) group that called the probe in the
  bucket, 3 or more, failing it on most calls (a bnxt_re release failing every create_qp) -- is
  no host's evidence: the root-cause cluster names the driver, one page for one rollback instead
  of one 'down' alert per host." So: no host alert on the upgraded hosts; one cluster over exactly
  them that says "since kernel update to <release>" (its failures ran a release hosts updated to,
  each failing only after its own update).
* NIC firmware on two hosts fails 8 % of their registrations EFAULT at mlx5r_umr_update_mr_pas:
  its own cluster over the two hosts (sharing nic_fw), and, an unexpected errno coming back on at
  most 3 hosts in 4+ buckets 10+ times, a host alert on each (`recurring_errno`, the docs' "an
  intermittent fault present from the window's start"; a rising_errno_rate is taken too).
* Quiet: the maintenance hour in which every host's jobs drain to zero and come back, the
  decommissioned host that stops reporting, and the routine errors (whose counts follow the jobs)
  raise no alert; no alert names a routine errno ("a learned family out of its band on a host
  where an unexpected error rises or persists is that error's symptom, not an alert of its own").

Where the docs leave a detail open, only the unambiguous part is tested: the rack alert's kind is
taken from the persistent-state rule (a run of 4+ bad buckets), its probe may be any frame of the
failing modify_qp chain (the docs name "an unexpected error's probe"), and its `since` may be a
bucket late (the 15-minute snapshots' counters land in the bucket their close time names).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fleetgen54 import generator as gen
from tracer import schema

BIN = Path(__file__).resolve().parents[1] / ".venv" / "bin"
QUARTER = dt.timedelta(minutes=15)
FAULTY = set(gen.RACK_HOSTS) | set(gen.UPGRADED) | set(gen.FIRMWARE_HOSTS)


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLARS_MAX_THREADS="1", TZ="UTC")
    return subprocess.run([str(BIN / "baseline"), *args], capture_output=True, text=True, env=env, timeout=300)


def utc(v) -> dt.datetime:
    return v if v.tzinfo else v.replace(tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleetgen54")
    info = gen.generate(root)
    ds = root / "ds"
    ing = run("ingest", str(info["spool"]), str(ds), "--json")
    assert ing.returncode == 0, ing.stderr
    gen.write_truth(ds, info["traces"])
    learn = run("learn", str(ds))
    assert learn.returncode == 0, learn.stderr
    audit = run("audit", str(ds), "--json")
    assert audit.returncode == 0, audit.stderr
    summary = json.loads(audit.stdout)
    ev = run("evaluate", str(ds), "--json")
    files = summary["files"]
    info.update(
        ds=ds, ingest=json.loads(ing.stdout), audit=summary, evaluate=ev,
        findings=pq.read_table(files["findings"]).to_pylist(),
        clusters=pq.read_table(files["clusters"]).to_pylist(),
        alerts=pq.read_table(files["host_alerts"]).to_pylist(),
    )
    return info


def shown(alerts: list[dict]) -> str:
    return "; ".join(f"{a['host']} {a['alert']} {a['probe']} {a['errno']} since {a['since']}"
                     for a in alerts) or "none"


def alerts_on(fleet, hosts) -> list[dict]:
    return [a for a in fleet["alerts"] if a["host"] in set(hosts)]


def cause_clusters(fleet) -> dict[str, set[int]]:
    """Per injected cause, the cluster ids of its traces' open findings."""
    cause_of = {t.trace_id: t.cause for t in fleet["traces"]}
    out: dict[str, set[int]] = defaultdict(set)
    for f in fleet["findings"]:
        if not f["expected"] and cause_of.get(f["trace_id"]):
            out[cause_of[f["trace_id"]]].add(f["cluster_id"])
    return out


def cluster_of(fleet, cause: str) -> dict:
    ids = cause_clusters(fleet)[cause]
    assert len(ids) == 1, (cause, ids)
    (cluster,) = [c for c in fleet["clusters"] if c["cluster_id"] in ids]
    return cluster


def hosts_of_cluster(fleet, cluster_id: int) -> set[str]:
    return {f["host"] for f in fleet["findings"] if f["cluster_id"] == cluster_id and not f["expected"]}


# ----------------------------------------------------------------------------- the data itself
def test_ingest_takes_every_snapshot(fleet):
    res = fleet["ingest"]["ingest"]
    assert res["quarantined"] == []
    assert res["snapshots"] == sum(len(gen.snapshot_closes(h)) for h in gen.HOSTS)


def test_counters_are_what_the_probes_counted(fleet):
    """Per host and probe, the ingested summaries' calls and errno counts equal the generator's
    (the maintenance hour's zeros and the decommissioned host's last snapshot included)."""
    calls: dict[tuple[str, str], int] = defaultdict(int)
    errs: dict[tuple[str, str, str], int] = defaultdict(int)
    for b in schema.read(fleet["ds"] / "counter_buckets", "counter_buckets").to_dicts():
        calls[(b["host"], b["probe"])] += b["n"]
        for e in b["errno_counts"] or ():
            errs[(b["host"], b["probe"], e["errno"])] += e["count"]
    for (host, probe), (n, per_errno) in fleet["counted"].items():
        assert calls[(host, probe)] == n, (host, probe)
        for errno, v in per_errno.items():
            assert errs[(host, probe, errno)] == v, (host, probe, errno)


def test_the_scenario_is_in_the_data(fleet):
    """The events the tests rely on happened: each cause on its hosts only, the maintenance hour
    without a call, the decommissioned host silent after its drain."""
    hosts: dict[str, set] = defaultdict(set)
    for t in fleet["traces"]:
        hosts[t.cause].add(t.host)
    assert hosts[gen.OUTAGE_CAUSE] == set(gen.RACK_HOSTS)
    assert hosts[gen.ROLLOUT_CAUSE] == set(gen.UPGRADED)
    assert hosts[gen.FIRMWARE_CAUSE] == set(gen.FIRMWARE_HOSTS)
    assert len(hosts[None]) == len(gen.HOSTS)  # routine errors and good traces everywhere
    assert not [t for t in fleet["traces"] if gen.MAINT_START <= t.start < gen.MAINT_END]
    assert max(t.start for t in fleet["traces"] if t.host == gen.DECOMMISSIONED) < gen.DRAIN_AT


# ----------------------------------------------------------------------------- findings
def test_routine_errors_are_set_aside(fleet):
    by_id = {f["trace_id"]: f for f in fleet["findings"]}
    routine = [t for t in fleet["traces"] if t.expected]
    assert len({t.host for t in routine}) == len(gen.HOSTS)
    missing = [t.trace_id for t in routine if t.trace_id not in by_id]
    open_ = [t.trace_id for t in routine if t.trace_id in by_id and not by_id[t.trace_id]["expected"]]
    assert not open_, (len(open_), open_[:5])
    assert not missing, (len(missing), missing[:5])


def test_fault_failures_are_open_with_their_bifurcation(fleet):
    """Each fault's failures are open findings; the bifurcation is where the docs put it: the
    origin (the deepest frame of the failing chain) unless a frame before it took an edge no good
    trace of the operation has. (Written as: "a GPU buffer's peer-memory fallback, which no good
    registration (all of host memory) shows, comes before the UMR's EFAULT"; since round
    forty-eight the routine GPU registrations, rescued after the pin's EFAULT, are known-good
    structure too, and both kinds of buffer leave it at the UMR.)"""
    by_id = {f["trace_id"]: f for f in fleet["findings"]}
    wrong = []
    for t in (t for t in fleet["traces"] if t.cause):
        f = by_id.get(t.trace_id)
        assert f is not None, t
        assert f["expected"] is False, (t, f)
        got = (f["bifurcation_probe"], f["bifurcation_errno"], f["origin_layer"])
        if got != (t.bif_probe, t.bif_errno, t.origin_layer):
            wrong.append((t.cause, t.arg, got))
    assert not wrong, (len(wrong), wrong[:5])


# ----------------------------------------------------------------------------- clusters
def test_each_event_is_one_cluster_of_its_own(fleet):
    """Three causes, three clusters: no cause split, no cluster mixing two causes, no open
    finding outside them."""
    cause_of = {t.trace_id: t.cause for t in fleet["traces"]}
    members: dict[int, set] = defaultdict(set)
    for f in fleet["findings"]:
        if not f["expected"]:
            members[f["cluster_id"]].add(cause_of.get(f["trace_id"]))
    per_cause = cause_clusters(fleet)
    assert set(per_cause) == set(gen.CAUSES)
    for cause, ids in per_cause.items():
        assert len(ids) == 1, (cause, ids)
        assert members[next(iter(ids))] == {cause}, (cause, members)
    assert len(members) == 3, members


def test_rack_outage_is_one_cluster_over_the_rack(fleet):
    cluster = cluster_of(fleet, gen.OUTAGE_CAUSE)
    assert cluster["hosts"] == len(gen.RACK_HOSTS), cluster
    assert hosts_of_cluster(fleet, cluster["cluster_id"]) == set(gen.RACK_HOSTS)
    assert utc(cluster["first_seen"]) >= gen.OUTAGE_START and utc(cluster["last_seen"]) <= gen.OUTAGE_END, cluster


def test_rack_cluster_says_its_hosts_share_the_rack(fleet):
    """All 16 hosts show rack=rA and hold every host showing it: the cluster says so."""
    cluster = cluster_of(fleet, gen.OUTAGE_CAUSE)
    assert "hosts share rack=rA" in cluster["signature"], cluster["signature"]


def test_rollout_is_one_cluster_tied_to_the_upgraded_hosts(fleet):
    cluster = cluster_of(fleet, gen.ROLLOUT_CAUSE)
    assert cluster["hosts"] == len(gen.UPGRADED), cluster
    assert hosts_of_cluster(fleet, cluster["cluster_id"]) == set(gen.UPGRADED)
    assert utc(cluster["first_seen"]) >= gen.UPGRADE_AT, cluster


def test_rollout_cluster_names_the_kernel_update(fleet):
    cluster = cluster_of(fleet, gen.ROLLOUT_CAUSE)
    assert f"since kernel update to {gen.NEW_RELEASE}" in cluster["signature"], cluster["signature"]


def test_firmware_bug_is_its_own_cluster_on_two_hosts(fleet):
    cluster = cluster_of(fleet, gen.FIRMWARE_CAUSE)
    assert cluster["hosts"] == 2, cluster
    assert hosts_of_cluster(fleet, cluster["cluster_id"]) == set(gen.FIRMWARE_HOSTS)
    assert f"hosts share nic_fw={gen.FW_BAD}" in cluster["signature"], cluster["signature"]


def test_audit_json_counts_match_its_tables(fleet):
    s = fleet["audit"]
    assert s["findings"] == len(fleet["findings"])
    assert s["clusters"] == len(fleet["clusters"])
    assert s["host_alerts"] == len(fleet["alerts"])
    assert s["open_findings"] == sum(1 for f in fleet["findings"] if not f["expected"])


# ----------------------------------------------------------------------------- host alerts
# Fixed: the rollout was rolled back at the end of the day, so every upgraded host's latest release was
# the old one, and the audit grouped them with the hosts that never left it: half of a platform
# failing, a persistent_bad_state alert on each of the 28 (baseline.fleet.audit._release_spans).
KNOWN_MISSES: dict[str, str] = {}


def test_each_rack_host_alerts_on_the_outage(fleet):
    """Each rA host failed every INIT->RTR neighbour resolution for six buckets while rack rB's
    hosts of the same platform resolved theirs: a persistent bad state on each, naming ETIMEDOUT
    at a frame of the modify_qp chain, since the outage's first bucket (or the next: a snapshot's
    counters land in the bucket its close names)."""
    missing = []
    for host in gen.RACK_HOSTS:
        found = [a for a in alerts_on(fleet, [host]) if a["alert"] == "persistent_bad_state"
                 and a["errno"] == "ETIMEDOUT" and a["probe"] in gen.MODIFY_QP_PROBES
                 and gen.OUTAGE_START <= utc(a["since"]) <= gen.OUTAGE_START + 2 * QUARTER]
        if not found:
            missing.append(host)
    assert not missing, (missing, shown(alerts_on(fleet, gen.RACK_HOSTS)))


def test_rack_hosts_alert_on_nothing_else(fleet):
    stray = [a for a in alerts_on(fleet, gen.RACK_HOSTS) if a["errno"] != "ETIMEDOUT"]
    assert not stray, shown(stray)


def test_rollout_raises_no_host_alert(fleet):
    found = alerts_on(fleet, gen.UPGRADED)
    assert not found, shown(found)


def test_firmware_hosts_each_alert_on_efault_at_reg_mr(fleet):
    for host in gen.FIRMWARE_HOSTS:
        found = [a for a in alerts_on(fleet, [host]) if a["errno"] == "EFAULT"
                 and a["probe"] in gen.REG_MR_FAULT_PROBES
                 and a["alert"] in ("recurring_errno", "rising_errno_rate")]
        assert found, (host, shown(alerts_on(fleet, [host])))


def test_firmware_hosts_alert_on_nothing_else(fleet):
    stray = [a for a in alerts_on(fleet, gen.FIRMWARE_HOSTS) if a["errno"] != "EFAULT"]
    assert not stray, shown(stray)


def test_no_alert_names_a_routine_error(fleet):
    """ENODATA of the empty GID slots and the pin's EFAULT under the peer-memory fallback are
    routine on every host: no alert names them, not even on the crash-looping hosts, where every
    restart repeats them."""
    routine = [a for a in fleet["alerts"] if a["errno"] == "ENODATA" or a["probe"] in gen.ROUTINE_PROBES
               or (a["errno"] == "EFAULT" and a["host"] not in gen.FIRMWARE_HOSTS)]
    assert not routine, shown(routine)


def test_quiet_hosts_raise_no_alert(fleet):
    """The hosts no fault touched (the decommissioned one included) have the maintenance hour and
    the routine errors only: no alert."""
    quiet = [a for a in fleet["alerts"] if a["host"] not in FAULTY]
    assert not quiet, shown(quiet)


def test_decommissioned_host_raises_no_alert(fleet):
    found = alerts_on(fleet, [gen.DECOMMISSIONED])
    assert not found, shown(found)


def test_maintenance_window_raises_no_alert(fleet):
    """Every host's calls drop to zero for an hour and come back with a burst of start-ups (and
    their routine errors): no alert begins there."""
    near = [a for a in fleet["alerts"] if a["since"] is not None
            and gen.MAINT_START - QUARTER <= utc(a["since"]) <= gen.MAINT_END + 4 * QUARTER]
    assert not near, shown(near)


def test_no_latency_alert(fleet):
    slow = [a for a in fleet["alerts"] if a["alert"] == "rising_latency"]
    assert not slow, shown(slow)


# ----------------------------------------------------------------------------- evaluate
def test_evaluate_scores_each_cause_apart(fleet):
    ev = fleet["evaluate"]
    assert ev.returncode == 0, ev.stderr
    per = json.loads(ev.stdout)["per_root_cause"]
    assert set(gen.CAUSES) <= set(per), per.keys()
    dominant = {c: per[c]["dominant_cluster"] for c in gen.CAUSES}
    assert len(set(dominant.values())) == 3, dominant
    for cause in gen.CAUSES:
        (cluster_id,) = cause_clusters(fleet)[cause]
        assert dominant[cause] == cluster_id, (cause, dominant)
