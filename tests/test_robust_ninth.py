"""Round nine of the bad-input battery (bench/robust_battery.py, group `round9`): the edges it
found, one test per defect class.

- `-o -` wrote a file named `-` in the current directory in every command but `baseline
  export` (whose JSON goes to stdout); now `-` is refused naming the flag wherever the output
  cannot be stdout (Parquet, a directory, a YAML merged in place), `./-` still names a file;
- `--help`/`--version` on a stdout that cannot be written (/dev/full) exited 0 when the text
  was written at once (PYTHONUNBUFFERED=1, a help longer than the buffer): argparse drops the
  OSError; now one line naming <stdout>, exit 2;
- an allowlist glob with many brace groups (`{a,b}` 24 times: 16 million patterns) hung
  `baseline diff` while its memory grew; now refused at load naming the file, entry and field;
- an output that is a dangling symlink had its target's directories created (as root, anywhere)
  and a symlink loop was replaced by a regular file; now both are refused naming the output;
- under a finite `ulimit -v` polars' allocator aborted `baseline learn` (SIGABRT, exit 134, no
  line) while glibc's per-thread malloc arenas reserved most of the limit: one arena then.

Inputs: the hand-written program of test_bad_inputs (pyarrow, not the code under test) and the
simulator.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_harness import run_shell as _sh
from test_bad_inputs import PROGRAM, _events, _write

from baseline.cli import main as baseline_main
from baseline.run.allowlist import ExpectedErrors, brace_alternatives, glob_match
from tracer import atomic
from tracer.cli import main as tracer_main
from tracer.errors import TracebaseError

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("r9")
    return d, [_write(_events(f"g{i}", PROGRAM, 10 + i), d / f"good{i}.parquet") for i in (1, 2)]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    d = tmp_path_factory.mktemp("r9fleet") / "fleet"
    simulate(d, hosts=3, hours=1.0, seed=2)  # `baseline simulate`'s call, without a process to start
    return d


@pytest.mark.parametrize("argv", [
    ["baseline", "learn", "{fleet}", "-o", "-"],
    ["baseline", "learn", "{fleet}", "--expected-out", "-"],
    ["baseline", "audit", "{fleet}", "-o", "-"],
    ["baseline", "audit", "{fleet}", "--html", "-"],
    ["baseline", "expected", "learn", "{fleet}", "-o", "-"],
    ["baseline", "coverage", "{fleet}", "-o", "-"],
    ["baseline", "simulate", "--hosts", "1", "--hours", "1", "-o", "-"],
    ["baseline", "allowlist", "learn", "{good}", "-o", "-"],
    ["baseline", "ingest", "{fleet}", "-"],
    ["tracer", "record", "-o", "-", "--", "true"],
    ["tracer", "run", "syscalls", "--spool", "-"],
    ["tracer", "run", "syscalls", "--prom", "-"],
])
def test_dash_output_is_refused_where_stdout_cannot_be_it(argv, traces, fleet, capsys, monkeypatch):
    d, good = traces
    monkeypatch.chdir(d)
    args = [a.format(fleet=fleet, good=good[0]) for a in argv[1:]]
    code = (baseline_main if argv[0] == "baseline" else tracer_main)(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "found '-'" in err and "stdout" in err and len(err.strip().splitlines()) == 1, err
    assert not (d / "-").exists()


def test_dash_is_stdout_for_export_and_dot_slash_dash_a_file(traces, capsys, monkeypatch):
    d, good = traces
    monkeypatch.chdir(d)
    assert baseline_main(["export", str(good[0]), "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("{")
    assert baseline_main(["allowlist", "learn", *map(str, good), "-o", "./-"]) == 0
    assert (d / "-").read_text().startswith("version: 1")
    (d / "-").unlink()


@pytest.mark.parametrize("unbuffered", ["1", ""])
@pytest.mark.parametrize("script", ["baseline --help", "baseline --version", "tracer record --help",
                                    "baseline allowlist learn --help"])
def test_help_and_version_on_a_full_stdout_fail(script, unbuffered, tmp_path):
    env = {"PYTHONUNBUFFERED": unbuffered} if unbuffered else {"PYTHONUNBUFFERED": ""}
    proc = _sh(f"{script} >/dev/full", tmp_path, env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"{script.split()[0]}: error: <stdout>: No space left on device"
    # a reader that stops early is not an error
    proc = _sh(f"{script} | head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}", tmp_path, env)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_brace_alternatives_counted_without_expanding():
    assert [brace_alternatives(p) for p in ("a", "{a,b}", "{a,b}{c,d,e}", "{a,{b,c}}x", "{,}")] == [1, 2, 6, 3, 2]
    assert brace_alternatives("{a,b}" * 24) == 1025  # capped just past the limit
    assert brace_alternatives("{" * 5000 + "a" + "}" * 5000) == 1  # nesting: no recursion
    assert glob_match("/srv/{a,b}{c,d}/x", "/srv/bd/x")
    with pytest.raises(TracebaseError, match="pattern: expected a glob with at most 1,024 brace alternatives"):
        glob_match("/srv/" + "{a,b}" * 24, "/srv/ab")


def test_brace_bomb_in_an_allowlist_is_refused_naming_the_field(traces, capsys):
    d, good = traces
    y = d / "bomb.yaml"
    y.write_text("version: 1\nentries:\n  - id: x\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
                 "    path: '/srv/" + "{a,b}" * 24 + "'\n")
    with pytest.raises(TracebaseError, match=r"bomb.yaml: entries\[0\]: field 'path': expected a glob with at most"):
        ExpectedErrors.load(y)
    assert baseline_main(["diff", str(good[0]), str(good[1]), "--allowlist", str(y)]) == 2
    assert "field 'path'" in capsys.readouterr().err


def test_dangling_symlink_and_loop_outputs_are_refused(tmp_path):
    target = tmp_path / "nowhere" / "deeper" / "x.json"
    link = tmp_path / "dangling.json"
    link.symlink_to(target)
    with pytest.raises(FileNotFoundError, match="whose directory does not exist"):
        atomic.write_text(link, "{}")
    assert not (tmp_path / "nowhere").exists() and link.is_symlink()
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        atomic.write_text(loop, "{}")
    assert loop.is_symlink()
    # a link to a new file in an existing directory is followed, the link kept
    (tmp_path / "real").mkdir()
    ok = tmp_path / "ok.json"
    ok.symlink_to(tmp_path / "real" / "x.json")
    atomic.write_text(ok, "{}")
    assert ok.is_symlink() and (tmp_path / "real" / "x.json").read_text() == "{}"


def test_low_address_space_limit_is_one_line_never_an_abort(fleet, tmp_path):
    # 1 GB: the data needs ~100 MiB; glibc's per-thread arenas made polars' allocator abort (134)
    proc = _sh(f"ulimit -v 1000000; baseline learn {fleet} -o {tmp_path}/m.parquet", tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode in (0, 2) and len(lines) <= 1, proc.stderr
    assert proc.returncode == 0 or "ulimit -v" in proc.stderr, proc.stderr
