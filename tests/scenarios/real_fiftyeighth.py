"""A fifty-eighth set of real programs with one real fault each: **the fault happens in one process
and is reported by another** -- a server both started by the job's script whose client gets the
error, a pipeline's middle stage whose last stage only sees EOF, a supervisor (xargs -P, make -j2,
a multiprocessing pool) whose worker fails, a daemon that dies after its start script returned, a
producer killed by SIGPIPE because its consumer failed:

- a perl quote daemon (binds, forks, its start returns) and an ``nc`` client: the release's
  ``current`` symlink points at itself: the daemon's openat ELOOP, the client prints "ERR";
- ``python3 -m http.server`` and ``curl -f`` as nobody: the report is root's 0600: the server's
  openat EACCES, a 404, curl exit 22;
- ``cut | paste - prices.txt | sort``: prices.txt is a directory: paste's read EISDIR, sort gets
  EOF, the report is incomplete;
- ``xargs -P2 -n1 cp -t spool``: the spool tmpfs holds another job's leftovers: a cp worker's write
  ENOSPC, xargs exit 123;
- ``make -j2`` installing two tools: the previous agent still runs from bin/agent: cp's openat
  ETXTBSY, make "Error 1";
- a ``multiprocessing.Pool`` of two workers writing out/part-N: out/part-2 is a directory: a
  worker's openat EISDIR, the parent reports the job failed;
- ``seq | zstd -o out/nums.zst``: out is a file: zstd's stat ENOTDIR (zstd crashes), seq dies of
  SIGPIPE;
- a python daemon (binds, forks, its start returns) writing its journal into a state tmpfs another
  job filled: write ENOSPC, the daemon dies, the ``nc`` status check gets no answer;
- a ``socat`` forking log server running ``tail -n 3 var/app.log`` per connection: the log was
  rotated away: tail's openat ENOENT, the client gets nothing;
- a ``socat -u TCP-LISTEN CREATE:inbox/upload.dat`` receiver as nobody: inbox/ is root's: socat's
  creat EACCES, ``nc`` sent its data, the stored upload is missing.

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good runs
never had, in the process that had it. Every run of a case has the same command line; the job's
scripts and configuration are files beside it, the same in every run.

Noise cases (``QUIET_FIFTYEIGHTH``): the quote daemon, http.server, xargs -P2, make -j2 and the
pool in good runs alone -- other contents, sizes, numbers of files and workers' interleavings, the
clients' ephemeral ports, the daemons' pids.

Loopback: five ports of this set's own (``harness._port_block``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from .files import chown_nobody, mounted_tmpfs, token, write_file
from .harness import NoAnomalyCase, Scenario, _port_block, sh_argv

OPEN = frozenset({"openat", "open"})
WRITE = frozenset({"write", "pwrite64", "writev"})
READ = frozenset({"read", "pread64", "readv"})
STAT = frozenset({"newfstatat", "stat", "lstat", "statx"})

QUOTE_PORT, HTTP_PORT, STATE_PORT, LOG_PORT, UPLOAD_PORT = _port_block(5)
PY = "/usr/bin/python3"

# What a case started for its run (a running agent): stopped by its teardown.
_CLEANUPS: list = []


def _cleanup(_base: Path | None = None) -> None:
    while _CLEANUPS:
        with contextlib.suppress(Exception):  # a teardown goes on with the rest
            _CLEANUPS.pop()()


# --- a perl quote daemon and an nc client: the release symlink loops ------------------------------------------
QUOTED_PL = r"""use strict; use IO::Socket::INET;
my ($base, $port) = @ARGV;
my $s = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1', LocalPort => $port, ReuseAddr => 1,
                              Proto => 'tcp') or die "quoted: bind: $!\n";
my $pid = fork() // die "quoted: fork: $!\n";
exit 0 if $pid;  # the start returns once the daemon listens
while (my $c = $s->accept) {
    my $q = <$c>; $q = '' unless defined $q; chomp $q;
    if ($q eq 'QUIT') { close $s; exit 0 }
    if (open(my $f, '<', "$base/srv/current/$q")) { print $c $_ while <$f>; close $f }
    else { print $c "ERR $q: $!\n" }
    close $c;
}
"""
QUOTE_SH = (f'perl "$1/bin/quoted.pl" "$1" {QUOTE_PORT} || exit 2; '
            f'reply=$(echo quotes.txt | nc 127.0.0.1 {QUOTE_PORT}); '
            f'echo QUIT | nc 127.0.0.1 {QUOTE_PORT}; '
            'case "$reply" in ""|ERR*) echo "quote service failed: $reply" >&2; exit 1;; esac; '
            'printf "%s\\n" "$reply" > "$1/out/today.txt"')


def _quote_tree(base: Path, *, loop: bool = False, lines: int = 5, release: str = "r1") -> None:
    write_file(base / "bin" / "quoted.pl", QUOTED_PL)
    (base / "out").mkdir()
    rel = base / "srv" / "releases" / release
    write_file(rel / "quotes.txt", "".join(f"quote {i}: {token(6)}\n" for i in range(lines)))
    if loop:  # the deploy's ln -sfn ran with current as its own target
        (base / "srv" / "current").symlink_to("current")
    else:
        (base / "srv" / "current").symlink_to(f"releases/{release}")


def quote_build(base: Path, bad: bool) -> None:
    _quote_tree(base, loop=bad)


# --- python3 -m http.server and curl as nobody: the report is root's 0600 --------------------------------------
HTTP_SH = (f'{PY} -u -m http.server {HTTP_PORT} -b 127.0.0.1 -d "$1/www" > "$1/run/ready" 2>/dev/null & srv=$!; '
           'read -r line < "$1/run/ready"; '
           f'curl -fsS -o "$1/run/report.html" http://127.0.0.1:{HTTP_PORT}/report.html; rc=$?; '
           'kill "$srv"; wait "$srv"; exit $rc')


def _http_tree(base: Path, *, private: bool = False, size: int = 2000) -> None:
    run = base / "run"
    run.mkdir()
    os.mkfifo(run / "ready")
    chown_nobody(run, run / "ready")
    write_file(base / "www" / "index.html", "<h1>reports</h1>\n")
    # the bad day's report job ran with umask 077 as root
    write_file(base / "www" / "report.html", f"<pre>{token(size // 2)}</pre>\n", 0o600 if private else 0o644)


def http_build(base: Path, bad: bool) -> None:
    _http_tree(base, private=bad)


# --- cut | paste - prices.txt | sort: prices.txt a directory ---------------------------------------------------
PASTE_SH = ('cut -d, -f1 "$1/orders.csv" | paste -d, - "$1/prices.txt" | sort -t, -k2 -n > "$1/out/report.csv"; '
            '[ "$(wc -l < "$1/out/report.csv")" = "$(wc -l < "$1/orders.csv")" ] || '
            '{ echo "report is incomplete" >&2; exit 1; }')


def paste_build(base: Path, bad: bool) -> None:
    rows = 40
    write_file(base / "orders.csv", "".join(f"item{i},{token(2)}\n" for i in range(rows)))
    (base / "out").mkdir()
    if bad:  # the price list's archive unpacked a directory of that name
        write_file(base / "prices.txt" / "2024.txt", "1\n")
    else:
        write_file(base / "prices.txt", "".join(f"{i * 3 % 17}\n" for i in range(rows)))


# --- xargs -P2 -n1 cp -t spool: the spool tmpfs holds leftovers -------------------------------------------------
XARGS_SH = 'cd "$1/in" && ls | xargs -P2 -n1 cp -t "$1/spool"'


def _xargs_tree(base: Path, *, leftover: int = 0, files: int = 6) -> None:
    for i in range(files):
        write_file(base / "in" / f"batch-{i:02d}.dat", os.urandom(24 * 1024))
    spool = mounted_tmpfs(base / "spool", "256k")
    if leftover:
        write_file(spool / f"stale-{token(2)}.dat", os.urandom(leftover))


def xargs_build(base: Path, bad: bool) -> None:
    _xargs_tree(base, leftover=200 * 1024 if bad else 0)  # 144 KiB of batches, 200 KiB left over


# --- make -j2 installing two tools: the previous agent still runs -----------------------------------------------
MAKE_SH = 'exec make -s -j2 -C "$1"'


def _make_tree(base: Path, *, running: bool = False, size: int = 0) -> None:
    tools = ("agent", "helper")
    for t in tools:  # the installed (older) versions
        write_file(base / "bin" / t, Path("/usr/bin/sleep").read_bytes(), 0o755)
    old = os.stat(base / "bin" / "agent").st_mtime - 60
    for t in tools:
        os.utime(base / "bin" / t, (old, old))
        write_file(base / "build" / t, Path("/usr/bin/sleep").read_bytes() + os.urandom(size), 0o755)
    write_file(base / "Makefile", f"all: {base}/bin/agent {base}/bin/helper\n"
                                  f"{base}/bin/%: {base}/build/%\n\tcp $< $@\n")
    if running:  # the previous agent was never stopped before the install
        proc = subprocess.Popen([str(base / "bin" / "agent"), "600"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

        def stop() -> None:
            proc.kill()
            proc.wait(timeout=10)

        _CLEANUPS.append(stop)


def make_build(base: Path, bad: bool) -> None:
    _make_tree(base, running=bad)


# --- a multiprocessing.Pool writing out/part-N: out/part-2 a directory -----------------------------------------
POOL_PY = """import multiprocessing, sys
base = sys.argv[1]
def work(n):
    with open(f"{base}/in/shard-{n}.txt") as src:
        words = src.read().split()
    with open(f"{base}/out/part-{n}", "w") as dst:
        dst.write("\\n".join(sorted(words)) + "\\n")
    return len(words)
if __name__ == "__main__":
    shards = int(open(f"{base}/shards").read())
    try:
        with multiprocessing.Pool(2) as pool:
            total = sum(pool.map(work, range(shards), chunksize=1))
    except Exception as exc:
        print(f"job failed: {exc!r}", file=sys.stderr)
        sys.exit(1)
    print(total)
"""
POOL_SH = f'exec {PY} -S "$1/bin/pool.py" "$1"'


def _pool_tree(base: Path, *, blocked: bool = False, shards: int = 4) -> None:
    write_file(base / "bin" / "pool.py", POOL_PY)
    write_file(base / "shards", f"{shards}\n")
    for n in range(shards):
        write_file(base / "in" / f"shard-{n}.txt", " ".join(token(3) for _ in range(50)) + "\n")
    (base / "out").mkdir()
    if blocked:  # an earlier tool's run left a directory where part-2 goes
        (base / "out" / "part-2").mkdir()


def pool_build(base: Path, bad: bool) -> None:
    _pool_tree(base, blocked=bad)


# --- seq | zstd -o out/nums.zst: out a file -------------------------------------------------------------------
ZSTD_SH = 'seq 1 300000 | zstd -q -o "$1/out/nums.zst" || { echo "compression failed" >&2; exit 1; }'


def zstd_build(base: Path, bad: bool) -> None:
    if bad:  # an earlier step wrote its log to "out"
        write_file(base / "out", f"log {token(3)}\n")
    else:
        (base / "out").mkdir()


# --- a python daemon writing its journal into a full state tmpfs ---------------------------------------------------
STATED_PY = """import os, socket, sys
base, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(5)
if os.fork():
    os._exit(0)  # the start returns once the daemon listens
os.setsid()
with open(f"{base}/state/journal", "wb") as j:  # the startup journal: 64 KiB of state
    j.write(b"J" * 65536)
c, _ = s.accept()
c.recv(100)
c.sendall(b"ok\\n")
c.close()
"""
STATE_SH = (f'{PY} -S "$1/bin/stated.py" "$1" {STATE_PORT} || exit 2; '
            f'reply=$(echo status | nc 127.0.0.1 {STATE_PORT}); '
            '[ "$reply" = ok ] || { echo "stated not answering" >&2; exit 1; }')


def state_build(base: Path, bad: bool) -> None:
    write_file(base / "bin" / "stated.py", STATED_PY)
    state = mounted_tmpfs(base / "state", "256k")
    if bad:  # the import job's snapshot left 220 KiB in the state file system
        write_file(state / f"snapshot-{token(2)}.db", os.urandom(220 * 1024))


# --- a socat forking log server running tail per connection: the log rotated away ------------------------------
LOG_SH = (f'socat -d -d TCP-LISTEN:{LOG_PORT},bind=127.0.0.1,reuseaddr,fork '
          'EXEC:"tail -n 3 $1/var/app.log" 2> "$1/run/log" & srv=$!; '
          'exec 3< "$1/run/log"; '
          'while read -r line <&3; do case "$line" in *"listening on"*) break;; esac; done; '
          f'got=$(nc 127.0.0.1 {LOG_PORT} < /dev/null); '
          'kill "$srv"; cat <&3 > /dev/null; wait "$srv"; '  # the log drained: every socat has exited
          '[ -n "$got" ] || { echo "no log lines from the log service" >&2; exit 1; }; '
          'printf "%s\\n" "$got"')


def log_build(base: Path, bad: bool) -> None:
    run = base / "run"
    run.mkdir()
    os.mkfifo(run / "log")
    (base / "var").mkdir()
    if bad:  # logrotate moved app.log away and the app has not written a line since
        write_file(base / "var" / "app.log.1", f"old {token(3)}\n")
    else:
        write_file(base / "var" / "app.log", "".join(f"line {i} {token(3)}\n" for i in range(8)))


# --- a socat -u receiver as nobody: inbox/ is root's ------------------------------------------------------------
UPLOAD_SH = (f'socat -d -d -u TCP-LISTEN:{UPLOAD_PORT},bind=127.0.0.1,reuseaddr '
             'CREATE:"$1/inbox/upload.dat" 2> "$1/run/log" & srv=$!; '
             'exec 3< "$1/run/log"; '
             'while read -r line <&3; do case "$line" in *"listening on"*) break;; esac; done; '
             f'nc -N 127.0.0.1 {UPLOAD_PORT} < "$1/payload.bin"; '
             'wait "$srv"; '
             'cmp -s "$1/payload.bin" "$1/inbox/upload.dat" || { echo "upload not stored" >&2; exit 1; }')


def upload_build(base: Path, bad: bool) -> None:
    run = base / "run"
    run.mkdir()
    os.mkfifo(run / "log")
    chown_nobody(run, run / "log")
    write_file(base / "payload.bin", os.urandom(4096))
    inbox = base / "inbox"
    inbox.mkdir()
    if not bad:  # the bad day's provisioning recreated inbox/ as root's
        chown_nobody(inbox)


def _sc(name, program, argv, build, probe, errno, path, *, teardown=_cleanup, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYEIGHTH: list[Scenario] = [
    _sc("t58_perl_quote_daemon_symlink_loop", "perl quote daemon (bind, fork, return) asked by nc",
        sh_argv(QUOTE_SH), quote_build, OPEN, "ELOOP", lambda b: f"{b}/srv/current/quotes.txt",
        description="srv/current points at itself: the daemon's openat ELOOP, the client prints ERR, exit 1"),
    _sc("t58_http_server_report_unreadable", "python3 -m http.server asked by curl -f, as nobody",
        sh_argv(HTTP_SH), http_build, OPEN, "EACCES", lambda b: f"{b}/www/report.html", unprivileged=True,
        description="report.html is root's 0600: the server's openat EACCES, a 404, curl exit 22"),
    _sc("t58_paste_middle_stage_dir", "paste -d, - prices.txt between cut and sort",
        sh_argv(PASTE_SH), paste_build, READ, "EISDIR", lambda b: f"{b}/prices.txt",
        description="prices.txt is a directory: paste's read EISDIR, sort sees EOF, 'report is incomplete', exit 1"),
    _sc("t58_xargs_parallel_cp_spool_full", "xargs -P2 -n1 cp -t spool (a 256 KiB tmpfs with leftovers)",
        sh_argv(XARGS_SH), xargs_build, WRITE, "ENOSPC", lambda b: f"{b}/spool/batch-*.dat",
        description="200 KiB of leftovers: a cp worker's write ENOSPC, xargs exit 123"),
    _sc("t58_make_j2_install_running_agent", "make -j2 installing bin/agent and bin/helper with cp",
        sh_argv(MAKE_SH), make_build, OPEN, "ETXTBSY", lambda b: f"{b}/bin/agent",
        description="the previous agent still runs from bin/agent: cp's openat ETXTBSY, make 'Error 1'"),
    _sc("t58_pool_worker_part_is_dir", "python3 multiprocessing.Pool(2) writing out/part-N",
        sh_argv(POOL_SH), pool_build, OPEN, "EISDIR", lambda b: f"{b}/out/part-2",
        description="out/part-2 is a directory: a worker's openat EISDIR, the parent prints 'job failed', exit 1"),
    _sc("t58_zstd_consumer_out_not_dir", "zstd -o out/nums.zst fed by seq",
        sh_argv(ZSTD_SH), zstd_build, STAT, "ENOTDIR", lambda b: f"{b}/out/nums.zst",
        description="out is a file: zstd's stat of out/nums.zst ENOTDIR (then its openat, a crash), seq killed "
                    "by SIGPIPE"),
    _sc("t58_daemon_journal_state_full", "python3 daemon (bind, fork, return) journaling into a full tmpfs",
        sh_argv(STATE_SH), state_build, WRITE, "ENOSPC", lambda b: f"{b}/state/journal",
        description="220 KiB of a snapshot in the 256 KiB state tmpfs: the daemon's journal write ENOSPC after its "
                    "start returned, it dies, the nc status check gets nothing, exit 1"),
    _sc("t58_tail_under_socat_fork_log_rotated", "tail -n 3 var/app.log run by a socat forking server for nc",
        sh_argv(LOG_SH), log_build, OPEN, "ENOENT", lambda b: f"{b}/var/app.log",
        description="logrotate moved app.log away: tail's openat ENOENT in socat's child, the client gets "
                    "nothing, exit 1"),
    _sc("t58_socat_receiver_inbox_root", "socat -u TCP-LISTEN CREATE:inbox/upload.dat fed by nc, as nobody",
        sh_argv(UPLOAD_SH), upload_build, OPEN | {"creat"}, "EACCES", lambda b: f"{b}/inbox/upload.dat", unprivileged=True,
        description="inbox/ is root's: the receiver's creat EACCES after accepting, 'upload not stored', exit 1"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def quote_noise(base: Path, run: int) -> None:
    _quote_tree(base, lines=[5, 40, 1][run % 3], release=f"r{token(2)}")


def http_noise(base: Path, run: int) -> None:
    _http_tree(base, size=[2000, 200_000, 20][run % 3])


def xargs_noise(base: Path, run: int) -> None:
    _xargs_tree(base, files=[6, 3, 8][run % 3], leftover=[0, 16 * 1024, 8 * 1024][run % 3])


def make_noise(base: Path, run: int) -> None:
    _make_tree(base, size=[0, 300_000, 4096][run % 3])


def pool_noise(base: Path, run: int) -> None:
    _pool_tree(base, shards=[4, 7, 3][run % 3])


QUIET_FIFTYEIGHTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t58_perl_quote_daemon_noise", sh_argv(QUOTE_SH), quote_noise,
                  description="the quote daemon serving 5, 40, 1 quotes from releases of other names"),
    NoAnomalyCase("t58_http_server_noise", sh_argv(HTTP_SH), http_noise,
                  description="http.server and curl (as root) on reports of 2 KB, 200 KB, 20 bytes"),
    NoAnomalyCase("t58_xargs_parallel_cp_noise", sh_argv(XARGS_SH), xargs_noise,
                  description="xargs -P2 cp of 6, 3, 8 batches into the spool with small leftovers"),
    NoAnomalyCase("t58_make_j2_install_noise", sh_argv(MAKE_SH), make_noise,
                  description="make -j2 installing tools of other sizes, nothing running from bin/"),
    NoAnomalyCase("t58_pool_workers_noise", sh_argv(POOL_SH), pool_noise,
                  description="the pool of two workers over 4, 7, 3 shards"),
]


def quiet_teardown() -> None:
    """Stop what a case started for its run (the previous agent); the mounts under a case's
    directory go with it (the harness unmounts them)."""
    _cleanup()
