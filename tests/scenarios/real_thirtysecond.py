"""A thirty-second set of real programs with one real fault each: **unusual names and paths** --
installed programs working on file names with spaces, newlines, tabs, backslashes and leading
dashes, names that are not UTF-8 (``caf\\xe9``), names near NAME_MAX (255 bytes) and paths near
PATH_MAX (4096), symlink chains, relative paths resolved after a chdir (*at calls), paths through
``/proc/self/fd``, hard links, and names that differ only by case or by a trailing dot:

- **copiers and mirrors**: ``cpio -0 -pdm`` (as nobody, after ``cd``: a NUL-separated list of
  relative names, one not UTF-8, one with a newline), ``rsync -a --from0 --files-from`` (a
  trailing dot, case twins, a tab, a newline), ``cp -a`` of a tree whose deepest path is near
  PATH_MAX, ``mv -t`` of ``-draft`` names (after ``cd``) into a symlinked target, ``link``
  (a hard link, as nobody);
- **rewriters and writers**: ``gzip -r -k`` of an inbox whose names are near NAME_MAX,
  ``sed --follow-symlinks -i`` through a chain of links, ``awk`` writing to tab-separated
  destinations with spaces, ``mkdir -p`` of a path near PATH_MAX (as nobody);
- **checkers and scripts**: ``sha256sum -c`` of a list with backslash-escaped names (a newline,
  a backslash, a tab; as nobody), ``python3 -S`` opening case-twin names with ``O_NOFOLLOW``
  relative to a directory fd and writing through ``/proc/self/fd/N/..``, ``sh -c`` redirecting
  into ``/proc/self/fd/3/`` (a directory held open; as nobody).

Faults (``t32_`` cases): a mirror's leaf directory recreated root:0755 (cpio's openat EACCES, as
nobody), a name listed with a trailing dot that a sync from another system stripped (rsync's
sender's lstat ENOENT), a scanned file whose name leaves no room for ".gz" (gzip's openat
ENAMETOOLONG), a source nested one level deeper so that the copy's path passes PATH_MAX (cp's
mkdir ENAMETOOLONG), a link chain whose last release the cleanup removed (sed's readlink ENOENT), a
host's output directory that a stray cp made a file (awk's openat ENOTDIR), a target link chain
that a botched rotation made a cycle (mv's openat ELOOP), a spool file restored as root:0600
(link's linkat EPERM: protected_hardlinks), a file of the list restored as root:0600
(sha256sum's openat EACCES), a case twin replaced by a symlink (python's openat O_NOFOLLOW
ELOOP), a spool directory recreated root:0755 (sh's redirection through /proc/self/fd/3 EACCES),
a directory deep in a tree recreated root:0755 (mkdir -p's mkdir EACCES).

Good runs vary naturally: random release and session names, random upload ids (the title
is the same), mktemp's names, pids. Noise cases (``QUIET_THIRTYSECOND``) are good runs alone: mktemp
names with spaces and tabs, a listing whose order and names change every run, tar and rsync
round trips of odd names, os.fwalk through /proc/self/fd, cp -a of hard links into a random
stage, sha256sum of newline names.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from .files import shell_argv, token
from .harness import NoAnomalyCase, Scenario
from .real import own

OPEN = frozenset({"openat", "open", "openat2", "creat"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
MKDIR = frozenset({"mkdir", "mkdirat"})
LINK = frozenset({"link", "linkat"})
READLINK = frozenset({"readlink", "readlinkat"})
PY3 = "/usr/bin/python3"
NOBODY_UID = 65534
CAFE = os.fsdecode(b"caf\xe9")  # a name in Latin-1: not UTF-8


def _dirs(base: Path, *names: str) -> None:
    for n in names:
        (base / n).mkdir(parents=True, exist_ok=True)


def _write(path: Path, data: str | bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _text(name: str, lines: int = 40) -> str:
    return "".join(f"{name} row {k} value {(k * 37) % 101}\n" for k in range(lines))


# --- cpio -0 -pdm, as nobody, after cd: a mirror's leaf recreated as root ------------------------
CPIO_NAMES = ["-notes.txt", "line\nbreak.txt", CAFE, f"{CAFE}/menu du jour.txt", f"{CAFE}/Menu Du Jour.txt",
              "tab\there.txt"]
_MIRROR = "/".join(f"mirror level {i:02d} " + "m" * 60 for i in range(1, 13))  # ~900 bytes deep


def _cpio_argv(b: Path) -> list[str]:
    return shell_argv('cd "$1/src" && exec /usr/bin/cpio -0 -p -d -m --quiet "$1/$2" < "$1/list"', str(b), _MIRROR)


def cpio_mirror_leaf_root(base: Path, bad: bool) -> None:
    for name in CPIO_NAMES:
        if name == CAFE:
            _dirs(base / "src", name)
        else:
            _write(base / "src" / name, _text(name))
    _write(base / "list", "".join(f"{n}\0" for n in CPIO_NAMES))
    _dirs(base, _MIRROR)
    own(base / "src")
    # every level of the mirror is root's and 0755 (traversable); the leaf is the agent's
    if not bad:  # the bad host's restore recreated the leaf as root:0755
        os.chown(base / _MIRROR, NOBODY_UID, NOBODY_UID)


# --- rsync -a --from0 --files-from: a trailing dot stripped ------------------------------------------
RSYNC_NAMES = ["Q3 report.", "README", "readme", "-draft\tv2.txt", f"{CAFE}.txt", "notes\n.txt", "a b c/ d e.txt"]


def _rsync_argv(b: Path) -> list[str]:
    return ["/usr/bin/rsync", "-a", "--from0", f"--files-from={b}/list", f"{b}/src/", f"{b}/dst/"]


def rsync_trailing_dot_stripped(base: Path, bad: bool) -> None:
    for name in RSYNC_NAMES:
        on_disk = "Q3 report" if bad and name == "Q3 report." else name  # a sync that strips trailing dots
        _write(base / "src" / on_disk, _text(name))
    _write(base / "list", "".join(f"{n}\0" for n in RSYNC_NAMES))
    _dirs(base, "dst")


# --- gzip -r -k: a scanned name with no room for .gz ---------------------------------------------------
_LONG_STEM = "Quarterly statement for account 0042 - "


def _long_name(length: int, tail: str) -> str:
    stem = (_LONG_STEM * 8)[: length - len(tail) - 4]
    return f"{stem}{tail}.pdf"


def _gzip_argv(b: Path) -> list[str]:
    return ["/usr/bin/gzip", "-r", "-k", "-1", f"{b}/inbox"]


def gzip_name_too_long(base: Path, bad: bool) -> None:
    for name in (f"{CAFE} menu.txt", "-flags.txt", "scan 0001.txt", "with\nnewline.txt"):
        _write(base / "inbox" / name, _text(name, 80))
    # the scanner names each upload after its title plus a random id; the bad host's title is longer
    length = 253 if bad else 240
    _write(base / "inbox" / _long_name(length, f" {token(3)}"), _text("scan", 200))


# --- cp -a of a tree whose copy passes PATH_MAX ------------------------------------------------------------
_LEVEL = "level {:02d} of the project archive " + "p" * 160  # ~190 bytes a level


def _deep_src(base: Path, bad: bool) -> Path:
    d = base / "s"
    for i in range(1, 21):  # ~3900 bytes below base
        d = d / _LEVEL.format(i)
    if bad:  # a colleague moved the tree one level deeper under a longer name
        d = d / ("moved here " + "q" * 109)
    return d


def _CP_DEST(b: Path) -> str:  # noqa: N802
    return f"{b}/backup copy of the s tree, made by the nightly archive job 0001"


def _cp_argv(b: Path) -> list[str]:
    return ["/usr/bin/cp", "-a", f"{b}/s", _CP_DEST(b)]


def cp_copy_passes_path_max(base: Path, bad: bool) -> None:
    leaf = _deep_src(base, bad)
    # built relative to a chdir: a path this deep is near what open() takes in one argument
    cwd = os.getcwd()
    try:
        os.chdir(base)
        rel = leaf.relative_to(base)
        for part_index in range(1, len(rel.parts) + 1):
            os.mkdir(os.path.join(*rel.parts[:part_index]))
    finally:
        os.chdir(cwd)
    _write(base / "s" / "top file.txt", _text("top"))
    fd = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with open(os.open("deepest file.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write(_text("deepest"))
    finally:
        os.close(fd)


# --- sed --follow-symlinks -i through a chain of links --------------------------------------------------------
APP_CONF = "[main]\nname = shop\ndebug = on\nworkers = 4\n"


def _sed_argv(b: Path) -> list[str]:
    # after cd, as the deploy's hook runs it: sed resolves each hop relative to the name it read
    return shell_argv('cd "$1/etc" && exec /usr/bin/sed --follow-symlinks -i -e "s/^debug = .*/debug = off/" "app conf"',
               str(b))


def sed_chain_release_removed(base: Path, bad: bool) -> None:
    release = f"v2 build-{token(4)}"  # each deploy's release has a random build id
    _dirs(base, "etc/conf.d", "releases")
    os.symlink("conf.d/current", base / "etc" / "app conf")
    os.symlink(f"../../releases/{release}/app.conf", base / "etc" / "conf.d" / "current")
    if not bad:  # the bad host's cleanup removed the release that current still points at
        _write(base / "releases" / release / "app.conf", APP_CONF)
    _write(base / "releases" / f"v1 build-{token(4)}" / "app.conf", APP_CONF)


# --- awk: tab-separated destinations with spaces -------------------------------------------------------------
AWK_PROG = r"""BEGIN { FS = "\t" }
{ n[$1 "/" $2]++; print $3 > (out "/" $1 "/" $2) }
END { for (k in n) c++; print c " files" > (out "/-summary") }
"""
_HOSTS = ["web 01", "db 02", CAFE, "-edge"]
_LOGS = ["access log", "error\\log", "slow queries.log"]


def _awk_argv(b: Path) -> list[str]:
    return ["/usr/bin/awk", "-v", f"out={b}/out", "-f", f"{b}/split.awk", f"{b}/manifest.tsv"]


def awk_host_dir_is_file(base: Path, bad: bool) -> None:
    request = token(4)  # the batch's request id: a different one every run
    rows = [f"{h}\t{lg}\treq-{request} {h} {lg} line {k}\n" for k in range(30) for h in _HOSTS for lg in _LOGS]
    _write(base / "manifest.tsv", "".join(rows))
    _write(base / "split.awk", AWK_PROG)
    for h in _HOSTS:
        if bad and h == "db 02":  # a stray `cp db.log "out/db 02"` made the host's directory a file
            _write(base / "out" / h, "stray\n")
        else:
            _dirs(base / "out", h)


# --- mv -t after cd: -draft names into a symlinked target -----------------------------------------------
DRAFTS = ["-draft 1.txt", "-draft 2.txt", "--help.txt", "-n"]


def _mv_argv(b: Path) -> list[str]:
    return shell_argv('cd "$1/in" && shift && exec /usr/bin/mv -t ../done -- "$@"', str(b), *DRAFTS)


def mv_target_chain_cycle(base: Path, bad: bool) -> None:
    for name in DRAFTS:
        _write(base / "in" / name, _text(name))
    quarter = f"2024 q3 {token(3)}"  # the rotation names each quarter's folder with a random suffix
    _dirs(base / "archive", quarter)
    os.symlink("archive/current", base / "done")
    # the bad host's rotation pointed current back at done: done -> archive/current -> ../done
    os.symlink("../done" if bad else quarter, base / "archive" / "current")


# --- link (a hard link), as nobody ---------------------------------------------------------------------------
def _link_argv(b: Path) -> list[str]:
    return ["/usr/bin/link", f"{b}/spool/order no 7 (final).json", f"{b}/spool/.keep/-order no 7"]


def link_spool_file_restored_root(base: Path, bad: bool) -> None:
    _write(base / "spool" / "order no 7 (final).json", '{"order": 7, "lines": 3}\n', 0o600)
    _dirs(base / "spool", ".keep")
    own(base / "spool")
    if bad:  # restored from backup as root:0600: protected_hardlinks refuses nobody's link to it
        os.chown(base / "spool" / "order no 7 (final).json", 0, 0)


# --- sha256sum -c of escaped names, as nobody ------------------------------------------------------------------
SHA_NAMES = ["line\nbreak.csv", "back\\slash.csv", "tab\there.csv", f"{CAFE}.csv", "-dash.csv", "Trailing.", "plain.csv"]


def _sha_argv(b: Path) -> list[str]:
    return shell_argv('cd "$1/data" && exec /usr/bin/sha256sum -c --quiet SHA256SUMS', str(b))


def _sha_list(names: list[str], base: Path) -> str:
    """sha256sum's own format: a name with a newline or a backslash escaped, its line led by "\\"."""
    import hashlib

    lines = []
    for n in names:
        digest = hashlib.sha256((base / "data" / n).read_bytes()).hexdigest()
        esc = n.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(("\\" if esc != n else "") + f"{digest}  {esc}\n")
    return "".join(lines)


def sha_file_restored_root(base: Path, bad: bool) -> None:
    for n in SHA_NAMES:
        _write(base / "data" / n, _text(n, 60))
    _write(base / "data" / "SHA256SUMS", _sha_list(SHA_NAMES, base))
    own(base / "data")
    if bad:  # restored from backup as root:0600
        f = base / "data" / "tab\there.csv"
        os.chown(f, 0, 0)
        f.chmod(0o600)


# --- python3 -S: case twins opened O_NOFOLLOW relative to a directory fd ---------------------------------
TWINS_PY = r"""import os, sys
os.chdir(sys.argv[1])
d = os.open('conf', os.O_RDONLY | os.O_DIRECTORY)
merged = []
for name in ('Settings.ini', 'settings.ini', 'SETTINGS.INI.', 'settings.ini.'):
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=d)  # never follow a planted link
    with os.fdopen(fd, 'rb') as fh:
        merged.append(b'# ' + os.fsencode(name) + b'\n' + fh.read())
with open(f'/proc/self/fd/{d}/../out/merged.ini', 'wb') as out:  # the parent of the held directory
    out.write(b''.join(merged))
print(len(merged), 'files')
"""


def _twins_argv(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/merge.py", str(b)]


def python_case_twin_symlink(base: Path, bad: bool) -> None:
    _write(base / "merge.py", TWINS_PY)
    _dirs(base, "out")
    for name in ("Settings.ini", "settings.ini", "SETTINGS.INI.", "settings.ini."):
        _write(base / "conf" / name, f"[{name}]\nsession = {token(4)}\n")
    if bad:  # a planted link in place of the lower-case twin
        (base / "conf" / "settings.ini").unlink()
        os.symlink("/etc/hostname", base / "conf" / "settings.ini")


# --- sh -c: redirections through /proc/self/fd/3, as nobody -------------------------------------------------
SPOOL_SH = ('cd "$1" && exec 3<"spool dir" && '
            'cat "spool dir/batch 1" "spool dir/batch 2" > "/proc/self/fd/3/-summary" && '
            'wc -l < "/proc/self/fd/3/-summary" > "/proc/self/fd/3/count of lines" && '
            'ls -A "/proc/self/fd/3/" > "/proc/self/fd/3/.listing"')


def _spool_argv(b: Path) -> list[str]:
    return shell_argv(SPOOL_SH, str(b))


def spool_dir_recreated_root(base: Path, bad: bool) -> None:
    for i in (1, 2):
        _write(base / "spool dir" / f"batch {i}", _text(f"batch {i} {token(3)}"))
    own(base / "spool dir")
    if bad:  # the restore recreated the spool directory root:0755
        os.chown(base / "spool dir", 0, 0)


# --- mkdir -p of a path near PATH_MAX, as nobody ---------------------------------------------------------------
_TREE = [f"node {i:02d} " + "n" * 170 for i in range(1, 21)]  # ~3600 bytes


def _mkdir_argv(b: Path) -> list[str]:
    return ["/usr/bin/mkdir", "-p", "--", f"{b}/tree/" + "/".join(_TREE)]


def mkdir_deep_dir_root(base: Path, bad: bool) -> None:
    built = base / "tree" / "/".join(_TREE[:9])  # an earlier run made the first nine levels
    built.mkdir(parents=True)
    own(base / "tree")
    if bad:  # a restore recreated level 09, the last one made, root:0755: level 10 is the first to make
        os.chown(built, 0, 0)


REAL_THIRTYSECOND: list[Scenario] = [
    Scenario("t32_cpio_pass_mirror_leaf_root", "cpio -0 -pdm (as nobody, after cd: odd relative names)",
             # the recorder keeps a path's first 511 bytes: the mirror's names (~900 bytes deep) end there
             _cpio_argv, cpio_mirror_leaf_root, OPEN | MKDIR | STAT, "EACCES", lambda b: f"{b}/mirror level 01 *",
             unprivileged=True,
             description="a pass-through copy of NUL-separated names (not UTF-8, a newline, a tab, a leading dash) "
                         "into a deep mirror whose leaf a restore recreated as root"),
    Scenario("t32_rsync_files_from_trailing_dot", "rsync -a --from0 --files-from (a trailing dot, case twins)",
             _rsync_argv, rsync_trailing_dot_stripped, STAT | OPEN, "ENOENT", lambda b: "*Q3 report.",
             description="an rsync of a NUL-separated list whose 'Q3 report.' a sync from another system stored "
                         "without its trailing dot"),
    Scenario("t32_gzip_recursive_name_too_long", "gzip -r -k (an inbox of names near NAME_MAX)", _gzip_argv,
             gzip_name_too_long, OPEN, "ENAMETOOLONG", lambda b: f"*{_LONG_STEM[:20]}*.pdf.gz",
             description="gzip -r over an inbox whose scanned upload has a 253-byte name: no room for '.gz'"),
    Scenario("t32_cp_deep_copy_path_max", "cp -a (a tree whose copy passes PATH_MAX)", _cp_argv,
             cp_copy_passes_path_max, MKDIR | OPEN | STAT, "ENAMETOOLONG", lambda b: f"{_CP_DEST(b)}/*",
             description="cp -a of a tree nested one level deeper, so its copy's deepest path passes PATH_MAX"),
    Scenario("t32_sed_follow_chain_release_removed", "sed --follow-symlinks -i (after cd: through a chain of links)",
             _sed_argv, sed_chain_release_removed, READLINK | OPEN | STAT, "ENOENT", lambda b: "*releases/v2 build-*/app.conf",
             description="sed -i through 'app conf' -> conf.d/current -> a release the cleanup removed"),
    Scenario("t32_awk_host_dir_is_file", "awk (tab-separated destinations with spaces)", _awk_argv,
             awk_host_dir_is_file, OPEN, "ENOTDIR", lambda b: f"{b}/out/db 02/*",
             description="awk splitting a manifest into out/<host>/<log>, one host's directory a stray cp's file"),
    Scenario("t32_mv_target_chain_cycle", "mv -t (after cd: -draft names into a linked target)", _mv_argv,
             mv_target_chain_cycle, STAT | OPEN | frozenset({"renameat2", "renameat", "rename"}), "ELOOP",
             lambda b: "*done*",
             description="mv -t ../done of leading-dash names, done a link chain a rotation turned into a cycle"),
    Scenario("t32_link_spool_file_restored_root", "link (a hard link, as nobody)", _link_argv,
             link_spool_file_restored_root, LINK, "EPERM", lambda b: f"{b}/spool/order no 7 (final).json",
             unprivileged=True,
             description="a hard link of a spool file that a restore made root:0600 (protected_hardlinks)"),
    Scenario("t32_sha256sum_check_escaped_names", "sha256sum -c (as nobody: backslash-escaped names)", _sha_argv,
             sha_file_restored_root, OPEN, "EACCES", lambda b: "*tab\there.csv", unprivileged=True,
             description="sha256sum -c of a list with escaped names (newline, backslash), one file restored "
                         "root:0600"),
    Scenario("t32_python_case_twin_symlink", "python3 -S (O_NOFOLLOW opens relative to a directory fd)",
             _twins_argv, python_case_twin_symlink, OPEN, "ELOOP", lambda b: "*conf/settings.ini",
             description="a merge of case-twin and trailing-dot config names opened O_NOFOLLOW, one twin a "
                         "planted link"),
    Scenario("t32_sh_proc_fd_spool_root", "sh -c (redirections through /proc/self/fd/3, as nobody)", _spool_argv,
             spool_dir_recreated_root, OPEN, "EACCES", lambda b: "*-summary", unprivileged=True,
             description="a shell holding its spool directory open as fd 3 and writing through /proc/self/fd/3, "
                         "the directory recreated as root"),
    Scenario("t32_mkdir_deep_path_eacces", "mkdir -p (as nobody: a path near PATH_MAX)", _mkdir_argv,
             mkdir_deep_dir_root, MKDIR, "EACCES", lambda b: f"*{_TREE[9]}",
             unprivileged=True,
             description="mkdir -p of a 3600-byte path, the last level an earlier run made recreated as root"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
def _good(setup):
    def noise(base: Path, run: int) -> None:  # noqa: ARG001
        setup(base, False)
    return noise


MKTEMP_SH = r"""cd "$1" &&
d=$(mktemp -d "$1/run dir.XXXXXXXX") &&
for t in "part one.XXXXXX" "-tab	XXXXXX" "new
line.XXXXXX"; do
  f=$(mktemp -p "$d" -- "$t") && printf 'chunk of %s\n' "$t" > "$f" && cat -- "$f" >> "$d/all parts"
done &&
mv -- "$d/all parts" "$1/out/combined" && rm -rf -- "$d"
"""


def _mktemp_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _dirs(base, "out")


def _odd_names() -> list[str]:
    """Upload names of a run: odd characters, a random part each run (so the listing order differs)."""
    t = token
    return [f"upload {t(3)}.txt", f"-dash {t(3)}", f"new\nline {t(3)}", f"{CAFE} {t(3)}", f"tab\t{t(3)}",
            f"Case {t(2)}", f"trailing {t(2)}.", f"long {'L' * 180} {t(3)}"]


def _tree_noise(base: Path, run: int) -> None:  # noqa: ARG001
    names = list(enumerate(_odd_names()))
    random.shuffle(names)  # created in a different order each run
    for i, n in names:
        sub = ("a dir", "b dir", f"{CAFE} dir")[i % 3]  # each kind of name in its own directory every run
        _write(base / "tree" / sub / n, _text(n.split(" ")[0], 20))
    _dirs(base, "out")


def _find_argv(b: Path) -> list[str]:
    return ["/usr/bin/find", f"{b}/tree", "-type", "f", "-size", "-4k", "-fprint0", f"{b}/out/list"]


def _tar_argv(b: Path) -> list[str]:
    return shell_argv('cd "$1" && tar -cf "out/odd names.tar" tree && mkdir "out/x" && '
               'tar -xf "out/odd names.tar" -C "out/x" && tar -tf "out/odd names.tar" > "out/toc"', str(b))


def _rsync_noise_argv(b: Path) -> list[str]:
    return ["/usr/bin/rsync", "-a", f"{b}/tree/", f"{b}/mirror/"]


FWALK_PY = r"""import os, sys
n = 0
for root, dirs, files, rootfd in os.fwalk(sys.argv[1] + '/tree'):
    for f in files:
        st = os.stat(f'/proc/self/fd/{rootfd}/{f}')  # through the walk's directory fd
        n += st.st_size
with open(sys.argv[1] + '/out/total', 'w') as out:
    out.write(f'{n}\n')
"""


def _fwalk_noise(base: Path, run: int) -> None:
    _tree_noise(base, run)
    _write(base / "walk.py", FWALK_PY)


HARDLINK_SH = r"""d=$(mktemp -d "$1/stage XXXXXX") &&
cp -a "$1/src/." "$d/" && ls -li -- "$d" > "$1/out/inodes" && sha256sum -- "$d"/* > "$1/out/sums" &&
rm -rf -- "$d"
"""


def _hardlink_noise(base: Path, run: int) -> None:  # noqa: ARG001
    src = base / "src"
    _write(src / "data\nfile.bin", _text("data", 200))
    os.link(src / "data\nfile.bin", src / "-hard link")
    os.link(src / "data\nfile.bin", src / f"{CAFE} link")
    os.symlink("-hard link", src / "sym link")
    _dirs(base, "out")


SHA_NOISE_SH = r"""cd "$1/data" && sha256sum -- * > ../SUMS && sha256sum -c --quiet ../SUMS"""


def _sha_noise(base: Path, run: int) -> None:  # noqa: ARG001
    for n in _odd_names():
        _write(base / "data" / n.replace("/", "_"), _text(n, 30))


QUIET_THIRTYSECOND: list[NoAnomalyCase] = [
    NoAnomalyCase("t32_mktemp_odd_templates", lambda b: shell_argv(MKTEMP_SH, str(b)), _mktemp_noise,
                  description="mktemp -d and mktemp -p with spaces, a tab, a newline and a leading dash in the "
                              "templates: random names each run"),
    NoAnomalyCase("t32_find_odd_names_order", _find_argv, _tree_noise,
                  description="find -fprint0 over upload names with odd characters, random each run (their order "
                              "in the directory differs)"),
    NoAnomalyCase("t32_tar_odd_names_roundtrip", _tar_argv, _tree_noise,
                  description="tar -cf, -xf and -tf of odd names (a newline, not UTF-8, over 100 bytes: GNU long "
                              "names), random each run"),
    NoAnomalyCase("t32_rsync_odd_names", _rsync_noise_argv, _tree_noise,
                  description="rsync -a of odd names, random each run, through its random temporary names"),
    NoAnomalyCase("t32_python_fwalk_proc_fd", lambda b: [PY3, "-S", f"{b}/walk.py", str(b)], _fwalk_noise,
                  description="os.fwalk over odd names, each stat through /proc/self/fd/N/<name>"),
    NoAnomalyCase("t32_cp_hardlinks_random_stage", lambda b: shell_argv(HARDLINK_SH, str(b)), _hardlink_noise,
                  description="cp -a of hard links (a newline, not UTF-8, a leading dash) into a mktemp stage"),
    NoAnomalyCase("t32_sha256sum_newline_names", lambda b: shell_argv(SHA_NOISE_SH, str(b)), _sha_noise,
                  description="sha256sum and sha256sum -c of random odd names (escaped newlines, a tab)"),
]


def quiet_teardown() -> None:
    """Nothing to undo: no case mounts anything or touches files outside its directory."""


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
