"""fleetgen21: a twenty-first fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings only).

The fleet: GPU hosts (`sjc2-g<NNN>`), all mlx5 on one MLNX_OFED kernel (GPU memory registered through
the peer-memory client), two GPU driver versions (550.90.07 on most hosts, 560.35.03 on a quarter:
named in each trace's metadata, `gpu_driver`, and nowhere else). A batch scheduler runs 8-rank jobs
back to back on every host (one process a rank; ranks 0-3 on mlx5_0, 4-5 on port 1 and 6-7 on port
2 of the dual-port mlx5_1). A rank starts with query_port, four GID-slot reads, alloc_pd, a GPU and
a host reg_mr, create_cq, create_qp and RESET->INIT->RTR->RTS, then registers a new GPU buffer every
4-6 minutes (freeing the previous one first) until the job ends (10-25 minutes), when it frees
what it made (destroy_qp, dereg_mr, dealloc_pd). When a rank fails fatally, NCCL's abort path frees
what the rank made (the same teardown calls, 20-200 ms after the error) and the process exits; the
launcher kills the other ranks half a second after the error (no teardown) and the scheduler REQUEUES the job 1-2 minutes later under the same
job id (metadata `requeue` counts them; new pids), up to three times; most requeues pass, so at the
job level every fault here looks recovered, while per process it was fatal.

The daemon: 30 s snapshots (-i 30s; a row for every attached probe in every snapshot), capture windows of 30 s every 5 minutes (per-host phase)
where every tree is timed and good trees are recorded; outside them failure trees only, untimed (the
4 ms tick the root returned in, latency null); per snapshot the first 3 trees of a failure signature
are records and the third carries the rest in repeat_count.

Routine families (truth: expected_error, root_cause = the family's name; the process goes on):
  gid_empty_slot: one of the four GID slots a rank reads is empty on every host: query_gid ENODATA
    at rdma_get_gid_attr ("-ENODATA: empty GID slot"); rdma-core skips it.
  gpu_pin_efault_peer_rescued: every GPU reg_mr: pin_user_pages_fast EFAULT under __ib_umem_get, then
    ib_peer_umem_get claims the range (the root succeeds; reference gpu_direct_trace_shape).
  qp_cgroup_eagain_retried: create_qp EAGAIN at ib_rdmacg_try_charge (hca_object limit), retried
    after 50-250 ms until it passes: 2 % of create_qp on every host, 25 % on the tight-cgroup hosts.

Root causes (truth root_cause; what an SRE must be shown):
  port2_rtr_timeout_requeued: on ONE host port 2 of mlx5_1 lost its neighbours (a bad cable or
    switch port): half of the INIT->RTR of ranks 6-7 fail ETIMEDOUT at rdma_addr_find_l2_eth_by_grh
    (1 s in the kernel), the rank dies, the job is requeued and usually passes. The host's other six
    ranks never fail. A host alert must name it (ETIMEDOUT): a host-local fault, in a minority of
    ranks of every job, hidden at the job level by the requeue.
  gpu560_peer_get_pages_enomem: on every host with GPU driver 560.35.03, 2 % of GPU reg_mr fail
    ENOMEM at ib_peer_umem_get (the peer client's get_pages) after the routine pin EFAULT; the rank
    dies. One cluster (one action: roll the GPU driver back); host alerts on those hosts tolerated
    (ENOMEM), not required.
  cq_cgroup_eagain_not_retried: on the three tight-cgroup hosts 5 % of create_cq fail EAGAIN at
    ib_rdmacg_try_charge -- the same probe and errno the create_qp path retries through everywhere --
    and rdma-core's create_cq does not retry: the rank dies. A fault (it kills processes), though its
    errno is a "try again" signal and its sibling verb's family is routine. Alerts on those hosts
    tolerated (EAGAIN), not required.

No fault (nothing may alert there, nothing is a finding):
  clock hosts: one host's wall clock steps back 25 s twice (NTP), so its snapshot intervals
    overlap the ones before; another's runs 0.3 % slow (its snapshots 29.91 s apart, 30 s intervals).
  slow_host: one host's NIC firmware is updated at 40 % of the window; from then on its CREATE_QP
    firmware command (mlx5_cmd_exec under mlx5_qpc_create_qp) takes ~6 ms instead of ~0.4 ms, no
    errno anywhere. Truth: no root cause on any trace (there is no failing trace to label); the
    summary names it (`slow_host`) as what an SRE wants named: the only sign is the good traces'
    latency.

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters and truth in the dataset
layout and `<out_dir>/fleetgen21.json` (the summary): `alert_hosts` (host -> errnos an alert may
name), `required_alert_hosts` (host -> errnos an alert must name), `roles`, `slow_host`,
`clock_hosts`, `routine` and `causes` (traces and repeat-weighted failures of each)."""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_partition

KERNEL = "5.15.0-1067-nvidia"  # one MLNX_OFED kernel on every host: the driver version is not in it
GPU_DRIVERS = ("550.90.07", "560.35.03")
START = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
SNAPSHOT_S = 30.0
WINDOW_EVERY_S, WINDOW_S = 300.0, 30.0
AGGREGATE_K = 3
RANKS = 8
ERRNO_VALUES = {"ENODATA": 61, "EAGAIN": 11, "EFAULT": 14, "ENOMEM": 12, "ETIMEDOUT": 110}

# (probe, errno, origin layer) of each labelled family; the probe is the origin frame
ROOT_CAUSES: dict[str, tuple[str, str, str]] = {
    "port2_rtr_timeout_requeued": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "gpu560_peer_get_pages_enomem": ("ib_peer_umem_get", "ENOMEM", "peer-mem"),
    "cq_cgroup_eagain_not_retried": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}
ROUTINE: dict[str, tuple[str, str, str]] = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "core"),
    "gpu_pin_efault_peer_rescued": ("pin_user_pages_fast", "EFAULT", "core"),
    "qp_cgroup_eagain_retried": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
}

# Good call trees from the reference, in entry order: (depth, function, layer, errno of an error
# the operation absorbs or None). Only functions the reference names, nested as it nests them.
_UOBJ_NEW = [(2, "rdma_alloc_begin_uobject", "core", None), (3, "ib_rdmacg_try_charge", "core", None)]
TREES: dict[str, list[tuple[int, str, str, str | None]]] = {
    "query_port": [
        (0, "ib_uverbs_query_port", "uverbs", None), (1, "ib_query_port", "core", None),
        (2, "__ib_query_port", "core", None), (3, "mlx5_ib_query_port", "driver", None),
        (4, "mlx5_query_port_roce", "driver", None), (1, "copy_port_attr_to_resp", "core", None)],
    "query_gid": [
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "uverbs", None),
        (1, "rdma_get_gid_attr", "core", None), (1, "rdma_read_gid_attr_ndev_rcu", "core", None),
        (1, "rdma_put_gid_attr", "core", None)],
    "alloc_pd": [
        (0, "ib_uverbs_alloc_pd", "uverbs", None), (1, "uverbs_request", "uverbs", None),
        (1, "rdma_alloc_begin_uobject", "core", None), (2, "ib_rdmacg_try_charge", "core", None),
        (1, "mlx5_ib_alloc_pd", "driver", None), (2, "mlx5_cmd_exec", "driver", None),
        (1, "rdma_restrack_add", "core", None), (1, "uverbs_response", "uverbs", None)],
    "reg_mr_gpu": [
        (0, "ib_uverbs_reg_mr", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
        (2, "ib_rdmacg_try_charge", "core", None), (1, "rdma_lookup_get_uobject", "core", None),
        (1, "mlx5_ib_reg_user_mr", "driver", None), (2, "ib_umem_get_peer", "core", None),
        (3, "__ib_umem_get", "core", None), (4, "pin_user_pages_fast", "core", "EFAULT"),
        (4, "ib_peer_umem_get", "peer-mem", None), (5, "ib_get_peer_client", "peer-mem", None),
        (2, "create_real_mr", "driver", None), (3, "reg_create", "driver", None),
        (4, "mlx5_cmd_exec", "driver", None), (3, "ib_umem_activate_invalidation_notifier", "peer-mem", None),
        (1, "rdma_restrack_add", "core", None), (1, "rdma_lookup_put_uobject", "core", None),
        (1, "uverbs_response", "uverbs", None)],
    "reg_mr_host": [
        (0, "ib_uverbs_reg_mr", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
        (2, "ib_rdmacg_try_charge", "core", None), (1, "rdma_lookup_get_uobject", "core", None),
        (1, "mlx5_ib_reg_user_mr", "driver", None), (2, "ib_umem_get_peer", "core", None),
        (3, "__ib_umem_get", "core", None), (4, "pin_user_pages_fast", "core", None),
        (4, "sg_alloc_append_table_from_pages", "core", None), (2, "create_real_mr", "driver", None),
        (3, "alloc_cacheable_mr", "driver", None), (3, "mlx5r_umr_update_mr_pas", "driver", None),
        (1, "rdma_restrack_add", "core", None), (1, "rdma_lookup_put_uobject", "core", None),
        (1, "uverbs_response", "uverbs", None)],
    "create_cq": [
        (0, "ib_uverbs_create_cq", "uverbs", None), (1, "create_cq", "core", None), *_UOBJ_NEW,
        (2, "mlx5_ib_create_cq", "driver", None), (3, "create_cq_user", "driver", None),
        (4, "ib_umem_get", "core", None), (4, "mlx5_ib_db_map_user", "driver", None),
        (3, "mlx5_comp_eqn_get", "driver", None), (3, "mlx5_core_create_cq", "driver", None),
        (4, "mlx5_cmd_do", "driver", None), (2, "rdma_restrack_add", "core", None),
        (2, "uverbs_response", "uverbs", None)],
    "create_qp": [
        (0, "ib_uverbs_create_qp", "uverbs", None), (1, "create_qp", "core", None), *_UOBJ_NEW,
        (2, "rdma_lookup_get_uobject", "core", None), (2, "ib_create_qp_user", "core", None),
        (3, "create_qp", "core", None), (4, "mlx5_ib_create_qp", "driver", None),
        (5, "create_qp", "driver", None), (6, "create_user_qp", "driver", None),
        (7, "_create_user_qp", "driver", None), (8, "ib_umem_get", "core", None),
        (8, "mlx5_ib_db_map_user", "driver", None), (7, "mlx5_qpc_create_qp", "driver", None),
        (8, "mlx5_cmd_exec", "driver", None), (3, "ib_create_qp_security", "core", None),
        (2, "ib_qp_usecnt_inc", "core", None), (2, "uverbs_response", "uverbs", None)],
    "modify_qp_init": [
        (0, "ib_uverbs_modify_qp", "uverbs", None), (1, "modify_qp", "core", None),
        (2, "rdma_lookup_get_uobject", "core", None), (2, "ib_modify_qp_with_udata", "core", None),
        (3, "_ib_modify_qp", "core", None), (4, "rdma_counter_bind_qp_auto", "core", None),
        (4, "ib_security_modify_qp", "core", None), (5, "mlx5_ib_modify_qp", "driver", None),
        (6, "__mlx5_ib_modify_qp", "driver", None), (7, "mlx5_core_qp_modify", "driver", None),
        (8, "mlx5_cmd_exec", "driver", None), (2, "rdma_lookup_put_uobject", "core", None)],
    "modify_qp_rtr": [
        (0, "ib_uverbs_modify_qp", "uverbs", None), (1, "modify_qp", "core", None),
        (2, "rdma_lookup_get_uobject", "core", None), (2, "copy_ah_attr_from_uverbs", "core", None),
        (2, "ib_modify_qp_with_udata", "core", None), (3, "_ib_modify_qp", "core", None),
        (4, "rdma_fill_sgid_attr", "core", None), (5, "rdma_get_gid_attr", "core", None),
        (4, "ib_resolve_eth_dmac", "core", None), (5, "ib_resolve_unicast_gid_dmac", "core", None),
        (6, "rdma_addr_find_l2_eth_by_grh", "core", None), (4, "rdma_lag_get_ah_roce_slave", "core", None),
        (4, "ib_security_modify_qp", "core", None), (5, "mlx5_ib_modify_qp", "driver", None),
        (6, "__mlx5_ib_modify_qp", "driver", None), (7, "mlx5_set_path", "driver", None),
        (7, "mlx5_core_qp_modify", "driver", None), (8, "mlx5_cmd_exec", "driver", None),
        (4, "rdma_lag_put_ah_roce_slave", "core", None), (4, "rdma_unfill_sgid_attr", "core", None),
        (2, "rdma_lookup_put_uobject", "core", None)],
    "modify_qp_rts": [
        (0, "ib_uverbs_modify_qp", "uverbs", None), (1, "modify_qp", "core", None),
        (2, "rdma_lookup_get_uobject", "core", None), (2, "ib_modify_qp_with_udata", "core", None),
        (3, "_ib_modify_qp", "core", None), (4, "ib_security_modify_qp", "core", None),
        (5, "mlx5_ib_modify_qp", "driver", None), (6, "__mlx5_ib_modify_qp", "driver", None),
        (7, "mlx5_core_qp_modify", "driver", None), (8, "mlx5_cmd_exec", "driver", None),
        (2, "rdma_lookup_put_uobject", "core", None)],
    # teardown (the reference's cleanup trees): a rank's normal end, and the abort of a rank whose
    # verb failed (NCCL's error path frees what the rank made before the process exits)
    "destroy_qp": [
        (0, "ib_uverbs_destroy_qp", "uverbs", None), (1, "__uobj_get_destroy", "core", None),
        (2, "rdma_lookup_get_uobject", "core", None), (2, "uobj_destroy", "core", None),
        (3, "uverbs_destroy_uobject", "core", None), (4, "destroy_hw_idr_uobject", "core", None),
        (5, "uverbs_free_qp", "core", None), (6, "ib_destroy_qp_user", "core", None),
        (7, "mlx5_ib_destroy_qp", "driver", None), (8, "destroy_qp_common", "driver", None),
        (9, "mlx5_core_destroy_qp", "driver", None), (10, "mlx5_cmd_exec", "driver", None),
        (7, "ib_qp_usecnt_dec", "core", None), (7, "rdma_restrack_del", "core", None),
        (6, "ib_uverbs_release_uevent", "core", None), (1, "rdma_lookup_put_uobject", "core", None)],
    "dereg_mr": [
        (0, "ib_uverbs_dereg_mr", "uverbs", None), (1, "__uobj_perform_destroy", "core", None),
        (2, "__uobj_get_destroy", "core", None), (3, "rdma_lookup_get_uobject", "core", None),
        (3, "uobj_destroy", "core", None), (4, "uverbs_destroy_uobject", "core", None),
        (5, "destroy_hw_idr_uobject", "core", None), (6, "uverbs_free_mr", "core", None),
        (7, "ib_dereg_mr_user", "core", None), (8, "mlx5_ib_dereg_mr", "driver", None),
        (9, "mlx5_revoke_mr", "driver", None), (10, "mlx5r_umr_revoke_mr", "driver", None),
        (9, "ib_umem_release", "core", None), (6, "ib_rdmacg_uncharge", "core", None),
        (2, "rdma_lookup_put_uobject", "core", None)],
    "dealloc_pd": [
        (0, "ib_uverbs_dealloc_pd", "uverbs", None), (1, "__uobj_perform_destroy", "core", None),
        (2, "__uobj_get_destroy", "core", None), (3, "rdma_lookup_get_uobject", "core", None),
        (3, "uobj_destroy", "core", None), (4, "uverbs_destroy_uobject", "core", None),
        (5, "destroy_hw_idr_uobject", "core", None), (6, "uverbs_free_pd", "core", None),
        (7, "ib_dealloc_pd_user", "core", None), (8, "mlx5_ib_dealloc_pd", "driver", None),
        (9, "mlx5_cmd_dealloc_pd", "driver", None), (10, "mlx5_cmd_exec", "driver", None),
        (8, "rdma_restrack_del", "core", None), (6, "ib_rdmacg_uncharge", "core", None),
        (4, "remove_handle_idr_uobject", "core", None), (2, "rdma_lookup_put_uobject", "core", None)],
}
OPERATION = {"query_port": "query_port", "query_gid": "query_gid", "alloc_pd": "alloc_pd",
             "reg_mr_gpu": "reg_mr", "reg_mr_host": "reg_mr", "create_cq": "create_cq", "create_qp": "create_qp",
             "modify_qp_init": "modify_qp", "modify_qp_rtr": "modify_qp", "modify_qp_rts": "modify_qp",
             "destroy_qp": "destroy_qp", "dereg_mr": "dereg_mr", "dealloc_pd": "dealloc_pd"}
TRANSITION = {"modify_qp_init": "RESET->INIT", "modify_qp_rtr": "INIT->RTR", "modify_qp_rts": "RTR->RTS"}
# one probe a symbol name (the three static create_qp functions share one: each call of any counts)
_FIRST_LAYER: dict[str, str] = {}
for _tree in TREES.values():
    for _, _fn, _layer, _ in _tree:
        _FIRST_LAYER.setdefault(_fn, _layer)
PROBES = sorted(_FIRST_LAYER.items())

# The fault variants: tree, origin frame (its index in the tree), errno, and the label it carries.
# The origin's ancestors return its errno; frames after the origin's subtree never run (the caller
# unwinds). A variant whose tree absorbs an error (the GPU pin) keeps that frame's EFAULT too.
_ORIGIN = {
    "gid_empty_slot": ("query_gid", 1),
    "qp_cgroup_eagain_retried": ("create_qp", 3),
    "cq_cgroup_eagain_not_retried": ("create_cq", 3),
    "port2_rtr_timeout_requeued": ("modify_qp_rtr", 10),
    "gpu560_peer_get_pages_enomem": ("reg_mr_gpu", 8),
}

# own time of a frame (seconds): firmware commands and pins dominate a tree's duration
_OWN_S = {"mlx5_cmd_exec": 4e-4, "mlx5_cmd_do": 3e-4, "pin_user_pages_fast": 6e-5, "ib_get_peer_client": 2e-5,
          "rdma_addr_find_l2_eth_by_grh": 2e-5}
_SLOW_FW_S = 6e-3  # the slow host's CREATE_QP after its firmware update
_NEIGHBOUR_TIMEOUT_S = 1.0  # rdma_addr_find_l2_eth_by_grh: "neighbour never resolved within 1000 ms"


def _frames(kind: str, family: str | None) -> list[tuple[int, str, str, str | None]]:
    """A call's frames (depth, fn, layer, errno): the good tree, or the family's failing variant."""
    tree = TREES[kind]
    if family is None or family == "gpu_pin_efault_peer_rescued":
        return tree
    _, at = _ORIGIN[family]
    errno = {**ROOT_CAUSES, **ROUTINE}[family][1]
    depth = tree[at][0]
    end = at + 1
    while end < len(tree) and tree[end][0] > depth:  # the origin's own callees ran
        end += 1
    ancestors, need = set(), depth
    for i in range(at - 1, -1, -1):
        if tree[i][0] < need:
            ancestors.add(i)
            need = tree[i][0]
    out = []
    for i, (d, fn, layer, absorbed) in enumerate(tree[:end]):
        out.append((d, fn, layer, errno if (i in ancestors or i == at) else absorbed))
    return out


@functools.cache
def _frame_columns(kind: str, family: str | None) -> tuple:
    """_frames(kind, family) and its event columns: (frames, probe, layer, depth, ret, errno,
    whether any frame failed, the record signature of a failing tree)."""
    frames = _frames(kind, family)
    failed = any(f[3] for f in frames)
    return (frames, [fn for _, fn, _, _ in frames], [layer for _, _, layer, _ in frames], [d for d, *_ in frames],
            [-ERRNO_VALUES[e] if e else 0 for *_, e in frames], [e for *_, e in frames], failed,
            (kind, tuple((f[1], f[3]) for f in frames)) if failed else None)


class _Host:
    def __init__(self, name: str, index: int, rng: random.Random, start_s: float, end_s: float):
        self.name, self.index, self.rng = name, index, rng
        self.start_s, self.end_s = start_s, end_s
        self.boot_s = start_s - rng.uniform(86400, 20 * 86400)
        self.window_phase = rng.uniform(0, WINDOW_EVERY_S)
        self.snap_phase = rng.uniform(0.5, SNAPSHOT_S)
        self.skew_s = rng.uniform(-2.0, 2.0)
        self.clock = "steady"
        self.gpu_driver = GPU_DRIVERS[0]
        self.empty_slot = rng.randrange(1, 4)
        self.tight_cgroup = self.bad_port = self.slow = False
        self.slow_from = math.inf
        self.next_pid = rng.randrange(20000, 60000)
        self.trace_n = rng.randrange(1 << 20)

    def wall(self, t: float) -> float:
        """The host's wall clock at true time t (seconds since the epoch)."""
        w = t + self.skew_s
        if self.clock == "steps_back":  # NTP steps it back 25 s at 35 % and again at 70 % of the window
            span = self.end_s - self.start_s
            w -= 25.0 * ((t >= self.start_s + 0.35 * span) + (t >= self.start_s + 0.70 * span))
        elif self.clock == "slow":
            w -= 0.003 * (t - self.start_s)
        return w

    def in_window(self, t: float) -> bool:
        return (t - self.start_s - self.window_phase) % WINDOW_EVERY_S < WINDOW_S

    def snapshot(self, t: float) -> int:
        return max(0, math.ceil((t - self.start_s - self.snap_phase) / SNAPSHOT_S))

    def snapshot_end(self, k: int) -> float:
        return self.start_s + self.snap_phase + k * SNAPSHOT_S


def _rank_calls(host: _Host, rng: random.Random, rank: int, t0: float, job_end: float,
                abort_teardown: bool = True) -> list[tuple]:
    """The calls one rank makes from t0 until its job's planned end, where it tears down what it
    made, or until its first fatal error, after which its abort tears down what it made and the
    process exits: (time, tree kind, family or None, fatal)."""
    calls: list[tuple] = []
    made: list[str] = []  # teardown calls owed, in the order they are made
    t = t0

    def call(kind: str, family: str | None = None, fatal: bool = False, gap: float = 0.004,
             jitter: bool = True) -> None:
        nonlocal t
        calls.append((t, kind, family, fatal))
        t += gap + (rng.uniform(0, 0.004) if jitter else 0.001)

    def teardown(after: float) -> list[tuple]:
        nonlocal t
        if after and not abort_teardown:  # the variant whose ranks exit at once after a fatal error
            return calls
        t += after
        for kind in reversed(made):  # no draw: the control fleet (no abort teardown) stays the same fleet
            call(kind, jitter=False)
        return calls

    def fails(p: float) -> bool:
        return rng.random() < p

    peer_560 = 0.02 if host.gpu_driver == GPU_DRIVERS[1] else 0.0
    call("query_port")
    for slot in range(4):
        call("query_gid", "gid_empty_slot" if slot == host.empty_slot else None)
    call("alloc_pd")
    made.append("dealloc_pd")
    if fails(peer_560):
        call("reg_mr_gpu", "gpu560_peer_get_pages_enomem", fatal=True)
        return teardown(rng.uniform(0.02, 0.2))
    call("reg_mr_gpu", "gpu_pin_efault_peer_rescued")
    call("reg_mr_host")
    made += ["dereg_mr", "dereg_mr"]
    if host.tight_cgroup and fails(0.05):
        call("create_cq", "cq_cgroup_eagain_not_retried", fatal=True)
        return teardown(rng.uniform(0.02, 0.2))
    call("create_cq")
    while fails(0.25 if host.tight_cgroup else 0.02):  # the library waits and retries
        call("create_qp", "qp_cgroup_eagain_retried", gap=rng.uniform(0.05, 0.25))
    call("create_qp")
    made.append("destroy_qp")
    call("modify_qp_init")
    if host.bad_port and rank >= 6 and fails(0.5):
        call("modify_qp_rtr", "port2_rtr_timeout_requeued", fatal=True)
        return teardown(rng.uniform(0.02, 0.2))
    call("modify_qp_rtr")
    call("modify_qp_rts")
    t += rng.uniform(240, 360)
    while t < job_end:  # a new GPU buffer every few minutes: the old one deregistered first
        call("dereg_mr")
        if fails(peer_560):
            call("reg_mr_gpu", "gpu560_peer_get_pages_enomem", fatal=True)
            made.remove("dereg_mr")
            return teardown(rng.uniform(0.02, 0.2))
        call("reg_mr_gpu", "gpu_pin_efault_peer_rescued")
        t += rng.uniform(240, 360)
    t = job_end + rng.uniform(0.0, 0.5)  # the job's end: every rank frees what it made
    return teardown(0.0)


def _timings(frames: list, start: float, host: _Host, kind: str, family: str | None, rng: random.Random):
    """Entry time and latency (seconds) of each frame, nested: a frame's latency covers its callees."""
    uniform = rng.uniform
    if host.slow and kind == "create_qp" and start >= host.slow_from:  # the firmware's own time drawn again
        own = []
        for _, fn, _, _ in frames:
            s = _OWN_S.get(fn, 2e-6) * uniform(0.8, 1.3)
            if fn == "mlx5_cmd_exec":
                s = _SLOW_FW_S * uniform(0.8, 1.3)
            own.append(s)
    else:
        own = [_OWN_S.get(fn, 2e-6) * uniform(0.8, 1.3) for _, fn, _, _ in frames]
    if family == "port2_rtr_timeout_requeued":
        own[_ORIGIN[family][1]] = _NEIGHBOUR_TIMEOUT_S + rng.uniform(0, 0.004)
    entry, exit_ = [0.0] * len(frames), [0.0] * len(frames)
    stack: list[int] = []
    t = start
    for i, (d, *_rest) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            exit_[stack.pop()] = t
            t += 1e-6
        entry[i] = t
        t += own[i]
        stack.append(i)
    while stack:
        exit_[stack.pop()] = t
        t += 1e-6
    return entry, [x - e for e, x in zip(entry, exit_, strict=True)]


def _roles(names: list[str], rng: random.Random) -> dict[str, list[str]]:
    pool = names[:]
    rng.shuffle(pool)
    n560 = max(4, len(names) // 4)
    roles = {"bad_port": pool[:1], "slow": pool[1:2], "tight_cgroup": pool[2:5], "clock_steps_back": pool[5:6],
             "clock_slow": pool[6:7], "gpu560": pool[7:7 + n560]}
    return roles


def generate(out_dir: str | Path, hosts: int = 48, hours: float = 4.0, seed: int = 21,
             abort_teardown: bool = True) -> dict:
    """Write the fleet into out_dir (dataset layout) and return its summary (see the module docstring).
    `abort_teardown=False`: a rank that fails fatally exits at once, freeing nothing (the control:
    the same fleet without the abort path's calls after a fatal error)."""
    if hosts < 12:
        raise ValueError(f"hosts: expected 12 or more (every role its own hosts), found {hosts}")
    out = Path(out_dir)
    rng = random.Random(seed)
    start_s = START.timestamp()
    end_s = start_s + hours * 3600
    names = [f"sjc2-g{i:03d}" for i in range(hosts)]
    roles = _roles(names, rng)
    routine: Counter = Counter()
    causes: Counter = Counter()
    weights: Counter = Counter()
    for index, name in enumerate(names):
        host = _Host(name, index, random.Random(rng.random()), start_s, end_s)
        host.bad_port = name in roles["bad_port"]
        host.tight_cgroup = name in roles["tight_cgroup"]
        host.slow = name in roles["slow"]
        if host.slow:
            host.slow_from = start_s + 0.4 * (end_s - start_s)
        if name in roles["gpu560"]:
            host.gpu_driver = GPU_DRIVERS[1]
        if name in roles["clock_steps_back"]:
            host.clock = "steps_back"
        elif name in roles["clock_slow"]:
            host.clock = "slow"
        _write_host(out, host, routine, causes, weights, abort_teardown)
    required = {h: ["ETIMEDOUT"] for h in roles["bad_port"]}
    alert_hosts = {**{h: ["EAGAIN"] for h in roles["tight_cgroup"]}, **{h: ["ENOMEM"] for h in roles["gpu560"]},
                   **required}
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed, "abort_teardown": abort_teardown, "roles": roles,
        "alert_hosts": alert_hosts, "required_alert_hosts": required,
        "slow_host": roles["slow"][0], "slow_from": dt.datetime.fromtimestamp(start_s + 0.4 * (end_s - start_s),
                                                                              dt.UTC).isoformat(),
        "clock_hosts": roles["clock_steps_back"] + roles["clock_slow"],
        "routine": dict(routine), "causes": dict(causes), "weights": dict(weights),
    }
    (out / "fleetgen21.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _write_host(out: Path, host: _Host, routine: Counter, causes: Counter, weights: Counter,
                abort_teardown: bool) -> None:
    rng = host.rng
    calls: list[tuple] = []  # (time, kind, family, pid, ppid, job_id, metadata)
    t = host.start_s + rng.uniform(0, 240)
    job_seq = 0
    while t < host.end_s - 60:
        job_seq += 1
        job_id = str(400000 + host.index * 1000 + job_seq)
        requeue = 0
        while True:
            planned_end = min(host.end_s - 1, t + rng.uniform(600, 1500))
            launcher = host.next_pid
            host.next_pid += 1
            ranks = []
            for rank in range(RANKS):
                pid = host.next_pid
                host.next_pid += 1 + rng.randrange(3)
                t0 = t + 0.15 * rank + rng.uniform(0, 0.05)
                ranks.append((rank, pid, _rank_calls(host, rng, rank, t0, planned_end, abort_teardown)))
            fatal_at = [c[0] for _, _, cs in ranks for c in cs if c[3]]
            killed_at = min(fatal_at) + 0.5 if fatal_at else math.inf
            for rank, pid, cs in ranks:
                device, port = ("mlx5_0", 1) if rank < 4 else ("mlx5_1", 1 if rank < 6 else 2)
                meta = [{"key": "rank", "value": str(rank)}, {"key": "device", "value": device},
                        {"key": "port", "value": str(port)}, {"key": "gpu_driver", "value": host.gpu_driver},
                        {"key": "requeue", "value": str(requeue)}]
                for c in cs:
                    if c[0] <= killed_at and c[0] < host.end_s:
                        calls.append((c[0], c[1], c[2], pid, launcher, job_id, meta))
            if fatal_at and requeue < 3:  # the scheduler requeues the job under the same id
                requeue += 1
                t = killed_at + rng.uniform(60, 120)
                if t >= host.end_s - 60:
                    break
                continue
            t = min(killed_at, planned_end) + rng.uniform(60, 180)
            break
    calls.sort(key=lambda c: c[0])
    _emit(out, host, calls, routine, causes, weights)


def _emit(out: Path, host: _Host, calls: list[tuple], routine: Counter, causes: Counter, weights: Counter) -> None:
    rng = host.rng
    ev: dict[str, list] = defaultdict(list)
    truth: dict[str, list] = defaultdict(list)
    n_snap = host.snapshot(host.end_s) + 1
    per_snap: Counter = Counter()  # (snapshot, kind, family) -> calls whose root returned in it
    kept: dict[tuple[int, tuple], list] = {}  # (snapshot, signature) -> records kept ([row span, weight])
    days: dict[int, str] = {}  # start_time -> its date
    for when, kind, family, pid, ppid, job_id, meta in calls:
        frames, probes, layers, depths, rets, errnos, failed, signature = _frame_columns(kind, family)
        entry, latency = _timings(frames, when, host, kind, family, rng)
        root_end = entry[0] + latency[0]
        snap = host.snapshot(root_end)
        per_snap[(snap, kind, family)] += 1
        timed = host.in_window(when)
        if not failed and not timed:
            continue  # a good tree outside a capture window is counted, not recorded
        if failed:
            records = kept.setdefault((snap, signature), [])
            if len(records) >= AGGREGATE_K:  # the kernel counts it on the last record kept
                first, last = records[-1][0]
                for r in range(first, last):
                    ev["repeat_count"][r] = (ev["repeat_count"][r] or 1) + 1
                _count(family, routine, causes, weights, 0)
                continue
        host.trace_n += 1
        trace_id = f"{host.name}:b1:{pid}:{host.trace_n}"
        mono = lambda s: int((s - host.boot_s) * 1e9)  # noqa: E731 -- the host's monotonic clock
        wall = lambda s: int(host.wall(s) * 1e9)  # noqa: E731
        if timed:
            ts = [mono(e) for e in entry]
            lat = [int(x * 1e9) for x in latency]
            start_time, end_time = wall(entry[0]), wall(root_end)
        else:  # the tick the root returned in (4 ms jiffies), no latency
            tick = mono(root_end) // 4_000_000 * 4_000_000
            ts, lat = [tick] * len(frames), [None] * len(frames)
            start_time = end_time = wall(host.boot_s + tick / 1e9)
        root_errno = frames[0][3]  # an absorbed error (the rescued pin) leaves the root's 0
        exit_status = -ERRNO_VALUES[root_errno] if root_errno else 0
        first_row = len(ev["trace_id"])
        n = len(frames)
        if len(ts) != n or len(lat) != n:
            raise ValueError(f"{trace_id}: a time for every frame")
        ev["trace_id"] += [trace_id] * n
        ev["seq"] += range(n)
        ev["ts_ns"] += ts
        ev["pid"] += [pid] * n
        ev["tid"] += [pid] * n
        ev["ppid"] += [ppid] * n
        ev["comm"] += ["python3"] * n
        ev["probe"] += probes
        ev["layer"] += layers
        ev["depth"] += depths
        ev["ret"] += rets
        ev["errno"] += errnos
        ev["latency_ns"] += lat
        ev["path"] += [None] * n
        ev["arg"] += [TRANSITION.get(kind)] + [None] * (n - 1)
        ev["path2"] += [None] * n
        ev["output"] += [None] * n
        ev["kind"] += ["failure" if failed else "good"] * n
        ev["command"] += [OPERATION[kind]] * n
        ev["exit_status"] += [exit_status] * n
        ev["start_time"] += [start_time] * n
        ev["end_time"] += [end_time] * n
        ev["host"] += [host.name] * n
        ev["kernel_release"] += [KERNEL] * n
        ev["lost_events"] += [0] * n
        ev["job_id"] += [job_id] * n
        ev["metadata"] += [meta] * n
        ev["repeat_count"] += [None] * n
        if start_time not in days:
            days[start_time] = dt.datetime.fromtimestamp(start_time / 1e9, dt.UTC).date().isoformat()
        if failed:
            kept[(snap, signature)].append(((first_row, len(ev["trace_id"])), 1))
        label = family
        origin = None
        if family is not None:
            probe, errno, layer = {**ROOT_CAUSES, **ROUTINE}[family]
            origin = (probe, errno, layer)
        truth["trace_id"].append(trace_id)
        truth["host"].append(host.name)
        truth["kind"].append("failure" if failed else "good")
        truth["root_cause"].append(label)
        truth["bifurcation_probe"].append(origin[0] if origin else None)
        truth["bifurcation_errno"].append(origin[1] if origin else None)
        truth["origin_layer"].append(origin[2] if origin else None)
        truth["expected_error"].append(family in ROUTINE)
        truth["held_out"].append(False)
        _count(family, routine, causes, weights, 1)
    # every frame of every call, counted (records or not)
    invocations: dict[tuple[int, str], int] = Counter()
    failures: dict[tuple[int, str], Counter] = defaultdict(Counter)
    for (snap, kind, family), n in per_snap.items():
        for _, fn, _, errno in _frame_columns(kind, family)[0]:
            invocations[(snap, fn)] += n
            if errno:
                failures[(snap, fn)][errno] += n
    date = START.date().isoformat()
    events = pa.Table.from_pydict({f.name: ev[f.name] for f in EVENTS}, schema=EVENTS)
    # one partition per wall-clock date of the trace (a long window crosses midnight)
    dates = [days[s] for s in ev["start_time"]]
    truth_dates = {tid: d for tid, d in zip(ev["trace_id"], dates, strict=True)}
    for day in sorted(set(dates)) or [date]:
        mask = pa.array([d == day for d in dates], pa.bool_())
        write_partition(events.filter(mask), out, "events", day, host.name, "part-0.parquet", durable=False)
    truth_table = pa.Table.from_pydict({f.name: truth[f.name] for f in TRUTH}, schema=TRUTH)
    for day in sorted(set(truth_dates.values())):
        mask = pa.array([truth_dates[t] == day for t in truth["trace_id"]], pa.bool_())
        write_partition(truth_table.filter(mask), out, "truth", day, host.name, "part-0.parquet", durable=False)
    _write_counters(out, host, n_snap, invocations, failures)


def _count(family: str | None, routine: Counter, causes: Counter, weights: Counter, record: int) -> None:
    if family is None:
        return
    (routine if family in ROUTINE else causes)[family] += record
    weights[family] += 1


def _write_counters(out: Path, host: _Host, n_snap: int, invocations: Counter, failures: dict) -> None:
    """Every attached probe in every snapshot, built column-wise (a 300-host, 6-hour fleet has ~17M
    counter rows: a Python row loop took a minute)."""
    ends = [host.snapshot_end(k) for k in range(n_snap)]
    n_snap = sum(1 for e in ends if e <= host.end_s)
    n_probe = len(PROBES)
    probe_index = {fn: i for i, (fn, _) in enumerate(PROBES)}
    calls = np.zeros((n_snap, n_probe), np.int64)
    for (k, fn), n in invocations.items():
        if k < n_snap:
            calls[k, probe_index[fn]] = n
    fails = np.zeros((n_snap, n_probe), np.int64)
    entries = np.zeros(n_snap * n_probe, np.int64)  # errno histogram entries of each row
    histograms: dict[int, list[tuple[str, int]]] = {}
    for (k, fn), errs in failures.items():
        if k < n_snap:
            row = k * n_probe + probe_index[fn]
            fails[k, probe_index[fn]] = sum(errs.values())
            histograms[row] = sorted(errs.items())
            entries[row] = len(histograms[row])
    offsets = np.zeros(n_snap * n_probe + 1, np.int32)
    np.cumsum(entries, out=offsets[1:])
    errnos = [e for row in sorted(histograms) for e, _ in histograms[row]]
    counts = [c for row in sorted(histograms) for _, c in histograms[row]]
    values = pa.StructArray.from_arrays([pa.array(errnos, pa.string()), pa.array(counts, pa.int64())],
                                        fields=list(COUNTERS.field("errno_counts").type.value_type))
    histogram = pa.ListArray.from_arrays(pa.array(offsets), values, type=COUNTERS.field("errno_counts").type,
                                         mask=pa.array(entries == 0))
    n = n_snap * n_probe
    wall_ns = np.array([int(host.wall(e) * 1e9) for e in ends[:n_snap]], np.int64)
    layer = [layer for _, layer in PROBES]
    table = pa.Table.from_arrays([
        pa.array([host.name] * n, pa.string()),
        pa.array(np.repeat(wall_ns, n_probe), COUNTERS.field("snapshot_time").type),
        pa.array(np.full(n, SNAPSHOT_S)),
        pa.array([KERNEL] * n, pa.string()),
        pa.array(["mlx5"] * n, pa.string()),
        pa.array(["rdma"] * n, pa.string()),
        pa.array([fn for fn, _ in PROBES] * n_snap, pa.string()),
        pa.array(layer * n_snap, pa.string()),
        pa.array(np.ones(n, bool)),
        pa.array(calls.ravel()),
        pa.array(fails.ravel()),
        histogram,
        pa.array(np.zeros(n, np.int64)),
    ], schema=COUNTERS)
    days = np.array([dt.datetime.fromtimestamp(w / 1e9, dt.UTC).date().isoformat() for w in wall_ns])
    for day in sorted(set(days)):
        mask = np.repeat(days == day, n_probe)
        write_partition(table.filter(pa.array(mask)), out, "counters", str(day), host.name, "part-0.parquet",
                        durable=False)
