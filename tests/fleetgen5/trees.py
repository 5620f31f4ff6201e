"""Successful call trees of every operation the reference names, as the fleet tracer records
them with a probe on every traceable function (fentry-style, not a stack unwind): one line per
frame, indentation = depth, then the layer (U uverbs, C core, D driver, P peer-mem) and, for an
error a successful call absorbs, `=ERRNO`.

Sources: reference/rdma_control_path.yaml (operations.*.tree, common.*, vendor_equivalents,
ofed_peer_memory). Inline functions and macros (traceable: inline) are left out: they never
show as frames. `{DRV:slot}` lines are replaced by the host vendor's driver subtree."""

from __future__ import annotations

import re

# ioctl dispatch (common.dispatch_ioctl): the root of ioctl-only operations
_IOCTL = """ib_uverbs_ioctl U
 ib_uverbs_cmd_verbs U
  ib_uverbs_run_method U
   uverbs_process_attr U
    uverbs_get_uobject_from_file U
{body}
   bundle_destroy U
    uverbs_finalize_object C"""

_ALLOC_BEGIN = """rdma_alloc_begin_uobject C
 alloc_uobj C
 alloc_begin_idr_uobject C
  idr_add_uobj C
  ib_rdmacg_try_charge C"""


def _at(text: str, depth: int) -> str:
    return "\n".join(" " * depth + line for line in text.splitlines())


TREES: dict[str, str] = {
    "alloc_pd": f"""ib_uverbs_alloc_pd U
 uverbs_request U
{_at(_ALLOC_BEGIN, 1)}
 {{DRV:alloc_pd}}
 rdma_restrack_add C
 uverbs_response U""",
    "create_cq": f"""ib_uverbs_create_cq U
 uverbs_request U
 create_cq C
{_at(_ALLOC_BEGIN, 2)}
  _ib_uverbs_lookup_comp_file C
   rdma_lookup_get_uobject C
  {{DRV:create_cq}}
  rdma_restrack_add C
  uverbs_response U""",
    "create_qp": f"""ib_uverbs_create_qp U
 uverbs_request U
 create_qp C
{_at(_ALLOC_BEGIN, 2)}
  rdma_lookup_get_uobject C
  rdma_lookup_get_uobject C
  rdma_lookup_get_uobject C
  ib_create_qp_user C
   create_qp C
    {{DRV:create_qp}}
   ib_create_qp_security C
   rdma_restrack_add C
  ib_qp_usecnt_inc C
  rdma_lookup_put_uobject C
  uverbs_response U""",
    # RESET->INIT: counter auto-binding runs (rdma_counter_bind_qp_auto)
    "modify_qp:RESET->INIT": """ib_uverbs_modify_qp U
 uverbs_request U
 modify_qp C
  rdma_lookup_get_uobject C
  ib_modify_qp_with_udata C
   _ib_modify_qp C
    {DRV:counter_auto}
    ib_security_modify_qp C
     {DRV:modify_qp}
  rdma_lookup_put_uobject C""",
    # INIT->RTR: the AV path (sgid attr, RoCE dmac resolution, LAG slave), the deepest modify
    "modify_qp:INIT->RTR": """ib_uverbs_modify_qp U
 uverbs_request U
 modify_qp C
  rdma_lookup_get_uobject C
  copy_ah_attr_from_uverbs C
  ib_modify_qp_with_udata C
   _ib_modify_qp C
    rdma_fill_sgid_attr C
     rdma_check_ah_attr C
     rdma_get_gid_attr C
    ib_resolve_eth_dmac C
     rdma_check_gid_user_access C
     ib_resolve_unicast_gid_dmac C
      rdma_addr_find_l2_eth_by_grh C
       rdma_resolve_ip C
    rdma_lag_get_ah_roce_slave C
     rdma_read_gid_attr_ndev_rcu C
    ib_security_modify_qp C
     {DRV:modify_qp_av}
    rdma_lag_put_ah_roce_slave C
    rdma_unfill_sgid_attr C
  rdma_lookup_put_uobject C""",
    "modify_qp:RTR->RTS": """ib_uverbs_modify_qp U
 uverbs_request U
 modify_qp C
  rdma_lookup_get_uobject C
  ib_modify_qp_with_udata C
   _ib_modify_qp C
    ib_security_modify_qp C
     {DRV:modify_qp}
  rdma_lookup_put_uobject C""",
    "modify_qp:RTS->ERR": """ib_uverbs_modify_qp U
 uverbs_request U
 modify_qp C
  rdma_lookup_get_uobject C
  ib_modify_qp_with_udata C
   _ib_modify_qp C
    ib_security_modify_qp C
     {DRV:modify_qp}
  rdma_lookup_put_uobject C""",
    "modify_qp:ERR->RESET": """ib_uverbs_modify_qp U
 uverbs_request U
 modify_qp C
  rdma_lookup_get_uobject C
  ib_modify_qp_with_udata C
   _ib_modify_qp C
    ib_security_modify_qp C
     {DRV:modify_qp}
  rdma_lookup_put_uobject C""",
    "reg_mr": f"""ib_uverbs_reg_mr U
 uverbs_request U
{_at(_ALLOC_BEGIN, 1)}
 rdma_lookup_get_uobject C
 {{DRV:reg_mr}}
 rdma_restrack_add C
 rdma_lookup_put_uobject C
 uverbs_response U""",
    # GPUDirect on MLNX_OFED (ofed_peer_memory.gpu_direct_trace_shape): GUP refuses GPU memory
    # (EFAULT absorbed), the peer client (nvidia-peermem) pins it, the mkey skips the cache
    "reg_mr:gpu": f"""ib_uverbs_reg_mr U
 uverbs_request U
{_at(_ALLOC_BEGIN, 1)}
 rdma_lookup_get_uobject C
 mlx5_ib_reg_user_mr D
  mlx5r_umr_resource_init D
  ib_umem_get_peer C
   __ib_umem_get C
    pin_user_pages_fast C =EFAULT
    ib_peer_umem_get P
     ib_get_peer_client P
      nv_mem_acquire P
     nv_mem_get_pages P
     nv_dma_map P
  create_real_mr D
   reg_create D
    mlx5_ib_create_mkey D
     mlx5_core_create_mkey D
      mlx5_cmd_exec D
   mlx5r_umr_update_mr_pas D
    mlx5r_umr_post_send_wait D
     mlx5r_umr_post_send D
   ib_umem_activate_invalidation_notifier P
 rdma_restrack_add C
 rdma_lookup_put_uobject C
 uverbs_response U""",
    "reg_dmabuf_mr": _IOCTL.format(body=f"""{_at(_ALLOC_BEGIN, 5)}
     rdma_lookup_get_uobject C
   ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR U
    {{DRV:reg_dmabuf_mr}}
    rdma_restrack_add C
    uverbs_finalize_uobj_create U""").replace("\n    uverbs_finalize_object C", "\n    uverbs_finalize_object C\n     rdma_alloc_commit_uobject C"),
    "query_device": """ib_uverbs_ex_query_device U
 ib_uverbs_get_ucontext_file U
 {DRV:query_device}""",
    "query_port": """ib_uverbs_query_port U
 ib_uverbs_get_ucontext_file U
 ib_query_port C
  __ib_query_port C
   {DRV:query_port}
 copy_port_attr_to_resp U""",
    "query_gid": _IOCTL.format(body="""   ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY U
    ib_uverbs_get_ucontext_file U
    rdma_get_gid_attr C
    rdma_read_gid_attr_ndev_rcu C
    rdma_put_gid_attr C"""),
    "dealloc_pd": """ib_uverbs_dealloc_pd U
 uverbs_request U
 __uobj_perform_destroy C
  __uobj_get_destroy C
   rdma_lookup_get_uobject C
   uobj_destroy C
    uverbs_destroy_uobject C
     destroy_hw_idr_uobject C
      uverbs_free_pd C
       ib_dealloc_pd_user C
        {DRV:dealloc_pd}
        rdma_restrack_del C
      ib_rdmacg_uncharge C
     remove_handle_idr_uobject C
  rdma_lookup_put_uobject C""",
    "destroy_qp": """ib_uverbs_destroy_qp U
 uverbs_request U
 __uobj_get_destroy C
  rdma_lookup_get_uobject C
  uobj_destroy C
   uverbs_destroy_uobject C
    destroy_hw_idr_uobject C
     uverbs_free_qp C
      ib_destroy_qp_user C
       rdma_counter_unbind_qp C
       {DRV:destroy_qp}
       ib_qp_usecnt_dec C
       rdma_restrack_del C
      ib_uverbs_release_uevent C
     ib_rdmacg_uncharge C
 rdma_lookup_put_uobject C
 uverbs_response U""",
    "dereg_mr": """ib_uverbs_dereg_mr U
 uverbs_request U
 __uobj_perform_destroy C
  __uobj_get_destroy C
   rdma_lookup_get_uobject C
   uobj_destroy C
    uverbs_destroy_uobject C
     destroy_hw_idr_uobject C
      uverbs_free_mr C
       ib_dereg_mr_user C
        rdma_restrack_del C
        {DRV:dereg_mr}
      ib_rdmacg_uncharge C
  rdma_lookup_put_uobject C""",
}

# vendor_equivalents.ops + driver_internals; mlx5 from the operations' trees
DRIVER: dict[str, dict[str, str]] = {
    "mlx5": {
        "alloc_pd": "mlx5_ib_alloc_pd D\n mlx5_cmd_exec D",
        "create_cq": """mlx5_ib_create_cq D
 create_cq_user D
  ib_umem_get C
   pin_user_pages_fast C
  mlx5_ib_db_map_user D
 mlx5_comp_eqn_get D
 mlx5_core_create_cq D
  mlx5_cmd_exec D""",
        "create_qp": """mlx5_ib_create_qp D
 mlx5_ib_dev_res_srq_init D
 check_qp_type D
 check_valid_flow D
 process_udata_size D
 check_ucmd_data D
 process_vendor_flags D
 get_qp_uidx D
 process_create_flags D
 check_qp_attr D
 create_qp D
  create_user_qp D
   set_rq_size D
   _create_user_qp D
    alloc_bfreg D
    set_user_buf_size D
    ib_umem_get C
     pin_user_pages_fast C
    mlx5_ib_db_map_user D
   mlx5_qpc_create_qp D
    mlx5_cmd_exec D
    create_resource_common D""",
        "counter_auto": """rdma_counter_bind_qp_auto C
 rdma_get_counter_auto_mode C
 alloc_and_bind C
  mlx5_ib_counter_alloc_stats D
  __rdma_counter_bind_qp C
   mlx5_ib_counter_bind_qp D
    mlx5_cmd_exec D
    mlx5_ib_qp_set_counter D
  rdma_restrack_add C""",
        "modify_qp": """mlx5_ib_modify_qp D
 ib_modify_qp_is_ok C
 validate_rd_atomic D
 __mlx5_ib_modify_qp D
  get_tx_affinity D
  set_qpc_atomic_flags D
  mlx5_core_qp_modify D
   modify_qp_mbox_alloc D
   mlx5_cmd_exec D""",
        "modify_qp_av": """mlx5_ib_modify_qp D
 ib_modify_qp_is_ok C
 validate_rd_atomic D
 __mlx5_ib_modify_qp D
  get_tx_affinity D
  mlx5_set_path D
  mlx5_core_qp_modify D
   modify_qp_mbox_alloc D
   mlx5_cmd_exec D""",
        "reg_mr": """mlx5_ib_reg_user_mr D
 mlx5r_umr_resource_init D
 ib_umem_get C
  pin_user_pages_fast C
  sg_alloc_append_table_from_pages C
 create_real_mr D
  alloc_cacheable_mr D
   mkey_cache_ent_from_rb_key D
   _mlx5_mr_cache_alloc D
  mlx5r_umr_update_mr_pas D
   mlx5r_umr_post_send_wait D
    mlx5r_umr_post_send D""",
        "reg_dmabuf_mr": """mlx5_ib_reg_user_mr_dmabuf D
 mlx5r_umr_resource_init D
 ib_umem_dmabuf_get C
  dma_buf_get C
  dma_buf_dynamic_attach C
 alloc_cacheable_mr D
 mlx5_ib_init_dmabuf_mr D
  pagefault_dmabuf_mr D
   ib_umem_dmabuf_map_pages C
    dma_buf_map_attachment C
    dma_resv_wait_timeout C
   mlx5r_umr_update_mr_pas D""",
        "query_device": "mlx5_ib_query_device D",
        "query_port": "mlx5_ib_query_port D\n mlx5_query_port_roce D\n  mlx5_query_port_ptys D",
        "dealloc_pd": "mlx5_ib_dealloc_pd D\n mlx5_cmd_dealloc_pd D\n  mlx5_cmd_exec D",
        "destroy_qp": """mlx5_ib_destroy_qp D
 destroy_qp_common D
  mlx5_core_qp_modify D
  mlx5_core_destroy_qp D
   mlx5_cmd_exec D
  destroy_qp D
   ib_umem_release C""",
        "dereg_mr": """mlx5_ib_dereg_mr D
 mlx5_revoke_mr D
  mlx5r_umr_revoke_mr D
 ib_umem_release C""",
    },
    "bnxt_re": {
        "alloc_pd": "bnxt_re_alloc_pd D\n bnxt_qplib_alloc_pd D",
        "create_cq": "bnxt_re_create_cq D\n ib_umem_get C\n  pin_user_pages_fast C\n bnxt_qplib_create_cq D",
        "create_qp": """bnxt_re_create_qp D
 bnxt_re_test_qp_limits D
 bnxt_re_init_qp_attr D
 bnxt_re_init_user_qp D
  ib_umem_get C
   pin_user_pages_fast C
 bnxt_qplib_create_qp D
 bnxt_re_copy_to_udata D""",
        # no counter ops in the bnxt_re table: alloc_and_bind -> NULL, -ENOMEM ignored by _ib_modify_qp
        "counter_auto": "rdma_counter_bind_qp_auto C =ENOMEM\n rdma_get_counter_auto_mode C\n alloc_and_bind C",
        "modify_qp": "bnxt_re_modify_qp D\n bnxt_qplib_modify_qp D",
        "modify_qp_av": "bnxt_re_modify_qp D\n bnxt_qplib_modify_qp D",
        "reg_mr": "bnxt_re_reg_user_mr D\n ib_umem_get C\n  pin_user_pages_fast C\n __bnxt_re_user_reg_mr D",
        "reg_dmabuf_mr": "bnxt_re_reg_user_mr_dmabuf D\n ib_umem_dmabuf_get_pinned C\n __bnxt_re_user_reg_mr D",
        "query_device": "bnxt_re_query_device D",
        "query_port": "bnxt_re_query_port D",
        "dealloc_pd": "bnxt_re_dealloc_pd D",
        "destroy_qp": "bnxt_re_destroy_qp D\n bnxt_qplib_destroy_qp D",
        "dereg_mr": "bnxt_re_dereg_mr D\n bnxt_qplib_free_mrw D\n ib_umem_release C",
    },
    "irdma": {
        "alloc_pd": "irdma_alloc_pd D\n irdma_alloc_rsrc D\n irdma_sc_pd_init D",
        "create_cq": "irdma_create_cq D",
        "create_qp": """irdma_create_qp D
 irdma_alloc_rsrc D
 irdma_get_pbl D
 irdma_setup_virt_qp D
 irdma_sc_qp_init D
 irdma_roce_fill_and_set_qpctx_info D
 irdma_cqp_create_qp_cmd D
 irdma_qp_add_qos D""",
        "counter_auto": "rdma_counter_bind_qp_auto C =ENOMEM\n rdma_get_counter_auto_mode C\n alloc_and_bind C",
        "modify_qp": "irdma_modify_qp_roce D\n ib_modify_qp_is_ok C\n irdma_hw_modify_qp D",
        "modify_qp_av": """irdma_modify_qp_roce D
 irdma_query_pkey D
 rdma_read_gid_l2_fields C
 irdma_add_arp D
 ib_modify_qp_is_ok C
 irdma_sc_qp_setctx_roce D
 irdma_hw_modify_qp D""",
        "reg_mr": """irdma_reg_user_mr D
 ib_umem_get C
  pin_user_pages_fast C
 irdma_alloc_iwmr D
 irdma_reg_user_mr_type_mem D
  irdma_setup_pbles D
  irdma_check_mr_contiguous D
  irdma_create_stag D
  irdma_hwreg_mr D""",
        "reg_dmabuf_mr": "irdma_reg_user_mr_dmabuf D\n ib_umem_dmabuf_get_pinned C\n irdma_alloc_iwmr D\n irdma_reg_user_mr_type_mem D",
        "query_device": "irdma_query_device D",
        "query_port": "irdma_query_port D\n ib_get_eth_speed C",
        "dealloc_pd": "irdma_dealloc_pd D\n irdma_free_rsrc D",
        "destroy_qp": """irdma_destroy_qp D
 irdma_modify_qp_to_err D
 irdma_qp_rem_ref D
 irdma_cqp_qp_destroy_cmd D
 irdma_clean_cqes D
 irdma_free_qp_rsrc D""",
        "dereg_mr": "irdma_dereg_mr D\n irdma_hwdereg_mr D\n irdma_free_stag D\n ib_umem_release C",
    },
}
LAYERS = {"U": "uverbs", "C": "core", "D": "driver", "P": "peer-mem"}
_SLOT = re.compile(r"^( *)\{DRV:(\w+)\}$")

# (depth, function, layer, errno absorbed or None)
Frame = tuple[int, str, str, str | None]


def tree(name: str, vendor: str, ofed: bool) -> list[Frame]:
    """The successful tree of operation variant `name` on a host of `vendor`, preorder. OFED
    (MLNX_OFED) pins through ib_umem_get_peer -> __ib_umem_get; upstream through ib_umem_get."""
    lines: list[str] = []
    for line in TREES[name].splitlines():
        m = _SLOT.match(line)
        if m:
            lines += _at(DRIVER[vendor][m.group(2)], len(m.group(1))).splitlines()
        else:
            lines.append(line)
    out: list[Frame] = []
    shift_above = None  # OFED: frames under ib_umem_get sit one deeper (under __ib_umem_get)
    for line in lines:
        depth = len(line) - len(line.lstrip(" "))
        parts = line.split()
        fn, layer = parts[0], LAYERS[parts[1]]
        err = parts[2][1:] if len(parts) > 2 else None
        if shift_above is not None and depth <= shift_above:
            shift_above = None
        if ofed and fn == "ib_umem_get":  # OFED: ib_umem_get_peer -> __ib_umem_get (name_corrections_vs_brief)
            out.append((depth, "ib_umem_get_peer", "core", None))
            out.append((depth + 1, "__ib_umem_get", "core", None))
            shift_above = depth
            continue
        out.append((depth + (shift_above is not None), fn, layer, err))
    return out

