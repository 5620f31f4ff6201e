"""`tracer record` on real programs with the real BPF program (root + bcc; need_bpf)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from conftest import tools_run_as_nobody
from record_support import ENV, record

from tracer.cli import main as tracer_main
from tracer.schema import read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]



def test_children_threads_and_exit_status(recorder, tmp_path):
    data = tmp_path / "input.txt"
    data.write_text("hello\n")
    script = tmp_path / "threaded.py"
    script.write_text(textwrap.dedent(f"""
        import threading
        def work():
            open({str(data)!r}).read()
        t = threading.Thread(target=work); t.start(); t.join()
    """))
    rec, df = record(recorder, ["/bin/sh", "-c", f"cat {data} >/dev/null; /usr/bin/python3 -S {script}; exit 5"])
    assert rec.exit_status == 5 and rec.lost_events == 0
    root = df["pid"][0]
    assert df["probe"][0] == "execve" and df["path"][0] == "/bin/sh"  # trace starts at the exec
    # fork + exec of cat, followed in the kernel
    cat_exec = df.filter((pl.col("probe") == "execve") & (pl.col("path") == "/usr/bin/cat"))
    assert cat_exec.height == 1 and cat_exec["ppid"][0] == root and cat_exec["pid"][0] != root
    cat_pid = cat_exec["pid"][0]
    opened = df.filter((pl.col("pid") == cat_pid) & (pl.col("probe") == "openat") & (pl.col("path") == str(data)))
    assert opened.height == 1 and opened["errno"][0] is None and opened["comm"][0] == "cat"
    # the thread's open is recorded with its own tid inside the python process
    in_thread = df.filter((pl.col("path") == str(data)) & (pl.col("tid") != pl.col("pid")) & (pl.col("probe") == "openat"))
    assert in_thread.height == 1 and in_thread["comm"][0] == "python3"
    assert df.filter(pl.col("probe") == "exit_group").height >= 3  # sh, cat, python
    # rows are in entry-time order, seq dense; latency non-negative
    assert df["seq"].to_list() == list(range(df.height))
    assert df["ts_ns"].is_sorted() and df["latency_ns"].drop_nulls().min() >= 0


def test_killed_command_exit_status(recorder):
    rec, df = record(recorder, ["/bin/sh", "-c", "kill -TERM $$"])
    assert rec.exit_status == 128 + 15
    assert df.filter(pl.col("probe") == "kill").height == 1


def test_dirfd_and_relative_paths_resolved(recorder, tmp_path):
    (tmp_path / "sub").mkdir()
    script = textwrap.dedent(f"""
        import os
        fd = os.open({str(tmp_path)!r}, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.stat("missing.cfg", dir_fd=fd)
        except FileNotFoundError:
            pass
        os.close(os.open("made.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
        os.chdir("{tmp_path}/sub")
        open("rel.txt", "w").close()
        os.rename("rel.txt", "../moved.txt")
    """)
    rec, df = record(recorder, ["/usr/bin/python3", "-S", "-c", script], cwd="/")
    assert rec.exit_status == 0
    stat = df.filter(pl.col("probe").is_in(["newfstatat", "statx"]) & pl.col("errno").eq("ENOENT")
                     & pl.col("path").str.starts_with(str(tmp_path)))
    assert stat["path"].to_list() == [f"{tmp_path}/missing.cfg"]
    made = df.filter((pl.col("probe") == "openat") & (pl.col("path") == f"{tmp_path}/made.txt"))
    assert made.height == 1 and "O_CREAT" in made["arg"][0]
    rel = df.filter((pl.col("probe") == "openat") & (pl.col("path") == f"{tmp_path}/sub/rel.txt"))
    assert rel.height == 1
    moved = df.filter(pl.col("probe") == "rename")
    assert moved["path"].to_list() == [f"{tmp_path}/sub/rel.txt"]
    assert moved["path2"].to_list() == [f"{tmp_path}/sub/../moved.txt"]


def test_write_is_atomic_and_schema_valid(recorder, tmp_path):
    rec, _ = record(recorder, ["/bin/ls", "/"], label="good", host="test-host", meta={"ticket": "T-1"})
    out = tmp_path / "out" / "ls.parquet"
    out.parent.mkdir()
    out.write_bytes(b"old contents")  # replaced in one rename, never truncated in place
    rec.write(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["ls.parquet"]  # no temp left
    validate_file(out, "events")
    df = read_events(out)
    assert df.height == rec.events.num_rows > 20
    first = df.row(0, named=True)
    assert first["kind"] == "good" and first["command"] == "/bin/ls /" and first["exit_status"] == 0
    assert first["host"] == "test-host" and first["kernel_release"] == os.uname().release
    assert first["lost_events"] == 0 and first["layer"] == "syscall" and first["depth"] == 0
    assert first["start_time"] <= first["end_time"]
    meta = {m["key"]: m["value"] for m in first["metadata"]}
    assert meta["ticket"] == "T-1" and meta["label"] == "good" and meta["uid"] == "0" and meta["cwd"]
    assert df["trace_id"].n_unique() == 1


def test_no_lost_events_on_ordinary_workload(recorder):
    rec, df = record(recorder, ["/bin/sh", "-c",
                                "ls -lR /usr/lib/python3.11 >/dev/null; "
                                "find /usr/lib/python3.11/email -name '*.py' | xargs cat >/dev/null"])
    assert rec.exit_status == 0
    assert df.height > 5000, df.height
    assert rec.lost_events == 0 and rec.raw_records >= df.height


def test_identity_queries_say_root_or_not(recorder):
    # a set-uid helper's "am I root?" under a nosuid mount: geteuid answers the caller's uid and
    # no call fails; the recording keeps the answer as the call's arg (tests/real_fortyfourth)
    script = "id -u; setpriv --reuid=65534 --regid=65534 --clear-groups id -u"
    rec, df = record(recorder, ["/bin/sh", "-c", script])
    assert rec.exit_status == 0
    ids = df.filter(pl.col("probe").is_in(["getuid", "geteuid", "getgid", "getegid"]))
    by_comm = {(r["comm"], r["arg"]) for r in ids.select("comm", "arg").iter_rows(named=True)}
    assert ("id", "root") in by_comm and ("id", "not root") in by_comm, by_comm
    assert set(ids["arg"]) == {"root", "not root"}
    assert df.filter(pl.col("probe") == "getpid")["arg"].null_count() == df.filter(pl.col("probe") == "getpid").height


# --- the CLI --------------------------------------------------------------------------------
def test_cli_records_failures_only_and_passes_exit_status(need_bpf, tmp_path):
    out = tmp_path / "bad.parquet"
    proc = subprocess.run(
        [*TRACER, "record", "-o", str(out), "--label", "bad", "-x", "--meta", "job_id=42",
         "--", "/bin/sh", "-c", "ls /nonexistent-dir; exit 3"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "lost" in proc.stderr and str(out) in proc.stderr
    df = read_events(out)
    assert df["errno"].null_count() == 0  # -x: failing calls only
    assert df["kind"][0] == "failure" and df["exit_status"][0] == 3 and df["job_id"][0] == "42"
    hit = df.filter(pl.col("path") == "/nonexistent-dir")
    assert hit.height >= 1 and set(hit["errno"]) == {"ENOENT"}


def test_names_that_are_not_utf8_are_recorded_escaped(need_bpf, tmp_path):
    """A file name, an argument and a working directory with a byte that is not UTF-8 (a file
    called f<0xff>): the recording failed whole (UnicodeEncodeError, no trace, exit 2); the names
    are kept as their \\xNN escapes, the way the command lines show them, and the command's
    exit status passes through."""
    work = Path(os.fsdecode(bytes(tmp_path) + b"/d\xff"))
    work.mkdir()
    out = tmp_path / "t.parquet"
    name = os.fsdecode(b"f\xff")  # (a lone surrogate: the raw byte on the command line)
    proc = subprocess.run([*TRACER, "record", "-o", str(out), "--", "/bin/sh", "-c", f"cat ./{name} 2>/dev/null; exit 3",
                           os.fsdecode(b"arg\xff")], capture_output=True, text=True, cwd=work, timeout=120)
    assert proc.returncode == 3, proc.stderr
    df = read_events(out)
    missing = df.filter(pl.col("probe") == "openat", pl.col("errno") == "ENOENT",
                        pl.col("path").str.ends_with("/d\\xff/f\\xff"))
    assert missing.height == 1, df.filter(pl.col("path").str.contains("xff", literal=True))
    meta = dict(zip(*df["metadata"][0].struct.unnest().to_dict(as_series=False).values(), strict=True))
    assert meta["cwd"].endswith("/d\\xff") and "arg\\xff" in df["command"][0]
    from tracer.record.metadata_keys import RECORDER_KEYS

    assert set(meta) <= RECORDER_KEYS  # (every key the recorder writes is one --meta may not take)


def cli(capsys, *argv) -> tuple[int, str]:
    try:
        status = tracer_main(["record", *argv])
    except SystemExit as exc:  # argparse usage errors
        status = exc.code
    return status, capsys.readouterr().err


def test_cli_no_command(capsys):
    status, err = cli(capsys, "-o", "x.parquet")
    assert status == 2 and "no command given" in err
    status, err = cli(capsys, "--")
    assert status == 2 and "no command given" in err


def test_cli_bad_label(capsys):
    status, err = cli(capsys, "--label", "ugly", "--", "true")
    assert status == 2 and "invalid choice: 'ugly'" in err


def test_cli_bad_meta(capsys):
    status, err = cli(capsys, "--meta", "novalue", "--", "true")
    assert status == 2 and "--meta 'novalue': expected KEY=VALUE" in err
    status, err = cli(capsys, "--meta", "=x", "--", "true")
    assert status == 2 and "expected KEY=VALUE" in err
    # a key the recorder writes itself replaced its value (cut_off_tids lost the cut-off threads)
    status, err = cli(capsys, "--meta", "cut_off_tids=x", "--", "true")
    assert status == 2 and "--meta cut_off_tids: expected a key of your own, found one the recorder writes" in err
    # a key given twice kept the last value without a word
    status, err = cli(capsys, "--meta", "job_id=1", "--meta", "job_id=2", "--", "true")
    assert status == 2 and "--meta 'job_id=2': expected each key once, found job_id given before (job_id=1)" in err
    from tracer.record.metadata_keys import RECORDER_KEYS
    from tracer.schema import CUT_OFF_KEY

    assert CUT_OFF_KEY in RECORDER_KEYS


def test_cli_unwritable_output(capsys, tmp_path):
    status, err = cli(capsys, "-o", "/proc/trace.parquet", "--", "true")
    assert status == 2 and "cannot write in /proc" in err
    status, err = cli(capsys, "-o", str(tmp_path), "--", "true")
    assert status == 2 and "is a directory" in err
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "t", str(ro)], check=True)
        try:
            status, err = cli(capsys, "-o", f"{ro}/t.parquet", "--", "true")
            assert status == 2 and f"cannot write in {ro}" in err and "Read-only" in err
        finally:
            subprocess.run(["umount", str(ro)], check=True)


def test_cli_command_not_found(need_bpf, capsys, tmp_path):
    status, err = cli(capsys, "-o", str(tmp_path / "x.parquet"), "--", "no-such-command-xyz")
    assert status == 127 and "no-such-command-xyz: command not found" in err
    assert not (tmp_path / "x.parquet").exists()


def test_cli_not_root(need_bpf, tmp_path):
    tools_run_as_nobody()
    tmp_path.chmod(0o777)
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         *TRACER, "record", "-o", str(tmp_path / "x.parquet"), "--", "true"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs root" in lines[0] and "sudo" in lines[0]
    assert "Traceback" not in proc.stderr


def test_columnar_decoding_matches_per_event_rules_on_a_real_run(recorder, tmp_path, monkeypatch):
    from test_record_units import reference_columns

    from tracer.record.decode import resolve_columns

    seen = {}
    original = recorder._events_table

    def capture(decoded, **kw):
        seen.update(decoded=decoded, **kw)
        return original(decoded, **kw)

    monkeypatch.setattr(recorder, "_events_table", capture)
    (tmp_path / "d").mkdir()
    rec, _ = record(recorder, ["/bin/sh", "-c", f"cd {tmp_path}; ls -lR d /etc/ssl >/dev/null; "
                               "tar -cf - -C /usr/lib/python3.11 json | cat >/dev/null; "
                               "cat nothing-here 2>/dev/null; exec 3<d; true"], cwd=tmp_path)
    decoded, names = seen["decoded"], recorder._names
    assert len(decoded) > 500
    args = (seen["cwd"], seen["initial_fds"], seen["cloexec_fds"])
    got = resolve_columns(decoded, names, *args)
    assert got == reference_columns(decoded, names, *args)
    assert any(got[3]), "no output captured"  # the shell's `| cat` writes to a pipe


def test_two_path_calls_and_output_of_real_programs(recorder, tmp_path):
    """mv/ln/ln -s keep both paths (path, path2); what programs write to stdout/stderr, a tty
    (fd 3, a dup of it) and a pipe they made is captured, what they write to a file through
    another fd is not (stdout/stderr are kept whatever they point to)."""
    import pty

    (tmp_path / "a.txt").write_text("a\n")
    script = textwrap.dedent(f"""
        cd {tmp_path}
        mv a.txt b.txt
        ln b.txt hard.txt
        ln -s b.txt soft.txt
        ln -s b.txt soft.txt
        echo to-stdout
        echo to-stderr >&2
        exec 3>&1 4>file.txt
        /usr/bin/python3 -S -c 'import os; os.write(3, b"to-tty-dup\\n"); os.write(4, b"to-file\\n")'
        printf 'piped\\n' | cat >/dev/null
        /usr/bin/python3 -S -c 'import os; os.writev(2, [b"vec", b"tor\\n"])'
        ls /nonexistent-dir
        exit 0
    """)
    master, tty = pty.openpty()
    err_r, err_w = os.pipe()
    try:
        rec = recorder.record(["/bin/sh", "-c", script], env=ENV, stdout=tty, stderr=err_w, timeout=60)
    finally:
        for fd in (tty, err_w, err_r, master):
            os.close(fd)
    df = pl.from_arrow(rec.events)
    two = df.filter(pl.col("path2").is_not_null()).select("probe", "errno", "path", "path2")
    rows = {(r["probe"], r["errno"], r["path"], r["path2"]) for r in two.iter_rows(named=True)}
    t = str(tmp_path)
    assert any(p in ("rename", "renameat", "renameat2") and e is None and (s, d) == (f"{t}/a.txt", f"{t}/b.txt")
               for p, e, s, d in rows), rows
    assert any(p in ("link", "linkat") and (s, d) == (f"{t}/b.txt", f"{t}/hard.txt") for p, _, s, d in rows), rows
    # ln -s b.txt soft.txt: the link made is the path, its target (as written) path2; twice: EEXIST
    soft = [(e, s, d) for p, e, s, d in rows if p in ("symlink", "symlinkat")]
    assert (None, f"{t}/soft.txt", "b.txt") in soft and ("EEXIST", f"{t}/soft.txt", "b.txt") in soft
    written = df.filter(pl.col("output").is_not_null())
    outputs = written["output"].to_list()
    assert "to-stdout\n" in outputs and "to-stderr\n" in outputs and "to-tty-dup\n" in outputs
    assert "piped\n" in outputs  # printf into a pipe the shell made with pipe()
    assert "vector\n" in outputs or ("vec" in "".join(outputs) and "tor\n" in "".join(outputs))
    assert any("nonexistent-dir" in o for o in outputs)  # ls's error message on stderr
    assert "to-file\n" not in outputs
    tty_write = written.filter(pl.col("output") == "to-tty-dup\n")
    assert tty_write["path"][0].startswith("/dev/pts/")
    file_write = df.filter((pl.col("probe") == "write") & (pl.col("path") == f"{t}/file.txt"))
    assert file_write.height == 1 and file_write["output"][0] is None
    assert (tmp_path / "file.txt").read_text() == "to-file\n"


def test_command_that_cannot_be_executed(recorder, tmp_path):
    """Found and executable by its mode, refused by execve (no ELF header, no #!): exit status
    126 like a shell, one message, and the recorder records the next command as usual."""
    from tracer.record.recorder import CommandNotExecutable

    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\x01\x02 not a program")
    junk.chmod(0o755)
    with pytest.raises(CommandNotExecutable, match="junk: Exec format error") as info:
        recorder.record([str(junk)], env=ENV)
    assert info.value.exit_status == 126
    rec, df = record(recorder, ["/bin/true"])
    assert rec.exit_status == 0 and df["probe"][0] == "execve" and df["path"][0] == "/bin/true"
    # switched off again (the programs stay attached between recordings: recorder._stop)
    assert recorder.bpf[b"control"][ctypes.c_int(0)].value == 0


def test_argument_registers_through_the_kfunc_and_the_helpers_agree(recorder, tmp_path, monkeypatch, capfd):
    """The recorder reads the argument registers through bpf_rdonly_cast (a kfunc call it
    writes into the compiled program, bcc cannot) where the kernel has it, else through two
    helper calls; a kernel refusing the kfunc call (here: a wrong kfunc id) gets the helpers.
    Both record the same calls, paths, fds and output."""
    import tracer.record.recorder as recorder_module
    from tracer.record.btf import pt_regs_cast_ids
    from tracer.record.recorder import SyscallRecorder

    ids = pt_regs_cast_ids()
    if ids is None:
        pytest.skip("no BTF with struct pt_regs and bpf_rdonly_cast")
    assert recorder.regs_cast
    closed = _closed_port()
    script = tmp_path / "calls.py"
    script.write_text(textwrap.dedent(f"""
        import os, socket, sys
        s = socket.socket()
        s.settimeout(5)  # a non-blocking connect; the refusal comes back in SO_ERROR's value
        s.connect_ex(("127.0.0.1", {closed}))
        d = os.open({str(tmp_path)!r}, os.O_RDONLY | os.O_DIRECTORY)
        fd = os.open("made.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d)
        os.write(fd, b"abc")
        os.rename({str(tmp_path)!r} + "/made.txt", {str(tmp_path)!r} + "/moved.txt")
        try:
            os.stat("missing.txt", dir_fd=d)
        except FileNotFoundError:
            pass
        sys.stdout.write("to stdout\\n"); sys.stdout.flush()
    """))

    def calls(rec_df):
        _, df = rec_df
        return (df.filter(pl.col("path").str.starts_with(str(tmp_path)) | pl.col("output").is_not_null()
                          | (pl.col("probe") == "getsockopt"))
                .select("probe", "path", "path2", "errno", "arg", "output").rows())

    with_cast = calls(record(recorder, ["/usr/bin/python3", "-S", str(script)]))
    (tmp_path / "moved.txt").unlink()
    monkeypatch.setattr(recorder_module, "pt_regs_cast_ids", lambda: (ids[0], ids[1] + 1))
    capfd.readouterr()
    with SyscallRecorder(ringbuf_mb=4) as helpers:
        assert not helpers.regs_cast  # the kernel refused the call: loaded with the helpers
        # quietly: the refused load's verifier log is kept in a note, not printed on stderr
        assert any(n.startswith("bpf_rdonly_cast refused") for n in helpers.notes), helpers.notes
        err = capfd.readouterr().err
        assert "Failed to load program" not in err and "func#" not in err, err
        with_helpers = calls(record(helpers, ["/usr/bin/python3", "-S", str(script)]))
    assert with_cast == with_helpers
    assert ("openat", f"{tmp_path}/made.txt", None, None, "O_WRONLY|O_CREAT|O_CLOEXEC", None) in with_cast
    assert ("rename", f"{tmp_path}/made.txt", f"{tmp_path}/moved.txt", None, None, None) in with_cast
    assert any(r[0] == "newfstatat" and r[1] == f"{tmp_path}/missing.txt" and r[3] == "ENOENT" for r in with_cast)
    assert any(r[5] == "to stdout\n" for r in with_cast)
    assert ("getsockopt", f"inet:127.0.0.1:{closed}", None, "ECONNREFUSED", "SO_ERROR", None) in with_cast


def _closed_port() -> int:
    """A loopback port nothing listens on (bound for a moment to learn a free one)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_refused_nonblocking_connect_is_in_getsockopts_value(recorder, need_cc, tmp_path):
    """A non-blocking connect to a closed loopback port returns EINPROGRESS; the refusal is
    only in getsockopt(SOL_SOCKET, SO_ERROR)'s value, which the recorder reads at exit: the
    event carries it as errno with ret 0 and arg SO_ERROR. A connect that succeeds reads 0
    (no errno), another option (SO_TYPE, whose value 1 is EPERM's number) is not an error, and
    `-x` keeps the refusal."""
    import socket

    from tracer.record.recorder import SyscallRecorder

    closed = _closed_port()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)  # the kernel completes the handshake: no accept needed
        up = server.getsockname()[1]
        src = tmp_path / "nbconnect.c"
        src.write_text(textwrap.dedent("""
            #include <arpa/inet.h>
            #include <errno.h>
            #include <poll.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <sys/socket.h>
            #include <unistd.h>
            static int attempt(int port) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = -1, type = 0;
                struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
                inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
                if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) return errno;
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                poll(&p, 1, 5000);
                socklen_t len = sizeof(err);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                len = sizeof(type);
                getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
                close(fd);
                return err;
            }
            int main(int argc, char **argv) {
                int refused = attempt(atoi(argv[1])), ok = attempt(atoi(argv[2]));
                printf("%d %d\\n", refused, ok);
                return refused == ECONNREFUSED && ok == 0 ? 0 : 1;
            }
        """))
        exe = tmp_path / "nbconnect"
        subprocess.run([need_cc, "-O1", "-o", str(exe), str(src)], check=True)
        rec, df = record(recorder, [str(exe), str(closed), str(up)])
        assert rec.exit_status == 0
        with SyscallRecorder(ringbuf_mb=4, failures_only=True) as failures:
            _, only = record(failures, [str(exe), str(closed), str(up)])
    calls = df.filter(pl.col("probe").is_in(["connect", "getsockopt"])).select("probe", "ret", "errno", "path", "arg")
    assert calls.rows() == [
        ("connect", -115, "EINPROGRESS", f"inet:127.0.0.1:{closed}", None),
        ("getsockopt", 0, "ECONNREFUSED", f"inet:127.0.0.1:{closed}", "SO_ERROR"),
        ("getsockopt", 0, None, f"inet:127.0.0.1:{closed}", None),
        ("connect", -115, "EINPROGRESS", f"inet:127.0.0.1:{up}", None),
        ("getsockopt", 0, None, f"inet:127.0.0.1:{up}", "SO_ERROR"),
        ("getsockopt", 0, None, f"inet:127.0.0.1:{up}", None),
    ]
    refused = only.filter(pl.col("probe") == "getsockopt").select("ret", "errno", "path", "arg")
    assert refused.rows() == [(0, "ECONNREFUSED", f"inet:127.0.0.1:{closed}", "SO_ERROR")]
    assert only["errno"].null_count() == 0


def test_call_refused_by_seccomp_is_recorded(recorder, need_cc, tmp_path):
    """A seccomp filter's SECCOMP_RET_ERRNO skips the call and the sys_enter tracepoint with it,
    but not sys_exit: the recorder keeps such an exit (number from orig_ax) on a thread that
    made calls before, once, with its errno -- strace's `set_mempolicy(...) = -1 EPERM`, the
    only sign of a container profile refusing a NUMA call. Calls the filter allows, a thread's
    and a forked child's first return (no entry of theirs in the recording), add nothing."""
    src = tmp_path / "deny.c"
    src.write_text(textwrap.dedent("""
        #include <errno.h>
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <pthread.h>
        #include <stddef.h>
        #include <stdio.h>
        #include <sys/prctl.h>
        #include <sys/syscall.h>
        #include <sys/wait.h>
        #include <unistd.h>
        static void *idle(void *arg) { return arg; }
        int main(void) {
            struct sock_filter prog[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_set_mempolicy, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog fprog = {.len = 4, .filter = prog};
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog))
                return 2;
            pthread_t t;
            pthread_create(&t, NULL, idle, NULL);
            pthread_join(t, NULL);
            pid_t pid = fork();
            if (pid == 0) _exit(0);
            waitpid(pid, NULL, 0);
            pid = fork();  /* a child whose first call the filter refuses */
            if (pid == 0) _exit(syscall(SYS_set_mempolicy, 0, NULL, 0) == -1 && errno == EPERM ? 0 : 1);
            int status;
            waitpid(pid, &status, 0);
            if (status != 0) return 3;
            long rc = syscall(SYS_set_mempolicy, 0, NULL, 0);
            return rc == -1 && errno == EPERM ? 0 : 1;
        }
    """))
    exe = tmp_path / "deny"
    subprocess.run([need_cc, "-O1", "-o", str(exe), str(src), "-lpthread"], check=True)
    rec, df = record(recorder, [str(exe)])
    assert rec.exit_status == 0
    refused = df.filter(pl.col("probe") == "set_mempolicy").select("pid", "ret", "errno")
    # the second child's first call and the parent's, each once
    assert [(r, e) for _, r, e in refused.rows()] == [(-1, "EPERM"), (-1, "EPERM")]
    assert refused["pid"].n_unique() == 2
    # every event but exit/exit_group (emitted at entry) is one call: one clone3 and two clones
    # in the parent, and no clone return of the new thread or children recorded as a call
    clones = df.filter(pl.col("probe").is_in(["clone", "clone3"])).select("probe", "ret")
    assert sorted(p for p, _ in clones.rows()) == ["clone", "clone", "clone3"]
    assert all(ret > 0 for _, ret in clones.rows())
    last = df.filter(pl.col("pid") == pl.col("tid")).sort("seq")
    assert last.filter(pl.col("pid") == df["pid"][0])["probe"].to_list()[-2:] == ["set_mempolicy", "exit_group"]


@pytest.mark.parametrize("host", ["", "a/b", "..", "h\nx", ".hidden"])
def test_record_refuses_a_host_name_no_dataset_can_hold(capsys, tmp_path, host):
    """`tracer run --host` kept these out already (check_host); `tracer record --host` stored
    them (battery). Refused before anything is recorded or written."""
    out = tmp_path / "t.parquet"
    status, err = cli(capsys, "--host", host, "-o", str(out), "--", "true")
    assert status == 2 and err.startswith("tracer: error: --host: expected a host name") and not out.exists(), err
