"""Fault scenarios, recorded for real: the diff's top-1 bifurcation must name the injected
syscall, errno and path; good-vs-good runs must report no anomaly.

The per-scenario table and the overall accuracy are printed at the end of the module (also
available standalone: `.venv/bin/python -m bench.scenario_accuracy`).
"""

from __future__ import annotations

import fnmatch

import polars as pl
import pytest
from scenarios.catalog import NO_ANOMALY, SCENARIOS
from scenarios.harness import (
    Outcome,
    format_table,
    judge,
    record_scenario,
    run_no_anomaly,
    shared_recorder,
)

from tracer.schema import read_events

OUTCOMES: list[Outcome] = []


@pytest.fixture(scope="module")
def recorder(need_bpf, request):
    yield shared_recorder()
    if OUTCOMES:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line("scenario accuracy (top-1 bifurcation / good-vs-good quiet):")
            for line in format_table(OUTCOMES).splitlines():
                reporter.write_line(line)


@pytest.fixture(scope="module")
def traces_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("scenario-traces")


def test_at_least_ten_distinct_scenarios():
    assert len(SCENARIOS) >= 10
    assert len({s.expect_errno for s in SCENARIOS}) >= 10
    assert len({s.program for s in SCENARIOS}) >= 10
    required = {"ENOENT", "EACCES", "EROFS", "ENOSPC", "EMFILE", "ELOOP", None}
    assert required <= {s.expect_errno for s in SCENARIOS}
    assert any(s.unprivileged and s.expect_errno == "EACCES" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_bifurcation(scenario, recorder, traces_dir):
    from baseline.run.diff import diff_traces

    goods, bad, base = record_scenario(scenario, recorder, traces_dir / scenario.name)
    # Recorder side: the injected event is in the bad trace, and in no good trace.
    want = scenario.expect_path(base)

    def injected(df: pl.DataFrame) -> pl.DataFrame:
        rows = df.filter(pl.col("probe").is_in(list(scenario.expect_probe)))
        if scenario.expect_errno:
            rows = rows.filter(pl.col("errno") == scenario.expect_errno)
        return rows.filter(pl.col("path").map_elements(
            lambda p: fnmatch.fnmatchcase(p or "", want), return_dtype=pl.Boolean))

    bad_df = read_events(bad)
    assert injected(bad_df).height >= 1, f"{scenario.name}: injected event not recorded"
    assert bad_df["lost_events"][0] == 0 and bad_df["kind"][0] == "failure"
    if scenario.expect_errno:
        for g in goods:
            assert injected(read_events(g)).height == 0, f"{g.name} already shows the fault"
    # Diff side: top-1 names it.
    report = diff_traces(good=goods, bad=bad)
    outcome = judge(scenario, report, base)
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{scenario.name}: expected {outcome.expected}, diff said {outcome.got}"


@pytest.mark.parametrize("case", NO_ANOMALY, ids=[c.name for c in NO_ANOMALY])
def test_good_vs_good_is_quiet(case, recorder, traces_dir):
    outcome = run_no_anomaly(case, recorder, traces_dir / case.name)
    OUTCOMES.append(outcome)
    assert outcome.correct, f"{case.name}: diff reported {outcome.got}"
