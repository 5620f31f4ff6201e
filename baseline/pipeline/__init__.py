"""The scheduled pipeline the DAGs run: `config` (one validated YAML), `ingest` (spool ->
dataset), `tasks` (one function per DAG task), `coverage` (weekly probe coverage), `nccl`
(application-labelled failures from job logs), `suggest` (probe-set suggestions).

May import `baseline.fleet`, `baseline.run` and `tracer`; only `baseline.cli` and `dags` import it.
"""
