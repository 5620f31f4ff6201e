"""Blind robustness battery, round fifty-five: `tracer record` on unusual ways to run a program.

Every case runs a real program under a real BPF recording (root + bcc; skipped with the printed
reason otherwise), writes real Parquet, and checks it against what `strace -f` shows the program
does (run by hand while writing the expectations; the strace lines are quoted by each case):
posix_spawn (clone3 CLONE_VM|CLONE_VFORK, with and without a file action opening its stdout)
and dash's `sh -c` (vfork, a redirect, a command gone from PATH), fork from a non-main thread,
execve from a non-main thread (de_thread: "pid changed to P", the exec'd program runs as the thread-group leader's
tid), a comm changed by prctl(PR_SET_NAME) (per thread; one with control characters) and by
/proc/self/comm mid-run, a set-uid-root
binary run by an unprivileged user (setpriv), a static binary (no dynamic loader), a program
under `strace -f` and under `gdb -batch` (ptrace inside the recording), a seccomp filter
returning an errno (in the process and as a forked child's first call), SIGSTOP/SIGCONT, a
double-forked setsid daemon against --linger, io_uring file access (no openat/read syscalls),
clone3(CLONE_PIDFD) with pidfd_open/pidfd_send_signal/waitid(P_PIDFD), a ~1 MiB argv and a
non-UTF-8 argv, deaths by SIGSEGV, SIGABRT and SIGKILL with core dumps disabled, and 200 threads
exiting at once (each by exit, or all by the main thread's exit_group).

Promises used (README.md, docs/architecture.md, docs/diff-json.md, `tracer record --help`):
* "record every syscall of CMD and its descendants (fork, clone, threads, exec ... followed in
  the kernel)"; "Lost events (ring buffer full) are counted in the trace's lost_events column";
  the file is a tracebase events table (`tracer.schema.validate_file`).
* "The exit status is the command's (128+N when killed by signal N)".
* "--linger ...: after the command exits, keep recording its descendants still alive for at
  most this long ... stops as soon as the last one exits. Threads still running when recording
  stops ... are cut off, not ended: the trace's metadata lists them (cut_off_tids) and
  `baseline diff` does not call their end an anomaly."
* architecture: "comm is refreshed after execve/execveat/prctl and, where the kernel has the
  task:task_rename tracepoint, when a thread renames itself through /proc/self/comm";
  "A call seccomp refused is kept from its exit ... A thread with no slot yet takes one at a
  failed exit (a forked child whose first call the filter refuses)"; "getuid/geteuid/getgid/
  getegid carry arg `root` or `not root`"; "a name that is not UTF-8 (a path, an argument, the
  working directory) is stored as its `\\xNN` escape"; README: "File names that are not UTF-8
  are shown with the odd bytes as `\\xNN`".
* diff-json.md: a good run against another good run is quiet (exit 0); a bad run with one
  injected fault names it (probe, errno, path, process); "When BAD's command exits with a
  status no good run had ... the report's warnings say both statuses".

Each program takes its mode from B55_MODE in the environment, so good and bad runs have the
same command line. Faults are strict xfails whose reason says what was run, expected and got.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

BIN = Path(sys.executable).parent
TRACER = str(BIN / "tracer")
BASELINE = str(BIN / "baseline")
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
TIMEOUT = 120
FORKS = ("clone", "clone3", "fork", "vfork")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (tracer record)")

SPAWN = r"""
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
#ifndef TOOL
#define TOOL "/bin/cat"
#endif
int main(int argc, char **argv) {
    pid_t pid; int st;
    char *args[] = {"cat", argv[1], NULL};
    if (posix_spawn(&pid, TOOL, NULL, NULL, args, environ) != 0) return 126;
    if (waitpid(pid, &st, 0) < 0) return 125;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
"""
THREADEXEC = r"""
#include <pthread.h>
#include <unistd.h>
static char *file;
static void *run(void *a) {
    (void)a;
    char *args[] = {"cat", file, NULL};
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    execve("/bin/cat", args, env);
    _exit(127);
}
int main(int argc, char **argv) {
    pthread_t t; file = argv[1];
    pthread_create(&t, NULL, run, NULL);
    for (;;) pause();
}
"""
RENAME = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
static int touch(const char *p) { int fd = open(p, O_RDONLY); if (fd < 0) return 1; close(fd); return 0; }
int main(int argc, char **argv) {
    int bad = 0;
    bad |= touch(argv[1]);
    const char *name = getenv("B55_NAME");
    prctl(PR_SET_NAME, name ? name : "b55-renamed", 0, 0, 0);
    bad |= touch(argv[2]);
    int fd = open("/proc/self/comm", O_WRONLY);
    if (fd >= 0) { write(fd, "b55-procname", 12); close(fd); }
    bad |= touch(argv[3]);
    return bad;
}
"""
SUID = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[256];
    printf("uid %d euid %d\n", (int)getuid(), (int)geteuid());
    fflush(stdout);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) write(1, buf, n);
    close(fd);
    return 0;
}
"""
STATIC = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[256];
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) write(1, buf, n);
    close(fd);
    return 0;
}
"""
SECCOMP = r"""
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    const char *mode = getenv("B55_MODE");
    int bad = mode && strcmp(mode, "bad") == 0;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_chroot, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdir, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, bad ? (SECCOMP_RET_ERRNO | EROFS) : SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("seccomp"); return 3;
    }
    if (chroot("/") == 0) { fputs("chroot allowed?\n", stderr); return 4; }
    long child = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (child == 0) {
        syscall(SYS_chroot, "/");  /* the child's first call: refused by the filter */
        syscall(SYS_exit_group, 0);
    }
    int st; waitpid((pid_t)child, &st, 0);
    if (mkdir(argv[1], 0755) != 0) { perror(argv[1]); return 1; }
    rmdir(argv[1]);
    return 0;
}
"""
DAEMON = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void touch(const char *p) { int fd = open(p, O_RDONLY); if (fd >= 0) close(fd); }
int main(int argc, char **argv) {
    int delay_ms = atoi(argv[3]);
    int p[2]; pipe(p);
    pid_t mid = fork();
    if (mid == 0) {
        setsid();
        if (fork() == 0) {
            close(p[0]);
            touch(argv[1]);
            write(p[1], "r", 1); close(p[1]);
            usleep(delay_ms * 1000);
            int fd = open(argv[2], O_RDONLY);
            if (fd < 0) _exit(1);
            close(fd);
            _exit(0);
        }
        _exit(0);
    }
    close(p[1]);
    int st; waitpid(mid, &st, 0);
    char c; read(p[0], &c, 1);
    return 0;
}
"""
CRASH = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    const char *mode = getenv("B55_MODE");
    int fd = open(argv[1], O_RDONLY);
    if (fd >= 0) close(fd);
    fputs("b55crash: working\n", stderr);
    if (mode && strcmp(mode, "segv") == 0) { *(volatile int *)0 = 1; }
    if (mode && strcmp(mode, "kill") == 0) { raise(SIGKILL); }
    if (mode && strcmp(mode, "abort") == 0) { fputs("b55crash: invariant broken\n", stderr); abort(); }
    fputs("b55crash: done\n", stderr);
    return 0;
}
"""
THREADS = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define N 200
static pthread_barrier_t bar;
static char *dir;
static int odd = -1, blocked = 0;
static void *work(void *a) {
    long i = (long)a; char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, i == odd ? "missing" : "present");
    int fd = open(p, O_RDONLY);
    if (fd >= 0) close(fd);
    pthread_barrier_wait(&bar);
    while (blocked) pause();
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t t[N]; dir = argv[1];
    const char *mode = getenv("B55_MODE");
    if (mode && strcmp(mode, "bad") == 0) odd = 137;
    if (argc > 2) {  /* the threads block; the main thread's exit_group ends them all at once */
        blocked = 1;
        pthread_barrier_init(&bar, NULL, N + 1);
        for (long i = 0; i < N; i++) if (pthread_create(&t[i], NULL, work, (void *)i)) return 2;
        pthread_barrier_wait(&bar);
        exit(0);
    }
    pthread_barrier_init(&bar, NULL, N);
    for (long i = 0; i < N; i++) if (pthread_create(&t[i], NULL, work, (void *)i)) return 2;
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    return 0;
}
"""
CLONE3 = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int pidfd = -1, p[2];
    pipe(p);
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_PIDFD;
    ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
    ca.exit_signal = SIGCHLD;
    long child = syscall(SYS_clone3, &ca, sizeof ca);
    if (child < 0) { perror("clone3"); return 3; }
    if (child == 0) {
        int fd = open(argv[1], O_RDONLY);
        syscall(SYS_write, p[1], fd >= 0 ? "o" : "e", 1);
        for (;;) syscall(SYS_pause);
    }
    char c = 0; read(p[0], &c, 1);
    int pfd2 = (int)syscall(SYS_pidfd_open, (pid_t)child, 0);
    if (pfd2 < 0) { perror("pidfd_open"); return 3; }
    if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) != 0) { perror("pidfd_send_signal"); return 3; }
    siginfo_t si; memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, pfd2, &si, WEXITED) != 0) { perror("waitid"); return 3; }
    if (c != 'o') { fprintf(stderr, "child could not open %s\n", argv[1]); return 1; }
    return 0;
}
"""
URING = r"""
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
static int ring_fd; static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes; static struct io_uring_cqe *cqes;
static int submit_wait(struct io_uring_sqe *e) {
    unsigned t = *sq_tail, i = t & *sq_mask;
    sqes[i] = *e; sq_array[i] = i;
    __atomic_store_n(sq_tail, t + 1, __ATOMIC_RELEASE);
    if (syscall(SYS_io_uring_enter, ring_fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) { perror("io_uring_enter"); exit(3); }
    unsigned h = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
    int res = cqes[h & *cq_mask].res;
    __atomic_store_n(cq_head, h + 1, __ATOMIC_RELEASE);
    return res;
}
int main(int argc, char **argv) {
    struct io_uring_params p; memset(&p, 0, sizeof p);
    ring_fd = (int)syscall(SYS_io_uring_setup, 4, &p);
    if (ring_fd < 0) { perror("io_uring_setup"); return 77; }
    size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_CQ_RING);
    sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { perror("mmap"); return 3; }
    sq_tail = (unsigned *)(sq + p.sq_off.tail); sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    sq_array = (unsigned *)(sq + p.sq_off.array);
    cq_head = (unsigned *)(cq + p.cq_off.head); cq_tail = (unsigned *)(cq + p.cq_off.tail);
    cq_mask = (unsigned *)(cq + p.cq_off.ring_mask); cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    struct io_uring_sqe e; memset(&e, 0, sizeof e);
    e.opcode = IORING_OP_OPENAT; e.fd = AT_FDCWD; e.addr = (unsigned long)argv[1]; e.open_flags = O_RDONLY;
    int fd = submit_wait(&e);
    if (fd < 0) { fprintf(stderr, "b55uring: cannot open %s: %s\n", argv[1], strerror(-fd)); return 1; }
    static char buf[4096];
    memset(&e, 0, sizeof e);
    e.opcode = IORING_OP_READ; e.fd = fd; e.addr = (unsigned long)buf; e.len = sizeof buf; e.off = 0;
    int n = submit_wait(&e);
    if (n < 0) { fprintf(stderr, "b55uring: read: %s\n", strerror(-n)); return 1; }
    write(1, buf, n);
    return 0;
}
"""
SPAWNFA = r"""
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    pid_t pid; int st;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char *args[] = {"cat", argv[1], NULL};
    int rc = posix_spawn(&pid, "/bin/cat", &fa, NULL, args, environ);
    if (rc != 0) return 126;
    if (waitpid(pid, &st, 0) < 0) return 125;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
"""
THRNAME = r"""
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>
static char **av;
static void *work(void *a) {
    (void)a;
    prctl(PR_SET_NAME, "b55-worker", 0, 0, 0);
    int fd = open(av[1], O_RDONLY); if (fd >= 0) close(fd);
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t t; av = argv;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    int fd = open(argv[2], O_RDONLY); if (fd >= 0) close(fd);
    return 0;
}
"""
THRFORK = r"""
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
static char *file;
static void *work(void *a) {
    (void)a;
    pid_t c = fork();
    if (c == 0) { int fd = open(file, O_RDONLY); _exit(fd >= 0 ? 0 : 1); }
    int st; waitpid(c, &st, 0);
    return (void *)(long)WEXITSTATUS(st);
}
int main(int argc, char **argv) {
    pthread_t t; void *r; file = argv[1];
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, &r);
    return (int)(long)r;
}
"""
PROGS = {"b55thrfork": THRFORK, "b55spawnfa": SPAWNFA, "b55thrname": THRNAME, "b55spawn": SPAWN, "b55thrx": THREADEXEC, "b55ren": RENAME, "b55suid": SUID, "b55seccomp": SECCOMP,
         "b55daemon": DAEMON, "b55crash": CRASH, "b55thr200": THREADS, "b55clone3": CLONE3, "b55uring": URING}


# --------------------------------------------------------------------------- helpers


def _skip(reason: str):
    print(f"SKIP: {reason}", file=sys.stderr)
    pytest.skip(reason)


def _gcc(src: str, out: Path, *flags: str) -> None:
    c = out.with_name(out.name + ".c")
    c.write_text(src)
    p = subprocess.run(["gcc", "-O1", "-Wall", "-Werror=implicit-function-declaration", "-Werror=int-conversion", "-o", str(out), str(c), "-pthread", *flags],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, (out.name, p.stderr[-2000:])


@pytest.fixture(scope="module")
def progs(need_bpf):  # noqa: ARG001
    """The C programs, built once into a directory an unprivileged user may traverse (the
    set-uid case runs one as nobody)."""
    if shutil.which("gcc") is None:
        _skip("no gcc to build the test programs")
    d = Path(tempfile.mkdtemp(prefix="b55progs."))
    try:
        d.chmod(0o755)
        for name, src in PROGS.items():
            _gcc(src, d / name)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Run:
    """One recording written to Parquet and read back."""

    def __init__(self, rec, path: Path):
        from tracer.schema import validate_file

        self.rec, self.path = rec, path
        validate_file(path, "events")
        self.df = pl.read_parquet(path)
        assert self.df.height > 0, path
        assert self.df["lost_events"].unique().to_list() == [rec.lost_events], path
        self.meta = {m["key"]: m["value"] for m in self.df["metadata"][0]}

    def ev(self, *preds, **eq) -> pl.DataFrame:
        df = self.df
        for k, v in eq.items():
            df = df.filter(pl.col(k) == v)
        for p in preds:
            df = df.filter(p)
        return df

    def forks_of(self, pid: int) -> list[int]:
        """Return values of the thread-or-process creating calls made by process `pid`."""
        return [r for r in self.ev(pl.col("probe").is_in(FORKS), pl.col("ret") > 0, pid=pid)["ret"].to_list()]


def _record(recorder, argv, out: Path, *, mode: str = "good", linger: float = 3.0, cwd=None,
            stdout: int | None = None, stderr: int | None = None, env: dict | None = None) -> Run:
    """Record argv in-process (the loaded recorder); B55_MODE=mode in its environment. A run whose
    ring buffer overflowed (lost_events, counted: not silent) on a loaded machine is recorded again."""
    env = {**ENV, "B55_MODE": mode, **(env or {})}
    label = "bad" if mode not in ("good", "good2") else "good"
    for attempt in range(3):
        null = os.open(os.devnull, os.O_RDWR)
        try:
            rec = recorder.record([str(a) for a in argv],
                                  label=label, env=env, cwd=cwd, stdin=null,
                                  stdout=null if stdout is None else stdout,
                                  stderr=null if stderr is None else stderr, timeout=60, linger=linger)
        finally:
            os.close(null)
        assert rec.signal is None, (argv, rec.signal)
        run = Run(rec, rec.write(out))
        if rec.lost_events == 0 or attempt == 2:
            break
    assert run.rec.lost_events == 0, (argv, run.rec.lost_events)
    return run


def _cli_record(out: Path, argv, *extra: str, mode: str = "good", timeout: float = TIMEOUT):
    """`tracer record -q -o OUT EXTRA -- ARGV` as a subprocess (argv may hold bytes). Its stdout
    and stderr go to files, not pipes: a daemon the command leaves holds them open, and waiting
    for a pipe's end would wait for the daemon, not for `tracer record`."""
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        t0 = time.monotonic()
        p = subprocess.run([TRACER, "record", "-q", "-o", str(out), *extra, "--", *argv],
                           stdout=o, stderr=e, timeout=timeout, env={**ENV, "B55_MODE": mode},
                           stdin=subprocess.DEVNULL, cwd="/")
        p.elapsed = time.monotonic() - t0
        o.seek(0)
        e.seek(0)
        p.stdout, p.stderr = o.read(), e.read()
    err = p.stderr.decode(errors="replace")
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    return p


def _diff(*files, json_out: bool = True):
    argv = [BASELINE, "diff", *map(str, files)] + (["--json"] if json_out else [])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=ENV)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr[-3000:]
    assert p.returncode in (0, 1), (argv, p.returncode, p.stderr[-2000:])
    if not json_out:
        return p
    d = json.loads(p.stdout)
    assert d["anomaly"] is (d["anomaly_count"] > 0)
    assert (p.returncode == 1) is d["anomaly"]
    return d


def _brief(d) -> list:
    return [(a["kind"], a["probe"], a["errno"], a["path"], a["process"]["comm"]) for a in d["anomalies"][:5]]


def _quiet(g1: Run, g2: Run) -> None:
    """A good run against another good run of the same command: no anomaly, exit 0."""
    d = _diff(g1.path, g2.path)
    assert not d["anomaly"], _brief(d)


def _names(d, probe: str, errno: str | None, path: str | None, comm: str | None = None):
    """The bifurcation is (probe, errno, path) in a process of `comm`."""
    assert d["anomaly"], "no anomaly found"
    b = d["bifurcation"]
    got = (b["probe"], b["errno"], b["path"])
    assert got == (probe, errno, path), _brief(d)
    if comm is not None:
        assert b["process"]["comm"] == comm, b["process"]
    return b


def _write(path: Path, text: str = "data\n") -> Path:
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- vfork + exec
# strace -f ./b55spawn in.txt:
#   clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, ...}) = C
#   [pid C] execve("/bin/cat", ["cat", "in.txt"], ...) = 0
#   [pid C] openat(AT_FDCWD, "in.txt", O_RDONLY) = 3 ... exit_group(0)


def _spawn_child(run: Run, comm: str = "cat") -> int:
    """The one process of `comm`: its pid, checked to be a child the command created (the fork
    call's return value in the command's process) with pid = tid and ppid = the command."""
    P = run.rec.pid
    ev = run.ev(comm=comm)
    assert ev.height > 0, f"no event of {comm}: {run.df['comm'].unique().to_list()}"
    pids = set(ev["pid"].to_list())
    assert len(pids) == 1, pids
    C = pids.pop()
    assert set(ev["tid"].to_list()) == {C}
    assert set(ev["ppid"].to_list()) == {P}, (P, set(ev["ppid"].to_list()))
    assert C in run.forks_of(P), (C, run.forks_of(P))
    return C


def test_posix_spawn_child_followed_as_strace_shows(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55spawn", f], tmp_path / "g.parquet")
    assert run.rec.exit_status == 0
    C = _spawn_child(run)
    assert run.ev(pid=C, probe="execve", ret=0).height == 1
    o = run.ev(pid=C, probe="openat", path=str(f))
    assert o.height == 1 and o["ret"][0] >= 0 and o["errno"][0] is None
    assert run.df["exit_status"].unique().to_list() == [0]


# Found and fixed (round forty-eight): a successful execve whose path literal sat on a page the
# process had not touched (posix_spawn("/bin/cat") from read-only data, an exec from a non-main
# thread) was recorded with path null: the entry's read cannot fault the page in, and the old
# image is gone at exit. The exit now reads the path the kernel copied onto the new image's stack
# (the auxiliary vector's AT_EXECFN; bpf/syscall_recorder.c read_exec_filename).


def test_posix_spawn_execve_path_recorded(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55spawn", f], tmp_path / "g.parquet")
    C = _spawn_child(run)
    assert run.ev(pid=C, probe="execve", ret=0)["path"].to_list() in (["/bin/cat"], ["/usr/bin/cat"])


def test_posix_spawn_execve_path_past_a_large_environment(recorder, progs, tmp_path):
    """The exit's read walks argv and ~1,000 environment entries of the new stack to reach the
    auxiliary vector (its limit is 1,023): the path is still the one strace shows."""
    f = _write(tmp_path / "in.txt")
    many = {f"B55_FILLER_{i:04d}": "x" * (i % 40) for i in range(1000)}
    run = _record(recorder, [progs / "b55spawn", f], tmp_path / "g.parquet", env=many)
    C = _spawn_child(run)
    assert run.ev(pid=C, probe="execve", ret=0)["path"].to_list() in (["/bin/cat"], ["/usr/bin/cat"])


# Found by this battery and fixed in round forty-seven: a failed exec's path unreadable at entry
# (its page not yet faulted in) is read again at exit, where the kernel has read it and the image
# is intact; `baseline diff` named execve ENOENT with path null instead of the missing tool.
def test_posix_spawn_missing_tool_named_by_path(recorder, progs, tmp_path):
    tool = tmp_path / "tool"
    prog = tmp_path / "b55spawn"
    _gcc(SPAWN, prog, f'-DTOOL="{tool}"')
    tool.symlink_to("/bin/cat")
    f = _write(tmp_path / "in.txt")
    g1 = _record(recorder, [prog, f], tmp_path / "g1.parquet")
    g2 = _record(recorder, [prog, f], tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    tool.unlink()
    bad = _record(recorder, [prog, f], tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 126
    _names(_diff(g1.path, g2.path, bad.path), "execve", "ENOENT", str(tool))


def test_posix_spawn_diff_quiet_then_fault_named(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = [progs / "b55spawn", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1  # cat's status, passed on by the spawner
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "cat")


# strace -f sh -c 'cat "$1" >/dev/null; :' sh in.txt (dash):
#   vfork() = C; [pid C] execve("/usr/bin/cat", ["cat", "in.txt"], ...) = 0
SH_VFORK = 'cat "$1" >/dev/null; :'


def test_sh_c_vfork_child_followed(recorder, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, ["/bin/sh", "-c", SH_VFORK, "sh", f], tmp_path / "g.parquet")
    assert run.rec.exit_status == 0
    C = _spawn_child(run)
    assert run.ev(pid=run.rec.pid, probe="vfork", ret=C).height == 1, \
        run.ev(pl.col("probe").is_in(FORKS)).select("pid", "probe", "ret")
    assert run.ev(pid=C, probe="openat", path=str(f))["ret"].to_list()[0] >= 0


def test_sh_c_vfork_diff_quiet_then_fault_named(recorder, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = ["/bin/sh", "-c", SH_VFORK, "sh", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "cat")


# --------------------------------------------------------------------------- exec from a thread
# strace -f ./b55thrx in.txt:
#   clone3({flags=...CLONE_THREAD...}) = T
#   [pid T] execve("/bin/cat", ["cat", "in.txt"], ... <pid changed to P ...>
#   +++ superseded by execve in pid T +++
#   <... execve resumed>) = 0; openat(AT_FDCWD, "in.txt", O_RDONLY) = 3 ... (all as pid P)


def test_exec_from_non_main_thread_runs_as_the_leader(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55thrx", f], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0  # cat's
    threads = [t for t in run.forks_of(P) if t != P]
    assert len(threads) == 1, run.forks_of(P)
    T = threads[0]
    # every event of the thread, while it was one, is in P's thread group
    assert set(run.ev(tid=T)["pid"].to_list()) <= {P}
    ex = run.ev(probe="execve", ret=0, comm="cat")
    assert ex.height == 1, run.ev(probe="execve").select("pid", "tid", "path", "ret")
    assert ex["pid"][0] == P and ex["tid"][0] in (P, T)  # strace: entered as T, resumed as P
    cat = run.ev(pl.col("probe") != "execve", comm="cat")
    assert cat.height > 0
    # de_thread: the exec'd program is the leader, pid P = tid P (strace: "pid changed to P")
    assert set(cat["pid"].to_list()) == {P} and set(cat["tid"].to_list()) == {P}, \
        cat.select("pid", "tid").unique()
    leader_ppid = run.ev(tid=P)["ppid"][0]
    assert set(cat["ppid"].to_list()) == {leader_ppid}
    assert run.ev(pl.col("seq") > ex["seq"][0], tid=T).height == 0, "events of the superseded tid after the exec"
    o = cat.filter(pl.col("probe") == "openat", pl.col("path") == str(f))
    assert o.height == 1 and o["ret"][0] >= 0


def test_exec_from_non_main_thread_execve_path(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55thrx", f], tmp_path / "g.parquet")
    assert run.ev(probe="execve", ret=0, comm="cat")["path"].to_list() in (["/bin/cat"], ["/usr/bin/cat"])


def test_exec_from_non_main_thread_diff(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = [progs / "b55thrx", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    b = _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "cat")
    assert b["process"]["pid"] == b["process"]["tid"] == bad.rec.pid


# --------------------------------------------------------------------------- comm changes
# strace: openat(a) = 3; prctl(PR_SET_NAME, "b55-renamed") = 0; openat(b) = 3;
#   openat("/proc/self/comm", O_WRONLY) = 3; write(3, "b55-procname", 12) = 12; openat(c) = 3


def _has_task_rename() -> bool:
    try:
        with open("/proc/kallsyms") as fh:
            return any("trace_event_raw_event_task_rename" in line for line in fh)
    except OSError:
        return False


def test_comm_follows_prctl_and_proc_self_comm(recorder, progs, tmp_path):
    a, b, c = (_write(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt"))
    run = _record(recorder, [progs / "b55ren", a, b, c], tmp_path / "g.parquet")
    assert run.rec.exit_status == 0
    comm = {p: run.ev(probe="openat", path=str(p))["comm"].to_list() for p in (a, b, c)}
    assert comm[a] == ["b55ren"], comm
    assert comm[b] == ["b55-renamed"], comm
    if _has_task_rename():  # "where the kernel has the task:task_rename tracepoint"
        assert comm[c] == ["b55-procname"], comm
    else:
        print("kernel without task:task_rename: /proc/self/comm rename not checked", file=sys.stderr)
    assert set(run.ev(pl.col("comm").is_in(["b55ren", "b55-renamed", "b55-procname"]))["pid"].to_list()) == {run.rec.pid}


def test_comm_change_diff_names_fault_under_new_name(recorder, progs, tmp_path):
    a, b, c = (_write(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt"))
    argv = [progs / "b55ren", a, b, c]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    b.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(b), "b55-renamed")


# --------------------------------------------------------------------------- set-uid root
# strace -f setpriv --reuid=65534 --regid=65534 --clear-groups ./b55suid secret (suid root):
#   getuid() = 65534; geteuid() = 0; openat(AT_FDCWD, "secret", O_RDONLY) = 3
# without the set-uid bit: geteuid() = 65534; openat(...) = -1 EACCES


@pytest.fixture
def suid_dir(progs):
    if shutil.which("setpriv") is None:
        _skip("no setpriv")
    d = Path(tempfile.mkdtemp(prefix="b55suid."))
    try:
        d.chmod(0o755)
        shutil.copy(progs / "b55suid", d / "b55suid")
        os.chown(d / "b55suid", 0, 0)
        (d / "b55suid").chmod(0o4755)
        secret = d / "secret"
        secret.write_text("s3cret\n")
        secret.chmod(0o600)
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                str(d / "b55suid"), str(secret)], capture_output=True, text=True, timeout=30)
        if "euid 0" not in probe.stdout:
            _skip(f"set-uid bit not honoured here (nosuid mount?): {probe.stdout!r} {probe.stderr!r}")
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _suid_argv(d: Path) -> list:
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", d / "b55suid", d / "secret"]


def test_setuid_root_binary_run_unprivileged(recorder, suid_dir, tmp_path):
    run = _record(recorder, _suid_argv(suid_dir), tmp_path / "g.parquet", cwd="/")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    me = run.ev(comm="b55suid")
    assert set(me["pid"].to_list()) == {P}  # setpriv execs it in place
    assert run.ev(pid=P, comm="b55suid", probe="getuid")["arg"].to_list() == ["not root"]
    assert run.ev(pid=P, comm="b55suid", probe="geteuid")["arg"].to_list() == ["root"]
    o = run.ev(pid=P, probe="openat", path=str(suid_dir / "secret"))
    assert o.height == 1 and o["ret"][0] >= 0 and o["errno"][0] is None


def test_setuid_bit_lost_diff_names_eacces(recorder, suid_dir, tmp_path):
    argv = _suid_argv(suid_dir)
    g1 = _record(recorder, argv, tmp_path / "g1.parquet", cwd="/")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2", cwd="/")
    _quiet(g1, g2)
    (suid_dir / "b55suid").chmod(0o755)
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad", cwd="/")
    assert bad.rec.exit_status == 1
    assert bad.ev(comm="b55suid", probe="geteuid")["arg"].to_list() == ["not root"]
    _names(_diff(g1.path, g2.path, bad.path), "openat", "EACCES", str(suid_dir / "secret"), "b55suid")


# --------------------------------------------------------------------------- static binary
# strace -f ./b55static in.txt: execve(...) = 0; brk; arch_prctl; ... openat(AT_FDCWD, "in.txt") = 3
# (no /etc/ld.so.cache, no lib*.so: there is no dynamic loader)


@pytest.fixture(scope="module")
def static_prog(progs):
    libc_a = subprocess.run(["gcc", "-print-file-name=libc.a"], capture_output=True, text=True,
                            timeout=60).stdout.strip()
    if not os.path.isabs(libc_a) or not os.path.exists(libc_a):
        _skip("no libc.a for gcc -static (install libc6-dev)")
    _gcc(STATIC, progs / "b55static", "-static")
    return progs / "b55static"


def test_static_binary_recorded_without_loader(recorder, static_prog, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [static_prog, f], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    ex = run.ev(pid=P, probe="execve", ret=0)
    assert ex["path"].to_list() == [str(static_prog)]
    mine = run.ev(pid=P, comm="b55static")
    assert mine.height > 0
    loader = mine.filter(pl.col("path").str.contains(r"\.so(\.|$)|ld\.so\.cache"))
    assert loader.height == 0, loader.select("probe", "path")
    o = mine.filter(pl.col("probe") == "openat", pl.col("path") == str(f))
    assert o.height == 1 and o["ret"][0] >= 0
    assert run.ev(pid=P, probe="exit_group").height == 1


def test_static_binary_diff(recorder, static_prog, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = [static_prog, f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "b55static")


# --------------------------------------------------------------------------- ptrace inside
# strace -f strace -f -qq -o LOG /bin/cat in.txt:
#   clone(...) = C; [pid C] execve("/bin/cat", ...) = 0; ptrace(PTRACE_SEIZE, C, ...) = 0 (or
#   PTRACE_TRACEME in the child); [pid C] openat(AT_FDCWD, "in.txt", O_RDONLY) = 3; ... wait4


def _strace_argv(log: Path, f: Path) -> list:
    return ["/usr/bin/strace", "-f", "-qq", "-o", log, "/bin/cat", f]


def test_program_under_strace_recorded(recorder, tmp_path):
    if not os.path.exists("/usr/bin/strace"):
        _skip("no /usr/bin/strace")
    f, log = _write(tmp_path / "in.txt"), tmp_path / "strace.log"
    run = _record(recorder, _strace_argv(log, f), tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    C = _spawn_child(run)
    assert run.ev(pid=P, probe="ptrace").height > 0, "strace's ptrace calls not recorded"
    o = run.ev(pid=C, probe="openat", path=str(f))
    assert o.height == 1 and o["ret"][0] >= 0 and o["comm"][0] == "cat"
    assert run.ev(pid=P, probe="openat", path=str(log))["ret"].to_list()[0] >= 0
    assert f'openat(AT_FDCWD, "{f}", O_RDONLY) = 3' in log.read_text()


def test_program_under_strace_diff(recorder, tmp_path):
    if not os.path.exists("/usr/bin/strace"):
        _skip("no /usr/bin/strace")
    f, log = _write(tmp_path / "in.txt"), tmp_path / "strace.log"
    argv = _strace_argv(log, f)
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "cat")


# gdb -batch -nx -ex run --args /bin/cat in.txt: gdb forks, the child (through /bin/sh -c exec)
# execs cat under PTRACE_TRACEME; [pid C] openat(AT_FDCWD, "in.txt", O_RDONLY) = 3
def test_program_under_gdb_batch_recorded(recorder, tmp_path):
    gdb = shutil.which("gdb", path=ENV["PATH"])
    if gdb is None:
        _skip("no gdb")
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [gdb, "-batch", "-nx", "-ex", "run", "--args", "/bin/cat", f],
                  tmp_path / "g.parquet", cwd=tmp_path)
    P = run.rec.pid
    assert run.rec.exit_status == 0
    o = run.ev(probe="openat", path=str(f), comm="cat")
    assert o.height == 1 and o["ret"][0] >= 0, run.ev(comm="cat").select("pid", "probe", "path")
    C = o["pid"][0]
    assert C != P and C in run.forks_of(P), (C, run.forks_of(P))
    assert set(run.ev(pid=C, comm="cat")["ppid"].to_list()) == {P}
    assert run.ev(pid=P, probe="ptrace").height > 0


# --------------------------------------------------------------------------- seccomp errno
# strace -f ./b55seccomp DIR/made (B55_MODE=bad):
#   chroot("/") = -1 EPERM; clone(child_stack=NULL, flags=SIGCHLD) = C
#   [pid C] chroot("/") = -1 EPERM          (the child's first call, refused by the filter)
#   mkdir("DIR/made", 0755) = -1 EROFS     (good runs: = 0, then rmdir)


def test_seccomp_refused_calls_recorded(recorder, progs, tmp_path):
    target = tmp_path / "made"
    run = _record(recorder, [progs / "b55seccomp", target], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    ch = run.ev(pid=P, probe="chroot")
    assert ch["errno"].to_list() == ["EPERM"] and ch["path"].to_list() == ["/"], ch.select("errno", "path")
    kids = [c for c in run.forks_of(P) if c != P]
    assert len(kids) == 1, run.forks_of(P)
    C = kids[0]
    cc = run.ev(pid=C, probe="chroot")
    assert cc["errno"].to_list() == ["EPERM"], run.ev(pid=C).select("tid", "probe", "errno", "path")
    assert cc["tid"].to_list() == [C] and cc["ppid"].to_list() == [P]
    mk = run.ev(pid=P, probe="mkdir", path=str(target))
    assert mk["ret"].to_list() == [0] and mk["errno"].to_list() == [None]


@pytest.mark.xfail(strict=True, reason=(
    "b55seccomp: strace -f shows the forked child's first call `[pid C] chroot(\"/\") = -1 EPERM` "
    "(refused by the inherited SECCOMP_RET_ERRNO filter); the recording has the event (errno EPERM, "
    "pid/tid/ppid right) but path null, while the parent's identical refused chroot(\"/\") has path "
    "\"/\". The kernel never reads the argument of a refused call, and the child's page of the literal "
    "is not mapped after fork (file-backed PTEs are not copied), so the read at exit fails; "
    "architecture.md promises these calls are kept with their arguments read at exit"))
def test_seccomp_refused_first_call_of_child_has_path(recorder, progs, tmp_path):
    run = _record(recorder, [progs / "b55seccomp", tmp_path / "made"], tmp_path / "g.parquet")
    C = [c for c in run.forks_of(run.rec.pid) if c != run.rec.pid][0]
    assert run.ev(pid=C, probe="chroot")["path"].to_list() == ["/"]


def test_seccomp_errno_diff(recorder, progs, tmp_path):
    target = tmp_path / "made"
    argv = [progs / "b55seccomp", target]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1
    assert bad.ev(probe="mkdir")["errno"].to_list() == ["EROFS"]
    _names(_diff(g1.path, g2.path, bad.path), "mkdir", "EROFS", str(target), "b55seccomp")


# --------------------------------------------------------------------------- SIGSTOP / SIGCONT
# strace -f sh -c STOPCONT sh a b: kill(P, SIGSTOP) = 0; --- stopped by SIGSTOP ---;
#   [pid S] kill(P, SIGCONT) = 0; --- SIGCONT ---; vfork() = C2; [pid C2] openat("b") = 3; exit 0
STOPCONT = 'cat "$1" >/dev/null; (sleep 0.3; kill -CONT $$) & kill -STOP $$; cat "$2" >/dev/null || exit 1; wait'


def test_sigstop_sigcont_command_cli(progs, tmp_path):  # noqa: ARG001 (needs BPF, like progs)
    a, b = _write(tmp_path / "a.txt"), _write(tmp_path / "b.txt")
    out = tmp_path / "t.parquet"
    p = _cli_record(out, ["/bin/sh", "-c", STOPCONT, "sh", str(a), str(b)])
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])  # not 128+SIGSTOP: a stop is no exit
    from tracer.schema import validate_file
    validate_file(out, "events")
    df = pl.read_parquet(out)
    assert df["exit_status"].unique().to_list() == [0]
    assert df["lost_events"].unique().to_list() == [0]
    sh = df.filter(pl.col("comm") == "sh")
    P = df["pid"][0]
    kills = sh.filter(pl.col("probe") == "kill")
    assert kills.height == 2 and kills["ret"].to_list() == [0, 0], kills.select("pid", "ret")
    assert set(kills["pid"].to_list()) - {P}, "the subshell's kill -CONT"
    after = df.filter(pl.col("probe") == "openat", pl.col("path") == str(b))
    assert after["comm"].to_list() == ["cat"] and after["ret"][0] >= 0
    assert after["seq"][0] > kills["seq"].max()


def test_sigstop_sigcont_diff(recorder, tmp_path):
    a, b = _write(tmp_path / "a.txt"), _write(tmp_path / "b.txt")
    argv = ["/bin/sh", "-c", STOPCONT, "sh", a, b]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    b.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(b), "cat")


# --------------------------------------------------------------------------- daemonizing
# strace -f ./b55daemon f1 f2 MS: clone() = M; [pid M] setsid() = M; [pid M] clone() = G;
#   [pid M] exit_group(0); [pid G] openat(f1) = 3; write(pipe, "r") = 1; clock_nanosleep(MS);
#   [pid G] openat(f2) = 3; exit_group(0); (P: wait4(M), read(pipe) = 1, exit_group(0) before G ends)


def _daemon_tids(run: Run) -> tuple[int, int]:
    """(middle child M, grandchild G) from the fork calls' return values."""
    P = run.rec.pid
    mids = [m for m in run.forks_of(P) if m != P]
    assert len(mids) == 1, run.forks_of(P)
    M = mids[0]
    gs = run.forks_of(M)
    assert len(gs) == 1, (M, gs)
    assert run.ev(pid=M, probe="setsid")["ret"].to_list() == [M]
    return M, gs[0]


def _reap(pid: int, timeout: float = 10.0) -> None:
    """Wait for a descendant the recorder left running (it exits by itself); kill it if not."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.05)
    if os.path.exists(f"/proc/{pid}"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_daemon_followed_until_it_exits(recorder, progs, tmp_path):
    f1, f2 = _write(tmp_path / "one"), _write(tmp_path / "two")
    t0 = time.monotonic()
    run = _record(recorder, [progs / "b55daemon", f1, f2, "300"], tmp_path / "g.parquet", linger=10.0)
    elapsed = time.monotonic() - t0
    assert run.rec.exit_status == 0
    M, G = _daemon_tids(run)
    late = run.ev(pid=G, probe="openat", path=str(f2))
    assert late.height == 1 and late["ret"][0] >= 0, run.ev(pid=G).select("probe", "path", "ret")
    assert run.ev(pid=G, probe="exit_group").height == 1
    assert not run.rec.cut_off and not run.meta.get("cut_off_tids"), run.meta
    assert elapsed < 6.0, f"recording lasted {elapsed:.1f} s: it must stop when the daemon exits, not at --linger 10"


def test_daemon_linger_zero_cuts_it_off_cli(progs, tmp_path):
    f1, f2 = _write(tmp_path / "one"), _write(tmp_path / "two")
    out = tmp_path / "t.parquet"
    p = _cli_record(out, [str(progs / "b55daemon"), str(f1), str(f2), "1500"], "--linger", "0")
    df = pl.read_parquet(out)
    run_meta = {m["key"]: m["value"] for m in df["metadata"][0]}
    P = df.filter(pl.col("probe") == "execve")["pid"][0]
    M = [r for r in df.filter(pl.col("pid") == P, pl.col("probe").is_in(FORKS), pl.col("ret") > 0)["ret"].to_list()][0]
    G = df.filter(pl.col("pid") == M, pl.col("probe").is_in(FORKS), pl.col("ret") > 0)["ret"].to_list()[0]
    _reap(G)
    assert p.returncode == 0, p.stderr[-2000:]
    assert df["exit_status"].unique().to_list() == [0]
    cut = {int(w) for w in (run_meta.get("cut_off_tids") or "").split()}
    assert G in cut, (G, run_meta)
    assert df.filter(pl.col("pid") == G, pl.col("path") == str(f1)).height >= 1  # before the command's exit
    assert df.filter(pl.col("path") == str(f2)).height == 0


def test_daemon_short_linger_bounds_the_recording_cli(progs, tmp_path):
    f1, f2 = _write(tmp_path / "one"), _write(tmp_path / "two")
    out = tmp_path / "t.parquet"
    p = _cli_record(out, [str(progs / "b55daemon"), str(f1), str(f2), "6000"], "--linger", "300ms")
    df = pl.read_parquet(out)
    gs = df.filter(pl.col("path") == str(f1), pl.col("probe") == "openat")["pid"].to_list()
    still = [g for g in gs if os.path.exists(f"/proc/{g}")]  # `tracer record` did not wait for it
    for g in gs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(g, signal.SIGKILL)  # the daemon we started, still asleep
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(gs) == 1 and still == gs, (gs, still, p.elapsed)
    span = (df["end_time"][0] - df["start_time"][0]).total_seconds()
    assert span < 3.0, f"a --linger 300ms recording spans {span:.1f} s with a 6 s daemon"
    meta = {m["key"]: m["value"] for m in df["metadata"][0]}
    assert str(gs[0]) in (meta.get("cut_off_tids") or "").split(), meta
    assert df.filter(pl.col("path") == str(f2)).height == 0


def test_daemon_diff(recorder, progs, tmp_path):
    f1, f2 = _write(tmp_path / "one"), _write(tmp_path / "two")
    argv = [progs / "b55daemon", f1, f2, "100"]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f2.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 0  # the command's; the daemon's failure is its own
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f2), "b55daemon")


def test_daemon_cut_off_is_not_an_anomaly(recorder, progs, tmp_path):
    """Good runs followed the daemon to its end; the other run (same files) stopped with the
    command (--linger 0): the daemon's stream is cut off, and `baseline diff` does not call its
    end an anomaly."""
    f1, f2 = _write(tmp_path / "one"), _write(tmp_path / "two")
    argv = [progs / "b55daemon", f1, f2, "400"]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    cut = _record(recorder, argv, tmp_path / "cut.parquet", mode="good", linger=0)
    for t in cut.rec.cut_off:
        _reap(t)
    M, G = _daemon_tids(cut)
    assert G in cut.rec.cut_off, (G, cut.rec.cut_off)
    d = _diff(g1.path, g2.path, cut.path)
    assert not d["anomaly"], _brief(d)


# --------------------------------------------------------------------------- io_uring
# strace -f ./b55uring in.txt: io_uring_setup(4, ...) = 3; mmap x3;
#   io_uring_enter(3, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) = 1   (the OPENAT, done in the kernel)
#   io_uring_enter(3, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) = 1   (the READ)
#   write(1, "data\n", 5) = 5; exit_group(0)        -- no openat/read of in.txt at all
# missing file: ... write(2, "b55uring: cannot open ...: No such file or directory\n") ; exit_group(1)


@pytest.fixture
def uring(progs, tmp_path):
    f = _write(tmp_path / "probe.txt")
    p = subprocess.run([str(progs / "b55uring"), str(f)], capture_output=True, text=True, timeout=30)
    if p.returncode == 77:
        _skip(f"io_uring unavailable here: {p.stderr.strip()}")
    assert p.returncode == 0 and p.stdout == "data\n", (p.returncode, p.stderr)
    return progs / "b55uring"


def _record_piped(recorder, argv, out: Path, mode: str = "good") -> tuple[Run, bytes]:
    """Record with stdout and stderr one pipe (outputs of a few bytes), returning what came out."""
    r, w = os.pipe()
    try:
        run = _record(recorder, argv, out, mode=mode, stdout=w, stderr=w)
        os.close(w)
        w = -1
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return run, data


def test_io_uring_file_access_is_not_openat(recorder, uring, tmp_path):
    f = _write(tmp_path / "in.txt")
    run, out = _record_piped(recorder, [uring, f], tmp_path / "g.parquet")
    P = run.rec.pid
    assert out == b"data\n" and run.rec.exit_status == 0
    assert run.ev(pid=P, probe="io_uring_setup")["ret"].to_list()[0] >= 0
    assert run.ev(pid=P, probe="io_uring_enter")["ret"].to_list() == [1, 1]
    fabricated = run.ev(pl.col("probe").is_in(["open", "openat", "openat2", "read", "pread64"]),
                        path=str(f))
    assert fabricated.height == 0, fabricated.select("probe", "path")  # strace shows none
    w = run.ev(pid=P, probe="write")
    assert w["output"].to_list() == ["data\n"], w.select("path", "output")


def test_io_uring_missing_file_diff_by_exit_status(recorder, uring, tmp_path):
    """No call fails (the open's error is in a completion), only the exit status and the message
    differ: diff-json.md's exit-status rule names the run by its message."""
    f = _write(tmp_path / "in.txt")
    argv = [uring, f]
    g1, _ = _record_piped(recorder, argv, tmp_path / "g1.parquet")
    g2, _ = _record_piped(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad, out = _record_piped(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1 and b"cannot open" in out
    assert bad.ev(pl.col("errno").is_not_null(), comm="b55uring").height == \
        g1.ev(pl.col("errno").is_not_null(), comm="b55uring").height  # no syscall says so
    d = _diff(g1.path, g2.path, bad.path)
    assert d["anomaly"], "a run exiting 1 where every good run exited 0 is an anomaly"
    b = d["bifurcation"]
    assert b["errno"] is None and b["process"]["comm"] == "b55uring", _brief(d)
    assert "cannot open" in (b["then_wrote"] or ""), b
    assert any(re.search(r"\b1\b", w) and re.search(r"\b0\b", w) for w in d["warnings"]), d["warnings"]


# --------------------------------------------------------------------------- clone3 + pidfd
# strace -f ./b55clone3 in.txt: clone3({flags=CLONE_PIDFD, exit_signal=SIGCHLD, ...}) = C
#   [pid C] openat(AT_FDCWD, "in.txt", O_RDONLY) = 4; [pid C] write(pipe, "o") = 1; pause()
#   pidfd_open(C, 0) = 6; pidfd_send_signal(5, SIGTERM, NULL, 0) = 0; waitid(P_PIDFD, 6, ...) = 0


def test_clone3_pidfd_recorded(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55clone3", f], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    c3 = run.ev(pid=P, probe="clone3", tid=P)
    assert c3.height == 1 and c3["ret"][0] > 0, run.ev(pl.col("probe").is_in(FORKS)).select("pid", "probe", "ret")
    C = c3["ret"][0]
    child = run.ev(pid=C)
    assert child.height > 0 and set(child["tid"].to_list()) == {C} and set(child["ppid"].to_list()) == {P}
    assert set(child["comm"].to_list()) == {"b55clone3"}
    o = child.filter(pl.col("probe") == "openat", pl.col("path") == str(f))
    assert o.height == 1 and o["ret"][0] >= 0
    assert run.ev(pid=P, probe="pidfd_open")["ret"].to_list()[0] >= 0
    assert run.ev(pid=P, probe="pidfd_send_signal")["ret"].to_list() == [0]
    assert run.ev(pid=P, probe="waitid")["ret"].to_list() == [0]


def test_clone3_pidfd_diff(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = [progs / "b55clone3", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    f.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 1
    b = _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(f), "b55clone3")
    assert b["process"]["pid"] != bad.rec.pid  # the child's


# --------------------------------------------------------------------------- argv extremes
# strace -f /usr/bin/true A*130000 x8: execve("/usr/bin/true", ["/usr/bin/true", "AAAA"...], ...) = 0


def test_huge_argv_recorded_cli(progs, tmp_path):  # noqa: ARG001 (needs BPF, like progs)
    big = ["A" * 130_000 + str(i) for i in range(8)]  # ~1 MiB; one string may not pass 128 KiB
    outs = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for out in outs:
        p = _cli_record(out, ["/usr/bin/true", *big])
        assert p.returncode == 0, p.stderr[-2000:]
        from tracer.schema import validate_file
        validate_file(out, "events")
    df = pl.read_parquet(outs[0], columns=["pid", "probe", "ret", "path", "command", "exit_status", "lost_events"])
    assert df["exit_status"].unique().to_list() == [0] and df["lost_events"].unique().to_list() == [0]
    ex = df.filter(pl.col("probe") == "execve")
    assert ex["ret"].to_list() == [0] and ex["path"].to_list() == ["/usr/bin/true"]
    assert df["command"][0].startswith("/usr/bin/true AAAA"), df["command"][0][:80]
    d = _diff(*outs)
    assert not d["anomaly"], _brief(d)


def test_non_utf8_argv_and_path_cli(progs, tmp_path):  # noqa: ARG001
    name = os.fsencode(tmp_path) + b"/f\xff\xfe.txt"
    with open(name, "wb") as fh:
        fh.write(b"data\n")
    shown = str(tmp_path) + "/f\\xff\\xfe.txt"
    g1, g2, bad = tmp_path / "g1.parquet", tmp_path / "g2.parquet", tmp_path / "bad.parquet"
    for out in (g1, g2):
        p = _cli_record(out, [b"/bin/cat", name], "--label", "good")
        assert p.returncode == 0, p.stderr[-2000:]
    df = pl.read_parquet(g1)
    meta = {m["key"]: m["value"] for m in df["metadata"][0]}
    o = df.filter(pl.col("probe") == "openat", pl.col("comm") == "cat", pl.col("path").str.contains("f"))
    assert o["path"].to_list()[-1:] == [shown], o["path"].to_list()
    assert "\\xff\\xfe" in meta["argv"] and "\ufffd" not in meta["argv"], meta["argv"]
    assert "\ufffd" not in df["command"][0]
    os.unlink(name)
    p = _cli_record(bad, [b"/bin/cat", name], "--label", "bad")
    assert p.returncode == 1, p.stderr[-2000:]  # cat's status
    _names(_diff(g1, g2, bad), "openat", "ENOENT", shown, "cat")
    text = _diff(g1, g2, bad, json_out=False)
    assert "f\\xff\\xfe.txt" in text.stdout and "\ufffd" not in text.stdout, text.stdout[:2000]


# --------------------------------------------------------------------------- fatal signals
# strace -f ./b55crash in.txt (B55_MODE=segv): prlimit64(0, RLIMIT_CORE, {0, 0}, NULL) = 0;
#   openat(in.txt) = 3; close(3); write(2, "b55crash: working\n") = 18;
#   --- SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=NULL} --- +++ killed by SIGSEGV +++
# (abort): write(2, "...invariant broken\n"); rt_sigprocmask(SIG_UNBLOCK, [ABRT]) = 0;
#   tgkill(P, P, SIGABRT) = 0; --- SIGABRT --- +++ killed by SIGABRT +++       (no exit_group)


@pytest.mark.parametrize(("mode", "status"), [("segv", 139), ("abort", 134), ("kill", 137)])
def test_fatal_signal_exit_status_cli(progs, tmp_path, mode, status):
    f = _write(tmp_path / "in.txt")
    out = tmp_path / "t.parquet"
    p = _cli_record(out, [str(progs / "b55crash"), str(f)], mode=mode)
    assert p.returncode == status, (p.returncode, p.stderr[-2000:])
    from tracer.schema import validate_file
    validate_file(out, "events")
    df = pl.read_parquet(out)
    P = df.filter(pl.col("comm") == "b55crash")["pid"][0]
    assert df["exit_status"].unique().to_list() == [status]
    assert df["lost_events"].unique().to_list() == [0]
    me = df.filter(pl.col("pid") == P)
    assert me.filter(pl.col("probe") == "prlimit64")["ret"].to_list()[:1] == [0]  # core dumps off
    assert me.filter(pl.col("probe") == "openat", pl.col("path") == str(f))["ret"].to_list()[0] >= 0
    assert me.filter(pl.col("probe").is_in(["exit_group", "exit"])).height == 0, "killed: no exit call"
    if mode in ("abort", "kill"):  # raise() and abort() send it with tgkill
        tk = me.filter(pl.col("probe") == "tgkill")
        assert tk["ret"].to_list() == [0], me.select("probe", "ret").tail(5)


def test_fatal_signal_diff(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    argv = [progs / "b55crash", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="segv")
    assert bad.rec.exit_status == 139
    d = _diff(g1.path, g2.path, bad.path)
    assert d["anomaly"], "a run killed by SIGSEGV where the good runs exited 0"
    assert d["bifurcation"]["process"]["pid"] == bad.rec.pid, _brief(d)


# --------------------------------------------------------------------------- 200 threads
# strace -f ./b55thr200 DIR: 200x clone3(CLONE_THREAD...) = T; [pid T] openat(DIR/present) = N;
#   close; futex (barrier); [pid T] exit(0) (200 of them at once); exit_group(0) by P


def test_two_hundred_threads_exiting_at_once(recorder, progs, tmp_path):
    _write(tmp_path / "present")
    run = _record(recorder, [progs / "b55thr200", tmp_path], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    mine = run.ev(pid=P, comm="b55thr200")
    threads = set(run.forks_of(P)) - {P}
    assert len(threads) == 200, len(threads)
    assert set(mine["tid"].to_list()) == threads | {P}
    assert len(set(mine["ppid"].to_list())) == 1
    opens = mine.filter(pl.col("probe") == "openat", pl.col("path") == str(tmp_path / "present"))
    assert opens.height == 200 and set(opens["tid"].to_list()) == threads
    assert (opens["ret"] >= 0).all()
    ex = mine.filter(pl.col("probe") == "exit")
    assert ex.height == 200 and set(ex["tid"].to_list()) == threads, ex.height
    assert mine.filter(pl.col("probe") == "exit_group")["tid"].to_list() == [P]
    assert not run.rec.cut_off


def test_two_hundred_threads_diff(recorder, progs, tmp_path):
    _write(tmp_path / "present")
    argv = [progs / "b55thr200", tmp_path]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    d = _diff(g1.path, g2.path, bad.path)
    _names(d, "openat", "ENOENT", str(tmp_path / "missing"), "b55thr200")
    assert d["anomaly_count"] == 1, _brief(d)


def test_two_hundred_threads_ended_by_exit_group(recorder, progs, tmp_path):
    """strace -f ./b55thr200 DIR k: the 200 threads block in pause(); the main thread's
    exit_group(0) ends them all ("+++ exited with 0 +++" for each, no exit call of their own)."""
    _write(tmp_path / "present")
    argv = [progs / "b55thr200", tmp_path, "k"]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    P = g1.rec.pid
    assert g1.rec.exit_status == 0
    threads = set(g1.forks_of(P)) - {P}
    assert len(threads) == 200
    assert g1.ev(pl.col("tid").is_in(list(threads)), probe="openat").height == 200
    assert g1.ev(pl.col("tid").is_in(list(threads)), probe="exit").height == 0
    assert g1.ev(pid=P, probe="exit_group")["tid"].to_list() == [P]
    assert not g1.rec.cut_off and not g1.meta.get("cut_off_tids"), "threads ended with their process, not cut off"
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)


def test_comm_with_control_characters_escaped_in_text_report(recorder, progs, tmp_path):
    """README: text reports show strings from the traces (command names included) on one line
    with control characters escaped (`\\x1b`); --json carries them as they are."""
    a, b, c = (_write(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt"))
    argv = [progs / "b55ren", a, b, c]
    name = {"B55_NAME": "b55\x1b[7mX\nY"}
    g1 = _record(recorder, argv, tmp_path / "g1.parquet", env=name)
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2", env=name)
    assert g1.ev(probe="openat", path=str(b))["comm"].to_list() == ["b55\x1b[7mX\nY"]
    b.unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad", env=name)
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(b), "b55\x1b[7mX\nY")
    text = _diff(g1.path, g2.path, bad.path, json_out=False)
    assert "\x1b" not in text.stdout, text.stdout[:1500]
    line = [ln for ln in text.stdout.splitlines() if "process" in ln][0]
    assert "b55\\x1b[7mX\\nY" in line, line


# strace -f ./b55spawnfa in.txt OUT: clone3({flags=CLONE_VM|CLONE_VFORK, ...}) = C
#   [pid C] openat(AT_FDCWD, "OUT", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3; [pid C] dup2(3, 1) = 1;
#   [pid C] close(3); [pid C] execve("/bin/cat", ...) = 0; ...
#   [pid C] copy_file_range(3, NULL, 1, NULL, ...) = 5   (coreutils cat into a regular file)
def test_posix_spawn_file_action_fd_resolved_in_child(recorder, progs, tmp_path):
    f, out = _write(tmp_path / "in.txt"), tmp_path / "out.txt"
    run = _record(recorder, [progs / "b55spawnfa", f, out], tmp_path / "g.parquet")
    assert run.rec.exit_status == 0 and out.read_text() == "data\n"
    C = _spawn_child(run)
    op = run.ev(pid=C, probe="openat", path=str(out))
    assert op.height == 1 and op["ret"][0] >= 0, run.ev(pid=C).select("probe", "path", "ret")
    cfr = run.ev(pl.col("ret") > 0, pid=C, comm="cat", probe="copy_file_range")
    assert cfr.select("path", "path2").rows() == [(str(f), str(out))], run.ev(pid=C, comm="cat").tail(8)
    assert run.ev(pid=run.rec.pid, probe="openat", path=str(out)).height == 0  # the child's, not the parent's


def test_posix_spawn_file_action_failure_named(recorder, progs, tmp_path):
    f, outdir = _write(tmp_path / "in.txt"), tmp_path / "outdir"
    outdir.mkdir()
    argv = [progs / "b55spawnfa", f, outdir / "out.txt"]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet")
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2")
    _quiet(g1, g2)
    shutil.rmtree(outdir)
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad")
    assert bad.rec.exit_status == 126  # posix_spawn returned the child's ENOENT
    _names(_diff(g1.path, g2.path, bad.path), "openat", "ENOENT", str(outdir / "out.txt"))


# strace -f sh -c 'cat "$1" > "$2"' sh in.txt OUT (dash): vfork() = C;
#   [pid C] openat(AT_FDCWD, "OUT", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3; dup2(3, 1); close(3);
#   [pid C] execve("/usr/bin/cat", ...) = 0; ... copy_file_range(3, NULL, 1, NULL, ...) = 5
def test_sh_vfork_redirect_fd_resolved(recorder, tmp_path):
    f, out = _write(tmp_path / "in.txt"), tmp_path / "out.txt"
    run = _record(recorder, ["/bin/sh", "-c", 'cat "$1" > "$2"; :', "sh", f, out], tmp_path / "g.parquet")
    assert run.rec.exit_status == 0 and out.read_text() == "data\n"
    C = _spawn_child(run)
    cfr = run.ev(pl.col("ret") > 0, pid=C, comm="cat", probe="copy_file_range")
    assert cfr.select("path", "path2").rows() == [(str(f), str(out))], run.ev(pid=C, comm="cat").tail(8)


# strace -f ./b55thrname a b: clone3(...CLONE_THREAD...) = T; [pid T] prctl(PR_SET_NAME, "b55-worker");
#   [pid T] openat(a) = 3; exit(0); openat(b) = 3    -- PR_SET_NAME names the calling thread only
def test_prctl_renames_only_the_calling_thread(recorder, progs, tmp_path):
    a, b = _write(tmp_path / "a.txt"), _write(tmp_path / "b.txt")
    run = _record(recorder, [progs / "b55thrname", a, b], tmp_path / "g.parquet")
    P = run.rec.pid
    T = [t for t in run.forks_of(P) if t != P]
    assert len(T) == 1
    oa = run.ev(probe="openat", path=str(a))
    ob = run.ev(probe="openat", path=str(b))
    assert oa.select("pid", "tid", "comm").rows() == [(P, T[0], "b55-worker")]
    assert ob.select("pid", "tid", "comm").rows() == [(P, P, "b55thrname")]


# strace -f ./b55thrfork in.txt: clone3(...CLONE_THREAD...) = T; [pid T] clone(...SIGCHLD) = C;
#   [pid C] openat(AT_FDCWD, "in.txt", O_RDONLY) = 3; [pid C] exit_group(0); [pid T] wait4(C) = C
#   (C's parent is the process P: getppid() in C returns P, not T)
def test_fork_from_non_main_thread_ppid_is_the_process(recorder, progs, tmp_path):
    f = _write(tmp_path / "in.txt")
    run = _record(recorder, [progs / "b55thrfork", f], tmp_path / "g.parquet")
    P = run.rec.pid
    assert run.rec.exit_status == 0
    T = [t for t in run.forks_of(P) if t != P]
    assert len(T) == 2, run.ev(pl.col("probe").is_in(FORKS), pid=P).select("tid", "probe", "ret")
    by_tid = {r["ret"]: r["tid"] for r in run.ev(pl.col("probe").is_in(FORKS), pl.col("ret") > 0, pid=P).iter_rows(named=True)}
    thread = [t for t in T if by_tid[t] == P]
    child = [c for c in T if by_tid[c] != P]
    assert len(thread) == 1 and len(child) == 1 and by_tid[child[0]] == thread[0], by_tid
    C = child[0]
    ev = run.ev(pid=C)
    assert set(ev["tid"].to_list()) == {C} and set(ev["ppid"].to_list()) == {P}, ev.select("tid", "ppid").unique()
    assert ev.filter(pl.col("probe") == "openat", pl.col("path") == str(f))["ret"].to_list()[0] >= 0


# strace -f sh -c 'b55tool "$1"' sh in.txt, PATH=DIR:/usr/bin:/bin, DIR/b55tool gone (dash):
#   newfstatat(AT_FDCWD, "DIR/b55tool", ...) = -1 ENOENT; newfstatat("/usr/bin/b55tool") = -1 ENOENT;
#   newfstatat("/bin/b55tool") = -1 ENOENT; write(2, "sh: 1: b55tool: not found\n"); exit 127
#   -- dash searches PATH with stat in the shell itself and never vforks (good runs: the stat
#   finds DIR/b55tool, then vfork() = C, [pid C] execve("DIR/b55tool", ...) = 0)
def test_sh_vfork_command_gone_named(recorder, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy("/bin/cat", tools / "b55tool")
    f = _write(tmp_path / "in.txt")
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    argv = ["/bin/sh", "-c", 'b55tool "$1"', "sh", f]
    g1 = _record(recorder, argv, tmp_path / "g1.parquet", env=env)
    g2 = _record(recorder, argv, tmp_path / "g2.parquet", mode="good2", env=env)
    assert g1.ev(probe="execve", ret=0, path=str(tools / "b55tool")).height == 1
    _quiet(g1, g2)
    (tools / "b55tool").unlink()
    bad = _record(recorder, argv, tmp_path / "bad.parquet", mode="bad", env=env)
    assert bad.rec.exit_status == 127
    b = _names(_diff(g1.path, g2.path, bad.path), "newfstatat", "ENOENT", str(tools / "b55tool"), "sh")
    assert b["process"]["pid"] == bad.rec.pid  # the shell's own lookup
