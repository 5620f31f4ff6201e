"""trace_ingest: every 5 minutes, move tracer spool snapshots into the fleet dataset.

Ingest is idempotent (a rerun of an interval adds no duplicate rows, a killed run loses none),
unreadable files go to quarantine with the reason, small files are compacted and old partitions
expire. Each completed run publishes the dataset's ingest watermark. When new rows land, the
`tracebase_dataset` asset is updated, which triggers baseline_audit.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

TRACEBASE_DATASET = Asset(name="tracebase_dataset", uri="file:///tracebase/dataset")


@dag(
    dag_id="trace_ingest",
    schedule=dt.timedelta(minutes=5),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,  # one writer per dataset partition at a time
    tags=["tracebase"],
    params={"config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)")},
)
def trace_ingest():
    @task
    def validate_config() -> str:
        from baseline.pipeline.config import validated_config_path

        return validated_config_path(get_current_context()["params"].get("config"))

    @task(retries=2, retry_delay=dt.timedelta(minutes=1))  # idempotent: a rerun adds no duplicate rows
    def ingest(config_path: str) -> dict:
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import ingest_once

        return ingest_once(load_config(config_path))

    @task(retries=2, retry_delay=dt.timedelta(minutes=1))
    def compact_and_expire(config_path: str, ingested: dict) -> dict:  # noqa: ARG001 - runs after ingest
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import tidy

        return tidy(load_config(config_path))

    @task(outlets=[TRACEBASE_DATASET])
    def announce_new_data(ingested: dict) -> dict:
        if not ingested["new_rows"]:
            raise AirflowSkipException("no new rows: the dataset asset is not updated")
        return {"rows": ingested["rows"], "snapshots": ingested["snapshots"]}

    path = validate_config()
    ingested = ingest(path)
    compact_and_expire(path, ingested)
    announce_new_data(ingested)


trace_ingest()
