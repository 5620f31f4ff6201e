"""Seventy-seventh set of real programs, recorded for real (root + bcc): credential, key and trust files
of clients -- a private key missing and a public key that is a directory (ssh-keygen), an identity
file named by -i missing and a server port closed (ssh), a GNUPGHOME that is a file (gpg),
a ~/.netrc that is a directory (wget), an immutable CSR output (openssl req) -- must be named at the
call strace -f shows failing; and good runs whose credential files legitimately differ (known_hosts
present or not, gpg creating its homedir files or reusing them, dotlock and temporary names, an agent
socket present or not, netrc and git credential-store entries in another order, a CApath with other
certificates) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run (the module
scenarios/real_seventyseventh.py says what strace showed for each, and what varied between good
runs). The table of outcomes is printed at the end of the module.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
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
    skip_if_loopback_down,
    xfail_param,
)
from scenarios.real_seventyseventh import (
    CHATTR,
    CURL,
    GIT,
    GPG,
    OPENSSL,
    QUIET_SEVENTYSEVENTH,
    REAL_SEVENTYSEVENTH,
    RUNS,
    SSH,
    SSH_KEYGEN,
    WGET,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# A fault case whose bifurcation is not the call strace shows failing (keyed by the case; "<case>/cli"
# for the command line's report of it, "<case>/said" for its then_wrote / recovered).
KNOWN_MISSES: dict[str, str] = {}
# A noise case the diff does not keep quiet.
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "setpriv")
SCRIPTS = ("sh", "python3")

seventyseventh_recorder = set_recorder("seventyseventh_recorder", "seventy-seventh set of real programs", OUTCOMES,
                                       QUIET, quiet_teardown)


def _host_lacks() -> str | None:
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    missing += [p for p in (SSH, SSH_KEYGEN, GPG, WGET, CURL, OPENSSL, CHATTR, GIT) if not os.access(p, os.X_OK)]
    if missing:
        return (f"the set needs {', '.join(missing)} (apt: openssh-client gnupg wget curl openssl e2fsprogs git "
                "util-linux)")
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SEVENTYSEVENTH}
    quiet = {c.name for c in QUIET_SEVENTYSEVENTH}
    if not any(s.module == "real_seventyseventh" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_seventyseventh", REAL_SEVENTYSEVENTH,
                                                                    QUIET_SEVENTYSEVENTH, quiet_teardown)])
    assert_set_is_new("real_seventyseventh")
    assert_no_program_repeats("real_seventyseventh", scripts=SCRIPTS)
    assert 6 <= len(REAL_SEVENTYSEVENTH) <= 8 and len(QUIET_SEVENTYSEVENTH) >= 6
    assert all(n.startswith("t77_") for n in names | quiet)
    assert all(c.runs == RUNS >= 5 for c in QUIET_SEVENTYSEVENTH)
    # one fault each, and no two cases of the set the same (program, errno)
    pairs = [(s.program.split()[0], s.expect_errno) for s in REAL_SEVENTYSEVENTH]
    assert len(set(pairs)) == len(pairs), pairs
    assert all(s.expect_errno for s in REAL_SEVENTYSEVENTH)
    assert all({"comm"} <= set(s.extra) <= {"comm", "says", "recovered"} for s in REAL_SEVENTYSEVENTH)
    assert KNOWN_MISSES.keys() <= names | {f"{n}/{k}" for n in names for k in ("cli", "said")}
    assert QUIET_MISSES.keys() <= quiet and FLAKY_QUIET.keys() <= names | quiet


_FAULTS: dict[str, tuple[list[Path], Path, Path]] = {}  # a fault case -> (good files, bad file, base)
_LOOPBACK = {"t77_ssh_identity_file_named_by_i_missing", "t77_ssh_to_a_closed_loopback_port",
             "t77_wget_netrc_is_a_directory", "t77_ssh_with_and_without_an_agent_socket",
             "t77_curl_netrc_file_entries_in_another_order"}


def _recorded(sc, recorder, out_dir: Path):
    if sc.name in _LOOPBACK:
        skip_if_loopback_down()
    if sc.name not in _FAULTS:
        try:
            _FAULTS[sc.name] = record_scenario(dataclasses.replace(sc, good_runs=3), recorder, out_dir)
        finally:
            quiet_teardown()
    return _FAULTS[sc.name]


@pytest.fixture(scope="module")
def _fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t77-faults")


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SEVENTYSEVENTH])
def test_the_failing_credential_file_call_is_named_and_good_runs_are_quiet(name, seventyseventh_recorder,
                                                                             _fault_dir):
    """Two good runs against the bad one: the bifurcation is the call strace shows failing (its probe,
    errno and path: the key, identity, homedir, netrc or CSR file, or the server's address), in the
    process strace shows making it (its comm); the third good run against the same two is quiet."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYSEVENTH if s.name == name)
    t0 = time.perf_counter()
    goods, bad, base = _recorded(sc, seventyseventh_recorder, _fault_dir)
    assert fault_recorded(sc, bad, base), f"{sc.name}: fault not recorded"
    good_vs_good = quiet_outcome(sc.name, diff_traces(good=goods[:2], bad=goods[2]))
    QUIET.append(good_vs_good)
    report = diff_traces(good=goods[:2], bad=bad)
    outcome = judge(sc, report, base)
    outcome.seconds = time.perf_counter() - t0
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{sc.name}: expected {outcome.expected}, diff said {outcome.got}"
    proc = report.bifurcation.get("process") or {}
    assert proc.get("comm") == sc.extra["comm"], f"{sc.name}: named in {proc}, not in {sc.extra['comm']}"
    if not good_vs_good.correct and sc.name in FLAKY_QUIET:
        pytest.xfail(f"good vs good reported {good_vs_good.got}: {FLAKY_QUIET[sc.name]}")
    assert good_vs_good.correct, f"{sc.name}: good vs good reported {good_vs_good.got}"


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/said", KNOWN_MISSES) for s in REAL_SEVENTYSEVENTH
                                 if {"says", "recovered"} & set(s.extra)])
def test_the_named_event_leads_to_the_message_and_recovery_strace_shows(key, seventyseventh_recorder, _fault_dir):
    """docs/diff-json.md: the bifurcation's ``then_wrote`` is what BAD wrote to stdout/stderr from the
    named event on (the message strace shows the failing program writing next: its stat's, read's,
    open's or connect's complaint), and ``recovered`` says whether the thread re-joined known-good
    behaviour after the region (ssh -i's warning: it goes on as the good runs do; ssh-keygen and
    openssl stop where the good runs went on)."""
    from baseline.run.diff import diff_traces

    sc = next(s for s in REAL_SEVENTYSEVENTH if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventyseventh_recorder, _fault_dir)
    bif = diff_traces(good=goods[:2], bad=bad).to_dict()["bifurcation"]
    assert bif is not None, f"{sc.name}: no anomaly"
    named = f"{bif.get('probe')} {bif.get('errno')} {bif.get('path')}"
    if "says" in sc.extra:
        said = (bif.get("then_wrote") or "") + (((bif.get("next_event") or {}).get("output")) or "")
        assert sc.extra["says"] in said, \
            f"{sc.name}: {named} then_wrote {bif.get('then_wrote')!r}, lacks {sc.extra['says']!r}"
    if "recovered" in sc.extra:
        assert bif.get("recovered") is sc.extra["recovered"], \
            f"{sc.name}: {named} recovered={bif.get('recovered')!r}, strace shows {sc.extra['recovered']}"


@pytest.mark.parametrize("key", [xfail_param(f"{s.name}/cli", KNOWN_MISSES) for s in REAL_SEVENTYSEVENTH])
def test_the_command_line_names_the_same_call(key, seventyseventh_recorder, _fault_dir):
    """`baseline diff --json GOOD GOOD BAD` run as a command (README: exit 1 for an anomaly; the
    report's `bifurcation` per docs/diff-json.md) names the same call, errno and path in the process
    strace shows making it (its comm), and the text report names them on its `bifurcation:` line."""
    sc = next(s for s in REAL_SEVENTYSEVENTH if s.name == key.split("/")[0])
    goods, bad, base = _recorded(sc, seventyseventh_recorder, _fault_dir)
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


def test_no_immutable_file_outlives_the_openssl_case(seventyseventh_recorder, _fault_dir):
    """The openssl case makes its CSR immutable for the bad run only: once the case is recorded its
    directory is gone (an immutable file would have kept the harness from removing it)."""
    sc = next(s for s in REAL_SEVENTYSEVENTH if "immutable" in s.name)
    _recorded(sc, seventyseventh_recorder, _fault_dir)
    assert not (ROOT / sc.name).exists(), f"{sc.name}: its directory outlived the case"


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
                quiet_teardown()
        finally:
            quiet_teardown()
            if base.exists():
                fresh_dir(base)
                base.rmdir()
        _RECORDED[case.name] = files
    return _RECORDED[case.name]


# the names drawn anew each run (the last component): gpg's dotlock files .#lk0x<address>.<host>.<pid> (and the
# <name>x link of its check), ssh-keygen -R's known_hosts.XXXXXXXXXX
_LOCK = r"\.#lk0x[0-9a-f]+\..+\.[0-9]+x?"
_DRAWN: dict[str, tuple[str, int]] = {  # a noise case -> (its drawn names, how many runs draw at least one)
    "t77_gpg_ownertrust_import_takes_locks_of_other_names": (_LOCK, RUNS),
    "t77_gpg_first_run_creates_homedir_files_or_reuses_them": (_LOCK, 3),  # runs 0, 2, 4 create pubring.kbx
    "t77_ssh_keygen_remove_host_through_a_random_temporary": (r"known_hosts\.[A-Za-z0-9]{10}", RUNS),
}


def _drawn(parquet: Path, pattern: str) -> frozenset[str]:
    """The paths of names drawn anew (`pattern`, the last component) one run opened, linked, removed or renamed."""
    from tracer.schema import read_events

    events = read_events(parquet)
    paths = [p for col in ("path", "path2") for p in events[col].to_list() if p]
    return frozenset(p for p in paths if re.fullmatch(pattern, p.rsplit("/", 1)[-1]))


@pytest.fixture(scope="module")
def _noise_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("t77-noise")


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SEVENTYSEVENTH])
def test_each_good_run_with_its_own_credential_files_is_quiet(name, seventyseventh_recorder, _noise_dir):
    """Each good run against the other four (known_hosts present or not, gpg's homedir files created
    or reused, dotlock and temporary names, an agent socket or none, netrc entries in another order,
    a CApath with other certificates) must be quiet; the outcome is the first pairing that was not."""
    from baseline.run.diff import diff_traces

    case = next(c for c in QUIET_SEVENTYSEVENTH if c.name == name)
    if name in _LOOPBACK:
        skip_if_loopback_down()
    t0 = time.perf_counter()
    files = _runs(case, seventyseventh_recorder, _noise_dir)
    if name in _DRAWN:  # the runs really differ: each run's names are its own
        pattern, runs = _DRAWN[name]
        seen = [_drawn(f, pattern) for f in files]
        assert sum(map(bool, seen)) >= runs, f"{name}: runs without a drawn name: {[sorted(s) for s in seen]}"
        assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:]), \
            f"{name}: two runs drew the same name: {[sorted(s) for s in seen]}"
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
