"""fleetgen5: a fifth, blind generator of RDMA fleet data with ground truth.

Written from reference/rdma_control_path.yaml, tracer/schema.py, README.md and
docs/architecture.md only, before reading the learn/audit code, the simulator or the other
generators' code: data shaped by someone who did not tune the audit. Shapes it stresses:

- Full call trees as a probe on every traceable function records them (13-30 frames, up to 9
  deep), ioctl-only verbs rooted at the generic dispatcher (ib_uverbs_ioctl: two operations,
  one root probe), every verb the reference names and five modify_qp transitions; the three
  vendors' driver subtrees (vendor_equivalents) and OFED's peer-memory layer (nvidia-peermem).
- Errors absorbed inside successful trees: GUP refusing GPU memory before the peer client pins
  it (pin_user_pages_fast EFAULT on every GPUDirect reg_mr), rdma_counter_bind_qp_auto's ignored
  ENOMEM on bnxt_re/irdma.
- In-kernel aggregation: per snapshot interval and failure signature the first K trees are
  records, the rest one example with `repeat_count` (a GID walk's empty slots, a crash loop).
- A crash loop whose first snapshots overflowed the ring (lost_events > 0, trees cut short).
- A window of more than one day (crosses midnight: two date partitions), host clocks skewed by
  seconds to minutes, diurnal load.
- A fault rolling out on a growing set of hosts (the peer client gone after an update) and one
  fixed mid-window (the UMR QP in error state); the two give the same errno (EFAULT) at the
  same driver probe (mlx5_ib_reg_user_mr) from different origins deeper down.
- A routine error whose rate rises with load (the rdma cgroup's EAGAIN under create_qp), a
  routine error confined to one vendor and kernel release (irdma without a dmabuf op), and a
  fatal fault whose errno (ENODATA) is one a caller is often told to move on from.

`generate(out_dir, hosts, hours, seed) -> summary`; the truth table has one row per trace;
`<out_dir>/fleetgen5.json` holds the summary (`roles` per host, `alert_hosts`: host -> the
errnos a host alert may name, hosts with a host-level fault; `required_alert_hosts`: those of
them an alert must be raised on, the crash-looping host)."""

from __future__ import annotations

import errno as errno_mod
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

from .trees import tree

NS = 1_000_000_000
SNAP_S = 30  # snapshot interval (tracer run -i 30s)
K_RECORDS = 3  # first K trees of a signature per interval are records, the rest one example
START = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)  # a window of more than 3 h crosses midnight
RELEASES = {"ofed": "6.8.0-1015-ofed24.07", "old": "6.12.9-upstream", "new": "6.17.4-cloud"}

# per-job operation rates at full load (calls/s): variant -> rate
RATES = {"reg_mr": 0.8, "dereg_mr": 0.8, "reg_dmabuf_mr": 0.2, "create_qp": 0.1, "destroy_qp": 0.08,
         "modify_qp:RESET->INIT": 0.1, "modify_qp:INIT->RTR": 0.1, "modify_qp:RTR->RTS": 0.1,
         "modify_qp:RTS->ERR": 0.03, "modify_qp:ERR->RESET": 0.03, "create_cq": 0.05, "alloc_pd": 0.01,
         "dealloc_pd": 0.01, "query_port": 0.2, "query_device": 0.05, "query_gid": 0.3}

# label -> family. variant: tree; origin: (function, its parent); keep: origin's descendants that
# ran before it failed; unwind: frames after the failure, (depth, function, layer); where: hosts
U, C, D = "uverbs", "core", "driver"
ROUTINE: dict[str, dict] = {
    # rdma-core walks the GID table at start and now and then: empty slots answer ENODATA
    "gid_walk_empty_slot": dict(variant="query_gid", origin=("rdma_get_gid_attr", None), errno="ENODATA",
                                unwind=[(3, "bundle_destroy", U), (4, "uverbs_finalize_object", C)], where="all"),
    # the rdma cgroup's hca_object limit: EAGAIN, the job retries; more QPs churn at high load
    "qp_cgroup_limit": dict(variant="create_qp", origin=("ib_rdmacg_try_charge", "alloc_begin_idr_uobject"),
                            errno="EAGAIN", unwind=[], where="all"),
    # irdma on the older kernel has no reg_user_mr_dmabuf op: the library falls back to reg_mr
    "dmabuf_op_missing": dict(variant="reg_dmabuf_mr", origin=("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", None),
                              errno="EOPNOTSUPP",
                              unwind=[(3, "bundle_destroy", U), (4, "uverbs_finalize_object", C),
                                      (5, "rdma_alloc_abort_uobject", C)], where="irdma_old"),
}
FAULTS: dict[str, dict] = {
    # nvidia-peermem gone after an update rolling out: no peer client claims the GPU range
    "peer_client_gone": dict(variant="reg_mr:gpu", origin=("ib_peer_umem_get", None), errno="EFAULT",
                             keep=["ib_get_peer_client"], unwind=[(4, "__ib_umem_release", C), (1, "rdma_alloc_abort_uobject", C)],
                             where="ofed"),
    # the UMR QP in error state (mlx5r_umr_post_send_wait): fixed mid-window
    "umr_qp_error": dict(variant="reg_mr", origin=("mlx5r_umr_post_send_wait", "mlx5r_umr_update_mr_pas"), errno="EFAULT",
                         unwind=[(3, "mlx5_ib_dereg_mr", D), (1, "rdma_alloc_abort_uobject", C)], where="mlx5"),
    # firmware commands time out on one host: the job restarting in a loop
    "fw_cmd_timeout_crashloop": dict(variant="alloc_pd", origin=("mlx5_cmd_exec", "mlx5_ib_alloc_pd"), errno="ETIMEDOUT",
                                     unwind=[(1, "rdma_alloc_abort_uobject", C)], where="mlx5"),
    # the GID's netdev in another net namespace (container hosts): INIT->RTR refused
    "netns_gid_gate": dict(variant="modify_qp:INIT->RTR", origin=("ib_resolve_eth_dmac", None), errno="ENODEV",
                           keep=["rdma_check_gid_user_access"], unwind=[(4, "rdma_unfill_sgid_attr", C)], where="all"),
    # the exporter's fence never signals: dmabuf pages not mapped in time
    "dmabuf_fence_timeout": dict(variant="reg_dmabuf_mr", origin=("ib_umem_dmabuf_map_pages", None), errno="ETIMEDOUT",
                                 keep=["dma_buf_map_attachment", "dma_resv_wait_timeout"],
                                 unwind=[(5, "mlx5_ib_dereg_mr", D), (3, "bundle_destroy", U),
                                         (4, "uverbs_finalize_object", C), (5, "rdma_alloc_abort_uobject", C)], where="mlx5"),
    # irdma user QP buffer not pre-registered (a library update): ENODATA, the job dies
    "irdma_wqe_buf_unregistered": dict(variant="create_qp", origin=("irdma_setup_virt_qp", None), errno="ENODATA",
                                       unwind=[(5, "irdma_free_qp_rsrc", D), (2, "rdma_alloc_abort_uobject", C)], where="irdma_new"),
}
FAMILIES = {**ROUTINE, **FAULTS}
# errors successful trees absorb (trees.py `=ERRNO`): routine, in good traces
ABSORBED = {("pin_user_pages_fast", "EFAULT"): "gup_refuses_gpu_memory",
            ("rdma_counter_bind_qp_auto", "ENOMEM"): "counter_auto_without_ops"}
# the rdma probe set (vendor-swapped) plus every root and family origin: the counters' probes
COUNTER_PROBES = {
    "mlx5": ["mlx5_ib_reg_user_mr", "mlx5_ib_reg_user_mr_dmabuf", "mlx5_ib_create_qp", "mlx5_ib_modify_qp", "mlx5_ib_alloc_pd",
             "mlx5r_umr_post_send_wait", "mlx5_cmd_exec"],
    "bnxt_re": ["bnxt_re_reg_user_mr", "bnxt_re_reg_user_mr_dmabuf", "bnxt_re_create_qp", "bnxt_re_modify_qp", "bnxt_re_alloc_pd"],
    "irdma": ["irdma_reg_user_mr", "irdma_reg_user_mr_dmabuf", "irdma_create_qp", "irdma_modify_qp_roce", "irdma_alloc_pd",
              "irdma_setup_virt_qp"],
}
COMMON_PROBES = ["ib_uverbs_reg_mr", "ib_uverbs_create_qp", "ib_uverbs_modify_qp", "ib_uverbs_create_cq", "ib_uverbs_alloc_pd",
                 "ib_uverbs_dealloc_pd", "ib_uverbs_destroy_qp", "ib_uverbs_dereg_mr", "ib_uverbs_query_port",
                 "ib_uverbs_ex_query_device", "ib_uverbs_ioctl", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR",
                 "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", "rdma_get_gid_attr", "ib_rdmacg_try_charge",
                 "ib_resolve_eth_dmac", "ib_umem_dmabuf_map_pages"]
OFED_PROBES = ["__ib_umem_get", "ib_peer_umem_get", "ib_umem_activate_invalidation_notifier"]


def failing_tree(frames: list, fam: dict) -> tuple[list, int]:
    """The failing call tree of a family from its successful tree: frames entered before the
    origin, the origin (errno) and the descendants it ran, every ancestor returning the errno,
    then the unwind. Returns (frames as (depth, fn, layer, errno), index of the origin)."""
    fn, parent = fam["origin"]
    for i, (_, f, _, _) in enumerate(frames):
        if f == fn and (parent is None or _parent(frames, i) == parent):
            break
    else:
        raise ValueError(f"{fn} not in tree {fam['variant']}")
    depth = frames[i][0]
    ancestors, need = set(), depth - 1
    for j in range(i - 1, -1, -1):
        if frames[j][0] == need:
            ancestors.add(j)
            need -= 1
    out = [(d, f, lay, fam["errno"] if j in ancestors else e) for j, (d, f, lay, e) in enumerate(frames[:i])]
    out.append((depth, fn, frames[i][2], fam["errno"]))
    keep = set(fam.get("keep", []))
    for d, f, lay, _ in frames[i + 1:]:
        if d <= depth:
            break
        if f in keep:
            out.append((d, f, lay, None))
    origin = i
    out += [(d, f, lay, None) for d, f, lay in fam["unwind"]]
    return out, origin


def _parent(frames: list, i: int) -> str | None:
    for j in range(i - 1, -1, -1):
        if frames[j][0] == frames[i][0] - 1:
            return frames[j][1]
    return None


def _load(t_s: np.ndarray) -> np.ndarray:
    """Diurnal load: peak at 15:00 UTC, trough (0.25) at 03:00."""
    hour = (START.hour + t_s / 3600.0) % 24
    return 0.25 + 0.75 * (0.5 + 0.5 * np.cos(2 * np.pi * (hour - 15) / 24))


class _Writer:
    """Column lists of one host's events and truth."""

    def __init__(self) -> None:
        self.ev: dict[str, list] = defaultdict(list)
        self.truth: dict[str, list] = defaultdict(list)


def generate(out_dir: str | Path, hosts: int = 24, hours: float = 14.0, seed: int = 5) -> dict:
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    T = hours * 3600.0
    names = [f"gpu{i:04d}" for i in range(hosts)]
    vendor = rng.permutation(np.array(["mlx5", "mlx5", "mlx5", "bnxt_re", "irdma"] * (hosts // 5 + 1))[:hosts])
    vendor[0], vendor[1] = "mlx5", "mlx5"  # the crash loop and the UMR fault need mlx5 hosts
    release = [RELEASES["ofed"] if v == "mlx5" and (i < 2 or rng.random() < 0.7) else
               (RELEASES["old"] if rng.random() < 0.5 else RELEASES["new"]) for i, v in enumerate(vendor)]
    skew = rng.choice([-1, 1], hosts) * rng.uniform(1, 180, hosts)  # host clock - true time (s)
    roles: dict[str, list[str]] = {h: [] for h in names}
    alert_hosts: dict[str, list[str]] = {}

    def allow(h: str, role: str, err: str) -> None:
        roles[h].append(role)
        alert_hosts.setdefault(h, [])
        if err not in alert_hosts[h]:
            alert_hosts[h].append(err)

    ofed_hosts = [i for i in range(hosts) if release[i] == RELEASES["ofed"]]
    crash = 0
    umr = [1] + [i for i in range(2, hosts) if vendor[i] == "mlx5"][:1]
    # rollout: the peer client breaks host after host from 30 % to 90 % of the window
    roll = [i for i in rng.permutation(ofed_hosts) if i not in (crash, *umr)][: max(2, len(ofed_hosts) // 2)]
    roll_at = {int(i): T * (0.3 + 0.6 * k / max(1, len(roll) - 1)) for k, i in enumerate(roll)}
    netns = {int(i) for i in rng.choice(hosts, max(2, hosts // 4), replace=False) if i != crash}
    dmabuf_bad = {int(i) for i in rng.permutation([i for i in range(hosts) if vendor[i] == "mlx5" and i != crash])[: max(1, hosts // 8)]}
    crash_span = (0.4 * T, min(T, 0.4 * T + 5400.0))
    # busy hosts: a big job lands mid-window, load x3 (and the cgroup's EAGAIN per call with it)
    busy = {int(i): float(rng.uniform(0.3, 0.6) * T) for i in rng.choice(hosts, max(2, hosts // 10), replace=False)}
    for i in busy:
        roles[names[i]].append("load_x3")
    for i in roll_at:
        allow(names[i], "peer_client_gone", "EFAULT")
    for i in umr:
        allow(names[i], "umr_qp_error", "EFAULT")
    allow(names[crash], "fw_cmd_timeout_crashloop", "ETIMEDOUT")
    for i in netns:
        allow(names[i], "netns_gid_gate", "ENODEV")
    for i in dmabuf_bad:
        allow(names[i], "dmabuf_fence_timeout", "ETIMEDOUT")
    for i in range(hosts):
        if vendor[i] == "irdma" and release[i] == RELEASES["new"]:
            allow(names[i], "irdma_wqe_buf_unregistered", "ENODATA")

    def fault_rate(fam: str, i: int, t: float) -> float:
        """Fatal failures per job-hour of family `fam` on host i at time t (s)."""
        if fam == "peer_client_gone":
            return 4.0 if i in roll_at and t >= roll_at[i] else 0.0
        if fam == "umr_qp_error":
            return 3.0 if i in umr and t < 0.45 * T else 0.0
        if fam == "netns_gid_gate":
            return 0.4 if i in netns else 0.0
        if fam == "dmabuf_fence_timeout":
            return 0.5 if i in dmabuf_bad else 0.0
        if fam == "irdma_wqe_buf_unregistered":
            return 0.6 if vendor[i] == "irdma" and release[i] == RELEASES["new"] else 0.0
        return 0.0

    summary = {"hosts": hosts, "hours": hours, "seed": seed, "traces": 0, "failures": 0, "aggregated": 0}
    def one_host(i: int, host: str) -> None:
        v, rel = str(vendor[i]), release[i]
        ofed = rel == RELEASES["ofed"]
        roles[host] += [v, rel] + (["clock_skew"] if abs(skew[i]) > 60 else [])
        variants = dict(RATES)
        if v == "irdma" and rel == RELEASES["old"]:
            variants.pop("reg_dmabuf_mr")
        trees = {var: tree(var, v, ofed) for var in variants}
        if ofed:
            trees["reg_mr:gpu"] = tree("reg_mr:gpu", v, ofed)
        scale = rng.uniform(0.7, 1.3)
        busy_at = busy.get(i, np.inf)

        def hload(t_s: np.ndarray) -> np.ndarray:
            """This host's load: the fleet's diurnal curve, its own scale, x3 once a big job lands."""
            return _load(t_s) * scale * np.where(t_s >= busy_at, 3.0, 1.0)
        w = _Writer()
        n_traces = 0
        pid_next = int(rng.integers(2000, 30000))
        boot = int(rng.uniform(1e4, 1e6) * NS)  # monotonic ns at the window's start
        fails: list[tuple] = []  # (t, family, pid, job, comm)
        jobs: list[tuple] = []  # (start, end, pid, job_id, comm)
        for _slot in range(int(rng.integers(2, 5))):
            t = float(rng.uniform(0, 600))
            while t < T:
                if i == crash and crash_span[0] <= t < crash_span[1]:
                    t = crash_span[1] + rng.uniform(60, 300)
                    continue
                end = min(T, t + max(1200.0, rng.exponential(4 * 3600)))
                if i == crash and t < crash_span[0] < end:
                    end = crash_span[0]  # the scheduler drains the host when the firmware wedges
                pid, pid_next = pid_next, pid_next + int(rng.integers(3, 400))
                job, comm = f"{700000 + i * 1000 + len(jobs)}", str(rng.choice(["python3", "all_reduce_perf", "torchrun"]))
                # the first fatal fault within the job's life ends it
                grid, fatal = np.arange(t + 1, end, 30.0), None
                for fam in FAULTS:
                    if fam == "fw_cmd_timeout_crashloop" or not grid.size:
                        continue
                    p = np.array([fault_rate(fam, i, g) for g in grid]) * 30 / 3600
                    hit = np.nonzero(rng.random(grid.size) < p)[0]
                    if hit.size and grid[hit[0]] < end:
                        end = float(grid[hit[0]])
                        fatal = fam
                if i in roll_at and t < roll_at[i] < end:  # the module goes: every live job's next GPU reg_mr fails
                    end, fatal = roll_at[i] + float(rng.uniform(0, 0.5)), "peer_client_gone"
                jobs.append((t, end, pid, job, comm))
                if fatal:
                    fails.append((end, fatal, pid, job, comm))
                # routine errors during the job's life (it goes on after each)
                life = np.arange(t, end, 60.0)
                lam = 0.9 * hload(life) ** 2 * 60 / 3600  # cgroup EAGAIN per job-minute, rises with load
                for tt in life[rng.random(life.size) < lam]:
                    fails.append((min(tt + rng.uniform(0, 60), end - 0.5), "qp_cgroup_limit", pid, job, comm))
                walks = [t + 2.0] + list(np.arange(t + rng.uniform(900, 2400), end - 5, rng.uniform(1200, 2400)))
                for tt in (x for x in walks if x < end):
                    for k in range(int(rng.integers(6, 15))):  # empty slots of one walk, a few ms apart
                        fails.append((tt + 0.003 * k, "gid_walk_empty_slot", pid, job, comm))
                if v == "irdma" and rel == RELEASES["old"] and t + 3.0 < end:
                    fails.append((t + 3.0, "dmabuf_op_missing", pid, job, comm))
                t = end + rng.uniform(30, 300)
        if i == crash:  # a restart every ~0.4 s for 90 minutes, each a new process
            for k, x in enumerate(np.arange(crash_span[0], crash_span[1], 0.4)):
                fails.append((float(x), "fw_cmd_timeout_crashloop", pid_next + 2 * k, f"{790000 + i}", "torchrun"))
        fails = [f for f in fails if 0 <= f[0] < T]
        fails.sort(key=lambda f: f[0])

        # capture windows: 10 s every hour, timed trees; good ones (< 50 ms) sampled
        win_starts = np.arange(rng.uniform(0, 3600), T - 10, 3600.0)

        def in_window(t: float) -> bool:
            k = np.searchsorted(win_starts, t, side="right") - 1
            return k >= 0 and t < win_starts[k] + 10

        def emit(frames: list, t: float, pid: int, job: str, comm: str, op: str, timed: bool, fam: str | None,
                 origin: tuple | None, repeat: int | None = None, lost: int = 0, arg: str | None = None) -> None:
            nonlocal n_traces
            tid = f"{host}-{n_traces:07d}"
            n_traces += 1
            wall = int((START.timestamp() + t + skew[i]) * NS)
            mono = boot + int(t * NS)
            n = len(frames)
            ends = list(range(n))  # last descendant of each frame
            stack: list[int] = []
            for j, (d, _, _, _) in enumerate(frames):
                while stack and frames[stack[-1]][0] >= d:
                    stack.pop()
                for s in stack:
                    ends[s] = j
                stack.append(j)
            root_err = frames[0][3] if fam else None
            ret0 = -getattr(errno_mod, root_err) if root_err else 0
            step = int(rng.integers(800, 2500))
            dur = (n + 1) * step
            for j, (d, fn, lay, e) in enumerate(frames):
                w.ev["trace_id"].append(tid)
                w.ev["seq"].append(j)
                w.ev["ts_ns"].append(mono + j * step if timed else mono + dur - (mono + dur) % 4_000_000)
                w.ev["pid"].append(pid)
                w.ev["tid"].append(pid)
                w.ev["ppid"].append(1 if comm == "torchrun" else pid - 1)
                w.ev["comm"].append(comm)
                w.ev["probe"].append(fn)
                w.ev["layer"].append(lay)
                w.ev["depth"].append(d)
                w.ev["ret"].append(-getattr(errno_mod, e) if e else 0)
                w.ev["errno"].append(e)
                w.ev["latency_ns"].append((ends[j] - j + 1) * step - step // 2 if timed else None)
                w.ev["arg"].append(arg if j == 0 else None)
                w.ev["kind"].append("failure" if fam else "good")
                w.ev["command"].append(op)
                w.ev["exit_status"].append(ret0)
                w.ev["start_time"].append(wall if timed else wall + dur)
                w.ev["end_time"].append(wall + dur)
                w.ev["kernel_release"].append(rel)
                w.ev["lost_events"].append(lost)
                w.ev["job_id"].append(job)
                w.ev["repeat_count"].append(repeat)
            # a good tree holding an error its operation absorbed holds only expected errors
            absorbed = None if fam else next((ABSORBED[(f, e)] for _, f, _, e in frames if e), None)
            w.truth["trace_id"].append(tid)
            w.truth["kind"].append("failure" if fam else "good")
            w.truth["root_cause"].append(fam or absorbed)
            w.truth["bifurcation_probe"].append(origin[1] if fam else None)
            w.truth["bifurcation_errno"].append(fam and FAMILIES[fam]["errno"])
            w.truth["origin_layer"].append(origin[2] if fam else None)
            w.truth["expected_error"].append(fam in ROUTINE or absorbed is not None)
            w.truth["held_out"].append(not fam and rng.random() < 0.1)
            w.truth["_t"].append(t)

        # good traces in the windows, from the jobs live through them
        gpu = ofed  # OFED hosts register GPU memory through the peer client
        for ws in win_starts:
            load = float(hload(np.array([ws]))[0])
            for (s, e, pid, job, comm) in jobs:
                if not (s <= ws and ws + 10 <= e):
                    continue
                for var, rate in variants.items():
                    for tt in np.sort(rng.uniform(ws, ws + 10, rng.poisson(rate * load * 10))):
                        use = "reg_mr:gpu" if var == "reg_mr" and gpu and rng.random() < 0.5 else var
                        op = var.split(":")[0]
                        emit(trees[use], float(tt), pid, job, comm, op, True, None, None,
                             arg=var.split(":")[1] if ":" in var else None)

        # failures: the first K of a signature per snapshot interval are records, the rest one example
        counts: dict[tuple, int] = defaultdict(int)
        groups: dict[tuple, list] = defaultdict(list)
        for f in fails:
            groups[(int(f[0] // SNAP_S), f[1])].append(f)
        fail_trees = {}
        for fam in {f[1] for f in fails}:
            spec = FAMILIES[fam]
            variant = spec["variant"]
            fail_trees[fam] = failing_tree(trees.get(variant) or tree(variant, v, ofed), spec)
        # the ring overflowed: a crash loop's first snapshots, the moment the peer client went
        lost_snaps = {int(crash_span[0] // SNAP_S), int(crash_span[0] // SNAP_S) + 1} if i == crash else set()
        if i in roll_at:
            lost_snaps.add(int(roll_at[i] // SNAP_S))
        lost_by_snap: dict[int, int] = {}
        for (snap, fam), group in sorted(groups.items()):
            frames, origin = fail_trees[fam]
            variant = FAMILIES[fam]["variant"]
            op, arg = variant.split(":")[0], (variant.split(":")[1] if variant.startswith("modify_qp:") else None)
            lost = 0
            if snap in lost_snaps:  # the ring overflowed before aggregation engaged: records lost
                lost = 300 + 40 * len(group)
                lost_by_snap[snap] = lost
            heads = group[:K_RECORDS]
            for t, _, pid, job, comm in heads:
                # cut short (the deepest, last frames lost), anywhere after the root's first callee
                fr = frames[: int(rng.integers(2, len(frames)))] if lost and rng.random() < 0.5 else frames
                emit(fr, t, pid, job, comm, op, in_window(t), fam, frames[origin], lost=lost, arg=arg)
            counts[(snap, fam)] += len(group)
            if len(group) > K_RECORDS:
                t, _, pid, job, comm = group[K_RECORDS]
                emit(frames, t, pid, job, comm, op, False, fam, frames[origin], repeat=len(group) - K_RECORDS, lost=lost, arg=arg)
                summary["aggregated"] += 1

        # counters: every snapshot, every probe of the host's set
        snaps = np.arange(SNAP_S, T + 1e-9, SNAP_S)
        probes = COMMON_PROBES + COUNTER_PROBES[v] + (OFED_PROBES if ofed else [])
        pidx = {p: k for k, p in enumerate(probes)}
        per_call = np.zeros(len(probes))  # expected probe hits per job-second at load 1
        for var, rate in variants.items():
            use = [trees[var]] + ([trees["reg_mr:gpu"]] if var == "reg_mr" and ofed else [])
            for tr in use:
                for _, fn, _, _ in tr:
                    if fn in pidx:
                        per_call[pidx[fn]] += rate / len(use)
        live = np.zeros(snaps.size)
        for s, e, *_ in jobs:
            live += np.clip(np.minimum(snaps, e) - np.maximum(snaps - SNAP_S, s), 0, None) / SNAP_S
        lam = (live * hload(snaps) * SNAP_S)[:, None] * per_call[None, :]
        inv = rng.poisson(lam)
        fails_n = np.zeros_like(inv)
        errs: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for (snap, fam), n in counts.items():
            frames, _ = fail_trees[fam]
            row = min(snap, snaps.size - 1)
            for _, fn, _, e in frames:
                if fn in pidx:
                    inv[row, pidx[fn]] += n
                    if e:
                        fails_n[row, pidx[fn]] += n
                        errs[(row, pidx[fn])][e] += n
        rows = snaps.size * len(probes)
        snap_ns = ((START.timestamp() + snaps + skew[i]) * NS).astype(np.int64)
        errno_cells = [None] * rows
        for (r, p), hist in errs.items():
            errno_cells[r * len(probes) + p] = [{"errno": k, "count": c} for k, c in sorted(hist.items())]
        lost_col = np.zeros(snaps.size, dtype=np.int64)
        for snap, n in lost_by_snap.items():
            lost_col[min(snap, snaps.size - 1)] = n
        counters = pa.table({
            "host": [host] * rows, "snapshot_time": pa.array(np.repeat(snap_ns, len(probes)), pa.timestamp("ns", tz="UTC")),
            "interval_s": np.full(rows, float(SNAP_S)),
            "kernel_release": [rel] * rows, "vendor": [v] * rows, "probe_set": ["rdma"] * rows,
            "probe": probes * snaps.size,
            "layer": [("peer-mem" if p in OFED_PROBES[1:] else "uverbs" if p.startswith("ib_uverbs") else
                       "driver" if p.split("_")[0] in ("mlx5", "mlx5r", "bnxt", "irdma") else "core") for p in probes] * snaps.size,
            "live": np.ones(rows, bool), "invocations": inv.reshape(-1), "failures": fails_n.reshape(-1),
            "errno_counts": pa.array(errno_cells, pa.list_(pa.struct([("errno", pa.string()), ("count", pa.int64())]))),
            "lost_records": np.repeat(lost_col, len(probes)),
        })
        day = np.array([datetime.fromtimestamp(x / NS, UTC).strftime("%Y-%m-%d") for x in snap_ns])
        for d in np.unique(day):
            part = counters.filter(pa.array(np.repeat(day == d, len(probes))))
            path = write_partition(part, out, "counters", str(d), host, "part-0.parquet", durable=False)
            write_counter_buckets(path, durable=False)

        ev = pa.table({k: (pa.array(c, pa.timestamp("ns", tz="UTC")) if k in ("start_time", "end_time") else c)
                       for k, c in w.ev.items()} | {"host": [host] * len(w.ev["seq"])})
        tr_t = np.array(w.truth.pop("_t"))
        truth = pa.table(dict(w.truth) | {"host": [host] * len(tr_t)})
        ev_day = np.array([datetime.fromtimestamp(x / NS, UTC).strftime("%Y-%m-%d") for x in ev["end_time"].cast(pa.int64()).to_numpy()])
        tr_day = np.array([datetime.fromtimestamp(START.timestamp() + x + skew[i], UTC).strftime("%Y-%m-%d") for x in tr_t])
        for d in np.unique(ev_day):
            write_partition(ev.filter(pa.array(ev_day == d)), out, "events", str(d), host, "part-0.parquet", durable=False)
        for d in np.unique(tr_day):
            write_partition(truth.filter(pa.array(tr_day == d)), out, "truth", str(d), host, "part-0.parquet", durable=False)
        summary["traces"] += n_traces
        summary["failures"] += sum(1 for k in w.truth["kind"] if k == "failure")
    for i, host in enumerate(names):
        one_host(i, host)
    # `alert_hosts` is what is acceptable (an alert there naming one of those errnos is no false
    # one); an alert is required only on the crash-looping host: the peer client's rollout and
    # the netns gate fail many hosts alike (their clusters' cause), irdma's unregistered WQE
    # buffers a whole platform, the UMR QP and the fence timeouts a few of a host's calls now
    # and then (an alert there is welcome, its absence no miss)
    required = {h: ["ETIMEDOUT"] for h, r in roles.items() if "fw_cmd_timeout_crashloop" in r}
    summary |= {"roles": roles, "alert_hosts": alert_hosts, "required_alert_hosts": required,
                "window": [START.isoformat(), datetime.fromtimestamp(START.timestamp() + T, UTC).isoformat()]}
    (out / "fleetgen5.json").write_text(json.dumps(summary, indent=1))
    return summary
