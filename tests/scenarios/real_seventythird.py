"""A seventy-third set of real programs: **embedded state stores that journal and lock** -- the
``sqlite3`` shell and python's sqlite3 module (rollback journal, WAL with its -wal/-shm files, a
database another process holds locked, a directory the journal cannot be created in), and ``git``
on local repositories (hooks, packed refs, ownership checks, the index, auto-gc).

Fault cases (``REAL_SEVENTYTHIRD``): three good runs and the bad run, each run from a fresh setup.
``extra["says"]``, where given, is text of the message the bad run writes (stderr) that the named
event or the output after it (``then_wrote``) must carry; ``extra["once"]``: the path of a call
that fails again and again in one retry loop that never gets past it, which must be one anomaly.
Every git run has HOME a directory of the case's own, ``GIT_CONFIG_NOSYSTEM=1`` and ``-c
user.name=... -c user.email=...``, so no machine config takes part. The git faults run from a job
script (``sh -c '... exec git ...'``, the program named ``sh``): the faults are new, their errnos
(ENOENT, none) are not, for git. What ``strace -f`` shows each bad run doing (sqlite 3.40.1, git 2.39.5, python
3.11, dash 0.5.12, Linux 6.x), written before the tool was run:

- ``sqlite3 B/state/jobs.db "insert ...; select ..."`` where ``jobs.db-journal`` is a dangling
  symlink an admin left (pointing into a ramdisk that is gone): the hot-journal checks
  ``newfstatat(".../jobs.db-journal") = -1 ENOENT`` (the good runs' too: stat follows the link),
  then, for the insert, ``openat(".../state/jobs.db-journal", O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC) =
  -1 ELOOP`` (sqlite opens every file O_NOFOLLOW) and again ``O_RDONLY|O_NOFOLLOW`` = ELOOP; "Error:
  stepping, unable to open database file (14)", exit 1;
- the same insert where the state directory is immutable (``chattr +i``, a snapshot tool's
  freeze left on): the database opens O_RDWR (its own inode is not immutable), then
  ``openat(".../state/jobs.db-journal", O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC, 0644) = -1 EPERM`` and
  the read-only retry ``= -1 ENOENT``; "unable to open database file (14)", exit 1;
- python3's sqlite3 module claiming a row of a WAL-mode queue (``timeout=0.3``) while another
  process (a stuck worker, outside the recording) holds a write transaction (``BEGIN IMMEDIATE``):
  the -wal and -shm files open, then the WAL write lock on the -shm file,
  ``fcntl(<queue.db-shm>, F_SETLK, {F_WRLCK, start=120, len=1}) = -1 EAGAIN``, retried 13 times
  with sleeps (busy handler) over 0.3 s, never got; "database is locked", exit 1;
- ``git commit -qam ...`` with a pre-commit hook whose shebang names a venv's python3 that was
  removed: ``access(".git/hooks/pre-commit", X_OK) = 0``, a fork, and in the child
  ``execve(".git/hooks/pre-commit") = -1 ENOENT`` (the kernel's answer for the missing
  interpreter is ENOENT at the hook's own path); the child reports the errno to git through a
  pipe (``write(4, "\\4\\0\\0\\0\\2\\0\\0\\0", 8)``, fd 4 a pipe: that is the named process's first
  write, so ``then_wrote`` is these bytes, not git's message -- no ``says`` here), then git writes
  "fatal: cannot run .git/hooks/pre-commit: No such file or directory", exit 1;
- ``git log --oneline -3 main`` after the repository's packed-refs was lost (every ref was
  packed by ``git pack-refs --all``; a backup left the file out): the ref lookup's
  ``newfstatat(".git/main") = -1 ENOENT`` (good runs too), then
  ``openat(".git/packed-refs", O_RDONLY) = -1 ENOENT`` where every good run got the file, then the
  remaining DWIM lookups (refs/main, refs/tags/main, refs/heads/main ...) each ENOENT with a
  ``newfstatat(".git/packed-refs") = -1 ENOENT``; "fatal: ambiguous argument 'main': unknown
  revision", exit 128;
- ``git status --porcelain`` in a work tree whose git directory is kept apart (``GIT_DIR`` and
  ``GIT_WORK_TREE`` exported by the job script) after the git directory was moved:
  ``newfstatat(".../state.git") = -1 ENOENT`` where every good run's was 0, then
  ``newfstatat(".../state.git/HEAD", AT_SYMLINK_NOFOLLOW) = -1 ENOENT``; "fatal: not a git
  repository: '.../state.git'", exit 128;
- ``git status --porcelain=v1 --branch`` as nobody in a checkout whose top directory a restore
  left root's (the good runs: nobody's): git stats the work tree
  (``newfstatat(".../repo", AT_SYMLINK_NOFOLLOW) = 0``), ``geteuid() = 65534``, reads its config
  again for ``safe.directory`` (HOME's files ENOENT, as at its start) and writes "fatal: detected
  dubious ownership in repository at '.../repo'" to stderr, exit 128 -- no call fails: the
  divergence is named by that write (stderr is /dev/null here).

Noise cases (``QUIET_SEVENTYTHIRD``): five good runs each, every run diffed against the other
four; same output and exit status every run. What ``strace -f`` showed varying:

- ``sqlite3 ... select`` of a WAL database where runs 1 and 3 find the -wal and -shm files an
  earlier writer left (it exited without closing: its last commit is only in the WAL):
  ``newfstatat(-wal) = 0`` instead of ENOENT, the WAL read and its index rebuilt in -shm, a
  checkpoint at close (writes to the database, 3 fsyncs; none in the other runs) and the unlink
  of both, as in every run;
- the ``sqlite3`` shell inserting into a rollback-journal database where runs 1 and 3 find the
  hot journal of a writer that died mid-transaction (pages spilled): ``newfstatat(-journal) = 0``,
  the journal opened read-only, then O_RDWR, the pages written back, fsync, its unlink, then the
  insert's own journal as in every run;
- python3's sqlite3 module appending 300 rows in WAL mode with ``wal_autocheckpoint`` from the
  job's config (runs 1 and 3: 50 pages, so checkpoints -- database writes, more fsyncs (45 against
  39) -- inside the run; others: 10000, none until the close);
- ``git commit -qam ...`` (``gc.autoDetach=false``) where runs 0, 2 and 4 have
  ``gc.autoPackLimit=2`` and three packs: the child ``git maintenance run --auto --quiet`` then
  runs ``git gc --auto`` (pack-refs, reflog expire, repack -A with pack-objects, prune, worktree
  prune, rerere gc: 10 processes, the three old packs deleted and stat-ed ENOENT after) -- other
  runs: the maintenance child looks and exits (2 processes). Each run's setup commits under dates of its own, so no two
  runs share a pack name (a collision in one second made one run's deleted pack another's kept
  one: see the report). Three gc runs, not two: gc's temporaries have mkstemp names
  (``objects/pack/tmp_idx_cfbauu``), and with two, a gc run held out had one gc sibling, nothing
  to learn the name from, and a name of one character class is no random-looking token
  (docs/diff-json.md) -- one session in four reported ``openat .../tmp_idx_cfbauu``;
- ``git status --porcelain`` with ``core.untrackedCache=true``: every run takes index.lock; warm
  in runs 1 and 3 (an earlier status wrote the UNTR extension: no directory of the work tree
  listed, index.lock unlinked), cold in the others (``.``, ``logs/``, ``tmp/`` and below opened
  O_DIRECTORY and listed, the index written and index.lock renamed over it);
- ``git status --porcelain`` where runs 0, 2 and 4 find the tracked files' mtimes changed since
  the index was written (a checkout tool touched them, contents the same): the six files opened
  and hashed again, index.lock written and renamed; runs 1 and 3 only stat them and unlink
  index.lock;
- ``git add -A && git commit -q`` of other contents each run (other blob, tree and commit object
  names under .git/objects/xx/, other tmp_obj_ names, another date from the run's job.env), HOME
  holding a .gitconfig in runs 1 and 3 (opened and read) and none in the others (access ENOENT);
  the contents chosen so that no run's objects fall in objects/17 (next case);
- the same commit where the new blob of runs 1 and 3 is named ``17...`` (its contents chosen so):
  the commit's ``git maintenance run --auto`` counts loose objects by sampling one directory,
  ``openat(".git/objects/17", O_DIRECTORY) = 3`` and its listing there, ``= -1 ENOENT`` in runs
  0, 2 and 4 -- which object names a run makes is as much noise as the names themselves (in an
  earlier draft whose contents held the time, one run in five did this by chance).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from .files import NOBODY_UID, write_file
from .harness import PY, NoAnomalyCase, Scenario, argv_in, sh_argv

OPENS = frozenset({"openat", "open", "creat"})
EXECS = frozenset({"execve", "execveat"})
LOCKS = frozenset({"fcntl", "fcntl64"})
STATS = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
WRITES = frozenset({"write", "pwrite64", "writev"})
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
RUNS = 5  # noise cases: each run against the other four
SQLITE3 = "/usr/bin/sqlite3"

_PROCS: list[subprocess.Popen] = []
_IMMUTABLE: list[Path] = []


def stop_helpers(_base: Path | None = None) -> None:
    """Stop every helper a setup started (each by its own process group) and lift every
    immutable flag a setup set, so the case's directory can be removed."""
    while _PROCS:
        proc = _PROCS.pop()
        with contextlib.suppress(Exception):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(Exception):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    while _IMMUTABLE:
        path = _IMMUTABLE.pop()
        if path.exists():
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def _py(code: str, *args: str) -> None:
    """Run a setup step in python3 (outside the recording); a failure raises."""
    subprocess.run([*PY, "-c", code, *args], check=True, capture_output=True, env=ENV)


def _git_env(base: Path) -> dict[str, str]:
    return {**ENV, "HOME": str(base / "home"), "GIT_CONFIG_NOSYSTEM": "1"}


GIT_ID = ["-c", "user.name=Job Runner", "-c", "user.email=job@example.com", "-c", "init.defaultBranch=main"]


def _git(base: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", *GIT_ID, *args], check=True, capture_output=True, cwd=cwd or base / "repo",
                   env=env or _git_env(base))


def _repo(base: Path, commits: int = 2, files: int = 3) -> Path:
    """B/repo with `files` tracked files and `commits` commits; B/home an empty HOME."""
    (base / "home").mkdir(exist_ok=True)
    repo = base / "repo"
    repo.mkdir()
    _git(base, "init", "-q", ".")
    for c in range(commits):
        for f in range(files):
            write_file(repo / f"f{f}.txt", "".join(f"row {f} {c} {k}\n" for k in range(20 + f)))
        _git(base, "add", "-A")
        _git(base, "commit", "-q", "-m", f"state {c}", env={**_git_env(base), "GIT_AUTHOR_DATE": f"@{1700000000 + c}",
                                                              "GIT_COMMITTER_DATE": f"@{1700000000 + c}"})
    return repo


# --- fault cases -------------------------------------------------------------------------------------------------------
SQL_INSERT = "insert into runs(name) values ('nightly'); select count(*) from runs;"

MAKE_DB_PY = r"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("create table runs(id integer primary key, name text)")
c.executemany("insert into runs(name) values (?)", [("run%04d" % i + "x" * 200,) for i in range(int(sys.argv[2]))])
c.commit()
c.close()
"""


def _sqlite_db(base: Path, rows: int = 40) -> Path:
    (base / "state").mkdir()
    db = base / "state" / "jobs.db"
    _py(MAKE_DB_PY, str(db), str(rows))
    return db


def _journal_link_setup(base: Path, bad: bool) -> None:
    db = _sqlite_db(base)
    if bad:  # an admin pointed the journal at a ramdisk that is gone
        os.symlink("/run/tb73-ramdisk/jobs.db-journal", str(db) + "-journal")


def _immutable_setup(base: Path, bad: bool) -> None:
    _sqlite_db(base)
    if bad:  # a snapshot tool's freeze left on the directory
        state = base / "state"
        _IMMUTABLE.append(state)
        done = subprocess.run(["chattr", "+i", str(state)], capture_output=True, text=True)
        if done.returncode != 0:
            import pytest

            pytest.skip(f"chattr +i is refused on {state}'s file system here: {done.stderr.strip()}")


MAKE_QUEUE_PY = r"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("pragma journal_mode=wal")
c.execute("create table q(id integer primary key, job text, state text)")
c.executemany("insert into q(job, state) values (?, 'new')", [("job%d" % i,) for i in range(20)])
c.commit()
c.close()
"""

# the stuck worker: holds a write transaction until it is stopped
HOLD_PY = r"""
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("begin immediate")
c.execute("update q set state = 'held' where id = 1")
open(sys.argv[2], "w").close()
time.sleep(120)
"""

CLAIM_PY = r"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1] + "/state/queue.db", timeout=0.3)
n = c.execute("select count(*) from q where state = 'new'").fetchone()[0]
c.execute("update q set state = 'done' where id = (select min(id) from q where state = 'new')")
c.commit()
c.close()
print("claimed one of", n)
"""


def _queue_locked_setup(base: Path, bad: bool) -> None:
    (base / "state").mkdir()
    db = base / "state" / "queue.db"
    _py(MAKE_QUEUE_PY, str(db))
    if bad:
        ready = base / "held"
        _PROCS.append(subprocess.Popen([*PY, "-c", HOLD_PY, str(db), str(ready)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                                       start_new_session=True))
        deadline = time.monotonic() + 30
        while not ready.exists():
            if time.monotonic() > deadline or _PROCS[-1].poll() is not None:
                raise RuntimeError("the lock holder did not start")
            time.sleep(0.02)


GIT_SH = 'export HOME="$1/home" GIT_CONFIG_NOSYSTEM=1; cd "$1/repo" && exec git -c user.name="Job Runner" ' \
         '-c user.email=job@example.com '
COMMIT_SH = GIT_SH + 'commit -qam "nightly state"'
LOG_MAIN_SH = GIT_SH + 'log --oneline -3 main'
STATUS_BRANCH_SH = GIT_SH + 'status --porcelain=v1 --branch'
# a work tree whose git directory is kept apart (GIT_DIR / GIT_WORK_TREE from the job's environment)
GIT_DIR_SH = ('export HOME="$1/home" GIT_CONFIG_NOSYSTEM=1 GIT_DIR="$1/state.git" GIT_WORK_TREE="$1/work"; '
              'cd "$1/work" && exec git status --porcelain')


def _hook_setup(base: Path, bad: bool) -> None:
    repo = _repo(base)
    venv = base / "venv" / "bin"
    if not bad:  # the bad run's venv was removed
        venv.mkdir(parents=True)
        (venv / "python3").symlink_to("/usr/bin/python3")
    write_file(repo / ".git" / "hooks" / "pre-commit", f"#!{venv}/python3 -S\nimport sys\nsys.exit(0)\n", 0o755)
    write_file(repo / "f0.txt", "changed for tonight\n")


def _packed_refs_setup(base: Path, bad: bool) -> None:
    repo = _repo(base, commits=3)
    _git(base, "tag", "v1")
    _git(base, "pack-refs", "--all")
    if bad:  # a backup left packed-refs out
        (repo / ".git" / "packed-refs").unlink()


def _ownership_setup(base: Path, bad: bool) -> None:
    repo = _repo(base)
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), NOBODY_UID, NOBODY_UID)
    if bad:  # a restore left the checkout's top directory root's
        os.chown(repo, 0, 0)


def _git_dir_setup(base: Path, bad: bool) -> None:
    (base / "home").mkdir()
    _git(base, "init", "-q", "--bare", str(base / "state.git"), cwd=base)
    work = base / "work"
    for f in range(3):
        write_file(work / f"f{f}.txt", f"tracked {f}\n")
    env = {**_git_env(base), "GIT_DIR": str(base / "state.git"), "GIT_WORK_TREE": str(work),
           "GIT_AUTHOR_DATE": "@1700000000", "GIT_COMMITTER_DATE": "@1700000000"}
    _git(base, "add", "-A", cwd=work, env=env)
    _git(base, "commit", "-q", "-m", "state", cwd=work, env=env)
    if bad:  # the git directory was moved; the job's GIT_DIR still names the old place
        (base / "state.git").rename(base / "state.git.moved")


def _sc(name, program, argv, setup, probe, errno, path, *, unprivileged=False, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=stop_helpers,
                    unprivileged=unprivileged, description=description, extra=extra)


REAL_SEVENTYTHIRD: list[Scenario] = [
    _sc("t73_sqlite3_journal_is_dangling_symlink", "sqlite3 (insert; the -journal a dangling symlink)",
        argv_in([SQLITE3, "{b}/state/jobs.db", SQL_INSERT]), _journal_link_setup, OPENS, "ELOOP",
        lambda b: f"{b}/state/jobs.db-journal", says="unable to open database file",
        description="sqlite opens its journal O_NOFOLLOW: a symlink there is refused, the insert fails"),
    _sc("t73_sqlite3_state_dir_immutable", "sqlite3 (insert; the database directory chattr +i)",
        argv_in([SQLITE3, "{b}/state/jobs.db", SQL_INSERT]), _immutable_setup, OPENS, "EPERM",
        lambda b: f"{b}/state/jobs.db-journal", says="unable to open database file",
        description="the journal cannot be created in an immutable directory: EPERM, the insert fails"),
    _sc("t73_python_sqlite_wal_queue_write_lock_held", "python3 (sqlite3 module: a WAL queue, timeout 0.3 s)",
        lambda b: [*PY, "-c", CLAIM_PY, str(b)], _queue_locked_setup, LOCKS, "EAGAIN",
        lambda b: f"{b}/state/queue.db-shm", says="database is locked", once="*/state/queue.db-shm",
        description="another process holds the WAL write lock: fcntl EAGAIN retried, 'database is locked'"),
    _sc("t73_git_pre_commit_hook_interpreter_gone", "sh (git commit -qam; the hook's venv python3 removed)",
        sh_argv(COMMIT_SH), _hook_setup, EXECS, "ENOENT", lambda b: "*.git/hooks/pre-commit",
        description="git runs its pre-commit hook: the shebang's interpreter is gone, execve ENOENT"),
    _sc("t73_git_packed_refs_lost", "sh (git log main; packed-refs lost)",
        sh_argv(LOG_MAIN_SH), _packed_refs_setup, OPENS, "ENOENT", lambda b: "*.git/packed-refs",
        says="ambiguous argument 'main'",
        description="every ref lived in packed-refs, which is gone: main resolves to nothing"),
    _sc("t73_git_status_dubious_ownership", "sh (git status as nobody; the checkout's top directory root's)",
        sh_argv(STATUS_BRANCH_SH), _ownership_setup, WRITES, None, lambda b: "/dev/null", unprivileged=True,
        says="dubious ownership",
        description="git refuses a work tree another user owns (safe.directory): no call fails, its message"),
    _sc("t73_git_dir_env_names_moved_repository", "sh (git status with GIT_DIR/GIT_WORK_TREE; the git dir moved)",
        sh_argv(GIT_DIR_SH), _git_dir_setup, STATS, "ENOENT", lambda b: f"{b}/state.git",
        says="not a git repository",
        description="GIT_DIR names a git directory that is not there any more: its stat ENOENT, git gives up"),
]


# --- good runs whose store differs -------------------------------------------------------------------------------------
WAL_DB_PY = r"""
import os, sqlite3, sys
db, leave = sys.argv[1], sys.argv[2] == "1"
c = sqlite3.connect(db)
c.execute("pragma journal_mode=wal")
c.execute("create table ev(id integer primary key, body text)")
c.executemany("insert into ev(body) values (?)", [("event %d " % i * 8,) for i in range(200)])
c.commit()
c.executemany("insert into ev(body) values (?)", [("late %d " % i * 8,) for i in range(30)])
c.commit()
if leave:  # the writer died: its last commit is in the WAL only, -wal and -shm stay
    os._exit(0)
c.close()
"""

HOT_JOURNAL_PY = r"""
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("pragma cache_size=5")
c.execute("begin")
c.execute("update runs set name = name || '-reprocessed'")
os._exit(0)  # died mid-transaction, pages spilled: a hot journal
"""

CKPT_PY = r"""
import sqlite3, sys
b = sys.argv[1]
pages = int(open(b + "/etc/autocheckpoint").read())
c = sqlite3.connect(b + "/state/metrics.db")
c.execute("pragma journal_mode=wal")
c.execute("pragma wal_autocheckpoint=%d" % pages)
c.execute("create table if not exists m(id integer primary key, host text, v blob)")
for i in range(300):
    c.execute("insert into m(host, v) values (?, ?)", ("host%03d" % (i % 40), bytes(900)))
    if i % 10 == 9:
        c.commit()
c.commit()
print(c.execute("select count(*) from m").fetchone()[0])
c.close()
"""

GC_COMMIT_SH = GIT_SH + '-c gc.autoDetach=false commit -qam "nightly state"'
STATUS_SH = GIT_SH + 'status --porcelain'
# job.env: the run's commit date (each run its own day)
ADD_COMMIT_SH = ('. "$1/job.env"; export HOME="$1/home" GIT_CONFIG_NOSYSTEM=1; cd "$1/repo" && git add -A && '
                 'exec git -c user.name="Job Runner" -c user.email=job@example.com commit -qm "nightly state"')

SOME = (1, 3)  # the runs that differ from the other three
# auto-gc's runs: three of five, so that a run held out has two siblings that gc'd too (the mkstemp
# names of gc's temporaries, tmp_idx_XXXXXX and the like, are learned between good runs)
GC_RUNS = (0, 2, 4)


def _wal_left_setup(base: Path, run: int) -> None:
    (base / "state").mkdir()
    _py(WAL_DB_PY, str(base / "state" / "events.db"), "1" if run in SOME else "0")


def _hot_journal_setup(base: Path, run: int) -> None:
    db = _sqlite_db(base, rows=400)
    if run in SOME:
        _py(HOT_JOURNAL_PY, str(db))
        assert Path(str(db) + "-journal").exists(), "the dead writer left no journal"


def _ckpt_setup(base: Path, run: int) -> None:
    (base / "state").mkdir()
    write_file(base / "etc" / "autocheckpoint", "50\n" if run in SOME else "10000\n")


def _gc_setup(base: Path, run: int) -> None:
    repo = _repo(base, commits=1)
    for k in range(3):  # three packs
        write_file(repo / f"extra{k}.txt", "".join(f"pack {k} line {n}\n" for n in range(50)))
        _git(base, "add", "-A")
        # each run's own dates: its own object and pack names (two setups in one second would
        # otherwise make the same packs, and a pack another run kept is no pack of this run's)
        when = f"@{1700100000 + 1000 * run + k}"
        _git(base, "commit", "-q", "-m", f"extra {k}", env={**_git_env(base), "GIT_AUTHOR_DATE": when,
                                                           "GIT_COMMITTER_DATE": when})
        _git(base, "repack", "-d", "-q")
    if run in GC_RUNS:
        _git(base, "config", "gc.autoPackLimit", "2")
    write_file(repo / "f0.txt", f"tonight's state {run % 2}\n")


def _untracked_setup(base: Path, run: int) -> None:
    repo = _repo(base, commits=1)
    _git(base, "config", "core.untrackedCache", "true")
    for d in ("logs", "tmp/a", "tmp/b"):
        write_file(repo / d / "scratch.txt", f"untracked in {d}\n")
    time.sleep(1.1)  # no racily clean entries: the index is newer than every file
    _git(base, "update-index", "--refresh")
    if run in SOME:  # an earlier status warmed the untracked cache
        _git(base, "status", "--porcelain")


def _refresh_setup(base: Path, run: int) -> None:
    repo = _repo(base, commits=1, files=6)
    time.sleep(1.1)
    _git(base, "update-index", "--refresh")
    _git(base, "status", "--porcelain")
    if run not in SOME:  # a checkout tool touched the files: same contents, other mtimes
        later = time.time() + 5
        for f in range(6):
            os.utime(repo / f"f{f}.txt", (later, later))


# the salts of f1.txt's contents, run by run: with them no run's new objects fall in objects/17
# (git's loose-object sample for auto-gc) -- NAMES_SALTS --, or runs 1 and 3 have one there (a blob
# 17...) and the others none -- SAMPLE_SALTS (checked against git 2.39, sha1 object names)
NAMES_SALTS = (0, 0, 0, 0, 0)
SAMPLE_SALTS = (0, 265, 0, 79, 0)


def _commit_setup_of(salts: tuple[int, ...], config: tuple[int, ...]):
    """Each run commits contents of its own under a date of its own (so its object names are its
    own, and the same every time the set runs: `salts` chose them, see the module's docstring);
    HOME holds a .gitconfig in the runs of `config`."""
    def setup(base: Path, run: int) -> None:
        repo = _repo(base, commits=1)
        when = f"@{1700200000 + 86400 * run}"
        write_file(base / "job.env", f"export GIT_AUTHOR_DATE={when} GIT_COMMITTER_DATE={when}\n")
        write_file(repo / "f1.txt", f"run {run} state {salts[run]}\n")
        write_file(repo / "new" / f"report{run}.txt", f"report of run {run}\n")
        if run in config:
            write_file(base / "home" / ".gitconfig", "[core]\n\tautocrlf = false\n[color]\n\tui = never\n")
    return setup


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYTHIRD: list[NoAnomalyCase] = [
    _noise("t73_sqlite3_wal_left_by_dead_writer_recovered", argv_in([SQLITE3, "{b}/state/events.db",
                                                                      "select count(*), max(id) from ev;"]),
           _wal_left_setup, "a WAL database whose -wal/-shm an earlier writer left in two runs: recovered, checkpointed"),
    _noise("t73_sqlite3_hot_journal_rolled_back", argv_in([SQLITE3, "{b}/state/jobs.db", SQL_INSERT]),
           _hot_journal_setup, "a dead writer's hot journal found and rolled back in two runs of five"),
    _noise("t73_python_sqlite_wal_autocheckpoint_or_not", lambda b: [*PY, "-c", CKPT_PY, str(b)], _ckpt_setup,
           "300 WAL inserts: checkpoints inside the run in two runs (wal_autocheckpoint 50), none in the others"),
    _noise("t73_git_commit_auto_gc_repacks_or_not", sh_argv(GC_COMMIT_SH), _gc_setup,
           "git commit's auto maintenance: gc --auto repacks three packs in three runs, looks and exits in two"),
    _noise("t73_git_status_untracked_cache_warm_or_cold", sh_argv(STATUS_SH), _untracked_setup,
           "core.untrackedCache: warm in two runs (directories stat-ed), cold in three (listed, index rewritten)"),
    _noise("t73_git_status_index_refreshed_or_not", sh_argv(STATUS_SH), _refresh_setup,
           "tracked files touched in three runs: re-hashed and the index refreshed; stat-ed only in two"),
    _noise("t73_git_commit_other_objects_home_config_or_not", sh_argv(ADD_COMMIT_SH), _commit_setup_of(NAMES_SALTS, SOME),
           "a commit of other contents each run (object names, date), HOME's .gitconfig there in two runs"),
    _noise("t73_git_commit_object_lands_in_gc_sample_dir_or_not", sh_argv(ADD_COMMIT_SH),
           _commit_setup_of(SAMPLE_SALTS, ()),
           "a commit whose new blob is named 17... in two runs: auto-gc's look at objects/17 finds a directory"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the lock holder stopped, immutable flags lifted."""
    stop_helpers()
