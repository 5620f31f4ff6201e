"""A twenty-fourth set of real programs with one real fault each: **build, packaging and
provisioning tools** no earlier set ran, and three small C programs of the set's own (threads,
inotify, copy_file_range). Each case is a step of a build or a host's provisioning:

- **build tools**: ``ninja`` (a dirty scan stat-ing every input and output before starting its
  parallel jobs), ``ar`` (an archive of objects), ``strip`` (rewrites a binary through a
  random-named temporary beside it), ``objcopy`` (splits out debug info), ``cmake -P`` (a
  generator script), ``tic`` (compiles a terminfo entry into a letter directory);
- **packaging and provisioning**: ``mke2fs -d`` (populates an ext4 image from a tree, walking
  it with chdir), ``gpg --import`` (a keybox under dotlocks named by heap address and pid),
  ``keytool -importcert`` (a JVM), ``systemd-tmpfiles --create`` (openat O_PATH chains and
  mkdirat), ``mkswap`` (a swap file), ``xxd -r`` (a firmware blob written through a symlink),
  ``tac`` (a pipe spooled to a random-named temporary in $TMPDIR), ``script`` (a pty session
  logged to a file);
- **the set's C programs** (compiled by `build()`): ``tb24-watch`` (inotify on a spool
  directory, a writer thread dropping files), ``tb24-parts`` (four threads reserving their part
  files with posix_fallocate), ``tb24-publish`` (copy_file_range without a read/write fallback).

Faults (``t24_`` cases), decided from what ``strace -f`` showed before the differ ran: a source
file the checkout lost (ninja's stat ENOENT), an object path a botched sync left a directory
amid ninja's four parallel compiles (the assembler's openat EISDIR), an object missing from ``ar``'s list (ENOENT), a
binary directory the job's account may not write (strip's temporary: openat EACCES), a full
tmpfs (objcopy's write ENOSPC, tac's spool write ENOSPC, script's log write ENOSPC, the C
threads' fallocate ENOSPC), a generator output directory whose parent is a file (cmake's
mkdir ENOTDIR), a file of an image's tree private to root (mke2fs's openat EACCES), a keybox
root rewrote private (gpg's openat EACCES), a truststore private to root (keytool -list as
the job: openat EACCES), a homedir on a full volume (gpg's first write, into its lock file named
by heap address and pid: ENOSPC), a truststore path a templating step made a
directory (keytool's openat EISDIR), a read-only volume (systemd-tmpfiles' mkdirat EROFS,
mkswap's openat EROFS), a terminfo letter directory a root install left (tic's access
EACCES), a firmware link looping on itself (xxd's openat ELOOP), a spool directory that is a
file (inotify_add_watch ENOTDIR), a publish directory that became another file system
(copy_file_range EXDEV).

Noise cases (``QUIET_TWENTYFOURTH``) are good runs alone: ninja's parallel job order and
pids, gpg's dotlock names, tac's and strip's random temporary names, mke2fs's random UUID and
hash seed, script's pty and children, a JVM's threads, inotify events batched differently,
threads finishing in any order, a cmake script globbing a varying number of random-named parts.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .files import chown_nobody
from .harness import ROOT, NoAnomalyCase, Scenario

NOBODY_UID = 65534
OPEN = frozenset({"openat", "open", "openat2"})
STAT = frozenset({"newfstatat", "stat", "statx", "fstatat", "lstat", "access", "faccessat", "faccessat2"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
MKDIR = frozenset({"mkdir", "mkdirat"})

WATCH_C = r'''
/* tb24-watch: watch a spool directory for finished files (inotify); a writer thread drops them */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>
static char dir[4096];
static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < 6; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/job%d.txt", dir, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) { perror(p); exit(3); }
        dprintf(fd, "job %d\n", i);
        close(fd);
        usleep((rand() % 3000) + 200);
    }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    srand(getpid());
    snprintf(dir, sizeof dir, "%s/spool/incoming", argv[1]);
    int in = inotify_init1(IN_CLOEXEC);
    if (in < 0) { perror("inotify_init1"); return 1; }
    if (inotify_add_watch(in, dir, IN_CLOSE_WRITE | IN_ONLYDIR) < 0) { perror(dir); return 1; }
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    int seen = 0;
    char buf[8192] __attribute__((aligned(8)));
    while (seen < 6) {
        struct pollfd pf = {in, POLLIN, 0};
        if (poll(&pf, 1, 5000) <= 0) { fprintf(stderr, "timeout\n"); return 1; }
        ssize_t n = read(in, buf, sizeof buf);
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            seen++;
            p += sizeof *ev + ev->len;
        }
    }
    pthread_join(t, NULL);
    char out[4200];
    snprintf(out, sizeof out, "%s/out/seen", argv[1]);
    FILE *f = fopen(out, "w");
    if (!f) { perror(out); return 1; }
    fprintf(f, "%d\n", seen);
    fclose(f);
    return 0;
}
'''

PARTS_C = r'''
/* tb24-parts: four threads reserve (posix_fallocate) and write their part files */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *base;
static void *part(void *arg) {
    long i = (long)arg;
    char p[4200];
    snprintf(p, sizeof p, "%s/out/part-%ld.bin", base, i);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { perror(p); exit(1); }
    off_t size = 64 * 1024 * (i + 1);
    int e = posix_fallocate(fd, 0, size);
    if (e) { fprintf(stderr, "%s: fallocate: %s\n", p, strerror(e)); exit(1); }
    char buf[4096];
    memset(buf, 'a' + i, sizeof buf);
    for (off_t o = 0; o < size; o += sizeof buf)
        if (pwrite(fd, buf, sizeof buf, o) < 0) { perror(p); exit(1); }
    close(fd);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    base = argv[1];
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, part, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
'''

PUBLISH_C = r'''
/* tb24-publish: copy a staged blob into the publish directory with copy_file_range (no fallback) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/stage/blob.bin", argv[1]);
    snprintf(dst, sizeof dst, "%s/pub/blob.bin", argv[1]);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) { perror(src); return 1; }
    struct stat st;
    fstat(in, &st);
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) { perror(dst); return 1; }
    off_t left = st.st_size;
    while (left > 0) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
        if (n < 0) { perror("copy_file_range"); return 1; }
        if (n == 0) break;
        left -= n;
    }
    fsync(out);
    close(out);
    close(in);
    return 0;
}
'''

PROG_C = "#include <stdio.h>\nstatic int table[64] = {1, 2, 3};\nint main(void) { printf(\"%d\\n\", table[1]); return 0; }\n"

# an ed25519 public key (exported once from a throwaway keyring): what gpg --import reads
KEY_ASC = """-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEaxMQSRYJKwYBBAHaRw8BAQdAZg3IFyayU3qfMYDD10Q68NsqFzP0qm6Oy1cJ
0mk8nke0CXQyNCA8dEB4PoiWBBMWCAA+FiEEk9CNarCfw9OuSuRA//9emaZqhdQF
AmsTEEkCGwMFCQPCZwAFCwkIBwIGFQoJCAsCBBYCAwECHgECF4AACgkQ//9emaZq
hdT88AD8Cpo3xsVwxUrXh/tUcWwAkTvF77E+XSHco5o4eaysgdEA+gPFFcvdzXQX
Db1bpYB+CvYvX9iIbzvlR7MqaRrPYJsN
=P/RC
-----END PGP PUBLIC KEY BLOCK-----
"""


@functools.cache
def build() -> Path:
    """Compile the set's programs once per process: the three C programs, a small binary with
    debug info (strip, objcopy), three objects (ar); and a CA certificate (keytool). Returns the
    (world-readable) build directory."""
    out = ROOT / "_tb24"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    run = functools.partial(subprocess.run, check=True, capture_output=True)
    for name, src in (("tb24-watch", WATCH_C), ("tb24-parts", PARTS_C), ("tb24-publish", PUBLISH_C),
                      ("prog", PROG_C)):
        write(out / f"{name}.c", src)
        run(["cc", "-O2", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")])
    for obj in ("a", "b", "c"):
        write(out / f"{obj}.c", f"int {obj}_value(void) {{ return '{obj}'; }}\n")
        run(["cc", "-c", "-o", str(out / f"{obj}.o"), str(out / f"{obj}.c")])
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", str(out / "ca.key"), "-out", str(out / "ca.pem"), "-subj", "/CN=tracebase t24 CA",
         "-days", "3650"])
    write(out / "key.asc", KEY_ASC)
    run(["keytool", "-importcert", "-noprompt", "-alias", "tb24ca", "-file", str(out / "ca.pem"),
         "-keystore", str(out / "trust.p12"), "-storepass", "changeit"])
    for p in [out, *out.rglob("*")]:
        p.chmod(0o755 if p.is_dir() or os.access(p, os.X_OK) and p.suffix == "" else 0o644)
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


# --- ninja -----------------------------------------------------------------------------------
NINJA_RULES = """rule cc
  command = cc -O1 -c $in -o $out
rule ar
  command = rm -f $out && ar rcs $out $in
"""


def _ninja_tree(base: Path, names: list[str]) -> None:
    _dirs(base, "src")
    lines = [NINJA_RULES]
    for n in names:
        write(base / "src" / f"{n}.c", f"int {n}_entry(int x) {{ return x * {len(n)} + {random.randrange(100)}; }}\n")
        lines.append(f"build obj/{n}.o: cc src/{n}.c\n")
    lines.append(f"build lib/libjob.a: ar {' '.join(f'obj/{n}.o' for n in names)}\n")
    write(base / "build.ninja", "".join(lines))


def ninja_source_lost(base: Path, bad: bool) -> None:
    _ninja_tree(base, ["main", "util", "io"])
    if bad:  # the checkout lost one source file (a sparse checkout's pattern missed it)
        (base / "src" / "util.c").unlink()


def _ninja(*flags: str):
    def argv(b: Path) -> list[str]:
        return ["/usr/bin/ninja", *flags, "-C", str(b)]
    return argv


def ninja_object_path_is_dir(base: Path, bad: bool) -> None:
    _ninja_tree(base, ["main", "util", "io", "net", "log", "cfg", "db", "auth"])
    if bad:  # a botched sync left a directory where one object goes
        _dirs(base, "obj/net.o")


# --- ar ----------------------------------------------------------------------------------------
def _ar_argv(b: Path) -> list[str]:
    return ["/usr/bin/ar", "rcs", f"{b}/lib/libjob.a", f"{b}/obj/a.o", f"{b}/obj/b.o", f"{b}/obj/c.o"]


def ar_object_missing(base: Path, bad: bool) -> None:
    _dirs(base, "obj", "lib")
    for o in ("a", "b", "c"):
        if not (bad and o == "c"):  # the compile step of c.o was skipped (its rule failed silently)
            shutil.copy(build() / f"{o}.o", base / "obj" / f"{o}.o")


# --- strip / objcopy ---------------------------------------------------------------------------
def strip_dir_not_writable(base: Path, bad: bool) -> None:
    _dirs(base, "bin", owner_nobody=not bad)  # the bad host's bin/ was made by a root install
    shutil.copy(build() / "prog", base / "bin" / "prog")
    chown_nobody(base / "bin" / "prog")  # the job's own binary, writable by it


def objcopy_debug_full(base: Path, bad: bool) -> None:
    _dirs(base, "bin")
    shutil.copy(build() / "prog", base / "bin" / "prog")
    mount_tmpfs(base / "out", "1m")
    if bad:  # the debug-symbol volume is full
        fill_up(base / "out")


# --- tac ---------------------------------------------------------------------------------------
def _tac_argv(b: Path) -> list[str]:
    # from a pipe, tac spools its input to a temporary file in $TMPDIR before reversing it
    return ["/bin/sh", "-c", f"cat {b}/in/events.log | TMPDIR={b}/tmp /usr/bin/tac > {b}/out/reversed.log"]


def _tac_input(base: Path) -> None:
    _dirs(base, "in", "out")
    rng = random.Random()
    write(base / "in" / "events.log", "".join(f"{i} event {rng.randrange(10**6)}\n" for i in range(20000)))


def tac_tmpdir_full(base: Path, bad: bool) -> None:
    _tac_input(base)
    mount_tmpfs(base / "tmp", "2m")
    if bad:  # the scratch volume is full
        fill_up(base / "tmp")


# --- mke2fs -d -----------------------------------------------------------------------------------
def _image_tree(base: Path) -> None:
    _dirs(base, "tree/etc", "tree/bin", "tree/var/lib/app")
    write(base / "tree" / "etc" / "hosts", "127.0.0.1 localhost\n")
    write(base / "tree" / "etc" / "app.conf", "workers=4\n")
    write(base / "tree" / "var" / "lib" / "app" / "state", "ready\n")
    shutil.copy(build() / "prog", base / "tree" / "bin" / "prog")


def mke2fs_tree_private(base: Path, bad: bool) -> None:
    _image_tree(base)
    _dirs(base, "img", owner_nobody=True)
    if bad:  # a root-run step rewrote the config private before the image build
        (base / "tree" / "etc" / "app.conf").chmod(0o600)


def _mke2fs_argv(b: Path) -> list[str]:
    return ["/usr/sbin/mke2fs", "-q", "-F", "-t", "ext4", "-d", f"{b}/tree", f"{b}/img/root.img", "8M"]


# --- cmake -P ----------------------------------------------------------------------------------
GEN_CMAKE = """file(GLOB headers "${BASE}/src/*.h")
list(LENGTH headers n)
file(MAKE_DIRECTORY "${BASE}/build/gen/include")
file(WRITE "${BASE}/build/gen/include/config.h" "#define TB24_HEADERS ${n}\\n")
file(COPY ${headers} DESTINATION "${BASE}/build/gen/include")
"""


def cmake_gen_parent_file(base: Path, bad: bool) -> None:
    _dirs(base, "src", "build")
    write(base / "gen.cmake", GEN_CMAKE)
    for h in ("api", "io", "util"):
        write(base / "src" / f"{h}.h", f"#pragma once\nint {h}_init(void);\n")
    if bad:  # an older generator wrote build/gen as a single file
        write(base / "build" / "gen", "// generated v1\n")


def _cmake_argv(b: Path) -> list[str]:
    return ["/usr/bin/cmake", f"-DBASE={b}", "-P", f"{b}/gen.cmake"]


# --- gpg --import -------------------------------------------------------------------------------
def _keybox(base: Path) -> None:
    """A keybox made by an earlier gpg run (an empty pubring.kbx and a trustdb)."""
    (base / "gnupg").mkdir(mode=0o700)
    _keybox_in(base)


def _keybox_in(base: Path) -> None:
    home = base / "gnupg"
    subprocess.run(["gpg", "--homedir", str(home), "--batch", "--no-autostart", "--list-keys"],
                   capture_output=True, check=False)
    write(base / "key.asc", KEY_ASC)


def gpg_keybox_private(base: Path, bad: bool) -> None:
    _keybox(base)
    home = base / "gnupg"
    for p in [home, *home.iterdir()]:
        chown_nobody(p)
    if bad:  # root ran gpg on the job's homedir and left the keybox its own, private
        os.chown(home / "pubring.kbx", 0, 0)
        (home / "pubring.kbx").chmod(0o600)


def gpg_homedir_full(base: Path, bad: bool) -> None:
    (base / "gnupg").mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tracebase-test", str(base / "gnupg")],
                   check=True)
    _keybox_in(base)
    if bad:  # the homedir's volume is full (a runaway log in it)
        fill_up(base / "gnupg")


def _gpg_argv(b: Path) -> list[str]:
    return ["/usr/bin/gpg", "--homedir", f"{b}/gnupg", "--batch", "--no-autostart", "--import", f"{b}/key.asc"]


# --- script -----------------------------------------------------------------------------------------
def _script_argv(b: Path) -> list[str]:
    return ["/usr/bin/script", "-q", "-e", "-c", f"seq 1 3000; ls {b}", f"{b}/logs/session.log"]


def script_log_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "logs", "1m")
    if bad:  # the session-log volume is full
        fill_up(base / "logs")


# --- keytool ----------------------------------------------------------------------------------------
def _jvm_sweep() -> None:
    """Remove the hsperfdata files of JVMs that are gone: every HotSpot start sweeps
    /tmp/hsperfdata_<user>/ and deletes the files of dead JVMs it finds, which an earlier
    killed JVM would leave for one run only (the test machine's difference, not the program's)."""
    for f in glob.glob("/tmp/hsperfdata_*/*"):
        name = os.path.basename(f)
        if not name.isdigit():
            continue
        try:
            os.kill(int(name), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(f)
        except OSError:
            pass


def _keytool_argv(b: Path) -> list[str]:
    _jvm_sweep()
    return ["/usr/bin/keytool", "-importcert", "-noprompt", "-alias", "tb24ca", "-file", str(build() / "ca.pem"),
            "-keystore", f"{b}/ks/trust.p12", "-storepass", "changeit"]


def _keytool_list_argv(b: Path) -> list[str]:
    _jvm_sweep()
    return ["/usr/bin/keytool", "-list", "-keystore", f"{b}/ks/trust.p12", "-storepass", "changeit"]


def keytool_store_private(base: Path, bad: bool) -> None:
    _dirs(base, "ks")
    shutil.copy(build() / "trust.p12", base / "ks" / "trust.p12")
    # the bad host's truststore was rewritten by root with a private mode
    (base / "ks" / "trust.p12").chmod(0o600 if bad else 0o644)


def keytool_store_is_dir(base: Path, bad: bool) -> None:
    _dirs(base, "ks")
    if bad:  # a templating step (a volume mounted at the file's path) made trust.p12 a directory
        _dirs(base, "ks/trust.p12")


# --- systemd-tmpfiles ---------------------------------------------------------------------------------
def _tmpfiles_conf(b: Path) -> str:
    return (f"d {b}/var/app 0755 - - -\n"
            f"d {b}/var/app/cache 0750 - - -\n"
            f"f {b}/var/app/state 0644 - - - init\n"
            f"L {b}/var/app/current - - - - {b}/var/app/cache\n")


def tmpfiles_var_read_only(base: Path, bad: bool) -> None:
    _dirs(base, "tmpfiles")
    write(base / "tmpfiles" / "app.conf", _tmpfiles_conf(base))
    mount_tmpfs(base / "var", "1m", readonly=bad)  # the bad host's /var came up read-only


def _tmpfiles_argv(b: Path) -> list[str]:
    return ["/usr/bin/systemd-tmpfiles", "--create", f"{b}/tmpfiles/app.conf"]


# --- mkswap ------------------------------------------------------------------------------------------
def mkswap_volume_read_only(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "swap", "8m")
    subprocess.run(["dd", "if=/dev/zero", f"of={base}/swap/swapfile", "bs=1M", "count=4"], capture_output=True,
                   check=True)
    (base / "swap" / "swapfile").chmod(0o600)
    if bad:  # the volume was remounted read-only after an I/O error
        subprocess.run(["mount", "-o", "remount,ro", str(base / "swap")], check=True)


def _mkswap_argv(b: Path) -> list[str]:
    return ["/usr/sbin/mkswap", "-L", "tb24swap", f"{b}/swap/swapfile"]


# --- tic --------------------------------------------------------------------------------------------
TERMINFO = r"""tb24term|tracebase test terminal,
	am, xenl,
	cols#80, lines#24, colors#8,
	bel=^G, bold=\E[1m, clear=\E[H\E[2J, cr=\r, cup=\E[%i%p1%d;%p2%dH,
	ind=\n, kbs=^H, sgr0=\E[0m,
	Tc,
"""


def tic_letter_dir_root(base: Path, bad: bool) -> None:
    write(base / "tb24.ti", TERMINFO)
    _dirs(base, "terminfo", owner_nobody=True)
    _dirs(base, "terminfo/t", owner_nobody=not bad)  # a root-run tic made the letter directory


def _tic_argv(b: Path) -> list[str]:
    return ["/usr/bin/tic", "-x", "-o", f"{b}/terminfo", f"{b}/tb24.ti"]


# --- xxd -r -------------------------------------------------------------------------------------------
def xxd_link_loop(base: Path, bad: bool) -> None:
    _dirs(base, "out")
    rng = random.Random()
    blob = bytes(rng.randrange(256) for _ in range(512))
    write(base / "fw.hex", "".join(f"{i:08x}: {blob[i:i + 16].hex()}\n" for i in range(0, len(blob), 16)))
    write(base / "out" / "fw-2.bin", "")
    (base / "out" / "fw.bin").symlink_to("fw-2.bin")
    if bad:  # a botched rollback pointed the release's link back at the current one
        (base / "out" / "fw-2.bin").unlink()
        (base / "out" / "fw-2.bin").symlink_to("fw.bin")


def _xxd_argv(b: Path) -> list[str]:
    return ["/usr/bin/xxd", "-r", f"{b}/fw.hex", f"{b}/out/fw.bin"]


# --- the set's C programs ---------------------------------------------------------------------------
def spool_is_file(base: Path, bad: bool) -> None:
    _dirs(base, "spool", "out")
    if bad:  # an older version spooled into one file at the directory's name
        write(base / "spool" / "incoming", "job0\n")
    else:
        _dirs(base, "spool/incoming")


def parts_volume_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "out", "4m")
    if bad:  # another job's parts filled the volume
        fill_up(base / "out")


def publish_other_fs(base: Path, bad: bool) -> None:
    _dirs(base, "stage")
    write(base / "stage" / "blob.bin", "z" * 300_000)
    if bad:  # the publish directory became a mount of its own
        mount_tmpfs(base / "pub", "4m")
    else:
        _dirs(base, "pub")


REAL_TWENTYFOURTH: list[Scenario] = [
    Scenario("t24_ninja_source_lost", "ninja (dirty scan, parallel cc)", _ninja(), ninja_source_lost, STAT, "ENOENT",
             lambda b: f"{b}/src/util.c",
             description="ninja building from a checkout that lost one source file"),
    Scenario("t24_ninja_object_path_is_directory", "ninja -j4 (cc, as: an object path a directory)", _ninja("-j4"),
             ninja_object_path_is_dir, OPEN, "EISDIR", lambda b: f"{b}/obj/net.o",
             description="ninja's four parallel compiles, one whose object path a botched sync left as a directory"),
    Scenario("t24_ar_object_missing", "ar rcs (three objects)", _ar_argv, ar_object_missing, OPEN | STAT, "ENOENT",
             lambda b: f"{b}/obj/c.o",
             description="ar archiving three objects, one never compiled"),
    Scenario("t24_strip_bin_dir_root_owned", "strip (in place, as the job)",
             lambda b: ["/usr/bin/strip", f"{b}/bin/prog"], strip_dir_not_writable, OPEN, "EACCES",
             lambda b: f"{b}/bin/st*", unprivileged=True,
             description="strip rewriting a binary through a temporary in a directory the job may not write"),
    Scenario("t24_objcopy_debug_volume_full", "objcopy --only-keep-debug",
             lambda b: ["/usr/bin/objcopy", "--only-keep-debug", f"{b}/bin/prog", f"{b}/out/prog.debug"],
             objcopy_debug_full, WRITE, "ENOSPC", lambda b: f"{b}/out/prog.debug", teardown=_umount("out"),
             description="objcopy splitting debug info onto a full volume"),
    Scenario("t24_tac_spool_tmpdir_full", "tac (from a pipe, TMPDIR)", _tac_argv, tac_tmpdir_full, WRITE, "ENOSPC",
             lambda b: f"{b}/tmp/tac*", teardown=_umount("tmp"),
             description="tac spooling a piped log to a random-named temporary on a full TMPDIR"),
    Scenario("t24_mke2fs_tree_file_private", "mke2fs -d (as the job)", _mke2fs_argv, mke2fs_tree_private, OPEN,
             "EACCES", lambda b: f"{b}/tree/*app.conf", unprivileged=True,
             description="mke2fs populating an image from a tree with one file private to root"),
    Scenario("t24_cmake_gen_parent_is_file", "cmake -P file(MAKE_DIRECTORY)", _cmake_argv, cmake_gen_parent_file,
             MKDIR | STAT, "ENOTDIR", lambda b: f"{b}/build/gen/include",
             description="a cmake generator script making its include directory under a path an old version wrote as a file"),
    Scenario("t24_gpg_keybox_private_to_root", "gpg --import (as the job)", _gpg_argv, gpg_keybox_private, OPEN,
             "EACCES", lambda b: f"{b}/gnupg/pubring.kbx", unprivileged=True,
             description="gpg importing a key into a homedir whose keybox root left private"),
    Scenario("t24_gpg_homedir_volume_full", "gpg --import (dotlock on a full homedir)", _gpg_argv, gpg_homedir_full,
             WRITE, "ENOSPC", lambda b: f"{b}/gnupg/.#lk0x*", teardown=_umount("gnupg"),
             description="gpg importing a key into a homedir on a full volume: its pid-named lock file's write"),
    Scenario("t24_script_session_log_full", "script -c (pty session log)", _script_argv, script_log_full, WRITE,
             "ENOSPC", lambda b: f"{b}/logs/session.log", teardown=_umount("logs"),
             description="script logging a pty session onto a full volume"),
    Scenario("t24_keytool_truststore_is_directory", "keytool -importcert (JVM)", _keytool_argv, keytool_store_is_dir,
             OPEN, "EISDIR", lambda b: f"{b}/ks/trust.p12",
             description="keytool importing a CA into a truststore path that is a directory"),
    Scenario("t24_keytool_truststore_private", "keytool -list (JVM, as the job)", _keytool_list_argv,
             keytool_store_private, OPEN, "EACCES", lambda b: f"{b}/ks/trust.p12", unprivileged=True,
             description="keytool (a JVM) listing a truststore root rewrote private"),
    Scenario("t24_tmpfiles_var_read_only", "systemd-tmpfiles --create", _tmpfiles_argv, tmpfiles_var_read_only, MKDIR,
             "EROFS", lambda b: f"{b}/var/app", teardown=_umount("var"),
             description="systemd-tmpfiles creating an application's directories on a read-only /var"),
    Scenario("t24_mkswap_volume_read_only", "mkswap (swap file)", _mkswap_argv, mkswap_volume_read_only, OPEN, "EROFS",
             lambda b: f"{b}/swap/swapfile", teardown=_umount("swap"),
             description="mkswap formatting a swap file on a volume remounted read-only"),
    Scenario("t24_tic_letter_dir_root_owned", "tic -o (as the job)", _tic_argv, tic_letter_dir_root, ACCESS, "EACCES",
             lambda b: f"{b}/terminfo/t", unprivileged=True,
             description="tic compiling an entry into a terminfo letter directory a root install made"),
    Scenario("t24_xxd_firmware_link_loop", "xxd -r (through a symlink)", _xxd_argv, xxd_link_loop, OPEN, "ELOOP",
             lambda b: f"{b}/out/fw.bin",
             description="xxd writing a firmware blob through a release link that loops back on itself"),
    Scenario("t24_watch_spool_is_file", "tb24-watch (C: inotify, writer thread)", _c("tb24-watch"), spool_is_file,
             frozenset({"inotify_add_watch"}), "ENOTDIR", lambda b: f"{b}/spool/incoming",
             description="an inotify watcher whose spool directory an old version left as a file"),
    Scenario("t24_parts_fallocate_volume_full", "tb24-parts (C: four threads, posix_fallocate)", _c("tb24-parts"),
             parts_volume_full, frozenset({"fallocate"}), "ENOSPC", lambda b: f"{b}/out/part-*.bin",
             teardown=_umount("out"),
             description="four threads reserving their part files with posix_fallocate on a full volume"),
    Scenario("t24_publish_copy_range_cross_fs", "tb24-publish (C: copy_file_range)", _c("tb24-publish"),
             publish_other_fs, frozenset({"copy_file_range"}), "EXDEV", lambda b: f"{b}/stage/blob.bin",
             teardown=_umount("pub"),
             description="copy_file_range without a fallback into a publish directory on another file system"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _ninja_wide(base: Path, run: int) -> None:  # noqa: ARG001
    _ninja_tree(base, ["main", "util", "io", "net", "log", "cfg", "db", "auth", "cache", "http"])


def _strip_three(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "bin")
    for n in ("one", "two", "three"):
        shutil.copy(build() / "prog", base / "bin" / n)


def _tac_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _tac_input(base)
    _dirs(base, "tmp")


def _gpg_fresh(base: Path, run: int) -> None:  # noqa: ARG001
    (base / "gnupg").mkdir(mode=0o700)
    write(base / "key.asc", KEY_ASC)


def _mke2fs_root(base: Path, run: int) -> None:  # noqa: ARG001
    _image_tree(base)
    _dirs(base, "img")


CMAKE_MANIFEST = """file(GLOB parts "${BASE}/in/*.part")
set(total 0)
foreach(p IN LISTS parts)
  file(READ "${p}" body)
  string(LENGTH "${body}" n)
  math(EXPR total "${total} + ${n}")
  get_filename_component(name "${p}" NAME)
  file(APPEND "${BASE}/out/manifest.txt" "${name} ${n}\\n")
endforeach()
string(RANDOM LENGTH 8 tag)
file(WRITE "${BASE}/out/total.txt" "${total} ${tag}\\n")
"""


def _cmake_random_parts(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "in", "out")
    write(base / "gen.cmake", CMAKE_MANIFEST)
    rng = random.Random()
    for _ in range(rng.randint(8, 14)):
        write(base / "in" / f"{rng.getrandbits(40):010x}.part", "p" * rng.randint(1, 3000))


def _script_out(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "logs")


QUIET_TWENTYFOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t24_ninja_parallel_jobs", _ninja("-j4"), _ninja_wide,
                  description="ninja running ten compiles four at a time: job order and pids vary"),
    NoAnomalyCase("t24_strip_temp_names", lambda b: ["/usr/bin/strip", f"{b}/bin/one", f"{b}/bin/two", f"{b}/bin/three"],
                  _strip_three, description="strip rewriting three binaries through random-named temporaries"),
    NoAnomalyCase("t24_tac_spool_names", _tac_argv, _tac_disk,
                  description="tac spooling a pipe to a random-named temporary, input of varying content"),
    NoAnomalyCase("t24_gpg_dotlock_names", _gpg_argv, _gpg_fresh,
                  description="gpg creating a keybox and trustdb under dotlocks named by heap address and pid"),
    NoAnomalyCase("t24_mke2fs_random_uuid", _mke2fs_argv, _mke2fs_root,
                  description="mke2fs populating an image: random UUID and hash seed, times"),
    NoAnomalyCase("t24_cmake_glob_random_parts", _cmake_argv, _cmake_random_parts,
                  description="a cmake script globbing a varying number of random-named parts, a random tag"),
    NoAnomalyCase("t24_script_pty_session", lambda b: ["/usr/bin/script", "-q", "-e", "-c", f"seq 1 2000; ls {b}; date",
                                                        f"{b}/logs/session.log"], _script_out,
                  description="script relaying a pty session of three children: read sizes and pids vary"),
    NoAnomalyCase("t24_keytool_jvm_import", _keytool_argv, _good(keytool_store_is_dir),
                  description="keytool (a JVM) creating a truststore: threads, GC, hsperfdata by pid"),
    NoAnomalyCase("t24_watch_event_batches", _c("tb24-watch"), _good(spool_is_file),
                  description="an inotify watcher reading events in batches that vary with the writer's timing"),
    NoAnomalyCase("t24_parts_thread_order", _c("tb24-parts"), lambda b, r: _dirs(b, "out"),
                  description="four threads writing their parts in whatever order they run"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: every mount goes with its case's teardown, and gpg runs with
    --no-autostart (no agent left behind)."""


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
