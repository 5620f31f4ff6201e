"""The layer contracts in pyproject.toml ([tool.importlinter]) hold, and they really catch a
cycle or a layer break: each is added on purpose to a copy of the packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=120,
    )


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    for pkg in ("tracer", "baseline", "dags"):
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _prepend_import(path: Path, line: str) -> None:
    text = path.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest if sep else line + "\n" + text)


def test_the_project_keeps_every_contract():
    proc = _lint(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_a_cycle_added_on_purpose_breaks_the_acyclic_contract(copy):
    # diff already imports allowlist; allowlist importing diff closes a cycle
    _prepend_import(copy / "baseline" / "run" / "allowlist.py", "import baseline.run.diff  # noqa")
    proc = _lint(copy)
    assert proc.returncode == 1, proc.stdout
    assert "no import cycles between sibling modules or packages BROKEN" in proc.stdout


def test_analysis_importing_the_pipeline_breaks_the_layers(copy):
    _prepend_import(copy / "baseline" / "run" / "normalize.py", "import baseline.pipeline.config  # noqa")
    proc = _lint(copy)
    assert proc.returncode == 1, proc.stdout
    assert "baseline layers: cli > pipeline > fleet | simulator > run BROKEN" in proc.stdout


def test_capture_importing_analysis_is_forbidden(copy):
    _prepend_import(copy / "tracer" / "schema.py", "import baseline.run.diff  # noqa")
    proc = _lint(copy)
    assert proc.returncode == 1, proc.stdout
    assert "capture (tracer) never imports analysis (baseline) BROKEN" in proc.stdout
