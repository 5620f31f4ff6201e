"""A tenth set of real programs with one real fault each: a training job's storage side --
checkpoint and log writing and the files around them.

- **atomic checkpoint saves** (write a temp, fsync, rename): the temp on another tmpfs than the
  checkpoint directory (rename EXDEV), the directory bind-mounted read-only (EROFS), a
  size-limited tmpfs filling mid-shard (write ENOSPC) or out of inodes (nr_inodes: open
  ENOSPC), a step directory already there from a half-finished save (rename ENOTEMPTY), a
  checkpoint name that is a directory (rename EISDIR), O_TMPFILE + linkat onto a step already
  saved (EEXIST), an O_DIRECT write from a buffer off its alignment (EINVAL), a copy whose
  clone and copy_file_range fall back as in every run and whose read/write copy then fills
  the disk, fallocate on a full tmpfs (ENOSPC), a run directory whose parent is root's (mkdir
  EACCES as nobody), a name from the config too long (ENAMETOOLONG), `latest` a symlink loop
  (ELOOP) or dangling (ENOENT), a checkpoint root's only (EACCES);
- **locks and pid files**: flock and fcntl locks held by a stale process (EWOULDBLOCK,
  EAGAIN), lockf retried until the job gives up (its message), an O_EXCL pid file left by a
  process that is alive (EEXIST);
- **watchers**: inotify watches over max_inotify_watches (ENOSPC), instances over
  max_inotify_instances (EMFILE), eventfds over RLIMIT_NOFILE (EMFILE), epoll on a log that is
  a regular file where the good runs' is a FIFO (epoll_ctl EPERM); log rotation: a copytruncate
  of an append-only log (open O_TRUNC EPERM), RotatingFileHandler's rename in a directory
  nobody cannot write (EACCES, and the job goes on);
- **real programs**: python3 checkpoint savers (tempfile + os.replace, shards, os.makedirs),
  tar -h of a `latest` loop, cp --reflink=auto onto a read-only mount, sqlite3's .backup into a
  full tmpfs, flock(1) -n on a lock held by a stale job;
- **a pipeline's reader killed** while its writer writes (the writer's EPIPE is the
  consequence, whether its write entered before the crash or after).

Most faults go through one C program, ``ckpt``: a job's checkpoint thread as a plan of steps
(mkdir -p, saves, shards, resumes, locks, watchers, logs) so each fault sits among the other
steps' successful calls. The mounts are made in a private mount namespace (unshare -m) by the
same commands in every run, their sizes and modes read from files the setup writes. Same types
and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what `strace -f`
shows a person looking for the fault (real_eighth.py's conventions).

The good-vs-good cases (`QUIET_TENTH`) carry the run-to-run noise of such jobs: step numbers
and shard counts, temp names with pids and random suffixes, the EXDEV/clone/copy_file_range
/O_TMPFILE/fallocate fallbacks taken in every run, lock retries of varying count, a stale pid
file cleared in some runs, old checkpoints pruned in varying number, directory listing order,
logs rotated a varying number of times.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

from .catalog import write
from .harness import NoAnomalyCase, Scenario
from .real import own
from .real_fifth import _cc
from .real_sixth import HOLD_LOCKF_PY, _wait_for
from .real_third import BACKGROUND

PY3 = "/usr/bin/python3"
NO_PATH = "*"
STDERR = "/dev/null"
END = frozenset({"(end of thread)"})
PROBES_OPEN = frozenset({"openat", "open"})
PROBES_RENAME = frozenset({"rename", "renameat", "renameat2"})
PROBES_WRITE = frozenset({"write", "pwrite64", "writev"})
PROBES_STAT = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat"})
MiB = 1 << 20

CKPT_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* A training job's storage side, one step per line of its plan: checkpoints saved atomically
   (temp, fsync, rename), resumed from `latest`, locks and pid files, watchers. A failing step
   prints its message and exits 1, as the job's checkpoint thread does. */
static void die(const char *what, const char *arg) {
    fprintf(stderr, "ckpt: %s %s: %s\n", what, arg, strerror(errno));
    exit(1);
}

static char buf[1 << 18];

static void fill(int fd, long n, const char *path) {
    while (n > 0) {
        long k = n < (long)sizeof buf ? n : (long)sizeof buf;
        ssize_t w = write(fd, buf, k);
        if (w < 0) die("write", path);
        n -= w;
    }
}

static void sync_dir(const char *dir) {
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    if (d < 0) die("open", dir);
    fsync(d);
    close(d);
}

/* read/write copy: the last fallback */
static void copy_rw(int in, int out, const char *dst) {
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, r) != r) die("write", dst);
    if (r < 0) die("read", dst);
}

/* clone, else copy_file_range, else read/write: cp --reflink=auto's order */
static void copy_fd(int in, int out, const char *dst) {
    if (ioctl(out, FICLONE, in) == 0) return;
    if (errno != EOPNOTSUPP && errno != EXDEV && errno != EINVAL && errno != ENOTTY) die("ioctl FICLONE", dst);
    ssize_t r;
    while ((r = copy_file_range(in, NULL, out, NULL, 1 << 20, 0)) > 0) {}
    if (r == 0) return;
    if (errno != EXDEV && errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) die("copy_file_range", dst);
    copy_rw(in, out, dst);
}

static void save(const char *tmpdir, const char *dir, const char *name, long n, int fallback) {
    char tmp[4200], dst[4200];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d", tmpdir, name, (int)getpid());
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) die("open", tmp);
    while (n > 0) {
        long k = n < (long)sizeof buf ? n : (long)sizeof buf;
        ssize_t w = write(fd, buf, k);
        if (w < 0) { int e = errno; unlink(tmp); errno = e; die("write", tmp); }
        n -= w;
    }
    if (fsync(fd) < 0) die("fsync", tmp);
    close(fd);
    if (rename(tmp, dst) < 0) {
        if (!(fallback && errno == EXDEV)) { int e = errno; unlink(tmp); errno = e; die("rename", tmp); }
        /* the temp is on another file system: copy it next to the target, then rename there */
        char near[4300];
        snprintf(near, sizeof near, "%s/.%s.copy.%d", dir, name, (int)getpid());
        int in = open(tmp, O_RDONLY), out = open(near, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (in < 0) die("open", tmp);
        if (out < 0) die("open", near);
        copy_fd(in, out, near);
        if (fsync(out) < 0) die("fsync", near);
        close(in);
        close(out);
        unlink(tmp);
        if (rename(near, dst) < 0) die("rename", near);
    }
    sync_dir(dir);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    memset(buf, 7, sizeof buf);
    char line[8600], op[32], a[4096], b[4096], c[256], d[64];
    while (fgets(line, sizeof line, f)) {
        a[0] = b[0] = c[0] = d[0] = 0;
        if (sscanf(line, "%31s %4095s %4095s %255s %63s", op, a, b, c, d) < 1 || op[0] == '#') continue;
        if (!strcmp(op, "mkdir")) {                  /* mkdir -p */
            char p[4096];
            for (char *s = a + 1;; s++) {
                if (*s == '/' || !*s) {
                    memcpy(p, a, s - a);
                    p[s - a] = 0;
                    if (mkdir(p, 0755) < 0 && errno != EEXIST) die("mkdir", p);
                    if (!*s) break;
                }
            }
        } else if (!strcmp(op, "save")) {            /* save TMPDIR DIR NAME SIZE */
            save(a, b, c, atol(d), 0);
        } else if (!strcmp(op, "savefb")) {          /* the same, copying across file systems */
            save(a, b, c, atol(d), 1);
        } else if (!strcmp(op, "savedir")) {         /* savedir DIR STEP SHARDS: a directory renamed into place */
            char tmp[4200], dst[4200], shard[4400];
            snprintf(tmp, sizeof tmp, "%s/.tmp-%s.%d", a, b, (int)getpid());
            snprintf(dst, sizeof dst, "%s/%s", a, b);
            if (mkdir(tmp, 0755) < 0) die("mkdir", tmp);
            for (int i = 0; i < atoi(c); i++) {
                snprintf(shard, sizeof shard, "%s/shard-%05d.bin", tmp, i);
                int fd = open(shard, O_CREAT | O_WRONLY | O_TRUNC, 0644);
                if (fd < 0) die("open", shard);
                fill(fd, 1 << 18, shard);
                if (fsync(fd) < 0) die("fsync", shard);
                close(fd);
            }
            if (rename(tmp, dst) < 0) die("rename", tmp);
            sync_dir(a);
        } else if (!strcmp(op, "tmpfile")) {         /* tmpfile DIR NAME SIZE: O_TMPFILE, linkat */
            char dst[4200], proc[64];
            snprintf(dst, sizeof dst, "%s/%s", a, b);
            int fd = open(a, O_TMPFILE | O_WRONLY, 0644);
            if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) { save(a, a, b, atol(c), 0); continue; }
            if (fd < 0) die("open O_TMPFILE", a);
            fill(fd, atol(c), dst);
            if (fsync(fd) < 0) die("fsync", dst);
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) < 0) die("linkat", dst);
            close(fd);
        } else if (!strcmp(op, "direct")) {          /* direct PATH SIZE OFFSET: O_DIRECT write */
            char *p;
            if (posix_memalign((void **)&p, 4096, atol(b) + 8192)) return 3;
            memset(p, 3, atol(b) + 8192);
            int fd = open(a, O_CREAT | O_WRONLY | O_TRUNC | O_DIRECT, 0644);
            if (fd < 0) die("open O_DIRECT", a);
            if (write(fd, p + atol(c), atol(b)) < 0) die("write", a);
            close(fd);
            free(p);
        } else if (!strcmp(op, "copy")) {            /* copy SRC DST: clone, copy_file_range, read/write */
            int in = open(a, O_RDONLY);
            if (in < 0) die("open", a);
            int out = open(b, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (out < 0) die("open", b);
            copy_fd(in, out, b);
            close(in);
            close(out);
        } else if (!strcmp(op, "reserve")) {         /* reserve PATH SIZE: fallocate, else write */
            int fd = open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (fd < 0) die("open", a);
            if (fallocate(fd, 0, 0, atol(b)) < 0) {
                if (errno != EOPNOTSUPP) die("fallocate", a);
                fill(fd, atol(b), a);
            }
            close(fd);
        } else if (!strcmp(op, "resume")) {          /* resume PATH: the latest checkpoint */
            int fd = open(a, O_RDONLY);
            if (fd < 0) die("open", a);
            while (read(fd, buf, sizeof buf) > 0) {}
            close(fd);
        } else if (!strcmp(op, "flock")) {
            int fd = open(a, O_CREAT | O_RDWR, 0644);
            if (fd < 0) die("open", a);
            if (flock(fd, LOCK_EX | LOCK_NB) < 0) die("flock", a);
        } else if (!strcmp(op, "setlk")) {
            int fd = open(a, O_CREAT | O_RDWR, 0644);
            if (fd < 0) die("open", a);
            struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
            if (fcntl(fd, F_SETLK, &fl) < 0) die("fcntl F_SETLK", a);
        } else if (!strcmp(op, "lockf")) {           /* lockf PATH TRIES: 20 ms apart */
            int fd = open(a, O_CREAT | O_RDWR, 0644);
            if (fd < 0) die("open", a);
            int tries = atoi(b), i;
            for (i = 0; i < tries && lockf(fd, F_TLOCK, 0) < 0; i++) {
                if (errno != EAGAIN && errno != EACCES) die("lockf", a);
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
            }
            if (i == tries) { fprintf(stderr, "ckpt: lock %s: still held after %d tries\n", a, tries); exit(1); }
        } else if (!strcmp(op, "pidfile")) {         /* pidfile PATH: O_EXCL, a stale one of a dead pid cleared */
            int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0 && errno == EEXIST && b[0] == 'c') {
                char pid[32] = {0};
                int old = open(a, O_RDONLY);
                if (old >= 0) { if (read(old, pid, sizeof pid - 1) < 0) pid[0] = 0; close(old); }
                if (atoi(pid) > 0 && kill(atoi(pid), 0) < 0 && errno == ESRCH) {
                    unlink(a);
                    fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
                } else errno = EEXIST;
            }
            if (fd < 0) die("open", a);
            dprintf(fd, "%d\n", (int)getpid());
            close(fd);
        } else if (!strcmp(op, "unlink")) {
            if (unlink(a) < 0 && errno != ENOENT) die("unlink", a);
        } else if (!strcmp(op, "watch")) {           /* watch DIR N: one watch per DIR/sub<i> */
            int in = inotify_init1(IN_CLOEXEC);
            if (in < 0) die("inotify_init1", a);
            for (int i = 0; i < atoi(b); i++) {
                char sub[4200];
                snprintf(sub, sizeof sub, "%s/sub%d", a, i);
                if (inotify_add_watch(in, sub, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) die("inotify_add_watch", sub);
            }
            close(in);
        } else if (!strcmp(op, "events")) {          /* events N: eventfds for the loader's workers */
            int ep = epoll_create1(EPOLL_CLOEXEC);
            if (ep < 0) die("epoll_create1", "");
            for (int i = 0; i < atoi(a); i++) {
                int e = eventfd(0, EFD_CLOEXEC);
                if (e < 0) die("eventfd", a);
                struct epoll_event ev = {.events = EPOLLIN, .data.fd = e};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) < 0) die("epoll_ctl", a);
            }
        } else if (!strcmp(op, "follow")) {          /* follow PATH: the log stream, watched with epoll */
            int fd = open(a, O_RDONLY | O_NONBLOCK);
            if (fd < 0) die("open", a);
            int ep = epoll_create1(EPOLL_CLOEXEC);
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
            if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl", a);
            epoll_wait(ep, &ev, 1, 10);
            close(ep);
            close(fd);
        } else if (!strcmp(op, "log")) {             /* log PATH N: N lines appended */
            int fd = open(a, O_CREAT | O_WRONLY | O_APPEND, 0644);
            if (fd < 0) die("open", a);
            for (int i = 0; i < atoi(b); i++) dprintf(fd, "step %d loss %.3f\n", i, 1.0 / (i + 1));
            close(fd);
        } else if (!strcmp(op, "prune")) {           /* prune DIR KEEP: remove all but KEEP newest step-* */
            struct dirent **ents;
            int n = scandir(a, &ents, NULL, versionsort);
            if (n < 0) die("scandir", a);
            int steps = 0;
            for (int i = 0; i < n; i++) steps += !strncmp(ents[i]->d_name, "step-", 5);
            for (int i = 0; i < n && steps > atoi(b); i++) {
                if (strncmp(ents[i]->d_name, "step-", 5)) continue;
                char p[4400];
                snprintf(p, sizeof p, "%s/%s", a, ents[i]->d_name);
                if (unlink(p) < 0) die("unlink", p);
                steps--;
            }
        } else if (!strcmp(op, "list")) {            /* list DIR: readdir order, as the loader's glob */
            DIR *dd = opendir(a);
            if (!dd) die("opendir", a);
            struct dirent *e;
            while ((e = readdir(dd))) {
                if (e->d_name[0] == '.') continue;
                char p[4400];
                struct stat st;
                snprintf(p, sizeof p, "%s/%s", a, e->d_name);
                if (stat(p, &st) < 0) die("stat", p);
            }
            closedir(dd);
        } else {
            fprintf(stderr, "ckpt: unknown step %s\n", op);
            return 2;
        }
    }
    printf("checkpoint steps done\n");
    return 0;
}
"""


def _sh(b: Path, script: str) -> list[str]:
    return ["/bin/sh", "-c", script.format(b=b, py=PY3)]


def _plan(base: Path, *steps: str) -> None:
    """The job's plan: the steps every run makes, with the host's differences in the state."""
    _cc(base, "bin/ckpt", CKPT_C)
    write(base / "plan", "".join(f"{s}\n" for s in steps))


def _usual(base: Path, *mid: str) -> None:
    """A training step's storage work around `mid`: the log, then the loader's event fds and
    the log again, so each fault sits among successful calls."""
    (base / "logs").mkdir(exist_ok=True)
    _plan(base, f"log {base}/logs/train.log 40", *mid, "events 8", f"log {base}/logs/train.log 5")


def _ckpt(b: Path) -> list[str]:
    return [f"{b}/bin/ckpt", f"{b}/plan"]


# Two tmpfs mounts in a private mount namespace -- the checkpoint directory and a node-local
# scratch -- made by the same commands in every run: size, inodes and rw/ro come from files.
MOUNTS_SH = ("exec /usr/bin/unshare -m /bin/sh -c '"
             "/usr/bin/mount -t tmpfs -o size=$(/usr/bin/cat {b}/fs.size),nr_inodes=$(/usr/bin/cat {b}/fs.inodes),"
             "mode=0755 ckpt {b}/ckpt && /usr/bin/mount -t tmpfs -o size=16m,mode=0755 scratch {b}/scratch && "
             "/usr/bin/mount --bind {b}/ckpt {b}/ckpt && "
             "/usr/bin/mount -o remount,$(/usr/bin/cat {b}/fs.mode),bind {b}/ckpt && exec {tail}'")


def _mounted(tail: str):
    return lambda b: _sh(b, MOUNTS_SH.replace("{tail}", tail))


def _fs(base: Path, size: str = "64m", inodes: int = 4096, mode: str = "rw") -> None:
    for d in ("ckpt", "scratch", "src"):
        (base / d).mkdir(exist_ok=True)
    write(base / "fs.size", size + "\n")
    write(base / "fs.inodes", f"{inodes}\n")
    write(base / "fs.mode", mode + "\n")


# --- atomic checkpoint saves --------------------------------------------------------------------
def rename_exdev(base: Path, bad: bool) -> None:
    _fs(base)
    # the bad host's launcher points TMPDIR at node-local scratch, another file system
    tmp = f"{base}/scratch" if bad else f"{base}/ckpt/run"
    _usual(base, f"mkdir {base}/ckpt/run", f"save {tmp} {base}/ckpt/run model.pt {MiB}")


def readonly_bind(base: Path, bad: bool) -> None:
    _fs(base, mode="ro" if bad else "rw")  # the checkpoint volume remounted read-only
    _usual(base, f"save {base}/ckpt {base}/ckpt model.pt {MiB}")


def shard_enospc(base: Path, bad: bool) -> None:
    _fs(base, size="2m" if bad else "16m")
    _usual(base, f"mkdir {base}/ckpt/run",
           *(f"save {base}/ckpt/run {base}/ckpt/run shard-{i:05d}.bin {MiB}" for i in range(4)))


def out_of_inodes(base: Path, bad: bool) -> None:
    _fs(base, inodes=6 if bad else 4096)
    _usual(base, f"mkdir {base}/ckpt/run", f"savedir {base}/ckpt/run step-100 8")


def step_dir_not_empty(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    _usual(base, f"savedir {base}/run step-200 4")
    if bad:  # a save killed after its rename, its step re-run after a restart from step 100
        (base / "run" / "step-200").mkdir()
        write(base / "run" / "step-200" / "shard-00000.bin", "x")


def name_is_directory(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    _usual(base, f"save {base}/run {base}/run model.pt {MiB}")
    if bad:  # an older release saved model.pt as a directory of shards
        (base / "run" / "model.pt").mkdir()
        write(base / "run" / "model.pt" / "shard-00000.bin", "x")


def tmpfile_link_exists(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    _usual(base, f"tmpfile {base}/run step-300.pt 65536")
    if bad:  # resumed from step 200 on a host where step 300 had been saved
        write(base / "run" / "step-300.pt", "old")


def odirect_misaligned(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    # the optimizer state sits after a 100-byte header in the bad build's buffer
    _usual(base, f"direct {base}/run/optim.bin 65536 {100 if bad else 0}")


def copy_fallback_full(base: Path, bad: bool) -> None:
    _fs(base, size="2m" if bad else "16m")
    write(base / "src" / "model.pt", "w" * (3 * MiB))
    _usual(base, f"copy {base}/src/model.pt {base}/ckpt/model.pt")


def exdev_fallback_full(base: Path, bad: bool) -> None:
    _fs(base, size="2m" if bad else "16m")
    _usual(base, f"savefb {base}/scratch {base}/ckpt model.pt {3 * MiB}")


def reserve_full(base: Path, bad: bool) -> None:
    _fs(base, size="2m" if bad else "16m")
    _usual(base, f"reserve {base}/ckpt/optim.bin {4 * MiB}")


def parent_not_writable(base: Path, bad: bool) -> None:
    (base / "runs").mkdir()
    _usual(base, f"mkdir {base}/runs/job7/ckpt", f"save {base}/runs/job7/ckpt {base}/runs/job7/ckpt model.pt 65536")
    own(base / "logs")
    if not bad:  # the bad host's runs/ was created by root's provisioning, not the job's user
        own(base / "runs")


def name_too_long(base: Path, bad: bool) -> None:
    (base / "runs").mkdir()
    # the run directory is named from the config's tag: the bad config's tag is a whole sweep spec
    tag = "-".join(f"lr{i}e-4_wd{i}e-2_bs{256 * i}_warm{i * 100}" for i in range(1, 12)) if bad else "lr3e-4_bs1024"
    _usual(base, f"mkdir {base}/runs/{tag}/ckpt", f"save {base}/runs/{tag}/ckpt {base}/runs/{tag}/ckpt model.pt 65536")


def _latest(base: Path, target: str | None, loop: bool = False) -> None:
    run = base / "run"
    (run / "step-100").mkdir(parents=True)
    write(run / "step-100" / "model.pt", "m" * 65536)
    if loop:  # a rotation that swapped the names of `latest` and `latest.prev`
        os.symlink("latest.prev", run / "latest")
        os.symlink("latest", run / "latest.prev")
    else:
        os.symlink(target, run / "latest")
    _usual(base, f"resume {run}/latest/model.pt", f"save {run} {run} model.pt 65536")


def latest_loop(base: Path, bad: bool) -> None:
    _latest(base, "step-100", loop=bad)


def latest_dangling(base: Path, bad: bool) -> None:
    _latest(base, "step-200" if bad else "step-100")  # step 200 pruned by the retention job


def resume_root_only(base: Path, bad: bool) -> None:
    _latest(base, "step-100")
    own(base)
    if bad:  # restored from a backup by root
        p = base / "run" / "step-100" / "model.pt"
        os.chown(p, 0, 0)
        p.chmod(0o600)


# --- locks and pid files ------------------------------------------------------------------------
def _flock_holder(lock: Path) -> None:
    BACKGROUND.start(["/usr/bin/flock", str(lock), "/usr/bin/sleep", "60"])
    for _ in range(400):  # until it holds the lock
        if subprocess.run(["/usr/bin/flock", "-n", str(lock), "true"]).returncode:
            return
        subprocess.run(["sleep", "0.01"], check=True)
    raise AssertionError("the stale holder never took the lock")


def flock_stale(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    write(base / "run" / ".lock", "")
    _usual(base, f"flock {base}/run/.lock", f"save {base}/run {base}/run model.pt 65536")
    if bad:  # the previous job's checkpoint thread hangs on a dead NFS server, its lock held
        _flock_holder(base / "run" / ".lock")


def _lockf_holder(base: Path, seconds: str = "60") -> None:
    BACKGROUND.start([PY3, "-S", "-c", HOLD_LOCKF_PY, f"{base}/run/.lock", f"{base}/held", seconds])
    _wait_for(base / "held")


def setlk_stale(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    write(base / "run" / ".lock", "")
    _usual(base, f"setlk {base}/run/.lock", f"save {base}/run {base}/run model.pt 65536")
    if bad:
        _lockf_holder(base)


def lockf_gives_up(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    write(base / "run" / ".lock", "")
    _usual(base, f"lockf {base}/run/.lock 8", f"save {base}/run {base}/run model.pt 65536")
    if bad:
        _lockf_holder(base)


def pidfile_dead_process(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    _usual(base, f"pidfile {base}/run/train.pid", f"save {base}/run {base}/run model.pt 65536",
           f"unlink {base}/run/train.pid")
    if bad:  # the previous job was OOM-killed: no one removed its pid file
        write(base / "run" / "train.pid", "4190000\n")


def pidfile_alive(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    _usual(base, f"pidfile {base}/run/train.pid clear", f"save {base}/run {base}/run model.pt 65536",
           f"unlink {base}/run/train.pid")
    if bad:  # the previous job is still running (a second launch of the same job)
        holder = BACKGROUND.start(["/usr/bin/sleep", "60"])
        write(base / "run" / "train.pid", f"{holder.pid}\n")


# --- watchers and logs --------------------------------------------------------------------------
def _userns(limit: str):
    """Inside a new user namespace (root mapped to root), the limit from the config, then the job."""
    return lambda b: ["/usr/bin/unshare", "-U", "-r", "/bin/sh", "-c",
                      f"echo $(/usr/bin/cat {b}/limit) > /proc/sys/user/{limit} && exec {b}/bin/ckpt {b}/plan"]


def _spool(base: Path, n: int) -> None:
    for i in range(n):
        (base / "spool" / f"sub{i}").mkdir(parents=True)


def inotify_watches(base: Path, bad: bool) -> None:
    _spool(base, 6)
    write(base / "limit", "3\n" if bad else "64\n")
    _usual(base, f"watch {base}/spool 6")


def inotify_instances(base: Path, bad: bool) -> None:
    _spool(base, 2)
    write(base / "limit", "0\n" if bad else "8\n")
    _usual(base, f"watch {base}/spool 2")


NOFILE_SH = "exec /usr/bin/prlimit --nofile=$(/usr/bin/cat {b}/limit) {b}/bin/ckpt {b}/plan"


def eventfd_nofile(base: Path, bad: bool) -> None:
    write(base / "limit", "32\n" if bad else "1024\n")
    _usual(base, "events 40")


def follow_regular_file(base: Path, bad: bool) -> None:
    (base / "logs").mkdir()
    if bad:  # the sidecar that makes the FIFO did not run: the stream is a plain file
        write(base / "logs" / "metrics.stream", "")
    else:
        os.mkfifo(base / "logs" / "metrics.stream")
    _usual(base, f"follow {base}/logs/metrics.stream")


COPYTRUNCATE_SH = ("{b}/bin/ckpt {b}/plan && /usr/bin/cp {b}/logs/train.log {b}/logs/train.log.1 && "
                   ": > {b}/logs/train.log")


def copytruncate_append_only(base: Path, bad: bool) -> None:
    _usual(base)
    write(base / "logs" / "train.log", "step 0\n")
    if bad:  # an auditor made the log append-only
        subprocess.run(["/usr/bin/chattr", "+a", str(base / "logs" / "train.log")], check=True)


def _chattr_off(base: Path) -> None:
    log = base / "logs" / "train.log"
    if log.exists():
        subprocess.run(["/usr/bin/chattr", "-a", str(log)], check=False)


ROTATING_PY = ("import logging, logging.handlers, sys\n"
               "keep = int(sys.argv[3]) if len(sys.argv) > 3 else 3\n"
               "h = logging.handlers.RotatingFileHandler(sys.argv[1], maxBytes=2000, backupCount=keep)\n"
               "log = logging.getLogger('train')\n"
               "log.addHandler(h)\n"
               "log.setLevel(logging.INFO)\n"
               "for step in range(int(sys.argv[2])):\n"
               "    log.info('step %d loss %.4f', step, 1 / (step + 1))\n"
               "print('done')\n")


def rotating_dir_not_writable(base: Path, bad: bool) -> None:
    write(base / "rot.py", ROTATING_PY)
    (base / "logs").mkdir()
    write(base / "logs" / "train.log", "")
    own(base / "logs")
    if bad:  # the log directory came back root's from a restore; the log file is still nobody's
        os.chown(base / "logs", 0, 0)


# --- python savers ------------------------------------------------------------------------------
SAVER_PY = ("import os, sys, tempfile\n"
            "conf = dict(kv.split('=', 1) for kv in open(sys.argv[1]).read().split())\n"
            "os.makedirs(conf['dir'], exist_ok=True)\n"
            "for i in range(int(conf.get('shards', 2))):\n"
            "    fd, tmp = tempfile.mkstemp(dir=conf.get('tmp', conf['dir']), prefix='.shard-')\n"
            "    try:\n"
            "        with os.fdopen(fd, 'wb') as f:\n"
            "            f.write(os.urandom(int(conf.get('size', 65536))))\n"
            "            f.flush()\n"
            "            os.fsync(f.fileno())\n"
            "        os.replace(tmp, os.path.join(conf['dir'], f'shard-{i:05d}.pt'))\n"
            "    except OSError as e:\n"
            "        os.unlink(tmp)\n"
            "        sys.exit(f'save: shard {i}: {e}')\n"
            "print('saved', conf['dir'])\n")


def _saver(base: Path, conf: str) -> None:
    write(base / "saver.py", SAVER_PY)
    write(base / "saver.conf", conf + "\n")


def py_replace_exdev(base: Path, bad: bool) -> None:
    _fs(base)
    _saver(base, f"dir={base}/ckpt/run shards=3" + (f" tmp={base}/scratch" if bad else ""))


def py_shards_enospc(base: Path, bad: bool) -> None:
    _fs(base, size="2m" if bad else "16m")
    _saver(base, f"dir={base}/ckpt/run shards=4 size={MiB}")


def py_makedirs_readonly(base: Path, bad: bool) -> None:
    _fs(base, mode="ro" if bad else "rw")
    _saver(base, f"dir={base}/ckpt/run/step-100 shards=2")


# --- Debian programs ----------------------------------------------------------------------------
def tar_latest_loop(base: Path, bad: bool) -> None:
    (base / "out").mkdir()
    run = base / "run"
    (run / "step-100").mkdir(parents=True)
    write(run / "step-100" / "model.pt", "m" * 65536)
    if bad:
        os.symlink("latest.prev", run / "latest")
        os.symlink("latest", run / "latest.prev")
    else:
        os.symlink("step-100", run / "latest")


def cp_reflink_readonly(base: Path, bad: bool) -> None:
    _fs(base, mode="ro" if bad else "rw")
    write(base / "src" / "model.pt", "w" * MiB)


def sqlite_backup_full(base: Path, bad: bool) -> None:
    _fs(base, size="256k" if bad else "16m")
    db = base / "src" / "metrics.db"
    rows = ",".join(f"({i}, {random.random()!r}, '{'x' * 200}')" for i in range(4000))
    subprocess.run(["/usr/bin/sqlite3", str(db)], input=f"create table m(step, loss, note); insert into m values {rows};",
                   text=True, check=True)


def flock1_stale(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    write(base / "run" / ".lock", "")
    _usual(base, f"save {base}/run {base}/run model.pt 65536")
    if bad:
        _flock_holder(base / "run" / ".lock")


# --- a pipeline's reader killed -----------------------------------------------------------------
# The writer: a log shipper writing its records to the filter. The filter reads a header line,
# then records; a header that says 'v2' (a format it does not know) makes it dereference NULL.
SHIP_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    /* argv[1]: "early" -- the header, then the records at once: the pipe fills and a write
       blocks (PIPE_BUF-sized writes are atomic: none of it written); "late" -- the header, a
       pause, then the records */
    static char rec[4096];
    memset(rec, 'r', sizeof rec);
    FILE *h = fopen(argv[2], "r");
    char head[64] = {0};
    if (!h || !fgets(head, sizeof head, h)) return 2;
    if (write(1, head, strlen(head)) < 0) { perror("ship: write"); return 1; }
    if (!strcmp(argv[1], "late")) usleep(200000);
    for (int i = 0; i < 48; i++)
        if (write(1, rec, sizeof rec) < 0) { perror("ship: write"); return 1; }
    return 0;
}
"""
FILTER_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char head[64];
    if (!fgets(head, sizeof head, stdin)) return 2;
    const char *fmt = strstr(head, "v1") ? "v1" : NULL;
    usleep(100000);                       /* the filter loads its schema */
    if (access(argv[1], R_OK) < 0) return 3;
    if (fmt[0] != 'v') return 4;          /* NULL for a format it does not know */
    static char buf[65536];
    long n = 0;
    ssize_t r;
    while ((r = read(0, buf, sizeof buf)) > 0) n += r;
    printf("%ld\n", n);
    return 0;
}
"""
PIPE_SH = "{b}/ship $(/usr/bin/cat {b}/mode) {b}/header | {b}/filter {b}/schema.json | /usr/bin/wc -c"


def _pipe(mode: str):
    def setup(base: Path, bad: bool) -> None:
        _cc(base, "ship", SHIP_C)
        _cc(base, "filter", FILTER_C)
        write(base / "mode", mode + "\n")
        write(base / "schema.json", "{}\n")
        write(base / "header", "format v2\n" if bad else "format v1\n")  # a newer shipper's records
    return setup


REAL_TENTH: list[Scenario] = [
    # atomic checkpoint saves
    Scenario("ckpt_rename_exdev_scratch", "unshare -m: two tmpfs; C ckpt saves model.pt via a temp in TMPDIR",
             _mounted("{b}/bin/ckpt {b}/plan"), rename_exdev, PROBES_RENAME, "EXDEV",
             lambda b: f"{b}/scratch/.model.pt.tmp.*",
             description="the temp is on node-local scratch, the checkpoint on another tmpfs: rename EXDEV, "
             "no fallback"),
    Scenario("ckpt_readonly_bind_remount", "unshare -m: checkpoint tmpfs remounted $(cat fs.mode); C ckpt saves",
             _mounted("{b}/bin/ckpt {b}/plan"), readonly_bind, PROBES_OPEN, "EROFS",
             lambda b: f"{b}/ckpt/.model.pt.tmp.*", description="the volume is read-only: the temp's open EROFS"),
    Scenario("ckpt_shard_enospc_mid_save", "unshare -m: tmpfs size=$(cat fs.size); C ckpt saves 4 shards of 1 MiB",
             _mounted("{b}/bin/ckpt {b}/plan"), shard_enospc, PROBES_WRITE, "ENOSPC",
             lambda b: f"{b}/ckpt/run/.shard-*.tmp.*", description="a 2 MiB tmpfs: the second shard's write ENOSPC"),
    Scenario("ckpt_tmpfs_out_of_inodes", "unshare -m: tmpfs nr_inodes=$(cat fs.inodes); C ckpt saves a step dir",
             _mounted("{b}/bin/ckpt {b}/plan"), out_of_inodes, PROBES_OPEN | {"mkdir", "mkdirat"}, "ENOSPC",
             lambda b: f"{b}/ckpt/run/.tmp-step-100.*", description="6 inodes: a shard's open fails ENOSPC"),
    Scenario("ckpt_step_dir_not_empty", "C ckpt renames a step directory into place", _ckpt, step_dir_not_empty,
             PROBES_RENAME, "ENOTEMPTY", lambda b: f"{b}/run/*step-200*",
             description="step-200 is there from a save before a restart: rename ENOTEMPTY"),
    Scenario("ckpt_name_is_directory", "C ckpt saves model.pt (temp, fsync, rename)", _ckpt, name_is_directory,
             PROBES_RENAME, "EISDIR", lambda b: f"{b}/run/*model.pt*",
             description="model.pt is a directory an older release made: rename EISDIR"),
    Scenario("ckpt_tmpfile_link_exists", "C ckpt: O_TMPFILE, write, linkat to step-300.pt", _ckpt,
             tmpfile_link_exists, frozenset({"linkat", "link"}), "EEXIST", lambda b: "*step-300.pt",
             description="step 300 was saved before: linkat EEXIST"),
    Scenario("ckpt_odirect_misaligned_buffer", "C ckpt writes optimizer state with O_DIRECT", _ckpt,
             odirect_misaligned, PROBES_WRITE, "EINVAL", lambda b: f"{b}/run/optim.bin",
             description="the buffer starts 100 bytes past alignment: the O_DIRECT write EINVAL (ext4)"),
    Scenario("ckpt_copy_fallbacks_then_full", "unshare -m: C ckpt copies model.pt: FICLONE, copy_file_range, "
             "read/write", _mounted("{b}/bin/ckpt {b}/plan"), copy_fallback_full, PROBES_WRITE, "ENOSPC",
             lambda b: f"{b}/ckpt/model.pt",
             description="clone and copy_file_range fall back (EXDEV) as in every run; the copy fills the 2 MiB "
             "tmpfs: write ENOSPC"),
    Scenario("ckpt_exdev_fallback_then_full", "unshare -m: C ckpt saves via scratch, copies on EXDEV",
             _mounted("{b}/bin/ckpt {b}/plan"), exdev_fallback_full, PROBES_WRITE, "ENOSPC",
             lambda b: f"{b}/ckpt/.model.pt.copy.*",
             description="rename EXDEV in every run (the fallback); the copy fills the tmpfs: write ENOSPC"),
    Scenario("ckpt_fallocate_full", "unshare -m: C ckpt reserves 4 MiB with fallocate",
             _mounted("{b}/bin/ckpt {b}/plan"), reserve_full, frozenset({"fallocate"}), "ENOSPC",
             lambda b: f"{b}/ckpt/optim.bin", description="a 2 MiB tmpfs: fallocate ENOSPC"),
    Scenario("ckpt_parent_not_writable", "C ckpt mkdir -p runs/job7/ckpt (nobody)", _ckpt, parent_not_writable,
             frozenset({"mkdir", "mkdirat"}), "EACCES", lambda b: f"{b}/runs/job7",
             unprivileged=True, description="runs/ is root's 0755: mkdir EACCES"),
    Scenario("ckpt_run_dir_name_too_long", "C ckpt mkdir -p runs/<tag from the config>", _ckpt, name_too_long,
             frozenset({"mkdir", "mkdirat"}), "ENAMETOOLONG", lambda b: f"{b}/runs/*",
             description="the tag is a whole sweep spec, over 255 bytes: mkdir ENAMETOOLONG"),
    Scenario("ckpt_latest_symlink_loop", "C ckpt resumes from run/latest/model.pt", _ckpt, latest_loop,
             PROBES_OPEN, "ELOOP", lambda b: f"{b}/run/latest/model.pt",
             description="latest -> latest.prev -> latest: open ELOOP"),
    Scenario("ckpt_latest_dangling", "C ckpt resumes from run/latest/model.pt", _ckpt, latest_dangling,
             PROBES_OPEN, "ENOENT", lambda b: f"{b}/run/latest/model.pt",
             description="latest points at a step the retention job pruned: open ENOENT"),
    Scenario("ckpt_resume_root_only", "C ckpt resumes from run/latest/model.pt (nobody)", _ckpt, resume_root_only,
             PROBES_OPEN, "EACCES", lambda b: f"{b}/run/latest/model.pt", unprivileged=True,
             description="the checkpoint was restored by root, 0600: open EACCES"),
    # locks and pid files
    Scenario("ckpt_flock_stale_holder", "C ckpt takes flock(LOCK_EX|LOCK_NB) on run/.lock", _ckpt, flock_stale,
             frozenset({"flock"}), "EAGAIN", lambda b: f"{b}/run/.lock", teardown=BACKGROUND.stop,
             description="a hung previous job holds the lock: flock EWOULDBLOCK"),
    Scenario("ckpt_fcntl_lock_stale_holder", "C ckpt takes fcntl(F_SETLK) on run/.lock", _ckpt, setlk_stale,
             frozenset({"fcntl"}), "EAGAIN", lambda b: f"{b}/run/.lock", teardown=BACKGROUND.stop,
             description="a hung previous job holds a POSIX lock: F_SETLK EAGAIN"),
    Scenario("ckpt_lockf_retries_give_up", "C ckpt retries lockf(F_TLOCK) 8 times, 20 ms apart", _ckpt,
             lockf_gives_up, frozenset({"fcntl"}), "EAGAIN", lambda b: f"{b}/run/.lock", teardown=BACKGROUND.stop,
             description="the lock is never let go: EAGAIN 8 times, then 'still held'"),
    Scenario("ckpt_pidfile_of_dead_process", "C ckpt creates run/train.pid with O_EXCL", _ckpt,
             pidfile_dead_process, PROBES_OPEN, "EEXIST", lambda b: f"{b}/run/train.pid",
             description="the OOM-killed previous job left its pid file: open O_EXCL EEXIST"),
    Scenario("ckpt_pidfile_process_alive", "C ckpt creates run/train.pid, clearing one of a dead pid", _ckpt,
             pidfile_alive, PROBES_OPEN, "EEXIST", lambda b: f"{b}/run/train.pid", teardown=BACKGROUND.stop,
             description="the pid in the file is alive (kill 0 succeeds): EEXIST stands"),
    # watchers and logs
    Scenario("ckpt_inotify_watch_limit", "unshare -U: max_inotify_watches from a file; C ckpt watches 6 dirs",
             _userns("max_inotify_watches"), inotify_watches, frozenset({"inotify_add_watch"}), "ENOSPC",
             lambda b: f"{b}/spool/sub3", description="3 watches allowed: the fourth add_watch ENOSPC"),
    Scenario("ckpt_inotify_instance_limit", "unshare -U: max_inotify_instances from a file; C ckpt watches",
             _userns("max_inotify_instances"), inotify_instances, frozenset({"inotify_init1", "inotify_init"}),
             "EMFILE", lambda b: NO_PATH, description="no instance allowed: inotify_init1 EMFILE"),
    Scenario("ckpt_eventfds_over_nofile", "prlimit --nofile=$(cat limit) C ckpt: 40 eventfds in an epoll set",
             lambda b: _sh(b, NOFILE_SH), eventfd_nofile, frozenset({"eventfd2", "eventfd"}), "EMFILE",
             lambda b: NO_PATH, description="RLIMIT_NOFILE 32: an eventfd fails EMFILE"),
    Scenario("ckpt_epoll_on_regular_file", "C ckpt follows logs/metrics.stream with epoll", _ckpt,
             follow_regular_file, frozenset({"epoll_ctl"}), "EPERM", lambda b: NO_PATH,
             description="the stream is a plain file, not the sidecar's FIFO: epoll_ctl EPERM"),
    Scenario("copytruncate_append_only_log", "sh: C ckpt logs; cp log log.1 && : > log", lambda b: _sh(b, COPYTRUNCATE_SH),
             copytruncate_append_only, PROBES_OPEN, "EPERM", lambda b: f"{b}/logs/train.log", teardown=_chattr_off,
             description="the log is append-only (chattr +a): the truncating open EPERM"),
    Scenario("rotating_handler_dir_not_writable", "python3 RotatingFileHandler, 2000-byte logs (nobody)",
             lambda b: [PY3, "-S", f"{b}/rot.py", f"{b}/logs/train.log", "200"], rotating_dir_not_writable,
             PROBES_RENAME, "EACCES", lambda b: f"{b}/logs/train.log*", unprivileged=True,
             description="the log directory is root's: each rollover's rename(train.log, train.log.1) EACCES, "
             "logging goes on"),
    # python savers
    Scenario("py_ckpt_replace_exdev", "unshare -m: python3 saver, tempfile.mkstemp + os.replace",
             _mounted(PY3 + " -S {b}/saver.py {b}/saver.conf"), py_replace_exdev, PROBES_RENAME, "EXDEV",
             lambda b: f"{b}/scratch/.shard-*", description="tmp= on scratch: os.replace EXDEV"),
    Scenario("py_ckpt_shards_enospc", "unshare -m: python3 saver, 4 shards of 1 MiB",
             _mounted(PY3 + " -S {b}/saver.py {b}/saver.conf"), py_shards_enospc, PROBES_WRITE, "ENOSPC",
             lambda b: f"{b}/ckpt/run/.shard-*", description="a 2 MiB tmpfs: a shard's write ENOSPC"),
    Scenario("py_ckpt_makedirs_readonly", "unshare -m: python3 saver, os.makedirs(ckpt/run/step-100)",
             _mounted(PY3 + " -S {b}/saver.py {b}/saver.conf"), py_makedirs_readonly,
             frozenset({"mkdir", "mkdirat"}), "EROFS", lambda b: f"{b}/ckpt/run*",
             description="the volume is read-only: mkdir EROFS"),
    # Debian programs
    Scenario("tar_h_latest_loop", "tar -chf out/ckpt.tar -C run latest", lambda b: ["/usr/bin/tar", "-chf",
             f"{b}/out/ckpt.tar", "-C", f"{b}/run", "latest"], tar_latest_loop, PROBES_STAT | PROBES_OPEN, "ELOOP",
             lambda b: "*latest", description="tar -h follows latest into a loop: ELOOP"),
    Scenario("cp_reflink_auto_readonly", "unshare -m: cp --reflink=auto src/model.pt ckpt/",
             _mounted("/usr/bin/cp --reflink=auto {b}/src/model.pt {b}/ckpt/model.pt"), cp_reflink_readonly,
             PROBES_OPEN, "EROFS", lambda b: f"{b}/ckpt/model.pt", description="read-only volume: open EROFS"),
    Scenario("sqlite_backup_full", "unshare -m: sqlite3 metrics.db '.backup ckpt/metrics.db'",
             _mounted("/usr/bin/sqlite3 {b}/src/metrics.db \".backup {b}/ckpt/metrics.db\""), sqlite_backup_full,
             PROBES_WRITE, "ENOSPC", lambda b: f"{b}/ckpt/metrics.db*",
             description="a 256 KiB tmpfs: the backup's write ENOSPC"),
    Scenario("flock1_n_stale_holder", "flock -n run/.lock C ckpt", lambda b: ["/usr/bin/flock", "-n",
             f"{b}/run/.lock", f"{b}/bin/ckpt", f"{b}/plan"], flock1_stale, frozenset({"flock"}), "EAGAIN",
             lambda b: f"{b}/run/.lock", teardown=BACKGROUND.stop,
             description="a hung previous job holds the lock: flock(1) -n gives up (flock EWOULDBLOCK), exit 1"),
    # a pipeline's reader killed
    Scenario("log_filter_crash_writer_blocked", "sh: C ship early | C filter | wc -c", lambda b: _sh(b, PIPE_SH),
             _pipe("early"), END, None, lambda b: NO_PATH, extra={"epipe": "before"},
             description="the filter dies of SIGSEGV on a v2 header while the shipper's write is blocked on the "
             "full pipe: the write (entered before the crash) returns EPIPE after it"),
    Scenario("log_filter_crash_writer_late", "sh: C ship late | C filter | wc -c", lambda b: _sh(b, PIPE_SH),
             _pipe("late"), END, None, lambda b: NO_PATH, extra={"epipe": "after"},
             description="the filter dies of SIGSEGV on a v2 header; the shipper writes its records after: EPIPE"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of fault
# of a case the tests run (tests/test_real_programs_tenth.py keeps to about a minute).
BENCH_ONLY = frozenset({"ckpt_readonly_bind_remount", "ckpt_name_is_directory", "ckpt_fallocate_full",
                        "ckpt_latest_dangling", "ckpt_resume_root_only", "ckpt_fcntl_lock_stale_holder",
                        "ckpt_pidfile_process_alive", "ckpt_inotify_instance_limit", "py_ckpt_shards_enospc",
                        "py_ckpt_makedirs_readonly", "cp_reflink_auto_readonly", "flock1_n_stale_holder",
                        "ckpt_exdev_fallback_then_full", "sqlite_backup_full", "ckpt_tmpfs_out_of_inodes",
                        "ckpt_eventfds_over_nofile", "rotating_handler_dir_not_writable", "py_ckpt_replace_exdev",
                        "ckpt_copy_fallbacks_then_full", "tar_h_latest_loop", "ckpt_run_dir_name_too_long"})


# --- good vs good: run-to-run noise -------------------------------------------------------------
def _steps_quiet(base: Path, run: int) -> None:
    _fs(base)
    # steps of four digits in the first two runs, three in the last: the good runs' names make a
    # template (the step and the pid vary), the last run's name has another shape
    step = random.randint(10, 99) * 100 if run < 2 else random.randint(1, 9) * 100
    _usual(base, f"mkdir {base}/ckpt/run", f"savedir {base}/ckpt/run step-{step} {random.randint(2, 6)}",
           f"save {base}/ckpt/run {base}/ckpt/run model-step{step}.pt {random.choice((1, 2)) * 65536}")


def _exdev_quiet(base: Path, run: int) -> None:
    _fs(base)
    _usual(base, f"savefb {base}/scratch {base}/ckpt model.pt {random.randint(1, 4) * MiB}")


def _copy_quiet(base: Path, run: int) -> None:
    _fs(base)
    write(base / "src" / "model.pt", "w" * (random.randint(1, 3) * MiB))
    _usual(base, f"copy {base}/src/model.pt {base}/ckpt/model.pt", f"reserve {base}/ckpt/optim.bin {MiB}")


def _tmpfile_quiet(base: Path, run: int) -> None:
    (base / "run").mkdir()
    steps = sorted(random.sample(range(100, 2000, 100), random.randint(1, 4)))
    _usual(base, *(f"tmpfile {base}/run step-{s}.pt 65536" for s in steps))


def _lock_quiet(base: Path, run: int) -> None:
    BACKGROUND.stop()
    (base / "run").mkdir()
    write(base / "run" / ".lock", "")
    _usual(base, f"lockf {base}/run/.lock 100", f"save {base}/run {base}/run model.pt 65536")
    # the previous step's saver lets go 0-150 ms in: F_TLOCK is refused 0-8 times
    _lockf_holder(base, f"{random.uniform(0, 0.15):.3f}")


def _pidfile_quiet(base: Path, run: int) -> None:
    (base / "run").mkdir()
    _usual(base, f"pidfile {base}/run/train.pid clear", f"save {base}/run {base}/run model.pt 65536",
           f"unlink {base}/run/train.pid")
    if run % 2 == 0:  # a previous job killed without its cleanup: the pid is dead, the file is cleared
        write(base / "run" / "train.pid", f"{4190000 + random.randint(0, 999)}\n")


def _prune_quiet(base: Path, run: int) -> None:
    (base / "run").mkdir()
    # 4-9 checkpoints, 3 kept: every run prunes some (two good runs that both had 3 and pruned
    # none say nothing of a third run's unlink: a 1-in-49 good-vs-good "unlink" in a CI run)
    steps = random.sample(range(100, 5000, 100), random.randint(4, 9))
    for s in steps:  # created in random order: the directory's order differs run to run
        write(base / "run" / f"step-{s}.pt", "m")
    _usual(base, f"save {base}/run {base}/run model.pt 65536", f"prune {base}/run 3")


def _listing_quiet(base: Path, run: int) -> None:
    (base / "shards").mkdir()
    for _ in range(random.randint(4, 12)):
        write(base / "shards" / f"shard-{random.getrandbits(32):08x}.bin", "s")
    _usual(base, f"list {base}/shards")


def _rotation_quiet(base: Path, run: int) -> None:
    write(base / "rot.py", ROTATING_PY)
    (base / "logs").mkdir()
    # 200-560 lines of ~21 bytes: 2-5 rollovers of 2,000 bytes in every run, 10 backups kept (a
    # run that never rotates, or that deletes its oldest backup, beside good runs that never did
    # is no noise: they say nothing of it)
    write(base / "lines", f"{random.randint(200, 560)}\n")


def _saver_quiet(base: Path, run: int) -> None:
    _fs(base)
    _saver(base, f"dir={base}/ckpt/step-{random.randint(1, 99) * 100} shards={random.randint(1, 4)}")


def _watch_quiet(base: Path, run: int) -> None:
    n = random.randint(2, 8)
    _spool(base, n)
    write(base / "limit", "64\n")
    _usual(base, f"watch {base}/spool {n}")


def _mkdir_quiet(base: Path, run: int) -> None:
    (base / "runs").mkdir()
    if run != 1:  # an earlier attempt of the job made part of the tree
        (base / "runs" / "job7" / "ckpt").mkdir(parents=True)
    _usual(base, f"mkdir {base}/runs/job7/ckpt/step-100", f"save {base}/runs/job7/ckpt/step-100 "
           f"{base}/runs/job7/ckpt/step-100 model.pt 65536")


def _pipe_quiet(base: Path, run: int) -> None:
    _pipe("early")(base, False)


QUIET_TENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("ckpt_steps_and_shards_vary", _mounted("{b}/bin/ckpt {b}/plan"), _steps_quiet,
                  description="step numbers 100-9900, 2-6 shards, checkpoint sizes vary"),
    NoAnomalyCase("ckpt_exdev_fallback_every_run", _mounted("{b}/bin/ckpt {b}/plan"), _exdev_quiet,
                  description="rename EXDEV from scratch and the copy fallback in every run, 1-4 MiB"),
    NoAnomalyCase("ckpt_copy_fallbacks_every_run", _mounted("{b}/bin/ckpt {b}/plan"), _copy_quiet,
                  description="FICLONE and copy_file_range refused (EXDEV) in every run, then read/write"),
    NoAnomalyCase("ckpt_tmpfile_steps_vary", _ckpt, _tmpfile_quiet,
                  description="1-4 O_TMPFILE saves linked to varying step names"),
    NoAnomalyCase("ckpt_lock_retries_vary", _ckpt, _lock_quiet,
                  description="the previous saver lets go 0-150 ms in: F_TLOCK refused 0-8 times"),
    NoAnomalyCase("ckpt_stale_pidfile_cleared_sometimes", _ckpt, _pidfile_quiet,
                  description="a dead job's pid file is there in some runs: EEXIST, kill ESRCH, unlink, create"),
    NoAnomalyCase("ckpt_prune_count_varies", _ckpt, _prune_quiet,
                  description="3-9 old checkpoints in random order, all but 3 pruned"),
    NoAnomalyCase("ckpt_listing_order_varies", _ckpt, _listing_quiet,
                  description="4-12 shards with random names: readdir order and count vary"),
    NoAnomalyCase("log_rotations_vary", lambda b: _sh(b, "exec {py} -S {b}/rot.py {b}/logs/train.log "
                                                        "$(/usr/bin/cat {b}/lines) 10"), _rotation_quiet,
                  description="RotatingFileHandler rolls over 2-5 times (renames log.N, backups found or not)"),
    NoAnomalyCase("py_saver_temp_names_vary", _mounted(PY3 + " -S {b}/saver.py {b}/saver.conf"), _saver_quiet,
                  description="tempfile.mkstemp's random names, 1-4 shards, step directories vary"),
    NoAnomalyCase("ckpt_watch_count_varies", _userns("max_inotify_watches"), _watch_quiet,
                  description="2-8 inotify watches under a limit of 64"),
    NoAnomalyCase("ckpt_mkdir_p_partly_there", _ckpt, _mkdir_quiet,
                  description="mkdir -p finds part of the tree in some runs (EEXIST) and makes it in others"),
    NoAnomalyCase("log_pipeline_timing_varies", lambda b: _sh(b, PIPE_SH), _pipe_quiet,
                  description="the shipper fills the pipe while the filter loads its schema: which writes block, "
                  "and for how long, varies; the filter reads them all"),
]

QUIET_BENCH_ONLY = frozenset({"ckpt_tmpfile_steps_vary", "ckpt_listing_order_varies", "py_saver_temp_names_vary",
                              "ckpt_watch_count_varies", "ckpt_copy_fallbacks_every_run"})


def quiet_teardown() -> None:
    """Stop what the cases started."""
    BACKGROUND.stop()
