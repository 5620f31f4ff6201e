"""fleetgen26's fleet: Slurm GPU hosts on one upstream kernel, two container images, faults that
follow a job's origin (see __init__.py for the summary).

The fleet
---------
`hosts` mlx5 RoCE hosts (gpu-RR-SS, racks of 8), kernel 6.8.0-52-generic (upstream: ib_umem_get, no
OFED peer-memory layer; GPU buffers are registered through dma-buf, the REG_DMABUF_MR ioctl). Every
host runs one 8-rank job at a time (Slurm; a job ends, the next starts a minute or two later) and a
per-node checkpoint agent (`ckpt-agent`, a systemd unit with LimitMEMLOCK set, write() ABI).

Two container images: `ngc-24.03` (rdma-core 39: create_cq and create_qp through write(), call
trees rooted at the write handler) and `ngc-25.02` (rdma-core 54: the CQ_CREATE and QP_CREATE ioctl
methods, rooted at ib_uverbs_ioctl -> ib_uverbs_cmd_verbs -> ib_uverbs_run_method -> the method's
handler, the driver frames two levels deeper; and the GID table read through QUERY_GID_ENTRY, where
the old image reads sysfs, which the tracer does not see). The new image's share of job starts grows
from 20 % to 80 % over the window. alloc_pd, modify_qp, reg_mr, dereg_mr, destroy_qp and dealloc_pd
go through write() in both.

The tracer: every traceable (non-inline) function of those chains, 60 s snapshots (`-i 1m`),
capture windows of 10 s every 90 s (host-specific phase) in which good traces are sampled (3 per
chain per window) and failures timed; outside them a failure is recorded untimed (latency null,
start = end = the 4 ms tick the root returned in). In-kernel aggregation: per host, interval and
chain the first 3 failures are records, the rest one example with `repeat_count`.

Truth (why each label)
----------------------
login03_memlock_zero (root cause): a configuration push on login node login03 (at 28 % of the
window) leaves `memlock 0` in its limits.d; Slurm's PropagateResourceLimits carries the submitting
shell's RLIMIT_MEMLOCK into the job, so every rank of a job submitted there dies at its first pin:
create_cq -> mlx5_ib_create_cq -> create_cq_user -> ib_umem_get fails can_do_mlock() (EPERM: limit 0,
no CAP_IPC_LOCK). A third of the jobs, wherever they land: most hosts of the fleet, a few a host,
and in both images' chain shapes (write handler / ioctl method). One fault (one change on one
login node), one cluster: an SRE fixes one file. Reverted at 72 % of the window.
gpu3_bar1_exhausted (root cause, the subtle one): on one host, a leaked mapping holds GPU 3's BAR1
aperture from 15 % of the window on; a job that registers enough GPU memory there (70 % of them)
fails the dma-buf attach of its rank 3 (reg_dmabuf_mr -> mlx5_ib_reg_user_mr_dmabuf ->
ib_umem_dmabuf_get -> dma_buf_dynamic_attach: ENOMEM, the exporter's attach refused) and NCCL
aborts the job: the seven other ranks are killed with no kernel error of their own. Rare (a
failure every few jobs on one host) and mostly outside capture windows.
gid_scan_empty_slots (routine): the new image's NCCL scans GID indices 0-15 at every rank start;
slots 6-15 are empty (ENODATA at rdma_get_gid_attr under the QUERY_GID_ENTRY method) and the rank
goes on with the index it found. Its rate grows with the migration on every host: no fault.
ckpt_rcache_memlock_evict (routine): the checkpoint agent registers staging buffers in bursts;
past its unit's LimitMEMLOCK the pin accounting refuses (reg_mr -> mlx5_ib_reg_user_mr ->
ib_umem_get: ENOMEM), its registration cache deregisters the least recently used buffer and the
retry succeeds. Every host, every burst, the agent runs for hours: routine -- the other check of
the same limit as login03's EPERM, at the same frame.
Artefacts (no fault): the migration (two shapes of one operation), the killed ranks of an aborted
job, a host drained at 45 % of the window whose running job is cancelled, its tracer down for three
minutes across a reboot (no snapshots; trace ids with a new boot id after), jobs back 20 minutes
after the drain.

Each trace's truth: bifurcation = origin (every edge down to the origin is in good traces of the
same operation and shape), origin layer = the origin frame's layer; good traces 10 % held out.
"""

from __future__ import annotations

import errno as errno_mod
import json
import math
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, metadata_list, write_partition

KERNEL = "6.8.0-52-generic"
START = datetime(2025, 3, 11, 7, 0, tzinfo=UTC)
SNAP_S = 60.0
WINDOW_EVERY_S = 90.0
WINDOW_S = 10.0
TICK_S = 0.004
K_RECORDS = 3
GOOD_CAP = 3
RANKS = 8
IMAGES = {"ngc-24.03": "39.0", "ngc-25.02": "54.0"}
OLD, NEW = "ngc-24.03", "ngc-25.02"
ERRNO_NUM = {name: num for num, name in errno_mod.errorcode.items()}
LOGINS = ("login01", "login02", "login03")

# ------------------------------------------------------------------------------------------
# call trees, from reference/rdma_control_path.yaml (two spaces an indent level; "!ERRNO" marks a
# frame returning that errno; "name@layer" where one name is three functions)
# ------------------------------------------------------------------------------------------
_DRIVER = {"create_cq_user", "check_qp_type", "process_udata_size", "check_qp_attr", "create_user_qp",
           "set_rq_size", "_create_user_qp", "alloc_bfreg", "set_user_buf_size", "create_resource_common",
           "create_real_mr", "alloc_cacheable_mr", "mkey_cache_ent_from_rb_key", "_mlx5_mr_cache_alloc",
           "__mlx5_ib_modify_qp", "set_qpc_atomic_flags", "get_tx_affinity", "validate_rd_atomic",
           "pagefault_dmabuf_mr", "destroy_qp_common"}
_UVERBS = {"uverbs_request", "uverbs_response", "modify_qp", "create_cq"}


def _layer(probe: str) -> str:
    if probe.startswith("mlx5") or probe in _DRIVER:
        return "driver"
    if probe.startswith("ib_uverbs") or probe in _UVERBS:
        return "uverbs"
    return "core"


def _indent(text: str, levels: int) -> str:
    pad = "  " * levels
    return "\n".join(pad + line for line in text.strip("\n").splitlines() if line.strip())


def _tree(text: str) -> list[tuple[int, str, str, str | None]]:
    rows = []
    for line in text.strip("\n").splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        parts = line.split()
        probe, _, layer = parts[0].partition("@")
        err = parts[1][1:] if len(parts) > 1 else None
        rows.append((depth, probe, layer or _layer(probe), err))
    return rows


ALLOC_BEGIN = """
rdma_alloc_begin_uobject
  alloc_uobj
  alloc_begin_idr_uobject
    idr_add_uobj
    ib_rdmacg_try_charge
"""
IOCTL_TOP = """
ib_uverbs_ioctl{e}
  ib_uverbs_cmd_verbs{e}
    ib_uverbs_run_method{e}
"""


def _ioctl(body: str, err: str = "") -> str:
    e = f" !{err}" if err else ""
    return IOCTL_TOP.format(e=e).strip("\n") + "\n" + _indent(body, 3)


CQ_DRIVER = """
mlx5_ib_create_cq
  create_cq_user
    ib_umem_get
      pin_user_pages_fast
      sg_alloc_append_table_from_pages
    mlx5_ib_db_map_user
  mlx5_comp_eqn_get
  mlx5_core_create_cq
    mlx5_cmd_do
    mlx5_eq_add_cq
"""
CQ_DRIVER_EPERM = """
mlx5_ib_create_cq !EPERM
  create_cq_user !EPERM
    ib_umem_get !EPERM
"""
QP_CORE = """
ib_create_qp_user
  create_qp@core
    mlx5_ib_create_qp
      check_qp_type
      process_udata_size
      check_qp_attr
      create_qp@driver
        create_user_qp
          set_rq_size
          _create_user_qp
            alloc_bfreg
            set_user_buf_size
            ib_umem_get
              pin_user_pages_fast
              sg_alloc_append_table_from_pages
            mlx5_ib_db_map_user
          mlx5_qpc_create_qp
            mlx5_cmd_exec
            create_resource_common
  ib_create_qp_security
  rdma_restrack_add
"""
REG_MR_DRIVER = """
mlx5_ib_reg_user_mr
  mlx5r_umr_resource_init
  ib_umem_get
    pin_user_pages_fast
    sg_alloc_append_table_from_pages
  create_real_mr
    alloc_cacheable_mr
      mkey_cache_ent_from_rb_key
      _mlx5_mr_cache_alloc
    mlx5r_umr_update_mr_pas
"""
DMABUF_DRIVER = """
mlx5_ib_reg_user_mr_dmabuf
  mlx5r_umr_resource_init
  ib_umem_dmabuf_get
    dma_buf_get
    dma_buf_dynamic_attach
  alloc_cacheable_mr
    mkey_cache_ent_from_rb_key
    _mlx5_mr_cache_alloc
  mlx5_ib_init_dmabuf_mr
    pagefault_dmabuf_mr
      ib_umem_dmabuf_map_pages
        dma_buf_map_attachment
        dma_resv_wait_timeout
      mlx5r_umr_update_mr_pas
"""
DMABUF_DRIVER_ENOMEM = """
mlx5_ib_reg_user_mr_dmabuf !ENOMEM
  mlx5r_umr_resource_init
  ib_umem_dmabuf_get !ENOMEM
    dma_buf_get
    dma_buf_dynamic_attach !ENOMEM
"""
MODIFY_DRIVER = {
    "RESET->INIT": """
ib_security_modify_qp
  mlx5_ib_modify_qp
    ib_modify_qp_is_ok
    __mlx5_ib_modify_qp
      set_qpc_atomic_flags
      mlx5_core_qp_modify
        mlx5_cmd_exec
""",
    "INIT->RTR": """
ib_security_modify_qp
  mlx5_ib_modify_qp
    ib_modify_qp_is_ok
    validate_rd_atomic
    __mlx5_ib_modify_qp
      get_tx_affinity
      mlx5_set_path
      mlx5_core_qp_modify
        mlx5_cmd_exec
""",
    "RTR->RTS": """
ib_security_modify_qp
  mlx5_ib_modify_qp
    ib_modify_qp_is_ok
    __mlx5_ib_modify_qp
      mlx5_core_qp_modify
        mlx5_cmd_exec
""",
}
MODIFY_CORE = {
    "RESET->INIT": "rdma_counter_bind_qp_auto\n",
    "INIT->RTR": """
rdma_fill_sgid_attr
  rdma_check_ah_attr
  rdma_get_gid_attr
ib_resolve_eth_dmac
  rdma_check_gid_user_access
  ib_resolve_unicast_gid_dmac
    rdma_addr_find_l2_eth_by_grh
rdma_lag_get_ah_roce_slave
  rdma_read_gid_attr_ndev_rcu
""",
    "RTR->RTS": "",
}
MODIFY_AFTER = {"RESET->INIT": "", "INIT->RTR": "rdma_lag_put_ah_roce_slave\nrdma_unfill_sgid_attr\n",
                "RTR->RTS": ""}


def _modify(transition: str) -> str:
    inner = (MODIFY_CORE[transition].strip("\n") + "\n" + MODIFY_DRIVER[transition].strip("\n") + "\n"
             + MODIFY_AFTER[transition]).strip("\n")
    return ("ib_uverbs_modify_qp\n  uverbs_request\n  modify_qp\n    rdma_lookup_get_uobject\n"
            "    ib_modify_qp_with_udata\n      _ib_modify_qp\n" + _indent(inner, 4)
            + "\n    rdma_lookup_put_uobject")


_TEXT = {
    "query_gid_ok": _ioctl("""
ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY
  rdma_get_gid_attr
  rdma_read_gid_attr_ndev_rcu
  rdma_put_gid_attr
"""),
    "query_gid_enodata": _ioctl("""
ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY !ENODATA
  rdma_get_gid_attr !ENODATA
""", "ENODATA"),
    "query_port": """
ib_uverbs_query_port
  ib_query_port
    __ib_query_port
      mlx5_ib_query_port
        mlx5_query_port_roce
  copy_port_attr_to_resp
""",
    "alloc_pd": "ib_uverbs_alloc_pd\n  uverbs_request\n" + _indent(ALLOC_BEGIN, 1)
    + "\n  mlx5_ib_alloc_pd\n    mlx5_cmd_exec\n  rdma_restrack_add\n  uverbs_response",
    "create_cq_write": "ib_uverbs_create_cq\n  uverbs_request\n  create_cq\n" + _indent(ALLOC_BEGIN, 2)
    + "\n" + _indent(CQ_DRIVER, 2) + "\n    rdma_restrack_add\n    uverbs_response",
    "create_cq_write_eperm": "ib_uverbs_create_cq !EPERM\n  uverbs_request\n  create_cq !EPERM\n"
    + _indent(ALLOC_BEGIN, 2) + "\n" + _indent(CQ_DRIVER_EPERM, 2) + "\n    rdma_alloc_abort_uobject",
    "create_cq_ioctl": _ioctl(ALLOC_BEGIN.strip("\n") + "\nib_uverbs_handler_UVERBS_METHOD_CQ_CREATE\n"
                              + _indent(CQ_DRIVER, 1) + "\n  rdma_restrack_add\n"
                              "uverbs_finalize_object\n  rdma_alloc_commit_uobject"),
    "create_cq_ioctl_eperm": _ioctl(ALLOC_BEGIN.strip("\n")
                                    + "\nib_uverbs_handler_UVERBS_METHOD_CQ_CREATE !EPERM\n"
                                    + _indent(CQ_DRIVER_EPERM, 1)
                                    + "\nuverbs_finalize_object\n  rdma_alloc_abort_uobject", "EPERM"),
    "create_qp_write": "ib_uverbs_create_qp\n  uverbs_request\n  create_qp@uverbs\n" + _indent(ALLOC_BEGIN, 2)
    + "\n    rdma_lookup_get_uobject\n    rdma_lookup_get_uobject\n" + _indent(QP_CORE, 2)
    + "\n    ib_qp_usecnt_inc\n    rdma_lookup_put_uobject\n    uverbs_response",
    "create_qp_ioctl": _ioctl(ALLOC_BEGIN.strip("\n") + "\nrdma_lookup_get_uobject\nrdma_lookup_get_uobject\n"
                              "ib_uverbs_handler_UVERBS_METHOD_QP_CREATE\n" + _indent(QP_CORE, 1)
                              + "\n  ib_qp_usecnt_inc\nuverbs_finalize_object\n  rdma_alloc_commit_uobject\n"
                              "rdma_lookup_put_uobject"),
    "modify_reset_init": _modify("RESET->INIT"),
    "modify_init_rtr": _modify("INIT->RTR"),
    "modify_rtr_rts": _modify("RTR->RTS"),
    "reg_mr": "ib_uverbs_reg_mr\n  uverbs_request\n" + _indent(ALLOC_BEGIN, 1) + "\n  rdma_lookup_get_uobject\n"
    + _indent(REG_MR_DRIVER, 1) + "\n  rdma_restrack_add\n  rdma_lookup_put_uobject\n  uverbs_response",
    "reg_mr_enomem": "ib_uverbs_reg_mr !ENOMEM\n  uverbs_request\n" + _indent(ALLOC_BEGIN, 1)
    + "\n  rdma_lookup_get_uobject\n  mlx5_ib_reg_user_mr !ENOMEM\n    mlx5r_umr_resource_init\n"
    "    ib_umem_get !ENOMEM\n  rdma_lookup_put_uobject\n  rdma_alloc_abort_uobject",
    "reg_dmabuf_mr": _ioctl(ALLOC_BEGIN.strip("\n") + "\nrdma_lookup_get_uobject\n"
                            "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR\n" + _indent(DMABUF_DRIVER, 1)
                            + "\n  rdma_restrack_add\n  uverbs_finalize_uobj_create\n"
                            "uverbs_finalize_object\n  rdma_alloc_commit_uobject\nrdma_lookup_put_uobject"),
    "reg_dmabuf_mr_enomem": _ioctl(ALLOC_BEGIN.strip("\n") + "\nrdma_lookup_get_uobject\n"
                                   "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR !ENOMEM\n"
                                   + _indent(DMABUF_DRIVER_ENOMEM, 1)
                                   + "\nuverbs_finalize_object\n  rdma_alloc_abort_uobject\n"
                                   "rdma_lookup_put_uobject", "ENOMEM"),
    "dereg_mr": """
ib_uverbs_dereg_mr
  uverbs_request
  __uobj_perform_destroy
    __uobj_get_destroy
      rdma_lookup_get_uobject
      uobj_destroy
        uverbs_destroy_uobject
          destroy_hw_idr_uobject
            uverbs_free_mr
              ib_dereg_mr_user
                mlx5_ib_dereg_mr
                  mlx5_revoke_mr
                    mlx5r_umr_revoke_mr
                  ib_umem_release
            ib_rdmacg_uncharge
        remove_handle_idr_uobject
  rdma_lookup_put_uobject
""",
    "destroy_qp": """
ib_uverbs_destroy_qp
  uverbs_request
  __uobj_get_destroy
    rdma_lookup_get_uobject
    uobj_destroy
      uverbs_destroy_uobject
        destroy_hw_idr_uobject
          uverbs_free_qp
            ib_destroy_qp_user
              mlx5_ib_destroy_qp
                destroy_qp_common
                  mlx5_core_qp_modify
                    mlx5_cmd_exec
                  mlx5_core_destroy_qp
                    destroy_resource_common
                    mlx5_cmd_exec
                  destroy_qp@driver
                    ib_umem_release
              ib_qp_usecnt_dec
              rdma_restrack_del
            ib_uverbs_release_uevent
  rdma_lookup_put_uobject
  uverbs_response
""",
    "dealloc_pd": """
ib_uverbs_dealloc_pd
  uverbs_request
  __uobj_perform_destroy
    __uobj_get_destroy
      rdma_lookup_get_uobject
      uobj_destroy
        uverbs_destroy_uobject
          destroy_hw_idr_uobject
            uverbs_free_pd
              ib_dealloc_pd_user
                mlx5_ib_dealloc_pd
                  mlx5_cmd_dealloc_pd
                    mlx5_cmd_exec
                rdma_restrack_del
            ib_rdmacg_uncharge
        remove_handle_idr_uobject
    rdma_lookup_put_uobject
""",
}
TREES: dict[str, list[tuple[int, str, str, str | None]]] = {k: _tree(v) for k, v in _TEXT.items()}
OPERATION = {
    "query_gid_ok": "query_gid", "query_gid_enodata": "query_gid", "query_port": "query_port",
    "alloc_pd": "alloc_pd", "create_cq_write": "create_cq", "create_cq_write_eperm": "create_cq",
    "create_cq_ioctl": "create_cq", "create_cq_ioctl_eperm": "create_cq", "create_qp_write": "create_qp",
    "create_qp_ioctl": "create_qp", "modify_reset_init": "modify_qp", "modify_init_rtr": "modify_qp",
    "modify_rtr_rts": "modify_qp", "reg_mr": "reg_mr", "reg_mr_enomem": "reg_mr",
    "reg_dmabuf_mr": "reg_dmabuf_mr", "reg_dmabuf_mr_enomem": "reg_dmabuf_mr", "dereg_mr": "dereg_mr",
    "destroy_qp": "destroy_qp", "dealloc_pd": "dealloc_pd",
}
ARG = {"modify_reset_init": "RESET->INIT", "modify_init_rtr": "INIT->RTR", "modify_rtr_rts": "RTR->RTS"}

# family -> (origin probe, errno, origin layer); the chains each family's records take
ROOT_CAUSES = {
    "login03_memlock_zero": ("ib_umem_get", "EPERM", "core"),
    "gpu3_bar1_exhausted": ("dma_buf_dynamic_attach", "ENOMEM", "core"),
}
ROUTINE = {
    "gid_scan_empty_slots": ("rdma_get_gid_attr", "ENODATA", "core"),
    "ckpt_rcache_memlock_evict": ("ib_umem_get", "ENOMEM", "core"),
}
FAMILY_OF = {
    "create_cq_write_eperm": "login03_memlock_zero", "create_cq_ioctl_eperm": "login03_memlock_zero",
    "reg_dmabuf_mr_enomem": "gpu3_bar1_exhausted", "query_gid_enodata": "gid_scan_empty_slots",
    "reg_mr_enomem": "ckpt_rcache_memlock_evict",
}
PROBES = sorted({probe for tree in TREES.values() for _, probe, _, _ in tree})
PROBE_LAYER = {probe: layer for tree in TREES.values() for _, probe, layer, _ in tree}

_SELF_US = {"mlx5_cmd_exec": 60.0, "mlx5_cmd_do": 45.0, "pin_user_pages_fast": 180.0,
            "dma_buf_map_attachment": 70.0, "rdma_addr_find_l2_eth_by_grh": 12.0,
            "sg_alloc_append_table_from_pages": 20.0, "mlx5r_umr_update_mr_pas": 35.0,
            "mlx5r_umr_revoke_mr": 25.0, "ib_umem_release": 30.0}


def _shape(tree):
    """Base entry offsets and latencies (ns) of a tree's frames: children run one after another
    inside their parent."""
    n = len(tree)
    self_ns = [1000.0 * _SELF_US.get(p, 1.5) for _, p, _, _ in tree]
    children: list[list[int]] = [[] for _ in range(n)]
    stack: list[int] = []
    for i, (d, _, _, _) in enumerate(tree):
        while stack and tree[stack[-1]][0] >= d:
            stack.pop()
        if stack:
            children[stack[-1]].append(i)
        stack.append(i)
    lat = [0.0] * n
    for i in range(n - 1, -1, -1):
        lat[i] = self_ns[i] + sum(lat[c] for c in children[i])
    entry = [0.0] * n
    for i in range(n):
        cursor = entry[i] + self_ns[i] / 2
        for c in children[i]:
            entry[c] = cursor
            cursor += lat[c]
    return np.array(entry), np.array(lat)


SHAPES = {k: _shape(t) for k, t in TREES.items()}


def _probe_counts(tree):
    inv: Counter = Counter()
    err: dict[str, Counter] = defaultdict(Counter)
    for _, probe, _, e in tree:
        inv[probe] += 1
        if e:
            err[probe][e] += 1
    return inv, err


PROBE_COUNTS = {k: _probe_counts(t) for k, t in TREES.items()}


# ------------------------------------------------------------------------------------------
# the fleet's behaviour
# ------------------------------------------------------------------------------------------
def _init_calls(image: str, rng) -> list[tuple[float, str]]:
    """A rank's start-up: (seconds after its start, chain)."""
    out = []
    t = 0.0
    if image == NEW:  # NCCL's GID index scan, 0-15: RoCE v1/v2 of link-local, IPv4, global IPv6
        for slot in range(16):
            out.append((t, "query_gid_ok" if slot < 6 else "query_gid_enodata"))
            t += rng.uniform(0.00015, 0.0004)
    t += rng.uniform(0.05, 0.3)
    out.append((t, "alloc_pd"))
    cq, qp = ("create_cq_ioctl", "create_qp_ioctl") if image == NEW else ("create_cq_write", "create_qp_write")
    for _ in range(2):
        t += rng.uniform(0.001, 0.004)
        out.append((t, cq))
    for _ in range(4):
        t += rng.uniform(0.002, 0.006)
        out.append((t, qp))
    t += rng.uniform(0.2, 1.5)  # bootstrap exchange with the peers
    for key in ("modify_reset_init", "modify_init_rtr", "modify_rtr_rts"):
        for _ in range(4):
            t += rng.uniform(0.001, 0.003)
            out.append((t, key))
    for _ in range(4):
        t += rng.uniform(0.002, 0.02)
        out.append((t, "reg_mr"))
    for _ in range(2):
        t += rng.uniform(0.002, 0.02)
        out.append((t, "reg_dmabuf_mr"))
    return out


class _Host:
    def __init__(self, name: str, index: int, rng, duration: float):
        self.name = name
        self.index = index
        self.rng = rng
        self.duration = duration
        self.calls: list[tuple] = []  # (t, pid, ppid, comm, chain, meta key, job id)
        self.metas: dict = {}
        self.pid = int(rng.integers(20_000, 60_000))
        self.phase = float(rng.uniform(0, WINDOW_EVERY_S))
        self.uptime = float(rng.uniform(2, 40) * 86400)
        self.boots = [(float("-inf"), f"{int(rng.integers(0, 2**32)):08x}", self.uptime)]
        self.down: tuple[float, float] | None = None

    def next_pid(self) -> int:
        self.pid += int(self.rng.integers(1, 40))
        return self.pid

    def boot_at(self, t: float) -> tuple[str, float]:
        """(boot id, seconds since boot at window time 0) for a time."""
        best = self.boots[0]
        for b in self.boots:
            if t >= b[0]:
                best = b
        return best[1], best[2]


def _share_new(t: float, duration: float) -> float:
    return 0.2 + 0.6 * min(1.0, max(0.0, t / duration))


def _run_job(h: _Host, t0: float, job_id: str, stop: float, times: dict, faults: bool) -> float:
    """One 8-rank job from t0; its calls go to h.calls. Returns when the host is free again."""
    rng = h.rng
    image = NEW if rng.random() < _share_new(t0, h.duration) else OLD
    submit = LOGINS[int(rng.integers(0, 3))]
    memlock0 = faults and submit == "login03" and times["push"] <= t0 < times["fix"]
    bar1 = faults and h.index == times["bad_gpu_index"] and t0 >= times["leak"] and rng.random() < 0.7
    planned = t0 + rng.uniform(15, 40) * 60
    ppid = h.next_pid()
    ranks = []
    for rank in range(RANKS):
        pid = h.next_pid()
        meta = {"image": image, "rdma_core": IMAGES[image], "submit_host": submit, "local_rank": str(rank),
                "partition": "train", "slurm_job_id": job_id}
        key = (job_id, rank)
        h.metas[key] = metadata_list(meta)
        start = t0 + rng.uniform(0.5, 4.0)
        seq = [(start + dt, chain) for dt, chain in _init_calls(image, rng)]
        ranks.append((pid, key, seq))
    end = planned
    kill_at = None
    if memlock0:  # every rank dies at its first pin
        cut = []
        for pid, key, seq in ranks:
            first_cq = next(i for i, (_, c) in enumerate(seq) if c.startswith("create_cq"))
            t_fail, chain = seq[first_cq]
            cut.append((pid, key, [*seq[:first_cq], (t_fail, chain + "_eperm")]))
        ranks = cut
        end = max(s[-1][0] for _, _, s in ranks) + rng.uniform(1, 5)
        kill_at = end
    elif bar1:  # rank 3's first GPU registration fails; NCCL aborts; the others are killed
        pid, key, seq = ranks[3]
        first = next(i for i, (_, c) in enumerate(seq) if c == "reg_dmabuf_mr")
        t_fail = seq[first][0]
        ranks[3] = (pid, key, [*seq[:first], (t_fail, "reg_dmabuf_mr_enomem")])
        kill_at = t_fail + rng.uniform(0.2, 0.6)
        end = kill_at + rng.uniform(1, 3)
    hard_stop = min(stop, kill_at) if kill_at is not None else stop
    for pid, key, seq in ranks:
        calls = list(seq)
        if kill_at is None:
            t = calls[-1][0] + rng.uniform(30, 90)
            while t < planned:
                calls.append((t, "reg_mr"))
                calls.append((t + rng.uniform(0.3, 3.0), "dereg_mr"))
                t += rng.uniform(45, 90)
            t = planned + rng.uniform(0, 2)
            for chain in ["dereg_mr"] * 6 + ["destroy_qp"] * 4 + ["dealloc_pd"]:
                t += rng.uniform(0.0005, 0.003)
                calls.append((t, chain))
        for t, chain in calls:
            if t < hard_stop:
                h.calls.append((t, pid, ppid, "python3", chain, key, job_id))
    if end > stop:
        return stop
    return end


def _run_agent(h: _Host, t_from: float, t_to: float) -> None:
    rng = h.rng
    pid = h.next_pid()
    key = ("agent", pid)
    h.metas[key] = metadata_list({"unit": "ckpt-agent.service", "limit_memlock": "4G"})
    slots = int(rng.integers(16, 25))
    t = t_from + rng.uniform(1, 30)
    while t < t_to:
        h.calls.append((t, pid, 1, "ckpt-agent", "query_port", key, None))
        t += rng.uniform(50, 70)
    t = t_from + rng.uniform(300, 1500)
    while t < t_to - 120:
        n = int(rng.integers(22, 35))
        held = 0
        for tk in np.sort(rng.uniform(t, t + 45, n)):
            if held >= slots:
                h.calls.append((tk, pid, 1, "ckpt-agent", "reg_mr_enomem", key, None))
                h.calls.append((tk + 0.0004, pid, 1, "ckpt-agent", "dereg_mr", key, None))
                h.calls.append((tk + 0.0009, pid, 1, "ckpt-agent", "reg_mr", key, None))
            else:
                h.calls.append((tk, pid, 1, "ckpt-agent", "reg_mr", key, None))
                held += 1
        tr = t + 45 + rng.uniform(5, 20)
        for _ in range(held):
            tr += rng.uniform(0.001, 0.003)
            h.calls.append((tr, pid, 1, "ckpt-agent", "dereg_mr", key, None))
        t += rng.uniform(1200, 2100)


def _simulate_host(h: _Host, times: dict, faults: bool) -> None:
    rng = h.rng
    dur = h.duration
    drain = times["drain"] if h.index == times["reboot_index"] else None
    if drain is None:
        _run_agent(h, 0.0, dur)
    else:
        _run_agent(h, 0.0, drain + 300)
        h.down = (drain + 360, drain + 540)
        h.boots.append((drain + 480, f"{int(rng.integers(0, 2**32)):08x}", -(drain + 480) + 20.0))
        _run_agent(h, drain + 600, dur)
    t = rng.uniform(0, 120)
    n = 0
    while t < dur:
        stop = dur
        if drain is not None and t < drain:
            stop = drain
        elif drain is not None and drain <= t < drain + 1200:
            t = drain + 1200 + rng.uniform(0, 60)
            continue
        n += 1
        job_id = f"{4_180_000 + h.index * 1000 + n}"
        free = _run_job(h, t, job_id, stop, times, faults)
        t = free + rng.uniform(40, 150)


# ------------------------------------------------------------------------------------------
# what the tracer writes
# ------------------------------------------------------------------------------------------
def _timed(h: _Host, t: float) -> bool:
    return ((t - h.phase) % WINDOW_EVERY_S) < WINDOW_S


def _emit_host(h: _Host, start_ns: int, ev: dict, truth: dict, held_rng) -> dict:
    """Records (events rows, truth rows) and counters of one host."""
    calls = sorted(h.calls, key=lambda c: c[0])
    counts: Counter = Counter()
    seen_fail: Counter = Counter()
    aggregated: dict = {}
    good_taken: Counter = Counter()
    records = []  # (call, timed, [repeat holder])
    for call in calls:
        t, chain = call[0], call[4]
        if h.down and h.down[0] <= t < h.down[1]:
            continue
        snap = int(t // SNAP_S)
        counts[(snap, chain)] += 1
        if chain in FAMILY_OF:
            k = (snap, chain)
            seen_fail[k] += 1
            if seen_fail[k] <= K_RECORDS:
                records.append([call, _timed(h, t), None])
            elif seen_fail[k] == K_RECORDS + 1:
                rec = [call, _timed(h, t), 1]
                aggregated[k] = rec
                records.append(rec)
            else:
                aggregated[k][2] += 1
        elif _timed(h, t):
            w = (int((t - h.phase) // WINDOW_EVERY_S), chain)
            if good_taken[w] < GOOD_CAP:
                good_taken[w] += 1
                records.append([call, True, None])
    recno = int(h.rng.integers(1, 1000))
    stats: Counter = Counter()
    for (t, pid, ppid, comm, chain, key, job_id), timed, repeat in records:
        tree = TREES[chain]
        entry, lat = SHAPES[chain]
        scale = float(h.rng.lognormal(0.0, 0.35))
        boot, uptime = h.boot_at(t)
        mono0 = int((uptime + t) * 1e9)
        root_lat = lat[0] * scale
        if timed:
            start = start_ns + int(t * 1e9)
            end = start + int(root_lat)
            ts = [mono0 + int(e * scale) for e in entry]
            lats = [int(v * scale) for v in lat]
        else:
            ret_s = math.floor((t + root_lat / 1e9) / TICK_S) * TICK_S
            start = end = start_ns + int(ret_s * 1e9)
            tick_mono = int((uptime + ret_s) * 1e9)
            ts = [tick_mono] * len(tree)
            lats = [None] * len(tree)
        recno += 1
        trace_id = f"{h.name}:{boot}:{pid}:{recno}"
        family = FAMILY_OF.get(chain)
        root_err = tree[0][3]
        exit_status = -ERRNO_NUM[root_err] if root_err else 0
        meta = h.metas[key]
        for seq, (depth, probe, layer, err) in enumerate(tree):
            ev["trace_id"].append(trace_id)
            ev["seq"].append(seq)
            ev["ts_ns"].append(ts[seq])
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(ppid)
            ev["comm"].append(comm)
            ev["probe"].append(probe)
            ev["layer"].append(layer)
            ev["depth"].append(depth)
            ev["ret"].append(-ERRNO_NUM[err] if err else 0)
            ev["errno"].append(err)
            ev["latency_ns"].append(lats[seq])
            ev["arg"].append(ARG.get(chain) if seq == 0 else None)
            ev["kind"].append("failure" if root_err else "good")
            ev["command"].append(OPERATION[chain])
            ev["exit_status"].append(exit_status)
            ev["start_time"].append(start)
            ev["end_time"].append(end)
            ev["host"].append(h.name)
            ev["job_id"].append(job_id)
            ev["metadata"].append(meta)
            ev["repeat_count"].append(repeat)
        truth["trace_id"].append(trace_id)
        truth["host"].append(h.name)
        truth["kind"].append("failure" if root_err else "good")
        if family:
            probe, err, layer = {**ROOT_CAUSES, **ROUTINE}[family]
            truth["root_cause"].append(family)
            truth["bifurcation_probe"].append(probe)
            truth["bifurcation_errno"].append(err)
            truth["origin_layer"].append(layer)
            truth["expected_error"].append(family in ROUTINE)
            truth["held_out"].append(False)
            stats[family] += 1
            stats[family + ":stands_for"] += repeat or 1
        else:
            for col in ("root_cause", "bifurcation_probe", "bifurcation_errno", "origin_layer"):
                truth[col].append(None)
            truth["expected_error"].append(False)
            truth["held_out"].append(bool(held_rng.random() < 0.1))
            stats["good"] += 1
    return {"counts": counts, "stats": stats}


def _counters(h: _Host, counts: Counter, n_snaps: int) -> pa.Table:
    index = {p: i for i, p in enumerate(PROBES)}
    inv = np.zeros((n_snaps, len(PROBES)), dtype=np.int64)
    errs: dict[tuple[int, int], Counter] = defaultdict(Counter)
    for (snap, chain), n in counts.items():
        if snap >= n_snaps:
            continue
        pinv, perr = PROBE_COUNTS[chain]
        for probe, c in pinv.items():
            inv[snap, index[probe]] += c * n
        for probe, by in perr.items():
            for e, c in by.items():
                errs[(snap, index[probe])][e] += c * n
    cols: dict[str, list] = defaultdict(list)
    base = START
    for snap in range(n_snaps):
        t_end = (snap + 1) * SNAP_S
        if h.down and h.down[0] <= t_end - SNAP_S / 2 < h.down[1]:
            continue
        when = base + timedelta(seconds=t_end)
        for p, probe in enumerate(PROBES):
            e = errs.get((snap, p))
            cols["host"].append(h.name)
            cols["snapshot_time"].append(when)
            cols["interval_s"].append(SNAP_S)
            cols["kernel_release"].append(KERNEL)
            cols["vendor"].append("mlx5")
            cols["probe_set"].append("rdma")
            cols["probe"].append(probe)
            cols["layer"].append(PROBE_LAYER[probe])
            cols["live"].append(True)
            cols["invocations"].append(int(inv[snap, p]))
            cols["failures"].append(sum(e.values()) if e else 0)
            cols["errno_counts"].append([{"errno": k, "count": v} for k, v in sorted(e.items())] if e else None)
            cols["lost_records"].append(0)
    return pa.table(dict(cols), schema=COUNTERS)


def generate(root, hosts: int = 40, hours: float = 3, seed: int = 26, *, faults: bool = True) -> dict:
    """Write the fleet's events, counters and truth under `root`; return its summary."""
    root = Path(root)
    duration = float(hours) * 3600
    names = [f"gpu-{i // 8 + 1:02d}-{i % 8 + 1:02d}" for i in range(hosts)]
    times = {"push": 0.28 * duration, "fix": 0.72 * duration, "leak": 0.15 * duration,
             "drain": 0.45 * duration, "bad_gpu_index": min(13, hosts - 1),
             "reboot_index": (3 * hosts) // 4}
    start_ns = int(START.timestamp()) * 1_000_000_000
    date = START.strftime("%Y-%m-%d")
    n_snaps = int(math.ceil(duration / SNAP_S))
    held_rng = np.random.default_rng(seed + 1)
    totals: Counter = Counter()
    login03_hosts = set()
    for i, name in enumerate(names):
        h = _Host(name, i, np.random.default_rng([seed, i]), duration)
        _simulate_host(h, times, faults)
        ev: dict[str, list] = defaultdict(list)
        truth: dict[str, list] = defaultdict(list)
        out = _emit_host(h, start_ns, ev, truth, held_rng)
        totals.update(out["stats"])
        if out["stats"]["login03_memlock_zero"]:
            login03_hosts.add(name)
        for col in ("path", "path2", "output"):
            ev[col] = [None] * len(ev["trace_id"])
        ev["kernel_release"] = [KERNEL] * len(ev["trace_id"])
        ev["lost_events"] = [0] * len(ev["trace_id"])
        events = pa.table({f.name: pa.array(ev[f.name], type=f.type) for f in EVENTS}, schema=EVENTS)
        write_partition(events, root, "events", date, name, "part-0000.parquet", durable=False)
        write_partition(pa.table({f.name: pa.array(truth[f.name], type=f.type) for f in TRUTH}, schema=TRUTH),
                        root, "truth", date, name, "part-0000.parquet", durable=False)
        write_partition(_counters(h, out["counts"], n_snaps), root, "counters", date, name,
                        "part-0000.parquet", durable=False)

    def at(seconds: float) -> str:
        return (START + timedelta(seconds=seconds)).isoformat()

    bad = names[times["bad_gpu_index"]]
    summary = {
        "roles": {"all": names, "bad_gpu": [bad] if faults else [], "reboot": [names[times["reboot_index"]]],
                  "login03_hosts": sorted(login03_hosts)},
        "times": {"start": at(0), "end": at(duration), "push": at(times["push"]), "fix": at(times["fix"]),
                  "leak": at(times["leak"]), "drain": at(times["drain"])},
        "alert_hosts": {bad: ["ENOMEM"]} if faults else {},
        "kernel_release": KERNEL,
        "counts": dict(totals),
    }
    (root / "fleetgen26.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary
