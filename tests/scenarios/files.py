"""Small helpers the real-program sets share for building a case's files and commands: what each
set used to define again for itself."""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
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


# The host's pool of 2 MiB huge pages is one setting for every test process: the fifth and the
# thirteenth sets' faults need it empty (MAP_HUGETLB / SHM_HUGETLB refused), the fifty-second's
# hugetlbfs cases need pages in it. pytest-xdist runs modules side by side, so a case that needs
# the pool in a state holds this lock (one file for the machine) from its first run to its check.
HUGE_PAGE_POOL = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
HUGE_PAGE_LOCK = Path(tempfile.gettempdir()) / "tracebase-tests-huge-page-pool.lock"


@contextlib.contextmanager
def huge_page_pool(pages: int) -> Iterator[bool]:
    """The 2 MiB huge page pool set to `pages` for the duration, other test processes kept out of
    it, and put back as it was. Yields whether the kernel made the pool that size (pages in use
    cannot be taken back, memory may be short): a caller skips with its reason when not."""
    with open(HUGE_PAGE_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = int(HUGE_PAGE_POOL.read_text())
        try:
            if before != pages:
                HUGE_PAGE_POOL.write_text(f"{pages}\n")
            yield int(HUGE_PAGE_POOL.read_text()) == pages
        finally:
            if int(HUGE_PAGE_POOL.read_text()) != before:
                HUGE_PAGE_POOL.write_text(f"{before}\n")
