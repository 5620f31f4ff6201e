"""fleetgen43's fleet: ROOT CAUSES AND THEIR ECHOES (see the package docstring for the decisions).

16 mlx5 RoCE hosts (ConnectX-7, MLNX_OFED 24.07 on 5.15.0-119-generic, one probe set), 4 GPUs a
job a host, five collective jobs of 2 to 8 hosts sharing them (a host runs at most two jobs):

  train-a     h01-h08                  NCCL (plain verbs, QP info over the bootstrap sockets)
  train-b     h09-h14                  UCX over rdma_cm (the CM gives each QP its attributes)
  finetune-c  h03 h07 h11 h15 h16      NCCL; holds both root hosts: the overlap job
  eval-d      h01 h09 h15 h16          NCCL, no fault
  bench-e     h12 h13                  NCCL, no fault

Each rank starts up as the reference's call chains go: alloc_pd, a host-memory reg_mr, two GPU
reg_mr (the GUP pin refuses device memory, EFAULT, and nvidia-peermem claims the range:
absorbed), create_cq asking 128-byte CQE padding (refused EOPNOTSUPP, created again without),
one RC QP to the same local rank of every other host of the job (rail all-to-all; the rdma
cgroup's hca_object charge refuses one now and then, EAGAIN, retried), RESET->INIT each, then per
peer in the order its proxy reaches them INIT->RTR and RTR->RTS (train-b asks the CM for the
RTR and RTS attributes first: ucma_init_qp_attr -> rdma_init_qp_attr -> cma_ib_init_qp_attr).
A healthy attempt runs 20-30 minutes, then the job's next step starts. A node agent on every
host reads the GID table once a minute (8 slots, 5 empty: ENODATA at rdma_get_gid_attr).

Root causes (truth `root_cause`, the root host's own records):
  port_down          fg43-h03's NIC port loses its link (a transceiver) from 28 % to 56 % of the
                     window: the connected route is ignored on a link-down device, so every
                     INIT->RTR there fails EADDRNOTAVAIL at rdma_addr_find_l2_eth_by_grh.
  peermem_unloaded   fg43-h11's nvidia-peermem module is gone (a GPU driver reinstall) from 44 %
                     to 78 %: every GPU reg_mr's pin fails EFAULT as always, and no peer client
                     claims the range: EFAULT at ib_peer_umem_get up to the root.
Their echoes (truth `<cause>.echo`, on the job's other hosts, moments later):
  port_down.echo         a peer's INIT->RTR towards h03's GID: the neighbour never answers,
                         ETIMEDOUT at rdma_addr_find_l2_eth_by_grh after 1000 ms.
  peermem_unloaded.echo  a train-b peer asks the CM for RTR attributes of a connection whose
                         remote rank died at its registration (the CM handshake was rejected):
                         EINVAL at cma_ib_init_qp_attr. NCCL peers of h11 (finetune-c) wait on
                         the bootstrap for QP info that never comes and are killed by the
                         launcher: no kernel echo.
A rank dies at its first failure; the launcher kills the job's other ranks 2-4 s after the
first death (their streams just stop); Slurm requeues the job (same job id, new pids) 100-160 s
later. While a fault lasts, every attempt of a job holding its host fails this way.
faults=False: the same fleet, jobs and routine, no fault (every attempt healthy).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
from fleet_tables import frame

from tracer.schema import metadata_list, write_counter_buckets, write_partition

ERRNO = {"EFAULT": 14, "EOPNOTSUPP": 95, "ENODATA": 61, "EAGAIN": 11, "EADDRNOTAVAIL": 99,
         "ETIMEDOUT": 110, "EINVAL": 22}

LAYER = {
    "ib_uverbs_alloc_pd": "uverbs", "uverbs_request": "uverbs", "uverbs_response": "uverbs",
    "rdma_alloc_begin_uobject": "core", "ib_rdmacg_try_charge": "core", "mlx5_ib_alloc_pd": "driver",
    "mlx5_cmd_exec": "driver", "rdma_restrack_add": "core", "rdma_alloc_abort_uobject": "core",
    "ib_uverbs_reg_mr": "uverbs", "rdma_lookup_get_uobject": "core", "rdma_lookup_put_uobject": "core",
    "mlx5_ib_reg_user_mr": "driver", "ib_umem_get_peer": "core", "__ib_umem_get": "core",
    "pin_user_pages_fast": "core", "sg_alloc_append_table_from_pages": "core", "ib_peer_umem_get": "peer-mem",
    "ib_get_peer_client": "peer-mem", "create_real_mr": "driver", "alloc_cacheable_mr": "driver",
    "reg_create": "driver", "ib_umem_activate_invalidation_notifier": "peer-mem",
    "ib_uverbs_create_cq": "uverbs", "create_cq": "uverbs", "mlx5_ib_create_cq": "driver",
    "create_cq_user": "driver", "ib_umem_get": "core", "mlx5_ib_db_map_user": "driver",
    "mlx5_comp_eqn_get": "driver", "mlx5_core_create_cq": "driver",
    "ib_uverbs_create_qp": "uverbs", "create_qp": "uverbs", "ib_create_qp_user": "core",
    "mlx5_ib_create_qp": "driver", "create_user_qp": "driver", "_create_user_qp": "driver",
    "mlx5_qpc_create_qp": "driver", "ib_create_qp_security": "core", "ib_qp_usecnt_inc": "core",
    "ib_uverbs_modify_qp": "uverbs", "modify_qp": "uverbs", "copy_ah_attr_from_uverbs": "uverbs",
    "ib_modify_qp_with_udata": "core", "_ib_modify_qp": "core", "rdma_fill_sgid_attr": "core",
    "rdma_check_ah_attr": "core", "rdma_get_gid_attr": "core", "ib_resolve_eth_dmac": "core",
    "rdma_check_gid_user_access": "core", "ib_resolve_unicast_gid_dmac": "core",
    "rdma_addr_find_l2_eth_by_grh": "core", "rdma_lag_get_ah_roce_slave": "core",
    "rdma_counter_bind_qp_auto": "core", "ib_security_modify_qp": "core", "mlx5_ib_modify_qp": "driver",
    "ib_modify_qp_is_ok": "core", "__mlx5_ib_modify_qp": "driver", "mlx5_set_path": "driver",
    "mlx5_core_qp_modify": "driver", "rdma_lag_put_ah_roce_slave": "core", "rdma_unfill_sgid_attr": "core",
    "ucma_write": "uverbs", "ucma_init_qp_attr": "uverbs", "rdma_init_qp_attr": "core",
    "cma_ib_init_qp_attr": "core",
    "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "uverbs", "rdma_read_gid_attr_ndev_rcu": "core",
    "rdma_put_gid_attr": "core",
}

# create_qp / create_cq name two functions each (uverbs_cmd.c and verbs.c / mlx5): the layer of
# the frame is given per tree below where it differs from LAYER's
_DRIVER_CREATE_QP_DEPTH = 5
_CORE_CREATE_QP_DEPTH = 3


def _frames(spec: list[tuple]) -> list[tuple[int, str, str | None]]:
    return [(d, fn, e[0] if e else None) for d, fn, *e in spec]


def _modify(arg: str, errno: str | None = None, *, local: bool = False) -> list[tuple]:
    """A modify_qp tree (reference: operations.modify_qp); `errno` fails INIT->RTR's neighbour
    resolution (`local`: the host's own route, no resolution attempted beyond it)."""
    e = (errno,) if errno else ()
    head = [(0, "ib_uverbs_modify_qp", *e), (1, "modify_qp", *e), (2, "rdma_lookup_get_uobject")]
    if arg == "RESET->INIT":
        body = [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), (4, "rdma_counter_bind_qp_auto"),
                (4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"), (6, "ib_modify_qp_is_ok"),
                (6, "__mlx5_ib_modify_qp"), (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
    elif arg == "RTR->RTS":
        body = [(2, "ib_modify_qp_with_udata"), (3, "_ib_modify_qp"), (4, "ib_security_modify_qp"),
                (5, "mlx5_ib_modify_qp"), (6, "ib_modify_qp_is_ok"), (6, "__mlx5_ib_modify_qp"),
                (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec")]
    else:  # INIT->RTR
        body = [(2, "copy_ah_attr_from_uverbs"), (2, "ib_modify_qp_with_udata", *e), (3, "_ib_modify_qp", *e),
                (4, "rdma_fill_sgid_attr"), (5, "rdma_check_ah_attr"), (5, "rdma_get_gid_attr"),
                (4, "ib_resolve_eth_dmac", *e), (5, "rdma_check_gid_user_access"),
                (5, "ib_resolve_unicast_gid_dmac", *e), (6, "rdma_addr_find_l2_eth_by_grh", *e)]
        if errno:
            body += [(4, "rdma_unfill_sgid_attr")]
        else:
            body += [(4, "rdma_lag_get_ah_roce_slave"), (4, "ib_security_modify_qp"), (5, "mlx5_ib_modify_qp"),
                     (6, "ib_modify_qp_is_ok"), (6, "__mlx5_ib_modify_qp"), (7, "mlx5_set_path"),
                     (7, "mlx5_core_qp_modify"), (8, "mlx5_cmd_exec"), (4, "rdma_lag_put_ah_roce_slave"),
                     (4, "rdma_unfill_sgid_attr")]
    return head + body + [(2, "rdma_lookup_put_uobject")]


_GOOD_GPU_PIN = [(0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
                 (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"), (2, "ib_umem_get_peer"),
                 (3, "__ib_umem_get"), (4, "pin_user_pages_fast", "EFAULT"), (4, "ib_peer_umem_get"),
                 (5, "ib_get_peer_client"), (2, "create_real_mr"), (3, "reg_create"), (4, "mlx5_cmd_exec"),
                 (3, "ib_umem_activate_invalidation_notifier"), (1, "rdma_restrack_add"),
                 (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")]

# name -> (operation, argument, frames of (depth, function, errno or None))
TREES: dict[str, tuple[str, str | None, list[tuple[int, str, str | None]]]] = {
    "alloc_pd": ("alloc_pd", None, _frames([
        (0, "ib_uverbs_alloc_pd"), (1, "uverbs_request"), (1, "rdma_alloc_begin_uobject"),
        (2, "ib_rdmacg_try_charge"), (1, "mlx5_ib_alloc_pd"), (2, "mlx5_cmd_exec"), (1, "rdma_restrack_add"),
        (1, "uverbs_response")])),
    "reg_mr_host": ("reg_mr", None, _frames([
        (0, "ib_uverbs_reg_mr"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
        (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr"), (2, "ib_umem_get_peer"),
        (3, "__ib_umem_get"), (4, "pin_user_pages_fast"), (4, "sg_alloc_append_table_from_pages"),
        (2, "create_real_mr"), (3, "alloc_cacheable_mr"), (1, "rdma_restrack_add"),
        (1, "rdma_lookup_put_uobject"), (1, "uverbs_response")])),
    "reg_mr_gpu": ("reg_mr", None, _frames(_GOOD_GPU_PIN)),
    "reg_mr_gpu_no_peer": ("reg_mr", None, _frames([
        (0, "ib_uverbs_reg_mr", "EFAULT"), (1, "rdma_alloc_begin_uobject"), (2, "ib_rdmacg_try_charge"),
        (1, "rdma_lookup_get_uobject"), (1, "mlx5_ib_reg_user_mr", "EFAULT"), (2, "ib_umem_get_peer", "EFAULT"),
        (3, "__ib_umem_get", "EFAULT"), (4, "pin_user_pages_fast", "EFAULT"), (4, "ib_peer_umem_get", "EFAULT"),
        (5, "ib_get_peer_client"), (1, "rdma_lookup_put_uobject"), (1, "rdma_alloc_abort_uobject")])),
    "create_cq_pad": ("create_cq", None, _frames([
        (0, "ib_uverbs_create_cq", "EOPNOTSUPP"), (1, "create_cq", "EOPNOTSUPP"), (2, "rdma_alloc_begin_uobject"),
        (3, "ib_rdmacg_try_charge"), (2, "mlx5_ib_create_cq", "EOPNOTSUPP"), (3, "create_cq_user", "EOPNOTSUPP"),
        (2, "rdma_alloc_abort_uobject")])),
    "create_cq": ("create_cq", None, _frames([
        (0, "ib_uverbs_create_cq"), (1, "create_cq"), (2, "rdma_alloc_begin_uobject"), (3, "ib_rdmacg_try_charge"),
        (2, "mlx5_ib_create_cq"), (3, "create_cq_user"), (4, "ib_umem_get"), (4, "mlx5_ib_db_map_user"),
        (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq"), (2, "rdma_restrack_add"), (2, "uverbs_response")])),
    "create_qp": ("create_qp", None, _frames([
        (0, "ib_uverbs_create_qp"), (1, "create_qp"), (2, "rdma_alloc_begin_uobject"), (3, "ib_rdmacg_try_charge"),
        (2, "rdma_lookup_get_uobject"), (2, "ib_create_qp_user"), (3, "create_qp"), (4, "mlx5_ib_create_qp"),
        (5, "create_qp"), (6, "create_user_qp"), (7, "_create_user_qp"), (8, "ib_umem_get"),
        (8, "mlx5_ib_db_map_user"), (7, "mlx5_qpc_create_qp"), (8, "mlx5_cmd_exec"), (3, "ib_create_qp_security"),
        (3, "rdma_restrack_add"), (2, "ib_qp_usecnt_inc"), (2, "rdma_lookup_put_uobject"), (2, "uverbs_response")])),
    "create_qp_cgroup": ("create_qp", None, _frames([
        (0, "ib_uverbs_create_qp", "EAGAIN"), (1, "create_qp", "EAGAIN"), (2, "rdma_alloc_begin_uobject", "EAGAIN"),
        (3, "ib_rdmacg_try_charge", "EAGAIN")])),
    "reset_init": ("modify_qp", "RESET->INIT", _frames(_modify("RESET->INIT"))),
    "init_rtr": ("modify_qp", "INIT->RTR", _frames(_modify("INIT->RTR"))),
    "init_rtr_no_route": ("modify_qp", "INIT->RTR", _frames(_modify("INIT->RTR", "EADDRNOTAVAIL", local=True))),
    "init_rtr_no_neighbour": ("modify_qp", "INIT->RTR", _frames(_modify("INIT->RTR", "ETIMEDOUT"))),
    # the same frames for the pingmesh agent's probe of a peer that does not answer (a tree of its own
    # only so that each tree names one family)
    "ping_rtr_no_neighbour": ("modify_qp", "INIT->RTR", _frames(_modify("INIT->RTR", "ETIMEDOUT"))),
    "rtr_rts": ("modify_qp", "RTR->RTS", _frames(_modify("RTR->RTS"))),
    "cm_attr": ("init_qp_attr", None, _frames([
        (0, "ucma_write"), (1, "ucma_init_qp_attr"), (2, "rdma_init_qp_attr"), (3, "cma_ib_init_qp_attr")])),
    "cm_attr_no_connection": ("init_qp_attr", None, _frames([
        (0, "ucma_write", "EINVAL"), (1, "ucma_init_qp_attr", "EINVAL"), (2, "rdma_init_qp_attr", "EINVAL"),
        (3, "cma_ib_init_qp_attr", "EINVAL")])),
    "gid_entry": ("query_gid", None, _frames([
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr"),
        (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr")])),
    "gid_entry_empty": ("query_gid", None, _frames([
        (0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (1, "rdma_get_gid_attr", "ENODATA")])),
}

# family -> (origin probe, errno, origin layer)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "gid_slot_empty": ("rdma_get_gid_attr", "ENODATA", "core"),
    "gpu_pin_absorbed": ("pin_user_pages_fast", "EFAULT", "core"),
    "cqe_pad_refused": ("create_cq_user", "EOPNOTSUPP", "driver"),
    "qp_cgroup_retry": ("ib_rdmacg_try_charge", "EAGAIN", "core"),
    "pingmesh_unanswered": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "port_down": ("rdma_addr_find_l2_eth_by_grh", "EADDRNOTAVAIL", "core"),
    "port_down.echo": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"),
    "peermem_unloaded": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "peermem_unloaded.echo": ("cma_ib_init_qp_attr", "EINVAL", "core"),
}
TREE_FAMILY = {
    "gid_entry_empty": "gid_slot_empty", "reg_mr_gpu": "gpu_pin_absorbed", "create_cq_pad": "cqe_pad_refused",
    "create_qp_cgroup": "qp_cgroup_retry", "init_rtr_no_route": "port_down",
    "init_rtr_no_neighbour": "port_down.echo", "reg_mr_gpu_no_peer": "peermem_unloaded",
    "cm_attr_no_connection": "peermem_unloaded.echo", "ping_rtr_no_neighbour": "pingmesh_unanswered",
}
ROUTINE = ("gid_slot_empty", "gpu_pin_absorbed", "cqe_pad_refused", "qp_cgroup_retry", "pingmesh_unanswered")
# the host the pingmesh still probes though it was retired before the window (it never answers)
RETIRED = "fg43-h17"
ROOT_CAUSES = ("port_down", "peermem_unloaded")
ECHO = {"port_down": "port_down.echo", "peermem_unloaded": "peermem_unloaded.echo"}
ROOT_HOST = {"port_down": "fg43-h03", "peermem_unloaded": "fg43-h11"}
# each cause's span as fractions of the window
SPAN = {"port_down": (0.28, 0.56), "peermem_unloaded": (0.44, 0.78)}

HOSTS = [f"fg43-h{i:02d}" for i in range(1, 17)]
# name -> (job id, hosts, framework, process name, first start in minutes)
JOBS: dict[str, tuple[str, list[str], str, str, float]] = {
    "train-a": ("5101", [f"fg43-h{i:02d}" for i in range(1, 9)], "nccl", "python3", 2.0),
    "train-b": ("5102", [f"fg43-h{i:02d}" for i in range(9, 15)], "ucx-rdmacm", "ucx_rank", 4.0),
    "finetune-c": ("5103", ["fg43-h03", "fg43-h07", "fg43-h11", "fg43-h15", "fg43-h16"], "nccl", "python3", 6.0),
    "eval-d": ("5104", ["fg43-h01", "fg43-h09", "fg43-h15", "fg43-h16"], "nccl", "python3", 8.0),
    "bench-e": ("5105", ["fg43-h12", "fg43-h13"], "nccl", "all_reduce_perf", 10.0),
}
RANKS_PER_HOST = 4
RELEASE = "5.15.0-119-generic"
VENDOR = "mlx5"
PROBES = sorted({fn for _, _, frames in TREES.values() for _, fn, _ in frames})
SNAPSHOT_NS = 5_000_000_000
SEC = 1_000_000_000
MS = 1_000_000
US = 1_000
DAY = dt.date(2026, 3, 10)


def _layer(tree: str, depth: int, fn: str) -> str:
    if fn == "create_qp" and depth == _DRIVER_CREATE_QP_DEPTH:
        return "driver"
    if fn == "create_qp" and depth == _CORE_CREATE_QP_DEPTH:
        return "core"
    return LAYER[fn]


def _self_range(fn: str, errno: str | None) -> tuple[int, int, int]:
    """A frame's own time: base + randint(lo, hi) microseconds, as (base ns, lo, hi)."""
    if fn == "rdma_addr_find_l2_eth_by_grh" and errno == "ETIMEDOUT":
        return 1000 * MS, 0, 400
    if fn == "mlx5_cmd_exec":
        return 0, 150, 600
    if fn in ("pin_user_pages_fast", "ib_peer_umem_get"):
        return 0, 40, 300
    return 0, 1, 25


def _children(frames) -> list[list[int]]:
    children: list[list[int]] = [[] for _ in frames]
    stack: list[int] = []
    for i, (d, _, _) in enumerate(frames):
        while stack and frames[stack[-1]][0] >= d:
            stack.pop()
        if stack:
            children[stack[-1]].append(i)
        stack.append(i)
    return children


_CHILDREN = {name: _children(frames) for name, (_, _, frames) in TREES.items()}
_SELF_RANGES = {name: [_self_range(fn, e) for _, fn, e in frames] for name, (_, _, frames) in TREES.items()}


def _timings(rng: random.Random, tree: str) -> tuple[list[int], list[int]]:
    """Entry offsets and latencies of a tree's pre-order frames (children inside their parent)."""
    # each frame's own time (_self_range, one draw a frame in pre-order); a frame enters half its
    # own time into its parent's, after its elder siblings; its latency is its own time and its
    # children's latencies
    randint = rng.randint
    selfs = [base + randint(lo, hi) * US for base, lo, hi in _SELF_RANGES[tree]]
    children = _CHILDREN[tree]
    n = len(selfs)
    lat = list(selfs)
    for i in range(n - 1, -1, -1):  # children follow their parent in pre-order
        for c in children[i]:
            lat[i] += lat[c]
    start = [0] * n
    for i in range(n):
        cur = start[i] + selfs[i] // 2
        for c in children[i]:
            start[c] = cur
            cur += lat[c]
    return start, lat


class _Fleet:
    def __init__(self, seed: int, t0: int, t1: int):
        self.rng = random.Random(seed)
        self.t0, self.t1 = t0, t1
        self.calls: dict[str, list] = defaultdict(list)  # host -> (end ns, tree, repeat)
        self.records: dict[str, list] = defaultdict(list)  # host -> record dicts
        self.pids = {h: 4000 + 97 * i for i, h in enumerate(HOSTS)}
        self.boot = {h: self.rng.randint(3, 40) * 86400 * SEC + self.rng.randint(0, 86400) * SEC for h in HOSTS}
        self.seq = Counter()
        self.tick = 4 * MS
        self.cm_retries = 0

    def pid(self, host: str) -> int:
        self.pids[host] += self.rng.randint(3, 40)
        return self.pids[host]

    def call(self, host: str, tree: str, start: int, *, pid: int, ppid: int, comm: str, job: str | None,
             meta: dict | None, timed: bool = True, recorded: bool = True, repeat: int = 1,
             truth: tuple | None = None) -> int:
        """One call tree of `host` entering at `start` (wall ns); returns its end."""
        op, arg, frames = TREES[tree]
        offs, lats = _timings(self.rng, tree)
        end = start + lats[0]
        self.calls[host].append((end, tree, repeat))
        if not recorded:
            return end
        self.seq[host] += 1
        tid = f"{host}:1:{self.seq[host]:07d}"
        if timed:
            ts = [self.boot[host] + (start - self.t0) + o for o in offs]
            lat: list[int | None] = list(lats)
            s, e = start, end
        else:  # outside a capture window: the tick the root returned in, no latency
            tickt = end - end % self.tick
            ts = [self.boot[host] + (tickt - self.t0)] * len(frames)
            lat = [None] * len(frames)
            s = e = tickt
        failing = any(err for _, _, err in frames)
        root_err = frames[0][2]
        self.records[host].append({
            "trace_id": tid, "frames": frames, "ts": ts, "lat": lat, "pid": pid, "ppid": ppid, "comm": comm,
            "tree": tree, "kind": "failure" if failing else "good", "command": op, "arg": arg,
            "exit_status": -ERRNO[root_err] if root_err else 0, "start": s, "end": e, "job": job,
            "meta": meta, "repeat": repeat if repeat > 1 else None, "truth": truth,
        })
        return end


def _active(cause: str, host: str, t: int, spans: dict) -> bool:
    return cause in spans and ROOT_HOST[cause] == host and spans[cause][0] <= t < spans[cause][1]


def _rank_startup(f: _Fleet, job: str, attempt: int, t_start: int, spans: dict, restart: int) -> tuple[list, int | None]:
    """Every rank's calls of one attempt, as planned (before the launcher's kill): a list of
    per-rank plans [(host, pid, ppid, [(tree, start, end, truth)...], died_at)] and the first death."""
    job_id, hosts, framework, comm, _ = JOBS[job]
    rng = f.rng
    meta = {"job": job, "framework": framework, "image": "pytorch-24.07" if framework == "nccl" else "hpcx-2.20",
            "slurm_restart": str(restart)}
    m_dead = [h for h in hosts if _active("peermem_unloaded", h, t_start, spans)]
    p_down = [h for h in hosts if _active("port_down", h, t_start, spans)]
    plans = []
    first_death = None
    for host in hosts:
        ppid = f.pid(host)
        for _lr in range(RANKS_PER_HOST):
            pid = f.pid(host)
            t = t_start + rng.randint(200, 900) * MS
            seq: list[tuple] = []
            died = None

            def do(tree: str, truth=None, seq: list = seq) -> int:
                nonlocal t
                t += rng.randint(100, 2000) * US
                start = t
                # a bound on the call's duration (its latencies are drawn when it is made): the
                # launcher's kill ends a rank before a call that would not return in time
                t += 1450 * MS if tree == "init_rtr_no_neighbour" else 5 * MS
                seq.append((tree, start, truth, t))
                return t

            do("alloc_pd")
            do("reg_mr_host")
            for _ in range(2):
                if host in m_dead:
                    died = do("reg_mr_gpu_no_peer", ("peermem_unloaded", "root"))
                    break
                do("reg_mr_gpu", ("gpu_pin_absorbed", "routine"))
            if died is None:
                do("create_cq_pad", ("cqe_pad_refused", "routine"))
                do("create_cq")
                peers = [h for h in hosts if h != host]
                for _ in peers:
                    if rng.random() < 0.07:
                        do("create_qp_cgroup", ("qp_cgroup_retry", "routine"))
                        t += rng.randint(5, 40) * MS
                    do("create_qp")
                for _ in peers:
                    if framework == "ucx-rdmacm":
                        do("cm_attr")
                    do("reset_init")
                order = peers[:]
                rng.shuffle(order)
                for peer in order:
                    if peer in m_dead:
                        if framework == "ucx-rdmacm":  # the CM handshake was rejected: no RTR attributes
                            died = do("cm_attr_no_connection", ("peermem_unloaded.echo", "echo"))
                            for _ in range(f.cm_retries):  # the variant: UCX asks again, then gives up
                                t += rng.randint(300, 600) * MS
                                died = do("cm_attr_no_connection", ("peermem_unloaded.echo", "echo"))
                        else:  # waits on the bootstrap for QP info that never comes
                            died = -1
                        break
                    if framework == "ucx-rdmacm":
                        do("cm_attr")
                    if host in p_down:
                        died = do("init_rtr_no_route", ("port_down", "root"))
                        break
                    if peer in p_down:
                        died = do("init_rtr_no_neighbour", ("port_down.echo", "echo"))
                        break
                    do("init_rtr")
                    if framework == "ucx-rdmacm":
                        do("cm_attr")
                    do("rtr_rts")
            if died is not None and died > 0:
                first_death = died if first_death is None else min(first_death, died)
            plans.append((host, pid, ppid, seq, died, meta))
    return plans, first_death


def _run_job(f: _Fleet, job: str, spans: dict) -> list[dict]:
    job_id, hosts, framework, comm, first = JOBS[job]
    rng = f.rng
    t = f.t0 + int(first * 60 * SEC)
    attempts = []
    restart = 0
    while t < f.t1 - 6 * 60 * SEC:
        plans, first_death = _rank_startup(f, job, len(attempts), t, spans, restart)
        kill = first_death + rng.randint(2000, 4000) * MS if first_death is not None else None
        for host, pid, ppid, seq, _died, meta in plans:
            for tree, start, truth, bound in seq:
                if kill is not None and bound > kill:
                    break
                f.call(host, tree, start, pid=pid, ppid=ppid, comm=comm, job=job_id, meta=meta,
                       truth=truth)
        attempts.append({"job": job, "start": t, "failed": kill is not None})
        if kill is not None:
            restart += 1
            t = kill + rng.randint(100, 160) * SEC
            continue
        # healthy: runs 20-30 minutes unless a fault starts on one of its hosts (the data path dies,
        # no control-path error)
        end = t + rng.randint(20 * 60, 30 * 60) * SEC
        starts = [spans[c][0] for c in spans if ROOT_HOST[c] in hosts and t < spans[c][0] < end]
        if starts:
            restart += 1
            t = min(starts) + rng.randint(5, 30) * SEC + rng.randint(60, 120) * SEC
        else:
            t = end + rng.randint(30, 90) * SEC
    return attempts


def _agent(f: _Fleet, host: str) -> None:
    """The node agent's GID-table read once a minute: 3 filled slots, 5 empty (one record standing
    for the five, the kernel aggregating identical trees); timed in the capture window that opens
    every fifth minute, otherwise only the failures are recorded (untimed)."""
    rng = f.rng
    pid, ppid = f.pid(host), 1
    offset = rng.randint(0, 50) * SEC
    minute = 0
    while True:
        t = f.t0 + minute * 60 * SEC + offset + rng.randint(0, 500) * MS
        if t >= f.t1 - 10 * SEC:
            break
        timed = minute % 5 == 0
        for _ in range(3):
            t = f.call(host, "gid_entry", t, pid=pid, ppid=ppid, comm="gidmon", job=None, meta=None,
                       timed=timed, recorded=timed) + rng.randint(20, 200) * US
        f.call(host, "gid_entry_empty", t, pid=pid, ppid=ppid, comm="gidmon", job=None, meta=None,
               timed=timed, repeat=5, truth=("gid_slot_empty", "routine"))
        minute += 1


def _pingmesh(f: _Fleet, host: str, spans: dict) -> None:
    """The pingmesh agent: every two minutes an RC probe (RESET->INIT, INIT->RTR, RTR->RTS) to the
    retired host and three others. A peer that does not answer times the RTR out (ETIMEDOUT at
    neighbour resolution) and the agent reports it and goes on: the retired host every round, and
    h03 while its port is down. On h03 itself while its port is down every RTR fails at once
    (EADDRNOTAVAIL: the root cause's own records, whoever the caller). Only failures are recorded
    outside the capture windows (the first minute of every five)."""
    rng = f.rng
    pid, ppid = f.pid(host), 1
    t = f.t0 + rng.randint(0, 119) * SEC
    others = [h for h in HOSTS if h != host]
    while t < f.t1 - 30 * SEC:
        round_start = t
        for target in [RETIRED, *rng.sample(others, 3)]:
            timed = ((t - f.t0) // SEC) % 300 < 60
            kw = {"pid": pid, "ppid": ppid, "comm": "pingmesh", "job": None, "meta": None, "timed": timed}
            t = f.call(host, "reset_init", t, recorded=timed, **kw) + rng.randint(50, 400) * US
            if _active("port_down", host, t, spans):
                t = f.call(host, "init_rtr_no_route", t, truth=("port_down", "root"), **kw)
            elif target == RETIRED or _active("port_down", target, t, spans):
                t = f.call(host, "ping_rtr_no_neighbour", t, truth=("pingmesh_unanswered", "routine"), **kw)
            else:
                t = f.call(host, "init_rtr", t, recorded=timed, **kw) + rng.randint(50, 400) * US
                t = f.call(host, "rtr_rts", t, recorded=timed, **kw)
            t += rng.randint(5, 50) * MS
        t = round_start + 120 * SEC + rng.randint(-2000, 2000) * MS


def _events_frame(f: _Fleet, host: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    recs = f.records[host]
    cols: dict[str, list] = {k: [] for k in ("trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe",
                                             "layer", "depth", "ret", "errno", "latency_ns", "arg")}
    truth: dict[str, list] = {k: [] for k in ("trace_id", "kind", "root_cause", "bifurcation_probe",
                                              "bifurcation_errno", "origin_layer", "expected_error", "held_out")}
    traces: dict[str, list] = {k: [] for k in ("trace_id", "kind", "command", "exit_status", "start_time",
                                               "end_time", "kernel_release", "lost_events", "job_id", "metadata",
                                               "repeat_count")}
    # each tree's frames column by column: probe, layer, depth, ret, errno
    shapes = {tree: tuple(list(c) for c in zip(*((fn, _layer(tree, d, fn), d, -ERRNO[e] if e else 0, e)
                                                  for d, fn, e in frames), strict=True))
              for tree, (_, _, frames) in TREES.items()}
    for i, r in enumerate(recs):
        truth.setdefault("host", []).append(host)
        traces.setdefault("host", []).append(host)
        n = len(r["frames"])
        if len(r["ts"]) != n or len(r["lat"]) != n:
            raise ValueError(f"{r['trace_id']}: a timing for every frame")
        probes, layers, depths, rets, errnos = shapes[r["tree"]]
        cols["trace_id"] += [r["trace_id"]] * n
        cols["seq"] += range(n)
        cols["ts_ns"] += r["ts"]
        cols["pid"] += [r["pid"]] * n
        cols["tid"] += [r["pid"]] * n
        cols["ppid"] += [r["ppid"]] * n
        cols["comm"] += [r["comm"]] * n
        cols["probe"] += probes
        cols["layer"] += layers
        cols["depth"] += depths
        cols["ret"] += rets
        cols["errno"] += errnos
        cols["latency_ns"] += r["lat"]
        cols["arg"] += [r["arg"]] + [None] * (n - 1)
        traces["trace_id"].append(r["trace_id"])
        traces["kind"].append(r["kind"])
        traces["command"].append(r["command"])
        traces["exit_status"].append(r["exit_status"])
        traces["start_time"].append(r["start"])
        traces["end_time"].append(r["end"])
        traces["kernel_release"].append(RELEASE)
        traces["lost_events"].append(0)
        traces["job_id"].append(r["job"])
        traces["metadata"].append(metadata_list(r["meta"]))
        traces["repeat_count"].append(r["repeat"])
        label = r["truth"][0] if r["truth"] else None
        truth["trace_id"].append(r["trace_id"])
        truth["kind"].append(r["kind"])
        truth["root_cause"].append(label)
        probe, errno, layer = FAMILIES[label] if label else (None, None, None)
        truth["bifurcation_probe"].append(probe)
        truth["bifurcation_errno"].append(errno)
        truth["origin_layer"].append(layer)
        truth["expected_error"].append(label in ROUTINE)
        truth["held_out"].append(label is None and i % 10 == 3)
    # (the nested metadata through Arrow: polars converts it element by element)
    tr = frame(traces, metadata=pl.List(pl.Struct({"key": pl.String, "value": pl.String}))).with_columns(pl.from_epoch(pl.col("start_time"), "ns").dt.replace_time_zone("UTC"),
                                           pl.from_epoch(pl.col("end_time"), "ns").dt.replace_time_zone("UTC"))
    ev = pl.DataFrame(cols, schema_overrides={"latency_ns": pl.Int64, "errno": pl.String, "arg": pl.String})
    ev = ev.join(tr, on="trace_id", how="left", maintain_order="left")
    return ev, pl.DataFrame(truth)


def _counters_frame(f: _Fleet, host: str, n_snap: int) -> pl.DataFrame:
    calls = Counter()
    fails: Counter = Counter()
    per_tree = {name: (Counter(fn for _, fn, _ in frames), Counter((fn, e) for _, fn, e in frames if e))
                for name, (_, _, frames) in TREES.items()}
    per_snap: Counter = Counter()  # (snapshot, tree) -> calls (each standing for `repeat`)
    for end, tree, repeat in f.calls[host]:
        k = min(n_snap - 1, max(0, (end - f.t0) // SNAPSHOT_NS))
        per_snap[(k, tree)] += repeat
    for (k, tree), weight in per_snap.items():
        inv, fl = per_tree[tree]
        for fn, n in inv.items():
            calls[(k, fn)] += n * weight
        for (fn, e), n in fl.items():
            fails[(k, fn, e)] += n * weight
    probe_idx = {p: i for i, p in enumerate(PROBES)}
    rows = n_snap * len(PROBES)
    inv_col = [0] * rows
    fail_col = [0] * rows
    for (k, fn), n in calls.items():
        inv_col[k * len(PROBES) + probe_idx[fn]] = n
    err_idx: list[int] = []
    err_no: list[str] = []
    err_n: list[int] = []
    for (k, fn, e), n in sorted(fails.items()):
        idx = k * len(PROBES) + probe_idx[fn]
        fail_col[idx] += n
        err_idx.append(idx)
        err_no.append(e)
        err_n.append(n)
    errs = (pl.DataFrame({"row": err_idx, "errno": err_no, "count": err_n},
                         schema={"row": pl.Int64, "errno": pl.String, "count": pl.Int64})
            .group_by("row", maintain_order=True).agg(pl.struct("errno", "count").alias("errno_counts")))
    snaps = [f.t0 + (k + 1) * SNAPSHOT_NS for k in range(n_snap) for _ in PROBES]
    base = pl.DataFrame({
        "row": list(range(rows)), "host": [host] * rows, "snapshot_time": snaps, "interval_s": [5.0] * rows,
        "kernel_release": [RELEASE] * rows, "vendor": [VENDOR] * rows, "probe_set": ["rdma"] * rows,
        "probe": PROBES * n_snap, "layer": [LAYER[p] for p in PROBES] * n_snap, "live": [True] * rows,
        "invocations": inv_col, "failures": fail_col, "lost_records": [0] * rows,
    })
    empty = pl.lit([], pl.List(pl.Struct({"errno": pl.String, "count": pl.Int64})))
    return base.join(errs, on="row", how="left", maintain_order="left").with_columns(
        pl.col("errno_counts").fill_null(empty),
        pl.from_epoch(pl.col("snapshot_time"), "ns").dt.replace_time_zone("UTC")).drop("row")


def generate(root, *, hours: float = 3.0, seed: int = 43, faults: bool = True, cm_retries: int = 0,
             day: str = DAY.isoformat()) -> dict:
    """Write the fleet under `root` (events, counters + their 15-minute summaries, truth) and
    return a summary of what is in it. `cm_retries`: the variant whose train-b ranks ask the CM
    again that many times (300-600 ms apart, the handshake rejected each time) before giving up.
    `day`: the date the window starts at 00:00 UTC."""
    root = Path(root)
    t0 = int(dt.datetime.combine(dt.date.fromisoformat(day), dt.time(0, 0), tzinfo=dt.UTC).timestamp()) * SEC
    t1 = t0 + int(hours * 3600 * SEC)
    f = _Fleet(seed, t0, t1)
    f.cm_retries = cm_retries
    spans = {c: (t0 + int(a * (t1 - t0)), t0 + int(b * (t1 - t0))) for c, (a, b) in SPAN.items()} if faults else {}
    attempts = []
    for job in JOBS:
        attempts += _run_job(f, job, spans)
    for host in HOSTS:
        _agent(f, host)
        _pingmesh(f, host, spans)
    n_snap = int((t1 - t0) // SNAPSHOT_NS)
    date = day
    labels: Counter = Counter()
    hosts_of: dict[str, set] = defaultdict(set)
    for host in HOSTS:
        f.records[host].sort(key=lambda r: (r["start"], r["trace_id"]))
        ev, truth = _events_frame(f, host)
        write_partition(ev, root, "events", date, host, "part-0000.parquet", durable=False)
        write_partition(truth, root, "truth", date, host, "part-0000.parquet", durable=False)
        counters = _counters_frame(f, host, n_snap)
        path = write_partition(counters, root, "counters", date, host, "part-0000.parquet", durable=False)
        write_counter_buckets(path, durable=False)
        for r in f.records[host]:
            if r["truth"]:
                labels[r["truth"][0]] += 1
                hosts_of[r["truth"][0]].add(host)
    iso = {c: [dt.datetime.fromtimestamp(a / SEC, dt.UTC).isoformat(), dt.datetime.fromtimestamp(b / SEC, dt.UTC).isoformat()]
           for c, (a, b) in spans.items()}
    return {
        "hosts": HOSTS, "jobs": {j: {"job_id": v[0], "hosts": v[1], "framework": v[2], "comm": v[3]} for j, v in JOBS.items()},
        "faults": faults, "spans": iso, "root_hosts": {c: ROOT_HOST[c] for c in spans},
        "records": {k: labels[k] for k in sorted(labels)}, "hosts_of": {k: sorted(v) for k, v in sorted(hosts_of.items())},
        "attempts": {j: sum(1 for a in attempts if a["job"] == j) for j in JOBS},
        "failed_attempts": {j: sum(1 for a in attempts if a["job"] == j and a["failed"]) for j in JOBS},
        "traces": sum(len(r) for r in f.records.values()),
    }
