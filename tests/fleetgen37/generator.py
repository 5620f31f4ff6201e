"""Slow drift over a long window: a blind fleet generator (see __init__.py for the angle).

Written from reference/rdma_control_path.yaml (the operations' trees, the errno lists and the
errno_conventions), tracer/schema.py (tables, written through its writers in the dataset layout
the ingest produces: <root>/<table>/date=D/host=H/part-*.parquet, a counter_buckets summary beside
every counters file), README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' module docstrings. It imports only tracer.schema of the project.

The fleet
---------
`hosts` (9 by default, at least 8) mlx5 RoCE hosts `fg37-hNN` on 6.8.0-60-generic (the in-tree
mlx5 driver: ib_umem_get directly, no OFED peer memory), NIC ConnectX-6 Lx firmware 26.41.1000,
for `hours` (40) from 2026-12-07T00:00Z: night one (00:00-06:00), day one, night two
(22:00-06:00), the second day's morning. One job slot a host, 4 ranks a job (comm python3, a
process a rank, started 0.2 s apart), the next job 1-3 minutes after one ends. Job types:
  train  (tenant orion, by day, 20-40 min, 2 RC QPs a rank);
  batch  (tenant nightly, every job started 22:00-06:00 UTC, 40-70 min, 6 RC QPs a rank: the
         nightly batch pipelines);
  serve  (tenant lumen, 40 % of the day jobs from `serve_start`, the second day 06:00 UTC, on:
         a new inference job type rolled out then; 20-40 min, 2 QPs a rank; its runtime asks
         create_cq for CQE compression).
A rank's start-up, 30 ms a call: alloc_pd; create_cq; reg_mr of a 256 MiB and of a 2 GiB buffer;
per QP create_qp, RESET->INIT, INIT->RTR, RTR->RTS (modify_qp, arg the transition); then every
3-6 minutes it registers a 512 MiB buffer and deregisters the old one 30 ms later; at its planned
end it deregisters its buffers. The port counter mode is the default (rdma_counter_bind_qp_auto
returns 0, nothing below it: reference meta_rdmatracer_reconciliation). A rank that dies ends its
job: the launcher kills the other ranks 0.5 s later (no call after), and the slot's next job starts.

The tracer (probe set "rdma": every function of TREES is a probe; statics the reference calls
usually inlined -- verbs.c's and mlx5 qp.c's `create_qp`, _create_user_qp, rdma_fill_sgid_attr --
are not; nor are __get_free_page or the slab): 5-minute snapshots (`-i 5m`) at a per-host phase;
counters for every probe of the set in every snapshot (exact: every call, recorded or not); a tree
is emitted when any of its frames returns an error: the first K=3 of a signature (tree shape and
errnos) in a snapshot are records, the rest counted in the third's repeat_count; no ring-buffer
loss; good trees only in capture windows (the first 30 s of every 10 minutes at a per-host phase,
at most 12 of a tree a window), timed per frame; a failure in a window is timed, outside all its
frames carry the 4 ms tick its root returned in, latency null.

Routine (expected_error = True, root_cause = the family; the process goes on each time)
-------------------------------------------------------------------------------------------
  night_cgroup_eagain   every host, with a day/night rhythm and no fault: the jobs run in one rdma
                   cgroup whose hca_object limit is sized for the day's jobs. The nightly batch
                   jobs open 6 QPs a rank and take the cgroup to its limit: 10 % of their
                   create_qp get EAGAIN at ib_rdmacg_try_charge under rdma_alloc_begin_uobject
                   (reference common.uobject_helpers: "-EAGAIN rdma cgroup hca_object limit
                   reached"), up through create_qp and ib_uverbs_create_qp (no uobject yet, no
                   abort); by day 1 %. The provider retries 5 ms later, which passes, and the rank
                   goes on (its three transitions follow). EAGAIN tells the caller what to do
                   next (try again), and it does; the rate rises several-fold every night on every
                   host alike, which is the jobs' rhythm, not a host's fault.
  serve_cq_comp_refused  only from `serve_start` (the second day), on every host that runs a
                   serve job: the inference runtime asks create_cq for CQE compression, which this
                   NIC reports no cap for (the NIC fact is this generator's assumption; the errno
                   and its condition are the reference's: create_cq_user "-EOPNOTSUPP CQE
                   compression or 128B padding requested without HW cap"): EOPNOTSUPP at
                   create_cq_user after its buffer and doorbell are mapped, up through
                   mlx5_ib_create_cq, create_cq, ib_uverbs_create_cq (uobject aborted). EOPNOTSUPP
                   tells the caller what to do next -- do without --, and it does: the runtime
                   creates the CQ again 3 ms later without compression, which passes, and the rank
                   goes on. Once per serve rank. Absent the whole first day: a family that is new
                   is not thereby a fault (no kernel, driver or firmware changed with it).

Root causes (expected_error = False; each kills its rank, and its job with it)
-------------------------------------------------------------------------------
  pinned_leak_enomem    the slow leak, host index 2 (`fg37-h02`): at `leak_start` (06:00 of the
                   first day) the host's NIC telemetry agent is updated to a build that registers
                   a buffer every minute and never deregisters it (its own registrations pass, the
                   agent has CAP_IPC_LOCK; it is not a traced probe caller here). The pinned pages
                   pile up and the host's free memory goes with them: a rank's reg_mr then fails
                   allocating ib_umem_get's page list (reference reg_mr ib_umem_get: "-ENOMEM
                   kzalloc umem; __get_free_page; ... sg_alloc_append_table_from_pages"), before
                   any pin, up through mlx5_ib_reg_user_mr ("<ib_umem_get errno>") and
                   ib_uverbs_reg_mr (uobject aborted). Per reg_mr the failure probability is
                   0.9 * min(1, (t - leak_start) / 26 h) ** 1.5: almost never on the first day's
                   morning, a few % by its evening, most registrations by the second day's morning
                   (the crash loop then: each new job's ranks die at start-up). ENOMEM is no "try
                   again" signal and NCCL has no fallback for its buffers: fatal. The other hosts
                   run the same jobs and register the same buffers fine.
  fw_cmd_timeout        the short sharp fault, host index hosts//2 + 1 (`fg37-h05` of 9): for one
                   hour from `fw_start` (80 % of the window, rounded to the hour: 08:00 of the
                   second day) the NIC's firmware answers 30 % of its commands late: ETIMEDOUT at
                   mlx5_cmd_exec (errno_conventions: "Transport-level failures: -ETIMEDOUT
                   (command timeout)") after 60 s, under mlx5_ib_alloc_pd (ALLOC_PD), under
                   mlx5_qpc_create_qp (CREATE_QP, up through create_user_qp, mlx5_ib_create_qp,
                   ib_create_qp_user, create_qp, ib_uverbs_create_qp) and under
                   mlx5_core_qp_modify (the modify commands, up through __mlx5_ib_modify_qp,
                   mlx5_ib_modify_qp, ib_security_modify_qp, _ib_modify_qp,
                   ib_modify_qp_with_udata, modify_qp, ib_uverbs_modify_qp). Fatal to the rank.
                   One host, one hour, one errno at one origin (mlx5_cmd_exec, driver): one
                   cluster, though three operations show it ("open findings from the same one or
                   two hosts and no other ... a dead firmware command interface fails alloc_pd,
                   create_cq and create_qp alike").

Alerts: none is required. On the leak host an alert naming ENOMEM at a frame its records fail at
(ib_umem_get, mlx5_ib_reg_user_mr, ib_uverbs_reg_mr; or a bad state named by one of them) is
acceptable, and so on the timeout host for ETIMEDOUT at its failing frames. No routine family's
(probe, errno) may alert anywhere: the night's EAGAIN rises on every host at once with the batch
jobs ("a cause more than 3 hosts fail alike within an hour ... is left to the clusters"; and it is
a host_configuration family: "its rising alert compares its count with its lagged rate times the
bucket's calls (bursty jobs are no rise)"), and the second day's EOPNOTSUPP appears on every host
at once.

Truth: one row per record, keyed (host, trace_id). root_cause the family (ROOT_CAUSES or ROUTINE),
null for good records; bifurcation = origin (the deepest failing frame none of whose callees
failed; every origin's parent edge is in the good trees of its operation: ib_umem_get under
mlx5_ib_reg_user_mr, ib_rdmacg_try_charge under rdma_alloc_begin_uobject, create_cq_user under
mlx5_ib_create_cq, mlx5_cmd_exec under mlx5_ib_alloc_pd / mlx5_qpc_create_qp /
mlx5_core_qp_modify); origin_layer its layer. Good records: kind good, no cause, expected_error
False, held_out False. With faults=False (the control) the two causes are absent (the agent is not
updated, the firmware stays healthy); the jobs, the night rhythm and both routine families are the
same. `faults` may also be a list of cause names to keep.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path

from fleet_tables import extend_rows, table_from_columns

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_counter_buckets, write_partition

UTC = dt.UTC
START = dt.datetime(2026, 12, 7, 0, 0, tzinfo=UTC)
KERNEL = "6.8.0-60-generic"
NIC, NIC_FW = "ConnectX-6 Lx", "26.41.1000"
SNAP_S = 300
WINDOW_EVERY, WINDOW_LEN, WINDOW_MAX = 600, 30, 12
K_RECORDS = 3
TICK_NS = 4_000_000
ERRNO_NUM = {"EAGAIN": 11, "ENOMEM": 12, "EOPNOTSUPP": 95, "ETIMEDOUT": 110}

LAYER = {
    "ib_uverbs_alloc_pd": "uverbs", "ib_uverbs_create_cq": "uverbs", "ib_uverbs_create_qp": "uverbs",
    "ib_uverbs_modify_qp": "uverbs", "ib_uverbs_reg_mr": "uverbs", "ib_uverbs_dereg_mr": "uverbs",
    "create_cq": "uverbs", "create_qp": "uverbs", "modify_qp": "uverbs",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "rdma_alloc_abort_uobject": "core",
    "rdma_lookup_get_uobject": "core", "rdma_lookup_put_uobject": "core", "rdma_restrack_add": "core",
    "ib_create_qp_user": "core", "ib_create_qp_security": "core", "ib_qp_usecnt_inc": "core",
    "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core", "rdma_counter_bind_qp_auto": "core",
    "ib_security_modify_qp": "core", "ib_modify_qp_is_ok": "core", "ib_umem_get": "core",
    "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core",
    "__uobj_perform_destroy": "core", "uobj_destroy": "core", "uverbs_free_mr": "core",
    "ib_dereg_mr_user": "core", "ib_umem_release": "core", "ib_rdmacg_uncharge": "core",
    "mlx5_ib_alloc_pd": "driver", "mlx5_cmd_exec": "driver", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "mlx5_ib_db_map_user": "driver", "mlx5_comp_eqn_get": "driver",
    "mlx5_core_create_cq": "driver", "mlx5_ib_create_qp": "driver", "create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "mlx5_ib_modify_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "mlx5_core_qp_modify": "driver", "mlx5_ib_reg_user_mr": "driver", "mlx5r_umr_resource_init": "driver",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "mlx5r_umr_update_mr_pas": "driver",
    "mlx5_ib_dereg_mr": "driver",
}

# family -> (origin probe, errno, origin layer)
ROOT_CAUSES = {
    "pinned_leak_enomem": ("ib_umem_get", "ENOMEM", "core"),
    "fw_cmd_timeout": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
}
ROUTINE = {
    "night_cgroup_eagain": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "serve_cq_comp_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
}
FAMILIES = {**ROOT_CAUSES, **ROUTINE}
LEAK, FW = "pinned_leak_enomem", "fw_cmd_timeout"
EAGAIN_FAMILY, COMP_FAMILY = "night_cgroup_eagain", "serve_cq_comp_refused"


def _alloc_pd(e: str | None) -> list:
    return [(0, "ib_uverbs_alloc_pd", e), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
            (1, "mlx5_ib_alloc_pd", e), (2, "mlx5_cmd_exec", e)] + (
        [(1, "rdma_alloc_abort_uobject", None)] if e else [(1, "rdma_restrack_add", None)])


def _create_cq(e: str | None) -> list:
    head = [(0, "ib_uverbs_create_cq", e), (1, "create_cq", e), (2, "rdma_alloc_begin_uobject", None),
            (3, "ib_rdmacg_try_charge", None), (2, "mlx5_ib_create_cq", e), (3, "create_cq_user", e),
            (4, "ib_umem_get", None), (5, "pin_user_pages_fast", None), (4, "mlx5_ib_db_map_user", None)]
    if e:
        return head + [(2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "mlx5_comp_eqn_get", None), (3, "mlx5_core_create_cq", None), (2, "rdma_restrack_add", None)]


def _create_qp(kind: str) -> list:
    if kind == "eagain":
        return [(0, "ib_uverbs_create_qp", "EAGAIN"), (1, "create_qp", "EAGAIN"),
                (2, "rdma_alloc_begin_uobject", "EAGAIN"), (3, "ib_rdmacg_try_charge", "EAGAIN")]
    e = "ETIMEDOUT" if kind == "timeout" else None
    head = [(0, "ib_uverbs_create_qp", e), (1, "create_qp", e), (2, "rdma_alloc_begin_uobject", None),
            (3, "ib_rdmacg_try_charge", None), (2, "rdma_lookup_get_uobject", None), (2, "ib_create_qp_user", e),
            (3, "mlx5_ib_create_qp", e), (4, "create_user_qp", e), (5, "ib_umem_get", None),
            (6, "pin_user_pages_fast", None), (5, "mlx5_ib_db_map_user", None), (5, "mlx5_qpc_create_qp", e),
            (6, "mlx5_cmd_exec", e)]
    if e:
        return head + [(2, "rdma_lookup_put_uobject", None), (2, "rdma_alloc_abort_uobject", None)]
    return head + [(3, "ib_create_qp_security", None), (3, "rdma_restrack_add", None), (2, "ib_qp_usecnt_inc", None),
                   (2, "rdma_lookup_put_uobject", None)]


def _modify_qp(transition: str, e: str | None) -> list:
    frames = [(0, "ib_uverbs_modify_qp", e), (1, "modify_qp", e), (2, "rdma_lookup_get_uobject", None),
              (2, "ib_modify_qp_with_udata", e), (3, "_ib_modify_qp", e)]
    if transition == "RESET->INIT":
        frames.append((4, "rdma_counter_bind_qp_auto", None))
    frames += [(4, "ib_security_modify_qp", e), (5, "mlx5_ib_modify_qp", e), (6, "ib_modify_qp_is_ok", None),
               (6, "__mlx5_ib_modify_qp", e), (7, "mlx5_core_qp_modify", e), (8, "mlx5_cmd_exec", e),
               (2, "rdma_lookup_put_uobject", None)]
    return frames


def _reg_mr(e: str | None) -> list:
    if e:
        return [(0, "ib_uverbs_reg_mr", e), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
                (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", e),
                (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", e), (1, "rdma_lookup_put_uobject", None),
                (1, "rdma_alloc_abort_uobject", None)]
    return [(0, "ib_uverbs_reg_mr", None), (1, "rdma_alloc_begin_uobject", None), (2, "ib_rdmacg_try_charge", None),
            (1, "rdma_lookup_get_uobject", None), (1, "mlx5_ib_reg_user_mr", None),
            (2, "mlx5r_umr_resource_init", None), (2, "ib_umem_get", None), (3, "pin_user_pages_fast", None),
            (3, "sg_alloc_append_table_from_pages", None), (2, "create_real_mr", None),
            (3, "alloc_cacheable_mr", None), (3, "mlx5r_umr_update_mr_pas", None), (1, "rdma_restrack_add", None),
            (1, "rdma_lookup_put_uobject", None)]


def _dereg_mr() -> list:
    return [(0, "ib_uverbs_dereg_mr", None), (1, "__uobj_perform_destroy", None), (2, "rdma_lookup_get_uobject", None),
            (2, "uobj_destroy", None), (3, "uverbs_free_mr", None), (4, "ib_dereg_mr_user", None),
            (5, "mlx5_ib_dereg_mr", None), (6, "ib_umem_release", None), (3, "ib_rdmacg_uncharge", None),
            (1, "rdma_lookup_put_uobject", None)]


TRANSITIONS = {"RESET->INIT": "init", "INIT->RTR": "rtr", "RTR->RTS": "rts"}
# name -> (operation, arg, frames [(depth, function, errno or None)])
TREES: dict[str, tuple[str, str | None, list]] = {
    "alloc_pd_ok": ("alloc_pd", None, _alloc_pd(None)),
    "alloc_pd_fw_timeout": ("alloc_pd", None, _alloc_pd("ETIMEDOUT")),
    "create_cq_ok": ("create_cq", None, _create_cq(None)),
    "create_cq_comp_refused": ("create_cq", None, _create_cq("EOPNOTSUPP")),
    "create_qp_ok": ("create_qp", None, _create_qp("ok")),
    "create_qp_cgroup_eagain": ("create_qp", None, _create_qp("eagain")),
    "create_qp_fw_timeout": ("create_qp", None, _create_qp("timeout")),
    "reg_mr_ok": ("reg_mr", None, _reg_mr(None)),
    "reg_mr_leak_enomem": ("reg_mr", None, _reg_mr("ENOMEM")),
    "dereg_mr_ok": ("dereg_mr", None, _dereg_mr()),
}
for _t, _s in TRANSITIONS.items():
    TREES[f"modify_qp_{_s}_ok"] = ("modify_qp", _t, _modify_qp(_t, None))
    TREES[f"modify_qp_{_s}_fw_timeout"] = ("modify_qp", _t, _modify_qp(_t, "ETIMEDOUT"))
TREE_FAMILY = {"alloc_pd_fw_timeout": FW, "create_cq_comp_refused": COMP_FAMILY,
               "create_qp_cgroup_eagain": EAGAIN_FAMILY, "create_qp_fw_timeout": FW,
               "reg_mr_leak_enomem": LEAK, **{f"modify_qp_{s}_fw_timeout": FW for s in TRANSITIONS.values()}}
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
FW_FAIL = 0.3
EAGAIN_NIGHT, EAGAIN_DAY = 0.10, 0.01
LEAK_RAMP_S = 26 * 3600


def _is_night(t: dt.datetime) -> bool:
    return t.hour >= 22 or t.hour < 6


class _Host:
    def __init__(self, name: str, index: int, rng: random.Random, plan: dict):
        self.name, self.index, self.rng, self.plan = name, index, rng, plan
        self.boot = rng.randint(10, 99)
        self.boot_offset_s = rng.uniform(2 * 86400, 9 * 86400)  # booted days before the window
        self.snap_phase = rng.uniform(0, SNAP_S)
        self.win_phase = rng.uniform(0, WINDOW_EVERY)
        self.next_pid = rng.randint(20000, 30000)
        self.calls: list = []  # (start_s, dur_s, tree, pid, job)
        self.jobs: list = []

    def pid(self) -> int:
        self.next_pid += self.rng.randint(3, 40)
        return self.next_pid

    # -- outcomes ------------------------------------------------------------------------------
    def fw_bad(self, t: float) -> bool:
        p = self.plan
        return self.index == p["fw_index"] and FW in p["faults"] and p["fw_s"] <= t < p["fw_s"] + 3600

    def leak_p(self, t: float) -> float:
        p = self.plan
        if self.index != p["leak_index"] or LEAK not in p["faults"] or t < p["leak_s"]:
            return 0.0
        return 0.9 * min(1.0, (t - p["leak_s"]) / LEAK_RAMP_S) ** 1.5

    def run_rank(self, job: dict, t0: float, end: float) -> list:
        """The rank's calls until its planned end or its death: [(start, dur, tree, fatal)]."""
        rng, out = self.rng, []
        t = t0

        def call(tree: str, dur: float, fatal: bool = False) -> bool:
            nonlocal t
            out.append((t, dur, tree, fatal))
            t += dur + 0.03
            return fatal

        def fw(ok: str, bad: str) -> bool:
            if self.fw_bad(t) and rng.random() < FW_FAIL:
                return call(bad, 60.0, True)
            return call(ok, rng.uniform(0.0003, 0.002))

        def reg() -> bool:
            if rng.random() < self.leak_p(t):
                return call("reg_mr_leak_enomem", rng.uniform(0.0001, 0.0004), True)
            return call("reg_mr_ok", rng.uniform(0.002, 0.02))

        if fw("alloc_pd_ok", "alloc_pd_fw_timeout"):
            return out
        if job["type"] == "serve":
            call("create_cq_comp_refused", rng.uniform(0.0002, 0.0008))
            t += 0.003 - 0.03
        call("create_cq_ok", rng.uniform(0.0005, 0.002))
        if reg() or reg():
            return out
        p_eagain = EAGAIN_NIGHT if job["type"] == "batch" else EAGAIN_DAY
        for _ in range(job["qps"]):
            if self.fw_bad(t) and rng.random() < FW_FAIL:
                call("create_qp_fw_timeout", 60.0, True)
                return out
            while rng.random() < p_eagain:
                call("create_qp_cgroup_eagain", rng.uniform(0.00005, 0.0002))
                t += 0.005 - 0.03
            call("create_qp_ok", rng.uniform(0.001, 0.004))
            for s in TRANSITIONS.values():
                if fw(f"modify_qp_{s}_ok", f"modify_qp_{s}_fw_timeout"):
                    return out
        while True:
            t += rng.uniform(180, 360)
            if t >= end - 30:
                break
            if reg():
                return out
            call("dereg_mr_ok", rng.uniform(0.001, 0.004))
        t = max(t, end)
        for _ in range(2):
            call("dereg_mr_ok", rng.uniform(0.001, 0.004))
        return out

    def simulate(self, hours: int) -> None:
        rng, plan = self.rng, self.plan
        self.hours = hours
        t = rng.uniform(0, 600)
        horizon = hours * 3600
        n = 0
        while t < horizon - 300:
            wall = START + dt.timedelta(seconds=t)
            if _is_night(wall):
                jtype, tenant, qps, length = "batch", "nightly", 6, rng.uniform(2400, 4200)
            elif t >= plan["serve_s"] and rng.random() < 0.4:
                jtype, tenant, qps, length = "serve", "lumen", 2, rng.uniform(1200, 2400)
            else:
                jtype, tenant, qps, length = "train", "orion", 2, rng.uniform(1200, 2400)
            n += 1
            job = {"id": f"{self.name}-{n:04d}", "type": jtype, "tenant": tenant, "qps": qps,
                   "ppid": self.pid()}
            end = min(t + length, horizon - 5)
            ranks = []
            for r in range(4):
                pid = self.pid()
                ranks.append((pid, self.run_rank(job, t + 0.2 * r, end)))
            deaths = [s + d for _, calls in ranks for s, d, _, fatal in calls if fatal]
            kill = min(deaths) + 0.5 if deaths else None
            job_end = end + 0.1
            for pid, calls in ranks:
                for s, d, tree, _fatal in calls:
                    if kill is not None and s + d > kill:
                        break
                    self.calls.append((s, d, tree, pid, job))
            if kill is not None:
                job_end = kill
            self.jobs.append(job)
            t = job_end + rng.uniform(60, 180)


def _meta(job: dict) -> list:
    return [{"key": "job_type", "value": job["type"]}, {"key": "nic", "value": NIC},
            {"key": "nic_fw", "value": NIC_FW}, {"key": "tenant", "value": job["tenant"]}]


def generate(root, *, hosts: int = 9, hours: int = 40, seed: int = 37, faults=True) -> dict:
    if hosts < 8:
        raise ValueError("fleetgen37 needs 8 hosts or more")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    kept = set(ROOT_CAUSES) if faults is True else set() if faults is False else set(faults)
    plan = {"faults": kept, "leak_index": 2, "fw_index": hosts // 2 + 1,
            "leak_s": 6 * 3600, "fw_s": round(0.8 * hours) * 3600, "serve_s": 30 * 3600}
    names = [f"fg37-h{i:02d}" for i in range(hosts)]
    rng = random.Random(seed)
    counts: Counter = Counter()
    family_hosts: dict[str, set] = defaultdict(set)
    for index, name in enumerate(names):
        host = _Host(name, index, random.Random(rng.getrandbits(64)), plan)
        host.simulate(hours)
        _write_host(root, host, counts, family_hosts)
    iso = lambda s: (START + dt.timedelta(seconds=s)).isoformat()  # noqa: E731
    return {
        "hosts": names, "hours": hours, "start": START.isoformat(), "faults": sorted(kept),
        "roles": {LEAK: [names[2]] if LEAK in kept else [], FW: [names[plan["fw_index"]]] if FW in kept else []},
        "leak_host": names[2], "leak_start": iso(plan["leak_s"]),
        "fw_host": names[plan["fw_index"]], "fw_start": iso(plan["fw_s"]), "fw_end": iso(plan["fw_s"] + 3600),
        "serve_start": iso(plan["serve_s"]), "night_hours": [22, 6],
        "counts": dict(counts), "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
    }


def _write_host(root: Path, host: _Host, counts: Counter, family_hosts: dict) -> None:
    calls = sorted(host.calls, key=lambda c: (c[0], c[3]))
    # counters per snapshot (exact) and the records (K per signature per snapshot; windows)
    per_snap: Counter = Counter()  # (snapshot, tree) -> calls returned in it
    sig_seen: dict[tuple[int, str], list] = defaultdict(list)
    win_seen: Counter = Counter()
    records: list = []  # (call, repeat)
    snaps = set()
    for c in calls:
        s, d, tree, pid, job = c
        ret = s + d
        k = int((ret - host.snap_phase) // SNAP_S)
        snaps.add(k)
        per_snap[(k, tree)] += 1
        if tree in TREE_FAMILY:
            lst = sig_seen[(k, tree)]
            if len(lst) < K_RECORDS:
                rec = [c, None]
                lst.append(rec)
                records.append(rec)
            else:
                lst[-1][1] = (lst[-1][1] or 1) + 1
        else:
            w = (s - host.win_phase) // WINDOW_EVERY
            if (s - host.win_phase) % WINDOW_EVERY < WINDOW_LEN and win_seen[(w, tree)] < WINDOW_MAX:
                win_seen[(w, tree)] += 1
                records.append([c, None])
    # each snapshot's cells: every frame of every call, [invocations, failures, {errno: count}]
    cells: dict[tuple[int, str], list] = {}
    for (k, tree), n in per_snap.items():
        for _, fn, e in TREES[tree][2]:
            cell = cells.get((k, fn))
            if cell is None:
                cell = cells[(k, fn)] = [0, 0, {}]
            cell[0] += n
            if e:
                cell[1] += n
                cell[2][e] = cell[2].get(e, 0) + n
    # every snapshot of the window, whether calls came or not
    first = int((0 - host.snap_phase) // SNAP_S) + 1
    last = int((host.hours * 3600 - host.snap_phase) // SNAP_S) - 1
    by_date: dict[str, dict[str, dict]] = defaultdict(lambda: {"events": {}, "counters": {}, "truth": {}})
    no_calls: tuple = (0, 0, {})
    layers = [LAYER[fn] for fn in PROBES]
    for k in range(min(first, min(snaps)), max(last, max(snaps)) + 1):
        when = START + dt.timedelta(seconds=host.snap_phase + (k + 1) * SNAP_S)
        date = when.date().isoformat()
        inv, fail, errs = zip(*(cells.get((k, fn), no_calls) for fn in PROBES), strict=True)
        extend_rows(by_date[date]["counters"], {
            "probe": PROBES, "layer": layers, "invocations": inv, "failures": fail,
            "errno_counts": [[{"errno": e, "count": n} for e, n in sorted(c.items())] for c in errs],
        }, {"host": host.name, "snapshot_time": when, "interval_s": float(SNAP_S), "kernel_release": KERNEL,
            "vendor": "mlx5", "probe_set": "rdma", "live": True, "lost_records": 0})
    boot_ns = lambda s: int((s + host.boot_offset_s) * 1e9)  # noqa: E731
    # each tree's frames column by column: (seq, depth, probe, layer, ret, errno)
    shapes = {tree: (range(len(frames)), *zip(*((depth, fn, LAYER[fn], -ERRNO_NUM[e] if e else 0, e)
                                                  for depth, fn, e in frames), strict=True))
              for tree, (_, _, frames) in TREES.items()}
    metas: dict[str, list] = {}
    for serial, rec in enumerate(sorted(records, key=lambda r: (r[0][0], r[0][3])), start=1):
        (s, d, tree, pid, job), repeat = rec
        op, arg, frames = TREES[tree]
        family = TREE_FAMILY.get(tree)
        failing = family is not None
        k = int((s + d - host.snap_phase) // SNAP_S)
        snap_when = START + dt.timedelta(seconds=host.snap_phase + (k + 1) * SNAP_S)
        date = snap_when.date().isoformat()
        tid = f"{host.name}:{host.boot}:{pid}:{serial}"
        in_window = (s - host.win_phase) % WINDOW_EVERY < WINDOW_LEN
        root_e = frames[0][2]
        exit_status = -ERRNO_NUM[root_e] if root_e else 0
        seqs, depths, fns, layer, rets, errnos = shapes[tree]
        if in_window:
            start = START + dt.timedelta(seconds=s)
            end = START + dt.timedelta(seconds=s + d)
            dur_ns, ts0 = int(d * 1e9), boot_ns(s)
            ts = [ts0 + seq * 1500 + depth * 200 for seq, depth in zip(seqs, depths, strict=True)]
            lat = [max(800, int(dur_ns * (0.92 ** seq)) - seq * 1500) if depth else dur_ns
                   for seq, depth in zip(seqs, depths, strict=True)]
        else:
            tick = (boot_ns(s + d) // TICK_NS) * TICK_NS
            end = start = START + dt.timedelta(microseconds=(tick - boot_ns(0)) // 1000)
            ts, lat = [tick] * len(frames), [None] * len(frames)
        if job["id"] not in metas:
            metas[job["id"]] = _meta(job)
        extend_rows(by_date[date]["events"], {
            "seq": seqs, "ts_ns": ts, "probe": fns, "layer": layer, "depth": depths, "ret": rets,
            "errno": errnos, "latency_ns": lat,
        }, {"trace_id": tid, "pid": pid, "tid": pid, "ppid": job["ppid"], "comm": "python3", "arg": arg,
            "kind": "failure" if failing else "good", "command": op, "exit_status": exit_status,
            "start_time": start, "end_time": end, "host": host.name, "kernel_release": KERNEL,
            "lost_events": 0, "job_id": job["id"], "metadata": metas[job["id"]], "repeat_count": repeat})
        origin = FAMILIES[family] if failing else (None, None, None)
        extend_rows(by_date[date]["truth"], {"trace_id": [tid]}, {
            "host": host.name, "kind": "failure" if failing else "good", "root_cause": family,
            "bifurcation_probe": origin[0], "bifurcation_errno": origin[1], "origin_layer": origin[2],
            "expected_error": family in ROUTINE if failing else False, "held_out": False})
        if failing:
            counts[family] += 1
            family_hosts[family].add(host.name)
    for date, tables in by_date.items():
        name = f"part-{date.replace('-', '')}-{host.name}.parquet"
        if tables["events"]:
            write_partition(table_from_columns(tables["events"], EVENTS), root, "events", date, host.name,
                            name, durable=False)
        if tables["truth"]:
            write_partition(table_from_columns(tables["truth"], TRUTH), root, "truth", date, host.name,
                            name, durable=False)
        if tables["counters"]:
            data = table_from_columns(tables["counters"], COUNTERS)
            path = write_partition(data, root, "counters", date, host.name, name, durable=False)
            write_counter_buckets(path, data.drop_columns(["host"]), durable=False)
