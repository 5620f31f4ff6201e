"""trace_ingest: every 5 minutes, move tracer spool snapshots into the fleet dataset.

Ingest is idempotent (a rerun of an interval adds no duplicate rows, a killed run loses none),
unreadable files go to quarantine with the reason, small files are compacted, a closed day's
events compacted across hosts (`thresholds.compact_days_after`) and old partitions expire. Each completed run publishes the dataset's ingest watermark. When new rows land, the
`tracebase_dataset` asset is updated, which triggers baseline_audit.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from baseline.pipeline.allocator import configure_task_process

# The task process parses this file, then the task body imports baseline.pipeline (and with it
# polars, later numpy): polars' allocator and OpenBLAS read their settings when they load, so
# they are set here, at parse time, as the console scripts set them (the user's settings win)
configure_task_process()

TRACEBASE_DATASET = Asset(name="tracebase_dataset", uri="file:///tracebase/dataset")


@dag(
    dag_id="trace_ingest",
    schedule=dt.timedelta(minutes=5),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,  # one writer per dataset partition at a time
    # A run stuck on a hung mount would hold the only active run and block every later
    # interval: fail it instead (the next run picks the spool up; ingest is idempotent).
    # An ingest of a day's backlog of 10,000 hosts takes minutes; 20 min is the ceiling.
    default_args={"owner": "tracebase", "execution_timeout": dt.timedelta(minutes=20)},
    dagrun_timeout=dt.timedelta(hours=1),
    doc_md=__doc__,
    tags=["tracebase"],
    params={"config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)")},
)
def trace_ingest():
    @task
    def validate_config() -> str:
        """Validate the pipeline config (param `config`, else Variable tracebase_config); its path."""
        from baseline.pipeline.config import validated_config_path
        from baseline.pipeline.tasks import one_line_failure

        with one_line_failure():  # the library's one line in the log, not a traceback
            return validated_config_path(get_current_context()["params"].get("config"))

    @task(retries=2, retry_delay=dt.timedelta(minutes=1))  # idempotent: a rerun adds no duplicate rows
    def ingest(config_path: str) -> dict:
        """Spool snapshots into the dataset; unreadable files to quarantine; the watermark."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import ingest_once, one_line_failure

        with one_line_failure():  # the library's one line in the log, not a traceback
            return ingest_once(load_config(config_path))

    @task(retries=2, retry_delay=dt.timedelta(minutes=1))
    def compact_and_expire(config_path: str, ingested: dict) -> dict:  # noqa: ARG001 - runs after ingest
        """Merge small part files and closed days; remove partitions and quarantine past their retention."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import one_line_failure, tidy

        with one_line_failure():  # the library's one line in the log, not a traceback
            return tidy(load_config(config_path))

    @task(outlets=[TRACEBASE_DATASET])
    def announce_new_data(ingested: dict) -> dict:
        """Update the tracebase_dataset asset (triggers baseline_audit) when rows landed; else skip."""
        if not ingested["new_rows"]:
            raise AirflowSkipException("no new rows: the dataset asset is not updated")
        return {"rows": ingested["rows"], "snapshots": ingested["snapshots"]}

    path = validate_config()
    ingested = ingest(path)
    compact_and_expire(path, ingested)
    announce_new_data(ingested)


trace_ingest()
