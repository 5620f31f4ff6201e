"""Seventy-fourth set of real programs, recorded for real (root + bcc): temporary files and scratch
directories -- a TMPDIR missing or unwritable (tac, csplit), a scratch file system read-only (an
O_TMPFILE open) or out of inodes (/dev/shm under shm_open), sed -i's temporary past ``ulimit -f``,
a sticky scratch directory holding another user's file (shuf -o under fs.protected_regular, a
shell's > onto a FIFO under fs.protected_fifos, a cleanup trap's find -delete) -- must be named at the call strace -f shows failing; and good runs
whose temporaries differ (random names, TMPDIR set or not, as many sort temporaries as the input
needs, leftovers cleaned or absent, python's tempfile, bash and python passing over a read-only
TMPDIR) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_seventyfourth.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_harness import BIN
from scenarios import sets
from scenarios.harness import (
    ROOT,
    Outcome,
    fault_recorded,
    fresh_dir,
    judge,
    quiet_outcome,
    record_run,
    record_scenario,
    xfail_param,
)
from scenarios.real_seventyfourth import (
    PROTECTED_FIFOS,
    PROTECTED_REGULAR,
    QUIET_SEVENTYFOURTH,
    REAL_SEVENTYFOURTH,
    RUNS,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# A fault case whose bifurcation is not the call strace shows failing (keyed by the case; "<case>/cli"
# for the command line's report of it).
KNOWN_MISSES: dict[str, str] = {}
# A noise case the diff does not keep quiet.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing or on a random draw (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {
    "t74_python_tempfile_passes_over_readonly_tmpdir":
        "depends on python's random draws: gettempdir's probe names (8 of [a-z0-9_], no prefix) at rotmp/ and "
        "/tmp/ have one twin each among the good runs (the other read-only run). Found by this set (15% of 40 "
        "held-out diffs in a trial) and narrowed in round forty-seven: a draw with '_' beside a random-looking one "
        "(_rrtva2e / aadtnonj, k4mh77le / _uhuqjdv) is now the same place (normalize._drawn_alike); left: both "
        "draws without a digit (xvlixywx / ccqcwkbl, bjxhc_jx / szlttbv_: ~1% of pairs in a model of the draws), "
        "which no shape rule tells from two words (cfg_prod / cfg_test)",
}
TOOLS = ("sh", "bash", "grep", "tac", "shuf", "sort", "uniq", "head", "find", "mktemp", "cp", "rm", "sed", "csplit",
         "wc", "seq", "cat", "unshare", "mount", "setpriv", "python3")
SCRIPTS = ("sh", "python3")

seventyfourth_recorder = set_recorder("seventyfourth_recorder", "seventy-fourth set of real programs", OUTCOMES,
                                      QUIET, quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: coreutils findutils sed grep bash util-linux mount python3)"
    lacking = [str(p) for p in (PROTECTED_REGULAR, PROTECTED_FIFOS) if not p.exists()]
    if lacking:
        return f"the set needs {', '.join(lacking)} (Linux 4.19 or later)"
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SEVENTYFOURTH}
    quiet = {c.name for c in QUIET_SEVENTYFOURTH}
    if not any(s.module == "real_seventyfourth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_seventyfourth", REAL_SEVENTYFOURTH,
                                                                    QUIET_SEVENTYFOURTH, quiet_teardown)])
    assert_set_is_new("real_seventyfourth")
    assert_no_program_repeats("real_seventyfourth", scripts=SCRIPTS)
    assert 6 <= len(REAL_SEVENTYFOURTH) <= 8 and len(QUIET_SEVENTYFOURTH) >= 6
    assert all(n.startswith("t74_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SEVENTYFOURTH)
    # one fault each, and no two cases of the set the same (program, errno)
    pairs = [(s.program.split()[0], s.expect_errno) for s in REAL_SEVENTYFOURTH]
    assert len(set(pairs)) == len(pairs), pairs
    assert all(s.expect_errno for s in REAL_SEVENTYFOURTH)
    assert all(set(s.extra) == {"comm"} for s in REAL_SEVENTYFOURTH)
    assert KNOWN_MISSES.keys() <= names | {f"{n}/cli" for n in names}
    assert QUIET_MISSES.keys() <= quiet and FLAKY_QUIET.keys() <= names | quiet


_FAULTS: dict[str, tuple[list[Path], Path, Path]] = {}  # a fault case -> (good files, bad file, base)


def _recorded(sc, recorder, out_dir: Path):
    if sc.name not in _FAULTS:
        try:
            _FAULTS[sc.name] = record_scenario(dataclasses.replace(sc, good_runs=3), recorder, out_dir)
        finally:
            quiet_teardown()
    return _FAULTS[sc.name]


@pytest.fixture(scope="module")
def _fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t74-faults")


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SEVENTYFOURTH])
def test_the_failing_temp_file_call_is_named_and_good_runs_are_quiet(name, seventyfourth_recorder, _fault_dir):
    """Two good runs against the bad one: the bifurcation is the call strace shows failing (its probe,
    errno and path: the temporary, the scratch directory or /dev/shm segment); the third good run
    against the same two is quiet (its temporaries of other random names included)."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYFOURTH if s.name == name)
    t0 = time.perf_counter()
    goods, bad, base = _recorded(sc, seventyfourth_recorder, _fault_dir)
    assert fault_recorded(sc, bad, base), f"{sc.name}: fault not recorded"
    good_vs_good = quiet_outcome(sc.name, diff_traces(good=goods[:2], bad=goods[2]))
    QUIET.append(good_vs_good)
    outcome = judge(sc, diff_traces(good=goods[:2], bad=bad), base)
    outcome.seconds = time.perf_counter() - t0
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{sc.name}: expected {outcome.expected}, diff said {outcome.got}"
    if not good_vs_good.correct and sc.name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {good_vs_good.got}: {FLAKY_QUIET[sc.name]}")
    assert good_vs_good.correct, f"{sc.name}: good vs good reported {good_vs_good.got}"


@pytest.mark.parametrize("knob", ["protected_regular", "protected_fifos"])
def test_the_sysctl_is_put_back(knob, seventyfourth_recorder, _fault_dir):
    """The shuf and progress-FIFO cases turn fs.protected_regular / fs.protected_fifos on for their bad
    run only: once the case is recorded the sysctl has the value it had before."""
    path = PROTECTED_REGULAR if knob == "protected_regular" else PROTECTED_FIFOS
    before = path.read_text().strip()
    sc = next(s for s in REAL_SEVENTYFOURTH if knob in s.name)
    _recorded(sc, seventyfourth_recorder, _fault_dir)
    assert path.read_text().strip() == before


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/cli", KNOWN_MISSES) for s in REAL_SEVENTYFOURTH])
def test_the_command_line_names_the_same_call(key, seventyfourth_recorder, _fault_dir):
    """`baseline diff --json GOOD GOOD BAD` run as a command (README: exit 1 for an anomaly; the
    report's `bifurcation` per docs/diff-json.md) names the same call, errno and path in the process
    strace shows making it (its comm), and the text report names them on its `bifurcation:` line."""
    sc = next(s for s in REAL_SEVENTYFOURTH if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventyfourth_recorder, _fault_dir)
    argv = [str(BIN / "baseline"), "diff", *map(str, goods[:2]), str(bad)]
    proc = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, f"{sc.name}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
    assert "Traceback" not in proc.stderr
    bif = json.loads(proc.stdout)["bifurcation"]
    assert bif is not None, f"{sc.name}: no bifurcation in the JSON report"
    assert bif.get("probe") in sc.expect_probe and bif.get("errno") == sc.expect_errno, \
        f"{sc.name}: JSON bifurcation {bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    assert fnmatch.fnmatchcase(bif.get("path") or "", sc.expect_path(base)), \
        f"{sc.name}: JSON bifurcation path {bif.get('path')}, not {sc.expect_path(base)}"
    assert (bif.get("process") or {}).get("comm") == sc.extra["comm"], \
        f"{sc.name}: named in {bif.get('process')}, not in {sc.extra['comm']}"
    text = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert text.returncode == 1, f"{sc.name}: text report exit {text.returncode}: {text.stderr.strip()[-400:]}"
    line = next((ln for ln in text.stdout.splitlines() if ln.startswith("bifurcation:")), "")
    assert bif["probe"] in line and sc.expect_errno in line, f"{sc.name}: text report's bifurcation line: {line!r}"


_RECORDED: dict[str, list[Path]] = {}  # a noise case -> its runs, recorded once


def _runs(case, recorder, out_dir: Path) -> list[Path]:
    if case.name not in _RECORDED:
        base = ROOT / case.name
        files = []
        try:
            for i in range(case.runs):
                fresh_dir(base)
                case.setup(base, i)
                files.append(record_run(recorder, case.argv(base), out_dir / f"{case.name}-{i}.parquet", "good"))
        finally:
            quiet_teardown()
            if base.exists():
                fresh_dir(base)
                base.rmdir()
        _RECORDED[case.name] = files
    return _RECORDED[case.name]


# a temporary's own name (the last component): mktemp's tmp.XXXXXXXXXX and job.XXXXXX, coreutils' sortXXXXXX,
# tacXXXXXX, sed's sedXXXXXX, bash's sh-thd.XXXXXX, python's tmpXXXXXXXX[.part] and job-XXXXXXXX, the leftovers
_RANDOM = re.compile(r"(tmp\.|sort|tac|sed|sh-thd\.|job\.|tmp|job-)[A-Za-z0-9_]{6,}(\.part)?")


def _temporaries(parquet: Path) -> frozenset[str]:
    """The temporaries of one run: the paths of random names it opened, removed, renamed or made."""
    import polars as pl

    from tracer.schema import read_events

    events = read_events(parquet)
    paths = events.filter(pl.col("probe").is_in(["openat", "unlinkat", "unlink", "rename", "renameat", "renameat2",
                                                  "mkdir", "rmdir"]))["path"].to_list()
    return frozenset(p for p in paths if p and _RANDOM.fullmatch(p.rsplit("/", 1)[-1]))


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t74-noise")


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SEVENTYFOURTH])
def test_each_good_run_with_its_own_temporaries_is_quiet(name, seventyfourth_recorder, _noise_dir):
    """Each good run against the other four (temporaries of other random names, in TMPDIR or in /tmp,
    more or fewer of them, leftovers removed or none there, a read-only TMPDIR passed over) must be
    quiet; the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYFOURTH if c.name == name)
    t0 = time.perf_counter()
    files = _runs(case, seventyfourth_recorder, _noise_dir)
    # the runs really differ: no two runs used the same temporary names
    seen = [_temporaries(f) for f in files]
    assert sum(map(bool, seen)) >= RUNS - 1, f"{name}: runs without a temporary: {[sorted(s) for s in seen]}"
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:]), \
        f"{name}: two runs used the same temporary name: {[sorted(s) for s in seen]}"
    outcome = Outcome(name, "no anomaly", "no anomaly", True, 0.0)
    for i, held_out in enumerate(files):
        outcome = quiet_outcome(name, diff_traces(good=files[:i] + files[i + 1:], bad=held_out))
        if not outcome.correct:
            outcome.got = f"run {i} against the others: {outcome.got}"
            break
    outcome.seconds = time.perf_counter() - t0
    QUIET.append(outcome)
    if not outcome.correct and name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {outcome.got}: {FLAKY_QUIET[name]}")
    assert outcome.correct, f"{name}: good vs good reported {outcome.got}"


def _draws(parquet: Path) -> tuple[str | None, list[str]]:
    """The name gettempdir drew for its refused probe of the read-only TMPDIR (openat EROFS in rotmp/), and
    the run's other tempfile draws (its /tmp probe, its tmpXXXXXXXX.part)."""
    import polars as pl

    from tracer.schema import read_events

    opens = read_events(parquet).filter(pl.col("probe") == "openat")
    refused = [p.rsplit("/", 1)[-1] for p, e in zip(opens["path"].to_list(), opens["errno"].to_list(), strict=True)
               if p and e == "EROFS" and "/rotmp/" in p]
    others = {m.group(1) for p in opens["path"].to_list() if p
              for m in [re.fullmatch(r"/tmp/(?:tmp)?([a-z0-9_]{8})(?:\.part)?", p)] if m}
    return (refused[0] if refused else None), sorted(others)


def test_a_lower_case_tempfile_probe_name_is_random(seventyfourth_recorder, tmp_path):
    """A draw the noise case above leaves to chance, made certain: runs of the same python job with a
    read-only TMPDIR are recorded until one drew its probe name all in lower-case letters and one drew a
    name of letters and digits (no '_'). Three writable-TMPDIR runs and the mixed-name run as the good
    runs, the lower-case one held out: the same call failing the same way at a path that differs only in a
    tempfile draw must be quiet (docs/diff-json.md: a name learned between BAD and a good path of the same
    shape; docs/benchmarks.md: a single-class draw matches a good path's random one, as long, no '_')."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYFOURTH if c.name == "t74_python_tempfile_passes_over_readonly_tmpdir")
    base = ROOT / f"{case.name}-draws"
    lower: Path | None = None
    mixed: Path | None = None
    goods: list[Path] = []
    try:
        for i in range(3):
            fresh_dir(base)
            case.setup(base, 0)  # a writable TMPDIR
            goods.append(record_run(seventyfourth_recorder, case.argv(base), tmp_path / f"rw-{i}.parquet", "good"))
        deadline = time.monotonic() + 60
        for i in range(200):
            if (lower and mixed) or time.monotonic() > deadline:
                break
            fresh_dir(base)
            case.setup(base, 1)  # a read-only TMPDIR
            run = record_run(seventyfourth_recorder, case.argv(base), tmp_path / f"ro-{i}.parquet", "good")
            token, others = _draws(run)
            token = token or ""
            if any("_" in o for o in others):  # a '_' elsewhere: not the case this test is about (FLAKY_QUIET)
                run.unlink()
            elif lower is None and re.fullmatch(r"[a-z]{8}", token):
                lower = run
            elif mixed is None and re.fullmatch(r"[a-z0-9]{8}", token) and re.search(r"[a-z]", token) \
                    and re.search(r"[0-9]", token):
                mixed = run
            else:
                run.unlink()
    finally:
        quiet_teardown()
        if base.exists():
            fresh_dir(base)
            base.rmdir()
    if lower is None or mixed is None:
        pytest.skip("no lower-case probe name drawn in the runs the time allowed (about 3% of runs qualify)")
    report = diff_traces(good=[*goods, mixed], bad=lower)
    outcome = quiet_outcome("t74_python_tempfile_single_class_probe_name", report)
    assert outcome.correct, f"{_draws(lower)} against {_draws(mixed)}: good vs good reported {outcome.got}"
