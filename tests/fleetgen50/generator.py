"""Fleet generator 50 (written blind: docs, `--help`, tracer/schema.py and the RDMA reference only).

Shape: 18 hosts over 4 hours, three NIC vendors (6 hosts each: mlx5, bnxt_re, irdma), so each
operation's success chain differs by the vendor's driver frames (the reference's
``vendor_equivalents.ops`` namespace gate), and four hosts whose wall clocks are off: two +3
minutes, one -5 minutes, one drifting +1 s per true minute. A skewed host's event start/end
times and its counters' snapshot times are its own clock's (a trace stays internally
consistent: every frame of it is shifted alike).

Every job of every host (one process, comm ``python3``) runs, in order:
query_gid index 0, query_gid index 1, alloc_pd, create_cq, [irdma: reg_dmabuf_mr], reg_mr,
create_qp, modify_qp RESET->INIT, INIT->RTR, RTR->RTS.

Routine errors, one per vendor (truth: expected_error):
  mlx5:    query_gid index 1 -> rdma_get_gid_attr ENODATA (empty GID slot on these ports; the
           job scans on). Reference: operations.query_gid.
  bnxt_re: modify_qp RESET->INIT -> rdma_counter_bind_qp_auto ENOMEM, absorbed by _ib_modify_qp
           (port counter mode AUTO on these hosts; bnxt_re has no counter ops, so alloc_and_bind
           returns NULL). Reference: modify_qp tree, rdma_counter_bind_qp_auto.
  irdma:   reg_dmabuf_mr -> ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR EOPNOTSUPP (the driver
           table read has no reg_user_mr_dmabuf op); the job falls back to plain reg_mr.

Faults (truth: root_cause), each a crash loop from its onset (every restart fails and dies):
  (a) bnxt_mrw_enomem: bnxt_re only, hosts h07 (+3 min clock) and h09: reg_mr failing in the
      vendor's driver frame: bnxt_re_reg_user_mr -> __bnxt_re_user_reg_mr ->
      bnxt_qplib_alloc_mrw ENOMEM. (Derived, not in the reference: the reference gives
      bnxt_re_reg_user_mr's callees as ib_umem_get and __bnxt_re_user_reg_mr; the qplib callees
      under the latter follow its pattern for the other bnxt_re ops, "bnxt_qplib_*",
      status unconfirmed there too.)
  (b) mlx5_fw_modify_timeout: mlx5 host h04 (drifting clock): modify_qp RESET->INIT firmware
      command timing out: mlx5_ib_modify_qp -> __mlx5_ib_modify_qp -> mlx5_core_qp_modify ->
      mlx5_cmd_exec ETIMEDOUT (reference: errno_conventions, transport-level -ETIMEDOUT).
  (c) alloc_pd_enomem: verbs layer, all vendors, hosts h03 (mlx5), h10 (bnxt_re), h13 (irdma,
      -5 min clock): ib_uverbs_alloc_pd ENOMEM (rdma_zalloc_drv_obj, before the driver call).

Onsets (true time; the first failure comes the host's index in seconds later): h03 06:47,
h09 07:18, h10 07:49, h07 07:58 (08:01 on its clock), h13 08:45:20 (08:40:33 on its clock: 4
failures of 7 calls counted in its own 08:30 bucket, none in the true 08:30 bucket), h04 08:58
(09:01 on its clock). After its onset a host runs a crash loop: a restart a minute, each dying
at the faulty call, instead of a job every 4 minutes.

Chains the reference lacks for a vendor are derived by its pattern and marked "derived" below.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from tracer import schema

T0 = dt.datetime(2026, 11, 28, 6, 0, tzinfo=dt.UTC)
HOURS = 4
END = T0 + dt.timedelta(hours=HOURS)
RELEASE = "6.8.0-45-generic"
DATE = "2026-11-28"

VENDORS = ("mlx5", "bnxt_re", "irdma")
HOSTS = [f"h{i:02d}" for i in range(18)]
VENDOR_OF = {h: VENDORS[i // 6] for i, h in enumerate(HOSTS)}

# clock offsets (seconds) as a function of true seconds since T0
SKEW = {
    "h02": ("+3m", lambda s: 180.0),
    "h07": ("+3m", lambda s: 180.0),
    "h13": ("-5m", lambda s: -300.0),
    "h04": ("+1s/min", lambda s: s / 60.0),
}

ERRNO_NUM = {"ENOMEM": 12, "ENODATA": 61, "EOPNOTSUPP": 95, "ETIMEDOUT": 110}


@dataclass(frozen=True)
class Fault:
    cause: str
    host: str
    onset: dt.datetime  # true time
    operation: str
    probe: str  # origin (= bifurcation) probe
    errno: str
    layer: str


def _t(h: int, m: int, s: int = 0) -> dt.datetime:
    return T0.replace(hour=h, minute=m, second=s)


FAULTS = {
    "h03": Fault("alloc_pd_enomem", "h03", _t(6, 47), "alloc_pd", "ib_uverbs_alloc_pd", "ENOMEM", "uverbs"),
    "h09": Fault("bnxt_mrw_enomem", "h09", _t(7, 18), "reg_mr", "bnxt_qplib_alloc_mrw", "ENOMEM", "driver"),
    "h10": Fault("alloc_pd_enomem", "h10", _t(7, 49), "alloc_pd", "ib_uverbs_alloc_pd", "ENOMEM", "uverbs"),
    "h07": Fault("bnxt_mrw_enomem", "h07", _t(7, 58), "reg_mr", "bnxt_qplib_alloc_mrw", "ENOMEM", "driver"),
    "h13": Fault("alloc_pd_enomem", "h13", _t(8, 45, 20), "alloc_pd", "ib_uverbs_alloc_pd", "ENOMEM", "uverbs"),
    "h04": Fault("mlx5_fw_modify_timeout", "h04", _t(8, 58), "modify_qp", "mlx5_cmd_exec", "ETIMEDOUT", "driver"),
}

ROUTINE = {
    "mlx5": ("query_gid", "rdma_get_gid_attr", "ENODATA", "core"),
    "bnxt_re": ("modify_qp", "rdma_counter_bind_qp_auto", "ENOMEM", "core"),
    "irdma": ("reg_dmabuf_mr", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "EOPNOTSUPP", "uverbs"),
}


def skew_seconds(host: str, true_time: dt.datetime) -> float:
    if host not in SKEW:
        return 0.0
    return SKEW[host][1]((true_time - T0).total_seconds())


def own_time(host: str, true_time: dt.datetime) -> dt.datetime:
    """The host's wall clock at a true time."""
    return true_time + dt.timedelta(seconds=skew_seconds(host, true_time))


# ------------------------------------------------------------------------------------------
# call trees
# ------------------------------------------------------------------------------------------
DRIVER_STATICS = {
    "create_cq_user", "create_user_qp", "_create_user_qp", "alloc_bfreg", "check_qp_type",
    "process_udata_size", "set_rq_size", "create_real_mr", "alloc_cacheable_mr",
    "mkey_cache_ent_from_rb_key", "_mlx5_mr_cache_alloc", "__mlx5_ib_modify_qp",
    "__bnxt_re_user_reg_mr",
}


@dataclass
class Node:
    probe: str
    children: list[Node] = field(default_factory=list)
    errno: str | None = None
    layer: str = ""
    arg: str | None = None


def layer_of(probe: str) -> str:
    if probe.startswith("ib_uverbs_"):
        return "uverbs"
    if probe in DRIVER_STATICS or probe.startswith(("mlx5", "bnxt_", "irdma_")):
        return "driver"
    return "core"


def N(probe: str, *children: Node, errno: str | None = None, layer: str | None = None) -> Node:
    return Node(probe, list(children), errno, layer or layer_of(probe))


def alloc_begin() -> Node:
    return N("rdma_alloc_begin_uobject",
             N("alloc_begin_idr_uobject", N("alloc_uobj"), N("ib_rdmacg_try_charge"), N("idr_add_uobj")))


def write_root(handler: Node, new_object: bool) -> Node:
    """ib_uverbs_write dispatching to a handler; a handler that made a uobject is finalised."""
    if handler.errno:
        return N("ib_uverbs_write", handler, errno=handler.errno)
    if new_object:
        return N("ib_uverbs_write", handler, N("uverbs_finalize_object", N("rdma_alloc_commit_uobject")))
    return N("ib_uverbs_write", handler)


def ioctl_root(method: Node, pre: list[Node], post: list[Node]) -> Node:
    run = N("ib_uverbs_run_method", *pre, method, *post, errno=method.errno)
    return N("ib_uverbs_ioctl", N("ib_uverbs_cmd_verbs", run, errno=method.errno), errno=method.errno)


def query_gid(vendor: str, index: int) -> Node:
    # reference operations.query_gid: no driver callback (the core GID cache)
    if vendor == "mlx5" and index == 1:
        method = N("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", N("rdma_get_gid_attr", errno="ENODATA"),
                   errno="ENODATA")
    else:
        method = N("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", N("rdma_get_gid_attr"),
                   N("rdma_read_gid_attr_ndev_rcu"), N("rdma_put_gid_attr"))
    return ioctl_root(method, [], [])


def alloc_pd(vendor: str, fail: bool) -> Node:
    if fail:
        # rdma_zalloc_drv_obj (inline) fails after the uobject began: uobj_alloc_abort
        handler = N("ib_uverbs_alloc_pd", N("uverbs_request"), alloc_begin(), N("rdma_alloc_abort_uobject"),
                    errno="ENOMEM")
        return write_root(handler, True)
    if vendor == "mlx5":
        drv = N("mlx5_ib_alloc_pd", N("mlx5_cmd_exec"))
    elif vendor == "bnxt_re":
        drv = N("bnxt_re_alloc_pd", N("bnxt_qplib_alloc_pd"))  # reference: unconfirmed callee
    else:
        drv = N("irdma_alloc_pd", N("irdma_alloc_rsrc"), N("irdma_sc_pd_init"))
    handler = N("ib_uverbs_alloc_pd", N("uverbs_request"), alloc_begin(), drv, N("rdma_restrack_add"),
                N("uverbs_response"))
    return write_root(handler, True)


def umem_get() -> Node:
    return N("ib_umem_get", N("pin_user_pages_fast"), N("sg_alloc_append_table_from_pages"))


def create_cq(vendor: str) -> Node:
    if vendor == "mlx5":
        drv = N("mlx5_ib_create_cq", N("create_cq_user", umem_get(), N("mlx5_ib_db_map_user")),
                N("mlx5_comp_eqn_get"), N("mlx5_core_create_cq", N("mlx5_cmd_do"), N("mlx5_eq_add_cq")))
    elif vendor == "bnxt_re":
        drv = N("bnxt_re_create_cq", umem_get(), N("bnxt_qplib_create_cq"))  # reference: unconfirmed
    else:
        # derived: irdma CQ buffers are registered beforehand (reference note on irdma_create_qp),
        # so no ib_umem_get here; the CQP command follows irdma_create_qp's irdma_cqp_*_cmd pattern
        drv = N("irdma_create_cq", N("irdma_alloc_rsrc"), N("irdma_cqp_create_cq_cmd"))
    inner = N("create_cq", alloc_begin(), drv, N("rdma_restrack_add"), N("uverbs_response"))
    return write_root(N("ib_uverbs_create_cq", N("uverbs_request"), inner), True)


def reg_dmabuf_mr() -> Node:
    # irdma only: the handler finds no reg_user_mr_dmabuf op
    method = N("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", errno="EOPNOTSUPP")
    return ioctl_root(method, [alloc_begin(), N("rdma_lookup_get_uobject")],
                      [N("uverbs_finalize_object", N("rdma_alloc_abort_uobject"))])


def reg_mr(vendor: str, fail: bool) -> Node:
    if vendor == "mlx5":
        drv = N("mlx5_ib_reg_user_mr", N("mlx5r_umr_resource_init"), umem_get(),
                N("create_real_mr", N("alloc_cacheable_mr", N("mkey_cache_ent_from_rb_key"), N("_mlx5_mr_cache_alloc")),
                  N("mlx5r_umr_update_mr_pas", N("mlx5r_umr_post_send_wait"))))
    elif vendor == "bnxt_re":
        # derived: __bnxt_re_user_reg_mr's qplib callees (bnxt_qplib_alloc_mrw, bnxt_qplib_reg_mr)
        if fail:
            drv = N("bnxt_re_reg_user_mr", umem_get(),
                    N("__bnxt_re_user_reg_mr", N("bnxt_qplib_alloc_mrw", errno="ENOMEM"), errno="ENOMEM"),
                    N("ib_umem_release"), errno="ENOMEM")
        else:
            drv = N("bnxt_re_reg_user_mr", umem_get(),
                    N("__bnxt_re_user_reg_mr", N("bnxt_qplib_alloc_mrw"), N("bnxt_qplib_reg_mr")))
    else:
        drv = N("irdma_reg_user_mr", umem_get(), N("irdma_alloc_iwmr"),
                N("irdma_reg_user_mr_type_mem", N("irdma_setup_pbles"), N("irdma_check_mr_contiguous"),
                  N("irdma_create_stag"), N("irdma_hwreg_mr")))
    if drv.errno:
        handler = N("ib_uverbs_reg_mr", N("uverbs_request"), alloc_begin(), N("rdma_lookup_get_uobject"), drv,
                    N("rdma_lookup_put_uobject"), N("rdma_alloc_abort_uobject"), errno=drv.errno)
    else:
        handler = N("ib_uverbs_reg_mr", N("uverbs_request"), alloc_begin(), N("rdma_lookup_get_uobject"), drv,
                    N("rdma_lookup_put_uobject"), N("uverbs_response"))
    return write_root(handler, True)


def create_qp(vendor: str) -> Node:
    if vendor == "mlx5":
        drv = N("mlx5_ib_create_qp", N("check_qp_type"), N("process_udata_size"),
                N("create_qp", N("create_user_qp", N("set_rq_size"),
                                 N("_create_user_qp", N("alloc_bfreg"), umem_get(), N("mlx5_ib_db_map_user")),
                                 N("mlx5_qpc_create_qp", N("mlx5_cmd_exec"))), layer="driver"))
    elif vendor == "bnxt_re":
        drv = N("bnxt_re_create_qp", N("bnxt_re_test_qp_limits"), N("bnxt_re_init_qp_attr"),
                N("bnxt_re_init_user_qp", umem_get()), N("bnxt_qplib_create_qp"))
    else:
        drv = N("irdma_create_qp", N("irdma_alloc_rsrc"), N("irdma_setup_virt_qp"), N("irdma_sc_qp_init"),
                N("irdma_roce_fill_and_set_qpctx_info"), N("irdma_cqp_create_qp_cmd"), N("irdma_qp_add_qos"))
    verbs = N("ib_create_qp_user", N("create_qp", drv, N("ib_create_qp_security"), N("rdma_restrack_add"), layer="core"))
    inner = N("create_qp", alloc_begin(), N("rdma_lookup_get_uobject"), N("rdma_lookup_get_uobject"), verbs,
              N("ib_qp_usecnt_inc"), N("rdma_lookup_put_uobject"), N("uverbs_response"), layer="uverbs")
    return write_root(N("ib_uverbs_create_qp", N("uverbs_request"), inner), True)


TRANSITIONS = ("RESET->INIT", "INIT->RTR", "RTR->RTS")


def vendor_modify(vendor: str, transition: str, fail: bool) -> Node:
    if vendor == "mlx5":
        path = [N("mlx5_set_path")] if transition == "INIT->RTR" else []
        cmd = N("mlx5_cmd_exec", errno="ETIMEDOUT" if fail else None)
        core = N("mlx5_core_qp_modify", cmd, errno=cmd.errno)
        inner = N("__mlx5_ib_modify_qp", *path, core, errno=cmd.errno)
        return N("mlx5_ib_modify_qp", N("ib_modify_qp_is_ok"), inner, errno=cmd.errno)
    if vendor == "bnxt_re":
        return N("bnxt_re_modify_qp", N("bnxt_qplib_modify_qp"))  # reference: unconfirmed callee
    extra = [N("rdma_read_gid_l2_fields"), N("irdma_add_arp")] if transition == "INIT->RTR" else []
    return N("irdma_modify_qp_roce", N("irdma_query_pkey"), *extra, N("ib_modify_qp_is_ok"),
             N("irdma_sc_qp_setctx_roce"), N("irdma_hw_modify_qp"))


def modify_qp(vendor: str, transition: str, fail: bool) -> Node:
    kids: list[Node] = []
    if transition == "INIT->RTR":
        kids += [N("rdma_fill_sgid_attr", N("rdma_check_ah_attr"), N("rdma_get_gid_attr")),
                 N("ib_resolve_eth_dmac", N("rdma_check_gid_user_access"),
                   N("ib_resolve_unicast_gid_dmac", N("rdma_addr_find_l2_eth_by_grh"))),
                 N("rdma_lag_get_ah_roce_slave")]
    if transition == "RESET->INIT":
        if vendor == "bnxt_re":
            # counter mode AUTO: alloc_and_bind returns NULL (no counter ops), ENOMEM ignored
            kids.append(N("rdma_counter_bind_qp_auto", N("rdma_get_counter_auto_mode"), N("alloc_and_bind"),
                          errno="ENOMEM"))
        else:
            kids.append(N("rdma_counter_bind_qp_auto"))  # mode NONE: returns 0 at once
    drv = vendor_modify(vendor, transition, fail)
    kids.append(N("ib_security_modify_qp", drv, errno=drv.errno))
    if drv.errno is None and transition == "INIT->RTR":
        kids += [N("rdma_lag_put_ah_roce_slave"), N("rdma_unfill_sgid_attr")]
    err = drv.errno
    mq_kids = [N("rdma_lookup_get_uobject")]
    if transition == "INIT->RTR":
        mq_kids.append(N("copy_ah_attr_from_uverbs"))
    mq_kids += [N("ib_modify_qp_with_udata", N("_ib_modify_qp", *kids, errno=err), errno=err),
                N("rdma_lookup_put_uobject")]
    handler = N("ib_uverbs_modify_qp", N("uverbs_request"), N("modify_qp", *mq_kids, errno=err, layer="uverbs"),
                errno=err)
    return write_root(handler, False)


# ------------------------------------------------------------------------------------------
# the fleet
# ------------------------------------------------------------------------------------------
SELF_NS = {"mlx5_cmd_exec": 40_000, "mlx5_cmd_do": 35_000, "pin_user_pages_fast": 15_000,
           "irdma_cqp_create_qp_cmd": 30_000, "irdma_hwreg_mr": 20_000, "bnxt_qplib_create_qp": 25_000,
           "bnxt_qplib_reg_mr": 20_000, "bnxt_qplib_alloc_mrw": 15_000}
CALL_GAP = dt.timedelta(milliseconds=20)
JOB_EVERY = dt.timedelta(minutes=4)
RESTART_EVERY = dt.timedelta(minutes=1)
WINDOW_EVERY_S = 12 * 60
WINDOW_S = 90


def flatten(root: Node) -> list[tuple[Node, int]]:
    out: list[tuple[Node, int]] = []

    def walk(n: Node, d: int) -> None:
        out.append((n, d))
        for c in n.children:
            walk(c, d + 1)

    walk(root, 0)
    return out


def timings(root: Node) -> dict[int, tuple[int, int]]:
    """id(node) -> (entry offset ns, latency ns) from the root's entry."""
    res: dict[int, tuple[int, int]] = {}
    cursor = 0

    def walk(n: Node) -> None:
        nonlocal cursor
        start = cursor
        cursor += 300
        for c in n.children:
            walk(c)
        cursor += SELF_NS.get(n.probe, 500)
        if n.probe == "mlx5_cmd_exec" and n.errno == "ETIMEDOUT":
            cursor += 2_000_000
        res[id(n)] = (start, cursor - start)

    walk(root)
    return res


def in_window(true_time: dt.datetime) -> bool:
    return (true_time - T0).total_seconds() % WINDOW_EVERY_S < WINDOW_S


def job_calls(vendor: str, fault: Fault | None) -> list[tuple[str, str | None, Node]]:
    """(operation, arg, tree) of one job, cut after a fatal call (the process dies)."""
    calls: list[tuple[str, str | None, Node]] = [("query_gid", None, query_gid(vendor, 0)),
                                                 ("query_gid", None, query_gid(vendor, 1))]
    cause = fault.cause if fault else None
    calls.append(("alloc_pd", None, alloc_pd(vendor, cause == "alloc_pd_enomem")))
    if cause == "alloc_pd_enomem":
        return calls
    calls.append(("create_cq", None, create_cq(vendor)))
    if vendor == "irdma":
        calls.append(("reg_dmabuf_mr", None, reg_dmabuf_mr()))
    calls.append(("reg_mr", None, reg_mr(vendor, cause == "bnxt_mrw_enomem")))
    if cause == "bnxt_mrw_enomem":
        return calls
    calls.append(("create_qp", None, create_qp(vendor)))
    for tr in TRANSITIONS:
        fail = cause == "mlx5_fw_modify_timeout" and tr == "RESET->INIT"
        calls.append(("modify_qp", tr, modify_qp(vendor, tr, fail)))
        if fail:
            return calls
    return calls


def ns(t: dt.datetime) -> int:
    return int(round(t.timestamp() * 1e6)) * 1000


@dataclass
class TraceInfo:
    trace_id: str
    host: str
    kind: str
    operation: str
    cause: str | None
    expected: bool
    start_ns: int  # as recorded (host clock)
    true_ns: int
    origin_probe: str | None
    origin_errno: str | None


def origin_of(root: Node) -> tuple[str, str, str] | None:
    """Deepest error frame none of whose callees failed, first in entry order."""
    for n, _d in flatten(root):
        if n.errno and not any(c.errno for c in n.children):
            return n.probe, n.errno, n.layer
    return None


def host_schedule(host: str) -> list[tuple[dt.datetime, Fault | None]]:
    idx = HOSTS.index(host)
    offset = dt.timedelta(seconds=4 * idx + 3)
    fault = FAULTS.get(host)
    out = []
    t = T0 + offset
    while t < END - dt.timedelta(minutes=1):
        if fault and t >= fault.onset:
            break
        out.append((t, None))
        t += JOB_EVERY
    if fault:
        t = fault.onset + dt.timedelta(seconds=idx)
        while t < END - dt.timedelta(seconds=30):
            out.append((t, fault))
            t += RESTART_EVERY
    return out


def generate(root_dir: str | Path) -> dict:
    root_dir = Path(root_dir)
    traces: list[TraceInfo] = []
    for hi, host in enumerate(HOSTS):
        vendor = VENDOR_OF[host]
        boot = T0 - dt.timedelta(hours=3, minutes=hi)
        ev: dict[str, list] = defaultdict(list)
        truth: dict[str, list] = defaultdict(list)
        counts: dict[tuple[int, str], list] = {}
        layers: dict[str, str] = {}
        n_trace = 0
        for jn, (job_start, fault) in enumerate(host_schedule(host)):
            pid = 20_000 + 3 * jn
            job = f"{host}-job{jn:04d}"
            timed = in_window(job_start)
            for ci, (op, arg, tree) in enumerate(job_calls(VENDOR_OF[host], fault)):
                t_true = job_start + ci * CALL_GAP
                frames = flatten(tree)
                slot = int((t_true - T0).total_seconds() // 60)
                for n, _d in frames:
                    layers[n.probe] = n.layer
                    c = counts.setdefault((slot, n.probe), [0, 0, defaultdict(int)])
                    c[0] += 1
                    if n.errno:
                        c[1] += 1
                        c[2][n.errno] += 1
                has_err = any(n.errno for n, _d in frames)
                if not has_err and not timed:
                    continue
                n_trace += 1
                tid = f"{host}:{n_trace}"
                wall0 = own_time(host, t_true)  # the host's clock at the root's entry
                tm = timings(tree)
                root_lat = tm[id(tree)][1]
                if timed:
                    start = ns(wall0)
                    end = start + root_lat
                else:
                    # outside capture windows: the 4 ms tick the root returned in, no latency
                    tick = (ns(wall0) + root_lat) // 4_000_000 * 4_000_000
                    start = end = tick
                mono_base = start - ns(boot)
                exit_status = -ERRNO_NUM[tree.errno] if tree.errno else 0
                kind = "failure" if has_err else "good"
                for seq, (n, d) in enumerate(frames):
                    off, lat = tm[id(n)]
                    ev["trace_id"].append(tid)
                    ev["seq"].append(seq)
                    ev["ts_ns"].append(mono_base + off if timed else mono_base)
                    ev["pid"].append(pid)
                    ev["tid"].append(pid)
                    ev["ppid"].append(1)
                    ev["comm"].append("python3")
                    ev["probe"].append(n.probe)
                    ev["layer"].append(n.layer)
                    ev["depth"].append(d)
                    ev["ret"].append(-ERRNO_NUM[n.errno] if n.errno else 0)
                    ev["errno"].append(n.errno)
                    ev["latency_ns"].append(lat if timed else None)
                    ev["path"].append(None)
                    ev["arg"].append(arg if seq == 0 else None)
                    ev["path2"].append(None)
                    ev["output"].append(None)
                    ev["kind"].append(kind)
                    ev["command"].append(op)
                    ev["exit_status"].append(exit_status)
                    ev["start_time"].append(start)
                    ev["end_time"].append(end)
                    ev["host"].append(host)
                    ev["kernel_release"].append(RELEASE)
                    ev["lost_events"].append(0)
                    ev["job_id"].append(job)
                    ev["metadata"].append(None)
                    ev["repeat_count"].append(None)
                origin = origin_of(tree) if has_err else None
                is_fault = bool(origin and fault and origin[0] == fault.probe and origin[1] == fault.errno)
                cause = fault.cause if is_fault else None
                expected = bool(has_err and not is_fault)
                truth["trace_id"].append(tid)
                truth["host"].append(host)
                truth["kind"].append(kind)
                truth["root_cause"].append(cause)
                truth["bifurcation_probe"].append(origin[0] if origin else None)
                truth["bifurcation_errno"].append(origin[1] if origin else None)
                truth["origin_layer"].append(origin[2] if origin else None)
                truth["expected_error"].append(expected)
                truth["held_out"].append(False)
                traces.append(TraceInfo(tid, host, kind, op, cause, expected, start, ns(t_true),
                                        origin[0] if origin else None, origin[1] if origin else None))
        events = pa.table({f.name: pa.array(ev[f.name], f.type) for f in schema.EVENTS}, schema=schema.EVENTS)
        schema.write_partition(events, root_dir, "events", DATE, host, "part-0000.parquet",
                               summarise=True, durable=False)
        tr = pa.table({f.name: pa.array(truth[f.name], f.type) for f in schema.TRUTH}, schema=schema.TRUTH)
        schema.write_partition(tr, root_dir, "truth", DATE, host, "part-0000.parquet", durable=False)
        # counters: one snapshot a true minute (rows for the probes called in it), stamped with
        # the host's own clock at the interval's end
        rows: dict[str, list] = defaultdict(list)
        for (slot, probe), (calls, fails, errs) in sorted(counts.items()):
            snap = own_time(host, T0 + dt.timedelta(minutes=slot + 1))
            rows["host"].append(host)
            rows["snapshot_time"].append(ns(snap))
            rows["interval_s"].append(60.0)
            rows["kernel_release"].append(RELEASE)
            rows["vendor"].append(vendor)
            rows["probe_set"].append("rdma")
            rows["probe"].append(probe)
            rows["layer"].append(layers[probe])
            rows["live"].append(True)
            rows["invocations"].append(calls)
            rows["failures"].append(fails)
            rows["errno_counts"].append([{"errno": e, "count": k} for e, k in sorted(errs.items())] or None)
            rows["lost_records"].append(0)
        ctab = pa.table({f.name: pa.array(rows[f.name], f.type) for f in schema.COUNTERS}, schema=schema.COUNTERS)
        cpath = schema.write_partition(ctab, root_dir, "counters", DATE, host, "part-0000.parquet", durable=False)
        schema.write_counter_buckets(cpath, durable=False)
    return {"traces": traces, "faults": FAULTS, "vendor_of": VENDOR_OF}
