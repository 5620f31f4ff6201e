"""Round nineteen: what the round19 battery found, each a defect of main shown by a real run
(no mocks).

- `tracer record -- CMD` started by a parent that ignores SIGCHLD (an ignored signal is
  inherited through exec: a supervisor, `trap '' CHLD` in a script) failed with "No child
  processes" or "No such process" and wrote no trace: under an ignored SIGCHLD the kernel reaps
  the command the moment it exits, so the recorder's waitpid finds nothing and CMD's exit
  status is lost;
- a dataset part whose start_time sits at the end of the int64 nanosecond range (2262-04-11,
  valid Parquet another writer may produce from a sentinel) ended `baseline audit` and
  `baseline expected learn` in "internal error ... InvalidOperationError" (polars' overflow
  adding a minute to it), and `baseline ingest` took such a snapshot into the dataset, after
  which every audit of it failed the same way.
(A counters file with a negative count is not refused: that is a counter reset, which every
reader counts from 0 up, tracer.schema.counted_delta; the battery's cases hold it to that.)
The wider battery is `bench/robust_battery.py --group round19`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_harness import one_line_error
from test_bad_inputs import PROGRAM, _events, _write

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]
TRACER = [sys.executable, "-m", "tracer.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
NS_MAX = 2**63 - 1  # 2262-04-11T23:47:16.854775807Z, the last int64 nanosecond timestamp
# a parent that ignores the signals named in argv[1], then execs the rest
IGNORING = ("import os, signal, sys\n"
            "for name in sys.argv[1].split(','):\n"
            "    signal.signal(getattr(signal, name), signal.SIG_IGN)\n"
            "os.execvp(sys.argv[2], sys.argv[2:])\n")


def _run(argv: list[str], cwd: Path, ignoring: str = "") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", IGNORING, ignoring, *argv] if ignoring else argv
    return subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


def _rewrite(path: Path, column: str, values: list) -> None:
    """Rewrite one column of a Parquet file with pyarrow (statistics written, as pyarrow's
    default), the file's tracebase metadata kept."""
    f = pq.ParquetFile(path)
    table = f.read()
    i = table.column_names.index(column)
    field = table.schema.field(i)
    if pa.types.is_timestamp(field.type):
        array = pa.array(values, pa.int64()).cast(field.type)
    else:
        array = pa.array(values, field.type)
    pq.write_table(table.set_column(i, field, array).replace_schema_metadata(f.schema_arrow.metadata), path)


def _can_record() -> str | None:
    if os.geteuid() != 0:
        return "recording needs root"
    probe = subprocess.run([sys.executable, "-c", "import tracer.privilege as p; p.load_bcc()"], env=ENV,
                           capture_output=True, timeout=120)
    return None if probe.returncode == 0 else "bcc is not importable here"


@pytest.mark.parametrize("script, status", [("exit 7", 7), ("true", 0), ("kill -TERM $$", 143)])
def test_record_under_an_ignored_sigchld_keeps_the_commands_status_and_writes_the_trace(tmp_path, script, status):
    """The recorder gives SIGCHLD its default action before it starts the command (as strace
    does), so it can wait for it: CMD's own status and a whole trace holding its exit_status."""
    if (why := _can_record()) is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    out = tmp_path / "run.parquet"
    proc = _run([*TRACER, "record", "-o", str(out), "--", "sh", "-c", script], tmp_path, ignoring="SIGCHLD")
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr
    table = pq.read_table(out)
    assert table.num_rows > 0
    assert set(table.column("exit_status").to_pylist()) == {status}


def test_process_pools_under_an_ignored_sigchld_finish_as_without_it(tmp_path):
    """simulate --workers 2 (a process pool) under an ignored SIGCHLD writes what it writes
    without one, file for file."""
    runs = {}
    for ignoring in ("", "SIGCHLD"):
        out = tmp_path / f"sim-{ignoring or 'default'}"
        proc = _run([*BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "4", "--workers", "2",
                     "-o", str(out)], tmp_path, ignoring=ignoring)
        assert proc.returncode == 0, proc.stderr
        runs[ignoring] = {p.relative_to(out): pq.read_table(p).num_rows for p in out.rglob("*.parquet")}
    assert runs[""] == runs["SIGCHLD"] and runs[""]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("r19") / "fleet"
    subprocess.run([*BASELINE, "simulate", "--hosts", "3", "--hours", "2", "--seed", "3", "-o", str(out)],
                   env=ENV, check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def spool(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("r19s") / "sim"
    subprocess.run([*BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "2", "--spool", "-o", str(out)],
                   env=ENV, check=True, capture_output=True, timeout=300)
    return out / "spool"


def _dataset_with(fleet: Path, tmp_path: Path, table: str, column: str, value: object) -> tuple[Path, Path]:
    ds = tmp_path / "ds"
    shutil.copytree(fleet, ds)
    part = sorted((ds / table).rglob("*.parquet"))[0]
    n = pq.ParquetFile(part).metadata.num_rows
    _rewrite(part, column, [value] * n)
    return ds, part


@pytest.mark.parametrize("command", ["audit", "expected learn"])
def test_a_dataset_part_timed_at_the_end_of_the_nanosecond_range_is_refused_in_one_line(fleet, tmp_path, command):
    ds, part = _dataset_with(fleet, tmp_path, "events", "start_time", NS_MAX)
    err = one_line_error(_run([*BASELINE, *command.split(), str(ds), "-o", str(tmp_path / "out")], tmp_path))
    assert part.name in err and "'start_time'" in err and "2262-04-11T23:47:16" in err, err
    assert "internal error" not in err


@pytest.mark.parametrize("file, column, value", [
    ("events.parquet", "start_time", NS_MAX), ("events.parquet", "end_time", -NS_MAX),
    ("counters.parquet", "snapshot_time", NS_MAX),
])
def test_ingest_quarantines_a_snapshot_with_a_value_out_of_range_and_the_dataset_stays_auditable(
        spool, tmp_path, file, column, value):
    sp = tmp_path / "spool"
    shutil.copytree(spool, sp)
    snap = next(s for s in sorted(sp.glob("*/snap-*")) if pq.ParquetFile(s / "events.parquet").metadata.num_rows)
    n = pq.ParquetFile(snap / file).metadata.num_rows
    _rewrite(snap / file, column, [value] * n)
    ds, quarantine = tmp_path / "ds", tmp_path / "q"
    proc = _run([*BASELINE, "ingest", str(sp), str(ds), "--quarantine", str(quarantine)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    reasons = [p.read_text() for p in quarantine.rglob("*.reason")]
    assert any(f"'{column}'" in r and file in r for r in reasons), reasons
    for command in (["audit", str(ds), "-o", str(tmp_path / "aud")], ["expected", "learn", str(ds), "-o",
                                                                        str(tmp_path / "e.yaml")]):
        done = _run([*BASELINE, *command], tmp_path)
        assert done.returncode == 0, done.stderr


def test_a_time_out_of_range_is_found_in_a_file_written_without_statistics(fleet, tmp_path):
    """The footer check reads a time column written without min/max statistics (another
    writer's choice) rather than let it through."""
    from tracer.schema import validate_file

    ds = tmp_path / "ds"
    shutil.copytree(fleet, ds)
    part = sorted((ds / "events").rglob("*.parquet"))[0]
    f = pq.ParquetFile(part)
    table = f.read()
    i = table.column_names.index("end_time")
    table = table.set_column(i, table.schema.field(i), pa.array([NS_MAX] * table.num_rows, pa.int64())
                             .cast(table.schema.field(i).type))
    pq.write_table(table.replace_schema_metadata(f.schema_arrow.metadata), part, write_statistics=False)
    with pytest.raises(Exception, match=r"column 'end_time': expected times between 1678-01-01 and 2262-01-01"):
        validate_file(part, "events")


def _polars_rewrite(path: Path, out: Path | None = None) -> Path:
    """The file as polars writes a frame (`write_parquet` with the tracebase footer keys):
    large_list of structs of large_string for nested columns, large_string for flat ones."""
    import polars as pl

    meta = {k.decode(): v.decode() for k, v in (pq.ParquetFile(path).schema_arrow.metadata or {}).items()
            if k.startswith(b"tracebase.")}
    frame = pl.read_parquet(path)
    out = out or path
    tmp = out.with_name(out.name + ".polars")
    frame.write_parquet(tmp, metadata=meta)
    tmp.rename(out)
    return out


def _without_elapsed(report: str) -> dict:
    import json

    data = json.loads(report)
    data.get("settings", {}).pop("elapsed_s", None)
    return data


def test_a_trace_written_by_polars_diffs_as_the_same_trace_written_by_pyarrow(tmp_path):
    g1 = _write(_events("g1", PROGRAM, 11), tmp_path / "g1.parquet")
    g2 = _write(_events("g2", PROGRAM, 12), tmp_path / "g2.parquet")
    bad = _write(_events("b1", [*PROGRAM[:6], ("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"),
                                ("exit_group", 1, None, None)], 30), tmp_path / "bad.parquet")
    (tmp_path / "pl").mkdir()
    pl_g1, pl_bad = (_polars_rewrite(p, tmp_path / "pl" / p.name) for p in (g1, bad))
    assert pa.types.is_large_list(pq.read_schema(pl_bad).field("metadata").type)
    want = _run([*BASELINE, "diff", str(g1), str(g2), str(bad), "--json"], tmp_path)
    got = _run([*BASELINE, "diff", str(pl_g1), str(g2), str(pl_bad), "--json"], tmp_path)
    assert (want.returncode, got.returncode) == (1, 1), got.stderr
    assert _without_elapsed(got.stdout) == _without_elapsed(want.stdout)
    for argv in (["export", str(pl_bad), "-o", str(tmp_path / "x.json")],
                 ["allowlist", "learn", str(pl_g1), str(g2), "-o", str(tmp_path / "a.yaml")]):
        done = _run([*BASELINE, *argv], tmp_path)
        assert done.returncode == 0, done.stderr


def test_a_dataset_part_and_a_spool_snapshot_written_by_polars_are_read_as_pyarrows(fleet, spool, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(fleet, ds)
    for table in ("events", "counters"):
        _polars_rewrite(sorted((ds / table).rglob("*.parquet"))[0])
    for argv in (["audit", str(ds), "-o", str(tmp_path / "aud")], ["coverage", str(ds), "-o", str(tmp_path / "cov")],
                 ["expected", "learn", str(ds), "-o", str(tmp_path / "e.yaml")]):
        done = _run([*BASELINE, *argv], tmp_path)
        assert done.returncode == 0, done.stderr
    sp = tmp_path / "spool"
    shutil.copytree(spool, sp)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sp.glob("*/snap-*/events.parquet"))
    for snap in sorted(sp.glob("*/snap-*"))[:3]:
        for table in ("events", "counters"):
            _polars_rewrite(snap / f"{table}.parquet")
    out, quarantine = tmp_path / "ids", tmp_path / "q"
    done = _run([*BASELINE, "ingest", str(sp), str(out), "--quarantine", str(quarantine)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(quarantine.rglob("*.reason")), [p.read_text() for p in quarantine.rglob("*.reason")]
    assert sum(pq.ParquetFile(f).metadata.num_rows for f in (out / "events").rglob("*.parquet")) == rows
