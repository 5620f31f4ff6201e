"""A forty-second set of real programs with one real fault each: **processes coordinating through
the file system** -- lock files (``flock``), state files locked by a periodic runner (``logrotate``'s
state), pidfiles written by daemons (``start-stop-daemon --make-pidfile``, a shell daemon's ``tee``)
and removed by the next start (``rm -f``), ``run-parts`` over a directory of hooks, a ``sqlite3``
queue database and a database shared read-only with its readers (python3's ``sqlite3``),
maildir-style spools (``mktemp`` in tmp/, ``mv`` tmp/ -> new/ -> cur/), an atomic release switch
(``ln -sfn``) and a periodic runner's stamp (``touch``). The fault is one the host gives the job:

- **a held lock**: the hourly logrotate still in its slow postrotate holds the state file's lock
  when the next one starts (logrotate's flock EAGAIN);
- **the layout of a lock, run or spool directory**: the lock directory a stray redirection made a
  file (flock's openat ENOTDIR), a state directory a package's postinst never made (sqlite3's
  full-path walk's lstat of the directory, newfstatat ENOENT, before the open of the database whose
  own stat fails ENOENT in every good run too), a maildir without its tmp/ (mktemp's openat ENOENT);
- **read-only and noexec mounts**: /run's app directory bind-mounted read-only (start-stop-daemon's
  child's openat of the pidfile EROFS), a maildir bind-mounted read-only for the reader (mv's
  renameat2 EROFS), the hooks' directory on a volume mounted noexec (run-parts' access X_OK EACCES:
  the hooks are silently skipped), a database its readers see through a read-only bind, which the
  writer switched to WAL (python3's sqlite3 reader: openat O_CREAT of queue.db-wal EROFS, after the
  open O_RDWR of the database itself that fails EROFS in the good runs too);
- **ownership**: a run directory that a reboot's tmpfiles recreated root:0755 (the daemon's tee of
  its pidfile, openat EACCES; the next start's rm -f of the stale pidfile, unlinkat EACCES, as
  nobody), a deploy directory a root-run bootstrap made (ln -sfn's temporary symlink, symlinkat
  EACCES, as nobody), a periodic runner's stamp a manual root run left root:0644 (touch's openat
  EACCES, as nobody).

Faults (``t42_`` cases): flock's openat ENOTDIR, logrotate's flock EAGAIN, start-stop-daemon's
openat EROFS, run-parts' access EACCES, sqlite3's newfstatat ENOENT, python3's openat EROFS,
mktemp's openat ENOENT, mv's renameat2 EROFS, tee's openat EACCES, rm's unlinkat EACCES, ln's
symlinkat EACCES, touch's openat EACCES.

Good runs vary naturally: random file and message names, random contents, pids, mktemp's and ln's
temporary names, the timing of concurrent lock holders. Noise cases (``QUIET_FORTYSECOND``) are good
runs alone: three shells contending for one flock, a start-stop-daemon start/stop cycle through a
pidfile, run-parts over hooks of random names, a sqlite3 WAL writer beside a concurrent reader, a
maildir delivery and read, logrotate of a log of random size with compression, ln -sfn switches
between releases of random names, a shell daemon killed through its pidfile.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from .files import chown_nobody, run_quiet, shell_argv, token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
UNLINK = frozenset({"unlink", "unlinkat"})
SYMLINK = frozenset({"symlink", "symlinkat"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
STAT = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64"})
FLOCK = frozenset({"flock"})
NOBODY_UID = 65534


def _text(lo: int, hi: int) -> str:
    return "".join(f"{token(4)} line {i} {token(8)}\n" for i in range(random.randrange(lo, hi)))


def _bind(target: Path, opts: str) -> None:
    """Bind target onto itself, then remount the bind with `opts` (ro / noexec)."""
    run_quiet("mount", "--bind", str(target), str(target))
    run_quiet("mount", "-o", f"remount,bind,{opts}", str(target))


def _unmount(target: Path) -> None:
    for _ in range(8):
        if subprocess.run(["mountpoint", "-q", str(target)], capture_output=True).returncode != 0:
            return
        if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)


class _Holders:
    """Processes a setup starts outside the recording (a lock holder), each in a session of its
    own, stopped by their process group id (the group of the process started here)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str]) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 - a teardown
        while self.procs:
            proc = self.procs.pop()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


HOLDERS = _Holders()


def _flock_held(path: Path) -> bool:
    """Someone holds a flock on path (/proc/locks names its inode)."""
    st = os.stat(path)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    with open("/proc/locks") as fh:
        return any(" FLOCK " in f" {line} " and key in line for line in fh)


# --- flock -n: the lock directory a stray redirection made a file ------------------------------------------
FLOCK_JOB_SH = 'echo "$$ $(date +%s%N)" >> "$1/spool/ran"'


def _flock_argv(b: Path) -> list[str]:
    return ["flock", "-n", f"{b}/run/lock/app/cron.lock", "/bin/sh", "-c", FLOCK_JOB_SH, "sh", str(b)]


def flock_lock_dir_is_file(base: Path, bad: bool) -> None:
    write_file(base / "spool" / "ran", _text(1, 6))
    if bad:  # a cleanup's `: > /run/lock/app` (meant for a log) left a file where the directory was
        write_file(base / "run" / "lock" / "app", "")
    else:
        (base / "run" / "lock" / "app").mkdir(parents=True)


# --- logrotate: the previous run, still in its slow postrotate, holds the state file's lock ----------------
def _logrotate_conf(base: Path, name: str, postrotate: str = "") -> Path:
    post = f"  postrotate\n    {postrotate}\n  endscript\n" if postrotate else ""
    return write_file(base / "etc" / f"{name}.conf",
                  f"{base}/log/{name}.log {{\n  rotate 3\n  missingok\n  nocompress\n{post}}}\n")


def _logrotate_argv(b: Path) -> list[str]:
    return ["/usr/sbin/logrotate", "-f", "-s", f"{b}/state/status", f"{b}/etc/app.conf"]


def logrotate_state_locked(base: Path, bad: bool) -> None:
    write_file(base / "log" / "app.log", _text(5, 60))
    write_file(base / "log" / "app.log.1", _text(5, 60))
    # logrotate writes its state 0640 (and takes no lock on a world-readable one)
    write_file(base / "state" / "status", f'logrotate state -- version 2\n"{base}/log/app.log" 2026-12-1-0:0:0\n', 0o640)
    _logrotate_conf(base, "app")
    if bad:  # the previous hourly run: its postrotate (a reload that hangs) keeps it, and its lock, alive
        write_file(base / "log" / "web.log", _text(5, 60))
        _logrotate_conf(base, "web", "sleep 120")
        HOLDERS.start(["/usr/sbin/logrotate", "-f", "-s", f"{base}/state/status", f"{base}/etc/web.conf"])
        deadline = time.monotonic() + 20
        while not _flock_held(base / "state" / "status"):
            if time.monotonic() > deadline:
                raise RuntimeError("the earlier logrotate never took its state file's lock")
            time.sleep(0.05)


# --- start-stop-daemon --make-pidfile: /run's app directory read-only ----------------------------------------
def _ssd_argv(b: Path) -> list[str]:
    return ["/usr/sbin/start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile", f"{b}/run/app/app.pid",
            "--chdir", "/", "--exec", "/usr/bin/sleep", "--", "0.3"]


def start_stop_daemon_run_ro(base: Path, bad: bool) -> None:
    (base / "run" / "app").mkdir(parents=True)
    write_file(base / "run" / "app" / ".keep", "")
    if bad:  # the unit's ReadOnlyPaths= copied onto the host's bind of /run/app (a ro bind)
        _bind(base / "run" / "app", "ro")


def _unmount_run_app(base: Path) -> None:
    _unmount(base / "run" / "app")


# --- run-parts: the hooks' directory on a volume mounted noexec ----------------------------------------------
HOOKS = ("10-rotate", "20-clean-spool", "50-report")


def _hooks(d: Path, names: tuple[str, ...] | list[str]) -> None:
    for name in names:
        write_file(d / name, f"#!/bin/sh\necho {token(4)} {name} >> \"{d.parent}/hooks.out\"\n", 0o755)


def _run_parts_argv(b: Path) -> list[str]:
    return ["run-parts", "--report", f"{b}/hooks.d"]


def run_parts_hooks_noexec(base: Path, bad: bool) -> None:
    _hooks(base / "hooks.d", HOOKS)
    if bad:  # the hooks were moved onto /srv, whose fstab line says noexec
        _bind(base / "hooks.d", "noexec")


def _unmount_hooks(base: Path) -> None:
    _unmount(base / "hooks.d")


# --- sqlite3: the state directory a package's postinst never made --------------------------------------------
SQL = ("create table if not exists jobs(id integer primary key, name text, state text);"
       "insert into jobs(name, state) values ('nightly', 'queued');")


def _sqlite_argv(b: Path) -> list[str]:
    return ["sqlite3", f"{b}/var/lib/app/queue.db", SQL]


def sqlite3_state_dir_missing(base: Path, bad: bool) -> None:
    (base / "var" / "lib").mkdir(parents=True)
    write_file(base / "var" / "lib" / "other" / f"{token(3)}.db", _text(1, 5))
    if not bad:  # the bad host's package left out the `install -d /var/lib/app` of its postinst
        (base / "var" / "lib" / "app").mkdir()


# --- mktemp in a maildir delivery: a spool without its tmp/ --------------------------------------------------
DELIVER_SH = ('f=$(mktemp -p "$1/Maildir/tmp" msg.XXXXXXXX) || exit 75; '
              'printf "From: cron\\nSubject: job %s\\n\\n%s\\n" "$$" "$(date +%s%N)" > "$f" && '
              'exec mv "$f" "$1/Maildir/new/"')


def _maildir(base: Path, tmp: bool = True) -> Path:
    md = base / "Maildir"
    for sub in ("new", "cur", *(("tmp",) if tmp else ())):
        (md / sub).mkdir(parents=True, exist_ok=True)
    return md


def mktemp_maildir_tmp_missing(base: Path, bad: bool) -> None:
    md = _maildir(base, tmp=not bad)  # the bad host's spool was restored from a backup that skips tmp/
    write_file(md / "cur" / f"{int(time.time())}.{token(3)}.host:2,S", _text(2, 10))


# --- mv: a maildir reader marking messages seen, the maildir bind-mounted read-only ---------------------------
SEEN_SH = 'for m in "$1"/Maildir/new/*; do mv "$m" "$1/Maildir/cur/${m##*/}:2,S" || exit 1; done'


def _messages(md: Path, n: int = 3) -> None:
    for _ in range(n):
        write_file(md / "new" / f"{int(time.time())}.M{random.randrange(10**5)}P{random.randrange(10**5)}.host",
               _text(2, 20))


def mv_maildir_ro(base: Path, bad: bool) -> None:
    _messages(_maildir(base))
    if bad:  # the reader's container got the spool as a read-only volume
        _bind(base / "Maildir", "ro")


def _unmount_maildir(base: Path) -> None:
    _unmount(base / "Maildir")


# --- tee: a daemon's pidfile, its run directory recreated root:0755 -------------------------------------------
TEE_SH = 'echo $$ | tee "$1/run/worker/worker.pid" > /dev/null && exec sleep 0.1'


def tee_pidfile_run_dir_root(base: Path, bad: bool) -> None:
    (base / "run" / "worker").mkdir(parents=True)
    if not bad:  # after the reboot, tmpfiles.d's line for /run/worker gave no user: root:0755
        chown_nobody(base / "run" / "worker")


# --- rm -f of a stale pidfile by the next start, its run directory root:0755 ----------------------------------
def _rm_argv(b: Path) -> list[str]:
    return ["rm", "-f", f"{b}/run/agent/agent.pid"]


def rm_stale_pidfile_root_dir(base: Path, bad: bool) -> None:
    (base / "run" / "agent").mkdir(parents=True)
    write_file(base / "run" / "agent" / "agent.pid", f"{random.randrange(300, 4000000)}\n")
    chown_nobody(base / "run" / "agent" / "agent.pid")
    if not bad:  # the directory recreated by a root-run `mkdir -p` in the unit's ExecStartPre=+
        chown_nobody(base / "run" / "agent")


# --- ln -sfn: the release switch, the deploy directory made by a root-run bootstrap ---------------------------
LN_SH = 'exec ln -sfn "releases/$(cat "$1/app/NEXT")" "$1/app/current"'


def _releases(app: Path) -> list[str]:
    names = [f"r-{token(4)}" for _ in range(2)]
    for name in names:
        write_file(app / "releases" / name / "app.py", _text(2, 20))
    os.symlink(f"releases/{names[0]}", app / "current")
    write_file(app / "NEXT", names[1])
    return names


def ln_release_switch_root_dir(base: Path, bad: bool) -> None:
    app = base / "app"
    _releases(app)
    for p in [app / "releases", *(app / "releases").iterdir(), app / "NEXT"]:
        chown_nobody(p)
    os.lchown(app / "current", NOBODY_UID, NOBODY_UID)
    if not bad:  # the bad host's bootstrap ran `mkdir /srv/app` as root and chowned only releases/
        chown_nobody(app)


# --- touch: a periodic runner's stamp, left root:0644 by a manual root run -------------------------------------
def _touch_argv(b: Path) -> list[str]:
    return ["touch", f"{b}/var/spool/periodic/daily.stamp"]


def touch_stamp_root_owned(base: Path, bad: bool) -> None:
    spool = base / "var" / "spool" / "periodic"
    spool.mkdir(parents=True)
    chown_nobody(spool)
    for name in ("hourly.stamp", "daily.stamp", "weekly.stamp"):
        write_file(spool / name, "")
        os.utime(spool / name, (time.time() - random.randrange(3600, 86400),) * 2)
        if not (bad and name == "daily.stamp"):  # the bad host: an admin's `sudo periodic daily` made it root's
            chown_nobody(spool / name)


# --- python3's sqlite3 reader of a database shared read-only: the writer switched it to WAL ----------------------
READER_PY = ("import sqlite3, sys\n"
             "db = sqlite3.connect(sys.argv[1])\n"
             "n, last = db.execute('select count(*), max(id) from jobs').fetchone()\n"
             "print(n, last)\n")


def _reader_argv(b: Path) -> list[str]:
    return ["/usr/bin/python3", "-S", "-c", READER_PY, f"{b}/share/queue.db"]


def sqlite_reader_wal_on_ro_mount(base: Path, bad: bool) -> None:
    import sqlite3

    (base / "share").mkdir()
    db = sqlite3.connect(base / "share" / "queue.db")
    # the bad host's writer was upgraded to `pragma journal_mode=wal` (its readers see the volume read-only:
    # a WAL database cannot be read without creating its -wal and -shm beside it)
    db.execute(f"pragma journal_mode={'wal' if bad else 'delete'}")
    db.execute("create table jobs(id integer primary key, name text, state text)")
    db.executemany("insert into jobs(name, state) values (?, ?)",
                   [(token(4), random.choice(["queued", "done"])) for _ in range(random.randrange(5, 50))])
    db.commit()
    db.close()  # the last connection's close checkpoints and removes -wal and -shm
    _bind(base / "share", "ro")  # the readers' bind of the writer's volume: read-only, good runs too


def _unmount_share(base: Path) -> None:
    _unmount(base / "share")


REAL_FORTYSECOND: list[Scenario] = [
    Scenario("t42_flock_lock_dir_is_file", "flock -n (a cron job's lock file)", _flock_argv, flock_lock_dir_is_file,
             OPEN, "ENOTDIR", lambda b: f"{b}/run/lock/app/cron.lock",
             description="flock -n of a lock file in /run/lock/app, which a stray redirection made a file "
                         "(openat ENOTDIR)"),
    Scenario("t42_logrotate_state_locked", "logrotate -f -s (its state file locked by the previous run)",
             _logrotate_argv, logrotate_state_locked, FLOCK, "EAGAIN", lambda b: f"{b}/state/status",
             teardown=HOLDERS.stop,
             description="logrotate while the previous run, hung in its postrotate, holds the state file's "
                         "lock (flock EAGAIN)"),
    Scenario("t42_start_stop_daemon_run_ro", "start-stop-daemon --start --background --make-pidfile",
             _ssd_argv, start_stop_daemon_run_ro, OPEN, "EROFS", lambda b: f"{b}/run/app/app.pid",
             teardown=_unmount_run_app,
             description="start-stop-daemon writing its daemon's pidfile into a run directory bind-mounted "
                         "read-only (its child's openat EROFS)"),
    Scenario("t42_run_parts_hooks_noexec", "run-parts --report (a directory of hooks)", _run_parts_argv,
             run_parts_hooks_noexec, ACCESS, "EACCES", lambda b: f"{b}/hooks.d/*", teardown=_unmount_hooks,
             description="run-parts over hooks on a volume mounted noexec: access(X_OK) EACCES, every hook "
                         "silently skipped"),
    Scenario("t42_sqlite3_state_dir_missing", "sqlite3 (a job queue's database)", _sqlite_argv,
             sqlite3_state_dir_missing, STAT, "ENOENT", lambda b: f"{b}/var/lib/app",
             description="sqlite3 creating its queue database in a state directory never made: its full-path "
                         "walk's lstat of the directory (newfstatat ENOENT), before the open of the database "
                         "(whose own stat fails ENOENT in the good runs too)"),
    Scenario("t42_python3_sqlite_wal_on_ro_mount", "python3 (sqlite3 module: a reader of a shared database)",
             _reader_argv, sqlite_reader_wal_on_ro_mount, OPEN, "EROFS", lambda b: f"{b}/share/queue.db-wal",
             teardown=_unmount_share,
             description="a reader of a database bind-mounted read-only (its open O_RDWR of the database fails "
                         "EROFS in the good runs too) after the writer switched it to WAL: openat O_CREAT of "
                         "queue.db-wal EROFS"),
    Scenario("t42_mktemp_maildir_tmp_missing", "mktemp -p (a maildir delivery script's)",
             lambda b: shell_argv(DELIVER_SH, str(b)), mktemp_maildir_tmp_missing, OPEN, "ENOENT",
             lambda b: f"{b}/Maildir/tmp/msg.*",
             description="a maildir delivery whose spool lost its tmp/: mktemp's openat O_EXCL ENOENT"),
    Scenario("t42_mv_maildir_ro", "mv (a maildir reader marking messages seen)", lambda b: shell_argv(SEEN_SH, str(b)),
             mv_maildir_ro, RENAME, "EROFS", lambda b: f"{b}/Maildir/*", teardown=_unmount_maildir,
             description="a maildir reader's mv of new/ messages to cur/ on a spool bind-mounted read-only "
                         "(renameat2 EROFS)"),
    Scenario("t42_tee_pidfile_run_dir_root", "tee (as nobody: a shell daemon's pidfile)",
             lambda b: shell_argv(TEE_SH, str(b)), tee_pidfile_run_dir_root, OPEN, "EACCES",
             lambda b: f"{b}/run/worker/worker.pid", unprivileged=True,
             description="a shell daemon's `echo $$ | tee` of its pidfile, as nobody, into a run directory "
                         "recreated root:0755 (openat EACCES)"),
    Scenario("t42_rm_stale_pidfile_root_dir", "rm -f (as nobody: a stale pidfile)", _rm_argv,
             rm_stale_pidfile_root_dir, UNLINK, "EACCES", lambda b: f"{b}/run/agent/agent.pid", unprivileged=True,
             description="rm -f of a stale pidfile, as nobody, in a run directory recreated root:0755 "
                         "(unlinkat EACCES)"),
    Scenario("t42_ln_release_switch_root_dir", "ln -sfn (as nobody: the current release switch)",
             lambda b: shell_argv(LN_SH, str(b)), ln_release_switch_root_dir, SYMLINK, "EACCES",
             lambda b: f"{b}/app/*", unprivileged=True,
             description="ln -sfn switching current to the next release, as nobody, in a deploy directory a "
                         "root-run bootstrap made (symlinkat of its temporary EACCES)"),
    Scenario("t42_touch_stamp_root_owned", "touch (as nobody: a periodic runner's stamp)", _touch_argv,
             touch_stamp_root_owned, OPEN, "EACCES", lambda b: f"{b}/var/spool/periodic/daily.stamp",
             unprivileged=True,
             description="touch of a periodic runner's daily stamp, as nobody, that a manual root run left "
                         "root:0644 (openat EACCES)"),
]


# --- good-vs-good noise ---------------------------------------------------------------------------------------
FLOCK_NOISE_SH = ('for i in 1 2 3; do flock "$1/run/counter.lock" /bin/sh -c '
                  '\'n=$(cat "$1/counter"); echo $((n + 1)) > "$1/counter"\' sh "$1" & done; wait; '
                  'exec cat "$1/counter"')


def _flock_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "counter", f"{random.randrange(1000)}\n")
    (base / "run").mkdir()


SSD_NOISE_SH = ('/usr/sbin/start-stop-daemon --start --background --make-pidfile --pidfile "$1/run/app.pid" --chdir / '
                '--exec /usr/bin/sleep -- 30 && '
                'until [ -s "$1/run/app.pid" ] && [ "$(readlink "/proc/$(cat "$1/run/app.pid")/exe")" = /usr/bin/sleep ]; '
                'do sleep 0.05; done && '
                'exec /usr/sbin/start-stop-daemon --stop --retry KILL/5 --remove-pidfile --pidfile "$1/run/app.pid" '
                '--exec /usr/bin/sleep')


def _run_dir(base: Path, run: int) -> None:  # noqa: ARG001
    (base / "run").mkdir()


def _run_parts_noise(base: Path, run: int) -> None:  # noqa: ARG001
    names = sorted(f"{random.randrange(10, 99)}-{token(3)}" for _ in range(4))
    _hooks(base / "hooks.d", names)


SQLITE_NOISE_SH = ('db="$1/queue.db"; sqlite3 "$db" "pragma journal_mode=wal; '
                   'create table jobs(id integer primary key, name text, state text);" > /dev/null || exit 1; '
                   'sqlite3 -cmd ".timeout 5000" "$db" < "$1/batch.sql" & '
                   'sqlite3 -cmd ".timeout 5000" "$db" "select count(*) from jobs;"; wait; '
                   'exec sqlite3 -cmd ".timeout 5000" "$db" "select count(*), max(id) from jobs;"')


def _sqlite_noise(base: Path, run: int) -> None:  # noqa: ARG001
    rows = "".join(f"insert into jobs(name, state) values ('{token(4)}', '{random.choice(['queued', 'done'])}');\n"
                   for _ in range(20))
    write_file(base / "batch.sql", f"begin;\n{rows}commit;\n")


MAILDIR_NOISE_SH = ('for i in 1 2 3; do /bin/sh -c \'' + DELIVER_SH.replace("'", "") + '\' sh "$1" || exit 1; done; '
                    + SEEN_SH + '; exec ls "$1/Maildir/cur"')


def _maildir_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _maildir(base)


def _logrotate_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "log" / "app.log", _text(5, 400))
    write_file(base / "log" / "app.log.1", _text(5, 60))
    write_file(base / "etc" / "app.conf",
           f"{base}/log/app.log {{\n  rotate 3\n  missingok\n  compress\n  delaycompress\n  create 0640 root root\n}}\n")
    (base / "state").mkdir()


LN_NOISE_SH = (LN_SH.removeprefix("exec ") + ' && readlink "$1/app/current" && '
               'ln -sfn "releases/$(ls "$1/app/releases" | head -n 1)" "$1/app/current" && '
               'exec readlink -f "$1/app/current"')


def _ln_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _releases(base / "app")


DAEMON_NOISE_SH = ('sleep 30 & echo $! > "$1/run/d.pid"; sleep 0.1; pid=$(cat "$1/run/d.pid"); '
                   'kill -s KILL "$pid"; wait; kill -0 "$pid" 2> /dev/null || exec rm -f "$1/run/d.pid"')


QUIET_FORTYSECOND: list[NoAnomalyCase] = [
    NoAnomalyCase("t42_flock_three_contenders", lambda b: shell_argv(FLOCK_NOISE_SH, str(b)), _flock_noise,
                  description="three shells contending for one flock to bump a counter of random start"),
    NoAnomalyCase("t42_start_stop_daemon_cycle", lambda b: shell_argv(SSD_NOISE_SH, str(b)), _run_dir,
                  description="start-stop-daemon --start --background --make-pidfile, then --stop "
                              "--remove-pidfile through the pidfile"),
    NoAnomalyCase("t42_run_parts_random_hooks", lambda b: ["run-parts", "--report", f"{b}/hooks.d"],
                  _run_parts_noise, description="run-parts over four hooks of random names"),
    NoAnomalyCase("t42_sqlite3_wal_writer_and_reader", lambda b: shell_argv(SQLITE_NOISE_SH, str(b)), _sqlite_noise,
                  description="a sqlite3 WAL database: a writer of random rows beside a concurrent reader"),
    NoAnomalyCase("t42_maildir_deliver_and_read", lambda b: shell_argv(MAILDIR_NOISE_SH, str(b)), _maildir_noise,
                  description="three maildir deliveries (mktemp in tmp/, mv to new/), then marked seen (to cur/)"),
    NoAnomalyCase("t42_logrotate_compress_random_log",
                  lambda b: ["/usr/sbin/logrotate", "-f", "-s", f"{b}/state/status", f"{b}/etc/app.conf"], _logrotate_noise,
                  description="logrotate -f of a log of random size with compress and delaycompress"),
    NoAnomalyCase("t42_ln_sfn_switch_random_releases", lambda b: shell_argv(LN_NOISE_SH, str(b)), _ln_noise,
                  description="ln -sfn between two releases of random names, and back"),
    NoAnomalyCase("t42_shell_daemon_killed_by_pidfile", lambda b: shell_argv(DAEMON_NOISE_SH, str(b)), _run_dir,
                  description="a shell's background daemon killed through its pidfile, waited for with kill -0"),
]


def quiet_teardown() -> None:
    """Stop any lock holder and unmount what any case may have left mounted (a failed teardown)."""
    HOLDERS.stop()
    for sc in REAL_FORTYSECOND:
        base = ROOT / sc.name
        for sub in ("run/app", "hooks.d", "Maildir", "share"):
            _unmount(base / sub)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
