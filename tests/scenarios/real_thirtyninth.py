"""A thirty-ninth set of real programs with one real fault each: **archives, compression and
packages in a deploy pipeline** -- how a build's artifacts are packed, shipped and unpacked, done
with real tools: ``tar -x`` (a hard-link member, ``--same-owner``), ``cpio -pdm``, ``xz -9``,
``zstd -d -o``, ``zip -r``, ``unzip``, ``dpkg-deb -b`` and ``dpkg-deb -x``, ``ar rcs`` and
``logrotate`` with ``compress``. The fault is one the deploy host gives the tool:

- **the target's mounts**: ``tar -x`` of a release whose hard-link member links across into a
  ``bin/`` a new host image mounts as a tmpfs of its own (linkat EXDEV), ``zstd -d -o`` into a
  release directory bind-mounted read-only (open EROFS), ``dpkg-deb -x`` into a root file system
  bind-mounted read-only (tar's mkdir EROFS), ``logrotate`` whose state directory is a read-only
  bind mount (the new state file's open EROFS, after the rotation);
- **the archive or the tree**: ``tar -x --same-owner`` in a user namespace (``unshare -r``) of
  an archive a CI job built without ``--owner=0``, its members the builder's uid 1000, which the
  namespace does not map (fchown EINVAL), ``cpio -pdm`` of a build tree nested one level
  deeper, so that the copy's deepest path passes PATH_MAX (stat, mkdir ENAMETOOLONG), ``unzip`` of a
  downloaded archive a cache clean-up removed (stat ENOENT), ``dpkg-deb -b`` as nobody of a tree
  with a file a restore made root:0600 (tar's open EACCES), ``ar rcs`` as nobody into a lib
  directory recreated root:0755 (the temporary archive's open EACCES);
- **the job's limits**: ``xz -9`` under a launcher's ``ulimit -v`` (mmap ENOMEM), ``zip -r``
  under a launcher's ``ulimit -f``, SIGXFSZ ignored (write EFBIG).

Faults (``t39_`` cases): tar's linkat EXDEV, tar's fchown EINVAL, cpio's newfstatat ENAMETOOLONG,
xz's mmap ENOMEM, zstd's openat EROFS, zip's write EFBIG, unzip's stat ENOENT, dpkg-deb's (its
tar's) openat EACCES, dpkg-deb's (its tar's) mkdir EROFS, ar's openat EACCES, logrotate's openat
EROFS.

Good runs vary naturally: random contents and sizes, random stale files, mtimes, pids,
mkstemp's names. Noise cases (``QUIET_THIRTYNINTH``) are good runs alone, member counts fixed and
names random: tar -czf + tar -tzf, xz -T0 + xz -t, zstd -T0 + zstd -t, a cpio newc round trip,
dpkg-deb -b of a random version + dpkg-deb -c, zip -r + unzip -d, logrotate -f with compress.
"""

from __future__ import annotations

import os
import random
import subprocess
import tarfile
from pathlib import Path

from .catalog import umount
from .files import mounted_tmpfs, shell_argv, token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
WRITE = frozenset({"write", "writev", "pwrite64"})
LINK = frozenset({"link", "linkat"})
MKDIR = frozenset({"mkdir", "mkdirat"})
STAT = frozenset({"stat", "lstat", "newfstatat", "fstatat", "fstatat64", "statx"})
CHOWN = frozenset({"chown", "lchown", "fchown", "fchownat"})
MMAP = frozenset({"mmap", "mremap", "brk"})
NO_PATH = "*"  # the fault's call has no path of its own
MEMBERS = 5
NOBODY_UID = 65534


def _blob(lo_kib: int, hi_kib: int) -> bytes:
    return os.urandom(random.randrange(lo_kib, hi_kib) * 1024 + random.randrange(1024))


def _text(lo: int, hi: int) -> str:
    return "".join(f"{token(4)} line {i} {token(8)}\n" for i in range(random.randrange(lo, hi)))


def _bind_ro(target: Path) -> None:
    """target bind-mounted on itself, read-only (a container's :ro volume)."""
    subprocess.run(["mount", "--bind", str(target), str(target)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _own(path: Path, uid: int = NOBODY_UID) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for n in dirs + files:
            os.chown(os.path.join(root, n), uid, uid, follow_symlinks=False)


def _limit(base: Path, name: str, value: int | None) -> None:
    write_file(base / name, "unlimited\n" if value is None else f"{value}\n")


# --- tar -x: a release's hard-link member across into a bin/ mounted as a tmpfs of its own ---------------
def _tar_link_argv(b: Path) -> list[str]:
    return ["tar", "-x", "-f", f"{b}/dist/release.tar", "-C", f"{b}/srv"]


def _release_tree(root: Path) -> None:
    """A release whose tool ships under two names: a hard link, as `make install` made it."""
    write_file(root / "app" / "libexec" / "app-tool", _blob(16, 128), 0o755)
    (root / "app" / "bin").mkdir(parents=True)
    os.link(root / "app" / "libexec" / "app-tool", root / "app" / "bin" / "app-tool")
    for n in range(3):
        write_file(root / "app" / "share" / f"doc-{n}.txt", _text(5, 40))


def tar_hardlink_member_across_mounts(base: Path, bad: bool) -> None:
    _release_tree(base / "build")
    (base / "dist").mkdir()
    # members sorted: libexec/app-tool is stored first, bin/app-tool as "link to" it (bin/ sorts
    # first in a plain walk, so the order is forced)
    with tarfile.open(base / "dist" / "release.tar", "w", format=tarfile.GNU_FORMAT) as tf:
        for rel in ("app", "app/libexec", "app/libexec/app-tool", "app/bin", "app/bin/app-tool", "app/share",
                    *(f"app/share/doc-{n}.txt" for n in range(3))):
            tf.add(base / "build" / rel, rel, recursive=False)
    (base / "srv" / "app" / "bin").mkdir(parents=True)
    if bad:  # the new host image mounts the release's bin/ as a tmpfs of its own (a wrapper overlay)
        mounted_tmpfs(base / "srv" / "app" / "bin", "8m")


# --- tar -x --same-owner in unshare -r: members of an unmapped uid ------------------------------------------
def _tar_owner_argv(b: Path) -> list[str]:
    return ["unshare", "-r", "tar", "-x", "--same-owner", "-f", f"{b}/dist/site.tar", "-C", f"{b}/www"]


def tar_same_owner_unmapped_uid(base: Path, bad: bool) -> None:
    for n in range(3):
        write_file(base / "build" / "site" / f"page-{n}.html", f"<p>{_text(2, 12)}</p>\n")
    (base / "dist").mkdir()
    (base / "www").mkdir()
    # the CI job packs with --owner=0 --group=0; the bad run's job lost those flags: its members
    # carry the builder's uid 1000, which the user namespace (root mapped to root only) lacks
    owner = ["--owner=1000", "--group=1000"] if bad else ["--owner=0", "--group=0"]
    subprocess.run(["tar", "-c", *owner, "-f", str(base / "dist" / "site.tar"), "-C", str(base / "build"), "site"],
                   check=True, capture_output=True)


# --- cpio -pdm: a build tree whose copy passes PATH_MAX ----------------------------------------------------------
CPIO_SH = 'cd "$1/build" && find . -print | exec cpio -pdm --quiet "$1/stage/$(cat "$1/stage-name")"'
_LEVEL = "level-{:02d}-" + "d" * 230


def cpio_pass_copy_passes_path_max(base: Path, bad: bool) -> None:
    rel = good = "/".join(_LEVEL.format(i) for i in range(1, 12))  # 11 levels, ~2650 bytes
    if bad:  # the build now nests its output one level deeper (a new per-arch directory)
        rel += "/" + _LEVEL.format(12)
    leaf = base / "build" / rel
    leaf.mkdir(parents=True)
    write_file(leaf / "gen-table.c", _text(3, 20))
    write_file(base / "build" / "top.txt", _text(3, 20))
    # the stage's directory name is long, as a deploy names it after the release and the hosts: the
    # good copy's deepest path comes to ~3990 bytes, the bad one's passes 4096
    room = 3990 - len(f"{base}/stage/") - 1 - len(good) - 1 - len("gen-table.c")
    name = f"release-{'r' * 240}"
    parts = []
    while room > 0:
        n = min(240, room)
        parts.append(name[:n])
        room -= n + 1
    write_file(base / "stage-name", "/".join(parts) + "\n")
    (base / "stage" / "/".join(parts)).mkdir(parents=True)


# --- xz -9 under a launcher's ulimit -v ---------------------------------------------------------------------------
XZ_SH = 'ulimit -v "$(cat "$1/vmem")"; exec xz -9 -k -T1 "$1/dist/app.tar"'


def xz_vmem_limit(base: Path, bad: bool) -> None:
    write_file(base / "dist" / "app.tar", _blob(256, 1024))
    _limit(base, "vmem", 300000 if bad else None)  # the bad job's launcher: ~300 MiB, xz -9 needs ~674 MiB


# --- zstd -d -o into a release directory bind-mounted read-only ---------------------------------------------------
def _zstd_argv(b: Path) -> list[str]:
    return ["zstd", "-q", "-d", f"{b}/dist/assets.tar.zst", "-o", f"{b}/release/assets.tar"]


def zstd_decompress_ro_bind(base: Path, bad: bool) -> None:
    write_file(base / "dist" / "assets.tar", _blob(64, 512))
    subprocess.run(["zstd", "-q", "--rm", str(base / "dist" / "assets.tar")], check=True, capture_output=True)
    write_file(base / "release" / "VERSION", f"1.{random.randrange(100)}.{random.randrange(100)}\n")
    if bad:  # the container's compose file mounts the release directory :ro
        _bind_ro(base / "release")


# --- zip -r under a launcher's ulimit -f --------------------------------------------------------------------------
ZIP_SH = "trap '' XFSZ; ulimit -f \"$(cat \"$1/fsize\")\"; cd \"$1/build\" && exec zip -q -r \"$1/dist/bundle.zip\" bundle"


def zip_bundle_past_fsize(base: Path, bad: bool) -> None:
    for n in range(3):
        write_file(base / "build" / "bundle" / f"chunk-{n}.bin", _blob(300, 600))  # incompressible
    (base / "dist").mkdir()
    _limit(base, "fsize", 1024 if bad else None)  # the bad job's launcher: 512 KiB


# --- unzip of an archive a cache clean-up removed -------------------------------------------------------------------
def _unzip_argv(b: Path) -> list[str]:
    return ["unzip", "-q", "-o", f"{b}/cache/app-1.4.2.zip", "-d", f"{b}/www"]


def unzip_archive_cleaned_up(base: Path, bad: bool) -> None:
    for n in range(3):
        write_file(base / "src" / "app" / f"mod-{n}.js", _text(5, 30))
    (base / "cache").mkdir()
    (base / "www").mkdir()
    subprocess.run(["zip", "-q", "-r", str(base / "cache" / "app-1.4.2.zip"), "app"], cwd=base / "src",
                   check=True, capture_output=True)
    write_file(base / "cache" / f"app-1.3.{random.randrange(10)}.zip.part", _blob(1, 8))  # a stale download
    if bad:  # the cache clean-up's find -mmin +60 (the archive kept its build time's mtime) removed it
        (base / "cache" / "app-1.4.2.zip").unlink()


# --- dpkg-deb -b as nobody: a tree with a file a restore made root:0600 ---------------------------------------------
def _deb_build_argv(b: Path) -> list[str]:
    return ["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", f"{b}/pkg", f"{b}/out/app.deb"]


CONTROL = "Package: tb-app\nVersion: {v}\nArchitecture: all\nMaintainer: CI <ci@example.invalid>\nDescription: app\n"


def _pkg_tree(root: Path, version: str, names: list[str]) -> None:
    write_file(root / "DEBIAN" / "control", CONTROL.format(v=version))
    for name in names:
        write_file(root / "opt" / "tb-app" / name, _text(5, 40))


def dpkg_deb_build_unreadable(base: Path, bad: bool) -> None:
    _pkg_tree(base / "pkg", "1.0", ["app.py", "settings.conf", "worker.py"])
    (base / "out").mkdir()
    _own(base / "pkg")
    _own(base / "out")
    if bad:  # a restore from backup put settings.conf back as root:0600
        os.chown(base / "pkg" / "opt" / "tb-app" / "settings.conf", 0, 0)
        os.chmod(base / "pkg" / "opt" / "tb-app" / "settings.conf", 0o600)


# --- dpkg-deb -x into a root file system bind-mounted read-only --------------------------------------------------------
def _deb_extract_argv(b: Path) -> list[str]:
    return ["dpkg-deb", "-x", f"{b}/out/app.deb", f"{b}/rootfs"]


def dpkg_deb_extract_ro_bind(base: Path, bad: bool) -> None:
    _pkg_tree(base / "pkg", "1.0", ["app.py", "settings.conf", "worker.py"])
    (base / "out").mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(base / "pkg"), str(base / "out" / "app.deb")],
                   check=True, capture_output=True)
    write_file(base / "rootfs" / "etc" / "hostname", f"node-{token(3)}\n")
    if bad:  # the image builder mounts the root file system read-only (the sealed base layer)
        _bind_ro(base / "rootfs")


# --- ar rcs as nobody: the lib directory recreated root:0755 ---------------------------------------------------------------
def _ar_argv(b: Path) -> list[str]:
    return ["ar", "rcs", f"{b}/lib/libtb.a", f"{b}/obj/codec.o", f"{b}/obj/frame.o"]


def ar_lib_dir_root(base: Path, bad: bool) -> None:
    for name in ("codec.o", "frame.o", "base.o"):
        write_file(base / "obj" / name, _blob(2, 16))
    (base / "lib").mkdir()
    subprocess.run(["ar", "rcs", str(base / "lib" / "libtb.a"), str(base / "obj" / "base.o")], check=True,
                   capture_output=True)
    _own(base)
    if bad:  # a `sudo make install` of another target recreated lib/ as root:0755
        os.chown(base / "lib", 0, 0)


# --- logrotate with compress: the state directory a read-only bind mount --------------------------------------------------
LOGROTATE_CONF = """{b}/log/app.log {{
    rotate 3
    compress
    missingok
    notifempty
}}
"""


def _logrotate_argv(b: Path) -> list[str]:
    return ["/usr/sbin/logrotate", "-f", "-s", f"{b}/state/logrotate.status", f"{b}/logrotate.conf"]


def _logs(base: Path) -> None:
    write_file(base / "logrotate.conf", LOGROTATE_CONF.format(b=base))
    write_file(base / "log" / "app.log", _text(20, 200))
    for n in (1, 2):
        write_file(base / "log" / f"app.log.{n}.gz", _blob(1, 4))
    write_file(base / "state" / "logrotate.status",
           f'logrotate state -- version 2\n"{base}/log/app.log" 2026-1-{random.randrange(1, 28)}-3:0:0\n')


def logrotate_state_dir_ro(base: Path, bad: bool) -> None:
    _logs(base)
    if bad:  # the host's new image mounts /var/lib/logrotate read-only (a bind of the base layer)
        _bind_ro(base / "state")


REAL_THIRTYNINTH: list[Scenario] = [
    Scenario("t39_tar_hardlink_member_across_mounts", "tar -x (a release with a hard-link member)", _tar_link_argv,
             tar_hardlink_member_across_mounts, LINK, "EXDEV", lambda b: "*app/*app-tool",
             teardown=_umounting("srv/app/bin"),
             description="tar -x of a release whose bin/app-tool is a hard link to libexec/app-tool, bin/ a "
                         "tmpfs of its own on the new host image (linkat EXDEV)"),
    Scenario("t39_tar_same_owner_unmapped_uid", "tar -x --same-owner (in unshare -r: a user namespace)",
             _tar_owner_argv, tar_same_owner_unmapped_uid, CHOWN, "EINVAL", lambda b: "*site*",
             description="tar -x --same-owner in a user namespace mapping root only, of an archive a CI job "
                         "built without --owner=0: members of uid 1000 (fchown EINVAL)"),
    Scenario("t39_cpio_pass_copy_passes_path_max", "cpio -pdm (after cd: a build tree into a stage)",
             lambda b: shell_argv(CPIO_SH, str(b)), cpio_pass_copy_passes_path_max, MKDIR | OPEN | STAT, "ENAMETOOLONG",
             # the recorder keeps a path's first 511 bytes: the copy's deep names end there
             lambda b: f"{b}/stage/release-*",
             description="cpio -pdm of a build tree nested one level deeper, so that its copy's deepest "
                         "directory passes PATH_MAX (its stat ENAMETOOLONG)"),
    Scenario("t39_xz_vmem_limit", "xz -9 -k (under a launcher's ulimit -v)", lambda b: shell_argv(XZ_SH, str(b)),
             xz_vmem_limit, MMAP, "ENOMEM", lambda b: NO_PATH,
             description="xz -9 of a release tarball under ulimit -v of ~300 MiB: its ~674 MiB encoder "
                         "cannot be mapped (mmap ENOMEM)"),
    Scenario("t39_zstd_decompress_ro_bind", "zstd -d -o (an asset archive into the release directory)",
             _zstd_argv, zstd_decompress_ro_bind, OPEN, "EROFS", lambda b: f"{b}/release/assets.tar",
             teardown=_umounting("release"),
             description="zstd -d -o into a release directory a compose file bind-mounts read-only "
                         "(open EROFS)"),
    Scenario("t39_zip_bundle_past_fsize", "zip -q -r (a bundle, under a launcher's ulimit -f)",
             lambda b: shell_argv(ZIP_SH, str(b)), zip_bundle_past_fsize, WRITE, "EFBIG", lambda b: f"{b}/dist/*",
             description="zip -r of a bundle of incompressible chunks under ulimit -f of 512 KiB, SIGXFSZ "
                         "ignored (the temporary archive's write EFBIG)"),
    Scenario("t39_unzip_archive_cleaned_up", "unzip -q -o (a downloaded release)", _unzip_argv,
             unzip_archive_cleaned_up, STAT | OPEN, "ENOENT", lambda b: f"{b}/cache/app-1.4.2.zip*",
             description="unzip of a downloaded archive a cache clean-up removed (stat ENOENT, then its .zip "
                         "and .ZIP guesses)"),
    Scenario("t39_dpkg_deb_build_unreadable", "dpkg-deb -b (as nobody: a package tree)", _deb_build_argv,
             dpkg_deb_build_unreadable, OPEN, "EACCES", lambda b: "*opt/tb-app/settings.conf",
             unprivileged=True,
             description="dpkg-deb -b as nobody of a tree whose settings.conf a restore made root:0600 "
                         "(its tar's open EACCES)"),
    Scenario("t39_dpkg_deb_extract_ro_bind", "dpkg-deb -x (a package into an image's root file system)",
             _deb_extract_argv, dpkg_deb_extract_ro_bind, MKDIR | OPEN, "EROFS", lambda b: "*opt*",
             teardown=_umounting("rootfs"),
             description="dpkg-deb -x into a root file system bind-mounted read-only (its tar's mkdir EROFS)"),
    Scenario("t39_ar_lib_dir_root", "ar rcs (as nobody: objects into a static library)", _ar_argv, ar_lib_dir_root,
             OPEN, "EACCES", lambda b: f"{b}/lib/*", unprivileged=True,
             description="ar rcs as nobody into lib/, recreated root:0755 by another target's sudo make "
                         "install: the temporary archive's open EACCES"),
    Scenario("t39_logrotate_state_dir_ro", "logrotate -f (compress, a state file of its own)", _logrotate_argv,
             logrotate_state_dir_ro, OPEN, "EROFS", lambda b: f"{b}/state/logrotate.status*",
             teardown=_umounting("state"),
             description="logrotate -f with compress, its state directory a read-only bind mount: the log "
                         "rotates and compresses, then the new state file's open EROFS"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
TAR_NOISE_SH = ('tar -czf "$1/dist/release.tar.gz" -C "$1/build" . && '
                'exec tar -tzvf "$1/dist/release.tar.gz"')


def _tar_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for _ in range(MEMBERS):
        write_file(base / "build" / f"asset-{token(4)}.js", _text(5, 60))
    (base / "dist").mkdir()


XZ_NOISE_SH = 'xz -T0 -6 -k "$1/dist/app.tar" && exec xz -t -T0 "$1/dist/app.tar.xz"'


def _xz_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "dist" / "app.tar", _text(3000, 9000).encode() + _blob(64, 512))


ZSTD_NOISE_SH = 'zstd -q -T0 -10 "$1/dist/app.tar" -o "$1/dist/app.tar.zst" && exec zstd -q -t "$1/dist/app.tar.zst"'


def _zstd_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "dist" / "app.tar", _text(3000, 9000).encode() + _blob(64, 512))


CPIO_NOISE_SH = ('cd "$1/build" && find . -print | cpio -o -H newc --quiet > "$1/dist/initrd.cpio" && '
                 'cd "$1/out" && exec cpio -idm --quiet < "$1/dist/initrd.cpio"')


def _cpio_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for d in ("bin", "etc"):
        for _ in range(3):
            write_file(base / "build" / d / f"{d}-{token(3)}", _text(2, 30))
    (base / "dist").mkdir()
    (base / "out").mkdir()


DEB_NOISE_SH = ('dpkg-deb --root-owner-group -b "$1/pkg" "$1/out/app.deb" && '
                'exec dpkg-deb -c "$1/out/app.deb"')


def _deb_noise(base: Path, run: int) -> None:  # noqa: ARG001
    version = f"{random.randrange(1, 9)}.{random.randrange(100)}.{random.randrange(1000)}"
    _pkg_tree(base / "pkg", version, [f"mod_{token(3)}.py" for _ in range(MEMBERS)])
    (base / "out").mkdir()


ZIP_NOISE_SH = ('cd "$1/build" && zip -q -r "$1/dist/bundle.zip" bundle && '
                'exec unzip -q "$1/dist/bundle.zip" -d "$1/out"')


def _zip_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for _ in range(MEMBERS):
        write_file(base / "build" / "bundle" / f"page-{token(4)}.html", _text(5, 80))
    (base / "dist").mkdir()
    (base / "out").mkdir()


def _logrotate_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _logs(base)


QUIET_THIRTYNINTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t39_tar_czf_tzvf_random_assets", lambda b: shell_argv(TAR_NOISE_SH, str(b)), _tar_noise,
                  description="tar -czf of five randomly named assets of random sizes, then tar -tzvf"),
    NoAnomalyCase("t39_xz_T0_random_tarball", lambda b: shell_argv(XZ_NOISE_SH, str(b)), _xz_noise,
                  description="xz -T0 -6 -k of a random tarball of random size, then xz -t -T0"),
    NoAnomalyCase("t39_zstd_T0_random_tarball", lambda b: shell_argv(ZSTD_NOISE_SH, str(b)), _zstd_noise,
                  description="zstd -T0 -10 of a random tarball of random size, then zstd -t"),
    NoAnomalyCase("t39_cpio_newc_round_trip", lambda b: shell_argv(CPIO_NOISE_SH, str(b)), _cpio_noise,
                  description="cpio -o -H newc of six randomly named files in two directories, cpio -idm back"),
    NoAnomalyCase("t39_dpkg_deb_random_version", lambda b: shell_argv(DEB_NOISE_SH, str(b)), _deb_noise,
                  description="dpkg-deb -b of a package of random version with five randomly named modules, "
                              "then dpkg-deb -c"),
    NoAnomalyCase("t39_zip_unzip_round_trip", lambda b: shell_argv(ZIP_NOISE_SH, str(b)), _zip_noise,
                  description="zip -r of five randomly named pages, unzip -d back"),
    NoAnomalyCase("t39_logrotate_compress_random_log", _logrotate_argv, _logrotate_noise,
                  description="logrotate -f with compress of a log of random contents, two older rotations, a "
                              "state file of a random date"),
]


def quiet_teardown() -> None:
    """Unmount what any failed case may have left."""
    for sc in REAL_THIRTYNINTH:
        base = ROOT / sc.name
        for n in ("srv/app/bin", "release", "rootfs", "state"):
            umount(base / n)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
