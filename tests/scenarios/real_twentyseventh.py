"""A twenty-seventh set of real programs with one real fault each: **scripting runtimes,
interpreters and data tools** no earlier set ran, and two small C programs of the set's own
(threads pwrite()ing shards of one table, threads moving compacted segments into place with
renameat2). Each case is a step of a build, a test job or a data pipeline:

- **perl and its tools**: ``prove -j`` (a test suite run in parallel perl children, its state
  saved with ``--state=save``; and the same under the job's ``ulimit -n``), ``pod2man`` (a
  manual page rendered into a man tree);
- **python3 -m**: ``compileall -j 4`` (a package byte-compiled by four worker processes, as
  the job), ``zipapp -p`` (an application archive rebuilt and made executable, as the job);
- **gettext and catalogues**: ``xgettext -f POTFILES -D src`` (strings extracted from the
  sources a list names), ``msgcat`` (catalogues merged, one of them a shared symlink),
  ``gencat`` (a catgets catalogue compiled, as the job: gencat makes it with ``creat``);
- **data tools**: ``bc`` (a rate job loading its function library), ``jar cf`` (a JVM packing
  classes, through a temporary in /tmp copied over with sendfile), ``bzip2recover`` (blocks
  of a damaged archive split out with O_EXCL), ``iconvconfig -o`` (a gconv module cache
  written through a mkstemp temporary), ``localedef`` (a locale compiled into a directory);
- **the set's C programs** (compiled by `build()`): ``tb27-shard`` (four threads pwrite()
  1 MiB shards of a table file at their offsets; it ignores SIGXFSZ like a database, so a
  file-size limit is EFBIG), ``tb27-kv`` (three threads compact a write-ahead log's ranges
  into segments, each written to ``seg-N.tmp`` and moved into place with
  ``renameat2(RENAME_NOREPLACE)``, then the manifest the same way).

Faults (``t27_`` cases), decided from what ``strace -f`` showed before the differ ran: a state
volume remounted read-only (prove's openat of its state file EROFS), a job's nofile limit
lowered (prove's pipe2 EMFILE), a man section that a wrong copy made a file (pod2man's openat
ENOTDIR), a subpackage a root-run step made (compileall's workers' mkdir of ``__pycache__``
EACCES, as the job), an archive a root-run release step rewrote (zipapp rewrites the
world-writable file, then its chmod +x is EPERM, as the job), a source POTFILES still lists
but a refactor deleted (xgettext's openat ENOENT), a shared catalogue symlink that loops (msgcat's openat ELOOP), a catalogue directory
root's (gencat's creat EACCES, as the job), a function library not deployed (bc's openat
ENOENT), a full volume (jar's sendfile ENOSPC, localedef's writev ENOSPC: localedef still
exits 0), a recovered block an earlier run left (bzip2recover's O_EXCL openat EEXIST), a cache
directory read-only (iconvconfig's openat of its temporary EROFS), a file-size limit
(tb27-shard's pwrite64 EFBIG), a segment a crashed compaction left (tb27-kv's renameat2
EEXIST).

Noise cases (``QUIET_TWENTYSEVENTH``) are good runs alone: compileall's four workers, prove's
parallel tests with File::Temp names and random sleeps, jar's JVM threads and temporary name,
iconvconfig's mkstemp name, bzip2recover over random blocks, venv's tree (noise only: venv
ran in an earlier set), the C programs' threads in any order.
"""

from __future__ import annotations

import bz2
import functools
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .files import chown_nobody
from .harness import ROOT, NoAnomalyCase, Scenario

NOBODY_UID = 65534
NO_PATH = "*"  # the fault's call has no path of its own (a pipe)
OPEN = frozenset({"openat", "open", "openat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
PY3 = "/usr/bin/python3"

SHARD_C = r'''
/* tb27-shard: builds a columnar table file. Four threads each encode one shard (1 MiB) and
   pwrite() it into the table at the shard's offset, in 64 KiB pieces; the main thread then
   writes the footer and fsyncs. Like a database, it ignores SIGXFSZ, so a file-size limit
   shows as EFBIG from the write instead of killing the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define SHARD (1 << 20)
#define PIECE (64 << 10)
static int out;
static void *encode(void *arg) {
    long id = (long)arg;
    unsigned char *buf = malloc(PIECE);
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
    for (off_t done = 0; done < SHARD; done += PIECE) {
        for (size_t i = 0; i < PIECE; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            buf[i] = (unsigned char)(x & 0x3f) + 32;
        }
        ssize_t n = pwrite(out, buf, PIECE, id * SHARD + done);
        if (n < 0) { fprintf(stderr, "shard %ld: pwrite: %s\n", id, strerror(errno)); exit(1); }
    }
    free(buf);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    signal(SIGXFSZ, SIG_IGN);
    char path[4200];
    snprintf(path, sizeof path, "%s/tables/events.tbl", argv[1]);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) { perror(path); return 1; }
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, encode, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    char footer[64];
    int len = snprintf(footer, sizeof footer, "TB27 shards=4 shard_size=%d\n", SHARD);
    if (pwrite(out, footer, (size_t)len, 4L * SHARD) < 0) { perror("footer"); return 1; }
    if (fsync(out) < 0) { perror("fsync"); return 1; }
    return 0;
}
'''

KV_C = r'''
/* tb27-kv: a compaction step of a small key-value store. Three threads each merge their key
   range of the write-ahead log into a new segment: written to data/seg-N.tmp (O_EXCL),
   fsynced, then moved into place with renameat2(RENAME_NOREPLACE) so that a segment is never
   overwritten; the main thread then writes the manifest the same way. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *base;
static void put(const char *tmp, const char *final, const char *text, size_t len) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) { fprintf(stderr, "%s: %s\n", tmp, strerror(errno)); exit(1); }
    if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) { perror(tmp); exit(1); }
    close(fd);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0) {
        fprintf(stderr, "%s -> %s: %s\n", tmp, final, strerror(errno));
        unlink(tmp);
        exit(1);
    }
}
static void *compact(void *arg) {
    long id = (long)arg;
    char in[4200], tmp[4200], final[4200], line[256];
    snprintf(in, sizeof in, "%s/wal/range-%ld.log", base, id);
    FILE *f = fopen(in, "re");
    if (!f) { perror(in); exit(1); }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (len + n >= cap) text = realloc(text, cap *= 2);
        memcpy(text + len, line, n);
        len += n;
    }
    fclose(f);
    snprintf(tmp, sizeof tmp, "%s/data/seg-%04ld.tmp", base, id + 1);
    snprintf(final, sizeof final, "%s/data/seg-%04ld", base, id + 1);
    put(tmp, final, text, len);
    free(text);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    base = argv[1];
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, compact, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    char tmp[4200], final[4200];
    snprintf(tmp, sizeof tmp, "%s/data/MANIFEST.tmp", base);
    snprintf(final, sizeof final, "%s/data/MANIFEST-000002", base);
    const char *m = "seg-0001\nseg-0002\nseg-0003\n";
    put(tmp, final, m, strlen(m));
    return 0;
}
'''


@functools.cache
def build() -> Path:
    """Compile the set's two C programs once per process. Returns the (world-readable) build
    directory."""
    out = ROOT / "_tb27"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    for name, src in (("tb27-shard", SHARD_C), ("tb27-kv", KV_C)):
        write(out / f"{name}.c", src)
        subprocess.run(["cc", "-O1", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")],
                       check=True, capture_output=True)
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


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


# --- prove -j 3 --state=save -----------------------------------------------------------------------
TEST_T = """use strict;
use warnings;
use Test::More tests => 3;
use File::Spec;
use File::Temp qw(tempfile);
my ($fh, $name) = tempfile("tb27-XXXXXXXX", DIR => File::Spec->tmpdir, UNLINK => 1);
print {$fh} join("\\n", map { "row $_" } 1 .. %(rows)d), "\\n";
close $fh;
ok(-s $name, "wrote a fixture");
select(undef, undef, undef, %(sleep).3f);
is(scalar(() = do { open my $in, "<", $name or die; <$in> }), %(rows)d, "read it back");
like("%(name)s", qr/^[a-z]+$/, "named");
"""


def _prove_tests(base: Path, count: int = 3) -> None:
    _dirs(base, "t", "tmp")
    (base / "tmp").chmod(0o1777)
    for i, name in enumerate(("parse", "store", "report", "replay", "export", "index", "merge", "audit")[:count]):
        write(base / "t" / f"{i:02d}-{name}.t",
              TEST_T % {"rows": 50 + 10 * i, "sleep": random.uniform(0.01, 0.08), "name": name})


def _prove_argv(b: Path) -> list[str]:
    return ["/usr/bin/env", f"TMPDIR={b}/tmp", "/usr/bin/prove", "-j", "3", "--state=save",
            f"--statefile={b}/state/prove.state", f"{b}/t/"]


def prove_state_read_only(base: Path, bad: bool) -> None:
    _prove_tests(base)
    mount_tmpfs(base / "state", "1m", readonly=bad)  # the bad runner's state volume went read-only


def _prove_nofile_argv(b: Path) -> list[str]:
    return _sh(f'ulimit -n "$(cat {b}/nofile)"; TMPDIR={b}/tmp exec /usr/bin/prove -j 8 {b}/t/')


def prove_nofile_limit(base: Path, bad: bool) -> None:
    _prove_tests(base, 8)
    write(base / "nofile", "16\n" if bad else "1024\n")  # the bad runner's container lowered nofile


# --- pod2man -------------------------------------------------------------------------------------
TOOL_POD = """=head1 NAME

tb27-tool - replay a job's events

=head1 SYNOPSIS

B<tb27-tool> [B<-v>] [B<-j> I<jobs>] I<file>...

=head1 DESCRIPTION

B<tb27-tool> replays the events of I<file> against the store, with I<jobs> workers.

=head1 OPTIONS

=over 4

=item B<-v>

Say what is done.

=item B<-j> I<jobs>

Run I<jobs> workers (default 4).

=back

=head1 SEE ALSO

L<tb26-tool(1)>

=cut
"""


def _pod2man_argv(b: Path) -> list[str]:
    return ["/usr/bin/pod2man", "--section=1", "--center=tb27", "--release=1.27", f"{b}/pod/tb27-tool.pod",
            f"{b}/man/man1/tb27-tool.1"]


def pod2man_section_is_file(base: Path, bad: bool) -> None:
    _dirs(base, "pod", "man")
    write(base / "pod" / "tb27-tool.pod", TOOL_POD)
    if bad:  # a wrong copy (cp page man/man1) made the section a file
        write(base / "man" / "man1", ".TH OLD 1\n")
    else:
        _dirs(base, "man/man1")


# --- python3 -m compileall -j 4 --------------------------------------------------------------------
def _compileall_argv(b: Path) -> list[str]:
    return [PY3, "-m", "compileall", "-q", "-j", "4", f"{b}/pkg"]


def _package(base: Path) -> None:
    _dirs(base, "pkg/core", "pkg/plugins")
    write(base / "pkg" / "__init__.py", '"""tb27 package."""\n')
    for sub in ("core", "plugins"):
        write(base / "pkg" / sub / "__init__.py", "")
        for i in range(10):
            write(base / "pkg" / sub / f"m{i:02d}.py",
                  f"import os\n\n\ndef f{i}(x):\n    return [os.sep * x for _ in range({i + random.randrange(9)})]\n\n"
                  f"class C{i}:\n    n = {random.randrange(1000)}\n")


def compileall_plugins_root_owned(base: Path, bad: bool) -> None:
    _package(base)
    for p in [base / "pkg", *(base / "pkg").rglob("*")]:
        if not (bad and p == base / "pkg" / "plugins"):  # a root-run step made plugins/ in the bad tree
            chown_nobody(p)


# --- python3 -m zipapp -p ------------------------------------------------------------------------
def _zipapp_argv(b: Path) -> list[str]:
    return [PY3, "-m", "zipapp", f"{b}/src", "-m", "tb27app.cli:main", "-p", "/usr/bin/env python3",
            "-o", f"{b}/dist/tb27.pyz"]


def zipapp_release_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "src/tb27app", "dist")
    write(base / "src" / "tb27app" / "__init__.py", '"""tb27 app."""\n')
    write(base / "src" / "tb27app" / "cli.py", "import sys\n\n\ndef main():\n    print('tb27', sys.argv[1:])\n")
    write(base / "src" / "tb27app" / "replay.py", "".join(f"STEP_{i} = {random.randrange(999)}\n"
                                                            for i in range(40)))
    for p in [base / "src", *(base / "src").rglob("*"), base / "dist"]:
        chown_nobody(p)
    # the previous build's archive: the job's own; on the bad host a root-run release step
    # rewrote it (root's, left world-writable): the job can rewrite it but not chmod it
    write(base / "dist" / "tb27.pyz", "#!/usr/bin/env python3\nPK\n", 0o666 if bad else 0o644)
    if not bad:
        chown_nobody(base / "dist" / "tb27.pyz")


# --- python3 -m venv (noise only) ------------------------------------------------------------------
def _venv_argv(b: Path) -> list[str]:
    return [PY3, "-m", "venv", "--without-pip", f"{b}/env"]


def _venv_dir(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "env")  # the deploy step provides the environment's directory


# --- xgettext -f POTFILES -D src -------------------------------------------------------------------
SOURCES = {
    "main.c": '#include <libintl.h>\n#include <stdio.h>\n#define _(s) gettext(s)\nint main(void) {\n'
              '  puts(_("Starting replay"));\n  puts(_("Replay finished"));\n  return 0;\n}\n',
    "store.c": '#include <libintl.h>\n#define _(s) gettext(s)\nconst char *msg(int n) {\n'
               '  return n ? _("Store is full") : _("Store is empty");\n}\n',
    "cli.py": 'import gettext\n_ = gettext.gettext\nprint(_("Usage: tb27 [-v] FILE"))\nprint(_("Bye"))\n',
}


def _xgettext_argv(b: Path) -> list[str]:
    return ["/usr/bin/xgettext", "--from-code=UTF-8", "-k_", "-D", f"{b}/src", "-f", f"{b}/po/POTFILES",
            "-o", f"{b}/po/tb27.pot"]


def xgettext_listed_source_gone(base: Path, bad: bool) -> None:
    _dirs(base, "src", "po")
    write(base / "po" / "POTFILES", "".join(f"{n}\n" for n in SOURCES))
    for name, text in SOURCES.items():
        if not (bad and name == "store.c"):  # a refactor deleted store.c, POTFILES still lists it
            write(base / "src" / name, text)


# --- msgcat --------------------------------------------------------------------------------------
PO_HEAD = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: de\\n"\n\n'


def _msgcat_argv(b: Path) -> list[str]:
    return ["/usr/bin/msgcat", "--use-first", "-o", f"{b}/out/de.po", f"{b}/po/de.po", f"{b}/po/de-extra.po",
            f"{b}/po/shared.po"]


def msgcat_shared_loops(base: Path, bad: bool) -> None:
    _dirs(base, "po", "common", "out")
    write(base / "po" / "de.po", PO_HEAD + 'msgid "Hello"\nmsgstr "Hallo"\n\nmsgid "Bye"\nmsgstr "Tschuess"\n')
    write(base / "po" / "de-extra.po", PO_HEAD + 'msgid "Retry"\nmsgstr "Erneut versuchen"\n')
    write(base / "common" / "shared.po", PO_HEAD + 'msgid "OK"\nmsgstr "OK"\n\nmsgid "Cancel"\nmsgstr "Abbrechen"\n')
    if bad:  # a sync tool relinked shared.po onto a loop
        (base / "po" / "loop-a").symlink_to("loop-b")
        (base / "po" / "loop-b").symlink_to("loop-a")
        (base / "po" / "shared.po").symlink_to("loop-a")
    else:
        (base / "po" / "shared.po").symlink_to("../common/shared.po")


# --- gencat --------------------------------------------------------------------------------------
MSG = "$set 1\n1 Starting replay\n2 Replay finished\n$set 2\n1 Store is full: %s\n2 Retry in %d s\n"


def _gencat_argv(b: Path) -> list[str]:
    return ["/usr/bin/gencat", f"{b}/nls/tb27.cat", f"{b}/msg/tb27.msg"]


def gencat_nls_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "msg")
    write(base / "msg" / "tb27.msg", MSG)
    _dirs(base, "nls", owner_nobody=not bad)  # the bad host's nls/ was made by a root install step


# --- bc ------------------------------------------------------------------------------------------
FINANCE_BC = """scale = 10
define compound(p, r, n) {
  auto i, v
  v = p
  for (i = 0; i < n; i++) v = v * (1 + r)
  return (v)
}
define pmt(p, r, n) {
  return (p * r / (1 - 1 / compound(1, r, n)))
}
"""


def _bc_argv(b: Path) -> list[str]:
    return ["/usr/bin/bc", "-q", f"{b}/lib/finance.bc", f"{b}/jobs/rates.bc"]


def bc_library_missing(base: Path, bad: bool) -> None:
    _dirs(base, "lib", "jobs")
    write(base / "jobs" / "rates.bc", "".join(f"compound({1000 + 50 * i}, 0.0{i + 1}, {12 + i})\n"
                                              f"pmt({20000 + 1000 * i}, 0.00{i + 2}, 60)\n" for i in range(6))
          + "quit\n")
    if not bad:  # the bad host's deploy did not ship the function library
        write(base / "lib" / "finance.bc", FINANCE_BC)


# --- jar cf --------------------------------------------------------------------------------------
def _jar_argv(b: Path) -> list[str]:
    return ["/usr/bin/jar", "cf", f"{b}/vol/tb27-app.jar", "-C", f"{b}/classes", "."]


def _classes(base: Path) -> None:
    _dirs(base, "classes/tb27/app", "classes/tb27/store")
    for pkg in ("app", "store"):
        for i in range(20):
            (base / "classes" / "tb27" / pkg / f"C{i:02d}.class").write_bytes(random.randbytes(12_000))


def jar_volume_full(base: Path, bad: bool) -> None:
    _classes(base)
    mount_tmpfs(base / "vol", "2m")
    if bad:  # another build's artefacts filled the output volume
        fill_up(base / "vol")


# --- bzip2recover --------------------------------------------------------------------------------
def _bzip2recover_argv(b: Path) -> list[str]:
    return ["/usr/bin/bzip2recover", f"{b}/dumps/core.txt.bz2"]


def _damaged_archive(base: Path) -> None:
    _dirs(base, "dumps")
    rng = random.Random()
    text = "".join(f"{i:08d} {rng.getrandbits(96):024x} {rng.choice(('ok', 'retry', 'fail'))}\n"
                   for i in range(60_000))  # about 2.4 MB: three 900 kB blocks
    (base / "dumps" / "core.txt.bz2").write_bytes(bz2.compress(text.encode(), 9))


def bzip2recover_block_left_over(base: Path, bad: bool) -> None:
    _damaged_archive(base)
    if bad:  # an earlier recovery attempt left its first block
        (base / "dumps" / "rec00001core.txt.bz2").write_bytes(b"BZh9")


# --- iconvconfig -o ------------------------------------------------------------------------------
def _iconvconfig_argv(b: Path) -> list[str]:
    return ["/usr/sbin/iconvconfig", "-o", f"{b}/cache/gconv-modules.cache"]


def iconvconfig_cache_read_only(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "cache", "1m", readonly=bad)  # the bad image's cache volume is read-only


# --- localedef -----------------------------------------------------------------------------------
def _localedef_argv(b: Path) -> list[str]:
    return ["/usr/bin/localedef", "-i", "fr_FR", "-f", "UTF-8", f"{b}/vol/fr_FR.UTF-8"]


def localedef_volume_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "vol", "4m")
    if bad:  # the locales volume is full
        fill_up(base / "vol")


# --- the set's C programs --------------------------------------------------------------------------
def _shard_argv(b: Path) -> list[str]:
    return _sh(f'ulimit -f "$(cat {b}/fsize)"; exec {build() / "tb27-shard"} {b}')


def shard_file_size_limit(base: Path, bad: bool) -> None:
    _dirs(base, "tables")
    # the bad host's job runs under a 2 MiB file-size limit (4096 blocks of 512 bytes)
    write(base / "fsize", "4096\n" if bad else "unlimited\n")


def _kv_argv(b: Path) -> list[str]:
    return [str(build() / "tb27-kv"), str(b)]


def _wal(base: Path) -> None:
    _dirs(base, "wal", "data")
    rng = random.Random()
    for r in range(3):
        write(base / "wal" / f"range-{r}.log", "".join(
            f"k{r}-{i:06d}\t{rng.getrandbits(64):016x}\n" for i in range(rng.randint(3000, 6000))))


def kv_segment_left_over(base: Path, bad: bool) -> None:
    _wal(base)
    if bad:  # a crashed compaction left segment 2 in place
        write(base / "data" / "seg-0002", "k1-000000\tdeadbeef\n")


REAL_TWENTYSEVENTH: list[Scenario] = [
    Scenario("t27_prove_state_read_only", "prove -j 3 --state=save (parallel perl tests)", _prove_argv,
             prove_state_read_only, OPEN, "EROFS", lambda b: f"{b}/state/prove.state", teardown=_umount("state"),
             description="prove saving its test state onto a volume remounted read-only after the tests ran"),
    Scenario("t27_prove_nofile_limit", "prove -j 8 (sh: under ulimit -n)", _prove_nofile_argv, prove_nofile_limit,
             frozenset({"pipe2", "pipe"}), "EMFILE", lambda b: NO_PATH,
             description="prove opening a pipe per parallel test under a lowered nofile limit"),
    Scenario("t27_pod2man_section_is_file", "pod2man (perl: Pod::Man)", _pod2man_argv, pod2man_section_is_file,
             OPEN, "ENOTDIR", lambda b: f"{b}/man/man1/tb27-tool.1",
             description="pod2man rendering a page into a man section a wrong copy made a file"),
    Scenario("t27_compileall_plugins_root_owned", "python3 -m compileall -j 4 (worker processes, as the job)",
             _compileall_argv, compileall_plugins_root_owned, MKDIR, "EACCES",
             lambda b: f"{b}/pkg/plugins/__pycache__", unprivileged=True,
             description="compileall's workers making __pycache__ in a subpackage a root-run step made"),
    Scenario("t27_zipapp_release_root_owned", "python3 -m zipapp -p (as the job)", _zipapp_argv,
             zipapp_release_root_owned, frozenset({"chmod", "fchmodat", "fchmodat2", "fchmod"}), "EPERM",
             lambda b: f"{b}/dist/tb27.pyz", unprivileged=True,
             description="zipapp rewriting an archive a root release step left world-writable, then chmod +x"),
    Scenario("t27_xgettext_listed_source_gone", "xgettext -f POTFILES -D src", _xgettext_argv,
             xgettext_listed_source_gone, OPEN, "ENOENT", lambda b: f"{b}/src/store.c",
             description="xgettext extracting strings from a source POTFILES lists but a refactor deleted"),
    Scenario("t27_msgcat_shared_loops", "msgcat --use-first (catalogues merged)", _msgcat_argv, msgcat_shared_loops,
             OPEN, "ELOOP", lambda b: f"{b}/po/shared.po",
             description="msgcat merging catalogues, the shared one a symlink that loops"),
    Scenario("t27_gencat_nls_root_owned", "gencat (catgets catalogue, as the job)", _gencat_argv,
             gencat_nls_root_owned, frozenset({"creat", "openat", "open"}), "EACCES", lambda b: f"{b}/nls/tb27.cat",
             unprivileged=True,
             description="gencat creating a message catalogue in an nls directory a root install step made"),
    Scenario("t27_bc_library_missing", "bc -q (a function library and a job)", _bc_argv, bc_library_missing, OPEN,
             "ENOENT", lambda b: f"{b}/lib/finance.bc",
             description="bc loading a rate job's function library a deploy did not ship"),
    Scenario("t27_jar_volume_full", "jar cf (a JVM: temporary in /tmp, sendfile copy)", _jar_argv, jar_volume_full,
             frozenset({"sendfile", "sendfile64", "copy_file_range", "write"}), "ENOSPC",
             lambda b: f"{b}/vol/tb27-app.jar", teardown=_umount("vol"),
             description="jar copying its packed classes onto a full output volume"),
    Scenario("t27_bzip2recover_block_left_over", "bzip2recover (O_EXCL block files)", _bzip2recover_argv,
             bzip2recover_block_left_over, OPEN, "EEXIST", lambda b: f"{b}/dumps/rec00001core.txt.bz2",
             description="bzip2recover splitting a damaged archive whose first block an earlier attempt left"),
    Scenario("t27_iconvconfig_cache_read_only", "iconvconfig -o (mkstemp temporary)", _iconvconfig_argv,
             iconvconfig_cache_read_only, OPEN, "EROFS", lambda b: f"{b}/cache/gconv-modules.cache.*",
             teardown=_umount("cache"),
             description="iconvconfig writing the gconv module cache into a read-only image volume"),
    Scenario("t27_localedef_volume_full", "localedef -i fr_FR -f UTF-8 (exits 0)", _localedef_argv,
             localedef_volume_full, WRITE, "ENOSPC", lambda b: f"{b}/vol/fr_FR.UTF-8/LC_*", teardown=_umount("vol"),
             description="localedef compiling a locale onto a full volume: every category fails, the exit is 0"),
    Scenario("t27_shard_file_size_limit", "tb27-shard (C: four threads pwrite shards, sh: ulimit -f)", _shard_argv,
             shard_file_size_limit, WRITE, "EFBIG", lambda b: f"{b}/tables/events.tbl",
             description="four threads pwrite()ing 1 MiB shards of a table past a 2 MiB file-size limit"),
    Scenario("t27_kv_segment_left_over", "tb27-kv (C: threads, renameat2 RENAME_NOREPLACE)", _kv_argv,
             kv_segment_left_over, frozenset({"renameat2", "renameat", "rename"}), "EEXIST",
             lambda b: f"{b}/data/seg-0002*",
             description="a compaction's threads moving segments into place, one left by a crashed compaction"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _prove_many(base: Path, run: int) -> None:  # noqa: ARG001
    _prove_tests(base, 6)
    _dirs(base, "state")


def _jar_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _classes(base)
    _dirs(base, "vol")


def _iconvconfig_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "cache")


def _compileall_root(base: Path, run: int) -> None:  # noqa: ARG001
    _package(base)


QUIET_TWENTYSEVENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t27_compileall_workers", _compileall_argv, _compileall_root,
                  description="compileall's four worker processes taking modules in any order"),
    NoAnomalyCase("t27_prove_parallel_tempfiles", _prove_argv, _prove_many,
                  description="prove's six tests in three parallel perl children, File::Temp names, random sleeps"),
    NoAnomalyCase("t27_jar_jvm_threads", _jar_argv, _jar_disk,
                  description="jar's JVM threads, its /tmp temporary's random name renamed into place"),
    NoAnomalyCase("t27_iconvconfig_temp_name", _iconvconfig_argv, _iconvconfig_disk,
                  description="iconvconfig's mkstemp temporary, a new name every run"),
    NoAnomalyCase("t27_bzip2recover_random_blocks", _bzip2recover_argv, _good(bzip2recover_block_left_over),
                  description="bzip2recover splitting an archive of random text into its blocks"),
    NoAnomalyCase("t27_venv_tree", _venv_argv, _venv_dir,
                  description="venv making its tree, symlinks and scripts"),
    NoAnomalyCase("t27_shard_thread_order", _shard_argv, _good(shard_file_size_limit),
                  description="four threads pwrite()ing their shards in any interleaving"),
    NoAnomalyCase("t27_kv_thread_order", _kv_argv, _good(kv_segment_left_over),
                  description="three threads compacting ranges of different sizes, finishing in any order"),
]


def quiet_teardown() -> None:
    """What a noise case may leave: nothing (no noise case mounts or starts a server)."""


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
