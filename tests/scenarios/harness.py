"""Fault-scenario harness: record good runs and one bad run of a real program for real, then
ask the diff where the bad run left known-good behaviour.

Every run of a scenario happens in the same directory (recreated each time), so paths agree
between good and bad runs the way they would for a real job rerun on the same host. The
directories live under a root of this process's own, and the loopback services listen on a
block of ports of its own (`PORTS`), so two test sessions on one machine do not collide.
Runs use a small fixed environment (PATH, LANG, HOME) so the traces do not depend on the
caller's shell.
"""

from __future__ import annotations

import atexit
import fnmatch
import functools
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(f"/tmp/tracebase-scenarios.{os.getpid()}")
PROGRAMS = Path(__file__).resolve().parent / "programs"
NOBODY = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
PY = ["/usr/bin/python3", "-S"]


class RunTurns:
    """Which run of a case a setup is building, for sets whose good runs process other data
    each (as a job's good traces really do: yesterday's files, today's): the good runs take
    their data in turn (index 0, 1, 2, ...), the bad run its own (-1; the count starts over)."""

    def __init__(self) -> None:
        self.good_runs: dict[str, int] = {}  # case (its base directory's name) -> good runs set up

    def index(self, base: Path, bad: bool) -> int:
        """The good run's index (0, 1, 2, ...), or -1 for the bad run."""
        if bad:
            self.good_runs[base.name] = 0
            return -1
        i = self.good_runs.get(base.name, 0)
        self.good_runs[base.name] = i + 1
        return i

    def pick(self, base: Path, bad: bool, goods: list, bad_value):
        """This run's value: the good runs' in turn, or the bad run's."""
        i = self.index(base, bad)
        return bad_value if i < 0 else goods[i % len(goods)]


def sh_argv(script: str, *args: str) -> Callable[[Path], list[str]]:
    """argv(base): `sh -c script sh BASE ARGS...` (the same line in every run, a job script's)."""
    return lambda b: ["/bin/sh", "-c", script, "sh", str(b), *args]


def argv_in(cmd: list[str]) -> Callable[[Path], list[str]]:
    """argv(base): `cmd` with every `{b}` the case's base directory."""
    return lambda b: [c.replace("{b}", str(b)) for c in cmd]


@dataclass
class Scenario:
    """One injected fault.

    argv(base) is the same for good and bad runs; setup(base, bad) builds the state the run
    sees. expect_probe/errno/path describe the event the bifurcation must name (errno None:
    a divergence without any error). path is a glob matched against the recorded path.
    """

    name: str
    program: str
    argv: Callable[[Path], list[str]]
    setup: Callable[[Path, bool], None]
    expect_probe: frozenset[str]
    expect_errno: str | None
    expect_path: Callable[[Path], str]
    teardown: Callable[[Path], None] | None = None
    good_runs: int = 2
    unprivileged: bool = False
    description: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class NoAnomalyCase:
    """Good-vs-good: runs that differ only in run-to-run noise; the diff must stay quiet."""

    name: str
    argv: Callable[[Path], list[str]]
    setup: Callable[[Path, int], None]  # (base, run index)
    runs: int = 3
    description: str = ""


@dataclass
class Outcome:
    name: str
    expected: str
    got: str
    correct: bool
    seconds: float
    detail: dict = field(default_factory=dict)


@cache
@functools.cache
def shared_recorder():
    """One loaded recorder per process (the BPF compile takes seconds)."""
    from tracer.record.recorder import SyscallRecorder

    recorder = SyscallRecorder(ringbuf_mb=32).load()
    atexit.register(recorder.close)
    return recorder


# One lock per port, held for the session's life: a port another session's block has is never
# taken, even while nothing listens on it there (between two of its cases). The lock is a Unix
# socket bound to an abstract name (Linux: no file, gone with the process that held it, kill -9
# included), so nothing is left behind: the lock files this used, /tmp/tracebase-ports/<port>,
# stayed there after every session, thousands of them.
PORT_LOCK_PREFIX = "tracebase-port-"


def _reserve(ports: range) -> list[socket.socket] | None:
    """Locks of `ports`, all taken (their sockets, kept open), or None."""
    held = []
    for port in ports:
        lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            lock.bind(f"\0{PORT_LOCK_PREFIX}{port}")
        except OSError:  # EADDRINUSE: another session holds it
            lock.close()
            for other in held:
                other.close()
            return None
        held.append(lock)
    return held


def skip_if_loopback_down() -> None:
    """Skip the calling test, saying so, when 127.0.0.1 cannot be connected to (a network
    namespace whose lo is down): the sets' services listen there; otherwise return."""
    import pytest

    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            socket.create_connection(server.getsockname(), timeout=2).close()
    except OSError as exc:
        pytest.skip(f"the loopback interface is down here ({exc.strerror or exc}): this case's services listen on "
                    "127.0.0.1 (`ip link set lo up`)")


def _port_block(size: int) -> tuple[int, ...]:
    """`size` consecutive loopback ports free right now, below the ephemeral range (so no
    outgoing connection takes one meanwhile), starting at a place that depends on the pid so
    concurrent sessions look in different places first. Each port is reserved by a lock
    another session's search respects (`_reserve`), and the probe binds without SO_REUSEADDR,
    so a port with a connection of an earlier session still in TIME_WAIT is passed over too:
    a case's server binding it without SO_REUSEADDR would fail EADDRINUSE."""
    span = 31000 - 20000 - size
    for attempt in range(200):
        first = 20000 + ((os.getpid() * 97 + attempt * 331) % span)
        locks = _reserve(range(first, first + size))
        if locks is None:
            continue
        socks = []
        try:
            for port in range(first, first + size):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            for lock in locks:
                lock.close()
            continue
        finally:
            for s in socks:
                s.close()
        _HELD_PORT_LOCKS.extend(locks)
        return tuple(range(first, first + size))
    skip_if_loopback_down()
    raise RuntimeError("no block of free loopback ports between 20000 and 31000")


_HELD_PORT_LOCKS: list[socket.socket] = []  # open for the session's life (closed with the process)
# handed out by the scenario modules, one per service: no two sets share one (a connection's
# TIME_WAIT, a server still going, from one set must not meet another's bind, in any order)
PORTS = _port_block(18)


def _remove_root() -> None:
    """Remove this session's root at exit, unless something is still mounted under it
    (a failed teardown): removing through a mount would empty someone's file system."""
    try:
        with open("/proc/self/mounts") as fh:
            if any(line.split()[1].startswith(f"{ROOT}/") for line in fh):
                return
    except OSError:
        return
    shutil.rmtree(ROOT, ignore_errors=True)


atexit.register(_remove_root)


def mounts_under(base: Path) -> list[str]:
    """Mount points at or under `base`, deepest first (a case's tmpfs, bind mounts over it)."""
    prefix = str(base).rstrip("/")
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        # mountinfo writes a space, tab, newline or backslash in a path as \ooo
        points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]) for line in f]
    # newest first (a mount stacked on another comes off first), then deepest first
    under = [p for p in reversed(points) if p == prefix or p.startswith(prefix + "/")]
    return sorted(under, key=lambda p: p.count("/"), reverse=True)


def unmount_under(base: Path) -> None:
    """Unmount everything at or under `base`. A mount still busy (a killed holder's child not yet
    reaped keeps a file open in it) is detached lazily, so the directory can go at once."""
    for point in mounts_under(base):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)


def fresh_dir(base: Path) -> None:
    if base.exists():
        unmount_under(base)
        shutil.rmtree(base)
    if not ROOT.exists():
        ROOT.mkdir(mode=0o755)
        ROOT.chmod(0o755)  # runs as nobody walk through it, whatever the umask
    base.mkdir(parents=True)
    base.chmod(0o755)


class EventsLost(AssertionError):
    """The recording's ring buffer overflowed: the trace is incomplete."""


def record_run(recorder, argv: list[str], out: Path, label: str, unprivileged: bool = False) -> Path:
    argv = (NOBODY + argv) if unprivileged else argv
    rec = recorder.record(
        argv, label=label, env=ENV, cwd="/", stdin=_devnull(os.O_RDONLY),
        stdout=_devnull(os.O_WRONLY), stderr=_devnull(os.O_WRONLY), timeout=60,
    )
    if rec.lost_events:
        raise EventsLost(f"{out.name}: {rec.lost_events} events lost")
    if rec.signal:
        # the test process got a stop signal (a runner's time cap: `timeout` signals the whole
        # process group) and the recorder forwarded it to the program: its trace is of a killed
        # run, and a diff would name the kill (xz's signal handler writing its self-pipe)
        raise AssertionError(f"{out.name}: the recording got {rec.signal} and forwarded it to {argv[0]}: "
                             "a killed run, not the program's behaviour")
    return rec.write(out)


@cache
def _devnull(mode: int) -> int:
    return os.open("/dev/null", mode)


LOSS_RETRIES = 2


def _record_complete(sc: Scenario, recorder, base: Path, out: Path, bad: bool) -> Path:
    """One run of `sc` from a fresh setup, recorded again (from a fresh setup) when the ring buffer
    overflowed: a whole-host scanner (lsof of every process) under a loaded CI machine can outrun the
    consumer, and the recorder says so (lost_events) rather than hiding it. A loss is the machine's
    load, not the program's behaviour; only a loss in every attempt fails the case."""
    for attempt in range(LOSS_RETRIES + 1):
        fresh_dir(base)
        sc.setup(base, bad)
        try:
            return record_run(recorder, sc.argv(base), out, "bad" if bad else "good", sc.unprivileged)
        except EventsLost:
            if attempt == LOSS_RETRIES:
                raise
            if sc.teardown:
                sc.teardown(base)
    raise AssertionError("unreachable")


def record_scenario(sc: Scenario, recorder, out_dir: Path) -> tuple[list[Path], Path, Path]:
    """Record sc.good_runs good runs and one bad run; returns (good files, bad file, base)."""
    base = ROOT / sc.name
    out_dir.mkdir(parents=True, exist_ok=True)
    goods = []
    try:
        for i in range(sc.good_runs):
            goods.append(_record_complete(sc, recorder, base, out_dir / f"{sc.name}-good{i}.parquet", bad=False))
            if sc.teardown:
                sc.teardown(base)
        bad = _record_complete(sc, recorder, base, out_dir / f"{sc.name}-bad.parquet", bad=True)
    finally:
        if sc.teardown:
            sc.teardown(base)
        if base.exists():
            fresh_dir(base)
            base.rmdir()
    return goods, bad, base


def judge(sc: Scenario, report, base: Path) -> Outcome:
    expected = f"{'|'.join(sorted(sc.expect_probe))} {sc.expect_errno} {sc.expect_path(base)}"
    bif = report.bifurcation
    if bif is None:
        return Outcome(sc.name, expected, "no anomaly", False, 0.0)
    got = f"{bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    path = bif.get("path") or ""
    correct = (
        bif.get("probe") in sc.expect_probe
        and bif.get("errno") == sc.expect_errno
        and fnmatch.fnmatchcase(path, sc.expect_path(base))
    )
    return Outcome(sc.name, expected, got, correct, 0.0, {"bifurcation": bif})


def run_scenario(sc: Scenario, recorder, out_dir: Path) -> Outcome:
    from baseline.run.diff import diff_traces

    t0 = time.perf_counter()
    goods, bad, base = record_scenario(sc, recorder, out_dir)
    report = diff_traces(good=goods, bad=bad)
    outcome = judge(sc, report, base)
    outcome.seconds = time.perf_counter() - t0
    outcome.detail["files"] = [str(p) for p in [*goods, bad]]
    return outcome


def run_no_anomaly(case: NoAnomalyCase, recorder, out_dir: Path) -> Outcome:
    from baseline.run.diff import diff_traces

    t0 = time.perf_counter()
    base = ROOT / case.name
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    try:
        for i in range(case.runs):
            fresh_dir(base)
            case.setup(base, i)
            files.append(record_run(recorder, case.argv(base), out_dir / f"{case.name}-{i}.parquet", "good"))
    finally:
        if base.exists():
            fresh_dir(base)
            base.rmdir()
    report = diff_traces(good=files[:-1], bad=files[-1])
    outcome = quiet_outcome(case.name, report)
    outcome.seconds = time.perf_counter() - t0
    outcome.detail["report"] = report.to_dict() if report.anomaly else None
    return outcome


def quiet_outcome(name: str, report) -> Outcome:
    """A good-vs-good diff's outcome: correct when it reports no anomaly."""
    bif = report.bifurcation
    got = "no anomaly" if not report.anomaly else f"{bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    return Outcome(name, "no anomaly", got, not report.anomaly, 0.0)


def fault_recorded(sc: Scenario, bad: Path, base: Path) -> bool:
    """The scenario's fault is really in the bad recording: a call of its probe with its errno
    (none: no errno) at its path, under either path of a two-path call or in the argument."""
    import polars as pl

    from tracer.schema import read_events

    errno = pl.col("errno").is_null() if sc.expect_errno is None else pl.col("errno") == sc.expect_errno
    hit = read_events(bad).filter(pl.col("probe").is_in(list(sc.expect_probe)) & errno)
    paths = hit["path"].to_list() + [p for p in hit["path2"].to_list() + hit["arg"].to_list() if p]
    want = sc.expect_path(base)
    return any(fnmatch.fnmatchcase(p or "", want) for p in paths)


def xfail_param(name: str, reasons: dict[str, str]):
    """pytest.param(name), strictly expected to fail when `reasons` names it."""
    import pytest

    return pytest.param(name, id=name, marks=pytest.mark.xfail(reason=reasons[name], strict=True)
                        if name in reasons else ())


def check_fault_case(sc: Scenario, recorder, out_dir: Path, outcomes: list[Outcome], quiet: list[Outcome], *,
                     check_recorded: bool = True, flaky_quiet: dict[str, str] | None = None) -> None:
    """A real-program test of every set: three good runs and the bad one recorded; the diff of
    two good runs against the bad one must name the fault at top 1 and the third good run
    against the same two must be quiet. Both outcomes go to the module's tables (printed at its
    end). `check_recorded=False` for a recorder miss, whose diff is judged on what the
    recording has; a quiet miss named in `flaky_quiet` (timing) is an xfail, never asserted."""
    import dataclasses

    import pytest

    from baseline.run.diff import diff_traces

    sc = dataclasses.replace(sc, good_runs=3)
    goods, bad, base = record_scenario(sc, recorder, out_dir)
    if check_recorded:
        assert fault_recorded(sc, bad, base), f"{sc.name}: fault not recorded"
    good_vs_good = quiet_outcome(sc.name, diff_traces(good=goods[:2], bad=goods[2]))
    quiet.append(good_vs_good)
    outcome = judge(sc, diff_traces(good=goods[:2], bad=bad), base)
    outcomes.append(outcome)
    assert outcome.correct, f"{sc.name}: expected {outcome.expected}, diff said {outcome.got}"
    if not good_vs_good.correct and sc.name in (flaky_quiet or {}):
        pytest.xfail(f"good vs good reported {good_vs_good.got}: {flaky_quiet[sc.name]}")
    assert good_vs_good.correct, f"{sc.name}: good vs good reported {good_vs_good.got}"


def check_noise_case(case: NoAnomalyCase, recorder, out_dir: Path, quiet: list[Outcome],
                     flaky_quiet: dict[str, str] | None = None) -> None:
    """A good-vs-good noise case of a real-program set must be quiet; a timing-dependent miss
    named in `flaky_quiet` is an xfail when it happens, never asserted."""
    import pytest

    outcome = run_no_anomaly(case, recorder, out_dir)
    quiet.append(outcome)
    if not outcome.correct and case.name in (flaky_quiet or {}):
        pytest.xfail(f"good vs good reported {outcome.got}: {flaky_quiet[case.name]}")
    assert outcome.correct, f"{case.name}: good vs good reported {outcome.got}"


def report_outcomes(request, sections: list[tuple[str, list[Outcome]]]) -> None:
    """Print each (heading, outcomes) table at the end of a test module (pytest's terminal)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not any(outcomes for _, outcomes in sections):
        return
    reporter.write_line("")
    for heading, outcomes in sections:
        reporter.write_line(heading)
        for line in format_table(outcomes).splitlines():
            reporter.write_line(line)


def format_table(outcomes: list[Outcome]) -> str:
    if not outcomes:
        return "(nothing run)"
    width = max(len(o.name) for o in outcomes)
    lines = [f"{'scenario':<{width}}  top-1  {'expected':<60}  got"]
    for o in outcomes:
        mark = "ok   " if o.correct else "WRONG"
        got = o.got if len(o.got) <= 100 else o.got[:97] + "..."
        lines.append(f"{o.name:<{width}}  {mark}  {o.expected:<60}  {got}")
    right = sum(o.correct for o in outcomes)
    lines.append(f"accuracy: {right}/{len(outcomes)} = {right / len(outcomes):.0%}")
    return "\n".join(lines)
