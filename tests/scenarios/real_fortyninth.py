"""A forty-ninth set of real programs with one real fault each: **good runs that processed
different data from each other** -- as a job's good traces really are: yesterday's run read
yesterday's files, today's run today's.

Each case's three good runs differ among themselves the way real data does -- another number of
files (3, 11, 7), other names (dates, ``part-000NN`` sequence numbers, hashes, hostnames), other
sizes (a read loop that runs once or forty times), an empty input, another directory depth or an
extra subdirectory -- and the bad run processes yet another such input (another count, other
names) plus one real fault:

- ``bzip2 -t`` of the night's parts, one of them truncated (no call fails: bzip2 writes "file ends
  unexpectedly" to stderr, exit 2);
- ``jq`` over a directory of daily event files where one "day" is a directory (read EISDIR);
- ``xz -k`` of hash-named dumps, one name so long that ``NAME.xz`` is over NAME_MAX (openat
  ENAMETOOLONG);
- ``sha224sum -c`` of a manifest naming ``dt=`` partitions, one partition never delivered
  (openat ENOENT);
- ``cp -rL`` of a site tree whose depth differs run to run, with a symlink to itself in the bad
  tree (stat ELOOP);
- ``zstd -r -c`` as nobody over per-host log directories, one log 0600 root in the middle of the
  walk (openat EACCES);
- a Python spool reader that lists its spool, runs the retention sweep (which removes expired
  archive copies, and on the bad day a spool file the listing still has), then reads every listed
  file (openat ENOENT);
- ``awk`` merging daily CSVs into a 1 MiB tmpfs the setup mounts, full on the bad day (write
  ENOSPC);
- ``tar -xzf`` of a bundle cut short (gzip, tar's child, writes "unexpected end of file");
- ``lz4 -d -m`` of hostname-named segments next to themselves, in a directory the bad host mounts
  read-only, the bad run's first segment of a host the good runs never had (openat EROFS, first on
  that new host's file);
- ``cpio --quiet -idm`` of a truncated archive ("premature end of archive" on stderr).

The expectations are what ``strace -f`` shows. Every run of a case has the same command line;
its data is picked by the run (the setup counts the good runs; the bad run has its own shape).

Noise cases (``QUIET_FORTYNINTH``): good runs alone over such differing data, no fault: ``find`` of
a data lake whose last run has one partition level less (a month compacted flat), ``jq`` over days
with an empty day and a missing one, ``find`` of an object store named by short hashes, ``grep``
whose pattern matches in some runs and in none in another, ``sqlite3`` over tables of 0 to 20000
rows, a Python job whose config has an optional section or not, ``tar -czf`` of a tree with a new
host's directory on the last night, and a Python spool reader whose expiry list is empty on the
last day. The names the fault cases give their files are dates, zero-padded sequence numbers and
long hashes, so that a fault case's good-vs-good check does not hang on the name shapes the noise
cases test on their own (a short hash, a new host).
"""

from __future__ import annotations

import bz2
import io
import json
import os
import random
import subprocess
import tarfile
from pathlib import Path

from .files import mounted_tmpfs, random_text, run_quiet, token, write_file
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
STAT = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64"})
OPEN = frozenset({"openat", "open"})
WRITE = frozenset({"write", "writev"})

_TURNS = RunTurns()  # which good run of each case is being set up


def _seq_names(n: int, fmt: str, start: int | None = None) -> list[str]:
    first = random.randrange(0, 500) if start is None else start
    return [fmt.format(first + k) for k in range(n)]


def _days(n: int) -> list[str]:
    first = random.randrange(1, 15)
    return [f"2026-11-{first + k:02d}" for k in range(n)]


HOSTS = ["web-01", "web-02", "db-01", "cache-03", "batch-7f", "edge-fra-2", "edge-sfo-1", "mq-01", "web-03"]


# --- bzip2 -t: 3/11/7 parts of other sizes; the bad night's part cut short ---------------------------------------------
BZIP2_SH = 'exec /usr/bin/bzip2 -t "$1"/incoming/*.bz2'


def bzip2_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 5)
    for k, name in enumerate(_seq_names(count, "part-{:05d}.bz2")):
        lines = random.choice([1, 20, 400]) if k else 0  # the first part of a night can be empty
        data = bz2.compress(random_text(lines, lines + 1).encode() if lines else b"")
        if bad and k == 2:  # the transfer of the third part was cut
            data = bz2.compress(random_text(300, 301).encode())
            data = data[: len(data) // 2]
        write_file(base / "incoming" / name, data)


# --- jq over daily event files; one "day" a directory -------------------------------------------------------------
JQ_SH = 'exec /usr/bin/jq -c "{id, n: (.items | length)}" "$1"/events/*.json > "$1/summary.jsonl"'


def _events(n: int) -> str:
    return "".join(json.dumps({"id": token(3), "items": list(range(random.randrange(0, 9)))}) + "\n"
                   for _ in range(n))


def jq_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 6)
    for k, day in enumerate(_days(count)):
        path = base / "events" / f"{day}.json"
        if bad and k == 3:  # an unpacked partition landed where the day's file belongs
            (path / "part-00000").parent.mkdir(parents=True)
            write_file(path / "part-00000", _events(3))
        else:
            # every run has a quiet day (the second: an empty file) and a busy one (the fifth, if any)
            write_file(path, _events(0 if k == 1 else 40 if k == 4 else random.randrange(1, 30)))
    (base / "summary.jsonl").touch()


# --- xz -k of hash-named dumps; one name too long for NAME.xz ------------------------------------------------------
XZ_SH = 'exec /usr/bin/xz -k -T1 -0 "$1"/dump/*.bin'


def xz_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 4)
    for k in range(count):
        name = token(20) + ".bin"  # a sha1-like hash
        if bad and k == 1:  # an exporter that names the dump by its whole key: 250 hex + .bin = 254
            name = "ff" + token(124) + ".bin"
        write_file(base / "dump" / name, random_text(1, random.choice([5, 300])))


# --- sha224sum -c of a partition manifest; one named partition never delivered --------------------------------------
SHA_SH = 'cd "$1/data" && exec /usr/bin/sha224sum -c --quiet "$1/MANIFEST"'


def sha_build(base: Path, bad: bool) -> None:
    import hashlib

    parts = _TURNS.pick(base, bad, [(3, 1), (2, 4), (5, 2)], (4, 2))  # (partitions, files per partition)
    lines = []
    for k, day in enumerate(_days(parts[0])):
        for j in range(parts[1]):
            rel = f"dt={day}/part-{j:05d}.csv"
            data = b"" if (k + j) % 4 == 3 else random_text(2, 60).encode()  # some parts empty
            lines.append(f"{hashlib.sha224(data).hexdigest()}  {rel}\n")
            if bad and k == 2:  # the partition named in the manifest never arrived
                continue
            write_file(base / "data" / rel, data)
    (base / "data").mkdir(exist_ok=True)
    write_file(base / "MANIFEST", "".join(lines))


# --- cp -rL of a site tree of other depths; a symlink to itself in the bad tree ------------------------------------
CP = ["/usr/bin/cp", "-rL", "{b}/site", "{b}/backup"]


def cp_build(base: Path, bad: bool) -> None:
    depth, extra = _TURNS.pick(base, bad, [(1, False), (3, True), (2, False)], (2, True))
    d = base / "site"
    for _level in range(depth):
        d = d / f"section-{random.randrange(1, 90):02d}"
        for _ in range(random.randrange(1, 4)):
            write_file(d / f"page-{random.randrange(1000):04d}.html", random_text(1, 30))
    write_file(base / "site" / "index.html", random_text(1, 10))
    if extra:  # a release directory with a link to the current build (followed by -L)
        write_file(base / "site" / "releases" / "r1" / "app.js", random_text(1, 20))
        os.symlink("r1", base / "site" / "releases" / "current-build")
    if bad:  # a deploy script's `ln -sf current current` made a link to itself
        os.symlink("current", base / "site" / "releases" / "current")


# --- zstd -r -c as nobody over per-host logs; one log 0600 root mid-walk -------------------------------------------
ZSTD = ["/usr/bin/zstd", "-q", "-r", "-c", "{b}/logs"]


def zstd_build(base: Path, bad: bool) -> None:
    # the third good run's hosts and the bad run's were all seen by the first two (a new host is a
    # noise case of its own: t49_tar_czf_new_host_dir)
    hosts, files = _TURNS.pick(base, bad, [(["web-01", "db-01"], 1), (["web-01", "web-02", "db-01", "cache-03"], 3),
                                     (["db-01", "web-02", "cache-03"], 2)], (["web-02", "db-01", "web-01"], 3))
    for h, host in enumerate(hosts):
        for f in range(files):
            # the third log of a host (runs with 3 per host) is an hour without traffic: empty
            text = "" if f == 2 else random_text(1, random.choice([3, 200]))
            path = write_file(base / "logs" / host / f"{_days(1)[0]}-{f}.log", text)
            if bad and h == 1 and f == 1:  # the rotation made this one root's alone
                path.chmod(0o600)
    for dirpath, _dirs, _files in os.walk(base):
        os.chmod(dirpath, 0o755)


# --- a Python spool reader: the retention sweep removes a file the listing still has ---------------------------------
SPOOL_PY = """\
import os
import sys

base = sys.argv[1]
spool = os.path.join(base, "spool")
names = sorted(n for n in os.listdir(spool) if n.endswith(".csv"))
# the retention sweep (a separate job on the real host, racing this reader): expired copies go
with open(os.path.join(base, "expired.txt")) as fh:
    for rel in fh.read().split():
        os.unlink(os.path.join(base, rel))
total = 0
for name in names:
    with open(os.path.join(spool, name)) as fh:
        total += sum(1 for _ in fh)
with open(os.path.join(base, "total.txt"), "w") as out:
    out.write(f"{len(names)} {total}\\n")
"""
SPOOL = ["/usr/bin/python3", "-S", "{b}/bin/spool_reader.py", "{b}"]


def spool_build(base: Path, bad: bool) -> None:
    count, expired = _TURNS.pick(base, bad, [(3, 1), (11, 3), (7, 2)], (5, 2))
    write_file(base / "bin" / "spool_reader.py", SPOOL_PY)
    names = [f"{host}-{random.randrange(10000):05d}.csv" for host in HOSTS[:min(count, len(HOSTS))]]
    names += [f"extra-{k:03d}.csv" for k in range(count - len(names))]
    for name in names:  # (an empty spool file is a noise case of its own: t49_py_sweep_list_empty)
        write_file(base / "spool" / name, random_text(1, random.choice([3, 80])))
    gone = []
    for k in range(expired):
        rel = f"archive/{_days(1)[0]}-{k}.csv"
        write_file(base / rel, random_text(1, 5))
        gone.append(rel)
    if bad:  # the sweep's clock was wrong: it took a spool file the reader had just listed
        gone.append(f"spool/{sorted(names)[2]}")
    write_file(base / "expired.txt", "".join(f"{g}\n" for g in gone))


# --- awk merging daily CSVs into a 1 MiB tmpfs; full on the bad day --------------------------------------------------
AWK_SH = 'exec /usr/bin/awk -F, "{print FILENAME, \\$1, \\$2 * 2}" "$1"/in/*.csv > "$1/out/merged.txt"'


def awk_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 5)
    for k, day in enumerate(_days(count)):
        rows = 0 if k == 1 else random.choice([30, 900]) if k % 2 else random.randrange(100, 500)  # 2nd day: none
        write_file(base / "in" / f"{day}.csv", "".join(f"{random.choice(HOSTS)},{random.randrange(999)}\n"
                                                        for _ in range(rows)))
    mounted_tmpfs(base / "out", "1m")
    if bad:  # last month's merged files were never cleaned up: 16 KiB left
        write_file(base / "out" / "merged-2026-10.txt", b"\0" * (1024 - 16) * 1024)


# --- tar -xzf of a bundle cut short --------------------------------------------------------------------------------
TAR = ["/usr/bin/tar", "-xzf", "{b}/incoming/bundle.tgz", "-C", "{b}/out"]


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tar_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 5)
    first = random.randrange(1000)
    files = {f"bundle/rec-{first + k:05d}.dat": os.urandom(random.choice([10, 3000, 40000])) for k in range(count)}
    if bad:  # big enough that the cut falls inside the compressed data
        files[f"bundle/rec-{first + count:05d}.dat"] = os.urandom(60000)
    data = _tgz(files)
    if bad:  # the upload stopped at 60 %
        data = data[: len(data) * 6 // 10]
    write_file(base / "incoming" / "bundle.tgz", data)
    (base / "out").mkdir()


# --- lz4 -d -m of segments next to themselves; the directory read-only on the bad host ------------------------------
LZ4_SH = 'exec /usr/bin/lz4 -q -d -m "$1"/segments/*.lz4'


def lz4_build(base: Path, bad: bool) -> None:
    # the bad run's store has a host none of the good runs had (api-ams-9, sorted first): its segment is
    # the first whose output cannot be created
    hosts = _TURNS.pick(base, bad, [HOSTS[:3], HOSTS[:8], HOSTS[1:6]], ["api-ams-9", *HOSTS[2:5]])
    seg = base / "segments"
    for host in hosts:
        raw = seg / f"{host}-{_days(1)[0]}.log"
        write_file(raw, random_text(1, random.choice([4, 500])))
        run_quiet("/usr/bin/lz4", "-q", "--rm", str(raw), str(raw) + ".lz4")
    if bad:  # the bad host mounts its segment store read-only
        run_quiet("mount", "--bind", str(seg), str(seg))
        run_quiet("mount", "-o", "remount,bind,ro", str(seg))


# --- cpio --quiet -idm of a truncated archive ----------------------------------------------------------------------
CPIO_SH = 'cd "$1/out" && exec /usr/bin/cpio --quiet -idm < "$1/incoming/batch.cpio"'


def cpio_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [3, 11, 7], 5)
    src = base / "src"
    first = random.randrange(1000)
    names = []
    for k in range(count):  # records of 100 B or 5000 B, numbered from another place each batch
        name = f"rec-{first + k:05d}.rec"
        write_file(src / name, os.urandom(5000 if k % 2 else 100))
        names.append(name)
    if bad:
        big = f"rec-{first + count:05d}.rec"
        write_file(src / big, os.urandom(20000))
        names.append(big)
    archive = subprocess.run(["/usr/bin/cpio", "--quiet", "-o", "-H", "newc"], input="\n".join(names).encode(),
                             cwd=src, check=True, capture_output=True).stdout
    if bad:  # the writer died mid-stream: the archive stops inside the last member
        archive = archive[: len(archive) - 12000]
    write_file(base / "incoming" / "batch.cpio", archive)
    (base / "out").mkdir()


def _sc(name, program, argv, build, probe, errno, path, *, teardown=None, unprivileged=False, description=""):
    if isinstance(argv, list):
        argv = argv_in(argv)
    return Scenario(name, program, argv, build, probe, errno, path, teardown=teardown, unprivileged=unprivileged,
                    description=description)


REAL_FORTYNINTH: list[Scenario] = [
    _sc("t49_bzip2_t_part_cut_short", "bzip2 -t (3, 11, 7 parts)", sh_argv(BZIP2_SH), bzip2_build, WRITE, None,
        lambda b: STDERR,
        description="bzip2 -t of part-000NN.bz2 files: 3, 11, 7 of them in the good runs (one empty, the rest "
                    "1 to 400 lines), 5 in the bad run, whose third was cut in half: no call fails, bzip2 "
                    "writes 'file ends unexpectedly' to stderr, exit 2"),
    _sc("t49_jq_day_is_a_directory", "jq (3, 11, 7 daily files)", sh_argv(JQ_SH), jq_build,
        frozenset({"read", "pread64"}), "EISDIR", lambda b: f"{b}/events/2026-11-*.json",
        description="jq over events/YYYY-MM-DD.json: 3, 11, 7 days (some empty, some 40 events); the bad run's "
                    "6 days have one that is a directory (an unpacked partition): read EISDIR, exit 2"),
    _sc("t49_xz_dump_name_too_long", "xz -k (3, 11, 7 hash-named dumps)", sh_argv(XZ_SH), xz_build, OPEN,
        "ENAMETOOLONG", lambda b: f"{b}/dump/ff*.bin.xz",
        description="xz -k of dump/<sha1>.bin: other counts and sizes; the bad run's 4 dumps have one whose "
                    "name is 254 bytes: the openat O_CREAT|O_EXCL of NAME.xz (257) fails ENAMETOOLONG"),
    _sc("t49_sha224sum_partition_missing", "sha224sum -c (manifests of other partitions)", sh_argv(SHA_SH), sha_build,
        OPEN, "ENOENT", lambda b: "*dt=2026-11-*/part-0000*.csv",
        description="sha224sum -c of a MANIFEST naming dt=YYYY-MM-DD/part-NNNNN.csv: 3x1, 2x4, 5x2 files in "
                    "the good runs; the bad run's 4x2 has a partition never delivered: openat ENOENT"),
    _sc("t49_cp_rL_link_to_itself", "cp -rL (trees of depth 1, 3, 2)", CP, cp_build, STAT, "ELOOP",
        lambda b: f"{b}/site/releases/current",
        description="cp -rL of a site tree of other depths, a releases/current-build link followed in some "
                    "runs; the bad tree has releases/current -> current: stat ELOOP, exit 1"),
    _sc("t49_zstd_walk_log_root_only", "zstd -r -c as nobody (2, 4, 3 hosts)", ZSTD, zstd_build, OPEN, "EACCES",
        lambda b: f"{b}/logs/*/2026-11-*-1.log", unprivileged=True,
        description="zstd -r -c logs/ as nobody: per-host directories, 2x1, 4x3, 3x2 logs (some empty); in "
                    "the bad run's 3x3 one log is 0600 root in the middle of the walk: openat EACCES"),
    _sc("t49_py_spool_file_swept", "python3 spool reader (3, 11, 7 files)", SPOOL, spool_build, OPEN, "ENOENT",
        lambda b: f"{b}/spool/*.csv",
        description="a reader lists spool/*.csv (3, 11, 7 hostname-named files), the retention sweep removes "
                    "1, 3, 0 archive copies; on the bad day it also removes a listed spool file: the reader's "
                    "openat of it fails ENOENT"),
    _sc("t49_awk_merge_fs_full", "awk (3, 11, 7 daily CSVs)", sh_argv(AWK_SH), awk_build, WRITE, "ENOSPC",
        lambda b: f"{b}/out/merged.txt", teardown=unmount_under,
        description="awk merges in/YYYY-MM-DD.csv (0 to 900 rows each) into out/ (a 1 MiB tmpfs); the bad "
                    "day's tmpfs holds last month's file: 16 KiB left, write ENOSPC"),
    _sc("t49_tar_bundle_cut_short", "tar -xzf (bundles of 3, 11, 7 files)", TAR, tar_build, WRITE, None,
        lambda b: STDERR,
        description="tar -xzf of a bundle of 3, 11, 7 files of 10 B to 40 KB; the bad bundle stops at 60 %: "
                    "gzip (tar's child) writes 'unexpected end of file', tar 'Unexpected EOF', exit 2"),
    _sc("t49_lz4_segments_read_only", "lz4 -d -m (3, 8, 5 host segments)", sh_argv(LZ4_SH), lz4_build, OPEN, "EROFS",
        lambda b: f"{b}/segments/api-ams-9-*.log", teardown=unmount_under,
        description="lz4 -d -m of segments/<host>-<date>.log.lz4 next to themselves (3, 8, 5 hosts); the bad "
                    "host's store, with a host the good runs never had, is mounted read-only: the openat O_CREAT "
                    "of the first .log (the new host's) fails EROFS"),
    _sc("t49_cpio_batch_truncated", "cpio --quiet -idm (3, 11, 7 records)", sh_argv(CPIO_SH), cpio_build, WRITE, None,
        lambda b: STDERR,
        description="cpio -idm of newc archives of 3, 11, 7 records of 100 B or 5 KB; the bad one (5 records "
                    "and a 20 KB one) stops inside its last member: cpio's 512-byte reads of stdin come back "
                    "short, then empty (no call fails), and it writes 'premature end of file' to stderr, exit 2"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------------
LAKE = ["/usr/bin/find", "{b}/lake", "-type", "f", "-name", "*.parquet"]


def lake_noise(base: Path, run: int) -> None:
    """A data lake's partitions: year=/month=/day= with 3, 5 (two months), 2 days, then a month the
    compaction job rewrote flat (its files straight under month=, one level less)."""
    first = random.randrange(1, 20)
    if run < 3:
        months = ["11", "10"] if run == 1 else ["11"]
        for month in months:
            for day in range([3, 5, 2][run]):
                for part in range(random.randrange(1, 3)):
                    write_file(base / "lake" / "year=2026" / f"month={month}" / f"day={first + day:02d}"
                               / f"part-{part:05d}.parquet", os.urandom(random.choice([100, 4000])))
    else:
        for part in range(4):
            write_file(base / "lake" / "year=2026" / "month=11" / f"part-{part:05d}.parquet", os.urandom(3000))


def jq_noise(base: Path, run: int) -> None:
    count = [3, 11, 7, 6][run % 4]
    for k, day in enumerate(_days(count)):
        if run == 2 and k == 3:  # a day without a file at all
            continue
        n = 0 if (run == 1 and k == 2) else random.choice([1, 5, 40])
        write_file(base / "events" / f"{day}.json", _events(n))
    (base / "summary.jsonl").touch()


FIND = ["/usr/bin/find", "{b}/objects", "-type", "f", "-name", "*.obj", "-size", "+0"]
# short hashes as a store names its objects (git's 7 hex digits): fixed here, so the test does not
# depend on which shapes of letters and digits a random draw gives
SHORT_HASHES = [["3f9a1c2", "0b7e4d9", "c41a7f0"], ["9d04e1b", "77a2c3e", "e0f1d2c", "5b6a7c8", "a1b2c3d"],
                ["4c3b2a1", "f00dfac", "8e7d6c5", "b1a2c3d"], ["e5d2b81", "2c9f4a7", "d7e8f90"]]


def find_noise(base: Path, run: int) -> None:
    depth = [2, 1, 3, 2][run % 4]
    for k, h in enumerate(SHORT_HASHES[run % 4]):
        sub = Path(h[:2], *(["pack"] if depth > 1 and k % 2 else []), *(["old"] if depth > 2 and k % 2 else []))
        write_file(base / "objects" / sub / f"{h[2:]}.obj", random_text(1, 20))


GREP_SH = '/usr/bin/grep -h -E "ERROR|FATAL" "$1"/logs/*.log > "$1/errors.txt"; exit 0'


def grep_noise(base: Path, run: int) -> None:
    count = [3, 11, 7, 5][run % 4]
    for k in range(count):
        lines = random_text(1, random.choice([5, 300])).splitlines(keepends=True)
        if run != 2 and k % 2 == 0:  # run 2's logs have no error at all (grep exits 1)
            lines.insert(random.randrange(len(lines) + 1), f"{token(3)} ERROR disk {token(2)}\n")
        write_file(base / "logs" / f"app-{random.randrange(1, 99):02d}-{k}.log", "".join(lines))


SQLITE = ["/usr/bin/sqlite3", "{b}/state.db", "select count(*), coalesce(sum(v), 0) from m;"]


def sqlite_noise(base: Path, run: int) -> None:
    rows = [5, 20000, 0, 700][run % 4]
    sql = "create table m(k text, v integer);"
    if rows:
        sql += (f"with recursive c(i) as (select 1 union all select i + 1 from c where i < {rows}) "
                "insert into m select hex(randomblob(6)), abs(random()) % 1000 from c;")
    run_quiet("/usr/bin/sqlite3", str(base / "state.db"), sql)


JOB_PY = """\
import configparser
import csv
import glob
import os
import sys

base = sys.argv[1]
cfg = configparser.ConfigParser()
cfg.read(os.path.join(base, "etc", "job.ini"))
proxy = cfg.get("proxy", "url", fallback=None)
rows = 0
for path in sorted(glob.glob(os.path.join(base, cfg.get("input", "dir"), "*.csv"))):
    with open(path, newline="") as fh:
        rows += sum(1 for _ in csv.reader(fh))
with open(os.path.join(base, "report.txt"), "w") as out:
    out.write(f"{rows} {proxy}\\n")
"""
JOB = ["/usr/bin/python3", "-S", "{b}/bin/job.py", "{b}"]


def job_noise(base: Path, run: int) -> None:
    write_file(base / "bin" / "job.py", JOB_PY)
    ini = "[input]\ndir = incoming\n"
    if run in (0, 3):  # the optional [proxy] section
        ini += f"[proxy]\nurl = http://proxy-{token(2)}:3128\n"
    write_file(base / "etc" / "job.ini", ini)
    days = _days([3, 11, 7, 5][run % 4])
    for day in days:  # the first day's file has no rows
        write_file(base / "incoming" / f"{day}.csv", "".join(f"{token(2)},{random.randrange(99)}\n"
                                                             for _ in range(0 if day == days[0] else
                                                                            random.choice([4, 300]))))
    (base / "incoming").mkdir(exist_ok=True)


TARC = ["/usr/bin/tar", "-czf", "{b}/out.tgz", "-C", "{b}", "tree"]


def tar_noise(base: Path, run: int) -> None:
    depth, count = [(1, 3), (3, 11), (2, 7), (2, 5)][run % 4]
    hosts = ["web-01", "db-01"] if run < 3 else ["web-01", "edge-fra-2"]  # the last night: a host added
    for k in range(count):
        sub = Path(*[hosts[(k + j) % 2] for j in range(k % depth)])
        write_file(base / "tree" / sub / f"blob-{k:03d}.dat", os.urandom(random.choice([200, 30000]) if k else 0))
    if run == 3:
        write_file(base / "tree" / "edge-fra-2" / "blob-000.dat", os.urandom(300))


def spool_noise(base: Path, run: int) -> None:
    """The spool reader's runs: the sweep removes 1, 3, 2, then no archive copy (an empty list)."""
    expired = [1, 3, 2, 0][run % 4]
    write_file(base / "bin" / "spool_reader.py", SPOOL_PY)
    for host in HOSTS[: [3, 9, 7, 5][run % 4]]:
        write_file(base / "spool" / f"{host}-{random.randrange(10000):05d}.csv", random_text(0, random.choice([3, 80])))
    gone = []
    for k in range(expired):
        gone.append(f"archive/{_days(1)[0]}-{k}.csv")
        write_file(base / gone[-1], random_text(1, 5))
    write_file(base / "expired.txt", "".join(f"{g}\n" for g in gone))


QUIET_FORTYNINTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t49_find_lake_one_level_less", argv_in(LAKE), lake_noise, runs=4,
                  description="find lake -name '*.parquet' over year=/month=/day= partitions (3 days, 5 days "
                              "in two months, 2 days), then a month compacted flat: its parts straight under "
                              "month=, one directory level less than every good run"),
    NoAnomalyCase("t49_jq_days_empty_or_missing", sh_argv(JQ_SH), jq_noise, runs=4,
                  description="jq over 3, 11, 7, 6 daily event files: one run has an empty day, another a day "
                              "with no file at all"),
    NoAnomalyCase("t49_find_short_hash_names", argv_in(FIND), find_noise, runs=4,
                  description="find objects -name '*.obj' over a store of short-hash-named objects (objects/3f/"
                              "9a1c2.obj, some under pack/ or pack/old/): other hashes, counts and depths each run"),
    NoAnomalyCase("t49_grep_errors_match_or_not", sh_argv(GREP_SH), grep_noise, runs=4,
                  description="grep -h 'ERROR|FATAL' over 3, 11, 7, 5 logs: matches in three runs, none in the "
                              "third (grep exits 1, the job script 0)"),
    NoAnomalyCase("t49_sqlite3_tables_other_sizes", argv_in(SQLITE), sqlite_noise, runs=4,
                  description="sqlite3 count/sum over a table of 5, 20000, 0, 700 rows (1 to ~100 pages read)"),
    NoAnomalyCase("t49_py_config_optional_section", argv_in(JOB), job_noise, runs=4,
                  description="a Python job (configparser, csv) whose job.ini has an optional [proxy] section or "
                              "not, over 3, 11, 7, 5 daily CSVs of 0 to 300 rows"),
    NoAnomalyCase("t49_tar_czf_new_host_dir", argv_in(TARC), tar_noise, runs=4,
                  description="tar -czf of trees of 3, 11, 7, 5 files of 0 B to 30 KB at depth 1 to 3 under "
                              "web-01/ and db-01/; the last night's tree has a new host's directory, edge-fra-2/"),
    NoAnomalyCase("t49_py_sweep_list_empty", argv_in(SPOOL), spool_noise, runs=4,
                  description="the spool reader of t49_py_spool_file_swept, no fault: its sweep removes 1, 3, 2 "
                              "archive copies, then none on the last day (expired.txt empty: its read answers 0 "
                              "bytes at once)"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown) and forget the runs'
    counts."""
    for name in list(_TURNS.good_runs):
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _TURNS.good_runs.clear()
