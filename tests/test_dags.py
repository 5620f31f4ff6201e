"""The Airflow DAGs: import cleanly, and run end to end with dag.test() on a temporary dataset.

conftest.py points AIRFLOW_HOME at a temp dir before airflow is imported; the session fixture
creates the SQLite metadata DB there. The chain runs on simulated spool data: trace_ingest ->
baseline_audit -> probe_coverage_weekly, then a second ingest run must add nothing.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DAGS = REPO / "dags"
RUN_AT = dt.datetime(2026, 11, 28, 1, 0, tzinfo=dt.UTC)  # the simulator's hour ends here


def count_rows(dataset: Path, table: str) -> int:
    from tracer.schema import dataset_files, read

    files = dataset_files(dataset, table)
    return read(files, table).height if files else 0


@pytest.fixture(scope="session")
def airflow_db():
    from airflow.utils import db

    db.initdb()


@pytest.fixture(scope="session")
def dagbag(airflow_db):  # noqa: ARG001
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def write_config(root: Path, **overrides) -> Path:
    from baseline.pipeline.config import write_default_config

    path = write_default_config(root / "pipeline.yaml", root)
    if overrides:
        data = yaml.safe_load(path.read_text())
        for key, value in overrides.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """A config plus a simulated spool of 4 hosts x 1 hour (start 2026-11-28 00:00 UTC)."""
    from baseline.pipeline.nccl import SAMPLE_LINES
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("pipeline")
    simulate(root, hosts=4, hours=1, seed=7, start="2026-11-28T00:00:00Z", spool=True)
    logs = root / "nccl.log"
    logs.write_text("\n".join(SAMPLE_LINES) + "\n")
    config = write_config(
        root,
        probe_set=str(REPO / "bpf" / "probes" / "rdma.yaml"),
        nccl_logs=[str(logs)],
        thresholds={"compact_min_files": 2},
    )
    return root, config


def test_dagbag_imports_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) >= {"trace_ingest", "baseline_audit", "probe_coverage_weekly"}


def test_schedules(dagbag):
    assert "timedelta(seconds=300)" in repr(dagbag.get_dag("trace_ingest").timetable)  # every 5 minutes
    audit = dagbag.get_dag("baseline_audit").timetable
    assert type(audit).__name__ == "AssetOrTimeSchedule"  # hourly OR when the dataset asset updates
    assert "'0 * * * *'" in repr(audit.timetable)
    assert "tracebase_dataset" in repr(audit.asset_condition)
    weekly = dagbag.get_dag("probe_coverage_weekly").timetable
    assert type(weekly).__name__ == "CronDataIntervalTimetable" and "'0 0 * * 1'" in repr(weekly)  # Mondays


def test_dags_are_documented_and_bounded_in_time(dagbag):
    """What the Airflow UI shows an SRE (the DAG's and each task's docs, each param's meaning),
    and no run can hold a max_active_runs slot forever (a task hung on a lock or a mount)."""
    for dag_id in ("trace_ingest", "baseline_audit", "probe_coverage_weekly"):
        dag = dagbag.get_dag(dag_id)
        assert dag.doc_md and dag_id in dag.doc_md, dag_id
        assert dag.dagrun_timeout is not None and dag.owner == "tracebase", dag_id
        assert all(p.description for p in dag.params.values()), dag_id
        for t in dag.tasks:
            assert t.doc_md, (dag_id, t.task_id)
            assert t.execution_timeout is not None and t.execution_timeout < dag.dagrun_timeout, (dag_id, t.task_id)


def test_parsing_the_dags_warns_nothing_of_ours(airflow_db):  # noqa: ARG001
    import warnings

    from airflow.dag_processing.dagbag import DagBag

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    ours = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if Path(w.filename).resolve().is_relative_to(REPO) and ".venv" not in w.filename]
    assert ours == []


def _run(dagbag, dag_id: str, conf: dict, when: dt.datetime):
    from airflow.utils.state import DagRunState

    dr = dagbag.get_dag(dag_id).test(run_conf=conf, logical_date=when)
    states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
    return dr.state == DagRunState.SUCCESS, states


def test_pipeline_end_to_end(dagbag, pipeline):
    root, config = pipeline
    conf = {"config": str(config)}

    ok, states = _run(dagbag, "trace_ingest", conf, RUN_AT)
    assert ok, states
    assert states["announce_new_data"] == "success"  # new rows -> the dataset asset updates
    events, counters = count_rows(root / "dataset", "events"), count_rows(root / "dataset", "counters")
    assert events > 0 and counters > 0
    assert not any((root / "spool").rglob("snap-*"))  # ingested snapshots leave the spool

    ok, states = _run(dagbag, "baseline_audit", conf, RUN_AT)
    assert ok, states
    assert states["refresh_summaries"] == "skipped"  # ingest wrote current summaries: nothing to rewrite
    latest = (root / "findings" / "LATEST").read_text().strip()
    assert (root / "findings" / latest / "findings.parquet").is_file()
    assert "Fleet audit" in (root / "findings" / latest / "report.html").read_text()  # published beside them
    assert (root / "findings" / latest / "report.html").stat().st_size > 1000  # the HTML beside the findings
    assert (root / "model" / "baseline.parquet").is_file()
    assert (root / "expected_errors.yaml").is_file()

    # a manual run with no week given reports the last complete ISO week before it (Monday 00:00
    # is the end of 2026-W48, the simulated data's week)
    ok, states = _run(dagbag, "probe_coverage_weekly", conf, dt.datetime(2026, 11, 30, 0, 0, tzinfo=dt.UTC))
    assert ok, states
    report = root / "reports" / "2026-W48"
    assert (report / "report.html").stat().st_size > 10_000  # charts embedded
    assert (report / "coverage_app.parquet").is_file()

    # A second ingest run on an emptied spool adds nothing and skips the asset update.
    ok, states = _run(dagbag, "trace_ingest", conf, RUN_AT + dt.timedelta(minutes=5))
    assert ok, states
    assert states["announce_new_data"] == "skipped"
    assert count_rows(root / "dataset", "events") == events


def test_bad_config_fails_the_run_with_the_key(dagbag, tmp_path):
    bad = write_config(tmp_path, retention={"dataset_days": "ninety"})
    ok, states = _run(dagbag, "trace_ingest", {"config": str(bad)}, RUN_AT)
    assert not ok
    assert states["validate_config"] == "failed"
    assert states["ingest"] == "upstream_failed"


def test_task_callables_are_thin_library_calls(dagbag, tmp_path):
    """The ingest task's python_callable works without a database or scheduler."""
    from baseline.pipeline.config import load_config
    from baseline.pipeline.tasks import ingest_once

    config = write_config(tmp_path)
    cfg = load_config(config)
    cfg.spool.mkdir(parents=True)  # the hosts' upload target, empty before their first upload
    result = ingest_once(cfg)
    assert result["snapshots"] == 0 and result["new_rows"] == 0
    assert dagbag.get_dag("trace_ingest").get_task("ingest").python_callable.__name__ == "ingest"


@pytest.mark.parametrize("present", ["nothing", "a file"])
def test_a_missing_spool_is_named_not_created(tmp_path, present):
    """A mistyped spool path used to be created empty and ingested as 0 snapshots on every run,
    with nothing said; now the task fails with one line naming the config, the key and the path
    (as `baseline ingest` does), and creates nothing."""
    from baseline.pipeline.config import load_config
    from baseline.pipeline.tasks import ingest_once
    from tracer.errors import TracebaseError

    config = write_config(tmp_path, paths={"spool": str(tmp_path / "spoool")})
    if present == "a file":
        (tmp_path / "spoool").write_text("")
    with pytest.raises(TracebaseError) as err:
        ingest_once(load_config(config))
    assert str(err.value) == (f"{config}: key 'paths.spool': expected the directory the tracer hosts upload to, "
                              f"found {present} at {tmp_path / 'spoool'} (create it, or correct the path)")
    assert (tmp_path / "spoool").is_file() == (present == "a file")
    assert not (tmp_path / "dataset").exists() or not any((tmp_path / "dataset").iterdir())


def test_each_task_function_runs_without_airflow(tmp_path):
    """The same pipeline, step by step, through baseline.pipeline.tasks (no Airflow involved)."""
    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.config import load_config
    from baseline.simulator.simulate import simulate

    simulate(tmp_path, hosts=3, hours=1, seed=11, start="2026-11-28T00:00:00Z", spool=True)
    cfg = load_config(write_config(tmp_path, thresholds={"compact_min_files": 2}))
    first = pipeline.ingest_once(cfg)
    assert first["new_rows"] > 0 and first["quarantined"] == []
    assert pipeline.ingest_once(cfg)["new_rows"] == 0
    assert pipeline.tidy(cfg, now=RUN_AT)["expired"] == {"partitions": 0, "quarantined": 0, "kept_newest": 0, "left": []}
    model = pipeline.refresh_baseline(cfg, now=RUN_AT)
    assert model["traces"] > 0 and Path(model["model"]).is_file()
    expected = pipeline.refresh_expected(cfg, now=RUN_AT)
    assert cfg.expected_errors.is_file() and expected["learned"] >= 0
    audited = pipeline.audit_new_failures(cfg, now=RUN_AT)
    assert audited["traces_audited"] > 0 and audited["findings"] > 0
    published = pipeline.publish_findings(cfg, audited)
    assert (cfg.findings / "LATEST").read_text().strip() == "20261128T010000Z"
    assert (Path(published["published"]) / "clusters.parquet").is_file()
    cov = pipeline.weekly_coverage(cfg, week="2026-W48")
    assert cov["hosts"] == 3 and Path(cov["files"]["html"]).is_file()


# ----------------------------------------------------------------------------- week, retries, retention, lock
@pytest.mark.parametrize(
    ("logical", "interval_end", "week"),
    [
        ("2026-11-23T00:00", "2026-11-30T00:00", "2026-W48"),  # scheduled Monday run: its interval's week
        ("2026-11-30T00:00", "2026-11-30T00:00", "2026-W48"),  # trigger-style timetable: logical = end
        ("2026-11-30T13:55", "2026-11-30T00:00", "2026-W48"),  # manual run on Monday afternoon
        ("2026-11-29T23:59", "2026-11-23T00:00", "2026-W47"),  # Sunday night: 2026-W48 not complete yet
        ("2026-12-02T10:00", "2026-11-30T00:00", "2026-W48"),  # manual run mid-week
        ("2027-01-04T00:00", None, "2026-W53"),  # 2026 has 53 ISO weeks
    ],
)
def test_coverage_week_is_the_last_complete_iso_week(logical, interval_end, week):
    from baseline.pipeline.tasks import coverage_week

    def parse(text):
        return None if text is None else dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)

    assert coverage_week(parse(logical), parse(interval_end)) == week


@pytest.fixture(scope="module")
def audited_once(tmp_path_factory):
    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.config import load_config
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("retry")
    simulate(root, hosts=3, hours=1, seed=13, start="2026-11-28T00:00:00Z", spool=True)
    cfg = load_config(write_config(root, retention={"findings_days": 30}))
    pipeline.ingest_once(cfg)
    return cfg


def test_every_audit_task_can_be_retried(audited_once):
    from baseline.pipeline import tasks as pipeline

    cfg = audited_once
    assert pipeline.refresh_baseline(cfg, now=RUN_AT)["traces"] > 0
    first = pipeline.refresh_expected(cfg, now=RUN_AT)
    assert pipeline.refresh_expected(cfg, now=RUN_AT)["learned"] == first["learned"]  # retried: same file
    audited = pipeline.audit_new_failures(cfg, now=RUN_AT)
    (Path(audited["staging"]) / "junk-from-a-killed-attempt").write_text("x")
    audited = pipeline.audit_new_failures(cfg, now=RUN_AT)  # the retry starts from a clean staging dir
    assert not (Path(audited["staging"]) / "junk-from-a-killed-attempt").exists()
    published = pipeline.publish_findings(cfg, audited, now=RUN_AT)
    again = pipeline.publish_findings(cfg, audited, now=RUN_AT)  # retried after it had succeeded
    assert again["published"] == published["published"] and again["latest"] == "20261128T010000Z"
    assert Path(again["report"]).is_file() and (Path(again["published"]) / "findings.parquet").exists()
    # the audit rerun for the same interval replaces the published run as a whole
    pipeline.publish_findings(cfg, pipeline.audit_new_failures(cfg, now=RUN_AT), now=RUN_AT)
    assert sorted(p.name for p in cfg.findings.iterdir()) == ["20261128T010000Z", "LATEST"]
    with pytest.raises(Exception, match="no staged audit output to publish and no published run"):
        pipeline.publish_findings(cfg, {**audited, "stamp": "20261128T020000Z",
                                        "staging": str(cfg.findings / ".staging-20261128T020000Z")})


def test_a_task_meeting_torn_pages_fails_naming_the_file(tmp_path):
    """An events file whose footer is whole but whose pages do not decode (a torn copy): the
    task fails with the file's name, not polars' bare "File out of specification"."""
    import pyarrow.parquet as pq

    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.config import load_config
    from baseline.simulator.simulate import simulate
    from tracer.errors import SchemaError

    simulate(tmp_path, hosts=2, hours=1, seed=17, start="2026-11-28T00:00:00Z", spool=True)
    cfg = load_config(write_config(tmp_path))
    pipeline.ingest_once(cfg)
    torn = sorted((cfg.dataset / "events").rglob("*.parquet"))[0]
    data = bytearray(torn.read_bytes())
    group = pq.ParquetFile(torn).metadata.row_group(0)
    for i in range(group.num_columns):  # every chunk's second half: the footer stays valid
        chunk = group.column(i)
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        end = start + chunk.total_compressed_size
        data[(start + end) // 2:end] = b"\xff" * (end - (start + end) // 2)
    torn.write_bytes(bytes(data))
    with pytest.raises(SchemaError, match="unreadable data") as raised:
        pipeline.refresh_baseline(cfg, now=RUN_AT)
    assert raised.value.source == str(torn) and raised.value.expected == "readable Parquet data"


def test_findings_retention_keeps_latest_and_recent_runs(audited_once):
    from baseline.pipeline import tasks as pipeline

    cfg = audited_once
    for days in (45, 31, 10):  # older runs, published before
        when = RUN_AT - dt.timedelta(days=days)
        (cfg.findings / pipeline.run_stamp(when)).mkdir(parents=True, exist_ok=True)
    (cfg.findings / f".staging-{pipeline.run_stamp(RUN_AT - dt.timedelta(days=40))}").mkdir()  # abandoned
    (cfg.findings / ".replaced-20261128T010000Z-4242").mkdir()  # left by a publish killed mid-replace
    audited = pipeline.audit_new_failures(cfg, now=RUN_AT)
    published = pipeline.publish_findings(cfg, audited, now=RUN_AT)
    assert sorted(published["expired"]) == sorted(
        [pipeline.run_stamp(RUN_AT - dt.timedelta(days=d)) for d in (45, 31)]
        + [".staging-" + pipeline.run_stamp(RUN_AT - dt.timedelta(days=40)), ".replaced-20261128T010000Z-4242"])
    kept = sorted(p.name for p in cfg.findings.iterdir())
    assert kept == [pipeline.run_stamp(RUN_AT - dt.timedelta(days=10)), "20261128T010000Z", "LATEST"]
    # publishing an older run (a cleared task) does not move LATEST back
    older = pipeline.audit_new_failures(cfg, now=RUN_AT - dt.timedelta(hours=1))
    assert pipeline.publish_findings(cfg, older, now=RUN_AT)["latest"] == "20261128T010000Z"


def test_readers_wait_for_a_running_ingest(audited_once):
    """While ingest holds the dataset's exclusive lock (mid-write), a baseline refresh does not
    start reading; it runs once the ingest run has committed."""
    import threading

    from baseline.pipeline import tasks as pipeline
    from baseline.pipeline.ingest import dataset_lock

    cfg = audited_once
    done = threading.Event()
    result = {}

    def refresh():
        result.update(pipeline.refresh_baseline(cfg, now=RUN_AT))
        done.set()

    with dataset_lock(cfg.dataset, exclusive=True):
        reader = threading.Thread(target=refresh)
        reader.start()
        assert not done.wait(1.0), "the reader ran while ingest held the dataset"
    reader.join(timeout=120)
    assert done.is_set() and result["traces"] > 0
