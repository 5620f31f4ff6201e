"""Real Debian programs with one real fault each (tests/scenarios/real.py), recorded for real:
three good runs and one bad run per program. The diff of two good runs against the bad one
must name the fault at top 1 (syscall, errno, path); the third good run diffed against the
same two must be "same" (no anomaly): mkstemp names, per-run object ids and thread timing
must not look like new behaviour.

The table of outcomes is printed at the end of the module; `.venv/bin/python -m
bench.scenario_accuracy --real` prints the same standalone.
"""

from __future__ import annotations

import pytest
from scenarios.harness import Outcome, check_fault_case
from scenarios.real import REAL
from scenarios.sets import set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []
# good-vs-good draws not yet set aside: an xfail when they happen, never asserted
FLAKY_QUIET: dict[str, str] = {
    "git_commit_readonly_objects": "git commit's new objects land in fan-out directories named by their hash (the "
                                   "commit's varies with its time): now and then the third good run's ENOENT on "
                                   "objects/<xx> (then mkdir) is named -- seen twice in eight fresh-clone CIs "
                                   "under load, 0 of 25 runs idle; which draw the templates miss is not found",
}


real_recorder = set_recorder("real_recorder", "real programs", OUTCOMES, QUIET)


def test_the_set_covers_every_miss_class():
    names = {s.name for s in REAL}
    assert len(REAL) >= 20 and FLAKY_QUIET.keys() <= names
    # mkstemp-style names: in /tmp (gcc), beside the target (sed, zip), in -T dirs (sort),
    # Python's tempfile, git's tmp_obj_XXXXXX and per-run object names
    assert {"gcc_missing_header", "sed_inplace_readonly_dir", "zip_readonly_dir", "sort_unreadable_input",
            "python_tempfile_rename", "git_commit_readonly_objects"} <= names
    assert "ls_errno_change" in names  # other errno at a call the good runs also fail at
    assert "shared_library_search" in names  # a search-path miss the good runs also have
    assert {"mv_target_readonly", "ln_missing_dir"} <= names  # two-path calls, the target failed


@pytest.mark.parametrize("scenario", REAL, ids=[s.name for s in REAL])
def test_real_program_fault_is_named_and_good_runs_are_quiet(scenario, real_recorder, tmp_path):
    check_fault_case(scenario, real_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)


def test_what_the_bad_run_wrote_is_shown(real_recorder, tmp_path):
    # gcc with stderr on a pipe (as under a CI runner): the recorder keeps the first bytes of
    # each write (events column `output`), the diff shows them after the bifurcation.
    import os

    from scenarios.harness import ENV, ROOT, fresh_dir
    from scenarios.real import gcc_header

    from baseline.run.diff import diff_traces

    base = ROOT / "gcc_stderr_pipe"
    argv = ["/usr/bin/gcc", "-c", f"{base}/main.c", "-o", f"{base}/main.o"]
    files = []
    try:
        for i, bad in enumerate([False, False, True]):
            fresh_dir(base)
            gcc_header(base, bad)
            r, w = os.pipe()  # gcc writes far less than a pipe holds: nothing needs to drain it
            null = os.open("/dev/null", os.O_RDONLY)
            try:
                rec = real_recorder.record(argv, label="bad" if bad else "good", env=ENV, cwd="/",
                                           stdin=null, stdout=w, stderr=w, timeout=60)
            finally:
                for fd in (w, r, null):
                    os.close(fd)
            files.append(rec.write(tmp_path / f"run{i}.parquet"))
    finally:
        if base.exists():
            fresh_dir(base)
            base.rmdir()
    report = diff_traces(good=files[:2], bad=files[2])
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("openat", "ENOENT", f"{base}/config.h")
    assert "fatal error: config.h: No such file or directory" in (bif["then_wrote"] or "")
    assert "the bad run then wrote: " in report.render_text()


def test_a_binary_write_before_the_message_is_passed_over(real_recorder, tmp_path):
    # a forked child reporting to its parent over a pipe in binary (git's 8-byte errno record of
    # a hook it could not run) wrote before the message: then_wrote showed the 8 bytes (real set 73)
    import os

    from scenarios.harness import ENV

    from baseline.run.diff import diff_traces

    script = ("[ -e \"$1/conf\" ] || { printf '\\004\\000\\000\\000\\002\\000\\000\\000'; "
              "echo \"job: cannot open $1/conf\" >&2; exit 1; }; cat \"$1/conf\" >/dev/null")
    job = tmp_path / "job"
    job.mkdir()
    files = []
    for i, bad in enumerate([False, False, True]):
        if bad:
            (job / "conf").unlink(missing_ok=True)
        else:
            (job / "conf").write_text("x\n")
        r, w = os.pipe()
        null = os.open("/dev/null", os.O_RDONLY)
        try:
            rec = real_recorder.record(["/bin/sh", "-c", script, "sh", str(job)], env=ENV, cwd="/",
                                       label="bad" if bad else "good", stdin=null, stdout=w, stderr=w, timeout=60)
        finally:
            for fd in (w, r, null):
                os.close(fd)
        files.append(rec.write(tmp_path / f"run{i}.parquet"))
    bif = diff_traces(good=files[:2], bad=files[2]).bifurcation
    assert bif is not None and (bif["errno"], bif["path"]) == ("ENOENT", str(job / "conf")), bif
    assert (bif["then_wrote"] or "").startswith("job: cannot open"), bif["then_wrote"]
