"""A thirty-fifth set of real programs with one real fault each: **programs run through launch
wrappers** -- the command a job script really runs is wrapped (util-linux and coreutils
wrappers: runuser, stdbuf, flock, chroot, timeout, nsenter, unshare, xargs -I, script -qc,
env -C, setsid, nice, taskset), and the fault is one the wrapper meets on the job's behalf or
the wrapped program meets under it:

- **the wrapper's own refusal**: ``flock`` (as the job) opening a job lock a root rerun left
  0600, ``script -qc`` (as the job) opening a session log a root rerun left root's, ``nsenter
  --net=`` of a network namespace a node's clean-up deleted, ``unshare --net=`` binding a new
  namespace over a path a setup script made a directory (``mkdir -p`` of the whole path),
  ``env -C`` changing into ``runs/latest``, which an older launcher wrote as a plain file;
- **the wrapper's exec of the job**: ``runuser -u nobody`` of a tool in a directory deployed
  0700, ``stdbuf -oL`` of a filter script whose venv interpreter dangles, ``chroot`` of a
  staged root file system whose ``lib64`` loader link the unpack dropped, ``timeout`` of a
  staged binary a stalled copy still holds open for writing, ``setsid -w`` of a worker unpacked
  without its exec bits, ``nice -n`` of a tool a failed download left empty (ENOEXEC: execvp
  then runs it with /bin/sh, which does nothing) and ``taskset -c 0`` of a tool built against
  musl (its ELF interpreter missing here);
- **the wrapped program**: ``sha1sum`` run by ``xargs -I{}`` over a manifest one of whose
  shards was unpacked in place into a directory (read EISDIR).

Faults (``t35_`` cases): flock's openat EACCES, script's openat EACCES, nsenter's openat ENOENT,
unshare's mount ENOTDIR, env's chdir ENOTDIR, runuser's execve EACCES, stdbuf's execve ENOENT,
chroot's execve ENOENT, timeout's execve ETXTBSY, setsid's execve EACCES, nice's execve
ENOEXEC, taskset's execve ENOENT, sha1sum's read EISDIR.

Tried and dropped: nice -n -5, ionice -c 1 and chrt -f as nobody (setpriority EACCES, ioprio_set
EPERM, sched_setscheduler EPERM: real_fourth's, through sh), taskset of a CPU this 2-CPU machine
does not have (taskset EINVAL: real_fourth's), chrt --deadline and nsenter of a netns file no
longer a mount (real_twelfth's), setsid opening /dev/tty (ENXIO in the good runs too: the
recorder's program has no controlling terminal), a truncated ELF under nice (headers intact:
execve succeeds and the program dies of SIGSEGV, no errno; cut inside the header, execvp hands
it to /bin/sh, which would parse its bytes -- e_machine 0x3e is a '>' -- in the cwd /).

Good runs vary naturally: random contents, random run ids and pids in leftover files, pids,
random names. Noise cases (``QUIET_THIRTYFIFTH``) are good runs alone under wrappers: timeout
whose timer never fires on a fast command, taskset on either CPU, nice at a random level, ionice
and chrt classes picked at random, setsid -w nohup stdbuf sort, unshare -m -n with a private
scratch tmpfs, flock -c env -i xargs -I{} over random names, nsenter into a persistent netns
then chroot.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .catalog import umount
from .files import shell_argv, token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
EXEC = frozenset({"execve", "execveat"})
READ = frozenset({"read", "pread64", "readv"})
NOBODY_UID = 65534


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _fill(path: Path, nbytes: int) -> None:
    write_file(path, os.urandom(nbytes))


def _tool(dst: Path, src: str, mode: int = 0o755) -> Path:
    """A staged copy of an installed program (the job ships its own tools)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(mode)
    return dst


def _input(base: Path) -> None:
    _fill(base / "data" / "input.bin", random.randrange(16, 64) * 1024)


def _mount(target: Path, opts: str) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"mode=0755,{opts}", "tracebase-test", str(target)],
                   check=True, capture_output=True)
    return target


def _umounting(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _persistent_netns(path: Path) -> None:
    """A network namespace kept alive by a bind mount at `path` (what `ip netns add` does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    subprocess.run(["unshare", f"--net={path}", "true"], check=True, capture_output=True)


# --- runuser -u nobody: the job's tool in a directory deployed 0700 ----------------------------------
def _runuser_argv(b: Path) -> list[str]:
    return ["/usr/sbin/runuser", "-u", "nobody", "--", f"{b}/tools/bin/prep", f"{b}/data/input.bin"]


def runuser_tools_root_only(base: Path, bad: bool) -> None:
    _tool(base / "tools" / "bin" / "prep", "/usr/bin/sha256sum")
    write_file(base / "tools" / "DEPLOY_ID", token(4) + "\n")
    _input(base)
    if bad:  # the tools were deployed by a root shell with umask 077
        (base / "tools").chmod(0o700)


# --- stdbuf -oL: a filter script whose venv interpreter dangles ---------------------------------------
FILTER_PY = """import sys
for line in open(sys.argv[1]):
    if " ERROR " in line:
        sys.stdout.write(line)
"""


def _stdbuf_argv(b: Path) -> list[str]:
    return ["stdbuf", "-oL", f"{b}/bin/filter.py", f"{b}/in/events.log"]


def stdbuf_filter_venv_gone(base: Path, bad: bool) -> None:
    venv = base / "venv"
    _dirs(venv, "bin")
    write_file(venv / "pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
    # the venv was made on the old image (python3.9): its interpreter link now dangles
    os.symlink("/usr/bin/python3.9" if bad else "/usr/bin/python3", venv / "bin" / "python3")
    write_file(base / "bin" / "filter.py", f"#!{venv}/bin/python3 -S\n" + FILTER_PY, 0o755)
    levels = ("INFO", "INFO", "WARN", "ERROR")
    write_file(base / "in" / "events.log", "".join(f"{i} {random.choice(levels)} step {token(3)}\n"
                                               for i in range(random.randrange(50, 200))))


# --- flock (as the job): a job lock a root rerun left 0600 --------------------------------------------
def _flock_argv(b: Path) -> list[str]:
    return ["flock", f"{b}/locks/train.lock", "sha256sum", f"{b}/data/input.bin"]


def flock_lock_root_0600(base: Path, bad: bool) -> None:
    _dirs(base, "locks")
    # root's lock file, with the previous owner's pid; a rerun as root with umask 077 made it 0600
    write_file(base / "locks" / "train.lock", f"{random.randrange(1000, 99999)}\n", 0o600 if bad else 0o644)
    _input(base)


# --- chroot: a staged root file system whose lib64 loader link the unpack dropped ----------------------
LOADER = "ld-linux-x86-64.so.2"


def _chroot_argv(b: Path) -> list[str]:
    return ["/usr/sbin/chroot", f"{b}/rootfs", "/bin/cat", "/etc/job.conf"]


def _rootfs(rootfs: Path, loader: bool = True) -> None:
    lib = rootfs / "lib" / "x86_64-linux-gnu"
    _tool(rootfs / "bin" / "cat", "/usr/bin/cat")
    _tool(lib / "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")
    _tool(lib / LOADER, f"/lib/x86_64-linux-gnu/{LOADER}")
    _dirs(rootfs, "lib64", "tmp")
    if loader:
        os.symlink(f"/lib/x86_64-linux-gnu/{LOADER}", rootfs / "lib64" / LOADER)
    write_file(rootfs / "etc" / "job.conf", f"run_id = {token(4)}\nseed = {random.randrange(10**6)}\n")


def chroot_rootfs_no_loader(base: Path, bad: bool) -> None:
    # the image was unpacked by a tool that skips absolute symlinks: lib64's loader link is gone
    _rootfs(base / "rootfs", loader=not bad)


# --- timeout: a staged binary a stalled copy still holds open for writing --------------------------------
_HOLDERS: dict[str, subprocess.Popen] = {}


def _timeout_argv(b: Path) -> list[str]:
    return ["timeout", "30", f"{b}/bin/digest", f"{b}/data/input.bin"]


def _start_writer(path: Path) -> None:
    """A stalled copy: a process in a session of its own holding `path` open for writing."""
    p = subprocess.Popen(["/bin/sh", "-c", 'exec 3>>"$0"; exec sleep 120', str(path)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _HOLDERS[str(path)] = p
    for _ in range(100):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{p.pid}/fd/3") == str(path) and \
                    os.readlink(f"/proc/{p.pid}/exe").endswith("/sleep"):
                return
        time.sleep(0.02)
    raise RuntimeError(f"{path}: the writer never opened it")


def _stop_holders(base: Path | None = None) -> None:
    for key, p in list(_HOLDERS.items()):
        if base is None or key.startswith(f"{base}/"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            del _HOLDERS[key]


def timeout_binary_open_for_write(base: Path, bad: bool) -> None:
    digest = _tool(base / "bin" / "digest", "/usr/bin/cksum")
    _input(base)
    if bad:  # the copy that staged it hung on its last write (an NFS hiccup) and still holds it
        _start_writer(digest)


# --- nsenter --net=: a network namespace a node's clean-up deleted -------------------------------------
def _nsenter_argv(b: Path) -> list[str]:
    return ["nsenter", f"--net={b}/run/netns/job", "ip", "-o", "link", "show"]


def nsenter_netns_deleted(base: Path, bad: bool) -> None:
    write_file(base / "run" / "job.id", token(4) + "\n")
    _dirs(base, "run/netns")
    if not bad:  # the bad run's namespace was removed (`ip netns del`) by a clean-up cron
        _persistent_netns(base / "run" / "netns" / "job")


# --- unshare --net=: the namespace's path made a directory ---------------------------------------------
def _unshare_argv(b: Path) -> list[str]:
    return ["unshare", f"--net={b}/run/netns/job", "sha256sum", f"{b}/data/input.bin"]


def unshare_netns_path_is_dir(base: Path, bad: bool) -> None:
    _dirs(base, "run/netns")
    write_file(base / "run" / "job.id", token(4) + "\n")
    if bad:  # the setup script's `mkdir -p "$NETNS"` made the whole path, the last part too
        _dirs(base, "run/netns/job")
    else:  # the mount point unshare binds the namespace on, as `ip netns add` makes it
        (base / "run" / "netns" / "job").touch()
    _input(base)


# --- env -C: runs/latest is a plain file an older launcher wrote -----------------------------------------
def _env_argv(b: Path) -> list[str]:
    return ["env", "-C", f"{b}/runs/latest", "-u", "OMP_NUM_THREADS", "sha256sum", "params.bin"]


def env_chdir_latest_is_file(base: Path, bad: bool) -> None:
    run_id = f"run-{token(4)}"
    _fill(base / "runs" / run_id / "params.bin", 8192)
    if bad:  # the older launcher kept the current run id in a file called latest
        write_file(base / "runs" / "latest", run_id + "\n")
    else:
        os.symlink(run_id, base / "runs" / "latest")


# --- setsid -w: a worker unpacked without its exec bits --------------------------------------------------
def _setsid_argv(b: Path) -> list[str]:
    return ["setsid", "-w", f"{b}/bin/worker", f"{b}/data/input.bin"]


def setsid_worker_no_exec_bit(base: Path, bad: bool) -> None:
    # unzip of an archive made without Unix attributes: 0644 for every file
    _tool(base / "bin" / "worker", "/usr/bin/b2sum", 0o644 if bad else 0o755)
    _input(base)


# --- nice -n: a tool a failed download left empty -----------------------------------------------------------
def _nice_argv(b: Path) -> list[str]:
    return ["nice", "-n", "10", f"{b}/bin/convert", f"{b}/data/input.bin"]


def nice_tool_empty(base: Path, bad: bool) -> None:
    if bad:  # the fetch failed after `install -m 755 /dev/null` made the file
        write_file(base / "bin" / "convert", b"", 0o755)
    else:
        _tool(base / "bin" / "convert", "/usr/bin/sum")
    _input(base)


# --- taskset -c 0: a tool built against musl -------------------------------------------------------------------
def _taskset_argv(b: Path) -> list[str]:
    return ["taskset", "-c", "0", f"{b}/bin/fetcher", f"{b}/data/input.bin"]


def taskset_musl_tool(base: Path, bad: bool) -> None:
    data = Path("/usr/bin/md5sum").read_bytes()
    if bad:  # built on the Alpine image: its ELF interpreter is musl's loader, not here
        glibc, musl = b"/lib64/ld-linux-x86-64.so.2", b"/lib/ld-musl-x86_64.so.1"
        assert data.count(glibc) == 1
        data = data.replace(glibc, musl + b"\0" * (len(glibc) - len(musl)))
    write_file(base / "bin" / "fetcher", data, 0o755)
    _input(base)


# --- xargs -I{} sha1sum: a shard unpacked in place into a directory -----------------------------------------
def _xargs_argv(b: Path) -> list[str]:
    return ["xargs", "-a", f"{b}/manifest.txt", "-I{}", "sha1sum", "{}"]


def sha1sum_shard_is_dir(base: Path, bad: bool) -> None:
    shards = [base / "shards" / f"shard-{i:03d}.bin" for i in range(6)]
    for s in shards:
        if bad and s.name == "shard-003.bin":  # `tar -xf shard-003.bin.tar` unpacked it in place
            _fill(s / "part-0", 2048)
            _fill(s / "part-1", 2048)
        else:
            _fill(s, random.randrange(2, 16) * 1024)
    write_file(base / "manifest.txt", "".join(f"{s}\n" for s in shards))


# --- script -qc (as the job): a session log a root rerun left root's -----------------------------------------
def _script_argv(b: Path) -> list[str]:
    return ["script", "-q", "-c", f"sha256sum {b}/data/input.bin", f"{b}/logs/session.log"]


def script_log_root_owned(base: Path, bad: bool) -> None:
    logs = base / "logs"
    _dirs(base, "logs")
    os.chown(logs, NOBODY_UID, NOBODY_UID)
    log = write_file(logs / "session.log", f"Script started {token(4)}\n")  # the previous session's
    if not bad:  # the bad run's was left by a rerun as root (root:0644)
        os.chown(log, NOBODY_UID, NOBODY_UID)
    _input(base)


def _holder_teardown(base: Path) -> None:
    _stop_holders(base)


REAL_THIRTYFIFTH: list[Scenario] = [
    Scenario("t35_runuser_tools_dir_root_only", "runuser -u nobody (the job's staged tool)", _runuser_argv,
             runuser_tools_root_only, EXEC, "EACCES", lambda b: f"{b}/tools/bin/prep",
             description="runuser -u nobody of a tool in a directory a root shell with umask 077 deployed "
                         "0700 (execve EACCES after the switch)"),
    Scenario("t35_stdbuf_filter_venv_gone", "stdbuf -oL (a filter script of the job's venv)", _stdbuf_argv,
             stdbuf_filter_venv_gone, EXEC, "ENOENT", lambda b: f"{b}/bin/filter.py",
             description="stdbuf -oL of a filter script whose venv interpreter links to a python3.9 the "
                         "image no longer has (execve ENOENT on the script)"),
    Scenario("t35_flock_lock_root_0600", "flock (the job's lock, as the job)", _flock_argv,
             flock_lock_root_0600, OPEN, "EACCES", lambda b: f"{b}/locks/train.lock", unprivileged=True,
             description="flock as the job opening a lock file a root rerun with umask 077 left 0600"),
    Scenario("t35_chroot_rootfs_no_loader", "chroot (a staged root file system)", _chroot_argv,
             chroot_rootfs_no_loader, EXEC, "ENOENT", lambda b: "/bin/cat",
             description="chroot into a staged root file system whose lib64/ld-linux link the unpack "
                         "dropped (execve of /bin/cat ENOENT: its interpreter is missing)"),
    Scenario("t35_timeout_binary_open_for_write", "timeout 30 (a staged binary)", _timeout_argv,
             timeout_binary_open_for_write, EXEC, "ETXTBSY", lambda b: f"{b}/bin/digest",
             teardown=_holder_teardown,
             description="timeout running a staged binary a stalled copy still holds open for writing"),
    Scenario("t35_nsenter_netns_deleted", "nsenter --net= (the job's network namespace)", _nsenter_argv,
             nsenter_netns_deleted, OPEN, "ENOENT", lambda b: f"{b}/run/netns/job",
             teardown=_umounting("run/netns/job"),
             description="nsenter into the job's persistent network namespace, deleted by a clean-up cron"),
    Scenario("t35_unshare_netns_path_is_dir", "unshare --net= (a persistent network namespace)", _unshare_argv,
             unshare_netns_path_is_dir, frozenset({"mount"}), "ENOTDIR", lambda b: f"{b}/run/netns/job",
             teardown=_umounting("run/netns/job"),
             description="unshare binding the job's new network namespace over a path a setup script's "
                         "mkdir -p made a directory (mount ENOTDIR)"),
    Scenario("t35_env_chdir_latest_is_file", "env -C runs/latest -u OMP_NUM_THREADS", _env_argv,
             env_chdir_latest_is_file, frozenset({"chdir"}), "ENOTDIR", lambda b: f"{b}/runs/latest",
             description="env -C into runs/latest, a plain file holding the run id that an older launcher "
                         "wrote (the new one links it)"),
    Scenario("t35_setsid_worker_no_exec_bit", "setsid -w (a worker from an unzipped bundle)", _setsid_argv,
             setsid_worker_no_exec_bit, EXEC, "EACCES", lambda b: f"{b}/bin/worker",
             description="setsid -w of a worker unpacked from an archive without Unix modes (0644)"),
    Scenario("t35_nice_tool_empty_download", "nice -n 10 (a downloaded tool)", _nice_argv, nice_tool_empty,
             EXEC, "ENOEXEC", lambda b: f"{b}/bin/convert",
             description="nice of a tool a failed download left empty: execve ENOEXEC, then execvp runs it "
                         "with /bin/sh, which does nothing and exits 0"),
    Scenario("t35_taskset_musl_tool", "taskset -c 0 (a tool built on another image)", _taskset_argv,
             taskset_musl_tool, EXEC, "ENOENT", lambda b: f"{b}/bin/fetcher",
             description="taskset of a tool built against musl: its ELF interpreter /lib/ld-musl-x86_64.so.1 "
                         "is not on this glibc host"),
    Scenario("t35_xargs_sha1sum_shard_is_dir", "sha1sum (run by xargs -I{} over a manifest)", _xargs_argv,
             sha1sum_shard_is_dir, READ, "EISDIR", lambda b: f"{b}/shards/shard-003.bin",
             description="sha1sum of a manifest's shards, one of which a tar -xf unpacked in place into a "
                         "directory of the same name (read EISDIR)"),
    Scenario("t35_script_log_root_owned", "script -q -c (a session log, as the job)", _script_argv,
             script_log_root_owned, OPEN, "EACCES", lambda b: f"{b}/logs/session.log", unprivileged=True,
             description="script -qc as the job writing a session log a rerun as root left root's"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _job_root(base: Path) -> None:
    """A noise case's whole directory is a job's tmpfs (the harness's fresh_dir unmounts base
    itself, recursively, between runs and after the last: a noise case has no teardown)."""
    _mount(base, "size=64m,nr_inodes=4096")


def _random_inputs(base: Path, lo: int = 3, hi: int = 7) -> list[Path]:
    files = [base / "in" / f"sample-{token(3)}.bin" for _ in range(random.randrange(lo, hi))]
    for f in files:
        _fill(f, random.randrange(1, 32) * 1024)
    return sorted(files)


TIMEOUT_NOISE_SH = 'exec timeout -k 1 5 sha256sum "$1"/in/*'


def _timeout_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    _random_inputs(base)


TASKSET_NOISE_SH = 'read cpu < "$1/spec/cpu" && exec taskset -c "$cpu" sha256sum "$1"/in/*'


def _taskset_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    write_file(base / "spec" / "cpu", f"{random.randrange(os.cpu_count() or 1)}\n")
    _random_inputs(base)


NICE_NOISE_SH = 'read n < "$1/spec/nice" && exec nice -n "$n" sort -o "$1/out/sorted.txt" "$1/in/lines.txt"'


def _lines(base: Path) -> None:
    write_file(base / "in" / "lines.txt", "".join(f"{token(6)} {random.randrange(10**6)}\n"
                                              for _ in range(random.randrange(500, 3000))))
    _dirs(base, "out")


def _nice_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    write_file(base / "spec" / "nice", f"{random.randrange(-5, 20)}\n")
    _lines(base)


CLASS_NOISE_SH = ('read io < "$1/spec/ionice" && read sched < "$1/spec/chrt" && '
                  'exec ionice $io chrt $sched b2sum "$1"/in/*')


def _class_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    write_file(base / "spec" / "ionice", random.choice(["-c 3", f"-c 2 -n {random.randrange(8)}"]) + "\n")
    write_file(base / "spec" / "chrt", random.choice(["--batch 0", "--other 0", "--idle 0"]) + "\n")
    _random_inputs(base)


def _detach_argv(b: Path) -> list[str]:
    return ["setsid", "-w", "nohup", "stdbuf", "-oL", "-eL", "sort", "-o", f"{b}/out/sorted.txt",
            f"{b}/in/lines.txt"]


def _detach_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    _lines(base)


UNSHARE_NOISE_SH = ('exec unshare -m -n --propagation private sh -c '
                    '\'mount -t tmpfs -o size=8m scratch "$0/scratch" && cp "$0"/in/* "$0/scratch/" && '
                    'sha256sum "$0"/scratch/* > "$0/out/sums.txt"\' "$1"')


def _unshare_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    _random_inputs(base)
    _dirs(base, "scratch", "out")


def _flock_env_argv(b: Path) -> list[str]:
    return ["flock", f"{b}/locks/job.lock", "-c",
            f"env -i PATH=/usr/bin:/bin xargs -a {b}/manifest.txt -I{{}} sha1sum {{}}"]


def _flock_env_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    files = _random_inputs(base)
    write_file(base / "manifest.txt", "".join(f"{f}\n" for f in files))
    write_file(base / "locks" / "job.lock", f"{random.randrange(1000, 99999)}\n")


def _nsenter_chroot_argv(b: Path) -> list[str]:
    return ["nsenter", f"--net={b}/run/netns/job", "/usr/sbin/chroot", f"{b}/rootfs", "/bin/cat", "/etc/job.conf"]


def _nsenter_chroot_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _job_root(base)
    write_file(base / "run" / "job.id", token(4) + "\n")
    _persistent_netns(base / "run" / "netns" / "job")
    _rootfs(base / "rootfs")


QUIET_THIRTYFIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t35_timeout_never_fires", lambda b: shell_argv(TIMEOUT_NOISE_SH, str(b)), _timeout_noise,
                  description="timeout -k 1 5 of sha256sum over a random number of randomly named inputs: the "
                              "timer is armed and never fires"),
    NoAnomalyCase("t35_taskset_either_cpu", lambda b: shell_argv(TASKSET_NOISE_SH, str(b)), _taskset_noise,
                  description="taskset -c of a CPU the spec picks at random (0 or 1) running sha256sum"),
    NoAnomalyCase("t35_nice_random_level", lambda b: shell_argv(NICE_NOISE_SH, str(b)), _nice_noise,
                  description="nice -n of a random level (-5..19, as root) running sort of random lines"),
    NoAnomalyCase("t35_ionice_chrt_random_classes", lambda b: shell_argv(CLASS_NOISE_SH, str(b)), _class_noise,
                  description="ionice (idle, or best-effort at a random level) and chrt (batch, other or idle) "
                              "picked at random, running b2sum"),
    NoAnomalyCase("t35_setsid_nohup_stdbuf_sort", _detach_argv, _detach_noise,
                  description="setsid -w nohup stdbuf -oL -eL sort of random lines"),
    NoAnomalyCase("t35_unshare_private_scratch", lambda b: shell_argv(UNSHARE_NOISE_SH, str(b)), _unshare_noise,
                  description="unshare -m -n with a private scratch tmpfs, random inputs copied and summed there"),
    NoAnomalyCase("t35_flock_env_xargs_manifest", _flock_env_argv, _flock_env_noise,
                  description="flock -c of env -i xargs -I{} sha1sum over a manifest of random names, the lock "
                              "file holding a random previous pid"),
    NoAnomalyCase("t35_nsenter_netns_then_chroot", _nsenter_chroot_argv, _nsenter_chroot_noise,
                  description="nsenter into a persistent netns, then chroot into a staged root file system "
                              "reading a random job.conf"),
]


def quiet_teardown() -> None:
    """Stop a stalled writer a failed case left and unmount what any case may have left mounted."""
    _stop_holders()
    for name in [*(s.name for s in REAL_THIRTYFIFTH), *(c.name for c in QUIET_THIRTYFIFTH)]:
        umount(ROOT / name / "run" / "netns" / "job")
        umount(ROOT / name)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
