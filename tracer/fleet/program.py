"""The fleet tracer library: load bpf/calltree.c for a probe set, attach it, read call trees from
the ring buffer, read the per-CPU counters as exact deltas, and turn both into the shared
`events` / `counters` tables (tracer/schema.py).

One `FleetProgram` per probe set. The kernel side is specialised with -D flags only:
ATTACH_UPROBE / ATTACH_FEXIT / ATTACH_SYSCALLS and PROBES=P(id,symbol)... (see calltree.c).
"""

from __future__ import annotations

import ctypes
import functools
import os
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from tracer import resources
from tracer.errnos import errno_name
from tracer.errors import EnvironmentProblem, TracebaseError
from tracer.fleet.probes import (
    ProbeSet,
    ProbeStatus,
    btf_sections,
    btf_types,
    check_probe_set,
    lockdown_mode,
    resolve_library,
    syscall_numbers,
)

BPF_DIR = resources.BPF_DIR
CALLTREE_C = BPF_DIR / "calltree.c"

# Layouts of struct tree / struct frame in calltree.c.
HEADER = struct.Struct("<IIIBBBBHHI16s8s")
FRAME = struct.Struct("<QQqHBBI")
ERRNO_BUCKETS = 136
HEALTH_LOST, HEALTH_EMITTED, HEALTH_TRUNCATED, HEALTH_ORPHAN = range(4)
KINDS = {1: "failure", 2: "good"}
DEFAULT_LATENCY_BOUND_NS = 50_000_000
DEFAULT_RINGBUF_KB = 256
DEFAULT_SAMPLE_EVERY = 10
_ATTACH_DEFINE = {"uprobe": "-DATTACH_UPROBE", "fexit": "-DATTACH_FEXIT", "syscalls": "-DATTACH_SYSCALLS"}


def bucket_errno(bucket: int) -> str:
    """Name of an errno-histogram bucket of calltree.c."""
    if bucket == 0:
        return "UNKNOWN"  # failed without an errno (NULL pointer, positive non-errno value)
    if bucket == 134:
        return "EKERNEL"  # kernel-internal codes 512..530 (ERESTARTSYS, ENOTSUPP, ...)
    if bucket == 135:
        return "EOTHER"
    return errno_name(-bucket) or f"E{bucket}"


_BTF_STRUCT = 4
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")


def btf_member_offsets(path: Path, struct_name: str, members: tuple[str, ...]) -> dict[str, int] | None:
    """Byte offsets of `members` of `struct_name` in a BTF blob, or None when any is missing."""
    types, strings = btf_sections(path.read_bytes())
    wanted = struct_name.encode() + b"\0"
    for off, name_off, info, kind, vlen in btf_types(types):
        if kind == _BTF_STRUCT and strings.startswith(wanted, name_off):
            found: dict[str, int] = {}
            for i in range(vlen):
                m_name, _type, bits = struct.unpack_from("<III", types, off + 12 + 12 * i)
                if info >> 31:   # kind_flag: bitfield size in the top 8 bits
                    bits &= 0xFFFFFF
                name = strings[m_name: strings.index(b"\0", m_name)].decode()
                if name in members and bits % 8 == 0:
                    found[name] = bits // 8
            if len(found) == len(members):
                return found
    return None


@functools.lru_cache(maxsize=1)
def task_offset_flags() -> tuple[str, ...]:
    """-D flags with the running kernel's task_struct offsets (from its BTF) for the ppid read.

    The kernel headers bcc compiles against may belong to another kernel version (here: 6.1
    headers on a 6.18 kernel), so `task->real_parent->tgid` would read a wrong address: ppid 0,
    and a faulting bpf_probe_read_kernel cost ~1 us per record. Without BTF, calltree.c falls
    back to the headers' offsets."""
    try:
        offsets = btf_member_offsets(VMLINUX_BTF, "task_struct", ("real_parent", "tgid"))
    except (OSError, ValueError, struct.error):
        return ()
    if not offsets:
        return ()
    return (f"-DTASK_REAL_PARENT_OFF={offsets['real_parent']}", f"-DTASK_TGID_OFF={offsets['tgid']}")


def ringbuf_pages(kb: int) -> int:
    """Ring buffer size in pages: a power of two, at least one page."""
    if kb <= 0:
        raise TracebaseError(f"--ringbuf-kb: expected a positive size in KiB, found {kb}")
    pages = max(1, (kb * 1024) // os.sysconf("SC_PAGE_SIZE"))
    return 1 << (pages.bit_length() - 1)


# --------------------------------------------------------------------------------------------
# decoded records
# --------------------------------------------------------------------------------------------
@dataclass
class Frame:
    probe_id: int
    depth: int
    ts_ns: int
    latency_ns: int
    ret: int
    failed: bool


@dataclass
class CallTree:
    kind: str  # failure | good
    pid: int
    tid: int
    ppid: int
    comm: str
    frames: list[Frame]
    truncated: int  # frames not recorded (deeper/wider than the program keeps)


def decode_tree(data: bytes) -> CallTree:
    pid, tid, ppid, kind, nframes, _open, _failed, truncated, _skipped, _pad, comm, _path = HEADER.unpack_from(data)
    nframes = min(nframes, (len(data) - HEADER.size) // FRAME.size)
    frames = []
    for i in range(nframes):
        ts, latency, ret, probe, depth, failed, _ = FRAME.unpack_from(data, HEADER.size + i * FRAME.size)
        frames.append(Frame(probe, depth, ts, latency, ret, bool(failed)))
    return CallTree(KINDS.get(kind, "failure"), pid, tid, ppid, comm.split(b"\0", 1)[0].decode(errors="replace"),
                    frames, truncated)


@dataclass
class ProbeCounts:
    invocations: int = 0
    failures: int = 0
    errnos: dict[str, int] = field(default_factory=dict)


@dataclass
class Counters:
    """Counter values (totals or deltas) of one program."""

    probes: dict[int, ProbeCounts]
    lost: int
    emitted: int
    truncated: int
    orphans: int

    def minus(self, before: Counters | None) -> Counters:
        if before is None:
            return self
        probes = {}
        for pid, now in self.probes.items():
            old = before.probes.get(pid, ProbeCounts())
            errnos = {k: v - old.errnos.get(k, 0) for k, v in now.errnos.items() if v - old.errnos.get(k, 0)}
            probes[pid] = ProbeCounts(now.invocations - old.invocations, now.failures - old.failures, errnos)
        return Counters(probes, self.lost - before.lost, self.emitted - before.emitted,
                        self.truncated - before.truncated, self.orphans - before.orphans)


@dataclass
class AttachResult:
    probe: str
    live: bool
    reason: str | None = None


# --------------------------------------------------------------------------------------------
# the program
# --------------------------------------------------------------------------------------------
def _bcc():
    try:
        import bcc
    except ImportError:
        raise EnvironmentProblem("bcc Python bindings missing (apt-get install python3-bpfcc)") from None
    return bcc


def _quiet_bpf_class():
    bcc = _bcc()

    class QuietBPF(bcc.BPF):
        """bcc attaches kfunc__/raw_tracepoint__ functions at construction; we attach ourselves,
        probe by probe, so that compiling never loads anything and failures name the probe."""

        def _trace_autoload(self) -> None:
            return None

    return QuietBPF


class FleetProgram:
    """calltree.c compiled for one probe set."""

    def __init__(
        self,
        probe_set: ProbeSet,
        *,
        ringbuf_kb: int = DEFAULT_RINGBUF_KB,
        sample_every: int = DEFAULT_SAMPLE_EVERY,
        latency_bound_ns: int = DEFAULT_LATENCY_BOUND_NS,
        target_pid: int = 0,
        failures_only: bool = False,
    ):
        if sample_every < 1:
            raise TracebaseError(f"--sample: expected a positive integer N (1 in N), found {sample_every}")
        if latency_bound_ns <= 0:
            raise TracebaseError(f"--latency-bound: expected a positive duration, found {latency_bound_ns} ns")
        self.probe_set = probe_set
        self.ringbuf_pages = ringbuf_pages(ringbuf_kb)
        self.sample_every = sample_every
        self.latency_bound_ns = latency_bound_ns
        self.target_pid = target_pid
        self.failures_only = failures_only
        self.bpf = None
        self.attach_results: list[AttachResult] = []
        self._pending: list[CallTree] = []
        self._last_totals: Counters | None = None
        self._capture_open = False

    # ---- build ----------------------------------------------------------------------------
    def cflags(self) -> list[str]:
        flags = [_ATTACH_DEFINE[self.probe_set.attach], f"-DMAX_PROBES={len(self.probe_set.probes)}",
                 f"-DRINGBUF_PAGES={self.ringbuf_pages}", *task_offset_flags()]
        if self.probe_set.attach != "syscalls":
            flags.append("-DPROBES=" + "".join(f"P({p.id},{p.symbol})" for p in self.probe_set.probes))
        return flags

    def compile(self) -> FleetProgram:
        """Compile only (nothing is loaded into the kernel until attach)."""
        bpf_class = _quiet_bpf_class()
        try:
            self.bpf = bpf_class(src_file=str(CALLTREE_C).encode(), cflags=self.cflags())
        except Exception as exc:  # bcc raises bare Exception on compile errors
            raise EnvironmentProblem(f"{CALLTREE_C}: bcc could not compile the {self.probe_set.name} program: {exc}") from None
        return self

    def function_names(self) -> list[str]:
        lib = _bcc().libbcc.lib
        return [lib.bpf_function_name(self.bpf.module, i).decode() for i in range(lib.bpf_num_functions(self.bpf.module))]

    def configure(self, *, sample_every: int | None = None, latency_bound_ns: int | None = None,
                  target_pid: int | None = None, failures_only: bool | None = None) -> None:
        """Change settings of a running program (they live in maps, not in the code)."""
        if sample_every is not None:
            self.sample_every = sample_every
        if latency_bound_ns is not None:
            self.latency_bound_ns = latency_bound_ns
        if target_pid is not None:
            self.target_pid = target_pid
        if failures_only is not None:
            self.failures_only = failures_only
        if self.bpf is not None:
            self._write_probe_conf()
            self._write_settings()

    def _configure(self) -> None:
        self._write_probe_conf()
        self._write_settings()
        self.bpf[b"events"].open_ring_buffer(self._on_record)

    def _write_probe_conf(self) -> None:
        conf = self.bpf[b"probe_conf"]
        for p in self.probe_set.probes:
            value = conf.Leaf()
            value.ret_kind = p.ret_kind
            value.sample_every = self.sample_every
            conf[ctypes.c_int(p.id)] = value

    def _write_settings(self) -> None:
        table = self.bpf[b"settings"]
        value = table.Leaf()
        value.capture_open = int(self._capture_open)
        value.target_tgid = self.target_pid
        value.latency_bound_ns = self.latency_bound_ns
        value.failures_only = int(self.failures_only)
        value.exclude_tgid = os.getpid()
        table[ctypes.c_int(0)] = value

    # ---- attach ---------------------------------------------------------------------------
    def attach(self, best_effort: bool = False) -> list[AttachResult]:
        """Attach every probe; a probe that can't attach raises unless best_effort."""
        from tracer.privilege import ensure_tracefs

        ensure_tracefs()  # bcc removes probes through tracefs at close: without it, close fails
        if self.bpf is None:
            self.compile()
        self._configure()
        statuses = {s.probe: s for s in check_probe_set(self.probe_set)}
        results = []
        if self.probe_set.attach == "syscalls":
            results = self._attach_syscalls(statuses)
        else:
            for p in self.probe_set.probes:
                results.append(self._attach_one(p.symbol, statuses.get(p.symbol)))
        self.attach_results = results
        failed = [r for r in results if not r.live]
        if failed and not best_effort:
            first = failed[0]
            self.close()
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise TracebaseError(
                f"probe {first.probe} of set {self.probe_set.name}: cannot attach: {first.reason}{more}; "
                "--best-effort runs with the probes that attach"
            )
        if not any(r.live for r in results) and not best_effort:
            raise TracebaseError(f"probe set {self.probe_set.name}: no probe attached")
        self._last_totals = self.read_totals()
        return results

    def _attach_one(self, symbol: str, status: ProbeStatus | None) -> AttachResult:
        if status is not None and not status.exists:
            return AttachResult(symbol, False, status.reason)
        try:
            if self.probe_set.attach == "uprobe":
                lib = resolve_library(self.probe_set.library or "")
                self.bpf.attach_uprobe(name=lib.encode(), sym=symbol.encode(), fn_name=f"entry__{symbol}".encode())
                self.bpf.attach_uretprobe(name=lib.encode(), sym=symbol.encode(), fn_name=f"return__{symbol}".encode())
            else:
                self.bpf.attach_kfunc(fn_name=symbol.encode())
                self.bpf.attach_kretfunc(fn_name=symbol.encode())
        except Exception as exc:  # bcc reports attach failures as bare Exception
            return AttachResult(symbol, False, self._attach_reason(exc))
        return AttachResult(symbol, True)

    def _attach_reason(self, exc: Exception) -> str:
        text = str(exc)
        if self.probe_set.attach == "fexit" and ("super-user" in text or "not permitted" in text.lower()):
            mode = lockdown_mode()
            why = f"kernel lockdown={mode}" if mode and mode != "none" else "kernel lockdown or missing CAP_BPF/CAP_PERFMON"
            return f"the kernel refused to load the fexit program (EPERM: {why})"
        return text or type(exc).__name__

    def _attach_syscalls(self, statuses: dict[str, ProbeStatus]) -> list[AttachResult]:
        table = self.bpf[b"syscall_probe"]
        numbers = syscall_numbers()
        results = []
        for p in self.probe_set.probes:
            st = statuses.get(p.symbol)
            if st is None or not st.exists:
                results.append(AttachResult(p.symbol, False, st.reason if st else "unknown syscall"))
                continue
            table[ctypes.c_int(numbers[p.symbol])] = ctypes.c_uint(p.id + 1)
            results.append(AttachResult(p.symbol, True))
        try:
            self.bpf.attach_raw_tracepoint(tp=b"sys_enter", fn_name=b"raw_tracepoint__sys_enter")
            self.bpf.attach_raw_tracepoint(tp=b"sys_exit", fn_name=b"raw_tracepoint__sys_exit")
        except Exception as exc:  # noqa: BLE001
            return [AttachResult(r.probe, False, f"raw syscall tracepoints: {exc}") for r in results]
        return results

    def live_probes(self) -> set[str]:
        return {r.probe for r in self.attach_results if r.live}

    # ---- control --------------------------------------------------------------------------
    def set_capture(self, open_: bool) -> None:
        """Open or close the good-trace capture window."""
        self._capture_open = bool(open_)
        if self.bpf is not None:
            self._write_settings()

    @property
    def capture_open(self) -> bool:
        return self._capture_open

    # ---- data plane -----------------------------------------------------------------------
    def _on_record(self, _ctx, data, size) -> int:
        self._pending.append(decode_tree(ctypes.string_at(data, size)))
        return 0

    def poll(self, timeout_ms: int = 0) -> list[CallTree]:
        """Call trees that arrived since the last poll (waits up to timeout_ms for the first)."""
        if timeout_ms > 0:
            self.bpf.ring_buffer_poll(timeout_ms)
        self.bpf.ring_buffer_consume()
        out, self._pending = self._pending, []
        return out

    # ---- control plane --------------------------------------------------------------------
    def read_totals(self) -> Counters:
        counts = self.bpf[b"counts"]
        probes = {}
        for p in self.probe_set.probes:
            per_cpu = counts[ctypes.c_int(p.id)]
            inv = sum(v.invocations for v in per_cpu)
            fails = sum(v.failures for v in per_cpu)
            errnos = {}
            if fails:
                for bucket in range(ERRNO_BUCKETS):
                    n = sum(v.errnos[bucket] for v in per_cpu)
                    if n:
                        errnos[bucket_errno(bucket)] = n
            probes[p.id] = ProbeCounts(inv, fails, errnos)
        health = self.bpf[b"health"]
        slots = [sum(health[ctypes.c_int(i)]) for i in range(4)]
        return Counters(probes, slots[HEALTH_LOST], slots[HEALTH_EMITTED], slots[HEALTH_TRUNCATED], slots[HEALTH_ORPHAN])

    def read_deltas(self) -> Counters:
        """Counters since the previous call (user space keeps the totals: nothing is zeroed in
        the kernel, so no increment can fall between a read and a reset)."""
        totals = self.read_totals()
        delta = totals.minus(self._last_totals)
        self._last_totals = totals
        return delta

    @property
    def totals(self) -> Counters | None:
        """Counter totals as of the last read_deltas()."""
        return self._last_totals

    def prog_fds(self) -> dict[str, int]:
        """Loaded BPF program fds by function name (for bpf_stats in the bench)."""
        return {name.decode() if isinstance(name, bytes) else name: fn.fd for name, fn in self.bpf.funcs.items()}

    def close(self) -> list[str]:
        """Detach and free everything; never raises (returns what could not be detached)."""
        from tracer.privilege import release_bpf

        bpf, self.bpf = self.bpf, None
        return release_bpf(bpf) if bpf is not None else []


# --------------------------------------------------------------------------------------------
# rows of the shared tables
# --------------------------------------------------------------------------------------------
@dataclass
class HostContext:
    """What every row of this host's records carries."""

    host: str = field(default_factory=socket.gethostname)
    kernel_release: str = field(default_factory=lambda: os.uname().release)
    boot_id: str = field(default_factory=lambda: _boot_id())
    wall_minus_mono_ns: int = field(default_factory=lambda: time.time_ns() - time.monotonic_ns())


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "noboot"


def frame_errno(ret_kind: str, ret: int, failed: bool) -> str | None:
    if not failed:
        return None
    if ret_kind == "pos_errno":
        return errno_name(-ret) if ret > 0 else errno_name(ret)
    if ret_kind == "null_ptr":
        return None
    return errno_name(ret)


def _clip32(value: int) -> int:
    return max(-(2**31), min(2**31 - 1, value))


def tree_rows(tree: CallTree, pset: ProbeSet, ctx: HostContext, job_id: str | None = None,
              metadata: dict[str, str] | None = None) -> list[dict]:
    """One events row per frame, root first (the call order the program recorded)."""
    if not tree.frames:
        return []
    root = tree.frames[0]
    root_probe = pset.probe(root.probe_id)
    trace_id = f"{ctx.host}:{ctx.boot_id}:{tree.tid}:{root.ts_ns}"
    start = root.ts_ns + ctx.wall_minus_mono_ns
    meta = [{"key": k, "value": str(v)} for k, v in sorted((metadata or {}).items())] or None
    rows = []
    for seq, fr in enumerate(tree.frames):
        probe = pset.probe(fr.probe_id)
        rows.append({
            "trace_id": trace_id, "seq": seq, "ts_ns": fr.ts_ns, "pid": tree.pid, "tid": tree.tid,
            "ppid": tree.ppid, "comm": tree.comm, "probe": probe.symbol, "layer": probe.layer,
            "depth": fr.depth, "ret": fr.ret, "errno": frame_errno(probe.ret, fr.ret, fr.failed),
            "latency_ns": fr.latency_ns, "path": None, "arg": None,
            "kind": tree.kind, "command": root_probe.operation or root_probe.symbol,
            "exit_status": _clip32(root.ret), "start_time": start, "end_time": start + root.latency_ns,
            "host": ctx.host, "kernel_release": ctx.kernel_release, "lost_events": tree.truncated,
            "job_id": job_id, "metadata": meta,
        })
    return rows


def counter_rows(delta: Counters, pset: ProbeSet, live: set[str], ctx: HostContext,
                 snapshot_time_ns: int, interval_s: float) -> list[dict]:
    rows = []
    for p in pset.probes:
        c = delta.probes.get(p.id, ProbeCounts())
        rows.append({
            "host": ctx.host, "snapshot_time": snapshot_time_ns, "interval_s": interval_s,
            "kernel_release": ctx.kernel_release, "vendor": pset.vendor, "probe_set": pset.name,
            "probe": p.symbol, "layer": p.layer, "live": p.symbol in live,
            "invocations": c.invocations, "failures": c.failures,
            "errno_counts": [{"errno": k, "count": v} for k, v in sorted(c.errnos.items())],
            "lost_records": delta.lost,
        })
    return rows
