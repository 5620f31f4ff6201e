"""A directory made on demand is one create, not a divergence.

git writes each loose object into its fan-out directory (`objects/ab/tmp_obj_XXXXXX`): the
create fails ENOENT when `objects/ab/` is missing, git makes it and creates again. Which
fan-out directories exist depends on the objects' hashes (the commit's hash on the time), so
good runs differ there (the fresh-clone CI's `git_commit_readonly_objects` good-vs-good miss).
Real programs recorded for real: git with every fan-out directory made beforehand against git
making them; a small program doing the same dance (one level, and nested levels made walking
up). The dance must be quiet in both directions; it must still be named when the mkdir fails,
when the second create fails, and when the ENOENT is not followed by the parent's mkdir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import ENV, record_run

from baseline.run.diff import diff_traces

# create DIR/SUB/obj exclusively (as git's create_tmpfile); on ENOENT, per DIR/mode (the bad
# run's state): make the parent (walking up when its own parent is missing too; `readonly`:
# made read-only) and create again, or (`give-up`) report and exit 1
CREATE_PY = ("import os, sys\n"
             "d, sub = sys.argv[1:3]\n"
             "mode = open(os.path.join(d, 'mode')).read() if os.path.exists(os.path.join(d, 'mode')) else 'make'\n"
             "path = os.path.join(d, sub, 'obj')\n"
             "def make(p):\n"
             "    try: os.mkdir(p, 0o555 if mode == 'readonly' else 0o755)\n"
             "    except FileNotFoundError:\n"
             "        make(os.path.dirname(p)); os.mkdir(p, 0o755)\n"
             "flags = os.O_RDWR | os.O_CREAT | os.O_EXCL\n"
             "try: fd = os.open(path, flags, 0o444)\n"
             "except FileNotFoundError:\n"
             "    if mode == 'give-up':\n"
             "        sys.exit('no directory for ' + path)\n"
             "    make(os.path.dirname(path))\n"
             "    fd = os.open(path, flags, 0o444)\n"
             "os.write(fd, b'object')\n"
             "os.close(fd)\n")
PY = ["/usr/bin/python3", "-S", "-c", CREATE_PY]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}


@pytest.fixture
def base():
    root = Path(f"/tmp/tracebase-made-on-demand.{os.getpid()}")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(mode=0o755)
    root.chmod(0o755)  # runs as nobody walk through it, whatever the umask
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _diff(recorder, tmp_path: Path, argv: list[str], prepare, bad_index: int, unprivileged: bool = False):
    """Three runs (prepare(i) before each); the run `bad_index` is diffed against the other two."""
    files = []
    for i in range(3):
        prepare(i)
        files.append(record_run(recorder, argv, tmp_path / f"run{i}.parquet", "good", unprivileged))
    return diff_traces(good=[f for i, f in enumerate(files) if i != bad_index], bad=files[bad_index])


def _git_repo(repo: Path, fan_out: bool) -> None:
    """A repository with a change staged; with `fan_out`, every objects/xx directory made."""
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir()
    env = {**ENV, **GIT_ENV, "HOME": str(repo)}
    for cmd in (["git", "init", "-q", "-b", "main", "."], ["git", "add", "a.txt"], ["git", "commit", "-q", "-m", "one"]):
        if cmd[1] == "add":
            (repo / "a.txt").write_text("one\n")
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "a.txt").write_text("one\ntwo\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, env=env, check=True, capture_output=True)
    if fan_out:
        for i in range(256):
            (repo / ".git" / "objects" / f"{i:02x}").mkdir(exist_ok=True)


@pytest.mark.parametrize("bad_index", [2, 0], ids=["bad run makes them", "good runs make them"])
def test_git_fan_out_directories_made_on_demand_are_quiet(recorder, base, tmp_path, bad_index):
    repo = base / "repo"
    argv = ["/usr/bin/git", "-C", str(repo), "commit", "-q", "-m", "second"]
    # the run diffed as bad makes its fan-out directories, the other two find them all (and the
    # other way round)
    report = _diff(recorder, tmp_path, argv, lambda i: _git_repo(repo, fan_out=(i == bad_index) != (bad_index == 2)),
                   bad_index)
    assert not report.anomaly, report.bifurcation


@pytest.mark.parametrize("sub", ["ab", "ab/cd/ef"], ids=["one level", "nested"])
@pytest.mark.parametrize("bad_index", [2, 0], ids=["bad run makes it", "good runs make it"])
def test_directory_made_on_demand_is_quiet(recorder, base, tmp_path, sub, bad_index):
    def prepare(i: int) -> None:
        shutil.rmtree(base / "ab", ignore_errors=True)
        if (i == bad_index) == (bad_index == 0):  # the bad run alone finds it, or alone makes it
            (base / sub).mkdir(parents=True)

    report = _diff(recorder, tmp_path, [*PY, str(base), sub], prepare, bad_index)
    assert not report.anomaly, report.bifurcation


# (mode, how the bad run's state differs, the event that must be named)
NAMED = [
    # the parent's mkdir fails: nobody may not write in the base directory
    ("make", "base read-only", ("mkdir", "EACCES", "ab")),
    # the mkdir succeeds, the create in the directory made fails (made read-only)
    ("readonly", "", ("openat", "EACCES", "ab/obj")),
    # no mkdir after the ENOENT: the program gives up
    ("give-up", "", ("openat", "ENOENT", "ab/obj")),
]


@pytest.mark.parametrize(("mode", "state", "named"), NAMED, ids=["mkdir fails", "second create fails", "no mkdir"])
def test_directory_not_made_is_still_named(recorder, base, tmp_path, mode, state, named):
    # the good runs make the directory on demand too: their dance drops out, the bad run's
    # broken one must not
    def prepare(i: int) -> None:
        shutil.rmtree(base / "ab", ignore_errors=True)
        base.chmod(0o755)
        (base / "mode").unlink(missing_ok=True)
        if i == 2:
            (base / "mode").write_text(mode)
            (base / "mode").chmod(0o644)
        base.chmod(0o555 if (i == 2 and state) else 0o777)

    try:
        report = _diff(recorder, tmp_path, [*PY, str(base), "ab"], prepare, 2, unprivileged=True)
    finally:
        base.chmod(0o755)
    bif = report.bifurcation
    assert report.anomaly and bif is not None
    assert (bif["probe"], bif["errno"], bif["path"]) == (named[0], named[1], f"{base}/{named[2]}"), bif


# --- the rule on traces written as the recorder writes them (no root needed) -------------------
# git commit's object write as recorded (tests/scenarios/real.py's git_commit_readonly_objects):
# mkstemp reads /dev/urandom for each name, so the retry's name is drawn after the mkdir.
OBJ = "/srv/repo/.git/objects"
URANDOM = [("openat", None, "/dev/urandom", "O_RDONLY"), ("read", None, "/dev/urandom", None),
           ("close", None, "/dev/urandom", None)]
HEAD = [("execve", None, "/usr/bin/git", None), ("openat", None, "/srv/repo/.git/index.lock", "O_RDWR|O_CREAT|O_EXCL")]
TAIL = [("write", None, f"{OBJ}/62/tmp_obj_WRITE", None), ("close", None, f"{OBJ}/62/tmp_obj_WRITE", None),
        ("link", None, f"{OBJ}/62/tmp_obj_WRITE", None), ("unlink", None, f"{OBJ}/62/tmp_obj_WRITE", None),
        ("rename", None, "/srv/repo/.git/index.lock", None), ("exit_group", None, None, None)]
CREATE = "O_RDWR|O_CREAT|O_EXCL"


def _object_write(found: bool, mkdir_errno: str | None = None, retry_errno: str | None = None) -> list[tuple]:
    if found:
        return [*URANDOM, ("openat", None, f"{OBJ}/62/tmp_obj_Ab3dE9", CREATE)]
    rows = [*URANDOM, ("openat", "ENOENT", f"{OBJ}/62/tmp_obj_Zq81xW", CREATE), ("mkdir", mkdir_errno, f"{OBJ}/62", None)]
    if mkdir_errno:
        return rows
    return [*rows, *URANDOM, ("openat", retry_errno, f"{OBJ}/62/tmp_obj_Kp0sT4", CREATE)]


def _trace(path: Path, rows: list[tuple], trace_id: str, pid: int) -> Path:
    import polars as pl

    from tracer.schema import write_table

    n = len(rows)
    df = pl.DataFrame(
        {"trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
         "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": ["git"] * n,
         "probe": [r[0] for r in rows], "depth": [0] * n, "ret": [-1 if r[1] else 0 for r in rows],
         "errno": [r[1] for r in rows], "path": [r[2] for r in rows], "arg": [r[3] for r in rows],
         "kind": ["good"] * n, "command": ["git"] * n},
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


def _synthetic(tmp_path: Path, good: list[list[tuple]], bad: list[tuple]):
    from baseline.run.allowlist import ExpectedErrors

    files = [_trace(tmp_path / f"g{i}.parquet", HEAD + rows + TAIL, f"g{i}", 10 + i) for i, rows in enumerate(good)]
    b = _trace(tmp_path / "b.parquet", HEAD + bad + TAIL, "b", 99)
    return diff_traces(files, b, expected=ExpectedErrors([], source="<test>"))


@pytest.mark.parametrize("bad_found", [False, True], ids=["bad run makes it", "good runs make it"])
def test_made_on_demand_rule_on_recorded_shape(tmp_path, bad_found):
    good = [_object_write(not bad_found), _object_write(not bad_found)]
    report = _synthetic(tmp_path, good, _object_write(bad_found))
    assert not report.anomaly, report.bifurcation


@pytest.mark.parametrize(("bad", "named"), [
    (_object_write(False, mkdir_errno="EACCES"), ("mkdir", "EACCES", f"{OBJ}/62")),
    (_object_write(False, retry_errno="EACCES"), ("openat", "EACCES", f"{OBJ}/62/tmp_obj_Kp0sT4")),
], ids=["mkdir fails", "second create fails"])
def test_made_on_demand_rule_still_names_a_failure(tmp_path, bad, named):
    # the good runs make the directory on demand as well
    report = _synthetic(tmp_path, [_object_write(False), _object_write(False)], bad)
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == named, bif
