"""The differ's rules (baseline.run.diff.diff_traces applies them): each module one family of
program behaviour that changes a trace without a failure, or decides which of several
divergences is the failure's. `base` holds what they share.
Imports the differ's building blocks beside it (`normalize`, `align`, `compute`, `native`,
`traces`, `allowlist`), `base` and, between rule modules, one another without cycles; never
`baseline.run.diff`, which imports them.
"""
