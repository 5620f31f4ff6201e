"""A fifty-first set of real programs with one real fault each: **a GPU node's epilog after a
training job** -- what the node runs between "the job's last rank exited" and "the node is back in
the pool": the per-rank logs compressed, checksummed and copied to the log-shipping staging area,
a tarball of them packed into the staging tmpfs, the job summary written, the first lines of each
rank's stderr collected for the user's mail, earlier jobs' archives verified before shipping, the
node's own logs rotated (a shell ``mv`` chain, ``savelog``), the job's secrets shredded, its scratch
removed and its GPU locks released -- with the tools an epilog script uses for that on this Debian
host (gzip, b2sum, rsync, tar | lz4, python3, head, zstd -t, mv, savelog, shred, find -delete,
unlink).

Earlier sets ran logging plumbing while a job runs (fortieth: logger, tee -a, savelog of a read-only
directory, logrotate), a training job's checkpoint and log writing (tenth, thirty-seventh) and the
launch files built before a job (fiftieth); none ran the clean-up after a job. Each case's good runs
are jobs that had other numbers of GPUs of the node (4, 8, 2: other rank names, log sizes, job ids),
and the bad run is yet another job (6 GPUs) plus one real fault:

- ``gzip`` of the ranks' logs, one rank's stdout.log made append-only (``chattr +a``) by the site's
  audit wrapper for regulated jobs: the compressed copy is written, the unlink of the original fails
  (unlink EPERM, gzip goes on with the other logs, exit 2);
- ``b2sum`` manifest of the ranks' logs, one rank's stderr.log a directory (its new logging library
  takes the configured path as a directory of per-thread parts): read EISDIR;
- ``rsync -a`` of the ranks' logs to the staging area after the epilog sources the site's limits;
  the bad node's copy has ``ulimit -f 256`` (128 KiB): write EFBIG on rsync's temporary file;
- ``zstd -t`` of the earlier jobs' archives before shipping, the newest one truncated (the node
  rebooted during that job's epilog): no call fails, "premature end" on stderr, exit 1;
- the python3 job summary over the ranks' stats.json, one truncated (the rank was killed while
  writing it): no call fails, the script's "truncated stats" message on stderr, exit 1;
- ``head -n 5`` of each rank's stderr.log as the job's user (nobody), one recreated 0600 by the root
  container runtime's log driver when the rank crashed: openat EACCES;
- ``tar | lz4`` packing the ranks' logs into the node's log staging tmpfs, which the previous job's
  unshipped bundle filled (the shipper was down, 16 KiB left): lz4's write ENOSPC;
- the shell ``mv`` chain rotating epilog.log.N -> N+1, a generation missing (an operator removed
  epilog.log.3 while looking for space): mv's rename ENOENT;
- ``savelog -r old`` of the node's gpu-health.log, ``old`` a link to the archive volume, which is not
  mounted on the bad day (the link dangles): savelog's ``[ ! -d old ]`` stat fails ENOENT (then its
  ``mkdir -p`` meets the link: EEXIST, "could not mkdir", exit 5);
- ``shred -u -z`` of the job's tokens, the secrets directory left bind-mounted read-only by the
  container runtime: openat EROFS;
- ``find scratch -mindepth 1 -delete``, the job's /dev/shm tmpfs still mounted inside its scratch
  (its container runtime died without unmounting): unlinkat EBUSY;
- ``unlink`` of each of the job's GPU locks, one of which the node-health agent turned into its
  drain marker directory while the job ran: unlink EISDIR.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; its data is picked by the run (the setup counts the good runs; the bad run has its
own job).

Noise cases (``QUIET_FIFTYFIRST``): good runs alone, no fault -- ``gzip`` of 2 to 8 ranks' logs (some
stderr empty), ``find -mtime +14 -delete`` pruning 0 to 5 expired archives among recent ones, ``rsync``
of rank trees with and without a core file or a profiler directory, the python3 summary over 2 to 8
ranks (an OOM field only where a rank had one), ``savelog`` with 0 to 4 earlier generations, the
``mv`` chain over 0 to 4 generations and ``find -delete`` of scratch trees of one to three jobs.

No loopback service: the set takes no ports.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

from .files import chown_nobody, mounted_tmpfs, run_quiet, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    argv_in,
    sh_argv,
    unmount_under,
)

STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
OPEN = frozenset({"openat", "open"})
READ = frozenset({"read", "pread64", "readv"})
WRITE = frozenset({"write", "writev", "pwrite64"})
UNLINK = frozenset({"unlink", "unlinkat"})
RMDIR = frozenset({"rmdir", "unlinkat"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})

_TURNS = RunTurns()  # which good run of each case is being set up
GOOD_GPUS = [4, 8, 2]  # the GPUs of the node the good runs' jobs had
BAD_GPUS = 6


# --- the job's per-rank output ----------------------------------------------------------------------------------
def _log_text(kib: int) -> str:
    """About `kib` KiB of a rank's training log (steps, losses, throughput: random numbers)."""
    lines, size, step = [], 0, random.randrange(0, 5000)
    while size < kib * 1024:
        step += 1
        line = (f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] step {step} loss {random.uniform(1.5, 4):.4f} "
                f"lr {random.uniform(1e-5, 3e-4):.3e} tok/s {random.randrange(9000, 16000)} "
                f"grad_norm {random.uniform(0.1, 3):.3f} mem {random.randrange(50000, 79000)}MiB\n")
        lines.append(line)
        size += len(line)
    return "".join(lines)


def _stderr_text(kib: int) -> str:
    if kib == 0:
        return ""
    warn = ["NCCL WARN Call to ibv_reg_mr took long", "UserWarning: TypedStorage is deprecated",
            "W socket.cpp:436 [c10d] The server socket has failed to listen", "torch.distributed: rank retry"]
    lines, size = [], 0
    while size < kib * 1024:
        line = f"{random.choice(warn)} ({token(3)})\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)


def _stats(rank: int, node: str, oom: bool = False) -> dict:
    stats = {"rank": rank, "host": node, "steps": random.randrange(1000, 90000),
             "tokens_per_s": round(random.uniform(9000, 16000), 1), "peak_mem_mib": random.randrange(50000, 80000),
             "exit": 0}
    if oom:
        stats["oom_kills"] = random.randrange(1, 3)
    return stats


def _ranks(base: Path, gpus: int, *, lo: int = 2, hi: int = 120, stderr_empty: float = 0.25,
           oom: bool = False) -> list[Path]:
    """job/ranks/rank-NNN/{stdout.log,stderr.log,stats.json} of a job that had `gpus` GPUs of this
    node (its global ranks: the node's index in the job times 8 plus the local rank); job/id."""
    job = random.randrange(10**6, 10**7)
    node = f"gpu-h100-{random.randrange(1, 400):03d}"
    first = random.randrange(0, 32) * 8
    dirs = []
    for local in range(gpus):
        d = base / "job" / "ranks" / f"rank-{first + local:03d}"
        write_file(d / "stdout.log", _log_text(random.randrange(lo, hi)))
        write_file(d / "stderr.log", _stderr_text(0 if random.random() < stderr_empty else random.randrange(1, 8)))
        write_file(d / "stats.json", json.dumps(_stats(first + local, node, oom=oom and local == 1)) + "\n")
        dirs.append(d)
    write_file(base / "job" / "id", f"{job}\n")
    _age(base / "job", random.randrange(120, 4 * 3600))
    return dirs


def _age(root: Path, seconds: int) -> None:
    """Give the tree under `root` the mtimes of `seconds` ago: the job's output was last written when
    it ended, not the instant before the epilog (rsync -a retouches a directory whose mtime is not the
    source's: created in the same second, it would not, at random)."""
    when = time.time() - seconds
    for dirpath, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.utime(os.path.join(dirpath, name), (when, when))
        os.utime(dirpath, (when, when))


# --- gzip of the ranks' logs; one stdout.log append-only --------------------------------------------------------
GZIP_SH = 'exec /usr/bin/gzip -6 "$1"/job/ranks/*/*.log'


def _clear_attrs(base: Path) -> None:
    """Take the append-only flag off whatever the case set it on (rmtree could not remove it)."""
    if (base / "job").exists():
        subprocess.run(["chattr", "-R", "-a", str(base / "job")], capture_output=True)


def gzip_build(base: Path, bad: bool) -> None:
    dirs = _ranks(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS))
    if bad:  # the site's audit wrapper marks a regulated job's rank logs append-only; rank 2's kept the flag
        run_quiet("chattr", "+a", str(dirs[2] / "stdout.log"))


# --- b2sum manifest of the ranks' logs; one stderr.log a directory ----------------------------------------------
B2SUM_SH = 'exec /usr/bin/b2sum "$1"/job/ranks/*/*.log > "$1/staging/MANIFEST.b2"'


def b2sum_build(base: Path, bad: bool) -> None:
    dirs = _ranks(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS))
    (base / "staging").mkdir()
    if bad:  # rank 3 ran with the new logging library: the configured path is a directory of per-thread parts
        (dirs[3] / "stderr.log").unlink()
        for t in range(random.randrange(2, 5)):
            write_file(dirs[3] / "stderr.log" / f"part-{t}.log", _stderr_text(2))


# --- rsync -a to the staging area under the site's limits; ulimit -f 256 on the bad node ------------------------
RSYNC_SH = ('. "$1/conf/epilog-limits.sh" && exec /usr/bin/rsync -a "$1/job/ranks/" "$1/staging/ranks/"')


def _limits(base: Path, extra: str = "") -> None:
    write_file(base / "conf" / "epilog-limits.sh", "ulimit -n 4096\n" + extra)


def rsync_build(base: Path, bad: bool) -> None:
    dirs = _ranks(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS), lo=20, hi=300)
    (base / "staging").mkdir()
    # the bad node's copy of the site profile also caps file sizes at 128 KiB (a stale "core files off" line)
    _limits(base, "ulimit -f 256\n" if bad else "")
    if bad:  # (so the cap is met whatever sizes came out: rank 1's log is long)
        write_file(dirs[1] / "stdout.log", _log_text(400))
        _age(base / "job", random.randrange(120, 4 * 3600))


# --- zstd -t of the earlier jobs' archives; the newest truncated ------------------------------------------------
ZSTD_SH = 'exec /usr/bin/zstd -q -t "$1"/archive/*.tar.zst'


def _archives(base: Path, count: int, *, truncate_last: bool = False, ages: list[int] | None = None) -> list[Path]:
    """archive/job-<id>.tar.zst of `count` earlier jobs (real tar | zstd of rank logs), oldest first;
    `ages` their ages in days (mtimes)."""
    src = base / ".src"
    out = []
    for _ in range(count):
        for local in range(random.choice([2, 4, 8])):
            write_file(src / f"rank-{local:03d}" / "stdout.log", _log_text(random.randrange(2, 24)))
        path = base / "archive" / f"job-{random.randrange(10**6, 10**7)}.tar.zst"
        path.parent.mkdir(parents=True, exist_ok=True)
        run_quiet("/bin/sh", "-c", 'tar -C "$1" -cf - . | zstd -q -3 -o "$2"', "sh", str(src), str(path))
        run_quiet("rm", "-rf", str(src))
        out.append(path)
    if truncate_last:  # the node rebooted during the last job's epilog: its archive stops short
        data = out[-1].read_bytes()
        out[-1].write_bytes(data[: len(data) * 2 // 3])
    now = time.time()
    for k, path in enumerate(out):
        age = ages[k] if ages else count - k
        os.utime(path, (now - age * 86400 - random.randrange(3600), now - age * 86400 - random.randrange(3600)))
    return out


def zstd_build(base: Path, bad: bool) -> None:
    _archives(base, _TURNS.pick(base, bad, [3, 5, 2], 4), truncate_last=bad)


# --- the python3 job summary; one rank's stats.json truncated ---------------------------------------------------
SUMMARY_PY = """\
import glob, json, os, sys

base = sys.argv[1]
stats = []
for path in sorted(glob.glob(os.path.join(base, "job", "ranks", "rank-*", "stats.json"))):
    with open(path) as fh:
        try:
            stats.append(json.load(fh))
        except json.JSONDecodeError as exc:
            sys.exit(f"epilog-summary: {path}: truncated stats ({exc})")
with open(os.path.join(base, "job", "id")) as fh:
    job = fh.read().strip()
summary = {
    "job": job,
    "ranks": len(stats),
    "hosts": sorted({s["host"] for s in stats}),
    "steps": max(s["steps"] for s in stats),
    "tokens_per_s": round(sum(s["tokens_per_s"] for s in stats), 1),
    "peak_mem_mib": max(s["peak_mem_mib"] for s in stats),
    "failed_ranks": [s["rank"] for s in stats if s["exit"] != 0],
    "oom_kills": sum(s.get("oom_kills", 0) for s in stats),
}
tmp = os.path.join(base, "staging", f".summary-{job}.json")
with open(tmp, "w") as fh:
    json.dump(summary, fh, indent=1)
    fh.write("\\n")
os.replace(tmp, os.path.join(base, "staging", f"summary-{job}.json"))
"""
SUMMARY_ARGV = ["/usr/bin/python3", "-S", "{b}/bin/epilog-summary.py", "{b}"]


def _summary_inputs(base: Path, gpus: int, oom: bool = False) -> list[Path]:
    write_file(base / "bin" / "epilog-summary.py", SUMMARY_PY)
    (base / "staging").mkdir()
    return _ranks(base, gpus, lo=1, hi=4, oom=oom)


def summary_build(base: Path, bad: bool) -> None:
    dirs = _summary_inputs(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS))
    if bad:  # rank 4 was killed while writing its stats: the file stops mid-object
        text = (dirs[4] / "stats.json").read_text()
        (dirs[4] / "stats.json").write_text(text[: len(text) // 2])


# --- head -n 5 of each rank's stderr as the job's user; one recreated 0600 root ---------------------------------
HEAD_SH = 'exec /usr/bin/head -n 5 "$1"/job/ranks/*/stderr.log > "$1/out/first-errors.txt"'


def head_build(base: Path, bad: bool) -> None:
    dirs = _ranks(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS), stderr_empty=0.0)
    (base / "out").mkdir()
    chown_nobody(base / "out")
    if bad:  # rank 1 crashed: the root container runtime's log driver (umask 077) recreated its stderr.log
        path = dirs[1] / "stderr.log"
        path.unlink()
        write_file(path, _stderr_text(3) + "Fatal Python error: Segmentation fault\n", mode=0o600)


# --- tar | lz4 into the node's log staging tmpfs; the previous job's bundle filled it ---------------------------
LZ4_SH = ('/usr/bin/tar -C "$1/job" -cf - ranks | '
          '/usr/bin/lz4 -q -z - "$1/staging/logs-$(/usr/bin/cat "$1/job/id").tar.lz4"')


def lz4_build(base: Path, bad: bool) -> None:
    _ranks(base, _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS), lo=20, hi=80)  # 6 ranks: 60 KiB and more of lz4
    mounted_tmpfs(base / "staging", "4m")
    if bad:  # the shipper was down: the previous job's bundle is still there, 16 KiB left
        write_file(base / "staging" / f"logs-{random.randrange(10**6, 10**7)}.tar.lz4",
                   random.randbytes((4096 - 16) * 1024))


# --- the shell mv chain rotating epilog.log; a generation missing -----------------------------------------------
ROTATE_SH = """\
L="$1/logs/epilog.log"
n=$(/usr/bin/ls "$1/logs" | /usr/bin/grep -c '^epilog\\.log\\.[0-9][0-9]*$')
while [ "$n" -gt 0 ]; do
  /usr/bin/mv -f "$L.$n" "$L.$((n + 1))" || exit 1
  n=$((n - 1))
done
/usr/bin/mv -f "$L" "$L.1" && : > "$L"
"""


def _epilog_logs(base: Path, generations: list[int]) -> None:
    logs = base / "logs"
    write_file(logs / "epilog.log", _stderr_text(random.randrange(1, 4)))
    for g in generations:
        write_file(logs / f"epilog.log.{g}", _stderr_text(random.randrange(1, 6)))


def rotate_build(base: Path, bad: bool) -> None:
    n = _TURNS.pick(base, bad, [2, 4, 1], 4)
    gens = list(range(1, n + 1))
    if bad:  # an operator looking for space removed epilog.log.3: ls counts 3, the chain starts at .3
        gens.remove(3)
    _epilog_logs(base, gens)


# --- savelog -r old of gpu-health.log; old links to an archive volume that is not mounted -----------------------
SAVELOG_ARGV = ["/usr/bin/savelog", "-q", "-c", "5", "-r", "old", "{b}/logs/gpu-health.log"]


def _health_logs(base: Path, generations: int, mounted: bool = True) -> None:
    logs = base / "logs"
    write_file(logs / "gpu-health.log", "".join(
        f"gpu{g} temp={random.randrange(30, 80)}C ecc_sbe={random.randrange(0, 3)} xid=none\n"
        for _ in range(random.randrange(2, 6)) for g in range(8)))
    vol = base / "vol"  # the archive volume's mount point; the rolled logs live under it
    vol.mkdir()
    if mounted:
        old = vol / "gpu-health"
        old.mkdir()
        for g in range(generations):  # savelog's own names: .0 as moved, .1.gz and on compressed
            name = f"gpu-health.log.{g}" + (".gz" if g > 0 else "")
            write_file(old / name, random.randbytes(random.randrange(200, 2000)))
    os.symlink("../vol/gpu-health", logs / "old")


def savelog_build(base: Path, bad: bool) -> None:
    # the bad day: the archive volume did not mount after the node's reboot (an empty mount point)
    _health_logs(base, _TURNS.pick(base, bad, [2, 4, 1], 3), mounted=not bad)


# --- shred -u -z of the job's tokens; the secrets directory left mounted read-only ------------------------------
SHRED_SH = 'exec /usr/bin/shred -u -z "$1"/run/job-secrets/*.token'
TOKENS = ["hf", "wandb", "s3", "registry"]


def shred_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [2, 4, 1], 3)
    secrets = base / "run" / "job-secrets"
    for name in random.sample(TOKENS, count):
        write_file(secrets / f"{name}.token", token(random.randrange(16, 40)) + "\n", mode=0o600)
    if bad:  # the container runtime bind-mounted the secrets read-only into the job and left the mount
        run_quiet("mount", "--bind", str(secrets), str(secrets))
        run_quiet("mount", "-o", "remount,bind,ro", str(secrets))


# --- find scratch -mindepth 1 -delete; the job's /dev/shm tmpfs still mounted inside ----------------------------
FIND_SH = 'exec /usr/bin/find "$1/scratch" -mindepth 1 -delete'


def _scratch_job(base: Path, job: int, files: int, shm_files: int = 0) -> Path:
    """scratch/job-<id>/: `files` dataset cache shards, 1 to 3 partial checkpoints, `shm_files` NCCL
    segments in shm/ (a directory here; the fault case mounts a tmpfs on it)."""
    root = base / "scratch" / f"job-{job}"
    for k in range(files):
        write_file(root / "dataset-cache" / f"shard-{random.randrange(10**5):05d}-{k}.bin",
                   random.randbytes(random.randrange(100, 4000)))
    for k in range(random.randrange(1, 4)):
        write_file(root / "ckpt-tmp" / f"step-{random.randrange(1000, 90000)}-{k}.pt.partial",
                   random.randbytes(random.randrange(100, 4000)))
    (root / "shm").mkdir(parents=True, exist_ok=True)
    return root


def _shm_segments(root: Path, count: int) -> None:
    for k in range(count):
        write_file(root / "shm" / f"nccl-{token(3)}-{k}", random.randbytes(random.randrange(100, 4000)))


def find_build(base: Path, bad: bool) -> None:
    files, shm = _TURNS.pick(base, bad, [(4, 2), (12, 1), (2, 3)], (8, 2))
    root = _scratch_job(base, random.randrange(10**6, 10**7), files)
    if bad:  # the job's container runtime died without unmounting the job's /dev/shm
        mounted_tmpfs(root / "shm", "4m")
    _shm_segments(root, shm)


# --- unlink of the job's GPU locks; one turned into a drain marker directory ------------------------------------
UNLOCK_SH = """\
for g in $(/usr/bin/cat "$1/job/gpus"); do
  /usr/bin/unlink "$1/locks/gpu$g.lock" || exit 1
done
"""


def unlock_build(base: Path, bad: bool) -> None:
    gpus = sorted(random.sample(range(8), _TURNS.pick(base, bad, GOOD_GPUS, BAD_GPUS)))
    job = random.randrange(10**6, 10**7)
    write_file(base / "job" / "gpus", " ".join(map(str, gpus)) + "\n")
    for g in gpus:
        write_file(base / "locks" / f"gpu{g}.lock", f"{job}\n")
    for g in set(range(8)) - set(gpus):  # the other jobs' GPUs on the shared node
        if random.random() < 0.5:
            write_file(base / "locks" / f"gpu{g}.lock", f"{random.randrange(10**6, 10**7)}\n")
    if bad:  # the health agent drained the job's third GPU (Xid 79) by making its lock its drain marker
        lock = base / "locks" / f"gpu{gpus[2]}.lock"
        lock.unlink()
        write_file(lock / "drain", "xid 79: GPU has fallen off the bus\n")


def _teardown(base: Path) -> None:
    unmount_under(base)
    _clear_attrs(base)


def _sc(name, program, argv, build, probe, errno, path, *, teardown=_teardown, unprivileged=False, description=""):
    """A Scenario of the set: its teardown (unmounting, clearing attributes) unless given."""
    return Scenario(name, program, argv, build, probe, errno, path, teardown=teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYFIRST: list[Scenario] = [
    _sc("t51_gzip_rank_log_append_only", "gzip -6 of the ranks' logs (jobs of 4, 8, 2 GPUs)", sh_argv(GZIP_SH),
        gzip_build, UNLINK, "EPERM", lambda b: f"{b}/job/ranks/rank-*/stdout.log",
        description="gzip -6 of job/ranks/*/*.log; the bad job's rank-2 stdout.log kept the append-only flag "
                    "the site's audit wrapper sets: the .gz is written, the unlink of the original fails EPERM, "
                    "gzip goes on with the other logs and exits 2"),
    _sc("t51_b2sum_rank_stderr_is_dir", "b2sum manifest of the ranks' logs (4, 8, 2 GPUs)", sh_argv(B2SUM_SH),
        b2sum_build, READ, "EISDIR", lambda b: f"{b}/job/ranks/rank-*/stderr.log",
        description="b2sum of job/ranks/*/*.log into staging/MANIFEST.b2; the bad job's rank 3 ran a logging "
                    "library that made its stderr.log a directory of per-thread parts: the openat succeeds, the "
                    "read fails EISDIR, exit 1"),
    _sc("t51_rsync_staging_ulimit_f", "rsync -a to staging under the site's limits (4, 8, 2 GPUs)",
        sh_argv(RSYNC_SH), rsync_build, WRITE, "EFBIG", lambda b: f"{b}/staging/ranks/rank-*/*stdout.log*",
        description="the epilog sources conf/epilog-limits.sh, then rsync -a job/ranks/ staging/ranks/; the bad "
                    "node's copy of the profile has ulimit -f 256 (128 KiB): the receiver's write to its "
                    "temporary file fails EFBIG (rsync ignores SIGXFSZ), exit 11"),
    _sc("t51_zstd_test_truncated_archive", "zstd -q -t of earlier jobs' archives (3, 5, 2)", sh_argv(ZSTD_SH),
        zstd_build, WRITE, None, lambda b: STDERR,
        description="zstd -t of archive/job-*.tar.zst before shipping; the newest was cut at two thirds (the "
                    "node rebooted during that job's epilog): no call fails, 'Read error (39) : premature end' "
                    "on stderr, exit 1"),
    _sc("t51_python3_summary_truncated_stats", "python3 epilog-summary.py (4, 8, 2 ranks)", argv_in(SUMMARY_ARGV),
        summary_build, WRITE, None, lambda b: STDERR,
        description="the python3 job summary over job/ranks/*/stats.json into staging/summary-<job>.json; the "
                    "bad job's rank 4 was killed while writing its stats (half a JSON object): no call fails, "
                    "the script's 'truncated stats' message on stderr, exit 1"),
    _sc("t51_head_rank_stderr_0600", "head -n 5 of the ranks' stderr as nobody (4, 8, 2 ranks)", sh_argv(HEAD_SH),
        head_build, OPEN, "EACCES", lambda b: f"{b}/job/ranks/rank-*/stderr.log", unprivileged=True,
        description="head -n 5 of job/ranks/*/stderr.log as the job's user, for the mail to the user; the bad "
                    "job's rank 1 crashed and the root container runtime's log driver (umask 077) recreated "
                    "its stderr.log 0600: openat EACCES, head goes on, exit 1"),
    _sc("t51_lz4_staging_tmpfs_full", "lz4 -z after tar -cf - into the staging tmpfs (4, 8, 2 ranks)", sh_argv(LZ4_SH),
        lz4_build, WRITE, "ENOSPC", lambda b: f"{b}/staging/logs-*.tar.lz4",
        description="tar -cf - ranks | lz4 -z - staging/logs-<job>.tar.lz4 into the node's 4 MiB log staging "
                    "tmpfs; the previous job's bundle is still there (the shipper was down), 16 KiB free: "
                    "lz4's write ENOSPC"),
    _sc("t51_mv_rotation_chain_gap", "mv chain rotating epilog.log (2, 4, 1 generations)", sh_argv(ROTATE_SH),
        rotate_build, RENAME, "ENOENT", lambda b: f"{b}/logs/epilog.log.3",
        description="the epilog's rotation counts epilog.log.N with ls | grep -c and moves N -> N+1 down to 1; "
                    "the bad node's generations are .1 .2 .4 (an operator removed .3): the count is 3, "
                    "mv epilog.log.3 fails ENOENT, exit 1"),
    _sc("t51_savelog_rolldir_link_dangles", "savelog -c 5 -r old gpu-health.log (2, 4, 1 generations)",
        argv_in(SAVELOG_ARGV), savelog_build, STAT, "ENOENT", lambda b: f"{b}/logs/old",
        description="savelog -r old of logs/gpu-health.log, logs/old a link to ../vol/gpu-health on the archive "
                    "volume; on the bad day the volume did not mount, the link dangles: savelog's (sh's) "
                    "[ ! -d old ] is a newfstatat that fails ENOENT -- the first call that shows the fault -- then "
                    "its mkdir -p meets the link (mkdir EEXIST), 'could not mkdir', exit 5"),
    _sc("t51_shred_secrets_ro_bind", "shred -u -z of the job's tokens (2, 4, 1 tokens)", sh_argv(SHRED_SH),
        shred_build, OPEN, "EROFS", lambda b: f"{b}/run/job-secrets/*.token",
        description="shred -u -z of run/job-secrets/*.token; on the bad node the container runtime left its "
                    "read-only bind mount of the secrets directory: shred's openat O_WRONLY fails EROFS, exit 1"),
    _sc("t51_find_delete_scratch_shm_mounted", "find scratch -mindepth 1 -delete (4, 12, 2 cache files)",
        sh_argv(FIND_SH), find_build, RMDIR, "EBUSY", lambda b: f"{b}/scratch/job-*/shm",
        description="find scratch -mindepth 1 -delete of the job's scratch; on the bad node the job's /dev/shm "
                    "tmpfs is still mounted at scratch/job-<id>/shm: find empties it, its unlinkat AT_REMOVEDIR "
                    "fails EBUSY, exit 1"),
    _sc("t51_unlink_gpu_lock_drain_dir", "unlink of the job's GPU locks (4, 8, 2 GPUs)", sh_argv(UNLOCK_SH),
        unlock_build, UNLINK, "EISDIR", lambda b: f"{b}/locks/gpu*.lock",
        description="unlink locks/gpu<N>.lock for each GPU of the job; the health agent drained one of the "
                    "job's GPUs by making its lock path its drain marker directory: unlink EISDIR, exit 1"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------
def gzip_noise(base: Path, run: int) -> None:
    _ranks(base, [2, 8, 4, 6][run % 4], lo=1, hi=300, stderr_empty=0.5)


def prune_noise(base: Path, run: int) -> None:
    expired, recent = [0, 3, 1, 5][run % 4], [4, 2, 6, 3][run % 4]
    ages = sorted(random.sample(range(15, 60), expired), reverse=True) + sorted(
        random.sample(range(0, 13), recent), reverse=True)
    _archives(base, expired + recent, ages=ages)


def rsync_noise(base: Path, run: int) -> None:
    dirs = _ranks(base, [2, 8, 4, 6][run % 4], lo=1, hi=200)
    _limits(base)
    (base / "staging").mkdir()
    if run in (1, 3):  # a rank dumped core; a profiling run's trace directory
        write_file(dirs[0] / f"core.{random.randrange(1000, 99999)}", random.randbytes(random.randrange(10, 90) * 1024))
        for k in range(random.randrange(2, 5)):
            write_file(dirs[-1] / "profile" / f"trace-{k}.json", json.dumps({"events": [token(4)] * 50}))
        _age(base / "job", random.randrange(120, 4 * 3600))


def summary_noise(base: Path, run: int) -> None:
    _summary_inputs(base, [2, 8, 4, 6][run % 4], oom=run in (1, 2))


def savelog_noise(base: Path, run: int) -> None:
    _health_logs(base, [0, 4, 2, 1][run % 4])


def rotate_noise(base: Path, run: int) -> None:
    n = [0, 3, 1, 4][run % 4]
    _epilog_logs(base, list(range(1, n + 1)))


# per run, the NCCL segments each job's shm/ held (one job a run, or leftovers of earlier jobs' epilogs that
# failed): an empty shm/ and one of 1 and 2 segments are among the good runs before the last run has them
SCRATCH_SHM = [[1], [0, 2, 1], [2, 0], [0, 1]]


def scratch_noise(base: Path, run: int) -> None:
    for shm in SCRATCH_SHM[run % 4]:
        root = _scratch_job(base, random.randrange(10**6, 10**7), random.randrange(1, 14))
        _shm_segments(root, shm)


PRUNE_SH = "exec /usr/bin/find \"$1/archive\" -name '*.tar.zst' -mtime +14 -delete"

QUIET_FIFTYFIRST: list[NoAnomalyCase] = [
    NoAnomalyCase("t51_gzip_rank_log_counts", sh_argv(GZIP_SH), gzip_noise, runs=4,
                  description="gzip -6 of the logs of 2, 8, 4, 6 ranks (1 to 300 KiB; half the stderr logs empty)"),
    NoAnomalyCase("t51_find_prune_expired_archives", sh_argv(PRUNE_SH), prune_noise, runs=4,
                  description="find archive -name '*.tar.zst' -mtime +14 -delete over 0, 3, 1, 5 expired archives "
                              "among 4, 2, 6, 3 recent ones"),
    NoAnomalyCase("t51_rsync_staging_core_and_profile", sh_argv(RSYNC_SH), rsync_noise, runs=4,
                  description="rsync -a of 2, 8, 4, 6 ranks' trees to staging; runs 1 and 3 have a core file "
                              "and a profiler trace directory"),
    NoAnomalyCase("t51_python3_summary_oom_field", argv_in(SUMMARY_ARGV), summary_noise, runs=4,
                  description="the python3 summary over 2, 8, 4, 6 ranks; runs 1 and 2 have a rank with an "
                              "oom_kills field"),
    NoAnomalyCase("t51_savelog_generations", argv_in(SAVELOG_ARGV), savelog_noise, runs=4,
                  description="savelog -c 5 -r old with 0, 4, 2, 1 earlier generations in the archive volume "
                              "(more or fewer mv of the cycle, gzip of .0)"),
    NoAnomalyCase("t51_mv_rotation_generations", sh_argv(ROTATE_SH), rotate_noise, runs=4,
                  description="the mv rotation chain over 0, 3, 1, 4 earlier generations of epilog.log"),
    NoAnomalyCase("t51_find_delete_scratch_leftovers", sh_argv(FIND_SH), scratch_noise, runs=4,
                  description="find scratch -mindepth 1 -delete of 1, 3, 2, 2 jobs' scratch trees (1 to 13 "
                              "cache files, 1 to 3 partial checkpoints, 0 to 2 shm segments each: SCRATCH_SHM)"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown), take the append-only
    flag off what it set it on, and forget the runs' counts."""
    for name in [*_TURNS.good_runs, *(s.name for s in REAL_FIFTYFIRST), *(c.name for c in QUIET_FIFTYFIRST)]:
        base = ROOT / name
        if base.exists():
            unmount_under(base)
            _clear_attrs(base)
    _TURNS.good_runs.clear()
