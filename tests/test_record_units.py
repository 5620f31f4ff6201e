"""Recorder pieces that need no BPF: syscall specs, arg rendering, path/fd resolution."""

from __future__ import annotations

import os

import pytest

from tracer import syscalls
from tracer.fdtable import PathResolver, as_int32, clean
from tracer.record import CommandNotFound, exit_status_of, resolve_command

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
