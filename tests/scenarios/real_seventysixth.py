"""A seventy-sixth set of real programs: **configuration layers and their precedence** -- programs
that look for their configuration in several places in a fixed order (a built-in default, an
/etc-like file, ``$XDG_CONFIG_HOME`` or ``~/.config``, a ``~/.dotfile``, an environment variable
naming a file, a file in the project directory) and what goes wrong there: a layer that is a
symlink loop, an env var naming a path under a regular file, an explicitly named options file
in a symlink cycle, an env var naming a directory, a layer unreadable for the user, a config that names a log
directory that is not there or a trace file on a read-only file system. Every run gets a home of
its own under the case's directory (``HOME=BASE/home``), so nothing touches /root.

Fault cases (``REAL_SEVENTYSIXTH``): three good runs and the bad run; ``extra`` holds the comm of
the process (or thread) strace shows failing (``comm``), and ``worker`` when that is not the
process's main thread. What ``strace -f`` showed each bad run doing, written down before the tool
was run (OpenSSH 9.2p1, GNU Wget 1.21.3, GnuPG 2.2.40, npm 11.19.1 on node 20 / libuv 1.46, pip
23.0.1 on python 3.11, GDB 13.1, curl 7.88):

- ``ssh -G -F BASE/ssh/config db`` (``Include BASE/ssh/conf.d/*.conf`` first), conf.d/20-site.conf
  a symlink to itself: glob's ``newfstatat(.., AT_SYMLINK_NOFOLLOW) = 0`` of both matches,
  ``openat(AT_FDCWD, ".../conf.d/10-db.conf", O_RDONLY) = 4`` (read), then ``openat(AT_FDCWD,
  ".../conf.d/20-site.conf", O_RDONLY) = -1 ELOOP``; "Can't open user config file ...: Too many
  levels of symbolic links", "terminating, 1 bad configuration options", exit 255;
- ``env HOME=BASE/home WGETRC=BASE/etc/wget/wgetrc wget -V``, BASE/etc/wget a regular file (the
  layer's directory replaced by a file): ``newfstatat(AT_FDCWD, ".../etc/wget/wgetrc", ..., 0) = -1
  ENOTDIR``, then "wget: WGETRC points to ..., which couldn't be accessed because of error: Not a
  directory." and exit 1 (no open of it is tried);
- ``env GNUPGHOME=BASE/gnupg gpg --batch --options BASE/gnupg/site.conf --list-keys``, site.conf a
  symlink to profiles/active.conf (in the good runs a regular file) that an operator pointed back at
  ../site.conf (a two-link cycle): ``openat(AT_FDCWD, ".../gnupg/site.conf", O_RDONLY) = -1
  ELOOP``, "option file '...': Too many levels of symbolic links", exit 2 (strace of a self-link:
  the same). (A missing --options file, ENOENT, is set 77's gpg fault, so not used here);
- ``env -C BASE/proj HOME=BASE/home NPM_CONFIG_USERCONFIG=BASE/etc/npmrc npm config get registry``,
  BASE/etc/npmrc a directory: a libuv threadpool thread (comm ``npm``: node's main thread renames
  itself ``npm`` -- ``prctl(PR_SET_NAME, "npm")`` -- before the pool threads are cloned)
  ``openat(AT_FDCWD, ".../etc/npmrc", O_RDONLY|O_CLOEXEC) = 18``, ``read(18, ..., 65536) = -1
  EISDIR``; npm passes over the layer and prints the default registry, exit 0 (the user layer's
  registry lost silently);
- ``env HOME=BASE/home PIP_CONFIG_FILE=BASE/etc/pip.conf python3 -m pip config list`` as nobody,
  BASE/etc/pip.conf root's 0600: ``newfstatat`` of it ``= 0`` twice, ``openat(AT_FDCWD,
  ".../etc/pip.conf", O_RDONLY|O_CLOEXEC) = -1 EACCES``, then /etc/xdg/pip/pip.conf and
  /etc/pip.conf read; configparser passes over the unreadable layer, exit 0 (its settings lost);
- ``env HOME=BASE/home gdb -batch -ex 'print 6*7'``, ~/.gdbinit setting ``logging file
  BASE/logs/gdb.txt`` and ``logging enabled on``, BASE/logs missing: gdb probes
  ~/.config/gdb/gdbinit (ENOENT), finds ~/.gdbinit, sources it, ``openat(AT_FDCWD,
  ".../logs/gdb.txt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = -1 ENOENT``, ".gdbinit:3: Error
  in sourced command file: set logging: No such file or directory.", ``$1 = 42``, exit 0;
- ``env HOME=BASE/home XDG_CONFIG_HOME=BASE/xdg curl -sS -o BASE/out/data.txt file://BASE/data.txt``,
  BASE/xdg/.curlrc saying ``trace-ascii = "BASE/trace/curl.trace"``, BASE/trace a read-only tmpfs:
  ``openat(AT_FDCWD, ".../xdg/.curlrc", O_RDONLY) = 3`` (read), the data file opened, then
  ``openat(AT_FDCWD, ".../trace/curl.trace", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EROFS``; curl
  falls back to tracing on stderr, exit 0.

Noise cases (``QUIET_SEVENTYSIXTH``): five good runs each, every run diffed against the other four;
what varies between the runs is WHICH of two optional layers exist (or which path an env var makes
the program probe): layer A in runs 0, 2, 4, layer B in runs 0, 1, 4 -- so whichever run is held
out, the state of each of its layers (found and read, or probed and absent: stat/open ENOENT) is
also in one of the other four good runs, and the absent layers' ENOENT probes are errors the good
runs show (docs/diff-json.md: never anomalies). (A first draft gave each run a layout of its own;
held out, a run's ENOENT at a path the other four found is an outcome change by the docs' own
rule, so that draft's expectation was wrong, not the tool.) strace -f of the runs:

- git config --list in a repository: A ``XDG_CONFIG_HOME`` set (``access(".../xdg/git/config",
  R_OK) = 0``, read) or unset (``access(".../home/.config/git/config", R_OK) = -1 ENOENT``); B
  ~/.gitconfig present (read) or absent (``access ENOENT``);
- ssh -G: A ``Include conf.d/*.conf`` matching two files (both opened, read) or conf.d absent
  (``openat(".../conf.d/", O_DIRECTORY) = -1 ENOENT``); B ``Include local.conf`` present or absent;
- wget -V: A ``SYSTEM_WGETRC`` naming a file or unset (the default /etc/wgetrc read); B ~/.wgetrc
  present or absent (``newfstatat ENOENT``);
- curl of a file:// URL, ``CURL_HOME`` set in every run to a directory without a .curlrc
  (``openat(".../curlhome/.curlrc") = -1 ENOENT``, the search goes on to HOME): A ~/.curlrc present
  (read, the search stops) or absent (ENOENT, then ``.../curlhome/.config/curlrc`` and the passwd
  home's ~/.curlrc probed, ENOENT); one layer only, as which files curl probes after HOME depends on
  whether HOME had one (a first draft also varied CURL_HOME: its ``.config/curlrc`` probe was then
  made by one run alone, a novelty by the docs, so that draft's expectation was wrong);
- pip config list: A ~/.config/pip/pip.conf present or absent, B the legacy ~/.pip/pip.conf present
  or absent (each ``newfstatat``, opened when there); a first draft varied ``PIP_CONFIG_FILE`` as
  one layer, but pip skips the user layers when that file exists, so one run alone read the user
  file -- a novelty, that draft's expectation was wrong;
- npm config get registry in a project: A the project's .npmrc present or absent; B ~/.npmrc
  present or absent (``openat ENOENT`` on a pool thread);
- gpg --batch --list-keys in GNUPGHOME: A gpg.conf present or absent; B common.conf present or
  absent.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from .files import write_file
from .harness import NoAnomalyCase, Scenario, unmount_under

SSH = "/usr/bin/ssh"
WGET = "/usr/bin/wget"
GPG = "/usr/bin/gpg"
NPM = "/usr/bin/npm"
PY3 = "/usr/bin/python3"
GDB = "/usr/bin/gdb"
CURL = "/usr/bin/curl"
GIT = "/usr/bin/git"
ENV = "/usr/bin/env"
NOBODY_UID = 65534

OPENS = frozenset({"openat", "open", "creat", "openat2"})
READS = frozenset({"read", "pread64", "readv"})
STATS = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64", "access", "faccessat", "faccessat2"})
RUNS = 5  # noise cases: each run against the other four
# npm in every run: no debug log file named by the time of day, no update check
NPM_QUIET = ("npm_config_logs_max=0", "npm_config_update_notifier=false")


def _ro_tmpfs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0755", "tmpfs", str(path)], check=True)


# --- fault cases -------------------------------------------------------------------------------------------------------
def _ssh_setup(base: Path, bad: bool) -> None:
    write_file(base / "ssh" / "config", f"Include {base}/ssh/conf.d/*.conf\nHost *\n    User deploy\n")
    write_file(base / "ssh" / "conf.d" / "10-db.conf", "Host db\n    Port 2222\n    HostName db.internal\n")
    if bad:
        (base / "ssh" / "conf.d" / "20-site.conf").symlink_to("20-site.conf")
    else:
        write_file(base / "ssh" / "conf.d" / "20-site.conf", "Host *\n    ServerAliveInterval 30\n")


def _wget_setup(base: Path, bad: bool) -> None:
    (base / "home").mkdir()
    if bad:
        write_file(base / "etc" / "wget", "tries = 2\n")  # a file where the layer's directory belongs
    else:
        write_file(base / "etc" / "wget" / "wgetrc", "tries = 2\ntimeout = 10\n")


def _gpg_home(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _gpg_setup(base: Path, bad: bool) -> None:
    home = _gpg_home(base / "gnupg")
    (home / "site.conf").symlink_to("profiles/active.conf")
    if bad:  # the active profile pointed back at the layer: a two-link cycle
        (home / "profiles").mkdir()
        (home / "profiles" / "active.conf").symlink_to("../site.conf")
    else:
        write_file(home / "profiles" / "active.conf", "keyid-format long\nwith-fingerprint\n", 0o600)


def _npm_setup(base: Path, bad: bool) -> None:
    write_file(base / "proj" / "package.json", '{"name": "t76proj", "version": "1.0.0"}\n')
    (base / "home").mkdir()
    if bad:
        (base / "etc" / "npmrc").mkdir(parents=True)
    else:
        write_file(base / "etc" / "npmrc", "registry=http://127.0.0.1:4873/\n")


def _pip_setup(base: Path, bad: bool) -> None:
    home = base / "home"
    home.mkdir()
    os.chown(home, NOBODY_UID, NOBODY_UID)
    write_file(base / "etc" / "pip.conf", "[global]\ntimeout = 7\nindex-url = http://127.0.0.1:3141/simple\n",
               0o600 if bad else 0o644)


GDBINIT = "set logging file {b}/logs/gdb.txt\nset logging overwrite on\nset logging enabled on\n"


def _gdb_setup(base: Path, bad: bool) -> None:
    write_file(base / "home" / ".gdbinit", GDBINIT.format(b=base))
    if not bad:
        (base / "logs").mkdir()


def _curl_setup(base: Path, bad: bool) -> None:
    (base / "home").mkdir()
    write_file(base / "data.txt", "".join(f"record {k:03d}\n" for k in range(50)))
    write_file(base / "xdg" / ".curlrc", f'trace-ascii = "{base}/trace/curl.trace"\n')
    (base / "out").mkdir()
    if bad:
        _ro_tmpfs(base / "trace")
    else:
        (base / "trace").mkdir()


def _teardown(base: Path | None = None) -> None:
    if base is not None and base.exists():
        unmount_under(base)


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=_teardown,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTYSIXTH: list[Scenario] = [
    _sc("t76_ssh_include_glob_matches_a_symlink_loop", "ssh (-G -F, an Include conf.d/*.conf layer)",
        lambda b: [SSH, "-G", "-F", f"{b}/ssh/config", "db"], _ssh_setup, OPENS, "ELOOP",
        lambda b: f"{b}/ssh/conf.d/20-site.conf", comm="ssh",
        description="a config layer the Include glob matches is a symlink to itself: its open fails ELOOP, exit 255"),
    _sc("t76_wget_wgetrc_env_names_a_path_under_a_file", "wget (-V, WGETRC naming the user layer)",
        lambda b: [ENV, f"HOME={b}/home", f"WGETRC={b}/etc/wget/wgetrc", WGET, "-V"], _wget_setup, STATS,
        "ENOTDIR", lambda b: f"{b}/etc/wget/wgetrc", comm="wget",
        description="WGETRC names a file under a path component that is a regular file: stat ENOTDIR, exit 1"),
    _sc("t76_gpg_options_layer_symlink_cycle", "gpg (--options naming a layer, GNUPGHOME)",
        lambda b: [ENV, f"HOME={b}/home", f"GNUPGHOME={b}/gnupg", GPG, "--batch", "--options",
                   f"{b}/gnupg/site.conf", "--list-keys"], _gpg_setup, OPENS, "ELOOP",
        lambda b: f"{b}/gnupg/site.conf", comm="gpg",
        description="the options file is a symlink to a profile that links back to it: open ELOOP, exit 2"),
    _sc("t76_npm_userconfig_env_names_a_directory", "npm (config get, NPM_CONFIG_USERCONFIG)",
        lambda b: [ENV, "-C", f"{b}/proj", f"HOME={b}/home", f"NPM_CONFIG_USERCONFIG={b}/etc/npmrc", *NPM_QUIET,
                   NPM, "config", "get", "registry"], _npm_setup, READS, "EISDIR", lambda b: f"{b}/etc/npmrc",
        comm="npm", worker=True,
        description="the user layer named by the env var is a directory: a libuv pool thread's read fails EISDIR"),
    _sc("t76_pip_config_file_env_names_an_unreadable_file", "pip (python3 -m pip config list; as nobody)",
        lambda b: [ENV, f"HOME={b}/home", f"PIP_CONFIG_FILE={b}/etc/pip.conf", PY3, "-m", "pip", "config", "list"],
        _pip_setup, OPENS, "EACCES", lambda b: f"{b}/etc/pip.conf", unprivileged=True, comm="python3",
        description="PIP_CONFIG_FILE names root's 0600 file: the open fails EACCES, pip passes over the layer"),
    _sc("t76_gdb_gdbinit_names_a_missing_log_directory", "gdb (-batch, ~/.gdbinit naming a log file)",
        lambda b: [ENV, f"HOME={b}/home", GDB, "-batch", "-ex", "print 6*7"], _gdb_setup, OPENS, "ENOENT",
        lambda b: f"{b}/logs/gdb.txt", comm="gdb",
        description="the home layer's gdbinit turns logging on into a directory that is missing: create ENOENT"),
    _sc("t76_curl_xdg_curlrc_trace_file_on_readonly_fs", "curl (file://, $XDG_CONFIG_HOME/.curlrc)",
        lambda b: [ENV, f"HOME={b}/home", f"XDG_CONFIG_HOME={b}/xdg", CURL, "-sS", "-o", f"{b}/out/data.txt",
                   f"file://{b}/data.txt"], _curl_setup, OPENS, "EROFS", lambda b: f"{b}/trace/curl.trace",
        comm="curl",
        description="the XDG layer's .curlrc names a trace file on a read-only tmpfs: its create fails EROFS"),
]


# --- good runs that differ in which optional layers exist --------------------------------------------------------------
def _env_file(base: Path, **env: str) -> None:
    """BASE/env.sh: the run's environment (sourced under `set -a` by the case's shell line)."""
    env.setdefault("HOME", f"{base}/home")
    write_file(base / "env.sh", "".join(f"{k}='{v}'\n" for k, v in env.items()))


def _layered(cmd: str) -> Callable[[Path], list[str]]:
    """argv(base): `sh -c 'set -a; . BASE/env.sh; exec CMD'` -- one line in every run, the env file varies."""
    return lambda b: ["/bin/sh", "-c", f'set -a; . "$1/env.sh"; {cmd}', "sh", str(b)]


# Two layers per case, each present in some runs and absent in others: A in runs 0, 2, 4 and B in runs 0, 1, 4,
# so whichever run is held out, each of its layers' states (found, or probed and absent) is in another good run too.
A = (True, False, True, False, True)
B = (True, True, False, False, True)


def _git_quiet(base: Path, run: int) -> None:
    home = base / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([GIT, "init", "-q", str(base / "repo")], check=True, env=env, capture_output=True)
    subprocess.run([GIT, "-C", str(base / "repo"), "config", "t76.layer", "local"], check=True, env=env)
    if B[run]:
        write_file(home / ".gitconfig", "[user]\n\tname = T76 User\n\temail = t76@example.invalid\n")
    if A[run]:  # XDG_CONFIG_HOME set, its git/config there; else ~/.config/git/config probed, absent
        write_file(base / "xdg" / "git" / "config", "[core]\n\tpager = cat\n")
        _env_file(base, XDG_CONFIG_HOME=f"{base}/xdg")
    else:
        _env_file(base)


def _ssh_quiet(base: Path, run: int) -> None:
    write_file(base / "ssh" / "config", f"Include {base}/ssh/conf.d/*.conf\nInclude {base}/ssh/local.conf\n"
                                        "Host *\n    User deploy\n")
    if A[run]:  # conf.d with two layers; else no conf.d at all (the glob matches nothing)
        for k in range(2):
            write_file(base / "ssh" / "conf.d" / f"{k}0-layer.conf", f"Host db{k}\n    Port {2200 + k}\n")
    if B[run]:
        write_file(base / "ssh" / "local.conf", "Host *\n    ConnectTimeout 5\n")


def _wget_quiet(base: Path, run: int) -> None:
    (base / "home").mkdir()
    if B[run]:
        write_file(base / "home" / ".wgetrc", "tries = 2\ntimeout = 10\n")
    if A[run]:  # the /etc layer moved by SYSTEM_WGETRC; else the default /etc/wgetrc
        write_file(base / "etc" / "system.wgetrc", "passive_ftp = on\n")
        _env_file(base, SYSTEM_WGETRC=f"{base}/etc/system.wgetrc")
    else:
        _env_file(base)


def _curl_quiet(base: Path, run: int) -> None:
    (base / "home").mkdir()
    (base / "out").mkdir()
    (base / "curlhome").mkdir()  # CURL_HOME set in every run, a directory without a .curlrc: probed, the search goes on
    write_file(base / "data.txt", "".join(f"record {k:03d}\n" for k in range(50 + run)))
    if A[run]:
        write_file(base / "home" / ".curlrc", 'user-agent = "t76-fetch"\nshow-error\n')
    _env_file(base, CURL_HOME=f"{base}/curlhome")


def _pip_quiet(base: Path, run: int) -> None:
    home = base / "home"
    home.mkdir()
    if A[run]:
        write_file(home / ".config" / "pip" / "pip.conf", "[global]\ntimeout = 7\n")
    if B[run]:
        write_file(home / ".pip" / "pip.conf", "[install]\nno-compile = true\n")
    _env_file(base)


def _npm_quiet(base: Path, run: int) -> None:
    write_file(base / "proj" / "package.json", '{"name": "t76proj", "version": "1.0.0"}\n')
    home = base / "home"
    home.mkdir()
    if A[run]:
        write_file(base / "proj" / ".npmrc", "registry=http://127.0.0.1:4873/\n")
    if B[run]:
        write_file(home / ".npmrc", "fund=false\n")
    _env_file(base, **dict(kv.split("=", 1) for kv in NPM_QUIET))


def _gpg_quiet(base: Path, run: int) -> None:
    (base / "home").mkdir()
    gh = _gpg_home(base / "gnupg")
    if A[run]:
        write_file(gh / "gpg.conf", "keyid-format long\n", 0o600)
    if B[run]:
        write_file(gh / "common.conf", "# the common layer\n", 0o600)
    _env_file(base, GNUPGHOME=str(gh))


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYSIXTH: list[NoAnomalyCase] = [
    _noise("t76_git_xdg_and_home_gitconfig_present_or_absent", _layered(f'exec {GIT} -C "$1/repo" config --list'),
           _git_quiet, "git config --list: XDG_CONFIG_HOME's git/config or none; ~/.gitconfig or none"),
    _noise("t76_ssh_include_globs_match_two_layers_or_none", lambda b: [SSH, "-G", "-F", f"{b}/ssh/config", "db"],
           _ssh_quiet, "ssh -G: Include conf.d/*.conf matching two files or nothing, an optional local.conf"),
    _noise("t76_wget_system_rc_by_env_or_default_home_rc_or_none", _layered(f"exec {WGET} -V"), _wget_quiet,
           "wget -V: SYSTEM_WGETRC naming a file or the default /etc/wgetrc; ~/.wgetrc or none"),
    _noise("t76_curl_curlrc_in_home_or_nowhere_curl_home_empty",
           _layered(f'exec {CURL} -sS -o "$1/out/data.txt" "file://$1/data.txt"'), _curl_quiet,
           "curl: CURL_HOME naming a directory without a .curlrc (the search goes on), ~/.curlrc or none"),
    _noise("t76_pip_xdg_and_legacy_user_files_present_or_absent",
           _layered(f"exec {PY3} -m pip config list"), _pip_quiet,
           "pip config list: ~/.config/pip/pip.conf or none; the legacy ~/.pip/pip.conf or none"),
    _noise("t76_npm_project_and_user_npmrc_present_or_absent",
           _layered(f'cd "$1/proj" && exec {NPM} config get registry'), _npm_quiet,
           "npm config get: a project .npmrc or none; ~/.npmrc or none"),
    _noise("t76_gpg_conf_and_common_conf_present_or_absent", _layered(f"exec {GPG} --batch --list-keys"),
           _gpg_quiet, "gpg --list-keys in GNUPGHOME: gpg.conf or none; common.conf or none"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the read-only mount goes with the case's directory (the harness unmounts it before it
    removes it); gpg starts no agent for --list-keys (strace: no connect, no clone)."""
