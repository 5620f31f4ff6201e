"""The fault scenarios and the good-vs-good cases (see harness.py for how they are run).

Each scenario injects one fault into an otherwise identical run of a real program: the
table below says which program, what the bad run sees, and which event (syscall, errno,
path) the diff's top-1 bifurcation must name.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from .harness import PORTS, PROGRAMS, PY, NoAnomalyCase, Scenario, unmount_under

CLOSED_PORT = PORTS[0]  # nothing listens here in the bad run


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def gone_pid() -> int:
    """The pid of a process that has exited and been reaped: a pid file that outlived its process.

    Not pid_max - 1, which is "never handed out" only on a machine that never wraps its pids
    (pid_max is 32768 here and the suite wraps them: a live process held it now and then). The
    kernel hands pids out cyclically, so a reaped pid returns only after a whole wrap."""
    gone = subprocess.Popen(["/bin/true"], stdin=subprocess.DEVNULL)
    gone.wait()
    return gone.pid


def mount_tmpfs(target: Path, size: str, readonly: bool = False) -> None:
    target.mkdir(exist_ok=True)
    opts = f"size={size},mode=0755" + (",ro" if readonly else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tracebase-test", str(target)], check=True)


def umount(target: Path) -> None:
    unmount_under(target)


def umount_after(*names: str):
    """A teardown unmounting base/<name> for each name."""
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def fill_up(mnt: Path) -> None:
    """Fill a tmpfs to the last block (dd stops at ENOSPC)."""
    subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/filler", "bs=4k"], capture_output=True)


# --- setups ---------------------------------------------------------------------------------
def missing_file(base: Path, bad: bool) -> None:
    if not bad:
        write(base / "config.txt", "threads=4\n")


def permission_denied(base: Path, bad: bool) -> None:
    write(base / "data.txt", "payload\n" * 20, 0o600 if bad else 0o644)


def read_only(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "1m", readonly=bad)


def disk_full(base: Path, bad: bool) -> None:
    write(base / "src.bin", "x" * 48 * 1024)
    mount_tmpfs(base / "mnt", "128k")
    if bad:  # fill the filesystem up
        subprocess.run(["dd", "if=/dev/zero", f"of={base}/mnt/filler", "bs=4k", "count=64"],
                       capture_output=True)


def too_many_files(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    for i in range(12):
        write(base / "in" / f"part{i:02d}.dat", f"{i}\n" * 8)
    write(base / "limit", "12" if bad else "64")


def symlink_loop(base: Path, bad: bool) -> None:
    if bad:
        (base / "loop-a").symlink_to("loop-b")
        (base / "loop-b").symlink_to("loop-a")
        (base / "input.txt").symlink_to("loop-a")
    else:
        write(base / "real.txt", "line one\nline two\n")
        (base / "input.txt").symlink_to("real.txt")


def corrupt_config(base: Path, bad: bool) -> None:
    write(base / "data.csv", "a,b\n1,2\n")
    write(base / "defaults.ini", "[defaults]\n")
    write(base / "app.json", '{"data": "data.csv"' if bad else json.dumps({"data": "data.csv"}))


def not_a_directory(base: Path, bad: bool) -> None:
    if bad:
        write(base / "conf", "i am a file\n")
    else:
        (base / "conf" / "sub").mkdir(parents=True)


def is_a_directory(base: Path, bad: bool) -> None:
    if bad:
        (base / "out").mkdir()


def already_exists(base: Path, bad: bool) -> None:
    write(base / "target", "t\n")
    if bad:
        (base / "link").symlink_to("elsewhere")


def dir_not_empty(base: Path, bad: bool) -> None:
    (base / "work").mkdir()
    if bad:
        write(base / "work" / "leftover.tmp", "x\n")


def cross_device(base: Path, bad: bool) -> None:
    write(base / "a.txt", "move me\n")
    if bad:
        mount_tmpfs(base / "dest", "1m")
    else:
        (base / "dest").mkdir()


def arg_list_too_long(base: Path, bad: bool) -> None:
    write(base / "payload", ("y" * 200_000) if bad else ("y" * 100))


def name_too_long(base: Path, bad: bool) -> None:
    write(base / "name.txt", ("n" * 300) if bad else "results")


def exec_permission(base: Path, bad: bool) -> None:
    write(base / "tool.sh", "#!/bin/sh\necho tool ran\n", 0o644 if bad else 0o755)


class Listener:
    """A TCP listener on loopback held open while good runs connect (backlog absorbs them)."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None

    def start(self, port: int) -> None:
        self.stop()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


LISTENER = Listener()


def connection_setup(base: Path, bad: bool) -> None:
    # Same port in every run so the recorded address agrees; good runs find a listener.
    if bad:
        LISTENER.stop()
    else:
        LISTENER.start(CLOSED_PORT)


SCENARIOS: list[Scenario] = [
    Scenario(
        "missing_file", "cat",
        lambda b: ["/usr/bin/cat", f"{b}/config.txt"], missing_file,
        frozenset({"openat"}), "ENOENT", lambda b: f"{b}/config.txt",
        description="config file deleted",
    ),
    Scenario(
        "permission_denied", "head (uid 65534)",
        lambda b: ["/usr/bin/head", "-c", "64", f"{b}/data.txt"], permission_denied,
        frozenset({"openat"}), "EACCES", lambda b: f"{b}/data.txt",
        unprivileged=True, description="data file mode 0600, owner root; run as nobody",
    ),
    Scenario(
        "read_only_mount", "touch",
        lambda b: ["/usr/bin/touch", f"{b}/mnt/stamp"], read_only,
        frozenset({"openat"}), "EROFS", lambda b: f"{b}/mnt/stamp",
        teardown=lambda b: umount(b / "mnt"), description="tmpfs mounted read-only",
    ),
    Scenario(
        "disk_full", "cp",
        lambda b: ["/usr/bin/cp", f"{b}/src.bin", f"{b}/mnt/dst.bin"], disk_full,
        frozenset({"write", "copy_file_range", "fallocate"}), "ENOSPC",
        lambda b: f"{b}/mnt/dst.bin",
        teardown=lambda b: umount(b / "mnt"), description="128 KiB tmpfs already full",
    ),
    Scenario(
        "too_many_files", "python3 under prlimit",
        # the limit is read from a file so argv stays identical between good and bad runs
        lambda b: ["/bin/sh", "-c", f"exec /usr/bin/prlimit --nofile=$(cat {b}/limit) "
                   f"{' '.join(PY)} {PROGRAMS / 'open_all.py'} {b}/in"],
        too_many_files,
        frozenset({"openat"}), "EMFILE", lambda b: f"{b}/in/part*.dat",
        description="RLIMIT_NOFILE 12 < files held open (good runs: 64)",
    ),
    Scenario(
        "symlink_loop", "sed",
        lambda b: ["/usr/bin/sed", "-n", "1p", f"{b}/input.txt"], symlink_loop,
        frozenset({"openat"}), "ELOOP", lambda b: f"{b}/input.txt",
        description="input is a symlink cycle",
    ),
    Scenario(
        "corrupt_config", "python3 config loader",
        lambda b: [*PY, str(PROGRAMS / "load_config.py"), str(b)], corrupt_config,
        frozenset({"openat"}), None, lambda b: f"{b}/defaults.ini",
        description="truncated JSON: silently falls back to defaults (no error)",
    ),
    Scenario(
        "not_a_directory", "ls",
        lambda b: ["/usr/bin/ls", "-l", f"{b}/conf/sub"], not_a_directory,
        frozenset({"statx", "newfstatat", "lstat", "stat"}), "ENOTDIR",
        lambda b: f"{b}/conf/sub",
        description="a path component is a regular file",
    ),
    Scenario(
        "is_a_directory", "sh redirection",
        lambda b: ["/bin/sh", "-c", f"echo done > {b}/out"], is_a_directory,
        frozenset({"openat"}), "EISDIR", lambda b: f"{b}/out",
        description="output path is a directory",
    ),
    Scenario(
        "already_exists", "ln -s",
        lambda b: ["/usr/bin/ln", "-s", "target", f"{b}/link"], already_exists,
        frozenset({"symlinkat", "symlink"}), "EEXIST", lambda b: f"{b}/link",
        description="a stale link is in the way",
    ),
    Scenario(
        "dir_not_empty", "rmdir",
        lambda b: ["/usr/bin/rmdir", f"{b}/work"], dir_not_empty,
        frozenset({"rmdir"}), "ENOTEMPTY", lambda b: f"{b}/work",
        description="leftover file in the work dir",
    ),
    Scenario(
        "cross_device", "mv",
        lambda b: ["/usr/bin/mv", f"{b}/a.txt", f"{b}/dest/a.txt"], cross_device,
        frozenset({"renameat2", "renameat", "rename"}), "EXDEV", lambda b: f"{b}/a.txt",
        teardown=lambda b: umount(b / "dest"),
        description="destination on another filesystem (mv recovers by copying)",
    ),
    Scenario(
        "connection_refused", "python3 socket client",
        lambda b: [*PY, str(PROGRAMS / "send.py"), "127.0.0.1", str(CLOSED_PORT)],
        connection_setup,
        frozenset({"connect"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{CLOSED_PORT}",
        teardown=lambda b: LISTENER.stop(), description="service on loopback is down",
    ),
    Scenario(
        "arg_list_too_long", "sh + echo",
        lambda b: ["/bin/sh", "-c", f'exec /bin/echo "$(cat {b}/payload)" >/dev/null'],
        arg_list_too_long,
        frozenset({"execve"}), "E2BIG", lambda b: "/bin/echo",
        description="generated argument exceeds MAX_ARG_STRLEN",
    ),
    Scenario(
        "name_too_long", "sh + mkdir",
        lambda b: ["/bin/sh", "-c", f'mkdir "{b}/$(cat {b}/name.txt)"'], name_too_long,
        frozenset({"mkdir", "mkdirat"}), "ENAMETOOLONG", lambda b: f"{b}/nnnn*",
        description="generated directory name longer than NAME_MAX",
    ),
    Scenario(
        "exec_permission", "sh runs a script",
        lambda b: ["/bin/sh", "-c", f"{b}/tool.sh"], exec_permission,
        frozenset({"execve"}), "EACCES", lambda b: f"{b}/tool.sh",
        description="script lost its execute bit (fails even for root)",
    ),
]


# --- good vs good -------------------------------------------------------------------------------
def _python_imports_setup(base: Path, run: int) -> None:
    pass


def _threads_setup(base: Path, run: int) -> None:
    for i in range(5):
        write(base / f"f{i}.txt", "z" * (100 * (i + 1)))


def _loop_setup(base: Path, run: int) -> None:
    write(base / "n", str(3 + 2 * run))
    write(base / "f", "loop body\n")


NO_ANOMALY: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "python_imports",
        lambda b: ["/usr/bin/python3", "-c", "import json, email, http.client"],
        _python_imports_setup, description="routine ENOENTs while Python searches its path",
    ),
    NoAnomalyCase(
        "threads",
        lambda b: [*PY, str(PROGRAMS / "threads.py"), str(b)], _threads_setup,
        description="4 threads, interleaving differs",
    ),
    NoAnomalyCase(
        "loop_counts",
        lambda b: ["/bin/sh", "-c", f"for i in $(seq $(cat {b}/n)); do cat {b}/f >/dev/null; done"],
        _loop_setup, description="3, 5 and 7 loop iterations",
    ),
    NoAnomalyCase(
        "mktemp_names",
        lambda b: ["/bin/sh", "-c", f't=$(mktemp -p {b}); echo x > "$t"; cat "$t" >/dev/null; rm "$t"'],
        lambda b, i: None, description="random temp file names",
    ),
]

