"""baseline_audit: hourly, and whenever trace_ingest lands new data (AssetOrTimeSchedule).

Refreshes the good-trace baseline and the learned expected-error list from the recent window,
audits new failures against them, and publishes the findings (findings/<stamp>/ + LATEST).
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

TRACEBASE_DATASET = Asset(name="tracebase_dataset", uri="file:///tracebase/dataset")
TRACEBASE_FINDINGS = Asset(name="tracebase_findings", uri="file:///tracebase/findings")


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
    tags=["tracebase"],
    params={"config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)")},
)
def baseline_audit():
    @task
    def validate_config() -> str:
        from baseline.pipeline.config import validated_config_path

        return validated_config_path(get_current_context()["params"].get("config"))

    @task
    def refresh_baseline(config_path: str) -> dict:
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import refresh_baseline as refresh

        return refresh(load_config(config_path), now=run_time())

    @task
    def refresh_expected(config_path: str) -> dict:
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import refresh_expected as refresh

        return refresh(load_config(config_path), now=run_time())

    @task
    def audit(config_path: str, model: dict, expected: dict) -> dict:  # noqa: ARG001 - ordering
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import audit_new_failures

        return audit_new_failures(load_config(config_path), now=run_time())

    @task(outlets=[TRACEBASE_FINDINGS])
    def publish(config_path: str, audited: dict) -> dict:
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import publish_findings

        return publish_findings(load_config(config_path), audited)

    path = validate_config()
    audited = audit(path, refresh_baseline(path), refresh_expected(path))
    publish(path, audited)


baseline_audit()
