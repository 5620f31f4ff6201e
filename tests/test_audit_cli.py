"""`baseline learn / audit / expected learn / report`: happy path and every user-error path."""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow.parquet as pq
import pytest

from baseline.cli import main
from baseline.fleet.model import MODEL_VERSION


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("clifleet")
    simulate(root, hosts=12, hours=2, seed=3)
    return root


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_learn_audit_report_end_to_end(fleet, tmp_path, capsys):
    model, yaml_out = tmp_path / "m.parquet", tmp_path / "ee.yaml"
    code, out, _ = run(["learn", fleet, "-o", model, "--expected-out", yaml_out], capsys)
    assert code == 0 and model.exists() and yaml_out.exists() and "good traces" in out
    code, out, _ = run(["audit", fleet, "--model", model, "--out", tmp_path / "a", "--html", tmp_path / "a.html",
                        "--allowlist", yaml_out], capsys)
    assert code == 0 and "root-cause clusters" in out
    assert (tmp_path / "a" / "findings.parquet").exists()
    assert "data:image/png;base64" in (tmp_path / "a.html").read_text()
    code, out2, _ = run(["report", tmp_path / "a"], capsys)
    assert code == 0 and "root-cause clusters" in out2
    code, out3, _ = run(["expected", "learn", fleet, "-o", tmp_path / "e2.yaml"], capsys)
    assert code == 0 and "learned" in out3


def _one_line_error(code, err, *needles):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("baseline: error: "), err
    for n in needles:
        assert n in err, err


def test_missing_dataset(tmp_path, capsys):
    for cmd in (["learn"], ["audit"], ["expected", "learn"]):
        code, _, err = run(cmd + [tmp_path / "nope"], capsys)
        _one_line_error(code, err, "nope", "no such dataset")


def test_empty_dataset(tmp_path, capsys):
    (tmp_path / "events").mkdir()
    code, _, err = run(["learn", tmp_path, "-o", tmp_path / "m.parquet"], capsys)
    _one_line_error(code, err, "no events files")
    code, _, err = run(["audit", tmp_path, "--out", tmp_path / "o"], capsys)
    _one_line_error(code, err, "no events files")


def test_bad_since(fleet, tmp_path, capsys):
    for cmd in (["learn", fleet, "-o", tmp_path / "m.parquet"], ["audit", fleet, "--out", tmp_path / "o"]):
        code, _, err = run(cmd + ["--since", "yesterday"], capsys)
        _one_line_error(code, err, "--since", "yesterday")


def test_since_after_all_data(fleet, tmp_path, capsys):
    code, _, err = run(["learn", fleet, "-o", tmp_path / "m.parquet", "--since", "2030-01-01"], capsys)
    _one_line_error(code, err, "no events files with date >= 2030-01-01")


def test_model_version_mismatch(fleet, tmp_path, capsys):
    model = tmp_path / "m.parquet"
    assert run(["learn", fleet, "-o", model], capsys)[0] == 0
    table = pq.read_table(model)
    meta = dict(table.schema.metadata)
    header = json.loads(meta[b"tracebase.model"])
    header["model_version"] = MODEL_VERSION + 1
    meta[b"tracebase.model"] = json.dumps(header).encode()
    pq.write_table(table.replace_schema_metadata(meta), model)
    code, _, err = run(["audit", fleet, "--model", model, "--out", tmp_path / "o"], capsys)
    _one_line_error(code, err, f"expected model version {MODEL_VERSION}, found model version {MODEL_VERSION + 1}")


def test_model_is_not_a_model(fleet, tmp_path, capsys):
    bogus = tmp_path / "m.parquet"
    bogus.write_text("not parquet")
    code, _, err = run(["audit", fleet, "--model", bogus, "--out", tmp_path / "o"], capsys)
    _one_line_error(code, err, str(bogus))


def test_read_only_out_dir(fleet, tmp_path, capsys):
    """Root bypasses directory modes, so as root the directory is a read-only tmpfs mount."""
    locked = tmp_path / "locked"
    locked.mkdir()
    mounted = False
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(locked)], check=True)
        mounted = True
    else:
        locked.chmod(0o500)
    try:
        code, _, err = run(["audit", fleet, "--out", locked / "o"], capsys)
        _one_line_error(code, err, "--out")
    finally:
        if mounted:
            subprocess.run(["umount", str(locked)], check=True)


def test_unwritable_out_dir(fleet, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(["audit", fleet, "--out", blocker], capsys)
    _one_line_error(code, err, "--out", "not a directory")
    code, _, err = run(["audit", fleet, "--out", blocker / "sub"], capsys)
    _one_line_error(code, err, "--out")
    code, _, err = run(["learn", fleet, "-o", tmp_path / "missing-dir" / "m.parquet"], capsys)
    _one_line_error(code, err, "-o", "does not exist")


def test_report_of_missing_dir(tmp_path, capsys):
    code, _, err = run(["report", tmp_path / "none"], capsys)
    _one_line_error(code, err, "no such audit output directory")
    (tmp_path / "empty").mkdir()
    code, _, err = run(["report", tmp_path / "empty"], capsys)
    _one_line_error(code, err, "findings.parquet", "no such file")


@pytest.mark.parametrize(("argv", "flag", "where"), [
    (["audit", "{d}", "-o", "{d}/events/x"], "-o/--output", "inside the dataset's events table"),
    (["audit", "{d}", "-o", "{d}"], "-o/--output", "the dataset itself"),
    (["learn", "{d}", "-o", "{d}/counters/model.parquet"], "-o/--output", "inside the dataset's counters table"),
    (["learn", "{d}", "--expected-out", "{d}/events/e.yaml"], "--expected-out", "inside the dataset's events table"),
    (["coverage", "{d}", "--out", "{d}/truth/reports"], "--out", "inside the dataset's truth table"),
])
def test_an_output_among_the_dataset_s_tables_is_refused(fleet, capsys, argv, flag, where):
    """`audit DS -o DS/events/x` wrote the audit's tables among the events' part files (a later
    `export DS/events` failed on them); the pipeline config refused that place already."""
    root = fleet
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    status = main([a.format(d=root) for a in argv])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert f"{flag} {root}" in err and f"outside the dataset's tables, found {where}" in err, err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_a_dataset_without_its_events_table_says_so(fleet, tmp_path, capsys):
    """Counters and their summaries but no events/: the directory was read as a directory of
    events files and the first summary named ("found table 'counter_buckets'")."""
    import shutil

    ds = tmp_path / "ds"
    ds.mkdir()
    for table in ("counters", "counter_buckets"):
        shutil.copytree(fleet / table, ds / table)
    for command in ("audit", "learn"):
        code, _, err = run([command, ds], capsys)
        assert code == 2 and err == (f"baseline: error: {ds}: expected an events table ({ds}/events/date=*/host=*/"
                                     "*.parquet), found none beside its counters, counter_buckets\n"), err
