"""Test-wide setup.

Airflow reads its environment at import time, so AIRFLOW_HOME and friends are set here at
module top level, before any test imports airflow (see shared/reference/airflow-testing.md).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="tracebase-airflow-")
# One Airflow home (its sqlite database) per test process: pytest-xdist's workers inherit the
# controller's environment, and two workers running `initdb` on one database race ("table team
# already exists") whenever a module's tests are spread over workers (`-n 2` without loadscope).
# A home the user set before pytest started is kept.
if os.environ.get("AIRFLOW_HOME") in (None, os.environ.get("TRACEBASE_TEST_AIRFLOW_HOME")):
    os.environ["AIRFLOW_HOME"] = os.environ["TRACEBASE_TEST_AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(REPO / "dags"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")



def tmp_nobody_reaches() -> Path:
    """A temporary directory whose every ancestor any user may enter, for files a test reads as
    nobody. $TMPDIR first; a private one (libpam-tmpdir's /tmp/user/0, a runner's 0700 scratch
    directory) is no place for them, so then /tmp or /var/tmp."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        path = Path(candidate)
        if path.is_dir() and all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents)):
            return path
    pytest.fail(f"no temporary directory an unprivileged user can enter: {tempfile.gettempdir()}, /tmp and "
                "/var/tmp each have an ancestor without o+x")

@functools.cache
def _tools_blocked_for_nobody() -> str | None:
    """Why nobody (uid 65534) cannot run this checkout's tools, or None: a checkout cloned under
    umask 077 (its directories and .venv 0700) keeps every other user out."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None  # (such tests skip for these reasons themselves)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                           "import baseline.cli, tracer.cli"], cwd="/", capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return None
    why = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
    return (f"other users cannot run this checkout's tools ({why}): the checkout or its .venv is not readable "
            "by them (cloned under umask 077?); tests that run them as nobody cannot run here")


def tools_run_as_nobody() -> None:
    """Skip the calling test, saying why, when nobody cannot run this checkout's tools."""
    reason = _tools_blocked_for_nobody()
    if reason is not None:
        pytest.skip(reason)


def bpf_unavailable_reason() -> str | None:
    """Why real BPF tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root to load BPF programs (run the suite as root)"
    from tracer.errors import EnvironmentProblem
    from tracer.privilege import load_bcc

    try:
        load_bcc()
    except EnvironmentProblem as exc:
        return str(exc)
    build = Path("/lib/modules") / os.uname().release / "build"
    if not (build / "include").exists():
        return f"kernel headers missing at {build} (scripts/setup.sh links them)"
    from tracer.privilege import ensure_tracefs

    try:
        ensure_tracefs()  # a fresh machine has no tracefs; the entry points mount it the same way
    except EnvironmentProblem as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def need_bpf() -> None:
    reason = bpf_unavailable_reason()
    if reason:
        print(f"SKIP (BPF): {reason}", file=sys.stderr)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def recorder(need_bpf):
    """The syscall recorder, compiled and loaded once per test process."""
    from scenarios.harness import shared_recorder

    return shared_recorder()


@pytest.fixture(scope="session")
def generated_fleet(tmp_path_factory):
    """`generated_fleet(package, generate, root, **shape)`: the fleet `generate(path, **shape)`
    writes, copied into `root` (which must not exist yet); returns the generator's summary.

    A generator is run once per session per (package, shape) and its output kept read-only
    aside, so modules that audit the same fleet (tests/test_fleetgen4.py and
    tests/test_audit_memory.py) pay for it once (about 3.5 s of CPU each). Still built on
    demand: whichever module asks first builds it, and each gets a copy of its own to write
    audit output into, so no test depends on another having run."""
    import copy
    import json

    built: dict[str, tuple[Path, dict]] = {}

    def get(package: str, generate, root: Path, **shape) -> dict:
        key = json.dumps([package, shape], sort_keys=True)
        if key not in built:
            source = tmp_path_factory.mktemp(f"{package}-generated")
            built[key] = (source, generate(source, **shape))
        source, summary = built[key]
        shutil.copytree(source, root, symlinks=True)
        return copy.deepcopy(summary)  # a module changing its summary leaves the next one's alone

    return get


@pytest.fixture(scope="session")
def need_cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (apt-get install gcc)")
    return cc


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


# The machine's basic device nodes, checked around every test: as root, a writer renaming a temp
# file over an output path, or a cleanup unlinking one, would replace or remove the node for every
# program on the machine (/dev/zero went missing once, mid-suite; later tests then failed far from
# the cause). A test that damages one fails, naming the node; the node is recreated so the rest of
# the suite runs on a sound machine.
_DEVICE_NODES = {"/dev/null": (1, 3), "/dev/zero": (1, 5), "/dev/full": (1, 7), "/dev/urandom": (1, 9)}


def _damaged_device_nodes() -> list[str]:
    import stat

    damaged = []
    for path, (major, minor) in _DEVICE_NODES.items():
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            damaged.append(f"{path} removed")
            continue
        if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (major, minor):
            damaged.append(f"{path} replaced (mode {stat.filemode(st.st_mode)})")
    return damaged


def _restore_device_nodes() -> None:
    import stat

    for path, (major, minor) in _DEVICE_NODES.items():
        try:
            st = os.lstat(path)
            if stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (major, minor):
                continue
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(path, 0o666)  # mknod's mode goes through the umask


@pytest.fixture(autouse=True)
def _device_nodes_intact():
    broken_before = _damaged_device_nodes()
    yield
    broken = [d for d in _damaged_device_nodes() if d not in broken_before]
    if broken:
        if os.geteuid() == 0:
            _restore_device_nodes()
        pytest.fail(f"this test damaged the machine's device nodes: {', '.join(broken)}", pytrace=False)


# Process settings a test's in-process DAG parse makes (dags/ call configure_task_process at
# parse time, as an Airflow task process does), put back after the test: the worker's later
# subprocesses would take OpenBLAS's one thread or the allocator setting for the user's own.
_PROCESS_SETTINGS = ("_RJEM_MALLOC_CONF", "OPENBLAS_NUM_THREADS")
_PROCESS_SETTINGS_AT_START = {name: os.environ.get(name) for name in _PROCESS_SETTINGS}


@pytest.fixture(autouse=True)
def _process_settings_restored():
    yield
    for name, value in _PROCESS_SETTINGS_AT_START.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# Signal handlers a test leaves behind, restored after it: Airflow's dag.test() installs a SIGTERM
# handler that only sets a flag (and SIGALRM timeouts) and never puts them back, so every later
# test ran with them. A multiprocessing pool forked after that could not be terminated: its
# worker caught SIGTERM and went back to waiting, and the pool's join hung the suite.
_RESTORED_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGUSR1", "SIGUSR2")


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in (getattr(signal, n) for n in _RESTORED_SIGNALS)}
    yield
    for sig, handler in before.items():
        if signal.getsignal(sig) is handler or handler is None:  # None: set from C, not restorable
            continue
        if sig == signal.SIGALRM:
            signal.setitimer(signal.ITIMER_REAL, 0)  # a timeout left armed would fire into the default
        signal.signal(sig, handler)


# The modules that take longest (minutes each, measured with --durations), run first: under
# pytest-xdist (`make test`) a worker that picks one of them up last finishes alone while the
# other workers idle. Only the order changes; every module still builds what it needs itself.
_LONGEST_MODULES = ("test_help_examples.py", "test_fleet_daemon.py", "test_bad_inputs.py",
                    "test_unprivileged.py", "test_dags.py", "test_fleetgen6.py", "test_fleetgen11.py",
                    "test_fleetgen10.py", "test_kill_tracer.py", "test_packaging.py")


def pytest_collection_modifyitems(session, config, items):  # noqa: ARG001
    rank = {name: i for i, name in enumerate(_LONGEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
