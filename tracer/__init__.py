"""tracebase's capture side: what runs on traced hosts.

The top level is the one data model everything may use: `schema` (versioned Arrow schemas,
readers and writers), `atomic` (crash-safe writes), `inputs` (regular-file reads), `btf` (the
one BTF reader), `errors`, `errnos`, `privilege`, `units` (the one parser of durations, times
and numeric option values).
Sub-packages: `record` (single-run syscall recorder), `fleet` (probe sets, BPF program, daemon,
spool), `cli` (the `tracer` command). Nothing here imports `baseline`.
"""
