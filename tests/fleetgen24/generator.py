"""fleetgen24: a twenty-fourth fleet, written blind (reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only),
aimed at what the twenty-three before it leave out: the dataset was NOT written by tracebase.
Another team's collector ("hermes") wrote it, following tracer/schema.py and docs/architecture.md
to the letter and taking every choice those documents leave open its own way.

The fleet: 40 mlx5 (ConnectX-7, RoCEv2) hosts in racks of 4, named by their FQDN
(`r<RR>n<N>.sea1.gpu.internal`), all on the RHEL 9.5 kernel 5.14.0-503.15.1.el9_5.x86_64 (inbox
mlx5, no peer memory). The window is 3 hours from 2026-12-03 23:00 UTC, so it crosses midnight
(two date partitions). Every host runs 4 slots of KV-cache servers (one process each, 8-20
minutes, restarted by a supervisor 20-40 s after it exits, new pid). A server starts with
ibv_query_device_ex (the provider's new library sets a comp_mask this kernel refuses: EINVAL at
ib_uverbs_ex_query_device, then the plain query_device, which answers), alloc_pd, a small host
buffer reg_mr (mkey cache: alloc_cacheable_mr) and a 16 GiB pool reg_mr (too large for UMR:
reg_create -> CREATE_MKEY through mlx5_cmd_exec), create_cq (a quarter of the servers are
configured with a completion vector beyond the device's: EINVAL at the uverbs create_cq, then the
library retries with vector 0, which works), create_qp, and modify_qp RESET->INIT->RTR->RTS; then
it registers another small KV block every 60-120 s until it ends.

The collector: 30 s snapshots at a per-host phase; per-probe counters of every call; a tree is
emitted for every failure (no in-kernel aggregation: no repeat_count at all); good trees only
when the root entered a capture window (45 s every 3 minutes at a per-host phase), timed; outside
windows a failure's frames carry the 4 ms tick the root returned in and no latency.

The writer's choices (all allowed by tracer/schema.py and docs/architecture.md):
  - events: every column a reader must find is there, but comm, ppid, job_id, metadata, path and
    lost_events are null throughout (the collector does not look them up), arg is set on
    modify_qp roots only (the transition, spelled as the reference spells it: `INIT_to_RTR`);
    path2, output and repeat_count (columns schema version 2 added) are absent, and so is the
    `host` column (the partition directory says it) except in the files of two hosts, which keep
    it;
  - counters: a row only for a probe called in the snapshot (no row for an idle probe), vendor,
    layer, live, interval_s, probe_set and lost_records null, errno_counts null when the row has
    no failure; no counter_buckets summaries (that cache belongs to tracebase's writers);
  - every host-date partition holds 1-4 part files per table (upload batches of random sizes),
    named `part-hermes-<start epoch>-<batch>.parquet`; within a file the traces are shuffled (rows
    not in time order; a trace's frames stay together, in seq order);
  - per file: codec zstd, snappy, gzip, lz4, brotli or none; row groups of 300 to 1M rows; strings
    plain (no dictionary), Arrow dictionary-typed, or large_string; timestamps tagged "UTC",
    "+00:00" or zone-less (UTC by the documents); data pages v1 or v2; some files written without
    column statistics; every column nullable in the Parquet schema (none REQUIRED); columns in
    a shuffled order in half the files; in a third, two columns of the collector's own
    (`hermes_upload_seq`, `hermes_agent`: extra columns are allowed within a version);
  - on four hosts (one of the rack's, the timeout host among them) the events rows are in the
    collector's arrival order: frames of neighbouring traces interleaved, a trace's frames not
    always in seq order (`seq` says the order; nothing says rows keep it);
  - about one partition in five also holds an events upload of 0 rows (a quiet interval);
  - at-least-once delivery: on four hosts (the mkey host among them) one events upload and one
    counters upload were delivered twice, as a second part file holding a copy of part of the
    rows of another (the same RECORD_KEY / SNAPSHOT_KEY);
  - a collector gap: one healthy host's counters exporter died at 23:40 and came back at 00:35
    (no counters rows then; its events kept coming).

Routine families (truth expected_error=True, root_cause the family; the process goes on):
  - `ex_query_device_comp_mask` (query_device, ib_uverbs_ex_query_device EINVAL, uverbs): every
    server's first call, every host; it goes on to the plain query_device. Routine by CBI: every
    process makes it, the dying ones too (Increase ~0).
  - `create_cq_vector_retry` (create_cq, the uverbs create_cq EINVAL "comp_vector >=
    num_comp_vectors", uverbs): a quarter of the servers on every host; the retry succeeds.

Root causes (truth expected_error=False):
  - `mkey_lim_err_host` (reg_mr, mlx5_cmd_exec ENOMEM, driver): from 00:10 one host's NIC refuses
    CREATE_MKEY (LIM_ERR -> ENOMEM: a leaked-mkey firmware state) for every 16 GiB pool
    registration; the server exits and the supervisor restarts it: a crash loop until the end.
    Host alert required there (ENOMEM, or a persistent bad state).
  - `fw_cmd_timeout_intermittent` (create_qp, mlx5_cmd_exec ETIMEDOUT, driver): one host's
    CREATE_QP firmware command times out on about a third of the calls, the whole window; each
    time the server dies. Intermittent (most create_qp pass): a recurring errno on one host,
    host alert required there (ETIMEDOUT); the generator checks it recurs 10+ times in 4+
    buckets.
  - `gid_entry_removed_rack` (modify_qp INIT_to_RTR, rdma_get_gid_attr ENODATA, core), the subtle
    one: from 01:05 a network change removed the IPv4 address behind GID index 3 on the four
    hosts of rack 4; rdma_fill_sgid_attr fails ENODATA and every new server there dies at
    INIT->RTR. ENODATA is an errno callers usually go on from (an empty GID slot read by a
    scan), and the four hosts fail alike: here it kills every process. Alerts on those hosts are
    acceptable (ENODATA), not required (a cause over 4 hosts may be left to the cluster).
Not faults: the gap host (no alert there), the duplicated uploads (each record counts once: a
single-host cause's cluster counts the host's distinct failures), the crash loops' restarts
(more EINVAL refusals a minute on those hosts: symptoms of the fault, no alert of their own).
"""

from __future__ import annotations

import errno as errno_mod
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tracer.schema import COUNTERS, EVENTS, METADATA_TYPE, TRUTH

KERNEL = "5.14.0-503.15.1.el9_5.x86_64"
START = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
SNAP_S = 30
WINDOW_EVERY_S = 180
WINDOW_LEN_S = 45
TICK_NS = 4_000_000
COLLECTOR = "hermes"

ROUTINE = {
    "ex_query_device_comp_mask": ("ib_uverbs_ex_query_device", "EINVAL", "uverbs"),
    "create_cq_vector_retry": ("create_cq", "EINVAL", "uverbs"),
}
ROOT_CAUSES = {
    "mkey_lim_err_host": ("mlx5_cmd_exec", "ENOMEM", "driver"),
    "fw_cmd_timeout_intermittent": ("mlx5_cmd_exec", "ETIMEDOUT", "driver"),
    "gid_entry_removed_rack": ("rdma_get_gid_attr", "ENODATA", "core"),
}

U, C, D = "uverbs", "core", "driver"


def _ok(frames):
    return [(d, fn, layer, None) for d, fn, layer in frames]


_REG_HEAD = [(0, "ib_uverbs_reg_mr", U), (1, "rdma_alloc_begin_uobject", C), (1, "rdma_lookup_get_uobject", C),
             (1, "mlx5_ib_reg_user_mr", D), (2, "ib_umem_get", C), (3, "pin_user_pages_fast", C),
             (2, "create_real_mr", D)]
_REG_TAIL = [(1, "rdma_restrack_add", C), (1, "rdma_lookup_put_uobject", C), (1, "uverbs_response", U)]
_QP_HEAD = [(0, "ib_uverbs_create_qp", U), (1, "create_qp", U), (2, "rdma_alloc_begin_uobject", C),
            (2, "rdma_lookup_get_uobject", C), (2, "ib_create_qp_user", C), (3, "create_qp", C),
            (4, "mlx5_ib_create_qp", D), (5, "create_qp", D), (6, "create_user_qp", D),
            (7, "_create_user_qp", D), (8, "ib_umem_get", C), (8, "mlx5_ib_db_map_user", D)]
_MOD_HEAD = [(0, "ib_uverbs_modify_qp", U), (1, "modify_qp", U), (2, "rdma_lookup_get_uobject", C),
             (2, "ib_modify_qp_with_udata", C), (3, "_ib_modify_qp", C)]
_MOD_DRIVER = [(4, "ib_security_modify_qp", C), (5, "mlx5_ib_modify_qp", D), (6, "ib_modify_qp_is_ok", C),
               (6, "__mlx5_ib_modify_qp", D)]
_MOD_FW = [(7, "mlx5_core_qp_modify", D), (8, "mlx5_cmd_exec", D)]

# name -> [(depth, function, layer, errno or None)] in preorder (entry order)
TREES: dict[str, list[tuple[int, str, str, str | None]]] = {
    "query_device_ex_refused": [(0, "ib_uverbs_ex_query_device", U, "EINVAL")],
    "query_device": _ok([(0, "ib_uverbs_query_device", U), (1, "ib_uverbs_get_ucontext_file", U),
                         (1, "copy_query_dev_fields", U)]),
    "alloc_pd": _ok([(0, "ib_uverbs_alloc_pd", U), (1, "uverbs_request", U), (1, "rdma_alloc_begin_uobject", C),
                     (1, "mlx5_ib_alloc_pd", D), (2, "mlx5_cmd_exec", D), (1, "rdma_restrack_add", C),
                     (1, "uverbs_response", U)]),
    "reg_mr_small": _ok(_REG_HEAD + [(3, "alloc_cacheable_mr", D), (3, "mlx5r_umr_update_mr_pas", D)] + _REG_TAIL),
    "reg_mr_pool": _ok(_REG_HEAD + [(3, "reg_create", D), (4, "mlx5_core_create_mkey", D),
                                    (5, "mlx5_cmd_exec", D)] + _REG_TAIL),
    "reg_mr_pool_mkey_lim": [
        (0, "ib_uverbs_reg_mr", U, "ENOMEM"), (1, "rdma_alloc_begin_uobject", C, None),
        (1, "rdma_lookup_get_uobject", C, None), (1, "mlx5_ib_reg_user_mr", D, "ENOMEM"),
        (2, "ib_umem_get", C, None), (3, "pin_user_pages_fast", C, None), (2, "create_real_mr", D, "ENOMEM"),
        (3, "reg_create", D, "ENOMEM"), (4, "mlx5_core_create_mkey", D, "ENOMEM"), (5, "mlx5_cmd_exec", D, "ENOMEM"),
        (3, "ib_umem_release", C, None), (1, "rdma_alloc_abort_uobject", C, None)],
    "create_cq": _ok([(0, "ib_uverbs_create_cq", U), (1, "create_cq", U), (2, "rdma_alloc_begin_uobject", C),
                      (2, "mlx5_ib_create_cq", D), (3, "create_cq_user", D), (4, "ib_umem_get", C),
                      (4, "mlx5_ib_db_map_user", D), (3, "mlx5_comp_eqn_get", D), (3, "mlx5_core_create_cq", D),
                      (2, "rdma_restrack_add", C), (2, "uverbs_response", U)]),
    "create_cq_vector_refused": [(0, "ib_uverbs_create_cq", U, "EINVAL"), (1, "create_cq", U, "EINVAL")],
    "create_qp": _ok(_QP_HEAD + [(7, "mlx5_qpc_create_qp", D), (8, "mlx5_cmd_exec", D),
                                 (3, "ib_create_qp_security", C), (3, "rdma_restrack_add", C),
                                 (2, "ib_qp_usecnt_inc", C), (2, "rdma_lookup_put_uobject", C),
                                 (2, "uverbs_response", U)]),
    "create_qp_fw_timeout": (
        [(d, fn, layer, "ETIMEDOUT" if d in (0, 1, 2, 3, 4, 5, 6) and fn not in (
            "rdma_alloc_begin_uobject", "rdma_lookup_get_uobject") else None)
         for d, fn, layer in _QP_HEAD[:9]]
        + [(7, "_create_user_qp", D, None), (8, "ib_umem_get", C, None), (8, "mlx5_ib_db_map_user", D, None),
           (7, "mlx5_qpc_create_qp", D, "ETIMEDOUT"), (8, "mlx5_cmd_exec", D, "ETIMEDOUT"),
           (7, "destroy_qp", D, None), (2, "rdma_lookup_put_uobject", C, None)]),
    "modify_qp_RESET_to_INIT": _ok(_MOD_HEAD + [(4, "rdma_counter_bind_qp_auto", C)] + _MOD_DRIVER + _MOD_FW
                                   + [(2, "rdma_lookup_put_uobject", C)]),
    "modify_qp_INIT_to_RTR": _ok(_MOD_HEAD + [(4, "rdma_fill_sgid_attr", C), (5, "rdma_check_ah_attr", C),
                                              (5, "rdma_get_gid_attr", C), (4, "ib_resolve_eth_dmac", C),
                                              (4, "rdma_lag_get_ah_roce_slave", C)] + _MOD_DRIVER
                                 + [(7, "mlx5_set_path", D)] + _MOD_FW
                                 + [(4, "rdma_lag_put_ah_roce_slave", C), (4, "rdma_unfill_sgid_attr", C),
                                    (2, "rdma_lookup_put_uobject", C)]),
    "modify_qp_INIT_to_RTR_gid_gone": [
        (0, "ib_uverbs_modify_qp", U, "ENODATA"), (1, "modify_qp", U, "ENODATA"),
        (2, "rdma_lookup_get_uobject", C, None), (2, "ib_modify_qp_with_udata", C, "ENODATA"),
        (3, "_ib_modify_qp", C, "ENODATA"), (4, "rdma_fill_sgid_attr", C, "ENODATA"),
        (5, "rdma_check_ah_attr", C, None), (5, "rdma_get_gid_attr", C, "ENODATA"),
        (2, "rdma_lookup_put_uobject", C, None)],
    "modify_qp_RTR_to_RTS": _ok(_MOD_HEAD + _MOD_DRIVER + _MOD_FW + [(2, "rdma_lookup_put_uobject", C)]),
}
OPERATION = {"query_device": "query_device", "alloc_pd": "alloc_pd", "reg_mr": "reg_mr", "create_cq": "create_cq",
             "create_qp": "create_qp", "modify_qp": "modify_qp"}
# tree name -> (operation, arg on the root, truth label, expected_error)
TREE_INFO = {
    "query_device_ex_refused": ("query_device", None, "ex_query_device_comp_mask", True),
    "query_device": ("query_device", None, None, False),
    "alloc_pd": ("alloc_pd", None, None, False),
    "reg_mr_small": ("reg_mr", None, None, False),
    "reg_mr_pool": ("reg_mr", None, None, False),
    "reg_mr_pool_mkey_lim": ("reg_mr", None, "mkey_lim_err_host", False),
    "create_cq": ("create_cq", None, None, False),
    "create_cq_vector_refused": ("create_cq", None, "create_cq_vector_retry", True),
    "create_qp": ("create_qp", None, None, False),
    "create_qp_fw_timeout": ("create_qp", None, "fw_cmd_timeout_intermittent", False),
    "modify_qp_RESET_to_INIT": ("modify_qp", "RESET_to_INIT", None, False),
    "modify_qp_INIT_to_RTR": ("modify_qp", "INIT_to_RTR", None, False),
    "modify_qp_INIT_to_RTR_gid_gone": ("modify_qp", "INIT_to_RTR", "gid_entry_removed_rack", False),
    "modify_qp_RTR_to_RTS": ("modify_qp", "RTR_to_RTS", None, False),
}

# per-probe counts of one call of each tree: probe -> (calls, {errno: failures})
_TREE_COUNTS = {}
for _name, _frames in TREES.items():
    _c: dict[str, list] = {}
    for _d, _fn, _layer, _err in _frames:
        cell = _c.setdefault(_fn, [0, Counter()])
        cell[0] += 1
        if _err:
            cell[1][_err] += 1
    _TREE_COUNTS[_name] = _c

# rough own duration of a frame in microseconds (children's time is added on top)
_SLOW = {"pin_user_pages_fast": 900, "mlx5_cmd_exec": 180, "reg_create": 60, "ib_umem_get": 40,
         "mlx5_qpc_create_qp": 20}


def _ret(err: str | None) -> int:
    return -getattr(errno_mod, err) if err else 0


def _host_names(n: int) -> list[str]:
    return [f"r{i // 4:02d}n{i % 4}.sea1.gpu.internal" for i in range(n)]


def generate(root, hosts: int = 40, hours: float = 3, seed: int = 24) -> dict:
    """Write the fleet's events, counters and truth under `root` (an empty or absent directory);
    return a summary (roles, counts, the writer's choices per file)."""
    root = Path(root)
    rng = random.Random(seed)
    names = _host_names(hosts)
    end = START + timedelta(hours=hours)
    span_s = (end - START).total_seconds()
    mkey_host = names[6]  # r01n2
    timeout_host = names[29]  # r07n1
    gid_hosts = names[16:20]  # rack 4
    gap_host = names[23]  # r05n3
    dup_hosts = [names[9], mkey_host, names[25], names[35]]
    stored_host_hosts = [names[3], names[30]]
    # hosts whose uploads interleave the frames of their traces (rows in arrival order of the
    # collector's per-CPU buffers, not grouped by trace; `seq` orders a trace's frames)
    interleaved_hosts = [names[5], names[17], names[29], names[33]]
    mkey_onset = 70 * 60.0
    gid_onset = 125 * 60.0
    gap = (40 * 60.0, 95 * 60.0)

    roles = {"mkey": mkey_host, "timeout": timeout_host, "gid": gid_hosts, "gap": gap_host, "dup": dup_hosts,
             "stored_host": stored_host_hosts, "interleaved": interleaved_hosts,
             "mkey_onset": mkey_onset, "gid_onset": gid_onset, "gap_s": gap}
    files: list[dict] = []
    family_hosts: dict[str, set] = defaultdict(set)
    family_counts: Counter = Counter()
    timeout_buckets: Counter = Counter()

    for host in names:
        _one_host(root, host, random.Random(rng.getrandbits(64)), span_s, roles, files, family_hosts, family_counts,
                  timeout_buckets)

    def iso(s: float) -> str:
        return (START + timedelta(seconds=s)).isoformat()

    return {
        "hosts": names,
        "roles": {"mkey": [mkey_host], "timeout": [timeout_host], "gid": list(gid_hosts), "gap": [gap_host],
                  "dup": dup_hosts, "stored_host": stored_host_hosts, "interleaved": interleaved_hosts},
        "window": [START.isoformat(), end.isoformat()],
        "mkey_onset": iso(mkey_onset), "gid_onset": iso(gid_onset), "gap": [iso(gap[0]), iso(gap[1])],
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "family_counts": dict(family_counts),
        "timeout_buckets": len(timeout_buckets),
        "required_alert_hosts": {mkey_host: ["ENOMEM"], timeout_host: ["ETIMEDOUT"]},
        "alert_hosts": {mkey_host: ["ENOMEM"], timeout_host: ["ETIMEDOUT"], **{h: ["ENODATA"] for h in gid_hosts}},
        "files": files,
    }


def _one_host(root: Path, host: str, hr: random.Random, span_s: float, roles: dict, files: list,
              family_hosts: dict, family_counts: Counter, timeout_buckets: Counter) -> None:
    """One host's servers, calls, records and counters, written as the collector uploads them."""
    mkey_host, timeout_host, gid_hosts, gap_host, dup_hosts, stored_host_hosts, mkey_onset, gid_onset, gap = (
        roles[k] for k in ("mkey", "timeout", "gid", "gap", "dup", "stored_host", "mkey_onset", "gid_onset",
                           "gap_s"))
    interleave = host in roles["interleaved"]
    boot_hex = f"{hr.getrandbits(48):012x}"
    boot_mono_ns = hr.randrange(3, 90) * 86_400 * 1_000_000_000  # uptime at the window's start
    start_ns = int(START.timestamp()) * 1_000_000_000
    snap_phase = hr.uniform(0, SNAP_S)
    win_phase = hr.uniform(0, WINDOW_EVERY_S)
    next_pid = hr.randrange(20_000, 200_000)
    rec = 0
    traces: list[tuple[float, list[tuple], dict]] = []  # (root start s, rows, truth row)
    counters: dict[int, dict[str, list]] = defaultdict(dict)

    def in_window(t: float) -> bool:
        return (t - win_phase) % WINDOW_EVERY_S < WINDOW_LEN_S

    def call(tree: str, t: float, pid: int) -> float:
        """One root call entering at t (s after START); returns its return time."""
        nonlocal rec
        frames = TREES[tree]
        # durations: own time per frame, then nested end times by a stack walk
        own = [(_SLOW.get(fn, 3) * hr.uniform(0.6, 1.6) + hr.uniform(0.5, 4)) * 1_000 for _, fn, _, _ in frames]
        if tree == "create_qp_fw_timeout":
            own[[fn for _, fn, _, _ in frames].index("mlx5_cmd_exec", 10)] = 60e9  # the command timeout
        entries, exits = [0.0] * len(frames), [0.0] * len(frames)
        clock = t * 1e9
        stack: list[int] = []
        for i, (d, _, _, _) in enumerate(frames):
            while stack and frames[stack[-1]][0] >= d:
                j = stack.pop()
                clock += own[j] * 0.3
                exits[j] = clock
            clock += own[i] * 0.7
            entries[i] = clock
            stack.append(i)
        while stack:
            j = stack.pop()
            clock += own[j] * 0.3
            exits[j] = clock
        ret_t = clock / 1e9
        # counters: every call, whether recorded or not
        snap = int((ret_t - snap_phase) // SNAP_S) + 1
        cell = counters[snap]
        for probe, (n, errs) in _TREE_COUNTS[tree].items():
            row = cell.get(probe)
            if row is None:
                row = cell[probe] = [0, Counter()]
            row[0] += n
            if errs:
                row[1].update(errs)
        op, arg, label, expected = TREE_INFO[tree]
        failed = frames[0][3] is not None
        timed = in_window(t)
        if not failed and not timed:
            return ret_t
        rec += 1
        tid = pid
        trace_id = f"{boot_hex}-{tid}-{rec:06d}"
        mono0 = boot_mono_ns
        if timed:
            start_time = start_ns + int(entries[0])
            end_time = start_ns + int(exits[0])
        else:
            tick = -(-(mono0 + int(exits[0])) // TICK_NS) * TICK_NS
            start_time = end_time = start_ns + (tick - mono0)
        rows = []
        for seq, (d, fn, layer, err) in enumerate(frames):
            if timed:
                ts = mono0 + int(entries[seq])
                lat = int(exits[seq] - entries[seq])
            else:
                ts = -(-(mono0 + int(exits[0])) // TICK_NS) * TICK_NS
                lat = None
            rows.append((trace_id, seq, ts, pid, tid, fn, layer, d, _ret(err), err, lat,
                         arg if seq == 0 else None, "failure" if failed else "good", op,
                         _ret(frames[0][3]), start_time, end_time))
        origin = None
        if failed:
            # the origin: the deepest failing frame of the failing chain
            origin = max((i for i, f in enumerate(frames) if f[3]), key=lambda i: (frames[i][0], -i))
        truth = {"trace_id": trace_id, "host": host, "kind": "failure" if failed else "good",
                 "root_cause": label, "bifurcation_probe": frames[origin][1] if failed else None,
                 "bifurcation_errno": frames[origin][3] if failed else None,
                 "origin_layer": frames[origin][2] if failed else None,
                 "expected_error": bool(expected) if failed else False, "held_out": False}
        if label:
            family_hosts[label].add(host)
            family_counts[label] += 1
            if label == "fw_cmd_timeout_intermittent":
                timeout_buckets[int(ret_t // 900)] += 1
        traces.append((t, rows, truth))
        return ret_t

    # the four server slots
    for _slot in range(4):
        t = hr.uniform(0, 300)
        while t < span_s - 5:
            pid = next_pid
            next_pid += hr.randrange(3, 40)
            life = hr.uniform(8 * 60, 20 * 60)
            stop = min(t + life, span_s - 1)
            died = False
            seqs = ["query_device_ex_refused", "query_device", "alloc_pd", "reg_mr_small"]
            pool = "reg_mr_pool_mkey_lim" if host == mkey_host and t >= mkey_onset else "reg_mr_pool"
            seqs.append(pool)
            if hr.random() < 0.25:
                seqs.append("create_cq_vector_refused")
            seqs.append("create_cq")
            seqs.append("create_qp_fw_timeout" if host == timeout_host and hr.random() < 0.33 else "create_qp")
            seqs.append("modify_qp_RESET_to_INIT")
            seqs.append("modify_qp_INIT_to_RTR_gid_gone" if host in gid_hosts and t >= gid_onset
                        else "modify_qp_INIT_to_RTR")
            seqs.append("modify_qp_RTR_to_RTS")
            now = t
            for tree in seqs:
                now = call(tree, now + hr.uniform(0.004, 0.05), pid)
                if TREES[tree][0][3] and not TREE_INFO[tree][3]:
                    died = True  # a fatal error: the server exits
                    break
            if not died:
                now += hr.uniform(60, 120)
                while now < stop:
                    now = call("reg_mr_small", now, pid)
                    now += hr.uniform(60, 120)
            # the supervisor restarts the slot
            t = max(now, stop if not died else now) + hr.uniform(20, 40)

    # ---- events and truth: per date, shuffled, in upload batches
    by_date: dict[str, list] = defaultdict(list)
    for _t0, rows, truth in traces:
        day = (START + timedelta(seconds=rows[0][15] / 1e9 - START.timestamp())).strftime("%Y-%m-%d")
        by_date[day].append((rows, truth))
    keep_host = host in stored_host_hosts
    for day, items in sorted(by_date.items()):
        hr.shuffle(items)
        parts = _split(hr, items, hr.randint(1, 4))
        written = []
        for b, part in enumerate(parts):
            path = _part_path(root, "events", day, host, hr, b)
            table = _events_table(part, host if keep_host else None)
            if interleave:
                table = table.take(_interleaved_order(hr, table.num_rows))
            files.append(_write(path, table, "events", hr))
            written.append(part)
        if hr.random() < 0.2:  # an upload that carried no record (a quiet interval): a file of 0 rows
            path = _part_path(root, "events", day, host, hr, 80)
            files.append(_write(path, _events_table([], host if keep_host else None), "events", hr))
        if host in dup_hosts:
            src = max(written, key=len)
            a = hr.randrange(0, max(1, len(src) // 2))
            copy = src[a:a + max(1, len(src) * 2 // 5)]
            path = _part_path(root, "events", day, host, hr, 90, resend=True)
            files.append(_write(path, _events_table(copy, host if keep_host else None), "events", hr,
                                duplicate=True))
        truth_rows = [truth for _, truth in items]
        tpath = root / "truth" / f"date={day}" / f"host={host}" / "part-truth-0.parquet"
        tpath.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(truth_rows, schema=TRUTH).replace_schema_metadata(
            {b"tracebase.table": b"truth", b"tracebase.schema_version": b"2"}), tpath)

    # ---- counters: sparse rows, per date, several uploads
    rows_by_date: dict[str, list] = defaultdict(list)
    for snap in sorted(counters):
        st = snap_phase + snap * SNAP_S + hr.uniform(0, 0.2)
        if host == gap_host and gap[0] <= st < gap[1]:
            continue
        when = START + timedelta(seconds=st)
        if not counters[snap]:
            continue
        day_rows = rows_by_date[when.strftime("%Y-%m-%d")]
        for probe, (n, errs) in counters[snap].items():
            hist = [{"errno": e, "count": k} for e, k in sorted(errs.items())] or None
            day_rows.append(
                {"snapshot_time": when, "probe": probe, "invocations": n, "failures": sum(errs.values()),
                 "errno_counts": hist, "kernel_release": KERNEL})
    for day, crows in sorted(rows_by_date.items()):
        # uploads cut at snapshot boundaries
        snaps = sorted({r["snapshot_time"] for r in crows})
        cuts = sorted(hr.sample(snaps[1:], min(len(snaps) - 1, hr.randint(0, 3)))) if len(snaps) > 1 else []
        bounds = [snaps[0], *cuts, None]
        uploads = []
        for b in range(len(bounds) - 1):
            lo, hi_ = bounds[b], bounds[b + 1]
            uploads.append([r for r in crows if r["snapshot_time"] >= lo and (hi_ is None or r["snapshot_time"] < hi_)])
        for b, part in enumerate(uploads):
            part = part[:]
            hr.shuffle(part)
            path = _part_path(root, "counters", day, host, hr, b)
            files.append(_write(path, _counters_table(part, host if keep_host else None), "counters", hr))
        if host in dup_hosts:
            src = max(uploads, key=len)
            picked = set(hr.sample(sorted({r["snapshot_time"] for r in src}),
                                   max(1, len({r["snapshot_time"] for r in src}) // 5)))
            copy = [r for r in src if r["snapshot_time"] in picked]
            path = _part_path(root, "counters", day, host, hr, 90, resend=True)
            files.append(_write(path, _counters_table(copy, host if keep_host else None), "counters", hr,
                                duplicate=True))



def _split(rng: random.Random, items: list, n: int) -> list[list]:
    """`items` cut into n non-empty batches of random sizes (fewer when there are fewer items)."""
    n = max(1, min(n, len(items)))
    cuts = sorted(rng.sample(range(1, len(items)), n - 1)) if n > 1 else []
    bounds = [0, *cuts, len(items)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(n)]


def _part_path(root: Path, table: str, day: str, host: str, rng: random.Random, batch: int,
               resend: bool = False) -> Path:
    stamp = int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()) + rng.randrange(0, 86_400)
    kind = "resend" if resend else "b"
    return root / table / f"date={day}" / f"host={host}" / f"part-{COLLECTOR}-{stamp}-{kind}{batch:02d}.parquet"


_EVENT_COLS = ["trace_id", "seq", "ts_ns", "pid", "tid", "probe", "layer", "depth", "ret", "errno", "latency_ns",
               "arg", "kind", "command", "exit_status", "start_time", "end_time"]
_ALL_NULL_EVENTS = ["ppid", "comm", "path", "lost_events", "job_id"]


def _events_table(items: list, host: str | None) -> pa.Table:
    rows = [r for rows, _ in items for r in rows]
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in _EVENT_COLS]
    types = {f.name: f.type for f in EVENTS}
    n = len(rows)
    arrays = {name: pa.array(list(col), type=types[name]) for name, col in zip(_EVENT_COLS, cols, strict=True)}
    for name in _ALL_NULL_EVENTS:
        arrays[name] = pa.nulls(n, types[name])
    arrays["kernel_release"] = pa.array([KERNEL] * n, pa.string())
    arrays["metadata"] = pa.nulls(n, METADATA_TYPE)
    order = [f.name for f in EVENTS if f.name in arrays]
    if host is not None:
        arrays["host"] = pa.array([host] * n, pa.string())
        order.insert(order.index("kernel_release"), "host")
    return pa.table({k: arrays[k] for k in order})


def _counters_table(rows: list[dict], host: str | None) -> pa.Table:
    n = len(rows)
    types = {f.name: f.type for f in COUNTERS}
    data = {
        "snapshot_time": pa.array([r["snapshot_time"] for r in rows], types["snapshot_time"]),
        "interval_s": pa.nulls(n, pa.float64()),
        "kernel_release": pa.array([r["kernel_release"] for r in rows], pa.string()),
        "vendor": pa.nulls(n, pa.string()),
        "probe_set": pa.nulls(n, pa.string()),
        "probe": pa.array([r["probe"] for r in rows], pa.string()),
        "layer": pa.nulls(n, pa.string()),
        "live": pa.nulls(n, pa.bool_()),
        "invocations": pa.array([r["invocations"] for r in rows], pa.int64()),
        "failures": pa.array([r["failures"] for r in rows], pa.int64()),
        "errno_counts": pa.array([r["errno_counts"] for r in rows], types["errno_counts"]),
        "lost_records": pa.nulls(n, pa.int64()),
    }
    if host is not None:
        data = {"host": pa.array([host] * n, pa.string()), **data}
    return pa.table(data)


_CODECS = ["zstd", "snappy", "gzip", "lz4", "brotli", "none"]


def _interleaved_order(rng: random.Random, n: int) -> list[int]:
    """Row order of a file whose traces' frames arrive interleaved: each row moved by a few
    places at most (buffers of several CPUs merged), so frames of neighbouring traces mix and a
    trace's frames need not come in seq order."""
    keys = [i + rng.uniform(0, 12) for i in range(n)]
    return sorted(range(n), key=keys.__getitem__)


# columns of the collector's own, in some files (extra columns are allowed within a version)
_EXTRA = {"hermes_upload_seq": pa.int64(), "hermes_agent": pa.string()}


def _write(path: Path, table: pa.Table, name: str, rng: random.Random, duplicate: bool = False) -> dict:
    """Write one part file the collector's way: the codec, string encoding, timestamp zone, row
    group size, page version, statistics, column order and the collector's own extra columns
    drawn per file; every field nullable."""
    if rng.random() < 0.3:
        upload = rng.getrandbits(40)
        table = table.append_column("hermes_upload_seq", pa.array([upload] * table.num_rows, pa.int64()))
        table = table.append_column("hermes_agent", pa.array(["hermes/2.4.1"] * table.num_rows, pa.string()))
    order = table.column_names
    if rng.random() < 0.5:
        order = rng.sample(order, len(order))
        table = table.select(order)
    strings = rng.choice(["plain", "dictionary", "large"])
    zone = rng.choice(["UTC", "+00:00", None])
    codec = rng.choice(_CODECS)
    stats = rng.random() > 0.15
    row_group = rng.choice([300, 1_000, 4_096, 50_000, 1_000_000])
    page_v2 = rng.random() < 0.4
    cols, fields = [], []
    for f in table.schema:
        col = table.column(f.name)
        t = f.type
        if pa.types.is_string(t) and strings == "dictionary":
            col = col.cast(pa.dictionary(pa.int32(), pa.string()))
        elif pa.types.is_string(t) and strings == "large":
            col = col.cast(pa.large_string())
        elif pa.types.is_timestamp(t):
            col = col.cast(pa.timestamp("ns", tz=zone))
        cols.append(col)
        fields.append(pa.field(f.name, col.type, nullable=True))
    schema = pa.schema(fields, metadata={b"tracebase.table": name.encode(), b"tracebase.schema_version": b"2"})
    out = pa.Table.from_arrays(cols, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(out, path, compression=codec, use_dictionary=strings != "plain", row_group_size=row_group,
                   write_statistics=stats, data_page_version="2.0" if page_v2 else "1.0")
    return {"path": str(path.relative_to(path.parents[3])), "table": name, "rows": out.num_rows,
            "strings": strings, "zone": zone, "codec": codec, "statistics": stats, "row_group": row_group,
            "page_v2": page_v2, "duplicate": duplicate, "extra": "hermes_agent" in order,
            "column_order": order}
