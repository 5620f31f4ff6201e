"""Bad inputs, faults and signals against every CLI: rounds seven to twenty-one (run it as root).

    .venv/bin/python bench/robust_battery.py [--quick] [--seed N] [--group round9|...|round21 [--part P]] [--verbose]

Each case runs a real command in a subprocess and checks the edges' contract: exit status in the
allowed set, no traceback, no "internal error", at most one line on stderr for a failure, no
hung command (timeout), no hidden temporary left behind, no death by a signal. Inputs are built
here: traces written by pyarrow with other writers' options (dictionary off, dictionary-typed
columns, large/view strings, 1-row row groups, zero rows, extra/missing/reordered columns,
narrower or wider integers, timestamps in us, Parquet 1.0, other schema versions, no tracebase
metadata as polars writes), learned-allowlist YAML edited by hand (wrong types, unknown keys,
unicode, NUL, anchors, huge), `audit --since` edge values, datasets with odd partitions, -p
targets (a zombie, a kernel thread, a thread id, a PID namespace), low RLIMIT_NOFILE, and
SIGTERM/SIGINT/SIGHUP at random instants into every writer. Round eight adds: closed stdin/
stdout/stderr and a stdout on /dev/full; the environment (POLARS_MAX_THREADS, LANG=C/POSIX, odd
TZ, no HOME, a missing TMPDIR, PYTHONWARNINGS=error, a strict stdout encoding with a non-UTF-8
output name); a removed current directory; umask 077/000/027 output modes; valid Parquet with
odd values (all-null, struct and list columns, pid 0, int64 extremes, times before 1970, other
types under the same names, reversed and duplicated rows, five codecs, v1/v2 pages, 10k row
groups); a corrupt events file for expected learn/learn/audit; ingest into its own spool; kill -9 at a random instant into
every writer, then the same command again (it must succeed and leave what an unkilled run
leaves); the library's public functions called with wrong types. Round nine (`--group round9`
runs only it, after the shared inputs): `-o -` on every writer (stdout where the format allows,
else refused); `--help`/`--version` on /dev/full, buffered and unbuffered; a reader that stops
early (`| head -c 1`) on every large output; ENOSPC on a small tmpfs at several fill levels,
EROFS and EACCES (as nobody) at every writer's output, no half file left; outputs that are a
FIFO, a directory, /dev/null, a dangling symlink, a link loop, a name too long, the command's
own input; Parquet truncated at every region, /proc and /dev files, a link loop and a directory
as inputs; allowlist glob bombs (braces, stars, classes), billion laughs and deep nesting; a
3000-file dataset and one mixing schema versions; kill -9 of `tracer record` and `tracer run
--spool` (no BPF program left loaded, the trace whole or absent, the rerun succeeds; under
/tmp/tracebase-real.lock); a fresh machine (no HOME, TMPDIR unset or a file, a read-only /tmp,
`python -m` from another cwd). Round ten (`--group round10`): allowlist YAML with 5,000-digit
and 40-digit integers, .inf, hex, more runs than total, a BOM, latin-1, CRLF, two documents, a merge key, a lone
surrogate, dates and numbers where strings belong; valid Parquet of the wrong shape (another time
zone or unit, int32/int64/uint32/decimal, large_binary, dictionary<int8>, 160,000 rows in one row
group, a list<struct> column, a counters file given as a trace, and such files, a 0-byte part and
a directory named *.parquet inside a dataset); LANG=C with non-ASCII paths, TMPDIR on a full
tmpfs; ingest onto a full tmpfs at four fill levels (no empty tree, the rerun completes); two
runs of every writer on one output started together (both succeed, the output whole); `ulimit
-v` 450-700 MB (no hang, no abort: one line or done) and `ulimit -f` 0/8/64 (EFBIG: one line, no
half file). Round eleven (`--group round11`): SIGTERM at random instants of `learn` of the 10,000-host
day (/tmp/work/day10k, when present: the exit within 1.5 s, no temporary); an audit output whose
`.current` is a file or a directory; input paths with a trailing slash, a symlink loop, `-`, a
socket, a FIFO, /dev/zero, a 50 GiB sparse file, /proc files; TZ set to odd zones with times
without an offset; the pipeline's task functions with wrong arguments; a dataset on a read-only
ext4 loop mount; kill -9 at 20 random instants of every writer (5 with --quick), the rerun's
visible output compared by content with two uninterrupted runs. Round twelve (`--group round12`):
kill -9 of the whole process group at 10 random instants (3 with --quick) of every writer
(learn, audit -o, expected learn, coverage, export, allowlist learn, simulate --workers 2,
ingest -j 2 with compaction into a dataset holding a first batch, the DAG task functions in
order), then the readers on what is left (every visible Parquet file whole, no events row read
twice, `baseline learn` of each dataset finishing or one line) and the same command again,
compared by content; kill -9 of a pool's parent alone (ingest -j 2, simulate --workers 2: the
workers end within 3 s); kill -9 of `tracer record -o` and `tracer run --spool` (root), the
spool then ingested. Round thirteen (`--group round13`, root; the tracer of this tree, run as
`python -m tracer.cli`): `tracer run` for a long time on a real host. One daemon through the
spool's faults in turn (a tmpfs filled then freed, `mount -o remount,ro` then rw, its host
directory deleted, the spool replaced by a file, the textfile directory removed, the control
file a directory, the metadata file rewritten as a FIFO, with a duplicate key, huge, with a
syntax error: it logs, goes on, exits 0, the spool whole and in sequence); SIGSTOP for 10 s
while its -p target fails 20,000 times (counters exact), a SIGUSR1 storm, SIGHUP; SIGTERM amid
0.1 s snapshots; kill -9 at random instants then a restart on the same spool; -p of a process
that exits while the probes attach; `tracer record` of a command that execs a setuid binary,
closes its fds, forks 2,000 children, is killed, never exits (-d), loses its output directory;
RLIMIT_NOFILE 64, RLIMIT_MEMLOCK 4 KiB, `ulimit -v` 1 GiB, odd --ringbuf-kb/-i/-d/--examples/
--sample; tracefs and debugfs unmounted, /sys/fs/bpf absent, no HOME, LANG=C with a non-ASCII
spool, the cwd removed, a read-only /tmp. Every case also checks that no BPF program the
command held is still loaded after it exits (tests/test_robust_thirteenth.py has the fast
regressions). Round fourteen (`--group round14`; the code of this tree, run with PYTHONPATH set
to it): the secondary path options (diff --allowlist/--learned, audit --model/--allowlist/--html,
evaluate --findings, coverage --probes/--nccl-logs, learn --expected-out, probes check SET) given
a directory, a FIFO, /dev/full, a dangling symlink, a 4096-byte name, and as nobody a file or
directory it may not use; a saved model truncated, of schema version 99, without metadata,
with no rows, dictionary-encoded, with a column of the wrong type, not Parquet; the learned list
`baseline diff` picks up from the cwd with a key twice, wrong types, 20 MB, latin-1, as a FIFO
or a directory (allowlist learn leaves it byte for byte); TMPDIR unwritable or a file with no
HOME and LANG=C on every writer; SIGINT twice and SIGTERM then SIGKILL into every writer, then
a reader and the rerun; umask 002/077 on audit/--html, coverage, --expected-out, ingest; and
robust13's leftovers (-i out of 100ms..1h, a spool whose clock stepped back, `tracer record`
losing its output directory: tests/test_robust_fourteenth.py). Round fifteen (`--group round15`,
`--part numbers|parquet|streams|two|sweep|tracer|leftovers`; the code of this tree): kill -9 of the process
group at 10 instants spread evenly over each writer's uninterrupted run (4 with --quick; learn,
audit, allowlist learn, simulate, export, coverage, expected learn), then what a reader sees
whole, the documented glob `<table>/**/*.parquet` read by polars with nothing under a dot name,
the rerun equal by content, no temporary left; two writers of different inputs on one output,
the second started at 0, 1/3 and 2/3 of the first's run (one whole output, never a mix); a
stdout pipe whose reader has gone before the first write, and an error reported with stderr on
/dev/full, a gone stderr reader, or stdout and stderr closed; every numeric option given -1, 0,
nan, inf, 1e309, 2**64, '5 s', Arabic-Indic digits, ''; odd part files inside a dataset and odd
traces (extra/missing columns, schema version 99, a nested type, no row groups, CSV, JSON,
empty, a directory); `tracer record` (default output name) and `tracer run --spool` stopped at
12 instants spread over their run (6 with --quick) by kill -9, SIGTERM and SIGINT in turn and
by kill -9 the moment a temporary shows (a trace or snapshot being written), then
the readers, `baseline ingest` of the spool, the command again under another name and no
temporary left (tests/test_kill_tracer.py); and robust14's leftovers (tests/test_robust_fifteenth.py). Round
sixteen (`--group round16`, `--part snapshots|limits|gone|env|mounts|inputs|leftovers`; this tree):
`ingest -j 2` and `-j 1` of a spool with one odd snapshot (truncated, empty, a directory, a FIFO,
/dev/zero through a symlink, a symlink loop, CSV, schema version 99, a column of another type, no
counters file, the snapshot a file: named, quarantined or refused in one line, the dataset read
whole by the documented glob); every writer (learn, audit, audit --html, expected learn, export,
allowlist learn, simulate, simulate --workers 2, coverage, ingest, ingest -j 2) and diff/evaluate
under `ulimit -n 16`, `ulimit -v` 250/400 MB and `ulimit -f 1`; every writer's output directory
removed at 1/4, 1/2 and 3/4 of its run; HOME unset with LANG=C into a non-UTF-8 output name,
TMPDIR a file or missing, TZ odd (Mars/Olympus, UTC+99, :/etc/passwd, 300 bytes); every writer's
output on a 64 KiB tmpfs and on a read-only bind mount; every reader's input a socket, a FIFO
with no writer, /dev/zero, /proc/self/status, a file with a trailing slash, '..' through a
missing directory, a 4096-byte name, a symlink loop; and robust15's leftovers
(tests/test_robust_sixteenth.py). Round seventeen (`--group round17`, `--part
argv|parquet|concurrent|kill9|leftovers`; this tree): argument shapes (a flag given twice, `--`
before the positionals, options before, between and after them, `-` as a path, names with a
leading dash or a newline, for every command: the status, one line, the output under exactly
the name given, whole); `ingest` of a snapshot rewritten by another writer (large/view strings,
dictionary on/off, dictionary-typed columns, a 0-row row group first, zero rows, nulls in a
non-null column, every column nullable, schema version 9999 and 1.9: the rows as the clean
file's, or quarantined and named); two `ingest`s of different spools into one dataset (second
at 0, 1/3, 2/3) and two `tracer record -o same.parquet` at once; kill -9 of the group at 8
random instants (0.05-3 s; 3 with --quick) of every writer, `tracer record` and `tracer run
--spool` included (every output present whole, the next run succeeds, no temporary left after
it); and robust16's leftovers (tests/test_robust_seventeenth.py). Round eighteen (`--group round18`,
`--part utf8|clock|keep|leftovers`; this tree): strings that are not UTF-8 inside Parquet (a
trace's comm, path, errno, command or trace_id for diff, diff --json, export and allowlist
learn; a dataset part's comm for learn, audit, expected learn and coverage; a spool snapshot's
comm for ingest, then audit and expected learn of the dataset it made) and a trace with a column
given twice; a clock set back (a killed tracer's spool temporaries dated a day and a year ahead,
+10 min and -1 min; snapshots named a year ahead); ENOSPC over an earlier output (every writer
run once on a tmpfs, the tmpfs then filled to leave 0 to 2x the output's size free and the writer
run again: a failure leaves the earlier output as it was, by content, no temporary either way);
and tests/test_robust_eighteenth.py. Round nineteen (`--group round19`, `--part
signals|limits|env|values|streams|polars|leftovers`; this tree): a parent that ignores SIGCHLD (`tracer
record -- CMD` ending 7, 0, by SIGTERM, through a grandchild: CMD's status and a whole trace;
ingest -j 2, simulate --workers 2) and one that ignores SIGINT/SIGTERM/SIGHUP/SIGPIPE; every
writer and diff under `ulimit -s` 256 KiB, 1 MiB, unlimited; COLUMNS 1/0/-5/10**20/'wide' for
every --help and a diff, OPENBLAS_NUM_THREADS and OMP_NUM_THREADS odd; valid Parquet whose
values sit at the edges (times at the ends of the int64 ns range and at 1970, int64 extremes,
negative counts in a counters file, a nan/0/negative interval, a zero-row row group first), as
a dataset part for learn/audit/expected learn/coverage and as a spool snapshot for ingest then
audit and expected learn; every --json command to `| head -c 10`, `>&-`, /dev/full, `2>&-`;
traces, dataset parts and spool snapshots written by polars (large_list, large_string) for every
reader; and tests/test_robust_nineteenth.py. Round twenty (`--group round20`, `--part
inputs|locks|counts|days|signals|mounts|leftovers`; this tree): `baseline diff` of a zero-event
trace (as BAD, among GOOD), a GOOD of schema version 99, GOOD traces of two commands (with and
without --mixed), the same file or a copy as GOOD and BAD, a trace still being written (a
writer's hidden temporary, cut short); `tracer record` of a command not found, a directory, a
file without execute permission, a script whose #! interpreter is missing, a command killed by
SIGKILL/SIGTERM (the status a shell gives, one line, the trace whole when CMD ran); a lock held
by a stopped process (`allowlist learn -o` into its directory, `audit` of a dataset an ingest
holds: a line naming the holder within 10 s, done once it lets go); counters no interval can
hold (failures above invocations, errno counts above failures; a counter reset as a guard) in a
spool snapshot (quarantined) and a dataset part (learn, audit, coverage: 0 or one line); a
compacted date whose day-0000 was removed by hand, the spool re-sent (no row twice), and kill -9
of the day compaction at random instants while `baseline export` reads the dataset in a loop
(each export the uninterrupted one byte for byte, or one line); SIGTERM and SIGINT at random
instants of ingest with day compaction, learn, audit, coverage, allowlist learn and diff over an
earlier output; a 2 MiB tmpfs filling up under ingest (then the rerun with room: no row twice),
the output's tmpfs lazily unmounted mid-run (audit, learn, coverage), a date directory
bind-mounted read-only under the day compaction, ingest -j 1/-j 2 of 40 hosts under `ulimit -n
24`; and tests/test_robust_twentieth.py. Prints one line per failed case (with --verbose every
case) and a summary; exit 1 if any case failed. The fast suite's regressions for what this found are in tests/test_robust_edges.py,
tests/test_robust_eighth.py, tests/test_robust_ninth.py, tests/test_robust_tenth.py and
tests/test_bad_inputs.py.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tracer import schema  # noqa: E402

BIN = Path(sys.executable).parent
NOW = dt.datetime(2026, 11, 28, 0, 30, tzinfo=dt.UTC)
PROGRAM = [("execve", 0, None, "/usr/bin/job"), ("openat", 3, None, "/etc/ld.so.cache"), ("close", 0, None, None),
           ("openat", 3, None, "/srv/job/config.ini"), ("read", 120, None, None), ("close", 0, None, None),
           ("openat", 3, None, "/srv/job/data/rows.jsonl"), ("read", 4096, None, None), ("exit_group", 0, None, None)]
BAD = PROGRAM[:6] + [("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"), ("exit_group", 1, None, None)]


@dataclass
class Result:
    case: str
    ok: bool
    detail: str


def events(trace_id: str, program: list, pid: int, kind: str) -> pa.Table:
    rows = [{"trace_id": trace_id, "seq": i, "ts_ns": 1000 * i, "pid": pid, "tid": pid, "ppid": 1, "comm": "job",
             "probe": probe, "layer": "syscall", "depth": 0, "ret": ret, "errno": errno, "latency_ns": 500,
             "path": path, "kind": kind, "command": "./job", "exit_status": 0, "start_time": NOW, "end_time": NOW,
             "host": "h1"} for i, (probe, ret, errno, path) in enumerate(program)]
    return pa.Table.from_pylist(rows, schema=schema.EVENTS)


def write(table: pa.Table, path: Path, schema_version: str = str(schema.SCHEMA_VERSION), meta: bool = True,
          **kw) -> Path:
    kv = {schema.META_TABLE: b"events", schema.META_VERSION: schema_version.encode()} if meta else None
    pq.write_table(table.replace_schema_metadata(kv), path, **kw)
    return path


def retype(table: pa.Table, name: str, to: pa.DataType) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, to, table.schema.field(i).nullable), table.column(i).cast(to))


def strings_as(table: pa.Table, how) -> pa.Table:
    return pa.table([how(c) if pa.types.is_string(c.type) else c for c in table.columns], names=table.column_names)


def trace_variants(d: Path) -> dict[str, tuple[Path, set[int]]]:
    """name -> (bad trace written another way, allowed exit statuses of `baseline diff`)."""
    b = events("b1", BAD, 30, "failure")
    v: dict[str, tuple[Path, set[int]]] = {}
    same, refused = {1}, {2}
    v["nodict"] = (write(b, d / "nodict.parquet", use_dictionary=False), same)
    v["rowgroup1"] = (write(b, d / "rg1.parquet", row_group_size=1), same)
    v["zero-rows"] = (write(b.slice(0, 0), d / "zero.parquet"), refused)
    v["large-string"] = (write(strings_as(b, lambda c: c.cast(pa.large_string())), d / "large.parquet"), same)
    v["string-view"] = (write(strings_as(b, lambda c: c.cast(pa.string_view())), d / "view.parquet"), same)
    v["dictionary-typed"] = (write(strings_as(b, lambda c: c.dictionary_encode()), d / "dict.parquet"), same)
    v["extra-column"] = (write(b.append_column("zz", pa.array([1] * len(b))), d / "extra.parquet"), same)
    v["reordered"] = (write(b.select(list(reversed(b.column_names))), d / "reorder.parquet"), same)
    v["missing-kind"] = (write(b.drop(["kind"]), d / "missing.parquet"), refused)
    v["seq-int32"] = (write(retype(b, "seq", pa.int32()), d / "seq32.parquet"), refused)
    v["ts-timestamp"] = (write(retype(b, "ts_ns", pa.timestamp("ns")), d / "tsts.parquet"), refused)
    v["ts-uint64"] = (write(retype(b, "ts_ns", pa.uint64()), d / "tsu64.parquet"), refused)
    # Parquet 1.0 stores the timestamps in us: read (cast) or refused naming the column, both fine
    v["parquet-1.0-us"] = (write(b, d / "v1.parquet", version="1.0", data_page_version="2.0"), {1, 2})
    v["schema-v1"] = (write(b, d / "sv1.parquet", schema_version="1"), same)
    v["schema-v99"] = (write(b, d / "sv99.parquet", schema_version="99"), refused)
    v["no-metadata"] = (write(b, d / "nometa.parquet", meta=False), refused)
    pl.from_arrow(b).write_parquet(d / "polars.parquet")
    v["polars-written"] = (d / "polars.parquet", refused)
    path = b.schema.get_field_index("path")
    odd = b.set_column(path, b.schema.field(path), pa.array(["/srv/\x1b[31m\n\u202e\x00x"] * len(b)))
    v["control-chars"] = (write(odd, d / "odd.parquet"), same)
    return v


def yaml_variants(d: Path) -> dict[str, tuple[Path, set[int]]]:
    entry = ("  - id: learned-enoent-openat-0123456789\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
             "    path: /srv/job/cache\n    support:\n      runs: 2\n      total: 2\n"
             "    first_seen: '2026-11-29T10:00:00Z'\n    last_seen: '2026-11-29T11:00:00Z'\n")
    base = "version: 1\nentries:\n" + entry
    ok, refused = {0, 1}, {2}
    texts = {
        "empty": ("", ok), "null": ("null\n", ok), "list": ("- a\n", refused), "version-true": (base.replace("version: 1", "version: true"), refused),
        "version-str": (base.replace("version: 1", "version: '1'"), refused), "entries-dict": ("version: 1\nentries: {a: 1}\n", refused),
        "unknown-key": (base + "    colour: red\n", refused), "probe-int": (base.replace("probe: openat", "probe: 42"), refused),
        "errno-lower": (base.replace("errno: ENOENT", "errno: enoent"), refused), "runs-bool": (base.replace("runs: 2", "runs: true"), refused),
        "runs-negative": (base.replace("runs: 2", "runs: -1"), refused), "date-text": (base.replace("'2026-11-29T10:00:00Z'", "yesterday"), refused),
        "date-native": (base.replace("'2026-11-29T10:00:00Z'", "2026-11-29"), refused),
        "path-unicode": (base.replace("/srv/job/cache", "'/srv/\u00e9\U0001F600\u202e'"), ok),
        "path-nul": (base.replace("/srv/job/cache", '"/srv/a\\0b"'), ok), "path-badglob": (base.replace("/srv/job/cache", "'/srv/[z-a'"), ok),
        "dup-key": (base.replace("    probe: openat\n", "    probe: openat\n    probe: read\n"), refused),
        "dup-id": (base + entry, refused), "tab": (base.replace("    probe", "\tprobe", 1), refused),
        "python-tag": ("version: 1\nentries: !!python/object/apply:os.system ['true']\n", refused),
        "deep": ("version: 1\nentries: " + "[" * 5000 + "]" * 5000 + "\n", refused),
        "anchors": ("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                    "d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nversion: 1\n", refused),
        "huge-reason": (base + "    reason: '" + "x" * (8 << 20) + "'\n", ok),
    }
    out = {}
    for name, (text, codes) in texts.items():
        (d / f"{name}.yaml").write_text(text)
        out[name] = (d / f"{name}.yaml", codes)
    (d / "binary.yaml").write_bytes(bytes(range(256)))
    out["binary"] = (d / "binary.yaml", refused)
    (d / "utf16.yaml").write_bytes(base.encode("utf-16"))
    out["utf16"] = (d / "utf16.yaml", refused)
    return out


def run(argv: list[str], cwd: Path, codes: set[int], timeout: float = 120, limit_files: int | None = None) -> tuple[bool, str]:
    tool, *rest = argv
    pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))) if limit_files else None
    try:
        proc = subprocess.run([str(BIN / tool), *rest], cwd=cwd, capture_output=True, timeout=timeout, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        return False, f"hung > {timeout:g}s"
    err = proc.stderr.decode("utf-8", "backslashreplace")
    lines = [line for line in err.splitlines() if line.strip()]
    bad = ("Traceback" in err or "internal error" in err or proc.returncode not in codes
           or (proc.returncode == 2 and len(lines) != 1))
    return not bad, f"exit {proc.returncode}: {err.strip()[-300:]}"


def signal_trials(cwd: Path, fleet: Path, traces: list[Path], rng: random.Random, per: int) -> list[Result]:
    out_dir = cwd / "sig-out"
    writers = {
        "audit": ["baseline", "audit", str(fleet), "-o", str(out_dir / "audit")],
        "learn": ["baseline", "learn", str(fleet), "-o", str(out_dir / "model.parquet")],
        "coverage": ["baseline", "coverage", str(fleet), "-o", str(out_dir / "cov")],
        "simulate": ["baseline", "simulate", "--hosts", "4", "--hours", "1", "--seed", "1", "-o", str(out_dir / "sim")],
        "allowlist": ["baseline", "allowlist", "learn", *map(str, traces), "-o", str(out_dir / "al.yaml")],
        "export": ["baseline", "export", str(traces[0]), "-o", str(out_dir / "x.json")],
    }
    want = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 130, signal.SIGHUP: 128 + signal.SIGHUP}
    results = []
    for name, argv in writers.items():
        for sig in want:
            for _ in range(per):
                shutil.rmtree(out_dir, ignore_errors=True)
                out_dir.mkdir()
                # (from 0.3 s: a SIGINT in CPython's own start-up, while site.py reads the venv's
                # .pth files, is printed as a traceback by site.py and the program then runs on)
                delay = rng.uniform(0.3, 2.5)
                tool, *rest = argv
                proc = subprocess.Popen([str(BIN / tool), *rest], cwd=cwd, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
                time.sleep(delay)
                proc.send_signal(sig)
                _, err = proc.communicate(timeout=120)
                debris = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob(".*") if ".tmp" in p.name)
                # -sig: the signal came before the command's handlers (imports): nothing was
                # written yet, and a shell reports the same 128 + sig
                ok = (proc.returncode in (0, want[sig], -sig) and "Traceback" not in err and not debris)
                results.append(Result(f"signal {name} {sig.name} at {delay:.2f}s", ok,
                                      f"exit {proc.returncode}, debris {debris[:3]}, {err.strip()[-200:]}"))
    return results


# --------------------------------------------------------------------------------------------
# round eight: standard streams, the environment, odd Parquet values, kill -9, the library
# --------------------------------------------------------------------------------------------
def _sh(script: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(env or {})}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, timeout=timeout, env=full)


def _verdict(proc: subprocess.CompletedProcess, codes: set[int], words: str = "") -> tuple[bool, str]:
    err = proc.stderr.decode("utf-8", "backslashreplace")
    out = proc.stdout.decode("utf-8", "backslashreplace")
    lines = [line for line in err.splitlines() if line.strip()]
    ok = ("Traceback" not in err + out and "internal error" not in err + out and proc.returncode in codes
          and (proc.returncode != 2 or len(lines) <= 1) and words in err)
    return ok, f"exit {proc.returncode}: {err.strip()[-300:]}"


def stream_and_env_cases(base: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    g = " ".join(map(str, good))
    results = []
    # closed standard streams: the status a command would give with them open; the error line
    # is not printed into stdout
    for name, script, want in [
        ("diff >&-", f"baseline diff {g} {bad} >&-; echo rc=$? >&2", "rc=1"),
        ("export -o - >&-", f"baseline export {good[0]} -o - >&-; echo rc=$? >&2", "rc=0"),
        ("audit >&-", f"baseline audit {fleet} -o {base}/aud-c >&-; echo rc=$? >&2", "rc=0"),
        ("diff missing 2>&-", f"baseline diff {base}/missing.parquet {bad} 2>&-; echo rc=$? >&2", "rc=2"),
        ("learn 2>&-", f"baseline learn {fleet} -o {base}/m-c.parquet 2>&- >/dev/null; echo rc=$? >&2", "rc=0"),
        ("diff <&-", f"baseline diff {g} {bad} <&- >/dev/null; echo rc=$? >&2", "rc=1"),
        ("probes check >&- 2>&-", "tracer probes check syscalls >&- 2>&-; echo rc=$? >&2", "rc=0"),
    ]:
        proc = _sh(script, base)
        err = proc.stderr.decode("utf-8", "backslashreplace")
        results.append(Result(f"stream {name}", err.strip().endswith(want) and "Traceback" not in err
                              and "error" not in proc.stdout.decode(errors="replace"), err.strip()[-300:]))
    # a stdout that cannot be written: exit 2 naming <stdout>
    for name, script in [("diff", f"baseline diff {g} {bad}"), ("audit --json", f"baseline audit {fleet} -o {base}/aud-f --json"),
                         ("report", f"baseline report {base}/aud-f"), ("export -o -", f"baseline export {good[0]} -o -"),
                         ("probes check", "tracer probes check syscalls")]:
        ok, detail = _verdict(_sh(f"{script} >/dev/full", base), {2}, "<stdout>")
        results.append(Result(f"stdout /dev/full {name}", ok, detail))
    # the environment
    non_utf8 = os.fsencode(base) + b"/out-\xfe\n.yaml"
    envs: dict[str, tuple[dict, set[int] | None]] = {
        "POLARS_MAX_THREADS=0": ({"POLARS_MAX_THREADS": "0"}, {2}), "POLARS_MAX_THREADS=abc": ({"POLARS_MAX_THREADS": "abc"}, {2}),
        "POLARS_MAX_THREADS=1": ({"POLARS_MAX_THREADS": "1"}, None), "LANG=C": ({"LANG": "C", "LC_ALL": "C"}, None),
        "LC_ALL=POSIX": ({"LC_ALL": "POSIX"}, None), "TZ=Pacific/Chatham": ({"TZ": "Pacific/Chatham"}, None),
        "TZ=bogus": ({"TZ": "Not/AZone"}, None), "HOME unset": ({"HOME": ""}, None),
        "TMPDIR missing": ({"TMPDIR": "/nonexistent/tmp"}, None), "PYTHONWARNINGS=error": ({"PYTHONWARNINGS": "error"}, None),
        "stdout strict": ({"PYTHONIOENCODING": "utf-8:strict"}, None),
    }
    for name, (env, forced) in envs.items():
        for argv, codes in ((["baseline", "diff", *map(str, good), str(bad)], {1}),
                            (["baseline", "learn", str(fleet), "-o", str(base / "m-env.parquet")], {0}),
                            (["baseline", "allowlist", "learn", *map(str, good), "-o", non_utf8], {0})):
            tool, *rest = argv
            proc = subprocess.run([str(BIN / tool), *rest], cwd=base, capture_output=True, timeout=120,
                                  env={**os.environ, **env})
            ok, detail = _verdict(proc, forced or codes, "POLARS_MAX_THREADS" if forced else "")
            results.append(Result(f"env {name} {argv[1]}", ok, detail))
    # a removed current directory: relative outputs named for it, absolute paths still work
    for name, script, codes, words in [
        ("allowlist learn (default output)", f"baseline allowlist learn {g}", {2}, "current directory"),
        ("simulate -o rel", "baseline simulate --hosts 1 --hours 1 -o rel", {2}, "current directory"),
        ("export -o rel", f"baseline export {good[0]} -o x.json", {2}, "current directory"),
        ("diff absolute", f"baseline diff {g} {bad}", {1}, ""),
    ]:
        gone = base / "gone"
        gone.mkdir(exist_ok=True)
        ok, detail = _verdict(_sh(f"cd {gone} && rmdir {gone} && {script} >/dev/null", base), codes, words)
        results.append(Result(f"removed cwd {name}", ok, detail))
    # umask: files 0666 & ~umask, no world-writable directory
    for mask in (0o077, 0o000, 0o027):
        out = base / f"umask{mask:03o}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        os.chmod(out, 0o755)
        for script in (f"baseline simulate --hosts 1 --hours 1 -o {out}/sim", f"baseline export {good[0]} -o {out}/x.json",
                       f"baseline allowlist learn {g} -o {out}/a.yaml", f"baseline learn {out}/sim"):
            _sh(f"umask {mask:03o}; {script} >/dev/null", base)
        wrong = [f"{p.relative_to(out)} {p.stat().st_mode & 0o777:o}" for p in out.rglob("*") if not p.is_symlink()
                 and ((p.is_file() and p.stat().st_mode & 0o777 != 0o666 & ~mask)
                      or (p.is_dir() and p.stat().st_mode & 0o002))]
        made = sum(1 for p in out.rglob("*") if p.is_file())
        results.append(Result(f"umask {mask:03o} output modes", made >= 6 and not wrong, f"{made} files, wrong: {wrong[:4]}"))
    return results


def odd_parquet_cases(base: Path, good: list[Path]) -> list[Result]:
    """Valid Parquet with odd values: read or refused naming a column, never a crash."""
    b = events("b1", BAD, 30, "failure")
    n = len(b)

    def col(name: str, values: pa.Array) -> pa.Table:
        i = b.schema.get_field_index(name)
        return b.set_column(i, pa.field(name, values.type), values)

    start = b.schema.field("start_time").type
    variants = {
        "errno all null": col("errno", pa.nulls(n, pa.string())), "probe all null": col("probe", pa.nulls(n, pa.string())),
        "errno null-typed": col("errno", pa.nulls(n)), "path struct": col("path", pa.array([{"a": "x"}] * n)),
        "path list": col("path", pa.array([["x"]] * n)), "pid 0": col("pid", pa.array([0] * n, b.schema.field("pid").type)),
        "ret extremes": col("ret", pa.array([2**63 - 1, -2**63] * (n // 2) + [0] * (n % 2), pa.int64())),
        "ts_ns negative": col("ts_ns", pa.array([-10**18 + i for i in range(n)], pa.int64())),
        "ts_ns int64 max": col("ts_ns", pa.array([2**63 - 1 - i for i in range(n)], pa.int64())),
        "latency negative": col("latency_ns", pa.array([-1000] * n, b.schema.field("latency_ns").type)),
        "start 1900": col("start_time", pa.array([dt.datetime(1900, 1, 1)] * n, start)),
        "start int64 min": col("start_time", pa.array([-2**63 + 1] * n, pa.int64()).cast(start)),
        "errno odd names": col("errno", pa.array((["E" * 1000, "EWHAT", "", "\x00", "123"] * n)[:n])),
        "ret as string": col("ret", pa.array([str(x) for x in b.column("ret").to_pylist()])),
        "seq float nan": col("seq", pa.array([float("nan")] * n)), "comm binary": col("comm", pa.array([b"\xff"] * n, pa.binary())),
        "rows reversed": b.take(list(reversed(range(n)))), "rows duplicated": pa.concat_tables([b, b]),
        "one trace id two pids": pa.concat_tables([b, col("pid", pa.array([99] * n, b.schema.field("pid").type))]),
    }
    results = []
    d = base / "odd-parquet"
    d.mkdir(exist_ok=True)
    for i, (name, table) in enumerate(variants.items()):
        path = write(table, d / f"v{i}.parquet")
        for argv, codes in ((["baseline", "diff", *map(str, good), str(path)], {0, 1, 2}),
                            (["baseline", "export", str(path), "-o", str(base / "x.json")], {0, 2})):
            ok, detail = run(argv, base, codes)
            results.append(Result(f"{argv[1]} parquet {name}", ok, detail))
    for codec in ("zstd", "lz4", "brotli", "none", "gzip"):
        ok, detail = run(["baseline", "diff", *map(str, good), str(write(b, d / f"{codec}.parquet", compression=codec))], base, {1})
        results.append(Result(f"diff parquet codec {codec}", ok, detail))
    for pages in ("1.0", "2.0"):
        ok, detail = run(["baseline", "diff", *map(str, good), str(write(b, d / f"p{pages}.parquet", data_page_version=pages))], base, {1})
        results.append(Result(f"diff parquet data pages v{pages}", ok, detail))
    ok, detail = run(["baseline", "diff", *map(str, good), str(write(pa.concat_tables([b] * 1250), d / "rg.parquet", row_group_size=1))],
                     base, {1})
    results.append(Result("diff parquet 10k row groups", ok, detail))
    return results


def dataset_fault_cases(base: Path, fleet: Path) -> list[Result]:
    ds = base / "ds-corrupt"
    shutil.copytree(fleet, ds)
    part = sorted((ds / "events").rglob("*.parquet"))[0]
    part.write_bytes(b"PAR1 but not really" * 8)
    results = []
    for argv in (["expected", "learn", str(ds), "-o", str(base / "e.yaml")], ["learn", str(ds), "-o", str(base / "m-x.parquet")],
                 ["audit", str(ds), "-o", str(base / "aud-x")]):
        ok, detail = run(["baseline", *argv], base, {2})
        results.append(Result(f"{argv[0]} names a corrupt events file", ok and part.name in detail, detail))
    for argv in (["diff", "", str(part)], ["learn", ""], ["export", "", "-o", str(base / "x.json")]):
        ok, detail = run(["baseline", *argv], base, {2})  # Path('') is '.': the whole cwd was read
        results.append(Result(f"{argv[0]} of an empty path argument", ok and "empty argument" in detail, detail))
    log = sorted((fleet / "joblogs").glob("*.log"))[0]
    odd = os.fsencode(base) + b"/nccl-\xff.log"
    shutil.copy(log, odd)
    ok, detail = run(["baseline", "coverage", str(fleet), "-o", str(base / "cov-x"), "--nccl-logs", odd], base, {0})
    results.append(Result("coverage job log named with a non-UTF-8 byte", ok, detail))
    return results


def ingest_overlap_cases(base: Path, spool: Path) -> list[Result]:
    """A dataset or quarantine that is, holds or lies in the spool is refused and nothing moves."""
    before = sorted(p.relative_to(spool) for p in spool.rglob("*"))
    results = []
    for name, argv in {"dataset = spool": [spool, spool], "dataset in the spool": [spool, spool / "ds"],
                       "dataset holds the spool": [spool, spool.parent],
                       "quarantine in the spool": [spool, base / "ds-o", "--quarantine", spool / "q"],
                       "quarantine in the dataset": [spool, base / "ds-o", "--quarantine", base / "ds-o" / "q"]}.items():
        ok, detail = run(["baseline", "ingest", *map(str, argv)], base, {2})
        moved = sorted(p.relative_to(spool) for p in spool.rglob("*")) != before
        results.append(Result(f"ingest {name}", ok and not moved and "apart from" in detail, detail))
    # SPOOL DATASET swapped: a dataset given as the spool
    ds = base / "ds-swapped"
    ok, _ = run(["baseline", "ingest", str(spool), str(ds), "--keep-spool"], base, {0})
    held = sorted(p.relative_to(ds) for p in ds.rglob("*"))
    ok2, detail = run(["baseline", "ingest", str(ds), str(base / "ds-other")], base, {2})
    results.append(Result("ingest DATASET SPOOL (swapped)", ok and ok2 and "found a dataset" in detail
                          and sorted(p.relative_to(ds) for p in ds.rglob("*")) == held, detail))
    return results


def _visible_files(d: Path) -> list[tuple[Path, Path]]:
    """(path, path relative to d) of each file below d a reader sees: hidden names (temporaries,
    .sets, .current) and what is not a regular file skipped."""
    pairs = ((p, p.relative_to(d)) for p in sorted(d.rglob("*")))
    return [(p, rel) for p, rel in pairs if not any(part.startswith(".") for part in rel.parts) and p.is_file()]


def _digest(d: Path) -> dict[str, object]:
    """What a reader sees: visible files (shape of each Parquet table, size > 0 of the rest)."""
    seen: dict[str, object] = {}
    for p, rel in _visible_files(d):
        if p.suffix == ".parquet":
            try:
                seen[str(rel)] = pq.read_metadata(p).num_rows
            except Exception as exc:  # a half file a reader would take for data
                seen[str(rel)] = f"UNREADABLE {type(exc).__name__}"
        else:
            seen[str(rel)] = p.stat().st_size > 0
    return seen


def kill9_trials(base: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random, per: int) -> list[Result]:
    """kill -9 at a random instant of every writer, then the same command again: it succeeds and
    the visible outputs are what a run that was never killed leaves (no half file, no debris)."""
    k = base / "k9"
    writers = {
        "learn": ["baseline", "learn", str(k / "fleet")], "audit": ["baseline", "audit", str(k / "fleet")],
        "expected learn": ["baseline", "expected", "learn", str(k / "fleet"), "-o", str(k / "e.yaml")],
        "coverage": ["baseline", "coverage", str(k / "fleet"), "-o", str(k / "cov")],
        "export": ["baseline", "export", str(good[0]), "-o", str(k / "x.json")],
        "simulate": ["baseline", "simulate", "--hosts", "4", "--hours", "1", "--seed", "1", "-o", str(k / "sim")],
        "allowlist learn": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(k / "al.yaml")],
    }
    if spool is not None:
        writers["ingest"] = ["baseline", "ingest", str(k / "spool"), str(k / "ds")]

    def fresh() -> None:
        shutil.rmtree(k, ignore_errors=True)
        k.mkdir()
        shutil.copytree(fleet, k / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
        if spool is not None:
            shutil.copytree(spool, k / "spool")

    results = []
    for name, argv in writers.items():
        fresh()
        subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=300)
        want = _digest(k)
        for _ in range(per):
            fresh()
            delay = rng.uniform(0.3, 2.5)
            proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            proc.kill()
            proc.wait()
            half = {p: v for p, v in _digest(k).items() if v is False or str(v).startswith("UNREADABLE")}
            again = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=300)
            got = _digest(k)
            debris = [str(p.relative_to(k)) for p in k.rglob(".*") if ".tmp" in p.name]
            differ = sorted(p for p in set(want) | set(got) if want.get(p) != got.get(p))
            results.append(Result(f"kill -9 {name} at {delay:.2f}s, rerun", again.returncode == 0 and not half
                                  and not differ and not debris,
                                  f"rerun exit {again.returncode} {again.stderr.strip()[-150:]}; half {list(half)[:3]}, "
                                  f"differ {differ[:3]}, debris {debris[:3]}"))
    return results


_LIBRARY = r"""
import json, sys
from baseline.export import export_trace
from baseline.fleet.audit import run_audit
from baseline.fleet.model import GoodTraceBaseline
from baseline.run.diff import diff_traces
from baseline.simulator.simulate import simulate
from tracer import schema
good, bad, tmp = sys.argv[1:3], sys.argv[3], sys.argv[4]
calls = {  # name: (call, the words the message must start with)
    "diff_traces(None, bad)": (lambda: diff_traces(None, bad), "paths:"),
    "diff_traces(good, 5)": (lambda: diff_traces(good, 5), "paths:"),
    "diff_traces(k=2.5)": (lambda: diff_traces(good, bad, k=2.5), "-k/--window:"),
    "diff_traces(context='x')": (lambda: diff_traces(good, bad, context="x"), "--context:"),
    "diff_traces(trace_id=3)": (lambda: diff_traces(good, bad, trace_id=3), "trace_id:"),
    "diff_traces(bytes path)": (lambda: diff_traces([good[0].encode()], bad), "paths:"),
    "run_audit(None)": (lambda: run_audit(None), "paths:"),
    "run_audit(model=3)": (lambda: run_audit(tmp, model=3), "model:"),
    "run_audit(min_layers=2.5)": (lambda: run_audit(tmp, min_layers=2.5), "min_layers:"),
    "GoodTraceBaseline().fit(None)": (lambda: GoodTraceBaseline().fit(None), "paths:"),
    "simulate(workers=0)": (lambda: simulate(tmp + "/s", hosts=1, hours=1, workers=0), "--workers:"),
    "simulate(hosts='3')": (lambda: simulate(tmp + "/s", hosts="3"), "--hosts:"),
    "export_trace(5)": (lambda: export_trace(5), "paths:"),
    "schema.read_events(None)": (lambda: schema.read_events(None), "paths:"),
}
out = {}
for name, (call, words) in calls.items():
    try:
        call()
        out[name] = ["returned", "", "", words]
    except Exception as exc:
        out[name] = [type(exc).__name__, type(exc).__mro__[1].__name__, str(exc)[:200], words]
print(json.dumps(out))
"""


def library_cases(base: Path, good: list[Path], bad: Path) -> list[Result]:
    """Public functions called with wrong types: a TypeError, ValueError or TracebaseError whose
    message starts with the argument's name, never an AttributeError (or worse) from inside."""
    import json

    proc = subprocess.run([sys.executable, "-c", _LIBRARY, *map(str, good), str(bad), str(base)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return [Result("library calls", False, proc.stderr.strip()[-300:])]
    results = []
    for name, got in json.loads(proc.stdout.splitlines()[-1]).items():
        kind, parent, message, words = got
        ok = (kind in ("TypeError", "ValueError") or "TracebaseError" in (kind, parent)) and message.startswith(words)
        results.append(Result(f"library {name}", ok, str(got)))
    return results


# --------------------------------------------------------------------------------------------
# round nine: `-o -`, help on a full stdout, OS faults at every output, odd output targets,
# truncated and odd inputs, glob bombs, kill -9 of the recorder, a fresh machine
# --------------------------------------------------------------------------------------------
def _writers(fleet: Path, good: list[Path], spool: Path | None, out: Path) -> dict[str, list[str]]:
    """Every analysis writer with its output under `out` (what a fault case aims at)."""
    w = {
        "learn": ["baseline", "learn", str(fleet), "-o", str(out / "model.parquet")],
        "audit": ["baseline", "audit", str(fleet), "-o", str(out / "aud")],
        "expected learn": ["baseline", "expected", "learn", str(fleet), "-o", str(out / "e.yaml")],
        "export": ["baseline", "export", str(good[0]), "-o", str(out / "x.json")],
        "allowlist learn": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(out / "a.yaml")],
        "simulate": ["baseline", "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", str(out / "sim")],
        "coverage": ["baseline", "coverage", str(fleet), "-o", str(out / "cov")],
    }
    if spool is not None:
        w["ingest"] = ["baseline", "ingest", str(spool), str(out / "ds"), "--keep-spool"]
    return w


def _no_half_output(out: Path) -> list[str]:
    """Visible files a reader would take for data that are not: unreadable Parquet, empty files,
    and hidden temporaries left behind."""
    bad = [f"{p} {v}" for p, v in _digest(out).items() if v is False or str(v).startswith("UNREADABLE")]
    return bad + [str(p.relative_to(out)) for p in out.rglob(".*") if ".tmp" in p.name]


def _one_line_status(proc: subprocess.CompletedProcess, codes: set[int]) -> tuple[bool, str]:
    return _verdict(proc, codes)


def dash_and_help_cases(base: Path, fleet: Path, good: list[Path]) -> list[Result]:
    results = []
    d = base / "dash"
    d.mkdir(exist_ok=True)
    g = " ".join(map(str, good))
    for name, script, codes in [
        ("learn -o -", f"baseline learn {fleet} -o -", {2}), ("learn --expected-out -", f"baseline learn {fleet} --expected-out -", {2}),
        ("audit -o -", f"baseline audit {fleet} -o -", {2}), ("audit --html -", f"baseline audit {fleet} --html -", {2}),
        ("expected learn -o -", f"baseline expected learn {fleet} -o -", {2}), ("coverage -o -", f"baseline coverage {fleet} -o -", {2}),
        ("simulate -o -", "baseline simulate --hosts 1 --hours 1 -o -", {2}), ("allowlist learn -o -", f"baseline allowlist learn {g} -o -", {2}),
        ("ingest SPOOL -", f"baseline ingest {fleet} -", {2}), ("record -o -", "tracer record -o - -- true", {2}),
        ("run --spool -", "tracer run syscalls -d 1s --spool -", {2}), ("export -o - (stdout)", f"baseline export {good[0]} -o -", {0}),
    ]:
        proc = _sh(f"{script} >/dev/null", d)
        ok, detail = _verdict(proc, codes)
        made = (d / "-").exists()
        shutil.rmtree(d / "-", ignore_errors=True) if (d / "-").is_dir() else (d / "-").unlink(missing_ok=True)
        results.append(Result(f"round9 {name}", ok and not made, f"file '-' made: {made}; {detail}"))
    for unbuffered in ("1", ""):
        for script in ("baseline --help", "baseline --version", "tracer --help", "tracer record --help", "baseline diff --help"):
            ok, detail = _verdict(_sh(f"{script} >/dev/full", d, {"PYTHONUNBUFFERED": unbuffered}), {2}, "<stdout>")
            results.append(Result(f"round9 {script} >/dev/full{' unbuffered' if unbuffered else ''}", ok, detail))
    # a reader that stops early: quiet, the command's own status (diff: 1 = anomaly)
    for name, script, want in [
        ("export fleet -o -", f"baseline export {fleet}/events -o -", 0), ("audit --json", f"baseline audit {fleet} -o {d}/a --json", 0),
        ("report", f"baseline report {d}/a", 0), ("diff --json", f"baseline diff {g} {base}/bad.parquet --json", 1),
        ("--help", "baseline --help", 0), ("probes check --json", "tracer probes check --json", None),
        ("simulate --json", f"baseline simulate --hosts 2 --hours 1 -o {d}/s --json", 0),
    ]:
        proc = _sh(f"{script} | head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}", d)
        err = proc.stderr.decode(errors="replace")
        ok = not err.strip() and (proc.returncode == want if want is not None else proc.returncode in (0, 1))
        results.append(Result(f"round9 SIGPIPE {name}", ok, f"exit {proc.returncode}: {err.strip()[-200:]}"))
    return results


@dataclass
class _Mount:
    path: Path

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


def _tmpfs(path: Path, opts: str) -> _Mount | None:
    path.mkdir(parents=True, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True).returncode == 0
    return _Mount(path) if ok else None


def os_fault_cases(base: Path, fleet: Path, good: list[Path], spool: Path | None, quick: bool) -> list[Result]:
    """ENOSPC at several fill levels, EROFS and EACCES at every writer's output."""
    results = []
    frees = (0, 8192, 65536) if quick else (0, 4096, 8192, 32768, 65536, 131072)
    mnt = _tmpfs(base / "full", "size=512k")
    if mnt is not None:
        with mnt as full:
            for free in frees:
                for name, argv in _writers(fleet, good, spool, full / "o").items():
                    for p in full.iterdir():
                        shutil.rmtree(p) if p.is_dir() else p.unlink()
                    avail = shutil.disk_usage(full).free - free
                    with open(full / "filler", "wb") as fh:
                        fh.write(b"\0" * max(avail, 0))
                    (full / "o").mkdir(exist_ok=True)
                    proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=300)
                    ok, detail = _verdict(proc, {0, 2})
                    half = _no_half_output(full / "o")
                    results.append(Result(f"round9 ENOSPC {free} B free: {name}", ok and not half, f"half {half[:3]}; {detail}"))
    mnt = _tmpfs(base / "ro", "ro,size=64k")
    if mnt is not None:
        with mnt as ro:
            for name, argv in _writers(fleet, good, spool, ro / "o").items():
                proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=300)
                results.append(Result(f"round9 EROFS: {name}", *_verdict(proc, {2})))
    if os.geteuid() == 0 and shutil.which("setpriv"):
        locked = base / "locked"
        locked.mkdir(exist_ok=True)
        os.chmod(locked, 0o555)
        os.chmod(base, 0o755)
        for name, argv in _writers(fleet, good, None, locked / "o").items():
            if name in ("coverage", "learn", "audit", "expected learn"):
                continue  # these read the fleet, which root's umask may hide; the rest suffice
            proc = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                                   str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=300, cwd="/")
            results.append(Result(f"round9 EACCES (nobody): {name}", *_verdict(proc, {2})))
    return results


def odd_target_cases(base: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """Outputs that are a FIFO, a directory, /dev/null, a dangling symlink, a symlink loop, a
    name too long, or the command's own input."""
    d = base / "targets"

    def fresh() -> None:  # each case on intact targets: one command's damage fails only its case
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        os.mkfifo(d / "fifo")
        (d / "adir").mkdir()
        (d / "dangling").symlink_to(base / "nowhere" / "deeper" / "x")
        (d / "loop").symlink_to("loop")

    fresh()
    targets = {"fifo": (d / "fifo", {2}), "directory": (d / "adir", {0, 2}), "/dev/null": (Path("/dev/null"), {0, 2}),
               "dangling symlink": (d / "dangling", {2}), "symlink loop": (d / "loop", {2}),
               "name too long": (d / ("x" * 300), {2}), "dir name too long": (d / ("y" * 300) / "o", {2})}
    results = []
    for what, (target, codes) in targets.items():
        for name, argv in (("learn", ["baseline", "learn", str(fleet), "-o", str(target)]),
                           ("export", ["baseline", "export", str(good[0]), "-o", str(target)]),
                           ("allowlist learn", ["baseline", "allowlist", "learn", *map(str, good), "-o", str(target)]),
                           ("expected learn", ["baseline", "expected", "learn", str(fleet), "-o", str(target)]),
                           ("audit", ["baseline", "audit", str(fleet), "-o", str(target)])):
            fresh()
            try:
                proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=60)
            except subprocess.TimeoutExpired:
                results.append(Result(f"round9 output {what}: {name}", False, "hung > 60s"))
                continue
            ok, detail = _verdict(proc, codes)
            intact = not (base / "nowhere").exists() and (d / "loop").is_symlink() and (d / "fifo").is_fifo()
            results.append(Result(f"round9 output {what}: {name}", ok and intact, f"links intact {intact}; {detail}"))
            shutil.rmtree(base / "nowhere", ignore_errors=True)
    before = good[0].read_bytes()
    for name, argv in (("export over its input", ["baseline", "export", str(good[0]), "-o", str(good[0])]),
                       ("allowlist learn over its input", ["baseline", "allowlist", "learn", *map(str, good), "-o", str(good[1])]),
                       ("learn over a partition", ["baseline", "learn", str(fleet), "-o",
                                                   str(sorted((fleet / "events").rglob("*.parquet"))[0])])):
        proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=60)
        ok, detail = _verdict(proc, {2})
        results.append(Result(f"round9 {name}", ok and good[0].read_bytes() == before, detail))
    return results


def odd_input_cases(base: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """Truncated Parquet at every region, special files and loops as inputs, glob and YAML
    bombs, a dataset of many small files and one mixing schema versions."""
    d = base / "inputs"
    d.mkdir(exist_ok=True)
    data = bad.read_bytes()
    n = len(data)
    cuts = {"magic only": 4, "8 bytes": 8, "a quarter": n // 4, "half": n // 2, "three quarters": 3 * n // 4,
            "footer length cut": n - 6, "last byte cut": n - 1, "footer magic damaged": None}
    results = []
    g = list(map(str, good))
    for what, cut in cuts.items():
        p = d / f"cut-{what.replace(' ', '-')}.parquet"
        p.write_bytes(data[:cut] if cut is not None else data[:-4] + b"PAR0")
        for argv in (["baseline", "diff", *g, str(p)], ["baseline", "export", str(p), "-o", str(d / "x.json")]):
            ok, detail = run(argv, d, {2})
            results.append(Result(f"round9 {argv[1]} truncated parquet: {what}", ok and p.name in detail, detail))
    (d / "loop.parquet").symlink_to("loop.parquet")
    (d / "adir.parquet").mkdir()
    (d / "afile").write_text("x")
    for what, path, codes in (("/proc/self/status", "/proc/self/status", {2}), ("/dev/zero", "/dev/zero", {2}),
                              ("/dev/null", "/dev/null", {2}), ("symlink loop", str(d / "loop.parquet"), {2}),
                              ("empty directory", str(d / "adir.parquet"), {2})):
        for argv in (["baseline", "diff", *g, path], ["baseline", "diff", *g, str(bad), "--allowlist", path],
                     ["baseline", "learn", path, "-o", str(d / "m.parquet")]):
            ok, detail = run(argv, d, codes, timeout=60)
            results.append(Result(f"round9 {argv[1]} input {what}{' as allowlist' if '--allowlist' in argv else ''}", ok, detail))
    ok, detail = run(["baseline", "audit", str(d / "afile"), "-o", str(d / "aud")], d, {2})
    results.append(Result("round9 audit of a file where a dataset is expected", ok, detail))
    entry = ("version: 1\nentries:\n  - id: x\n    source: learned\n    probe: openat\n    errno: ENOENT\n    path: 'PAT'\n")
    lol = ("version: 1\nentries:\n  - &e0 {id: a, source: learned, probe: openat, errno: ENOENT}\n"
           + "".join(f"  - &e{i} [{', '.join([f'*e{i - 1}'] * 10)}]\n" for i in range(1, 8)))
    for what, text, codes in (
        ("brace bomb", entry.replace("PAT", "/srv/" + "{a,b}" * 24), {2}),
        ("nested braces", entry.replace("PAT", "/srv/" + "{" * 3000 + "a" + "}" * 3000), {1, 2}),
        ("many stars", entry.replace("PAT", "/srv/" + "*a" * 3000 + "b"), {1}),
        ("many classes", entry.replace("PAT", "/srv/" + "[a-z]*" * 2000), {1}),
        ("invalid class", entry.replace("PAT", "/srv/[z-a]["), {1}),
        ("billion laughs in entries", lol, {2}),
        ("deep mapping", "version: 1\nentries:\n" + "  - " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", {2}),
    ):
        y = d / f"{what.replace(' ', '-')}.yaml"
        y.write_text(text)
        t0 = time.monotonic()
        ok, detail = run(["baseline", "diff", *g, str(bad), "--allowlist", str(y)], d, codes, timeout=60)
        results.append(Result(f"round9 allowlist {what}", ok and time.monotonic() - t0 < 30, detail))
    # a dataset of many small files, and one mixing schema version 1 and 2 partitions
    many = d / "many"
    part = sorted((fleet / "events").rglob("*.parquet"))[0]
    table = pq.read_table(part)
    meta = table.schema.metadata
    for i in range(3000):
        p = many / "events" / "date=2026-11-28" / f"host=h{i % 50:03d}" / f"part-{i:05d}.parquet"
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.slice(i % max(len(table), 1), 1).replace_schema_metadata(meta), p)
    t0 = time.monotonic()
    ok, detail = run(["baseline", "learn", str(many)], d, {0, 2}, timeout=300)
    results.append(Result(f"round9 learn a 3000-file dataset ({time.monotonic() - t0:.0f}s)", ok, detail))
    mixed = d / "mixed"
    shutil.copytree(fleet, mixed, ignore=shutil.ignore_patterns("audit", "baseline-model.parquet"))
    for p in sorted((mixed / "events").rglob("*.parquet"))[::2]:
        t = pq.read_table(p)
        pq.write_table(t.replace_schema_metadata({**t.schema.metadata, schema.META_VERSION: b"1"}), p)
    for argv in (["learn", str(mixed)], ["audit", str(mixed), "-o", str(d / "aud-m")]):
        ok, detail = run(["baseline", *argv], d, {0}, timeout=300)
        results.append(Result(f"round9 {argv[0]} a dataset mixing schema versions 1 and 2", ok, detail))
    return results


def _bpf_prog_ids() -> set[int] | None:
    proc = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    import json

    return {p["id"] for p in json.loads(proc.stdout or "[]")}


def recorder_kill_cases(base: Path, rng: random.Random, per: int) -> list[Result]:
    """kill -9 of `tracer record` and of `tracer run --spool` at random instants: the trace is
    whole or absent, no BPF program outlives the process, the same command again succeeds."""
    if os.geteuid() != 0 or not shutil.which("bpftool"):
        return []
    results = []
    d = base / "rec"
    d.mkdir(exist_ok=True)
    lock = open("/tmp/tracebase-real.lock", "w")  # noqa: SIM115 -- held for the whole group
    import fcntl

    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for name, argv, out in (
            ("record", ["tracer", "record", "-o", str(d / "t.parquet"), "--", "sh", "-c", "for i in 1 2 3 4 5 6; do ls / >/dev/null; sleep 0.5; done"], d / "t.parquet"),
            ("run --spool", ["tracer", "run", "syscalls", "-d", "6s", "-i", "1s", "--spool", str(d / "spool")], d / "spool"),
        ):
            for _ in range(per):
                shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
                before = _bpf_prog_ids() or set()
                delay = rng.uniform(1.0, 4.0)
                proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(delay)
                proc.kill()
                proc.wait()
                time.sleep(0.5)
                leaked = (_bpf_prog_ids() or set()) - before
                half = _no_half_output(d)
                again = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120)
                readable = True
                if name == "record":
                    try:
                        readable = pq.read_metadata(out).num_rows > 0
                    except Exception:
                        readable = False
                ok = again.returncode == 0 and not leaked and not half and readable
                results.append(Result(f"round9 kill -9 {name} at {delay:.2f}s, rerun", ok,
                                      f"rerun exit {again.returncode} {again.stderr.strip()[-150:]}; leaked progs {sorted(leaked)[:3]}, "
                                      f"half {half[:3]}, readable {readable}"))
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    return results


def fresh_machine_cases(base: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """No HOME, TMPDIR unset or invalid, a read-only /tmp, another cwd, `python -m`."""
    g = " ".join(map(str, good))
    results = []
    for name, script, env, codes in [
        ("no HOME, TMPDIR unset: learn", f"env -u HOME -u TMPDIR baseline learn {fleet} -o {base}/fm.parquet", None, {0}),
        ("TMPDIR a file: audit", f"baseline audit {fleet} -o {base}/fm-aud", {"TMPDIR": str(good[0])}, {0}),
        ("python -m baseline.cli from /", f"cd / && {sys.executable} -m baseline.cli diff {g} {bad}", None, {1}),
        ("python -m tracer.cli probes check", f"cd / && {sys.executable} -m tracer.cli probes check syscalls", None, {0}),
        ("python -B from another cwd", f"cd /usr && {sys.executable} -B -m baseline.cli export {good[0]} -o {base}/fm.json", None, {0}),
    ]:
        results.append(Result(f"round9 fresh machine {name}", *_verdict(_sh(script, base, env), codes)))
    if os.geteuid() == 0 and shutil.which("unshare"):
        # /tmp read-only in a private mount namespace (the outputs live elsewhere)
        out = Path(tempfile.mkdtemp(prefix="tracebase-battery-ro-", dir="/var/tmp"))  # not under /tmp
        try:
            for name, script, codes in [
                ("read-only /tmp: learn", f"baseline learn {fleet} -o {out}/m.parquet", {0}),
                ("read-only /tmp: diff", f"baseline diff {g} {bad}", {1}),
                ("read-only /tmp: record", f"tracer record -o {out}/t.parquet -- true", {0}),
            ]:
                proc = _sh(f"unshare -m sh -c 'mount --bind -o ro /tmp /tmp 2>/dev/null || mount -o remount,bind,ro /tmp; {script}'",
                           base)
                results.append(Result(f"round9 fresh machine {name}", *_verdict(proc, codes)))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return results


def round9_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                 quick: bool) -> list[Result]:
    results = dash_and_help_cases(base, fleet, good)
    results += os_fault_cases(base, fleet, good, spool, quick)
    results += odd_target_cases(base, fleet, good)
    results += odd_input_cases(base, fleet, good, bad)
    results += recorder_kill_cases(base, rng, 1 if quick else 3)
    results += fresh_machine_cases(base, fleet, good, bad)
    return results


# --------------------------------------------------------------------------------------------
# round ten: YAML numbers and encodings, low address-space and file-size limits, a full disk
# under ingest, two runs of one output, valid Parquet of the wrong shape, odd TMPDIR and locale
# --------------------------------------------------------------------------------------------
def _round10_yaml(d: Path, good: list[Path], bad: Path) -> list[Result]:
    entry = ("  - id: learned-enoent-openat-0123456789\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
             "    path: /srv/job/cache\n    support:\n      runs: 2\n      total: 2\n")
    base = "version: 1\nentries:\n" + entry
    huge = "1" * 5000
    variants: dict[str, tuple[bytes, set[int]]] = {
        "5000-digit version": (base.replace("version: 1", f"version: {huge}").encode(), {2}),
        "5000-digit runs": (base.replace("runs: 2", f"runs: {huge}").encode(), {2}),
        "40-digit runs": (base.replace("runs: 2", "runs: " + "9" * 40).encode(), {0, 1, 2}),
        "runs .inf": (base.replace("runs: 2", "runs: .inf").encode(), {2}),
        "runs 0x2": (base.replace("runs: 2", "runs: 0x2").encode(), {0, 1}),
        "runs > total": (base.replace("runs: 2", "runs: 5").encode(), {2}),
        "UTF-8 BOM": (("\ufeff" + base).encode(), {0, 1}),
        "latin-1 path": (base.replace("/srv/job/cache", "/srv/caf\xe9").encode("latin-1"), {2}),
        "CRLF": (base.replace("\n", "\r\n").encode(), {0, 1}),
        "two documents": ((base + "---\n" + base).encode(), {2}),
        "merge key": (b"version: 1\nx: &x {source: learned, probe: openat, errno: ENOENT}\nentries:\n  - <<: *x\n    id: a\n", {2}),
        "lone surrogate escape": (base.replace("/srv/job/cache", '"/srv/\\ud800"').encode(), {2}),
        "id a date": (base.replace("id: learned-enoent-openat-0123456789", "id: 2026-11-29").encode(), {2}),
        "errno a number": (base.replace("errno: ENOENT", "errno: 2").encode(), {2}),
        "complex key": (b"version: 1\n? [a, b]\n: 1\nentries: []\n", {2}),
    }
    results = []
    g = list(map(str, good))
    for name, (data, codes) in variants.items():
        y = d / f"y10-{name.replace(' ', '-')}.yaml"
        y.write_bytes(data)
        ok, detail = run(["baseline", "diff", *g, str(bad), "--allowlist", str(y)], d, {1} if codes == {0, 1} else codes)
        results.append(Result(f"round10 allowlist {name}", ok, detail))
        copy = d / f"learn-{y.name}"
        copy.write_bytes(data)
        ok, detail = run(["baseline", "allowlist", "learn", *g, "-o", str(copy)], d, {0} if codes == {0, 1} else codes)
        kept = codes != {2} or copy.read_bytes() == data  # a refused file is left as it was
        results.append(Result(f"round10 allowlist learn into {name}", ok and kept, detail))
    return results


def _round10_limits(d: Path, fleet: Path, good: list[Path], spool: Path | None, quick: bool) -> list[Result]:
    """ulimit -v low (no hang, no abort: one line or done) and ulimit -f (EFBIG, SIGXFSZ)."""
    results = []
    limits = (500000, 650000) if quick else (450000, 500000, 550000, 600000, 650000, 700000)
    for kib in limits:
        for name, argv in _writers(fleet, good, spool, d / "vlim").items():
            if name in ("expected learn", "allowlist learn"):
                continue
            shutil.rmtree(d / "vlim", ignore_errors=True)
            (d / "vlim").mkdir()
            t0 = time.monotonic()
            proc = _sh(f"ulimit -v {kib}; timeout -k 5 60 {' '.join(map(str, argv))}", d, timeout=120)
            ok, detail = _verdict(proc, {0, 2})
            took = time.monotonic() - t0
            results.append(Result(f"round10 ulimit -v {kib}: {name}", ok and took < 55 and not _no_half_output(d / "vlim"),
                                  f"{took:.0f}s; {detail}"))
    for blocks in (0, 8, 64):
        for name, argv in _writers(fleet, good, spool, d / "flim").items():
            shutil.rmtree(d / "flim", ignore_errors=True)
            (d / "flim").mkdir()
            proc = _sh(f"ulimit -f {blocks}; {' '.join(map(str, argv))}", d)
            ok, detail = _verdict(proc, {0, 2})
            half = _no_half_output(d / "flim")
            results.append(Result(f"round10 ulimit -f {blocks}: {name}", ok and not half, f"half {half[:3]}; {detail}"))
    return results


def _round10_full_ingest(d: Path, spool: Path | None) -> list[Result]:
    """ingest onto a full disk: nothing but whole files, no empty tree, the rerun completes."""
    if spool is None or os.geteuid() != 0:
        return []
    results = []
    mnt = _tmpfs(d / "full10", "size=256k")
    if mnt is None:
        return []
    with mnt as full:
        for free in (0, 4096, 16384, 65536):
            for p in full.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            with open(full / "filler", "wb") as fh:
                fh.write(b"\0" * max(shutil.disk_usage(full).free - free, 0))
            proc = subprocess.run([str(BIN / "baseline"), "ingest", str(spool), str(full / "ds"), "--keep-spool"],
                                  capture_output=True, timeout=120)
            ok, detail = _verdict(proc, {0, 2})
            ds = full / "ds"
            empty = [str(p.relative_to(ds)) for p in ds.rglob("*") if p.is_dir() and not any(p.iterdir())] if ds.exists() else []
            only_lock = ds.exists() and sorted(os.listdir(ds)) == [".tracebase.lock"]
            (full / "filler").unlink()
            again = subprocess.run([str(BIN / "baseline"), "ingest", str(spool), str(ds), "--keep-spool"], capture_output=True,
                                   text=True, timeout=120)
            results.append(Result(f"round10 ingest onto a full disk ({free} B free)", ok and not empty and not only_lock
                                  and again.returncode == 0, f"empty dirs {empty[:3]}, only the lock {only_lock}; {detail}"))
    return results


def _round10_concurrent(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Two runs of one writer on one output started together: both succeed (the last to finish
    wins, or the lock serialises them), the output is whole, no temporary left."""
    k = d / "twice"
    writers = {
        "learn": ["baseline", "learn", str(k / "fleet")], "audit": ["baseline", "audit", str(k / "fleet")],
        "expected learn": ["baseline", "expected", "learn", str(k / "fleet"), "-o", str(k / "e.yaml")],
        "coverage": ["baseline", "coverage", str(k / "fleet"), "-o", str(k / "cov")],
        "export": ["baseline", "export", str(good[0]), "-o", str(k / "x.json")],
        "simulate": ["baseline", "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", str(k / "sim")],
        "allowlist learn": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(k / "al.yaml")],
    }
    if spool is not None:
        writers["ingest"] = ["baseline", "ingest", str(spool), str(k / "ds"), "--keep-spool"]
    results = []
    for name, argv in writers.items():
        for trial in range(2):
            shutil.rmtree(k, ignore_errors=True)
            k.mkdir()
            shutil.copytree(fleet, k / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
            procs = [subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                     for _ in range(2)]
            errs = [p.communicate(timeout=300)[1].decode(errors="replace").strip()[-200:] for p in procs]
            codes = [p.returncode for p in procs]
            half = _no_half_output(k)
            results.append(Result(f"round10 two {name} runs of one output (trial {trial + 1})", codes == [0, 0] and not half,
                                  f"exits {codes}, half {half[:3]}; {errs}"))
    return results


def _round10_parquet(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """Valid Parquet of the wrong shape: other zones, units and widths, another table of ours,
    one huge row group; and such files inside a dataset."""
    b = events("b1", BAD, 30, "failure")
    st = b.schema.field("start_time").type
    kind = b.schema.get_field_index("kind")
    same, refused = {1}, {2}
    variants = {
        "start_time in America/New_York": (retype(b, "start_time", pa.timestamp(st.unit, "America/New_York")), refused),
        "start_time in ms": (retype(b, "start_time", pa.timestamp("ms", st.tz)), refused),
        "ts_ns int32": (retype(b, "ts_ns", pa.int32()), refused), "pid int64": (retype(b, "pid", pa.int64()), refused),
        "pid uint32": (retype(b, "pid", pa.uint32()), refused), "ret decimal": (retype(b, "ret", pa.decimal128(20, 0)), refused),
        "path large_binary": (retype(b, "path", pa.large_binary()), refused),
        "kind dictionary<int8>": (b.set_column(kind, pa.field("kind", pa.dictionary(pa.int8(), pa.string())),
                                               b.column("kind").cast(pa.dictionary(pa.int8(), pa.string()))), same),
        "160,000 rows in one row group": (pa.concat_tables([b] * 20000), same),
        "an extra list<struct> column": (b.append_column("x", pa.array([[{"a": 1}]] * len(b))), same),
    }
    results = []
    g = list(map(str, good))
    for i, (name, (table, codes)) in enumerate(variants.items()):
        path = write(table, d / f"p10-{i}.parquet", row_group_size=10**7)
        for argv in (["baseline", "diff", *g, str(path)], ["baseline", "export", str(path), "-o", str(d / "x10.json")]):
            ok, detail = run(argv, d, codes if argv[1] == "diff" else {0 if c == 1 else c for c in codes})
            results.append(Result(f"round10 {argv[1]} parquet {name}", ok, detail))
    counters = sorted((fleet / "counters").rglob("*.parquet"))[0]
    for argv in (["diff", *g, str(counters)], ["export", str(counters), "-o", str(d / "x10.json")],
                 ["allowlist", "learn", str(counters), g[0], "-o", str(d / "a10.yaml")]):
        ok, detail = run(["baseline", *argv], d, {2})
        results.append(Result(f"round10 {argv[0]} of a counters file as a trace", ok and "'counters'" in detail, detail))
    part = sorted((fleet / "events").rglob("*.parquet"))[0]
    for name, make in {
        "counters file in an events partition": lambda ds: shutil.copy(counters, ds / part.relative_to(fleet).parent / "part-c.parquet"),
        "events file in a counters partition": lambda ds: shutil.copy(part, ds / counters.relative_to(fleet).parent / "part-e.parquet"),
        "0-byte events part": lambda ds: (ds / part.relative_to(fleet).parent / "part-0.parquet").write_bytes(b""),
        "directory named part-d.parquet": lambda ds: (ds / part.relative_to(fleet).parent / "part-d.parquet").mkdir(),
    }.items():
        ds = d / "ds10"
        shutil.rmtree(ds, ignore_errors=True)
        shutil.copytree(fleet, ds, ignore=shutil.ignore_patterns("audit", "baseline-model.parquet"))
        make(ds)
        for argv in (["learn", str(ds), "-o", str(d / "m10.parquet")], ["audit", str(ds), "-o", str(d / "aud10")],
                     ["coverage", str(ds), "-o", str(d / "cov10")], ["expected", "learn", str(ds), "-o", str(d / "e10.yaml")]):
            ok, detail = run(["baseline", *argv], d, {0, 2})
            results.append(Result(f"round10 {argv[0]} dataset with a {name}", ok, detail))
    return results


def _round10_environment(d: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """TMPDIR on a full tmpfs or read-only, non-ASCII paths under LANG=C."""
    results = []
    uni = d / "ünï"
    uni.mkdir(exist_ok=True)
    shutil.copy(good[0], uni / "gööd.parquet")
    cases = [("LANG=C non-ASCII paths: diff", f"baseline diff {uni}/gööd.parquet {good[1]} {bad}", {"LANG": "C", "LC_ALL": "C"}, {1}),
             ("LANG=C non-ASCII paths: export", f"baseline export {uni}/gööd.parquet -o {uni}/x€.json", {"LANG": "C", "LC_ALL": "C"}, {0}),
             ("LANG=C non-ASCII paths: simulate", f"baseline simulate --hosts 1 --hours 1 -o {uni}/sïm", {"LANG": "C", "LC_ALL": "C"}, {0})]
    mnt = _tmpfs(d / "tmpfull", "size=64k") if os.geteuid() == 0 else None
    if mnt is not None:
        with open(mnt.path / "filler", "wb") as fh:
            fh.write(b"\0" * shutil.disk_usage(mnt.path).free)
        for name, script, codes in (("learn", f"baseline learn {fleet} -o {d}/m10t.parquet", {0}),
                                    ("audit", f"baseline audit {fleet} -o {d}/aud10t", {0}),
                                    ("diff", f"baseline diff {good[0]} {good[1]} {bad}", {1}),
                                    ("coverage", f"baseline coverage {fleet} -o {d}/cov10t", {0})):
            cases.append((f"TMPDIR on a full disk: {name}", script, {"TMPDIR": str(mnt.path)}, codes))
    for name, script, env, codes in cases:
        results.append(Result(f"round10 {name}", *_verdict(_sh(f"{script} >/dev/null", d, env), codes)))
    if mnt is not None:
        mnt.__exit__()
    return results


def _round10_symlinked_sets(d: Path, fleet: Path) -> list[Result]:
    """An audit output whose `.sets` is a symlink (to a scratch directory here, never a system
    one): nothing written or removed through it."""
    victim = d / "victim"
    shutil.rmtree(victim, ignore_errors=True)
    (victim / "keep").mkdir(parents=True)
    out = d / "aud-sets"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (out / ".sets").symlink_to(victim)
    ok, detail = run(["baseline", "audit", str(fleet), "-o", str(out)], d, {2})
    intact = sorted(p.name for p in victim.iterdir()) == ["keep"]
    return [Result("round10 audit -o DIR whose .sets is a symlink", ok and intact, f"victim intact {intact}; {detail}")]


def round10_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, quick: bool) -> list[Result]:
    d = base / "r10"
    d.mkdir(exist_ok=True)
    results = _round10_symlinked_sets(d, fleet)
    results += _round10_yaml(d, good, bad)
    results += _round10_parquet(d, fleet, good)
    results += _round10_environment(d, fleet, good, bad)
    results += _round10_full_ingest(d, spool)
    results += _round10_concurrent(d, fleet, good, spool)
    results += _round10_limits(d, fleet, good, spool, quick)
    return results


# --------------------------------------------------------------------------------------------
# round eleven: stops during native calls, .current, odd input paths, TZ, DAG task arguments,
# a read-only ext4 dataset, repeated kill -9 with the rerun's content compared
# --------------------------------------------------------------------------------------------
DAY10K = Path("/tmp/work/day10k")  # the shared 10,000-host day, read-only (skipped when absent)


def _round11_native_stop(d: Path, rng: random.Random, quick: bool) -> list[Result]:
    """SIGTERM at random instants of `baseline learn` of the 10,000-host day: the exit follows
    within 1.5 s (main: up to 2.5 s, the signal heard only when a native call returned), 143,
    no temporary left."""
    if not DAY10K.is_dir():
        return []
    out = d / "stop"
    results = []
    for _ in range(4 if quick else 10):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        delay = rng.uniform(1, 14)
        proc = subprocess.Popen([str(BIN / "baseline"), "learn", str(DAY10K), "-o", str(out / "m.parquet")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120)[1]
        took = time.monotonic() - sent
        left = [p.name for p in out.iterdir()]
        results.append(Result(f"round11 SIGTERM learn of the 10k-host day at {delay:.1f}s",
                              proc.returncode in (0, 143) and took < 1.5 and (not left or proc.returncode == 0)
                              and "Traceback" not in err, f"exit {proc.returncode} after {took:.2f}s, left {left}"))
    return results


def _round11_current(d: Path, fleet: Path) -> list[Result]:
    results = []
    for kind in ("file", "dir"):
        out = d / f"aud-current-{kind}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        cur = out / ".current"
        if kind == "dir":
            cur.mkdir()
            (cur / "mine").write_text("keep")
        else:
            cur.write_text("keep")
        ok, detail = run(["baseline", "audit", str(fleet), "-o", str(out)], d, {2})
        kept = cur / "mine" if kind == "dir" else cur
        intact = not cur.is_symlink() and kept.is_file() and kept.read_text() == "keep" and \
            sorted(p.name for p in out.iterdir()) == [".current"]
        results.append(Result(f"round11 audit -o DIR whose .current is a {kind}", ok and intact and ".current" in detail,
                              f"intact {intact}; {detail}"))
    return results


def _round11_inputs(d: Path, good: list[Path]) -> list[Result]:
    """Odd input paths: each one line saying what was found, never a hang or a wrong file read."""
    g = [str(p) for p in good]
    loop = d / "loop-a"
    for a, b in ((loop, d / "loop-b"), (d / "loop-b", loop)):
        if not os.path.lexists(a):
            os.symlink(b, a)
    sock = d / "sock"
    if not sock.exists():
        import socket

        socket.socket(socket.AF_UNIX).bind(str(sock))
    fifo = d / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    sparse = d / "sparse.parquet"
    with open(sparse, "wb") as fh:
        fh.truncate(50 << 30)
    cases = {  # name: (argv, words the one line must hold)
        "diff trailing slash": (["diff", *g, g[0] + "/"], "Not a directory"),
        "export trailing slash": (["export", g[0] + "/", "-o", str(d / "x.json")], "Not a directory"),
        "allowlist trailing slash": (["diff", *g, g[0], "--allowlist", g[0] + "/"], "Not a directory"),
        "diff symlink loop": (["diff", *g, str(loop)], "symbolic links"),
        "export symlink loop": (["export", str(loop), "-o", str(d / "x.json")], "symbolic links"),
        "diff -": (["diff", *g, "-"], "standard input"),
        "export -": (["export", "-", "-o", str(d / "x.json")], "standard input"),
        "allowlist -": (["diff", *g, g[0], "--allowlist", "-"], "standard input"),
        "diff socket": (["diff", *g, str(sock)], "found a socket"),
        "allowlist socket": (["diff", *g, g[0], "--allowlist", str(sock)], "found a socket"),
        "diff FIFO": (["diff", *g, str(fifo)], "FIFO"),
        "allowlist /dev/zero": (["diff", *g, g[0], "--allowlist", "/dev/zero"], "character device"),
        "diff sparse 50 GiB": (["diff", *g, str(sparse)], "expected a Parquet file"),
        "allowlist sparse 50 GiB": (["diff", *g, g[0], "--allowlist", str(sparse)], "of at most"),
        "allowlist /proc/self/status": (["diff", *g, g[0], "--allowlist", "/proc/self/status"], "/proc/self/status"),
    }
    results = []
    for name, (argv, words) in cases.items():
        proc = _sh("timeout -k 5 60 baseline " + " ".join(f"'{a}'" for a in argv) + " </dev/null >/dev/null", d)
        results.append(Result(f"round11 input {name}", *_verdict(proc, {2}, words)))
    sparse.unlink()
    return results


def _round11_tz(d: Path, fleet: Path) -> list[Result]:
    results = []
    for tz in ("Europe/Berlin", "Nowhere/Odd", ":/etc/localtime", "XYZ+5", "UTC-14", "Pacific/Kiritimati", ""):
        for since, noted in (("2026-11-28T00:10", tz in ("Europe/Berlin", "XYZ+5", "UTC-14", "Pacific/Kiritimati")),
                             ("2026-11-28T00:10Z", False)):
            proc = _sh(f"baseline audit {fleet} --since {since} -o {d}/aud-tz >/dev/null", d, {"TZ": tz})
            err = proc.stderr.decode()
            ok = proc.returncode == 0 and "Traceback" not in err and (("no time zone" in err) == noted)
            results.append(Result(f"round11 TZ={tz!r} audit --since {since}", ok,
                                  f"exit {proc.returncode}, note {'no time zone' in err}: {err.strip()[-200:]}"))
    return results


_DAG_CALLS = r"""
import datetime as dt, json, sys
from pathlib import Path
from baseline.pipeline import tasks
from baseline.pipeline.config import load_config, write_default_config
root = Path(sys.argv[1])
cfg = load_config(write_default_config(root / "cfg.yaml", root))
victim = root / "victim"
victim.mkdir(exist_ok=True)
calls = {
    "ingest_once(None)": lambda: tasks.ingest_once(None),
    "tidy(path)": lambda: tasks.tidy(str(root / "cfg.yaml")),
    "audit_new_failures(now=5)": lambda: tasks.audit_new_failures(cfg, now=5),
    "tidy(now=9999-12-31)": lambda: tasks.tidy(cfg, now=dt.datetime(9999, 12, 31, tzinfo=dt.UTC)),
    "coverage_week(5)": lambda: tasks.coverage_week(5),
    "weekly_coverage(week=48)": lambda: tasks.weekly_coverage(cfg, week=48),
    "publish_findings(None)": lambda: tasks.publish_findings(cfg, None),
    "publish_findings({})": lambda: tasks.publish_findings(cfg, {}),
    "publish_findings(stamp ../victim)": lambda: tasks.publish_findings(
        cfg, {"staging": str(cfg.findings / ".staging-x"), "stamp": "../victim"}),
    "publish_findings(staging elsewhere)": lambda: tasks.publish_findings(
        cfg, {"staging": str(victim), "stamp": "20261128T003000Z"}),
}
out = {}
for name, call in calls.items():
    try:
        call()
        out[name] = "returned"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {str(exc)[:160]}"
out["victim intact"] = victim.is_dir()
print(json.dumps(out))
"""


def _round11_dag_tasks(d: Path) -> list[Result]:
    """The pipeline's task functions (what every DAG task calls) with the wrong arguments a DAG
    conf or a caller may pass: a TracebaseError (the task's one-line failure), never an
    AttributeError/KeyError/TypeError, and nothing moved."""
    import json

    root = d / "dag"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    proc = subprocess.run([sys.executable, "-c", _DAG_CALLS, str(root)], capture_output=True, text=True, timeout=120,
                          cwd=d)
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [Result("round11 DAG task functions", False, proc.stderr.strip()[-300:])]
    results = [Result(f"round11 task {name}", str(v).startswith("TracebaseError") or str(v).startswith("ConfigError"),
                      str(v)) for name, v in out.items() if name != "victim intact"]
    results.append(Result("round11 task publish leaves other directories alone", out["victim intact"],
                          f"victim intact {out['victim intact']}"))
    return results


def _round11_readonly_ext4(d: Path, fleet: Path) -> list[Result]:
    """A dataset on a read-only ext4 loop mount: readers with an output elsewhere run, writers
    into it (the default DATASET/audit, DATASET/baseline-model.parquet) are one line (EROFS)."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4"):
        return []
    img, mnt = d / "ro.img", d / "ro-mnt"
    mnt.mkdir(exist_ok=True)
    with open(img, "wb") as fh:
        fh.truncate(96 << 20)
    if subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(fleet), str(img)], capture_output=True).returncode != 0:
        return [Result("round11 read-only ext4 dataset (mkfs)", False, "mkfs.ext4 -d failed")]
    if subprocess.run(["mount", "-o", "loop,ro", str(img), str(mnt)], capture_output=True).returncode != 0:
        return []
    results = []
    try:
        for argv, codes, words in (
            (["learn", str(mnt), "-o", str(d / "ro-model.parquet")], {0}, ""),
            (["audit", str(mnt), "-o", str(d / "ro-aud")], {0}, ""),
            (["learn", str(mnt)], {2}, "not writable"),
            (["audit", str(mnt)], {2}, "not writable"),
            (["coverage", str(mnt), "-o", str(d / "ro-cov")], {0}, ""),
        ):
            proc = _sh("baseline " + " ".join(argv) + " >/dev/null", d)
            results.append(Result(f"round11 read-only ext4 dataset: {' '.join(argv[:1] + argv[2:3])}",
                                  *_verdict(proc, codes, words)))
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        img.unlink(missing_ok=True)
    return results


def _content(d: Path) -> dict[str, object]:
    """What a reader sees, by content: each visible Parquet file's rows (sorted, hashed), each
    other visible file's bytes hashed; hidden names (temporaries, .sets) skipped."""
    import hashlib

    seen: dict[str, object] = {}
    for p, rel in _visible_files(d):
        if p.suffix == ".parquet":
            try:
                # rows as JSON lines, sorted: CSV has no nested types, and write_csv's
                # "CSV format does not support nested data" (errno_counts, metadata) was taken
                # for an unreadable file (round eleven's "counter_buckets polars could not read")
                t = pl.read_parquet(p)
                rows = "\n".join(sorted(t.write_ndjson().splitlines()))
                seen[str(rel)] = hashlib.sha256(rows.encode()).hexdigest()[:16]
            except FileNotFoundError:
                continue  # replaced or dropped meanwhile (an ingest's forked workers finish their host)
            except Exception as exc:  # a half file a reader would take for data
                seen[str(rel)] = f"UNREADABLE {type(exc).__name__}"
        else:
            try:
                data = p.read_bytes()
            except FileNotFoundError:
                continue
            if p.suffix == ".html":  # the footer's "Generated <time> UTC": a run time, not content
                data = re.sub(rb"Generated [^<]*? UTC", b"Generated UTC", data)
            seen[str(rel)] = hashlib.sha256(data).hexdigest()[:16] if data else "EMPTY"
    return seen


def _round11_kill9(d: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random,
                   per: int) -> list[Result]:
    """kill -9 at `per` random instants of every writer, each followed by the same command: it
    succeeds, and what a reader sees is, by content, what two uninterrupted runs agree on (files
    whose content differs between two clean runs -- a run time inside -- compared by presence)."""
    k = d / "k9"
    writers = {
        "learn": ["baseline", "learn", str(k / "fleet"), "-o", str(k / "out" / "m.parquet")],
        "audit": ["baseline", "audit", str(k / "fleet"), "-o", str(k / "out" / "aud")],
        "export": ["baseline", "export", str(good[0]), "-o", str(k / "out" / "x.json")],
        "coverage": ["baseline", "coverage", str(k / "fleet"), "-o", str(k / "out" / "cov")],
        "simulate": ["baseline", "simulate", "--hosts", "3", "--hours", "1", "--seed", "1", "-o", str(k / "out" / "sim")],
        "allowlist learn": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(k / "out" / "al.yaml")],
    }
    if spool is not None:
        writers["ingest"] = ["baseline", "ingest", str(k / "spool"), str(k / "out" / "ds")]

    def fresh() -> None:
        shutil.rmtree(k, ignore_errors=True)
        (k / "out").mkdir(parents=True)
        shutil.copytree(fleet, k / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
        if spool is not None:
            shutil.copytree(spool, k / "spool")

    def start(argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)

    results = []
    for name, argv in writers.items():
        clean = []
        took = 0.0
        for _ in range(2):
            fresh()
            t0 = time.monotonic()
            start(argv).communicate(timeout=300)
            took = time.monotonic() - t0
            clean.append(_content(k / "out"))
        stable = {p for p in clean[0] if clean[0].get(p) == clean[1].get(p)}
        bad = []
        for _ in range(per):
            fresh()
            delay = rng.uniform(0.2, max(0.5, took))
            proc = start(argv)
            time.sleep(delay)
            proc.kill()
            proc.wait()
            time.sleep(0.5)  # an ingest's forked workers outlive it by their current host
            half = [p for p, v in _content(k / "out").items() if v == "EMPTY" or str(v).startswith("UNREADABLE")]
            again = start(argv)
            err = again.communicate(timeout=300)[1]
            got = _content(k / "out")
            differ = sorted(p for p in set(clean[0]) | set(got)
                            if (p in stable and clean[0].get(p) != got.get(p)) or ((p in clean[0]) != (p in got)))
            debris = [str(p.relative_to(k)) for p in (k / "out").rglob(".*") if ".tmp" in p.name]
            if again.returncode != 0 or half or differ or debris:
                bad.append(f"at {delay:.2f}s: rerun exit {again.returncode} {err.strip()[-120:]}; half {half[:2]}, "
                           f"differ {differ[:2]}, debris {debris[:2]}")
        results.append(Result(f"round11 kill -9 x{per} {name}, rerun same content", not bad,
                              f"{len(bad)} of {per} bad; " + " | ".join(bad[:2])))
    return results


def round11_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                  quick: bool) -> list[Result]:
    d = base / "r11"
    d.mkdir(exist_ok=True)
    results = _round11_current(d, fleet)
    results += _round11_inputs(d, good)
    results += _round11_tz(d, fleet)
    results += _round11_dag_tasks(d)
    results += _round11_readonly_ext4(d, fleet)
    results += _round11_native_stop(d, rng, quick)
    results += _round11_kill9(d, fleet, good, spool, rng, 5 if quick else 20)
    return results


# --------------------------------------------------------------------------------------------
# round twelve: kill -9 of the whole process group at random instants of every writer, the
# readers on what is left, the rerun compared by content; pool workers of a parent killed alone
# --------------------------------------------------------------------------------------------
_PIPELINE = r"""
import datetime as dt, sys
from pathlib import Path
from baseline.pipeline import tasks
from baseline.pipeline.config import load_config
cfg = load_config(Path(sys.argv[1]) / "cfg.yaml")
now = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)
tasks.ingest_once(cfg)
tasks.tidy(cfg, now=now)
tasks.refresh_baseline(cfg, now=now)
tasks.refresh_expected(cfg, now=now)
tasks.publish_findings(cfg, tasks.audit_new_failures(cfg, now=now), now=now)
"""


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _running(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.append(pid)
        except (OSError, IndexError):
            pass
    return alive


def _reader_problems(out: Path) -> list[str]:
    """Every reader on what a kill left: each visible Parquet file reads whole (polars), each
    dataset below `out` reads through tracer.schema with no row twice, and `baseline learn` on
    it finishes or says one line."""
    from tracer.schema import dataset_files, read

    bad = [f"{p} {v}" for p, v in _content(out).items() if v == "EMPTY" or str(v).startswith("UNREADABLE")]
    for events in sorted(p for p in out.rglob("events") if p.is_dir() and not any(
            part.startswith(".") for part in p.relative_to(out).parts)):
        ds = events.parent
        try:
            files = dataset_files(ds, "events")
            if files and read(files, "events").select("trace_id", "seq").is_duplicated().any():
                bad.append(f"{ds.relative_to(out)}: events rows read twice")
        except Exception as exc:
            bad.append(f"{ds.relative_to(out)}: {type(exc).__name__} {str(exc)[:100]}")
        proc = subprocess.run([str(BIN / "baseline"), "learn", str(ds), "-o", str(out.parent / "reader-model.parquet")],
                              capture_output=True, timeout=300)
        ok, detail = _verdict(proc, {0, 2})
        if not ok:
            bad.append(f"learn {ds.relative_to(out)}: {detail[-150:]}")
    return bad


def _round12_kill9(d: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random,
                   per: int) -> list[Result]:
    """kill -9 of the process group at `per` random instants of every writer; the readers on
    what is left; the same command again, compared by content with two uninterrupted runs."""
    from baseline.pipeline.config import write_default_config

    k = d / "k9"
    out = k / "out"
    jobs: dict[str, tuple[list[str], object]] = {
        "learn": (["baseline", "learn", str(k / "fleet"), "-o", str(out / "m.parquet")], None),
        "audit": (["baseline", "audit", str(k / "fleet"), "-o", str(out / "aud")], None),
        "expected learn": (["baseline", "expected", "learn", str(k / "fleet"), "-o", str(out / "e.yaml")], None),
        "coverage": (["baseline", "coverage", str(k / "fleet"), "-o", str(out / "cov")], None),
        "export": (["baseline", "export", str(good[0]), "-o", str(out / "x.json")], None),
        "allowlist learn": (["baseline", "allowlist", "learn", *map(str, good), "-o", str(out / "al.yaml")], None),
        "simulate --workers 2": (["baseline", "simulate", "--hosts", "6", "--hours", "1", "--seed", "1",
                                  "--workers", "2", "-o", str(out / "sim")], None),
    }
    template = d / "k9-template"
    shutil.rmtree(template, ignore_errors=True)
    template.mkdir(parents=True)
    if spool is not None:
        # a dataset holding the first half of the spool's snapshots; the second half to ingest,
        # with compaction (two part files per partition then)
        first, second = template / "spool1", template / "spool2"
        for snap in sorted(spool.glob("*/snap-*")):
            half = first if snap.name < "snap-20261128T003000" else second
            shutil.copytree(snap, half / snap.parent.name / snap.name)
        subprocess.run([str(BIN / "baseline"), "ingest", str(first), str(template / "ds")], capture_output=True,
                       timeout=300, check=True)
        jobs["ingest -j 2 + compaction"] = (["baseline", "ingest", str(k / "spool2"), str(out / "ds"), "-j", "2",
                                             "--compact-min-files", "2"], "ingest")
        pipe = template / "pipe"
        write_default_config(pipe / "cfg.yaml", out / "pipe")
        shutil.copytree(spool, pipe / "spool")
        jobs["DAG task functions"] = ([sys.executable, "-c", _PIPELINE, str(out / "pipe")], "pipeline")

    def fresh(kind: object) -> None:
        shutil.rmtree(k, ignore_errors=True)
        out.mkdir(parents=True)
        shutil.copytree(fleet, k / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
        if kind == "ingest":
            shutil.copytree(template / "spool2", k / "spool2")
            shutil.copytree(template / "ds", out / "ds")
        elif kind == "pipeline":
            shutil.copytree(template / "pipe", out / "pipe")

    def start(argv: list[str]) -> subprocess.Popen:
        exe = argv[0] if os.path.isabs(argv[0]) else str(BIN / argv[0])
        return subprocess.Popen([exe, *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, cwd=d)

    results = []
    for name, (argv, kind) in jobs.items():
        clean = []
        took = 0.0
        for _ in range(2):
            fresh(kind)
            t0 = time.monotonic()
            proc = start(argv)
            err = proc.communicate(timeout=600)[1]
            took = time.monotonic() - t0
            clean.append(_content(out))
        if proc.returncode != 0:
            results.append(Result(f"round12 kill -9 {name}: uninterrupted run", False, err.strip()[-200:]))
            continue
        stable = {p for p in clean[0] if clean[0].get(p) == clean[1].get(p)}
        bad = []
        for _ in range(per):
            fresh(kind)
            delay = rng.uniform(0.2, max(0.5, took))
            proc = start(argv)
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            readers = _reader_problems(out)
            again = start(argv)
            err = again.communicate(timeout=600)[1]
            got = _content(out)
            differ = sorted(p for p in set(clean[0]) | set(got)
                            if (p in stable and clean[0].get(p) != got.get(p)) or ((p in clean[0]) != (p in got)))
            debris = [str(p.relative_to(k)) for p in out.rglob(".*") if ".tmp" in p.name]
            if again.returncode != 0 or readers or differ or debris:
                bad.append(f"at {delay:.2f}s: rerun exit {again.returncode} {err.strip()[-120:]}; readers {readers[:2]}, "
                           f"differ {differ[:2]}, debris {debris[:2]}")
        results.append(Result(f"round12 kill -9 (group) x{per} {name}: readers, rerun same content", not bad,
                              f"{len(bad)} of {per} bad; " + " | ".join(bad[:2])))
        if name in ("simulate --workers 2", "ingest -j 2 + compaction"):
            results.append(_round12_parent_alone(name, argv, kind, fresh, start, out, took, rng, clean[0], stable))
    return results


def _round12_parent_alone(name: str, argv: list[str], kind: object, fresh, start, out: Path, took: float,
                          rng: random.Random, want: dict, stable: set) -> Result:
    """kill -9 of a pool's parent alone (the OOM killer's way): the workers end within 3 s, and
    the rerun leaves what an uninterrupted run leaves."""
    bad = []
    for _ in range(3):
        fresh(kind)
        proc = start(argv)
        workers: list[int] = []
        deadline = time.monotonic() + max(1.0, took)
        while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
            workers = _children(proc.pid)
            time.sleep(0.02)
        if proc.poll() is not None:
            continue
        time.sleep(rng.uniform(0.0, 0.5))
        proc.kill()
        proc.wait()
        time.sleep(3)
        alive = _running(workers)
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        again = start(argv)
        err = again.communicate(timeout=600)[1]
        got = _content(out)
        differ = sorted(p for p in set(want) | set(got)
                        if (p in stable and want.get(p) != got.get(p)) or ((p in want) != (p in got)))
        debris = [str(p.relative_to(out)) for p in out.rglob(".*") if ".tmp" in p.name]
        if alive or again.returncode != 0 or differ or debris:
            bad.append(f"workers alive 3 s later {alive}; rerun exit {again.returncode} {err.strip()[-100:]}; "
                       f"differ {differ[:2]}, debris {debris[:2]}")
    return Result(f"round12 kill -9 of {name}'s parent alone x3: workers end, rerun same content", not bad,
                  f"{len(bad)} of 3 bad; " + " | ".join(bad[:2]))


def _round12_recorder(d: Path, rng: random.Random, per: int) -> list[Result]:
    """kill -9 of `tracer record -o` and `tracer run --spool` (process group): a trace is whole
    or absent, snapshots in the spool read whole, `baseline ingest` of what the killed daemon
    left finishes (or quarantines with a reason), and the command again succeeds."""
    if os.geteuid() != 0:
        return []
    import fcntl

    r = d / "rec12"
    results = []
    with open("/tmp/tracebase-real.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name, argv, target in (
            ("record -o", ["tracer", "record", "-o", str(r / "t.parquet"), "--", "sh", "-c",
                           "for i in 1 2 3 4 5 6; do ls / >/dev/null; sleep 0.4; done"], r / "t.parquet"),
            ("run --spool", ["tracer", "run", "syscalls", "-d", "5s", "-i", "1s", "--spool", str(r / "spool")],
             r / "spool"),
        ):
            bad = []
            for _ in range(per):
                shutil.rmtree(r, ignore_errors=True)
                r.mkdir(parents=True)
                delay = rng.uniform(0.5, 4.0)
                proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
                time.sleep(delay)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                problems = [f"{p} {v}" for p, v in _content(r).items() if v == "EMPTY" or str(v).startswith("UNREADABLE")]
                if target.is_dir():
                    ing = subprocess.run([str(BIN / "baseline"), "ingest", str(target), str(r / "ds"), "--quarantine",
                                          str(r / "q")], capture_output=True, timeout=300)
                    ok, detail = _verdict(ing, {0})
                    if not ok:
                        problems.append(f"ingest of the spool: {detail[-120:]}")
                again = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120)
                debris = [str(p.relative_to(r)) for p in r.rglob(".*") if ".tmp" in p.name]
                if again.returncode != 0 or problems or debris:
                    bad.append(f"at {delay:.2f}s: rerun exit {again.returncode} {again.stderr.strip()[-100:]}; "
                               f"{problems[:2]}, debris {debris[:2]}")
            results.append(Result(f"round12 kill -9 (group) x{per} tracer {name}: readers, rerun", not bad,
                                  f"{len(bad)} of {per} bad; " + " | ".join(bad[:2])))
        fcntl.flock(lock, fcntl.LOCK_UN)
    return results


def round12_cases(base: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random,
                  quick: bool) -> list[Result]:
    d = base / "r12"
    d.mkdir(exist_ok=True)
    results = _round12_kill9(d, fleet, good, spool, rng, 3 if quick else 10)
    results += _round12_recorder(d, rng, 2 if quick else 5)
    return results


# --------------------------------------------------------------------------------------------
# round thirteen: the tracer side running for a long time on a real host
# --------------------------------------------------------------------------------------------
# The tracer commands of the tree under test (the venv's `tracer` script imports whichever
# checkout the venv was installed from): python -m with this REPO first on the path.
TRACER = [sys.executable, "-m", "tracer.cli"]
TRACER_ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


def _owned_prog_ids(pid: int) -> set[int]:
    """BPF programs process `pid` (or its threads) holds open: attribution by owner, so other
    tracers on a shared machine do not count."""
    ids = set()
    with contextlib.suppress(OSError):
        for info in Path(f"/proc/{pid}/fdinfo").iterdir():
            with contextlib.suppress(OSError):
                if m := re.search(r"^prog_id:\s+(\d+)", info.read_text(), re.M):
                    ids.add(int(m.group(1)))
    return ids


_STARTED: list[_Tracer] = []  # every tracer a case started: none outlives the group


class _Tracer:
    """A `tracer run`/`record` subprocess: its stderr gathered, the BPF programs it holds
    sampled while it runs (checked gone after it exits)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict | None = None, wrapper: list[str] | None = None,
                 preexec=None):
        import threading

        self.proc = subprocess.Popen([*(wrapper or []), *TRACER, *argv], cwd=cwd, env=env or TRACER_ENV,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     errors="backslashreplace", preexec_fn=preexec, start_new_session=True)
        self.log: list[str] = []
        self.progs: set[int] = set()
        _STARTED.append(self)
        self._done = threading.Event()
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._sample, daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)
        self._done.set()

    def _sample(self) -> None:
        while self.proc.poll() is None:
            # the python under a wrapper (unshare) is its child: sample the whole session
            for pid in [self.proc.pid, *_children(self.proc.pid)]:
                self.progs |= _owned_prog_ids(pid)
            time.sleep(0.2)

    def wait_for(self, text: str, timeout: float = 90.0, count: int = 1) -> bool:
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.log) < count:
            if time.monotonic() > deadline or (self.proc.poll() is not None and self._done.is_set()):
                return False
            time.sleep(0.05)
        return True

    def finish(self, sig: int | None = signal.SIGTERM, timeout: float = 60) -> int | None:
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = None
        self._done.wait(5)
        return rc

    def problems(self, rc: int | None, codes: set[int]) -> list[str]:
        text = "".join(self.log)
        out = []
        if rc is None:
            out.append("hung (killed)")
        elif rc not in codes:
            out.append(f"exit {rc}")
        if "Traceback" in text or "internal error" in text:
            out.append("traceback")
        if rc == 2 and sum(1 for line in self.log if line.startswith("tracer: ")) != 1:
            out.append("not one error line")
        # a closed program is freed by the kernel a little later (RCU, a workqueue): on a loaded
        # machine that takes seconds, so give it a while before calling it left loaded
        if not _wait_until(lambda: not self.progs & (_bpf_prog_ids() or set()), 20):
            out.append(f"BPF programs left loaded {sorted(self.progs & (_bpf_prog_ids() or set()))[:4]}")
        return out


def _spool_problems(spool: Path) -> list[str]:
    """What a reader of the spool would trip on: unreadable or half snapshots, temporaries,
    sequence numbers out of order or twice."""
    sys.path.insert(0, str(REPO))
    from tracer.fleet.spool import list_snapshots, read_snapshot

    out = []
    if not spool.is_dir():
        return ["no spool"]
    snaps = list_snapshots(spool)
    for s in snaps:
        try:
            read_snapshot(s)
        except Exception as exc:  # noqa: BLE001 - a half snapshot a reader would take for data
            out.append(f"{s.name} unreadable ({type(exc).__name__})")
    seqs = [int(s.name.rsplit("-", 1)[1]) for s in snaps]
    if len(set(seqs)) != len(seqs) or seqs != sorted(seqs):
        out.append(f"sequence out of order or twice ({seqs[:8]}...)")
    debris = [str(p.relative_to(spool)) for p in spool.rglob(".*") if p.name.endswith(".tmp")]
    if debris:
        out.append(f"temporaries {debris[:3]}")
    return out


def _remove_tree(path: Path) -> None:
    """rm -rf of a directory a live writer keeps renaming files into (ENOTEMPTY: again)."""
    while path.exists():
        shutil.rmtree(path, ignore_errors=True)


def _wait_until(cond, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _r13_spool_faults(d: Path) -> list[Result]:
    """One daemon, the spool and its side files faulted in turn while it runs: a tmpfs filled to
    the last block then freed, bind-remounted read-only then read-write, its host directory
    deleted, the spool replaced by a file, the textfile directory removed, the control file
    made a directory, the metadata file rewritten as a FIFO / with a duplicate key / huge /
    with a syntax error. The daemon must log and go on through all of them, stop with 0 on
    SIGTERM, leave a spool every reader takes whole and no BPF program loaded."""
    spool, prom, meta, ctl = d / "spool", d / "prom", d / "job.yaml", d / "ctl"
    for p in (spool, prom):
        p.mkdir(parents=True, exist_ok=True)
    meta.write_text("job_id: '7'\n")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "r13-spool", str(spool)]).returncode:
        return [Result("round13 spool faults: tmpfs", False, "cannot mount a tmpfs")]
    results = []
    t = None
    try:
        t = _Tracer(["run", "syscalls", "-x", "-i", "0.3s", "--spool", str(spool), "--host", "h1", "--prom",
                     str(prom / "t.prom"), "--metadata-file", str(meta), "--control-file", str(ctl)], d)
        host = spool / "h1"
        refused: list[int] = []
        n = lambda: len(list(host.glob("snap-*"))) if host.is_dir() else 0  # noqa: E731
        steps: list[tuple[str, object, object]] = [
            ("tmpfs full", lambda: subprocess.run(["dd", "if=/dev/zero", f"of={spool}/filler", "bs=64k"],
                                                   capture_output=True), lambda: (spool / "filler").unlink()),
            # a remount refused (EBUSY: a file of the spool held open for writing) fails the case
            ("read-only", lambda: refused.append(subprocess.run(["mount", "-o", "remount,ro", str(spool)],
                                                                capture_output=True).returncode),
             lambda: subprocess.run(["mount", "-o", "remount,rw", str(spool)], check=True)),
            ("host dir deleted", lambda: _remove_tree(host), lambda: None),
            ("spool replaced by a file", lambda: (_remove_tree(host), host.write_text("x")), lambda: host.unlink()),
            ("textfile directory gone", lambda: _remove_tree(prom), lambda: prom.mkdir(exist_ok=True)),
            ("control file a directory", lambda: ctl.mkdir(), lambda: ctl.rmdir()),
            ("metadata FIFO", lambda: (meta.unlink(), os.mkfifo(meta)), lambda: None),
            ("metadata duplicate key", lambda: (meta.unlink(), meta.write_text("a: 1\na: 2\n")), lambda: None),
            ("metadata huge", lambda: (meta.unlink(), meta.write_bytes(b"# pad\n" * (400 << 10))), lambda: None),
            ("metadata syntax error", lambda: (meta.unlink(), meta.write_text("a: [\n")), lambda: None),
        ]
        if not t.wait_for("probes live"):
            rc = t.finish()
            return [Result("round13 spool faults: start", False, "".join(t.log)[-300:])]
        for name, fault, undo in steps:
            before = n()
            fault()
            time.sleep(1.0)  # a few intervals under the fault
            undo()
            alive = t.proc.poll() is None
            # after the fault, snapshots land again (a held interval is written, or new ones)
            fresh = name.startswith(("host", "spool"))  # the host directory starts again empty
            resumed = _wait_until(lambda b=before, f=fresh: n() > b + 1 or (f and n() >= 2), 20)
            made = not (name == "read-only" and any(refused))
            results.append(Result(f"round13 tracer run spool fault: {name}", alive and resumed and made,
                                  f"alive {alive}, resumed {resumed}, fault made {made}: "
                                  f"{''.join(t.log[-3:]).strip()[-300:]}"))
        rc = t.finish()
        bad = t.problems(rc, {0}) + _spool_problems(spool)
        results.append(Result("round13 tracer run spool faults: exit 0, spool whole, programs detached", not bad,
                              f"{bad}: {''.join(t.log[-4:]).strip()[-300:]}"))
    finally:
        if t is not None and t.proc.poll() is None:  # a step that raised: never leave the daemon running
            t.finish(signal.SIGKILL)
        subprocess.run(["umount", "-l", str(spool)], capture_output=True)
    return results


_STORM = ("import os, sys\n"
          "sys.stdin.readline()  # go: blocks without failing syscalls\n"
          "for _ in range(int(sys.argv[1])):\n"
          "    try: os.open('/nonexistent/tracebase-r13-storm', os.O_RDONLY)\n"
          "    except OSError: pass\n"
          "print('done', flush=True)\n"
          "sys.stdin.readline()\n")


def _r13_signals(d: Path, rng: random.Random) -> list[Result]:
    """SIGSTOP for 10 s while the -p target makes 20,000 failing openat into a 4 KiB ring buffer
    (--examples at its maximum): after SIGCONT the counters are exact (the openat failures add
    up to 20,000) and the spool's lost_records agree with the daemon's last line; a SIGUSR1 storm (100/s for 3 s), then SIGHUP: exit 0 after the
    final snapshot; SIGTERM at random instants of 0.1 s snapshots; kill -9 at random
    instants, then a restart on the same spool (temporaries cleaned, sequence continuing)."""
    results = []
    n = 20000
    spool = d / "sig-spool"
    target = subprocess.Popen([sys.executable, "-c", _STORM, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        t = _Tracer(["run", "syscalls", "-x", "-p", str(target.pid), "-i", "1s", "--ringbuf-kb", "4",
                     "--examples", str(2**31 - 1), "--spool",
                     str(spool), "--host", "h1"], d)
        if t.wait_for("probes live"):
            t.proc.send_signal(signal.SIGSTOP)
            target.stdin.write("go\n")
            target.stdin.flush()
            target.stdout.readline()
            time.sleep(10)
            t.proc.send_signal(signal.SIGCONT)
            time.sleep(2)
            for _ in range(300):
                t.proc.send_signal(signal.SIGUSR1)
                time.sleep(0.01)
            alive = t.proc.poll() is None
            rc = t.finish(signal.SIGHUP)
        else:
            alive, rc = False, t.finish()
    finally:
        target.kill()
        target.wait()
    bad = t.problems(rc, {0}) + _spool_problems(spool) + ([] if alive else ["died under SIGUSR1"])
    if not bad:
        sys.path.insert(0, str(REPO))
        from tracer.fleet.spool import read_spool

        c = read_spool(spool, "counters")
        fails = c.filter(pl.col("probe") == "openat")["failures"].sum()
        lost = c.group_by("snapshot_time").agg(pl.col("lost_records").first())["lost_records"].sum()
        if fails != n:
            bad.append(f"openat failures {fails}, expected {n}")
        # identical failures are one tree with a repeat count in the kernel (no record each),
        # so the ring may well keep up; whatever was lost, the spool and the log say the same
        said = re.search(r"stopped: .* (\d+) lost", "".join(t.log))
        if said is None or int(said.group(1)) != lost:
            bad.append(f"lost {lost} in the spool, the log says {said.group(1) if said else '?'}")
    results.append(Result("round13 tracer run SIGSTOP 10 s, SIGUSR1 storm, SIGHUP: counters exact, loss agreed",
                          not bad, f"{bad}: {''.join(t.log[-3:]).strip()[-300:]}"))
    for i in range(2):
        spool = d / f"term-{i}"
        t = _Tracer(["run", "syscalls", "-i", "0.1s", "--spool", str(spool), "--host", "h1"], d)
        ok = t.wait_for("probes live")
        time.sleep(rng.uniform(0.2, 2.0))
        rc = t.finish()
        bad = t.problems(rc, {0}) + _spool_problems(spool) + ([] if ok else ["never live"])
        results.append(Result(f"round13 tracer run SIGTERM amid 0.1 s snapshots (the floor) #{i}", not bad, f"{bad}"))
    spool = d / "k9-spool"
    seqs: list[int] = []
    for i in range(3):
        t = _Tracer(["run", "syscalls", "-i", "0.1s", "--spool", str(spool), "--host", "h1"], d)
        ok = t.wait_for("probes live")
        time.sleep(rng.uniform(0.1, 1.5))
        rc = t.finish(signal.SIGKILL) if i < 2 else t.finish()
        bad = t.problems(rc, {0, -9}) + ([] if ok else ["never live"])
        got = sorted(int(s.name.rsplit("-", 1)[1]) for s in (spool / "h1").glob("snap-*"))
        if seqs and got[:len(seqs)] != seqs:
            bad.append("earlier snapshots changed")
        seqs = got
        if i == 2:
            bad += _spool_problems(spool)  # the last run (SIGTERM) cleaned the killed runs' temporaries
        results.append(Result(f"round13 tracer run kill -9 then restart on the same spool #{i}", not bad, f"{bad}"))
    return results


def _r13_targets(d: Path) -> list[Result]:
    """-p of a process that exits while the probes attach (the daemon stops with its final
    snapshot, exit 0) and `tracer record` of awkward commands: one that execs a setuid binary,
    closes all its fds, forks 2,000 children, is killed by a signal, never exits (-d), whose
    output directory disappears mid-run."""
    results = []
    target = subprocess.Popen(["sleep", "600"])
    t = _Tracer(["run", "syscalls", "-x", "-p", str(target.pid), "-i", "1s", "-d", "10m", "--spool",
                 str(d / "p-spool"), "--host", "h1"], d)
    t.wait_for("compiling")
    target.kill()
    target.wait()
    rc = t.finish(None, timeout=90)
    bad = t.problems(rc, {0}) + _spool_problems(d / "p-spool")
    if not any("exited" in line for line in t.log):
        bad.append("no word that the process exited")
    results.append(Result("round13 tracer run -p of a process exiting while attaching: stops, exit 0", not bad,
                          f"{bad}: {''.join(t.log[-2:]).strip()[-200:]}"))
    out = d / "rec"
    cases = {
        "setuid exec": (["su", "nobody", "-s", "/bin/sh", "-c", "cat /nonexistent"], {1}),
        "closes all fds": (["sh", "-c", "exec 0<&- 1>&- 2>&-; ls /nonexistent"], {2}),
        "2,000 children": (["sh", "-c", "for i in $(seq 2000); do /bin/true & done; wait"], {0}),
        "killed by a signal": (["sh", "-c", "kill -9 $$"], {137}),
        "never exits (-d 2s)": (["-d", "2s", "--", "sleep", "600"], {0, 143, 137}),
    }
    for name, (cmd, codes) in cases.items():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        argv = ["record", "-o", str(out / "t.parquet"), *(cmd if cmd[0] == "-d" else ["--", *cmd])]
        t = _Tracer(argv, d)
        rc = t.finish(None, timeout=180)
        bad = t.problems(rc, codes)
        try:
            pl.read_parquet(out / "t.parquet")
        except Exception as exc:  # noqa: BLE001
            bad.append(f"trace unreadable ({type(exc).__name__})")
        results.append(Result(f"round13 tracer record of a command that {name}", not bad,
                              f"{bad}: {''.join(t.log[-2:]).strip()[-200:]}"))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    t = _Tracer(["record", "-o", str(out / "t.parquet"), "--", "sh", "-c", "sleep 4; ls /nonexistent"], d)
    time.sleep(2)
    shutil.rmtree(out)
    rc = t.finish(None, timeout=120)
    bad = t.problems(rc, {2})  # ls's status, or 2 naming the output; never a traceback
    debris = [p for p in d.rglob(".*") if p.name.endswith(".tmp")]
    results.append(Result("round13 tracer record whose output directory disappears mid-run", not bad and not debris,
                          f"{bad} {debris[:2]}: {''.join(t.log[-2:]).strip()[-200:]}"))
    return results


def _r13_limits(d: Path) -> list[Result]:
    """Resource limits and odd values: one line and exit 2, or a run that works (exit 0)."""
    results = []
    nofile = lambda n: lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))  # noqa: E731
    memlock = lambda: resource.setrlimit(resource.RLIMIT_MEMLOCK, (4096, 4096))  # noqa: E731
    vmem = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # noqa: E731
    run_ = ["run", "syscalls", "-x", "--host", "h1"]
    cases: list[tuple[str, list[str], set[int], object]] = [
        ("run RLIMIT_NOFILE 64", [*run_, "-d", "2s"], {0, 2}, nofile(64)),
        ("record RLIMIT_NOFILE 64", ["record", "-o", "{o}/t.parquet", "--", "ls", "/nonexistent"], {2}, nofile(64)),
        ("run RLIMIT_MEMLOCK 4 KiB", [*run_, "-d", "2s"], {0, 2}, memlock),
        ("run ulimit -v 1 GiB", [*run_, "-d", "2s"], {0, 2}, vmem),
        ("run --ringbuf-kb 1", [*run_, "-d", "2s", "--ringbuf-kb", "1"], {0}, None),
        ("run --ringbuf-kb 3 (not a power of two)", [*run_, "-d", "2s", "--ringbuf-kb", "3"], {0}, None),
        ("run --ringbuf-kb 0", [*run_, "-d", "2s", "--ringbuf-kb", "0"], {2}, None),
        ("run --ringbuf-kb huge", [*run_, "-d", "2s", "--ringbuf-kb", str(1 << 40)], {2}, None),
        ("run -i 0", [*run_, "-d", "2s", "-i", "0"], {2}, None),
        ("run -i 1ms", [*run_, "-d", "3s", "-i", "1ms"], {0, 2}, None),
        ("run -d 0", [*run_, "-d", "0"], {2}, None),
        ("run -d -1", [*run_, "-d", "-1"], {2}, None),
        ("run -d 10y", [*run_, "-d", "10y"], {2}, None),
        ("run --examples 0", [*run_, "-d", "2s", "--examples", "0"], {2}, None),
        ("run --sample 0", [*run_, "-d", "2s", "--sample", "0"], {2}, None),
        ("record -d 0", ["record", "-d", "0", "-o", "{o}/t.parquet", "--", "true"], {2}, None),
        ("record -d -1", ["record", "-d", "-1", "-o", "{o}/t.parquet", "--", "true"], {2}, None),
    ]
    for i, (name, argv, codes, pre) in enumerate(cases):
        o = d / f"lim{i}"
        o.mkdir()
        argv = [a.replace("{o}", str(o)) for a in argv]
        if argv[0] == "run":
            argv += ["--spool", str(o / "spool")]
        t = _Tracer(argv, o, preexec=pre)
        rc = t.finish(None, timeout=180)
        bad = t.problems(rc, codes)
        if rc == 0 and argv[0] == "run":
            bad += _spool_problems(o / "spool")
        results.append(Result(f"round13 {name}", not bad, f"{bad}: {''.join(t.log[-2:]).strip()[-200:]}"))
    return results


def _r13_environment(d: Path) -> list[Result]:
    """A fresh or odd host: tracefs and debugfs unmounted, /sys/fs/bpf absent (private mount
    namespaces), no HOME, LANG=C with a non-ASCII spool path, the cwd removed, a read-only /tmp."""
    results = []
    run_ = ["run", "syscalls", "-x", "-d", "2s", "-i", "1s", "--host", "h1"]
    ns = ["unshare", "-m", "--propagation", "private", "sh", "-c"]
    gone = d / "gone"
    gone.mkdir()
    cases = [
        ("tracefs and debugfs unmounted", ns + ["umount -l /sys/kernel/tracing; umount -l /sys/kernel/debug/tracing; "
                                                "umount -l /sys/kernel/debug; exec \"$@\"", "x"], None, d, {0, 2}),
        ("/sys/fs/bpf absent", ns + ["umount -l /sys/fs/bpf; exec \"$@\"", "x"], None, d, {0}),
        ("a read-only /tmp", ns + ["mount --bind /tmp /tmp && mount -o remount,ro,bind /tmp && exec \"$@\"", "x"],
         None, d, {0, 2}),
        ("no HOME", None, {k: v for k, v in TRACER_ENV.items() if k != "HOME"}, d, {0}),
        ("LANG=C, a non-ASCII spool path", None, {**TRACER_ENV, "LANG": "C", "LC_ALL": "C"}, d, {0}),
        ("cwd removed", None, None, gone, {0, 2}),
    ]
    for i, (name, wrapper, env, cwd, codes) in enumerate(cases):
        spool = d / (f"spøol-{i}" if "non-ASCII" in name else f"env-{i}")
        if cwd == gone:
            t = _Tracer([*run_, "--spool", str(spool)], cwd, env=env, wrapper=wrapper)
            # removed while the tracer starts: its later relative lookups find nothing
            time.sleep(0.5)
            shutil.rmtree(gone, ignore_errors=True)
        else:
            t = _Tracer([*run_, "--spool", str(spool)], cwd, env=env, wrapper=wrapper)
        rc = t.finish(None, timeout=180)
        bad = t.problems(rc, codes)
        if rc == 0 and "read-only" not in name:
            bad += _spool_problems(spool)
        results.append(Result(f"round13 tracer run with {name}", not bad, f"{bad}: {''.join(t.log[-2:]).strip()[-200:]}"))
    return results


def round13_cases(base: Path, rng: random.Random) -> list[Result]:
    if os.geteuid() != 0:
        print("round13: SKIP (needs root and BPF)", file=sys.stderr)
        return []
    import fcntl

    d = base / "r13"
    d.mkdir(exist_ok=True)
    results: list[Result] = []
    with open("/tmp/tracebase-real.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for group, fn in (("spool", _r13_spool_faults), ("signals", lambda g: _r13_signals(g, rng)),
                          ("targets", _r13_targets), ("limits", _r13_limits), ("environment", _r13_environment)):
            (d / group).mkdir(exist_ok=True)
            try:
                results += fn(d / group)
            except Exception as exc:  # noqa: BLE001 - the battery's own trouble is a failed case, not the end
                results.append(Result(f"round13 {group}: battery error", False, f"{type(exc).__name__}: {exc}"))
            finally:
                for t in _STARTED:
                    if t.proc.poll() is None:
                        t.finish(signal.SIGKILL)
        fcntl.flock(lock, fcntl.LOCK_UN)
    return results


# --------------------------------------------------------------------------------------------
# round fourteen: every secondary path option given odd files, a saved model gone bad, the
# learned list in the cwd gone bad, TMPDIR unwritable, two signals in a row, umask 002/077 on
# the writers earlier rounds did not check, and robust13's leftovers
# --------------------------------------------------------------------------------------------
def _r14_env(extra: dict | None = None) -> dict:
    # the code of this tree, whatever the venv's editable install points at
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1", **(extra or {})}


def _r14_run(argv: list[str], cwd: Path, codes: set[int], words: str = "", env: dict | None = None,
             timeout: float = 120, user: str | None = None) -> tuple[bool, str]:
    tool, *rest = argv
    cmd = [sys.executable, "-m", f"{tool}.cli", *rest]
    if user:
        cmd = ["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups", *cmd]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=env or _r14_env())
    except subprocess.TimeoutExpired:
        return False, f"hung > {timeout:g}s"
    return _verdict(proc, codes, words)


def _r14_odd(d: Path, kind: str) -> str:
    """A path of the given odd kind under d (made here)."""
    if kind == "a directory":
        (d / "adir").mkdir(exist_ok=True)
        return str(d / "adir")
    if kind == "a FIFO":
        if not (d / "afifo").exists():
            os.mkfifo(d / "afifo")
        return str(d / "afifo")
    if kind == "/dev/full":
        return "/dev/full"
    if kind == "a dangling symlink":
        with contextlib.suppress(FileExistsError):
            os.symlink("/nonexistent/tracebase-r14/x", d / "dangling")
        return str(d / "dangling")
    if kind == "a 4096-byte name":
        return str(d / ("n" * 4096))
    raise ValueError(kind)


_R14_KINDS = ("a directory", "a FIFO", "/dev/full", "a dangling symlink", "a 4096-byte name")


def _r14_odd_paths(d: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """The options beside the main input and output, each given a directory, a FIFO, /dev/full,
    a dangling symlink, a 4096-byte name, and (as nobody) a file it may not read: one line, exit
    2, never a hang (a FIFO without a writer) or a traceback."""
    g = list(map(str, good))
    inputs = {
        "diff --allowlist": lambda p: ["baseline", "diff", *g, str(bad), "--allowlist", p],
        "diff --learned": lambda p: ["baseline", "diff", *g, str(bad), "--learned", p],
        "audit --model": lambda p: ["baseline", "audit", str(fleet), "--model", p, "-o", str(d / "aud")],
        "audit --allowlist": lambda p: ["baseline", "audit", str(fleet), "--allowlist", p, "-o", str(d / "aud")],
        "evaluate --findings": lambda p: ["baseline", "evaluate", str(fleet), "--findings", p],
        "coverage --probes": lambda p: ["baseline", "coverage", str(fleet), "--probes", p, "-o", str(d / "cov")],
        "coverage --nccl-logs": lambda p: ["baseline", "coverage", str(fleet), "--nccl-logs", p, "-o", str(d / "cov")],
        "probes check SET": lambda p: ["tracer", "probes", "check", p],
    }
    outputs = {
        "audit --html": lambda p: ["baseline", "audit", str(fleet), "--html", p, "-o", str(d / "aud-h")],
        "learn --expected-out": lambda p: ["baseline", "learn", str(fleet), "-o", str(d / "m.parquet"),
                                           "--expected-out", p],
    }
    results = []
    for name, argv in inputs.items():
        for kind in _R14_KINDS:
            if kind == "a directory" and name == "evaluate --findings":
                continue  # a directory is what --findings takes
            ok, detail = _r14_run(argv(_r14_odd(d, kind)), d, {2}, timeout=90)
            results.append(Result(f"round14 {name} {kind}", ok, detail))
    for name, argv in outputs.items():
        for kind in ("a directory", "/dev/full", "a dangling symlink", "a 4096-byte name"):
            ok, detail = _r14_run(argv(_r14_odd(d, kind)), d, {2}, timeout=180)
            results.append(Result(f"round14 {name} {kind}", ok, detail))
    # a file nobody may read, as nobody (root reads anything): inputs in a world-readable copy
    shared = Path(tempfile.mkdtemp(prefix="tracebase-r14-", dir="/tmp"))
    try:
        os.chmod(shared, 0o755)
        ds = shared / "fleet"
        shutil.copytree(fleet, ds)
        for p in [ds, *ds.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        for i, src in enumerate([*good, bad]):
            shutil.copy(src, shared / f"t{i}.parquet")
            os.chmod(shared / f"t{i}.parquet", 0o644)
        secret = shared / "secret"
        shutil.copy(REPO / "expected_errors.yaml", secret)
        os.chmod(secret, 0o600)
        ts = [str(shared / f"t{i}.parquet") for i in range(3)]
        work = shared / "work"  # where nobody may write: the outputs, so only the odd path fails
        work.mkdir()
        os.chown(work, 65534, 65534)
        # (the --html directory is checked before any work: "directory ... is not writable")
        for name, (argv, says) in {
            "diff --allowlist": (["baseline", "diff", *ts, "--allowlist", str(secret)], "ermission denied"),
            "diff --learned": (["baseline", "diff", *ts, "--learned", str(secret)], "ermission denied"),
            "audit --model": (["baseline", "audit", str(ds), "--model", str(secret), "-o", str(work / "aud")],
                              "ermission denied"),
            "coverage --probes": (["baseline", "coverage", str(ds), "--probes", str(secret), "-o", str(work / "cov")],
                                  "ermission denied"),
            "audit --html into a root-only directory": (["baseline", "audit", str(ds), "-o", str(work / "aud2"),
                                                         "--html", str(shared / "rootonly" / "r.html")],
                                                        "is not writable"),
        }.items():
            (shared / "rootonly").mkdir(mode=0o700, exist_ok=True)
            ok, detail = _r14_run(argv, shared, {2}, says, user="nobody", timeout=180)
            results.append(Result(f"round14 {name} unreadable/unwritable as nobody", ok, detail))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    return results


def _r14_model(d: Path, fleet: Path) -> list[Result]:
    """`baseline audit` uses the saved model: that file truncated, of another schema version,
    with a column of the wrong type, with no rows, dictionary-encoded, or not Parquet at all. A
    refusal is one line naming the model; no audit directory is left half written."""
    model = fleet / "baseline-model.parquet"
    t = pq.read_table(model)
    meta = t.schema.metadata or {}
    raw = model.read_bytes()
    variants: dict[str, tuple[bytes | pa.Table, set[int]]] = {
        "truncated footer": (raw[:-7], {2}),
        "truncated half": (raw[: len(raw) // 2], {2}),
        "text": (b"version: 1\n", {2}),
        "empty file": (b"", {2}),
        "schema version 99": (t.replace_schema_metadata({**meta, schema.META_VERSION: b"99"}), {2}),
        "no tracebase metadata": (t.replace_schema_metadata({}), {0, 2}),
        "zero rows": (t.slice(0, 0), {0, 2}),
        "dictionary strings": (strings_as(t, lambda c: c.dictionary_encode()), {0, 2}),
    }
    num = next((f.name for f in t.schema if pa.types.is_floating(f.type) or pa.types.is_integer(f.type)), None)
    if num:
        i = t.schema.get_field_index(num)
        variants[f"column {num} as strings"] = (t.set_column(i, pa.field(num, pa.string()), t.column(i).cast(pa.string())), {2})
    results = []
    for name, (data, codes) in variants.items():
        bad_model = d / f"model-{name.replace(' ', '-')}.parquet"
        if isinstance(data, bytes):
            bad_model.write_bytes(data)
        else:
            pq.write_table(data, bad_model)
        out = d / "aud-model"
        shutil.rmtree(out, ignore_errors=True)
        proc = subprocess.run([sys.executable, "-m", "baseline.cli", "audit", str(fleet), "--model", str(bad_model),
                               "-o", str(out)], cwd=d, capture_output=True, timeout=300, env=_r14_env())
        ok, detail = _verdict(proc, codes)
        if proc.returncode == 2:
            ok = ok and bad_model.name in proc.stderr.decode(errors="replace")
            ok = ok and (not out.exists() or not any(out.iterdir()))
        results.append(Result(f"round14 audit --model {name}", ok, detail))
    return results


def _r14_learned_in_cwd(d: Path, good: list[Path], bad: Path) -> list[Result]:
    """./expected_errors.learned.yaml, which `baseline diff` loads by itself and `allowlist
    learn` merges into, gone bad: a key twice, wrong types, 20 MB, not UTF-8, a FIFO, a
    directory. diff: one line naming the file (or the diff); allowlist learn: one line and the
    file left byte for byte."""
    entry = ("  - id: learned-enoent-openat-0123456789\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
             "    path: /srv/job/cache\n    support: {runs: 2, total: 2}\n"
             "    first_seen: '2026-11-29T10:00:00Z'\n    last_seen: '2026-11-29T11:00:00Z'\n")
    cases: dict[str, bytes | None] = {
        "top-level key twice": ("version: 1\nentries:\n" + entry + "entries: []\n").encode(),
        "version a list": ("version: [1]\nentries:\n" + entry).encode(),
        "entries a string": b"version: 1\nentries: openat\n",
        "support a string": ("version: 1\nentries:\n" + entry.replace("{runs: 2, total: 2}", "lots")).encode(),
        "20 MB of comments": b"version: 1\nentries: []\n" + b"# pad\n" * ((20 << 20) // 6),
        "latin-1 bytes": ("version: 1\nentries:\n" + entry.replace("/srv/job/cache", "/srv/caf\xe9")).encode("latin-1"),
        "a FIFO": None,
        "a directory": None,
    }
    results = []
    for name, data in cases.items():
        cwd = d / f"cwd-{name.replace(' ', '-')}"
        shutil.rmtree(cwd, ignore_errors=True)
        cwd.mkdir()
        learned = cwd / "expected_errors.learned.yaml"
        if name == "a FIFO":
            os.mkfifo(learned)
        elif name == "a directory":
            learned.mkdir()
        else:
            learned.write_bytes(data)
        before = learned.read_bytes() if learned.is_file() else None
        codes = {1, 2} if name == "20 MB of comments" else {2}
        ok, detail = _r14_run(["baseline", "diff", *map(str, good), str(bad)], cwd, codes, timeout=90)
        if ok and "exit 2" in detail:
            ok = "expected_errors.learned.yaml" in detail
        results.append(Result(f"round14 diff with a learned list in the cwd: {name}", ok, detail))
        ok, detail = _r14_run(["baseline", "allowlist", "learn", *map(str, good)], cwd,
                              {0, 2} if name == "20 MB of comments" else {2}, timeout=90)
        kept = before is None or learned.read_bytes() == before or "exit 0" in detail
        debris = [p.name for p in cwd.iterdir() if p.name.startswith(".")]
        results.append(Result(f"round14 allowlist learn into a learned list in the cwd: {name}", ok and kept and not debris,
                              f"kept {kept}, debris {debris}; {detail}"))
    return results


def _r14_tmpdir(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """TMPDIR unwritable (/proc), or a file, with HOME unset and LANG=C: every writer finishes
    (its temporaries go beside its output) or says in one line what is wrong."""
    g = list(map(str, good))
    writers = {
        "simulate": ["baseline", "simulate", "--hosts", "1", "--hours", "1", "--seed", "4", "-o", str(d / "sim")],
        "learn": ["baseline", "learn", str(fleet), "-o", str(d / "m.parquet")],
        "audit": ["baseline", "audit", str(fleet), "-o", str(d / "aud")],
        "coverage": ["baseline", "coverage", str(fleet), "-o", str(d / "cov")],
        "evaluate": ["baseline", "evaluate", str(fleet), "--findings", str(d / "aud")],
        "export": ["baseline", "export", g[0], "-o", str(d / "x.json")],
        "allowlist learn": ["baseline", "allowlist", "learn", *g, "-o", str(d / "a.yaml")],
    }
    (d / "tmpfile").write_text("not a directory")
    results = []
    for tmp_name, tmp in (("/proc (unwritable)", "/proc"), ("a file", str(d / "tmpfile"))):
        env = _r14_env({"TMPDIR": tmp, "LANG": "C", "LC_ALL": "C"})
        env.pop("HOME", None)
        for name, argv in writers.items():
            ok, detail = _r14_run(argv, d, {0}, env=env, timeout=300)
            results.append(Result(f"round14 {name} with TMPDIR {tmp_name}, no HOME, LANG=C", ok, detail))
    return results


def _visible_whole(out: Path) -> list[str]:
    """Visible files a reader would take for data that are not whole."""
    bad = []
    for p in out.rglob("*") if out.is_dir() else ([out] if out.exists() else []):
        if p.name.startswith(".") or any(part.startswith(".") for part in p.relative_to(out.parent).parts) or not p.is_file():
            continue
        try:
            if p.suffix == ".parquet":
                pq.read_metadata(p)
            elif p.suffix == ".json":
                import json

                json.loads(p.read_bytes() or b"x")
            elif p.suffix in (".yaml", ".yml"):
                import yaml

                yaml.safe_load(p.read_bytes())
        except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
            bad.append(f"{p.name}: {type(exc).__name__}")
    return bad


def _r14_double_signals(d: Path, fleet: Path, good: list[Path], rng: random.Random, per: int) -> list[Result]:
    """Two signals in a row, as an impatient user or a service manager sends them: SIGINT twice
    50 ms apart (exit 130, no traceback from the second one landing in the first's cleanup),
    and SIGTERM then SIGKILL 0.05-0.5 s later (a stop timeout). Then what a reader sees is
    whole, and the same command again succeeds."""
    g = list(map(str, good))
    out = d / "out"
    writers = {
        "learn": ["baseline", "learn", str(fleet), "-o", str(out / "model.parquet")],
        "audit": ["baseline", "audit", str(fleet), "-o", str(out / "audit")],
        "allowlist learn": ["baseline", "allowlist", "learn", *g, "-o", str(out / "al.yaml")],
        "simulate": ["baseline", "simulate", "--hosts", "3", "--hours", "1", "--seed", "5", "-o", str(out / "sim")],
        "export": ["baseline", "export", str(fleet / "events"), "-o", str(out / "x.json")],
        "coverage": ["baseline", "coverage", str(fleet), "-o", str(out / "cov")],
    }
    results = []
    for name, argv in writers.items():
        tool, *rest = argv
        for how in ("SIGINT twice", "SIGTERM then SIGKILL"):
            for _ in range(per):
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                delay = rng.uniform(0.4, 3.0)
                proc = subprocess.Popen([sys.executable, "-m", f"{tool}.cli", *rest], cwd=d, env=_r14_env(),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(delay)
                if how == "SIGINT twice":
                    proc.send_signal(signal.SIGINT)
                    time.sleep(0.05)
                    proc.send_signal(signal.SIGINT)
                    codes = {0, 130, -signal.SIGINT}
                else:
                    proc.send_signal(signal.SIGTERM)
                    time.sleep(rng.uniform(0.05, 0.5))
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    codes = {0, 143, -signal.SIGTERM, -signal.SIGKILL}
                try:
                    _, err = proc.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    _, err = proc.communicate()
                    err = "hung; " + err
                half = _visible_whole(out)
                again = subprocess.run([sys.executable, "-m", f"{tool}.cli", *rest], cwd=d, env=_r14_env(),
                                       capture_output=True, text=True, timeout=600)
                half_after = _visible_whole(out)
                ok = (proc.returncode in codes and "Traceback" not in err and "hung" not in err and not half
                      and again.returncode == 0 and not half_after)
                results.append(Result(f"round14 {name} {how} at {delay:.2f}s", ok,
                                      f"exit {proc.returncode}, half {half[:2]}, rerun {again.returncode} "
                                      f"{again.stderr.strip()[-150:]}, {err.strip()[-200:]}"))
    return results


def _r14_umask(d: Path, fleet: Path, spool: Path | None) -> list[Result]:
    """umask 002 and 077 on the writers round eight did not check: audit -o (and --html),
    coverage -o, learn --expected-out, ingest into a new dataset. Files 0666 & ~umask, no
    directory world-writable (nor more open than 0775 & ~umask)."""
    results = []
    for mask in (0o002, 0o077):
        out = d / f"umask{mask:03o}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        os.chmod(out, 0o755)
        ds = out / "fleet"
        shutil.copytree(fleet, ds)  # learn's --expected-out and the audit read it
        b = f"{sys.executable} -m baseline.cli"
        scripts = [f"{b} audit {ds} -o {out}/aud --html {out}/aud.html",
                   f"{b} coverage {ds} -o {out}/cov", f"{b} learn {ds} -o {out}/m.parquet --expected-out {out}/exp.yaml"]
        if spool is not None:
            scripts.append(f"cp -a {spool} {out}/spool && {b} ingest {out}/spool {out}/ingested")
        made_before = {p for p in ds.rglob("*")}
        for script in scripts:
            proc = _sh(f"umask {mask:03o}; {script} >/dev/null", d, _r14_env())
            if proc.returncode != 0:
                results.append(Result(f"round14 umask {mask:03o}: {script.split()[3]}", False,
                                      proc.stderr.decode(errors="replace").strip()[-200:]))
        mine = [p for p in out.rglob("*") if p not in made_before and p != ds and not p.is_symlink()
                and not str(p).startswith(str(out / "spool")) and not str(p).startswith(str(ds) + "/")]
        wrong = []
        for p in mine:
            mode = p.stat().st_mode & 0o777
            if p.is_file() and mode != 0o666 & ~mask:
                wrong.append(f"{p.relative_to(out)} {mode:o}")
            if p.is_dir() and (mode & 0o002 or mode & ~(0o775 & ~mask)):
                wrong.append(f"{p.relative_to(out)}/ {mode:o}")
        files = sum(1 for p in mine if p.is_file())
        results.append(Result(f"round14 umask {mask:03o} modes of audit/coverage/learn --expected-out/ingest outputs",
                              files >= 5 and not wrong, f"{files} files, wrong: {wrong[:5]}"))
    return results


def _r14_leftovers(d: Path) -> list[Result]:
    """robust13's leftovers seen from outside: -i out of 100ms..1h refused (root: `tracer run`
    checks its options after the root check), a spool whose clock stepped back ingested in
    sequence order, `tracer record` whose output directory is removed mid-run (exit 2 naming
    it, the trace kept in TMPDIR, the directory not recreated)."""
    results = []
    sys.path.insert(0, str(REPO))
    from tracer.fleet.spool import counters_table, events_table, write_snapshot

    spool = d / "stepped"
    t0 = 1_764_900_000_000_000_000
    for seq, when in enumerate([t0, t0 + 5 * 10**9, t0 - 5 * 10**9, t0 + 1 * 10**9]):
        counters = counters_table([{"host": "h1", "snapshot_time": when, "interval_s": 5.0, "probe": "openat",
                                    "layer": "syscall", "live": True, "invocations": seq + 1, "failures": 0}])
        write_snapshot(spool, "h1", events_table([]), counters, when, seq, durable=False)
    proc = subprocess.run([sys.executable, "-m", "baseline.cli", "ingest", str(spool), str(d / "stepped-ds")],
                          cwd=d, capture_output=True, timeout=300, env=_r14_env())
    try:
        parts = sorted((d / "stepped-ds" / "counters").glob("date=*/host=h1/part-*.parquet"))
        got = pq.read_table(parts).column("invocations").to_pylist() if len(parts) == 1 else parts
    except Exception as exc:  # noqa: BLE001
        got = f"{type(exc).__name__}: {exc}"
    results.append(Result("round14 ingest of a spool whose clock stepped back: rows in sequence order",
                          proc.returncode == 0 and got == [1, 2, 3, 4], f"exit {proc.returncode}, rows {got}"))
    if os.geteuid() != 0:
        return results
    for value in ("1ms", "50ms", "2h"):
        ok, detail = _r14_run(["tracer", "run", "syscalls", "-i", value, "-d", "1s", "--spool", str(d / "sp")], d, {2},
                              "-i/--interval")
        results.append(Result(f"round14 tracer run -i {value} refused", ok and not (d / "sp").exists(), detail))
    out, spare = d / "rec", d / "spare"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    spare.mkdir(exist_ok=True)
    env = _r14_env({"TMPDIR": str(spare)})
    proc = subprocess.run([sys.executable, "-m", "tracer.cli", "record", "-o", str(out / "t.parquet"), "--", "sh", "-c",
                           f"ls -R /usr/lib/python3 >/dev/null; rm -r {out}"], cwd=d, capture_output=True, timeout=300,
                          env=env)
    ok, detail = _verdict(proc, {2}, "was removed")
    saved = list(spare.glob("t-*.parquet"))
    results.append(Result("round14 tracer record whose output directory is removed mid-run: exit 2, kept in TMPDIR, "
                          "not recreated", ok and not out.exists() and len(saved) == 1, f"recreated {out.exists()}, "
                          f"saved {[p.name for p in saved]}; {detail}"))
    return results


def round14_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                  quick: bool) -> list[Result]:
    d = base / "r14"
    d.mkdir(exist_ok=True)
    results: list[Result] = []
    for group, fn in (("paths", lambda g: _r14_odd_paths(g, fleet, good, bad)), ("model", lambda g: _r14_model(g, fleet)),
                      ("learned", lambda g: _r14_learned_in_cwd(g, good, bad)),
                      ("tmpdir", lambda g: _r14_tmpdir(g, fleet, good)),
                      ("signals", lambda g: _r14_double_signals(g, fleet, good, rng, 1 if quick else 2)),
                      ("umask", lambda g: _r14_umask(g, fleet, spool)), ("leftovers", _r14_leftovers)):
        (d / group).mkdir(exist_ok=True)
        try:
            results += fn(d / group)
        except Exception as exc:  # noqa: BLE001 - the battery's own trouble is a failed case, not the end
            results.append(Result(f"round14 {group}: battery error", False, f"{type(exc).__name__}: {exc}"))
    return results


# --------------------------------------------------------------------------------------------
# round fifteen: kill -9 swept evenly across each writer's run, two writers of different
# inputs on one output, odd streams with an error to report, odd numbers on every numeric
# option, odd Parquet files inside a dataset; the code of this tree (PYTHONPATH set to it)
# --------------------------------------------------------------------------------------------
def _r15_cmd(argv: list[str]) -> list[str]:
    tool, *rest = argv
    return [sys.executable, "-m", f"{tool}.cli", *rest]


def _r15_start(argv: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(_r15_cmd(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=cwd, env=_r14_env())


def _r15_glob_problems(out: Path) -> list[str]:
    """The documented readers' globs on every dataset below `out` (`<table>/**/*.parquet`, as
    docs/airflow.md reads them with polars): the scan succeeds, and finds no file under a dot
    name (a writer's staging tree)."""
    bad = []
    for table_dir in sorted(p for p in out.rglob("*") if p.is_dir() and p.name in ("events", "counters")
                            and not any(part.startswith(".") for part in p.relative_to(out).parts)):
        hidden = [p for p in table_dir.rglob("*.parquet")
                  if any(part.startswith(".") for part in p.relative_to(table_dir).parts)]
        if hidden:
            bad.append(f"{hidden[0].relative_to(out)}: a staging file under the documented glob")
        if not any(table_dir.rglob("*.parquet")):
            continue
        try:
            pl.scan_parquet(str(table_dir / "**" / "*.parquet"),
                            hive_schema={"date": pl.String, "host": pl.String}).select(pl.len()).collect()
        except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
            bad.append(f"{table_dir.relative_to(out)}/**/*.parquet: {type(exc).__name__} {str(exc)[:80]}")
    return bad


def _r15_sweep(d: Path, fleet: Path, good: list[Path], spool: Path | None, points: int) -> list[Result]:
    """kill -9 of the process group at `points` instants spread evenly over each writer's
    uninterrupted run time (k + 0.5) / points, so the early, middle and late phases (temp
    written, mid-partition, between the outputs, the renames) are each hit: then what a reader
    sees is whole, the documented glob reads, the rerun succeeds with the uninterrupted run's
    content, and no staging or temporary is left in the output's directory."""
    out = d / "out"
    jobs = {
        "learn -o": ["baseline", "learn", str(d / "fleet"), "-o", str(out / "m.parquet")],
        "audit -o": ["baseline", "audit", str(d / "fleet"), "-o", str(out / "aud")],
        "allowlist learn -o": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(out / "al.yaml")],
        "simulate -o": ["baseline", "simulate", "--hosts", "4", "--hours", "1", "--seed", "5", "-o", str(out / "sim")],
        "export -o": ["baseline", "export", str(good[0]), str(good[1]), "-o", str(out / "x.json")],
        "coverage -o": ["baseline", "coverage", str(d / "fleet"), "-o", str(out / "cov")],
        "expected learn -o": ["baseline", "expected", "learn", str(d / "fleet"), "-o", str(out / "e.yaml")],
    }
    template = d / "template"
    if spool is not None:
        # a dataset holding the first half of the spool's snapshots, ingested three times over
        # (three part files per partition), and the second half to ingest with compaction
        shutil.rmtree(template, ignore_errors=True)
        snaps = sorted(spool.glob("*/snap-*"))
        for i, snap in enumerate(snaps):
            shutil.copytree(snap, template / ("spool2" if i >= len(snaps) // 2 else f"spool1-{i % 3}")
                            / snap.parent.name / snap.name)
        for i in range(3):
            subprocess.run(_r15_cmd(["baseline", "ingest", str(template / f"spool1-{i}"), str(template / "ds")]),
                           capture_output=True, timeout=600, check=True, env=_r14_env())
        jobs["ingest + compaction"] = ["baseline", "ingest", str(d / "spool2"), str(out / "ds"),
                                       "--compact-min-files", "2"]

    def fresh(name: str) -> None:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(d / "fleet", ignore_errors=True)
        out.mkdir(parents=True)
        shutil.copytree(fleet, d / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
        if name.startswith("ingest"):
            shutil.rmtree(d / "spool2", ignore_errors=True)
            shutil.copytree(template / "spool2", d / "spool2")
            shutil.copytree(template / "ds", out / "ds")

    results = []
    for name, argv in jobs.items():
        clean, took = [], 0.0
        for _ in range(2):
            fresh(name)
            t0 = time.monotonic()
            proc = _r15_start(argv, d)
            err = proc.communicate(timeout=600)[1]
            took = time.monotonic() - t0
            clean.append(_content(out))
        if proc.returncode != 0:
            results.append(Result(f"round15 kill -9 sweep {name}: uninterrupted run", False, err.strip()[-200:]))
            continue
        stable = {p for p in clean[0] if clean[0].get(p) == clean[1].get(p)}
        bad = []
        for k in range(points):
            fresh(name)
            delay = took * (k + 0.5) / points
            proc = _r15_start(argv, d)
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            problems = [f"{p} {v}" for p, v in _content(out).items() if v == "EMPTY" or str(v).startswith("UNREADABLE")]
            problems += _r15_glob_problems(out) + _visible_whole(out)
            again = _r15_start(argv, d)
            err = again.communicate(timeout=600)[1]
            got = _content(out)
            differ = sorted(p for p in set(clean[0]) | set(got)
                            if (p in stable and clean[0].get(p) != got.get(p)) or ((p in clean[0]) != (p in got)))
            debris = [str(p.relative_to(out)) for p in out.rglob(".*") if p.name.endswith(".tmp")]
            if again.returncode != 0 or problems or differ or debris:
                bad.append(f"at {delay:.2f}s of {took:.2f}: rerun exit {again.returncode} {err.strip()[-120:]}; "
                           f"readers {problems[:2]}, differ {differ[:2]}, debris {debris[:2]}")
        results.append(Result(f"round15 kill -9 sweep x{points} {name}: readers, glob, rerun same content", not bad,
                              f"{len(bad)} of {points} bad; " + " | ".join(bad[:2])))
    return results


def _r15_two_writers(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """Two writers of *different* inputs on one output, the second started at 0, 1/3 and 2/3
    of the first's run: each exits 0 (or 2 in one line), and the output is one run's whole
    output, never a mix of the two; a list merged in place holds both runs' entries, merged in
    one order or the other (a run that said "1 added" and lost it is a lost update)."""
    other = d / "fleet-b"
    proc = subprocess.run(_r15_cmd(["baseline", "simulate", "--hosts", "5", "--hours", "1", "--seed", "9", "-o",
                                    str(other)]), capture_output=True, timeout=600, env=_r14_env())
    if proc.returncode != 0:
        return [Result("round15 two writers: second fleet", False, proc.stderr.decode(errors="replace")[-200:])]
    optional = PROGRAM[:3] + [("openat", -2, "ENOENT", "/etc/job/optional.conf")] + PROGRAM[3:]
    good_b = [write(events(f"o{i}", optional, 40 + i, "good"), d / f"optional{i}.parquet") for i in (1, 2)]
    k = d / "two"
    pairs = {
        "learn": lambda src: ["baseline", "learn", str(src), "-o", str(k / "m.parquet")],
        "audit": lambda src: ["baseline", "audit", str(src), "-o", str(k / "aud")],
        "coverage": lambda src: ["baseline", "coverage", str(src), "-o", str(k / "cov")],
        "simulate": lambda src: ["baseline", "simulate", "--hosts", "3", "--hours", "1",
                                 "--seed", "1" if src == "a" else "2", "-o", str(k / "sim")],
        "allowlist learn": lambda src: ["baseline", "allowlist", "learn", *map(str, good if src == "a" else good_b),
                                        "-o", str(k / "al.yaml")],
    }
    sources = {"learn": (fleet, other), "audit": (fleet, other), "coverage": (fleet, other), "simulate": ("a", "b"),
               "allowlist learn": ("a", "b")}

    def fresh() -> None:
        shutil.rmtree(k, ignore_errors=True)
        k.mkdir()

    def alone(argvs: list[list[str]]) -> tuple[dict, float]:
        fresh()
        t0 = time.monotonic()
        for argv in argvs:
            subprocess.run(_r15_cmd(argv), capture_output=True, timeout=600, env=_r14_env(), cwd=d, check=True)
        return _content(k), time.monotonic() - t0

    results = []
    for name, make in pairs.items():
        a, b = (make(s) for s in sources[name])
        try:
            want_a, took = alone([a])
            want_b, _ = alone([b])
            wants = [want_a, want_b]
            if name == "allowlist learn":  # merged in place: both runs' entries, in one order or the other
                wants = [alone([a, b])[0], alone([b, a])[0]]
        except subprocess.CalledProcessError as exc:
            results.append(Result(f"round15 two writers {name}: alone", False, exc.stderr.decode(errors="replace")[-200:]))
            continue
        # the HTML footer's time is masked by _content; the rest must be one of the wanted trees
        bad = []
        for frac in (0.0, 1 / 3, 2 / 3):
            fresh()
            first = _r15_start(a, d)
            time.sleep(took * frac)
            second = _r15_start(b, d)
            errs = [p.communicate(timeout=600)[1] for p in (first, second)]
            codes = [p.returncode for p in (first, second)]
            lines_ok = all(c == 0 or (c == 2 and len(e.strip().splitlines()) == 1 and "Traceback" not in e)
                           for c, e in zip(codes, errs, strict=True))
            got = _content(k)
            whole = any(got == w for w in wants)
            if not (lines_ok and whole and 0 in codes):
                mixed = sorted(p for p in set(got) | set(want_a) if got.get(p) not in (want_a.get(p), want_b.get(p)))
                bad.append(f"second at {frac:.2f}: exits {codes} {[e.strip()[-100:] for e in errs]}; "
                           f"mixed/odd {mixed[:3]}")
        results.append(Result(f"round15 two writers of different inputs, one output: {name}", not bad,
                              " | ".join(bad[:2])))
    return results


def _r15_streams(d: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """Odd streams with something to say: stdout a pipe whose reader has already gone (EPIPE on
    the first write: quiet, the status unchanged), and an error to report with stderr on
    /dev/full, stderr a pipe whose reader has gone, or stdout and stderr both closed: exit 2,
    never death by SIGPIPE, never a hang."""
    g = " ".join(map(str, good))
    b = f"{sys.executable} -m baseline.cli"
    t = f"{sys.executable} -m tracer.cli"
    printing = {
        "diff": (f"{b} diff {g} {bad}", 1), "diff --json": (f"{b} diff {g} {bad} --json", 1),
        "audit --json": (f"{b} audit {fleet} -o {d}/aud --json", 0), "evaluate --json": (f"{b} evaluate {fleet} --findings {d}/aud --json", 0),  # audit's
        "simulate --json": (f"{b} simulate --hosts 2 --hours 1 --seed 1 -o {d}/sim --json", 0),
        "export -o -": (f"{b} export {good[0]} -o -", 0), "diff --help": (f"{b} diff --help", 0),
        "tracer record --help": (f"{t} record --help", 0),
    }
    if os.geteuid() == 0:
        printing["probes check --json"] = (f"{t} probes check syscalls --json", 0)
    results = []
    for name, (cmd, status) in printing.items():
        shutil.rmtree(d / "sim", ignore_errors=True)
        # the reader exits before the command starts: its first write meets EPIPE
        proc = _sh(f"exec 3>&1; st=$( {{ (sleep 0.3; {cmd} 2>{d}/err; echo $? >&3) | true; }} 3>&1 ); "
                   f"echo $st; cat {d}/err >&2", d, _r14_env(), timeout=300)
        got = proc.stdout.decode().strip()
        err = proc.stderr.decode(errors="replace")
        results.append(Result(f"round15 stdout a pipe whose reader has gone: {name}",
                              got == str(status) and not err.strip(), f"status {got!r}, stderr {err.strip()[-200:]}"))
    failing = {
        "diff of a missing trace": f"{b} diff {g} {d}/missing.parquet",
        "audit of a missing dataset": f"{b} audit {d}/nodataset -o {d}/aud2",
        "simulate --hosts 0": f"{b} simulate --hosts 0 --hours 1 -o {d}/sim0",
        "tracer record -d nan": f"{t} record -p 1 -d nan -o {d}/r.parquet",
    }
    for name, cmd in failing.items():
        for how, redir in (("stderr on /dev/full", "2>/dev/full"), ("stdout and stderr closed", ">&- 2>&-"),
                           ("stderr a pipe whose reader has gone", "2>&3")):
            if how.startswith("stderr a pipe"):
                script = f"exec 4>&1; st=$( {{ (sleep 0.3; {cmd} 3>&- 2>&1 >/dev/null; echo $? >&4) | true; }} 4>&1 ); echo $st"
            else:
                script = f"{cmd} {redir}; echo $?"
            try:
                proc = _sh(script, d, _r14_env(), timeout=120)
                got = proc.stdout.decode().strip().splitlines()[-1:] or [""]
                ok, detail = got[0] == "2", f"status {got[0]!r}"
            except subprocess.TimeoutExpired:
                ok, detail = False, "hung > 120s"
            results.append(Result(f"round15 {name} with {how}: exit 2", ok, detail))
    return results


_R15_NUMBERS = ("-1", "0", "nan", "inf", "1e309", str(2**64), "5 s", "\u0661\u0662", "")


def _r15_numbers(d: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """Every numeric option given -1, 0, nan, inf, 1e309, 2**64, '5 s', Arabic-Indic digits and
    an empty string: a negative value or one that is not a finite ASCII number is refused in
    one line naming the option, exit 2, before any work; 0, 2**64 and '5 s' are taken or
    refused per option (never a hang on 2**64 hosts, never a traceback)."""
    g = list(map(str, good))
    opts = {
        "diff --context": lambda v: ["baseline", "diff", *g, str(bad), f"--context={v}"],
        "diff --window": lambda v: ["baseline", "diff", *g, str(bad), f"--window={v}"],
        "diff --max-anomalies": lambda v: ["baseline", "diff", *g, str(bad), f"--max-anomalies={v}"],
        "export --max-events": lambda v: ["baseline", "export", g[0], f"--max-events={v}", "-o", str(d / "x.json")],
        "simulate --hosts": lambda v: ["baseline", "simulate", f"--hosts={v}", "--hours", "1", "-o", str(d / "s")],
        "simulate --hours": lambda v: ["baseline", "simulate", "--hosts", "2", f"--hours={v}", "-o", str(d / "s")],
        "simulate --seed": lambda v: ["baseline", "simulate", "--hosts", "2", "--hours", "1", f"--seed={v}",
                                      "-o", str(d / "s")],
        "simulate --workers": lambda v: ["baseline", "simulate", "--hosts", "2", "--hours", "1", f"--workers={v}",
                                         "-o", str(d / "s")],
        "simulate --good-rate": lambda v: ["baseline", "simulate", "--hosts", "2", "--hours", "1", f"--good-rate={v}",
                                           "-o", str(d / "s")],
        "simulate --events-target": lambda v: ["baseline", "simulate", "--hosts", "2", "--hours", "1",
                                               f"--events-target={v}", "-o", str(d / "s")],
        "allowlist learn --min-support": lambda v: ["baseline", "allowlist", "learn", *g, f"--min-support={v}",
                                                    "-o", str(d / "al.yaml")],
        "expected learn --min-hosts": lambda v: ["baseline", "expected", "learn", str(fleet), f"--min-hosts={v}",
                                                 "-o", str(d / "e.yaml")],
        "ingest -j": lambda v: ["baseline", "ingest", str(d / "nospool"), str(d / "ds"), f"--workers={v}"],
        "ingest --compact-min-files": lambda v: ["baseline", "ingest", str(d / "nospool"), str(d / "ds"),
                                                 f"--compact-min-files={v}"],
        "coverage --trend-pct": lambda v: ["baseline", "coverage", str(fleet), f"--trend-pct={v}", "-o", str(d / "cov")],
    }
    if os.geteuid() == 0:
        opts.update({
            "record -d": lambda v: ["tracer", "record", "-p", "1", f"--duration={v}", "-o", str(d / "r.parquet")],
            "record --linger": lambda v: ["tracer", "record", f"--linger={v}", "-o", str(d / "r.parquet"), "--", "true"],
            "record --ringbuf-mb": lambda v: ["tracer", "record", f"--ringbuf-mb={v}", "-o", str(d / "r.parquet"),
                                              "--", "true"],
        })
    (d / "nospool").mkdir(exist_ok=True)
    results = []
    for name, make in opts.items():
        flag = name.split()[-1]
        for value in _R15_NUMBERS:
            shutil.rmtree(d / "s", ignore_errors=True)
            # 0, 2**64 (a cap or threshold that large is no cap) and '5 s' (durations allow
            # blanks around the unit) may be taken; the rest are not numbers, or negative
            codes = {0, 1, 2} if value in ("0", str(2**64), "5 s") else {2}
            if flag == "--linger" and value == "inf":
                codes = {0}
            try:
                proc = subprocess.run(_r15_cmd(make(value)), cwd=d, capture_output=True, timeout=120, env=_r14_env())
            except subprocess.TimeoutExpired:
                results.append(Result(f"round15 {name} {value!r}", False, "hung > 120s"))
                continue
            ok, detail = _verdict(proc, codes)
            err = proc.stderr.decode(errors="replace")
            if codes == {2} and proc.returncode == 2 and flag not in err and "-" + flag.lstrip("-")[:1] not in err:
                ok, detail = False, f"the line does not name {flag}: {detail}"
            results.append(Result(f"round15 {name} {value!r}", ok, detail))
    return results


def _r15_parquet(d: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    """Odd files inside a dataset's host partition (part-zz.parquet): extra columns, a missing
    column, a future schema version, a nested type where a scalar belongs, no row groups,
    CSV, JSON, empty, a directory. learn, audit and coverage each finish, or stop in one line
    naming that file, exit 2; the same kinds as a trace given to diff and export."""
    host_dir = next(p for p in sorted((fleet / "events").glob("date=*/host=*")) if any(p.glob("*.parquet")))
    sample = pq.read_table(next(host_dir.glob("*.parquet")))
    meta = sample.schema.metadata or {}
    trace = pq.read_table(good[0])

    def variants(t: pa.Table) -> dict:
        first = t.column_names[0]
        nested_col = next((n for n in t.column_names if pa.types.is_integer(t.schema.field(n).type)), first)
        return {
            "extra columns": lambda p: pq.write_table(t.append_column("zz_extra", pa.array(["x"] * t.num_rows)), p),
            "a missing column": lambda p: pq.write_table(t.drop_columns([nested_col]), p),
            "schema version 99": lambda p: pq.write_table(t.replace_schema_metadata(
                {**(t.schema.metadata or {}), **{k: (b"99" if b"version" in k else v)
                                                 for k, v in (t.schema.metadata or {}).items()}}), p),
            "a nested type": lambda p: pq.write_table(t.set_column(t.column_names.index(nested_col), nested_col,
                                                                    pa.array([[1]] * t.num_rows)), p),
            "no row groups": lambda p: pq.ParquetWriter(p, t.schema).close(),
            "CSV": lambda p: p.write_text("trace_id,seq\ng1,0\n"),
            "JSON": lambda p: p.write_text('{"trace_id": "g1", "seq": 0}\n'),
            "empty": lambda p: p.write_bytes(b""),
            "a directory": lambda p: p.mkdir(),
        }

    del meta
    results = []
    for kind, make in variants(sample).items():
        ds = d / "ds"
        shutil.rmtree(ds, ignore_errors=True)
        shutil.copytree(fleet, ds, ignore=shutil.ignore_patterns("audit", "expected*"))
        target = ds / host_dir.relative_to(fleet) / "part-zz.parquet"
        make(target)
        for argv in (["learn", str(ds), "-o", str(d / "m.parquet")], ["audit", str(ds), "-o", str(d / "aud")],
                     ["coverage", str(ds), "-o", str(d / "cov")]):
            proc = subprocess.run(_r15_cmd(["baseline", *argv]), cwd=d, capture_output=True, timeout=300, env=_r14_env())
            ok, detail = _verdict(proc, {0, 2})
            if proc.returncode == 2 and "part-zz.parquet" not in proc.stderr.decode(errors="replace"):
                ok, detail = False, f"does not name part-zz.parquet: {detail}"
            results.append(Result(f"round15 {argv[0]} of a dataset with a part file: {kind}", ok, detail))
    for kind, make in variants(trace).items():
        p = d / f"trace-{kind.replace(' ', '-')}.parquet"
        shutil.rmtree(p, ignore_errors=True)
        make(p)
        for argv in (["diff", *map(str, good), str(p)], ["export", str(p), "-o", str(d / "x.json")]):
            proc = subprocess.run(_r15_cmd(["baseline", *argv]), cwd=d, capture_output=True, timeout=300, env=_r14_env())
            ok, detail = _verdict(proc, {0, 1, 2})
            if proc.returncode == 2 and p.name not in proc.stderr.decode(errors="replace"):
                ok, detail = False, f"does not name {p.name}: {detail}"
            results.append(Result(f"round15 {argv[0]} of a trace: {kind}", ok, detail))
    return results


def _r15_leftovers(d: Path) -> list[Result]:
    """robust14's leftovers seen from outside: spills of two runs read back run after run; a
    compaction killed mid-swap leaves nothing the documented glob finds; the scenario
    harness leaves no port lock files (tests/test_robust_fifteenth.py runs them)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_fifteenth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round15 robust14's leftovers (tests/test_robust_fifteenth.py)", proc.returncode == 0, tail[0])]


def _r15_tracer_debris(d: Path) -> list[str]:
    return [str(p.relative_to(d)) for p in d.rglob(".*") if p.name.endswith(".tmp")]


def _r15_tracer(d: Path, points: int) -> list[Result]:
    """`tracer record` (its default output name, new at every run) and `tracer run --spool`
    stopped at `points` instants spread evenly over each one's uninterrupted run -- compiling,
    running, writing -- by kill -9 of the process group, SIGTERM and SIGINT in turn (root):
    every visible Parquet file is whole, a spool's snapshots read whole and `baseline ingest`
    takes them, a stop signal exits with the command's status (or 0/130/143 before it ran) and
    leaves its trace whole; then the command again, into the same directory under another name,
    succeeds and leaves no temporary of any run there."""
    if os.geteuid() != 0:
        return []
    import fcntl

    from tracer.fleet.spool import list_snapshots

    jobs = {
        "record": (["tracer", "record", "--", "/bin/sh", "-c", "ls -lR /usr/share >/dev/null 2>&1"],
                   ["tracer", "record", "-q", "--", "/bin/true"]),
        "run --spool": (["tracer", "run", "syscalls", "-d", "4s", "-i", "0.2s", "--spool", "spool", "--host", "h1"],
                        ["tracer", "run", "syscalls", "-d", "0.5s", "--spool", "spool", "--host", "h1"]),
    }
    stops = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
    results = []
    with open("/tmp/tracebase-real.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name, (argv, again_argv) in jobs.items():
            out = d / name.split()[0]
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            t0 = time.monotonic()
            first = _r15_start(argv, out)
            err = first.communicate(timeout=600)[1]
            took = time.monotonic() - t0
            if first.returncode != 0:
                results.append(Result(f"round15 tracer {name}: uninterrupted run", False, err.strip()[-200:]))
                continue
            bad = []
            # each signal at its own instants spread over the whole run, then one kill -9 the
            # moment a temporary shows (a trace or snapshot being written: a window a spread
            # instant rarely hits)
            per = max(1, points // len(stops))
            instants = [(stops[min(k // per, len(stops) - 1)], took * (k % per + 0.5) / per) for k in range(points)]
            for sig, delay in [*instants, (signal.SIGKILL, None)]:
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                proc = _r15_start(argv, out)
                if delay is None:
                    deadline = time.monotonic() + 600
                    while proc.poll() is None and time.monotonic() < deadline and not [
                            p for p in out.rglob(".*") if p.name.endswith(".tmp") and p.name.startswith((".trace-", ".snap-"))]:
                        time.sleep(0.001)
                else:
                    time.sleep(delay)
                with contextlib.suppress(ProcessLookupError):
                    if sig == signal.SIGKILL:
                        os.killpg(proc.pid, sig)  # the traced command too
                    else:
                        proc.send_signal(sig)  # forwarded to the command by the recorder itself
                err = proc.communicate(timeout=600)[1]
                problems = _visible_whole(out)
                if sig != signal.SIGKILL and proc.returncode not in (0, 128 + sig):
                    problems.append(f"exit {proc.returncode}: {err.strip()[-100:]}")
                if name.startswith("run") and (out / "spool").is_dir():
                    for snap in list_snapshots(out / "spool"):
                        if sorted(p.name for p in snap.iterdir()) != ["counters.parquet", "events.parquet"]:
                            problems.append(f"{snap.name}: half snapshot")
                    if sig != signal.SIGKILL and _r15_tracer_debris(out):
                        problems.append("a stop signal left temporaries")
                    copy = d / "spool-copy"
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.rmtree(d / "ds", ignore_errors=True)
                    shutil.copytree(out / "spool", copy)
                    ing = subprocess.run(_r15_cmd(["baseline", "ingest", str(copy), str(d / "ds")]), capture_output=True,
                                         text=True, timeout=300, env=_r14_env())
                    shutil.rmtree(d / "ds", ignore_errors=True)
                    if ing.returncode != 0:
                        problems.append(f"ingest of what it left: {ing.stderr.strip()[-100:]}")
                again = _r15_start(again_argv, out)
                again_err = again.communicate(timeout=600)[1]
                debris = _r15_tracer_debris(out)
                if again.returncode != 0 or problems or debris:
                    when = "mid-write" if delay is None else f"at {delay:.2f}s of {took:.2f}"
                    bad.append(f"{signal.Signals(sig).name} {when}: {problems[:2]}, rerun exit "
                               f"{again.returncode} {again_err.strip()[-100:]}, debris {debris[:2]}")
            results.append(Result(f"round15 tracer {name} stopped x{points + 1} (kill -9, SIGTERM, SIGINT, kill -9 "
                                  "mid-write): readers, rerun, no temporary", not bad,
                                  f"{len(bad)} of {points + 1} bad; " + " | ".join(bad[:2])))
        fcntl.flock(lock, fcntl.LOCK_UN)
    return results


def _parts(d: Path, label: str, only: str | None, parts: tuple) -> list[Result]:
    """Run a round's parts ((name, fn(directory)) in order; only `only` when given), each in a
    directory of its own under `d`; a part's own trouble is one failed case, not the end."""
    d.mkdir(exist_ok=True)
    results: list[Result] = []
    for group, fn in parts:
        if only and group != only:
            continue
        (d / group).mkdir(exist_ok=True)
        try:
            results += fn(d / group)
        except Exception as exc:  # noqa: BLE001 - the battery's own trouble is a failed case, not the end
            results.append(Result(f"{label} {group}: battery error", False, f"{type(exc).__name__}: {exc}"))
    return results


def round15_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, quick: bool,
                  only: str | None = None) -> list[Result]:
    return _parts(base / "r15", "round15", only, (
        ("numbers", lambda g: _r15_numbers(g, fleet, good, bad)),
        ("parquet", lambda g: _r15_parquet(g, fleet, good, bad)),
        ("streams", lambda g: _r15_streams(g, fleet, good, bad)),
        ("two", lambda g: _r15_two_writers(g, fleet, good)),
        ("sweep", lambda g: _r15_sweep(g, fleet, good, spool, 4 if quick else 10)),
        ("tracer", lambda g: _r15_tracer(g, 6 if quick else 12)),
        ("leftovers", _r15_leftovers)))


# ---------------------------------------------------------------- round sixteen

def _r16_writers(fleet: Path, good: list[Path], spool: Path | None, out: Path) -> dict[str, list[str]]:
    """Every writer, output under `out`, run as `python -m` on this tree (_r15_cmd)."""
    w = _writers(fleet, good, spool, out)
    w["audit --html"] = ["baseline", "audit", str(fleet), "-o", str(out / "audh"), "--html", str(out / "r.html")]
    w["simulate --workers 2"] = ["baseline", "simulate", "--hosts", "2", "--hours", "1", "--seed", "1",
                                 "--workers", "2", "-o", str(out / "simw")]
    if spool is not None:
        w["ingest -j 2"] = ["baseline", "ingest", str(spool), str(out / "dsj"), "--keep-spool", "-j", "2"]
    return w


def _r16_sh(argv: list[str], prefix: str, d: Path, env: dict | None = None, timeout: float = 180
            ) -> subprocess.CompletedProcess:
    import shlex
    return subprocess.run(["bash", "-c", f"{prefix} exec {shlex.join(_r15_cmd(argv))}"], cwd=d, capture_output=True,
                          timeout=timeout, env=env or _r14_env())


def _r16_debris(out: Path) -> list[str]:
    """Half files a reader would take for data, hidden temporaries, empty output trees."""
    if not out.exists():
        return []
    bad = _no_half_output(out)
    return bad + [f"empty dir {p.relative_to(out)}" for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())]


def _r16_snapshots(d: Path, spool: Path | None) -> list[Result]:
    """`baseline ingest -j 2` (and -j 1) of a spool with one odd snapshot: truncated, empty, a
    directory, a FIFO, /dev/zero through a symlink, a symlink loop, CSV, schema version 99, a
    column of another type, no counters file, the snapshot directory a file. Each ends 0 (the
    odd snapshot quarantined or skipped, named on stderr) or 2 in one line naming it; never a
    hang on the FIFO, never a traceback from the worker; the dataset left whole; the spool
    without the odd snapshot ingests again."""
    if spool is None:
        return [Result("round16 ingest odd snapshot: no spool", False, "simulate --spool failed")]
    host = sorted(p for p in spool.iterdir() if p.is_dir())[-1]
    snap = sorted(host.glob("snap-*"))[2]

    def resave(p: Path, how) -> None:
        t = pq.read_table(p)
        p.unlink()
        pq.write_table(how(t), p)

    kinds = {
        "truncated": lambda f: os.truncate(f, 100),
        "empty": lambda f: os.truncate(f, 0),
        "a directory": lambda f: (f.unlink(), f.mkdir()),
        "a FIFO": lambda f: (f.unlink(), os.mkfifo(f)),
        "/dev/zero via a symlink": lambda f: (f.unlink(), os.symlink("/dev/zero", f)),
        "a symlink loop": lambda f: (f.unlink(), os.symlink(f.name, f)),
        "CSV": lambda f: f.write_text("host,seq\nx,1\n"),
        "schema version 99": lambda f: resave(f, lambda t: t.replace_schema_metadata(
            {k: (b"99" if b"version" in k else v) for k, v in (t.schema.metadata or {}).items()})),
        "a column of another type": lambda f: resave(f, lambda t: t.set_column(
            0, t.column_names[0], pa.array([[1]] * t.num_rows, pa.list_(pa.int64())))),
        "no counters file": None,
        "the snapshot a file": None,
    }
    results = []
    for kind, make in kinds.items():
        for jobs in ("2", "1"):
            work = d / "ing"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            sp = work / "spool"
            shutil.copytree(spool, sp, symlinks=True)
            odd = sp / host.name / snap.name
            if kind == "no counters file":
                (odd / "counters.parquet").unlink()
            elif kind == "the snapshot a file":
                shutil.rmtree(odd)
                odd.write_text("not a snapshot\n")
            else:
                make(odd / "events.parquet")
            try:
                proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(sp), str(work / "ds"), "-j", jobs]),
                                      cwd=work, capture_output=True, timeout=180, env=_r14_env())
            except subprocess.TimeoutExpired:
                results.append(Result(f"round16 ingest -j {jobs} odd snapshot: {kind}", False, "hung > 180s"))
                continue
            ok, detail = _verdict(proc, {0, 2})
            said = proc.stderr.decode(errors="replace") + proc.stdout.decode(errors="replace")
            if snap.name not in said:  # quarantined (the report, on stdout) or refused (stderr)
                ok, detail = False, f"the snapshot is not named: {detail}"
            bad = _r16_debris(work / "ds")
            if ok and (work / "ds").exists():
                try:
                    pl.scan_parquet(str(work / "ds" / "events" / "**" / "*.parquet")).collect()
                except Exception as exc:  # noqa: BLE001 - what a reader meets is the finding
                    bad.append(f"glob read: {type(exc).__name__}: {str(exc)[:100]}")
            results.append(Result(f"round16 ingest -j {jobs} odd snapshot: {kind}", ok and not bad,
                                  f"{bad[:3]}; {detail}"))
    return results


def _r16_limits(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every writer (and diff, evaluate as readers) under `ulimit -n 16`, `ulimit -v` 250 MB and
    400 MB, `ulimit -f 1`: done, or exit 2 in one line (a MemoryError too; EFBIG, never
    death by SIGXFSZ), no half output, no empty output tree, no hang."""
    results = []
    out = d / "lim"
    cases = dict(_r16_writers(fleet, good, spool, out))
    cases["diff"] = ["baseline", "diff", *map(str, good), str(good[1])]
    cases["evaluate"] = ["baseline", "evaluate", str(fleet), "--json"]
    for limit in ("ulimit -n 16", "ulimit -v 250000", "ulimit -v 400000", "ulimit -f 1"):
        for name, argv in cases.items():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            try:
                proc = _r16_sh(argv, f"{limit};", d)
            except subprocess.TimeoutExpired:
                results.append(Result(f"round16 {limit}: {name}", False, "hung > 180s"))
                continue
            ok, detail = _verdict(proc, {0, 1, 2} if name == "diff" else {0, 2})
            bad = _r16_debris(out)
            results.append(Result(f"round16 {limit}: {name}", ok and not bad, f"{bad[:3]}; {detail}"))
    return results


def _r16_gone(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """The output's directory removed at 1/4, 1/2 and 3/4 of each writer's uninterrupted run:
    done (the output whole where it went) or exit 2 in one line; no traceback; no half file
    anywhere under the parent; a writer that recreated the directory left whole files only."""
    results = []
    base = d / "gone"
    for name in _r16_writers(fleet, good, spool, base / "o"):
        shutil.rmtree(base, ignore_errors=True)
        (base / "o").mkdir(parents=True)
        argv = _r16_writers(fleet, good, spool, base / "o")[name]
        t0 = time.monotonic()
        proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
        took = time.monotonic() - t0
        if proc.returncode != 0:
            results.append(Result(f"round16 output directory removed mid-run: {name}: uninterrupted", False,
                                  proc.stderr.decode(errors="replace")[-200:]))
            continue
        bad = []
        for frac in (0.25, 0.5, 0.75):
            shutil.rmtree(base, ignore_errors=True)
            (base / "o").mkdir(parents=True)
            p = subprocess.Popen(_r15_cmd(argv), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=_r14_env(), start_new_session=True)
            time.sleep(took * frac)
            shutil.rmtree(base / "o", ignore_errors=True)
            try:
                out, err = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                bad.append(f"at {frac}: hung")
                continue
            ok, detail = _verdict(subprocess.CompletedProcess(argv, p.returncode, out, err), {0, 2})
            debris = _r16_debris(base)
            if not ok or debris:
                bad.append(f"at {frac}: {debris[:2]} {detail}")
        results.append(Result(f"round16 output directory removed mid-run (1/4, 1/2, 3/4): {name}", not bad,
                              " | ".join(bad[:2])))
    return results


def _r16_env(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every writer with HOME unset and LANG=C into a non-UTF-8 output name (b'\\xff'), with
    TMPDIR a file and a missing directory, and TZ odd: done or one line, exit 2; the output
    named as given (bytes), no half file."""
    results = []
    tz_odd = ("Mars/Olympus", "UTC+99", ":/etc/passwd", "A" * 300)
    (d / "afile").write_text("x")
    envs = {"HOME unset, LANG=C, a non-UTF-8 output name": {"LANG": "C", "LC_ALL": "C"},
            "TMPDIR a file": {"TMPDIR": str(d / "afile")},
            "TMPDIR missing": {"TMPDIR": str(d / "missing-tmp")}}
    envs.update({f"TZ={tz[:20]}": {"TZ": tz} for tz in tz_odd})
    for what, extra in envs.items():
        env = {k: v for k, v in _r14_env(extra).items() if not (what.startswith("HOME") and k == "HOME")}
        out = Path(os.fsdecode(bytes(d) + b"/out-\xff")) if what.startswith("HOME") else d / "out"
        for name, argv in _r16_writers(fleet, good, spool, out).items():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            try:
                proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=env)
            except subprocess.TimeoutExpired:
                results.append(Result(f"round16 {what}: {name}", False, "hung > 300s"))
                continue
            ok, detail = _verdict(proc, {0, 2})
            seen = out
            if what.startswith("HOME"):  # the battery's reader (pyarrow) opens str paths only
                seen = d / "out-renamed"
                shutil.rmtree(seen, ignore_errors=True)
                out.rename(seen)
            bad = _r16_debris(seen)
            if proc.returncode == 0 and not [p for p in seen.iterdir() if not p.name.startswith(".")]:
                bad.append("exit 0 and nothing written")
            results.append(Result(f"round16 {what}: {name}", ok and not bad, f"{bad[:3]}; {detail}"))
    return results


def _r16_mounts(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every writer's output on a 64 KiB tmpfs (ENOSPC mid-write) and on a read-only bind mount:
    exit 2 in one line (or done, where it fits), no half file, no empty tree left."""
    if os.geteuid() != 0:
        return []
    results = []
    mnt = _tmpfs(d / "t64", "size=64k")
    if mnt is None:
        return [Result("round16 64k tmpfs", False, "mount failed")]
    with mnt as full:
        for name, argv in _r16_writers(fleet, good, spool, full / "o").items():
            for p in list(full.iterdir()):
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            (full / "o").mkdir()
            proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
            ok, detail = _verdict(proc, {0, 2})
            bad = _r16_debris(full / "o")
            results.append(Result(f"round16 output on a 64 KiB tmpfs: {name}", ok and not bad, f"{bad[:3]}; {detail}"))
    src = d / "rosrc"
    src.mkdir(exist_ok=True)
    ro = d / "ro"
    ro.mkdir(exist_ok=True)
    if subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(ro)], capture_output=True).returncode != 0:
        return [*results, Result("round16 read-only bind mount", False, "mount failed")]
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True)
        for name, argv in _r16_writers(fleet, good, spool, ro / "o").items():
            proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
            ok, detail = _verdict(proc, {2})
            results.append(Result(f"round16 output on a read-only bind mount: {name}", ok and not list(src.iterdir()),
                                  detail))
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)
    return results


def _r16_inputs(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """Every reader's main input given a socket, a FIFO with no writer, /dev/zero, a /proc file,
    a path with a trailing slash, one through '..' of a missing directory, a 4096-byte name and
    a symlink loop: exit 2 in one line naming the path, never a hang on the FIFO."""
    import socket as socketmod
    sock = d / "sock"
    s = socketmod.socket(socketmod.AF_UNIX)
    with contextlib.suppress(OSError):
        sock.unlink()
    s.bind(str(sock))
    fifo = d / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    loop = d / "loop"
    with contextlib.suppress(FileExistsError):
        os.symlink(loop.name, loop)
    odd = {"a socket": str(sock), "a FIFO with no writer": str(fifo), "/dev/zero": "/dev/zero",
           "/proc/self/status": "/proc/self/status", "a trailing slash on a file": f"{good[0]}/",
           "'..' through a missing directory": str(d / "nodir" / ".." / good[0].name),
           "a 4096-byte name": str(d / ("n" * 4096)), "a symlink loop": str(loop)}
    readers = {
        "diff": lambda p: ["baseline", "diff", str(good[0]), p],
        "export": lambda p: ["baseline", "export", p, "-o", str(d / "x.json")],
        "allowlist learn": lambda p: ["baseline", "allowlist", "learn", p, "-o", str(d / "a.yaml")],
        "learn": lambda p: ["baseline", "learn", p, "-o", str(d / "m.parquet")],
        "audit": lambda p: ["baseline", "audit", p, "-o", str(d / "aud")],
        "coverage": lambda p: ["baseline", "coverage", p, "-o", str(d / "cov")],
        "expected learn": lambda p: ["baseline", "expected", "learn", p, "-o", str(d / "e.yaml")],
        "evaluate --findings": lambda p: ["baseline", "evaluate", str(fleet), "--findings", p],
        "ingest": lambda p: ["baseline", "ingest", p, str(d / "ds")],
    }
    results = []
    try:
        for kind, path in odd.items():
            for name, make in readers.items():
                try:
                    proc = subprocess.run(_r15_cmd(make(path)), cwd=d, capture_output=True, timeout=120,
                                          env=_r14_env(), stdin=subprocess.DEVNULL)
                except subprocess.TimeoutExpired:
                    results.append(Result(f"round16 {name} of {kind}", False, "hung > 120s"))
                    continue
                ok, detail = _verdict(proc, {2})
                err = proc.stderr.decode(errors="replace")
                shown = path.rstrip("/")[-40:]
                if ok and shown not in err and Path(path).name[:40] not in err:
                    ok, detail = False, f"the path is not named: {detail}"
                results.append(Result(f"round16 {name} of {kind}", ok, detail))
    finally:
        s.close()
    return results


def _r16_leftovers(d: Path) -> list[Result]:
    """robust15's leftovers (tests/test_robust_sixteenth.py): a recorder killed during its
    $TMPDIR fallback write, a daemon restarted with another --prom."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_sixteenth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round16 robust15's leftovers (tests/test_robust_sixteenth.py)", proc.returncode == 0, tail[0])]


def round16_cases(base: Path, fleet: Path, good: list[Path], spool: Path | None, only: str | None = None
                  ) -> list[Result]:
    return _parts(base / "r16", "round16", only, (
        ("snapshots", lambda g: _r16_snapshots(g, spool)),
        ("limits", lambda g: _r16_limits(g, fleet, good, spool)),
        ("gone", lambda g: _r16_gone(g, fleet, good, spool)),
        ("env", lambda g: _r16_env(g, fleet, good, spool)),
        ("mounts", lambda g: _r16_mounts(g, fleet, good, spool)),
        ("inputs", lambda g: _r16_inputs(g, fleet, good)),
        ("leftovers", _r16_leftovers)))


# --------------------------------------------------------------------------------------------
# round seventeen
# --------------------------------------------------------------------------------------------
def _r17_whole(path: Path) -> str | None:
    """None when `path` is a whole output a reader can take (Parquet footer, JSON, YAML, HTML
    closed), else what is wrong."""
    try:
        if path.is_dir():
            bad = _visible_whole(path) + _r15_glob_problems(path)
            return "; ".join(bad[:2]) or None
        data = path.read_bytes()
        if not data:
            return "empty"
        if path.suffix == ".parquet":
            pq.read_table(path)
        elif path.suffix == ".json":
            import json

            json.loads(data)
        elif path.suffix in (".yaml", ".yml"):
            import yaml

            yaml.safe_load(data)
        elif path.suffix == ".html" and b"</html>" not in data[-200:]:
            return "html not closed"
    except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    return None


def _r17_temporaries(d: Path) -> list[str]:
    return [str(p.relative_to(d)) for p in d.rglob(".*") if p.name.endswith(".tmp")]


def _r17_argv(d: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None) -> list[Result]:
    """Argument shapes a shell script produces: a flag given twice (the last wins, or one
    line), `--` before the positionals, options after or between them, `-` as a path (stdin is
    no trace: one line naming it), file names with a leading dash (through `./` or after `--`)
    and with a newline. Each ends in its expected status, never a traceback, one line on
    trouble; what a command says it wrote is there under exactly that name, whole; no
    temporary is left."""
    g = list(map(str, good))
    dash = d / "-g1.parquet"
    # another good run than the GOOD it is diffed against (a trace diffed against itself is
    # refused: it is always explained by itself)
    shutil.copy(good[1], dash)
    nl_in = d / "nl\nin.parquet"
    shutil.copy(bad, nl_in)
    o = d / "o"
    cases: list[tuple[str, list[str], set[int], Path | None]] = [
        ("diff -- GOOD BAD", ["baseline", "diff", "--", *g, str(bad)], {1}, None),
        ("diff, --json twice", ["baseline", "diff", *g, str(bad), "--json", "--json"], {1}, None),
        ("diff, --context twice", ["baseline", "diff", *g, str(bad), "--context", "3", "--context", "5"], {1}, None),
        ("diff, an option between the positionals", ["baseline", "diff", g[0], "--json", g[1], str(bad)], {1}, None),
        ("diff of '-'", ["baseline", "diff", g[0], "-"], {2}, None),
        ("diff of ./-g1.parquet", ["baseline", "diff", g[0], "./-g1.parquet"], {0}, None),
        ("diff -- of -g1.parquet", ["baseline", "diff", "--", g[0], "-g1.parquet"], {0}, None),
        ("diff of -g1.parquet without --", ["baseline", "diff", g[0], "-g1.parquet"], {2}, None),
        ("diff of a name with a newline", ["baseline", "diff", *g, str(nl_in)], {1}, None),
        ("export -o twice", ["baseline", "export", g[0], "-o", str(o / "a.json"), "-o", str(o / "b.json")], {0},
         o / "b.json"),
        ("export -o before the input", ["baseline", "export", "-o", str(o / "c.json"), g[0]], {0}, o / "c.json"),
        ("export -o ./-x.json", ["baseline", "export", g[0], "-o", "./-x.json"], {0}, d / "-x.json"),
        ("export -o a name with a newline", ["baseline", "export", g[0], "-o", str(o / "n\nl.json")], {0},
         o / "n\nl.json"),
        ("export of '-'", ["baseline", "export", "-", "-o", str(o / "d.json")], {2}, None),
        ("learn -o before the dataset", ["baseline", "learn", "-o", str(o / "m.parquet"), str(fleet)], {0},
         o / "m.parquet"),
        ("learn -- DATASET -o twice", ["baseline", "learn", "-o", str(o / "m1.parquet"), "-o",
                                       str(o / "m2.parquet"), "--", str(fleet)], {0}, o / "m2.parquet"),
        ("learn -o -", ["baseline", "learn", str(fleet), "-o", "-"], {2}, None),
        ("learn of '-'", ["baseline", "learn", "-", "-o", str(o / "m3.parquet")], {2}, None),
        ("audit --since twice, --json", ["baseline", "audit", str(fleet), "--since", "2h", "--since", "2026-11-27", "-o",
                                         str(o / "aud"), "--json"], {0}, o / "aud"),
        ("audit -o a name with a newline", ["baseline", "audit", str(fleet), "-o", str(o / "a\nud")], {0},
         o / "a\nud"),
        ("allowlist learn -o between the traces", ["baseline", "allowlist", "learn", g[0], "-o", str(o / "al.yaml"),
                                                   g[1]], {0}, o / "al.yaml"),
        ("allowlist learn -o ./-l.yaml", ["baseline", "allowlist", "learn", *g, "-o", "./-l.yaml"], {0},
         d / "-l.yaml"),
        ("allowlist learn -o -", ["baseline", "allowlist", "learn", *g, "-o", "-"], {2}, None),
        ("simulate --hosts twice", ["baseline", "simulate", "--hosts", "9", "--hosts", "2", "--hours", "1", "-o",
                                    str(o / "s\nim")], {0}, o / "s\nim"),
        ("simulate -o -", ["baseline", "simulate", "--hosts", "2", "--hours", "1", "-o", "-"], {2}, None),
        ("evaluate --json twice", ["baseline", "evaluate", str(fleet), "--json", "--json"], {0, 2}, None),
        ("coverage -o twice", ["baseline", "coverage", str(fleet), "-o", str(o / "cov1"), "-o", str(o / "cov2")],
         {0}, o / "cov2"),
        ("probes check -- syscalls --json", ["tracer", "probes", "check", "--json", "--", "syscalls"], {0, 1}, None),
    ]
    if spool is not None:
        cases += [
            ("ingest -- SPOOL DATASET", ["baseline", "ingest", "--keep-spool", "--", str(spool), str(o / "ds")], {0},
             o / "ds"),
            ("ingest --keep-spool twice -j twice", ["baseline", "ingest", str(spool), str(o / "ds2"), "--keep-spool",
                                                    "--keep-spool", "-j", "3", "-j", "1"], {0}, o / "ds2"),
            ("ingest of '-'", ["baseline", "ingest", "-", str(o / "ds3")], {2}, None),
        ]
    if os.geteuid() == 0:
        cases += [
            ("tracer record -o twice", ["tracer", "record", "-q", "-o", str(o / "r1.parquet"), "-o",
                                        str(o / "r2.parquet"), "--", "/bin/true"], {0}, o / "r2.parquet"),
            ("tracer record -o a name with a newline", ["tracer", "record", "-q", "-o", str(o / "r\nn.parquet"), "--",
                                                        "/bin/true"], {0}, o / "r\nn.parquet"),
            ("tracer record -o ./-r.parquet", ["tracer", "record", "-q", "-o", "./-r.parquet", "--", "/bin/true"], {0},
             d / "-r.parquet"),
        ]
    results = []
    import fcntl
    with open("/tmp/tracebase-real.lock", "w") as lock:
        for name, argv, codes, wrote in cases:
            shutil.rmtree(o, ignore_errors=True)
            o.mkdir()
            if argv[0] == "tracer" and argv[1] == "record":
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env(),
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                results.append(Result(f"round17 argv {name}", False, "hung > 300s"))
                continue
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
            ok, detail = _verdict(proc, codes)
            problems = []
            if wrote is not None:
                others = [p.name for p in o.iterdir() if p != wrote and not p.name.startswith(".")]
                if not wrote.exists():
                    problems.append(f"{wrote.name!r} not written; found {sorted(p.name for p in o.iterdir())[:4]}")
                elif (why := _r17_whole(wrote)) is not None:
                    problems.append(f"{wrote.name!r}: {why}")
                if others and "twice" in name:
                    problems.append(f"also written: {others[:3]}")
            if proc.returncode == 2 and "'-'" in name and "-" not in proc.stderr.decode(errors="replace"):
                problems.append("the path '-' is not named")
            if "\n" in proc.stderr.decode(errors="replace").strip() and proc.returncode != 0:
                problems.append("more than one line")
            problems += _r17_temporaries(o) + _r17_temporaries(d)
            for p in (d / "-x.json", d / "-l.yaml", d / "-r.parquet"):
                if p.exists():
                    p.unlink()
            results.append(Result(f"round17 argv {name}", ok and not problems, f"{problems[:3]}; {detail}"))
    return results


def _r17_typed(table: pa.Table, kind: str) -> tuple[pa.Table, dict]:
    """A snapshot file's table in another writer's representation (`kind`) and the writer's
    options: the same rows (equal) or rows a schema refuses (nulls where none may be)."""
    if kind == "large_string":
        return strings_as(table, lambda c: c.cast(pa.large_string())), {}
    if kind == "dictionary":
        return table, {"use_dictionary": True}
    if kind == "plain (no dictionary)":
        return table, {"use_dictionary": False}
    if kind == "dictionary-typed columns":
        return strings_as(table, lambda c: c.dictionary_encode()), {}
    if kind == "string_view":
        return strings_as(table, lambda c: c.cast(pa.string_view())), {}
    if kind == "a 0-row row group first":
        return pa.concat_tables([table.slice(0, 0), table]), {"row_group_size": max(1, table.num_rows)}
    if kind == "zero rows":
        return table.slice(0, 0), {}
    if kind == "nulls in a non-null column":
        # not `host`: the spool directory names the host, replacing the file's column (by design)
        name = next(f.name for f in table.schema if not f.nullable and pa.types.is_string(f.type) and f.name != "host")
        i = table.schema.get_field_index(name)
        col = pa.array([None] * table.num_rows, pa.string())
        return table.set_column(i, pa.field(name, pa.string(), True), col), {}
    if kind == "every column nullable":
        return table.cast(pa.schema([f.with_nullable(True) for f in table.schema], metadata=table.schema.metadata)), {}
    raise ValueError(kind)


_R17_TYPED = ("large_string", "dictionary", "plain (no dictionary)", "dictionary-typed columns", "string_view",
              "a 0-row row group first", "zero rows", "nulls in a non-null column", "every column nullable")


def _r17_parquet(d: Path, spool: Path | None) -> list[Result]:
    """`baseline ingest` of a spool whose one snapshot has both files rewritten by another
    writer: large/view strings, dictionary on and off, dictionary-typed columns, a 0-row row
    group before the rows, zero rows, nulls in a non-null column, every column nullable; and a
    snapshot whose files say schema version 9999 or 1.9 (the future, a past that never was).
    Exit 0 with the snapshot's rows ingested as the clean file's (equal representations) or
    the file quarantined with its name and the reason (refused data), never a traceback, the
    dataset read whole by the documented glob."""
    if spool is None:
        return []
    snap = sorted(spool.glob("*/snap-*"))[len(list(spool.glob("*/snap-*"))) // 2]
    clean_dir = d / "clean"
    shutil.rmtree(clean_dir, ignore_errors=True)
    shutil.copytree(spool, clean_dir / "spool")
    proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(clean_dir / "spool"), str(clean_dir / "ds"), "--json"]),
                          cwd=d, capture_output=True, timeout=300, env=_r14_env())
    if proc.returncode != 0:
        return [Result("round17 parquet: the clean ingest", False, proc.stderr.decode(errors="replace")[-200:])]
    import json
    clean_rows = json.loads(proc.stdout)["ingest"]["rows"]
    kinds: list[str] = [*_R17_TYPED, "schema version 9999", "schema version 1.9"]
    results = []
    for kind in kinds:
        work = d / "w"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(spool, work / "spool")
        odd = work / "spool" / snap.parent.name / snap.name
        lost = {"events": 0, "counters": 0}
        for table_name in ("events", "counters"):
            path = odd / f"{table_name}.parquet"
            t = pq.read_table(path)
            meta = dict(t.schema.metadata or {})
            if kind.startswith("schema version"):
                meta[schema.META_VERSION] = kind.rsplit(" ", 1)[1].encode()
                t2, opts = t, {}
            else:
                t2, opts = _r17_typed(t, kind)
            if kind in ("zero rows", "nulls in a non-null column") or kind.startswith("schema version"):
                lost[table_name] = t.num_rows
            pq.write_table(t2.replace_schema_metadata(meta), path, **opts)
        try:
            proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(work / "spool"), str(work / "ds"), "--json"]),
                                  cwd=d, capture_output=True, timeout=300, env=_r14_env())
        except subprocess.TimeoutExpired:
            results.append(Result(f"round17 ingest of a snapshot written as {kind}", False, "hung > 300s"))
            continue
        ok, detail = _verdict(proc, {0, 2})
        problems = []
        if proc.returncode == 0:
            got = json.loads(proc.stdout)["ingest"]
            want = {t: clean_rows[t] - lost[t] for t in clean_rows}
            if got["rows"] != want:
                problems.append(f"rows {got['rows']} against {want}")
            refused = any(v for v in lost.values()) and kind != "zero rows"
            if refused and not any(snap.name in q["path"] for q in got["quarantined"]):
                problems.append("the refused snapshot is not quarantined")
            problems += _r15_glob_problems(work) + _r17_temporaries(work / "ds")
        elif snap.name not in proc.stderr.decode(errors="replace"):
            problems.append("the snapshot is not named")
        results.append(Result(f"round17 ingest of a snapshot written as {kind}", ok and not problems,
                              f"{problems[:3]}; {detail}"))
    return results


def _r17_concurrent(d: Path, spool: Path | None) -> list[Result]:
    """Two `baseline ingest` of two different spools (the snapshots split in two) into one
    dataset at once, the second started at 0, 1/3 and 2/3 of the first's run; then two
    `tracer record -o same.parquet` at once (root). Each exits 0 (or 2 in one line), the
    dataset holds every row of both exactly once (the clean single ingest's rows), no staging
    or temporary is left; the trace is one whole recording."""
    results = []
    if spool is not None:
        snaps = sorted(spool.glob("*/snap-*"))
        split = d / "split"
        shutil.rmtree(split, ignore_errors=True)
        for i, snap in enumerate(snaps):
            shutil.copytree(snap, split / f"spool{i % 2}" / snap.parent.name / snap.name)
        alone = subprocess.run(_r15_cmd(["baseline", "ingest", str(spool), str(split / "all"), "--keep-spool"]),
                               cwd=d, capture_output=True, timeout=300, env=_r14_env())
        want = _content(split / "all") if alone.returncode == 0 else None
        rows_want = {t: pl.scan_parquet(str(split / "all" / t / "**" / "*.parquet"), hive_schema={
            "date": pl.String, "host": pl.String}).select(pl.len()).collect().item() for t in ("events", "counters")}
        t0 = time.monotonic()
        subprocess.run(_r15_cmd(["baseline", "ingest", str(split / "spool0"), str(split / "probe"), "--keep-spool"]),
                       cwd=d, capture_output=True, timeout=300, env=_r14_env())
        took = time.monotonic() - t0
        for frac in (0.0, 1 / 3, 2 / 3):
            shutil.rmtree(split / "ds", ignore_errors=True)
            procs = []
            for k in (0, 1):
                procs.append(_r15_start(["baseline", "ingest", str(split / f"spool{k}"), str(split / "ds"),
                                         "--keep-spool"], d))
                if k == 0:
                    time.sleep(took * frac)
            errs = [p.communicate(timeout=600)[1] for p in procs]
            codes = [p.returncode for p in procs]
            problems = [f"exit {c}: {e.strip()[-100:]}" for c, e in zip(codes, errs, strict=True)
                        if c != 0 and not (c == 2 and len(e.strip().splitlines()) == 1)]
            if codes == [0, 0]:
                rows = {t: pl.scan_parquet(str(split / "ds" / t / "**" / "*.parquet"), hive_schema={
                    "date": pl.String, "host": pl.String}).select(pl.len()).collect().item() for t in ("events", "counters")}
                if rows != rows_want:
                    problems.append(f"rows {rows} against one ingest's {rows_want}")
            problems += _r15_glob_problems(split / "ds") + _r17_temporaries(split / "ds")
            results.append(Result(f"round17 two ingests of different spools into one dataset, second at {frac:.2f}",
                                  not problems and want is not None, "; ".join(problems[:3])))
    if os.geteuid() == 0:
        import fcntl
        with open("/tmp/tracebase-real.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            r = d / "rec"
            for offset in (0.0, 0.5):
                shutil.rmtree(r, ignore_errors=True)
                r.mkdir(parents=True)
                procs = []
                for k in (0, 1):
                    procs.append(_r15_start(["tracer", "record", "-q", "-o", str(r / "same.parquet"), "--", "/bin/sh",
                                             "-c", f"ls -R /usr/share/doc >/dev/null; exit {k}"], r))
                    time.sleep(offset)
                errs = [p.communicate(timeout=600)[1] for p in procs]
                codes = [p.returncode for p in procs]
                problems = [f"exit {c}: {e.strip()[-100:]}" for c, e in zip(codes, errs, strict=True)
                            if c not in (0, 1) and not (c == 2 and len(e.strip().splitlines()) == 1)]
                why = _r17_whole(r / "same.parquet") if (r / "same.parquet").exists() else "absent"
                if why:
                    problems.append(f"same.parquet: {why}")
                else:
                    statuses = pl.read_parquet(r / "same.parquet")["exit_status"].unique().to_list()
                    if len(statuses) != 1:
                        problems.append(f"a mix of the two recordings: exit statuses {statuses}")
                problems += _r17_temporaries(r)
                results.append(Result(f"round17 two tracer record -o same.parquet, second at +{offset:g}s",
                                      not problems, "; ".join(problems[:3]) + f" exits {codes}"))
            fcntl.flock(lock, fcntl.LOCK_UN)
    return results


def _r17_kill9(d: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random, per: int
               ) -> list[Result]:
    """kill -9 of the process group at `per` random instants (uniform 0.05-3 s) of every
    writer -- ingest, ingest -j 2, audit, learn, simulate, allowlist learn, export, expected
    learn, coverage, and as root `tracer record -o` and the daemon's snapshot writer (`tracer run
    --spool`) --, then: every output present is whole (Parquet, YAML, JSON, HTML; the documented
    glob reads a dataset), the next run succeeds, and once it has no temporary is left (a killed
    daemon's spool: after the next daemon on it)."""
    out = d / "out"
    jobs = dict(_r16_writers(fleet, good, spool, out))
    jobs.pop("audit --html", None)
    if os.geteuid() == 0:
        jobs["tracer record -o"] = ["tracer", "record", "-q", "-o", str(out / "t.parquet"), "--", "/bin/sh", "-c",
                                    "ls -lR /usr/share >/dev/null 2>&1"]
        jobs["tracer run --spool"] = ["tracer", "run", "syscalls", "-d", "3s", "-i", "0.2s", "--spool",
                                      str(out / "spool"), "--host", "h1"]
    results = []
    import fcntl
    with open("/tmp/tracebase-real.lock", "w") as lock:
        for name, argv in jobs.items():
            tracer = argv[0] == "tracer"
            if tracer:
                fcntl.flock(lock, fcntl.LOCK_EX)
            bad = []
            try:
                for _ in range(per):
                    shutil.rmtree(out, ignore_errors=True)
                    out.mkdir(parents=True)
                    if name.startswith("allowlist"):
                        shutil.copy(REPO / "expected_errors.yaml", out / "a.yaml")  # a list merged in place
                    before = (out / "a.yaml").read_bytes() if name.startswith("allowlist") else None
                    delay = rng.uniform(0.05, 3.0)
                    proc = _r15_start(argv, d)
                    time.sleep(delay)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    problems = [f"{p.name}: {why}" for p in out.iterdir()
                                if not p.name.startswith(".") and (why := _r17_whole(p)) is not None]
                    if before is not None and (out / "a.yaml").read_bytes() not in (before,) and \
                            _r17_whole(out / "a.yaml") is not None:
                        problems.append("the merged list is not whole")
                    again = _r15_start(argv, d)
                    err = again.communicate(timeout=600)[1]
                    if again.returncode not in (0, 1):
                        problems.append(f"the next run: exit {again.returncode} {err.strip()[-120:]}")
                    if name == "tracer run --spool":
                        ing = subprocess.run(_r15_cmd(["baseline", "ingest", str(out / "spool"), str(out / "ds")]),
                                             cwd=d, capture_output=True, timeout=300, env=_r14_env())
                        ok, detail = _verdict(ing, {0})
                        if not ok:
                            problems.append(f"ingest of the spool: {detail[-120:]}")
                    problems += [f"left {p}" for p in _r17_temporaries(out)]
                    if problems:
                        bad.append(f"at {delay:.2f}s: {problems[:3]}")
            finally:
                if tracer:
                    fcntl.flock(lock, fcntl.LOCK_UN)
            results.append(Result(f"round17 kill -9 x{per} at random 0.05-3 s: {name}", not bad,
                                  f"{len(bad)} of {per} bad; " + " | ".join(bad[:2])))
    return results


def _r17_leftovers(d: Path) -> list[Result]:
    """robust16's leftovers (tests/test_robust_seventeenth.py): a snapshot without one of its
    files, a daemon whose --prom moved directory, a spool host whose tracer never restarts."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_seventeenth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round17 robust16's leftovers (tests/test_robust_seventeenth.py)", proc.returncode == 0, tail[0])]


def round17_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                  quick: bool, only: str | None = None) -> list[Result]:
    return _parts(base / "r17", "round17", only, (
        ("argv", lambda g: _r17_argv(g, fleet, good, bad, spool)),
        ("parquet", lambda g: _r17_parquet(g, spool)),
        ("concurrent", lambda g: _r17_concurrent(g, spool)),
        ("kill9", lambda g: _r17_kill9(g, fleet, good, spool, rng, 3 if quick else 8)),
        ("leftovers", _r17_leftovers)))


# ---------------------------------------------------------------- round eighteen

def _r18_not_utf8(table: pa.Table, column: str, spoil: bytes = b"\xff") -> pa.Table:
    """`table` with `spoil` (not UTF-8) appended to every value of the string `column`, stored
    as a writer that does not validate stores it (a binary array's buffers under the string
    type); a dictionary column is decoded first."""
    values = table.column(column).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    raw = pa.array([None if v is None else v.encode() + spoil for v in values.to_pylist()], pa.binary())
    strings = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers(), null_count=raw.null_count)
    i = table.column_names.index(column)
    field = table.schema.field(i)
    return table.set_column(i, pa.field(column, pa.string(), field.nullable), strings)


def _r18_rewrite(path: Path, change) -> None:
    """Rewrite a Parquet file through `change(table)`, its tracebase metadata kept."""
    f = pq.ParquetFile(path)
    table = change(f.read()).replace_schema_metadata(f.schema_arrow.metadata)
    pq.write_table(table, path)


def _r18_utf8(d: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None) -> list[Result]:
    """Strings that are not UTF-8 inside Parquet, and odd column sets: a trace whose comm,
    path, errno, command or trace_id has such bytes, and one with a column given twice, for
    diff (as the failing run and as a good one), diff --json, export, allowlist learn (one line
    naming the file and the column, exit 2, or the run as with a clean trace); one events part
    of a dataset so spoiled for learn, audit, expected learn, coverage (one line or done); one
    spool snapshot so spoiled for ingest, then audit and expected learn of what it made (the
    snapshot quarantined, the dataset read whole)."""
    results = []
    g = list(map(str, good))
    for column in ("comm", "path", "errno", "command", "trace_id"):
        odd = d / f"odd-{column}.parquet"
        shutil.copy(bad, odd)
        _r18_rewrite(odd, lambda t, c=column: _r18_not_utf8(t, c))
        for name, argv, codes in [
            ("diff (failing run)", ["baseline", "diff", *g, str(odd)], {1, 2}),
            ("diff (a good run) --json", ["baseline", "diff", str(odd), g[1], str(bad), "--json"], {1, 2}),
            ("export", ["baseline", "export", str(odd), "-o", str(d / "x.json")], {0, 2}),
            ("allowlist learn", ["baseline", "allowlist", "learn", g[0], str(odd), "-o", str(d / "a.yaml")], {0, 2}),
        ]:
            ok, detail = _r14_run(argv, d, codes)
            results.append(Result(f"round18 {name} of a trace whose {column} is not UTF-8", ok, detail))
    twice = d / "twice.parquet"
    table = pq.read_table(bad)
    pq.write_table(pa.Table.from_arrays([*table.columns, table.column("path")], names=[*table.column_names, "path"])
                   .replace_schema_metadata(table.schema.metadata), twice)
    for name, argv in [("diff", ["baseline", "diff", *g, str(twice)]),
                       ("export", ["baseline", "export", str(twice), "-o", str(d / "x2.json")])]:
        proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
        ok, detail = _verdict(proc, {2})
        said = proc.stderr.decode(errors="replace")
        results.append(Result(f"round18 {name} of a trace with a column given twice", ok and "no such column" not in said,
                              detail))
    ds = d / "fleet-odd"
    shutil.copytree(fleet, ds)
    part = sorted((ds / "events").rglob("*.parquet"))[0]
    _r18_rewrite(part, lambda t: _r18_not_utf8(t, "comm"))
    for name, argv in [("learn", ["baseline", "learn", str(ds), "-o", str(d / "m.parquet")]),
                       ("audit", ["baseline", "audit", str(ds), "-o", str(d / "aud")]),
                       ("expected learn", ["baseline", "expected", "learn", str(ds), "-o", str(d / "e.yaml")]),
                       ("coverage", ["baseline", "coverage", str(ds), "-o", str(d / "cov")])]:
        ok, detail = _r14_run(argv, d, {0, 2}, timeout=300)
        results.append(Result(f"round18 {name} of a dataset with a part whose comm is not UTF-8", ok, detail))
    if spool is None:
        return [*results, Result("round18 ingest of a snapshot not UTF-8: no spool", False, "simulate --spool failed")]
    sp = d / "spool"
    shutil.copytree(spool, sp)
    snap = next(s for s in sorted(sp.glob("*/snap-*")) if pq.ParquetFile(s / "events.parquet").metadata.num_rows)
    _r18_rewrite(snap / "events.parquet", lambda t: _r18_not_utf8(t, "comm"))
    proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(sp), str(d / "ds"), "--quarantine", str(d / "q")]),
                          cwd=d, capture_output=True, timeout=300, env=_r14_env())
    ok, detail = _verdict(proc, {0})
    problems = [] if any((d / "q").rglob("*.reason")) else ["the snapshot was not quarantined"]
    for name, argv in [("audit", ["baseline", "audit", str(d / "ds"), "-o", str(d / "aud-ds")]),
                       ("expected learn", ["baseline", "expected", "learn", str(d / "ds"), "-o", str(d / "e-ds.yaml")])]:
        done = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
        if done.returncode != 0:
            problems.append(f"{name} of the dataset: exit {done.returncode} {done.stderr.decode(errors='replace')[-160:]}")
    results.append(Result("round18 ingest of a snapshot whose comm is not UTF-8, then audit and expected learn",
                          ok and not problems, f"{problems[:2]}; {detail}"))
    return results


def _r18_clock(d: Path, spool: Path | None) -> list[Result]:
    """A clock set back: a killed tracer's `.snap-*.tmp` (no writer holds the host, no live pid
    in its names) dated a day and a year ahead of now, one a minute old and one 10 minutes
    ahead; ingest removes the first two as abandoned and keeps the others (within the hour
    either way). Then snapshots named a year ahead of now are ingested (the order is by
    sequence number) and the quarantine retention run with entries dated ahead: no error."""
    if spool is None:
        return [Result("round18 clock: no spool", False, "simulate --spool failed")]
    sp = d / "spool"
    shutil.copytree(spool, sp)
    hosts = sorted(p for p in sp.iterdir() if p.is_dir())
    made = {}
    for i, ahead in enumerate((86400, 365 * 86400, -60, 600)):
        tmp = hosts[i % len(hosts)] / f".snap-20261128T001945.000Z-00009{i}.tmp"
        tmp.mkdir()
        (tmp / "events.parquet").write_bytes(b"PAR1" + bytes(64) + b"PAR1")
        (tmp / ".counters.parquet.999999999-0123abcd.tmp").write_bytes(b"PAR1")
        then = time.time() + ahead
        for p in [*tmp.iterdir(), tmp]:
            os.utime(p, (then, then))
        made[ahead] = tmp
    # (without --keep-spool, which leaves the spool as it is, its temporaries too)
    proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(sp), str(d / "ds"), "--quarantine", str(d / "q")]),
                          cwd=d, capture_output=True, timeout=300, env=_r14_env())
    ok, detail = _verdict(proc, {0})
    wrong = [f"{ahead:+d} s: {'kept' if tmp.exists() else 'removed'}" for ahead, tmp in made.items()
             if tmp.exists() != (abs(ahead) < 3600)]
    results = [Result("round18 ingest of spool temporaries dated ahead of the clock (a day, a year, +10 min, -1 min)",
                      ok and not wrong, f"{wrong}; {detail}")]
    ahead = d / "spool-ahead"
    shutil.copytree(spool, ahead)
    for snap in sorted(ahead.glob("*/snap-*")):
        snap.rename(snap.with_name(snap.name.replace("snap-2026", "snap-2027")))
    proc = subprocess.run(_r15_cmd(["baseline", "ingest", str(ahead), str(d / "ds-ahead"), "--quarantine",
                                    str(d / "q-ahead")]), cwd=d, capture_output=True, timeout=300, env=_r14_env())
    ok, detail = _verdict(proc, {0})
    results.append(Result("round18 ingest of snapshots named a year ahead of the clock", ok, detail))
    return results


def _r18_keep(d: Path, fleet: Path, good: list[Path], spool: Path | None, quick: bool) -> list[Result]:
    """Nothing already written is lost: each writer's output is made once on a tmpfs, then the
    tmpfs is filled to leave N bytes free, N swept from 0 to twice the output's size (so ENOSPC
    comes at the temp write, its end, the second or third of several outputs), and the writer
    run again into the same place. A run that fails says so in one line (exit 2) and leaves the
    earlier output as it was, by content; one that succeeds leaves a whole output; no
    temporary is left either way."""
    results = []
    fractions = (0, 0.5, 1.0, 2.0) if quick else (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 2.0)
    mnt = _tmpfs(d / "mnt", "size=16m")
    if mnt is None:
        return [Result("round18 keep: tmpfs", False, "mount failed")]
    with mnt as root:
        for name, argv in _r16_writers(fleet, good, spool, root / "o").items():
            if name in ("audit --html",):
                continue
            bad = []
            for frac in fractions:
                for p in root.iterdir():
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
                (root / "o").mkdir()
                first = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
                if first.returncode != 0:
                    bad.append(f"the first run: exit {first.returncode} {first.stderr.decode(errors='replace')[-120:]}")
                    break
                before = _content(root / "o")
                size = sum(p.stat().st_size for p, _ in _visible_files(root / "o"))
                free = int(size * frac)
                with open(root / "filler", "wb") as fh:
                    fh.write(b"\0" * max(shutil.disk_usage(root).free - free, 0))
                proc = subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, timeout=300, env=_r14_env())
                ok, detail = _verdict(proc, {0, 2})
                problems = [] if ok else [detail[-120:]]
                if proc.returncode != 0 and _content(root / "o") != before:
                    after = _content(root / "o")
                    lost = sorted(k for k in before if after.get(k) != before[k])
                    problems.append(f"the earlier output changed: {lost[:3]}")
                problems += _r16_debris(root / "o")
                if problems:
                    bad.append(f"{free} B free (x{frac:g}): {problems[:3]}")
            results.append(Result(f"round18 ENOSPC over an earlier output, {len(fractions)} fill levels: {name}", not bad,
                                  " | ".join(bad[:2])))
    return results


def _r18_leftovers(d: Path) -> list[Result]:
    """What round eighteen fixed (tests/test_robust_eighteenth.py)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_eighteenth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round18 tests/test_robust_eighteenth.py", proc.returncode == 0, tail[0])]


def round18_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, quick: bool,
                  only: str | None = None) -> list[Result]:
    return _parts(base / "r18", "round18", only, (
        ("utf8", lambda g: _r18_utf8(g, fleet, good, bad, spool)),
        ("clock", lambda g: _r18_clock(g, spool)),
        ("keep", lambda g: _r18_keep(g, fleet, good, spool, quick)),
        ("leftovers", _r18_leftovers)))


# ---------------------------------------------------------------- round nineteen

# A parent's signal state, inherited through exec: set by a tiny launcher, then the command.
_R19_LAUNCH = ("import os, signal, sys\n"
               "for name in sys.argv[1].split(','):\n"
               "    signal.signal(getattr(signal, name), signal.SIG_IGN)\n"
               "os.execvp(sys.argv[2], sys.argv[2:])\n")


def _r19_run(argv: list[str], cwd: Path, codes: set[int], ignored: str = "", env: dict | None = None,
             prefix: str = "", timeout: float = 300) -> tuple[subprocess.CompletedProcess | None, tuple[bool, str]]:
    """`argv` on this tree (_r15_cmd), with the signals named in `ignored` (comma-separated)
    set to SIG_IGN by the parent, and a shell `prefix` (a ulimit) when given."""
    import shlex

    cmd = _r15_cmd(argv)
    if ignored:
        cmd = [sys.executable, "-c", _R19_LAUNCH, ignored, *cmd]
    if prefix:
        cmd = ["bash", "-c", f"{prefix}; exec {shlex.join(cmd)}"]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=env or _r14_env())
    except subprocess.TimeoutExpired:
        return None, (False, f"hung > {timeout:g}s")
    return proc, _verdict(proc, codes)


def _r19_signals(d: Path, fleet: Path, spool: Path | None) -> list[Result]:
    """A parent that ignores SIGCHLD (inherited through exec: a supervisor, `trap '' CHLD`):
    the kernel then reaps every child at once, and a waitpid fails with ECHILD. `tracer record
    -- CMD` (root) must still report CMD's own status (7, 0, a signal's 128+N) and write the
    trace; ingest -j 2 and simulate --workers 2 (process pools) must finish as without it. And
    SIGINT, SIGTERM and SIGHUP ignored at the start (a background job of a script, nohup):
    the writers run to the end, exit 0."""
    results = []
    if os.geteuid() == 0:
        for shown, script, code in (("exit 7", "exit 7", 7), ("exit 0", "true", 0), ("a SIGTERM", "kill -TERM $$", 143),
                                    ("a child's child", "sh -c 'exit 3'", 3)):
            out = d / f"rec-{code}.parquet"
            proc, (ok, detail) = _r19_run(["tracer", "record", "-o", str(out), "--", "sh", "-c", script], d, {code},
                                          ignored="SIGCHLD", timeout=120)
            problems = [] if ok else [detail]
            if proc is not None and proc.returncode == code and (not out.exists() or _r17_whole(out) is not None):
                problems.append("no whole trace written")
            results.append(Result(f"round19 tracer record of a command ending with {shown} under an ignored SIGCHLD",
                                  not problems, "; ".join(problems)))
    writers = {"simulate --workers 2": ["baseline", "simulate", "--hosts", "3", "--hours", "1", "--seed", "1",
                                        "--workers", "2", "-o", str(d / "sim")]}
    if spool is not None:
        writers["ingest -j 2"] = ["baseline", "ingest", str(spool), str(d / "ds"), "--keep-spool", "-j", "2"]
    for name, argv in writers.items():
        _, (ok, detail) = _r19_run(argv, d, {0}, ignored="SIGCHLD")
        results.append(Result(f"round19 {name} under an ignored SIGCHLD", ok, detail))
    for name, argv in [("learn", ["baseline", "learn", str(fleet), "-o", str(d / "m.parquet")]),
                       ("audit", ["baseline", "audit", str(fleet), "-o", str(d / "aud")])]:
        _, (ok, detail) = _r19_run(argv, d, {0}, ignored="SIGINT,SIGTERM,SIGHUP,SIGPIPE")
        results.append(Result(f"round19 {name} with SIGINT, SIGTERM, SIGHUP and SIGPIPE ignored", ok, detail))
    return results


def _r19_limits(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every writer and diff under `ulimit -s` 256 KiB, 1 MiB and unlimited (the stack size is
    also glibc's default for new threads: polars', Arrow's, OpenBLAS's): done, or one line.
    (Below ~96 KiB the Python interpreter itself dies of SIGSEGV before any code of ours runs:
    not a case.)"""
    results = []
    cases = dict(_r16_writers(fleet, good, spool, d / "o"))
    cases["diff"] = ["baseline", "diff", *map(str, good), str(good[0])]
    for stack in ("256", "1024", "unlimited"):
        bad = []
        for name, argv in cases.items():
            _, (ok, detail) = _r19_run(argv, d, {0, 1, 2}, prefix=f"ulimit -s {stack}")
            if not ok:
                bad.append(f"{name}: {detail[-160:]}")
        results.append(Result(f"round19 every writer and diff under ulimit -s {stack}", not bad, " | ".join(bad[:3])))
    return results


def _r19_env(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """Settings of the libraries and the terminal given odd values: COLUMNS (argparse's help
    width) 1, 0, -5, 10**20 and 'wide' for every command's --help and for a diff;
    OPENBLAS_NUM_THREADS and OMP_NUM_THREADS 'abc', -1, 0, 99999, '1e3' for audit and learn
    (the ulimit -v floor counts threads from them): done, or one line naming the variable."""
    results = []
    commands = [["baseline", "--help"], ["tracer", "--help"]] + [
        ["baseline", *c.split(), "--help"] for c in ("diff", "allowlist learn", "simulate", "learn", "audit", "evaluate",
                                                     "export", "ingest", "coverage", "suggest-probes", "expected learn",
                                                     "report")] + [
        ["tracer", *c.split(), "--help"] for c in ("record", "run", "probes check")]
    for columns in ("1", "0", "-5", "1" + "0" * 20, "wide"):
        bad = []
        for argv in [*commands, ["baseline", "diff", *map(str, good[:-1]), str(good[-1])]]:
            _, (ok, detail) = _r19_run(argv, d, {0}, env=_r14_env({"COLUMNS": columns}), timeout=120)
            if not ok:
                bad.append(f"{' '.join(argv[:3])}: {detail[-120:]}")
        results.append(Result(f"round19 COLUMNS={columns} for every --help and a diff", not bad, " | ".join(bad[:3])))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        for value in ("abc", "-1", "0", "99999", "1e3"):
            for name, argv in [("audit", ["baseline", "audit", str(fleet), "-o", str(d / "aud")]),
                               ("learn", ["baseline", "learn", str(fleet), "-o", str(d / "m.parquet")])]:
                _, (ok, detail) = _r19_run(argv, d, {0, 2}, env=_r14_env({var: value}))
                results.append(Result(f"round19 {name} with {var}={value!r}", ok, detail))
    return results


_R19_NS_MAX, _R19_NS_MIN = 2**63 - 1, -2**63 + 1  # (-2**63 is Arrow's NaT)


def _r19_set(table: pa.Table, name: str, values: list, typ: pa.DataType | None = None) -> pa.Table:
    i = table.column_names.index(name)
    field = table.schema.field(i)
    array = pa.array(values, pa.int64()).cast(field.type) if pa.types.is_timestamp(field.type) else \
        pa.array(values, typ or field.type)
    return table.set_column(i, field, array)


def _r19_zero_row_group_first(path: Path) -> None:
    f = pq.ParquetFile(path)
    table = f.read()
    with pq.ParquetWriter(path, table.schema.with_metadata(f.schema_arrow.metadata)) as w:
        w.write_table(table.slice(0, 0))
        w.write_table(table)


def _r19_value_changes() -> dict[str, tuple[str, object]]:
    """name -> (table, change(table) or a file rewrite): valid Parquet, values at the edges."""
    n = lambda t: t.num_rows  # noqa: E731
    return {
        "start_time at the int64 ns maximum (2262-04-11)": ("events", lambda t: _r19_set(t, "start_time", [_R19_NS_MAX] * n(t))),
        "start_time at the int64 ns minimum (1677-09-21)": ("events", lambda t: _r19_set(t, "start_time", [_R19_NS_MIN] * n(t))),
        "end_time at the int64 ns maximum": ("events", lambda t: _r19_set(t, "end_time", [_R19_NS_MAX] * n(t))),
        "start_time at 1970-01-01": ("events", lambda t: _r19_set(t, "start_time", [0] * n(t))),
        "ts_ns at int64 extremes": ("events", lambda t: _r19_set(t, "ts_ns", [_R19_NS_MAX - i if i % 2 else _R19_NS_MIN + i
                                                                               for i in range(n(t))])),
        "ret and latency_ns at int64 minimum": ("events", lambda t: _r19_set(_r19_set(t, "ret", [-2**63] * n(t)), "latency_ns",
                                                                                     [-2**63] * n(t))),
        "a zero-row row group first (events)": ("events", _r19_zero_row_group_first),
        "snapshot_time at the int64 ns maximum": ("counters", lambda t: _r19_set(t, "snapshot_time", [_R19_NS_MAX] * n(t))),
        "snapshot_time at 1970-01-01": ("counters", lambda t: _r19_set(t, "snapshot_time", [0] * n(t))),
        "a negative invocations count": ("counters", lambda t: _r19_set(t, "invocations", [-5] * n(t))),
        "a negative failures count": ("counters", lambda t: _r19_set(t, "failures", [-1] * n(t))),
        "a negative lost_records count": ("counters", lambda t: _r19_set(t, "lost_records", [-7] * n(t))),
        "a negative errno count": ("counters", lambda t: _r19_set(t, "errno_counts", [[{"errno": "ENOENT", "count": -4}]] * n(t))),
        "invocations at int64 maximum": ("counters", lambda t: _r19_set(t, "invocations", [2**63 - 1] * n(t))),
        "interval_s nan": ("counters", lambda t: _r19_set(t, "interval_s", [float("nan")] * n(t))),
        "interval_s 0 and negative": ("counters", lambda t: _r19_set(t, "interval_s", [0.0, -5.0] * (n(t) // 2) + [0.0] * (n(t) % 2))),
        "a zero-row row group first (counters)": ("counters", _r19_zero_row_group_first),
    }


def _r19_apply(path: Path, change) -> None:
    if change is _r19_zero_row_group_first:
        change(path)
    else:
        _r18_rewrite(path, change)


def _r19_values(d: Path, fleet: Path, spool: Path | None) -> list[Result]:
    """Valid Parquet whose values sit at the edges: times at the ends of the int64 nanosecond
    range and at 1970, int64 extremes in ts_ns/ret/latency, negative counts (invocations,
    failures, lost_records, an errno's count), a nan/0/negative interval, a zero-row row group
    first. (1) One part of a dataset so written: learn, audit, expected learn, coverage end 0 or
    in one line naming the file (never an internal error). (2) One spool snapshot so written:
    ingest ends 0 and the snapshot is either ingested or quarantined with its reason; then
    audit and expected learn of the dataset end 0 (nothing that poisons every later scan got
    in)."""
    results = []
    for i, (name, (table, change)) in enumerate(_r19_value_changes().items()):
        ds = d / f"ds{i}"
        shutil.copytree(fleet, ds)
        _r19_apply(sorted((ds / table).rglob("*.parquet"))[0], change)
        bad = []
        for cmd, argv in [("learn", ["baseline", "learn", str(ds), "-o", str(d / f"m{i}.parquet")]),
                          ("audit", ["baseline", "audit", str(ds), "-o", str(d / f"aud{i}")]),
                          ("expected learn", ["baseline", "expected", "learn", str(ds), "-o", str(d / f"e{i}.yaml")]),
                          ("coverage", ["baseline", "coverage", str(ds), "-o", str(d / f"cov{i}")])]:
            _, (ok, detail) = _r19_run(argv, d, {0, 2})
            if not ok:
                bad.append(f"{cmd}: {detail[-200:]}")
        results.append(Result(f"round19 a dataset part with {name}: learn, audit, expected learn, coverage", not bad,
                              " | ".join(bad[:2])))
        if spool is None:
            continue
        sp = d / f"spool{i}"
        shutil.copytree(spool, sp)
        snap = next(s for s in sorted(sp.glob("*/snap-*")) if pq.ParquetFile(s / "events.parquet").metadata.num_rows)
        _r19_apply(snap / f"{table}.parquet", change)
        bad = []
        _, (ok, detail) = _r19_run(["baseline", "ingest", str(sp), str(d / f"ids{i}"), "--quarantine", str(d / f"q{i}")],
                                   d, {0})
        if not ok:
            bad.append(f"ingest: {detail[-200:]}")
        for cmd, argv in [("audit", ["baseline", "audit", str(d / f"ids{i}"), "-o", str(d / f"iaud{i}")]),
                          ("expected learn", ["baseline", "expected", "learn", str(d / f"ids{i}"), "-o",
                                              str(d / f"ie{i}.yaml")])]:
            _, (ok, detail) = _r19_run(argv, d, {0})
            if not ok:
                bad.append(f"{cmd} of the dataset: {detail[-200:]}")
        results.append(Result(f"round19 ingest of a snapshot with {name}, then audit and expected learn", not bad,
                              " | ".join(bad[:2])))
    return results


def _r19_streams(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every command that prints a result, with --json: stdout to a reader that takes 10 bytes
    and goes (`| head -c 10`), closed (`>&-`), /dev/full, and stderr closed (`2>&-`): the
    status of an undisturbed run (0 or 1; /dev/full: 2 in one line)."""
    import shlex

    results = []
    commands = {
        "diff --json": (["baseline", "diff", *map(str, good[:-1]), str(good[-1]), "--json"], 0),
        "audit --json": (["baseline", "audit", str(fleet), "-o", str(d / "aud"), "--json"], 0),
        "learn --json": (["baseline", "learn", str(fleet), "-o", str(d / "m.parquet"), "--json"], 0),
        "expected learn --json": (["baseline", "expected", "learn", str(fleet), "-o", str(d / "e.yaml"), "--json"], 0),
        "coverage --json": (["baseline", "coverage", str(fleet), "-o", str(d / "cov"), "--json"], 0),
        "simulate --json": (["baseline", "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", str(d / "sim"),
                             "--json"], 0),
        "export -o -": (["baseline", "export", str(good[0]), "-o", "-"], 0),
        "tracer probes check --json": (["tracer", "probes", "check", "--json"], None),
    }
    if spool is not None:
        commands["ingest --json"] = (["baseline", "ingest", str(spool), str(d / "ds"), "--keep-spool", "--json"], 0)
    for name, (argv, code) in commands.items():
        cmd = shlex.join(_r15_cmd(argv))
        first = subprocess.run(["bash", "-c", f"{cmd} >/dev/null 2>&1; echo $?"], cwd=d, capture_output=True, text=True,
                               timeout=300, env=_r14_env())
        status = int(first.stdout.strip() or -1) if code is None else code
        bad = []
        for how, script, want in (("| head -c 10", f"{cmd} 2>err | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}", status),
                                  (">&-", f"{cmd} >&- 2>err", status), ("2>&-", f"{cmd} 2>&- >/dev/null", status),
                                  (">/dev/full", f"{cmd} >/dev/full 2>err", 2)):
            proc = subprocess.run(["bash", "-c", script], cwd=d, capture_output=True, timeout=300, env=_r14_env())
            err = (d / "err").read_bytes() if (d / "err").exists() else b""
            (d / "err").unlink(missing_ok=True)
            lines = [x for x in err.decode(errors="replace").splitlines() if x.strip()]
            if proc.returncode != want or b"Traceback" in err or (want == 2 and len(lines) != 1):
                bad.append(f"{how}: exit {proc.returncode} (expected {want}) {lines[-1:] if lines else ''}")
        results.append(Result(f"round19 {name} to a gone, closed or full stdout, stderr closed", not bad, " | ".join(bad)))
    return results


def _r19_polars_rewrite(path: Path, out: Path | None = None) -> Path:
    """The file as polars writes a frame, the tracebase footer keys given (`write_parquet(...,
    metadata=...)`): large_string, and large_list of structs of large_string for the nested
    columns."""
    meta = {k.decode(): v.decode() for k, v in (pq.ParquetFile(path).schema_arrow.metadata or {}).items()
            if k.startswith(b"tracebase.")}
    out = out or path
    tmp = out.with_name(out.name + ".polars")
    pl.read_parquet(path).write_parquet(tmp, metadata=meta)
    tmp.rename(out)
    return out


def _r19_polars(d: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None) -> list[Result]:
    """Files written by polars instead of pyarrow (with the tracebase footer keys): a trace
    for diff (its report equal to the pyarrow-written trio's), diff --json, export and
    allowlist learn; a dataset's events and counters parts for learn, audit, expected learn and
    coverage; three spool snapshots for ingest (every row in, nothing quarantined), then audit."""
    results = []
    pl_good, pl_bad = (_r19_polars_rewrite(p, p.with_name(f"pl-{p.name}")) for p in (good[0], bad))
    want = subprocess.run(_r15_cmd(["baseline", "diff", *map(str, good), str(bad)]), cwd=d, capture_output=True,
                          timeout=300, env=_r14_env())
    got = subprocess.run(_r15_cmd(["baseline", "diff", str(pl_good), str(good[1]), str(pl_bad)]), cwd=d,
                         capture_output=True, timeout=300, env=_r14_env())
    ok, detail = _verdict(got, {1})
    same = got.stdout.replace(b"pl-", b"") == want.stdout
    results.append(Result("round19 diff of traces written by polars (the report as pyarrow's)", ok and same,
                          detail if not ok else "" if same else "another report"))
    for name, argv, codes in [
        ("diff --json", ["baseline", "diff", str(pl_good), str(good[1]), str(pl_bad), "--json"], {1}),
        ("export", ["baseline", "export", str(pl_bad), "-o", str(d / "x.json")], {0}),
        ("allowlist learn", ["baseline", "allowlist", "learn", str(pl_good), str(good[1]), "-o", str(d / "a.yaml")], {0}),
    ]:
        _, (ok, detail) = _r19_run(argv, d, codes)
        results.append(Result(f"round19 {name} of a trace written by polars", ok, detail))
    ds = d / "ds"
    shutil.copytree(fleet, ds)
    for table in ("events", "counters"):
        _r19_polars_rewrite(sorted((ds / table).rglob("*.parquet"))[0])
    for name, argv in [("learn", ["baseline", "learn", str(ds), "-o", str(d / "m.parquet")]),
                       ("audit", ["baseline", "audit", str(ds), "-o", str(d / "aud")]),
                       ("expected learn", ["baseline", "expected", "learn", str(ds), "-o", str(d / "e.yaml")]),
                       ("coverage", ["baseline", "coverage", str(ds), "-o", str(d / "cov")])]:
        _, (ok, detail) = _r19_run(argv, d, {0})
        results.append(Result(f"round19 {name} of a dataset with parts written by polars", ok, detail))
    if spool is not None:
        sp = d / "spool"
        shutil.copytree(spool, sp)
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sp.glob("*/snap-*/events.parquet"))
        for snap in sorted(sp.glob("*/snap-*"))[:3]:
            for table in ("events", "counters"):
                _r19_polars_rewrite(snap / f"{table}.parquet")
        _, (ok, detail) = _r19_run(["baseline", "ingest", str(sp), str(d / "ids"), "--quarantine", str(d / "q")], d, {0})
        problems = [] if ok else [detail]
        if any((d / "q").rglob("*.reason")):
            problems.append("quarantined: " + next((d / "q").rglob("*.reason")).read_text()[:160])
        got_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in (d / "ids" / "events").rglob("*.parquet")) \
            if (d / "ids" / "events").exists() else 0
        if got_rows != rows:
            problems.append(f"{got_rows} of {rows} events rows in the dataset")
        _, (ok, detail) = _r19_run(["baseline", "audit", str(d / "ids"), "-o", str(d / "iaud")], d, {0})
        if not ok:
            problems.append(f"audit: {detail}")
        results.append(Result("round19 ingest of snapshots written by polars, then audit", not problems,
                              " | ".join(problems[:2])))
    return results


def _r19_leftovers(d: Path) -> list[Result]:
    """What round nineteen fixed (tests/test_robust_nineteenth.py)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_nineteenth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round19 tests/test_robust_nineteenth.py", proc.returncode == 0, tail[0])]


def round19_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, only: str | None = None
                  ) -> list[Result]:
    return _parts(base / "r19", "round19", only, (
        ("signals", lambda g: _r19_signals(g, fleet, spool)),
        ("limits", lambda g: _r19_limits(g, fleet, good, spool)),
        ("env", lambda g: _r19_env(g, fleet, good)),
        ("values", lambda g: _r19_values(g, fleet, spool)),
        ("streams", lambda g: _r19_streams(g, fleet, good, spool)),
        ("polars", lambda g: _r19_polars(g, fleet, good, bad, spool)),
        ("leftovers", _r19_leftovers)))


# --------------------------------------------------------------------------------------------
# round twenty
# --------------------------------------------------------------------------------------------
_R20_HOLDER = ("import fcntl, os, sys, time\n"
               "fd = os.open(sys.argv[1], os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(sys.argv[1]) else 0))\n"
               "fcntl.flock(fd, fcntl.LOCK_EX)\n"
               "print('held', flush=True)\n"
               "time.sleep(600)\n")


def _r20_run(argv: list[str], cwd: Path, codes: set[int], words: str = "", timeout: float = 300,
             prefix: str = "") -> tuple[subprocess.CompletedProcess | None, tuple[bool, str]]:
    proc, verdict = _r19_run(argv, cwd, codes, prefix=prefix, timeout=timeout)
    if proc is not None and words and words not in proc.stderr.decode(errors="replace"):
        return proc, (False, f"no {words!r} in: {verdict[1]}")
    return proc, verdict


def _r20_inputs(d: Path, good: list[Path], bad: Path) -> list[Result]:
    """`baseline diff` odd inputs (a trace of zero events as BAD and among GOOD, a newer schema
    version, good traces of two commands, the same file or a copy as good and bad, a trace
    still being written: a writer's hidden temporary, cut short) and `tracer record` of a
    command that is not found, is a directory, has no execute permission, names a missing #!
    interpreter, is killed by SIGKILL/SIGTERM: the status a shell gives (127, 126, 128+N), one
    line, and for a killed command the whole trace."""
    results = []
    zero = write(events("z", PROGRAM, 13, "good").slice(0, 0), d / "zero.parquet")
    newer = write(events("n", PROGRAM, 14, "good"), d / "newer.parquet", schema_version="99")
    other = events("o", [(pr, r, e, x.replace("job", "other") if x else x) for pr, r, e, x in PROGRAM], 15, "good")
    other = write(other.set_column(other.schema.get_field_index("command"), "command",
                                   pa.array(["./other"] * len(other))), d / "other.parquet")
    copy = d / "bad-copy.parquet"
    shutil.copy(bad, copy)
    whole = bad.read_bytes()
    writing = d / f".bad.parquet.{os.getpid()}-abcdef.tmp"
    writing.write_bytes(whole[: len(whole) // 2])
    g = [str(p) for p in good]
    cases = [("a zero-event BAD", [*g, str(zero)], {2}, "empty"),
             ("a zero-event GOOD among others", [*g, str(zero), str(bad)], {1, 2}, ""),
             ("a GOOD of schema version 99", [*g, str(newer), str(bad)], {2}, "99"),
             ("GOOD traces of two commands", [*g, str(other), str(bad)], {2}, "--mixed"),
             ("GOOD traces of two commands with --mixed", [*g, str(other), str(bad), "--mixed"], {1}, ""),
             ("the same file as GOOD and BAD", [*g, str(bad), str(bad)], {2}, "GOOD"),
             ("a copy of BAD among GOOD", [*g, str(copy), str(bad)], {2}, "GOOD"),
             ("a GOOD that is its own BAD", [g[0], g[0]], {2}, "GOOD"),
             ("a trace still being written as BAD", [*g, str(writing)], {2}, "")]
    for name, argv, codes, words in cases:
        _, (ok, detail) = _r20_run(["baseline", "diff", *argv], d, codes, words)
        results.append(Result(f"round20 diff of {name}", ok, detail))
    if os.geteuid() != 0:
        return results
    (d / "adir").mkdir(exist_ok=True)
    noexec = d / "noexec.sh"
    noexec.write_text("#!/bin/sh\nexit 0\n")
    noexec.chmod(0o644)
    interp = d / "interp.sh"
    interp.write_text("#!/nonexistent/interpreter\nexit 0\n")
    interp.chmod(0o755)
    for name, cmd, code in [("a command not found", ["no-such-command-r20"], 127), ("a directory", [str(d / "adir")], 126),
                            ("a file without execute permission", [str(noexec)], 126),
                            ("a script whose #! interpreter is missing", [str(interp)], 127),
                            ("a command killed by SIGKILL", ["sh", "-c", "kill -KILL $$"], 137),
                            ("a command killed by SIGTERM", ["sh", "-c", "kill -TERM $$"], 143)]:
        out = d / f"rec-{code}-{len(results)}.parquet"
        shell = subprocess.run(["sh", "-c", " ".join(f"'{c}'" for c in cmd)], capture_output=True, timeout=30)
        proc, (ok, detail) = _r20_run(["tracer", "record", "-o", str(out), "--", *cmd], d, {code}, timeout=120)
        problems = [] if ok else [detail]
        if shell.returncode != code:
            problems.append(f"the shell itself says {shell.returncode}")
        if code > 128 and _r17_whole(out) is not None:
            problems.append(f"no whole trace: {_r17_whole(out)}")
        if code < 128 and (out.exists() or proc is None or len(proc.stderr.splitlines()) != 1):
            problems.append("a trace written, or not one line")
        results.append(Result(f"round20 tracer record of {name}: exit {code} as a shell", not problems,
                              "; ".join(problems)))
    return results


def _r20_wait_line(proc: subprocess.Popen, seconds: float) -> str:
    import select

    ready, _, _ = select.select([proc.stderr], [], [], seconds)
    return proc.stderr.readline() if ready else ""


def _r20_locks(d: Path, fleet: Path, good: list[Path]) -> list[Result]:
    """A lock held by a stopped process (Ctrl-Z, SIGSTOP): `allowlist learn -o` into its
    directory and `audit` of a dataset whose lock an ingest holds say within 10 s who holds it
    (pid, stopped), and finish once it lets go."""
    results = []
    lists = d / "lists"
    lists.mkdir(exist_ok=True)
    ds = d / "ds"
    shutil.copytree(fleet, ds)
    from baseline.pipeline.ingest import LOCK_NAME

    (ds / LOCK_NAME).touch()
    for name, held, argv in [("allowlist learn -o", lists, ["baseline", "allowlist", "learn", *map(str, good), "-o",
                                                            str(lists / "l.yaml")]),
                             ("audit", ds / LOCK_NAME, ["baseline", "audit", str(ds), "-o", str(d / "aud")])]:
        holder = subprocess.Popen([sys.executable, "-c", _R20_HOLDER, str(held)], stdout=subprocess.PIPE, text=True)
        holder.stdout.readline()
        holder.send_signal(signal.SIGSTOP)
        proc = subprocess.Popen(_r15_cmd(argv), cwd=d, env=_r14_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            line = _r20_wait_line(proc, 10)
        finally:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            holder.wait()
        try:
            _, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            err = "hung"
        problems = []
        if f"pid {holder.pid}" not in line or "stopped" not in line:
            problems.append(f"no line naming the stopped holder within 10 s ({line.strip()[:120]!r})")
        if proc.returncode != 0 or "Traceback" in err:
            problems.append(f"exit {proc.returncode}: {err.strip()[-200:]}")
        results.append(Result(f"round20 {name} behind a lock a stopped process holds", not problems,
                              "; ".join(problems)))
    return results


def _r20_counts(d: Path, fleet: Path, spool: Path | None) -> list[Result]:
    """Counts no interval can hold (failures > invocations, an errno histogram summing past the
    failures) in a spool snapshot: ingest quarantines it naming the column; and a counter reset
    (negative deltas) still goes in. In a dataset part: learn, audit, coverage end 0 or in one
    line (never an internal error)."""
    if spool is None:
        return []
    import pyarrow.compute as pc

    results = []

    def over_failures(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("failures")
        return t.set_column(i, t.schema.field(i), pc.add(t.column("invocations"), 5))

    def over_errnos(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("errno_counts")
        rows = [[{"errno": "ENOENT", "count": max(f, 0) + 3}] for f in t.column("failures").to_pylist()]
        return t.set_column(i, t.schema.field(i), pa.array(rows, t.schema.field(i).type))

    def reset(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("invocations")
        return t.set_column(i, t.schema.field(i), pa.array([-1000] * len(t), pa.int64()))

    for k, (name, change, quarantined) in enumerate([("failures above invocations", over_failures, True),
                                                     ("errno counts above failures", over_errnos, True),
                                                     ("a counter reset (negative invocations)", reset, False)]):
        sp = d / f"spool{k}"
        shutil.copytree(spool, sp)
        snap = sorted(sp.glob("*/snap-*"))[0]
        _r18_rewrite(snap / "counters.parquet", change)
        _, (ok, detail) = _r20_run(["baseline", "ingest", str(sp), str(d / f"ds{k}"), "--quarantine",
                                    str(d / f"q{k}")], d, {0})
        reasons = [p.read_text() for p in (d / f"q{k}").rglob("*.reason")] if (d / f"q{k}").exists() else []
        problems = [] if ok else [detail]
        if quarantined and not any("counters.parquet" in r for r in reasons):
            problems.append("not quarantined")
        if not quarantined and reasons:
            problems.append(f"quarantined: {reasons[0][:160]}")
        results.append(Result(f"round20 ingest of a snapshot with {name}", not problems, "; ".join(problems)))
        ds = d / f"part{k}"
        shutil.copytree(fleet, ds)
        _r18_rewrite(sorted((ds / "counters").rglob("*.parquet"))[0], change)
        bad = []
        for cmd, argv in [("learn", ["baseline", "learn", str(ds), "-o", str(d / f"m{k}.parquet")]),
                          ("audit", ["baseline", "audit", str(ds), "-o", str(d / f"aud{k}")]),
                          ("coverage", ["baseline", "coverage", str(ds), "-o", str(d / f"cov{k}")])]:
            _, (ok, detail) = _r20_run(argv, d, {0, 2})
            if not ok:
                bad.append(f"{cmd}: {detail[-160:]}")
        results.append(Result(f"round20 a dataset part with {name}: learn, audit, coverage", not bad, " | ".join(bad)))
    return results


def _r20_keys(ds: Path) -> tuple[int, int]:
    """(rows, distinct (trace_id, seq, start_time)) of a dataset's events, as the documented glob
    reads them (a host partition's files hold no host column, a day file does: not compared)."""
    frame = pl.read_parquet(str(ds / "events" / "**" / "*.parquet"), columns=["trace_id", "seq", "start_time"],
                            hive_partitioning=False)
    return frame.height, frame.unique().height


def _r20_days(d: Path) -> list[Result]:
    """A closed day compacted across hosts. (1) day-0000 removed by hand, then the whole spool
    sent again: no row twice. (2) kill -9 of the day compaction at random instants while
    `baseline export` of the dataset's events reads in a loop (export takes no lock): each
    export is the uninterrupted one byte for byte, or exit 2 in one line; never another answer.
    Then the compaction again, and the export equal."""
    results = []
    sp = d / "spool"
    r = subprocess.run(_r15_cmd(["baseline", "simulate", "--hosts", "6", "--hours", "2", "--seed", "4", "--start",
                                 "2026-11-20T00:00:00Z", "--spool", "-o", str(sp)]), cwd=d, capture_output=True,
                       env=_r14_env(), timeout=600)
    if r.returncode != 0:
        return [Result("round20 days: simulate", False, r.stderr.decode(errors="replace")[-200:])]
    spool = sp / "spool"
    ds = d / "ds"
    ingest = ["baseline", "ingest", str(spool), str(ds), "--keep-spool", "--quarantine", str(d / "q")]
    _, (ok, detail) = _r20_run(ingest, d, {0})
    rows = _r20_keys(ds)
    compact = ("import sys, datetime as dt\nfrom baseline.pipeline.ingest import compact_days\n"
               "compact_days(sys.argv[1], days_after=2, today=dt.date(2026, 12, 1), file_rows=int(sys.argv[2]))\n")
    base = d / "base"
    shutil.copytree(ds, base)
    ref = d / "ref.json"
    _, (ok_ref, detail_ref) = _r20_run(["baseline", "export", str(base / "events"), "-o", str(ref)], d, {0})
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", compact, str(ds), str(max(rows[0] // 4, 1))], env=_r14_env(), timeout=600,
                   check=False)
    took = time.monotonic() - started  # the uninterrupted compaction: the kills land within it
    date_dirs = sorted(p for p in (ds / "events").glob("date=*") if (p / "day-0000.parquet").exists())
    problems = [] if ok and ok_ref else [detail, detail_ref]
    if not date_dirs:
        problems.append("nothing compacted")
    else:
        (date_dirs[0] / "day-0000.parquet").unlink()
        _, (ok, detail) = _r20_run(ingest, d, {0})
        n, distinct = _r20_keys(ds)
        if not ok or n != distinct:
            problems.append(f"{n - distinct} rows twice after re-sending the spool ({detail[-120:]})")
    results.append(Result("round20 a date whose day-0000 was removed by hand, the spool re-sent", not problems,
                          "; ".join(problems)))
    # (2) kill -9 of the compaction while export reads
    import threading

    rng = random.Random(20)
    wrong, lines, kills, reads = [], [], 0, 0
    want = ref.read_bytes() if ref.exists() else b""
    trials = 10
    for trial in range(trials):
        work = d / f"k{trial}"
        shutil.copytree(base, work)
        compactor = subprocess.Popen([sys.executable, "-c", compact, str(work), str(max(rows[0] // 4, 1))],
                                     env=_r14_env(), start_new_session=True)

        def kill(proc: subprocess.Popen = compactor) -> None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(rng.uniform(0.1, 0.95) * took, kill)  # the kill at its instant, reads or not
        timer.start()
        n = 0
        while compactor.poll() is None or n == 0:
            out = d / f"x{trial}-{n}.json"
            proc = subprocess.run(_r15_cmd(["baseline", "export", str(work / "events"), "-o", str(out)]), cwd=d,
                                  capture_output=True, env=_r14_env(), timeout=300)
            ok, detail = _verdict(proc, {0, 2})
            if not ok:
                lines.append(detail)
            elif proc.returncode == 0 and out.read_bytes() != want:
                wrong.append(f"trial {trial} read {n}")
            n += 1
        reads += n
        timer.cancel()
        compactor.wait()
        kills += compactor.returncode == -signal.SIGKILL
        subprocess.run([sys.executable, "-c", compact, str(work), str(max(rows[0] // 4, 1))], env=_r14_env(),
                       timeout=600, check=False)
        proc = subprocess.run(_r15_cmd(["baseline", "export", str(work / "events"), "-o", str(d / "after.json")]),
                              cwd=d, capture_output=True, env=_r14_env(), timeout=300)
        if proc.returncode != 0 or (d / "after.json").read_bytes() != want:
            wrong.append(f"trial {trial}: after the rerun ({proc.returncode})")
        if _r17_temporaries(work):
            wrong.append(f"trial {trial}: temporaries left {_r17_temporaries(work)[:2]}")
    results.append(Result(f"round20 export reading while the day compaction is killed -9 ({kills} of {trials} "
                          f"killed, {reads} reads)",
                          not wrong and not lines, "; ".join((wrong + lines)[:3])))
    return results


def _r20_signals(d: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random) -> list[Result]:
    """SIGTERM and SIGINT at a random instant of ingest (with day compaction), learn, audit,
    allowlist learn, diff and coverage, each run over an earlier output: exit 0 (done), 130 or
    143, at most one line, no temporary, and the earlier output there whole (as before or as
    the new run's)."""
    results = []
    writers = {"learn": (["baseline", "learn", str(fleet), "-o", str(d / "m.parquet")], d / "m.parquet"),
               "audit": (["baseline", "audit", str(fleet), "-o", str(d / "aud")], d / "aud"),
               "coverage": (["baseline", "coverage", str(fleet), "-o", str(d / "cov")], d / "cov"),
               "allowlist learn": (["baseline", "allowlist", "learn", *map(str, good), "-o", str(d / "al.yaml")],
                                   d / "al.yaml"),
               "diff --json": (["baseline", "diff", *map(str, good), "--json"], None)}
    if spool is not None:
        writers["ingest --compact-days-after 1"] = (["baseline", "ingest", str(spool), str(d / "ds"), "--keep-spool",
                                                     "--compact-days-after", "1"], d / "ds")
    for name, (argv, out) in writers.items():
        subprocess.run(_r15_cmd(argv), cwd=d, capture_output=True, env=_r14_env(), timeout=600)  # the earlier output
        before = _digest(out) if out is not None and out.is_dir() else (out.read_bytes() if out and out.exists() else None)
        bad = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            proc = subprocess.Popen(_r15_cmd(argv), cwd=d, env=_r14_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
            time.sleep(rng.uniform(0.2, 2.5))
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                bad.append(f"{sig.name}: no exit within 60 s")
                continue
            text = err.decode(errors="replace")
            lines = [x for x in text.splitlines() if x.strip()]
            # -sig: the signal came before the interpreter had started our code (no handler yet,
            # nothing written): a shell reports it as 128+N, the same as the handler's exit
            if proc.returncode not in (0, 1, 128 + sig, -sig) or "Traceback" in text or len(lines) > 1:
                bad.append(f"{sig.name}: exit {proc.returncode}: {text.strip()[-160:]}")
            if _r17_temporaries(d):
                bad.append(f"{sig.name}: temporaries {_r17_temporaries(d)[:2]}")
            if out is not None and out.exists():
                if out.is_dir():
                    half = _no_half_output(out)
                    if half:
                        bad.append(f"{sig.name}: {half[:2]}")
                elif out.suffix == ".parquet" and _r17_whole(out) is not None:
                    bad.append(f"{sig.name}: {_r17_whole(out)}")
            elif before is not None:
                bad.append(f"{sig.name}: the earlier output is gone")
        results.append(Result(f"round20 SIGTERM and SIGINT into {name} over an earlier output", not bad,
                              " | ".join(bad[:2])))
    return results


def _r20_mounts(d: Path, fleet: Path, spool: Path | None) -> list[Result]:
    """Real file-system faults (root): a 2 MiB tmpfs filling up during ingest of a spool (ENOSPC
    part-way: one line, the dataset readable, the rerun after freeing completes with every
    row once); audit -o and learn -o on a tmpfs lazily unmounted mid-run (the output's file
    system gone: one line or done, never a traceback); a read-only bind mount over one date of
    a dataset under ingest and under the day compaction (one line or done; the date left as it
    was); ingest -j 2 of many hosts under `ulimit -n 24` (done or one line, no row twice)."""
    if os.geteuid() != 0 or spool is None:
        return []
    results = []
    # (1) ingest onto a full tmpfs, then again with room
    mnt = _tmpfs(d / "t2m", "size=2m")
    if mnt is None:
        return [Result("round20 2 MiB tmpfs", False, "mount failed")]
    with mnt as small:
        big = d / "spool"  # apart from the tmpfs: ingest writes every row into it
        shutil.copytree(spool, big)
        with open(small / "filler", "wb") as fh:  # leave room for a part of the rows only
            free = shutil.disk_usage(small).free
            fh.write(b"\0" * max(free - 60_000, 0))
        proc, (ok, detail) = _r20_run(["baseline", "ingest", str(big), str(small / "ds"), "--quarantine",
                                       str(small / "q")], d, {0, 2})
        problems = [] if ok else [detail]
        problems += _no_half_output(small / "ds") if (small / "ds").exists() else []
        (small / "filler").unlink()
        _, (ok2, detail2) = _r20_run(["baseline", "ingest", str(big), str(small / "ds"), "--quarantine",
                                      str(small / "q")], d, {0})
        if not ok2:
            problems.append(f"rerun: {detail2}")
        elif (small / "ds" / "events").exists():
            n, distinct = _r20_keys(small / "ds")
            if n != distinct:
                problems.append(f"{n - distinct} rows twice")
        results.append(Result(f"round20 ingest onto a 2 MiB tmpfs filling up (first run exit "
                              f"{proc.returncode if proc else None}), then with room", not problems,
                              "; ".join(problems)))
    # (2) the output's file system unmounted (lazily) mid-run
    for name, argv_of in [("audit -o", lambda o: ["baseline", "audit", str(fleet), "-o", str(o / "aud")]),
                          ("learn -o", lambda o: ["baseline", "learn", str(fleet), "-o", str(o / "m.parquet")]),
                          ("coverage -o", lambda o: ["baseline", "coverage", str(fleet), "-o", str(o / "cov")])]:
        bad = []
        for delay in (0.5, 1.5):
            mnt = _tmpfs(d / "vanish", "size=64m")
            if mnt is None:
                bad.append("mount failed")
                break
            proc = subprocess.Popen(_r15_cmd(argv_of(d / "vanish")), cwd=d, env=_r14_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            time.sleep(delay)
            subprocess.run(["umount", "-l", str(d / "vanish")], capture_output=True)
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                bad.append(f"{delay}s: hung")
                continue
            text = err.decode(errors="replace")
            lines = [x for x in text.splitlines() if x.strip()]
            if proc.returncode not in (0, 2) or "Traceback" in text or "internal error" in text or len(lines) > 1:
                bad.append(f"{delay}s: exit {proc.returncode}: {text.strip()[-160:]}")
        results.append(Result(f"round20 {name} on a file system lazily unmounted mid-run", not bad, " | ".join(bad)))
    # (3) a read-only bind mount over one date of a dataset
    ds = d / "ro-ds"
    r = subprocess.run(_r15_cmd(["baseline", "simulate", "--hosts", "3", "--hours", "2", "--seed", "5", "--start",
                                 "2026-11-20T23:00:00Z", "-o", str(ds)]), cwd=d, capture_output=True,
                       env=_r14_env(), timeout=600)
    dates = sorted((ds / "events").glob("date=*")) if r.returncode == 0 else []
    if dates:
        target = dates[0]
        before = _digest(target)
        subprocess.run(["mount", "--bind", str(target), str(target)], capture_output=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], capture_output=True)
        try:
            code = ("import sys, datetime as dt\nfrom baseline.pipeline.ingest import compact_days\n"
                    "from tracer.errors import TracebaseError\n"
                    "try:\n    r = compact_days(sys.argv[1], days_after=2, today=dt.date(2026, 12, 1))\n"
                    "except TracebaseError as e:\n    print(e, file=sys.stderr); sys.exit(2)\n")
            proc = subprocess.run([sys.executable, "-c", code, str(ds)], capture_output=True, env=_r14_env(),
                                  timeout=600)
            ok, detail = _verdict(proc, {0, 2})
            after = _digest(target)
            problems = [] if ok else [detail]
            if after != before:
                problems.append("the read-only date changed")
            _, (ok, detail) = _r20_run(["baseline", "audit", str(ds), "-o", str(d / "ro-aud")], d, {0})
            if not ok:
                problems.append(f"audit after: {detail}")
            results.append(Result("round20 day compaction with one date on a read-only bind mount", not problems,
                                  "; ".join(problems)))
        finally:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
    # (4) EMFILE: ingest -j 2 of many hosts under ulimit -n 24
    many = d / "many"
    r = subprocess.run(_r15_cmd(["baseline", "simulate", "--hosts", "40", "--hours", "1", "--seed", "6", "--spool",
                                 "-o", str(many)]), cwd=d, capture_output=True, env=_r14_env(), timeout=900)
    if r.returncode == 0:
        problems = []
        for workers in ("1", "2"):
            sp = d / f"many-sp{workers}"
            shutil.copytree(many / "spool", sp)
            _, (ok, detail) = _r20_run(["baseline", "ingest", str(sp), str(d / f"many-ds{workers}"), "-j", workers,
                                        "--quarantine", str(d / f"many-q{workers}")], d, {0, 2},
                                       prefix="ulimit -n 24")
            if not ok:
                problems.append(f"-j {workers}: {detail}")
            _, (ok, detail) = _r20_run(["baseline", "ingest", str(sp), str(d / f"many-ds{workers}"), "-j", workers,
                                        "--quarantine", str(d / f"many-q{workers}")], d, {0})
            if not ok:
                problems.append(f"-j {workers} rerun: {detail}")
            elif (d / f"many-ds{workers}" / "events").exists():
                n, distinct = _r20_keys(d / f"many-ds{workers}")
                if n != distinct:
                    problems.append(f"-j {workers}: {n - distinct} rows twice")
        results.append(Result("round20 ingest of 40 hosts under ulimit -n 24 (-j 1, -j 2), then without",
                              not problems, " | ".join(problems)))
    return results


def _r20_leftovers(d: Path) -> list[Result]:
    """What round twenty fixed (tests/test_robust_twentieth.py)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_twentieth.py")], cwd=REPO, capture_output=True,
                          timeout=900, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round20 tests/test_robust_twentieth.py", proc.returncode == 0, tail[0])]


def round20_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                  only: str | None = None) -> list[Result]:
    return _parts(base / "r20", "round20", only, (
        ("inputs", lambda g: _r20_inputs(g, good, bad)),
        ("locks", lambda g: _r20_locks(g, fleet, good)),
        ("counts", lambda g: _r20_counts(g, fleet, spool)),
        ("days", _r20_days),
        ("signals", lambda g: _r20_signals(g, fleet, good, spool, rng)),
        ("mounts", lambda g: _r20_mounts(g, fleet, spool)),
        ("leftovers", _r20_leftovers)))


# --------------------------------------------------------------------------------------------
# round twenty-one: every CLI against odd files, odd outputs and OS errors, kill -9 of every writer
# --------------------------------------------------------------------------------------------
def _r21_cut_points(path: Path) -> dict[str, int]:
    """Byte offsets of `path` at every Parquet boundary: the magic, each column chunk's start
    and middle, the footer's start and middle, its length field, the closing magic."""
    meta = pq.read_metadata(path)
    size = path.stat().st_size
    footer = int.from_bytes(path.read_bytes()[-8:-4], "little")
    cuts = {"empty": 0, "magic only": 4, "footer start": size - 8 - footer,
            "mid footer": size - 8 - footer // 2, "before footer length": size - 8, "before closing magic": size - 4,
            "last byte cut": size - 1}
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = min(x for x in (col.dictionary_page_offset, col.data_page_offset) if x)
            cuts[f"rg{g} {col.path_in_schema} start"] = start
            cuts[f"rg{g} {col.path_in_schema} middle"] = start + col.total_compressed_size // 2
    return {k: v for k, v in cuts.items() if 0 <= v < size}


def _r21_odd_files(d: Path, source: Path) -> dict[str, Path]:
    """name -> an odd input made from `source` (an events trace): truncated at every boundary,
    another table's schema, an unrelated schema, a newer schema version, empty, a directory, a
    FIFO, a symlink loop, a non-UTF-8 name (a whole copy: must be read)."""
    d.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    odd: dict[str, Path] = {}
    for name, at in _r21_cut_points(source).items():
        p = d / f"cut-{len(odd):03d}.parquet"
        p.write_bytes(data[:at])
        odd[f"truncated at {name}"] = p
    counters = pa.Table.from_pylist([], schema=schema.COUNTERS)
    odd["counters table as events"] = d / "counters.parquet"
    pq.write_table(counters.replace_schema_metadata({schema.META_TABLE: b"counters",
                                                     schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}),
                   odd["counters table as events"])
    odd["unrelated schema"] = d / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), odd["unrelated schema"])
    odd["schema version 99"] = write(pq.read_table(source), d / "v99.parquet", schema_version="99")
    (d / "empty.parquet").write_bytes(b"")
    odd["empty file"] = d / "empty.parquet"
    (d / "dir.parquet").mkdir(exist_ok=True)
    odd["a directory"] = d / "dir.parquet"
    with contextlib.suppress(FileExistsError):
        os.mkfifo(d / "fifo.parquet")
    odd["a FIFO"] = d / "fifo.parquet"
    with contextlib.suppress(FileExistsError):
        os.symlink(d / "loop.parquet", d / "loop.parquet")
    odd["a symlink loop"] = d / "loop.parquet"
    name = Path(os.fsdecode(bytes(d) + b"/tr\xffce.parquet"))
    shutil.copy(source, name)
    odd["a non-UTF-8 name (whole)"] = name
    return odd


def _r21_inputs(d: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None) -> list[Result]:
    """Every reader of a trace (diff as GOOD and as BAD, export, allowlist learn), of a dataset
    (learn, audit, coverage, with the odd file as a part), of a spool (ingest: the odd file as
    a snapshot's events file) and of a probe set (tracer probes check, tracer run): exit 2 with
    one line naming the file, or the result for a whole file; never a hang or a traceback."""
    results = []
    odd = _r21_odd_files(d / "odd", bad)
    whole = "a non-UTF-8 name (whole)"
    for name, path in odd.items():
        # (the whole copy is BAD's: as GOOD beside BAD it is refused as the same trace; export
        # reads through polars, which takes no non-UTF-8 path: refused naming it, documented)
        readers = {
            "diff (as BAD)": (["baseline", "diff", *map(str, good), str(path)], {1} if name == whole else {2}),
            "diff (as GOOD)": (["baseline", "diff", str(path), str(bad)], {2}),
            "export": (["baseline", "export", str(path), "-o", str(d / "x.json")], {0, 2} if name == whole else {2}),
            "allowlist learn": (["baseline", "allowlist", "learn", str(path), "-o", str(d / "a.yaml")],
                                {0} if name == whole else {2}),
        }
        for reader, (argv, codes) in readers.items():
            _, (ok, detail) = _r19_run(argv, d, codes, timeout=120)
            results.append(Result(f"round21 {reader} of {name}", ok, detail))
    # the dataset readers: a handful of the kinds as a part file of one host (truncations: three)
    day = next(p for p in sorted((fleet / "events").iterdir()) if p.is_dir())
    host = next(p for p in sorted(day.iterdir()) if p.is_dir())
    kinds = [k for k in odd if not k.startswith("truncated")] + [k for k in odd if k.startswith("truncated")][::9]
    for name in kinds:
        ds = d / "ds"
        shutil.rmtree(ds, ignore_errors=True)
        shutil.copytree(fleet, ds, symlinks=True)
        target = ds / host.relative_to(fleet) / "part-zz-odd.parquet"
        src = odd[name]
        if src.is_symlink():
            os.symlink(target, target)
        elif stat_fifo(src):
            os.mkfifo(target)
        elif src.is_dir():
            target.mkdir()
        else:
            shutil.copy(src, target)
        for argv in (["baseline", "learn", str(ds), "-o", str(d / "m.parquet")],
                     ["baseline", "audit", str(ds), "-o", str(d / "aud")],
                     ["baseline", "coverage", str(ds), "-o", str(d / "cov")]):
            _, (ok, detail) = _r19_run(argv, d, {0, 2}, timeout=300)
            results.append(Result(f"round21 {argv[1]} of a dataset with {name} as a part", ok, detail))
    if spool is not None:
        for name in ("truncated at footer start", "unrelated schema", "empty file", "a directory", "a FIFO",
                     "a symlink loop"):
            sp = d / "spool"
            shutil.rmtree(sp, ignore_errors=True)
            shutil.copytree(spool, sp, symlinks=True)
            snap = next(p for p in sorted(sp.rglob("events.parquet")))
            snap.unlink()
            src = odd.get(name)
            if src is None:
                continue
            if src.is_symlink():
                os.symlink(snap, snap)
            elif stat_fifo(src):
                os.mkfifo(snap)
            elif src.is_dir():
                snap.mkdir()
            else:
                shutil.copy(src, snap)
            shutil.rmtree(d / "ing", ignore_errors=True)
            proc, (ok, detail) = _r19_run(["baseline", "ingest", str(sp), str(d / "ing"), "--keep-spool"], d, {0},
                                          timeout=300)
            said = proc is not None and b"quarantined" in proc.stdout
            results.append(Result(f"round21 ingest of a spool snapshot whose events file is {name}",
                                  ok and said, detail + ("" if said else " (nothing quarantined)")))
    for name in ("empty file", "a directory", "a FIFO", "a symlink loop", "unrelated schema"):
        for argv in (["tracer", "probes", "check", str(odd[name])],
                     ["tracer", "run", str(odd[name]), "-d", "1s", "--spool", str(d / "tsp")]):
            _, (ok, detail) = _r19_run(argv, d, {2}, timeout=120)
            results.append(Result(f"round21 {' '.join(argv[:2])} of {name} as the probe set", ok, detail))
    return results


def stat_fifo(path: Path) -> bool:
    import stat as st

    try:
        return st.S_ISFIFO(os.lstat(path).st_mode)
    except OSError:
        return False


def _r21_writers(fleet: Path, good: list[Path], spool: Path | None, out: Path, record: bool) -> dict[str, tuple[list[str], Path]]:
    """Every writer and its output path under `out`."""
    w = {
        "learn": (["baseline", "learn", str(fleet), "-o", str(out / "model.parquet")], out / "model.parquet"),
        "audit": (["baseline", "audit", str(fleet), "-o", str(out / "aud")], out / "aud"),
        "coverage": (["baseline", "coverage", str(fleet), "-o", str(out / "cov")], out / "cov"),
        "expected learn": (["baseline", "expected", "learn", str(fleet), "-o", str(out / "e.yaml")], out / "e.yaml"),
        "export": (["baseline", "export", str(good[0]), "-o", str(out / "x.json")], out / "x.json"),
        "allowlist learn": (["baseline", "allowlist", "learn", *map(str, good), "-o", str(out / "a.yaml")],
                            out / "a.yaml"),
        "simulate": (["baseline", "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", str(out / "sim")],
                     out / "sim"),
    }
    if spool is not None:
        w["ingest"] = (["baseline", "ingest", str(spool), str(out / "ds"), "--keep-spool"], out / "ds")
    if record:
        w["record"] = (["tracer", "record", "-o", str(out / "r.parquet"), "--", "true"], out / "r.parquet")
    return w


def _r21_can_record(d: Path) -> bool:
    if os.geteuid() != 0:
        return False
    proc, _ = _r19_run(["tracer", "record", "-o", str(d / "probe.parquet"), "--", "true"], d, {0}, timeout=300)
    return proc is not None and proc.returncode == 0


def _r21_outputs(d: Path, fleet: Path, good: list[Path], spool: Path | None) -> list[Result]:
    """Every writer's output: in a read-only directory, on a full 64 KiB tmpfs, in a directory
    an unprivileged user cannot write (setpriv nobody), under a missing parent, where a
    directory / a FIFO / a symlink loop is, and under umask 077 and 002 (the modes honoured)."""
    results = []
    record = _r21_can_record(d)
    if not record:
        results.append(Result("round21 tracer record available (root, bcc)", False, "cannot record here"))
    root = os.geteuid() == 0
    # read-only: a read-only tmpfs (root ignores directory modes)
    ro = _tmpfs(d / "ro", "ro,size=64k") if root else None
    if ro:
        with ro:
            for name, (argv, _out) in _r21_writers(fleet, good, spool, d / "ro", record).items():
                _, (ok, detail) = _r19_run(argv, d, {2}, timeout=300)
                results.append(Result(f"round21 {name} into a read-only directory", ok, detail))
    full = _tmpfs(d / "full", "size=64k") if root else None
    if full:
        with full:
            for name, (argv, _out) in _r21_writers(fleet, good, spool, d / "full", record).items():
                _, (ok, detail) = _r19_run(argv, d, {0, 2}, timeout=300)
                half = _no_half_output(d / "full")
                results.append(Result(f"round21 {name} onto a full 64 KiB tmpfs", ok and not half,
                                      detail + (f" half: {half[:3]}" if half else "")))
                for p in list((d / "full").iterdir()):
                    shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    if root and shutil.which("setpriv"):
        for p in [d, *d.parents]:  # the inputs readable by nobody: the battery's directories
            if str(p).startswith(tempfile.gettempdir()) and p != Path(tempfile.gettempdir()):
                p.chmod(p.stat().st_mode | 0o055)
        shut = d / "shut"
        shut.mkdir(exist_ok=True)
        shut.chmod(0o755)
        for name, (argv, _out) in _r21_writers(fleet, good, spool, shut, False).items():
            ok, detail = _r14_run(argv, d, {2}, timeout=300, user="nobody")
            results.append(Result(f"round21 {name} as nobody into a directory it cannot write", ok, detail))
    for name, (argv, out) in _r21_writers(fleet, good, spool, d / "missing" / "parent", record).items():
        shutil.rmtree(d / "missing", ignore_errors=True)
        _, (ok, detail) = _r19_run(argv, d, {0, 2}, timeout=300)
        bad = _r17_whole(out) if out.exists() else None
        results.append(Result(f"round21 {name} under a missing parent", ok and not bad, f"{detail} {bad or ''}"))
    for kind in ("a directory", "a FIFO", "a symlink loop"):
        spot = d / "spots"
        shutil.rmtree(spot, ignore_errors=True)
        spot.mkdir()
        for name, (argv, out) in _r21_writers(fleet, good, spool, spot, record).items():
            if out.suffix == "" and kind == "a directory":
                continue  # a directory output: a directory there is its normal case
            if kind == "a directory":
                out.mkdir(exist_ok=True)
            elif kind == "a FIFO":
                os.mkfifo(out)
            else:
                os.symlink(out, out)
            _, (ok, detail) = _r19_run(argv, d, {2}, timeout=120)
            results.append(Result(f"round21 {name} where its output is {kind}", ok, detail))
            shutil.rmtree(out, ignore_errors=True) if out.is_dir() and not out.is_symlink() else out.unlink()
    for mask in (0o077, 0o002):
        um = d / f"umask{mask:03o}"
        shutil.rmtree(um, ignore_errors=True)
        um.mkdir()
        for name, (argv, out) in _r21_writers(fleet, good, spool, um, record).items():
            _, (ok, detail) = _r19_run(argv, d, {0}, prefix=f"umask {mask:03o}", timeout=300)
            wrong = []
            for p in [out, *(out.rglob("*") if out.is_dir() else [])]:
                if not p.exists() or p.is_symlink() or p.name == "LATEST":
                    continue
                mode = p.stat().st_mode & 0o777
                want = (0o777 if p.is_dir() else 0o666) & ~mask
                if mode & ~want or (mask == 0o002 and not p.is_dir() and not mode & 0o020):
                    wrong.append(f"{p.relative_to(um)} {mode:03o}")
            results.append(Result(f"round21 {name} under umask {mask:03o}", ok and not wrong,
                                  f"{detail} modes: {wrong[:3]}"))
    return results


def _r21_kill9(d: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random, per: int
               ) -> list[Result]:
    """SIGKILL at a random instant of each writer (learn, audit, ingest with compaction, export,
    allowlist learn, coverage, record) over an earlier whole output: the output is then whole
    (the old or the new), and the next run finishes (exit 0, its lock free, no temporary
    left, a whole output); for ingest the dataset holds each row once."""
    results = []
    record = _r21_can_record(d)
    out = d / "out"
    out.mkdir(exist_ok=True)
    writers = _r21_writers(fleet, good, None, out, record)
    writers = {k: v for k, v in writers.items() if k in ("learn", "audit", "export", "allowlist learn", "coverage",
                                                         "record")}
    if spool is not None:
        writers["ingest + compaction"] = (["baseline", "ingest", str(spool), str(out / "ds"), "--keep-spool",
                                           "--compact-min-files", "2"], out / "ds")
    for name, (argv, path) in writers.items():
        t0 = time.monotonic()
        first, _ = _r19_run(argv, d, {0}, timeout=300)
        took = time.monotonic() - t0
        if first is None or first.returncode != 0:
            results.append(Result(f"round21 kill -9 {name}: first run", False, str(first and first.stderr[-200:])))
            continue
        for _ in range(per):
            delay = rng.uniform(0.1, max(0.3, took))
            proc = _r15_start(argv, d)
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            problems = []
            whole = _r17_whole(path) if path.exists() else "gone"
            if whole:
                problems.append(f"after the kill: {whole}")
            if name.startswith("ingest"):
                rows, distinct = _r20_keys(path)
                if rows != distinct:
                    problems.append(f"{rows - distinct} rows twice")
            again, (ok, detail) = _r19_run(argv, d, {0}, timeout=300)
            if not ok:
                problems.append(f"rerun: {detail}")
            left = _r17_temporaries(out)
            if left:
                problems.append(f"temporaries: {left[:3]}")
            whole = _r17_whole(path) if path.exists() else "gone"
            if whole:
                problems.append(f"after the rerun: {whole}")
            results.append(Result(f"round21 kill -9 {name} at {delay:.2f}s", not problems, " | ".join(problems)))
    return results


def _r21_known(d: Path, good: list[Path], bad: Path, spool: Path | None) -> list[Result]:
    """Round twenty's open points on the command line: a zero-event GOOD trace among others;
    `baseline export` of a dataset's events while a writer holds the dataset lock; a counters
    part with impossible counts another writer put in the dataset, then compacted."""
    results = []
    empty = write(events("g0", PROGRAM, 12, "good").slice(0, 0), d / "empty.parquet")
    for argv, codes in ((["baseline", "diff", str(good[0]), str(empty), str(bad)], {2}),
                        (["baseline", "allowlist", "learn", str(good[0]), str(empty), "-o", str(d / "a.yaml")], {2})):
        proc, (ok, detail) = _r19_run(argv, d, codes)
        said = proc is not None and b"empty" in proc.stderr
        results.append(Result(f"round21 {argv[1]} with a zero-event GOOD among others", ok and said, detail))
    if spool is None:
        return results
    ds = d / "ds"
    _r19_run(["baseline", "ingest", str(spool), str(ds), "--keep-spool"], d, {0}, timeout=300)
    lock = ds / ".tracebase.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\ntime.sleep(600)\n", str(lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()
        proc = subprocess.Popen(_r15_cmd(["baseline", "export", str(ds / "events"), "-o", str(d / "x.json"),
                                          "--max-events", "100000000"]),
                                cwd=d, env=_r14_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = _r20_wait_line(proc, 60)
        waited = proc.poll() is None and f"pid {holder.pid}" in line
    finally:
        holder.kill()
        holder.wait()
    _, err = proc.communicate(timeout=300)
    results.append(Result("round21 export of a dataset's events waits for the writer holding its lock",
                          waited and proc.returncode == 0, f"exit {proc.returncode}: {line.strip()} {err[-200:]}"))
    part = next(p for p in sorted((ds / "counters").rglob("part-*.parquet")))
    table = pq.read_table(part)
    calls = table.column("invocations").to_pylist()
    fails = table.column("failures").to_pylist()
    fails[0] = max(calls[0], 0) + 5
    i = table.schema.get_field_index("failures")
    table = table.set_column(i, table.schema.field(i), pa.array(fails, table.schema.field(i).type))
    odd = part.with_name("part-zz-other-writer.parquet")
    pq.write_table(table.replace_schema_metadata(pq.read_schema(part).metadata), odd)
    proc, (ok, detail) = _r19_run(["baseline", "ingest", str(spool), str(ds), "--keep-spool",
                                   "--compact-min-files", "2"], d, {0}, timeout=300)
    left = pl.read_parquet(str(ds / "counters" / "**" / "*.parquet"), columns=["invocations", "failures"],
                           hive_partitioning=False)
    impossible = left.filter((pl.col("failures") > pl.col("invocations")) & (pl.col("invocations") >= 0)).height
    results.append(Result("round21 a counters part with failures above invocations, compacted", ok and not impossible
                          and not odd.exists(), f"{detail} ({impossible} impossible rows left)"))
    return results


def _r21_leftovers(d: Path) -> list[Result]:
    """What round twenty-one fixed (tests/test_robust_twentyfirst.py)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_robust_twentyfirst.py")], cwd=REPO, capture_output=True,
                          timeout=1200, env=_r14_env())
    tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return [Result("round21 tests/test_robust_twentyfirst.py", proc.returncode == 0, tail[0])]


def round21_cases(base: Path, fleet: Path, good: list[Path], bad: Path, spool: Path | None, rng: random.Random,
                  quick: bool, only: str | None = None) -> list[Result]:
    return _parts(base / "r21", "round21", only, (
        ("inputs", lambda g: _r21_inputs(g, fleet, good, bad, spool)),
        ("outputs", lambda g: _r21_outputs(g, fleet, good, spool)),
        ("kill9", lambda g: _r21_kill9(g, fleet, good, spool, rng, 1 if quick else 3)),
        ("known", lambda g: _r21_known(g, good, bad, spool)),
        ("leftovers", _r21_leftovers)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--verbose", action="store_true", help="print every case, not only the failed ones")
    ap.add_argument("--quick", action="store_true", help="one signal and one kill -9 trial per writer (else 3)")
    ap.add_argument("--group", choices=["round9", "round10", "round11", "round12", "round13", "round14", "round15",
                                        "round16", "round17", "round18", "round19", "round20", "round21"],
                    default=None, help="only this round's group (after the shared inputs are built)")
    ap.add_argument("--part", default=None, help="with --group round15: only this part (numbers, parquet, streams, "
                    "two, sweep, tracer, leftovers); with round16: snapshots, limits, gone, env, mounts, inputs, "
                    "leftovers; with round17: argv, parquet, concurrent, kill9, leftovers; with round18: utf8, clock, keep, "
                    "leftovers; with round19: signals, limits, env, values, streams, polars, leftovers; with round20: inputs, "
                    "locks, counts, days, signals, mounts, leftovers; with round21: inputs, outputs, kill9, known, leftovers")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="tracebase-battery-"))
    results: list[Result] = []
    try:
        good = [write(events(f"g{i}", PROGRAM, 10 + i, "good"), base / f"good{i}.parquet") for i in (1, 2)]
        bad = write(events("b1", BAD, 30, "failure"), base / "bad.parquet")
        only9 = args.group is not None  # a later round's group skips the earlier rounds' cases
        for name, (path, codes) in ({} if only9 else trace_variants(base)).items():
            for argv in (["baseline", "diff", *map(str, good), str(path)],
                         ["baseline", "export", str(path), "-o", str(base / "x.json")]):
                allowed = codes if argv[1] == "diff" else {0 if c == 1 else c for c in codes}
                ok, detail = run(argv, base, allowed)
                results.append(Result(f"{argv[1]} trace {name}", ok, detail))
        for name, (path, codes) in ({} if only9 else yaml_variants(base)).items():
            ok, detail = run(["baseline", "diff", *map(str, good), str(bad), "--allowlist", str(path)], base,
                             {1} if codes == {0, 1} else codes)
            results.append(Result(f"allowlist {name}", ok, detail))
            copy = base / f"learn-{name}.yaml"
            shutil.copy(path, copy)
            ok, detail = run(["baseline", "allowlist", "learn", *map(str, good), "-o", str(copy)], base,
                             {0} if codes == {0, 1} else codes)
            results.append(Result(f"allowlist learn into {name}", ok, detail))
        fleet = base / "fleet"
        ok, detail = run(["baseline", "simulate", "--hosts", "6", "--hours", "2", "--seed", "3", "-o", str(fleet)], base, {0})
        results.append(Result("simulate fleet", ok, detail))
        run(["baseline", "learn", str(fleet)], base, {0})
        for since in [] if only9 else ["0", "0s", "-0", "1us", "100000d", "99999999999d", "2026-13-01", "2026-02-30", "1970-01-01",
                      "0001-01-01", "9999-12-31", "2026-12-01T04:00:00+25:00", " 2h", "", "now", "today", "2h30m",
                      "1e2h", "0x10", "+inf", "\u0661\u0662h", "2026-11-28T00:00:00Z"]:
            ok, detail = run(["baseline", "audit", str(fleet), f"--since={since}", "-o", str(base / "aud")], base, {0, 2})
            results.append(Result(f"audit --since {since!r}", ok, detail))
        day = next((fleet / "events").iterdir())
        host = next(day.iterdir())
        odd_layouts = {
            "host-first": lambda ds: shutil.copytree(host, ds / "events" / "host=x"),
            "date-not-a-date": lambda ds: shutil.copytree(host, ds / "events" / "date=not-a-date" / host.name),
            "nested-junk": lambda ds: shutil.copytree(host, ds / "events" / day.name / "junk" / "deeper"),
            "symlinked-partition": lambda ds: os.symlink(host, ds / "events" / day.name / "host=linked"),
            "partition-is-a-file": lambda ds: (ds / "events" / day.name / "host=afile").write_text("hi"),
            "empty-host": lambda ds: shutil.copytree(host, ds / "events" / day.name / "host="),
            "dangling-symlink": lambda ds: os.symlink("/nonexistent", ds / "events" / day.name / "host=gone"),
            "symlink-loop": lambda ds: os.symlink(ds / "events", ds / "events" / day.name / "host=loop"),
            "fifo-part": lambda ds: os.mkfifo(ds / "events" / day.name / host.name / "part-fifo.parquet"),
        }
        for name, make in ({} if only9 else odd_layouts).items():
            ds = base / f"ds-{name}"
            shutil.copytree(fleet, ds)
            make(ds)
            for argv in (["learn", str(ds)], ["audit", str(ds), "-o", str(base / "aud-odd")],
                         ["coverage", str(ds), "-o", str(base / "cov-odd")]):
                ok, detail = run(["baseline", *argv], base, {0, 2}, timeout=120)
                results.append(Result(f"{argv[0]} dataset {name}", ok, detail))
        for n in () if only9 else (8, 12, 16):
            for argv in (["baseline", "diff", *map(str, good), str(bad)], ["baseline", "audit", str(fleet), "-o", str(base / "aud-n")],
                         ["baseline", "learn", str(fleet), "-o", str(base / "m-n.parquet")]):
                ok, detail = run(argv, base, {0, 1, 2}, limit_files=n)
                results.append(Result(f"{argv[1]} with RLIMIT_NOFILE {n}", ok, detail))
        if root and not only9:
            holder = subprocess.Popen([sys.executable, "-c", "import subprocess, threading, time\n"
                                       "subprocess.Popen(['true']); threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                                       "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
            holder.stdout.readline()
            time.sleep(0.3)
            kids = Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()
            tid = next(t for t in os.listdir(f"/proc/{holder.pid}/task") if int(t) != holder.pid)
            targets = {"kernel thread": "2", "thread id": tid, "gone": "999999999"}
            if kids:
                targets["zombie"] = kids[0]
            for what, pid in targets.items():
                for argv in (["tracer", "record", "-p", pid, "-d", "1s", "-o", str(base / "p.parquet")],
                             ["tracer", "run", "syscalls", "-p", pid, "-d", "1s", "--spool", str(base / "spool-p")]):
                    ok, detail = run(argv, base, {2}, timeout=60)
                    results.append(Result(f"{argv[1]} -p {what}", ok, detail))
            holder.kill()
            holder.wait()
            if shutil.which("unshare"):
                for argv in (["record", "-o", str(base / "ns.parquet"), "--", "true"],
                             ["run", "syscalls", "-p", "1", "-d", "1s", "--spool", str(base / "spool-ns")]):
                    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(BIN / "tracer"), *argv],
                                          capture_output=True, text=True, timeout=60)
                    results.append(Result(f"tracer {argv[0]} in a child PID namespace", proc.returncode == 2
                                          and "PID namespace" in proc.stderr, proc.stderr.strip()[-300:]))
        if not only9:
            results += signal_trials(base, fleet, good, rng, 1 if args.quick else 3)
            # round eight
            results += stream_and_env_cases(base, fleet, good, bad)
            results += odd_parquet_cases(base, good)
            results += dataset_fault_cases(base, fleet)
        spool = base / "spool-src"
        ok, detail = run(["baseline", "simulate", "--hosts", "3", "--hours", "1", "--seed", "2", "--spool", "-o", str(spool)],
                         base, {0})
        results.append(Result("simulate spool", ok, detail))
        if ok and not only9:
            results += ingest_overlap_cases(base, spool / "spool")
        if not only9:
            results += kill9_trials(base, fleet, good, spool / "spool" if ok else None, rng, 1 if args.quick else 3)
            results += library_cases(base, good, bad)
        if args.group in (None, "round9"):
            results += round9_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.quick)
        if args.group in (None, "round10"):
            results += round10_cases(base, fleet, good, bad, spool / "spool" if ok else None, args.quick)
        if args.group in (None, "round11"):
            results += round11_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.quick)
        if args.group in (None, "round12"):
            results += round12_cases(base, fleet, good, spool / "spool" if ok else None, rng, args.quick)
        if args.group in (None, "round13"):
            results += round13_cases(base, rng)
        if args.group in (None, "round14"):
            results += round14_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.quick)
        if args.group in (None, "round15"):
            results += round15_cases(base, fleet, good, bad, spool / "spool" if ok else None, args.quick, args.part)
        if args.group in (None, "round16"):
            results += round16_cases(base, fleet, good, spool / "spool" if ok else None, args.part)
        if args.group in (None, "round17"):
            results += round17_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.quick,
                                     args.part)
        if args.group in (None, "round18"):
            results += round18_cases(base, fleet, good, bad, spool / "spool" if ok else None, args.quick, args.part)
        if args.group in (None, "round19"):
            results += round19_cases(base, fleet, good, bad, spool / "spool" if ok else None, args.part)
        if args.group in (None, "round20"):
            results += round20_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.part)
        if args.group in (None, "round21"):
            results += round21_cases(base, fleet, good, bad, spool / "spool" if ok else None, rng, args.quick,
                                     args.part)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    failed = [r for r in results if not r.ok]
    for r in results if args.verbose else failed:
        print(f"{'ok' if r.ok else 'FAIL'} {r.case}" + ("" if r.ok else f": {r.detail}"))
    print(f"{len(results)} cases, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
