"""A forty-sixth set of real programs with one real fault each: **long real runs with the fault deep
inside** -- installed tools walking, hashing, archiving and copying big trees the test makes
(thousands of files of random names and sizes), each run recording some 5,000 to 60,000 system
calls, with ONE real fault far into the run:

- **an unreadable file among thousands**: ``md5sum`` over a sorted ``find`` listing of ~1,000
  files, as the job, one late file left mode 0600 root's by a restore (openat EACCES);
- **a dangling symlink**: ``cpio -o -L`` (dereferencing) of a tree with a few dozen sibling
  links, one of whose targets the bad host's cleanup removed (newfstatat ENOENT);
- **a directory whose permission denies entry**: ``chmod -R go-w`` of the job's ~1,000-entry
  tree, as the job, one deep directory left mode 0300 (openat O_DIRECTORY EACCES);
- **a file that vanishes**: ``sha384sum -c`` of a producer's ~1,000-line manifest, one listed
  file removed by the cleanup since (openat ENOENT); ``sha1sum`` of a listing taken before the
  spool janitor ran (``find -mtime +30 -delete``): the bad host restored one listed data file with
  an old mtime, and the janitor reaps it between the listing and the hashing (openat ENOENT);
- **EFBIG under ``ulimit -f``**: ``tar -x`` of a ~1,000-member archive under the batch system's
  16 MiB file-size limit, with a 24 MiB core dump packed late into the bad host's archive (write
  EFBIG), and ``sort -S 1M -T spill`` of ~1,500 log files (spilling temporary files), one late log
  left at debug level: a merge pass's spill file outgrows the limit (write EFBIG);
- **ENOSPC near the end of a small tmpfs**: ``shutil.copytree`` of the tree onto a 32 MiB tmpfs
  mounted inside the recorded command's own mount namespace (``unshare -m``), the bad tree
  carrying one late 40 MiB blob (sendfile ENOSPC); ``xargs mkdir -p`` of a layout manifest onto a
  tmpfs of 2,600 inodes, the bad manifest 2,900 directories long (mkdir ENOSPC);
- **a symlink loop**: ``du -L`` of a tree of sibling links, two of them pointing at each other
  on the bad host (newfstatat ELOOP);
- **EMFILE late under ``ulimit -n``**: a Python indexer walking ~1,000 files and holding each
  ``.idx`` shard open, under ``ulimit -n 256``: ~200 shards fit, the bad host's 300 do not
  (openat EMFILE).

Faults (``t46_`` cases): md5sum's openat EACCES, cpio's newfstatat ENOENT, chmod's openat EACCES,
sha1sum's and sha384sum's openat ENOENT, tar's write EFBIG, sort's write EFBIG, python3's sendfile ENOSPC and
openat EMFILE, mkdir's mkdir ENOSPC, du's newfstatat ELOOP. The expectations are what ``strace -f``
shows a person looking for the fault. Mounts are made only inside the recorded command's mount
namespace; limits are the recorded shell's own.

Good runs vary naturally: random file and directory names (so readdir order changes), file counts
varying +-10 %, random sizes and contents, pids. Noise cases (``QUIET_FORTYSIXTH``) are big good
runs alone: the sorted md5sum walk as the job, a tar extraction of an archive of files alone, a spilling sort of many logs,
copytree onto a private tmpfs, du -L over sibling links, grep -r over a text tree.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import tarfile
import time
from pathlib import Path

from .files import NOBODY_UID, shell_argv, token
from .harness import NOBODY, PY, NoAnomalyCase, Scenario

NFILES = 1000  # the trees' typical size (each run: +-10 %; 1,000 keeps the set within the CI budget)
_BAD: dict[str, str] = {}  # case name -> the path of its fault in the last bad setup


def _count(n: int) -> int:
    return int(n * random.uniform(0.9, 1.1))


def make_tree(root: Path, n: int, *, size: tuple[int, int] = (0, 2048), per_dir: tuple[int, int] = (20, 60),
              suffixes: tuple[str, ...] = (".dat", ".log", ".json", ".bin"), owner: int | None = None,
              modes: tuple[int, ...] = (0o644,)) -> list[Path]:
    """About n files (+-10 %) of random names, sizes, contents and `modes` under two levels of
    random directories below `root` (all of them given to `owner` when set); returns the files."""
    files: list[Path] = []
    total = _count(n)
    root.mkdir(parents=True, exist_ok=True)
    made = [root]
    while len(files) < total:
        top = root / f"d{token(3)}"
        top.mkdir()
        made.append(top)
        for _ in range(random.randrange(2, 5)):
            sub = top / f"s{token(3)}"
            sub.mkdir()
            made.append(sub)
            for _ in range(random.randrange(*per_dir)):
                f = sub / f"{token(5)}{random.choice(suffixes)}"
                fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, os.urandom(random.randrange(*size)))
                    os.fchmod(fd, random.choice(modes))
                    if owner is not None:
                        os.fchown(fd, owner, owner)
                finally:
                    os.close(fd)
                files.append(f)
    if owner is not None:
        for d in made:
            os.chown(d, owner, owner)
    return files


def _late(files: list[Path], frac: float = 0.8) -> Path:
    """A file in the last fifth of `files` in sorted order (deep into a sorted walk)."""
    ordered = sorted(files, key=str)
    return ordered[random.randrange(int(len(ordered) * frac), len(ordered))]


def _bad(name: str):
    return lambda b: _BAD.get(name, f"{b}/*")  # noqa: ARG005


# --- md5sum over a sorted listing, as the job: one late file unreadable ------------------------------------------
MD5_SH = 'find "$1/tree" -type f -print0 | sort -z | xargs -0 md5sum'


def md5_unreadable(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree", NFILES)
    if bad:
        victim = _late(files)
        victim.chmod(0o600)  # root's, restored without its mode
        _BAD["t46_md5sum_unreadable_late_file"] = str(victim)


# --- cpio -o -L of a tree with sibling links: one target removed ---------------------------------------------------
CPIO_SH = 'cd "$1/tree" && find . -print | cpio -o -L -H newc > "$1/out.cpio"'


def _sibling_links(files: list[Path], n: int) -> list[Path]:
    """n symlinks `latest-*` beside files, each to a sibling file (relative)."""
    links = []
    for target in random.sample(files, n):
        link = target.parent / f"latest-{token(3)}"
        link.symlink_to(target.name)
        links.append(link)
    return links


def cpio_dangling(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree", NFILES)
    links = _sibling_links(files, random.randrange(30, 45))
    if bad:
        link = random.choice(links)
        (link.parent / os.readlink(link)).unlink()  # the cleanup removed the target, not the link
        _BAD["t46_cpio_deref_dangling_link"] = f"*{link.parent.parent.name}/{link.parent.name}/{link.name}"


# --- chmod -R go-w of the job's tree, as the job: one directory 0300 -----------------------------------------------
CHMOD_ARGV = ["chmod", "-R", "go-w"]


def chmod_denied_dir(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree", NFILES, owner=NOBODY_UID, modes=(0o644, 0o664, 0o666, 0o640))
    if bad:
        victim = _late(files).parent
        victim.chmod(0o300)  # write and search for the owner, no read: a drop box
        _BAD["t46_chmod_r_dir_denies_listing"] = str(victim)


# --- sha1sum of a listing the spool janitor reaps under -----------------------------------------------------------
SHA1_SH = ('find "$1/tree/data" -type f | sort > "$1/list" && find "$1/tree" -type f -mtime +30 -delete '
           '&& xargs -a "$1/list" sha1sum > "$1/sums"')


def _age(path: Path, days: int) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def sha1_reaped(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree" / "data", NFILES)
    for _ in range(random.randrange(1, 5)):  # the spool's stale partials, reaped every run
        part = base / "tree" / "tmp" / f"{token(4)}.part"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(os.urandom(random.randrange(100, 4000)))
        _age(part, random.randrange(31, 90))
    if bad:
        victim = _late(files)
        _age(victim, 45)  # restored from a backup with its old mtime
        _BAD["t46_sha1sum_listed_file_reaped"] = str(victim)


# --- sha384sum -c of a producer's manifest: one listed file removed since --------------------------------------
SHA384_SH = 'cd "$1/tree" && sha384sum -c --quiet "$1/SHA384SUMS"'


def sha384_vanished(base: Path, bad: bool) -> None:
    tree = base / "tree"
    files = make_tree(tree, NFILES)
    lines = [f"{hashlib.sha384(f.read_bytes()).hexdigest()}  {f.relative_to(tree)}\n" for f in sorted(files, key=str)]
    (base / "SHA384SUMS").write_text("".join(lines))
    if bad:
        victim = _late(files)
        victim.unlink()  # the cleanup ran between the producer's manifest and the check
        _BAD["t46_sha384sum_check_listed_file_gone"] = str(victim)


# --- tar -x of a big archive under ulimit -f 16 MiB: a core dump packed late ---------------------------------------
TAR_SH = 'ulimit -f 32768 && mkdir "$1/out" && tar -xf "$1/archive.tar" -C "$1/out"'


def _archive(base: Path, files: list[Path], late_big: Path | None, *, dirs: bool) -> None:
    """archive.tar of `files` in sorted order (`late_big` among the last members): with a member
    for each directory before its files (tar -c of a directory) or of the files alone (tar -c -T
    of a file list, whose extraction makes the directories on the way)."""
    src = base / "src"
    members = sorted(files, key=str)
    if late_big is not None:
        members.insert(random.randrange(int(len(members) * 0.85), len(members)), late_big)
    with tarfile.open(base / "archive.tar", "w", format=tarfile.GNU_FORMAT) as tar:
        seen: set[Path] = set()
        for f in members:
            for d in reversed(f.relative_to(src).parents[:-1]) if dirs else ():
                if d not in seen:
                    seen.add(d)
                    tar.add(src / d, arcname=str(d), recursive=False)
            tar.add(f, arcname=str(f.relative_to(src)), recursive=False)


def tar_efbig(base: Path, bad: bool) -> None:
    files = make_tree(base / "src" / "job", NFILES)
    big = None
    if bad:
        big = _late(files).parent / f"core.{random.randrange(1000, 60000)}"
        with open(big, "wb") as fh:
            for _ in range(24):
                fh.write(os.urandom(1 << 20))
        _BAD["t46_tar_extract_core_over_fsize"] = f"{base}/out/{big.relative_to(base / 'src')}"
    _archive(base, files, big, dirs=True)


def tar_file_list(base: Path, run: int) -> None:  # noqa: ARG001
    _archive(base, make_tree(base / "src" / "job", NFILES), None, dirs=False)


# --- sort -S 1M -T spill of many logs under ulimit -f 4 MiB: one late log at debug level ---------------------------
SORT_SH = ('ulimit -f 8192 && mkdir "$1/spill" && '
           'sort -S 1M -T "$1/spill" -o "$1/sorted.log" "$1"/logs/*.log')


def _log_lines(nbytes: int) -> bytes:
    out = io.StringIO()
    size = 0
    while size < nbytes:
        line = f"{random.randrange(10**9, 10**10)} host{random.randrange(64)} {token(6)} ok {token(3)}\n"
        out.write(line)
        size += len(line)
    return out.getvalue().encode()


def sort_efbig(base: Path, bad: bool) -> None:
    logs = base / "logs"
    logs.mkdir(parents=True)
    names = sorted(f"{token(4)}.log" for _ in range(_count(1500)))
    for name in names:
        (logs / name).write_bytes(_log_lines(random.randrange(200, 2400)))
    if bad:
        debug = names[random.randrange(int(len(names) * 0.8), len(names))]
        (logs / debug).write_bytes(_log_lines(6 << 20))  # left at debug level
        _BAD["t46_sort_merge_output_over_fsize"] = f"{base}/spill/sort*"


# --- shutil.copytree onto a 32 MiB private tmpfs: a late 40 MiB blob -----------------------------------------------
COPYTREE_PY = "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2])"
COPYTREE_SH = ('mount -t tmpfs -o size=32m tb46-stage "$1/stage" && '
               f'exec {" ".join(PY)} -c "{COPYTREE_PY}" "$1/tree" "$1/stage/copy"')


def _copytree_argv(b: Path) -> list[str]:
    return ["unshare", "-m", "--propagation", "private", *shell_argv(COPYTREE_SH, str(b))]


def copytree_enospc(base: Path, bad: bool) -> None:
    (base / "stage").mkdir()
    files = make_tree(base / "tree", 1500)
    if bad:
        blob = _late(files).parent / f"model-{token(3)}.ckpt"
        with open(blob, "wb") as fh:
            for _ in range(40):
                fh.write(os.urandom(1 << 20))
        rel = blob.relative_to(base / "tree")
        _BAD["t46_copytree_tmpfs_fills_late"] = f"*{rel}"


# --- xargs mkdir -p of a layout manifest onto a tmpfs of 2600 inodes ----------------------------------------------
MKDIR_SH = ('mount -t tmpfs -o size=16m,nr_inodes=2600 tb46-layout "$1/stage" && cd "$1/stage" && '
            'xargs -a "$1/dirs.list" mkdir -p')


def _mkdir_argv(b: Path) -> list[str]:
    return ["unshare", "-m", "--propagation", "private", *shell_argv(MKDIR_SH, str(b))]


def mkdir_inodes(base: Path, bad: bool) -> None:
    (base / "stage").mkdir()
    n = 2900 if bad else _count(2000)
    dirs = []
    while len(dirs) < n:
        top = f"p{token(3)}"
        dirs.append(top)
        dirs.extend(f"{top}/r{token(3)}" for _ in range(random.randrange(10, 30)))
    (base / "dirs.list").write_text("\n".join(dirs[:n]) + "\n")
    if bad:
        _BAD["t46_mkdir_layout_out_of_inodes"] = f"{base}/stage/*"


# --- du -L of a tree of sibling links: two links point at each other ----------------------------------------------
DU_ARGV = ["du", "-L", "-s"]


def du_loop(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree", 2 * NFILES)
    _sibling_links(files, random.randrange(30, 45))
    if bad:
        d = _late(files).parent
        a, b = d / f"current-{token(3)}", d / f"previous-{token(3)}"
        a.symlink_to(b.name)
        b.symlink_to(a.name)
        _BAD["t46_du_deref_link_loop"] = f"{d}/*-*"


# --- a Python indexer holding each .idx shard open, under ulimit -n 256 -----------------------------------------------
INDEXER_PY = """
import os, sys
held = []
headers = 0
for top, dirs, names in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(top, name)
        fh = open(path, 'rb')
        headers += len(fh.read(64))
        if name.endswith('.idx'):
            held.append(fh)
        else:
            fh.close()
print(len(held), headers)
"""
INDEXER_SH = 'ulimit -n 256 && exec "$2" -S -c "$3" "$1/tree"'


def _indexer_argv(b: Path) -> list[str]:
    return shell_argv(INDEXER_SH, str(b), PY[0], INDEXER_PY)


def indexer_emfile(base: Path, bad: bool) -> None:
    files = make_tree(base / "tree", NFILES)
    nshards = 300 if bad else _count(200)
    for f in random.sample(files, nshards):
        f.rename(f.with_suffix(".idx"))
    if bad:
        _BAD["t46_indexer_holds_shards_emfile"] = f"{base}/tree/*"


PROBE_STAT = frozenset({"newfstatat", "stat", "fstatat64", "statx", "lstat"})
PROBE_OPEN = frozenset({"openat", "open"})
REAL_FORTYSIXTH: list[Scenario] = [
    Scenario("t46_md5sum_unreadable_late_file", "md5sum (find -print0 | sort -z | xargs -0, as the job)",
             lambda b: shell_argv(MD5_SH, str(b)), md5_unreadable, PROBE_OPEN, "EACCES",
             _bad("t46_md5sum_unreadable_late_file"), unprivileged=True,
             description="md5sum of ~1,000 files as nobody: one late file mode 0600 root's (openat EACCES)"),
    Scenario("t46_cpio_deref_dangling_link", "cpio -o -L -H newc (find . | cpio)", lambda b: shell_argv(CPIO_SH, str(b)),
             cpio_dangling, PROBE_STAT, "ENOENT", _bad("t46_cpio_deref_dangling_link"),
             description="cpio -o -L of ~1,000 files and ~40 sibling links, one link's target removed "
                         "(stat ENOENT)"),
    Scenario("t46_chmod_r_dir_denies_listing", "chmod -R go-w (as the job)", lambda b: [*CHMOD_ARGV, f"{b}/tree"],
             chmod_denied_dir, PROBE_OPEN, "EACCES", _bad("t46_chmod_r_dir_denies_listing"), unprivileged=True,
             description="chmod -R go-w of nobody's ~1,000-entry tree as nobody: one directory mode 0300 "
                         "(openat O_DIRECTORY EACCES)"),
    Scenario("t46_sha1sum_listed_file_reaped", "sha1sum (xargs -a list, after find -mtime +30 -delete)",
             lambda b: shell_argv(SHA1_SH, str(b)), sha1_reaped, frozenset({"unlinkat", "unlink"}), None,
             _bad("t46_sha1sum_listed_file_reaped"),
             # The run leaves the good runs' behaviour at the janitor's unlinkat of a listed data
             # file (theirs only reap tmp/*.part); sha1sum's openat ENOENT of it later is the
             # consequence a user sees first. Re-expected by the maintainer to the cause.
             description="the janitor reaps a listed data file restored with an old mtime before sha1sum "
                         "reaches it (find -delete's unlinkat of it; then sha1sum's openat ENOENT)"),
    Scenario("t46_sha384sum_check_listed_file_gone", "sha384sum -c --quiet SHA384SUMS",
             lambda b: shell_argv(SHA384_SH, str(b)), sha384_vanished, PROBE_OPEN, "ENOENT",
             _bad("t46_sha384sum_check_listed_file_gone"),
             description="sha384sum -c of a ~1,000-line manifest, one late listed file removed since "
                         "(openat ENOENT)"),
    Scenario("t46_tar_extract_core_over_fsize", "tar -xf (ulimit -f 16 MiB)", lambda b: shell_argv(TAR_SH, str(b)),
             tar_efbig, frozenset({"write", "pwrite64", "writev"}), "EFBIG", _bad("t46_tar_extract_core_over_fsize"),
             description="tar -x of ~1,000 members under ulimit -f 16 MiB, a 24 MiB core packed late "
                         "(write EFBIG, then SIGXFSZ)"),
    Scenario("t46_sort_merge_output_over_fsize", "sort -S 1M -T spill (ulimit -f 4 MiB)",
             lambda b: shell_argv(SORT_SH, str(b)), sort_efbig, frozenset({"write", "writev"}), "EFBIG",
             _bad("t46_sort_merge_output_over_fsize"),
             description="sort of ~1,500 logs spilling to temporary files under ulimit -f 4 MiB: one late "
                         "debug log of 6 MiB (write EFBIG)"),
    Scenario("t46_copytree_tmpfs_fills_late", "python3 shutil.copytree (unshare -m, 32 MiB tmpfs)", _copytree_argv,
             copytree_enospc, frozenset({"sendfile", "sendfile64", "write", "copy_file_range"}), "ENOSPC",
             _bad("t46_copytree_tmpfs_fills_late"),
             description="copytree of ~1,500 files onto a 32 MiB tmpfs, a late 40 MiB checkpoint "
                         "(sendfile ENOSPC)"),
    Scenario("t46_mkdir_layout_out_of_inodes", "mkdir -p (xargs -a dirs.list, tmpfs nr_inodes=2600)", _mkdir_argv,
             mkdir_inodes, frozenset({"mkdir", "mkdirat"}), "ENOSPC", _bad("t46_mkdir_layout_out_of_inodes"),
             description="xargs mkdir -p of a 2,900-directory manifest onto a tmpfs of 2,600 inodes "
                         "(mkdir ENOSPC)"),
    Scenario("t46_du_deref_link_loop", "du -L -s", lambda b: [*DU_ARGV, f"{b}/tree"], du_loop, PROBE_STAT, "ELOOP",
             _bad("t46_du_deref_link_loop"),
             description="du -L of ~2,000 files and ~40 sibling links, two links pointing at each other "
                         "(stat ELOOP)"),
    Scenario("t46_indexer_holds_shards_emfile", "python3 indexer (os.walk, .idx shards held open, ulimit -n 256)",
             _indexer_argv, indexer_emfile, PROBE_OPEN, "EMFILE", _bad("t46_indexer_holds_shards_emfile"),
             description="a walk of ~1,000 files holding 300 .idx shards open under ulimit -n 256 "
                         "(openat EMFILE)"),
]


# --- good-vs-good noise -------------------------------------------------------------------------------------------
def _noise(setup):
    return lambda base, run: setup(base, False)  # noqa: ARG005


def grep_tree(base: Path, run: int) -> None:  # noqa: ARG001
    files = make_tree(base / "tree", 1500, size=(1, 2))
    for f in files:
        lines = [f"{token(4)} {random.choice(['info', 'warn', 'debug'])} {token(6)}\n"
                 for _ in range(random.randrange(2, 30))]
        if random.random() < 0.05:
            lines.insert(random.randrange(len(lines)), f"{token(4)} error disk {token(3)}\n")
        f.write_text("".join(lines))


QUIET_FORTYSIXTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t46_md5sum_sorted_walk_as_job", lambda b: [*NOBODY, *shell_argv(MD5_SH, str(b))], _noise(md5_unreadable),
                  description="md5sum of ~1,000 random files through find | sort -z | xargs -0"),
    NoAnomalyCase("t46_tar_extract_file_list_archive", lambda b: shell_argv(TAR_SH, str(b)), tar_file_list,
                  description="tar -x of an archive of ~1,000 files alone (tar -c -T list): tar makes each "
                              "directory on the way, its mkdirat of the existing top directory refused EEXIST "
                              "once per new directory, a count that varies with the tree"),
    NoAnomalyCase("t46_sort_spill_many_logs", lambda b: shell_argv(SORT_SH, str(b)), _noise(sort_efbig),
                  description="sort -S 1M -T of ~1,500 random logs, spilling temporary files"),
    NoAnomalyCase("t46_copytree_private_tmpfs", _copytree_argv, _noise(copytree_enospc),
                  description="shutil.copytree of ~1,500 files onto a private 32 MiB tmpfs"),
    NoAnomalyCase("t46_du_deref_sibling_links", lambda b: [*DU_ARGV, f"{b}/tree"], _noise(du_loop),
                  description="du -L -s of ~2,000 files and ~40 sibling links"),
    NoAnomalyCase("t46_grep_r_text_tree", lambda b: ["grep", "-r", "-l", "-e", " error ", f"{b}/tree"], grep_tree,
                  description="grep -r -l over ~1,500 random text files, a few matching"),
]


def quiet_teardown() -> None:
    """Nothing to clean up: mounts live only in the runs' own mount namespaces."""


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
