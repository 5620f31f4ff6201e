"""A forty-eighth set of real programs with one real fault each: **good runs recorded in
environments that differ from each other** -- as an SRE's good traces really are: captured on
other days, by other users, from other directories.

Each case's three good runs differ among themselves in one or two environment dimensions, and the
bad run is recorded in one of the good runs' environments plus one real fault:

- **TMPDIR** (set to one directory, another, or unset: /tmp): ``mktemp`` in a job script, the bad
  host's TMPDIR naming a regular file (openat ENOTDIR at ``TMPDIR/tmp.XXXXXXXXXX``);
- **PATH order** (the report tool found in the 2nd, 4th or 3rd directory): ``nohup report``, the
  bad host's deployment dropped the tool (execve ENOENT in the last PATH directory);
- **HOME** (with a ``.gitconfig``, without one but with ``XDG_CONFIG_HOME``, HOME unset with
  ``GIT_CONFIG_NOSYSTEM``): ``git log``, the bad user's dotfiles manager left ``~/.gitconfig`` a
  symlink to itself (access ELOOP: git dies "unable to access");
- **HOME with or without a dotfile** (``~/.sqliterc``, none, a HOME that does not exist):
  ``sqlite3`` on a state database whose directory the bad host's migration replaced by a file
  (access/openat ENOTDIR);
- **TZ** (unset: /etc/localtime, Asia/Tokyo, Europe/Berlin) and LANG: ``diff -u`` of a config
  against its ``.dpkg-old`` copy, the copy removed on the bad host (stat ENOENT);
- **LANG/LC_ALL** (C, C.UTF-8, de_DE.UTF-8 which is not installed): ``ls -lL`` of a releases
  directory whose ``current`` link dangles on the bad host (statx ENOENT);
- **stdin/stdout** (a file, a pipe, /dev/null) and ``GREP_COLORS``: ``grep -f rules`` whose rules
  path is a directory on the bad host (read EISDIR);
- **umask and BZIP2** (022/077/002; unset, -9, -1): ``bzip2 -k`` into a spool the bad host mounts
  read-only (openat EROFS);
- **root vs nobody** (setpriv --reuid=65534): ``tac`` of a journal the bad host's rotation made
  0600 root (openat EACCES as nobody);
- **current directory and XZ_DEFAULTS/XZ_OPT**: ``xz -k`` of a rotated log that is not there
  (openat ENOENT);
- **PYTHONDONTWRITEBYTECODE and PYTHONPATH order** (the library in the 1st, 3rd or 2nd
  directory; bytecode written or not): a Python app whose settings file is missing (openat
  ENOENT).

- **stdin a file or a pipe, umask, LC_ALL**: ``base64`` into a dump filesystem (a tmpfs the setup
  mounts) that is full on the bad host (write ENOSPC).

The expectations are what ``strace -f`` shows. Every run has the same command line, as a cron job
has: ``env -i /bin/sh .run/launch.sh``, the job's wrapper script, which the setup writes for the
run (``cd DIR``, ``umask``, ``export NAME=VALUE``, ``exec [setpriv --reuid=65534 ...] PROGRAM
ARGS < stdin > stdout``): the good runs of a case take their environments in turn, the bad run
its stated one (one of the good runs' or a mix of two). (With the environment in the command line
itself -- ``env -i HOME=/a git ...`` beside ``env -i HOME=/b git ...`` -- ``baseline diff`` refuses
the good runs as traces of different commands unless ``--mixed`` is given.)

Noise cases (``QUIET_FORTYEIGHTH``): good runs alone across such environments, no fault: ``sort``
spilling to TMPDIR in other places, ``wc`` printing its translated "total" under C, C.UTF-8, a
locale not installed and LANGUAGE=de (the German catalog read), a tool found at another place in
PATH, ``stat`` of mtimes under other TZ, ``git log`` under other HOMEs and from another directory,
``sha224sum`` as root and as nobody, ``tr`` with stdin/stdout a file, a pipe or /dev/null, and a
Python app writing its bytecode or not, from other directories under other umasks, the last run
without HOME.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .files import mounted_tmpfs, random_text, run_quiet, token, write_file
from .harness import NOBODY, ROOT, NoAnomalyCase, Scenario, unmount_under


@dataclass
class RunEnv:
    """One run's environment: variables (``{b}`` is the case's directory), working directory
    (relative to it), user, umask and stdio of the program (shell redirections)."""

    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    nobody: bool = False
    umask: str | None = None
    stdin: str | None = None  # a redirection: '< "$B/in"', or a pipe: 'cat "$B/in" |'
    stdout: str | None = None  # '> "$B/out"', '> /dev/null', '| cat > "$B/out"'


# the environment each case's current run has, chosen by its setup
_CURRENT: dict[str, tuple[RunEnv, list[str]]] = {}
_GOOD_COUNT: dict[str, int] = {}
LAUNCHER = ".run/launch.sh"


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _launch_script(base: Path, run: RunEnv, cmd: list[str]) -> str:
    """The job's wrapper script for this run: its working directory, umask, variables, user and
    stdio, then the program (exec'd unless stdin is a pipe)."""
    b = str(base)
    lines = ["#!/bin/sh"]
    if run.cwd is not None:
        lines.append(f"cd {_quote(str(base / run.cwd))} || exit 97")
    if run.umask:
        lines.append(f"umask {run.umask}")
    lines += [f"export {k}={_quote(v.replace('{b}', b))}" for k, v in run.env.items()]
    words = [*(NOBODY if run.nobody else []), *(c.replace("{b}", b) for c in cmd)]
    line = " ".join(_quote(w) for w in words)
    stdin = (run.stdin or "").replace("$B", b)
    stdout = (run.stdout or "").replace("$B", b)
    lines.append(f"{stdin} {line} {stdout}" if stdin.endswith("|") else f"exec {line} {stdin} {stdout}")
    return "\n".join(lines) + "\n"


def _run_argv(base: Path) -> list[str]:
    """The same command line for every run (a cron job's): a clean environment and the job's
    wrapper script, which the setup wrote for the run."""
    return ["/usr/bin/env", "-i", "/bin/sh", str(base / LAUNCHER)]


def _write_launcher(base: Path, run: RunEnv, cmd: list[str]) -> None:
    if run.cwd:
        (base / run.cwd).mkdir(parents=True, exist_ok=True)
    write_file(base / LAUNCHER, _launch_script(base, run, cmd), 0o755)
    (base / LAUNCHER).parent.chmod(0o755)
    _CURRENT[base.name] = (run, cmd)


def _staged(goods: list[RunEnv], bad: RunEnv, cmd: list[str], build):
    """A scenario's setup: the good runs take `goods` in turn, the bad run `bad`; build(base, bad,
    run) makes the files, then the run's wrapper script is written."""

    def setup(base: Path, is_bad: bool) -> None:
        if is_bad:
            run = bad
            _GOOD_COUNT[base.name] = 0
        else:
            i = _GOOD_COUNT.get(base.name, 0)
            _GOOD_COUNT[base.name] = i + 1
            run = goods[i % len(goods)]
        build(base, is_bad, run)
        _write_launcher(base, run, cmd)

    return setup


def _noise_staged(runs: list[RunEnv], cmd: list[str], build):
    """A noise case's setup: run i takes runs[i]."""

    def setup(base: Path, i: int) -> None:
        run = runs[i % len(runs)]
        build(base, False, run)
        _write_launcher(base, run, cmd)

    return setup


def _open_up(base: Path) -> None:
    """Every directory under base walkable and every file readable (runs as nobody)."""
    for dirpath, _dirnames, filenames in os.walk(base):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            p = Path(dirpath) / f
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o444)


# --- mktemp: TMPDIR set, unset, elsewhere; the bad host's TMPDIR a regular file ---------------------------------------
MKTEMP = ["/bin/sh", "-c", 'f=$(mktemp) && cat "$1/batch.txt" > "$f" && wc -l < "$f" > "$1/count" && rm -f "$f"',
          "sh", "{b}"]
MKTEMP_GOODS = [
    RunEnv({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "{b}/tmp"}),
    RunEnv({"PATH": "/usr/bin:/bin", "LANG": "C"}, cwd="jobs/nightly"),  # TMPDIR unset: /tmp
    RunEnv({"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "TMPDIR": "{b}/tmp"}, cwd="jobs/nightly"),
]


def mktemp_build(base: Path, bad: bool, run: RunEnv) -> None:
    write_file(base / "batch.txt", random_text(20, 400))
    tmpdir = run.env.get("TMPDIR", "").replace("{b}", str(base))
    if tmpdir:
        if bad:  # the bad host's profile sets TMPDIR to a file a deploy script wrote
            write_file(Path(tmpdir), "scratch\n")
        else:
            Path(tmpdir).mkdir(parents=True, exist_ok=True)


# --- nohup report: the tool found in another PATH directory; gone on the bad host ----------------------------------
REPORT_SH = '#!/bin/sh\nwc -c "$1"/data/*.csv > "$1/report.txt"\n'
NOHUP = ["/usr/bin/nohup", "report", "{b}"]
_PATH4 = "{b}/opt/a/bin:{b}/opt/b/bin:{b}/opt/c/bin:{b}/opt/d/bin"
NOHUP_GOODS = [
    RunEnv({"PATH": _PATH4, "HOME": "{b}/home/ops", "WHERE": "b"}),
    RunEnv({"PATH": _PATH4, "HOME": "{b}/home/cron", "WHERE": "d"}),
    RunEnv({"PATH": _PATH4, "WHERE": "b"}),  # no HOME
]
NOHUP_BAD = RunEnv({"PATH": _PATH4, "HOME": "{b}/home/cron", "WHERE": "-"})


def nohup_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    for d in "abcd":
        (base / "opt" / d / "bin").mkdir(parents=True)
    for i in range(random.randrange(2, 6)):
        write_file(base / "data" / f"part-{i}.csv", random_text(5, 200))
    where = run.env["WHERE"]
    if where != "-":  # the bad host's deployment dropped the report tool
        # wc found by the tool's shell in /usr/bin and /bin: it runs with the job's PATH
        write_file(base / "opt" / where / "bin" / "report",
                   REPORT_SH.replace("wc -c", "/usr/bin/wc -c"), 0o755)


# --- git log: HOME with a .gitconfig, without (XDG config), unset; the bad user's .gitconfig loops -----------------
GIT = ["/usr/bin/git", "-C", "{b}/repo", "log", "-1", "--format=%H %s"]
GIT_GOODS = [
    RunEnv({"HOME": "{b}/home/alice", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}),
    RunEnv({"HOME": "{b}/home/svc", "XDG_CONFIG_HOME": "{b}/xdg", "PATH": "/usr/bin:/bin"}, cwd="work"),
    RunEnv({"GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, cwd="work"),
]
# alice's HOME (good run 0) with svc's XDG config and directory (good run 1)
GIT_BAD = RunEnv({"HOME": "{b}/home/alice", "XDG_CONFIG_HOME": "{b}/xdg", "PATH": "/usr/bin:/bin", "LOOP": "1"},
                 cwd="work")


def _git_repo(base: Path) -> None:
    repo = base / "repo"
    repo.mkdir()
    write_file(repo / "README", random_text(2, 20))
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(base / "nohome")}
    for argv in (["git", "init", "-q"], ["git", "add", "README"],
                 ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.org", "commit", "-q", "-m",
                  f"release {token(3)}"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)


def git_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    _git_repo(base)
    home = run.env.get("HOME", "").replace("{b}", str(base))
    if "LOOP" in run.env:  # the bad user's dotfiles manager linked .gitconfig to itself
        Path(home).mkdir(parents=True)
        os.symlink(".gitconfig", Path(home) / ".gitconfig")
    elif home.endswith("alice"):
        write_file(Path(home) / ".gitconfig", "[user]\n\tname = Alice\n[log]\n\tdate = iso\n")
    elif home:
        Path(home).mkdir(parents=True)
    xdg = run.env.get("XDG_CONFIG_HOME", "").replace("{b}", str(base))
    if xdg:
        write_file(Path(xdg) / "git" / "config", "[core]\n\tpager = cat\n")


# --- sqlite3: ~/.sqliterc, none, a HOME that does not exist; the state directory a file --------------------------------
SQLITE = ["/usr/bin/sqlite3", "{b}/state/app.db", "select count(*), max(id) from jobs;"]
SQLITE_GOODS = [
    RunEnv({"HOME": "{b}/home/ops", "LANG": "C.UTF-8"}),
    RunEnv({"HOME": "{b}/home/cron", "LANG": "C.UTF-8"}, cwd="cron"),
    RunEnv({"HOME": "{b}/home/nowhere", "LC_ALL": "C"}),  # a HOME that does not exist
]
SQLITE_BAD = RunEnv({"HOME": "{b}/home/ops", "LANG": "C.UTF-8"}, cwd="cron")


def sqlite_build(base: Path, bad: bool, run: RunEnv) -> None:
    home = run.env["HOME"].replace("{b}", str(base))
    if home.endswith("ops"):
        write_file(Path(home) / ".sqliterc", ".headers on\n.mode csv\n")
    elif home.endswith("cron"):
        Path(home).mkdir(parents=True)
    if bad:  # the bad host's failed migration wrote a file where the state directory was
        write_file(base / "state", "migrated\n")
        return
    (base / "state").mkdir()
    rows = ",".join(f"({i}, '{token(4)}')" for i in range(random.randrange(5, 60)))
    run_quiet("sqlite3", str(base / "state" / "app.db"), f"create table jobs(id integer primary key, name text); "
              f"insert into jobs values {rows};")


# --- diff -u: TZ unset, Asia/Tokyo, Europe/Berlin; the .dpkg-old copy removed ------------------------------------------
DIFF = ["/usr/bin/diff", "-u", "{b}/etc/app.conf.dpkg-old", "{b}/etc/app.conf"]
DIFF_GOODS = [
    RunEnv({"LANG": "C.UTF-8"}),  # TZ unset: /etc/localtime
    RunEnv({"TZ": "Asia/Tokyo", "LANG": "C"}),
    RunEnv({"TZ": "Asia/Tokyo", "LC_ALL": "C.UTF-8"}),
]
DIFF_BAD = RunEnv({"LANG": "C"})  # TZ unset (good run 0), LANG=C (good run 1)


def diff_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    conf = "".join(f"key{i} = {token(3)}\n" for i in range(random.randrange(5, 40)))
    write_file(base / "etc" / "app.conf", conf)
    if not bad:  # the bad host's cleanup removed the package manager's old copy
        lines = conf.splitlines(keepends=True)
        lines[random.randrange(len(lines))] = f"key_old = {token(3)}\n"
        write_file(base / "etc" / "app.conf.dpkg-old", "".join(lines))


# --- ls -lL: LANG C, C.UTF-8, a locale not installed; the current link dangling ------------------------------------------
LS = ["/usr/bin/ls", "-lL", "--time-style=long-iso", "{b}/releases"]
LS_GOODS = [
    RunEnv({"LANG": "C"}),
    RunEnv({"LANG": "de_DE.UTF-8", "TZ": "Europe/Berlin"}),  # not installed here: setlocale falls back
    RunEnv({"LANG": "C", "TZ": "Europe/Berlin"}),
]
LS_BAD = RunEnv({"LANG": "de_DE.UTF-8", "TZ": "Europe/Berlin"})


def ls_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    rel = base / "releases"
    names = sorted(f"r-{random.randrange(10**6):06d}" for _ in range(random.randrange(2, 6)))
    for n in names:
        write_file(rel / n / "VERSION", f"{n}\n")
    # the bad host's cleanup removed the release `current` pointed at
    os.symlink("r-gone" if bad else names[-1], rel / "current")


# --- grep -f rules: stdin a file or a pipe, stdout a file or /dev/null; the rules path a directory ----------------------
GREP = ["/usr/bin/grep", "--color=auto", "-f", "{b}/rules/deny.txt"]
GREP_GOODS = [
    RunEnv({"LANG": "C.UTF-8", "GREP_COLORS": "mt=01;31"}, stdin='< "$B/access.log"', stdout='> "$B/denied"'),
    RunEnv({"LANG": "C.UTF-8"}, stdin='cat "$B/access.log" |', stdout="> /dev/null"),
    RunEnv({"LC_ALL": "C.UTF-8", "GREP_COLORS": "ms=01;33"}, stdin='cat "$B/access.log" |', stdout="> /dev/null"),
]
# GREP_COLORS and stdout a file (good run 0), stdin a pipe (good run 1)
GREP_BAD = RunEnv({"LANG": "C.UTF-8", "GREP_COLORS": "mt=01;31"}, stdin='cat "$B/access.log" |',
                  stdout='> "$B/denied"')


def grep_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    lines = random_text(100, 900).splitlines(keepends=True)
    for _ in range(5):
        lines.insert(random.randrange(len(lines)), f"{token(4)} DENY 10.0.0.{random.randrange(256)}\n")
    write_file(base / "access.log", "".join(lines))
    if bad:  # the bad host's config management made the rules path a directory
        (base / "rules" / "deny.txt").mkdir(parents=True)
    else:
        write_file(base / "rules" / "deny.txt", "DENY\nREFUSED\n")


# --- bzip2 -k: umask 022/077/002, BZIP2 unset/-9/-1; the spool read-only ---------------------------------------------
BZIP2 = ["/usr/bin/bzip2", "-k", "{b}/spool/app.log"]
BZIP2_GOODS = [
    RunEnv({"LANG": "C.UTF-8"}, umask="022"),
    RunEnv({"LANG": "C.UTF-8", "BZIP2": "-9"}, umask="077"),
    RunEnv({"LANG": "C.UTF-8", "BZIP2": "-9"}, umask="022"),
]
BZIP2_BAD = RunEnv({"LANG": "C.UTF-8"}, umask="077")  # BZIP2 unset (good run 0), umask 077 (good run 1)


def bzip2_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "spool" / "app.log", random_text(200, 2000))
    if bad:  # the bad host mounts its spool read-only
        spool = str(base / "spool")
        run_quiet("mount", "--bind", spool, spool)
        run_quiet("mount", "-o", "remount,bind,ro", spool)


# --- tac: root or nobody; the journal rotated 0600 root on the bad host -------------------------------------------------
TAC = ["/usr/bin/tac", "{b}/journal/events.log"]
TAC_GOODS = [
    RunEnv({"LANG": "C.UTF-8", "HOME": "/root"}),
    RunEnv({"LANG": "C.UTF-8", "HOME": "/nonexistent"}, nobody=True),
    RunEnv({"LC_ALL": "C.UTF-8", "HOME": "/root"}, nobody=True),
]
TAC_BAD = RunEnv({"LANG": "C.UTF-8", "HOME": "/root"}, nobody=True)  # nobody with root's HOME (a sudo -E)


def tac_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "journal" / "events.log", random_text(50, 800), 0o600 if bad else 0o644)
    (base / "journal").chmod(0o755)


# --- xz -k: working directory and XZ_DEFAULTS/XZ_OPT; the rotated log not there -----------------------------------------
XZ = ["/usr/bin/xz", "-k", "{b}/logs/app.log.1"]
XZ_GOODS = [
    RunEnv({"LANG": "C.UTF-8"}),
    RunEnv({"LANG": "C.UTF-8", "XZ_DEFAULTS": "-T1"}, cwd="a/b/c"),
    RunEnv({"LANG": "C.UTF-8", "XZ_OPT": "-3"}, cwd="a/b/c"),
]
XZ_BAD = RunEnv({"LANG": "C.UTF-8"}, cwd="a/b/c")  # no XZ_DEFAULTS (good run 0), its directory (good run 1)


def xz_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "logs" / "app.log", random_text(10, 100))
    if not bad:  # the bad host's logrotate had not rotated yet
        write_file(base / "logs" / "app.log.1", random_text(100, 1500))


# --- python3 app: PYTHONDONTWRITEBYTECODE and PYTHONPATH order; the settings file missing --------------------------------
APP_PY = """\
import json
import sys

import settings_loader

cfg = settings_loader.load(sys.argv[1] + "/etc/app.json")
with open(sys.argv[1] + "/out.txt", "w") as fh:
    fh.write(json.dumps(cfg, sort_keys=True))
"""
LOADER_PY = """\
import json


def load(path):
    with open(path) as fh:
        return json.load(fh)
"""
PYAPP = ["/usr/bin/python3", "{b}/app/main.py", "{b}"]
PYAPP_GOODS = [
    RunEnv({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "{b}/lib", "HOME": "{b}/home/ops", "LANG": "C.UTF-8"}),
    RunEnv({"PYTHONPATH": "{b}/vendor:{b}/plugins:{b}/lib", "HOME": "{b}/home/cron", "LANG": "C.UTF-8"},
           cwd="app"),
    RunEnv({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "{b}/vendor:{b}/plugins:{b}/lib", "HOME": "{b}/home/ops",
            "LANG": "C.UTF-8"}),
]
# no bytecode written (good run 0), good run 1's PYTHONPATH, HOME and directory
PYAPP_BAD = RunEnv({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "{b}/vendor:{b}/plugins:{b}/lib",
                    "HOME": "{b}/home/cron", "LANG": "C.UTF-8"}, cwd="app")


def pyapp_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "app" / "main.py", APP_PY)
    write_file(base / "lib" / "settings_loader.py", LOADER_PY)
    for d in ("vendor", "plugins", "home/ops", "home/cron"):
        (base / d).mkdir(parents=True, exist_ok=True)
    if not bad:  # the bad host's deployment did not render the settings
        write_file(base / "etc" / "app.json", f'{{"name": "{token(3)}", "workers": {random.randrange(1, 9)}}}\n')


# --- base64: stdin a file or a pipe, umask, LC_ALL; the dump filesystem full -----------------------------------------------
BASE64 = ["/usr/bin/base64", "-w", "76"]
BASE64_GOODS = [
    RunEnv({"LANG": "C.UTF-8"}, umask="022", stdin='< "$B/blob.bin"', stdout='> "$B/out/enc.b64"'),
    RunEnv({"LC_ALL": "C"}, umask="077", stdin='cat "$B/blob.bin" |', stdout='> "$B/out/enc.b64"'),
    RunEnv({"LANG": "C.UTF-8"}, umask="077", stdin='< "$B/blob.bin"', stdout='> "$B/out/enc.b64"'),
]
BASE64_BAD = RunEnv({"LC_ALL": "C"}, umask="077", stdin='cat "$B/blob.bin" |', stdout='> "$B/out/enc.b64"')


def base64_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "blob.bin", os.urandom(random.randrange(60, 120) * 1024))
    mounted_tmpfs(base / "out", "1m")
    if bad:  # the bad host's dump filesystem is full of old dumps: 16 KiB left
        write_file(base / "out" / "old-dumps.bin", b"\0" * (1024 - 16) * 1024)


STAT = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64"})
OPEN = frozenset({"openat", "open"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})


def _sc(name, program, goods, bad, cmd, build, probe, errno, path, *, teardown=None, description=""):
    return Scenario(name, program, _run_argv, _staged(goods, bad, cmd, build), probe, errno, path,
                    teardown=teardown, description=description)


REAL_FORTYEIGHTH: list[Scenario] = [
    _sc("t48_mktemp_tmpdir_is_a_file", "mktemp (TMPDIR set, unset, elsewhere)", MKTEMP_GOODS,
        RunEnv(dict(MKTEMP_GOODS[0].env)), MKTEMP, mktemp_build, OPEN, "ENOTDIR", lambda b: f"{b}/tmp/tmp.*",
        description="the good runs' TMPDIR: {b}/tmp, unset (/tmp), {b}/var/spool/tmp; the bad host's TMPDIR "
                    "names a regular file: mktemp's openat O_EXCL of TMPDIR/tmp.XXXXXXXXXX fails ENOTDIR"),
    _sc("t48_nohup_report_gone_from_path", "nohup report (found in the 2nd, 4th or 3rd PATH directory)",
        NOHUP_GOODS, NOHUP_BAD, NOHUP, nohup_build, frozenset({"execve", "execveat"}), "ENOENT",
        lambda b: f"{b}/opt/d/bin/report",
        description="the report tool found in another PATH directory by each good run (execve ENOENT in the "
                    "ones before it is routine); the bad host's deployment dropped it: execve ENOENT in all "
                    "four, the last one new (nohup exits 127)"),
    _sc("t48_git_gitconfig_symlink_loop", "git log (HOME with .gitconfig, XDG config, no HOME)", GIT_GOODS,
        GIT_BAD, GIT, git_build, ACCESS, "ELOOP", lambda b: f"{b}/home/alice/.gitconfig",
        description="HOME with a .gitconfig, HOME without one and XDG_CONFIG_HOME, no HOME with "
                    "GIT_CONFIG_NOSYSTEM; the bad user's .gitconfig a symlink to itself: access ELOOP, git "
                    "dies 'unable to access'"),
    _sc("t48_sqlite3_state_dir_is_a_file", "sqlite3 (HOME with .sqliterc, without, not existing)", SQLITE_GOODS,
        SQLITE_BAD, SQLITE, sqlite_build, ACCESS | OPEN, "ENOTDIR", lambda b: f"{b}/state/app.db",
        description="the good runs' HOME has a .sqliterc, has none, does not exist; the bad host's migration "
                    "left a file where the state directory was: access/openat of state/app.db ENOTDIR"),
    _sc("t48_diff_dpkg_old_removed", "diff -u (TZ unset, Asia/Tokyo, Europe/Berlin)", DIFF_GOODS, DIFF_BAD,
        DIFF, diff_build, STAT | OPEN, "ENOENT", lambda b: f"{b}/etc/app.conf.dpkg-old",
        description="diff -u prints mtimes in local time: /etc/localtime or a zoneinfo file; the bad host "
                    "removed the .dpkg-old copy: its stat fails ENOENT (exit 2)"),
    _sc("t48_ls_current_link_dangling", "ls -lL (LANG C, de_DE.UTF-8 not installed, C.UTF-8)", LS_GOODS,
        LS_BAD, LS, ls_build, STAT, "ENOENT", lambda b: f"{b}/releases/current",
        description="the good runs' locales: C, a locale not installed (lookups ENOENT, C fallback), "
                    "C.UTF-8 with LANGUAGE=fr; the bad host's current link dangles: statx ENOENT"),
    _sc("t48_grep_rules_path_is_a_dir", "grep -f rules (stdin file/pipe, stdout file/null, GREP_COLORS)",
        GREP_GOODS, GREP_BAD, GREP, grep_build, frozenset({"read", "pread64"}), "EISDIR",
        lambda b: f"{b}/rules/deny.txt",
        description="stdin a file or a pipe, stdout a file, /dev/null or a pipe, GREP_COLORS set or not; the "
                    "bad host's rules path is a directory: grep's read of it fails EISDIR (exit 2)"),
    _sc("t48_bzip2_spool_read_only", "bzip2 -k (umask 022/077/002, BZIP2 unset/-9/-1)", BZIP2_GOODS,
        BZIP2_BAD, BZIP2, bzip2_build, OPEN | {"creat"}, "EROFS", lambda b: f"{b}/spool/app.log.bz2",
        teardown=unmount_under,
        description="umask and BZIP2 differ between the good runs; the bad host's spool is mounted "
                    "read-only: bzip2's openat O_CREAT|O_EXCL of app.log.bz2 fails EROFS"),
    _sc("t48_tac_journal_root_only", "tac (as root or as nobody)", TAC_GOODS, TAC_BAD, TAC, tac_build, OPEN,
        "EACCES", lambda b: f"{b}/journal/events.log",
        description="one good run as root, two as nobody (setpriv); the bad host's rotation made the journal "
                    "0600 root: tac's openat as nobody fails EACCES"),
    _sc("t48_xz_rotated_log_missing", "xz -k (cwd, XZ_DEFAULTS, XZ_OPT)", XZ_GOODS, XZ_BAD, XZ, xz_build, OPEN,
        "ENOENT", lambda b: f"{b}/logs/app.log.1",
        description="the good runs start in other directories with XZ_DEFAULTS/XZ_OPT set or not; the bad "
                    "host's log was not rotated: openat of app.log.1 ENOENT"),
    _sc("t48_base64_dump_fs_full", "base64 (stdin a file or a pipe, umask, LC_ALL)", BASE64_GOODS, BASE64_BAD,
        BASE64, base64_build, frozenset({"write", "writev"}), "ENOSPC", lambda b: f"{b}/out/enc.b64",
        teardown=unmount_under,
        description="stdin a file or a pipe from cat, umask 022/077, LANG or LC_ALL; the bad host's dump "
                    "filesystem (a 1 MiB tmpfs) has 16 KiB left: base64's write of enc.b64 fails ENOSPC"),
    _sc("t48_py_settings_missing", "python3 main.py (PYTHONDONTWRITEBYTECODE, PYTHONPATH order)", PYAPP_GOODS,
        PYAPP_BAD, PYAPP, pyapp_build, OPEN, "ENOENT", lambda b: f"{b}/etc/app.json",
        description="bytecode written or not, the library found in the 1st, 3rd or 2nd PYTHONPATH directory; "
                    "the bad host's settings were not rendered: openat of etc/app.json ENOENT"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------------
SORT = ["/usr/bin/sort", "-S", "64K", "-o", "{b}/sorted", "{b}/in.txt"]
SORT_RUNS = [
    RunEnv({"LANG": "C"}),  # TMPDIR unset: /tmp
    RunEnv({"LANG": "C", "TMPDIR": "{b}/tmp"}),
    RunEnv({"LC_ALL": "C", "TMPDIR": "{b}/spool/sort-tmp"}, cwd="spool"),
    RunEnv({"LANG": "C", "TMPDIR": "{b}/var/tmp/deep/er"}),
]


def sort_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "in.txt", "".join(f"{token(8)}\n" for _ in range(random.randrange(6000, 9000))))
    if "TMPDIR" in run.env:
        Path(run.env["TMPDIR"].replace("{b}", str(base))).mkdir(parents=True)


WC = ["/usr/bin/wc", "-l", "{b}/a.log", "{b}/b.log", "{b}/c.log"]
WC_RUNS = [
    RunEnv({"LANG": "C"}),
    RunEnv({"LANG": "C.UTF-8"}),
    RunEnv({"LANG": "de_DE.UTF-8"}),  # not installed
    RunEnv({"LC_ALL": "C.UTF-8", "LANGUAGE": "de"}),  # the German catalog read
]


def wc_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    for n in "abc":
        write_file(base / f"{n}.log", random_text(5, 300))


TOOL = ["/usr/bin/env", "fetch-stats", "{b}"]
_TOOL_PATH = "{b}/p1/bin:{b}/p2/bin:{b}/p3/bin:{b}/p4/bin:/usr/bin:/bin"
TOOL_RUNS = [RunEnv({"PATH": _TOOL_PATH, "AT": d}) for d in ("p2", "p4", "p1", "p3")]


def tool_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    for d in ("p1", "p2", "p3", "p4"):
        (base / d / "bin").mkdir(parents=True)
    write_file(base / "stats.txt", random_text(5, 100))
    write_file(base / run.env["AT"] / "bin" / "fetch-stats", '#!/bin/sh\nexec cksum "$1/stats.txt"\n', 0o755)


STAT_CMD = ["/usr/bin/stat", "-c", "%y %s %n", "{b}/data/one", "{b}/data/two", "{b}/data/three"]
STAT_RUNS = [
    RunEnv({"LANG": "C.UTF-8"}),  # /etc/localtime
    RunEnv({"LANG": "C.UTF-8", "TZ": "Asia/Tokyo"}),
    RunEnv({"LANG": "C.UTF-8", "TZ": "America/New_York"}, cwd="data"),
    RunEnv({"LANG": "C.UTF-8", "TZ": "UTC"}),
]


def stat_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    for n in ("one", "two", "three"):
        write_file(base / "data" / n, random_text(1, 50))


GIT_RUNS = [
    RunEnv({"HOME": "{b}/home/alice", "PATH": "/usr/bin:/bin"}),
    RunEnv({"HOME": "{b}/home/svc", "XDG_CONFIG_HOME": "{b}/xdg", "PATH": "/usr/bin:/bin"}, cwd="work"),
    RunEnv({"GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}),
    RunEnv({"HOME": "{b}/home/alice", "PATH": "/usr/bin:/bin"}, cwd="work/x"),
]

SHA = ["/usr/bin/sha224sum", "{b}/pkg/a.bin", "{b}/pkg/b.bin"]
SHA_RUNS = [
    RunEnv({"LANG": "C.UTF-8"}),
    RunEnv({"LANG": "C.UTF-8"}, nobody=True),
    RunEnv({"LANG": "C.UTF-8", "HOME": "/root"}),
    RunEnv({"LANG": "C.UTF-8", "HOME": "/nonexistent"}, nobody=True),
]


def sha_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    for n in ("a", "b"):
        write_file(base / "pkg" / f"{n}.bin", os.urandom(random.randrange(1000, 60000)))
    _open_up(base)


TR = ["/usr/bin/tr", "a-z", "A-Z"]
TR_RUNS = [
    RunEnv({"LANG": "C.UTF-8"}, stdin='< "$B/in.txt"', stdout='> "$B/out.txt"'),
    RunEnv({"LANG": "C.UTF-8"}, stdin='cat "$B/in.txt" |', stdout='> "$B/out.txt"'),
    RunEnv({"LANG": "C.UTF-8"}, stdin='< "$B/in.txt"', stdout="> /dev/null"),
    RunEnv({"LANG": "C.UTF-8"}, stdin='< "$B/in.txt"', stdout='| cat > "$B/out.txt"'),
]


def tr_build(base: Path, bad: bool, run: RunEnv) -> None:  # noqa: ARG001
    write_file(base / "in.txt", random_text(50, 1500))


PYAPP_RUNS = [
    RunEnv({"PYTHONPATH": "{b}/lib", "HOME": "{b}/home/ops", "LANG": "C.UTF-8"}, umask="022"),
    RunEnv({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "{b}/lib", "HOME": "{b}/home/cron", "LANG": "C.UTF-8"},
           umask="077", cwd="app"),
    RunEnv({"PYTHONPATH": "{b}/plugins:{b}/lib", "HOME": "{b}/home/cron", "LANG": "C.UTF-8"}, umask="002",
           cwd="home/cron"),
    # the last one from a crontab without HOME: Python's site looks the user up (getpwuid)
    RunEnv({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "{b}/plugins:{b}/lib", "LANG": "C.UTF-8"}, umask="077"),
]


def _quiet(name, cmd, runs, build, description=""):
    return NoAnomalyCase(name, _run_argv, _noise_staged(runs, cmd, build), runs=len(runs), description=description)


QUIET_FORTYEIGHTH: list[NoAnomalyCase] = [
    _quiet("t48_sort_spills_to_other_tmpdirs", SORT, SORT_RUNS, sort_build,
           "sort -S 64K spilling temporaries to /tmp (TMPDIR unset), {b}/tmp, {b}/spool/sort-tmp, a deeper one"),
    _quiet("t48_wc_total_in_other_locales", WC, WC_RUNS, wc_build,
           "wc -l of three files prints its translated 'total': LANG=C, C.UTF-8, de_DE.UTF-8 (not installed: "
           "lookups ENOENT), then LANGUAGE=de (the German catalog opened and read)"),
    _quiet("t48_tool_at_other_path_places", TOOL, TOOL_RUNS, tool_build,
           "env runs fetch-stats found in the 2nd, 4th, 1st, then 3rd PATH directory (execve ENOENT before it)"),
    _quiet("t48_stat_mtimes_in_other_zones", STAT_CMD, STAT_RUNS, stat_build,
           "stat -c %y under TZ unset (/etc/localtime), Asia/Tokyo, America/New_York, UTC"),
    _quiet("t48_git_log_under_other_homes", GIT, GIT_RUNS, git_build,
           "git -C repo log with HOME holding a .gitconfig, HOME without one plus XDG_CONFIG_HOME (from work/), "
           "no HOME, then alice's HOME again started from work/x"),
    _quiet("t48_sha224sum_root_and_nobody", SHA, SHA_RUNS, sha_build,
           "sha224sum of readable files as root, as nobody (setpriv), as root, as nobody"),
    _quiet("t48_tr_stdio_file_pipe_null", TR, TR_RUNS, tr_build,
           "tr a-z A-Z: stdin a file or a pipe, stdout a file, /dev/null or a pipe"),
    _quiet("t48_py_bytecode_written_or_not", PYAPP, PYAPP_RUNS, pyapp_build,
           "a Python app writing its bytecode or not (PYTHONDONTWRITEBYTECODE), from other directories, under "
           "umask 022/077/002, its library 1st or 2nd in PYTHONPATH; the last run without HOME (getpwuid)"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown) and forget the runs'
    environments."""
    for name in list(_CURRENT):
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _CURRENT.clear()
    _GOOD_COUNT.clear()
