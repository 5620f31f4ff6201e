"""Recorder pieces that need no BPF: syscall specs, arg rendering, path/fd resolution."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from tracer.record import syscalls
from tracer.record.fdtable import PathResolver, as_int32, clean
from tracer.record.recorder import CommandNotFound, exit_status_of, resolve_command

AT_FDCWD_REG = 0xFFFFFFFFFFFFFF9C


def args(*values: int) -> list[int]:
    return [*values, *[0] * (6 - len(values))]


def test_syscall_table_and_bpf_specs():
    names = syscalls.X86_64_NAMES
    assert names[257] == "openat" and names[59] == "execve" and names[231] == "exit_group"
    table = syscalls.bpf_spec_table()
    nr = {v: k for k, v in names.items()}
    assert table[nr["openat"]] & 7 == 2  # path is argument 1 (+1)
    assert table[nr["openat"]] & syscalls.SPEC_STATE
    assert (table[nr["renameat2"]] >> syscalls.SPEC_PATH2_SHIFT) & 7 == 4
    assert table[nr["connect"]] & syscalls.SPEC_SOCKADDR and table[nr["connect"]] & 7 == 2
    assert table[nr["exit_group"]] & syscalls.SPEC_AT_ENTER
    assert nr["read"] not in table  # fd-only calls need nothing from BPF


def test_arg_rendering():
    assert syscalls.open_flags(0o2000000) == "O_RDONLY|O_CLOEXEC"
    assert syscalls.open_flags(0o1101) == "O_WRONLY|O_CREAT|O_TRUNC"
    assert syscalls.open_flags(0o4010002) == "O_RDWR|O_SYNC"
    assert syscalls.access_mode(0) == "F_OK" and syscalls.access_mode(6) == "R_OK|W_OK"
    assert syscalls.socket_arg(2, 1 | 0o2000000) == "AF_INET,SOCK_STREAM|SOCK_CLOEXEC"
    inet = bytes([2, 0, 0x1F, 0x90, 127, 0, 0, 1]) + bytes(8)
    assert syscalls.sockaddr_text(inet) == "inet:127.0.0.1:8080"
    assert syscalls.sockaddr_text(b"\x01\x00/run/x.sock\x00") == "unix:/run/x.sock"
    assert syscalls.sockaddr_text(b"\x01\x00\x00abstract") == "unix:@abstract"
    six = bytes([10, 0, 0, 80]) + bytes(4) + bytes(15) + b"\x01" + bytes(4)
    assert syscalls.sockaddr_text(six) == "inet6:[::1]:80"


def test_int32_and_clean():
    assert as_int32(AT_FDCWD_REG) == -100 and as_int32(0xFFFFFF9C) == -100 and as_int32(3) == 3
    assert clean("/a//b/./c/") == "/a/b/c" and clean("/x/../y") == "/x/../y"


def feed(res: PathResolver, pid, name, argv, ret=0, s1=None, s2=None, ppid=1):
    spec = syscalls.SPECS.get(name)
    failed = -4095 <= ret < 0
    return res.apply(pid, ppid, name, spec, argv, ret, failed, s1, s2)


def test_resolver_dirfd_cwd_dup_fork_exec():
    res = PathResolver("/work", {0: "/dev/null", 1: "/dev/pts/0"})
    # relative to cwd; open flags rendered
    assert feed(res, 10, "openat", args(AT_FDCWD_REG, 0, 0o2000000), 3, "data/in.txt") == (
        "/work/data/in.txt", "O_RDONLY|O_CLOEXEC")
    # fd-based calls carry the fd's path, inherited fds included
    assert feed(res, 10, "read", args(3), 10)[0] == "/work/data/in.txt"
    assert feed(res, 10, "write", args(1), 5)[0] == "/dev/pts/0"
    # dirfd resolution
    feed(res, 10, "openat", args(AT_FDCWD_REG, 0, 0o200000), 4, "/etc")
    assert feed(res, 10, "newfstatat", args(4, 0, 0, 0), -2, "hosts")[0] == "/etc/hosts"
    assert feed(res, 10, "newfstatat", args(4, 0, 0, 0x1000), 0, "")[0] == "/etc"  # AT_EMPTY_PATH
    # dup2 and close
    feed(res, 10, "dup2", args(3, 7), 7)
    assert feed(res, 10, "fstat", args(7))[0] == "/work/data/in.txt"
    feed(res, 10, "close", args(7))
    assert feed(res, 10, "fstat", args(7), -9)[0] is None
    # chdir / fchdir
    feed(res, 10, "chdir", args(0), 0, "sub")
    assert feed(res, 10, "unlink", args(0), 0, "x")[0] == "/work/sub/x"
    feed(res, 10, "fchdir", args(4))
    assert feed(res, 10, "mkdir", args(0), 0, "new")[0] == "/etc/new"
    # rename: second path resolved into arg; symlink target kept raw
    assert feed(res, 10, "renameat2", args(AT_FDCWD_REG, 0, 4, 0), 0, "a", "b") == ("/etc/a", "/etc/b")
    assert feed(res, 10, "symlinkat", args(0, AT_FDCWD_REG, 0), -17, "l", "../t") == ("/etc/l", "../t")
    # fork: the child gets a copy; exec drops O_CLOEXEC fds (fd 3 was opened with it)
    feed(res, 10, "clone", args(0x1200011), 11)
    feed(res, 10, "close", args(4))
    assert feed(res, 11, "fstat", args(4), ppid=10)[0] == "/etc"
    feed(res, 11, "execve", args(0), 0, "/bin/true", ppid=10)
    assert feed(res, 11, "read", args(3), ppid=10)[0] is None
    assert feed(res, 11, "read", args(0), ppid=10)[0] == "/dev/null"
    # a thread (CLONE_THREAD) does not get its own table
    feed(res, 10, "clone", args(0x3D0F00), 12)
    assert 12 not in res.procs


def test_resolver_sockets_and_unknown_dirfd():
    res = PathResolver("/")
    feed(res, 5, "socket", args(2, 1), 3)
    addr = "inet:127.0.0.1:9"
    assert feed(res, 5, "connect", args(3, 0, 16), -111, addr)[0] == addr
    assert feed(res, 5, "close", args(3))[0] == addr
    # relative to an fd we never saw: kept as recorded
    assert feed(res, 5, "openat", args(42, 0, 0), -2, "rel")[0] == "rel"


def test_exit_status_and_command_lookup(tmp_path):
    assert exit_status_of(3 << 8) == 3
    assert exit_status_of(9) == 128 + 9
    assert resolve_command("sh", {"PATH": "/usr/bin:/bin"}).endswith("/sh")
    with pytest.raises(CommandNotFound, match="command not found") as info:
        resolve_command("no-such-command-xyz", {"PATH": str(tmp_path)})
    assert info.value.exit_status == 127
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o644)
    with pytest.raises(CommandNotFound, match="not an executable"):
        resolve_command(str(script))


# --- columnar decoding == feeding every event to PathResolver.apply ------------------------
def reference_columns(decoded, names, cwd, initial_fds=None, cloexec_fds=frozenset()):
    """The per-event rules, applied to every event in order (what tracer.record.decode speeds up)."""
    from tracer.record.decode import HEADER_SIZE

    res = PathResolver(cwd, initial_fds, cloexec_fds)
    paths, argcol = [], []
    for row, src in zip(decoded.head, decoded.source.tolist(), strict=True):
        nr = int(row["nr"])
        name = names.get(nr, f"syscall_{nr}")
        spec = syscalls.SPECS.get(name)
        chunk = decoded.chunks[src]
        len1, len2 = int(row["len1"]), int(row["len2"])
        s1 = s2 = None
        if len1:
            raw = chunk[HEADER_SIZE:HEADER_SIZE + len1]
            s1 = (syscalls.sockaddr_text(raw) if int(row["spec"]) & syscalls.SPEC_SOCKADDR
                  else raw.rstrip(b"\x00").decode("utf-8", "surrogateescape"))
        if len2:
            s2 = chunk[HEADER_SIZE + len1:HEADER_SIZE + len1 + len2].rstrip(b"\x00").decode(
                "utf-8", "surrogateescape")
        ret = int(row["ret"])
        path, arg = res.apply(int(row["pid"]), int(row["ppid"]), name, spec, row["args"], ret,
                              -4095 <= ret < 0, s1, s2)
        paths.append(path)
        argcol.append(arg)
    return paths, argcol


def synthetic_records() -> list[bytes]:
    """Raw ring-buffer records of a small two-process run, shuffled like per-CPU arrival."""
    import numpy as np

    from tracer.record.decode import HEADER

    nr = {v: k for k, v in syscalls.X86_64_NAMES.items()}
    bits = syscalls.bpf_spec_table()
    inet = bytes([2, 0, 0, 80, 127, 0, 0, 1]) + bytes(8)
    calls = [  # (pid, ppid, name, args, ret, str1, str2)
        (10, 1, "openat", args(AT_FDCWD_REG, 0, 0o2000000), 3, "data/in.txt", None),
        (10, 1, "read", args(3), 10, None, None),
        (10, 1, "write", args(1), 5, None, None),
        (10, 1, "openat", args(AT_FDCWD_REG, 0, 0o200000), 4, "/etc", None),
        (10, 1, "newfstatat", args(4, 0, 0, 0), -2, "hosts", None),
        (10, 1, "newfstatat", args(4, 0, 0, 0x1000), 0, "", None),
        (10, 1, "statx", args(AT_FDCWD_REG, 0, 0), 0, "/usr//lib/./x/", None),
        (10, 1, "access", args(0, 4), 0, "/etc/passwd", None),
        (10, 1, "faccessat2", args(AT_FDCWD_REG, 0, 6), -13, "rel/file", None),
        (10, 1, "dup2", args(3, 7), 7, None, None),
        (10, 1, "fstat", args(7), 0, None, None),
        (10, 1, "close", args(7), 0, None, None),
        (10, 1, "fstat", args(7), -9, None, None),
        (10, 1, "chdir", args(0), 0, "sub", None),
        (10, 1, "unlink", args(0), 0, "x", None),
        (10, 1, "fchdir", args(4), 0, None, None),
        (10, 1, "mkdir", args(0), 0, "new", None),
        (10, 1, "renameat2", args(AT_FDCWD_REG, 0, 4, 0), 0, "a", "b"),
        (10, 1, "symlinkat", args(0, AT_FDCWD_REG, 0), -17, "l", "../t"),
        (10, 1, "socket", args(2, 1 | 0o2000000), 5, None, None),
        (10, 1, "connect", args(5, 0, 16), -111, inet, None),
        (10, 1, "sendto", args(5, 0, 0, 0, 0, 0), -32, None, None),
        (10, 1, "close", args(5), 0, None, None),
        (10, 1, "getpid", args(), 10, None, None),
        (10, 1, "openat", args(AT_FDCWD_REG, 0, 0), -2, "nope", None),
        (10, 1, "creat", args(0, 0o644), 6, "new.txt", None),
        (10, 1, "write", args(6), 3, None, None),
        (10, 1, "openat", args(AT_FDCWD_REG, 0, 0), 8, None, None),  # path unreadable
        (10, 1, "read", args(8), 0, None, None),
        (10, 1, "clone", args(0x1200011), 11, None, None),
        (11, 10, "fstat", args(4), 0, None, None),
        (11, 10, "read", args(9), 0, None, None),  # inherited, close-on-exec
        (11, 10, "execve", args(0), 0, "/bin/true", None),
        (11, 10, "read", args(3), 0, None, None),
        (11, 10, "read", args(9), 0, None, None),
        (11, 10, "write", args(0), 0, None, None),
        (12, 10, "newfstatat", args(AT_FDCWD_REG, 0, 0, 0), 0, "rel", None),  # fork not seen
        (10, 1, "close_range", args(3, 0xFFFFFFFF, 0), 0, None, None),
        (10, 1, "read", args(3), -9, None, None),
        (10, 1, "exit_group", args(0), 0, None, None),
    ]
    out = []
    for ts, (pid, ppid, name, regs, ret, s1, s2) in enumerate(calls):
        head = np.zeros(1, HEADER)
        head["ts_ns"], head["pid"], head["tid"], head["ppid"] = 1000 + ts, pid, pid, ppid
        head["nr"], head["ret"], head["args"] = nr[name], ret, regs
        head["spec"], head["comm"] = bits.get(nr[name], 0), b"prog"
        data1 = s1 if isinstance(s1, bytes) else (s1.encode() + b"\0" if s1 is not None else b"")
        data2 = s2.encode() + b"\0" if s2 is not None else b""
        head["len1"], head["len2"] = len(data1), len(data2)
        out.append(head.tobytes() + data1 + data2)
    return out[1::2] + out[::2]  # arrival order differs from entry order


def test_columnar_decoding_matches_per_event_rules():
    from tracer.record.decode import build_table, decode, resolve_columns

    names = syscalls.X86_64_NAMES
    decoded = decode(synthetic_records(), [59, 322], trim_before_exec_of=None)
    assert decoded.head["ts_ns"].tolist() == sorted(decoded.head["ts_ns"].tolist())
    fds = {0: "/dev/null", 1: "/dev/pts/0", 9: "/var/log/app.log"}
    got = resolve_columns(decoded, names, "/work", fds, frozenset({9}))
    want = reference_columns(decoded, names, "/work", fds, frozenset({9}))
    assert got == want
    paths = got[0]
    assert paths[0] == "/work/data/in.txt" and paths[6] == "/usr/lib/x"
    assert paths[20] == "inet:127.0.0.1:80"
    assert paths[36] == "/etc/rel"  # pid 12, fork unseen: a copy of its parent (cwd /etc) now
    assert paths[31] == "/var/log/app.log" and paths[34] is None  # dropped at exec (cloexec)
    table = build_table(decoded.head, *got, names, dict(
        trace_id="t", kind="full", command="prog", exit_status=None, start_time=datetime.now(UTC),
        end_time=datetime.now(UTC), host="h", kernel_release="k", lost_events=0, job_id=None,
        metadata={}), failures_only=True)
    assert table.column("probe").to_pylist() == [
        "newfstatat", "faccessat2", "fstat", "symlinkat", "connect", "sendto", "openat", "read"]
    assert table.column("exit_status").null_count == table.num_rows
