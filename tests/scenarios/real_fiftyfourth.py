"""A fifty-fourth set of real programs with one real fault each: **the fault is in a worker, not in
the main thread** -- parallel programs whose failing call happens in one child process or one thread
among several doing the same work, while the others succeed. The good runs have the same parallelism;
which worker takes which item, and in which order the workers' calls interleave, varies from run to
run (that is the noise):

- ``xargs -P4 -n1 gzip -k`` over the nodes' shard logs, one node's shard directory a read-only mount:
  that worker's gzip openat of s2/part-N.log.gz O_CREAT|O_EXCL fails EROFS, exit 123;
- ``make -j4``, each recipe ``mkdir out/<name>`` then ``sort -n -o``, a stale file out/c left by an
  older layout: that recipe's mkdir fails EEXIST, make waits for the others, exit 2;
- ``xz -T4 -k`` of three nodes' app.log (four compressing threads), one node's log directory a
  read-only mount: openat n3/app.log.xz EROFS, the others compressed, exit 1;
- ``pigz -p4 -k`` of the day's shard files, one never delivered: lstat ENOENT, "skipping", exit 1;
- ``find src -name '*.dat' -exec cp -t stage {} +`` into a 1 MiB staging tmpfs, one input bigger
  than the stage: the cp child's write of stage/big.dat fails ENOSPC, exit 1;
- ``split -n r/4 --filter='gzip -c > $FILE.gz'``, a stale directory out/part-ac.gz: the third
  filter's shell openat EISDIR, split's write to that pipe EPIPE (a consequence), exit 1;
- a bash job script starting one md5sum per shard in the background and waiting for each pid, one
  shard a directory (an unpack step's mistake): that md5sum's read EISDIR, exit 1;
- python3 ``ThreadPoolExecutor(4)`` counting rows of each shard into out/<shard>.count, one of
  which an older run left as a directory: that thread's openat O_WRONLY|O_CREAT EISDIR, exit 1;
- python3 ``multiprocessing.Pool(4)`` hashing the shards as nobody, one shard root's 0600: that
  forked worker's openat EACCES, the error re-raised in the parent, exit 1;
- python3 ``ThreadPoolExecutor(4)`` merging groups of parts, each worker holding its group's parts
  open at once, under ``ulimit -n 40``; the bad day's group g2 has 48 parts: openat EMFILE in the
  worker merging g2, exit 1;
- a bash ``set -o pipefail`` pipeline ``cat | iconv -f UTF-8 -t ASCII | sort -u``, the middle stage
  meeting a non-ASCII row: no call fails, iconv's message on stderr, exit 1;
- ``xargs -P4 -n1 gzip -t`` of the nodes' archives, one cut short: no call fails, that gzip's
  "unexpected end of file" on stderr, exit 123.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; its data is picked by the run (the setup counts the good runs).

Noise cases (``QUIET_FIFTYFOURTH``): the same parallel work in good runs alone -- other item counts,
other sizes, random names, and whichever worker happens to take which item.

No loopback service: the set takes no ports.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from .files import chown_nobody, mounted_tmpfs, run_quiet, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    argv_in,
    sh_argv,
    unmount_under,
)

OPEN = frozenset({"openat", "open"})
READ = frozenset({"read", "pread64", "readv"})
WRITE = frozenset({"write", "writev", "pwrite64"})
MKDIR = frozenset({"mkdir", "mkdirat"})
STAT = frozenset({"lstat", "newfstatat", "stat", "statx"})
STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
PY = "/usr/bin/python3"

_TURNS = RunTurns()  # which good run of each case is being set up


def bind_read_only(target: Path) -> None:
    """`target` bind-mounted on itself read-only (a directory a node remounted read-only)."""
    run_quiet("mount", "--bind", str(target), str(target))
    run_quiet("mount", "-o", "remount,bind,ro", str(target))


def _log_text(lines: int) -> str:
    return "".join(f"{random.randrange(10**9)} worker={token(2)} msg={token(6)}\n" for _ in range(lines))


# --- xargs -P4 gzip -k over the nodes' shard logs; one node's shard directory read-only --------------------------
XARGS_GZIP_SH = 'printf "%s\\n" "$1"/shards/*/*.log | exec /usr/bin/xargs -P4 -n1 /usr/bin/gzip -k'


def _shard_logs(base: Path, nodes: int, per_node: int) -> None:
    for s in range(1, nodes + 1):
        for k in range(1, per_node + 1):
            write_file(base / "shards" / f"s{s}" / f"part-{k}.log", _log_text(random.randrange(200, 2000)))


def xargs_gzip_build(base: Path, bad: bool) -> None:
    nodes, per_node = _TURNS.pick(base, bad, [(3, 2), (4, 3), (3, 3)], (3, 2))
    _shard_logs(base, nodes, per_node)
    if bad:  # node s2's shard directory was remounted read-only after an I/O error
        bind_read_only(base / "shards" / "s2")


# --- make -j4; each recipe makes out/<name>/ then sorts into it; a stale file out/c ------------------------------
MAKEFILE = """\
SRC := $(wildcard src/*.txt)
OUT := $(patsubst src/%.txt,out/%/sorted.txt,$(SRC))
all: $(OUT)
out/%/sorted.txt: src/%.txt
\tmkdir out/$*
\tsort -n -o $@ $<
"""
MAKE_SH = 'exec /usr/bin/make -s -j4 -C "$1"'


def _make_tree(base: Path, names: list[str]) -> None:
    write_file(base / "Makefile", MAKEFILE)
    for n in names:
        write_file(base / "src" / f"{n}.txt", "".join(f"{random.randrange(10**6)}\n" for _ in range(random.randrange(100, 3000))))
    (base / "out").mkdir()


def make_build(base: Path, bad: bool) -> None:
    _make_tree(base, _TURNS.pick(base, bad, [list("abcde"), list("abcdef"), list("abcd")], list("abcde")))
    if bad:  # the older layout wrote out/c as a file; this node's workspace was never cleaned
        write_file(base / "out" / "c", f"stale {token(4)}\n")


# --- xz -T4 -k of the nodes' app.log; one node's log directory read-only -----------------------------------------
XZ_SH = 'exec /usr/bin/xz -T4 -k "$1"/logs/*/app.log'


def _node_logs(base: Path, nodes: int) -> None:
    for s in range(1, nodes + 1):
        write_file(base / "logs" / f"n{s}" / "app.log", _log_text(random.randrange(20000, 40000)))


def xz_build(base: Path, bad: bool) -> None:
    _node_logs(base, 3)
    if bad:  # node n3's log directory was remounted read-only
        bind_read_only(base / "logs" / "n3")


# --- pigz -p4 -k of the day's shard files; one never delivered ----------------------------------------------------
PIGZ_SH = 'cd "$1/day" && exec /usr/bin/pigz -p4 -k $(cat manifest)'


def _day(base: Path, count: int, missing: int | None = None) -> None:
    names = [f"shard-{k:03d}.bin" for k in range(count)]
    for k, name in enumerate(names):
        if k != missing:
            write_file(base / "day" / name, _log_text(random.randrange(3000, 12000)))
    write_file(base / "day" / "manifest", "".join(f"{n}\n" for n in names))


def pigz_build(base: Path, bad: bool) -> None:
    # the bad day's transfer of shard 2 never happened; the manifest lists it
    _day(base, _TURNS.pick(base, bad, [4, 6, 5], 5), missing=2 if bad else None)


# --- find -exec cp -t stage {} + into a 1 MiB staging tmpfs; one input bigger than the stage ----------------------
FIND_SH = 'exec /usr/bin/find "$1/src" -name "*.dat" -exec /usr/bin/cp -t "$1/stage" {} +'


def _inputs(base: Path, count: int) -> None:
    for k in range(count):
        write_file(base / "src" / random.choice("ab") / f"p{k}-{token(2)}.dat", random.randbytes(random.randrange(20_000, 100_000)))


def find_build(base: Path, bad: bool) -> None:
    _inputs(base, _TURNS.pick(base, bad, [4, 6, 3], 4))
    if bad:  # the export step wrote a 3 MiB input this day
        write_file(base / "src" / "b" / "big.dat", random.randbytes(3 << 20))
    mounted_tmpfs(base / "stage", "1m")


# --- split -n r/4 --filter='gzip -c > $FILE.gz'; a stale directory out/part-ac.gz ---------------------------------
SPLIT_SH = ('cd "$1/out" && exec /usr/bin/split -n r/4 --filter=\'/usr/bin/gzip -c > "$FILE.gz"\' '
            '"$1/in/events.log" part-')


def split_build(base: Path, bad: bool) -> None:
    write_file(base / "in" / "events.log", _log_text(_TURNS.pick(base, bad, [4000, 7000, 2500], 5000)))
    (base / "out").mkdir()
    if bad:  # an older tool unpacked part-ac.gz/ as a directory here
        write_file(base / "out" / "part-ac.gz" / "README", "unpacked\n")


# --- a bash job script: one md5sum per shard in the background, wait for each pid; one shard a directory ---------
JOBS_BASH = """\
pids=
for f in "$1"/shards/shard-*.bin; do
  /usr/bin/md5sum "$f" > "$1/sums/${f##*/}.md5" &
  pids="$pids $!"
done
status=0
for pid in $pids; do wait "$pid" || status=1; done
exit $status
"""
JOBS_ARGV = ["/usr/bin/bash", "-c", JOBS_BASH, "bash"]


def _bin_shards(base: Path, count: int, as_dir: int | None = None) -> None:
    for k in range(count):
        path = base / "shards" / f"shard-{k}.bin"
        if k == as_dir:
            write_file(path / "payload", random.randbytes(1000))
        else:
            write_file(path, random.randbytes(random.randrange(50_000, 300_000)))
    (base / "sums").mkdir()


def jobs_build(base: Path, bad: bool) -> None:
    # the bad node's unpack step made shard-3.bin a directory holding the payload
    _bin_shards(base, _TURNS.pick(base, bad, [5, 6, 4], 5), as_dir=3 if bad else None)


def jobs_argv(base: Path) -> list[str]:
    return [*JOBS_ARGV, str(base)]


# --- python3 ThreadPoolExecutor(4) counting rows into out/<shard>.count; one a directory -------------------------
COUNT_PY = """\
import glob, os, sys
from concurrent.futures import ThreadPoolExecutor

base = sys.argv[1]


def count(path):
    with open(path) as fh:
        rows = sum(1 for _ in fh)
    with open(os.path.join(base, "out", os.path.basename(path) + ".count"), "w") as out:
        out.write(f"{rows}\\n")
    return rows


with ThreadPoolExecutor(max_workers=4) as pool:
    total = sum(pool.map(count, sorted(glob.glob(os.path.join(base, "data", "shard-*.csv")))))
print(total)
"""
COUNT_ARGV = [PY, "-S", "{b}/bin/count.py", "{b}"]


def _csv_shards(base: Path, count: int) -> None:
    write_file(base / "bin" / "count.py", COUNT_PY)
    for k in range(count):
        write_file(base / "data" / f"shard-{k:04d}.csv",
                   "".join(f"{token(3)},{random.randrange(10**6)}\n" for _ in range(random.randrange(200, 3000))))
    (base / "out").mkdir()


def count_build(base: Path, bad: bool) -> None:
    _csv_shards(base, _TURNS.pick(base, bad, [6, 8, 5], 6))
    if bad:  # an older run's bug made out/shard-0002.csv.count a directory
        (base / "out" / "shard-0002.csv.count").mkdir()


# --- python3 multiprocessing.Pool(4) hashing the shards as nobody; one shard root's 0600 --------------------------
HASH_PY = """\
import glob, hashlib, os, sys
from multiprocessing import Pool

base = sys.argv[1]


def digest(path):
    with open(path, "rb") as fh:
        return os.path.basename(path), hashlib.sha256(fh.read()).hexdigest()


if __name__ == "__main__":
    with Pool(4) as pool:
        sums = pool.map(digest, sorted(glob.glob(os.path.join(base, "data", "*.bin"))))
    with open(os.path.join(base, "out", "SHA256SUMS"), "w") as out:
        for name, hexdigest in sums:
            out.write(f"{hexdigest}  {name}\\n")
"""
HASH_ARGV = [PY, "-S", "{b}/bin/hash.py", "{b}"]


def _hash_inputs(base: Path, count: int, unreadable: int | None = None) -> None:
    write_file(base / "bin" / "hash.py", HASH_PY)
    for k in range(count):
        write_file(base / "data" / f"part-{k:03d}.bin", random.randbytes(random.randrange(10_000, 200_000)),
                   mode=0o600 if k == unreadable else 0o644)
    (base / "out").mkdir()
    chown_nobody(base / "out")


def hash_build(base: Path, bad: bool) -> None:
    # the bad node's copy of part-004 was made by root's rsync with the source's 0600
    _hash_inputs(base, _TURNS.pick(base, bad, [6, 9, 7], 8), unreadable=4 if bad else None)


# --- python3 ThreadPoolExecutor(4) merging groups, each held open at once, under ulimit -n 40 ---------------------
MERGE_PY = """\
import contextlib, glob, os, sys
from concurrent.futures import ThreadPoolExecutor

base = sys.argv[1]


def merge(group):
    parts = sorted(glob.glob(os.path.join(group, "part-*")))
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(p)) for p in parts]
        lines = sorted(line for fh in files for line in fh)
    with open(os.path.join(base, "out", os.path.basename(group) + ".txt"), "w") as out:
        out.writelines(lines)
    return len(lines)


with ThreadPoolExecutor(max_workers=4) as pool:
    print(sum(pool.map(merge, sorted(glob.glob(os.path.join(base, "groups", "g*"))))))
"""
MERGE_SH = 'ulimit -n 40 && exec /usr/bin/python3 -S "$1/bin/merge.py" "$1"'


def _groups(base: Path, sizes: list[int]) -> None:
    write_file(base / "bin" / "merge.py", MERGE_PY)
    for g, size in enumerate(sizes):
        for k in range(size):
            write_file(base / "groups" / f"g{g}" / f"part-{k:02d}-{token(2)}",
                       "".join(f"{token(4)}\n" for _ in range(random.randrange(5, 40))))
    (base / "out").mkdir()


def merge_build(base: Path, bad: bool) -> None:
    # the bad day's group g2 came in 48 parts (an upstream change of the part size)
    _groups(base, _TURNS.pick(base, bad, [[4, 5, 3, 4], [5, 4, 5, 3], [3, 4, 4, 5]], [4, 5, 48, 4]))


# --- a bash pipefail pipeline cat | iconv -f UTF-8 -t ASCII | sort -u; a non-ASCII row ---------------------------
ICONV_BASH = ('set -o pipefail; /usr/bin/cat "$1"/in/part-*.txt | /usr/bin/iconv -f UTF-8 -t ASCII '
              '| /usr/bin/sort -u > "$1/out/rows.txt"')


def iconv_argv(base: Path) -> list[str]:
    return ["/usr/bin/bash", "-c", ICONV_BASH, "bash", str(base)]


def _rows(base: Path, parts: int, accent: int | None = None) -> None:
    for k in range(parts):
        text = "".join(f"row {k} {token(3)} {random.randrange(10**6)}\n" for _ in range(random.randrange(300, 2000)))
        if k == accent:
            text += f"row {k} caf\u00e9 {token(3)}\n"
        write_file(base / "in" / f"part-{k}.txt", text)
    (base / "out").mkdir()


def iconv_build(base: Path, bad: bool) -> None:
    # the bad day's export of part 1 has a customer name with an accent
    _rows(base, _TURNS.pick(base, bad, [3, 4, 2], 3), accent=1 if bad else None)


# --- xargs -P4 -n1 gzip -t of the nodes' archives; one cut short -------------------------------------------------
XARGS_TEST_SH = 'printf "%s\\n" "$1"/archive/*.gz | exec /usr/bin/xargs -P4 -n1 /usr/bin/gzip -t'


def _archives(base: Path, count: int, cut: int | None = None) -> None:
    for k in range(count):
        path = write_file(base / "archive" / f"node-{k}.log", _log_text(random.randrange(2000, 6000)))
        run_quiet("gzip", str(path))
        if k == cut:
            gz = path.with_suffix(".log.gz")
            data = gz.read_bytes()
            gz.write_bytes(data[: len(data) * 2 // 3])


def xargs_test_build(base: Path, bad: bool) -> None:
    # node 2's archive was cut at two thirds (its copy was interrupted)
    _archives(base, _TURNS.pick(base, bad, [4, 5, 3], 4), cut=2 if bad else None)


def _teardown(base: Path) -> None:
    unmount_under(base)


def _sc(name, program, argv, build, probe, errno, path, *, worker, thread=False, message=None, unprivileged=False,
        description=""):
    """A fault case; `worker` is the comm of the process whose call the strace -f of the bad run shows
    failing (a child of the program, or the program's own process), `thread` whether that call is
    a thread's other than the process's first, and for a fault without a failing call, `message` a
    part of what that worker writes to stderr."""
    return Scenario(name, program, argv, build, probe, errno, path, teardown=_teardown, unprivileged=unprivileged,
                    description=description, extra={"worker": worker, "thread": thread, "message": message})


REAL_FIFTYFOURTH: list[Scenario] = [
    _sc("t54_xargs_p4_gzip_shard_dir_ro", "xargs -P4 -n1 gzip -k over the nodes' shard logs", sh_argv(XARGS_GZIP_SH),
        xargs_gzip_build, OPEN, "EROFS", lambda b: f"{b}/shards/s2/part-*.log.gz",
        worker="gzip",
        description="printf shards/*/*.log | xargs -P4 -n1 gzip -k; node s2's shard directory is a read-only "
                    "mount on the bad node: that worker's gzip openat s2/part-N.log.gz O_CREAT|O_EXCL fails "
                    "EROFS, the other workers compress theirs, xargs exits 123"),
    _sc("t54_make_j4_stale_file_mkdir", "make -j4 (mkdir out/<name>; sort -n -o) over 5, 6, 4 sources",
        sh_argv(MAKE_SH), make_build, MKDIR, "EEXIST", lambda b: f"{b}/out/c",
        worker="mkdir",
        description="make -j4, each recipe mkdir out/$* then sort; an older layout left out/c as a file: that "
                    "recipe's mkdir fails EEXIST, make waits for the other jobs, exit 2"),
    _sc("t54_xz_t4_node_log_dir_ro", "xz -T4 -k of three nodes' app.log", sh_argv(XZ_SH),
        xz_build, OPEN, "EROFS", lambda b: f"{b}/logs/n3/app.log.xz",
        worker="xz",
        description="xz -T4 -k logs/*/app.log (four compressing threads); node n3's log directory is a "
                    "read-only mount: openat n3/app.log.xz fails EROFS, the others are compressed, exit 1"),
    _sc("t54_pigz_p4_shard_never_delivered", "pigz -p4 -k of the day's shards (4, 6, 5)", sh_argv(PIGZ_SH),
        pigz_build, STAT, "ENOENT", lambda b: f"{b}/day/shard-002.bin",
        worker="pigz",
        description="pigz -p4 -k $(cat manifest) in day/; the bad day's shard-002.bin was never transferred: "
                    "lstat ENOENT, 'skipping: ... does not exist', the others compressed, exit 1"),
    _sc("t54_find_exec_cp_stage_full", "find src -exec cp -t stage {} + (4, 6, 3 inputs)", sh_argv(FIND_SH),
        find_build, WRITE, "ENOSPC", lambda b: f"{b}/stage/big.dat",
        worker="cp",
        description="find src -name '*.dat' -exec cp -t stage {} + into a 1 MiB tmpfs; the bad day has a 3 MiB "
                    "input: the cp child's write of stage/big.dat fails ENOSPC, exit 1"),
    _sc("t54_split_filter_part_is_dir", "split -n r/4 --filter='gzip -c > $FILE.gz' (4000, 7000, 2500 lines)",
        sh_argv(SPLIT_SH), split_build, OPEN, "EISDIR", lambda b: f"{b}/out/part-ac.gz",
        worker="sh",
        description="split -n r/4 --filter='gzip -c > \"$FILE.gz\"'; an older tool left out/part-ac.gz as a "
                    "directory: the third filter's shell openat O_WRONLY|O_CREAT fails EISDIR, split's writes to "
                    "that pipe EPIPE, exit 1"),
    _sc("t54_bash_jobs_md5sum_shard_is_dir", "bash jobs: md5sum & per shard, wait per pid (5, 6, 4 shards)",
        jobs_argv, jobs_build, READ, "EISDIR", lambda b: f"{b}/shards/shard-3.bin",
        worker="md5sum",
        description="a bash script starts one md5sum per shard in the background and waits for each pid; the "
                    "bad node's unpack made shard-3.bin a directory: that md5sum's read fails EISDIR, exit 1"),
    _sc("t54_python3_threadpool_count_out_is_dir", "python3 count.py (ThreadPoolExecutor(4), 6, 8, 5 shards)",
        argv_in(COUNT_ARGV), count_build, OPEN, "EISDIR", lambda b: f"{b}/out/shard-0002.csv.count",
        worker="python3", thread=True,
        description="four threads count the rows of data/shard-*.csv into out/<shard>.count; an older run left "
                    "out/shard-0002.csv.count a directory: that thread's openat O_WRONLY|O_CREAT fails EISDIR, "
                    "the error re-raised by pool.map, exit 1"),
    _sc("t54_python3_pool_hash_part_unreadable", "python3 hash.py (multiprocessing.Pool(4), 6, 9, 7 parts) as nobody",
        argv_in(HASH_ARGV), hash_build, OPEN, "EACCES", lambda b: f"{b}/data/part-004.bin", unprivileged=True,
        worker="python3",
        description="four forked Pool workers hash data/*.bin as nobody; the bad node's part-004.bin is root's "
                    "0600: that worker's openat fails EACCES, re-raised in the parent, exit 1"),
    _sc("t54_python3_threadpool_merge_emfile", "python3 merge.py (ThreadPoolExecutor(4)) under ulimit -n 40",
        sh_argv(MERGE_SH), merge_build, OPEN, "EMFILE", lambda b: f"{b}/groups/g*/part-*",
        worker="python3", thread=True,
        description="four threads each hold their group's parts open to merge them, under ulimit -n 40; the bad "
                    "day's group g2 has 48 parts: openat EMFILE, exit 1 -- in the thread merging g2 when it runs "
                    "ahead, else in whichever thread opens the descriptor past the limit (the table is the "
                    "process's: under load g3's thread did, CI 136)"),
    _sc("t54_iconv_pipeline_middle_stage", "iconv -f UTF-8 -t ASCII in a pipefail pipeline cat | iconv | sort",
        iconv_argv, iconv_build, WRITE, None, lambda b: STDERR,
        worker="iconv", message="illegal input sequence",
        description="bash -c 'set -o pipefail; cat in/part-*.txt | iconv -f UTF-8 -t ASCII | sort -u'; the bad "
                    "day's part 1 has a row with an accent: no call fails, iconv's 'illegal input sequence' on "
                    "stderr, the pipeline exits 1"),
    _sc("t54_xargs_p4_gzip_test_truncated", "xargs -P4 -n1 gzip -t of the nodes' archives (4, 5, 3)",
        sh_argv(XARGS_TEST_SH), xargs_test_build, WRITE, None, lambda b: STDERR,
        worker="gzip", message="unexpected end of file",
        description="printf archive/*.gz | xargs -P4 -n1 gzip -t; node 2's archive was cut at two thirds: no call "
                    "fails, that worker's 'unexpected end of file' on stderr, xargs exits 123"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------
def xargs_gzip_noise(base: Path, run: int) -> None:
    _shard_logs(base, [3, 4, 2, 3][run % 4], [2, 3, 3, 1][run % 4])


def make_noise(base: Path, run: int) -> None:
    _make_tree(base, [list("abcd"), list("abcdefg"), list("abcde"), list("abcdef")][run % 4])


def split_noise(base: Path, run: int) -> None:
    write_file(base / "in" / "events.log", _log_text([3000, 8000, 5000, 2000][run % 4]))
    (base / "out").mkdir()


def jobs_noise(base: Path, run: int) -> None:
    _bin_shards(base, [4, 7, 5, 6][run % 4])


def count_noise(base: Path, run: int) -> None:
    _csv_shards(base, [5, 9, 7, 6][run % 4])


def hash_noise(base: Path, run: int) -> None:
    _hash_inputs(base, [5, 10, 7, 8][run % 4])


def pigz_noise(base: Path, run: int) -> None:
    _day(base, [3, 7, 5, 4][run % 4])
    write_file(base / "day" / f"notes-{os.getpid()}-{token(3)}.txt", f"{token(8)}\n")


QUIET_FIFTYFOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t54_xargs_p4_gzip_shards_noise", sh_argv(XARGS_GZIP_SH), xargs_gzip_noise, runs=4,
                  description="xargs -P4 gzip -k over 6, 12, 6, 3 shard logs: whichever worker takes which file"),
    NoAnomalyCase("t54_make_j4_targets_noise", sh_argv(MAKE_SH), make_noise, runs=4,
                  description="make -j4 over 4, 7, 5, 6 sources: the recipes in another order each run"),
    NoAnomalyCase("t54_split_filter_sizes_noise", sh_argv(SPLIT_SH), split_noise, runs=4,
                  description="split -n r/4 --filter over 3000, 8000, 5000, 2000 lines: four gzip children"),
    NoAnomalyCase("t54_bash_jobs_md5sum_noise", jobs_argv, jobs_noise, runs=4,
                  description="the bash job script over 4, 7, 5, 6 shards: the md5sum children finish in any order"),
    NoAnomalyCase("t54_python3_threadpool_count_noise", argv_in(COUNT_ARGV), count_noise, runs=4,
                  description="ThreadPoolExecutor(4) counting 5, 9, 7, 6 shards: which thread takes which shard"),
    NoAnomalyCase("t54_python3_pool_hash_noise", argv_in(HASH_ARGV), hash_noise, runs=4,
                  description="multiprocessing.Pool(4) hashing 5, 10, 7, 8 parts: which worker takes which part"),
    NoAnomalyCase("t54_pigz_p4_day_noise", sh_argv(PIGZ_SH), pigz_noise, runs=4,
                  description="pigz -p4 -k over 3, 7, 5, 4 shards (and a notes file with a pid and random name)"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown) and forget the runs' counts."""
    for name in [*_TURNS.good_runs, *(s.name for s in REAL_FIFTYFOURTH), *(c.name for c in QUIET_FIFTYFOURTH)]:
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _TURNS.good_runs.clear()
