"""Blind robustness battery, round forty-four: hostile or unusual process environments.

The commands run on a fresh machine under odd environments (HOME, TMPDIR, XDG/matplotlib
directories, locales, PATH, a removed or read-only current directory, umasks, closed standard
streams, a very long environment, PYTHONWARNINGS=error, PYTHONHASHSEED).  Promises come only
from README.md, docs/*.md and each command's --help:

* README "Exit status" / "User errors and OS errors": trouble is one stderr line naming the
  file, flag or variable, exit 2, never a traceback; "a removed current directory" is one of
  those errors; "A closed stdin, stdout or stderr (`>&-`) is given /dev/null: output is dropped
  as for a reader that went away, the exit status stays (a command `tracer record` runs still
  finds the stream closed)".
* README: "Outputs honour the umask ... directories are never created world-writable".
* docs/airflow.md: a finished week's coverage report "is a function of its data: a rerun on
  the same data writes the same bytes (charts, HTML, Markdown, Parquet)".
* `tracer record --help`: the output is checked before the command starts (its directory
  exists, is writable, not read-only or full).

Nothing in the docs says any command needs HOME, TMPDIR, a cache/config directory, a UTF-8
locale or a PATH, so under each of those the commands must do their normal work.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():  # an installed checkout elsewhere: the interpreter's own bin
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
REC = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
GOOD0, GOOD1, BAD = (str(REC / f"{n}.parquet") for n in ("good0", "good1", "bad"))
WEEK = "2026-W48"  # the simulator's default start, 2026-11-28, lies in it
TIMEOUT = 120


# --------------------------------------------------------------------------- helpers


def _mount_tmpfs(where: Path, *, size: str, read_only: bool) -> None:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size},mode=0755" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], check=True,
                   capture_output=True, timeout=30)


def _umount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True, timeout=30)


def _fill(where: Path) -> None:
    """Fill a tmpfs until the kernel says ENOSPC."""
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)


def _env(changes: dict[str, str | None] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("LC_ALL", "LANG", "LANGUAGE", "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONPATH",
                "PYTHONUTF8", "PYTHONIOENCODING", "MPLCONFIGDIR", "PYTEST_CURRENT_TEST"):
        env.pop(key, None)
    env["LANG"] = "C.UTF-8"
    for key, value in (changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run(argv: list[str], *, env: dict[str, str | None] | None = None, cwd: Path | str | None = None,
        umask: int = -1, close: str | None = None, gone_cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run argv; `close` in {"0", "1", "2"} closes that descriptor (`>&-`); `gone_cwd` runs it from
    a directory removed after the chdir (absolute inputs)."""
    if close is not None:
        argv = ["/bin/sh", "-c", f'exec "$@" {close}>&-', "sh", *argv]
    if gone_cwd is not None:
        gone_cwd.mkdir(parents=True)
        argv = ["/bin/sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"', str(gone_cwd), *argv]
    stdout = subprocess.PIPE if close != "1" else None
    stderr = subprocess.PIPE if close != "2" else None
    stdin = subprocess.DEVNULL if close != "0" else None
    proc = subprocess.run(argv, env=_env(env), cwd=cwd, umask=umask, stdin=stdin, stdout=stdout,
                          stderr=stderr, timeout=TIMEOUT)
    out = (proc.stdout or b"").decode("utf-8", "replace")
    err = (proc.stderr or b"").decode("utf-8", "replace")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout, proc.stdout[-3000:]


def refused(proc: subprocess.CompletedProcess, prog: str, *names: str) -> None:
    """Exit 2, one stderr line starting with the program's name and naming one of `names`."""
    no_traceback(proc)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(prog), lines[0]
    assert any(n in lines[0] for n in names), (names, lines[0])


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One simulated dataset (learned and audited), reference outputs under a plain environment,
    and the mounts the cases need: a read-only tmpfs and a full tiny one."""
    root = tmp_path_factory.mktemp("env44")
    ds = root / "ds"
    plain = root / "plain"
    plain.mkdir()
    for argv in ([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "7", "-o", str(ds)],
                 [BASELINE, "learn", str(ds)], [BASELINE, "audit", str(ds)]):
        proc = run(argv, cwd=plain)
        assert proc.returncode == 0, proc.stderr
    ref = {}
    ref["diff"] = run([BASELINE, "diff", GOOD0, GOOD1, BAD], cwd=plain)
    assert ref["diff"].returncode == 1 and "bifurcation:" in ref["diff"].stdout, ref["diff"]
    ref["report"] = run([BASELINE, "report", str(ds / "audit")], cwd=plain)
    assert ref["report"].returncode == 0 and "findings:" in ref["report"].stdout, ref["report"]
    proc = run([BASELINE, "coverage", str(ds), "-o", str(root / "refcov")], cwd=plain)
    assert proc.returncode == 0, proc.stderr
    ref["coverage"] = tree_bytes(root / "refcov" / WEEK)
    assert "report.md" in ref["coverage"] and any(k.endswith(".png") for k in ref["coverage"])
    proc = run([BASELINE, "export", GOOD0, "-o", str(root / "ref.json")], cwd=plain)
    assert proc.returncode == 0, proc.stderr
    ref["export_events"] = len(json.loads((root / "ref.json").read_text())["traceEvents"])
    proc = run([BASELINE, "allowlist", "learn", GOOD0, GOOD1, "-o", str(root / "ref.yaml")], cwd=plain)
    assert proc.returncode == 0, proc.stderr
    ref["allowlist"] = proc.stdout.split(" -> ")[0]

    ro = root / "ro"
    full = root / "full"
    mounted = []
    try:
        _mount_tmpfs(ro, size="64k", read_only=True)
        mounted.append(ro)
        _mount_tmpfs(full, size="64k", read_only=False)
        mounted.append(full)
        _fill(full)
        yield {"root": root, "ds": ds, "ref": ref, "ro": ro, "full": full}
    finally:
        for where in reversed(mounted):
            _umount(where)


# --------------------------------------------------------------------------- the commands
# Each command: argv for an output directory `out`, and the check of a successful run.


def _diff_argv(w, out):  # noqa: ARG001
    return [BASELINE, "diff", GOOD0, GOOD1, BAD]


def _diff_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == w["ref"]["diff"].stdout


def _simulate_argv(w, out):  # noqa: ARG001
    return [BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "7", "-o", str(out / "sim")]


def _simulate_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.startswith("2 hosts x 1.0 h"), proc.stdout
    assert "events 97 rows in 44 traces" in proc.stdout, proc.stdout
    assert list((out / "sim" / "events").rglob("*.parquet")), "no events written"


def _learn_argv(w, out):
    return [BASELINE, "learn", str(w["ds"]), "-o", str(out / "model.parquet")]


def _learn_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "learned 7 operations from 11 good traces" in proc.stdout, proc.stdout
    assert (out / "model.parquet").stat().st_size > 0


def _audit_argv(w, out):
    return [BASELINE, "audit", str(w["ds"]), "-o", str(out / "audit")]


def _audit_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "findings: 33 (33 open" in proc.stdout, proc.stdout
    for name in ("findings", "clusters", "host_alerts"):
        assert (out / "audit" / f"{name}.parquet").exists(), name


def _report_argv(w, out):  # noqa: ARG001
    return [BASELINE, "report", str(w["ds"] / "audit")]


def _report_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == w["ref"]["report"].stdout


def _coverage_argv(w, out):
    return [BASELINE, "coverage", str(w["ds"]), "-o", str(out / "cov")]


def _coverage_ok(w, out, proc):
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    got = tree_bytes(out / "cov" / WEEK)
    assert sorted(got) == sorted(w["ref"]["coverage"])
    differing = [name for name in got if got[name] != w["ref"]["coverage"][name]]
    assert not differing, f"coverage files differ from the plain run's: {differing}"


def _export_argv(w, out):  # noqa: ARG001
    return [BASELINE, "export", GOOD0, "-o", str(out / "e.json")]


def _export_ok(w, out, proc):
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    events = json.loads((out / "e.json").read_text())["traceEvents"]
    assert len(events) == w["ref"]["export_events"]


def _allowlist_argv(w, out):  # noqa: ARG001
    return [BASELINE, "allowlist", "learn", GOOD0, GOOD1, "-o", str(out / "al.yaml")]


def _allowlist_ok(w, out, proc):
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split(" -> ")[0] == w["ref"]["allowlist"]
    assert "learned 24 expected error(s)" in proc.stdout
    assert (out / "al.yaml").read_text().count("source: learned") == 24


def _record_argv(w, out):  # noqa: ARG001
    return [TRACER, "record", "-o", str(out / "r.parquet"), "--", "/bin/true"]


def _record_ok(w, out, proc):  # noqa: ARG001
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    import pyarrow.parquet as pq

    from tracer.schema import validate_file

    validate_file(out / "r.parquet", "events")
    table = pq.read_table(out / "r.parquet", columns=["probe", "exit_status"])
    assert table.num_rows > 5
    assert set(table.column("exit_status").to_pylist()) == {0}


COMMANDS = {
    "diff": (_diff_argv, _diff_ok),
    "simulate": (_simulate_argv, _simulate_ok),
    "learn": (_learn_argv, _learn_ok),
    "audit": (_audit_argv, _audit_ok),
    "report": (_report_argv, _report_ok),
    "coverage": (_coverage_argv, _coverage_ok),
    "export": (_export_argv, _export_ok),
    "allowlist": (_allowlist_argv, _allowlist_ok),
    "record": (_record_argv, _record_ok),
}


def _case(name: str, marks=()):
    """A pytest.param of a command; `record` needs root and bcc."""
    marks = list(marks)
    if name == "record":
        marks.append(pytest.mark.bpf)
    return pytest.param(name, marks=marks, id=name)


def _works(request, w, tmp_path, name, **kw):
    if name == "record":
        request.getfixturevalue("need_bpf")
    build, check = COMMANDS[name]
    out = tmp_path / "out"
    out.mkdir()
    cwd = kw.pop("cwd", None) or tmp_path
    proc = run(build(w, out), cwd=cwd, **kw)
    no_traceback(proc)
    check(w, out, proc)
    return proc


# --------------------------------------------------------------------------- HOME


@pytest.mark.parametrize("name", [_case(n) for n in COMMANDS])
def test_home_unset(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"HOME": None})


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "audit", "coverage", "allowlist")])
def test_home_nonexistent(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"HOME": str(tmp_path / "no" / "such" / "home")})


@pytest.mark.parametrize("name", [_case(n) for n in ("simulate", "coverage", "record")])
def test_home_read_only(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"HOME": str(world["ro"])})


# --------------------------------------------------------------------------- TMPDIR


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "record")])
def test_tmpdir_unset(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"TMPDIR": None})


@pytest.mark.parametrize("name", [_case(n) for n in ("audit", "coverage", "record")])
def test_tmpdir_missing(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"TMPDIR": str(tmp_path / "missing-tmp")})


@pytest.mark.parametrize("name", [_case(n) for n in ("learn", "export", "coverage")])
def test_tmpdir_read_only(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"TMPDIR": str(world["ro"])})


@pytest.mark.parametrize("name", [_case(n) for n in ("simulate", "audit", "coverage", "allowlist", "record")])
def test_tmpdir_full(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"TMPDIR": str(world["full"])})


# --------------------------------------------------------------------------- XDG / matplotlib


@pytest.mark.parametrize("var,where", [
    pytest.param("XDG_CACHE_HOME", "ro", id="xdg-cache-read-only"),
    pytest.param("XDG_CONFIG_HOME", "ro", id="xdg-config-read-only"),
    pytest.param("MPLCONFIGDIR", "ro", id="mplconfigdir-read-only"),
    pytest.param("MPLCONFIGDIR", "missing", id="mplconfigdir-missing"),
])
def test_coverage_config_dirs(request, world, tmp_path, var, where):
    path = str(world["ro"]) if where == "ro" else str(tmp_path / "missing" / "dir")
    proc = _works(request, world, tmp_path, "coverage", env={var: path, "HOME": str(world["ro"])})
    assert proc.stderr == "", f"coverage printed on stderr: {proc.stderr[-1500:]!r}"


def test_diff_all_config_dirs_missing(request, world, tmp_path):
    missing = str(tmp_path / "nowhere")
    _works(request, world, tmp_path, "diff", env={"XDG_CACHE_HOME": missing, "XDG_CONFIG_HOME": missing,
                                                  "MPLCONFIGDIR": missing, "HOME": missing})


# --------------------------------------------------------------------------- locales

LOCALES = ("C", "POSIX", "en_US.ISO-8859-1", "xx_YY.bogus-locale")


@pytest.mark.parametrize("locale", LOCALES)
def test_diff_locale(request, world, tmp_path, locale):
    _works(request, world, tmp_path, "diff", env={"LC_ALL": locale, "LANG": locale})


@pytest.mark.parametrize("locale", ("C", "en_US.ISO-8859-1"))
def test_coverage_locale_same_bytes(request, world, tmp_path, locale):
    _works(request, world, tmp_path, "coverage", env={"LC_ALL": locale, "LANG": locale})


@pytest.mark.bpf
def test_record_latin1_lang(request, world, tmp_path):
    _works(request, world, tmp_path, "record", env={"LANG": "en_US.ISO-8859-1", "LC_ALL": None})


# --------------------------------------------------------------------------- PATH


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "simulate", "record")])
def test_path_usr_bin_only(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"PATH": "/usr/bin"})


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "audit", "coverage", "record")])
def test_path_empty(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"PATH": ""})


# --------------------------------------------------------------------------- removed cwd

CWD_NAMES = ("current directory", "working directory", "cwd")


# Fixed since written (round forty-one): `tracer record` in a removed current directory compiled its
# BPF program from there (clang's 'getcwd: No such file or directory', then the load blamed on the
# kernel and `dmesg`), and with no -o blamed its default file name; the compile now runs from / and
# a command to start (or a default output) is refused first, naming the current directory.


@pytest.mark.parametrize("name", [_case(n) for n in COMMANDS if n != "record"]
                         + [_case("record")])
def test_removed_cwd_absolute_paths(request, world, tmp_path, name):
    """README lists "a removed current directory" among the errors refused in one line, exit 2;
    with every path absolute the command may equally just work."""
    if name == "record":
        request.getfixturevalue("need_bpf")
    build, check = COMMANDS[name]
    out = tmp_path / "out"
    out.mkdir()
    proc = run(build(world, out), gone_cwd=tmp_path / "gone")
    no_traceback(proc)
    if proc.returncode == 2:
        refused(proc, "baseline" if name != "record" else "tracer", *CWD_NAMES)
    else:
        check(world, out, proc)


def test_removed_cwd_allowlist_default_output(world, tmp_path):  # noqa: ARG001
    proc = run([BASELINE, "allowlist", "learn", GOOD0, GOOD1], gone_cwd=tmp_path / "gone")
    refused(proc, "baseline", "expected_errors.learned.yaml", *CWD_NAMES)


@pytest.mark.bpf
def test_removed_cwd_record_default_output(need_bpf, tmp_path):  # noqa: ARG001
    proc = run([TRACER, "record", "--", "/bin/true"], gone_cwd=tmp_path / "gone")
    refused(proc, "tracer", *CWD_NAMES)


# --------------------------------------------------------------------------- read-only cwd


def test_read_only_cwd_allowlist_default_output(world):
    proc = run([BASELINE, "allowlist", "learn", GOOD0, GOOD1], cwd=world["ro"])
    refused(proc, "baseline", "expected_errors.learned.yaml")
    assert "Read-only file system" in proc.stderr


@pytest.mark.bpf
def test_read_only_cwd_record_default_output(need_bpf, world):  # noqa: ARG001
    proc = run([TRACER, "record", "--", "/bin/true"], cwd=world["ro"])
    refused(proc, "tracer", "Read-only file system")
    assert "trace-true-" in proc.stderr


def test_read_only_cwd_diff(request, world, tmp_path):
    _works(request, world, tmp_path, "diff", cwd=world["ro"])


# --------------------------------------------------------------------------- umask


def _modes(root: Path) -> list[tuple[str, int, bool]]:
    return [(str(p), p.lstat().st_mode & 0o7777, p.is_dir()) for p in [root, *root.rglob("*")] if not p.is_symlink()]


@pytest.mark.parametrize("name,umask", [
    pytest.param("simulate", 0o777, id="simulate-umask0777"),
    pytest.param("coverage", 0o777, id="coverage-umask0777"),
    pytest.param("allowlist", 0o777, id="allowlist-umask0777"),
    pytest.param("simulate", 0o000, id="simulate-umask0000"),
    pytest.param("coverage", 0o000, id="coverage-umask0000"),
])
def test_umask_honoured(request, world, tmp_path, name, umask):
    _works(request, world, tmp_path, name, umask=umask)
    out = tmp_path / "out"
    made = {"simulate": out / "sim", "coverage": out / "cov", "allowlist": out / "al.yaml"}[name]
    bad = [(p, oct(m)) for p, m, is_dir in _modes(made) if m & umask or (is_dir and m & 0o002)]
    assert not bad, f"outputs not honouring umask {umask:04o} or world-writable directories: {bad[:5]}"


@pytest.mark.bpf
def test_umask_0777_record(request, world, tmp_path):
    _works(request, world, tmp_path, "record", umask=0o777)
    assert (tmp_path / "out" / "r.parquet").stat().st_mode & 0o777 == 0


# --------------------------------------------------------------------------- closed std streams


def test_stdin_closed_diff(request, world, tmp_path):
    _works(request, world, tmp_path, "diff", close="0")


@pytest.mark.parametrize("name,status", [("diff", 1), ("audit", 0)])
def test_stdout_closed_status_stays(world, tmp_path, name, status):
    out = tmp_path / "out"
    out.mkdir()
    proc = run(COMMANDS[name][0](world, out), cwd=tmp_path, close="1")
    no_traceback(proc)
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr


def test_stdout_closed_export_to_stdout(world, tmp_path):
    proc = run([BASELINE, "export", GOOD0], cwd=tmp_path, close="1")
    no_traceback(proc)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr


@pytest.mark.bpf
def test_stdout_closed_record_child_finds_it_closed(need_bpf, tmp_path):  # noqa: ARG001
    # the traced shell exits 0 only when its fd 1 is closed, 3 when it is open
    script = "if [ -e /proc/self/fd/1 ]; then exit 3; fi; exit 0"
    proc = run([TRACER, "record", "-o", str(tmp_path / "r.parquet"), "--", "/bin/sh", "-c", script],
               cwd=tmp_path, close="1")
    no_traceback(proc)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert (tmp_path / "r.parquet").exists()


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "simulate")])
def test_stderr_closed_status_stays(world, tmp_path, name):
    build, check = COMMANDS[name]
    out = tmp_path / "out"
    out.mkdir()
    proc = run(build(world, out), cwd=tmp_path, close="2")
    check(world, out, proc)


# --------------------------------------------------------------------------- a long environment


def _long_env() -> dict[str, str]:
    return {f"TB44_FILLER_{i:05d}": "x" * 40 for i in range(2000)}  # ~110 KB of variables


@pytest.mark.parametrize("name", [_case(n) for n in ("diff", "simulate", "record")])
def test_long_environment(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env=_long_env())


# --------------------------------------------------------------------------- PYTHONWARNINGS=error


@pytest.mark.parametrize("name", [_case(n) for n in COMMANDS])
def test_pythonwarnings_error(request, world, tmp_path, name):
    _works(request, world, tmp_path, name, env={"PYTHONWARNINGS": "error"})


# --------------------------------------------------------------------------- PYTHONHASHSEED


@pytest.mark.parametrize("seed", ["1", "4294967295"])
def test_coverage_same_bytes_across_hash_seeds(request, world, tmp_path, seed):
    """docs/airflow.md: a finished week's report is a function of its data (same bytes)."""
    _works(request, world, tmp_path, "coverage", env={"PYTHONHASHSEED": seed})
