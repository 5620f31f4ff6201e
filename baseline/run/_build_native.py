"""Build the differ's compiled hot loops (`_hotloops.c`) into a shared library beside it.

Standard library only: the wheel's build hook (hatch_build.py) loads this file by path in an
environment without numpy. The library's name carries a checksum of the C source, so a stale
build (the source edited, not rebuilt) is never loaded: baseline.run.native falls back to numpy.
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_hotloops.c"
# -O2 and no -march: the library may be copied to another machine of the same architecture
CFLAGS = ["-O2", "-std=c99", "-shared", "-fPIC"]


def library_name(source: Path = SOURCE) -> str:
    """`lib_hotloops-<crc32 of the source>.so` (not a Python module name: never imported as one)."""
    return f"lib_hotloops-{zlib.crc32(source.read_bytes()):08x}.so"


def compiler() -> str | None:
    """The C compiler to use: $CC, else cc or gcc on PATH; None when there is none."""
    import shutil  # (here: every diff imports this module for `library_name`, few build)

    cc = os.environ.get("CC")
    if cc:
        return cc
    return shutil.which("cc") or shutil.which("gcc")


def build(dest: Path = HERE, quiet: bool = False) -> Path | None:
    """Compile the library into `dest` (written to a temporary name, then renamed: a reader
    never loads half a file). Returns its path, or None when no compiler is found or the
    build fails (the numpy versions are then used; the reason goes to stderr unless quiet)."""
    import subprocess  # (here, not at the top: see `compiler`)
    import tempfile

    out = dest / library_name()
    if out.exists():
        return out
    cc = compiler()
    if cc is None:
        if not quiet:
            print("baseline.run.native: no C compiler (cc, gcc or $CC): the numpy versions are used", file=sys.stderr)
        return None
    fd, tmp = tempfile.mkstemp(prefix=".lib_hotloops-", suffix=".so", dir=dest)
    os.close(fd)
    try:
        try:
            done = subprocess.run([cc, *CFLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True, check=False)
            failed = f"exit {done.returncode}: {done.stderr.strip()}" if done.returncode else ""
        except OSError as exc:  # $CC names no program, or one that cannot run
            failed = str(exc)
        if failed:
            if not quiet:
                print(f"baseline.run.native: {cc} failed ({failed}): the numpy versions are used", file=sys.stderr)
            return None
        os.chmod(tmp, 0o777 & ~_umask())  # a shared library is executable, as the umask allows
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    for old in dest.glob("lib_hotloops-*.so"):  # earlier builds of other sources
        if old != out:
            old.unlink(missing_ok=True)
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":
    built = build()
    print(f"baseline.run.native: {built}" if built else "baseline.run.native: not built")
