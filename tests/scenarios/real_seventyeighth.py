"""A seventy-eighth set of real programs: **file work done by a pool of worker threads** -- programs
whose opens, stats, reads and writes of many files run on a pool of threads, so which thread makes
which call is the scheduler's: node's ``fs.promises`` (libuv's threadpool, ``UV_THREADPOOL_SIZE``),
npm reading its ``.npmrc`` layers on that pool, python's ``concurrent.futures.ThreadPoolExecutor``,
``xz -T``, ``zstd -T``, ``pigz -p`` and ``sort --parallel`` -- and the faults hidden inside them: one
input among many that is a symlink loop or sits under a regular file, an output that is already
there, an output directory on a read-only file system, and an OPTIONAL lookup (a file the program
reads when it is there and passes over when it is not) that good runs find present in some runs and
absent (ENOENT) in others, while the bad run fails on it hard (ELOOP, EACCES): the call site is one
where good runs' outcomes vary, and the diff must still name the fault.

Fault cases (``REAL_SEVENTYEIGHTH``): three good runs and the bad run; ``extra`` holds the comm of
the thread strace shows failing (``comm``) and ``worker`` when that is a pool thread (not the
process's main thread). What ``strace -f`` showed each bad run doing, written down before the tool
was run (node 20.20 / libuv 1.46, npm 11 on it, python 3.11.2, XZ Utils 5.4.1, zstd 1.5.4, pigz
2.6, GNU coreutils 9.1 sort):

- ``node merge.js BASE ash,elm,oak,yew,fir`` (``Promise.all``: each name's in/<name>.txt and the
  optional in/<name>.override read with ``fs.promises.readFile`` -- ENOENT taken as "none" --, then
  out/<name>.txt written with ``flag: 'wx'``), run by ``sh -c 'set -a; . BASE/env.sh; exec node
  ..'``; the good runs differ in their pool and in the optional file (``UV_THREADPOOL_SIZE`` 2, 4, 2;
  elm.override present, absent, present), the bad run as good run 1 (4 threads, no elm.override)
  but with a stale out/oak.txt left there: a
  libuv pool thread (comm ``node``, tid != pid) ``openat(AT_FDCWD, ".../out/oak.txt",
  O_WRONLY|O_CREAT|O_EXCL|O_TRUNC|O_CLOEXEC, 0666) = -1 EEXIST``; "merge: EEXIST: file already
  exists, open '.../out/oak.txt'" from the main thread, exit 1;
- ``env -C BASE/proj HOME=BASE/home npm config get registry``: the project's .npmrc is an optional
  layer -- present in good runs 0 and 2 (read), absent in good run 1 (``openat = -1 ENOENT`` on a
  pool thread) -- and in the bad run a symlink to itself: a pool thread (comm ``npm``: node's main
  thread renames itself before the pool threads are cloned) ``openat(AT_FDCWD,
  ".../proj/.npmrc", O_RDONLY|O_CLOEXEC) = -1 ELOOP``; npm passes over the layer and prints the
  default registry, exit 0 (the project's registry lost silently);
- ``python3 tally.py BASE ant,bee,cow,doe,elk 3`` as nobody (``ThreadPoolExecutor(max_workers=3)``:
  each task reads in/<name>.csv, the optional in/<name>.meta -- FileNotFoundError taken as none --
  and writes out/<name>.sum); bee.meta present in good runs 0 and 2 (read), absent in good run 1
  (``openat = -1 ENOENT``), root's 0600 in the bad run: a pool thread ``openat(AT_FDCWD,
  ".../in/bee.meta", O_RDONLY|O_CLOEXEC) = -1 EACCES``; "tally: [Errno 13] Permission denied:
  '.../in/bee.meta'", "tallied 4", exit 1;
- ``xz -T4 -k -f BASE/in/a.dat BASE/in/b.dat BASE/in/logs/c.dat BASE/in/d.dat``, in/logs a regular
  file in the bad run (a directory in the good ones): after a.dat and b.dat are compressed (the
  encoder's threads cloned), the main thread's ``openat(AT_FDCWD, ".../in/logs/c.dat",
  O_RDONLY|O_NOCTTY|O_NONBLOCK) = -1 ENOTDIR``; "xz: ...: Not a directory", d.dat still
  compressed, exit 1;
- ``zstd -T4 -q -f --output-dir-flat BASE/out BASE/in/{a,b,c,d,e}.dat``, in/c.dat a symlink to
  itself in the bad run: the main thread's ``newfstatat(AT_FDCWD, ".../in/c.dat", .., 0) = -1
  ELOOP`` (when it sizes the inputs, and twice again when it comes to it), "zstd: can't stat
  .../in/c.dat : Too many levels of symbolic links -- ignored", exit 1;
- the same zstd command, its inputs all there but out/c.dat.zst a directory in the bad run (an output
  path taken by a directory): c.dat stat'ed and opened, ``newfstatat`` of out/c.dat.zst ``= 0``
  (S_IFDIR) twice, then ``openat(AT_FDCWD, ".../out/c.dat.zst", O_WRONLY|O_CREAT|O_TRUNC, 0600) = -1
  EISDIR``, "zstd: .../out/c.dat.zst: Is a directory" -- and then zstd 1.5.4 crashes: "Caught
  SIGSEGV signal, printing stack: ... setvbuf", killed by SIGSEGV (exit 139 from the shell). The
  crash comes after the failing call and is its consequence: the bifurcation is the EISDIR;
- ``pigz -p4 -k BASE/logs/app/a.log BASE/logs/web/w.log BASE/logs/db/d.log`` (each a few hundred kB,
  compressed next to itself), logs/web a tmpfs remounted read-only in the bad run (read-write in
  the good ones): a.log compressed, then ``lstat`` and ``openat`` of w.log ``= 3`` and
  ``openat(AT_FDCWD, ".../logs/web/w.log.gz", O_WRONLY|O_CREAT|O_EXCL|O_TRUNC, 0600) = -1 EROFS``;
  "pigz: abort: write error on .../w.log.gz (Read-only file system)", exit 30;
- ``sort --parallel=4 -o BASE/out/all.txt BASE/in/p1.txt .. p4.txt``, in/p3.txt a symlink to itself
  in the bad run: ``newfstatat(AT_FDCWD, ".../in/p3.txt", .., 0) = -1 ELOOP`` (sort sizes its
  inputs before reading any; with 20000 lines it starts no thread -- strace: no clone3 -- so this is
  the one case of the set whose failing call is made before any pool exists), "sort: cannot read:
  ...: Too many levels of symbolic links", exit 2.

Noise cases (``QUIET_SEVENTYEIGHTH``): five good runs each, every run diffed against the other four;
same outputs and exit status in every run. What varies between the runs (anything a held-out run
has is also in another good run: pool sizes 2 in runs 0 and 2, 4 in runs 1, 3 and 4; optional files
A in runs 0, 2, 4 and B in runs 0, 1, 4):

- node's fs.promises over twelve inputs of sizes rotating each run, ``UV_THREADPOOL_SIZE`` 2 or 4:
  how many pool threads there are and which one makes which open/read/write;
- node's merge.js over six names, two of the optional .override files (A, B) present or absent
  (absent: a pool thread's ``openat = -1 ENOENT``, which the program takes as "none");
- python's ThreadPoolExecutor over ten inputs of rotating sizes with 1 worker (runs 0, 2) or 4 (runs
  1, 3, 4): all the work on one pool thread, or shared among up to four;
- python's tally.py over six names, two optional .meta files (A, B) present or absent
  (``openat = -1 ENOENT`` on a pool thread when absent);
- ``xz -T2`` or ``-T4`` (``-1 --block-size=64KiB``) over five inputs of rotating sizes;
- ``zstd -T4`` over five inputs of rotating sizes (its workers' share of the jobs);
- ``pigz -p2`` or ``-p4`` over four inputs of rotating sizes;
- ``java Lister.java BASE`` (a source launch: ``Files.list`` of in/, sorted into a list, then a
  ``parallelStream`` reading each with ``Files.readAllLines``) over twelve inputs of rotating sizes,
  ``-XX:ActiveProcessorCount=2`` or ``4``: strace -f of the two sizes showed the twelve opens split
  6/6 over two threads, or 4/3/3/2 over four (the main thread and ForkJoinPool.commonPool workers),
  and 15 or 17 clone3 calls (the JVM's own threads sized by the count too). (A first draft streamed
  ``Files.list`` itself in parallel: its spliterator of unknown size hands out batches of 1024, so
  one thread read all twelve files -- no pool at work, so the listing is collected first.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from .files import write_file
from .harness import NoAnomalyCase, Scenario, unmount_under

NODE = "/usr/bin/node"
NPM = "/usr/bin/npm"
PY3 = "/usr/bin/python3"
XZ = "/usr/bin/xz"
ZSTD = "/usr/bin/zstd"
PIGZ = "/usr/bin/pigz"
SORT = "/usr/bin/sort"
JAVA = "/usr/bin/java"
ENV = "/usr/bin/env"
NOBODY_UID = 65534

OPENS = frozenset({"openat", "open", "creat", "openat2"})
STATS = frozenset({"newfstatat", "stat", "lstat", "statx", "fstatat64"})
RUNS = 5  # noise cases: each run against the other four
# npm in every run: no debug log file named by the time of day, no update check
NPM_QUIET = ("npm_config_logs_max=0", "npm_config_update_notifier=false")

MERGE_JS = """\
const fs = require('fs');
const [base, list] = process.argv.slice(2);
const optional = (p) => fs.promises.readFile(p, 'utf8').catch((e) => { if (e.code === 'ENOENT') return ''; throw e; });
Promise.all(list.split(',').map(async (name) => {
  const [data, extra] = await Promise.all([fs.promises.readFile(`${base}/in/${name}.txt`, 'utf8'),
                                           optional(`${base}/in/${name}.override`)]);
  await fs.promises.writeFile(`${base}/out/${name}.txt`, (extra + data).toUpperCase(), { flag: 'wx' });
  return name;
})).then((done) => console.log(`merged ${done.length}`),
         (err) => { console.error(`merge: ${err.message}`); process.exitCode = 1; });
"""

TALLY_PY = """\
import sys
from concurrent.futures import ThreadPoolExecutor

base, names, workers = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])


def optional(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def tally(name):
    with open(f"{base}/in/{name}.csv") as f:
        rows = f.read().splitlines()
    weight = len(optional(f"{base}/in/{name}.meta").split())
    with open(f"{base}/out/{name}.sum", "w") as f:
        f.write(f"{name} {len(rows)} {weight}\\n")
    return name


with ThreadPoolExecutor(max_workers=workers) as pool:
    futures = [pool.submit(tally, n) for n in names]
failed = 0
for fut in futures:
    try:
        fut.result()
    except OSError as e:
        print(f"tally: {e}", file=sys.stderr)
        failed += 1
print(f"tallied {len(names) - failed}")
sys.exit(1 if failed else 0)
"""


LISTER_JAVA = """\
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.*;
import java.util.List;
import java.util.stream.Stream;

public class Lister {
    public static void main(String[] args) throws IOException {
        List<Path> files;
        try (Stream<Path> listing = Files.list(Path.of(args[0], "in"))) {
            files = listing.sorted().toList();
        }
        long lines = files.parallelStream().mapToLong(p -> {
            try {
                return Files.readAllLines(p).size();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }).sum();
        System.out.println("files " + files.size() + " lines " + lines);
    }
}
"""
# a quick JVM: no hsperfdata file (a start sweeps /tmp/hsperfdata_<user>/ of dead JVMs' files: the machine's
# difference, not the run's), C1 only, the serial collector
JFAST = ("-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def _lines(n: int, tag: str) -> str:
    return "".join(f"{tag} {(k * 7919) % 10007:05d} row {k}\n" for k in range(n))


def _ro_tmpfs_with(path: Path, files: dict[str, str], ro: bool) -> None:
    """A tmpfs at `path` holding `files`, remounted read-only when `ro`."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(path)], check=True)
    for name, data in files.items():
        write_file(path / name, data)
    if ro:
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


def _env_file(base: Path, **env: str) -> None:
    """BASE/env.sh: the run's environment (sourced under `set -a` by the case's shell line)."""
    write_file(base / "env.sh", "".join(f"{k}='{v}'\n" for k, v in env.items()))


def _layered(cmd: str) -> Callable[[Path], list[str]]:
    """argv(base): `sh -c 'set -a; . BASE/env.sh; exec CMD'` -- one line in every run, the env file varies."""
    return lambda b: ["/bin/sh", "-c", f'set -a; . "$1/env.sh"; {cmd}', "sh", str(b)]


# which good run a fault case's setup is building (0, 1, 2; reset by the bad run): the optional lookups
_GOOD_COUNT: dict[str, int] = {}


def _good_index(base: Path, bad: bool) -> int:
    if bad:
        _GOOD_COUNT[base.name] = 0
        return -1
    i = _GOOD_COUNT.get(base.name, 0)
    _GOOD_COUNT[base.name] = i + 1
    return i % 3


# --- fault cases -------------------------------------------------------------------------------------------------------
MERGE_NAMES = "ash,elm,oak,yew,fir"


def _node_setup(base: Path, bad: bool) -> None:
    i = _good_index(base, bad)
    write_file(base / "merge.js", MERGE_JS)
    for k, name in enumerate(MERGE_NAMES.split(",")):
        write_file(base / "in" / f"{name}.txt", _lines(1500 + 300 * k, name))
    if i in (0, 2):  # good runs 0 and 2: the optional override there, a pool of two threads; else none, four threads
        write_file(base / "in" / "elm.override", "# elm override\n")
    _env_file(base, UV_THREADPOOL_SIZE="2" if i in (0, 2) else "4")
    (base / "out").mkdir()
    if bad:
        write_file(base / "out" / "oak.txt", "STALE FROM AN EARLIER RUN\n")


def _npm_setup(base: Path, bad: bool) -> None:
    i = _good_index(base, bad)
    write_file(base / "proj" / "package.json", '{"name": "t78proj", "version": "1.0.0"}\n')
    (base / "home").mkdir()
    if bad:
        (base / "proj" / ".npmrc").symlink_to(".npmrc")
    elif i != 1:  # the optional project layer: present in good runs 0 and 2, absent in 1
        write_file(base / "proj" / ".npmrc", "registry=http://127.0.0.1:4873/\n")


TALLY_NAMES = "ant,bee,cow,doe,elk"


def _tally_setup(base: Path, bad: bool) -> None:
    import os

    i = _good_index(base, bad)
    write_file(base / "tally.py", TALLY_PY)
    for k, name in enumerate(TALLY_NAMES.split(",")):
        write_file(base / "in" / f"{name}.csv", "".join(f"{name},{j},{j * k}\n" for j in range(400 + 50 * k)))
    write_file(base / "in" / "cow.meta", "w1 w2 w3\n")
    if bad:
        write_file(base / "in" / "bee.meta", "w1 w2\n", 0o600)
    elif i != 1:  # the optional sidecar: present in good runs 0 and 2, absent in 1
        write_file(base / "in" / "bee.meta", "w1 w2\n")
    (base / "out").mkdir()
    os.chown(base / "out", NOBODY_UID, NOBODY_UID)


def _xz_setup(base: Path, bad: bool) -> None:
    for name in ("a", "b", "d"):
        write_file(base / "in" / f"{name}.dat", _lines(3000, name))
    if bad:
        write_file(base / "in" / "logs", "a log file where the directory belongs\n")
    else:
        write_file(base / "in" / "logs" / "c.dat", _lines(3000, "c"))


def _zstd_setup(base: Path, bad: bool) -> None:
    for name in ("a", "b", "d", "e"):
        write_file(base / "in" / f"{name}.dat", _lines(4000, name))
    if bad:
        (base / "in" / "c.dat").symlink_to("c.dat")
    else:
        write_file(base / "in" / "c.dat", _lines(4000, "c"))
    (base / "out").mkdir()


def _zstd_out_setup(base: Path, bad: bool) -> None:
    for name in "abcd":
        write_file(base / "in" / f"{name}.dat", _lines(4000, name))
    (base / "out").mkdir()
    if bad:
        (base / "out" / "c.dat.zst").mkdir()


def _pigz_setup(base: Path, bad: bool) -> None:
    write_file(base / "logs" / "app" / "a.log", _lines(9000, "app"))
    write_file(base / "logs" / "db" / "d.log", _lines(9000, "db"))
    _ro_tmpfs_with(base / "logs" / "web", {"w.log": _lines(9000, "web")}, ro=bad)


def _sort_setup(base: Path, bad: bool) -> None:
    for k in (1, 2, 4):
        write_file(base / "in" / f"p{k}.txt", _lines(5000, f"p{k}"))
    if bad:
        (base / "in" / "p3.txt").symlink_to("p3.txt")
    else:
        write_file(base / "in" / "p3.txt", _lines(5000, "p3"))
    (base / "out").mkdir()


def _teardown(base: Path | None = None) -> None:
    if base is not None and base.exists():
        unmount_under(base)


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=_teardown,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTYEIGHTH: list[Scenario] = [
    _sc("t78_node_pool_write_wx_meets_a_stale_output", "node (fs.promises on libuv's threadpool, writeFile 'wx')",
        _layered(f'exec {NODE} "$1/merge.js" "$1" {MERGE_NAMES}'), _node_setup, OPENS, "EEXIST",
        lambda b: f"{b}/out/oak.txt", comm="node", worker=True,
        description="one output among five already there: a pool thread's O_EXCL create fails EEXIST"),
    _sc("t78_npm_optional_project_npmrc_is_a_symlink_loop", "npm (config get; project .npmrc on the pool)",
        lambda b: [ENV, "-C", f"{b}/proj", f"HOME={b}/home", *NPM_QUIET, NPM, "config", "get", "registry"],
        _npm_setup, OPENS, "ELOOP", lambda b: f"{b}/proj/.npmrc", comm="npm", worker=True, optional=True,
        description="the optional project layer (absent in one good run) is a self-symlink: a pool thread's "
                    "open fails ELOOP"),
    _sc("t78_python_pool_optional_sidecar_unreadable", "python3 (ThreadPoolExecutor tally.py; as nobody)",
        lambda b: [PY3, f"{b}/tally.py", str(b), TALLY_NAMES, "3"], _tally_setup, OPENS, "EACCES",
        lambda b: f"{b}/in/bee.meta", unprivileged=True, comm="python3", worker=True, optional=True,
        description="an optional sidecar (absent in one good run) is root's 0600: a pool thread's open EACCES"),
    _sc("t78_xz_threads_one_input_under_a_regular_file", "xz (-T4 -k, four inputs)",
        lambda b: [XZ, "-T4", "-k", "-f", f"{b}/in/a.dat", f"{b}/in/b.dat", f"{b}/in/logs/c.dat", f"{b}/in/d.dat"],
        _xz_setup, OPENS, "ENOTDIR", lambda b: f"{b}/in/logs/c.dat", comm="xz",
        description="one input's directory is a regular file: its open fails ENOTDIR, the rest compressed"),
    _sc("t78_zstd_threads_one_input_a_symlink_loop", "zstd (-T4 --output-dir-flat, five inputs)",
        lambda b: [ZSTD, "-T4", "-q", "-f", "--output-dir-flat", f"{b}/out",
                   *(f"{b}/in/{n}.dat" for n in "abcde")], _zstd_setup, STATS, "ELOOP",
        lambda b: f"{b}/in/c.dat", comm="zstd",
        description="one input among five is a symlink to itself: its stat fails ELOOP, it is skipped"),
    _sc("t78_zstd_threads_one_output_path_a_directory", "zstd (-T4 --output-dir-flat, an output a directory)",
        lambda b: [ZSTD, "-T4", "-q", "-f", "--output-dir-flat", f"{b}/out",
                   *(f"{b}/in/{n}.dat" for n in "abcd")], _zstd_out_setup, OPENS, "EISDIR",
        lambda b: f"{b}/out/c.dat.zst", comm="zstd",
        description="one output path is a directory: its create fails EISDIR (zstd then crashes, SIGSEGV)"),
    _sc("t78_pigz_threads_output_directory_read_only", "pigz (-p4 -k, three logs in place)",
        lambda b: [PIGZ, "-p4", "-k", f"{b}/logs/app/a.log", f"{b}/logs/web/w.log", f"{b}/logs/db/d.log"],
        _pigz_setup, OPENS, "EROFS", lambda b: f"{b}/logs/web/w.log.gz", comm="pigz",
        description="one log's directory is a read-only tmpfs: the create of its .gz fails EROFS, pigz aborts"),
    _sc("t78_sort_parallel_one_input_a_symlink_loop", "sort (--parallel=4 -o, four inputs)",
        lambda b: [SORT, "--parallel=4", "-o", f"{b}/out/all.txt", *(f"{b}/in/p{k}.txt" for k in range(1, 5))],
        _sort_setup, STATS, "ELOOP", lambda b: f"{b}/in/p3.txt", comm="sort",
        description="one input among four is a symlink to itself: the stat that sizes it fails ELOOP, exit 2"),
]


# --- good runs whose pools take the work in another order --------------------------------------------------------------
POOL = (2, 4, 2, 4, 4)  # a pool size per run: each size in two runs at least
SOLO = (1, 4, 1, 4, 4)  # python's executor: one worker (all the work on one pool thread) or four
A = (True, False, True, False, True)  # an optional file per run: whichever run is held out,
B = (True, True, False, False, True)  # its state (present, or absent: ENOENT) is in another run too


def _rot(run: int, k: int, n: int) -> int:
    """The size rank of input k in run `run`: rotates each run."""
    return (k + run) % n


PAR_NAMES = [f"f{k:02d}" for k in range(12)]


def _node_pool_quiet(base: Path, run: int) -> None:
    write_file(base / "merge.js", MERGE_JS)
    for k, name in enumerate(PAR_NAMES):
        write_file(base / "in" / f"{name}.txt", _lines(300 + 400 * _rot(run, k, 12), name))
    (base / "out").mkdir()
    _env_file(base, UV_THREADPOOL_SIZE=str(POOL[run]))


OPT_NAMES = "ash,elm,oak,yew,fir,ivy"


def _node_optional_quiet(base: Path, run: int) -> None:
    write_file(base / "merge.js", MERGE_JS)
    for name in OPT_NAMES.split(","):
        write_file(base / "in" / f"{name}.txt", _lines(1200, name))
    if A[run]:
        write_file(base / "in" / "elm.override", "# elm override\n")
    if B[run]:
        write_file(base / "in" / "yew.override", "# yew override\n")
    (base / "out").mkdir()


TPE_NAMES = [f"r{k}" for k in range(10)]


def _tally_inputs(base: Path, names: list[str], run: int, rotate: bool) -> None:
    write_file(base / "tally.py", TALLY_PY)
    for k, name in enumerate(names):
        rows = 200 + 150 * (_rot(run, k, len(names)) if rotate else k)
        write_file(base / "in" / f"{name}.csv", "".join(f"{name},{j},{j * 3}\n" for j in range(rows)))
    (base / "out").mkdir()


def _tally_pool_quiet(base: Path, run: int) -> None:
    _tally_inputs(base, TPE_NAMES, run, rotate=True)
    _env_file(base, WORKERS=str(SOLO[run]))


def _tally_optional_quiet(base: Path, run: int) -> None:
    _tally_inputs(base, TALLY_NAMES.split(",") + ["fox"], run, rotate=False)
    if A[run]:
        write_file(base / "in" / "bee.meta", "w1 w2\n")
    if B[run]:
        write_file(base / "in" / "doe.meta", "w1 w2 w3 w4\n")


def _xz_quiet(base: Path, run: int) -> None:
    for k in range(5):
        write_file(base / "in" / f"x{k}.dat", _lines(2000 + 1500 * _rot(run, k, 5), f"x{k}"))
    _env_file(base, THREADS=str(POOL[run]))


def _zstd_quiet(base: Path, run: int) -> None:
    for k in range(5):
        write_file(base / "in" / f"z{k}.dat", _lines(3000 + 3000 * _rot(run, k, 5), f"z{k}"))
    (base / "out").mkdir()


def _pigz_quiet(base: Path, run: int) -> None:
    for k in range(4):
        write_file(base / "in" / f"g{k}.log", _lines(4000 + 3000 * _rot(run, k, 4), f"g{k}"))
    _env_file(base, THREADS=str(POOL[run]))


def _java_quiet(base: Path, run: int) -> None:
    write_file(base / "Lister.java", LISTER_JAVA)
    for k in range(12):
        write_file(base / "in" / f"j{k:02d}.txt", _lines(200 + 300 * _rot(run, k, 12), f"j{k}"))
    _env_file(base, CPUS=str(POOL[run]))


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYEIGHTH: list[NoAnomalyCase] = [
    _noise("t78_node_threadpool_two_or_four_threads_twelve_files",
           _layered(f'exec {NODE} "$1/merge.js" "$1" {",".join(PAR_NAMES)}'), _node_pool_quiet,
           "node fs.promises over twelve inputs of rotating sizes, UV_THREADPOOL_SIZE 2 or 4"),
    _noise("t78_node_optional_overrides_present_in_some_runs",
           lambda b: [NODE, f"{b}/merge.js", str(b), OPT_NAMES], _node_optional_quiet,
           "node merge.js: elm.override and yew.override each present in some runs, absent (ENOENT) in others"),
    _noise("t78_python_executor_one_or_four_workers_rotating_sizes",
           _layered(f'exec {PY3} "$1/tally.py" "$1" {",".join(TPE_NAMES)} "$WORKERS"'), _tally_pool_quiet,
           "python ThreadPoolExecutor over ten inputs of rotating sizes, 1 or 4 workers"),
    _noise("t78_python_optional_meta_sidecars_present_in_some_runs",
           lambda b: [PY3, f"{b}/tally.py", str(b), TALLY_NAMES + ",fox", "3"], _tally_optional_quiet,
           "python tally.py: bee.meta and doe.meta each present in some runs, absent (ENOENT) in others"),
    _noise("t78_xz_two_or_four_threads_rotating_sizes",
           _layered(f'exec {XZ} -T"$THREADS" -1 --block-size=65536 -k -f "$1"/in/x0.dat "$1"/in/x1.dat '
                    '"$1"/in/x2.dat "$1"/in/x3.dat "$1"/in/x4.dat'), _xz_quiet,
           "xz -T2 or -T4 in 64 KiB blocks over five inputs of rotating sizes"),
    _noise("t78_zstd_four_workers_rotating_sizes",
           lambda b: [ZSTD, "-T4", "-q", "-f", "--output-dir-flat", f"{b}/out", *(f"{b}/in/z{k}.dat" for k in range(5))],
           _zstd_quiet, "zstd -T4 over five inputs of rotating sizes"),
    _noise("t78_pigz_two_or_four_threads_rotating_sizes",
           _layered(f'exec {PIGZ} -p"$THREADS" -k "$1"/in/g0.log "$1"/in/g1.log "$1"/in/g2.log "$1"/in/g3.log'),
           _pigz_quiet, "pigz -p2 or -p4 over four inputs of rotating sizes"),
    _noise("t78_java_parallel_stream_two_or_four_cpus_rotating_sizes",
           _layered(f'exec {JAVA} {" ".join(JFAST)} -XX:ActiveProcessorCount="$CPUS" "$1/Lister.java" "$1"'),
           _java_quiet, "java parallelStream over twelve listed inputs of rotating sizes, 2 or 4 processors"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the tmpfs goes with the case's directory (the harness unmounts it before it removes
    it); no program here leaves a daemon (strace: node, npm, python, xz, zstd, pigz, sort exit with their threads)."""
    _GOOD_COUNT.clear()
