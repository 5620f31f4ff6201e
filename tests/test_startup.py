"""The console scripts' own process settings (tracer.startup): numpy loaded with one OpenBLAS
thread, a user's value kept, and a recorded command given the environment the user gave us."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.startup import BLAS_THREADS, own_default, single_threaded_blas

REPO = Path(__file__).resolve().parents[1]


def python(code: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip()


def without_blas_setting() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in (BLAS_THREADS, "OMP_NUM_THREADS")}


def test_the_users_value_wins():
    env = {BLAS_THREADS: "4"}
    single_threaded_blas(env)
    assert env == {BLAS_THREADS: "4"}
    env = {}
    single_threaded_blas(env)
    own_default("ARROW_DEFAULT_MEMORY_POOL", "system", env)
    assert env == {BLAS_THREADS: "1", "ARROW_DEFAULT_MEMORY_POOL": "system"}


COUNT_THREADS = """
import os
from tracer.startup import single_threaded_blas
if os.environ.get("SETTLE") == "1":
    single_threaded_blas()
before = len(os.listdir("/proc/self/task"))
import numpy
print(before, len(os.listdir("/proc/self/task")))
"""


def test_numpy_starts_no_blas_thread_after_the_setting():
    env = without_blas_setting()
    before, after = map(int, python(COUNT_THREADS, {**env, "SETTLE": "1"}).split())
    assert after == before, f"numpy's import started {after - before} threads"
    # the reference: without the setting, OpenBLAS starts a thread per further CPU (capped by
    # its build), so what the setting saves is visible wherever there is a second CPU
    before, after = map(int, python(COUNT_THREADS, {**env, "SETTLE": "0"}).split())
    if len(os.sched_getaffinity(0)) > 1:
        assert after > before, "OpenBLAS started no thread of its own: the reference is gone"


USERS_ENV = """
import os
from tracer.startup import own_default, single_threaded_blas, users_environment
single_threaded_blas()
own_default("ARROW_DEFAULT_MEMORY_POOL", "system")
os.environ["KEPT"] = "yes"
env = users_environment()
print(os.environ["OPENBLAS_NUM_THREADS"], os.environ["ARROW_DEFAULT_MEMORY_POOL"],
      env.get("OPENBLAS_NUM_THREADS"), env.get("ARROW_DEFAULT_MEMORY_POOL"), env["KEPT"])
"""


def test_a_started_command_gets_the_environment_without_our_settings():
    env = {k: v for k, v in without_blas_setting().items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert python(USERS_ENV, env).split() == ["1", "system", "None", "None", "yes"]
    # a value the user gave is theirs: kept for the command too
    given = {**env, BLAS_THREADS: "1", "ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    assert python(USERS_ENV, given).split() == ["1", "jemalloc", "1", "jemalloc", "yes"]


@pytest.mark.parametrize("given", [None, "3"])
def test_recorded_command_sees_the_users_blas_setting(need_bpf, tmp_path, given):
    env = without_blas_setting()
    if given is not None:
        env[BLAS_THREADS] = given
    done = subprocess.run(
        [sys.executable, "-m", "tracer.cli", "record", "-o", str(tmp_path / "run.parquet"), "--",
         "/bin/sh", "-c", 'echo "[${OPENBLAS_NUM_THREADS-unset}]"'],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"[{given or 'unset'}]"


def test_openblas_settings_of_the_user_in_any_name_win():
    for name in ("GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        env = {name: "2"}
        single_threaded_blas(env)
        assert env == {name: "2"}


NO_PANDAS = """
import sys
from tracer.startup import without_pandas
without_pandas()
without_pandas()  # once is enough: the finder is not stacked
import polars as pl, pyarrow as pa, numpy as np
pa.array(np.arange(3)); pa.array(["a", None]); pl.DataFrame({"a": [1, 2]}).to_arrow()
try:
    import pandas
except ModuleNotFoundError as exc:
    print("refused:", exc)
print("pandas" in sys.modules, sum(type(f).__name__ == "NoPandas" for f in sys.meta_path))
"""


def test_pyarrow_and_polars_work_with_pandas_refused():
    pytest.importorskip("pandas", reason="the refusal matters where pandas is installed")
    lines = python(NO_PANDAS, dict(os.environ)).splitlines()
    assert lines == ["refused: pandas is not loaded by tracebase's commands (tracer.startup)", "False 1"]


AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("pandas loaded:", "pandas" in sys.modules, "| numpy loaded:", "numpy" in sys.modules))
sys.argv = ["baseline", *sys.argv[1:]]
from baseline.cli import entry
entry()
"""


def test_a_command_that_writes_tables_loads_no_pandas(tmp_path):
    """The console script (`entry`): a simulated fleet written through pyarrow and polars, pandas
    never loaded although installed here (~0.3 s of CPU and ~30 MiB a command)."""
    pytest.importorskip("pandas", reason="the refusal matters where pandas is installed")
    done = subprocess.run([sys.executable, "-c", AT_EXIT, "simulate", "--hosts", "2", "--hours", "0.1", "--seed", "3",
                           "--out", str(tmp_path / "fleet")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "pandas loaded: False | numpy loaded: True"
