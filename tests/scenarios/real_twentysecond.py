"""A twenty-second set of real programs with one real fault each, hidden amid the run-to-run
**nondeterminism** that real jobs carry other than random names (randname22 works on those):
good runs that differ from each other in order, in counts, in timing and in identity, and a
bad run whose one fault sits somewhere inside that variation.

- **order**: python iterating a *set* of shard names with hash randomisation (PYTHONHASHSEED
  unset, as in every job: the shard that is missing may be opened first or last) and a *dict*
  of published files whose modes it sets (one file another account owns: chmod EPERM, the job
  goes on); a listing of an inbox on tmpfs, where readdir returns the files newest first, so in
  the order a feeder happened to create them (one report unreadable to the job: openat
  EACCES); a thread pool of five workers talking to five backends on ports the kernel assigns
  (bind to 0), whose completion order varies (the third backend down: connect ECONNREFUSED);
  ``xargs -P 3 b2sum`` over inputs of varying size (a dangling link among them: b2sum
  openat ENOENT); ``make -j 3`` of recipes sleeping varying times (one output path a directory:
  the recipe's sh openat EISDIR); ``xz -T2`` over an input of varying size (blocks and threads
  vary; the job's account may not create the .xz beside it: openat EACCES);
- **counts**: a nonblocking lock taken in a retry loop while another process holds it 0-300
  ms (flock EAGAIN 0-7 times), where in the bad run the stale holder never lets go (flock EAGAIN
  until the job gives up: the EAGAIN that, this time, never ends); a logger rotating on size
  (RotatingFileHandler: no, one or two rotations in good runs; in the bad run a directory
  stands at ``app.log.1``: unlink EISDIR, which logging reports and passes over, exit 0); a
  cache warm in some good runs and cold in others, made lazily (a cache entry another account
  wrote in the bad run: openat EACCES); a pipe reader whose read sizes depend on what the
  writer had ready, loading a lookup table per record type lazily (one table missing: openat
  ENOENT);
- **timing**: a watcher polling 1-20 times for a ready flag a producer writes after a varying
  delay (``state`` is a file in the bad run: the producer's openat ENOTDIR, and the watcher's
  polls of ``state/ready`` fail ENOTDIR too); a parent reaping forked workers from a SIGCHLD
  handler that interrupts its sleeps at varying points (one worker's input missing: openat
  ENOENT in the child); a server on a kernel-assigned port accepting four clients in varying
  interleaving (one upload's target a directory: openat EISDIR in the server);
- **identity**: pids, kernel-assigned ports, the hostname and the time written into status
  files in every run.

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what
``strace -f`` shows a person looking for the fault, decided before the differ ran. Case names
start with ``nd_`` (no earlier set's do). No loopback port of `harness.PORTS` is used: every
listener binds port 0 and publishes the port the kernel gave it in a file.

Six cases force their variation (`_RunIndex`: the first two good runs one way, the third good
run and the bad run the other), so the bad run's noise is one the two good runs a diff is given
never showed: a cache warm in the good runs and cold in the bad one (a stat miss and a fill
before an output directory found missing), a lazily made directory an earlier run left (mkdir
EEXIST) before a config private to root, a 3 ms SIGALRM heartbeat interrupting whatever blocks,
a child reaped by the program's own SIGCHLD handler before its main line waits (wait4 ECHILD
there; the result's final name a directory: rename EISDIR), a log that rotates in the bad run
only before an exclusive summary that already exists (openat EEXIST), and a nonblocking pipe
read that meets EAGAIN before the index it names turns out missing. Two more, written after the
differ's mechanisms for these, on programs they were not shaped on: a TimedRotatingFileHandler
rotating on time in the bad run only (``results`` a file: openat ENOTDIR), and subprocess's
Popen.wait finding its helper reaped by the job's SIGCHLD handler (then link EEXIST: the last
release's binary still there).

The good-vs-good cases (`QUIET_TWENTYSECOND`) are these programs' good runs alone. Three of
them, and the third good runs of three fault cases, were not quiet on main (1c1c7f3): the cache cold in the third run only (newfstatat ENOENT of the entry), the child
reaped by the handler (wait4 ECHILD), the log rotating in the third run only (newfstatat ENOENT
of app.log.2); and the cache case's fault was named at the stat miss. Expectations were decided
before the differ ran; one was corrected from the recording, not the differ: the rename's
failing path is its target (``out/final.txt`` is the directory), not its source.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

from .catalog import mount_tmpfs, umount, write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NOBODY_UID = 65534
OPEN = frozenset({"openat", "open"})


def _nobody(path: Path) -> None:
    os.chown(path, NOBODY_UID, NOBODY_UID)


def _py(script: str, *args: str):
    def argv(b: Path) -> list[str]:
        return [PY3, "-S", f"{b}/{script}", str(b), *args]
    return argv


def _sh(script: str):
    def argv(b: Path) -> list[str]:
        return ["/bin/sh", f"{b}/{script}"]
    return argv


def _data(rng: random.Random, lines: int) -> str:
    return "".join(f"{rng.randrange(10**8):08d} host{rng.randrange(64):02d} {rng.random():.6f}\n"
                   for _ in range(lines))


def _status_lines() -> str:
    """What every job here writes into its status file: identity that differs run to run."""
    return ("def status(base, what):\n"
            "    import os, socket, time\n"
            "    with open(os.path.join(base, 'status.txt'), 'a') as f:\n"
            "        f.write(f'{what} pid={os.getpid()} host={socket.gethostname()} t={time.time():.6f}\\n')\n")


# --- order: a set of shards (hash randomisation) ---------------------------------------------
SHARDS = [f"shard_{i:02d}.dat" for i in range(12)]
SET_JOB = _status_lines() + r'''
import os, sys, zlib
base = sys.argv[1]
names = set(open(os.path.join(base, "shards.txt")).read().split())  # a set: order by str hash
total = 0
for name in names:
    with open(os.path.join(base, "in", name), "rb") as f:
        total = zlib.crc32(f.read(), total)
with open(os.path.join(base, "out", "checksum"), "w") as f:
    f.write(f"{total}\n")
status(base, "done")
'''


def set_of_shards(base: Path, bad: bool) -> None:
    rng = random.Random()
    write(base / "job.py", SET_JOB)
    write(base / "shards.txt", "\n".join(SHARDS) + "\n")
    (base / "in").mkdir()
    (base / "out").mkdir()
    for name in SHARDS:
        if bad and name == "shard_07.dat":  # the copy step lost one shard
            continue
        write(base / "in" / name, _data(rng, rng.randint(20, 200)))


# --- order: a dict of published files and their modes ------------------------------------------
DICT_JOB = _status_lines() + r'''
import os, sys
base = sys.argv[1]
pub = os.path.join(base, "pub")
modes = {name: (0o644 if name.endswith(".html") else 0o600) for name in open(os.path.join(base, "files.txt")).read().split()}
failed = 0
for name in {n for n in modes}:  # published in hash order of the names
    try:
        os.chmod(os.path.join(pub, name), modes[name])
    except PermissionError as e:
        print(f"publish: {e}", file=sys.stderr)
        failed += 1
status(base, f"published failed={failed}")
sys.exit(1 if failed else 0)
'''
PUB_FILES = [f"index_{i}.html" for i in range(8)] + [f"data_{i}.json" for i in range(4)]


def dict_of_modes(base: Path, bad: bool) -> None:
    write(base / "job.py", DICT_JOB)
    write(base / "files.txt", "\n".join(PUB_FILES) + "\n")
    pub = base / "pub"
    pub.mkdir()
    _nobody(pub)
    _nobody(base)  # status.txt is written by the job's account
    rng = random.Random()
    for name in PUB_FILES:
        write(pub / name, _data(rng, 5), 0o664)
        if not (bad and name == "index_3.html"):  # a deploy as root left one page root's
            _nobody(pub / name)


# --- order: an inbox on tmpfs, listed newest first ----------------------------------------------
INBOX_JOB = _status_lines() + r'''
import os, sys
base = sys.argv[1]
inbox = os.path.join(base, "inbox")
rows = 0
failed = []
for name in os.listdir(inbox):  # tmpfs: newest first, so in the order the feeder made them
    try:
        with open(os.path.join(inbox, name)) as f:
            rows += sum(1 for _ in f)
    except OSError as e:
        failed.append(name)
        print(f"inbox: {e}", file=sys.stderr)
with open(os.path.join(base, "out", "rows"), "w") as f:
    f.write(f"{rows}\n")
status(base, f"read failed={len(failed)}")
sys.exit(1 if failed else 0)
'''
REPORTS = [f"report_{i:02d}.csv" for i in range(10)]


def inbox_tmpfs(base: Path, bad: bool) -> None:
    write(base / "job.py", INBOX_JOB)
    for d in ("out",):
        (base / d).mkdir()
        _nobody(base / d)
    _nobody(base)
    mount_tmpfs(base / "inbox", "8m")
    rng = random.Random()
    names = REPORTS[:]
    rng.shuffle(names)  # the feeder delivers in whatever order its transfers finish
    for name in names:
        mode = 0o600 if bad and name == "report_04.csv" else 0o644  # one delivered private to root
        write(base / "inbox" / name, _data(rng, rng.randint(5, 50)), mode)


def _umount_inbox(base: Path) -> None:
    umount(base / "inbox")


# --- order: a thread pool over five backends on kernel-assigned ports -----------------------------
POOL_JOB = _status_lines() + r'''
import os, socket, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor, as_completed
base = sys.argv[1]
server = subprocess.Popen([sys.executable, "-S", os.path.join(base, "backends.py"), base], stdout=subprocess.PIPE)
ports = [int(p) for p in server.stdout.readline().split()]  # the kernel's choice, this run
status(base, "ports " + " ".join(map(str, ports)))

def ask(i, port):
    time.sleep(int.from_bytes(os.urandom(1), "big") / 4000)  # work before asking, varying
    with socket.create_connection(("127.0.0.1", port)) as s:  # blocking: connect itself fails
        s.sendall(f"shard {i}\n".encode())
        return i, s.recv(100)

failed = 0
with ThreadPoolExecutor(max_workers=5) as pool:
    futures = [pool.submit(ask, i, p) for i, p in enumerate(ports)]
    with open(os.path.join(base, "out", "answers"), "w") as out:
        for fut in as_completed(futures):  # completion order: whichever backend answered first
            try:
                i, reply = fut.result()
                out.write(f"{i} {reply!r}\n")
            except OSError as e:
                print(f"pool: {e}", file=sys.stderr)
                failed += 1
server.terminate()
server.wait()
sys.exit(1 if failed else 0)
'''
BACKENDS = r'''
import os, select, socket, sys
base = sys.argv[1]
down = set(int(x) for x in open(os.path.join(base, "down")).read().split())
socks = []
for i in range(5):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # the kernel assigns the port
    if i not in down:  # a crashed backend's port stays bound, but nobody listens there
        s.listen(8)
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks), flush=True)
live = [s for i, s in enumerate(socks) if i not in down]
while True:
    ready, _, _ = select.select(live, [], [])
    for s in ready:
        c, _ = s.accept()
        c.sendall(b"ok " + c.recv(100))
        c.close()
'''


def pool_backends(base: Path, bad: bool) -> None:
    write(base / "job.py", POOL_JOB)
    write(base / "backends.py", BACKENDS)
    write(base / "down", "2\n" if bad else "\n")  # the third of five backends crashed
    (base / "out").mkdir()


# --- order: xargs -P 3 b2sum ------------------------------------------------------------------
XARGS_SH = "cd {b}\nfind in -type f -o -type l | sort | xargs -P 3 -n 2 b2sum > out/sums\n"


def xargs_digests(base: Path, bad: bool) -> None:
    write(base / "job.sh", XARGS_SH.format(b=base))
    (base / "in").mkdir()
    (base / "out").mkdir()
    rng = random.Random()
    for i in range(9):
        write(base / "in" / f"blob{i}.bin", _data(rng, rng.randint(10, 20000)))
    if bad:  # the build removed a blob an alias still points at
        (base / "in" / "blob5.bin").unlink()
        os.symlink("blob5.bin", base / "in" / "blob5.alias")


# --- order: make -j 3 ----------------------------------------------------------------------------
TARGETS = "abcdef"


def make_parallel(base: Path, bad: bool) -> None:
    rng = random.Random()
    rules = [f"all: {' '.join(f'out/{t}.out' for t in TARGETS)}\n"]
    for t in TARGETS:  # each recipe's duration varies run to run, so does the interleaving
        rules.append(f"out/{t}.out: src/{t}.in\n\tsleep 0.0{rng.randint(0, 9)}; tr a-z A-Z < $< > $@\n")
    write(base / "Makefile", "".join(rules))
    (base / "src").mkdir()
    (base / "out").mkdir()
    for t in TARGETS:
        write(base / "src" / f"{t}.in", f"{t} input\n" * rng.randint(1, 100))
    if bad:  # an older layout kept out/d.out as a directory of parts (older than its input:
        (base / "out" / "d.out").mkdir()  # make rebuilds it)
        os.utime(base / "out" / "d.out", (1e9, 1e9))


def _make(b: Path) -> list[str]:
    return ["/usr/bin/make", "-s", "-j", "3", "-C", str(b)]


# --- order: xz -T2 ---------------------------------------------------------------------------
def xz_threads(base: Path, bad: bool) -> None:
    rng = random.Random()
    (base / "in").mkdir()
    write(base / "in" / "data.log", _data(rng, rng.randint(30000, 120000)))
    if not bad:  # on the bad host the spool directory was recreated by root
        _nobody(base / "in")


def _xz(b: Path) -> list[str]:
    return ["/usr/bin/xz", "-k", "-T2", "--block-size=1MiB", f"{b}/in/data.log"]


# --- counts: a nonblocking lock taken in a retry loop ------------------------------------------
LOCK_JOB = _status_lines() + r'''
import fcntl, os, sys, time
base = sys.argv[1]
f = open(os.path.join(base, "job.lock"), "a")
for attempt in range(40):
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        time.sleep(0.05)
else:
    print("lock: still busy after 2 s, giving up", file=sys.stderr)
    sys.exit(1)
with open(os.path.join(base, "out", "result"), "w") as out:
    out.write(open(os.path.join(base, "input.txt")).read().upper())
status(base, f"locked after {attempt} tries")
'''


class _Holder:
    """Another process holding the job's lock (outside the recording): for a varying time in
    good runs, for good in the bad run (a stale process of a crashed earlier run)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self, lock: Path, seconds: float) -> None:
        self.stop()
        code = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                "print('held', flush=True)\ntime.sleep(float(sys.argv[2]))\n")
        self.proc = subprocess.Popen([PY3, "-S", "-c", code, str(lock), str(seconds)], stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # the lock is held from here

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


HOLDER = _Holder()


def lock_retries(base: Path, bad: bool) -> None:
    write(base / "job.py", LOCK_JOB)
    write(base / "input.txt", "payload\n" * 20)
    (base / "out").mkdir()
    HOLDER.start(base / "job.lock", 60 if bad else random.choice([0, 0.05, 0.15, 0.3]))


def _stop_holder(base: Path) -> None:  # noqa: ARG001 - a teardown
    HOLDER.stop()


# --- counts: a log rotating on size --------------------------------------------------------------
LOG_JOB = r'''
import logging, logging.handlers, os, sys
base = sys.argv[1]
count = int(open(os.path.join(base, "messages")).read())
handler = logging.handlers.RotatingFileHandler(os.path.join(base, "logs", "app.log"), maxBytes=4096, backupCount=1)
log = logging.getLogger("job")
log.addHandler(handler)
log.setLevel(logging.INFO)
for i in range(count):
    log.info("step %04d of %04d: processed shard with checksum %08x", i, count, (i * 2654435761) & 0xffffffff)
with open(os.path.join(base, "out", "done"), "w") as f:
    f.write(f"{count}\n")
'''
_ROTATIONS = iter(range(10**9))


def log_rotation(base: Path, bad: bool) -> None:
    write(base / "job.py", LOG_JOB)
    (base / "logs").mkdir()
    (base / "out").mkdir()
    # ~75 bytes a message: 40 fit in one 4 KiB file. The good runs take turns at no, one and two
    # rotations (forced, so every set of three good runs shows the variation).
    count = 150 if bad else (30, 80, 140)[next(_ROTATIONS) % 3]
    write(base / "messages", f"{count}\n")
    if bad:  # a log collector made app.log.1 a directory of its shipped pieces
        (base / "logs" / "app.log.1").mkdir()


# --- counts: a cache warm or cold, made lazily -------------------------------------------------
CACHE_JOB = _status_lines() + r'''
import hashlib, os, sys
base = sys.argv[1]
cache = os.path.join(base, "work", "cache")
entry = os.path.join(cache, "model.bin")
if os.path.exists(entry):
    with open(entry, "rb") as f:
        model = f.read()
else:
    model = hashlib.sha256(open(os.path.join(base, "params.txt"), "rb").read() * 2000).digest() * 64
    os.makedirs(cache, exist_ok=True)  # made on first use
    with open(entry + ".tmp", "wb") as f:
        f.write(model)
    os.rename(entry + ".tmp", entry)
with open(os.path.join(base, "work", "result"), "w") as f:
    f.write(hashlib.md5(model).hexdigest() + "\n")
status(os.path.join(base, "work"), "done")
'''
_WARM = iter(range(10**9))


def cache_warm_or_cold(base: Path, bad: bool) -> None:
    write(base / "job.py", CACHE_JOB)
    write(base / "params.txt", "lr=0.1\nlayers=4\n")
    work = base / "work"
    work.mkdir()
    _nobody(work)
    if bad or next(_WARM) % 2 == 1:  # an earlier job on this host warmed the cache
        (work / "cache").mkdir()
        _nobody(work / "cache")
        write(work / "cache" / "model.bin", "m" * 2048, 0o600 if bad else 0o644)
        if not bad:  # the bad host's entry was written by a root job, private to root
            _nobody(work / "cache" / "model.bin")


# --- counts: a pipe reader whose read sizes vary ----------------------------------------------
PIPE_SH = "cd {b}\n/usr/bin/python3 -S gen.py | /usr/bin/python3 -S consume.py {b}\n"
GEN = r'''
import os, random, sys, time
rng = random.Random()
for burst in range(12):  # bursts of varying size at varying moments: the reader's read sizes vary
    sys.stdout.write("".join(f"{'ABCD'[(burst + i) % 4]} {rng.randrange(10**6)}\n" for i in range(rng.randint(1, 300))))
    sys.stdout.flush()
    time.sleep(rng.random() / 50)
'''
CONSUME = r'''
import os, sys
base = sys.argv[1]
maps = {}
counts = {}
rest = b""
while True:
    chunk = os.read(0, 65536)  # whatever the pipe holds: sizes vary with the writer's bursts
    if not chunk:
        break
    *lines, rest = (rest + chunk).split(b"\n")
    for line in (x.decode() for x in lines):
        kind = line.split()[0]
        if kind not in maps:  # each record type's table is loaded on first sight
            with open(os.path.join(base, "maps", f"{kind}.map")) as f:
                maps[kind] = f.read().split()
        counts[kind] = counts.get(kind, 0) + 1
with open(os.path.join(base, "out", "counts"), "w") as f:
    f.write(repr(sorted(counts.items())) + "\n")
'''


def pipe_reader(base: Path, bad: bool) -> None:
    write(base / "job.sh", PIPE_SH.format(b=base))
    write(base / "gen.py", GEN)
    write(base / "consume.py", CONSUME)
    (base / "maps").mkdir()
    (base / "out").mkdir()
    for kind in "ABCD":
        if not (bad and kind == "C"):  # the bad host's release lost one table
            write(base / "maps" / f"{kind}.map", f"{kind} table\n" * 10)


# --- timing: a watcher polling for a ready flag ----------------------------------------------
WATCH_JOB = _status_lines() + r'''
import os, subprocess, sys, time
base = sys.argv[1]
delay = open(os.path.join(base, "delay")).read().strip()
producer = subprocess.Popen([sys.executable, "-S", "-c",
    "import sys, time; time.sleep(float(sys.argv[2])); open(sys.argv[1], 'w').write('ready\\n')",
    os.path.join(base, "state", "ready"), delay])
for polls in range(1, 151):
    if os.path.exists(os.path.join(base, "state", "ready")):
        break
    if producer.poll() not in (None, 0):
        print("watcher: producer failed", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.02)
else:
    sys.exit(1)
producer.wait()
status(base, f"ready after {polls} polls")
'''


def watcher(base: Path, bad: bool) -> None:
    write(base / "job.py", WATCH_JOB)
    write(base / "delay", f"{random.uniform(0.0, 0.4):.3f}\n")
    if bad:  # an older release kept its state in a file called state
        write(base / "state", "old=1\n")
    else:
        (base / "state").mkdir()


# --- timing: forked workers reaped from a SIGCHLD handler ---------------------------------------
FORK_JOB = _status_lines() + r'''
import os, random, signal, sys, time
base = sys.argv[1]
done = {}

def reap(signum, frame):
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        done[pid] = os.waitstatus_to_exitcode(st)

signal.signal(signal.SIGCHLD, reap)
pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        time.sleep(random.random() / 8)  # each worker's time varies: SIGCHLD lands anywhere
        try:
            data = open(os.path.join(base, "in", f"part{i}.txt")).read()
            with open(os.path.join(base, "out", f"part{i}.sum"), "w") as f:
                f.write(f"{len(data.split())}\n")
        except OSError as e:
            print(f"worker {i}: {e}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    pids.append(pid)
deadline = time.monotonic() + 10
while len(done) < len(pids) and time.monotonic() < deadline:
    time.sleep(0.01)
status(base, "workers " + " ".join(f"{p}:{done.get(p)}" for p in pids))
sys.exit(1 if any(done.get(p) != 0 for p in pids) else 0)
'''


def forked_workers(base: Path, bad: bool) -> None:
    write(base / "job.py", FORK_JOB)
    (base / "in").mkdir()
    (base / "out").mkdir()
    rng = random.Random()
    for i in range(4):
        if not (bad and i == 2):  # the staging step skipped one part
            write(base / "in" / f"part{i}.txt", _data(rng, rng.randint(10, 500)))


# --- timing: a server accepting four clients in varying interleaving ----------------------------
ACCEPT_JOB = _status_lines() + r'''
import os, socket, subprocess, sys
base = sys.argv[1]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))  # the kernel's port, this run
srv.listen(8)
port = srv.getsockname()[1]
status(base, f"listening on {port}")
client = ("import os, random, socket, sys, time\n"
          "time.sleep(random.random() / 10)\n"
          "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
          "s.sendall(sys.argv[2].encode() + b'\\n' + os.urandom(2000).hex().encode())\n"
          "s.close()\n")
clients = [subprocess.Popen([sys.executable, "-S", "-c", client, str(port), f"c{i}"]) for i in range(4)]
failed = 0
for _ in range(4):  # whichever client connects first is served first
    conn, _ = srv.accept()
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    name, _, body = data.partition(b"\n")
    try:
        with open(os.path.join(base, "uploads", name.decode() + ".bin"), "wb") as f:
            f.write(body)
    except OSError as e:
        print(f"server: {e}", file=sys.stderr)
        failed += 1
for c in clients:
    c.wait()
sys.exit(1 if failed else 0)
'''


def accept_uploads(base: Path, bad: bool) -> None:
    write(base / "job.py", ACCEPT_JOB)
    (base / "uploads").mkdir()
    if bad:  # an unpacked upload of an earlier run left a directory at c2's name
        (base / "uploads" / "c2.bin").mkdir()


# --- good runs that differ from the two a diff is given ------------------------------------------
class _RunIndex:
    """The index of a scenario's run, for variation forced the same way in every recording: the
    harness sets up good runs 0, 1, 2 and then the bad run (index 3). Cases that show a
    variation the first two good runs lack give it to run 2 and to the bad run, so the third
    good run's diff against the first two says whether the variation alone is quiet, and the
    bad run's whether the fault is found amid it."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self, bad: bool) -> int:
        if bad:
            self.next = 0
            return 3
        run, self.next = self.next, self.next + 1
        return run


COLD_JOB = _status_lines() + r"""
import hashlib, os, sys
base = sys.argv[1]
entry = os.path.join(base, "cache", "features.bin")
if os.path.exists(entry):  # warm: read it; cold: compute, then fill the cache atomically
    with open(entry, "rb") as f:
        feats = f.read()
else:
    feats = hashlib.sha256(open(os.path.join(base, "params.txt"), "rb").read()).digest() * 512
    os.makedirs(os.path.dirname(entry), exist_ok=True)
    with open(entry + ".part", "wb") as f:
        f.write(feats)
    os.replace(entry + ".part", entry)
with open(os.path.join(base, "out", "model.sum"), "w") as f:
    f.write(hashlib.md5(feats).hexdigest() + "\n")
status(base, "done")
"""
_COLD_RUN = _RunIndex()


def _cold_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", COLD_JOB)
    write(base / "params.txt", "lr=0.1\nlayers=4\n")
    if not bad:  # the bad host's job directory lacks out/
        (base / "out").mkdir()
    if run < 2:  # warm for the first two good runs; cold for the third and the bad run
        (base / "cache").mkdir()
        write(base / "cache" / "features.bin", "f" * 16384)


def cache_cold_output_missing(base: Path, bad: bool) -> None:
    _cold_setup(base, _COLD_RUN(bad), bad)


EXISTS_JOB = _status_lines() + r"""
import os, sys
base = sys.argv[1]
os.makedirs(os.path.join(base, "spool", "today"), exist_ok=True)  # left by an earlier run, or not
conf = open(os.path.join(base, "conf", "job.conf")).read()
with open(os.path.join(base, "spool", "today", "job.out"), "w") as f:
    f.write(conf.upper())
status(os.path.join(base, "spool"), "done")
"""
_EXISTS_RUN = _RunIndex()


def _exists_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", EXISTS_JOB)
    (base / "conf").mkdir()
    write(base / "conf" / "job.conf", "threads=4\n", 0o600 if bad else 0o644)  # bad: root's copy
    (base / "spool").mkdir()
    _nobody(base / "spool")
    if run >= 2:  # an earlier run today made the directory: makedirs's mkdir fails EEXIST
        (base / "spool" / "today").mkdir()
        _nobody(base / "spool" / "today")


def lazy_dir_exists_conf_private(base: Path, bad: bool) -> None:
    _exists_setup(base, _EXISTS_RUN(bad), bad)


TIMER_JOB = _status_lines() + r"""
import os, signal, subprocess, sys, time
base = sys.argv[1]
ticks = 0

def tick(signum, frame):  # a progress heartbeat: interrupts whatever call is blocking
    global ticks
    ticks += 1

signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, 0.003, 0.003)
feeder = subprocess.Popen([sys.executable, "-S", "-c",
    "import random, sys, time\n"
    "for i in range(6):\n"
    "    time.sleep(random.random() / 40)\n"
    "    print(f'batch {i}', flush=True)\n"], stdout=subprocess.PIPE)
total = 0
for i, line in enumerate(feeder.stdout):  # blocking reads a tick may interrupt
    with open(os.path.join(base, "in", f"input{i}.dat")) as f:
        total += len(f.read())
    time.sleep(0.005)
feeder.wait()
signal.setitimer(signal.ITIMER_REAL, 0)
status(base, f"total={total} ticks={ticks}")
"""


def timer_ticks(base: Path, bad: bool) -> None:
    write(base / "job.py", TIMER_JOB)
    (base / "in").mkdir()
    rng = random.Random()
    for i in range(6):
        if not (bad and i == 3):  # one batch's input was never staged
            write(base / "in" / f"input{i}.dat", _data(rng, rng.randint(5, 400)))


REAP_JOB = _status_lines() + r"""
import os, signal, sys, time
base = sys.argv[1]
delay = float(open(os.path.join(base, "delay")).read())
reaped = []

def on_child(signum, frame):  # reaps whatever ended; the main line may have reaped it first
    try:
        while (pid := os.waitpid(-1, os.WNOHANG)[0]) > 0:
            reaped.append(pid)
    except ChildProcessError:
        pass

signal.signal(signal.SIGCHLD, on_child)
pid = os.fork()
if pid == 0:
    time.sleep(delay)
    with open(os.path.join(base, "part.txt"), "w") as f:
        f.write("rendered\n" * 100)
    os._exit(0)
time.sleep(0.05)
try:
    os.waitpid(pid, 0)  # the child may already be gone, reaped by the handler
except ChildProcessError:
    pass
os.rename(os.path.join(base, "part.txt"), os.path.join(base, "out", "final.txt"))
status(base, f"reaped by handler: {reaped}")
"""
_REAP_RUN = _RunIndex()


def _reap_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", REAP_JOB)
    # the child ends after the parent waits in the first two good runs, before it in the others
    write(base / "delay", "0.3\n" if run < 2 else "0\n")
    (base / "out").mkdir()
    if bad:  # a previous release unpacked final.txt/ as a directory
        (base / "out" / "final.txt").mkdir()


def child_exits_before_wait(base: Path, bad: bool) -> None:
    _reap_setup(base, _REAP_RUN(bad), bad)


ROTATE_JOB = r"""
import logging, logging.handlers, os, sys
base = sys.argv[1]
count = int(open(os.path.join(base, "messages")).read())
handler = logging.handlers.RotatingFileHandler(os.path.join(base, "logs", "app.log"), maxBytes=4096, backupCount=3)
log = logging.getLogger("job")
log.addHandler(handler)
log.setLevel(logging.INFO)
for i in range(count):
    log.info("step %04d of %04d: processed shard with checksum %08x", i, count, (i * 2654435761) & 0xffffffff)
with open(os.path.join(base, "out", "summary.txt"), "x") as f:  # never over an earlier summary
    f.write(f"{count}\n")
"""
_ROTATE_RUN = _RunIndex()


def _rotate_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", ROTATE_JOB)
    (base / "logs").mkdir()
    (base / "out").mkdir()
    write(base / "messages", "30\n" if run < 2 else "150\n")  # the log rotates in runs 2 and 3 only
    if bad:  # the summary of a run that was thought to have failed was left behind
        write(base / "out" / "summary.txt", "120\n")


def rotation_then_summary_exists(base: Path, bad: bool) -> None:
    _rotate_setup(base, _ROTATE_RUN(bad), bad)


NB_JOB = _status_lines() + r"""
import os, subprocess, sys, time
base = sys.argv[1]
wait, delay = open(os.path.join(base, "timing")).read().split()
r, w = os.pipe()
child = subprocess.Popen([sys.executable, "-S", "-c",
    "import os, sys, time; time.sleep(float(sys.argv[2])); os.write(int(sys.argv[1]), b'shard_b.idx\\n')",
    str(w), delay], pass_fds=(w,))
os.close(w)
os.set_blocking(r, False)
time.sleep(float(wait))
name = b""
while not name.endswith(b"\n"):
    try:
        name += os.read(r, 100)  # EAGAIN until the planner has written, however many times
    except BlockingIOError:
        time.sleep(0.01)
child.wait()
with open(os.path.join(base, "index", name.decode().strip())) as f:
    entries = f.read().split()
status(base, f"{len(entries)} entries")
"""
_NB_RUN = _RunIndex()


def _nb_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", NB_JOB)
    # the planner has answered before the first read in the first two good runs; later in others
    write(base / "timing", "0.3 0\n" if run < 2 else "0 0.15\n")
    (base / "index").mkdir()
    if not bad:  # the bad host's index lacks the shard the planner names
        write(base / "index" / "shard_b.idx", "e1 e2 e3\n")


def nonblocking_read_index_missing(base: Path, bad: bool) -> None:
    _nb_setup(base, _NB_RUN(bad), bad)


# --- written after the three mechanisms, on programs they were not shaped on --------------------------
TIMED_JOB = r"""
import logging, logging.handlers, os, sys, time
base = sys.argv[1]
pause = float(open(os.path.join(base, "pause")).read())
handler = logging.handlers.TimedRotatingFileHandler(os.path.join(base, "logs", "job.log"), when="S", interval=1)
log = logging.getLogger("job")
log.addHandler(handler)
log.setLevel(logging.INFO)
for i in range(20):
    log.info("batch %02d done", i)
    if i == 10:
        time.sleep(pause)  # a slow batch: the log's second is over and it rotates at the next record
with open(os.path.join(base, "results", "batches.txt"), "w") as f:
    f.write("20\n")
"""
_TIMED_RUN = _RunIndex()


def _timed_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", TIMED_JOB)
    (base / "logs").mkdir()
    write(base / "pause", "0\n" if run < 2 else "1.3\n")  # rotates on time in runs 2 and 3 only
    if bad:  # a packaging step left results as a file, not a directory
        write(base / "results", "old\n")
    else:
        (base / "results").mkdir()


def timed_rotation_results_not_dir(base: Path, bad: bool) -> None:
    _timed_setup(base, _TIMED_RUN(bad), bad)


POPEN_JOB = _status_lines() + r"""
import os, signal, subprocess, sys, time
base = sys.argv[1]
child_s, parent_s = open(os.path.join(base, "timing")).read().split()
reaped = []

def on_child(signum, frame):  # a supervisor's reaper for helpers it does not track
    try:
        while (pid := os.waitpid(-1, os.WNOHANG)[0]) > 0:
            reaped.append(pid)
    except ChildProcessError:
        pass

signal.signal(signal.SIGCHLD, on_child)
helper = subprocess.Popen(["/bin/sleep", child_s])
time.sleep(float(parent_s))
helper.wait()  # subprocess takes ECHILD for status 0 when the handler reaped it first
os.link(os.path.join(base, "build", "app.bin"), os.path.join(base, "release", "app.bin"))
status(base, f"reaped by handler: {reaped}")
"""
_POPEN_RUN = _RunIndex()


def _popen_setup(base: Path, run: int, bad: bool) -> None:
    write(base / "job.py", POPEN_JOB)
    # the helper outlives the parent's pause in the first two good runs, not in the others
    write(base / "timing", "0.3 0\n" if run < 2 else "0 0.2\n")
    (base / "build").mkdir()
    write(base / "build" / "app.bin", "ELF" * 100)
    (base / "release").mkdir()
    if bad:  # the previous release's binary was never removed
        write(base / "release" / "app.bin", "old")


def popen_reaped_link_exists(base: Path, bad: bool) -> None:
    _popen_setup(base, _POPEN_RUN(bad), bad)


REAL_TWENTYSECOND: list[Scenario] = [
    Scenario("nd_set_order_shard_missing", "python3 job.py (a set of shards)", _py("job.py"), set_of_shards,
             OPEN, "ENOENT", lambda b: f"{b}/in/shard_07.dat",
             description="a job opening shards from a set (hash order varies per run) when one shard is missing"),
    Scenario("nd_dict_order_chmod_foreign_file", "python3 job.py (chmod in hash order, as the job)",
             _py("job.py"), dict_of_modes, frozenset({"chmod", "fchmodat", "fchmodat2"}), "EPERM",
             lambda b: f"{b}/pub/index_3.html", unprivileged=True,
             description="modes set on published files in hash order; one file belongs to root"),
    Scenario("nd_tmpfs_inbox_order_unreadable_report", "python3 job.py (tmpfs inbox, as the job)",
             _py("job.py"), inbox_tmpfs, OPEN, "EACCES", lambda b: f"{b}/inbox/report_04.csv",
             unprivileged=True, teardown=_umount_inbox,
             description="an inbox listed newest first (tmpfs) in delivery order; one report private to root"),
    Scenario("nd_pool_third_backend_refused", "python3 job.py (thread pool, 5 backends on port 0)",
             _py("job.py"), pool_backends, frozenset({"connect"}), "ECONNREFUSED", lambda b: "inet:127.0.0.1:*",
             description="five pool workers on kernel-assigned ports, completion order varying; the third "
                         "backend is down"),
    Scenario("nd_xargs_p3_b2sum_dangling_alias", "b2sum (find | xargs -P 3 -n 2)", _sh("job.sh"),
             xargs_digests, OPEN, "ENOENT", lambda b: f"{b}/in/blob5.alias",
             description="xargs -P 3 b2sum over inputs of varying size; one alias dangles"),
    Scenario("nd_make_j3_output_is_directory", "make -j 3 (recipes of varying length)", _make,
             make_parallel, OPEN, "EISDIR", lambda b: f"{b}/out/d.out",
             description="make -j 3 of six recipes whose durations vary; one output path is a directory"),
    Scenario("nd_xz_t2_spool_unwritable", "xz -k -T2 (as the job)", _xz, xz_threads, OPEN, "EACCES",
             lambda b: f"{b}/in/data.log.xz", unprivileged=True,
             description="xz -T2 over an input of varying size; the spool directory is root's"),
    Scenario("nd_lock_retry_eagain_never_ends", "python3 job.py (flock LOCK_NB retries)", _py("job.py"),
             lock_retries, frozenset({"flock"}), "EAGAIN", lambda b: f"{b}/job.lock", teardown=_stop_holder,
             description="a lock retried while another holder keeps it 0-300 ms; a stale holder never lets go"),
    Scenario("nd_log_rotation_backup_is_directory", "python3 job.py (RotatingFileHandler)", _py("job.py"),
             log_rotation, frozenset({"unlink", "unlinkat"}), "EISDIR", lambda b: f"{b}/logs/app.log.1",
             description="a size-rotated log (0-2 rotations in good runs); a directory at the backup's name"),
    Scenario("nd_cache_warm_entry_foreign", "python3 job.py (lazy cache, as the job)", _py("job.py"),
             cache_warm_or_cold, OPEN, "EACCES", lambda b: f"{b}/work/cache/model.bin", unprivileged=True,
             description="a cache warm in some runs, cold in others; the warm entry is private to root"),
    Scenario("nd_pipe_reader_table_missing", "python3 consume.py (pipe reads of varying size)", _sh("job.sh"),
             pipe_reader, OPEN, "ENOENT", lambda b: f"{b}/maps/C.map",
             description="a pipe reader loading one table per record type on first sight; one table missing"),
    Scenario("nd_watcher_state_is_file", "python3 job.py (watcher polling a ready flag)", _py("job.py"),
             watcher, frozenset({"openat", "open", "newfstatat", "stat", "statx", "fstatat"}), "ENOTDIR",
             lambda b: f"{b}/state/ready",
             description="a watcher polling 1-20 times for a producer's flag; state is a file"),
    Scenario("nd_sigchld_worker_input_missing", "python3 job.py (forked workers, SIGCHLD reaper)",
             _py("job.py"), forked_workers, OPEN, "ENOENT", lambda b: f"{b}/in/part2.txt",
             description="forked workers reaped from a SIGCHLD handler at varying points; one input missing"),
    Scenario("nd_accept_order_upload_is_directory", "python3 job.py (server on port 0, 4 clients)",
             _py("job.py"), accept_uploads, OPEN, "EISDIR", lambda b: f"{b}/uploads/c2.bin",
             description="a server on a kernel-assigned port serving four clients in varying order; one "
                         "upload's target is a directory"),
    # good runs 2 and 3 (the bad run) differ from the first two in a way the fault has nothing to do with
    Scenario("nd_cache_cold_then_output_dir_missing", "python3 job.py (cache warm, then cold)", _py("job.py"),
             cache_cold_output_missing, OPEN, "ENOENT", lambda b: f"{b}/out/model.sum",
             description="a cache warm in the good runs the diff is given, cold in the bad run (a stat miss, "
                         "a fill); the output directory is missing"),
    Scenario("nd_lazy_dir_exists_conf_private", "python3 job.py (makedirs exist_ok, as the job)", _py("job.py"),
             lazy_dir_exists_conf_private, OPEN, "EACCES", lambda b: f"{b}/conf/job.conf", unprivileged=True,
             description="a lazily made directory an earlier run left (mkdir EEXIST) before a config "
                         "private to root"),
    Scenario("nd_itimer_ticks_input_missing", "python3 job.py (SIGALRM heartbeat every 3 ms)", _py("job.py"),
             timer_ticks, OPEN, "ENOENT", lambda b: f"{b}/in/input3.dat",
             description="a heartbeat timer interrupting blocking calls at varying points; one batch's "
                         "input missing"),
    Scenario("nd_child_reaped_first_rename_onto_dir", "python3 job.py (fork, SIGCHLD reaper, waitpid)",
             _py("job.py"), child_exits_before_wait, frozenset({"rename", "renameat", "renameat2"}), "EISDIR",
             lambda b: f"{b}/out/final.txt",
             description="a child that exits before the parent waits (ECHILD in the main line, not the "
                         "handler); the result's final name is a directory"),
    Scenario("nd_log_rotated_then_summary_exists", "python3 job.py (RotatingFileHandler, then open 'x')",
             _py("job.py"), rotation_then_summary_exists, OPEN, "EEXIST", lambda b: f"{b}/out/summary.txt",
             description="a log that rotates only in the bad run; its exclusive summary already exists"),
    Scenario("nd_nonblocking_read_eagain_index_missing", "python3 job.py (nonblocking pipe read)",
             _py("job.py"), nonblocking_read_index_missing, OPEN, "ENOENT", lambda b: f"{b}/index/shard_b.idx",
             description="a nonblocking read that finds its answer at once or after EAGAINs; the index it "
                         "names is missing"),
    # written after the mechanisms (_rotations, _reaped_by_own_reaper), on programs they were not shaped on
    Scenario("nd_timed_rotation_results_is_file", "python3 job.py (TimedRotatingFileHandler, each second)",
             _py("job.py"), timed_rotation_results_not_dir, OPEN, "ENOTDIR", lambda b: f"{b}/results/batches.txt",
             description="a log rotating on time in the bad run only; results is a file"),
    Scenario("nd_popen_wait_after_handler_reaped", "python3 job.py (Popen.wait after a SIGCHLD reaper)",
             _py("job.py"), popen_reaped_link_exists, frozenset({"link", "linkat"}), "EEXIST",
             lambda b: f"{b}/release/app.bin",
             description="subprocess's wait finding its helper reaped by the job's handler; the release "
                         "link already exists"),
]


# --- good-vs-good noise: the programs' good runs alone ------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001 - the variation is the program's own
        setup(base, False)
    return noise


def _inbox_on_base(base: Path, run: int) -> None:  # noqa: ARG001
    """The inbox case's good runs with the tmpfs at the case's root (fresh_dir unmounts it)."""
    mount_tmpfs(base, "16m")
    base.chmod(0o755)
    inbox_tmpfs_root(base)


def inbox_tmpfs_root(base: Path) -> None:
    write(base / "job.py", INBOX_JOB)
    (base / "out").mkdir()
    (base / "inbox").mkdir()
    rng = random.Random()
    names = REPORTS[:]
    rng.shuffle(names)
    for name in names:
        write(base / "inbox" / name, _data(rng, rng.randint(5, 50)))


def _lock_noise(base: Path, run: int) -> None:  # noqa: ARG001
    write(base / "job.py", LOCK_JOB)
    write(base / "input.txt", "payload\n" * 20)
    (base / "out").mkdir()
    HOLDER.start(base / "job.lock", (0, 0.15, 0.3)[run % 3])


QUIET_TWENTYSECOND: list[NoAnomalyCase] = [
    NoAnomalyCase("nd_set_iteration_hash_order", _py("job.py"), _good(set_of_shards),
                  description="twelve shards opened from a set: hash order differs every run"),
    NoAnomalyCase("nd_tmpfs_listing_creation_order", _py("job.py"), _inbox_on_base,
                  description="an inbox on tmpfs listed newest first, filled in a random order"),
    NoAnomalyCase("nd_pool_completion_order_port0", _py("job.py"), _good(pool_backends),
                  description="a thread pool's five answers in completion order from kernel-assigned ports"),
    NoAnomalyCase("nd_xargs_p3_completion_order", _sh("job.sh"), _good(xargs_digests),
                  description="xargs -P 3 b2sum over inputs of varying size"),
    NoAnomalyCase("nd_make_j3_interleaving", _make, _good(make_parallel),
                  description="make -j 3 of six recipes of varying length"),
    NoAnomalyCase("nd_lock_retry_count_varies", _py("job.py"), _lock_noise,
                  description="a lock freed after 0, 150 or 300 ms: 0 to 7 EAGAIN retries"),
    NoAnomalyCase("nd_log_rotates_zero_one_or_two_times", _py("job.py"), _good(log_rotation),
                  description="a size-rotated log rotating 0, 1 or 2 times"),
    NoAnomalyCase("nd_pipe_read_sizes_vary", _sh("job.sh"), _good(pipe_reader),
                  description="a pipe reader reading bursts of varying size"),
    NoAnomalyCase("nd_watcher_poll_count_varies", _py("job.py"), _good(watcher),
                  description="a watcher polling 1 to 20 times for a ready flag"),
    NoAnomalyCase("nd_sigchld_lands_anywhere", _py("job.py"), _good(forked_workers),
                  description="four forked workers reaped from a SIGCHLD handler at varying points"),
    NoAnomalyCase("nd_cache_warm_twice_then_cold", _py("job.py"), lambda b, run: _cold_setup(b, run, False),
                  description="a cache warm in two runs, cold in the third (stat miss, makedirs, fill)"),
    NoAnomalyCase("nd_itimer_interrupts_vary", _py("job.py"), _good(timer_ticks),
                  description="a 3 ms SIGALRM heartbeat interrupting different calls each run"),
    NoAnomalyCase("nd_child_reaped_by_handler_or_main", _py("job.py"), lambda b, run: _reap_setup(b, run, False),
                  description="a child reaped by waitpid in two runs, by the SIGCHLD handler in the third"),
    NoAnomalyCase("nd_log_rotates_in_the_third_run_only", _py("job.py"), lambda b, run: _rotate_setup(b, run, False),
                  description="a size-rotated log rotating twice in the third run, never in the first two"),
    NoAnomalyCase("nd_log_rotates_on_time_in_the_third_run", _py("job.py"), lambda b, run: _timed_setup(b, run, False),
                  description="a TimedRotatingFileHandler rotating in the third run only (a slow batch)"),
    NoAnomalyCase("nd_popen_helper_reaped_by_handler", _py("job.py"), lambda b, run: _popen_setup(b, run, False),
                  description="Popen.wait reaping its helper in two runs, finding it reaped by the handler in one"),
    NoAnomalyCase("nd_nonblocking_read_ready_or_eagain", _py("job.py"), lambda b, run: _nb_setup(b, run, False),
                  description="a nonblocking pipe read ready at once in two runs, after EAGAINs in the third"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the lock holder goes with its case's teardown (stopped again
    here in case that case was interrupted, and after the noise case that starts it)."""
    HOLDER.stop()


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
