"""The scheduled pipeline the DAGs run: `config` (one validated YAML), `ingest` (spool ->
dataset, the dataset lock and watermark), `tasks` (one function per DAG task), `layout` (where
the commands put their outputs inside a dataset so they find each other), `coverage` (weekly
probe coverage), `nccl` (application-labelled failures from job logs), `suggest` (probe-set
suggestions).

May import `baseline.fleet`, `baseline.run` and `tracer`; only `baseline.cli` and `dags` import it.
"""
