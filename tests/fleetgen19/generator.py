"""fleetgen19: a nineteenth fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings), aimed at what the eighteen
before it leave out: a storm whose one record stands for tens of thousands of failures beside a
fault that is one record on each of 40 hosts, a driver rollout in waves that brings a benign new
routine errno to every upgraded host and a real regression to one wave, a rack's leaf switch, and
hosts and probes coming and going mid-day.

The fleet: mlx5 RoCE GPU hosts (ConnectX-7, one NIC `mlx5_0` used by the jobs), racks of 8
(`fg19-r<RR>-h<H>`), on the upstream kernel 6.8.0-60-generic (no peer memory), NIC firmware
28.41.1000 (the firmware is in each trace's metadata, `fw_version`, only). One job slot a host:
jobs of 8 ranks (comm python3, one process a rank), 10-25 minutes, 1-3 minutes apart. A rank reads
the 4 GID slots of its port, allocates a PD, registers two buffers, creates a CQ (asking for
128-byte CQE padding), creates 2 RC QPs and moves each RESET->INIT->RTR->RTS, then re-registers a
buffer every 4-6 minutes while it trains (teardown is outside the probe set). A rank that fails
fatally ends its job: the launcher kills the other ranks 0.5 s later (no kernel error of theirs)
and the next job starts 1-3 minutes later. An `rdma-healthd` agent on every host reads the 4 GID
slots once a minute and goes on whatever it finds.

The daemon (`tracer run rdma -i 60s`): 60 s snapshots at a per-host phase, every call of every
probe counted; a tree is emitted when any of its probes fails, the first 3 of a signature (its
frames and errnos, whatever the process) per snapshot as records and the rest in the third's
repeat_count; good trees only when the root entered a capture window (the first 30 s of every 5
minutes at a per-host phase), timed there; outside them a failure's frames all carry the 4 ms tick
its root returned in, latency null.

Fleet dynamics (no fault, nothing to alert on):
  rollout     a kernel update to 6.8.0-65-generic (the in-tree mlx5 driver with it) in four waves
              at 20, 35, 50 and 65 % of the window (15, 25, 25 and 25 % of the hosts, each host at
              its own minute in a 10-minute wave; a tenth of the fleet held back): a reboot, 4
              minutes with nothing counted, a new boot (monotonic clock restarts), the running job
              gone without a trace. The second wave's hosts are also flashed to NIC firmware
              28.43.1000 at that reboot.
  autoscale   a twelfth of the hosts join between 35 and 50 % of the window (no counters, no
              history before; they boot the new release and the new probe set); a sixteenth are
              drained between 50 and 70 % and gone (nothing after: no snapshot, no record).
  probe set   half the hosts there at the start get probe set `rdma-v2` between 40 and 60 % of
              the window (a tracer restart: one or two snapshots lost, nothing counted then),
              which adds rdma_read_gid_attr_ndev_rcu under query_gid: its routine ENODEV shows
              for the first time there (no counter, no frame before).

Routine families (truth expected_error, no root cause; the process goes on):
  gid_empty_slot     query_gid ENODATA at rdma_get_gid_attr ("-ENODATA: empty GID slot"): slot 3 of
                     every port is empty; ranks and the agent skip it. Every host.
  gid_ndev_tolerated query_gid: slot 1 (the link-local GID) has no netdev: ENODEV at
                     rdma_read_gid_attr_ndev_rcu, "-ENODEV tolerated (ifindex stays 0)": the root
                     returns 0. Seen only where the probe is (rdma-v2 hosts, after the upgrade).
  cq_pad_refused     on 6.8.0-65 the driver no longer offers 128-byte CQE padding on this NIC:
                     create_cq EOPNOTSUPP at create_cq_user ("CQE compression or 128B padding
                     requested without HW cap"); the library creates the CQ again without it and
                     goes on. Every rank of every upgraded host, from its reboot on, and never on
                     the old release. Decision: routine (expected after the upgrade: a capability
                     the library asks for and does without); an SRE does not want the rollout
                     paged for it, nor a finding per rank.
  memtest_memlock    ONE host runs `rdma-memtest` every 10 minutes: it registers doubling buffers
                     until the memlock limit answers reg_mr ENOMEM at ib_umem_get ("pinned_vm +
                     npages > RLIMIT_MEMLOCK"), then bisects (4 ENOMEM a run, 7 successes) and
                     exits 0. Routine there: that is how the tool finds the limit.

Root causes (truth root_cause; ROOT_CAUSES: origin probe, errno, operation):
  storm_qp_ctx_exhausted  ONE host from 40 % of the window: a leaking KV-cache service
                     (`kv-server`) has used up the NIC's QP contexts and retries CREATE_QP in a
                     busy loop: LIM_ERR, ENOMEM at mlx5_cmd_exec under mlx5_qpc_create_qp
                     (errno_conventions: LIM_ERR -> -ENOMEM; the driver unwinds with destroy_qp,
                     the core aborts the uobject), ~40,000 times a minute: three records a snapshot,
                     the third's repeat_count ~40,000. Every rank's create_qp there fails the same
                     way (the same signature: its failures are inside the service's counts) and the
                     jobs crash-loop. Decision: the host MUST alert (ENOMEM, or a persistent bad
                     state on a create_qp frame); its cluster must count the failures, not the rows.
  rare_pinned_enomem one rank on each of 40 hosts (every host but eight, at smaller shapes), once in
                     the window: a pinned-page accounting race makes one registration cross the
                     memlock limit: reg_mr ENOMEM at ib_umem_get, the rank dies with its job. One
                     failure per host: no host alert required, and none may name it (one failure on
                     a host is no page); the cluster across the fleet is what an SRE wants. The same
                     (operation, probe, errno) is memtest_memlock's: routine for rdma-memtest on its
                     host, fatal to python3 everywhere.
  wave2_fw_create_qp_einval  the second wave's hosts (new release AND firmware 28.43.1000): 8 % of
                     CREATE_QP answered BAD_PARAM: EINVAL at mlx5_cmd_exec under mlx5_qpc_create_qp;
                     the rank dies. No other wave has it. One cluster (the firmware); no host alert
                     required (a quarter of the fleet alike), one naming EINVAL on a wave-2 host is
                     tolerated.
  rack_leaf_timeout  one rack's leaf switch stops answering neighbour resolution for 20 minutes
                     from 45 % of the window: every INIT->RTR on the rack's hosts fails ETIMEDOUT
                     at rdma_addr_find_l2_eth_by_grh (under ib_resolve_unicast_gid_dmac,
                     ib_resolve_eth_dmac, _ib_modify_qp), the jobs crash-loop until it recovers.
                     Decision: one cluster; host alerts on the rack's hosts are tolerated (ETIMEDOUT
                     or a bad state: each host was down, and grouping pages by rack is the pager's
                     job), none required; no alert elsewhere.

Decided before the first audit, for what an SRE would want: one page (the storm host), the
rollout's benign errno set aside everywhere, the rare fault and the wave-2 regression found as
clusters, the rack as one cluster, nothing on the memtest host, the joiners, the drained hosts or
the probe-set upgrade.

`generate(out_dir, hosts, hours, seed) -> summary` writes events, counters, counter_buckets and
truth in the dataset layout and `<out_dir>/fleetgen19.json`: `required_alert_hosts` (host -> errnos
an alert must name), `alert_hosts` (host -> errnos an alert may name), `storm_host`, `burst_host`,
`rare_hosts`, `rack_hosts`, `rack_window`, `upgrades` (host -> ISO time), `wave2_hosts`, `held_back`,
`joined` / `drained` (host -> ISO time), `probe_upgrades` (host -> ISO time), `routine` and `causes`
(label -> traces).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_counter_buckets, write_partition

START = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
SNAP_S = 60.0
K = 3  # records per failure signature per snapshot
CAPTURE_EVERY_S, CAPTURE_S = 300.0, 30.0
OLD, NEW = "6.8.0-60-generic", "6.8.0-65-generic"
FW_OLD, FW_NEW = "28.41.1000", "28.43.1000"
NDEV_PROBE = "rdma_read_gid_attr_ndev_rcu"
ERRNO = {"ENODATA": 61, "ENODEV": 19, "EOPNOTSUPP": 95, "ENOMEM": 12, "EINVAL": 22, "ETIMEDOUT": 110}

U, C, D = "uverbs", "core", "driver"
# call trees as the reference gives them (depth, function, layer), success path
TREES: dict[str, list[tuple[int, str, str]]] = {
    "query_gid": [(0, "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", U), (1, "rdma_get_gid_attr", C),
                  (1, NDEV_PROBE, C), (1, "rdma_put_gid_attr", C)],
    "alloc_pd": [(0, "ib_uverbs_alloc_pd", U), (1, "uverbs_request", U), (1, "rdma_alloc_begin_uobject", C),
                 (1, "mlx5_ib_alloc_pd", D), (2, "mlx5_cmd_exec", D), (1, "rdma_restrack_add", C),
                 (1, "uverbs_response", U)],
    "reg_mr": [(0, "ib_uverbs_reg_mr", U), (1, "rdma_alloc_begin_uobject", C), (1, "rdma_lookup_get_uobject", C),
               (1, "mlx5_ib_reg_user_mr", D), (2, "ib_umem_get", C), (3, "pin_user_pages_fast", C),
               (3, "sg_alloc_append_table_from_pages", C), (2, "create_real_mr", D), (3, "alloc_cacheable_mr", D),
               (3, "mlx5r_umr_update_mr_pas", D), (1, "rdma_restrack_add", C), (1, "rdma_lookup_put_uobject", C),
               (1, "uverbs_response", U)],
    "create_cq": [(0, "ib_uverbs_create_cq", U), (1, "create_cq", U), (2, "rdma_alloc_begin_uobject", C),
                  (2, "mlx5_ib_create_cq", D), (3, "create_cq_user", D), (4, "ib_umem_get", C),
                  (4, "mlx5_ib_db_map_user", D), (3, "mlx5_comp_eqn_get", D), (3, "mlx5_core_create_cq", D),
                  (2, "rdma_restrack_add", C), (2, "uverbs_response", U)],
    "create_qp": [(0, "ib_uverbs_create_qp", U), (1, "create_qp", U), (2, "rdma_alloc_begin_uobject", C),
                  (2, "rdma_lookup_get_uobject", C), (2, "ib_create_qp_user", C), (3, "create_qp", C),
                  (4, "mlx5_ib_create_qp", D), (5, "create_qp", D), (6, "create_user_qp", D),
                  (7, "_create_user_qp", D), (8, "ib_umem_get", C), (8, "mlx5_ib_db_map_user", D),
                  (7, "mlx5_qpc_create_qp", D), (8, "mlx5_cmd_exec", D), (3, "ib_create_qp_security", C),
                  (3, "rdma_restrack_add", C), (2, "ib_qp_usecnt_inc", C), (2, "rdma_lookup_put_uobject", C),
                  (2, "uverbs_response", U)],
    "RESET->INIT": [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C),
                    (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C), (4, "rdma_counter_bind_qp_auto", C),
                    (4, "ib_security_modify_qp", C), (5, "mlx5_ib_modify_qp", D), (6, "ib_modify_qp_is_ok", C),
                    (6, "__mlx5_ib_modify_qp", D), (7, "mlx5_core_qp_modify", D), (8, "mlx5_cmd_exec", D),
                    (2, "rdma_lookup_put_uobject", C)],
    "INIT->RTR": [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C),
                  (2, "copy_ah_attr_from_uverbs", U), (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C),
                  (4, "rdma_fill_sgid_attr", C), (5, "rdma_check_ah_attr", C), (5, "rdma_get_gid_attr", C),
                  (4, "ib_resolve_eth_dmac", C), (5, "rdma_check_gid_user_access", C),
                  (5, "ib_resolve_unicast_gid_dmac", C), (6, "rdma_addr_find_l2_eth_by_grh", C),
                  (4, "rdma_lag_get_ah_roce_slave", C), (4, "ib_security_modify_qp", C), (5, "mlx5_ib_modify_qp", D),
                  (6, "ib_modify_qp_is_ok", C), (6, "__mlx5_ib_modify_qp", D), (7, "mlx5_set_path", D),
                  (7, "mlx5_core_qp_modify", D), (8, "mlx5_cmd_exec", D), (4, "rdma_lag_put_ah_roce_slave", C),
                  (4, "rdma_unfill_sgid_attr", C), (2, "rdma_lookup_put_uobject", C)],
    "RTR->RTS": [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C),
                 (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C), (4, "ib_security_modify_qp", C),
                 (5, "mlx5_ib_modify_qp", D), (6, "ib_modify_qp_is_ok", C), (6, "__mlx5_ib_modify_qp", D),
                 (7, "mlx5_core_qp_modify", D), (8, "mlx5_cmd_exec", D), (2, "rdma_lookup_put_uobject", C)],
}
OPERATION = {"query_gid": "query_gid", "alloc_pd": "alloc_pd", "reg_mr": "reg_mr", "create_cq": "create_cq",
             "create_qp": "create_qp", "RESET->INIT": "modify_qp", "INIT->RTR": "modify_qp", "RTR->RTS": "modify_qp"}

# failing variants: (tree, origin function, errno, whether the root fails with it -- False: the
# error is absorbed -- and the frames after the origin: the caller's unwind)
FAILURES: dict[str, tuple[str, str, str, bool, list[tuple[int, str, str]]]] = {
    "gid_empty": ("query_gid", "rdma_get_gid_attr", "ENODATA", True, []),
    "gid_ndev": ("query_gid", NDEV_PROBE, "ENODEV", False, [(1, "rdma_put_gid_attr", C)]),
    "cq_pad": ("create_cq", "create_cq_user", "EOPNOTSUPP", True, []),
    "mr_memlock": ("reg_mr", "ib_umem_get", "ENOMEM", True, []),
    "qp_fw_enomem": ("create_qp", "mlx5_cmd_exec", "ENOMEM", True, [(7, "destroy_qp", D)]),
    "qp_fw_einval": ("create_qp", "mlx5_cmd_exec", "EINVAL", True, [(7, "destroy_qp", D)]),
    "rtr_timeout": ("INIT->RTR", "rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", True,
                    [(4, "rdma_unfill_sgid_attr", C), (2, "rdma_lookup_put_uobject", C)]),
}
# what a failure's origin takes with it on the way up: the abort of the new uobject where the
# handler allocated one (rdma_alloc_abort_uobject, reference: error path of uobj_alloc)
ABORT_DEPTH = {"alloc_pd": 1, "reg_mr": 1, "create_cq": 2, "create_qp": 2}

ROOT_CAUSES: dict[str, tuple[str, str, str]] = {
    "storm_qp_ctx_exhausted": ("mlx5_cmd_exec", "ENOMEM", "create_qp"),
    "rare_pinned_enomem": ("ib_umem_get", "ENOMEM", "reg_mr"),
    "wave2_fw_create_qp_einval": ("mlx5_cmd_exec", "EINVAL", "create_qp"),
    "rack_leaf_timeout": ("rdma_addr_find_l2_eth_by_grh", "ETIMEDOUT", "modify_qp"),
}
ROUTINE: dict[str, tuple[str, str, str]] = {
    "gid_empty_slot": ("rdma_get_gid_attr", "ENODATA", "query_gid"),
    "gid_ndev_tolerated": (NDEV_PROBE, "ENODEV", "query_gid"),
    "cq_pad_refused": ("create_cq_user", "EOPNOTSUPP", "create_cq"),
    "memtest_memlock": ("ib_umem_get", "ENOMEM", "reg_mr"),
}
LABEL_OF_VARIANT = {"gid_empty": "gid_empty_slot", "gid_ndev": "gid_ndev_tolerated", "cq_pad": "cq_pad_refused",
                    "qp_fw_enomem": "storm_qp_ctx_exhausted", "qp_fw_einval": "wave2_fw_create_qp_einval",
                    "rtr_timeout": "rack_leaf_timeout"}  # mr_memlock: by caller (rdma-memtest or a rank)


def _failing_frames(variant: str) -> list[tuple[int, str, str, str | None]]:
    """The frames of a failing tree: the success path up to the origin (which returns the errno,
    and every ancestor of it with the same errno when the root fails), the origin's children
    dropped, then the unwind; frames after the origin on the success path are gone."""
    tree_name, origin, errno, root_fails, unwind = FAILURES[variant]
    tree = TREES[tree_name]
    # the origin: the first frame of that name (mlx5_cmd_exec under mlx5_qpc_create_qp is the second)
    idx = next(i for i, (d, fn, _) in enumerate(tree) if fn == origin
               and (fn != "mlx5_cmd_exec" or tree[i - 1][1] == "mlx5_qpc_create_qp"))
    depth = tree[idx][0]
    ancestors, want = set(), depth
    for i in range(idx - 1, -1, -1):
        if tree[i][0] < want:
            ancestors.add(i)
            want = tree[i][0]
    out: list[tuple[int, str, str, str | None]] = []
    for i, (d, fn, layer) in enumerate(tree[:idx + 1]):
        failing = i == idx or (root_fails and i in ancestors)
        out.append((d, fn, layer, errno if failing else None))
    if root_fails:
        if tree_name in ABORT_DEPTH:
            unwind = [*unwind, (ABORT_DEPTH[tree_name], "rdma_alloc_abort_uobject", C)]
        out.extend((d, fn, layer, None) for d, fn, layer in unwind)
    else:
        out.extend((d, fn, layer, None) for d, fn, layer in unwind)
    return out


def _variant_frames(variant: str, v2: bool) -> tuple[tuple[int, str, str, str | None], ...]:
    frames = (_failing_frames(variant) if variant in FAILURES
              else [(d, fn, layer, None) for d, fn, layer in TREES[variant]])
    return tuple(f for f in frames if v2 or f[1] != NDEV_PROBE)


class _Host:
    """One host's life: when it is up, its release, firmware and probe set at a time."""

    def __init__(self, name: str, rack: int, rng: np.random.Generator, end: float):
        self.name, self.rack, self.end = name, rack, end
        self.join, self.leave = 0.0, end
        self.upgrade: float | None = None
        self.wave = 0
        self.probe_upgrade: float | None = None
        self.v2_from_start = False
        self.snap_phase = float(rng.uniform(0, SNAP_S))
        self.cap_phase = float(rng.uniform(0, CAPTURE_EVERY_S))

    def down(self) -> tuple[float, float] | None:
        return (self.upgrade, self.upgrade + 240.0) if self.upgrade is not None else None

    def release(self, t: float) -> str:
        return NEW if self.v2_from_start or (self.upgrade is not None and t >= self.upgrade) else OLD

    def firmware(self, t: float) -> str:
        return FW_NEW if self.wave == 2 and self.upgrade is not None and t >= self.upgrade else FW_OLD

    def v2(self, t: float) -> bool:
        return self.v2_from_start or (self.probe_upgrade is not None and t >= self.probe_upgrade)

    def boot(self, t: float) -> int:
        return 1 if self.upgrade is not None and t >= self.upgrade else 0

    def is_up(self, t: float) -> bool:
        dn = self.down()
        return self.join <= t < self.leave and not (dn and dn[0] <= t < dn[1])

    def next_up(self, t: float) -> float:
        dn = self.down()
        return dn[1] if dn and dn[0] <= t < dn[1] else t

    def snap(self, t: float) -> int:
        return math.floor((t - self.snap_phase) / SNAP_S)

    def lost_snaps(self) -> set[int]:
        """Snapshots never written: the one a reboot cut and those of a tracer restart."""
        out: set[int] = set()
        if self.upgrade is not None:
            out |= set(range(self.snap(self.upgrade), self.snap(self.upgrade + 240.0) + 1))
        if self.probe_upgrade is not None:
            out |= set(range(self.snap(self.probe_upgrade), self.snap(self.probe_upgrade + 45.0) + 1))
        return out

    def captured(self, t: float) -> bool:
        return (t - self.cap_phase) % CAPTURE_EVERY_S < CAPTURE_S


def _plan(hosts: int, hours: float, rng: np.random.Generator) -> tuple[list[_Host], dict]:
    end = hours * 3600.0
    fleet = [_Host(f"fg19-r{i // 8:02d}-h{i % 8}", i // 8, rng, end) for i in range(hosts)]
    order = list(rng.permutation(hosts))
    n_join, n_drain = max(2, hosts // 12), max(2, hosts // 16)
    joiners = [fleet[i] for i in order[:n_join]]
    for h in joiners:
        h.join = float(rng.uniform(0.35, 0.50)) * end
        h.v2_from_start = True
    rest = [fleet[i] for i in order[n_join:]]
    rack_fault = 1 if hosts >= 16 else 0
    # special hosts: never joining, drained or on the faulty rack
    candidates = [h for h in rest if h.rack != rack_fault]
    storm, burst = candidates[0], candidates[1]
    drainable = [h for h in rest[2:] if h not in (storm, burst)]
    drained = drainable[:n_drain]
    for h in drained:
        h.leave = float(rng.uniform(0.50, 0.70)) * end
    # the rollout: waves over the hosts there at the start, a tenth held back
    shuffled = [rest[i] for i in rng.permutation(len(rest))]
    n = len(shuffled)
    cuts = [0, round(0.15 * n), round(0.40 * n), round(0.65 * n), round(0.90 * n)]
    for wave, (lo, hi, at) in enumerate(zip(cuts, cuts[1:], (0.20, 0.35, 0.50, 0.65), strict=False), start=1):
        for h in shuffled[lo:hi]:
            t = at * end + float(rng.uniform(0, 600))
            if t + 240.0 < h.leave:
                h.upgrade, h.wave = t, wave
    held_back = shuffled[cuts[-1]:]
    # the probe-set upgrade: half the hosts there at the start
    for h in shuffled[::2]:
        t = float(rng.uniform(0.40, 0.60)) * end
        dn = h.down()
        if t < h.leave - 120 and not (dn and dn[0] - 120 <= t <= dn[1] + 60):
            h.probe_upgrade = t
    rare_pool = [h for h in fleet if h is not burst and h is not storm]
    n_rare = min(40, max(0, hosts - 8))
    rare = [rare_pool[i] for i in sorted(rng.choice(len(rare_pool), size=min(n_rare, len(rare_pool)), replace=False))]
    plan = {"storm": storm, "burst": burst, "rare": rare, "rack": rack_fault, "joiners": joiners,
            "drained": drained, "held_back": held_back,
            "storm_at": 0.40 * end, "rack_window": (0.45 * end, 0.45 * end + 1200.0)}
    return fleet, plan


def _rank_calls(start: float, rank: int, job_end: float, rng: np.random.Generator) -> list[tuple[float, str]]:
    """A rank's calls (time, tree) from its start-up to the job's end (no failure decided yet)."""
    t = start + rank * 0.15 + float(rng.uniform(0, 0.5))
    out: list[tuple[float, str]] = []

    def step(name: str, gap: tuple[float, float] = (0.002, 0.02)) -> None:
        nonlocal t
        t += float(rng.uniform(*gap))
        out.append((t, name))

    for slot in range(4):
        step(f"query_gid:{slot}")
    step("alloc_pd")
    step("reg_mr")
    step("reg_mr")
    step("create_cq")
    for _ in range(2):
        step("create_qp")
    for _ in range(2):
        step("RESET->INIT")
        step("INIT->RTR")
        step("RTR->RTS")
    t += float(rng.uniform(240, 360))
    while t < job_end:
        out.append((t, "reg_mr"))
        t += float(rng.uniform(240, 360))
    return out


def generate(out_dir, hosts: int = 48, hours: float = 2.0, seed: int = 19) -> dict:
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    fleet, plan = _plan(hosts, hours, rng)
    end = hours * 3600.0
    storm, burst = plan["storm"], plan["burst"]
    rare_at = {h.name: float(rng.uniform(0.05, 0.95)) * end for h in plan["rare"]}
    rack_lo, rack_hi = plan["rack_window"]
    frames_cache: dict[tuple[str, bool], tuple] = {}

    def frames(variant: str, v2: bool) -> tuple:
        key = (variant, v2)
        if key not in frames_cache:
            frames_cache[key] = _variant_frames(variant, v2)
        return frames_cache[key]

    summary_routine: dict[str, int] = defaultdict(int)
    summary_causes: dict[str, int] = defaultdict(int)
    rare_fired: dict[str, str] = {}
    storm_failures = 0
    pid_next = [3000]

    def new_pid() -> int:
        pid_next[0] += int(rng.integers(3, 40))
        return pid_next[0]

    for host in fleet:
        # calls: (t, pid, comm, job, variant, label or None)
        calls: list[tuple[float, int, str, str | None, str, str | None]] = []
        t = host.join + float(rng.uniform(0, 120))
        jobno = 0
        rare_pending = host.name in rare_at
        while t < host.leave:
            t = host.next_up(t)
            if t >= host.leave:
                break
            dur = float(rng.uniform(600, 1500))
            job_end = min(t + dur, host.leave)
            dn = host.down()
            if dn and t < dn[0] < job_end:
                job_end = dn[0]  # the reboot takes the job with it
            jobno += 1
            job = f"{host.name}-j{jobno}"
            pids = [new_pid() for _ in range(8)]
            planned = sorted((ct, r, name) for r in range(8) for ct, name in _rank_calls(t, r, job_end, rng))
            dead: set[int] = set()
            kill = job_end
            for ct, r, name in planned:
                if ct >= kill or ct >= job_end or r in dead:
                    continue
                variant, label = name, None
                if name.startswith("query_gid"):
                    slot = int(name.split(":")[1])
                    variant = "gid_empty" if slot == 3 else "gid_ndev" if slot == 1 else "query_gid"
                elif name == "create_cq" and host.release(ct) == NEW:
                    calls.append((ct, pids[r], "python3", job, "cq_pad", None))
                    ct += float(rng.uniform(0.001, 0.004))
                elif name == "reg_mr" and rare_pending and ct >= rare_at[host.name]:
                    variant, label, rare_pending = "mr_memlock", "rare_pinned_enomem", False
                    rare_fired[host.name] = (START + timedelta(seconds=ct)).isoformat()
                elif name == "create_qp" and host is storm and ct >= plan["storm_at"]:
                    variant = "qp_fw_enomem"
                elif name == "create_qp" and host.firmware(ct) == FW_NEW and rng.random() < 0.08:
                    variant = "qp_fw_einval"
                elif name == "INIT->RTR" and host.rack == plan["rack"] and rack_lo <= ct < rack_hi:
                    variant = "rtr_timeout"
                calls.append((ct, pids[r], "python3", job, variant, label))
                fatal = variant in ("mr_memlock", "qp_fw_enomem", "qp_fw_einval", "rtr_timeout")
                if fatal:
                    dead.add(r)
                    kill = min(kill, ct + 0.5)
            t = min(kill, job_end) + float(rng.uniform(60, 180))
        # the agent: 4 GID slots a minute
        ta = host.join + float(rng.uniform(0, 60))
        agent_pid = {0: new_pid(), 1: new_pid()}
        while ta < host.leave:
            if host.is_up(ta):
                for slot in range(4):
                    variant = "gid_empty" if slot == 3 else "gid_ndev" if slot == 1 else "query_gid"
                    calls.append((ta + slot * 0.003, agent_pid[host.boot(ta)], "rdma-healthd", None, variant, None))
            ta += 60.0
        # the memtest host's diagnostic: every 10 minutes, 11 registrations, 4 refused
        if host is burst:
            tm = host.join + float(rng.uniform(0, 600))
            while tm < host.leave:
                if host.is_up(tm):
                    pid = new_pid()
                    for i, ok in enumerate((1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 0)):
                        calls.append((tm + i * 0.05, pid, "rdma-memtest", None, "reg_mr" if ok else "mr_memlock",
                                      None if ok else "memtest_memlock"))
                tm += 600.0
        # the storm: the service's busy loop, three calls a snapshot written out, the rest counted
        bulk: dict[int, int] = {}
        if host is storm:
            kv = new_pid()
            s0 = host.snap(plan["storm_at"])
            for s in range(s0, host.snap(host.leave) + 1):
                lo = max(plan["storm_at"], host.snap_phase + s * SNAP_S)
                hi = min(host.leave, host.snap_phase + (s + 1) * SNAP_S)
                if hi <= lo or not host.is_up(lo):
                    continue
                n = int(rng.integers(38_000, 42_000) * (hi - lo) / SNAP_S)
                for i in range(K):
                    calls.append((lo + 0.001 + i * 0.0015, kv, "kv-server", None, "qp_fw_enomem", None))
                bulk[s] = max(0, n - K)
        calls.sort(key=lambda c: c[0])
        total, labels = _write_host(out, host, calls, bulk, frames, rng, summary_routine, summary_causes)
        storm_failures += total
        if "rare_pinned_enomem" not in labels:
            rare_fired.pop(host.name, None)  # its one failure fell in a snapshot the tracer lost

    upgrades = {h.name: (START + timedelta(seconds=h.upgrade)).isoformat() for h in fleet if h.upgrade is not None}
    wave2 = sorted(h.name for h in fleet if h.wave == 2)
    rack_hosts = sorted(h.name for h in fleet if h.rack == plan["rack"])
    alert_hosts: dict[str, list[str]] = {h: ["EINVAL"] for h in wave2}
    for h in rack_hosts:
        alert_hosts.setdefault(h, []).append("ETIMEDOUT")
    alert_hosts[storm.name] = ["ENOMEM"]
    iso = lambda s: (START + timedelta(seconds=s)).isoformat()  # noqa: E731
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed,
        "required_alert_hosts": {storm.name: ["ENOMEM"]},
        "alert_hosts": alert_hosts,
        "storm_host": storm.name, "storm_at": iso(plan["storm_at"]), "storm_failures": storm_failures,
        "burst_host": burst.name,
        "rare_hosts": rare_fired,
        "rack_hosts": rack_hosts, "rack_window": [iso(rack_lo), iso(rack_hi)],
        "upgrades": upgrades, "wave2_hosts": wave2,
        "held_back": sorted(h.name for h in plan["held_back"]),
        "joined": {h.name: iso(h.join) for h in plan["joiners"]},
        "drained": {h.name: iso(h.leave) for h in plan["drained"]},
        "probe_upgrades": {h.name: iso(h.probe_upgrade) for h in fleet if h.probe_upgrade is not None},
        "routine": dict(summary_routine), "causes": dict(summary_causes),
    }
    (out / "fleetgen19.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _latencies(fr: tuple, step_ns: int) -> list[int]:
    """Each frame's latency: its subtree's extent in steps (a frame enters `step_ns` after the last)."""
    n = len(fr)
    out = []
    for i in range(n):
        j = i + 1
        while j < n and fr[j][0] > fr[i][0]:
            j += 1
        out.append((j - i) * step_ns - step_ns // 3)
    return out


def _write_host(out: Path, host: _Host, calls: list, bulk: dict[int, int], frames, rng: np.random.Generator,
                routine: dict[str, int], causes: dict[str, int]) -> tuple[int, set[str]]:
    """What the tracer writes for one host: counters of every call, failure records aggregated
    per signature and snapshot, good records in capture windows; and the truth of each record."""
    lost = host.lost_snaps()
    counts: dict[tuple[int, tuple], int] = defaultdict(int)  # (snapshot, frames) -> calls
    per_sig: dict[tuple[int, tuple], list] = {}  # (snapshot, frames) -> records kept
    records: list[list] = []  # [t, pid, comm, job, frames, label, expected, timed, repeat]
    snaps_seen: set[int] = set()
    for t, pid, comm, job, variant, label in calls:
        if not host.is_up(t) or t >= host.end:
            continue
        s = host.snap(t)
        if s in lost or not host.is_up(host.snap_phase + (s + 1) * SNAP_S - 1):
            continue  # a snapshot the tracer never wrote: its calls are neither counted nor recorded
        fr = frames(variant, host.v2(t))
        counts[(s, fr)] += 1
        snaps_seen.add(s)
        failing = any(f[3] for f in fr)
        timed = host.captured(t)
        if failing:
            key = (s, fr)
            kept = per_sig.setdefault(key, [])
            if len(kept) < K:
                if label is None:
                    label = LABEL_OF_VARIANT.get(variant)
                rec = [t, pid, comm, job, fr, label, label in ROUTINE, timed, 1]
                kept.append(rec)
                records.append(rec)
            else:
                kept[-1][8] += 1
        elif timed:
            records.append([t, pid, comm, job, fr, None, False, True, 1])
    storm_total = 0
    for s, n in bulk.items():
        if s in lost:
            continue
        fr = frames("qp_fw_enomem", host.v2(host.snap_phase + s * SNAP_S))
        kept = per_sig.get((s, fr))
        if kept:
            kept[-1][8] += n
            counts[(s, fr)] += n
    for (_s, fr), kept in per_sig.items():
        if fr[0][1] == "ib_uverbs_create_qp" and any(f[3] == "ENOMEM" for f in fr):
            storm_total += sum(r[8] for r in kept)
    # events and truth
    ev: dict[str, list] = defaultdict(list)
    tr: dict[str, list] = defaultdict(list)
    recno = int(rng.integers(1 << 20, 1 << 30))
    for t, pid, comm, job, fr, label, expected, timed, repeat in records:
        recno += 1
        boot = host.boot(t)
        boot_t = host.upgrade + 240.0 if boot else host.join - 3600.0 * 30
        mono0 = int((t - boot_t) * 1e9) + 7_000_000_000
        wall = START + timedelta(seconds=t)
        failing = any(f[3] for f in fr)
        trace_id = f"{host.name}:{boot}:{pid}:{recno}"
        n = len(fr)
        if timed:
            step = int(rng.integers(3_000, 12_000))
            lat = _latencies(fr, step)
            ts = [mono0 + i * step for i in range(n)]
            start_t, end_t = wall, wall + timedelta(microseconds=lat[0] / 1000)
        else:
            tick = (mono0 // 4_000_000) * 4_000_000
            ts, lat = [tick] * n, [None] * n
            start_t = end_t = START + timedelta(seconds=(t // 0.004) * 0.004)
        root_err = fr[0][3]
        exit_status = -ERRNO[root_err] if root_err else 0
        meta = [{"key": "fw_version", "value": host.firmware(t)}, {"key": "device", "value": "mlx5_0"},
                {"key": "rack", "value": f"r{host.rack:02d}"}]
        modify = fr[0][1] == "ib_uverbs_modify_qp"
        arg = _arg_of(fr) if modify else None  # the QP transition, as the tracer labels modify_qp
        op = "modify_qp" if modify else _op_of(fr)
        for i, (d, fn, layer, errno) in enumerate(fr):
            ev["trace_id"].append(trace_id)
            ev["seq"].append(i)
            ev["ts_ns"].append(ts[i])
            ev["pid"].append(pid)
            ev["tid"].append(pid)
            ev["ppid"].append(1 if comm != "python3" else pid - 1)
            ev["comm"].append(comm)
            ev["probe"].append(fn)
            ev["layer"].append(layer)
            ev["depth"].append(d)
            ev["ret"].append(-ERRNO[errno] if errno else 0)
            ev["errno"].append(errno)
            ev["latency_ns"].append(lat[i])
            ev["path"].append(None)
            ev["arg"].append(arg if i == 0 else None)
            ev["path2"].append(None)
            ev["output"].append(None)
            ev["kind"].append("failure" if failing else "good")
            ev["command"].append(op)
            ev["exit_status"].append(exit_status)
            ev["start_time"].append(start_t)
            ev["end_time"].append(end_t)
            ev["host"].append(host.name)
            ev["kernel_release"].append(host.release(t))
            ev["lost_events"].append(0)
            ev["job_id"].append(job)
            ev["metadata"].append(meta)
            ev["repeat_count"].append(repeat if repeat > 1 else None)
        origin = _origin(fr) if failing else None
        tr["trace_id"].append(trace_id)
        tr["host"].append(host.name)
        tr["kind"].append("failure" if failing else "good")
        tr["root_cause"].append(label)
        tr["bifurcation_probe"].append(origin[1] if origin else None)
        tr["bifurcation_errno"].append(origin[3] if origin else None)
        tr["origin_layer"].append(origin[2] if origin else None)
        tr["expected_error"].append(bool(expected))
        tr["held_out"].append(bool(not failing and rng.random() < 0.1))
        if label in ROUTINE:
            routine[label] += 1
        elif label:
            causes[label] += 1
    # counters: every probe of the host's set in every snapshot it wrote
    probes_v1: dict[str, str] = {}
    for tree in TREES.values():
        for _, fn, layer in tree:
            probes_v1.setdefault(fn, layer)
    probes_v1.setdefault("rdma_alloc_abort_uobject", C)
    probes_v1.setdefault("destroy_qp", D)
    cells: dict[tuple[int, str], list] = {}
    for (s, fr), n in counts.items():
        for _, fn, _layer, errno in fr:
            cell = cells.setdefault((s, fn), [0, 0, defaultdict(int)])
            cell[0] += n
            if errno:
                cell[1] += n
                cell[2][errno] += n
    first = host.snap(host.join)
    last = host.snap(min(host.leave, host.end) - 1e-6)
    co: dict[str, list] = defaultdict(list)
    for s in range(first, last + 1):
        if s in lost:
            continue
        at = host.snap_phase + (s + 1) * SNAP_S
        if not host.is_up(at - 1):
            continue
        v2 = host.v2(at - 1)
        for fn, layer in probes_v1.items():
            if fn == NDEV_PROBE and not v2:
                continue
            calls_n, fails, errs = cells.get((s, fn), (0, 0, {}))
            co["host"].append(host.name)
            co["snapshot_time"].append(START + timedelta(seconds=at))
            co["interval_s"].append(SNAP_S)
            co["kernel_release"].append(host.release(at - 1))
            co["vendor"].append("mlx5")
            co["probe_set"].append("rdma-v2" if v2 else "rdma")
            co["probe"].append(fn)
            co["layer"].append(layer)
            co["live"].append(True)
            co["invocations"].append(calls_n)
            co["failures"].append(fails)
            co["errno_counts"].append([{"errno": e, "count": c} for e, c in sorted(errs.items())] or None)
            co["lost_records"].append(0)
    date = START.date().isoformat()
    if ev:
        write_partition(pa.Table.from_pydict(ev, schema=EVENTS), out, "events", date, host.name, "part-0.parquet")
        write_partition(pa.Table.from_pydict(tr, schema=TRUTH), out, "truth", date, host.name, "part-0.parquet")
    if co:
        path = write_partition(pa.Table.from_pydict(co, schema=COUNTERS), out, "counters", date, host.name,
                               "part-0.parquet")
        write_counter_buckets(path)
    return storm_total, set(tr["root_cause"]) - {None}


def _origin(fr: tuple) -> tuple:
    """The deepest failing frame (the chain's origin): for a failing root the last frame whose errno
    is the root's; for an absorbed error the failing frame."""
    failing = [f for f in fr if f[3]]
    return max(failing, key=lambda f: f[0])


def _op_of(fr: tuple) -> str:
    root = fr[0][1]
    return {"ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY": "query_gid", "ib_uverbs_alloc_pd": "alloc_pd",
            "ib_uverbs_reg_mr": "reg_mr", "ib_uverbs_create_cq": "create_cq",
            "ib_uverbs_create_qp": "create_qp"}[root]


def _arg_of(fr: tuple) -> str:
    names = {f[1] for f in fr}
    if "rdma_counter_bind_qp_auto" in names:
        return "RESET->INIT"
    if "copy_ah_attr_from_uverbs" in names:
        return "INIT->RTR"
    return "RTR->RTS"
