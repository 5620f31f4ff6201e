"""A fifty-seventh set of real programs with one real fault each: **the fault comes from a resource
limit or from the process's surroundings, not from a missing file** -- a limit the service's limits
file sets, a port or a socket nobody answers on, a FIFO nobody reads, a spool another job filled, a
read-only bind mount, a temporary directory on another file system:

- ``split -n r/48`` under the limits file's ``ulimit -n 32``: round-robin opens all 48 outputs, the
  30th openat fails EMFILE, split closes and reopens outputs as it goes, exit 0;
- ``xargs -P2`` as nobody under the limits file's ``ulimit -p 1``: its first clone EAGAIN, "cannot
  fork", exit 1;
- ``zstd -10 --long=27`` under the limits file's ``ulimit -v 60000``: the match window's mmap ENOMEM,
  "Allocation error", exit 11;
- ``curl -o`` of a file:// mirror under the limits file's ``ulimit -f 256``, SIGXFSZ ignored: write
  EFBIG past 128 KiB, curl error 23;
- ``git ls-remote git://127.0.0.1:PORT/``: the git daemon was not running on the bad day: connect
  ECONNREFUSED, exit 128;
- ``ssh-add -l`` with SSH_AUTH_SOCK at a dead agent's socket file: connect ECONNREFUSED, exit 2;
- ``socat -u FILE: OPEN:fifo,wronly,nonblock``: the collector that reads the FIFO is gone: openat
  ENXIO, exit 1;
- ``uniq in out`` into a 256 KiB spool tmpfs another job filled: write ENOSPC, exit 1;
- ``ssh-keygen -f keys/id_ed25519``: keys/ a read-only bind mount: openat EROFS, exit 1;
- ``find build -depth ( -name '*.o' -o -type d -name obj ) -delete``: obj/ also holds a compiler's
  .d file: unlinkat(obj, AT_REMOVEDIR) ENOTEMPTY, exit 1;
- ``rsync -a -T stage``: stage/ is a tmpfs someone mounted: renameat of the temporary into dst/
  EXDEV, rsync copies instead, exit 0;
- ``nc -l -d 127.0.0.1 PORT``: the previous receiver still holds the port: bind EADDRINUSE, exit 1.

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good runs
never had. Every run of a case has the same command line; the limits come from files beside it.

Noise cases (``QUIET_FIFTYSEVENTH``): split, curl, ssh-keygen, find, uniq and rsync in good runs
alone -- other sizes and contents, other names of unrelated files, leftovers in the spool that still
leave room.

Loopback: two ports of this set's own (``harness._port_block``): the git daemon's and nc's.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import threading
import time
from pathlib import Path

from .files import mounted_tmpfs, run_quiet, token, write_file
from .harness import NoAnomalyCase, Scenario, _port_block, argv_in, sh_argv

OPEN = frozenset({"openat", "open"})
WRITE = frozenset({"write", "pwrite64", "writev"})
CONNECT = frozenset({"connect"})
NO_PATH = "*"  # the call has no path of its own (a clone, an anonymous mmap)

GIT_PORT, NC_PORT = _port_block(2)  # the git daemon's, the nc receiver's

# What a case started for its run (a daemon, a reader, a port holder): stopped by its teardown.
_CLEANUPS: list = []


def _cleanup(_base: Path | None = None) -> None:
    while _CLEANUPS:
        with contextlib.suppress(Exception):  # a teardown goes on with the rest
            _CLEANUPS.pop()()


def _wait_connectable(addr, family=socket.AF_INET, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.connect(addr)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.02)


def _spawn(argv: list[str], env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        proc.wait(timeout=10)

    _CLEANUPS.append(stop)
    return proc


def _limits(base: Path, **limits: str) -> None:
    """The service's limits file, one value a file (what the job's wrapper applies)."""
    for name, value in limits.items():
        write_file(base / "etc" / name, f"{value}\n")


# --- split -n r/48 under ulimit -n from the limits file -------------------------------------------------------
SPLIT_SH = 'ulimit -n "$(cat "$1/etc/nofile")"; exec split -n r/48 "$1/in.txt" "$1/parts/part-"'


def _split_tree(base: Path, *, nofile: str = "1024", lines: int = 3000) -> None:
    _limits(base, nofile=nofile)
    write_file(base / "in.txt", "".join(f"rec {i} {token(3)}\n" for i in range(lines)))
    (base / "parts").mkdir()


def split_build(base: Path, bad: bool) -> None:
    _split_tree(base, nofile="32" if bad else "1024")  # the bad day's unit file copied LimitNOFILE=32


# --- xargs -P2 as nobody under ulimit -p from the limits file --------------------------------------------------
XARGS_SH = 'ulimit -p "$(cat "$1/etc/nproc")"; exec xargs -a "$1/items" -P2 -n1 echo'


def xargs_build(base: Path, bad: bool) -> None:
    _limits(base, nproc="1" if bad else "256")  # a limits.conf line for the service account: nproc 1
    write_file(base / "items", "".join(f"item-{token(2)}\n" for _ in range(4)))


# --- zstd under ulimit -v from the limits file -----------------------------------------------------------------
ZSTD_SH = 'ulimit -v "$(cat "$1/etc/vmem")"; exec zstd -q -10 --long=27 -f "$1/data.bin" -o "$1/data.zst"'


def zstd_build(base: Path, bad: bool) -> None:
    _limits(base, vmem="60000" if bad else "unlimited")  # 60000 KiB of address space
    write_file(base / "data.bin", os.urandom(1_000_000))


# --- curl file:// mirror under ulimit -f from the limits file, SIGXFSZ ignored ---------------------------------
CURL_SH = ('trap "" XFSZ; ulimit -f "$(cat "$1/etc/fsize")"; '
           'exec curl -sS -o "$1/out/mirror.bin" "file://$1/src/mirror.bin"')


def _curl_tree(base: Path, *, fsize: str = "unlimited", size: int = 300_000) -> None:
    _limits(base, fsize=fsize)
    write_file(base / "src" / "mirror.bin", os.urandom(size))
    (base / "out").mkdir()


def curl_build(base: Path, bad: bool) -> None:
    _curl_tree(base, fsize="256" if bad else "unlimited")  # 256 blocks of 512 bytes


# --- git ls-remote git://127.0.0.1:GIT_PORT/ (the daemon not running on the bad day) -------------------------------
GIT_ARGV = ["/usr/bin/git", "ls-remote", f"git://127.0.0.1:{GIT_PORT}/app.git"]


def git_build(base: Path, bad: bool) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "ci",
           "GIT_AUTHOR_EMAIL": "ci@example", "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example"}
    work = base / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True, capture_output=True, env=env)
    write_file(work / "README", f"app {token(3)}\n")
    subprocess.run(["git", "-C", str(work), "add", "README"], check=True, capture_output=True, env=env)
    subprocess.run(["git", "-C", str(work), "commit", "-q", "-m", "init"], check=True, capture_output=True, env=env)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(base / "srv" / "app.git")], check=True,
                   capture_output=True, env=env)
    if bad:
        return  # the daemon's unit failed to start after the reboot
    _spawn(["/usr/bin/git", "daemon", "--reuseaddr", "--export-all", f"--base-path={base}/srv",
            "--listen=127.0.0.1", f"--port={GIT_PORT}"], env=env)
    _wait_connectable(("127.0.0.1", GIT_PORT))


# --- ssh-add -l with SSH_AUTH_SOCK at a dead agent's socket --------------------------------------------------------
SSH_ADD_ARGV = ["/usr/bin/env", "SSH_AUTH_SOCK={b}/agent/agent.sock", "/usr/bin/ssh-add", "-l"]


def ssh_add_build(base: Path, bad: bool) -> None:
    sock = base / "agent" / "agent.sock"
    sock.parent.mkdir(mode=0o700)
    if bad:  # the agent died, its socket file stayed
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(str(sock))
        return
    _spawn(["/usr/bin/ssh-agent", "-D", "-a", str(sock)])
    _wait_connectable(str(sock), socket.AF_UNIX)
    run_quiet("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"ci-{token(2)}", "-f", str(base / "id_ci"))
    subprocess.run(["/usr/bin/ssh-add", "-q", str(base / "id_ci")], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": str(sock)})


# --- socat into a FIFO nobody reads ----------------------------------------------------------------------------
SOCAT_ARGV = ["/usr/bin/socat", "-u", "FILE:{b}/msg", "OPEN:{b}/run/collector.fifo,wronly,nonblock"]


def socat_build(base: Path, bad: bool) -> None:
    write_file(base / "msg", f"job done {token(3)}\n")
    fifo = base / "run" / "collector.fifo"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    if bad:
        return  # the collector that reads the FIFO was not running
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the collector's end
    _CLEANUPS.append(lambda: os.close(fd))


# --- uniq into a spool tmpfs another job filled ----------------------------------------------------------------
UNIQ_ARGV = ["/usr/bin/uniq", "{b}/in.txt", "{b}/spool/uniq.out"]


def _uniq_tree(base: Path, *, leftover: int = 0) -> None:
    write_file(base / "in.txt", "".join(f"{i:06d} {token(4)}\n" for i in range(2500)))  # ~60 KB
    spool = mounted_tmpfs(base / "spool", "256k")
    if leftover:
        write_file(spool / f"job-{token(2)}.tmp", os.urandom(leftover))


def uniq_build(base: Path, bad: bool) -> None:
    _uniq_tree(base, leftover=240 * 1024 if bad else 0)  # another job's 240 KiB left in the spool


# --- ssh-keygen into a read-only bind mount -----------------------------------------------------------------
KEYGEN_ARGV = ["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deploy", "-f", "{b}/keys/id_ed25519"]


def _keygen_tree(base: Path, *, readonly: bool = False, extra: bool = False) -> None:
    keys = base / "keys"
    keys.mkdir()
    if extra:
        write_file(keys / "known_hosts", f"host-{token(2)} ssh-ed25519 AAAA{token(8)}\n")
    if readonly:  # the container's keys/ came as a read-only bind mount
        run_quiet("mount", "--bind", str(keys), str(keys))
        run_quiet("mount", "-o", "remount,bind,ro", str(keys))


def keygen_build(base: Path, bad: bool) -> None:
    _keygen_tree(base, readonly=bad)


# --- find -delete of build outputs, obj/ not empty ------------------------------------------------------------
FIND_ARGV = ["/usr/bin/find", "{b}/build", "-depth", "(", "-name", "*.o", "-o", "-type", "d", "-name", "obj", ")",
             "-delete"]


def _find_tree(base: Path, *, depfile: bool = False, objects: int = 4) -> None:
    build = base / "build"
    for i in range(objects):
        write_file(build / "obj" / f"m{i}-{token(2)}.o", os.urandom(64))
    write_file(build / "main.o", os.urandom(64))
    write_file(build / "main.c", "int main(void) { return 0; }\n")
    if depfile:  # the new compiler flags (-MD) left a .d file beside the objects
        write_file(build / "obj" / "m0.d", "m0.o: m0.c\n")


def find_build(base: Path, bad: bool) -> None:
    _find_tree(base, depfile=bad)


# --- rsync -T stage, stage/ on another file system ------------------------------------------------------------
RSYNC_ARGV = ["/usr/bin/rsync", "-a", "-T", "{b}/stage", "{b}/src/report.csv", "{b}/dst/"]


def _rsync_tree(base: Path, *, tmpfs: bool = False, rows: int = 50) -> None:
    write_file(base / "src" / "report.csv", "".join(f"{i},{token(3)}\n" for i in range(rows)))
    (base / "dst").mkdir()
    if tmpfs:  # someone mounted a tmpfs on the staging directory
        mounted_tmpfs(base / "stage", "4m")
    else:
        (base / "stage").mkdir()


def rsync_build(base: Path, bad: bool) -> None:
    _rsync_tree(base, tmpfs=bad)


# --- nc -l on a port the previous receiver still holds ----------------------------------------------------------
NC_ARGV = ["/usr/bin/nc", "-l", "-d", "127.0.0.1", str(NC_PORT)]


def _sender(stop: threading.Event) -> None:
    """The job's sender: connects as soon as the receiver listens, sends a batch, closes."""
    deadline = time.monotonic() + 30
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", NC_PORT), timeout=2) as s:
                s.sendall(f"batch {token(4)}\n".encode())
            return
        except OSError:
            time.sleep(0.02)


def nc_build(base: Path, bad: bool) -> None:
    write_file(base / "README", "receiver\n")
    if bad:  # the previous receiver never exited: it still listens on the port
        holder = socket.socket()
        holder.bind(("127.0.0.1", NC_PORT))
        holder.listen(1)
        _CLEANUPS.append(holder.close)
        return
    stop = threading.Event()
    t = threading.Thread(target=_sender, args=(stop,), daemon=True)
    t.start()

    def end() -> None:
        stop.set()
        t.join(timeout=10)

    _CLEANUPS.append(end)


def _sc(name, program, argv, build, probe, errno, path, *, teardown=_cleanup, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYSEVENTH: list[Scenario] = [
    _sc("t57_split_roundrobin_nofile_limit", "split -n r/48 under the limits file's ulimit -n 32",
        sh_argv(SPLIT_SH), split_build, OPEN, "EMFILE", lambda b: f"{b}/parts/part-*",
        description="round-robin opens all 48 outputs: the 30th openat EMFILE, split closes and reopens "
                    "outputs as it goes, exit 0"),
    _sc("t57_xargs_nproc_limit", "xargs -P2 as nobody under the limits file's ulimit -p 1",
        sh_argv(XARGS_SH), xargs_build, frozenset({"clone", "clone3", "fork", "vfork"}), "EAGAIN",
        lambda b: NO_PATH, unprivileged=True,
        description="the service account's nproc 1: xargs's first clone EAGAIN, 'cannot fork', exit 1"),
    _sc("t57_zstd_long_window_address_space", "zstd -10 --long=27 under the limits file's ulimit -v 60000",
        sh_argv(ZSTD_SH), zstd_build, frozenset({"mmap", "mremap", "brk"}), "ENOMEM", lambda b: NO_PATH,
        description="the 128 MiB match window's mmap ENOMEM under RLIMIT_AS, 'Allocation error', exit 11"),
    _sc("t57_curl_file_mirror_fsize_limit", "curl -o file:// mirror under ulimit -f 256, SIGXFSZ ignored",
        sh_argv(CURL_SH), curl_build, WRITE, "EFBIG", lambda b: f"{b}/out/mirror.bin",
        description="the 300 KB download passes RLIMIT_FSIZE (128 KiB): write EFBIG, curl error 23"),
    _sc("t57_git_ls_remote_daemon_down", "git ls-remote git://127.0.0.1:PORT/app.git",
        argv_in(GIT_ARGV), git_build, CONNECT, "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{GIT_PORT}",
        description="the git daemon did not start: connect ECONNREFUSED, 'unable to connect', exit 128"),
    _sc("t57_ssh_add_dead_agent_socket", "ssh-add -l with SSH_AUTH_SOCK at a dead agent's socket",
        argv_in(SSH_ADD_ARGV), ssh_add_build, CONNECT, "ECONNREFUSED", lambda b: f"unix:{b}/agent/agent.sock",
        description="the agent died, its socket file stayed: connect ECONNREFUSED, 'Error connecting to agent', "
                    "exit 2"),
    _sc("t57_socat_fifo_no_reader", "socat -u FILE: OPEN:fifo,wronly,nonblock",
        argv_in(SOCAT_ARGV), socat_build, OPEN, "ENXIO", lambda b: f"{b}/run/collector.fifo",
        description="the collector reading the FIFO is gone: openat O_WRONLY|O_NONBLOCK ENXIO, exit 1"),
    _sc("t57_uniq_spool_tmpfs_full", "uniq in.txt spool/uniq.out (a 256 KiB tmpfs another job filled)",
        argv_in(UNIQ_ARGV), uniq_build, WRITE, "ENOSPC", lambda b: f"{b}/spool/uniq.out",
        description="another job's 240 KiB left in the spool: write ENOSPC, 'write error', exit 1"),
    _sc("t57_ssh_keygen_readonly_bind", "ssh-keygen -f keys/id_ed25519 (keys/ a read-only bind mount)",
        argv_in(KEYGEN_ARGV), keygen_build, OPEN, "EROFS", lambda b: f"{b}/keys/id_ed25519",
        description="keys/ is a read-only bind mount: openat EROFS, 'Saving key failed', exit 1"),
    _sc("t57_find_delete_dir_not_empty", "find build -depth ( -name *.o -o -type d -name obj ) -delete",
        argv_in(FIND_ARGV), find_build, frozenset({"unlinkat", "rmdir"}), "ENOTEMPTY", lambda b: f"{b}/build/obj",
        description="obj/ also holds a compiler's .d file: unlinkat(obj, AT_REMOVEDIR) ENOTEMPTY, 'cannot "
                    "delete', exit 1"),
    _sc("t57_rsync_tempdir_other_fs", "rsync -a -T stage src/report.csv dst/ (stage/ a tmpfs)",
        argv_in(RSYNC_ARGV), rsync_build, frozenset({"rename", "renameat", "renameat2"}), "EXDEV",
        lambda b: f"{b}/*report.csv*",
        description="stage/ is a tmpfs: renameat of the temporary into dst/ EXDEV, rsync copies instead, exit 0"),
    _sc("t57_nc_listen_port_held", "nc -l -d 127.0.0.1 PORT (the previous receiver holds the port)",
        argv_in(NC_ARGV), nc_build, frozenset({"bind"}), "EADDRINUSE", lambda b: f"inet:127.0.0.1:{NC_PORT}",
        description="the previous receiver still listens: bind EADDRINUSE, 'Address already in use', exit 1"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def split_noise(base: Path, run: int) -> None:
    _split_tree(base, lines=[3000, 12000, 500][run % 3])


def curl_noise(base: Path, run: int) -> None:
    _curl_tree(base, size=[300_000, 2_000_000, 40_000][run % 3])


def keygen_noise(base: Path, run: int) -> None:
    _keygen_tree(base, extra=run == 1)


def find_noise(base: Path, run: int) -> None:
    _find_tree(base, objects=[4, 30, 1][run % 3])


def uniq_noise(base: Path, run: int) -> None:
    _uniq_tree(base, leftover=[0, 64 * 1024, 16 * 1024][run % 3])


def rsync_noise(base: Path, run: int) -> None:
    _rsync_tree(base, rows=random.choice([5, 50, 20000]) if run else 50)


QUIET_FIFTYSEVENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t57_split_roundrobin_noise", sh_argv(SPLIT_SH), split_noise,
                  description="split -n r/48 under a limit of 1024 descriptors, inputs of 3000, 12000, 500 lines"),
    NoAnomalyCase("t57_curl_file_mirror_noise", sh_argv(CURL_SH), curl_noise,
                  description="curl of a file:// mirror of 300 KB, 2 MB, 40 KB with no file size limit"),
    NoAnomalyCase("t57_ssh_keygen_noise", argv_in(KEYGEN_ARGV), keygen_noise,
                  description="ssh-keygen into a writable keys/, another key each run, a known_hosts beside"),
    NoAnomalyCase("t57_find_delete_noise", argv_in(FIND_ARGV), find_noise,
                  description="find -delete of 4, 30, 1 objects under obj/ of other names"),
    NoAnomalyCase("t57_uniq_spool_noise", argv_in(UNIQ_ARGV), uniq_noise,
                  description="uniq into the spool tmpfs with 0, 64, 16 KiB of another job's leftovers"),
    NoAnomalyCase("t57_rsync_tempdir_noise", argv_in(RSYNC_ARGV), rsync_noise,
                  description="rsync -T through a staging directory on the same file system, reports of other "
                              "sizes"),
]


def quiet_teardown() -> None:
    """Stop what a case started for its run (a git daemon, an ssh-agent, a FIFO's reader, a port's
    holder, a sender); the mounts under a case's directory go with it (the harness unmounts them)."""
    _cleanup()
