"""The expected-error learner's survival test under emit-on-failure recording.

The fleet tracer records every failing call tree, but successful ones only inside capture
windows (60 s every 15 min here, as tests/fleetgen3 and the docs describe); outside them a
failure carries no latency (the 4 ms tick). A process that retried an error and went on
outside a window leaves no later trace, so "no later call" there does not mean it died. The
windows open by the clock, whatever a process does, so the traces recorded inside them are a
sample whose outcome is seen: the learner compares P(fail | error) with P(fail | probe reached)
among those (both sides), and falls back to all traces where a side has too few of them (for
the error a bound that can only make it look more fatal).

The fleet below is built from reference/rdma_control_path.yaml through tests/fleetgen3's call
trees (written without reading baseline/fleet): create_qp on mlx5 hosts, the rdmacg EAGAIN at
ib_rdmacg_try_charge (rdma cgroup hca_object limit, retried and survived) on the hosts with a
cgroup limit, and the guard: firmware out of resources (mlx5_cmd_exec NO_RES -> -EAGAIN, the
reference's cmd_status_to_err) on a few hosts, retried once and then fatal -- the same errno,
and a retry that "survives" before the process dies.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
from fleetgen3 import calls as C

from baseline.fleet.expected import FleetExpectedLearner
from tracer.schema import polars_schema

T0 = dt.datetime(2026, 11, 24, 6, 0, tzinfo=dt.UTC)
WINDOW_EVERY, WINDOW_LEN = 900.0, 60.0
RETRIES = 1


class Recorder:
    """What the fleet tracer writes: failures always, successes inside capture windows only."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in polars_schema("events").names()}
        self.n = 0

    def timed(self, t: float) -> bool:
        return t % WINDOW_EVERY < WINDOW_LEN

    def call(self, host: str, job: str, pid: int, t: float, op: str, fail: tuple[str, str] | None = None) -> None:
        frames = C.tree(op, "mlx5", "upstream", "INIT->RTR" if op == "modify_qp" else "")
        errnos: list[str | None] = [None] * len(frames)
        if fail is not None:
            frames, errnos = C.fail(frames, fail[0], fail[1])
        timed = self.timed(t)
        if fail is None and not timed:
            return
        self.n += 1
        start = T0 + dt.timedelta(seconds=t)
        r = self.rows
        k = len(frames)
        ret = [-C.ERRNO_VALUE[e] if e else 0 for e in errnos]
        r["trace_id"] += [f"{host}.{self.n:08x}"] * k
        r["seq"] += list(range(k))
        r["ts_ns"] += [int(t * 1e9) + i * 1000 for i in range(k)]
        r["pid"] += [pid] * k
        r["tid"] += [pid] * k
        r["ppid"] += [1] * k
        r["comm"] += ["python3"] * k
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


def fleet(no_res: bool = True, seed: int = 4) -> pl.DataFrame:
    """45 mlx5 hosts x 6 h of jobs: each creates its QPs, moves them to RTR, then churns memory
    registrations (modify_qp here: any later call) now and then until it ends."""
    rng = np.random.default_rng(seed)
    rec = Recorder()
    for h in range(45):
        host = f"gpu{h:02d}"
        limited = h % 3 == 0  # an rdma cgroup limit on a third of the hosts
        fw_out = no_res and h in (1, 4, 7, 10)  # HCA out of firmware resources (a leak elsewhere)
        t, pid, jobno = float(rng.uniform(0, 600)), 1000 + 7 * h, 0
        while t < 6 * 3600:
            jobno += 1
            pid += int(rng.integers(1, 40))
            job = f"{host}-job{jobno}"
            end = t + float(rng.uniform(600, 3600))
            died = False
            for _ in range(int(rng.choice([4, 8, 16]))):
                if limited and rng.random() < 0.2:  # charge refused: retried a few ms later
                    rec.call(host, job, pid, t, "create_qp", ("ib_rdmacg_try_charge", "EAGAIN"))
                    t += 0.01
                if fw_out and rng.random() < 0.3:  # NO_RES: retried, then the job gives up
                    for _ in range(RETRIES + 1):
                        rec.call(host, job, pid, t, "create_qp", ("mlx5_cmd_exec", "EAGAIN"))
                        t += 0.5
                    died = True
                    break
                rec.call(host, job, pid, t, "create_qp")
                t += float(rng.uniform(0.005, 0.05))
            while not died and t < end:
                rec.call(host, job, pid, t, "modify_qp")
                t += float(rng.exponential(300))
            t += float(rng.exponential(600))
    return rec.frame()


def verdict(learner: FleetExpectedLearner, probe: str) -> dict:
    cand = learner.candidates_.filter((pl.col("operation") == "create_qp") & (pl.col("probe") == probe)
                                      & (pl.col("errno") == "EAGAIN"))
    assert cand.height == 1, learner.candidates_
    return cand.row(0, named=True)


def test_a_retried_error_is_not_taken_for_fatal_outside_capture_windows():
    events = fleet(no_res=False)
    failures = events.filter(pl.col("kind") == "failure")
    assert failures.filter(pl.col("latency_ns").is_null())["trace_id"].n_unique() > 0.8 * failures["trace_id"].n_unique()
    eagain = verdict(FleetExpectedLearner().fit(events), "ib_rdmacg_try_charge")
    assert eagain["outcome_in_windows"] and eagain["timed_traces"] >= 5, eagain
    assert eagain["expected"] and eagain["p_fail_true"] <= 0.05, eagain
    # every trace's outcome taken at face value (what the learner did before): a process that
    # retried and went on outside a window looks dead, the error several times as fatal as in
    # the windows. Only the processes whose last trace came after their host's last capture
    # window (right-censored: nothing could have followed) are left out of that count.
    biased = verdict(FleetExpectedLearner(min_timed=10**9, min_timed_survived=10**9).fit(events), "ib_rdmacg_try_charge")
    assert not biased["outcome_in_windows"] and biased["censored"] > 0, biased
    assert biased["failing"] > 0.15 * biased["traces"] and biased["p_fail_true"] > 3 * eagain["p_fail_true"], (biased, eagain)
    assert biased["increase_lower"] > eagain["increase_lower"] + 0.04, (biased, eagain)


def test_a_retry_then_die_fault_stays_a_finding():
    """The firmware's NO_RES EAGAIN survives its first try in every process (the retry is a
    later call) and kills the job on the second: in the capture windows as everywhere."""
    events = fleet()
    learner = FleetExpectedLearner().fit(events)
    no_res = verdict(learner, "mlx5_cmd_exec")
    assert no_res["survived"] >= learner.min_success and no_res["success_hosts"] >= learner.min_hosts, no_res
    assert no_res["outcome_in_windows"] and not no_res["expected"], no_res
    assert no_res["increase_lower"] > learner.max_increase, no_res
    assert verdict(learner, "ib_rdmacg_try_charge")["expected"]


def test_ranks_ending_at_the_same_instant_are_all_weighed_whatever_their_order():
    """A rank whose last trace (a routine error it went on from) came more than a minute before
    its job's end is killed with the job when another rank, alive then, ended later with a
    failed call of another chain. Two ranks end at the same instant after it: one of its own
    chain (no evidence), one of another (the job's fatal error). The other one decides, in
    whichever order the process table lists them: the as-of join took the first of the tied
    ranks it met, so the answer followed the row order."""
    from baseline.fleet.expected import KILLED_WITH_JOB_S, _killed_with_job

    t0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
    later = t0 + dt.timedelta(seconds=2 * KILLED_WITH_JOB_S)
    # per-trace rows: 0 the rank's routine error (chain 1, root succeeded), 1 the same chain
    # failing the root, 2 the job's fatal error (chain 2)
    traces = pl.LazyFrame({"chain_hash": [1, 1, 2], "root_failed": [False, True, True]},
                          schema={"chain_hash": pl.UInt64, "root_failed": pl.Boolean})
    rank = {"_run": 1, "pid": 10, "_first": t0 - dt.timedelta(minutes=5), "_last": t0, "_last_row": 0}
    same_chain = {"_run": 1, "pid": 20, "_first": t0 - dt.timedelta(minutes=5), "_last": later, "_last_row": 1}
    fatal = {"_run": 1, "pid": 30, "_first": t0 - dt.timedelta(minutes=5), "_last": later, "_last_row": 2}
    for order in ([rank, same_chain, fatal], [rank, fatal, same_chain], [fatal, same_chain, rank]):
        procs = pl.DataFrame(order, schema={"_run": pl.UInt32, "pid": pl.Int64, "_first": pl.Datetime("ns", "UTC"),
                                            "_last": pl.Datetime("ns", "UTC"), "_last_row": pl.UInt32}
                             ).with_columns(pl.lit(False).alias("_censored"))
        censored = sorted(_killed_with_job(procs, traces).filter(pl.col("_censored"))["pid"])
        # (the two tied ranks, of different chains, count each other as the job's end: the rule's
        # reading of ranks dying together, the same in every order)
        assert censored == [10, 20, 30], (order, censored)
