"""Every call tree the fleet produces, with its ground truth, built from chains.py.

Truth fields are written by hand from the reference's chains, not computed by any rule of the
audit: `bif` is where the failure leaves the path good calls of its operation take (for every
cause here the deepest failing frame), `origin` the layer where the errno first appears.
(`huge_mr_mkey_limit` was written as `reg_create`, "a branch no successful registration on
these hosts takes". The GPU registrations take it -- peer umems skip the mkey cache -- and
succeed after the pin's routine EFAULT; since round forty-eight the docs count those rescued
calls as known-good structure (architecture.md, tests/fleetgen62), so it is the deepest frame
too.)
"""

from __future__ import annotations

from dataclasses import dataclass

from .chains import (
    C,
    N,
    Node,
    all_functions,
    alloc_pd,
    create_cq,
    create_qp,
    dealloc_pd,
    dereg_mr,
    destroy_qp,
    fail,
    flatten,
    modify_qp,
    query_device,
    query_gid,
    query_port,
    reg_dmabuf_mr,
    reg_mr,
)

VARIANTS = ("ofed", "upstream", "bnxt_re", "irdma")
TRANSITIONS = ("RESET->INIT", "INIT->RTR", "RTR->RTS")

# injected root causes (each from the reference's chains and error codes)
ROOT_CAUSES = (
    "peer_client_missing_after_upgrade",  # OFED reg_mr of GPU memory: ib_peer_umem_get -EFAULT
    "nic_fw_cmd_timeout",  # one NIC of a 16-NIC host: mlx5 firmware commands -ETIMEDOUT, growing
    "netns_gid_denied",  # pods in another net namespace: ib_resolve_eth_dmac -ENODEV
    "tor_neighbour_timeout",  # one rack, 70 min: rdma_addr_find_l2_eth_by_grh -ETIMEDOUT
    "bnxt_qp_limit",  # a QP-hungry job on bnxt_re hosts: bnxt_re_create_qp -EINVAL
    "dmabuf_fence_timeout",  # a GPU driver whose fences never signal: ib_umem_dmabuf_map_pages -ETIMEDOUT
    "huge_mr_mkey_limit",  # a very large MR: reg_create's CREATE_MKEY fails LIM_ERR -> -ENOMEM
)


@dataclass
class Template:
    key: str
    operation: str
    arg: str | None  # QP transition on the handler frame
    tree: Node
    root_cause: str | None = None
    bif: str | None = None
    bif_errno: str | None = None
    origin: str | None = None
    expected: bool = False
    fatal: bool = False  # the process stops (the job aborts) after it

    def frames(self) -> list[dict]:
        return flatten(self.tree)

    @property
    def failed(self) -> bool:
        return any(f["errno"] for f in self.frames())


def _w(*names: str) -> list[str]:
    return ["ib_uverbs_write", *names]


def build() -> dict[str, Template]:
    t: dict[str, Template] = {}

    def add(key: str, op: str, tree: Node, arg: str | None = None, **truth) -> None:
        t[key] = Template(key, op, arg, tree, **truth)

    for v in VARIANTS:
        add(f"alloc_pd/{v}", "alloc_pd", alloc_pd(v))
        add(f"create_cq/{v}", "create_cq", create_cq(v))
        add(f"create_qp/{v}", "create_qp", create_qp(v))
        for tr in TRANSITIONS:
            add(f"modify_qp/{v}/{tr}", "modify_qp", modify_qp(v, tr), arg=tr)
        add(f"modify_qp/{v}/RESET->INIT/auto", "modify_qp", modify_qp(v, "RESET->INIT", counter_auto=True),
            arg="RESET->INIT")
        add(f"reg_mr/{v}", "reg_mr", reg_mr(v))
        add(f"query_device/{v}", "query_device", query_device(v, ex=False))
        add(f"query_device_ex/{v}", "query_device", query_device(v, ex=True))
        add(f"query_port/{v}", "query_port", query_port(v))
        add(f"destroy_qp/{v}", "destroy_qp", destroy_qp(v))
        add(f"dereg_mr/{v}", "dereg_mr", dereg_mr(v))
        add(f"dealloc_pd/{v}", "dealloc_pd", dealloc_pd(v))
    add("reg_mr/ofed/gpu", "reg_mr", reg_mr("ofed", gpu=True))
    add("reg_dmabuf_mr/upstream", "reg_dmabuf_mr", reg_dmabuf_mr("upstream"))
    add("query_gid", "query_gid", query_gid())
    add("query_gid/empty", "query_gid", query_gid(empty=True))
    # mlx5 QPs bound to an auto counter are unbound on destroy (no -EINVAL)
    for v in ("ofed", "upstream"):
        tree = destroy_qp(v)
        _unbind(tree).err = None
        _unbind(tree).kids = [N("__rdma_counter_unbind_qp", C, N("mlx5_ib_counter_unbind_qp", "driver"))]
        add(f"destroy_qp/{v}/bound", "destroy_qp", tree)

    # ---- routine errors (the process goes on) -------------------------------------------------
    for _key, tmpl in list(t.items()):
        frames = tmpl.frames()
        errs = [f for f in frames if f["errno"]]
        if not errs:
            continue
        # the first error is where it starts (pin_user_pages_fast's EFAULT the peer path rescues,
        # rdma_get_gid_attr's ENODATA, the counter bind's ENOMEM, irdma_query_device's EINVAL,
        # rdma_counter_unbind_qp's EINVAL)
        deepest = _deepest_first_error(frames)
        tmpl.bif, tmpl.bif_errno, tmpl.origin, tmpl.expected = deepest["probe"], deepest["errno"], deepest["layer"], True
    for v in VARIANTS:
        for op, builder in (("create_qp", create_qp), ("alloc_pd", alloc_pd)):
            handler = "ib_uverbs_create_qp" if op == "create_qp" else "ib_uverbs_alloc_pd"
            mid = ["create_qp"] if op == "create_qp" else []
            tree = fail(builder(v), _w(handler, *mid, "rdma_alloc_begin_uobject", "alloc_begin_idr_uobject",
                                       "ib_rdmacg_try_charge"), "EAGAIN", )
            add(f"{op}/{v}/rdmacg", op, tree, bif="ib_rdmacg_try_charge", bif_errno="EAGAIN", origin="core",
                expected=True)

    # ---- faults ----------------------------------------------------------------------------------
    put_abort = [N("rdma_lookup_put_uobject", C), N("rdma_alloc_abort_uobject", C)]
    add("reg_mr/ofed/gpu/nopeer", "reg_mr",
        fail(reg_mr("ofed", gpu=True), _w("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "ib_umem_get_peer",
                                          "__ib_umem_get", "ib_peer_umem_get"), "EFAULT", keep=1,
             unwind={"ib_uverbs_reg_mr": put_abort}),
        root_cause="peer_client_missing_after_upgrade", bif="ib_peer_umem_get", bif_errno="EFAULT", origin="peer-mem",
        fatal=True)
    qp_path = _w("ib_uverbs_create_qp", "create_qp", "ib_create_qp_user", "create_qp", "mlx5_ib_create_qp",
                 "create_qp", "create_user_qp")
    add("create_qp/ofed/fwtimeout", "create_qp",
        fail(create_qp("ofed"), [*qp_path, "mlx5_qpc_create_qp", "mlx5_cmd_exec"], "ETIMEDOUT",
             unwind={"create_user_qp": [N("destroy_qp", "driver")], "create_qp": put_abort}),
        root_cause="nic_fw_cmd_timeout", bif="mlx5_cmd_exec", bif_errno="ETIMEDOUT", origin="driver", fatal=True)
    mod_path = _w("ib_uverbs_modify_qp", "modify_qp", "ib_modify_qp_with_udata", "_ib_modify_qp")
    drv_path = ["ib_security_modify_qp", "mlx5_ib_modify_qp", "__mlx5_ib_modify_qp", "mlx5_core_qp_modify",
                "mlx5_cmd_exec"]
    for tr in ("INIT->RTR", "RTR->RTS"):
        unwind = {"modify_qp": [N("rdma_lookup_put_uobject", C)]}
        if tr == "INIT->RTR":
            unwind["_ib_modify_qp"] = [N("rdma_lag_put_ah_roce_slave", C), N("rdma_unfill_sgid_attr", C)]
        add(f"modify_qp/ofed/{tr}/fwtimeout", "modify_qp",
            fail(modify_qp("ofed", tr), [*mod_path, *drv_path], "ETIMEDOUT", keep=0, unwind=unwind), arg=tr,
            root_cause="nic_fw_cmd_timeout", bif="mlx5_cmd_exec", bif_errno="ETIMEDOUT", origin="driver", fatal=True)
        # mlx5_core_qp_modify allocated its mailbox before the command
        _fix_keep(t[f"modify_qp/ofed/{tr}/fwtimeout"].tree, "mlx5_core_qp_modify", "modify_qp_mbox_alloc")
    add("create_cq/ofed/fwtimeout", "create_cq",
        fail(create_cq("ofed"), _w("ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "mlx5_core_create_cq",
                                   "mlx5_cmd_do"), "ETIMEDOUT",
             unwind={"create_cq": [N("rdma_alloc_abort_uobject", C)]}),
        root_cause="nic_fw_cmd_timeout", bif="mlx5_cmd_do", bif_errno="ETIMEDOUT", origin="driver", fatal=True)
    _fix_keep(t["create_cq/ofed/fwtimeout"].tree, "mlx5_core_create_cq", "mlx5_create_cq")
    rtr_unwind = {"_ib_modify_qp": [N("rdma_unfill_sgid_attr", C)], "modify_qp": [N("rdma_lookup_put_uobject", C)]}
    for v in VARIANTS:
        add(f"modify_qp/{v}/INIT->RTR/netns", "modify_qp",
            fail(modify_qp(v, "INIT->RTR"), [*mod_path, "ib_resolve_eth_dmac"], "ENODEV", keep=1, unwind=rtr_unwind),
            arg="INIT->RTR", root_cause="netns_gid_denied", bif="ib_resolve_eth_dmac", bif_errno="ENODEV",
            origin="core", fatal=True)
        add(f"modify_qp/{v}/INIT->RTR/neigh", "modify_qp",
            fail(modify_qp(v, "INIT->RTR"), [*mod_path, "ib_resolve_eth_dmac", "ib_resolve_unicast_gid_dmac",
                                             "rdma_addr_find_l2_eth_by_grh"], "ETIMEDOUT", keep=1, unwind=rtr_unwind),
            arg="INIT->RTR", root_cause="tor_neighbour_timeout", bif="rdma_addr_find_l2_eth_by_grh",
            bif_errno="ETIMEDOUT", origin="core", fatal=True)
    add("create_qp/bnxt_re/limit", "create_qp",
        fail(create_qp("bnxt_re"), _w("ib_uverbs_create_qp", "create_qp", "ib_create_qp_user", "create_qp",
                                      "bnxt_re_create_qp"), "EINVAL", keep=1, unwind={"create_qp": put_abort}),
        root_cause="bnxt_qp_limit", bif="bnxt_re_create_qp", bif_errno="EINVAL", origin="driver", fatal=True)
    add("reg_dmabuf_mr/upstream/fence", "reg_dmabuf_mr",
        fail(reg_dmabuf_mr("upstream"),
             ["ib_uverbs_ioctl", "ib_uverbs_cmd_verbs", "ib_uverbs_run_method",
              "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "mlx5_ib_reg_user_mr_dmabuf", "mlx5_ib_init_dmabuf_mr",
              "pagefault_dmabuf_mr", "ib_umem_dmabuf_map_pages"], "ETIMEDOUT", keep=2,
             unwind={"mlx5_ib_reg_user_mr_dmabuf": [N("mlx5_ib_dereg_mr", "driver")],
                     "ib_uverbs_run_method": [N("uverbs_finalize_object", C, N("rdma_alloc_abort_uobject", C))]}),
        root_cause="dmabuf_fence_timeout", bif="ib_umem_dmabuf_map_pages", bif_errno="ETIMEDOUT", origin="core",
        fatal=True)
    add("reg_mr/upstream/huge", "reg_mr",
        fail(reg_mr("upstream", huge=True), _w("ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "create_real_mr", "reg_create",
                                               "mlx5_ib_create_mkey", "mlx5_core_create_mkey", "mlx5_cmd_exec"),
             "ENOMEM", unwind={"mlx5_ib_reg_user_mr": [N("ib_umem_release", C)], "ib_uverbs_reg_mr": put_abort}),
        root_cause="huge_mr_mkey_limit", bif="mlx5_cmd_exec", bif_errno="ENOMEM", origin="driver", fatal=True)
    return t


def _unbind(tree: Node) -> Node:
    stack = [tree]
    while stack:
        n = stack.pop()
        if n.fn == "rdma_counter_unbind_qp":
            return n
        stack.extend(n.kids)
    raise AssertionError("no rdma_counter_unbind_qp")


def _fix_keep(tree: Node, fn: str, first_kid: str) -> None:
    """Give `fn` (on the failing path) the child it called before the failing one."""
    stack = [tree]
    while stack:
        n = stack.pop()
        if n.fn == fn:
            if not n.kids or n.kids[0].fn != first_kid:
                n.kids.insert(0, N(first_kid, "driver"))
            return
        stack.extend(n.kids)


def _deepest_first_error(frames: list[dict]) -> dict:
    """The frame where a routine error starts: the first failing frame in entry order followed
    down to its deepest failing descendant."""
    first = next(i for i, f in enumerate(frames) if f["errno"])
    best = frames[first]
    for f in frames[first + 1:]:
        if f["depth"] <= frames[first]["depth"]:
            break
        if f["errno"] and f["depth"] > best["depth"]:
            best = f
    return best


def functions_used(templates: dict[str, Template]) -> set[str]:
    out: set[str] = set()
    for tmpl in templates.values():
        out |= all_functions(tmpl.tree)
    return out
