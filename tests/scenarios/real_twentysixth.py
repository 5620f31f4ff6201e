"""A twenty-sixth set of real programs with one real fault each: **developer toolchains, service
setup and release checks** no earlier set ran, and two small C programs of the set's own (splice
and tee between pipes, setxattr and linkat from threads). Each case is a step of a build, a CI
job or a service's first start:

- **toolchains**: ``javac -d`` (a JVM's threads writing class files into package directories),
  ``as`` (an ``.include`` of shared definitions), ``rpcgen -h`` (a header generated through a
  ``cpp`` child), ``gdb -batch`` (symbols listed into a log file), ``valgrind`` (a threaded
  program under memcheck, its log file), ``ctest -j 4`` (four tests run in parallel children);
- **service setup**: ``initdb`` (a PostgreSQL cluster made through ``postgres`` children, as
  the service's account), ``start-stop-daemon --background`` (a daemon started with its pid
  file), ``zic -d`` (time zones compiled into a zoneinfo tree), ``yq -i`` (a values file edited
  in place through a ``jq`` child, as the job);
- **release and docs**: ``pzstd -p 4`` (four compressing threads), ``brotli`` (an output it
  refuses to overwrite), ``shasum -c`` (a release's checksums verified), ``msgmerge -U``
  (a catalogue updated with a backup, as the job), ``groff -man -t`` (a manual page through
  ``tbl``, ``troff`` and ``grotty`` children, a ``.so`` part);
- **the set's C programs** (compiled by `build()`): ``tb26-splice`` (a log shipper: the main
  thread splices its input into a pipe and tee()s it into a second pipe, splicing one to the
  log while a thread splices the other to a mirror), ``tb26-dedup`` (three threads digest their
  files, tag each with setxattr, and link it into a content store with linkat).

Faults (``t26_`` cases), decided from what ``strace -f`` showed before the differ ran: a classes
volume remounted read-only (javac's mkdir of the package directory EROFS), a full volume
(pzstd's write ENOSPC, tb26-splice's mirror splice ENOSPC), a log directory never made
(valgrind's open ENOENT), a log volume read-only (gdb's openat EROFS), a fixtures directory a
test needs not generated (ctest's chdir ENOENT), an output a killed run left (brotli's O_EXCL
openat EEXIST), a zoneinfo path a wrong unpack left a file (zic's chdir ENOTDIR), a generated
headers directory not made (rpcgen's openat ENOENT), a po directory a root checkout made
(msgmerge's backup openat EACCES, as the job), a manual's part missing (troff's openat
ENOENT), an include that is a symlink loop (as's openat ELOOP), a cluster's parent directory
root's (initdb's mkdir EACCES, as the service's account), a release file a botched unpack
made a directory (shasum's openat EISDIR), a values file root rewrote (yq's O_TRUNC openat
EACCES, as the job), a run directory not made yet (start-stop-daemon's child: the pid file's
openat ENOENT), a content store that became another file system (linkat EXDEV).

Noise cases (``QUIET_TWENTYSIXTH``) are good runs alone: javac's JVM threads, pzstd's thread
order, valgrind running a threaded program, ctest's four parallel tests, initdb's postgres
children, yq's jq child and feeding thread, groff's pipeline of children, rpcgen's cpp child,
the C programs' threads in any order.
"""

from __future__ import annotations

import functools
import glob
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .files import chown_nobody
from .harness import NOBODY, ROOT, NoAnomalyCase, Scenario

NOBODY_UID = 65534
OPEN = frozenset({"openat", "open", "openat2"})
STAT = frozenset({"newfstatat", "stat", "statx", "fstatat", "lstat", "access", "faccessat", "faccessat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
CHDIR = frozenset({"chdir"})

SPLICE_C = r'''
/* tb26-splice: a log shipper. The main thread splices its input into a pipe and tee()s each
   chunk into a second pipe, then splices the first pipe to the log; a mirror thread splices
   the second pipe to the mirror's file. No byte passes through user space. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int mirror_in, mirror_out;
static void *mirror(void *arg) {
    (void)arg;
    for (;;) {
        ssize_t n = splice(mirror_in, NULL, mirror_out, NULL, 65536, SPLICE_F_MOVE);
        if (n < 0) { perror("splice to mirror"); exit(1); }
        if (n == 0) break;
    }
    if (fsync(mirror_out) < 0) { perror("fsync mirror"); exit(1); }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char in[4200], log[4200], mir[4200];
    snprintf(in, sizeof in, "%s/in/events.log", argv[1]);
    snprintf(log, sizeof log, "%s/out/events.log", argv[1]);
    snprintf(mir, sizeof mir, "%s/mirror/events.log", argv[1]);
    int ifd = open(in, O_RDONLY | O_CLOEXEC);
    int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    mirror_out = open(mir, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ifd < 0 || lfd < 0 || mirror_out < 0) { perror("open"); return 1; }
    int a[2], b[2];
    if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0) { perror("pipe2"); return 1; }
    mirror_in = b[0];
    pthread_t t;
    pthread_create(&t, NULL, mirror, NULL);
    for (;;) {
        ssize_t n = splice(ifd, NULL, a[1], NULL, 65536, SPLICE_F_MOVE);
        if (n < 0) { perror("splice from input"); return 1; }
        if (n == 0) break;
        ssize_t left = n;
        while (left > 0) {  /* the mirror's copy: tee() duplicates without consuming */
            ssize_t k = tee(a[0], b[1], (size_t)left, 0);
            if (k < 0) { perror("tee"); return 1; }
            /* the log's copy consumes what was duplicated */
            ssize_t m = splice(a[0], NULL, lfd, NULL, (size_t)k, SPLICE_F_MOVE);
            if (m < 0) { perror("splice to log"); return 1; }
            left -= m;
        }
    }
    close(b[1]);
    pthread_join(t, NULL);
    if (fsync(lfd) < 0) { perror("fsync log"); return 1; }
    return 0;
}
'''

DEDUP_C = r'''
/* tb26-dedup: three threads digest their artefacts, tag each with a user.tb26.digest xattr
   (unless a tag is there already) and hard-link it into the content store by digest. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>
static const char *base;
static const char *names[] = {"app.tar", "lib.tar", "doc.tar"};
static void *dedup(void *arg) {
    char path[4200], link[4200], hex[17], have[64];
    snprintf(path, sizeof path, "%s/artefacts/%s", base, names[(long)arg]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(path); exit(1); }
    uint64_t h = 1469598103934665603ULL;
    unsigned char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) h = (h ^ buf[i]) * 1099511628211ULL;
    close(fd);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    if (getxattr(path, "user.tb26.digest", have, sizeof have) < 0) {
        if (errno != ENODATA) { perror("getxattr"); exit(1); }
        if (setxattr(path, "user.tb26.digest", hex, 16, XATTR_CREATE) < 0) { perror("setxattr"); exit(1); }
    }
    snprintf(link, sizeof link, "%s/store/%s", base, hex);
    if (linkat(AT_FDCWD, path, AT_FDCWD, link, 0) < 0 && errno != EEXIST) { perror(link); exit(1); }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    base = argv[1];
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, dedup, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
'''

WORKERS_C = r'''
/* tb26-workers: the threaded program valgrind and gdb look at: three workers allocate, fill
   and free buffers */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *work(void *arg) {
    long sum = 0;
    for (int k = 0; k < 50; k++) {
        char *p = malloc(1024 + (size_t)k * 16);
        memset(p, (int)(long)arg + k, 1024);
        sum += p[k];
        free(p);
    }
    return (void *)sum;
}
int main(void) {
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, work, (void *)i);
    long total = 0;
    for (int i = 0; i < 3; i++) { void *r; pthread_join(t[i], &r); total += (long)r; }
    printf("%ld\n", total);
    return 0;
}
'''


def initdb_path() -> str:
    """The PostgreSQL server package's initdb (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return found[-1] if found else "/usr/lib/postgresql/15/bin/initdb"


@functools.cache
def build() -> Path:
    """Compile the set's programs once per process (the two C programs and the threaded program
    valgrind and gdb look at). Returns the (world-readable) build directory."""
    out = ROOT / "_tb26"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    run = functools.partial(subprocess.run, check=True, capture_output=True)
    for name, src in (("tb26-splice", SPLICE_C), ("tb26-dedup", DEDUP_C), ("tb26-workers", WORKERS_C)):
        write(out / f"{name}.c", src)
        run(["cc", "-O1", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")])
    for p in [out, *out.rglob("*")]:
        p.chmod(0o755 if p.is_dir() or p.suffix == "" else 0o644)
    return out


def _dirs(base: Path, *names: str, owner_nobody: bool = False) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)
        if owner_nobody:
            chown_nobody(base / n)


def _umount(*names: str):
    def teardown(base: Path) -> None:
        for n in names:
            umount(base / n)
    return teardown


def _c(name: str):
    def argv(b: Path) -> list[str]:
        return [str(build() / name), str(b)]
    return argv


def _random_file(path: Path, size: int) -> None:
    path.write_bytes(random.randbytes(size))
    path.chmod(0o644)


# --- javac -d ------------------------------------------------------------------------------------
JAVA_SOURCES = {
    "Main": "package tb26.app;\npublic class Main {\n  public static void main(String[] a) {\n"
            "    System.out.println(Util.greet(a.length) + Store.size());\n  }\n}\n",
    "Util": "package tb26.app;\nclass Util {\n  static String greet(int n) { return \"tb26 \" + n; }\n}\n",
    "Store": "package tb26.app;\nimport java.util.*;\nclass Store {\n  static final Map<String, Integer> M = "
             "new TreeMap<>();\n  static int size() { M.put(\"a\", 1); return M.size(); }\n}\n",
}


def _javac_argv(b: Path) -> list[str]:
    return ["/usr/bin/javac", "-d", f"{b}/classes", *(f"{b}/src/tb26/app/{n}.java" for n in sorted(JAVA_SOURCES))]


def _java_sources(base: Path) -> None:
    _dirs(base, "src/tb26/app")
    for name, text in JAVA_SOURCES.items():
        write(base / "src" / "tb26" / "app" / f"{name}.java", text)


def javac_classes_read_only(base: Path, bad: bool) -> None:
    _java_sources(base)
    mount_tmpfs(base / "classes", "4m", readonly=bad)  # the bad host's classes volume went read-only


# --- pzstd -p 4 ----------------------------------------------------------------------------------
def _pzstd_argv(b: Path) -> list[str]:
    return ["/usr/bin/pzstd", "-p", "4", "-q", f"{b}/vol/data.txt", "-o", f"{b}/vol/data.txt.zst"]


def _pzstd_input(path: Path, lines: int) -> None:
    rng = random.Random()
    write(path, "".join(f"{i:07d} {rng.getrandbits(64):016x} {rng.choice(('INFO', 'WARN', 'DEBUG'))}\n"
                        for i in range(lines)))


def pzstd_volume_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "vol", "4m")
    _pzstd_input(base / "vol" / "data.txt", 30000)
    if bad:  # another job's output filled the volume
        fill_up(base / "vol")


# --- valgrind ------------------------------------------------------------------------------------
def _valgrind_argv(b: Path) -> list[str]:
    return ["/usr/bin/valgrind", "-q", "--error-exitcode=3", f"--log-file={b}/vglogs/memcheck.log",
            str(build() / "tb26-workers")]


def valgrind_log_dir_missing(base: Path, bad: bool) -> None:
    if not bad:  # the bad CI job's log directory was never made
        _dirs(base, "vglogs")


# --- gdb -batch ----------------------------------------------------------------------------------
def _gdb_argv(b: Path) -> list[str]:
    return ["/usr/bin/gdb", "-batch", "-nx", "-ex", f"set logging file {b}/out/gdb.log", "-ex",
            "set logging overwrite on", "-ex", "set logging redirect on", "-ex", "set logging enabled on",
            "-ex", "info functions work", "-ex", "info line main", str(build() / "tb26-workers")]


def gdb_log_volume_read_only(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "out", "1m", readonly=bad)  # the bad host's log volume went read-only


# --- ctest -j 4 ----------------------------------------------------------------------------------
def _ctest_argv(b: Path) -> list[str]:
    return ["/usr/bin/ctest", "--test-dir", f"{b}/build", "-j", "4"]


def _ctest_tree(base: Path, fixtures: bool) -> None:
    _dirs(base, "build")
    tests = "".join(f'add_test(unit_{n} "/bin/sh" "-c" "{body}")\n' for n, body in (
        ("parse", "sleep 0.05; echo parse ok"), ("store", "echo store ok"),
        ("replay", "cat fixture.txt"), ("report", "sleep 0.02; echo report ok")))
    write(base / "build" / "CTestTestfile.cmake",
          tests + f'set_tests_properties(unit_replay PROPERTIES WORKING_DIRECTORY "{base}/build/fixtures")\n')
    if fixtures:
        _dirs(base, "build/fixtures")
        write(base / "build" / "fixtures" / "fixture.txt", "event 1\nevent 2\n")


def ctest_fixtures_missing(base: Path, bad: bool) -> None:
    _ctest_tree(base, fixtures=not bad)  # the bad job's fixture generation step was skipped


# --- brotli --------------------------------------------------------------------------------------
def _brotli_argv(b: Path) -> list[str]:
    return ["/usr/bin/brotli", "-q", "9", f"{b}/web/app.js"]


def brotli_output_left_over(base: Path, bad: bool) -> None:
    _dirs(base, "web")
    write(base / "web" / "app.js", "".join(f"function f{i}(x) {{ return x * {random.randrange(999)}; }}\n"
                                           for i in range(3000)))
    if bad:  # a killed earlier run left its partial output
        write(base / "web" / "app.js.br", "\x1b\x00")


# --- zic -d --------------------------------------------------------------------------------------
ZONES = """# tb26 zones
Zone Etc/TB26 0 - TB26
Rule Tb 2000 max - Mar lastSun 2:00 1:00 S
Rule Tb 2000 max - Oct lastSun 3:00 0 -
Zone Europe/Tbtown 1:00 Tb CE%sT
Link Europe/Tbtown Europe/Tbvillage
"""


def _zic_argv(b: Path) -> list[str]:
    return ["/usr/sbin/zic", "-d", f"{b}/zoneinfo", f"{b}/tz/tb26.zi"]


def zic_zoneinfo_is_file(base: Path, bad: bool) -> None:
    _dirs(base, "tz")
    write(base / "tz" / "tb26.zi", ZONES)
    if bad:  # a wrong unpack left the zoneinfo path a file
        write(base / "zoneinfo", "tzdata 2024a\n")
    else:
        _dirs(base, "zoneinfo")


# --- rpcgen -h -----------------------------------------------------------------------------------
RPC_X = """struct job { int id; string name<64>; };
program TB26PROG { version TB26VERS { int SUBMIT(job) = 1; job STATUS(int) = 2; } = 1; } = 0x20000126;
"""


def _rpcgen_argv(b: Path) -> list[str]:
    return ["/usr/bin/rpcgen", "-h", "-o", f"{b}/gen/tb26.h", f"{b}/idl/tb26.x"]


def rpcgen_gen_dir_missing(base: Path, bad: bool) -> None:
    _dirs(base, "idl")
    write(base / "idl" / "tb26.x", RPC_X)
    if not bad:  # the bad build's generated-headers directory was not made
        _dirs(base, "gen")


# --- msgmerge -U ---------------------------------------------------------------------------------
PO_HEAD = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
           '"Language: de\\n"\n"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n')


def _msgmerge_argv(b: Path) -> list[str]:
    return ["/usr/bin/msgmerge", "-q", "-U", "--backup=simple", f"{b}/po/de.po", f"{b}/po/tb26.pot"]


def msgmerge_po_dir_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "po", owner_nobody=not bad)  # the bad host's po/ came from a root checkout
    write(base / "po" / "de.po", PO_HEAD + 'msgid "Hello"\nmsgstr "Hallo"\n\nmsgid "Bye"\nmsgstr "Tschuess"\n')
    write(base / "po" / "tb26.pot", PO_HEAD.replace("de", "") + 'msgid "Hello"\nmsgstr ""\n\n'
          'msgid "Goodbye"\nmsgstr ""\n\nmsgid "Retry"\nmsgstr ""\n')
    chown_nobody(base / "po" / "de.po")  # the job's own catalogue


# --- groff -man -t -------------------------------------------------------------------------------
def _groff_argv(b: Path) -> list[str]:
    return ["/usr/bin/groff", "-man", "-t", "-Tutf8", f"{b}/man/tb26.1"]


def groff_part_missing(base: Path, bad: bool) -> None:
    _dirs(base, "man/parts")
    write(base / "man" / "tb26.1", ".TH TB26 1\n.SH NAME\ntb26 \\- demo service\n.SH OPTIONS\n.TS\nl l.\n"
          "-p\tport\n-w\tworkers\n.TE\n" f".so {base}/man/parts/body.man\n.SH SEE ALSO\ntb25(1)\n")
    if not bad:  # the bad checkout lost the page's body part
        write(base / "man" / "parts" / "body.man", ".SH DESCRIPTION\n" + "tb26 serves requests.\n.PP\n" * 40)


# --- as ------------------------------------------------------------------------------------------
def _as_argv(b: Path) -> list[str]:
    return ["/usr/bin/as", "-o", f"{b}/obj/start.o", f"{b}/asm/start.s"]


def as_include_loops(base: Path, bad: bool) -> None:
    _dirs(base, "asm", "obj", "inc")
    write(base / "asm" / "start.s", f'.include "{base}/inc/defs.s"\n.text\n.globl tb26_start\n'
          "tb26_start:\n  mov $TB26_MAGIC, %eax\n  ret\n")
    if bad:  # a vendoring step left defs.s a link looping through its own directory
        (base / "inc" / "defs.s").symlink_to("defs.link")
        (base / "inc" / "defs.link").symlink_to("defs.s")
    else:
        write(base / "inc" / "shared-defs.s", ".set TB26_MAGIC, 0x26\n")
        (base / "inc" / "defs.s").symlink_to("shared-defs.s")


# --- initdb --------------------------------------------------------------------------------------
def _initdb_argv(b: Path) -> list[str]:
    return [initdb_path(), "-D", f"{b}/pg/data", "-A", "trust", "--no-sync", "-U", "tb26", "-E", "UTF8",
            "--locale=C"]


def initdb_parent_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "pg", owner_nobody=not bad)  # the bad host's pg/ was made by a root-run step


# --- shasum -c -----------------------------------------------------------------------------------
def _shasum_argv(b: Path) -> list[str]:
    return ["/usr/bin/shasum", "-a", "256", "-c", f"{b}/dist/SHA256SUMS"]


def shasum_file_is_dir(base: Path, bad: bool) -> None:
    import hashlib

    _dirs(base, "dist")
    lines = []
    for n in ("tb26-1.0.tar", "tb26-1.0.tar.sig", "tb26-docs.tar"):
        _random_file(base / "dist" / n, random.randint(20_000, 60_000))
        lines.append(f"{hashlib.sha256((base / 'dist' / n).read_bytes()).hexdigest()}  {base}/dist/{n}\n")
    write(base / "dist" / "SHA256SUMS", "".join(lines))
    if bad:  # a botched unpack made the docs tarball's path a directory
        (base / "dist" / "tb26-docs.tar").unlink()
        _dirs(base, "dist/tb26-docs.tar/share")


# --- yq -i ---------------------------------------------------------------------------------------
def _yq_argv(b: Path) -> list[str]:
    return ["/usr/bin/yq", "-y", "-i", ".replicas = 3 | .image.tag = \"1.26\"", f"{b}/deploy/values.yaml"]


def yq_values_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "deploy", owner_nobody=True)
    write(base / "deploy" / "values.yaml", "replicas: 1\nimage:\n  repo: tb26/api\n  tag: '1.25'\n"
          "env:\n" + "".join(f"  - name: K{i}\n    value: v{random.randrange(999)}\n" for i in range(20)))
    if not bad:  # the bad host's values file was rewritten by root (0644, root's)
        chown_nobody(base / "deploy" / "values.yaml")


# --- start-stop-daemon ---------------------------------------------------------------------------
def _ssd_argv(b: Path) -> list[str]:
    return ["/usr/sbin/start-stop-daemon", "--start", "--background", "--make-pidfile", "--pidfile",
            f"{b}/run/tb26.pid", "--exec", "/bin/true"]


def ssd_run_dir_missing(base: Path, bad: bool) -> None:
    if not bad:  # the bad host's run directory was not made yet (tmpfiles had not run)
        _dirs(base, "run")


# --- the set's C programs --------------------------------------------------------------------------
def _events(base: Path, kib: int) -> None:
    _dirs(base, "in", "out")
    rng = random.Random()
    lines, size = [], 0
    while size < kib * 1024:
        line = f"{size:09d} {rng.getrandbits(80):020x} {rng.choice(('GET', 'PUT', 'DELETE'))} /api/v1\n"
        lines.append(line)
        size += len(line)
    write(base / "in" / "events.log", "".join(lines))


def splice_mirror_full(base: Path, bad: bool) -> None:
    _events(base, 400)
    mount_tmpfs(base / "mirror", "2m")
    if bad:  # the mirror's volume is full
        fill_up(base / "mirror")


def _artefacts(base: Path) -> None:
    _dirs(base, "artefacts")
    for n in ("app.tar", "lib.tar", "doc.tar"):
        _random_file(base / "artefacts" / n, random.randint(30_000, 90_000))


def dedup_store_other_fs(base: Path, bad: bool) -> None:
    _artefacts(base)
    if bad:  # the content store became its own volume
        mount_tmpfs(base / "store", "1m")
    else:
        _dirs(base, "store")


REAL_TWENTYSIXTH: list[Scenario] = [
    Scenario("t26_javac_classes_read_only", "javac -d (a JVM's threads)", _javac_argv, javac_classes_read_only,
             MKDIR, "EROFS", lambda b: f"{b}/classes/tb26*", teardown=_umount("classes"),
             description="javac writing class files into package directories on a volume remounted read-only"),
    Scenario("t26_pzstd_volume_full", "pzstd -p 4 (compressing threads)", _pzstd_argv, pzstd_volume_full, WRITE,
             "ENOSPC", lambda b: f"{b}/vol/data.txt.zst", teardown=_umount("vol"),
             description="pzstd's four threads compressing onto a full volume"),
    Scenario("t26_valgrind_log_dir_missing", "valgrind --log-file (memcheck)", _valgrind_argv,
             valgrind_log_dir_missing, OPEN, "ENOENT", lambda b: f"{b}/vglogs/memcheck.log",
             description="valgrind creating its log file in a directory a CI job never made"),
    Scenario("t26_gdb_log_read_only", "gdb -batch (logging to a file)", _gdb_argv, gdb_log_volume_read_only, OPEN,
             "EROFS", lambda b: f"{b}/out/gdb.log", teardown=_umount("out"),
             description="gdb logging a symbol listing onto a volume remounted read-only"),
    Scenario("t26_ctest_fixtures_missing", "ctest -j 4 (parallel tests)", _ctest_argv, ctest_fixtures_missing,
             CHDIR, "ENOENT", lambda b: f"{b}/build/fixtures",
             description="ctest running four tests in parallel, one in a fixtures directory never generated"),
    Scenario("t26_brotli_output_left_over", "brotli -q 9 (O_EXCL output)", _brotli_argv, brotli_output_left_over,
             OPEN, "EEXIST", lambda b: f"{b}/web/app.js.br",
             description="brotli compressing a bundle whose output a killed earlier run left"),
    Scenario("t26_zic_zoneinfo_is_file", "zic -d (zoneinfo tree)", _zic_argv, zic_zoneinfo_is_file, CHDIR,
             "ENOTDIR", lambda b: f"{b}/zoneinfo",
             description="zic compiling zones into a zoneinfo path a wrong unpack left a file"),
    Scenario("t26_rpcgen_gen_dir_missing", "rpcgen -h -o (cpp child)", _rpcgen_argv, rpcgen_gen_dir_missing, OPEN,
             "ENOENT", lambda b: f"{b}/gen/tb26.h",
             description="rpcgen writing a header into a generated-headers directory not made"),
    Scenario("t26_msgmerge_po_dir_root_owned", "msgmerge -U --backup (as the job)", _msgmerge_argv,
             msgmerge_po_dir_root_owned, OPEN, "EACCES", lambda b: f"{b}/po/de.po~", unprivileged=True,
             description="msgmerge updating the job's catalogue, its backup in a po directory a root checkout made"),
    Scenario("t26_groff_part_missing", "groff -man -t (tbl, troff, grotty children)", _groff_argv,
             groff_part_missing, OPEN, "ENOENT", lambda b: f"{b}/man/parts/body.man",
             description="troff reading a manual page's .so part the checkout lost"),
    Scenario("t26_as_include_loops", "as (.include)", _as_argv, as_include_loops, OPEN, "ELOOP",
             lambda b: f"{b}/inc/defs.s",
             description="the assembler including shared definitions through a symlink loop"),
    Scenario("t26_initdb_parent_root_owned", "initdb (postgres children, as the service)", _initdb_argv,
             initdb_parent_root_owned, MKDIR, "EACCES", lambda b: f"{b}/pg/data", unprivileged=True,
             description="initdb making a cluster's data directory in a parent a root-run step made"),
    Scenario("t26_shasum_entry_is_dir", "shasum -a 256 -c (perl)", _shasum_argv, shasum_file_is_dir, OPEN,
             "EISDIR", lambda b: f"{b}/dist/tb26-docs.tar",
             description="shasum verifying a release whose docs tarball a botched unpack made a directory"),
    Scenario("t26_yq_values_root_owned", "yq -y -i (jq child, as the job)", _yq_argv, yq_values_root_owned, OPEN,
             "EACCES", lambda b: f"{b}/deploy/values.yaml", unprivileged=True,
             description="yq editing a values file in place that root rewrote as its own"),
    Scenario("t26_ssd_run_dir_missing", "start-stop-daemon --background --make-pidfile", _ssd_argv,
             ssd_run_dir_missing, OPEN, "ENOENT", lambda b: f"{b}/run/tb26.pid",
             description="start-stop-daemon writing a daemon's pid file into a run directory not made yet"),
    Scenario("t26_splice_mirror_full", "tb26-splice (C: splice and tee between pipes, a thread)",
             _c("tb26-splice"), splice_mirror_full, frozenset({"splice"}), "ENOSPC",
             lambda b: f"{b}/mirror/events.log", teardown=_umount("mirror"),
             description="a log shipper splicing a tee()d pipe to a mirror on a full volume"),
    Scenario("t26_dedup_store_other_fs", "tb26-dedup (C: setxattr, linkat, threads)", _c("tb26-dedup"),
             dedup_store_other_fs, frozenset({"linkat", "link"}), "EXDEV", lambda b: f"{b}/artefacts/*.tar",
             teardown=_umount("store"),
             description="three threads tagging artefacts with xattrs and linking them into a store on another volume"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _javac_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _java_sources(base)
    _dirs(base, "classes")


def _pzstd_big(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "vol")
    _pzstd_input(base / "vol" / "data.txt", 120000)


def _splice_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _events(base, 600)
    _dirs(base, "mirror")


QUIET_TWENTYSIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t26_javac_jvm_threads", _javac_argv, _javac_disk,
                  description="javac's JVM: compiler, GC and JIT threads in any order"),
    NoAnomalyCase("t26_pzstd_thread_order", _pzstd_argv, _pzstd_big,
                  description="pzstd compressing with four threads: which thread takes which block varies"),
    NoAnomalyCase("t26_valgrind_threads", _valgrind_argv, _good(valgrind_log_dir_missing),
                  description="valgrind's memcheck serialising a threaded program's three workers"),
    NoAnomalyCase("t26_ctest_parallel", _ctest_argv, _good(ctest_fixtures_missing),
                  description="ctest's four tests in parallel children, finishing in any order"),
    NoAnomalyCase("t26_initdb_children", lambda b: [*NOBODY, *_initdb_argv(b)], _good(initdb_parent_root_owned),
                  description="initdb's postgres bootstrap and single-user children"),
    NoAnomalyCase("t26_groff_pipeline", _groff_argv, _good(groff_part_missing),
                  description="groff's tbl, troff and grotty children in a pipeline"),
    NoAnomalyCase("t26_rpcgen_cpp_child", _rpcgen_argv, _good(rpcgen_gen_dir_missing),
                  description="rpcgen reading its input through a cpp child (and cc1 under it)"),
    NoAnomalyCase("t26_splice_thread_order", _c("tb26-splice"), _splice_disk,
                  description="the main thread's splices and tee()s racing the mirror thread's splices"),
    NoAnomalyCase("t26_dedup_thread_order", _c("tb26-dedup"), _good(dedup_store_other_fs),
                  description="three threads digesting, tagging and linking their artefacts in any order"),
]


def quiet_teardown() -> None:
    """What a noise case may leave: nothing (no noise case mounts or starts a server)."""


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
