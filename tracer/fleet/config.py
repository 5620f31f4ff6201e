"""What `tracer run` is asked to do, and the check of all of it before anything starts.

`RunConfig` (the daemon's options), `HostContext` (what every row of this host carries), the
program's defaults, and `check_run`: every option checked -- numbers, -p, --host, root, the
probe sets, --spool, --prom, --control-file, --metadata-file -- before anything is created,
mounted, compiled or loaded. This module imports neither pyarrow, numpy nor polars (nor bcc):
the CLI calls `check_run` before it imports tracer.fleet.daemon, so a typo costs ~0.1 s of CPU
instead of the ~0.6 s of importing the daemon, and `Daemon.validate` calls the same function, so
the library and the CLI refuse with the same line.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tracer.errors import TracebaseError
from tracer.fleet.metadata import Enricher
from tracer.fleet.options import (
    HOST_NAME,
    HOST_RULE,
    check_host,
    check_input_file,
    check_int_range,
    check_interval,
    check_output_dir,
    check_output_file,
    check_parent_dir,
    check_positive,
)
from tracer.fleet.probes import PROBES_DIR, ProbeSet, load_probe_set
from tracer.privilege import check_pid_namespace, check_root, check_target_process

DEFAULT_SLOTS = 4096  # per-thread tree slots (SLOTS in calltree.c), ~600 bytes each
DEFAULT_EXAMPLES = 4  # full call trees per failure signature per snapshot interval (AGG_EXAMPLES)
MAX_EXAMPLES = 2**31 - 1  # --examples MAX_EXAMPLES: every failing tree a record (aggregation off)
DEFAULT_LATENCY_BOUND_NS = 50_000_000
DEFAULT_RINGBUF_KB = 256
DEFAULT_SAMPLE_EVERY = 10


@dataclass
class RunConfig:
    sets: list[str]
    spool: Path
    interval_s: float = 5.0
    duration_s: float | None = None
    pid: int = 0
    failures_only: bool = False
    good_every_s: float = 3600.0
    good_window_s: float = 10.0
    sample_every: int = DEFAULT_SAMPLE_EVERY
    latency_bound_ns: int = DEFAULT_LATENCY_BOUND_NS
    ringbuf_kb: int = DEFAULT_RINGBUF_KB
    examples: int = DEFAULT_EXAMPLES  # full call trees per failure signature per interval
    slots: int = DEFAULT_SLOTS  # per-thread tree slots of each program (a power of two; library use, tests)
    best_effort: bool = False
    prom: Path | None = None
    metadata_file: Path | None = None
    control_file: Path | None = None
    host: str | None = None
    probes_dir: Path = PROBES_DIR
    log: object = field(default=sys.stderr, repr=False)


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


def host_context(cfg: RunConfig) -> HostContext:
    """This host's context, under --host's name when one was given."""
    return HostContext() if cfg.host is None else HostContext(host=cfg.host)


@dataclass
class CheckedRun:
    """What `check_run` opened and read, for the daemon to keep: the loaded probe sets, a pidfd
    of -p's process (None without -p), the metadata file parsed."""

    sets: list[ProbeSet]
    pidfd: int | None
    enricher: Enricher


def check_outside_spool(path: str | os.PathLike | None, option: str, spool: Path) -> None:
    """The spool holds snapshots and nothing else: its readers (ingest, audit) take what they
    find under it for host directories and snapshots, and an ingest that moves snapshots away
    would take another tool's file with it."""
    if path is None:
        return
    # realpath, not Path.resolve: a link loop on the way is a path like any other here
    inside, where = Path(os.path.realpath(path)), Path(os.path.realpath(spool))
    if inside == where or where in inside.parents:
        raise TracebaseError(f"{option}: expected a path outside the spool {spool} (it holds snapshots only), "
                             f"found {path}")


def check_distinct_files(roles: list[tuple[str, str | os.PathLike | None]]) -> None:
    """TracebaseError naming both flags when one file is given two roles: the control file is
    deleted once seen (`--metadata-file md.yaml --control-file md.yaml` deleted the job's
    metadata), the textfile is rewritten every interval (over the user's metadata, or seen as
    a control file each time). Compared by resolved path."""
    seen: dict[str, str] = {}
    for option, path in roles:
        if path is None:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise TracebaseError(f"{option}: expected a file of its own, found {os.fspath(path)!r}, "
                                 f"which {seen[real]} names too")
        seen[real] = option


def check_run(cfg: RunConfig, ctx: HostContext, log=None) -> CheckedRun:
    """Every option, before anything is created, mounted or loaded (tracer.fleet.options).

    `log` is where the metadata file's later problems are said (the daemon's log). Raises
    TracebaseError naming the flag; on success the caller owns the returned pidfd."""
    check_interval(cfg.interval_s, "-i/--interval")
    if cfg.duration_s is not None:
        check_positive(cfg.duration_s, "-d/--duration")
    check_positive(cfg.good_every_s, "--good-every")
    check_positive(cfg.good_window_s, "--good-window")
    if cfg.good_window_s > cfg.good_every_s:
        # a window still open when the next one is due: the capture never closes, which is
        # --good-window as long as --good-every, said so -- not what a longer one reads as
        raise TracebaseError(f"--good-window: expected at most --good-every ({cfg.good_every_s:g}s; a window as long "
                             f"as it captures all the time), found {cfg.good_window_s:g}s")
    check_positive(cfg.latency_bound_ns, "--latency-bound", " ns")
    check_int_range(cfg.sample_every, "--sample", 1, 1 << 30, "a positive integer N (1 in N)")
    check_int_range(cfg.ringbuf_kb, "--ringbuf-kb", 1, 1 << 20, "a positive size in KiB")
    check_int_range(cfg.examples, "--examples", 1, MAX_EXAMPLES, "a positive number of call trees per signature")
    if cfg.pid < 0 or (cfg.pid and not Path(f"/proc/{cfg.pid}").exists()):
        raise TracebaseError(f"-p/--pid: expected a running process, found no process {cfg.pid}")
    pidfd = None
    try:
        if cfg.pid:
            # pinned before it is inspected: the tracer stops when this process exits, and a pid
            # reused meanwhile by another process is never taken for it (see Daemon._target_exited)
            try:
                pidfd = os.pidfd_open(cfg.pid)
            except ProcessLookupError:
                raise TracebaseError(f"-p/--pid: expected a running process, found no process {cfg.pid}") from None
            except OSError as exc:  # EMFILE under a low RLIMIT_NOFILE
                # a thread id has no pidfd of its own (ENOENT/EINVAL): say what it is instead
                check_target_process(cfg.pid, "-p/--pid")
                raise TracebaseError(f"-p/--pid {cfg.pid}: cannot watch the process ({exc.strerror})") from None
            check_target_process(cfg.pid, "-p/--pid")  # a thread id or a kernel thread would match nothing
            check_pid_namespace("tracer run -p")  # the kernel side filters on the host's pid
        if cfg.host is not None:
            check_host(cfg.host, "--host")
        elif not HOST_NAME.match(ctx.host):
            raise TracebaseError(f"--host: this machine's name is not usable as a spool directory: expected {HOST_RULE}, "
                                 f"found {ctx.host!r}; pass --host NAME")
        # as any other user, say that first: every later check would fail for that reason
        check_root("tracer run")
        # no probe set is compiled before every one of them loaded
        sets = [load_probe_set(s, cfg.probes_dir) for s in cfg.sets]
        names = [pset.name for pset in sets]
        for i, pset in enumerate(sets):
            # the set name labels the spool's rows and the Prometheus series: two sets of one
            # name would mix their counters and duplicate series (node_exporter drops the file)
            if pset.name in names[:i]:
                raise TracebaseError(f"SET: expected probe sets with distinct names, found {pset.name!r} twice "
                                     f"({sets[names.index(pset.name)].source} and {pset.source})")
        check_output_dir(Path(cfg.spool), "--spool")
        for option, path in (("--prom", cfg.prom), ("--control-file", cfg.control_file)):
            check_outside_spool(path, option, Path(cfg.spool))
        check_distinct_files([("--prom", cfg.prom), ("--metadata-file", cfg.metadata_file),
                              ("--control-file", cfg.control_file)])
        if cfg.prom is not None:
            check_output_file(cfg.prom, "--prom", ".prom", " (node_exporter's textfile collector reads only *.prom)")
        if cfg.control_file is not None:
            check_parent_dir(cfg.control_file, "--control-file")
        enricher = Enricher(None)
        if cfg.metadata_file is not None:
            check_input_file(cfg.metadata_file, "--metadata-file")
            enricher = Enricher(cfg.metadata_file, log=log)  # parses it: a bad file is refused here
    except BaseException:
        if pidfd is not None:
            os.close(pidfd)
        raise
    return CheckedRun(sets, pidfd, enricher)
