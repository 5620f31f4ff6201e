"""Values no call tree holds (tracer.schema.EVENT_VALUE_RULES): a trace kind outside good /
failure / full, a negative depth or frame number, a repeat count under 1, a negative count of
lost events. Every reader took them without a word (an audit of a dataset holding them gave the
same findings as without; a trace of unknown kind was neither good nor failing). Now the audit,
`baseline diff` and ingest say which file, column and row, exit 2, and ingest quarantines the
snapshot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_harness import one_line_error, run_shell
from test_diff_cli import trace_frame, write
from test_ingest import T0, write_snapshot

from baseline.pipeline.ingest import ingest_spool
from tracer.schema import (
    EVENT_VALUE_RULES,
    column_value_problem,
    dataset_files,
    event_value_problem,
    read,
)

# column -> (a value breaking its rule, how it shows in the error)
WRONG = {
    "kind": ("sampled", "found 'sampled' in row 1"),
    "depth": (-3, "found -3 in row 1"),
    "seq": (-1, "found -1 in row 1"),
    "repeat_count": (0, "found 0 in row 1"),
    "lost_events": (-7, "found -7 in row 1"),
}


def _with_value(path: Path, column: str, value, row: int = 1) -> None:
    """Rewrite the Parquet file `path` with `column`'s `row` set to `value` (footer kept)."""
    table = pq.read_table(path)
    at = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    values[row] = value
    field = table.schema.field(at)
    table = table.set_column(at, field, pa.array(values, field.type))
    pq.write_table(table, path)


def test_every_rule_is_tested():
    assert set(WRONG) == set(EVENT_VALUE_RULES)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("values") / "fleet"
    simulate(root, hosts=6, hours=1, seed=5)
    return root


@pytest.mark.parametrize("column", sorted(WRONG))
def test_audit_names_the_file_column_and_row(fleet, tmp_path, column):
    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    target = sorted(dataset_files(copy, "events"))[2]
    value, shown = WRONG[column]
    _with_value(target, column, value)
    err = one_line_error(run_shell(f"baseline audit {copy}", tmp_path))
    assert str(target) in err and f"column '{column}'" in err and shown in err, err
    assert EVENT_VALUE_RULES[column][1] in err
    assert not (copy / "audit").exists()  # nothing written from data it cannot read


def test_learn_names_a_trace_of_no_kind_too(fleet, tmp_path):
    """`baseline learn` reads the good traces only: a row of kind 'sampled' went out with the
    failures and the model was learned from fewer traces with exit 0, where the audit of the same
    dataset refused it. It is read on to the value check, which names it."""
    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    target = sorted(dataset_files(copy, "events"))[2]
    value, shown = WRONG["kind"]
    _with_value(target, "kind", value)
    err = one_line_error(run_shell(f"baseline learn {copy} -o model.parquet", tmp_path))
    assert str(target) in err and "column 'kind'" in err and shown in err, err
    assert not (tmp_path / "model.parquet").exists()


def test_audit_of_the_fleet_as_written_is_clean(fleet, tmp_path):
    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    proc = run_shell(f"baseline audit {copy}", tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = read(dataset_files(copy, "events"), "events")
    assert event_value_problem(events) is None


@pytest.mark.parametrize("column", ["kind", "depth", "seq"])
def test_diff_names_the_good_trace_that_breaks_a_rule(tmp_path, column):
    good = write(tmp_path / "good.parquet", trace_frame("g1"))
    other = write(tmp_path / "other.parquet", trace_frame("g2", pid=11))
    bad = write(tmp_path / "bad.parquet", trace_frame("b1", pid=12))
    value, shown = WRONG[column]
    _with_value(other, column, value)
    err = one_line_error(run_shell(f"baseline diff {good} {other} {bad}", tmp_path))
    assert "other.parquet" in err and f"column '{column}'" in err and shown in err, err


def test_diff_names_a_one_kind_file_read_from_its_statistics(tmp_path):
    """A one-trace file's kind is taken from its footer's statistics, unread: checked there too."""
    good = write(tmp_path / "good.parquet", trace_frame("g1"))
    bad = write(tmp_path / "bad.parquet", trace_frame("b1", pid=12))
    table = pq.read_table(good)
    at = table.schema.get_field_index("kind")
    table = table.set_column(at, table.schema.field(at), pa.array(["partial"] * table.num_rows, pa.string()))
    pq.write_table(table, good)
    err = one_line_error(run_shell(f"baseline diff {good} {bad}", tmp_path))
    assert "good.parquet" in err and "column 'kind'" in err and "found 'partial' in row 0" in err, err


def test_ingest_quarantines_a_snapshot_with_a_negative_depth(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    write_snapshot(spool, "host000", T0, 0)
    odd = write_snapshot(spool, "host001", T0, 0)
    _with_value(odd / "events.parquet", "depth", -1)
    result = ingest_spool(spool, dataset, quarantine)
    assert len(result.quarantined) == 1, result
    reason = result.quarantined[0]["reason"]
    assert "column 'depth'" in reason and "found -1 in row 1" in reason and odd.name in reason, reason
    assert set(read(dataset_files(dataset, "events"), "events")["host"]) == {"host000"}


def test_column_rules_on_arrow_and_polars_agree():
    import polars as pl

    for column, (value, _) in WRONG.items():
        good = "good" if column == "kind" else 2
        values = pa.array([good, value, good])
        assert column_value_problem(column, values)[1] == f"{WRONG[column][1][6:]}", column
        assert event_value_problem(pl.DataFrame({column: values.to_pylist()}))[2] == WRONG[column][1][6:]
        assert column_value_problem(column, pa.array([good, None, good])) is None


def test_audit_names_a_counters_row_with_more_failures_than_calls(fleet, tmp_path):
    """A dataset another writer made (no 15-minute summaries beside its counters): a row
    counting more failures than invocations gave its cell a failure rate over 1; ingest
    quarantines such a snapshot (check_counts), and the audit now names the file and row."""
    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    shutil.rmtree(copy / "counter_buckets")
    target = sorted(dataset_files(copy, "counters"))[1]
    table = pq.read_table(target)
    calls = table.column("invocations").to_pylist()
    _with_value(target, "failures", calls[1] + 3)
    err = one_line_error(run_shell(f"baseline audit {copy}", tmp_path))
    assert str(target) in err and "column 'failures'" in err and f"found {calls[1] + 3} failures of {calls[1]}" in err, err
    assert "in row 1" in err


@pytest.mark.parametrize(("column", "value", "shown"), [
    ("failures", None, "failures of"),  # one more failure than the row's calls
    ("invocations", 2**62, f"found {2**62} in row 1"),  # summed, the week's calls overflowed
])
def test_coverage_names_a_counters_row_no_interval_holds(fleet, tmp_path, column, value, shown):
    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    target = sorted(dataset_files(copy, "counters"))[1]
    calls = pq.read_table(target).column("invocations").to_pylist()
    _with_value(target, column, calls[1] + 1 if value is None else value)
    err = one_line_error(run_shell(f"baseline coverage {copy} --out {tmp_path / 'out'}", tmp_path))
    assert str(target) in err and f"column '{column}'" in err and shown in err, err
    assert not (tmp_path / "out").exists()


def test_ingest_quarantines_a_count_no_interval_holds(tmp_path):
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    write_snapshot(spool, "host000", T0, 0)
    odd = write_snapshot(spool, "host001", T0, 0, probes={"ib_uverbs_reg_mr": (2**61, 1, {"EFAULT": 1})})
    result = ingest_spool(spool, dataset, quarantine)
    assert len(result.quarantined) == 1, result
    reason = result.quarantined[0]["reason"]
    assert "column 'invocations'" in reason and f"found {2**61} in row 0" in reason and odd.name in reason, reason
