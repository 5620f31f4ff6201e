"""A forty-first set of real programs with one real fault each: **container-style root file systems
without a container runtime** -- overlayfs roots (``mount -t overlay`` with lowerdir/upperdir/workdir,
the upper layer on a tmpfs of its own), image layers read-only below, ``chroot`` into an overlay whose
lower layer is the host's root file system, ``unshare -m`` around mounts made by the job itself,
``pivot_root`` into a root, and the jobs that run in such roots: ``sed -i``, ``truncate``, ``chmod``,
``rm``, ``mkdir -p``, ``mktemp``, ``rename.ul``, ``ps``. The fault is one the root gives the job:

- **the mount**: an overlay whose work directory a provisioning script never made (mount ENOENT),
  a root never mounted on itself, only unpacked into a directory on the host's root file system
  (pivot_root EBUSY), an overlay root mounted ``noexec`` (chroot's execve EACCES), a root whose
  /proc nobody mounted (ps's openat ENOENT);
- **the layers**: an overlay of image layers alone, without an upper (mkdir EROFS), an overlay
  mounted ``ro`` (mktemp's openat EROFS), the rename of a directory of the lower layer only on an
  overlay without ``redirect_dir`` (rename.ul's and git mv's rename EXDEV);
- **the upper layer's tmpfs**: the copy-up of a lower file larger than the upper's room, on
  truncate's open for writing (openat ENOSPC) and on chmod (fchmodat ENOSPC), sed -i's new file on a
  full upper (write ENOSPC), rm's whiteout on an upper out of inodes (unlinkat ENOSPC).

Faults (``t41_`` cases): mount's mount ENOENT, pivot_root's pivot_root EBUSY, chroot's execve EACCES,
ps's openat ENOENT, mkdir's mkdir EROFS, mktemp's openat EROFS, rename.ul's and git's rename EXDEV, truncate's
openat ENOSPC, chmod's fchmodat ENOSPC, sed's write ENOSPC, rm's unlinkat ENOSPC.

Good runs vary naturally: random file names and contents in the layers (counts fixed), pids,
mktemp's names, the timing of the mounts. Noise cases (``QUIET_FORTYFIRST``) are good runs alone,
their mounts made inside the recorded command (``unshare -m``: gone with its mount namespace): an
overlay mounted and read, sed -i of a lower file of random contents (copy-up), the rename of a lower
directory with redirect_dir, rm of lower files of random names (whiteouts), tar -x into an overlay,
chroot into an overlay of the host's root, unshare -p -f --mount-proc ps, pivot_root into an overlay.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

from .files import run_quiet, shell_argv, token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
WRITE = frozenset({"write", "writev", "pwrite64", "pwritev", "copy_file_range", "sendfile", "sendfile64"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
UNLINK = frozenset({"unlink", "unlinkat"})
CHMOD = frozenset({"chmod", "fchmod", "fchmodat", "fchmodat2"})
EXEC = frozenset({"execve", "execveat"})
MOUNT = frozenset({"mount", "fsconfig", "fsmount", "move_mount"})
PIVOT = frozenset({"pivot_root"})


def _text(lo: int, hi: int) -> str:
    return "".join(f"{token(4)} line {i} {token(8)}\n" for i in range(random.randrange(lo, hi)))


def _tmpfs(target: Path, size: str, inodes: int | None = None) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    opts = f"mode=0755,size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    run_quiet("mount", "-t", "tmpfs", "-o", opts, "tracebase-test", str(target))
    return target


def _overlay(base: Path, lower: str, *, upper: bool = True, opts: str = "") -> Path:
    """An overlay at base/root of `lower` (a colon-separated list of layers, topmost first) and,
    with `upper`, an upper layer and its work directory on the tmpfs at base/up (mounted by the
    caller)."""
    root = base / "root"
    root.mkdir(exist_ok=True)
    o = f"lowerdir={lower}"
    if upper:
        (base / "up" / "upper").mkdir(exist_ok=True)
        (base / "up" / "work").mkdir(exist_ok=True)
        o += f",upperdir={base}/up/upper,workdir={base}/up/work"
    if opts:
        o += f",{opts}"
    run_quiet("mount", "-t", "overlay", "-o", o, "tracebase-ovl", str(root))
    return root


def _unmount(target: Path) -> None:
    """Unmount everything at target (and under it); lazily when a plain unmount is refused."""
    for _ in range(8):
        if subprocess.run(["mountpoint", "-q", str(target)], capture_output=True).returncode != 0:
            return
        if subprocess.run(["umount", "-R", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-R", "-l", str(target)], capture_output=True)


def _unmount_root(base: Path) -> None:
    """The case's teardown: the overlay root (and what is mounted in it), then its layers' tmpfs."""
    _unmount(base / "root")
    _unmount(base / "up")


def _image(lower: Path, files: dict[str, str | bytes]) -> Path:
    """An image layer: `files` (relative names) in the directory lower."""
    for name, data in files.items():
        write_file(lower / name, data)
    return lower


def _fill_inodes(mnt: Path) -> None:
    """Use up every free inode of the tmpfs mnt (files in mnt/fill, outside any layer)."""
    (mnt / "fill").mkdir()
    for i in range(os.statvfs(mnt).f_ffree):
        try:
            (mnt / "fill" / f"i{i}").touch()
        except OSError:
            break


def _fill_blocks(mnt: Path, free_kib: int) -> None:
    """A filler leaving about free_kib KiB of the tmpfs mnt."""
    st = os.statvfs(mnt)
    left = st.f_bavail * st.f_frsize // 1024
    write_file(mnt / "filler", b"\0" * max(0, (left - free_kib) * 1024))


# --- mount -t overlay in unshare -m: the work directory a provisioning script never made ------------------
MOUNT_SH = ('mount -t overlay tracebase-ovl -o "lowerdir=$1/lower,upperdir=$1/upper,workdir=$1/work" "$1/root" '
            '&& exec cat "$1/root/etc/app.conf"')


def mount_overlay_missing_workdir(base: Path, bad: bool) -> None:
    _image(base / "lower", {"etc/app.conf": _text(5, 40), "bin/app": _text(1, 5)})
    (base / "upper").mkdir()
    (base / "root").mkdir()
    if not bad:  # the bad host's provisioning made upper/ only
        (base / "work").mkdir()


# --- pivot_root: a root unpacked into a directory of the host's root file system, never mounted -----------
PIVOT_SH = 'cd "$1" && /usr/sbin/pivot_root . .old && exec /bin/true'


def pivot_root_not_a_mount(base: Path, bad: bool) -> None:
    if bad:  # the runtime's bind of the root onto itself was left out: a plain directory on /
        (base / "root" / ".old").mkdir(parents=True)
        return
    _tmpfs(base / "up", "4m")
    root = _overlay(base, "/")
    (root / ".old").mkdir(exist_ok=True)


# --- chroot into an overlay root mounted noexec ---------------------------------------------------------------
def _chroot_argv(b: Path) -> list[str]:
    return ["/usr/sbin/chroot", f"{b}/root", "/bin/sh", "-c", "cat /etc/debian_version /etc/hostname"]


def chroot_noexec_root(base: Path, bad: bool) -> None:
    _tmpfs(base / "up", "4m")
    # the bad host's mount unit copied the options of its scratch volumes: nosuid,nodev,noexec
    _overlay(base, "/", opts="nosuid,nodev" + (",noexec" if bad else ""))


# --- ps in a chroot whose /proc nobody mounted ----------------------------------------------------------------
def _ps_argv(b: Path) -> list[str]:
    return ["/usr/sbin/chroot", f"{b}/root", "ps", "-o", "pid=,comm=", "-p", "1"]


def ps_chroot_without_proc(base: Path, bad: bool) -> None:
    _tmpfs(base / "up", "4m")
    root = _overlay(base, "/")
    if not bad:  # the bad run's wrapper script lost its `mount -t proc proc $root/proc`
        run_quiet("mount", "-t", "proc", "proc", str(root / "proc"))


# --- mkdir -p in an overlay of image layers alone (no upper: read-only) ---------------------------------------
def _mkdir_argv(b: Path) -> list[str]:
    return ["mkdir", "-p", f"{b}/root/var/cache/job/run"]


def mkdir_overlay_without_upper(base: Path, bad: bool) -> None:
    _image(base / "base-layer", {"etc/os-release": _text(3, 9), "var/lib/dpkg/status": _text(5, 50)})
    _image(base / "app-layer", {"srv/app/app.conf": _text(5, 40), "var/cache/.keep": ""})
    layers = f"{base}/app-layer:{base}/base-layer"
    if bad:  # the bad run's script dropped the upperdir (a "just run the image" shortcut)
        _overlay(base, layers, upper=False)
    else:
        _tmpfs(base / "up", "4m")
        _overlay(base, layers)


# --- mktemp in an overlay root mounted ro ---------------------------------------------------------------------
def _mktemp_argv(b: Path) -> list[str]:
    return ["mktemp", "-p", f"{b}/root/tmp", "job.XXXXXXXX"]


def mktemp_overlay_mounted_ro(base: Path, bad: bool) -> None:
    _image(base / "lower", {"etc/app.conf": _text(5, 40), "tmp/.keep": ""})
    _tmpfs(base / "up", "4m")
    # the bad host's fstab line for the job's root: ro (its tmpfs on /tmp was meant to come on top)
    _overlay(base, f"{base}/lower", opts="ro" if bad else "")


# --- rename.ul of a directory of the lower layer only, on an overlay without redirect_dir ---------------------
def _rename_argv(b: Path) -> list[str]:
    return ["rename.ul", "releases", "releases.old", f"{b}/root/srv/app/releases"]


def _releases(lower: Path) -> None:
    for _ in range(4):
        write_file(lower / "srv" / "app" / "releases" / f"r{token(3)}" / "app.tar", _text(2, 20))


def rename_lower_dir_no_redirect(base: Path, bad: bool) -> None:
    _releases(base / "lower")
    _tmpfs(base / "up", "4m")
    # the bad host's overlay: redirect_dir=off (its kernel's default, or a mount option copied from a
    # guide for NFS-exported overlays); a lower directory cannot be renamed without a redirect
    _overlay(base, f"{base}/lower", opts="redirect_dir=off" if bad else "redirect_dir=on")


# --- git mv of a directory of the lower layer only (a repository baked into an image), no redirect_dir -----------
GIT_ENV = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid", "GIT_COMMITTER_NAME": "ci",
           "GIT_COMMITTER_EMAIL": "ci@example.invalid", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}


def _git_argv(b: Path) -> list[str]:
    return ["git", "-C", f"{b}/root/src/app", "mv", "plugins", "extensions"]


def _git_image(lower: Path) -> None:
    repo = lower / "src" / "app"
    write_file(repo / "README", _text(2, 9))
    for _ in range(4):
        write_file(repo / "plugins" / f"p_{token(3)}.py", _text(2, 30))
    # files an image was built from are older than its index: written within the same clock tick
    # as the index (a fast run) they are "racily clean" and git mv re-reads each one to compare
    # its content, on a loaded machine it does not -- two good runs that differ by timing alone
    # (the good-vs-good check failed ~1 run in 10 under load)
    hour_ago = time.time() - 3600
    for path in [repo / "README", *(repo / "plugins").iterdir()]:
        os.utime(path, (hour_ago, hour_ago))
    for argv in (["init", "-q", "-b", "main", "."], ["add", "-A"], ["commit", "-q", "-m", f"image {token(4)}"]):
        subprocess.run(["git", *argv], cwd=repo, env=GIT_ENV, check=True, capture_output=True)


def git_mv_lower_dir_no_redirect(base: Path, bad: bool) -> None:
    _git_image(base / "lower")
    _tmpfs(base / "up", "8m")
    # the bad host's overlay: redirect_dir=off (a CI runner's kernel built without
    # CONFIG_OVERLAY_FS_REDIRECT_DIR, its overlay mounted with the default)
    _overlay(base, f"{base}/lower", opts="redirect_dir=off" if bad else "redirect_dir=on")


# --- truncate: the copy-up of a lower file larger than the upper's room --------------------------------------
def _truncate_argv(b: Path) -> list[str]:
    return ["truncate", "-s", "+64K", f"{b}/root/var/lib/app/data.img"]


def truncate_copy_up_full_upper(base: Path, bad: bool) -> None:
    write_file(base / "lower" / "var" / "lib" / "app" / "data.img", os.urandom(random.randrange(600, 700) * 1024))
    # the bad host's upper tmpfs: 256 KiB (a size= meant for a /run)
    _tmpfs(base / "up", "256k" if bad else "4m")
    _overlay(base, f"{base}/lower")


# --- chmod: the copy-up (metadata and data: no metacopy) of a lower file larger than the upper's room ----------
def _chmod_argv(b: Path) -> list[str]:
    return ["chmod", "0600", f"{b}/root/etc/ssl/private/bundle.pem"]


def chmod_copy_up_full_upper(base: Path, bad: bool) -> None:
    write_file(base / "lower" / "etc" / "ssl" / "private" / "bundle.pem", _text(9000, 10000))  # ~350 KiB
    _tmpfs(base / "up", "2m")
    _overlay(base, f"{base}/lower", opts="metacopy=off")
    # the upper's tmpfs: another job's scratch files filled it (the bad run: 64 KiB left)
    _fill_blocks(base / "up", 64 if bad else random.randrange(900, 1200))


# --- sed -i: the new file of an in-place edit on a full upper ---------------------------------------------------
def _sed_argv(b: Path) -> list[str]:
    return ["sed", "-i", "s/^listen=.*/listen=0.0.0.0:8080/", f"{b}/root/etc/app/app.conf"]


def _app_conf() -> str:
    return f"listen=127.0.0.1:{random.randrange(1024, 65535)}\n" + _text(8000, 9000)  # ~330 KiB


def sed_in_place_full_upper(base: Path, bad: bool) -> None:
    write_file(base / "lower" / "etc" / "app" / "app.conf", _app_conf())
    _tmpfs(base / "up", "2m")
    _overlay(base, f"{base}/lower")
    _fill_blocks(base / "up", 96 if bad else random.randrange(900, 1200))


# --- rm: whiteouts of lower files on an upper out of inodes -----------------------------------------------------
def _rm_argv(b: Path) -> list[str]:
    return ["rm", "-f", f"{b}/root/var/cache/app/index.db", f"{b}/root/var/cache/app/blobs.db"]


def rm_whiteout_upper_out_of_inodes(base: Path, bad: bool) -> None:
    _image(base / "lower", {"var/cache/app/index.db": _text(5, 50), "var/cache/app/blobs.db": _text(5, 50),
                            "var/cache/app/meta.json": _text(1, 5)})
    _tmpfs(base / "up", "4m", inodes=64)
    _overlay(base, f"{base}/lower")
    (base / "root" / "var" / "cache" / "app" / f"new-{token(3)}").touch()  # the upper has var/cache/app
    if bad:  # the upper tmpfs: a build's object files took the rest of its inodes
        _fill_inodes(base / "up")


REAL_FORTYFIRST: list[Scenario] = [
    Scenario("t41_mount_overlay_missing_workdir", "mount -t overlay (in unshare -m: a job's root)",
             lambda b: ["unshare", "-m", *shell_argv(MOUNT_SH, str(b))], mount_overlay_missing_workdir, MOUNT, "ENOENT",
             lambda b: f"{b}/*",
             description="mount -t overlay with a workdir= a provisioning script never made (mount ENOENT)"),
    Scenario("t41_pivot_root_not_a_mount", "pivot_root (in unshare -m: into a job's root)",
             lambda b: ["unshare", "-m", *shell_argv(PIVOT_SH, f"{b}/root")], pivot_root_not_a_mount, PIVOT, "EBUSY",
             lambda b: f"{b}/root", teardown=_unmount_root,
             description="pivot_root into a root unpacked into a directory of the host's root file system, "
                         "never mounted on itself (pivot_root EBUSY)"),
    Scenario("t41_chroot_noexec_root", "chroot (into an overlay of the host's root)", _chroot_argv,
             chroot_noexec_root, EXEC, "EACCES", lambda b: "*/bin/sh", teardown=_unmount_root,
             description="chroot into an overlay root mounted nosuid,nodev,noexec: its execve of /bin/sh "
                         "(EACCES)"),
    Scenario("t41_ps_chroot_without_proc", "ps (in a chroot: an overlay of the host's root)", _ps_argv,
             ps_chroot_without_proc, OPEN, "ENOENT", lambda b: "*/proc/*", teardown=_unmount_root,
             description="ps in a chroot whose /proc nobody mounted (openat of /proc/... ENOENT)"),
    Scenario("t41_mkdir_overlay_without_upper", "mkdir -p (in an overlay of image layers)", _mkdir_argv,
             mkdir_overlay_without_upper, MKDIR, "EROFS", lambda b: f"{b}/root/var/cache/job*",
             teardown=_unmount_root,
             description="mkdir -p in an overlay of two image layers mounted without an upper layer "
                         "(mkdir EROFS)"),
    Scenario("t41_mktemp_overlay_mounted_ro", "mktemp -p (in an overlay root's /tmp)", _mktemp_argv,
             mktemp_overlay_mounted_ro, OPEN, "EROFS", lambda b: f"{b}/root/tmp/job.*", teardown=_unmount_root,
             description="mktemp in the /tmp of an overlay root mounted ro (openat O_EXCL EROFS)"),
    Scenario("t41_rename_lower_dir_no_redirect", "rename.ul (a lower layer's directory)", _rename_argv,
             rename_lower_dir_no_redirect, RENAME, "EXDEV", lambda b: f"{b}/root/srv/app/releases*",
             teardown=_unmount_root,
             description="rename.ul of a directory of the lower layer only on an overlay mounted "
                         "redirect_dir=off (rename EXDEV)"),
    Scenario("t41_git_mv_lower_dir_no_redirect", "git mv (a directory of a repository in an image layer)",
             _git_argv, git_mv_lower_dir_no_redirect, RENAME, "EXDEV", lambda b: f"{b}/root/src/app/plugins*",
             teardown=_unmount_root,
             description="git mv of a directory committed in a repository of the lower layer only, on an "
                         "overlay mounted redirect_dir=off (rename EXDEV)"),
    Scenario("t41_truncate_copy_up_full_upper", "truncate -s +64K (a lower layer's file)", _truncate_argv,
             truncate_copy_up_full_upper, OPEN, "ENOSPC", lambda b: f"{b}/root/var/lib/app/data.img",
             teardown=_unmount_root,
             description="truncate of a ~650 KiB lower file: its copy-up onto a 256 KiB upper tmpfs fails "
                         "at the open for writing (openat ENOSPC)"),
    Scenario("t41_chmod_copy_up_full_upper", "chmod (a lower layer's file)", _chmod_argv, chmod_copy_up_full_upper,
             CHMOD, "ENOSPC", lambda b: f"{b}/root/etc/ssl/private/bundle.pem", teardown=_unmount_root,
             description="chmod of a ~350 KiB lower file: its copy-up (metacopy=off) onto an upper tmpfs with "
                         "64 KiB left (fchmodat ENOSPC)"),
    Scenario("t41_sed_in_place_full_upper", "sed -i (a lower layer's config)", _sed_argv, sed_in_place_full_upper,
             WRITE, "ENOSPC", lambda b: f"{b}/root/etc/app/sed*", teardown=_unmount_root,
             description="sed -i of a ~330 KiB lower config: its new file on an upper tmpfs with 96 KiB left "
                         "(write ENOSPC)"),
    Scenario("t41_rm_whiteout_upper_out_of_inodes", "rm -f (lower layer's files: whiteouts)", _rm_argv,
             rm_whiteout_upper_out_of_inodes, UNLINK, "ENOSPC", lambda b: f"{b}/root/var/cache/app/*.db",
             teardown=_unmount_root,
             description="rm of two lower files on an overlay whose upper tmpfs has no inode left for their "
                         "whiteouts (unlinkat ENOSPC)"),
]


# --- good-vs-good noise: every mount inside the recorded command (unshare -m) ------------------------------------
UPPER_SH = 'mount -t tmpfs -o size=8m tracebase-test "$1/up" && mkdir "$1/up/upper" "$1/up/work" && '


def _ovl_sh(lower: str, opts: str = "") -> str:
    return (UPPER_SH + f'mount -t overlay tracebase-ovl -o "lowerdir={lower},upperdir=$1/up/upper,'
            f'workdir=$1/up/work{opts}" "$1/root" && ')


def _dirs(base: Path) -> None:
    (base / "up").mkdir()
    (base / "root").mkdir()


def _mount_read_noise(base: Path, run: int) -> None:  # noqa: ARG001
    mount_overlay_missing_workdir(base, False)


SED_NOISE_SH = _ovl_sh("$1/lower") + 'exec sed -i "s/^listen=.*/listen=0.0.0.0:8080/" "$1/root/etc/app/app.conf"'


def _sed_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base)
    write_file(base / "lower" / "etc" / "app" / "app.conf", f"listen=127.0.0.1:{random.randrange(1024, 65535)}\n"
           + _text(20, 400))


RENAME_NOISE_SH = (_ovl_sh("$1/lower", ",redirect_dir=on")
                   + 'exec rename.ul releases releases.old "$1/root/srv/app/releases"')


def _rename_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base)
    _releases(base / "lower")


RM_NOISE_SH = _ovl_sh("$1/lower") + 'cd "$1/root/var/cache/app" && exec rm -f -- *.db'


def _rm_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base)
    _image(base / "lower", {f"var/cache/app/{token(4)}.db": _text(1, 30) for _ in range(5)})


TAR_NOISE_SH = _ovl_sh("$1/lower") + 'exec tar -x -f "$1/layer.tar" -C "$1/root"'


def _tar_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base)
    _image(base / "lower", {"etc/os-release": _text(2, 9), "srv/app/app.conf": _text(5, 40)})
    src = base / "layer-src"
    _image(src, {f"srv/app/{token(3)}.py": _text(1, 80) for _ in range(6)})
    write_file(src / "etc" / "app.env", _text(1, 10))
    run_quiet("tar", "-c", "-f", str(base / "layer.tar"), "-C", str(src), "srv", "etc")


CHROOT_NOISE_SH = (_ovl_sh("/")
                   + 'exec /usr/sbin/chroot "$1/root" /bin/sh -c "cat /etc/debian_version; echo \\$\\$ > /tmp/pid"')


def _chroot_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base)


PIVOT_NOISE_SH = _ovl_sh("/") + 'mkdir "$1/root/.old" && cd "$1/root" && /usr/sbin/pivot_root . .old && exec /bin/true'


QUIET_FORTYFIRST: list[NoAnomalyCase] = [
    NoAnomalyCase("t41_mount_overlay_and_read", lambda b: ["unshare", "-m", *shell_argv(MOUNT_SH, str(b))],
                  _mount_read_noise,
                  description="unshare -m: an overlay of a layer of random contents mounted, its config read"),
    NoAnomalyCase("t41_sed_in_place_copy_up", lambda b: ["unshare", "-m", *shell_argv(SED_NOISE_SH, str(b))], _sed_noise,
                  description="unshare -m: sed -i of a lower config of random length and contents (copy-up)"),
    NoAnomalyCase("t41_rename_lower_dir_redirect", lambda b: ["unshare", "-m", *shell_argv(RENAME_NOISE_SH, str(b))],
                  _rename_noise,
                  description="unshare -m: rename.ul of a lower directory of four releases of random names "
                              "(redirect_dir=on)"),
    NoAnomalyCase("t41_rm_lower_files_whiteouts", lambda b: ["unshare", "-m", *shell_argv(RM_NOISE_SH, str(b))], _rm_noise,
                  description="unshare -m: rm of five lower files of random names (whiteouts)"),
    NoAnomalyCase("t41_tar_layer_into_overlay", lambda b: ["unshare", "-m", *shell_argv(TAR_NOISE_SH, str(b))], _tar_noise,
                  description="unshare -m: tar -x of a layer of random file names over a lower layer"),
    NoAnomalyCase("t41_chroot_overlay_of_host_root", lambda b: ["unshare", "-m", *shell_argv(CHROOT_NOISE_SH, str(b))],
                  _chroot_noise,
                  description="unshare -m: chroot into an overlay of the host's root, a shell writing its pid"),
    NoAnomalyCase("t41_unshare_pid_mount_proc_ps",
                  lambda b: ["unshare", "-m", "-p", "-f", "--mount-proc", "ps", "-o", "pid=,comm="], _chroot_noise,
                  description="unshare -m -p -f --mount-proc ps: a new pid namespace's ps"),
    NoAnomalyCase("t41_pivot_root_into_overlay", lambda b: ["unshare", "-m", *shell_argv(PIVOT_NOISE_SH, str(b))],
                  _chroot_noise,
                  description="unshare -m: pivot_root into an overlay of the host's root, /bin/true there"),
]


def quiet_teardown() -> None:
    """Unmount what any case may have left mounted (a failed teardown)."""
    for sc in [*REAL_FORTYFIRST, *QUIET_FORTYFIRST]:
        base = ROOT / sc.name
        _unmount_root(base)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
