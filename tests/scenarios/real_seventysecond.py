"""A seventy-second set of real programs: **many processes of one role** -- parallel workers started
by one parent (``xargs -P``, ``make -j``, ``find -exec``, a shell's ``&`` + ``wait`` loop, python
``multiprocessing`` / ``concurrent.futures``, ``split`` + per-part workers).

What docs/diff-json.md promises for them: a process's ``role`` is its fork-tree path of exec'd names
with a ``#i`` sibling rank; the same anomaly -- the same call, errno and path named -- in sibling
processes of one role is folded into one: ``repeats`` says how many more siblings had it,
``repeated_in`` their roles, ``anomaly_count`` counts it once; an anomaly at another path in each
worker is not the same anomaly; a region of known events in another order, in a thread or in all of
BAD's threads of a role together, is a reordering ("a thread pool's share of work"), and the failed
attempts of a retry loop are noise.

Fault cases (``REAL_SEVENTYSECOND``): three good runs and the bad run; ``extra`` holds what the case
checks beyond the bifurcation (``comm``: the named process's comm, the worker's; ``repeats``: the
number of other workers the anomaly is folded from, with ``repeated_in`` their own roles of the
named one's role; ``each``: (probe, errno, path glob) that must each be an anomaly of its own, none
folded; ``stopped``: the worker program the bad run started fewer of than every good run).
What ``strace -f`` shows each bad run doing (coreutils 9.1, findutils 4.9, GNU make 4.3, dash
0.5.12, python 3.11, Linux 6.x):

- ``xargs -P 4 -n 1 wc -l`` over four inputs, as nobody, in/east.txt root's 0600: four wc processes
  at once; the third, ``openat(AT_FDCWD, ".../in/east.txt", O_RDONLY) = -1 EACCES``, writes "wc: ...:
  Permission denied", exit 1; the other three read their file and print the count; xargs exits 123.
  One worker of four: named once, in that wc process, nothing folded;
- a dash ``&`` loop of four ``sed -f etc/rules.sed in/<part>.txt`` workers, the shared rules file
  missing: each sed ``openat(.., ".../etc/rules.sed", O_RDONLY) = -1 ENOENT``, "sed: couldn't open
  file ...", exit 4, in all four workers (after the shell opened each one's out/<part>.txt), the
  script's waits see 4 each, exit 1: one anomaly named in one sed, ``repeats`` 3, ``repeated_in`` the
  other three seds;
- python3 forking three ``multiprocessing.Process`` workers (fork context), each counting its input
  and appending a line to the shared out/journal.log, out/ a read-only tmpfs: each worker's
  ``openat(.., ".../out/journal.log", O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC) = -1 EROFS`` after its input
  was read, "OSError: [Errno 30] Read-only file system", exit 1; the parent joins all three and exits
  1: named once, ``repeats`` 2;
- a dash ``&`` loop of three ``sha1sum in/<name>.dat`` workers, as nobody, all three inputs root's
  0600: ``openat(.., ".../in/alpha.dat", O_RDONLY) = -1 EACCES`` in the first, bravo's in the second,
  charlie's in the third (each its own path, the three in any order), "sha1sum: ...: Permission
  denied", exit 1 each: three anomalies, none folded into another;
- a dash ``&`` loop of three python3 workers each under ``ulimit -v 400000`` (kB) allocating the
  megabytes its job file says (16, 24, 32 in the good runs): job two asks for 900 MB -- ``mmap(NULL,
  943722496, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM``, a ``brk`` that
  does not move, glibc's second try ``mmap(NULL, 944766976, ...) = -1 ENOMEM``, "MemoryError", exit
  1, while the other two write their out/<job> and exit 0: named in worker two's python3;
- ``make -s -j2`` of six independent targets (``sort -o $(CURDIR)/out/<x> $(CURDIR)/in/<x>.txt``, make
  execs sort itself, no shell), as nobody, in/cat.txt root's 0600 (the third target): ant and bee
  sorted, the third sort's ``newfstatat(.., ".../in/cat.txt") = 0`` then ``access(".../in/cat.txt",
  R_OK) = -1 EACCES`` (sort -o checks its inputs before it opens the output; no openat of it),
  "sort: cannot read: ...: Permission denied", exit 2; make writes "*** [Makefile:4: out/cat]
  Error 2", "*** Waiting for unfinished jobs....", reaps the job beside it (dog, started when bee
  ended first) and starts no other: 3 or 4 sorts instead of 6, exit 2;
- ``find logs -name '*.log' -exec md5sum {} \\;`` as nobody, logs/b.log root's 0600: one md5sum
  process per file, one after the other; b's ``openat(.., ".../logs/b.log", O_RDONLY) = -1 EACCES``,
  "md5sum: ...: Permission denied", exit 1; find goes on with c, d and a (its listing's order) and
  exits 0 (``-exec ... \\;`` is a test: a failing command makes it false, not find's status).

Noise cases (``QUIET_SEVENTYSECOND``): five good runs each, every run diffed against the other four;
same output and exit status every run. What ``strace -f`` showed varying (5 runs alone, 5 beside
two busy loops):

- ``xargs -P 4 -n 1 sha256sum`` over eight files of 1 to 400 kB: the order the eight workers end in
  (f1 f3 f5 f2 f4 f7 f6 f8, f2 f1 f3 f5 f4 f7 f6 f8, f1 f4 f5 f2 f3 f7 f8 f6 alone; f4 f5 f6 f1 f7 f2
  f3 f8, f2 f3 f1 f5 f8 f4 f6 f7 loaded), so which input the fifth to eighth worker starts beside
  which, xargs's reaping wait4s and the workers' writes interleaved otherwise;
- ``concurrent.futures.ProcessPoolExecutor(max_workers=4)`` (fork) over three inputs: the executor
  forks a worker only when no idle one is there, so 3 workers (2 in one loaded run), never 4, and
  which worker counts which input (kilo, lima, mike in any order) varies;
- ``make -s -j4`` over six independent targets (make execs each sort itself): forked and exec'd in
  make's order every run, they end in another (ash birch cedar elm fir oak, ash cedar birch fir elm
  oak, ash birch cedar oak elm fir, ash cedar fir birch oak elm), so the fifth and sixth start
  beside others;
- ``multiprocessing.Pool(2, maxtasksperchild=2)`` over seven tasks (imap_unordered, chunksize 1):
  each worker exits after two tasks and the pool forks a new one, 4 workers every run, the first
  worker taking task 0 or 1 first, the later ones tasks 3 to 6 in other shares;
- ``split -n l/4`` and one ``sort`` per part in a dash ``&`` loop, then ``sort -m``: the four sorts
  exec'd and ending in another order each run (ac ab ad aa, ac ad aa ab, ad ab ac aa alone; aa ab
  ac ad, aa ad ab ac loaded);
- a dash ``&`` loop of four ``cat`` workers, each re-run by its subshell until it succeeds, one
  input (another each run) appearing late (a helper outside the recording renames it into place
  50 to 150 ms after the run's stamp): 1 to 5 cat processes failing ``openat(.., O_RDONLY) = -1
  ENOENT`` on that input (alone and loaded alike), a ``sleep 0.02`` process after each, then the
  one that reads it;
- the same loop where in one run of five the input is there from the start (the others 150 to
  300 ms late): that run has no failed cat and no sleep process, the other four 1 to 5 of each.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, Scenario, sh_argv

OPENS = frozenset({"openat", "open", "creat"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
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


# A helper outside the recording: `STAMP DELAY PATH` waits for STAMP, sleeps DELAY s, then renames
# PATH.tmp (written first) into PATH.
LATE_FILE_PY = r"""
import os, sys, time
stamp, delay, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + 60
while not os.path.exists(stamp) and time.monotonic() < deadline:
    time.sleep(0.005)
time.sleep(delay)
with open(path + ".tmp", "w") as f:
    f.write("late part\n" * 50)
os.rename(path + ".tmp", path)
"""


def _late_file(stamp: Path, delay: float, path: Path) -> None:
    _PROCS.append(subprocess.Popen(["/usr/bin/python3", "-S", "-c", LATE_FILE_PY, str(stamp), str(delay), str(path)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=ENV, start_new_session=True))


def _lines(n: int, tag: str) -> str:
    return "".join(f"{tag} {(k * 7919) % 1000:04d} line {k}\n" for k in range(n))


# --- fault cases -------------------------------------------------------------------------------------------------------
PARTS = ("north", "south", "east", "west")

XARGS_WC_SH = 'printf "$1/in/%s.txt\\n" north south east west | xargs -P 4 -n 1 wc -l > "$1/out/counts.txt"'

# a dash loop of workers, each its own process; the script waits for each and fails if one did
SED_LOOP_SH = ('pids=; for p in north south east west; do '
               'sed -f "$1/etc/rules.sed" "$1/in/$p.txt" > "$1/out/$p.txt" & pids="$pids $!"; done; '
               'rc=0; for pid in $pids; do wait $pid || rc=1; done; exit $rc')

JOURNAL_PY = r"""
import multiprocessing as mp, sys
b = sys.argv[1]
def work(name):
    with open(f"{b}/in/{name}.txt") as f:
        n = sum(1 for _ in f)
    with open(f"{b}/out/journal.log", "a") as j:
        j.write(f"{name} {n}\n")
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=work, args=(name,)) for name in ("red", "green", "blue")]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    sys.exit(1 if any(p.exitcode for p in procs) else 0)
"""

SHA1_LOOP_SH = ('pids=; for n in alpha bravo charlie; do '
                'sha1sum "$1/in/$n.dat" > "$1/out/$n.sum" & pids="$pids $!"; done; '
                'rc=0; for pid in $pids; do wait $pid || rc=1; done; exit $rc')

ALLOC_PY = ('import sys; mb = int(open(sys.argv[1]).read()); buf = bytearray(mb << 20); '
            'open(sys.argv[2], "w").write("%d\\n" % len(buf))')
ULIMIT_LOOP_SH = ('pids=; for j in one two three; do '
                  '(ulimit -v 400000; exec /usr/bin/python3 -S -c "$2" "$1/jobs/$j" "$1/out/$j") & pids="$pids $!"; '
                  'done; rc=0; for pid in $pids; do wait $pid || rc=1; done; exit $rc')

MAKE_TARGETS = ("ant", "bee", "cat", "dog", "eel", "fox")
MAKEFILE = ("ALL = " + " ".join(f"out/{t}" for t in MAKE_TARGETS) + "\n"
            "all: $(ALL)\n"
            "out/%:\n"
            "\tsort -o $(CURDIR)/$@ $(CURDIR)/in/$*.txt\n")
MAKE_SH = 'exec /usr/bin/make -s -j2 -C "$1"'

FIND_EXEC_SH = 'find "$1/logs" -name "*.log" -exec md5sum {} \\; > "$1/out/sums.txt"'


def _xargs_wc_setup(base: Path, bad: bool) -> None:
    for i, p in enumerate(PARTS):
        write_file(base / "in" / f"{p}.txt", _lines(40 + 10 * i, p), 0o600 if bad and p == "east" else 0o644)
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _sed_loop_setup(base: Path, bad: bool) -> None:
    if not bad:
        write_file(base / "etc" / "rules.sed", "s/line/LINE/\n/ 0000 /d\n")
    for i, p in enumerate(PARTS):
        write_file(base / "in" / f"{p}.txt", _lines(30 + 5 * i, p))
    (base / "out").mkdir()


def _journal_setup(base: Path, bad: bool) -> None:
    for i, name in enumerate(("red", "green", "blue")):
        write_file(base / "in" / f"{name}.txt", _lines(20 + i, name))
    (base / "out").mkdir()
    if bad:  # the shared output directory is a read-only file system
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0755", "tmpfs", str(base / "out")], check=True)


def _sha1_loop_setup(base: Path, bad: bool) -> None:
    for i, n in enumerate(("alpha", "bravo", "charlie")):
        write_file(base / "in" / f"{n}.dat", _lines(50 + 20 * i, n), 0o600 if bad else 0o644)
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _ulimit_setup(base: Path, bad: bool) -> None:
    for j, mb in (("one", 16), ("two", 900 if bad else 24), ("three", 32)):
        write_file(base / "jobs" / j, f"{mb}\n")
    (base / "out").mkdir()


def _make_setup(base: Path, bad: bool) -> None:
    write_file(base / "Makefile", MAKEFILE)
    for i, t in enumerate(MAKE_TARGETS):
        write_file(base / "in" / f"{t}.txt", _lines(200 + 150 * i, t), 0o600 if bad and t == "cat" else 0o644)
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _find_setup(base: Path, bad: bool) -> None:
    for i, n in enumerate("abcd"):
        write_file(base / "logs" / f"{n}.log", _lines(30 + 10 * i, n), 0o600 if bad and n == "b" else 0o644)
    write_file(base / "logs" / "notes.txt", "not a log\n")
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=stop_helpers,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTYSECOND: list[Scenario] = [
    _sc("t72_xargs_p4_one_wc_worker_input_unreadable", "sh (xargs -P 4 -n 1 wc -l over four inputs; as nobody)",
        sh_argv(XARGS_WC_SH), _xargs_wc_setup, OPENS, "EACCES", lambda b: f"{b}/in/east.txt", unprivileged=True,
        comm="wc", repeats=0,
        description="one wc worker of four cannot read its input: named in that worker, nothing folded"),
    _sc("t72_sh_four_sed_workers_shared_rules_missing", "sh (& loop of four sed -f workers)",
        sh_argv(SED_LOOP_SH), _sed_loop_setup, OPENS, "ENOENT", lambda b: f"{b}/etc/rules.sed",
        comm="sed", repeats=3, once=("openat", "ENOENT"),
        description="the shared sed script is missing: all four workers fail on it, named once, repeats 3"),
    _sc("t72_python_three_fork_workers_journal_on_readonly_fs", "python3 (three multiprocessing.Process workers)",
        lambda b: [*PY, "-c", JOURNAL_PY, str(b)], _journal_setup, OPENS, "EROFS", lambda b: f"{b}/out/journal.log",
        repeats=2, once=("openat", "EROFS"),
        description="the shared journal is on a read-only tmpfs: three forked workers refused, named once"),
    _sc("t72_sh_three_sha1sum_workers_each_input_unreadable", "sh (& loop of three sha1sum workers; as nobody)",
        sh_argv(SHA1_LOOP_SH), _sha1_loop_setup, OPENS, "EACCES", lambda b: f"{b}/in/*.dat", unprivileged=True,
        comm="sha1sum",
        each=[("openat", "EACCES", "*/in/alpha.dat"), ("openat", "EACCES", "*/in/bravo.dat"),
              ("openat", "EACCES", "*/in/charlie.dat")],
        description="every worker's own input refused (three paths): three anomalies, none folded"),
    _sc("t72_sh_ulimit_v_worker_allocation_refused", "sh (& loop of three python3 workers under ulimit -v)",
        sh_argv(ULIMIT_LOOP_SH, ALLOC_PY), _ulimit_setup, frozenset({"mmap"}), "ENOMEM", lambda b: "",
        comm="python3", repeats=0,
        description="one worker asks for more than its address-space limit: its mmap ENOMEM, the others finish"),
    _sc("t72_make_j2_stops_after_one_recipe_fails", "sh (make -s -j2 of six sorts; as nobody)",
        sh_argv(MAKE_SH), _make_setup, ACCESS, "EACCES", lambda b: f"{b}/in/cat.txt", unprivileged=True,
        comm="sort", repeats=0, stopped="sort",
        description="the third recipe's sort cannot read its input: make waits for the running job, starts no more"),
    _sc("t72_find_exec_md5sum_one_log_unreadable", "sh (find -exec md5sum {} \\; as nobody)",
        sh_argv(FIND_EXEC_SH), _find_setup, OPENS, "EACCES", lambda b: f"{b}/logs/b.log", unprivileged=True,
        comm="md5sum", repeats=0,
        description="one md5sum of four, started by find one after the other, cannot read its log"),
]


# --- good runs whose workers are scheduled differently -----------------------------------------------------------------
XARGS_SHA_SH = ('printf "$1/data/%s\\n" f1 f2 f3 f4 f5 f6 f7 f8 | xargs -P 4 -n 1 sha256sum > "$1/sums.txt"')

EXECUTOR_PY = r"""
import sys
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp
b = sys.argv[1]
def count(name):
    with open(f"{b}/in/{name}.txt") as f:
        return name, sum(len(line.split()) for line in f)
if __name__ == "__main__":
    with ProcessPoolExecutor(max_workers=4, mp_context=mp.get_context("fork")) as ex:
        results = sorted(ex.map(count, ["kilo", "lima", "mike"]))
    with open(f"{b}/out.txt", "w") as f:
        f.writelines("%s %d\n" % r for r in results)
"""

QUIET_MAKE_TARGETS = ("ash", "birch", "cedar", "elm", "fir", "oak")
QUIET_MAKEFILE = ("ALL = " + " ".join(f"out/{t}" for t in QUIET_MAKE_TARGETS) + "\n"
                  "all: $(ALL)\n"
                  "out/%:\n"
                  "\tsort -o $@ in/$*.txt\n")
MAKE_J4_SH = 'exec /usr/bin/make -s -j4 -C "$1"'

POOL_PY = r"""
import sys
import multiprocessing as mp
b = sys.argv[1]
def digest(i):
    import hashlib
    with open(f"{b}/in/task{i}.txt", "rb") as f:
        return i, hashlib.sha1(f.read()).hexdigest()
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2, maxtasksperchild=2) as pool:
        results = sorted(pool.imap_unordered(digest, range(7), chunksize=1))
    with open(f"{b}/digests.txt", "w") as f:
        f.writelines("%d %s\n" % r for r in results)
"""

SPLIT_SH = ('cd "$1" && split -n l/4 data.txt part. && pids= && for p in part.aa part.ab part.ac part.ad; do '
            'sort -o "$p.sorted" "$p" & pids="$pids $!"; done; rc=0; for pid in $pids; do wait $pid || rc=1; done; '
            '[ $rc -eq 0 ] && sort -m -o merged.txt part.aa.sorted part.ab.sorted part.ac.sorted part.ad.sorted')

RETRY_LOOP_SH = (': > "$1/started"; pids=; for p in north south east west; do '
                 '( n=0; until cat "$1/in/$p.txt" > "$1/out/$p.txt" 2>/dev/null; do n=$((n + 1)); '
                 '[ $n -gt 300 ] && exit 1; sleep 0.02; done ) & pids="$pids $!"; done; '
                 'rc=0; for pid in $pids; do wait $pid || rc=1; done; exit $rc')

# the retry cases: (the input that comes late, its delay in s) for each run; None: there from the start
LATE: list[tuple[str, float | None]] = [("east", 0.05), ("north", 0.1), ("west", 0.15), ("south", 0.07), ("east", 0.12)]
FIRST_TRY: list[tuple[str, float | None]] = [("east", None), ("north", 0.2), ("west", 0.3), ("south", 0.15),
                                             ("east", 0.25)]


def _xargs_sha_setup(base: Path, run: int) -> None:
    # sizes so that the four first workers end in another order than they started
    for i, kb in enumerate((400, 1, 200, 30, 5, 300, 60, 2), start=1):
        write_file(base / "data" / f"f{i}", (f"block {i} " * 128)[: 1024] * kb)


def _executor_setup(base: Path, run: int) -> None:
    for i, name in enumerate(("kilo", "lima", "mike")):
        write_file(base / "in" / f"{name}.txt", _lines(300 * (i + 1), name))


def _make_j4_setup(base: Path, run: int) -> None:
    write_file(base / "Makefile", QUIET_MAKEFILE)
    for i, t in enumerate(QUIET_MAKE_TARGETS):
        write_file(base / "in" / f"{t}.txt", _lines((6 - i) * 1500 if i % 2 else 50 * (i + 1), t))
    (base / "out").mkdir()


def _pool_setup(base: Path, run: int) -> None:
    for i in range(7):
        write_file(base / "in" / f"task{i}.txt", _lines(100 * (i % 3 + 1), f"t{i}"))


def _split_setup(base: Path, run: int) -> None:
    write_file(base / "data.txt", _lines(4000, "rec"))


def _retry_setup_of(runs: list[tuple[str, float | None]]):
    def setup(base: Path, run: int) -> None:
        stop_helpers()
        late, delay = runs[run % len(runs)]
        for i, p in enumerate(PARTS):
            if p != late or delay is None:
                write_file(base / "in" / f"{p}.txt", _lines(30 + 5 * i, p))
        (base / "out").mkdir()
        if delay is not None:
            _late_file(base / "started", delay, base / "in" / f"{late}.txt")
    return setup


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYSECOND: list[NoAnomalyCase] = [
    _noise("t72_xargs_p4_sha256sum_workers_end_in_any_order", sh_argv(XARGS_SHA_SH), _xargs_sha_setup,
           "xargs -P 4 -n 1 sha256sum over eight files: which worker ends first, which starts beside which"),
    _noise("t72_python_executor_starts_fewer_workers_than_max", lambda b: [*PY, "-c", EXECUTOR_PY, str(b)],
           _executor_setup, "ProcessPoolExecutor(4) over three inputs: 2 or 3 workers forked, which counts which"),
    _noise("t72_make_j4_independent_targets_in_any_order", sh_argv(MAKE_J4_SH), _make_j4_setup,
           "make -j4 over six sorts of other sizes: the recipes end and are reaped in another order each run"),
    _noise("t72_python_pool_maxtasksperchild_restarts_workers", lambda b: [*PY, "-c", POOL_PY, str(b)],
           _pool_setup, "Pool(2, maxtasksperchild=2) over seven tasks: workers replaced, tasks shared differently"),
    _noise("t72_split_then_four_sort_workers", sh_argv(SPLIT_SH), _split_setup,
           "split -n l/4, a sort per part in parallel, sort -m: the sorts end in another order each run"),
    _noise("t72_sh_flaky_cat_worker_rerun_until_it_reads", sh_argv(RETRY_LOOP_SH), _retry_setup_of(LATE),
           "one worker's input comes late: 1 to several cat processes fail ENOENT, re-run after a sleep"),
    _noise("t72_sh_flaky_cat_worker_reads_at_once_in_one_run", sh_argv(RETRY_LOOP_SH), _retry_setup_of(FIRST_TRY),
           "as above, but in one run of five the input is there at once: no failed cat, no sleep"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the helpers are stopped."""
    stop_helpers()
