"""A fourth set of real Debian programs with one real fault each, on programs and faults the
first three sets do not have: multi-threaded programs (xz -T2, sort --parallel, python
thread pools), faults late in a run after much successful I/O (cp -r, md5sum over many
files, dd's last O_DIRECT block), faults in a child of a shell pipeline, of `xargs -P`, of
`make -j2` and of `find -exec`, `env -i` dropping PATH, nice/ionice/chrt/taskset/prlimit
refused, `timeout` killing a hung child, `flock -w` giving up, chown as nobody, a hard link
across a bind mount, a missing xattr, getent with a broken nsswitch.conf (in a private
mount namespace), python open(..., 'x'), the sqlite3 shell on a read-only mount and in a
directory where its journal cannot go, bash's noclobber, ln -s over an existing link,
mktemp in a read-only directory, fallocate and zstd on a full disk, perl's rename across
filesystems, git on a read-only mount, and failures without any failing syscall (gzip -d of
a truncated file, a python validator's and a perl die's exit status, sort -c, sha256sum -c,
xz -T2 -d of a corrupt archive, json.tool); a second round: an error the good runs also meet
and get past turned fatal (cp --reflink=always), ulimit -v, a privileged port, a missing
LD_PRELOAD library, make finding a stale target up to date, a pipeline's first stage, tar -k
meeting a leftover file; a third round: kill of another user's pid, umount of a busy mount,
mv into a non-empty directory, cp into an immutable directory, a redirection from an fd that
is not open, a unix socket without permission, a daemon failing after its start script
returned.

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints. The
good-vs-good cases (`QUIET_FOURTH`) carry run-to-run noise: xz's and sort's worker threads
and chunk files, random temp names in a thread pool, /proc reads whose sizes vary, random
bytes and uuids, a module compiled in one run and read from __pycache__ in the others, EAGAIN
retries on a non-blocking pipe, a lock wait, timeout's timer.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount_after, write
from .harness import NoAnomalyCase, Scenario
from .real import NOBODY_UID, own, sh
from .real_more import CLIENT_PY, UNIX_LISTENER
from .real_third import BACKGROUND

PY3 = "/usr/bin/python3"
NO_PATH = ""  # the fault's call has no path (a pid, a priority, a CPU mask)


def _lines(n: int, width: int = 40) -> str:
    return "".join(f"{(i * 7919) % 100003:06d} {'x' * width}\n" for i in range(n))


# --- multi-threaded programs ----------------------------------------------------------------
def xz_output_exists(base: Path, bad: bool) -> None:
    write(base / "data.txt", _lines(20000))
    if bad:  # an interrupted run left a partial output
        write(base / "data.txt.xz", "partial")


def sort_parallel_tmp_full(base: Path, bad: bool) -> None:
    write(base / "in.txt", _lines(6000))
    mount_tmpfs(base / "tmp", "1m")
    if bad:
        fill_up(base / "tmp")


THREAD_WRITE_PY = ("import os, sys\n"
                   "from concurrent.futures import ThreadPoolExecutor\n"
                   "out = sys.argv[1]\n"
                   "def part(i):\n"
                   "    with open(os.path.join(out, f'part{i}.bin'), 'wb') as fh:\n"
                   "        for _ in range(10): fh.write(bytes([65 + i]) * 4096)\n"
                   "with ThreadPoolExecutor(3) as pool:\n"
                   "    list(pool.map(part, range(6)))\n")


def python_threads_disk_full(base: Path, bad: bool) -> None:
    write(base / "job.py", THREAD_WRITE_PY)
    mount_tmpfs(base / "out", "512k")
    if bad:
        fill_up(base / "out")


# --- children of make -j2, pipelines, xargs -P, find -exec -----------------------------------
MAKEFILE = ("all: out/a.txt out/b.txt\n"
            "out/%.txt: in/%.txt\n\tsort $< > $@\n")


def make_j2_recipe_fails(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    (base / "out").mkdir()
    write(base / "in" / "a.txt", _lines(300))
    write(base / "in" / "b.txt", _lines(400))
    write(base / "Makefile", MAKEFILE)
    own(base)
    if bad:  # a stale output from a run as root, read-only to the job
        write(base / "out" / "b.txt", "stale\n")
        os.chown(base / "out" / "b.txt", 0, 0)
        (base / "out" / "b.txt").chmod(0o644)
        os.utime(base / "out" / "b.txt", (0, 0))  # older than its input: make rebuilds it


def pipeline_patterns_unreadable(base: Path, bad: bool) -> None:
    write(base / "in.txt", _lines(2000))
    write(base / "patterns.txt", "000123\n004711\n")
    own(base)
    if bad:
        os.chown(base / "patterns.txt", 0, 0)
        (base / "patterns.txt").chmod(0o600)


def xargs_cp_unreadable(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    (base / "out").mkdir()
    for i in range(8):
        write(base / "in" / f"f{i}.txt", _lines(50 + i))
    own(base)
    if bad:
        os.chown(base / "in" / "f5.txt", 0, 0)
        (base / "in" / "f5.txt").chmod(0o600)


def find_exec_bad_binary(base: Path, bad: bool) -> None:
    (base / "jobs").mkdir()
    for n in ("a", "b", "c"):
        write(base / "jobs" / f"{n}.job", "#!/bin/sh\nexit 0\n", 0o755)
    if bad:  # a half-copied build artefact: an ELF header and nothing else
        (base / "jobs" / "b.job").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9)


def env_i_drops_path(base: Path, bad: bool) -> None:
    (base / "bin").mkdir()
    write(base / "bin" / "jobtool", "#!/bin/sh\nexit 0\n", 0o755)
    # The wrapper was "hardened" with env -i; the bad run's version forgot to pass PATH on.
    keep = "" if bad else f"PATH={base}/bin:/usr/bin:/bin "
    write(base / "run.sh", f"exec /usr/bin/env -i {keep}/bin/sh -c 'jobtool --check'\n", 0o755)


# --- priorities, affinity, limits: refused ---------------------------------------------------
def _conf(value_good: str, value_bad: str):
    def setup(base: Path, bad: bool) -> None:
        write(base / "data.bin", "d" * 65536)
        write(base / "sched.conf", value_bad if bad else value_good)
        own(base)
    return setup


def _wrapped(tool: str):
    """A job wrapper that takes the tool's settings from sched.conf."""
    return lambda b: ["/bin/sh", "-c", f"exec {tool} $(/usr/bin/cat {b}/sched.conf) /usr/bin/sha256sum {b}/data.bin"]


# --- timeout, flock -w ------------------------------------------------------------------------
def timeout_kills_child(base: Path, bad: bool) -> None:
    if bad:  # the producer never came: a FIFO nobody writes
        os.mkfifo(base / "in")
    else:
        write(base / "in", "line\n")


def flock_w_gives_up(base: Path, bad: bool) -> None:
    write(base / "data.bin", "d" * 4096)
    write(base / "lock", "")
    if bad:  # a stuck job holds the lock
        BACKGROUND.start(["/usr/bin/flock", str(base / "lock"), "/usr/bin/sleep", "30"])
        for _ in range(100):
            if subprocess.run(["/usr/bin/flock", "-n", str(base / "lock"), "true"]).returncode:
                break
            threading.Event().wait(0.02)


# --- late failures after much successful I/O --------------------------------------------------
def dd_direct_unaligned(base: Path, bad: bool) -> None:
    # O_DIRECT on ext4 (/tmp) needs block-aligned reads. (Not the output side: GNU dd turns
    # O_DIRECT off for a short last output block by itself.)
    write(base / "in.img", "i" * (256 * 1024))
    write(base / "bs.conf", "1000" if bad else "64k")


def cp_r_late_unreadable(base: Path, bad: bool) -> None:
    for d in range(10):
        (base / "src" / f"d{d}").mkdir(parents=True)
        for f in range(30):
            write(base / "src" / f"d{d}" / f"f{f:02d}", f"{d}/{f}\n" * 20)
    own(base)
    if bad:
        os.chown(base / "src" / "d9" / "f29", 0, 0)
        (base / "src" / "d9" / "f29").chmod(0o600)


MD5_FILES = 120


def md5sum_late_missing(base: Path, bad: bool) -> None:
    (base / "parts").mkdir()
    for i in range(MD5_FILES):
        if not (bad and i == MD5_FILES - 3):
            write(base / "parts" / f"p{i:03d}", f"part {i}\n" * 50)


# --- ownership, links, xattrs, nsswitch --------------------------------------------------------
def chown_not_owner(base: Path, bad: bool) -> None:
    write(base / "report.txt", "r\n")
    own(base)
    if bad:  # produced by a root cron job
        os.chown(base / "report.txt", 0, 0)


def cp_link_bind_mount(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    (base / "cache").mkdir()
    (base / "elsewhere").mkdir()
    write(base / "src" / "build.tar", "t" * 2048)
    if bad:  # the cache is now a bind mount: same filesystem, another mount
        sh(f"mount --bind {base}/elsewhere {base}/cache")


XATTR_PY = ("import hashlib, os, sys\n"
            "p = sys.argv[1]\n"
            "want = os.getxattr(p, 'user.sha256').decode()\n"
            "with open(p, 'rb') as fh: got = hashlib.sha256(fh.read()).hexdigest()\n"
            "sys.exit(0 if got == want else 1)\n")


def xattr_missing(base: Path, bad: bool) -> None:
    write(base / "verify.py", XATTR_PY)
    data = b"payload\n" * 128
    (base / "data.bin").write_bytes(data)
    if not bad:  # the bad run's copy went through a tool that drops xattrs
        import hashlib
        os.setxattr(base / "data.bin", "user.sha256", hashlib.sha256(data).hexdigest().encode())


def nsswitch_module_missing(base: Path, bad: bool) -> None:
    write(base / "nsswitch.conf", f"passwd: {'ldap' if bad else 'files'}\ngroup: files\nhosts: files\n")


# --- python, sqlite3, shells -----------------------------------------------------------------
OPEN_X_PY = ("import sys\n"
             "with open(sys.argv[1] + '/report.txt', 'x') as fh: fh.write('total 42\\n')\n")


def open_x_exists(base: Path, bad: bool) -> None:
    write(base / "job.py", OPEN_X_PY)
    if bad:  # the last run's report was never collected
        write(base / "report.txt", "total 41\n")


def sqlite_readonly_mount(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "1m")
    sh(f"/usr/bin/sqlite3 {base}/mnt/jobs.db 'create table runs(id integer)'")
    if bad:
        sh(f"mount -o remount,ro {base}/mnt")


def sqlite_journal_dir(base: Path, bad: bool) -> None:
    (base / "db").mkdir()
    sh(f"/usr/bin/sqlite3 {base}/db/jobs.db 'create table runs(id integer)'")
    own(base)
    if bad:  # the database file is the job's, its directory root's: the journal cannot go there
        os.chown(base / "db", 0, 0)


def noclobber_exists(base: Path, bad: bool) -> None:
    write(base / "job.sh", f"set -C\necho done > {base}/result\n")
    if bad:
        write(base / "result", "done\n")


def ln_s_exists(base: Path, bad: bool) -> None:
    (base / "releases" / "v2").mkdir(parents=True)
    if bad:  # the deploy script runs ln -s without -f over the last release's link
        (base / "current").symlink_to("releases/v1")


def mktemp_readonly_dir(base: Path, bad: bool) -> None:
    (base / "scratch").mkdir()
    own(base)
    if bad:
        os.chown(base / "scratch", 0, 0)


def fallocate_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        fill_up(base / "mnt")


def zstd_disk_full(base: Path, bad: bool) -> None:
    # incompressible-ish text, so the output is large and the disk fills late
    write(base / "data.txt", "".join(f"{(i * 2654435761) % 4294967296:010x}\n" for i in range(40000)))
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        write(base / "mnt" / "filler", "f" * (880 * 1024))


RENAME_PL = ('my ($tmp, $dst) = @ARGV;\n'
             'open(my $fh, ">", $tmp) or die "open: $!"; print $fh "v2\\n"; close $fh;\n'
             'rename($tmp, $dst) or die "rename $tmp: $!\\n";\n')


def perl_rename_exdev(base: Path, bad: bool) -> None:
    write(base / "publish.pl", RENAME_PL)
    (base / "tmp").mkdir()
    (base / "srv").mkdir()
    if bad:  # the served directory moved to its own filesystem
        mount_tmpfs(base / "srv", "1m")


def git_readonly_mount(base: Path, bad: bool) -> None:
    repo = base / "repo"
    mount_tmpfs(repo, "4m")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    sh("git init -q -b main . && echo a > a.txt && git add a.txt && git commit -q -m one && echo b > b.txt",
       repo, env)
    if bad:
        sh(f"mount -o remount,ro {repo}")


# --- failures without a failing syscall --------------------------------------------------------
def gzip_truncated(base: Path, bad: bool) -> None:
    write(base / "data.txt", _lines(3000))
    subprocess.run(["gzip", "-n", str(base / "data.txt")], check=True)
    if bad:  # the transfer stopped half way
        gz = base / "data.txt.gz"
        gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])


VALIDATE_PY = ("import sys\n"
               "for n, line in enumerate(open(sys.argv[1]), 1):\n"
               "    if len(line.split(',')) != 3:\n"
               "        sys.stderr.write(f'{sys.argv[1]}:{n}: expected 3 fields\\n')\n"
               "        sys.exit(3)\n"
               "print('ok')\n")


def python_validation_exit(base: Path, bad: bool) -> None:
    write(base / "validate.py", VALIDATE_PY)
    rows = [f"{i},{i * 3},{i % 7}" for i in range(200)]
    if bad:
        rows[150] = "150,450"  # a truncated row
    write(base / "rows.csv", "\n".join(rows) + "\n")


PERL_CONF = ('open(my $fh, "<", $ARGV[0]) or die "open: $!";\n'
             'my %c = map { chomp; split /=/, $_, 2 } <$fh>;\n'
             'die "workers must be a number\\n" unless $c{workers} =~ /^\\d+$/;\n'
             'print "workers=$c{workers}\\n";\n')


def perl_config_die(base: Path, bad: bool) -> None:
    write(base / "check.pl", PERL_CONF)
    write(base / "job.conf", f"name=nightly\nworkers={'four' if bad else '4'}\n")


# --- second round: routine errors turned fatal, resource limits, more failures without errno ---
def cp_reflink_always(base: Path, bad: bool) -> None:
    (base / "src.img").write_bytes(bytes(range(256)) * 400)
    # the bad run's copy mode came from a config written for a btrfs host
    write(base / "mode", "always" if bad else "auto")


def ulimit_v_enomem(base: Path, bad: bool) -> None:
    write(base / "limit", "300000" if bad else "unlimited")


BIND_PY = ("import socket, sys\n"
           "s = socket.socket()\n"
           "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
           "s.bind(('127.0.0.1', int(open(sys.argv[1]).read())))\n"
           "s.listen(1)\n"
           "s.close()\n")


def bind_privileged_port(base: Path, bad: bool) -> None:
    from .harness import PORTS
    write(base / "server.py", BIND_PY)
    write(base / "port", "80" if bad else str(PORTS[13]))  # the bad config copied from the root service


def ld_preload_missing(base: Path, bad: bool) -> None:
    (base / "lib").mkdir()
    write(base / "shim.c", "int shim_loaded = 1;\n")
    sh(f"gcc -shared -fPIC -o {base}/lib/libshim.so {base}/shim.c")
    write(base / "data.bin", "d" * 4096)
    if bad:  # the shim was renamed in a new release; the wrapper still names the old file
        (base / "lib" / "libshim.so").rename(base / "lib" / "libshim.so.2")


def make_stale_target(base: Path, bad: bool) -> None:
    write(base / "in.txt", _lines(200))
    write(base / "Makefile", "out.txt: in.txt\n\tsort in.txt > out.txt\n")
    if bad:  # an output from an earlier run with other input, newer than the input
        write(base / "out.txt", "stale\n")


def sort_check_unsorted(base: Path, bad: bool) -> None:
    rows = sorted(_lines(500).splitlines())
    if bad:
        rows[400], rows[401] = rows[401], rows[400]
    write(base / "ids.txt", "\n".join(rows) + "\n")


def sha256sum_mismatch(base: Path, bad: bool) -> None:
    (base / "pkg").mkdir()
    for i in range(5):
        write(base / "pkg" / f"part{i}.bin", f"part {i}\n" * 300)
    sh(f"sha256sum {base}/pkg/part*.bin > {base}/SHA256SUMS")
    if bad:  # one part changed in transfer
        write(base / "pkg" / "part3.bin", "part 3\n" * 299 + "part 8\n")


def xz_threads_corrupt(base: Path, bad: bool) -> None:
    write(base / "data.txt", "".join(f"{(i * 2654435761) % 4294967296:010x}\n" for i in range(120000)))
    subprocess.run(["xz", "-T2", "--block-size=256KiB", "-k", str(base / "data.txt")], check=True)
    if bad:  # a flipped byte in the middle of the archive
        xz = base / "data.txt.xz"
        data = bytearray(xz.read_bytes())
        data[len(data) // 2] ^= 0xFF
        xz.write_bytes(bytes(data))


def json_invalid(base: Path, bad: bool) -> None:
    items = ",\n".join(f'  {{"id": {i}, "name": "item{i}"}}' for i in range(300))
    text = f"[\n{items}\n]\n"
    if bad:  # a hand edit left a trailing comma
        text = text.replace('"item299"}', '"item299"},')
    write(base / "items.json", text)


def pipeline_first_stage_missing(base: Path, bad: bool) -> None:
    (base / "parts").mkdir()
    for i in range(6):
        if not (bad and i == 5):
            write(base / "parts" / f"p{i}.txt", _lines(400 + i))


def tar_keep_old_files(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    (base / "out").mkdir()
    for i in range(6):
        write(base / "src" / f"f{i}.txt", "".join(f"{(j * 2654435761 + i) % 4294967296:010x}\n" for j in range(3000)))
    sh("tar -cf ../bundle.tar f0.txt f1.txt f2.txt f3.txt f4.txt f5.txt", base / "src")
    if bad:  # an interrupted extraction left its last file behind
        write(base / "out" / "f4.txt", "partial\n")


# --- third round: process control, mounts, sockets, descriptors --------------------------------
def kill_other_users_pid(base: Path, bad: bool) -> None:
    # The service's pid file is stale and its pid now belongs to another user's process.
    if bad:
        pid = BACKGROUND.start(["/usr/bin/sleep", "120"]).pid
    else:
        # (until setpriv has run sleep as nobody: before that the good run's kill was refused
        # EPERM as well, and the bad run's EPERM looked known -- CI 104, under load)
        pid = BACKGROUND.start_running(["/usr/bin/setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}",
                                        "--clear-groups", "/usr/bin/sleep", "120"], "/usr/bin/sleep").pid
    write(base / "app.pid", f"{pid}\n")


def umount_busy(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "1m")
    write(base / "mnt" / "scratch.dat", "s\n")
    if bad:  # a forgotten shell still sits in the scratch mount
        BACKGROUND.start(["/usr/bin/sleep", "120"], cwd=base / "mnt")
        threading.Event().wait(0.05)


def _busy_teardown(base: Path) -> None:
    BACKGROUND.stop()
    umount_after("mnt")(base)


def mv_into_nonempty(base: Path, bad: bool) -> None:
    (base / "build").mkdir()
    write(base / "build" / "app.bin", "v2\n")
    (base / "release").mkdir()
    if bad:  # the last release's build directory is still there, not empty
        (base / "release" / "build").mkdir()
        write(base / "release" / "build" / "app.bin", "v1\n")


def cp_immutable_dir(base: Path, bad: bool) -> None:
    (base / "conf").mkdir()
    write(base / "app.conf", "level=2\n")
    if bad:  # the config directory was locked with chattr +i
        subprocess.run(["chattr", "+i", str(base / "conf")], check=True)


def _immutable_teardown(base: Path) -> None:
    if (base / "conf").exists():
        subprocess.run(["chattr", "-i", str(base / "conf")], capture_output=True)


def bash_fd_not_open(base: Path, bad: bool) -> None:
    write(base / "in.txt", "first line\n")
    # setup.sh opens the input on fd 7; the bad run's version lost that line in a refactor
    write(base / "setup.sh", "MODE=batch\n" if bad else f"MODE=batch\nexec 7<{base}/in.txt\n")
    write(base / "job.sh", f". {base}/setup.sh\nread line <&7\necho \"$MODE $line\"\n")


def unix_socket_no_permission(base: Path, bad: bool) -> None:
    write(base / "client.py", CLIENT_PY)
    UNIX_LISTENER.start(base / "app.sock", listen=True)
    # the daemon restarted under a tighter umask: its socket is root's alone
    os.chmod(base / "app.sock", 0o700 if bad else 0o777)


def daemon_config_missing(base: Path, bad: bool) -> None:
    if not bad:
        write(base / "daemon.conf", "port=0\n")


# --- guards of the differ's rules ---------------------------------------------------------------
PRODUCER_PY = ("import sys\n"
               "for i in range(20000):\n"
               "    sys.stdout.write(f'{i:08d} record\\n')\n")


def reflink_auto_disk_full(base: Path, bad: bool) -> None:
    (base / "src.img").write_bytes(bytes(range(256)) * 1600)
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        fill_up(base / "mnt")


def consumer_quits(base: Path, bad: bool) -> None:
    # The consumer's limit comes from a config; the bad run's says 1 (a typo for 10000): it
    # stops after one line and the producer (Python ignores SIGPIPE) gets EPIPE.
    write(base / "producer.py", PRODUCER_PY)
    write(base / "limit", "1" if bad else "20000")


SCHED_PROBES = frozenset({"sched_setscheduler", "sched_setattr"})

REAL_FOURTH: list[Scenario] = [
    # multi-threaded
    Scenario("xz_threads_output_exists", "xz -T2 -k", lambda b: ["/usr/bin/xz", "-T2", "-k", f"{b}/data.txt"],
             xz_output_exists, frozenset({"openat"}), "EEXIST", lambda b: f"{b}/data.txt.xz",
             description="an interrupted run left data.txt.xz: xz creates its output with O_EXCL"),
    Scenario("sort_parallel_tmp_full", "sort --parallel=2 -S 64K -T tmp",
             lambda b: ["/usr/bin/sort", "--parallel=2", "-S", "64K", "-T", f"{b}/tmp", f"{b}/in.txt",
                        "-o", f"{b}/out.txt"],
             sort_parallel_tmp_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/tmp/sort*",
             teardown=umount_after("tmp"), description="the temporary directory's filesystem is full: a chunk "
             "file's write fails after the input was read"),
    Scenario("python_threads_disk_full", "python3 ThreadPoolExecutor(3) writers",
             lambda b: [PY3, "-S", f"{b}/job.py", f"{b}/out"],
             python_threads_disk_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/out/part*.bin",
             teardown=umount_after("out"), description="three threads write six parts; the disk is full"),
    # children of make -j2, a pipeline, xargs -P, find -exec, env -i
    Scenario("make_j2_recipe_fails", "make -j2 (nobody)", lambda b: ["/usr/bin/make", "-s", "-j2", "-C", str(b)],
             make_j2_recipe_fails, frozenset({"openat"}), "EACCES", lambda b: f"{b}/out/b.txt",
             unprivileged=True, description="one of two parallel recipes cannot write its target (root's, "
             "read-only): the recipe shell's redirection fails, make stops"),
    Scenario("pipeline_patterns_unreadable", "sh: cat | grep -F -f | wc -l (nobody)",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/cat {b}/in.txt | /usr/bin/grep -F -f {b}/patterns.txt | /usr/bin/wc -l"],
             pipeline_patterns_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/patterns.txt",
             unprivileged=True, description="the middle of a pipeline cannot read its pattern file"),
    Scenario("xargs_p2_cp_unreadable", "sh: find | xargs -P2 cp (nobody)",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/find {b}/in -type f -print0 | "
                        f"/usr/bin/xargs -0 -P2 -n1 /usr/bin/cp -t {b}/out"],
             xargs_cp_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/in/f5.txt",
             unprivileged=True, description="one of eight copies, two at a time, cannot read its input"),
    Scenario("find_exec_bad_binary", "find -exec {} ;",
             lambda b: ["/usr/bin/find", f"{b}/jobs", "-name", "*.job", "-exec", "{}", ";"],
             find_exec_bad_binary, frozenset({"execve"}), "ENOEXEC", lambda b: f"{b}/jobs/b.job",
             description="one job is a truncated ELF file: execve ENOEXEC, and execvp retries it with /bin/sh"),
    Scenario("env_i_drops_path", "sh wrapper: env -i sh -c tool", lambda b: ["/bin/sh", f"{b}/run.sh"],
             env_i_drops_path, frozenset({"newfstatat", "stat", "statx", "execve"}), "ENOENT", lambda b: "*/jobtool",
             description="env -i without PATH: dash looks jobtool up in its default PATH with stat (ENOENT "
             "in each directory) and says not found, no execve"),
    # refused priorities, affinity, limits (nobody)
    Scenario("nice_negative_nobody", "sh: nice -n $(cat conf) (nobody)", _wrapped("/usr/bin/nice -n"),
             _conf("5", "-5"), frozenset({"setpriority"}), "EACCES", lambda b: NO_PATH,
             unprivileged=True, description="raising priority needs CAP_SYS_NICE: nice warns and runs the "
             "command anyway"),
    Scenario("ionice_realtime_nobody", "sh: ionice -c $(cat conf) (nobody)", _wrapped("/usr/bin/ionice -c"),
             _conf("3", "1"), frozenset({"ioprio_set"}), "EPERM", lambda b: NO_PATH,
             unprivileged=True, description="the realtime I/O class needs CAP_SYS_ADMIN"),
    Scenario("chrt_fifo_nobody", "sh: chrt $(cat conf) (nobody)", _wrapped("/usr/bin/chrt"),
             _conf("-o 0", "-f 10"), SCHED_PROBES, "EPERM", lambda b: NO_PATH,
             unprivileged=True, description="SCHED_FIFO needs CAP_SYS_NICE"),
    Scenario("taskset_offline_cpu", "sh: taskset -c $(cat conf)", _wrapped("/usr/bin/taskset -c"),
             _conf("0", "7"), frozenset({"sched_setaffinity"}), "EINVAL", lambda b: NO_PATH,
             description="the configured CPU does not exist on this (2-CPU) machine"),
    Scenario("prlimit_raise_hard_nobody", "sh: prlimit --nofile=$(cat conf) (nobody)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/prlimit --nofile=$(/usr/bin/cat {b}/sched.conf) "
                        f"/usr/bin/sha256sum {b}/data.bin"],
             _conf("256:256", "2000000:2000000"), frozenset({"prlimit64", "setrlimit"}), "EPERM", lambda b: NO_PATH,
             unprivileged=True, description="raising the hard limit needs CAP_SYS_RESOURCE"),
    # timeout, flock -w
    Scenario("timeout_kills_hung_child", "timeout 1 sh -c 'read < in'",
             lambda b: ["/usr/bin/timeout", "1", "/bin/sh", "-c", f"read line < {b}/in; echo $line"],
             timeout_kills_child, frozenset({"openat"}), "ERESTARTSYS", lambda b: f"{b}/in",
             description="the input is a FIFO nobody writes: the child's open blocks until timeout's SIGTERM "
             "interrupts it (strace: openat = ? ERESTARTSYS, killed by SIGTERM)"),
    Scenario("flock_w_gives_up", "flock -w 0.3", lambda b: ["/usr/bin/flock", "-w", "0.3", f"{b}/lock",
                                                          "/usr/bin/sha256sum", f"{b}/data.bin"],
             flock_w_gives_up, frozenset({"flock"}), "ERESTARTSYS", lambda b: f"{b}/lock",
             teardown=BACKGROUND.stop, description="a stuck job holds the lock: flock(LOCK_EX) is interrupted by "
             "flock's own timer (strace: ERESTARTSYS, then EINTR from rt_sigreturn)"),
    # late
    Scenario("dd_direct_unaligned", "sh: dd iflag=direct bs=$(cat conf)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/dd if={b}/in.img of={b}/out.img iflag=direct "
                        f"bs=$(/usr/bin/cat {b}/bs.conf)"],
             dd_direct_unaligned, frozenset({"read"}), "EINVAL", lambda b: f"{b}/in.img",
             description="a block size that is no multiple of 512: the first O_DIRECT read is refused"),
    Scenario("cp_r_late_unreadable", "cp -r (nobody)", lambda b: ["/usr/bin/cp", "-r", f"{b}/src", f"{b}/dst"],
             cp_r_late_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/src/d9/f29",
             unprivileged=True, description="the 300th file of the tree is root-only"),
    Scenario("md5sum_late_missing", "md5sum over 120 files",
             lambda b: ["/usr/bin/md5sum", *(f"{b}/parts/p{i:03d}" for i in range(MD5_FILES))],
             md5sum_late_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/parts/p{MD5_FILES - 3:03d}",
             description="one of the last parts never arrived"),
    # ownership, links, xattrs, nsswitch
    Scenario("chown_not_owner", "chown (nobody)", lambda b: ["/usr/bin/chown", "nobody:nogroup", f"{b}/report.txt"],
             chown_not_owner, frozenset({"chown", "fchown", "fchownat", "lchown"}), "EPERM",
             lambda b: f"{b}/report.txt", unprivileged=True, description="the file is root's"),
    Scenario("cp_link_bind_mount", "cp -l", lambda b: ["/usr/bin/cp", "-l", f"{b}/src/build.tar", f"{b}/cache/"],
             cp_link_bind_mount, frozenset({"link", "linkat"}), "EXDEV", lambda b: f"{b}/src/build.tar",
             teardown=umount_after("cache"), description="a bind mount: same filesystem, but link(2) refuses "
             "to cross mounts"),
    Scenario("xattr_missing", "python3 os.getxattr", lambda b: [PY3, "-S", f"{b}/verify.py", f"{b}/data.bin"],
             xattr_missing, frozenset({"getxattr", "lgetxattr", "fgetxattr"}), "ENODATA", lambda b: f"{b}/data.bin",
             description="the checksum xattr was lost in a copy"),
    Scenario("nsswitch_module_missing", "unshare -m: getent passwd with a private nsswitch.conf",
             lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
                        f"/usr/bin/mount --bind {b}/nsswitch.conf /etc/nsswitch.conf && /usr/bin/getent passwd nobody"],
             nsswitch_module_missing, frozenset({"openat"}), "ENOENT", lambda b: "*/libnss_ldap.so.2",
             description="nsswitch.conf names ldap, whose NSS module is not installed"),
    # python, sqlite3, shells, coreutils
    Scenario("python_open_x_exists", "python3 open(..., 'x')", lambda b: [PY3, "-S", f"{b}/job.py", str(b)],
             open_x_exists, frozenset({"openat"}), "EEXIST", lambda b: f"{b}/report.txt",
             description="the last run's report is still there"),
    Scenario("sqlite_shell_readonly_mount", "sqlite3 shell insert",
             lambda b: ["/usr/bin/sqlite3", f"{b}/mnt/jobs.db", "insert into runs values (1)"],
             sqlite_readonly_mount, frozenset({"openat"}), "EROFS", lambda b: f"{b}/mnt/jobs.db",
             teardown=umount_after("mnt"), description="the read-write open fails, sqlite opens read-only and "
             "the insert fails (attempt to write a readonly database)"),
    Scenario("sqlite_shell_journal_dir", "sqlite3 shell insert (nobody)",
             lambda b: ["/usr/bin/sqlite3", f"{b}/db/jobs.db", "insert into runs values (1)"],
             sqlite_journal_dir, frozenset({"openat"}), "EACCES", lambda b: f"{b}/db/jobs.db-journal",
             unprivileged=True, description="the database is writable, its directory not: no rollback journal"),
    Scenario("bash_noclobber_exists", "bash set -C", lambda b: ["/bin/bash", f"{b}/job.sh"],
             noclobber_exists, frozenset({"newfstatat", "stat", "statx", "lstat"}), None, lambda b: f"{b}/result",
             description="noclobber: bash stats the target, finds a regular file and refuses (no failing call)"),
    Scenario("ln_s_exists", "ln -s", lambda b: ["/usr/bin/ln", "-s", "releases/v2", f"{b}/current"],
             ln_s_exists, frozenset({"symlink", "symlinkat"}), "EEXIST", lambda b: f"{b}/current",
             description="ln -s without -f over the last release's link"),
    Scenario("mktemp_readonly_dir", "mktemp -p (nobody)", lambda b: ["/usr/bin/mktemp", "-p", f"{b}/scratch", "job.XXXXXX"],
             mktemp_readonly_dir, frozenset({"openat"}), "EACCES", lambda b: f"{b}/scratch/job.*",
             unprivileged=True, description="the scratch directory is root's"),
    Scenario("fallocate_disk_full", "fallocate -l", lambda b: ["/usr/bin/fallocate", "-l", "512K", f"{b}/mnt/swap.img"],
             fallocate_full, frozenset({"fallocate"}), "ENOSPC", lambda b: f"{b}/mnt/swap.img",
             teardown=umount_after("mnt"), description="the filesystem is full"),
    Scenario("zstd_disk_full_late", "zstd -o", lambda b: ["/usr/bin/zstd", "-q", "-1", f"{b}/data.txt", "-o",
                                                         f"{b}/mnt/data.txt.zst"],
             zstd_disk_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/data.txt.zst",
             teardown=umount_after("mnt"), description="the disk fills part way through the output"),
    Scenario("perl_rename_exdev", "perl rename", lambda b: ["/usr/bin/perl", f"{b}/publish.pl", f"{b}/tmp/site.new",
                                                             f"{b}/srv/site"],
             perl_rename_exdev, frozenset({"rename", "renameat", "renameat2"}), "EXDEV", lambda b: f"{b}/tmp/site.new",
             teardown=umount_after("srv"), description="the served directory is a filesystem of its own now"),
    Scenario("git_add_readonly_mount", "git add", lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "add", "b.txt"],
             git_readonly_mount, frozenset({"openat"}), "EROFS", lambda b: f"{b}/repo/.git/index.lock",
             teardown=umount_after("repo"), description="the checkout's filesystem is read-only"),
    # third round
    Scenario("kill_other_users_pid", "sh: kill $(cat app.pid) (nobody)",
             lambda b: ["/bin/sh", "-c", f"kill -TERM $(/usr/bin/cat {b}/app.pid) && echo stopped"],
             kill_other_users_pid, frozenset({"kill"}), "EPERM", lambda b: NO_PATH,
             unprivileged=True, teardown=BACKGROUND.stop,
             description="a stale pid file whose pid now belongs to another user's process"),
    Scenario("umount_busy", "umount", lambda b: ["/usr/bin/umount", f"{b}/mnt"],
             umount_busy, frozenset({"umount2", "umount"}), "EBUSY", lambda b: f"{b}/mnt",
             teardown=_busy_teardown, description="a process still has its working directory in the mount"),
    Scenario("mv_into_nonempty_dir", "mv dir into dir", lambda b: ["/usr/bin/mv", f"{b}/build", f"{b}/release"],
             mv_into_nonempty, frozenset({"rename", "renameat", "renameat2"}), "ENOTEMPTY",
             lambda b: f"{b}/release/build", description="release/build is left from the last release, not empty"),
    Scenario("cp_into_immutable_dir", "cp", lambda b: ["/usr/bin/cp", f"{b}/app.conf", f"{b}/conf/"],
             cp_immutable_dir, frozenset({"openat"}), "EPERM", lambda b: f"{b}/conf/app.conf",
             teardown=_immutable_teardown, description="the directory is immutable (chattr +i): EPERM even for root"),
    # (fd 7 is closed first: `tracer record` hands the command the descriptors it inherited)
    Scenario("bash_fd_not_open", "bash: read <&7",
             lambda b: ["/bin/bash", "-c", f"exec 7<&-; exec /bin/bash {b}/job.sh"],
             bash_fd_not_open, frozenset({"dup2", "dup3", "fcntl"}), "EBADF", lambda b: NO_PATH,
             description="the sourced setup no longer opens fd 3: the redirection's dup2 fails EBADF"),
    Scenario("unix_socket_no_permission", "python3 client of a unix-socket daemon (nobody)",
             lambda b: [PY3, "-S", f"{b}/client.py", f"{b}/app.sock"],
             unix_socket_no_permission, frozenset({"connect"}), "EACCES", lambda b: f"*{b}/app.sock",
             unprivileged=True, teardown=lambda b: UNIX_LISTENER.stop(),
             description="connecting needs write permission on the socket file; the daemon's is 0700 root"),
    Scenario("daemon_fails_after_parent_exits", "sh: start a daemon in the background and return",
             lambda b: ["/bin/sh", "-c", f"( /usr/bin/sleep 0.3; exec /usr/bin/cat {b}/daemon.conf > /dev/null ) & "
                        "echo started"],
             daemon_config_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/daemon.conf",
             description="the start script returns at once; the daemon it left behind fails 0.3 s later, "
             "opening its config"),
    # guard: the routine FICLONE refusal before a real fault does not take the name
    Scenario("cp_reflink_auto_disk_full", "cp --reflink=auto",
             lambda b: ["/usr/bin/cp", "--reflink=auto", f"{b}/src.img", f"{b}/mnt/copy.img"],
             reflink_auto_disk_full, frozenset({"write", "copy_file_range", "fallocate"}), "ENOSPC",
             lambda b: f"{b}/mnt/copy.img", teardown=umount_after("mnt"),
             description="FICLONE EOPNOTSUPP in every run, then the copy's write fails ENOSPC: the message "
             "reports the ENOSPC"),
    # guard: a writer's EPIPE is the first failing call when the reader quits without an error
    Scenario("producer_epipe_consumer_quits", "sh: python3 producer | head -n $(cat limit)",
             lambda b: ["/bin/sh", "-c", f"{PY3} -S {b}/producer.py | /usr/bin/head -n $(/usr/bin/cat {b}/limit) "
                        "> /dev/null"],
             consumer_quits, frozenset({"write"}), "EPIPE", lambda b: "pipe:*",
             description="the reader stops after one line (no error of its own): the producer's write fails "
             "EPIPE, the first failing call; no other process failed, so nothing demotes it"),
    # second round
    Scenario("cp_reflink_always", "sh: cp --reflink=$(cat mode)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/cp --reflink=$(/usr/bin/cat {b}/mode) {b}/src.img {b}/copy.img"],
             cp_reflink_always, frozenset({"ioctl"}), "EOPNOTSUPP", lambda b: f"{b}/*.img",
             description="FICLONE is refused on ext4 in every run (cp --reflink=auto then copies); with always "
             "the same refusal is fatal"),
    Scenario("ulimit_v_python_enomem", "sh: ulimit -v $(cat limit); python3",
             lambda b: ["/bin/sh", "-c", f"ulimit -v $(/usr/bin/cat {b}/limit); exec {PY3} -S -c "
                        "\"x = bytearray(400 * 2 ** 20); print(len(x))\""],
             ulimit_v_enomem, frozenset({"mmap"}), "ENOMEM", lambda b: NO_PATH,
             description="a 300 MB address-space limit: the 400 MB allocation's mmap fails, MemoryError"),
    Scenario("bind_privileged_port", "python3 server binds its port (nobody)",
             lambda b: [PY3, "-S", f"{b}/server.py", f"{b}/port"],
             bind_privileged_port, frozenset({"bind"}), "EACCES", lambda b: "*:80",
             unprivileged=True, description="port 80 needs CAP_NET_BIND_SERVICE"),
    Scenario("ld_preload_missing", "sh: LD_PRELOAD=lib/libshim.so sha256sum",
             lambda b: ["/bin/sh", "-c", f"LD_PRELOAD={b}/lib/libshim.so exec /usr/bin/sha256sum {b}/data.bin"],
             ld_preload_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/lib/libshim.so",
             description="the preloaded library is gone: ld.so says it is ignored, the program runs on (exit 0)"),
    Scenario("make_stale_target_skips", "make", lambda b: ["/usr/bin/make", "-s", "-C", str(b)],
             make_stale_target, frozenset({"stat", "newfstatat", "statx"}), None, lambda b: f"{b}/out.txt",
             description="an earlier run's output, newer than the input: make's stat finds it and skips the recipe "
                         "(no error anywhere, the sort never runs)"),
    Scenario("sort_check_unsorted", "sort -c", lambda b: ["/usr/bin/sort", "-c", f"{b}/ids.txt"],
             sort_check_unsorted, frozenset({"write"}), None, lambda b: "/dev/null",
             description="two rows swapped: sort -c reports the disorder on stderr and exits 1; no call fails"),
    Scenario("sha256sum_check_mismatch", "sha256sum -c", lambda b: ["/usr/bin/sha256sum", "-c", f"{b}/SHA256SUMS"],
             sha256sum_mismatch, frozenset({"write"}), None, lambda b: "/dev/null",
             description="one part changed: 'FAILED' and a warning, exit 1; no call fails"),
    Scenario("xz_threads_corrupt", "xz -T2 -dc", lambda b: ["/usr/bin/xz", "-T2", "-dc", f"{b}/data.txt.xz"],
             xz_threads_corrupt, frozenset({"write"}), None, lambda b: "/dev/null",
             description="a flipped byte: two decoder threads, 'Compressed data is corrupt', exit 1; no call fails"),
    Scenario("json_tool_invalid", "python3 -m json.tool", lambda b: [PY3, "-m", "json.tool", f"{b}/items.json"],
             json_invalid, frozenset({"write"}), None, lambda b: "/dev/null",
             description="a trailing comma: json.tool prints the parse error and exits 1; no call fails"),
    Scenario("pipeline_first_stage_missing", "sh: cat parts | sort | uniq -c > out",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/cat {' '.join(f'{b}/parts/p{i}.txt' for i in range(6))} | "
                        f"/usr/bin/sort | /usr/bin/uniq -c > {b}/counts.txt"],
             pipeline_first_stage_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/parts/p5.txt",
             description="the last part never arrived: cat fails after five files, the rest of the pipeline "
                         "counts what came"),
    Scenario("tar_keep_old_files", "tar -xkf -C", lambda b: ["/usr/bin/tar", "-xkf", f"{b}/bundle.tar", "-C", f"{b}/out"],
             tar_keep_old_files, frozenset({"openat"}), "EEXIST", lambda b: f"{b}/out/f4.txt",
             description="tar -k (keep old files) meets a file an interrupted extraction left: its create with "
             "O_EXCL fails after four files were extracted"),
    # no failing call
    Scenario("gzip_d_truncated", "gzip -dc", lambda b: ["/usr/bin/gzip", "-dc", f"{b}/data.txt.gz"],
             gzip_truncated, frozenset({"write"}), None, lambda b: "/dev/null",
             description="the archive is cut in half: reads end early, gzip writes its error (unexpected end "
             "of file) to stderr and exits 1; no call fails"),
    Scenario("python_validation_exit", "python3 validator", lambda b: [PY3, "-S", f"{b}/validate.py", f"{b}/rows.csv"],
             python_validation_exit, frozenset({"write"}), None, lambda b: "/dev/null",
             description="a short row: the validator writes its message to stderr and exits 3; no call fails"),
    Scenario("perl_config_die", "perl config check", lambda b: ["/usr/bin/perl", f"{b}/check.pl", f"{b}/job.conf"],
             perl_config_die, frozenset({"write"}), None, lambda b: "/dev/null",
             description="workers=four: perl dies with its message on stderr (exit 255); no call fails"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run (tests/test_real_programs_fourth.py keeps to about a minute).
BENCH_ONLY = frozenset({
    "sha256sum_check_mismatch", "json_tool_invalid", "tar_keep_old_files", "pipeline_first_stage_missing",
    "cp_into_immutable_dir", "mv_into_nonempty_dir", "python_open_x_exists",
    "sqlite_shell_journal_dir",
    "chrt_fifo_nobody", "prlimit_raise_hard_nobody", "md5sum_late_missing", "fallocate_disk_full",
    "mktemp_readonly_dir", "perl_config_die", "sqlite_shell_readonly_mount", "zstd_disk_full_late",
    "xargs_p2_cp_unreadable",
})


# --- good vs good: run-to-run noise -------------------------------------------------------------
TEMP_POOL_PY = ("import os, sys, tempfile\n"
                "from concurrent.futures import ThreadPoolExecutor\n"
                "out = sys.argv[1]\n"
                "def part(i):\n"
                "    fd, tmp = tempfile.mkstemp(dir=out, prefix='.part')\n"
                "    os.write(fd, str(i).encode() * 2048)\n"
                "    os.close(fd)\n"
                "    os.replace(tmp, os.path.join(out, f'part{i}.txt'))\n"
                "with ThreadPoolExecutor(3) as pool:\n"
                "    list(pool.map(part, range(8)))\n")
PROC_READS_PY = ("import os\n"
                 "for p in ('/proc/loadavg', '/proc/meminfo', '/proc/stat', '/proc/self/status',\n"
                 "          '/proc/self/maps', '/proc/interrupts', '/proc/vmstat'):\n"
                 "    with open(p, 'rb') as fh: fh.read()\n"
                 "os.listdir('/proc/self/task')\n")
RANDOM_PY = ("import os, secrets, sys, uuid\n"
             "out = sys.argv[1]\n"
             "for _ in range(3):\n"
             "    name = os.path.join(out, f'{uuid.uuid4()}.tok')\n"
             "    with open(name, 'w') as fh: fh.write(secrets.token_hex(secrets.randbelow(48) + 16))\n"
             "print(len(os.listdir(out)))\n")
NONBLOCK_PY = ("import os, select, sys\n"
               "os.set_blocking(1, False)\n"
               "data = b'x' * (1 << 20)\n"
               "while data:\n"
               "    try:\n"
               "        n = os.write(1, data[:65536])\n"
               "        data = data[n:]\n"
               "    except BlockingIOError:\n"
               "        select.select([], [1], [])\n")
PYC_MAIN = "import sys\nsys.path.insert(0, sys.argv[1])\nimport jobmod\nprint(jobmod.VALUE)\n"


def _big_text(base: Path, run: int) -> None:
    write(base / "data.txt", _lines(30000))


def _sort_tmp(base: Path, run: int) -> None:
    write(base / "in.txt", _lines(6000))
    (base / "tmp").mkdir()


def _out_dir(base: Path, run: int) -> None:
    (base / "out").mkdir()


def _pycache(base: Path, run: int) -> None:
    """A module compiled by an earlier run in the first two runs; the last run finds no cache
    (a fresh checkout) and writes it."""
    (base / "lib").mkdir()
    write(base / "lib" / "jobmod.py", "VALUE = 42\n")
    write(base / "main.py", PYC_MAIN)
    if run < 2:
        subprocess.run([PY3, "-S", str(base / "main.py"), str(base / "lib")], check=True, capture_output=True)


def _brief_lock(base: Path, run: int) -> None:
    write(base / "data.bin", "d" * 4096)
    write(base / "lock", "")
    if run == 1:  # another job holds the lock for a moment
        BACKGROUND.start(["/usr/bin/flock", str(base / "lock"), "/usr/bin/sleep", "0.2"])
        threading.Event().wait(0.05)


ALARM_READ_PY = ("import os, signal\n"
                 "signal.signal(signal.SIGALRM, lambda *a: None)\n"
                 "signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)\n"
                 "data = os.read(0, 100)\n"
                 "signal.setitimer(signal.ITIMER_REAL, 0)\n"
                 "print(len(data))\n")


def _late_producer(base: Path, run: int) -> None:
    write(base / "delay", "0.2" if run == 2 else "0")


def _no_match(base: Path, run: int) -> None:
    write(base / "log.txt", _lines(300))


QUIET_FOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "xz_threads_quiet",
        lambda b: ["/usr/bin/xz", "-T2", "--block-size=256KiB", "-k", f"{b}/data.txt"],
        _big_text, description="xz with two worker threads over several blocks: interleaving varies"),
    NoAnomalyCase(
        "sort_parallel_chunks",
        lambda b: ["/usr/bin/sort", "--parallel=2", "-S", "64K", "-T", f"{b}/tmp", f"{b}/in.txt", "-o", f"{b}/out.txt"],
        _sort_tmp, description="sort's worker threads and temporary chunk files (random names)"),
    NoAnomalyCase(
        "thread_pool_temp_names",
        lambda b: [PY3, "-S", "-c", TEMP_POOL_PY, f"{b}/out"],
        _out_dir, description="three threads, mkstemp names, os.replace: names and interleaving vary"),
    NoAnomalyCase(
        "proc_reads_vary",
        lambda b: [PY3, "-S", "-c", PROC_READS_PY],
        lambda b, i: None, description="/proc files whose sizes (and read counts) vary run to run"),
    NoAnomalyCase(
        "random_tokens",
        lambda b: [PY3, "-S", "-c", RANDOM_PY, f"{b}/out"],
        _out_dir, description="uuid4 file names, random token lengths (getrandom sizes)"),
    NoAnomalyCase(
        "pycache_cold_last_run",
        lambda b: [PY3, "-S", f"{b}/main.py", f"{b}/lib"],
        _pycache, description="the last run compiles the module and writes __pycache__ (the others read it)"),
    NoAnomalyCase(
        "nonblocking_pipe_eagain",
        lambda b: ["/bin/sh", "-c", f"{PY3} -S -c \"{NONBLOCK_PY}\" | (/usr/bin/sleep 0.05; /usr/bin/cat > /dev/null)"],
        lambda b, i: None, description="a non-blocking writer into a slow pipe: the number of EAGAIN retries varies"),
    NoAnomalyCase(
        "flock_w_brief_wait",
        lambda b: ["/usr/bin/flock", "-w", "5", f"{b}/lock", "/usr/bin/sha256sum", f"{b}/data.bin"],
        _brief_lock, description="one run waits a moment for a lock another job holds"),
    NoAnomalyCase(
        "timeout_quiet",
        lambda b: ["/usr/bin/timeout", "5", "/bin/sh", "-c", "/usr/bin/sleep 0.05; echo done"],
        lambda b, i: None, description="timeout's timer and child, the child finishing in time"),
    NoAnomalyCase(
        "ls_l_full_time",
        lambda b: ["/usr/bin/ls", "-l", "--time-style=full-iso", "/proc/self/", str(b)],
        lambda b, i: None, description="ls -l reading /etc/localtime and /proc/self (another pid each run)"),
    # guards of the differ's rules
    NoAnomalyCase(
        "interrupted_read_restarted",
        lambda b: ["/bin/sh", "-c", f"(/usr/bin/sleep $(/usr/bin/cat {b}/delay); echo data) | {PY3} -S -c \"{ALARM_READ_PY}\""],
        _late_producer, description="a read a 20 ms timer interrupts while the producer is late (last run only): "
        "Python restarts it and it completes -- interrupted, not abandoned"),
    NoAnomalyCase(
        "cp_reflink_auto_quiet",
        lambda b: ["/usr/bin/cp", "--reflink=auto", f"{b}/src.img", f"{b}/copy.img"],
        lambda b, i: (b / "src.img").write_bytes(bytes(range(256)) * 400),
        description="FICLONE refused on ext4 (EOPNOTSUPP) and the copy done another way, every run"),
    NoAnomalyCase(
        "nonzero_exit_every_run",
        lambda b: ["/usr/bin/grep", "-c", "no such record", f"{b}/log.txt"],
        _no_match, description="grep -c finds nothing and exits 1 in every run: an exit status the good runs "
        "share is no anomaly"),
    NoAnomalyCase(
        "ps_all_processes",
        lambda b: ["/usr/bin/ps", "-e", "-o", "pid,comm"],
        lambda b, i: None, description="ps reads /proc/<pid> of every process on a shared machine: which "
        "and how many vary, a process may exit between the listing and the read"),
    NoAnomalyCase(
        "proc_scan_races",
        lambda b: [PY3, "-S", "-c", PROC_SCAN_PY],
        lambda b, i: None, description="a /proc scan reading every process's cmdline (processes come and go)"),
    NoAnomalyCase(
        "df_mounts_vary",
        lambda b: ["/usr/bin/df", "-h"],
        lambda b, i: None, description="df statfs()es every mount: other sessions' test mounts come and go"),
    NoAnomalyCase(
        "background_child_outlives",
        lambda b: ["/bin/sh", "-c", "/usr/bin/sleep 0.1 & echo started"],
        lambda b, i: None, description="a background child still running when the command returns"),
    NoAnomalyCase(
        "make_j2_pipelines",
        lambda b: ["/usr/bin/make", "-s", "-j2", "-C", str(b)],
        lambda b, i: _make_pipes(b), description="make -j2: two recipes that are shell pipelines, in any order"),
]


PROC_SCAN_PY = ("import os\n"
                "n = 0\n"
                "for pid in os.listdir('/proc'):\n"
                "    if pid.isdigit():\n"
                "        try:\n"
                "            with open(f'/proc/{pid}/cmdline', 'rb') as fh: n += len(fh.read())\n"
                "        except (FileNotFoundError, ProcessLookupError, PermissionError):\n"
                "            pass\n"
                "print(n > 0)\n")


def _make_pipes(base: Path) -> None:
    (base / "in").mkdir()
    (base / "out").mkdir()
    for n in ("a", "b", "c"):
        write(base / "in" / f"{n}.txt", _lines(500))
    write(base / "Makefile", "all: out/a.txt out/b.txt out/c.txt\n"
                             "out/%.txt: in/%.txt\n\tcat $< | sort | uniq -c > $@\n")


def quiet_teardown() -> None:
    """Stop what the cases started (lock holders)."""
    BACKGROUND.stop()

