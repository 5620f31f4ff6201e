"""Running the commands the way a user's shell does, and the one-line error every bad input
must get: shared by the robustness test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def run_shell(script: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`script` under bash with the venv's commands on PATH (redirections and limits need a shell)."""
    full = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(env or {})}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full)


def one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    """The command failed with `code` and said why in one line, without a traceback."""
    err = proc.stderr.strip()
    assert proc.returncode == code, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err
