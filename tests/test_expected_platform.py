"""Expected errors judged where the platform or the caller tells them apart (the fleet learner's
"Not a regression" split by NIC and a caller's own use alone, baseline.fleet.expected; the host
alerts' callers, baseline.fleet.audit.routine_for_their_callers).

The fleets are built from reference/rdma_control_path.yaml through tests/fleetgen3's call trees
(written without reading baseline/fleet), recorded as the fleet tracer does (failures always,
successes in capture windows: test_expected_callers.Recorder), with the trace metadata and
kernel releases a fleet's tracer records:
- a kernel update whose mlx5_ib_create_cq refuses a CQ flag it used to ignore (-EOPNOTSUPP,
  check_cq_create_flags: "unsupported attr->flags"): the ConnectX-7 hosts' provider creates the
  CQ again without it and the rank goes on; the two ConnectX-6 Dx hosts' older provider does
  not, every rank dies, and after three failed jobs the scheduler drains them;
- a diagnostic (``rdma-memtest``) on one host registering doubling buffers until reg_mr fails
  with -ENOMEM at ib_umem_get ("pinned_vm + npages > RLIMIT_MEMLOCK"), every ten minutes, while
  the ranks there register theirs; or the same diagnostic on a host whose ranks are gone;
- a daemon (``rdma-pingmesh``) on one host whose INIT->RTR to a decommissioned peer times out
  in the firmware (mlx5_cmd_exec -ETIMEDOUT under modify_qp) every round, going on.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from test_expected_callers import Recorder

from baseline.fleet.audit import routine_for_their_callers, run_audit
from baseline.fleet.expected import FleetExpectedLearner
from baseline.fleet.model import collect_traces
from baseline.run.allowlist import ExpectedErrors
from tracer.schema import polars_schema

OLD, NEW = "6.8.0-51-generic", "6.8.0-60-generic"
CQ_FLAGS = ("mlx5_ib_create_cq", "EOPNOTSUPP")  # check_cq_create_flags: unsupported attr->flags
MEMLOCK = ("ib_umem_get", "ENOMEM")  # pinned_vm + npages > RLIMIT_MEMLOCK
TIMEOUT = ("mlx5_cmd_exec", "ETIMEDOUT")  # the firmware command timed out
BUSY = ("mlx5_cmd_exec", "EBUSY")  # CREATE_QP answered RES_BUSY (cmd_status_to_err)
CX7, CX6 = ("ConnectX-7", "28.41.1000"), ("ConnectX-6 Dx", "22.39.1002")


class PlatformRecorder(Recorder):
    """Recorder with each trace's kernel release and NIC metadata (nic_model, fw_version)."""

    def call(self, host: str, job: str | None, pid: int, comm: str, t: float, op: str,
             fail: tuple[str, str] | None = None, release: str = OLD,
             nic: tuple[str, str] | None = None, latency_ns: int | None = None) -> None:
        before = len(self.rows["trace_id"])
        super().call(host, job, pid, comm, t, op, fail)
        k = len(self.rows["trace_id"]) - before
        self.rows["kernel_release"][before:] = [release] * k
        if latency_ns is not None and k and self.rows["latency_ns"][before] is not None:  # timed
            self.rows["latency_ns"][before:] = [latency_ns] * k
        if nic is not None:
            self.rows["metadata"][before:] = [[{"key": "nic_model", "value": nic[0]},
                                               {"key": "fw_version", "value": nic[1]}]] * k


def updated_fleet(models_differ: bool = True, seed: int = 20, hosts: int = 20, hours: float = 4.0) -> pl.DataFrame:
    """`hosts` mlx5 hosts updated from OLD to NEW at 1 h (a minute apart), jobs of 8 ranks that
    create a CQ and two QPs, then move QPs INIT->RTR now and then until the job ends. On NEW the
    CQ's flag is refused: ranks on ConnectX-7 hosts create it again without and go on; on the
    last two hosts (ConnectX-6 Dx when `models_differ`, else reported as ConnectX-7 as well)
    every rank dies, and after three failed jobs the host is drained."""
    rng = np.random.default_rng(seed)
    rec = PlatformRecorder()
    for h in range(hosts):
        host, fatal = f"gpu{h:02d}", h >= hosts - 2
        nic = CX6 if fatal and models_differ else CX7
        update = 3600.0 + 60 * h
        t, pid, jobno, failed_jobs = float(rng.uniform(0, 300)), 1000 + 7 * h, 0, 0
        while t < hours * 3600 and failed_jobs < 3:
            jobno += 1
            job, end = f"{host}-job{jobno}", t + float(rng.uniform(900, 2400))
            release = NEW if t >= update else OLD
            ranks = [pid + r for r in range(8)]
            pid += 16
            died = False
            for rank in ranks:
                if release == NEW:
                    rec.call(host, job, rank, "python3", t, "create_cq", CQ_FLAGS, release, nic)
                    if fatal:
                        died = True
                        continue
                    t += 0.001
                rec.call(host, job, rank, "python3", t, "create_cq", None, release, nic)
                for _ in range(2):
                    t += float(rng.uniform(0.005, 0.05))
                    rec.call(host, job, rank, "python3", t, "create_qp", None, release, nic)
            if died:  # the launcher ended the job; the scheduler requeues it a few minutes later
                failed_jobs += 1
                t += float(rng.uniform(60, 180))
                continue
            while t < end:
                t += float(rng.exponential(120))
                rec.call(host, job, int(rng.choice(ranks)), "python3", t, "modify_qp", None,
                         NEW if t >= update else OLD, nic)
            t += float(rng.uniform(60, 180))
    return rec.frame()


def test_an_updates_error_fatal_on_one_nic_model_is_a_finding_there_and_routine_elsewhere():
    """Pooled over the fleet the refusal's deaths (two hosts, three jobs each) sit within
    Increase's bound beside the survivals on eighteen: main either called the whole family
    harmless, the ConnectX-6 Dx deaths set aside with it (tests/fleetgen20 from 64 x 3 h), or kept
    it a regression, every ConnectX-7 fallback a false finding (48 x 2 h). Split by NIC, the
    ConnectX-6 Dx hosts die of it together and the others go on: the family is learned on the
    others, its entry names the two hosts, and the audit keeps their findings open."""
    day = updated_fleet()
    learner = FleetExpectedLearner().fit(day)
    cq = [e for e in learner.entries_ if (e.context, e.probe, e.errno) == ("create_cq", *CQ_FLAGS)]
    assert [(e.comm, e.stats.get("fatal_hosts")) for e in cq] == [(None, ["gpu18", "gpu19"])]
    findings = run_audit(day, expected=ExpectedErrors([])).findings.filter(
        pl.col("probe").cast(pl.String) == CQ_FLAGS[0], pl.col("errno").cast(pl.String) == CQ_FLAGS[1])
    on_cx6 = pl.col("host").cast(pl.String).is_in(["gpu18", "gpu19"])
    assert findings.filter(on_cx6)["expected"].not_().all() and findings.filter(on_cx6).height >= 6
    assert findings.filter(~on_cx6)["expected"].all() and findings.filter(~on_cx6).height > 100


def test_deaths_on_a_few_hosts_no_nic_sets_apart_are_not_split_by_host():
    """The same fleet with every host reporting one NIC: nothing says the two hosts differ but
    their deaths, which a sampling gap fakes too (tests/fleetgen19's benign CQE-padding refusal,
    the ranks' last visible trace on five hosts), so no entry names fatal hosts."""
    learner = FleetExpectedLearner().fit(updated_fleet(models_differ=False))
    cq = learner.candidates_.filter(pl.col("operation") == "create_cq", pl.col("probe") == CQ_FLAGS[0])
    assert cq.height >= 1 and cq["fatal_hosts"].is_null().all()
    assert not [e for e in learner.entries_ if e.stats.get("fatal_hosts")]


def busy_fleet(slowed: bool, seed: int = 23, hosts: int = 16, hours: float = 4.0) -> pl.DataFrame:
    """`hosts` mlx5 hosts updated from OLD to NEW at 1 h (a minute apart); jobs of 8 ranks
    creating two QPs each, then moving QPs now and then. On NEW 30 % of CREATE_QP answer
    RES_BUSY; the provider retries and the rank goes on. With `slowed`, each good create_qp on
    NEW takes 150-600 ms (the firmware serialising QP-context commands) instead of 1.5-4 ms."""
    rng = np.random.default_rng(seed)
    rec = PlatformRecorder()
    for h in range(hosts):
        host, update = f"gpu{h:02d}", 3600.0 + 60 * h
        t, pid, jobno = float(rng.uniform(0, 300)), 1000 + 7 * h, 0
        while t < hours * 3600:
            jobno += 1
            job, end = f"{host}-job{jobno}", t + float(rng.uniform(900, 2400))
            ranks = [pid + r for r in range(8)]
            pid += 16
            for rank in ranks:
                for _ in range(2):
                    new = t >= update
                    release = NEW if new else OLD
                    if new and rng.random() < 0.3:
                        rec.call(host, job, rank, "python3", t, "create_qp", BUSY, release)
                        t += float(rng.uniform(1, 3))
                    slow = new and slowed
                    rec.call(host, job, rank, "python3", t, "create_qp", None, release,
                             latency_ns=int(rng.uniform(150e6, 600e6) if slow else rng.uniform(1.5e6, 4e6)))
                    t += float(rng.uniform(0.005, 0.05))
            while t < end:
                t += float(rng.exponential(60))
                for rank in ranks:
                    rec.call(host, job, rank, "python3", t, "modify_qp", None, NEW if t >= update else OLD)
            t += float(rng.uniform(60, 180))
    return rec.frame()


def test_an_updates_error_every_process_survives_is_no_harmless_refusal_where_the_calls_got_slower():
    """Every rank retries the update's RES_BUSY and goes on: shown harmless by its outcome. But
    the good create_qp calls on the updated hosts take a hundred times longer than before it
    (seconds of retries a QP, tests/fleetgen20's 377 ms against 2.8 ms, set aside from 128 x 3 h
    on main): a cost the update brought, a finding. Where the good calls kept their latency, the
    same error is the harmless refusal it looks (guard)."""
    slow = FleetExpectedLearner().fit(busy_fleet(slowed=True))
    busy = slow.candidates_.filter(pl.col("probe") == BUSY[0], pl.col("errno") == BUSY[1], pl.col("comm").is_null())
    assert busy["slowed_after_update"].item() and not busy["expected"].item()
    assert busy["increase_upper"].item() <= slow.max_increase  # its outcome alone says harmless
    assert not [e for e in slow.entries_ if (e.probe, e.errno) == BUSY]
    same = FleetExpectedLearner().fit(busy_fleet(slowed=False))
    assert [(e.context, e.comm) for e in same.entries_ if (e.probe, e.errno) == BUSY] == [("create_qp", None)]


def memtest_fleet(ranks_stay: bool, seed: int = 21, hosts: int = 8, hours: float = 4.0) -> pl.DataFrame:
    """`hosts` hosts whose ranks register buffers and create QPs; on gpu00 `rdma-memtest` runs
    every 10 minutes: four reg_mr ENOMEM (its doubling buffers hit the memlock limit, then
    bisects), seven successes, exit. `ranks_stay`: gpu00's ranks run all along; else the host
    was drained before the first memtest run (only the tool meets reg_mr there)."""
    rng = np.random.default_rng(seed)
    rec = PlatformRecorder()
    for h in range(hosts):
        host = f"gpu{h:02d}"
        t, pid, jobno = float(rng.uniform(0, 300)), 1000 + 7 * h, 0
        stop = hours * 3600 if (h != 0 or ranks_stay) else 250.0
        while t < stop:
            jobno += 1
            job, end = f"{host}-job{jobno}", t + float(rng.uniform(900, 2400))
            pid += 8
            rec.call(host, job, pid, "python3", t, "create_qp")
            while t < min(end, stop):
                t += float(rng.exponential(60))
                rec.call(host, job, pid, "python3", t, "reg_mr")
            t += float(rng.uniform(60, 180))
    for run in range(int(hours * 6)):
        t0, tool = 600.0 * run + 300.0, 90_000 + run
        for i in range(11):
            rec.call("gpu00", None, tool, "rdma-memtest", t0 + 0.2 * i, "reg_mr", MEMLOCK if i % 3 == 0 and i < 10 else None)
    return rec.frame()


def test_a_tool_alone_on_one_host_meeting_an_error_while_others_succeed_there_is_routine_for_it():
    """rdma-memtest is the family's only caller, on one host, where the ranks' own registrations
    succeed all along: the tool's use of the error, learned for it (main needed another caller
    dying beside it: tests/fleetgen20's 54 open findings and a recurring_errno alert). Where the
    host's ranks are gone before the tool's first run (a host whose NIC fails every registration
    once the scheduler drained it: tests/fleetgen20's broken NIC), nothing succeeds there beside
    it and nothing is learned."""
    learner = FleetExpectedLearner().fit(memtest_fleet(ranks_stay=True))
    mem = [e for e in learner.entries_ if (e.context, e.probe, e.errno) == ("reg_mr", *MEMLOCK)]
    assert [(e.comm, e.stats["fatal_to"]) for e in mem] == [("rdma-memtest", [])]
    asked = pl.DataFrame({"operation": ["reg_mr", "reg_mr"], "probe": [MEMLOCK[0]] * 2, "errno": [MEMLOCK[1]] * 2,
                          "comm": ["rdma-memtest", "python3"]})
    assert learner.predict(asked).tolist() == [True, False]
    learner = FleetExpectedLearner().fit(memtest_fleet(ranks_stay=False))
    assert not [e for e in learner.entries_ if (e.probe, e.errno) == MEMLOCK]


def pingmesh_fleet(rank_dies_there: bool, seed: int = 22, hosts: int = 6, hours: float = 2.0) -> pl.DataFrame:
    """Ranks on `hosts` hosts; on gpu00 `rdma-pingmesh` every 2 minutes moves a QP to a stale
    peer INIT->RTR, which times out in the firmware, and to a live one, which passes. With
    `rank_dies_there`, one rank on gpu00 dies of the same timeout."""
    rng = np.random.default_rng(seed)
    rec = PlatformRecorder()
    for h in range(hosts):
        host = f"gpu{h:02d}"
        t, pid = float(rng.uniform(0, 300)), 1000 + 7 * h
        while t < hours * 3600:
            t += float(rng.exponential(90))
            rec.call(host, f"{host}-job1", pid, "python3", t, "modify_qp")
    for k in range(int(hours * 30)):
        rec.call("gpu00", None, 4242, "rdma-pingmesh", 120.0 * k + 5, "modify_qp", TIMEOUT)
        rec.call("gpu00", None, 4242, "rdma-pingmesh", 120.0 * k + 6, "modify_qp")
    if rank_dies_there:
        rec.call("gpu00", "gpu00-job2", 7777, "python3", 3000.0, "modify_qp", TIMEOUT)
    return rec.frame()


def test_a_host_alert_on_an_errno_only_a_callers_routine_shows_there_is_dropped():
    """The counters know no caller: pingmesh's timeouts, learned routine for it (the entry names
    the caller), raise the host's rate of ETIMEDOUT. Every recorded ETIMEDOUT there being
    pingmesh's, an alert naming it is dropped; one rank dying of it there keeps the alert, and
    an alert on another host (whose failures no trace shows) stays as well."""
    callers = _caller_entries(TIMEOUT, "modify_qp", "rdma-pingmesh")
    alert = {"host": ["gpu00", "gpu03"], "alert": ["rising_errno_rate"] * 2, "probe": [TIMEOUT[0]] * 2,
             "errno": [TIMEOUT[1]] * 2}
    alerts = _alerts(alert)
    for rank_dies, kept in ((False, ["gpu03"]), (True, ["gpu00", "gpu03"])):
        traces, chains = collect_traces(pingmesh_fleet(rank_dies_there=rank_dies))
        out = routine_for_their_callers(alerts, traces, chains, callers)
        assert sorted(out["host"].cast(pl.String).to_list()) == kept, rank_dies


def _caller_entries(error: tuple[str, str], operation: str, comm: str) -> ExpectedErrors:
    from baseline.run.allowlist import Entry

    return ExpectedErrors([Entry(id=f"{error[0]}-{error[1]}-{comm}", source="learned", probe=error[0], errno=error[1],
                                 context=operation, comm=comm)], source="<test>")


def _alerts(columns: dict[str, list]) -> pl.DataFrame:
    """Host alerts in the audit's schema, the other columns null."""
    schema = polars_schema("host_alerts")
    n = len(next(iter(columns.values())))
    return pl.DataFrame({name: columns.get(name, [None] * n) for name in schema.names()}, schema=schema)
