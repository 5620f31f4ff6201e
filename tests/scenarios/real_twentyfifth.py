"""A twenty-fifth set of real programs with one real fault each: **file movers, archivers and
host plumbing** no earlier set ran, and three small C programs of the set's own (openat2,
renameat2, memfd/eventfd/sendfile). Each case is a step of a deploy, a backup or a host's
housekeeping:

- **moving and packing files**: ``rsync -a`` (a sender, a generator and a receiver process,
  each file received into a random-named ``.name.XXXXXX`` beside it), ``cpio -idm`` (an
  archive unpacked into a tree), ``pigz -p 4`` (four compressing threads and a writer),
  ``lzop`` (an output it refuses to overwrite), ``dpkg-deb -b`` (a package built through tar
  and xz children), ``ld -r`` (objects linked into one);
- **host plumbing**: ``socat`` and ``nc -U`` (a metrics push and a control-socket ping on unix
  sockets), ``logrotate`` (a rotation with a gzip child and a state file), ``systemd-sysusers
  --root`` (users written through ``.#group``/``.#passwd`` temporaries), ``update-alternatives``
  (links made through ``.dpkg-tmp`` names), ``tune2fs -L`` (an image's label);
- **text tools**: ``m4`` (a template's include path), ``dos2unix`` (rewrites through a
  random-named temporary beside the file), ``ed`` (an in-place edit), ``tee`` (a build log and
  its mirror), ``pr -m`` (twenty columns merged at once);
- **the set's C programs** (compiled by `build()`): ``tb25-beneath`` (three threads opening
  config fragments with openat2 RESOLVE_BENEATH), ``tb25-release`` (four threads publishing
  with renameat2 RENAME_NOREPLACE), ``tb25-sealed`` (a producer thread fills and seals a
  memfd, signals an eventfd; the main thread sendfile()s the blob out).

Faults (``t25_`` cases), decided from what ``strace -f`` showed before the differ ran: a
destination volume remounted read-only (rsync's receiver: openat of its temporary EROFS), an
unpack target whose ``etc`` a stray step made a file (cpio: newfstatat ENOTDIR), a metrics
agent that died leaving its socket file (socat's connect ECONNREFUSED), a control daemon that
never started (nc's connect ENOENT), a state directory a cleanup wiped (logrotate's O_CREAT
openat ENOENT, after the plain openat of the same path that fails in good runs too), an
include root left private (m4 as the job: openat EACCES), a full volume (pigz's writer
thread: write ENOSPC; dpkg-deb's write ENOSPC; systemd-sysusers' write of its ``.#group``
temporary ENOSPC; tb25-sealed's sendfile ENOSPC), an output a killed run left (lzop's O_EXCL
openat EEXIST), a directory a root install made (dos2unix's temporary: openat EACCES), an
image root left its own (tune2fs as the job: openat EACCES), an output path that is a
directory (ld's openat EISDIR, tee's openat EISDIR), a link directory not unpacked yet
(update-alternatives' symlink ENOENT), a config root owns (ed as the job: openat EACCES), a
descriptor limit (pr's openat EMFILE), a fragment that is a symlink out of the config root
(openat2 EXDEV), a stale published file (renameat2 EEXIST).

Noise cases (``QUIET_TWENTYFIFTH``) are good runs alone: rsync's random temporary names and
three processes, pigz's thread order, dpkg-deb's children and temporaries, logrotate's dated
names and gzip child, systemd-sysusers' random temporaries, dos2unix's random temporaries, an
nc round trip's timing, the C programs' threads finishing in any order and an eventfd wakeup.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import socket
import subprocess
import threading
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .files import chown_nobody
from .harness import ROOT, NoAnomalyCase, Scenario

NOBODY_UID = 65534
OPEN = frozenset({"openat", "open", "openat2"})
STAT = frozenset({"newfstatat", "stat", "statx", "fstatat", "lstat", "access", "faccessat", "faccessat2"})
WRITE = frozenset({"write", "pwrite64", "writev", "pwritev", "pwritev2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
CONNECT = frozenset({"connect"})

BENEATH_C = r'''
/* tb25-beneath: three loader threads open their config fragments with openat2(RESOLVE_BENEATH)
   under the service's config root, refusing any path that escapes it */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static int root;
static const char *names[] = {"net.conf", "db.conf", "log.conf"};
static void *load(void *arg) {
    const char *name = names[(long)arg];
    char rel[256];
    snprintf(rel, sizeof rel, "conf.d/%s", name);
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
    if (fd < 0) { perror(rel); exit(1); }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    return (void *)(long)(n < 0 ? -1 : n);
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/etc/svc", argv[1]);
    root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) { perror(dir); return 1; }
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, load, (void *)i);
    long total = 0;
    for (int i = 0; i < 3; i++) { void *r; pthread_join(t[i], &r); total += (long)r; }
    printf("%ld bytes of config\n", total);
    return 0;
}
'''

RELEASE_C = r'''
/* tb25-release: four threads stage their artefacts and publish each with
   renameat2(RENAME_NOREPLACE): a release never overwrites a published file */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *base;
static void *publish(void *arg) {
    long i = (long)arg;
    char tmp[4200], dst[4200];
    snprintf(tmp, sizeof tmp, "%s/stage/part-%ld.tmp", base, i);
    snprintf(dst, sizeof dst, "%s/release/part-%ld.bin", base, i);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { perror(tmp); exit(1); }
    char buf[8192];
    memset(buf, 'A' + (int)i, sizeof buf);
    for (int k = 0; k < 8; k++)
        if (write(fd, buf, sizeof buf) < 0) { perror(tmp); exit(1); }
    fsync(fd);
    close(fd);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) < 0) { perror(dst); exit(1); }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    base = argv[1];
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, publish, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
'''

SEALED_C = r'''
/* tb25-sealed: a producer thread renders a blob into a memfd and seals it, signalling the main
   thread through an eventfd; the main thread sends the sealed blob to its output with sendfile */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>
static int mfd, efd;
static void *produce(void *arg) {
    (void)arg;
    char buf[4096];
    for (int k = 0; k < 96; k++) {
        memset(buf, 'a' + k % 26, sizeof buf);
        if (write(mfd, buf, sizeof buf) < 0) { perror("memfd write"); exit(1); }
    }
    if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        perror("F_ADD_SEALS"); exit(1);
    }
    uint64_t one = 1;
    if (write(efd, &one, sizeof one) < 0) { perror("eventfd"); exit(1); }
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    mfd = memfd_create("tb25-blob", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    efd = eventfd(0, EFD_CLOEXEC);
    if (mfd < 0 || efd < 0) { perror("memfd_create/eventfd"); return 1; }
    pthread_t t;
    pthread_create(&t, NULL, produce, NULL);
    uint64_t v;
    if (read(efd, &v, sizeof v) != sizeof v) { perror("eventfd read"); return 1; }
    pthread_join(t, NULL);
    char out[4200];
    snprintf(out, sizeof out, "%s/out/blob.bin", argv[1]);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { perror(out); return 1; }
    off_t off = 0, size = lseek(mfd, 0, SEEK_END);
    while (off < size) {
        ssize_t n = sendfile(fd, mfd, &off, (size_t)(size - off));
        if (n < 0) { perror("sendfile"); return 1; }
        if (n == 0) break;
    }
    if (fsync(fd) < 0) { perror("fsync"); return 1; }
    close(fd);
    return 0;
}
'''

TEMPLATE_M4 = """define(`SERVICE', `tb25-api')dnl
define(`PORT', `8080')dnl
include(`common.m4')dnl
[Unit]
Description=SERVICE on port PORT
[Service]
ExecStart=/usr/bin/SERVICE --port PORT
"""
COMMON_M4 = "define(`RESTART', `on-failure')dnl\n"


@functools.cache
def build() -> Path:
    """Compile the set's programs once per process: the three C programs and three objects
    (ld -r); make an ext4 image (tune2fs) and a cpio archive of a small tree. Returns the
    (world-readable) build directory."""
    out = ROOT / "_tb25"
    if out.exists():
        shutil.rmtree(out)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    ROOT.chmod(0o755)
    out.mkdir(parents=True)
    run = functools.partial(subprocess.run, check=True, capture_output=True)
    for name, src in (("tb25-beneath", BENEATH_C), ("tb25-release", RELEASE_C), ("tb25-sealed", SEALED_C)):
        write(out / f"{name}.c", src)
        run(["cc", "-O2", "-g", "-pthread", "-o", str(out / name), str(out / f"{name}.c")])
    for obj in ("a", "b", "c"):
        write(out / f"{obj}.c", f"int {obj}_value(void) {{ return '{obj}'; }}\n")
        run(["cc", "-c", "-o", str(out / f"{obj}.o"), str(out / f"{obj}.c")])
    run(["truncate", "-s", "8M", str(out / "fs.img")])
    run(["/usr/sbin/mke2fs", "-q", "-F", "-t", "ext4", "-L", "old", str(out / "fs.img")])
    tree = out / "tree"
    for d in ("etc/app", "usr/share/app", "var/lib/app"):
        (tree / d).mkdir(parents=True)
    write(tree / "etc" / "app" / "app.conf", "workers=4\n")
    write(tree / "etc" / "hosts", "127.0.0.1 localhost\n")
    write(tree / "usr" / "share" / "app" / "README", "tb25 demo\n" * 50)
    write(tree / "var" / "lib" / "app" / "state", "ready\n")
    names = subprocess.run(["find", ".", "-mindepth", "1"], cwd=tree, check=True, capture_output=True,
                           text=True).stdout
    run(["cpio", "-o", "-H", "newc", "-F", str(out / "tree.cpio")], cwd=tree, input=names.encode())
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


def _random_file(path: Path, size: int) -> None:
    path.write_bytes(random.randbytes(size))
    path.chmod(0o644)


# --- rsync -a ------------------------------------------------------------------------------------
def _rsync_argv(b: Path) -> list[str]:
    return ["/usr/bin/rsync", "-a", f"{b}/src/", f"{b}/dst/"]


def _rsync_src(base: Path, names: list[str]) -> None:
    _dirs(base, "src")
    for n in names:
        _random_file(base / "src" / n, random.randint(8_000, 40_000))


def rsync_dest_read_only(base: Path, bad: bool) -> None:
    _rsync_src(base, ["app.tar", "app.sha256", "notes.txt"])
    mount_tmpfs(base / "dst", "1m", readonly=bad)  # the bad host's backup volume went read-only


# --- cpio -idm -------------------------------------------------------------------------------------
def _cpio_argv(b: Path) -> list[str]:
    return ["/usr/bin/cpio", "-idm", "-D", f"{b}/out", "-F", str(build() / "tree.cpio")]


def cpio_parent_is_file(base: Path, bad: bool) -> None:
    _dirs(base, "out")
    if bad:  # a stray step wrote out/etc as a file before the unpack
        write(base / "out" / "etc", "# etc\n")


# --- socat / nc on unix sockets --------------------------------------------------------------------
class _UnixServer:
    """A small agent on a unix socket: accepts, reads a request to its end, answers, closes.
    `stale()` leaves a socket file nobody listens on (the agent died)."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.thread: threading.Thread | None = None

    def start(self, path: Path) -> None:
        self.stop()
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.listen(16)
        self.sock = sock
        self.thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
        self.thread.start()

    @staticmethod
    def _serve(sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                got = 0
                try:
                    while chunk := conn.recv(65536):
                        got += len(chunk)
                    conn.sendall(f"ok {got}\n".encode())
                except OSError:
                    pass

    def stale(self, path: Path) -> None:
        self.stop()
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()

    def stop(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the serving thread
            self.sock.close()
            self.sock = None
        if self.thread is not None:
            self.thread.join(timeout=5)
            self.thread = None


AGENT = _UnixServer()


def _socat_argv(b: Path) -> list[str]:
    return ["/usr/bin/socat", "-u", f"OPEN:{b}/in/metrics.txt", f"UNIX-CONNECT:{b}/run/agent.sock"]


def socat_agent_dead(base: Path, bad: bool) -> None:
    _dirs(base, "in", "run")
    write(base / "in" / "metrics.txt", "".join(f"tb25.requests{{shard={i}}} {random.randrange(10**6)}\n"
                                               for i in range(200)))
    if bad:  # the agent died; its socket file stayed
        AGENT.stale(base / "run" / "agent.sock")
    else:
        AGENT.start(base / "run" / "agent.sock")


def _nc_argv(b: Path) -> list[str]:
    return ["/usr/bin/nc", "-N", "-U", f"{b}/run/ctl.sock"]


def nc_daemon_never_started(base: Path, bad: bool) -> None:
    _dirs(base, "run")
    if not bad:  # the bad host's control daemon never started: no socket file
        AGENT.start(base / "run" / "ctl.sock")


def _stop_agent(base: Path) -> None:  # noqa: ARG001
    AGENT.stop()


# --- logrotate -----------------------------------------------------------------------------------
def _logrotate_conf(b: Path, extra: str = "") -> str:
    return f"{b}/log/app.log {{\n  rotate 3\n  compress\n  missingok\n  create 0644 root root\n{extra}}}\n"


def _logrotate_argv(b: Path) -> list[str]:
    return ["/usr/sbin/logrotate", "-f", "-s", f"{b}/state/status", f"{b}/logrotate.conf"]


def _logs(base: Path) -> None:
    _dirs(base, "log")
    write(base / "log" / "app.log", "".join(f"{i} GET /api/{random.randrange(10**5)} 200\n" for i in range(4000)))


def logrotate_state_dir_gone(base: Path, bad: bool) -> None:
    _logs(base)
    write(base / "logrotate.conf", _logrotate_conf(base))
    if not bad:  # the bad host's cleanup wiped the state directory
        _dirs(base, "state")


# --- m4 --------------------------------------------------------------------------------------------
def _m4_argv(b: Path) -> list[str]:
    return ["/usr/bin/m4", "-I", f"{b}/inc", f"{b}/unit.m4"]


def m4_include_private(base: Path, bad: bool) -> None:
    _dirs(base, "inc")
    write(base / "unit.m4", TEMPLATE_M4)
    # a root-run step rewrote the include private
    write(base / "inc" / "common.m4", COMMON_M4, 0o600 if bad else 0o644)


# --- pigz ------------------------------------------------------------------------------------------
def _pigz_argv(b: Path) -> list[str]:
    return ["/usr/bin/pigz", "-p", "4", "-k", f"{b}/vol/data.txt"]


def _pigz_input(path: Path, lines: int) -> None:
    rng = random.Random()
    write(path, "".join(f"{i:07d} {rng.getrandbits(96):024x} {rng.choice(('GET', 'PUT', 'DELETE'))}\n"
                        for i in range(lines)))


def pigz_volume_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "vol", "4m")
    _pigz_input(base / "vol" / "data.txt", 30000)
    if bad:  # another job's output filled the volume
        fill_up(base / "vol")


# --- lzop ------------------------------------------------------------------------------------------
def _lzop_argv(b: Path) -> list[str]:
    return ["/usr/bin/lzop", f"{b}/logs/app.log"]


def lzop_output_left_over(base: Path, bad: bool) -> None:
    _logs_dir = base / "logs"
    _dirs(base, "logs")
    write(_logs_dir / "app.log", "".join(f"{i} event {random.randrange(10**6)}\n" for i in range(8000)))
    if bad:  # a killed earlier run left its partial output
        write(_logs_dir / "app.log.lzo", "\x89LZO\x00")


# --- dos2unix --------------------------------------------------------------------------------------
def dos2unix_dir_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "conf", owner_nobody=not bad)  # the bad host's conf/ was made by a root install
    write(base / "conf" / "app.ini", "".join(f"key{i}=value{i}\r\n" for i in range(50)), 0o666)
    chown_nobody(base / "conf" / "app.ini")  # the job's own file


def _dos2unix_argv(b: Path) -> list[str]:
    return ["/usr/bin/dos2unix", f"{b}/conf/app.ini"]


# --- tune2fs ---------------------------------------------------------------------------------------
def tune2fs_image_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "img", owner_nobody=True)
    shutil.copy(build() / "fs.img", base / "img" / "fs.img")
    if not bad:  # the bad host's image was left root's by a root-run build step (0644)
        chown_nobody(base / "img" / "fs.img")


def _tune2fs_argv(b: Path) -> list[str]:
    return ["/usr/sbin/tune2fs", "-L", "tb25data", f"{b}/img/fs.img"]


# --- dpkg-deb -b -----------------------------------------------------------------------------------
CONTROL = """Package: tb25-demo
Version: 1.0
Architecture: all
Maintainer: tracebase <tb@example.com>
Description: tracebase twenty-fifth set demo package
"""


def _pkg_tree(base: Path) -> None:
    _dirs(base, "pkg/DEBIAN", "pkg/usr/share/tb25", "pkg/usr/bin")
    write(base / "pkg" / "DEBIAN" / "control", CONTROL)
    _random_file(base / "pkg" / "usr" / "share" / "tb25" / "blob.bin", 200_000)
    write(base / "pkg" / "usr" / "bin" / "tb25-demo", "#!/bin/sh\necho tb25\n", 0o755)


def _dpkg_deb_argv(b: Path) -> list[str]:
    return ["/usr/bin/dpkg-deb", "--root-owner-group", "-Zxz", "-b", f"{b}/pkg", f"{b}/out/tb25-demo.deb"]


def dpkg_deb_out_full(base: Path, bad: bool) -> None:
    _pkg_tree(base)
    mount_tmpfs(base / "out", "2m")
    if bad:  # the repository volume is full
        fill_up(base / "out")


# --- ld -r -----------------------------------------------------------------------------------------
def _ld_argv(b: Path) -> list[str]:
    return ["/usr/bin/ld", "-r", "-o", f"{b}/out/libjob.o", f"{b}/obj/a.o", f"{b}/obj/b.o", f"{b}/obj/c.o"]


def ld_output_is_dir(base: Path, bad: bool) -> None:
    _dirs(base, "obj", "out")
    for o in ("a", "b", "c"):
        shutil.copy(build() / f"{o}.o", base / "obj" / f"{o}.o")
    if bad:  # a botched sync made the output path a directory
        _dirs(base, "out/libjob.o")


# --- systemd-sysusers --root -----------------------------------------------------------------------
SYSUSERS = 'g tb25svc -\nu tb25svc - "tb25 service" /var/lib/tb25\nu tb25web - "tb25 web" /var/lib/tb25web\n'


def _sysusers_root(base: Path, etc_size: str | None = None) -> None:
    _dirs(base, "conf", "root")
    write(base / "conf" / "tb25.conf", SYSUSERS)
    if etc_size:
        mount_tmpfs(base / "root" / "etc", etc_size)
    else:
        _dirs(base, "root/etc")
    write(base / "root" / "etc" / "passwd", "root:x:0:0:root:/root:/bin/bash\n")
    write(base / "root" / "etc" / "group", "root:x:0:\n")
    write(base / "root" / "etc" / "shadow", "root:*:19000:0:99999:7:::\n", 0o640)


def _sysusers_argv(b: Path) -> list[str]:
    return ["/usr/bin/systemd-sysusers", f"--root={b}/root", f"{b}/conf/tb25.conf"]


def sysusers_etc_full(base: Path, bad: bool) -> None:
    _sysusers_root(base, "1m")
    if bad:  # the image's /etc volume is full
        fill_up(base / "root" / "etc")


# --- update-alternatives ---------------------------------------------------------------------------
def _alternatives_argv(b: Path) -> list[str]:
    return ["/usr/bin/update-alternatives", "--altdir", f"{b}/alt", "--admindir", f"{b}/admin", "--log",
            f"{b}/alternatives.log", "--install", f"{b}/bin/editor", "editor", f"{b}/opt/ed-1/ed", "50"]


def alternatives_link_dir_missing(base: Path, bad: bool) -> None:
    _dirs(base, "alt", "admin", "opt/ed-1")
    write(base / "opt" / "ed-1" / "ed", "#!/bin/sh\nexec /usr/bin/ed \"$@\"\n", 0o755)
    if not bad:  # the bad host's bin/ was not unpacked yet
        _dirs(base, "bin")


# --- ed --------------------------------------------------------------------------------------------
def _ed_argv(b: Path) -> list[str]:
    # ed reads its commands from stdin; the job pipes them in
    return ["/bin/sh", "-c", f"printf ',s/port=80/port=8080/\\nw\\nq\\n' | /usr/bin/ed -s {b}/etc/app.conf"]


def ed_config_root_owned(base: Path, bad: bool) -> None:
    _dirs(base, "etc", owner_nobody=True)
    write(base / "etc" / "app.conf", "host=0.0.0.0\nport=80\nworkers=4\n")
    if not bad:  # the bad host's config was rewritten by root (0644, root's)
        chown_nobody(base / "etc" / "app.conf")


# --- tee -------------------------------------------------------------------------------------------
def _tee_argv(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"seq 1 30000 | /usr/bin/tee {b}/out/build.log {b}/mirror/build.log > /dev/null"]


def tee_mirror_is_dir(base: Path, bad: bool) -> None:
    _dirs(base, "out", "mirror")
    if bad:  # a volume mounted at the file's path made the mirror's log a directory
        _dirs(base, "mirror/build.log")


# --- pr -m -----------------------------------------------------------------------------------------
def _pr_argv(b: Path) -> list[str]:
    cols = " ".join(f"{b}/in/col{i:02d}.txt" for i in range(1, 21))
    return ["/bin/sh", "-c", f"ulimit -n $(cat {b}/nofile) && exec /usr/bin/pr -m -t -w 400 {cols}"]


def pr_nofile_limit(base: Path, bad: bool) -> None:
    _dirs(base, "in")
    for i in range(1, 21):
        write(base / "in" / f"col{i:02d}.txt", "".join(f"{i}.{k}\n" for k in range(100)))
    write(base / "nofile", "16\n" if bad else "256\n")  # the bad host's service unit capped descriptors


# --- the set's C programs ----------------------------------------------------------------------------
def _config_root(base: Path) -> None:
    _dirs(base, "etc/svc/conf.d")
    for n in ("net", "db", "log"):
        write(base / "etc" / "svc" / "conf.d" / f"{n}.conf", f"{n}.enabled=1\n{n}.level={random.randrange(9)}\n")


def beneath_link_escapes(base: Path, bad: bool) -> None:
    _config_root(base)
    if bad:  # a provisioning step linked a fragment to the host's file, outside the config root
        (base / "etc" / "svc" / "conf.d" / "db.conf").unlink()
        (base / "etc" / "svc" / "conf.d" / "db.conf").symlink_to("/etc/hostname")


def release_stale_file(base: Path, bad: bool) -> None:
    _dirs(base, "stage", "release")
    if bad:  # an earlier release's part-2 was never cleaned up
        write(base / "release" / "part-2.bin", "old release\n")


def sealed_out_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "out", "1m")
    if bad:  # the output volume is full
        fill_up(base / "out")


REAL_TWENTYFIFTH: list[Scenario] = [
    Scenario("t25_rsync_dest_read_only", "rsync -a (sender, generator, receiver)", _rsync_argv, rsync_dest_read_only,
             OPEN, "EROFS", lambda b: f"{b}/dst/.*.*", teardown=_umount("dst"),
             description="rsync receiving into random-named temporaries on a backup volume remounted read-only"),
    Scenario("t25_cpio_unpack_parent_is_file", "cpio -idm -D (unpack a tree)", _cpio_argv, cpio_parent_is_file,
             STAT | MKDIR | OPEN, "ENOTDIR", lambda b: f"{b}/out/etc/*",
             description="cpio unpacking a tree where a stray step left etc as a file"),
    Scenario("t25_socat_agent_socket_stale", "socat -u (file to a unix socket)", _socat_argv, socat_agent_dead,
             CONNECT, "ECONNREFUSED", lambda b: f"unix:{b}/run/agent.sock", teardown=_stop_agent,
             description="socat pushing metrics to an agent that died, its socket file left behind"),
    Scenario("t25_nc_control_socket_missing", "nc -N -U (control socket ping)", _nc_argv, nc_daemon_never_started,
             CONNECT, "ENOENT", lambda b: f"unix:{b}/run/ctl.sock", teardown=_stop_agent,
             description="nc pinging a control socket whose daemon never started"),
    Scenario("t25_logrotate_state_dir_wiped", "logrotate -f -s (gzip child)", _logrotate_argv,
             logrotate_state_dir_gone, OPEN, "ENOENT", lambda b: f"{b}/state/status",
             description="logrotate creating its state file in a directory a cleanup wiped"),
    Scenario("t25_m4_include_private", "m4 -I (as the job)", _m4_argv, m4_include_private, OPEN, "EACCES",
             lambda b: f"{b}/inc/common.m4", unprivileged=True,
             description="m4 expanding a unit template whose include root left private"),
    Scenario("t25_pigz_volume_full", "pigz -p 4 (writer thread)", _pigz_argv, pigz_volume_full, WRITE, "ENOSPC",
             lambda b: f"{b}/vol/data.txt.gz", teardown=_umount("vol"),
             description="pigz's writer thread writing its output onto a full volume"),
    Scenario("t25_lzop_output_left_over", "lzop (O_EXCL output)", _lzop_argv, lzop_output_left_over, OPEN, "EEXIST",
             lambda b: f"{b}/logs/app.log.lzo",
             description="lzop compressing a log whose output a killed earlier run left"),
    Scenario("t25_dos2unix_dir_root_owned", "dos2unix (as the job, temporary beside)", _dos2unix_argv,
             dos2unix_dir_root_owned, OPEN, "EACCES", lambda b: f"{b}/conf/d2utmp*", unprivileged=True,
             description="dos2unix rewriting the job's file through a temporary in a directory a root install made"),
    Scenario("t25_tune2fs_image_root_owned", "tune2fs -L (as the job)", _tune2fs_argv, tune2fs_image_root_owned, OPEN,
             "EACCES", lambda b: f"{b}/img/fs.img", unprivileged=True,
             description="tune2fs labelling an image a root-run build step left root's"),
    Scenario("t25_dpkg_deb_repo_full", "dpkg-deb -b (tar, xz children)", _dpkg_deb_argv, dpkg_deb_out_full, WRITE,
             "ENOSPC", lambda b: f"{b}/out/tb25-demo.deb", teardown=_umount("out"),
             description="dpkg-deb building a package onto a full repository volume"),
    Scenario("t25_ld_output_is_directory", "ld -r (relocatable link)", _ld_argv, ld_output_is_dir, OPEN, "EISDIR",
             lambda b: f"{b}/out/libjob.o",
             description="ld linking three objects into an output path a botched sync made a directory"),
    Scenario("t25_sysusers_etc_full", "systemd-sysusers --root", _sysusers_argv, sysusers_etc_full, WRITE, "ENOSPC",
             lambda b: f"{b}/root/etc/.#*", teardown=_umount("root/etc"),
             description="systemd-sysusers writing an image's group file through a temporary on a full /etc"),
    Scenario("t25_alternatives_link_dir_missing", "update-alternatives --install", _alternatives_argv,
             alternatives_link_dir_missing, frozenset({"symlink", "symlinkat"}), "ENOENT",
             lambda b: f"{b}/bin/editor.dpkg-tmp",
             description="update-alternatives making its link in a bin directory not unpacked yet"),
    Scenario("t25_ed_config_root_owned", "ed -s (in-place edit, as the job)", _ed_argv, ed_config_root_owned, OPEN,
             "EACCES", lambda b: f"{b}/etc/app.conf", unprivileged=True,
             description="ed editing a config in place that root rewrote as its own"),
    Scenario("t25_tee_mirror_is_directory", "tee (a log and its mirror)", _tee_argv, tee_mirror_is_dir, OPEN,
             "EISDIR", lambda b: f"{b}/mirror/build.log",
             description="tee writing a build log and a mirror whose path is a directory"),
    Scenario("t25_pr_merge_nofile_limit", "pr -m (twenty columns, ulimit -n)", _pr_argv, pr_nofile_limit, OPEN,
             # which column meets the limit is how many descriptors the job inherited
             "EMFILE", lambda b: f"{b}/in/col*.txt",
             description="pr merging twenty files at once under a descriptor limit of 16"),
    Scenario("t25_beneath_fragment_escapes", "tb25-beneath (C: openat2 RESOLVE_BENEATH, threads)", _c("tb25-beneath"),
             beneath_link_escapes, frozenset({"openat2"}), "EXDEV", lambda b: f"{b}/etc/svc/conf.d/db.conf",
             description="three threads opening config fragments beneath a root, one a symlink out of it"),
    Scenario("t25_release_noreplace_stale", "tb25-release (C: renameat2 RENAME_NOREPLACE, threads)",
             _c("tb25-release"), release_stale_file, frozenset({"renameat2"}), "EEXIST",
             lambda b: f"{b}/release/part-2.bin",  # EEXIST is about newpath, the name taken
             description="four threads publishing with RENAME_NOREPLACE, one name taken by a stale release"),
    Scenario("t25_sealed_sendfile_volume_full", "tb25-sealed (C: memfd seals, eventfd, sendfile)", _c("tb25-sealed"),
             sealed_out_full, frozenset({"sendfile"}), "ENOSPC", lambda b: f"{b}/out/blob.bin",
             teardown=_umount("out"),
             description="a sealed memfd sent to a full volume with sendfile"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


def _rsync_many(base: Path, run: int) -> None:  # noqa: ARG001
    _rsync_src(base, [f"part-{i:02d}.bin" for i in range(12)])
    _dirs(base, "src/sub/deeper")
    _random_file(base / "src" / "sub" / "deeper" / "leaf.bin", 5000)
    _dirs(base, "dst")


def _pigz_big(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "vol")
    _pigz_input(base / "vol" / "data.txt", 120000)


def _dpkg_deb_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _pkg_tree(base)
    _dirs(base, "out")


def _logrotate_dated(base: Path, run: int) -> None:  # noqa: ARG001
    _logs(base)
    _dirs(base, "state")
    write(base / "logrotate.conf", _logrotate_conf(base, "  dateext\n  dateformat -%Y%m%d-%s\n"))


def _sysusers_disk(base: Path, run: int) -> None:  # noqa: ARG001
    _sysusers_root(base)


def _dos2unix_many(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "conf")
    for n in ("a", "b", "c", "d"):
        write(base / "conf" / f"{n}.ini", "".join(f"{n}{i}={random.randrange(99)}\r\n" for i in range(40)))


QUIET_TWENTYFIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t25_rsync_temp_names", _rsync_argv, _rsync_many,
                  description="rsync's three processes receiving twelve files through random-named temporaries"),
    NoAnomalyCase("t25_pigz_thread_order", _pigz_argv, _pigz_big,
                  description="pigz compressing with four threads: block order across threads varies"),
    NoAnomalyCase("t25_dpkg_deb_children", _dpkg_deb_argv, _dpkg_deb_disk,
                  description="dpkg-deb's tar and xz children, temporaries and timestamps"),
    NoAnomalyCase("t25_logrotate_dated_names", _logrotate_argv, _logrotate_dated,
                  description="logrotate rotating to a name dated to the second, a gzip child"),
    NoAnomalyCase("t25_sysusers_temp_names", _sysusers_argv, _sysusers_disk,
                  description="systemd-sysusers writing group, passwd and shadow through random-named temporaries"),
    NoAnomalyCase("t25_dos2unix_temp_names", lambda b: ["/usr/bin/dos2unix", *(f"{b}/conf/{n}.ini" for n in "abcd")],
                  _dos2unix_many, description="dos2unix converting four files through random-named temporaries"),
    NoAnomalyCase("t25_nc_round_trip", _nc_argv, _good(nc_daemon_never_started),
                  description="nc pinging a control socket: poll wakeups and reply timing vary"),
    NoAnomalyCase("t25_release_thread_order", _c("tb25-release"), _good(release_stale_file),
                  description="four threads staging and publishing their parts in whatever order they run"),
    NoAnomalyCase("t25_beneath_thread_order", _c("tb25-beneath"), _good(beneath_link_escapes),
                  description="three threads opening their fragments with openat2 in any order"),
    NoAnomalyCase("t25_sealed_eventfd_wakeup", _c("tb25-sealed"), lambda b, r: _dirs(b, "out"),
                  description="a producer thread and an eventfd wakeup racing the main thread's wait"),
]


def quiet_teardown() -> None:
    """What a noise case may leave: the nc case's agent (its teardown is not run for noise
    cases)."""
    AGENT.stop()


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
