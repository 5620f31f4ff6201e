"""A sixteenth set of real programs with one real fault each: time, identity and process
lifecycle -- the clock a job's time-sync step adjusts, the identity a launcher switches to,
the root it confines a job to, and the processes it finds through a pid file -- in (call,
errno) pairs the first fifteen sets do not have.

- **time** (a job's time-sync step run by a launcher that dropped to nobody on the bad host):
  the clock's tick set (adjtimex EPERM), the kernel's timezone set (settimeofday EPERM);
- **identity**: a job switching to its service account after the launcher already dropped to
  nobody (setreuid EPERM, setregid EPERM), ``hostname`` setting a container's name in a UTS
  namespace of its own after ``setpriv`` dropped to nobody (sethostname EPERM);
- **confinement**: a job's root (os.chroot) missing on the bad host (chroot ENOENT);
- **process lifecycle through a stale pid file** (the worker the pid file names exited before
  the tool ran): ``renice -p`` (getpriority/setpriority ESRCH), ``ionice -p`` (ioprio_set ESRCH),
  ``chrt -p`` (sched_* ESRCH), ``taskset -p`` (sched_getaffinity ESRCH), ``prlimit --pid``
  (prlimit64 ESRCH), a liveness check of the worker's main thread (tgkill ESRCH) and of its
  session (getsid ESRCH);
- **children**: a job waiting for its pre-start hook, daemonized (double fork) on the bad host
  so no longer its child (waitid ECHILD);
- **arguments a config carries**: random bytes asked with GRND_RANDOM|GRND_INSECURE (getrandom
  EINVAL), SCHED_BATCH asked with a priority (sched_setscheduler EINVAL).

Most faults go through one python3 program, ``life.py``, a job's start-up as a plan of steps
(files read, clock and identity steps, children, liveness checks), so each fault sits among
the other steps' successful calls; the rest are renice, ionice, chrt, taskset, prlimit and
hostname, started by a start script whose argv is the same in every run (what differs is in
the run's files: the launcher's credentials, the pid file). The expectations are what
``strace -f`` shows a person looking for the fault (calls without a path: ``*``).

The good-vs-good cases (`QUIET_SIXTEENTH`) carry the noise of such start-ups: ``nice -n -5``
refused to nobody in every run (setpriority EACCES; nice runs the job anyway), the clock read
by nobody a varying number of times, helpers spawned and reaped in varying numbers, a stale pid
file probed with kill 0 in every run (ESRCH, the job starts a new worker), random buffers of
varying sizes, the scheduling of the job's own pid queried by chrt/ionice/taskset, and a
chroot into roots of varying content.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from .catalog import write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
NOBODY_UID = 65534
ROOT_CREDS = "--reuid=0 --regid=0 --clear-groups"
NOBODY_CREDS = f"--reuid={NOBODY_UID} --regid={NOBODY_UID} --clear-groups"
SERVICE_ID = 1000  # the job's service account (needs no passwd entry: ids are numbers)

LIFE_PY = r'''
import ctypes, os, sys
base = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_adjtimex, SYS_gettimeofday, SYS_settimeofday, SYS_tgkill = 159, 96, 164, 234
ADJ_TICK, TICK_OFFSET = 0x4000, 88  # struct timex: tick after modes..tolerance and time


def die(msg):
    sys.stderr.write(f"life: {msg}\n")
    sys.exit(1)


def syscall(*args):
    r = libc.syscall(*args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def pid_of(path):
    with open(path) as fh:
        return int(fh.read().split()[0])


for line in open(os.path.join(base, "plan")):
    op, *a = line.split()
    try:
        if op == "probe":  # an optional file: missing is fine
            try:
                with open(a[0]) as fh:
                    fh.read()
            except OSError:
                pass
        elif op == "read":
            with open(a[0]) as fh:
                fh.read()
        # --- time
        elif op == "clock_read":  # count: the clock's state read (modes 0), as chronyc does
            for _ in range(int(a[0])):
                syscall(SYS_adjtimex, ctypes.create_string_buffer(256))
        elif op == "clock_tick":  # the tick read, then set to what was read (a no-op change)
            tx = ctypes.create_string_buffer(256)
            syscall(SYS_adjtimex, tx)
            ctypes.c_uint32.from_buffer(tx, 0).value = ADJ_TICK
            syscall(SYS_adjtimex, tx)
        elif op == "timezone":  # the kernel's timezone read, then set to it (tz only, no time)
            tz = (ctypes.c_int * 2)()
            syscall(SYS_gettimeofday, None, tz)
            if tz[0]:  # the first tz-only set warps a non-UTC clock: never touch such a host
                die("timezone: the kernel's timezone is not UTC; left alone")
            syscall(SYS_settimeofday, None, tz)
        # --- identity
        elif op == "setreuid":
            os.setreuid(int(a[0]), int(a[0]))
        elif op == "setregid":
            os.setregid(int(a[0]), int(a[0]))
        elif op == "chroot":  # root file: the job confined, then its config read inside
            os.chroot(a[0])
            os.chdir("/")
            with open(a[1]) as fh:
                fh.read()
        # --- children
        elif op == "hook":  # mode-file: the pre-start hook, run directly or daemonized
            with open(a[0]) as fh:
                mode = fh.read().strip()
            if mode == "direct":
                pid = os.fork()
                if pid == 0:
                    os.execv("/bin/true", ["true"])
            else:  # double fork: the hook's parent exits, the hook is reparented
                r, w = os.pipe()
                mid = os.fork()
                if mid == 0:
                    gpid = os.fork()
                    if gpid == 0:
                        os.execv("/bin/true", ["true"])
                    os.write(w, str(gpid).encode())
                    os._exit(0)
                os.close(w)
                pid = int(os.read(r, 64))
                os.close(r)
                os.waitpid(mid, 0)
            os.waitid(os.P_PID, pid, os.WEXITED)
        elif op == "spawn":  # count: helpers run and reaped
            for _ in range(int(a[0])):
                pid = os.fork()
                if pid == 0:
                    os.execv("/bin/true", ["true"])
                os.waitpid(pid, 0)
        # --- liveness through a pid file
        elif op == "thread_alive":  # pidfile: the worker's main thread, signal 0
            pid = pid_of(a[0])
            syscall(SYS_tgkill, pid, pid, 0)
        elif op == "session_of":  # pidfile: the worker's session
            os.getsid(pid_of(a[0]))
        elif op == "stale_ok":  # pidfile: an old worker probed; gone is fine (a new one starts)
            try:
                os.kill(pid_of(a[0]), 0)
            except ProcessLookupError:
                pass
        # --- arguments from a config
        elif op == "random":  # bytes flags
            os.getrandom(int(a[0]), int(a[1]))
        elif op == "sched":  # policy priority
            os.sched_setscheduler(0, {"batch": os.SCHED_BATCH, "other": os.SCHED_OTHER}[a[0]],
                                  os.sched_param(int(a[1])))
        else:
            die(f"unknown step {op}")
    except OSError as e:
        die(f"{op} {a[0] if a else ''}: {e.strerror}")
print("life: ready")
'''


# --- how a run starts ---------------------------------------------------------------------------
def _life(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/life.py", str(b)]


def _start(b: Path) -> list[str]:
    """The job's start script: what it runs comes from the run's files, so argv is the same."""
    return ["/bin/sh", f"{b}/start.sh"]


def _usual(base: Path, *mid: str) -> None:
    """What every start does around its own steps: an optional host file probed (missing in
    every run), the job's config read."""
    write(base / "life.py", LIFE_PY)
    write(base / "job.conf", "ranks 2\n")
    write(base / "plan", "\n".join(["probe /etc/tracebase-life.conf", f"probe {base}/life.local",
                                    f"read {base}/job.conf", *mid]) + "\n")


def _script(base: Path, *lines: str) -> None:
    write(base / "start.sh", "set -e\n" + "\n".join(lines) + "\n")


def _launcher(base: Path, bad: bool, *mid: str) -> None:
    """The launcher runs the job under the credentials of its host's config: root on the good
    hosts, nobody on the bad one (a hardening change dropped privileges first)."""
    _usual(base, *mid)
    write(base / "creds", NOBODY_CREDS if bad else ROOT_CREDS)
    _script(base, f"exec /usr/bin/setpriv $(cat {base}/creds) {PY3} -S {base}/life.py {base}")


# --- time -----------------------------------------------------------------------------------------
def clock_tick(base: Path, bad: bool) -> None:
    _launcher(base, bad, "clock_read 1", "clock_tick")


def timezone_set(base: Path, bad: bool) -> None:
    _launcher(base, bad, "timezone")


# --- identity -------------------------------------------------------------------------------------
def switch_uid(base: Path, bad: bool) -> None:
    _launcher(base, bad, f"setreuid {SERVICE_ID}")


def switch_gid(base: Path, bad: bool) -> None:
    _launcher(base, bad, f"setregid {SERVICE_ID}")


def hostname_dropped(base: Path, bad: bool) -> None:
    # the container's name is set in a UTS namespace of its own (the host's name is untouched);
    # the bad launcher drops to nobody before, not after
    _usual(base)
    write(base / "creds", NOBODY_CREDS if bad else ROOT_CREDS)
    _script(base, f"exec /usr/bin/unshare -u /usr/bin/setpriv $(cat {base}/creds) /bin/sh -ec "
            f"'/usr/bin/hostname job-7; exec {PY3} -S {base}/life.py {base}'")


def chroot_missing(base: Path, bad: bool) -> None:
    # the job's root is unpacked by a provisioning step that did not run on the bad host
    if not bad:
        (base / "jail").mkdir()
        write(base / "jail" / "job.conf", "ranks 2\n")
    _usual(base, f"chroot {base}/jail /job.conf")


# --- a worker through its pid file ----------------------------------------------------------------
_WORKERS: dict[Path, subprocess.Popen] = {}


def _worker(base: Path, bad: bool) -> int:
    """The worker the pid file names: alive (a process of its own, outside the recorded tree)
    on the good hosts; on the bad one it exited (and was reaped) before the job started."""
    if bad:
        gone = subprocess.Popen(["/bin/true"])
        gone.wait()
        pid = gone.pid
    else:
        proc = subprocess.Popen(["/bin/sleep", "600"], stdin=subprocess.DEVNULL)
        _WORKERS[base] = proc
        pid = proc.pid
    write(base / "worker.pid", f"{pid}\n")
    return pid


def stop_worker(base: Path) -> None:
    proc = _WORKERS.pop(base, None)
    if proc is not None:
        proc.kill()
        proc.wait()


def _tool_on_worker(tool: str):
    """A setup: the worker's pid file, then `tool` aimed at its pid, then the job."""
    def setup(base: Path, bad: bool) -> None:
        _worker(base, bad)
        _usual(base)
        _script(base, f"{tool} $(cat {base}/worker.pid) >/dev/null", f"exec {PY3} -S {base}/life.py {base}")
    return setup


def thread_alive(base: Path, bad: bool) -> None:
    _worker(base, bad)
    _usual(base, f"thread_alive {base}/worker.pid")


def session_of(base: Path, bad: bool) -> None:
    _worker(base, bad)
    _usual(base, f"session_of {base}/worker.pid")


# --- children -------------------------------------------------------------------------------------
def hook_daemonized(base: Path, bad: bool) -> None:
    # the bad host's hook script backgrounds itself (a double fork): not the job's child
    write(base / "hook.mode", "daemon\n" if bad else "direct\n")
    _usual(base, f"hook {base}/hook.mode")


# --- arguments from a config ----------------------------------------------------------------------
def random_flags(base: Path, bad: bool) -> None:
    # GRND_NONBLOCK (1) on the good hosts; the bad config asks GRND_RANDOM|GRND_INSECURE (2|4)
    _usual(base, f"random 32 {6 if bad else 1}")


def batch_priority(base: Path, bad: bool) -> None:
    # SCHED_BATCH takes priority 0; the bad config carries the RT priority of an old template
    _usual(base, f"sched batch {10 if bad else 0}")


TIME_PROBES = frozenset({"adjtimex", "clock_adjtime"})

REAL_SIXTEENTH: list[Scenario] = [
    Scenario("clock_tick_set_after_privilege_drop", "setpriv (nobody on the bad host) python3 life: adjtimex ADJ_TICK",
             _start, clock_tick, TIME_PROBES, "EPERM", lambda b: NO_PATH,
             description="the time-sync step sets the tick without CAP_SYS_TIME: adjtimex EPERM"),
    Scenario("timezone_set_after_privilege_drop", "setpriv (nobody on the bad host) python3 life: settimeofday tz",
             _start, timezone_set, frozenset({"settimeofday"}), "EPERM", lambda b: NO_PATH,
             description="the kernel's timezone set without CAP_SYS_TIME: settimeofday EPERM"),
    Scenario("service_uid_switch_after_privilege_drop", "setpriv (nobody on the bad host) python3 life: setreuid 1000",
             _start, switch_uid, frozenset({"setreuid"}), "EPERM", lambda b: NO_PATH,
             description="nobody cannot become the service account: setreuid EPERM"),
    Scenario("service_gid_switch_after_privilege_drop", "setpriv (nobody on the bad host) python3 life: setregid 1000",
             _start, switch_gid, frozenset({"setregid"}), "EPERM", lambda b: NO_PATH,
             description="nobody cannot take the service group: setregid EPERM"),
    Scenario("container_hostname_after_privilege_drop", "unshare -u setpriv (nobody on the bad host) hostname job-7",
             _start, hostname_dropped, frozenset({"sethostname"}), "EPERM", lambda b: NO_PATH,
             description="the UTS namespace belongs to root's user namespace: sethostname EPERM as nobody"),
    Scenario("chroot_into_a_root_never_unpacked", "python3 life: chroot jail",
             _life, chroot_missing, frozenset({"chroot"}), "ENOENT", lambda b: f"{b}/jail",
             description="the job's root directory is missing: chroot ENOENT"),
    Scenario("renice_of_an_exited_worker", "renice -n 5 -p $(cat worker.pid)",
             _start, _tool_on_worker("/usr/bin/renice -n 5 -p"), frozenset({"getpriority", "setpriority"}), "ESRCH",
             lambda b: NO_PATH, teardown=stop_worker,
             description="the pid file names a worker that exited: renice's getpriority ESRCH"),
    Scenario("ionice_of_an_exited_worker", "ionice -c 3 -p $(cat worker.pid)",
             _start, _tool_on_worker("/usr/bin/ionice -c 3 -p"), frozenset({"ioprio_set", "ioprio_get"}), "ESRCH",
             lambda b: NO_PATH, teardown=stop_worker,
             description="the pid file names a worker that exited: ioprio_set ESRCH"),
    Scenario("chrt_of_an_exited_worker", "chrt -b -p 0 $(cat worker.pid)",
             _start, _tool_on_worker("/usr/bin/chrt -b -p 0"),
             frozenset({"sched_getscheduler", "sched_getattr", "sched_setscheduler", "sched_setattr",
                        "sched_getparam"}), "ESRCH",
             lambda b: NO_PATH, teardown=stop_worker,
             description="the pid file names a worker that exited: chrt's sched_* call ESRCH"),
    Scenario("taskset_of_an_exited_worker", "taskset -p -c 0 $(cat worker.pid)",
             _start, _tool_on_worker("/usr/bin/taskset -p -c 0"),
             frozenset({"sched_getaffinity", "sched_setaffinity"}), "ESRCH",
             lambda b: NO_PATH, teardown=stop_worker,
             description="the pid file names a worker that exited: taskset's sched_getaffinity ESRCH"),
    Scenario("prlimit_of_an_exited_worker", "prlimit --nofile=1024:4096 --pid $(cat worker.pid)",
             _start, _tool_on_worker("/usr/bin/prlimit --nofile=1024:4096 --pid"), frozenset({"prlimit64"}),
             "ESRCH", lambda b: NO_PATH, teardown=stop_worker,
             description="the pid file names a worker that exited: prlimit64 ESRCH"),
    Scenario("main_thread_of_an_exited_worker", "python3 life: tgkill(pid, pid, 0)",
             _life, thread_alive, frozenset({"tgkill"}), "ESRCH", lambda b: NO_PATH, teardown=stop_worker,
             description="the liveness check of the worker's main thread: tgkill ESRCH"),
    Scenario("session_of_an_exited_worker", "python3 life: getsid(pid)",
             _life, session_of, frozenset({"getsid"}), "ESRCH", lambda b: NO_PATH, teardown=stop_worker,
             description="the worker's session asked after it exited: getsid ESRCH"),
    Scenario("wait_for_a_daemonized_hook", "python3 life: waitid(P_PID, hook)",
             _life, hook_daemonized, frozenset({"waitid"}), "ECHILD", lambda b: NO_PATH,
             description="the hook double-forked on the bad host: not the job's child, waitid ECHILD"),
    Scenario("random_bytes_with_contradictory_flags", "python3 life: getrandom(GRND_RANDOM|GRND_INSECURE)",
             _life, random_flags, frozenset({"getrandom"}), "EINVAL", lambda b: NO_PATH,
             description="GRND_RANDOM with GRND_INSECURE: getrandom EINVAL"),
    Scenario("batch_policy_with_a_priority", "python3 life: sched_setscheduler(SCHED_BATCH, 10)",
             _life, batch_priority, frozenset({"sched_setscheduler"}), "EINVAL", lambda b: NO_PATH,
             description="SCHED_BATCH takes priority 0 only: sched_setscheduler EINVAL"),
]


# --- good-vs-good noise ---------------------------------------------------------------------------
def _nice_refused(base: Path, run: int) -> None:
    _usual(base, f"spawn {random.choice([1, 2, 3])}")
    _script(base, f"exec /usr/bin/setpriv {NOBODY_CREDS} /usr/bin/nice -n -5 {PY3} -S {base}/life.py {base}")


def _clock_reads(base: Path, run: int) -> None:
    _usual(base, f"clock_read {random.choice([1, 3, 6])}")
    _script(base, f"exec /usr/bin/setpriv {NOBODY_CREDS} {PY3} -S {base}/life.py {base}")


def _helpers_vary(base: Path, run: int) -> None:
    write(base / "hook.mode", "direct\n")
    _usual(base, f"spawn {random.choice([1, 2, 4])}", f"hook {base}/hook.mode")


def _stale_pidfile(base: Path, run: int) -> None:
    _worker(base, True)  # exited in every run: the job probes it and starts afresh
    _usual(base, f"stale_ok {base}/worker.pid", f"spawn {random.choice([1, 2])}")


def _random_sizes(base: Path, run: int) -> None:
    _usual(base, *[f"random {random.choice([16, 32, 256, 4096])} 1" for _ in range(random.choice([1, 2, 3]))])


def _own_sched_queries(base: Path, run: int) -> None:
    # the same three tools in every run (which tools run is the job's work, not noise); what
    # varies is the pid they are given -- the start script's own -- and the helpers after
    _usual(base, f"spawn {random.choice([1, 2, 3])}")
    _script(base, *[f"{t} $$ >/dev/null" for t in ("/usr/bin/chrt -p", "/usr/bin/ionice -p", "/usr/bin/taskset -p")],
            f"exec {PY3} -S {base}/life.py {base}")


def _chroot_vary(base: Path, run: int) -> None:
    (base / "jail").mkdir()
    write(base / "jail" / "job.conf", "ranks 2\n" * random.choice([1, 50, 500]))
    for i in range(random.choice([0, 2, 5])):
        write(base / "jail" / f"extra{i}", "x\n")
    _usual(base, f"chroot {base}/jail /job.conf")


QUIET_SIXTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("nice_refused_to_nobody_every_run", _start, _nice_refused,
                  description="nice -n -5 as nobody: setpriority EACCES in every run, the job runs anyway"),
    NoAnomalyCase("clock_read_by_nobody_varies", _start, _clock_reads,
                  description="adjtimex with modes 0 (a read) 1 to 6 times, as nobody"),
    NoAnomalyCase("helpers_spawned_and_reaped_vary", _life, _helpers_vary,
                  description="1 to 4 helpers forked and reaped, then the hook waited for"),
    NoAnomalyCase("stale_pid_file_probed_every_run", _life, _stale_pidfile,
                  description="kill(pid, 0) ESRCH on an old worker's pid in every run; pids vary"),
    NoAnomalyCase("random_buffer_sizes_vary", _life, _random_sizes,
                  description="1 to 3 getrandom calls of 16 to 4096 bytes"),
    NoAnomalyCase("own_scheduling_queried", _start, _own_sched_queries,
                  description="chrt, ionice and taskset -p of the start script's own pid (varies)"),
    NoAnomalyCase("chroot_into_roots_of_varying_content", _life, _chroot_vary,
                  description="the job's root holds 1 to 6 files of varying size"),
]


def quiet_teardown() -> None:
    """Stop any worker a failed case left running."""
    for base in list(_WORKERS):
        stop_worker(base)


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
