"""The audit's overlapped steps give what the sequential ones gave, errors included.

Two places run work in a background thread beside the caller (for wall time on two cores):
collect_traces reads the next events batch while it reduces this one (model.collected_ahead),
and write_table_batches conforms the next batch to Arrow while it writes this one. Checked on a
tests/fleetgen fleet (a messy-fleet generator that shares no code with the audit or the
simulator): the same frames in the same order, the same file, and a broken input reported as
before -- after the same batches, with no partial output; a broken counters file still before a
broken events file (the order a user sees when both are bad).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from baseline.fleet.audit import run_audit
from baseline.fleet.model import AUDIT_COLUMNS, collected_ahead, event_batches
from tracer.errors import TracebaseError
from tracer.schema import dataset_files, write_table_batches


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    from fleetgen import generate

    root = tmp_path_factory.mktemp("fleetgen")
    generate(root, hosts=30, hours=4.0, seed=5)
    return root


def _break(path: Path) -> None:
    """A file cut in the middle of its data, as a crashed copy leaves it (no Parquet footer)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_batches_read_ahead_are_the_batches_in_order(fleet):
    batches = list(event_batches(fleet, batch_rows=500, columns=AUDIT_COLUMNS))
    assert len(batches) > 3  # several batches, so that reading ahead happens
    ahead = list(collected_ahead(event_batches(fleet, batch_rows=500, columns=AUDIT_COLUMNS)))
    assert len(ahead) == len(batches)
    for lazy, frames in zip(batches, ahead, strict=True):
        assert frames.equals(lazy.collect(engine="streaming"))


def _read_until_error(batches) -> tuple[int, str]:
    got = 0
    with pytest.raises(TracebaseError) as err:
        for _frames in batches:
            got += 1
    return got, str(err.value)


def test_a_broken_events_file_is_reported_as_read_in_order(fleet, tmp_path):
    """Reading ahead hands over the batches before the broken file and then its error, as the
    batches read one after the other do (event_batches checks footers 64 files at a time)."""
    root = _copy(fleet, tmp_path / "ds")
    files = dataset_files(root, "events")
    assert len(files) > 4
    _break(files[3])
    plain = _read_until_error(b.collect(engine="streaming")
                              for b in event_batches(root, batch_rows=1, columns=AUDIT_COLUMNS))
    ahead = _read_until_error(collected_ahead(event_batches(root, batch_rows=1, columns=AUDIT_COLUMNS)))
    assert ahead == plain
    assert str(files[3]) in ahead[1]


def test_findings_written_in_slices_read_back_whole(fleet, tmp_path):
    findings = run_audit(fleet).findings
    assert findings.height > 1_000
    path = write_table_batches(findings.iter_slices(300), tmp_path / "findings.parquet", "findings")
    back = pl.read_parquet(path)
    assert back.height == findings.height
    expected = findings.select(back.columns).with_columns(
        pl.col(c).cast(back.schema[c]) for c in back.columns if findings.schema[c] != back.schema[c]
    )
    assert back.equals(expected)


def test_a_slice_that_cannot_be_written_leaves_no_file(fleet, tmp_path):
    findings = run_audit(fleet).findings.select("trace_id", "host", "time", "operation")
    good = findings.slice(0, 100)
    bad = findings.slice(100, 100).with_columns(pl.lit("not a time").alias("time"))  # a text where a timestamp goes
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(TracebaseError) as err:
        write_table_batches(iter([good, good, bad, good]), out / "findings.parquet", "findings")
    assert "time" in str(err.value)
    assert list(out.iterdir()) == []  # neither the table nor its temp file


@pytest.mark.parametrize("broken", ["counters", "both"])
def test_a_broken_counters_file_is_reported_first(fleet, tmp_path, broken):
    root = _copy(fleet, tmp_path / "ds")
    counters = dataset_files(root, "counters")
    assert counters
    _break(counters[0])
    if broken == "both":
        _break(dataset_files(root, "events")[0])
    with pytest.raises(TracebaseError) as err:
        run_audit(root, tmp_path / "out")
    assert str(counters[0]) in str(err.value)
    assert not (tmp_path / "out").exists()


# --- round thirteen: the counters bucketed on a thread of their own beside the events pass ----


def test_bucketed_counters_count_every_snapshot_row_once(fleet):
    """The counters reduced off the main thread (bucketed_counters) hold every call of the
    counters files, each (host, probe, snapshot) once, as read here with plain pyarrow."""
    import pyarrow.parquet as pq

    from baseline.fleet.audit import bucketed_counters

    files = dataset_files(fleet, "counters")
    rows = pl.concat([pl.from_arrow(pq.read_table(f, columns=["snapshot_time", "probe", "invocations"]))
                      .with_columns(pl.lit(f.parent.name.removeprefix("host=")).alias("host")) for f in files])
    once = rows.unique(["host", "probe", "snapshot_time"], keep="first", maintain_order=True)
    calls, errors, attributes = bucketed_counters(files, None)
    assert calls["n"].sum() == once["invocations"].sum() > 0
    assert set(calls["host"].unique()) == set(once["host"].unique())
    assert set(attributes["host"].unique()) == set(once["host"].unique())
    assert errors.height > 0
    assert bucketed_counters([], None) is None


def test_raise_earlier_failure_prefers_the_stage_that_came_first():
    """The error a run reports does not depend on which thread failed first: the earlier
    stage's error, however late it comes; none when that stage succeeded or never ran."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from baseline.fleet.audit import raise_earlier_failure

    gate = threading.Event()

    def fails_late():
        gate.wait(10)
        raise TracebaseError("counters/x.parquet: not a Parquet file")

    with ThreadPoolExecutor(1) as pool:
        late = pool.submit(fails_late)
        gate.set()  # (the caller fails first; raise_earlier_failure waits for the earlier stage)
        with pytest.raises(TracebaseError, match="counters/x.parquet"):
            raise_earlier_failure(late)
        raise_earlier_failure(pool.submit(lambda: 1))  # succeeded: the caller's own error goes on
        raise_earlier_failure(None)
        blocker = threading.Event()
        pool.submit(blocker.wait, 10)
        queued = pool.submit(lambda: 1 / 0)
        assert queued.cancel()
        raise_earlier_failure(queued)  # cancelled: nothing to report
        blocker.set()


def test_a_broken_counters_file_is_one_line_and_no_output_from_the_cli(fleet, tmp_path, capsys):
    """The CLI's report of a counters file broken (and an events file too) while the counters
    are read on their own thread: one line naming the counters file, exit 2, no output."""
    from baseline.cli import main

    root = _copy(fleet, tmp_path / "ds")
    counters = dataset_files(root, "counters")
    _break(counters[-1])
    _break(dataset_files(root, "events")[0])
    code = main(["audit", str(root), "--refit", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("baseline: error: ") and str(counters[-1]) in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


# --- round seventeen: the counters' listing on the counters' thread -------------------------


def test_an_audit_without_counters_lists_none_on_the_counters_thread(fleet, tmp_path):
    """The counters' listing moved onto the counters' thread: a dataset without a counters table
    still audits, with no host alerts (nothing to list is no error)."""
    import shutil

    root = _copy(fleet, tmp_path / "ds")
    shutil.rmtree(root / "counters")
    result = run_audit(root)
    assert result.host_alerts.is_empty()
    assert result.findings.height > 1_000


def test_a_counters_table_that_cannot_be_listed_is_one_line_and_reported_first(fleet, tmp_path, capsys):
    """An error of the counters' listing, now on the counters' thread (a date entry that is a
    file, not a directory), reaches the CLI as one line naming it, exit 2, no output, and is
    still reported before a broken events file, as when the listing came before the events pass."""
    from baseline.cli import main

    root = _copy(fleet, tmp_path / "ds")
    bad = root / "counters" / "date=9999-01-01"
    bad.write_bytes(b"")
    _break(dataset_files(root, "events")[0])
    code = main(["audit", str(root), "--refit", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("baseline: error: ") and str(bad) in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
