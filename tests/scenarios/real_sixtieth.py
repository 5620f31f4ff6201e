"""A sixtieth set of real programs, **quiet-heavy**: the false-alarm side. Most cases are good runs
that legitimately differ a lot -- a cold or a warm cache, workers that interleave differently,
a poll that takes another number of attempts, other random temp names, other output sizes, a
directory listed in another order -- and the diff must say "no anomaly". A few real faults are
hidden in that kind of noise (their good runs differ the same way):

- ``gcc -c`` with ``TMPDIR=scratch/tmp`` where ``scratch`` is a stray regular file: libiberty's
  access ENOTDIR, gcc falls back to /tmp (the good runs' temp names are random: cc*.s);
- ``ldconfig -C cache/ld.so.cache`` (in a mount namespace whose /var/cache/ldconfig is a tmpfs,
  nothing of the host's changed) where the image lacks ``cache/``: openat ENOENT of
  ``ld.so.cache~``, "Can't create temporary cache file", exit 1 (the good runs' cache is there
  or not, their library count differs);
- ``fc-list`` with a fonts.conf whose ``<cachedir>`` lies under a regular file: the cache's
  openat ENOTDIR, the fonts rescanned every run (the good runs' cache is cold or warm);
- ``make -j2`` publishing into ``out/``, bind-mounted with the options of the job's
  ``publish.opts`` ("ro" on the bad day): the recipe's openat EROFS (two recipes in parallel,
  interleaving differently every run).

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good
runs never had. Every run of a case has the same command line.

Noise cases (``QUIET_SIXTIETH``): fc-list with a cold or warm cache, ldconfig with its cache
present or not, gcc's random temp names, ``xz -dc -T2`` of a multi-block archive of another
size, sh's background gzip jobs, a poll for a ready file that appears after another delay, ``cp
-r`` of a tree created in another order, update-mime-database with its outputs there or not,
python asyncio's concurrent subprocesses, sqlite3 loading another number of rows, python3 with its
PYTHONPYCACHEPREFIX bytecode written or already there.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

from .files import token, write_file
from .harness import PY, NoAnomalyCase, RunTurns, Scenario, argv_in, sh_argv

OPEN = frozenset({"openat", "open"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})

LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
FONTS = ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

_TURNS = RunTurns()  # which good run of each case is being set up


# --- gcc -c with TMPDIR: random cc*.s temp names; the bad day's scratch is a regular file ----------------------------
GCC_SH = 'TMPDIR="$1/scratch/tmp" gcc -c -O1 -o "$1/obj/job.o" "$1/src/job.c"'


def _gcc_tree(base: Path, *, funcs: int = 3, stray: bool = False) -> None:
    src = "".join(f"int f{i}_{token(2)}(int x) {{ return x * {i + 2} + {random.randrange(100)}; }}\n"
                  for i in range(funcs))
    write_file(base / "src" / "job.c", src)
    (base / "obj").mkdir()
    if stray:  # a log written to "scratch" by a mistyped redirect: the directory was never made
        write_file(base / "scratch", "scratch log\n")
    else:
        (base / "scratch" / "tmp").mkdir(parents=True)


def gcc_build(base: Path, bad: bool) -> None:
    _gcc_tree(base, funcs=_TURNS.pick(base, bad, [3, 200, 20], 3), stray=bad)


# --- ldconfig -C into the job's cache directory (private /var/cache/ldconfig) ------------------------------------------
LDCONFIG_SH = ('mount -t tmpfs -o size=4m tracebase-t60 /var/cache/ldconfig && '
               'exec /usr/sbin/ldconfig -C "$1/cache/ld.so.cache" -f "$1/etc/ld.so.conf"')
LDCONFIG_ARGV = argv_in(["/usr/bin/unshare", "-m", "/bin/sh", "-c", LDCONFIG_SH, "sh", "{b}"])


def _ldconfig_tree(base: Path, *, libs: int = 2, warm: bool = False, cache_dir: bool = True) -> None:
    write_file(base / "etc" / "ld.so.conf", f"{base}/lib\n")
    zlib = (LIBDIR / "libz.so.1").read_bytes()
    for i in range(libs):  # the job's libraries (any shared object with a soname will do)
        write_file(base / "lib" / f"libjob{i}.so.1", zlib, 0o755)
    if not cache_dir:  # the image was built without the cache directory
        return
    (base / "cache").mkdir()
    if warm:  # the cache of an earlier run is there (made the same way, outside the recording)
        subprocess.run(LDCONFIG_ARGV(base), check=True, capture_output=True, env=ENV)


def ldconfig_build(base: Path, bad: bool) -> None:
    warm = _TURNS.pick(base, bad, [False, True, False], False)
    _ldconfig_tree(base, warm=warm, cache_dir=not bad)


# --- fc-list with the job's fonts.conf: cold or warm cache; the bad day's cachedir is under a file ------------------
FC_SH = 'FONTCONFIG_FILE="$1/fc/fonts.conf" fc-list : family style > "$1/out.txt"'


def _fc_tree(base: Path, *, fonts: int = 2, warm: bool = False, stray: bool = False) -> None:
    write_file(base / "fc" / "fonts.conf",
               '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
               f'  <dir>{base}/fc/fonts</dir>\n  <cachedir>{base}/fc/var/cache</cachedir>\n</fontconfig>\n')
    for name in FONTS[:fonts]:
        write_file(base / "fc" / "fonts" / name, (DEJAVU / name).read_bytes())
    if stray:  # "var" is a file: a log a job wrote where the image should have made a directory
        write_file(base / "fc" / "var", "fontconfig var\n")
        return
    (base / "fc" / "var").mkdir()
    if warm:  # an earlier run's cache (written by fc-list itself, outside the recording)
        subprocess.run(["fc-list"], check=True, capture_output=True,
                       env={**ENV, "FONTCONFIG_FILE": f"{base}/fc/fonts.conf"})


def fc_build(base: Path, bad: bool) -> None:
    warm = _TURNS.pick(base, bad, [False, True, False], False)
    _fc_tree(base, warm=warm, stray=bad)


# --- make -j2 publishing into a bind mount of out/ with the job's options ----------------------------------------------
MAKEFILE = ("SRC := $(wildcard src/*.in)\n"
            "all: $(SRC:src/%.in=out/%.txt)\n"
            "out/%.txt: src/%.in\n"
            "\ttr a-z A-Z < $< > $@\n")
MAKE_SH = ('mount --bind -o "$(cat "$1/publish.opts")" "$1/out" "$1/out" && exec make -s -j2 -C "$1"')
MAKE_ARGV = argv_in(["/usr/bin/unshare", "-m", "/bin/sh", "-c", MAKE_SH, "sh", "{b}"])


def make_build(base: Path, bad: bool) -> None:
    write_file(base / "Makefile", MAKEFILE)
    sizes = _TURNS.pick(base, bad, [[50, 5000, 10, 900], [3000, 4, 70, 20000], [800, 800, 8000, 1]],
                        [50, 5000, 10, 900])
    for i, n in enumerate(sizes):
        write_file(base / "src" / f"part{i}.in", "".join(f"{token(3)} row {j}\n" for j in range(n)))
    (base / "out").mkdir()
    # the bad day's publish volume was configured read-only
    write_file(base / "publish.opts", "ro\n" if bad else "rw\n")


def _sc(name, program, argv, build, probe, errno, path, *, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, description=description)


REAL_SIXTIETH: list[Scenario] = [
    _sc("t60_gcc_tmpdir_under_a_stray_file", "gcc -c with TMPDIR=scratch/tmp",
        sh_argv(GCC_SH), gcc_build, ACCESS, "ENOTDIR", lambda b: f"{b}/scratch/tmp",
        description="scratch is a regular file: libiberty's access ENOTDIR, the temp .s goes to /tmp instead "
                    "(good runs: random cc*.s names, sources of 3, 200, 20 functions)"),
    _sc("t60_ldconfig_cache_dir_missing", "ldconfig -C cache/ld.so.cache -f etc/ld.so.conf (unshare -m)",
        LDCONFIG_ARGV, ldconfig_build, OPEN, "ENOENT", lambda b: f"{b}/cache/ld.so.cache~",
        description="the image lacks cache/: openat ENOENT of ld.so.cache~, 'Can't create temporary cache file' "
                    "(good runs: the old cache there or not)"),
    _sc("t60_fc_list_cachedir_under_a_file", "fc-list with FONTCONFIG_FILE=fc/fonts.conf",
        sh_argv(FC_SH), fc_build, OPEN, "ENOTDIR", lambda b: f"{b}/fc/var/cache*",
        description="the cachedir lies under a regular file: the cache's openat ENOTDIR, fonts rescanned every run "
                    "(good runs: a cold or a warm cache)"),
    _sc("t60_make_j2_publish_volume_read_only", "make -s -j2 into a bind mount of out/ (unshare -m)",
        MAKE_ARGV, make_build, OPEN, "EROFS", lambda b: f"{b}/out/part*.txt",
        description="publish.opts says ro: a recipe's openat EROFS (two recipes at once, interleaving differently)"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def fc_noise(base: Path, run: int) -> None:
    _fc_tree(base, fonts=[2, 3, 1][run % 3], warm=[False, True, True][run % 3])


def ldconfig_noise(base: Path, run: int) -> None:
    _ldconfig_tree(base, libs=[2, 6, 1][run % 3], warm=[False, True, True][run % 3])


def gcc_noise(base: Path, run: int) -> None:
    _gcc_tree(base, funcs=[5, 400, 40][run % 3])


# xz -dc -T2 of a multi-block archive: two decoder threads, another number of blocks each run
XZ_SH = 'xz -dc -T2 "$1/in/dump.xz" > "$1/out.bin"'


def xz_noise(base: Path, run: int) -> None:
    data = os.urandom([300_000, 2_000_000, 700_000][run % 3])
    xz = subprocess.run(["xz", "-0", "-T2", "--block-size=131072", "-c"], input=data, check=True,
                        capture_output=True).stdout
    write_file(base / "in" / "dump.xz", xz)


# sh's background gzip jobs, waited for together: they finish in any order
GZIP_JOBS_SH = 'for f in "$1"/logs/*.log; do gzip -k "$f" & done; wait; ls "$1/logs" > "$1/out.txt"'


def gzip_jobs_noise(base: Path, run: int) -> None:
    sizes = [[200, 20000, 3000], [9000, 10, 500, 40000], [1, 15000, 700]][run % 3]
    for i, n in enumerate(sizes):
        write_file(base / "logs" / f"{token(3)}-{i}.log", "".join(f"{token(4)} event {j}\n" for j in range(n)))


# a poll for a ready file that a background producer makes after another delay each run
POLL_SH = ('( sleep "$(cat "$1/delay")"; echo ok > "$1/ready.tmp" && mv "$1/ready.tmp" "$1/ready" ) & '
           'until [ -e "$1/ready" ]; do sleep 0.02; done; cat "$1/ready" > "$1/out.txt"; wait')


def poll_noise(base: Path, run: int) -> None:
    write_file(base / "delay", ["0", "0.3", "0.1"][run % 3] + "\n")


# cp -r of a tree whose files were created in another order, with other names
CP_SH = 'cp -r "$1/spool" "$1/copy" && ls -R "$1/copy" > "$1/out.txt"'


def cp_noise(base: Path, run: int) -> None:
    names = [f"{token(3)}.msg" for _ in range([12, 30, 5][run % 3])]
    random.shuffle(names)
    for i, name in enumerate(names):
        write_file(base / "spool" / ["new", "cur"][i % 2] / name, token(random.randrange(1, 200)))


# update-mime-database with its generated files there (warm) or not (cold)
MIME_SH = 'update-mime-database "$1/mime" > "$1/out.txt" 2>&1'


def mime_noise(base: Path, run: int) -> None:
    types = "".join(f'  <mime-type type="application/x-job-{i}"><comment>Job {i}</comment>'
                    f'<glob pattern="*.job{i}"/></mime-type>\n' for i in range([2, 9, 4][run % 3]))
    write_file(base / "mime" / "packages" / "job.xml",
               '<?xml version="1.0" encoding="UTF-8"?>\n'
               '<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">\n'
               f"{types}</mime-info>\n")
    if [True, False, False][run % 3]:  # an earlier run's outputs (made outside the recording)
        subprocess.run(["update-mime-database", str(base / "mime")], check=True, capture_output=True, env=ENV)


# python asyncio running three checksum subprocesses at once
ASYNC_PY = ("import asyncio, sys\n"
            "async def one(p):\n"
            "    proc = await asyncio.create_subprocess_exec('/usr/bin/sha256sum', p, stdout=asyncio.subprocess.PIPE)\n"
            "    out, _ = await proc.communicate()\n"
            "    return out\n"
            "async def main():\n"
            "    outs = await asyncio.gather(*(one(f'{sys.argv[1]}/in/{i}.dat') for i in range(3)))\n"
            "    open(f'{sys.argv[1]}/out.txt', 'wb').write(b''.join(outs))\n"
            "asyncio.run(main())\n")
ASYNC_ARGV = argv_in([*PY, "-c", ASYNC_PY, "{b}"])


def async_noise(base: Path, run: int) -> None:
    for i, n in enumerate([[10, 3_000_000, 400_000], [2_000_000, 5, 50_000], [600_000, 600_000, 1]][run % 3]):
        write_file(base / "in" / f"{i}.dat", os.urandom(n))


# sqlite3 loading another number of rows each run (the database grows to other sizes)
SQLITE_SH = 'sqlite3 "$1/job.db" < "$1/load.sql" > "$1/out.txt"'


def sqlite_noise(base: Path, run: int) -> None:
    rows = [10, 20_000, 400][run % 3]
    write_file(base / "load.sql",
               "CREATE TABLE IF NOT EXISTS ev(id INTEGER PRIMARY KEY, v TEXT);\nBEGIN;\n"
               + "".join(f"INSERT INTO ev(v) VALUES('{token(8)}');\n" for _ in range(rows))
               + "COMMIT;\nSELECT count(*) FROM ev;\n")


# python3 importing the job's package with PYTHONPYCACHEPREFIX: bytecode there (warm) or written (cold)
PYC_SH = 'PYTHONPYCACHEPREFIX="$1/pyc" PYTHONPATH="$1/lib" python3 -c "import jobpkg.main" > "$1/out.txt"'


def pyc_noise(base: Path, run: int) -> None:
    mods = [3, 8, 5][run % 3]
    write_file(base / "lib" / "jobpkg" / "__init__.py", "")
    for i in range(mods):
        write_file(base / "lib" / "jobpkg" / f"m{i}.py", f"VALUE = {i} * {random.randrange(1000)}\n")
    write_file(base / "lib" / "jobpkg" / "main.py",
               "".join(f"from jobpkg import m{i}\n" for i in range(mods)) + "print('loaded', m0.VALUE)\n")
    if [False, True, True][run % 3]:  # an earlier run's bytecode (written outside the recording)
        subprocess.run(["python3", "-c", "import jobpkg.main"], check=True, capture_output=True,
                       env={**ENV, "PYTHONPYCACHEPREFIX": f"{base}/pyc", "PYTHONPATH": f"{base}/lib"})


QUIET_SIXTIETH: list[NoAnomalyCase] = [
    NoAnomalyCase("t60_fc_list_cold_or_warm_cache", sh_argv(FC_SH), fc_noise,
                  description="fc-list of 2, 3, 1 fonts: the cache cold (scanned and written), then warm twice"),
    NoAnomalyCase("t60_ldconfig_cache_there_or_not", LDCONFIG_ARGV, ldconfig_noise,
                  description="ldconfig -C over 2, 6, 1 job libraries, the old cache absent then present"),
    NoAnomalyCase("t60_gcc_random_temp_names", sh_argv(GCC_SH), gcc_noise,
                  description="gcc -c of 5, 400, 40 functions: cc*.s temp names random every run"),
    NoAnomalyCase("t60_xz_dT2_multiblock_sizes", sh_argv(XZ_SH), xz_noise,
                  description="xz -dc -T2 of 3, 16, 6 blocks: two decoder threads interleaving"),
    NoAnomalyCase("t60_sh_background_gzip_jobs", sh_argv(GZIP_JOBS_SH), gzip_jobs_noise,
                  description="3, 4, 3 background gzip jobs of other sizes and names, waited for together"),
    NoAnomalyCase("t60_poll_ready_file_attempts_vary", sh_argv(POLL_SH), poll_noise,
                  description="the ready file appears after 0, 0.3, 0.1 s: 0 to ~15 polls (stat ENOENT, sleep)"),
    NoAnomalyCase("t60_cp_r_tree_in_other_orders", sh_argv(CP_SH), cp_noise,
                  description="cp -r of 12, 30, 5 files created in shuffled order with random names"),
    NoAnomalyCase("t60_update_mime_database_warm_or_cold", sh_argv(MIME_SH), mime_noise,
                  description="update-mime-database of 2, 9, 4 types: outputs there (warm), then absent twice"),
    NoAnomalyCase("t60_python_asyncio_subprocess_gather", ASYNC_ARGV, async_noise,
                  description="asyncio: three sha256sum subprocesses at once on inputs of other sizes, any order"),
    NoAnomalyCase("t60_sqlite3_rows_vary", sh_argv(SQLITE_SH), sqlite_noise,
                  description="sqlite3 loading 10, 20000, 400 rows in one transaction: the db grows to other sizes"),
    NoAnomalyCase("t60_python_pycache_prefix_cold_or_warm", sh_argv(PYC_SH), pyc_noise,
                  description="python3 importing 3, 8, 5 modules: PYTHONPYCACHEPREFIX's bytecode written (cold), "
                              "then read (warm) twice"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case here (the tmpfs and bind mounts go with their namespaces)."""
