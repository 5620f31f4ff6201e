"""Expected errors that depend on the caller: one program retries an errno through, another dies
of it (the fleet learner's "Caller", baseline.fleet.expected).

The fleet is built from reference/rdma_control_path.yaml through tests/fleetgen3's call trees
(written without reading baseline/fleet): mlx5 hosts whose jobs create their QPs and move them
INIT->RTR, recorded as the fleet tracer does (failures always, successes in capture windows).
Two launchers share the hosts: tenant aria's ``python3`` retries a firmware command timeout
(mlx5_cmd_exec -ETIMEDOUT, the reference's transport-level failure, under modify_qp) and goes
on; tenant brisk's ``brisk-worker`` does not retry and the rank dies. One family (modify_qp,
mlx5_cmd_exec, ETIMEDOUT), survival mixed: routine for python3, a finding for brisk-worker. The
rdma cgroup's charge EAGAIN (ib_rdmacg_try_charge, create_qp) is retried by every launcher: a
family consistent fleet-wide, routine for any caller, one never seen (``kite-agent``) included.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl
from fleetgen3 import calls as C

from baseline.fleet.audit import run_audit
from baseline.fleet.expected import FleetExpectedLearner, merge_into_file
from baseline.run.allowlist import ExpectedErrors
from tracer.schema import polars_schema

T0 = dt.datetime(2026, 11, 24, 6, 0, tzinfo=dt.UTC)
WINDOW_EVERY, WINDOW_LEN = 600.0, 120.0
TIMEOUT = ("mlx5_cmd_exec", "ETIMEDOUT")  # modify_qp INIT->RTR: the firmware command timed out
CHARGE = ("ib_rdmacg_try_charge", "EAGAIN")  # create_qp: the rdma cgroup's hca_object limit
RETRIES = {"python3": True, "kite-agent": True, "brisk-worker": False}  # does its launcher retry a timeout


class Recorder:
    """What the fleet tracer writes: failures always, successes inside capture windows only."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in polars_schema("events").names()}
        self.n = 0

    def call(self, host: str, job: str, pid: int, comm: str, t: float, op: str,
             fail: tuple[str, str] | None = None) -> None:
        frames = C.tree(op, "mlx5", "upstream", "INIT->RTR" if op == "modify_qp" else "")
        errnos: list[str | None] = [None] * len(frames)
        if fail is not None:
            frames, errnos = C.fail(frames, fail[0], fail[1])
        timed = t % WINDOW_EVERY < WINDOW_LEN
        if fail is None and not timed:
            return
        self.n += 1
        start = T0 + dt.timedelta(seconds=t)
        r, k = self.rows, len(frames)
        ret = [-C.ERRNO_VALUE[e] if e else 0 for e in errnos]
        r["trace_id"] += [f"{host}.{self.n:08x}"] * k
        r["seq"] += list(range(k))
        r["ts_ns"] += [int(t * 1e9) + i * 1000 for i in range(k)]
        r["pid"] += [pid] * k
        r["tid"] += [pid] * k
        r["ppid"] += [1] * k
        r["comm"] += [comm] * k
        r["probe"] += [f.probe for f in frames]
        r["layer"] += [f.layer for f in frames]
        r["depth"] += [f.depth for f in frames]
        r["ret"] += ret
        r["errno"] += errnos
        r["latency_ns"] += [5000] * k if timed else [None] * k  # untimed: the tick, no latency
        r["kind"] += ["failure" if fail else "good"] * k
        r["command"] += [op] * k
        r["exit_status"] += [ret[0]] * k
        r["start_time"] += [start] * k
        r["end_time"] += [start + dt.timedelta(microseconds=5 if timed else 0)] * k
        r["host"] += [host] * k
        r["kernel_release"] += ["6.8.0-51-generic"] * k
        r["lost_events"] += [0] * k
        r["job_id"] += [job] * k
        for name in ("path", "arg", "path2", "output", "metadata", "repeat_count"):
            r[name] += [None] * k

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=polars_schema("events"))


def fleet(comms: tuple[str, ...], seed: int, hosts: int = 24, hours: float = 4.0) -> pl.DataFrame:
    """`hosts` mlx5 hosts running jobs of the launchers `comms` in turn: each job creates its QPs
    (a third of the hosts have a cgroup limit: a charge refused now and then, retried), then moves
    QPs INIT->RTR now and then until it ends; 8 % of those time out in the firmware, which
    the launchers of RETRIES retry (the retry passes) and the others die of."""
    rng = np.random.default_rng(seed)
    rec = Recorder()
    for h in range(hosts):
        host = f"gpu{h:02d}"
        limited = h % 3 == 0
        t, pid, jobno = float(rng.uniform(0, 300)), 1000 + 7 * h, 0
        while t < hours * 3600:
            jobno += 1
            pid += int(rng.integers(1, 40))
            comm = comms[jobno % len(comms)]
            job = f"{host}-job{jobno}"
            end = t + float(rng.uniform(900, 2400))
            for _ in range(int(rng.choice([4, 8]))):
                if limited and rng.random() < 0.3:  # charge refused: retried a few ms later
                    rec.call(host, job, pid, comm, t, "create_qp", CHARGE)
                    t += 0.01
                rec.call(host, job, pid, comm, t, "create_qp")
                t += float(rng.uniform(0.005, 0.05))
            while t < end:
                if rng.random() < 0.08:
                    rec.call(host, job, pid, comm, t, "modify_qp", TIMEOUT)
                    if not RETRIES[comm]:
                        break  # the rank dies
                    t += 0.5
                rec.call(host, job, pid, comm, t, "modify_qp")
                t += float(rng.exponential(120))
            t += float(rng.exponential(300))
    return rec.frame()


def _open(findings: pl.DataFrame, comm: str, error: tuple[str, str]) -> tuple[int, int]:
    """(open, set aside) findings of one caller at one origin."""
    mine = findings.filter(pl.col("comm").cast(pl.String) == comm, pl.col("probe").cast(pl.String) == error[0],
                           pl.col("errno").cast(pl.String) == error[1])
    return mine.filter(~pl.col("expected")).height, mine.filter(pl.col("expected")).height


def test_a_family_is_learned_for_the_caller_that_survives_it():
    """The timeout is learned for python3 only (brisk-worker named as dying of it); the
    cgroup's EAGAIN for every caller, one the fleet never showed included."""
    learner = FleetExpectedLearner().fit(fleet(("python3", "brisk-worker"), seed=18))
    timeout = [e for e in learner.entries_ if (e.probe, e.errno, e.context) == (*TIMEOUT, "modify_qp")]
    assert [(e.comm, e.stats["fatal_to"]) for e in timeout] == [("python3", ["brisk-worker"])]
    charge = [e for e in learner.entries_ if (e.probe, e.errno, e.context) == (*CHARGE, "create_qp")]
    assert [e.comm for e in charge] == [None]
    asked = pl.DataFrame({"operation": ["modify_qp", "modify_qp", "modify_qp", "create_qp", "create_qp"],
                          "probe": [TIMEOUT[0]] * 3 + [CHARGE[0]] * 2, "errno": [TIMEOUT[1]] * 3 + [CHARGE[1]] * 2,
                          "comm": ["python3", "brisk-worker", "kite-agent", "kite-agent", None]})
    assert learner.predict(asked).tolist() == [True, False, False, True, True]


def test_a_family_that_passes_fleet_wide_is_split_when_a_caller_dies_of_it():
    """One job in six is brisk-worker's: python3's retried timeouts outnumber its deaths, and the
    family pooled over both passes fleet-wide. brisk-worker is still shown to die of it, so the
    family is learned for python3 only (main learned it for every caller and set brisk-worker's
    deaths aside: tests/fleetgen16's agent beside the ranks a never-ending driver restart kills)."""
    learner = FleetExpectedLearner().fit(fleet(("python3",) * 5 + ("brisk-worker",), seed=18))
    timeout = [e for e in learner.entries_ if (e.probe, e.errno, e.context) == (*TIMEOUT, "modify_qp")]
    assert [(e.comm, e.stats["fatal_to"]) for e in timeout] == [("python3", ["brisk-worker"])]
    pooled = learner.candidates_.filter(pl.col("probe") == TIMEOUT[0], pl.col("comm").is_null())
    assert pooled["increase_lower"].item() <= learner.max_increase and not pooled["expected"].item()


def test_the_audit_sets_aside_a_callers_routine_error_only_for_that_caller(tmp_path):
    """Learned into a file (its `comm:` kept) and applied to another day with a third launcher:
    python3's timeouts set aside, brisk-worker's open in a cluster of their own, kite-agent's
    (never seen) open too -- the file says nothing of it -- while kite-agent's cgroup EAGAIN,
    routine for any caller, is set aside."""
    learned = FleetExpectedLearner().fit(fleet(("python3", "brisk-worker"), seed=18)).entries_
    path = tmp_path / "expected_errors.yaml"
    merge_into_file(path, learned)
    allow = ExpectedErrors.load(path)
    assert [e.comm for e in allow.entries if e.probe == TIMEOUT[0]] == ["python3"]
    day = fleet(("python3", "brisk-worker", "kite-agent"), seed=19)
    result = run_audit(day, expected=allow, learn_expected=False)
    findings = result.findings
    opened, aside = _open(findings, "python3", TIMEOUT)
    assert opened == 0 and aside > 20
    opened, aside = _open(findings, "brisk-worker", TIMEOUT)
    assert opened > 20 and aside == 0
    opened, aside = _open(findings, "kite-agent", TIMEOUT)
    assert opened > 5 and aside == 0
    opened, aside = _open(findings, "kite-agent", CHARGE)
    assert opened == 0 and aside > 5
    # the open timeouts are one cluster, whoever's
    assert findings.filter(~pl.col("expected"), pl.col("errno").cast(pl.String) == "ETIMEDOUT")["cluster_id"].n_unique() == 1


def test_findings_written_before_the_caller_was_recorded_still_read(tmp_path):
    """An audit's findings from before `comm` was a column read back with it null (the data
    model's ADDED_COLUMNS), so `baseline report` of an old audit still works."""
    import pyarrow.parquet as pq

    from baseline.fleet.audit import read_audit, write_audit
    from tracer import schema

    day = fleet(("python3", "brisk-worker"), seed=18, hosts=6, hours=1.0)
    files = write_audit(run_audit(day, expected=ExpectedErrors([])), tmp_path / "audit")
    assert read_audit(tmp_path / "audit").findings["comm"].null_count() == 0
    findings = Path(files["findings"]).resolve()
    old = pq.read_table(findings).drop_columns(sorted(schema.ADDED_COLUMNS["findings"]))
    pq.write_table(old.replace_schema_metadata({schema.META_TABLE: b"findings", schema.META_VERSION: b"2"}), findings)
    again = read_audit(tmp_path / "audit").findings
    assert again.height == old.num_rows > 0 and again["comm"].null_count() == again.height


def fleet_with_one_host_tool(ranks_fail_there: bool, seed: int = 18, hosts: int = 24,
                             hours: float = 4.0) -> pl.DataFrame:
    """brisk-worker ranks on every host die of the firmware timeout (8 % of their INIT->RTR),
    except on host gpu00 unless `ranks_fail_there`; on gpu00 alone a ``fw-diag`` tool runs every
    10 minutes, meets the timeout three times, retrying each, and goes on."""
    rng = np.random.default_rng(seed)
    rec = Recorder()
    for h in range(hosts):
        host = f"gpu{h:02d}"
        t, pid, jobno = float(rng.uniform(0, 300)), 1000 + 7 * h, 0
        fails_here = h != 0 or ranks_fail_there
        while t < hours * 3600:
            jobno += 1
            pid += int(rng.integers(1, 40))
            job, end = f"{host}-job{jobno}", t + float(rng.uniform(900, 2400))
            for _ in range(4):
                rec.call(host, job, pid, "brisk-worker", t, "create_qp")
                t += float(rng.uniform(0.005, 0.05))
            while t < end:
                if fails_here and rng.random() < 0.08:
                    rec.call(host, job, pid, "brisk-worker", t, "modify_qp", TIMEOUT)
                    break  # the rank dies
                rec.call(host, job, pid, "brisk-worker", t, "modify_qp")
                t += float(rng.exponential(120))
            t += float(rng.exponential(300))
        if h == 0:
            for run in range(int(hours * 6)):
                t0, diag = 600.0 * run + 30.0, 50_000 + run
                for i in range(3):
                    rec.call(host, None, diag, "fw-diag", t0 + i, "modify_qp", TIMEOUT)
                rec.call(host, None, diag, "fw-diag", t0 + 3.5, "modify_qp")
    return rec.frame()


def test_a_tool_going_on_through_a_family_on_its_one_host_is_routine_for_it():
    """fw-diag on one host retries the timeout that kills brisk-worker's ranks on the 23 others:
    on its host no other caller dies of it, so the tool's 24 runs stand in for the hosts it lacks
    and the family is learned for fw-diag (main required min_hosts hosts of a caller whose errno
    is no retry signal: tests/fleetgen19's rdma-memtest probing the memlock limit, 36 open
    findings clustered with the rare ENOMEM that kills ranks). Where the ranks of the tool's
    host die of it too, the host is at fault and nothing is learned (tests/fleetgen16's
    firmware EIO an agent goes on through)."""
    learner = FleetExpectedLearner().fit(fleet_with_one_host_tool(ranks_fail_there=False))
    timeout = [e for e in learner.entries_ if (e.probe, e.errno, e.context) == (*TIMEOUT, "modify_qp")]
    assert [(e.comm, e.stats["fatal_to"]) for e in timeout] == [("fw-diag", ["brisk-worker"])]
    learner = FleetExpectedLearner().fit(fleet_with_one_host_tool(ranks_fail_there=True))
    assert not [e for e in learner.entries_ if (e.probe, e.errno) == TIMEOUT]


def test_a_windows_entry_for_every_caller_gives_way_where_the_audited_day_splits_it():
    # the good window saw only the agent that goes on (an entry without comm); the audited day
    # shows ranks dying of the same family: its per-caller entries take the window's place
    from baseline.fleet.audit import superseded_by_callers
    from baseline.run.allowlist import Entry

    fam = {"probe": "rdma_addr_find_l2_eth_by_grh", "errno": "ETIMEDOUT", "context": "modify_qp"}
    window = Entry(id="w", source="learned", **fam)
    curated = Entry(id="c", source="curated", **fam)
    other = Entry(id="o", source="learned", probe="ib_umem_get", errno="ENOMEM", context="reg_mr")
    day = [Entry(id="d", source="learned", comm="pingmesh", stats={"fatal_to": ["python3"]}, **fam)]
    kept = superseded_by_callers(ExpectedErrors([window, curated, other]), day)
    assert [e.id for e in kept.entries] == ["c", "o"]
    # a day without such a split leaves the window's list as it is
    same = ExpectedErrors([window, other])
    assert superseded_by_callers(same, [Entry(id="d2", source="learned", comm="pingmesh", stats={}, **fam)]) is same
