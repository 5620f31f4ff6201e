"""fleetgen27's fleet: what it is and why its truth is what it is.

Written from reference/rdma_control_path.yaml (call chains, errnos), tracer/schema.py (the tables,
written through its writers only), README.md and docs/architecture.md. Nothing of the simulator,
the audit or the other generators is read or imported.

The fleet
---------
`hosts` mlx5 RoCE GPU hosts (default 300) named by rack, `rRR-hHH`, racks of 20, on one Ubuntu
kernel build (6.8.0-45-generic), 8 single-port ConnectX NICs a host (mlx5_0..7), some racks with
the two ports of a bond (RoCE LAG: INIT->RTR goes through rdma_lag_get_ah_roce_slave's xmit-slave
lookup; the shape of the probed tree is the same, the static helpers under it are not probed).

The tracer: fexit probes on the uverbs handlers, the uverbs_cmd.c helpers Meta's list names
(create_cq, create_qp, modify_qp), the exported/global core and mlx5 functions of the reference
chains; the mlx5 and verbs.c statics (create_qp of verbs.c and of mlx5, create_user_qp,
create_cq_user, create_real_mr, __mlx5_ib_modify_qp, rdma_fill_sgid_attr, ...) are inlined or not
in the set, so their callees hang one level up. Counters every 60 s (`tracer run -i 60s`), one row
per attached probe per snapshot; failure trees always emitted, the first K=3 of a signature per
snapshot as records, the third standing for the rest (`repeat_count`); good trees only inside
capture windows (10 s every 5 minutes, a phase per host), where every tree is timed. Outside a
window a tree is untimed (latency null, every ts_ns and start = end the 4 ms tick its root
returned in). Functions returning pointers (ib_umem_get, rdma_lookup_get_uobject,
rdma_alloc_begin_uobject, rdma_get_gid_attr, ib_create_qp_user, mlx5_ib_reg_user_mr, ...) return a
kernel address on success: a large negative int64 with no errno, as a raw fexit return reads.

Who calls what
--------------
- training jobs: 4-host jobs (consecutive hosts), 8 ranks a host (`pt_main_thread`, PyTorch's
  main thread name), each rank: alloc_pd, 2 GID entries (QUERY_GID_ENTRY ioctl), 2 CQs, 4 RC QPs
  each RESET->INIT, INIT->RTR, RTR->RTS, 4 MRs, then an MR every 7-15 minutes while the job runs.
  A rank that fails a call dies; the launcher kills the job's other ranks within a second (their
  remaining calls never happen, no kernel error of their own) and the job is resubmitted 1.5-4
  minutes later under a new job id.
- `fabric-hb`, a UD heartbeat daemon on every host, long running (started before the window);
  its QP carries a privileged QKEY, allowed because every image runs `rdma system set
  privileged-qkey on` at boot.
- `ib-exporter` on every host refreshes port attributes every 5 minutes: ibv_query_port of
  ports 1 and 2 of each of the 8 devices. The devices have one port: port 2 fails EINVAL at
  ib_query_port (!rdma_is_port_valid) and the exporter goes on (ROUTINE `exporter_port2_einval`).
- the nightly ETL batch, 02:00-02:50 on every host: two `etl-loader` processes a host register
  each dataset shard they mmap'd (MAP_SHARED, writable) for RDMA reads. A long-term writable pin
  of a file-backed mapping is refused by GUP: EFAULT at pin_user_pages_fast, up through
  ib_umem_get and mlx5_ib_reg_user_mr to the handler; the loader then registers an anonymous
  staging buffer (which succeeds) and copies (ROUTINE `nightly_loader_file_pin_efault`): a
  fleet-wide surge of failures confined to one hour of the day.

Root causes
-----------
- `canary_privileged_qkey_off` (4 hosts): the canary half-rack is drained and re-imaged at ~01:30
  (rolling reboots: a 2.5-3.5 minute tracer gap, a new boot id, kernel 6.8.0-49-generic). The new
  image lost the privileged-qkey boot unit, so the heartbeat daemon's RESET->INIT of its UD QP is
  refused by the qkey check of uverbs_cmd.c's modify_qp (EPERM, before the driver is reached) and
  the daemon exits; systemd restarts it every ~20 s: a crash loop, one failing tree a start. The
  training ranks scheduled back on those hosts pass the same probe (modify_qp) over a thousand times.
  It starts as the nightly batch's surge does, on an updated release: the regression is the
  EPERM, not the surge. Bifurcation: modify_qp EPERM (every edge of the failing tree is in the
  good RESET->INIT trees); origin layer uverbs.
- `bond_xmit_slave_enomem` (2 hosts of 300): a huge-page reservation leaves these two hosts'
  atomic reserve too small; now and then the bonded port's xmit-slave lookup cannot allocate its
  skb and INIT->RTR fails ENOMEM at rdma_lag_get_ah_roce_slave (ERR_PTR), fatal to the rank and so
  to its job. Every other job start on their host groups meets it once: 2-5 failures a host in
  three hours, untimed almost always. Bifurcation: rdma_lag_get_ah_roce_slave ENOMEM; origin core.

Artefacts (no truth label, no finding, no alert): the canary's drain, reboot, boot id and
kernel change; rack `drained_rack` drained for maintenance 01:10-01:50 (its exporters and daemons
keep running); killed sibling ranks; restarted jobs; the nightly surge itself.

`faults=False` gives the same fleet with neither root cause (the canary's image keeps the unit:
its daemon starts once and runs).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from tracer.schema import write_counter_buckets, write_partition

START = datetime(2025, 3, 14, 0, 45, tzinfo=UTC)
INTERVAL_S = 60
WINDOW_EVERY_S, WINDOW_LEN_S = 300, 10
K_RECORDS = 3
TICK_NS = 4_000_000
RACK = 20
GROUP = 4  # hosts of one training job
RANKS = 8
RELEASE_OLD, RELEASE_NEW = "6.8.0-45-generic", "6.8.0-49-generic"
ERRNO = {"EPERM": 1, "EIO": 5, "ENOMEM": 12, "EFAULT": 14, "EINVAL": 22}

LAYER = {}
for _p in ("ib_uverbs_alloc_pd", "ib_uverbs_create_cq", "create_cq", "ib_uverbs_create_qp", "create_qp",
           "ib_uverbs_modify_qp", "modify_qp", "ib_uverbs_reg_mr", "ib_uverbs_query_port", "copy_port_attr_to_resp",
           "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"):
    LAYER[_p] = "uverbs"
for _p in ("rdma_alloc_begin_uobject", "ib_rdmacg_try_charge", "rdma_restrack_add", "rdma_lookup_get_uobject",
           "rdma_lookup_put_uobject", "rdma_alloc_abort_uobject", "ib_umem_get", "pin_user_pages_fast",
           "sg_alloc_append_table_from_pages", "ib_create_qp_user", "ib_create_qp_security", "ib_qp_usecnt_inc",
           "ib_modify_qp_with_udata", "_ib_modify_qp", "rdma_get_gid_attr", "ib_resolve_eth_dmac",
           "rdma_check_gid_user_access", "rdma_addr_find_l2_eth_by_grh", "rdma_lag_get_ah_roce_slave",
           "rdma_lag_put_ah_roce_slave", "rdma_counter_bind_qp_auto", "ib_security_modify_qp", "ib_modify_qp_is_ok",
           "ib_query_port", "rdma_read_gid_attr_ndev_rcu", "rdma_put_gid_attr"):
    LAYER[_p] = "core"
for _p in ("mlx5_ib_alloc_pd", "mlx5_cmd_exec", "mlx5_ib_create_cq", "mlx5_ib_db_map_user", "mlx5_comp_eqn_get",
           "mlx5_core_create_cq", "mlx5_ib_create_qp", "mlx5_qpc_create_qp", "mlx5_ib_modify_qp", "mlx5_core_qp_modify",
           "mlx5_ib_reg_user_mr", "mlx5r_umr_resource_init", "mlx5r_umr_update_mr_pas", "mlx5_ib_query_port"):
    LAYER[_p] = "driver"

# return kinds of successful calls: "0", "1" (bool true), "ptr" (a kernel address), "pages" (a count)
POINTERS = {"rdma_alloc_begin_uobject", "rdma_lookup_get_uobject", "ib_umem_get", "ib_create_qp_user",
            "rdma_get_gid_attr", "rdma_read_gid_attr_ndev_rcu", "mlx5_ib_reg_user_mr"}
BOOLS = {"rdma_check_gid_user_access", "ib_modify_qp_is_ok"}


def n(probe: str, *kids, err: str | None = None, ret: str | None = None):
    kind = ret or ("ptr" if probe in POINTERS else "1" if probe in BOOLS else
                   "pages" if probe == "pin_user_pages_fast" else "0")
    return (probe, err, kind, list(kids))


def _begin(err=None):
    return n("rdma_alloc_begin_uobject", n("ib_rdmacg_try_charge"), err=err)


def _pin(err=None):
    return n("ib_umem_get", n("pin_user_pages_fast", err=err), *(() if err else (n("sg_alloc_append_table_from_pages"),)),
             err=err)


def _modify(transition: str, av: bool, fail: str | None = None):
    """A modify_qp tree: fail None (good), "EPERM" (the qkey check in uverbs_cmd.c's modify_qp,
    before ib_modify_qp_with_udata) or "ENOMEM" (rdma_lag_get_ah_roce_slave under _ib_modify_qp)."""
    if fail == "EPERM":
        return n("ib_uverbs_modify_qp", n("modify_qp", n("rdma_lookup_get_uobject"), n("rdma_lookup_put_uobject"),
                                          err="EPERM"), err="EPERM")
    inner = []
    if av:
        inner += [n("rdma_get_gid_attr"),
                  n("ib_resolve_eth_dmac", n("rdma_check_gid_user_access"), n("rdma_addr_find_l2_eth_by_grh")),
                  n("rdma_lag_get_ah_roce_slave", err=fail, ret=None if fail else "0")]
    if fail == "ENOMEM":
        driver = []
    else:
        if transition == "RESET->INIT":
            inner.append(n("rdma_counter_bind_qp_auto"))
        driver = [n("ib_security_modify_qp", n("mlx5_ib_modify_qp", n("ib_modify_qp_is_ok"),
                                               n("mlx5_core_qp_modify", n("mlx5_cmd_exec"))))]
        if av:
            driver.append(n("rdma_lag_put_ah_roce_slave"))
    body = n("_ib_modify_qp", *inner, *driver, err=fail)
    return n("ib_uverbs_modify_qp", n("modify_qp", n("rdma_lookup_get_uobject"), n("ib_modify_qp_with_udata", body, err=fail),
                                      n("rdma_lookup_put_uobject"), err=fail), err=fail)


def _reg_mr(fail=None):
    mr = n("mlx5_ib_reg_user_mr", n("mlx5r_umr_resource_init"), _pin(fail),
           *(() if fail else (n("mlx5r_umr_update_mr_pas"),)), err=fail)
    tail = [n("rdma_lookup_put_uobject"), n("rdma_alloc_abort_uobject")] if fail else [
        n("rdma_restrack_add"), n("rdma_lookup_put_uobject")]
    return n("ib_uverbs_reg_mr", _begin(), n("rdma_lookup_get_uobject"), mr, *tail, err=fail)


# variant -> (operation, root arg, tree, label, routine?)
VARIANTS: dict[str, tuple] = {
    "alloc_pd": ("alloc_pd", None, n("ib_uverbs_alloc_pd", _begin(), n("mlx5_ib_alloc_pd", n("mlx5_cmd_exec")),
                                     n("rdma_restrack_add")), None, False),
    "query_gid": ("query_gid", None, n("ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", n("rdma_get_gid_attr"),
                                       n("rdma_read_gid_attr_ndev_rcu"), n("rdma_put_gid_attr")), None, False),
    "create_cq": ("create_cq", None, n("ib_uverbs_create_cq", n(
        "create_cq", _begin(), n("mlx5_ib_create_cq", _pin(), n("mlx5_ib_db_map_user"), n("mlx5_comp_eqn_get"),
                                 n("mlx5_core_create_cq")), n("rdma_restrack_add"))), None, False),
    "create_qp": ("create_qp", None, n("ib_uverbs_create_qp", n(
        "create_qp", _begin(), n("rdma_lookup_get_uobject"), n("rdma_lookup_get_uobject"),
        n("ib_create_qp_user", n("mlx5_ib_create_qp", _pin(), n("mlx5_ib_db_map_user"),
                                 n("mlx5_qpc_create_qp", n("mlx5_cmd_exec"))),
          n("ib_create_qp_security"), n("rdma_restrack_add")),
        n("ib_qp_usecnt_inc"), n("rdma_lookup_put_uobject"))), None, False),
    "rst2init": ("modify_qp", "RESET->INIT", _modify("RESET->INIT", False), None, False),
    "init2rtr": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", True), None, False),
    "init2rtr_ud": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", False), None, False),
    "rtr2rts": ("modify_qp", "RTR->RTS", _modify("RTR->RTS", False), None, False),
    "reg_mr": ("reg_mr", None, _reg_mr(), None, False),
    "query_port": ("query_port", "port=1", n("ib_uverbs_query_port", n("ib_query_port", n("mlx5_ib_query_port")),
                                             n("copy_port_attr_to_resp")), None, False),
    # the faults
    "rst2init_eperm": ("modify_qp", "RESET->INIT", _modify("RESET->INIT", False, "EPERM"),
                       "canary_privileged_qkey_off", False),
    "init2rtr_enomem": ("modify_qp", "INIT->RTR", _modify("INIT->RTR", True, "ENOMEM"),
                        "bond_xmit_slave_enomem", False),
    # the routine families
    "reg_mr_efault": ("reg_mr", None, _reg_mr("EFAULT"), "nightly_loader_file_pin_efault", True),
    "query_port_einval": ("query_port", "port=2", n("ib_uverbs_query_port", n("ib_query_port", err="EINVAL"),
                                                    err="EINVAL"), "exporter_port2_einval", True),
}


def _flat(node, depth=0, out=None):
    out = [] if out is None else out
    probe, err, kind, kids = node
    out.append((depth, probe, LAYER[probe], err, kind))
    for k in kids:
        _flat(k, depth + 1, out)
    return out


FLAT = {v: _flat(spec[2]) for v, spec in VARIANTS.items()}
# variant -> [(depth, function, layer, errno)], in entry order (seq)
TREES = {v: [(d, p, lay, e) for d, p, lay, e, _ in flat] for v, flat in FLAT.items()}


def _origin(flat):
    """The deepest failing frame: the first frame with an errno none of whose callees failed."""
    for i, (d, p, lay, e, _) in enumerate(flat):
        if e is None:
            continue
        below = []
        for d2, _p2, _l2, e2, _k2 in flat[i + 1:]:
            if d2 <= d:
                break
            below.append(e2)
        if not any(below):
            return p, e, lay
    return None


# cause -> (origin probe, errno, what it is)
ROOT_CAUSES = {
    "canary_privileged_qkey_off": ("modify_qp", "EPERM",
                                   "re-imaged canary lost the privileged-qkey boot unit: the UD heartbeat daemon's "
                                   "RESET->INIT refused, systemd crash loop"),
    "bond_xmit_slave_enomem": ("rdma_lag_get_ah_roce_slave", "ENOMEM",
                               "2 of 300 hosts: the bond's xmit-slave skb allocation fails now and then, INIT->RTR "
                               "ENOMEM kills the rank"),
}
ROUTINE = {
    "nightly_loader_file_pin_efault": ("pin_user_pages_fast", "EFAULT",
                                       "nightly ETL loaders' writable file-backed MR refused, staging buffer instead"),
    "exporter_port2_einval": ("ib_query_port", "EINVAL", "the exporter asks port 2 of single-port devices"),
}
for _v, (_op, _arg, _tree, _label, _routine) in VARIANTS.items():
    if _label:
        _o = _origin(FLAT[_v])
        _want = {**ROOT_CAUSES, **ROUTINE}[_label]
        assert _o is not None and _o[:2] == _want[:2], (_v, _o, _want)

PROBES = sorted({p for flat in FLAT.values() for _, p, _, _, _ in flat})
PROBE_INDEX = {p: i for i, p in enumerate(PROBES)}


def _vectors():
    inv, fails = {}, {}
    for v, flat in FLAT.items():
        vec = np.zeros(len(PROBES), np.int64)
        f = defaultdict(int)
        for _, p, _, e, _ in flat:
            vec[PROBE_INDEX[p]] += 1
            if e:
                f[(PROBE_INDEX[p], e)] += 1
        inv[v], fails[v] = vec, dict(f)
    return inv, fails


INV_VEC, FAIL_VEC = _vectors()

LEAF_US = {"mlx5_cmd_exec": (25, 140), "pin_user_pages_fast": (8, 60), "rdma_addr_find_l2_eth_by_grh": (3, 25),
           "mlx5_comp_eqn_get": (1, 4), "mlx5_core_create_cq": (30, 120), "mlx5r_umr_update_mr_pas": (20, 90)}


def _timing(node, rng: random.Random, t0: int, out: list, big_pin: bool):
    """Entry offsets and latencies (ns) of a tree's frames in preorder, from t0."""
    probe, _err, _kind, kids = node
    idx = len(out)
    out.append(None)
    t = t0 + rng.randint(200, 1500)
    for k in kids:
        t = _timing(k, rng, t, out, big_pin) + rng.randint(100, 900)
    if not kids:
        lo, hi = LEAF_US.get(probe, (0.3, 3))
        if probe == "pin_user_pages_fast" and big_pin:
            lo, hi = 150, 1800
        t += int(rng.uniform(lo, hi) * 1000)
    out[idx] = (t0, t - t0)
    return t


class Host:
    def __init__(self, name: str, index: int, rng: random.Random):
        self.name, self.index = name, index
        self.boot = f"{rng.getrandbits(32):08x}"
        self.uptime_ns = rng.randint(3, 40) * 86_400 * 10**9 + rng.randint(0, 10**12)
        self.phase = rng.uniform(0, WINDOW_EVERY_S)
        self.calls: list[tuple] = []  # (t, variant, count, proc)
        self.down: tuple[float, float] | None = None  # tracer gap (reboot)
        self.new_boot = f"{rng.getrandbits(32):08x}"
        self.lag = False
        self.pid = 3000 + rng.randint(0, 5000)

    def next_pid(self, rng: random.Random) -> int:
        self.pid += rng.randint(3, 40)
        if self.pid > 4_000_000:
            self.pid = 1000
        return self.pid

    def release_at(self, t: float) -> str:
        return RELEASE_NEW if self.down and t >= self.down[1] else RELEASE_OLD

    def boot_at(self, t: float) -> tuple[str, int]:
        """boot id and monotonic ns at time t (seconds from START)."""
        if self.down and t >= self.down[1]:
            return self.new_boot, int((t - self.down[1] + 25.0) * 1e9)
        return self.boot, self.uptime_ns + int(t * 1e9)


def generate(out_dir, hosts: int = 300, hours: float = 3, seed: int = 27, faults: bool = True) -> dict:
    out = Path(out_dir)
    rng = random.Random(seed)
    total_s = hours * 3600.0
    racks = max(1, (hosts + RACK - 1) // RACK)
    fleet = [Host(f"r{i // RACK:02d}-h{i % RACK:02d}", i, rng) for i in range(hosts)]
    canary_rack = racks // 2
    drained_rack = racks - 1 if racks > 2 else None
    canary = [h for h in fleet if h.index // RACK == canary_rack][:GROUP]
    lag_racks = {r for r in range(racks) if r % 4 == 3} or {0}
    for h in fleet:
        h.lag = h.index // RACK in lag_racks
    eligible = [h for h in fleet if h.lag and h not in canary and (drained_rack is None or h.index // RACK != drained_rack)]
    bond_bad = [eligible[len(eligible) // 5], eligible[(4 * len(eligible)) // 5]] if faults else []
    assert not bond_bad or bond_bad[0].index // GROUP != bond_bad[1].index // GROUP

    # the canary's re-image: drained at 01:25, rolling reboots from 01:30, each down 150-210 s
    rollout = (datetime(2025, 3, 14, 1, 30, tzinfo=UTC) - START).total_seconds()
    for i, h in enumerate(canary):
        down = rollout + 90 * i
        h.down = (down, down + rng.uniform(150, 210))
    canary_busy = (rollout - 300, max(h.down[1] for h in canary) + 60)
    drain = ((datetime(2025, 3, 14, 1, 10, tzinfo=UTC) - START).total_seconds(),
             (datetime(2025, 3, 14, 1, 50, tzinfo=UTC) - START).total_seconds())
    batch_from = (datetime(2025, 3, 14, 2, 0, tzinfo=UTC) - START).total_seconds()
    batch_to = (datetime(2025, 3, 14, 2, 45, tzinfo=UTC) - START).total_seconds()

    jobs = _training(fleet, rng, total_s, canary, canary_busy, drained_rack, drain, bond_bad)
    for h in fleet:
        _daemons(h, rng, total_s, h in canary and faults)
        _batch(h, rng, total_s, batch_from, batch_to)

    counts: dict[str, int] = defaultdict(int)
    records: dict[str, int] = defaultdict(int)
    for h in fleet:
        emitted = _write_host(out, h, rng, total_s)
        for label, (stands, recs) in emitted.items():
            counts[label] += stands
            records[label] += recs

    times = {"start": START.isoformat(), "end": (START + timedelta(seconds=total_s)).isoformat(),
             "rollout": (START + timedelta(seconds=rollout)).isoformat(),
             "canary_up": (START + timedelta(seconds=max(h.down[1] for h in canary))).isoformat() if canary else None,
             "batch_from": (START + timedelta(seconds=batch_from)).isoformat(),
             "batch_to": (START + timedelta(seconds=batch_to + 600)).isoformat(),
             "drain_from": (START + timedelta(seconds=drain[0])).isoformat(),
             "drain_to": (START + timedelta(seconds=drain[1])).isoformat()}
    alert_hosts = {h.name: ["EPERM"] for h in canary} if faults else {}
    for h in bond_bad:
        alert_hosts[h.name] = ["ENOMEM"]
    summary = {
        "hosts": hosts, "hours": hours, "seed": seed, "faults": faults,
        "roles": {"all": [h.name for h in fleet], "canary": [h.name for h in canary],
                  "bond_bad": [h.name for h in bond_bad], "lag": [h.name for h in fleet if h.lag],
                  "drained": [h.name for h in fleet if drained_rack is not None and h.index // RACK == drained_rack]},
        "releases": {"old": RELEASE_OLD, "new": RELEASE_NEW},
        "times": times, "counts": dict(counts), "records": dict(records), "jobs": jobs,
        "alert_hosts": alert_hosts,
    }
    (out / "fleetgen27.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return summary


def _training(fleet, rng, total_s, canary, canary_busy, drained_rack, drain, bond_bad) -> int:
    """Job starts on every group of GROUP hosts; returns the number of jobs."""
    jobs = 0
    bad = {h.name for h in bond_bad}
    for g in range(0, len(fleet), GROUP):
        group = fleet[g:g + GROUP]
        blocked = []
        if any(h in canary for h in group):
            blocked.append(canary_busy)
        if drained_rack is not None and any(h.index // RACK == drained_rack for h in group):
            blocked.append(drain)
        has_bad = any(h.name in bad for h in group)
        fail_next = rng.random() < 0.5
        t = rng.uniform(0, 900)
        while t < total_s - 30:
            duration = rng.uniform(1500, 4000)
            clash = [b for b in blocked if t < b[1] and t + duration > b[0] - 60]
            if clash:
                if t >= clash[0][0] - 60:
                    t = clash[0][1] + rng.uniform(30, 180)
                    continue
                duration = max(120.0, clash[0][0] - 120 - t)  # a short job before the reservation
            jobs += 1
            job_id = str(4_100_000 + g * 50 + jobs)
            planned = []  # (t, host, variant, proc)
            for h in group:
                ppid = h.next_pid(rng)
                for rank in range(RANKS):
                    pid = h.next_pid(rng)
                    meta = (("job_name", f"llm-pretrain-{g // GROUP:03d}"), ("local_rank", str(rank)),
                            ("nic", f"mlx5_{rank}"), ("bond", "lag" if h.lag else "none"))
                    proc = (pid, pid, ppid, "pt_main_thread", job_id, meta)
                    c = t + rng.uniform(2, 6)
                    seq = ["alloc_pd", "query_gid", "query_gid", "create_cq", "create_cq"]
                    seq += ["create_qp"] * 4
                    seq += ["rst2init", "init2rtr", "rtr2rts"] * 4
                    seq += ["reg_mr"] * 4
                    for v in seq:
                        c += rng.uniform(0.0005, 0.02)
                        planned.append((c, h, v, proc))
                    c += rng.uniform(300, 900)
                    while c < t + duration:
                        planned.append((c, h, "reg_mr", proc))
                        c += rng.uniform(420, 900)
            fail_at = None
            if has_bad:
                if fail_next:
                    rtrs = [i for i, (_c, h, v, _p) in enumerate(planned) if v == "init2rtr" and h.name in bad]
                    i = rng.choice(rtrs)
                    c, h, _v, proc = planned[i]
                    planned[i] = (c, h, "init2rtr_enomem", proc)
                    fail_at = c
                fail_next = not fail_next
            for c, h, v, proc in planned:
                if (fail_at is None or c <= fail_at) and c < total_s:
                    h.calls.append((c, v, 1, proc))
            if fail_at is not None:
                t = fail_at + rng.uniform(90, 240)
            else:
                t = t + duration + rng.uniform(30, 300)
    return jobs


def _exporter(h: Host, rng, lo: float, hi: float):
    """One exporter process from lo to hi: ports 1 and 2 of the 8 devices every 5 minutes."""
    pid = h.next_pid(rng)
    proc = (pid, pid, 1, "ib-exporter", None, (("unit", "ib-exporter.service"),))
    t = lo + rng.uniform(0, 300)
    while t < hi:
        h.calls.append((t, "query_port", RANKS, proc))
        h.calls.append((t + 0.003, "query_port_einval", RANKS, proc))
        t += 300 + rng.uniform(-2, 2)


def _daemons(h: Host, rng, total_s, crash_loop: bool):
    """The exporter on every host (a new process after a reboot); the heartbeat daemon's start at
    boot (it was started before the window elsewhere): a crash loop where its qkey is refused."""
    if not h.down:
        _exporter(h, rng, 0.0, total_s)
        return
    _exporter(h, rng, 0.0, h.down[0] - 1)
    _exporter(h, rng, h.down[1] + 15, total_s)
    t = h.down[1] + rng.uniform(18, 30)
    while t < total_s:
        pid = h.next_pid(rng)
        proc = (pid, pid, 1, "fabric-hb", None, (("unit", "fabric-hb.service"),))
        h.calls.append((t, "create_cq", 1, proc))
        h.calls.append((t + 0.002, "create_qp", 1, proc))
        if crash_loop:
            h.calls.append((t + 0.004, "rst2init_eperm", 1, proc))
            t += 20 + rng.uniform(0.2, 1.5)  # RestartSec=20
            continue
        h.calls.append((t + 0.004, "rst2init", 1, proc))
        h.calls.append((t + 0.006, "init2rtr_ud", 1, proc))
        h.calls.append((t + 0.008, "rtr2rts", 1, proc))
        break


def _batch(h: Host, rng, total_s, batch_from, batch_to):
    """The nightly ETL job: two loaders, a refused file-backed MR then a staging MR every 15-25 s."""
    begin = batch_from + rng.uniform(0, 300)
    end = min(total_s, batch_to + rng.uniform(0, 600))
    if begin >= total_s:
        return
    job_id = str(9_000_000 + h.index)
    ppid = h.next_pid(rng)
    for loader in range(2):
        pid = h.next_pid(rng)
        proc = (pid, pid, ppid, "etl-loader", job_id, (("job_name", "nightly-embed-refresh"), ("worker", str(loader))))
        t = begin + rng.uniform(1, 5)
        h.calls.append((t, "alloc_pd", 1, proc))
        t += rng.uniform(0.5, 2)
        while t < end:
            h.calls.append((t, "reg_mr_efault", 1, proc))
            h.calls.append((t + rng.uniform(0.002, 0.01), "reg_mr", 1, proc))
            t += rng.uniform(15, 25)


def _in_window(h: Host, t: float) -> bool:
    return (t - h.phase) % WINDOW_EVERY_S < WINDOW_LEN_S


# the frames of every variant, concatenated: a record's frames are a slice of these
_VNAMES = list(VARIANTS)
_VID = {v: i for i, v in enumerate(_VNAMES)}
_F_OFF = np.cumsum([0] + [len(FLAT[v]) for v in _VNAMES])
_F_LEN = np.diff(_F_OFF)
_F_PROBE = np.array([p for v in _VNAMES for _, p, _, _, _ in FLAT[v]], object)
_F_LAYER = np.array([lay for v in _VNAMES for _, _, lay, _, _ in FLAT[v]], object)
_F_DEPTH = np.array([d for v in _VNAMES for d, _, _, _, _ in FLAT[v]], np.int16)
_F_ERRNO = np.array([e for v in _VNAMES for _, _, _, e, _ in FLAT[v]], object)
_F_SEQ = np.concatenate([np.arange(len(FLAT[v])) for v in _VNAMES])
_F_PTR = np.array([k == "ptr" and e is None for v in _VNAMES for _, _, _, e, k in FLAT[v]])
_F_PAGES = np.array([k == "pages" and e is None for v in _VNAMES for _, _, _, e, k in FLAT[v]])
_F_RET = np.array([-ERRNO[e] if e else (1 if k in ("1", "pages") else 0)
                   for v in _VNAMES for _, _, _, e, k in FLAT[v]], np.int64)


def _write_host(out: Path, h: Host, rng: random.Random, total_s: float) -> dict:
    calls = sorted(h.calls, key=lambda c: c[0])
    snaps = int(np.ceil(total_s / INTERVAL_S))
    per_snap: dict[tuple[int, str], int] = defaultdict(int)
    for t, v, cnt, _proc in calls:
        per_snap[(int(t // INTERVAL_S), v)] += cnt
    inv = np.zeros((snaps, len(PROBES)), np.int64)
    errs: dict[tuple[int, str], np.ndarray] = {}
    for (s, v), cnt in per_snap.items():
        inv[s] += cnt * INV_VEC[v]
        for key, c in FAIL_VEC[v].items():
            errs.setdefault(key, np.zeros(snaps, np.int64))[s] += cnt * c

    rec: dict[str, list] = defaultdict(list)
    timing: list = []
    seen: dict[tuple[int, str], int] = defaultdict(int)
    emitted: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    recno = rng.randint(1, 10**6)
    for t, v, cnt, proc in calls:
        label = VARIANTS[v][3]
        failing = bool(FAIL_VEC[v])
        s = int(t // INTERVAL_S)
        for k in range(cnt):
            tk = t + k * 0.0002
            timed = _in_window(h, tk)
            repeat = None
            if failing:
                total = per_snap[(s, v)]
                i = seen[(s, v)]
                seen[(s, v)] += 1
                if total > K_RECORDS and i >= K_RECORDS - 1:
                    if i > K_RECORDS - 1:
                        continue
                    repeat = total - (K_RECORDS - 1)
            elif not timed:
                continue
            recno += 1
            _record(rec, timing, h, rng, tk, v, proc, recno, timed, repeat)
            if label:
                emitted[label][0] += repeat or 1
                emitted[label][1] += 1

    date = START.strftime("%Y-%m-%d")
    if rec["trace_id"]:
        events, truth = _tables(rec, timing, rng)
        write_partition(events, out, "events", date, h.name, "part-0000.parquet", durable=False)
        write_partition(truth, out, "truth", date, h.name, "part-0000.parquet", durable=False)
    counters = _counters(h, inv, errs, snaps, total_s)
    path = write_partition(counters, out, "counters", date, h.name, "part-0000.parquet", durable=False)
    write_counter_buckets(path, counters, durable=False)
    return {label: tuple(v) for label, v in emitted.items()}


def _record(rec, timing, h: Host, rng, t: float, v: str, proc, recno: int, timed: bool, repeat):
    op, arg, tree, label, routine = VARIANTS[v]
    flat = FLAT[v]
    pid, tid, ppid, comm, job_id, meta = proc
    boot, mono = h.boot_at(t)
    trace_id = f"{h.name}:{boot}:{tid}:{recno}"
    wall = START + timedelta(seconds=t)
    if timed:
        times: list = []
        _timing(tree, rng, mono, times, big_pin=op == "reg_mr")
        timing.append(times)
        end = wall + timedelta(microseconds=times[0][1] / 1000)
    else:
        tick = (mono + rng.randint(20_000, 900_000)) // TICK_NS * TICK_NS
        timing.append(tick)
        end = wall
    root_err = flat[0][3]
    origin = _origin(flat) if root_err else None
    for key, value in (("trace_id", trace_id), ("variant", _VID[v]), ("pid", pid), ("tid", tid), ("ppid", ppid),
                       ("comm", comm), ("arg", arg), ("kind", "failure" if root_err else "good"), ("command", op),
                       ("exit_status", -ERRNO[root_err] if root_err else 0), ("start_time", wall), ("end_time", end),
                       ("kernel_release", h.release_at(t)), ("job_id", job_id),
                       ("metadata", [{"key": k, "value": val} for k, val in meta]), ("repeat_count", repeat),
                       ("root_cause", label), ("bifurcation_probe", origin[0] if origin else None),
                       ("bifurcation_errno", origin[1] if origin else None),
                       ("origin_layer", origin[2] if origin else None), ("expected_error", bool(routine)),
                       ("host", h.name)):
        rec[key].append(value)


def _tables(rec: dict, timing: list, rng: random.Random) -> tuple[pa.Table, pa.Table]:
    """The events (one row per frame) and truth (one per record) tables of a host's records."""
    variant = np.asarray(rec["variant"], np.int64)
    lengths = _F_LEN[variant]
    r = np.repeat(np.arange(len(variant)), lengths)  # each frame's record
    starts = np.repeat(_F_OFF[variant], lengths)
    f = starts + (np.arange(len(r)) - np.repeat(np.cumsum(lengths) - lengths, lengths))  # each frame's row in _F_*
    gen = np.random.default_rng(rng.getrandbits(32))
    ret = _F_RET[f].copy()
    ptr = _F_PTR[f]
    ret[ptr] = (np.int64(0xFFFF888100000000 - (1 << 64)) + gen.integers(0, 1 << 30, ptr.sum()) * 64)
    pages = _F_PAGES[f]
    ret[pages] = gen.choice([1, 2, 16, 512], pages.sum())
    ts = np.empty(len(r), np.int64)
    lat = np.full(len(r), -1, np.int64)
    at = 0
    for times, length in zip(timing, lengths.tolist(), strict=True):
        if isinstance(times, list):
            ts[at:at + length] = [x[0] for x in times]
            lat[at:at + length] = [x[1] for x in times]
        else:
            ts[at:at + length] = times
        at += length
    idx = pa.array(r)
    seq0 = _F_SEQ[f] == 0

    def per_record(name, typ=None):
        return pa.array(rec[name], typ).take(idx)

    events = pa.table({
        "trace_id": per_record("trace_id"),
        "seq": _F_SEQ[f].astype(np.int64),
        "ts_ns": ts,
        "pid": per_record("pid", pa.int32()),
        "tid": per_record("tid", pa.int32()),
        "ppid": per_record("ppid", pa.int32()),
        "comm": per_record("comm"),
        "probe": pa.array(_F_PROBE[f], pa.string()),
        "layer": pa.array(_F_LAYER[f], pa.string()),
        "depth": _F_DEPTH[f],
        "ret": ret,
        "errno": pa.array(_F_ERRNO[f], pa.string()),
        "latency_ns": pa.array(lat, pa.int64(), mask=lat < 0),
        "arg": pa.array(np.where(seq0, np.asarray(rec["arg"], object)[r], None), pa.string()),
        "kind": per_record("kind"),
        "command": per_record("command"),
        "exit_status": per_record("exit_status", pa.int32()),
        "start_time": per_record("start_time", pa.timestamp("ns", tz="UTC")),
        "end_time": per_record("end_time", pa.timestamp("ns", tz="UTC")),
        "kernel_release": per_record("kernel_release"),
        "lost_events": np.zeros(len(r), np.int64),
        "job_id": per_record("job_id", pa.string()),
        "metadata": per_record("metadata", pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))),
        "repeat_count": per_record("repeat_count", pa.int64()),
    })
    truth = pa.table({
        "trace_id": pa.array(rec["trace_id"]), "host": pa.array(rec["host"]), "kind": pa.array(rec["kind"]),
        "root_cause": pa.array(rec["root_cause"], pa.string()),
        "bifurcation_probe": pa.array(rec["bifurcation_probe"], pa.string()),
        "bifurcation_errno": pa.array(rec["bifurcation_errno"], pa.string()),
        "origin_layer": pa.array(rec["origin_layer"], pa.string()),
        "expected_error": pa.array(rec["expected_error"], pa.bool_()),
        "held_out": pa.array([False] * len(variant)),
    })
    return events, truth


_PROBE_ARR = np.array(PROBES, object)
_LAYER_ARR = np.array([LAYER[p] for p in PROBES], object)


def _snapshots(h: Host, snaps: int, total_s: float) -> list[tuple[int, float, float]]:
    """(interval index, snapshot time in s, interval_s) of the host's snapshots: every 60 s; the
    tracer stopped for a reboot writes a last short one when it stops, none while the host is
    down, and a short first one after it came back."""
    out = []
    for s in range(snaps):
        lo, close = s * INTERVAL_S, (s + 1) * INTERVAL_S
        if close > total_s + 1e-9:
            break
        if h.down:
            d0, d1 = h.down
            if lo < d0 < close:
                out.append((s, d0, d0 - lo))
                continue
            if d0 <= lo and close <= d1:
                continue
            if lo < d1 < close:
                out.append((s, float(close), close - d1))
                continue
        out.append((s, float(close), float(INTERVAL_S)))
    return out


def _counters(h: Host, inv: np.ndarray, errs: dict, snaps: int, total_s: float) -> pa.Table:
    kept = _snapshots(h, snaps, total_s)
    S = np.asarray([k[0] for k in kept], np.int64)
    P = len(PROBES)
    n_rows = len(S) * P
    probe_i = np.tile(np.arange(P), len(S))
    failures = np.zeros((snaps, P), np.int64)
    for (pi, _e), arr in errs.items():
        failures[:, pi] += arr
    rows, names, counts = [], [], []
    for (pi, e), arr in sorted(errs.items()):
        hit = np.nonzero(arr[S])[0]
        rows.append(hit * P + pi)
        names += [e] * len(hit)
        counts.append(arr[S][hit])
    rows_a = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    order = np.argsort(rows_a, kind="stable")
    offsets = np.searchsorted(rows_a[order], np.arange(n_rows + 1)).astype(np.int32)
    entries = pa.StructArray.from_arrays(
        [pa.array(np.asarray(names, object)[order] if names else [], pa.string()),
         pa.array((np.concatenate(counts) if counts else np.zeros(0, np.int64))[order], pa.int64())],
        names=["errno", "count"])
    errno_counts = pa.ListArray.from_arrays(pa.array(offsets), entries)
    start_ns = int(START.timestamp()) * 10**9
    snap_ns = np.repeat(np.asarray([start_ns + int(k[1] * 1e9) for k in kept], np.int64), P)
    release = np.repeat(np.asarray([h.release_at(k[1]) for k in kept], object), P)
    return pa.table({
        "host": pa.array(np.full(n_rows, h.name, object), pa.string()),
        "snapshot_time": pa.array(snap_ns, pa.timestamp("ns", tz="UTC")),
        "interval_s": np.repeat(np.asarray([k[2] for k in kept], float), P),
        "kernel_release": pa.array(release, pa.string()),
        "vendor": pa.array(np.full(n_rows, "mlx5", object), pa.string()),
        "probe_set": pa.array(np.full(n_rows, "rdma", object), pa.string()),
        "probe": pa.array(_PROBE_ARR[probe_i], pa.string()),
        "layer": pa.array(_LAYER_ARR[probe_i], pa.string()),
        "live": np.ones(n_rows, bool),
        "invocations": inv[S].reshape(-1),
        "failures": failures[S].reshape(-1),
        "errno_counts": errno_counts,
        "lost_records": np.zeros(n_rows, np.int64),
    })
