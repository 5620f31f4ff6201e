"""A fifty-fifth set of real programs with one real fault each: **scale and length -- the fault deep
inside a long run**. Each program does the same small piece of work thousands of times (a file of a
tree of 2,000-5,000, a row of a load of thousands, a subscriber of a thousand, an input of a sort that
spills), and the one fault sits late in the run, after thousands of calls like the good runs'. The good
runs themselves are of different lengths (other item counts, another readdir order), so the diff has
to align long runs of the same work, not count positions:

- ``wc -l --files0-from`` over 2,000 record files as nobody, the 1,800th root's 0600: openat EACCES,
  "Permission denied", the other counts printed, exit 1;
- ``xargs -a manifest md5sum`` over 2,800 records, the 2,501st a directory (an unpack step's
  mistake): md5sum's read EISDIR, "Is a directory", exit 123;
- ``rsync -rL`` of 30 shard directories, shard d27's ``latest`` symlink pointing at itself: the
  sender's newfstatat ELOOP, "readlink_stat ... failed", exit 23;
- ``gzip -r`` of 30 days of logs, one log of day-27 replaced by a symlink to day-26's copy (a dedup
  step): openat O_NOFOLLOW ELOOP, "Too many levels of symbolic links", exit 1;
- ``bzip2 -k`` of 25 days of logs, one of day-23 a symlink left by a tiering step to cold storage that is
  not mounted: openat of the input ENOENT, "Can't open input file", the rest compressed, exit 1;
- ``sha256sum p*/*`` of 3,000 records into SHA256SUMS on a 512 KiB tmpfs still holding yesterday's
  list: the write of SHA256SUMS fails ENOSPC after ~2,850 lines, exit 1;
- ``sqlite3`` loading 4,600 rows one transaction each under ``ulimit -f`` (SIGXFSZ ignored), the bad
  day's rows growing the database past the limit: pwrite64 EFBIG, "disk I/O error";
- ``rm -rf spool/day-*`` of 30 days of 62 spool files, day-27 a read-only mount: unlinkat EROFS, exit 1;
- ``tee`` of a feed to each subscriber's file under ``ulimit -n 1024`` (its bash wrapper closing the
  descriptors it inherited first), the bad day's 1,100 subscribers (the good days' 850-960): openat
  EMFILE at the 1,022nd, the feed written to the others, exit 1;
- ``xargs -a done.list touch`` of 3,000 job stamps, the 2,701st named after the job's whole command
  line (300 characters): openat ENAMETOOLONG, exit 123;
- ``find . | sort | cpio -pdm dst`` of 30 shard directories, the destination's d27 a read-only mount:
  cpio's chown of the directory it finds there EROFS, then each of its files' openat O_CREAT, the other
  shards copied, exit 2;
- ``sort -S 1M -T tmp --files0-from`` of 150 inputs (spilling to temporary files and merging), the
  141st input a Unix socket (a collector's socket left in the drop directory): openat ENXIO, exit 2;
- a python3 hard-link snapshot of 50 shards of 100 files (os.link each), shard s44 a bind mount of
  itself: link EXDEV, the traceback, exit 1.

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good runs
never had. Every run of a case has the same command line; its data is picked by the run (the setup
counts the good runs).

Noise cases (``QUIET_FIFTYFIFTH``): the same long walks in good runs alone -- trees and lists of other
sizes, other contents, another readdir order.

No loopback service: the set takes no ports.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from .files import mounted_tmpfs, run_quiet, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    argv_in,
    sh_argv,
    unmount_under,
)

OPEN = frozenset({"openat", "open"})
READ = frozenset({"read", "pread64", "readv"})
WRITE = frozenset({"write", "writev", "pwrite64"})
STAT = frozenset({"lstat", "newfstatat", "stat", "statx"})
UNLINK = frozenset({"unlinkat", "unlink"})
LINK = frozenset({"linkat", "link"})
CHOWN = frozenset({"chown", "fchownat", "lchown"})
PY = "/usr/bin/python3"

_TURNS = RunTurns()  # which good run of each case is being set up


def bind_read_only(target: Path) -> None:
    """`target` bind-mounted on itself read-only (a volume remounted read-only)."""
    run_quiet("mount", "--bind", str(target), str(target))
    run_quiet("mount", "-o", "remount,bind,ro", str(target))


def _rows(lo: int, hi: int) -> str:
    return "".join(f"{token(3)},{random.randrange(10**6)},{token(2)}\n" for _ in range(random.randrange(lo, hi)))


def _record_path(k: int) -> str:
    """A record's place under data/: 100 records a directory (p00/rec-00000.csv ...)."""
    return f"p{k // 100:02d}/rec-{k:05d}.csv"


def _records(base: Path, count: int, *, mode_of=lambda k: 0o644) -> list[Path]:
    paths = []
    for k in range(count):
        paths.append(write_file(base / "data" / _record_path(k), _rows(2, 12), mode=mode_of(k)))
    return paths


# --- wc -l --files0-from over 2,000 records as nobody; the 1,800th root's 0600 ---------------------------------
WC_ARGV = ["/usr/bin/wc", "-l", "--files0-from={b}/lists/today.list0"]


def _wc_tree(base: Path, count: int, unreadable: int | None = None) -> None:
    paths = _records(base, count, mode_of=lambda k: 0o600 if k == unreadable else 0o644)
    write_file(base / "lists" / "today.list0", b"".join(str(p).encode() + b"\0" for p in paths))


def wc_build(base: Path, bad: bool) -> None:
    # the bad day's record 1799 was restored by root from a backup with the backup's 0600
    _wc_tree(base, _TURNS.pick(base, bad, [1900, 2100, 2000], 2000), unreadable=1799 if bad else None)


# --- xargs -a manifest md5sum over 2,800 records; the 2,501st a directory ------------------------------------------
MD5_SH = 'cd "$1/data" && exec /usr/bin/xargs -a ../manifest /usr/bin/md5sum > "$1/out/MD5SUMS"'


def _md5_tree(base: Path, count: int, as_dir: int | None = None) -> None:
    names = []
    for k in range(count):
        name = _record_path(k)
        if k == as_dir:  # the unpack step made the record a directory holding it
            write_file(base / "data" / name / "payload.csv", _rows(2, 12))
        else:
            write_file(base / "data" / name, _rows(2, 12))
        names.append(name)
    write_file(base / "manifest", "".join(f"{n}\n" for n in names))
    (base / "out").mkdir()


def md5_build(base: Path, bad: bool) -> None:
    _md5_tree(base, _TURNS.pick(base, bad, [2600, 3000, 2800], 2800), as_dir=2500 if bad else None)


# --- rsync -rL of 30 shard directories; shard d27's latest symlink points at itself --------------------------------
RSYNC_ARGV = ["/usr/bin/rsync", "-rL", "{b}/src/", "{b}/dst/"]


def _shards(base: Path, shards: int, per: int, loop: int | None = None) -> None:
    for d in range(shards):
        top = base / "src" / f"d{d:02d}"
        for k in range(per):
            write_file(top / f"seg-{k:03d}.dat", _rows(2, 8))
        latest = top / "latest"
        # the rotation script's bad run pointed d27/latest at itself instead of the newest segment
        latest.symlink_to("latest" if d == loop else f"seg-{per - 1:03d}.dat")
    (base / "dst").mkdir()


def rsync_build(base: Path, bad: bool) -> None:
    shards, per = _TURNS.pick(base, bad, [(28, 80), (32, 75), (30, 70)], (30, 75))
    _shards(base, shards, per, loop=27 if bad else None)


# --- gzip -r of 30 days of logs; one log of day-27 replaced by a symlink to day-26's copy --------------------------
GZIP_SH = 'exec /usr/bin/gzip -r "$1"/logs/day-*'


def _log_days(base: Path, days: int, per: int, linked: tuple[int, int] | None = None) -> None:
    for d in range(1, days + 1):
        for k in range(per):
            path = base / "logs" / f"day-{d:02d}" / f"app-{k:03d}.log"
            if linked == (d, k):  # the dedup step replaced it with a link to the same bytes a day earlier
                path.parent.mkdir(parents=True, exist_ok=True)
                path.symlink_to(f"../day-{d - 1:02d}/app-{k:03d}.log")
            else:
                write_file(path, _rows(3, 20))


def gzip_build(base: Path, bad: bool) -> None:
    days, per = _TURNS.pick(base, bad, [(28, 70), (31, 80), (30, 75)], (30, 75))
    _log_days(base, days, per, linked=(27, 40) if bad else None)


# --- bzip2 -k of 25 days of logs; one log of day-23 a dangling symlink to cold storage ---------------------------
BZIP2_SH = 'cd "$1/logs" && exec /usr/bin/bzip2 -k day-*/*.log'


def bzip2_build(base: Path, bad: bool) -> None:
    days, per = _TURNS.pick(base, bad, [(23, 80), (27, 75), (25, 85)], (25, 80))
    _log_days(base, days, per)
    if bad:  # the tiering step moved day-23/app-055.log to cold storage, leaving a link to where it is not mounted
        log = base / "logs" / "day-23" / "app-055.log"
        log.unlink()
        log.symlink_to("/mnt/cold-archive/logs/day-23/app-055.log")


# --- sha256sum p*/* of 3,000 records into SHA256SUMS on a 512 KiB tmpfs still holding yesterday's list ---------
SHA_SH = 'cd "$1/data" && exec /usr/bin/sha256sum p*/* > "$1/out/SHA256SUMS"'


def sha_build(base: Path, bad: bool) -> None:
    _records(base, _TURNS.pick(base, bad, [2800, 3200, 3000], 3000))
    mounted_tmpfs(base / "out", "512k")
    if bad:  # yesterday's list was kept (a rotation that failed) and takes 280 KiB of the 512
        write_file(base / "out" / "SHA256SUMS.1", random.randbytes(280 << 10))


# --- sqlite3 loading rows one transaction each under ulimit -f; the bad day's rows grow past it --------------------
SQLITE_SH = 'trap "" XFSZ; ulimit -f 2600; exec /usr/bin/sqlite3 "$1/ev.db" < "$1/in/load.sql"'


def _load(base: Path, rows: int) -> None:
    lines = ["PRAGMA journal_mode=WAL;", "PRAGMA synchronous=OFF;", "PRAGMA wal_autocheckpoint=100;",
             "CREATE TABLE IF NOT EXISTS ev(id INTEGER PRIMARY KEY, host TEXT, payload BLOB);"]
    lines += [f"INSERT INTO ev(host, payload) VALUES('h{random.randrange(40)}-{token(2)}', randomblob(300));"
              for _ in range(rows)]
    write_file(base / "in" / "load.sql", "\n".join(lines) + "\n")


def sqlite_build(base: Path, bad: bool) -> None:
    # ~320 bytes a row: the 1.3 MB limit holds ~4,100 rows; the bad day has 4,600
    _load(base, _TURNS.pick(base, bad, [3000, 3400, 3200], 4600))


# --- rm -rf spool/day-* of 30 days of spool files; day-27 a read-only mount -----------------------------------------
RM_SH = 'exec /usr/bin/rm -rf "$1"/spool/day-*'


def _spool(base: Path, days: int, per: int) -> None:
    for d in range(1, days + 1):
        for k in range(per):
            write_file(base / "spool" / f"day-{d:02d}" / f"q{k % 4}" / f"msg-{k:03d}-{token(2)}", _rows(1, 4))


def rm_build(base: Path, bad: bool) -> None:
    days, per = _TURNS.pick(base, bad, [(28, 70), (32, 55), (30, 62)], (30, 62))
    _spool(base, days, per)
    if bad:  # the spool volume of day-27 was remounted read-only after an I/O error
        bind_read_only(base / "spool" / "day-27")


# --- tee of a feed to each subscriber's file under ulimit -n 1024; the bad day's 1,100 subscribers -----------------
# the job's wrapper closes every descriptor it inherited first (whatever starts it: the limit counts them), so
# the first subscriber over the limit is the same whoever runs it
TEE_BASH = ('for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && exec {n}>&-; done; '
            'ulimit -n 1024 && cd "$1/out" && exec /usr/bin/tee $(cat ../subscribers) < ../in/feed.txt > /dev/null')


def tee_argv(base: Path) -> list[str]:
    return ["/usr/bin/bash", "-c", TEE_BASH, "bash", str(base)]


def tee_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [900, 960, 850], 1100)
    write_file(base / "subscribers", "".join(f"sub-{k:04d}\n" for k in range(count)))
    write_file(base / "in" / "feed.txt", _rows(1500, 2000))
    (base / "out").mkdir()


# --- xargs -a done.list touch of 3,000 job stamps; the 2,701st named after the job's whole command line ------------
TOUCH_SH = 'cd "$1/stamps" && exec /usr/bin/xargs -a ../done.list /usr/bin/touch'
LONG_JOB = "job-02700-" + "-".join(["python3", "train.py", "--epochs=90", "--lr=0.1", "--batch=512"] * 8)


def touch_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [2800, 3200, 3000], 3000)
    names = [f"job-{k:05d}-{token(3)}.done" for k in range(count)]
    if bad:  # the submitter named job 2700's stamp after its whole command line (over 255 bytes)
        names[2700] = f"{LONG_JOB}.done"
    write_file(base / "done.list", "".join(f"{n}\n" for n in names))
    (base / "stamps").mkdir()


# --- find . | sort | cpio -pdm dst of 30 shard directories; the destination's d27 a read-only mount ---------------
CPIO_SH = 'cd "$1/src" && /usr/bin/find . -print | /usr/bin/sort | /usr/bin/cpio -pdm --quiet "$1/dst"'


def cpio_build(base: Path, bad: bool) -> None:
    shards, per = _TURNS.pick(base, bad, [(28, 70), (32, 65), (30, 75)], (30, 75))
    for d in range(shards):
        for k in range(per):
            write_file(base / "src" / f"d{d:02d}" / f"obj-{k:03d}.bin", random.randbytes(random.randrange(50, 400)))
    (base / "dst").mkdir()
    if bad:  # the archive volume for shard d27 is mounted there, read-only after an I/O error
        (base / "dst" / "d27").mkdir()
        bind_read_only(base / "dst" / "d27")


# --- sort -S 1M -T tmp --files0-from of 150 inputs, spilling; the 141st input a Unix socket -------------------------
SORT_ARGV = ["/usr/bin/sort", "-S", "1M", "-T", "{b}/tmp", "--files0-from={b}/inputs.list0", "-o", "{b}/out/sorted"]


def _sort_inputs(base: Path, count: int, sock: int | None = None) -> None:
    paths = []
    for k in range(count):
        path = base / "in" / f"part-{k:04d}.txt"
        if k == sock:  # a collector's socket left in the drop directory under a part's name
            path.parent.mkdir(parents=True, exist_ok=True)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.bind(str(path))
        else:
            write_file(path, "".join(f"{random.getrandbits(48):012x} {k}\n" for _ in range(random.randrange(2500, 3500))))
        paths.append(path)
    write_file(base / "inputs.list0", b"".join(str(p).encode() + b"\0" for p in paths))
    (base / "tmp").mkdir()
    (base / "out").mkdir()


def sort_build(base: Path, bad: bool) -> None:
    _sort_inputs(base, _TURNS.pick(base, bad, [130, 160, 145], 150), sock=140 if bad else None)


# --- a python3 hard-link snapshot of 50 shards of 100 files; shard s44 a bind mount of itself ----------------------
SNAP_PY = """\
import os, sys

base = sys.argv[1]
src, snap = os.path.join(base, "src"), os.path.join(base, "snap")
linked = 0
for shard in sorted(os.listdir(src)):
    os.makedirs(os.path.join(snap, shard), exist_ok=True)
    for name in sorted(os.listdir(os.path.join(src, shard))):
        os.link(os.path.join(src, shard, name), os.path.join(snap, shard, name))
        linked += 1
print(linked)
"""
SNAP_ARGV = [PY, "-S", "{b}/bin/snap.py", "{b}"]


def _snap_tree(base: Path, shards: int, per: int) -> None:
    write_file(base / "bin" / "snap.py", SNAP_PY)
    for s in range(shards):
        for k in range(per):
            write_file(base / "src" / f"s{s:02d}" / f"blk-{k:03d}", _rows(1, 4))


def snap_build(base: Path, bad: bool) -> None:
    shards = _TURNS.pick(base, bad, [46, 52, 49], 50)
    _snap_tree(base, shards, 100)
    if bad:  # shard s44 was moved to another volume and bind-mounted back in place
        run_quiet("mount", "--bind", str(base / "src" / "s44"), str(base / "src" / "s44"))


def _teardown(base: Path) -> None:
    unmount_under(base)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=_teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYFIFTH: list[Scenario] = [
    _sc("t55_wc_files0_record_1800_unreadable", "wc -l --files0-from over 1,900-2,100 records as nobody",
        argv_in(WC_ARGV), wc_build, OPEN, "EACCES", lambda b: f"{b}/data/p17/rec-01799.csv", unprivileged=True,
        description="wc -l --files0-from a list of 2,000 records as nobody; record 1799 is root's 0600: openat "
                    "EACCES after 1,799 files counted, the rest counted, exit 1"),
    _sc("t55_md5sum_manifest_record_is_dir", "md5sum (xargs -a manifest) over 2,600-3,000 records",
        sh_argv(MD5_SH), md5_build, READ, "EISDIR", lambda b: f"{b}/data/p25/rec-02500.csv",
        description="xargs -a manifest md5sum > MD5SUMS over 2,800 records; the unpack step made record 2500 a "
                    "directory: md5sum's read EISDIR, the rest summed, exit 123"),
    _sc("t55_rsync_copy_links_latest_loop", "rsync -rL of 28-32 shard directories",
        argv_in(RSYNC_ARGV), rsync_build, STAT, "ELOOP", lambda b: f"{b}/src/d27/latest",
        description="rsync -rL src/ dst/ of 30 shards of 75 segments and a latest symlink; d27/latest points at "
                    "itself: the sender's newfstatat ELOOP (readlink_stat failed), the rest copied, exit 23"),
    _sc("t55_gzip_r_log_replaced_by_symlink", "gzip -r of 28-31 days of logs",
        sh_argv(GZIP_SH), gzip_build, OPEN, "ELOOP", lambda b: f"{b}/logs/day-27/app-040.log",
        description="gzip -r logs/day-* (2,000-2,500 logs); a dedup step replaced day-27/app-040.log by a symlink "
                    "to day-26's: gzip's openat O_NOFOLLOW ELOOP, the rest compressed, exit 1"),
    _sc("t55_bzip2_k_log_dangling_symlink", "bzip2 -k of 23-27 days of logs",
        sh_argv(BZIP2_SH), bzip2_build, OPEN, "ENOENT", lambda b: f"{b}/logs/day-23/app-055.log",
        description="bzip2 -k day-*/*.log (2,000 logs); the tiering step left day-23/app-055.log a symlink to "
                    "cold storage that is not mounted: openat of the input ENOENT, \"Can't open input file\", the "
                    "rest compressed, exit 1"),
    _sc("t55_sha256sum_sums_tmpfs_full", "sha256sum p*/* > SHA256SUMS of 2,800-3,200 records",
        sh_argv(SHA_SH), sha_build, WRITE, "ENOSPC", lambda b: f"{b}/out/SHA256SUMS",
        description="sha256sum p*/* > out/SHA256SUMS on a 512 KiB tmpfs; yesterday's list (280 KiB) was never "
                    "rotated away: the write fails ENOSPC after ~2,850 of 3,000 lines, exit 1"),
    _sc("t55_sqlite3_load_past_ulimit_f", "sqlite3 loading 3,000-3,400 rows under ulimit -f 2600",
        sh_argv(SQLITE_SH), sqlite_build, WRITE, "EFBIG", lambda b: f"{b}/ev.db",
        description="sqlite3 ev.db < load.sql (WAL, one transaction a row) under ulimit -f 2600, SIGXFSZ "
                    "ignored; the bad day's 4,600 rows grow ev.db past 1.3 MB at a checkpoint: pwrite64 EFBIG"),
    _sc("t55_rm_rf_spool_day_ro", "rm -rf spool/day-* of 28-32 days",
        sh_argv(RM_SH), rm_build, UNLINK, "EROFS", lambda b: f"{b}/spool/day-27/*",
        description="rm -rf spool/day-* (30 days of 62 messages); day-27 is a read-only mount: unlinkat EROFS "
                    "for its messages, the later days removed, exit 1"),
    _sc("t55_tee_subscribers_emfile", "tee to 850-960 subscribers' files under ulimit -n 1024",
        tee_argv, tee_build, OPEN, "EMFILE", lambda b: f"{b}/out/sub-1021",
        description="a bash wrapper closes the descriptors it inherited, then tee $(cat subscribers) < feed "
                    "under ulimit -n 1024; the bad day has 1,100 subscribers: "
                    "openat of sub-1021 fails EMFILE, the feed written to the 1,021 opened, exit 1"),
    _sc("t55_touch_stamp_name_too_long", "touch (xargs -a done.list) of 2,800-3,200 job stamps",
        sh_argv(TOUCH_SH), touch_build, OPEN, "ENAMETOOLONG", lambda b: f"{b}/stamps/job-02700-python3-*",
        description="xargs -a done.list touch in stamps/; job 2700's stamp is named after its whole command line "
                    "(over 255 bytes): openat O_CREAT ENAMETOOLONG, the rest touched, exit 123"),
    _sc("t55_cpio_pass_dest_shard_ro", "cpio -pdm of 28-32 shard directories (find | sort)",
        sh_argv(CPIO_SH), cpio_build, CHOWN, "EROFS", lambda b: f"{b}/dst/*d27",
        description="find . | sort | cpio -pdm dst; dst/d27 is a read-only mount: cpio's chown of dst/./d27 "
                    "(there already) fails EROFS, then its chmod, utimensat and the openat O_CREAT of each of its "
                    "files, the later shards copied, exit 2"),
    _sc("t55_sort_spill_input_is_socket", "sort -S 1M -T tmp --files0-from of 130-160 inputs",
        argv_in(SORT_ARGV), sort_build, OPEN, "ENXIO", lambda b: f"{b}/in/part-0140.txt",
        description="sort -S 1M (spilling to tmp/ and merging) of 150 inputs; part-0140.txt is a collector's "
                    "Unix socket: openat ENXIO after 140 inputs read, exit 2"),
    _sc("t55_python3_hardlink_snapshot_exdev", "python3 snap.py (os.link of 46-52 shards of 100 files)",
        argv_in(SNAP_ARGV), snap_build, LINK, "EXDEV", lambda b: f"{b}/src/s44/blk-000",
        description="python3 hard-links src/<shard>/<file> into snap/ (5,000 links); shard s44 is a bind mount "
                    "of itself: link(2) of its first file EXDEV, the traceback, exit 1"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------
def wc_noise(base: Path, run: int) -> None:
    _wc_tree(base, [1900, 2200, 2050][run % 3])


def md5_noise(base: Path, run: int) -> None:
    _md5_tree(base, [2600, 3100, 2900][run % 3])


def rsync_noise(base: Path, run: int) -> None:
    _shards(base, *[(27, 85), (33, 60), (30, 72)][run % 3])


def gzip_noise(base: Path, run: int) -> None:
    _log_days(base, *[(29, 60), (32, 52), (27, 70)][run % 3])


def sqlite_noise(base: Path, run: int) -> None:
    _load(base, [3000, 3600, 3300][run % 3])


def rm_noise(base: Path, run: int) -> None:
    _spool(base, *[(26, 70), (31, 58), (29, 62)][run % 3])


def sort_noise(base: Path, run: int) -> None:
    _sort_inputs(base, [120, 165, 140][run % 3])


QUIET_FIFTYFIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t55_wc_files0_lengths_noise", argv_in(WC_ARGV), wc_noise,
                  description="wc -l --files0-from over 1,900, 2,200, 2,050 records"),
    NoAnomalyCase("t55_md5sum_manifest_lengths_noise", sh_argv(MD5_SH), md5_noise,
                  description="xargs -a manifest md5sum over 2,600, 3,100, 2,900 records"),
    NoAnomalyCase("t55_rsync_copy_links_trees_noise", argv_in(RSYNC_ARGV), rsync_noise,
                  description="rsync -rL of 27x85, 33x60, 30x72 segments with valid latest links"),
    NoAnomalyCase("t55_gzip_r_days_noise", sh_argv(GZIP_SH), gzip_noise,
                  description="gzip -r of 29x60, 32x52, 27x70 logs: other readdir orders"),
    NoAnomalyCase("t55_sqlite3_load_rows_noise", sh_argv(SQLITE_SH), sqlite_noise,
                  description="sqlite3 loading 3,000, 3,600, 3,300 rows under the same ulimit -f"),
    NoAnomalyCase("t55_rm_rf_spool_days_noise", sh_argv(RM_SH), rm_noise,
                  description="rm -rf of 26x70, 31x58, 29x62 spool messages"),
    NoAnomalyCase("t55_sort_spill_inputs_noise", argv_in(SORT_ARGV), sort_noise,
                  description="sort -S 1M spilling 120, 165, 140 inputs"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown) and forget the runs' counts."""
    for name in [*_TURNS.good_runs, *(s.name for s in REAL_FIFTYFIFTH), *(c.name for c in QUIET_FIFTYFIFTH)]:
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _TURNS.good_runs.clear()
