"""fleetgen10's call trees, written from reference/rdma_control_path.yaml: the probed frames of
each verb per vendor, and the variants a fault or a routine error makes of them.

A frame is (depth, function, layer, errno or None). Depths count probed frames only (the
tracer nests what it attaches to; static helpers it does not probe are not frames). The probe
ROLLOUT_PROBE (rdma_lookup_get_uobject) is attached on part of the fleet only from mid-window
on (a new probe set rolled out): `render` drops its frames where it is not attached, and the
truth is computed from what is left (`origin`), as an SRE would read that host's record.
"""

from __future__ import annotations

from dataclasses import dataclass

ERRNO = {"EPERM": 1, "ENOENT": 2, "EIO": 5, "EAGAIN": 11, "ENOMEM": 12, "EFAULT": 14, "EBUSY": 16,
         "ENODEV": 19, "EINVAL": 22, "ENODATA": 61, "EOPNOTSUPP": 95}

ROLLOUT_PROBE = "rdma_lookup_get_uobject"

Frame = tuple[int, str, str, str | None]

VENDOR_OPS = {  # vendor_equivalents.ops
    "alloc_pd": {"mlx5": "mlx5_ib_alloc_pd", "bnxt_re": "bnxt_re_alloc_pd", "irdma": "irdma_alloc_pd"},
    "dealloc_pd": {"mlx5": "mlx5_ib_dealloc_pd", "bnxt_re": "bnxt_re_dealloc_pd", "irdma": "irdma_dealloc_pd"},
    "create_cq": {"mlx5": "mlx5_ib_create_cq", "bnxt_re": "bnxt_re_create_cq", "irdma": "irdma_create_cq"},
    "create_qp": {"mlx5": "mlx5_ib_create_qp", "bnxt_re": "bnxt_re_create_qp", "irdma": "irdma_create_qp"},
    "modify_qp": {"mlx5": "mlx5_ib_modify_qp", "bnxt_re": "bnxt_re_modify_qp", "irdma": "irdma_modify_qp_roce"},
    "destroy_qp": {"mlx5": "mlx5_ib_destroy_qp", "bnxt_re": "bnxt_re_destroy_qp", "irdma": "irdma_destroy_qp"},
    "reg_mr": {"mlx5": "mlx5_ib_reg_user_mr", "bnxt_re": "bnxt_re_reg_user_mr", "irdma": "irdma_reg_user_mr"},
    "dereg_mr": {"mlx5": "mlx5_ib_dereg_mr", "bnxt_re": "bnxt_re_dereg_mr", "irdma": "irdma_dereg_mr"},
}


def _fail(frames: list[Frame], errno: str, fns: set[str]) -> list[Frame]:
    return [(d, fn, layer, errno if fn in fns else e) for d, fn, layer, e in frames]


def alloc_pd(vendor: str) -> list[Frame]:
    frames = [(0, "ib_uverbs_alloc_pd", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
              (2, "ib_rdmacg_try_charge", "core", None), (1, VENDOR_OPS["alloc_pd"][vendor], "driver", None)]
    if vendor == "mlx5":
        frames.append((2, "mlx5_cmd_exec", "driver", None))
    return frames


def create_cq(vendor: str, ofed: bool, fault: str | None = None) -> list[Frame]:
    """fault: "comp_vector" (create_cq -EINVAL: comp_vector >= num_comp_vectors, before the
    driver runs) or "fw_eio" (mlx5_core_create_cq: CREATE_CQ firmware INT_ERR -> -EIO)."""
    head = [(0, "ib_uverbs_create_cq", "uverbs", None), (1, "create_cq", "uverbs", None),
            (2, "rdma_alloc_begin_uobject", "core", None), (3, "ib_rdmacg_try_charge", "core", None)]
    if fault == "comp_vector":
        return _fail(head, "EINVAL", {"ib_uverbs_create_cq", "create_cq"})
    drv = [(2, VENDOR_OPS["create_cq"][vendor], "driver", None)]
    if vendor == "mlx5":
        drv += [(3, "ib_umem_get_peer" if ofed else "ib_umem_get", "core", None),
                (3, "mlx5_ib_db_map_user", "driver", None), (3, "mlx5_comp_eqn_get", "driver", None),
                (3, "mlx5_core_create_cq", "driver", None)]
    else:
        drv += [(3, "ib_umem_get", "core", None)]
    frames = head + drv
    if fault == "fw_eio":
        return _fail(frames, "EIO", {"ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "mlx5_core_create_cq"})
    return frames


def create_qp(vendor: str, ofed: bool, fault: str | None = None) -> list[Frame]:
    """fault: "rdmacg" (ib_rdmacg_try_charge -EAGAIN: the rdma cgroup's hca_object limit) or
    "irdma_nomem" (irdma_create_qp -ENOMEM: dma_alloc_coherent of the QP context)."""
    head = [(0, "ib_uverbs_create_qp", "uverbs", None), (1, "create_qp", "uverbs", None),
            (2, "rdma_alloc_begin_uobject", "core", None), (3, "ib_rdmacg_try_charge", "core", None)]
    if fault == "rdmacg":
        return _fail(head, "EAGAIN", {"ib_uverbs_create_qp", "create_qp", "rdma_alloc_begin_uobject", "ib_rdmacg_try_charge"})
    frames = head + [(2, ROLLOUT_PROBE, "core", None), (2, "ib_create_qp_user", "core", None),
                     (3, "create_qp", "core", None), (4, VENDOR_OPS["create_qp"][vendor], "driver", None)]
    if fault == "irdma_nomem":
        return _fail(frames, "ENOMEM", {"ib_uverbs_create_qp", "create_qp", "ib_create_qp_user", "irdma_create_qp"})
    if vendor == "mlx5":
        frames += [(5, "ib_umem_get_peer" if ofed else "ib_umem_get", "core", None),
                   (5, "mlx5_ib_db_map_user", "driver", None), (5, "mlx5_qpc_create_qp", "driver", None),
                   (6, "mlx5_cmd_exec", "driver", None)]
    else:
        frames += [(5, "ib_umem_get", "core", None)]
    frames += [(3, "ib_create_qp_security", "core", None), (2, "ib_qp_usecnt_inc", "core", None)]
    return frames


def modify_qp(vendor: str, transition: str, *, auto_counter: bool = False, fault: str | None = None) -> list[Frame]:
    """transition RESET->INIT | INIT->RTR | RTR->RTS. auto_counter: the port's counter mode is
    AUTO; on bnxt_re and irdma (no counter ops) rdma_counter_bind_qp_auto then returns -ENOMEM,
    which _ib_modify_qp ignores (root succeeds). fault "netns": ib_resolve_eth_dmac -ENODEV (the
    GID's netdev is in another net namespace than the caller)."""
    frames = [(0, "ib_uverbs_modify_qp", "uverbs", None), (1, "modify_qp", "uverbs", None),
              (2, ROLLOUT_PROBE, "core", None), (2, "ib_modify_qp_with_udata", "core", None),
              (3, "_ib_modify_qp", "core", None)]
    if transition == "RESET->INIT":
        err = "ENOMEM" if auto_counter and vendor != "mlx5" else None
        frames.append((4, "rdma_counter_bind_qp_auto", "core", err))
    elif transition == "INIT->RTR":
        frames += [(4, "rdma_get_gid_attr", "core", None), (4, "ib_resolve_eth_dmac", "core", None)]
        if fault == "netns":
            return _fail(frames, "ENODEV", {"ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata",
                                            "_ib_modify_qp", "ib_resolve_eth_dmac"})
        frames.append((4, "rdma_lag_get_ah_roce_slave", "core", None))
    frames += [(4, "ib_security_modify_qp", "core", None), (5, VENDOR_OPS["modify_qp"][vendor], "driver", None)]
    if vendor == "mlx5":
        frames.append((6, "mlx5_core_qp_modify", "driver", None))
    return frames


def reg_mr(vendor: str, ofed: bool, gpu: bool, fault: str | None = None) -> list[Frame]:
    """A user MR. OFED GPU memory: GUP refuses it (pin_user_pages_fast -EFAULT) and the peer
    client pins it (ib_peer_umem_get): routine, root succeeds. faults: "odp" (ib_check_mr_access,
    inline: ON_DEMAND on a device without ODP -> ib_uverbs_reg_mr -EOPNOTSUPP), "peer_unclaimed"
    (no peer client registered: ib_peer_umem_get returns the pin's -EFAULT), "memlock"
    (ib_umem_get -ENOMEM: pinned_vm + npages > RLIMIT_MEMLOCK)."""
    head = [(0, "ib_uverbs_reg_mr", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
            (2, "ib_rdmacg_try_charge", "core", None)]
    if fault == "odp":
        return _fail(head, "EOPNOTSUPP", {"ib_uverbs_reg_mr"})
    drv = VENDOR_OPS["reg_mr"][vendor]
    frames = head + [(1, ROLLOUT_PROBE, "core", None), (1, drv, "driver", None)]
    umem = "ib_umem_get_peer" if ofed else "ib_umem_get"
    if fault == "memlock":
        return _fail(frames + [(2, umem, "core", None)], "ENOMEM", {"ib_uverbs_reg_mr", drv, umem})
    if ofed and gpu:
        frames += [(2, umem, "core", None), (3, "pin_user_pages_fast", "core", "EFAULT"),
                   (3, "ib_peer_umem_get", "peer-mem", None)]
        if fault == "peer_unclaimed":
            return _fail(frames, "EFAULT", {"ib_uverbs_reg_mr", drv, umem, "ib_peer_umem_get"})
        return frames + [(2, "ib_umem_activate_invalidation_notifier", "peer-mem", None)]
    frames += [(2, umem, "core", None), (3, "pin_user_pages_fast", "core", None)]
    if vendor == "mlx5":
        frames.append((2, "mlx5r_umr_update_mr_pas", "driver", None))
    return frames


def dereg_mr(vendor: str, fault: str | None = None) -> list[Frame]:
    """fault "double": the MR handle was already deregistered (a registration cache freeing an
    entry twice at teardown): -ENOENT from the lookup, passed up by uobj_get_destroy."""
    head = [(0, "ib_uverbs_dereg_mr", "uverbs", None), (1, "__uobj_perform_destroy", "core", None),
            (2, "__uobj_get_destroy", "core", None), (3, ROLLOUT_PROBE, "core", None)]
    if fault == "double":
        return _fail(head, "ENOENT", {"ib_uverbs_dereg_mr", "__uobj_perform_destroy", "__uobj_get_destroy", ROLLOUT_PROBE})
    return head + [(3, "ib_dereg_mr_user", "core", None), (4, VENDOR_OPS["dereg_mr"][vendor], "driver", None),
                   (5, "ib_umem_release", "core", None), (3, "ib_rdmacg_uncharge", "core", None)]


def dealloc_pd(vendor: str, fault: str | None = None) -> list[Frame]:
    """fault "busy": pd->usecnt != 0 (MRs still registered: a teardown that frees the PD first,
    then its MRs, then the PD again): uverbs_free_pd -EBUSY."""
    head = [(0, "ib_uverbs_dealloc_pd", "uverbs", None), (1, "__uobj_perform_destroy", "core", None),
            (2, "__uobj_get_destroy", "core", None), (3, ROLLOUT_PROBE, "core", None),
            (3, "uobj_destroy", "core", None), (4, "uverbs_free_pd", "core", None)]
    if fault == "busy":
        return _fail(head, "EBUSY", {"ib_uverbs_dealloc_pd", "__uobj_perform_destroy", "uobj_destroy", "uverbs_free_pd"})
    return head + [(5, "ib_dealloc_pd_user", "core", None), (6, VENDOR_OPS["dealloc_pd"][vendor], "driver", None),
                   (4, "ib_rdmacg_uncharge", "core", None)]


def destroy_qp(vendor: str) -> list[Frame]:
    return [(0, "ib_uverbs_destroy_qp", "uverbs", None), (1, "__uobj_get_destroy", "core", None),
            (2, ROLLOUT_PROBE, "core", None), (2, "uobj_destroy", "core", None),
            (3, "uverbs_free_qp", "core", None), (4, "ib_destroy_qp_user", "core", None),
            (5, VENDOR_OPS["destroy_qp"][vendor], "driver", None), (5, "ib_qp_usecnt_dec", "core", None)]


def query_gid(empty: bool) -> list[Frame]:
    """An empty GID slot: rdma_get_gid_attr -ENODATA; rdma-core skips the slot."""
    root = "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"
    if empty:
        return [(0, root, "uverbs", "ENODATA"), (1, "rdma_get_gid_attr", "core", "ENODATA")]
    return [(0, root, "uverbs", None), (1, "rdma_get_gid_attr", "core", None),
            (1, "rdma_read_gid_attr_ndev_rcu", "core", None), (1, "rdma_put_gid_attr", "core", None)]


def render(frames: list[Frame], rollout_attached: bool) -> list[Frame]:
    """The frames a host's probe set records (ROLLOUT_PROBE only where attached)."""
    if rollout_attached:
        return frames
    return [f for f in frames if f[1] != ROLLOUT_PROBE]


def origin(frames: list[Frame]) -> tuple[str, str, str] | None:
    """(probe, errno, layer) where the failure left good behaviour: the deepest frame failing
    with the root's errno (the chain the caller saw); the later one of two at that depth (a
    pin's EFAULT superseded by the peer-memory fallback's). A root that succeeded: the deepest
    failing frame (an absorbed error). None for a tree without an error."""
    root_err = frames[0][3]
    failing = [(i, f) for i, f in enumerate(frames) if f[3] is not None and (root_err is None or f[3] == root_err)]
    if not failing:
        return None
    depth = max(f[0] for _, f in failing)
    _, f = [x for x in failing if x[1][0] == depth][-1]
    return f[1], f[3], f[2]


@dataclass(frozen=True)
class Variant:
    """One tree shape the fleet makes, for the reference checks in the test."""
    key: str
    frames: tuple[Frame, ...]
    root_cause: str | None


def all_variants() -> list[Variant]:
    out: list[Variant] = []
    for vendor in ("mlx5", "bnxt_re", "irdma"):
        for ofed in ((True, False) if vendor == "mlx5" else (False,)):
            out += [Variant(f"alloc_pd/{vendor}", tuple(alloc_pd(vendor)), None),
                    Variant(f"create_cq/{vendor}/{ofed}", tuple(create_cq(vendor, ofed)), None),
                    Variant(f"create_qp/{vendor}/{ofed}", tuple(create_qp(vendor, ofed)), None),
                    Variant(f"create_qp/{vendor}/rdmacg", tuple(create_qp(vendor, ofed, "rdmacg")), None),
                    Variant(f"reg_mr/{vendor}/{ofed}", tuple(reg_mr(vendor, ofed, gpu=False)), None),
                    Variant(f"dereg_mr/{vendor}", tuple(dereg_mr(vendor)), None),
                    Variant(f"dereg_mr/{vendor}/double", tuple(dereg_mr(vendor, "double")), None),
                    Variant(f"dealloc_pd/{vendor}", tuple(dealloc_pd(vendor)), None),
                    Variant(f"dealloc_pd/{vendor}/busy", tuple(dealloc_pd(vendor, "busy")), None),
                    Variant(f"destroy_qp/{vendor}", tuple(destroy_qp(vendor)), None)]
            for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
                out.append(Variant(f"modify_qp/{vendor}/{tr}", tuple(modify_qp(vendor, tr)), None))
            out.append(Variant(f"modify_qp/{vendor}/netns", tuple(modify_qp(vendor, "INIT->RTR", fault="netns")),
                               "tenant_netns_gid_denied"))
    out += [Variant("query_gid/ok", tuple(query_gid(False)), None), Variant("query_gid/empty", tuple(query_gid(True)), None),
            Variant("modify_qp/bnxt_re/auto", tuple(modify_qp("bnxt_re", "RESET->INIT", auto_counter=True)), None),
            Variant("reg_mr/mlx5/ofed_gpu", tuple(reg_mr("mlx5", True, gpu=True)), None),
            Variant("reg_mr/bnxt_re/odp", tuple(reg_mr("bnxt_re", False, False, "odp")), None),
            Variant("reg_mr/mlx5/peer_unclaimed", tuple(reg_mr("mlx5", True, True, "peer_unclaimed")),
                    "peer_client_reload_gap"),
            Variant("reg_mr/bnxt_re/memlock", tuple(reg_mr("bnxt_re", False, False, "memlock")), "host_memlock_reset"),
            Variant("create_qp/irdma/nomem", tuple(create_qp("irdma", False, "irdma_nomem")), "irdma_qp_ctx_nomem"),
            Variant("create_cq/irdma/comp_vector", tuple(create_cq("irdma", False, "comp_vector")), "moe_comp_vector_irdma"),
            Variant("create_cq/mlx5/fw_eio", tuple(create_cq("mlx5", True, "fw_eio")), "cq_fw_eio_after_clock_step")]
    return out


def functions_used(variants: list[Variant]) -> set[str]:
    return {f[1] for v in variants for f in v.frames}
