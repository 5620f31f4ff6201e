"""A thirty-seventh set of real programs with one real fault each: **checkpoint and dataset I/O of
training jobs** -- how a job saves and a loader reads its shards, done with real tools: ``dd``
with ``conv=fsync oflag=sync``, ``sync -f``, a Python shard writer (``os.posix_fallocate``,
``os.pwrite``, ``os.fsync``, ``os.replace``), a Python ``mmap`` reader that skips the holes of
sparse shards with ``SEEK_DATA``, ``split -b`` of a model file, ``sha512sum -c`` of a manifest,
``rsync --inplace`` to a mirror, ``cp --reflink=auto``, ``truncate -s`` preallocating a shard and
``link`` making a hard-linked ``latest`` shard. The fault is one the storage gives the job:

- **the volume**: ``dd oflag=sync`` onto a checkpoint tmpfs an error remounted read-only (open
  EROFS), the Python shard writer's ``posix_fallocate`` of its third shard on a tmpfs a stale
  checkpoint filled (fallocate ENOSPC, mid-checkpoint), ``rsync --inplace`` onto a full mirror
  tmpfs (write ENOSPC);
- **the job's file size limit** (``ulimit -f``, SIGXFSZ ignored as a launcher does):
  ``split -b 1M`` of a model file (write EFBIG on the first shard), ``truncate -s 64M``
  preallocating a shard (ftruncate EFBIG), ``cp --reflink=auto`` of a shard into a step directory
  (tmpfs cannot clone: the copy's copy_file_range EFBIG);
- **the shards**: ``sha512sum -c`` of a manifest naming a shard a keep-last-N clean-up removed
  (open ENOENT), ``sync -f`` of a step directory the same clean-up removed (open ENOENT), the
  Python mmap reader of a shard a concurrent clean-up truncated to nothing (lseek SEEK_DATA
  ENXIO), ``link`` of a step's shard as ``latest`` whose directory a new node image mounts as a
  tmpfs of its own (link EXDEV).

Faults (``t37_`` cases): dd's openat EROFS, python3's fallocate ENOSPC, rsync's write ENOSPC,
split's write EFBIG, truncate's ftruncate EFBIG, cp's copy_file_range EFBIG, sha512sum's openat
ENOENT, sync's openat ENOENT, python3's lseek ENXIO, link's link EXDEV.

Good runs vary naturally: random shard contents and sizes, random stale files on the volumes,
pids. Noise cases (``QUIET_THIRTYSEVENTH``) are good runs alone, shard counts fixed and names
random: dd conv=fsync of randomly named shards then sync -f, the Python shard writer with random
names, split -b + cat + sha256sum -c of a random model, tar of a checkpoint directory then sync
-f, rsync --inplace over an older mirror, cp --reflink=auto + ln -f latest + truncate -s to a
random size.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from pathlib import Path

from .catalog import fill_up, umount
from .files import mounted_tmpfs, shell_argv, token, write_file
from .harness import PY, ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
WRITE = frozenset({"write", "writev", "pwrite64"})
LINK = frozenset({"link", "linkat"})
SHARDS = 4


def _remount_ro(target: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True, capture_output=True)


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _blob(lo_kib: int, hi_kib: int) -> bytes:
    return os.urandom(random.randrange(lo_kib, hi_kib) * 1024 + random.randrange(1024))


def _fsize(base: Path, blocks: int | None) -> None:
    """The job's RLIMIT_FSIZE for its launcher (dash's ulimit -f: 512-byte blocks)."""
    write_file(base / "fsize", "unlimited\n" if blocks is None else f"{blocks}\n")


# the launcher's limits: SIGXFSZ ignored (as a Python launcher leaves it), a file size limit
LIMITED = "trap '' XFSZ; ulimit -f \"$(cat \"$1/fsize\")\"; "


# --- dd conv=fsync oflag=sync: the checkpoint tmpfs remounted read-only -------------------------------
def _dd_argv(b: Path) -> list[str]:
    return ["dd", f"if={b}/stage/shard-00003.bin", f"of={b}/ckpt/step-00300/shard-00003.bin", "bs=64k",
            "conv=fsync", "oflag=sync", "status=none"]


def dd_sync_ckpt_remounted_ro(base: Path, bad: bool) -> None:
    write_file(base / "stage" / "shard-00003.bin", _blob(64, 512))
    ckpt = mounted_tmpfs(base / "ckpt", "16m")
    for n in range(3):  # the shards this step's earlier dd runs wrote
        write_file(ckpt / "step-00300" / f"shard-{n:05d}.bin", _blob(64, 512))
    if bad:  # an I/O error on the volume: errors=remount-ro took it read-only mid-checkpoint
        _remount_ro(ckpt)


# --- python3 -S: the shard writer's posix_fallocate on a tmpfs a stale checkpoint filled ------------------
SHARD_WRITER_PY = """import os, sys
base = sys.argv[1]
prefix = sys.argv[2] if len(sys.argv) > 2 else open(f"{base}/prefix").read().strip()
src = os.open(f"{base}/stage/weights.bin", os.O_RDONLY)
size = os.fstat(src).st_size
per = -(-size // @SHARDS@)
for n in range(@SHARDS@):
    tmp, final = f"{base}/ckpt/.{prefix}-{n:05d}.tmp", f"{base}/ckpt/{prefix}-{n:05d}.bin"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    length = min(per, size - n * per)
    os.posix_fallocate(fd, 0, length)
    done = 0
    while done < length:
        chunk = os.pread(src, min(65536, length - done), n * per + done)
        done += os.pwrite(fd, chunk, done)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, final)
dfd = os.open(f"{base}/ckpt", os.O_RDONLY | os.O_DIRECTORY)
os.fsync(dfd)
os.close(dfd)
""".replace("@SHARDS@", str(SHARDS))


def _writer_argv(b: Path) -> list[str]:
    return [*PY, "-c", SHARD_WRITER_PY, str(b), "shard"]


def python_fallocate_shard_disk_full(base: Path, bad: bool) -> None:
    write_file(base / "stage" / "weights.bin", os.urandom(2048 * 1024))  # 4 shards of 512 KiB
    ckpt = mounted_tmpfs(base / "ckpt", "4m")
    # the previous run's checkpoint, never cleaned up: the bad run's is big enough that only two
    # of the four new shards fit
    stale = (4096 - 1300) * 1024 if bad else random.randrange(256, 1024) * 1024
    write_file(ckpt / "stale" / f"step-{random.randrange(100, 999):05d}.bin", os.urandom(stale))


# --- rsync --inplace: a mirror tmpfs a runaway log filled ---------------------------------------------------
def _rsync_argv(b: Path) -> list[str]:
    return ["rsync", "-r", "--inplace", f"{b}/ckpt/", f"{b}/mirror/ckpt/"]


def rsync_inplace_mirror_full(base: Path, bad: bool) -> None:
    for n in range(SHARDS):
        write_file(base / "ckpt" / f"shard-{n:05d}.bin", _blob(128, 384))
    mirror = mounted_tmpfs(base / "mirror", "4m")
    (mirror / "ckpt").mkdir()
    write_file(mirror / "sync.log", os.urandom(random.randrange(16, 256) * 1024))
    if bad:  # the mirror job's log, left at debug, filled the mirror volume
        fill_up(mirror)


# --- split -b 1M under ulimit -f ------------------------------------------------------------------------------
SPLIT_SH = LIMITED + 'exec split -b 1M -d -a 3 "$1/stage/model.bin" "$1/shards/model.bin."'


def split_model_past_fsize(base: Path, bad: bool) -> None:
    write_file(base / "stage" / "model.bin", _blob(2600, 3800))
    (base / "shards").mkdir()
    _fsize(base, 1024 if bad else None)  # the bad job's launcher: 512 KiB


# --- truncate -s 64M: preallocating a shard under ulimit -f -------------------------------------------------------
TRUNCATE_SH = LIMITED + 'exec truncate -s 64M "$1/ckpt/shard-00000.bin"'


def truncate_prealloc_past_fsize(base: Path, bad: bool) -> None:
    (base / "ckpt").mkdir()
    for n in range(1, 1 + random.randrange(0, 3)):  # shards already there from a resumed save
        write_file(base / "ckpt" / f"shard-{n:05d}.bin", _blob(4, 64))
    _fsize(base, 32768 if bad else None)  # the bad job's launcher: 16 MiB


# --- cp --reflink=auto under ulimit -f --------------------------------------------------------------------------------
CP_SH = LIMITED + 'exec cp --reflink=auto "$1/ckpt/step-00400/model.bin" "$1/ckpt/best/model.bin"'


def cp_reflink_past_fsize(base: Path, bad: bool) -> None:
    write_file(base / "ckpt" / "step-00400" / "model.bin", _blob(1200, 2000))
    (base / "ckpt" / "best").mkdir()
    _fsize(base, 1024 if bad else None)  # the bad job's launcher: 512 KiB


# --- sha512sum -c: a manifest naming a shard the keep-last-N clean-up removed --------------------------------------
def _sha_argv(b: Path) -> list[str]:
    return ["sha512sum", "-c", "--strict", f"{b}/ckpt/step-00500/SHA512SUMS"]


def _shards_with_manifest(step: Path, algo: str, manifest: str, names: list[str]) -> None:
    lines = []
    for name in names:
        data = _blob(16, 256)
        write_file(step / name, data)
        lines.append(f"{hashlib.new(algo, data).hexdigest()}  {step}/{name}\n")
    write_file(step / manifest, "".join(lines))


def sha512sum_manifest_shard_missing(base: Path, bad: bool) -> None:
    step = base / "ckpt" / "step-00500"
    _shards_with_manifest(step, "sha512", "SHA512SUMS", [f"shard-{n:05d}.bin" for n in range(SHARDS)])
    if bad:  # the clean-up of another job's keep_last=2 globbed this step's shard-00002 too
        (step / "shard-00002.bin").unlink()


# --- sync -f: a step directory the keep-last-N clean-up removed ------------------------------------------------------
def _sync_argv(b: Path) -> list[str]:
    return ["sync", "-f", f"{b}/ckpt/step-00600/model.bin", f"{b}/ckpt/step-00600/optim.bin"]


def sync_f_step_dir_removed(base: Path, bad: bool) -> None:
    for step in (400, 500, 600):
        for name in ("model.bin", "optim.bin"):
            write_file(base / "ckpt" / f"step-{step:05d}" / name, _blob(8, 128))
    if bad:  # the clean-up sorted steps as strings once they reached six digits and removed the newest
        subprocess.run(["rm", "-rf", str(base / "ckpt" / "step-00600")], check=True)


# --- python3 -S: an mmap reader of a shard a concurrent clean-up truncated ----------------------------------------------
MMAP_READER_PY = """import hashlib, json, mmap, os, sys
base = sys.argv[1]
index = json.load(open(f"{base}/data/index.json"))
digest = hashlib.sha256()
for shard in index["shards"]:
    fd = os.open(f"{base}/data/{shard['name']}", os.O_RDONLY)
    starts = [os.lseek(fd, off, os.SEEK_DATA) for off, n in shard["records"]]  # skip preallocated holes
    mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    for start, (off, n) in zip(starts, shard["records"]):
        digest.update(mm[start:off + n])
    mm.close()
    os.close(fd)
print(digest.hexdigest())
"""


def _reader_argv(b: Path) -> list[str]:
    return [*PY, "-c", MMAP_READER_PY, str(b)]


def _dataset(data: Path, names: list[str]) -> None:
    shards = []
    for name in names:
        records, off, body = [], 0, b""
        for _ in range(8):
            rec = os.urandom(random.randrange(512, 8192))
            records.append([off, len(rec)])
            body += rec
            off += len(rec)
        write_file(data / name, body)
        shards.append({"name": name, "records": records})
    write_file(data / "index.json", json.dumps({"shards": shards}))


def python_mmap_reader_shard_truncated(base: Path, bad: bool) -> None:
    _dataset(base / "data", [f"train-{n:05d}.rec" for n in range(SHARDS)])
    if bad:  # a concurrent clean-up's `: > shard` (truncating instead of removing, for open handles)
        os.truncate(base / "data" / "train-00001.rec", 0)


# --- link: the latest shard as a hard link, latest/ a tmpfs of its own ----------------------------------------------------
def _link_argv(b: Path) -> list[str]:
    return ["link", f"{b}/ckpt/step-00700/model.bin", f"{b}/ckpt/latest/model.bin"]


def link_latest_across_mounts(base: Path, bad: bool) -> None:
    ckpt = mounted_tmpfs(base / "ckpt", "8m")
    write_file(ckpt / "step-00700" / "model.bin", _blob(64, 512))
    (ckpt / "latest").mkdir()
    if bad:  # the new node image mounts latest/ as a tmpfs of its own (for a fast-restore cache)
        mounted_tmpfs(ckpt / "latest", "8m")


REAL_THIRTYSEVENTH: list[Scenario] = [
    Scenario("t37_dd_sync_ckpt_remounted_ro", "dd conv=fsync oflag=sync (a shard onto the checkpoint volume)",
             _dd_argv, dd_sync_ckpt_remounted_ro, OPEN, "EROFS", lambda b: f"{b}/ckpt/step-00300/shard-00003.bin",
             teardown=_umounting("ckpt"),
             description="dd conv=fsync oflag=sync of the fourth shard onto a checkpoint tmpfs remounted "
                         "read-only mid-checkpoint (open EROFS)"),
    Scenario("t37_python_fallocate_shard_disk_full", "python3 -S (a shard writer: fallocate, pwrite, fsync, "
             "os.replace)", _writer_argv, python_fallocate_shard_disk_full, frozenset({"fallocate"}), "ENOSPC",
             lambda b: f"{b}/ckpt/.shard-00002.tmp", teardown=_umounting("ckpt"),
             description="a Python shard writer's posix_fallocate of its third shard on a checkpoint tmpfs a "
                         "stale checkpoint filled (fallocate ENOSPC, two shards in)"),
    Scenario("t37_rsync_inplace_mirror_full", "rsync -r --inplace (a checkpoint to a mirror)", _rsync_argv,
             rsync_inplace_mirror_full, WRITE, "ENOSPC", lambda b: f"{b}/mirror/ckpt/shard-*.bin",
             teardown=_umounting("mirror"),
             description="rsync --inplace of a checkpoint onto a mirror tmpfs a debug log filled (write ENOSPC)"),
    Scenario("t37_split_model_past_fsize", "split -b 1M (a model into shards, under ulimit -f)",
             lambda b: shell_argv(SPLIT_SH, str(b)), split_model_past_fsize, WRITE, "EFBIG",
             lambda b: f"{b}/shards/model.bin.000",
             description="split -b 1M of a model file under a launcher's ulimit -f of 512 KiB, SIGXFSZ "
                         "ignored (the first shard's write EFBIG)"),
    Scenario("t37_truncate_prealloc_past_fsize", "truncate -s 64M (preallocating a shard, under ulimit -f)",
             lambda b: shell_argv(TRUNCATE_SH, str(b)), truncate_prealloc_past_fsize, frozenset({"ftruncate", "truncate"}),
             "EFBIG", lambda b: f"{b}/ckpt/shard-00000.bin",
             description="truncate -s 64M preallocating a shard under ulimit -f of 16 MiB (ftruncate EFBIG)"),
    Scenario("t37_cp_reflink_past_fsize", "cp --reflink=auto (a step's model as best, under ulimit -f)",
             lambda b: shell_argv(CP_SH, str(b)), cp_reflink_past_fsize, frozenset({"copy_file_range", "write"}), "EFBIG",
             lambda b: f"{b}/ckpt/*/model.bin",  # copy_file_range's path is its source, path2 the copy
             description="cp --reflink=auto of a step's model into best/ under ulimit -f of 512 KiB: no "
                         "clone on tmpfs, the copy stops at the limit (copy_file_range EFBIG)"),
    Scenario("t37_sha512sum_manifest_shard_missing", "sha512sum -c --strict (a step's manifest)", _sha_argv,
             sha512sum_manifest_shard_missing, OPEN, "ENOENT", lambda b: f"{b}/ckpt/step-00500/shard-00002.bin",
             description="sha512sum -c of a checkpoint manifest naming a shard a keep-last-N clean-up removed "
                         "(open ENOENT)"),
    Scenario("t37_sync_f_step_dir_removed", "sync -f (a step's model and optimizer state)", _sync_argv,
             sync_f_step_dir_removed, OPEN, "ENOENT", lambda b: f"{b}/ckpt/step-00600/model.bin",
             description="sync -f of the newest step's files, whose directory a clean-up sorting steps "
                         "wrongly removed (open ENOENT)"),
    Scenario("t37_python_mmap_reader_shard_truncated", "python3 -S (an mmap reader skipping holes with "
             "SEEK_DATA)", _reader_argv, python_mmap_reader_shard_truncated, frozenset({"lseek"}), "ENXIO",
             lambda b: f"{b}/data/train-00001.rec",
             description="a Python mmap reader seeking to each record with SEEK_DATA in a shard a concurrent "
                         "clean-up truncated to nothing (lseek ENXIO)"),
    Scenario("t37_link_latest_across_mounts", "link (a step's model as latest/, a hard link)", _link_argv,
             link_latest_across_mounts, LINK, "EXDEV", lambda b: f"{b}/ckpt/*/model.bin",  # the source or the link
             teardown=_umounting("ckpt"),
             description="link of a step's model into latest/, which a new node image mounts as a tmpfs of "
                         "its own (link EXDEV)"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
DD_NOISE_SH = ('for f in "$1"/stage/*.bin; do dd if="$f" of="$1/ckpt/${f##*/}" bs=64k conv=fsync oflag=sync '
               'status=none || exit 1; done; exec sync -f "$1/ckpt"')


def _dd_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for _ in range(SHARDS):  # shard names carry the writer's random id
        write_file(base / "stage" / f"shard-{token(4)}.bin", _blob(16, 256))
    (base / "ckpt").mkdir()


def _writer_noise_argv(b: Path) -> list[str]:  # the same command in every run: the prefix is in a file
    return [*PY, "-c", SHARD_WRITER_PY, str(b)]


def _writer_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "stage" / "weights.bin", _blob(256, 1024))
    write_file(base / "prefix", f"shard-{token(4)}\n")
    (base / "ckpt").mkdir()


SPLIT_NOISE_SH = ('split -b 256K -d -a 3 "$1/stage/model.bin" "$1/shards/model.bin." && '
                  'cat "$1"/shards/model.bin.* > "$1/out/model.bin" && cd "$1/out" && exec sha256sum -c --quiet '
                  '"$1/stage/SHA256SUMS"')


def _split_noise(base: Path, run: int) -> None:  # noqa: ARG001
    data = os.urandom(1024 * 1024 - random.randrange(1, 64 * 1024))  # four pieces, whatever the size
    write_file(base / "stage" / "model.bin", data)
    write_file(base / "stage" / "SHA256SUMS", f"{hashlib.sha256(data).hexdigest()}  model.bin\n")
    (base / "shards").mkdir()
    (base / "out").mkdir()


TAR_NOISE_SH = 'tar -cf "$1/out/ckpt.tar" -C "$1" ckpt && exec sync -f "$1/out/ckpt.tar"'


def _tar_noise(base: Path, run: int) -> None:  # noqa: ARG001
    step = base / "ckpt" / f"step-{random.randrange(1, 99999):05d}"
    for _ in range(SHARDS):
        write_file(step / f"rank{token(2)}.pt", _blob(8, 128))
    write_file(step / "meta.json", json.dumps({"step": step.name, "loss": random.random()}))
    (base / "out").mkdir()


def _rsync_noise_argv(b: Path) -> list[str]:
    return ["rsync", "-r", "--inplace", f"{b}/ckpt/", f"{b}/mirror/ckpt/"]


def _rsync_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for n in range(SHARDS):
        new = _blob(64, 256)
        write_file(base / "ckpt" / f"shard-{n:05d}.bin", new)
        old = bytearray(new)  # the mirror's older copy: some blocks differ
        for _ in range(random.randrange(1, 8)):
            i = random.randrange(len(old))
            old[i] ^= 0xFF
        write_file(base / "mirror" / "ckpt" / f"shard-{n:05d}.bin", bytes(old))


LATEST_NOISE_SH = ('read step < "$1/spec/step" && cp --reflink=auto "$1/stage/model.bin" "$1/ckpt/$step/model.bin" && '
                   'ln -f "$1/ckpt/$step/model.bin" "$1/ckpt/latest/model.bin" && '
                   'exec truncate -s "$(cat "$1/spec/prealloc")" "$1/ckpt/$step/optim.bin"')


def _latest_noise(base: Path, run: int) -> None:  # noqa: ARG001
    step = f"step-{random.randrange(1, 99999):05d}"
    write_file(base / "spec" / "step", f"{step}\n")
    write_file(base / "spec" / "prealloc", f"{random.randrange(1, 64)}M\n")
    write_file(base / "stage" / "model.bin", _blob(64, 512))
    (base / "ckpt" / step).mkdir(parents=True)
    write_file(base / "ckpt" / "latest" / "model.bin", _blob(64, 512))  # the previous step's, replaced by ln -f


QUIET_THIRTYSEVENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t37_dd_fsync_random_shard_names", lambda b: shell_argv(DD_NOISE_SH, str(b)), _dd_noise,
                  description="dd conv=fsync oflag=sync of four randomly named shards of random sizes, then "
                              "sync -f"),
    NoAnomalyCase("t37_python_shard_writer_random_prefix", _writer_noise_argv, _writer_noise,
                  description="the Python shard writer (posix_fallocate, pwrite, fsync, os.replace) of a random "
                              "model into four shards with a random prefix"),
    NoAnomalyCase("t37_split_cat_sha256_reassembly", lambda b: shell_argv(SPLIT_NOISE_SH, str(b)), _split_noise,
                  description="split -b 256K of a random model into four pieces, cat reassembly, sha256sum -c"),
    NoAnomalyCase("t37_tar_checkpoint_dir_sync", lambda b: shell_argv(TAR_NOISE_SH, str(b)), _tar_noise,
                  description="tar of a checkpoint directory of a random step with randomly named rank files, "
                              "then sync -f of the archive"),
    NoAnomalyCase("t37_rsync_inplace_older_mirror", _rsync_noise_argv, _rsync_noise,
                  description="rsync --inplace of four shards over a mirror's older copies, a random number of "
                              "bytes different"),
    NoAnomalyCase("t37_cp_reflink_ln_latest_truncate", lambda b: shell_argv(LATEST_NOISE_SH, str(b)), _latest_noise,
                  description="cp --reflink=auto into a random step, ln -f latest/, truncate -s of a random size"),
]


def quiet_teardown() -> None:
    """Unmount what any failed case may have left."""
    for sc in REAL_THIRTYSEVENTH:
        base = ROOT / sc.name
        for n in ("ckpt", "mirror"):
            umount(base / n)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
