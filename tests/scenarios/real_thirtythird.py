"""A thirty-third set of real programs with one real fault each: **a job's Python environment
setup step, offline** -- what a training job's launcher does before the job itself runs, with
Debian's /usr/bin/python3 and nothing from the network:

- **environments**: ``python3 -m venv --without-pip --upgrade`` of an environment an earlier
  root-run step made (as the job), ``python3 -m venv --clear`` of an environment with a stale
  package in it (as the job), a launcher (``sh``) exec'ing the environment's ``bin/python3``, a
  console script of an environment found on ``PATH`` (``sh``);
- **installers**: ``python3 -m pip --isolated install --no-index --find-links wheels --target``
  of a small wheel the case writes by hand (as the job), ``env/bin/python3 -m pip install
  --no-index`` into a ``--system-site-packages`` environment (as the job), ``pip install -r`` of
  local wheel paths, ``python3 -m zipfile -e`` unpacking a wheel into a site directory by hand
  (as the job);
- **byte-compilers and packers**: ``python3 -m compileall -q`` of a package tree,
  ``python3 -m py_compile`` under ``PYTHONPYCACHEPREFIX``, ``python3 -m zipapp -p -m`` of an
  application, ``python3 -m tarfile -c`` of an sdist tree;
- **start-up of the environment**: a venv's python reading a ``.pth`` file in its site-packages
  (as the job), a launcher reading ``importlib.metadata`` entry points of its installed
  distributions (as the job).

Faults (``t33_`` cases): an environment's pyvenv.cfg left root:0644 by a root-run setup (venv
--upgrade's openat EACCES), a stale package directory a root-run pip left in the environment
(venv --clear's unlinkat EACCES), an environment whose python3 link names an interpreter that was
removed (sh's execve ENOENT), an environment moved after it was built, its console script's
shebang naming the old place (sh's execve ENOENT), a wheel copied into the wheelhouse root:0600
(pip's openat EACCES), an environment's site-packages recreated root:0755 (pip's access EACCES), a
dependency's wheel the build step never made (pip's stat ENOENT), a subpackage whose
__pycache__ a stray copy made a file (compileall's openat ENOTDIR), a cache prefix remounted
read-only (py_compile's mkdir EROFS), an application module linked to a shared checkout that was
removed (zipapp's stat ENOENT), a dist-info directory a root-run install left (zipfile's openat
EACCES), a dist directory a cleanup removed (tarfile's openat ENOENT), a .pth restored root:0600
(site's openat EACCES), a dist-info directory made root:0700 (importlib.metadata's openat EACCES
of entry_points.txt).

Good runs vary naturally: a random build id in the sources and the wheels (so .pyc and archive
contents differ), random session tokens, pip's random temporary directories, pyc timestamps, pids.
Noise cases (``QUIET_THIRTYTHIRD``) are good runs alone: venvs in mktemp directories, a pip
install of a wheel whose contents change every run, compileall of sources written in a random
order, py_compile under a mktemp cache prefix, a zipapp built and run, zipfile and tarfile round
trips, a console script of an environment with a random name, a launcher reading entry points and
a .pth of a random version.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import subprocess
import zipfile
from pathlib import Path

from .catalog import mount_tmpfs, umount
from .files import shell_argv, token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario
from .real import own

OPEN = frozenset({"openat", "open", "openat2", "creat"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
MKDIR = frozenset({"mkdir", "mkdirat"})
UNLINK = frozenset({"unlink", "unlinkat", "rmdir"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
EXEC = frozenset({"execve", "execveat"})
PY3 = "/usr/bin/python3"
NOBODY_UID = 65534
SITE = "lib/python3.11/site-packages"
WHEEL_NAME = "tinyjob-0.1-py3-none-any.whl"
DIST_INFO = "tinyjob-0.1.dist-info"
UTIL_WHEEL = "tinyutil-0.2-py3-none-any.whl"
SETUP_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
PIP = ["-m", "pip", "--isolated", "install", "--no-cache-dir", "--no-index", "--disable-pip-version-check"]


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


# --- a small distribution, written by hand -------------------------------------------------------
def _dist_files(name: str = "tinyjob", version: str = "0.1") -> dict[str, str]:
    """The files of a tiny distribution: a package, its entry point and its metadata. Each build
    has a random build id in the package, as a real build's version stamp would."""
    build = token(4)
    info = f"{name}-{version}.dist-info"
    return {
        f"{name}/__init__.py": f'"""A tiny training job."""\nBUILD = "{build}"\n',
        f"{name}/train.py": ("import sys\nfrom . import BUILD\n\n\ndef main(argv=None):\n"
                             "    print('training with build', BUILD)\n    return 0\n\n\n"
                             "if __name__ == '__main__':\n    sys.exit(main())\n"),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: a tiny job\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[tracebase.jobs]\ntrain = {name}.train:main\n\n"
                                    f"[console_scripts]\n{name}-train = {name}.train:main\n",
        f"{info}/top_level.txt": f"{name}\n",
    }


def _record(files: dict[str, str], info: str) -> str:
    lines = []
    for arc, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{arc},sha256={digest},{len(text.encode())}\n")
    return "".join(lines) + f"{info}/RECORD,,\n"


def _make_wheel(path: Path, name: str = "tinyjob", version: str = "0.1") -> Path:
    files = _dist_files(name, version)
    info = f"{name}-{version}.dist-info"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, text in files.items():
            zf.writestr(arc, text)
        zf.writestr(f"{info}/RECORD", _record(files, info))
    path.chmod(0o644)
    return path


def _install_by_hand(site: Path, name: str = "tinyjob", version: str = "0.1") -> None:
    """What pip leaves in site-packages, without pip: the package, its dist-info, INSTALLER."""
    files = _dist_files(name, version)
    info = f"{name}-{version}.dist-info"
    files[f"{info}/INSTALLER"] = "pip\n"
    for arc, text in files.items():
        write_file(site / arc, text)
    write_file(site / info / "RECORD", _record(files, info))


def _venv(env: Path, *flags: str) -> Path:
    subprocess.run([PY3, "-m", "venv", "--without-pip", *flags, str(env)], check=True, env=SETUP_ENV,
                   capture_output=True)
    return env


# --- python3 -m venv --upgrade, as the job: pyvenv.cfg left by a root-run setup -------------------
def _venv_upgrade_argv(b: Path) -> list[str]:
    return [PY3, "-m", "venv", "--without-pip", "--upgrade", f"{b}/env"]


def venv_upgrade_cfg_root(base: Path, bad: bool) -> None:
    env = _venv(base / "env")
    _install_by_hand(env / SITE)
    own(base / "env")
    if bad:  # the image's setup step ran as root and rewrote pyvenv.cfg after the hand-over
        os.chown(env / "pyvenv.cfg", 0, 0)


# --- python3 -m venv --clear, as the job: a stale package a root-run pip left --------------------------
def _venv_clear_argv(b: Path) -> list[str]:
    return [PY3, "-m", "venv", "--without-pip", "--clear", f"{b}/env"]


def venv_clear_stale_root(base: Path, bad: bool) -> None:
    env = _venv(base / "env")
    _install_by_hand(env / SITE)
    for mod in ("__init__.py", "loader.py", "augment.py"):
        write_file(env / SITE / "jobkit_old" / mod, f"# stale release {token(3)}\n")
    own(base / "env")
    if bad:  # a `sudo pip install` of the old release left its package root's
        os.chown(env / SITE / "jobkit_old", 0, 0)


# --- sh launcher: the environment's python3 names a removed interpreter ------------------------------------
LAUNCH_SH = 'cd "$1" && exec "$1/env/bin/python3" -m tinyjob.train --epochs 1'


def venv_python_link_dangles(base: Path, bad: bool) -> None:
    env = _venv(base / "env")
    _install_by_hand(env / SITE)
    if bad:  # the environment was made by a python3.11 under /opt that an upgrade removed
        (env / "bin" / "python3").unlink()
        os.symlink("/opt/python-3.11.4/bin/python3.11", env / "bin" / "python3")


# --- pip install --target, as the job: a wheel copied into the wheelhouse root:0600 ------------------------
def _pip_target_argv(b: Path) -> list[str]:
    return [PY3, *PIP, "--no-compile", "--find-links", f"{b}/wheels", "--target", f"{b}/site", "tinyjob"]


def pip_wheel_root_only(base: Path, bad: bool) -> None:
    wheel = _make_wheel(base / "wheels" / WHEEL_NAME)
    _dirs(base, "site")
    own(base / "wheels")
    own(base / "site")
    if bad:  # the wheel was copied in by root with a 0077 umask
        os.chown(wheel, 0, 0)
        wheel.chmod(0o600)


# --- env/bin/python3 -m pip install, as the job: site-packages recreated by root ---------------------------
def _pip_venv_argv(b: Path) -> list[str]:
    return [f"{b}/env/bin/python3", *PIP, "--no-compile", "--find-links", f"{b}/wheels", "tinyjob"]


def pip_venv_site_root(base: Path, bad: bool) -> None:
    env = _venv(base / "env", "--system-site-packages")  # the system's pip serves the environment
    _make_wheel(base / "wheels" / WHEEL_NAME)
    own(base / "env")
    own(base / "wheels")
    if bad:  # a root-run restore recreated site-packages root:0755
        os.chown(env / SITE, 0, 0)


# --- pip install -r of local wheel paths: the dependency's wheel missing from the wheelhouse -------------------
def _pip_requirements_argv(b: Path) -> list[str]:
    return [PY3, *PIP, "--no-deps", "--no-compile", "--target", f"{b}/site", "-r", f"{b}/requirements.txt"]


def pip_requirement_wheel_missing(base: Path, bad: bool) -> None:
    _make_wheel(base / "wheels" / WHEEL_NAME)
    if not bad:  # the bad host's build step built the job's wheel only, not its dependency's
        _make_wheel(base / "wheels" / UTIL_WHEEL, name="tinyutil", version="0.2")
    write_file(base / "requirements.txt", f"# job {token(3)}\n{base}/wheels/{WHEEL_NAME}\n{base}/wheels/{UTIL_WHEEL}\n")
    _dirs(base, "site")


# --- sh: a console script of a venv that was moved (its shebang names the old place) -------------------------
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from tinyjob.train import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
CONSOLE_SH = 'PATH="$1/envs/job/bin:$PATH" && cd "$1" && tinyjob-train --epochs 1'


def _venv_with_script(env: Path) -> None:
    _venv(env)
    _install_by_hand(env / SITE)
    write_file(env / "bin" / "tinyjob-train", CONSOLE_SCRIPT.format(python=env / "bin" / "python3"), 0o755)


def console_script_relocated_venv(base: Path, bad: bool) -> None:
    _dirs(base, "envs")
    if bad:  # the environment was built as envs/job-2024 and then moved into place: venvs do not move
        _venv_with_script(base / "envs" / "job-2024")
        (base / "envs" / "job-2024").rename(base / "envs" / "job")
    else:
        _venv_with_script(base / "envs" / "job")


# --- python3 -m compileall -q: a __pycache__ a stray copy made a file ---------------------------------------
def _compileall_argv(b: Path) -> list[str]:
    return [PY3, "-m", "compileall", "-q", f"{b}/pkg"]


def _job_sources(base: Path, order: list[str] | None = None) -> None:
    names = order or ["jobkit/__init__.py", "jobkit/model.py", "jobkit/data/__init__.py", "jobkit/data/loader.py",
                      "jobkit/data/augment.py", "jobkit/utils.py"]
    build = token(4)
    for n in names:
        write_file(base / "pkg" / n, f'"""{n}."""\nBUILD = "{build}"\n\n\ndef f(x):\n    return x * 2 + {len(n)}\n')


def compileall_pycache_is_file(base: Path, bad: bool) -> None:
    _job_sources(base)
    if bad:  # `cp -r` of a colleague's tree copied a __pycache__ symlink's target as a file
        write_file(base / "pkg" / "jobkit" / "data" / "__pycache__", "stale\n")


# --- python3 -m py_compile under PYTHONPYCACHEPREFIX: the cache remounted read-only ---------------------------
def _py_compile_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", f"PYTHONPYCACHEPREFIX={b}/cache", PY3, "-m", "py_compile", f"{b}/src/job.py",
            f"{b}/src/util.py"]


def py_compile_prefix_read_only(base: Path, bad: bool) -> None:
    build = token(4)
    write_file(base / "src" / "job.py", f'import util\nBUILD = "{build}"\nprint(util.double(21))\n')
    write_file(base / "src" / "util.py", f'BUILD = "{build}"\n\n\ndef double(x):\n    return 2 * x\n')
    mount_tmpfs(base / "cache", "16m", readonly=bad)  # the node's cache volume came back read-only


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


# --- python3 -m zipapp: a module linked to a shared checkout that was removed --------------------------------
def _zipapp_argv(b: Path) -> list[str]:
    return [PY3, "-m", "zipapp", f"{b}/app", "-o", f"{b}/dist/job.pyz", "-p", "/usr/bin/env python3",
            "-m", "jobapp.main:run"]


def zipapp_module_link_dangles(base: Path, bad: bool) -> None:
    build = token(4)
    write_file(base / "app" / "jobapp" / "__init__.py", f'BUILD = "{build}"\n')
    write_file(base / "app" / "jobapp" / "main.py", "from . import shared\n\n\ndef run():\n    shared.hello()\n")
    _dirs(base, "dist")
    if not bad:  # the bad host's cleanup removed the shared checkout the module links to
        write_file(base / "checkout" / "shared.py", "def hello():\n    print('hello')\n")
    os.symlink("../../checkout/shared.py", base / "app" / "jobapp" / "shared.py")


# --- python3 -m zipfile -e, as the job: a dist-info directory a root-run install left --------------------------
def _zipfile_argv(b: Path) -> list[str]:
    return [PY3, "-m", "zipfile", "-e", f"{b}/wheels/{WHEEL_NAME}", f"{b}/site"]


def zipfile_dist_info_root(base: Path, bad: bool) -> None:
    _make_wheel(base / "wheels" / WHEEL_NAME)
    _dirs(base, "site")
    own(base / "site")
    if bad:  # an earlier `sudo pip install` left the dist-info directory (empty, root:0755)
        _dirs(base / "site", DIST_INFO)


# --- python3 -m tarfile -c: the dist directory a cleanup removed ---------------------------------------------
TAR_SH = 'cd "$1" && exec /usr/bin/python3 -m tarfile -c dist/tinyjob-0.1.tar.gz tinyjob-0.1'


def tarfile_dist_removed(base: Path, bad: bool) -> None:
    for arc, text in _dist_files().items():
        if not arc.startswith(DIST_INFO):
            write_file(base / "tinyjob-0.1" / arc, text)
    write_file(base / "tinyjob-0.1" / "PKG-INFO", "Metadata-Version: 2.1\nName: tinyjob\nVersion: 0.1\n")
    write_file(base / "tinyjob-0.1" / "pyproject.toml", '[project]\nname = "tinyjob"\nversion = "0.1"\n')
    if not bad:  # `git clean -fdx` removed dist/ between the build steps
        _dirs(base, "dist")


# --- a venv's python, as the job: a .pth restored root:0600 --------------------------------------------------
PTH_PY = "import jobvendor, sys; print(jobvendor.VERSION, sys.prefix)"


def _pth_argv(b: Path) -> list[str]:
    return [f"{b}/env/bin/python3", "-c", PTH_PY]


def pth_root_only(base: Path, bad: bool) -> None:
    env = _venv(base / "env")
    write_file(base / "vendor" / "jobvendor.py", f'VERSION = "{token(3)}"\n')
    pth = write_file(env / SITE / "jobvendor.pth", f"{base}/vendor\n")
    own(base / "env")
    own(base / "vendor")
    if bad:  # restored from the image's backup as root:0600
        os.chown(pth, 0, 0)
        pth.chmod(0o600)


# --- a launcher reading entry points, as the job: a dist-info directory made root:0700 -----------------------
LAUNCHER_PY = r"""import sys
from importlib.metadata import entry_points

jobs = {ep.name: ep for ep in entry_points(group="tracebase.jobs")}
if sys.argv[1] not in jobs:
    sys.exit(f"launch: no job {sys.argv[1]!r} (have {sorted(jobs)})")
sys.exit(jobs[sys.argv[1]].load()([]))
"""


def _launcher_argv(b: Path) -> list[str]:
    return [f"{b}/env/bin/python3", f"{b}/launch.py", "train"]


def entry_points_dist_info_root(base: Path, bad: bool) -> None:
    env = _venv(base / "env")
    _install_by_hand(env / SITE)
    write_file(base / "launch.py", LAUNCHER_PY)
    own(base / "env")
    if bad:  # a hardening script made the dist-info directory root:0700
        info = env / SITE / DIST_INFO
        for p in [info, *info.iterdir()]:
            os.chown(p, 0, 0)
        info.chmod(0o700)


REAL_THIRTYTHIRD: list[Scenario] = [
    Scenario("t33_venv_upgrade_cfg_root_owned", "python3 -m venv --without-pip --upgrade (as the job)",
             _venv_upgrade_argv, venv_upgrade_cfg_root, OPEN, "EACCES", lambda b: f"{b}/env/pyvenv.cfg",
             unprivileged=True,
             description="venv --upgrade of the job's environment, its pyvenv.cfg rewritten by a root-run "
                         "setup step"),
    Scenario("t33_venv_clear_stale_package_root", "python3 -m venv --without-pip --clear (as the job)",
             _venv_clear_argv, venv_clear_stale_root, UNLINK, "EACCES", lambda b: "*jobkit_old/*",
             unprivileged=True,
             description="venv --clear of an environment holding a stale package directory a sudo pip left"),
    Scenario("t33_launcher_venv_python_dangles", "sh (a launcher exec'ing the environment's python3)",
             lambda b: shell_argv(LAUNCH_SH, str(b)), venv_python_link_dangles, EXEC, "ENOENT",
             lambda b: f"{b}/env/bin/python3",
             description="a launcher exec'ing env/bin/python3, a link to an interpreter under /opt an "
                         "upgrade removed"),
    Scenario("t33_pip_target_wheel_root_only", "python3 -m pip install --no-index --target (as the job)",
             _pip_target_argv, pip_wheel_root_only, OPEN, "EACCES", lambda b: f"{b}/wheels/{WHEEL_NAME}",
             unprivileged=True,
             description="pip install --no-index --find-links of a hand-made wheel copied in root:0600"),
    Scenario("t33_pip_venv_site_packages_root", "python3 -m pip install --no-index (a venv's python, as the job)",
             _pip_venv_argv, pip_venv_site_root, ACCESS | OPEN | MKDIR, "EACCES",
             lambda b: f"{b}/env/{SITE}*", unprivileged=True,
             description="pip install into a --system-site-packages environment whose site-packages a restore "
                         "recreated root:0755"),
    Scenario("t33_pip_requirements_wheel_missing", "python3 -m pip install --no-index -r (local wheel paths)",
             _pip_requirements_argv, pip_requirement_wheel_missing, STAT | OPEN, "ENOENT",
             lambda b: f"{b}/wheels/{UTIL_WHEEL}",
             description="pip install -r of wheel paths, the dependency's wheel never built into the wheelhouse"),
    Scenario("t33_console_script_relocated_venv", "sh (a venv's console script found on PATH)",
             lambda b: shell_argv(CONSOLE_SH, str(b)), console_script_relocated_venv, EXEC, "ENOENT",
             lambda b: f"{b}/envs/job/bin/tinyjob-train",
             description="a console script of an environment moved after it was built: its shebang names the "
                         "old place"),
    Scenario("t33_compileall_pycache_is_file", "python3 -m compileall -q", _compileall_argv,
             compileall_pycache_is_file, OPEN | MKDIR, "ENOTDIR", lambda b: f"{b}/pkg/jobkit/data/__pycache__/*",
             description="compileall of a package tree, one subpackage's __pycache__ a file a stray copy made"),
    Scenario("t33_py_compile_prefix_read_only", "python3 -m py_compile (PYTHONPYCACHEPREFIX)", _py_compile_argv,
             py_compile_prefix_read_only, MKDIR | OPEN, "EROFS", lambda b: f"{b}/cache/*",
             teardown=_umounting("cache"),
             description="py_compile with a PYTHONPYCACHEPREFIX on a cache volume that came back read-only"),
    Scenario("t33_zipapp_module_link_dangles", "python3 -m zipapp -p -m", _zipapp_argv, zipapp_module_link_dangles,
             STAT, "ENOENT", lambda b: f"{b}/app/jobapp/shared.py",
             description="zipapp of an application whose module links to a shared checkout a cleanup removed "
                         "(zipapp leaves it out silently)"),
    Scenario("t33_zipfile_extract_dist_info_root", "python3 -m zipfile -e (a wheel unpacked by hand, as the job)",
             _zipfile_argv, zipfile_dist_info_root, OPEN, "EACCES", lambda b: f"{b}/site/{DIST_INFO}/*",
             unprivileged=True,
             description="a wheel unpacked into site/ by zipfile -e, its dist-info directory left by a root "
                         "install"),
    Scenario("t33_tarfile_sdist_dist_removed", "python3 -m tarfile -c (an sdist, after cd)",
             lambda b: shell_argv(TAR_SH, str(b)), tarfile_dist_removed, OPEN, "ENOENT",
             lambda b: "*dist/tinyjob-0.1.tar.gz",
             description="tarfile -c of an sdist tree into dist/, which a git clean removed"),
    Scenario("t33_venv_pth_root_only", "env/bin/python3 -c (site reads a .pth, as the job)", _pth_argv,
             pth_root_only, OPEN, "EACCES", lambda b: f"{b}/env/{SITE}/jobvendor.pth", unprivileged=True,
             description="a venv's python starting with a .pth in site-packages restored root:0600 (site "
                         "skips it silently, the import fails later)"),
    Scenario("t33_entry_points_dist_info_root", "env/bin/python3 launch.py (importlib.metadata entry points, "
             "as the job)", _launcher_argv, entry_points_dist_info_root, OPEN, "EACCES",
             lambda b: f"{b}/env/{SITE}/{DIST_INFO}/entry_points.txt", unprivileged=True,
             description="a launcher reading its jobs from entry points, the dist-info directory made "
                         "root:0700"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
VENV_NOISE_SH = r"""d=$(mktemp -d "$1/envs/job.XXXXXXXX") &&
/usr/bin/python3 -m venv --without-pip "$d" &&
"$d/bin/python3" -c 'import sys; print(sys.prefix != sys.base_prefix)' > "$1/out/in-venv" &&
rm -rf -- "$d"
"""


def _venv_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "envs", "out")


def _pip_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _make_wheel(base / "wheels" / WHEEL_NAME)  # a new build id inside every run
    _dirs(base, "site")


def _compileall_noise(base: Path, run: int) -> None:  # noqa: ARG001
    names = ["jobkit/__init__.py", "jobkit/model.py", "jobkit/data/__init__.py", "jobkit/data/loader.py",
             "jobkit/data/augment.py", "jobkit/utils.py"]
    random.shuffle(names)  # written in a different order each run: a different directory order
    _job_sources(base, names)


PY_COMPILE_NOISE_SH = r"""d=$(mktemp -d "$1/cache.XXXXXX") &&
PYTHONPYCACHEPREFIX="$d" /usr/bin/python3 -m py_compile "$1/src/job.py" "$1/src/util.py" &&
PYTHONPYCACHEPREFIX="$d" /usr/bin/python3 "$1/src/job.py" > "$1/out" && rm -rf -- "$d"
"""


def _py_compile_noise(base: Path, run: int) -> None:  # noqa: ARG001
    build = token(4)
    write_file(base / "src" / "job.py", f'import util\nBUILD = "{build}"\nprint(util.double(21))\n')
    write_file(base / "src" / "util.py", f'BUILD = "{build}"\n\n\ndef double(x):\n    return 2 * x\n')


ZIPAPP_NOISE_SH = r"""/usr/bin/python3 -m zipapp "$1/app" -o "$1/dist/job.pyz" -p "/usr/bin/env python3" -m jobapp.main:run &&
"$1/dist/job.pyz" > "$1/out"
"""


def _zipapp_noise(base: Path, run: int) -> None:  # noqa: ARG001
    zipapp_module_link_dangles(base, False)


ARCHIVE_NOISE_SH = r"""cd "$1" &&
/usr/bin/python3 -m zipfile -c "out/bundle-$2.zip" tinyjob-0.1 &&
/usr/bin/python3 -m zipfile -l "out/bundle-$2.zip" > out/zip-toc &&
/usr/bin/python3 -m tarfile -c "out/bundle-$2.tar.gz" tinyjob-0.1 &&
/usr/bin/python3 -m tarfile -l "out/bundle-$2.tar.gz" > out/tar-toc
"""


def _archive_noise(base: Path, run: int) -> None:  # noqa: ARG001
    tarfile_dist_removed(base, False)
    write_file(base / "session", token(4))
    _dirs(base, "out")


def _archive_argv(b: Path) -> list[str]:
    # the session id is read by the shell at run time (argv must not depend on the run's setup)
    return shell_argv('s=$(cat "$1/session") && set -- "$1" "$s" && ' + ARCHIVE_NOISE_SH, str(b))


def _entry_noise(base: Path, run: int) -> None:  # noqa: ARG001
    env = _venv(base / "env")
    version = f"0.1.{random.randrange(1, 10**6)}"  # a random version: the dist-info's name differs
    _install_by_hand(env / SITE, version=version)
    write_file(base / "vendor" / "jobvendor.py", f'VERSION = "{token(3)}"\n')
    write_file(env / SITE / "jobvendor.pth", f"{base}/vendor\n")
    write_file(base / "launch.py", "import jobvendor\n" + LAUNCHER_PY)


CONSOLE_NOISE_SH = 'for d in "$1"/envs/*/bin; do PATH="$d:$PATH"; done && cd "$1" && tinyjob-train --epochs 1'


def _console_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _venv_with_script(base / "envs" / f"job-{token(4)}")


QUIET_THIRTYTHIRD: list[NoAnomalyCase] = [
    NoAnomalyCase("t33_venv_mktemp_dirs", lambda b: shell_argv(VENV_NOISE_SH, str(b)), _venv_noise,
                  description="python3 -m venv --without-pip into a mktemp directory, its python run, removed"),
    NoAnomalyCase("t33_pip_target_rebuilt_wheel",
                  lambda b: [PY3, *PIP, "--find-links", f"{b}/wheels", "--target", f"{b}/site", "tinyjob"],
                  _pip_noise,
                  description="pip install --no-index --target of a wheel rebuilt every run (pip's random "
                              "temporary directories, byte-compiled files)"),
    NoAnomalyCase("t33_compileall_shuffled_sources", _compileall_argv, _compileall_noise,
                  description="compileall of sources written in a random order with a random build id"),
    NoAnomalyCase("t33_py_compile_mktemp_prefix", lambda b: shell_argv(PY_COMPILE_NOISE_SH, str(b)), _py_compile_noise,
                  description="py_compile and a run under a PYTHONPYCACHEPREFIX in a mktemp directory"),
    NoAnomalyCase("t33_zipapp_build_and_run", lambda b: shell_argv(ZIPAPP_NOISE_SH, str(b)), _zipapp_noise,
                  description="zipapp of an application with a random build id, then the archive run through "
                              "its shebang"),
    NoAnomalyCase("t33_zipfile_tarfile_roundtrip", _archive_argv, _archive_noise,
                  description="zipfile -c/-l and tarfile -c/-l of an sdist tree into archives named after a "
                              "random session"),
    NoAnomalyCase("t33_console_script_random_env", lambda b: shell_argv(CONSOLE_NOISE_SH, str(b)), _console_noise,
                  description="a console script found on PATH in an environment with a random name"),
    NoAnomalyCase("t33_launcher_entry_points_pth", _launcher_argv, _entry_noise,
                  description="a venv's launcher reading entry points of a distribution of a random version, "
                              "a .pth adding a vendor directory"),
]


def quiet_teardown() -> None:
    """Unmount what a failed case may have left: the cache volume of the py_compile case."""
    for sc in REAL_THIRTYTHIRD:
        if sc.teardown is not None:
            umount(ROOT / sc.name / "cache")


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
