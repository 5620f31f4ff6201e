"""A thirty-first set of real programs with one real fault each: **a job's own background
writer changing what the program reads** -- every case runs as
``sh -c '<background writer> & <the program>; wait'``, and the writer (a shell loop of the same
job) appends to a log, creates files, removes files and renames files in the tree the program
walks or reads while it runs:

- **walkers**: ``find -type f -fprint``, ``du -a --exclude-from``, ``ls -R`` (as nobody),
  ``python3 -S`` with ``os.walk`` (as nobody);
- **archivers and copiers**: ``tar -cf`` ("file changed as we read it", "file removed before we
  read it"), ``cp -r``, ``rsync -a``, ``zip -r``;
- **readers of a glob or a tree**: ``sha512sum`` over a glob (as nobody), ``wc -l`` over a glob,
  ``grep -r -F -f``, ``sort -m`` of a growing log, ``tail -n``.

Good runs differ only by timing: how many files existed when the program listed the directory,
a file vanishing between the listing and the open (ENOENT that find, du, tar, cp, zip, grep and
sha512sum warn about and go on), a file growing while tar reads it. The writer never touches
d/c, where the faults live, nor the programs' outputs.

Faults (``t31_`` cases): an output directory that a stray cp made a file (find's -fprint openat
ENOTDIR; tar's archive openat ENOTDIR; rsync's destination ENOTDIR), a subdirectory recreated
root:0700 (ls -R's and os.walk's openat EACCES, as nobody), a file restored root:0600
(sha512sum's openat EACCES, as nobody), a "current" link made to point at itself (wc's openat
ELOOP), a patterns file the deploy did not ship (grep's openat ENOENT, amid the walk's ENOENT
races), an exclude file the deploy did not ship (du's openat ENOENT, amid its walk's ENOENT
races), a merged output's name made a directory (sort's openat EISDIR), a log directory made a
file (tail's openat ENOTDIR), read-only output volumes (cp -r's mkdir EROFS, zip's temporary
file openat EROFS).

Noise cases (``QUIET_THIRTYFIRST``) are good runs alone: the same programs walking, archiving,
copying, hashing and merging while the writer churns the tree.
"""

from __future__ import annotations

import os
from pathlib import Path

from .catalog import mount_tmpfs, umount, write
from .harness import ROOT, NoAnomalyCase, Scenario
from .real import own

OPEN = frozenset({"openat", "open", "openat2", "creat"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
MKDIR = frozenset({"mkdir", "mkdirat"})
PY3 = "/usr/bin/python3"


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


# --- the tree every case walks: d/{a,b,c}/f-NN.txt and d/grow.log ----------------------------------
def _text(sub: str, i: int) -> str:
    return "".join(f"{sub}-{i:02d} line {k} status {(i * 7 + k) % 5} path /api/{sub}/{k % 9}\n"
                   for k in range(40 + i * 3))


def _tree(base: Path, files: int = 20) -> None:
    _dirs(base, "d/a", "d/b", "d/c", "out")
    for sub in ("a", "b", "c"):
        for i in range(files):
            write(base / "d" / sub / f"f-{i:02d}.txt", _text(sub, i))
    write(base / "d" / "grow.log", "".join(f"line-boot-{k:03d}\n" for k in range(50)))


def _writer(b: Path, n: int = 40) -> str:
    """The job's background writer: appends to d/grow.log, creates d/a/new-N.txt, renames
    d/a/f-N.txt to d/a/r-N.txt and removes d/b/f-N.txt, one of each per step. Never d/c."""
    return (f"(i=0; while [ $i -lt {n} ]; do echo line-$i >> {b}/d/grow.log; "
            f"echo new-$i > {b}/d/a/new-$i.txt; rm -f {b}/d/b/f-$i.txt {b}/d/b/f-0$i.txt; "
            f"mv {b}/d/a/f-0$i.txt {b}/d/a/r-$i.txt 2>/dev/null; i=$((i+1)); done) &")


def _job(b: Path, program: str) -> list[str]:
    return _sh(f"{_writer(b)} {program}; rc=$?; wait; exit $rc")


# --- find -type f -fprint ----------------------------------------------------------------------------
def _find_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/find {b}/d -type f -size -8k -fprint {b}/out/list")


def find_outdir_is_a_file(base: Path, bad: bool) -> None:
    _tree(base)
    if bad:  # a stray `cp list out` made out a file
        (base / "out").rmdir()
        write(base / "out", "list\n")


# --- ls -R, as nobody ----------------------------------------------------------------------------------
def _ls_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/ls -lR {b}/d > {b}/out/listing")


def ls_subdir_recreated_root(base: Path, bad: bool) -> None:
    _tree(base)
    own(base)
    if bad:  # a restore recreated d/c root:0700
        os.chown(base / "d" / "c", 0, 0)
        (base / "d" / "c").chmod(0o700)


# --- tar -cf --------------------------------------------------------------------------------------------
def _tar_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/tar -cf {b}/backup/d.tar -C {b} d")


def tar_backup_dir_is_a_file(base: Path, bad: bool) -> None:
    _tree(base)
    if bad:  # the backup volume was not mounted and a log was written to its mount point's name
        write(base / "backup", "not mounted\n")
    else:
        _dirs(base, "backup")


# --- cp -r onto a read-only volume -----------------------------------------------------------------------
def _cp_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/cp -r {b}/d {b}/mnt/")


def cp_dest_read_only(base: Path, bad: bool, mount: bool = True) -> None:
    _tree(base)
    if mount:
        mount_tmpfs(base / "mnt", "16m", readonly=bad)
    else:
        _dirs(base, "mnt")


# --- sha512sum over a glob, as nobody ----------------------------------------------------------------------
def _sha_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/sha512sum {b}/d/*/*.txt > {b}/out/SHA512SUMS")


def sha_file_restored_root(base: Path, bad: bool) -> None:
    _tree(base)
    own(base)
    if bad:  # a restore put one file back root:0600
        f = base / "d" / "c" / "f-07.txt"
        os.chown(f, 0, 0)
        f.chmod(0o600)


# --- wc -l over a glob --------------------------------------------------------------------------------------
def _wc_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/wc -l {b}/d/*/* > {b}/out/counts")


def wc_current_link_loop(base: Path, bad: bool) -> None:
    _tree(base)
    os.symlink("current" if bad else "f-03.txt", base / "d" / "c" / "current")


# --- grep -r -F -f ---------------------------------------------------------------------------------------
def _grep_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/grep -r -F -f {b}/conf/patterns {b}/d > {b}/out/hits")


def grep_patterns_missing(base: Path, bad: bool) -> None:
    _tree(base)
    _dirs(base, "conf")
    if not bad:  # the bad host's deploy did not ship the patterns file
        write(base / "conf" / "patterns", "status 3\n/api/b/4\n")


# --- du -a --exclude-from ---------------------------------------------------------------------------------
def _du_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/du -a --exclude-from={b}/conf/exclude {b}/d > {b}/out/usage")


def du_exclude_missing(base: Path, bad: bool) -> None:
    _tree(base)
    _dirs(base, "conf")
    if not bad:  # the bad host's deploy did not ship the exclude list
        write(base / "conf" / "exclude", "*.tmp\n*.swp\n")


# --- sort -m of a growing log -------------------------------------------------------------------------------
def _sort_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/sort -m {b}/d/grow.log {b}/d/c/f-01.txt {b}/d/c/f-02.txt -o {b}/out/merged")


def sort_merged_is_dir(base: Path, bad: bool) -> None:
    _tree(base)
    if bad:  # a botched restore made the merged log's name a directory
        _dirs(base, "out/merged")


# --- tail -n --------------------------------------------------------------------------------------------
def _tail_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/tail -n 5 {b}/d/grow.log {b}/d/c/log/app.log > {b}/out/tails")


def tail_logdir_is_a_file(base: Path, bad: bool) -> None:
    _tree(base)
    if bad:  # a stray `cp app.log log` made the log directory a file
        write(base / "d" / "c" / "log", "app\n")
    else:
        _dirs(base, "d/c/log")
        write(base / "d" / "c" / "log" / "app.log", "".join(f"app {k}\n" for k in range(30)))


# --- zip -r onto a read-only volume ------------------------------------------------------------------------
def _zip_argv(b: Path) -> list[str]:
    return _job(b, f"cd {b} && /usr/bin/zip -q -r {b}/mnt/d.zip d")


def zip_dest_read_only(base: Path, bad: bool, mount: bool = True) -> None:
    _tree(base)
    if mount:
        mount_tmpfs(base / "mnt", "16m", readonly=bad)
    else:
        _dirs(base, "mnt")


# --- rsync -a into a destination whose parent is a file -----------------------------------------------------
def _rsync_argv(b: Path) -> list[str]:
    return _job(b, f"/usr/bin/rsync -a {b}/d/ {b}/out/mirror/")


def rsync_dest_parent_is_a_file(base: Path, bad: bool) -> None:
    _tree(base)
    if bad:  # a stray `cp mirror.log out` made out a file
        (base / "out").rmdir()
        write(base / "out", "mirror\n")


# --- python3 os.walk, as nobody -----------------------------------------------------------------------------
WALK_PY = """import os, sys
base = sys.argv[1]
rows = []
for root, dirs, files in os.walk(f'{base}/d'):
    dirs.sort()
    for name in sorted(files):
        p = os.path.join(root, name)
        try:
            with open(p, 'rb') as fh:
                rows.append(f'{len(fh.read())} {p}\\n')
        except FileNotFoundError:  # the job's writer removed it after the listing
            pass
with open(f'{base}/out/manifest', 'w') as out:
    out.writelines(rows)
"""


def _walk_argv(b: Path) -> list[str]:
    return _job(b, f"{PY3} -S {b}/walk.py {b}")


def walk_subdir_recreated_root(base: Path, bad: bool) -> None:
    _tree(base)
    write(base / "walk.py", WALK_PY)
    own(base)
    if bad:  # a restore recreated d/c root:0700
        os.chown(base / "d" / "c", 0, 0)
        (base / "d" / "c").chmod(0o700)


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


REAL_THIRTYFIRST: list[Scenario] = [
    Scenario("t31_find_fprint_outdir_is_a_file", "find -type f -fprint (a background writer churning the tree)",
             _find_argv, find_outdir_is_a_file, OPEN, "ENOTDIR", lambda b: f"{b}/out/list",
             description="find walking a tree its job's writer churns, printing to a directory a stray cp made "
                         "a file"),
    Scenario("t31_ls_R_subdir_recreated_root", "ls -lR (as nobody, a background writer churning the tree)",
             _ls_argv, ls_subdir_recreated_root, OPEN, "EACCES", lambda b: f"{b}/d/c", unprivileged=True,
             description="an agent's recursive listing of a churning tree, one subdirectory a restore made "
                         "root:0700"),
    Scenario("t31_tar_backup_dir_is_a_file", "tar -cf (a background writer appending and removing files)",
             _tar_argv, tar_backup_dir_is_a_file, OPEN, "ENOTDIR", lambda b: f"{b}/backup/d.tar",
             description="tar archiving a churning tree into a backup directory that is a file (not mounted)"),
    Scenario("t31_cp_r_dest_read_only", "cp -r (a background writer churning the source)", _cp_argv,
             cp_dest_read_only, OPEN | MKDIR, "EROFS", lambda b: f"{b}/mnt/d", teardown=_umounting("mnt"),
             description="cp -r of a churning tree onto a volume mounted read-only"),
    Scenario("t31_sha512sum_file_restored_root", "sha512sum over a glob (as nobody, files vanishing)", _sha_argv,
             sha_file_restored_root, OPEN, "EACCES", lambda b: f"{b}/d/c/f-07.txt", unprivileged=True,
             description="an agent hashing a glob of a churning tree, one file a restore put back root:0600"),
    # wc stats every operand before it opens the first (newfstatat ELOOP, then openat ELOOP):
    # either call is the fault
    Scenario("t31_wc_current_link_loop", "wc -l over a glob (files vanishing between glob and open)", _wc_argv,
             wc_current_link_loop, OPEN | STAT, "ELOOP", lambda b: f"{b}/d/c/current",
             description="wc over a churning glob whose current link a rotation made point at itself"),
    # grep -r's walk meets ENOENT in the good runs too (files the writer removed after the
    # listing, a different number each run): the bad run's ENOENT is the patterns file's
    Scenario("t31_grep_r_patterns_missing", "grep -r -F -f (ENOENT of vanished files in the good runs too)",
             _grep_argv, grep_patterns_missing, OPEN, "ENOENT", lambda b: f"{b}/conf/patterns",
             description="grep -r over a churning tree with a patterns file the deploy did not ship"),
    # du's walk meets ENOENT in the good runs too (fstatat of entries removed after the listing)
    Scenario("t31_du_exclude_from_missing", "du -a --exclude-from (ENOENT of vanished entries in the good runs)",
             _du_argv, du_exclude_missing, OPEN, "ENOENT", lambda b: f"{b}/conf/exclude",
             description="du over a churning tree with an exclude list the deploy did not ship"),
    Scenario("t31_sort_merge_output_is_dir", "sort -m of a growing log (appended while read)", _sort_argv,
             sort_merged_is_dir, OPEN, "EISDIR", lambda b: f"{b}/out/merged",
             description="sort -m merging a log its job appends to, into a name a botched restore made a "
                         "directory"),
    Scenario("t31_tail_logdir_is_a_file", "tail -n (of a log appended to while read)", _tail_argv,
             tail_logdir_is_a_file, OPEN, "ENOTDIR", lambda b: f"{b}/d/c/log/app.log",
             description="tail of a growing log and an app log whose directory a stray cp made a file"),
    Scenario("t31_zip_r_dest_read_only", "zip -q -r (names vanishing between listing and reading)", _zip_argv,
             zip_dest_read_only, OPEN, "EROFS", lambda b: f"{b}/mnt/*", teardown=_umounting("mnt"),
             description="zip -r of a churning tree, its archive (and temporary) on a read-only volume"),
    Scenario("t31_rsync_dest_parent_is_a_file", "rsync -a (a churning source, sender and receiver)", _rsync_argv,
             rsync_dest_parent_is_a_file, OPEN | STAT | MKDIR, "ENOTDIR", lambda b: f"{b}/out/mirror*",
             description="rsync mirroring a churning tree into out/mirror where out is a file"),
    Scenario("t31_os_walk_subdir_recreated_root", "python3 -S (os.walk, as nobody, a churning tree)", _walk_argv,
             walk_subdir_recreated_root, OPEN, "EACCES", lambda b: f"{b}/d/c", unprivileged=True,
             description="an agent's os.walk manifest of a churning tree, one subdirectory a restore made "
                         "root:0700"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _unmounted(setup):
    """The good setup with its output volume a plain directory (the harness's fresh_dir
    unmounts only base itself)."""
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False, mount=False)
    return noise


def _tree_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _tree(base)


QUIET_THIRTYFIRST: list[NoAnomalyCase] = [
    NoAnomalyCase("t31_find_walk_churn", lambda b: _job(b, f"/usr/bin/find {b}/d -type f -size -8k -print"),
                  _tree_noise, description="find walking a tree its job's writer churns: entries vanish "
                                           "between readdir and fstatat (ENOENT), a different number each run"),
    NoAnomalyCase("t31_du_walk_churn", lambda b: _job(b, f"/usr/bin/du -a {b}/d"), _tree_noise,
                  description="du -a over a churning tree"),
    NoAnomalyCase("t31_ls_lR_churn", lambda b: _job(b, f"/usr/bin/ls -lR {b}/d"), _tree_noise,
                  description="ls -lR over a churning tree: lstat of vanished names ENOENT"),
    NoAnomalyCase("t31_tar_file_changed", lambda b: _job(b, f"/usr/bin/tar -cf {b}/out/d.tar -C {b} d"),
                  _tree_noise, description="tar of a tree whose log grows while read ('file changed as we "
                                           "read it') and whose files vanish"),
    NoAnomalyCase("t31_sha512sum_glob_vanish", _sha_argv, _tree_noise,
                  description="sha512sum over a glob whose files vanish between the glob and the open"),
    NoAnomalyCase("t31_grep_r_churn", lambda b: _job(b, f"/usr/bin/grep -r 'status 3' {b}/d > {b}/out/hits"),
                  _tree_noise, description="grep -r over a churning tree"),
    NoAnomalyCase("t31_os_walk_churn", _walk_argv,
                  lambda base, run: (_tree(base), write(base / "walk.py", WALK_PY)),
                  description="os.walk and opens of a churning tree, FileNotFoundError tolerated"),
    NoAnomalyCase("t31_cp_r_churn", _cp_argv, _unmounted(cp_dest_read_only),
                  description="cp -r of a churning tree: 'cannot stat' of vanished files"),
    NoAnomalyCase("t31_zip_r_churn", _zip_argv, _unmounted(zip_dest_read_only),
                  description="zip -r of a churning tree: 'name not matched' of vanished files"),
]


def quiet_teardown() -> None:
    """What a fault case cut short may leave: its output volume mounted (the harness's exit hook
    will not remove a root with a mount in it). Noise cases mount nothing."""
    for sc in REAL_THIRTYFIRST:
        umount(ROOT / sc.name / "mnt")


# What the differ does not absorb yet (round twenty-eight, the blind set's 19 runs and a CI): a
# job's own writer changes what the program reads, so its good runs differ in what they found --
# a file listed and gone before it was opened (ENOENT the third run alone met: "vanished"), a
# name made before the listing (the calls, and the errors every entry gets, on a name no good
# run listed: "appeared"), a warning on stderr the references wrote and the third did not
# ("warned"). Named good vs good in 1-15 of 19 runs per case (test_real_programs_thirtyfirst's
# FLAKY_QUIET has each), and os.walk's noise case, right in all 19, in CI 61's load; the top-1
# fault was right in every run. The whole set runs in bench/scenario_accuracy.py, not in the
# tests, until the differ can tell a concurrent writer's churn from a divergence.
BENCH_ONLY: frozenset[str] = frozenset(s.name for s in REAL_THIRTYFIRST)
QUIET_BENCH_ONLY: frozenset[str] = frozenset(c.name for c in QUIET_THIRTYFIRST)
