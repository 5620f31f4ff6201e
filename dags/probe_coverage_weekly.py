"""probe_coverage_weekly: the weekly probe-coverage report (HTML, Markdown, Parquet).

Per-probe invocations, failures, errno mix and week-over-week trend; probes that never fired;
probes missing per kernel/vendor group with the namespace-gate resolution; and how many
application-labelled failures (NCCL logs from the config's nccl_logs) land on probed functions.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import Param, dag, get_current_context, task


@dag(
    dag_id="probe_coverage_weekly",
    schedule="@weekly",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["tracebase"],
    params={
        "config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)"),
        "week": Param(None, type=["null", "string"], description="ISO week (2026-W48); default: the week that just ended"),
    },
)
def probe_coverage_weekly():
    @task
    def validate_config() -> str:
        from baseline.pipeline.config import validated_config_path

        return validated_config_path(get_current_context()["params"].get("config"))

    @task
    def coverage_report(config_path: str) -> dict:
        from baseline.pipeline.config import load_config
        from baseline.pipeline.coverage import week_label
        from baseline.pipeline.tasks import weekly_coverage

        ctx = get_current_context()
        week = ctx["params"].get("week")
        if not week:  # @weekly fires Sunday 00:00 UTC: report the last complete ISO week (Mon-Sun)
            end = ctx.get("data_interval_end") or ctx.get("logical_date") or dt.datetime.now(dt.UTC)
            monday = (end - dt.timedelta(days=7)).date()
            week = week_label(monday - dt.timedelta(days=monday.weekday()))
        return weekly_coverage(load_config(config_path), week=week)

    coverage_report(validate_config())


probe_coverage_weekly()
