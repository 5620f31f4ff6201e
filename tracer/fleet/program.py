"""The fleet tracer library: load bpf/calltree.c for a probe set, attach it, read call trees from
the ring buffer, read the per-CPU counters as exact deltas, and turn both into the shared
`events` / `counters` tables (tracer/schema.py).

One `FleetProgram` per probe set. The kernel side is specialised with -D flags only:
ATTACH_UPROBE / ATTACH_FEXIT / ATTACH_SYSCALLS and PROBES=P(id,symbol)... (see calltree.c).

Times in records: a tree whose root entered while a capture window was open is *timed* (every
frame has its entry time and latency, bpf_ktime_get_ns). Outside capture windows the kernel
takes no timestamp on the success path, and a failure record carries only the tick (jiffy) its
root returned in: `poll_batch` converts it to the monotonic clock (the start of that tick,
resolution one tick: 4 ms at HZ=250), every frame's `ts_ns` is that time and `latency_ns` is
null (unknown, never a fake 0).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import secrets
import select
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracer import resources
from tracer.btf import BTF_STRUCT, VMLINUX_BTF, btf_sections, btf_types
from tracer.errnos import errno_name
from tracer.errors import EnvironmentProblem, TracebaseError
from tracer.fleet.config import (  # the defaults and HostContext: light, for the CLI's checks
    DEFAULT_EXAMPLES,
    DEFAULT_LATENCY_BOUND_NS,
    DEFAULT_RINGBUF_KB,
    DEFAULT_SAMPLE_EVERY,
    DEFAULT_SLOTS,
    MAX_EXAMPLES,
    HostContext,
)
from tracer.fleet.probes import (
    ProbeSet,
    ProbeStatus,
    check_probe_set,
    lockdown_mode,
    resolve_library,
    syscall_numbers,
)
from tracer.fleet.spool import events_table
from tracer.schema import EVENTS

BPF_DIR = resources.BPF_DIR
CALLTREE_C = BPF_DIR / "calltree.c"

# Layouts of struct record (header) / struct frame in calltree.c.
HEADER = np.dtype([("pid", "<u4"), ("tid", "<u4"), ("ppid", "<u4"), ("interval", "<u4"), ("kind", "u1"),
                   ("nframes", "u1"), ("open", "u1"), ("failed", "u1"), ("timed", "u1"), ("pad0", "u1"),
                   ("truncated", "<u2"), ("skipped_open", "<u2"), ("pad1", "<u2"), ("pad2", "<u4"),
                   ("path", "u1", (8,)), ("comm", "S16"), ("sig", "<u8"), ("time", "<u8"), ("seq", "<u8")])
FRAME = np.dtype([("ts", "<u8"), ("latency", "<u8"), ("ret", "<i8"), ("probe", "<u2"), ("depth", "u1"),
                  ("failed", "u1"), ("pad", "<u4")])
HEADER_SIZE, FRAME_SIZE = HEADER.itemsize, FRAME.itemsize  # 80, 32
ERRNO_BUCKETS = 136
HEALTH_LOST, HEALTH_EMITTED, HEALTH_TRUNCATED, HEALTH_ORPHAN, HEALTH_DEFERRED, HEALTH_COLLIDED = range(6)
HEALTH_SLOTS = 6
MAX_SIGNATURES = 8192  # distinct failure signatures the kernel aggregates per two intervals
KINDS = {1: "failure", 2: "good"}
_ATTACH_DEFINE = {"uprobe": "-DATTACH_UPROBE", "fexit": "-DATTACH_FEXIT", "syscalls": "-DATTACH_SYSCALLS"}

# Descriptors a daemon holds (counted in /proc/PID/fd of `tracer run syscalls`: 15 maps, the
# BTF, 3 programs and 2 links per set; a uprobe or fexit probe adds an entry and a return
# program, each with its link or perf event), and its own: stdio, /dev/null, the writer lock,
# pipes, a snapshot's temporary and directory. Measured: the syscalls set runs from a limit of
# 30 and fails at 28 (its first snapshot's write), 24 (attach) and 16-20 (bcc's map creation).
RUN_BASE_FILES = 16
SET_FILES = 20
SYSCALL_PROGRAM_FILES = 6
PER_PROBE_FILES = 4


def open_files_needed(sets: Sequence[ProbeSet]) -> int:
    """The open files `tracer run` needs for these probe sets (see RUN_BASE_FILES)."""
    return RUN_BASE_FILES + sum(
        SET_FILES + (SYSCALL_PROGRAM_FILES if s.attach == "syscalls" else PER_PROBE_FILES * len(s.probes))
        for s in sets)


def bucket_errno(bucket: int) -> str:
    """Name of an errno-histogram bucket of calltree.c."""
    if bucket == 0:
        return "UNKNOWN"  # failed without an errno (NULL pointer, positive non-errno value)
    if bucket == 134:
        return "EKERNEL"  # kernel-internal codes 512..530 (ERESTARTSYS, ENOTSUPP, ...)
    if bucket == 135:
        return "EOTHER"
    return errno_name(-bucket) or f"E{bucket}"


def btf_member_offsets(path: Path, struct_name: str, members: tuple[str, ...]) -> dict[str, int] | None:
    """Byte offsets of `members` of `struct_name` in a BTF blob, or None when any is missing."""
    types, strings = btf_sections(path.read_bytes())
    wanted = struct_name.encode() + b"\0"
    for off, name_off, info, kind, vlen in btf_types(types):
        if kind == BTF_STRUCT and strings.startswith(wanted, name_off):
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
    and a faulting bpf_probe_read_kernel cost ~1 us per record; comm is read the same way
    (bpf_get_current_comm costs ~70 ns here). Without BTF, calltree.c falls back to the
    headers' offsets and the helper."""
    try:
        offsets = btf_member_offsets(VMLINUX_BTF, "task_struct", ("real_parent", "tgid", "pid", "comm", "stack"))
    except (OSError, ValueError, struct.error):
        return ()
    if not offsets:
        return ()
    return (f"-DTASK_REAL_PARENT_OFF={offsets['real_parent']}", f"-DTASK_TGID_OFF={offsets['tgid']}",
            f"-DTASK_PID_OFF={offsets['pid']}", f"-DTASK_COMM_OFF={offsets['comm']}",
            f"-DTASK_STACK_OFF={offsets['stack']}")


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
    ts_ns: int  # entry time (timed trees), else the time the tree's root returned
    latency_ns: int | None  # None: not measured (tree outside a capture window)
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
    sig: int = 0  # failure signature hashed in the kernel (0: good trace, or not aggregated)
    interval: int = 0  # snapshot interval the tree ended in
    timed: bool = True  # frames carry entry times and latencies (root entered in a capture window)
    seq: int = 0  # record number (unique per program instance)


@dataclass
class Batch:
    """Records as the ring buffer delivered them, decoded in bulk: one HEADER row per record and
    all their frames in one FRAME array (`owner` = record index of each frame)."""

    head: np.ndarray
    frames: np.ndarray
    owner: np.ndarray

    def __len__(self) -> int:
        return len(self.head)

    @classmethod
    def empty(cls) -> Batch:
        return cls(np.zeros(0, HEADER), np.zeros(0, FRAME), np.zeros(0, np.int64))

    @classmethod
    def concat(cls, batches: list[Batch]) -> Batch:
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        offsets = np.cumsum([0] + [len(b) for b in batches[:-1]])
        return cls(np.concatenate([b.head for b in batches]), np.concatenate([b.frames for b in batches]),
                   np.concatenate([b.owner + off for b, off in zip(batches, offsets, strict=True)]))

    def select(self, keep: np.ndarray) -> Batch:
        """The records where `keep` (bool per record) is set."""
        index = np.cumsum(keep) - 1
        fkeep = keep[self.owner]
        return Batch(self.head[keep], self.frames[fkeep], index[self.owner[fkeep]])

    def trees(self) -> list[CallTree]:
        """Python objects for each record (for tests and small batches; tables use the arrays)."""
        ts, latency = frame_times(self)
        frames = [Frame(int(f["probe"]), int(f["depth"]), int(t), None if lat < 0 else int(lat), int(f["ret"]),
                        bool(f["failed"])) for f, t, lat in zip(self.frames, ts.tolist(), latency.tolist(), strict=True)]
        starts = np.searchsorted(self.owner, np.arange(len(self.head) + 1))
        out = []
        for i, h in enumerate(self.head):
            out.append(CallTree(KINDS.get(int(h["kind"]), "failure"), int(h["pid"]), int(h["tid"]), int(h["ppid"]),
                                h["comm"].split(b"\0", 1)[0].decode(errors="replace"),
                                frames[starts[i]:starts[i + 1]], int(h["truncated"]), int(h["sig"]),
                                int(h["interval"]), bool(h["timed"]), int(h["seq"])))
        return out


def frame_times(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: entry time (ns, monotonic) and latency (ns, -1 = unknown). Frames of untimed
    trees carry neither: their time is the record's `time` (the tick its root returned in,
    converted by FleetProgram.poll_batch) and their latency is unknown."""
    timed = batch.head["timed"].astype(bool)[batch.owner]
    rec_time = batch.head["time"].astype(np.int64)[batch.owner]
    ts = np.where(timed, batch.frames["ts"].astype(np.int64), rec_time)
    latency = np.where(timed, batch.frames["latency"].astype(np.int64), -1)
    return ts, latency


def decode_batch(raw: bytes, offsets: np.ndarray, lengths: np.ndarray) -> Batch:
    """Decode the records at `offsets` (each `lengths` bytes) of one buffer with numpy gathers:
    no per-record Python work."""
    buf = np.frombuffer(raw, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    lengths = np.asarray(lengths, np.int64)
    whole = lengths >= HEADER_SIZE
    offsets, lengths = offsets[whole], lengths[whole]
    if not len(offsets):
        return Batch.empty()
    head = buf[offsets[:, None] + np.arange(HEADER_SIZE)].view(HEADER).reshape(-1)
    nframes = np.minimum(head["nframes"].astype(np.int64), (lengths - HEADER_SIZE) // FRAME_SIZE)
    owner = np.repeat(np.arange(len(head)), nframes)
    first = np.cumsum(nframes) - nframes
    within = np.arange(len(owner)) - first[owner]
    starts = offsets[owner] + HEADER_SIZE + within * FRAME_SIZE
    frames = buf[starts[:, None] + np.arange(FRAME_SIZE)].view(FRAME).reshape(-1)
    return Batch(head, frames, owner)


def decode_tree(data: bytes) -> CallTree:
    batch = decode_batch(data, np.array([0]), np.array([len(data)]))
    if not len(batch):
        raise ValueError(f"call-tree record: expected at least {HEADER_SIZE} bytes, found {len(data)}")
    return batch.trees()[0]


class RingReader:
    """Bulk consumer of a BPF ring buffer map: maps it like libbpf does (consumer page read-write,
    producer page and the data area twice, so records that wrap are contiguous) and takes every
    committed record in one pass: one copy of the span, a header walk, then numpy decoding.
    bcc's consumer calls back into Python once per record (ctypes), which dominated storms."""

    BUSY = 1 << 31
    DISCARD = 1 << 30
    HDR = 8
    # calltree.c uses the kernel's adaptive wake-up: the first record after the reader emptied
    # the ring wakes it (an irq_work: ~2 us on a VM). Draining at most every MIN_GAP_S bounds
    # the wake-ups to 1/MIN_GAP_S per second; 256 KiB hold ~25 ms of a 50k records/s storm.
    MIN_GAP_S = 0.005

    def __init__(self, map_fd: int, data_size: int):
        page = mmap.PAGESIZE
        self.size = data_size
        self._consumer = mmap.mmap(map_fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        self._producer = mmap.mmap(map_fd, page + 2 * data_size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        self._data = memoryview(self._producer)[page:]
        self._poller = select.poll()
        self._poller.register(map_fd, select.POLLIN)
        self._last_consume = 0.0

    def wait(self, timeout_ms: int) -> None:
        """Until a record is available or timeout_ms passed, but not sooner than MIN_GAP_S after
        the last consume (so the kernel's wake-ups stay few in a storm)."""
        gap = self._last_consume + self.MIN_GAP_S - time.monotonic()
        if gap > 0:
            nap = min(gap, timeout_ms / 1000)
            time.sleep(nap)
            timeout_ms = max(0, timeout_ms - int(nap * 1000))
        self._poller.poll(timeout_ms)

    def consume(self) -> Batch:
        self._last_consume = time.monotonic()
        cons = struct.unpack_from("<Q", self._consumer, 0)[0]
        prod = struct.unpack_from("<Q", self._producer, 0)[0]
        if prod == cons:
            return Batch.empty()
        start = cons & (self.size - 1)
        # Header before data in memory: a header read as committed has its data complete (x86 TSO).
        raw = bytes(self._data[start:start + (prod - cons)])
        offsets, lengths = [], []
        pos, end = 0, len(raw)
        unpack = struct.Struct("<I").unpack_from
        while pos < end:
            (word,) = unpack(raw, pos)
            if word & self.BUSY:
                break  # reserved, not yet submitted: the next call takes it
            length = word & ~(self.BUSY | self.DISCARD)
            if not word & self.DISCARD:
                offsets.append(pos + self.HDR)
                lengths.append(length)
            pos += (length + self.HDR + 7) & ~7
        struct.pack_into("<Q", self._consumer, 0, cons + pos)
        return decode_batch(raw, np.array(offsets, np.int64), np.array(lengths, np.int64))

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError, OSError):  # cleanup never raises
            self._data.release()
            self._producer.close()
            self._consumer.close()


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
    deferred: int = 0  # failing trees counted as repeats because the ring buffer was full
    collided: int = 0  # trees kept in task storage because another thread held their slot

    def minus(self, before: Counters | None) -> Counters:
        return self._combine(before, -1)

    def plus(self, other: Counters | None) -> Counters:
        return self._combine(other, 1)

    def _combine(self, other: Counters | None, sign: int) -> Counters:
        if other is None:
            return self
        probes = {}
        for pid in self.probes.keys() | other.probes.keys():
            now, old = self.probes.get(pid, ProbeCounts()), other.probes.get(pid, ProbeCounts())
            errnos = {k: now.errnos.get(k, 0) + sign * old.errnos.get(k, 0) for k in now.errnos.keys() | old.errnos.keys()}
            probes[pid] = ProbeCounts(now.invocations + sign * old.invocations, now.failures + sign * old.failures,
                                      {k: v for k, v in errnos.items() if v})
        return Counters(probes, self.lost + sign * other.lost, self.emitted + sign * other.emitted,
                        self.truncated + sign * other.truncated, self.orphans + sign * other.orphans,
                        self.deferred + sign * other.deferred, self.collided + sign * other.collided)


@dataclass
class Interval:
    """One closed snapshot interval of a program (FleetProgram.rotate)."""

    number: int
    counters: Counters  # exact deltas of the interval
    repeats: dict[int, int]  # failure signature -> failing trees counted beyond its examples


@dataclass
class AttachResult:
    probe: str
    live: bool
    reason: str | None = None


def _rcu_grace() -> None:
    """Wait until every BPF program run that started before now has finished. Non-sleepable
    BPF programs run inside RCU read-side sections, so an RCU grace period (membarrier's
    MEMBARRIER_CMD_GLOBAL is synchronize_rcu()) covers them; a short sleep otherwise."""
    try:
        if _libc().syscall(324, 1, 0, 0) == 0:  # SYS_membarrier (x86_64), MEMBARRIER_CMD_GLOBAL
            return
    except (OSError, AttributeError):
        pass
    time.sleep(0.01)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


_SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine, 321)
_BPF_PROG_TEST_RUN = 10
_CLOCK_MONOTONIC_COARSE = 6


def prog_test_run(prog_fd: int) -> None:
    """Run a raw-tracepoint program once (BPF_PROG_TEST_RUN) with an empty context."""
    attr = ctypes.create_string_buffer(80)  # union bpf_attr, the `test` member
    ctx = ctypes.create_string_buffer(8)
    struct.pack_into("<I", attr, 0, prog_fd)
    struct.pack_into("<I", attr, 40, ctypes.sizeof(ctx))  # ctx_size_in
    struct.pack_into("<Q", attr, 48, ctypes.addressof(ctx))  # ctx_in
    if _libc().syscall(_SYS_BPF, _BPF_PROG_TEST_RUN, attr, ctypes.sizeof(attr)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class TickClock:
    """bpf_jiffies64() values -> the monotonic clock. Jiffies advance by exactly one tick of
    the monotonic clock each (the timekeeping code advances them from it), so the start of tick
    J is start(J0) + (J - J0) * tick; each (jiffies, ktime) pair read together in the kernel
    bounds start(J0) from above, and the smallest bound is kept. A converted time is the start
    of the tick the event happened in (resolution one tick: 4 ms at HZ=250; a tick or two late
    when the jiffies update itself ran late)."""

    def __init__(self, tick_ns: int | None = None):
        if tick_ns is None:
            tick_ns = round(time.clock_getres(_CLOCK_MONOTONIC_COARSE) * 1e9)
        self.tick_ns = tick_ns
        self.j0: int | None = None
        self.start0: int | None = None

    @property
    def calibrated(self) -> bool:
        return self.start0 is not None

    def add(self, jiffies: int, ktime_ns: int) -> None:
        if self.j0 is None:
            self.j0 = jiffies
        bound = ktime_ns - (jiffies - self.j0) * self.tick_ns
        self.start0 = bound if self.start0 is None else min(self.start0, bound)

    def to_ns(self, jiffies: np.ndarray) -> np.ndarray:
        if self.start0 is None:  # never calibrated: the time it was read (never here in practice)
            return np.full(len(jiffies), time.monotonic_ns(), np.int64)
        return self.start0 + (jiffies.astype(np.int64) - self.j0) * self.tick_ns


def maps_file(path: str | None) -> bool:
    """Whether this process has `path` mapped (the same inode: uprobes hook the file)."""
    if not path:
        return False
    try:
        st = os.stat(path)
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return True  # unknown: assume it is (exclusion costs a helper call per tree, nothing else)
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[4] == str(st.st_ino) and fields[5].startswith("/"):
            with contextlib.suppress(OSError):
                other = os.stat(fields[5])
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
    return False


# The load-time check of the uprobe slot key (calltree.c regs_check_hit): a uprobe and a
# uretprobe on this libc function, in this process only, hit from two threads.
REGS_CHECK_LIBRARY, REGS_CHECK_SYMBOL = "c", "getpid"
REGS_CHECK_CALLS = (2, 1)  # calls from a new thread, then from the calling thread


@dataclass
class KeyCheck:
    """How the uprobe program keys its per-thread slots, and why."""

    regs: bool  # by the address of the thread's saved user registers (else by tid)
    hits: int = 0  # check runs (uprobe + uretprobe)
    mismatches: int = 0  # runs whose ctx was not task_pt_regs(current)
    regs_off: int = 0  # task_pt_regs - task->stack
    reason: str = ""

    def note(self) -> str:
        if self.regs:
            return (f"slots keyed by the saved-registers address (checked: {self.hits} uprobe runs in 2 threads, "
                    "ctx == task_pt_regs)")
        return f"slots keyed by tid ({self.reason})"


# --------------------------------------------------------------------------------------------
# the program
# --------------------------------------------------------------------------------------------
def _bcc():
    from tracer.privilege import load_bcc

    return load_bcc()


def _quiet_bpf_class():
    bcc = _bcc()

    class QuietBPF(bcc.BPF):
        """bcc attaches kfunc__/raw_tracepoint__ functions at construction; we attach ourselves,
        probe by probe, so that compiling never loads anything and failures name the probe."""

        def _trace_autoload(self) -> None:
            return None

    return QuietBPF


class FleetProgram:
    """calltree.c compiled for one probe set.

    Data plane: poll()/poll_batch() return the records that arrived. Control plane: rotate()
    closes the current snapshot interval and returns its exact counter deltas and the repeat
    counts of its failure signatures; every record of that interval is readable by the next
    poll (records carry their interval number)."""

    def __init__(
        self,
        probe_set: ProbeSet,
        *,
        ringbuf_kb: int = DEFAULT_RINGBUF_KB,
        sample_every: int = DEFAULT_SAMPLE_EVERY,
        latency_bound_ns: int = DEFAULT_LATENCY_BOUND_NS,
        target_pid: int = 0,
        failures_only: bool = False,
        examples: int = DEFAULT_EXAMPLES,
        slots: int = DEFAULT_SLOTS,
        regs_key: bool = True,
    ):
        if sample_every < 1:
            raise TracebaseError(f"--sample: expected a positive integer N (1 in N), found {sample_every}")
        if latency_bound_ns <= 0:
            raise TracebaseError(f"--latency-bound: expected a positive duration, found {latency_bound_ns} ns")
        if not 1 <= examples <= MAX_EXAMPLES:
            raise TracebaseError(f"--examples: expected 1..{MAX_EXAMPLES} full call trees per signature, found {examples}")
        if slots < 1 or slots & (slots - 1):
            raise TracebaseError(f"slots: expected a power of two, found {slots}")
        self.probe_set = probe_set
        self.ringbuf_pages = ringbuf_pages(ringbuf_kb)
        self.sample_every = sample_every
        self.latency_bound_ns = latency_bound_ns
        self.target_pid = target_pid
        self.failures_only = failures_only
        self.examples = examples
        self.slots = slots
        # uprobes: key slots by the saved-registers address if the load-time check agrees
        # (regs_key=False: by tid, no check); key_check says what was decided
        self.regs_key = regs_key
        self.key_check: KeyCheck | None = None
        self.thread_exit_hook = False
        self.clock = TickClock()
        self._clock_fd: int | None = None
        self.bpf = None
        self.attach_results: list[AttachResult] = []
        self._ring: RingReader | None = None
        self._capture_open = False
        self._interval = 0
        self._gen_seen: list[Counters | None] = [None, None]
        self._totals: Counters | None = None

    # ---- build ----------------------------------------------------------------------------
    def cflags(self) -> list[str]:
        # Static settings are compile-time constants; what changes at run time lives in maps.
        flags = [_ATTACH_DEFINE[self.probe_set.attach], f"-DMAX_PROBES={len(self.probe_set.probes)}",
                 f"-DRINGBUF_PAGES={self.ringbuf_pages}", f"-DAGG_EXAMPLES={self.examples}",
                 f"-DMAX_SIGNATURES={MAX_SIGNATURES}", f"-DSLOTS={self.slots}",
                 f"-DEXCLUDE_TGID={self.excluded_tgid()}", *task_offset_flags()]
        if self.probe_set.attach == "uprobe" and not self.regs_key:
            flags.append("-DNO_REGS_KEY")
        if os.uname().machine == "x86_64":  # stores are not reordered: a plain store releases a slot
            flags.append("-DRELEASE_STORE")
        if self.probe_set.attach != "syscalls":
            flags.append("-DPROBES=" + "".join(f"P({p.id},{p.symbol},{p.ret_kind})" for p in self.probe_set.probes))
        return flags

    def excluded_tgid(self) -> int:
        """The tracer's own process is never traced (its syscalls would feed back). A uprobe set's
        library the tracer has not mapped cannot be hit by it: 0, and a tree's root reads no tgid
        (a helper call) unless -p filters."""
        if self.probe_set.attach == "uprobe" and not maps_file(resolve_library(self.probe_set.library or "")):
            return 0
        return os.getpid()

    def compile(self) -> FleetProgram:
        """Compile only (nothing is loaded into the kernel until attach)."""
        from tracer.privilege import compiler_environment

        bpf_class = _quiet_bpf_class()
        try:
            with compiler_environment():
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
        self._seed_record_numbers()
        if self._ring is None:
            self._ring = RingReader(self.bpf[b"events"].map_fd, self.ringbuf_pages * mmap.PAGESIZE)
        self._calibrate_clock(8)

    def _seed_record_numbers(self) -> None:
        """Record numbers count per CPU from a random 62-bit start, so they identify a record
        across CPUs, programs and restarts (trace ids)."""
        table = self.bpf[b"rec_seq"]
        table[ctypes.c_int(0)] = table.Leaf(*(secrets.randbits(62) for _ in range(table.total_cpu)))

    def _calibrate_clock(self, samples: int) -> None:
        """Pairs of (bpf_jiffies64, bpf_ktime_get_ns) read by clock_sync, spread over ticks."""
        try:
            if self._clock_fd is None:
                self._clock_fd = self.bpf.load_func(b"clock_sync", _bcc().BPF.RAW_TRACEPOINT).fd
            table = self.bpf[b"clock"]
            for i in range(samples):
                if i:
                    time.sleep(self.clock.tick_ns * 0.37e-9)  # another phase of the tick
                prog_test_run(self._clock_fd)
                pair = table[ctypes.c_int(0)]
                self.clock.add(int(pair.jiffies), int(pair.ktime))
        except Exception:  # noqa: BLE001 - OSError, or bcc's bare Exception: records then carry the read time
            return

    def _write_probe_conf(self) -> None:
        conf = self.bpf[b"probe_conf"]
        for p in self.probe_set.probes:
            value = conf.Leaf()
            value.sample_every = self.sample_every
            conf[ctypes.c_int(p.id)] = value

    def _write_settings(self) -> None:
        table = self.bpf[b"settings"]
        value = table.Leaf()
        value.capture_open = int(self._capture_open)
        value.target_tgid = self.target_pid
        value.latency_bound_ns = self.latency_bound_ns
        value.failures_only = int(self.failures_only)
        value.interval = self._interval & 0xFFFFFFFF
        if self.key_check is not None and self.key_check.regs:
            value.regs_off = self.key_check.regs_off
        table[ctypes.c_int(0)] = value

    # ---- attach ---------------------------------------------------------------------------
    def attach(self, best_effort: bool = False) -> list[AttachResult]:
        """Attach every probe; a probe that can't attach raises unless best_effort."""
        from tracer.privilege import ensure_tracefs

        ensure_tracefs()  # bcc removes probes through tracefs at close: without it, close fails
        if self.bpf is None:
            self.compile()
        if "regs_check_hit" in self.function_names():
            self.key_check = self.check_regs_key()
            if not self.key_check.regs:  # tid keys: a helper call per frame, trees still exact
                self._release()
                self.regs_key = False
                self.compile()
        elif self.probe_set.attach == "uprobe":
            self.key_check = KeyCheck(False, reason="tid keys asked for" if not self.regs_key
                                      else "no task_struct offsets from BTF")
        self._configure()
        statuses = {s.probe: s for s in check_probe_set(self.probe_set)}
        results = []
        if self.probe_set.attach == "syscalls":
            results = self._attach_syscalls(statuses)
        else:
            for p in self.probe_set.probes:
                results.append(self._attach_one(p.symbol, statuses.get(p.symbol)))
        self.attach_results = results
        if any(r.live for r in results) and self.probe_set.attach != "syscalls":
            self._attach_thread_exit()
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
        self._totals = self._zero_counters()
        return results

    def check_regs_key(self) -> KeyCheck:
        """Slots keyed by a uprobe's ctx assume it is the thread's saved user registers
        (task_pt_regs(current): unique per live thread; true on x86-64 and arm64, where the
        breakpoint and the return trampoline save them there). Checked here, once, before any
        probe is attached: regs_check_hit runs on a uprobe and a uretprobe of libc's getpid in
        this process only (the breakpoint is installed in no other process), called from a new
        thread and from this one, and compares ctx with bpf_task_pt_regs(current) at every run.
        Any mismatch, too few runs or a check that cannot run: tid keys."""
        bpf, fn, pid = self.bpf, b"regs_check_hit", os.getpid()
        lib, sym = REGS_CHECK_LIBRARY.encode(), REGS_CHECK_SYMBOL.encode()
        try:
            bpf.attach_uprobe(name=lib, sym=sym, fn_name=fn, pid=pid)
            bpf.attach_uretprobe(name=lib, sym=sym, fn_name=fn, pid=pid)
        except Exception as exc:  # noqa: BLE001 - bcc raises bare Exception
            with contextlib.suppress(Exception):
                bpf.detach_uprobe(name=lib, sym=sym, pid=pid)
            return KeyCheck(False, reason=f"the key check could not attach to lib{REGS_CHECK_LIBRARY} "
                                          f"{REGS_CHECK_SYMBOL}: {exc}")
        try:
            call = getattr(_libc(), REGS_CHECK_SYMBOL)
            in_thread, here = REGS_CHECK_CALLS
            worker = threading.Thread(target=lambda: [call() for _ in range(in_thread)], name="tracer-key-check")
            worker.start()
            worker.join()
            for _ in range(here):
                call()
        finally:
            for detach in (bpf.detach_uprobe, bpf.detach_uretprobe):
                with contextlib.suppress(Exception):
                    detach(name=lib, sym=sym, pid=pid)
        seen = bpf[b"regs_check"][ctypes.c_int(0)]
        check = KeyCheck(True, int(seen.hits), int(seen.mismatches), int(seen.regs_off))
        wanted = 2 * sum(REGS_CHECK_CALLS)
        if check.mismatches:
            check.regs, check.reason = False, (f"a uprobe's ctx was not the thread's saved registers in "
                                               f"{check.mismatches} of {check.hits} check runs")
        elif check.hits < wanted or check.regs_off <= 0:
            check.regs, check.reason = False, f"the key check ran {check.hits} times, expected {wanted}"
        return check

    def _release(self) -> None:
        """Unload the compiled program (before a recompile)."""
        from tracer.privilege import release_bpf

        if self._ring is not None:
            self._ring.close()
            self._ring = None
        self._clock_fd = None
        bpf, self.bpf = self.bpf, None
        if bpf is not None:
            release_bpf(bpf)

    def _attach_thread_exit(self) -> None:
        """The thread-exit hook frees the slot of a thread that died inside a traced call;
        without it (never seen refused where raw tracepoints work) such a slot stays taken and
        threads hashed to it keep their trees in task storage (slower, still exact)."""
        try:
            self.bpf.attach_raw_tracepoint(tp=b"sched_process_exit", fn_name=b"raw_tracepoint__sched_process_exit")
            self.thread_exit_hook = True
        except Exception:  # noqa: BLE001 - bcc raises bare Exception
            self.thread_exit_hook = False

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

    @property
    def interval(self) -> int:
        """The snapshot interval records are currently counted in."""
        return self._interval

    # ---- data plane -----------------------------------------------------------------------
    def wait(self, timeout_ms: int) -> None:
        """Until a record is available or timeout_ms passed (consumes nothing)."""
        if timeout_ms > 0:
            self._ring.wait(timeout_ms)

    def poll_batch(self, timeout_ms: int = 0) -> Batch:
        """Every record that arrived since the last poll (waits up to timeout_ms for the first).
        Untimed records' tick times are converted to the monotonic clock here."""
        if timeout_ms > 0:
            self._ring.wait(timeout_ms)
        batch = self._ring.consume()
        untimed = batch.head["timed"] == 0
        if untimed.any():
            batch.head["time"][untimed] = self.clock.to_ns(batch.head["time"][untimed])
        return batch

    def poll(self, timeout_ms: int = 0) -> list[CallTree]:
        """Call trees that arrived since the last poll (waits up to timeout_ms for the first)."""
        return self.poll_batch(timeout_ms).trees()

    # ---- control plane --------------------------------------------------------------------
    def _zero_counters(self) -> Counters:
        return Counters({p.id: ProbeCounts() for p in self.probe_set.probes}, 0, 0, 0, 0, 0, 0)

    def _read_generation(self, gen: int) -> Counters:
        """Cumulative counters of one generation (interval parity), summed over CPUs."""
        counts = self.bpf[b"counts"]
        base = gen * len(self.probe_set.probes)
        calls = [list(v.n) for v in self.bpf[b"calls"][ctypes.c_int(0)]]  # per CPU: [generation][probe]
        probes = {}
        for p in self.probe_set.probes:
            per_cpu = counts[ctypes.c_int(base + p.id)]
            inv = sum(cpu[base + p.id] for cpu in calls)
            fails = sum(v.failures for v in per_cpu)
            errnos = {}
            if fails:
                for bucket in range(ERRNO_BUCKETS):
                    n = sum(v.errnos[bucket] for v in per_cpu)
                    if n:
                        errnos[bucket_errno(bucket)] = n
            probes[p.id] = ProbeCounts(inv, fails, errnos)
        health = self.bpf[b"health"]
        slots = [sum(health[ctypes.c_int(gen * HEALTH_SLOTS + i)]) for i in range(HEALTH_SLOTS)]
        return Counters(probes, slots[HEALTH_LOST], slots[HEALTH_EMITTED], slots[HEALTH_TRUNCATED],
                        slots[HEALTH_ORPHAN], slots[HEALTH_DEFERRED], slots[HEALTH_COLLIDED])

    def _take_repeats(self, gen: int) -> dict[int, int]:
        """Repeat counts of the closed generation's signatures; their entries are deleted so the
        generation starts empty (fresh examples) when it comes round again."""
        table = self.bpf[b"sigs"]
        repeats: dict[int, int] = {}
        closed = [(k, v) for k, v in table.items() if k.gen == gen]
        for key, value in closed:
            if value.repeats:
                repeats[key.sig] = repeats.get(key.sig, 0) + value.repeats
            with contextlib.suppress(KeyError):  # gone already: nothing to delete
                del table[key]
        return repeats

    def rotate(self) -> Interval:
        """Close the current snapshot interval: later calls count in the next one; once every
        program run that could still write the closed interval has finished, read its counters
        (exact deltas) and its signatures' repeat counts. Poll afterwards for its last records.

        Counters are cumulative per generation and never zeroed: a read subtracts the previous
        read of the same generation, so an increment can never fall between a read and a reset."""
        closed = self._interval
        gen = closed & 1
        self._interval += 1
        self._write_settings()
        self._calibrate_clock(1)  # one more bound per interval: the estimate only tightens
        _rcu_grace()
        now = self._read_generation(gen)
        delta = now.minus(self._gen_seen[gen])
        self._gen_seen[gen] = now
        self._totals = delta.plus(self._totals)
        return Interval(closed, delta, self._take_repeats(gen))

    def read_deltas(self) -> Counters:
        """Counters since the previous call (closes the interval: see rotate)."""
        return self.rotate().counters

    def read_totals(self) -> Counters:
        """Counters since attach (both generations, read now)."""
        return self._read_generation(0).plus(self._read_generation(1))

    @property
    def totals(self) -> Counters | None:
        """Counter totals as of the last rotate()."""
        return self._totals

    def prog_fds(self) -> dict[str, int]:
        """Loaded BPF program fds by function name (for bpf_stats in the bench)."""
        return {name.decode() if isinstance(name, bytes) else name: fn.fd for name, fn in self.bpf.funcs.items()}

    def close(self) -> list[str]:
        """Detach and free everything; never raises (returns what could not be detached)."""
        from tracer.privilege import release_bpf

        if self._ring is not None:
            self._ring.close()
            self._ring = None
        bpf, self.bpf = self.bpf, None
        return release_bpf(bpf) if bpf is not None else []


def assign_repeats(batch: Batch, closed: Interval) -> tuple[np.ndarray, int]:
    """repeat_count of each record of `closed` (its interval's records) and the failing trees
    no record stands for (`lost`).

    Every failure example stands for itself; the first example of a signature also stands for
    the trees of that signature counted in the kernel, so the sum over examples equals the
    failing trees of the interval. Good traces: null (-1 here). A signature counted with no
    example (all its records met a full ring buffer) adds to `lost`, with HEALTH_LOST."""
    head = batch.head
    repeat = np.where(head["kind"] == 1, 1, -1).astype(np.int64)
    lost = closed.counters.lost
    if not closed.repeats:
        return repeat, lost
    sigs = head["sig"]
    failing = np.flatnonzero((head["kind"] == 1) & (sigs != 0))
    uniq, first = np.unique(sigs[failing], return_index=True)
    where = dict(zip(uniq.tolist(), failing[first].tolist(), strict=True))
    for sig, extra in closed.repeats.items():
        row = where.get(sig)
        if row is None:
            lost += extra
        else:
            repeat[row] += extra
    return repeat, lost


# --------------------------------------------------------------------------------------------
# rows of the shared tables
# --------------------------------------------------------------------------------------------
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
              metadata: dict[str, str] | None = None, repeat_count: int | None = None) -> list[dict]:
    """One events row per frame, root first (the call order the program recorded)."""
    if not tree.frames:
        return []
    root = tree.frames[0]
    root_probe = pset.probe(root.probe_id)
    trace_id = f"{ctx.host}:{ctx.boot_id}:{tree.tid}:{tree.seq}"
    start = root.ts_ns + ctx.wall_minus_mono_ns
    end = start + (root.latency_ns or 0)  # untimed: the tick the root returned in, start = end
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
            "exit_status": _clip32(root.ret), "start_time": start, "end_time": end,
            "host": ctx.host, "kernel_release": ctx.kernel_release, "lost_events": tree.truncated,
            "job_id": job_id, "metadata": meta, "repeat_count": repeat_count,
        })
    return rows


def _probe_lookup(pset: ProbeSet) -> tuple[np.ndarray, ...]:
    """Per probe id: symbol, layer, command (operation), errno name per errno value -> arrays."""
    n = max((p.id for p in pset.probes), default=-1) + 1
    symbol, layer, command, ret = (np.full(n, None, object) for _ in range(4))
    for p in pset.probes:
        symbol[p.id], layer[p.id], command[p.id], ret[p.id] = p.symbol, p.layer, p.operation or p.symbol, p.ret
    return symbol, layer, command, ret


# (pa.array on numpy object arrays imports pandas: ~1 s at the daemon's first snapshot; lists
# of Python strings convert directly.)
def events_from_batch(batch: Batch, pset: ProbeSet, ctx: HostContext, job_ids: list[str | None] | None = None,
                      metadata: list[dict[str, str] | None] | None = None,
                      repeat_count: np.ndarray | None = None) -> pa.Table:
    """The events table of a batch, built column by column (one row per frame, root first).
    Per record: job_ids/metadata (enrichment) and repeat_count (-1 = null)."""
    keep = np.bincount(batch.owner, minlength=len(batch)) > 0 if len(batch) else np.zeros(0, bool)
    if not keep.all():  # records without frames carry no call
        index = np.flatnonzero(keep)
        job_ids = [job_ids[i] for i in index] if job_ids is not None else None
        metadata = [metadata[i] for i in index] if metadata is not None else None
        repeat_count = repeat_count[index] if repeat_count is not None else None
        batch = batch.select(keep)
    n = len(batch)
    if n == 0:
        return events_table([])
    head, fr, owner = batch.head, batch.frames, batch.owner
    symbol, layer, command, ret_kind = _probe_lookup(pset)
    probe_ids = fr["probe"].astype(np.int64)
    first = np.searchsorted(owner, np.arange(n))
    seq = np.arange(len(fr)) - first[owner]
    root = fr[first]
    ret = fr["ret"]
    failed = fr["failed"].astype(bool)
    # errno names: a few distinct (probe kind, value) pairs, each named once
    errno_col = np.full(len(fr), None, object)
    if failed.any():
        kinds = ret_kind[probe_ids[failed]]
        vals = ret[failed]
        names = {}
        out = []
        for k, v in zip(kinds.tolist(), vals.tolist(), strict=True):
            key = (k, v)
            if key not in names:
                names[key] = frame_errno(k, v, True)
            out.append(names[key])
        errno_col[failed] = np.array(out, object)
    ts, latency = frame_times(batch)
    # timed: the root's entry and return; untimed: both the tick the root returned in
    start = ts[first] + ctx.wall_minus_mono_ns
    end = head["time"].astype(np.int64) + ctx.wall_minus_mono_ns
    tids = head["tid"].astype(np.int64)
    # the record number is unique per program instance (random start per CPU); tid for reading
    trace_ids = pc.binary_join_element_wise(
        pa.repeat(pa.scalar(f"{ctx.host}:{ctx.boot_id}", pa.string()), n),
        pc.cast(pa.array(tids), pa.string()), pc.cast(pa.array(head["seq"]), pa.string()), ":")
    comm = pa.array([c.split(b"\0", 1)[0].decode(errors="replace") for c in head["comm"].tolist()], pa.string())
    kind = pa.array(np.where(head["kind"] == 2, "good", "failure").tolist(), pa.string())
    meta_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    meta = pa.array([[{"key": k, "value": str(v)} for k, v in sorted(m.items())] or None if m else None
                     for m in (metadata or [None] * n)], meta_type)
    rc = pa.array(repeat_count if repeat_count is not None else np.full(n, -1, np.int64), pa.int64())
    rc = pc.if_else(pc.less(rc, 0), pa.scalar(None, pa.int64()), rc)
    take = pa.array(owner)
    per_record = {
        "trace_id": trace_ids, "pid": pa.array(head["pid"].astype(np.int32)), "tid": pa.array(tids.astype(np.int32)),
        "ppid": pa.array(head["ppid"].astype(np.int32)), "comm": comm, "kind": kind,
        "command": pa.array(command[root["probe"].astype(np.int64)].tolist(), pa.string()),
        "exit_status": pa.array(np.clip(root["ret"], -(2**31), 2**31 - 1).astype(np.int32)),
        "start_time": pa.array(start, pa.timestamp("ns", tz="UTC")),
        "end_time": pa.array(end, pa.timestamp("ns", tz="UTC")),
        "lost_events": pa.array(head["truncated"].astype(np.int64)),
        "job_id": pa.array(job_ids if job_ids is not None else [None] * n, pa.string()),
        "metadata": meta, "repeat_count": rc,
    }
    nrows = len(fr)
    columns = {name: col.take(take) for name, col in per_record.items()}
    columns.update({
        "seq": pa.array(seq.astype(np.int64)), "ts_ns": pa.array(ts),
        "probe": pa.array(symbol[probe_ids].tolist(), pa.string()),
        "layer": pa.array(layer[probe_ids].tolist(), pa.string()),
        "depth": pa.array(fr["depth"].astype(np.int16)), "ret": pa.array(ret.astype(np.int64)),
        "errno": pa.array(errno_col.tolist(), pa.string()), "latency_ns": pa.array(latency, mask=latency < 0),
        "host": pa.repeat(pa.scalar(ctx.host, pa.string()), nrows),
        "kernel_release": pa.repeat(pa.scalar(ctx.kernel_release, pa.string()), nrows),
    })
    arrays = [columns[f.name] if f.name in columns else pa.nulls(nrows, f.type) for f in EVENTS]
    return pa.Table.from_arrays(arrays, schema=EVENTS)


def counter_rows(delta: Counters, pset: ProbeSet, live: set[str], ctx: HostContext,
                 snapshot_time_ns: int, interval_s: float, lost: int | None = None) -> list[dict]:
    """Counter rows of one program's interval; `lost` (default delta.lost): failing trees no
    record stands for."""
    rows = []
    for p in pset.probes:
        c = delta.probes.get(p.id, ProbeCounts())
        rows.append({
            "host": ctx.host, "snapshot_time": snapshot_time_ns, "interval_s": interval_s,
            "kernel_release": ctx.kernel_release, "vendor": pset.vendor, "probe_set": pset.name,
            "probe": p.symbol, "layer": p.layer, "live": p.symbol in live,
            "invocations": c.invocations, "failures": c.failures,
            "errno_counts": [{"errno": k, "count": v} for k, v in sorted(c.errnos.items())],
            "lost_records": delta.lost if lost is None else lost,
        })
    return rows
