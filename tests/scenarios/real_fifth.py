"""A fifth set of real Debian programs with one real fault each, in territory the first four
sets barely touch:

- **library and plugin probing**, the product's own example: a loader searching several
  directories for a verbs-style provider library (``libmlx5-rdmav34.so``) where the misses in
  the other directories are routine ENOENT and the fault is the one provider unreadable or a
  dangling symlink; dlopen(RTLD_NOW) of a plugin whose dependency is missing or unreadable
  (ld.so's probes of its search path are routine); ``LD_LIBRARY_PATH`` order picking a stale
  copy first, or a directory the job cannot search; a bundle whose private ELF interpreter is
  not an ELF file (execve ELIBBAD); Python importing a compiled extension module; node's
  ``require`` resolution, jq's module search path (``-L``), pkg-config's ``PKG_CONFIG_PATH``,
  Tcl's ``source``;
- **sysfs and procfs**: a monitor reading a root-only sysfs attribute, a bad value written to
  a sysctl and to a sysfs attribute (in a private network namespace), a cgroup that cannot be
  removed while a straggler lives in it (EBUSY), another user's ``/proc/<pid>/fd``;
- **resource limits**: ``ulimit -n`` (sockets, perl's open files), ``ulimit -f`` (EFBIG and
  SIGXFSZ), RLIMIT_NPROC and a cgroup's ``pids.max`` (EAGAIN on fork), RLIMIT_MEMLOCK (mlock
  ENOMEM/EPERM, mmap(MAP_LOCKED) EAGAIN -- memory registration's real-world cause), huge pages
  none reserved, a small ``/dev/shm`` (NCCL's classic), ``ulimit -v`` under perl, a clone
  into a full disk;
- **/proc races, the ENOENT form**: a pid file naming a process that is gone, read through
  ``/proc/<pid>/cmdline`` or ``/proc/<pid>/stat`` (the fault), against /proc scans that meet a
  process exiting between the listing and the read (routine, ``QUIET_FIFTH``);
- a git hook rejecting a commit (no failing call).

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`). The expectations are what
`strace -f` shows a person looking for the fault, never what the differ prints. The
good-vs-good cases (`QUIET_FIFTH`) carry run-to-run noise: interpreter start-up probing
(python's site, perl, tcl, node's worker threads), git's repository discovery, /etc/hosts
lookups, locale fallbacks, a terminal that is not there (ENOTTY), /proc scans racing with
exits, sysfs probing of devices this host does not have, ld.so meeting a directory it may not
search, random POSIX shared-memory names.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount_after, write
from .harness import ROOT, NoAnomalyCase, Scenario
from .real import GIT_ENV, NOBODY_UID, own, sh
from .real_third import BACKGROUND

PY3 = "/usr/bin/python3"
NO_PATH = ""  # the fault's call has no path (a socket, a fork, a lock of memory)
PY_INCLUDE = "/usr/include/python3.11"


def _cc(base: Path, out: str, source: str, flags: str = "") -> Path:
    """Compile `source` to base/out with gcc, once per session (the same base path in every
    run of a scenario): later runs copy the cached build."""
    key = hashlib.sha256(f"{base}\0{out}\0{source}\0{flags}".encode()).hexdigest()[:16]
    cached = ROOT / "_cc5" / key / Path(out).name
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        src = cached.parent / "src.c"
        src.write_text(source)
        tmp = cached.parent / f".{cached.name}.tmp"
        sh(f"gcc -O1 -fPIC -o {tmp} {src} {flags}")
        tmp.rename(cached)
    target = base / out
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cached, target)
    return target


def _root_only(path: Path) -> None:
    """Root's own file, mode 0600: what an unprivileged job meets after a root-run install."""
    os.chown(path, 0, 0, follow_symlinks=False)
    path.chmod(0o600)


def _incompressible(n: int) -> bytes:
    out = bytearray()
    seed = b"tracebase"
    while len(out) < n:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:n])


# --- a verbs-style provider loader ----------------------------------------------------------
# Like libibverbs: every driver named in the config is looked for in every provider directory,
# in order; a driver this host has no device for is missing everywhere (routine), the device's
# own driver (mlx5) must load.
LOADER_PY = ("import ctypes, os, sys\n"
             "conf = dict(line.split('=', 1) for line in open(sys.argv[1]).read().split())\n"
             "dirs, drivers = conf['dirs'].split(':'), conf['drivers'].split(',')\n"
             "loaded = {}\n"
             "for drv in drivers:\n"
             "    for d in dirs:\n"
             "        try:\n"
             "            lib = ctypes.CDLL(os.path.join(d, f'lib{drv}-rdmav34.so'), mode=os.RTLD_NOW)\n"
             "        except OSError:\n"
             "            continue\n"
             "        loaded[drv] = lib.provider_abi()\n"
             "        break\n"
             "if conf['required'] not in loaded:\n"
             "    sys.stderr.write(f\"libibverbs: Warning: couldn't load driver '{conf['required']}'\\n\")\n"
             "    sys.exit(1)\n"
             "print(sorted(loaded))\n")
PROVIDER_C = "int provider_abi(void) { return 34; }\n"


def _providers(base: Path) -> Path:
    for d in ("p1", "p2", "p3"):
        (base / d).mkdir()
    write(base / "loader.py", LOADER_PY)
    write(base / "verbs.conf", f"dirs={base}/p1:{base}/p2:{base}/p3\ndrivers=rxe,hns,mlx5,efa\nrequired=mlx5\n")
    return _cc(base, "p3/libmlx5.so.1.24.0", PROVIDER_C, "-shared")


def provider_unreadable(base: Path, bad: bool) -> None:
    lib = _providers(base)
    (base / "p3" / "libmlx5-rdmav34.so").symlink_to(lib.name)
    own(base)
    if bad:  # reinstalled by root with a umask of 077
        _root_only(lib)


def provider_dangling_symlink(base: Path, bad: bool) -> None:
    lib = _providers(base)
    (base / "p3" / "libmlx5-rdmav34.so").symlink_to(lib.name)
    if bad:  # an upgrade removed the versioned file the unversioned link points at
        lib.unlink()


# --- dlopen(RTLD_NOW) of a plugin whose dependency is missing -------------------------------
PLUGIN_PY = ("import ctypes, os, sys\n"
             "lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)\n"
             "sys.exit(0 if lib.plugin_n() == 7 else 1)\n")


def _plugin(base: Path) -> None:
    write(base / "run_plugin.py", PLUGIN_PY)
    _cc(base, "deps/libjobdep.so", "int dep_n(void) { return 7; }\n", "-shared")
    _cc(base, "plugins/libjobplug.so", "int dep_n(void);\nint plugin_n(void) { return dep_n(); }\n",
        f"-shared -L{base}/deps -ljobdep -Wl,-rpath,'$ORIGIN/../deps'")


def plugin_dep_missing(base: Path, bad: bool) -> None:
    _plugin(base)
    if bad:  # the plugin's package was updated, the dependency's package was not installed
        (base / "deps" / "libjobdep.so").unlink()


def plugin_dep_unreadable(base: Path, bad: bool) -> None:
    _plugin(base)
    own(base)
    if bad:
        _root_only(base / "deps" / "libjobdep.so")


# --- ld.so: LD_LIBRARY_PATH order, a bundle's own interpreter -------------------------------
JOB_C = "int job_v2(void);\nint main(void) { return job_v2() == 2 ? 0 : 1; }\n"


def stale_library_first(base: Path, bad: bool) -> None:
    (base / "hotfix").mkdir()
    _cc(base, "lib/libjob.so", "int job_v1(void) { return 1; }\nint job_v2(void) { return 2; }\n", "-shared")
    _cc(base, "job", JOB_C, f"-L{base}/lib -ljob")
    if bad:  # last quarter's hotfix build, before job_v2 existed, left in the first directory
        _cc(base, "hotfix/libjob.so", "int job_v1(void) { return 1; }\n", "-shared")


def library_dir_not_searchable(base: Path, bad: bool) -> None:
    _cc(base, "private/libjob.so", "int job_v1(void) { return 1; }\nint job_v2(void) { return 2; }\n", "-shared")
    _cc(base, "job", JOB_C, f"-L{base}/private -ljob")
    own(base)
    if bad:  # the library directory was recreated by root with mode 0700
        os.chown(base / "private", 0, 0)
        (base / "private").chmod(0o700)


TOOL_C = "#include <stdio.h>\nint main(void) { puts(\"tool 1.0\"); return 0; }\n"


def bundle_interpreter_not_elf(base: Path, bad: bool) -> None:
    (base / "bundle" / "lib").mkdir(parents=True)
    _cc(base, "bundle/bin/tool", TOOL_C, f"-Wl,--dynamic-linker={base}/bundle/lib/ld.so")
    if bad:  # the download of the bundle's loader saved the mirror's error page
        write(base / "bundle" / "lib" / "ld.so", "<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found"
              "</h1><p>The requested URL was not found on this server.</p></body></html>\n", 0o755)
    else:
        shutil.copy2("/lib64/ld-linux-x86-64.so.2", base / "bundle" / "lib" / "ld.so")


# --- python: a compiled extension module ----------------------------------------------------
FASTMOD_C = ('#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n'
             'int core_n(void);\n'
             'static PyObject *n(PyObject *self, PyObject *args) { return PyLong_FromLong(core_n()); }\n'
             'static PyMethodDef methods[] = {{"n", n, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};\n'
             'static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fastmod", NULL, -1, methods};\n'
             'PyMODINIT_FUNC PyInit_fastmod(void) { return PyModule_Create(&def); }\n')
FASTMOD_MAIN = ("import sys\n"
                "sys.path[:0] = sys.argv[1:]\n"
                "import fastmod\n"
                "print(fastmod.n())\n")
EXT = "fastmod.cpython-311-x86_64-linux-gnu.so"


def _fastmod(base: Path) -> None:
    for d in ("site1", "site2"):
        (base / d).mkdir()
    write(base / "main.py", FASTMOD_MAIN)
    _cc(base, "core/libfastcore.so", "int core_n(void) { return 11; }\n", "-shared")
    _cc(base, f"site2/{EXT}", FASTMOD_C,
        f"-shared -I{PY_INCLUDE} -L{base}/core -lfastcore -Wl,-rpath,'$ORIGIN/../core'")


def ext_module_unreadable(base: Path, bad: bool) -> None:
    _fastmod(base)
    own(base)
    if bad:
        _root_only(base / "site2" / EXT)


def ext_module_dep_missing(base: Path, bad: bool) -> None:
    _fastmod(base)
    if bad:
        (base / "core" / "libfastcore.so").unlink()


# --- node, jq, pkg-config, tcl: their own search paths --------------------------------------
def _node_app(base: Path) -> Path:
    pkg = base / "node_modules" / "jobcfg"
    (pkg / "lib").mkdir(parents=True)
    (base / "app").mkdir()
    write(pkg / "package.json", json.dumps({"name": "jobcfg", "version": "1.2.0", "main": "lib/index.js"}))
    write(pkg / "lib" / "index.js", "module.exports = { workers: 4 };\n")
    write(base / "app" / "main.js", "const cfg = require('jobcfg');\nprocess.exit(cfg.workers === 4 ? 0 : 1);\n")
    return pkg


def node_main_missing(base: Path, bad: bool) -> None:
    pkg = _node_app(base)
    if bad:  # a broken publish: package.json names lib/index.js, the tarball has no lib/
        (pkg / "lib" / "index.js").unlink()


def node_module_unreadable(base: Path, bad: bool) -> None:
    pkg = _node_app(base)
    own(base)
    if bad:
        _root_only(pkg / "lib" / "index.js")


def jq_module_missing(base: Path, bad: bool) -> None:
    (base / "jqlib").mkdir()
    write(base / "job.jq", 'import "util" as u;\n[range(5)] | map(u::double(.)) | add\n')
    if not bad:  # the bad host's image was built without the shared jq library
        write(base / "jqlib" / "util.jq", "def double(x): x * 2;\n")


PC = "prefix={p}\nName: jobcore\nDescription: job core\nVersion: 2.1\nCflags: -I${{prefix}}/include\nLibs: -L${{prefix}}/lib -ljobcore\n"


def pkgconfig_unreadable(base: Path, bad: bool) -> None:
    for d in ("pc1", "pc2"):
        (base / d).mkdir()
    write(base / "pc2" / "jobcore.pc", PC.format(p=base))
    own(base)
    if bad:
        _root_only(base / "pc2" / "jobcore.pc")


def tcl_source_missing(base: Path, bad: bool) -> None:
    (base / "lib").mkdir()
    write(base / "job.tcl", "source [file join [file dirname [info script]] lib util.tcl]\nputs [util_n]\n")
    if not bad:
        write(base / "lib" / "util.tcl", "proc util_n {} { return 42 }\n")


# --- sysfs and procfs ---------------------------------------------------------------------------
MONITOR_PY = ("import glob, os, sys\n"
              "n = 0\n"
              "for dev in glob.glob('/sys/class/infiniband/*/ports/*/counters/*'):\n"
              "    n += 1\n"
              "for stat in sorted(glob.glob('/sys/class/net/*/statistics/rx_bytes')):\n"
              "    with open(stat) as fh: n += len(fh.read())\n"
              "for path in open(sys.argv[1]).read().split():\n"
              "    with open(path) as fh: n += len(fh.read())\n"
              "print(n)\n")


def monitor_attr_root_only(base: Path, bad: bool) -> None:
    write(base / "monitor.py", MONITOR_PY)
    attrs = ["/proc/meminfo", "/sys/kernel/mm/transparent_hugepage/enabled",
             "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"]
    if bad:  # the new config also samples a slab cache's object count (root-only)
        attrs.append("/sys/kernel/slab/kmalloc-64/objects")
    write(base / "attrs.conf", "\n".join(attrs) + "\n")


def sysctl_bad_value(base: Path, bad: bool) -> None:
    write(base / "ttl", "0" if bad else "64")


def sysfs_mtu_bad_value(base: Path, bad: bool) -> None:
    write(base / "mtu", "9000B" if bad else "9000")  # the bad config gave the unit


def _cgroup(name: str) -> Path:
    return Path(f"/sys/fs/cgroup/pids/tracebase-{os.getpid()}-{name}")


def cgroup_rmdir_busy(base: Path, bad: bool) -> None:
    cg = _cgroup("rmdir")
    cg.mkdir(exist_ok=True)
    if bad:  # a straggler of the job is still in its cgroup
        proc = BACKGROUND.start(["/usr/bin/sleep", "120"])
        (cg / "cgroup.procs").write_text(f"{proc.pid}\n")


def _cgroup_teardown(name: str):
    def teardown(base: Path) -> None:
        BACKGROUND.stop()
        cg = _cgroup(name)
        for _ in range(100):
            try:
                cg.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # the last tasks are still exiting
                threading.Event().wait(0.02)
    return teardown


def _other_pid(base: Path, bad: bool) -> None:
    """app.pid names a running process: root's in the bad run, nobody's in the good ones."""
    argv = ["/usr/bin/sleep", "120"]
    if not bad:
        argv = ["/usr/bin/setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups", *argv]
    # until it runs sleep: before setpriv's exec (under load, after the recording began) the
    # good runs' process was still root's, and their read of its environ failed EACCES as well
    pid = BACKGROUND.start_running(argv, "/usr/bin/sleep").pid
    write(base / "app.pid", f"{pid}\n")
    own(base)


def _gone_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["/usr/bin/true"])
    proc.wait()
    return proc.pid


def pidfile_process_gone(base: Path, bad: bool) -> None:
    pid = _gone_pid() if bad else BACKGROUND.start(["/usr/bin/sleep", "120"]).pid
    write(base / "app.pid", f"{pid}\n")


PROC_STAT_PY = ("import sys\n"
                "pid = int(open(sys.argv[1]).read())\n"
                "with open(f'/proc/{pid}/stat') as fh:\n"
                "    fields = fh.read().rsplit(')', 1)[1].split()\n"
                "print('state', fields[0], 'threads', fields[17])\n")


def monitor_pid_gone(base: Path, bad: bool) -> None:
    write(base / "health.py", PROC_STAT_PY)
    pidfile_process_gone(base, bad)


# --- resource limits --------------------------------------------------------------------------
SOCKETS_PY = ("import socket\n"
              "pool = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(48)]\n"
              "print(len(pool))\n")


def sockets_nofile(base: Path, bad: bool) -> None:
    write(base / "pool.py", SOCKETS_PY)
    write(base / "limit", "32" if bad else "1024")


PERL_OPEN_ALL = ('my @fh;\n'
                 'for my $f (@ARGV) { open(my $h, "<", $f) or die "$f: $!\\n"; push @fh, $h; }\n'
                 'print scalar(@fh), "\\n";\n')


def perl_nofile(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    for i in range(40):
        write(base / "in" / f"f{i:02d}", f"{i}\n")
    write(base / "openall.pl", PERL_OPEN_ALL)
    write(base / "limit", "24" if bad else "1024")


def fsize_limit(base: Path, bad: bool) -> None:
    (base / "data.bin").write_bytes(_incompressible(600 * 1024))
    write(base / "limit", "256" if bad else "unlimited")  # 256 blocks: 128-256 KiB


def tar_fsize_limit(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    for i in range(4):
        (base / "src" / f"part{i}.bin").write_bytes(_incompressible(150 * 1024 + i))
    write(base / "limit", "256" if bad else "unlimited")


WORKERS_PY = ("import os, sys, time\n"
              "kids = []\n"
              "for i in range(int(sys.argv[1])):\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        time.sleep(0.05)\n"
              "        os._exit(0)\n"
              "    kids.append(pid)\n"
              "for pid in kids:\n"
              "    os.waitpid(pid, 0)\n"
              "print(len(kids), 'workers done')\n")


def nproc_limit(base: Path, bad: bool) -> None:
    write(base / "workers.py", WORKERS_PY)
    write(base / "limit", "1" if bad else "4096")


def xargs_nproc_limit(base: Path, bad: bool) -> None:
    (base / "in").mkdir()
    for i in range(6):
        write(base / "in" / f"f{i}.txt", f"{i}\n" * 100)
    own(base)
    write(base / "limit", "1" if bad else "4096")


def cgroup_pids_max(base: Path, bad: bool) -> None:
    write(base / "workers.py", WORKERS_PY)
    cg = _cgroup("pids")
    cg.mkdir(exist_ok=True)
    (cg / "pids.max").write_text("4\n" if bad else "max\n")  # the bad host's container limit


PIN_PY = ("import ctypes, mmap, os, sys\n"
          "size = 2 << 20\n"
          "if sys.argv[1] == 'map_locked':\n"
          "    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x2000  # MAP_LOCKED\n"
          "    try:\n"
          "        buf = mmap.mmap(-1, size, flags=flags)\n"
          "    except OSError as e:\n"
          "        sys.exit(f'register: cannot pin {size} bytes: {e}')\n"
          "else:\n"
          "    libc = ctypes.CDLL(None, use_errno=True)\n"
          "    buf = mmap.mmap(-1, size)\n"
          "    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))\n"
          "    if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(size)) != 0:\n"
          "        sys.exit(f'register: mlock: {os.strerror(ctypes.get_errno())}')\n"
          "buf[0] = 1\n"
          "print('registered', size)\n")


def _memlock(bad_value: str):
    def setup(base: Path, bad: bool) -> None:
        write(base / "pin.py", PIN_PY)
        write(base / "limit", bad_value if bad else "8192")
    return setup


HUGE_PY = ("import mmap, sys\n"
           "conf = dict(l.split('=') for l in open(sys.argv[1]).read().split())\n"
           "flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS\n"
           "if conf['hugepages'] == 'on':\n"
           "    flags |= 0x40000  # MAP_HUGETLB\n"
           "buf = mmap.mmap(-1, 4 << 20, flags=flags)\n"
           "buf[0] = 1\n"
           "print('pool ready')\n")


def hugepages_none_reserved(base: Path, bad: bool) -> None:
    write(base / "pool.py", HUGE_PY)
    write(base / "pool.conf", f"hugepages={'on' if bad else 'off'}\n")  # tuned on a host with huge pages


# Like NCCL's shared-memory transport: shm_open a random name, reserve the segment with
# posix_fallocate (a sparse ftruncate would only fail later, with SIGBUS), map it, unlink it.
# (_posixshmem, not multiprocessing.shared_memory: that one starts a resource-tracker process
# that outlives the recording.)
SHM_PY = ("import mmap, os, secrets, _posixshmem\n"
          "size = int(os.environ.get('SEG_SIZE', 8 << 20))\n"
          "for i in range(int(os.environ.get('SEGMENTS', 1))):\n"
          "    name = f'/nccl-{secrets.token_hex(3)}'\n"
          "    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)\n"
          "    try:\n"
          "        os.posix_fallocate(fd, 0, size)\n"
          "        seg = mmap.mmap(fd, size)\n"
          "        seg[0] = 1\n"
          "        seg.close()\n"
          "    finally:\n"
          "        os.close(fd)\n"
          "        _posixshmem.shm_unlink(name)\n"
          "print('segments ok')\n")


def shm_too_small(base: Path, bad: bool) -> None:
    write(base / "seg.py", SHM_PY)
    write(base / "shm_size", "1m" if bad else "64m")  # a container's default /dev/shm


def perl_vmem(base: Path, bad: bool) -> None:
    write(base / "limit", "300000" if bad else "unlimited")


def git_clone_full(base: Path, bad: bool) -> None:
    src = base / "src"
    src.mkdir()
    for i in range(20):
        (src / f"blob{i}.bin").write_bytes(_incompressible(20 * 1024 + i))
    sh("git init -q -b main . && git add . && git commit -q -m one", src, GIT_ENV)
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        fill_up(base / "mnt")


def path_stale_tool(base: Path, bad: bool) -> None:
    (base / "local" / "bin").mkdir(parents=True)
    (base / "bin").mkdir()
    write(base / "bin" / "jobtool", "#!/bin/sh\n[ \"$1\" = --format=json ] && echo '{}'\n", 0o755)
    write(base / "in.txt", "x\n")
    if bad:  # an old jobtool a manual install left in the first PATH directory
        write(base / "local" / "bin" / "jobtool", "#!/bin/sh\necho \"jobtool: unknown option $1\" >&2\nexit 2\n", 0o755)


CACHE_VALIDATE_PY = ("import os, sys\n"
                     "base = sys.argv[1]\n"
                     "cache = os.path.join(base, '.rows.cache')\n"
                     "try:\n"
                     "    with open(cache) as fh: seen = fh.read()\n"
                     "except FileNotFoundError:\n"
                     "    seen = ''\n"
                     "for n, line in enumerate(open(os.path.join(base, 'rows.csv')), 1):\n"
                     "    if len(line.split(',')) != 3:\n"
                     "        sys.stderr.write(f'rows.csv:{n}: expected 3 fields\\n')\n"
                     "        sys.exit(3)\n"
                     "print('ok', len(seen))\n")


def validator_leftover_cache(base: Path, bad: bool) -> None:
    """A guard: the bad run finds a cache file an earlier run left (where the good runs found
    nothing) but fails because of its input: the short row, not the cache, is the fault."""
    write(base / "validate.py", CACHE_VALIDATE_PY)
    rows = [f"{i},{i * 3},{i % 7}" for i in range(200)]
    if bad:
        rows[120] = "120,360"
        write(base / ".rows.cache", "199\n")
    write(base / "rows.csv", "\n".join(rows) + "\n")


STATE_PY = ("import os, sys\n"
            "state = os.path.join(sys.argv[1], 'run', 'job.state')\n"
            "try:\n"
            "    with open(state) as fh: owner = fh.read().strip()\n"
            "except FileNotFoundError:\n"
            "    owner = None\n"
            "if owner:\n"
            "    sys.stderr.write(f'job: a run is in progress ({owner}); remove {state}\\n')\n"
            "    sys.exit(1)\n"
            "with open(os.path.join(sys.argv[1], 'rows.csv')) as fh: print(sum(1 for _ in fh))\n")


def stale_state_file(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    write(base / "job.py", STATE_PY)
    write(base / "rows.csv", "".join(f"{i},{i * 3},{i % 7}\n" for i in range(200)))
    if bad:  # a crashed run never removed its state file
        write(base / "run" / "job.state", "pid 4242 on node7\n")


def node_vmem(base: Path, bad: bool) -> None:
    write(base / "limit", "600000" if bad else "unlimited")


HOOK = "#!/bin/sh\nif /usr/bin/git diff --cached | /usr/bin/grep -q FIXME; then echo 'lint: FIXME left in' >&2; exit 1; fi\n"


def git_hook_rejects(base: Path, bad: bool) -> None:
    repo = base / "repo"
    repo.mkdir()
    # each file an hour old before git adds it: an entry whose file is as new as the index (the
    # same second) is racily clean, and git commit reads the file again to be sure -- an openat
    # of a.txt in the runs whose setup fitted in one second only (a good-vs-good alarm under load)
    write(repo / "a.txt", "a\n")
    _an_hour_old(repo / "a.txt")
    sh("git init -q -b main . && git add a.txt && git commit -q -m one", repo, GIT_ENV)
    write(repo / ".git" / "hooks" / "pre-commit", HOOK, 0o755)
    write(repo / "b.txt", "step two\n" + ("FIXME: handle retries\n" if bad else ""))
    _an_hour_old(repo / "b.txt")
    sh("git add b.txt", repo, GIT_ENV)


def _an_hour_old(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def _git(b: Path, *args: str) -> list[str]:
    env = [f"{k}={v}" for k, v in GIT_ENV.items()]
    return ["/usr/bin/env", *env, "HOME=/nonexistent", "/usr/bin/git", "-C", f"{b}/repo", *args]


PROBES_OPEN = frozenset({"openat", "open"})
PROBES_STAT = frozenset({"openat", "newfstatat", "stat", "statx", "access", "faccessat", "faccessat2", "readlink"})
PROBES_FORK = frozenset({"clone", "clone3", "fork", "vfork"})
PROBES_WRITE = frozenset({"write", "pwrite64", "writev"})

REAL_FIFTH: list[Scenario] = [
    # library and plugin probing
    Scenario("verbs_provider_unreadable", "python3 verbs-style provider loader (nobody)",
             lambda b: [PY3, "-S", f"{b}/loader.py", f"{b}/verbs.conf"],
             provider_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/p3/libmlx5*",
             unprivileged=True, description="rxe/hns/efa are missing in all three provider directories and mlx5 in "
             "the first two (routine ENOENT); the mlx5 provider itself is root's 0600: 'couldn't load driver'"),
    Scenario("verbs_provider_dangling_symlink", "python3 verbs-style provider loader",
             lambda b: [PY3, "-S", f"{b}/loader.py", f"{b}/verbs.conf"],
             provider_dangling_symlink, PROBES_OPEN, "ENOENT", lambda b: f"{b}/p3/libmlx5-rdmav34.so",
             description="libmlx5-rdmav34.so -> libmlx5.so.1.24.0, the target removed by an upgrade: the same "
             "ENOENT as the routine misses, at the one path the good runs opened"),
    Scenario("plugin_dependency_missing", "python3 ctypes dlopen(RTLD_NOW) of a plugin",
             lambda b: [PY3, "-S", f"{b}/run_plugin.py", f"{b}/plugins/libjobplug.so"],
             plugin_dep_missing, PROBES_OPEN, "ENOENT", lambda b: "*/libjobdep.so",
             description="the plugin's NEEDED libjobdep.so is gone: ld.so looks in the RUNPATH, the cache and the "
             "system directories (all ENOENT) and dlopen fails"),
    Scenario("plugin_dependency_unreadable", "python3 ctypes dlopen(RTLD_NOW) of a plugin (nobody)",
             lambda b: [PY3, "-S", f"{b}/run_plugin.py", f"{b}/plugins/libjobplug.so"],
             plugin_dep_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/*deps/libjobdep.so",
             unprivileged=True, description="the dependency is root's 0600: ld.so's open fails EACCES, it searches "
             "on (ENOENT in the system directories) and gives up"),
    Scenario("ld_library_path_stale_copy", "sh: LD_LIBRARY_PATH=hotfix:lib job",
             lambda b: ["/bin/sh", "-c", f"LD_LIBRARY_PATH={b}/hotfix:{b}/lib exec {b}/job"],
             stale_library_first, PROBES_OPEN, None, lambda b: f"{b}/hotfix/libjob.so",
             description="an old libjob.so left in the first directory of the path is found first (the good runs "
             "get ENOENT there and load lib/libjob.so): 'symbol lookup error: undefined symbol: job_v2', exit 127"),
    Scenario("ld_library_dir_not_searchable", "job linked against private/libjob.so (nobody)",
             lambda b: ["/usr/bin/env", f"LD_LIBRARY_PATH={b}/private", f"{b}/job"],
             library_dir_not_searchable, PROBES_OPEN, "EACCES", lambda b: f"{b}/private/*libjob.so",
             unprivileged=True, description="the library directory is root's 0700: ld.so's open fails EACCES, the "
             "system directories do not have it, the job never starts (exit 127)"),
    Scenario("bundle_interpreter_not_elf", "sh runs a bundled tool with its own ld.so",
             lambda b: ["/bin/sh", "-c", f"{b}/bundle/bin/tool --version; echo exit=$?"],
             bundle_interpreter_not_elf, frozenset({"execve"}), "ELIBBAD", lambda b: f"{b}/bundle/bin/tool",
             description="the bundle's PT_INTERP (bundle/lib/ld.so) is an HTML error page: execve fails ELIBBAD"),
    Scenario("python_extension_unreadable", "python3 imports a compiled extension (nobody)",
             lambda b: [PY3, "-S", f"{b}/main.py", f"{b}/site1", f"{b}/site2"],
             ext_module_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/site2/fastmod*.so",
             unprivileged=True, description="the extension is found in the second path entry but is root's 0600: "
             "dlopen fails, ImportError"),
    Scenario("python_extension_dep_missing", "python3 imports a compiled extension",
             lambda b: [PY3, "-S", f"{b}/main.py", f"{b}/site1", f"{b}/site2"],
             ext_module_dep_missing, PROBES_OPEN, "ENOENT", lambda b: "*/libfastcore.so",
             description="the extension's NEEDED libfastcore.so is gone: ld.so's search fails, ImportError"),
    Scenario("node_package_main_missing", "node require() of a package",
             lambda b: ["/usr/bin/node", f"{b}/app/main.js"],
             node_main_missing, PROBES_STAT, "ENOENT", lambda b: f"{b}/node_modules/jobcfg/lib/index.js",
             description="package.json's main (lib/index.js) is not in the published package: node tries it with "
                         "every extension and index.js, 'Cannot find module'"),
    Scenario("node_module_unreadable", "node require() of a package (nobody)",
             lambda b: ["/usr/bin/node", f"{b}/app/main.js"],
             node_module_unreadable, PROBES_OPEN, "EACCES", lambda b: f"{b}/node_modules/jobcfg/lib/index.js",
             unprivileged=True, description="the package's main file is root's 0600: EACCES on open, node exits 1"),
    Scenario("jq_module_missing", "jq -L jqlib with an import",
             lambda b: ["/usr/bin/jq", "-n", "-L", f"{b}/jqlib", "-f", f"{b}/job.jq"],
             jq_module_missing, PROBES_STAT, "ENOENT", lambda b: f"{b}/jqlib/util.jq",
             description="jq stats util.jq, util/jq/main.jq, util/util.jq in ./ (routine misses) and in jqlib, "
                         "where the good runs find it: 'module not found', exit 3"),
    Scenario("pkgconfig_pc_unreadable", "pkg-config with PKG_CONFIG_PATH=pc1:pc2 (nobody)",
             lambda b: ["/usr/bin/env", f"PKG_CONFIG_PATH={b}/pc1:{b}/pc2", "/usr/bin/pkg-config", "--cflags",
                        "--libs", "jobcore"],
             pkgconfig_unreadable, PROBES_STAT, "EACCES", lambda b: f"{b}/pc2/jobcore.pc",
             unprivileged=True, description="jobcore.pc is root's 0600: pkg-config says the package is not found"),
    Scenario("tcl_source_missing", "tclsh job.tcl", lambda b: ["/usr/bin/tclsh", f"{b}/job.tcl"],
             tcl_source_missing, PROBES_STAT, "ENOENT", lambda b: f"{b}/lib/util.tcl",
             description="the script's helper library was not deployed: source fails"),
    # sysfs and procfs
    Scenario("monitor_sysfs_root_only", "python3 monitor of sysfs/procfs attributes (nobody)",
             lambda b: [PY3, "-S", f"{b}/monitor.py", f"{b}/attrs.conf"],
             monitor_attr_root_only, PROBES_OPEN, "EACCES", lambda b: "/sys/kernel/slab/kmalloc-64/objects",
             unprivileged=True, description="/sys/class/infiniband is not there (routine), every interface's "
             "rx_bytes is read; the new config's slab attribute is root's 0400"),
    Scenario("sysctl_bad_value", "unshare -n sysctl -w net.ipv4.ip_default_ttl=$(cat ttl)",
             lambda b: ["/usr/bin/unshare", "-n", "/bin/sh", "-c",
                        f"exec /usr/sbin/sysctl -q -w net.ipv4.ip_default_ttl=$(/usr/bin/cat {b}/ttl)"],
             sysctl_bad_value, PROBES_WRITE, "EINVAL", lambda b: "/proc/sys/net/ipv4/ip_default_ttl",
             description="a TTL of 0 is out of range: the write to /proc/sys fails EINVAL (private netns)"),
    Scenario("sysfs_mtu_bad_value", "unshare -n -m sh: echo $(cat mtu) > /sys/class/net/lo/mtu",
             lambda b: ["/usr/bin/unshare", "-n", "-m", "/bin/sh", "-c",
                        f"/usr/bin/mount -t sysfs sysfs /sys && echo $(/usr/bin/cat {b}/mtu) > /sys/class/net/lo/mtu"],
             sysfs_mtu_bad_value, PROBES_WRITE, "EINVAL", lambda b: "/sys/class/net/lo/mtu",
             description="'9000B' is no number: the sysfs attribute's write fails EINVAL"),
    Scenario("cgroup_rmdir_busy", "rmdir of a job's cgroup", lambda b: ["/usr/bin/rmdir", str(_cgroup("rmdir"))],
             cgroup_rmdir_busy, frozenset({"rmdir", "unlinkat"}), "EBUSY", lambda b: str(_cgroup("rmdir")),
             teardown=_cgroup_teardown("rmdir"), description="a straggler of the job is still in the cgroup: "
             "rmdir fails EBUSY"),
    Scenario("proc_fd_other_user", "sh: ls /proc/$(cat app.pid)/fd (nobody)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/ls /proc/$(/usr/bin/cat {b}/app.pid)/fd"],
             _other_pid, PROBES_OPEN, "EACCES", lambda b: "/proc/*/fd",
             teardown=BACKGROUND.stop, unprivileged=True,
             description="the pid file names root's process now: its fd directory is not ours to list"),
    Scenario("pidfile_process_gone", "sh: grep -q sleep /proc/$(cat app.pid)/cmdline",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/grep -q sleep /proc/$(/usr/bin/cat {b}/app.pid)/cmdline"],
             pidfile_process_gone, PROBES_OPEN, "ENOENT", lambda b: "/proc/*/cmdline",
             teardown=BACKGROUND.stop, description="the daemon named by the pid file is gone: /proc/<pid> is not "
             "there (ENOENT)"),
    Scenario("monitor_pid_gone", "python3 health check reads /proc/<pid>/stat",
             lambda b: [PY3, "-S", f"{b}/health.py", f"{b}/app.pid"],
             monitor_pid_gone, PROBES_OPEN, "ENOENT", lambda b: "/proc/*/stat",
             teardown=BACKGROUND.stop, description="the pid file's process exited: the open of its stat fails ENOENT"),
    # resource limits
    Scenario("sockets_nofile_limit", "sh: ulimit -n $(cat limit); python3 socket pool",
             lambda b: ["/bin/sh", "-c", f"ulimit -n $(/usr/bin/cat {b}/limit); exec {PY3} -S {b}/pool.py"],
             sockets_nofile, frozenset({"socket"}), "EMFILE", lambda b: NO_PATH,
             description="48 sockets under a limit of 32 descriptors: socket() fails EMFILE"),
    Scenario("perl_nofile_limit", "sh: ulimit -n $(cat limit); perl opens 40 files",
             lambda b: ["/bin/sh", "-c", f"ulimit -n $(/usr/bin/cat {b}/limit); exec /usr/bin/perl {b}/openall.pl "
                        f"{b}/in/*"],
             perl_nofile, PROBES_OPEN, "EMFILE", lambda b: f"{b}/in/f*",
             description="the 22nd open under a limit of 24 descriptors fails EMFILE"),
    Scenario("gzip_fsize_limit", "sh: ulimit -f $(cat limit); gzip -c > out.gz",
             lambda b: ["/bin/sh", "-c", f"ulimit -f $(/usr/bin/cat {b}/limit); exec /usr/bin/gzip -c {b}/data.bin "
                        f"> {b}/out.gz"],
             fsize_limit, PROBES_WRITE, "EFBIG", lambda b: f"{b}/out.gz",
             description="the output passes RLIMIT_FSIZE: write fails EFBIG and SIGXFSZ kills gzip"),
    Scenario("tar_fsize_limit", "sh: ulimit -f $(cat limit); tar -cf",
             lambda b: ["/bin/sh", "-c", f"ulimit -f $(/usr/bin/cat {b}/limit); exec /usr/bin/tar -cf {b}/bundle.tar "
                        f"-C {b}/src ."],
             tar_fsize_limit, PROBES_WRITE, "EFBIG", lambda b: f"{b}/bundle.tar",
             description="the archive passes RLIMIT_FSIZE half way: EFBIG, SIGXFSZ"),
    Scenario("nproc_limit_fork", "prlimit --nproc=$(cat limit) python3 forks workers (nobody)",
             lambda b: ["/bin/sh", "-c", f"exec /usr/bin/prlimit --nproc=$(/usr/bin/cat {b}/limit) {PY3} -S "
                        f"{b}/workers.py 3"],
             nproc_limit, PROBES_FORK, "EAGAIN", lambda b: NO_PATH,
             unprivileged=True, description="RLIMIT_NPROC 1 for the job's user: the first fork fails EAGAIN"),
    Scenario("xargs_nproc_limit", "sh: prlimit --nproc xargs -P3 (nobody)",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/printf '%s\\n' {b}/in/* | /usr/bin/prlimit "
                        f"--nproc=$(/usr/bin/cat {b}/limit) /usr/bin/xargs -P3 -n2 /usr/bin/wc -l"],
             xargs_nproc_limit, PROBES_FORK, "EAGAIN", lambda b: NO_PATH,
             unprivileged=True, description="xargs cannot fork its first wc: EAGAIN, 'cannot fork'"),
    Scenario("cgroup_pids_max", "sh joins the job's cgroup; python3 forks 6 workers",
             lambda b: ["/bin/sh", "-c", f"echo $$ > {_cgroup('pids')}/cgroup.procs && exec {PY3} -S {b}/workers.py 6"],
             cgroup_pids_max, PROBES_FORK, "EAGAIN", lambda b: NO_PATH,
             teardown=_cgroup_teardown("pids"), description="the cgroup's pids.max is 4: the fourth fork fails EAGAIN"),
    Scenario("memlock_limit_mlock", "sh: ulimit -l $(cat limit); python3 pins a buffer (nobody)",
             lambda b: ["/bin/sh", "-c", f"ulimit -l $(/usr/bin/cat {b}/limit); exec {PY3} -S {b}/pin.py mlock"],
             _memlock("512"), frozenset({"mlock", "mlock2"}), "ENOMEM", lambda b: NO_PATH,
             unprivileged=True, description="RLIMIT_MEMLOCK 512 KiB, a 2 MiB buffer pinned (what ibv_reg_mr does): "
             "mlock fails ENOMEM"),
    Scenario("memlock_zero_mlock", "sh: ulimit -l $(cat limit); python3 pins a buffer (nobody)",
             lambda b: ["/bin/sh", "-c", f"ulimit -l $(/usr/bin/cat {b}/limit); exec {PY3} -S {b}/pin.py mlock"],
             _memlock("0"), frozenset({"mlock", "mlock2"}), "EPERM", lambda b: NO_PATH,
             unprivileged=True, description="RLIMIT_MEMLOCK 0 (a container default): mlock fails EPERM"),
    Scenario("memlock_limit_map_locked", "sh: ulimit -l $(cat limit); python3 mmap(MAP_LOCKED) (nobody)",
             lambda b: ["/bin/sh", "-c", f"ulimit -l $(/usr/bin/cat {b}/limit); exec {PY3} -S {b}/pin.py map_locked"],
             _memlock("512"), frozenset({"mmap"}), "EAGAIN", lambda b: NO_PATH,
             unprivileged=True, description="mmap(MAP_LOCKED) of 2 MiB under a 512 KiB limit fails EAGAIN"),
    Scenario("hugepages_none_reserved", "python3 pool with MAP_HUGETLB",
             lambda b: [PY3, "-S", f"{b}/pool.py", f"{b}/pool.conf"],
             hugepages_none_reserved, frozenset({"mmap"}), "ENOMEM", lambda b: NO_PATH,
             description="the config asks for huge pages, the host has none reserved (nr_hugepages 0): "
             "mmap(MAP_HUGETLB) fails ENOMEM"),
    Scenario("dev_shm_too_small", "unshare -m: small /dev/shm; python3 shared-memory segment",
             lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
                        f"/usr/bin/mount -t tmpfs -o size=$(/usr/bin/cat {b}/shm_size) shm /dev/shm && "
                        f"exec {PY3} -S {b}/seg.py"],
             shm_too_small, frozenset({"fallocate"}), "ENOSPC", lambda b: "/dev/shm/nccl-*",
             description="an 8 MiB segment in a 1 MiB /dev/shm (a container's default; NCCL's classic): "
             "posix_fallocate fails ENOSPC"),
    Scenario("perl_vmem_limit", "sh: ulimit -v $(cat limit); perl builds a 400 MB string",
             lambda b: ["/bin/sh", "-c", f"ulimit -v $(/usr/bin/cat {b}/limit); exec /usr/bin/perl -e "
                        "'my $x = \"a\" x (400 * 1024 * 1024); print length($x), \"\\n\"'"],
             perl_vmem, frozenset({"mmap", "mremap", "brk"}), "ENOMEM", lambda b: NO_PATH,
             description="a 300 MB address-space limit: perl's allocation fails, 'Out of memory'"),
    Scenario("git_clone_disk_full", "git clone into a full disk",
             lambda b: ["/usr/bin/git", "clone", "-q", "--no-hardlinks", f"{b}/src", f"{b}/mnt/clone"],
             git_clone_full, frozenset({"write", "pwrite64", "openat", "mkdir", "mkdirat", "fallocate", "symlink",
                                        "link", "rename"}), "ENOSPC", lambda b: f"{b}/mnt/clone*",
             teardown=umount_after("mnt"), description="the clone's filesystem is full: its first object write fails"),
    Scenario("proc_environ_other_user", "sh: tr < /proc/$(cat app.pid)/environ (nobody)",
             lambda b: ["/bin/sh", "-c", f"/usr/bin/tr '\\0' '\\n' < /proc/$(/usr/bin/cat {b}/app.pid)/environ"],
             _other_pid, PROBES_OPEN, "EACCES", lambda b: "/proc/*/environ",
             teardown=BACKGROUND.stop, unprivileged=True,
             description="the pid file names root's process now: its environment is not ours to read"),
    Scenario("node_vmem_limit", "sh: ulimit -v $(cat limit); node",
             lambda b: ["/bin/sh", "-c", f"ulimit -v $(/usr/bin/cat {b}/limit); exec /usr/bin/node -e "
                        "'console.log(process.version)'"],
             node_vmem, frozenset({"mmap"}), "ENOMEM", lambda b: NO_PATH,
             description="V8 reserves 512 MB of address space for its code range at start-up: under a 600 MB "
             "limit the mmap fails ENOMEM, 'Fatal process OOM', SIGTRAP"),
    # shadowing: another copy found first
    Scenario("path_stale_tool_first", "sh: PATH=local/bin:bin jobtool",
             lambda b: ["/bin/sh", "-c", f"PATH={b}/local/bin:{b}/bin:/usr/bin jobtool --format=json {b}/in.txt"],
             path_stale_tool, frozenset({"execve", "newfstatat", "stat", "statx", "openat"}), None,
             lambda b: f"{b}/local/bin/jobtool",
             description="an old jobtool in the first PATH directory (the good runs' stat there fails ENOENT): "
             "sh runs it, 'unknown option', exit 2; its stat, execve or open names the stale copy"),
    # no failing call
    Scenario("validator_leftover_cache", "python3 validator that reads an optional cache",
             lambda b: [PY3, "-S", f"{b}/validate.py", str(b)],
             validator_leftover_cache, PROBES_WRITE, None, lambda b: "/dev/null",
             description="guard: a short row makes the validator exit 3; the cache file an earlier run left "
             "(found where the good runs got ENOENT) is not why"),
    Scenario("stale_state_file_refuses", "python3 job with a state file",
             lambda b: [PY3, "-S", f"{b}/job.py", str(b)],
             stale_state_file, PROBES_OPEN, None, lambda b: f"{b}/run/job.state",
             description="a crashed run's state file (the good runs' open fails ENOENT): the job refuses to "
             "start, exit 1 -- the leftover is the fault (guard of the rule for validator_leftover_cache)"),
    Scenario("git_hook_rejects_commit", "git commit with a pre-commit hook", lambda b: _git(b, "commit", "-q", "-m", "two"),
             git_hook_rejects, PROBES_WRITE, None, lambda b: "/dev/null",
             description="the pre-commit hook finds a FIXME and exits 1 (its message on stderr): git aborts the "
             "commit; no call fails"),
]

# Scored by `bench.scenario_accuracy --real` only: each repeats the call, errno and kind of
# fault of a case the tests run (tests/test_real_programs_fifth.py keeps to about a minute).
BENCH_ONLY = frozenset({
    "python_extension_dep_missing", "tar_fsize_limit", "xargs_nproc_limit", "memlock_zero_mlock",
    "node_module_unreadable", "monitor_pid_gone",
})


# --- good vs good: run-to-run noise -------------------------------------------------------------
SCAN_STAT_PY = ("import os, time\n"
                "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
                "time.sleep(0.8)\n"
                "alive = 0\n"
                "for pid in pids:\n"
                "    try:\n"
                "        with open(f'/proc/{pid}/stat') as fh: fh.read()\n"
                "        alive += 1\n"
                "    except (FileNotFoundError, ProcessLookupError):\n"
                "        pass\n"
                "print(alive > 0)\n")


def _short_lived(base: Path, run: int) -> None:
    """The last run's scan lists processes that exit before it reads them: each is reaped by a
    thread of ours as it exits (an unreaped zombie would keep its /proc entry)."""
    if run == 2:
        for _ in range(3):
            proc = subprocess.Popen(["/usr/bin/sleep", "0.4"])
            threading.Thread(target=proc.wait, daemon=True).start()


SYSFS_PROBE_PY = ("import glob, os\n"
                  "n = 0\n"
                  "for base in ('/sys/class/infiniband', '/sys/class/infiniband_verbs', '/sys/class/net'):\n"
                  "    if not os.path.isdir(base):\n"
                  "        continue\n"
                  "    for dev in sorted(os.listdir(base)):\n"
                  "        for attr in ('mtu', 'operstate', 'address', 'device/vendor', 'device/device'):\n"
                  "            try:\n"
                  "                with open(os.path.join(base, dev, attr)) as fh: n += len(fh.read())\n"
                  "            except OSError:\n"
                  "                pass\n"
                  "for dev in sorted(glob.glob('/sys/bus/pci/devices/*')):\n"
                  "    with open(dev + '/vendor') as fh: n += len(fh.read())\n"
                  "print(n)\n")
SITE_PY = "import json, decimal, sqlite3, ssl, ctypes, email.message; print('ok')"
NODE_JS = ("const os = require('os'); const fs = require('fs'); const path = require('path');\n"
           "const p = path.join(os.tmpdir(), 'x'); fs.existsSync(p);\n"
           "console.log(os.cpus().length > 0, JSON.stringify({a: 1}));\n")
TCL = "set f [open [lindex $argv 0]]\nputs [string length [read $f]]\nclose $f\n"


def _git_repo(base: Path, run: int) -> None:
    repo = base / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    write(repo / "src" / "deep" / "a.txt", "a\n")
    sh("git init -q -b main . && git add . && git commit -q -m one", repo, GIT_ENV)


def _providers_quiet(base: Path, run: int) -> None:
    provider_dangling_symlink(base, False)


def _fastmod_quiet(base: Path, run: int) -> None:
    _fastmod(base)


def _ld_dirs(base: Path, run: int) -> None:
    """LD_LIBRARY_PATH's first entry is a directory the job may not search (root's 0700); the
    library is in the second: ld.so's EACCES there is routine, every run."""
    _cc(base, "lib/libjob.so", "int job_v1(void) { return 1; }\nint job_v2(void) { return 2; }\n", "-shared")
    _cc(base, "job", JOB_C, f"-L{base}/lib -ljob")
    own(base)
    (base / "root_only").mkdir(mode=0o700)


def _jq_quiet(base: Path, run: int) -> None:
    jq_module_missing(base, False)


QUIET_FIFTH: list[NoAnomalyCase] = [
    NoAnomalyCase(
        "verbs_provider_probe",
        lambda b: [PY3, "-S", f"{b}/loader.py", f"{b}/verbs.conf"],
        _providers_quiet, description="four drivers in three provider directories, three of them absent "
        "everywhere: the same ENOENT probes every run"),
    NoAnomalyCase(
        "python_extension_import",
        lambda b: [PY3, "-S", f"{b}/main.py", f"{b}/site1", f"{b}/site2"],
        _fastmod_quiet, description="a compiled extension found in the second sys.path entry; ld.so loads its "
        "dependency through RUNPATH"),
    NoAnomalyCase(
        "ld_library_path_unsearchable_first",
        lambda b: ["/usr/bin/setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
                   "/usr/bin/env", f"LD_LIBRARY_PATH={b}/root_only/x:{b}/lib", f"{b}/job"],
        _ld_dirs, description="ld.so meets a directory it may not search (EACCES) first, every run"),
    NoAnomalyCase(
        "jq_module_search",
        lambda b: ["/usr/bin/jq", "-n", "-L", f"{b}/jqlib", "-f", f"{b}/job.jq"],
        _jq_quiet, description="jq's module search: misses in ./ before jqlib, every run"),
    NoAnomalyCase(
        "python_site_startup",
        lambda b: [PY3, "-c", SITE_PY],
        lambda b, i: None, description="python without -S: site-packages, .pth files, encodings and extension "
        "modules probed at start-up"),
    NoAnomalyCase(
        "perl_module_startup",
        lambda b: ["/usr/bin/perl", "-MPOSIX", "-MData::Dumper", "-MStorable", "-MFile::Temp", "-e", "print 1"],
        lambda b, i: None, description="perl's @INC probing for four modules and their XS parts"),
    NoAnomalyCase(
        "tclsh_startup",
        lambda b: ["/usr/bin/tclsh", f"{b}/job.tcl", "/etc/hostname"],
        lambda b, i: write(b / "job.tcl", TCL), description="tclsh's init.tcl and encoding probing"),
    NoAnomalyCase(
        "node_startup",
        lambda b: ["/usr/bin/node", "-e", NODE_JS],
        lambda b, i: None, description="node's start-up: libuv's worker threads, V8's platform threads, "
        "their order and futex waits vary"),
    NoAnomalyCase(
        "git_discovery_from_subdir",
        lambda b: ["/bin/sh", "-c", f"cd {b}/repo/src/deep && /usr/bin/git rev-parse --show-toplevel && "
                   "/usr/bin/git log --oneline -1 && /usr/bin/git status --short"],
        _git_repo, description="git walks up from a subdirectory looking for .git, reads its config chain"),
    NoAnomalyCase(
        "getent_hosts_files",
        lambda b: ["/bin/sh", "-c", "/usr/bin/getent hosts localhost; /usr/bin/getent ahosts localhost; "
                   "/usr/bin/getent hosts ip6-localhost"],
        lambda b, i: None, description="name lookups answered from /etc/hosts (no DNS)"),
    NoAnomalyCase(
        "locale_fallback",
        lambda b: ["/usr/bin/env", "LC_ALL=de_DE.UTF-8", "LANG=de_DE.UTF-8", "/usr/bin/sort", "/etc/passwd"],
        lambda b, i: None, description="a locale this host does not have: the same ENOENT probes, every run"),
    NoAnomalyCase(
        "no_terminal",
        lambda b: ["/bin/sh", "-c", "/usr/bin/tty; /usr/bin/stty -a; /usr/bin/ls -C --color=auto /etc/ssl; true"],
        lambda b, i: None, description="tty, stty and ls asking a /dev/null stdin/stdout for a terminal: ENOTTY"),
    NoAnomalyCase(
        "proc_scan_process_exits",
        lambda b: [PY3, "-S", "-c", SCAN_STAT_PY],
        _short_lived, description="a /proc scan lists every pid, then reads each one's stat: in the last run "
        "three processes exit in between (ENOENT at the scan's call site)"),
    NoAnomalyCase(
        "pidof_pgrep",
        lambda b: ["/bin/sh", "-c", "/usr/bin/pidof sleep; /usr/bin/pgrep -c -u root; true"],
        lambda b, i: None, description="procps scanning every /proc/<pid>: which and how many vary"),
    NoAnomalyCase(
        "sysfs_device_probe",
        lambda b: [PY3, "-S", "-c", SYSFS_PROBE_PY],
        lambda b, i: None, description="RDMA-style device probing: /sys/class/infiniband absent, net devices' "
        "attributes (some missing on virtual devices), PCI vendors"),
    NoAnomalyCase(
        "rdma_tool_no_devices",
        lambda b: ["/bin/sh", "-c", "/usr/bin/rdma dev show; /usr/bin/rdma link show; true"],
        lambda b, i: None, description="iproute2's rdma tool on a host without RDMA devices (netlink)"),
    NoAnomalyCase(
        "ldd_resolution",
        lambda b: ["/usr/bin/ldd", "/usr/bin/git", "/usr/bin/python3"],
        lambda b, i: None, description="ldd's ld.so --list: every library's search-path probes"),
    NoAnomalyCase(
        "shm_random_names",
        lambda b: ["/usr/bin/env", "SEGMENTS=3", "SEG_SIZE=65536", PY3, "-S", "-c", SHM_PY],
        lambda b, i: None, description="POSIX shared-memory segments with random names (/dev/shm/nccl-<hex>)"),
]


def quiet_teardown() -> None:
    """Stop what the cases started."""
    BACKGROUND.stop()
