"""A seventieth set of real programs: **more than one thing goes wrong, or the same thing again and
again** -- bad runs that differ from the good ones in several places (two independent faults, a
cascade, one fault in two parallel workers, a failing call retried fifty times, a stale marker whose
first sign is a success where the good runs failed) and good runs that each carry their own
transient errors at different places and in different numbers, which must stay quiet.

What docs/diff-json.md promises for several differences: ``anomalies`` lists every anomaly ranked
(the bifurcation, the top-ranked, first), ``first_unexplained`` is the ``seq`` of the chronologically
first anomalous event; the rank is an outcome change at a call site the good runs share (+3.5), then
hard over soft errors over error-free divergences, +1.5 for a region the thread never recovers from,
ties to the earliest; inside one region the outcome change names it; the failed attempts of a retry
loop (soft errors or ECONNREFUSED at a call site the thread then gets past, within 16 events, a sleep
between) are noise; a success where every good run failed softly is a reordering only when nothing
else in the run is anomalous ("not a stale done-marker making a job skip its work").

Fault cases (``REAL_SEVENTIETH``): three good runs and the bad run; ``extra`` holds what the case
checks beyond the bifurcation (``also``: (probe, errno, path glob) that must be among the anomalies;
``first``: the same for the event ``first_unexplained`` must point at; ``once``: (probe, errno) that
at most one anomaly may name; ``recorded``: a (probe, errno, path glob) the bad recording must hold).
What ``strace -f`` shows each bad run doing (coreutils 9.1, dash 0.5.12, python 3.11, Linux 6.x):

- a nightly report script (sh, run as nobody): ``cat BASE/etc/app.conf`` -> ``openat(AT_FDCWD,
  ".../etc/app.conf", O_RDONLY) = -1 ENOENT``, cat exits 1, the script writes "warning: ... using
  defaults" and goes on; sort writes tmp/sorted.txt; cp's ``openat(.., ".../out/report.txt",
  O_RDONLY|O_PATH|O_DIRECTORY) = -1 ENOENT`` (the good runs' too), then ``openat(.., ".../out/report.txt",
  O_WRONLY|O_CREAT|O_EXCL) = -1 EACCES`` (out/ is root's, 0755), cp's message, exit 1. Per the ranking
  the bifurcation is cp's EACCES (hard, an outcome change: 4 + 3.5 at least) and cat's ENOENT (soft, an
  outcome change, the script went on: 5.5) is listed too, at ``first_unexplained``;
- python3 collecting three inputs: ``openat(.., ".../etc/extra.conf") = -1 ENOENT`` (optional: a warning
  on stderr, goes on), in/part1.csv read (openat, fstat, ioctl ENOTTY, lseek, read, read, close, as in
  every good run), ``openat(.., ".../in/part2.csv") = -1 ENOENT`` (skipped with a warning), part3 read,
  the summary written, exit 0 -- two soft outcome changes the thread gets past, the same score: the
  earliest (extra.conf) is the bifurcation and part2.csv is listed;
- python3 connecting to its service 50 times: ``connect(3, 127.0.0.1:PORT) = -1 ECONNREFUSED``, close,
  ``clock_nanosleep`` 10 ms, again, 50 times, then "gave up", exit 1 (good runs: connect = 0 at once,
  a line sent, the reply read): one fault, named once;
- a job script (sh) with a done-marker: dash's ``[ -e state/done ]`` is ``newfstatat(AT_FDCWD,
  ".../state/done", ..) = 0`` where every good run's was ``-1 ENOENT``, then "already done, skipping"
  and exit 0 -- no sort, no uniq, no touch: the first sign of the fault is a success;
- two parallel workers (sh, run as nobody: ``sort -o out/a.txt in/a.txt & sort -o out/b.txt in/b.txt
  & wait``): each sort reads its input, then ``openat(.., ".../out/X.txt", O_WRONLY|O_CREAT) = -1
  EACCES``, "sort: open failed: ...: Permission denied" (b's first in some runs), exit 2 in both
  workers: the bifurcation one of them, both listed;
- a cascade (python3, run as nobody): ``openat(.., ".../cache/index.json") = -1 ENOENT`` (the cache
  is gone), the program rebuilds it -- getdents64 of src/, the three sources read -- and ``openat(..,
  ".../cache/index.json.tmp", O_WRONLY|O_CREAT|O_TRUNC) = -1 EACCES`` (cache/ is root's), PermissionError,
  exit 1: the first failure is named (the region's outcome change; the EACCES is at a path no good run
  opened), and ``first_unexplained`` is its seq;
- an ``until mkdir queue/incoming/job`` loop in sh whose parent never appears: 20 mkdir processes, each
  ``mkdir(...) = -1 ENOENT``, a ``sleep 0.01`` process after each but the last, "no queue after 20
  attempts", exit 1 (good runs: one mkdir = 0): one fault, named once.

Noise cases (``QUIET_SEVENTIETH``): five good runs each, every run diffed against the other four;
same output and exit status every run. Each waits on a helper started by the setup outside the
recording (``TRIGGER_PY``): it waits for the run's ``started`` stamp (written by the recorded job
first thing), sleeps the run's delay and then does its part (listens, creates a file or a
directory), so the number of failed attempts depends on the delay and on the machine's timing.
What ``strace -f`` showed varying (5 runs alone, 5 beside two busy loops):

- socat with ``retry=200,interval=0.02`` connecting to a service that listens late:
  ``connect = -1 ECONNREFUSED``, nanosleep 20 ms, a new socket, again -- 0 to 8 refused attempts
  (0, 4, 3, 8, 1 alone; 0, 5, 2, 5, 1 loaded), then the line and the reply;
- python3 connecting to three services in turn, one of which (another one each run) listens late:
  7 or 8 refused connects, 20 ms apart, at port A, B or C, then the three replies;
- two ``mkdir -p out/2026/12/07`` racing (coreutils: mkdir of each component, chdir into it): which
  process creates which of out, 2026, 12, 07 varies (mostly the second-forked creates all four and the
  first meets ``mkdir = -1 EEXIST`` at each; in 2 of 10 runs they split the levels);
- python3 polling for a ready file: ``newfstatat(.., "ready") = -1 ENOENT`` 1 to 6 times, with
  ``clock_nanosleep`` 20 ms between, then the file read;
- an ``until mkdir spool/job`` loop in sh (dash): 1 to 3 mkdir processes failing ENOENT (the spool
  not there yet), a ``sleep 0.05`` process after each, then the one that succeeds;
- ``xargs -P 2 -n 2 md5sum`` over eight names two of which are missing: each md5sum's
  ``openat = -1 ENOENT`` for its missing name (gone1 in the second batch, gone2 in the fourth), the
  two workers' opens interleaving differently run to run (batches 1-2 then 3-4, or 3 and 4 overlapping,
  or the third batch's process finishing after the fourth's) -- xargs exits 123 every run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, Scenario, _port_block, sh_argv

OPENS = frozenset({"openat", "open", "creat"})
STATS = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64", "access", "faccessat", "faccessat2"})

SVC_PORT, SOCAT_PORT, PORT_A, PORT_B, PORT_C = _port_block(5)
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
RUNS = 5  # noise cases: each run against the other four

_PROCS: list[subprocess.Popen] = []


def stop_helpers(_base: Path | None = None) -> None:
    """Stop every helper a setup started, each by its own process group."""
    while _PROCS:
        proc = _PROCS.pop()
        with contextlib.suppress(Exception):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(Exception):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _spawn(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV, start_new_session=True)
    _PROCS.append(proc)
    return proc


# A helper outside the recording: `serve PORT...` answers each line with "ok <line>" on every port at once;
# `after STAMP DELAY serve LATE PORT...` listens on LATE only DELAY s after STAMP appears (the others at
# once); `after STAMP DELAY mkdir|ready PATH` creates a directory / a file (via a rename) then.
TRIGGER_PY = r"""
import os, socket, sys, threading, time
args = sys.argv[1:]
stamp = delay = None
if args[0] == "after":
    stamp, delay, args = args[1], float(args[2]), args[3:]
def wait_stamp():
    deadline = time.monotonic() + 60
    while not os.path.exists(stamp) and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
def serve(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        f = c.makefile("rwb")
        line = f.readline()
        f.write(b"ok " + line)
        f.flush()
        f.close()
        c.close()
if args[0] == "serve":
    ports = [int(p) for p in args[1:]]
    late = ports[0] if stamp else None
    for p in dict.fromkeys(ports[1:] if stamp else ports):
        if p != late:
            threading.Thread(target=serve, args=(p,), daemon=True).start()
    if stamp:
        wait_stamp()
        threading.Thread(target=serve, args=(late,), daemon=True).start()
    threading.Event().wait()
elif args[0] == "mkdir":
    wait_stamp()
    os.mkdir(args[1])
elif args[0] == "ready":
    wait_stamp()
    open(args[1] + ".tmp", "w").write("go\n")
    os.rename(args[1] + ".tmp", args[1])
"""


def _helper(*args: str) -> subprocess.Popen:
    return _spawn(["/usr/bin/python3", "-S", "-c", TRIGGER_PY, *args])


def _ready_port(proc: subprocess.Popen, port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the t70 helper exited {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ping\n")
            s.recv(64)
            return
        time.sleep(0.02)
    raise RuntimeError(f"the t70 helper not listening on {port} in 30 s")


# --- fault cases -------------------------------------------------------------------------------------------------------
TWO_FAULTS_SH = (
    'if ! cat "$1/etc/app.conf" > "$1/tmp/conf.txt" 2>/dev/null; then '
    'echo "warning: etc/app.conf missing, using defaults" >&2; fi; '
    'sort "$1/in/data.txt" > "$1/tmp/sorted.txt" && cp "$1/tmp/sorted.txt" "$1/out/report.txt" && echo report written')

TWO_SOFT_PY = r"""
import os, sys
b = sys.argv[1]
opts = {}
try:
    with open(b + "/etc/extra.conf") as f:
        opts = dict(line.strip().split("=", 1) for line in f if "=" in line)
except FileNotFoundError:
    print("warning: etc/extra.conf missing, no extras", file=sys.stderr)
rows = []
for part in ("in/part1.csv", "in/part2.csv", "in/part3.csv"):
    try:
        with open(f"{b}/{part}") as f:
            rows += [line.split(",") for line in f if line.strip()]
    except FileNotFoundError:
        print(f"warning: {part} missing, skipped", file=sys.stderr)
with open(b + "/out/summary.txt", "w") as f:
    f.write("%d rows %d extras\n" % (len(rows), len(opts)))
"""

RETRY_PY = r"""
import socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
for attempt in range(50):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        break
    except ConnectionRefusedError:
        s.close()
        time.sleep(0.01)
else:
    sys.exit("gave up after 50 attempts: connection refused")
s.sendall(b"report\n")
reply = s.makefile("rb").readline()
s.close()
open(out, "wb").write(reply)
"""

DONE_MARKER_SH = (
    'if [ -e "$1/state/done" ]; then echo "already done, skipping" >&2; exit 0; fi; '
    'sort "$1/in/words.txt" | uniq -c > "$1/out/counts.txt" && touch "$1/state/done"')

PARALLEL_SH = (
    'sort -o "$1/out/a.txt" "$1/in/a.txt" & a=$!; sort -o "$1/out/b.txt" "$1/in/b.txt" & b=$!; '
    'wait $a; sa=$?; wait $b; sb=$?; [ $sa -eq 0 ] && [ $sb -eq 0 ]')

CASCADE_PY = r"""
import json, os, sys
b = sys.argv[1]
try:
    with open(b + "/cache/index.json") as f:
        index = json.load(f)
except FileNotFoundError:
    index = {}
    for name in sorted(os.listdir(b + "/src")):
        with open(f"{b}/src/{name}") as f:
            index[name] = len(f.read().split())
    with open(b + "/cache/index.json.tmp", "w") as f:
        json.dump(index, f)
    os.replace(b + "/cache/index.json.tmp", b + "/cache/index.json")
with open(b + "/out/words.txt", "w") as f:
    f.write("".join("%s %d\n" % kv for kv in sorted(index.items())))
"""

UNTIL_GIVE_UP_SH = ('n=0; until mkdir "$1/queue/incoming/job" 2>/dev/null; do n=$((n + 1)); '
                    '[ $n -ge 20 ] && { echo "no queue after $n attempts" >&2; exit 1; }; sleep 0.01; done; '
                    'echo queued > "$1/queue/incoming/job/state"')

WORDS = "".join(f"{w}\n" for w in ["delta", "alpha", "charlie", "alpha", "bravo", "delta", "alpha", "echo"])


def _two_faults_setup(base: Path, bad: bool) -> None:
    if not bad:
        write_file(base / "etc" / "app.conf", "mode=full\n")
    write_file(base / "in" / "data.txt", WORDS)
    for d in ("tmp", "out"):
        (base / d).mkdir(exist_ok=True)
    (base / "tmp").chmod(0o777)
    (base / "out").chmod(0o755 if bad else 0o777)


def _two_soft_setup(base: Path, bad: bool) -> None:
    if not bad:
        write_file(base / "etc" / "extra.conf", "colour=no\nwidth=80\n")
    for i in (1, 2, 3):
        if not (bad and i == 2):
            write_file(base / "in" / f"part{i}.csv", "".join(f"{i},{k},{k * i}\n" for k in range(20)))
    (base / "out").mkdir()


def _retry_setup(base: Path, bad: bool) -> None:
    stop_helpers()
    if not bad:
        _ready_port(_helper("serve", str(SVC_PORT)), SVC_PORT)


def _done_setup(base: Path, bad: bool) -> None:
    write_file(base / "in" / "words.txt", WORDS)
    (base / "out").mkdir()
    (base / "state").mkdir()
    if bad:
        write_file(base / "state" / "done", "")


def _parallel_setup(base: Path, bad: bool) -> None:
    write_file(base / "in" / "a.txt", WORDS)
    write_file(base / "in" / "b.txt", WORDS[::-1].strip() + "\n")
    (base / "out").mkdir()
    (base / "out").chmod(0o755 if bad else 0o777)


def _cascade_setup(base: Path, bad: bool) -> None:
    for i, text in enumerate(("one two three", "four five", "six")):
        write_file(base / "src" / f"doc{i}.txt", text + "\n")
    (base / "cache").mkdir()
    if not bad:
        write_file(base / "cache" / "index.json", '{"doc0.txt": 3, "doc1.txt": 2, "doc2.txt": 1}')
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _give_up_setup(base: Path, bad: bool) -> None:
    (base / "queue").mkdir()
    if not bad:
        (base / "queue" / "incoming").mkdir()


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=stop_helpers,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTIETH: list[Scenario] = [
    _sc("t70_sh_missing_config_then_readonly_output", "sh (report script: cat, sort, cp; as nobody)",
        sh_argv(TWO_FAULTS_SH), _two_faults_setup, OPENS, "EACCES", lambda b: f"{b}/out/report.txt",
        unprivileged=True,
        also=[("openat", "ENOENT", "*/etc/app.conf")], first=("openat", "ENOENT", "*/etc/app.conf"),
        description="cat's config ENOENT (warning, goes on), later cp's EACCES on out/: the hard one first"),
    _sc("t70_python_two_optional_inputs_missing", "python3 (collect three inputs)",
        lambda b: [*PY, "-c", TWO_SOFT_PY, str(b)], _two_soft_setup, OPENS, "ENOENT",
        lambda b: f"{b}/etc/extra.conf",
        also=[("openat", "ENOENT", "*/in/part2.csv")], first=("openat", "ENOENT", "*/etc/extra.conf"),
        description="two soft outcome changes the thread gets past: the earliest is the bifurcation"),
    _sc("t70_python_connect_refused_fifty_times", "python3 (connect, retried 50 times)",
        lambda b: [*PY, "-c", RETRY_PY, str(SVC_PORT), f"{b}/reply"], _retry_setup,
        frozenset({"connect"}), "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{SVC_PORT}",
        once=("connect", "ECONNREFUSED"),
        description="the service is down: 50 refused connects, one fault named once"),
    _sc("t70_sh_stale_done_marker_skips_the_job", "sh (job script with a done-marker)",
        sh_argv(DONE_MARKER_SH), _done_setup, STATS, None, lambda b: f"{b}/state/done",
        description="the marker's stat succeeds where every good run's failed ENOENT: the job skips its work"),
    _sc("t70_sh_two_parallel_sorts_both_refused", "sh (two sort -o workers in parallel; as nobody)",
        sh_argv(PARALLEL_SH), _parallel_setup, OPENS, "EACCES", lambda b: f"{b}/out/[ab].txt",
        unprivileged=True,
        also=[("openat", "EACCES", "*/out/a.txt"), ("openat", "EACCES", "*/out/b.txt")],
        description="both workers' output open refused: one named, both listed"),
    _sc("t70_python_cache_missing_then_rebuild_refused", "python3 (index cache; as nobody)",
        lambda b: [*PY, "-c", CASCADE_PY, str(b)], _cascade_setup, OPENS, "ENOENT",
        lambda b: f"{b}/cache/index.json", unprivileged=True,
        recorded=("openat", "EACCES", "*/cache/index.json.tmp"), first=("openat", "ENOENT", "*/cache/index.json"),
        description="the cache is gone (ENOENT), its rebuild refused (EACCES): the first failure named"),
    _sc("t70_sh_until_mkdir_parent_never_appears", "sh (until mkdir loop, 20 attempts)",
        sh_argv(UNTIL_GIVE_UP_SH), _give_up_setup, frozenset({"mkdir", "mkdirat"}), "ENOENT",
        lambda b: f"{b}/queue/incoming/job", once=("mkdir", "ENOENT"),
        description="the queue's parent is missing: 20 mkdir processes fail ENOENT, a sleep after each"),
]


# --- good runs with their own transient errors -------------------------------------------------------------------------
SOCAT_SH = (f': > "$1/started"; echo report | socat -t 5 - TCP:127.0.0.1:{SOCAT_PORT},retry=200,interval=0.02 '
            '> "$1/reply"')

THREE_PY = r"""
import socket, sys, time
out = sys.argv[1]
open(out + ".started", "w").close()
replies = []
for port in sys.argv[2:]:
    deadline = time.monotonic() + 30
    while True:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", int(port)))
            break
        except ConnectionRefusedError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    s.sendall(b"part\n")
    replies.append(s.makefile("rb").readline())
    s.close()
open(out, "wb").write(b"".join(replies))
"""

MKDIR_RACE_SH = ('mkdir -p "$1/out/2026/12/07" & mkdir -p "$1/out/2026/12/07" & wait; '
                 'echo ok > "$1/out/2026/12/07/stamp"')

POLL_PY = r"""
import os, sys, time
base = sys.argv[1]
open(os.path.join(base, "started"), "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(os.path.join(base, "ready")):
    if time.monotonic() > deadline:
        sys.exit("ready never appeared")
    time.sleep(0.02)
with open(os.path.join(base, "ready")) as f:
    open(os.path.join(base, "out"), "w").write(f.read())
"""

UNTIL_MKDIR_SH = (': > "$1/started"; n=0; until mkdir "$1/spool/job" 2>/dev/null; do n=$((n + 1)); '
                  '[ $n -gt 400 ] && exit 1; sleep 0.05; done; echo queued > "$1/spool/job/state"')

XARGS_SH = ('printf "$1/data/%s\\n" f1 f2 gone1 f3 f4 f5 gone2 f6 '
            '| xargs -P 2 -n 2 md5sum > "$1/sums" 2> /dev/null; echo "xargs $?" >> "$1/sums"')

# a noise case -> each run's delay (s) of its helper after the run's stamp
DELAYS: dict[str, list[float]] = {
    "t70_socat_retries_until_the_service_listens": [0.0, 0.1, 0.05, 0.15, 0.02],
    "t70_python_one_late_service_per_run": [0.15, 0.15, 0.15, 0.15, 0.15],
    "t70_python_polls_until_a_file_appears": [0.01, 0.08, 0.03, 0.1, 0.05],
    "t70_sh_until_mkdir_waits_for_the_spool": [0.02, 0.15, 0.07, 0.2, 0.1],
}
THREE = [PORT_A, PORT_B, PORT_C]


def _socat_setup(base: Path, run: int) -> None:
    stop_helpers()
    delay = DELAYS["t70_socat_retries_until_the_service_listens"][run]
    _helper("after", f"{base}/started", str(delay), "serve", str(SOCAT_PORT))


def _three_setup(base: Path, run: int) -> None:
    stop_helpers()
    late = THREE[run % 3]
    delay = DELAYS["t70_python_one_late_service_per_run"][run]
    _helper("after", f"{base}/reply.started", str(delay), "serve", str(late), *map(str, THREE))
    # the ones on time must be up before the run starts (only `late` is late)
    for p in THREE:
        if p != late:
            _ready_port(_PROCS[-1], p)


def _poll_setup(base: Path, run: int) -> None:
    stop_helpers()
    _helper("after", f"{base}/started", str(DELAYS["t70_python_polls_until_a_file_appears"][run]), "ready",
            f"{base}/ready")


def _until_setup(base: Path, run: int) -> None:
    stop_helpers()
    _helper("after", f"{base}/started", str(DELAYS["t70_sh_until_mkdir_waits_for_the_spool"][run]), "mkdir",
            f"{base}/spool")


def _xargs_setup(base: Path, run: int) -> None:
    for i in range(1, 7):
        write_file(base / "data" / f"f{i}", f"file {i}\n" * (200 * i))


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTIETH: list[NoAnomalyCase] = [
    _noise("t70_socat_retries_until_the_service_listens", sh_argv(SOCAT_SH), _socat_setup,
           "socat retry=: 0 to several connects refused before the service listens, then the reply"),
    _noise("t70_python_one_late_service_per_run",
           lambda b: [*PY, "-c", THREE_PY, f"{b}/reply", *map(str, THREE)], _three_setup,
           "the refused connects are at port A, B or C, another each run, then the three replies"),
    _noise("t70_mkdir_p_twice_in_parallel", sh_argv(MKDIR_RACE_SH), lambda b, r: None,
           "two mkdir -p racing: each level EEXIST for the one that comes second, which varies"),
    _noise("t70_python_polls_until_a_file_appears", lambda b: [*PY, "-c", POLL_PY, str(b)], _poll_setup,
           "stat ENOENT 1 to 6 times, 20 ms apart, then the file"),
    _noise("t70_sh_until_mkdir_waits_for_the_spool", sh_argv(UNTIL_MKDIR_SH), _until_setup,
           "1 to 5 mkdir processes failing ENOENT, a sleep after each, then the one that succeeds"),
    _noise("t70_xargs_parallel_md5sum_errors_interleave", sh_argv(XARGS_SH), _xargs_setup,
           "two md5sum workers' ENOENTs for the missing names, interleaved differently each run"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the helpers are stopped."""
    stop_helpers()
