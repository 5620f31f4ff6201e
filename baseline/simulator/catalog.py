"""What the simulated fleet is made of: probes, vendors, kernels, call-chain templates.

Everything here is static data derived from reference/rdma_control_path.yaml, turned
into small numpy-friendly tables once per platform (vendor x kernel). The per-host generator
(`baseline.simulator.host`) only indexes into these tables, so a failure record costs a few
array gathers instead of Python work.

Probe set ``rdma`` (15 probes): the 13 RDMATracer-like create/update probes (5 uverbs handlers,
6 driver/core helpers, 2 OFED peer-memory helpers) plus 2 read-only probes this product adds
because it learns expected errors (RDMATracer left read-only functions out precisely because they
return routine errors). A probe key is vendor-neutral; `probe_name` resolves it through the
vendor namespace gate (mlx5_ib_* -> bnxt_re_* / irdma_*) and the kernel flavour (OFED's
__ib_umem_get vs upstream ib_umem_get; peer-memory probes exist only on OFED kernels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from baseline.simulator.plan import BACKGROUND_CAUSES, INJECTED_CAUSES, SCENARIOS  # noqa: F401  (the names, kept in the light module)
from tracer.errnos import errno_number

PROBE_SET = "rdma"
VENDORS = ("mlx5", "bnxt_re", "irdma")

# key -> (layer, {vendor: name} or name). "core_umem_get" and "peer_*" depend on the kernel.
_PROBES: dict[str, tuple[str, dict[str, str] | str]] = {
    "uv_create_cq": ("uverbs", "ib_uverbs_create_cq"),
    "uv_create_qp": ("uverbs", "ib_uverbs_create_qp"),
    "uv_modify_qp": ("uverbs", "ib_uverbs_modify_qp"),
    "uv_reg_mr": ("uverbs", "ib_uverbs_reg_mr"),
    "uv_reg_dmabuf_mr": ("uverbs", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"),
    "drv_alloc_pd": ("driver", {"mlx5": "mlx5_ib_alloc_pd", "bnxt_re": "bnxt_re_alloc_pd", "irdma": "irdma_alloc_pd"}),
    "drv_create_qp": ("driver", {"mlx5": "mlx5_ib_create_qp", "bnxt_re": "bnxt_re_create_qp", "irdma": "irdma_create_qp"}),
    "drv_modify_qp": ("driver", {"mlx5": "mlx5_ib_modify_qp", "bnxt_re": "bnxt_re_modify_qp", "irdma": "irdma_modify_qp_roce"}),
    "drv_reg_user_mr": ("driver", {"mlx5": "mlx5_ib_reg_user_mr", "bnxt_re": "bnxt_re_reg_user_mr", "irdma": "irdma_reg_user_mr"}),
    "drv_reg_user_mr_dmabuf": ("driver", {"mlx5": "mlx5_ib_reg_user_mr_dmabuf", "bnxt_re": "bnxt_re_reg_user_mr_dmabuf", "irdma": "irdma_reg_user_mr_dmabuf"}),
    "core_umem_get": ("core", "__ib_umem_get"),  # upstream kernels: ib_umem_get
    "peer_umem_get": ("peer-mem", "ib_peer_umem_get"),
    "peer_notifier": ("peer-mem", "ib_umem_activate_invalidation_notifier"),
    # read-only additions (not in RDMATracer's 13)
    "ro_query_gid": ("uverbs", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"),
    "ro_lookup": ("core", "rdma_lookup_get_uobject"),
}
PROBE_KEYS: tuple[str, ...] = tuple(_PROBES)
READ_ONLY_PROBES = ("ro_query_gid", "ro_lookup")

# Typical own (exclusive) time of one call, ns: FW commands and page pinning dominate.
_OWN_NS = {
    "uv_create_cq": 4_000, "uv_create_qp": 6_000, "uv_modify_qp": 3_000, "uv_reg_mr": 4_000,
    "uv_reg_dmabuf_mr": 5_000, "drv_alloc_pd": 25_000, "drv_create_qp": 180_000,
    "drv_modify_qp": 90_000, "drv_reg_user_mr": 120_000, "drv_reg_user_mr_dmabuf": 260_000,
    "core_umem_get": 60_000, "peer_umem_get": 400_000, "peer_notifier": 8_000,
    "ro_query_gid": 2_500, "ro_lookup": 600,
}


@dataclass(frozen=True)
class Platform:
    """A host's software/hardware flavour: decides probe names and which probes are live."""

    vendor: str
    kernel_release: str
    ofed: bool  # MLNX_OFED kernel: __ib_umem_get + peer-memory helpers exist

    def probe_name(self, key: str) -> str:
        layer, names = _PROBES[key]
        if key == "core_umem_get" and not self.ofed:
            return "ib_umem_get"
        return names[self.vendor] if isinstance(names, dict) else names

    def live(self, key: str) -> bool:
        return self.ofed or not key.startswith("peer_")


def probe_layer(key: str) -> str:
    return _PROBES[key][0]


# Kernel releases per vendor, with weights; "new" kernels carry driver changes that matter.
KERNELS: dict[str, list[tuple[str, bool, float]]] = {
    # (release, ofed, weight)
    "mlx5": [("5.15.0-1063-nvidia", True, 0.45), ("6.8.0-1017-nvidia", True, 0.45), ("6.8.0-49-generic", False, 0.10)],
    "bnxt_re": [("6.8.0-49-generic", False, 0.6), ("6.11.0-29-generic", False, 0.4)],
    "irdma": [("6.8.0-49-generic", False, 0.7), ("6.11.0-29-generic", False, 0.3)],
}
NEW_DRIVER_KERNEL = "6.11.0-29-generic"
VENDOR_WEIGHTS = {"mlx5": 0.8, "bnxt_re": 0.12, "irdma": 0.08}
MLX5_FIRMWARE = [("28.39.2048", 0.55), ("28.40.1000", 0.40), ("28.41.1000", 0.05)]
BAD_FIRMWARE = "28.41.1000"  # mkey cache exhaustion (root cause d)

# --------------------------------------------------------------------------------------------
# operations and outcomes
# --------------------------------------------------------------------------------------------
# Operation -> (command, arg of the root/driver frame, good frames as (probe key, depth)).
QP_TRANSITIONS = ("RESET->INIT", "INIT->RTR", "RTR->RTS")
OPERATIONS: dict[str, tuple[str, str | None, list[tuple[str, int]]]] = {
    "query_gid": ("query_gid", None, [("ro_query_gid", 0)]),
    "alloc_pd": ("alloc_pd", None, [("drv_alloc_pd", 0)]),
    "create_cq": ("create_cq", None, [("uv_create_cq", 0), ("ro_lookup", 1), ("core_umem_get", 1)]),
    "create_qp": ("create_qp", "RC", [("uv_create_qp", 0), ("ro_lookup", 1), ("ro_lookup", 1), ("drv_create_qp", 1), ("core_umem_get", 2)]),
    **{
        f"modify_qp {t}": (f"modify_qp {t}", t, [("uv_modify_qp", 0), ("ro_lookup", 1), ("drv_modify_qp", 1)])
        for t in QP_TRANSITIONS
    },
    "reg_mr": ("reg_mr", "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ", [("uv_reg_mr", 0), ("ro_lookup", 1), ("drv_reg_user_mr", 1), ("core_umem_get", 2)]),
    "reg_dmabuf_mr": ("reg_dmabuf_mr", "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ", [("uv_reg_dmabuf_mr", 0), ("drv_reg_user_mr_dmabuf", 1)]),
    # destroy/dereg/dealloc: the handlers are not probed; only the DESTROY-mode lookup is.
    "destroy": ("lookup_uobject", "DESTROY", [("ro_lookup", 0)]),
}
OP_NAMES: tuple[str, ...] = tuple(OPERATIONS)
OP = {name: i for i, name in enumerate(OP_NAMES)}


@dataclass(frozen=True)
class Outcome:
    """A way a call can end. Frames are (probe key, depth, errno name or None)."""

    name: str
    op: str
    frames: tuple[tuple[str, int, str | None], ...]
    root_cause: str | None = None  # truth label; None for success
    expected: bool = False  # routine error that should never alarm
    fatal: bool = False  # the job exits when its init hits this
    injected: bool = False  # one of the injected root causes (a)-(f)


def _good(op: str) -> tuple[tuple[str, int, str | None], ...]:
    return tuple((k, d, None) for k, d in OPERATIONS[op][2])


OUTCOMES: list[Outcome] = [Outcome(f"ok:{op}", op, _good(op)) for op in OP_NAMES]
OUTCOMES += [
    # good variants: the first QP on a new doorbell page also pins that page (mlx5_ib_db_map_user)
    Outcome("ok_doorbell:create_qp", "create_qp", (*_good("create_qp"), ("core_umem_get", 2, None))),
    Outcome("ok_doorbell:create_cq", "create_cq", (*_good("create_cq"), ("core_umem_get", 1, None))),
    # routine, expected errors
    Outcome("gid_query_empty_slot", "query_gid", (("ro_query_gid", 0, "ENODATA"),),
            root_cause="expected:gid_query_empty_slot", expected=True),
    Outcome("rdmacg_eagain_retry", "create_qp", (("uv_create_qp", 0, "EAGAIN"),),
            root_cause="expected:rdmacg_eagain_retry", expected=True),
    # background causes (real but not injected scenarios)
    Outcome("stale_qp_handle", "modify_qp RTR->RTS", (("uv_modify_qp", 0, "EINVAL"), ("ro_lookup", 1, "ENOENT")),
            root_cause="stale_qp_handle"),
    Outcome("memlock_limit", "reg_mr", (("uv_reg_mr", 0, "ENOMEM"), ("ro_lookup", 1, None),
            ("drv_reg_user_mr", 1, "ENOMEM"), ("core_umem_get", 2, "ENOMEM")),
            root_cause="memlock_limit", fatal=True),
    # injected root causes
    Outcome("dmabuf_peer_fallback", "reg_mr", (
        ("uv_reg_mr", 0, "EOPNOTSUPP"), ("ro_lookup", 1, None), ("drv_reg_user_mr", 1, "EOPNOTSUPP"),
        ("core_umem_get", 2, None), ("peer_umem_get", 3, None), ("peer_notifier", 2, "EOPNOTSUPP")),
        root_cause="dmabuf_peer_fallback", fatal=True, injected=True),
    Outcome("efault_peer_cascade", "reg_mr", (
        ("uv_reg_mr", 0, "EFAULT"), ("ro_lookup", 1, None), ("drv_reg_user_mr", 1, "EFAULT"),
        ("core_umem_get", 2, "EFAULT"), ("peer_umem_get", 3, "EFAULT")),
        root_cause="efault_peer_cascade", fatal=True, injected=True),
    Outcome("dmabuf_eperm_new_driver", "reg_dmabuf_mr", (
        ("uv_reg_dmabuf_mr", 0, "EPERM"), ("drv_reg_user_mr_dmabuf", 1, "EPERM")),
        root_cause="dmabuf_eperm_new_driver", fatal=True, injected=True),
    Outcome("mkey_cache_enomem", "reg_mr", (
        ("uv_reg_mr", 0, "ENOMEM"), ("ro_lookup", 1, None), ("drv_reg_user_mr", 1, "ENOMEM"), ("core_umem_get", 2, None)),
        root_cause="mkey_cache_enomem", injected=True),
    # firmware in a bad state: the job's first firmware command (ALLOC_PD) fails
    Outcome("crash_loop_fw_bad_state", "alloc_pd", (("drv_alloc_pd", 0, "EIO"),),
            root_cause="crash_loop_fw_bad_state", fatal=True, injected=True),
    # RoCE neighbour resolution (ib_resolve_eth_dmac, unprobed core) times out on INIT->RTR:
    # the driver is never called, so the errno first shows at the handler
    Outcome("neigh_resolve_timeout", "modify_qp INIT->RTR", (("uv_modify_qp", 0, "ETIMEDOUT"), ("ro_lookup", 1, None)),
            root_cause="neigh_resolve_timeout"),
]
OUTCOME = {o.name: i for i, o in enumerate(OUTCOMES)}
OK = {op: OUTCOME[f"ok:{op}"] for op in OP_NAMES}

# Root cause (f): dealloc_pd -EBUSY in uverbs_free_pd, below unprobed handlers: no event at all.
UNPROBED_CLEANUP = {
    "root_cause": "cleanup_ebusy_unprobed",
    "bifurcation_probe": "uverbs_free_pd",
    "bifurcation_errno": "EBUSY",
    "origin_layer": "core",
}



# --------------------------------------------------------------------------------------------
# per-platform resolved tables
# --------------------------------------------------------------------------------------------
@dataclass
class Resolved:
    """An outcome on one platform, frames flattened for numpy gathers."""

    probe_idx: list[int]  # index into PROBE_KEYS
    depth: list[int]
    ret: list[int]
    errno: list[str | None]
    offset_ns: list[int]  # entry time of each frame relative to the root's entry
    latency_ns: list[int]
    truth: dict[str, object] = field(default_factory=dict)


def _children(frames, i):
    d = frames[i][1]
    out = []
    for j in range(i + 1, len(frames)):
        if frames[j][1] <= d:
            break
        if frames[j][1] == d + 1:
            out.append(j)
    return out


def _timing(keys: list[str], depths: list[int]) -> tuple[list[int], list[int]]:
    """Entry offsets and latencies so that each frame encloses its nested frames."""
    n = len(keys)
    offset = [0] * n
    latency = [0] * n
    clock = 0

    def visit(i: int) -> None:
        nonlocal clock
        offset[i] = clock
        clock += 300  # entry overhead
        for j in _children(list(zip(keys, depths, strict=True)), i):
            visit(j)
        clock += _OWN_NS[keys[i]]
        latency[i] = clock - offset[i]

    for i in range(n):
        if depths[i] == 0:
            visit(i)
    return offset, latency


def _truth(outcome: Outcome, platform: Platform) -> dict[str, object]:
    if outcome.root_cause is None:
        return {"root_cause": None, "bifurcation_probe": None, "bifurcation_errno": None,
                "origin_layer": None, "expected_error": False}
    frames = outcome.frames
    good = [k for k, _, _ in _good(outcome.op)]
    if platform.vendor == "irdma" and outcome.op in ("create_qp", "create_cq"):
        good = [k for k in good if k != "core_umem_get"]
    # origin: follow failing children from the root down to the last failing frame
    origin = 0
    while True:
        failing = [j for j in _children(frames, origin) if frames[j][2] is not None]
        if not failing:
            break
        origin = failing[-1]
    # bifurcation: first frame leaving the good call sequence, else the origin
    bif = origin
    for i, (key, _, _) in enumerate(frames):
        if i >= len(good) or good[i] != key:
            bif = min(i, origin)
            break
    return {
        "root_cause": outcome.root_cause,
        "bifurcation_probe": platform.probe_name(frames[bif][0]),
        "bifurcation_errno": frames[bif][2],
        "origin_layer": probe_layer(frames[origin][0]),
        "expected_error": outcome.expected,
    }


@lru_cache(maxsize=64)
def resolve(platform: Platform) -> list[Resolved]:
    out = []
    for outcome in OUTCOMES:
        if platform.vendor == "irdma" and outcome.op in ("create_qp", "create_cq"):
            # irdma QP/CQ buffers are registered beforehand (reg_mr type QP/CQ): no pinning here
            outcome = Outcome(outcome.name, outcome.op, tuple(f for f in outcome.frames if f[0] != "core_umem_get"),
                              outcome.root_cause, outcome.expected, outcome.fatal, outcome.injected)
        keys = [k for k, _, _ in outcome.frames]
        depths = [d for _, d, _ in outcome.frames]
        offset, latency = _timing(keys, depths)
        out.append(Resolved(
            probe_idx=[PROBE_KEYS.index(k) for k in keys],
            depth=depths,
            ret=[-errno_number(e) if e else 0 for _, _, e in outcome.frames],
            errno=[e for _, _, e in outcome.frames],
            offset_ns=offset,
            latency_ns=latency,
            truth=_truth(outcome, platform),
        ))
    return out
