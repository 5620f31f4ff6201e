"""A thirty-fourth set of real programs with one real fault each: **mount options and file-system
limits a job's scratch space runs into** -- installed programs (coreutils, cpio, bzip2,
util-linux, perl) working in scratch, checkpoint, tool and data directories the case mounts as
tmpfs with the options a hardened or crowded node gives them:

- **inode limits** (``nr_inodes=``, bytes to spare): ``mktemp -d -p`` of a job's work directory,
  ``ln -sfn`` of a ``latest`` checkpoint link, ``cpio -idm -D`` unpacking a dataset bundle;
- **size limits** (``size=``): ``bzip2 -k`` of an activation dump, ``cat`` merging shard parts
  (through a shell redirect);
- **mount flags**: ``env`` running a staged prep script and ``nohup`` running a staged binary
  (``noexec``), ``dd`` reading a device node of a staged root file system (``nodev``), a
  setuid-root copy of ``cat`` reading a root-only token as the job (``nosuid``), ``touch`` of a
  stamp in a directory bind-mounted read-only;
- **mounts over the job's directories**: ``head -c`` of data shards a stray tmpfs mounted over;
- **file-system features**: ``fallocate --zero-range`` of a preallocated checkpoint slot
  (tmpfs has no zero range: ext4 does);
- **locks**: a ``perl`` launcher taking its job lock with ``flock LOCK_NB``, a leftover holder
  (``flock(1)`` started in setup, killed in teardown) still holding it.

Faults (``t34_`` cases): a scratch tmpfs whose inodes a leftover job's files used up (mktemp's
mkdir ENOSPC, ln's symlinkat ENOSPC, cpio's openat/mkdir ENOSPC midway), a scratch tmpfs a
leftover dump nearly filled (bzip2's and cat's write ENOSPC midway), the scratch remounted
noexec (env's and nohup's execve EACCES), the staged root file system mounted nodev (dd's openat
EACCES), the tools volume mounted nosuid (the setuid copy's openat EACCES), the stamps directory
bind-mounted read-only (touch's openat EROFS), a tmpfs mounted over data/ (head's openat
ENOENT), the checkpoint directory moved to a tmpfs (fallocate EOPNOTSUPP), a leftover lock
holder (perl's flock EAGAIN).

Tried and dropped: ``dd oflag=direct`` on tmpfs (this kernel, 6.18, has O_DIRECT on tmpfs: no
EINVAL); ``sort -T`` at a full, read-only or unwritable tmp and ``flock -n`` (every such
(program, errno) pair is an earlier set's).

Good runs vary naturally: random contents, random names of leftover files, pids, random names
mktemp picks. Noise cases (``QUIET_THIRTYFOURTH``) are good runs alone on such mounts: mktemp work
directories in an inode-limited scratch, bzip2 on a sized scratch, a cpio round trip of random
names, a helper from a mktemp directory of a nosuid,nodev scratch, a free job lock, sort -T on a
tmpfs, fallocate/punch-hole/sparse copies, head of shards on a data tmpfs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .catalog import umount
from .files import shell_argv, write_file
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
MKDIR = frozenset({"mkdir", "mkdirat"})
SYMLINK = frozenset({"symlink", "symlinkat"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
EXEC = frozenset({"execve", "execveat"})
SETUP_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _token(n: int = 6) -> str:
    return secrets.token_hex(n)


def _mount(target: Path, opts: str) -> Path:
    """A tmpfs at `target` with mount options `opts` (size=, nr_inodes=, noexec ...)."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"mode=0755,{opts}", "tracebase-test", str(target)],
                   check=True, capture_output=True)
    return target


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _use_up_inodes(d: Path, leave: int = 0, prefix: str = "spill") -> int:
    """Create empty files in `d` until its file system has no inode left (a leftover job's
    spill files), then remove `leave` of them again; returns how many stay."""
    made = []
    while True:
        p = d / f"{prefix}-{len(made):05d}-{_token(2)}"
        try:
            p.touch()
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise
            break
        made.append(p)
        if len(made) > 100_000:
            raise RuntimeError(f"{d}: no inode limit")
    for p in made[len(made) - leave:] if leave else []:
        p.unlink()
    return len(made) - leave


def _fill(path: Path, nbytes: int) -> None:
    write_file(path, os.urandom(nbytes))


# --- mktemp -d -p: a scratch tmpfs whose inodes a leftover job used up -------------------------------
def _mktemp_argv(b: Path) -> list[str]:
    return ["mktemp", "-d", "-p", f"{b}/scratch", "job.XXXXXXXX"]


def mktemp_scratch_inodes(base: Path, bad: bool) -> None:
    scratch = _mount(base / "scratch", "size=16m,nr_inodes=96")
    for _ in range(random.randrange(5, 20)):  # an earlier job's cache, random names
        write_file(scratch / f"cache-{_token(4)}.npy", os.urandom(512))
    if bad:  # a crashed job's spill files: one per sample, every inode taken, megabytes free
        _use_up_inodes(scratch)


# --- ln -sfn: the latest-checkpoint link on a checkpoint tmpfs out of inodes -------------------------
def _ln_argv(b: Path) -> list[str]:
    return ["ln", "-sfn", "epoch-0003.pt", f"{b}/ckpt/latest"]


def ln_latest_inodes(base: Path, bad: bool) -> None:
    ckpt = _mount(base / "ckpt", "size=16m,nr_inodes=48")
    for epoch in (1, 2, 3):
        _fill(ckpt / f"epoch-{epoch:04d}.pt", 8192)
    if bad:  # the evaluation job dumped one tiny file per batch next to the checkpoints
        _dirs(ckpt, "eval")
        _use_up_inodes(ckpt / "eval", prefix="batch")


# --- cpio -idm -D: a dataset bundle unpacked into a scratch running out of inodes midway ----------------
def _cpio_argv(b: Path) -> list[str]:
    return ["cpio", "-idm", "--quiet", "-I", f"{b}/bundle.cpio", "-D", f"{b}/scratch"]


def _dataset_bundle(base: Path, names: list[str] | None = None) -> None:
    """bundle.cpio of a dataset tree (6 classes x 8 samples, random contents), in sorted order."""
    src = base / "src"
    names = names or [f"train/class{c}/sample-{s:03d}.bin" for c in range(6) for s in range(8)]
    for n in names:
        _fill(src / n, 256)
    listing = sorted({*names, *{str(Path(n).parent) for n in names}, "train"})
    subprocess.run(["cpio", "-o", "--quiet", "-H", "newc", "-O", str(base / "bundle.cpio")], cwd=src,
                   input="\n".join(listing) + "\n", text=True, check=True, capture_output=True, env=SETUP_ENV)
    shutil.rmtree(src)


def cpio_scratch_inodes(base: Path, bad: bool) -> None:
    _dataset_bundle(base)
    scratch = _mount(base / "scratch", "size=16m,nr_inodes=160")
    _dirs(scratch, "leftover")
    if bad:  # an earlier job's shards leave 20 inodes: the bundle needs 55
        _use_up_inodes(scratch / "leftover", leave=20, prefix="shard")
    else:
        for _ in range(random.randrange(10, 40)):
            write_file(scratch / "leftover" / f"shard-{_token(3)}", b"x")


# --- bzip2 -k: an activation dump compressed into a scratch a leftover dump nearly filled ------------------
def _bzip2_argv(b: Path) -> list[str]:
    return ["bzip2", "-k", "-f", f"{b}/scratch/activations.bin"]


def bzip2_scratch_full(base: Path, bad: bool) -> None:
    scratch = _mount(base / "scratch", "size=2m")
    _fill(scratch / "activations.bin", 512 * 1024)  # random: bzip2 cannot shrink it
    if bad:  # the previous step's dump, never cleaned up: 256 KiB left for a 512 KiB archive
        _fill(scratch / "core.dump", 2 * 1024 * 1024 - 768 * 1024)
    else:
        _fill(scratch / "core.dump", random.randrange(64, 512) * 1024)


# --- cat (a shell redirect): shard parts merged into a scratch that fills midway --------------------------
MERGE_SH = 'cat "$1"/parts/part-* > "$1/scratch/merged.bin"'


def cat_merge_scratch_full(base: Path, bad: bool) -> None:
    for i in range(6):
        _fill(base / "parts" / f"part-{i:02d}", 128 * 1024)
    scratch = _mount(base / "scratch", "size=2m")
    if bad:  # a leftover merge from a failed run: 512 KiB left for 768 KiB
        _fill(scratch / f"merged.bin.{_token(3)}", 1536 * 1024)
    else:
        _fill(scratch / f"merged.bin.{_token(3)}", random.randrange(64, 512) * 1024)


# --- env: a staged prep script on a scratch remounted noexec --------------------------------------------
PREP_SH = '#!/bin/sh\necho "$JOB_STAGE $$" > "${0%/bin/*}/stage"\n'


def _env_argv(b: Path) -> list[str]:
    return ["env", "JOB_STAGE=prep", f"{b}/scratch/bin/prep.sh"]


def env_prep_noexec(base: Path, bad: bool) -> None:
    # the node image's fstab hardened the scratch mount with noexec
    scratch = _mount(base / "scratch", "size=4m,nosuid,nodev" + (",noexec" if bad else ""))
    write_file(scratch / "bin" / "prep.sh", PREP_SH, 0o755)
    write_file(scratch / "run-id", _token(4))


# --- nohup: a staged binary on a scratch remounted noexec -----------------------------------------------
def _nohup_argv(b: Path) -> list[str]:
    return ["nohup", f"{b}/scratch/bin/digest", f"{b}/scratch/data.bin"]


def nohup_binary_noexec(base: Path, bad: bool) -> None:
    scratch = _mount(base / "scratch", "size=8m" + (",noexec" if bad else ""))
    _dirs(scratch, "bin")
    shutil.copy2("/usr/bin/md5sum", scratch / "bin" / "digest")  # the job stages its own tool
    _fill(scratch / "data.bin", 64 * 1024)


# --- dd: a device node of a staged root file system mounted nodev ---------------------------------------
def _dd_argv(b: Path) -> list[str]:
    return ["dd", f"if={b}/rootfs/dev/urandom", f"of={b}/out/seed.bin", "bs=512", "count=8", "status=none"]


def dd_rootfs_nodev(base: Path, bad: bool) -> None:
    # the staged root file system went to a tmpfs mounted nodev (as container runtimes mount it)
    rootfs = _mount(base / "rootfs", "size=4m" + (",nodev" if bad else ""))
    _dirs(rootfs, "dev", "etc", "tmp")
    for name, minor in (("null", 3), ("zero", 5), ("urandom", 9)):
        os.mknod(rootfs / "dev" / name, 0o666 | 0o020000, os.makedev(1, minor))
    write_file(rootfs / "etc" / "hostname", f"job-{_token(3)}\n")
    _dirs(base, "out")


# --- a setuid-root copy of cat, as the job: the tools volume mounted nosuid --------------------------------
def _suid_argv(b: Path) -> list[str]:
    return [f"{b}/tools/bin/read-token", f"{b}/secret/token"]


def suid_reader_nosuid(base: Path, bad: bool) -> None:
    write_file(base / "secret" / "token", _token(16) + "\n", 0o600)  # root:0600
    tools = _mount(base / "tools", "size=4m,nodev" + (",nosuid" if bad else ""))
    _dirs(tools, "bin")
    shutil.copy2("/usr/bin/cat", tools / "bin" / "read-token")
    os.chown(tools / "bin" / "read-token", 0, 0)
    (tools / "bin" / "read-token").chmod(0o4755)


# --- touch: a stamp in a directory bind-mounted read-only ----------------------------------------------
def _touch_argv(b: Path) -> list[str]:
    return ["touch", f"{b}/work/stamps/prep.done"]


def touch_stamps_ro_bind(base: Path, bad: bool) -> None:
    for _ in range(random.randrange(1, 4)):
        write_file(base / "work" / "stamps" / f"fetch-{_token(3)}.done", "")
    _fill(base / "work" / "ckpt" / "epoch-0001.pt", 4096)
    if bad:  # the job's sandbox bind-mounted its stamps read-only (meant for the inputs only)
        stamps = str(base / "work" / "stamps")
        subprocess.run(["mount", "--bind", stamps, stamps], check=True, capture_output=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", stamps], check=True, capture_output=True)


# --- head -c: data shards hidden by a tmpfs mounted over data/ ------------------------------------------
def _head_argv(b: Path) -> list[str]:
    return ["head", "-c", "256", f"{b}/data/shard-000.bin", f"{b}/data/shard-001.bin"]


def head_shards_hidden(base: Path, bad: bool) -> None:
    for i in range(3):
        _fill(base / "data" / f"shard-{i:03d}.bin", 4096)
    if bad:  # a leftover job's scratch tmpfs was mounted over data/: the shards are under it
        data = _mount(base / "data", "size=4m")
        write_file(data / f"tmp-{_token(4)}", "scratch\n")


# --- fallocate --zero-range: the checkpoint slot moved to a tmpfs ---------------------------------------
def _fallocate_argv(b: Path) -> list[str]:
    return ["fallocate", "-z", "-o", "0", "-l", "1MiB", f"{b}/ckpt/slot.bin"]


def fallocate_zero_range_tmpfs(base: Path, bad: bool) -> None:
    if bad:  # the checkpoint directory moved to a tmpfs: no FALLOC_FL_ZERO_RANGE there
        _mount(base / "ckpt", "size=8m")
    _fill(base / "ckpt" / "slot.bin", 2 * 1024 * 1024)


# --- perl flock LOCK_NB: a leftover holder of the job lock ----------------------------------------------
PERL_LOCK = r"""use Fcntl qw(:flock);
open(my $fh, ">>", $ARGV[0]) or die "open $ARGV[0]: $!\n";
flock($fh, LOCK_EX | LOCK_NB) or die "another job holds $ARGV[0]: $!\n";
open(my $o, ">", "$ARGV[1]/owner") or die "owner: $!\n";
print $o "$$\n";
close($o);
"""
_HOLDERS: dict[str, subprocess.Popen] = {}


def _perl_argv(b: Path) -> list[str]:
    return ["perl", "-e", PERL_LOCK, f"{b}/locks/train.lock", f"{b}/out"]


def _start_holder(lock: Path) -> None:
    """A leftover holder: flock(1) taking the lock and sleeping, in a session of its own."""
    p = subprocess.Popen(["flock", "-x", str(lock), "sleep", "120"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _HOLDERS[str(lock)] = p
    for _ in range(100):
        if subprocess.run(["flock", "-n", str(lock), "true"]).returncode != 0:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{lock}: the holder never took the lock")


def _stop_holders(base: Path | None = None) -> None:
    for key, p in list(_HOLDERS.items()):
        if base is None or key.startswith(f"{base}/"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # the holder's own session: flock and its sleep
            p.wait()
            del _HOLDERS[key]


def perl_lock_held(base: Path, bad: bool) -> None:
    locks = _mount(base / "locks", "size=1m")
    write_file(locks / "train.lock", f"{random.randrange(1000, 99999)}\n")  # the previous owner's pid
    _dirs(base, "out")
    if bad:  # the previous run's flock(1) wrapper outlived it (its child hung)
        _start_holder(locks / "train.lock")


def _holder_teardown(base: Path) -> None:
    _stop_holders(base)
    umount(base / "locks")


REAL_THIRTYFOURTH: list[Scenario] = [
    Scenario("t34_mktemp_scratch_inodes_exhausted", "mktemp -d -p (a job's work directory in scratch)",
             _mktemp_argv, mktemp_scratch_inodes, MKDIR, "ENOSPC", lambda b: f"{b}/scratch/job.*",
             teardown=_umounting("scratch"),
             description="mktemp -d in a scratch tmpfs (nr_inodes=96) whose inodes a crashed job's spill "
                         "files used up, megabytes still free"),
    Scenario("t34_ln_latest_link_inodes_exhausted", "ln -sfn (the latest-checkpoint link)", _ln_argv,
             ln_latest_inodes, SYMLINK, "ENOSPC", lambda b: f"{b}/ckpt/latest", teardown=_umounting("ckpt"),
             description="ln -sfn of ckpt/latest on a checkpoint tmpfs whose inodes an evaluation job's "
                         "per-batch files used up"),
    Scenario("t34_cpio_unpack_inodes_run_out", "cpio -idm -I -D (a dataset bundle unpacked into scratch)",
             _cpio_argv, cpio_scratch_inodes, OPEN | MKDIR, "ENOSPC", lambda b: f"{b}/scratch/train*",
             teardown=_umounting("scratch"),
             description="cpio unpacking a 55-entry dataset bundle into a scratch tmpfs with 20 inodes left "
                         "(ENOSPC midway)"),
    Scenario("t34_bzip2_dump_scratch_full", "bzip2 -k -f (an activation dump, in scratch)", _bzip2_argv,
             bzip2_scratch_full, WRITE, "ENOSPC", lambda b: f"{b}/scratch/activations.bin.bz2",
             teardown=_umounting("scratch"),
             description="bzip2 -k of a 512 KiB dump on a 2 MiB scratch tmpfs a leftover dump left 256 KiB "
                         "of (write ENOSPC midway)"),
    Scenario("t34_cat_merge_scratch_full", "cat (shard parts merged into scratch through sh's redirect)",
             lambda b: shell_argv(MERGE_SH, str(b)), cat_merge_scratch_full, WRITE, "ENOSPC",
             lambda b: f"{b}/scratch/merged.bin",
             teardown=_umounting("scratch"),
             description="cat of six 128 KiB parts into a 2 MiB scratch tmpfs a failed run's merge left "
                         "512 KiB of"),
    Scenario("t34_env_prep_script_noexec", "env JOB_STAGE=prep (a staged prep script)", _env_argv,
             env_prep_noexec, EXEC, "EACCES", lambda b: f"{b}/scratch/bin/prep.sh",
             teardown=_umounting("scratch"),
             description="env running a prep script the job staged in a scratch tmpfs hardened noexec"),
    Scenario("t34_nohup_staged_binary_noexec", "nohup (a staged binary)", _nohup_argv, nohup_binary_noexec,
             EXEC, "EACCES", lambda b: f"{b}/scratch/bin/digest", teardown=_umounting("scratch"),
             description="nohup running a copy of md5sum the job staged in a scratch tmpfs mounted noexec"),
    Scenario("t34_dd_rootfs_dev_node_nodev", "dd if=rootfs/dev/urandom (a staged root file system)", _dd_argv,
             dd_rootfs_nodev, OPEN, "EACCES", lambda b: f"{b}/rootfs/dev/urandom",
             teardown=_umounting("rootfs"),
             description="dd reading a device node of a staged root file system on a tmpfs mounted nodev"),
    Scenario("t34_setuid_cat_tools_nosuid", "cat (a setuid-root copy on the tools volume, as the job)",
             _suid_argv, suid_reader_nosuid, OPEN, "EACCES", lambda b: f"{b}/secret/token",
             teardown=_umounting("tools"), unprivileged=True,
             description="a setuid-root copy of cat reading a root:0600 token as the job, its tools volume "
                         "mounted nosuid (no privilege: openat EACCES)"),
    Scenario("t34_touch_stamp_ro_bind", "touch (a stamp in a bind-mounted directory)", _touch_argv,
             touch_stamps_ro_bind, OPEN, "EROFS", lambda b: f"{b}/work/stamps/prep.done",
             teardown=_umounting("work/stamps"),
             description="touch of a stamp in work/stamps, which the job's sandbox bind-mounted read-only"),
    Scenario("t34_head_shards_under_mount", "head -c (data shards)", _head_argv, head_shards_hidden, OPEN,
             "ENOENT", lambda b: f"{b}/data/shard-000.bin", teardown=_umounting("data"),
             description="head of data shards a leftover job's tmpfs, mounted over data/, hides"),
    Scenario("t34_fallocate_zero_range_tmpfs", "fallocate -z (a preallocated checkpoint slot)", _fallocate_argv,
             fallocate_zero_range_tmpfs, frozenset({"fallocate"}), "EOPNOTSUPP", lambda b: f"{b}/ckpt/slot.bin",
             teardown=_umounting("ckpt"),
             description="fallocate --zero-range of a checkpoint slot after the checkpoint directory moved "
                         "from ext4 to a tmpfs"),
    Scenario("t34_perl_job_lock_leftover_holder", "perl (a launcher's flock LOCK_EX|LOCK_NB)", _perl_argv,
             perl_lock_held, frozenset({"flock"}), "EAGAIN", lambda b: f"{b}/locks/train.lock",
             teardown=_holder_teardown,
             description="a launcher taking its job lock without waiting, a leftover flock(1) holder "
                         "still holding it"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _job_root(base: Path) -> None:
    """A noise case's whole directory is a job's tmpfs (the harness's fresh_dir unmounts base
    itself, recursively, between runs and after the last: a noise case has no teardown), with
    the case's own mounts under it."""
    _mount(base, "size=64m,nr_inodes=4096")


MKTEMP_NOISE_SH = r"""d=$(mktemp -d -p "$1/scratch" job.XXXXXXXX) &&
cp "$1/inputs/config.json" "$d/" && mktemp -p "$d" part.XXXXXX > /dev/null &&
ls "$d" > /dev/null && rm -rf -- "$d"
"""


def _mktemp_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    scratch = _mount(base / "scratch", "size=16m,nr_inodes=96")
    for _ in range(random.randrange(5, 40)):
        write_file(scratch / f"cache-{_token(4)}.npy", os.urandom(256))
    write_file(base / "inputs" / "config.json", f'{{"seed": {random.randrange(10**6)}}}\n')


def _bzip2_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    scratch = _mount(base / "scratch", "size=4m")
    _fill(scratch / "activations.bin", 256 * 1024)
    _fill(scratch / "core.dump", random.randrange(64, 1024) * 1024)


CPIO_NOISE_SH = r"""cd "$1/src" && find . -depth -print | cpio -o --quiet -H newc -O "$1/bundle.cpio" &&
cpio -idm --quiet -I "$1/bundle.cpio" -D "$1/scratch" && cpio -t --quiet -I "$1/bundle.cpio" > /dev/null
"""


def _cpio_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    for c in range(3):
        for _ in range(5):
            _fill(base / "src" / f"class{c}" / f"sample-{_token(3)}.bin", 128)
    _mount(base / "scratch", "size=8m,nr_inodes=200")


HELPER_NOISE_SH = r"""d=$(mktemp -d -p "$1/scratch" helper.XXXXXX) && cp "$1/prep.sh" "$d/prep.sh" &&
env JOB_STAGE=prep "$d/prep.sh" && cat "$d/../stage" > /dev/null
"""


def _helper_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    _mount(base / "scratch", "size=4m,nosuid,nodev")
    write_file(base / "prep.sh", PREP_SH.replace("${0%/bin/*}", "$(dirname \"$0\")/.."), 0o755)


def _lock_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    perl_lock_held(base, False)


SORT_NOISE_SH = 'sort -S 64K -T "$1/tmp" -o "$1/out/sorted.txt" "$1/in/lines.txt"'


def _sort_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    write_file(base / "in" / "lines.txt", "".join(f"{_token(8)} {random.randrange(10**6)}\n" for _ in range(12000)))
    _mount(base / "tmp", "size=16m,nr_inodes=256,noexec,nosuid,nodev")
    _dirs(base, "out")


SPARSE_NOISE_SH = r"""cd "$1/scratch" && fallocate -l 1MiB slot.bin && dd if="$1/blob" of=slot.bin conv=notrunc status=none &&
fallocate -p -o 262144 -l 262144 slot.bin && truncate -s 2M slot.bin &&
cp --sparse=always slot.bin slot.copy && cmp slot.bin slot.copy
"""


def _sparse_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    _fill(base / "blob", 512 * 1024)
    _mount(base / "scratch", "size=16m")


def _head_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    data = _mount(base / "data", "size=4m,nr_inodes=64")
    for i in range(3):
        _fill(data / f"shard-{i:03d}.bin", 4096)
    write_file(data / f"tmp-{_token(4)}", "scratch\n")


QUIET_THIRTYFOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t34_mktemp_inode_limited_scratch", lambda b: shell_argv(MKTEMP_NOISE_SH, str(b)), _mktemp_noise,
                  description="mktemp -d and mktemp in a scratch tmpfs (nr_inodes=96) holding a random number "
                              "of an earlier job's files, removed after"),
    NoAnomalyCase("t34_bzip2_sized_scratch", _bzip2_argv, _bzip2_noise,
                  description="bzip2 -k of a random dump on a 4 MiB scratch with room to spare"),
    NoAnomalyCase("t34_cpio_roundtrip_random_names", lambda b: shell_argv(CPIO_NOISE_SH, str(b)), _cpio_noise,
                  description="cpio -o of a tree of random sample names, unpacked into an inode-limited tmpfs"),
    NoAnomalyCase("t34_helper_from_mktemp_scratch", lambda b: shell_argv(HELPER_NOISE_SH, str(b)), _helper_noise,
                  description="a prep script copied to a mktemp directory of a nosuid,nodev scratch and run "
                              "by env"),
    NoAnomalyCase("t34_perl_job_lock_free", _perl_argv, _lock_noise,
                  description="the launcher taking a free job lock whose file holds a random previous pid"),
    NoAnomalyCase("t34_sort_tmp_on_tmpfs", lambda b: shell_argv(SORT_NOISE_SH, str(b)), _sort_noise,
                  description="sort -S 64K -T of random lines with its temporary files on a noexec tmpfs"),
    NoAnomalyCase("t34_fallocate_punch_sparse_copy", lambda b: shell_argv(SPARSE_NOISE_SH, str(b)), _sparse_noise,
                  description="fallocate, dd conv=notrunc, a punched hole, truncate and cp --sparse=always of "
                              "random data on a tmpfs"),
    NoAnomalyCase("t34_head_shards_on_data_tmpfs", _head_argv, _head_noise,
                  description="head -c of random shards on a data tmpfs with a randomly named scratch file"),
]


def quiet_teardown() -> None:
    """Stop a lock holder a failed case left and unmount what any case may have left mounted."""
    _stop_holders()
    for name in [*(s.name for s in REAL_THIRTYFOURTH), *(c.name for c in QUIET_THIRTYFOURTH)]:
        umount(ROOT / name / "work" / "stamps")
        umount(ROOT / name)
        for sub in ("scratch", "ckpt", "rootfs", "tools", "data", "locks", "tmp"):
            umount(ROOT / name / sub)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
