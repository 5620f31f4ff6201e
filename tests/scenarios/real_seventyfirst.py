"""A seventy-first set of real programs: **programs that find and run other programs by name** -- a
shell's PATH lookup, execvp in env/xargs/ionice/chrt/prlimit, python's subprocess and shutil.which,
perl's system, make's recipe shell, `command -v` probes. Failed lookups on the way to the hit are
routine (a stat or an execve ENOENT in every PATH directory before the one holding the tool); the
fault is where a lookup that found the tool in the good runs stops finding it, or finds something
it cannot run.

Fault cases (``REAL_SEVENTYFIRST``): three good runs and the bad run; ``extra["walk"]`` lists the
rest of the bad run's search (probe, errno, path glob) that the recording must hold. What
``strace -f`` shows each bad run doing (dash 0.5.12, glibc execvp, python 3.11, GNU make 4.3,
util-linux 2.38; PATH is the script's own, ``B/local/bin:B/opt/bin:/usr/bin:/bin`` unless said):

- a job script (sh) whose wrapper ``fmtjob`` was not deployed: dash looks a command up with stat, not
  execve -- ``newfstatat(.., "B/local/bin/fmtjob") = -1 ENOENT``, ``B/tools/bin/fmtjob`` ENOENT (both
  in every good run too), then ``B/opt/bin/fmtjob`` ENOENT where every good run's was 0 (the outcome
  change), ``/usr/bin/fmtjob`` and ``/bin/fmtjob`` ENOENT (new), "fmtjob: not found", exit 127; no
  execve of it at all (the brief's "last execve ENOENT" is not what dash does);
- python3's ``subprocess.run(["fmtwrap"])`` of a wrapper saved with CRLF line ends: the child's
  ``execve("B/local/bin/fmtwrap") = -1 ENOENT`` (every run), ``execve("B/opt/bin/fmtwrap") = -1 ENOENT``
  (the kernel's answer for the missing interpreter "/bin/sh\\r" is ENOENT at the *script's* path --
  strace never shows "/bin/sh\\r"), then ``/usr/bin/fmtwrap``, ``/bin/fmtwrap`` ENOENT,
  FileNotFoundError, exit 1;
- ``ionice -c 3 report`` where report's shebang names an interpreter that is not there
  (``#!/opt/tb71-venv/bin/python3``): ionice's execvp, ``execve("B/opt/bin/report") = -1 ENOENT``, goes on
  to /usr/bin and /bin (ENOENT), "ionice: failed to execute report: No such file or directory", 127;
- ``chrt -o 0 report`` where the only report lost its execute bit (0644): ``execve("B/opt/bin/report")
  = -1 EACCES``, execvp goes on (/usr/bin, /bin: ENOENT), "chrt: failed to execute report: Permission
  denied", 126;
- ``unshare -m`` + a tmpfs mounted over B/tools with the options in ``mountopts`` (good: exec, bad:
  noexec; ``mount(.., MS_NOEXEC, ..) = 0``), report copied in, ``prlimit --nofile=256 report``:
  ``execve("B/tools/report") = -1 EACCES``, /usr/bin, /bin ENOENT, 126;
- ``xargs -n 2 countlines`` with PATH ``B/tools/bin:/usr/bin:/bin`` where B/tools is a regular file
  (a tarball written where the directory was): ``execve("B/tools/bin/countlines") = -1 ENOTDIR``, then
  ENOENT in /usr/bin and /bin, "xargs: countlines: No such file or directory", 127;
- ``make -s`` whose recipe line carries ``$(NAMES)`` from names.txt (200 host names in the good runs,
  4000 -- about 180 KB, past the 128 KiB a single argument may have -- in the bad):
  ``execve("/bin/sh", ["/bin/sh", "-c", "mkdir -p out && printf ..."]) = -1 E2BIG``, "make: /bin/sh:
  Argument list too long", exit 2.

A non-executable file *shadowing* the tool earlier in PATH (the brief's idea of a fault) is not one:
strace shows dash stat-ing it and then ``faccessat2(.., X_OK) = -1 EACCES`` and moving on, and glibc's
execvp and python's subprocess taking the EACCES and trying the next directory, where the tool runs.
It is a noise case here (perl), and the fault is the tool's only copy lacking the bit (chrt).

Noise cases (``QUIET_SEVENTYFIRST``): five good runs each, every run diffed against the other four;
same output and exit status every run; the setup gives each run its own PATH (a file the script
reads) or its own optional tools. What ``strace -f`` showed varying (5 runs alone, 5 beside two busy
loops -- the same each time: these differ by the runs' set-up, not by timing):

- sh with 0 to 3 missing directories and an empty entry before B/opt/bin: 1, 3, 2, 5, 2
  ``newfstatat ENOENT`` for fmtjob (an empty entry is the cwd, "/": ``newfstatat("fmtjob")``), the
  wrapper's ``exec tr`` 2 to 6 ``execve ENOENT`` before /usr/bin/tr, and sort's and uniq's stat walks
  as long;
- ``env PATH=... fmtjob``: env's execvp, 1, 3, 2, 5, 2 ``execve ENOENT`` before the hit;
- sh probing ``command -v fastsum`` (present in runs 1 and 3: stat ENOENT in B/local/bin, 0 in
  B/opt/bin, the tool run, its ``exec md5sum`` walking PATH with execve; absent in 0, 2, 4: stat ENOENT
  in all four directories, then dash's stat walk for md5sum) -- the same sum every run;
- sh running fmtjob four times in a loop, with ``hash -r`` before each in runs 0, 2 and 4 (a fresh stat
  walk each time: 4 x 2 ENOENT) and the hashed path in runs 1 and 3 (one walk; their ``[ -e rehash ]``
  is the stat ENOENT instead);
- make finding out/report.txt up to date (runs 1 and 3: its stat, no recipe shell) or missing (runs 0,
  2, 4: ``newfstatat ENOENT``, the recipe's /bin/sh, mkdir -p, sort);
- python3's ``shutil.which`` over 1 to 4 directories before the hit (``newfstatat ENOENT`` each), then
  ``subprocess.run`` of the absolute path it found (one execve, no walk);
- perl's ``system("fmtjob")`` with a non-executable fmtjob earlier in PATH in runs 1 and 3: execvp's
  ``execve("B/local/bin/fmtjob") = -1 EACCES``, then ``B/opt/bin/fmtjob`` = 0 (runs 0, 2, 4:
  ``execve ENOENT`` there) -- the same output.
"""

from __future__ import annotations

from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, Scenario, sh_argv

EXECS = frozenset({"execve", "execveat"})
STATS = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
RUNS = 5  # noise cases: each run against the other four

WRAPPER = "#!/bin/sh\nexec tr a-z A-Z\n"
TEXT = "".join(f"{w}\n" for w in ["delta", "alpha", "charlie", "bravo", "echo", "alpha", "foxtrot"])
PATH_3 = '"$1/local/bin:$1/tools/bin:$1/opt/bin:/usr/bin:/bin"'
PATH_2 = '"$1/local/bin:$1/opt/bin:/usr/bin:/bin"'


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


# --- fault cases -------------------------------------------------------------------------------------------------------
MISSING_SH = (f'PATH={PATH_3}; fmtjob < "$1/in.txt" > "$1/out.txt" && sort "$1/out.txt" > "$1/sorted.txt"')


def _missing_setup(base: Path, bad: bool) -> None:
    _dirs(base, "local/bin", "tools/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    if not bad:
        write_file(base / "opt" / "bin" / "fmtjob", WRAPPER, 0o755)


SUBPROCESS_PY = r"""
import os, subprocess, sys
b = sys.argv[1]
os.environ["PATH"] = f"{b}/local/bin:{b}/opt/bin:/usr/bin:/bin"
with open(b + "/in.txt") as i, open(b + "/out.txt", "w") as o:
    sys.exit(subprocess.run(["fmtwrap"], stdin=i, stdout=o).returncode)
"""


def _crlf_setup(base: Path, bad: bool) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "fmtwrap", WRAPPER.replace("\n", "\r\n") if bad else WRAPPER, 0o755)


IONICE_SH = f'PATH={PATH_2}; ionice -c 3 report < "$1/in.txt" > "$1/out.txt"'
CHRT_SH = f'PATH={PATH_2}; chrt -o 0 report < "$1/in.txt" > "$1/out.txt"'


def _interp_setup(base: Path, bad: bool) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    text = "#!/opt/tb71-venv/bin/python3\nimport sys\nsys.stdout.write(sys.stdin.read().upper())\n" if bad else WRAPPER
    write_file(base / "opt" / "bin" / "report", text, 0o755)


def _exec_bit_setup(base: Path, bad: bool) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "report", WRAPPER, 0o644 if bad else 0o755)


NOEXEC_SH = ('mount -t tmpfs -o "$(cat "$1/mountopts")",size=1m tools "$1/tools" && cp "$1/pkg/report" "$1/tools/" '
             '&& PATH="$1/tools:/usr/bin:/bin" prlimit --nofile=256 report < "$1/in.txt" > "$1/out.txt"')


def _noexec_argv(b: Path) -> list[str]:
    return ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", NOEXEC_SH, "sh", str(b)]


def _noexec_setup(base: Path, bad: bool) -> None:
    _dirs(base, "tools")
    write_file(base / "in.txt", TEXT)
    write_file(base / "pkg" / "report", WRAPPER, 0o755)
    write_file(base / "mountopts", "noexec\n" if bad else "exec\n")


XARGS_SH = ('printf "%s\\n" "$1"/data/f1 "$1"/data/f2 "$1"/data/f3 "$1"/data/f4 '
            '| PATH="$1/tools/bin:/usr/bin:/bin" /usr/bin/xargs -n 2 countlines > "$1/out.txt"')


def _xargs_setup(base: Path, bad: bool) -> None:
    for i in range(1, 5):
        write_file(base / "data" / f"f{i}", f"line {i}\n" * i)
    if bad:
        write_file(base / "tools", "countlines-1.2.tar\n")  # a file where the directory was
    else:
        write_file(base / "tools" / "bin" / "countlines", '#!/bin/sh\nexec wc -l "$@"\n', 0o755)


MAKEFILE = ('NAMES := $(shell cat names.txt)\n'
            'out/count.txt: names.txt\n'
            '\tmkdir -p out && printf "%s\\n" $(NAMES) | sort -u | wc -l > $@\n')


def _make_setup(base: Path, bad: bool) -> None:
    write_file(base / "Makefile", MAKEFILE)
    n = 4000 if bad else 200
    write_file(base / "names.txt", "".join(f"host-{i:05d}.rack-{i % 40:02d}.example.internal\n" for i in range(n)))


def _sc(name, program, argv, setup, probe, errno, path, *, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, description=description, extra=extra)


REAL_SEVENTYFIRST: list[Scenario] = [
    _sc("t71_sh_wrapper_missing_from_every_path_dir", "sh (a job script running fmtjob from PATH)",
        sh_argv(MISSING_SH), _missing_setup, STATS, "ENOENT", lambda b: f"{b}/opt/bin/fmtjob",
        walk=[("newfstatat", "ENOENT", "/usr/bin/fmtjob"), ("newfstatat", "ENOENT", "/bin/fmtjob")],
        description="dash's stat walk: ENOENT where the good runs found fmtjob, then in the rest, exit 127"),
    _sc("t71_python_subprocess_wrapper_saved_with_crlf", "python3 (subprocess.run of a PATH wrapper)",
        lambda b: [*PY, "-c", SUBPROCESS_PY, str(b)], _crlf_setup, EXECS, "ENOENT", lambda b: f"{b}/opt/bin/fmtwrap",
        walk=[("execve", "ENOENT", "/usr/bin/fmtwrap"), ("execve", "ENOENT", "/bin/fmtwrap")],
        description="#!/bin/sh\\r: execve of the wrapper ENOENT (no such interpreter), FileNotFoundError"),
    _sc("t71_ionice_shebang_names_a_missing_interpreter", "ionice -c 3 (a report tool found in PATH)",
        sh_argv(IONICE_SH), _interp_setup, EXECS, "ENOENT", lambda b: f"{b}/opt/bin/report",
        walk=[("execve", "ENOENT", "/usr/bin/report")],
        description="report's #! names /opt/tb71-venv/bin/python3, not there: execve ENOENT, exit 127"),
    _sc("t71_chrt_tool_lost_its_exec_bit", "chrt -o 0 (a report tool found in PATH)",
        sh_argv(CHRT_SH), _exec_bit_setup, EXECS, "EACCES", lambda b: f"{b}/opt/bin/report",
        walk=[("execve", "ENOENT", "/usr/bin/report")],
        description="the only report is 0644: execve EACCES, execvp tries the rest, exit 126"),
    _sc("t71_prlimit_tool_dir_mounted_noexec", "prlimit --nofile (unshare -m, tools on a tmpfs)",
        _noexec_argv, _noexec_setup, EXECS, "EACCES", lambda b: f"{b}/tools/report",
        walk=[("execve", "ENOENT", "/usr/bin/report")],
        description="the tools tmpfs mounted noexec in a private namespace: execve EACCES, exit 126"),
    _sc("t71_xargs_path_entry_is_a_file", "xargs -n 2 (countlines from PATH)",
        sh_argv(XARGS_SH), _xargs_setup, EXECS, "ENOTDIR", lambda b: f"{b}/tools/bin/countlines",
        walk=[("execve", "ENOENT", "/usr/bin/countlines")],
        description="B/tools is a file: execve ENOTDIR in the first PATH entry, ENOENT in the rest, 127"),
    _sc("t71_make_recipe_line_past_the_argument_limit", "make -s (a recipe with $(NAMES) from a file)",
        lambda b: ["/usr/bin/make", "-s", "-C", str(b)], _make_setup, EXECS, "E2BIG", lambda b: "/bin/sh",
        walk=[],
        description="4000 names make one ~180 KB sh -c argument: execve of /bin/sh E2BIG, make exits 2"),
]


# --- good runs whose lookups differ ------------------------------------------------------------------------------------
def _path_file(base: Path, entries: list[str]) -> None:
    write_file(base / "path", ":".join(e.replace("{b}", str(base)) for e in entries) + "\n")


# a run -> the PATH entries before B/opt/bin (missing directories, an empty entry: the cwd)
BEFORE: list[list[str]] = [
    ["{b}/local/bin"],
    ["{b}/local/bin", "{b}/gone1", "{b}/gone2"],
    ["{b}/local/bin", ""],
    ["{b}/local/bin", "{b}/gone1", "{b}/gone2", "{b}/gone3", ""],
    ["{b}/local/bin", "{b}/gone1"],
]

PATHS_SH = ('PATH=$(cat "$1/path"); export PATH; fmtjob < "$1/in.txt" > "$1/out.txt" && '
            'sort "$1/out.txt" | uniq -c > "$1/counts.txt"')


def _paths_setup(base: Path, run: int) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "fmtjob", WRAPPER, 0o755)
    _path_file(base, [*BEFORE[run], "{b}/opt/bin", "/usr/bin", "/bin"])


ENV_SH = 'env PATH="$(cat "$1/path")" fmtjob < "$1/in.txt" > "$1/out.txt"'

PROBE_SH = ('PATH="$1/local/bin:$1/opt/bin:/usr/bin:/bin"; '
            'if command -v fastsum > /dev/null 2>&1; then fastsum "$1/in.txt" > "$1/sum.txt"; '
            'else md5sum "$1/in.txt" > "$1/sum.txt"; fi')


def _probe_setup(base: Path, run: int) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    if run in (1, 3):
        write_file(base / "opt" / "bin" / "fastsum", '#!/bin/sh\nexec md5sum "$@"\n', 0o755)


HASH_SH = ('PATH="$1/local/bin:$1/tools/bin:$1/opt/bin:/usr/bin:/bin"; for part in a b c d; do '
           '[ -e "$1/rehash" ] && hash -r; fmtjob < "$1/in.txt" > "$1/out.$part"; done')


def _hash_setup(base: Path, run: int) -> None:
    _dirs(base, "local/bin", "tools/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "fmtjob", WRAPPER, 0o755)
    if run in (0, 2, 4):
        write_file(base / "rehash", "")


MAKEFILE_UPTODATE = ('out/report.txt: in.txt\n'
                     '\tmkdir -p out && sort in.txt > $@\n')


def _make_noise_setup(base: Path, run: int) -> None:
    import os

    write_file(base / "Makefile", MAKEFILE_UPTODATE)
    write_file(base / "in.txt", TEXT)
    if run in (1, 3):  # an earlier run's output, newer than its input (the input dated back: no clock skew)
        write_file(base / "out" / "report.txt", "".join(sorted(TEXT.splitlines(keepends=True))))
        st = (base / "out" / "report.txt").stat()
        os.utime(base / "in.txt", (st.st_atime - 120, st.st_mtime - 120))


WHICH_PY = r"""
import shutil, subprocess, sys
b = sys.argv[1]
path = open(b + "/path").read().strip()
tool = shutil.which("fmtjob", path=path)
if tool is None:
    sys.exit("fmtjob not found")
with open(b + "/in.txt") as i, open(b + "/out.txt", "w") as o:
    sys.exit(subprocess.run([tool], stdin=i, stdout=o).returncode)
"""


def _which_setup(base: Path, run: int) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "fmtjob", WRAPPER, 0o755)
    before = [e for e in BEFORE[run] if e]  # shutil.which with an empty entry: skipped here
    _path_file(base, [*before, "{b}/opt/bin", "/usr/bin", "/bin"])


PERL = ('my $b = shift; $ENV{PATH} = "$b/local/bin:$b/opt/bin:/usr/bin:/bin"; '
        'open(STDIN, "<", "$b/in.txt") or die; open(STDOUT, ">", "$b/out.txt") or die; '
        'system("fmtjob") == 0 or die "fmtjob: $?";')


def _perl_setup(base: Path, run: int) -> None:
    _dirs(base, "local/bin", "opt/bin")
    write_file(base / "in.txt", TEXT)
    write_file(base / "opt" / "bin" / "fmtjob", WRAPPER, 0o755)
    if run in (1, 3):  # an old copy without its execute bit, earlier in PATH: skipped
        write_file(base / "local" / "bin" / "fmtjob", WRAPPER, 0o644)


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYFIRST: list[NoAnomalyCase] = [
    _noise("t71_sh_path_with_missing_and_empty_entries", sh_argv(PATHS_SH), _paths_setup,
           "dash's stat walk: 1 to 5 ENOENT before B/opt/bin/fmtjob, another count each run"),
    _noise("t71_env_execvp_walks_other_path_lengths", sh_argv(ENV_SH), _paths_setup,
           "env's execvp: 1 to 5 execve ENOENT before the hit"),
    _noise("t71_sh_command_v_optional_tool_or_fallback", sh_argv(PROBE_SH), _probe_setup,
           "command -v fastsum: present in two runs (it runs), absent in three (md5sum instead)"),
    _noise("t71_sh_hash_cached_or_fresh_lookups", sh_argv(HASH_SH), _hash_setup,
           "fmtjob four times: one stat walk (hashed) or four (hash -r before each)"),
    _noise("t71_make_recipe_run_or_up_to_date", lambda b: ["/usr/bin/make", "-s", "-C", str(b)], _make_noise_setup,
           "make runs the recipe (target missing) in three runs, finds it up to date in two"),
    _noise("t71_python_which_over_other_path_lengths", lambda b: [*PY, "-c", WHICH_PY, str(b)], _which_setup,
           "shutil.which: 1 to 4 stat ENOENT before the hit, then one execve of the path found"),
    _noise("t71_perl_system_skips_a_non_executable_shadow", lambda b: ["/usr/bin/perl", "-e", PERL, str(b)],
           _perl_setup, "execvp's EACCES on an old 0644 copy earlier in PATH in two runs, then the tool"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the noexec mount is in the recorded run's own namespace, no helpers."""
