"""Blind test set 51: the tracer daemon's life on a host (tests/fleetgen51).

Expectations come from README.md, docs/*.md, `--help`, tracer/schema.py and the RDMA reference
only. The generator writes a spool (tracer/schema.py's spool layout); everything here goes
through the real CLIs: `baseline ingest` -> `learn` -> `audit` -> `evaluate` / `report`.

What a mature tool must do, and where it is promised:
* A daemon restart resets its counters; the sequence number continues (schema.SNAPSHOT_NAME's
  comment). Under an exporter shipping cumulative new - old the first delta after it goes
  negative: "counts as zero, column by column" (docs/architecture.md, `schema.counted_delta`),
  so no bucket's calls go below zero or below its errors, and no alert comes of it.
* A snapshot delivered twice (the same SNAPSHOT_KEY / RECORD_KEY) "counts once, its first copy,
  in the summaries and in the raw counters alike"; a call tree delivered twice counts once in
  learn and the audit.
* Hosts that join, leave, or miss an hour are no failures: no finding, no host alert (a host that
  stops reporting alerts only "while failing").
* The peer-memory fault: bifurcation at ib_peer_umem_get EIO (the pin's EFAULT before a failing
  peer-memory fallback is superseded, docs "What is routine"), one root-cause cluster over its
  three hosts, and a persistent bad state per host (a crash loop on 3 hosts: not more than 3,
  so per-host evidence).
* Routine errors (query_gid ENODATA, the GPU pin's absorbed EFAULT) on every host are set aside.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fleetgen51 import generator as gen
from tracer import schema

BIN = Path(__file__).resolve().parents[1] / ".venv" / "bin"
QUIET_HOSTS = ("h02", "h05", "h06", "h07", "h13", "h14", "h15")  # daemon-life hosts without a fault


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLARS_MAX_THREADS="1", TZ="UTC")
    return subprocess.run([str(BIN / "baseline"), *args], capture_output=True, text=True, env=env, timeout=180)


def utc(v) -> dt.datetime:
    return v if v.tzinfo else v.replace(tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleetgen51")
    info = gen.generate(root)
    spool = info["spool"]
    # the same spool delivered again later (h07's and h11's snapshots re-sent after a crash)
    again = root / "spool-again"
    for h in ("h07", "h11"):
        shutil.copytree(spool / h, again / h)
    n_snap_dirs = sum(1 for h in spool.iterdir() for _ in h.iterdir())
    ds = root / "ds"
    ing = run("ingest", str(spool), str(ds), "--json")
    assert ing.returncode == 0, ing.stderr
    ing2 = run("ingest", str(again), str(ds), "--json")
    assert ing2.returncode == 0, ing2.stderr
    gen.write_truth(ds, info["traces"])
    learn = run("learn", str(ds))
    assert learn.returncode == 0, learn.stderr
    audit = run("audit", str(ds), "--json")
    assert audit.returncode == 0, audit.stderr
    out = ds / "audit"
    info.update(
        root=root, ds=ds, out=out, n_snap_dirs=n_snap_dirs,
        ingest=json.loads(ing.stdout), ingest_again=json.loads(ing2.stdout), audit=json.loads(audit.stdout),
        findings=pq.read_table(out / "findings.parquet").to_pylist(),
        clusters=pq.read_table(out / "clusters.parquet").to_pylist(),
        alerts=pq.read_table(out / "host_alerts.parquet").to_pylist(),
    )
    return info


def fault_ids(fleet) -> set[str]:
    return {t.trace_id for t in fleet["traces"] if t.cause}


def routine_ids(fleet) -> set[str]:
    return {t.trace_id for t in fleet["traces"] if t.expected}


# ----------------------------------------------------------------------------------- ingest
def test_ingest_takes_every_snapshot_and_quarantines_none(fleet):
    """Restarts (seq continuing, negative exporter deltas), a seq gap, a duplicated snapshot and
    joins/leaves are all valid spools: nothing quarantined, every snapshot taken, spool emptied."""
    res = fleet["ingest"]["ingest"]
    assert res["quarantined"] == []
    assert fleet["ingest"]["compact"]["quarantined"] == []
    assert res["snapshots"] + res["already_ingested"] == fleet["n_snap_dirs"]
    assert not list(fleet["spool"].glob("*/snap-*")), "ingested snapshots stay in the spool"


def test_reingest_of_resent_spool_adds_nothing(fleet):
    """Idempotent ingest: a spool re-sent after a crash holds only snapshots the dataset has."""
    res = fleet["ingest_again"]["ingest"]
    assert res["quarantined"] == []
    assert res["snapshots"] == 0 and res["rows"]["counters"] == 0 and res["rows"]["events"] == 0, res


def _buckets(fleet) -> list[dict]:
    return schema.read(fleet["ds"] / "counter_buckets", "counter_buckets").to_dicts()


def test_counter_summaries_count_resets_as_zero_and_duplicates_once(fleet):
    """Per host and probe the summaries' calls and errno counts are what the daemons counted:
    the exporter's negative post-restart delta as 0, the snapshot delivered twice once."""
    calls: dict[tuple[str, str], int] = defaultdict(int)
    errs: dict[tuple[str, str, str], int] = defaultdict(int)
    for b in _buckets(fleet):
        calls[(b["host"], b["probe"])] += b["n"]
        for e in b["errno_counts"] or []:
            errs[(b["host"], b["probe"], e["errno"])] += e["count"]
    want_calls = {(h, p): n for h, t in fleet["truth"].items() for p, n in t.calls.items()}
    want_errs = {(h, p, e): n for h, t in fleet["truth"].items() for (p, e), n in t.errnos.items()}
    assert {k: v for k, v in calls.items() if v} == {k: v for k, v in want_calls.items() if v}
    assert dict(errs) == want_errs


def test_no_bucket_negative_or_failing_more_than_it_called(fleet):
    for b in _buckets(fleet):
        assert b["n"] >= 0, b
        fails = {e["errno"]: e["count"] for e in b["errno_counts"] or []}
        assert all(v > 0 for v in fails.values()), b
        # every errno counted at a probe is one of its calls (one errno per failed call)
        assert sum(fails.values()) <= b["n"], b


def test_joined_and_decommissioned_hosts_span_their_own_time(fleet):
    first: dict[str, dt.datetime] = {}
    last: dict[str, dt.datetime] = {}
    for b in _buckets(fleet):
        t = utc(b["bucket"])
        first[b["host"]] = min(first.get(b["host"], t), t)
        last[b["host"]] = max(last.get(b["host"], t), t)
    assert set(first) == set(gen.HOSTS)
    for h in gen.JOINS:
        assert first[h] == dt.datetime(2026, 12, 3, 7, 0, tzinfo=dt.UTC)
    for h in gen.LEAVES:
        assert last[h] == dt.datetime(2026, 12, 3, 7, 30, tzinfo=dt.UTC)


# ------------------------------------------------------------------------------------ audit
def test_fault_is_one_cluster_at_the_peer_memory_layer(fleet):
    open_clusters = fleet["clusters"]
    assert len(open_clusters) == 1, [c["signature"] for c in open_clusters]
    c = open_clusters[0]
    assert "ib_peer_umem_get EIO" in c["signature"]
    assert c["origin_layer"] == "peer-mem"
    assert c["hosts"] == len(gen.FAULT_HOSTS)
    # the duplicated snapshot's trees count once; the restart's new boot ids are new trees
    assert c["failures"] == len(fault_ids(fleet))


def test_fault_findings_name_probe_errno_and_hosts(fleet):
    open_f = [f for f in fleet["findings"] if not f["expected"]]
    assert {f["trace_id"] for f in open_f} == fault_ids(fleet)
    assert len(open_f) == len(fault_ids(fleet)), "a finding repeated (a tree delivered twice counted twice)"
    assert {f["host"] for f in open_f} == set(gen.FAULT_HOSTS)
    assert Counter((f["bifurcation_probe"], f["bifurcation_errno"], f["origin_layer"]) for f in open_f) == {
        (gen.FAULT_PROBE, gen.FAULT_ERRNO, gen.FAULT_LAYER): len(open_f)}


def test_findings_unique_per_trace(fleet):
    ids = Counter((f["host"], f["trace_id"]) for f in fleet["findings"])
    assert not [k for k, n in ids.items() if n > 1]


def test_restart_during_fault_keeps_both_daemons_trees(fleet):
    """h09's daemon restarted inside its crash loop: trees of both boots are found, none lost."""
    h09 = [f for f in fleet["findings"] if f["host"] == "h09" and not f["expected"]]
    boots = Counter(f["trace_id"].split(":")[1] for f in h09)
    assert set(boots) == {"b1", "b2"}
    assert len(h09) == sum(1 for t in fleet["traces"] if t.cause and t.host == "h09")


def test_routine_errors_set_aside_on_every_host(fleet):
    by_id = {f["trace_id"]: f for f in fleet["findings"]}
    routine = routine_ids(fleet)
    opened = [i for i in routine if i in by_id and not by_id[i]["expected"]]
    assert not opened, opened[:5]
    assert {t.host for t in fleet["traces"] if t.expected} == set(gen.HOSTS)


def test_host_alerts_only_on_fault_hosts(fleet):
    alerts = fleet["alerts"]
    assert {a["host"] for a in alerts} == set(gen.FAULT_HOSTS), alerts
    for a in alerts:
        assert a["errno"] == gen.FAULT_ERRNO and a["probe"] in gen.REG_MR_CHAIN, a
    assert not [a for a in alerts if a["host"] in QUIET_HOSTS]
    assert not [a for a in alerts if a["errno"] in ("EFAULT", "ENODATA")]


def test_fault_alert_starts_in_the_onset_bucket(fleet):
    """A crash loop from 07:45 on: each fault host's persistent bad state since 07:45."""
    bad = [a for a in fleet["alerts"] if a["alert"] == "persistent_bad_state"]
    assert {a["host"] for a in bad} == set(gen.FAULT_HOSTS)
    assert {utc(a["since"]) for a in bad} == {gen.FAULT_ONSET}


def test_audit_since_inside_the_gap_and_after_leave(fleet):
    """--since 08:30: h06 just came back from its lost hour, h15 left long ago: still only the
    fault hosts alert, and only fault trees are open."""
    out = fleet["root"] / "since"
    proc = run("audit", str(fleet["ds"]), "--since", "2026-12-03T08:30:00Z", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    alerts = pq.read_table(out / "host_alerts.parquet").to_pylist()
    assert {a["host"] for a in alerts} == set(gen.FAULT_HOSTS), alerts
    findings = pq.read_table(out / "findings.parquet").to_pylist()
    assert {f["trace_id"] for f in findings if not f["expected"]} <= fault_ids(fleet)
    assert not [f for f in findings if f["host"] == "h15"]


# ------------------------------------------------------------------------- evaluate / report
def test_evaluate_scores_against_truth(fleet):
    proc = run("evaluate", str(fleet["ds"]), "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    cause = s["per_root_cause"][gen.CAUSE]
    assert cause["detected"] == cause["traces"] == len(fault_ids(fleet))
    assert cause["hosts"] == len(gen.FAULT_HOSTS)
    assert s["false_findings"] == 0
    assert s["routine_open_findings"] == 0
    assert s["bifurcation_top1"] == 1.0


def test_report_names_fault_hosts_only(fleet):
    proc = run("report", str(fleet["out"]), "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert {a["host"] for a in rep["top_host_alerts"]} == set(gen.FAULT_HOSTS)
    text = run("report", str(fleet["out"]))
    assert text.returncode == 0, text.stderr
    assert "ib_peer_umem_get EIO" in text.stdout
    for h in QUIET_HOSTS:
        assert f"  {h} " not in text.stdout
