"""fleetgen18: an eighteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at what the seventeen
before it leave out: a job-scale cascade (one bad host, 255 ranks killed with no error of their
own, the same job id across requeues, the culprit's clock minutes behind), a fleet-wide
maintenance window that lifts a routine error's share on every host at once and then returns, a
vendor-wide driver regression whose errno is routine one operation over on the same hosts, and
tracer daemons restarted mid-window.

The fleet: racks of 8 hosts (`fg18-r<RR>-h<H>`), all on 6.8.0-60-generic (upstream, no peer memory).
Rack mod 4: 0 and 1 mlx5 (ConnectX-7), 2 bnxt_re, 3 irdma (RoCE mode); so 48 hosts are 32 mlx5, 8
bnxt_re and 8 irdma. The tracer (`tracer run rdma -i 60s`, fexit on every function of the chains
below that the reference marks traceable: handlers, core, driver) writes 60 s snapshots at a
per-host phase, counts every call per probe, emits a tree when any of its probes fails (the first 3
of a signature per snapshot as records, the rest in the third's repeat_count; untimed outside
capture windows: every frame at the 4 ms tick its root returned in, latency null) and every good
tree whose root entered a capture window (the first 30 s of every 5 minutes at a per-host phase),
timed. The device is in each trace's metadata (`device`), the job's restart count too.

Work:
  - `llm-256`: one training job of 256 ranks on the first 32 mlx5 hosts (8 ranks a host, comm
    python3), already training when the window opens. A rank's start-up reads the 8 GID slots of
    its port (slots 6 and 7 are empty on every host: ENODATA), allocates a PD, registers two
    buffers, creates a CQ and 4 RC QPs (its ring and tree neighbours) and moves each
    RESET->INIT->RTR->RTS; while it trains it re-registers a bucket every 4-6 minutes (reg_mr, then
    dereg_mr of the old one) and every 20 minutes the job builds an evaluation communicator (2 more
    QPs a rank, moved to RTS). A rank that fails fatally makes the launcher kill every rank of the
    job 0.3-0.8 s later (SIGKILL: no teardown call, no kernel error on the victims); Slurm requeues
    the job 2-4 minutes later on the same hosts with the SAME job id (SLURM_RESTART_COUNT in the
    metadata: `restart`);
  - every other host runs single-host jobs of 4 ranks, 15-30 minutes, back to back (1-3 minutes
    apart), which tear down at the end (destroy_qp, dereg_mr, dealloc_pd); a job a rank's fatal
    failure ended is requeued the same way (same id, up to 3 restarts, then a new id);
  - an `rdma-healthd` agent on every host reads the port's 8 GID slots once a minute and goes on
    whatever it finds.

Fleet phenomena (no fault, nothing to alert on):
  - maintenance: from 50 % of the window a fleet-wide IPv6 renumbering push rolls over every host
    within 10 minutes; on each host the old global addresses are removed and the new prefix's
    arrive 8-15 minutes later: GID slots 4 and 5 are empty meanwhile, so the routine ENODATA share
    of query_gid goes from 2 of 8 slots to 4 of 8 on every host at once, then returns. Jobs use
    the IPv4 RoCEv2 slot (3) and go on;
  - two mlx5 hosts of the big job restart their tracer daemon mid-window (a package upgrade): 2-5
    minutes with no snapshot (the calls then are neither counted nor recorded), a first snapshot
    with a short interval at the new phase, record numbers from a new random start;
  - clocks: the culprit host's wall clock is 170 s behind the fleet's (its snapshot and trace
    times alike), another big-job host's 290 s ahead; the others within 2 s.

Routine families (truth expected_error, no root cause; the process goes on):
  gid_empty_slot        query_gid ENODATA at rdma_get_gid_attr ("-ENODATA empty GID slot"), 2 of
                        8 slots on every host (4 of 8 in the renumbering window). In the big job it
                        is also the last record of most of the 255 ranks killed at every requeue:
                        they died of the culprit's failure, not of this (decision: routine; the
                        agent and every surviving rank go on after it).
  counter_auto_enomem   modify_qp RESET->INIT on bnxt_re and irdma hosts (the fleet's monitoring
                        sets `rdma statistic qp set ... auto`): rdma_counter_bind_qp_auto ENOMEM
                        (reference: alloc_and_bind returns NULL for drivers without counter ops;
                        "-ENOMEM ... is ignored"), the root succeeds (exit_status 0).

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  culprit_create_qp_eio     one mlx5 host of the big job, from 30 % of the window until it is
                            drained at 55 % (`drain_at`: the on-call drains it about 25 minutes
                            after the onset, once the job's owner has complained): its NIC firmware answers CREATE_QP with BAD_SYS_STATE
                            (errno_conventions: -> -EIO at mlx5_cmd_exec under mlx5_qpc_create_qp;
                            the driver unwinds with its static destroy_qp, the core aborts the
                            uobject). Other firmware commands still pass. Every new QP there fails,
                            so the job dies at its next evaluation communicator and then at every
                            requeue (a crash loop every ~3 minutes, 1-8 failures a requeue). Must
                            alert (EIO, or a persistent bad state on a create_qp frame): the one
                            host an SRE must drain. No other big-job host may alert: their ranks
                            are consequences with no error of their own.
  irdma_update_qp_ctx_enomem  every irdma host takes an out-of-tree irdma driver update (1.14 ->
                            1.15, the version in the metadata only; the module reloaded with the
                            host drained for 2 minutes) between 35 % and 45 % of the window; the
                            new build allocates QP contexts from an undersized DMA pool: one create_qp
                            in twenty fails ENOMEM at irdma_create_qp (dma_alloc_coherent of the
                            context, reference: "-ENOMEM dma_alloc_coherent q2/ctx"; the driver
                            unwinds with irdma_free_qp_rsrc). Fatal to the rank. The same errno is
                            routine on the same hosts at rdma_counter_bind_qp_auto: another frame,
                            another operation. One cluster; no host alert required (every host of
                            one platform alike, a rollback is the page), one naming ENOMEM on an
                            irdma host is tolerated.

Decided before the first audit, for what an SRE would want: one page for the culprit, none for its
255 victims or the maintenance window, the irdma regression as a cluster.

Changed after the first audits (the truth did not change): the culprit was first drained at 70 % of
the window, a crash loop of three or four 15-minute buckets that main alerted on
(rising_errno_rate EIO, or a persistent bad state); at 55 % the loop spans two buckets (the job
dies at its next evaluation communicator after the onset, up to 20 minutes later) and then no
create_qp is ever called there again while the host reports on: main raised no alert, the one the
truth requires. `drain_at=0.70` gives the first shape.

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters, counter_buckets and
truth in the dataset layout and `<out_dir>/fleetgen18.json`: `required_alert_hosts` (host -> errnos
an alert must name), `alert_hosts` (host -> errnos an alert may name), `culprit`, `big_job_hosts`,
`irdma_hosts`, `restart_hosts` (host -> [down, up] ISO times), `skewed` (host -> seconds),
`maintenance` (host -> [from, to]), `routine` and `causes` (label -> traces).
"""

from __future__ import annotations

import bisect
import json
import os
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

U, C, D = "uverbs", "core", "driver"
KERNEL = "6.8.0-60-generic"
ERRNO = {"EIO": 5, "ENOMEM": 12, "ENODATA": 61}

ROOT_CAUSES = {
    "culprit_create_qp_eio": ("mlx5_cmd_exec", "EIO", "create_qp"),
    "irdma_update_qp_ctx_enomem": ("irdma_create_qp", "ENOMEM", "create_qp"),
}
ROUTINE = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "counter_auto_enomem": ("rdma_counter_bind_qp_auto", "ENOMEM", "modify_qp"),
}

SNAP_S = 60.0
WINDOW_EVERY, WINDOW_LEN = 300.0, 30.0
RECORDS_PER_SIG = 3
GID_SLOTS = 8


def _driver(vendor: str) -> dict[str, list[tuple[int, str, str]]]:
    """The vendor's frames under each core frame (relative depth 0 = the ops call)."""
    if vendor == "mlx5":
        return {
            "alloc_pd": [(0, "mlx5_ib_alloc_pd", D), (1, "mlx5_cmd_exec", D)],
            "reg_mr": [(0, "mlx5_ib_reg_user_mr", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C),
                       (2, "sg_alloc_append_table_from_pages", C), (1, "create_real_mr", D),
                       (2, "alloc_cacheable_mr", D), (2, "mlx5r_umr_update_mr_pas", D)],
            "create_cq": [(0, "mlx5_ib_create_cq", D), (1, "create_cq_user", D), (2, "ib_umem_get", C),
                          (3, "pin_user_pages_fast", C), (2, "mlx5_ib_db_map_user", D), (1, "mlx5_comp_eqn_get", D),
                          (1, "mlx5_core_create_cq", D)],
            "create_qp": [(0, "mlx5_ib_create_qp", D), (1, "create_qp", D), (2, "create_user_qp", D),
                          (3, "_create_user_qp", D), (4, "ib_umem_get", C), (5, "pin_user_pages_fast", C),
                          (4, "mlx5_ib_db_map_user", D), (3, "mlx5_qpc_create_qp", D), (4, "mlx5_cmd_exec", D)],
            "modify": [(0, "mlx5_ib_modify_qp", D), (1, "ib_modify_qp_is_ok", C), (1, "__mlx5_ib_modify_qp", D),
                       (2, "mlx5_core_qp_modify", D), (3, "mlx5_cmd_exec", D)],
            "modify_rtr": [(0, "mlx5_ib_modify_qp", D), (1, "ib_modify_qp_is_ok", C), (1, "__mlx5_ib_modify_qp", D),
                           (2, "mlx5_set_path", D), (2, "mlx5_core_qp_modify", D), (3, "mlx5_cmd_exec", D)],
            "dereg_mr": [(0, "mlx5_ib_dereg_mr", D), (1, "mlx5r_umr_revoke_mr", D), (1, "ib_umem_release", C)],
            "destroy_qp": [(0, "mlx5_ib_destroy_qp", D), (1, "mlx5_core_destroy_qp", D), (2, "mlx5_cmd_exec", D)],
            "dealloc_pd": [(0, "mlx5_ib_dealloc_pd", D), (1, "mlx5_cmd_dealloc_pd", D), (2, "mlx5_cmd_exec", D)],
        }
    if vendor == "bnxt_re":
        return {
            "alloc_pd": [(0, "bnxt_re_alloc_pd", D)],
            "reg_mr": [(0, "bnxt_re_reg_user_mr", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C)],
            "create_cq": [(0, "bnxt_re_create_cq", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C)],
            "create_qp": [(0, "bnxt_re_create_qp", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C)],
            "modify": [(0, "bnxt_re_modify_qp", D)],
            "modify_rtr": [(0, "bnxt_re_modify_qp", D)],
            "dereg_mr": [(0, "bnxt_re_dereg_mr", D), (1, "ib_umem_release", C)],
            "destroy_qp": [(0, "bnxt_re_destroy_qp", D)],
            "dealloc_pd": [(0, "bnxt_re_dealloc_pd", D)],
        }
    return {
        "alloc_pd": [(0, "irdma_alloc_pd", D), (1, "irdma_alloc_rsrc", D)],
        "reg_mr": [(0, "irdma_reg_user_mr", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C)],
        "create_cq": [(0, "irdma_create_cq", D), (1, "ib_umem_get", C), (2, "pin_user_pages_fast", C)],
        "create_qp": [(0, "irdma_create_qp", D), (1, "irdma_alloc_rsrc", D), (1, "irdma_sc_qp_init", D),
                      (1, "irdma_cqp_create_qp_cmd", D), (1, "irdma_qp_add_qos", D)],
        "modify": [(0, "irdma_modify_qp_roce", D), (1, "ib_modify_qp_is_ok", C)],
        "modify_rtr": [(0, "irdma_modify_qp_roce", D), (1, "ib_modify_qp_is_ok", C)],
        "dereg_mr": [(0, "irdma_dereg_mr", D), (1, "ib_umem_release", C)],
        "destroy_qp": [(0, "irdma_destroy_qp", D)],
        "dealloc_pd": [(0, "irdma_dealloc_pd", D), (1, "irdma_free_rsrc", D)],
    }


def _at(depth: int, frames: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    return [(depth + d, fn, layer) for d, fn, layer in frames]


def _trees(vendor: str) -> dict[str, list[tuple[int, str, str]]]:
    """Every operation's good call tree on a host of `vendor` (entry order, depth from the root)."""
    v = _driver(vendor)
    modify_head = [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C)]
    modify_tail = [(2, "rdma_lookup_put_uobject", C)]
    return {
        "query_gid": [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", U), (1, "rdma_get_gid_attr", C),
                      (1, "rdma_read_gid_attr_ndev_rcu", C), (1, "rdma_put_gid_attr", C)],
        "alloc_pd": [(0, "ib_uverbs_alloc_pd", U), (1, "rdma_alloc_begin_uobject", C), (2, "ib_rdmacg_try_charge", C),
                     *_at(1, v["alloc_pd"]), (1, "rdma_restrack_add", C)],
        "reg_mr": [(0, "ib_uverbs_reg_mr", U), (1, "rdma_alloc_begin_uobject", C), (2, "ib_rdmacg_try_charge", C),
                   (1, "rdma_lookup_get_uobject", C), *_at(1, v["reg_mr"]), (1, "rdma_restrack_add", C),
                   (1, "rdma_lookup_put_uobject", C)],
        "create_cq": [(0, "ib_uverbs_create_cq", U), (1, "create_cq", U), (2, "rdma_alloc_begin_uobject", C),
                      (3, "ib_rdmacg_try_charge", C), *_at(2, v["create_cq"]), (2, "rdma_restrack_add", C)],
        "create_qp": [(0, "ib_uverbs_create_qp", U), (1, "create_qp", U), (2, "rdma_alloc_begin_uobject", C),
                      (3, "ib_rdmacg_try_charge", C), (2, "rdma_lookup_get_uobject", C), (2, "ib_create_qp_user", C),
                      (3, "create_qp", C), *_at(4, v["create_qp"]), (3, "ib_create_qp_security", C),
                      (3, "rdma_restrack_add", C), (2, "ib_qp_usecnt_inc", C), (2, "rdma_lookup_put_uobject", C)],
        "modify_qp:RESET->INIT": [*modify_head, (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C),
                                  (4, "rdma_counter_bind_qp_auto", C), (4, "ib_security_modify_qp", C),
                                  *_at(5, v["modify"]), *modify_tail],
        "modify_qp:INIT->RTR": [*modify_head, (2, "copy_ah_attr_from_uverbs", U), (2, "ib_modify_qp_with_udata", C),
                                (3, "_ib_modify_qp", C), (4, "rdma_fill_sgid_attr", C), (5, "rdma_get_gid_attr", C),
                                (4, "ib_resolve_eth_dmac", C), (5, "rdma_check_gid_user_access", C),
                                (5, "ib_resolve_unicast_gid_dmac", C), (6, "rdma_addr_find_l2_eth_by_grh", C),
                                (4, "rdma_lag_get_ah_roce_slave", C), (5, "rdma_read_gid_attr_ndev_rcu", C),
                                (4, "ib_security_modify_qp", C), *_at(5, v["modify_rtr"]),
                                (4, "rdma_lag_put_ah_roce_slave", C), *modify_tail],
        "modify_qp:RTR->RTS": [*modify_head, (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C),
                               (4, "ib_security_modify_qp", C), *_at(5, v["modify"]), *modify_tail],
        "dereg_mr": [(0, "ib_uverbs_dereg_mr", U), (1, "__uobj_perform_destroy", C), (2, "__uobj_get_destroy", C),
                     (3, "rdma_lookup_get_uobject", C), (3, "uobj_destroy", C), (4, "ib_dereg_mr_user", C),
                     *_at(5, v["dereg_mr"]), (4, "ib_rdmacg_uncharge", C), (2, "rdma_lookup_put_uobject", C)],
        "destroy_qp": [(0, "ib_uverbs_destroy_qp", U), (1, "__uobj_get_destroy", C), (2, "rdma_lookup_get_uobject", C),
                       (2, "uobj_destroy", C), (3, "ib_destroy_qp_user", C), *_at(4, v["destroy_qp"]),
                       (4, "ib_qp_usecnt_dec", C), (4, "rdma_restrack_del", C), (1, "rdma_lookup_put_uobject", C)],
        "dealloc_pd": [(0, "ib_uverbs_dealloc_pd", U), (1, "__uobj_perform_destroy", C), (2, "__uobj_get_destroy", C),
                       (3, "rdma_lookup_get_uobject", C), (3, "uobj_destroy", C), (4, "uverbs_free_pd", C),
                       (5, "ib_dealloc_pd_user", C), *_at(6, v["dealloc_pd"]), (4, "ib_rdmacg_uncharge", C),
                       (2, "rdma_lookup_put_uobject", C)],
    }


VENDORS = ("mlx5", "bnxt_re", "irdma")
TREES = {f"{vendor}/{op}": tree for vendor in VENDORS for op, tree in _trees(vendor).items()}

# A failure: (label, origin fn, origin depth, errno, absorbed, children of the origin kept before it
# fails, frames after it: (depth, fn, layer) run on the way out -- the callers' unwind)
FAILURES = {
    "gid_empty_slot": ("gid_empty_slot", "rdma_get_gid_attr", 1, "ENODATA", False, 0, []),
    "counter_auto_enomem": ("counter_auto_enomem", "rdma_counter_bind_qp_auto", 4, "ENOMEM", True, 0, []),
    # BAD_SYS_STATE -> -EIO; the driver's static destroy_qp unwinds (err_create), the core aborts the uobject
    "culprit_create_qp_eio": ("culprit_create_qp_eio", "mlx5_cmd_exec", 8, "EIO", False, 0,
                              [(7, "destroy_qp", D), (2, "rdma_alloc_abort_uobject", C)]),
    # the context's dma_alloc_coherent fails after the QP id was taken; irdma_free_qp_rsrc unwinds
    "irdma_update_qp_ctx_enomem": ("irdma_update_qp_ctx_enomem", "irdma_create_qp", 4, "ENOMEM", False, 1,
                                   [(5, "irdma_free_qp_rsrc", D), (2, "rdma_alloc_abort_uobject", C)]),
}


def _failed_frames(tree, failure):
    """(depth, fn, layer, errno) of the frames a failing call runs, in entry order."""
    _, origin_fn, origin_depth, errno, absorbed, keep, after = failure
    i = next(k for k, (d, fn, _) in enumerate(tree) if fn == origin_fn and d == origin_depth)
    if absorbed:
        return [(d, fn, layer, errno if k == i else None) for k, (d, fn, layer) in enumerate(tree)]
    ancestors, depth = set(), origin_depth
    for k in range(i - 1, -1, -1):
        if tree[k][0] < depth:
            ancestors.add(k)
            depth = tree[k][0]
    out = [(d, fn, layer, errno if k in ancestors else None) for k, (d, fn, layer) in enumerate(tree[:i])]
    out.append((origin_depth, origin_fn, tree[i][2], errno))
    out += [(d, fn, layer, None) for d, fn, layer in tree[i + 1:i + 1 + keep]]
    out += [(d, fn, layer, None) for d, fn, layer in after]
    return out


class _Host:
    def __init__(self, name: str, vendor: str, rng: np.random.Generator, end_s: float):
        self.name, self.vendor, self.end_s = name, vendor, end_s
        self.calls: list[tuple] = []  # (t, op, failure key or None, proc)
        self.skew = float(rng.uniform(-2, 2))
        self.snap_phase = float(rng.uniform(0, SNAP_S))
        self.window_phase = float(rng.uniform(0, WINDOW_EVERY))
        self.boot = f"{rng.integers(1 << 32):08x}"
        self.uptime = float(rng.uniform(3, 40) * 86400)
        self.restart: tuple[float, float] | None = None
        self.renumber: tuple[float, float] = (end_s * 2, end_s * 2)
        self.next_pid = int(rng.integers(20_000, 60_000))
        self.irdma_update = end_s * 2

    def pid(self) -> int:
        self.next_pid += int(1 + (self.next_pid % 7))
        return self.next_pid

    def empty_slots(self, t: float) -> set[int]:
        return {4, 5, 6, 7} if self.renumber[0] <= t < self.renumber[1] else {6, 7}


def _gid_scan(host: _Host, t: float, proc, rng) -> float:
    empty = host.empty_slots(t)
    for slot in range(GID_SLOTS):
        host.calls.append((t, "query_gid", "gid_empty_slot" if slot in empty else None, proc))
        t += float(rng.uniform(0.0002, 0.001))
    return t


def _qp_up(host: _Host, t: float, proc, rng, create_fails) -> tuple[float, bool]:
    """create_qp and RESET->INIT->RTR->RTS; (time after, died)."""
    fail = create_fails(t)
    host.calls.append((t, "create_qp", fail, proc))
    if fail:
        return t, True
    t += float(rng.uniform(0.002, 0.01))
    auto = "counter_auto_enomem" if host.vendor != "mlx5" else None
    for op in ("modify_qp:RESET->INIT", "modify_qp:INIT->RTR", "modify_qp:RTR->RTS"):
        host.calls.append((t, op, auto if op.endswith("RESET->INIT") else None, proc))
        t += float(rng.uniform(0.001, 0.02))
    return t, False


def _rank_start(host: _Host, t: float, proc, rng, create_fails, qps: int = 4) -> tuple[float, bool]:
    t = _gid_scan(host, t, proc, rng)
    host.calls.append((t, "alloc_pd", None, proc))
    t += float(rng.uniform(0.001, 0.005))
    for _ in range(2):
        host.calls.append((t, "reg_mr", None, proc))
        t += float(rng.uniform(0.02, 0.08))
    host.calls.append((t, "create_cq", None, proc))
    t += float(rng.uniform(0.002, 0.01))
    for _ in range(qps):
        t, died = _qp_up(host, t, proc, rng, create_fails)
        if died:
            return t, True
    return t, False


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def generate(out_dir: str | os.PathLike, hosts: int = 48, hours: float = 2.0, seed: int = 18,
             drain_at: float = 0.55) -> dict:
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    end_s = hours * 3600.0
    start = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
    fleet: list[_Host] = []
    for i in range(hosts):
        rack, h = divmod(i, 8)
        vendor = ("mlx5", "mlx5", "bnxt_re", "irdma")[rack % 4]
        fleet.append(_Host(f"fg18-r{rack:02d}-h{h}", vendor, rng, end_s))
    mlx5 = [h for h in fleet if h.vendor == "mlx5"]
    big = mlx5[:32]
    if len(big) < 8:
        raise ValueError(f"fleetgen18 needs at least 8 mlx5 hosts (4 racks: 2 of 4 are mlx5), found {len(big)}")
    culprit = big[len(big) // 2 + 3]
    culprit.skew = -170.0
    ahead = big[5]
    ahead.skew = 290.0
    restarted = [big[2], big[-3]]
    for h in restarted:
        down = float(rng.uniform(0.40, 0.60) * end_s)
        h.restart = (down, down + float(rng.uniform(120, 300)))
    push = 0.50 * end_s
    for h in fleet:
        t0 = push + float(rng.uniform(0, 600))
        h.renumber = (t0, t0 + float(rng.uniform(480, 900)))
    irdma = [h for h in fleet if h.vendor == "irdma"]
    for h in irdma:
        h.irdma_update = float(rng.uniform(0.35, 0.45) * end_s)
    onset, drain = 0.30 * end_s, drain_at * end_s

    # --- the agent
    for h in fleet:
        proc = (h.pid(), "rdma-healthd", None, ())
        t = float(rng.uniform(0, 60))
        while t < end_s:
            _gid_scan(h, t, proc, rng)
            t += 60.0 + float(rng.uniform(-0.5, 0.5))

    # --- the big job: already training at the window's start
    job_id = "llm-256-7781"
    restart_count = 0
    t_attempt = -float(rng.uniform(600, 3000))
    while t_attempt < end_s:
        members = [h for h in big if not (h is culprit and t_attempt >= drain)]
        meta = (("restart", str(restart_count)), ("job", "llm-256"))
        ranks = []
        for h in members:
            for r in range(8):
                ranks.append((h, (h.pid(), "python3", job_id, (*meta, ("device", f"mlx5_{r}")))))

        # set-up: every rank; a culprit rank's create_qp fails once the firmware is bad
        deaths: list[float] = []
        per_rank_end: dict[int, float] = {}
        for k, (h, proc) in enumerate(ranks):
            def fails(t, h=h):
                return "culprit_create_qp_eio" if h is culprit and onset <= t < drain else None
            t, died = _rank_start(h, t_attempt + float(rng.uniform(0.2, 3.0)), proc, rng, fails)
            if died:
                deaths.append(t)
            per_rank_end[k] = t
        kill = min(deaths) + float(rng.uniform(0.3, 0.8)) if deaths else None
        if kill is None:
            # training: re-registrations and an evaluation communicator every 20 minutes
            comm_times = [t_attempt + 1200.0 * n + float(rng.uniform(0, 2)) for n in range(1, 1000)
                          if t_attempt + 1200.0 * n < end_s]
            for ct in comm_times:
                dead = []
                for h, proc in ranks:
                    def fails(t, h=h):
                        return "culprit_create_qp_eio" if h is culprit and onset <= t < drain else None
                    t = ct + float(rng.uniform(0, 1.5))
                    for _ in range(2):
                        t, died = _qp_up(h, t, proc, rng, fails)
                        if died:
                            dead.append(t)
                            break
                if dead:
                    kill = min(dead) + float(rng.uniform(0.3, 0.8))
                    break
            stop = kill if kill is not None else end_s
            for h, proc in ranks:
                t = t_attempt + float(rng.uniform(240, 360))
                while t < stop:
                    h.calls.append((t, "reg_mr", None, proc))
                    h.calls.append((t + float(rng.uniform(0.03, 0.09)), "dereg_mr", None, proc))
                    t += float(rng.uniform(240, 360))
        if kill is None:
            break
        # the launcher kills every rank: nothing of theirs after `kill`
        pids = {proc[0] for _, proc in ranks}
        for h in members:
            h.calls = [c for c in h.calls if not (c[3][0] in pids and c[0] > kill)]
        restart_count += 1
        t_attempt = kill + float(rng.uniform(120, 240))

    # --- single-host jobs on every other host
    for h in fleet:
        if h in big:
            continue
        t = -float(rng.uniform(0, 1500))
        n_job, restarts = 0, 0
        job = f"j{h.name[-6:]}-{n_job}"
        while t < end_s:
            length = float(rng.uniform(900, 1800))
            stop = min(t + length, end_s)
            if h.vendor == "irdma" and t < h.irdma_update < stop:
                stop = h.irdma_update  # drained for the module reload
            driver = "1.15.11" if t >= h.irdma_update else "1.14.33"
            meta = (("restart", str(restarts)), ("job", "finetune"))
            if h.vendor == "irdma":
                meta = (*meta, ("irdma_driver", driver))
            ranks = [(h.pid(), "python3", job, (*meta, ("device", f"{h.vendor}_{r}"))) for r in range(4)]

            def fails(tc, h=h):
                if h.vendor == "irdma" and tc >= h.irdma_update + 120 and rng.random() < 0.05:
                    return "irdma_update_qp_ctx_enomem"
                return None

            deaths = []
            for proc in ranks:
                tr, died = _rank_start(h, t + float(rng.uniform(0.2, 2.0)), proc, rng, fails)
                if died:
                    deaths.append(tr)
            if deaths:
                kill = min(deaths) + float(rng.uniform(0.3, 0.8))
                pids = {p[0] for p in ranks}
                h.calls = [c for c in h.calls if not (c[3][0] in pids and c[0] > kill)]
                restarts += 1
                if restarts > 3:
                    n_job, restarts = n_job + 1, 0
                    job = f"j{h.name[-6:]}-{n_job}"
                t = kill + float(rng.uniform(60, 180))
                continue
            for proc in ranks:
                tr = t + float(rng.uniform(240, 360))
                while tr < stop - 5:
                    h.calls.append((tr, "reg_mr", None, proc))
                    h.calls.append((tr + float(rng.uniform(0.03, 0.09)), "dereg_mr", None, proc))
                    tr += float(rng.uniform(240, 360))
                if stop < end_s:
                    td = stop + float(rng.uniform(0, 1))
                    for op in ("destroy_qp",) * 4 + ("dereg_mr",) * 2 + ("dealloc_pd",):
                        h.calls.append((td, op, None, proc))
                        td += float(rng.uniform(0.001, 0.01))
            t = stop + float(rng.uniform(60, 180))
            if h.vendor == "irdma" and stop == h.irdma_update:
                t = h.irdma_update + 120 + float(rng.uniform(0, 60))
            n_job, restarts = n_job + 1, 0
            job = f"j{h.name[-6:]}-{n_job}"

    summary = _emit(out, fleet, start, end_s, rng)
    summary.update({
        "culprit": culprit.name,
        "big_job_hosts": [h.name for h in big],
        "irdma_hosts": [h.name for h in irdma],
        "bnxt_hosts": [h.name for h in fleet if h.vendor == "bnxt_re"],
        # the hosts' spans in each host's own wall clock (what its snapshot and trace times say)
        "restart_hosts": {h.name: [_iso(start + timedelta(seconds=a + h.skew)) for a in h.restart] for h in restarted},
        "skewed": {culprit.name: culprit.skew, ahead.name: ahead.skew},
        "maintenance": {h.name: [_iso(start + timedelta(seconds=a + h.skew)) for a in h.renumber] for h in fleet},
        "irdma_updates": {h.name: _iso(start + timedelta(seconds=h.irdma_update + h.skew)) for h in irdma},
        "onset": _iso(start + timedelta(seconds=onset)),
        "drain": _iso(start + timedelta(seconds=drain)),
        "big_job_restarts": restart_count,
        "required_alert_hosts": {culprit.name: ["EIO"]},
        "alert_hosts": {culprit.name: ["EIO"], **{h.name: ["ENOMEM"] for h in irdma}},
    })
    (out / "fleetgen18.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _snapshots(h: _Host) -> list[float]:
    """The host's snapshot times (true seconds), a restart's gap and new phase included."""
    times = []
    t = h.snap_phase
    stop = h.restart[0] if h.restart else h.end_s + SNAP_S
    while t <= h.end_s and t < stop:
        times.append(t)
        t += SNAP_S
    if h.restart:
        down, up = h.restart
        times.append(down)  # the stopping daemon's last, short snapshot
        t = up + SNAP_S
        while t <= h.end_s:
            times.append(t)
            t += SNAP_S
    return times


def _emit(out: Path, fleet: list[_Host], start: datetime, end_s: float, rng) -> dict:
    routine: Counter = Counter()
    causes: Counter = Counter()
    for h in fleet:
        trees = {op: TREES[f"{h.vendor}/{op}"] for op in _trees(h.vendor)}
        snaps = _snapshots(h)
        starts = [0.0, *snaps[:-1]]
        if h.restart:
            k = snaps.index(h.restart[0])
            starts[k + 1] = h.restart[1]
        gap = h.restart or (end_s * 2, end_s * 2)
        probes = {}
        for tree in trees.values():
            for _, fn, layer in tree:
                probes.setdefault(fn, layer)
            for f in FAILURES.values():
                if any(fn == f[1] and d == f[2] for d, fn, _ in tree):
                    for _, fn, layer in f[6]:
                        probes.setdefault(fn, layer)
        inv: dict[int, Counter] = defaultdict(Counter)
        err: dict[int, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        records: list[dict] = []
        truth: list[dict] = []
        sig_seen: dict[tuple, list] = {}
        recno = int(rng.integers(1 << 20, 1 << 30))
        for t, op, fkey, proc in sorted(h.calls, key=lambda c: c[0]):
            if t < 0 or t >= end_s or gap[0] < t <= gap[1]:
                continue
            tree = trees[op]
            failure = FAILURES[fkey] if fkey else None
            frames = ([(d, fn, layer, None) for d, fn, layer in tree] if failure is None
                      else _failed_frames(tree, failure))
            dur = (0.02 if op == "reg_mr" else 0.002) * float(rng.uniform(0.5, 1.5))
            t_end = t + dur
            k = bisect.bisect_left(snaps, t_end)
            if k >= len(snaps) or starts[k] >= t_end:
                continue
            for _, fn, _, e in frames:
                inv[k][fn] += 1
                if e:
                    err[k][fn][e] += 1
            timed = ((t - h.window_phase) % WINDOW_EVERY) < WINDOW_LEN
            if failure is None and not timed:
                continue
            if failure is not None:
                sig = (k, op, tuple((d, fn, e) for d, fn, _, e in frames))
                seen = sig_seen.setdefault(sig, [])
                if len(seen) >= RECORDS_PER_SIG:
                    seen[-1]["repeat_count"] = (seen[-1]["repeat_count"] or 1) + 1
                    continue
            if h.restart and t > h.restart[1] and recno < (1 << 31):
                recno = int(rng.integers(1 << 32, 1 << 33))  # the new daemon's record numbers
            recno += 1
            pid, comm, job, meta = proc
            tid = pid
            trace_id = f"{h.name}:{h.boot}:{tid}:{recno}"
            wall = start + timedelta(seconds=t + h.skew)
            wall_end = start + timedelta(seconds=t_end + h.skew)
            mono0 = int((h.uptime + t) * 1e9)
            mono_end = int((h.uptime + t_end) * 1e9)
            if not timed:
                tick = (mono_end // 4_000_000) * 4_000_000
                wall = wall_end = wall_end - timedelta(microseconds=(mono_end - tick) / 1000)
            root_err = frames[0][3]
            rec = {
                "trace_id": trace_id, "kind": "good" if failure is None else "failure", "command": op.split(":")[0],
                "exit_status": -ERRNO[root_err] if root_err else 0, "start_time": wall, "end_time": wall_end,
                "host": h.name, "kernel_release": KERNEL, "lost_events": 0, "job_id": job,
                "metadata": [{"key": a, "value": b} for a, b in meta] or None, "repeat_count": None,
                "pid": pid, "tid": tid, "ppid": 1, "comm": comm, "arg": op.split(":")[1] if ":" in op else None,
                "frames": frames, "timed": timed, "mono0": mono0, "mono_end": mono_end,
            }
            if failure is not None:
                seen.append(rec)
            records.append(rec)
            label = failure[0] if failure else None
            expected = label in ROUTINE
            truth.append({
                "trace_id": trace_id, "host": h.name, "kind": rec["kind"], "root_cause": label,
                "bifurcation_probe": failure[1] if failure else None,
                "bifurcation_errno": failure[3] if failure else None,
                "origin_layer": probes.get(failure[1]) if failure else None,
                "expected_error": expected,
                "held_out": failure is None and recno % 10 == 0,
            })
        for tr in truth:
            if tr["root_cause"] in ROUTINE:
                routine[tr["root_cause"]] += 1
            elif tr["root_cause"]:
                causes[tr["root_cause"]] += 1
        _write_host(out, h, start, snaps, starts, probes, inv, err, records, truth)
    return {"routine": dict(routine), "causes": dict(causes), "hosts": [h.name for h in fleet]}


def _event_rows(rec: dict) -> dict[str, list]:
    frames = rec["frames"]
    n = len(frames)
    if rec["timed"]:
        span = rec["mono_end"] - rec["mono0"]
        step = max(1, span // (n + 1))
        ts = [rec["mono0"] + i * step for i in range(n)]
        # a frame returns before the next frame of its depth or above enters; the root at the end
        lat = []
        for i, (d, *_rest) in enumerate(frames):
            j = next((k for k in range(i + 1, n) if frames[k][0] <= d), None)
            end = ts[j] - 1 if j is not None else rec["mono_end"]
            lat.append(max(1, end - ts[i]))
    else:
        tick = (rec["mono_end"] // 4_000_000) * 4_000_000
        ts, lat = [tick] * n, [None] * n
    cols: dict[str, list] = defaultdict(list)
    for i, (d, fn, layer, e) in enumerate(frames):
        cols["trace_id"].append(rec["trace_id"])
        cols["seq"].append(i)
        cols["ts_ns"].append(ts[i])
        cols["depth"].append(d)
        cols["probe"].append(fn)
        cols["layer"].append(layer)
        cols["ret"].append(-ERRNO[e] if e else 0)
        cols["errno"].append(e)
        cols["latency_ns"].append(lat[i])
        cols["arg"].append(rec["arg"] if i == 0 else None)
    for key in ("pid", "tid", "ppid", "comm", "kind", "command", "exit_status", "start_time", "end_time",
                "host", "kernel_release", "lost_events", "job_id", "metadata", "repeat_count"):
        cols[key].extend([rec[key]] * n)
    for key in ("path", "path2", "output"):
        cols[key].extend([None] * n)
    return cols


def _write_host(out: Path, h: _Host, start: datetime, snaps, starts, probes, inv, err, records, truth) -> None:
    by_date: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for rec in records:
        cols = _event_rows(rec)
        date = rec["start_time"].date().isoformat()
        for key, values in cols.items():
            by_date[date][key].extend(values)
    for date, cols in by_date.items():
        write_partition(pa.table(dict(cols)), out, "events", date, h.name, "part-0.parquet", durable=False)
    tdates: dict[str, list] = defaultdict(list)
    for rec, tr in zip(records, truth, strict=True):
        tdates[rec["start_time"].date().isoformat()].append(tr)
    for date, rows in tdates.items():
        write_partition(pa.Table.from_pylist(rows), out, "truth", date, h.name, "part-0.parquet", durable=False)
    counters: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for k, t in enumerate(snaps):
        wall = start + timedelta(seconds=t + h.skew)
        date = wall.date().isoformat()
        c = counters[date]
        for fn, layer in probes.items():
            n = inv[k].get(fn, 0)
            errs = err[k].get(fn, {})
            c["host"].append(h.name)
            c["snapshot_time"].append(wall)
            c["interval_s"].append(round(t - starts[k], 3))
            c["kernel_release"].append(KERNEL)
            c["vendor"].append(h.vendor)
            c["probe_set"].append("rdma")
            c["probe"].append(fn)
            c["layer"].append(layer)
            c["live"].append(True)
            c["invocations"].append(n)
            c["failures"].append(sum(errs.values()))
            c["errno_counts"].append([{"errno": e, "count": v} for e, v in sorted(errs.items())])
            c["lost_records"].append(0)
    for date, cols in counters.items():
        path = write_partition(pa.table(dict(cols)), out, "counters", date, h.name, "part-0.parquet", durable=False)
        write_counter_buckets(path, durable=False)

