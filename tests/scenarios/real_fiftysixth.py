"""A fifty-sixth set of real programs with one real fault each: **the fault is in something the program
loads indirectly** -- several hops from its command line, down an include, import, source or library
chain. The command line names one file; that file names a second; the second names a third, and the
third is the broken one (missing, unreadable, a directory, a socket, a symlink loop, under a stale file):

- ``git --git-dir repo/.git config --get user.email``: .git/config includes conf.d/team.inc, which
  includes conf.d/site.inc, a credential daemon's Unix socket made under that name: openat ENXIO,
  "bad config line", exit 128;
- ``python3`` as nobody with ``PYTHONUSERBASE``: the user site's acme.pth imports acme_boot, which
  imports acme.hooks (from a vendor directory another .pth added), which imports acme.codecs_extra,
  restored root's 0600: openat EACCES, "Error processing line 1 of acme.pth", the program still runs;
- ``sh -c '. job.sh'``: job.sh sources lib/common.sh, which sources lib/site.sh, never deployed:
  openat ENOENT, exit 2;
- ``make -C dir``: the Makefile includes mk/rules.mk, which includes mk/site.mk, a deploy step's
  symlink to itself: openat ELOOP, exit 2;
- a C program (``tb56-report``) linked against libtb56rpt.so.1 (RUNPATH $ORIGIN/../lib), which needs
  libtb56fmt.so.1, which needs libtb56enc.so.1, left out of a partial deploy: ld.so's openat ENOENT in
  the RUNPATH directory, then the system directories, exit 127;
- a C plugin loader (``tb56-plugins``) dlopen()ing each plugin plugins.conf names; plugin csv.so needs
  libtb56fmt.so.1, which an unpack step made a directory: ld.so's read of its ELF header EISDIR,
  "cannot read file data", the loader goes on, exit 1;
- ``ssh -G -F config build`` as nobody: config includes conf.d/*.conf, whose 10-team.conf includes
  conf.d/team/*.conf, one of them root's 0600: openat EACCES, "terminating", exit 255;
- ``awk -f flatten.awk`` as nobody, a config flattener following ``include`` lines: main.conf includes
  app.conf, which includes db.conf, root's 0600: openat EACCES, exit 1;
- ``m4 -I inc main.m4``: main.m4 includes defs.m4 (found in inc), which includes site/local.m4,
  inc/site a stale file where the directory should be: openat ENOTDIR, exit 1;
- ``perl report.pl``: it uses Team::Base, which uses Team::Util::Str, lib/Team/Util a stale file:
  perl's newfstatat of Team/Util/Str.pmc ENOTDIR, the rest of @INC searched, exit 2;
- ``tclsh main.tcl``: it sources lib/util.tcl, which sources lib/fmt.tcl, a directory an unpack step
  made: read EISDIR, "illegal operation on a directory", exit 1;
- ``pkg-config --cflags app``: app.pc requires libmid, which requires libbase, whose .pc was never
  installed: openat ENOENT of pc/libbase.pc, then the system directories, exit 1;
- ``groff -man -Tutf8 main.roff`` as nobody: main.roff ``.so`` ch/body.roff, which ``.so``
  ch/legal.roff, root's 0600: troff's openat EACCES, "can't open", the page still formatted;
- ``cpp -I inc main.c`` as nobody: main.c includes app.h, which includes net/proto.h, which includes
  wire.h, root's 0600: cc1's openat EACCES, "fatal error", exit 1.

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good runs
never had. Every run of a case has the same command line.

Noise cases (``QUIET_FIFTYSIXTH``): the same chains in good runs alone -- other contents and sizes of
the included files, other modification times, extra unrelated files beside them.

No loopback service: the set takes no ports.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from functools import cache
from pathlib import Path

from .files import token, write_file
from .harness import ROOT, NoAnomalyCase, Scenario, argv_in, sh_argv

OPEN = frozenset({"openat", "open"})
READ = frozenset({"read", "pread64", "readv"})
STAT = frozenset({"lstat", "newfstatat", "stat", "statx"})
PY = "/usr/bin/python3"


def _unix_socket(path: Path) -> None:
    """A Unix socket bound at `path` (the socket file stays after the listener is gone)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))


def _age(paths: list[Path], seconds: int) -> None:
    """Set the modification times of `paths` `seconds` in the past (another deploy's)."""
    t = time.time() - seconds
    for p in paths:
        os.utime(p, (t, t))


# --- git config: .git/config -> conf.d/team.inc -> conf.d/site.inc (a Unix socket) ------------------------------
GIT_ARGV = ["/usr/bin/git", "--git-dir={b}/repo/.git", "config", "--get", "user.email"]


def _git_tree(base: Path, *, site_socket: bool = False, extra: bool = False) -> None:
    subprocess.run(["/usr/bin/git", "init", "-q", str(base / "repo")], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1"})
    git = base / "repo" / ".git"
    with open(git / "config", "a") as fh:
        fh.write("[include]\n\tpath = conf.d/team.inc\n")
    write_file(git / "conf.d" / "team.inc",
               f"[core]\n\tpager = cat\n[user]\n\tname = ci-{token(2)}\n[include]\n\tpath = site.inc\n")
    if site_socket:  # the credential daemon was pointed at the include's name for its socket
        _unix_socket(git / "conf.d" / "site.inc")
    else:
        write_file(git / "conf.d" / "site.inc", f"[user]\n\temail = ci-{token(3)}@build.example\n")
    if extra:  # an unrelated file beside the includes (an editor's backup)
        write_file(git / "conf.d" / "team.inc~", "[core]\n\tpager = less\n")


def git_build(base: Path, bad: bool) -> None:
    _git_tree(base, site_socket=bad)


# --- python3 as nobody: acme.pth -> acme_boot -> acme.hooks -> acme.codecs_extra (root's 0600) ---------------------
PY_ARGV = ["/usr/bin/env", "PYTHONUSERBASE={b}/ub", "PYTHONDONTWRITEBYTECODE=1", PY, "{b}/bin/report.py"]
REPORT_PY = "import sys\nprint(len(sys.path), sys.argv[0])\n"


@cache
def _user_site_tail() -> str:
    """lib/pythonX.Y/site-packages: the user site of /usr/bin/python3 under its PYTHONUSERBASE."""
    out = subprocess.run([PY, "-c", "import sys; print(f'lib/python{sys.version_info[0]}.{sys.version_info[1]}/"
                          "site-packages')"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def _py_tree(base: Path, *, unreadable: bool = False, extra: bool = False, lines: int = 3) -> None:
    site = base / "ub" / _user_site_tail()
    write_file(site / "00-vendor.pth", f"{base}/vendor\n")
    write_file(site / "acme.pth", "import acme_boot\n")
    write_file(site / "acme_boot.py", "import acme.hooks\n")
    acme = base / "vendor" / "acme"
    write_file(acme / "__init__.py", "")
    write_file(acme / "hooks.py", "from acme import codecs_extra\nREGISTERED = codecs_extra.NAMES\n")
    names = ", ".join(repr(token(2)) for _ in range(lines))
    # the bad day's codecs_extra.py was restored by root from a backup with the backup's 0600
    write_file(acme / "codecs_extra.py", f"NAMES = [{names}]\n", mode=0o600 if unreadable else 0o644)
    if extra:
        write_file(acme / "README.txt", f"acme vendor drop {token(4)}\n")
    write_file(base / "bin" / "report.py", REPORT_PY)


def py_build(base: Path, bad: bool) -> None:
    _py_tree(base, unreadable=bad)


# --- sh: job.sh -> lib/common.sh -> lib/site.sh (never deployed) -------------------------------------------------
SH_SCRIPT = 'TB56_LIB="$1/lib"; . "$1/job.sh"'
JOB_SH = '. "$TB56_LIB/common.sh"\nlog "job starting on $SITE_NAME"\n'
COMMON_SH = 'log() { echo "job: $*"; }\n. "$TB56_LIB/site.sh"\n'


def _sh_tree(base: Path, *, site: bool = True, extra: bool = False) -> None:
    write_file(base / "job.sh", JOB_SH)
    write_file(base / "lib" / "common.sh", COMMON_SH)
    if site:
        write_file(base / "lib" / "site.sh", f"SITE_NAME=rack-{token(2)}\nSITE_SLOTS={random.randrange(2, 64)}\n")
    if extra:
        write_file(base / "lib" / "site.sh.dpkg-old", "SITE_NAME=old\n")


def sh_build(base: Path, bad: bool) -> None:
    _sh_tree(base, site=not bad)  # the bad day's deploy copied lib/ without site.sh


# --- make: Makefile -> mk/rules.mk -> mk/site.mk (a symlink to itself) --------------------------------------------
MAKE_ARGV = ["/usr/bin/make", "-C", "{b}", "-f", "Makefile", "all"]
MAKEFILE = ("TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))\n"
            "include $(TOP)/mk/rules.mk\n"
            "all:\n\t@echo $(SITE) $(CFLAGS)\n")
RULES_MK = "CFLAGS := -O2\ninclude $(TOP)/mk/site.mk\n"


def _make_tree(base: Path, *, loop: bool = False, age: int = 0, extra: bool = False) -> None:
    files = [write_file(base / "Makefile", MAKEFILE), write_file(base / "mk" / "rules.mk", RULES_MK)]
    site = base / "mk" / "site.mk"
    if loop:  # the deploy step's `ln -sf site.mk mk/` meant the host's site.mk, made a link to itself
        site.symlink_to("site.mk")
    else:
        files.append(write_file(site, f"SITE := rack-{token(2)}\nCFLAGS += -DSLOTS={random.randrange(2, 64)}\n"))
    if extra:
        files.append(write_file(base / "mk" / "NOTES", f"site rules, {token(3)}\n"))
    if age:
        _age(files, age)


def make_build(base: Path, bad: bool) -> None:
    _make_tree(base, loop=bad)


# --- C programs and their libraries, built once a session and copied into each run ---------------------------------
ENC_C = "int tb56_enc(int x) { return x * 3 + 1; }\n"
FMT_C = "int tb56_enc(int);\nint tb56_fmt(int x) { return tb56_enc(x) + 2; }\n"
RPT_C = "int tb56_fmt(int);\nint tb56_rpt(int x) { return tb56_fmt(x) * 2; }\n"
MAIN_C = '#include <stdio.h>\nint tb56_rpt(int);\nint main(void) { printf("%d\\n", tb56_rpt(4)); return 0; }\n'
PLUG_C = "int tb56_fmt(int);\nint plugin_init(void) { return tb56_fmt(7); }\n"
LOADER_C = r"""#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    char line[4096]; int bad = 0;
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!*line || *line == '#') continue;
        void *h = dlopen(line, RTLD_NOW);
        if (!h) { fprintf(stderr, "plugin %s: %s\n", line, dlerror()); bad = 1; continue; }
        int (*init)(void) = (int (*)(void))dlsym(h, "plugin_init");
        printf("%s: %d\n", line, init ? init() : -1);
    }
    fclose(f);
    return bad;
}
"""


@cache
def _c_build() -> Path:
    """bin/tb56-report, bin/tb56-plugins, lib/libtb56{rpt,fmt,enc}.so.1 and plugins/{csv,json}.so, compiled
    once under the session's root (every path relative: RUNPATH $ORIGIN), copied into each run."""
    out = ROOT / "_t56_build"
    if out.exists():
        shutil.rmtree(out)
    src = out / "src"
    for name, text in {"enc.c": ENC_C, "fmt.c": FMT_C, "rpt.c": RPT_C, "main.c": MAIN_C, "plug.c": PLUG_C,
                       "loader.c": LOADER_C}.items():
        write_file(src / name, text)
    for d in ("lib", "bin", "plugins"):
        (out / d).mkdir()

    def cc(*args: str) -> None:
        subprocess.run(["cc", *args], check=True, capture_output=True, cwd=src)

    lib = out / "lib"
    cc("-shared", "-fPIC", "-o", f"{lib}/libtb56enc.so.1", "-Wl,-soname,libtb56enc.so.1", "enc.c")
    cc("-shared", "-fPIC", "-o", f"{lib}/libtb56fmt.so.1", "-Wl,-soname,libtb56fmt.so.1", "-Wl,-rpath,$ORIGIN",
       "fmt.c", f"{lib}/libtb56enc.so.1")
    cc("-shared", "-fPIC", "-o", f"{lib}/libtb56rpt.so.1", "-Wl,-soname,libtb56rpt.so.1", "-Wl,-rpath,$ORIGIN",
       "rpt.c", f"{lib}/libtb56fmt.so.1")
    cc("-o", f"{out}/bin/tb56-report", "-Wl,-rpath,$ORIGIN/../lib", "main.c", f"{lib}/libtb56rpt.so.1")
    cc("-o", f"{out}/bin/tb56-plugins", "loader.c", "-ldl")
    for plugin in ("csv", "json"):
        cc("-shared", "-fPIC", "-o", f"{out}/plugins/{plugin}.so", "-Wl,-rpath,$ORIGIN/../lib", "plug.c",
           f"{lib}/libtb56fmt.so.1")
    shutil.rmtree(src)
    return out


def _install(base: Path) -> None:
    shutil.copytree(_c_build(), base, dirs_exist_ok=True)


REPORT_ARGV = ["{b}/bin/tb56-report"]


def report_build(base: Path, bad: bool) -> None:
    _install(base)
    if bad:  # the partial deploy copied lib/ without its last library
        (base / "lib" / "libtb56enc.so.1").unlink()


PLUGINS_ARGV = ["{b}/bin/tb56-plugins", "{b}/plugins.conf"]


def plugins_build(base: Path, bad: bool) -> None:
    _install(base)
    write_file(base / "plugins.conf", f"# output plugins\n{base}/plugins/csv.so\n{base}/plugins/json.so\n")
    if bad:  # an unpack step made the library's name a directory holding it
        fmt = base / "lib" / "libtb56fmt.so.1"
        data = fmt.read_bytes()
        fmt.unlink()
        write_file(fmt / "libtb56fmt.so.1", data)


# --- ssh -G as nobody: config -> conf.d/*.conf -> 10-team.conf -> conf.d/team/*.conf (one root's 0600) --------------
SSH_ARGV = ["/usr/bin/ssh", "-G", "-F", "{b}/ssh/config", "build"]


def ssh_build(base: Path, bad: bool) -> None:
    top = base / "ssh"
    write_file(top / "config", f"Include {top}/conf.d/*.conf\nHost *\n  ServerAliveInterval 30\n")
    write_file(top / "conf.d" / "10-team.conf", f"Host build\n  User ci\n  Include {top}/conf.d/team/*.conf\n")
    write_file(top / "conf.d" / "20-defaults.conf", "Host *\n  ConnectTimeout 10\n")
    write_file(top / "conf.d" / "team" / "jump.conf", f"  ProxyJump bastion-{token(2)}.example\n")
    # the bad day's proxy.conf was written by root's provisioning run with a 0600 umask
    write_file(top / "conf.d" / "team" / "proxy.conf", f"  Port {random.randrange(2200, 2299)}\n",
               mode=0o600 if bad else 0o644)


# --- awk -f flatten.awk as nobody: main.conf -> app.conf -> db.conf (root's 0600) --------------------------------------
FLATTEN_AWK = r"""function load(f,   line, n) {
    while ((n = (getline line < f)) > 0) {
        if (line ~ /^include /) load(dir "/" substr(line, 9))
        else print line
    }
    if (n < 0) { print "flatten: cannot read " f > "/dev/stderr"; err = 1 }
    close(f)
}
BEGIN { load(dir "/" main); exit err }
"""
AWK_ARGV = ["/usr/bin/awk", "-v", "dir={b}/conf", "-v", "main=main.conf", "-f", "{b}/bin/flatten.awk"]


def awk_build(base: Path, bad: bool) -> None:
    write_file(base / "bin" / "flatten.awk", FLATTEN_AWK)
    conf = base / "conf"
    write_file(conf / "main.conf", f"name=job-{token(2)}\ninclude app.conf\nretries=3\n")
    write_file(conf / "app.conf", f"workers={random.randrange(2, 16)}\ninclude db.conf\n")
    # the secrets step rewrote db.conf as root with 0600
    write_file(conf / "db.conf", f"db_host=db-{token(2)}\ndb_pass={token(6)}\n", mode=0o600 if bad else 0o644)


# --- m4 -I inc main.m4: main.m4 -> defs.m4 -> site/local.m4 (inc/site a stale file) --------------------------------
M4_ARGV = ["/usr/bin/m4", "-I", "{b}/inc", "{b}/main.m4"]


def m4_build(base: Path, bad: bool) -> None:
    write_file(base / "main.m4", "include(`defs.m4')dnl\nversion VERSION on SITE\n")
    write_file(base / "inc" / "defs.m4", f"define(`VERSION', `1.{random.randrange(99)}')dnl\ninclude(`site/local.m4')dnl\n")
    if bad:  # an older layout's single inc/site file, never removed when it became a directory
        write_file(base / "inc" / "site", "rack-old\n")
    else:
        write_file(base / "inc" / "site" / "local.m4", f"define(`SITE', `rack-{token(2)}')dnl\n")


# --- perl report.pl: Team::Base -> Team::Util::Str (lib/Team/Util a stale file) ----------------------------------------
PERL_ARGV = ["/usr/bin/perl", "{b}/report.pl"]


def perl_build(base: Path, bad: bool) -> None:
    write_file(base / "report.pl", f'use strict;\nuse lib "{base}/lib";\nuse Team::Base;\n'
                                   'print Team::Base::hello(), "\\n";\n')
    write_file(base / "lib" / "Team" / "Base.pm",
               "package Team::Base;\nuse Team::Util::Str;\nsub hello { Team::Util::Str::up('hi') }\n1;\n")
    if bad:  # the module tree of an older release had a single Team/Util file
        write_file(base / "lib" / "Team" / "Util", "# Team::Util 0.1\n")
    else:
        write_file(base / "lib" / "Team" / "Util" / "Str.pm",
                   f"package Team::Util::Str;\nsub up {{ uc(shift) . ' {token(2)}' }}\n1;\n")


# --- tclsh main.tcl: lib/util.tcl -> lib/fmt.tcl (a directory) ------------------------------------------------------
TCL_ARGV = ["/usr/bin/tclsh", "{b}/main.tcl"]


def tcl_build(base: Path, bad: bool) -> None:
    write_file(base / "main.tcl", "source [file join [file dirname [info script]] lib util.tcl]\nputs [greet]\n")
    write_file(base / "lib" / "util.tcl",
               "source [file join [file dirname [info script]] fmt.tcl]\nproc greet {} {return [fmt hi]}\n")
    fmt = f"proc fmt {{s}} {{return \"$s {token(2)}\"}}\n"
    if bad:  # the unpack step made fmt.tcl a directory holding the file
        write_file(base / "lib" / "fmt.tcl" / "fmt.tcl", fmt)
    else:
        write_file(base / "lib" / "fmt.tcl", fmt)


# --- pkg-config --cflags app: app.pc -> libmid -> libbase (never installed) -------------------------------------------
PC_ARGV = ["/usr/bin/env", "PKG_CONFIG_PATH={b}/pc", "/usr/bin/pkg-config", "--cflags", "app"]


def _pc_tree(base: Path, *, libbase: bool = True, extra: int = 0) -> None:
    pc = base / "pc"
    write_file(pc / "app.pc", f"Name: app\nDescription: the app\nVersion: 1.{random.randrange(9)}\n"
                              "Requires: libmid\nCflags: -I/opt/app/include\n")
    write_file(pc / "libmid.pc", "Name: libmid\nDescription: middle\nVersion: 2.0\nRequires: libbase >= 2\n"
                                 "Cflags: -I/opt/mid/include\n")
    if libbase:
        write_file(pc / "libbase.pc", f"Name: libbase\nDescription: base\nVersion: 2.{random.randrange(9)}\n"
                                      "Cflags: -I/opt/base/include -DBASE\n")
    for k in range(extra):  # other packages' files beside them
        write_file(pc / f"other{k}-{token(2)}.pc", f"Name: other{k}\nDescription: o\nVersion: 1\n")


def pc_build(base: Path, bad: bool) -> None:
    _pc_tree(base, libbase=not bad)


# --- groff -man as nobody: main.roff .so ch/body.roff .so ch/legal.roff (root's 0600) -----------------------------
GROFF_ARGV = ["/usr/bin/groff", "-man", "-Tutf8", "{b}/main.roff"]


def groff_build(base: Path, bad: bool) -> None:
    write_file(base / "main.roff", f".TH REPORT 1\n.SH NAME\nreport \\- the nightly report\n.so {base}/ch/body.roff\n")
    write_file(base / "ch" / "body.roff", f".SH DESCRIPTION\nBuild {token(3)}.\n.so {base}/ch/legal.roff\n")
    write_file(base / "ch" / "legal.roff", f".SH COPYRIGHT\nCopyright {token(2)}.\n", mode=0o600 if bad else 0o644)


# --- cpp -I inc as nobody: main.c -> app.h -> net/proto.h -> net/wire.h (root's 0600) ----------------------------
CPP_ARGV = ["/usr/bin/cpp", "-I", "{b}/inc", "{b}/main.c"]


def _cpp_tree(base: Path, *, unreadable: bool = False, defines: int = 2) -> None:
    write_file(base / "main.c", '#include "app.h"\nint main(void) { return PORT + WIRE_VERSION; }\n')
    write_file(base / "inc" / "app.h", '#ifndef APP_H\n#define APP_H\n#include "net/proto.h"\n#endif\n')
    write_file(base / "inc" / "net" / "proto.h", '#include "wire.h"\n#define PORT 8080\n')
    body = "".join(f"#define WIRE_FIELD_{k} {random.randrange(1000)}\n" for k in range(defines))
    # the bad day's wire.h came from the code generator run as root under umask 077
    write_file(base / "inc" / "net" / "wire.h", f"#define WIRE_VERSION 3\n{body}", mode=0o600 if unreadable else 0o644)


def cpp_build(base: Path, bad: bool) -> None:
    _cpp_tree(base, unreadable=bad)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYSIXTH: list[Scenario] = [
    _sc("t56_git_config_include_chain_socket", "git config --get (include -> include -> site.inc)",
        argv_in(GIT_ARGV), git_build, OPEN, "ENXIO", lambda b: f"{b}/repo/.git/conf.d/site.inc",
        description=".git/config includes conf.d/team.inc, which includes site.inc, a credential daemon's "
                    "Unix socket: openat ENXIO, 'bad config line', exit 128"),
    _sc("t56_python3_pth_import_chain_unreadable", "python3 with a user site .pth import chain, as nobody",
        argv_in(PY_ARGV), py_build, OPEN, "EACCES", lambda b: f"{b}/vendor/acme/codecs_extra.py",
        unprivileged=True,
        description="acme.pth imports acme_boot -> acme.hooks -> acme.codecs_extra, root's 0600: openat EACCES, "
                    "'Error processing line 1 of acme.pth', the program still runs"),
    _sc("t56_sh_source_chain_site_missing", "sh -c '. job.sh' (job.sh -> common.sh -> site.sh)",
        sh_argv(SH_SCRIPT), sh_build, OPEN, "ENOENT", lambda b: f"{b}/lib/site.sh",
        description="job.sh sources lib/common.sh, which sources lib/site.sh, never deployed: openat ENOENT, "
                    "'.: cannot open', exit 2"),
    _sc("t56_make_include_chain_symlink_loop", "make -C dir (Makefile -> rules.mk -> site.mk)",
        argv_in(MAKE_ARGV), make_build, OPEN, "ELOOP", lambda b: f"{b}/mk/site.mk",
        description="the Makefile includes mk/rules.mk, which includes mk/site.mk, a symlink to itself: openat "
                    "ELOOP, 'Too many levels of symbolic links', exit 2"),
    _sc("t56_ldso_needed_chain_lib_missing", "tb56-report (DT_NEEDED rpt -> fmt -> enc via RUNPATH)",
        argv_in(REPORT_ARGV), report_build, OPEN, "ENOENT", lambda b: f"{b}/*lib/libtb56enc.so.1",
        description="tb56-report needs libtb56rpt.so.1 -> libtb56fmt.so.1 -> libtb56enc.so.1, left out of the "
                    "deploy: ld.so's openat in $ORIGIN/../lib ENOENT, then the system directories, exit 127"),
    _sc("t56_dlopen_plugin_dependency_is_dir", "tb56-plugins (plugins.conf -> csv.so -> libtb56fmt.so.1)",
        argv_in(PLUGINS_ARGV), plugins_build, READ, "EISDIR", lambda b: f"{b}/*lib/libtb56fmt.so.1",
        description="the loader dlopen()s plugins.conf's csv.so, which needs libtb56fmt.so.1, a directory: "
                    "ld.so's read of the ELF header EISDIR, 'cannot read file data', exit 1"),
    _sc("t56_ssh_config_include_chain_unreadable", "ssh -G -F config (Include -> Include), as nobody",
        argv_in(SSH_ARGV), ssh_build, OPEN, "EACCES", lambda b: f"{b}/ssh/conf.d/team/proxy.conf",
        unprivileged=True,
        description="config includes conf.d/*.conf; 10-team.conf includes conf.d/team/*.conf, proxy.conf root's "
                    "0600: openat EACCES, 'terminating, 1 bad configuration options', exit 255"),
    _sc("t56_awk_flatten_include_chain_unreadable", "awk -f flatten.awk (main -> app -> db.conf), as nobody",
        argv_in(AWK_ARGV), awk_build, OPEN, "EACCES", lambda b: f"{b}/conf/db.conf", unprivileged=True,
        description="a config flattener in awk follows include lines: main.conf -> app.conf -> db.conf, root's "
                    "0600: getline's openat EACCES, exit 1"),
    _sc("t56_m4_include_chain_site_not_dir", "m4 -I inc main.m4 (defs.m4 -> site/local.m4)",
        argv_in(M4_ARGV), m4_build, OPEN, "ENOTDIR", lambda b: f"{b}/inc/site/local.m4",
        description="main.m4 includes defs.m4 (found in inc), which includes site/local.m4; inc/site is a stale "
                    "file: openat ENOTDIR, 'cannot open', exit 1"),
    _sc("t56_perl_use_chain_util_is_file", "perl report.pl (Team::Base -> Team::Util::Str)",
        argv_in(PERL_ARGV), perl_build, STAT, "ENOTDIR", lambda b: f"{b}/lib/Team/Util/Str.pm*",
        description="report.pl uses Team::Base, which uses Team::Util::Str; lib/Team/Util is a stale file: "
                    "newfstatat of Str.pmc ENOTDIR, the rest of @INC searched, 'Can't locate', exit 2"),
    _sc("t56_tclsh_source_chain_dir", "tclsh main.tcl (util.tcl -> fmt.tcl)",
        argv_in(TCL_ARGV), tcl_build, READ, "EISDIR", lambda b: f"{b}/lib/fmt.tcl",
        description="main.tcl sources lib/util.tcl, which sources lib/fmt.tcl, a directory: read EISDIR, "
                    "'illegal operation on a directory', exit 1"),
    _sc("t56_pkgconfig_requires_chain_missing", "pkg-config --cflags app (app -> libmid -> libbase)",
        argv_in(PC_ARGV), pc_build, OPEN, "ENOENT", lambda b: f"{b}/pc/libbase.pc",
        description="app.pc requires libmid, which requires libbase, never installed: openat of pc/libbase.pc "
                    "ENOENT (after libbase-uninstalled.pc's, as in good runs), exit 1"),
    _sc("t56_groff_so_chain_unreadable", "groff -man -Tutf8 main.roff (.so -> .so), as nobody",
        argv_in(GROFF_ARGV), groff_build, OPEN, "EACCES", lambda b: f"{b}/ch/legal.roff", unprivileged=True,
        description="main.roff .so ch/body.roff, which .so ch/legal.roff, root's 0600: troff's openat EACCES, "
                    "\"can't open\", the page formatted without it"),
    _sc("t56_cpp_include_chain_unreadable", "cpp -I inc main.c (app.h -> net/proto.h -> wire.h), as nobody",
        argv_in(CPP_ARGV), cpp_build, OPEN, "EACCES", lambda b: f"{b}/inc/net/wire.h", unprivileged=True,
        description="main.c includes app.h -> net/proto.h -> wire.h, root's 0600: cc1's openat EACCES, "
                    "'fatal error', exit 1"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def git_noise(base: Path, run: int) -> None:
    _git_tree(base, extra=run == 1)


def py_noise(base: Path, run: int) -> None:
    _py_tree(base, extra=run == 2, lines=[3, 40, 12][run % 3])


def sh_noise(base: Path, run: int) -> None:
    _sh_tree(base, extra=run == 1)


def make_noise(base: Path, run: int) -> None:
    _make_tree(base, age=[0, 86400, 3600 * 7][run % 3], extra=run == 2)


def pc_noise(base: Path, run: int) -> None:
    _pc_tree(base, extra=[0, 5, 2][run % 3])


def cpp_noise(base: Path, run: int) -> None:
    _cpp_tree(base, defines=[2, 400, 60][run % 3])


QUIET_FIFTYSIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t56_git_config_include_chain_noise", argv_in(GIT_ARGV), git_noise,
                  description="git config include chain: other names and emails, an editor's backup beside"),
    NoAnomalyCase("t56_python3_pth_import_chain_noise", argv_in(PY_ARGV), py_noise,
                  description="the .pth import chain with modules of other sizes, a README in the vendor dir"),
    NoAnomalyCase("t56_sh_source_chain_noise", sh_argv(SH_SCRIPT), sh_noise,
                  description="the source chain with other site values and a .dpkg-old file beside"),
    NoAnomalyCase("t56_make_include_chain_noise", argv_in(MAKE_ARGV), make_noise,
                  description="the include chain with other modification times and contents, a NOTES file"),
    NoAnomalyCase("t56_pkgconfig_requires_chain_noise", argv_in(PC_ARGV), pc_noise,
                  description="the Requires chain with 0, 5, 2 other packages' .pc files beside"),
    NoAnomalyCase("t56_cpp_include_chain_noise", argv_in(CPP_ARGV), cpp_noise,
                  description="the include chain with a wire.h of 2, 400, 60 defines"),
]


def quiet_teardown() -> None:
    """Nothing of this set outlives a case (no mounts, no services); the compiled programs under the
    session's root go with it."""
