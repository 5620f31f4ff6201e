"""Call trees of the RDMA control path, transcribed from reference/rdma_control_path.yaml.

This generator imitates a tracer with a probe on *every* traceable function of the reference
chains (kprobe/fentry on each; `meta_rdmatracer_reconciliation`: "one that imitates fentry/kprobe
on every function should keep them"), not the 13-probe set: trees are 15-30 frames deep, rooted
at the dispatch (`ib_uverbs_write` / `ib_uverbs_ioctl`), and three different functions called
`create_qp` (uverbs_cmd.c, verbs.c, mlx5 qp.c) nest in one create_qp tree. Inline functions
(ib_check_mr_access, ib_umem_num_dma_blocks, ...) never show, as the reference says.

A node is (fn, layer, children). A template is one complete tree with every frame's errno
(None = success), in entry order, plus the ground truth it stands for.
"""

from __future__ import annotations

import errno as _errno
from dataclasses import dataclass, field

U, C, D, P = "uverbs", "core", "driver", "peer-mem"


@dataclass
class Node:
    fn: str
    layer: str
    kids: list[Node] = field(default_factory=list)
    err: str | None = None  # this frame's own failure (a routine inner error in a good tree)


def N(fn: str, layer: str, *kids: Node, err: str | None = None) -> Node:  # noqa: N802 (a tree literal)
    return Node(fn, layer, list(kids), err)


def copy(n: Node) -> Node:
    return Node(n.fn, n.layer, [copy(k) for k in n.kids], n.err)


# -- vendor-dependent pieces -------------------------------------------------------------------
# variants: "ofed" (mlx5, MLNX_OFED 24.07: ib_umem_get_peer -> __ib_umem_get, peer memory,
# mlx5_ib_dev_res_srq_init), "upstream" (mlx5 upstream kernel: ib_umem_get, dmabuf for GPU
# memory), "bnxt_re", "irdma" (RoCE mode).
VENDOR_OF = {"ofed": "mlx5", "upstream": "mlx5", "bnxt_re": "bnxt_re", "irdma": "irdma"}


def alloc_begin() -> Node:
    # rdma_alloc_begin_uobject -> alloc_begin_idr_uobject -> alloc_uobj, idr_add_uobj,
    # ib_rdmacg_try_charge (common.uobject_helpers)
    return N("rdma_alloc_begin_uobject", C,
             N("alloc_begin_idr_uobject", C, N("alloc_uobj", C), N("idr_add_uobj", C), N("ib_rdmacg_try_charge", C)))


def finalize_commit() -> Node:
    # dispatch_write: after a handler that registered a new uobject succeeded
    return N("uverbs_finalize_object", C, N("rdma_alloc_commit_uobject", C))


def write(handler: Node, creates: bool) -> Node:
    kids = [handler] + ([finalize_commit()] if creates else [])
    return N("ib_uverbs_write", U, *kids)


def ioctl(pre: list[Node], handler: Node, post: list[Node]) -> Node:
    # dispatch_ioctl: ib_uverbs_ioctl -> ib_uverbs_cmd_verbs -> ib_uverbs_run_method
    # (attrs before the handler, bundle_destroy -> uverbs_finalize_object after it)
    return N("ib_uverbs_ioctl", U, N("ib_uverbs_cmd_verbs", U, N("ib_uverbs_run_method", U, *pre, handler, *post)))


def umem_get(variant: str, gpu: bool = False, peer_ok: bool = True) -> Node:
    """Pinning a user buffer. OFED: ib_umem_get_peer -> __ib_umem_get (GUP; GPU memory fails
    pin_user_pages_fast with EFAULT and falls back to ib_peer_umem_get); upstream: ib_umem_get."""
    gup = [N("pin_user_pages_fast", C), N("sg_alloc_append_table_from_pages", C)]
    if variant == "ofed":
        if gpu:
            peer = N("ib_peer_umem_get", P, N("ib_get_peer_client", P))
            if not peer_ok:
                peer.err = "EFAULT"  # no peer client claims the range: the original GUP errno
            inner = N("__ib_umem_get", C, N("pin_user_pages_fast", C, err="EFAULT"), peer)
            if not peer_ok:
                inner.err = "EFAULT"
            return N("ib_umem_get_peer", C, inner)
        return N("ib_umem_get_peer", C, N("__ib_umem_get", C, *gup))
    return N("ib_umem_get", C, *gup)


# -- operations ----------------------------------------------------------------------------------
def alloc_pd(v: str) -> Node:
    drv = {"ofed": N("mlx5_ib_alloc_pd", D, N("mlx5_cmd_exec", D)),
           "upstream": N("mlx5_ib_alloc_pd", D, N("mlx5_cmd_exec", D)),
           "bnxt_re": N("bnxt_re_alloc_pd", D, N("bnxt_qplib_alloc_pd", D)),
           "irdma": N("irdma_alloc_pd", D, N("irdma_alloc_rsrc", D), N("irdma_sc_pd_init", D), N("ib_copy_to_udata", C))}[v]
    h = N("ib_uverbs_alloc_pd", U, N("uverbs_request", U), alloc_begin(), drv, N("rdma_restrack_add", C),
          N("uverbs_response", U))
    return write(h, creates=True)


def create_cq(v: str) -> Node:
    if v in ("ofed", "upstream"):
        drv = N("mlx5_ib_create_cq", D,
                N("create_cq_user", D, umem_get(v), N("mlx5_ib_db_map_user", D)),
                N("mlx5_comp_eqn_get", D),
                N("mlx5_core_create_cq", D, N("mlx5_create_cq", D), N("mlx5_cmd_do", D), N("mlx5_eq_add_cq", D),
                  N("mlx5_cmd_check", D)))
    elif v == "bnxt_re":
        drv = N("bnxt_re_create_cq", D, umem_get(v), N("bnxt_qplib_create_cq", D))
    else:
        drv = N("irdma_create_cq", D)
    h = N("ib_uverbs_create_cq", U, N("create_cq", U, alloc_begin(), drv, N("rdma_restrack_add", C),
                                      N("uverbs_response", U)))
    return write(h, creates=True)


def mlx5_create_qp_driver(v: str) -> Node:
    checks = [N(f, D) for f in ("check_qp_type", "check_valid_flow", "process_udata_size", "check_ucmd_data",
                                "process_vendor_flags", "get_qp_uidx", "process_create_flags", "check_qp_attr")]
    if v == "ofed":
        checks.insert(0, N("mlx5_ib_dev_res_srq_init", D))  # OFED 24.07 only
    user = N("create_user_qp", D, N("set_rq_size", D),
             N("_create_user_qp", D, N("alloc_bfreg", D), N("set_user_buf_size", D), umem_get(v),
               N("mlx5_ib_db_map_user", D)),
             N("mlx5_qpc_create_qp", D, N("mlx5_cmd_exec", D), N("create_resource_common", D)))
    return N("mlx5_ib_create_qp", D, *checks, N("create_qp", D, user))


def create_qp(v: str) -> Node:
    if v in ("ofed", "upstream"):
        drv = mlx5_create_qp_driver(v)
    elif v == "bnxt_re":
        drv = N("bnxt_re_create_qp", D, N("bnxt_re_test_qp_limits", D), N("bnxt_re_init_qp_attr", D),
                N("bnxt_re_init_user_qp", D), umem_get(v), N("bnxt_qplib_create_qp", D), N("ib_copy_to_udata", C))
    else:
        drv = N("irdma_create_qp", D, N("irdma_alloc_rsrc", D), N("irdma_get_pbl", D), N("irdma_setup_virt_qp", D),
                N("irdma_sc_qp_init", D), N("irdma_roce_fill_and_set_qpctx_info", D),
                N("irdma_cqp_create_qp_cmd", D), N("irdma_qp_add_qos", D))
    core = N("ib_create_qp_user", C, N("create_qp", C, drv, N("ib_create_qp_security", C), N("rdma_restrack_add", C)))
    lookups = [N("rdma_lookup_get_uobject", C) for _ in range(2)]  # send CQ, PD (recv CQ = send CQ)
    h = N("ib_uverbs_create_qp", U,
          N("create_qp", U, alloc_begin(), *lookups, core, N("ib_qp_usecnt_inc", C),
            N("rdma_lookup_put_uobject", C), N("uverbs_response", U)))
    return write(h, creates=True)


def driver_modify(v: str, transition: str) -> Node:
    if v in ("ofed", "upstream"):
        inner = [N("get_tx_affinity", D)]
        if transition == "INIT->RTR":
            inner.append(N("mlx5_set_path", D))
        inner += [N("set_qpc_atomic_flags", D), N("mlx5_core_qp_modify", D, N("modify_qp_mbox_alloc", D),
                                                   N("mlx5_cmd_exec", D))]
        return N("mlx5_ib_modify_qp", D, N("ib_modify_qp_is_ok", C), N("validate_rd_atomic", D),
                 N("__mlx5_ib_modify_qp", D, *inner))
    if v == "bnxt_re":
        return N("bnxt_re_modify_qp", D, N("bnxt_qplib_modify_qp", D))
    kids = [N("ib_modify_qp_is_ok", C), N("irdma_sc_qp_setctx_roce", D), N("irdma_hw_modify_qp", D)]
    if transition == "INIT->RTR":
        kids = [N("irdma_query_pkey", D), N("rdma_read_gid_l2_fields", C), N("irdma_add_arp", D)] + kids
    return N("irdma_modify_qp_roce", D, *kids)


def modify_qp(v: str, transition: str, counter_auto: bool = False, *, dmac: Node | None = None) -> Node:
    """The three RC transitions (rc_transitions): RESET->INIT binds an auto counter in AUTO mode;
    INIT->RTR resolves the address vector (RoCE connected QP: GID, DMAC, LAG slave)."""
    core: list[Node] = []
    if transition == "RESET->INIT" and counter_auto:
        if v in ("ofed", "upstream"):
            bind = N("rdma_counter_bind_qp_auto", C, N("rdma_get_counter_auto_mode", C),
                     N("alloc_and_bind", C, N("mlx5_ib_counter_alloc_stats", D),
                       N("__rdma_counter_bind_qp", C, N("mlx5_ib_counter_bind_qp", D, N("mlx5_cmd_exec", D),
                                                        N("mlx5_ib_qp_set_counter", D))),
                       N("rdma_restrack_add", C)))
        else:
            # no counter ops in the bnxt_re/irdma tables: alloc_and_bind returns NULL, the bind
            # returns -ENOMEM, which _ib_modify_qp ignores (routine)
            bind = N("rdma_counter_bind_qp_auto", C, N("rdma_get_counter_auto_mode", C), N("alloc_and_bind", C),
                     err="ENOMEM")
        core.append(bind)
    elif transition == "RESET->INIT":
        core.append(N("rdma_counter_bind_qp_auto", C))  # default mode: returns 0, nothing below
    if transition == "INIT->RTR":
        core += [N("rdma_fill_sgid_attr", C, N("rdma_check_ah_attr", C), N("rdma_get_gid_attr", C)),
                 dmac or N("ib_resolve_eth_dmac", C, N("rdma_check_gid_user_access", C),
                           N("ib_resolve_unicast_gid_dmac", C,
                             N("rdma_addr_find_l2_eth_by_grh", C, N("rdma_resolve_ip", C)))),
                 N("rdma_lag_get_ah_roce_slave", C, N("rdma_read_gid_attr_ndev_rcu", C))]
    core.append(N("ib_security_modify_qp", C, driver_modify(v, transition)))
    if transition == "INIT->RTR":
        core += [N("rdma_lag_put_ah_roce_slave", C), N("rdma_unfill_sgid_attr", C)]
    pre = [N("rdma_lookup_get_uobject", C)]
    if transition == "INIT->RTR":
        pre.append(N("copy_ah_attr_from_uverbs", U))
    h = N("ib_uverbs_modify_qp", U, N("modify_qp", U, *pre, N("ib_modify_qp_with_udata", C, N("_ib_modify_qp", C, *core)),
                                       N("rdma_lookup_put_uobject", C)))
    return write(h, creates=False)


def reg_mr(v: str, gpu: bool = False, peer_ok: bool = True, huge: bool = False) -> Node:
    if v in ("ofed", "upstream"):
        if huge:
            # !xlt_with_umr (a very large MR): reg_create instead of the mkey cache
            mr = N("create_real_mr", D, N("reg_create", D, N("mlx5_ib_create_mkey", D, N("mlx5_core_create_mkey", D,
                                                                                         N("mlx5_cmd_exec", D)))))
        elif v == "ofed" and gpu:
            # peer umems skip the mkey cache (gpu_direct_trace_shape)
            mr = N("create_real_mr", D, N("reg_create", D, N("mlx5_ib_create_mkey", D, N("mlx5_core_create_mkey", D,
                                                                                         N("mlx5_cmd_exec", D)))),
                   N("mlx5r_umr_update_mr_pas", D, N("mlx5r_umr_post_send_wait", D)),
                   N("ib_umem_activate_invalidation_notifier", P))
        else:
            mr = N("create_real_mr", D, N("alloc_cacheable_mr", D, N("mkey_cache_ent_from_rb_key", D),
                                          N("_mlx5_mr_cache_alloc", D)),
                   N("mlx5r_umr_update_mr_pas", D, N("mlx5r_umr_post_send_wait", D)))
        drv = N("mlx5_ib_reg_user_mr", D, N("mlx5r_umr_resource_init", D), umem_get(v, gpu, peer_ok), mr)
    elif v == "bnxt_re":
        drv = N("bnxt_re_reg_user_mr", D, umem_get(v), N("__bnxt_re_user_reg_mr", D))
    else:
        drv = N("irdma_reg_user_mr", D, umem_get(v), N("irdma_alloc_iwmr", D),
                N("irdma_reg_user_mr_type_mem", D, N("irdma_setup_pbles", D), N("irdma_check_mr_contiguous", D),
                  N("irdma_create_stag", D), N("irdma_hwreg_mr", D)))
    h = N("ib_uverbs_reg_mr", U, alloc_begin(), N("rdma_lookup_get_uobject", C), drv, N("rdma_restrack_add", C),
          N("rdma_lookup_put_uobject", C), N("uverbs_response", U))
    return write(h, creates=True)


def reg_dmabuf_mr(v: str) -> Node:
    """GPU memory on upstream mlx5 hosts: ioctl UVERBS_METHOD_REG_DMABUF_MR."""
    assert v == "upstream"
    drv = N("mlx5_ib_reg_user_mr_dmabuf", D, N("mlx5r_umr_resource_init", D),
            N("ib_umem_dmabuf_get", C, N("dma_buf_get", C), N("dma_buf_dynamic_attach", C)),
            N("alloc_cacheable_mr", D),
            N("mlx5_ib_init_dmabuf_mr", D, N("pagefault_dmabuf_mr", D,
                                             N("ib_umem_dmabuf_map_pages", C, N("dma_buf_map_attachment", C),
                                               N("dma_resv_wait_timeout", C)),
                                             N("mlx5r_umr_update_mr_pas", D))))
    h = N("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", U, drv, N("rdma_restrack_add", C),
          N("uverbs_finalize_uobj_create", U))
    return ioctl([alloc_begin(), N("rdma_lookup_get_uobject", C)], h,
                 [N("uverbs_finalize_object", C, N("rdma_alloc_commit_uobject", C))])


def query_gid(empty: bool = False) -> Node:
    h = N("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", U,
          N("rdma_get_gid_attr", C, err="ENODATA" if empty else None))
    if empty:
        h.err = "ENODATA"
    else:
        h.kids += [N("rdma_read_gid_attr_ndev_rcu", C), N("rdma_put_gid_attr", C)]
    root = ioctl([], h, [])
    if empty:  # propagates: run_method, cmd_verbs and the ioctl return it
        for n in (root, root.kids[0], root.kids[0].kids[0]):
            n.err = "ENODATA"
    return root


def query_device(v: str, ex: bool) -> Node:
    if not ex:
        h = N("ib_uverbs_query_device", U, N("ib_uverbs_get_ucontext_file", U), N("copy_query_dev_fields", U))
        return write(h, creates=False)
    drv = {"ofed": "mlx5_ib_query_device", "upstream": "mlx5_ib_query_device", "bnxt_re": "bnxt_re_query_device",
           "irdma": "irdma_query_device"}[v]
    h = N("ib_uverbs_ex_query_device", U, N(drv, D))
    root = write(h, creates=False)
    if v == "irdma":
        # irdma_query_device: -EINVAL when udata->inlen || udata->outlen (the version read);
        # rdma-core then falls back to the legacy query (routine)
        for n in (root, h, h.kids[0]):
            n.err = "EINVAL"
    return root


def query_port(v: str) -> Node:
    drv = {"ofed": N("mlx5_ib_query_port", D, N("mlx5_query_port_roce", D)),
           "upstream": N("mlx5_ib_query_port", D, N("mlx5_query_port_roce", D)),
           "bnxt_re": N("bnxt_re_query_port", D), "irdma": N("irdma_query_port", D, N("ib_get_eth_speed", C))}[v]
    h = N("ib_uverbs_query_port", U, N("ib_query_port", C, N("__ib_query_port", C, drv)), N("copy_port_attr_to_resp", U))
    return write(h, creates=False)


def destroy_qp(v: str) -> Node:
    drv = {"ofed": N("mlx5_ib_destroy_qp", D, N("destroy_qp_common", D, N("mlx5_core_qp_modify", D),
                                                N("mlx5_core_destroy_qp", D), N("destroy_qp", D))),
           "upstream": N("mlx5_ib_destroy_qp", D, N("destroy_qp_common", D, N("mlx5_core_qp_modify", D),
                                                    N("mlx5_core_destroy_qp", D), N("destroy_qp", D))),
           "bnxt_re": N("bnxt_re_destroy_qp", D, N("bnxt_qplib_destroy_qp", D)),
           "irdma": N("irdma_destroy_qp", D, N("irdma_modify_qp_to_err", D), N("irdma_cqp_qp_destroy_cmd", D),
                      N("irdma_free_qp_rsrc", D))}[v]
    # rdma_counter_unbind_qp(force) returns -EINVAL for a QP without a counter: ignored, on
    # every destroy of a QP not bound in AUTO mode (routine)
    free = N("uverbs_free_qp", C, N("ib_destroy_qp_user", C, N("rdma_counter_unbind_qp", C, err="EINVAL"), drv,
                                    N("ib_qp_usecnt_dec", C), N("rdma_restrack_del", C)),
             N("ib_uverbs_release_uevent", U))
    h = N("ib_uverbs_destroy_qp", U,
          N("__uobj_get_destroy", C, N("rdma_lookup_get_uobject", C),
            N("uobj_destroy", C, N("uverbs_destroy_uobject", C, N("destroy_hw_idr_uobject", C, free)))),
          N("rdma_lookup_put_uobject", C))
    return write(h, creates=False)


def dereg_mr(v: str) -> Node:
    drv = {"ofed": N("mlx5_ib_dereg_mr", D, N("mlx5_revoke_mr", D, N("mlx5r_umr_revoke_mr", D)),
                     N("ib_umem_release", C), N("mlx5_free_priv_descs", D)),
           "upstream": N("mlx5_ib_dereg_mr", D, N("mlx5_revoke_mr", D, N("mlx5r_umr_revoke_mr", D)),
                         N("ib_umem_release", C), N("mlx5_free_priv_descs", D)),
           "bnxt_re": N("bnxt_re_dereg_mr", D, N("bnxt_qplib_free_mrw", D), N("ib_umem_release", C)),
           "irdma": N("irdma_dereg_mr", D, N("irdma_hwdereg_mr", D), N("irdma_free_stag", D),
                      N("ib_umem_release", C))}[v]
    h = N("ib_uverbs_dereg_mr", U,
          N("__uobj_perform_destroy", C, N("__uobj_get_destroy", C, N("rdma_lookup_get_uobject", C),
                                           N("uobj_destroy", C, N("uverbs_destroy_uobject", C, N(
                                               "destroy_hw_idr_uobject", C, N("uverbs_free_mr", C, N(
                                                   "ib_dereg_mr_user", C, drv)), N("ib_rdmacg_uncharge", C))))),
            N("rdma_lookup_put_uobject", C)))
    return write(h, creates=False)


def dealloc_pd(v: str) -> Node:
    drv = {"ofed": N("mlx5_ib_dealloc_pd", D, N("mlx5_cmd_dealloc_pd", D, N("mlx5_cmd_exec", D))),
           "upstream": N("mlx5_ib_dealloc_pd", D, N("mlx5_cmd_dealloc_pd", D, N("mlx5_cmd_exec", D))),
           "bnxt_re": N("bnxt_re_dealloc_pd", D), "irdma": N("irdma_dealloc_pd", D, N("irdma_free_rsrc", D))}[v]
    h = N("ib_uverbs_dealloc_pd", U,
          N("__uobj_perform_destroy", C, N("__uobj_get_destroy", C, N("rdma_lookup_get_uobject", C),
                                           N("uobj_destroy", C, N("uverbs_destroy_uobject", C, N(
                                               "destroy_hw_idr_uobject", C, N("uverbs_free_pd", C, N(
                                                   "ib_dealloc_pd_user", C, drv, N("rdma_restrack_del", C))),
                                               N("ib_rdmacg_uncharge", C)), N("remove_handle_idr_uobject", C))),
                                           ),
            N("rdma_lookup_put_uobject", C)))
    return write(h, creates=False)


# -- failures ----------------------------------------------------------------------------------
def find_path(root: Node, names: list[str]) -> list[Node]:
    """The nodes along `names` (fn names from the root down; the first match at each level)."""
    assert root.fn == names[0], (root.fn, names)
    path = [root]
    for name in names[1:]:
        nxt = next((k for k in path[-1].kids if k.fn == name), None)
        assert nxt is not None, (name, [k.fn for k in path[-1].kids])
        path.append(nxt)
    return path


def fail(root: Node, names: list[str], errno: str, *, keep: int = 0, mask: dict[str, str] | None = None,
         unwind: dict[str, list[Node]] | None = None) -> Node:
    """A copy of `root` failing at the node reached by `names` with `errno`: that node keeps
    its first `keep` children (the calls it made before it gave up, all successful), every
    ancestor keeps the children it called before the failing one, adds `unwind[fn]` after it
    (its error path) and returns the errno, or `mask[fn]` from that frame up (uobj_get_obj_read
    turns any lookup error into -EINVAL). Nothing after the failure runs."""
    root = copy(root)
    path = find_path(root, names)
    origin = path[-1]
    origin.kids = origin.kids[:keep]
    origin.err = errno
    err = errno
    for parent, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=False):
        i = parent.kids.index(child)
        parent.kids = parent.kids[: i + 1] + list((unwind or {}).get(parent.fn, []))
        err = (mask or {}).get(parent.fn, err)
        parent.err = err
    return root


# -- flattening --------------------------------------------------------------------------------
ERRNO_NUM = {name: getattr(_errno, name) for name in dir(_errno) if name.startswith("E")}


def flatten(root: Node) -> list[dict]:
    """Entry-order frames: probe, layer, depth, errno, ret, and a relative entry time and
    latency (ns) from a simple cost model (a frame: ~0.7-3 us of its own plus its children)."""
    out: list[dict] = []

    def walk(n: Node, depth: int, t: int) -> int:
        row = {"probe": n.fn, "layer": n.layer, "depth": depth, "errno": n.err, "t": t}
        out.append(row)
        own = 700 + (len(n.fn) * 37) % 2300  # deterministic per function
        if n.fn in ("mlx5_cmd_exec", "mlx5_cmd_do"):
            own += 40_000  # a firmware command round trip
        end = t + own // 2
        for k in n.kids:
            end = walk(k, depth + 1, end)
        end += own - own // 2
        row["lat"] = end - t
        if n.err:
            row["ret"] = -ERRNO_NUM[n.err]
        elif n.fn == "ib_uverbs_write":
            row["ret"] = 24  # count on success
        else:
            row["ret"] = 0
        return end

    walk(root, 0, 0)
    return out


def all_functions(root: Node) -> set[str]:
    out = {root.fn}
    for k in root.kids:
        out |= all_functions(k)
    return out
