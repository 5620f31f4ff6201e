"""A sixty-sixth set of real programs with one real fault each: **idempotent and incremental
steps, cold and warm** -- deploy and build steps whose good runs legitimately differ because some
found the work already done (`mkdir -p` of an existing tree, `rm -f` of files already gone,
`cp -u` of an up-to-date copy, `rsync` with nothing to transfer, `make` with nothing to be done,
`ln -sfn` replacing a link rather than creating it, `tar --skip-old-files` over an extracted
tree, a python3 cache directory made with `os.makedirs(exist_ok=True)`).

Fault cases (``REAL_SIXTYSIXTH``): the same kind of step where the warm state is WRONG on the bad
run. Their good runs take turns cold and warm (``RunTurns``: good runs 0 and 2 cold, 1 warm), so
the bad run is diffed against a cold and a warm good run and the third (cold) good run against
the same two must be quiet. Each expectation is the first failing call ``strace -f`` shows for the
bad run (coreutils 9.1, python 3, Linux 6.x):

- ``cp -u SRC DEPLOY/conf/app.conf`` with ``conf`` a regular file (an old deploy wrote a file
  where the directory should be): openat(O_PATH|O_DIRECTORY) ENOTDIR DEPLOY/conf/app.conf, then
  newfstatat ENOTDIR ("cannot stat"), exit 1. The openat is no departure: the warm good run makes
  the same call and it fails the same way (app.conf is a file, not a directory), so the
  expectation is the newfstatat, which the warm good run completes and the cold one fails ENOENT;
- ``install -C -m 644 SRC ETC/app.conf`` with ``ETC`` a symlink loop (``etc -> etc.d -> etc``,
  a half-done migration): openat(O_PATH|O_DIRECTORY) ELOOP ETC/app.conf, exit 1;
- ``ln -sfn releases/r1 APP/current`` with ``APP`` a regular file: symlinkat ENOTDIR
  APP/current, exit 1;
- ``touch -c BUILD/stamp`` with the stamp a symlink to itself: utimensat ELOOP BUILD/stamp
  (-c forgives only a missing file), exit 1;
- a deploy script's ``exec 9>>LOCK; flock -n 9 || exit 75`` with a stale holder keeping LOCK
  (an open file description of the test process holding LOCK_EX): flock(9, LOCK_EX|LOCK_NB)
  EAGAIN (EWOULDBLOCK) on LOCK, exit 75;
- python3 ``os.makedirs(CACHE/v1/objects, exist_ok=True)`` with ``CACHE`` a regular file:
  makedirs first asks whether the parent exists, newfstatat ENOTDIR CACHE/v1 (the cold good run's
  fails ENOENT, the warm one's succeeds), then mkdir ENOTDIR CACHE/v1, exit 1.

Noise cases (``QUIET_SIXTYSIXTH``): four good runs each, two cold (the step does its work) and two
warm (the step finds it done); the test module diffs the warm run against the cold ones and the
cold run against the warm ones, and both must be quiet.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .files import run_quiet, write_file
from .harness import PY, NoAnomalyCase, RunTurns, Scenario, argv_in

OPEN = frozenset({"openat", "open", "openat2"})
SYMLINK = frozenset({"symlink", "symlinkat"})
UTIMES = frozenset({"utimensat", "utimes", "utime", "futimesat"})
FLOCK = frozenset({"flock"})
STAT = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64"})

COLD_RUNS = 2  # quiet cases: runs 0, 1 cold; runs 2, 3 warm
RUNS = 4

_TURNS = RunTurns()
_HELD: dict[str, int] = {}  # a case's directory name -> the descriptor holding its stale lock

APP_CONF = "[app]\nname = t66\nworkers = 4\n"


def _warm(base: Path, bad: bool) -> bool:
    """Whether a fault case's good run is a warm one (good runs 1, 3, ...; 0, 2, ... are cold); the
    bad run builds its own (wrong) state and is neither."""
    return _TURNS.index(base, bad) % 2 == 1


def release_lock(base: Path) -> None:
    """Close the stale holder's descriptor of this case, if any."""
    fd = _HELD.pop(base.name, None)
    if fd is not None:
        os.close(fd)


def _sc(name, program, argv, setup, probe, errno, path, description=""):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=release_lock, description=description)


# --- fault setups -----------------------------------------------------------------------------------------------------
def cp_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    src = write_file(base / "src" / "app.conf", APP_CONF)
    conf = base / "deploy" / "conf"
    if bad:  # an old deploy wrote a file where the directory should be
        write_file(conf, "# conf was a file in release 0\n")
        return
    conf.mkdir(parents=True)
    if warm:  # the copy is already up to date
        run_quiet("/usr/bin/cp", "-p", str(src), str(conf / "app.conf"))


def install_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    src = write_file(base / "src" / "app.conf", APP_CONF)
    etc = base / "etc"
    if bad:  # a half-done migration: etc -> etc.d -> etc
        etc.symlink_to("etc.d")
        (base / "etc.d").symlink_to("etc")
        return
    etc.mkdir()
    if warm:
        run_quiet("/usr/bin/install", "-m", "644", str(src), str(etc / "app.conf"))


def ln_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    if bad:  # the application directory is a regular file
        write_file(base / "app", "app was a tarball name once\n")
        return
    for r in ("r0", "r1"):
        write_file(base / "app" / "releases" / r / "VERSION", f"{r}\n")
    if warm:  # the previous release is current: ln replaces the link
        (base / "app" / "current").symlink_to("releases/r0")


def touch_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    build = base / "build"
    build.mkdir()
    if bad:  # the stamp is a link to itself
        (build / "stamp").symlink_to("stamp")
    elif warm:
        write_file(build / "stamp", "")


def flock_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    run = base / "run"
    run.mkdir()
    lock = run / "deploy.lock"
    if warm or bad:  # the lock file is left from an earlier deploy
        lock.write_text("")
    if bad:  # a stale deploy still holds it
        release_lock(base)
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _HELD[base.name] = fd


FLOCK_SCRIPT = 'exec 9>>"$1/run/deploy.lock"; flock -n 9 || exit 75; echo deployed > "$1/run/stamp"'
CACHE_SCRIPT = ("import os, sys; d = os.path.join(sys.argv[1], 'cache', 'v1', 'objects'); "
                "os.makedirs(d, exist_ok=True); "
                "open(os.path.join(d, 'index'), 'w').write('t66\\n')")


def cache_setup(base: Path, bad: bool) -> None:
    warm = _warm(base, bad)
    if bad:  # a regular file where the cache directory should be
        write_file(base / "cache", "not a directory\n")
    elif warm:
        (base / "cache" / "v1" / "objects").mkdir(parents=True)


REAL_SIXTYSIXTH: list[Scenario] = [
    _sc("t66_cp_update_target_dir_is_a_file", "cp -u (deploy a config)",
        argv_in(["/usr/bin/cp", "-u", "{b}/src/app.conf", "{b}/deploy/conf/app.conf"]), cp_setup, STAT, "ENOTDIR",
        lambda b: f"{b}/deploy/conf/app.conf",
        description="conf is a regular file: newfstatat ENOTDIR conf/app.conf (after an openat(O_DIRECTORY) "
                    "failing as the warm good run's does), exit 1"),
    _sc("t66_install_compare_etc_is_a_symlink_loop", "install -C -m 644 (install a config)",
        argv_in(["/usr/bin/install", "-C", "-m", "644", "{b}/src/app.conf", "{b}/etc/app.conf"]), install_setup,
        OPEN, "ELOOP", lambda b: f"{b}/etc/app.conf",
        description="etc -> etc.d -> etc: openat(O_DIRECTORY) ELOOP etc/app.conf, exit 1"),
    _sc("t66_ln_current_link_app_is_a_file", "ln -sfn (switch the current release)",
        argv_in(["/usr/bin/ln", "-sfn", "releases/r1", "{b}/app/current"]), ln_setup, SYMLINK, "ENOTDIR",
        lambda b: f"{b}/app/current",
        description="app is a regular file: symlinkat ENOTDIR app/current, exit 1"),
    _sc("t66_touch_nocreate_stamp_links_to_itself", "touch -c (refresh a build stamp)",
        argv_in(["/usr/bin/touch", "-c", "{b}/build/stamp"]), touch_setup, UTIMES, "ELOOP",
        lambda b: f"{b}/build/stamp",
        description="the stamp is a symlink to itself: utimensat ELOOP, exit 1"),
    _sc("t66_sh_flock_nonblocking_lock_held_by_stale_deploy", "sh -c 'exec 9>>LOCK; flock -n 9 || exit 75'",
        lambda b: ["/bin/sh", "-c", FLOCK_SCRIPT, "sh", str(b)], flock_setup, FLOCK, "EAGAIN",
        lambda b: f"{b}/run/deploy.lock",
        description="a stale deploy holds the lock: flock(LOCK_EX|LOCK_NB) EAGAIN, exit 75"),
    _sc("t66_python_makedirs_cache_is_a_file", "python3 os.makedirs(exist_ok=True) (a cache directory)",
        lambda b: [*PY, "-c", CACHE_SCRIPT, str(b)], cache_setup, STAT, "ENOTDIR",
        lambda b: f"{b}/cache/v1",
        description="cache is a regular file: newfstatat ENOTDIR cache/v1 (makedirs' exists check), then "
                    "mkdir ENOTDIR, exit 1"),
]


# --- good runs, cold and warm -----------------------------------------------------------------------------------------
def _cold(run: int) -> bool:
    return run < COLD_RUNS


def mkdir_noise(base: Path, run: int) -> None:
    if not _cold(run):
        (base / "srv" / "app" / "releases" / "r1" / "logs").mkdir(parents=True)


def rm_noise(base: Path, run: int) -> None:
    (base / "run").mkdir()
    if _cold(run):  # the previous service left its pid file, socket stand-in and temp file
        for name in ("app.pid", "app.sock", "stale.tmp"):
            write_file(base / "run" / name, "4242\n")


def _conf_src(base: Path) -> Path:
    return write_file(base / "src" / "app.conf", APP_CONF)


def cp_noise(base: Path, run: int) -> None:
    src = _conf_src(base)
    (base / "deploy").mkdir()
    if not _cold(run):
        run_quiet("/usr/bin/cp", "-p", str(src), str(base / "deploy" / "app.conf"))


def _tree(root: Path) -> None:
    write_file(root / "app.conf", APP_CONF)
    write_file(root / "bin" / "run.sh", "#!/bin/sh\nexec true\n", 0o755)
    for i in range(5):
        write_file(root / "share" / f"asset{i}.txt", f"asset {i}\n" * (i + 1))


def rsync_noise(base: Path, run: int) -> None:
    _tree(base / "src")
    (base / "dst").mkdir()
    if not _cold(run):  # an earlier sync of the same tree
        run_quiet("/usr/bin/rsync", "-a", f"{base}/src/", f"{base}/dst/")


MAKEFILE = """\
OUT := out
all: $(OUT)/app.conf $(OUT)/version.txt
$(OUT)/app.conf: src/app.conf.in
\tmkdir -p $(OUT)
\tcp src/app.conf.in $@
$(OUT)/version.txt: src/version.in $(OUT)/app.conf
\tcp src/version.in $@
.PHONY: all
"""


def make_noise(base: Path, run: int) -> None:
    proj = base / "proj"
    write_file(proj / "Makefile", MAKEFILE)
    write_file(proj / "src" / "app.conf.in", APP_CONF)
    write_file(proj / "src" / "version.in", "1.0\n")
    if not _cold(run):  # an earlier build: nothing to be done
        run_quiet("/usr/bin/make", "-s", "-C", str(proj))


def ln_noise(base: Path, run: int) -> None:
    for r in ("r0", "r1"):
        write_file(base / "app" / "releases" / r / "VERSION", f"{r}\n")
    if not _cold(run):  # the previous release is current
        (base / "app" / "current").symlink_to("releases/r0")


def tar_noise(base: Path, run: int) -> None:
    _tree(base / "bundle")
    run_quiet("/usr/bin/tar", "-C", str(base / "bundle"), "-cf", str(base / "bundle.tar"), ".")
    (base / "out").mkdir()
    if not _cold(run):  # extracted by an earlier deploy
        run_quiet("/usr/bin/tar", "-C", str(base / "out"), "-xf", str(base / "bundle.tar"))


def cache_noise(base: Path, run: int) -> None:
    if not _cold(run):
        (base / "cache" / "v1" / "objects").mkdir(parents=True)


QUIET_SIXTYSIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t66_mkdir_parents_tree_exists_or_not",
                  argv_in(["/usr/bin/mkdir", "-p", "{b}/srv/app/releases/r1/logs"]), mkdir_noise, runs=RUNS,
                  description="cold: mkdir makes every level; warm: mkdir EEXIST on the whole tree"),
    NoAnomalyCase("t66_rm_force_files_present_or_gone",
                  argv_in(["/usr/bin/rm", "-f", "{b}/run/app.pid", "{b}/run/app.sock", "{b}/run/stale.tmp"]),
                  rm_noise, runs=RUNS, description="cold: three files unlinked; warm: unlinkat ENOENT, forgiven"),
    NoAnomalyCase("t66_cp_update_copy_missing_or_current",
                  argv_in(["/usr/bin/cp", "-u", "{b}/src/app.conf", "{b}/deploy/app.conf"]), cp_noise, runs=RUNS,
                  description="cold: the copy is made; warm: an up-to-date copy, nothing written"),
    NoAnomalyCase("t66_rsync_full_transfer_or_nothing_to_do",
                  argv_in(["/usr/bin/rsync", "-a", "{b}/src/", "{b}/dst/"]), rsync_noise, runs=RUNS,
                  description="cold: every file transferred; warm: the quick check finds nothing to transfer"),
    NoAnomalyCase("t66_make_rebuild_or_nothing_to_be_done",
                  argv_in(["/usr/bin/make", "-s", "-C", "{b}/proj"]), make_noise, runs=RUNS,
                  description="cold: make runs mkdir and two cp recipes; warm: every target is up to date"),
    NoAnomalyCase("t66_ln_current_link_created_or_replaced",
                  argv_in(["/usr/bin/ln", "-sfn", "releases/r1", "{b}/app/current"]), ln_noise, runs=RUNS,
                  description="cold: symlinkat creates current; warm: EEXIST, a temporary link renamed over it"),
    NoAnomalyCase("t66_tar_skip_old_files_empty_or_extracted",
                  argv_in(["/usr/bin/tar", "-C", "{b}/out", "--skip-old-files", "-xf", "{b}/bundle.tar"]), tar_noise,
                  runs=RUNS, description="cold: every member written; warm: openat(O_EXCL) EEXIST, each skipped"),
    NoAnomalyCase("t66_python_makedirs_cache_cold_or_warm",
                  lambda b: [*PY, "-c", CACHE_SCRIPT, str(b)], cache_noise, runs=RUNS,
                  description="cold: makedirs climbs (mkdir ENOENT) and makes three levels; warm: mkdir EEXIST"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: every stale lock this set holds is released."""
    for name in list(_HELD):
        release_lock(Path(name))
