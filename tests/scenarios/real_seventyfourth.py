"""A seventy-fourth set of real programs: **temporary files and scratch directories** -- where programs
put their temporaries and what goes wrong there: a TMPDIR that is missing or unwritable, a scratch
file system read-only or out of inodes, a temporary file grown past ``ulimit -f``, a sticky
world-writable scratch directory holding another user's file (``fs.protected_regular``, the sticky
bit), and good runs whose temporaries legitimately differ (random names, TMPDIR set or not, how many
temporaries an input's size needs, leftovers of an earlier run cleaned or absent, a TMPDIR a shell
passes over for /tmp).

Fault cases (``REAL_SEVENTYFOURTH``): three good runs and the bad run, one fault each. What
``strace -f`` shows each bad run doing (coreutils 9.1, findutils 4.9, GNU sed 4.9, dash 0.5.12,
bash 5.2, python 3.11, util-linux 2.38, Linux 6.x), written down before the tool was run:

- ``grep -v '^#' log | tac`` with ``TMPDIR=BASE/tmp`` exported and BASE/tmp missing: tac reads a
  pipe, so it copies its input to a temporary first: ``openat(AT_FDCWD, ".../tmp/tacXXXXXX",
  O_RDWR|O_CREAT|O_EXCL, 0600) = -1 ENOENT``, "tac: failed to create temporary file in '.../tmp': No
  such file or directory", exit 1 (good runs: the same openat = 3, then ``unlink`` of it at once);
- ``shuf -n 5 -o scratch/pick.tmp`` as nobody, scratch/ root's sticky 1777, a pick.tmp left there by
  another user (uid 65533, mode 0666) and ``fs.protected_regular=1``: ``openat(AT_FDCWD,
  ".../scratch/pick.tmp", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EACCES``, "shuf: ...: Permission
  denied", exit 1 (good runs: no such file, the openat creates it);
- a job (sh, as nobody) whose EXIT trap cleans its scratch with ``find scratch -name 'job.*'
  -delete``, scratch/ sticky 1777 with a job.k3Xv9Q another user (uid 65533) left: find removes the
  job's own mktemp file (``unlinkat(5, "job.XXXXXX", 0) = 0``) and then ``unlinkat(5, "job.k3Xv9Q", 0)
  = -1 EPERM``, "find: cannot delete ...: Operation not permitted" (the sticky bit), find exits 1,
  the script's status stays 0;
- python3 creating a POSIX shared memory segment (``_posixshmem.shm_open``, what
  ``multiprocessing.shared_memory`` calls) under ``unshare -m`` with its own tmpfs on /dev/shm, in the
  bad run one whose inodes are used up (``nr_inodes=1``): ``openat(AT_FDCWD, "/dev/shm/t74-frames",
  O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = -1 ENOSPC``, "OSError: [Errno 28] No space left
  on device", exit 1 (good runs: = 3, ftruncate, mmap, the segment unlinked at the end);
- python3 keeping its intermediate data in an unnamed scratch file (``os.open(spool, O_WRONLY|
  O_TMPFILE)``, no fallback), spool/ a read-only tmpfs in the bad run: ``openat(AT_FDCWD, ".../spool",
  O_RDWR|O_CLOEXEC|O_TMPFILE, 0600) = -1 EROFS``, "OSError: [Errno 30] Read-only file system", exit 1;
- ``sed -i`` of a config under ``ulimit -f 256`` (dash: 512-byte blocks, 128 KiB) with SIGXFSZ
  ignored, the config grown to 700 kB: sed opens its temporary in the file's directory
  (``openat(.., ".../cfg/sedXXXXXX", O_RDWR|O_CREAT|O_EXCL, 0600) = 4``) and its write past the limit
  ``write(4, ..., 4096) = -1 EFBIG``, "sed: couldn't write 1 item to .../cfg/sedXXXXXX: File too
  large", the temporary unlinked, the config untouched, exit 4;
- ``csplit -f "$TMPDIR/chunk."`` as nobody with TMPDIR=BASE/tmp root's 0755 (good runs: 1777):
  ``openat(AT_FDCWD, ".../tmp/chunk.00", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EACCES``, "csplit:
  ...: Permission denied", exit 1;
- a job (sh, as nobody) writing its progress with ``echo STEP > scratch/progress`` before each step,
  scratch/ root's sticky 1777 holding a FIFO ``progress`` another user (uid 65533, mode 0666) left and
  ``fs.protected_fifos=1``: dash's ``openat(AT_FDCWD, ".../scratch/progress", O_WRONLY|O_CREAT|O_TRUNC,
  0666) = -1 EACCES``, "sh: 1: cannot create ...: Permission denied", exit 1, no step run (good runs:
  a regular file created and rewritten three times, three sorts).

Noise cases (``QUIET_SEVENTYFOURTH``): five good runs each, every run diffed against the other four;
same output and exit status every run. What varies between the runs (strace -f of each):

- ``mktemp`` (TMPDIR unset: /tmp/tmp.XXXXXXXXXX), sort into it, ``uniq -c`` out of it, removed by an
  EXIT trap: another random name each run (openat O_RDWR|O_CREAT|O_EXCL, openat O_WRONLY|O_CREAT|
  O_TRUNC, unlinkat of a name never seen before);
- ``tac`` of a pipe with TMPDIR exported as BASE/tmp in runs 0, 2, 4 and unset (``unset TMPDIR``
  from the job's env file) in runs 1 and 3: tac's temporary is BASE/tmp/tacXXXXXX or
  /tmp/tacXXXXXX;
- ``sort -S 64K -T BASE/tmp`` of 300, 1500, 4000, 800 and 2500 lines: 0, 3, 6, 2 and 4 temporaries
  (BASE/tmp/sortXXXXXX, each created, written, read back, unlinked);
- a job that starts with ``rm -f scratch/job.*`` (leftovers of an earlier run: 0, 2, 1, 0, 3 files
  of random names; with none dash passes the word as it is and rm -f's lookup of it fails ENOENT,
  silently) and then works in its own mktemp file;
- python3's ``tempfile``: ``TemporaryFile`` (``openat(dir, O_RDWR|O_EXCL|O_CLOEXEC|O_TMPFILE)``),
  ``NamedTemporaryFile`` and ``TemporaryDirectory`` in TMPDIR=BASE/tmp, each with a random name
  (gettempdir's own probe file too), all removed;
- ``sed -i`` over four files: four ``sedXXXXXX`` temporaries of random names renamed over the files;
- bash's here-document of 20000 lines (bigger than a pipe: bash writes it to a temporary) with
  TMPDIR a writable BASE/tmp in runs 0, 2, 4 and a read-only tmpfs in runs 1 and 3, where bash's
  ``faccessat2(.., ".../rotmp", W_OK, AT_EACCESS) = -1 EROFS`` makes it pass over TMPDIR and use
  /tmp/sh-thd.XXXXXX instead;
- python3 staging its output in a ``NamedTemporaryFile`` with TMPDIR a writable BASE/tmp in runs 0, 2,
  4 and a read-only tmpfs in runs 1 and 3, where ``gettempdir`` probes it --
  ``openat(.., ".../rotmp/XXXXXXXX", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = -1 EROFS``, a
  random name each time -- and goes on to /tmp (``/tmp/XXXXXXXX`` probed and unlinked, then
  /tmp/tmpXXXXXXXX.part).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, Scenario, sh_argv, unmount_under

OPENS = frozenset({"openat", "open", "creat"})
UNLINKS = frozenset({"unlinkat", "unlink"})
WRITES = frozenset({"write", "pwrite64", "writev"})
RUNS = 5  # noise cases: each run against the other four
OTHER_UID = 65533  # "another user": neither nobody (65534) nor the directory's owner (root)

PROTECTED_REGULAR = Path("/proc/sys/fs/protected_regular")
PROTECTED_FIFOS = Path("/proc/sys/fs/protected_fifos")
_SAVED_SYSCTLS: dict[Path, str] = {}  # a sysctl a case set -> its value before


def _set_sysctl(path: Path, value: str) -> None:
    _SAVED_SYSCTLS.setdefault(path, path.read_text().strip())
    path.write_text(value)


def restore_sysctl(_base: Path | None = None) -> None:
    """Put fs.protected_regular / fs.protected_fifos back as they were before a case changed them."""
    while _SAVED_SYSCTLS:
        path, value = _SAVED_SYSCTLS.popitem()
        with contextlib.suppress(OSError):
            path.write_text(value)


def _lines(n: int, tag: str) -> str:
    return "".join(f"{tag} {(k * 7919) % 1000:04d} line {k}\n" for k in range(n))


def _sticky(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)


def _foreign(path: Path, data: str, mode: int = 0o644) -> None:
    """A file another user (uid 65533) left."""
    write_file(path, data, mode)
    os.chown(path, OTHER_UID, OTHER_UID)


def _ro_tmpfs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0755", "tmpfs", str(path)], check=True)


# --- fault cases -------------------------------------------------------------------------------------------------------
TAC_SH = 'TMPDIR="$1/tmp"; export TMPDIR; grep -v "^#" "$1/app.log" | tac > "$1/out/newest-first.log"'

SHUF_SH = ('shuf -n 5 --random-source="$1/seed.bin" -o "$1/scratch/pick.tmp" "$1/hosts.txt" && '
           'sort "$1/scratch/pick.tmp" > "$1/out/pick.txt"')

CLEANUP_SH = ('scratch="$1/scratch"; trap \'find "$scratch" -name "job.*" -delete\' EXIT; '
              'tmp=$(mktemp "$scratch/job.XXXXXX") && sort -n "$1/in.txt" > "$tmp" && cp "$tmp" "$1/out/sorted.txt"')

SHM_PY = r"""
import mmap, os, sys, _posixshmem
name = "/t74-frames"
fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
try:
    os.ftruncate(fd, 256 << 10)
    m = mmap.mmap(fd, 256 << 10)
    m[:4096] = b"f" * 4096
    with open(sys.argv[1] + "/out.txt", "w") as f:
        f.write("%d\n" % m[:4096].count(b"f"))
    m.close()
finally:
    os.close(fd)
    _posixshmem.shm_unlink(name)
"""
# the namespace's own /dev/shm, with the options the setup wrote (the mount is private: gone with it)
SHM_SH = ('mount -t tmpfs -o "$(cat "$1/shm.opts")" tmpfs /dev/shm && '
          'exec /usr/bin/python3 -S -c "$2" "$1"')

TMPFILE_PY = r"""
import hashlib, os, sys
b = sys.argv[1]
fd = os.open(b + "/spool", os.O_RDWR | os.O_TMPFILE, 0o600)
with open(b + "/in/batch.txt", "rb") as src:
    for line in src:
        os.write(fd, line.upper())
os.lseek(fd, 0, os.SEEK_SET)
digest = hashlib.sha1(os.read(fd, 1 << 20)).hexdigest()
os.close(fd)
with open(b + "/out/digest.txt", "w") as f:
    f.write(digest + "\n")
"""

SED_ULIMIT_SH = 'trap "" XFSZ; ulimit -f 256; exec sed -i "s/value/VALUE/" "$1/cfg/app.conf"'

CSPLIT_SH = ('TMPDIR="$1/tmp"; csplit -s -z -f "$TMPDIR/chunk." "$1/sections.txt" "/^== /" "{*}" && '
             'wc -l "$TMPDIR"/chunk.* > "$1/out/counts.txt" && rm -f "$TMPDIR"/chunk.*')


PROGRESS_SH = ('for step in fetch build pack; do echo "$step" > "$1/scratch/progress" || exit 1; '
               'sort "$1/in/$step.txt" > "$1/out/$step.txt" || exit 1; done')


def _fifo_setup(base: Path, bad: bool) -> None:
    for step in ("fetch", "build", "pack"):
        write_file(base / "in" / f"{step}.txt", _lines(40, step))
    _sticky(base / "scratch")
    (base / "out").mkdir()
    (base / "out").chmod(0o777)
    if bad:  # another user's FIFO where the job keeps its progress file, and the kernel's guard for it on
        os.mkfifo(base / "scratch" / "progress", 0o666)
        (base / "scratch" / "progress").chmod(0o666)
        os.chown(base / "scratch" / "progress", OTHER_UID, OTHER_UID)
        _set_sysctl(PROTECTED_FIFOS, "1")


def _tac_setup(base: Path, bad: bool) -> None:
    write_file(base / "app.log", "# header\n" + _lines(3000, "event"))
    (base / "out").mkdir()
    if not bad:
        (base / "tmp").mkdir()


def _shuf_setup(base: Path, bad: bool) -> None:
    write_file(base / "hosts.txt", "".join(f"node{k:03d}\n" for k in range(60)))
    write_file(base / "seed.bin", bytes(range(256)) * 16)
    _sticky(base / "scratch")
    (base / "out").mkdir()
    (base / "out").chmod(0o777)
    if bad:  # another user's leftover in the sticky scratch, and the kernel's guard for it on
        _foreign(base / "scratch" / "pick.tmp", "node999\n", 0o666)
        _set_sysctl(PROTECTED_REGULAR, "1")


def _cleanup_setup(base: Path, bad: bool) -> None:
    write_file(base / "in.txt", "".join(f"{(k * 7919) % 1009}\n" for k in range(200)))
    _sticky(base / "scratch")
    (base / "out").mkdir()
    (base / "out").chmod(0o777)
    if bad:
        _foreign(base / "scratch" / "job.k3Xv9Q", "stale\n", 0o600)


def _shm_setup(base: Path, bad: bool) -> None:
    write_file(base / "shm.opts", "size=1m,nr_inodes=1,mode=1777\n" if bad else "size=1m,mode=1777\n")


def _tmpfile_setup(base: Path, bad: bool) -> None:
    write_file(base / "in" / "batch.txt", _lines(400, "batch"))
    (base / "out").mkdir()
    if bad:
        _ro_tmpfs(base / "spool")
    else:
        (base / "spool").mkdir()


def _sed_ulimit_setup(base: Path, bad: bool) -> None:
    n = 30000 if bad else 1500  # 700 kB, or 35 kB (the limit is 128 KiB)
    write_file(base / "cfg" / "app.conf", "".join(f"key{k:05d} = value {k * 7}\n" for k in range(n)))


def _csplit_setup(base: Path, bad: bool) -> None:
    write_file(base / "sections.txt",
               "".join(f"== part {i}\n" + "".join(f"row {i}.{k}\n" for k in range(20)) for i in range(4)))
    (base / "tmp").mkdir()
    (base / "tmp").chmod(0o755 if bad else 0o1777)
    (base / "out").mkdir()
    (base / "out").chmod(0o777)


def _teardown(base: Path | None = None) -> None:
    restore_sysctl()
    if base is not None and base.exists():
        unmount_under(base)


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description=""):
    """`extra["comm"]`: the process strace shows making the failing call (the program's first word)."""
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=_teardown,
                    unprivileged=unprivileged, description=description, extra={"comm": program.split()[0]})


REAL_SEVENTYFOURTH: list[Scenario] = [
    _sc("t74_tac_of_a_pipe_tmpdir_missing", "tac (of a pipe, TMPDIR exported to a missing directory)",
        sh_argv(TAC_SH), _tac_setup, OPENS, "ENOENT", lambda b: f"{b}/tmp/tac*",
        description="tac copies a pipe to a temporary in TMPDIR first: the directory is not there"),
    _sc("t74_shuf_output_in_sticky_scratch_protected_regular", "shuf (-o into a sticky scratch dir; as nobody)",
        sh_argv(SHUF_SH), _shuf_setup, OPENS, "EACCES", lambda b: f"{b}/scratch/pick.tmp", unprivileged=True,
        description="another user's pick.tmp in the sticky scratch, fs.protected_regular=1: O_CREAT refused"),
    _sc("t74_find_delete_cleanup_trap_other_users_leftover", "find (-delete in a job's EXIT trap; as nobody)",
        sh_argv(CLEANUP_SH), _cleanup_setup, UNLINKS, "EPERM", lambda b: "*job.k3Xv9Q", unprivileged=True,
        description="the cleanup trap's find -delete meets another user's job.* in the sticky scratch"),
    _sc("t74_python_shm_open_dev_shm_out_of_inodes", "python3 (shm_open under unshare -m, /dev/shm out of inodes)",
        lambda b: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", SHM_SH, "sh", str(b), SHM_PY], _shm_setup, OPENS,
        "ENOSPC", lambda b: "/dev/shm/t74-frames",
        description="the shared memory segment cannot be created: /dev/shm's tmpfs has no inode left"),
    _sc("t74_python_o_tmpfile_scratch_on_readonly_fs", "python3 (os.open(spool, O_TMPFILE), spool read-only)",
        lambda b: [*PY, "-c", TMPFILE_PY, str(b)], _tmpfile_setup, OPENS, "EROFS", lambda b: f"{b}/spool",
        description="an unnamed scratch file in a spool directory that is a read-only mount"),
    _sc("t74_sed_inplace_temp_file_past_ulimit_f", "sed (-i under ulimit -f, SIGXFSZ ignored)",
        sh_argv(SED_ULIMIT_SH), _sed_ulimit_setup, WRITES, "EFBIG", lambda b: f"{b}/cfg/sed*",
        description="sed -i's temporary grows past RLIMIT_FSIZE: write EFBIG, the config untouched"),
    _sc("t74_csplit_chunks_in_unwritable_tmpdir", "csplit (-f $TMPDIR/chunk.; as nobody)",
        sh_argv(CSPLIT_SH), _csplit_setup, OPENS, "EACCES", lambda b: f"{b}/tmp/chunk.00", unprivileged=True,
        description="TMPDIR recreated root's 0755: csplit cannot create its first chunk there"),
    _sc("t74_sh_progress_file_is_other_users_fifo_protected_fifos", "sh (> into a sticky scratch; as nobody)",
        sh_argv(PROGRESS_SH), _fifo_setup, OPENS, "EACCES", lambda b: f"{b}/scratch/progress", unprivileged=True,
        description="another user's FIFO where the job writes its progress, fs.protected_fifos=1: O_CREAT refused"),
]


# --- good runs whose temporaries differ --------------------------------------------------------------------------------
MKTEMP_SH = ('tmp=$(mktemp) || exit 1; trap \'rm -f "$tmp"\' EXIT; sort "$1/words.txt" > "$tmp" && '
             'uniq -c "$tmp" > "$1/out.txt"')

TAC_ENV_SH = '. "$1/env"; grep -v "^#" "$1/app.log" | tac > "$1/newest-first.log"'

SORT_SPILL_SH = 'exec sort -S 64K -T "$1/tmp" -o "$1/sorted.txt" "$1/in.txt"'
SORT_SIZES = (300, 1500, 4000, 800, 2500)

LEFTOVER_SH = ('rm -f "$1"/scratch/job.*; tmp=$(mktemp "$1/scratch/job.XXXXXX") || exit 1; '
               'sort -r "$1/in.txt" > "$tmp" && head -n 20 "$tmp" > "$1/top.txt"; rm -f "$tmp"')
LEFTOVERS = (0, 2, 1, 0, 3)

TEMPFILE_PY = r"""
import os, sys, tempfile
b = sys.argv[1]
with open(b + "/in.txt") as f:
    rows = f.read().splitlines()
with tempfile.TemporaryFile("w+") as t:
    t.write("\n".join(sorted(rows)))
    t.seek(0)
    ordered = t.read().splitlines()
with tempfile.TemporaryDirectory(prefix="job-") as d:
    with tempfile.NamedTemporaryFile("w", dir=d, suffix=".part", delete=False) as n:
        n.write("\n".join(reversed(ordered)) + "\n")
    os.replace(n.name, os.path.join(d, "final.txt"))
    with open(os.path.join(d, "final.txt")) as f, open(b + "/out.txt", "w") as out:
        out.write(f.read())
"""
TEMPFILE_SH = 'TMPDIR="$1/tmp"; export TMPDIR; exec /usr/bin/python3 -S -c "$2" "$1"'

SED_MANY_SH = 'exec sed -i -e "s/line/LINE/" "$1"/conf/a.conf "$1"/conf/b.conf "$1"/conf/c.conf "$1"/conf/d.conf'

HEREDOC_BASH = ('. "$1/env"; cat <<EOF > "$1/here.out"\n'
                '$(seq 1 20000)\n'
                'EOF\n'
                'wc -l < "$1/here.out" > "$1/count.txt"')


def _mktemp_setup(base: Path, run: int) -> None:
    write_file(base / "words.txt", "".join(f"w{(k * 31) % 17}\n" for k in range(300)))


def _tac_env_setup(base: Path, run: int) -> None:
    write_file(base / "app.log", "# header\n" + _lines(2000, "event"))
    (base / "tmp").mkdir()
    write_file(base / "env", f'TMPDIR="{base}/tmp"; export TMPDIR\n' if run % 2 == 0 else "unset TMPDIR\n")


def _sort_spill_setup(base: Path, run: int) -> None:
    write_file(base / "in.txt", "".join(f"rec {(k * 7919) % 1000003:07d} {'x' * 20}\n"
                                        for k in range(SORT_SIZES[run % len(SORT_SIZES)])))
    (base / "tmp").mkdir()


def _leftover_setup(base: Path, run: int) -> None:
    write_file(base / "in.txt", _lines(200, "row"))
    (base / "scratch").mkdir()
    for _ in range(LEFTOVERS[run % len(LEFTOVERS)]):
        write_file(base / "scratch" / f"job.{os.urandom(3).hex()}", "left over\n", 0o600)


def _tempfile_setup(base: Path, run: int) -> None:
    write_file(base / "in.txt", _lines(300, "item"))
    (base / "tmp").mkdir()


def _sed_many_setup(base: Path, run: int) -> None:
    for n in "abcd":
        write_file(base / "conf" / f"{n}.conf", _lines(50, n))


def _heredoc_setup(base: Path, run: int) -> None:
    (base / "tmp").mkdir()
    if run % 2:
        _ro_tmpfs(base / "rotmp")
    write_file(base / "env", f'TMPDIR="{base}/{"rotmp" if run % 2 else "tmp"}"; export TMPDIR\n')


STAGE_PY = r"""
import shutil, sys, tempfile
b = sys.argv[1]
with open(b + "/in.txt") as f:
    rows = sorted(f.read().splitlines())
with tempfile.NamedTemporaryFile("w", suffix=".part") as t:
    t.write("\n".join(rows) + "\n")
    t.flush()
    shutil.copyfile(t.name, b + "/out.txt")
"""
STAGE_SH = '. "$1/env"; exec /usr/bin/python3 -S -c "$2" "$1"'


def _stage_setup(base: Path, run: int) -> None:
    write_file(base / "in.txt", _lines(300, "item"))
    (base / "tmp").mkdir()
    if run % 2:
        _ro_tmpfs(base / "rotmp")
    write_file(base / "env", f'TMPDIR="{base}/{"rotmp" if run % 2 else "tmp"}"; export TMPDIR\n')


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYFOURTH: list[NoAnomalyCase] = [
    _noise("t74_mktemp_random_name_each_run", sh_argv(MKTEMP_SH), _mktemp_setup,
           "mktemp in /tmp, sort into it, uniq -c out of it, an EXIT trap removes it: a new name each run"),
    _noise("t74_tac_tmpdir_set_in_some_runs_unset_in_others", sh_argv(TAC_ENV_SH), _tac_env_setup,
           "tac's temporary in BASE/tmp (TMPDIR exported) or in /tmp (TMPDIR unset)"),
    _noise("t74_sort_spills_more_temp_files_for_larger_input", sh_argv(SORT_SPILL_SH), _sort_spill_setup,
           "sort -S 64K -T: 0 to 6 temporaries, as many as the input's size needs"),
    _noise("t74_leftover_temp_files_cleaned_or_absent", sh_argv(LEFTOVER_SH), _leftover_setup,
           "rm -f scratch/job.* at the start: 0 to 3 leftovers of an earlier run removed, or none there"),
    _noise("t74_python_tempfile_random_names", sh_argv(TEMPFILE_SH, TEMPFILE_PY), _tempfile_setup,
           "TemporaryFile (O_TMPFILE), TemporaryDirectory, NamedTemporaryFile: random names each run"),
    _noise("t74_sed_inplace_random_temp_names", sh_argv(SED_MANY_SH), _sed_many_setup,
           "sed -i over four files: four sedXXXXXX temporaries renamed over them, random names"),
    _noise("t74_bash_heredoc_passes_over_readonly_tmpdir", lambda b: ["/bin/bash", "-c", HEREDOC_BASH, "bash", str(b)],
           _heredoc_setup, "bash's here-document temporary in TMPDIR, or in /tmp when TMPDIR is read-only"),
    _noise("t74_python_tempfile_passes_over_readonly_tmpdir", sh_argv(STAGE_SH, STAGE_PY), _stage_setup,
           "python's gettempdir probes a read-only TMPDIR (its test file refused EROFS) and uses /tmp"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: fs.protected_regular and fs.protected_fifos are put back (the mounts go with the case's
    directory, which the harness unmounts before it removes it)."""
    restore_sysctl()
