"""tracebase's analysis side: from recorded traces to findings.

Sub-packages, one job each: `run` (diff one recorded run against good runs; the expected-error
allowlist), `fleet` (good-trace baseline model, fleet expected errors, audit, reports,
evaluation), `simulator` (a labelled fleet), `pipeline` (config, ingest, scheduled tasks,
coverage), `cli` (the `baseline` command). `demo` runs the main job end to end.
Layers, enforced by import-linter (pyproject.toml): cli > pipeline > fleet | simulator > run.
"""
