"""baseline_audit: hourly, and whenever trace_ingest lands new data (AssetOrTimeSchedule).

Refreshes the good-trace baseline and the learned expected-error list from the recent window,
audits new failures against them, and publishes the findings with the HTML report beside them
(findings/<stamp>/{findings,clusters,host_alerts}.parquet + report.html, findings/LATEST). An audit
that read some hosts' counters whole because their summaries were stale (written before an
upgrade changed the bucket rule) has the audited window's summaries rewritten after it.
Readers hold the dataset's shared lock, so nothing is fitted on an interval ingest is still
writing; every task can be retried (publishing an already published run succeeds).
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import (
    Asset,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    Param,
    dag,
    get_current_context,
    task,
)
from airflow.sdk.exceptions import AirflowSkipException

from baseline.pipeline.allocator import configure_task_process

# The task process parses this file, then the task body imports baseline.pipeline (and with it
# polars, later numpy): polars' allocator and OpenBLAS read their settings when they load, so
# they are set here, at parse time, as the console scripts set them (the user's settings win)
configure_task_process()

TRACEBASE_DATASET = Asset(name="tracebase_dataset", uri="file:///tracebase/dataset")
TRACEBASE_FINDINGS = Asset(name="tracebase_findings", uri="file:///tracebase/findings")
RETRY = dt.timedelta(minutes=2)


def run_time() -> dt.datetime:
    """The end of the run's data interval (asset-triggered runs have none: now)."""
    ctx = get_current_context()
    when = ctx.get("data_interval_end") or ctx.get("logical_date")
    return when if when is not None else dt.datetime.now(dt.UTC)


@dag(
    dag_id="baseline_audit",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 * * * *", timezone="UTC"), assets=[TRACEBASE_DATASET]
    ),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    # A run stuck on the dataset lock or a hung mount would hold the only active run and block
    # every later hour: fail it instead (each task is safe to retry). An audit of a whole day of
    # 10,000 hosts took 67 s (docs/benchmarks.md); 45 min per task is the ceiling.
    default_args={"owner": "tracebase", "execution_timeout": dt.timedelta(minutes=45)},
    dagrun_timeout=dt.timedelta(hours=2),
    doc_md=__doc__,
    tags=["tracebase"],
    params={"config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)")},
)
def baseline_audit():
    @task
    def validate_config() -> str:
        """Validate the pipeline config (param `config`, else Variable tracebase_config); its path."""
        from baseline.pipeline.config import validated_config_path
        from baseline.pipeline.tasks import one_line_failure

        with one_line_failure():  # the library's one line in the log, not a traceback
            return validated_config_path(get_current_context()["params"].get("config"))

    @task(retries=2, retry_delay=RETRY)
    def refresh_baseline(config_path: str) -> dict:
        """Refit the per-operation good-trace baseline on the recent window."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import one_line_failure
        from baseline.pipeline.tasks import refresh_baseline as refresh

        with one_line_failure():  # the library's one line in the log, not a traceback
            return refresh(load_config(config_path), now=run_time())

    @task(retries=2, retry_delay=RETRY)
    def refresh_expected(config_path: str) -> dict:
        """Relearn the expected errors from good traces (curated entries are kept)."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import one_line_failure
        from baseline.pipeline.tasks import refresh_expected as refresh

        with one_line_failure():  # the library's one line in the log, not a traceback
            return refresh(load_config(config_path), now=run_time())

    @task(retries=2, retry_delay=RETRY)
    def audit(config_path: str, model: dict, expected: dict) -> dict:  # noqa: ARG001 - ordering
        """Audit new failures: bifurcation points, root-cause clusters, host alerts (staged)."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import audit_new_failures, one_line_failure

        with one_line_failure():  # the library's one line in the log, not a traceback
            return audit_new_failures(load_config(config_path), now=run_time())

    @task(outlets=[TRACEBASE_FINDINGS], retries=2, retry_delay=RETRY)
    def publish(config_path: str, audited: dict) -> dict:
        """Publish the staged findings and report.html; findings/LATEST; the findings asset."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import one_line_failure, publish_findings

        with one_line_failure():  # the library's one line in the log, not a traceback
            return publish_findings(load_config(config_path), audited, now=run_time())

    @task(retries=2, retry_delay=RETRY)
    def refresh_summaries(config_path: str, audited: dict) -> dict:
        """Rewrite the audited window's stale counter summaries (only after an audit that met some)."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import one_line_failure, refresh_stale_summaries

        with one_line_failure():  # the library's one line in the log, not a traceback
            refreshed = refresh_stale_summaries(load_config(config_path), audited, now=run_time())
        if not refreshed["ran"]:
            raise AirflowSkipException("no stale counter summaries in the audited window")
        return refreshed

    path = validate_config()
    audited = audit(path, refresh_baseline(path), refresh_expected(path))
    publish(path, audited)
    refresh_summaries(path, audited)


baseline_audit()
