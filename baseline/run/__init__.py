"""Single-run diff: where a recorded bad run leaves the behaviour of good runs of the same command.

`traces` loads and checks inputs, `normalize` masks run-to-run noise, `align` matches streams,
`diff` names the bifurcation point (its rules, one module a family of program behaviour, in
`rules`; its answer, text and JSON, in `report`), `allowlist` is the expected-errors file format
and learner.
Imports only the top of `tracer`.
"""
