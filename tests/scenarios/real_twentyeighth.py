"""A twenty-eighth set of real programs with one real fault each: **services and clients
talking over local IPC and loopback, and backup, restore and maintenance jobs** no earlier set
ran, and two small C programs of the set's own (a preforking file server on loopback with a
threaded load client, a threaded backup sync moving mkstemp temporaries into place). Each case
is a step of a host's nightly jobs or a service's life:

- **PostgreSQL clients of a running server** (a ``postgres`` started for the case as the
  service's account, listening on a Unix socket only, from a template cluster ``build()``
  makes): ``pg_dump -Fd -j 2`` (a parallel directory-format backup), ``pg_dumpall`` (the
  cluster dumped to one file through ``pg_dump`` children), ``pg_restore -j 2`` (a backup
  restored by two worker processes), ``psql -f`` (a report job), ``vacuumdb -j 4 --analyze-only``
  (a maintenance job's four connections);
- **a service's own life**: ``pg_ctl start -w``, a query, ``pg_ctl stop -m smart`` (the
  postmaster and its children, as the service's account; the noise case stops in fast mode);
- **session services and their clients**: ``dbus-run-session`` (a private bus daemon from a
  config of the job's own, ``dbus-send`` asking it for its names), ``ssh-agent -s -a`` (a deploy
  step's agent on a fixed socket, ``ssh-add`` loading a key and listing it, ``ssh-agent -k``);
- **maintenance jobs**: ``run-parts --report`` (a cron.daily-style directory of scripts),
  ``savelog`` (a log rotated, the previous one gzipped: savelog still exits 0), ``e2fsck -fy``
  (a file system image checked and repaired), ``e2image -Q`` (its metadata backed up as a
  QCOW2 image), ``debugfs -R rdump`` (a tree restored out of an image);
- **the set's C programs** (compiled by `build()`): ``tb28-prefork`` (binds 127.0.0.1:PORT,
  forks three workers that take turns in accept(); a client process of four threads makes 24
  requests; one QUIT per worker ends them), ``tb28-syncd`` (three threads copy a manifest's
  files into mkstemp temporaries in ``staging/`` and rename() them into ``dst/``).

Faults (``t28_`` cases), decided from what ``strace -f`` showed before the differ ran: a dump
directory a crashed nightly dump left (pg_dump's mkdir EEXIST), a full backup volume
(pg_dumpall's write ENOSPC, e2image's write ENOSPC, savelog's gzip child's write ENOSPC), a
backup copied without its largest table's data file (pg_restore's stat ENOENT), a server that
crashed and left its socket file (psql's connect ECONNREFUSED), a socket directory a root-run
package script made (the postmaster's openat of its lock file EACCES, as the service), a
maintenance job's lowered nofile limit (vacuumdb's fourth connection: its nss user lookup's
openat of /etc/passwd, then its socket, EMFILE), a run directory a tmpfiles step did not make
(dbus-daemon's bind ENOENT), an agent socket a killed agent left (ssh-agent's
bind EADDRINUSE), a report script written for an interpreter the host no longer has
(run-parts's execve ENOENT), an image on a volume remounted read-only (e2fsck's openat EROFS), a
restore directory an earlier attempt left (debugfs's mkdir EEXIST), a port a stale server still
holds (tb28-prefork's bind EADDRINUSE), a staging directory on another volume (tb28-syncd's
rename EXDEV).

Noise cases (``QUIET_TWENTYEIGHTH``) are good runs alone: pg_dump's and pg_restore's two worker
processes, pg_basebackup's WAL-streaming child, the postmaster's children starting and stopping,
vacuumdb's four connections finishing in any order, a bus daemon and its client, an agent
daemonizing, the prefork workers taking connections in any order, the sync threads' temporary
names and order. Loopback: the prefork server's one port is a block of its own
(`harness._port_block`), as the harness's 18 ``PORTS`` are all taken by earlier sets.
"""

from __future__ import annotations

import functools
import glob
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .files import chown_nobody
from .harness import NOBODY, ROOT, NoAnomalyCase, Scenario, _port_block

NOBODY_UID = 65534
NO_PATH = "*"  # the fault's call has no path of its own (a socket), or one the job does not name (nss)
OPEN = frozenset({"openat", "open", "openat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64", "access", "faccessat", "faccessat2"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
PY3 = "/usr/bin/python3"
PG_USER = "tb28"
PG_SOCKET = ".s.PGSQL.5432"  # no TCP: the port only names the socket file
PREFORK_PORT = _port_block(1)[0]  # the prefork server's port (its own block: the harness's 18 are all taken)


def pg_bin(name: str) -> str:
    """A program of the PostgreSQL server package (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else f"/usr/lib/postgresql/15/bin/{name}"


PREFORK_C = r'''
/* tb28-prefork: a preforking file server on loopback and its load client, in one job. The
   parent binds 127.0.0.1:PORT (SO_REUSEADDR), listens and forks three workers that accept()
   in turn: each request is "GET name\n", answered with the file www/name or "404". A client
   process then runs four threads of six requests each. When it is done the parent sends one
   QUIT per worker (each worker leaves after the QUIT it takes) and reaps them. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#define WORKERS 3
static const char *base;
static int port;
static ssize_t readline(int fd, char *buf, size_t cap) {
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0) break;
        if (buf[n++] == '\n') break;
    }
    buf[n] = 0;
    return (ssize_t)n;
}
static void worker(int lfd, int id) {
    char req[256], path[4200], body[8192];
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "worker %d: accept: %s\n", id, strerror(errno));
            _exit(1);
        }
        readline(c, req, sizeof req);
        if (strncmp(req, "QUIT", 4) == 0) { (void)!write(c, "BYE\n", 4); close(c); _exit(0); }
        req[strcspn(req, "\r\n")] = 0;
        snprintf(path, sizeof path, "%s/www/%s", base, req + 4);
        int f = open(path, O_RDONLY | O_CLOEXEC);
        if (f < 0) { (void)!write(c, "404\n", 4); close(c); continue; }
        ssize_t n = read(f, body, sizeof body);
        close(f);
        if (n > 0) (void)!write(c, body, (size_t)n);
        close(c);
    }
}
static int dial(void) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
    return s;
}
static void *client(void *arg) {
    long t = (long)arg;
    char req[64], buf[8192];
    for (int i = 0; i < 6; i++) {
        int s = dial();
        int len = snprintf(req, sizeof req, "GET item-%02ld.txt\n", (t * 6 + i) % 12);
        (void)!write(s, req, (size_t)len);
        while (read(s, buf, sizeof buf) > 0) {}
        close(s);
    }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    base = argv[1];
    port = atoi(argv[2]);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "bind 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 1;
    }
    if (listen(lfd, 64) < 0) { perror("listen"); return 1; }
    pid_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        if ((w[i] = fork()) == 0) worker(lfd, i);
    pid_t cl = fork();
    if (cl == 0) {
        close(lfd);
        pthread_t t[4];
        for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, client, (void *)i);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        _exit(0);
    }
    int st, bad = 0;
    waitpid(cl, &st, 0);
    bad |= !WIFEXITED(st) || WEXITSTATUS(st);
    char buf[16];
    for (int i = 0; i < WORKERS; i++) {
        int s = dial();
        (void)!write(s, "QUIT\n", 5);
        while (read(s, buf, sizeof buf) > 0) {}
        close(s);
    }
    for (int i = 0; i < WORKERS; i++) { waitpid(w[i], &st, 0); bad |= !WIFEXITED(st) || WEXITSTATUS(st); }
    return bad;
}
'''

SYNCD_C = r'''
/* tb28-syncd: a backup sync job. It reads the manifest (one relative name a line) and three
   threads take its files in turn: each is copied from src/ into a mkstemp() temporary in the
   staging directory, fsynced, and renamed into place under dst/. Like a careful sync tool it
   never writes a destination file in place; a rename that fails stops the job. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *base;
static char names[64][128];
static int count, next;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *sync_files(void *arg) {
    (void)arg;
    char src[4200], tmp[4200], dst[4200], buf[65536];
    for (;;) {
        pthread_mutex_lock(&mu);
        int i = next < count ? next++ : -1;
        pthread_mutex_unlock(&mu);
        if (i < 0) return NULL;
        snprintf(src, sizeof src, "%s/src/%s", base, names[i]);
        snprintf(tmp, sizeof tmp, "%s/staging/.%s.XXXXXX", base, names[i]);
        snprintf(dst, sizeof dst, "%s/dst/%s", base, names[i]);
        int in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0) { fprintf(stderr, "%s: %s\n", src, strerror(errno)); exit(1); }
        int out = mkostemp(tmp, O_CLOEXEC);
        if (out < 0) { fprintf(stderr, "%s: %s\n", tmp, strerror(errno)); exit(1); }
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) { fprintf(stderr, "%s: %s\n", tmp, strerror(errno)); exit(1); }
        close(in);
        if (fsync(out) < 0) { perror(tmp); exit(1); }
        close(out);
        if (rename(tmp, dst) < 0) {
            fprintf(stderr, "%s -> %s: %s\n", tmp, dst, strerror(errno));
            unlink(tmp);
            exit(1);
        }
    }
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    base = argv[1];
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest", base);
    FILE *m = fopen(path, "re");
    if (!m) { perror(path); return 1; }
    while (count < 64 && fgets(names[count], sizeof names[count], m)) {
        names[count][strcspn(names[count], "\n")] = 0;
        if (names[count][0]) count++;
    }
    fclose(m);
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, sync_files, NULL);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
'''

TEMPLATE_SQL = """
CREATE DATABASE ledger;
CREATE DATABASE restore;
\\c ledger
CREATE TABLE accounts (id int PRIMARY KEY, owner text, opened date);
CREATE TABLE entries (id bigint PRIMARY KEY, account int REFERENCES accounts, amount numeric(12,2), memo text);
CREATE TABLE audit (at timestamptz, who text, what text);
CREATE TABLE rates (day date, currency text, rate numeric(10,6));
INSERT INTO accounts SELECT g, 'owner-' || g, date '2020-01-01' + g FROM generate_series(1, 2000) g;
INSERT INTO entries SELECT g, 1 + g % 2000, (g % 9973) / 7.0, md5(g::text) FROM generate_series(1, 60000) g;
INSERT INTO audit SELECT timestamptz '2024-01-01' + g * interval '1 minute', 'svc', md5((g * 7)::text)
  FROM generate_series(1, 20000) g;
INSERT INTO rates SELECT date '2024-01-01' + g % 365, 'C' || g % 40, 1 + (g % 1000) / 1000.0
  FROM generate_series(1, 14600) g;
"""


def _as_nobody(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*NOBODY, *argv], check=True, capture_output=True, **kw)


def _start_postgres(data: Path, run: Path, log: Path) -> subprocess.Popen:
    """A postmaster as nobody on the Unix socket run/.s.PGSQL.5432 only; returns once it
    answers."""
    with open(log, "ab") as out:
        os.chown(log, NOBODY_UID, NOBODY_UID)
        proc = subprocess.Popen([*NOBODY, pg_bin("postgres"), "-D", str(data), "-c", "listen_addresses=",
                                 "-c", f"unix_socket_directories={run}", "-c", "fsync=off"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"postgres exited {proc.returncode}: {log.read_text()[-2000:]}")
        ready = subprocess.run([pg_bin("pg_isready"), "-q", "-h", str(run), "-U", PG_USER, "-d", "postgres"],
                               capture_output=True)
        if ready.returncode == 0:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"postgres did not answer in 30 s: {log.read_text()[-2000:]}")


def _stop_postgres(proc: subprocess.Popen, sig: int = signal.SIGQUIT) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@functools.cache
def build() -> Path:
    """Compile the set's two C programs, make the template PostgreSQL cluster (initdb as nobody,
    the ledger and restore databases filled), the file system images and the deploy key, once
    per process. Returns the (world-readable) build directory."""
    out = ROOT / "_tb28"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    out.chmod(0o755)
    for name, src in (("tb28-prefork", PREFORK_C), ("tb28-syncd", SYNCD_C)):
        write(out / f"{name}.c", src)
        subprocess.run(["cc", "-O1", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")],
                       check=True, capture_output=True)
        (out / name).chmod(0o755)
    # the template cluster
    pg = out / "pg"
    (pg / "run").mkdir(parents=True)
    for p in (pg, pg / "run"):
        os.chown(p, NOBODY_UID, NOBODY_UID)
    _as_nobody([pg_bin("initdb"), "-D", str(pg / "data"), "-A", "trust", "--no-sync", "-U", PG_USER, "-E", "UTF8",
                "--locale=C.UTF-8"], cwd="/")
    server = _start_postgres(pg / "data", pg / "run", pg / "log")
    try:
        subprocess.run([pg_bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-h", str(pg / "run"), "-U", PG_USER,
                        "-d", "postgres"], input=TEMPLATE_SQL.encode(), check=True, capture_output=True)
    finally:
        _stop_postgres(server, signal.SIGINT)  # a clean shutdown: the copies start without recovery
    # the file system images: an empty one to check, one with an /etc tree to restore from
    img_src = out / "imgsrc"
    for sub in ("etc/app/conf.d", "etc/cron.daily", "var/lib/app"):
        (img_src / sub).mkdir(parents=True)
    rng = random.Random(28)
    for i in range(12):
        write(img_src / "etc" / "app" / "conf.d" / f"{i:02d}-part.conf",
              "".join(f"key{j} = {rng.getrandbits(32):08x}\n" for j in range(40)))
    write(img_src / "etc" / "app" / "app.conf", "listen = /run/app.sock\nworkers = 4\n")
    write(img_src / "etc" / "cron.daily" / "app", "#!/bin/sh\nexec /usr/bin/app --rotate\n", 0o755)
    write(img_src / "var" / "lib" / "app" / "state", "generation 41\n")
    for name, source in (("data.img", None), ("root.img", img_src)):
        argv = ["mke2fs", "-q", "-t", "ext4", "-F", "-E", "root_owner=0:0"]
        if source is not None:
            argv += ["-d", str(source)]
        subprocess.run([*argv, str(out / name), "8M"], check=True, capture_output=True)
        (out / name).chmod(0o644)
    # the deploy key
    (out / "keys").mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deploy@tb28", "-f",
                    str(out / "keys" / "id_deploy")], check=True, capture_output=True)
    return out


def _dirs(base: Path, *names: str, owner_nobody: bool = False) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)
        if owner_nobody:
            chown_nobody(base / n)


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


# --- a running server for the client cases -----------------------------------------------------------
class _Server:
    """The one postmaster of a case (cases run one at a time in a process): started by a setup
    from a copy of the template cluster, stopped by the case's teardown, by the next start (a
    noise case has no teardown between its runs) or by quiet_teardown."""

    proc: subprocess.Popen | None = None

    def start(self, base: Path) -> None:
        self.stop()
        data = base / "pg" / "data"
        _pg_copy(base)
        _dirs(base, "run", owner_nobody=True)
        self.proc = _start_postgres(data, base / "run", base / "pg" / "log")

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 (a teardown)
        if self.proc is not None:
            _stop_postgres(self.proc)
            self.proc = None


SERVER = _Server()


def _pg_copy(base: Path) -> None:
    """base/pg/data: a copy of the template cluster, the service account's (nobody)."""
    _dirs(base, "pg", owner_nobody=True)
    subprocess.run(["cp", "-a", str(build() / "pg" / "data"), str(base / "pg" / "data")], check=True)
    for p in [base / "pg" / "data", *(base / "pg" / "data").rglob("*")]:
        os.lchown(p, NOBODY_UID, NOBODY_UID)


def _client(b: Path) -> list[str]:
    return ["-h", f"{b}/run", "-U", PG_USER]


def _stop_and_umount(*names: str):
    def teardown(base: Path) -> None:
        SERVER.stop()
        for n in names:
            umount(base / n)
    return teardown


# --- pg_dump -Fd -j 2 ------------------------------------------------------------------------------
def _pg_dump_argv(b: Path) -> list[str]:
    return [pg_bin("pg_dump"), *_client(b), "-Fd", "-j", "2", "-f", f"{b}/backup/nightly", "ledger"]


def pg_dump_dir_left_over(base: Path, bad: bool) -> None:
    SERVER.start(base)
    _dirs(base, "backup")
    if bad:  # last night's dump crashed half-way and left its directory
        _dirs(base, "backup/nightly")
        write(base / "backup" / "nightly" / "toc.dat", "PGDMP\0partial")
        write(base / "backup" / "nightly" / "3350.dat.gz", "\x1f\x8b partial")


# --- pg_dumpall -f -----------------------------------------------------------------------------------
def _pg_dumpall_argv(b: Path) -> list[str]:
    return [pg_bin("pg_dumpall"), *_client(b), "-f", f"{b}/vol/cluster.sql"]


def pg_dumpall_volume_full(base: Path, bad: bool) -> None:
    SERVER.start(base)
    mount_tmpfs(base / "vol", "16m")
    if bad:  # the backup volume is full
        fill_up(base / "vol")


# --- pg_restore -j 2 ---------------------------------------------------------------------------------
def _pg_restore_argv(b: Path) -> list[str]:
    return [pg_bin("pg_restore"), *_client(b), "-j", "2", "-d", "restore", f"{b}/dump"]


def pg_restore_data_file_missing(base: Path, bad: bool) -> None:
    SERVER.start(base)
    subprocess.run([pg_bin("pg_dump"), *_client(base), "-Fd", "-f", f"{base}/dump", "ledger"], check=True,
                   capture_output=True)
    if bad:  # the backup was copied off-site without its largest table's data file
        largest = max((base / "dump").glob("*.dat.gz"), key=lambda p: p.stat().st_size)
        largest.unlink()


# --- psql -f (a report job) ------------------------------------------------------------------------
REPORT_SQL = """\\pset footer off
SELECT a.owner, count(*) AS entries, sum(e.amount) AS total
  FROM entries e JOIN accounts a ON a.id = e.account
 GROUP BY a.owner ORDER BY total DESC LIMIT 20;
"""


def _psql_argv(b: Path) -> list[str]:
    return [pg_bin("psql"), *_client(b), "-d", "ledger", "-X", "-f", f"{b}/sql/report.sql", "-o", f"{b}/out/report.txt"]


def psql_server_socket_stale(base: Path, bad: bool) -> None:
    _dirs(base, "sql", "out")
    write(base / "sql" / "report.sql", REPORT_SQL)
    if not bad:
        SERVER.start(base)
        return
    # the server crashed (kill -9 of the postmaster): its socket file and lock file stayed
    import socket

    _dirs(base, "run", owner_nobody=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(base / "run" / PG_SOCKET))
    s.close()
    write(base / "run" / f"{PG_SOCKET}.lock", f"{os.getpid()}\n{base}/pg/data\n")
    chown_nobody(base / "run" / PG_SOCKET, base / "run" / f"{PG_SOCKET}.lock")


# --- vacuumdb -j 4 under ulimit -n ----------------------------------------------------------------
def _vacuumdb_argv(b: Path) -> list[str]:
    return _sh(f'ulimit -n "$(cat {b}/nofile)"; exec {pg_bin("vacuumdb")} -h {b}/run -U {PG_USER} -j 4 '
               "--analyze-only -d ledger")


def vacuumdb_nofile_limit(base: Path, bad: bool) -> None:
    SERVER.start(base)
    write(base / "nofile", "6\n" if bad else "1024\n")  # the bad host's cron lowered nofile


# --- pg_ctl start / psql / pg_ctl stop, as the service ----------------------------------------------
def _pg_ctl_argv(b: Path, mode: str = "smart") -> list[str]:
    """Start, one query, stop. The fault case stops in smart mode (the postmaster waits for the
    query's session to end by itself); the noise case in fast mode, which SIGTERMs a backend
    whose client's Terminate it may not have read yet: it then writes its FATAL to a closed
    socket (sendto EPIPE) in some runs only."""
    ctl, psql = pg_bin("pg_ctl"), pg_bin("psql")
    opts = f"-c listen_addresses= -c unix_socket_directories={b}/run -c fsync=off"
    return _sh(f"{ctl} -D {b}/pg/data -o '{opts}' -l {b}/pg/server.log -w -t 30 start && "
               f"{psql} -h {b}/run -U {PG_USER} -d ledger -X -Atc 'SELECT count(*) FROM accounts' && "
               f"{ctl} -D {b}/pg/data -m {mode} -w -t 30 stop")


def pg_ctl_socket_dir_root_owned(base: Path, bad: bool) -> None:
    _pg_copy(base)
    # the bad host's /run/postgresql was made by a root-run package script
    _dirs(base, "run", owner_nobody=not bad)


def _pg_ctl_kill_left(base: Path) -> None:
    """A run cut short may leave its postmaster: stop it (immediate) by its pid file."""
    pidfile = base / "pg" / "data" / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGQUIT)
    except ProcessLookupError:
        return
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


# --- pg_basebackup (noise only) ---------------------------------------------------------------------
def _pg_basebackup_argv(b: Path) -> list[str]:
    return [pg_bin("pg_basebackup"), *_client(b), "-D", f"{b}/backup/base", "-Ft", "-z", "-c", "fast"]


# --- dbus-run-session + dbus-send ------------------------------------------------------------------------
BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%(base)s/run/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def _dbus_argv(b: Path) -> list[str]:
    return ["/usr/bin/dbus-run-session", f"--config-file={b}/etc/bus.conf", "--", "/usr/bin/dbus-send", "--session",
            "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"]


def dbus_run_dir_missing(base: Path, bad: bool) -> None:
    _dirs(base, "etc")
    write(base / "etc" / "bus.conf", BUS_CONF % {"base": base})
    if not bad:  # the bad host's tmpfiles step did not make the run directory
        _dirs(base, "run")


# --- ssh-agent -s -a + ssh-add ------------------------------------------------------------------------
def _ssh_agent_argv(b: Path) -> list[str]:
    return _sh(f'eval "$(/usr/bin/ssh-agent -s -a {b}/run/agent.sock)" && /usr/bin/ssh-add {b}/keys/id_deploy && '
               "/usr/bin/ssh-add -l; /usr/bin/ssh-agent -k")


def ssh_agent_stale_socket(base: Path, bad: bool) -> None:
    _dirs(base, "run", "keys")
    base.joinpath("run").chmod(0o700)
    for name in ("id_deploy", "id_deploy.pub"):
        shutil.copy(build() / "keys" / name, base / "keys" / name)
    (base / "keys" / "id_deploy").chmod(0o600)
    if bad:  # the previous deploy's agent was killed: its socket file stayed
        import socket

        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(base / "run" / "agent.sock"))
        s.close()


# --- run-parts --report ---------------------------------------------------------------------------
def _run_parts_argv(b: Path) -> list[str]:
    return ["/usr/bin/run-parts", "--report", "--exit-on-error", f"{b}/daily.d"]


def run_parts_interpreter_gone(base: Path, bad: bool) -> None:
    _dirs(base, "daily.d", "log", "reports")
    for i in range(30):
        write(base / "log" / f"app.log.{i}", f"line {i}\n" * 50)
    write(base / "daily.d" / "10-prune", f"#!/bin/sh\nfind {base}/log -name 'app.log.*' -newer {base}/log/app.log.0 "
          "-print | sort > /dev/null\nexit 0\n", 0o755)
    # the report script was written on a host whose python was 3.9; the bad host has no python3.9
    interp = "/usr/bin/python3.9" if bad else PY3
    write(base / "daily.d" / "20-report", f"#!{interp} -S\nimport os\nlogs = sorted(os.listdir({str(base / 'log')!r}))\n"
          f"open({str(base / 'reports' / 'daily.txt')!r}, 'w').write('%d logs\\n' % len(logs))\n", 0o755)
    write(base / "daily.d" / "30-stamp", f"#!/bin/sh\ndate +%F > {base}/reports/stamp\n", 0o755)


# --- savelog -----------------------------------------------------------------------------------------
def _savelog_argv(b: Path) -> list[str]:
    return ["/usr/bin/savelog", "-c", "5", "-n", f"{b}/log/app.log"]


def savelog_volume_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "log", "512k")
    rng = random.Random()
    write(base / "log" / "app.log", "".join(f"req {i} {rng.getrandbits(40):010x}\n" for i in range(6000)))
    write(base / "log" / "app.log.0", "".join(f"req {i} {rng.getrandbits(40):010x}\n" for i in range(3000)))
    for i in (1, 2):
        write(base / "log" / f"app.log.{i}", "".join(f"old {i} {j}\n" for j in range(2000)))
        subprocess.run(["gzip", "-9", str(base / "log" / f"app.log.{i}")], check=True)
    if bad:  # the log volume is full
        fill_up(base / "log")


# --- e2fsck -fy --------------------------------------------------------------------------------------
def _e2fsck_argv(b: Path) -> list[str]:
    return ["/usr/sbin/e2fsck", "-fy", f"{b}/vol/data.img"]


def e2fsck_image_read_only(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "vol", "16m")
    shutil.copy(build() / "data.img", base / "vol" / "data.img")
    if bad:  # the images volume was remounted read-only after an I/O error
        subprocess.run(["mount", "-o", "remount,ro", str(base / "vol")], check=True)


# --- e2image -Q ------------------------------------------------------------------------------------
def _e2image_argv(b: Path) -> list[str]:
    return ["/usr/sbin/e2image", "-Q", f"{b}/img/root.img", f"{b}/vol/root.qcow2"]


def e2image_volume_full(base: Path, bad: bool) -> None:
    _dirs(base, "img")
    shutil.copy(build() / "root.img", base / "img" / "root.img")
    mount_tmpfs(base / "vol", "4m")
    if bad:  # the metadata backup volume is full
        fill_up(base / "vol")


# --- debugfs -R rdump ----------------------------------------------------------------------------------
def _debugfs_argv(b: Path) -> list[str]:
    return ["/usr/sbin/debugfs", "-R", f"rdump /etc {b}/restore", f"{b}/img/root.img"]


def debugfs_restore_left_over(base: Path, bad: bool) -> None:
    _dirs(base, "img", "restore")
    shutil.copy(build() / "root.img", base / "img" / "root.img")
    if bad:  # an earlier restore attempt stopped half-way and left etc/
        _dirs(base, "restore/etc/app")
        write(base / "restore" / "etc" / "app" / "app.conf", "listen = /run/app.sock\n")


# --- the set's C programs ------------------------------------------------------------------------------
class _Holder:
    """A stale server still listening on the prefork port (a process of its own)."""

    proc: subprocess.Popen | None = None

    def start(self, port: int) -> None:
        self.stop()
        self.proc = subprocess.Popen(
            [PY3, "-S", "-c", "import socket, sys, time\n"
             "s = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
             f"s.bind(('127.0.0.1', {port}))\ns.listen(8)\nprint('ready', flush=True)\ntime.sleep(300)\n"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the stale server did not bind 127.0.0.1:{port}")

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 (a teardown)
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


HOLDER = _Holder()


def _prefork_argv(b: Path) -> list[str]:
    return [str(build() / "tb28-prefork"), str(b), str(PREFORK_PORT)]


def prefork_port_taken(base: Path, bad: bool) -> None:
    _dirs(base, "www")
    rng = random.Random()
    for i in range(12):
        write(base / "www" / f"item-{i:02d}.txt", "".join(f"{rng.getrandbits(64):016x}\n"
                                                            for _ in range(rng.randint(20, 300))))
    if bad:  # the previous release's server was not stopped and still holds the port
        HOLDER.start(PREFORK_PORT)


def _syncd_argv(b: Path) -> list[str]:
    return [str(build() / "tb28-syncd"), str(b)]


def syncd_staging_other_volume(base: Path, bad: bool) -> None:
    _dirs(base, "src", "dst", "staging")
    rng = random.Random()
    names = [f"part-{i:02d}.bin" for i in range(18)]
    for n in names:
        (base / "src" / n).write_bytes(rng.randbytes(rng.randint(1000, 120000)))
    write(base / "manifest", "".join(f"{n}\n" for n in names))
    if bad:  # the new host's staging directory is a volume of its own (a tmpfs)
        mount_tmpfs(base / "staging", "8m")


REAL_TWENTYEIGHTH: list[Scenario] = [
    Scenario("t28_pg_dump_dir_left_over", "pg_dump -Fd -j 2 (a parallel backup of a running server)", _pg_dump_argv,
             pg_dump_dir_left_over, MKDIR, "EEXIST", lambda b: f"{b}/backup/nightly", teardown=SERVER.stop,
             description="pg_dump making its dump directory where a crashed nightly dump left one"),
    Scenario("t28_pg_dumpall_volume_full", "pg_dumpall -f (pg_dump children)", _pg_dumpall_argv,
             pg_dumpall_volume_full, WRITE, "ENOSPC", lambda b: f"{b}/vol/cluster.sql",
             teardown=_stop_and_umount("vol"),
             description="pg_dumpall writing the cluster's dump onto a full backup volume"),
    Scenario("t28_pg_restore_data_file_missing", "pg_restore -j 2 (two worker processes)", _pg_restore_argv,
             pg_restore_data_file_missing, STAT | OPEN, "ENOENT", lambda b: f"{b}/dump/*.dat.gz",
             teardown=SERVER.stop,
             description="pg_restore restoring a backup copied off-site without its largest table's data file"),
    Scenario("t28_psql_server_socket_stale", "psql -f (a report job)", _psql_argv, psql_server_socket_stale,
             frozenset({"connect"}), "ECONNREFUSED", lambda b: f"unix:{b}/run/{PG_SOCKET}", teardown=SERVER.stop,
             description="a report job's psql connecting to a crashed server's socket file"),
    Scenario("t28_vacuumdb_nofile_limit", "vacuumdb -j 4 --analyze-only (sh: under ulimit -n)", _vacuumdb_argv,
             vacuumdb_nofile_limit, OPEN | {"socket"}, "EMFILE", lambda b: NO_PATH, teardown=SERVER.stop,
             description="vacuumdb opening four connections under a maintenance job's lowered nofile limit: the "
             "fourth's user lookup (openat /etc/passwd), then its socket, fail EMFILE"),
    Scenario("t28_pg_ctl_socket_dir_root_owned", "pg_ctl start -w; psql; pg_ctl stop -m smart (sh: postgres children, "
             "as the service)", _pg_ctl_argv, pg_ctl_socket_dir_root_owned, OPEN, "EACCES",
             lambda b: f"{b}/run/{PG_SOCKET}.lock", unprivileged=True, teardown=_pg_ctl_kill_left,
             description="the postmaster creating its socket lock file in a run directory a root script made"),
    Scenario("t28_dbus_run_dir_missing", "dbus-run-session (a private bus daemon; dbus-send)", _dbus_argv,
             dbus_run_dir_missing, frozenset({"bind"}), "ENOENT", lambda b: f"unix:{b}/run/bus.sock",
             description="a private bus daemon binding its socket in a run directory tmpfiles did not make"),
    Scenario("t28_ssh_agent_stale_socket", "ssh-agent -s -a (sh: eval; ssh-add; ssh-agent -k)", _ssh_agent_argv,
             ssh_agent_stale_socket, frozenset({"bind"}), "EADDRINUSE", lambda b: f"unix:{b}/run/agent.sock",
             description="a deploy step's ssh-agent binding a fixed socket a killed agent left"),
    Scenario("t28_run_parts_interpreter_gone", "run-parts --report (a cron.daily directory)", _run_parts_argv,
             run_parts_interpreter_gone, frozenset({"execve", "execveat"}), "ENOENT",
             lambda b: f"{b}/daily.d/20-report",
             description="run-parts running a daily report script whose interpreter the host no longer has"),
    Scenario("t28_savelog_volume_full", "savelog -c 5 (sh script: mv, gzip; exits 0)", _savelog_argv,
             savelog_volume_full, WRITE, "ENOSPC", lambda b: f"{b}/log/*app.log.0.gz", teardown=_stop_and_umount("log"),
             description="savelog gzipping the previous log on a full log volume: the rotation still exits 0"),
    Scenario("t28_e2fsck_image_read_only", "e2fsck -fy (a file system image)", _e2fsck_argv, e2fsck_image_read_only,
             OPEN, "EROFS", lambda b: f"{b}/vol/data.img", teardown=_stop_and_umount("vol"),
             description="e2fsck repairing an image on a volume remounted read-only"),
    Scenario("t28_e2image_volume_full", "e2image -Q (a metadata backup)", _e2image_argv, e2image_volume_full, WRITE,
             "ENOSPC", lambda b: f"{b}/vol/root.qcow2", teardown=_stop_and_umount("vol"),
             description="e2image backing up an image's metadata onto a full volume"),
    Scenario("t28_debugfs_restore_left_over", "debugfs -R 'rdump /etc' (a restore from an image)", _debugfs_argv,
             debugfs_restore_left_over, MKDIR, "EEXIST", lambda b: f"{b}/restore/etc",
             description="debugfs restoring /etc out of an image where an earlier attempt left etc/"),
    Scenario("t28_prefork_port_taken", "tb28-prefork (C: three forked workers, a threaded client)", _prefork_argv,
             prefork_port_taken, frozenset({"bind"}), "EADDRINUSE", lambda b: f"inet:127.0.0.1:{PREFORK_PORT}",
             teardown=HOLDER.stop,
             description="a preforking server binding a loopback port a stale server still holds"),
    Scenario("t28_syncd_staging_other_volume", "tb28-syncd (C: threads, mkstemp, rename into place)", _syncd_argv,
             syncd_staging_other_volume, RENAME, "EXDEV", lambda b: f"{b}/staging/.part-*",
             teardown=_stop_and_umount("staging"),
             description="a sync job's threads renaming temporaries from a staging directory on another volume"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _server_only(base: Path, run: int) -> None:  # noqa: ARG001
    SERVER.start(base)


def _pg_ctl_noise(base: Path, run: int) -> None:  # noqa: ARG001
    pg_ctl_socket_dir_root_owned(base, False)


QUIET_TWENTYEIGHTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t28_pg_dump_parallel_workers", _pg_dump_argv, _good(pg_dump_dir_left_over),
                  description="pg_dump -j 2's worker processes taking the tables in any order"),
    NoAnomalyCase("t28_pg_restore_parallel_workers", _pg_restore_argv, _good(pg_restore_data_file_missing),
                  description="pg_restore -j 2's workers restoring tables and indexes in any order"),
    NoAnomalyCase("t28_pg_basebackup_wal_streamer", _pg_basebackup_argv, _server_only,
                  description="pg_basebackup's WAL-streaming child beside the base backup's tar"),
    NoAnomalyCase("t28_pg_ctl_service_life", lambda b: [*NOBODY, *_pg_ctl_argv(b, "fast")], _pg_ctl_noise,
                  description="a postmaster's children starting, serving one query and stopping (fast mode)"),
    NoAnomalyCase("t28_vacuumdb_connections", _vacuumdb_argv, _good(vacuumdb_nofile_limit),
                  description="vacuumdb's four connections finishing their tables in any order"),
    NoAnomalyCase("t28_dbus_session_bus", _dbus_argv, _good(dbus_run_dir_missing),
                  description="a private bus daemon and its client"),
    NoAnomalyCase("t28_ssh_agent_session", _ssh_agent_argv, _good(ssh_agent_stale_socket),
                  description="an agent daemonizing, a key added and listed, the agent killed"),
    NoAnomalyCase("t28_prefork_accept_order", _prefork_argv, _good(prefork_port_taken),
                  description="three forked workers taking 27 connections of four client threads in any order"),
    NoAnomalyCase("t28_syncd_temp_names", _syncd_argv, _good(syncd_staging_other_volume),
                  description="three sync threads, mkstemp names and files of random sizes in any order"),
]


def quiet_teardown() -> None:
    """What a noise case may leave: the last postmaster started for a run (no teardown runs
    between a noise case's runs) and a pg_ctl run's postmaster."""
    SERVER.stop()
    HOLDER.stop()


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
