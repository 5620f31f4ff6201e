"""Real Debian programs with one real fault each (the held-out set's kind of data).

Every case is recorded three times good and once bad with `tracer record` (library): the diff
of (good0, good1) against bad must name the fault at top 1 (syscall, errno, path), and the
diff of (good0, good1) against good2 must report no anomaly. The programs make mkstemp-style
temporary names (gcc/as ``/tmp/ccXXXXXX.s``, sort's ``sortXXXXXX``, sed's ``sedXXXXXX``, zip's
``ziXXXXXX``, git's ``tmp_obj_XXXXXX`` and per-run object names), use two-path syscalls
(rename, link), change the errno at a call the good runs also make, and write error messages
to stderr: each class of miss a real program shows. Nothing here names a program in the diff:
the expectations are what strace would show a person.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .catalog import mount_tmpfs, umount_after, write
from .harness import Scenario

NOBODY_UID = 65534


def own(path: Path, mode: int | None = None) -> Path:
    """Hand `path` (recursively) to nobody, so unprivileged runs can write there."""
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), NOBODY_UID, NOBODY_UID, follow_symlinks=False)
    os.chown(path, NOBODY_UID, NOBODY_UID)
    if mode is not None:
        path.chmod(mode)
    return path


def sh(cmd: str, cwd: Path | None = None, env: dict | None = None) -> None:
    subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": "/root", **(env or {})})


# --- gcc ------------------------------------------------------------------------------------
MAIN_C = '#include <stdio.h>\n#include "config.h"\nint main(void) { printf("%d\\n", LIMIT); return 0; }\n'


def gcc_header(base: Path, bad: bool) -> None:
    write(base / "main.c", MAIN_C)
    if not bad:
        write(base / "config.h", "#define LIMIT 4\n")


def gcc_outdir(base: Path, bad: bool) -> None:
    write(base / "main.c", MAIN_C)
    write(base / "config.h", "#define LIMIT 4\n")
    (base / "out").mkdir()
    own(base / "out", 0o555 if bad else 0o755)


def gcc_tmp_full(base: Path, bad: bool) -> None:
    write(base / "main.c", MAIN_C)
    write(base / "config.h", "#define LIMIT 4\n")
    mount_tmpfs(base / "tmp", "256k")
    if bad:
        sh(f"dd if=/dev/zero of={base}/tmp/filler bs=4k count=64")


# --- git ------------------------------------------------------------------------------------
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2026-11-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-11-01T00:00:00Z"}


def _repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    sh("git init -q -b main . && git config user.name t && git config user.email t@example.org", repo)
    write(repo / "a.txt", "one\n")
    sh("git add a.txt && git commit -q -m first", repo, GIT_ENV)
    write(repo / "a.txt", "one\ntwo\n")
    sh("git add a.txt", repo, GIT_ENV)
    return repo


def git_commit_readonly_objects(base: Path, bad: bool) -> None:
    repo = own(_repo(base))
    if bad:
        sh(f"chmod -R a-w {repo}/.git/objects")


def git_missing_object(base: Path, bad: bool) -> None:
    repo = _repo(base)
    if bad:  # the loose object of the first commit's blob (content-addressed: a fixed name)
        blob = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD:a.txt"], check=True,
                              capture_output=True, text=True).stdout.strip()
        (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()


# --- coreutils and friends -------------------------------------------------------------------
def _sort_input(base: Path) -> None:
    write(base / "in.txt", "".join(f"{(i * 7919) % 100003:06d} line\n" for i in range(60000)))
    (base / "tmp").mkdir()
    own(base, 0o755)


def sort_unreadable(base: Path, bad: bool) -> None:
    _sort_input(base)
    if bad:
        os.chown(base / "in.txt", 0, 0)
        (base / "in.txt").chmod(0o600)


def sort_tmp_readonly(base: Path, bad: bool) -> None:
    _sort_input(base)
    if bad:
        (base / "tmp").chmod(0o555)


def cp_missing_dir(base: Path, bad: bool) -> None:
    write(base / "a.txt", "payload\n" * 10)
    if not bad:
        (base / "out").mkdir()


def mv_target_readonly(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    write(base / "src" / "a.txt", "move me\n")
    (base / "dst").mkdir()
    own(base)
    if bad:
        (base / "dst").chmod(0o555)


def ln_missing_dir(base: Path, bad: bool) -> None:
    write(base / "a.txt", "link me\n")
    if not bad:
        (base / "links").mkdir()


def install_notdir(base: Path, bad: bool) -> None:
    write(base / "tool", "#!/bin/sh\n", 0o755)
    if bad:
        write(base / "bin", "not a directory\n")
    else:
        (base / "bin").mkdir()


def sed_inplace_readonly(base: Path, bad: bool) -> None:
    (base / "d").mkdir()
    write(base / "d" / "f.txt", "alpha\nbeta\n" * 50)
    own(base)
    if bad:
        (base / "d").chmod(0o555)


def tar_extract_readonly(base: Path, bad: bool) -> None:
    (base / "src" / "pkg").mkdir(parents=True)
    for i in range(3):
        write(base / "src" / "pkg" / f"m{i}.txt", f"member {i}\n")
    sh(f"tar -cf {base}/a.tar -C {base}/src pkg")
    mount_tmpfs(base / "dst", "1m", readonly=bad)


def tar_create_unreadable(base: Path, bad: bool) -> None:
    (base / "src").mkdir()
    for i in range(3):
        write(base / "src" / f"m{i}.txt", f"member {i}\n")
    own(base)
    if bad:
        os.chown(base / "src" / "m1.txt", 0, 0)
        (base / "src" / "m1.txt").chmod(0o600)


def gzip_readonly(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "ro", "1m")
    write(base / "ro" / "data.txt", "compress me\n" * 100)
    if bad:
        sh(f"mount -o remount,ro {base}/ro")


def tee_isdir(base: Path, bad: bool) -> None:
    if bad:
        (base / "log").mkdir()


def ls_notdir(base: Path, bad: bool) -> None:
    if bad:  # good runs: 'a' is missing (ENOENT); bad: 'a' is a file (ENOTDIR) at the same call
        write(base / "a", "file\n")


def make_missing_input(base: Path, bad: bool) -> None:
    (base / "proj").mkdir()
    write(base / "proj" / "Makefile", "out.txt: in.txt\n\tcp in.txt out.txt\n")
    if not bad:
        write(base / "proj" / "in.txt", "input\n")


def python_isdir(base: Path, bad: bool) -> None:
    write(base / "app.py", "import sys\nwith open(sys.argv[1], 'a') as fh:\n    fh.write('started\\n')\n")
    if bad:
        (base / "app.log").mkdir()


def perl_readonly(base: Path, bad: bool) -> None:
    (base / "out").mkdir()
    own(base)
    if bad:
        (base / "out").chmod(0o555)


def perl_module_search(base: Path, bad: bool) -> None:
    (base / "a").mkdir()
    (base / "b").mkdir()
    if not bad:  # good runs find it in the second include directory, after a miss in the first
        write(base / "b" / "Helper.pm", "package Helper;\nsub hello { 42 }\n1;\n")


def shared_library_search(base: Path, bad: bool) -> None:
    """A program linked against libhelper.so, found through LD_LIBRARY_PATH=a:b in b."""
    for d in ("a", "b", "src"):
        (base / d).mkdir()
    write(base / "src" / "helper.c", "int helper(void) { return 42; }\n")
    write(base / "src" / "prog.c", "int helper(void);\nint main(void) { return helper() == 42 ? 0 : 1; }\n")
    sh(f"gcc -shared -fPIC -o {base}/b/libhelper.so {base}/src/helper.c && "
       f"gcc -o {base}/prog {base}/src/prog.c -L{base}/b -lhelper")
    if bad:
        (base / "b" / "libhelper.so").unlink()


def zip_readonly(base: Path, bad: bool) -> None:
    write(base / "a.txt", "zip me\n" * 100)
    (base / "out").mkdir()
    own(base)
    if bad:
        (base / "out").chmod(0o555)


def find_unreadable(base: Path, bad: bool) -> None:
    for d in ("tree/x", "tree/sub/y"):
        (base / d).mkdir(parents=True)
    write(base / "tree" / "sub" / "y" / "f", "f\n")
    own(base)
    if bad:
        os.chown(base / "tree" / "sub", 0, 0)
        (base / "tree" / "sub").chmod(0o700)


def dd_full(base: Path, bad: bool) -> None:
    mount_tmpfs(base / "mnt", "256k")
    if bad:
        sh(f"dd if=/dev/zero of={base}/mnt/filler bs=4k count=60")


def awk_missing(base: Path, bad: bool) -> None:
    if not bad:
        write(base / "in.txt", "a b\nc d\n")


def sqlite_readonly(base: Path, bad: bool) -> None:
    (base / "db").mkdir()
    sh(f"sqlite3 {base}/db/x.db 'create table t(a)'")
    own(base)
    if bad:
        (base / "db").chmod(0o555)


def split_readonly(base: Path, bad: bool) -> None:
    write(base / "in.txt", "".join(f"{i}\n" for i in range(300)))
    (base / "parts").mkdir()
    own(base)
    if bad:
        (base / "parts").chmod(0o555)


def python_tempfile_rename(base: Path, bad: bool) -> None:
    """A writer that writes to tempfile.mkstemp and renames into place (the atomic idiom)."""
    write(base / "w.py", (
        "import os, sys, tempfile\n"
        "fd, tmp = tempfile.mkstemp(dir=sys.argv[1], prefix='.out.')\n"
        "os.write(fd, b'data\\n'); os.close(fd)\n"
        "os.rename(tmp, os.path.join(sys.argv[1], 'final', 'out.txt'))\n"))
    if not bad:
        (base / "final").mkdir()


def cc_missing_lib(base: Path, bad: bool) -> None:
    write(base / "m.c", "int f(void);\nint main(void) { return f(); }\n")
    write(base / "f.c", "int f(void) { return 0; }\n")
    (base / "lib").mkdir()
    sh(f"gcc -c -fPIC -o {base}/f.o {base}/f.c && ar rcs {base}/lib/libf.a {base}/f.o")
    if bad:
        (base / "lib" / "libf.a").unlink()


def git_status_unreadable_index(base: Path, bad: bool) -> None:
    repo = base / "repo"
    repo.mkdir()
    sh("git init -q -b main . && echo x > a && git add a && git commit -qm m", repo, GIT_ENV)
    own(base)
    if bad:
        os.chown(repo / ".git" / "index", 0, 0)
        (repo / ".git" / "index").chmod(0o600)


def perl_inplace_readonly(base: Path, bad: bool) -> None:
    (base / "d").mkdir()
    write(base / "d" / "f.txt", "alpha\n" * 20)
    own(base)
    if bad:
        (base / "d").chmod(0o555)


PY = ["/usr/bin/python3", "-S"]
REAL: list[Scenario] = [
    Scenario("gcc_missing_header", "gcc", lambda b: ["/usr/bin/gcc", "-c", f"{b}/main.c", "-o", f"{b}/main.o"],
             gcc_header, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/config.h",
             description="#include \"config.h\" deleted"),
    Scenario("gcc_output_dir_readonly", "gcc (nobody)", lambda b: ["/usr/bin/gcc", f"{b}/main.c", "-o", f"{b}/out/prog"],
             gcc_outdir, frozenset({"openat"}), "EACCES", lambda b: f"{b}/out/prog", unprivileged=True,
             description="output directory not writable: ld cannot create the program"),
    Scenario("gcc_tmpdir_full", "gcc, TMPDIR on a full tmpfs",
             lambda b: ["/bin/sh", "-c", f"TMPDIR={b}/tmp exec /usr/bin/gcc -c {b}/main.c -o {b}/main.o"],
             gcc_tmp_full, frozenset({"write", "openat", "pwrite64", "fallocate"}), "ENOSPC", lambda b: f"{b}/tmp/cc*",
             teardown=umount_after("tmp"), description="the compiler's temporary files hit ENOSPC"),
    Scenario("git_commit_readonly_objects", "git commit (nobody)", lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "commit", "-q", "-m", "second"],
             git_commit_readonly_objects, frozenset({"mkdir", "mkdirat", "openat"}), "EACCES", lambda b: f"{b}/repo/.git/objects/*",
             unprivileged=True, description="object store made read-only"),
    Scenario("git_missing_object", "git show", lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "show", "HEAD:a.txt"],
             git_missing_object, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/repo/.git/objects/??/*",
             description="a loose object deleted from the repository"),
    Scenario("sort_unreadable_input", "sort (nobody)", lambda b: ["/usr/bin/sort", "-S", "64K", "-T", f"{b}/tmp", f"{b}/in.txt", "-o", f"{b}/out.txt"],
             sort_unreadable, frozenset({"openat", "access", "faccessat", "faccessat2"}), "EACCES",
             lambda b: f"{b}/in.txt", unprivileged=True,
             description="input made unreadable; good runs spill sortXXXXXX temporaries"),
    Scenario("sort_tmp_readonly", "sort (nobody)", lambda b: ["/usr/bin/sort", "-S", "64K", "-T", f"{b}/tmp", f"{b}/in.txt", "-o", f"{b}/out.txt"],
             sort_tmp_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/tmp/sort*", unprivileged=True,
             description="temporary directory not writable: the mkstemp itself fails"),
    Scenario("cp_missing_dest_dir", "cp", lambda b: ["/usr/bin/cp", f"{b}/a.txt", f"{b}/out/a.txt"],
             cp_missing_dir, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/out/a.txt",
             description="destination directory missing"),
    Scenario("mv_target_readonly", "mv (nobody)", lambda b: ["/usr/bin/mv", f"{b}/src/a.txt", f"{b}/dst/a.txt"],
             mv_target_readonly, frozenset({"renameat2", "renameat", "rename"}), "EACCES", lambda b: f"{b}/dst/a.txt",
             unprivileged=True, description="target directory not writable (two-path call: the target failed)"),
    Scenario("ln_missing_dir", "ln", lambda b: ["/usr/bin/ln", f"{b}/a.txt", f"{b}/links/a.txt"],
             ln_missing_dir, frozenset({"linkat", "link"}), "ENOENT", lambda b: f"{b}/links/a.txt",
             description="link's directory missing (two-path call: the target failed)"),
    Scenario("install_not_a_dir", "install", lambda b: ["/usr/bin/install", "-m", "0755", f"{b}/tool", f"{b}/bin/tool"],
             install_notdir, frozenset({"openat", "newfstatat", "statx", "unlink", "unlinkat"}), "ENOTDIR",
             lambda b: f"{b}/bin/tool", description="destination directory is a file"),
    Scenario("sed_inplace_readonly_dir", "sed -i (nobody)", lambda b: ["/usr/bin/sed", "-i", "s/alpha/gamma/", f"{b}/d/f.txt"],
             sed_inplace_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/d/sed*", unprivileged=True,
             description="sed -i cannot create its temporary beside the file"),
    Scenario("tar_extract_readonly", "tar -x", lambda b: ["/usr/bin/tar", "-xf", f"{b}/a.tar", "-C", f"{b}/dst"],
             tar_extract_readonly, frozenset({"mkdirat", "mkdir", "openat"}), "EROFS", lambda b: f"{b}/dst/pkg*",
             teardown=umount_after("dst"), description="extraction target is a read-only mount"),
    Scenario("tar_create_unreadable", "tar -c (nobody)", lambda b: ["/usr/bin/tar", "-cf", f"{b}/out.tar", "-C", f"{b}", "src"],
             tar_create_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/src/m1.txt", unprivileged=True,
             description="one member unreadable"),
    Scenario("gzip_readonly_mount", "gzip -k", lambda b: ["/usr/bin/gzip", "-kf", f"{b}/ro/data.txt"],
             gzip_readonly, frozenset({"openat"}), "EROFS", lambda b: f"{b}/ro/data.txt.gz",
             teardown=umount_after("ro"), description="directory remounted read-only"),
    Scenario("tee_is_a_directory", "sh | tee", lambda b: ["/bin/sh", "-c", f"echo hello | /usr/bin/tee {b}/log"],
             tee_isdir, frozenset({"openat"}), "EISDIR", lambda b: f"{b}/log",
             description="log path is a directory"),
    Scenario("ls_errno_change", "ls", lambda b: ["/usr/bin/ls", "-d", f"{b}/a/b"],
             ls_notdir, frozenset({"statx", "newfstatat", "lstat", "stat"}), "ENOTDIR", lambda b: f"{b}/a/b",
             description="good runs fail here too (ENOENT); the bad run's errno differs (ENOTDIR)"),
    Scenario("make_missing_input", "make", lambda b: ["/usr/bin/make", "-s", "-C", f"{b}/proj"],
             make_missing_input, frozenset({"newfstatat", "stat", "statx", "openat"}), "ENOENT",
             lambda b: f"{b}/proj/in.txt", description="a prerequisite deleted"),
    Scenario("python_is_a_directory", "python3 script", lambda b: [*PY, f"{b}/app.py", f"{b}/app.log"],
             python_isdir, frozenset({"openat"}), "EISDIR", lambda b: f"{b}/app.log",
             description="log path is a directory"),
    Scenario("perl_readonly_dir", "perl (nobody)",
             lambda b: ["/usr/bin/perl", "-e", 'open(my $f, ">", $ARGV[0]) or die "cannot write $ARGV[0]: $!\\n"; print $f "x\\n"',
                        f"{b}/out/log.txt"],
             perl_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/out/log.txt", unprivileged=True,
             description="log directory not writable"),
    Scenario("perl_module_search", "perl -I a -I b",
             lambda b: ["/usr/bin/perl", "-I", f"{b}/a", "-I", f"{b}/b", "-e", "use Helper; print Helper::hello()"],
             perl_module_search, frozenset({"openat", "newfstatat", "stat", "statx"}), "ENOENT",
             lambda b: f"{b}/b/Helper.pm",
             description="module deleted: the search-path miss good runs also have must not hide it"),
    Scenario("shared_library_search", "ld.so with LD_LIBRARY_PATH=a:b",
             lambda b: ["/usr/bin/env", f"LD_LIBRARY_PATH={b}/a:{b}/b", f"{b}/prog"],
             shared_library_search, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/b/libhelper.so",
             description="library deleted: good runs miss it in a/ too (learned), but found it in b/"),
    Scenario("cc_missing_library", "gcc -L lib -lf", lambda b: ["/usr/bin/gcc", "-o", f"{b}/m", f"{b}/m.c", f"-L{b}/lib", "-lf"],
             cc_missing_lib, frozenset({"openat", "newfstatat", "statx", "stat"}), "ENOENT", lambda b: f"{b}/lib/libf.*",
             description="the static library deleted: ld's search fails"),
    Scenario("git_status_unreadable_index", "git status (nobody)",
             lambda b: ["/usr/bin/git", "-C", f"{b}/repo", "status", "--short"],
             git_status_unreadable_index, frozenset({"openat"}), "EACCES", lambda b: f"{b}/repo/.git/index",
             unprivileged=True, description="the index owned by root, mode 0600"),
    Scenario("perl_inplace_readonly_dir", "perl -pi (nobody)",
             lambda b: ["/usr/bin/perl", "-pi", "-e", "s/alpha/beta/", f"{b}/d/f.txt"],
             perl_inplace_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/d/*", unprivileged=True,
             description="perl -i cannot create its XXxxxxxx temporary beside the file"),
    Scenario("zip_readonly_dir", "zip (nobody)", lambda b: ["/usr/bin/zip", "-q", f"{b}/out/a.zip", f"{b}/a.txt"],
             zip_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/out/*", unprivileged=True,
             description="output directory not writable (good runs write a ziXXXXXX temporary there)"),
    Scenario("find_unreadable_dir", "find (nobody)", lambda b: ["/usr/bin/find", f"{b}/tree"],
             find_unreadable, frozenset({"openat"}), "EACCES", lambda b: f"{b}/tree/sub", unprivileged=True,
             description="a subdirectory not readable"),
    Scenario("dd_disk_full", "dd", lambda b: ["/usr/bin/dd", "if=/dev/zero", f"of={b}/mnt/out.bin", "bs=4k", "count=8"],
             dd_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/out.bin",
             teardown=umount_after("mnt"), description="filesystem full"),
    Scenario("awk_missing_input", "awk", lambda b: ["/usr/bin/awk", "{print $2}", f"{b}/in.txt"],
             awk_missing, frozenset({"openat"}), "ENOENT", lambda b: f"{b}/in.txt",
             description="input file missing"),
    Scenario("split_readonly_dir", "split (nobody)", lambda b: ["/usr/bin/split", "-l", "100", f"{b}/in.txt", f"{b}/parts/p"],
             split_readonly, frozenset({"openat"}), "EACCES", lambda b: f"{b}/parts/pa*", unprivileged=True,
             description="output directory not writable"),
    Scenario("python_tempfile_rename", "python3 mkstemp + rename",
             lambda b: [*PY, f"{b}/w.py", str(b)],
             python_tempfile_rename, frozenset({"rename", "renameat", "renameat2"}), "ENOENT",
             lambda b: f"{b}/final/out.txt", description="rename target's directory missing"),
]
