"""probe_coverage_weekly: the weekly probe-coverage report (HTML, Markdown, Parquet).

Per-probe invocations, failures, errno mix and week-over-week trend; probes that never fired;
probes missing per kernel/vendor group with the namespace-gate resolution; and how many
application-labelled failures (NCCL logs from the config's nccl_logs) a live probe saw.

Runs Monday 00:00 UTC, so its data interval is exactly the ISO week that just ended, and reports
the last complete ISO week before the run (baseline.pipeline.tasks.coverage_week): on a
scheduled run the interval's week, on a manual run the last week complete when it was triggered.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import CronDataIntervalTimetable, Param, dag, get_current_context, task

from baseline.pipeline.allocator import configure_task_process

# The task process parses this file, then the task body imports baseline.pipeline (and with it
# polars, later numpy): polars' allocator and OpenBLAS read their settings when they load, so
# they are set here, at parse time, as the console scripts set them (the user's settings win)
configure_task_process()


@dag(
    dag_id="probe_coverage_weekly",
    schedule=CronDataIntervalTimetable("0 0 * * 1", timezone="UTC"),  # ISO weeks start on Monday
    start_date=dt.datetime(2026, 1, 5, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,  # one report run at a time (a backfill of several weeks runs them in turn)
    # a week of a large fleet reads in minutes; a run stuck on a hung mount fails instead of
    # holding the slot until next Monday
    default_args={"owner": "tracebase", "execution_timeout": dt.timedelta(hours=2)},
    dagrun_timeout=dt.timedelta(hours=6),
    doc_md=__doc__,
    tags=["tracebase"],
    params={
        "config": Param(None, type=["null", "string"], description="pipeline config YAML (else Variable tracebase_config)"),
        "week": Param(None, type=["null", "string"], description="ISO week (2026-W48); default: the last complete week"),
    },
)
def probe_coverage_weekly():
    @task
    def validate_config() -> str:
        """Validate the pipeline config (param `config`, else Variable tracebase_config); its path."""
        from baseline.pipeline.config import validated_config_path
        from baseline.pipeline.tasks import one_line_failure

        with one_line_failure():  # the library's one line in the log, not a traceback
            return validated_config_path(get_current_context()["params"].get("config"))

    @task(retries=2, retry_delay=dt.timedelta(minutes=2))
    def coverage_report(config_path: str) -> dict:
        """The report of one ISO week (param `week`, else the last complete week): HTML, Markdown, Parquet."""
        from baseline.pipeline.config import load_config
        from baseline.pipeline.tasks import coverage_week, one_line_failure, weekly_coverage

        ctx = get_current_context()
        with one_line_failure():  # the library's one line in the log, not a traceback
            week = ctx["params"].get("week") or coverage_week(ctx.get("logical_date"), ctx.get("data_interval_end"))
            return weekly_coverage(load_config(config_path), week=week)

    coverage_report(validate_config())


probe_coverage_weekly()
