"""Call trees of the RDMA control path, as a fleet tracer with fexit probes would see them.

Every probe name, parent/child edge and errno below was read from
reference/rdma_control_path.yaml (operations.*.tree, vendor_equivalents, driver_internals,
ofed_peer_memory); `check_against_reference` re-reads the YAML and fails on any name it does
not hold, so a typo cannot invent a kernel function. Written without looking at the
project's simulator, tests/fleetgen or baseline/fleet.

A tree is a tuple of Frame in preorder (the order the frames were entered). A failing call is
the same tree cut after its origin frame (the kernel returns early on error; the unwind
helpers are not probed), with the errno on the origin and on each ancestor, possibly rewritten
on the way up (uobj_get_obj_read turns any lookup errno into -EINVAL at the handler).
"""

from __future__ import annotations

import errno as _errno
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "rdma_control_path.yaml"

# Which probes return a pointer (struct ib_umem *, struct ib_mr *, ...): on success the
# tracer records the kernel address itself, a large negative int64 (0xffff...).
POINTER_RETURNING = frozenset({
    "rdma_alloc_begin_uobject", "rdma_lookup_get_uobject", "ib_create_qp_user", "ib_umem_get",
    "ib_umem_get_peer", "__ib_umem_get", "ib_peer_umem_get", "rdma_get_gid_attr",
    "rdma_read_gid_attr_ndev_rcu", "ib_umem_dmabuf_get", "ib_umem_dmabuf_get_pinned",
    "mlx5_ib_reg_user_mr", "bnxt_re_reg_user_mr", "irdma_reg_user_mr",
    "mlx5_ib_reg_user_mr_dmabuf", "bnxt_re_reg_user_mr_dmabuf", "irdma_reg_user_mr_dmabuf",
    "dma_buf_get", "dma_buf_dynamic_attach",
})


def layer_of(fn: str) -> str:
    if fn.startswith(("ib_uverbs_", "sys_")) or fn in ("openat",):
        return "syscall" if fn == "openat" else "uverbs"
    if fn.startswith(("mlx5", "bnxt_", "irdma_")):
        return "driver"
    if fn in ("ib_peer_umem_get", "ib_get_peer_client", "ib_umem_activate_invalidation_notifier"):
        return "peer-mem"
    return "core"


@dataclass(frozen=True)
class Frame:
    probe: str
    depth: int

    @property
    def layer(self) -> str:
        return layer_of(self.probe)


def _tree(*spec: tuple[int, str]) -> tuple[Frame, ...]:
    return tuple(Frame(fn, d) for d, fn in spec)


DRIVER = {  # ib_device_ops slot -> symbol per vendor (vendor_equivalents.ops)
    "alloc_pd": {"mlx5": "mlx5_ib_alloc_pd", "bnxt_re": "bnxt_re_alloc_pd", "irdma": "irdma_alloc_pd"},
    "dealloc_pd": {"mlx5": "mlx5_ib_dealloc_pd", "bnxt_re": "bnxt_re_dealloc_pd", "irdma": "irdma_dealloc_pd"},
    "create_cq": {"mlx5": "mlx5_ib_create_cq", "bnxt_re": "bnxt_re_create_cq", "irdma": "irdma_create_cq"},
    "create_qp": {"mlx5": "mlx5_ib_create_qp", "bnxt_re": "bnxt_re_create_qp", "irdma": "irdma_create_qp"},
    "modify_qp": {"mlx5": "mlx5_ib_modify_qp", "bnxt_re": "bnxt_re_modify_qp", "irdma": "irdma_modify_qp_roce"},
    "destroy_qp": {"mlx5": "mlx5_ib_destroy_qp", "bnxt_re": "bnxt_re_destroy_qp", "irdma": "irdma_destroy_qp"},
    "reg_user_mr": {"mlx5": "mlx5_ib_reg_user_mr", "bnxt_re": "bnxt_re_reg_user_mr", "irdma": "irdma_reg_user_mr"},
    "reg_user_mr_dmabuf": {"mlx5": "mlx5_ib_reg_user_mr_dmabuf", "bnxt_re": "bnxt_re_reg_user_mr_dmabuf",
                           "irdma": "irdma_reg_user_mr_dmabuf"},
    "dereg_mr": {"mlx5": "mlx5_ib_dereg_mr", "bnxt_re": "bnxt_re_dereg_mr", "irdma": "irdma_dereg_mr"},
    "query_device": {"mlx5": "mlx5_ib_query_device", "bnxt_re": "bnxt_re_query_device", "irdma": "irdma_query_device"},
    "query_port": {"mlx5": "mlx5_ib_query_port", "bnxt_re": "bnxt_re_query_port", "irdma": "irdma_query_port"},
}


def _charge(d: int) -> list[tuple[int, str]]:
    return [(d, "rdma_alloc_begin_uobject"), (d + 1, "ib_rdmacg_try_charge")]


@cache
def tree(op: str, vendor: str, stack: str = "upstream", variant: str = "") -> tuple[Frame, ...]:
    """The success tree of one operation on one host kind.

    stack: "ofed" (MLNX_OFED: ib_umem_get_peer -> __ib_umem_get) or "upstream" (ib_umem_get).
    variant: "gpu" for reg_mr of GPU memory (OFED: the peer-memory path), "RESET->INIT",
    "INIT->RTR", "RTR->RTS" for modify_qp.
    """
    drv = DRIVER
    if op == "alloc_pd":
        body = [(0, "ib_uverbs_alloc_pd"), *_charge(1), (1, drv["alloc_pd"][vendor])]
        body += {"mlx5": [(2, "mlx5_cmd_exec")], "bnxt_re": [(2, "bnxt_qplib_alloc_pd")],
                 "irdma": [(2, "irdma_alloc_rsrc"), (2, "irdma_sc_pd_init")]}[vendor]
        return _tree(*body, (1, "rdma_restrack_add"))
    if op == "dealloc_pd":
        body = [(0, "ib_uverbs_dealloc_pd"), (1, "__uobj_perform_destroy"), (2, "rdma_lookup_get_uobject"),
                (2, "ib_dealloc_pd_user"), (3, drv["dealloc_pd"][vendor])]
        if vendor == "mlx5":
            body.append((4, "mlx5_cmd_dealloc_pd"))
        return _tree(*body, (3, "rdma_restrack_del"), (2, "ib_rdmacg_uncharge"))
    if op == "create_cq":
        body = [(0, "ib_uverbs_create_cq"), (1, "create_cq"), *_charge(2), (2, drv["create_cq"][vendor])]
        body += {"mlx5": [(3, "ib_umem_get_peer" if stack == "ofed" else "ib_umem_get"), (3, "mlx5_ib_db_map_user"),
                          (3, "mlx5_comp_eqn_get"), (3, "mlx5_core_create_cq")],
                 "bnxt_re": [(3, "ib_umem_get"), (3, "bnxt_qplib_create_cq")],
                 "irdma": []}[vendor]
        return _tree(*body, (2, "rdma_restrack_add"))
    if op == "create_qp":
        body = [(0, "ib_uverbs_create_qp"), *_charge(1), (1, "rdma_lookup_get_uobject"), (1, "rdma_lookup_get_uobject"),
                (1, "ib_create_qp_user"), (2, drv["create_qp"][vendor])]
        pin = "ib_umem_get_peer" if stack == "ofed" else "ib_umem_get"
        body += {"mlx5": [(3, "mlx5_ib_dev_res_srq_init"), (3, pin), (3, "mlx5_ib_db_map_user"),
                          (3, "mlx5_qpc_create_qp"), (4, "mlx5_cmd_exec")],
                 "bnxt_re": [(3, "bnxt_re_test_qp_limits"), (3, "ib_umem_get"), (3, "bnxt_qplib_create_qp")],
                 "irdma": [(3, "irdma_alloc_rsrc"), (3, "irdma_cqp_create_qp_cmd")]}[vendor]
        return _tree(*body, (2, "ib_create_qp_security"), (1, "ib_qp_usecnt_inc"), (1, "rdma_lookup_put_uobject"))
    if op == "modify_qp":
        body = [(0, "ib_uverbs_modify_qp"), (1, "rdma_lookup_get_uobject"), (1, "ib_modify_qp_with_udata"),
                (2, "_ib_modify_qp")]
        if variant == "INIT->RTR":
            body += [(3, "rdma_get_gid_attr"), (3, "rdma_lag_get_ah_roce_slave")]
        if variant == "RESET->INIT":
            body += [(3, "rdma_counter_bind_qp_auto")]
        body += [(3, "ib_security_modify_qp"), (4, drv["modify_qp"][vendor])]
        body += {"mlx5": [(5, "mlx5_core_qp_modify"), (6, "mlx5_cmd_exec")],
                 "bnxt_re": [(5, "bnxt_qplib_modify_qp")],
                 "irdma": [(5, "irdma_hw_modify_qp")]}[vendor]
        if variant == "INIT->RTR":
            body += [(3, "rdma_lag_put_ah_roce_slave")]
        return _tree(*body, (1, "rdma_lookup_put_uobject"))
    if op == "destroy_qp":
        return _tree((0, "ib_uverbs_destroy_qp"), (1, "__uobj_get_destroy"), (2, "rdma_lookup_get_uobject"),
                     (2, "ib_destroy_qp_user"), (3, "rdma_counter_unbind_qp"), (3, drv["destroy_qp"][vendor]),
                     (3, "ib_qp_usecnt_dec"), (1, "rdma_lookup_put_uobject"))
    if op == "reg_mr":
        body = [(0, "ib_uverbs_reg_mr"), *_charge(1), (1, "rdma_lookup_get_uobject"), (1, drv["reg_user_mr"][vendor])]
        if vendor == "mlx5" and stack == "ofed":
            body += [(2, "mlx5r_umr_resource_init"), (2, "ib_umem_get_peer"), (3, "__ib_umem_get")]
            if variant == "gpu":  # pin_user_pages_fast refuses device memory; a peer client claims it
                body += [(4, "ib_peer_umem_get"), (5, "ib_get_peer_client")]
            body += [(2, "mlx5r_umr_update_mr_pas")]
            if variant == "gpu":
                body += [(2, "ib_umem_activate_invalidation_notifier")]
        elif vendor == "mlx5":
            body += [(2, "mlx5r_umr_resource_init"), (2, "ib_umem_get"), (2, "mlx5r_umr_update_mr_pas")]
        elif vendor == "irdma":
            body += [(2, "ib_umem_get"), (2, "irdma_alloc_iwmr"),
                     (2, "irdma_reg_user_mr_type_qp" if variant == "qpbuf" else "irdma_reg_user_mr_type_mem")]
        else:
            body += [(2, "ib_umem_get")]
        return _tree(*body, (1, "rdma_restrack_add"), (1, "rdma_lookup_put_uobject"))
    if op == "reg_dmabuf_mr":
        body = [(0, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"), (1, drv["reg_user_mr_dmabuf"][vendor])]
        if vendor == "mlx5":
            body += [(2, "mlx5r_umr_resource_init"), (2, "ib_umem_dmabuf_get"), (3, "dma_buf_get"),
                     (3, "dma_buf_dynamic_attach"), (2, "mlx5_ib_init_dmabuf_mr"), (3, "ib_umem_dmabuf_map_pages")]
        else:
            body += [(2, "ib_umem_dmabuf_get_pinned")]
        return _tree(*body, (1, "rdma_restrack_add"), (1, "uverbs_finalize_uobj_create"))
    if op == "dereg_mr":
        return _tree((0, "ib_uverbs_dereg_mr"), (1, "__uobj_perform_destroy"), (2, "rdma_lookup_get_uobject"),
                     (2, "ib_dereg_mr_user"), (3, drv["dereg_mr"][vendor]), (4, "ib_umem_release"),
                     (2, "ib_rdmacg_uncharge"))
    if op == "query_device_ex":
        return _tree((0, "ib_uverbs_ex_query_device"), (1, drv["query_device"][vendor]))
    if op == "query_device":
        return _tree((0, "ib_uverbs_query_device"), (1, "ib_uverbs_get_ucontext_file"))
    if op == "query_port":
        return _tree((0, "ib_uverbs_query_port"), (1, "ib_query_port"), (2, drv["query_port"][vendor]))
    if op == "query_gid":
        return _tree((0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"), (1, "rdma_get_gid_attr"),
                     (1, "rdma_read_gid_attr_ndev_rcu"), (1, "rdma_put_gid_attr"))
    if op == "openat":
        return _tree((0, "openat"))
    raise ValueError(op)


def fail(frames: tuple[Frame, ...], origin: str, errno: str, *, nth: int = 0,
         rewrite: dict[int, str] | None = None) -> tuple[tuple[Frame, ...], list[str | None]]:
    """Cut `frames` after the nth occurrence of `origin`; errno on it and on its ancestors.

    rewrite: depth -> errno for ancestors that return another errno than the one they got."""
    idx = [i for i, f in enumerate(frames) if f.probe == origin][nth]
    cut = frames[: idx + 1]
    errnos: list[str | None] = [None] * len(cut)
    errnos[idx] = errno
    depth = cut[idx].depth
    for i in range(idx - 1, -1, -1):
        if cut[i].depth < depth:
            depth = cut[i].depth
            errnos[i] = (rewrite or {}).get(depth, errno)
    return cut, errnos


ERRNO_VALUE = {name: getattr(_errno, name) for name in (
    "ENOENT", "EIO", "ENXIO", "ENOMEM", "EFAULT", "EBUSY", "EINVAL", "ENOSPC", "EAGAIN", "ENODATA",
    "EOPNOTSUPP", "ETIMEDOUT", "EPERM", "EACCES", "ENODEV")}


@cache
def _reference_names() -> frozenset[str]:
    text = REFERENCE.read_text()
    return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def check_against_reference() -> None:
    """Every probe of every tree is a name in the reference, every errno one it lists."""
    names = _reference_names()
    probes = set()
    for op, variants in (("alloc_pd", [""]), ("dealloc_pd", [""]), ("create_cq", [""]), ("create_qp", [""]),
                         ("modify_qp", ["RESET->INIT", "INIT->RTR", "RTR->RTS"]), ("destroy_qp", [""]),
                         ("reg_mr", ["", "gpu", "qpbuf"]), ("reg_dmabuf_mr", [""]), ("dereg_mr", [""]),
                         ("query_device_ex", [""]), ("query_device", [""]), ("query_port", [""]), ("query_gid", [""])):
        for vendor in ("mlx5", "bnxt_re", "irdma"):
            for stack in ("ofed", "upstream"):
                for v in variants:
                    probes.update(f.probe for f in tree(op, vendor, stack, v))
    missing = sorted(p for p in probes if p not in names)
    if missing:
        raise AssertionError(f"probes not in {REFERENCE}: {missing}")
    missing_errnos = sorted(e for e in ERRNO_VALUE if e not in names)
    if missing_errnos:
        raise AssertionError(f"errnos not in {REFERENCE}: {missing_errnos}")
