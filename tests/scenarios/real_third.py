"""A third set of real Debian programs with one real fault each, on programs and faults
real.py and real_more.py do not have: tail/head/cmp/truncate/mkfifo/shred/install -D/csplit,
iconv with a missing gconv module, file(1) with a missing magic database, python3 -m venv,
a package whose __init__ is unreadable, ld.so meeting an unreadable library, bash `exec`
and `.` redirections, cd into a directory without search permission, ENAMETOOLONG and E2BIG
from python, the sqlite3 shell on a full disk and against a database another process holds
locked, a multiprocessing pool whose worker fails, a user config fallback chain, curl,
wget, python's urllib and node against a loopback HTTP server (down: refused in a blocking
connect's return value or in a non-blocking one's getsockopt(SO_ERROR) value; resetting the
connection), a client giving up on a service that never starts (good runs are refused
while it starts), git meeting a stale index.lock, rm meeting an immutable file, kill -0 on a stale
pid, a script whose #! interpreter is missing, link(2) across filesystems, touch -d on another
user's file, a FIFO without a reader, find -newer, msgfmt, unzip on a full disk, OPENSSL_CONF.

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints. The
good-vs-good cases (`QUIET_THIRD`) carry run-to-run noise: multiprocessing's random
semaphore names and worker pids, curl's ::1-then-127.0.0.1 fallback (::1 refused in
SO_ERROR's value in every run), a client retrying while its service starts (refused in
SO_ERROR's value a varying number of times), perl's per-run hash order, an output that
already exists in one run, bash $RANDOM names, /proc/<pid> paths, a lock retry loop whose
number of attempts varies, make -j3, python's atomic-write temp names, git status on a
just-committed (racily clean) index.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount_after, write
from .harness import PORTS, NoAnomalyCase, Scenario
from .real import own, sh

PY3 = "/usr/bin/python3"
HTTP_PORT = PORTS[4]  # the loopback HTTP server of the curl/wget cases
WAIT_PORT = PORTS[6]  # python_wait_for_port's service


class _Background:
    """Processes a setup starts outside the recording (a lock holder, a FIFO reader)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, **kw)
        self.procs.append(proc)
        return proc

    def start_running(self, argv: list[str], program: str, timeout: float = 30) -> subprocess.Popen:
        """start(argv), returned once the process runs `program`: a wrapper (setpriv) is still
        root's until its exec, and a recording begun before that saw root's process."""
        proc = self.start(argv)
        deadline = time.monotonic() + timeout
        while os.path.realpath(f"/proc/{proc.pid}/exe") != os.path.realpath(program):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv}: pid {proc.pid} never ran {program}")
            time.sleep(0.01)
        return proc

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 - a teardown
        while self.procs:
            proc = self.procs.pop()
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()


BACKGROUND = _Background()


class _Http:
    """A loopback HTTP server (http.server, a thread of this process) serving one directory."""

    def __init__(self) -> None:
        self.server: http.server.ThreadingHTTPServer | None = None

    def start(self, root: Path, port: int = HTTP_PORT) -> None:
        self.stop()
        handler = functools.partial(_QuietHandler, directory=str(root))
        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 - a teardown
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test's terminal is no access log
        pass


HTTP = _Http()


class _Resetter:
    """A loopback server that reads each request and resets the connection (SO_LINGER 0):
    a service crashing mid-request."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.thread: threading.Thread | None = None

    def start(self, port: int) -> None:
        self.stop()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, args=(self.sock,), daemon=True)
        self.thread.start()

    @staticmethod
    def _serve(sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed by stop()
            with conn:
                conn.recv(65536)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 - a teardown
        if self.sock is not None:
            # shutdown wakes the thread's accept (a plain close would leave the port bound
            # until accept returned)
            self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.sock = None
        if self.thread is not None:
            self.thread.join(timeout=5)
            self.thread = None


RESETTER = _Resetter()


# --- coreutils --------------------------------------------------------------------------------
def tail_unreadable(base: Path, bad: bool) -> None:
    write(base / "job.log", "".join(f"step {i}\n" for i in range(50)))
    own(base)
    if bad:
        os.chown(base / "job.log", 0, 0)
        (base / "job.log").chmod(0o600)


def cmp_isdir(base: Path, bad: bool) -> None:
    write(base / "a.bin", "payload\n" * 64)
    if bad:
        (base / "b.bin").mkdir()
    else:
        write(base / "b.bin", "payload\n" * 64)


def head_symlink_loop(base: Path, bad: bool) -> None:
    (base / "releases").mkdir()
    write(base / "releases" / "v2.txt", "release notes\n")
    if bad:  # a botched deploy pointed current at itself through a second link
        (base / "previous").symlink_to("current")
        (base / "current").symlink_to("previous")
    else:
        (base / "current").symlink_to("releases/v2.txt")


def truncate_readonly(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "1m")
    write(base / "mnt" / "swap.img", "")
    if bad:
        sh(f"mount -o remount,ro {base}/mnt")


def mkfifo_exists(base: Path, bad: bool) -> None:
    if bad:  # a crashed run left a regular file where the FIFO goes
        write(base / "ctl", "")


def shred_not_writable(base: Path, bad: bool) -> None:
    write(base / "secret.key", "k" * 4096, 0o644)
    own(base)
    if bad:
        os.chown(base / "secret.key", 0, 0)


def install_d_readonly(base: Path, bad: bool) -> None:
    write(base / "tool", "#!/bin/sh\nexit 0\n", 0o755)
    mount_tmpfs(base / "opt", "1m")
    if bad:
        sh(f"mount -o remount,ro {base}/opt")


def csplit_disk_full(base: Path, bad: bool) -> None:
    write(base / "all.txt", "".join(f"--\n{'x' * 60}\n" * 200 for _ in range(4)))
    mount_tmpfs(base / "mnt", "128k")
    if bad:
        fill_up(base / "mnt")


def touch_date_not_owner(base: Path, bad: bool) -> None:
    write(base / "stamp", "", 0o666)
    own(base)
    if bad:  # writable by all, but setting an explicit time needs the owner
        os.chown(base / "stamp", 0, 0)


def find_newer_missing(base: Path, bad: bool) -> None:
    (base / "tree" / "sub").mkdir(parents=True)
    write(base / "tree" / "a.txt", "a\n")
    write(base / "tree" / "sub" / "b.txt", "b\n")
    if not bad:
        write(base / "last-run", "")


# --- iconv, file, msgfmt, openssl -------------------------------------------------------------
GCONV_MODULES = "module IBM037// INTERNAL IBM037 1\nmodule INTERNAL IBM037// IBM037 1\n"


def iconv_module_missing(base: Path, bad: bool) -> None:
    (base / "gconv").mkdir()
    write(base / "gconv" / "gconv-modules", GCONV_MODULES)
    if not bad:
        shutil.copy("/usr/lib/x86_64-linux-gnu/gconv/IBM037.so", base / "gconv" / "IBM037.so")
    write(base / "in.txt", "hello mainframe\n")


def file_magic_missing(base: Path, bad: bool) -> None:
    (base / "share").mkdir()
    if not bad:
        shutil.copy("/usr/lib/file/magic.mgc", base / "share" / "magic.mgc")
    write(base / "blob.gz", "")
    subprocess.run(["gzip", "-kf", str(base / "blob.gz")], capture_output=True)


PO = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
      'msgid "hello"\nmsgstr "hallo"\n')


def msgfmt_missing_dir(base: Path, bad: bool) -> None:
    write(base / "de.po", PO)
    if not bad:
        (base / "locale" / "de" / "LC_MESSAGES").mkdir(parents=True)


def openssl_conf_missing(base: Path, bad: bool) -> None:
    if not bad:
        write(base / "openssl.cnf", "openssl_conf = openssl_init\n[openssl_init]\n")


# --- python -------------------------------------------------------------------------------------
def venv_readonly(base: Path, bad: bool) -> None:
    (base / "envs").mkdir()
    own(base)
    if bad:
        (base / "envs").chmod(0o555)


def pkg_init_unreadable(base: Path, bad: bool) -> None:
    (base / "lib" / "jobpkg").mkdir(parents=True)
    write(base / "lib" / "jobpkg" / "__init__.py", "LIMIT = 4\n")
    write(base / "lib" / "jobpkg" / "util.py", "def n():\n    return 1\n")
    own(base)
    if bad:
        os.chown(base / "lib" / "jobpkg" / "__init__.py", 0, 0)
        (base / "lib" / "jobpkg" / "__init__.py").chmod(0o600)


NAME_PY = ("import os, sys\n"
           "base = sys.argv[1]\n"
           "name = open(os.path.join(base, 'name.txt')).read().strip()\n"
           "os.makedirs(os.path.join(base, 'out'), exist_ok=True)\n"
           "with open(os.path.join(base, 'out', name + '.csv'), 'w') as fh:\n"
           "    fh.write('a,b\\n')\n")


def name_too_long_py(base: Path, bad: bool) -> None:
    write(base / "job.py", NAME_PY)
    # The report name comes from upstream metadata; the bad run's is a pasted description.
    write(base / "name.txt", ("report-" + "q3-sales-emea-" * 22) if bad else "report-q3")


E2BIG_PY = ("import subprocess, sys\n"
            "ids = open(sys.argv[1]).read().split()\n"
            "sys.exit(subprocess.run(['/usr/bin/true', ','.join(ids)]).returncode)\n")


def e2big_python(base: Path, bad: bool) -> None:
    write(base / "launch.py", E2BIG_PY)
    n = 30000 if bad else 300  # 30000 ids joined: one argument over MAX_ARG_STRLEN (128 KiB)
    write(base / "ids.txt", "".join(f"id{i:06d}\n" for i in range(n)))


POOL_FAIL_PY = ("import os, sys\n"
                "from multiprocessing import Pool\n"
                "def size(name):\n"
                "    with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n"
                "        return len(fh.read())\n"
                "if __name__ == '__main__':\n"
                "    names = [f'part{i}.dat' for i in range(6)]\n"
                "    with Pool(3) as pool:\n"
                "        print(sum(pool.map(size, names, chunksize=1)))\n")


def mp_pool_worker_fails(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    write(base / "pool.py", POOL_FAIL_PY)
    for i in range(6):
        if not (bad and i == 4):
            write(base / "in" / f"part{i}.dat", "x" * (1000 * (i + 1)))


# Guards of the teardown rule (baseline/run/rules/processes.py, _Teardowns): a real fault in a process its
# run then tears down. A pool worker meets an error it swallows (its last task; the pool
# terminates it afterwards), and a worker blocked on a lock a stuck job holds is killed by its
# supervisor's timeout (Popen.terminate: a checked kill) -- the interrupted flock is the only sign.
POOL_SWALLOW_PY = ("import os, sys\n"
                   "from multiprocessing import Pool\n"
                   "def size(name):\n"
                   "    try:\n"
                   "        with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n"
                   "            return len(fh.read())\n"
                   "    except OSError:\n"
                   "        return 0\n"
                   "if __name__ == '__main__':\n"
                   "    names = [f'part{i}.dat' for i in range(6)]\n"
                   "    with Pool(3) as pool:\n"
                   "        print(sum(pool.map(size, names, chunksize=1)))\n")
SUPERVISOR_PY = ("import subprocess, sys\n"
                 "p = subprocess.Popen([sys.executable, '-S', sys.argv[1], sys.argv[2]])\n"
                 "try:\n"
                 "    p.wait(timeout=1.0)\n"
                 "except subprocess.TimeoutExpired:\n"
                 "    p.terminate()\n"
                 "    p.wait()\n"
                 "print('worker', p.returncode)\n")
LOCKED_WORKER_PY = ("import fcntl, sys\n"
                    "with open(sys.argv[1], 'a') as fh:\n"
                    "    fcntl.flock(fh, fcntl.LOCK_EX)\n"
                    "    fh.write('ran\\n')\n")


def mp_pool_worker_error_swallowed(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    write(base / "pool.py", POOL_SWALLOW_PY)
    for i in range(6):
        write(base / "in" / f"part{i}.dat", "x" * (1000 * (i + 1)))
    own(base)
    if bad:  # the last part was copied in by root with a umask of 077
        (base / "in" / "part5.dat").chmod(0o600)
        os.chown(base / "in" / "part5.dat", 0, 0)


def worker_killed_waiting_on_lock(base: Path, bad: bool) -> None:
    write(base / "supervise.py", SUPERVISOR_PY)
    write(base / "worker.py", LOCKED_WORKER_PY)
    write(base / "job.lock", "")
    if bad:  # a stuck job holds the lock
        BACKGROUND.start(["/usr/bin/flock", str(base / "job.lock"), "/usr/bin/sleep", "30"])
        for _ in range(100):
            if subprocess.run(["/usr/bin/flock", "-n", str(base / "job.lock"), "true"]).returncode:
                break
            threading.Event().wait(0.02)


CONFIG_CHAIN_PY = ("import os, sys\n"
                   "home, base = sys.argv[1], sys.argv[2]\n"
                   "conf = None\n"
                   "for p in (os.path.join(home, '.config', 'job', 'job.conf'), os.path.join(base, 'etc', 'job.conf')):\n"
                   "    try:\n"
                   "        with open(p) as fh: conf = dict(l.strip().split('=', 1) for l in fh if '=' in l)\n"
                   "        break\n"
                   "    except (FileNotFoundError, PermissionError):\n"
                   "        continue\n"
                   "out = os.path.join(base, conf['outdir'], 'result.txt')\n"
                   "with open(out, 'w') as fh: fh.write('done\\n')\n")


def user_config_unreadable(base: Path, bad: bool) -> None:
    """The user's config names out/ (writable); the site default names the old shared
    directory, which nobody may no longer write. Bad run: the user's config unreadable."""
    write(base / "app.py", CONFIG_CHAIN_PY)
    (base / "home" / ".config" / "job").mkdir(parents=True)
    (base / "etc").mkdir()
    (base / "out").mkdir()
    (base / "shared").mkdir()
    write(base / "home" / ".config" / "job" / "job.conf", "outdir=out\n")
    write(base / "etc" / "job.conf", "outdir=shared\n")
    own(base)
    os.chown(base / "shared", 0, 0)
    os.chown(base / "etc", 0, 0)
    if bad:
        os.chown(base / "home" / ".config" / "job" / "job.conf", 0, 0)
        (base / "home" / ".config" / "job" / "job.conf").chmod(0o600)


SCRIPT_PY = ("import subprocess, sys\n"
             "sys.exit(subprocess.run([sys.argv[1], 'check']).returncode)\n")


def shebang_missing(base: Path, bad: bool) -> None:
    write(base / "launch.py", SCRIPT_PY)
    interp = "/usr/bin/python2" if bad else "/bin/sh"  # the bad run's tool predates python3
    write(base / "tool", f"#!{interp}\nexit 0\n", 0o755)


# --- ld.so --------------------------------------------------------------------------------------
def ld_library_unreadable(base: Path, bad: bool) -> None:
    (base / "lib").mkdir()
    write(base / "job.c", "int job_n(void);\nint main(void) { return job_n() - 4; }\n")
    write(base / "libjob.c", "int job_n(void) { return 4; }\n")
    sh(f"gcc -shared -fPIC -o {base}/lib/libjob.so {base}/libjob.c && "
       f"gcc -o {base}/job {base}/job.c -L{base}/lib -ljob")
    own(base)
    if bad:
        os.chown(base / "lib" / "libjob.so", 0, 0)
        (base / "lib" / "libjob.so").chmod(0o600)


# --- shells -------------------------------------------------------------------------------------
def bash_exec_redirect(base: Path, bad: bool) -> None:
    write(base / "job.sh", f'set -e\nexec 3>>"{base}/logs/job.log"\necho start >&3\n'
                           f'/usr/bin/sort "{base}/in.txt" > "{base}/sorted.txt"\n')
    write(base / "in.txt", "b\na\nc\n")
    if not bad:
        (base / "logs").mkdir()


def bash_source_missing(base: Path, bad: bool) -> None:
    write(base / "job.sh", f'. "{base}/env.sh"\n/usr/bin/mkdir -p "{base}/$OUTDIR"\n')
    if not bad:
        write(base / "env.sh", "OUTDIR=results\n")


def cd_no_search(base: Path, bad: bool) -> None:
    (base / "work").mkdir()
    write(base / "work" / "data.txt", "rows\n")
    own(base)
    if bad:
        os.chown(base / "work", 0, 0)
        (base / "work").chmod(0o700)


# --- sqlite3 shell ------------------------------------------------------------------------------
def sqlite_disk_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "256k")
    sh(f"/usr/bin/sqlite3 {base}/mnt/jobs.db 'create table runs(id integer, note text)'")
    if bad:
        fill_up(base / "mnt")


HOLD_LOCK_PY = ("import sqlite3, sys, time\n"
                "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "db.execute('BEGIN EXCLUSIVE')\n"
                "open(sys.argv[2], 'w').close()\n"
                "time.sleep(120)\n")


def sqlite_locked(base: Path, bad: bool) -> None:
    (base / "db").mkdir()
    sh(f"/usr/bin/sqlite3 {base}/db/jobs.db 'create table runs(id integer)'")
    if bad:  # the nightly vacuum still holds the database
        BACKGROUND.start([PY3, "-S", "-c", HOLD_LOCK_PY, f"{base}/db/jobs.db", f"{base}/held"])
        for _ in range(200):
            if (base / "held").exists():
                break
            threading.Event().wait(0.025)
        (base / "held").unlink()


# --- network: curl, wget ------------------------------------------------------------------------
def _site(base: Path) -> None:
    (base / "www").mkdir()
    write(base / "www" / "index.html", "<html><body>build 42</body></html>\n")


def curl_refused(base: Path, bad: bool) -> None:
    _site(base)
    if bad:
        HTTP.stop()
    else:
        HTTP.start(base / "www")


# A non-blocking connect (a connect with a timeout) returns EINPROGRESS in good and bad runs;
# whether the peer refused comes back in getsockopt(SOL_SOCKET, SO_ERROR)'s value, ret 0.
FETCH_PY = ("import sys, urllib.request\n"
            "with urllib.request.urlopen(sys.argv[1], timeout=5) as r:\n"
            "    body = r.read()\n"
            "print(len(body))\n")
FETCH_JS = ("require('http').get(process.argv[1], r => { r.resume(); r.on('end', () => process.exit(0)); })"
            ".on('error', e => { console.error('fetch: ' + e.message); process.exit(1); });")


def service_never_up(base: Path, bad: bool) -> None:
    BACKGROUND.stop()
    if not bad:  # the service starts while the client already tries (refused a few times)
        BACKGROUND.start([PY3, "-S", "-c", LATE_SERVER_PY, str(WAIT_PORT)])


def wget_output_not_writable(base: Path, bad: bool) -> None:
    _site(base)
    HTTP.start(base / "www")
    (base / "out").mkdir()
    own(base / "out")
    if bad:
        os.chown(base / "out", 0, 0)


def curl_output_dir_missing(base: Path, bad: bool) -> None:
    _site(base)
    HTTP.start(base / "www")
    if not bad:
        (base / "out").mkdir()


# --- git ------------------------------------------------------------------------------------------
def curl_reset(base: Path, bad: bool) -> None:
    _site(base)
    if bad:  # the service crashes on the request
        HTTP.stop()
        RESETTER.start(HTTP_PORT)
    else:
        RESETTER.stop()
        HTTP.start(base / "www")


def rm_immutable(base: Path, bad: bool) -> None:
    (base / "logs").mkdir()
    write(base / "logs" / "old.log", "old\n")
    if bad:  # someone protected the log (chattr +i): even root cannot remove it
        subprocess.run(["chattr", "+i", str(base / "logs" / "old.log")], check=True)


def rm_immutable_teardown(base: Path) -> None:
    if (base / "logs" / "old.log").exists():
        subprocess.run(["chattr", "-i", str(base / "logs" / "old.log")], capture_output=True)


def stale_pid(base: Path, bad: bool) -> None:
    if bad:  # the service died; its pid file stayed (the pid is free: a child that has exited)
        done = subprocess.run(["/bin/sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
        write(base / "app.pid", done.stdout)
    else:
        write(base / "app.pid", f"{BACKGROUND.start(['/usr/bin/sleep', '120']).pid}\n")


def git_index_lock(base: Path, bad: bool) -> None:
    repo = base / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    sh("git init -q -b main . && echo a > a.txt && git add a.txt && git commit -q -m one", repo, env)
    write(repo / "b.txt", "b\n")
    if bad:  # a crashed git left its lock behind
        write(repo / ".git" / "index.lock", "")


# --- links, FIFOs ---------------------------------------------------------------------------------
def link_cross_device(base: Path, bad: bool) -> None:
    write(base / "build.tar", "t" * 1024)
    (base / "cache").mkdir()
    if bad:  # the cache moved to its own filesystem
        mount_tmpfs(base / "cache", "1m")


FIFO_PY = ("import os, sys\n"
           "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)\n"
           "os.write(fd, b'rotate\\n')\n"
           "os.close(fd)\n")


def fifo_no_reader(base: Path, bad: bool) -> None:
    os.mkfifo(base / "ctl.fifo")
    write(base / "notify.py", FIFO_PY)
    if not bad:  # the daemon listening on its control FIFO
        BACKGROUND.start(["/usr/bin/cat", str(base / "ctl.fifo")])
        threading.Event().wait(0.1)


# --- archives -------------------------------------------------------------------------------------
def unzip_disk_full(base: Path, bad: bool) -> None:
    (base / "pkg").mkdir()
    for i in range(3):
        write(base / "pkg" / f"f{i}.txt", "".join(f"{j * 7919 % 10007}\n" for j in range(3000)))
    sh("zip -qr ../pkg.zip .", base / "pkg")
    mount_tmpfs(base / "mnt", "256k")
    if bad:
        fill_up(base / "mnt")


# --- guards of the differ's rules for state an earlier run left ---------------------------------
MAKEDIRS_PY = ("import os, sys\n"
               "out = os.path.join(sys.argv[1], 'out')\n"
               "os.makedirs(out, exist_ok=True)\n"
               "with open(os.path.join(out, 'result.txt'), 'w') as fh: fh.write('ok\\n')\n")


def makedirs_over_file(base: Path, bad: bool) -> None:
    write(base / "job.py", MAKEDIRS_PY)
    if bad:  # a stray file where the output directory goes
        write(base / "out", "not a directory\n")


def mkdir_p_over_file(base: Path, bad: bool) -> None:
    write(base / "a.txt", "a\n")
    if bad:
        write(base / "out", "not a directory\n")


def gzip_replace_readonly_dir(base: Path, bad: bool) -> None:
    (base / "d").mkdir()
    write(base / "d" / "data.txt", "".join(f"{i}\n" for i in range(2000)))
    subprocess.run(["gzip", "-k", str(base / "d" / "data.txt")], check=True)  # every run finds it
    own(base)
    if bad:
        (base / "d").chmod(0o555)


def stale_done_marker(base: Path, bad: bool) -> None:
    write(base / "in.txt", "".join(f"{(i * 7919) % 1000}\n" for i in range(500)))
    write(base / "sorted.txt", "stale\n")  # the last run's output, in every run
    if bad:  # a marker left by an interrupted run: the job believes the work is done
        write(base / "done", "")


def _stop_all(*teardowns):
    def teardown(base: Path) -> None:
        for t in teardowns:
            t(base)
    return teardown


# A lock-write-rename publisher (the pattern of git's index.lock, dpkg's status, systemd's
# unit files): the lock is created exclusively, written, fsynced and renamed over its target;
# when the rename fails the lock is discarded (unlinked) and the program fails.
PUBLISH_PY = ("import os, sys\n"
              "lock = os.path.join(sys.argv[1], 'state.lock')\n"
              "fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)\n"
              "os.write(fd, b'generation 2\\n')\n"
              "os.fsync(fd)\n"
              "os.close(fd)\n"
              "try:\n"
              "    os.rename(lock, os.path.join(sys.argv[1], 'state'))\n"
              "except OSError as e:\n"
              "    os.unlink(lock)\n"
              "    sys.exit(f'publish: {e}')\n")


def lock_publish_target_dir(base: Path, bad: bool) -> None:
    (base / "db").mkdir()
    if bad:  # an operator's mkdir (or an old layout) made the target a directory
        (base / "db" / "state").mkdir()
        write(base / "db" / "state" / "old", "generation 1\n")
    else:
        write(base / "db" / "state", "generation 1\n")


REAL_THIRD: list[Scenario] = [
    Scenario("tail_unreadable", "tail -n 2 (nobody)", lambda b: ["/usr/bin/tail", "-n", "2", f"{b}/job.log"],
             tail_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/job.log",
             unprivileged=True, description="the log rotated to root-only"),
    Scenario("cmp_operand_is_dir", "cmp -s", lambda b: ["/usr/bin/cmp", "-s", f"{b}/a.bin", f"{b}/b.bin"],
             cmp_isdir, frozenset({"read"}), "EISDIR", lambda b: f"{b}/b.bin",
             description="second operand is a directory: the open succeeds, the read fails"),
    Scenario("head_symlink_loop", "head", lambda b: ["/usr/bin/head", "-n", "1", f"{b}/current"],
             head_symlink_loop, frozenset({"openat"}), "ELOOP", lambda b: f"{b}/current",
             description="current -> previous -> current"),
    Scenario("truncate_readonly_mount", "truncate -s", lambda b: ["/usr/bin/truncate", "-s", "64K", f"{b}/mnt/swap.img"],
             truncate_readonly, frozenset({"openat"}), "EROFS", lambda b: f"{b}/mnt/swap.img",
             teardown=umount_after("mnt"), description="mount remounted read-only"),
    Scenario("mkfifo_exists", "mkfifo", lambda b: ["/usr/bin/mkfifo", f"{b}/ctl"],
             mkfifo_exists, frozenset({"mknodat", "mknod"}), "EEXIST", lambda b: f"{b}/ctl",
             description="a leftover regular file where the FIFO goes"),
    Scenario("shred_not_writable", "shred -u (nobody)", lambda b: ["/usr/bin/shred", "-u", f"{b}/secret.key"],
             shred_not_writable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/secret.key",
             unprivileged=True, description="the key belongs to root (world-readable, not writable)"),
    Scenario("install_d_readonly_mount", "install -D",
             lambda b: ["/usr/bin/install", "-D", "-m", "0755", f"{b}/tool", f"{b}/opt/job/bin/tool"],
             install_d_readonly, frozenset({"mkdir", "mkdirat"}), "EROFS", lambda b: f"{b}/opt/job",
             teardown=umount_after("opt"), description="install -D creates the leading directories on a read-only mount"),
    Scenario("csplit_disk_full", "csplit", lambda b: ["/usr/bin/csplit", "-s", "-f", f"{b}/mnt/part", f"{b}/all.txt",
                                                      "/^--$/", "{*}"],
             csplit_disk_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/part*",
             teardown=umount_after("mnt"), description="filesystem full while writing the pieces"),
    Scenario("touch_date_not_owner", "touch -d (nobody)", lambda b: ["/usr/bin/touch", "-d", "2026-01-01", f"{b}/stamp"],
             touch_date_not_owner, frozenset({"utimensat", "utimes", "futimesat", "utime"}), "EPERM",
             lambda b: f"{b}/stamp", unprivileged=True,
             description="an explicit time needs the owner, write permission is not enough (touch opens the "
             "file, dup2s it to fd 0 and calls utimensat(0, NULL, ...))"),
    Scenario("find_newer_missing_ref", "find -newer", lambda b: ["/usr/bin/find", f"{b}/tree", "-newer", f"{b}/last-run"],
             find_newer_missing, frozenset({"newfstatat", "stat", "lstat", "statx"}), "ENOENT",
             lambda b: f"{b}/last-run", description="the previous run's stamp file is gone"),
    Scenario("iconv_gconv_module_missing", "iconv with GCONV_PATH",
             lambda b: ["/usr/bin/env", f"GCONV_PATH={b}/gconv", "/usr/bin/iconv", "-f", "UTF-8", "-t", "IBM037",
                        f"{b}/in.txt"],
             iconv_module_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/gconv/IBM037.so",
             description="the job's gconv-modules names a module that is not deployed"),
    Scenario("file_magic_missing", "file -m", lambda b: ["/usr/bin/file", "-m", f"{b}/share/magic.mgc", f"{b}/blob.gz.gz"],
             file_magic_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/share/magic*",
             description="the magic database given with -m is missing"),
    Scenario("msgfmt_missing_outdir", "msgfmt -o",
             lambda b: ["/usr/bin/msgfmt", "-o", f"{b}/locale/de/LC_MESSAGES/job.mo", f"{b}/de.po"],
             msgfmt_missing_dir, frozenset({"newfstatat", "lstat", "stat", "statx"}), "ENOENT", lambda b: f"{b}/locale",
             description="the catalog directory was never created: msgfmt stats the output (ENOENT in good runs "
             "too: it is new), then walks its directories (lstat) and stops at the missing one without an open"),
    Scenario("openssl_conf_missing", "openssl rand with OPENSSL_CONF",
             lambda b: ["/usr/bin/env", f"OPENSSL_CONF={b}/openssl.cnf", "/usr/bin/openssl", "rand", "-hex", "8"],
             openssl_conf_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/openssl.cnf",
             description="the job's OpenSSL config is not deployed"),
    Scenario("venv_readonly_dir", "python3 -m venv (nobody)",
             lambda b: [PY3, "-m", "venv", "--without-pip", f"{b}/envs/job"],
             venv_readonly, frozenset({"mkdir", "mkdirat"}), "EACCES", lambda b: f"{b}/envs/job",
             unprivileged=True, description="the environments directory is not writable"),
    Scenario("python_pkg_init_unreadable", "python3 import (nobody)",
             lambda b: ["/usr/bin/env", f"PYTHONPATH={b}/lib", PY3, "-c", "import jobpkg.util"],
             pkg_init_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/lib/jobpkg/__init__.py",
             unprivileged=True, description="the package's __init__.py is root-only"),
    Scenario("python_name_too_long", "python3 job names its report", lambda b: [PY3, "-S", f"{b}/job.py", str(b)],
             name_too_long_py, frozenset({"openat"}), "ENAMETOOLONG", lambda b: f"{b}/out/report-*",
             description="a file name over 255 bytes"),
    Scenario("python_subprocess_e2big", "python3 subprocess with one huge argument",
             lambda b: [PY3, "-S", f"{b}/launch.py", f"{b}/ids.txt"],
             e2big_python, frozenset({"execve"}), "E2BIG", lambda b: "/usr/bin/true",
             description="an argument over MAX_ARG_STRLEN: the child's execve fails, python raises"),
    Scenario("mp_pool_worker_fails", "python3 multiprocessing Pool(3)",
             lambda b: [PY3, "-S", f"{b}/pool.py", f"{b}/in"],
             mp_pool_worker_fails, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/in/part4.dat",
             description="one worker's input missing; the pool re-raises it in the parent"),
    Scenario("mp_pool_worker_error_swallowed", "python3 multiprocessing Pool(3), errors caught (nobody)",
             lambda b: [PY3, "-S", f"{b}/pool.py", f"{b}/in"],
             mp_pool_worker_error_swallowed, frozenset({"openat"}), "EACCES", lambda b: f"{b}/in/part5.dat",
             unprivileged=True,
             description="the last part unreadable: a worker's open fails, the error is swallowed (the sum is "
             "short), then the pool terminates its workers -- a fault right before the teardown"),
    Scenario("worker_killed_waiting_on_lock", "python3 supervisor: worker with a 1 s timeout",
             lambda b: [PY3, "-S", f"{b}/supervise.py", f"{b}/worker.py", f"{b}/job.lock"],
             worker_killed_waiting_on_lock, frozenset({"flock"}), "ERESTARTSYS", lambda b: f"{b}/job.lock",
             teardown=BACKGROUND.stop,
             description="a stuck job holds the lock: the worker blocks in flock until its supervisor's "
             "Popen.terminate() (a checked kill) ends it; the interrupted flock is the only sign"),
    Scenario("user_config_unreadable", "python3 app: user config, then site config (nobody)",
             lambda b: [PY3, "-S", f"{b}/app.py", f"{b}/home", str(b)],
             user_config_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/home/.config/job/job.conf",
             unprivileged=True,
             description="the user's config unreadable: the fallback to the site config leads to a "
             "directory nobody may not write (EACCES there too, a consequence)"),
    Scenario("shebang_interpreter_missing", "python3 launcher runs a script",
             lambda b: [PY3, "-S", f"{b}/launch.py", f"{b}/tool"],
             shebang_missing, frozenset({"execve"}), "ENOENT", lambda b: f"{b}/tool",
             description="#!/usr/bin/python2 is not installed: execve of the script says ENOENT"),
    Scenario("ld_library_unreadable", "ld.so, LD_LIBRARY_PATH (nobody)",
             lambda b: ["/usr/bin/env", f"LD_LIBRARY_PATH={b}/lib", f"{b}/job"],
             ld_library_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/lib/libjob.so",
             unprivileged=True, description="the library is root-only: ld.so goes on to the system "
             "directories (ENOENT there) and gives up"),
    Scenario("bash_exec_redirect_missing_dir", "bash: exec 3>>log", lambda b: ["/bin/bash", f"{b}/job.sh"],
             bash_exec_redirect, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/logs/job.log",
             description="the log directory was never created"),
    Scenario("bash_source_missing", "bash: . env.sh", lambda b: ["/bin/bash", f"{b}/job.sh"],
             bash_source_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/env.sh",
             description="the sourced environment file is missing; the job goes on with an empty $OUTDIR"),
    Scenario("cd_no_search_permission", "sh: cd && cat (nobody)",
             lambda b: ["/bin/sh", "-c", f"cd {b}/work && /usr/bin/cat data.txt"],
             cd_no_search, frozenset({"chdir"}), "EACCES", lambda b: f"{b}/work",
             unprivileged=True, description="the work directory is root-only"),
    Scenario("sqlite_shell_disk_full", "sqlite3 shell insert",
             lambda b: ["/usr/bin/sqlite3", f"{b}/mnt/jobs.db",
                        "insert into runs select value, printf('%.500c', 'x') from generate_series(1, 400)"],
             sqlite_disk_full, frozenset({"write", "pwrite64"}), "ENOSPC", lambda b: f"{b}/mnt/jobs.db*",
             teardown=umount_after("mnt"), description="the database's filesystem is full"),
    Scenario("sqlite_shell_locked", "sqlite3 shell insert",
             lambda b: ["/usr/bin/sqlite3", f"{b}/db/jobs.db", "insert into runs values (1)"],
             sqlite_locked, frozenset({"fcntl"}), "EAGAIN", lambda b: f"{b}/db/jobs.db",
             teardown=BACKGROUND.stop, description="another process holds an exclusive lock: database is locked"),
    Scenario("curl_connection_refused", "curl",
             lambda b: ["/usr/bin/curl", "-sS", "--max-time", "10", "-o", "/dev/null", f"http://127.0.0.1:{HTTP_PORT}/"],
             curl_refused, frozenset({"connect", "getsockopt"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{HTTP_PORT}",
             teardown=HTTP.stop, description="the loopback web server is down: curl's non-blocking connect says "
             "EINPROGRESS (good runs too), the refusal comes back in getsockopt(SO_ERROR)'s value"),
    Scenario("python_urlopen_timeout_refused", "python3 urllib.request.urlopen(timeout=5)",
             lambda b: [PY3, "-S", "-c", FETCH_PY, f"http://127.0.0.1:{HTTP_PORT}/index.html"],
             curl_refused, frozenset({"connect", "getsockopt"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{HTTP_PORT}",
             teardown=HTTP.stop, description="the service is down: with a timeout python's socket connects "
             "non-blocking (EINPROGRESS, poll), the refusal is getsockopt(SO_ERROR)'s value"),
    Scenario("node_http_get_refused", "node http.get",
             lambda b: ["/usr/bin/node", "-e", FETCH_JS, f"http://127.0.0.1:{HTTP_PORT}/index.html"],
             curl_refused, frozenset({"connect", "getsockopt"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{HTTP_PORT}",
             teardown=HTTP.stop, description="the service is down: libuv connects non-blocking and learns the "
             "refusal from getsockopt(SO_ERROR) after epoll says the socket is writable"),
    Scenario("python_service_never_up", "python3 waits for its service (create_connection, timeout)",
             lambda b: [PY3, "-S", "-c", WAIT_PY, str(WAIT_PORT), "60"],
             service_never_up, frozenset({"connect", "getsockopt"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{WAIT_PORT}",
             teardown=BACKGROUND.stop, description="the service never comes up: good runs are refused too while "
             "it starts (in getsockopt(SO_ERROR)'s value) and then get in; the bad run's client gives up"),
    Scenario("wget_connection_refused", "wget -t 1",
             lambda b: ["/usr/bin/wget", "-q", "-t", "1", "-O", "/dev/null", f"http://127.0.0.1:{HTTP_PORT}/index.html"],
             curl_refused, frozenset({"connect"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{HTTP_PORT}",
             teardown=HTTP.stop, description="the service is down: wget's blocking connect fails at once "
             "(the errno is the return value, no SO_ERROR)"),
    Scenario("wget_output_not_writable", "wget -O (nobody)",
             lambda b: ["/usr/bin/wget", "-q", "-O", f"{b}/out/index.html", f"http://127.0.0.1:{HTTP_PORT}/index.html"],
             wget_output_not_writable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/out/index.html",
             unprivileged=True, teardown=HTTP.stop, description="the output directory is root's"),
    Scenario("curl_output_dir_missing", "curl -o",
             lambda b: ["/usr/bin/curl", "-sS", "--max-time", "10", "-o", f"{b}/out/index.html",
                        f"http://127.0.0.1:{HTTP_PORT}/index.html"],
             curl_output_dir_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/out/index.html",
             teardown=HTTP.stop, description="the download directory was never created"),
    Scenario("curl_connection_reset", "curl",
             lambda b: ["/usr/bin/curl", "-sS", "--max-time", "10", "-o", "/dev/null", f"http://127.0.0.1:{HTTP_PORT}/"],
             curl_reset, frozenset({"recvfrom", "read", "recvmsg"}), "ECONNRESET", lambda b: f"inet:127.0.0.1:{HTTP_PORT}",
             teardown=_stop_all(HTTP.stop, RESETTER.stop),
             description="the service resets the connection on the request (crashed mid-request)"),
    Scenario("rm_immutable_file", "rm -f", lambda b: ["/usr/bin/rm", "-f", f"{b}/logs/old.log"],
             rm_immutable, frozenset({"unlinkat", "unlink"}), "EPERM", lambda b: f"{b}/logs/old.log",
             teardown=rm_immutable_teardown, description="the file is immutable (chattr +i): EPERM even for root"),
    Scenario("kill_zero_stale_pid", "sh: kill -0 $(cat app.pid)",
             lambda b: ["/bin/sh", "-c", f"pid=$(/usr/bin/cat {b}/app.pid); kill -0 $pid || exit 1; echo up"],
             stale_pid, frozenset({"kill"}), "ESRCH", lambda b: "",
             teardown=BACKGROUND.stop, description="the service the pid file names is gone (kill(pid, 0): ESRCH; "
             "no path: the pid is the argument)"),
    Scenario("git_stale_index_lock", "git add", lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "add", "b.txt"],
             git_index_lock, frozenset({"openat"}), "EEXIST", lambda b: f"{b}/repo/.git/index.lock",
             description="a crashed git left index.lock"),
    Scenario("lock_publish_target_dir", "python3: lock file written and renamed over its target",
             lambda b: [PY3, "-S", "-c", PUBLISH_PY, f"{b}/db"],
             lock_publish_target_dir, frozenset({"rename", "renameat", "renameat2"}), "EISDIR",
             lambda b: f"{b}/db/state",
             description="the rename of the written lock over its target fails (the target is a directory); "
             "the lock is discarded: the good runs published it (guard for the differ's lock-fate rule)"),
    Scenario("link_cross_device", "ln (hard link)", lambda b: ["/usr/bin/ln", f"{b}/build.tar", f"{b}/cache/build.tar"],
             link_cross_device, frozenset({"linkat", "link"}), "EXDEV", lambda b: f"{b}/build.tar",
             teardown=umount_after("cache"), description="the cache is on another filesystem now"),
    Scenario("fifo_no_reader", "python3 writes a control FIFO",
             lambda b: [PY3, "-S", f"{b}/notify.py", f"{b}/ctl.fifo"],
             fifo_no_reader, frozenset({"openat"}), "ENXIO", lambda b: f"{b}/ctl.fifo",
             teardown=BACKGROUND.stop, description="the daemon that reads the FIFO is not running"),
    Scenario("unzip_disk_full", "unzip -o -d", lambda b: ["/usr/bin/unzip", "-qo", f"{b}/pkg.zip", "-d", f"{b}/mnt"],
             unzip_disk_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/f*.txt",
             teardown=umount_after("mnt"), description="the target filesystem is full"),
    # Guards: an earlier run's leftovers are routine (QUIET_THIRD), but not when they break the run.
    Scenario("makedirs_over_file", "python3 os.makedirs(exist_ok=True)", lambda b: [PY3, "-S", f"{b}/job.py", str(b)],
             makedirs_over_file, frozenset({"mkdir", "mkdirat"}), "EEXIST", lambda b: f"{b}/out",
             description="a file where the output directory goes: mkdir EEXIST, the isdir check (a stat that "
             "succeeds), FileExistsError"),
    Scenario("mkdir_p_over_file", "sh: mkdir -p && cp",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/mkdir -p {b}/out && /usr/bin/cp {b}/a.txt {b}/out/"],
             mkdir_p_over_file, frozenset({"mkdir", "mkdirat"}), "EEXIST", lambda b: f"{b}/out",
             description="a file where the output directory goes: mkdir -p's EEXIST and stat, then its error"),
    Scenario("gzip_replace_readonly_dir", "gzip -kf over the last output (nobody)",
             lambda b: ["/usr/bin/gzip", "-kf", f"{b}/d/data.txt"],
             gzip_replace_readonly_dir, frozenset({"unlink", "unlinkat"}), "EACCES", lambda b: f"{b}/d/data.txt.gz",
             unprivileged=True, description="every run finds the last output (EEXIST, unlink, create: routine); "
             "the bad run's directory is not writable, so the unlink fails"),
    Scenario("stale_done_marker", "sh: [ -e done ] || sort; wc",
             lambda b: ["/bin/sh", "-c", f"[ -e {b}/done ] || /usr/bin/sort -n {b}/in.txt -o {b}/sorted.txt; "
                        f"/usr/bin/wc -l {b}/sorted.txt"],
             stale_done_marker, frozenset({"newfstatat", "stat", "statx", "access", "faccessat", "faccessat2"}), None,
             lambda b: f"{b}/done",
             description="a stale done-marker: the test succeeds where good runs' failed, the sort is skipped "
             "and the job goes on (no error anywhere) with the last run's output"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run (tests/test_real_programs_third.py keeps to about a minute).
BENCH_ONLY = frozenset({
    "cmp_operand_is_dir", "curl_output_dir_missing", "msgfmt_missing_outdir", "unzip_disk_full",
    "truncate_readonly_mount", "tail_unreadable", "bash_source_missing", "shred_not_writable",
    "wget_output_not_writable", "file_magic_missing", "wget_connection_refused", "node_http_get_refused",
})


# --- good vs good: run-to-run noise -------------------------------------------------------------
POOL_PY = ("import os, sys\n"
           "from multiprocessing import Pool\n"
           "def size(name):\n"
           "    with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n"
           "        return len(fh.read())\n"
           "if __name__ == '__main__':\n"
           "    with Pool(3) as pool:\n"
           "        print(sum(pool.map(size, sorted(os.listdir(sys.argv[1])), chunksize=1)))\n")
PERL_HASH = ('my %h = map { $_ => 1 } qw(alpha bravo charlie delta echo foxtrot golf hotel);\n'
             'for my $k (keys %h) { open(my $fh, "<", "$ARGV[0]/$k") or die; my @l = <$fh>; close $fh; }\n')
PROC_PY = ("import os\n"
           "pid = os.getpid()\n"
           "with open(f'/proc/{pid}/status') as fh: fh.read()\n"
           "os.listdir(f'/proc/{pid}/fd')\n"
           "with open(f'/proc/{pid}/stat') as fh: fh.read()\n")
ATOMIC_PY = ("import os, sys, tempfile\n"
             "d = sys.argv[1]\n"
             "with tempfile.NamedTemporaryFile('w', dir=d, delete=False) as fh:\n"
             "    fh.write('state=3\\n')\n"
             "os.replace(fh.name, os.path.join(d, 'state.txt'))\n"
             "with open(os.path.join(d, 'state.txt')) as fh: fh.read()\n")

# A client waiting for a service that is still starting: each attempt's non-blocking connect
# is refused in getsockopt(SO_ERROR)'s value until the server listens; how many attempts that
# takes is timing.
LATE_SERVER_PY = ("import socket, sys, time\n"
                  "time.sleep(0.3)\n"
                  "s = socket.socket()\n"
                  "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                  "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
                  "s.listen(1)\n"
                  "s.settimeout(10)\n"
                  "c, _ = s.accept()\n"
                  "c.sendall(b'ready\\n')\n"
                  "c.close()\n")
WAIT_PY = ("import socket, sys, time\n"
           "for attempt in range(int(sys.argv[2]) if len(sys.argv) > 2 else 200):\n"
           "    try:\n"
           "        c = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n"
           "        break\n"
           "    except ConnectionRefusedError:\n"
           "        time.sleep(0.02)\n"
           "else:\n"
           "    sys.exit('service not up')\n"
           "print(c.recv(16).decode().strip())\n")


def _parts(base: Path, run: int) -> None:
    (base / "in").mkdir()
    for i in range(6):
        write(base / "in" / f"part{i}.dat", "x" * (2000 * (1 + (i * 5) % 4)))


def _perl_files(base: Path, run: int) -> None:
    (base / "d").mkdir()
    for k in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"):
        write(base / "d" / k, f"{k}\n")


def _gzip_leftover(base: Path, run: int) -> None:
    write(base / "data.txt", "".join(f"{i}\n" for i in range(2000)))
    if run == 2:  # the previous run's output is still there
        subprocess.run(["gzip", "-k", str(base / "data.txt")], check=True)


def _rm_leftover(base: Path, run: int) -> None:
    write(base / "a.txt", "a\n")
    if run == 2:
        (base / "out").mkdir()
        write(base / "out" / "old.log", "old\n")


def _site_up(base: Path, run: int) -> None:
    _site(base)
    HTTP.start(base / "www")


def _make_proj(base: Path, run: int) -> None:
    (base / "proj").mkdir()
    for n in ("a", "b", "c"):
        write(base / "proj" / f"{n}.c", f"int {n}(void) {{ return {len(n)}; }}\n")
    write(base / "proj" / "Makefile", "all: a.o b.o c.o\n%.o: %.c\n\tgcc -c -O0 -o $@ $<\n")


def _fresh_repo(base: Path, run: int) -> None:
    git_index_lock(base, False)
    (base / "repo" / "b.txt").unlink()


QUIET_THIRD: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "mp_pool_quiet",
        lambda b: [PY3, "-S", "-c", POOL_PY, f"{b}/in"],
        _parts, description="multiprocessing: random semaphore names in /dev/shm, 3 worker processes, "
        "which worker takes which input varies"),
    NoAnomalyCase(
        "curl_localhost_fallback",
        lambda b: ["/usr/bin/curl", "-sS", "--max-time", "10", "-o", "/dev/null", f"http://localhost:{HTTP_PORT}/"],
        _site_up, description="localhost from /etc/hosts: ::1 refused (server on 127.0.0.1 only), then "
        "127.0.0.1; ephemeral ports, curl's resolver thread"),
    NoAnomalyCase(
        "python_wait_for_port",
        lambda b: ["/bin/sh", "-c", f"{PY3} -S -c \"$0\" {WAIT_PORT} & {PY3} -S -c \"$1\" {WAIT_PORT}; wait",
                   LATE_SERVER_PY, WAIT_PY],
        lambda b, i: None, description="a client polls a service that is still starting: socket.create_connection "
        "with a timeout, refused in getsockopt(SO_ERROR) a varying number of times"),
    NoAnomalyCase(
        "perl_hash_order",
        lambda b: ["/usr/bin/perl", "-e", PERL_HASH, f"{b}/d"],
        _perl_files, description="perl randomises hash order per process: files opened in a different order"),
    NoAnomalyCase(
        "gzip_force_existing_output",
        lambda b: ["/usr/bin/gzip", "-kf", f"{b}/data.txt"],
        _gzip_leftover, description="the last run finds the previous output and replaces it (gzip -f)"),
    NoAnomalyCase(
        "rm_f_leftover",
        lambda b: ["/bin/sh", "-c", f"mkdir -p {b}/out && rm -f {b}/out/old.log && cp {b}/a.txt {b}/out/"],
        _rm_leftover, description="mkdir -p and rm -f on an output left by an earlier run (in the last run only)"),
    NoAnomalyCase(
        "bash_random_names",
        lambda b: ["/bin/bash", "-c", f"f={b}/out.$RANDOM; echo x > $f; cat $f > /dev/null; rm $f"],
        lambda b, i: None, description="bash $RANDOM in a file name (1 to 5 digits)"),
    NoAnomalyCase(
        "proc_pid_paths",
        lambda b: [PY3, "-S", "-c", PROC_PY],
        lambda b, i: None, description="a program reading /proc/<its pid>/..."),
    NoAnomalyCase(
        "flock_retry_loop",
        lambda b: ["/bin/sh", "-c", f"/usr/bin/flock {b}/lock sleep 0.2 & sleep 0.05; "
                   f"until /usr/bin/flock -n {b}/lock true; do sleep 0.03; done; wait"],
        lambda b, i: None, description="a lock-retry loop: the number of EAGAIN attempts varies"),
    NoAnomalyCase(
        "make_j3_quiet",
        lambda b: ["/usr/bin/make", "-s", "-j3", "-C", f"{b}/proj"],
        _make_proj, description="three compilers at once, /tmp/cc* names, completion order varies"),
    NoAnomalyCase(
        "python_atomic_write",
        lambda b: [PY3, "-S", "-c", ATOMIC_PY, str(b)],
        lambda b, i: None, description="tempfile.NamedTemporaryFile + os.replace (random tmpXXXXXXXX names)"),
    NoAnomalyCase(
        "git_status_racy_index",
        lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "status", "--porcelain"],
        _fresh_repo, description="a repository committed just before: whether git finds the index racily clean "
        "(re-reads the file, rewrites the index) depends on the clock"),
]


def quiet_teardown() -> None:
    """Stop what the noise cases started (the HTTP server)."""
    HTTP.stop()
    BACKGROUND.stop()
