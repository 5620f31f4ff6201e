"""A thirtieth set of real programs with one real fault each: **concurrency and timing** --
installed programs whose runs interleave differently every time, because they run workers
(threads or child processes) whose system calls the scheduler orders anew in each run:

- **parallel fan-out**: ``xargs -0 -P4 -n2 gzip -k`` (four gzip children at once), ``make -j4``
  (four recipe shells at once), ``ninja -j4`` (the same, ninja's way), a shell pipeline of five
  stages (cut | sort | uniq -c | sort -rn | head), ``split -n l/4 --filter`` (a filter shell
  and gzip per chunk);
- **threaded compressors and sorters**: ``sort --parallel=2 -S 256K -T`` (sort's threads and
  the temporaries it spills), ``xz -T2 --block-size`` (two encoder threads), ``pigz -p 2`` (as
  nobody: a reader and two deflate threads), ``tar -I 'zstd -T2'`` (tar and its compressor
  child);
- **process trios and Python pools**: ``rsync -a`` (as nobody: sender, generator, receiver),
  ``python3 -S`` with a ``multiprocessing.Pool`` of three forked workers, and with four pool
  workers contending for an O_EXCL lock file (EEXIST retries in the good runs too);
- **readers that exit early**: ``cut | head -3`` and ``cat | grep -m2`` in report scripts, whose
  writers' EPIPE (and SIGPIPE) is a race the good runs lose or win.

Faults (``t30_`` cases): a gzip output left by an interrupted earlier run (gzip's openat
O_EXCL EEXIST, in one of xargs's children), sort's temporary directory replaced by a file
(openat of TMP/sortXXXXXX ENOTDIR), a "current" symlink made to point at itself (xz's openat
ELOOP), a read-only output volume (split's filter shell's openat EROFS; ninja's recipe shell's
openat EROFS; the early-exit pipelines' redirection openat EROFS), a source directory
recreated root:0755 (pigz's openat of the .gz EACCES, as nobody), an output directory replaced
by a file (make's stat or recipe shell's openat ENOTDIR), an archive path that a botched
restore made a directory (tar's child's creat/openat EISDIR), a shard directory not made (a
pool worker's openat ENOENT), a destination recreated as root (rsync's receiver's mkstemp
openat EACCES, as nobody), a report path made a symlink loop (the five-stage pipeline's shell
redirection openat ELOOP), a report directory not made, after a racing pipeline (sh's openat
ENOENT), a lock file a killed worker left (the workers' openat EEXIST that never succeeds).

Noise cases (``QUIET_THIRTIETH``) are good runs alone: the order of the workers' calls, the
temporaries' random names, the threads' count of reads and futex waits, make -j4's mkdir -p
races (EEXIST), lock file retries, futures polled with a timeout, background shell jobs,
rsync's process trio and the early exits' EPIPE are what differ between them.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from .catalog import mount_tmpfs, umount, write
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
PY3 = "/usr/bin/python3"
NOBODY_UID = 65534


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


# --- the data every case works on: a service's access logs ------------------------------------------
_PATHS = ["/", "/api/items", "/api/items/42", "/login", "/static/app.js", "/static/app.css", "/health",
          "/api/orders", "/api/orders/7/lines", "/search?q=disk"]


def _log_text(seed: int, lines: int) -> str:
    rnd = random.Random(seed)
    return "".join(
        f"10.0.{rnd.randrange(256)}.{rnd.randrange(256)} {rnd.choice(_PATHS)} "
        f"{rnd.choice((200, 200, 200, 304, 404, 500))} {rnd.randrange(40, 90000)} "
        f"ua-{rnd.randrange(30)} {seed:02d}-{i:07d}\n" for i in range(lines))


_CACHE: dict[tuple[int, int], str] = {}


def _logs(base: Path, n: int = 8, lines: int = 6000, big: int = 0, mode: int = 0o644) -> None:
    """base/src/app-N.log (n of them) and, when `big`, base/src/big.log of `big` lines: the same
    bytes every run."""
    _dirs(base, "src")
    for i in range(1, n + 1):
        key = (i, lines)
        if key not in _CACHE:
            _CACHE[key] = _log_text(i, lines)
        write(base / "src" / f"app-{i}.log", _CACHE[key], mode)
    if big:
        key = (0, big)
        if key not in _CACHE:
            _CACHE[key] = _log_text(0, big)
        write(base / "src" / "big.log", _CACHE[key], mode)


# --- xargs -0 -P4 -n2 gzip -k --------------------------------------------------------------------------
def _xargs_argv(b: Path) -> list[str]:
    return ["/usr/bin/xargs", "-0", "-P4", "-n2", "-a", f"{b}/list", "/usr/bin/gzip", "-k", "-6"]


def xargs_gzip_stale_output(base: Path, bad: bool) -> None:
    _logs(base)
    write(base / "list", "".join(f"{base}/src/app-{i}.log\0" for i in range(1, 9)))
    if bad:  # the job was killed mid-run yesterday: one .gz stayed behind
        write(base / "src" / "app-5.log.gz", "")


# --- sort --parallel=2 -S 256K -T TMP --------------------------------------------------------------------
def _sort_argv(b: Path) -> list[str]:
    return ["/usr/bin/sort", "--parallel=2", "-S", "256K", "-T", f"{b}/tmp", "-t", " ", "-k2,2", "-k1,1",
            "-o", f"{b}/out/by-path.log", f"{b}/src/big.log"]


def sort_tmpdir_is_a_file(base: Path, bad: bool) -> None:
    _logs(base, n=0, big=40000)
    _dirs(base, "out")
    if bad:  # a misconfigured job wrote its log to the path of the sort's scratch directory
        write(base / "tmp", "scratch\n")
    else:
        _dirs(base, "tmp")


# --- xz -T2 -k (a "current" link) ------------------------------------------------------------------------
def _xz_argv(b: Path) -> list[str]:
    return ["/usr/bin/xz", "-T2", "--block-size=262144", "-3", "-k", f"{b}/src/big.log", f"{b}/src/current"]


def xz_current_link_loop(base: Path, bad: bool) -> None:
    _logs(base, n=2, big=30000)
    # the rotation points src/current at the live log; the bad host's rotation made it point at itself
    os.symlink("current" if bad else "app-2.log", base / "src" / "current")


# --- zstd -T2 -o OUT -------------------------------------------------------------------------------------
def _zstd_argv(b: Path) -> list[str]:
    return ["/usr/bin/zstd", "-q", "-T2", "-3", "-B262144", f"{b}/src/big.log", "-o", f"{b}/out/big.log.zst"]


def zstd_output_read_only(base: Path, bad: bool, mount: bool = True) -> None:
    _logs(base, n=0, big=30000)
    if mount:
        mount_tmpfs(base / "out", "16m", readonly=bad)


# --- pigz -p 2 -k, as nobody -------------------------------------------------------------------------------
def _pigz_argv(b: Path) -> list[str]:
    return ["/usr/bin/pigz", "-p", "2", "-b", "128", "-k", f"{b}/src/big.log"]


def pigz_src_dir_recreated_root(base: Path, bad: bool) -> None:
    _logs(base, n=0, big=30000)
    # the agent compresses in place in a directory it owns; the bad host's restore recreated it root:0755
    if not bad:
        os.chown(base / "src", NOBODY_UID, NOBODY_UID)


# --- make -j4 -----------------------------------------------------------------------------------------------
MAKEFILE = """SRC := $(wildcard src/app-*.log)
OUT := $(patsubst src/%.log,out/%.summary,$(SRC))
all: $(OUT)
out/%.summary: src/%.log
\tcut -d' ' -f2,3 $< | sort | uniq -c | sort -rn > $@
.PHONY: all
"""


def _make_argv(b: Path) -> list[str]:
    return ["/usr/bin/make", "-j4", "-s", "-C", str(b)]


def make_outdir_is_a_file(base: Path, bad: bool) -> None:
    _logs(base, n=8, lines=3000)
    write(base / "Makefile", MAKEFILE)
    if bad:  # a stray `cp summary out` made out a file
        write(base / "out", "summary\n")
    else:
        _dirs(base, "out")


# --- ninja -j4 ------------------------------------------------------------------------------------------------
def _ninja_build() -> str:
    return ("rule gz\n  command = gzip -1 -c $in > $out\n\n"
            + "".join(f"build out/app-{i}.log.gz: gz src/app-{i}.log\n" for i in range(1, 9))
            + "default " + " ".join(f"out/app-{i}.log.gz" for i in range(1, 9)) + "\n")


def _ninja_argv(b: Path) -> list[str]:
    return ["/usr/bin/ninja", "-j4", "-C", str(b)]


def ninja_outputs_read_only(base: Path, bad: bool) -> None:
    _logs(base, n=8, lines=3000)
    write(base / "build.ninja", _ninja_build())
    mount_tmpfs(base / "out", "16m", readonly=bad)


# --- tar -I 'zstd -T2' -cf ------------------------------------------------------------------------------------
def _tar_argv(b: Path) -> list[str]:
    return ["/usr/bin/tar", "-I", "zstd -T2 -3", "-cf", f"{b}/backup/logs.tar.zst", "-C", str(b), "src"]


def tar_archive_path_is_dir(base: Path, bad: bool) -> None:
    _logs(base, n=6, lines=4000)
    _dirs(base, "backup")
    if bad:  # a botched restore made the archive's name a directory
        _dirs(base, "backup/logs.tar.zst")


# --- split -n l/4 --filter ------------------------------------------------------------------------------------
def _split_argv(b: Path) -> list[str]:
    return ["/usr/bin/split", "-n", "l/4", "--filter=/usr/bin/gzip -1 > $FILE.gz", f"{b}/src/big.log",
            f"{b}/out/part-"]


def split_output_read_only(base: Path, bad: bool) -> None:
    _logs(base, n=0, big=30000)
    mount_tmpfs(base / "out", "16m", readonly=bad)


# --- python3 multiprocessing.Pool -------------------------------------------------------------------------
POOL_PY = """import multiprocessing, sys
base = sys.argv[1]
def count(i):
    hits = {}
    with open(f'{base}/src/app-{i}.log') as fh:
        for line in fh:
            code = line.split()[2]
            hits[code] = hits.get(code, 0) + 1
    with open(f'{base}/out/shard-{i}.txt', 'w') as out:
        for code in sorted(hits):
            out.write(f'{code} {hits[code]}\\n')
    return i, sum(hits.values())
if __name__ == '__main__':
    ctx = multiprocessing.get_context('fork')
    with ctx.Pool(3) as pool:
        total = sum(n for _, n in pool.map(count, range(1, 9), chunksize=1))
    print('lines', total)
"""


def _pool_argv(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/pool.py", str(b)]


def pool_shard_dir_missing(base: Path, bad: bool) -> None:
    _logs(base, n=8, lines=3000)
    write(base / "pool.py", POOL_PY)
    if not bad:  # the bad host's deploy did not make the shard directory
        _dirs(base, "out")


# --- rsync -a, as nobody ---------------------------------------------------------------------------------------
def _rsync_argv(b: Path) -> list[str]:
    return ["/usr/bin/rsync", "-a", f"{b}/src/", f"{b}/dst/"]


def rsync_dest_recreated_root(base: Path, bad: bool) -> None:
    _logs(base, n=6, lines=3000)
    _dirs(base, "dst")
    os.chown(base / "src", NOBODY_UID, NOBODY_UID)
    if not bad:  # the bad host's restore recreated the mirror directory root:0755
        os.chown(base / "dst", NOBODY_UID, NOBODY_UID)


# --- a five-stage shell pipeline ---------------------------------------------------------------------------------
def _pipeline_argv(b: Path) -> list[str]:
    return _sh(f"cat {b}/src/app-*.log | cut -d' ' -f2 | sort | uniq -c | sort -rn | head -5 > {b}/out/top.txt")


def pipeline_report_link_loop(base: Path, bad: bool) -> None:
    _logs(base, n=6, lines=4000)
    _dirs(base, "out")
    if bad:  # a "latest report" link made to point at itself
        os.symlink("top.txt", base / "out" / "top.txt")


# --- a pipeline whose reader exits early, into a read-only volume -------------------------------------------
def _early_exit_fault_argv(b: Path) -> list[str]:
    return _sh(f"cut -d' ' -f1 {b}/src/app-1.log | head -3 > {b}/out/first-clients; "
               f"cat {b}/src/app-*.log | grep -m2 ' 500 ' > {b}/out/first-500s")


def early_exit_output_read_only(base: Path, bad: bool) -> None:
    _logs(base, n=4, lines=6000)
    mount_tmpfs(base / "out", "16m", readonly=bad)


# --- a racing pipeline first, then a report into a directory not made --------------------------------------
def _race_then_argv(b: Path) -> list[str]:
    return _sh(f"cut -d' ' -f1 {b}/src/app-1.log | head -3 > {b}/out/first-clients; "
               f"cut -d' ' -f2,3 {b}/src/app-2.log | sort | uniq -c > {b}/report/by-path")


def race_then_report_dir_missing(base: Path, bad: bool) -> None:
    _logs(base, n=2, lines=6000)
    _dirs(base, "out")
    if not bad:  # the bad host's deploy did not make the report directory
        _dirs(base, "report")


# --- python3: four forked workers appending to one log under an O_EXCL lock file ---------------------------
LOCKFILE_PY = """import multiprocessing, os, sys, time
base = sys.argv[1]
lock, log = f'{base}/spool/.lock', f'{base}/spool/events.log'
def locked(fn):
    for _ in range(400):  # 0.4 s of 1 ms retries, then give up: the lock is stale
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            time.sleep(0.001)
            continue
        try:
            os.write(fd, b'%d\\n' % os.getpid())
            return fn()
        finally:
            os.close(fd)
            os.unlink(lock)
    raise TimeoutError(f'{lock}: held by a process that did not let go')
def append(i):
    with open(f'{base}/src/app-{i}.log', 'rb') as fh:
        lines = fh.readlines()[:200]
    def put():
        with open(log, 'ab') as out:
            out.writelines(lines)
    for k in range(0, 200, 50):
        locked(put)
    return i
if __name__ == '__main__':
    with multiprocessing.get_context('fork').Pool(4) as pool:
        print(sorted(pool.map(append, range(1, 9), chunksize=1)))
"""


def _lockfile_argv(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/append.py", str(b)]


def lockfile_stale_lock(base: Path, bad: bool) -> None:
    _logs(base, n=8, lines=600)
    _dirs(base, "spool")
    write(base / "append.py", LOCKFILE_PY)
    if bad:  # a worker killed -9 yesterday left its lock file
        write(base / "spool" / ".lock", "31337\n")


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


REAL_THIRTIETH: list[Scenario] = [
    Scenario("t30_xargs_parallel_gzip_stale_output", "xargs -0 -P4 -n2 gzip -k (four gzip children at once)",
             _xargs_argv, xargs_gzip_stale_output, OPEN, "EEXIST", lambda b: f"{b}/src/app-5.log.gz",
             description="four parallel gzip children, one meeting a .gz an interrupted earlier run left"),
    Scenario("t30_sort_parallel_tmpdir_is_a_file", "sort --parallel=2 -S 256K -T TMP (spilling temporaries)",
             _sort_argv, sort_tmpdir_is_a_file, OPEN, "ENOTDIR", lambda b: f"{b}/tmp/sort*",
             description="a two-thread sort spilling to a scratch directory that a job's log replaced by a file"),
    Scenario("t30_xz_threads_current_link_loop", "xz -T2 --block-size -k (two encoder threads)", _xz_argv,
             xz_current_link_loop, OPEN, "ELOOP", lambda b: f"{b}/src/current",
             description="a threaded xz of a log and its current link, which a rotation made point at itself"),
    Scenario("t30_pigz_src_dir_recreated_root", "pigz -p 2 -k (as nobody: a reader and deflate threads)",
             _pigz_argv, pigz_src_dir_recreated_root, OPEN, "EACCES", lambda b: f"{b}/src/big.log.gz",
             unprivileged=True,
             description="an agent's threaded pigz compressing in place in a directory a restore made root's"),
    Scenario("t30_make_j4_outdir_is_a_file", "make -j4 (four recipe shells at once)", _make_argv,
             make_outdir_is_a_file, OPEN | STAT, "ENOTDIR", lambda b: f"{b}/out/app-*.summary",
             description="a parallel make whose output directory a stray cp made a file"),
    Scenario("t30_ninja_j4_outputs_read_only", "ninja -j4 (recipe shells running gzip)", _ninja_argv,
             ninja_outputs_read_only, OPEN, "EROFS", lambda b: f"{b}/out/app-*.log.gz", teardown=_umounting("out"),
             description="a parallel ninja build writing its outputs onto a read-only volume"),
    Scenario("t30_tar_zstd_child_archive_is_dir", "tar -I 'zstd -T2' -cf (tar and its compressor child)",
             _tar_argv, tar_archive_path_is_dir, OPEN, "EISDIR", lambda b: f"{b}/backup/logs.tar.zst",
             description="tar with a threaded zstd child creating an archive whose name a restore made a directory"),
    Scenario("t30_split_filter_output_read_only", "split -n l/4 --filter (a gzip per chunk)", _split_argv,
             split_output_read_only, OPEN, "EROFS", lambda b: f"{b}/out/part-*.gz", teardown=_umounting("out"),
             description="split feeding a gzip filter per chunk onto an output volume mounted read-only"),
    Scenario("t30_pool_shard_dir_missing", "python3 -S (multiprocessing.Pool of three forked workers)",
             _pool_argv, pool_shard_dir_missing, OPEN, "ENOENT", lambda b: f"{b}/out/shard-*.txt",
             description="a process pool's workers writing shards into a directory the deploy did not make"),
    Scenario("t30_rsync_dest_recreated_root", "rsync -a (as nobody: sender, generator, receiver)", _rsync_argv,
             rsync_dest_recreated_root, OPEN, "EACCES", lambda b: f"{b}/dst/.app-*", unprivileged=True,
             description="an agent's rsync mirror into a destination a restore recreated as root"),
    Scenario("t30_pipeline_report_link_loop", "sh -c (a five-stage pipeline: cut|sort|uniq|sort|head)",
             _pipeline_argv, pipeline_report_link_loop, OPEN, "ELOOP", lambda b: f"{b}/out/top.txt",
             description="a five-stage report pipeline redirected into a report link that points at itself"),
    Scenario("t30_early_exit_pipeline_output_read_only", "sh -c (cut | head -3, cat | grep -m2: readers exit early)",
             _early_exit_fault_argv, early_exit_output_read_only, OPEN, "EROFS", lambda b: f"{b}/out/first-clients",
             teardown=_umounting("out"),
             description="pipelines whose readers exit early (the writers' EPIPE a race) redirected onto a "
                         "read-only volume"),
    # the fault comes after a pipeline whose writer's EPIPE is a race (see the noise case
    # t30_pipeline_early_exit): the race is in the good runs and in the bad run alike
    Scenario("t30_race_then_report_dir_missing", "sh -c (cut | head -3, then cut | sort | uniq -c > report/)",
             _race_then_argv, race_then_report_dir_missing, OPEN, "ENOENT", lambda b: f"{b}/report/by-path",
             description="a report script whose first pipeline races (head exits early) and whose second "
                         "redirects into a report directory the deploy did not make"),
    # the lock file's openat fails EEXIST in the good runs too (the workers contend for it, a
    # different number of times each run): the bad run's difference is that it never succeeds
    Scenario("t30_lockfile_stale_lock", "python3 -S (four pool workers appending under an O_EXCL lock file)",
             _lockfile_argv, lockfile_stale_lock, OPEN, "EEXIST", lambda b: f"{b}/spool/.lock",
             description="four workers contending for an O_EXCL lock file that a killed worker left behind"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _zstd_pzstd_argv(b: Path) -> list[str]:
    return _sh(f"/usr/bin/zstd -q -T2 -3 -B262144 {b}/src/big.log -o {b}/out/big.zst && "
               f"/usr/bin/pzstd -q -p 2 -3 {b}/src/big.log -o {b}/out/big.pzst && "
               f"/usr/bin/pzstd -q -d -p 2 {b}/out/big.pzst -o {b}/out/big.back && cmp {b}/src/big.log {b}/out/big.back")


def _background_jobs_argv(b: Path) -> list[str]:
    return _sh(f"cd {b} && for i in 1 2 3 4; do (gzip -1 -c src/app-$i.log > out/app-$i.gz; "
               f"sha1sum out/app-$i.gz > out/app-$i.sha1) & done; "
               f"/usr/bin/split -n l/3 --filter='wc -l > $FILE.count' src/app-5.log out/chunk- & wait; "
               "cat out/*.sha1 out/*.count > out/manifest")


MKDIR_RACE_MAKEFILE = """SRC := $(wildcard src/app-*.log)
OUT := $(patsubst src/%.log,out/by-code/%.500,$(SRC)) $(patsubst src/%.log,out/by-path/%.paths,$(SRC))
all: $(OUT)
out/by-code/%.500: src/%.log
\tmkdir -p out/by-code
\tgrep ' 500 ' $< > $@ || true
out/by-path/%.paths: src/%.log
\tmkdir -p out/by-path
\tcut -d' ' -f2 $< | sort -u > $@
.PHONY: all
"""


def _mkdir_race_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _logs(base, n=8, lines=2000)
    write(base / "Makefile", MKDIR_RACE_MAKEFILE)


def _early_exit_argv(b: Path) -> list[str]:
    return _sh(f"cat {b}/src/app-*.log | grep -m2 ' 500 ' > {b}/out/first-500s; "
               f"cut -d' ' -f1 {b}/src/app-1.log | head -3 > {b}/out/first-clients; "
               f"sort -k4,4n {b}/src/app-2.log | head -1 > {b}/out/smallest")


PROGRESS_PY = """import concurrent.futures, hashlib, sys
base = sys.argv[1]
def digest(i):
    h = hashlib.sha256()
    with open(f'{base}/src/app-{i}.log', 'rb') as fh:
        for _ in range(6):
            fh.seek(0)
            while chunk := fh.read(16384):
                h.update(chunk)
    return i, h.hexdigest()
with concurrent.futures.ThreadPoolExecutor(max_workers=3) as ex:
    pending = {ex.submit(digest, i) for i in range(1, 9)}
    done = set()
    while pending:  # a progress line every 2 ms: how many polls time out depends on the threads
        finished, pending = concurrent.futures.wait(pending, timeout=0.002)
        done |= finished
        sys.stderr.write(f'{len(done)}/8\\r')
with open(f'{base}/out/SHA256SUMS', 'w') as out:
    for i, d in sorted(f.result() for f in done):
        out.write(f'{d}  src/app-{i}.log\\n')
"""


def _progress_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _logs(base, n=8, lines=6000)
    _dirs(base, "out")
    write(base / "progress.py", PROGRESS_PY)


def _background_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _logs(base, n=5, lines=4000)
    _dirs(base, "out")


def _sort_noise(base: Path, run: int) -> None:  # noqa: ARG001
    sort_tmpdir_is_a_file(base, False)


def _unmounted(setup):
    """A noise case's runs: the good setup with its output volume a plain directory (the
    harness's fresh_dir unmounts only base itself, a mount under it would stay busy)."""
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        _dirs(base, "out")
        setup(base, False, mount=False)
    return noise


QUIET_THIRTIETH: list[NoAnomalyCase] = [
    NoAnomalyCase("t30_xargs_parallel_gzip", _xargs_argv, _good(xargs_gzip_stale_output),
                  description="four gzip children at once, finishing in a different order each run"),
    NoAnomalyCase("t30_sort_parallel_spill", _sort_argv, _sort_noise,
                  description="sort's two threads and its spilled temporaries (random names)"),
    NoAnomalyCase("t30_xz_two_threads", _xz_argv, _good(xz_current_link_loop),
                  description="xz's two encoder threads and the reader feeding them blocks"),
    NoAnomalyCase("t30_zstd_pzstd_pools", _zstd_pzstd_argv, _unmounted(zstd_output_read_only),
                  description="zstd -T2, pzstd -p 2 and pzstd -d -p 2: worker pools of threads"),
    NoAnomalyCase("t30_background_jobs", _background_jobs_argv, _background_noise,
                  description="four background subshells (gzip, sha1sum) and a split filter, then wait"),
    NoAnomalyCase("t30_rsync_process_trio", lambda b: ["/usr/bin/rsync", "-a", "--delete", f"{b}/src/", f"{b}/dst/"],
                  _good(rsync_dest_recreated_root),
                  description="rsync's sender, generator and receiver: the multiplexed stream read in chunks "
                              "of a different size each run"),
    NoAnomalyCase("t30_python_progress_poll", lambda b: [PY3, "-S", f"{b}/progress.py", str(b)], _progress_noise,
                  description="three hashing threads and a main thread polling their futures with a 2 ms "
                              "timeout: a different number of timed-out waits each run"),
    NoAnomalyCase("t30_make_j4_mkdir_race", _make_argv, _mkdir_race_noise,
                  description="make -j4 recipes racing to mkdir -p the same directories (EEXIST, a different "
                              "child winning each run)"),
    NoAnomalyCase("t30_lockfile_contention", _lockfile_argv, _good(lockfile_stale_lock),
                  description="four pool workers contending for an O_EXCL lock file: EEXIST retries, a "
                              "different number each run"),
    NoAnomalyCase("t30_pipeline_early_exit", _early_exit_argv, _background_noise,
                  description="pipelines whose reader exits early (grep -m, head): the writer's EPIPE and "
                              "SIGPIPE land after a different number of writes"),
]


def quiet_teardown() -> None:
    """What a fault case cut short may leave: its output volume mounted (the harness's exit hook
    will not remove a root with a mount in it). Noise cases mount nothing."""
    for sc in REAL_THIRTIETH:
        umount(ROOT / sc.name / "out")


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
