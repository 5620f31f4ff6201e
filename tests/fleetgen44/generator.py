"""fleetgen44's fleet: three ISO weeks (2026-W52, 2026-W53, 2027-W01) of per-host counter
snapshots of the rdma probe set on eight hosts of four (kernel, vendor) groups, the failure
call trees behind every counted failure, and the jobs' NCCL logs -- with the weekly coverage
report's truth computed here, from the rows as written (see __init__.py for the decisions).

Written blind: only tracer.schema is imported from the project."""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import COUNTERS, EVENTS, TRUTH, write_counter_buckets, write_partition

UTC = dt.UTC
WEEKS = ("2026-W52", "2026-W53", "2027-W01")
WEEK_START = {"2026-W52": dt.datetime(2026, 12, 21, tzinfo=UTC), "2026-W53": dt.datetime(2026, 12, 28, tzinfo=UTC),
              "2027-W01": dt.datetime(2027, 1, 4, tzinfo=UTC)}
NEW_YEAR = dt.datetime(2027, 1, 1, tzinfo=UTC)
PREVIOUS = {"2026-W52": "2026-W51", "2026-W53": "2026-W52", "2027-W01": "2026-W53"}
TREND_PCT = 25.0

# host -> (kernel_release, vendor)
HOSTS = {
    "fg44-a01": ("6.8.0-1017-nvidia", "mlx5"),
    "fg44-a02": ("6.8.0-1017-nvidia", "mlx5"),
    "fg44-a03": ("6.8.0-1017-nvidia", "mlx5"),
    "fg44-b01": ("5.15.0-1063-nvidia", "mlx5"),
    "fg44-b02": ("5.15.0-1063-nvidia", "mlx5"),
    "fg44-c01": ("6.8.0-49-generic", "bnxt_re"),
    "fg44-c02": ("6.8.0-49-generic", "bnxt_re"),
    "fg44-d01": ("6.11.0-29-generic", "bnxt_re"),
}
# the special hosts
LEAVES = ("fg44-a03", dt.datetime(2026, 12, 31, 12, 0, tzinfo=UTC))  # last snapshot before this
JOINS = ("fg44-b02", dt.datetime(2026, 12, 30, 8, 0, tzinfo=UTC))  # first snapshot from this
EXPORTER_HOST = "fg44-b01"  # ships cumulative counts as new - old; its daemon restarts once
RESET_AT = dt.datetime(2026, 12, 29, 14, 0, 5, tzinfo=UTC)  # the first snapshot after the restart
RESENT_HOST = "fg44-a02"  # a day's snapshots delivered twice (a second part file)
RESENT_DATE = "2026-12-30"
GAP = ("fg44-c02", dt.datetime(2027, 1, 1, 2, 0, tzinfo=UTC), dt.datetime(2027, 1, 1, 9, 0, tzinfo=UTC))
PARTIAL = ("fg44-a02", "mlx5_ib_reg_user_mr_dmabuf")  # attach refused on this host only
BOUNDARY_HOST = "fg44-a01"

# the rdma probe set (bpf/probes/rdma.yaml), resolved per vendor (the namespace gate)
GENERIC = ["ib_uverbs_reg_mr", "ib_uverbs_create_qp", "ib_uverbs_modify_qp",
           "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "ib_uverbs_create_cq"]
DRIVER_SLOTS = ["reg_user_mr", "reg_user_mr_dmabuf", "create_qp", "modify_qp", "alloc_pd"]
OFED_ONLY = ["__ib_umem_get", "ib_peer_umem_get", "ib_umem_activate_invalidation_notifier"]
LAYER = {**dict.fromkeys(GENERIC, "uverbs"), "__ib_umem_get": "core", "ib_peer_umem_get": "peer-mem",
         "ib_umem_activate_invalidation_notifier": "peer-mem",
         **{f"{v}_{s}": "driver" for v in ("mlx5_ib", "bnxt_re") for s in DRIVER_SLOTS}}


def driver(vendor: str, slot: str) -> str:
    return f"{'mlx5_ib' if vendor == 'mlx5' else 'bnxt_re'}_{slot}"


def host_probes(host: str) -> dict[str, bool]:
    """probe -> attached, as the host's daemon reports it (bnxt_re hosts run upstream kernels:
    the OFED-only core and peer-memory functions do not exist there)."""
    _, vendor = HOSTS[host]
    out = dict.fromkeys(GENERIC, True)
    out.update({driver(vendor, s): True for s in DRIVER_SLOTS})
    out.update(dict.fromkeys(OFED_ONLY, vendor == "mlx5"))
    if host == PARTIAL[0]:
        out[PARTIAL[1]] = False
    return out


# failure families: key -> (origin probe, errno, origin layer); trees: key -> (operation, arg, frames)
FAMILIES = {
    "gpu_pin_efault": ("ib_peer_umem_get", "EFAULT", "peer-mem"),
    "qp_type_unsupported": ("mlx5_ib_create_qp", "EOPNOTSUPP", "driver"),
    "pd_fw_eio": ("mlx5_ib_alloc_pd", "EIO", "driver"),
    "bnxt_qp_limit": ("bnxt_re_create_qp", "EINVAL", "driver"),
}
TREES = {
    "gpu_pin_efault": ("reg_mr", "GPU buffer", [(0, "ib_uverbs_reg_mr", "EFAULT"), (1, "mlx5_ib_reg_user_mr", "EFAULT"),
                                                (2, "__ib_umem_get", "EFAULT"), (3, "ib_peer_umem_get", "EFAULT")]),
    "qp_type_unsupported": ("create_qp", "DRIVER", [(0, "ib_uverbs_create_qp", "EOPNOTSUPP"),
                                                    (1, "mlx5_ib_create_qp", "EOPNOTSUPP")]),
    "pd_fw_eio": ("alloc_pd", None, [(0, "mlx5_ib_alloc_pd", "EIO")]),
    "bnxt_qp_limit": ("create_qp", "RC", [(0, "ib_uverbs_create_qp", "EINVAL"), (1, "bnxt_re_create_qp", "EINVAL")]),
}
TREE_FAMILY = {k: k for k in TREES}
# failures per week of each family, and the hosts they fall on (faults=True)
PLAN = {
    "gpu_pin_efault": ({"2026-W52": 96, "2026-W53": 240, "2027-W01": 250}, ["fg44-a01", "fg44-a02", "fg44-b01"]),
    "qp_type_unsupported": ({"2026-W52": 200, "2026-W53": 60, "2027-W01": 70}, ["fg44-a01", "fg44-a03", "fg44-b02"]),
    "pd_fw_eio": ({"2026-W52": 40, "2026-W53": 0, "2027-W01": 0}, ["fg44-a03"]),
    "bnxt_qp_limit": ({"2026-W52": 0, "2026-W53": 30, "2027-W01": 30}, ["fg44-c01", "fg44-d01"]),
}
# dmabuf registrations (success only): the hosts that make them each week
DMABUF = {"2026-W52": ["fg44-a01", "fg44-a02", "fg44-b01", "fg44-c01"], "2026-W53": ["fg44-a01"], "2027-W01": []}
CADENCE = dt.timedelta(minutes=30)  # one activity snapshot a host every half hour (the rest idle)
SNAP = dt.timedelta(seconds=5)


@functools.cache
def iso_week(t: dt.datetime) -> str:
    y, w, _ = t.isocalendar()
    return f"{y}-W{w:02d}"


def _ns(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


def _host_times(host: str, rng: random.Random) -> list[dt.datetime]:
    """The host's snapshot times (5-second grid): one every half hour with jitter, plus the
    special ones; the gap, join and leave applied."""
    start, end = WEEK_START["2026-W52"], WEEK_START["2027-W01"] + dt.timedelta(days=7)
    times = set()
    t = start
    while t < end:
        times.add(t + SNAP * rng.randrange(1, 300))
        t += CADENCE
    if host == BOUNDARY_HOST:  # either side of both Monday 00:00 UTC boundaries and of the new year
        for b in (WEEK_START["2026-W53"], WEEK_START["2027-W01"], NEW_YEAR):
            times |= {b - SNAP, b + SNAP}
    if host == EXPORTER_HOST:
        times.add(RESET_AT)
    out = sorted(times)
    if host == LEAVES[0]:
        out = [x for x in out if x < LEAVES[1]]
    if host == JOINS[0]:
        out = [x for x in out if x >= JOINS[1]]
    if host == GAP[0]:
        out = [x for x in out if not GAP[1] <= x < GAP[2]]
    if host == EXPORTER_HOST:  # the daemon is down 20 minutes before the restart
        out = [x for x in out if not RESET_AT - dt.timedelta(minutes=20) < x < RESET_AT]
    return out


def _spread(total: int, slots: int, rng: random.Random) -> list[int]:
    out = [0] * slots
    for _ in range(total):
        out[rng.randrange(slots)] += 1
    return out


def generate(root, *, seed: int = 44, faults: bool = True) -> dict:
    """Write the fleet under `root` (events, counters + counter_buckets, truth, joblogs); returns
    a summary whose `coverage` holds the report's truth per week (see __init__.py)."""
    root = Path(root)
    rng = random.Random(seed)
    times = {h: _host_times(h, rng) for h in HOSTS}
    # activity per (host, time): probe -> [calls, failures, {errno: n}]
    cells: dict[tuple[str, dt.datetime], dict[str, list]] = {}
    records: list[tuple[str, dt.datetime, str, int]] = []  # (host, time, family, count)
    for h, ts in times.items():
        _, vendor = HOSTS[h]
        for t in ts:
            c = {p: [0, 0, {}] for p in host_probes(h)}
            n_cq, n_qp, n_mr, n_gpu = rng.randint(1, 4), rng.randint(2, 9), rng.randint(4, 12), rng.randint(0, 6)
            n_pd = rng.randint(0, 2)
            c["ib_uverbs_create_cq"][0] += n_cq
            for p in ("ib_uverbs_create_qp", driver(vendor, "create_qp")):
                c[p][0] += n_qp
            for p in ("ib_uverbs_modify_qp", driver(vendor, "modify_qp")):
                c[p][0] += 3 * n_qp
            c[driver(vendor, "alloc_pd")][0] += n_pd
            for p in ("ib_uverbs_reg_mr", driver(vendor, "reg_user_mr")):
                c[p][0] += n_mr
            if vendor == "mlx5":
                c["__ib_umem_get"][0] += n_mr
                c["ib_peer_umem_get"][0] += n_gpu  # GPU buffers the pin refuses: the peer client takes them
                c["ib_umem_activate_invalidation_notifier"][0] += n_gpu
            if h in DMABUF[iso_week(t)] and rng.random() < 0.3:
                n = rng.randint(1, 3)
                for p in ("ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", driver(vendor, "reg_user_mr_dmabuf")):
                    c[p][0] += n
            cells[(h, t)] = c
    if faults:
        for family, (per_week, hosts) in PLAN.items():
            _, _, frames = TREES[family]
            for week, total in per_week.items():
                slots = [(h, t) for h in hosts for t in times[h] if iso_week(t) == week
                         and not (h == EXPORTER_HOST and t == RESET_AT)]
                for (h, t), n in zip(slots, _spread(total, len(slots), rng), strict=True):
                    if n:
                        _fail(cells[(h, t)], frames, n)
                        records.append((h, t, family, n))
        # the boundary snapshots each fail: the report must put each in its week (the new year's both in W53)
        for t, n in ((WEEK_START["2027-W01"] - SNAP, 7), (WEEK_START["2027-W01"] + SNAP, 11),
                     (WEEK_START["2026-W53"] - SNAP, 5), (WEEK_START["2026-W53"] + SNAP, 13),
                     (NEW_YEAR - SNAP, 3), (NEW_YEAR + SNAP, 4)):
            _fail(cells[(BOUNDARY_HOST, t)], TREES["qp_type_unsupported"][2], n)
            records.append((BOUNDARY_HOST, t, "qp_type_unsupported", n))
    rows = _rows(times, cells)
    _write(root, rows, records, seed)
    logs = _write_logs(root, cells, times, faults)
    coverage = {w: _week_truth(rows, w, logs) for w in WEEKS}
    return {"seed": seed, "faults": faults, "hosts": sorted(HOSTS), "weeks": list(WEEKS), "rows": len(rows),
            "records": len(records), "coverage": coverage, "app_failures": len(logs)}


def _fail(cell: dict, frames, n: int) -> None:
    for _, fn, errno in frames:
        cell[fn][1] += n
        cell[fn][2][errno] = cell[fn][2].get(errno, 0) + n
        if cell[fn][1] > cell[fn][0]:  # a failing call is a call: the activity holds at least the failures
            cell[fn][0] = cell[fn][1]


def _rows(times: dict, cells: dict) -> list[dict]:
    """Counters rows as written: deltas, except the exporter host's (new - old of cumulative
    counts: the restart takes the counts back to zero, and its first row goes negative). Each row
    also carries `counted` (what it adds to a week: every delta clipped at 0)."""
    out = []
    for h, ts in times.items():
        kernel, vendor = HOSTS[h]
        attached = host_probes(h)
        cum: dict[str, list] = {p: [0, 0, {}] for p in attached}
        for t in ts:
            c = cells[(h, t)]
            for p, live in attached.items():
                calls, fails, errnos = c[p]
                if not live:
                    calls, fails, errnos = 0, 0, {}
                row = {"host": h, "snapshot_time": t, "interval_s": 5.0, "kernel_release": kernel, "vendor": vendor,
                       "probe_set": "rdma", "probe": p, "layer": LAYER[p], "live": live, "lost_records": 0}
                if h == EXPORTER_HOST:
                    old = cum[p]
                    if t == RESET_AT:  # restarted: the cumulative counts start again from this interval's
                        new = [calls, fails, dict(errnos)]
                        shipped = (calls - old[0], fails - old[1],
                                   {e: errnos.get(e, 0) - old[2].get(e, 0) for e in set(old[2]) | set(errnos)})
                    else:
                        new = [old[0] + calls, old[1] + fails, dict(old[2])]
                        for e, n in errnos.items():
                            new[2][e] = new[2].get(e, 0) + n
                        shipped = (calls, fails, dict(errnos))
                    cum[p] = new
                else:
                    shipped = (calls, fails, dict(errnos))
                row["invocations"], row["failures"] = shipped[0], shipped[1]
                row["errno_counts"] = [{"errno": e, "count": n} for e, n in sorted(shipped[2].items()) if n != 0]
                row["counted"] = (max(shipped[0], 0), max(shipped[1], 0),
                                  {e: n for e, n in shipped[2].items() if n > 0})
                out.append(row)
    return out


def _write(root: Path, rows: list[dict], records: list, seed: int) -> None:
    by_part: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by_part[(r["snapshot_time"].date().isoformat(), r["host"])].append(r)
    names = [f.name for f in COUNTERS]
    for (date, host), part in sorted(by_part.items()):
        table = pa.Table.from_pylist([{k: r[k] for k in names} for r in part], schema=COUNTERS)
        path = write_partition(table, root, "counters", date, host, "part-00000.parquet", durable=False)
        write_counter_buckets(path, durable=False)
        if host == RESENT_HOST and date == RESENT_DATE:  # the same snapshots again, in a second part file
            again = write_partition(table, root, "counters", date, host, "part-00001.parquet", durable=False)
            write_counter_buckets(again, durable=False)
    # the call trees: one record per (host, snapshot, family), standing for `count` identical trees
    ev: dict[tuple[str, str], list[dict]] = defaultdict(list)
    tr: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for i, (h, t, family, n) in enumerate(sorted(records, key=lambda r: (r[0], r[1], r[2]))):
        op, arg, frames = TREES[family]
        kernel, _ = HOSTS[h]
        tid = f"{h}:{seed}:{i}"
        end = t - dt.timedelta(seconds=1)
        for seq, (depth, fn, errno) in enumerate(frames):
            ev[(end.date().isoformat(), h)].append({
                "trace_id": tid, "seq": seq, "ts_ns": _ns(end) % 10**15, "pid": 4000 + i % 5000, "tid": 4000 + i % 5000,
                "ppid": 1, "comm": "python3", "probe": fn, "layer": LAYER[fn], "depth": depth, "ret": -1, "errno": errno,
                "latency_ns": None, "path": None, "arg": arg if seq == 0 else None, "kind": "failure", "command": op,
                "exit_status": -1, "start_time": end, "end_time": end, "host": h, "kernel_release": kernel,
                "lost_events": 0, "job_id": f"job-{h}-{t:%Y%m%d}", "metadata": None, "repeat_count": n})
        origin, errno, layer = FAMILIES[family]
        tr[(end.date().isoformat(), h)].append({
            "trace_id": tid, "host": h, "kind": "failure", "root_cause": family, "bifurcation_probe": origin,
            "bifurcation_errno": errno, "origin_layer": layer, "expected_error": False, "held_out": False})
    if not ev:  # the control: one successful tree keeps the events table present
        h, t = "fg44-a01", WEEK_START["2026-W52"] + dt.timedelta(hours=1)
        tid = f"{h}:{seed}:good"
        ev[(t.date().isoformat(), h)].append({
            "trace_id": tid, "seq": 0, "ts_ns": 1, "pid": 1, "tid": 1, "ppid": 1, "comm": "python3",
            "probe": "mlx5_ib_alloc_pd", "layer": "driver", "depth": 0, "ret": 0, "errno": None, "latency_ns": 1000,
            "kind": "good", "command": "alloc_pd", "exit_status": 0, "start_time": t, "end_time": t, "host": h,
            "kernel_release": HOSTS[h][0], "lost_events": 0, "repeat_count": 1})
        tr[(t.date().isoformat(), h)].append({"trace_id": tid, "host": h, "kind": "good", "expected_error": False,
                                              "held_out": False})
    for (date, host), part in sorted(ev.items()):
        write_partition(pa.Table.from_pylist(part, schema=EVENTS), root, "events", date, host, "part-00000.parquet",
                        durable=False)
    for (date, host), part in sorted(tr.items()):
        write_partition(pa.Table.from_pylist(part, schema=TRUTH), root, "truth", date, host, "part-00000.parquet",
                        durable=False)


# NCCL logs ---------------------------------------------------------------------------------
VERB_OPERATION = {"ibv_create_qp": "create_qp", "ibv_reg_mr_iova2": "reg_mr", "ibv_alloc_pd": "alloc_pd",
                  "ibv_dealloc_pd": "dealloc_pd"}
STRERROR = {"EOPNOTSUPP": ("Operation not supported", 95), "EFAULT": ("Bad address", 14),
            "EINVAL": ("Invalid argument", 22), "EIO": ("Input/output error", 5), "EBUSY": ("Device or resource busy", 16)}
COUNTERPART = {"create_qp": ["ib_uverbs_create_qp", "mlx5_ib_create_qp", "bnxt_re_create_qp"],
               "reg_mr": ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "bnxt_re_reg_user_mr"],
               "alloc_pd": ["mlx5_ib_alloc_pd", "bnxt_re_alloc_pd"], "dealloc_pd": []}
FAMILY_VERB = {"gpu_pin_efault": ("ibv_reg_mr_iova2", "EFAULT"), "qp_type_unsupported": ("ibv_create_qp", "EOPNOTSUPP"),
               "pd_fw_eio": ("ibv_alloc_pd", "EIO"), "bnxt_qp_limit": ("ibv_create_qp", "EINVAL")}


def _line(t: dt.datetime, host: str, pid: int, verb: str, errno: str) -> str:
    text, num = STRERROR[errno]
    stamp = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    head = f"{stamp} {host}:{pid}:{pid + 7} [{pid % 8}] NCCL WARN "
    if verb.startswith("ibv_reg_mr"):
        return head + (f"NET/IB : Unable to register memory addr=0x7f00{pid:08x} size=2097152 : {verb} failed with "
                       f"error {text} errno {num}")
    return head + f"Call to {verb} failed with error {text} errno {num}"


def _write_logs(root: Path, cells: dict, times: dict, faults: bool) -> list[dict]:
    """The jobs' NCCL logs (DATASET/joblogs/<host>.log). Per week: failing verbs calls whose
    kernel counterpart failed in the snapshot interval holding the log line (seen), and ones no
    live probe saw: on the gap host while its daemon was down, on the host that left after its
    last snapshot, at a time its counterpart probes counted no failure (a user-space refusal),
    and a cleanup verb no probe covers. Returns one dict per failure with its truth (`seen`)."""
    out: list[dict] = []
    if not faults:
        return out
    failing = sorted((h, t, p) for (h, t), c in cells.items() for p, v in c.items() if v[1] > 0)
    pid = 1000
    for week in WEEKS:
        # seen: the first failing snapshots of each family this week (up to 3 a family, distinct hosts first)
        for family, (verb, errno) in FAMILY_VERB.items():
            origin = FAMILIES[family][0]
            picked = [(h, t) for h, t, p in failing if p == origin and iso_week(t) == week
                      and not (WEEK_START[week] - SNAP <= t <= WEEK_START[week] + SNAP)][:3]
            for h, t in picked:
                pid += 1
                out.append({"time": t - dt.timedelta(seconds=2.5), "host": h, "pid": pid, "verb": verb,
                            "errno": errno, "seen": True, "week": week})
        base = WEEK_START[week]
        unseen = [(base + dt.timedelta(days=3, hours=1, seconds=1), "fg44-d01", "ibv_dealloc_pd", "EBUSY")]
        if week == "2026-W53":
            unseen.append((dt.datetime(2027, 1, 2, 10, 0, 1, tzinfo=UTC), LEAVES[0], "ibv_create_qp", "EOPNOTSUPP"))
        if week == "2027-W01":
            unseen.append((dt.datetime(2027, 1, 6, 3, 0, 1, tzinfo=UTC), GAP[0], "ibv_create_qp", "EINVAL"))
        unseen.append((base + dt.timedelta(days=5, hours=7, seconds=3), "fg44-c02", "ibv_reg_mr_iova2", "EFAULT"))
        for t, h, verb, errno in unseen:
            pid += 1
            out.append({"time": t, "host": h, "pid": pid, "verb": verb, "errno": errno, "seen": False, "week": week})
    # the gap host's failure while its daemon was down (the gap is in W53: 2027-01-01)
    out.append({"time": GAP[1] + dt.timedelta(hours=3, seconds=1), "host": GAP[0], "pid": pid + 1,
                "verb": "ibv_create_qp", "errno": "EINVAL", "seen": False, "week": iso_week(GAP[1])})
    # the unseen ones must be unseen: no failure of a counterpart on that host within 30 minutes
    for f in out:
        if f["seen"]:
            continue
        near = [(h, t, p) for h, t, p in failing if h == f["host"] and p in COUNTERPART[VERB_OPERATION[f["verb"]]]
                and abs((t - f["time"]).total_seconds()) < 1800]
        assert not near, (f, near)
    (root / "joblogs").mkdir(parents=True, exist_ok=True)
    by_host: dict[str, list[dict]] = defaultdict(list)
    for f in out:
        by_host[f["host"]].append(f)
    for h, fs in sorted(by_host.items()):
        text = []
        for f in sorted(fs, key=lambda f: f["time"]):
            text.append(f"{f['time']:%Y-%m-%dT%H:%M:%S}.000Z {h}:{f['pid']}:{f['pid']} [0] NCCL INFO NET/IB : "
                        f"Using [0]{'mlx5_0' if HOSTS[h][1] == 'mlx5' else 'bnxt_re0'}:1/RoCE ; OOB eth0:10.0.0.1<0>")
            text.append(_line(f["time"], h, f["pid"], f["verb"], f["errno"]))
        (root / "joblogs" / f"{h}.log").write_text("\n".join(text) + "\n")
    return out


# the report's truth -------------------------------------------------------------------------
def _totals(rows: list[dict], week: str) -> dict:
    """Per probe of the week: counted calls, failures, errno counts, hosts live. A snapshot
    delivered twice is in `rows` once (the re-sent part file repeats rows of `rows`)."""
    probes: dict[str, dict] = {}
    for r in rows:
        if iso_week(r["snapshot_time"]) != week:
            continue
        p = probes.setdefault(r["probe"], {"layer": r["layer"], "invocations": 0, "failures": 0, "errnos": {},
                                           "live": set(), "hosts": set()})
        calls, fails, errnos = r["counted"]
        p["invocations"] += calls
        p["failures"] += fails
        for e, n in errnos.items():
            p["errnos"][e] = p["errnos"].get(e, 0) + n
        p["hosts"].add(r["host"])
        if r["live"]:
            p["live"].add(r["host"])
    return probes


def _week_truth(rows: list[dict], week: str, logs: list[dict]) -> dict:
    now, before = _totals(rows, week), _totals(rows, PREVIOUS[week])
    fired: dict[str, set] = defaultdict(set)  # probe -> the hosts it counted calls on in the week
    for r in rows:
        if r["counted"][0] > 0 and iso_week(r["snapshot_time"]) == week:
            fired[r["probe"]].add(r["host"])
    probes = {}
    for name, p in sorted(now.items()):
        prev = before.get(name, {"invocations": 0, "failures": 0})
        f, pf = p["failures"], prev["failures"]
        change = None if pf == 0 else (f - pf) / pf * 100.0
        if pf == 0:
            trend = "new" if f else "quiet"
        elif f == 0:
            trend = "gone"
        else:
            trend = "rising" if change >= TREND_PCT else "falling" if change <= -TREND_PCT else "steady"
        probes[name] = {
            "layer": p["layer"], "invocations": p["invocations"], "failures": f,
            "failure_rate": None if p["invocations"] == 0 else f / p["invocations"],
            "prev_invocations": prev["invocations"], "prev_failures": pf, "failures_change_pct": change,
            "trend": trend, "hosts_live": len(p["live"]), "never_fired": p["invocations"] == 0,
            "errno_counts": dict(sorted(p["errnos"].items())), "hosts_fired": sorted(fired.get(name, ()))}
    hosts = sorted({r["host"] for r in rows if iso_week(r["snapshot_time"]) == week})
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for h in hosts:
        groups[HOSTS[h]].append(h)
    group_rows = {}
    for (kernel, vendor), members in sorted(groups.items()):
        for name in sorted({p for h in members for p in host_probes(h)}):
            live = [h for h in members if host_probes(h)[name]]
            status = "live" if len(live) == len(members) else "missing" if not live else "partial"
            group_rows[f"{kernel}|{vendor}|{name}"] = {"hosts": len(members), "hosts_live": len(live),
                                                       "hosts_not_attached": len(members) - len(live), "status": status}
    app = [f for f in logs if f["week"] == week]
    verbs: dict[str, dict] = {}
    for f in app:
        v = verbs.setdefault(f["verb"], {"operation": VERB_OPERATION[f["verb"]], "failures": 0, "seen": 0})
        v["failures"] += 1
        v["seen"] += f["seen"]
    seen = sum(f["seen"] for f in app)
    return {"hosts": hosts, "probes": probes, "groups": group_rows,
            "never_fired": sorted(n for n, p in probes.items() if p["never_fired"]),
            "app_failures": len(app), "app_seen": seen, "app_seen_fraction": seen / len(app) if app else None,
            "app_verbs": verbs, "invocations": sum(p["invocations"] for p in probes.values()),
            "failures": sum(p["failures"] for p in probes.values())}
