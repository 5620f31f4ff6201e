"""Blind test set 50: three NIC vendors, skewed host clocks, three faults (tests/fleetgen50).

Expectations come from README.md, docs/*.md, `baseline --help` / `baseline COMMAND --help`,
tracer/schema.py and the RDMA reference only, written before the tool was run.

Clock skew: the docs define no skew correction anywhere. The data model says wall-clock time is
in the events' start_time/end_time (UTC) and the counters' snapshot_time, both written by the
host; `--since T` keeps "traces/counters at or after T"; host alerts come from the counters'
15-minute buckets. So every time the audit reports or filters on is the host's OWN clock: a
fault's alert `since` falls in the 15-minute bucket of its onset as the host's clock read it
(for the -5 min host that is the bucket before the true one), and `--since T` cuts a skewed
host's traces where its own clock crosses T.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fleetgen50 import generator as gen

BASELINE = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "baseline")
SINCE = dt.datetime(2026, 11, 28, 8, 45, tzinfo=dt.UTC)
BUCKET = dt.timedelta(minutes=15)


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLARS_MAX_THREADS="1", TZ="UTC")
    return subprocess.run([BASELINE, *args], capture_output=True, text=True, env=env, timeout=120)


def read(out: Path, table: str) -> list[dict]:
    return pq.read_table(out / f"{table}.parquet").to_pylist()


def floor15(t: dt.datetime) -> dt.datetime:
    return t.replace(minute=t.minute - t.minute % 15, second=0, microsecond=0)


def utc(v) -> dt.datetime:
    if isinstance(v, int):
        return dt.datetime.fromtimestamp(v / 1e9, dt.UTC)
    return v if v.tzinfo else v.replace(tzinfo=dt.UTC)


class Fleet:
    def __init__(self, root: Path):
        self.root = root
        self.ds = root / "ds"
        info = gen.generate(self.ds)
        self.traces = {t.trace_id: t for t in info["traces"]}
        self._runs: dict[str, tuple[subprocess.CompletedProcess, Path]] = {}

    def audit(self, name: str, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
        if name not in self._runs:
            out = self.root / name
            self._runs[name] = (run("audit", str(self.ds), "-o", str(out), *extra), out)
        return self._runs[name]

    def fault_traces(self, cause: str | None = None) -> dict[str, gen.TraceInfo]:
        return {k: t for k, t in self.traces.items() if t.cause and (cause is None or t.cause == cause)}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Fleet:
    return Fleet(tmp_path_factory.mktemp("fleetgen50"))


@pytest.fixture(scope="module")
def audited(fleet):
    proc, out = fleet.audit("audit")
    assert proc.returncode == 0, proc.stderr
    return {
        "findings": read(out, "findings"),
        "clusters": read(out, "clusters"),
        "alerts": read(out, "host_alerts"),
    }


def open_findings(findings: list[dict]) -> dict[str, dict]:
    return {f["trace_id"]: f for f in findings if not f["expected"]}


# ---------------------------------------------------------------------------------------------
def test_audit_exits_zero(fleet):
    proc, out = fleet.audit("audit")
    assert proc.returncode == 0, proc.stderr
    for table in ("findings", "clusters", "host_alerts"):
        assert (out / f"{table}.parquet").exists()


def test_generator_vendor_chains_differ():
    # the shape itself: one operation's success chain differs by the vendor's driver frames
    chains = {v: [n.probe for n, _ in gen.flatten(gen.reg_mr(v, False))] for v in gen.VENDORS}
    assert "mlx5_ib_reg_user_mr" in chains["mlx5"]
    assert "bnxt_re_reg_user_mr" in chains["bnxt_re"]
    assert "irdma_reg_user_mr" in chains["irdma"]
    assert len({tuple(c) for c in chains.values()}) == 3


CAUSES = ("bnxt_mrw_enomem", "mlx5_fw_modify_timeout", "alloc_pd_enomem")
CAUSE_SPEC = {
    "bnxt_mrw_enomem": ("bnxt_qplib_alloc_mrw", "ENOMEM", "driver", {"h07", "h09"}),
    "mlx5_fw_modify_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver", {"h04"}),
    "alloc_pd_enomem": ("ib_uverbs_alloc_pd", "ENOMEM", "uverbs", {"h03", "h10", "h13"}),
}


@pytest.mark.parametrize("cause", CAUSES)
def test_fault_found_every_trace(fleet, audited, cause):
    want = fleet.fault_traces(cause)
    assert {t.host for t in want.values()} == CAUSE_SPEC[cause][3]
    got = open_findings(audited["findings"])
    missing = sorted(set(want) - set(got))
    assert not missing, f"{len(missing)} of {len(want)} {cause} traces without an open finding: {missing[:5]}"


@pytest.mark.parametrize("cause", CAUSES)
def test_fault_bifurcation_and_origin(fleet, audited, cause):
    probe, errno, layer, _hosts = CAUSE_SPEC[cause]
    got = open_findings(audited["findings"])
    rows = [got[k] for k in fleet.fault_traces(cause) if k in got]
    assert rows
    assert Counter((r["bifurcation_probe"], r["bifurcation_errno"]) for r in rows) == {(probe, errno): len(rows)}
    assert Counter(r["origin_layer"] for r in rows) == {layer: len(rows)}


def test_bnxt_fault_bifurcates_on_its_own_vendor_frame(fleet, audited):
    got = open_findings(audited["findings"])
    probes = {got[k]["bifurcation_probe"] for k in fleet.fault_traces("bnxt_mrw_enomem") if k in got}
    assert probes and all(p.startswith("bnxt_") for p in probes), probes
    assert not any(p.startswith(("mlx5", "irdma")) for p in probes)


@pytest.mark.parametrize("cause", CAUSES)
def test_one_cluster_per_cause(fleet, audited, cause):
    got = open_findings(audited["findings"])
    ids = {got[k]["cluster_id"] for k in fleet.fault_traces(cause) if k in got}
    assert len(ids) == 1, f"{cause} spread over clusters {sorted(ids)}"
    (cid,) = ids
    members = [f for f in got.values() if f["cluster_id"] == cid]
    causes = Counter(fleet.traces[f["trace_id"]].cause for f in members)
    assert causes == {cause: len(members)}, causes


def test_three_causes_three_clusters(fleet, audited):
    got = open_findings(audited["findings"])
    by_cause = {c: {got[k]["cluster_id"] for k in fleet.fault_traces(c) if k in got} for c in CAUSES}
    assert len(set().union(*by_cause.values())) == 3, by_cause


def test_cross_vendor_fault_is_one_cluster_over_its_three_hosts(fleet, audited):
    got = open_findings(audited["findings"])
    ids = {got[k]["cluster_id"] for k in fleet.fault_traces("alloc_pd_enomem") if k in got}
    assert len(ids) == 1
    (cid,) = ids
    (cluster,) = [c for c in audited["clusters"] if c["cluster_id"] == cid]
    assert cluster["hosts"] == 3
    assert cluster["failures"] == len(fleet.fault_traces("alloc_pd_enomem"))
    vendors = {gen.VENDOR_OF[f["host"]] for f in got.values() if f["cluster_id"] == cid}
    assert vendors == set(gen.VENDORS)


@pytest.mark.parametrize("vendor", gen.VENDORS)
def test_routine_error_of_each_vendor_set_aside(fleet, audited, vendor):
    routine = {k for k, t in fleet.traces.items() if t.expected and gen.VENDOR_OF[t.host] == vendor}
    assert len(routine) >= 200
    got = open_findings(audited["findings"])
    leaked = sorted(routine & set(got))
    assert not leaked, f"{len(leaked)} routine {vendor} traces left open, e.g. {[got[k]['bifurcation_probe'] for k in leaked[:3]]}"


def test_no_open_finding_without_a_fault(fleet, audited):
    got = open_findings(audited["findings"])
    false = sorted(set(got) - set(fleet.fault_traces()))
    assert not false, [(got[k]["host"], got[k]["operation"], got[k]["bifurcation_probe"]) for k in false[:5]]


def test_no_cluster_of_routine_errors(fleet, audited):
    got = open_findings(audited["findings"])
    open_clusters = {f["cluster_id"] for f in got.values()}
    routine_probes = {r[1] for r in gen.ROUTINE.values()}
    for c in audited["clusters"]:
        if c["cluster_id"] in open_clusters:
            assert not any(p in c["signature"] for p in ("rdma_get_gid_attr", "rdma_counter_bind_qp_auto",
                                                          "REG_DMABUF_MR")), (c["signature"], routine_probes)


NO_ALERT = ("expected a host alert on h07 and h09 (bnxt_qplib_alloc_mrw ENOMEM crash loop failing 100 % of its "
            "calls, ~15 a bucket, from 07:18 / 08:01 to the end), got none: the two bnxt_re hosts failing alike "
            "excuse each other (with h07's fault removed, h09 alone gets persistent_bad_state since 07:15; "
            "the same without h07's clock skew)")
H13_RISING = ("expected persistent_bad_state on h13 since 2026-11-28 08:30, its own-clock onset bucket "
              "(ib_uverbs_alloc_pd ENOMEM on 4 of 7 calls there, on every call in each bucket after), got "
              "rising_errno_rate since 2026-11-28 09:00; with h03's fault removed h13 gets persistent_bad_state "
              "since 08:45: the 3 hosts of one cause are treated as shared (docs: more than 3), and a 4-of-7 "
              "first bucket is not counted as failing on most calls")


def test_host_alerts_only_on_the_six_faulty_hosts(audited):
    assert {a["host"] for a in audited["alerts"]} == set(gen.FAULTS)


def test_host_alerts_on_no_healthy_host(audited):
    assert {a["host"] for a in audited["alerts"]} <= set(gen.FAULTS)


def test_no_alert_on_the_skewed_healthy_host(audited):
    assert not [a for a in audited["alerts"] if a["host"] == "h02"]


def test_alerts_name_their_hosts_fault_errno(audited):
    wrong = [(a["host"], a["alert"], a["probe"], a["errno"]) for a in audited["alerts"]
             if a["host"] in gen.FAULTS and a["errno"] != gen.FAULTS[a["host"]].errno]
    assert not wrong


def _xfail_host(host: str):
    # (h07, h09 and h13 were strict xfails when written -- NO_ALERT, H13_RISING -- fixed in round
    # forty-one: the other hosts of a cause few hosts have are left out of the rest's rate)
    return host


@pytest.mark.parametrize("host", [_xfail_host(h) for h in sorted(gen.FAULTS)])
def test_crash_loop_host_in_persistent_bad_state(audited, host):
    fault = gen.FAULTS[host]
    kinds = {(a["alert"], a["errno"]) for a in audited["alerts"] if a["host"] == host}
    assert ("persistent_bad_state", fault.errno) in kinds, kinds


@pytest.mark.parametrize("host", [_xfail_host(h) for h in sorted(gen.FAULTS)])
def test_alert_since_in_the_hosts_own_clock(audited, host):
    fault = gen.FAULTS[host]
    alerts = [a for a in audited["alerts"] if a["host"] == host]
    assert alerts
    since = min(utc(a["since"]) for a in alerts)
    first_true = fault.onset + dt.timedelta(seconds=gen.HOSTS.index(host))
    own_bucket = floor15(gen.own_time(host, first_true))
    assert own_bucket <= since < own_bucket + BUCKET, (host, since, own_bucket)


def test_drifting_host_alert_in_its_own_clock_not_true_time(audited):
    # h04's fault begins 08:58:04 true, 09:01:02 on its clock (+178 s by then): own bucket 09:00
    (since,) = {utc(a["since"]) for a in audited["alerts"] if a["host"] == "h04"}
    assert since == dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)


def test_minus_five_minute_host_alert_precedes_its_true_bucket(audited):
    # h13's fault begins 08:45:33 true = 08:40:33 on its clock: the own-clock bucket is 08:30
    since = min(utc(a["since"]) for a in audited["alerts"] if a["host"] == "h13")
    assert since == dt.datetime(2026, 11, 28, 8, 30, tzinfo=dt.UTC)


# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def since_audit(fleet):
    proc, out = fleet.audit("audit-since", "--since", SINCE.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert proc.returncode == 0, proc.stderr
    return {"findings": read(out, "findings"), "alerts": read(out, "host_alerts")}


def test_since_keeps_exactly_the_fault_traces_at_or_after_t_by_host_clock(fleet, since_audit):
    t_ns = int(SINCE.timestamp()) * 1_000_000_000
    want = {k for k, t in fleet.fault_traces().items() if t.start_ns >= t_ns}
    got = set(open_findings(since_audit["findings"]))
    assert got == want, (sorted(got - want)[:5], sorted(want - got)[:5])


def test_since_cuts_the_minus_five_host_by_its_own_clock(fleet, since_audit):
    t_ns = int(SINCE.timestamp()) * 1_000_000_000
    h13 = {k: t for k, t in fleet.fault_traces("alloc_pd_enomem").items() if t.host == "h13"}
    before_own = {k for k, t in h13.items() if t.start_ns < t_ns}
    after_true_only = {k for k, t in h13.items() if t.true_ns >= t_ns > t.start_ns}
    assert before_own and after_true_only  # the shape: 08:45-08:50 true is before 08:45 on h13
    got = set(open_findings(since_audit["findings"]))
    assert not got & before_own
    assert {k for k in h13 if k not in before_own} <= got


def test_since_finding_times_at_or_after_t(since_audit):
    early = [f["trace_id"] for f in since_audit["findings"] if utc(f["time"]) < SINCE]
    assert not early


def test_since_alerts_only_on_faulty_hosts(since_audit):
    assert {a["host"] for a in since_audit["alerts"]} <= set(gen.FAULTS)


# ---------------------------------------------------------------------------------------------
def _find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


@pytest.fixture(scope="module")
def scores(fleet, audited):
    _proc, out = fleet.audit("audit")
    proc = run("evaluate", str(fleet.ds), "--findings", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


PERFECT = {
    "cluster_purity": 1.0, "cluster_completeness": 1.0, "bifurcation_top1": 1.0,
    "origin_layer_top1": 1.0, "false_findings_on_good": 0, "routine_set_aside": 1.0,
    "routine_open_findings": 0.0, "false_findings": 0, "expected_error_precision": 1.0,
    "expected_error_recall": 1.0,
}


@pytest.mark.parametrize("metric", sorted(PERFECT))
def test_evaluate_scores_perfect(scores, metric):
    got = _find_key(scores, metric)
    assert got is not None, f"{metric} not in evaluate --json"
    assert got == pytest.approx(PERFECT[metric]), (metric, got)


# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_audit(fleet, audited):
    model = fleet.root / "model.parquet"
    proc = run("learn", str(fleet.ds), "-o", str(model))
    assert proc.returncode == 0, proc.stderr
    proc, out = fleet.audit("audit-model", "--model", str(model))
    assert proc.returncode == 0, proc.stderr
    return {"findings": read(out, "findings"), "alerts": read(out, "host_alerts")}


def test_learned_model_audit_agrees_on_findings(audited, model_audit):
    def key(fs):
        return {k: (f["bifurcation_probe"], f["bifurcation_errno"], f["origin_layer"])
                for k, f in open_findings(fs).items()}
    assert key(model_audit["findings"]) == key(audited["findings"])


def test_learned_model_audit_agrees_on_alerts(audited, model_audit):
    def key(alerts):
        return sorted((a["host"], a["alert"], a["probe"], a["errno"], str(a["since"])) for a in alerts)
    assert key(model_audit["alerts"]) == key(audited["alerts"])
