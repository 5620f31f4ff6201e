"""Call trees of the RDMA control path, per platform (vendor x kernel release), from
reference/rdma_control_path.yaml: only probed (traceable, not inline) functions appear, so a
frame's depth is its nesting among probed frames (static helpers the probe set leaves out
contract the tree).

A tree is a nested `N(probe, ret, children)`; `ret` is "0", "ptr" (a kernel pointer: a
negative int64 below -4095 with no errno), "null" (a NULL pointer: 0), "one" (a bool true), or
"E:<ERRNO>" (a failure the caller ignores: the tree still succeeds)."""

from __future__ import annotations

from dataclasses import dataclass, field

LAYER = {
    # core/uverbs_*.c: the uverbs ABI layer; the rest of core/ is "core"
    "create_cq": "uverbs", "create_qp": "uverbs", "modify_qp": "uverbs", "uobj_destroy": "core",
    "ib_peer_umem_get": "peer-mem", "ib_get_peer_client": "peer-mem",
    "ib_umem_activate_invalidation_notifier": "peer-mem", "ib_umem_stop_invalidation_notifier": "peer-mem",
    "create_real_mr": "driver", "alloc_cacheable_mr": "driver", "reg_create": "driver",
    "create_user_qp": "driver", "_create_user_qp": "driver", "__mlx5_ib_modify_qp": "driver",
    "copy_port_attr_to_resp": "uverbs",
}


def layer_of(probe: str) -> str:
    if probe in LAYER:
        return LAYER[probe]
    if probe.startswith("ib_uverbs_"):
        return "uverbs"
    if probe.startswith(("mlx5", "bnxt_", "irdma_")):
        return "driver"
    return "core"


@dataclass
class N:
    probe: str
    ret: str = "0"
    kids: list[N] = field(default_factory=list)


# (probe, layer, depth, ret, errno) per frame, pre-order
Frame = tuple[str, str, int, int, "str | None"]

ERRNO = {"EPERM": 1, "ENOENT": 2, "EIO": 5, "ENXIO": 6, "EBADF": 9, "EAGAIN": 11, "ENOMEM": 12, "EFAULT": 14,
         "EBUSY": 16, "ENODEV": 19, "EINVAL": 22, "ENOSPC": 28, "ENODATA": 61, "EPROTONOSUPPORT": 93,
         "EOPNOTSUPP": 95, "ETIMEDOUT": 110}


def _ret(kind: str, k: int) -> tuple[int, str | None]:
    if kind == "ptr":
        return -0x777F_F000_0000 + 0x1C0 * k, None  # 0xffff8880... as signed int64
    if kind == "one":
        return 1, None
    if kind.startswith("E:"):
        e = kind[2:]
        return -ERRNO[e], e
    return 0, None


def frames_ok(tree: N) -> list[Frame]:
    out: list[Frame] = []

    def walk(n: N, d: int) -> None:
        ret, e = _ret(n.ret, len(out))
        out.append((n.probe, layer_of(n.probe), d, ret, e))
        for k in n.kids:
            walk(k, d + 1)

    walk(tree, 0)
    return out


def frames_fail(tree: N, path: list[str], errno: str, mask: dict[str, str] | None = None,
                cleanup: dict[str, list[N | str]] | None = None) -> tuple[list[Frame], str, str]:
    """The tree of a call that fails at the end of `path` (probe names from the root's first
    child down) with `errno`: siblings before the failing branch ran and succeeded, the failing
    frame's own children ran (it failed after them), nothing after it ran except `cleanup`
    frames (error unwinds) appended under the named ancestor. Ancestors return the errno, or
    `mask[probe]` where the code maps it (a lookup's ENOENT is EINVAL at modify_qp).
    Returns (frames, origin probe, origin layer)."""
    mask = mask or {}
    cleanup = cleanup or {}
    out: list[Frame] = []

    def ok(n: N, d: int) -> None:
        ret, e = _ret(n.ret, len(out))
        out.append((n.probe, layer_of(n.probe), d, ret, e))
        for k in n.kids:
            ok(k, d + 1)

    def down(n: N, d: int, rest: list[str], err: str) -> None:
        here = mask.get(n.probe, err)
        out.append((n.probe, layer_of(n.probe), d, -ERRNO[here], here))
        if not rest:
            for k in n.kids:
                ok(k, d + 1)
        else:
            nxt = rest[0]
            for k in n.kids:
                if k.probe == nxt:
                    down(k, d + 1, rest[1:], err)
                    break
                ok(k, d + 1)
            else:
                raise KeyError(f"{nxt} not under {n.probe}")
        for c in cleanup.get(n.probe, []):
            ok(c if isinstance(c, N) else N(c), d + 1)

    down(tree, 0, path, errno)
    origin = path[-1] if path else tree.probe
    return out, origin, layer_of(origin)


# --------------------------------------------------------------------------------------------
# platforms
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Platform:
    vendor: str  # mlx5 | bnxt_re | irdma
    kernel: str
    ofed: bool = False  # MLNX_OFED: ib_umem_get_peer and peer memory
    srq_init: bool = False  # mlx5_ib_dev_res_srq_init exists (OFED 24.07; not in the older upstream)
    reg_mr_ioctl: bool = False  # UVERBS_METHOD_REG_MR (~v6.17 upstream)


PLATFORMS = {
    "mlx5-ofed": Platform("mlx5", "6.8.0-1015-ofed24.07", ofed=True, srq_init=True),
    "mlx5-old": Platform("mlx5", "5.15.0-122-generic"),
    "bnxt": Platform("bnxt_re", "6.17.4-cloud", reg_mr_ioctl=True),
    "irdma": Platform("irdma", "6.18.1-generic", reg_mr_ioctl=True),
}


def _alloc_begin() -> N:
    return N("rdma_alloc_begin_uobject", "ptr", [N("ib_rdmacg_try_charge")])


def _lookup() -> N:
    return N("rdma_lookup_get_uobject", "ptr")


def _put() -> N:
    return N("rdma_lookup_put_uobject")


def _umem(p: Platform) -> N:
    return N("ib_umem_get_peer" if p.ofed else "ib_umem_get", "ptr")


def _cmd() -> N:
    return N("mlx5_cmd_exec")


def trees(p: Platform) -> dict[str, N]:
    """Successful trees of every operation on platform `p`."""
    v = p.vendor
    t: dict[str, N] = {}
    drv = {
        "alloc_pd": {"mlx5": N("mlx5_ib_alloc_pd", "0", [_cmd()]), "bnxt_re": N("bnxt_re_alloc_pd", "0", [N("bnxt_qplib_alloc_pd")]),
                     "irdma": N("irdma_alloc_pd", "0", [N("irdma_alloc_rsrc"), N("irdma_sc_pd_init")])}[v],
        "create_cq": {"mlx5": N("mlx5_ib_create_cq", "0", [N("create_cq_user", "0", [_umem(p), N("mlx5_ib_db_map_user")]),
                                                           N("mlx5_comp_eqn_get"), N("mlx5_core_create_cq", "0", [_cmd()])]),
                      "bnxt_re": N("bnxt_re_create_cq", "0", [N("ib_umem_get", "ptr"), N("bnxt_qplib_create_cq")]),
                      "irdma": N("irdma_create_cq", "0", [N("irdma_alloc_rsrc"), N("irdma_cqp_create_cq_cmd")])}[v],
        "create_qp": {"mlx5": N("mlx5_ib_create_qp", "0",
                                ([N("mlx5_ib_dev_res_srq_init")] if p.srq_init else [])
                                + [N("_create_user_qp", "0", [_umem(p), N("mlx5_ib_db_map_user")]),
                                   N("mlx5_qpc_create_qp", "0", [_cmd()])]),
                      "bnxt_re": N("bnxt_re_create_qp", "0", [N("ib_umem_get", "ptr"), N("bnxt_qplib_create_qp")]),
                      "irdma": N("irdma_create_qp", "0", [N("irdma_alloc_rsrc"), N("irdma_cqp_create_qp_cmd"), N("irdma_qp_add_qos")])}[v],
        "modify_qp": {"mlx5": N("mlx5_ib_modify_qp", "0", [N("ib_modify_qp_is_ok", "one"), N("__mlx5_ib_modify_qp", "0",
                                                            [N("mlx5_core_qp_modify", "0", [_cmd()])])]),
                      "bnxt_re": N("bnxt_re_modify_qp", "0", [N("bnxt_qplib_modify_qp")]),
                      "irdma": N("irdma_modify_qp_roce", "0", [N("irdma_query_pkey"), N("ib_modify_qp_is_ok", "one"), N("irdma_hw_modify_qp")])}[v],
        "reg_mr": {"mlx5": N("mlx5_ib_reg_user_mr", "ptr", [N("mlx5r_umr_resource_init"), _umem(p),
                                                             N("create_real_mr", "ptr", [N("alloc_cacheable_mr", "ptr"), N("mlx5r_umr_update_mr_pas")])]),
                   "bnxt_re": N("bnxt_re_reg_user_mr", "ptr", [N("ib_umem_get", "ptr")]),
                   "irdma": N("irdma_reg_user_mr", "ptr", [N("ib_umem_get", "ptr"), N("irdma_alloc_iwmr", "ptr"), N("irdma_hwreg_mr")])}[v],
        "dereg_mr": {"mlx5": N("mlx5_ib_dereg_mr", "0", [N("mlx5r_umr_revoke_mr"), N("ib_umem_release")]),
                     "bnxt_re": N("bnxt_re_dereg_mr", "0", [N("bnxt_qplib_free_mrw"), N("ib_umem_release")]),
                     "irdma": N("irdma_dereg_mr", "0", [N("irdma_hwdereg_mr"), N("ib_umem_release")])}[v],
        "destroy_qp": {"mlx5": N("mlx5_ib_destroy_qp", "0", [N("mlx5_core_destroy_qp", "0", [_cmd()])]),
                       "bnxt_re": N("bnxt_re_destroy_qp", "0", [N("bnxt_qplib_destroy_qp")]),
                       "irdma": N("irdma_destroy_qp", "0", [N("irdma_cqp_qp_destroy_cmd")])}[v],
        "dealloc_pd": {"mlx5": N("mlx5_ib_dealloc_pd", "0", [N("mlx5_cmd_dealloc_pd", "0", [_cmd()])]),
                       "bnxt_re": N("bnxt_re_dealloc_pd"), "irdma": N("irdma_dealloc_pd", "0", [N("irdma_free_rsrc")])}[v],
        "query_port": {"mlx5": N("mlx5_ib_query_port"), "bnxt_re": N("bnxt_re_query_port"),
                       "irdma": N("irdma_query_port", "0", [N("ib_get_eth_speed")])}[v],
        "query_device": {"mlx5": N("mlx5_ib_query_device"), "bnxt_re": N("bnxt_re_query_device"), "irdma": N("irdma_query_device")}[v],
    }
    t["query_device_ex"] = N("ib_uverbs_ex_query_device", "0", [N("ib_uverbs_get_ucontext_file", "ptr"), drv["query_device"]])
    t["query_device"] = N("ib_uverbs_query_device", "0", [N("ib_uverbs_get_ucontext_file", "ptr")])
    t["query_port"] = N("ib_uverbs_query_port", "0", [N("ib_query_port", "0", [drv["query_port"]]), N("copy_port_attr_to_resp")])
    # ioctl methods: the tree's root is ib_uverbs_ioctl (global); cmd_verbs/run_method are static
    t["query_gid"] = N("ib_uverbs_ioctl", "0", [N("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "0", [
        N("rdma_get_gid_attr", "ptr"), N("rdma_read_gid_attr_ndev_rcu", "ptr"), N("rdma_put_gid_attr")])])
    t["alloc_pd"] = N("ib_uverbs_alloc_pd", "0", [_alloc_begin(), drv["alloc_pd"], N("rdma_restrack_add")])
    t["create_cq"] = N("ib_uverbs_create_cq", "0", [N("create_cq", "0", [_alloc_begin(), drv["create_cq"], N("rdma_restrack_add")])])
    t["create_qp"] = N("ib_uverbs_create_qp", "0", [N("create_qp", "0", [
        _alloc_begin(), _lookup(), _lookup(), _lookup(),
        N("ib_create_qp_user", "ptr", [drv["create_qp"], N("ib_create_qp_security"), N("rdma_restrack_add")]),
        N("ib_qp_usecnt_inc"), _put(), _put(), _put()])])
    sec = N("ib_security_modify_qp", "0", [drv["modify_qp"]])
    t["modify_qp:RESET->INIT"] = N("ib_uverbs_modify_qp", "0", [N("modify_qp", "0", [
        _lookup(), N("ib_modify_qp_with_udata", "0", [N("_ib_modify_qp", "0", [N("rdma_counter_bind_qp_auto"), sec])]), _put()])])
    t["modify_qp:INIT->RTR"] = N("ib_uverbs_modify_qp", "0", [N("modify_qp", "0", [
        _lookup(), N("ib_modify_qp_with_udata", "0", [N("_ib_modify_qp", "0", [
            N("rdma_get_gid_attr", "ptr"),
            N("ib_resolve_eth_dmac", "0", [N("rdma_check_gid_user_access", "one"), N("rdma_addr_find_l2_eth_by_grh")]),
            N("rdma_lag_get_ah_roce_slave", "null", [N("rdma_read_gid_attr_ndev_rcu", "ptr")]),
            sec, N("rdma_lag_put_ah_roce_slave")])]), _put()])])
    t["modify_qp:RTR->RTS"] = N("ib_uverbs_modify_qp", "0", [N("modify_qp", "0", [
        _lookup(), N("ib_modify_qp_with_udata", "0", [N("_ib_modify_qp", "0", [sec])]), _put()])])
    reg_body = [_alloc_begin(), _lookup(), drv["reg_mr"], N("rdma_restrack_add"), _put()]
    if p.reg_mr_ioctl:
        t["reg_mr"] = N("ib_uverbs_ioctl", "0", [_alloc_begin(), _lookup(), N("ib_uverbs_handler_UVERBS_METHOD_REG_MR", "0", [
            drv["reg_mr"], N("rdma_restrack_add")]), _put(), N("rdma_alloc_commit_uobject")])
    else:
        t["reg_mr"] = N("ib_uverbs_reg_mr", "0", reg_body)
    if p.ofed:
        # GPU memory: the GUP fails inside __ib_umem_get (not probed) and the peer client takes it
        t["reg_mr_gpu"] = N("ib_uverbs_reg_mr", "0", [_alloc_begin(), _lookup(), N("mlx5_ib_reg_user_mr", "ptr", [
            N("mlx5r_umr_resource_init"),
            N("ib_umem_get_peer", "ptr", [N("ib_peer_umem_get", "ptr", [N("ib_get_peer_client", "ptr")])]),
            N("create_real_mr", "ptr", [N("reg_create", "ptr", [N("mlx5_core_create_mkey", "0", [_cmd()])]),
                                        N("ib_umem_activate_invalidation_notifier")])]),
            N("rdma_restrack_add"), _put()])
    destroy = [N("rdma_lookup_get_uobject", "ptr"), N("uobj_destroy")]
    t["dereg_mr"] = N("ib_uverbs_dereg_mr", "0", [N("__uobj_perform_destroy", "0", [
        N("__uobj_get_destroy", "ptr", destroy), N("ib_dereg_mr_user", "0", [drv["dereg_mr"]]), N("ib_rdmacg_uncharge")]), _put()])
    # rdma_counter_unbind_qp returns -EINVAL for a QP without a counter (default counter mode):
    # ignored by ib_destroy_qp_user, so every successful destroy_qp carries it
    t["destroy_qp"] = N("ib_uverbs_destroy_qp", "0", [N("__uobj_get_destroy", "ptr", [
        N("rdma_lookup_get_uobject", "ptr"), N("uobj_destroy", "0", [N("ib_destroy_qp_user", "0", [
            N("rdma_counter_unbind_qp", "E:EINVAL"), drv["destroy_qp"], N("ib_qp_usecnt_dec")])])]), _put()])
    t["dealloc_pd"] = N("ib_uverbs_dealloc_pd", "0", [N("__uobj_perform_destroy", "0", [
        N("__uobj_get_destroy", "ptr", destroy), N("ib_dealloc_pd_user", "0", [drv["dealloc_pd"]]), N("ib_rdmacg_uncharge")]), _put()])
    return t


def operation(name: str) -> str:
    """The operation a tree name stands for (the events' `command`)."""
    name = name.split(":")[0]
    return {"query_device_ex": "query_device", "reg_mr_gpu": "reg_mr"}.get(name, name)
