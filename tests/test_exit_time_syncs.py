"""An input stream given back at exit on a pipe is timing, not a divergence.

At exit, stdio sets an input stream's descriptor back by what it read ahead and did not consume
(POSIX), an lseek that fails ESPIPE on a pipe. A filter reading its first line with fgets and
the rest with read(2) has such unread data only when the writer had written more than the line
by its first read: real_tenth's log_pipeline_timing_varies failed its good-vs-good diff so in a
reordered run under load (lseek ESPIPE named, the filter's last call before exit_group). Traces
of the recorded shape written as real Parquet; the same call failing before the program's work
(an input that had to be seekable) is still named.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")
START = [("execve", None, "/usr/local/bin/filter"), ("openat", None, "/etc/ld.so.cache"), ("close", None, "/etc/ld.so.cache")]
# the filter as recorded: the header line, the schema check, the records, the count written
WORK = [("read", None, "pipe:"), ("access", None, "/srv/schema.json"), ("read", None, "pipe:"), ("read", None, "pipe:"),
        ("newfstatat", None, "pipe:"), ("write", None, "pipe:")]
SYNC = ("lseek", "ESPIPE", "pipe:")
EXIT = ("exit_group", None, None)


def trace(path: Path, rows, trace_id: str, pid: int) -> Path:
    n = len(rows)
    df = pl.DataFrame(
        {"trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
         "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": ["filter"] * n,
         "probe": [r[0] for r in rows], "depth": [0] * n, "ret": [-1 if r[1] else 0 for r in rows],
         "errno": [r[1] for r in rows], "path": [r[2] for r in rows], "kind": ["good"] * n, "command": ["filter"] * n},
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


def _diff(tmp_path: Path, good: list, bad: list):
    files = [trace(tmp_path / f"g{i}.parquet", START + rows, f"g{i}", 10 + i) for i, rows in enumerate(good)]
    return diff_traces(files, trace(tmp_path / "b.parquet", START + bad, "b", 99), expected=NONE)


@pytest.mark.parametrize("bad_syncs", [True, False], ids=["bad run syncs", "good runs sync"])
def test_exit_time_sync_on_a_pipe_is_quiet(tmp_path, bad_syncs):
    plain, synced = [*WORK, EXIT], [*WORK, SYNC, EXIT]
    report = _diff(tmp_path, [plain if bad_syncs else synced] * 2, synced if bad_syncs else plain)
    assert not report.anomaly, report.bifurcation


def test_seek_on_a_pipe_before_the_work_is_named(tmp_path):
    # a program needing a seekable input: the ESPIPE, its message, the exit
    bad = [("read", None, "pipe:"), SYNC, ("write", None, "/dev/pts/0"), EXIT]
    report = _diff(tmp_path, [[*WORK, EXIT]] * 2, bad)
    bif = report.bifurcation
    assert (bif["probe"], bif["errno"]) == ("lseek", "ESPIPE"), bif
