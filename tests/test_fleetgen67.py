"""The audit scored on tests/fleetgen67, a sixty-seventh fleet generator written blind (from
reference/rdma_control_path.yaml, tracer/schema.py, README.md, docs/architecture.md,
tests/fleet_harness.py and the other generators' docstrings; without reading the simulator or the
audit).

What it is for: HOST ALERTS UNDER A VARYING WORKLOAD MIX, WITH ABSORBED ERRORS IN THE COUNTERS
(tests/fleetgen67/__init__.py has the fleet). The counters count every failing frame, the absorbed
ones included: R1 a GPU registration's pin_user_pages_fast EFAULT the peer client takes (root
succeeds), R2 an rdma cgroup EAGAIN at ib_rdmacg_try_charge the launcher retries at once. Hosts run
different mixes: gpu-heavy hosts register 10x more GPU memory from 14:00 (pin_user_pages_fast then
fails on most of its calls there), host-only hosts never, mixed hosts change hour by hour, two
host-only hosts are taken by a GPU-only tenant from 15:30 (their pins fail ~97 % of calls, down on the
probe by the counters alone, a rate no other host shows, while reg_mr never fails); launches
(and so cgroup refusals) are several times more frequent on gpu-heavy hosts in the afternoon.

What the docs promise (README.md, docs/architecture.md), written before running the audit:
  * "an error is learned where it originates (operation, origin probe, errno) and set aside when
    ... its operation absorbed it": R1 and R2 learned and every occurrence set aside;
  * "Host alerts fire on a learned family only when a host's rate, from the exact counters, leaves
    the family's band both at its origin and at the family's own operation entry (a shared probe such
    as ib_rdmacg_try_charge sees more errors when a host simply makes more of an operation)": a
    gpu-heavy afternoon makes more GPU registrations, each absorbing its EFAULT -- reg_mr's own entry
    never fails -- so no host alert for R1 or R2 under any mix, and none on a host without a fault;
    a persistent bad state needs "an error the host's routine families do not explain";
  * F1 (the absorbed error becoming fatal: ib_peer_umem_get EFAULT returned, from 14:30 on every GPU
    registration of its host), F2 (alloc_pd's mlx5_cmd_exec ENOMEM rising on a host-only host from
    15:00) and F3 (reg_mr's CREATE_MKEY LIM_ERR, mlx5_cmd_exec ENOMEM under reg_create past the pin's
    absorbed EFAULT, 15 % of a gpu-heavy host's GPU registrations from 16:00): every
    record open, bifurcation at the origin ("the first frame before it on an edge no good trace of
    the operation has ... else the origin"; every edge above ib_peer_umem_get is one the rescued
    registrations run), one cluster each; on its host an alert naming its errno, since its start
    (a rise's `since` "is where the rise began"), and "a bad state is named by an unexpected error's
    probe first": not pin_user_pages_fast, the learned family;
  * F4 (the peer client's get_pages ENOMEM on 15 % of a mixed host's GPU registrations from the
    window's start, intermittent with the host's hourly mix): no bucket bad, but "an unexpected errno
    that comes back host-specific in 4 or more buckets, 10 or more times ... alerts though no bucket
    is bad" (recurring_errno; the docs' own example is a peer-memory client failing 15 % of one host's
    GPU registrations), or a rise: an ENOMEM alert on its host, never the pin's EFAULT;
  * F5 (the absorbed EAGAIN becoming fatal: one host's rdma cgroup limit at zero from 15:15, every
    alloc_pd refused, each launcher dying): "A learned family is not routine ... on the few hosts where
    its operation stopped succeeding (the counters of its root probe: every call failing with its
    errno for two 15-minute buckets or more after one succeeded, a window seeing a process die of it,
    no caller going on through it there): stats.fatal_hosts and stats.fatal_since, kept open there
    from the stop on -- one host's rdma cgroup limit at zero, every rank's alloc_pd failing the EAGAIN
    thirty-nine hosts retry through": its every record open, its host alerting EAGAIN from 15:15 --
    while the gpu-heavy hosts' afternoon launch storms, retried, alert nowhere;
  * the control (no fault): everything set aside, no cluster, no host alert, no false finding.
What the audit gets wrong is a strict xfail naming what it wrote (KNOWN_MISSES).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from fleet_harness import (
    assert_counters_agree_with_the_records,
    assert_errno_from_reference,
    assert_files_valid_and_truth_one_row_per_record,
    assert_functions_in_reference,
    assert_generator_is_blind,
    audited_fleet,
    dataset_counters,
    dataset_truth,
    findings_with_truth,
    strict_xfails,
)
from fleetgen67 import (
    CONVERTED,
    CONVERTED_SINCE,
    F1_HOST,
    F1_SINCE,
    F2_HOST,
    F2_SINCE,
    F3_HOST,
    F4_HOST,
    F5_HOST,
    FAMILIES,
    HOSTS,
    LAYER,
    MIX,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

from tracer.schema import read

CAUSES = tuple(ROOT_CAUSES)
F1, F2, F3, F4, F5 = CAUSES
FAULTED = [F1_HOST, F2_HOST, F3_HOST, F4_HOST, F5_HOST]
BASELINE = Path(sys.executable).with_name("baseline")
QUIET = [h for h in HOSTS if h not in FAULTED]

# 20 hosts x 6 h, ~30,000 records
fleet67 = audited_fleet("fleet67", generate, package="fleetgen67", seed=67)
fleet67_control = audited_fleet("fleet67_control", generate, package="fleetgen67", seed=67, faults=False)


@pytest.fixture(scope="module")
def flat_day_list(tmp_path_factory):
    """A quieter day's learned list: `baseline learn FLAT --expected-out L` of a day at the morning
    mix throughout (no afternoon ramp, no GPU-only tenant, no fault)."""
    d = tmp_path_factory.mktemp("fleet67_flat")
    generate(d / "fleet", seed=670, faults=False, flat=True)
    listed = d / "expected.yaml"
    res = subprocess.run([str(BASELINE), "learn", str(d / "fleet"), "-o", str(d / "model.parquet"),
                          "--expected-out", str(listed)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return listed

_F5_WHY = (
    "the learned alloc_pd/ib_rdmacg_try_charge/EAGAIN entry names no stats.fatal_hosts (nor fatal_since), though "
    "on gx-11 from 15:15 every ib_uverbs_alloc_pd call fails EAGAIN in the counters for 11 buckets after calls "
    "succeeded, each failing launcher (a pid of its own) makes no later call and no caller goes on through it "
    "there; its band is rate_upper ib_rdmacg_try_charge/ib_uverbs_alloc_pd 0.92 (0.89 with no retried EAGAIN on "
    "gx-11 before the stop), learned from a day that includes gx-11's own 100 %% buckets. Docs: a learned family "
    "is not routine 'on the few hosts where its operation stopped succeeding ... one host's rdma cgroup limit at "
    "zero, every rank's alloc_pd failing the EAGAIN thirty-nine hosts retry through': fatal_hosts, kept open "
    "there from the stop on, host alert from fatal_since's bucket; and gx-11's 100 %% leaves the band at origin "
    "and at the operation entry anyway. The same day audited with a quieter day's list "
    "(test_flat_day_list_on_the_busy_day) does alert gx-11 EAGAIN since 15:15, so the counters carry it. Not the "
    "mix's doing: generate(flat=True) with the faults (every host at its morning mix) gives the same -- no "
    "fatal_hosts, no gx-11 alert -- and so do launchers sharing the host's pids instead of one pid each. "
    "(Lead's diagnosis, round forty-eight: on gx-11 the family's records count 395 traces, 366 right-censored, "
    "2 deaths, none timed. This generator sends failure records untimed even inside a capture window, where "
    "bpf/calltree.c times every tree whose root entered one; so gx-11's last capture window reads as its last "
    "good trace, before 15:15, and every launcher's death after it is censored (neither dead nor alive), and "
    "_stopped_hosts never sees a death in a window. With the tracer's own timing the deaths are timed. Left "
    "open: the audit could infer a host's windows from the fleet's, not only from its own timed traces.)")
KNOWN_MISSES: dict[str, str] = {
    "test_fault_found_at_its_origin[rdmacg_limit_zero]":
        "all 366 records of gx-11's zero cgroup limit (from 15:15) set aside as expected (evaluate: detected 0 of "
        "366), none open. " + _F5_WHY % (),
    "test_one_cluster_per_fault":
        "open findings hold 4 of the 5 causes: rdmacg_limit_zero has none (all 366 set aside), so no cluster "
        "for it (cluster_completeness 0.85). " + _F5_WHY % (),
    "test_fault_host_alerts[rdmacg_limit_zero]":
        "no host alert at all on gx-11 (should: EAGAIN since 15:15). " + _F5_WHY % (),
}

known, _params = strict_xfails(KNOWN_MISSES)


def _audit(root, table: str) -> pl.DataFrame:
    return read(root / "audit" / f"{table}.parquet", table)


def _family_findings(root, family: str) -> pl.DataFrame:
    return findings_with_truth(root).filter(pl.col("root_cause") == family)


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen67", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    """Every function in the reference; each family's errno one the reference gives near its
    origin (pin_user_pages_fast -EFAULT, ib_rdmacg_try_charge -EAGAIN, ib_peer_umem_get "usually
    -EFAULT", mlx5_cmd_exec LIM_ERR -> -ENOMEM) at the layer LAYER gives it; trees within the tracer's
    limits; a family's tree holds its origin among its failing frames; F3's tree is the rescued GPU
    registration's down to its absorbed EFAULT and fallback, then fails ENOMEM from mlx5_cmd_exec up;
    the truth's bifurcation of each fault is the first frame (caller chain, function, errno) no
    successful tree of its operation has."""
    assert_functions_in_reference({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
    for key, (_, probe, errno, layer) in FAMILIES.items():
        assert_errno_from_reference(key, probe, errno)
        assert LAYER[probe] == layer, key
    for name, (op, _, frames) in TREES.items():
        assert len(frames) <= 16 and max(d for d, _, _ in frames) <= 7, name
        failing = [(fn, e) for _, fn, e in frames if e]
        if name in TREE_FAMILY:
            fop, probe, errno, _ = FAMILIES[TREE_FAMILY[name]]
            assert op == fop and (probe, errno) in failing, name
        else:
            assert not failing, name

    def edges(frames):
        out, stack = [], []
        for depth, fn, errno in frames:
            del stack[depth:]
            out.append((tuple(stack), fn, errno))
            stack.append(fn)
        return out

    for name, fam in TREE_FAMILY.items():
        if fam in ROUTINE:
            continue
        op, probe, errno, _ = FAMILIES[fam]
        good = {e for o, _, fr in TREES.values() if o == op and fr[0][2] is None for e in edges(fr)}
        first_new = next(e for e in edges(TREES[name][2]) if e not in good and e[2] is not None
                         and not any(later[2] == e[2] and later[0][:len(e[0]) + 1] == (*e[0], e[1])
                                     for later in edges(TREES[name][2])))
        assert first_new[1:] == (probe, errno), (name, first_new)


def test_files_valid_and_counters_agree(fleet67):
    root, _, _, _ = fleet67
    assert_files_valid_and_truth_one_row_per_record(root)
    assert_counters_agree_with_the_records(root, {k: v[1:] for k, v in FAMILIES.items()})


def test_the_mix_varies_the_absorbed_rate(fleet67_control):
    """The premise: pin_user_pages_fast's failure rate differs a lot between hosts and over the
    day (0 on host-only hosts; most of the calls on a gpu-heavy host's afternoon)."""
    root, _, _, _ = fleet67_control
    c = dataset_counters(root).filter(pl.col("probe") == "pin_user_pages_fast")
    rate = (c.with_columns(pm=pl.col("snapshot_time").dt.hour() >= 14)
            .group_by("host", "pm").agg(r=pl.col("failures").sum() / pl.col("invocations").sum()))
    heavy = rate.filter(pl.col("host").is_in([h for h in HOSTS if MIX[h] == "gpu-heavy"]))
    assert heavy.filter(pl.col("pm"))["r"].min() > 0.5 > 0.3 > heavy.filter(~pl.col("pm"))["r"].max()
    only = rate.filter(pl.col("host").is_in([h for h in HOSTS if MIX[h] == "host-only" and h not in CONVERTED]))
    assert only["r"].max() == 0
    late = (c.filter(pl.col("host").is_in(list(CONVERTED)) & (pl.col("snapshot_time") > CONVERTED_SINCE))
            .group_by("host").agg(r=pl.col("failures").sum() / pl.col("invocations").sum()))
    assert late.height == 2 and late["r"].min() > 0.9, late


# ------------------------------------------------------------------------------------------------
# the audit: findings
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("family", _params("test_routine_set_aside", list(ROUTINE)))
def test_routine_set_aside(fleet67, family):
    """Every record of each absorbed family set aside, on every host, under every mix."""
    root, _, _, scores = fleet67
    e = scores["per_root_cause"][family]
    assert e["traces"] > 500 and e["set_aside_as_expected"] == e["traces"], e
    findings = _family_findings(root, family)
    assert findings.height == e["traces"] and findings["expected"].all(), \
        findings.filter(~pl.col("expected")).group_by("host").len()


@known
@pytest.mark.parametrize("cause", _params("test_fault_found_at_its_origin", list(CAUSES)))
def test_fault_found_at_its_origin(fleet67, cause):
    """Every record of each fault open, on its host only, bifurcation at its origin (ib_peer_umem_get
    EFAULT: every edge above it the rescued registrations run; mlx5_cmd_exec ENOMEM for alloc_pd; and
    for F3 mlx5_cmd_exec ENOMEM under reg_create, past the pin's absorbed EFAULT, which is no finding
    of its own: "an origin the code went on from, superseded by a later origin of the same tree that
    reaches the root -- the death is that one's"), its layer."""
    root, _, _, scores = fleet67
    e = scores["per_root_cause"][cause]
    truth = dataset_truth(root).filter(pl.col("root_cause") == cause)
    assert e["detected"] == e["traces"] == truth.height > 50 and e["set_aside_as_expected"] == 0, e
    findings = _family_findings(root, cause)
    _, probe, errno, layer = FAMILIES[cause]
    got = findings.group_by("bifurcation_probe", "bifurcation_errno", "origin_layer").len()
    assert findings.height == truth.height and not findings["expected"].any(), got
    assert set(findings["host"]) == set(ROOT_CAUSES[cause])
    assert findings["time"].min() >= ROOT_CAUSES[cause][next(iter(ROOT_CAUSES[cause]))]
    assert set(findings["bifurcation_probe"]) == {probe} and set(findings["bifurcation_errno"]) == {errno}, got
    assert set(findings["origin_layer"]) == {layer}, got


@known
def test_one_cluster_per_fault(fleet67):
    root, _, _, _ = fleet67
    open_ = findings_with_truth(root).filter(~pl.col("expected"))
    assert set(open_["root_cause"].unique()) == set(CAUSES), open_.group_by("root_cause").len()
    for cause in CAUSES:
        assert open_.filter(pl.col("root_cause") == cause)["cluster_id"].n_unique() == 1, cause
    assert _audit(root, "clusters").height == len(CAUSES), _audit(root, "clusters")


# ------------------------------------------------------------------------------------------------
# the audit: host alerts
# ------------------------------------------------------------------------------------------------
@known
@pytest.mark.parametrize("host", _params("test_no_alert_on_quiet_hosts", QUIET))
def test_no_alert_on_quiet_hosts(fleet67, host):
    """No alert on a host without a fault, whatever its mix: the absorbed errors at its mix's rate --
    on the GPU-only tenant's hosts too, where pin_user_pages_fast fails ~97 % of its calls from 15:30
    but reg_mr's own entry never fails (the band is left at the origin only)."""
    root, _, _, _ = fleet67
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    assert alerts.height == 0, alerts.select("alert", "probe", "errno", "since", "detail").rows()


@known
def test_no_alert_names_an_absorbed_error(fleet67):
    """No alert names an absorbed family's origin (pin_user_pages_fast, ib_rdmacg_try_charge, EAGAIN)
    -- except on F5's host, where the cgroup's EAGAIN is the fault -- and EFAULT only on F1's host."""
    root, _, _, _ = fleet67
    alerts = _audit(root, "host_alerts").filter(pl.col("host") != F5_HOST)
    bad = alerts.filter(pl.col("probe").is_in(["pin_user_pages_fast", "ib_rdmacg_try_charge"])
                        | (pl.col("errno") == "EAGAIN")
                        | ((pl.col("errno") == "EFAULT") & (pl.col("host") != F1_HOST)))
    assert bad.height == 0, bad.select("host", "alert", "probe", "errno", "since").rows()


@known
@pytest.mark.parametrize("cause", _params("test_fault_host_alerts", [F1, F2, F3, F5]))
def test_fault_host_alerts(fleet67, cause):
    """The fault's host alerts with the fault's errno, since its start's bucket; every alert there is
    the fault's (its errno, not before its start)."""
    root, _, _, _ = fleet67
    _, _, errno, _ = FAMILIES[cause]
    ((host, since),) = ROOT_CAUSES[cause].items()
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == host)
    shown = alerts.select("alert", "probe", "errno", "since").rows()
    own = alerts.filter(pl.col("errno") == errno)
    assert own.height >= 1, shown
    assert own["since"].min() == since, shown
    assert set(alerts["errno"]) <= {errno, None} and (alerts["since"] >= since).all(), shown


@known
def test_peer_client_alert_names_the_unexpected_probe(fleet67):
    """"A bad state is named by an unexpected error's probe first": F1's alerts name the reg_mr path
    of the returned EFAULT (ib_peer_umem_get or a caller passing it on), never pin_user_pages_fast,
    whose EFAULT every GPU registration absorbs."""
    root, _, _, _ = fleet67
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == F1_HOST)
    assert alerts.height >= 1
    assert set(alerts["probe"]) <= {"ib_peer_umem_get", "ib_umem_get", "mlx5_ib_reg_user_mr", "ib_uverbs_reg_mr"}, \
        alerts.select("alert", "probe", "errno", "since").rows()


@known
def test_mkey_alert_names_the_unexpected_probe(fleet67):
    """F3's host (gpu-heavy, its pins failing on most calls, absorbed): its alerts name the returned
    ENOMEM's path (mlx5_cmd_exec, reg_create, create_real_mr, mlx5_ib_reg_user_mr, ib_uverbs_reg_mr),
    never pin_user_pages_fast."""
    root, _, _, _ = fleet67
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == F3_HOST)
    assert alerts.height >= 1
    assert set(alerts["probe"]) <= {"mlx5_cmd_exec", "reg_create", "create_real_mr", "mlx5_ib_reg_user_mr",
                                    "ib_uverbs_reg_mr"}, alerts.select("alert", "probe", "errno", "since").rows()


@known
def test_intermittent_peer_enomem_alerts(fleet67):
    """F4: the peer client's get_pages ENOMEM on 15 % of a mixed host's GPU registrations from the
    window's start, following the host's hourly mix (a few in one hour, ~18 a bucket in the next,
    none in others): no bucket is bad, yet an unexpected errno coming back host-specific (4+ buckets,
    10+ times, its origin on one host) is a `recurring_errno`, and a rise a `rising_errno_rate` --
    either way an alert on its host naming ENOMEM, from no later than its heaviest hour and not before
    its first failure's bucket; every alert there ENOMEM, none naming pin_user_pages_fast."""
    root, _, _, _ = fleet67
    c = dataset_counters(root).filter((pl.col("host") == F4_HOST) & (pl.col("probe") == "ib_peer_umem_get"))
    failing = (c.explode("errno_counts").unnest("errno_counts")
               .filter((pl.col("errno") == "ENOMEM") & (pl.col("count") > 0))
               .with_columns(bucket=(pl.col("snapshot_time") - pl.duration(nanoseconds=1)).dt.truncate("15m"))
               .group_by("bucket").agg(pl.col("count").sum()).sort("bucket"))
    assert failing.height >= 4 and failing["count"].sum() >= 10, failing
    heaviest = failing.sort("count", descending=True)["bucket"][0]
    alerts = _audit(root, "host_alerts").filter(pl.col("host") == F4_HOST)
    shown = alerts.select("alert", "probe", "errno", "since").rows()
    own = alerts.filter(pl.col("errno") == "ENOMEM")
    assert own.height >= 1, shown
    assert failing["bucket"].min() <= own["since"].min() <= heaviest, (shown, failing.head(3).rows())
    assert set(alerts["errno"]) == {"ENOMEM"} and "pin_user_pages_fast" not in set(alerts["probe"]), shown


# ------------------------------------------------------------------------------------------------
# the control: the absorbed errors alone
# ------------------------------------------------------------------------------------------------
def test_control_has_no_fault(fleet67_control):
    root, _, _, _ = fleet67_control
    assert set(dataset_truth(root)["root_cause"].drop_nulls()) == set(ROUTINE)


@known
def test_control_quiet(fleet67_control):
    """Everything set aside, no cluster, no host alert, no false finding (none on held-out good
    traces either)."""
    root, _, _, scores = fleet67_control
    findings = findings_with_truth(root)
    assert findings.height > 5000 and findings["expected"].all(), \
        findings.filter(~pl.col("expected")).group_by("root_cause", "bifurcation_probe", "bifurcation_errno").len()
    assert _audit(root, "clusters").height == 0, _audit(root, "clusters")
    alerts = _audit(root, "host_alerts")
    assert alerts.height == 0, alerts.select("host", "alert", "probe", "errno", "since").rows()
    assert scores["held_out_good_traces"] > 100
    assert scores["false_findings_on_good"] == 0 and scores["false_findings"] == 0, scores
    assert scores["routine_set_aside"] == 1.0, scores


def test_fault_starts():
    assert F1_SINCE.minute % 15 == 0 and F2_SINCE.minute % 15 == 0


# ------------------------------------------------------------------------------------------------
# a quieter day's learned list carried to the busy, faulted day
# ------------------------------------------------------------------------------------------------
@known
def test_flat_day_list_on_the_busy_day(fleet67, flat_day_list, tmp_path):
    """The list learned on a quiet day (R1/R2 at morning rates everywhere), carried to the faulted day
    (`baseline audit --allowlist L --no-learn-expected`): the absorbed errors are still routine -- every
    R1/R2 record set aside -- and, though the afternoon's pin EFAULT rates are far above the band the
    quiet day gave the family, reg_mr's own entry never fails, so no host alert on a host without a
    fault ("only when a host's rate ... leaves the family's band both at its origin and at the
    family's own operation entry"); the three faults open and alerting on their hosts with their
    errnos, since their starts."""
    root, _, _, _ = fleet67
    out = tmp_path / "audit"
    res = subprocess.run([str(BASELINE), "audit", str(root), "--allowlist", str(flat_day_list),
                          "--no-learn-expected", "-o", str(out), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    json.loads(res.stdout)
    findings = read(out / "findings.parquet", "findings").join(
        dataset_truth(root).select("host", "trace_id", "root_cause"), on=["host", "trace_id"])
    routine = findings.filter(pl.col("root_cause").is_in(list(ROUTINE)))
    assert routine.height > 10_000 and routine["expected"].all(), \
        routine.filter(~pl.col("expected")).group_by("root_cause", "host").len()
    # (F5's records are the listed family's own signature; a list from another day names no
    # fatal_hosts for it, so only its host alert is asked of it here)
    carried = [c for c in CAUSES if c != F5]
    faults = findings.filter(pl.col("root_cause").is_in(carried))
    assert faults.height == dataset_truth(root).filter(pl.col("root_cause").is_in(carried)).height
    assert not faults["expected"].any(), faults.group_by("root_cause", "expected").len()
    alerts = read(out / "host_alerts.parquet", "host_alerts")
    shown = alerts.select("host", "alert", "probe", "errno", "since").rows()
    assert set(alerts["host"]) == set(FAULTED), shown
    for cause, hosts in ROOT_CAUSES.items():
        ((host, since),) = hosts.items()
        own = alerts.filter(pl.col("host") == host)
        assert set(own["errno"]) == {FAMILIES[cause][2]}, (cause, shown)
        if cause != F4:
            assert own["since"].min() == since, (cause, shown)
