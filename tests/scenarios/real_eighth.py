"""An eighth set of real programs with one real fault each, in territory the first seven sets
do not touch:

- **the fault in the middle of a long good prefix**: thousands of identical successful calls
  before the one that fails -- a python scan of 3,000 files where file 2,117 is unreadable,
  ``xargs cat`` over 4,000 files where one is a directory (cat goes on after it), mawk over
  3,000 arguments where one is a dangling symlink, ``split`` whose 40th chunk hits ENOSPC on a
  small tmpfs, ``install -t`` of 200 files filling its mount, 3,000 job directories on a tmpfs
  out of inodes (mkdir ENOSPC), perl File::Find over 1,500 directories where one is root's
  0700, a log rotation (RotatingFileHandler) that fails on its third rollover because a
  backup name is a directory -- and goes on logging;
- **faults whose first sign is not an errno**: a C reader whose input was truncated (reads end
  early, the message is the sign), a C worker killed by SIGSEGV on a config line without '='
  (its python parent reports the signal), a C reader killed by SIGBUS touching a mapping past
  the end of a truncated index, a health check exiting 1 with no failing call and nothing
  written (``grep -q``);
- **the fault hidden among many routine errors**: PYTHONPATH, perl -I and LD_LIBRARY_PATH of
  20 directories each (a hundred ENOENTs probing) with the one real fault after them;
- **calls and errnos no set has used**: a read lease refused while a writer holds the file
  (fcntl F_SETLEASE EAGAIN), a pipe grown past pipe-max-size by nobody (fcntl F_SETPIPE_SZ
  EPERM), ``dd conv=fsync`` into a FIFO (fsync EINVAL), a mapping with PROT_EXEC from a noexec
  mount (mmap EPERM, a noise probe failing for real), ``readlink`` of a deploy's ``current``
  that became a directory (EINVAL), an open of a unix socket file (ENXIO), execve of a tool
  an unfinished upload still holds open for writing (ETXTBSY), SO_BINDTODEVICE to an interface
  that is not there (setsockopt ENODEV), an alarm timer without CAP_WAKE_ALARM
  (timerfd_create EPERM), inotify on a spool directory that was renamed (inotify_add_watch
  ENOENT), tar --atime-preserve=system meeting root's file (O_NOATIME: openat EPERM), a
  double close (close EBADF);
- **pipelines**: the middle stage of ``sort | mawk -f | wc`` missing its program.

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints: where no call
fails, the message the program writes (stderr is /dev/null in every run), or, for a process
killed by a signal (strace: ``+++ killed by SIGSEGV +++``; the recorder has no signal event),
the end of its thread. The good-vs-good cases (`QUIET_EIGHTH`) carry run-to-run noise over
long loops: the same scans, rotations and pipelines with varying content, search paths of 20
directories, a lease, a FIFO consumer, a worker pool finishing in varying order.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import threading
from pathlib import Path

from .catalog import mount_tmpfs, umount_after, write
from .harness import NoAnomalyCase, Scenario
from .real import own
from .real_fifth import _cc
from .real_third import BACKGROUND

PY3 = "/usr/bin/python3"
NO_PATH = "*"  # the fault's call has no path of its own (a socket, a timer, a closed fd, a thread's end)
STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
END = frozenset({"(end of thread)"})
PROBES_OPEN = frozenset({"openat", "open"})


def _sh(b: Path, script: str) -> list[str]:
    return ["/bin/sh", "-c", script.format(b=b, py=PY3)]


def _wait_for(path: Path) -> None:
    for _ in range(400):
        if path.exists():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{path} never appeared")


# --- long good prefixes ------------------------------------------------------------------------
SCAN_PY = ("import os, sys\n"
           "d = sys.argv[1]\n"
           "total = 0\n"
           "for name in sorted(os.listdir(d)):\n"
           "    with open(os.path.join(d, name)) as f:\n"
           "        total += len(f.read())\n"
           "print(total)\n")


def _many_files(d: Path, n: int, seed: int = 0) -> None:
    d.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    for i in range(n):
        (d / f"f{i:05d}.txt").write_text(f"row {i} {rnd.randint(0, 10**6)}\n")


def scan_one_unreadable(base: Path, bad: bool) -> None:
    write(base / "scan.py", SCAN_PY)
    _many_files(base / "data", 3000)
    own(base / "data")
    if bad:  # one file a root job rewrote with its own umask
        p = base / "data" / "f02117.txt"
        os.chown(p, 0, 0)
        p.chmod(0o600)


def xargs_cat_one_dir(base: Path, bad: bool) -> None:
    _many_files(base / "data", 4000)
    if bad:  # an unpack step made a directory where a file belongs
        (base / "data" / "f02950.txt").unlink()
        (base / "data" / "f02950.txt").mkdir()
    write(base / "list.txt", "".join(f"{base}/data/f{i:05d}.txt\n" for i in range(4000)))


def mawk_args_dangling(base: Path, bad: bool) -> None:
    _many_files(base / "in", 3000)
    if bad:  # a cleanup removed the target a link pointed at
        p = base / "in" / "f01800.txt"
        p.unlink()
        p.symlink_to(base / "archive" / "f01800.txt")


SPLIT_INPUT = "".join(f"{i:08d} " + "x" * 55 + "\n" for i in range(16384))  # 1 MiB


def split_chunks_full(base: Path, bad: bool) -> None:
    write(base / "input", SPLIT_INPUT)
    mount_tmpfs(base / "mnt", "640k" if bad else "2m")  # 40 chunks of 16 KiB fit the small one


def install_fills_mount(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    rnd = random.Random(8)
    for i in range(200):
        write(base / "src" / f"mod{i:03d}.dat", "".join(rnd.choice("abcdef") for _ in range(8000)))
    mount_tmpfs(base / "mnt", "1m" if bad else "4m")


MKDIRS_PY = ("import os, sys\n"
             "for i in range(int(sys.argv[2])):\n"
             "    os.mkdir(os.path.join(sys.argv[1], f'job{i:05d}'))\n"
             "print('made', sys.argv[2])\n")


def mkdir_out_of_inodes(base: Path, bad: bool) -> None:
    write(base / "mkdirs.py", MKDIRS_PY)
    (base / "mnt").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=8m,mode=0755,nr_inodes={2500 if bad else 5000}",
                    "tracebase-test", str(base / "mnt")], check=True)


FIND_PL = ('use strict; use File::Find;\n'
           'my $n = 0;\n'
           'find({wanted => sub { $n++ if -f $_ }, no_chdir => 1}, $ARGV[0]);\n'
           'print "$n files\\n";\n')


def perl_find_dir_unreadable(base: Path, bad: bool) -> None:
    write(base / "count.pl", FIND_PL)
    tree = base / "tree"
    for i in range(1500):
        d = tree / f"d{i // 50:02d}" / f"s{i:04d}"
        d.mkdir(parents=True)
        (d / "item.txt").write_text(f"{i}\n")
    own(tree)
    if bad:  # a root job made its scratch directory private
        p = tree / "d21" / "s1066"
        os.chown(p, 0, 0)
        p.chmod(0o700)


ROTATE_PY = ("import logging, logging.handlers, sys\n"
             "h = logging.handlers.RotatingFileHandler(sys.argv[1], maxBytes=20000, backupCount=3)\n"
             "log = logging.getLogger('job')\n"
             "log.addHandler(h)\n"
             "log.setLevel(logging.INFO)\n"
             "for i in range(3000):\n"
             "    log.info('step %05d done: %s', i, 'ok' * 20)\n"
             "print('done')\n")


def rotation_backup_is_dir(base: Path, bad: bool) -> None:
    write(base / "job.py", ROTATE_PY)
    (base / "logs").mkdir()
    if bad:  # a broken logrotate config made app.log.1 a directory: rollovers move it down the line
        (base / "logs" / "app.log.1").mkdir()


# --- no errno: short reads, signals, an exit status --------------------------------------------
READER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
struct hdr { char magic[8]; unsigned count; unsigned size; };
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    struct hdr h;
    if (read(fd, &h, sizeof h) != sizeof h || memcmp(h.magic, "TBRECS01", 8)) { fputs("bad header\n", stderr); return 2; }
    char rec[64];
    unsigned long sum = 0;
    for (unsigned i = 0; i < h.count; i++) {
        ssize_t n = read(fd, rec, sizeof rec);
        if (n != (ssize_t)sizeof rec) { fprintf(stderr, "%s: truncated at record %u of %u\n", argv[1], i, h.count); return 1; }
        sum += (unsigned char)rec[0];
    }
    printf("%u records, sum %lu\n", h.count, sum);
    return 0;
}
"""


def _records(count: int, written: int) -> bytes:
    hdr = b"TBRECS01" + count.to_bytes(4, "little") + (64).to_bytes(4, "little")
    return hdr + b"".join(bytes([i % 251]) * 64 for i in range(written))


def truncated_records(base: Path, bad: bool) -> None:
    _cc(base, "reader", READER_C)
    # a copy interrupted by a full disk elsewhere: the header promises 2000 records
    (base / "data.bin").write_bytes(_records(2000, 1300 if bad else 2000))


WORKER_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        /* the worker trusts its config: a line without '=' dereferences NULL */
        if (!eq) *(volatile char *)eq = 0;
        n += strlen(eq + 1) > 1;
    }
    printf("%d settings\n", n);
    return 0;
}
"""
POOL_PY = ("import subprocess, sys\n"
           "for job in sys.argv[2:]:\n"
           "    rc = subprocess.run([sys.argv[1], job]).returncode\n"
           "    if rc < 0:\n"
           "        sys.exit(f'worker for {job} killed by signal {-rc}')\n"
           "print('all jobs done')\n")


def worker_segfault(base: Path, bad: bool) -> None:
    _cc(base, "worker", WORKER_C)
    write(base / "pool.py", POOL_PY)
    for j in ("a", "b", "c"):
        write(base / f"job_{j}.conf", "threads=4\nqueue=main\n")
    if bad:  # a hand edit left a line without '='
        write(base / "job_b.conf", "threads=4\nqueue main\n")


INDEX_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    unsigned size;
    if (read(fd, &size, sizeof size) != sizeof size) return 2;
    /* the index says how big it is; a truncated file leaves the tail of the mapping unbacked */
    unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 2; }
    unsigned long sum = 0;
    for (unsigned i = 0; i < size; i += 4096) sum += p[i];
    printf("index of %u bytes, sum %lu\n", size, sum);
    return 0;
}
"""


def index_truncated_sigbus(base: Path, bad: bool) -> None:
    _cc(base, "indexer", INDEX_C)
    size = 64 * 4096
    body = size.to_bytes(4, "little") + bytes(size - 4)
    (base / "index.bin").write_bytes(body[: 16 * 4096] if bad else body)  # cut at 64 KiB


EMPTY_C = r"""
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }
int main(int argc, char **argv) {
    struct dirent **names;
    int n = scandir(argv[1], &names, NULL, by_name);
    if (n < 0) { perror(argv[1]); return 2; }
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] == '.') continue;
        char path[4096], line[256];
        snprintf(path, sizeof path, "%s/%s", argv[1], names[i]->d_name);
        FILE *f = fopen(path, "r");
        if (!f) { perror(path); return 2; }
        /* every shard has a header line; an empty one means its producer died */
        if (!fgets(line, sizeof line, f)) { fprintf(stderr, "%s: empty shard\n", path); return 1; }
        total += strlen(line);
        fclose(f);
    }
    printf("%ld bytes of headers\n", total);
    return 0;
}
"""


def shard_empty_mid(base: Path, bad: bool) -> None:
    _cc(base, "headers", EMPTY_C)
    _many_files(base / "shards", 2000)
    if bad:  # its producer was killed after creating it
        (base / "shards" / "f01400.txt").write_text("")


SQL_ROWS = 600


def sqlite_duplicate_key(base: Path, bad: bool) -> None:
    subprocess.run(["sqlite3", str(base / "jobs.db"), "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT);"],
                   check=True)
    ids = list(range(SQL_ROWS))
    if bad:  # an exporter emitted one id twice
        ids[417] = 416
    write(base / "load.sql", "".join(f"INSERT INTO jobs VALUES ({i}, 'job{i}');\n" for i in ids))


FILTER_C = r"""
#include <stdio.h>
#include <string.h>
int main(void) {
    char line[256];
    long n = 0;
    while (fgets(line, sizeof line, stdin)) {
        char *eq = strchr(line, '=');
        /* a filter trusting its input: a line without '=' dereferences NULL */
        if (!eq) *(volatile char *)eq = 0;
        n += fputs(eq + 1, stdout) >= 0;
    }
    return n == 0;
}
"""


def filter_segfault(base: Path, bad: bool) -> None:
    _cc(base, "filter", FILTER_C)
    rnd = random.Random(5)
    rows = [f"key{rnd.randint(0, 9999):04d}={rnd.randint(0, 99)}\n" for _ in range(3000)]
    if bad:  # one producer wrote a line in another format
        rows[1234] = "key5000 77\n"
    write(base / "in.txt", "".join(rows))


def _memcg() -> Path:
    return Path(f"/sys/fs/cgroup/memory/tracebase8-{os.getpid()}-oom")


ALLOC_PY = ("import sys\n"
            "buf = bytearray(int(sys.argv[1]) << 20)\n"
            "print('buffer of', len(buf) >> 20, 'MiB')\n")


def oom_in_cgroup(base: Path, bad: bool) -> None:
    write(base / "alloc.py", ALLOC_PY)
    cg = _memcg()
    cg.mkdir(exist_ok=True)
    # the bad host's container limit is below what the job needs (120 MiB)
    (cg / "memory.limit_in_bytes").write_text("40M\n" if bad else "512M\n")


def _memcg_teardown(base: Path) -> None:  # noqa: ARG001 - a teardown
    cg = _memcg()
    for _ in range(100):
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # the killed job's last task is still leaving
            threading.Event().wait(0.02)


def health_state(base: Path, bad: bool) -> None:
    write(base / "state", "pid: 4242\nstatus: " + ("degraded" if bad else "ready") + "\nuptime: 3600\n")


# --- hidden among routine errors ----------------------------------------------------------------
DIRS20 = tuple(f"p{i:02d}" for i in range(20))


def _pythonpath20(base: Path, bad: bool = False, value: int = 1) -> None:
    for d in DIRS20:
        (base / d).mkdir()
    mods = {"jobcfg": "p04", "jobio": "p09", "jobmath": "p13", "jobrun": "p19"}
    for mod, d in mods.items():
        write(base / d / f"{mod}.py", f"VALUE = {value}\n")
    write(base / "p19" / "jobmain.py",
          "import jobcfg, jobio, jobmath, jobrun, sys\n"
          "print(open(sys.argv[1]).read().strip(), jobcfg.VALUE + jobio.VALUE + jobmath.VALUE + jobrun.VALUE)\n")
    (base / "etc").mkdir()
    # the bad run's config was renamed by a package upgrade (job.ini.dpkg-old)
    write(base / "etc" / ("job.ini.dpkg-old" if bad else "job.ini"), "[job]\nthreads = 4\n")


def _pythonpath20_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", "PYTHONPATH=" + ":".join(str(b / d) for d in DIRS20), "PYTHONDONTWRITEBYTECODE=1",
            PY3, "-S", "-m", "jobmain", f"{b}/etc/job.ini"]


def pythonpath20_config_renamed(base: Path, bad: bool) -> None:
    _pythonpath20(base, bad)


def pythonpath20_module_missing(base: Path, bad: bool) -> None:
    _pythonpath20(base)
    if bad:  # the release left one module out
        (base / "p13" / "jobmath.py").unlink()


def _perl_inc20(base: Path, bad: bool = False) -> None:
    for d in DIRS20:
        (base / d / "Job").mkdir(parents=True)
    write(base / "p05" / "Job" / "Util.pm", "package Job::Util; sub v { 3 } 1;\n")
    p = write(base / "p17" / "Job" / "Conf.pm", "package Job::Conf; sub v { 4 } 1;\n")
    own(base)
    if bad:  # deployed by root with a private umask
        os.chown(p, 0, 0)
        p.chmod(0o600)


def _perl_inc20_argv(b: Path) -> list[str]:
    return ["/usr/bin/perl", *(f"-I{b}/{d}" for d in DIRS20), "-MJob::Util", "-MJob::Conf",
            "-e", "print Job::Util::v() + Job::Conf::v(), qq{\\n}"]


def perl_inc20_module_unreadable(base: Path, bad: bool) -> None:
    _perl_inc20(base, bad)


LIBJOB_C = "int job_value(void) { return 7; }\n"
LDMAIN_C = ("#include <stdio.h>\nint job_value(void);\n"
            "int main(int argc, char **argv) {\n"
            "    FILE *f = fopen(argv[1], \"r\");\n"
            "    if (!f) { perror(argv[1]); return 1; }\n"
            "    char line[128]; int n = 0;\n"
            "    while (fgets(line, sizeof line, f)) n++;\n"
            "    printf(\"%d rows, value %d\\n\", n, job_value());\n"
            "    return 0;\n}\n")


def _ld20(base: Path, bad: bool = False) -> None:
    for d in DIRS20:
        (base / d).mkdir()
    _cc(base, "p18/libjob.so", LIBJOB_C, "-shared")
    write(base / "main.c", LDMAIN_C)
    subprocess.run(["gcc", "-O1", "-o", str(base / "main"), str(base / "main.c"), f"-L{base}/p18", "-ljob"],
                   check=True)
    (base / "data").mkdir()
    if not bad:  # the bad run's input was never delivered
        write(base / "data" / "input.csv", "a,1\nb,2\nc,3\n")


def _ld20_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", "LD_LIBRARY_PATH=" + ":".join(str(b / d) for d in DIRS20), f"{b}/main",
            f"{b}/data/input.csv"]


def ld20_input_missing(base: Path, bad: bool) -> None:
    _ld20(base, bad)


def passwd_unreadable(base: Path, bad: bool) -> None:
    # a private copy of the passwd database, as an image build writes it
    write(base / "passwd", Path("/etc/passwd").read_text(), 0o600 if bad else 0o644)


PASSWD_SH = ("/usr/bin/mount --bind {b}/passwd /etc/passwd && "
             "exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/id -un")
POOL_OPEN_PY = ("import sys, threading\n"
                "from concurrent.futures import ThreadPoolExecutor\n"
                "both_ends = threading.Barrier(6)  # each task merges its 15 shards with the others' open\n"
                "def shard(k):\n"
                "    try:\n"
                "        files = [open(f'{sys.argv[1]}/f{k * 15 + i:05d}.txt') for i in range(15)]\n"
                "    except OSError:\n"
                "        both_ends.abort()\n"
                "        raise\n"
                "    both_ends.wait(5)\n"
                "    n = sum(len(f.read()) for f in files)\n"
                "    for f in files:\n"
                "        f.close()\n"
                "    return n\n"
                "with ThreadPoolExecutor(6) as pool:\n"
                "    print(sum(pool.map(shard, range(6))))\n")


def pool_nofile(base: Path, bad: bool) -> None:
    write(base / "pool.py", POOL_OPEN_PY)
    _many_files(base / "data", 90)
    write(base / "limit", ("40" if bad else "1024") + "\n")  # a systemd unit's LimitNOFILE: 90 files open at once


# --- calls and errnos no set has used ----------------------------------------------------------
LEASE_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    /* a cache reader takes a read lease so it hears of writers; a writer holding it open refuses it */
    if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0) { perror("F_SETLEASE"); return 1; }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    fcntl(fd, F_SETLEASE, F_UNLCK);
    printf("read %zd bytes under a lease\n", n);
    return 0;
}
"""
HOLD_PY = ("import sys, time\n"
           "f = open(sys.argv[1], sys.argv[3])\n"
           "open(sys.argv[2], 'w').close()\n"
           "time.sleep(60)\n")


def lease_writer_holds(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    _cc(base, "leaser", LEASE_C)
    (base / "cache").mkdir()
    write(base / "cache" / "data.bin", "cached\n" * 100)
    if bad:  # a refresh job still has the file open for writing
        BACKGROUND.start([PY3, "-S", "-c", HOLD_PY, f"{base}/cache/data.bin", f"{base}/held", "a"])
        _wait_for(base / "held")


PIPE_SZ_PY = ("import fcntl, os, sys\n"
              "r, w = os.pipe()\n"
              "size = int(open(sys.argv[1]).read())\n"
              "fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, size)\n"
              "os.write(w, b'x' * 4096)\n"
              "print(len(os.read(r, 8192)), fcntl.fcntl(w, fcntl.F_GETPIPE_SZ))\n")


def pipe_size_over_max(base: Path, bad: bool) -> None:
    write(base / "pipe.py", PIPE_SZ_PY)
    # pipe-max-size is 1 MiB; above it only CAP_SYS_RESOURCE may go
    write(base / "pipe.conf", f"{4 << 20 if bad else 256 << 10}\n")


def dd_fsync_fifo(base: Path, bad: bool) -> None:
    write(base / "in", "payload line\n" * 2000)
    if bad:  # the output was turned into a named pipe for a streaming consumer
        os.mkfifo(base / "out")
    else:  # the last run's output (the consumer reads whatever is there when it starts)
        write(base / "out", "payload line\n" * 2000)


# the consumer checksums what it gets: it reads to the end and writes once, so the good runs'
# consumer makes the same calls however far dd has got (cat's writes would number 0 or more)
DD_FSYNC_SH = ("/usr/bin/md5sum {b}/out > /dev/null 2>&1 &\n"
               "/usr/bin/dd if={b}/in of={b}/out conv=fsync status=none; rc=$?\n"
               "wait\n"
               "exit $rc\n")


MAPEXEC_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    struct stat st;
    fstat(fd, &st);
    /* a JIT cache maps its compiled blob executable */
    void *p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) { perror("mmap blob"); return 1; }
    printf("blob of %ld bytes mapped\n", (long)st.st_size);
    return 0;
}
"""


def blob_on_noexec(base: Path, bad: bool) -> None:
    _cc(base, "jit", MAPEXEC_C)
    (base / "cache").mkdir()
    opts = "size=1m,mode=0755" + (",noexec" if bad else "")  # the cache dir moved to a hardened /var/tmp
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tracebase-test", str(base / "cache")], check=True)
    (base / "cache" / "blob.bin").write_bytes(b"\xc3" * 8192)


def current_not_symlink(base: Path, bad: bool) -> None:
    (base / "releases" / "r41").mkdir(parents=True)
    write(base / "releases" / "r41" / "VERSION", "41\n")
    if bad:  # a deploy by `cp -r` instead of `ln -sfn`
        (base / "current").mkdir()
        write(base / "current" / "VERSION", "41\n")
    else:
        (base / "current").symlink_to(base / "releases" / "r41")


def status_is_socket(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    if bad:  # the daemon now binds its control socket where the status file was
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(base / "run" / "status"))
        s.close()
    else:
        write(base / "run" / "status", "ok\nqueue 3\n")


def tool_open_for_writing(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    (base / "bin").mkdir()
    write(base / "bin" / "tool", "#!/bin/sh\necho tool ran\n", 0o755)
    if bad:  # the upload of the new version has not closed the file yet
        BACKGROUND.start([PY3, "-S", "-c", HOLD_PY, f"{base}/bin/tool", f"{base}/held", "r+"])
        _wait_for(base / "held")


BINDDEV_PY = ("import socket, sys\n"
              "dev = open(sys.argv[1]).read().strip()\n"
              "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
              "s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())\n"
              "s.bind(('127.0.0.1', 0))\n"
              "print('bound to', dev, s.getsockname()[0])\n")


def bind_device_missing(base: Path, bad: bool) -> None:
    write(base / "net.py", BINDDEV_PY)
    write(base / "net.conf", ("ib0" if bad else "lo") + "\n")  # a config written for the RDMA hosts


TIMERFD_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <stdint.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r");
    int clock = 1;
    if (!f || fscanf(f, "%d", &clock) != 1) return 2;
    int fd = timerfd_create(clock, TFD_CLOEXEC);
    if (fd < 0) { perror("timerfd_create"); return 1; }
    struct itimerspec its = {{0, 0}, {0, 2000000}};
    timerfd_settime(fd, 0, &its, NULL);
    uint64_t ticks;
    read(fd, &ticks, sizeof ticks);
    printf("timer fired %llu\n", (unsigned long long)ticks);
    return 0;
}
"""


def alarm_timer_nobody(base: Path, bad: bool) -> None:
    _cc(base, "timer", TIMERFD_C)
    # 9 = CLOCK_BOOTTIME_ALARM (wakes a suspended host: CAP_WAKE_ALARM), 1 = CLOCK_MONOTONIC
    write(base / "clock.conf", ("9" if bad else "1") + "\n")


WATCH_PY = ("import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = libc.inotify_init1(os.O_CLOEXEC)\n"
            "d = open(sys.argv[1]).read().strip()\n"
            "if libc.inotify_add_watch(fd, d.encode(), 0x8 | 0x80) < 0:\n"
            "    sys.exit(f'watch {d}: ' + os.strerror(ctypes.get_errno()))\n"
            "print('watching', d)\n")


def spool_renamed(base: Path, bad: bool) -> None:
    write(base / "watch.py", WATCH_PY)
    (base / "spool" / ("incoming.old" if bad else "incoming")).mkdir(parents=True)
    write(base / "watch.conf", f"{base}/spool/incoming\n")


def tar_noatime_foreign(base: Path, bad: bool) -> None:
    _many_files(base / "src" / "data", 30)
    (base / "out").mkdir()
    own(base / "src")
    own(base / "out")
    if bad:  # a root cron job dropped its report among the user's files (world-readable)
        p = write(base / "src" / "data" / "f00012.txt", "root's report\n")
        os.chown(p, 0, 0)


DOUBLE_CLOSE_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    char buf[256];
    read(fd, buf, sizeof buf);
    if (access(argv[2], F_OK) == 0) {
        /* the override path closes the base config early ... */
        close(fd);
        int o = open(argv[2], O_RDONLY);
        read(o, buf, sizeof buf);
        close(o);
    }
    /* ... and the common path closes it again */
    if (close(fd) < 0) { perror("close config"); return 1; }
    puts("configured");
    return 0;
}
"""


def override_double_close(base: Path, bad: bool) -> None:
    _cc(base, "conf", DOUBLE_CLOSE_C)
    write(base / "base.conf", "threads=4\n")
    if bad:  # an operator dropped an override in
        write(base / "override.conf", "threads=8\n")


def pipeline_awk_missing(base: Path, bad: bool) -> None:
    rnd = random.Random(3)
    write(base / "in.txt", "".join(f"host{rnd.randint(0, 40):02d} {rnd.randint(0, 999)}\n" for _ in range(3000)))
    if not bad:  # the report program was left out of the bad run's deploy
        write(base / "report.awk", "{ n[$1] += $2 } END { for (h in n) print h, n[h] }\n")


def _scan_argv(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/scan.py", f"{b}/data"]


REAL_EIGHTH: list[Scenario] = [
    # long good prefixes
    Scenario("scan_3000_one_unreadable", "python3 reads 3,000 files in order (nobody)",
             _scan_argv, scan_one_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/data/f02117.txt",
             unprivileged=True, description="file 2,117 of 3,000 is root's 0600: openat EACCES after 2,116 reads"),
    Scenario("xargs_cat_4000_one_dir", "xargs -a list.txt cat (4,000 files)",
             lambda b: ["/usr/bin/xargs", "-a", f"{b}/list.txt", "/usr/bin/cat"], xargs_cat_one_dir,
             frozenset({"read"}), "EISDIR", lambda b: f"{b}/data/f02950.txt",
             description="entry 2,950 is a directory: cat's read fails EISDIR, cat goes on with the rest"),
    Scenario("mawk_3000_args_dangling", "sh: mawk over in/* (3,000 files)",
             lambda b: _sh(b, "exec /usr/bin/mawk 'FNR == 1 {{ n++ }} END {{ print n }}' {b}/in/*"),
             mawk_args_dangling, PROBES_OPEN, "ENOENT", lambda b: f"{b}/in/f01800.txt",
             description="argument 1,800 is a dangling symlink: openat ENOENT, mawk stops"),
    Scenario("split_chunk40_disk_full", "split -b 16k input mnt/part-",
             lambda b: ["/usr/bin/split", "-b", "16k", "-a", "3", f"{b}/input", f"{b}/mnt/part-"],
             split_chunks_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/part-*",
             teardown=umount_after("mnt"), description="a 640 KiB tmpfs: the 41st 16 KiB chunk's write fails ENOSPC"),
    Scenario("install_200_fills_mount", "install -m 0644 -t mnt src/* (200 files)",
             lambda b: _sh(b, "exec /usr/bin/install -m 0644 -t {b}/mnt {b}/src/*"), install_fills_mount,
             frozenset({"write", "copy_file_range", "sendfile"}), "ENOSPC", lambda b: f"{b}/mnt/mod*.dat",
             teardown=umount_after("mnt"), description="200 files of 8 KB into 1 MiB: a write fails ENOSPC mid-run"),
    Scenario("mkdir_3000_out_of_inodes", "python3 makes 3,000 job directories",
             lambda b: [PY3, "-S", f"{b}/mkdirs.py", f"{b}/mnt", "3000"], mkdir_out_of_inodes,
             frozenset({"mkdir", "mkdirat"}), "ENOSPC", lambda b: f"{b}/mnt/job*",
             teardown=umount_after("mnt"), description="a tmpfs with 2,500 inodes: mkdir fails ENOSPC mid-loop"),
    Scenario("perl_find_1500_dirs_one_private", "perl File::Find over 1,500 directories (nobody)",
             lambda b: ["/usr/bin/perl", f"{b}/count.pl", f"{b}/tree"], perl_find_dir_unreadable,
             PROBES_OPEN, "EACCES", lambda b: f"{b}/tree/d21/s1066", unprivileged=True,
             description="one directory is root's 0700: its openat(O_DIRECTORY) fails EACCES, find goes on"),
    Scenario("log_rotation_backup_is_dir", "python3 RotatingFileHandler, 3,000 records",
             lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/logs/app.log"], rotation_backup_is_dir,
             frozenset({"unlink", "unlinkat"}), "EISDIR", lambda b: f"{b}/logs/app.log.3",
             description="app.log.1 is a directory: rollovers move it down until removing app.log.3 fails "
             "EISDIR (logging prints its error and goes on)"),
    # no errno
    Scenario("records_truncated_short_read", "C reader of a record file",
             lambda b: [f"{b}/reader", f"{b}/data.bin"], truncated_records, frozenset({"write"}), None,
             lambda b: STDERR, description="the file ends after 1,300 of 2,000 records: read returns 0 early, "
             "the reader writes 'truncated' to stderr and exits 1; no call fails"),
    Scenario("worker_killed_by_sigsegv", "python3 runs a C worker per job",
             lambda b: [PY3, "-S", f"{b}/pool.py", f"{b}/worker", f"{b}/job_a.conf", f"{b}/job_b.conf",
                        f"{b}/job_c.conf"],
             worker_segfault, END, None, lambda b: NO_PATH,
             description="job_b.conf has a line without '=': the worker dies of SIGSEGV after reading it "
             "(strace: +++ killed by SIGSEGV +++); no call fails"),
    Scenario("index_truncated_sigbus", "C reader mmaps an index of the size its header says",
             lambda b: [f"{b}/indexer", f"{b}/index.bin"], index_truncated_sigbus, END, None,
             lambda b: NO_PATH, description="the index was cut at 64 KiB: touching the mapping past the end "
             "kills the reader with SIGBUS; no call fails"),
    Scenario("pipeline_middle_filter_sigsegv", "sh: sort in.txt | C filter | wc -l",
             lambda b: _sh(b, "/usr/bin/sort {b}/in.txt | {b}/filter | /usr/bin/wc -l"), filter_segfault, END, None,
             lambda b: NO_PATH, description="one line has no '=': the middle stage dies of SIGSEGV (strace: +++ "
             "killed by SIGSEGV +++); sort's write to it fails EPIPE after"),
    Scenario("oom_killed_in_memory_cgroup", "sh joins a memory cgroup; python3 allocates 120 MiB",
             lambda b: ["/bin/sh", "-c", f"echo $$ > {_memcg()}/cgroup.procs && exec {PY3} -S {b}/alloc.py 120"],
             oom_in_cgroup, END, None, lambda b: NO_PATH, teardown=_memcg_teardown,
             description="the container's limit is 40 MiB: the OOM killer sends SIGKILL while the buffer is "
             "zeroed (strace: +++ killed by SIGKILL +++); no call fails"),
    Scenario("health_grep_q_exit_1", "grep -q '^status: ready$' state",
             lambda b: ["/usr/bin/grep", "-q", "^status: ready$", f"{b}/state"], health_state,
             frozenset({"read", "close"}), None, lambda b: f"{b}/state",
             description="the service is degraded: where the good runs' grep -q exits after its first read (a "
             "match), strace shows the bad run's reading on to the end (read = 0) and closing the file, then "
             "exit_group(1); nothing written, no call fails"),
    # hidden among routine errors
    Scenario("pythonpath20_config_renamed", "python3 -m jobmain with PYTHONPATH of 20 directories",
             _pythonpath20_argv, pythonpath20_config_renamed, PROBES_OPEN, "ENOENT", lambda b: f"{b}/etc/job.ini",
             description="after ~80 import-path misses, the config (renamed by an upgrade) fails ENOENT"),
    Scenario("pythonpath20_module_missing", "python3 -m jobmain with PYTHONPATH of 20 directories",
             _pythonpath20_argv, pythonpath20_module_missing, frozenset({"write"}), None, lambda b: STDERR,
             description="jobmath.py was left out: the import system's directory listings (no per-file stat) "
             "find it nowhere, python writes ModuleNotFoundError to stderr; no call fails"),
    Scenario("perl_inc20_module_unreadable", "perl -I x20 -MJob::Util -MJob::Conf (nobody)",
             _perl_inc20_argv, perl_inc20_module_unreadable, PROBES_OPEN, "EACCES",
             lambda b: f"{b}/p17/Job/Conf.pm", unprivileged=True,
             description="Job/Conf.pm in the 18th of 20 directories is root's 0600: openat EACCES among the "
             "stat ENOENTs of the search"),
    Scenario("ld20_input_missing", "a C job with LD_LIBRARY_PATH of 20 directories",
             _ld20_argv, ld20_input_missing, PROBES_OPEN, "ENOENT", lambda b: f"{b}/data/input.csv",
             description="ld.so's misses in 18 directories, then the job's input is missing: ENOENT"),
    # calls and errnos no set has used
    Scenario("lease_refused_writer_open", "C cache reader takes a read lease",
             lambda b: [f"{b}/leaser", f"{b}/cache/data.bin"], lease_writer_holds, frozenset({"fcntl"}), "EAGAIN",
             lambda b: f"{b}/cache/data.bin", teardown=BACKGROUND.stop,
             description="a refresh job holds the file open for writing: fcntl(F_SETLEASE, F_RDLCK) fails EAGAIN"),
    Scenario("pipe_size_over_max_nobody", "python3 grows a pipe to the config's size (nobody)",
             lambda b: [PY3, "-S", f"{b}/pipe.py", f"{b}/pipe.conf"], pipe_size_over_max, frozenset({"fcntl"}),
             "EPERM", lambda b: NO_PATH, unprivileged=True,
             description="4 MiB is over fs.pipe-max-size (1 MiB): fcntl(F_SETPIPE_SZ) fails EPERM"),
    Scenario("dd_fsync_into_fifo", "sh: md5sum out & dd of=out conv=fsync",
             lambda b: _sh(b, DD_FSYNC_SH), dd_fsync_fifo, frozenset({"fsync", "fdatasync"}), "EINVAL",
             lambda b: f"{b}/out", description="the output is a FIFO now: dd's fsync fails EINVAL"),
    Scenario("jit_blob_noexec_mount", "C program maps its JIT blob PROT_EXEC",
             lambda b: [f"{b}/jit", f"{b}/cache/blob.bin"], blob_on_noexec, frozenset({"mmap"}), "EPERM",
             lambda b: f"{b}/cache/blob.bin", teardown=umount_after("cache"),
             description="the cache is on a noexec mount: mmap(PROT_EXEC) fails EPERM"),
    Scenario("readlink_current_is_dir", "readlink current",
             lambda b: ["/usr/bin/readlink", f"{b}/current"], current_not_symlink,
             frozenset({"readlink", "readlinkat"}), "EINVAL", lambda b: f"{b}/current",
             description="a deploy copied the release instead of linking it: readlink fails EINVAL"),
    Scenario("status_file_is_socket", "wc -l run/status",
             lambda b: ["/usr/bin/wc", "-l", f"{b}/run/status"], status_is_socket, PROBES_OPEN, "ENXIO",
             lambda b: f"{b}/run/status", description="the path is a unix socket now: openat fails ENXIO"),
    Scenario("exec_tool_still_open_for_write", "sh runs bin/tool",
             lambda b: _sh(b, "{b}/bin/tool"), tool_open_for_writing, frozenset({"execve", "execveat"}), "ETXTBSY",
             lambda b: f"{b}/bin/tool", teardown=BACKGROUND.stop,
             description="an unfinished upload holds the tool open for writing: execve fails ETXTBSY"),
    Scenario("bind_to_device_missing", "python3 binds its socket to the config's interface",
             lambda b: [PY3, "-S", f"{b}/net.py", f"{b}/net.conf"], bind_device_missing,
             frozenset({"setsockopt"}), "ENODEV", lambda b: NO_PATH,
             description="ib0 does not exist here: setsockopt(SO_BINDTODEVICE) fails ENODEV"),
    Scenario("alarm_timer_no_cap", "C timer with the config's clock (nobody)",
             lambda b: [f"{b}/timer", f"{b}/clock.conf"], alarm_timer_nobody, frozenset({"timerfd_create"}),
             "EPERM", lambda b: NO_PATH, unprivileged=True,
             description="CLOCK_BOOTTIME_ALARM needs CAP_WAKE_ALARM: timerfd_create fails EPERM"),
    Scenario("inotify_spool_renamed", "python3 watches the spool directory of its config",
             lambda b: [PY3, "-S", f"{b}/watch.py", f"{b}/watch.conf"], spool_renamed,
             frozenset({"inotify_add_watch"}), "ENOENT", lambda b: f"{b}/spool/incoming",
             description="the spool directory was renamed: inotify_add_watch fails ENOENT"),
    Scenario("tar_noatime_foreign_file", "tar --atime-preserve=system -cf (nobody)",
             lambda b: ["/usr/bin/tar", "--atime-preserve=system", "-cf", f"{b}/out/backup.tar", "-C", f"{b}/src",
                        "data"],
             tar_noatime_foreign, PROBES_OPEN, "EPERM", lambda b: f"{b}/src/data/f00012.txt", unprivileged=True,
             description="one file is root's: open with O_NOATIME by a non-owner fails EPERM"),
    Scenario("override_double_close", "C config loader with an optional override",
             lambda b: [f"{b}/conf", f"{b}/base.conf", f"{b}/override.conf"], override_double_close,
             frozenset({"close"}), "EBADF", lambda b: NO_PATH,
             description="the override path closes the base config twice: close fails EBADF"),
    Scenario("shard_empty_mid_loop", "C job reads the header line of 2,000 shards",
             lambda b: [f"{b}/headers", f"{b}/shards"], shard_empty_mid, frozenset({"write"}), None,
             lambda b: STDERR, description="shard 1,400 is empty: fgets gets EOF, the job writes 'empty shard' "
             "to stderr and exits 1; no call fails"),
    Scenario("sqlite_duplicate_key_mid_load", "sqlite3 jobs.db < load.sql (600 inserts)",
             lambda b: _sh(b, "exec /usr/bin/sqlite3 {b}/jobs.db < {b}/load.sql"), sqlite_duplicate_key,
             frozenset({"write"}), None, lambda b: STDERR,
             description="insert 418 repeats a key: sqlite3 writes 'UNIQUE constraint failed' to stderr, "
             "goes on, exits 1; no call fails"),
    Scenario("passwd_unreadable_id", "unshare -m: a private /etc/passwd; id -un (as nobody)",
             lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", PASSWD_SH.format(b=b)], passwd_unreadable,
             PROBES_OPEN, "EACCES", lambda b: "/etc/passwd",
             description="the image's passwd is 0600: NSS's openat of /etc/passwd fails EACCES amid its probing"),
    Scenario("threadpool_nofile", "prlimit --nofile=$(cat limit) python3 ThreadPoolExecutor(6), 15 files a task",
             lambda b: _sh(b, "exec /usr/bin/prlimit --nofile=$(/usr/bin/cat {b}/limit) {py} -S {b}/pool.py {b}/data"),
             pool_nofile, PROBES_OPEN, "EMFILE", lambda b: f"{b}/data/f*.txt",
             description="six threads holding 15 files each at once under a limit of 40: openat fails EMFILE"),
    # pipelines
    Scenario("pipeline_middle_awk_missing", "sh: sort in.txt | mawk -f report.awk | wc -l",
             lambda b: _sh(b, "/usr/bin/sort {b}/in.txt | /usr/bin/mawk -f {b}/report.awk | /usr/bin/wc -l"),
             pipeline_awk_missing, PROBES_OPEN, "ENOENT", lambda b: f"{b}/report.awk",
             description="the middle stage's program is missing: mawk's openat ENOENT; sort's EPIPE follows"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run, or the long loop of one (tests/test_real_programs_eighth.py
# keeps to about a minute and a half).
BENCH_ONLY = frozenset({"mawk_3000_args_dangling", "install_200_fills_mount", "mkdir_3000_out_of_inodes",
                        "perl_find_1500_dirs_one_private", "index_truncated_sigbus", "perl_inc20_module_unreadable",
                        "ld20_input_missing", "shard_empty_mid_loop"})


# --- good vs good: run-to-run noise -------------------------------------------------------------
def _scan_quiet(base: Path, run: int) -> None:
    write(base / "scan.py", SCAN_PY)
    _many_files(base / "data", 3000, seed=run)  # contents vary, names do not


def _xargs_quiet(base: Path, run: int) -> None:
    _many_files(base / "data", 4000, seed=run)
    write(base / "list.txt", "".join(f"{base}/data/f{i:05d}.txt\n" for i in range(4000)))


def _rotation_quiet(base: Path, run: int) -> None:
    write(base / "job.py", ROTATE_PY.replace("3000", str((2700, 3000, 3300)[run % 3])))
    (base / "logs").mkdir()


def _split_quiet(base: Path, run: int) -> None:
    write(base / "input", SPLIT_INPUT)
    (base / "mnt").mkdir()  # a plain directory: the good-vs-good cases have no teardown to unmount


def _pythonpath_quiet(base: Path, run: int) -> None:
    _pythonpath20(base, value=random.randint(1, 9))


def _perl_quiet(base: Path, run: int) -> None:
    _perl_inc20(base)


def _ld_quiet(base: Path, run: int) -> None:
    _ld20(base)


def _lease_quiet(base: Path, run: int) -> None:
    lease_writer_holds(base, False)
    if run % 2:  # another reader has it open: read leases coexist with readers
        BACKGROUND.start([PY3, "-S", "-c", HOLD_PY, f"{base}/cache/data.bin", f"{base}/held", "r"])
        _wait_for(base / "held")


def _dd_quiet(base: Path, run: int) -> None:
    write(base / "in", "payload line\n" * (1500, 2000, 2500)[run % 3])
    write(base / "out", "payload line\n" * 2000)


def _pool_quiet(base: Path, run: int) -> None:
    worker_segfault(base, False)
    for j in ("a", "b", "c"):
        write(base / f"job_{j}.conf", "".join(f"k{i}={random.randint(0, 99)}\n" for i in range(random.randint(2, 9))))


def _pipeline_quiet(base: Path, run: int) -> None:
    pipeline_awk_missing(base, False)
    rnd = random.Random(run)
    write(base / "in.txt", "".join(f"host{rnd.randint(0, 40):02d} {rnd.randint(0, 999)}\n"
                                   for _ in range(rnd.randint(2000, 4000))))


def _xargs_p_quiet(base: Path, run: int) -> None:
    _many_files(base / "data", 1200, seed=run)


def _mawk_quiet(base: Path, run: int) -> None:
    _many_files(base / "in", 3000, seed=run)


XARGS_P_SH = ("/usr/bin/ls {b}/data | /usr/bin/xargs -P 3 -n 400 -I@@ /bin/sh -c 'exec /usr/bin/cat {b}/data/@@' "
              "> /dev/null")
RECORDS_SH = "for f in {b}/r1.bin {b}/r2.bin {b}/r3.bin; do {b}/reader $f || exit 1; done"


CAS_PY = ("import hashlib, os, sys, time\n"
          "root = sys.argv[1]\n"
          "for i in range(400):\n"
          "    blob = f'{i} {time.time_ns()}'.encode()\n"
          "    h = hashlib.sha256(blob).hexdigest()\n"
          "    os.makedirs(os.path.join(root, h[:2]), exist_ok=True)\n"
          "    with open(os.path.join(root, h[:2], h[2:]), 'wb') as f:\n"
          "        f.write(blob)\n"
          "print(len(os.listdir(root)), 'fan-out directories')\n")


def _cas_quiet(base: Path, run: int) -> None:
    write(base / "cas.py", CAS_PY)
    (base / "store").mkdir()


def _xargs_test_quiet(base: Path, run: int) -> None:
    (base / "parts").mkdir()
    for i in range(60):  # every third part is empty: `test -s` fails for it in every run
        write(base / "parts" / f"p{i:03d}", "" if i % 3 == 0 else f"part {i}\n")


def _records_quiet(base: Path, run: int) -> None:
    _cc(base, "reader", READER_C)
    for i in (1, 2, 3):  # record counts vary run to run; every file is whole
        n = random.randint(500, 2500)
        (base / f"r{i}.bin").write_bytes(_records(n, n))


QUIET_EIGHTH: list[NoAnomalyCase] = [
    NoAnomalyCase("scan_3000_contents_vary", _scan_argv, _scan_quiet,
                  description="3,000 files read in order; their contents differ run to run"),
    NoAnomalyCase("xargs_cat_4000_quiet", lambda b: ["/usr/bin/xargs", "-a", f"{b}/list.txt", "/usr/bin/cat"],
                  _xargs_quiet, description="xargs cat over 4,000 files (two cat processes)"),
    NoAnomalyCase("mawk_3000_args_quiet",
                  lambda b: _sh(b, "exec /usr/bin/mawk 'FNR == 1 {{ n++ }} END {{ print n }}' {b}/in/*"),
                  _mawk_quiet, description="mawk over 3,000 arguments"),
    NoAnomalyCase("log_rotation_varying_volume", lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/logs/app.log"],
                  _rotation_quiet, description="2,700-3,300 records: 8-10 rollovers, the backups removed and renamed"),
    NoAnomalyCase("split_chunks_quiet",
                  lambda b: ["/usr/bin/split", "-b", "16k", "-a", "3", f"{b}/input", f"{b}/mnt/part-"],
                  _split_quiet, description="split into 64 chunks on a 2 MiB tmpfs"),
    NoAnomalyCase("pythonpath20_quiet", _pythonpath20_argv, _pythonpath_quiet,
                  description="four modules found in the 5th-20th of 20 PYTHONPATH directories"),
    NoAnomalyCase("perl_inc20_quiet", _perl_inc20_argv, _perl_quiet,
                  description="perl -I x20: modules in the 6th and 18th directories"),
    NoAnomalyCase("ld20_quiet", _ld20_argv, _ld_quiet,
                  description="ld.so searches 20 LD_LIBRARY_PATH directories (and hwcaps subdirectories)"),
    NoAnomalyCase("lease_with_other_readers", lambda b: [f"{b}/leaser", f"{b}/cache/data.bin"], _lease_quiet,
                  description="a read lease, in some runs beside another reader"),
    NoAnomalyCase("dd_fsync_regular_file", lambda b: _sh(b, DD_FSYNC_SH), _dd_quiet,
                  description="dd conv=fsync to a regular file a racing md5sum reads; input sizes vary"),
    NoAnomalyCase("worker_pool_configs_vary",
                  lambda b: [PY3, "-S", f"{b}/pool.py", f"{b}/worker", f"{b}/job_a.conf", f"{b}/job_b.conf",
                             f"{b}/job_c.conf"],
                  _pool_quiet, description="three C workers over configs of 2-9 lines"),
    NoAnomalyCase("pipeline_sort_awk_wc_quiet",
                  lambda b: _sh(b, "/usr/bin/sort {b}/in.txt | /usr/bin/mawk -f {b}/report.awk | /usr/bin/wc -l"),
                  _pipeline_quiet, description="sort | mawk | wc over 2,000-4,000 lines (pipe chunks vary)"),
    NoAnomalyCase("xargs_p3_cat_order", lambda b: _sh(b, XARGS_P_SH), _xargs_p_quiet,
                  description="xargs -P3 runs 1,200 cat children, finishing in varying order"),
    NoAnomalyCase("content_addressed_store", lambda b: [PY3, "-S", f"{b}/cas.py", f"{b}/store"], _cas_quiet,
                  description="400 blobs under store/<sha[:2]>/<sha[2:]>: names differ every run and so does which "
                  "fan-out directory makedirs finds already there (mkdir EEXIST)"),
    NoAnomalyCase("xargs_p4_children_fail_in_any_order",
                  lambda b: _sh(b, "cd {b}/parts && /usr/bin/ls | /usr/bin/xargs -P 4 -n 1 /usr/bin/test -s; "
                                "echo status $?"),
                  _xargs_test_quiet, description="xargs -P4 runs test -s on 60 parts; the 20 empty ones exit 1, "
                  "finishing in a different order each run"),
    NoAnomalyCase("record_files_vary", lambda b: _sh(b, RECORDS_SH), _records_quiet,
                  description="the C reader over three whole record files of 500-2,500 records"),
]

QUIET_BENCH_ONLY = frozenset({"scan_3000_contents_vary", "xargs_cat_4000_quiet", "mawk_3000_args_quiet",
                              "split_chunks_quiet", "perl_inc20_quiet", "ld20_quiet", "pipeline_sort_awk_wc_quiet",
                              "xargs_p3_cat_order", "record_files_vary"})


def quiet_teardown() -> None:
    """Stop what the cases started."""
    BACKGROUND.stop()

