"""A sixty-fifth set of real programs with one real fault each: **retries, backoff and transient
faults** -- programs that try an operation again when it fails, as a job's start-up does with an
agent that is still coming up, a lock another job still holds, a reader not there yet. In the bad
run the fault persists through every try and the program gives up; the expectation is the
failing call ``strace -f`` shows first (every later try fails the same way at the same place, so
the first is where the run left known-good behaviour):

- ``curl --retry 1 --retry-all-errors --unix-socket S`` with S taken by a datagram socket (a
  metrics agent bound the path the job's agent should have): connect EPROTOTYPE S, a poll of
  no descriptors for 1 s, connect EPROTOTYPE again, exit 7;
- ``wget --tries=3 --waitretry=0`` against a loopback HTTP server that resets every connection
  after the request (a proxy without its backend): recvfrom(MSG_PEEK) ECONNRESET, three times,
  exit 4;
- ``socat UNIX-CONNECT:S,retry=3,interval=0.05`` with the agent's socket never created: connect
  ENOENT S, four times 50 ms apart, exit 1;
- ``tb65-retry lock F`` (the set's own C program: fcntl F_SETLK, backoff 20/40/80 ms) with a live
  job holding F: fcntl EAGAIN, four times, exit 75;
- ``tb65-retry fifo F`` (the same program: open O_WRONLY|O_NONBLOCK of a FIFO) with no reader:
  openat ENXIO F, four times, exit 75;
- ``tb65-retry wait F`` (the same program: a read of a FIFO under a 50 ms alarm without
  SA_RESTART) with no writer: read ERESTARTSYS F (what strace shows; userspace gets EINTR), four
  times, exit 75;
- ``t65-publish.py`` (the set's own python3 script: rename of its result over the destination,
  backoff 20/40/80 ms) with the destination a mount point (a reader's bind mount left over it):
  rename EBUSY, four times, exit 75;
- ``timeout 20 sh -c 'until mkdir LOCK; do ... sleep 0.05; done'`` (a job script's lock
  directory) with LOCK left by a job that died: mkdir EEXIST, three times, exit 75.

Noise cases (``QUIET_SIXTYFIFTH``): good runs that differ in how many tries they needed. Two good
runs need none; the third meets a transient fault and recovers -- made deterministic by the
case's helper (programs/t65_retries/t65-helper.py), which keeps the fault until it sees the
program in its backoff (a process of the case sleeping in nanosleep or in a poll of no
descriptors, or queued on the flock in /proc/locks) and only then removes it: curl's agent
restarted after a refused first try, socat's socket appearing after its first ENOENT, flock -w
waiting for a lock the holder then releases, sqlite3's busy handler waiting out another
connection's exclusive transaction, tb65-retry's lock released after its first EAGAIN, wget's
first connection reset, the job script's stale lock directory removed after its first mkdir.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from .files import run_quiet
from .harness import PROGRAMS, PY, ROOT, NoAnomalyCase, Scenario, _port_block, unmount_under

SRC = PROGRAMS / "t65_retries"
HELPER = str(SRC / "t65-helper.py")
PUBLISH = str(SRC / "t65-publish.py")
RETRY = str(ROOT / "_cc65" / "tb65-retry")
OPEN = frozenset({"openat", "open", "openat2"})
CONNECT = frozenset({"connect"})
READ = frozenset({"read", "recvfrom", "recv", "recvmsg", "readv"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
FCNTL = frozenset({"fcntl"})
READY_TIMEOUT = 60.0

_HELPERS: dict[str, subprocess.Popen] = {}  # a case's directory name -> its helper


def retry_bin() -> str:
    """tb65-retry, compiled once per session at a fixed path (the same in every run)."""
    out = Path(RETRY)
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / f".tb65-retry.{os.getpid()}.tmp"
        run_quiet("gcc", "-O1", "-o", str(tmp), str(SRC / "tb65-retry.c"))
        tmp.chmod(0o755)
        tmp.rename(out)
    return RETRY


@functools.cache
def http_port() -> int:
    """A loopback port of this set's own for wget's server, reserved as the harness reserves its block."""
    return _port_block(1)[0]


# --- the other side of a run: a helper process, started before the recorded run ---------------------------------------
def stop_helper(base: Path) -> None:
    """End the helper this case started (by its pid), if any."""
    proc = _HELPERS.pop(base.name, None)
    if proc is None:
        return
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout:
        proc.stdout.close()


def helper(base: Path, *args: str, after: bool = False) -> None:
    """Start t65-helper.py MODE TARGET for this case and wait for its `ready` line (polled, with
    a generous deadline). after=True: the fault stays until the program is seen in its backoff."""
    stop_helper(base)
    argv = [*PY, HELPER, *args, *(["--after", f"{base}/"] if after else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    _HELPERS[base.name] = proc
    deadline = time.monotonic() + READY_TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            stop_helper(base)
            raise AssertionError(f"t65-helper {' '.join(args)} was not ready in {READY_TIMEOUT:.0f} s")
        chunk = proc.stdout.read1(64)
        if not chunk:
            code = proc.wait(timeout=30)
            stop_helper(base)
            raise AssertionError(f"t65-helper {' '.join(args)} exited {code} before it was ready")
        line += chunk
    assert line.strip() == b"ready", line


def _run_dir(base: Path) -> Path:
    run = base / "run"
    run.mkdir()
    return run


def _argv(cmd: list[str]):
    return lambda b: [c.replace("{b}", str(b)) for c in cmd]


def _sc(name, program, argv, build, probe, errno, path, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=stop_helper, description=description)


# --- fault setups ---------------------------------------------------------------------------------------------------
CURL_FAULT = ["/usr/bin/curl", "-sS", "--retry", "1", "--retry-all-errors", "--retry-delay", "1", "--max-time", "30",
              "--unix-socket", "{b}/run/agent.sock", "-o", "{b}/ready.json", "http://t65-agent/v1/ready"]


def curl_build(base: Path, bad: bool) -> None:
    run = _run_dir(base)
    helper(base, "unix-dgram" if bad else "unix-http", str(run / "agent.sock"))


WGET = ["/usr/bin/wget", "-q", "--tries=3", "--waitretry=0", "-O", "{b}/job.json", "http://127.0.0.1:{port}/job.json"]


def _wget_argv(b: Path) -> list[str]:
    return [c.replace("{b}", str(b)).replace("{port}", str(http_port())) for c in WGET]


def wget_build(base: Path, bad: bool) -> None:
    helper(base, "tcp", str(http_port()), *(["--reset"] if bad else []))


SOCAT = ["/usr/bin/socat", "-u", "UNIX-CONNECT:{b}/run/agent.sock,retry=3,interval=0.05", "CREATE:{b}/token"]


def socat_build(base: Path, bad: bool) -> None:
    run = _run_dir(base)
    if not bad:  # the bad node's agent never came up
        helper(base, "unix-echo", str(run / "agent.sock"))


def lock_build(base: Path, bad: bool) -> None:
    retry_bin()
    run = _run_dir(base)
    (run / "job.lock").write_text("")
    if bad:  # a live job holds the lock for good
        helper(base, "fcntl", str(run / "job.lock"))


def fifo_build(base: Path, bad: bool) -> None:
    retry_bin()
    run = _run_dir(base)
    os.mkfifo(run / "events.fifo")
    if not bad:  # the event collector has the FIFO open
        helper(base, "fifo-reader", str(run / "events.fifo"))


def wait_build(base: Path, bad: bool) -> None:
    retry_bin()
    run = _run_dir(base)
    os.mkfifo(run / "ready.fifo")
    if not bad:  # the launcher has written its record
        helper(base, "fifo-writer", str(run / "ready.fifo"))


def publish_build(base: Path, bad: bool) -> None:
    (base / "stage").mkdir()
    out = base / "out"
    out.mkdir()
    (out / "result.json").write_text('{"job": "t65", "previous": true}\n')
    if bad:  # a reader's bind mount still over the destination
        (base / "reader.json").write_text('{"reader": 1}\n')
        run_quiet("mount", "--bind", str(base / "reader.json"), str(out / "result.json"))


LOCK_SCRIPT = ('i=0; until mkdir "$1" 2>/dev/null; do i=$((i+1)); [ "$i" -ge 3 ] && exit 75; sleep 0.05; done; '
               'echo "$$" > "$1/owner"; echo work > "$2"; rm -r "$1"')
TIMEOUT = ["/usr/bin/timeout", "20", "/bin/sh", "-c", LOCK_SCRIPT, "sh", "{b}/lockd", "{b}/result"]


def timeout_build(base: Path, bad: bool) -> None:
    if bad:  # a job that died left its lock directory
        (base / "lockd").mkdir()
        (base / "lockd" / "owner").write_text("4242\n")


REAL_SIXTYFIFTH: list[Scenario] = [
    _sc("t65_curl_agent_socket_taken_by_datagram", "curl --retry 1 --retry-all-errors --unix-socket (agent)",
        _argv(CURL_FAULT), curl_build, CONNECT, "EPROTOTYPE", lambda b: f"unix:{b}/run/agent.sock",
        description="the agent's path is a datagram socket: connect EPROTOTYPE, retried after 1 s, exit 7"),
    _sc("t65_wget_server_resets_every_try", "wget --tries=3 --waitretry=0 (loopback HTTP)", _wget_argv, wget_build,
        READ, "ECONNRESET", lambda b: f"inet:127.0.0.1:{http_port()}",
        description="the server resets every connection: recvfrom(MSG_PEEK) ECONNRESET three times, exit 4"),
    _sc("t65_socat_agent_socket_never_appears", "socat UNIX-CONNECT:...,retry=3,interval=0.05",
        _argv(SOCAT), socat_build, CONNECT, "ENOENT", lambda b: f"unix:{b}/run/agent.sock",
        description="the agent never created its socket: connect ENOENT four times 50 ms apart, exit 1"),
    _sc("t65_retry_lock_held_by_live_job", "tb65-retry lock (fcntl F_SETLK with backoff)",
        _argv([RETRY, "lock", "{b}/run/job.lock"]), lock_build, FCNTL, "EAGAIN", lambda b: f"{b}/run/job.lock",
        description="another process holds the write lock: fcntl F_SETLK EAGAIN four times, exit 75"),
    _sc("t65_retry_fifo_without_reader", "tb65-retry fifo (nonblocking open of a FIFO with backoff)",
        _argv([RETRY, "fifo", "{b}/run/events.fifo"]), fifo_build, OPEN, "ENXIO", lambda b: f"{b}/run/events.fifo",
        description="no reader has the FIFO open: openat O_WRONLY|O_NONBLOCK ENXIO four times, exit 75"),
    _sc("t65_retry_wait_without_writer", "tb65-retry wait (a read under a 50 ms alarm with backoff)",
        _argv([RETRY, "wait", "{b}/run/ready.fifo"]), wait_build, READ, "ERESTARTSYS",
        lambda b: f"{b}/run/ready.fifo",
        description="no writer: each read interrupted by SIGALRM (strace: ERESTARTSYS), four times, exit 75"),
    _sc("t65_publish_destination_still_mounted", "python3 t65-publish.py (rename with backoff)",
        _argv([*PY, PUBLISH, "{b}/stage", "{b}/out/result.json"]), publish_build, RENAME, "EBUSY",
        lambda b: f"{b}/stage/result.json.tmp",
        description="the destination is a mount point: rename EBUSY four times, exit 75"),
    _sc("t65_timeout_lock_dir_left_by_dead_job", "timeout 20 sh -c 'until mkdir LOCK; do sleep 0.05; done'",
        _argv(TIMEOUT), timeout_build, MKDIR, "EEXIST", lambda b: f"{b}/lockd",
        description="a dead job's lock directory: mkdir EEXIST three times, exit 75"),
]


# --- good runs that needed more tries ---------------------------------------------------------------------------------
TRANSIENT_RUN = 2  # runs 0 and 1 need no retry; the last run (diffed against them) meets a transient fault


def curl_noise(base: Path, run: int) -> None:
    agent = _run_dir(base) / "agent.sock"
    helper(base, "unix-http", str(agent), after=run == TRANSIENT_RUN)


def socat_noise(base: Path, run: int) -> None:
    agent = _run_dir(base) / "agent.sock"
    helper(base, "unix-echo", str(agent), after=run == TRANSIENT_RUN)


def flock_noise(base: Path, run: int) -> None:
    lock = _run_dir(base) / "job.lock"
    lock.write_text("")
    if run == TRANSIENT_RUN:  # held until flock queues behind it
        helper(base, "flock", str(lock), after=True)
    else:
        stop_helper(base)


def sqlite_noise(base: Path, run: int) -> None:
    db = base / "jobs.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE jobs (name TEXT, state TEXT)")
        conn.execute("INSERT INTO jobs VALUES ('t65-first', 'done')")
    conn.close()
    if run == TRANSIENT_RUN:  # another connection's exclusive transaction, ended once sqlite3 waits
        helper(base, "sqlite", str(db), after=True)
    else:
        stop_helper(base)


def lock_noise(base: Path, run: int) -> None:
    retry_bin()
    lock = _run_dir(base) / "job.lock"
    lock.write_text("")
    if run == TRANSIENT_RUN:
        helper(base, "fcntl", str(lock), after=True)
    else:
        stop_helper(base)


def wget_noise(base: Path, run: int) -> None:
    helper(base, "tcp", str(http_port()), *(["--reset-first"] if run == TRANSIENT_RUN else []))


def timeout_noise(base: Path, run: int) -> None:
    if run == TRANSIENT_RUN:  # the previous job's lock directory, removed after the first mkdir
        (base / "lockd").mkdir()
        helper(base, "rmdir", str(base / "lockd"), after=True)
    else:
        stop_helper(base)


CURL_QUIET = ["/usr/bin/curl", "-sS", "--retry", "3", "--retry-connrefused", "--retry-delay", "1", "--max-time", "30",
              "--unix-socket", "{b}/run/agent.sock", "-o", "{b}/ready.json", "http://t65-agent/v1/ready"]
SOCAT_QUIET = ["/usr/bin/socat", "-u", "UNIX-CONNECT:{b}/run/agent.sock,retry=20,interval=0.05", "CREATE:{b}/token"]
SQLITE = ["/usr/bin/sqlite3", "-cmd", ".timeout 20000", "{b}/jobs.db",
          "INSERT INTO jobs VALUES ('t65', 'queued'); SELECT count(*) FROM jobs;"]
TIMEOUT_QUIET = ["/usr/bin/timeout", "20", "/bin/sh", "-c", LOCK_SCRIPT.replace("-ge 3", "-ge 200"), "sh", "{b}/lockd",
                 "{b}/result"]

QUIET_SIXTYFIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t65_curl_agent_restarted_after_first_try", _argv(CURL_QUIET), curl_noise,
                  description="the last run's agent socket is stale (ECONNREFUSED) until curl's first retry wait"),
    NoAnomalyCase("t65_socat_agent_socket_appears_late", _argv(SOCAT_QUIET), socat_noise,
                  description="the last run's agent socket appears after socat's first ENOENT"),
    NoAnomalyCase("t65_flock_lock_released_while_waiting",
                  _argv(["/usr/bin/flock", "-w", "20", "{b}/run/job.lock", "/usr/bin/true"]), flock_noise,
                  description="the last run's flock waits for a holder that lets go once it queues"),
    NoAnomalyCase("t65_sqlite_busy_handler_waits_out_a_writer", _argv(SQLITE), sqlite_noise,
                  description="the last run's sqlite3 meets another connection's exclusive transaction, "
                              "waits (busy timeout) and goes on"),
    NoAnomalyCase("t65_retry_lock_released_after_first_try", _argv([RETRY, "lock", "{b}/run/job.lock"]), lock_noise,
                  description="the last run's tb65-retry meets a held lock once (EAGAIN), then gets it"),
    NoAnomalyCase("t65_wget_first_connection_reset", _wget_argv, wget_noise,
                  description="the last run's first connection is reset (ECONNRESET); wget's second try succeeds"),
    NoAnomalyCase("t65_timeout_lock_dir_freed_after_first_try", _argv(TIMEOUT_QUIET), timeout_noise,
                  description="the last run's lock directory is held by the previous job until its first mkdir fails"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: every helper this set started is ended (by its pid), and the mounts
    under a case's directory are undone."""
    for name in list(_HELPERS):
        stop_helper(Path(name))
    if ROOT.exists():
        for base in ROOT.glob("t65_*"):
            unmount_under(base)
