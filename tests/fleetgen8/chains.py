"""Call trees of the RDMA control path, written from reference/rdma_control_path.yaml only.

Every tree is a list of frames in entry order: (depth, function, layer, errno or None). The
trees start at the dispatch function of their ABI (ib_uverbs_write for the write() commands,
ib_uverbs_ioctl for the ioctl methods), as a tracer probing every function of the reference
sees them: 15-35 frames, three functions named create_qp in one create_qp tree. Which frame
fails, and what the failure propagates to, follows the reference's errors lists:
  - a failing frame's callers return the same errno up to the root (the reference's "<child
    errno>" / "<driver errno>" entries), except where a caller absorbs it (_ib_modify_qp ignores
    rdma_counter_bind_qp_auto; OFED's __ib_umem_get falls back to ib_peer_umem_get after a
    failed pin_user_pages_fast);
  - after a failure the caller's unwind runs (rdma_alloc_abort_uobject instead of commit,
    __ib_umem_release after a failed pin, ib_umem_release when create_cq_user fails late).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

Frame = tuple[int, str, str, str | None]  # depth, function, layer, errno

ERRNO_CODES = {"EFAULT": 14, "EOPNOTSUPP": 95, "EAGAIN": 11, "ENOMEM": 12, "ETIMEDOUT": 110, "EINVAL": 22}
# ib_uverbs_write returns the number of bytes of the command on success (errno_conventions)
WRITE_SIZES = {"alloc_pd": 16, "create_cq": 48, "create_qp": 112, "modify_qp": 120, "reg_mr": 48}


@dataclass
class Tree:
    key: str
    operation: str
    frames: list[Frame]
    arg: str | None = None  # on the handler frame: the QP transition of a modify_qp
    root_cause: str | None = None
    bif: tuple[str, str, str] | None = None  # (function, errno, layer) where it leaves good behaviour
    routine: bool = False  # its only errors are routine ones
    timed_latency_ns: dict[int, int] = field(default_factory=dict)  # frame index -> extra latency

    @cached_property
    def failed(self) -> bool:
        return any(f[3] for f in self.frames)

    def without(self, fns: frozenset[str]) -> Tree:
        """The tree as a tracer that does not probe `fns` (leaves only) sees it."""
        keep = [f for f in self.frames if f[1] not in fns]
        return Tree(self.key, self.operation, keep, self.arg, self.root_cause, self.bif, self.routine,
                    {keep.index(self.frames[i]): v for i, v in self.timed_latency_ns.items() if self.frames[i] in keep})


def _fail(frames: list[Frame], errno: str, upto: int) -> list[Frame]:
    """Mark frames[upto] and every ancestor of it as failing with errno."""
    out = list(frames)
    d = out[upto][0]
    out[upto] = (*out[upto][:3], errno)
    for i in range(upto - 1, -1, -1):
        if out[i][0] < d:
            out[i] = (*out[i][:3], errno)
            d = out[i][0]
    return out


def _alloc_begin(d: int) -> list[Frame]:
    return [(d, "rdma_alloc_begin_uobject", "core", None), (d + 1, "alloc_begin_idr_uobject", "core", None),
            (d + 1, "alloc_uobj", "core", None), (d + 1, "idr_add_uobj", "core", None),
            (d + 1, "ib_rdmacg_try_charge", "core", None)]


def _finalize(d: int, ok: bool) -> list[Frame]:
    return [(d, "uverbs_finalize_object", "core", None),
            (d + 1, "rdma_alloc_commit_uobject" if ok else "rdma_alloc_abort_uobject", "core", None)]


def _umem(d: int, flavor: str, pin_errno: str | None = None, peer: bool = False, peer_errno: str | None = None) -> list[Frame]:
    """Pinning user memory: upstream ib_umem_get, OFED ib_umem_get_peer -> __ib_umem_get with the
    peer-memory fallback when the pin fails (GPU memory)."""
    if flavor == "ofed":
        out: list[Frame] = [(d, "ib_umem_get_peer", "core", None), (d + 1, "__ib_umem_get", "core", None),
                            (d + 2, "pin_user_pages_fast", "core", pin_errno)]
        if pin_errno:
            out.append((d + 2, "__ib_umem_release", "core", None))
            if peer:
                out += [(d + 2, "ib_peer_umem_get", "peer-mem", peer_errno), (d + 3, "ib_get_peer_client", "peer-mem", None)]
                if peer_errno:
                    out = _fail(out, peer_errno, len(out) - 2)
        else:
            out.append((d + 2, "sg_alloc_append_table_from_pages", "core", None))
        return out
    return [(d, "ib_umem_get", "core", None), (d + 1, "pin_user_pages_fast", "core", None),
            (d + 1, "sg_alloc_append_table_from_pages", "core", None)]


def alloc_pd(vendor: str) -> Tree:
    f: list[Frame] = [(0, "ib_uverbs_write", "uverbs", None), (1, "ib_uverbs_alloc_pd", "uverbs", None),
                      (2, "uverbs_request", "uverbs", None), *_alloc_begin(2)]
    if vendor == "irdma":
        f += [(2, "irdma_alloc_pd", "driver", None), (3, "irdma_alloc_rsrc", "driver", None),
              (3, "irdma_sc_pd_init", "driver", None), (3, "ib_copy_to_udata", "core", None)]
    else:
        f += [(2, "mlx5_ib_alloc_pd", "driver", None), (3, "mlx5_cmd_exec", "driver", None)]
    f += [(2, "rdma_restrack_add", "core", None), (2, "uverbs_response", "uverbs", None), *_finalize(1, True)]
    return Tree(f"alloc_pd/{vendor}", "alloc_pd", f)


def create_cq(vendor: str, flavor: str, compression_probe: bool = False) -> Tree:
    """compression_probe: the job asks for CQE compression the HCA lacks; create_cq_user fails
    EOPNOTSUPP after pinning the buffer and the doorbell (its unwind releases the umem)."""
    f: list[Frame] = [(0, "ib_uverbs_write", "uverbs", None), (1, "ib_uverbs_create_cq", "uverbs", None),
                      (2, "create_cq", "uverbs", None), *_alloc_begin(3)]
    if vendor == "irdma":
        f += [(3, "irdma_create_cq", "driver", None)]
    else:
        f += [(3, "mlx5_ib_create_cq", "driver", None), (4, "create_cq_user", "driver", None),
              *_umem(5, flavor), (5, "mlx5_ib_db_map_user", "driver", None)]
        if compression_probe:
            f.append((5, "ib_umem_release", "core", None))
            f = _fail(f, "EOPNOTSUPP", next(i for i, x in enumerate(f) if x[1] == "create_cq_user"))
            f += _finalize(1, False)
            return Tree(f"create_cq/{vendor}/{flavor}/cqe-compression", "create_cq", f, routine=True,
                        bif=("create_cq_user", "EOPNOTSUPP", "driver"))
        f += [(4, "mlx5_comp_eqn_get", "driver", None), (4, "mlx5_core_create_cq", "driver", None),
              (5, "mlx5_cmd_do", "driver", None), (5, "mlx5_eq_add_cq", "driver", None)]
    f += [(3, "rdma_restrack_add", "core", None), (3, "uverbs_response", "uverbs", None), *_finalize(1, True)]
    return Tree(f"create_cq/{vendor}/{flavor}", "create_cq", f)


def create_qp(vendor: str, flavor: str, fail: str | None = None) -> Tree:
    """fail: 'rdmacg' (the rdma cgroup's hca_object limit: EAGAIN at ib_rdmacg_try_charge, the
    allocation never reaches the driver) or 'fw_lim' (CREATE_QP firmware LIM_ERR -> ENOMEM at
    mlx5_cmd_exec under mlx5_qpc_create_qp; err_create unwinds with destroy_qp)."""
    f: list[Frame] = [(0, "ib_uverbs_write", "uverbs", None), (1, "ib_uverbs_create_qp", "uverbs", None),
                      (2, "create_qp", "uverbs", None), *_alloc_begin(3)]
    if fail == "rdmacg":
        f = _fail(f, "EAGAIN", len(f) - 1)
        f += _finalize(1, False)
        return Tree(f"create_qp/{vendor}/{flavor}/rdmacg", "create_qp", f, routine=True,
                    bif=("ib_rdmacg_try_charge", "EAGAIN", "core"))
    f += [(3, "rdma_lookup_get_uobject", "core", None), (3, "rdma_lookup_get_uobject", "core", None),
          (3, "ib_create_qp_user", "core", None), (4, "create_qp", "core", None)]
    if vendor == "irdma":
        f += [(5, "irdma_create_qp", "driver", None)] + [(6, fn, "driver", None) for fn in (
            "irdma_alloc_rsrc", "irdma_get_pbl", "irdma_setup_virt_qp", "irdma_sc_qp_init",
            "irdma_roce_fill_and_set_qpctx_info", "irdma_cqp_create_qp_cmd", "irdma_qp_add_qos")]
    else:
        f += [(5, "mlx5_ib_create_qp", "driver", None)]
        if flavor == "ofed":
            f.append((6, "mlx5_ib_dev_res_srq_init", "driver", None))
        f += [(6, fn, "driver", None) for fn in ("check_qp_type", "check_valid_flow", "process_udata_size",
                                                 "check_ucmd_data", "process_vendor_flags", "get_qp_uidx",
                                                 "process_create_flags", "check_qp_attr")]
        f += [(6, "create_qp", "driver", None), (7, "create_user_qp", "driver", None), (8, "set_rq_size", "driver", None),
              (8, "_create_user_qp", "driver", None), (9, "alloc_bfreg", "driver", None),
              (9, "set_user_buf_size", "driver", None), *_umem(9, flavor), (9, "mlx5_ib_db_map_user", "driver", None),
              (8, "mlx5_qpc_create_qp", "driver", None), (9, "mlx5_cmd_exec", "driver", None)]
        if fail == "fw_lim":
            f = _fail(f, "ENOMEM", len(f) - 1)
            f += [(8, "destroy_qp", "driver", None)]
            f += [(3, "rdma_lookup_put_uobject", "core", None), (3, "rdma_lookup_put_uobject", "core", None),
                  *_finalize(1, False)]
            return Tree(f"create_qp/{vendor}/{flavor}/fw_lim", "create_qp", f, root_cause="qp_fw_resource_exhausted",
                        bif=("mlx5_cmd_exec", "ENOMEM", "driver"))
        f += [(9, "create_resource_common", "driver", None)]
    f += [(5, "ib_create_qp_security", "core", None), (5, "rdma_restrack_add", "core", None),
          (3, "ib_qp_usecnt_inc", "core", None), (3, "rdma_lookup_put_uobject", "core", None),
          (3, "rdma_lookup_put_uobject", "core", None), (3, "uverbs_response", "uverbs", None), *_finalize(1, True)]
    return Tree(f"create_qp/{vendor}/{flavor}", "create_qp", f)


def modify_qp(vendor: str, transition: str, fail: str | None = None) -> Tree:
    """RC transitions of a RoCE QP (rc_transitions). fail 'neigh': INIT->RTR's DMAC resolution
    never resolves the neighbour (rdma_addr_find_l2_eth_by_grh ETIMEDOUT after 1000 ms); the
    error propagates through _ib_modify_qp, which unfills the sgid attr on its way out."""
    f: list[Frame] = [(0, "ib_uverbs_write", "uverbs", None), (1, "ib_uverbs_modify_qp", "uverbs", None),
                      (2, "modify_qp", "uverbs", None), (3, "rdma_lookup_get_uobject", "core", None)]
    rtr = transition == "INIT->RTR"
    if rtr:
        f.append((3, "copy_ah_attr_from_uverbs", "uverbs", None))
    f += [(3, "ib_modify_qp_with_udata", "core", None), (4, "_ib_modify_qp", "core", None)]
    if rtr:
        f += [(5, "rdma_fill_sgid_attr", "core", None), (6, "rdma_check_ah_attr", "core", None),
              (6, "rdma_get_gid_attr", "core", None), (5, "ib_resolve_eth_dmac", "core", None),
              (6, "rdma_check_gid_user_access", "core", None), (6, "ib_resolve_unicast_gid_dmac", "core", None),
              (7, "rdma_addr_find_l2_eth_by_grh", "core", None), (8, "rdma_resolve_ip", "core", None)]
        if fail == "neigh":
            origin = len(f) - 2
            f = _fail(f, "ETIMEDOUT", origin)
            f += [(5, "rdma_unfill_sgid_attr", "core", None), (3, "rdma_lookup_put_uobject", "core", None)]
            t = Tree(f"modify_qp/{vendor}/{transition}/neigh", "modify_qp", f, arg=transition,
                     root_cause="rack_tor_neighbour_timeout", bif=("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "core"))
            t.timed_latency_ns[origin] = 1_000_000_000
            return t
        f += [(5, "rdma_lag_get_ah_roce_slave", "core", None), (6, "rdma_read_gid_attr_ndev_rcu", "core", None)]
    if transition == "RESET->INIT":
        f += [(5, "rdma_counter_bind_qp_auto", "core", None), (6, "rdma_get_counter_auto_mode", "core", None)]
    f.append((5, "ib_security_modify_qp", "core", None))
    if vendor == "irdma":
        f += [(6, "irdma_modify_qp_roce", "driver", None)] + [(7, fn, "driver", None) for fn in (
            "irdma_query_pkey", "rdma_read_gid_l2_fields", "irdma_add_arp", "ib_modify_qp_is_ok",
            "irdma_sc_qp_setctx_roce", "irdma_hw_modify_qp")]
    else:
        f += [(6, "mlx5_ib_modify_qp", "driver", None), (7, "ib_modify_qp_is_ok", "core", None),
              (7, "validate_rd_atomic", "driver", None), (7, "__mlx5_ib_modify_qp", "driver", None),
              (8, "get_tx_affinity", "driver", None)]
        if rtr:
            f.append((8, "mlx5_set_path", "driver", None))
        if transition == "RESET->INIT":
            f.append((8, "set_qpc_atomic_flags", "driver", None))
        f += [(8, "mlx5_core_qp_modify", "driver", None), (9, "modify_qp_mbox_alloc", "driver", None),
              (9, "mlx5_cmd_exec", "driver", None)]
    if rtr:
        f += [(5, "rdma_lag_put_ah_roce_slave", "core", None), (5, "rdma_unfill_sgid_attr", "core", None)]
    f.append((3, "rdma_lookup_put_uobject", "core", None))
    return Tree(f"modify_qp/{vendor}/{transition}", "modify_qp", f, arg=transition)


def reg_mr(vendor: str, flavor: str, gpu: bool, peer_fail: bool = False) -> Tree:
    """ib_uverbs_reg_mr of host memory, or on OFED of GPU memory (gpu_direct_trace_shape: the pin
    fails EFAULT and ib_peer_umem_get takes the range; peer umems skip the mkey cache, reg_create,
    then the UMR and the invalidation notifier). peer_fail: no peer client claims the range, and
    ib_peer_umem_get returns the original EFAULT."""
    f: list[Frame] = [(0, "ib_uverbs_write", "uverbs", None), (1, "ib_uverbs_reg_mr", "uverbs", None),
                      *_alloc_begin(2), (2, "rdma_lookup_get_uobject", "core", None)]
    if vendor == "irdma":
        f += [(2, "irdma_reg_user_mr", "driver", None), *_umem(3, "upstream"), (3, "irdma_alloc_iwmr", "driver", None),
              (3, "irdma_reg_user_mr_type_mem", "driver", None)]
        f += [(4, fn, "driver", None) for fn in ("irdma_setup_pbles", "irdma_check_mr_contiguous",
                                                 "irdma_create_stag", "irdma_hwreg_mr")]
    else:
        f += [(2, "mlx5_ib_reg_user_mr", "driver", None), (3, "mlx5r_umr_resource_init", "driver", None)]
        if gpu:
            f += _umem(3, "ofed", pin_errno="EFAULT", peer=True, peer_errno="EFAULT" if peer_fail else None)
            if peer_fail:
                f = _fail(f, "EFAULT", next(i for i, x in enumerate(f) if x[1] == "ib_peer_umem_get"))
                f += [(2, "rdma_lookup_put_uobject", "core", None), *_finalize(1, False)]
                return Tree(f"reg_mr/{vendor}/{flavor}/gpu/unclaimed", "reg_mr", f, root_cause="peermem_gpu_unclaimed",
                            bif=("ib_peer_umem_get", "EFAULT", "peer-mem"))
            f += [(3, "create_real_mr", "driver", None), (4, "reg_create", "driver", None),
                  (5, "mlx5_core_create_mkey", "driver", None), (6, "mlx5_cmd_exec", "driver", None),
                  (4, "mlx5r_umr_update_mr_pas", "driver", None),
                  (4, "ib_umem_activate_invalidation_notifier", "peer-mem", None)]
        else:
            f += _umem(3, flavor)
            f += [(3, "create_real_mr", "driver", None), (4, "alloc_cacheable_mr", "driver", None),
                  (5, "mkey_cache_ent_from_rb_key", "driver", None), (5, "_mlx5_mr_cache_alloc", "driver", None),
                  (4, "mlx5r_umr_update_mr_pas", "driver", None)]
    f += [(2, "rdma_restrack_add", "core", None), (2, "rdma_lookup_put_uobject", "core", None),
          (2, "uverbs_response", "uverbs", None), *_finalize(1, True)]
    t = Tree(f"reg_mr/{vendor}/{flavor}/{'gpu' if gpu else 'host'}", "reg_mr", f)
    if gpu:
        t.routine, t.bif = True, ("pin_user_pages_fast", "EFAULT", "core")
    return t


def reg_dmabuf_mr(vendor: str) -> Tree:
    """The ioctl UVERBS_METHOD_REG_DMABUF_MR. On the irdma release these hosts run the driver has
    no reg_user_mr_dmabuf op (missing from the older verbs.c): the handler returns EOPNOTSUPP
    before any driver call, and bundle_destroy aborts the new MR uobject."""
    f: list[Frame] = [(0, "ib_uverbs_ioctl", "uverbs", None), (1, "ib_uverbs_cmd_verbs", "uverbs", None),
                      (2, "ib_uverbs_run_method", "uverbs", None), *_alloc_begin(3),
                      (3, "rdma_lookup_get_uobject", "core", None),
                      (3, "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "uverbs", None)]
    if vendor == "irdma":
        f = _fail(f, "EOPNOTSUPP", len(f) - 1)
        f += _finalize(3, False)
        return Tree("reg_dmabuf_mr/irdma/no-op", "reg_dmabuf_mr", f, root_cause="irdma_without_dmabuf_op",
                    bif=("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "EOPNOTSUPP", "uverbs"))
    f += [(4, "mlx5_ib_reg_user_mr_dmabuf", "driver", None), (5, "mlx5r_umr_resource_init", "driver", None),
          (5, "ib_umem_dmabuf_get", "core", None), (6, "dma_buf_get", "core", None),
          (6, "dma_buf_dynamic_attach", "core", None), (5, "alloc_cacheable_mr", "driver", None),
          (5, "mlx5_ib_init_dmabuf_mr", "driver", None), (6, "pagefault_dmabuf_mr", "driver", None),
          (7, "ib_umem_dmabuf_map_pages", "core", None), (7, "mlx5r_umr_update_mr_pas", "driver", None),
          (4, "rdma_restrack_add", "core", None), (4, "uverbs_finalize_uobj_create", "uverbs", None),
          *_finalize(3, True)]
    return Tree(f"reg_dmabuf_mr/{vendor}", "reg_dmabuf_mr", f)


ROOT_CAUSES = ("peermem_gpu_unclaimed", "rack_tor_neighbour_timeout", "irdma_without_dmabuf_op",
               "qp_fw_resource_exhausted")


def all_trees() -> dict[str, Tree]:
    out: dict[str, Tree] = {}
    for vendor, flavor in (("mlx5", "ofed"), ("mlx5", "upstream"), ("irdma", "upstream")):
        trees = [alloc_pd(vendor), create_cq(vendor, flavor), create_qp(vendor, flavor),
                 create_qp(vendor, flavor, "rdmacg"), reg_mr(vendor, flavor, gpu=False),
                 *(modify_qp(vendor, t) for t in ("RESET->INIT", "INIT->RTR", "RTR->RTS")),
                 modify_qp(vendor, "INIT->RTR", "neigh")]
        if vendor == "mlx5":
            trees += [create_cq(vendor, flavor, compression_probe=True), create_qp(vendor, flavor, "fw_lim")]
        if flavor == "ofed":
            trees += [reg_mr(vendor, flavor, gpu=True), reg_mr(vendor, flavor, gpu=True, peer_fail=True)]
        else:
            trees.append(reg_dmabuf_mr(vendor))
        for t in trees:
            out.setdefault(t.key, t)
    return out


def functions_used(trees: dict[str, Tree]) -> set[str]:
    return {f[1] for t in trees.values() for f in t.frames}
