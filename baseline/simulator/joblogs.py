"""Job logs of the simulated fleet: the NCCL WARN lines the applications wrote for the failures
the simulator injected, so the weekly coverage report has application-labelled failures to
match against the probes' counters (RDMATracer's "73 %" analysis).

One file per host, ``<out>/joblogs/<host>.log``, lines in time order, each prefixed with the
ISO 8601 UTC timestamp a log collector adds, in the format baseline.pipeline.nccl parses::

    2026-11-28T03:14:07.512Z gpu00017:2186421:2186563 [3] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110

Which failures an application logs: every failing top-level verbs call that is not a routine,
expected error (GID queries of empty slots and the rdma-cgroup EAGAIN retried by the library are
not reported by NCCL), with the errno of the call's root frame (what the verb returned), plus the
cleanup failures no probe covers (root cause f: ``ibv_dealloc_pd`` EBUSY at the end of a job).
An ``NCCL INFO`` line names the devices once per job process, as NCCL does at start-up.
"""

from __future__ import annotations

import errno as _errno
import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from baseline.simulator.tables import VOCAB, HostPart
from tracer import atomic

# The simulator's operations (the `command` of a call tree) -> the verb NCCL names in its WARN
# line (net_ib.cc registers host memory with ibv_reg_mr_iova2, GPU memory with ibv_reg_dmabuf_mr).
VERB_OF_COMMAND = {
    "query_gid": "ibv_query_gid",
    "alloc_pd": "ibv_alloc_pd",
    "create_cq": "ibv_create_cq",
    "create_qp": "ibv_create_qp",
    "modify_qp RESET->INIT": "ibv_modify_qp",
    "modify_qp INIT->RTR": "ibv_modify_qp",
    "modify_qp RTR->RTS": "ibv_modify_qp",
    "reg_mr": "ibv_reg_mr_iova2",
    "reg_dmabuf_mr": "ibv_reg_dmabuf_mr",
    "lookup_uobject": "ibv_destroy_qp",
}
DEVICES = {"mlx5": "mlx5_0", "bnxt_re": "bnxt_re0", "irdma": "irdma0"}


def _stamp(ns: int) -> str:
    t = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{(ns // 1_000_000) % 1000:03d}Z"


def _warn(ns: int, host: str, pid: int, tid: int, verb: str, errno_name: str) -> str:
    num = getattr(_errno, errno_name)
    dev = tid % 8
    if verb.startswith("ibv_reg_"):  # net_ib.cc's wording for registrations
        what = (f"NET/IB : Unable to register memory addr=0x7f{(tid * 4096) & 0xFFFFFFFFFF:010x} "
                f"size={1 << (20 + tid % 10)} : {verb} failed with error {os.strerror(num)} errno {num}")
    else:
        what = f"Call to {verb} failed with error {os.strerror(num)} errno {num}"
    return f"{_stamp(ns)} {host}:{pid}:{tid} [{dev}] NCCL WARN {what}"


def nccl_lines(part: HostPart) -> list[str]:
    """The host's job-log lines, time-ordered."""
    ev, tr = part.events, part.truth
    roots = np.flatnonzero(ev["seq"] == 0)  # one root frame per emitted trace, in trace order
    observed = tr["trace_no"] >= 0
    failed = ev["ret"][roots] < 0
    routine = tr["expected_error"][observed].astype(bool)
    lines: list[tuple[int, str]] = []
    started: set[int] = set()
    device = DEVICES.get(VOCAB[part.vendor_vid] if part.vendor_vid >= 0 else "", "mlx5_0")

    def info(ns: int, pid: int, tid: int) -> None:
        if pid not in started:
            started.add(pid)
            lines.append((ns - 1_000_000, f"{_stamp(ns - 1_000_000)} {part.name}:{pid}:{pid} [{tid % 8}] NCCL INFO "
                                          f"NET/IB : Using [0]{device}:1/RoCE ; OOB eth0:10.0.{part.index % 250}.1<0>"))

    for i in roots[failed & ~routine]:
        job = part.jobs[int(ev["job"][i])]
        ns, tid = int(ev["start_time"][i]), int(ev["tid"][i])
        verb = VERB_OF_COMMAND[VOCAB[int(ev["command"][i])]]
        info(ns, job.pid, tid)
        lines.append((ns, _warn(ns, part.name, job.pid, tid, verb, VOCAB[int(ev["errno"][i])])))
    # Unobservable cleanup failures: the job's last moments, its main thread.
    for k in np.flatnonzero(~observed):
        ns = int(tr["time"][k])
        pid = _job_pid_at(part, ns)
        info(ns, pid, pid)
        lines.append((ns, _warn(ns, part.name, pid, pid, "ibv_dealloc_pd", "EBUSY")))
    lines.sort(key=lambda x: x[0])
    return [text for _, text in lines]


def _job_pid_at(part: HostPart, ns: int) -> int:
    """pid of the job running at `ns`: the last job with an emitted call at or before it."""
    ev = part.events
    before = np.flatnonzero(ev["start_time"] <= ns)
    if before.size == 0:
        return part.jobs[0].pid if part.jobs else 1
    return part.jobs[int(ev["job"][before[np.argmax(ev["start_time"][before])]])].pid


def write_joblog(root: Path, part: HostPart) -> int:
    """Write <root>/joblogs/<host>.log (atomically; no fsync, the data is regenerable); bytes written."""
    lines = nccl_lines(part)
    if not lines:
        return 0
    text = "\n".join(lines) + "\n"
    atomic.write_text(root / "joblogs" / f"{part.name}.log", text, durable=False)
    return len(text)
