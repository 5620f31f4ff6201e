"""A forty-seventh set of real programs with one real fault each: **pipelines, signals and
timeouts** -- shell pipelines where one stage fails or exits early, ``timeout`` killing a stuck
stage, FIFOs whose other end never comes, ``xargs -P`` with one failing child, and the set's own
C "job runner" ``tb47-sig`` (tests/scenarios/programs/fortyseventh/tb47-sig.c: a read under an
alarm watchdog without SA_RESTART, workers reaped by waitpid, records written to a non-blocking
pipe). The fault is one the job's host or its configuration gives the job:

- **a stage that fails, its writer's EPIPE a consequence**: ``cat logs | split -l N - parts/chunk-``
  under ``bash -o pipefail`` with the parts directory gone (split's openat ENOENT; cat then dies of
  SIGPIPE), ``zcat | join -t, - hosts.csv | sort | head -n 20`` with the lookup table not shipped
  (join's openat ENOENT; zcat's EPIPE after it, while the good runs' ``sort | head`` has routine
  EPIPE of its own at random points);
- **a reader that quits early, the writer's EPIPE the fault**: a Python log shipper (Python ignores
  SIGPIPE: BrokenPipeError, exit 1) piped into ``head -n LIMIT`` with a limit below its record count
  (write EPIPE);
- **timeout killing a stuck stage**: ``{ cat events; helper & } | wc -l`` with the helper started
  without redirecting its output (it holds the pipe's write end: wc never sees EOF, its read is cut
  by timeout's SIGTERM: read ERESTARTSYS), ``tee stream.fifo`` whose reader service is down (the
  open of the FIFO for writing blocks until the kill: openat ERESTARTSYS), ``sha1sum in/*`` where
  a crashed tool left a FIFO among the parts (openat ERESTARTSYS);
- **xargs -P**: ``xargs -P 2 -n 2 cksum`` over a manifest naming a shard removed from the disk
  (cksum's openat ENOENT in one child, the other child's work going on in any order);
- **signals in a C program and in Python**: tb47-sig's watchdog (SIGALRM, no SA_RESTART) cutting
  its read of a stalled upstream (read ERESTARTSYS, EINTR to the program, no retry), tb47-sig run by
  a launcher that left SIGCHLD ignored (``env --ignore-signal=CHLD``: the kernel reaps the workers
  itself, waitpid ECHILD), tb47-sig's records to a non-blocking pipe whose reader is slow, one record
  larger than the pipe's 64 KiB (write EAGAIN), a Python collector's ``setitimer`` deadline cutting
  its read of a FIFO whose producer opened it and stalled (read ERESTARTSYS, TimeoutError).

Faults (``t47_`` cases): split's openat ENOENT, join's openat ENOENT, python3's write EPIPE, wc's
read ERESTARTSYS, tee's openat ERESTARTSYS, sha1sum's openat ERESTARTSYS, cksum's openat ENOENT,
tb47-sig's read ERESTARTSYS, wait4 ECHILD and write EAGAIN, python3's read ERESTARTSYS. The
expectations are what ``strace -f`` shows a person looking for the fault (an interrupted call:
``= ? ERESTARTSYS``; the raw tracepoints record the same). No host state is changed: background
services a case needs are started by its setup and stopped by its teardown.

Good runs vary naturally: random sizes and contents of logs, shards and records (counts fixed),
random delays of the upstream stages, the order ``xargs -P`` children finish in, and whether and
where a routine early exit (``sort | head``) sends SIGPIPE. Noise cases (``QUIET_FORTYSEVENTH``) are
good runs alone, pipelines whose early exit is routine and varies in timing: ``yes | head -n N``,
``cat log | grep -q`` with the needle anywhere, ``sort -n | head -1`` of a busy day's numbers
(SIGPIPE) and of a quiet day's (none), a
Python generator with SIGPIPE's default action under ``head``, ``xargs -P 2`` children all
succeeding, tb47-sig's reads interrupted by its progress ticker a random number of times and
retried (EINTR is routine there) -- and ``cat logs | split -l 200`` of logs that
grew from one run to the next (one chunk more each run).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import random
import signal
import subprocess
from pathlib import Path

from .files import random_text, run_quiet, shell_argv, token, write_file
from .harness import PROGRAMS, PY, ROOT, NoAnomalyCase, Scenario

SIG_SRC = PROGRAMS / "fortyseventh" / "tb47-sig.c"
BASH = "/bin/bash"


def sig_bin() -> str:
    """tb47-sig, compiled once per session at a fixed path (the same in every run)."""
    out = ROOT / "_cc47" / "tb47-sig"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / f".tb47-sig.{os.getpid()}.tmp"
        run_quiet("gcc", "-O1", "-o", str(tmp), str(SIG_SRC))
        tmp.chmod(0o755)
        tmp.rename(out)
    return str(out)


# --- background services a case's setup starts (stopped by its teardown) ------------------------------------------
_SERVICES: dict[str, list[subprocess.Popen]] = {}


def _start_service(base: Path, argv: list[str]) -> None:
    proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd="/")
    _SERVICES.setdefault(base.name, []).append(proc)


def _stop_services(base: Path) -> None:
    for proc in _SERVICES.pop(base.name, []):
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# --- split: cat logs | split, the parts directory gone ------------------------------------------------------------
SPLIT_SH = 'cat "$1"/logs/*.log | split -l 200 - "$1/parts/chunk-"'


def _logs(base: Path, lo: int, hi: int) -> None:
    """Three logs of lo..hi-1 lines each, random contents."""
    for i in range(3):
        write_file(base / "logs" / f"app-{i}.log", random_text(lo, hi))


def split_parts_gone(base: Path, bad: bool) -> None:
    _logs(base, 667, 734)  # 2,001-2,199 lines in all: eleven chunks of 200 every run
    if not bad:  # the bad host's cleanup job removed the parts directory with the old chunks
        (base / "parts").mkdir()


# --- join: zcat | join with a lookup table | sort | head ----------------------------------------------------------
JOIN_SH = ('zcat "$1/events.gz" | join -t, - "$1/hosts.csv" | sort -t, -k3,3 -r | head -n 20 > "$1/top.csv"')


def join_table_missing(base: Path, bad: bool) -> None:
    hosts = sorted(f"h{i:05d}" for i in range(400))
    events = sorted(f"{random.choice(hosts)},{token(3)},{random.randrange(10**6):07d}"
                    for _ in range(random.randrange(3000, 9000)))
    (base / "events.gz").write_bytes(gzip.compress("".join(e + "\n" for e in events).encode()))
    if not bad:  # the bad host's deployment did not ship the lookup table
        write_file(base / "hosts.csv", "".join(f"{h},rack{random.randrange(40)}\n" for h in hosts))


# --- python3 log shipper | head -n LIMIT ---------------------------------------------------------------------------
SHIP_PY = """\
import sys

with open(sys.argv[1] + "/records.txt") as fh:
    for line in fh:
        sys.stdout.write(line)
sys.stdout.flush()
"""
SHIP_SH = 'python3 -S "$1/ship.py" "$1" | head -n "$(cat "$1/limit.conf")" > "$1/received"'


def shipper_limit_low(base: Path, bad: bool) -> None:
    n = random.randrange(3000, 4000)
    write_file(base / "ship.py", SHIP_PY)
    write_file(base / "records.txt", "".join(f"{token(6)} record {i} {token(8)}\n" for i in range(n)))
    # the consumer's limit: every record; the bad host's consumer config caps it at 100
    write_file(base / "limit.conf", "100\n" if bad else f"{n + random.randrange(0, 500)}\n")


# --- timeout | wc: a helper started without redirecting its output keeps the pipe open --------------------------------
WC_SH = ('{ cat "$1/events.log"; if [ "$(cat "$1/helper.conf")" = inherit ]; then setsid sleep 1.5 & '
         'else setsid sleep 1.5 > /dev/null & fi; } | wc -l > "$1/count"')


def _wc_argv(b: Path) -> list[str]:
    return ["timeout", "0.6", *shell_argv(WC_SH, str(b))]


def helper_holds_pipe(base: Path, bad: bool) -> None:
    write_file(base / "events.log", random_text(200, 2000))
    # the notifier daemon the report script starts (setsid: its own session, out of timeout's
    # process group) with its output sent to /dev/null; the bad host's script version starts it
    # with the pipeline's stdout
    write_file(base / "helper.conf", "inherit\n" if bad else "devnull\n")


# --- timeout tee stream.fifo: the reader service is down --------------------------------------------------------------
def _tee_argv(b: Path) -> list[str]:
    return ["timeout", "0.5", *shell_argv('tee "$1/stream.fifo" < "$1/batch.txt" > /dev/null', str(b))]


def fifo_reader_down(base: Path, bad: bool) -> None:
    write_file(base / "batch.txt", random_text(50, 800))
    os.mkfifo(base / "stream.fifo")
    if not bad:  # the reader service: copies the stream; the bad host's service is down
        _start_service(base, ["/bin/sh", "-c", 'exec cat "$1" > "$2"', "sh", str(base / "stream.fifo"),
                              str(base / "copy.txt")])


# --- timeout sha1sum in/*: a FIFO among the parts ---------------------------------------------------------------------
def _sha_argv(b: Path) -> list[str]:
    return ["timeout", "0.6", *shell_argv('sha1sum "$1"/in/* > "$1/SHA1SUMS"', str(b))]


def fifo_among_parts(base: Path, bad: bool) -> None:
    for i in range(6):
        part = base / "in" / f"part-{i:02d}.dat"
        if bad and i == 3:  # a crashed exporter left its named pipe in the parts' directory
            part.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(part)
        else:
            write_file(part, os.urandom(random.randrange(1024, 256 * 1024)))


# --- xargs -P 2 cksum over a manifest: a shard removed ----------------------------------------------------------------
XARGS_SH = 'xargs -P 2 -n 2 cksum < "$1/manifest" > "$1/sums"'


def manifest_shard_removed(base: Path, bad: bool) -> None:
    names = [base / "shards" / f"shard-{i:02d}.bin" for i in range(8)]
    for p in names:
        write_file(p, os.urandom(random.randrange(4096, 512 * 1024)))
    write_file(base / "manifest", "".join(f"{p}\n" for p in names))
    if bad:  # the shard went away after the manifest was written
        names[5].unlink()


# --- tb47-sig feed: the watchdog cuts the read of a stalled upstream ---------------------------------------------------
FEED_SH = '(sleep "$(cat "$1/upstream.conf")"; cat "$1/data.bin") | "$2" feed "$1"'


def _feed_argv(b: Path) -> list[str]:
    return shell_argv(FEED_SH, str(b), sig_bin())


def upstream_stalled(base: Path, bad: bool) -> None:
    sig_bin()
    write_file(base / "data.bin", os.urandom(random.randrange(1024, 48 * 1024)))
    write_file(base / "feed.conf", "400\n")  # the watchdog: 400 ms
    write_file(base / "upstream.conf", "1.0\n" if bad else f"0.0{random.randrange(0, 6)}\n")


# --- tb47-sig reap: a launcher that leaves SIGCHLD ignored ---------------------------------------------------------------
REAP_SH = 'exec env $(cat "$1/launch.conf") "$2" reap "$1"'


def _reap_argv(b: Path) -> list[str]:
    return shell_argv(REAP_SH, str(b), sig_bin())


def sigchld_ignored(base: Path, bad: bool) -> None:
    sig_bin()
    write_file(base / "reap.conf", "3\n")
    # the launcher's signal set-up: SIGCHLD reset to default; the bad host's launcher ignores it
    write_file(base / "launch.conf", "--ignore-signal=CHLD\n" if bad else "--default-signal=CHLD\n")


# --- tb47-sig push: a record larger than the pipe, its reader slow --------------------------------------------------------
PUSH_SH = '"$2" push "$1" | { sleep 0.2; cat > "$1/sink"; }'


def _push_argv(b: Path) -> list[str]:
    return shell_argv(PUSH_SH, str(b), sig_bin())


def record_over_pipe(base: Path, bad: bool) -> None:
    sig_bin()
    sizes = [random.randrange(1, 12) for _ in range(4)]
    if bad:  # a record of 96 KiB: more than the pipe holds while the reader sleeps
        sizes[2] = 96
    write_file(base / "push.conf", " ".join(map(str, sizes)) + "\n")


# --- python3 collector: setitimer deadline around a FIFO whose producer stalled ---------------------------------------------
COLLECT_PY = """\
import signal
import sys


def expired(signum, frame):
    raise TimeoutError("the producer sent nothing within the deadline")


signal.signal(signal.SIGALRM, expired)
signal.setitimer(signal.ITIMER_REAL, 0.4)
with open(sys.argv[1] + "/stream.fifo", "rb") as fh:
    data = fh.read()
signal.setitimer(signal.ITIMER_REAL, 0)
with open(sys.argv[1] + "/collected.bin", "wb") as out:
    out.write(data)
"""
PRODUCER_SH = 'exec 3> "$1/stream.fifo"; sleep "$2"; cat "$1/payload.bin" >&3'


def producer_stalled(base: Path, bad: bool) -> None:
    write_file(base / "collect.py", COLLECT_PY)
    write_file(base / "payload.bin", os.urandom(random.randrange(512, 32 * 1024)))
    os.mkfifo(base / "stream.fifo")
    # the producer service opens the stream and sends its payload; the bad host's stalls (5 s)
    delay = "5" if bad else f"0.0{random.randrange(0, 5)}"
    _start_service(base, shell_argv(PRODUCER_SH, str(base), delay))


def _sh(script: str):
    return lambda b: shell_argv(script, str(b))


def _bash_pipefail(script: str):
    return lambda b: [BASH, "-o", "pipefail", "-c", script, "bash", str(b)]


SIG = "tb47-sig"
REAL_FORTYSEVENTH: list[Scenario] = [
    Scenario("t47_split_parts_dir_gone", "split -l 200 - parts/chunk- (bash -o pipefail: cat logs | split)",
             _bash_pipefail(SPLIT_SH), split_parts_gone, frozenset({"openat", "open", "creat"}), "ENOENT",
             lambda b: f"{b}/parts/chunk-aa",
             description="the parts directory removed by a cleanup: split's first output open fails ENOENT, "
                         "cat then writes into a pipe nobody reads (EPIPE, killed by SIGPIPE)"),
    Scenario("t47_join_lookup_table_missing", "join -t, - hosts.csv (zcat | join | sort | head -n 20)",
             _bash_pipefail(JOIN_SH), join_table_missing, frozenset({"openat", "open"}), "ENOENT",
             lambda b: f"{b}/hosts.csv",
             description="the lookup table not shipped: join's open fails ENOENT, zcat's EPIPE follows; the "
                         "good runs' sort | head -n 20 has routine EPIPE at random points"),
    Scenario("t47_shipper_consumer_limit_low", "python3 ship.py | head -n LIMIT (bash -o pipefail)",
             _bash_pipefail(SHIP_SH), shipper_limit_low, frozenset({"write", "writev"}), "EPIPE",
             lambda b: "pipe:*",
             description="the consumer's limit (100) below the record count: head exits, the Python shipper's "
                         "next write fails EPIPE (Python ignores SIGPIPE: BrokenPipeError, exit 1)"),
    Scenario("t47_timeout_wc_helper_holds_pipe", "wc -l (timeout 0.6: { cat; helper & } | wc -l)", _wc_argv,
             helper_holds_pipe, frozenset({"read"}), "ERESTARTSYS", lambda b: "pipe:*",
             description="the helper started with the pipeline's stdout keeps the pipe's write end: wc never "
                         "sees EOF, timeout's SIGTERM cuts its read (strace: read = ? ERESTARTSYS, killed)"),
    Scenario("t47_timeout_tee_fifo_reader_down", "tee stream.fifo (timeout 0.5)", _tee_argv, fifo_reader_down,
             frozenset({"openat", "open"}), "ERESTARTSYS", lambda b: f"{b}/stream.fifo", teardown=_stop_services,
             description="the FIFO's reader service is down: tee's open for writing blocks until timeout's "
                         "SIGTERM (openat ERESTARTSYS, killed)"),
    Scenario("t47_timeout_sha1sum_fifo_in_parts", "sha1sum in/* (timeout 0.6)", _sha_argv, fifo_among_parts,
             frozenset({"openat", "open"}), "ERESTARTSYS", lambda b: f"{b}/in/part-03.dat",
             description="a named pipe left among the parts: sha1sum's open of it blocks until timeout's "
                         "SIGTERM (openat ERESTARTSYS, killed)"),
    Scenario("t47_xargs_p2_cksum_shard_removed", "cksum (xargs -P 2 -n 2 over a manifest)", _sh(XARGS_SH),
             manifest_shard_removed, frozenset({"openat", "open"}), "ENOENT",
             lambda b: f"{b}/shards/shard-05.bin",
             description="a shard removed after the manifest was written: one cksum child's open fails ENOENT "
                         "while the other child goes on (xargs exits 123)"),
    Scenario("t47_watchdog_cuts_stalled_upstream", f"{SIG} feed (read under a SIGALRM watchdog)", _feed_argv,
             upstream_stalled, frozenset({"read"}), "ERESTARTSYS", lambda b: "pipe:*",
             description="the upstream stage stalls 1 s, the watchdog fires at 400 ms: the read of the pipe "
                         "is interrupted (ERESTARTSYS, EINTR without SA_RESTART) and the job fails"),
    Scenario("t47_launcher_ignores_sigchld", f"{SIG} reap (env --ignore-signal=CHLD launcher)", _reap_argv,
             sigchld_ignored, frozenset({"wait4", "waitid"}), "ECHILD", lambda b: "*",
             description="the launcher leaves SIGCHLD ignored (inherited across exec): the kernel reaps the "
                         "workers itself and waitpid fails ECHILD"),
    Scenario("t47_nonblocking_record_over_pipe", f"{SIG} push (non-blocking pipe, slow reader)", _push_argv,
             record_over_pipe, frozenset({"write", "writev"}), "EAGAIN", lambda b: "pipe:*",
             description="a 96 KiB record to a non-blocking pipe whose reader sleeps: 64 KiB go, the rest "
                         "fails EAGAIN"),
    Scenario("t47_py_deadline_fifo_producer_stalled", "python3 collect.py (setitimer deadline, FIFO)",
             lambda b: [*PY, str(b / "collect.py"), str(b)], producer_stalled, frozenset({"read"}),
             "ERESTARTSYS", lambda b: f"{b}/stream.fifo", teardown=_stop_services,
             description="the producer opened the FIFO and stalls: the collector's read is cut by its "
                         "SIGALRM deadline (ERESTARTSYS, TimeoutError)"),
]


# --- good-vs-good noise: routine early exits ---------------------------------------------------------------------------
def _yes_head(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "yes.conf", f"{token(4)} {random.randrange(2000, 40000)}\n")


def _grep_q(base: Path, run: int) -> None:  # noqa: ARG001
    lines = random_text(2000, 6000).splitlines(keepends=True)
    lines.insert(random.randrange(len(lines)), f"{token(4)} needle {token(4)}\n")
    write_file(base / "app.log", "".join(lines))


def _sort_head(base: Path, run: int) -> None:
    # a day's numbers: 10,000-20,000 on busy days (runs 0 and 1: sort's output is more than the
    # pipe holds, head's early exit kills sort with SIGPIPE at a write), 200-350 on the quiet day
    # of the last run (the output is one write of less than 4 KiB: sort finishes, closes its
    # stdout and exits 0 before head has read its line)
    n = random.randrange(200, 350) if run == 2 else random.randrange(10000, 20000)
    write_file(base / "nums", "".join(f"{random.randrange(10**9)}\n" for _ in range(n)))


def _split_log_grew(base: Path, run: int) -> None:
    # the service's logs grow from one run to the next (about 200 lines a day): one chunk more each run
    _logs(base, 667 + 67 * run, 717 + 67 * run)
    (base / "parts").mkdir()


GEN_PY = """\
import random
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)
for i in range(int(sys.argv[1])):
    print(i, random.random())
"""


def _py_gen(base: Path, run: int) -> None:  # noqa: ARG001
    write_file(base / "gen.py", GEN_PY)
    write_file(base / "gen.conf", f"{random.randrange(5000, 60000)}\n")


TICK_SH = ('for i in 1 2 3 4 5; do sleep "0.0$(shuf -i 0-9 -n 1)"; head -c "$(shuf -i 1-9000 -n 1)" "$1/data.bin"; '
           'done | "$2" tick "$1"')


def _ticker(base: Path, run: int) -> None:  # noqa: ARG001
    sig_bin()
    write_file(base / "data.bin", os.urandom(9000))
    write_file(base / "tick.conf", "15\n")  # a progress tick every 15 ms


def _noise(setup):
    return lambda base, run: setup(base, False)  # noqa: ARG005


QUIET_FORTYSEVENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t47_yes_head_lines", _sh('set -- "$1" $(cat "$1/yes.conf"); yes "$2" | head -n "$3" > "$1/pad"'),
                  _yes_head, description="yes | head -n N: yes killed by SIGPIPE after a random number of writes"),
    NoAnomalyCase("t47_cat_grep_q_needle", _sh('cat "$1/app.log" | grep -q needle'), _grep_q,
                  description="cat log | grep -q: grep quits at the needle, anywhere; cat's EPIPE or not"),
    NoAnomalyCase("t47_sort_head_quiet_day", _sh('sort -n "$1/nums" | head -1 > "$1/min"'), _sort_head,
                  description="sort -n | head -1 (sh: exit 0 every run) of 10,000-20,000 numbers twice (sort "
                              "killed by SIGPIPE at a write), then of 200-350 (sort's one write fits the pipe: "
                              "no EPIPE, it closes its stdout and exits)"),
    NoAnomalyCase("t47_split_log_grew", _bash_pipefail(SPLIT_SH), _split_log_grew,
                  description="cat logs | split -l 200 of logs that grew: 11, 12, then 13 chunks (chunk-am new)"),
    NoAnomalyCase("t47_py_gen_head_sigpipe_default",
                  _sh('python3 -S "$1/gen.py" "$(cat "$1/gen.conf")" | head -n 5 > "$1/first"'), _py_gen,
                  description="a Python generator with SIGPIPE's default action under head -n 5"),
    NoAnomalyCase("t47_xargs_p2_cksum_all_there", _sh(XARGS_SH), _noise(manifest_shard_removed),
                  description="xargs -P 2 -n 2 cksum: every shard there, the children finishing in any order"),
    NoAnomalyCase("t47_ticker_interrupted_reads_retried", lambda b: shell_argv(TICK_SH, str(b), sig_bin()), _ticker,
                  description="tb47-sig tick: a 15 ms SIGALRM ticker without SA_RESTART over an upstream sending "
                              "five chunks at random delays: reads interrupted (ERESTARTSYS, EINTR) a random "
                              "number of times, each retried"),
]


def quiet_teardown() -> None:
    """Stop any background service a case left (a failed teardown)."""
    for name in list(_SERVICES):
        _stop_services(ROOT / name)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
