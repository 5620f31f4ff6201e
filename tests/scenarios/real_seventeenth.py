"""A seventeenth set of real programs with one real fault each: the job's software environment --
what the dynamic loader, the interpreters and the libraries a job links do before (and around)
the job's own code, in mechanisms the first sixteen sets do not use.

- **the dynamic loader**: a bundle whose own ELF interpreter (PT_INTERP) is missing (execve
  ENOENT on a binary that is there), an RPATH of ``$ORIGIN/../lib`` pointing at a directory the
  installer no longer makes (open ENOENT under ``bin/../lib``), a private ``ld.so.cache`` (built
  with ``ldconfig -C``, bound over /etc/ld.so.cache in a mount namespace of the job's own) naming
  a library directory an upgrade renamed without rerunning ldconfig, an ``LD_PRELOAD`` profiling
  shim installed root-only under a job run as nobody (open EACCES; ld.so ignores it and the job
  runs on), a library whose symbol version the job needs is older on the bad host (no failing
  call: ld.so's message), a library on a mount made ``noexec`` (mmap PROT_EXEC EPERM, "failed to
  map segment"), an ``LD_LIBRARY_PATH`` entry that is a file (ENOTDIR), a plugin dlopen'ed with
  RTLD_NOW whose symbol the host's library lacks (no failing call: the message);
- **Python's start-up and import machinery**: a ``.pth`` file naming a vendor directory of a
  version not installed (stat ENOENT; site drops it silently, the import fails later), a
  package directory unpacked root-only 0700 (stat EACCES of its ``__init__``), ``PYTHONHOME``
  left pointing at a removed environment (the encodings module not found under it);
- **configuration and environment search**: an environment-modules style ``PATH`` entry for a
  tool version that was uninstalled (execve ENOENT, the shell's PATH search), a CA bundle
  symlink left dangling by a certificate rotation (open ENOENT), a fontconfig drop-in installed
  root-only (access EACCES: fontconfig skips it silently).

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what
`strace -f` shows a person looking for the fault (checked by hand with strace; real_eighth.py's
convention: a fault with no failing call is the message it writes, to the runs' stderr).

The good-vs-good cases (`QUIET_SEVENTEENTH`) carry the routine probing of a job's environment:
ld.so's search of ``LD_LIBRARY_PATH`` (and its glibc-hwcaps subdirectories) in a different order
each run, a shell's ``PATH`` search finding the tool in a different module
directory each run, ``.pth`` files with 1 to 3 stale entries, ``PYTHONPATH`` with the module in a
different entry each run, a private ld.so.cache holding a varying number of other libraries,
fontconfig's cache built by the run or found from an earlier one, and a locale the host does not have (a
different one each run: setlocale's fallback to C).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import mount_tmpfs, umount_after, write
from .harness import ROOT, NoAnomalyCase, Scenario
from .real import NOBODY_UID, sh

PY3 = "/usr/bin/python3"
NO_PATH = "*"
STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
STAT_PROBES = frozenset({"stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2"})
OPEN_PROBES = frozenset({"open", "openat", "openat2"})
MESSAGE_PROBES = frozenset({"write", "writev"})
LOADER = "/lib64/ld-linux-x86-64.so.2"


def _cc(base: Path, out: str, source: str, flags: str = "") -> Path:
    """Compile `source` to base/out with gcc once per session and base path (later runs copy
    the cached build, so every run of a case links the same bytes)."""
    key = hashlib.sha256(f"{base}\0{out}\0{source}\0{flags}".encode()).hexdigest()[:16]
    cached = ROOT / "_cc17" / key / Path(out).name
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


def _root_only(path: Path, mode: int = 0o600) -> None:
    """Root's own, `mode`: what a job run as nobody meets after a root-run install (umask 077)."""
    os.chown(path, 0, 0, follow_symlinks=False)
    path.chmod(mode)


# --- the job and its library ------------------------------------------------------------------
JOB_C = ('#include <stdio.h>\nint job_n(void);\nint job_m(void);\n'
         'int main(void) { printf("job %d\\n", job_n() + job_m()); return 0; }\n')
LIB_C = "int job_n(void) { return 1; }\nint job_m(void) { return 2; }\n"
LIB_OLD_C = "int job_n(void) { return 1; }\n"
MAP_NEW = "LIBJOB_1.0 { global: job_n; local: *; };\nLIBJOB_2.0 { global: job_m; } LIBJOB_1.0;\n"
MAP_OLD = "LIBJOB_1.0 { global: job_n; job_m; local: *; };\n"
TOOL_C = '#include <stdio.h>\nint main(void) { puts("job 1.0"); return 0; }\n'
SONAME = "libjob.so.1"


def _lib(base: Path, where: str, *, old: bool = False, old_version: bool = False) -> Path:
    """libjob.so.1 in base/where: the current library (versions LIBJOB_1.0 and 2.0), the old
    one whose versions stop at 1.0 (`old_version`), or an older one still without job_m (`old`)."""
    mapfile = ROOT / "_cc17" / ("old.map" if old_version else "new.map")
    mapfile.parent.mkdir(parents=True, exist_ok=True)
    if not mapfile.exists():
        mapfile.write_text(MAP_OLD if old_version else MAP_NEW)
    return _cc(base, f"{where}/{SONAME}", LIB_OLD_C if old else LIB_C,
               f"-shared -Wl,-soname,{SONAME}" + ("" if old else f" -Wl,--version-script={mapfile}"))


def _job(base: Path, out: str = "bin/job", flags: str = "") -> Path:
    """The job, linked against the current libjob (built aside in base/.link, then removed)."""
    _lib(base, ".link")
    os.symlink(SONAME, base / ".link" / "libjob.so")
    job = _cc(base, out, JOB_C, f"-L{base}/.link -ljob {flags}")
    shutil.rmtree(base / ".link")
    return job


def _with_lib_path(b: Path, path: str, prog: str) -> list[str]:
    return ["/bin/sh", "-c", f"LD_LIBRARY_PATH={path} exec {prog}"]


# --- the dynamic loader -----------------------------------------------------------------------
def bundle_loader_missing(base: Path, bad: bool) -> None:
    # a self-contained bundle carries its own loader; the bad host's copy of the bundle was
    # unpacked without its lib/ (an rsync filter on *.so*)
    (base / "bundle" / "lib").mkdir(parents=True)
    _cc(base, "bundle/bin/job", TOOL_C, f"-Wl,--dynamic-linker={base}/bundle/lib/ld-linux-x86-64.so.2")
    if not bad:
        shutil.copy2(LOADER, base / "bundle" / "lib" / "ld-linux-x86-64.so.2")


def rpath_origin_dangling(base: Path, bad: bool) -> None:
    # the job finds its library through RPATH $ORIGIN/../lib; the bad host's installer (a newer
    # packaging) put the libraries in lib64
    _job(base, "app/bin/job", "-Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'")
    _lib(base, "app/lib64" if bad else "app/lib")


def _private_cache(base: Path, conf_dirs: list[str]) -> None:
    """ldconfig -C base/ld.so.cache over conf_dirs (and the trusted system directories), in a
    mount namespace whose /var/cache/ldconfig is a tmpfs: ldconfig always rewrites its aux-cache
    there, and the host's must stay untouched."""
    write(base / "ld.so.conf", "".join(f"{d}\n" for d in conf_dirs))
    subprocess.run(["/usr/bin/unshare", "-m", "/bin/sh", "-c",
                    "mount -t tmpfs -o size=4m tracebase-test /var/cache/ldconfig && "
                    f"/usr/sbin/ldconfig -C {base}/ld.so.cache -f {base}/ld.so.conf"],
                   check=True, capture_output=True)


def _with_cache(b: Path) -> list[str]:
    # the job's container shim binds the image's ld.so.cache over the host's, in a mount
    # namespace of the job's own (unshare's default propagation is private: nothing leaks out)
    return ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
            f"mount --bind {b}/ld.so.cache /etc/ld.so.cache && exec {b}/bin/job"]


def ldso_cache_stale(base: Path, bad: bool) -> None:
    _job(base)
    _lib(base, "opt/job-1.2/lib")
    _private_cache(base, [f"{base}/opt/job-1.2/lib"])
    if bad:  # upgraded to 1.3 by unpacking, without rerunning ldconfig: the cache names 1.2
        (base / "opt" / "job-1.2").rename(base / "opt" / "job-1.3")


SHIM_C = ('#include <stdlib.h>\n__attribute__((constructor)) static void shim_init(void) '
          '{ setenv("JOB_TRACE", "1", 0); }\n')


def preload_shim_root_only(base: Path, bad: bool) -> None:
    shim = _cc(base, "shim/libjobtrace.so", SHIM_C, "-shared")
    if bad:  # the profiler's package installed under umask 077
        _root_only(shim)


def symbol_version_old(base: Path, bad: bool) -> None:
    # the job was built against libjob 2.x; the bad host's library stops at LIBJOB_1.0
    _job(base)
    _lib(base, "lib", old_version=bad)


def library_on_noexec_mount(base: Path, bad: bool) -> None:
    # the libraries live on a separate mount; the bad host's fstab mounts it noexec (hardening)
    _job(base)
    mount_tmpfs(base / "opt", "8m")
    if bad:
        subprocess.run(["mount", "-o", "remount,noexec", str(base / "opt")], check=True)
    _lib(base, "opt/lib")


def library_path_entry_is_file(base: Path, bad: bool) -> None:
    _job(base)
    if bad:  # the library directory was saved as one file (a download of the tarball)
        write(base / "lib", "\x1f\x8b not a directory\n")
    else:
        _lib(base, "lib")


PLUGIN_LOADER_PY = r'''
import ctypes, sys
plugin = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL | 2)  # RTLD_NOW: resolve at load
print("plugin", plugin.plug_n())
'''
PLUGIN_C = "int job_m(void);\nint plug_n(void) { return job_m() + 40; }\n"


def plugin_symbol_missing(base: Path, bad: bool) -> None:
    # the plugin finds the host's libjob through its RPATH; the bad host's libjob predates job_m
    write(base / "load.py", PLUGIN_LOADER_PY)
    _lib(base, "lib", old=bad)
    os.symlink(SONAME, base / "lib" / "libjob.so")
    _cc(base, "plugins/libjobplug.so", PLUGIN_C,
        f"-shared -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' -L{base}/lib -ljob -Wl,--allow-shlib-undefined")


# --- python -------------------------------------------------------------------------------------
PTH_PY = ("import site, sys\nsite.addsitedir(sys.argv[1])\nimport jobkit\nprint('jobkit', jobkit.N)\n")


def pth_vendor_missing(base: Path, bad: bool) -> None:
    # the .pth names jobkit-1.3; the bad host's vendor tree still has 1.2 (a half-done upgrade)
    write(base / "run.py", PTH_PY)
    (base / "site").mkdir()
    write(base / "site" / "jobkit.pth", f"{base}/vendor/jobkit-1.3\n")
    have = base / "vendor" / ("jobkit-1.2" if bad else "jobkit-1.3")
    have.mkdir(parents=True)
    write(have / "jobkit.py", "N = 13\n")


IMPORT_PY = "import sys\nsys.path.insert(0, sys.argv[1])\nimport jobpkg.core\nprint('core', jobpkg.core.N)\n"


def package_dir_root_only(base: Path, bad: bool) -> None:
    write(base / "run.py", IMPORT_PY)
    pkg = base / "lib" / "jobpkg"
    pkg.mkdir(parents=True)
    write(pkg / "__init__.py", "")
    write(pkg / "core.py", "N = 7\n")
    if bad:  # unpacked by root under umask 077
        _root_only(pkg, 0o700)


def pythonhome_stale(base: Path, bad: bool) -> None:
    # the job's environment file sets PYTHONHOME; the bad host's still names a removed venv
    write(base / "job.env", f"PYTHONHOME={base}/venv-py3.9\n" if bad else "PYTHONHOME=/usr\n")
    write(base / "start.sh", f". {base}/job.env\nexport PYTHONHOME\nexec {PY3} -S -c 'import json; print(json.dumps(1))'\n")


# --- configuration and environment search -------------------------------------------------------
def _tool(path: Path) -> None:
    write(path, "#!/bin/sh\necho jobtool 2.1\n", 0o755)


def module_tool_uninstalled(base: Path, bad: bool) -> None:
    # `module load jobtool/2.1` as a profile snippet; the bad host has only 2.0 installed
    write(base / "modules.sh", f"PATH={base}/modules/jobtool/2.1/bin:$PATH\n")
    write(base / "start.sh", f"set -e\n. {base}/modules.sh\njobtool --version\n")
    have = base / "modules" / "jobtool" / ("2.0" if bad else "2.1") / "bin"
    have.mkdir(parents=True)
    _tool(have / "jobtool")


CA_PY = ("import ssl, sys\nctx = ssl.create_default_context(cafile=sys.argv[1])\n"
         "print('ca', len(ctx.get_ca_certs()))\n")
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def ca_bundle_dangling(base: Path, bad: bool) -> None:
    write(base / "ca.py", CA_PY)
    (base / "certs").mkdir()
    # the rotation installed ca-2026.pem and removed 2025's; the bad host's symlink was not updated
    shutil.copy2(SYSTEM_BUNDLE, base / "certs" / "ca-2026.pem")
    os.symlink("ca-2025.pem" if bad else "ca-2026.pem", base / "certs" / "ca-bundle.crt")


FONTS_CONF = '''<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>{b}/fc/fonts</dir>
  <cachedir>{b}/fc/cache</cachedir>
  <include ignore_missing="yes">{b}/fc/conf.d</include>
</fontconfig>
'''
DROPIN = ('<?xml version="1.0"?>\n<fontconfig><alias><family>{family}</family><prefer><family>DejaVu Sans'
          '</family></prefer></alias></fontconfig>\n')


def _fontconfig(base: Path, dropins: list[str]) -> None:
    for d in ("fonts", "conf.d", "cache"):
        (base / "fc" / d).mkdir(parents=True)
    os.chown(base / "fc" / "cache", NOBODY_UID, NOBODY_UID)
    write(base / "fc" / "fonts.conf", FONTS_CONF.format(b=base))
    for name in dropins:
        write(base / "fc" / "conf.d" / name, DROPIN.format(family=name.split("-", 1)[1].removesuffix(".conf")))


def _fc_match(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"FONTCONFIG_FILE={b}/fc/fonts.conf exec /usr/bin/fc-match job"]


def fontconfig_dropin_root_only(base: Path, bad: bool) -> None:
    _fontconfig(base, ["10-job.conf", "50-site.conf"])
    if bad:  # the site's drop-in installed by root under umask 077
        _root_only(base / "fc" / "conf.d" / "50-site.conf")


REAL_SEVENTEENTH: list[Scenario] = [
    Scenario("bundle_loader_missing", "job (a bundle with its own PT_INTERP)",
             lambda b: ["/bin/sh", "-c", f"exec {b}/bundle/bin/job"], bundle_loader_missing,
             frozenset({"execve", "execveat"}), "ENOENT", lambda b: f"{b}/bundle/bin/job",
             description="the bundle's own loader is missing: execve ENOENT on a binary that is there"),
    Scenario("rpath_origin_lib_moved", "job (RPATH $ORIGIN/../lib)",
             lambda b: [f"{b}/app/bin/job"], rpath_origin_dangling, OPEN_PROBES, "ENOENT",
             lambda b: f"{b}/app/*lib/{SONAME}",
             description="RPATH $ORIGIN/../lib names a directory the installer no longer makes"),
    Scenario("ldso_cache_names_renamed_dir", "unshare -m: job under a private ld.so.cache (ldconfig -C)",
             _with_cache, ldso_cache_stale, OPEN_PROBES, "ENOENT", lambda b: f"{b}/opt/job-1.2/lib/{SONAME}",
             description="a library directory renamed without rerunning ldconfig: the cache's path is gone"),
    Scenario("preload_shim_root_only", "date (LD_PRELOAD shim, as nobody)",
             lambda b: ["/bin/sh", "-c", f"LD_PRELOAD={b}/shim/libjobtrace.so exec /bin/date +%Y"],
             preload_shim_root_only, OPEN_PROBES, "EACCES", lambda b: f"{b}/shim/libjobtrace.so",
             unprivileged=True,
             description="the profiling shim is root's 0600: ld.so's open EACCES, the shim ignored"),
    Scenario("symbol_version_too_old", "job (ld.so: LIBJOB_2.0 wanted, 1.0 found)",
             lambda b: _with_lib_path(b, f"{b}/lib", f"{b}/bin/job"), symbol_version_old,
             MESSAGE_PROBES, None, lambda b: STDERR,
             description="version `LIBJOB_2.0' not found: no failing call, ld.so's message"),
    Scenario("library_on_noexec_mount", "job (LD_LIBRARY_PATH on a noexec mount)",
             lambda b: _with_lib_path(b, f"{b}/opt/lib", f"{b}/bin/job"), library_on_noexec_mount,
             frozenset({"mmap"}), "EPERM", lambda b: NO_PATH, teardown=umount_after("opt"),
             description="ld.so maps the library's code PROT_EXEC from a noexec mount: mmap EPERM"),
    Scenario("library_path_entry_is_a_file", "job (LD_LIBRARY_PATH entry a file)",
             lambda b: _with_lib_path(b, f"{b}/lib", f"{b}/bin/job"), library_path_entry_is_file,
             OPEN_PROBES, "ENOTDIR", lambda b: f"{b}/lib/*{SONAME}",
             description="the library directory is a file: ld.so's opens under it fail ENOTDIR"),
    Scenario("plugin_symbol_missing", "python3 ctypes dlopen(RTLD_NOW) of a plugin",
             lambda b: [PY3, "-S", f"{b}/load.py", f"{b}/plugins/libjobplug.so"], plugin_symbol_missing,
             MESSAGE_PROBES, None, lambda b: STDERR,
             description="undefined symbol job_m: dlopen fails without a failing call, python's message"),
    Scenario("pth_names_vendor_version_missing", "python3 site.addsitedir (jobkit.pth)",
             lambda b: [PY3, "-S", f"{b}/run.py", f"{b}/site"], pth_vendor_missing,
             STAT_PROBES, "ENOENT", lambda b: f"{b}/vendor/jobkit-1.3",
             description="the .pth names jobkit-1.3, 1.2 is installed: site drops it, the import fails"),
    Scenario("package_dir_root_only", "python3 import jobpkg.core (as nobody)",
             lambda b: [PY3, "-S", f"{b}/run.py", f"{b}/lib"], package_dir_root_only,
             STAT_PROBES | OPEN_PROBES, "EACCES", lambda b: f"{b}/lib/jobpkg*", unprivileged=True,
             description="the package directory is root's 0700: its __init__ cannot be stat'ed"),
    Scenario("pythonhome_names_removed_venv", "sh: PYTHONHOME from job.env, python3",
             lambda b: ["/bin/sh", f"{b}/start.sh"], pythonhome_stale,
             STAT_PROBES | OPEN_PROBES, "ENOENT", lambda b: f"{b}/venv-py3.9*",
             description="PYTHONHOME names a removed environment: the encodings module is not found"),
    Scenario("module_tool_version_uninstalled", "sh: module load jobtool/2.1; jobtool",
             lambda b: ["/bin/sh", f"{b}/start.sh"], module_tool_uninstalled,
             STAT_PROBES, "ENOENT", lambda b: f"{b}/modules/jobtool/2.1/bin/jobtool",
             description="the module's bin directory is gone: dash's PATH search (stat) misses everywhere"),
    Scenario("ca_bundle_symlink_dangling", "python3 ssl.create_default_context(cafile)",
             lambda b: [PY3, "-S", f"{b}/ca.py", f"{b}/certs/ca-bundle.crt"], ca_bundle_dangling,
             OPEN_PROBES, "ENOENT", lambda b: f"{b}/certs/ca-bundle.crt",
             description="the CA bundle symlink names last year's file: open ENOENT"),
    Scenario("fontconfig_dropin_root_only", "fc-match (FONTCONFIG_FILE, as nobody)",
             _fc_match, fontconfig_dropin_root_only, STAT_PROBES | OPEN_PROBES, "EACCES",
             lambda b: f"{b}/fc/conf.d/50-site.conf", unprivileged=True,
             description="a drop-in is root's 0600: fontconfig's access EACCES, the drop-in skipped"),
]


# --- good-vs-good noise -------------------------------------------------------------------------
def _lib_path_order(base: Path, run: int) -> None:
    # the job's environment file lists its four library directories in the order its modules
    # were loaded (varying); the library is in one of them, the same one every run
    _job(base)
    dirs = [f"{base}/l{i}" for i in range(4)]
    for d in dirs:
        Path(d).mkdir()
    _lib(base, "l2")
    random.shuffle(dirs)
    write(base / "lib.path", ":".join(dirs) + "\n")


def _lib_path_argv(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"LD_LIBRARY_PATH=$(cat {b}/lib.path) exec {b}/bin/job"]


def _path_order(base: Path, run: int) -> None:
    versions = ["1.8", "1.9", "2.0", "2.1"]
    random.shuffle(versions)  # the modules loaded in the order of the user's profile
    write(base / "modules.sh", "".join(f"PATH={base}/modules/m{v}/bin:$PATH\n" for v in versions))
    write(base / "start.sh", f"set -e\n. {base}/modules.sh\njobtool --version\n")
    for v in versions:
        (base / "modules" / f"m{v}" / "bin").mkdir(parents=True)
    _tool(base / "modules" / "m2.1" / "bin" / "jobtool")


def _pth_stale(base: Path, run: int) -> None:
    write(base / "run.py", PTH_PY)
    (base / "site").mkdir()
    stale = [f"{base}/vendor/old-{i}" for i in range(random.randint(1, 3))]
    write(base / "site" / "jobkit.pth", "".join(f"{p}\n" for p in [*stale, f"{base}/vendor/jobkit-1.3"]))
    (base / "vendor" / "jobkit-1.3").mkdir(parents=True)
    write(base / "vendor" / "jobkit-1.3" / "jobkit.py", "N = 13\n")


def _pythonpath_order(base: Path, run: int) -> None:
    for i in range(4):
        (base / f"p{i}").mkdir()
    write(base / f"p{random.randrange(4)}" / "jobmod.py", "N = 5\n")


def _pythonpath_argv(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"PYTHONPATH={':'.join(f'{b}/p{i}' for i in range(4))}:{b}/gone "
            f"exec {PY3} -c 'import jobmod; print(jobmod.N)'"]


def _cache_varies(base: Path, run: int) -> None:
    _job(base)
    _lib(base, "opt/job-1.2/lib")
    extra = []
    for i in range(random.randint(1, 5)):
        _cc(base, f"opt/extra{i}/libextra{i}.so.1", f"int extra{i}(void) {{ return {i}; }}\n",
            f"-shared -Wl,-soname,libextra{i}.so.1")
        extra.append(f"{base}/opt/extra{i}")
    _private_cache(base, [*extra, f"{base}/opt/job-1.2/lib"])


def _font_cache_state(base: Path, run: int) -> None:
    # the same configuration each run; fontconfig's cache is built by this run (the first job
    # on a fresh node) or was left by an earlier one (fc-cache run outside the recording). The
    # two good runs the diff learns from have one of each (a node pool has both); the third
    # run's is chosen at random
    _fontconfig(base, ["10-job.conf", "50-site.conf"])
    if run == 1 or (run == 2 and random.random() < 0.5):
        subprocess.run(["/usr/bin/fc-cache"], env={"FONTCONFIG_FILE": f"{base}/fc/fonts.conf",
                                                   "PATH": "/usr/bin:/bin"}, check=True, capture_output=True)


def _locale_missing(base: Path, run: int) -> None:
    write(base / "locale.name", random.choice(["de_DE.UTF-8", "fr_FR.UTF-8", "ja_JP.UTF-8", "pt_BR.UTF-8"]) + "\n")


QUIET_SEVENTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("library_found_in_varying_path_entry", _lib_path_argv, _lib_path_order,
                  description="LD_LIBRARY_PATH of 4 directories in varying order, libjob.so.1 in one of them"),
    NoAnomalyCase("module_path_order_varies", lambda b: ["/bin/sh", f"{b}/start.sh"], _path_order,
                  description="4 module bin directories on PATH in varying order, the tool in one"),
    NoAnomalyCase("pth_stale_entries_vary", lambda b: [PY3, "-S", f"{b}/run.py", f"{b}/site"], _pth_stale,
                  description="a .pth with 1 to 3 entries for directories not there (site drops them)"),
    NoAnomalyCase("pythonpath_module_in_varying_entry", _pythonpath_argv, _pythonpath_order,
                  description="PYTHONPATH of 5 entries (one missing), the module in a different one each run"),
    NoAnomalyCase("private_ld_cache_contents_vary", _with_cache, _cache_varies,
                  description="a private ld.so.cache holding 1 to 5 other libraries besides the job's"),
    NoAnomalyCase("font_cache_built_or_left", _fc_match, _font_cache_state,
                  description="fontconfig's cache built by the run or left by an earlier one"),
    NoAnomalyCase("locale_not_installed_varies",
                  lambda b: ["/bin/sh", "-c", f"LC_ALL=$(cat {b}/locale.name) exec /bin/date +%Y"], _locale_missing,
                  description="LC_ALL names a locale the host lacks (a different one each run): C fallback"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: mounts are undone by their cases' teardowns."""


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
