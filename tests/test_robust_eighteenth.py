"""Round eighteen: what the round18 battery found, each a defect of main shown by a real run
(no mocks).

- a trace whose string column holds bytes that are not UTF-8 (a comm or path another writer
  copied from the kernel unchecked; Parquet readers take a string's bytes as written) ended
  `baseline diff` and `baseline allowlist learn` in "internal error ... UnicodeDecodeError";
- `baseline ingest` took such a snapshot into the dataset, after which every scan of the
  dataset (`baseline audit`, `baseline expected learn`) failed on that file until someone
  removed it by hand;
- a trace with a column given twice was refused as "found no such column";
- a spool temporary whose change time is ahead of the clock (a tracer killed -9 on a machine
  that booted with its clock ahead, then set back by NTP) was kept by ingest until the clock
  caught up: "younger than an hour" for as long as it was ahead.
The wider battery is `bench/robust_battery.py --group round18`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_harness import one_line_error
from test_bad_inputs import PROGRAM, _events, _write

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
# the job failing to open its data file, as the good runs of PROGRAM open it
FAILING = [*PROGRAM[:6], ("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"), ("exit_group", 1, None, None)]


def _baseline(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*BASELINE, *argv], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


def _not_utf8(table: pa.Table, column: str, spoil: bytes) -> pa.Table:
    """`table` with `spoil` (bytes that are not UTF-8) in every value of the string `column`:
    the buffers of a binary array under the string type, as a writer that does not validate
    stores them."""
    values = table.column(column).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    raw = pa.array([None if v is None else v.encode() + spoil for v in values.to_pylist()], pa.binary())
    strings = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers(), null_count=raw.null_count)
    i = table.column_names.index(column)
    return table.set_column(i, table.schema.field(i), strings)


@pytest.mark.parametrize("column, spoil", [("comm", b"\xc3"), ("path", b"\xff")])
def test_a_trace_with_strings_that_are_not_utf8_is_refused_in_one_line_naming_the_column(tmp_path, column, spoil):
    """comm (one value in every row: its footer statistics are not UTF-8 either) and path: diff,
    with the trace as the failing run or as a good one, `--json`, and allowlist learn end in
    one line naming the file and the column, exit 2; a clean trio still diffs (exit 1)."""
    g1 = _write(_events("g1", PROGRAM, 11), tmp_path / "g1.parquet")
    g2 = _write(_events("g2", PROGRAM, 12), tmp_path / "g2.parquet")
    bad = _write(_events("b1", FAILING, 30), tmp_path / "bad.parquet")
    odd = _write(_not_utf8(_events("b2", FAILING, 31), column, spoil), tmp_path / "odd.parquet")
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(odd).validate(full=True)  # what the file holds: not UTF-8

    for argv in (["diff", str(g1), str(g2), str(odd)], ["diff", str(odd), str(g2), str(bad), "--json"],
                 ["allowlist", "learn", str(g1), str(odd), "-o", str(tmp_path / "a.yaml")]):
        err = one_line_error(_baseline(*argv, cwd=tmp_path))
        assert "odd.parquet" in err and f"column '{column}'" in err and "not UTF-8" in err, err
        assert "internal error" not in err, err
    assert not (tmp_path / "a.yaml").exists()
    assert _baseline("diff", str(g1), str(g2), str(bad), cwd=tmp_path).returncode == 1


def test_a_trace_with_a_column_given_twice_is_refused_as_such(tmp_path):
    """Two `path` columns: get_field_index says -1 for a name given twice, and the error said
    "found no such column" for a column that is there twice."""
    g1 = _write(_events("g1", PROGRAM, 11), tmp_path / "g1.parquet")
    g2 = _write(_events("g2", PROGRAM, 12), tmp_path / "g2.parquet")
    table = _events("b1", FAILING, 30)
    twice = pa.Table.from_arrays([*table.columns, table.column("path")], names=[*table.column_names, "path"])
    odd = _write(twice, tmp_path / "twice.parquet")
    for argv in (["diff", str(g1), str(g2), str(odd)], ["export", str(odd), "-o", str(tmp_path / "x.json")]):
        err = one_line_error(_baseline(*argv, cwd=tmp_path))
        assert "twice.parquet" in err and "column 'path'" in err and "2 columns of that name" in err, err
        assert "no such column" not in err, err


@pytest.fixture
def spool(tmp_path) -> Path:
    subprocess.run([*BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "2", "--spool", "-o",
                    str(tmp_path / "sim")], cwd=tmp_path, env=ENV, check=True, capture_output=True, timeout=300)
    return tmp_path / "sim" / "spool"


def test_ingest_quarantines_a_snapshot_with_strings_that_are_not_utf8_and_the_dataset_stays_readable(spool, tmp_path):
    """A snapshot whose events' comm is not UTF-8 is quarantined with the reason naming the
    column (the other snapshots go in, exit 0), and audit and expected learn of the dataset
    then run: on main the file went into the dataset and both failed on it (exit 2)."""
    snap = next(s for s in sorted(spool.glob("*/snap-*")) if pq.ParquetFile(s / "events.parquet").metadata.num_rows)
    events = pq.ParquetFile(snap / "events.parquet")
    spoiled = _not_utf8(events.read(), "comm", b"\xff").replace_schema_metadata(events.schema_arrow.metadata)
    pq.write_table(spoiled, snap / "events.parquet")

    proc = _baseline("ingest", str(spool), str(tmp_path / "ds"), "--quarantine", str(tmp_path / "q"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reasons = [p.read_text() for p in (tmp_path / "q").rglob("*.reason")]
    assert len(reasons) == 1 and "column 'comm'" in reasons[0] and "not UTF-8" in reasons[0], reasons
    assert snap.name in proc.stdout and "quarantined" in proc.stdout, proc.stdout
    for part in (tmp_path / "ds").rglob("*.parquet"):
        pq.read_table(part).validate(full=True)
    audit = _baseline("audit", str(tmp_path / "ds"), "-o", str(tmp_path / "aud"), cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    learned = _baseline("expected", "learn", str(tmp_path / "ds"), "-o", str(tmp_path / "e.yaml"), cwd=tmp_path)
    assert learned.returncode == 0, learned.stderr


def test_ingest_removes_an_abandoned_spool_temporary_dated_ahead_of_the_clock(spool, tmp_path):
    """A killed tracer's `.snap-*.tmp` whose files say a day (or a year) from now: the clock was
    set back after it was written. No process holds the host and no live pid is in its names,
    so ingest removes it as it removes an old one; one from a minute ago stays (young), and so
    does one dated 10 minutes ahead (within the hour either way: clock skew, not a clock set
    back)."""
    hosts = sorted(p for p in spool.iterdir() if p.is_dir())
    made = {}
    for i, (host, ahead) in enumerate([(hosts[0], 86400), (hosts[1], 365 * 86400), (hosts[0], -60), (hosts[1], 600)]):
        tmp = host / f".snap-20261128T001945.000Z-00009{i}.tmp"
        tmp.mkdir()
        (tmp / "events.parquet").write_bytes(b"PAR1" + bytes(64) + b"PAR1")
        (tmp / ".counters.parquet.999999999-0123abcd.tmp").write_bytes(b"PAR1")  # a pid no process has
        then = time.time() + ahead
        for p in [*tmp.iterdir(), tmp]:
            os.utime(p, (then, then))
        made[ahead] = tmp

    proc = _baseline("ingest", str(spool), str(tmp_path / "ds"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not made[86400].exists() and not made[365 * 86400].exists()
    assert made[-60].exists() and made[600].exists()


def test_an_audit_that_cannot_write_its_output_set_leaves_no_set_behind(tmp_path):
    """`baseline audit -o out` on a tmpfs that then fills up: the run fails in one line (exit 2),
    the earlier output reads as it was, and no `.sets/set-*` directory of the failed run is left
    (on main each failed run left one, empty or half written, until a later run succeeded: an
    hourly audit on a full disk gathered one an hour)."""
    fleet = tmp_path / "fleet"
    subprocess.run([*BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "3", "-o", str(fleet)],
                   cwd=tmp_path, env=ENV, check=True, capture_output=True, timeout=300)
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs (not root)")
    try:
        out = disk / "aud"
        assert _baseline("audit", str(fleet), "-o", str(out), cwd=tmp_path).returncode == 0
        before = {name: pq.read_table(out / f"{name}.parquet") for name in ("findings", "clusters", "host_alerts")}
        sets = sorted((out / ".sets").iterdir())
        assert len(sets) == 1
        failed = 0
        for free in (0, 4096):
            with open(disk / "filler", "wb") as fh:
                fh.write(b"\0" * max(os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - free, 0))
            proc = _baseline("audit", str(fleet), "-o", str(out), cwd=tmp_path)
            (disk / "filler").unlink()
            if proc.returncode == 0:
                continue  # it fitted: nothing to see at this level
            one_line_error(proc)
            failed += 1
            assert sorted((out / ".sets").iterdir()) == sets, free
            for name, table in before.items():
                assert pq.read_table(out / f"{name}.parquet").equals(table)
        assert failed, "the disk never filled up: nothing was tried"
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
