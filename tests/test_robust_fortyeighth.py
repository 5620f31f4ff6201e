"""Blind robustness battery, round forty-eight: odd paths and file kinds.

Every CLI that reads or writes files, given a FIFO (with and without a writer or reader), a Unix
socket, /dev/null, /dev/zero and /dev/full, a directory where a file belongs and a file where a
directory belongs, a dangling symlink and a symlink loop, names holding a newline, a tab, a
leading dash or bytes that are not UTF-8, names past NAME_MAX and paths past PATH_MAX, an output
directory its user may not write (run as nobody), a full or read-only tmpfs (private mount
namespace), and an input renamed over while it is read.  Promises come only from README.md,
docs/*.md and each command's --help:

* README "Commands": "User errors and OS errors (missing, unreadable or non-Parquet files, a full
  or read-only filesystem, an output that is a directory or one of the command's own inputs, ...)
  print one line naming the file, flag or variable, what was expected and what was found, and
  exit with status 2; never a traceback."  "File names that are not UTF-8 are shown with the odd
  bytes as `\\xNN`, whatever the locale."  "Outputs honour the umask ... a rewritten file keeps its
  mode and owner (one you may not write -- another user's, or read-only -- is refused, exit 2, not
  replaced)".  "after `--` every word is a positional (`baseline diff -- good -bad.parquet`)";
  "`./-` names a file called `-`".  Text output shows strings "on one line with control
  characters escaped (`\\n`, `\\x1b`, `\\u202e`)".
* every --help: "exit status: ... 2 trouble (bad input or usage, an OS error such as a full disk:
  one line on stderr naming the file or flag)".
* docs/architecture.md: "Writes go through `schema.write_table` (Parquet) and `tracer/atomic.py`
  (everything else): temp file in the same directory, fsync, rename."  "A symlinked output is
  followed (the link stays; a dangling link whose target's directory is missing, or a link loop,
  is refused: the directories are not created, the link is not replaced)"; "an output that is a
  device or pipe (`-o /dev/null`, `-o /dev/stdout`, a FIFO) is written through, never renamed
  over".  "Outputs of many files (a new simulated dataset, a new week's coverage report) are
  written into a hidden sibling directory renamed into place at the end ... so a full disk or a
  kill -9 leaves no partial tree under the final name".  "Inputs are opened by
  `tracer/inputs.py`: regular files only, checked on the open descriptor before a byte is read (a
  FIFO would hang the open, `/dev/zero` would never end)."  "Only a kill -9 leaves a temporary".
* docs/benchmarks.md (the messages the refusals were given): "`file.parquet/: Not a directory`",
  "input a symlink loop: `Too many levels of symbolic links`", "input a Unix socket: `expected a
  Parquet file, found a socket`"; "output through a dangling symlink / a symlink loop ... refused
  naming the output, link kept".
* tracer record --help: "The output is checked before the command starts (its directory exists,
  is writable, not read-only or full; the path is not a directory). If writing still fails ...
  the trace is saved to $TMPDIR instead and the error names that file; exit status 2."
  docs/architecture.md: "a symlink is followed as the write follows it (a loop refused, a link
  into a missing directory refused naming both)".

A case passes when the exit status is the documented one, stderr holds no traceback and, for
exit 2, exactly one printable line naming the path (escaped where it holds control characters or
bytes that are not UTF-8) with the words of what was expected/found, the files under the test's
directory are exactly as before (no temporary, no half output, existing outputs unchanged, links
kept), and nothing hangs (each run is bounded; a FIFO case that needs the bound is a hang).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import tmp_nobody_reaches, tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():  # an installed checkout elsewhere: the interpreter's own bin
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
RECS = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
GOOD0, GOOD1, BAD = RECS / "good0.parquet", RECS / "good1.parquet", RECS / "bad.parquet"
CURATED = REPO / "expected_errors.yaml"
TIMEOUT = 120  # a run that does real work on a loaded 2-core machine
HANG = 40  # a run on a FIFO/device input that takes this long waits on it: a hang
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# words of the one line (any of each group, case-insensitive)
EXPECTED = ("expected",)
# ("not a regular file" says what was found only vaguely, but says it: borderline, accepted)
FIFO_W = ("fifo", "pipe", "not a regular file")
SOCK_W = ("socket", "not a regular file")
DEV_W = ("device", "not a regular file")
DIR_W = ("directory",)
NOENT_W = ("no such", "does not exist", "dangling", "missing")
LOOP_W = ("symbolic link", "loop")
LONG_W = ("too long",)
NOSPC_W = ("no space",)
PERM_W = ("permission denied", "not writable")
NOTDIR_W = ("not a directory",)

Arg = str | bytes | Path

# Findings: promises the tool's answer breaks (strict xfails, so a fix shows up).
# Fixed this round: a newline or tab in a file name was printed as a space in error lines (the
# dispatcher folded every line break; it now escapes one inside a name), and `baseline learn` said
# "no such dataset" of a symbolic link loop (it now names the loop).
KNOWN_MISSES: dict[str, str] = {}


def known(test: str, *values: str, id: str | None = None) -> pytest.param:  # noqa: A002
    """pytest.param(*values), a strict xfail when KNOWN_MISSES names `test[id]`."""
    pid = id or "-".join(values)
    reason = KNOWN_MISSES.get(f"{test}[{pid}]")
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(*values, id=pid, marks=marks)


# --------------------------------------------------------------------------- helpers


def _env(tmpdir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTHONWARNINGS", "PYTHONPATH", "PYTEST_CURRENT_TEST", "LC_ALL"):
        env.pop(key, None)
    env["LANG"] = "C.UTF-8"
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


@dataclass
class Res:
    argv: list[bytes]
    rc: int
    out: bytes
    err: bytes

    @property
    def text(self) -> str:
        return self.err.decode("utf-8", "replace")


def run(argv: list[Arg], cwd: Path, *, timeout: float = TIMEOUT, umask: int = 0o022,
        tmpdir: Path | None = None, prefix: list[str] | None = None) -> Res:
    args = [os.fsencode(a) for a in [*(prefix or []), *argv]]
    try:
        proc = subprocess.run(args, cwd=cwd, env=_env(tmpdir), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False, umask=umask)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung: {args!r} still running after {timeout} s; stderr so far: {exc.stderr!r}")
    return Res(args, proc.returncode, proc.stdout, proc.stderr)


def clean(res: Res, codes: tuple[int, ...] = (0,)) -> Res:
    assert b"Traceback" not in res.err, res.text[-3000:]
    assert res.rc in codes, (res.argv, res.rc, res.text[-3000:])
    return res


def refused(res: Res, name: str, *groups: tuple[str, ...]) -> str:
    """Exit 2, no traceback, ONE printable line on stderr naming `name` with a word of each group."""
    assert b"Traceback" not in res.err, res.text[-3000:]
    assert res.rc == 2, (res.argv, res.rc, res.out[-1500:], res.text[-1500:])
    try:
        text = res.err.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"stderr is not printable text ({exc}): {res.err!r}") from None
    lines = [ln for ln in text.split("\n") if ln.strip()]
    assert len(lines) == 1, text
    line = lines[0]
    odd = [c for c in line if (ord(c) < 32 and c != " ") or ord(c) == 127]
    assert not odd, f"raw control characters {odd!r} in {line!r}"
    assert name in line, (name, line)
    low = line.lower()
    for group in groups:
        assert any(word in low for word in group), (group, line)
    return line


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every entry under roots (not following links): kind, mode, size and content hash."""
    out: dict[str, tuple] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                key = os.fsdecode(path)
                if stat.S_ISREG(st.st_mode):
                    with open(path, "rb") as fh:
                        digest = hashlib.md5(fh.read()).hexdigest()
                    out[key] = ("file", stat.S_IMODE(st.st_mode), st.st_size, digest)
                elif stat.S_ISLNK(st.st_mode):
                    out[key] = ("link", os.fsdecode(os.readlink(path)))
                else:
                    out[key] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def unchanged(before: dict[str, tuple], *roots: Path) -> None:
    after = snapshot(*roots)
    added = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(k for k in set(after) & set(before) if after[k] != before[k])
    assert not (added or gone or changed), f"left behind {added}, removed {gone}, changed {changed}"


def is_chr(path: str, major: int, minor: int) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (major, minor)


DEVICES = {"/dev/null": (1, 3), "/dev/zero": (1, 5), "/dev/full": (1, 7)}


def dev_debris() -> set[str]:
    return {n for n in os.listdir("/dev") if n.startswith(".") and any(d in n for d in ("null", "zero", "full"))}


@contextlib.contextmanager
def fifo_reader(path: Path) -> Iterator[bytearray]:
    """A reader on FIFO `path` for the whole block: collects everything written to it."""
    got = bytearray()

    def read() -> None:
        fd = os.open(path, os.O_RDONLY)  # blocks until a writer opens
        try:
            while chunk := os.read(fd, 65536):
                got.extend(chunk)
        finally:
            os.close(fd)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        if thread.is_alive():
            with contextlib.suppress(OSError):  # no writer came: give the reader its EOF
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(30)


def bind_socket(path: Path, holder: list) -> None:
    """A listening Unix socket at `path` (bound in a short directory: sun_path holds 108 bytes)."""
    short = tempfile.mkdtemp(prefix="tb48s-")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.path.join(short, "s"))
        sock.listen(1)
        os.rename(os.path.join(short, "s"), path)
    finally:
        os.rmdir(short)
    holder.append(sock)


@dataclass
class Case:
    """The per-test layout: inputs under in/, outputs under out/, an empty cwd, a TMPDIR."""
    root: Path
    holder: list = field(default_factory=list)

    def __post_init__(self) -> None:
        for sub in ("in", "out", "cwd", "tmp"):
            (self.root / sub).mkdir()

    @property
    def inp(self) -> Path:
        return self.root / "in"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def close(self) -> None:
        for obj in self.holder:
            if isinstance(obj, int):
                os.close(obj)
            else:
                obj.close()


@pytest.fixture
def case(tmp_path) -> Iterator[Case]:
    c = Case(tmp_path)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict[str, Path]:
    """A small simulated dataset, its audit (outside it), and a spool; read-only for the tests."""
    root = tmp_path_factory.mktemp("fleet48")
    ds, audit = root / "ds", root / "audit"
    clean(run([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "3", "-o", ds], root))
    clean(run([BASELINE, "audit", ds, "-o", audit], root))
    return {"ds": ds, "audit": audit, "root": root}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, object]:
    cwd = tmp_path_factory.mktemp("ref48")
    out = {}
    for key, argv in {"bad": [GOOD0, GOOD1, BAD], "g1-bad": [GOOD1, BAD], "g1-good0": [GOOD1, GOOD0]}.items():
        res = clean(run([BASELINE, "diff", "--json", *argv], cwd), (0, 1))
        out[key] = (res.rc, json.loads(res.out)["bifurcation"])
    assert out["bad"][0] == 1
    return out


# --------------------------------------------------------------------------- inputs of the wrong kind

# command -> (the input's suffix, argv with the odd input X)
INPUTS: dict[str, tuple[str, Callable[[Arg, Case, dict], list[Arg]]]] = {
    "diff": ("parquet", lambda x, c, f: [BASELINE, "diff", GOOD0, GOOD1, "--", x]),
    "diff-allowlist": ("yaml", lambda x, c, f: [BASELINE, "diff", "--allowlist", x, GOOD0, GOOD1, BAD]),
    "export": ("parquet", lambda x, c, f: [BASELINE, "export", "-o", c.out / "x.json", "--", x]),
    "allowlist-learn": ("parquet", lambda x, c, f: [BASELINE, "allowlist", "learn", "-o", c.out / "al.yaml",
                                                    "--", x]),
    "learn": ("parquet", lambda x, c, f: [BASELINE, "learn", "-o", c.out / "m.parquet", "--", x]),
    "audit-model": ("parquet", lambda x, c, f: [BASELINE, "audit", f["ds"], "--model", x, "-o",
                                                c.out / "audit"]),
    "coverage-probes": ("yaml", lambda x, c, f: [BASELINE, "coverage", f["ds"], "--probes", x, "-o",
                                                 c.out / "rep"]),
    "coverage-nccl": ("log", lambda x, c, f: [BASELINE, "coverage", f["ds"], "-o", c.out / "rep",
                                              "--nccl-logs", x]),
    "suggest-symbols": ("txt", lambda x, c, f: [BASELINE, "suggest-probes", "--symbols", x]),
}


def _valid_bytes(suffix: str, fleet: dict[str, Path]) -> bytes:
    if suffix == "parquet":
        return BAD.read_bytes()
    if suffix == "yaml":
        return CURATED.read_bytes()
    if suffix == "log":
        return next((fleet["ds"] / "joblogs").glob("*.log")).read_bytes()
    return b"ib_create_qp\nib_reg_user_mr\n"


def make_input(kind: str, suffix: str, c: Case, fleet: dict[str, Path]) -> tuple[str, tuple[str, ...]]:
    """Make the odd input; returns (the argument, word groups its refusal must hold)."""
    path = c.inp / f"odd.{suffix}"
    if kind == "fifo":
        os.mkfifo(path)
        return str(path), (EXPECTED, FIFO_W)
    if kind == "fifo-writer":
        os.mkfifo(path)
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # a writer that never closes: EOF never comes
        c.holder.append(fd)
        with contextlib.suppress(BlockingIOError):
            os.write(fd, _valid_bytes(suffix, fleet)[:65536])
        return str(path), (EXPECTED, FIFO_W)
    if kind == "socket":
        bind_socket(path, c.holder)
        return str(path), (EXPECTED, SOCK_W)
    if kind in ("/dev/null", "/dev/zero", "/dev/full"):
        return kind, (EXPECTED, DEV_W)
    if kind == "dangling":
        path.symlink_to(c.inp / f"gone.{suffix}")
        return str(path), (NOENT_W,)
    if kind == "loop":
        path.symlink_to(c.inp / f"loop.{suffix}")
        (c.inp / f"loop.{suffix}").symlink_to(path)
        return str(path), (LOOP_W,)
    if kind == "directory":
        path.mkdir()
        return str(path), (DIR_W + ("not a regular file",),)
    raise AssertionError(kind)


INPUT_KINDS = ["fifo", "fifo-writer", "socket", "/dev/null", "/dev/zero", "/dev/full", "dangling", "loop",
               "directory"]
# commands whose input may be a directory of traces: an empty one is refused for holding none
DIR_OK = {"diff", "export", "allowlist-learn", "learn"}


def _input_params() -> list:
    params = []
    for cmd in INPUTS:
        for kind in INPUT_KINDS:
            if kind == "directory" and cmd in DIR_OK and cmd != "diff":
                continue
            params.append(known("test_input_of_the_wrong_kind", cmd, kind,
                                id=f"{cmd}-{kind.strip('/').replace('/', '')}"))
    return params


@pytest.mark.parametrize(("cmd", "kind"), _input_params())
def test_input_of_the_wrong_kind(cmd, kind, case, fleet):
    """An input that is no regular file (FIFO with or without a writer, socket, /dev/null,
    /dev/zero, /dev/full, a directory), or a dangling link or a link loop: one line naming it and
    what was expected / found, exit 2, no hang (inputs.py: "regular files only, checked on the
    open descriptor before a byte is read (a FIFO would hang the open, /dev/zero would never
    end)"), nothing written."""
    suffix, argv = INPUTS[cmd]
    arg, groups = make_input(kind, suffix, case, fleet)
    if kind == "directory" and cmd in DIR_OK:
        groups = ()  # a directory of traces holding none: named, trouble
    before = snapshot(case.root, fleet["ds"])
    res = run(argv(arg, case, fleet), case.cwd, timeout=HANG, tmpdir=case.tmp)
    name = arg if arg.startswith("/dev/") else Path(arg).name
    refused(res, name, *groups)
    unchanged(before, case.root, fleet["ds"])
    for dev, (major, minor) in DEVICES.items():
        assert is_chr(dev, major, minor), dev


DIR_INPUTS: dict[str, Callable[[Arg, Case, dict], list[Arg]]] = {
    "ingest-spool": lambda x, c, f: [BASELINE, "ingest", x, c.out / "ds2"],
    "evaluate": lambda x, c, f: [BASELINE, "evaluate", x, "--findings", f["audit"]],
    "evaluate-findings": lambda x, c, f: [BASELINE, "evaluate", f["ds"], "--findings", x],
    "report": lambda x, c, f: [BASELINE, "report", x],
    "coverage": lambda x, c, f: [BASELINE, "coverage", x, "-o", c.out / "rep"],
    "audit": lambda x, c, f: [BASELINE, "audit", x, "-o", c.out / "audit"],
    "expected-learn": lambda x, c, f: [BASELINE, "expected", "learn", x, "-o", c.out / "e.yaml"],
}


def _dir_input_params() -> list:
    params = []
    for cmd in DIR_INPUTS:
        for kind in ("file", "fifo", "/dev/null", "socket"):
            if kind == "file" and cmd in ("audit", "expected-learn"):
                continue  # (whether a DATASET may be Parquet files is not said for these)
            params.append(pytest.param(cmd, kind, id=f"{cmd}-{kind.strip('/').replace('/', '')}"))
    return params


@pytest.mark.parametrize(("cmd", "kind"), _dir_input_params())
def test_directory_input_of_the_wrong_kind(cmd, kind, case, fleet):
    """A spool, dataset or findings directory that is a regular file, a FIFO (no writer),
    /dev/null or a socket: one line naming it, saying a directory was expected, exit 2, no hang, no
    dataset or output directory created."""
    path = case.inp / "odd"
    if kind == "file":
        shutil.copyfile(BAD, path)
        arg = str(path)
    elif kind == "fifo":
        os.mkfifo(path)
        arg = str(path)
    elif kind == "socket":
        bind_socket(path, case.holder)
        arg = str(path)
    else:
        arg = kind
    before = snapshot(case.root)
    res = run(DIR_INPUTS[cmd](arg, case, fleet), case.cwd, timeout=HANG, tmpdir=case.tmp)
    refused(res, arg if arg.startswith("/dev/") else "odd", DIR_W + EXPECTED)
    unchanged(before, case.root)
    assert is_chr("/dev/null", 1, 3)


def test_file_with_a_trailing_slash_is_not_a_directory(case):
    """benchmarks.md: input `file.parquet/` -> `file.parquet/: Not a directory` (it used to be
    read as the file)."""
    bad = case.inp / "bad.parquet"
    shutil.copyfile(BAD, bad)
    before = snapshot(case.root)
    res = run([BASELINE, "diff", GOOD0, GOOD1, f"{bad}/"], case.cwd)
    refused(res, "bad.parquet/", NOTDIR_W)
    res = run([BASELINE, "export", "-o", case.out / "x.json", f"{bad}/"], case.cwd)
    refused(res, "bad.parquet/", NOTDIR_W)
    unchanged(before, case.root)


# --------------------------------------------------------------------------- outputs of the wrong kind

# writer -> argv with output X (file outputs, then directory outputs)
FILE_OUT: dict[str, Callable[[Arg, Case, dict], list[Arg]]] = {
    "record": lambda x, c, f: [TRACER, "record", "-q", "--linger", "0", "-o", x, "--", "/bin/sh", "-c",
                               f"echo ran > {c.root / 'MARK'}"],
    "export": lambda x, c, f: [BASELINE, "export", BAD, "-o", x],
    "learn": lambda x, c, f: [BASELINE, "learn", f["ds"], "-o", x],
    "allowlist-learn": lambda x, c, f: [BASELINE, "allowlist", "learn", GOOD0, GOOD1, "-o", x],
    "report-html": lambda x, c, f: [BASELINE, "report", f["audit"], "--html", x],
    "expected-learn": lambda x, c, f: [BASELINE, "expected", "learn", f["ds"], "-o", x],
    "learn-expected-out": lambda x, c, f: [BASELINE, "learn", f["ds"], "-o", c.out / "m.parquet",
                                           "--expected-out", x],
}
DIR_OUT: dict[str, Callable[[Arg, Case, dict], list[Arg]]] = {
    "audit": lambda x, c, f: [BASELINE, "audit", f["ds"], "-o", x],
    "simulate": lambda x, c, f: [BASELINE, "simulate", "--hosts", "1", "--hours", "1", "-o", x],
    "coverage": lambda x, c, f: [BASELINE, "coverage", f["ds"], "-o", x],
}
SUFFIX = {"record": "parquet", "export": "json", "learn": "parquet", "allowlist-learn": "yaml",
          "report-html": "html", "expected-learn": "yaml", "learn-expected-out": "yaml"}

# (writer, kind) pairs run; the kinds: what the output path is
OUT_CASES = [
    *[(w, "directory") for w in FILE_OUT],
    *[(w, "socket") for w in ("export", "learn", "allowlist-learn")],
    *[(w, "dangling-nodir") for w in ("record", "export", "learn", "allowlist-learn", "report-html",
                                      "expected-learn")],
    *[(w, "loop") for w in ("record", "export", "learn", "allowlist-learn", "report-html", "expected-learn",
                            "learn-expected-out")],
    *[(w, "name-max") for w in FILE_OUT],
    *[(w, "path-max") for w in ("record", "export", "learn", "allowlist-learn")],
    *[(w, "file-parent") for w in ("record", "export", "learn", "allowlist-learn")],
    *[(w, "/dev/full") for w in ("export", "learn", "allowlist-learn", "report-html")],
    *[(w, "file") for w in DIR_OUT],
    *[(w, "/dev/null") for w in DIR_OUT],
    *[(w, "dangling-nodir") for w in ("simulate", "coverage")],
    *[(w, "loop") for w in ("simulate", "audit")],
    *[(w, "name-max") for w in DIR_OUT],
]


def make_output(kind: str, writer: str, c: Case) -> tuple[str, str, tuple[tuple[str, ...], ...]]:
    """Make the odd output; returns (argument, name the line must hold, word groups)."""
    suffix = SUFFIX.get(writer, "d")
    path = c.out / f"res.{suffix}"
    if kind == "directory":
        path.mkdir()
        (path / "keep.txt").write_text("kept\n")
        return str(path), path.name, (DIR_W,)
    if kind == "file":
        path.write_bytes(b"an existing file, not a directory\n")
        return str(path), path.name, (DIR_W,)
    if kind == "socket":
        bind_socket(path, c.holder)
        return str(path), path.name, (("socket", "no such device", "expected"),)
    if kind == "dangling-nodir":
        path.symlink_to(c.out / "nodir" / "sub" / f"res.{suffix}")
        return str(path), path.name, (NOENT_W,)
    if kind == "loop":
        path.symlink_to(c.out / f"loop.{suffix}")
        (c.out / f"loop.{suffix}").symlink_to(path)
        return str(path), path.name, (LOOP_W,)
    if kind == "name-max":
        name = "toolong-" + "n" * 300 + f".{suffix}"
        return str(c.out / name), "toolong-", (LONG_W,)
    if kind == "path-max":
        deep = c.out.joinpath(*["d" * 200] * 22) / f"deep-res.{suffix}"
        assert len(os.fsencode(deep)) > 4096
        return str(deep), f"deep-res.{suffix}", (LONG_W,)
    if kind == "file-parent":
        (c.out / "plain").write_text("a plain file\n")
        return str(c.out / "plain" / f"res.{suffix}"), "plain", (NOTDIR_W,)
    if kind == "/dev/full":
        return kind, kind, (NOSPC_W,)
    if kind == "/dev/null":
        return kind, kind, (DIR_W,)
    raise AssertionError(kind)


@pytest.mark.parametrize(("writer", "kind"),
                         [pytest.param(w, k, id=f"{w}-{k.strip('/').replace('/', '')}") for w, k in OUT_CASES])
def test_output_of_the_wrong_kind(writer, kind, case, fleet, request):
    """An output that is a directory (a file's) or a file (a directory's), a socket, a dangling
    link into a missing directory, a link loop, a name past NAME_MAX, a path past PATH_MAX, under
    a regular file, /dev/full, /dev/null for a directory: one line naming it, exit 2, nothing
    created (no directories, no temporary), the existing entry and the links unchanged; `tracer
    record` refuses before the command runs (except /dev/full, which it cannot know is full)."""
    if writer == "record":
        request.getfixturevalue("need_bpf")
    argv = (FILE_OUT | DIR_OUT)[writer]
    arg, name, groups = make_output(kind, writer, case)
    before = snapshot(case.root, fleet["ds"])
    debris = dev_debris()
    res = run(argv(arg, case, fleet), case.cwd, tmpdir=case.tmp)
    if writer == "allowlist-learn" and kind == "/dev/full":
        groups = (NOSPC_W + EXPECTED,)  # (a YAML merged in place: the device is read first)
    if writer in DIR_OUT and kind in ("dangling-nodir", "loop"):
        groups = (groups[0] + NOTDIR_W,)  # ("Not a directory": expected one; borderline, accepted)
    if kind == "path-max":
        # the output's directory is itself past PATH_MAX: naming it is naming where the write failed
        name = name if name in res.text else os.path.dirname(arg)
    line = refused(res, name, *groups)
    if writer == "record" and kind == "dangling-nodir":
        assert "nodir" in line, f"a link into a missing directory is refused naming both: {line}"
    model = case.out / "m.parquet"
    if writer == "learn-expected-out" and model.exists():
        # (borderline: the model, a separate output, may be written before --expected-out fails;
        # then whole)
        assert model.read_bytes()[:4] == model.read_bytes()[-4:] == b"PAR1"
        before[str(model)] = snapshot(case.out)[str(model)]
    unchanged(before, case.root, fleet["ds"])
    assert dev_debris() == debris
    for dev, (major, minor) in DEVICES.items():
        assert is_chr(dev, major, minor), dev


def test_record_to_dev_full_saves_the_trace_to_tmpdir(case, need_bpf):
    """record --help: "If writing still fails ... the trace is saved to $TMPDIR instead and the
    error names that file; exit status 2."  /dev/full is written through (not renamed over), and
    every write to it fails with ENOSPC."""
    res = run([TRACER, "record", "-q", "--linger", "0", "-o", "/dev/full", "--", "/bin/true"], case.cwd,
              tmpdir=case.tmp)
    spilled = [p for p in case.tmp.iterdir() if not p.name.startswith(".")]
    assert len(spilled) == 1, (spilled, res.text)
    refused(res, spilled[0].name)
    assert spilled[0].read_bytes()[:4] == b"PAR1"
    assert is_chr("/dev/full", 1, 7)


# --------------------------------------------------------------------------- outputs written through or followed


def test_outputs_through_dev_null_and_dev_zero(case, fleet):
    """architecture.md: "an output that is a device or pipe (`-o /dev/null`, ...) is written
    through, never renamed over": exit 0, the device stays, no temporary beside it."""
    debris = dev_debris()
    before = snapshot(case.root)
    clean(run([BASELINE, "export", BAD, "-o", "/dev/null"], case.cwd))
    clean(run([BASELINE, "export", BAD, "-o", "/dev/zero"], case.cwd))
    clean(run([BASELINE, "learn", fleet["ds"], "-o", "/dev/null"], case.cwd))
    for dev, (major, minor) in DEVICES.items():
        assert is_chr(dev, major, minor), dev
    assert dev_debris() == debris
    unchanged(before, case.root)


def test_record_through_dev_null(case, need_bpf):
    """`tracer record -o /dev/null`: written through, the exit status is the command's (0), the
    device stays, nothing spilled to $TMPDIR."""
    debris = dev_debris()
    clean(run([TRACER, "record", "-q", "--linger", "0", "-o", "/dev/null", "--", "/bin/true"], case.cwd,
              tmpdir=case.tmp))
    assert is_chr("/dev/null", 1, 3)
    assert dev_debris() == debris
    assert not any(case.tmp.iterdir())


def test_outputs_into_a_fifo_with_a_reader(case, fleet):
    """A FIFO output is written through to its reader, never renamed over: the reader gets the
    whole JSON / Parquet file, the FIFO stays a FIFO."""
    fifo = case.out / "pipe.json"
    os.mkfifo(fifo)
    with fifo_reader(fifo) as got:
        clean(run([BASELINE, "export", BAD, "-o", fifo], case.cwd))
    doc = json.loads(bytes(got))
    assert doc, "the export's JSON came through the FIFO"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    fifo2 = case.out / "model.parquet"
    os.mkfifo(fifo2)
    with fifo_reader(fifo2) as got:
        clean(run([BASELINE, "learn", fleet["ds"], "-o", fifo2], case.cwd))
    assert bytes(got[:4]) == b"PAR1" and bytes(got[-4:]) == b"PAR1", bytes(got[:16])
    assert stat.S_ISFIFO(os.lstat(fifo2).st_mode)
    assert sorted(p.name for p in case.out.iterdir()) == ["model.parquet", "pipe.json"]


@pytest.mark.parametrize("writer", ["record", "export", "learn", "allowlist-learn"])
def test_output_through_a_dangling_link_into_an_existing_directory(writer, case, fleet, request):
    """architecture.md: "A symlinked output is followed (the link stays ...)": the target is
    written, the link still points to it, the target's mode honours the umask (027: 0640), no
    temporary left beside either."""
    if writer == "record":
        request.getfixturevalue("need_bpf")
    suffix = SUFFIX[writer]
    target_dir = case.root / "target"
    target_dir.mkdir()
    target = target_dir / f"real.{suffix}"
    link = case.out / f"link.{suffix}"
    link.symlink_to(target)
    argv = FILE_OUT[writer](link, case, fleet)
    if writer == "record":
        argv = [*argv[: argv.index("--") + 1], "/bin/true"]
    clean(run(argv, case.cwd, umask=0o027, tmpdir=case.tmp))
    assert os.readlink(link) == str(target)
    st = os.lstat(target)
    assert stat.S_ISREG(st.st_mode) and st.st_size > 0
    assert stat.S_IMODE(st.st_mode) == 0o640, oct(st.st_mode)
    assert [p.name for p in target_dir.iterdir()] == [target.name]
    assert [p.name for p in case.out.iterdir()] == [link.name]


# --------------------------------------------------------------------------- odd names

ODD = {
    "newline": (b"odd\nname", "odd\\nname"),
    "tab": (b"odd\tname", "odd\\tname"),
    "dash": (b"-oddname", "-oddname"),
    "nonutf8": (b"odd\xff\xfename", "odd\\xff\\xfename"),
}


@pytest.mark.parametrize("odd", list(ODD))
def test_odd_named_input_diffs_as_the_original(odd, case, reference):
    """A trace whose name holds a newline, a tab, a leading dash (after `--`) or bytes that are
    not UTF-8 is read like any other: the same bifurcation as under its own name."""
    raw, _ = ODD[odd]
    path = os.path.join(os.fsencode(case.inp), raw + b".parquet")
    shutil.copyfile(BAD, path)
    res = clean(run([BASELINE, "diff", "--json", GOOD0, GOOD1, "--", path], case.cwd), (0, 1))
    assert (res.rc, json.loads(res.out)["bifurcation"]) == reference["bad"]


@pytest.mark.parametrize("odd", [known("test_odd_named_missing_input_is_named_printably", o) for o in ODD])
def test_odd_named_missing_input_is_named_printably(odd, case):
    """README: one line naming the file; names not UTF-8 "shown with the odd bytes as `\\xNN`";
    control characters escaped (`\\n`), so a newline in a name cannot split the line."""
    raw, shown = ODD[odd]
    path = os.path.join(os.fsencode(case.inp), raw + b"-missing.parquet")
    before = snapshot(case.root)
    res = run([BASELINE, "diff", GOOD0, GOOD1, "--", path], case.cwd)
    refused(res, shown + "-missing.parquet", NOENT_W)
    res = run([BASELINE, "allowlist", "learn", "-o", case.out / "al.yaml", "--", path], case.cwd)
    refused(res, shown + "-missing.parquet", NOENT_W)
    unchanged(before, case.root)


@pytest.mark.parametrize("odd", list(ODD))
def test_odd_named_output_is_written_under_that_name(odd, case):
    """An output named with a newline, a tab, a leading dash (`--output=-x`) or bytes that are
    not UTF-8 is written under exactly that name (umask 022: 0644), nothing else beside it, and
    what the command prints about it stays printable."""
    raw, _ = ODD[odd]
    name = raw + b".json"
    out = os.path.join(os.fsencode(case.out), name)
    res = clean(run([BASELINE, "export", BAD, b"--output=" + out], case.cwd))
    assert os.listdir(os.fsencode(case.out)) == [name]
    st = os.stat(out)
    assert stat.S_IMODE(st.st_mode) == 0o644
    with open(out, "rb") as fh:
        assert json.load(fh)
    for stream in (res.out, res.err):
        assert b"\xff" not in stream
        text = stream.decode("utf-8")
        assert not [c for ln in text.splitlines() for c in ln if ord(c) < 32], text
        if odd in ("newline", "tab"):
            assert raw not in stream, text  # a newline or tab in the name is escaped where it is shown
    assert os.listdir(case.cwd) == []


@pytest.mark.parametrize("odd", [known("test_odd_named_output_under_a_file_is_named_printably", o) for o in ODD])
def test_odd_named_output_under_a_file_is_named_printably(odd, case, fleet):
    """The output's directory is an oddly named regular file (ENOTDIR): one printable line naming
    it, nothing created, the file unchanged."""
    raw, shown = ODD[odd]
    plain = os.path.join(os.fsencode(case.out), raw + b"-file")
    with open(plain, "wb") as fh:
        fh.write(b"a plain file\n")
    before = snapshot(case.root)
    res = run([BASELINE, "export", BAD, b"--output=" + os.path.join(plain, b"res.json")], case.cwd)
    refused(res, shown + "-file", NOTDIR_W)
    res = run([BASELINE, "learn", fleet["ds"], b"--output=" + os.path.join(plain, b"model.parquet")], case.cwd)
    refused(res, shown + "-file", NOTDIR_W)
    unchanged(before, case.root)


def test_leading_dash_output_and_dot_slash_dash(case, fleet):
    """README: "`./-` names a file called `-`"; `--output=-model.parquet` names a file whose name
    starts with a dash (not an option), written in the current directory."""
    clean(run([BASELINE, "learn", fleet["ds"], "--output=-model.parquet"], case.cwd))
    clean(run([BASELINE, "allowlist", "learn", GOOD0, GOOD1, "-o", "./-"], case.cwd))
    assert sorted(os.listdir(case.cwd)) == ["-", "-model.parquet"]
    assert (case.cwd / "-model.parquet").read_bytes()[:4] == b"PAR1"
    assert (case.cwd / "-").stat().st_size > 0


def test_record_output_with_odd_bytes_in_its_name(case, need_bpf):
    """tracer record -o NAME with a newline and a byte that is not UTF-8: the trace is written
    under exactly that name."""
    name = b"rec\n\xffrun.parquet"
    out = os.path.join(os.fsencode(case.out), name)
    res = clean(run([TRACER, "record", "-q", "--linger", "0", "-o", out, "--", "/bin/true"], case.cwd,
                    tmpdir=case.tmp))
    assert os.listdir(os.fsencode(case.out)) == [name]
    with open(out, "rb") as fh:
        assert fh.read(4) == b"PAR1"
    assert b"\xff" not in res.err + res.out


@pytest.mark.parametrize("odd", [known("test_record_odd_named_missing_directory", o) for o in ("newline", "nonutf8")])
def test_record_odd_named_missing_directory(odd, case, need_bpf):
    """tracer record -o into a missing directory whose name holds a newline or a byte that is not
    UTF-8: one printable line naming it, refused before the command runs."""
    raw, shown = ODD[odd]
    before = snapshot(case.root)
    missing = os.path.join(os.fsencode(case.out), raw + b"-dir", b"x.parquet")
    res = run([TRACER, "record", "-q", "--linger", "0", "-o", missing, "--", "/bin/sh", "-c",
               f"echo ran > {case.root / 'MARK'}"], case.cwd, tmpdir=case.tmp)
    refused(res, shown + "-dir", NOENT_W)
    unchanged(before, case.root)


@pytest.mark.parametrize("cmd", ["diff", "export", "learn", "allowlist-learn"])
@pytest.mark.parametrize("what", ["name-max", "path-max"])
def test_input_name_too_long(cmd, what, case, fleet):
    """ENAMETOOLONG on an input (a component past NAME_MAX, a path past PATH_MAX): one line
    naming it, exit 2."""
    if what == "name-max":
        path, name = case.inp / ("toolong-" + "n" * 300 + ".parquet"), "toolong-"
    else:
        path, name = case.inp.joinpath(*["d" * 200] * 22) / "deep-in.parquet", "deep-in.parquet"
        assert len(os.fsencode(path)) > 4096
    before = snapshot(case.root)
    res = run(INPUTS[cmd][1](str(path), case, fleet), case.cwd)
    refused(res, name, LONG_W)
    unchanged(before, case.root)


# --------------------------------------------------------------------------- an output directory nobody may write


@pytest.fixture(scope="module")
def public(fleet) -> Iterator[Path]:
    """A tree nobody can read (dataset, audit, recordings) beside `ro/`, root's 0755 directory
    holding root's 0644 outputs; removed afterwards."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP: needs root and setpriv to run as nobody", file=sys.stderr)
        pytest.skip("needs root and setpriv to run as nobody")
    tools_run_as_nobody()
    root = Path(tempfile.mkdtemp(prefix="tb48-nobody-", dir=tmp_nobody_reaches()))
    try:
        os.chmod(root, 0o755)
        shutil.copytree(fleet["ds"], root / "ds", symlinks=True)
        shutil.copytree(fleet["audit"], root / "audit", symlinks=True)
        for rec in (GOOD0, GOOD1, BAD):
            shutil.copyfile(rec, root / rec.name)
        ro = root / "ro"
        ro.mkdir()
        (ro / "keep.json").write_text('{"kept": true}\n')
        (ro / "keep.yaml").write_bytes(CURATED.read_bytes())
        (ro / "keep.parquet").write_bytes(BAD.read_bytes())
        (root / "cwd").mkdir()
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames:
                os.chmod(os.path.join(dirpath, n), 0o755)
            for n in filenames:
                os.chmod(os.path.join(dirpath, n), 0o644)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


NOBODY_CASES = {
    "export-new": lambda p: [BASELINE, "export", p / "bad.parquet", "-o", p / "ro" / "new.json"],
    "export-existing": lambda p: [BASELINE, "export", p / "bad.parquet", "-o", p / "ro" / "keep.json"],
    "learn-existing": lambda p: [BASELINE, "learn", p / "ds", "-o", p / "ro" / "keep.parquet"],
    "allowlist-learn-existing": lambda p: [BASELINE, "allowlist", "learn", p / "good0.parquet",
                                           p / "good1.parquet", "-o", p / "ro" / "keep.yaml"],
    "expected-learn": lambda p: [BASELINE, "expected", "learn", p / "ds", "-o", p / "ro" / "e.yaml"],
    "audit": lambda p: [BASELINE, "audit", p / "ds", "-o", p / "ro" / "audit"],
    "simulate": lambda p: [BASELINE, "simulate", "--hosts", "1", "--hours", "1", "-o", p / "ro" / "sim"],
    "coverage": lambda p: [BASELINE, "coverage", p / "ds", "-o", p / "ro" / "rep"],
    "report-html": lambda p: [BASELINE, "report", p / "audit", "--html", p / "ro" / "r.html"],
}


@pytest.mark.parametrize("cmd", list(NOBODY_CASES))
def test_output_where_the_user_may_not_write(cmd, public):
    """As nobody, an output in root's 0755 directory (new, or root's existing 0644 file): README
    "one you may not write -- another user's, or read-only -- is refused, exit 2, not replaced";
    one line naming it; the directory is as before."""
    argv = NOBODY_CASES[cmd](public)
    target = Path(os.fsdecode(argv[argv.index("-o") + 1] if "-o" in argv else argv[-1]))
    before = snapshot(public / "ro", public / "cwd", public / "ds")
    res = run(argv, public / "cwd", prefix=NOBODY)
    refused(res, target.name, PERM_W)
    unchanged(before, public / "ro", public / "cwd", public / "ds")


# --------------------------------------------------------------------------- a full or read-only tmpfs

_NS_HELPER = r'''
import hashlib, json, os, subprocess, sys
spec = json.loads(sys.argv[1])
mnt = spec["mnt"]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + spec["size"] + ",mode=0755", "tb48", mnt], check=True)
for name, text in spec["keep"].items():
    with open(os.path.join(mnt, name), "w") as fh:
        fh.write(text)
if spec["fill"]:
    with open(os.path.join(mnt, "filler"), "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    with open(os.path.join(mnt, "filler2"), "wb", buffering=0) as fh:  # the last partial page too
        try:
            while True:
                fh.write(b"\0")
        except OSError:
            pass
if spec["ro"]:
    subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)

def listing():
    out = {}
    for dirpath, dirnames, filenames in os.walk(mnt):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, mnt)] = hashlib.md5(fh.read()).hexdigest()
            else:
                out[os.path.relpath(p, mnt)] = "dir" if os.path.isdir(p) else "other"
    return out

before = listing()
proc = subprocess.run(spec["argv"], capture_output=True, timeout=spec["timeout"], stdin=subprocess.DEVNULL)
print(json.dumps({"rc": proc.returncode, "err": proc.stderr.decode("latin-1"),
                  "before": before, "after": listing()}))
'''


@pytest.fixture(scope="module")
def private_mounts(tmp_path_factory) -> Path:
    """The helper run inside `unshare -m` (mounts stay private to it and vanish with it)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP: needs root and unshare(1) for a private tmpfs", file=sys.stderr)
        pytest.skip("needs root and unshare(1) for a private tmpfs")
    root = tmp_path_factory.mktemp("ns48")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "-o",
                            "size=64k", "tb48", str(root)], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        print(f"SKIP: cannot mount a tmpfs in a private mount namespace: {probe.stderr.strip()}", file=sys.stderr)
        pytest.skip(f"cannot mount a tmpfs in a private mount namespace: {probe.stderr.strip()}")
    helper = root / "ns_helper.py"
    helper.write_text(_NS_HELPER)
    return helper


def in_tmpfs(helper: Path, mnt: Path, argv: list[Arg], *, keep: dict[str, str], fill: bool = True,
             ro: bool = False, tmpdir: Path | None = None) -> dict:
    mnt.mkdir()
    spec = {"mnt": str(mnt), "size": "64k", "keep": keep, "fill": fill, "ro": ro, "timeout": TIMEOUT,
            "argv": [os.fsdecode(a) for a in argv]}
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, str(helper),
                           json.dumps(spec)], capture_output=True, text=True, env=_env(tmpdir),
                          timeout=TIMEOUT + 30, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not any(mnt.iterdir()), "the tmpfs stays in its namespace"
    got = json.loads(proc.stdout)
    got["res"] = Res([], got["rc"], b"", got["err"].encode("latin-1"))
    return got


TMPFS_CASES: dict[str, tuple[str, Callable[[Path, Case, dict], list[Arg]]]] = {
    # name -> (the output's name in the mount; argv with the mount M)
    "record": ("keep.parquet", lambda m, c, f: [TRACER, "record", "-q", "--linger", "0", "-o", m / "keep.parquet",
                                                "--", "/bin/sh", "-c", f"echo ran > {c.root / 'MARK'}"]),
    "export-existing": ("keep.json", lambda m, c, f: [BASELINE, "export", BAD, "-o", m / "keep.json"]),
    "learn-existing": ("keep.parquet", lambda m, c, f: [BASELINE, "learn", f["ds"], "-o", m / "keep.parquet"]),
    "allowlist-learn-existing": ("keep.yaml", lambda m, c, f: [BASELINE, "allowlist", "learn", GOOD0, GOOD1,
                                                               "-o", m / "keep.yaml"]),
    "expected-learn": ("e.yaml", lambda m, c, f: [BASELINE, "expected", "learn", f["ds"], "-o", m / "e.yaml"]),
    "report-html": ("r.html", lambda m, c, f: [BASELINE, "report", f["audit"], "--html", m / "r.html"]),
    "audit": ("audit", lambda m, c, f: [BASELINE, "audit", f["ds"], "-o", m / "audit"]),
    "simulate": ("sim", lambda m, c, f: [BASELINE, "simulate", "--hosts", "1", "--hours", "1", "-o", m / "sim"]),
    "coverage": ("rep", lambda m, c, f: [BASELINE, "coverage", f["ds"], "-o", m / "rep"]),
}
KEEP = {"keep.parquet": "not really parquet: kept as it was\n", "keep.json": '{"kept": true}\n',
        "keep.yaml": CURATED.read_text()}


@pytest.mark.parametrize("cmd", list(TMPFS_CASES))
def test_output_on_a_full_tmpfs(cmd, case, fleet, private_mounts, request):
    """README: "a full ... filesystem" is one line naming the file, exit 2; architecture.md: temp
    file + rename, staged directories renamed at the end, "a full disk ... leaves no partial tree
    under the final name": the existing output is unchanged, nothing else appears on the full
    tmpfs; `tracer record` refuses before its command runs ("not read-only or full")."""
    if cmd == "record":
        request.getfixturevalue("need_bpf")
    name, argv = TMPFS_CASES[cmd]
    mnt = case.root / "mnt"
    got = in_tmpfs(private_mounts, mnt, argv(mnt, case, fleet), keep=dict(KEEP), tmpdir=case.tmp)
    refused(got["res"], name, NOSPC_W + ("full",))
    assert got["after"] == got["before"], (got["before"], got["after"])
    assert not (case.root / "MARK").exists(), "the command ran though the output's filesystem is full"
    assert not any(case.tmp.iterdir()), list(case.tmp.iterdir())


def test_export_larger_than_a_tmpfs_leaves_nothing(case, private_mounts):
    """An export of ~75 kB onto a 64 KiB tmpfs fills it half-way through the write: exit 2 naming
    the output, no half file under its name, no temporary."""
    mnt = case.root / "mnt"
    got = in_tmpfs(private_mounts, mnt, [BASELINE, "export", BAD, "-o", mnt / "big.json"], keep={}, fill=False)
    refused(got["res"], "big.json", NOSPC_W)
    assert got["after"] == got["before"] == {}, got["after"]


def test_record_on_a_read_only_tmpfs_is_refused_before_running(case, private_mounts, need_bpf):
    """record --help: the output is checked before the command starts (... "not read-only");
    README: a read-only filesystem is one line naming the file, exit 2."""
    mnt = case.root / "mnt"
    argv = TMPFS_CASES["record"][1](mnt, case, {})
    got = in_tmpfs(private_mounts, mnt, argv, keep={"keep.parquet": KEEP["keep.parquet"]}, fill=False, ro=True,
                   tmpdir=case.tmp)
    refused(got["res"], "keep.parquet", ("read-only",))
    assert got["after"] == got["before"]
    assert not (case.root / "MARK").exists(), "the command ran though its output cannot be written"


# --------------------------------------------------------------------------- an input renamed over while read


def test_input_renamed_over_while_diff_reads_it(case, reference):
    """The bad trace is renamed over again and again (bad.parquet, good0.parquet in turn) while
    `baseline diff good1 moving.parquet` reads it: the answer is that of one whole file -- the
    bad run's against good1, or good0's -- or one line naming it (exit 2); never a mix, a
    traceback or a hang."""
    target = case.inp / "moving.parquet"
    shutil.copyfile(BAD, target)
    srcs = [case.inp / "src-bad.parquet", case.inp / "src-good0.parquet"]
    shutil.copyfile(BAD, srcs[0])
    shutil.copyfile(GOOD0, srcs[1])
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        while not stop.is_set():
            src = srcs[swaps[0] % 2]
            tmp = case.inp / f".swap-{swaps[0] % 2}"
            with contextlib.suppress(FileNotFoundError):  # left by a trial stopped between the two
                os.unlink(tmp)
            os.link(src, tmp)
            os.replace(tmp, target)
            swaps[0] += 1

    answers = []
    for _ in range(3):
        before = swaps[0]
        thread = threading.Thread(target=swap, daemon=True)
        thread.start()
        try:
            res = run([BASELINE, "diff", "--json", GOOD1, target], case.cwd)
        finally:
            stop.set()
            thread.join(10)
            stop.clear()
        assert swaps[0] > before, "this trial replaced the file while it was read"
        for stale in case.inp.glob(".swap-*"):  # a swap stopped between its link and its rename
            stale.unlink()
        if res.rc == 2:
            refused(res, "moving.parquet")
            answers.append("refused")
            continue
        clean(res, (0, 1))
        got = (res.rc, json.loads(res.out)["bifurcation"])
        assert got in (reference["g1-bad"], reference["g1-good0"]), got
        answers.append(got[0])
    assert swaps[0] > 10, "the file was replaced while it was read"
    leftovers = sorted(p.name for p in case.inp.iterdir())
    assert leftovers == ["moving.parquet", "src-bad.parquet", "src-good0.parquet"], leftovers


# --------------------------------------------------------------------------- odd file kinds inside a spool or a dataset


def _rows(ds: Path, table: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in sorted((ds / table).glob("date=*/host=*/*.parquet")))


@pytest.fixture(scope="module")
def spool(fleet) -> Path:
    root = fleet["root"] / "spool48"
    clean(run([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "5", "--spool", "-o", root],
              fleet["root"]))
    return root / "spool"


def test_ingest_quarantines_fifos_sockets_and_directories_in_a_spool(spool, case):
    """docs/airflow.md: "Bad input never stops the flow. A snapshot file that cannot be read ... is
    moved to `quarantine/<host>/<snapshot>/<file>` with `<file>.reason` (one line: file, column,
    expected, found); the rest of the snapshot and of the spool is ingested"; architecture.md: "a
    file or FIFO where a snapshot directory belongs ... [is] quarantined with what was found".
    Here a snapshot's events.parquet is a FIFO (no writer), its counters.parquet a socket, another
    snapshot's events.parquet a directory, and a FIFO stands where a snapshot directory belongs:
    no hang, exit 0, each quarantined with a one-line reason naming it, every other row ingested."""
    whole = case.out / "whole"
    clean(run([BASELINE, "ingest", "--keep-spool", "--quarantine", case.out / "q0", spool, whole], case.cwd))
    odd = case.root / "spool"
    shutil.copytree(spool, odd, symlinks=True)
    hosts = sorted(p for p in odd.iterdir() if p.is_dir())
    snaps = sorted(p for p in hosts[0].iterdir() if p.name.startswith("snap-"))
    lost = {"events": 0, "counters": 0}
    import pyarrow.parquet as pq

    fifo_snap, dir_snap = snaps[1], snaps[2]
    lost["events"] += pq.read_metadata(fifo_snap / "events.parquet").num_rows
    lost["counters"] += pq.read_metadata(fifo_snap / "counters.parquet").num_rows
    lost["events"] += pq.read_metadata(dir_snap / "events.parquet").num_rows
    (fifo_snap / "events.parquet").unlink()
    os.mkfifo(fifo_snap / "events.parquet")
    (fifo_snap / "counters.parquet").unlink()
    bind_socket(fifo_snap / "counters.parquet", case.holder)
    (dir_snap / "events.parquet").unlink()
    (dir_snap / "events.parquet").mkdir()
    stray = hosts[1] / "snap-20261128T005959.000Z-999999"
    os.mkfifo(stray)
    ds = case.out / "ds"
    q = case.out / "q"
    res = run([BASELINE, "ingest", "--quarantine", q, odd, ds], case.cwd, timeout=HANG)
    clean(res)
    assert _rows(ds, "events") == _rows(whole, "events") - lost["events"]
    assert _rows(ds, "counters") == _rows(whole, "counters") - lost["counters"]
    reasons = {p.relative_to(q).as_posix(): p.read_text() for p in q.rglob("*.reason")}
    for bad in (f"{fifo_snap.name}/events.parquet", f"{fifo_snap.name}/counters.parquet",
                f"{dir_snap.name}/events.parquet", stray.name):
        hits = [k for k in reasons if k.endswith(bad + ".reason")]
        assert len(hits) == 1, (bad, sorted(reasons))
        text = reasons[hits[0]]
        assert len(text.strip().splitlines()) == 1, text
        assert Path(bad).name in text, text
    assert not [p for p in ds.rglob(".*") if p.name != ".tracebase.lock"], "no temporaries in the dataset"


def test_readers_of_a_dataset_holding_a_fifo_part_do_not_hang(fleet, case):
    """A dataset partition file that is a FIFO (no writer): inputs are "regular files only,
    checked on the open descriptor before a byte is read (a FIFO would hang the open)": learn,
    audit, coverage and export answer -- a refusal naming it (exit 2) or done without it --
    with no hang and no traceback."""
    ds = case.root / "ds"
    shutil.copytree(fleet["ds"], ds, symlinks=True)
    part = next((ds / "events").glob("date=*/host=*/")) / "part-fifo.parquet"
    os.mkfifo(part)
    for argv in ([BASELINE, "learn", ds, "-o", case.out / "m.parquet"],
                 [BASELINE, "audit", ds, "-o", case.out / "audit"],
                 [BASELINE, "export", ds / "events", "-o", case.out / "x.json"]):
        res = run(argv, case.cwd, timeout=HANG)
        if res.rc == 2:
            refused(res, "part-fifo.parquet")
        else:
            clean(res)
    assert stat.S_ISFIFO(os.lstat(part).st_mode)
