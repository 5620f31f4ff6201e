"""A closed day compacted across hosts (the day layout: tracer.schema, baseline.pipeline.ingest
`compact_days`): every reader reads it as it read the host partitions, ingest's idempotency
manifest stays true for snapshots that come in late, retention and quarantine keep working, and
a kill -9 at any instant leaves readers the old partitions or the new day files, never both and
never neither. The audit's outputs on both layouts: tests/test_audit_part_files.py."""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from test_ingest import T0, make_spool, write_snapshot

from baseline.fleet.model import event_batches
from baseline.pipeline.ingest import (
    apply_retention,
    compact_dataset,
    compact_days,
    file_snapshots,
    ingest_spool,
)
from baseline.simulator.simulate import simulate
from tracer.schema import dataset_files, file_metadata, read, read_arrow, scan

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
DAY = "2026-11-28"
TODAY = dt.date(2026, 12, 1)  # the day is three days old: closed and past a grace of 2
KEY = ["host", "trace_id", "seq"]


def _events(dataset: Path) -> pl.DataFrame:
    return read(dataset_files(dataset, "events"), "events").sort(KEY)


@pytest.fixture(scope="module")
def simulated_day(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("simday") / "ds"
    simulate(root, hosts=12, hours=3, seed=7, start=f"{DAY}T00:00:00Z")
    return root


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def test_a_closed_day_reads_the_same_in_day_files(simulated_day, tmp_path):
    day = _copy(simulated_day, tmp_path / "day")
    before = _events(day)
    rows = before.height
    result = compact_days(day, days_after=2, today=TODAY, file_rows=rows // 4)
    assert result.days == 1 and result.day_files_in == 12 and 3 <= result.day_files_out <= 5, result
    date_dir = day / "events" / f"date={DAY}"
    files = sorted(p.name for p in date_dir.iterdir())
    assert files == [f"day-{i:04d}.parquet" for i in range(result.day_files_out)], files
    # sorted by host then time, whole hosts a file, the span in the footer
    spans = []
    for f in sorted(date_dir.iterdir()):
        frame = pl.read_parquet(f)
        assert frame["host"].is_sorted()
        meta = file_metadata(f)
        assert meta["layout"] == "day"
        spans.append(tuple(__import__("json").loads(meta["hosts"])))
        assert spans[-1] == (frame["host"][0], frame["host"][-1])
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False)), spans  # a host in one file only
    after = _events(day)
    assert after.equals(before)
    # the other readers of tracer.schema
    assert scan(day / "events", "events").select(pl.len()).collect().item() == rows
    arrow = read_arrow(dataset_files(day, "events"), "events", columns=["host", "trace_id", "seq"])
    assert pl.from_arrow(arrow).sort(KEY).equals(before.select(KEY))
    batches = [b.collect() for b in event_batches(day, batch_rows=rows // 4, columns=["host", "trace_id", "seq"])]
    assert len(batches) == result.day_files_out  # a batch may end between two day files
    hosts_per_batch = [set(b["host"].unique()) for b in batches]
    assert all(not (a & b) for i, a in enumerate(hosts_per_batch) for b in hosts_per_batch[i + 1:])
    assert pl.concat(batches).sort(KEY).equals(before.select(KEY))
    # counters (and their summaries) are not day tables: left per host
    assert len(dataset_files(day, "counters")) == len(dataset_files(simulated_day, "counters"))
    # a second run finds nothing to do, and a day inside its grace period is never touched
    assert compact_days(day, days_after=2, today=TODAY).days == 0
    young = _copy(simulated_day, tmp_path / "young")
    assert compact_days(young, days_after=4, today=TODAY).days == 0
    assert _events(young).equals(before)


def test_the_tidy_task_compacts_closed_days(tmp_path, simulated_day):
    from baseline.pipeline.config import ConfigError, load_config
    from baseline.pipeline.tasks import tidy

    day = _copy(simulated_day, tmp_path / "ds")
    cfg_path = tmp_path / "pipeline.yaml"
    cfg_path.write_text(
        "version: 1\npaths:\n"
        + "".join(f"  {k}: {tmp_path / k}\n" for k in ("spool", "quarantine", "findings", "reports"))
        + f"  dataset: {day}\n  model: {tmp_path / 'model.parquet'}\n  expected_errors: {tmp_path / 'e.yaml'}\n"
        + "thresholds:\n  compact_days_after: 2\n"
    )
    cfg = load_config(cfg_path)
    assert cfg.thresholds.compact_days_after == 2
    out = tidy(cfg, now=dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC))
    assert out["compact"]["days"] == 1, out
    assert not list((day / "events" / f"date={DAY}").glob("host=*"))
    off = tmp_path / "off.yaml"
    off.write_text(cfg_path.read_text().replace("compact_days_after: 2", "compact_days_after: 0"))
    assert load_config(off).thresholds.compact_days_after == 0
    for bad, found in (("-1", "found -1"), ("1.5", "found 1.5 (float)"), ("yes", "found True (bool)")):
        off.write_text(cfg_path.read_text().replace("compact_days_after: 2", f"compact_days_after: {bad}"))
        with pytest.raises(ConfigError, match=rf"key 'thresholds.compact_days_after': expected an integer >= 0 "
                                              rf"and <= \d+, {re.escape(found)}"):
            load_config(off)


def _ingested(tmp_path: Path, hosts: int = 3, snapshots: int = 4) -> tuple[Path, Path, Path]:
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    make_spool(spool, hosts=hosts, snapshots=snapshots)
    ingest_spool(spool, dataset, quarantine, remove_ingested=False)  # the spool kept: re-sent later
    return spool, dataset, quarantine


LATER = dt.date(2026, 11, 28)  # T0 (2026-11-25) is three days before


def test_late_snapshots_for_a_compacted_day_are_neither_lost_nor_duplicated(tmp_path):
    spool, dataset, quarantine = _ingested(tmp_path)
    want = _events(dataset)
    assert want.height == 24
    done = compact_days(dataset, days_after=2, today=LATER)
    assert done.days == 1 and done.day_files_out == 1
    (day_file,) = (dataset / "events" / "date=2026-11-25").iterdir()
    assert file_snapshots(day_file) == frozenset()  # the manifest is per host, compressed
    # the whole spool re-sent (a run killed before its cleanup): nothing new
    again = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    assert again.new_rows == 0 and again.already_ingested == 12, again
    assert _events(dataset).equals(want)
    # a late snapshot of that day: kept beside the day files, read with them
    write_snapshot(spool, "host001", T0 + dt.timedelta(minutes=30), 50)
    late = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    assert late.snapshots == 1 and late.rows["events"] == 2, late
    with_late = _events(dataset)
    assert with_late.height == 26 and with_late.select(KEY).is_unique().all()
    assert (dataset / "events" / "date=2026-11-25" / "host=host001").is_dir()
    batches = [b.collect() for b in event_batches(dataset, batch_rows=1, columns=KEY)]
    assert len(batches) == 1  # late rows meet their host's day file in one batch
    # re-sent once more, then merged by the next day compaction, then re-sent again: still once
    assert ingest_spool(spool, dataset, quarantine, remove_ingested=False).new_rows == 0
    merged = compact_days(dataset, days_after=2, today=LATER)
    assert merged.days == 1 and merged.day_files_in == 2, merged
    assert sorted(p.name for p in (dataset / "events" / "date=2026-11-25").iterdir()) == ["day-0000.parquet"]
    assert _events(dataset).equals(with_late)
    final = ingest_spool(spool, dataset, quarantine)
    assert final.new_rows == 0 and final.already_ingested == 13, final
    assert _events(dataset).equals(with_late)
    # the counters stay per host, their manifest in their own footers as before
    assert read(dataset_files(dataset, "counters"), "counters").height == 26


def test_retention_and_quarantine_work_on_a_compacted_day(tmp_path):
    spool, dataset, quarantine = _ingested(tmp_path)
    make_spool(spool, hosts=3, snapshots=2, start=T0 + dt.timedelta(days=2))  # 2026-11-27: not closed yet
    ingest_spool(spool, dataset, quarantine)
    assert compact_days(dataset, days_after=2, today=LATER).days == 1
    assert (dataset / "events" / "date=2026-11-25" / "day-0000.parquet").is_file()
    # a bad late file for the compacted day is quarantined with its reason; the day is untouched
    snap = write_snapshot(spool, "host002", T0 + dt.timedelta(hours=1), 70)
    (snap / "events.parquet").write_bytes(b"not parquet")
    before = _events(dataset)
    result = ingest_spool(spool, dataset, quarantine)
    assert [q["path"].endswith("events.parquet") for q in result.quarantined] == [True], result.quarantined
    assert Path(result.quarantined[0]["path"] + ".reason").is_file()
    assert _events(dataset).equals(before)
    # retention drops the compacted day like any date partition, and keeps the newest
    removed = apply_retention(dataset, quarantine, dataset_days=1, quarantine_days=30, today=dt.date(2026, 11, 27))
    assert removed["partitions"] >= 2  # events (day files) and counters of 2026-11-25
    assert not (dataset / "events" / "date=2026-11-25").exists()
    assert sorted(_events(dataset)["start_time"].dt.date().unique().to_list()) == [dt.date(2026, 11, 27)]


def test_a_date_holding_something_else_is_left_as_it_is(simulated_day, tmp_path):
    day = _copy(simulated_day, tmp_path / "day")
    date_dir = day / "events" / f"date={DAY}"
    (date_dir / "README.txt").write_text("an operator's note")
    before = _events(day)
    result = compact_days(day, days_after=2, today=TODAY)
    assert result.days == 0 and len(result.days_left) == 1 and "README.txt" in result.days_left[0]
    assert (date_dir / "README.txt").is_file() and len(list(date_dir.glob("host=*"))) == 12
    assert _events(day).equals(before)


_KILLED = """
import os, signal, sys, datetime as dt
from baseline.pipeline import ingest

where = sys.argv[2]
if where in ("before-swap", "after-swap"):
    real = ingest.atomic.exchange
    def exchange(a, b):
        if where == "after-swap":
            real(a, b)
        os.kill(os.getpid(), signal.SIGKILL)
    ingest.atomic.exchange = exchange
elif where == "mid-write":
    real_write = ingest.write_table
    calls = []
    def write_table(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_write(*args, **kwargs)
    ingest.write_table = write_table
elif where == "cleanup":
    real_rmtree = ingest.shutil.rmtree
    def rmtree(path, *args, **kwargs):
        if ".compact-" in str(path):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rmtree(path, *args, **kwargs)
    ingest.shutil.rmtree = rmtree
ingest.compact_days(sys.argv[1], days_after=2, today=dt.date(2026, 12, 1), file_rows=int(sys.argv[3]))
"""


def _check_whole(dataset: Path, want: pl.DataFrame) -> None:
    got = _events(dataset)
    assert got.height == want.height and got.equals(want)  # never both forms, never neither
    glob = pl.scan_parquet(str(dataset / "events" / "**" / "*.parquet"), hive_partitioning=False)
    assert glob.select(pl.len()).collect().item() == want.height  # the documented glob: no debris


@pytest.mark.parametrize("where", ["mid-write", "before-swap", "after-swap", "cleanup"])
def test_a_day_compaction_killed_at_each_step_leaves_one_form(simulated_day, tmp_path, where):
    day = _copy(simulated_day, tmp_path / "day")
    want = _events(day)
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(day), where, str(want.height // 3)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == -9, proc.stderr[-800:]
    hidden = [p for p in day.iterdir() if p.name.startswith(".compact-")]
    assert hidden, "the kill left no staging: it landed outside the compaction"
    swapped = not list((day / "events" / f"date={DAY}").glob("host=*"))
    assert swapped == (where in ("after-swap", "cleanup"))
    _check_whole(day, want)
    # the next run removes the debris and finishes (or finds the day done)
    compact_days(day, days_after=2, today=TODAY, file_rows=want.height // 3)
    assert not [p for p in day.rglob("*") if p.name.endswith(".tmp")]
    assert not list((day / "events" / f"date={DAY}").glob("host=*"))
    _check_whole(day, want)


def test_kill_9_trials_at_random_instants(simulated_day, tmp_path):
    """The CLI-free trial: compact_days in a process killed with -9 at a random instant of its
    run, the readers checked, the next run finishing the job; five trials."""
    want = _events(simulated_day)
    code = ("import sys, datetime as dt\nfrom baseline.pipeline.ingest import compact_days\n"
            f"compact_days(sys.argv[1], days_after=2, today=dt.date(2026, 12, 1), file_rows={want.height // 6})\n")
    timing = _copy(simulated_day, tmp_path / "timing")
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", code, str(timing)], check=True, env=ENV, timeout=300)
    full_s = time.monotonic() - t
    rng = random.Random(20)
    landed = 0
    for trial in range(5):
        day = _copy(simulated_day, tmp_path / f"trial{trial}")
        proc = subprocess.Popen([sys.executable, "-c", code, str(day)], env=ENV, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=rng.uniform(0.3, 1.0) * full_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            landed += 1
        _check_whole(day, want)
        compact_days(day, days_after=2, today=TODAY, file_rows=want.height // 6)
        _check_whole(day, want)
        assert not [p for p in day.rglob("*") if p.name.endswith(".tmp")]
    print(f"{landed} of 5 kills landed mid-run (a full run {full_s:.2f} s)")


def test_compact_dataset_runs_both_steps(tmp_path):
    """The pipeline's one call: host partitions first (min_files), then closed days."""
    spool, dataset, quarantine = _ingested(tmp_path)
    result = compact_dataset(dataset, min_files=2, days_after=2, today=LATER)
    assert result.days == 1
    assert _events(dataset).height == 24
    with pytest.raises(Exception, match="days_after"):
        compact_dataset(dataset, days_after=0, today=LATER)


def test_baseline_ingest_compacts_closed_days_on_request(tmp_path, capsys):
    """`baseline ingest --compact-days-after DAYS`: the cron user's tidy (default 0: never)."""
    from baseline.cli import main

    spool, dataset = tmp_path / "spool", tmp_path / "ds"
    make_spool(spool, hosts=3, snapshots=2)  # 2026-11-25: days old by the clock
    assert main(["ingest", str(spool), str(dataset), "--compact-days-after", "2"]) == 0
    out = capsys.readouterr().out
    assert "compacted 1 closed days across hosts (3 files -> 1 day files)" in out, out
    assert [p.name for p in (dataset / "events" / "date=2026-11-25").iterdir()] == ["day-0000.parquet"]
    assert _events(dataset).height == 12
    make_spool(spool, hosts=1, snapshots=1, start=T0 + dt.timedelta(hours=2))
    assert main(["ingest", str(spool), str(dataset)]) == 0  # by default: a late partition beside the day files
    capsys.readouterr()
    assert (dataset / "events" / "date=2026-11-25" / "host=host000").is_dir() and _events(dataset).height == 14
    for bad in ("-1", "x", "1.5"):
        assert main(["ingest", str(spool), str(dataset), "--compact-days-after", bad]) == 2
        err = capsys.readouterr().err
        assert "--compact-days-after" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_a_filesystem_that_cannot_swap_keeps_the_day_per_host(simulated_day, tmp_path, monkeypatch):
    """No half-safe fallback: where renameat2(RENAME_EXCHANGE) is refused (EINVAL: NFS, some
    overlay and FUSE mounts) the date stays as it was, said in days_left, no staging left."""
    import errno

    from baseline.pipeline import ingest

    def refuse(a, b):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(b))

    day = _copy(simulated_day, tmp_path / "day")
    before = _events(day)
    monkeypatch.setattr(ingest.atomic, "exchange", refuse)
    result = compact_days(day, days_after=2, today=TODAY)
    assert result.days == 0 and len(result.days_left) == 1 and "cannot swap directories" in result.days_left[0]
    assert len(list((day / "events" / f"date={DAY}").glob("host=*"))) == 12
    assert not [p for p in day.iterdir() if p.name.startswith(".compact-")]
    assert _events(day).equals(before)


def _empty_events_snapshot(spool: Path, host: str, when: dt.datetime, seq: int) -> Path:
    """A real snapshot whose interval had no event rows (counters only): a quiet host."""
    from tracer.schema import TABLES, write_table

    snap = write_snapshot(spool, host, when, seq)
    write_table(TABLES["events"].empty_table(), snap / "events.parquet", "events")
    return snap


def test_a_quiet_host_in_a_day_file_is_found_by_its_manifest(tmp_path):
    """A host whose events are empty all day is in its day file's manifest, rows or none: its
    re-sent snapshots are not taken again. The day file's host span came from its rows, so a
    quiet host sorting first or last in a file was in no span: ingest took its snapshots as new
    (late partitions for good, and the day recompacted by every tidy)."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for s in range(3):
        when = T0 + dt.timedelta(seconds=5 * s)
        for h in range(5):  # host000, host002, host004 quiet; host001, host003 with rows
            (write_snapshot if h % 2 else _empty_events_snapshot)(spool, f"host{h:03d}", when, s)
    first = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    assert first.snapshots == 15 and first.rows["events"] == 12, first
    want = _events(dataset)
    done = compact_days(dataset, days_after=2, today=LATER, file_rows=1)  # quiet hosts at each file's edges
    assert done.days == 1 and done.day_files_out == 3, done
    again = ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    assert again.snapshots == 0 and again.already_ingested == 15, again
    spans = [file_metadata(f)["hosts"] for f in sorted((dataset / "events" / "date=2026-11-25").iterdir())]
    assert spans == ['["host000", "host001"]', '["host002", "host003"]', '["host004", "host004"]'], spans
    assert sorted(p.name for p in (dataset / "events" / "date=2026-11-25").iterdir()) == [
        "day-0000.parquet", "day-0001.parquet", "day-0002.parquet"]
    assert compact_days(dataset, days_after=2, today=LATER).days == 0  # nothing late: not rewritten
    assert _events(dataset).equals(want)


def test_a_day_file_whose_footer_does_not_read_is_said_not_a_crash(tmp_path, capsys):
    """A day file truncated, or whose ingest manifest does not decode (written by other code,
    or damaged): `baseline ingest` names the file in a warning and takes the host's late
    snapshots as new (as for a part file whose footer does not read); the day compaction
    leaves the date as it is, naming the file. It failed as an internal error (a base64
    traceback) in the manifest lookup, and the compaction of that date too."""
    import pyarrow.parquet as pq

    from baseline.cli import main

    spool, dataset, quarantine = _ingested(tmp_path, hosts=2, snapshots=2)
    assert compact_days(dataset, days_after=2, today=LATER).days == 1
    day_file = dataset / "events" / "date=2026-11-25" / "day-0000.parquet"
    table = pq.read_table(day_file)
    meta = dict(table.schema.metadata)
    assert meta[b"tracebase.day_snapshots"]
    for damage in ("manifest", "truncated"):
        if damage == "manifest":
            meta[b"tracebase.day_snapshots"] = b"not base64 at all:99"
            pq.write_table(table.replace_schema_metadata(meta), day_file)
        else:
            with open(day_file, "r+b") as fh:
                fh.truncate(os.path.getsize(day_file) // 2)
        write_snapshot(spool, "host001", T0 + dt.timedelta(minutes=30 + len(damage)), 60 + len(damage))
        assert main(["ingest", str(spool), str(dataset), "--keep-spool", "--compact-days-after", "2"]) == 0
        captured = capsys.readouterr()
        warnings = [line for line in captured.err.splitlines() if str(day_file) in line]
        assert "internal error" not in captured.err and "Traceback" not in captured.err, captured.err
        # the lookup (per host of the spool), then the compaction leaving the date
        assert any("host001 on 2026-11-25 unknown" in w for w in warnings[:-1]), warnings
        left = "the date left as it is" if damage == "manifest" else "cannot read its footer"
        assert left in warnings[-1] and "unknown" not in warnings[-1], warnings
        assert (dataset / "events" / "date=2026-11-25" / "host=host001").is_dir()
    with pytest.raises(Exception, match=re.escape(str(day_file))):
        _events(dataset)  # the readers refuse the truncated file, naming it


def test_a_file_of_a_newer_schema_version_is_not_rewritten_as_this_one(simulated_day, tmp_path):
    """A file a newer tracebase wrote (schema version 3) in a closed date: the readers refuse it
    naming the file, and so does the compaction, which leaves the date and the file as they are.
    It read such files raw and wrote their rows into day files as version 2, the file's own
    columns dropped and the refusal gone."""
    import pyarrow.parquet as pq

    day = _copy(simulated_day, tmp_path / "day")
    newer = sorted((day / "events" / f"date={DAY}").glob("host=*/*.parquet"))[3]
    table = pq.read_table(newer)
    meta = {**table.schema.metadata, b"tracebase.schema_version": b"3"}
    pq.write_table(table.append_column("added_later", pa.array([1] * table.num_rows)).replace_schema_metadata(meta),
                   newer)
    written = newer.read_bytes()
    with pytest.raises(Exception, match=re.escape(f"{newer}: expected schema version 1 or 2, found schema version 3")):
        _events(day)
    result = compact_days(day, days_after=2, today=TODAY)
    assert result.days == 0 and len(result.days_left) == 1, result
    assert str(newer) in result.days_left[0] and "schema version 3" in result.days_left[0], result.days_left
    assert newer.read_bytes() == written
    assert len(list((day / "events" / f"date={DAY}").glob("host=*"))) == 12
    assert not [p for p in day.iterdir() if p.name.startswith(".compact-")]


@pytest.fixture(scope="module")
def simulated_days(tmp_path_factory) -> Path:
    """Four closed days of a small fleet: a backlog, as the first run after an upgrade meets."""
    root = tmp_path_factory.mktemp("simdays") / "ds"
    simulate(root, hosts=4, hours=96, seed=11, start="2026-11-20T00:00:00Z")
    return root


def test_a_backlog_of_closed_days_is_compacted_newest_first_within_the_budget(simulated_days, tmp_path):
    """The whole run holds the dataset's exclusive lock: a backlog of closed dates (every date
    kept, 90 by default, the first time) held it for hours, where an ingest or an audit waits
    600 s for it. Now the newest date first, and no new date once the budget is spent (one at
    least): the rest is said and left to the next run."""
    ds = _copy(simulated_days, tmp_path / "ds")
    want = _events(ds)
    dates = sorted(p.name for p in (ds / "events").iterdir())
    assert len(dates) == 4
    today = dt.date(2026, 11, 26)  # every date closed
    done: list[str] = []
    for left in (3, 2, 1, 0):
        result = compact_days(ds, days_after=2, today=today, budget_s=0)  # spent at once: one date a run
        assert result.days == 1, result
        now = [d for d in dates if not list((ds / "events" / d).glob("host=*"))]
        (new,) = set(now) - set(done)
        assert new == max(set(dates) - set(done))  # the newest date not yet compacted
        done = now
        assert result.days_left == ([f"{left} older closed dates not looked at (the day compaction's 0 s budget "
                                     f"spent: the next run goes on)"] if left else []), result.days_left
        assert _events(ds).equals(want)
    assert compact_days(ds, days_after=2, today=today, budget_s=0).days == 0


def test_tidy_drops_dates_past_retention_before_compacting(simulated_days, tmp_path):
    """Retention first: a date past it is dropped, not compacted across hosts first (its whole
    day read and rewritten, holding the lock) and then dropped."""
    from baseline.pipeline.config import load_config
    from baseline.pipeline.tasks import tidy

    ds = _copy(simulated_days, tmp_path / "ds")
    cfg_path = tmp_path / "pipeline.yaml"
    cfg_path.write_text(
        "version: 1\npaths:\n"
        + "".join(f"  {k}: {tmp_path / k}\n" for k in ("spool", "quarantine", "findings", "reports"))
        + f"  dataset: {ds}\n  model: {tmp_path / 'model.parquet'}\n  expected_errors: {tmp_path / 'e.yaml'}\n"
        + "retention:\n  dataset_days: 4\nthresholds:\n  compact_days_after: 2\n"
    )
    out = tidy(load_config(cfg_path), now=dt.datetime(2026, 11, 25, 3, tzinfo=dt.UTC))
    # kept: 2026-11-21 and later; closed: 2026-11-23 and before -> 11-21, 11-22, 11-23 compacted
    assert sorted(p.name for p in (ds / "events").iterdir()) == [
        "date=2026-11-21", "date=2026-11-22", "date=2026-11-23"], out
    assert out["compact"]["days"] == 3 and out["compact"]["day_files_in"] == 12, out


_RETENTION_KILLED = """
import os, signal, sys, datetime as dt
from pathlib import Path
from baseline.pipeline import ingest

real = ingest.shutil.rmtree

def rmtree(path, *args, **kwargs):  # the events date: one day file deleted, then kill -9
    days = sorted(Path(path).rglob("day-*.parquet"))
    if not days:
        return real(path, *args, **kwargs)  # another table's date
    days[0].unlink()
    os.kill(os.getpid(), signal.SIGKILL)
ingest.shutil.rmtree = rmtree
ingest.apply_retention(sys.argv[1], sys.argv[2], dataset_days=5, quarantine_days=5, today=dt.date(2026, 11, 26))
"""


def test_a_retention_run_killed_mid_drop_leaves_a_date_whole_or_gone(simulated_days, tmp_path):
    """Retention of a date compacted across hosts, killed with -9 while deleting it: readers see
    the whole date or none of it, and the next run removes what is left. Deleted in place, part
    of the date's day files stayed (whole hosts gone, the rest read as that day's data)."""
    ds = _copy(simulated_days, tmp_path / "ds")
    expired = ds / "events" / "date=2026-11-20"
    kept = _events(ds).filter(pl.col("start_time").dt.date() >= dt.date(2026, 11, 21))
    rows = read(list(expired.rglob("*.parquet")), "events").height
    assert compact_days(ds, days_after=2, today=dt.date(2026, 11, 26), file_rows=rows // 3).days == 4
    assert len(list(expired.glob("day-*.parquet"))) >= 2
    proc = subprocess.run([sys.executable, "-c", _RETENTION_KILLED, str(ds), str(tmp_path / "q")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == -9, proc.stderr[-800:]
    assert not expired.exists(), sorted(p.name for p in expired.iterdir())  # gone for readers at once
    assert _events(ds).sort(KEY).equals(kept.sort(KEY))
    assert [p for p in ds.iterdir() if p.name.startswith(".compact-")]  # the rest, hidden
    apply_retention(ds, tmp_path / "q", dataset_days=5, quarantine_days=5, today=dt.date(2026, 11, 26))
    assert not [p for p in ds.iterdir() if p.name.startswith(".compact-")]
    assert _events(ds).sort(KEY).equals(kept.sort(KEY))


def test_a_day_file_another_writer_made_is_merged_by_its_stored_hosts(simulated_day, tmp_path):
    """A day file written by other code: the host column stored, but no tracebase.hosts or
    manifest in its footer (and the metadata column first, shifting the leaf columns). Its host
    span comes from the column's statistics: a late partition beside it is merged by the next
    compaction, where the date was left alone by every run, said each time."""
    import pyarrow.parquet as pq

    day = _copy(simulated_day, tmp_path / "day")
    want = _events(day)
    date_dir = day / "events" / f"date={DAY}"
    hosts = sorted(p.name for p in date_dir.glob("host=*"))
    late = date_dir / hosts[4]
    moved = tmp_path / "late"
    shutil.move(late, moved)  # one host's partition kept aside: it comes in late
    rows = read(dataset_files(day, "events"), "events").sort("host", "start_time", "trace_id", "seq").to_arrow()
    rows = rows.select(["metadata", *[n for n in rows.column_names if n != "metadata"]])
    for h in hosts:
        if h != hosts[4]:
            shutil.rmtree(date_dir / h)
    pq.write_table(rows.replace_schema_metadata({"tracebase.table": "events", "tracebase.schema_version": "2"}),
                   date_dir / "day-0000.parquet", row_group_size=len(rows) // 3 + 1)
    shutil.move(moved, late)
    assert _events(day).equals(want)
    result = compact_days(day, days_after=2, today=TODAY)
    assert result.days == 1 and result.days_left == [], result
    assert sorted(p.name for p in date_dir.iterdir()) == ["day-0000.parquet"]
    assert _events(day).equals(want)
    assert file_metadata(date_dir / "day-0000.parquet")["hosts"] == f'["{hosts[0][5:]}", "{hosts[-1][5:]}"]'


def test_a_date_to_compact_is_looked_over_reading_each_footer_once(tmp_path, monkeypatch):
    """The day compaction's look over a date (its host partitions' part files, its day files)
    read every footer twice: once for the rows, once for the snapshot ids or the hosts. The
    footers of a day of 10,000 part files are read once each now, and the result is the same."""
    import pyarrow.parquet as pq

    from baseline.pipeline import ingest

    spool, dataset, quarantine = _ingested(tmp_path)
    assert compact_days(dataset, days_after=2, today=LATER).days == 1
    # a late partition beside the day file, of two part files (two ingest runs)
    write_snapshot(spool, "host001", T0 + dt.timedelta(minutes=30), 50)
    ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    write_snapshot(spool, "host001", T0 + dt.timedelta(minutes=31), 51)
    ingest_spool(spool, dataset, quarantine, remove_ingested=False)
    date_dir = dataset / "events" / "date=2026-11-25"
    parts = sorted((date_dir / "host=host001").glob("part-*.parquet"))
    assert len(parts) == 2 and (date_dir / "day-0000.parquet").is_file()
    reads: dict[str, int] = {}
    real = pq.read_metadata

    def counted(where, *args, **kwargs):
        name = getattr(where, "name", where)  # a path, or a file opened by descriptor (open_regular)
        name = Path(os.readlink(f"/proc/self/fd/{name}") if isinstance(name, int) else name).name
        reads[name] = reads.get(name, 0) + 1
        return real(where, *args, **kwargs)

    monkeypatch.setattr(pq, "read_metadata", counted)
    units, partitions, problem = ingest._day_units(date_dir)
    monkeypatch.setattr(pq, "read_metadata", real)
    assert problem is None and partitions == 1
    assert reads == {"day-0000.parquet": 1, **{p.name: 1 for p in parts}}
    late = next(u for u in units if u.files == parts)
    assert late.rows == 4 and len(late.snapshots["host001"]) == 2  # 2 rows a snapshot, both ids
    (day,) = (u for u in units if u.files == [date_dir / "day-0000.parquet"])
    assert (day.first, day.last) == ("host000", "host002") and day.rows == 24
    assert sum(len(ids) for ids in day.snapshots.values()) == 12
    # ... and the compaction it leads to is the one it was: the late rows merged, none twice
    merged = compact_days(dataset, days_after=2, today=LATER)
    assert merged.days == 1 and merged.day_files_in == 3, merged
    assert _events(dataset).height == 28 and _events(dataset).select(KEY).is_unique().all()


def test_snapshot_names_are_parsed_by_one_parser_for_ingest_and_the_day_files():
    """Ingest dated snapshots with its own regex beside tracer.schema's parser for the day
    files' manifest (a strptime): two readings of one name. Now ingest uses tracer.schema's; a
    name either takes as a snapshot's codes into the manifest and decodes back as it was."""
    from baseline.pipeline import ingest
    from tracer import schema

    assert ingest.snapshot_time is schema.snapshot_time
    assert not hasattr(ingest, "SNAPSHOT_RE")
    names = ["snap-20261125T100000.000Z-3", "snap-20261125T100000Z-4", "snap-20261125T235959.999Z-12345",
             "snap-20261125T100000.5Z-5", "snap-20261125T100000.123456789Z-6", "snap-20261125T100000.000Z-000007",
             "snap-20240229T120000.250Z-8"]
    for name in names:
        when = schema.snapshot_time(name)
        assert when is not None and when.tzinfo is not None, name
        assert ingest.snapshot_date(name) == when.date().isoformat()
    assert schema.parse_snapshot_name("snap-20261125T100000.5Z-5") == (
        dt.datetime(2026, 11, 25, 10, 0, 0, 500_000, tzinfo=dt.UTC), 5)
    for bad in ["snap-20261345T100000.000Z-3", "snap-20230229T100000Z-3", "snap-20261125T246000Z-3",
                "snap-20261125T100000.000Z-3\n", ".snap-20261125T100000.000Z-3.tmp", "snap-2026112T100000Z-3",
                "snap-20261125T100000.Z-3"]:
        assert schema.parse_snapshot_name(bad) is None and ingest.snapshot_date(bad) is None, bad
    ids = {"h1": [f"h1/{n}" for n in names] + ["h1/not-a-snapshot", "h2/snap-20261125T100000.000Z-9"]}
    assert schema.day_snapshots_of(schema.encode_day_snapshots(ids)) == {"h1": frozenset(ids["h1"])}
