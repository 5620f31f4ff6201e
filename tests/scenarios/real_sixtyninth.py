"""A sixty-ninth set of real programs with one real fault each: **the standard streams** -- where
a program's stdin, stdout and stderr go, and what that does to its system calls -- and good runs
whose streams differ by timing or by design, which must stay quiet.

Each case's job script sources its launcher's stdio configuration (``stdio.conf``, a line of
``exec`` redirections the setup writes: the same script in every run, the redirection the run's
own), then runs the program. The recorder hands every run /dev/null as its stdin, stdout and
stderr.

Fault cases (``REAL_SIXTYNINTH``): three good runs and the bad run. Each expectation is what
``strace -f -y`` shows the bad run doing (coreutils 9.1, dash 0.5.12, perl 5.36, python 3.11,
util-linux 2.38, Linux 6.x):

- ``date -u +...`` with its stdout sent to /dev/full (``exec > /dev/full``; good runs: the stamp
  file): ``write(1</dev/full>, "... build stamp\\n", 26) = -1 ENOSPC``, then close, "date: write
  error: No space left on device", exit 1;
- python3 ``logging`` (basicConfig: a StreamHandler on stderr) with stderr sent to /dev/full
  (``exec 2> /dev/full``; good runs: the job's log): ``write(2</dev/full>, "INFO synced 400
  rows\\n", 21) = -1 ENOSPC``, then logging's own "--- Logging error ---" to stderr, ENOSPC as
  well, every 400 rows; the job goes on and exits 0 (it writes its count file as the good runs
  do) -- python swallows it;
- ``wc -l rows.csv`` with stdout closed (``exec >&-``; good runs: the count file): the lowest free
  descriptor is 1, so wc's open of its input returns fd 1 (read-only) -- its first failing call is
  ``write(1</.../rows.csv>, "2000 ...\\n", 62) = -1 EBADF``, its report written to the file it
  read (no fstat of fd 1 before it; wc closed its input first, so close_stdout's close(1) fails
  EBADF too), "wc: write error: Bad file descriptor", exit 1. (Of the tools tried with ``>&-``: ls,
  wc, sha1sum, nl, od, seq, cut, tr, fold, grep, sed, uniq, uname, id, env and coreutils printf
  notice, exit non-zero; ``jq`` (only its isatty fails EBADF), ``hostname`` (write EBADF, exit 0)
  and ``python3 -c print(...)`` (sys.stdout is None: nothing written, exit 0) do not;)
- ``tr a-z A-Z`` with stdin closed (``exec <&-``; good runs: stdin the names file):
  ``fadvise64(0, 0, 0, POSIX_FADV_SEQUENTIAL) = -1 EBADF`` (ignored), then ``read(0, ...) = -1
  EBADF``, "tr: read error: Bad file descriptor", exit 1 -- both calls are the closed stdin's;
- ``sha1sum`` with stdout opened read-only (``exec 1< SHA1SUMS``, the ``<`` for ``>`` slip; good
  runs: ``exec 1> SHA1SUMS``): fstat(1) succeeds, ``write(1</.../SHA1SUMS>, ..., 112) = -1
  EBADF``, "sha1sum: write error: Bad file descriptor", exit 1;
- perl warning about the rows it skips (``warn``: unbuffered writes to stderr) with stderr
  appended to ``log/job.err`` on a 64 KiB tmpfs mounted in a private mount namespace
  (``unshare -m``, then ``mount -t tmpfs``; the launcher's conf first preallocates another job's
  ``debug.log`` there with ``fallocate -l``: 8 KiB in good runs, 60 KiB in the bad run): the
  first writes fit, then ``write(2</.../log/job.err>, ..., 70) = -1 ENOSPC`` and every later
  warning fails too; perl goes on, prints its count and exits 0;
- ``cut -d, -f1,3 load.csv | python3 consumer``: the consumer (python3, summing the load column)
  crashes on the bad run's row 150 ("n/a": ValueError, traceback, exit 1) after reading its first
  8 KiB; cut, writing 4096-byte blocks into the pipe (full: 64 KiB), gets ``write(1<pipe:[...]>,
  ..., 4096) = -1 EPIPE`` and dies of SIGPIPE -- the run's only failing call (the good runs'
  cut wrote all 196 blocks; the consumer's crash is no system call).

Noise cases (``QUIET_SIXTYNINTH``): five good runs each, the behaviour alternating (two modes,
``NOISE_MODES``), each run diffed against the other four, and run 1 (the second mode) against
only runs of the first; same output, exit 0 every run. What strace -f showed varying (5 runs each
alone, 5 beside two busy loops):

- ``seq 1 N | head -n 1``: with N = 2000 (8893 bytes: two writes, both fitting in the pipe) seq
  mostly finishes before head exits (6 of 6 alone), or its second write fails EPIPE and SIGPIPE
  kills it (1 of 3 beside two busy loops); with N = 200000 seq always meets EPIPE, after 3 or
  18 writes, and dies of SIGPIPE;
- ``yes | head -n 5``, head starting at once or after 0.2 s: yes always dies of SIGPIPE, its tenth
  8 KiB write failing EPIPE (10 of 10 runs, alone and under load) -- what varies is how far head
  had read when yes blocked;
- a python3 filter reading stdin that is a pipe from cat (``ioctl(0<pipe:[...]>, TCGETS) = -1
  ENOTTY``, ``lseek(0) = -1 ESPIPE``) or a spool file cat wrote first (``ioctl TCGETS ENOTTY`` on
  the file, ``lseek = 0``); its isatty check answers no in both;
- a python3 worker that closes the descriptors it may have inherited (the classic daemon loop,
  ``os.close(fd)`` for fd 3..31, EBADF ignored), launched with fds 3 and 4 open (a lock and the
  launcher's log: close = 0, 0, then 27 EBADF) or with none (29 EBADF), alone and under load;
- ``tar -cf`` of an absolute path, whose "Removing leading `/' from member names" goes to
  stderr, which is /dev/null or a file (``exec 2> ...``): the same write, another target;
- two writers sharing one log through ``2>&1`` (each writes 20 lines to stdout and 20 to stderr),
  the second starting at once or after 0.1 s: with the delay A's 40 lines then B's; at once, A
  first (2 of 3 alone, 1 of 3 under load), or the two interleaved, or B mostly first.
"""

from __future__ import annotations

from pathlib import Path

from .files import write_file
from .harness import NoAnomalyCase, Scenario, sh_argv

WRITE = frozenset({"write", "writev", "pwrite64"})
READ0 = frozenset({"read", "fadvise64"})
NO_PATH = ""  # a closed descriptor: strace shows no path for the call
RUNS = 5  # noise cases: each run against the other four

# the job scripts: the launcher's stdio configuration, then the program
LOGGING_SH = '. "$1/stdio.conf"; exec /usr/bin/python3 -S -c "$2" "$1/rows.csv" "$1/count"'
DATE_SH = '. "$1/stdio.conf"; exec date -u +"%F %T build stamp"'
WC_SH = '. "$1/stdio.conf"; exec wc -l "$1/rows.csv"'
TR_SH = '. "$1/stdio.conf"; exec tr a-z A-Z > "$1/NAMES"'
SHA1_SH = '. "$1/stdio.conf"; cd "$1/rel" && exec sha1sum app.bin lib.so'
PERL_SH = ('mount -t tmpfs -o size=64k,mode=0755 t69log "$1/log" && . "$1/stdio.conf" '
           '&& exec perl "$1/job.pl" "$1/rows.csv"')
CUT_SH = 'cut -d, -f1,3 "$1/load.csv" | /usr/bin/python3 -S -c "$2" > "$1/summary"'

LOGGING_PY = r"""
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
log = logging.getLogger("sync")
n = 0
for line in open(sys.argv[1]):
    n += 1
    if n % 400 == 0:
        log.info("synced %d rows", n)
open(sys.argv[2], "w").write("%d\n" % n)
"""
JOB_PL = r"""use strict; use warnings;
my ($in) = @ARGV;
open(my $fh, "<", $in) or die "open $in: $!";
my ($n, $skipped) = (0, 0);
while (my $line = <$fh>) {
    chomp $line;
    my ($id, $host, $load) = split /,/, $line;
    if ($load !~ /^[0-9.]+$/) { warn "skipping row $id of $in: load '$load' is not a number\n"; $skipped++; next; }
    $n++;
}
print "$n rows, $skipped skipped\n";
"""
CONSUMER_PY = r"""
import sys
total, n = 0.0, 0
next(sys.stdin)
for line in sys.stdin:
    i, load = line.rstrip("\n").split(",")
    total += float(load)
    n += 1
print("%d rows, mean load %.3f" % (n, total / n))
"""


def _rows(bad_row: int | None = None, n: int = 2000, every: int = 25) -> str:
    """Host load rows; every `every`th a 'n/a' (perl skips those, warning)."""
    rows = []
    for i in range(n):
        load = "n/a" if (every and i % every == 0) or i == bad_row else f"{i % 97}.{i % 1000:03d}"
        rows.append(f"{i},host-{i % 40:02d},{load}")
    return "\n".join(rows) + "\n"


def _conf(base: Path, text: str) -> None:
    write_file(base / "stdio.conf", text + "\n")


def _date_setup(base: Path, bad: bool) -> None:
    _conf(base, "exec > /dev/full" if bad else 'exec > "$1/stamp"')


def _logging_setup(base: Path, bad: bool) -> None:
    write_file(base / "rows.csv", _rows(every=0))
    _conf(base, "exec 2> /dev/full" if bad else 'exec 2>> "$1/sync.log"')


def _wc_setup(base: Path, bad: bool) -> None:
    write_file(base / "rows.csv", _rows(every=0))
    _conf(base, "exec >&-" if bad else 'exec > "$1/count"')


def _tr_setup(base: Path, bad: bool) -> None:
    write_file(base / "names.txt", "".join(f"host-{i:02d}.rack{i % 4}\n" for i in range(40)))
    _conf(base, "exec <&-" if bad else 'exec < "$1/names.txt"')


def _sha1_setup(base: Path, bad: bool) -> None:
    for name in ("app.bin", "lib.so"):
        write_file(base / "rel" / name, (name * 400).encode())
    write_file(base / "SHA1SUMS", "0" * 40 + "  app.bin\n")  # last release's, to be replaced
    _conf(base, 'exec 1< "$1/SHA1SUMS"' if bad else 'exec 1> "$1/SHA1SUMS"')


def _perl_setup(base: Path, bad: bool) -> None:
    write_file(base / "rows.csv", _rows())
    write_file(base / "job.pl", JOB_PL)
    (base / "log").mkdir()
    # another job's debug log already on the log tmpfs (64 KiB): 8 KiB, or 60 KiB in the bad run
    fill = 61440 if bad else 8192
    _conf(base, f'fallocate -l {fill} "$1/log/debug.log"; exec 2>> "$1/log/job.err"')


def _cut_setup(base: Path, bad: bool) -> None:
    write_file(base / "load.csv", "id,host,load\n" + _rows(bad_row=150 if bad else None, n=40000, every=0))


def _sc(name, program, argv, setup, probe, errno, path, description=""):
    return Scenario(name, program, argv, setup, probe, errno, path, description=description)


REAL_SIXTYNINTH: list[Scenario] = [
    _sc("t69_date_stamp_sent_to_dev_full", "date -u (stdout: exec > /dev/full)",
        sh_argv(DATE_SH), _date_setup, WRITE, "ENOSPC", lambda b: "/dev/full",
        description="stdout is /dev/full: date's one write fails ENOSPC, 'write error', exit 1"),
    _sc("t69_python_logging_stderr_sent_to_dev_full", "python3 logging (stderr: exec 2> /dev/full)",
        sh_argv(LOGGING_SH, LOGGING_PY), _logging_setup, WRITE, "ENOSPC", lambda b: "/dev/full",
        description="stderr is /dev/full: every log record's write fails ENOSPC, swallowed, exit 0"),
    _sc("t69_wc_stdout_closed_by_launcher", "wc -l (stdout closed: exec >&-)",
        sh_argv(WC_SH), _wc_setup, WRITE, "EBADF", lambda b: f"{b}/rows.csv",
        description="stdout closed: wc's input file opens as fd 1, the write to it fails EBADF, exit 1"),
    _sc("t69_tr_stdin_closed_by_launcher", "tr a-z A-Z (stdin closed: exec <&-)",
        sh_argv(TR_SH), _tr_setup, READ0, "EBADF", lambda b: NO_PATH,
        description="stdin closed: fadvise64(0) and read(0) fail EBADF, 'read error', exit 1"),
    _sc("t69_sha1sum_stdout_opened_read_only", "sha1sum (stdout: exec 1< SHA1SUMS)",
        sh_argv(SHA1_SH), _sha1_setup, WRITE, "EBADF", lambda b: f"{b}/SHA1SUMS",
        description="stdout opened for reading: the write of the sums fails EBADF, exit 1"),
    _sc("t69_perl_warnings_to_a_full_tmpfs_log", "perl (warn; stderr: a log on a full tmpfs, unshare -m)",
        lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", PERL_SH, "sh", str(b)], _perl_setup, WRITE,
        "ENOSPC", lambda b: f"{b}/log/job.err",
        description="the log tmpfs is full: perl's warnings to stderr fail ENOSPC, perl exits 0"),
    _sc("t69_cut_consumer_crashes_on_a_bad_row", "cut -d, -f1,3 | python3 consumer",
        sh_argv(CUT_SH, CONSUMER_PY), _cut_setup, WRITE, "EPIPE", lambda b: "pipe:*",
        description="the consumer crashes on row 150: cut's write into the pipe fails EPIPE, SIGPIPE"),
]


# --- good runs whose streams differ by timing or by design ----------------------------------------------------------
SEQ_SH = 'read n < "$1/mode"; seq 1 "$n" | head -n 1 > "$1/first"'
YES_SH = 'read d < "$1/mode"; yes "queue item ready" | { sleep "$d"; head -n 5; } > "$1/items"'
FILTER_PY = r"""
import sys
interactive = sys.stdin.isatty()
lines = [l.strip() for l in sys.stdin if l.strip() and not l.startswith("#")]
print("%d hosts%s" % (len(lines), " (interactive)" if interactive else ""))
"""
ISATTY_SH = ('read how < "$1/mode"; if [ "$how" = pipe ]; then cat "$1/hosts" | /usr/bin/python3 -S -c "$2" > "$1/out"; '
             'else cat "$1/hosts" > "$1/spool" && /usr/bin/python3 -S -c "$2" < "$1/spool" > "$1/out"; fi')
CLOSER_PY = r"""
import os, sys
for fd in range(3, 32):  # a daemon's start: close whatever the launcher left open
    try:
        os.close(fd)
    except OSError:
        pass
total = sum(int(l.split(",")[0]) for l in open(sys.argv[1]))
open(sys.argv[2], "w").write("%d\n" % total)
"""
CLOSER_SH = ('read fds < "$1/mode"; if [ "$fds" = open ]; then exec 3< "$1/lock" 4>> "$1/launcher.log"; fi; '
             'exec /usr/bin/python3 -S -c "$2" "$1/rows.csv" "$1/total"')
TAR_SH = 'read err < "$1/mode"; exec 2> "$err"; exec tar -cf "$1/conf.tar" "$1/conf"'
WRITER_SH = ('w() { i=0; while [ $i -lt 20 ]; do echo "$1 out $i"; echo "$1 err $i" >&2; i=$((i + 1)); done; }; '
             'read d < "$1/mode"; { w A & sleep "$d"; w B; wait; } > "$1/job.log" 2>&1')

# a noise case -> the behaviour of its runs, in turn (run i: modes[i % len(modes)])
NOISE_MODES: dict[str, list[str]] = {
    "t69_seq_head_one_line_producer_finishes_or_is_cut": ["2000", "200000"],
    "t69_yes_head_five_lines_reader_late_or_not": ["0", "0.2"],
    "t69_python_filter_stdin_pipe_or_spool_file": ["pipe", "file"],
    "t69_python_worker_closes_inherited_descriptors": ["none", "open"],
    "t69_tar_warning_stderr_to_null_or_a_file": ["/dev/null", "{b}/tar.err"],
    "t69_two_writers_share_one_log_2_to_1": ["0", "0.1"],
}


# a noise case whose second mode, by design, opens a file the first mode's runs never open -> that file: run 1
# against only runs of the first mode is then "a path no good run has", an error-free divergence
# (docs/diff-json.md, the ranking rule), not noise -- it is expected there, at that file, errno null
NEW_PATH_IN_SECOND_MODE: dict[str, str] = {
    "t69_python_filter_stdin_pipe_or_spool_file": "{b}/spool",
    "t69_python_worker_closes_inherited_descriptors": "{b}/lock",
    "t69_tar_warning_stderr_to_null_or_a_file": "{b}/tar.err",
}


def run_mode(name: str, run: int) -> str:
    modes = NOISE_MODES[name]
    return modes[run % len(modes)]


def _mode_setup(name: str, extra=None):
    def setup(base: Path, run: int) -> None:
        write_file(base / "mode", run_mode(name, run).replace("{b}", str(base)) + "\n")
        if extra:
            extra(base)
    return setup


def _hosts(base: Path) -> None:
    write_file(base / "hosts", "# rack 1\n" + "".join(f"host-{i:02d}\n" for i in range(24)))


def _closer_files(base: Path) -> None:
    write_file(base / "rows.csv", _rows(every=0, n=300))
    write_file(base / "lock", "")


def _tar_files(base: Path) -> None:
    for name in ("app.conf", "db.conf", "cache.conf"):
        write_file(base / "conf" / name, f"# {name}\nkey = value\n")


def _noise(name, argv, extra, description):
    return NoAnomalyCase(name, argv, _mode_setup(name, extra), runs=RUNS, description=description)


QUIET_SIXTYNINTH: list[NoAnomalyCase] = [
    _noise("t69_seq_head_one_line_producer_finishes_or_is_cut", sh_argv(SEQ_SH), None,
           "seq finishes before head exits, or its write fails EPIPE and SIGPIPE kills it"),
    _noise("t69_yes_head_five_lines_reader_late_or_not", sh_argv(YES_SH), None,
           "yes dies of SIGPIPE after 1-9 writes (head at once) or 8 (head 0.2 s late)"),
    _noise("t69_python_filter_stdin_pipe_or_spool_file", sh_argv(ISATTY_SH, FILTER_PY), _hosts,
           "isatty(0): ioctl TCGETS ENOTTY on a pipe (lseek ESPIPE) or on the spool file"),
    _noise("t69_python_worker_closes_inherited_descriptors", sh_argv(CLOSER_SH, CLOSER_PY), _closer_files,
           "close(3..31): two succeed and 27 EBADF, or 29 EBADF"),
    _noise("t69_tar_warning_stderr_to_null_or_a_file", sh_argv(TAR_SH), _tar_files,
           "tar's 'Removing leading /' written to /dev/null or to a file"),
    _noise("t69_two_writers_share_one_log_2_to_1", sh_argv(WRITER_SH), None,
           "two writers' stdout and stderr in one log: their order varies"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the tmpfs lives in the perl case's own mount namespace, gone with it."""
