"""`baseline summarize`: the counters' 15-minute summaries written again for days nothing writes.

A summary written by an older tracebase (before summaries recorded their bucket rule,
`bucket_of`) is not used, and the audit reads that host's counters files whole: the same
tables, slower (a fleet-day: 21.6M snapshot rows instead of ~5M cells). The audit says how many
hosts it read whole for that reason; `baseline summarize` writes their summaries again, and
the audit is back on them with the same tables.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from baseline.pipeline.summaries import summarize_dataset
from baseline.simulator.simulate import simulate
from tracer.schema import counter_buckets_for, counter_buckets_path, dataset_files

BASELINE = [sys.executable, "-m", "baseline.cli"]
TABLES = ("findings", "clusters", "host_alerts")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim") / "ds"
    simulate(root, hosts=12, hours=4, seed=5)
    return root


@pytest.fixture
def dataset(simulated, tmp_path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(simulated, copy, symlinks=True)
    return copy


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*BASELINE, *args], capture_output=True, text=True, timeout=300)


def summaries(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root / "counter_buckets")): p for p in sorted((root / "counter_buckets").rglob("*.parquet"))}


def as_older_rule(summary: Path) -> None:
    """Rewrite a summary as a tracebase before round forty-five wrote it: the same cells, its
    recorded source without the bucket rule (`bucket_of`)."""
    pf = pq.ParquetFile(summary)
    kv = dict(pf.metadata.metadata)
    source = json.loads(kv.pop(b"tracebase.source"))
    del source["bucket_of"]
    kv.pop(b"ARROW:schema", None)
    table = pf.read().replace_schema_metadata(kv)
    with pq.ParquetWriter(summary, table.schema) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({"tracebase.source": json.dumps(source)})


def audit(root: Path, out: Path) -> tuple[dict, dict[str, pl.DataFrame]]:
    done = run("audit", str(root), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), {t: pl.read_parquet(out / f"{t}.parquet") for t in TABLES}


def test_missing_summaries_are_written_as_ingest_wrote_them(dataset, tmp_path):
    before = summaries(dataset)
    assert len(before) == len(dataset_files(dataset, "counters")) > 0
    kept = tmp_path / "kept"
    shutil.copytree(dataset / "counter_buckets", kept)
    shutil.rmtree(dataset / "counter_buckets")

    result = summarize_dataset(dataset)
    assert (result.files, result.written, result.current, result.left) == (len(before), len(before), 0, [])
    after = summaries(dataset)
    assert after.keys() == before.keys()
    for name, path in after.items():
        old = kept / name
        assert pl.read_parquet(path).equals(pl.read_parquet(old)), name
        assert pl.read_parquet_metadata(str(path)) == pl.read_parquet_metadata(str(old)), name
    # idempotent: the second run writes nothing
    again = summarize_dataset(dataset)
    assert (again.written, again.current) == (0, len(before))


def test_an_older_rules_summaries_are_named_by_the_audit_and_written_again(dataset, tmp_path):
    current, current_tables = audit(dataset, tmp_path / "a")
    assert current["stale_summary_hosts"] == 0
    names = list(summaries(dataset).values())
    for path in names[:3]:
        as_older_rule(path)
        assert counter_buckets_for(dataset / "counters" / path.relative_to(dataset / "counter_buckets")) is None
    stale, stale_tables = audit(dataset, tmp_path / "b")
    assert stale["stale_summary_hosts"] == 3
    for t in TABLES:  # read whole: the same tables
        assert stale_tables[t].equals(current_tables[t]), t
    text = run("audit", str(dataset), "-o", str(tmp_path / "c"))
    assert text.returncode == 0, text.stderr
    assert "3 hosts read whole" in text.stdout and f"baseline summarize {dataset}" in text.stdout

    done = run("summarize", str(dataset))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{len(names)} counters files: 3 summaries written, {len(names) - 3} current already"]
    fixed, fixed_tables = audit(dataset, tmp_path / "d")
    assert fixed["stale_summary_hosts"] == 0
    for t in TABLES:
        assert fixed_tables[t].equals(current_tables[t]), t
    assert "read whole" not in run("audit", str(dataset), "-o", str(tmp_path / "e")).stdout


def test_dates_workers_json_and_orphans(dataset):
    files = dataset_files(dataset, "counters")
    dates = sorted({f.parent.parent.name.removeprefix("date=") for f in files})
    shutil.rmtree(dataset / "counter_buckets")
    # an orphan: a summary whose counters file is gone
    orphan = counter_buckets_path(dataset / "counters" / "date=2026-11-28" / "host=gone" / "part-0.parquet")
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"x")

    done = run("summarize", str(dataset), "--date", "1999-01-01", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"files": 0, "current": 0, "written": 0, "left": [], "orphans_removed": 0}
    done = run("summarize", str(dataset), *[a for d in dates for a in ("--date", d)], "-j", "2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["files"], result["written"], result["left"]) == (len(files), len(files), [])
    assert all(counter_buckets_for(f) is not None for f in files)
    # the orphan's host has no counters partition at all: removed too (docs contract 7 found it
    # left, where --help says summaries whose counters file is gone are removed)
    assert result["orphans_removed"] == 1 and not orphan.exists()


def test_orphan_summary_beside_a_counters_partition_is_removed(dataset):
    f = dataset_files(dataset, "counters")[0]
    orphan = counter_buckets_path(f.parent / "part-orphan.parquet")
    shutil.copy(counter_buckets_path(f), orphan)
    result = summarize_dataset(dataset)
    assert result.orphans_removed == 1 and not orphan.exists()
    assert result.written == 0


def test_counts_no_interval_can_hold_get_no_summary_and_are_listed(dataset, tmp_path):
    f = dataset_files(dataset, "counters")[0]
    table = pq.read_table(f)
    failures = table.column("failures").to_pylist()
    calls = table.column("invocations").to_pylist()
    failures[0] = calls[0] + 5  # more failures than calls in one interval
    table = table.set_column(table.schema.get_field_index("failures"), "failures",
                             pa.array(failures, table.schema.field("failures").type))
    os.unlink(counter_buckets_path(f))
    pq.write_table(table, f)
    done = run("summarize", str(dataset))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    left = [line for line in lines if line.startswith("left without a summary")]
    assert len(left) == 1 and str(f) in left[0] and "failures" in left[0], lines
    assert not counter_buckets_path(f).exists()


@pytest.mark.parametrize("args, words", [
    (["/nonexistent/ds"], "/nonexistent/ds: expected a dataset directory, found no such file"),
    (["DS", "--date", "2026-13-01"], "--date: expected a date YYYY-MM-DD, found '2026-13-01'"),
    (["DS", "--date", "yesterday"], "--date: expected a date YYYY-MM-DD, found 'yesterday'"),
    (["DS", "-j", "0"], "-j"),
    (["FILE"], "expected a dataset directory, found a regular file"),
])
def test_bad_input_is_one_line_and_exit_2(args, words, dataset, tmp_path):
    (tmp_path / "f").write_text("x")
    args = [str(dataset) if a == "DS" else str(tmp_path / "f") if a == "FILE" else a for a in args]
    done = run("summarize", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for a read-only mount")
def test_a_read_only_dataset_is_one_line_and_exit_2_losing_nothing(dataset):
    shutil.rmtree(dataset / "counter_buckets")
    (dataset / "counter_buckets").mkdir()
    script = (f"mount --bind {dataset} {dataset} && mount -o remount,ro,bind {dataset} && "
              f"{sys.executable} -m baseline.cli summarize {dataset}")
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(dataset) in done.stderr and "read-only" in done.stderr.lower(), done.stderr
    assert summaries(dataset) == {}
    assert summarize_dataset(dataset).written == len(dataset_files(dataset, "counters"))


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_something_else_in_a_summarys_place_is_listed_and_the_rest_are_written(dataset, kind):
    files = dataset_files(dataset, "counters")
    shutil.rmtree(dataset / "counter_buckets")
    taken = counter_buckets_path(files[0])
    taken.parent.mkdir(parents=True)
    if kind == "directory":
        (taken / "inside").mkdir(parents=True)
    else:
        os.mkfifo(taken)
    done = run("summarize", str(dataset))
    assert done.returncode == 0, done.stderr
    left = [line for line in done.stdout.splitlines() if line.startswith("left without a summary")]
    assert len(left) == 1 and str(taken) in left[0] and "expected its summary or nothing there" in left[0], left
    assert done.stdout.splitlines()[0] == f"{len(files)} counters files: {len(files) - 1} summaries written, 0 current already"
    assert all(counter_buckets_for(f) is not None for f in files[1:])


def test_the_audit_dags_task_rewrites_the_audited_windows_stale_summaries(simulated, tmp_path):
    """baseline_audit's refresh_summaries (baseline.pipeline.tasks.refresh_stale_summaries): after
    an audit that read some hosts whole, the audited window's summaries are written anew and the
    next audit reads none whole; after one that read none, nothing runs."""
    import datetime as dt

    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.config import load_config, write_default_config

    root = tmp_path / "pipe"
    shutil.copytree(simulated, root / "dataset", symlinks=True)
    cfg = load_config(write_default_config(root / "pipeline.yaml", root))
    end = max(pl.read_parquet(f, columns=["snapshot_time"])["snapshot_time"].max() for f in dataset_files(cfg.dataset, "counters"))
    now = end.replace(tzinfo=dt.UTC) + dt.timedelta(minutes=1)
    audited = pipeline.audit_new_failures(cfg, now=now)
    assert audited["stale_summary_hosts"] == 0
    assert pipeline.refresh_stale_summaries(cfg, audited, now=now) == {"ran": False}

    names = list(summaries(cfg.dataset).values())
    for path in names[:2]:
        as_older_rule(path)
    audited = pipeline.audit_new_failures(cfg, now=now)
    assert audited["stale_summary_hosts"] == 2
    refreshed = pipeline.refresh_stale_summaries(cfg, audited, now=now)
    assert refreshed["ran"] and refreshed["written"] == 2 and refreshed["left"] == [], refreshed
    assert pipeline.audit_new_failures(cfg, now=now)["stale_summary_hosts"] == 0
