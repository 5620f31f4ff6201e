"""The charts (matplotlib) under a HOME that does not exist: rendered, and HOME is not created
for matplotlib's cache (battery 44's borderline note: a service user's HOME=/nonexistent
appeared after a coverage report). An MPLCONFIGDIR that is set is used as given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RENDER = """
import sys
from baseline.templates import charts
chart = charts.hbar("errnos", "Errors", ["ENOENT", "EACCES"], [12, 3], xlabel="calls")
assert chart.png.startswith(b"\\x89PNG"), chart.png[:8]
print(len(chart.png))
"""


def _render(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("HOME", "MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    full.update(env, TMPDIR=str(tmp_path))
    return subprocess.run([sys.executable, "-c", RENDER], capture_output=True, text=True, env=full, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])


def test_a_home_that_does_not_exist_is_not_created(tmp_path: Path) -> None:
    home = tmp_path / "no" / "such" / "home"
    proc = _render({"HOME": str(home)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 1000
    assert not (tmp_path / "no").exists(), "HOME was created for matplotlib's cache"
    assert not list(tmp_path.glob("tracebase-matplotlib-*")), "the process's own directory is removed at exit"
    assert proc.stderr == ""


def test_an_existing_home_keeps_matplotlibs_own_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = _render({"HOME": str(home)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (home / ".config" / "matplotlib").is_dir() or (home / ".cache" / "matplotlib").is_dir()


def test_mplconfigdir_wins(tmp_path: Path) -> None:
    mine = tmp_path / "mpl"
    proc = _render({"HOME": str(tmp_path / "missing"), "MPLCONFIGDIR": str(mine)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert mine.is_dir() and not (tmp_path / "missing").exists()
