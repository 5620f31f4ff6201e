"""The commands compose with no path flags: simulate -> learn -> audit -> evaluate -> coverage all
find each other's outputs inside the dataset directory; --json on each prints one JSON document."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from baseline.cli import main


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def chained(tmp_path_factory):
    """The four commands of issue 11, run from an unrelated working directory with no path flags."""
    root = tmp_path_factory.mktemp("compose")
    cwd = root / "elsewhere"
    cwd.mkdir()
    fleet = root / "f"
    outputs = {}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        import contextlib
        import io

        for name, argv in [
            ("simulate", ["simulate", "--hosts", "8", "--hours", "2", "--seed", "4", "--out", fleet]),
            ("learn", ["learn", fleet]),
            ("audit", ["audit", fleet]),
            ("evaluate", ["evaluate", fleet]),
            ("coverage", ["coverage", fleet]),
        ]:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([str(a) for a in argv])
            outputs[name] = (code, out.getvalue(), err.getvalue())
    finally:
        os.chdir(old)
    return fleet, cwd, outputs


def test_simulate_learn_audit_evaluate_compose_without_path_flags(chained):
    fleet, cwd, outputs = chained
    for name, (code, _, err) in outputs.items():
        assert code == 0, (name, err)
    assert list(cwd.iterdir()) == []  # nothing lands in the working directory
    assert (fleet / "baseline-model.parquet").is_file()
    assert f"-> {fleet / 'baseline-model.parquet'}" in outputs["learn"][1]
    # the audit used the saved model and said so
    assert f"baseline model: {fleet / 'baseline-model.parquet'} (saved by `baseline learn`)" in outputs["audit"][1]
    assert (fleet / "audit" / "findings.parquet").exists()
    assert "cluster_purity" in outputs["evaluate"][1] or "purity" in outputs["evaluate"][1]
    reports = list((fleet / "reports").glob("*/report.html"))
    assert len(reports) == 1


def test_json_on_learn_audit_coverage_report_evaluate(chained, capsys, tmp_path):
    fleet, _, _ = chained
    code, out, _ = run(["learn", fleet, "-o", tmp_path / "m.parquet", "--json"], capsys)
    learned = json.loads(out)
    assert code == 0 and learned["model"] == str(tmp_path / "m.parquet") and learned["good_traces"] > 0

    code, out, _ = run(["audit", fleet, "--json", "-o", tmp_path / "a"], capsys)
    audited = json.loads(out)
    assert code == 0 and audited["model"] == str(fleet / "baseline-model.parquet")
    assert audited["model_source"] == "saved by `baseline learn`"
    assert audited["findings"] > 0 and len(audited["top_clusters"]) == min(10, audited["clusters"])
    assert set(audited["files"]) == {"findings", "clusters", "host_alerts"}

    code, out, _ = run(["audit", fleet, "--json", "--refit", "-o", tmp_path / "b"], capsys)
    assert code == 0 and json.loads(out)["model"] is None

    code, out, _ = run(["report", tmp_path / "a", "--json"], capsys)
    assert code == 0 and json.loads(out)["findings"] == audited["findings"]

    code, out, _ = run(["coverage", fleet, "--json", "-o", tmp_path / "r"], capsys)
    covered = json.loads(out)
    assert code == 0 and covered["hosts"] == 8 and covered["nccl_logs"] >= 1  # the simulator's job logs
    assert covered["app_failures"] > 0 and Path(covered["files"]["html"]).is_file()

    code, out, _ = run(["evaluate", fleet, "--json"], capsys)
    assert code == 0 and 0.0 <= json.loads(out)["cluster_purity"] <= 1.0


def test_evaluate_reads_a_pipeline_findings_directory(chained, capsys, tmp_path):
    """findings/<stamp>/ + findings/LATEST (what the audit DAG publishes): evaluate and report read
    the LATEST run's findings, not clusters.parquet or host_alerts.parquet."""
    fleet, _, _ = chained
    findings = tmp_path / "findings"
    for stamp in ("20261128T000000Z", "20261128T010000Z"):
        assert run(["audit", fleet, "-o", findings / stamp], capsys)[0] == 0
    (findings / "LATEST").write_text("20261128T010000Z\n")
    code, via_pipeline, err = run(["evaluate", fleet, "--findings", findings, "--json"], capsys)
    assert code == 0, err
    direct = run(["evaluate", fleet, "--findings", findings / "20261128T010000Z", "--json"], capsys)[1]
    assert json.loads(via_pipeline) == json.loads(direct)
    code, out, _ = run(["report", findings, "--json"], capsys)
    assert code == 0 and json.loads(out)["findings_dir"] == str(findings / "20261128T010000Z")

    code, _, err = run(["evaluate", fleet, "--findings", tmp_path / "empty"], capsys)
    assert code == 2 and err.count("\n") == 1 and "no such findings directory" in err
