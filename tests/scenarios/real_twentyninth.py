"""A twenty-ninth set of real programs with one real fault each: **what an on-call engineer
and a node-health agent run on a sick host** -- diagnostics and inventory tools that read
/proc, /sys, the utmp files and the journal, no earlier set ran -- and two small C programs of
the set's own (a threaded /proc census, a heartbeat writer). Each case is a step of a runbook
or of an agent's check loop:

- **who holds what**: ``lsof -nP FILE`` (who holds the service's log open), ``pgrep -L -F``
  (is the daemon of this pid file alive and holding its lock), ``pkill -HUP -F`` (the agent's
  log-reopen signal, as the agent), ``prtstat PID`` (the daemon's counters, as the agent, in a
  mount namespace whose /proc is mounted ``hidepid=noaccess,gid=adm`` like a hardened host's),
  ``kill -0 PID`` (a liveness check of the pid file's daemon);
- **logins and logs**: ``last -f btmp`` (failed logins, as the agent in group adm),
  ``who -a UTMP`` (who is on), ``journalctl --directory -p err`` (the errors of a journal the
  set wrote with a private ``systemd-journald``, as the agent), ``logger -u`` (a note to the
  host's log socket);
- **namespaces, buses, mounts**: ``ss -N NETNS -tlnp`` (a container's listening sockets by its
  named network namespace), ``busctl --address list`` (a private bus), ``findmnt --verify
  --tab-file`` (an fstab checked before a reboot);
- **check runners**: ``timeout 10 CHECK`` (a check script under a time cap), ``flock -n LOCK
  uptime`` (a check serialised on a lock file);
- **the set's C programs** (compiled by `build()`): ``tb29-procscan`` (lists /proc; four
  threads read every pid's stat, fd directory and exe link, skipping processes that exit
  meanwhile; writes a census), ``tb29-heartbeat`` (a sampler thread reads /proc/loadavg,
  /proc/uptime and /proc/self/status per beat; the main thread appends each beat to a log and
  renames a temporary into run/heartbeat; SIGXFSZ ignored).

Faults (``t29_`` cases), decided from what ``strace -f`` showed before the differ ran: a log
rotated away with no new file made (lsof's child's readlink, then stat, ENOENT), a daemon that
died and left its pid file (pgrep's flock of the pid file now succeeds where the live daemon's
lock made it fail EAGAIN: a divergence without an error; kill -0's kill ESRCH), a daemon
restarted as root (pkill's kill EPERM, as the agent), a proc mounted without the agent's group exempted (prtstat's openat
of /proc/PID/stat EPERM), a btmp recreated 0600 by a rotation (last's openat EACCES), a
utmp not recreated after a reboot (who's openat ENOENT: who still exits 0), a journal recreated
without the adm group (journalctl's openat EACCES), a syslog daemon gone with its socket
(logger's connect ENOENT: logger still exits 0), a container's network namespace deleted
(ss's openat of /run/netns/NAME ENOENT), a bus daemon killed leaving its socket (busctl's connect
ECONNREFUSED), an fstab target directory removed (findmnt's readlink, then stat, ENOENT), a check
deployed without its exec bit (timeout's child's execve EACCES), a lock directory on a
read-only volume (flock's openat EROFS), a full report volume (tb29-procscan's write ENOSPC),
a lowered file size limit (tb29-heartbeat's append write EFBIG).

Noise cases (``QUIET_TWENTYNINTH``) are good runs alone, most of them beside a churner (a
process of the test's own forking short-lived children, so /proc entries come and go during
the scan: ENOENT and ESRCH races): ps, top, lsof of the whole host, fuser -m, pstree and lsns,
ss -p, sysctl -a, free/vmstat/uptime/getconf, findmnt/lsblk/df, lslocks/lsfd, journalctl,
tb29-procscan and tb29-heartbeat.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import time
from pathlib import Path

from .catalog import fill_up, gone_pid, mount_tmpfs, umount, write
from .harness import ROOT, NoAnomalyCase, Scenario

NO_PATH = "*"  # the fault's call has no path of its own (a signal)
OPEN = frozenset({"openat", "open", "openat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
READLINK = frozenset({"readlink", "readlinkat"})
PY3 = "/usr/bin/python3"
ADM_GID = 4
# the node-health agent: nobody, in group adm (the group hardened hosts give log readers)
AGENT = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", f"--groups={ADM_GID}"]
NETNS = f"tb29-{os.getpid()}"  # a container's named network namespace (/run/netns/NAME)

PROCSCAN_C = r'''
/* tb29-procscan: a node-health agent's process census. The main thread lists /proc and four
   threads take its pids in turn: each reads /proc/PID/stat (name, state, threads, rss),
   counts /proc/PID/fd and reads the /proc/PID/exe link. A process that exits between the
   listing and the reading (ENOENT, ESRCH) is skipped, as any /proc scanner must. The census
   (per-state counts, the ten largest by rss, the full table) is written to OUT/procs.txt. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define MAXP 65536
struct proc { int pid; char comm[64]; char state; long threads, rss; int fds; char exe[256]; int ok; };
static struct proc procs[MAXP];
static int count, next;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void scan(struct proc *p) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", p->pid);
    FILE *f = fopen(path, "re");
    if (!f) return;  /* gone */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *l = strchr(buf, '('), *r = strrchr(buf, ')');
    if (!l || !r || r < l) return;
    snprintf(p->comm, sizeof p->comm, "%.*s", (int)(r - l - 1), l + 1);
    long v[24] = {0};
    char *s = r + 2;
    p->state = *s;
    for (int i = 0; i < 22 && s; i++) { s = strchr(s, ' '); if (s) { s++; v[i] = atol(s); } }
    p->threads = v[16];
    p->rss = v[20];
    snprintf(path, sizeof path, "/proc/%d/fd", p->pid);
    DIR *d = opendir(path);
    if (d) { struct dirent *e; while ((e = readdir(d))) if (e->d_name[0] != '.') p->fds++; closedir(d); }
    snprintf(path, sizeof path, "/proc/%d/exe", p->pid);
    ssize_t k = readlink(path, p->exe, sizeof p->exe - 1);
    p->exe[k > 0 ? k : 0] = 0;
    p->ok = 1;
}
static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        int i = next < count ? next++ : -1;
        pthread_mutex_unlock(&mu);
        if (i < 0) return NULL;
        scan(&procs[i]);
    }
}
static int by_rss(const void *a, const void *b) {
    const struct proc *x = a, *y = b;
    return (y->rss > x->rss) - (y->rss < x->rss);
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    DIR *d = opendir("/proc");
    if (!d) { perror("/proc"); return 1; }
    struct dirent *e;
    while ((e = readdir(d)) && count < MAXP)
        if (isdigit((unsigned char)e->d_name[0])) procs[count++].pid = atoi(e->d_name);
    closedir(d);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    int states[128] = {0}, live = 0;
    long fds = 0;
    for (int i = 0; i < count; i++)
        if (procs[i].ok) { live++; states[(unsigned char)procs[i].state & 127]++; fds += procs[i].fds; }
    qsort(procs, (size_t)count, sizeof procs[0], by_rss);
    char out[4200];
    snprintf(out, sizeof out, "%s/procs.txt", argv[1]);
    FILE *o = fopen(out, "we");
    if (!o) { fprintf(stderr, "%s: %s\n", out, strerror(errno)); return 1; }
    fprintf(o, "processes %d open-fds %ld\n", live, fds);
    for (int c = 'A'; c <= 'Z'; c++) if (states[c]) fprintf(o, "state %c %d\n", c, states[c]);
    for (int i = 0; i < count && i < 10; i++)
        if (procs[i].ok) fprintf(o, "top %d %s rss=%ld threads=%ld fds=%d exe=%s\n", procs[i].pid, procs[i].comm,
                                 procs[i].rss, procs[i].threads, procs[i].fds, procs[i].exe);
    for (int i = 0; i < count; i++)  /* the full table, for the on-call engineer */
        if (procs[i].ok) fprintf(o, "%d %c %s %ld %ld %d\n", procs[i].pid, procs[i].state, procs[i].comm,
                                 procs[i].rss, procs[i].threads, procs[i].fds);
    if (fflush(o) != 0 || ferror(o)) { fprintf(stderr, "%s: %s\n", out, strerror(errno)); return 1; }
    if (fclose(o) != 0) { fprintf(stderr, "%s: %s\n", out, strerror(errno)); return 1; }
    return 0;
}
'''

HEARTBEAT_C = r'''
/* tb29-heartbeat: a node agent's heartbeat writer. A sampler thread reads /proc/loadavg,
   /proc/uptime and /proc/self/status for every beat; the main thread appends one line per beat
   to log/heartbeat.log (O_APPEND) and replaces run/heartbeat by a temporary renamed into place
   (what the watchdog reads). 30 beats, 5 ms apart. SIGXFSZ is ignored (a write past the file
   size limit fails EFBIG instead of killing the agent); a write that fails stops it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define BEATS 30
static char sample[BEATS][300];
static int sampled;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    buf[0] = 0;
    if (fd < 0) return;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
}
static void *sampler(void *arg) {
    (void)arg;
    char load[128], up[128], st[2048];
    for (int i = 0; i < BEATS; i++) {
        slurp("/proc/loadavg", load, sizeof load);
        slurp("/proc/uptime", up, sizeof up);
        slurp("/proc/self/status", st, sizeof st);
        pthread_mutex_lock(&mu);
        snprintf(sample[i], sizeof sample[i], "load=%s up=%s", load, up);
        sampled = i + 1;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    signal(SIGXFSZ, SIG_IGN);
    char log[4200], cur[4200], tmp[4200], line[512];
    snprintf(log, sizeof log, "%s/log/heartbeat.log", argv[1]);
    snprintf(cur, sizeof cur, "%s/run/heartbeat", argv[1]);
    snprintf(tmp, sizeof tmp, "%s/run/.heartbeat.tmp", argv[1]);
    pthread_t t;
    pthread_create(&t, NULL, sampler, NULL);
    for (int i = 0; i < BEATS; i++) {
        pthread_mutex_lock(&mu);
        while (sampled <= i) pthread_cond_wait(&cv, &mu);
        int len = snprintf(line, sizeof line, "beat %d %s\n", i, sample[i]);
        pthread_mutex_unlock(&mu);
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) { fprintf(stderr, "%s: %s\n", log, strerror(errno)); return 1; }
        if (write(fd, line, (size_t)len) != len) { fprintf(stderr, "%s: %s\n", log, strerror(errno)); return 1; }
        close(fd);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, line, (size_t)len) != len) { fprintf(stderr, "%s: %s\n", tmp, strerror(errno)); return 1; }
        close(fd);
        if (rename(tmp, cur) < 0) { fprintf(stderr, "%s: %s\n", cur, strerror(errno)); return 1; }
    }
    pthread_join(t, NULL);
    return 0;
}
'''

# a private systemd-journald, in a mount namespace of its own (its own /run, the
# build's directory as /var/log/journal, no kernel messages), writes the journal the cases read
JOURNAL_SH = r'''set -e
mount -t tmpfs tb29 /run
mkdir -p /run/systemd/journal /run/log
mount --bind "$1/journal" /var/log/journal
mount --bind "$1/journald.conf" /etc/systemd/journald.conf
/lib/systemd/systemd-journald &
pid=$!
for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
for i in $(seq 40); do echo "request batch $i served" | systemd-cat -t tb29app -p info; done
echo "disk /dev/sdz: I/O error, sector 812345" | systemd-cat -t tb29app -p err
echo "worker 3 exited with status 137" | systemd-cat -t tb29app -p err
echo "health check degraded" | systemd-cat -t tb29agent -p warning
journalctl --flush
kill $pid
wait $pid || true
'''

UTMP_TXT = """\
[2] [00000] [~~  ] [reboot  ] [~           ] [6.1.0-18-amd64      ] [0.0.0.0        ] [2024-03-01T08:00:00,000000+00:00]
[1] [00051] [~~  ] [runlevel] [~           ] [6.1.0-18-amd64      ] [0.0.0.0        ] [2024-03-01T08:00:05,000000+00:00]
[7] [01234] [ts/0] [alice   ] [pts/0       ] [10.0.0.5            ] [10.0.0.5       ] [2024-03-01T10:00:00,000000+00:00]
[7] [01301] [ts/1] [bob     ] [pts/1       ] [10.0.0.9            ] [10.0.0.9       ] [2024-03-01T10:20:00,000000+00:00]
[8] [01234] [    ] [        ] [pts/0       ] [                    ] [0.0.0.0        ] [2024-03-01T11:00:00,000000+00:00]
"""

BTMP_TXT = "".join(
    f"[6] [{2000 + i:05d}] [    ] [{user:<8}] [ssh:notty   ] [198.51.100.{i % 200:<8}] "
    f"[198.51.100.{i % 200:<3}] [2024-03-01T{(i // 60) % 24:02d}:{i % 60:02d}:00,000000+00:00]\n"
    for i, user in enumerate(["root", "admin", "oracle", "test", "ubuntu", "pi"] * 15))


@functools.cache
def build() -> Path:
    """Compile the set's two C programs, write the journal (a private journald), the utmp,
    wtmp and btmp files, once per process. Returns the (world-readable) build directory."""
    out = ROOT / "_tb29"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    out.chmod(0o755)
    for name, src in (("tb29-procscan", PROCSCAN_C), ("tb29-heartbeat", HEARTBEAT_C)):
        write(out / f"{name}.c", src)
        subprocess.run(["cc", "-O1", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")],
                       check=True, capture_output=True)
        (out / name).chmod(0o755)
    # the journal
    (out / "journal").mkdir()
    write(out / "journald.conf", "[Journal]\nStorage=persistent\nReadKMsg=no\nForwardToSyslog=no\n"
          "ForwardToWall=no\nSystemMaxFileSize=2M\n")
    write(out / "journal.sh", JOURNAL_SH)
    subprocess.run(["unshare", "-m", "--propagation", "private", "/bin/sh", str(out / "journal.sh"), str(out)],
                   check=True, capture_output=True, timeout=60)
    journals = sorted((out / "journal").rglob("*.journal"))
    if not journals:
        raise RuntimeError("the private journald wrote no journal file")
    shutil.copy(journals[0], out / "system.journal")
    # the login records
    for name, text in (("utmp", UTMP_TXT.splitlines()[:4]), ("wtmp", UTMP_TXT.splitlines()),
                       ("btmp", BTMP_TXT.splitlines())):
        subprocess.run(["utmpdump", "-r", "-o", str(out / name)], input="\n".join(text) + "\n", text=True,
                       check=True, capture_output=True)
        (out / name).chmod(0o644)
    return out


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


# --- processes the cases start: daemons, a syslog listener, a bus, a churner ------------------------------
class _Background:
    """The processes a case's setup starts (the daemon of a pid file, a log holder, a syslog
    listener, a bus daemon, the churner): stopped by the case's teardown, by the next setup (a
    noise case has no teardown between its runs) or by quiet_teardown."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], ready: Path | None = None, **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=kw.pop("stdout", subprocess.DEVNULL),
                                stderr=subprocess.DEVNULL, start_new_session=True, **kw)
        self.procs.append(proc)
        deadline = time.monotonic() + 10
        while ready is not None and not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not make {ready}")
            time.sleep(0.01)
        return proc

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 (a teardown)
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
            proc.wait()
        self.procs = []


BG = _Background()


def _teardown(*names: str, netns: bool = False):
    def teardown(base: Path) -> None:
        BG.stop()
        for n in names:
            umount(base / n)
        if netns:
            subprocess.run(["ip", "netns", "delete", NETNS], capture_output=True)
    return teardown


def _churn() -> None:
    """A busy host: short-lived processes come and go while the tool scans /proc."""
    BG.start(["/bin/sh", "-c", "while :; do /bin/sleep 0.003; done"])


# a daemon that reopens its log on SIGHUP and holds an exclusive flock on its pid file
DAEMON_PY = """import fcntl, os, signal, sys, time
pidfile, log = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGHUP, lambda *a: open(log, 'a').write('reopened\\n'))
fd = os.open(pidfile, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, b'%d\\n' % os.getpid())
open(log, 'a').write('started\\n')
open(pidfile + '.ready', 'w').close()
while True:
    time.sleep(1)
"""


def _daemon(base: Path, *, as_agent: bool = False) -> subprocess.Popen:
    """The service's daemon: base/run/app.pid (locked), base/log/app.log."""
    _dirs(base, "run", "log")
    write(base / "daemon.py", DAEMON_PY)
    if as_agent:
        for d in ("run", "log"):
            os.chown(base / d, 65534, 65534)
    argv = [PY3, "-S", str(base / "daemon.py"), str(base / "run" / "app.pid"), str(base / "log" / "app.log")]
    return BG.start([*AGENT, *argv] if as_agent else argv, ready=base / "run" / "app.pid.ready")


# --- lsof -nP FILE ------------------------------------------------------------------------------------
def _lsof_argv(b: Path) -> list[str]:
    return ["/usr/bin/lsof", "-nP", f"{b}/log/app.log"]


def lsof_log_rotated_away(base: Path, bad: bool) -> None:
    BG.stop()
    _dirs(base, "log")
    write(base / "log" / "app.log", "".join(f"GET /item/{i} 200\n" for i in range(500)))
    log = open(base / "log" / "app.log", "a")  # noqa: SIM115 (the holder's stdout)
    BG.start(["/bin/sleep", "300"], stdout=log)
    log.close()
    if bad:  # logrotate moved the log away and no new one was made (its create step failed)
        (base / "log" / "app.log").rename(base / "log" / "app.log.1")


# --- pgrep -L -F -----------------------------------------------------------------------------------------
def _pgrep_argv(b: Path) -> list[str]:
    return ["/usr/bin/pgrep", "-L", "-F", f"{b}/run/app.pid"]


def pgrep_daemon_died(base: Path, bad: bool) -> None:
    BG.stop()
    if not bad:
        _daemon(base)
        return
    # the daemon was OOM-killed: its pid file stayed, nobody holds its lock
    _dirs(base, "run", "log")
    write(base / "run" / "app.pid", f"{gone_pid()}\n")


# --- pkill -HUP -F, as the agent -------------------------------------------------------------------
def _pkill_argv(b: Path) -> list[str]:
    return [*AGENT, "/usr/bin/pkill", "-HUP", "-F", f"{b}/run/app.pid"]


def pkill_daemon_now_root(base: Path, bad: bool) -> None:
    BG.stop()
    # the good host runs the daemon as the agent's own account; the bad host's new unit file
    # dropped User=: the daemon was restarted as root
    _daemon(base, as_agent=not bad)


# --- prtstat PID, as the agent, in a hidepid /proc ---------------------------------------------------
def _prtstat_argv(b: Path) -> list[str]:
    return ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
            f'mount -t proc -o "$(cat {b}/etc/proc-options)" proc /proc && '
            f'exec {" ".join(AGENT)} /usr/bin/prtstat "$(cat {b}/run/app.pid)"']


def prtstat_hidepid_group_dropped(base: Path, bad: bool) -> None:
    BG.stop()
    _dirs(base, "etc")
    _daemon(base)  # runs as root
    # the hardened host mounts /proc hidepid=noaccess and exempts the monitoring group; the
    # bad host's new fstab line lost gid=
    write(base / "etc" / "proc-options", "hidepid=noaccess\n" if bad else f"hidepid=noaccess,gid={ADM_GID}\n")


# --- kill -0 PID (a liveness check) ----------------------------------------------------------------
def _kill_argv(b: Path) -> list[str]:
    return _sh(f"exec /usr/bin/kill -0 \"$(cat {b}/run/app.pid)\"")


def kill_liveness_daemon_exited(base: Path, bad: bool) -> None:
    BG.stop()
    if not bad:
        _daemon(base)
        return
    # the daemon exited (a crash): its pid file stayed behind
    _dirs(base, "run", "log")
    write(base / "run" / "app.pid", f"{gone_pid()}\n")


# --- last -f btmp, as the agent -------------------------------------------------------------------------
def _last_argv(b: Path) -> list[str]:
    return [*AGENT, "/usr/bin/last", "-F", "-w", "-f", f"{b}/log/btmp"]


def last_btmp_recreated_private(base: Path, bad: bool) -> None:
    _dirs(base, "log")
    shutil.copy(build() / "btmp", base / "log" / "btmp")
    # the adm group may read the log; the bad host's rotation recreated it 0600 root:root
    os.chown(base / "log" / "btmp", 0, 0 if bad else ADM_GID)
    (base / "log" / "btmp").chmod(0o600 if bad else 0o640)


# --- who -a UTMP -------------------------------------------------------------------------------------------
def _who_argv(b: Path) -> list[str]:
    return ["/usr/bin/who", "-a", f"{b}/run/utmp"]


def who_utmp_not_recreated(base: Path, bad: bool) -> None:
    _dirs(base, "run", "log")
    shutil.copy(build() / "wtmp", base / "log" / "wtmp")
    if not bad:  # after the reboot the bad host's utmp was not made again
        shutil.copy(build() / "utmp", base / "run" / "utmp")


# --- journalctl --directory -p err, as the agent -----------------------------------------------------------
def _journalctl_argv(b: Path) -> list[str]:
    return [*AGENT, "/usr/bin/journalctl", f"--directory={b}/journal", "-p", "err", "-o", "short-iso",
            "--no-pager", "-q"]


def journalctl_journal_group_lost(base: Path, bad: bool) -> None:
    _dirs(base, "journal")
    shutil.copy(build() / "system.journal", base / "journal" / "system.journal")
    # journald makes its files readable by the adm group; the bad host's journal was made by a
    # journald whose tmpfiles step did not run: root:root 0640
    os.chown(base / "journal" / "system.journal", 0, 0 if bad else ADM_GID)
    (base / "journal" / "system.journal").chmod(0o640)


# --- logger -u SOCKET -----------------------------------------------------------------------------------
SYSLOG_PY = """import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[1] + '.ready', 'w').close()
with open(sys.argv[2], 'ab') as out:
    while True:
        out.write(s.recv(65536) + b'\\n')
        out.flush()
"""


def _logger_argv(b: Path) -> list[str]:
    return ["/usr/bin/logger", "-u", f"{b}/dev/log", "-t", "oncall", "-p", "user.notice",
            "--id=4242", "disk /srv nearly full, paging the owner"]


def logger_syslog_socket_gone(base: Path, bad: bool) -> None:
    BG.stop()
    _dirs(base, "dev", "log")
    if not bad:  # the bad host's syslog daemon is gone, and so is its socket
        write(base / "syslog.py", SYSLOG_PY)
        BG.start([PY3, "-S", str(base / "syslog.py"), str(base / "dev" / "log"), str(base / "log" / "messages")],
                 ready=base / "dev" / "log.ready")


# --- ss -N NETNS ----------------------------------------------------------------------------------------------
def _ss_argv(b: Path) -> list[str]:  # noqa: ARG001
    return ["/usr/bin/ss", "-N", NETNS, "-tlnp"]


def ss_netns_deleted(base: Path, bad: bool) -> None:  # noqa: ARG001
    subprocess.run(["ip", "netns", "delete", NETNS], capture_output=True)
    if not bad:  # the container was removed and its named namespace with it
        subprocess.run(["ip", "netns", "add", NETNS], check=True, capture_output=True)
        subprocess.run(["ip", "-n", NETNS, "link", "set", "lo", "up"], check=True, capture_output=True)


# --- busctl --address list ---------------------------------------------------------------------------------
BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=%(base)s/run/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def _busctl_argv(b: Path) -> list[str]:
    return ["/usr/bin/busctl", f"--address=unix:path={b}/run/bus.sock", "--no-pager", "list"]


def busctl_bus_daemon_killed(base: Path, bad: bool) -> None:
    BG.stop()
    _dirs(base, "run", "etc")
    if not bad:
        write(base / "etc" / "bus.conf", BUS_CONF % {"base": base})
        BG.start(["/usr/bin/dbus-daemon", "--nofork", f"--config-file={base}/etc/bus.conf"],
                 ready=base / "run" / "bus.sock")
        return
    # the bus daemon was SIGKILLed: its socket file stayed, nothing listens on it
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(base / "run" / "bus.sock"))
    s.close()


# --- findmnt --verify --tab-file -------------------------------------------------------------------------
def _findmnt_argv(b: Path) -> list[str]:
    return ["/usr/bin/findmnt", "--verify", "--tab-file", f"{b}/etc/fstab"]


def findmnt_target_removed(base: Path, bad: bool) -> None:
    _dirs(base, "etc", "srv/data", "srv/cache")
    # the swap image line has always warned (the image was never made): an expected warning
    write(base / "etc" / "fstab", f"tmpfs {base}/srv/data tmpfs defaults,size=64m 0 0\n"
          f"tmpfs {base}/srv/cache tmpfs defaults,size=16m 0 0\n"
          f"tmpfs {base}/srv/logs tmpfs defaults,size=8m 0 0\n"
          f"{base}/img/swap.img none swap sw 0 0\n")
    if not bad:  # a cleanup removed the logs mount point: the next boot would fail to mount it
        _dirs(base, "srv/logs")


# --- timeout 10 CHECK ----------------------------------------------------------------------------------------
def _timeout_argv(b: Path) -> list[str]:
    return ["/usr/bin/timeout", "-k", "2", "10", f"{b}/checks/20-disk"]


def timeout_check_not_executable(base: Path, bad: bool) -> None:
    _dirs(base, "checks", "srv")
    # the check was redeployed from an archive that lost its mode bits
    write(base / "checks" / "20-disk", f"#!/bin/sh\nset -e\ndf -P {base}/srv > {base}/checks/20-disk.out\n"
          f"test \"$(df -P {base}/srv | awk 'NR==2 {{print $5+0}}')\" -lt 95\n", 0o644 if bad else 0o755)


# --- flock -n LOCK uptime ----------------------------------------------------------------------------------
def _flock_argv(b: Path) -> list[str]:
    return ["/usr/bin/flock", "-n", "-E", "75", f"{b}/lock/health.lock", "/usr/bin/uptime"]


def flock_lock_dir_read_only(base: Path, bad: bool) -> None:
    # the host's lock directory is a tmpfs of its own; the bad host's came up read-only
    mount_tmpfs(base / "lock", "1m", readonly=bad)


# --- tb29-procscan ----------------------------------------------------------------------------------------
def _procscan_argv(b: Path) -> list[str]:
    return [str(build() / "tb29-procscan"), f"{b}/out"]


def procscan_report_volume_full(base: Path, bad: bool) -> None:
    BG.stop()
    mount_tmpfs(base / "out", "1m")
    if bad:  # the report volume is full
        fill_up(base / "out")


# --- tb29-heartbeat under ulimit -f ---------------------------------------------------------------------------
def _heartbeat_argv(b: Path) -> list[str]:
    return _sh(f'ulimit -f "$(cat {b}/fsize)"; exec {build() / "tb29-heartbeat"} {b}')


def heartbeat_fsize_limit(base: Path, bad: bool) -> None:
    _dirs(base, "log", "run")
    write(base / "log" / "heartbeat.log", "".join(f"beat {i} load=0.{i % 97:02d} up={1000 + i}.00\n"
                                                  for i in range(1500)))
    # the bad host's unit sets LimitFSIZE=32 blocks: the (unrotated) log is past it already
    write(base / "fsize", "32\n" if bad else "unlimited\n")


REAL_TWENTYNINTH: list[Scenario] = [
    Scenario("t29_lsof_log_rotated_away", "lsof -nP FILE (who holds the service's log)", _lsof_argv,
             lsof_log_rotated_away, READLINK | STAT, "ENOENT", lambda b: f"{b}/log/app.log", teardown=_teardown(),
             description="lsof asked who holds a log that logrotate moved away without making a new one"),
    Scenario("t29_pgrep_daemon_died", "pgrep -L -F (is the pid file's daemon alive and holding its lock)",
             _pgrep_argv, pgrep_daemon_died, frozenset({"flock"}), None, lambda b: f"{b}/run/app.pid",
             teardown=_teardown(),
             description="pgrep -L on the pid file of an OOM-killed daemon: its lock now free, flock succeeds"),
    Scenario("t29_pkill_daemon_now_root", "pkill -HUP -F (as the agent: the log-reopen signal)", _pkill_argv,
             pkill_daemon_now_root, frozenset({"kill"}), "EPERM", lambda b: NO_PATH, teardown=_teardown(),
             description="the agent's SIGHUP to a daemon a new unit file restarted as root"),
    Scenario("t29_prtstat_hidepid_group_dropped", "prtstat PID (as the agent; unshare -m: /proc mounted hidepid)",
             _prtstat_argv, prtstat_hidepid_group_dropped, OPEN, "EPERM", lambda b: "/proc/*/stat",
             teardown=_teardown(),
             description="the agent reading a daemon's /proc/PID/stat under hidepid=noaccess without its gid="),
    Scenario("t29_kill_liveness_daemon_exited", "kill -0 PID (procps; sh: the pid file read)", _kill_argv,
             kill_liveness_daemon_exited, frozenset({"kill"}), "ESRCH", lambda b: NO_PATH, teardown=_teardown(),
             description="a liveness check signalling 0 to the pid of a daemon that crashed"),
    Scenario("t29_last_btmp_recreated_private", "last -f btmp (as the agent in group adm)", _last_argv,
             last_btmp_recreated_private, OPEN, "EACCES", lambda b: f"{b}/log/btmp",
             description="the agent reading failed logins from a btmp a rotation recreated 0600 root:root"),
    Scenario("t29_who_utmp_not_recreated", "who -a UTMP (exits 0)", _who_argv, who_utmp_not_recreated, OPEN,
             "ENOENT", lambda b: f"{b}/run/utmp",
             description="who reading a utmp the host did not make again after a reboot: who still exits 0"),
    Scenario("t29_journalctl_journal_group_lost", "journalctl --directory -p err (as the agent in group adm)",
             _journalctl_argv, journalctl_journal_group_lost, OPEN, "EACCES",
             lambda b: f"{b}/journal/system.journal",
             description="the agent reading the errors of a journal made root:root 0640 without the adm group"),
    Scenario("t29_logger_syslog_socket_gone", "logger -u SOCKET (exits 0)", _logger_argv, logger_syslog_socket_gone,
             frozenset({"connect"}), "ENOENT", lambda b: f"unix:{b}/dev/log", teardown=_teardown(),
             description="an on-call note sent to a syslog socket whose daemon is gone: logger still exits 0"),
    Scenario("t29_ss_netns_deleted", "ss -N NETNS -tlnp (a container's sockets)", _ss_argv, ss_netns_deleted, OPEN,
             "ENOENT", lambda b: f"/run/netns/{NETNS}", teardown=_teardown(netns=True),
             description="ss listing a container's sockets by a named network namespace that was deleted"),
    Scenario("t29_busctl_bus_daemon_killed", "busctl --address list (a private bus)", _busctl_argv,
             busctl_bus_daemon_killed, frozenset({"connect"}), "ECONNREFUSED", lambda b: f"unix:{b}/run/bus.sock",
             teardown=_teardown(),
             description="busctl listing a private bus whose daemon was killed and left its socket file"),
    Scenario("t29_findmnt_target_removed", "findmnt --verify --tab-file (an fstab before a reboot)", _findmnt_argv,
             findmnt_target_removed, READLINK | STAT, "ENOENT", lambda b: f"{b}/srv/logs",
             description="findmnt verifying an fstab whose logs mount point a cleanup removed"),
    Scenario("t29_timeout_check_not_executable", "timeout -k 2 10 CHECK (a check script)", _timeout_argv,
             timeout_check_not_executable, frozenset({"execve", "execveat"}), "EACCES",
             lambda b: f"{b}/checks/20-disk",
             description="a disk check run under timeout, redeployed without its exec bit"),
    Scenario("t29_flock_lock_dir_read_only", "flock -n LOCK uptime (a serialised check)", _flock_argv,
             flock_lock_dir_read_only, OPEN, "EROFS", lambda b: f"{b}/lock/health.lock", teardown=_teardown("lock"),
             description="a check serialised on a lock file in a lock directory that came up read-only"),
    Scenario("t29_procscan_report_volume_full", "tb29-procscan (C: four threads reading every /proc/PID)",
             _procscan_argv, procscan_report_volume_full, WRITE, "ENOSPC", lambda b: f"{b}/out/procs.txt",
             teardown=_teardown("out"),
             description="a threaded /proc census writing its report onto a full volume"),
    Scenario("t29_heartbeat_fsize_limit", "tb29-heartbeat (C: a sampler thread; sh: under ulimit -f)",
             _heartbeat_argv, heartbeat_fsize_limit, WRITE, "EFBIG", lambda b: f"{b}/log/heartbeat.log",
             description="a heartbeat appending to an unrotated log past a lowered file size limit"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _churning(setup=None):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        BG.stop()
        if setup is not None:
            setup(base, False)
        _churn()
    return noise


def _procscan_noise(base: Path, run: int) -> None:  # noqa: ARG001
    BG.stop()
    _dirs(base, "out")
    _churn()


def _journal_noise(base: Path, run: int) -> None:  # noqa: ARG001
    journalctl_journal_group_lost(base, False)


QUIET_TWENTYNINTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t29_ps_every_process", lambda b: ["/usr/bin/ps", "-eo", "pid,ppid,user,stat,rss,etime,wchan,args"],
                  _churning(), description="ps reading every /proc/PID while short-lived processes come and go"),
    NoAnomalyCase("t29_top_batch", lambda b: ["/usr/bin/top", "-b", "-n", "1", "-w", "200"], _churning(),
                  description="top's one batch screen of a busy host"),
    NoAnomalyCase("t29_lsof_whole_host", lambda b: ["/usr/bin/lsof", "-nP", "-w"], _churning(),
                  description="lsof of every process's files (a helper child, vanishing processes)"),
    NoAnomalyCase("t29_fuser_mount", lambda b: ["/usr/bin/fuser", "-vm", "/tmp"], _churning(),
                  description="fuser -m of the /tmp file system: every process's fds, cwd, maps"),
    NoAnomalyCase("t29_pstree_lsns", lambda b: _sh("/usr/bin/pstree -pa >/dev/null; /usr/bin/lsns >/dev/null; "
                                                   "/usr/bin/lsns -t net >/dev/null"), _churning(),
                  description="pstree and lsns walking /proc/PID/task and /proc/PID/ns"),
    NoAnomalyCase("t29_ss_processes", lambda b: ["/usr/bin/ss", "-tuanpx"], _churning(),
                  description="ss -p: sock_diag and every process's socket fds"),
    NoAnomalyCase("t29_sysctl_all", lambda b: ["/usr/sbin/sysctl", "-a"], lambda b, r: None,
                  description="sysctl -a: every /proc/sys entry, the write-only and unreadable ones included"),
    NoAnomalyCase("t29_memory_load_summary",
                  lambda b: _sh("/usr/bin/free -m; /usr/bin/vmstat -s; /usr/bin/vmstat 1 2; "
                                " /usr/bin/uptime; /usr/bin/getconf -a >/dev/null; /usr/bin/nproc"),
                  lambda b, r: None, description="free, vmstat, uptime, getconf -a: a health check script's summary"),
    NoAnomalyCase("t29_mounts_and_disks",
                  lambda b: _sh("/usr/bin/findmnt -J >/dev/null; /usr/bin/lsblk -J -O >/dev/null; /usr/bin/df -hT; "
                                "/usr/bin/lslocks; /usr/bin/lsfd >/dev/null"),
                  _churning(), description="findmnt, lsblk, df, lslocks and lsfd of a busy host"),
    NoAnomalyCase("t29_journalctl_reader", _journalctl_argv, _journal_noise,
                  description="the agent reading a journal's errors (mmap windows, a hint on stderr)"),
    NoAnomalyCase("t29_procscan_churn", _procscan_argv, _procscan_noise,
                  description="four threads reading /proc/PID entries of processes that may exit meanwhile"),
    NoAnomalyCase("t29_heartbeat_beats", _heartbeat_argv, _good(heartbeat_fsize_limit),
                  description="a sampler thread and the beats it feeds, 5 ms apart"),
]


def quiet_teardown() -> None:
    """What a noise case may leave: its background processes (the churner, a daemon); and a
    fault case cut short, its network namespace."""
    BG.stop()
    subprocess.run(["ip", "netns", "delete", NETNS], capture_output=True)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
