"""Round twenty-one: what round twenty left open and the round21 battery found, each a defect of
main shown by a real run (no mocks: real Airflow task runs, real mounts, real flocks held by
other processes, real spools and dataset part files).

- an Airflow task whose library call failed (a missing spool, a bad input) logged ~40 lines of
  Airflow's own traceback around the library's one line;
- retention of a date directory that is a mount point (an old date kept on a volume of its own)
  emptied that volume in place, counted the date dropped, and did so again on every run;
- a GOOD trace of zero events among others was taken silently (`baseline diff`, `allowlist
  learn`), though the same file as BAD is refused;
- `baseline export DATASET/events` read without the dataset lock, so it could meet a
  compaction or retention half done;
- a counters part file another writer put in the dataset, with counts no interval can hold,
  was merged by the compaction and read by every reader (a failure rate over 1), where ingest
  quarantines such a snapshot.
The wider battery is `bench/robust_battery.py --group round21`."""

from __future__ import annotations

import datetime as dt
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_harness import one_line_error
from test_bad_inputs import PROGRAM, _events, _write
from test_ingest import T0, write_snapshot

from baseline.pipeline.ingest import LOCK_NAME, apply_retention, ingest_spool
from tracer.schema import counter_buckets_path, dataset_files, read

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
# a process that takes an exclusive flock on argv[1], says so, and holds it until killed
HOLDER = ("import fcntl, os, sys, time\n"
          "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
          "fcntl.flock(fd, fcntl.LOCK_EX)\n"
          "print('held', flush=True)\n"
          "time.sleep(600)\n")


def _skip_unless_root_with_mount() -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        why = "mounting a tmpfs needs root and mount(8)"
        print(f"skipped: {why}")
        pytest.skip(why)


# ------------------------------------------------------------------------------------------
# Airflow: the library's one line, not a traceback
# ------------------------------------------------------------------------------------------
def test_a_dag_task_whose_library_call_fails_logs_the_one_line_not_a_traceback(tmp_path, capfd):
    """trace_ingest with a config whose spool is missing: the ingest task fails (and its
    downstream tasks do not run), and the log says the library's one line -- the config, the
    key, expected and found -- with no traceback. main logged Airflow's ~40-line traceback."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db
    from airflow.utils.state import DagRunState

    from baseline.pipeline.config import write_default_config

    db.initdb()
    config = write_default_config(tmp_path / "pipeline.yaml", tmp_path)
    data = yaml.safe_load(config.read_text())
    data["paths"]["spool"] = str(tmp_path / "spoool")
    config.write_text(yaml.safe_dump(data))
    dag = DagBag(dag_folder=str(REPO / "dags")).get_dag("trace_ingest")
    for task in dag.tasks:  # one try: the point is what the failure logs, not its retries
        task.retries = 0
    capfd.readouterr()
    run = dag.test(run_conf={"config": str(config)}, logical_date=dt.datetime(2026, 11, 28, 1, tzinfo=dt.UTC))
    out, err = capfd.readouterr()
    log = out + err
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.FAILED and states["ingest"] == "failed", states
    assert states["announce_new_data"] == "upstream_failed", states
    line = (f"key 'paths.spool': expected the directory the tracer hosts upload to, found nothing at "
            f"{tmp_path / 'spoool'}")
    assert line in log, log[-3000:]
    assert "Traceback" not in log and 'File "' not in log, log[-3000:]


# ------------------------------------------------------------------------------------------
# retention and a date on a mount of its own
# ------------------------------------------------------------------------------------------
def test_retention_leaves_a_date_on_a_mount_of_its_own_and_drops_the_others(tmp_path):
    """Two expired dates, one a tmpfs mount point: the mounted one is left with its files and
    named in `left`; the other is dropped; a second run says the same and drops nothing more.
    main emptied the mounted volume and counted it dropped on every run."""
    _skip_unless_root_with_mount()
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for day in (0, 10, 11):
        write_snapshot(spool, "host000", T0 - dt.timedelta(days=day), 0)
    ingest_spool(spool, dataset, quarantine)
    mounted = dataset / "events" / f"date={(T0 - dt.timedelta(days=10)).date()}"
    saved = tmp_path / "saved"
    shutil.copytree(mounted, saved)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mounted)], check=True)
    try:
        shutil.copytree(saved, mounted, dirs_exist_ok=True)
        before = sorted(p.relative_to(mounted) for p in mounted.rglob("*"))
        for _ in range(2):
            removed = apply_retention(dataset, quarantine, dataset_days=5, quarantine_days=30, today=T0.date())
            assert len(removed["left"]) == 1 and mounted.name in removed["left"][0], removed
            assert "mount point" in removed["left"][0], removed
            assert sorted(p.relative_to(mounted) for p in mounted.rglob("*")) == before
        gone = dataset / "events" / f"date={(T0 - dt.timedelta(days=11)).date()}"
        assert not gone.exists()
        assert (dataset / "events" / f"date={T0.date()}").is_dir()
        assert not [p for p in dataset.iterdir() if p.name.startswith(".compact")]
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False)


# ------------------------------------------------------------------------------------------
# a zero-event GOOD trace
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["diff", "allowlist learn"])
def test_a_good_trace_of_no_events_among_others_is_refused_naming_it(tmp_path, command):
    """A GOOD trace of zero events beside a real one: one line naming that file and saying it
    is empty, exit 2 (main: taken silently, as if the baseline had two runs)."""
    good = _write(_events("g1", PROGRAM, 11), tmp_path / "good.parquet")
    empty = _write(_events("g2", PROGRAM, 12).slice(0, 0), tmp_path / "empty.parquet")
    bad = _write(_events("b1", PROGRAM[:6] + [("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"),
                                              ("exit_group", 1, None, None)], 30), tmp_path / "bad.parquet")
    argv = ([*BASELINE, "diff", str(good), str(empty), str(bad)] if command == "diff"
            else [*BASELINE, "allowlist", "learn", str(good), str(empty), "-o", str(tmp_path / "l.yaml")])
    proc = subprocess.run(argv, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    err = one_line_error(proc)
    assert str(empty) in err and "empty trace" in err and "0 rows" in err, err
    assert not (tmp_path / "l.yaml").exists()
    # the same inputs without it are untouched
    argv = [a for a in argv if a != str(empty)]
    proc = subprocess.run(argv, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == (1 if command == "diff" else 0), proc.stderr


# ------------------------------------------------------------------------------------------
# export and the dataset lock
# ------------------------------------------------------------------------------------------
def test_export_of_a_dataset_waits_for_the_writer_holding_its_lock(tmp_path):
    """`baseline export DATASET/events` while another process holds the dataset's exclusive
    lock (an ingest, a compaction, a retention): it says whom it waits for and writes nothing
    until the holder lets go, then finishes. main read the dataset under the writer."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    write_snapshot(spool, "host000", T0, 0)
    ingest_spool(spool, dataset, quarantine)
    assert (dataset / LOCK_NAME).is_file()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(dataset / LOCK_NAME)], stdout=subprocess.PIPE,
                              text=True)
    out = tmp_path / "x.json"
    try:
        assert holder.stdout.readline().strip() == "held"
        export = subprocess.Popen([*BASELINE, "export", str(dataset / "events"), "-o", str(out)], cwd=tmp_path,
                                  env=ENV, stderr=subprocess.PIPE, text=True)
        # the waiting line comes from the export itself (tracer.atomic.wait_for_flock): an event
        ready, _, _ = select.select([export.stderr], [], [], 120)
        assert ready, "no line from the waiting export in 120 s"
        line = export.stderr.readline()
        assert f"pid {holder.pid}" in line and "dataset lock" in line, line
        assert export.poll() is None and not out.exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    _, rest = export.communicate(timeout=120)
    assert export.returncode == 0, rest
    assert out.stat().st_size > 0


# ------------------------------------------------------------------------------------------
# a counters part another writer put in the dataset
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("column, resent", [("failures", False), ("errno_counts", False), ("failures", True)])
def test_compaction_quarantines_a_counters_part_with_counts_no_interval_can_hold(tmp_path, column, resent):
    """A counters part without a summary of ours (copied in, another writer) whose row has
    failures above invocations, or an errno histogram above its failures: the compaction
    (`baseline ingest --compact-min-files 2`, the pipeline's tidy) moves it to quarantine with
    the reason naming the file, the column and the probe, and merges the rest. main merged it,
    and every reader saw a failure rate over 1. `resent`: the spool's snapshots come again
    (--keep-spool), and ingest, which writes a missing summary for the parts of a partition
    it meets again, quarantines the part instead of vouching for it (the battery found that)."""
    spool, dataset, quarantine = tmp_path / "spool", tmp_path / "ds", tmp_path / "q"
    for seq in range(3):
        write_snapshot(spool, "host000", T0 + dt.timedelta(seconds=5 * seq), seq)
    ingest_spool(spool, dataset, quarantine, remove_ingested=not resent)
    part_dir = next((dataset / "counters").glob("date=*/host=host000"))
    source = sorted(part_dir.glob("part-*.parquet"))[0]
    table = pq.read_table(source)
    calls = table.column("invocations").to_pylist()
    fails = table.column("failures").to_pylist()
    if column == "failures":
        fails[0] = calls[0] + 3
        table = table.set_column(table.schema.get_field_index("failures"), table.schema.field("failures"),
                                 pa.array(fails, table.schema.field("failures").type))
    else:
        hist = table.column("errno_counts").to_pylist()
        hist[0] = [{**hist[0][0], "count": fails[0] + 4}] if hist[0] else hist[0]
        table = table.set_column(table.schema.get_field_index("errno_counts"), table.schema.field("errno_counts"),
                                 pa.array(hist, table.schema.field("errno_counts").type))
    odd = part_dir / "part-zz-another-writer.parquet"
    pq.write_table(table.replace_schema_metadata(pq.read_schema(source).metadata), odd)
    assert counter_buckets_path(odd) is None or not counter_buckets_path(odd).exists()
    proc = subprocess.run([*BASELINE, "ingest", str(spool), str(dataset), "--quarantine", str(quarantine),
                           "--compact-min-files", "2", *(["--keep-spool"] if resent else [])], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    said = [line for line in proc.stdout.splitlines() if line.startswith("quarantined")]
    assert len(said) == 1 and odd.name in said[0] and f"column '{column}'" in said[0], proc.stdout
    assert not odd.exists() and list(quarantine.rglob(odd.name))
    counters = read(dataset_files(dataset, "counters"), "counters")
    assert (counters["failures"] <= counters["invocations"]).all()
    assert counters.height == 3 * 2  # the three snapshots' two probes, once each
