"""fleetgen3: a third, blind generator of RDMA fleet data with ground truth.

Written from reference/rdma_control_path.yaml, tracer/schema.py and the project's docs only,
without reading baseline/simulator, tests/fleetgen or baseline/fleet, so the audit can be
scored on data shaped by someone who did not tune it.

`generate(out_dir, hosts, hours, seed)` writes the documented dataset layout
(`<out>/<table>/date=D/host=H/part-*.parquet` for events, counters and truth) through
tracer.schema's writers and returns a summary. Modules: calls (call trees from the
reference), fleet (hosts, processes, faults), emit (what the tracer writes).

What is in it:
- vendors mlx5 (MLNX_OFED and upstream stacks), bnxt_re, irdma; six kernel releases, one OFED
  driver update rolled out mid-window (host reboots: new boot id, monotonic clock restarts);
- hosts that report from mid-window on, host clocks skewed, snapshots jittered, duplicated
  and out of order;
- routine errors (truth expected_error): empty GID slots (ENODATA at rdma_get_gid_attr,
  NCCL and the health agent scan the table), rdmacg EAGAIN retried (k8s hosts only), irdma's
  query_device_ex refusing udata (EINVAL, irdma only), DMA-BUF registration unsupported on
  the OFED build (EOPNOTSUPP, then the peer-memory path), CQE compression refused by ConnectX-5
  firmware (EOPNOTSUPP, a few OFED hosts), NCCL's optional config files (openat ENOENT);
- faults: a firmware batch timing out QP transitions (ETIMEDOUT, some EIO, at mlx5_cmd_exec);
  peer-memory EFAULT after the OFED update; memory-registration ENOMEM under memlock
  pressure (mlx5 and bnxt_re); a crash loop on irdma (ENODATA at irdma_create_qp); a rare
  GID slot vanishing under a running job (ENODATA at rdma_get_gid_attr: the same probe and
  errno as a routine family, in modify_qp); a device in a bad state seen only by the counters
  (its call trees lost to a full spool; truth rows marked unobserved).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import calls
from .emit import HostTracer, events_table
from .fleet import assign_faults, make_hosts, plan_host

START = datetime(2026, 11, 24, 21, 17, 30, tzinfo=UTC)

ROUTINE = ("gid_empty_slot", "rdmacg_eagain", "irdma_query_device_ex_udata", "dmabuf_unsupported_fallback",
           "cqe_compression_unsupported", "nccl_conf_absent")
# host role (tests/fleetgen3/fleet.assign_faults) -> the errnos its fault shows
FAULT_ERRNOS = {"bad_fw": ("ETIMEDOUT", "EIO"), "peer_efault": ("EFAULT",), "crash_loop": ("ENODATA",),
                "gid_vanished": ("ENODATA",), "mem_pressure": ("ENOMEM",), "bad_state": ("EIO",)}
# the roles whose hosts must alert: a crash loop on the host (its jobs restart and fail at
# once, all day) and the device stuck in a bad state (seen through its counters only)
REQUIRED_ROLES = ("crash_loop", "bad_state")
FAULTS = ("bad_firmware_modify_qp", "peer_mem_efault_after_update", "memlock_pressure_enomem",
          "irdma_qp_buffer_unregistered", "gid_vanished_under_qp", "device_bad_state")


def generate(out_dir: str | os.PathLike, hosts: int = 60, hours: float = 6.0, seed: int = 0,
             start: datetime = START) -> dict:
    from tracer import schema

    calls.check_against_reference()
    rng = np.random.default_rng(seed)
    out = Path(out_dir)
    span = hours * 3600.0
    fleet = make_hosts(hosts, span, rng)
    assign_faults(fleet, span, rng)
    start_hour = start.hour + start.minute / 60
    summary: dict = {"hosts": hosts, "events": 0, "traces": 0, "truth": defaultdict(int),
                     "roles": {}}
    for h in fleet:
        hrng = np.random.default_rng(rng.integers(0, 2**63))
        plan_host(h, span, start_hour, hrng)
        tr = HostTracer(h, start, span, hrng)
        for c in h.calls:
            tr.record(c)
        if h.roles:
            summary["roles"][h.name] = sorted(h.roles)
        _write_events(out, h.name, tr, schema)
        _write_counters(out, h.name, tr, hrng, schema)
        _write_truth(out, h.name, tr, schema, start)
        summary["events"] += len(tr.events["trace_id"])
        for t in tr.truth:
            summary["truth"][t["root_cause"] or "(good)"] += 1
        summary["traces"] += len(tr.truth)
    summary["truth"] = dict(summary["truth"])
    # hosts with a host-level fault and the errnos it shows: a host alert elsewhere, or with
    # another errno, is a false alarm (routine families must not raise any)
    # (`alert_hosts` is what is *acceptable*: an alert on any of these hosts naming one of
    # these errnos is no false one)
    summary["alert_hosts"] = {
        h.name: sorted({e for role in h.roles for e in FAULT_ERRNOS[role]}) for h in fleet if h.roles
    }
    # ... and `required_alert_hosts` the hosts an alert must be raised on: a fault of the host
    # itself that persists (REQUIRED_ROLES). The firmware batch and the OFED update fail many
    # hosts alike (their root-cause clusters' cause), a memlock episode passes within the hour,
    # a vanished GID slot is a rare failure: an alert there is acceptable, its absence no miss
    summary["required_alert_hosts"] = {
        h.name: sorted({e for role in h.roles if role in REQUIRED_ROLES for e in FAULT_ERRNOS[role]})
        for h in fleet if set(h.roles) & set(REQUIRED_ROLES)
    }
    from tracer.atomic import atomic_output

    with atomic_output(out / "fleetgen3.json") as fh:
        fh.write(json.dumps(summary, indent=1, sort_keys=True).encode())
    return summary


def _by_date(table: pa.Table, column: str) -> dict[str, pa.Table]:
    if table.num_rows == 0:
        return {}
    dates = pc.strftime(table.column(column), format="%Y-%m-%d")
    return {d: table.filter(pc.equal(dates, d)) for d in pc.unique(dates).to_pylist()}


def _write_events(out: Path, host: str, tr: HostTracer, schema) -> None:
    if not tr.events["trace_id"]:
        return
    table = events_table(tr.events)
    for date, part in _by_date(table, "start_time").items():
        # one part per boot, as a restarted tracer starts a new file
        for i, (_, boot) in enumerate(tr.boots):
            mask = pc.starts_with(part.column("trace_id"), boot[:12])
            piece = part.filter(mask)
            if piece.num_rows:
                schema.write_partition(piece, out, "events", date, host, f"part-{boot[:8]}-{i}.parquet")


def _write_counters(out: Path, host: str, tr: HostTracer, rng: np.random.Generator, schema) -> None:
    rows = tr.counter_rows()
    if not rows:
        return
    for r in rows:
        r["host"] = host
    # late deliveries: a few snapshots land after later ones; a few are delivered twice
    snaps = sorted({r["snapshot_time"] for r in rows})
    late = {s for s in snaps if rng.random() < 0.02}
    resend = {s for s in snaps if rng.random() < 0.01}
    ordered = [r for r in rows if r["snapshot_time"] not in late] + [r for r in rows if r["snapshot_time"] in late]
    table = pa.Table.from_pylist(ordered, schema=schema.COUNTERS)
    for date, part in _by_date(table, "snapshot_time").items():
        schema.write_partition(part, out, "counters", date, host, "part-0.parquet")
    dup = [r for r in rows if r["snapshot_time"] in resend]
    if dup:
        table = pa.Table.from_pylist(dup, schema=schema.COUNTERS)
        for date, part in _by_date(table, "snapshot_time").items():
            schema.write_partition(part, out, "counters", date, host, "part-resent.parquet")


def _write_truth(out: Path, host: str, tr: HostTracer, schema, start: datetime) -> None:
    if not tr.truth:
        return
    # truth is partitioned by the day the fleet started (the simulator's rows have no time)
    table = pa.Table.from_pylist(tr.truth, schema=schema.TRUTH)
    schema.write_partition(table, out, "truth", start.strftime("%Y-%m-%d"), host, "part-0.parquet")
