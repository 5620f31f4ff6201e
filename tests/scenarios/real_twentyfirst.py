"""A twenty-first set of real programs with one real fault each: the workflow tools a job's
script runs around the job itself, as installed on this Debian machine -- version control,
a local database, archivers and compressors, locks, installers, text tools, digests -- each
meeting an ordinary fault of its own kind of file:

- **git**: ``git add`` in a work tree whose ``.git`` an administrator froze (``chattr +i``):
  the index lock cannot be created (openat EPERM, not EEXIST or EACCES); ``git status`` where a
  deploy replaced a tracked directory by a file (lstat ENOTDIR of its entries, soft: git lists
  them deleted and exits 0); ``git commit`` whose pre-commit hook (git's child sh) redirects its
  report onto a path that is a directory (openat EISDIR; the hook fails, git aborts);
- **sqlite3**: an insert into a database next to which a stale *directory* named like its
  rollback journal was left (a sync tool's artefact): sqlite sees a hot journal, opens it,
  and its read fails (pread64 EISDIR);
- **archives**: ``tar -xf`` of a release whose one member has a 300-byte name component
  (openat ENAMETOOLONG, the other members extracted), or whose hard-link member's target the
  build dropped (linkat ENOENT); ``unzip -d`` onto a read-only mount (mkdir EROFS); ``zip``
  writing its archive (through its temp name) onto a mount another writer filled (write ENOSPC);
- **compressors**: ``gzip -k`` of a log on a full mount (write ENOSPC); ``zstd -D`` whose
  trained dictionary is missing (newfstatat ENOENT: zstd stats it and never opens it);
  ``zstd --rm`` of another account's log in a sticky spool (the .zst written, the owner's copy
  refused with two ignored chown EPERMs, then unlink EPERM, which zstd reports); ``lz4`` writing
  into a directory the job's account cannot write (openat EACCES);
- **locks and installers**: ``flock -n`` whose lock lives in a runtime directory nobody
  created (openat ENOENT); ``install -d`` over a path a previous release left as a file (mkdir
  EEXIST);
- **text tools**: ``sort -o`` onto a read-only mount (openat EROFS); ``find -delete`` cleaning a
  cache remounted read-only (unlinkat EROFS); ``split`` whose chunk directory is a file (openat
  ENOTDIR);
- **digests**: ``openssl dgst -out`` where a directory stands at the output's name (openat
  EISDIR).

Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what
``strace -f`` shows a person looking for the fault, decided before the differ ran (one was
corrected after strace, not the differ, showed it: zstd -D stats its dictionary, so the miss
is newfstatat, not openat). Case names start with ``wf_`` (no earlier set's do).

The good-vs-good cases (`QUIET_TWENTYFIRST`) carry the noise of these tools: git's object
fan-out and pack temp names (content differing run to run), sed -i's random temp names,
zstd's compression threads over inputs of varying size, zip's temp archive when updating,
python's bytecode cache cold in some runs and warm in others, and git status refreshing and
writing back its index in some runs only.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

from .catalog import fill_up, mount_tmpfs, umount, write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
NOBODY_UID = 65534


def _sh(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


def _lines(n: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    return "".join(f"{rng.randrange(10**6):06d} host{rng.randrange(50):02d} level={rng.choice('IWE')}\n"
                   for _ in range(n))


def _owned_by_nobody(path: Path) -> None:
    os.chown(path, NOBODY_UID, NOBODY_UID)


# --- git ------------------------------------------------------------------------------------
GIT = "/usr/bin/git"


def _repo(base: Path, files: int = 12, seed: int = 3) -> Path:
    repo = base / "repo"
    repo.mkdir()
    _sh(GIT, "init", "-q", str(repo))
    _sh(GIT, "-C", str(repo), "config", "user.name", "job")
    _sh(GIT, "-C", str(repo), "config", "user.email", "job@localhost")
    _sh(GIT, "-C", str(repo), "config", "gc.auto", "0")
    rng = random.Random(seed)
    for i in range(files):
        write(repo / f"src{i:02d}.txt", "".join(f"{rng.random()}\n" for _ in range(40)))
    return repo


def _commit_all(repo: Path) -> None:
    _sh(GIT, "-C", str(repo), "add", "-A")
    _sh(GIT, "-C", str(repo), "commit", "-q", "-m", "release")


def git_tracked_dir_now_file(base: Path, bad: bool) -> None:
    repo = _repo(base)
    (repo / "docs").mkdir()
    for name in ("README", "INSTALL", "CHANGES"):
        write(repo / "docs" / name, f"{name}\n" * 20)
    _commit_all(repo)
    if bad:  # a deploy script replaced the tracked docs/ directory with a generated file
        for p in (repo / "docs").iterdir():
            p.unlink()
        (repo / "docs").rmdir()
        write(repo / "docs", "see https://localhost/docs\n")


def _git_status(b: Path) -> list[str]:
    return [GIT, "-C", f"{b}/repo", "status", "--porcelain"]


PRE_COMMIT = "#!/bin/sh\n# count the lines of every staged file into a report the CI uploads\n" \
             "git diff --cached --name-only | xargs wc -l > .git/lint-report\n"


def git_hook_report_is_directory(base: Path, bad: bool) -> None:
    repo = _repo(base)
    _commit_all(repo)
    write(repo / ".git" / "hooks" / "pre-commit", PRE_COMMIT, 0o755)
    if bad:  # an older hook version kept its reports in a directory of that name
        (repo / ".git" / "lint-report").mkdir()
    write(repo / "src00.txt", "changed\n" * 10)


def _git_commit(b: Path) -> list[str]:
    return [GIT, "-C", f"{b}/repo", "commit", "-q", "-a", "-m", "job output"]


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["/usr/bin/chattr", flag, str(path)], capture_output=True)


def git_dot_git_immutable(base: Path, bad: bool) -> None:
    repo = _repo(base)
    if bad:  # an administrator froze the repository after an incident
        _chattr("+i", repo / ".git")


def _unfreeze(base: Path) -> None:
    _chattr("-i", base / "repo" / ".git")


def _git_add(b: Path) -> list[str]:
    return [GIT, "-C", f"{b}/repo", "add", "-A"]


# --- sqlite3 --------------------------------------------------------------------------------
SQLITE = "/usr/bin/sqlite3"


def sqlite_journal_is_directory(base: Path, bad: bool) -> None:
    db = base / "jobs.db"
    _sh(SQLITE, str(db), "create table runs(id integer primary key, host text, status text);"
        + "".join(f"insert into runs(host, status) values('host{i:02d}', 'ok');" for i in range(40)))
    if bad:  # a sync tool left a directory where sqlite keeps its rollback journal
        (base / "jobs.db-journal").mkdir()


def _sqlite_insert(b: Path) -> list[str]:
    return [SQLITE, f"{b}/jobs.db", "insert into runs(host, status) values('host99', 'queued');"
            "select count(*) from runs;"]


# --- archives -------------------------------------------------------------------------------
def _release_tar(path: Path, long_name: bool) -> None:
    """A release tarball built elsewhere (python's tarfile, PAX headers): one member's name
    component is 300 bytes long on the bad host's build, longer than any Linux file system takes."""
    middle = ("generated_" + "x" * 290 + ".txt") if long_name else "generated.txt"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in ["pkg/README", "pkg/lib/core.py", f"pkg/lib/{middle}", "pkg/lib/util.py", "pkg/VERSION"]:
            data = f"{name}\n".encode() * 50
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))


def tar_member_name_too_long(base: Path, bad: bool) -> None:
    _release_tar(base / "release.tar", bad)
    (base / "dest").mkdir()


def _hardlink_tar(path: Path, with_target: bool) -> None:
    """A tarball made with a filter that dropped one member on the bad host's build: a later
    member is a hard link to it (tar records a second link as a link to the first name)."""
    with tarfile.open(path, "w") as tar:
        for name in ["pkg/bin/tool", "pkg/share/data.txt"]:
            if name == "pkg/bin/tool" and not with_target:
                continue
            data = f"{name}\n".encode() * 80
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("pkg/bin/tool-compat")
        link.type = tarfile.LNKTYPE
        link.linkname = "pkg/bin/tool"
        tar.addfile(link)
        data = b"1.0\n"
        info = tarfile.TarInfo("pkg/VERSION")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def tar_hardlink_target_missing(base: Path, bad: bool) -> None:
    _hardlink_tar(base / "release.tar", not bad)
    (base / "dest").mkdir()


def _tar_x(b: Path) -> list[str]:
    return ["/usr/bin/tar", "-xf", f"{b}/release.tar", "-C", f"{b}/dest"]


def _bundle_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(6):
            z.writestr(f"bundle/part{i}.txt", _lines(200, seed=i))


def unzip_target_readonly(base: Path, bad: bool) -> None:
    _bundle_zip(base / "bundle.zip")
    mount_tmpfs(base / "mnt", "2m", readonly=bad)


def _unzip(b: Path) -> list[str]:
    return ["/usr/bin/unzip", "-q", f"{b}/bundle.zip", "-d", f"{b}/mnt"]


def _out_dir(base: Path, bad: bool) -> None:
    """src/ with five logs; out/ the job's account's own, except on the bad host, where the
    deploy recreated it as root's (0755)."""
    src = base / "src"
    src.mkdir()
    for i in range(5):
        write(src / f"part{i}.log", _lines(300, seed=i))
    out = base / "out"
    out.mkdir()
    if not bad:
        _owned_by_nobody(out)


def zip_mount_full(base: Path, bad: bool) -> None:
    src = base / "src"
    src.mkdir()
    for i in range(5):  # hex: the archive needs about half the logs' 400 KB
        write(src / f"part{i}.log", "".join(f"{random.Random(i * 10**5 + j).getrandbits(64):016x}\n"
                                            for j in range(5000)))
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        fill_up(base / "mnt")


def _zip(b: Path) -> list[str]:
    return ["/usr/bin/zip", "-q", "-j", f"{b}/mnt/logs.zip", *(f"{b}/src/part{i}.log" for i in range(5))]


def _lz4(b: Path) -> list[str]:
    return ["/usr/bin/lz4", "-q", "-f", f"{b}/src/part3.log", f"{b}/out/part3.log.lz4"]


# --- compressors ----------------------------------------------------------------------------
def gzip_mount_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "2m")
    # incompressible enough that the .gz needs most of the log's size again
    write(base / "mnt" / "app.log", "".join(f"{random.Random(i).getrandbits(64):016x}\n" for i in range(40000)))
    if bad:  # another writer filled the mount
        fill_up(base / "mnt")


def _gzip(b: Path) -> list[str]:
    return ["/usr/bin/gzip", "-k", f"{b}/mnt/app.log"]


def zstd_dictionary_missing(base: Path, bad: bool) -> None:
    _inputs_plain(base)
    (base / "conf").mkdir()
    if not bad:  # the trained dictionary, shipped with the job's config
        samples = base / "samples"
        samples.mkdir()
        for i in range(40):
            write(samples / f"s{i:02d}.log", _lines(30, seed=100 + i))
        _sh("/usr/bin/zstd", "-q", "--train", *sorted(str(p) for p in samples.iterdir()),
            "--maxdict=4096", "-o", str(base / "conf" / "logs.dict"))


def _inputs_plain(base: Path) -> None:
    (base / "src").mkdir()
    (base / "out").mkdir()
    write(base / "src" / "part0.log", _lines(400))


def _zstd_d(b: Path) -> list[str]:
    return ["/usr/bin/zstd", "-q", "-f", "-D", f"{b}/conf/logs.dict", f"{b}/src/part0.log", "-o",
            f"{b}/out/part0.log.zst"]


def zstd_rm_foreign_source(base: Path, bad: bool) -> None:
    spool = base / "spool"
    spool.mkdir()
    spool.chmod(0o1777)  # a shared spool, sticky like /tmp
    log = write(spool / "service.log", _lines(3000))
    if not bad:  # the job's account's own log; on the bad host another service wrote it
        _owned_by_nobody(log)


def _zstd_rm(b: Path) -> list[str]:
    return ["/usr/bin/zstd", "-q", "--rm", f"{b}/spool/service.log"]


# --- locks and installers -------------------------------------------------------------------
def flock_runtime_dir_missing(base: Path, bad: bool) -> None:
    _inputs_plain(base)
    if not bad:  # tmpfiles.d creates run/ at boot; not on the bad host
        (base / "run").mkdir()


def _flock(b: Path) -> list[str]:
    return ["/usr/bin/flock", "-n", f"{b}/run/job.lock", "/usr/bin/sort", "-o", f"{b}/out/sorted.log",
            f"{b}/src/part0.log"]


def install_d_over_file(base: Path, bad: bool) -> None:
    stage = base / "stage"
    stage.mkdir()
    (stage / "bin").mkdir()
    if bad:  # the previous release shipped lib as a single file
        write(stage / "lib", "#!/bin/sh\n")


def _install_d(b: Path) -> list[str]:
    return ["/usr/bin/install", "-d", "-m", "0755", f"{b}/stage/bin", f"{b}/stage/lib", f"{b}/stage/share/doc"]


# --- text tools -----------------------------------------------------------------------------
def sort_output_readonly(base: Path, bad: bool) -> None:
    _inputs_plain(base)
    mount_tmpfs(base / "mnt", "1m", readonly=bad)


def _sort_o(b: Path) -> list[str]:
    return ["/usr/bin/sort", "-k2,2", "-o", f"{b}/mnt/sorted.log", f"{b}/src/part0.log"]


def find_delete_readonly(base: Path, bad: bool) -> None:
    mnt = base / "mnt"
    mount_tmpfs(mnt, "1m")
    for d in ("a", "b"):
        (mnt / d).mkdir()
        for i in range(4):
            write(mnt / d / f"obj{i}.tmp", "stale\n")
            write(mnt / d / f"obj{i}.keep", "keep\n")
    if bad:  # the cache was remounted read-only after an fsck warning
        _sh("mount", "-o", "remount,ro", str(mnt))


def _find_delete(b: Path) -> list[str]:
    return ["/usr/bin/find", f"{b}/mnt", "-name", "*.tmp", "-delete"]


def split_chunks_dir_is_file(base: Path, bad: bool) -> None:
    write(base / "export.csv", _lines(12000))  # ~300 KB
    if bad:  # the previous run's download was saved as "chunks", where split's directory should be
        write(base / "chunks", "partial download\n")
    else:
        (base / "chunks").mkdir()


def _split(b: Path) -> list[str]:
    return ["/usr/bin/split", "-b", "64k", f"{b}/export.csv", f"{b}/chunks/chunk-"]


def openssl_out_is_directory(base: Path, bad: bool) -> None:
    _inputs_plain(base)
    if bad:  # a packaging step made digest.txt a directory
        (base / "out" / "digest.txt").mkdir()


def _openssl_dgst(b: Path) -> list[str]:
    return ["/usr/bin/openssl", "dgst", "-sha256", "-out", f"{b}/out/digest.txt", f"{b}/src/part0.log"]


def _umount_mnt(base: Path) -> None:
    umount(base / "mnt")


REAL_TWENTYFIRST: list[Scenario] = [
    Scenario("wf_git_add_dot_git_immutable", "git add -A", _git_add, git_dot_git_immutable,
             frozenset({"openat", "open"}), "EPERM", lambda b: f"{b}/repo/.git/index.lock", teardown=_unfreeze,
             description="git add in a repository whose .git is immutable: the index lock is refused EPERM"),
    Scenario("wf_git_status_tracked_dir_now_file", "git status --porcelain", _git_status,
             git_tracked_dir_now_file, frozenset({"newfstatat", "lstat", "statx", "fstatat"}), "ENOTDIR",
             lambda b: f"{b}/repo/docs/*",
             description="git status where a tracked directory was replaced by a file: lstat of its "
                         "entries fails ENOTDIR, git reports them deleted (exit 0)"),
    Scenario("wf_git_commit_hook_report_is_directory", "git commit -a (pre-commit hook: sh, xargs wc)",
             _git_commit, git_hook_report_is_directory, frozenset({"openat", "open"}), "EISDIR",
             lambda b: f"{b}/repo/.git/lint-report",
             description="git's pre-commit hook (its child sh) redirects to a path that is a directory; "
                         "the hook fails and git aborts the commit"),
    Scenario("wf_tar_hardlink_target_missing", "tar -xf release.tar -C dest (hard link member)", _tar_x,
             tar_hardlink_target_missing, frozenset({"linkat", "link"}), "ENOENT", lambda b: f"{b}/dest/pkg/bin/tool*",
             description="a tarball's hard-link member whose target member the build dropped"),
    Scenario("wf_zstd_rm_foreign_log_sticky_spool", "zstd -q --rm (as the job)", _zstd_rm, zstd_rm_foreign_source,
             frozenset({"unlink", "unlinkat"}), "EPERM", lambda b: f"{b}/spool/service.log", unprivileged=True,
             description="zstd --rm compresses a log in a sticky spool, then may not remove another "
                         "account's original: unlink EPERM after the work (its chown EPERMs are ignored)"),
    Scenario("wf_sqlite_journal_is_directory", "sqlite3 jobs.db insert", _sqlite_insert,
             sqlite_journal_is_directory, frozenset({"pread64", "read"}), "EISDIR",
             lambda b: f"{b}/jobs.db-journal",
             description="a directory at the database's rollback journal name: sqlite's hot-journal read "
                         "fails EISDIR"),
    Scenario("wf_tar_member_name_too_long", "tar -xf release.tar -C dest", _tar_x, tar_member_name_too_long,
             frozenset({"openat", "open"}), "ENAMETOOLONG", lambda b: f"{b}/dest/pkg/lib/generated_x*.txt",
             description="one member of a release tarball has a 300-byte name component"),
    Scenario("wf_unzip_target_readonly", "unzip -q bundle.zip -d mnt", _unzip, unzip_target_readonly,
             frozenset({"mkdir", "mkdirat", "openat", "open"}), "EROFS", lambda b: f"{b}/mnt/bundle*",
             teardown=_umount_mnt, description="unzip extracting onto a read-only mount"),
    Scenario("wf_zip_mount_full", "zip -q -j mnt/logs.zip", _zip, zip_mount_full,
             frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/*", teardown=_umount_mnt,
             description="zip writing its archive onto a mount another writer filled"),
    Scenario("wf_lz4_out_dir_unwritable", "lz4 -q -f (as the job)", _lz4, _out_dir,
             frozenset({"openat", "open"}), "EACCES", lambda b: f"{b}/out/part3.log.lz4", unprivileged=True,
             description="lz4 writing its frame into a directory the job's account cannot write"),
    Scenario("wf_gzip_keep_mount_full", "gzip -k app.log", _gzip, gzip_mount_full,
             frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/app.log.gz", teardown=_umount_mnt,
             description="gzip -k writing its .gz beside the log on a mount another writer filled"),
    # zstd only stats the dictionary before it opens it (strace: newfstatat ENOENT, no openat)
    Scenario("wf_zstd_dictionary_missing", "zstd -D logs.dict", _zstd_d, zstd_dictionary_missing,
             frozenset({"newfstatat", "stat", "statx", "fstatat"}), "ENOENT", lambda b: f"{b}/conf/logs.dict",
             description="zstd compressing with a trained dictionary the bad host's config lacks"),
    Scenario("wf_flock_runtime_dir_missing", "flock -n run/job.lock sort", _flock, flock_runtime_dir_missing,
             frozenset({"openat", "open"}), "ENOENT", lambda b: f"{b}/run/job.lock",
             description="flock(1) -n whose lock file's runtime directory was never created"),
    Scenario("wf_install_d_over_file", "install -d -m 0755 stage/{bin,lib,share/doc}", _install_d,
             install_d_over_file, frozenset({"mkdir", "mkdirat"}), "EEXIST", lambda b: f"{b}/stage/lib",
             description="install -d of a directory where the previous release left a file"),
    Scenario("wf_sort_output_readonly_mount", "sort -k2,2 -o mnt/sorted.log", _sort_o, sort_output_readonly,
             frozenset({"openat", "open"}), "EROFS", lambda b: f"{b}/mnt/sorted.log", teardown=_umount_mnt,
             description="sort -o onto a read-only mount"),
    Scenario("wf_find_delete_readonly_cache", "find mnt -name '*.tmp' -delete", _find_delete,
             find_delete_readonly, frozenset({"unlinkat", "unlink"}), "EROFS", lambda b: f"{b}/mnt/*/obj*.tmp",
             teardown=_umount_mnt, description="find -delete cleaning a cache remounted read-only"),
    Scenario("wf_split_chunks_dir_is_file", "split -b 64k export.csv chunks/chunk-", _split,
             split_chunks_dir_is_file, frozenset({"openat", "open"}), "ENOTDIR", lambda b: f"{b}/chunks/chunk-*",
             description="split writing its chunks under a path that is a file, not a directory"),
    Scenario("wf_openssl_dgst_out_is_directory", "openssl dgst -sha256 -out out/digest.txt",
             _openssl_dgst, openssl_out_is_directory, frozenset({"openat", "open"}), "EISDIR",
             lambda b: f"{b}/out/digest.txt",
             description="openssl dgst -out where a directory stands at the output's name"),
]


# --- good-vs-good noise -----------------------------------------------------------------------
def _git_commit_fanout(base: Path, run: int) -> None:
    _repo(base, files=30, seed=random.randrange(10**9))  # content, so object names, differ each run
    write(base / "commit.sh", f"cd {base}/repo\ngit add -A\ngit commit -q -m 'job output'\ngit gc -q --prune=now\n")


def _sh_argv(script: str):
    def argv(b: Path) -> list[str]:
        return ["/bin/sh", f"{b}/{script}"]
    return argv


def _sed_temp_names(base: Path, run: int) -> None:
    src = base / "src"
    src.mkdir()
    for i in range(6):
        write(src / f"conf{i}.ini", "".join(f"key{j} = value{j}\n" for j in range(50)))


def _sed_i(b: Path) -> list[str]:
    return ["/usr/bin/sed", "-i", "s/value/v/", *(f"{b}/src/conf{i}.ini" for i in range(6))]


def _zstd_threads(base: Path, run: int) -> None:
    (base / "out").mkdir()
    rng = random.Random()
    write(base / "data.log", _lines(rng.randint(60000, 160000), seed=rng.randrange(1000)))


def _zstd_t2(b: Path) -> list[str]:
    return ["/usr/bin/zstd", "-q", "-T2", "-3", "-f", f"{b}/data.log", "-o", f"{b}/out/data.log.zst"]


def _zip_update(base: Path, run: int) -> None:
    _inputs_plain(base)
    for i in range(1, 5):
        write(base / "src" / f"part{i}.log", _lines(200, seed=random.randrange(1000)))
    _sh("/usr/bin/zip", "-q", "-j", str(base / "out" / "logs.zip"), str(base / "src" / "part0.log"))


def _zip_u(b: Path) -> list[str]:
    return ["/usr/bin/zip", "-q", "-j", f"{b}/out/logs.zip", *(f"{b}/src/part{i}.log" for i in range(1, 5))]


PYCACHE_MAIN = "import jobmod\nprint(jobmod.total(open(__import__('sys').argv[1]).read().split()))\n"
PYCACHE_MOD = "def total(words):\n    return sum(len(w) for w in words)\n"


def _pycache_warm_or_cold(base: Path, run: int) -> None:
    write(base / "main.py", PYCACHE_MAIN)
    write(base / "jobmod.py", PYCACHE_MOD)
    write(base / "in.txt", _lines(100))
    if run % 2 == 1:  # an earlier job on this host left the bytecode cache warm
        _sh(PY3, "-c", f"import sys; sys.path.insert(0, {str(base)!r}); import jobmod")


def _py_main(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/main.py", f"{b}/in.txt"]


def _git_index_stale_or_fresh(base: Path, run: int) -> None:
    repo = base / "repo"
    _repo(base, files=20)
    past = time.time() - 100
    for p in repo.glob("src*.txt"):  # older than the index: no entry is racily clean
        os.utime(p, (past, past))
    _commit_all(repo)
    if run % 2 == 0:  # a build touched the sources since: git status finds their stat data
        for p in repo.glob("src*.txt"):  # changed, rehashes them (same content) and writes
            os.utime(p, (past + 50, past + 50))  # the refreshed index back (index.lock, rename)


QUIET_TWENTYFIRST: list[NoAnomalyCase] = [
    NoAnomalyCase("wf_git_commit_object_fanout_and_pack", _sh_argv("commit.sh"), _git_commit_fanout,
                  description="git add, commit and gc of 30 files whose content (so object names) differs"),
    NoAnomalyCase("wf_sed_i_temp_names", _sed_i, _sed_temp_names,
                  description="sed -i over six files: a random temp name per file"),
    NoAnomalyCase("wf_zstd_t2_threads_varying_input", _zstd_t2, _zstd_threads,
                  description="zstd -T2 over 2 to 5 MB: worker threads and job counts vary"),
    NoAnomalyCase("wf_zip_update_temp_archive", _zip_u, _zip_update,
                  description="zip adding four logs to an existing archive through a temp archive"),
    NoAnomalyCase("wf_python_bytecode_cache_cold_or_warm", _py_main, _pycache_warm_or_cold,
                  description="a python job whose module's __pycache__ is cold in some runs, warm in others"),
    NoAnomalyCase("wf_git_status_index_stale_or_fresh", _git_status, _git_index_stale_or_fresh,
                  description="git status refreshing and writing back its index in some runs (sources "
                              "touched since the commit), only reading it in others"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: every mount is unmounted by its case's teardown, the immutable
    flag cleared by its own."""


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
