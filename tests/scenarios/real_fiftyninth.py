"""A fifty-ninth set of real programs with one real fault each: **the runtime environment a program
loads before doing its work** -- the dynamic loader's and libc's lookups, steered by the job's
environment (LD_PRELOAD, LD_LIBRARY_PATH, LOCPATH, TZDIR, TZ, GCONV_PATH, TERMINFO, TEXTDOMAINDIR)
or by /etc/nsswitch.conf (bind-mounted in a private mount namespace, nothing of the host's changed):

- ``od`` run with ``LD_PRELOAD=lib/libjobshim.so``: the shim is gone: ld.so's openat ENOENT, "cannot
  be preloaded: ignored" on stderr;
- ``file`` run with ``LD_LIBRARY_PATH=stale:...``: the stale entry now holds a truncated
  libmagic.so.1 that shadows the system's: ld.so's openat succeeds where the good runs' failed
  (ENOENT), "cannot read file data", exit 127;
- ``clear`` with ``TERMINFO=terminfo TERM=xterm-job``: the job's terminfo lacks the entry: ncurses'
  access ENOENT, "unknown terminal type", exit 1;
- ``expr length`` with ``LOCPATH=locale LC_ALL=sv_SE.UTF-8``: the locale is not there: setlocale's
  openat ENOENT of LC_IDENTIFICATION, the C locale counts bytes, not characters;
- ``zdump`` with ``TZDIR=zoneinfo``: the job's zone file is missing: openat ENOENT, the zone falls
  back to UTC;
- ``pr`` as nobody with ``TZ=:tz/localtime``: root's 0600 zone file: openat EACCES, the page header
  in UTC;
- ``preconv -e IBM1047`` with ``GCONV_PATH=gconv``: the job's gconv-modules names IBM1047.so, which
  is gone: openat ENOENT, "encoding system 'IBM1047' not supported by iconv()";
- ``getent passwd`` under an nsswitch.conf naming ``extrausers`` (not installed): the dlopen's
  openat ENOENT of libnss_extrausers.so.2, exit 2;
- ``gettext`` with ``TEXTDOMAINDIR=share/locale``: the Swedish catalog is missing: openat ENOENT of
  sv/LC_MESSAGES/job.mo, the message stays English.

The expectations are what ``strace -f`` shows for the bad run: the first failing call the good runs
never had (for ``file``, the first call whose result the good runs never had). Every run of a case
has the same command line; the environment is set by the job's script, the same in every run.

Noise cases (``QUIET_FIFTYNINTH``): the preloaded od, zdump, the localized expr and gettext, getent
and preconv in good runs alone -- other inputs, sizes, users, a per-run job id in the environment,
other temp names.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .files import token, write_file
from .harness import NoAnomalyCase, Scenario, argv_in, sh_argv

OPEN = frozenset({"openat", "open"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})

LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
GCONV = LIBDIR / "gconv"
TERMINFO_XTERM = next((p for p in (Path("/lib/terminfo/x/xterm"), Path("/usr/share/terminfo/x/xterm")) if p.exists()),
                      Path("/lib/terminfo/x/xterm"))
ZONEINFO = Path("/usr/share/zoneinfo")
C_UTF8 = Path("/usr/lib/locale/C.utf8")


def _job_env(base: Path, job: str | None = None) -> None:
    """The job's environment file (a per-run id that no program reads)."""
    write_file(base / "job.env", f"JOB_ID={job or 'nightly'}\nexport JOB_ID\n")


# --- od with LD_PRELOAD: the shim is gone ---------------------------------------------------------------------
PRELOAD_SH = '. "$1/job.env"; LD_PRELOAD="$1/lib/libjobshim.so" od -A x -t x1z "$1/in.bin" > "$1/out.txt"'


def _preload_tree(base: Path, *, gone: bool = False, size: int = 256, job: str | None = None) -> None:
    _job_env(base, job)
    write_file(base / "in.bin", os.urandom(size))
    if not gone:  # the shim (any shared object does: it only has to load)
        write_file(base / "lib" / "libjobshim.so", (LIBDIR / "libz.so.1").read_bytes(), 0o755)
    else:  # the deploy removed lib/ with the old release
        (base / "lib").mkdir()


def preload_build(base: Path, bad: bool) -> None:
    _preload_tree(base, gone=bad)


# --- file with a stale LD_LIBRARY_PATH entry that shadows libmagic with a broken copy ------------------------------
STALE_SH = 'LD_LIBRARY_PATH="$1/stale:$1/lib" file -b "$1/data/sample.txt" > "$1/out.txt"'


def stale_build(base: Path, bad: bool) -> None:
    write_file(base / "data" / "sample.txt", "".join(f"line {i} {token(4)}\n" for i in range(20)))
    (base / "lib").mkdir()
    (base / "stale").mkdir()
    write_file(base / "stale" / "README", "old toolchain libraries\n")
    if bad:  # an interrupted copy left the first 400 bytes of a libmagic in the stale entry
        write_file(base / "stale" / "libmagic.so.1", (LIBDIR / "libmagic.so.1").read_bytes()[:400], 0o755)


# --- clear with TERMINFO: the job's terminfo lacks TERM's entry --------------------------------------------------
CLEAR_SH = 'TERMINFO="$1/terminfo" TERM=xterm-job clear > "$1/out.txt"'


def clear_build(base: Path, bad: bool) -> None:
    (base / "terminfo" / "x").mkdir(parents=True)
    write_file(base / "terminfo" / "x" / "xterm-basic", TERMINFO_XTERM.read_bytes())
    if not bad:  # the bad image's terminfo was built without the job's entry
        write_file(base / "terminfo" / "x" / "xterm-job", TERMINFO_XTERM.read_bytes())


# --- expr length under a LOCPATH locale that is not there --------------------------------------------------------
LOCALE_SH = ('. "$1/job.env"; word=$(cat "$1/word.txt"); '
             'LOCPATH="$1/locale" LC_ALL=sv_SE.UTF-8 expr length "$word" > "$1/out.txt"')


def _locale_tree(base: Path, *, gone: bool = False, word: str = "ÅÄÖåäö", job: str | None = None) -> None:
    _job_env(base, job)
    write_file(base / "word.txt", word + "\n")
    (base / "locale").mkdir()
    if not gone:  # the job's compiled locale (C.utf8's data under the job's name)
        shutil.copytree(C_UTF8, base / "locale" / "sv_SE.UTF-8")


def locale_build(base: Path, bad: bool) -> None:
    _locale_tree(base, gone=bad)


# --- zdump with TZDIR: the job's zone file is missing -------------------------------------------------------------
ZDUMP_SH = ('. "$1/job.env"; tmp=$(mktemp "$1/tmp/zdump.XXXXXX"); '
            'TZDIR="$1/zoneinfo" zdump Europe/Paris > "$tmp" && mv "$tmp" "$1/out.txt"')


def _zdump_tree(base: Path, *, gone: bool = False, job: str | None = None) -> None:
    _job_env(base, job)
    (base / "tmp").mkdir()
    write_file(base / "zoneinfo" / "Europe" / "Berlin", (ZONEINFO / "Europe" / "Berlin").read_bytes())
    if not gone:  # the bad image's tzdata was trimmed to the zones someone thought were used
        write_file(base / "zoneinfo" / "Europe" / "Paris", (ZONEINFO / "Europe" / "Paris").read_bytes())


def zdump_build(base: Path, bad: bool) -> None:
    _zdump_tree(base, gone=bad)


# --- pr as nobody with TZ=:file: root's 0600 zone file ------------------------------------------------------------
PR_SH = 'TZ=":$1/tz/localtime" pr -h nightly "$1/report.txt" > "$1/out/report.pr"'


def pr_build(base: Path, bad: bool) -> None:
    write_file(base / "report.txt", "".join(f"row {i} {token(4)}\n" for i in range(30)))
    # the bad day's tz sync copied the zone as root with umask 077
    write_file(base / "tz" / "localtime", (ZONEINFO / "Asia" / "Tokyo").read_bytes(), 0o600 if bad else 0o644)
    out = base / "out"
    out.mkdir()
    os.chown(out, 65534, 65534)


# --- preconv -e IBM1047 with GCONV_PATH: the job's module is gone ---------------------------------------------------
GCONV_MODULES = "alias\tJOBHOST//\tIBM1047//\nmodule\tIBM1047//\tINTERNAL\tIBM1047\t1\nmodule\tINTERNAL\tIBM1047//\tIBM1047\t1\n"
PRECONV_SH = 'GCONV_PATH="$1/gconv" preconv -e IBM1047 "$1/in/host.ebc" > "$1/out.roff"'


def _preconv_tree(base: Path, *, gone: bool = False, lines: int = 10) -> None:
    write_file(base / "gconv" / "gconv-modules", GCONV_MODULES)
    if not gone:  # the bad release's bundle lost its .so files
        write_file(base / "gconv" / "IBM1047.so", (GCONV / "IBM1047.so").read_bytes(), 0o755)
    text = "".join(f"record {i} {token(3)}\n" for i in range(lines)).encode()
    ebc = subprocess.run(["iconv", "-f", "UTF-8", "-t", "IBM1047"], input=text, check=True, capture_output=True).stdout
    write_file(base / "in" / "host.ebc", ebc)


def preconv_build(base: Path, bad: bool) -> None:
    _preconv_tree(base, gone=bad)


# --- getent passwd under an nsswitch.conf naming a module that is not installed -------------------------------------
# (the job's nsswitch.conf bind-mounted over /etc's in a private mount namespace: the host's stays as it is)
GETENT_SH = 'mount --bind "$1/etc/nsswitch.conf" /etc/nsswitch.conf && exec getent passwd "$(cat "$1/user")"'
GETENT_ARGV = argv_in(["/usr/bin/unshare", "-m", "/bin/sh", "-c", GETENT_SH, "sh", "{b}"])


def _getent_tree(base: Path, *, broken: bool = False, user: str = "root") -> None:
    # the bad image was configured for extrausers without its package
    write_file(base / "etc" / "nsswitch.conf", "passwd: extrausers\ngroup: files\nshadow: files\n" if broken
               else "passwd: files\ngroup: files\nshadow: files\n")
    write_file(base / "user", user + "\n")


def getent_build(base: Path, bad: bool) -> None:
    _getent_tree(base, broken=bad)


# --- gettext with TEXTDOMAINDIR: the Swedish catalog is missing ----------------------------------------------------
GETTEXT_SH = ('. "$1/job.env"; LOCPATH="$1/locale" LC_ALL=sv_SE.UTF-8 TEXTDOMAINDIR="$1/share/locale" '
              'gettext job "$(cat "$1/msgid")" > "$1/out.txt"')
CATALOG = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n' \
          'msgid "report ready"\nmsgstr "rapporten klar"\n\nmsgid "report failed"\nmsgstr "rapporten misslyckades"\n'


def _gettext_tree(base: Path, *, gone: bool = False, msgid: str = "report ready", job: str | None = None) -> None:
    _job_env(base, job)
    write_file(base / "msgid", msgid + "\n")
    shutil.copytree(C_UTF8, base / "locale" / "sv_SE.UTF-8")
    msgs = base / "share" / "locale" / "sv" / "LC_MESSAGES"
    msgs.mkdir(parents=True)
    if not gone:  # the bad package was built without its translations
        write_file(base / "job.po", CATALOG)
        subprocess.run(["msgfmt", "-o", str(msgs / "job.mo"), str(base / "job.po")], check=True, capture_output=True)
        (base / "job.po").unlink()


def gettext_build(base: Path, bad: bool) -> None:
    _gettext_tree(base, gone=bad)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYNINTH: list[Scenario] = [
    _sc("t59_od_ld_preload_shim_gone", "od run with LD_PRELOAD=lib/libjobshim.so",
        sh_argv(PRELOAD_SH), preload_build, OPEN, "ENOENT", lambda b: f"{b}/lib/libjobshim.so",
        description="the shim is gone: ld.so's openat ENOENT, 'cannot be preloaded ... ignored' on stderr"),
    _sc("t59_file_stale_ld_library_path_broken_libmagic", "file -b with LD_LIBRARY_PATH=stale:lib",
        sh_argv(STALE_SH), stale_build, OPEN, None, lambda b: f"{b}/stale/libmagic.so.1",
        description="a truncated libmagic.so.1 in the stale entry: ld.so's openat succeeds where good runs' "
                    "failed ENOENT, short read, 'cannot read file data', exit 127"),
    _sc("t59_clear_terminfo_entry_missing", "clear with TERMINFO=terminfo TERM=xterm-job",
        sh_argv(CLEAR_SH), clear_build, ACCESS, "ENOENT", lambda b: f"{b}/terminfo/x/xterm-job",
        description="the job's terminfo lacks xterm-job: ncurses' access ENOENT, 'unknown terminal type', exit 1"),
    _sc("t59_expr_locpath_locale_missing", "expr length under LOCPATH=locale LC_ALL=sv_SE.UTF-8",
        sh_argv(LOCALE_SH), locale_build, OPEN, "ENOENT", lambda b: f"{b}/locale/sv_SE.UTF-8/LC_IDENTIFICATION",
        description="the locale is not there: setlocale's openat ENOENT, the C locale: 12 bytes, not 6 characters"),
    _sc("t59_zdump_tzdir_zone_missing", "zdump Europe/Paris with TZDIR=zoneinfo",
        sh_argv(ZDUMP_SH), zdump_build, OPEN, "ENOENT", lambda b: f"{b}/zoneinfo/Europe/Paris",
        description="the trimmed tzdata lacks Europe/Paris: openat ENOENT, the time shown in UTC"),
    _sc("t59_pr_tz_file_unreadable", "pr -h as nobody with TZ=:tz/localtime",
        sh_argv(PR_SH), pr_build, OPEN, "EACCES", lambda b: f"{b}/tz/localtime", unprivileged=True,
        description="root's 0600 zone file: openat EACCES, the page header's time in UTC"),
    _sc("t59_preconv_gconv_module_gone", "preconv -e IBM1047 with GCONV_PATH=gconv",
        sh_argv(PRECONV_SH), preconv_build, OPEN, "ENOENT", lambda b: f"{b}/gconv/IBM1047.so",
        description="gconv-modules names IBM1047.so, which is gone: openat ENOENT, 'encoding system 'IBM1047' "
                    "not supported by iconv()', the text lost"),
    _sc("t59_getent_nsswitch_module_missing", "getent passwd under an nsswitch.conf naming extrausers",
        GETENT_ARGV, getent_build, OPEN, "ENOENT", lambda _b: "*/libnss_extrausers.so.2",
        description="libnss_extrausers is not installed: the dlopen's openat ENOENT, root not found, exit 2"),
    _sc("t59_gettext_catalog_missing", "gettext job with TEXTDOMAINDIR=share/locale",
        sh_argv(GETTEXT_SH), gettext_build, OPEN, "ENOENT", lambda b: f"{b}/share/locale/sv/LC_MESSAGES/job.mo",
        description="the Swedish catalog is missing: openat ENOENT of sv/LC_MESSAGES/job.mo, the message stays "
                    "English"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def preload_noise(base: Path, run: int) -> None:
    _preload_tree(base, size=[256, 40_000, 3][run % 3], job=token(4))


def zdump_noise(base: Path, run: int) -> None:
    _zdump_tree(base, job=token(4))


def locale_noise(base: Path, run: int) -> None:
    _locale_tree(base, word=["ÅÄÖåäö", "smörgåsbord", "ö"][run % 3], job=token(4))


def getent_noise(base: Path, run: int) -> None:
    _getent_tree(base, user=["root", "daemon", "nobody"][run % 3])


def gettext_noise(base: Path, run: int) -> None:
    _gettext_tree(base, msgid=["report ready", "report failed", "report ready"][run % 3], job=token(4))


def preconv_noise(base: Path, run: int) -> None:
    _preconv_tree(base, lines=[10, 2000, 1][run % 3])


QUIET_FIFTYNINTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t59_od_ld_preload_noise", sh_argv(PRELOAD_SH), preload_noise,
                  description="od with the shim preloaded on 256, 40000, 3 bytes, another JOB_ID each run"),
    NoAnomalyCase("t59_zdump_tzdir_noise", sh_argv(ZDUMP_SH), zdump_noise,
                  description="zdump from the job's tzdata, another mktemp name and JOB_ID each run"),
    NoAnomalyCase("t59_expr_locale_noise", sh_argv(LOCALE_SH), locale_noise,
                  description="expr length of other words under the job's locale, another JOB_ID each run"),
    NoAnomalyCase("t59_getent_nsswitch_noise", GETENT_ARGV, getent_noise,
                  description="getent passwd root, daemon, nobody under the job's nsswitch.conf"),
    NoAnomalyCase("t59_gettext_catalog_noise", sh_argv(GETTEXT_SH), gettext_noise,
                  description="gettext of the two messages from the job's catalog, another JOB_ID each run"),
    NoAnomalyCase("t59_preconv_gconv_noise", sh_argv(PRECONV_SH), preconv_noise,
                  description="preconv of 10, 2000, 1 EBCDIC lines through the job's gconv module"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case here (the getent cases' bind mount goes with their namespace)."""
