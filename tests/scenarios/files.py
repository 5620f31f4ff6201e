"""Small helpers the real-program sets share for building a case's files and commands: what each
set used to define again for itself."""

from __future__ import annotations

import os
import random
import secrets
import subprocess
from pathlib import Path

NOBODY_UID = 65534


def write_file(path: Path, data: str | bytes, mode: int = 0o644) -> Path:
    """`data` at `path` (parents made) with `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    path.chmod(mode)
    return path


def shell_argv(script: str, *args: str) -> list[str]:
    """The argv of `sh -c script` with positional arguments ($1...)."""
    return ["/bin/sh", "-c", script, "sh", *args]


def token(n: int = 6) -> str:
    """A random hex word of 2n characters (names and contents that vary from run to run)."""
    return secrets.token_hex(n)


def random_text(lo: int, hi: int) -> str:
    """Between lo and hi-1 lines of random words."""
    return "".join(f"{token(4)} line {i} {token(8)}\n" for i in range(random.randrange(lo, hi)))


def run_quiet(*argv: str) -> None:
    """Run a setup command; its output is kept out of the test's, a failure raises."""
    subprocess.run(list(argv), check=True, capture_output=True)


def mounted_tmpfs(target: Path, size: str) -> Path:
    """A tmpfs of `size` mounted on `target` (made if missing)."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"mode=0755,size={size}", "tracebase-test", str(target)],
                   check=True, capture_output=True)
    return target


def chown_nobody(*paths: Path) -> None:
    """Give `paths` to nobody:nogroup (cases run as an unprivileged user)."""
    for p in paths:
        os.chown(p, NOBODY_UID, NOBODY_UID)
