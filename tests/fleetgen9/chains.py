"""Call trees of the RDMA control path, written from reference/rdma_control_path.yaml only.

A tree is a list of frames (depth, function, layer, errno or None) in entry order, rooted at
the syscall-side dispatcher the fleet tracer's root probe sits on (ib_uverbs_write for the
write ABI, ib_uverbs_ioctl for ioctl methods), so a handler at the reference's depth d is at
d + 1 here. A failing frame's errno travels up to the root unchanged unless the reference says
a caller ignores it (rdma_counter_bind_qp_auto's result, a GUP failure the OFED peer path
rescues). Calls after the failing one returned are the caller's unwind (uobj_alloc_abort).
"""

from __future__ import annotations

import errno as _errno
from dataclasses import dataclass, field

# layer of each function: where its source file lives (reference `file:` keys)
UVERBS = {"ib_uverbs_write", "ib_uverbs_ioctl", "ib_uverbs_run_method", "uverbs_response", "uverbs_finalize_object",
          "ib_uverbs_alloc_pd", "ib_uverbs_create_cq", "ib_uverbs_create_qp", "ib_uverbs_modify_qp",
          "ib_uverbs_reg_mr", "ib_uverbs_dereg_mr", "ib_uverbs_destroy_qp", "ib_uverbs_dealloc_pd",
          "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "create_cq", "modify_qp"}
PEER = {"ib_peer_umem_get", "ib_get_peer_client", "ib_umem_activate_invalidation_notifier",
        "ib_umem_stop_invalidation_notifier", "ib_peer_umem_release"}


def layer_of(fn: str, depth: int) -> str:
    if fn == "create_qp":  # three functions share the name: uverbs_cmd.c, verbs.c, hw/mlx5/qp.c
        return {2: "uverbs", 4: "core"}.get(depth, "driver")
    if fn in UVERBS:
        return "uverbs"
    if fn in PEER:
        return "peer-mem"
    if fn.startswith(("mlx5", "bnxt_", "_create_user_qp", "create_user_qp", "__mlx5", "destroy_qp_common",
                      "alloc_cacheable_mr", "mkey_cache_ent_from_rb_key", "create_real_mr", "reg_create")):
        return "driver"
    return "core"


ERRNO_NUM = {name: getattr(_errno, name) for name in
             ("EAGAIN", "ENOMEM", "EINVAL", "EFAULT", "ENODATA", "ETIMEDOUT", "ENOENT", "EOPNOTSUPP")}


@dataclass
class Tree:
    key: str
    operation: str
    frames: list[tuple[int, str, str, str | None]]
    arg: str | None = None
    bif: tuple[str, str, str] | None = None  # (function, errno, layer) where it leaves good behaviour
    root_cause: str | None = None
    routine: bool = False  # an expected error: the process goes on, or a caller absorbed it
    extra: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(f[3] for f in self.frames)

    @property
    def root_errno(self) -> str | None:
        return self.frames[0][3]


def _mk(key: str, op: str, spec: list[tuple[int, str] | tuple[int, str, str]], arg: str | None = None, **kw) -> Tree:
    frames = [(d, fn, layer_of(fn, d), (rest[0] if rest else None)) for d, fn, *rest in spec]
    return Tree(key, op, frames, arg, **kw)


def _charge(d: int, err: str | None = None) -> list:
    """rdma_alloc_begin_uobject -> ib_rdmacg_try_charge (common.uobject_helpers)."""
    if err:
        return [(d, "rdma_alloc_begin_uobject", err), (d + 1, "ib_rdmacg_try_charge", err)]
    return [(d, "rdma_alloc_begin_uobject"), (d + 1, "ib_rdmacg_try_charge")]


def _commit() -> list:
    return [(1, "uverbs_finalize_object"), (2, "rdma_alloc_commit_uobject")]


def _failed_up(spec: list, err: str) -> list:
    """Mark every frame on the path from the root to the last frame as failing with err."""
    out = list(spec)
    last_depth = out[-1][0]
    need = last_depth - 1
    for i in range(len(out) - 2, -1, -1):
        if out[i][0] == need:
            out[i] = (out[i][0], out[i][1], err)
            need -= 1
            if need < 0:
                break
    return out


def alloc_pd(vendor: str) -> Tree:
    drv = ([(2, "mlx5_ib_alloc_pd"), (3, "mlx5_cmd_exec")] if vendor == "mlx5"
           else [(2, "bnxt_re_alloc_pd"), (3, "bnxt_qplib_alloc_pd")])
    spec = [(0, "ib_uverbs_write"), (1, "ib_uverbs_alloc_pd"), (2, "uverbs_request"), *_charge(2), *drv,
            (2, "rdma_restrack_add"), (2, "uverbs_response"), *_commit()]
    return _mk(f"alloc_pd/{vendor}", "alloc_pd", spec)


def create_cq(vendor: str) -> Tree:
    drv = ([(3, "mlx5_ib_create_cq"), (4, "create_cq_user"), (5, "ib_umem_get"), (5, "mlx5_ib_db_map_user"),
            (4, "mlx5_comp_eqn_get"), (4, "mlx5_core_create_cq")] if vendor == "mlx5"
           else [(3, "bnxt_re_create_cq"), (4, "ib_umem_get"), (4, "bnxt_qplib_create_cq")])
    spec = [(0, "ib_uverbs_write"), (1, "ib_uverbs_create_cq"), (2, "create_cq"), *_charge(3), *drv,
            (3, "rdma_restrack_add"), (3, "uverbs_response"), *_commit()]
    return _mk(f"create_cq/{vendor}", "create_cq", spec)


def create_qp(vendor: str, variant: str = "ok") -> Tree:
    """variant: ok | rdmacg (EAGAIN at the cgroup charge, retried) | qp_limits (bnxt_re_test_qp_limits
    -EINVAL: 'bnxt_re_test_qp_limits fails; max QPs exceeded')."""
    head = [(0, "ib_uverbs_write"), (1, "ib_uverbs_create_qp"), (2, "create_qp")]
    if variant == "rdmacg":
        spec = [*head, *_charge(3, "EAGAIN")]
        spec = _failed_up(spec, "EAGAIN")
        return _mk(f"create_qp/{vendor}/rdmacg", "create_qp", spec, bif=("ib_rdmacg_try_charge", "EAGAIN", "core"),
                   routine=True)
    if vendor == "mlx5":
        drv = [(5, "mlx5_ib_create_qp"), (6, "mlx5_ib_dev_res_srq_init"), (6, "check_qp_type"), (6, "process_udata_size"),
               (6, "create_qp"), (7, "create_user_qp"), (8, "set_rq_size"), (8, "_create_user_qp"), (9, "alloc_bfreg"),
               (9, "ib_umem_get"), (9, "mlx5_ib_db_map_user"), (8, "mlx5_qpc_create_qp"), (9, "mlx5_cmd_exec")]
    else:
        drv = [(5, "bnxt_re_create_qp"), (6, "bnxt_re_test_qp_limits"), (6, "bnxt_re_init_qp_attr"),
               (6, "bnxt_re_init_user_qp"), (7, "ib_umem_get"), (6, "bnxt_qplib_create_qp")]
    if variant == "qp_limits":
        spec = [*head, *_charge(3), (3, "rdma_lookup_get_uobject"), (3, "ib_create_qp_user"), (4, "create_qp"),
                (5, "bnxt_re_create_qp"), (6, "bnxt_re_test_qp_limits", "EINVAL")]
        spec = _failed_up(spec, "EINVAL")
        spec += [(3, "rdma_lookup_put_uobject"), (3, "rdma_alloc_abort_uobject")]
        spec[0] = (0, "ib_uverbs_write", "EINVAL")
        return _mk("create_qp/bnxt_re/qp_limits", "create_qp", spec,
                   bif=("bnxt_re_test_qp_limits", "EINVAL", "driver"), root_cause="bnxt_re_qp_limits_release")
    spec = [*head, *_charge(3), (3, "rdma_lookup_get_uobject"), (3, "ib_create_qp_user"), (4, "create_qp"), *drv,
            (5, "ib_create_qp_security"), (5, "rdma_restrack_add"), (3, "ib_qp_usecnt_inc"),
            (3, "rdma_lookup_put_uobject"), (3, "uverbs_response"), *_commit()]
    return _mk(f"create_qp/{vendor}", "create_qp", spec)


def modify_qp(vendor: str, transition: str, variant: str = "ok", lag_probe: bool = True) -> Tree:
    """RC transitions (modify_qp.rc_transitions). variant for INIT->RTR: gid_empty (rdma_get_gid_attr
    -ENODATA: the GID entry's IP was removed), fw_timeout (mlx5_cmd_exec -ETIMEDOUT: command timeout).
    bnxt_re RESET->INIT runs in AUTO counter mode: rdma_counter_bind_qp_auto -> alloc_and_bind (NULL:
    no counter ops) -> -ENOMEM, ignored by _ib_modify_qp. lag_probe False: the probe on
    rdma_lag_get_ah_roce_slave is detached (its child then hangs under _ib_modify_qp)."""
    drv_mod = ([(6, "mlx5_ib_modify_qp"), (7, "ib_modify_qp_is_ok"), (7, "__mlx5_ib_modify_qp")]
               if vendor == "mlx5" else [(6, "bnxt_re_modify_qp"), (7, "bnxt_qplib_modify_qp")])
    head = [(0, "ib_uverbs_write"), (1, "ib_uverbs_modify_qp"), (2, "modify_qp"), (3, "rdma_lookup_get_uobject"),
            (3, "ib_modify_qp_with_udata"), (4, "_ib_modify_qp")]
    tail = [(3, "rdma_lookup_put_uobject")]
    key = f"modify_qp/{vendor}/{transition}" + ("" if variant == "ok" else f"/{variant}") + ("" if lag_probe else "/nolag")
    if transition == "RESET->INIT":
        if vendor == "mlx5":
            body = [(5, "rdma_counter_bind_qp_auto")]
        else:
            body = [(5, "rdma_counter_bind_qp_auto", "ENOMEM"), (6, "rdma_get_counter_auto_mode"), (6, "alloc_and_bind")]
        body += [(5, "ib_security_modify_qp"), *drv_mod]
        if vendor == "mlx5":
            body += [(8, "mlx5_core_qp_modify"), (9, "mlx5_cmd_exec")]
        t = _mk(key, "modify_qp", [*head, *body, *tail], arg=transition)
        if vendor != "mlx5":
            t.routine = True
            t.bif = ("rdma_counter_bind_qp_auto", "ENOMEM", "core")
        return t
    if transition == "INIT->RTR":
        sgid = [(5, "rdma_fill_sgid_attr"), (6, "rdma_check_ah_attr"), (6, "rdma_get_gid_attr")]
        if variant == "gid_empty":
            spec = [*head, *sgid[:-1], (6, "rdma_get_gid_attr", "ENODATA")]
            spec = _failed_up(spec, "ENODATA") + tail
            return _mk(key, "modify_qp", spec, arg=transition, bif=("rdma_get_gid_attr", "ENODATA", "core"),
                       root_cause="gid_entry_flap_one_host")
        lag = ([(5, "rdma_lag_get_ah_roce_slave"), (6, "rdma_read_gid_attr_ndev_rcu")] if lag_probe
               else [(5, "rdma_read_gid_attr_ndev_rcu")])
        body = [*sgid, (5, "ib_resolve_eth_dmac"), (6, "rdma_check_gid_user_access"), (6, "ib_resolve_unicast_gid_dmac"),
                (7, "rdma_addr_find_l2_eth_by_grh"), *lag, (5, "ib_security_modify_qp"), *drv_mod]
        if vendor == "mlx5":
            body += [(8, "mlx5_set_path"), (8, "mlx5_core_qp_modify")]
            if variant == "fw_timeout":
                spec = _failed_up([*head, *body, (9, "mlx5_cmd_exec", "ETIMEDOUT")], "ETIMEDOUT")
                spec += [(5, "rdma_lag_put_ah_roce_slave"), (5, "rdma_unfill_sgid_attr"), *tail]
                return _mk(key, "modify_qp", spec, arg=transition, bif=("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
                           root_cause="nic_port2_fw_cmd_timeout")
            body += [(9, "mlx5_cmd_exec")]
        body += [(5, "rdma_lag_put_ah_roce_slave"), (5, "rdma_unfill_sgid_attr")]
        return _mk(key, "modify_qp", [*head, *body, *tail], arg=transition)
    body = [(5, "ib_security_modify_qp"), *drv_mod]
    if vendor == "mlx5":
        body += [(8, "mlx5_core_qp_modify"), (9, "mlx5_cmd_exec")]
    return _mk(key, "modify_qp", [*head, *body, *tail], arg=transition)


def reg_mr(flavor: str, variant: str = "host") -> Tree:
    """flavor: ofed (mlx5 MLNX_OFED: ib_umem_get_peer -> __ib_umem_get, peer fallback), up (mlx5
    upstream: ib_umem_get), bnxt (bnxt_re_reg_user_mr -> ib_umem_get). variant: host (CPU memory),
    gpu (OFED: GUP -EFAULT rescued by the peer client), gpu_peer_nomem (OFED: the rescue's
    kzalloc(ib_umem_peer) fails -ENOMEM), memlock (pinned_vm + npages > RLIMIT_MEMLOCK: -ENOMEM)."""
    head = [(0, "ib_uverbs_write"), (1, "ib_uverbs_reg_mr"), *_charge(2), (2, "rdma_lookup_get_uobject")]
    tail = [(2, "rdma_restrack_add"), (2, "rdma_lookup_put_uobject"), (2, "uverbs_response"), *_commit()]
    key = f"reg_mr/{flavor}/{variant}"
    if flavor == "ofed":
        pre = [(2, "mlx5_ib_reg_user_mr"), (3, "mlx5r_umr_resource_init"), (3, "ib_umem_get_peer"), (4, "__ib_umem_get")]
        if variant == "host":
            spec = [*head, *pre, (5, "pin_user_pages_fast"), (5, "sg_alloc_append_table_from_pages"),
                    (3, "create_real_mr"), (4, "alloc_cacheable_mr"), (5, "mkey_cache_ent_from_rb_key"),
                    (4, "mlx5r_umr_update_mr_pas"), *tail]
            return _mk(key, "reg_mr", spec)
        if variant == "gpu":
            spec = [*head, *pre, (5, "pin_user_pages_fast", "EFAULT"), (5, "ib_peer_umem_get"), (6, "ib_get_peer_client"),
                    (3, "create_real_mr"), (4, "reg_create"), (5, "mlx5_core_create_mkey"),
                    (4, "ib_umem_activate_invalidation_notifier"), *tail]
            return _mk(key, "reg_mr", spec, bif=("pin_user_pages_fast", "EFAULT", "core"), routine=True)
        if variant == "gpu_peer_nomem":
            spec = [*head, *pre, (5, "pin_user_pages_fast", "EFAULT"), (5, "ib_peer_umem_get", "ENOMEM"),
                    (6, "ib_get_peer_client")]
            # the failing chain: ib_peer_umem_get's -ENOMEM replaces the GUP errno up to the root
            spec = [(d, fn, "ENOMEM") if fn in ("__ib_umem_get", "ib_umem_get_peer", "mlx5_ib_reg_user_mr",
                                                 "ib_uverbs_reg_mr", "ib_uverbs_write") else (d, fn, *r)
                    for d, fn, *r in spec]
            spec += [(2, "rdma_lookup_put_uobject"), (2, "rdma_alloc_abort_uobject")]
            return _mk(key, "reg_mr", spec, bif=("ib_peer_umem_get", "ENOMEM", "peer-mem"),
                       root_cause="peer_mem_intermittent_one_host")
    drv = "mlx5_ib_reg_user_mr" if flavor == "up" else "bnxt_re_reg_user_mr"
    if variant == "memlock":
        spec = _failed_up([*head, (2, drv), (3, "ib_umem_get", "ENOMEM")], "ENOMEM")
        spec += [(2, "rdma_lookup_put_uobject"), (2, "rdma_alloc_abort_uobject")]
        return _mk(key, "reg_mr", spec, bif=("ib_umem_get", "ENOMEM", "core"), root_cause="tenant_job_memlock_limit")
    umem = [(3, "ib_umem_get"), (4, "pin_user_pages_fast"), (4, "sg_alloc_append_table_from_pages")]
    if flavor == "up":
        spec = [*head, (2, drv), (3, "mlx5r_umr_resource_init"), *umem, (3, "create_real_mr"), (4, "alloc_cacheable_mr"),
                (5, "mkey_cache_ent_from_rb_key"), (4, "mlx5r_umr_update_mr_pas"), *tail]
    else:
        spec = [*head, (2, drv), *umem, (3, "__bnxt_re_user_reg_mr"), *tail]
    return _mk(key, "reg_mr", spec)


def dereg_mr(flavor: str, peer: bool = False) -> Tree:
    destroy = [(0, "ib_uverbs_write"), (1, "ib_uverbs_dereg_mr"), (2, "__uobj_perform_destroy"),
               (3, "__uobj_get_destroy"), (4, "rdma_lookup_get_uobject"), (4, "uobj_destroy"),
               (5, "uverbs_destroy_uobject"), (6, "destroy_hw_idr_uobject"), (7, "uverbs_free_mr"), (8, "ib_dereg_mr_user")]
    if flavor == "bnxt":
        drv = [(9, "bnxt_re_dereg_mr"), (10, "bnxt_qplib_free_mrw"), (10, "ib_umem_release")]
    else:
        drv = [(9, "mlx5_ib_dereg_mr"), (10, "mlx5_revoke_mr"), (11, "mlx5r_umr_revoke_mr")]
        if peer:
            drv.append((11, "ib_umem_stop_invalidation_notifier"))
        drv.append((10, "ib_umem_release"))
    spec = [*destroy, *drv, (7, "ib_rdmacg_uncharge"), (2, "rdma_lookup_put_uobject")]
    return _mk(f"dereg_mr/{flavor}" + ("/peer" if peer else ""), "dereg_mr", spec)


def destroy_qp(vendor: str) -> Tree:
    drv = ([(8, "mlx5_ib_destroy_qp"), (9, "destroy_qp_common"), (10, "mlx5_core_qp_modify"),
            (10, "mlx5_core_destroy_qp"), (10, "destroy_qp")] if vendor == "mlx5"
           else [(8, "bnxt_re_destroy_qp"), (9, "bnxt_qplib_destroy_qp")])
    spec = [(0, "ib_uverbs_write"), (1, "ib_uverbs_destroy_qp"), (2, "__uobj_get_destroy"), (3, "rdma_lookup_get_uobject"),
            (3, "uobj_destroy"), (4, "uverbs_destroy_uobject"), (5, "destroy_hw_idr_uobject"), (6, "uverbs_free_qp"),
            (7, "ib_destroy_qp_user"), (8, "rdma_counter_unbind_qp"), *drv, (8, "ib_qp_usecnt_dec"),
            (8, "rdma_restrack_del"), (2, "rdma_lookup_put_uobject")]
    return _mk(f"destroy_qp/{vendor}", "destroy_qp", spec)


def dealloc_pd(vendor: str) -> Tree:
    drv = ([(9, "mlx5_ib_dealloc_pd"), (10, "mlx5_cmd_dealloc_pd")] if vendor == "mlx5"
           else [(9, "bnxt_re_dealloc_pd")])
    spec = [(0, "ib_uverbs_write"), (1, "ib_uverbs_dealloc_pd"), (2, "__uobj_perform_destroy"), (3, "__uobj_get_destroy"),
            (4, "rdma_lookup_get_uobject"), (4, "uobj_destroy"), (5, "uverbs_destroy_uobject"),
            (6, "destroy_hw_idr_uobject"), (7, "uverbs_free_pd"), (8, "ib_dealloc_pd_user"), *drv,
            (9, "rdma_restrack_del"), (7, "ib_rdmacg_uncharge"), (5, "remove_handle_idr_uobject"),
            (3, "rdma_lookup_put_uobject")]
    return _mk(f"dealloc_pd/{vendor}", "dealloc_pd", spec)


def query_gid(empty: bool = False) -> Tree:
    """ioctl UVERBS_METHOD_QUERY_GID_ENTRY; an empty GID slot is -ENODATA (rdma-core walks the
    table and skips it: routine)."""
    if empty:
        spec = [(0, "ib_uverbs_ioctl", "ENODATA"), (1, "ib_uverbs_run_method", "ENODATA"),
                (2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "ENODATA"), (3, "rdma_get_gid_attr", "ENODATA")]
        return _mk("query_gid/empty", "query_gid", spec, bif=("rdma_get_gid_attr", "ENODATA", "core"), routine=True)
    spec = [(0, "ib_uverbs_ioctl"), (1, "ib_uverbs_run_method"), (2, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"),
            (3, "rdma_get_gid_attr"), (3, "rdma_read_gid_attr_ndev_rcu"), (3, "rdma_put_gid_attr")]
    return _mk("query_gid/ok", "query_gid", spec)


def all_trees() -> dict[str, Tree]:
    trees: list[Tree] = [query_gid(), query_gid(True)]
    for v in ("mlx5", "bnxt_re"):
        trees += [alloc_pd(v), create_cq(v), create_qp(v), create_qp(v, "rdmacg"), destroy_qp(v), dealloc_pd(v)]
        for tr in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
            trees += [modify_qp(v, tr), modify_qp(v, tr, lag_probe=False)] if tr == "INIT->RTR" else [modify_qp(v, tr)]
    trees += [create_qp("bnxt_re", "qp_limits"), modify_qp("mlx5", "INIT->RTR", "gid_empty"),
              modify_qp("mlx5", "INIT->RTR", "fw_timeout"), modify_qp("mlx5", "INIT->RTR", "fw_timeout", lag_probe=False)]
    for fl, variants in (("ofed", ("host", "gpu", "gpu_peer_nomem")), ("up", ("host", "memlock")),
                         ("bnxt", ("host", "memlock"))):
        trees += [reg_mr(fl, v) for v in variants]
        trees.append(dereg_mr(fl))
    trees.append(dereg_mr("ofed", peer=True))
    out = {t.key: t for t in trees}
    assert len(out) == len(trees), "duplicate tree keys"
    return out


def functions_used(trees: dict[str, Tree]) -> set[str]:
    return {f[1] for t in trees.values() for f in t.frames}
