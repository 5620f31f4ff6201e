"""`tracer run`: the always-on fleet tracer loop.

Attaches the chosen probe sets (one calltree.c program each), and every interval (5 s by
default) writes one snapshot into the spool atomically: the call trees that arrived (failures,
plus good traces from capture windows) as `events`, and the counter deltas as `counters`.
Capture windows open on a schedule (--good-every/--good-window), on SIGUSR1, or when the
control file appears. SIGUSR2 writes a snapshot now (the next interval starts from it: an
on-call engineer's "what has it seen so far", without a stop). SIGTERM/SIGINT stop the loop
after a final snapshot.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tracer.atomic import make_dirs, output_dirs
from tracer.errors import TracebaseError
from tracer.fleet.config import CheckedRun, HostContext, RunConfig, check_run, host_context
from tracer.fleet.metadata import Enricher
from tracer.fleet.program import (
    Batch,
    Counters,
    FleetProgram,
    assign_repeats,
    counter_rows,
    events_from_batch,
    open_files_needed,
)
from tracer.fleet.prom import (
    ProbeSample,
    SetSample,
    dead_temporaries,
    previous_textfile,
    prometheus_text,
    stale_temporaries,
    textfile_note,
    write_textfile,
)
from tracer.fleet.spool import (
    SnapshotExistsError,
    WriterLock,
    counters_table,
    events_table,
    next_seq,
    remove_stale_temporaries,
    write_snapshot,
)
from tracer.limits import require_open_files
from tracer.privilege import check_bpf_environment

# RunConfig, HostContext and Enricher live in light modules (tracer.fleet.config, .metadata) so
# that `tracer run` checks its options before importing this one; they stay importable from here.
__all__ = ["Daemon", "Enricher", "HeldSnapshot", "HostContext", "RunConfig", "run_daemon"]

# Snapshots the spool could not take (full disk, read-only remount, EIO) are held in memory and
# retried every interval; past this many bytes of held call trees the oldest trees are dropped
# (their counters are kept: they are a few KiB per snapshot and what alerting is built on).
MAX_HELD_EVENT_BYTES = 64 << 20


class _LockTaken(Exception):
    """The spool host directory was recreated and another writer holds its lock."""


# Two daemons spilling into $TMPDIR/tracebase-spool at once take turns (a spill writes a few
# snapshots: well under a second each); a holder that keeps it longer is a live `tracer run`
# on that directory, and the next fallback directory is tried instead.
SPILL_LOCK_WAIT_S = 10.0


def _wait_for_lock(host_dir: Path, timeout_s: float) -> WriterLock:
    """The writer lock of a spool host directory, waited for up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return WriterLock(host_dir).acquire()
        except TracebaseError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


@dataclass
class HeldSnapshot:
    """A closed interval not yet in the spool: written in order, under its own time and number."""

    events: pa.Table
    counters: pa.Table
    when_ns: int
    seq: int


# --------------------------------------------------------------------------------------------
# Prometheus textfile
# --------------------------------------------------------------------------------------------
def prom_samples(programs: list[FleetProgram], totals: list[Counters]) -> tuple[list[ProbeSample], list[SetSample]]:
    """Cumulative counters of every probe set, as tracer.fleet.prom shows them."""
    probes, sets = [], []
    for prog, tot in zip(programs, totals, strict=True):
        pset = prog.probe_set
        live = prog.live_probes()
        for p in pset.probes:
            c = tot.probes[p.id]
            probes.append(ProbeSample(pset.name, p.symbol, p.layer, c.invocations, c.failures, dict(c.errnos),
                                      p.symbol in live))
        sets.append(SetSample(pset.name, tot.lost, tot.collided))
    return probes, sets


def _foreign_spill_dir(path: Path) -> str | None:
    """Why the spill must not go into `path` (a directory that may already exist), or None.

    The spill's first choice is $TMPDIR/tracebase-spool, usually under /tmp, where any user can
    create that name first: as a directory of their own, the held call trees (paths, arguments
    of root's processes) would be theirs to read or swap; as a symbolic link, root would write
    wherever it points. Like ssh with ~/.ssh, take only a directory we own that no one else may
    write to."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"{path} (a symbolic link)"
    if not stat.S_ISDIR(st.st_mode):
        return None  # make_dirs names a file in the way
    if st.st_uid != os.geteuid():
        return f"{path} (owned by uid {st.st_uid}, not {os.geteuid()})"
    if st.st_mode & 0o002:
        return f"{path} (writable by every user, mode {stat.filemode(st.st_mode)})"
    return None


# --------------------------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------------------------
class Daemon:
    def __init__(self, config: RunConfig, ctx: HostContext | None = None):
        self.cfg = config
        self.ctx = host_context(config) if ctx is None else ctx
        self.programs: list[FleetProgram] = []
        self.sets: list = []
        self.lock: WriterLock | None = None
        self._dirs_made: list[Path] = []  # the spool directories prepare() created, outermost first
        self._prom_failing = False
        self._control_failing = False
        self.enricher = Enricher(None)  # validate() reads the metadata file
        # per program: records not yet in a snapshot, with their job id and metadata (read from
        # /proc when they arrive, while the process most likely still runs)
        self.pending: list[list[tuple[Batch, list, list]]] = []
        # A drain thread keeps emptying the ring buffers while the main thread writes snapshots
        # (a snapshot of many records takes longer than a 256 KiB buffer lasts in a storm); the
        # lock serialises ring-buffer reads, `pending` and the enricher between the two.
        self._lock = threading.Lock()
        self._stop_drain = threading.Event()
        self._drain_error: BaseException | None = None
        self.stop_requested = False
        self.capture_requested = False
        self.snapshot_requested = False
        self.snapshots = 0
        self.records = 0
        self.lost = 0
        self.collided = 0  # call trees kept in task storage (slot held by another thread)
        self._window_until: float | None = None
        self._next_window: float | None = None
        self._seq = 0
        self._last_snap_wall = time.time_ns()
        self.held: list[HeldSnapshot] = []  # intervals the spool could not take yet, oldest first
        self._spool_error: str | None = None  # set while the spool is failing (logged once)
        self._last_written_ns: int | None = None
        self._pidfd: int | None = None  # -p: the target, to stop when it exits
        self._log_lost = 0  # log lines its log (stderr) would not take

    def log(self, msg: str) -> None:
        # a log that cannot be written (stderr on a full disk, /dev/full, a closed journal
        # pipe) loses the line, not the snapshots: faults at run time never stop the tracer
        try:
            print(f"tracer run: {msg}", file=self.cfg.log, flush=True)
        except (OSError, ValueError):
            self._log_lost += 1

    # ---- setup ----------------------------------------------------------------------------
    def validate(self, checked: CheckedRun | None = None) -> None:
        """Every option, before anything is created, mounted or loaded: tracer.fleet.config's
        check_run, the check `tracer run` makes before importing this module; `checked` is its
        result when the caller already made it."""
        if checked is None:
            checked = check_run(self.cfg, self.ctx, log=self.log)
        self.sets, self._pidfd, self.enricher = checked.sets, checked.pidfd, checked.enricher
        self.enricher.log = self.log  # its later problems go to this daemon's log

    def prepare(self) -> None:
        """Create the spool host directory, take its writer lock, remove the temporaries a killed
        tracer left (snapshot temp dirs, textfile temps): a restart leaves only complete files."""
        cfg = self.cfg
        host_dir = Path(cfg.spool) / self.ctx.host
        self._dirs_made = [d for d in (*reversed(host_dir.parents), host_dir) if not d.exists()]
        # the host directory (and the spool) made here go again when the lock cannot be written
        # (a full or read-only spool): a refused start leaves no empty host directory behind
        with contextlib.ExitStack() as made:
            try:
                made.enter_context(output_dirs(host_dir))
            except OSError as exc:
                raise TracebaseError(f"--spool: cannot create {host_dir} ({exc.strerror})") from None
            self.lock = WriterLock(host_dir, textfile_note(cfg.prom)).acquire()
        stale = remove_stale_temporaries(host_dir)
        if cfg.prom is not None:
            for tmp in stale_temporaries(cfg.prom):
                tmp.unlink(missing_ok=True)
                stale.append(tmp)
        # --prom moved to another directory (or dropped) since the last daemon of this host: a
        # daemon killed mid-write left its temporary there, and no later run looks in it
        previous = previous_textfile(self.lock.previous)
        if previous is not None and (cfg.prom is None or previous.parent != Path(os.path.abspath(cfg.prom)).parent):
            for tmp in dead_temporaries(previous.parent):
                with contextlib.suppress(OSError):
                    tmp.unlink()
                    stale.append(tmp)
        if stale:
            self.log(f"removed {len(stale)} stale temporar{'y' if len(stale) == 1 else 'ies'} of a previous run: "
                     + ", ".join(str(p) for p in stale[:3]) + (" ..." if len(stale) > 3 else ""))

    def start(self, checked: CheckedRun | None = None) -> None:
        self.validate(checked)
        note = check_bpf_environment("tracer run")  # root first; then bcc, headers, tracefs
        if note:
            self.log(note)
        # before the spool is touched: below its need bcc failed as "could not compile" or
        # "cannot attach ... --best-effort runs with the probes that attach", or the first
        # snapshot's write failed after "probes live"
        require_open_files(open_files_needed(self.sets), "the probe sets' BPF maps, programs and links, "
                           "and the snapshots' files")
        self.prepare()
        self.log(f"pid {os.getpid()} writing {Path(self.cfg.spool) / self.ctx.host}; compiling "
                 + ", ".join(pset.name for pset in self.sets))
        # pyarrow imports pandas at its first conversion (~1 s here): pay that at startup, before
        # the probes go live, not inside the first snapshot
        pa.array([0])
        cfg = self.cfg
        try:
            for pset in self.sets:
                prog = FleetProgram(pset, ringbuf_kb=cfg.ringbuf_kb, sample_every=cfg.sample_every,
                                    latency_bound_ns=cfg.latency_bound_ns, target_pid=cfg.pid,
                                    failures_only=cfg.failures_only, examples=cfg.examples, slots=cfg.slots)
                # The start's window (a fresh baseline) is open in the kernel before any probe
                # attaches: every call a live probe sees, from the first, is in it. Opened in the
                # main loop instead, the calls made between "probes live" and that first pass
                # were counted but never recorded.
                prog.set_capture(not cfg.failures_only)
                prog.compile()
                self.programs.append(prog)
                self.pending.append([])
                results = prog.attach(best_effort=cfg.best_effort)
                live = [r.probe for r in results if r.live]
                self.log(f"set {pset.name} ({pset.attach}): {len(live)}/{len(results)} probes live"
                         + (f", vendor {pset.vendor}" if pset.vendor else "")
                         + (f"; {prog.key_check.note()}" if prog.key_check else ""))
                for r in results:
                    if not r.live:
                        self.log(f"probe {r.probe} of set {pset.name} not attached: {r.reason}")
            if not any(p.live_probes() for p in self.programs):
                raise TracebaseError("no probe of " + ", ".join(cfg.sets) + " could attach; nothing to trace")
        except BaseException:
            self._unprepare()
            self.close()
            raise
        self._dirs_made = []  # the spool is in use from here on: it stays
        self._seq = next_seq(cfg.spool, self.ctx.host)
        self._last_snap_wall = time.time_ns()
        if not cfg.failures_only:
            # a fresh baseline right away (open since before the attach), then on the schedule;
            # its length counts from now, when every set's probes are live
            self._open_window(time.monotonic(), scheduled=True)

    def _unprepare(self) -> None:
        """A start that failed after prepare() (a probe set that does not compile or attach)
        leaves the spool as it found it: the host directory it created goes again when its
        writer lock is all it holds. The lock file goes while still held, so no other writer
        can be waiting on it."""
        if not self._dirs_made or self.lock is None:
            return
        host_dir = self.lock.path.parent
        with contextlib.suppress(OSError):
            if os.listdir(host_dir) == [self.lock.path.name]:
                self.lock.path.unlink()
        for d in reversed(self._dirs_made):
            with contextlib.suppress(OSError):  # not empty (another writer's host): stays
                d.rmdir()

    def close(self) -> None:
        for prog in self.programs:
            for problem in prog.close():
                self.log(f"detaching set {prog.probe_set.name}: {problem}")
        self.programs = []
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _target_exited(self) -> bool:
        """-p: the target process has exited (its pidfd is readable). Going on would trace
        nothing, then whatever process the kernel hands the pid to next."""
        if self._pidfd is None:
            return False
        ready, _, _ = select.select([self._pidfd], [], [], 0)
        return bool(ready)

    # ---- capture windows ------------------------------------------------------------------
    def request_capture(self, *_args) -> None:
        self.capture_requested = True

    def request_snapshot(self, *_args) -> None:
        self.snapshot_requested = True

    def request_stop(self, *_args) -> None:
        self.stop_requested = True

    def _manage_capture(self, now: float) -> None:
        cfg = self.cfg
        if cfg.failures_only:
            return
        if cfg.control_file is not None and cfg.control_file.exists():
            try:
                cfg.control_file.unlink(missing_ok=True)
            except OSError as exc:  # e.g. someone made it a directory: never a reason to stop
                if not self._control_failing:
                    self.log(f"--control-file: cannot remove {cfg.control_file} ({exc.strerror}); "
                             "windows open on schedule and on SIGUSR1")
                self._control_failing = True
            else:
                self.capture_requested = True
        scheduled = self._next_window is not None and now >= self._next_window
        if self.capture_requested or scheduled:
            self._open_window(now, scheduled)
        elif self._window_until is not None and now >= self._window_until:
            self._window_until = None
            self._set_capture(False)
            self.log("capture window closed")

    def _open_window(self, now: float, scheduled: bool) -> None:
        """Open a capture window (or extend the open one) for --good-window from now."""
        was_open = self._window_until is not None and now < self._window_until
        if scheduled:
            self._next_window = now + self.cfg.good_every_s
        self.capture_requested = False
        self._window_until = now + self.cfg.good_window_s
        self._set_capture(True)
        if not was_open:
            self.log(f"capture window open for {self.cfg.good_window_s:g}s")

    def _set_capture(self, open_: bool) -> None:
        """The kernel's flag first, the log line after: a window's lines say what the programs
        already do, so whoever acts on "capture window open" (a test, an operator's script after
        `systemctl reload`) has every call it then starts recorded, and nothing it starts after
        "capture window closed" is."""
        for prog in self.programs:
            if prog.capture_open != open_:
                prog.set_capture(open_)

    # ---- data -----------------------------------------------------------------------------
    def _drain(self, timeout_ms: int) -> None:
        per = max(0, timeout_ms // max(1, len(self.programs)))
        for i, prog in enumerate(self.programs):
            prog.wait(per)  # outside the lock: a snapshot may run meanwhile
            with self._lock:
                self._take(i, prog.poll_batch(0))

    def _drain_loop(self) -> None:
        try:
            while not self._stop_drain.is_set():
                self._drain(100)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            self._drain_error = exc
            self.stop_requested = True

    def _take(self, i: int, batch: Batch) -> None:
        if not len(batch):
            return
        pids = batch.head["pid"].tolist()
        found = {pid: self.enricher.for_pid(pid) for pid in set(pids)}  # once per process
        self.pending[i].append((batch, [found[p][0] for p in pids], [found[p][1] for p in pids]))
        self.records += len(batch)

    def _closed_events(self, i: int, prog: FleetProgram) -> tuple[pa.Table, Counters, int]:
        """Close program i's interval: its events (repeat counts assigned), counter deltas and
        the failing trees no record stands for. Records of the next interval stay pending."""
        with self._lock:
            closed = prog.rotate()
            self._take(i, prog.poll_batch(0))  # the closed interval's last records
            parts, self.pending[i] = self.pending[i], []
        batch = Batch.concat([b for b, _, _ in parts])
        jobs = [j for _, js, _ in parts for j in js]
        metas = [m for _, _, ms in parts for m in ms]
        later = batch.head["interval"].astype(np.int64) > closed.number
        if later.any():
            idx = np.flatnonzero(later)
            with self._lock:
                self.pending[i].append((batch.select(later), [jobs[k] for k in idx], [metas[k] for k in idx]))
            keep = np.flatnonzero(~later)
            batch, jobs, metas = batch.select(~later), [jobs[k] for k in keep], [metas[k] for k in keep]
        repeat, lost = assign_repeats(batch, closed)
        return events_from_batch(batch, prog.probe_set, self.ctx, jobs, metas, repeat), closed.counters, lost

    def snapshot(self) -> Path | None:
        """Close the interval on every program and write it to the spool with any interval held
        back earlier; returns the snapshot written (None while the spool is failing)."""
        now_ns = time.time_ns()
        interval = (now_ns - self._last_snap_wall) / 1e9
        counter_data = []
        totals = []
        tables = []
        for i, prog in enumerate(self.programs):
            events, delta, lost = self._closed_events(i, prog)
            tables.append(events)
            self.lost += lost
            self.collided += delta.collided
            totals.append(prog.totals)
            counter_data.extend(counter_rows(delta, prog.probe_set, prog.live_probes(), self.ctx, now_ns, interval,
                                             lost=lost))
        events = pa.concat_tables(tables) if tables else events_table([])
        self.held.append(HeldSnapshot(events, counters_table(counter_data), now_ns, self._seq))
        self._seq += 1
        self._last_snap_wall = now_ns
        path = self.write_held()
        if self.cfg.prom is not None:
            self._write_prom(totals)
        with self._lock:
            self.enricher.refresh()
        return path

    def write_held(self) -> Path | None:
        """Write the held intervals to the spool, oldest first, until one fails. A failing spool
        (ENOSPC, EROFS, EIO, EACCES after a chmod) never stops the tracer: the intervals stay in
        memory, bounded by MAX_HELD_EVENT_BYTES, and are retried at every snapshot."""
        last = None
        clashes = 0
        while self.held:
            snap = self.held[0]
            try:
                self._keep_lock()
                last = write_snapshot(self.cfg.spool, self.ctx.host, snap.events, snap.counters, snap.when_ns,
                                      snap.seq)
            except SnapshotExistsError as exc:
                # The name is taken (a snapshot copied in, another writer): that ended the
                # daemon, losing every held interval. Number this and the held ones after the
                # highest in the directory and go on; a clash that persists is held as a spool
                # that cannot be written.
                clashes += 1
                if clashes <= 3:
                    self._renumber_held(snap.seq + 1)
                    self.log(f"--spool: {exc}; written as sequence number {self.held[0].seq} instead")
                    continue
                reason = "its snapshot names keep being taken"
            except (OSError, _LockTaken) as exc:
                reason = str(exc) if isinstance(exc, _LockTaken) else f"{exc.strerror or exc}"
            else:
                self.held.pop(0)
                self.snapshots += 1
                self._last_written_ns = snap.when_ns
                continue
            if self._spool_error is None:
                self.log(f"--spool: {Path(self.cfg.spool) / self.ctx.host} not written ({reason}); snapshots "
                         "are held in memory and retried every interval")
            self._spool_error = reason
            self._bound_held()
            return None
        if self._spool_error is not None:
            self.log("--spool: written again; every held snapshot is in the spool")
            self._spool_error = None
        return last

    def _renumber_held(self, at_least: int) -> None:
        """Give the held intervals fresh sequence numbers, in order, past every snapshot in the
        host directory (and `at_least`), and continue the numbering after them."""
        try:
            base = max(at_least, next_seq(self.cfg.spool, self.ctx.host))
        except OSError:
            base = at_least
        for k, held in enumerate(self.held):
            held.seq = base + k
        self._seq = base + len(self.held)

    def _keep_lock(self) -> None:
        """Hold the writer lock of the host directory we write, as it is now. Deleted or
        replaced while the tracer ran, the directory took the lock file with it: the tracer
        recreated it and wrote on unlocked, and a second tracer started on that spool took it
        and wrote beside it (two sequences interleaved, a name clash ending one of them). Now
        the new directory's lock is taken first; if another writer already holds it the
        intervals are held as for any spool that cannot be written."""
        lock = self.lock
        if lock is None or lock.fd is None:
            return
        try:
            if os.path.samestat(os.fstat(lock.fd), os.stat(lock.path)):
                return
        except FileNotFoundError:
            pass
        make_dirs(lock.path.parent)
        try:
            fresh = WriterLock(lock.path.parent, lock.note).acquire()
        except TracebaseError as exc:
            raise _LockTaken(str(exc).split(": ", 1)[-1]) from None
        lock.release()
        self.lock = fresh
        self.log(f"--spool: {lock.path.parent} was removed or replaced while running; its writer lock taken again")

    def _bound_held(self) -> None:
        """Drop the call trees of the oldest held intervals past the memory bound; their
        counters (exact, small) stay, and the dropped trees are counted as lost."""
        size = sum(h.events.nbytes for h in self.held)
        dropped = 0
        for snap in self.held:
            if size <= MAX_HELD_EVENT_BYTES:
                break
            if snap.events.num_rows:
                size -= snap.events.nbytes
                dropped += len(pc.unique(snap.events.column("trace_id")))
                snap.events = snap.events.slice(0, 0)
        if dropped:
            self.lost += dropped
            self.log(f"--spool: still failing; {dropped} held call trees dropped to stay under "
                     f"{MAX_HELD_EVENT_BYTES >> 20} MiB (their counters are kept)")

    def spill_held(self) -> Path | None:
        """At exit with the spool still failing: write the held intervals to a spool under
        $TMPDIR (then the cwd) so nothing is lost; returns that spool, None if none took them.

        Every run's spill goes to the same directory, and each run numbered its intervals from
        its own start: a second run's snapshots 0, 1, ... sat beside the first's, and the
        readers (sequence order) interleaved the two runs, or a name clash sent the second to
        the cwd. The held intervals are now numbered after the highest sequence number already
        in the spill, under its host directory's writer lock (two daemons spilling at once
        take turns), so the spill reads back run after run, each in order."""
        for root in (Path(tempfile.gettempdir()), Path.cwd()):
            spool = root / "tracebase-spool"
            host_dir = spool / self.ctx.host
            try:
                refused = _foreign_spill_dir(spool)
                if refused is None:
                    make_dirs(host_dir)
                    refused = _foreign_spill_dir(spool) or _foreign_spill_dir(host_dir)
                if refused:
                    self.log(f"--spool: not spilling into {refused}; another user could read or replace "
                             "what is written there")
                    continue
                lock = _wait_for_lock(host_dir, SPILL_LOCK_WAIT_S)
                try:
                    # A daemon killed while spilling left its half snapshot here, and no daemon
                    # runs on this spool to remove it at start (prepare): every later spill
                    # passed it by, and ingest skips hidden names, so it stayed for good.
                    stale = remove_stale_temporaries(host_dir)
                    if stale:
                        self.log(f"removed {len(stale)} stale temporar{'y' if len(stale) == 1 else 'ies'} of a "
                                 f"spill killed mid-write: " + ", ".join(str(p) for p in stale[:3])
                                 + (" ..." if len(stale) > 3 else ""))
                    base = next_seq(spool, self.ctx.host)
                    while self.held:
                        snap = self.held[0]
                        write_snapshot(spool, self.ctx.host, snap.events, snap.counters, snap.when_ns, base)
                        self.held.pop(0)  # written: a later failure must not write it twice
                        base += 1
                finally:
                    lock.release()
            except (OSError, TracebaseError):
                continue
            return spool
        return None

    def _write_prom(self, totals: list[Counters]) -> None:
        """The textfile is a view of the counters the spool already holds: a full or read-only
        textfile directory is logged (once per outage) and never stops the tracer."""
        probes, sets = prom_samples(self.programs, totals)
        try:
            # the last snapshot *in the spool*: a stalled spool shows as a stale timestamp
            last = self._last_written_ns
            write_textfile(self.cfg.prom, prometheus_text(self.ctx.host, probes, sets, snapshots=self.snapshots,
                                                          last_snapshot_s=None if last is None else last / 1e9,
                                                          held_snapshots=len(self.held)))
        except OSError as exc:
            if not self._prom_failing:
                self.log(f"--prom: {self.cfg.prom} not written ({exc.strerror}); snapshots go on, "
                         "the textfile is retried every interval")
            self._prom_failing = True
            return
        if self._prom_failing:
            self.log(f"--prom: {self.cfg.prom} written again")
        self._prom_failing = False

    def run(self) -> int:
        cfg = self.cfg
        start = time.monotonic()
        next_snap = start + cfg.interval_s
        end = start + cfg.duration_s if cfg.duration_s else None
        self._stop_drain.clear()
        drainer = threading.Thread(target=self._drain_loop, name="tracer-run-drain", daemon=True)
        drainer.start()
        try:
            while not self.stop_requested:
                now = time.monotonic()
                if end is not None and now >= end:
                    break
                if self._target_exited():
                    self.log(f"-p/--pid: process {cfg.pid} exited; final snapshot")
                    break
                self._manage_capture(now)
                wait = min(next_snap, end or next_snap) - now
                time.sleep(max(0.0, min(wait, 0.1)))
                now = time.monotonic()
                if self.snapshot_requested:  # SIGUSR2: now, and the next interval from here
                    self.snapshot_requested = False
                    written = self.snapshot()
                    self.log(f"SIGUSR2: snapshot {written or 'held (the spool is failing)'}")
                    next_snap = now + cfg.interval_s
                elif now >= next_snap:
                    self.snapshot()
                    next_snap += cfg.interval_s
                    if next_snap <= now:  # fell behind (a slow disk): do not burst to catch up
                        next_snap = now + cfg.interval_s
        finally:
            self._stop_drain.set()
            drainer.join()
        if self._drain_error is not None:
            raise self._drain_error
        self._drain(0)
        final = self.snapshot()
        if self.held:
            held, reason = len(self.held), self._spool_error
            spool = self.spill_held()
            where = f"kept in {spool} (ingest it from there)" if spool else "lost: no fallback directory was writable"
            raise TracebaseError(f"--spool: {Path(self.cfg.spool) / self.ctx.host} not written at exit ({reason}); "
                                 f"{held} snapshot(s) {where}")
        self.log(f"stopped: {self.snapshots} snapshots, {self.records} records, {self.lost} lost, "
                 f"{self.collided} slot collisions; last {final}")
        return 0


def run_daemon(config: RunConfig, ctx: HostContext | None = None, checked: CheckedRun | None = None) -> int:
    """Start, run until -d/SIGTERM/SIGINT/SIGHUP, final snapshot, detach.

    The handlers are in place before the (seconds long) start: a stop asked for while the
    program compiles still ends with a final snapshot, and a SIGUSR1 (`systemctl reload`) that
    early opens a window instead of killing the process (SIGUSR1's default action); a SIGUSR2
    that early is the first snapshot written as soon as the loop runs."""
    daemon = Daemon(config, ctx)
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in (*stops, signal.SIGUSR1, signal.SIGUSR2)}
    for sig in stops:
        if sig == signal.SIGHUP and previous[sig] is signal.SIG_IGN:
            continue  # started under nohup: hangups were asked to be ignored, as the CLIs leave them
        signal.signal(sig, daemon.request_stop)
    signal.signal(signal.SIGUSR1, daemon.request_capture)
    signal.signal(signal.SIGUSR2, daemon.request_snapshot)
    try:
        daemon.start(checked)
        return daemon.run()
    finally:
        daemon.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
