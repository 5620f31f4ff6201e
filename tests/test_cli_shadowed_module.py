"""A module on PYTHONPATH (or in the current directory) that replaces an installed library and
fails is the environment's problem: one line naming the file and the module, exit 2, no crash
file -- not "internal error (a bug)" (battery 44's borderline note)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(args: list[str], tmp_path: Path, *, pythonpath: Path | None = None, cwd: Path | None = None,
         module: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("PYTHONPATH", None)
    env.pop("TRACEBASE_DEBUG", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "baseline.cli", *args] if module else [str(BIN / "baseline"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd or tmp_path, timeout=120)


def _assert_named(proc: subprocess.CompletedProcess, file: Path, module: str, tmp_path: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"baseline: error: {file}: module '{module}' was imported from there"), lines[0]
    assert "internal error" not in lines[0] and "Traceback" not in proc.stderr
    assert not list((tmp_path / "tmp").glob("baseline-crash-*")), "no crash file for the environment's fault"


@pytest.fixture
def traces() -> tuple[Path, Path]:
    """A real recording pair (c_rehash writing into a read-only certs directory)."""
    return REPO / "tests/recordings/c_rehash_readonly/good0.parquet", REPO / "tests/recordings/c_rehash_readonly/bad.parquet"


def test_a_yaml_on_pythonpath_that_raises_is_named(tmp_path: Path, traces: tuple[Path, Path]) -> None:
    shadow = tmp_path / "site"
    shadow.mkdir()
    (shadow / "yaml.py").write_text('raise RuntimeError("half-deployed yaml")\n')
    proc = _run(["diff", str(traces[0]), str(traces[1])], tmp_path, pythonpath=shadow)
    _assert_named(proc, shadow / "yaml.py", "yaml", tmp_path)
    assert "RuntimeError: half-deployed yaml" in proc.stderr


def test_a_polars_package_without_the_library_is_named(tmp_path: Path) -> None:
    shadow = tmp_path / "site"
    (shadow / "polars").mkdir(parents=True)
    (shadow / "polars" / "__init__.py").write_text("version = 'stub'\n")
    proc = _run(["simulate", "--hosts", "2", "--hours", "1", "-o", str(tmp_path / "sim")], tmp_path, pythonpath=shadow)
    _assert_named(proc, shadow / "polars" / "__init__.py", "polars", tmp_path)
    assert not (tmp_path / "sim").exists() or not any((tmp_path / "sim").iterdir())


def test_a_module_in_the_current_directory_under_python_m_is_named(tmp_path: Path, traces: tuple[Path, Path]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "yaml.py").write_text("import nonexistent_dependency_of_a_local_yaml\n")
    # `python -m baseline.cli` from another directory: the checkout on PYTHONPATH is not the shadow
    proc = _run(["diff", str(traces[0]), str(traces[1])], tmp_path, cwd=work, module=True, pythonpath=REPO)
    _assert_named(proc, work / "yaml.py", "yaml", tmp_path)
    assert "ModuleNotFoundError" in proc.stderr


def test_the_same_tools_without_the_shadow_work(tmp_path: Path, traces: tuple[Path, Path]) -> None:
    unrelated = tmp_path / "site"
    unrelated.mkdir()
    (unrelated / "helpers_of_the_user.py").write_text("raise RuntimeError('never imported')\n")
    proc = _run(["diff", str(traces[0]), str(traces[1])], tmp_path, pythonpath=unrelated)
    assert proc.returncode == 1, proc.stderr  # the anomaly: the symlink into the read-only directory
    assert proc.stdout.startswith("bifurcation: symlink ") and "-> EROFS" in proc.stdout.splitlines()[0]
