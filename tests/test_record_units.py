"""Recorder pieces that need no BPF: syscall specs, arg rendering, path/fd resolution."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

import pytest

from tracer.record import syscalls
from tracer.record.fdtable import PathResolver, as_int32, clean
from tracer.record.recorder import (
    CommandNotExecutable,
    CommandNotFound,
    exit_status_of,
    resolve_command,
)

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
    # a wait for one child against a reaper's wait for any (whose ECHILD is routine)
    wait4, waitid = syscalls.SPECS["wait4"], syscalls.SPECS["waitid"]
    assert syscalls.render_arg(wait4, args(4242, 0, 0)) == "pid"
    assert syscalls.render_arg(wait4, args(4242, 0, 1)) == "pid"  # WNOHANG: polls or blocks by timing
    assert syscalls.render_arg(wait4, args(0xFFFFFFFFFFFFFFFF, 0, 1)) is None  # -1: any child
    assert syscalls.render_arg(waitid, args(3, 5, 0, 4)) == "pid"  # P_PIDFD, WEXITED
    assert syscalls.render_arg(waitid, args(0, 0, 0, 4)) is None  # P_ALL


def test_int32_and_clean():
    assert as_int32(AT_FDCWD_REG) == -100 and as_int32(0xFFFFFF9C) == -100 and as_int32(3) == 3
    assert clean("/a//b/./c/") == "/a/b/c" and clean("/x/../y") == "/x/../y"


def feed3(res: PathResolver, pid, name, argv, ret=0, s1=None, s2=None, ppid=1, pair=None):
    """(path, path2, arg) of one call fed to the resolver."""
    spec = syscalls.SPECS.get(name)
    failed = -4095 <= ret < 0
    return res.apply(pid, ppid, name, spec, argv, ret, failed, s1, s2, pair)


def feed(res: PathResolver, pid, name, argv, ret=0, s1=None, s2=None, ppid=1):
    """(path, arg) of one call fed to the resolver."""
    path, _, arg = feed3(res, pid, name, argv, ret, s1, s2, ppid)
    return path, arg


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
    # rename: second path resolved into path2; symlink target kept raw
    assert feed3(res, 10, "renameat2", args(AT_FDCWD_REG, 0, 4, 0, 1), 0, "a", "b") == (
        "/etc/a", "/etc/b", "RENAME_NOREPLACE")
    assert feed3(res, 10, "symlinkat", args(0, AT_FDCWD_REG, 0), -17, "l", "../t") == ("/etc/l", "../t", None)
    assert feed3(res, 10, "linkat", args(4, 0, AT_FDCWD_REG, 0, 0), 0, "x", "/tmp/y") == ("/etc/x", "/tmp/y", None)
    # pipe2: both new fds known as pipes (close-on-exec per its flags); sendfile's second fd
    feed3(res, 10, "pipe2", args(0, 0o2000000), 0, pair=(5, 6))
    assert feed(res, 10, "write", args(6), 3)[0] == "pipe:"
    assert feed3(res, 10, "sendfile", args(5, 3, 0, 10), 10) == ("pipe:", "/work/data/in.txt", None)
    # splice: the end that is no pipe labels the call, whichever argument it is (a full volume's
    # ENOSPC at fd_out was named `pipe:`, fd_in); tee's two ends are both pipes
    assert feed3(res, 10, "splice", args(5, 0, 3, 0, 10, 1), -28) == ("/work/data/in.txt", "pipe:", None)
    assert feed3(res, 10, "splice", args(3, 0, 6, 0, 10, 1), 10) == ("/work/data/in.txt", "pipe:", None)
    assert feed3(res, 10, "tee", args(5, 6, 10, 0), 10) == ("pipe:", "pipe:", None)
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


def test_resolver_empty_path_not_read_and_setns():
    """glibc's fexecve passes a "" from its read-only data, which a forked child has not
    touched: the BPF side cannot read it (no string), yet AT_EMPTY_PATH says the call is about
    its fd -- labelled with the fd's path (fexecve_script_cloexec: main left it unlabelled).
    setns is labelled with its namespace file's path."""
    res = PathResolver("/work")
    feed(res, 10, "openat", args(AT_FDCWD_REG, 0, 0o2000000), 3, "/opt/job/bin/worker")
    feed(res, 10, "clone", args(0x1200011), 11)
    assert feed(res, 11, "execveat", args(3, 0, 0, 0, 0x1000), -2, None, ppid=10)[0] == "/opt/job/bin/worker"
    assert feed(res, 10, "newfstatat", args(3, 0, 0, 0x1000), 0, None)[0] == "/opt/job/bin/worker"
    # without AT_EMPTY_PATH an unread path stays unknown (it was a name relative to the fd)
    assert feed(res, 10, "newfstatat", args(3, 0, 0, 0), -2, None)[0] is None
    feed(res, 10, "openat", args(AT_FDCWD_REG, 0, 0), 4, "/run/netns/job")
    assert feed(res, 10, "setns", args(4, 0x40000000), -22)[0] == "/run/netns/job"


def test_resolver_sockets_and_unknown_dirfd():
    res = PathResolver("/")
    feed(res, 5, "socket", args(2, 1), 3)
    addr = "inet:127.0.0.1:9"
    assert feed(res, 5, "connect", args(3, 0, 16), -111, addr)[0] == addr
    assert feed(res, 5, "close", args(3))[0] == addr
    # relative to an fd we never saw: kept as recorded
    assert feed(res, 5, "openat", args(42, 0, 0), -2, "rel")[0] == "rel"


def test_resolver_message_queues_named_as_queues():
    """glibc's mq_open/mq_unlink pass the queue's name without its "/": it names a queue in the
    IPC namespace, not a file under the cwd (main left mq_open unlabelled, so a leftover queue's
    mq_open EEXIST had no path; mqueue_excl_leftover). The queue's descriptor labels the calls
    on it, the columnar decoder agreeing."""
    res = PathResolver("/work")
    assert feed(res, 5, "mq_open", args(0, 0o302), -17, "tb13-jobq")[0] == "mqueue:/tb13-jobq"
    assert feed(res, 5, "mq_open", args(0, 0o2), 3, "tb13-jobq")[0] == "mqueue:/tb13-jobq"
    assert feed(res, 5, "mq_timedsend", args(3, 0, 4, 0, 0), -11)[0] == "mqueue:/tb13-jobq"
    assert feed(res, 5, "mq_timedreceive", args(3, 0, 128, 0, 0), -90)[0] == "mqueue:/tb13-jobq"
    assert feed(res, 5, "mq_unlink", args(0), 0, "tb13-jobq")[0] == "mqueue:/tb13-jobq"
    from tracer.record.decode import GENERAL, _kind

    # a bare name is no relative path: the columnar decoder takes the full rules for it
    assert _kind(syscalls.SPECS["mq_unlink"]) == GENERAL and _kind(syscalls.SPECS["mq_open"]) == GENERAL


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
    # found but not runnable: 126 as in a shell (`sh -c ./s.sh` says "Permission denied", 126)
    with pytest.raises(CommandNotExecutable, match="not an executable") as info:
        resolve_command(str(script))
    assert info.value.exit_status == 126


# --- columnar decoding == feeding every event to PathResolver.apply ------------------------
def reference_columns(decoded, names, cwd, initial_fds=None, cloexec_fds=frozenset()):
    """The per-event rules, applied to every event in order (what tracer.record.decode speeds up)."""
    from tracer.record.decode import HEADER_SIZE, fd_pair, output_text

    res = PathResolver(cwd, initial_fds, cloexec_fds)
    paths, paths2, argcol, outputs = [], [], [], []
    for i, row in enumerate(decoded.head):
        nr = int(row["nr"])
        name = names.get(nr, f"syscall_{nr}")
        spec = syscalls.SPECS.get(name)
        record = decoded.record(i)
        len1, len2, len3 = int(row["len1"]), int(row["len2"]), int(row["len3"])
        s1 = s2 = None
        if len1:
            raw = record[HEADER_SIZE:HEADER_SIZE + len1]
            s1 = (syscalls.sockaddr_text(raw) if int(row["spec"]) & syscalls.SPEC_SOCKADDR
                  else raw.rstrip(b"\x00").decode("utf-8", "surrogateescape"))
        if len2:
            s2 = record[HEADER_SIZE + len1:HEADER_SIZE + len1 + len2].rstrip(b"\x00").decode(
                "utf-8", "surrogateescape")
        third = record[HEADER_SIZE + len1 + len2:HEADER_SIZE + len1 + len2 + len3]
        ret = int(row["ret"])
        failed = -4095 <= ret < 0
        pair = fd_pair(third) if spec is not None and spec.fdpair is not None and not failed else None
        path, path2, arg = res.apply(int(row["pid"]), int(row["ppid"]), name, spec, row["args"], ret,
                                     failed, s1, s2, pair, int(row["tid"]), int(row["ts_ns"]),
                                     int(row["ts_ns"]) + int(row["latency_ns"]))
        paths.append(path)
        paths2.append(path2)
        argcol.append(arg)
        output = None
        if spec is not None and spec.output is not None and len3:
            output = output_text(as_int32(row["args"][0]), path, third, ret)
        outputs.append(output)
    return paths, paths2, argcol, outputs


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
        (10, 1, "pipe2", args(0, 0o2000000), 0, None, None, (20, 21)),
        (10, 1, "write", args(21), 6, None, None, b"hello\n"),  # a pipe: kept
        (10, 1, "write", args(2), 9, None, None, b"err: \x1b[1mbad\n"),  # stderr, partial
        (10, 1, "write", args(4), 4, None, None, b"file"),  # /etc (not an output): not kept
        (10, 1, "socket", args(2, 1 | 0o2000000), 5, None, None),
        (10, 1, "connect", args(5, 0, 16), -111, inet, None),
        (10, 1, "sendto", args(5, 0, 0, 0, 0, 0), -32, None, None),
        (10, 1, "sendto", args(5, 0, 3, 0, 0, 0), 3, None, None, b"abc"),  # inet: not kept
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
    for ts, (pid, ppid, name, regs, ret, s1, s2, *extra) in enumerate(calls):
        head = np.zeros(1, HEADER)
        head["ts_ns"], head["pid"], head["tid"], head["ppid"] = 1000 + ts, pid, pid, ppid
        head["nr"], head["ret"], head["args"] = nr[name], ret, regs
        head["spec"], head["comm"] = bits.get(nr[name], 0), b"prog"
        data1 = s1 if isinstance(s1, bytes) else (s1.encode() + b"\0" if s1 is not None else b"")
        data2 = s2.encode() + b"\0" if s2 is not None else b""
        data3 = b""
        if extra:
            third = extra[0]
            data3 = third if isinstance(third, bytes) else b"".join(
                fd.to_bytes(4, "little") for fd in third)
        head["len1"], head["len2"], head["len3"] = len(data1), len(data2), len(data3)
        out.append(head.tobytes() + data1 + data2 + data3)
    return out[1::2] + out[::2]  # arrival order differs from entry order


def test_columnar_decoding_matches_per_event_rules():
    from tracer.record.decode import batch_of, build_table, decode, resolve_columns

    names = syscalls.X86_64_NAMES
    decoded = decode(batch_of(synthetic_records()), [59, 322], trim_before_exec_of=None)
    assert decoded.head["ts_ns"].tolist() == sorted(decoded.head["ts_ns"].tolist())
    fds = {0: "/dev/null", 1: "/dev/pts/0", 9: "/var/log/app.log"}
    got = resolve_columns(decoded, names, "/work", fds, frozenset({9}))
    want = reference_columns(decoded, names, "/work", fds, frozenset({9}))
    assert got == want
    paths, paths2, argcol, output = got
    probes = [names[int(nr)] for nr in decoded.head["nr"]]
    at = {probe: i for i, probe in reversed(list(enumerate(probes)))}  # first row of each
    assert paths[0] == "/work/data/in.txt" and paths[6] == "/usr/lib/x"
    assert paths[at["connect"]] == "inet:127.0.0.1:80"
    # two paths: both resolved (dirfd 4 is /etc); a symlink's target kept as written
    assert (paths[at["renameat2"]], paths2[at["renameat2"]]) == ("/etc/a", "/etc/b")
    assert (paths[at["symlinkat"]], paths2[at["symlinkat"]]) == ("/etc/l", "../t")
    # output: a pipe made by pipe2 and stderr kept (only the bytes written), a file not
    writes = [(paths[i], output[i]) for i, p in enumerate(probes) if p == "write"]
    assert writes[1:4] == [("pipe:", "hello\n"), (None, "err: \x1b[1m"), ("/etc", None)]
    assert output[at["sendto"]] is None and paths[at["sendto"]] == "inet:127.0.0.1:80"
    stat12 = [i for i, p in enumerate(probes) if p == "newfstatat" and decoded.head["pid"][i] == 12]
    assert paths[stat12[0]] == "/etc/rel"  # pid 12, fork unseen: a copy of its parent (cwd /etc) now
    reads11 = [i for i, p in enumerate(probes) if p == "read" and decoded.head["pid"][i] == 11]
    assert paths[reads11[0]] == "/var/log/app.log" and paths[reads11[2]] is None  # dropped at exec (cloexec)
    table = build_table(decoded.head, got, names, dict(
        trace_id="t", kind="full", command="prog", exit_status=None, start_time=datetime.now(UTC),
        end_time=datetime.now(UTC), host="h", kernel_release="k", lost_events=0, job_id=None,
        metadata={}), failures_only=True)
    assert table.column("probe").to_pylist() == [
        "newfstatat", "faccessat2", "fstat", "symlinkat", "connect", "sendto", "openat", "read"]
    assert table.column("path2").to_pylist()[3] == "../t"
    assert table.column("exit_status").null_count == table.num_rows



def test_socket_error_in_getsockopts_value_is_the_events_errno():
    """getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) returns 0 and the error a non-blocking
    connect ended with in err: the BPF side copies those 4 bytes (SPEC_SOCKERR, where output
    goes), decode makes them the event's errno with ret 0 and arg SO_ERROR (strace:
    `getsockopt(3, SOL_SOCKET, SO_ERROR, [ECONNREFUSED], [4]) = 0`). Other options, SO_ERROR
    0, a failed getsockopt and values that are no errno stay as they are; -x keeps the refusal."""
    import numpy as np

    from tracer.record.decode import (
        HEADER,
        batch_of,
        build_table,
        decode,
        resolve_columns,
        socket_errors,
    )

    nr = {v: k for k, v in syscalls.X86_64_NAMES.items()}
    bits = syscalls.bpf_spec_table()
    assert bits[nr["getsockopt"]] & syscalls.SPEC_SOCKERR
    assert not any(b & syscalls.SPEC_SOCKERR for n, b in bits.items() if n != nr["getsockopt"])
    inet = bytes([2, 0, 0x1F, 0x90, 127, 0, 0, 1]) + bytes(8)  # 127.0.0.1:8080
    so_error = (syscalls.SOL_SOCKET, syscalls.SO_ERROR)
    calls = [  # (name, args, ret, str1, third bytes)
        ("socket", args(2, 1 | 0o4000), 3, None, b""),
        ("connect", args(3, 0, 16), -115, inet, b""),
        ("getsockopt", args(3, *so_error, 0x7000, 0x7008), 0, None, (111).to_bytes(4, "little")),
        ("getsockopt", args(3, syscalls.SOL_SOCKET, 3, 0x7000, 0x7008), 0, None, b""),  # SO_TYPE: not read
        ("getsockopt", args(3, *so_error, 0x7000, 0x7008), 0, None, bytes(4)),  # connected: no error
        ("getsockopt", args(3, *so_error, 0, 0x7008), -14, None, b""),  # EFAULT: the call failed
        ("getsockopt", args(3, *so_error, 0x7000, 0x7008), 0, None, (-5).to_bytes(4, "little", signed=True)),
        ("getsockopt", args(3, *so_error, 0x7000, 0x7008), 0, None, (5000).to_bytes(4, "little")),
        ("getsockopt", args(3, *so_error, 0x7000, 0x7008), 0, None, (110).to_bytes(4, "little")),
    ]
    records = []
    for ts, (name, regs, ret, s1, third) in enumerate(calls):
        head = np.zeros(1, HEADER)
        head["ts_ns"], head["pid"], head["tid"], head["ppid"] = 1000 + ts, 10, 10, 1
        head["nr"], head["ret"], head["args"] = nr[name], ret, regs
        head["spec"], head["comm"] = bits.get(nr[name], 0), b"client"
        data1 = s1 or b""
        head["len1"], head["len3"] = len(data1), len(third)
        records.append(head.tobytes() + data1 + third)
    names = syscalls.X86_64_NAMES
    decoded = decode(batch_of(records), [59, 322], trim_before_exec_of=None)
    errs = socket_errors(decoded)
    assert errs.tolist() == [0, 0, -111, 0, 0, 0, 0, 0, -110]
    columns = resolve_columns(decoded, names, "/")
    assert columns == reference_columns(decoded, names, "/")
    trace = dict(trace_id="t", kind="failure", command="client", exit_status=1, start_time=datetime.now(UTC),
                 end_time=datetime.now(UTC), host="h", kernel_release="k", lost_events=0, job_id=None, metadata={})
    table = build_table(decoded.head, columns, names, trace, sock_errors=errs)
    rows = list(zip(*(table.column(c).to_pylist() for c in ("probe", "ret", "errno", "path", "arg")), strict=True))
    assert rows[1] == ("connect", -115, "EINPROGRESS", "inet:127.0.0.1:8080", None)
    assert rows[2] == ("getsockopt", 0, "ECONNREFUSED", "inet:127.0.0.1:8080", "SO_ERROR")
    assert rows[3] == ("getsockopt", 0, None, "inet:127.0.0.1:8080", None)
    assert rows[4] == ("getsockopt", 0, None, "inet:127.0.0.1:8080", "SO_ERROR")
    assert rows[5] == ("getsockopt", -14, "EFAULT", "inet:127.0.0.1:8080", "SO_ERROR")
    assert [r[2] for r in rows[6:]] == [None, None, "ETIMEDOUT"]
    only = build_table(decoded.head, columns, names, trace, failures_only=True, sock_errors=errs)
    assert list(zip(only.column("probe").to_pylist(), only.column("ret").to_pylist(),
                    only.column("errno").to_pylist(), strict=True)) == [
        ("connect", -115, "EINPROGRESS"), ("getsockopt", 0, "ECONNREFUSED"), ("getsockopt", -14, "EFAULT"),
        ("getsockopt", 0, "ETIMEDOUT")]

def test_rt_sigreturn_returns_no_status():
    """rt_sigreturn "returns" the register it restores: after a signal handler that interrupted
    a failed stat, -ENOENT. That is the stat's result, reported at the stat; rt_sigreturn has no
    errno, and -x does not keep it (make -j2's SIGCHLD named "rt_sigreturn ENOENT" in CI)."""
    import numpy as np

    from tracer.record.decode import HEADER, batch_of, build_table, decode, resolve_columns

    nr = {v: k for k, v in syscalls.X86_64_NAMES.items()}
    records = []
    for ts, (name, ret) in enumerate([("newfstatat", -2), ("rt_sigreturn", -2), ("rt_sigreturn", 0)]):
        head = np.zeros(1, HEADER)
        head["ts_ns"], head["pid"], head["tid"], head["ppid"] = 1000 + ts, 10, 10, 1
        head["nr"], head["ret"], head["comm"] = nr[name], ret, b"make"
        records.append(head.tobytes())
    names = syscalls.X86_64_NAMES
    decoded = decode(batch_of(records), [59, 322], trim_before_exec_of=None)
    columns = resolve_columns(decoded, names, "/")
    trace = dict(trace_id="t", kind="good", command="make", exit_status=0, start_time=datetime.now(UTC),
                 end_time=datetime.now(UTC), host="h", kernel_release="k", lost_events=0, job_id=None, metadata={})
    table = build_table(decoded.head, columns, names, trace)
    assert list(zip(table.column("probe").to_pylist(), table.column("ret").to_pylist(),
                    table.column("errno").to_pylist(), strict=True)) == [
        ("newfstatat", -2, "ENOENT"), ("rt_sigreturn", -2, None), ("rt_sigreturn", 0, None)]
    only = build_table(decoded.head, columns, names, trace, failures_only=True)
    assert only.column("probe").to_pylist() == ["newfstatat"]


def test_ring_spans_walked_and_batches_split():
    """Ring buffer records (8-byte header: length with busy/discard bits, padded to 8) and
    the BPF side's per-CPU batches (records back to back, padded to 8) come apart exactly;
    a record copied while still busy is counted, never decoded."""
    from tracer.record.decode import batch_of, split_records
    from tracer.record.ringbuf import BUSY_BIT, DISCARD_BIT, samples

    def ring_record(payload: bytes, flags: int = 0) -> bytes:
        header = (len(payload) | flags).to_bytes(4, "little") + bytes(4)
        return header + payload + bytes(-len(payload) % 8)

    span = (ring_record(b"first") + ring_record(b"gone", DISCARD_BIT)
            + ring_record(b"x" * 13) + ring_record(b"half", BUSY_BIT) + ring_record(b"last"))
    got = samples([span[:24], span[24:]])  # two takes, split on a record boundary
    assert [got.data[o:o + n] for o, n in zip(got.offsets, got.lengths, strict=True)] == [
        b"first", b"x" * 13, b"last"]
    assert got.busy == 1

    records = synthetic_records()[:5]
    padded = [r + bytes(-len(r) % 8) for r in records]
    split = split_records([b"".join(padded[:2]), b"".join(padded[2:])])
    assert [split.data[o:o + n] for o, n in zip(split.offsets, split.lengths, strict=True)] == records
    plain = batch_of(records)
    assert [plain.data[o:o + n] for o, n in zip(plain.offsets, plain.lengths, strict=True)] == records


def test_btf_type_ids(tmp_path, monkeypatch):
    """tracer.record.btf finds kernel type ids by kind and name in the running kernel's BTF
    (no root needed to read it), refuses data that is not BTF, and says None without it."""
    import tracer.btf as btf
    from tracer.record.btf import pt_regs_cast_ids

    if not btf.VMLINUX_BTF.exists():
        print("SKIP: no /sys/kernel/btf/vmlinux", file=sys.stderr)
        pytest.skip("no kernel BTF")
    data = btf.VMLINUX_BTF.read_bytes()
    ids = btf.type_ids(data, {("struct", "pt_regs"), ("struct", "task_struct"), ("func", "no_such_function_x")})
    assert set(ids) == {("struct", "pt_regs"), ("struct", "task_struct")}
    assert ids[("struct", "pt_regs")] != ids[("struct", "task_struct")] and min(ids.values()) >= 1
    # the same ids as a plain walk of every type comparing names (the first of each kind and name)
    types, strings = btf.btf_sections(data)
    wanted = {("struct", "pt_regs"), ("func", "bpf_rdonly_cast"), ("struct", "file"), ("func", "vfs_read"),
              ("func", "task_struct")}
    plain: dict[tuple[str, str], int] = {}
    for type_id, (_off, name_off, _info, kind, _vlen) in enumerate(btf.btf_types(types), start=1):
        name = strings[name_off: strings.find(b"\0", name_off)].decode()
        for label, code in btf.KIND.items():
            if kind == code and (label, name) in wanted:
                plain.setdefault((label, name), type_id)
    assert btf.type_ids(data, wanted) == plain and len(plain) == 4
    with pytest.raises(ValueError):
        btf.type_ids(b"\x00" * 64, {("struct", "pt_regs")})
    pt_regs_cast_ids.cache_clear()
    monkeypatch.setattr(btf, "VMLINUX_BTF", tmp_path / "missing")
    assert pt_regs_cast_ids() is None
    pt_regs_cast_ids.cache_clear()
