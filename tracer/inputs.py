"""Opening the files tracebase reads: regular files only, refused before a byte is read.

A FIFO given as an input would block ``open`` until some writer came (the command hangs with
no message), and ``/dev/zero`` would be read until memory ran out. Inputs are opened
non-blocking, checked with ``fstat`` on the open descriptor (no race with a rename), and only
then read.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from pathlib import Path

from tracer.errors import TracebaseError, file_kind

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (5-10 ms of every command's start)
if TYPE_CHECKING:
    from typing import BinaryIO



def open_regular(path: str | os.PathLike, expected: str) -> BinaryIO:
    """`path` opened for binary reading when it is a regular file (symlinks followed).

    Raises FileNotFoundError, PermissionError and other OSErrors as ``open`` does (callers
    word them), IsADirectoryError for a directory, and TracebaseError "PATH: expected
    `expected`, found a FIFO (named pipe)" for anything else that is not a regular file.
    """
    fd, _ = regular_descriptor(path, expected)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    # Outside the clean-up above: once fdopen has wrapped the descriptor, a stop (SIGTERM raising
    # Stopped) landing inside it closes the descriptor with the wrapper, and closing it again was
    # EBADF -- an ingest stopped at that moment exited 2 "Bad file descriptor", not 143.
    return os.fdopen(fd, "rb")


def regular_descriptor(path: str | os.PathLike, expected: str) -> tuple[int, os.stat_result]:
    """(descriptor, its fstat) of `path` opened read-only when it is a regular file, refused as
    `open_regular` refuses; the caller closes it. Opened non-blocking (a FIFO never blocks the
    open) and left so: pread ignores it on a regular file, and a raw descriptor makes no more
    system calls than it needs (footer_fingerprint: 10,000s of files an audit)."""
    source = os.fspath(path)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        # a Unix socket cannot be opened (ENXIO, "No such device or address"): say what it is
        if exc.errno == errno.ENXIO:
            try:
                mode = os.stat(source).st_mode
            except OSError:
                raise exc from None
            raise TracebaseError(f"{os.fsdecode(source)}: expected {expected}, found {file_kind(mode)}") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
        if not stat.S_ISREG(st.st_mode):
            raise TracebaseError(f"{os.fsdecode(source)}: expected {expected}, found {file_kind(st.st_mode)}")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_parquet(path: str | os.PathLike) -> BinaryIO:
    """A Parquet input opened for reading (see `open_regular`), a missing file or a directory
    refused in one line naming it: what tracer.schema.validate_file opens, and what a command
    line opens to check a single-file input (`baseline audit --model`) before importing pyarrow."""
    source = str(path)
    try:
        return open_regular(source, "a Parquet file")
    except FileNotFoundError:
        raise TracebaseError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise TracebaseError(f"{source}: is a directory, expected a Parquet file") from None


# The most a whole-file read (a YAML allowlist or config, a BTF blob) takes into memory: the
# largest real one is a few MiB. A 50 GiB sparse file given as `--allowlist` (st_size 50 GiB,
# no blocks) was read until MemoryError ("out of memory or threads"); now refused by its size.
MAX_WHOLE_FILE_BYTES = 256 << 20


def read_regular_bytes(path: str | os.PathLike, expected: str, max_bytes: int = MAX_WHOLE_FILE_BYTES) -> bytes:
    """The whole content of a regular file (see `open_regular`) of at most `max_bytes`."""
    with open_regular(path, expected) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise TracebaseError(f"{os.fsdecode(os.fspath(path))}: expected {expected} of at most "
                                 f"{max_bytes >> 20:,} MiB, found {_size(size)}")
        data = fh.read(max_bytes + 1)  # a file growing meanwhile (or /proc-like sizes) is capped too
        if len(data) > max_bytes:
            raise TracebaseError(f"{os.fsdecode(os.fspath(path))}: expected {expected} of at most "
                                 f"{max_bytes >> 20:,} MiB, found more")
        return data


def _size(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.1f} MiB"


# Byte-order marks of the Unicode encodings a text editor saves with (YAML 1.2 section 5.2: a
# processor must read UTF-16 and UTF-32 as well as UTF-8); longest first (UTF-32 LE starts as
# UTF-16 LE's).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def read_regular_text(path: str | os.PathLike, expected: str, max_bytes: int = MAX_WHOLE_FILE_BYTES) -> str:
    """The whole content of a regular file as text: UTF-8, or the UTF-16/UTF-32 its byte-order
    mark says (UnicodeDecodeError as ``read_text``; `not_text` says what it found)."""
    data = read_regular_bytes(path, expected, max_bytes)
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec)
    return data.decode()


def not_text(exc: UnicodeDecodeError) -> str:
    """What a file that did not decode holds, for a message: binary data, or text in another
    encoding than UTF-8 (Latin-1's é: 'bytes that are not UTF-8 (0xe9 at byte 3)')."""
    data = exc.object if isinstance(exc.object, bytes) else b""
    if b"\x00" in data[:65536]:
        return "binary data (NUL bytes)"
    return f"bytes that are not UTF-8 (0x{data[exc.start]:02x} at byte {exc.start}; save the file as UTF-8)"


def refuse_overwriting_inputs(output: str | os.PathLike | None, flag: str,
                              inputs: Iterable[str | os.PathLike]) -> None:
    """TracebaseError when `output` is one of the command's inputs (or another of its outputs).

    Every writer replaces its output whole (tracer.atomic), so `baseline export t.parquet -o
    t.parquet` turned the trace into JSON and `baseline learn DS -o DS/events/.../part-0.parquet`
    replaced a day of a host's events with a model, without a word. An input is a file, or a
    directory: a dataset (the files of its tables) or a directory of traces (its *.parquet
    files). An existing output is compared by device and inode (symlinks and other spellings
    of a path are the same file), a new one by its resolved path; a directory is looked into
    only when the output lies beneath it.
    """
    if output is None:
        return
    inputs = list(inputs)
    try:
        st = os.stat(output)
    except (OSError, ValueError):
        # not there yet (the usual case), or unreachable (the writer reports it); two outputs of
        # one command given the same new path still collide
        real = os.path.realpath(output)
        for source in inputs:
            if os.path.realpath(source) == real:
                raise _collision(output, flag, source) from None
        return
    if not stat.S_ISREG(st.st_mode):
        return
    target = (st.st_dev, st.st_ino)
    real = os.path.realpath(output)
    for source in inputs:
        for path in _input_files(source, real):
            try:
                other = os.stat(path)
            except (OSError, ValueError):
                continue
            if (other.st_dev, other.st_ino) == target:
                raise _collision(output, flag, path)


def _collision(output: str | os.PathLike, flag: str, other: str | os.PathLike) -> TracebaseError:
    return TracebaseError(f"{flag} {os.fsdecode(output)}: expected a path of its own, found {os.fsdecode(other)}, "
                          f"which this command also reads or writes (writing there would replace it)")


def _input_files(source: str | os.PathLike, output_real: str) -> Iterator[str | os.PathLike]:
    try:
        is_dir = os.path.isdir(source)
    except ValueError:
        return
    if not is_dir:
        yield source
        return
    top = os.path.realpath(source)
    if os.path.commonpath([top, output_real]) != top:
        return  # the output is not beneath this directory: none of its files can be it
    # a dataset root (<table>/date=YYYY-MM-DD/...): the partition files of its tables, not the
    # model or audit a command keeps beside them and rewrites by default; any other directory (a
    # table's directory, a directory of traces): every Parquet file its readers take, at any depth
    data = [f for table in Path(source).iterdir() if table.is_dir() and not table.name.startswith(".")
            for f in table_partition_files(table)]
    if data:
        yield from data
        return
    yield from parquet_files_under(Path(source))


def table_partition_files(table_dir: Path, since_date: str | None = None) -> list[Path]:
    """The Parquet files of one dataset table directory (`date=D/host=H/...`), dot names (temp
    files of writes in progress, and whatever is below a dot-named directory: a compaction's
    staging partition) skipped, only dates >= `since_date` (YYYY-MM-DD) when given; in date
    order, sorted within a date. Here, below tracer.schema (which imports this module), so the
    dataset readers and the output-overwrite check list the same files."""
    out: list[Path] = []
    inodes: dict[Path, int | None] = {}
    # (listed here, not by glob, which skips a directory it cannot list: "holds no files")
    with os.scandir(table_dir) as it:
        entries = list(it)
    dates = sorted(table_dir / e.name for e in entries if fnmatchcase(e.name, "date=*"))
    if dates:  # a table (a directory of date partitions), not another directory of the dataset's
        _refuse_misnamed_dates(table_dir, [e for e in entries if not fnmatchcase(e.name, "date=*")])
    for date_dir in dates:
        if since_date and date_dir.name.removeprefix("date=") < since_date:
            continue
        out.extend(sorted(f for f in _parquet_below(date_dir, inodes, follow_links=True)
                          if not any(part.startswith(".") for part in f.relative_to(date_dir).parts)))
    _refuse_second_names(out, inodes)
    return out


def _refuse_misnamed_dates(table_dir: Path, others: list[os.DirEntry]) -> None:
    """TracebaseError naming a directory beside a table's date partitions that is not one
    (`dateX/`, `2026-11-28/`, a partition renamed by hand) and holds Parquet files: its records
    were left out of every read with exit 0 -- a third of a fleet's hosts dropped from a model.
    Dot names (a write in progress) and `_`-names (the _SUCCESS markers and _metadata of other
    writers) are other tools' own; a directory of no Parquet file says nothing."""
    for entry in others:
        if entry.name.startswith((".", "_")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir and _parquet_below(table_dir / entry.name, follow_links=False):
            raise TracebaseError(
                f"{table_dir / entry.name}: expected a date partition named date=YYYY-MM-DD, found a directory "
                f"holding Parquet files whose records every reader would leave out; rename it date=<its date> "
                "or move it out of the table")


def _refuse_second_names(files: list[Path], inodes: dict[Path, int | None]) -> None:
    """TracebaseError when two of a table's files are one file (a symlink or a hard link to
    another partition's file): the host comes from the directory, so host B's link to host A's
    file read A's traces a second time as B's, with exit 0. Free in the usual case: the
    directory listing's inode numbers (`inodes`: None for a symlink, whose target is looked
    up) are compared first, and only a repeated number is confirmed by device and inode."""
    by_inode: dict[int, list[Path]] = {}
    for f in files:
        ino = inodes.get(f)
        if ino is None:
            try:
                ino = os.stat(f).st_ino
            except (OSError, ValueError):
                continue  # a dangling or looping link: its reader names it
        by_inode.setdefault(ino, []).append(f)
    for names in by_inode.values():
        if len(names) < 2:
            continue
        seen: dict[tuple[int, int], Path] = {}
        for f in names:
            try:
                st = os.stat(f)
            except (OSError, ValueError):
                continue
            first = seen.setdefault((st.st_dev, st.st_ino), f)
            if first != f:
                raise TracebaseError(
                    f"{f}: expected a file of its own, found another name of {first} (a symbolic or "
                    "hard link): a partition's host and date come from its directory, so the same "
                    "records would be read twice under two partitions; remove one of the names")


def input_paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The input paths of a reader of Parquet files and directories (tracer.schema.parquet_files),
    each checked as far as that needs no directory walk: an empty argument, `-`, a file named
    with a trailing slash, a path that is not there are refused naming it. The command lines
    run this before importing pyarrow or polars, so a mistyped path is refused at once; the
    reader runs it again (library callers)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    elif isinstance(paths, bytes) or not isinstance(paths, Iterable):
        # library callers: name what was wrong, not "'NoneType' object is not iterable"
        raise TypeError(f"paths: expected a path or an iterable of paths, found {type(paths).__name__}")
    checked: list[Path] = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"paths: expected str or os.PathLike items, found {type(p).__name__} {p!r}")
        if not os.fspath(p):  # Path('') is '.': every Parquet file under the current directory
            raise TracebaseError("expected a file or directory path, found '' (an empty argument)")
        text = os.fsdecode(os.fspath(p))
        if text == "-":
            raise TracebaseError("-: expected a Parquet file or directory, found '-' (reading standard input is "
                                 "not supported; ./- is a file named -)")
        p = Path(p)
        if p.is_dir():
            pass
        elif text.endswith("/"):
            # Path() drops a trailing slash: `trace.parquet/` was read as the file, where every
            # other tool says ENOTDIR (the slash asks for a directory)
            _missing_input(text)
            raise TracebaseError(f"{text}: expected a directory (the path ends in '/'), found a file")
        elif not p.exists():
            _missing_input(text)
        checked.append(p)
    return checked


def _missing_input(text: str) -> None:
    """Raise the one line for an input path that is not there, with the real reason (see
    `missing_reason`)."""
    reason = missing_reason(text)
    if reason is not None:
        raise TracebaseError(f"{text}: {'no such file or directory' if reason == NO_SUCH_FILE else reason}")


NO_SUCH_FILE = "no such file"  # missing_reason's words for ENOENT (callers word that case their own way)


def missing_reason(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be looked up, for a one-line error, or None when it can: NO_SUCH_FILE,
    else the errno's words -- a symlink loop (ELOOP), a component that is a file (ENOTDIR), no
    permission to look (EACCES), a name too long were all "no such file" where Path.exists()
    or is_file() decided (they hide the errno)."""
    found = _stat_or_reason(path)
    return found if isinstance(found, str) else None


def what_is_at(path: str | os.PathLike) -> str:
    """What a lookup of `path` finds, in words, from one stat: its kind (file_kind: 'a
    directory', 'a FIFO (named pipe)') or, when there is none, why (missing_reason's words)."""
    found = _stat_or_reason(path)
    return found if isinstance(found, str) else file_kind(found.st_mode)


def _stat_or_reason(path: str | os.PathLike) -> os.stat_result | str:
    try:
        return os.stat(path)
    except OSError as exc:
        return NO_SUCH_FILE if exc.errno in (errno.ENOENT, None) else str(exc.strerror or exc)
    except ValueError:  # (an embedded NUL byte)
        return "not a valid path (a NUL byte)"


def parquet_files_under(directory: Path) -> list[Path]:
    """Every .parquet file below `directory`, at any depth, sorted; none under a dot name (temp
    files and staging directories of writes in progress): what a reader of a directory of
    traces takes, and so what the output-overwrite check compares against."""
    return sorted(f for f in _parquet_below(directory)
                  if not any(part.startswith(".") for part in f.relative_to(directory).parts))


# the errors pathlib's glob (3.11, pathlib._ignore_error) passes over while walking
_IGNORED_WALK_ERRORS = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _parquet_below(directory: Path, inodes: dict[Path, int | None] | None = None,
                   follow_links: bool = False) -> list[Path]:
    """What `directory.rglob("*.parquet")` finds (Python 3.11), unsorted, each directory listed
    once: rglob lists every directory twice (once for its subdirectories, once to match names),
    and a fleet-day's dataset is ~10,000 host directories per table, listed again by the audit's
    counters and events passes (the day's two tables: 40,774 -> 20,388 directory reads, system
    time 0.31-0.49 -> 0.22-0.24 s with the directories cached). As rglob:
    any entry whose name matches (case-sensitive), symlinked directories not descended into
    (unless `follow_links`).
    Unlike rglob, a directory that cannot be listed is an error naming it (PermissionError):
    skipped, a host= directory a user may not read dropped that host's data from an audit or a
    model with exit 0 -- save a file system's lost+found (root's alone, never data).
    `inodes`, when given, receives each found file's inode number from the listing (None for a
    symbolic link: its target's is another). `follow_links`: symlinked directories are descended
    into too -- a dataset's host partition kept on another volume and linked in (skipped, that
    host's data was missing from an audit with exit 0) -- save one leading back to a directory
    the walk is in (a loop); a directory two links lead to is an error naming both (its files
    would be read twice, as two partitions')."""
    found: list[Path] = []
    # each directory to list with the directories (device, inode) its walk went through links to,
    # the top one first: a link back to one of them is a loop
    todo: list[tuple[Path, frozenset[tuple[int, int]]]] = [(directory, frozenset())]
    followed: dict[tuple[int, int], Path] = {}
    if follow_links:
        st = os.stat(directory)
        todo = [(directory, frozenset({(st.st_dev, st.st_ino)}))]
    while todo:
        top, chain = todo.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except PermissionError:
            if top.name == "lost+found" and top != directory:
                continue
            raise
        for entry in entries:
            if fnmatchcase(entry.name, "*.parquet"):
                found.append(top / entry.name)
                if inodes is not None:
                    inodes[found[-1]] = None if entry.is_symlink() else entry.inode()
            try:
                walk = chain
                if entry.is_dir() and entry.is_symlink() and follow_links:
                    walk = _new_link_target(top / entry.name, top, chain, followed)
                descend = entry.is_dir() and (not entry.is_symlink() or walk is not chain)
            except OSError as e:  # as rglob: a vanished or looping entry is not a directory
                if e.errno not in _IGNORED_WALK_ERRORS:
                    raise
                descend = False
            if descend:
                todo.append((top / entry.name, walk))
    return found


def _new_link_target(link: Path, top: Path, chain: frozenset[tuple[int, int]],
                     followed: dict[tuple[int, int], Path]) -> frozenset[tuple[int, int]]:
    """The chain to walk a symlinked directory met in `top` with, or `chain` itself when it is
    not to be walked: a directory the walk is in (a loop). TracebaseError when another link of
    this walk led to it already."""
    st = os.stat(link)
    key = (st.st_dev, st.st_ino)
    target, here = os.path.realpath(link), os.path.realpath(top)
    if key in chain or os.path.commonpath([target, here]) == target:
        return chain
    first = followed.setdefault(key, link)
    if first != link:
        raise TracebaseError(f"{link}: expected a directory of its own, found a link to the directory {first} "
                             "links to: its files would be read twice, as two partitions'; remove one of the links")
    return chain | {key}


def cwd_removed() -> bool:
    """The current directory was removed (`cd D && rmdir ../D`): getcwd fails ENOENT."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False
