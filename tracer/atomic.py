"""Files that appear whole or not at all: temp file in the same directory, fsync, rename.

Every writer in tracebase goes through here (Parquet through tracer.schema.write_table), so a
crash mid-write leaves at most a hidden '.<name>.<random>.tmp' file, which directory scans skip,
never a half file under the final name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_output(path: str | os.PathLike, *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file handle whose content replaces `path` when the block ends without error.

    `durable=False` skips the fsyncs (regenerable bulk data); the rename stays atomic.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def write_bytes(path: str | os.PathLike, data: bytes, *, durable: bool = True) -> Path:
    with atomic_output(path, durable=durable) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str, *, durable: bool = True) -> Path:
    return write_bytes(path, text.encode(), durable=durable)


def fsync_dir(directory: str | os.PathLike) -> None:
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
