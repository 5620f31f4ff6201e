"""The expected-error learner's survival test when a dying process frees what it made first.

NCCL's abort path (and any careful program's) meets a fatal error, destroys its QPs,
deregisters its MRs and deallocates its PD, then exits: 20-200 ms of calls after the error that
are not its going on. The reference (reference/rdma_control_path.yaml) classes those operations
`cleanup` (dealloc/destroy/dereg/...). Calls that only free resources, soon after a failed call
and followed by nothing, are the process's death of that failure; a normal exit's teardown after
a successful call, or a routine error retried through, is not.

The fleet is built from the reference through tests/fleetgen3's call trees (written without
reading baseline/fleet): OFED mlx5 hosts registering GPU memory (the peer-memory path), a third
of them with a peer client whose allocation fails (ENOMEM at ib_peer_umem_get: kzalloc of
ib_umem_peer, the reference's error there) and kills the process, and an rdma cgroup limit's
EAGAIN at ib_rdmacg_try_charge, retried through, on another third. Every call is recorded (a
capture window always open): the outcome is what the calls show, nothing of the sampling.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
from fleetgen3 import calls as C

from baseline.fleet.expected import ABORT_PATH_S, FleetExpectedLearner, _abort_path_ends
from tracer.schema import polars_schema

T0 = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
PEER_ENOMEM = ("reg_mr", "ib_peer_umem_get", "ENOMEM")
CGROUP_EAGAIN = ("create_qp", "ib_rdmacg_try_charge", "EAGAIN")


class Recorder:
    """Every call tree as the fleet tracer writes it inside a capture window."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in polars_schema("events").names()}
        self.n = 0

    def call(self, host: str, job: str, pid: int, t: float, op: str, fail: tuple[str, str] | None = None) -> None:
        variant = {"reg_mr": "gpu", "modify_qp": "INIT->RTR"}.get(op, "")
        frames = C.tree(op, "mlx5", "ofed", variant)
        errnos: list[str | None] = [None] * len(frames)
        if fail is not None:
            frames, errnos = C.fail(frames, fail[0], fail[1])
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
        r["comm"] += ["python3"] * k
        r["probe"] += [f.probe for f in frames]
        r["layer"] += [f.layer for f in frames]
        r["depth"] += [f.depth for f in frames]
        r["ret"] += ret
        r["errno"] += errnos
        r["latency_ns"] += [5000] * k
        r["kind"] += ["failure" if fail else "good"] * k
        r["command"] += [op] * k
        r["exit_status"] += [ret[0]] * k
        r["start_time"] += [start] * k
        r["end_time"] += [start + dt.timedelta(microseconds=5)] * k
        r["host"] += [host] * k
        r["kernel_release"] += ["5.15.0-1067-nvidia"] * k
        r["lost_events"] += [0] * k
        r["job_id"] += [job] * k
        for name in ("path", "arg", "path2", "output", "metadata", "repeat_count"):
            r[name] += [None] * k

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=polars_schema("events"))


def fleet(abort_path: bool, seed: int = 22) -> pl.DataFrame:
    """36 hosts x 4 h of jobs: alloc_pd, 4-8 QPs (create, INIT->RTR), then GPU memory
    registrations until the job ends, when it tears down what it made (destroy_qp, dereg_mr,
    dealloc_pd). On hosts 0, 3, 6, ... the peer client's ENOMEM fails 15 % of registrations and
    the process dies of it: with `abort_path`, after freeing what it made 20-200 ms later; without,
    at once. On hosts 1, 4, 7, ... the rdma cgroup refuses 20 % of QP charges, retried 10 ms later."""
    rng = np.random.default_rng(seed)
    rec = Recorder()
    for h in range(36):
        host = f"gpu{h:02d}"
        peer_fault, limited = h % 3 == 0, h % 3 == 1
        t, pid, jobno = float(rng.uniform(0, 300)), 2000 + 11 * h, 0
        while t < 4 * 3600:
            jobno += 1
            pid += int(rng.integers(1, 40))
            job = f"{host}-job{jobno}"
            end = t + float(rng.uniform(600, 1800))
            rec.call(host, job, pid, t, "alloc_pd")
            qps = int(rng.integers(4, 9))
            for _ in range(qps):
                t += float(rng.uniform(0.005, 0.02))
                if limited and rng.random() < 0.2:
                    rec.call(host, job, pid, t, "create_qp", CGROUP_EAGAIN[1:])
                    t += 0.01
                rec.call(host, job, pid, t, "create_qp")
                rec.call(host, job, pid, t + 0.001, "modify_qp")
            mrs, died = 0, False
            while t < end:
                t += float(rng.exponential(120))
                if peer_fault and rng.random() < 0.15:
                    rec.call(host, job, pid, t, "reg_mr", PEER_ENOMEM[1:])
                    died = True
                    break
                rec.call(host, job, pid, t, "reg_mr")
                mrs += 1
            if not died or abort_path:
                # the teardown: at the job's end, or the abort path's 20-200 ms after the error
                t += float(rng.uniform(0.02, 0.2)) if died else 1.0
                for op, n in (("destroy_qp", qps), ("dereg_mr", mrs), ("dealloc_pd", 1)):
                    for _ in range(n):
                        rec.call(host, job, pid, t, op)
                        t += 0.002
            t += float(rng.exponential(300))
    return rec.frame()


def verdict(learner: FleetExpectedLearner, family: tuple[str, str, str]) -> dict:
    op, probe, errno = family
    cand = learner.candidates_.filter((pl.col("operation") == op) & (pl.col("probe") == probe)
                                      & (pl.col("errno") == errno) & pl.col("comm").is_null())
    assert cand.height == 1, learner.candidates_
    return cand.row(0, named=True)


def test_a_rank_that_frees_what_it_made_and_exits_died_of_the_error():
    """The peer-memory ENOMEM kills every process that meets it, whether it frees its QPs, MRs
    and PD on the way out or exits at once: the same verdict, the same deaths, either way."""
    for abort_path in (True, False):
        learner = FleetExpectedLearner().fit(fleet(abort_path))
        peer = verdict(learner, PEER_ENOMEM)
        assert peer["hosts"] == 12 and peer["traces"] >= 50, (abort_path, peer)
        assert peer["failing"] == peer["traces"] and peer["survived"] == 0, (abort_path, peer)
        assert not peer["expected"] and peer["increase_lower"] > learner.max_increase, (abort_path, peer)
        # the cgroup's EAGAIN, retried through and followed by a whole job and its normal
        # teardown, stays routine
        eagain = verdict(learner, CGROUP_EAGAIN)
        assert eagain["expected"] and eagain["failing"] == 0, (abort_path, eagain)


def _table(rows: list[tuple[int, float, str, bool]]) -> tuple[pl.DataFrame, pl.LazyFrame]:
    """(procs, traces) as FleetExpectedLearner._candidates holds them, from (pid, seconds after
    T0, operation, root failed) rows of one job on one host, in emission order."""
    tr = pl.DataFrame(
        {"host": ["h1"] * len(rows), "job_id": ["j1"] * len(rows), "pid": [r[0] for r in rows],
         "start_time": [T0 + dt.timedelta(seconds=r[1]) for r in rows], "operation": [r[2] for r in rows],
         "root_failed": [r[3] for r in rows]},
        schema_overrides={"operation": pl.Categorical, "start_time": pl.Datetime("ns", "UTC")},
    ).with_row_index("_row")
    procs = (tr.group_by("host", "job_id", "pid")
             .agg(pl.col("start_time").max().alias("_last"),
                  pl.col("_row").sort_by("start_time", "_row").last().alias("_last_row"))
             .with_columns(pl.lit(1, pl.UInt32).alias("_run")))
    return procs, tr.lazy()


def test_only_cleanup_soon_after_a_failed_call_moves_a_process_end():
    """The abort path (cleanup operations within ABORT_PATH_S of a failed call, then nothing) ends
    the process at the failed call; a normal exit's teardown after a successful call, cleanup
    long after a failure (the process went on, its later work unrecorded), or work after the
    cleanup leave the process's last trace where it was."""
    soon, late = ABORT_PATH_S / 10, ABORT_PATH_S * 300
    procs, tr = _table([
        # 1: dies of reg_mr's error, frees its QP, MR and PD
        (1, 0.0, "create_qp", False), (1, 10.0, "reg_mr", True), (1, 10 + soon, "destroy_qp", False),
        (1, 10 + 2 * soon, "dereg_mr", False), (1, 10 + 3 * soon, "dealloc_pd", False),
        # 2: a normal exit: the last work succeeded
        (2, 0.0, "create_qp", False), (2, 10.0, "reg_mr", False), (2, 10 + soon, "dealloc_pd", False),
        # 3: a routine error, then its teardown ten minutes later
        (3, 0.0, "create_qp", True), (3, late, "destroy_qp", False), (3, late + soon, "dealloc_pd", False),
        # 4: cleanup after the error, then work again
        (4, 0.0, "reg_mr", True), (4, soon, "dereg_mr", False), (4, 2 * soon, "reg_mr", False),
        # 5: only cleanup recorded
        (5, 0.0, "destroy_qp", True), (5, soon, "dealloc_pd", False),
    ])
    before = procs.sort("pid")
    after = _abort_path_ends(procs, tr).sort("pid")
    assert after.columns == before.columns
    moved = after.join(before, on="pid", suffix="_before").filter(pl.col("_last_row") != pl.col("_last_row_before"))
    assert moved["pid"].to_list() == [1], moved
    assert moved.row(0, named=True)["_last_row"] == 1  # pid 1's reg_mr
    assert moved.row(0, named=True)["_last"] == T0 + dt.timedelta(seconds=10)
