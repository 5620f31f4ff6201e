"""A seventy-fifth set of real programs: **many threads of one runtime** -- thread pools in managed
and compiled runtimes, whose threads the program neither names nor orders: the JVM (OpenJDK 17, an
``ExecutorService`` and a ``ForkJoinPool``, ``java File.java`` source launch), node 20
(``worker_threads``, and libuv's threadpool doing the fs calls of ``fs.promises``), Rust (a small
program of ``std::thread`` workers pulling names from a shared queue, compiled with rustc at test
time, no crates) and python 3.11 (``concurrent.futures.ThreadPoolExecutor``).

What docs/diff-json.md promises for them: the named event's ``process`` is BAD's *thread* (its
``tid``, its ``comm``) and its ``role`` -- the fork-tree path of exec'd names, ``~name`` for a
thread; an anomaly is the call, errno and path that failed; a region of known events in another
order in a thread, or in all of BAD's threads of a role together, is a reordering ("a thread
pool's share of work"), never an anomaly; successful timing calls (futex, mmap, a thread's own
exit) are noise.

Fault cases (``REAL_SEVENTYFIFTH``): three good runs and the bad run; ``extra`` holds what the case
checks beyond the bifurcation (``comm``: the comm of the thread strace shows failing; ``worker``:
that thread is not the process's main thread -- tid != pid, a ``~`` thread role; ``once``: (probe,
errno, path glob) named by exactly one anomaly, however many workers met it). What ``strace -f``
showed each bad run doing, written down before the tool was run:

- ``java Pool.java BASE alpha,beta,gamma 3`` (a fixed pool of three workers, one task each; the
  pool starts a thread per task while under its core size, so beta's task is the second thread's,
  comm ``pool-1-thread-2``), in/beta.txt a directory: that thread's ``openat(AT_FDCWD,
  ".../in/beta.txt", O_RDONLY) = 4`` (a directory opens), ``newfstatat(4, "", {S_IFDIR..}) = 0``,
  ``read(4, ..., 4096) = -1 EISDIR``; the main thread prints alpha's and gamma's counts and
  "worker failed: java.io.IOException: Is a directory", exit 1;
- the same program, out/beta a read-only tmpfs: pool-1-thread-2 reads in/beta.txt, then
  ``openat(AT_FDCWD, ".../out/beta/count.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EROFS``,
  "worker failed: java.nio.file.FileSystemException: ...: Read-only file system", exit 1;
- ``node pool.js BASE red,green,blue`` (a ``Worker`` per name; worker threads' comm is ``node``,
  as every thread of node's), in/green.txt a symlink to itself: green's worker thread
  ``openat(AT_FDCWD, ".../in/green.txt", O_RDONLY|O_CLOEXEC) = -1 ELOOP``, its 'error' event on the
  main thread writes "worker green: ELOOP: too many symbolic links encountered", exit 1;
- ``trap "" XFSZ; ulimit -f 256; exec node upper.js BASE oak,elm,ash,yew`` (dash: 256 blocks of 512
  bytes, 128 KiB; ``fs.promises`` readFile/writeFile of each, run on libuv's threadpool threads),
  in/elm.txt 589 kB in the bad run (56 kB in the good ones): a pool thread's
  ``openat(.., ".../out/elm.txt", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 21``, a pool thread's
  first write of it ``= 131072`` (the limit: a short write), the next write of the rest ``= -1
  EFBIG`` (made again on another pool thread, EFBIG again), "EFBIG: file too large, write" from the
  main thread, exit 1 (strace of a 409 kB input: ``write(21, ..., 408894) = 131072``, ``write(21,
  ..., 277822) = -1 EFBIG``);
- ``t75pool BASE kilo,lima,mike,nova 4`` (four unnamed ``std::thread`` workers, comm ``t75pool``,
  each popping names off a shared queue until it is empty; per name: its input read, then the
  shared etc/lookup.tbl, then out/<name>.count written) as nobody, in/mike.txt root's 0600: the
  worker that took mike ``openat(AT_FDCWD, ".../in/mike.txt", O_RDONLY|O_CLOEXEC) = -1 EACCES``;
  the main thread joins all four and writes "t75pool: .../in/mike.txt: Permission denied (os error
  13)", exit 1;
- the same program over 16 names (call00 to call15), the shared etc/lookup.tbl missing: each name's
  input read, then ``openat(AT_FDCWD, ".../etc/lookup.tbl", O_RDONLY|O_CLOEXEC) = -1 ENOENT`` --
  16 failures over the worker threads (5, 4, 4 and 3 under strace; the first thread, started
  first, takes more where thread starts are slower), 16 messages, exit 1: one fault at one shared
  path, to be named once;
- ``python3 tpe.py BASE ant,bee,cow 3`` (``ThreadPoolExecutor(max_workers=3)``), in/bee.json
  missing: a pool thread's ``openat(AT_FDCWD, ".../in/bee.json", O_RDONLY|O_CLOEXEC) = -1 ENOENT``,
  "worker: [Errno 2] No such file or directory: ..." from the main thread, exit 1 (each worker then
  appends a line to the shared log/journal.log: the other two do);
- the same program over 24 inputs (job00 to job23, three pool threads), log/ a read-only tmpfs: each
  task reads its input, writes its out/<name>.sum, then ``openat(AT_FDCWD, ".../log/journal.log",
  O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0666) = -1 EROFS`` -- 24 failures over the three threads,
  each thread failing there several times (with six inputs strace showed two in each thread);
  24 "worker: [Errno 30] Read-only file system: ..." lines from the main thread, exit 1: one fault
  at one shared path, to be named once.

Noise cases (``QUIET_SEVENTYFIFTH``): five good runs each, every run diffed against the other four;
same output and exit status every run. What varies between the runs:

- the Java fixed pool of three workers over nine inputs whose sizes rotate each run: which thread
  takes which input after its first, the order the counts are written;
- a Java ``parallelStream`` (ForkJoinPool common pool: work stealing, the main thread helping) over
  eight inputs, default G1 and tiered compilation, ``-XX:ActiveProcessorCount=4 -Xms8m -Xmx64m``:
  which worker counts which file, and the threads the JVM adds as it needs them -- strace of five
  runs: three ForkJoinPool.commonPool workers and four GC Thread#i every run, but 1, 2 or 3 ``G1
  Refine#i`` and 2 or 3 ``C2 CompilerThread`` (25 to 27 clone3 calls);
- node's ``Worker`` per input over five inputs of other sizes each run: the order the workers
  read, write and exit in;
- node's libuv threadpool (four threads) reading and writing eight files at once, sizes rotating:
  which pool thread does which fs call;
- t75pool with 2, 3, 4, 2 or 3 threads (a file says how many) over six inputs: how many threads
  the pool starts, and each one's share;
- t75pool with four threads over eight inputs of sizes rotating each run: which thread takes which
  name off the queue (one may take none), the order they end in;
- python's ``ThreadPoolExecutor(max_workers=4)`` over six inputs: the executor starts a thread only
  when no idle one is there, so 1 to 4 threads, and which counts which input varies.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

from .files import write_file
from .harness import ROOT, NoAnomalyCase, Scenario, sh_argv, unmount_under

JAVA = "/usr/bin/java"
NODE = "/usr/bin/node"
RUSTC = "/root/.cargo/bin/rustc"
PY3 = "/usr/bin/python3"
# a quick JVM: no hsperfdata file (every HotSpot start sweeps /tmp/hsperfdata_<user>/ of dead JVMs'
# files, a difference between runs that is the machine's), C1 only, the serial collector
JFAST = ("-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

OPENS = frozenset({"openat", "open", "creat"})
READS = frozenset({"read", "pread64", "readv"})
WRITES = frozenset({"write", "pwrite64", "writev", "pwritev"})
# the work-stealing case: the JVM sized for four CPUs (a common pool of three workers, four GC workers), a small heap
# that grows: G1's refinement threads and C2's compiler threads added as the run needs them
JSTEAL = ("-XX:-UsePerfData", "-XX:ActiveProcessorCount=4", "-Xms8m", "-Xmx64m")
RUNS = 5  # noise cases: each run against the other four


def _values(n: int, step: int) -> str:
    return json.dumps({"values": [k * step for k in range(n)]}) + "\n"


def _lines(n: int, tag: str) -> str:
    return "".join(f"{tag} {(k * 7919) % 1000:04d} line {k}\n" for k in range(n))


# --- the programs -------------------------------------------------------------------------------------------------------
POOL_JAVA = """\
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.*;

public class Pool {
    public static void main(String[] args) throws Exception {
        Path base = Paths.get(args[0]);
        String[] names = args[1].split(",");
        ExecutorService pool = Executors.newFixedThreadPool(Integer.parseInt(args[2]));
        List<Future<String>> done = new ArrayList<>();
        for (String name : names) {
            done.add(pool.submit(() -> {
                byte[] data = Files.readAllBytes(base.resolve("in").resolve(name + ".txt"));
                int lines = 0;
                for (byte c : data) if (c == '\\n') lines++;
                Path out = base.resolve("out").resolve(name).resolve("count.txt");
                Files.write(out, (name + " " + lines + "\\n").getBytes());
                return name + " " + lines;
            }));
        }
        int rc = 0;
        for (Future<String> f : done) {
            try {
                System.out.println(f.get());
            } catch (ExecutionException e) {
                System.err.println("worker failed: " + e.getCause());
                rc = 1;
            }
        }
        pool.shutdown();
        System.exit(rc);
    }
}
"""

STEAL_JAVA = """\
import java.nio.file.*;
import java.util.*;
import java.util.stream.*;

public class Steal {
    public static void main(String[] args) throws Exception {
        Path base = Paths.get(args[0]);
        List<Path> files;
        try (Stream<Path> s = Files.list(base.resolve("in"))) {
            files = s.sorted().collect(Collectors.toList());
        }
        Map<String, Long> counts = files.parallelStream().collect(Collectors.toMap(
            p -> p.getFileName().toString(),
            p -> {
                try {
                    return Arrays.stream(Files.readString(p).split("\\n"))
                        .map(l -> l.toUpperCase() + l.length()).distinct().count();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }));
        new TreeMap<>(counts).forEach((k, v) -> System.out.println(k + " " + v));
    }
}
"""

WORKERS_JS = """\
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');
const fs = require('fs');
if (isMainThread) {
  const [base, list] = process.argv.slice(2);
  let rc = 0;
  let left = 0;
  for (const name of list.split(',')) {
    left++;
    const w = new Worker(__filename, { workerData: { base, name } });
    w.on('message', (m) => console.log(m));
    w.on('error', (e) => { console.error(`worker ${name}: ${e.message}`); rc = 1; });
    w.on('exit', () => { if (--left === 0) process.exitCode = rc; });
  }
} else {
  const { base, name } = workerData;
  const text = fs.readFileSync(`${base}/in/${name}.txt`, 'utf8');
  const lines = text.split('\\n').length - 1;
  fs.writeFileSync(`${base}/out/${name}.count`, `${lines}\\n`);
  parentPort.postMessage(`${name} ${lines}`);
}
"""

UPPER_JS = """\
const fs = require('fs');
const [base, list] = process.argv.slice(2);
Promise.all(list.split(',').map(async (name) => {
  const data = await fs.promises.readFile(`${base}/in/${name}.txt`, 'utf8');
  await fs.promises.writeFile(`${base}/out/${name}.txt`, data.toUpperCase());
  return name;
})).then((done) => console.log(done.join(' ')), (e) => { console.error(e.message); process.exitCode = 1; });
"""

POOL_RS = """\
use std::fs;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread;

fn work(base: &str, name: &str) -> Result<String, String> {
    let path = format!("{base}/in/{name}.txt");
    let mut text = String::new();
    fs::File::open(&path).and_then(|mut f| f.read_to_string(&mut text)).map_err(|e| format!("{path}: {e}"))?;
    let tbl = format!("{base}/etc/lookup.tbl");
    let table = fs::read_to_string(&tbl).map_err(|e| format!("{tbl}: {e}"))?;
    let lines = text.lines().filter(|l| !table.contains(l.trim())).count();
    let out = format!("{base}/out/{name}.count");
    fs::write(&out, format!("{lines}\\n")).map_err(|e| format!("{out}: {e}"))?;
    Ok(format!("{name} {lines}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base = args[1].clone();
    let names: Vec<String> = args[2].split(',').rev().map(String::from).collect();
    let threads: usize = args[3].trim().parse().unwrap();
    let queue = Arc::new(Mutex::new(names));
    let mut handles = Vec::new();
    for _ in 0..threads {
        let (queue, base) = (Arc::clone(&queue), base.clone());
        handles.push(thread::spawn(move || {
            let mut results = Vec::new();
            loop {
                let next = queue.lock().unwrap().pop();
                match next {
                    Some(name) => results.push(work(&base, &name)),
                    None => return results,
                }
            }
        }));
    }
    let mut all: Vec<Result<String, String>> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    all.sort();
    let mut rc = 0;
    for r in all {
        match r {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("t75pool: {e}");
                rc = 1;
            }
        }
    }
    std::process::exit(rc);
}
"""

TPE_PY = r"""
import concurrent.futures as cf, json, sys
b = sys.argv[1]
names = sys.argv[2].split(",")
def work(name):
    with open(f"{b}/in/{name}.json") as f:
        doc = json.load(f)
    total = sum(doc["values"])
    with open(f"{b}/out/{name}.sum", "w") as f:
        f.write(f"{total}\n")
    with open(f"{b}/log/journal.log", "a") as j:
        j.write(f"{name} {total}\n")
    return name, total
rc = 0
with cf.ThreadPoolExecutor(max_workers=int(sys.argv[3])) as ex:
    for fut in [ex.submit(work, n) for n in names]:
        try:
            print(*fut.result())
        except OSError as e:
            print(f"worker: {e}", file=sys.stderr)
            rc = 1
sys.exit(rc)
"""

BUILD = ROOT / "_t75_build"


@functools.cache
def rust_pool() -> Path:
    """t75pool, compiled once per process from POOL_RS with rustc (std only): a world-readable
    binary for the cases run as nobody."""
    if BUILD.exists():
        shutil.rmtree(BUILD)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    BUILD.mkdir(mode=0o755)
    BUILD.chmod(0o755)
    src = write_file(BUILD / "pool.rs", POOL_RS)
    subprocess.run([RUSTC, "--edition", "2021", "-O", "-C", "strip=symbols", "-o", str(BUILD / "t75pool"), str(src)],
                   check=True, capture_output=True, cwd=BUILD, timeout=300)
    (BUILD / "t75pool").chmod(0o755)
    return BUILD / "t75pool"


def _java_argv(src: str, *args: str, jvm: tuple[str, ...] = JFAST):
    return lambda b: [JAVA, *jvm, f"{b}/{src}", str(b), *args]


def _rust_argv(names: str, threads: str):
    return lambda b: [str(rust_pool()), str(b), names, threads]


def _ro_tmpfs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0755", "tmpfs", str(path)], check=True)


# --- fault cases -------------------------------------------------------------------------------------------------------
GREEK = ("alpha", "beta", "gamma")
COLOURS = ("red", "green", "blue")
TREES = ("oak", "elm", "ash", "yew")
CALLS = ("kilo", "lima", "mike", "nova")
CALLS16 = tuple(f"call{k:02d}" for k in range(16))  # 16 names for four threads: each thread takes several
BEASTS = ("ant", "bee", "cow")
HERD = tuple(f"job{k:02d}" for k in range(24))  # 24 tasks for three threads: each thread takes several

UPPER_ULIMIT_SH = f'trap "" XFSZ; ulimit -f 256; exec {NODE} "$1/upper.js" "$1" {",".join(TREES)}'


def _pool_java_setup(fault: str):
    def setup(base: Path, bad: bool) -> None:
        write_file(base / "Pool.java", POOL_JAVA)
        for i, n in enumerate(GREEK):
            (base / "out" / n).mkdir(parents=True)
            if bad and n == "beta" and fault == "in-dir":
                (base / "in" / f"{n}.txt").mkdir(parents=True)
                continue
            write_file(base / "in" / f"{n}.txt", _lines(40 + 15 * i, n))
        if bad and fault == "out-ro":
            _ro_tmpfs(base / "out" / "beta")
    return setup


def _workers_js_setup(base: Path, bad: bool) -> None:
    write_file(base / "pool.js", WORKERS_JS)
    for i, n in enumerate(COLOURS):
        if bad and n == "green":  # a symlink to itself: the open loops
            (base / "in").mkdir(parents=True, exist_ok=True)
            (base / "in" / "green.txt").symlink_to("green.txt")
            continue
        write_file(base / "in" / f"{n}.txt", _lines(40 + 10 * i, n))
    (base / "out").mkdir()


def _upper_setup(base: Path, bad: bool) -> None:
    write_file(base / "upper.js", UPPER_JS)
    for n in TREES:
        write_file(base / "in" / f"{n}.txt", _lines(30000 if bad and n == "elm" else 3000, n))
    (base / "out").mkdir()


def _rust_setup(fault: str, names: tuple[str, ...]):
    def setup(base: Path, bad: bool) -> None:
        rust_pool()
        if not (bad and fault == "table-missing"):
            write_file(base / "etc" / "lookup.tbl", "kilo 0000 line 0\nnova 0000 line 0\n")
        for i, n in enumerate(names):  # the 16 names' inputs large enough that every thread gets some
            write_file(base / "in" / f"{n}.txt", _lines(30 + 10 * i if len(names) < 8 else 20000, n),
                       0o600 if bad and fault == "in-unreadable" and n == "mike" else 0o644)
        (base / "out").mkdir()
        (base / "out").chmod(0o777)
    return setup


def _tpe_setup(fault: str, names: tuple[str, ...]):
    def setup(base: Path, bad: bool) -> None:
        for i, n in enumerate(names):
            if not (bad and fault == "in-missing" and n == "bee"):
                write_file(base / "in" / f"{n}.json", _values(50, i + 1))
        (base / "out").mkdir()
        if bad and fault == "log-ro":
            _ro_tmpfs(base / "log")
        else:
            (base / "log").mkdir()
    return setup


def _teardown(base: Path | None = None) -> None:
    if base is not None and base.exists():
        unmount_under(base)


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=_teardown,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTYFIFTH: list[Scenario] = [
    _sc("t75_java_executor_one_workers_input_is_a_directory", "java (ExecutorService of three workers, source launch)",
        _java_argv("Pool.java", ",".join(GREEK), "3"), _pool_java_setup("in-dir"), READS, "EISDIR",
        lambda b: f"{b}/in/beta.txt", comm="pool-1-thread-2", worker=True,
        once=("read", "EISDIR", "*/in/beta.txt"),
        description="one pool thread's input is a directory: it opens, the read fails EISDIR in that thread"),
    _sc("t75_java_executor_one_workers_output_dir_readonly", "java (ExecutorService of three workers, source launch)",
        _java_argv("Pool.java", ",".join(GREEK), "3"), _pool_java_setup("out-ro"), OPENS, "EROFS",
        lambda b: f"{b}/out/beta/count.txt", comm="pool-1-thread-2", worker=True,
        once=("openat", "EROFS", "*/out/beta/count.txt"),
        description="one pool thread's output directory is a read-only tmpfs: its create refused"),
    _sc("t75_node_worker_thread_input_symlink_loop", "node (a worker_threads Worker per input)",
        lambda b: [NODE, f"{b}/pool.js", str(b), ",".join(COLOURS)], _workers_js_setup, OPENS, "ELOOP",
        lambda b: f"{b}/in/green.txt", comm="node", worker=True,
        description="one Worker's input is a symlink to itself: its open fails ELOOP in that worker thread"),
    _sc("t75_node_libuv_pool_write_past_ulimit_f", "node (fs.promises on libuv's threadpool, under ulimit -f)",
        sh_argv(UPPER_ULIMIT_SH), _upper_setup, WRITES, "EFBIG", lambda b: f"{b}/out/elm.txt", comm="node",
        worker=True,
        description="one output grows past RLIMIT_FSIZE: a libuv pool thread's write fails EFBIG (SIGXFSZ ignored)"),
    _sc("t75_rust_std_threads_one_input_unreadable", "t75pool (Rust std::thread workers; as nobody)",
        _rust_argv(",".join(CALLS), "4"), _rust_setup("in-unreadable", CALLS), OPENS, "EACCES",
        lambda b: f"{b}/in/mike.txt", unprivileged=True, comm="t75pool", worker=True,
        once=("openat", "EACCES", "*/in/mike.txt"),
        description="the worker thread that takes mike off the queue cannot read it: named in that thread"),
    _sc("t75_rust_std_threads_shared_table_missing", "t75pool (Rust std::thread workers)",
        _rust_argv(",".join(CALLS16), "4"), _rust_setup("table-missing", CALLS16), OPENS, "ENOENT",
        lambda b: f"{b}/etc/lookup.tbl", comm="t75pool", worker=True,
        once=("openat", "ENOENT", "*/etc/lookup.tbl"),
        description="every worker's open of the one shared lookup table fails ENOENT: one fault, named once"),
    _sc("t75_python_thread_pool_one_input_missing", "python3 (ThreadPoolExecutor of three workers)",
        lambda b: [PY3, "-S", "-c", TPE_PY, str(b), ",".join(BEASTS), "3"], _tpe_setup("in-missing", BEASTS), OPENS,
        "ENOENT", lambda b: f"{b}/in/bee.json", comm="python3", worker=True,
        once=("openat", "ENOENT", "*/in/bee.json"),
        description="one pool thread's input is missing: its open fails ENOENT in that thread"),
    _sc("t75_python_thread_pool_shared_journal_on_readonly_fs", "python3 (ThreadPoolExecutor of three workers)",
        lambda b: [PY3, "-S", "-c", TPE_PY, str(b), ",".join(HERD), "3"], _tpe_setup("log-ro", HERD), OPENS,
        "EROFS", lambda b: f"{b}/log/journal.log", comm="python3", worker=True,
        once=("openat", "EROFS", "*/log/journal.log"),
        description="24 tasks on three pool threads append to one journal on a read-only tmpfs: named once"),
]


# --- good runs whose pools schedule differently ------------------------------------------------------------------------
NINE = ("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9")
SIZES = (40, 3000, 200, 9000, 700, 60, 5000, 1200, 300)


def _rot(seq: tuple, run: int) -> tuple:
    k = (run * 3) % len(seq)
    return seq[k:] + seq[:k]


def _pool_java_quiet(base: Path, run: int) -> None:
    write_file(base / "Pool.java", POOL_JAVA)
    for n, size in zip(NINE, _rot(SIZES, run), strict=True):
        write_file(base / "in" / f"{n}.txt", _lines(size, n))
        (base / "out" / n).mkdir(parents=True)


def _steal_quiet(base: Path, run: int) -> None:
    write_file(base / "Steal.java", STEAL_JAVA)
    for n, size in zip(NINE[:8], _rot(SIZES[:8], run), strict=True):
        write_file(base / "in" / f"{n}.txt", _lines(size * 3 + 3000, n))


def _workers_js_quiet(base: Path, run: int) -> None:
    write_file(base / "pool.js", WORKERS_JS)
    for n, size in zip(NINE[:5], _rot((30, 20000, 400, 8000, 2000), run), strict=True):
        write_file(base / "in" / f"{n}.txt", _lines(size, n))
    (base / "out").mkdir()


def _upper_quiet(base: Path, run: int) -> None:
    write_file(base / "upper.js", UPPER_JS)
    for n, size in zip(NINE[:8], _rot(SIZES[:8], run), strict=True):
        write_file(base / "in" / f"{n}.txt", _lines(size, n))
    (base / "out").mkdir()


THREADS = (2, 3, 4, 2, 3)


def _rust_quiet(count: int, threads: tuple[int, ...] | None):
    def setup(base: Path, run: int) -> None:
        rust_pool()
        write_file(base / "etc" / "lookup.tbl", "n1 0000 line 0\n")
        for n, size in zip(NINE[:count], _rot(SIZES[:count], run), strict=True):
            write_file(base / "in" / f"{n}.txt", _lines(size, n))
        (base / "out").mkdir()
        write_file(base / "threads", f"{threads[run % len(threads)] if threads else 4}\n")
    return setup


RUST_THREADS_SH = 'exec "$2" "$1" "$3" "$(cat "$1/threads")"'


def _tpe_quiet(base: Path, run: int) -> None:
    for i, n in enumerate(NINE[:6]):
        write_file(base / "in" / f"{n}.json", _values(200, i + 1))
    (base / "out").mkdir()
    (base / "log").mkdir()


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYFIFTH: list[NoAnomalyCase] = [
    _noise("t75_java_fixed_pool_threads_take_other_inputs", _java_argv("Pool.java", ",".join(NINE), "3"),
           _pool_java_quiet, "a fixed pool of three over nine inputs of rotating sizes: which thread takes which"),
    _noise("t75_java_forkjoin_work_stealing_g1_jit_threads", _java_argv("Steal.java", jvm=JSTEAL),
           _steal_quiet, "parallelStream on the common pool (work stealing), G1 and C2 adding threads as needed"),
    _noise("t75_node_worker_threads_end_in_any_order", lambda b: [NODE, f"{b}/pool.js", str(b), ",".join(NINE[:5])],
           _workers_js_quiet, "a Worker per input, inputs of other sizes each run: they read, write, exit in any order"),
    _noise("t75_node_libuv_threadpool_takes_fs_calls_in_any_order",
           lambda b: [NODE, f"{b}/upper.js", str(b), ",".join(NINE[:8])], _upper_quiet,
           "fs.promises over eight files at once: which of libuv's four pool threads makes which call"),
    _noise("t75_rust_pool_starts_another_number_of_threads",
           lambda b: ["/bin/sh", "-c", RUST_THREADS_SH, "sh", str(b), str(rust_pool()), ",".join(NINE[:6])],
           _rust_quiet(6, THREADS), "t75pool with 2, 3 or 4 threads (a file says): how many, and each one's share"),
    _noise("t75_rust_threads_pull_other_names_off_the_queue", _rust_argv(",".join(NINE[:8]), "4"),
           _rust_quiet(8, None), "four threads over eight inputs of rotating sizes: which takes which, one maybe none"),
    _noise("t75_python_thread_pool_starts_threads_lazily",
           lambda b: [PY3, "-S", "-c", TPE_PY, str(b), ",".join(NINE[:6]), "4"], _tpe_quiet,
           "ThreadPoolExecutor(4) over six inputs: 1 to 4 threads started, which counts which varies"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the read-only mounts go with the case's directory (the harness unmounts it before it
    removes it); the compiled program stays for the session (under the harness's ROOT, removed at exit)."""
