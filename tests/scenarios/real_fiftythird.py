"""A fifty-third set of real programs with one real fault each: **degraded success** -- a job's
setup step that meets a fault, falls back and still exits 0, so the job goes on misconfigured.
The bad run's exit status is the good runs' (0); what shows the fault is a call that fails with an
errno the good runs never met, followed by the program's fallback path (or a missing effect):

- ``cp -a`` of the release into the job's runtime directory, which the bad node's old image mounts
  as a ramfs (no extended attributes): the copy is made, the ACL of the first file copied cannot be
  set -- fsetxattr EOPNOTSUPP -- and ``cp -a`` says nothing, exit 0;
- ``tar --xattrs -x`` of the job's packed environment into the same kind of ramfs: the files are
  written, the members' ``user.*`` attributes cannot be -- setxattr EOPNOTSUPP (through
  ``/proc/self/fd/N/...`` first), a warning, exit 0;
- ``touch -c`` refreshing the job's stamps, ready.stamp never made by the step before (it failed
  quietly): utimensat ENOENT, ``-c`` creates nothing, exit 0;
- ``numfmt --grouping`` under the job's locale, the bad job's env file naming en_UK.UTF-8 (no such
  locale: en_GB): setlocale's openat of /usr/lib/locale/en_UK.UTF-8/LC_IDENTIFICATION ENOENT, the C
  locale instead, no grouping, exit 0;
- ``pr`` of the run's reports under the job's TZ, the bad env file misspelling America/Sao_Paulo:
  openat /usr/share/zoneinfo/America/Sao_Paolo ENOENT, UTC headers, exit 0;
- ``nice -n $JOB_NICE`` as the job's user (nobody), the bad env file asking for -5: setpriority
  EACCES, "cannot set niceness", the command runs anyway, exit 0;
- a python3 config renderer with TMPDIR the job's scratch, whose creation failed on the bad node:
  tempfile's probe openat of scratch/tmp/<random> ENOENT, then /tmp, exit 0;
- python3 importing the job's helper module from a code directory the bad node delivers as a
  read-only bind mount: the byte-code cache's mkdir of __pycache__ fails EROFS, ignored, exit 0;
- a shell prolog sourcing its optional site.local when readable, a directory on the bad node (a
  config-management manifest with a trailing slash): dash's read EISDIR, the defaults, exit 0;
- ``sha1sum -c --ignore-missing`` of the job's fetched artifacts, one of which the bad fetch never
  wrote: openat ENOENT, skipped silently, exit 0;
- ``tput setaf`` with TERMINFO the job's own terminfo directory, which the bad node never unpacked:
  ncurses' newfstatat of that directory ENOENT, then the system's entry, exit 0;
- a python3 setup step reading the job's job.conf, else the site defaults, the bad job's config
  staged under another name: openat job/job.conf ENOENT, the very next call opens etc/defaults.conf,
  exit 0;
- a shell prolog raising its descriptor limit with ``ulimit -n`` as nobody, the bad limits file
  asking for more than the hard limit: prlimit64 EPERM, ``|| :``, exit 0.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; its data is picked by the run (the setup counts the good runs).

Noise cases (``QUIET_FIFTYTHIRD``): good runs alone that *always* meet a routine error and fall back
-- ``cp -a`` onto a ramfs in every run (fsetxattr EOPNOTSUPP every time), ``mv`` across file systems
(renameat2 EXDEV, then the copy), the tempfile renderer whose TMPDIR never exists, ``numfmt`` under a
locale this host never has, the prolog whose optional site.local is never there,
``sha1sum --ignore-missing`` with a debug-symbols file never fetched -- and ``touch -c`` of stamps
that are there in every run (contents with pids and random words).

No loopback service: the set takes no ports.
"""

from __future__ import annotations

import os
import random
import resource
from pathlib import Path

from .files import chown_nobody, mounted_tmpfs, run_quiet, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    argv_in,
    sh_argv,
    unmount_under,
)

OPEN = frozenset({"openat", "open"})
READ = frozenset({"read", "pread64", "readv"})
SETXATTR = frozenset({"setxattr", "lsetxattr", "fsetxattr"})
UTIMES = frozenset({"utimensat", "utimes", "utime", "futimesat"})
MKDIR = frozenset({"mkdir", "mkdirat"})
RLIMIT = frozenset({"prlimit64", "setrlimit"})
SETPRIO = frozenset({"setpriority"})
PY = "/usr/bin/python3"

_TURNS = RunTurns()  # which good run of each case is being set up


def mounted_ramfs(target: Path) -> Path:
    """A ramfs (no extended attributes, no ACLs) mounted on `target` (made if missing)."""
    target.mkdir(parents=True, exist_ok=True)
    run_quiet("mount", "-t", "ramfs", "-o", "mode=0755", "tracebase-test", str(target))
    return target


def bind_read_only(target: Path) -> None:
    """`target` bind-mounted on itself read-only (a read-only image mount of its tree)."""
    run_quiet("mount", "--bind", str(target), str(target))
    run_quiet("mount", "-o", "remount,bind,ro", str(target))


def _job_env(base: Path, **values: str) -> None:
    write_file(base / "conf" / "job.env", "".join(f"{k}={v}\n" for k, v in values.items()))


# --- cp -a of the release into the job's runtime directory; a ramfs on the bad node --------------------------------
CP_SH = 'exec /usr/bin/cp -a "$1/release/." "$1/run/app/"'


def _release(base: Path, files: int) -> None:
    """release/: bin/, lib/, etc/ of a build (`files` files, random contents)."""
    for k in range(files):
        sub = random.choice(["bin", "lib", "etc"])
        write_file(base / "release" / sub / f"{sub}-{token(3)}-{k}", random.randbytes(random.randrange(64, 4096)),
                   mode=0o755 if sub == "bin" else 0o644)


def cp_build(base: Path, bad: bool) -> None:
    _release(base, _TURNS.pick(base, bad, [6, 12, 4], 9))
    (base / "run").mkdir()
    if bad:  # the node's old image mounts the runtime directory as a ramfs, not a tmpfs
        mounted_ramfs(base / "run" / "app")
    else:
        mounted_tmpfs(base / "run" / "app", "16m")


# --- tar --xattrs -x of the job's packed environment; a ramfs on the bad node --------------------------------------
TAR_SH = 'exec /usr/bin/tar --xattrs -C "$1/run/venv" -xf "$1/dist/env.tar"'


def _packed_env(base: Path, files: int) -> None:
    """dist/env.tar: env/{bin,lib}/... whose files carry user.* attributes (the pack tool's checksums)."""
    src = base / ".src"
    for k in range(files):
        sub = random.choice(["bin", "lib/python3.11/site-packages"])
        path = write_file(src / "env" / sub / f"mod_{token(3)}_{k}.py", f"# {token(8)}\nVALUE = {k}\n")
        os.setxattr(path, "user.pack.sha1", token(10).encode())
    (base / "dist").mkdir()
    run_quiet("tar", "--xattrs", "-C", str(src), "-cf", str(base / "dist" / "env.tar"), "env")
    run_quiet("rm", "-rf", str(src))


def tar_build(base: Path, bad: bool) -> None:
    _packed_env(base, _TURNS.pick(base, bad, [5, 9, 3], 7))
    if bad:
        mounted_ramfs(base / "run" / "venv")
    else:
        mounted_tmpfs(base / "run" / "venv", "16m")


# --- touch -c of the job's stamps; ready.stamp never made ----------------------------------------------------------
TOUCH_SH = 'exec /usr/bin/touch -c "$1/state/inputs.stamp" "$1/state/ready.stamp"'


def touch_build(base: Path, bad: bool) -> None:
    check = _TURNS.pick(base, bad, ["schema", "rows", "schema,rows"], None)
    write_file(base / "state" / "inputs.stamp", f"{token(4)}\n")
    if check is not None:  # the step before (the data check) failed quietly on the bad node: no ready.stamp
        write_file(base / "state" / "ready.stamp", f"checked {check} {token(4)}\n")


# --- numfmt --grouping under the job's locale; en_UK.UTF-8 (no such locale) -----------------------------------------
NUMFMT_SH = ('. "$1/conf/job.env" && export LC_ALL="$JOB_LOCALE" && '
             'exec /usr/bin/numfmt --grouping --field=2 < "$1/data/counts.tsv"')


def _counts(base: Path, rows: int) -> None:
    write_file(base / "data" / "counts.tsv",
               "".join(f"shard-{k:04d}\t{random.randrange(10**3, 10**9)}\n" for k in range(rows)))


def numfmt_build(base: Path, bad: bool) -> None:
    _counts(base, _TURNS.pick(base, bad, [5, 20, 9], 14))
    _job_env(base, JOB_LOCALE="en_UK.UTF-8" if bad else "C.UTF-8")


# --- pr of the run's reports under the job's TZ; misspelled ------------------------------------------------------
PR_SH = '. "$1/conf/job.env" && export TZ && exec /usr/bin/pr -h "job reports" "$1"/reports/*.txt'
TZ_GOOD = "America/Sao_Paulo"
TZ_BAD = "America/Sao_Paolo"


def pr_build(base: Path, bad: bool) -> None:
    for k in range(_TURNS.pick(base, bad, [2, 4, 1], 3)):
        write_file(base / "reports" / f"report-{k}.txt",
                   "".join(f"{token(4)} {random.randrange(10**6)}\n" for _ in range(random.randrange(5, 80))))
    _job_env(base, TZ=TZ_BAD if bad else TZ_GOOD)


# --- nice -n $JOB_NICE as the job's user; -5 on the bad job --------------------------------------------------------
NICE_SH = ('. "$1/conf/job.env" && exec /usr/bin/nice -n "$JOB_NICE" '
           '/usr/bin/sort -o "$1/out/sorted.txt" "$1/data/input.txt"')


def nice_build(base: Path, bad: bool) -> None:
    write_file(base / "data" / "input.txt", "".join(f"{token(5)}\n" for _ in range(random.randrange(50, 400))))
    (base / "out").mkdir()
    chown_nobody(base / "out")
    _job_env(base, JOB_NICE=_TURNS.pick(base, bad, ["5", "10", "2"], "-5"))


# --- a python3 config renderer with TMPDIR the job's scratch; the scratch was never made ---------------------------
RENDER_PY = """\
import os, sys, tempfile

base = sys.argv[1]
with open(os.path.join(base, "conf", "params.txt")) as fh:
    params = [line.split("=", 1) for line in fh.read().splitlines() if "=" in line]
fd, tmp = tempfile.mkstemp(prefix="job-", suffix=".cfg")
with os.fdopen(fd, "w") as out:
    for key, value in params:
        out.write(f"{key.strip()} = {value.strip()!r}\\n")
os.replace(tmp, os.path.join(base, "run", "job.cfg"))
"""
RENDER_SH = '. "$1/conf/job.env" && export TMPDIR && exec /usr/bin/python3 -S "$1/bin/render.py" "$1"'


def _render_inputs(base: Path, params: int, scratch: bool) -> None:
    write_file(base / "bin" / "render.py", RENDER_PY)
    write_file(base / "conf" / "params.txt", "".join(f"param_{k} = {token(4)}\n" for k in range(params)))
    (base / "run").mkdir()
    _job_env(base, TMPDIR=f"{base}/scratch/tmp")
    if scratch:
        (base / "scratch" / "tmp").mkdir(parents=True)


def render_build(base: Path, bad: bool) -> None:
    # the bad node's prolog failed to make the job's scratch: TMPDIR names a directory that is not there
    _render_inputs(base, _TURNS.pick(base, bad, [3, 8, 5], 6), scratch=not bad)


# --- python3 importing the job's helper from a code directory read-only on the bad node ---------------------------
SETUP_PY = """\
import sys

import jobconf

jobconf.write_env(sys.argv[1])
"""
JOBCONF_PY = """\
import json, os

DEFAULTS = {defaults}


def write_env(base):
    with open(os.path.join(base, "conf", "overrides.json")) as fh:
        conf = dict(DEFAULTS, **json.load(fh))
    with open(os.path.join(base, "run", "job.env"), "w") as out:
        for key in sorted(conf):
            out.write(f"{{key.upper()}}={{conf[key]}}\\n")
"""
SETUP_ARGV = [PY, "-S", "{b}/app/setup_job.py", "{b}"]


def _app(base: Path, keys: int) -> None:
    defaults = {f"opt_{k}": random.randrange(1000) for k in range(keys)}
    write_file(base / "app" / "setup_job.py", SETUP_PY)
    write_file(base / "app" / "jobconf.py", JOBCONF_PY.format(defaults=repr(defaults)))
    write_file(base / "conf" / "overrides.json", f'{{"opt_0": {random.randrange(1000)}}}\n')
    (base / "run").mkdir()


def pycache_build(base: Path, bad: bool) -> None:
    _app(base, _TURNS.pick(base, bad, [3, 9, 5], 6))
    if bad:  # the bad node delivers the job's code as a read-only image mount
        bind_read_only(base / "app")


# --- a shell prolog sourcing its optional site.local; a directory on the bad node ---------------------------------
PROLOG_SH = """\
conf="$1/conf/site.local"
if [ -r "$conf" ]; then . "$conf"; fi
: "${JOB_WORKERS:=4}" "${JOB_QUEUE:=default}"
printf 'WORKERS=%s\\nQUEUE=%s\\n' "$JOB_WORKERS" "$JOB_QUEUE" > "$1/run/job.env"
"""


def prolog_build(base: Path, bad: bool) -> None:
    (base / "run").mkdir()
    site = base / "conf" / "site.local"
    workers = _TURNS.pick(base, bad, ["16", "32", "8"], None)
    if workers is None:  # the config-management manifest had a trailing slash: site.local/ made as a directory
        site.mkdir(parents=True)
        write_file(site / "workers.conf", "JOB_WORKERS=32\n")
    else:
        write_file(site, f"JOB_WORKERS={workers}\nJOB_QUEUE=gpu-{token(2)}\n")


# --- sha1sum -c --ignore-missing of the fetched artifacts; one never written ----------------------------------------
SHA1_SH = 'cd "$1/dist" && exec /usr/bin/sha1sum --quiet --strict --ignore-missing -c SHA1SUMS'


def _artifacts(base: Path, count: int, missing: int | None = None, absent_extra: str | None = None) -> None:
    """dist/<artifact>... and dist/SHA1SUMS naming them (and `absent_extra`, never fetched); the
    artifact at index `missing` is listed but not there."""
    dist = base / "dist"
    dist.mkdir()
    names = [f"artifact-{token(3)}-{k}.bin" for k in range(count)]
    for name in names:
        write_file(dist / name, random.randbytes(random.randrange(256, 8192)))
    run_quiet("/bin/sh", "-c", 'cd "$1" && shift && /usr/bin/sha1sum "$@" > SHA1SUMS', "sh", str(dist), *names)
    if absent_extra:
        with open(dist / "SHA1SUMS", "a") as fh:
            fh.write(f"{token(20)}  {absent_extra}\n")
    if missing is not None:
        (dist / names[missing]).unlink()


def sha1_build(base: Path, bad: bool) -> None:
    # the bad fetch lost its connection on the third artifact and went on: it was never written
    _artifacts(base, _TURNS.pick(base, bad, [4, 7, 3], 5), missing=2 if bad else None)


# --- a shell prolog raising its descriptor limit as nobody; the bad limits ask for more than the hard limit ---------
ULIMIT_SH = """\
. "$1/conf/limits.env"
ulimit -n "$NOFILE" 2>/dev/null || :
exec /usr/bin/cat "$1"/data/part-* > "$1/out/joined.txt"
"""


def ulimit_build(base: Path, bad: bool) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    good = _TURNS.pick(base, bad, [1024, 512, 256], 0)
    # the bad node's limits file was written for a host whose hard limit is higher than this one's
    write_file(base / "conf" / "limits.env", f"NOFILE={hard + 1 if bad else min(good, hard)}\n")
    for k in range(random.randrange(2, 6)):
        write_file(base / "data" / f"part-{k}", "".join(f"{token(4)}\n" for _ in range(random.randrange(5, 50))))
    (base / "out").mkdir()
    chown_nobody(base / "out")


# --- tput under the job's own terminfo directory; the bad node never unpacked it -----------------------------------
TPUT_SH = '. "$1/conf/job.env" && export TERM TERMINFO && exec /usr/bin/tput setaf "$JOB_COLOR"'
SYSTEM_TERMINFO = [Path("/lib/terminfo/x/xterm-256color"), Path("/usr/share/terminfo/x/xterm-256color")]


def system_xterm_entry() -> Path | None:
    """The system's compiled xterm-256color entry (ncurses-base), or None."""
    return next((p for p in SYSTEM_TERMINFO if p.exists()), None)


def tput_build(base: Path, bad: bool) -> None:
    color = _TURNS.pick(base, bad, ["2", "4", "6"], "3")
    _job_env(base, TERM="xterm-256color", TERMINFO=f"{base}/share/terminfo", JOB_COLOR=color)
    if not bad:  # the job's bundle ships its own copy of the entry; the bad node's unpack step skipped it
        write_file(base / "share" / "terminfo" / "x" / "xterm-256color", system_xterm_entry().read_bytes())


# --- a python3 setup step reading the job's config, else the site defaults; the job's never staged ---------------
CONFIG_PY = """\
import os, sys

base = sys.argv[1]
conf = {}
for path in (os.path.join(base, "job", "job.conf"), os.path.join(base, "etc", "defaults.conf")):
    try:
        with open(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        continue
    conf = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    break
with open(os.path.join(base, "run", "job.env"), "w") as out:
    for key in sorted(conf):
        out.write(f"{key.strip().upper()}={conf[key].strip()}\\n")
"""
CONFIG_ARGV = [PY, "-S", "{b}/bin/job-config.py", "{b}"]


def config_build(base: Path, bad: bool) -> None:
    keys = _TURNS.pick(base, bad, [4, 7, 3], 5)
    write_file(base / "bin" / "job-config.py", CONFIG_PY)
    write_file(base / "etc" / "defaults.conf", "".join(f"opt_{k} = default\n" for k in range(6)))
    (base / "run").mkdir()
    # the bad job's submit script staged its config under another name: the site defaults are used
    name = "job.conf.staged" if bad else "job.conf"
    write_file(base / "job" / name, "".join(f"opt_{k} = {token(3)}\n" for k in range(keys)))


def _teardown(base: Path) -> None:
    unmount_under(base)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=_teardown, unprivileged=unprivileged,
                    description=description)


REAL_FIFTYTHIRD: list[Scenario] = [
    _sc("t53_cp_archive_runtime_ramfs", "cp -a of the release into run/app (6, 12, 4 files)", sh_argv(CP_SH),
        cp_build, SETXATTR, "EOPNOTSUPP", lambda b: f"{b}/run/app/*",
        description="cp -a release/. run/app/; the good nodes mount a tmpfs there, the bad node's old image a "
                    "ramfs: the files are copied, setting the first one's ACL (fsetxattr "
                    "system.posix_acl_access) fails EOPNOTSUPP, cp -a says nothing and exits 0"),
    _sc("t53_tar_xattrs_venv_ramfs", "tar --xattrs -x of the packed environment (5, 9, 3 files)", sh_argv(TAR_SH),
        tar_build, SETXATTR, "EOPNOTSUPP", lambda b: "*/env/*",
        description="tar --xattrs -C run/venv -xf dist/env.tar whose files carry user.pack.sha1; the bad node's "
                    "run/venv is a ramfs: setxattr (through /proc/self/fd/N/env/..., then the relative path) "
                    "fails EOPNOTSUPP, tar warns and exits 0"),
    _sc("t53_touch_c_ready_stamp_missing", "touch -c of the job's stamps", sh_argv(TOUCH_SH),
        touch_build, UTIMES, "ENOENT", lambda b: f"{b}/state/ready.stamp",
        description="touch -c state/inputs.stamp state/ready.stamp; the step that makes ready.stamp failed "
                    "quietly on the bad node: utimensat ENOENT, -c creates nothing, exit 0"),
    _sc("t53_numfmt_locale_en_uk", "numfmt --grouping under the job's locale (5, 20, 9 rows)", sh_argv(NUMFMT_SH),
        numfmt_build, OPEN, "ENOENT", lambda b: "/usr/lib/locale/en_UK*/LC_*",
        description="the job's env file sets LC_ALL; the bad one says en_UK.UTF-8 (no such locale): setlocale's "
                    "openat /usr/lib/locale/en_UK.UTF-8/LC_IDENTIFICATION fails ENOENT (and the other spellings), "
                    "the C locale instead, numbers without grouping, exit 0"),
    _sc("t53_pr_tz_misspelled", "pr of the run's reports under the job's TZ (2, 4, 1 reports)", sh_argv(PR_SH),
        pr_build, OPEN, "ENOENT", lambda b: f"/usr/share/zoneinfo/{TZ_BAD}",
        description="the job's env file sets TZ; the bad one misspells America/Sao_Paulo: openat "
                    "/usr/share/zoneinfo/America/Sao_Paolo fails ENOENT, the headers in UTC, exit 0"),
    _sc("t53_nice_negative_as_nobody", "nice -n $JOB_NICE sort as nobody (5, 10, 2)", sh_argv(NICE_SH),
        nice_build, SETPRIO, "EACCES", lambda b: "", unprivileged=True,
        description="nice -n $JOB_NICE sort ... as the job's user; the bad env file asks for -5: setpriority "
                    "fails EACCES (nice(1): 'cannot set niceness'), sort runs anyway, exit 0"),
    _sc("t53_python3_tempfile_scratch_missing", "python3 render.py with TMPDIR the job's scratch (3, 8, 5)",
        sh_argv(RENDER_SH), render_build, OPEN, "ENOENT", lambda b: f"{b}/scratch/tmp/*",
        description="the renderer's tempfile.mkstemp under TMPDIR=scratch/tmp, which the bad node's prolog "
                    "never made: tempfile's probe openat scratch/tmp/<random> O_CREAT|O_EXCL fails ENOENT, it "
                    "falls back to /tmp, exit 0"),
    _sc("t53_python3_pycache_code_ro", "python3 setup_job.py importing jobconf (3, 9, 5 keys)", argv_in(SETUP_ARGV),
        pycache_build, MKDIR, "EROFS", lambda b: f"{b}/app/__pycache__",
        description="python3 app/setup_job.py imports app/jobconf.py; the bad node delivers app/ as a read-only "
                    "mount: the byte-code cache's mkdir app/__pycache__ fails EROFS, ignored, exit 0"),
    _sc("t53_sh_site_local_is_dir", "sh prolog sourcing its optional site.local", sh_argv(PROLOG_SH),
        prolog_build, READ, "EISDIR", lambda b: f"{b}/conf/site.local",
        description="the prolog sources conf/site.local when [ -r ] says it is readable; on the bad node it is a "
                    "directory: dash's open succeeds, its read fails EISDIR, the defaults are used, exit 0"),
    _sc("t53_sha1sum_ignore_missing_artifact", "sha1sum -c --ignore-missing of fetched artifacts (4, 7, 3)",
        sh_argv(SHA1_SH), sha1_build, OPEN, "ENOENT", lambda b: f"{b}/dist/artifact-*-2.bin",
        description="sha1sum --quiet --strict --ignore-missing -c SHA1SUMS in dist/; the bad fetch never wrote "
                    "its third artifact: openat ENOENT, skipped without a word, exit 0"),
    _sc("t53_tput_job_terminfo_missing", "tput setaf under the job's TERMINFO (colors 2, 4, 6)", sh_argv(TPUT_SH),
        tput_build, frozenset({"newfstatat", "stat", "statx", "access", "faccessat", "faccessat2"}), "ENOENT",
        lambda b: f"{b}/share/terminfo",
        description="tput setaf with TERMINFO=share/terminfo, the job's own copy of xterm-256color; the bad "
                    "node never unpacked it: ncurses' stat of the TERMINFO directory fails ENOENT, it falls back "
                    "to the system's terminfo (/lib/terminfo), exit 0"),
    _sc("t53_python3_job_conf_falls_back_to_defaults", "python3 job-config.py (4, 7, 3 keys)", argv_in(CONFIG_ARGV),
        config_build, OPEN, "ENOENT", lambda b: f"{b}/job/job.conf",
        description="the setup step reads job/job.conf, else etc/defaults.conf; the bad job's config was staged "
                    "as job.conf.staged: openat job/job.conf fails ENOENT, the very next call opens the site "
                    "defaults, the job runs with them, exit 0"),
    _sc("t53_sh_ulimit_nofile_over_hard", "sh prolog ulimit -n as nobody, then cat", sh_argv(ULIMIT_SH),
        ulimit_build, RLIMIT, "EPERM", lambda b: "", unprivileged=True,
        description="the prolog sources conf/limits.env and runs ulimit -n $NOFILE || :; the bad node's file asks "
                    "for one more than the hard limit: dash's prlimit64(RLIMIT_NOFILE) fails EPERM, ignored, "
                    "exit 0"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------
def cp_noise(base: Path, run: int) -> None:
    _release(base, [5, 11, 3, 8][run % 4])
    mounted_ramfs(base / "run" / "app")  # every node of this pool: a ramfs, EOPNOTSUPP every time


MV_SH = 'exec /usr/bin/mv "$1"/outbox/*.dat "$1/spool/"'


def mv_noise(base: Path, run: int) -> None:
    for k in range([2, 5, 1, 3][run % 4]):
        write_file(base / "outbox" / f"batch-{os.getpid()}-{token(3)}-{k}.dat", random.randbytes(random.randrange(64, 9000)))
    mounted_tmpfs(base / "spool", "8m")  # another file system: renameat2 EXDEV, then a copy, every run


def render_noise(base: Path, run: int) -> None:
    _render_inputs(base, [4, 2, 7, 5][run % 4], scratch=False)  # this pool never has the scratch: /tmp


def numfmt_noise(base: Path, run: int) -> None:
    _counts(base, [3, 17, 8, 11][run % 4])
    _job_env(base, JOB_LOCALE="en_UK.UTF-8")  # every run: the same missing locale, the C fallback


def prolog_noise(base: Path, run: int) -> None:
    (base / "run").mkdir()
    (base / "conf").mkdir()  # no site.local on any node of this pool
    write_file(base / "conf" / f"notes-{token(3)}.txt", f"{token(8)}\n")


def sha1_noise(base: Path, run: int) -> None:
    _artifacts(base, [3, 6, 4, 2][run % 4], absent_extra="debug-symbols.tar")  # never fetched, --ignore-missing


def touch_noise(base: Path, run: int) -> None:
    write_file(base / "state" / "inputs.stamp", f"{os.getpid()} {token(4)}\n")
    write_file(base / "state" / "ready.stamp", f"{random.randrange(10**6)}\n")


QUIET_FIFTYTHIRD: list[NoAnomalyCase] = [
    NoAnomalyCase("t53_cp_archive_ramfs_every_run", sh_argv(CP_SH), cp_noise, runs=4,
                  description="cp -a of 5, 11, 3, 8 files onto a ramfs in every run: fsetxattr EOPNOTSUPP each time"),
    NoAnomalyCase("t53_mv_across_fs_every_run", sh_argv(MV_SH), mv_noise, runs=4,
                  description="mv outbox/*.dat onto a tmpfs spool: renameat2 EXDEV, then the copy and unlink, in "
                              "every run (2, 5, 1, 3 files, pid and random names)"),
    NoAnomalyCase("t53_python3_tempfile_no_scratch_every_run", sh_argv(RENDER_SH), render_noise, runs=4,
                  description="the tempfile renderer whose TMPDIR never exists: openat ENOENT then /tmp in every "
                              "run (random names)"),
    NoAnomalyCase("t53_numfmt_missing_locale_every_run", sh_argv(NUMFMT_SH), numfmt_noise, runs=4,
                  description="numfmt --grouping under en_UK.UTF-8 in every run (3, 17, 8, 11 rows)"),
    NoAnomalyCase("t53_sh_site_local_absent", sh_argv(PROLOG_SH), prolog_noise, runs=4,
                  description="the prolog whose optional site.local is never there: [ -r ] fails, the defaults"),
    NoAnomalyCase("t53_sha1sum_debug_symbols_never_fetched", sh_argv(SHA1_SH), sha1_noise, runs=4,
                  description="sha1sum --ignore-missing over 3, 6, 4, 2 artifacts and a debug-symbols entry never "
                              "fetched (openat ENOENT in every run)"),
    NoAnomalyCase("t53_touch_c_stamps_noise", sh_argv(TOUCH_SH), touch_noise, runs=4,
                  description="touch -c of both stamps, present in every run (contents with pids and random words)"),
]


def quiet_teardown() -> None:
    """Unmount anything a case of this set left mounted (a failed teardown) and forget the runs' counts."""
    for name in [*_TURNS.good_runs, *(s.name for s in REAL_FIFTYTHIRD), *(c.name for c in QUIET_FIFTYTHIRD)]:
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _TURNS.good_runs.clear()
