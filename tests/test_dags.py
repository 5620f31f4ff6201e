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
    assert "'0 0 * * 0'" in repr(dagbag.get_dag("probe_coverage_weekly").timetable)  # @weekly


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
    latest = (root / "findings" / "LATEST").read_text().strip()
    assert (root / "findings" / latest / "findings.parquet").is_file()
    assert "Fleet audit" in (root / "findings" / latest / "report.html").read_text()  # published beside them
    assert (root / "model" / "baseline.parquet").is_file()
    assert (root / "expected_errors.yaml").is_file()

    ok, states = _run(dagbag, "probe_coverage_weekly", conf | {"week": "2026-W48"}, RUN_AT)
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
    result = ingest_once(load_config(config))
    assert result["snapshots"] == 0 and result["new_rows"] == 0
    assert dagbag.get_dag("trace_ingest").get_task("ingest").python_callable.__name__ == "ingest"


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
    assert pipeline.tidy(cfg, now=RUN_AT)["expired"] == {"partitions": 0, "quarantined": 0}
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
