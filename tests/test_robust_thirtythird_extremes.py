"""Blind battery (round thirty-three): extreme REAL recordings fed to `baseline diff` and
`baseline export` as a user would.

Every trace here is made by the real recorder (`tracer record`) from a real program compiled
with cc in the test's scratch directory: 300 threads, a fork chain 200 deep, a program that
execs itself 500 times, a program renaming itself (prctl, /proc/self/comm), a double-forked
daemon outliving the recording, zombies never reaped, a worker and a whole command SIGKILLed
mid-call, ~1.5 million calls, a 100 kB and a non-UTF-8 argv, 4000-byte paths, a program of two
system calls, a command that does not exist. Then: good vs bad, ten good runs, the same file
as good and bad, two different programs, a good run that failed, `--json` always one
document, `baseline export` of each recording.

Time bounds: a small diff or export must end within SMALL_BOUND_S (measured 0.2-1.5 s; six
testers share two cores here, so a 20x slow-down is still a pass); the big case's recordings
within BIG_RECORD_BOUND_S each and its diff within BIG_DIFF_BOUND_S (measured ~10 s and ~1 s
on this machine; docs/benchmarks.md puts a diff of 2 x 1M events at ~2 s). Only the big test
records more than a few thousand events; BIG_CALLS sets its size.

Needs root, bcc and cc (the recorder's own prerequisites): skipped with the reason otherwise.
Faults found are strict xfails whose reason says what was run, expected and got.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

BIN = Path(sys.executable).parent
TRACER = str(BIN / "tracer")
BASELINE = str(BIN / "baseline")

# The one big case: a program making this many system calls, recorded twice and diffed.
BIG_CALLS = 1_000_000
BIG_RECORD_BOUND_S = 240.0
BIG_DIFF_BOUND_S = 120.0
SMALL_BOUND_S = 60.0
RECORD_BOUND_S = 120.0

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("cc") is None,
    reason="needs root (tracer record) and a C compiler (cc) for the extreme programs",
)

# --------------------------------------------------------------------------------------------
# the programs
# --------------------------------------------------------------------------------------------
SOURCES = {
    # N threads, each opening /dev/null and calling getppid; X33_BAD_THREAD=i makes thread i
    # open a file that does not exist instead (and the program exit 1).
    "threads": r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
static int bad_thread = -1;
static void *work(void *arg) {
    long i = (long)arg;
    int fd = open(i == bad_thread ? "/proc/self/nonexistent-x33" : "/dev/null", O_RDONLY);
    if (fd >= 0) close(fd);
    getppid();
    return NULL;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 300;
    if (getenv("X33_BAD_THREAD")) bad_thread = atoi(getenv("X33_BAD_THREAD"));
    pthread_t *t = calloc(n, sizeof *t);
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, work, (void *)i)) { perror("pthread_create"); return 3; }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    if (bad_thread >= 0) { fprintf(stderr, "thread %d failed\n", bad_thread); return 1; }
    return 0;
}
""",
    # a chain of N processes, each the child of the last; the leaf opens /dev/null
    # (X33_BAD: a missing file) and every level passes its child's status up
    "forkchain": r"""
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    const char *bad = getenv("X33_BAD");
    int depth = 0;
    for (;;) {
        if (depth == n) {
            int fd = open(bad ? "/tmp/x33-missing-leaf-file" : "/dev/null", O_RDONLY);
            if (fd < 0) { perror("leaf open"); _exit(1); }
            close(fd);
            _exit(0);
        }
        pid_t c = fork();
        if (c < 0) { perror("fork"); _exit(3); }
        if (c == 0) { depth++; continue; }
        int st = 0;
        if (waitpid(c, &st, 0) < 0) _exit(4);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 5);
    }
}
""",
    # execs itself N times, then opens /dev/null (X33_BAD: a missing file)
    "execself": r"""
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int left = argc > 1 ? atoi(argv[1]) : 500;
    if (left > 0) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", left - 1);
        execl("/proc/self/exe", argv[0], buf, (char *)NULL);
        perror("execl");
        return 3;
    }
    int fd = open(getenv("X33_BAD") ? "/tmp/x33-missing-exec-file" : "/dev/null", O_RDONLY);
    if (fd < 0) { perror("final open"); return 1; }
    close(fd);
    return 0;
}
""",
    # renames itself with prctl (phase-one), then by writing /proc/self/comm (phase-two);
    # four threads name themselves io-<i>
    "rename": r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
static void *work(void *arg) {
    char name[16];
    snprintf(name, sizeof name, "io-%ld", (long)arg);
    prctl(PR_SET_NAME, name);
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) close(fd);
    return NULL;
}
int main(void) {
    int fd = open("/dev/null", O_RDONLY); close(fd);
    prctl(PR_SET_NAME, "phase-one");
    fd = open("/dev/zero", O_RDONLY); close(fd);
    int c = open("/proc/self/comm", O_WRONLY);
    if (c >= 0) { if (write(c, "phase-two", 9) < 0) perror("comm"); close(c); }
    fd = open("/dev/full", O_RDONLY); close(fd);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    fd = open(getenv("X33_BAD") ? "/tmp/x33-missing-renamed" : "/dev/null", O_RDONLY);
    if (fd < 0) { perror("renamed open"); return 1; }
    close(fd);
    return 0;
}
""",
    # double-forks a daemon (setsid, stdio on /dev/null) that writes its pid to argv[1] and
    # lives argv[2] seconds
    "daemon": r"""
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    int secs = argc > 2 ? atoi(argv[2]) : 30;
    pid_t c = fork();
    if (c == 0) {
        setsid();
        if (fork() == 0) {
            int nul = open("/dev/null", O_RDWR);  /* a daemon lets go of its caller's stdio */
            dup2(nul, 0); dup2(nul, 1); dup2(nul, 2);
            if (nul > 2) close(nul);
            FILE *f = fopen(argv[1], "w");
            if (f) { fprintf(f, "%d\n", getpid()); fclose(f); }
            int fd = open(getenv("X33_BAD") ? "/tmp/x33-missing-daemon-conf" : "/dev/null", O_RDONLY);
            if (fd < 0) _exit(1);  /* X33_BAD: the daemon fails as it starts */
            close(fd);
            for (int i = 0; i < secs * 10; i++) usleep(100000);
            _exit(0);
        }
        _exit(0);
    }
    waitpid(c, NULL, 0);
    for (int i = 0; i < 100; i++) { if (access(argv[1], F_OK) == 0) break; usleep(20000); }
    return 0;
}
""",
    # N children exit and are never reaped (zombies until the parent exits); the parent then
    # opens /dev/null (X33_BAD: a missing file, exit 1)
    "zombies": r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c == 0) { getppid(); _exit(i % 3); }
    }
    usleep(300000);
    int fd = open(getenv("X33_BAD") ? "/tmp/x33-missing-zombie" : "/dev/null", O_RDONLY);
    if (fd < 0) { perror("zombie open"); return 1; }
    return 0;
}
""",
    # a worker blocked in read() on a pipe; the parent writes it a byte, or (X33_BAD) SIGKILLs
    # it mid-call
    "killed": r"""
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
int main(void) {
    int p[2];
    if (pipe(p)) return 3;
    pid_t c = fork();
    if (c == 0) {
        char b;
        close(p[1]);
        if (read(p[0], &b, 1) != 1) _exit(4);
        _exit(0);
    }
    close(p[0]);
    usleep(200000);
    if (getenv("X33_BAD")) kill(c, SIGKILL);
    else if (write(p[1], "x", 1) != 1) return 3;
    int st;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st)) { fprintf(stderr, "worker killed by signal %d\n", WTERMSIG(st)); return 1; }
    return 0;
}
""",
    # writes its pid to argv[1], sleeps 0.3 s (X33_BAD: 60 s, to be SIGKILLed in the sleep)
    "sleeper": r"""
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open("/dev/null", O_RDONLY); close(fd);
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d\n", getpid()); fclose(f); }
    struct timespec ts = { getenv("X33_BAD") ? 60 : 0, getenv("X33_BAD") ? 0 : 300000000 };
    nanosleep(&ts, NULL);
    fd = open("/dev/null", O_RDONLY); close(fd);
    return 0;
}
""",
    # N system calls: getppid, with an open/close of /dev/null every 1000; then a last open
    # (X33_BAD: of a missing file, exit 1)
    "many": r"""
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1500000;
    long calls = 0;
    for (long i = 0; calls < n; i++) {
        if (i % 1000 == 0) {
            int fd = open("/dev/null", O_RDONLY);
            close(fd);
            calls += 2;
        } else {
            syscall(SYS_getppid);
            calls++;
        }
    }
    int fd = open(getenv("X33_BAD") ? "/tmp/x33-missing-after-many" : "/dev/null", O_RDONLY);
    if (fd < 0) { perror("final open"); return 1; }
    close(fd);
    return 0;
}
""",
    # under argv[1], directories of 200-byte names down to ~3800 bytes, a file of a 3990-byte
    # path created there and opened again (X33_BAD: a sibling of that name that does not exist)
    "longpath": r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
int main(int argc, char **argv) {
    char p[4096];
    snprintf(p, sizeof p, "%s", argv[1]);
    char comp[201];
    memset(comp, 'd', 200); comp[200] = 0;
    while (strlen(p) + 201 < 3980) {
        strcat(p, "/"); strcat(p, comp);
        if (mkdir(p, 0755) && access(p, F_OK)) { perror("mkdir"); return 3; }
    }
    size_t l = strlen(p);
    while (strlen(p) < 3990) strcat(p, l == strlen(p) ? "/f" : "f");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("create"); return 3; }
    close(fd);
    if (getenv("X33_BAD")) p[strlen(p) - 1] = 'g';
    fd = open(p, O_RDONLY);
    if (fd < 0) { fprintf(stderr, "open of %zu-byte path: failed\n", strlen(p)); return 1; }
    close(fd);
    return 0;
}
""",
}

# two system calls in all: execve and exit (no libc, no loader)
TINY_X86_64 = r"""
void _start(void) {
    __asm__ volatile("mov $60, %eax\n xor %edi, %edi\n syscall");
}
"""
TINY_PORTABLE = "int main(void) { return 0; }\n"


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    src = tmp_path_factory.mktemp("x33src")
    out = {}
    for name, code in SOURCES.items():
        c = src / f"{name}.c"
        c.write_text(code)
        exe = src / name
        subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), str(c)], check=True,
                       capture_output=True, timeout=120)
        out[name] = str(exe)
    c = src / "tiny.c"
    exe = src / "tiny"
    if platform.machine() == "x86_64":
        c.write_text(TINY_X86_64)
        r = subprocess.run(["cc", "-O2", "-nostdlib", "-static", "-o", str(exe), str(c)],
                           capture_output=True, timeout=120)
    if platform.machine() != "x86_64" or r.returncode != 0:
        c.write_text(TINY_PORTABLE)
        subprocess.run(["cc", "-O2", "-o", str(exe), str(c)], check=True, capture_output=True,
                       timeout=120)
    out["tiny"] = str(exe)
    return out


class Result:
    def __init__(self, argv, proc, elapsed):
        self.argv = argv
        self.rc = proc.returncode
        self.out_bytes = proc.stdout
        self.out = proc.stdout.decode("utf-8", "backslashreplace")
        self.err = proc.stderr.decode("utf-8", "backslashreplace")
        self.elapsed = elapsed

    def __repr__(self):
        return f"rc={self.rc} {self.elapsed:.1f}s argv={self.argv!r}\nstdout={self.out[:3000]}\nstderr={self.err[:3000]}"


def _env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("X33_")}
    env.update(extra or {})
    return env


def run(argv, cwd, env=None, timeout=SMALL_BOUND_S):
    t0 = time.monotonic()
    proc = subprocess.run([a if isinstance(a, bytes) else str(a) for a in argv], cwd=cwd, env=_env(env), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)
    return Result(argv, proc, time.monotonic() - t0)


def record(out, cmd, cwd, env=None, label=None, linger=None, timeout=RECORD_BOUND_S):
    argv = [TRACER, "record", "-q", "-o", out]
    if label:
        argv += ["--label", label]
    if linger is not None:
        argv += ["--linger", linger]
    return run(argv + ["--", *cmd], cwd, env, timeout)


def diff(cwd, *traces, json_out=False, timeout=SMALL_BOUND_S):
    argv = [BASELINE, "diff", *traces] + (["--json"] if json_out else [])
    return run(argv, cwd, timeout=timeout)


def no_traceback(r):
    assert "Traceback" not in r.err and "Traceback" not in r.out, r


def one_json(r):
    """stdout is exactly one JSON document, valid UTF-8."""
    text = r.out_bytes.decode("utf-8")
    return json.loads(text)


def rows(path):
    return pq.read_table(path).to_pylist()


# --------------------------------------------------------------------------------------------
# recordings, made once per module on first use (so any test runs alone, in any order)
# --------------------------------------------------------------------------------------------
def _is_our_daemon(pid, exe):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == exe.encode()
    except OSError:
        return False


class Recordings:
    def __init__(self, progs, root):
        self.p = progs
        self.root = root
        self.cache = {}
        (root / "lp1").mkdir()
        (root / "lp2").mkdir()
        (root / "lp3").mkdir()

    def specs(self, key):
        p, root = self.p, self.root
        bad = {"X33_BAD": "1"}
        table = {
            "th_g1": ([p["threads"], "300"], None),
            "th_g2": ([p["threads"], "300"], None),
            "th_b": ([p["threads"], "300"], {"X33_BAD_THREAD": "150"}),
            "fc_g1": ([p["forkchain"], "200"], None),
            "fc_g2": ([p["forkchain"], "200"], None),
            "fc_b": ([p["forkchain"], "200"], bad),
            "ex_g1": ([p["execself"], "500"], None),
            "ex_g2": ([p["execself"], "500"], None),
            "ex_b": ([p["execself"], "500"], bad),
            "rn_g1": ([p["rename"]], None),
            "rn_g2": ([p["rename"]], None),
            "rn_b": ([p["rename"]], bad),
            "kl_g1": ([p["killed"]], None),
            "kl_g2": ([p["killed"]], None),
            "kl_b": ([p["killed"]], bad),
            "sl_g1": ([p["sleeper"], root / "sl.pid"], None),
            "sl_g2": ([p["sleeper"], root / "sl.pid"], None),
            "sm_g1": ([p["many"], "20000"], None),
            "sm_b": ([p["many"], "20000"], bad),
            "av_1": ([p["tiny"], "a" * 100_000], None),
            "av_2": ([p["tiny"], "a" * 100_000], None),
            "nu_1": ([p["tiny"], b"\xff\xfe\x1b[31m", b"caf\xe9"], None),
            "nu_2": ([p["tiny"], b"\xff\xfe\x1b[31m", b"caf\xe9"], None),
            "lp_g1": ([p["longpath"], root / "lp1"], None),
            "lp_g2": ([p["longpath"], root / "lp2"], None),
            "lp_b": ([p["longpath"], root / "lp3"], bad),
            "tiny1": ([p["tiny"]], None),
            "tiny2": ([p["tiny"]], None),
            "zb_failed": ([p["zombies"], "20"], bad),
            "zb_b": ([p["zombies"], "20"], bad),
        }
        for i in range(1, 11):
            table[f"zb_g{i}"] = ([p["zombies"], "20"], None)
        return table[key]

    def get(self, key):
        if key in self.cache:
            return self.cache[key]
        out = self.root / f"{key}.parquet"
        if key.startswith("dm_"):
            pidfile = self.root / f"{key}.pid"
            env = {"X33_BAD": "1"} if key == "dm_3" else None
            r = record(out, [self.p["daemon"], pidfile, "300"], self.root, env, linger="500ms")
            pid = int(pidfile.read_text()) if pidfile.exists() else None
            alive = False
            if pid and _is_our_daemon(pid, self.p["daemon"]):
                alive = True  # it outlived the recording; we started it, so we end it now
                os.kill(pid, signal.SIGKILL)
            self.cache[key] = (out, r, pid, alive)
            return self.cache[key]
        if key == "sl_b":
            r = self._sigkilled(out)
        else:
            cmd, env = self.specs(key)
            r = record(out, cmd, self.root, env)
        self.cache[key] = (out, r)
        return self.cache[key]

    def _sigkilled(self, out):
        """the sleeper, SIGKILLed by us in its 60-second nanosleep"""
        pidfile = self.root / "slb.pid"
        argv = [TRACER, "record", "-q", "-o", str(out), "--", self.p["sleeper"], str(pidfile)]
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=self.root, env=_env({"X33_BAD": "1"}),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + RECORD_BOUND_S
            while time.monotonic() < deadline:
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                time.sleep(0.05)
            time.sleep(0.3)  # well inside the nanosleep
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
            so, se = proc.communicate(timeout=RECORD_BOUND_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return Result(argv, subprocess.CompletedProcess(argv, proc.returncode, so, se),
                      time.monotonic() - t0)

    def path(self, key):
        got = self.get(key)
        assert got[1].rc in (0, 1, 137), got[1]
        return got[0]



@pytest.fixture(scope="module")
def recs(progs, tmp_path_factory):
    probe = tmp_path_factory.mktemp("x33probe")
    r = record(probe / "true.parquet", ["/bin/true"], probe)
    if r.rc != 0:
        pytest.skip(f"tracer record cannot record here: {r.err.strip()[:300]}")
    return Recordings(progs, tmp_path_factory.mktemp("x33recs"))


def bif(report):
    assert report["anomaly"] is True, report
    return report["bifurcation"]


# --------------------------------------------------------------------------------------------
# 300 threads
# --------------------------------------------------------------------------------------------
def test_300_threads_all_recorded(recs):
    out, r = recs.get("th_g1")
    assert r.rc == 0, r
    t = rows(out)
    tids = {x["tid"] for x in t}
    assert len(tids) == 301, len(tids)  # the main thread and its 300 workers
    assert {x["lost_events"] for x in t} == {0}
    assert sum(1 for x in t if x["probe"] == "openat" and x["path"] == "/dev/null") == 300


def test_300_threads_good_vs_good_quiet(recs):
    good = [recs.path("th_g1"), recs.path("th_g2")]
    r = diff(recs.root, *good)
    no_traceback(r)
    assert "different commands" not in r.err, r
    lost = [max(x["lost_events"] or 0 for x in pq.read_table(f, columns=["lost_events"]).to_pylist()) for f in good]
    if any(lost):
        # under load a recording's ring buffer may overflow (300 threads starting at once): the
        # calls it lacks are no good run's behaviour, and the diff must say so (CI 132: rc=1 once)
        assert re.search(r"lost [0-9,]+ events", r.err), (lost, r)
        return
    if r.rc == 1:
        # CI 132 and 137 (2 of 6 CI runs, never in ~30 runs here, under load or not): 300 threads
        # started at once interleave by the scheduler; what the diff named is printed for the
        # next round to settle (a timing miss is an xfail when it happens, as the real sets' are)
        print(r.out)
        pytest.xfail(f"300 threads good vs good named an anomaly (timing, unsettled): {r.out[:300]}")
    assert r.rc == 0, r


def test_300_threads_one_bad_thread_named(recs):
    r = diff(recs.root, recs.path("th_g1"), recs.path("th_g2"), recs.path("th_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/proc/self/nonexistent-x33"), b
    assert b["process"]["tid"] != b["process"]["pid"], b  # one of the workers, not the main thread
    assert "different commands" not in r.err, r


# --------------------------------------------------------------------------------------------
# a fork chain 200 deep
# --------------------------------------------------------------------------------------------
def test_fork_chain_200_deep_recorded_and_quiet(recs):
    out, r = recs.get("fc_g1")
    assert r.rc == 0, r
    assert len({x["pid"] for x in rows(out)}) == 201
    d = diff(recs.root, out, recs.path("fc_g2"))
    no_traceback(d)
    assert d.rc == 0, d


def test_fork_chain_leaf_failure_named_at_depth_200(recs):
    r = diff(recs.root, recs.path("fc_g1"), recs.path("fc_g2"), recs.path("fc_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-leaf-file"), b
    assert b["process"]["role"].count("forkchain") == 201, b["process"]
    t = rows(recs.path("fc_b"))
    leaf = [x for x in t if x["path"] == "/tmp/x33-missing-leaf-file"]
    assert leaf and leaf[0]["pid"] == b["process"]["pid"]


# --------------------------------------------------------------------------------------------
# 500 execs of itself
# --------------------------------------------------------------------------------------------
def test_exec_self_500_times(recs):
    out, r = recs.get("ex_g1")
    assert r.rc == 0, r
    t = rows(out)
    assert sum(1 for x in t if x["probe"] == "execve" and x["ret"] == 0) == 501
    assert len({x["pid"] for x in t}) == 1
    d = diff(recs.root, out, recs.path("ex_g2"))
    no_traceback(d)
    assert d.rc == 0, d


def test_exec_self_bad_named_after_500_execs(recs):
    r = diff(recs.root, recs.path("ex_g1"), recs.path("ex_g2"), recs.path("ex_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-exec-file"), b


# --------------------------------------------------------------------------------------------
# renamed process and threads
# --------------------------------------------------------------------------------------------
def test_prctl_rename_recorded(recs):
    out, r = recs.get("rn_g1")
    assert r.rc == 0, r
    t = rows(out)
    zero = [x for x in t if x["path"] == "/dev/zero"]
    assert zero and {x["comm"] for x in zero} == {"phase-one"}
    io = [x for x in t if x["probe"] == "openat" and x["path"] == "/dev/null" and x["tid"] != x["pid"]]
    assert sorted(x["comm"] for x in io) == ["io-0", "io-1", "io-2", "io-3"]


# (a strict xfail until round thirty-four: the recorder refreshed a thread's comm only at
# execve/prctl, so the main thread's later rows kept 'phase-one'; the task_rename tracepoint
# now refreshes it when a thread renames itself)
def test_proc_self_comm_rename_recorded(recs):
    out, _ = recs.get("rn_g1")
    t = rows(out)
    full = [x for x in t if x["path"] == "/dev/full"]
    assert full and {x["comm"] for x in full} == {"phase-two"}, {x["comm"] for x in full}


def test_renamed_program_good_quiet_bad_named(recs):
    q = diff(recs.root, recs.path("rn_g1"), recs.path("rn_g2"))
    no_traceback(q)
    assert q.rc == 0, q
    r = diff(recs.root, recs.path("rn_g1"), recs.path("rn_g2"), recs.path("rn_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-renamed"), b


# --------------------------------------------------------------------------------------------
# a double-forked daemon outliving the recording
# --------------------------------------------------------------------------------------------
def test_daemon_outlives_recording_cut_off(recs):
    out, r, pid, alive = recs.get("dm_1")
    assert r.rc == 0, r
    assert pid is not None and alive  # still running after the recorder returned
    assert r.elapsed < 60, r  # the 500 ms linger, not the daemon's 300 s
    t = rows(out)
    meta = {m["key"]: m["value"] for m in t[0]["metadata"]}
    assert str(pid) in meta.get("cut_off_tids", "").split(), meta
    assert pid in {x["pid"] for x in t}


def test_daemon_recordings_diff_quiet(recs):
    a = recs.get("dm_1")[0]
    b = recs.get("dm_2")[0]
    r = diff(recs.root, a, b)
    no_traceback(r)
    assert r.rc == 0, r  # the cut-off daemon's end is no anomaly


def test_daemon_failing_as_it_starts_named(recs):
    out, r, _, alive = recs.get("dm_3")
    assert r.rc == 0 and not alive, r  # the start script succeeded; its daemon did not
    d = diff(recs.root, recs.get("dm_1")[0], recs.get("dm_2")[0], out, json_out=True)
    no_traceback(d)
    assert d.rc == 1, d
    b = bif(one_json(d))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-daemon-conf"), b
    assert b["process"]["role"].count("daemon") == 3, b["process"]  # the grandchild
    assert "different commands" not in d.err, d


# --------------------------------------------------------------------------------------------
# zombies, ten good runs, a failed run given as good
# --------------------------------------------------------------------------------------------
def test_zombies_never_reaped_quiet_and_named(recs):
    q = diff(recs.root, recs.path("zb_g1"), recs.path("zb_g2"))
    no_traceback(q)
    assert q.rc == 0, q
    r = diff(recs.root, recs.path("zb_g1"), recs.path("zb_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-zombie"), b


def test_ten_good_runs_files_and_directory(recs, tmp_path):
    goods = [recs.path(f"zb_g{i}") for i in range(1, 11)]
    q = diff(recs.root, *goods[:9], goods[9])
    no_traceback(q)
    assert q.rc == 0, q
    r = diff(recs.root, *goods, recs.path("zb_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    rep = one_json(r)
    assert len(rep["good_traces"]) == 10
    assert bif(rep)["path"] == "/tmp/x33-missing-zombie"
    gdir = tmp_path / "good-runs"
    gdir.mkdir()
    for g in goods:
        shutil.copy(g, gdir / g.name)
    d = diff(recs.root, gdir, recs.path("zb_b"), json_out=True)
    no_traceback(d)
    assert d.rc == 1, d
    rep2 = one_json(d)
    assert len(rep2["good_traces"]) == 10 and bif(rep2)["path"] == "/tmp/x33-missing-zombie"


# (a strict xfail until round thirty-three: no warning at all)
def test_failed_run_given_as_good_is_warned(recs):
    r = diff(recs.root, recs.path("zb_failed"), recs.path("zb_g1"))
    no_traceback(r)
    assert re.search(r"(exit|status)[^\n]*\b1\b", r.err), r


# --------------------------------------------------------------------------------------------
# SIGKILL mid-call
# --------------------------------------------------------------------------------------------
def test_worker_sigkilled_in_read_named(recs):
    q = diff(recs.root, recs.path("kl_g1"), recs.path("kl_g2"))
    no_traceback(q)
    assert q.rc == 0, q
    r = diff(recs.root, recs.path("kl_g1"), recs.path("kl_g2"), recs.path("kl_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert b["probe"] == "read" and (b["errno"] or "").startswith("ERESTART"), b
    assert b["process"]["role"].startswith("killed/killed"), b  # the worker, not the parent


def test_command_sigkilled_mid_call_exit_137(recs):
    out, r = recs.get("sl_b")
    assert r.rc == 137, r
    t = rows(out)
    assert {x["exit_status"] for x in t} == {137}
    assert t[-1]["probe"] == "clock_nanosleep", t[-1]


def test_command_sigkilled_mid_call_diff_is_anomaly(recs):
    r = diff(recs.root, recs.path("sl_g1"), recs.path("sl_g2"), recs.path("sl_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    assert bif(one_json(r))["process"]["comm"] == "sleeper"


# (a strict xfail until round thirty-three: the ERESTART went to the curated entry)
def test_command_sigkilled_mid_call_names_the_call(recs):
    r = diff(recs.root, recs.path("sl_g1"), recs.path("sl_g2"), recs.path("sl_b"), json_out=True)
    rep = one_json(r)
    assert bif(rep)["probe"] == "clock_nanosleep", bif(rep)


# --------------------------------------------------------------------------------------------
# ~1.5 million calls (the one big case)
# --------------------------------------------------------------------------------------------
def test_big_recording_record_and_diff_bounded(recs, capsys):
    root = recs.root
    good = root / "big_good.parquet"
    bad = root / "big_bad.parquet"
    rg = record(good, [recs.p["many"], str(BIG_CALLS)], root, timeout=BIG_RECORD_BOUND_S)
    assert rg.rc == 0, rg
    rb = record(bad, [recs.p["many"], str(BIG_CALLS)], root, {"X33_BAD": "1"},
                timeout=BIG_RECORD_BOUND_S)
    assert rb.rc == 1, rb
    md = pq.read_metadata(good)
    lost = {}
    for name, f in (("GOOD", good), ("BAD", bad)):
        lost[name] = max(x["lost_events"] or 0
                         for x in pq.read_table(f, columns=["lost_events"]).to_pylist())
        # under load the ring buffer may overflow: every call is a row or counted as lost
        assert pq.read_metadata(f).num_rows + lost[name] >= BIG_CALLS, (name, lost)
    d = diff(root, good, bad, json_out=True, timeout=BIG_DIFF_BOUND_S)
    no_traceback(d)
    assert d.rc == 1, d
    rep = one_json(d)
    b = bif(rep)
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", "/tmp/x33-missing-after-many"), b
    assert rep["events"]["bad"] + lost["BAD"] >= BIG_CALLS  # (every row read; a lost event is none)
    for name, n in lost.items():
        if n:  # a loss must be said, per side
            # (the count is written with thousands separators, as every count the tools print)
            assert re.search(rf"{name} trace\S* lost {n:,} events", d.err), d
    with capsys.disabled():
        print(f"\n[x33 big] {BIG_CALLS:,} calls: record good {rg.elapsed:.1f}s, bad {rb.elapsed:.1f}s, "
              f"diff {d.elapsed:.1f}s, {md.num_rows:,} rows, lost {lost}")
    # export of all of it is refused above --max-events, one line, no output left behind
    js = root / "big.json"
    e = run([BASELINE, "export", bad, "--max-events", "100000", "-o", js], root, timeout=BIG_DIFF_BOUND_S)
    no_traceback(e)
    assert e.rc == 2, e
    assert len(e.err.strip().splitlines()) == 1, e
    assert not js.exists()


# (a strict xfail until round thirty-three: the loop's first turn was shown)
def test_loop_last_common_events_are_just_before(recs):
    r = diff(recs.root, recs.path("sm_g1"), recs.path("sm_b"), json_out=True)
    b = bif(one_json(r))
    assert b["path"] == "/tmp/x33-missing-after-many", b
    seqs = [e["seq"] for e in b["last_common"]]
    assert seqs and min(seqs) >= b["position"] - 1000, (seqs, b["position"])


# --------------------------------------------------------------------------------------------
# argv extremes, long paths, a tiny trace, a command not found
# --------------------------------------------------------------------------------------------
def test_argv_100kb_recorded_whole_and_quiet(recs):
    out, r = recs.get("av_1")
    assert r.rc == 0, r
    t = rows(out)
    assert len(t[0]["command"]) >= 100_000
    d = diff(recs.root, out, recs.path("av_2"))
    no_traceback(d)
    assert d.rc == 0, d
    # against another command, the warning quotes it on one bounded line
    w = diff(recs.root, recs.path("tiny1"), out)
    no_traceback(w)
    assert "different commands" in w.err, w
    assert max(len(line) for line in w.err.splitlines()) < 2000, w


def test_argv_non_utf8_diff_and_export(recs, tmp_path):
    a, r = recs.get("nu_1")
    assert r.rc == 0, r
    d = diff(recs.root, a, recs.path("nu_2"))
    no_traceback(d)
    assert d.rc == 0, d
    w = diff(recs.root, recs.path("tiny1"), a, json_out=True)
    no_traceback(w)
    one_json(w)
    assert "different commands" in w.err, w
    assert "\x1b" not in w.err, w  # control characters escaped in text
    e = run([BASELINE, "export", a, "-o", tmp_path / "nu.json"], recs.root)
    no_traceback(e)
    assert e.rc == 0, e
    json.loads((tmp_path / "nu.json").read_text("utf-8"))


# (a strict xfail until round thirty-three: the path was cut to its first 511 bytes, no mark)
def test_4000_byte_path_recorded_whole(recs):
    out, _ = recs.get("lp_b")
    t = rows(out)
    failed = [x for x in t if x["probe"] == "openat" and x["errno"] == "ENOENT"
              and (x["path"] or "").startswith(str(recs.root / "lp3"))]
    assert failed, [x["path"] for x in t][-10:]
    path = failed[0]["path"]
    assert len(path) == 3990 and path.endswith("g"), len(path)


def test_4000_byte_path_failure_named(recs):
    q = diff(recs.root, recs.path("lp_g1"), recs.path("lp_g2"))
    no_traceback(q)
    assert q.rc == 0, q
    r = diff(recs.root, recs.path("lp_g1"), recs.path("lp_g2"), recs.path("lp_b"), json_out=True)
    no_traceback(r)
    assert r.rc == 1, r
    b = bif(one_json(r))
    assert (b["probe"], b["errno"]) == ("openat", "ENOENT"), b
    assert b["path"].startswith(str(recs.root / "lp3") + "/ddd"), b["path"][:100]
    assert b["position"] == max(x["seq"] for x in rows(recs.path("lp_b"))
                                if x["errno"] == "ENOENT" and x["probe"] == "openat")


def test_tiny_trace_two_calls(recs, tmp_path):
    out, r = recs.get("tiny1")
    assert r.rc == 0, r
    n = pq.read_metadata(out).num_rows
    assert 1 <= n <= 40, n
    d = diff(recs.root, out, recs.path("tiny2"), json_out=True)
    no_traceback(d)
    assert d.rc == 0, d
    rep = one_json(d)
    assert rep["anomaly"] is False and rep["events"]["bad"] == n


def test_command_not_found(recs, tmp_path):
    out = tmp_path / "nf.parquet"
    r = record(out, ["x33-no-such-command-anywhere"], tmp_path)
    no_traceback(r)
    assert r.rc == 127, r
    assert "x33-no-such-command-anywhere" in r.err and len(r.err.strip().splitlines()) == 1, r
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name != "nf.parquet"], list(tmp_path.iterdir())
    d = diff(tmp_path, recs.path("tiny1"), out)
    no_traceback(d)
    assert d.rc == 2 and "nf.parquet" in d.err, d
    # a path that exists but is not a program: 126, and no trace either
    nx = tmp_path / "notexec.sh"
    nx.write_text("echo hi\n")
    r2 = record(tmp_path / "nx.parquet", [nx], tmp_path)
    no_traceback(r2)
    assert r2.rc == 126, r2
    assert not (tmp_path / "nx.parquet").exists()


# --------------------------------------------------------------------------------------------
# the same file twice, different programs
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["th_g1", "tiny1", "fc_g1"])
def test_same_file_as_good_and_bad_names_no_anomaly(recs, key):
    p = recs.path(key)
    r = diff(recs.root, p, p, json_out=True)
    no_traceback(r)
    # never an anomaly; a refusal must say why, on one line naming the file
    assert r.rc in (0, 2), r
    if r.rc == 0:
        assert one_json(r)["anomaly"] is False
    else:
        assert r.out == "", r
        assert len(r.err.strip().splitlines()) == 1 and p.name in r.err, r
        assert "GOOD" in r.err, r


def test_different_programs_warned(recs):
    r = diff(recs.root, recs.path("th_g1"), recs.path("fc_b"), json_out=True)
    no_traceback(r)
    assert r.rc in (0, 1), r
    one_json(r)
    assert "different commands" in r.err, r
    t = diff(recs.root, recs.path("ex_g1"), recs.path("ex_g2"), recs.path("kl_b"))
    no_traceback(t)
    assert "different commands" in t.err, t


# --------------------------------------------------------------------------------------------
# --json always one document; export of every extreme recording
# --------------------------------------------------------------------------------------------
JSON_CASES = [
    (["th_g1"], "th_b"), (["fc_g1", "fc_g2"], "fc_b"), (["ex_g1"], "ex_b"), (["rn_g1"], "rn_b"),
    (["dm_1"], "dm_2"), (["kl_g1"], "kl_b"), (["sl_g1"], "sl_b"), (["lp_g1"], "lp_b"),
    (["nu_1"], "nu_2"), (["av_1"], "tiny1"), (["tiny1"], "th_g1"), (["zb_g1"], "zb_b"),
]


@pytest.mark.parametrize("goods,bad", JSON_CASES, ids=[f"{g[0]}-{b}" for g, b in JSON_CASES])
def test_json_is_one_document(recs, goods, bad):
    r = diff(recs.root, *(recs.get(g)[0] for g in goods), recs.get(bad)[0], json_out=True)
    no_traceback(r)
    assert r.rc in (0, 1), r
    rep = one_json(r)
    assert rep["anomaly"] is (r.rc == 1)
    assert r.elapsed < SMALL_BOUND_S


EXPORT_KEYS = ["th_g1", "fc_g1", "ex_g1", "rn_g1", "dm_1", "kl_b", "sl_b", "lp_b", "av_1",
               "nu_1", "tiny1", "zb_g1"]


@pytest.mark.parametrize("key", EXPORT_KEYS)
def test_export_each_recording(recs, key, tmp_path):
    src = recs.get(key)[0]
    out = tmp_path / f"{key}.json"
    r = run([BASELINE, "export", src, "-o", out], recs.root)
    no_traceback(r)
    assert r.rc == 0, r
    doc = json.loads(out.read_text("utf-8"))
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    assert len(events) == pq.read_metadata(src).num_rows


def test_export_diff_of_300_threads_marks_bifurcation(recs, tmp_path):
    out = tmp_path / "diff.json"
    r = run([BASELINE, "export", "--diff", recs.path("th_g1"), recs.path("th_g2"),
             recs.path("th_b"), "-o", out], recs.root)
    no_traceback(r)
    assert r.rc == 0, r
    doc = json.loads(out.read_text("utf-8"))
    marks = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["name"].startswith("bifurcation")]
    assert len(marks) == 1 and "/proc/self/nonexistent-x33" in marks[0]["name"], marks
