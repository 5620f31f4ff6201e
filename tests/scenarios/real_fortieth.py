"""A fortieth set of real programs with one real fault each: **logging and metrics plumbing of jobs
and services** -- how a job's messages reach a syslog daemon, a log collector, a log file or a
Prometheus textfile collector, done with real tools: ``logger -u`` (util-linux), ``tee -a``,
``dd oflag=append,nonblock`` into a log shipper's FIFO, ``flock`` around log appends, ``savelog``,
``logrotate`` with ``copytruncate``, ``script -a`` typescripts, ``mv`` of a textfile collector's
``.prom`` file, and python3's logging handlers (SysLogHandler, SocketHandler, RotatingFileHandler,
FileHandler; tests/scenarios/programs/fortieth/logjob.py). The fault is one the host gives the job:

- **the daemon's socket**: ``logger -u`` as nobody to a syslog socket a daemon's restart left
  root:0600 (connect EACCES), ``logger -u`` to a daemon whose new config listens with a stream
  socket (the datagram connect EPROTOTYPE, then its stream retry), a SysLogHandler whose daemon did
  not start (connect ENOENT), a SocketHandler whose collector on loopback is down (its
  non-blocking connect's SO_ERROR: ECONNREFUSED), ``dd oflag=nonblock`` into a log shipper's
  FIFO that no shipper reads (open ENXIO);
- **the log volume**: ``tee -a`` into a full log tmpfs (write ENOSPC), ``flock`` on a lock file of
  a log tmpfs out of inodes (open ENOSPC), ``logrotate`` copytruncate on a full log tmpfs (the
  copy's write ENOSPC), ``savelog`` of a log directory bind-mounted read-only (its ``test -w``:
  faccessat2 EROFS), ``script -a`` into a read-only log directory (open EROFS), ``mv`` of a
  textfile collector's staged file into a collector directory mounted on its own (rename EXDEV,
  then mv's copy), a RotatingFileHandler whose namer puts backups on an archive volume of its own
  (rename EXDEV), a FileHandler as nobody of a log directory recreated root:0755 (open EACCES).

Faults (``t40_`` cases): logger's connect EACCES, logger's connect EPROTOTYPE, python3's connect
ENOENT, python3's getsockopt (SO_ERROR) ECONNREFUSED, dd's openat ENXIO, tee's write ENOSPC, flock's openat
ENOSPC, logrotate's write ENOSPC, savelog's faccessat2 EROFS, script's openat EROFS, mv's renameat2
EXDEV, python3's rename EXDEV, python3's openat EACCES.

Good runs vary naturally: random message contents (counts fixed), pids and timestamps in syslog
headers and pickled records, fillers of random size, listener threads' timing. Noise cases
(``QUIET_FORTIETH``) are good runs alone: logger -u -f to a datagram socket, SysLogHandler to a
datagram socket, SocketHandler to a loopback collector thread, RotatingFileHandler rotating at a
fixed record, a textfile collector's tmp + rename, flock + tee -a appends, logrotate copytruncate,
savelog with gzip.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import threading
from pathlib import Path

from .catalog import umount
from .files import shell_argv, token, write_file
from .harness import PROGRAMS, PY, ROOT, NoAnomalyCase, Scenario, _port_block

OPEN = frozenset({"openat", "open", "openat2", "creat"})
WRITE = frozenset({"write", "writev", "pwrite64", "pwritev", "copy_file_range", "sendfile", "sendfile64"})
CONNECT = frozenset({"connect"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
NOBODY_UID = 65534
MESSAGES = 8
LOGJOB = str(PROGRAMS / "fortieth" / "logjob.py")
# a loopback port of this set's own (no other set's service meets this set's collector)
COLLECTOR_PORT = _port_block(1)[0]


def _text(lo: int, hi: int) -> str:
    return "".join(f"{token(4)} line {i} {token(8)}\n" for i in range(random.randrange(lo, hi)))


def _msgs(base: Path, n: int = MESSAGES, width: int = 0) -> Path:
    """n messages of random contents (width > 0: all of that many characters)."""
    if width:
        lines = [f"job step {i:03d} {token(width)[:width]}" for i in range(n)]
    else:
        lines = [f"job step {i} done in {random.randrange(1, 99999)} ms ({token(random.randrange(2, 12))})"
                 for i in range(n)]
    return write_file(base / "msgs.txt", "".join(f"{line}\n" for line in lines))


def _tmpfs(target: Path, size: str, inodes: int | None = None) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    opts = f"mode=0755,size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tracebase-test", str(target)], check=True,
                   capture_output=True)
    return target


def _bind_ro(target: Path) -> None:
    """target bind-mounted on itself, read-only (a container's :ro volume)."""
    subprocess.run(["mount", "--bind", str(target), str(target)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)


def _own(path: Path, uid: int = NOBODY_UID) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for n in dirs + files:
            os.chown(os.path.join(root, n), uid, uid, follow_symlinks=False)


# --- listeners (not recorded): made by a setup, closed by a teardown or the next setup ----------------
_SOCKS: list[socket.socket] = []
_FDS: list[int] = []
_THREADS: list[threading.Thread] = []
_STOP = threading.Event()


def _stop_listeners(base: Path | None = None) -> None:  # noqa: ARG001 (a teardown's signature)
    _STOP.set()
    while _THREADS:
        _THREADS.pop().join(timeout=15)
    while _SOCKS:
        _SOCKS.pop().close()
    while _FDS:
        os.close(_FDS.pop())
    _STOP.clear()


def _unix_listener(path: Path, kind: int = socket.SOCK_DGRAM, mode: int = 0o666) -> None:
    """A syslog daemon's socket at path: datagrams queue on it (a few, never read); a stream
    socket listens with a backlog (its connections never accepted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(str(path))
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    os.chmod(path, mode)
    _SOCKS.append(s)


def _serve(srv: socket.socket) -> None:
    srv.settimeout(0.1)
    while not _STOP.is_set():
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass


def _tcp_collector() -> None:
    """A log collector on 127.0.0.1:COLLECTOR_PORT (logging's SocketHandler's peer): a thread
    accepting connections and reading them to their end."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", COLLECTOR_PORT))
    srv.listen(16)
    _SOCKS.append(srv)
    t = threading.Thread(target=_serve, args=(srv,), daemon=True)
    t.start()
    _THREADS.append(t)


def _fifo_reader(path: Path) -> None:
    """A log shipper's named pipe, its reading end held open (the shipper's in_pipe input)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path, 0o644)
    _FDS.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK))


def _umounting(*names: str, stop: bool = False):
    def teardown(base: Path) -> None:
        if stop:
            _stop_listeners()
        for n in names:
            umount(base / n)
    return teardown


def _fill(path: Path, free_kib: int, size_kib: int) -> None:
    """A filler leaving about free_kib KiB of a size_kib KiB tmpfs."""
    write_file(path, os.urandom((size_kib - free_kib) * 1024))


# --- logger -u as nobody: the syslog socket a daemon's restart left root:0600 -------------------------------
def _logger_argv(b: Path) -> list[str]:
    return ["logger", "-u", f"{b}/run/syslog.sock", "-t", "backup-job", "--id", "-f", f"{b}/msgs.txt"]


def logger_socket_root_only(base: Path, bad: bool) -> None:
    _stop_listeners()
    _msgs(base)
    # the daemon's socket is 0666, as rsyslog's imuxsock makes it; the bad run's daemon was
    # restarted by a unit with UMask=0077: root:0600
    _unix_listener(base / "run" / "syslog.sock", mode=0o600 if bad else 0o666)


# --- logger -u to a daemon now listening with a stream socket -------------------------------------------------
def logger_stream_listener(base: Path, bad: bool) -> None:
    _stop_listeners()
    _msgs(base)
    # the bad host's syslog-ng config: unix-stream("/run/syslog.sock") instead of unix-dgram
    _unix_listener(base / "run" / "syslog.sock", socket.SOCK_STREAM if bad else socket.SOCK_DGRAM)


# --- python3 SysLogHandler: the syslog daemon did not start -------------------------------------------------------
def _syslog_handler_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "syslog", f"{b}/run/log.sock", f"{b}/msgs.txt"]


def syslog_handler_daemon_down(base: Path, bad: bool) -> None:
    _stop_listeners()
    _msgs(base)
    (base / "run").mkdir()
    if not bad:  # the bad host's rsyslog failed to start: no socket
        _unix_listener(base / "run" / "log.sock")


# --- python3 SocketHandler: the loopback log collector is down ----------------------------------------------------
def _socket_handler_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "tcp", str(COLLECTOR_PORT), f"{b}/msgs.txt"]


def socket_handler_collector_down(base: Path, bad: bool) -> None:
    _stop_listeners()
    _msgs(base)
    if not bad:  # the bad run's collector sidecar crashed
        _tcp_collector()


# --- dd oflag=append,nonblock: the log shipper's FIFO with no reader ----------------------------------------------
def _dd_fifo_argv(b: Path) -> list[str]:
    return ["dd", f"if={b}/out/batch.log", f"of={b}/run/shipper.fifo", "oflag=append,nonblock", "conv=notrunc",
            "status=none"]


def dd_fifo_no_reader(base: Path, bad: bool) -> None:
    _stop_listeners()
    write_file(base / "out" / "batch.log", _text(20, 60))  # < 8 KiB: fits the pipe's buffer
    if bad:  # the shipper (fluent-bit's in_pipe) is not running: the FIFO stayed, nobody reads it
        (base / "run").mkdir()
        os.mkfifo(base / "run" / "shipper.fifo", 0o644)
    else:
        _fifo_reader(base / "run" / "shipper.fifo")


# --- tee -a: the job's output into a full log tmpfs ---------------------------------------------------------------
TEE_SH = 'cat "$1/out/job.out" | tee -a "$1/log/job.log" > /dev/null'


def tee_append_full_log(base: Path, bad: bool) -> None:
    write_file(base / "out" / "job.out", _text(1200, 1400))  # ~60 KiB
    _tmpfs(base / "log", "1m")
    write_file(base / "log" / "job.log", _text(5, 30))
    # the log volume: another job's debug log filled it (the bad run: 8 KiB left)
    _fill(base / "log" / "debug.log", 8 if bad else random.randrange(400, 800), 1024)


# --- flock: the lock file on a log tmpfs out of inodes ------------------------------------------------------------
FLOCK_SH = 'echo "$(date +%s) job finished" >> "$0"'


def _flock_argv(b: Path) -> list[str]:
    return ["flock", f"{b}/log/.app.lock", "/bin/sh", "-c", FLOCK_SH, f"{b}/log/app.log"]


def flock_log_out_of_inodes(base: Path, bad: bool) -> None:
    rotated = 6
    # the log volume: a tmpfs of a fixed number of inodes; the bad run's has as many as its files
    # (a rotation's leftovers took the rest): the root directory, app.log and the rotations
    _tmpfs(base / "log", "4m", inodes=rotated + 2 if bad else 64)
    write_file(base / "log" / "app.log", _text(5, 30))
    for n in range(1, rotated + 1):
        write_file(base / "log" / f"app.log.{n}", _text(5, 30))


# --- logrotate copytruncate: the copy on a full log tmpfs ---------------------------------------------------------
COPYTRUNCATE_CONF = """{b}/log/app.log {{
    rotate 3
    copytruncate
    nocompress
    missingok
}}
"""


def _logrotate_argv(b: Path) -> list[str]:
    return ["/usr/sbin/logrotate", "-f", "-s", f"{b}/state/logrotate.status", f"{b}/logrotate.conf"]


def _copytruncate_logs(base: Path, log_kib: int) -> None:
    write_file(base / "logrotate.conf", COPYTRUNCATE_CONF.format(b=base))
    write_file(base / "log" / "app.log", _text(log_kib * 1024 // 37, log_kib * 1024 // 37 + 1))
    write_file(base / "state" / "logrotate.status",
           f'logrotate state -- version 2\n"{base}/log/app.log" 2026-1-{random.randrange(1, 28)}-3:0:0\n')


def logrotate_copytruncate_full(base: Path, bad: bool) -> None:
    _tmpfs(base / "log", "1m")
    _copytruncate_logs(base, 200)
    _fill(base / "log" / "debug.log", 64 if bad else random.randrange(500, 700), 1024 - 200)


# --- savelog: the log directory bind-mounted read-only ------------------------------------------------------------
def _savelog_argv(b: Path) -> list[str]:
    return ["savelog", "-q", "-l", "-c", "3", f"{b}/log/app.log"]


def savelog_log_dir_ro(base: Path, bad: bool) -> None:
    write_file(base / "log" / "app.log", _text(10, 80))
    for n in (0, 1):
        write_file(base / "log" / f"app.log.{n}", _text(10, 80))
    if bad:  # the container's log volume came up :ro
        _bind_ro(base / "log")


# --- script -a: a session's typescript into a read-only log directory ---------------------------------------------
def _script_argv(b: Path) -> list[str]:
    return ["script", "-q", "-a", "-c", f"cat {b}/msgs.txt", f"{b}/log/session.log"]


def script_typescript_ro(base: Path, bad: bool) -> None:
    _msgs(base)
    write_file(base / "log" / "session.log", _text(2, 10))
    if bad:  # the audit log volume mounted read-only by the new host image
        _bind_ro(base / "log")


# --- mv: a textfile collector's staged .prom into a collector directory of its own --------------------------------
TEXTFILE_SH = ('while read -r name value; do printf "# TYPE %s gauge\\n%s %s\\n" "$name" "$name" "$value"; done '
               '< "$1/metrics.txt" > "$1/spool/backup.prom.tmp" && '
               'exec mv "$1/spool/backup.prom.tmp" "$1/textfile/backup.prom"')


def _metrics(base: Path) -> None:
    names = ("backup_last_success_seconds", "backup_bytes", "backup_files", "backup_duration_seconds")
    write_file(base / "metrics.txt", "".join(f"{n} {random.randrange(1, 10**9)}\n" for n in names))


def mv_textfile_across_mounts(base: Path, bad: bool) -> None:
    _metrics(base)
    (base / "spool").mkdir()
    (base / "textfile").mkdir()
    if bad:  # node_exporter's new deployment mounts its collector directory as a volume of its own
        _tmpfs(base / "textfile", "1m")
    write_file(base / "textfile" / "node.prom", f"node_boot 1{random.randrange(10**8)}\n")


# --- python3 RotatingFileHandler: backups named onto an archive volume of its own ---------------------------------
ROTATE_WIDTH = 48  # a record: 13 + 48 characters and a newline
ROTATE_MAX = 62 * 5 + 1  # the sixth record rolls the file over


def _rotate_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "rotate", f"{b}/log/app.log", f"{b}/archive", f"{b}/msgs.txt", str(ROTATE_MAX)]


def rotating_handler_archive_volume(base: Path, bad: bool) -> None:
    _msgs(base, width=ROTATE_WIDTH)
    (base / "log").mkdir()
    (base / "archive").mkdir()
    if bad:  # the new image mounts archive/ as a volume of its own (a cheaper disk for old logs)
        _tmpfs(base / "archive", "4m")


# --- python3 FileHandler as nobody: the log directory recreated root:0755 -----------------------------------------
def _file_handler_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "file", f"{b}/log/worker.log", f"{b}/msgs.txt"]


def file_handler_log_dir_root(base: Path, bad: bool) -> None:
    _msgs(base)
    (base / "log").mkdir()
    _own(base / "log")
    if bad:  # a provisioning run's `install -d /var/log/worker` recreated it root:0755
        os.chown(base / "log", 0, 0)


REAL_FORTIETH: list[Scenario] = [
    Scenario("t40_logger_socket_root_only", "logger -u -f (as nobody: a job's messages to syslog)", _logger_argv,
             logger_socket_root_only, CONNECT, "EACCES", lambda b: f"unix:{b}/run/syslog.sock",
             teardown=_stop_listeners, unprivileged=True,
             description="logger -u as nobody to a syslog socket a daemon's restart (UMask=0077) left root:0600 "
                         "(connect EACCES)"),
    Scenario("t40_logger_stream_listener", "logger -u -f (a job's messages to syslog)", _logger_argv,
             logger_stream_listener, CONNECT, "EPROTOTYPE", lambda b: f"unix:{b}/run/syslog.sock",
             teardown=_stop_listeners,
             description="logger -u to a daemon whose new config listens with a stream socket: the datagram "
                         "connect EPROTOTYPE, then logger's stream retry"),
    Scenario("t40_syslog_handler_daemon_down", "python3 SysLogHandler (a unix socket)", _syslog_handler_argv,
             syslog_handler_daemon_down, CONNECT, "ENOENT", lambda b: f"unix:{b}/run/log.sock",
             teardown=_stop_listeners,
             description="logging's SysLogHandler to the socket of a syslog daemon that did not start "
                         "(connect ENOENT, each record)"),
    Scenario("t40_socket_handler_collector_down", "python3 SocketHandler (a loopback log collector)",
             # SocketHandler connects with a timeout: a non-blocking connect (EINPROGRESS), the refusal
             # read back by getsockopt(SO_ERROR)
             _socket_handler_argv, socket_handler_collector_down, CONNECT | {"getsockopt"}, "ECONNREFUSED",
             lambda b: f"inet:127.0.0.1:{COLLECTOR_PORT}", teardown=_stop_listeners,
             description="logging's SocketHandler to a log collector sidecar on loopback that crashed "
                         "(its non-blocking connect's getsockopt SO_ERROR: ECONNREFUSED)"),
    Scenario("t40_dd_fifo_no_reader", "dd oflag=append,nonblock (a log batch into a shipper's FIFO)", _dd_fifo_argv,
             dd_fifo_no_reader, OPEN, "ENXIO", lambda b: f"{b}/run/shipper.fifo", teardown=_stop_listeners,
             description="dd oflag=nonblock of a log batch into a log shipper's named pipe that no shipper "
                         "reads (open ENXIO)"),
    Scenario("t40_tee_append_full_log", "tee -a (a job's output into its log)", lambda b: shell_argv(TEE_SH, str(b)),
             tee_append_full_log, WRITE, "ENOSPC", lambda b: f"{b}/log/job.log", teardown=_umounting("log"),
             description="tee -a of a job's ~60 KiB output into a log tmpfs another job's debug log filled "
                         "(write ENOSPC)"),
    Scenario("t40_flock_log_out_of_inodes", "flock (a lock file around a log append)", _flock_argv,
             flock_log_out_of_inodes, OPEN, "ENOSPC", lambda b: f"{b}/log/.app.lock", teardown=_umounting("log"),
             description="flock's lock file created on a log tmpfs with no inode left (open ENOSPC)"),
    Scenario("t40_logrotate_copytruncate_full", "logrotate -f (copytruncate)", _logrotate_argv,
             logrotate_copytruncate_full, WRITE, "ENOSPC", lambda b: f"{b}/log/app.log.1*",
             teardown=_umounting("log"),
             description="logrotate copytruncate of a 200 KiB log on a log tmpfs with 64 KiB left: the copy's "
                         "write ENOSPC"),
    Scenario("t40_savelog_log_dir_ro", "savelog -l -c 3 (a job's log)", _savelog_argv, savelog_log_dir_ro, ACCESS,
             "EROFS", lambda b: f"{b}/log*", teardown=_umounting("log"),
             description="savelog of a log in a directory bind-mounted read-only: its test -w of the "
                         "directory (faccessat2 EROFS)"),
    Scenario("t40_script_typescript_ro", "script -q -a -c (a session's typescript)", _script_argv,
             script_typescript_ro, OPEN, "EROFS", lambda b: f"{b}/log/session.log", teardown=_umounting("log"),
             description="script -a appending a session's typescript into a log directory mounted read-only "
                         "(open EROFS)"),
    Scenario("t40_mv_textfile_across_mounts", "mv (a textfile collector's staged .prom file)",
             lambda b: shell_argv(TEXTFILE_SH, str(b)), mv_textfile_across_mounts, RENAME, "EXDEV",
             lambda b: f"{b}/*backup.prom*", teardown=_umounting("textfile"),
             description="mv of a staged .prom file into a node_exporter textfile directory now a volume of its "
                         "own: rename EXDEV (then mv's non-atomic copy)"),
    Scenario("t40_rotating_handler_archive_volume", "python3 RotatingFileHandler (backups into an archive)",
             _rotate_argv, rotating_handler_archive_volume, RENAME, "EXDEV", lambda b: f"{b}/log/app.log",
             teardown=_umounting("archive"),
             description="RotatingFileHandler whose namer puts backups into archive/, a volume of its own: the "
                         "rollover's rename EXDEV"),
    Scenario("t40_file_handler_log_dir_root", "python3 FileHandler (as nobody: a worker's log)",
             _file_handler_argv, file_handler_log_dir_root, OPEN, "EACCES", lambda b: f"{b}/log/worker.log",
             unprivileged=True,
             description="FileHandler as nobody of a log directory a provisioning run recreated root:0755 "
                         "(open EACCES)"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _logger_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_listeners()
    _msgs(base)
    _unix_listener(base / "run" / "syslog.sock")


def _syslog_handler_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_listeners()
    _msgs(base)
    _unix_listener(base / "run" / "log.sock")


def _socket_handler_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_listeners()
    _msgs(base)
    _tcp_collector()


def _rotate_noise_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "rotate", f"{b}/log/app.log", "-", f"{b}/msgs.txt", str(ROTATE_MAX)]


def _rotate_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _msgs(base, width=ROTATE_WIDTH)
    (base / "log").mkdir()


def _textfile_noise_argv(b: Path) -> list[str]:
    return [*PY, LOGJOB, "textfile", f"{b}/textfile/backup.prom.tmp", f"{b}/textfile/backup.prom",
            f"{b}/metrics.txt"]


def _textfile_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _metrics(base)
    (base / "textfile").mkdir()
    write_file(base / "textfile" / "node.prom", f"node_boot 1{random.randrange(10**8)}\n")


FLOCK_TEE_SH = 'exec flock "$1/log/.app.lock" sh -c \'tee -a "$1/log/app.log" < "$1/out/job.out" > /dev/null\' sh "$1"'


def _flock_tee_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "out" / "job.out", _text(40, 400))
    write_file(base / "log" / "app.log", _text(5, 100))


def _copytruncate_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _copytruncate_logs(base, random.randrange(20, 200))


def _savelog_noise_argv(b: Path) -> list[str]:
    return ["savelog", "-q", "-c", "3", f"{b}/log/app.log"]


def _savelog_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "log" / "app.log", _text(10, 400))
    write_file(base / "log" / "app.log.0", _text(10, 400))
    subprocess.run(["gzip", "-c", str(base / "log" / "app.log.0")], check=True,
                   stdout=(base / "log" / "app.log.1.gz").open("wb"))


QUIET_FORTIETH: list[NoAnomalyCase] = [
    NoAnomalyCase("t40_logger_dgram_random_messages", _logger_argv, _logger_noise,
                  description="logger -u --id -f of eight messages of random contents to a datagram socket"),
    NoAnomalyCase("t40_syslog_handler_dgram", _syslog_handler_argv, _syslog_handler_noise,
                  description="SysLogHandler of eight messages of random contents to a datagram socket"),
    NoAnomalyCase("t40_socket_handler_loopback_collector", _socket_handler_argv, _socket_handler_noise,
                  description="SocketHandler of eight random messages to a collector thread on loopback"),
    NoAnomalyCase("t40_rotating_handler_fixed_rollover", _rotate_noise_argv, _rotate_noise,
                  description="RotatingFileHandler of eight records of fixed length and random contents, "
                              "rolling over at the sixth"),
    NoAnomalyCase("t40_textfile_tmp_rename", _textfile_noise_argv, _textfile_noise,
                  description="a textfile collector's .prom of four random gauges: tmp written, os.replace"),
    NoAnomalyCase("t40_flock_tee_append", lambda b: shell_argv(FLOCK_TEE_SH, str(b)), _flock_tee_noise,
                  description="flock around tee -a of a job's output of random length into its log"),
    NoAnomalyCase("t40_logrotate_copytruncate_random_log", _logrotate_argv, _copytruncate_noise,
                  description="logrotate -f copytruncate of a log of random size and contents"),
    NoAnomalyCase("t40_savelog_gzip_random_log", _savelog_noise_argv, _savelog_noise,
                  description="savelog -c 3 (gzip) of a log of random contents with two older cycles"),
]


def quiet_teardown() -> None:
    """Stop what any case may have left listening, and unmount its volumes."""
    _stop_listeners()
    for sc in REAL_FORTIETH:
        base = ROOT / sc.name
        for n in ("log", "textfile", "archive"):
            umount(base / n)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
