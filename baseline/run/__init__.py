"""Single-run diff: where a recorded bad run leaves the behaviour of good runs of the same command.

`traces` loads and checks inputs, `normalize` masks run-to-run noise, `align` matches streams,
`diff` names the bifurcation point, `allowlist` is the expected-errors file format and learner.
Imports only the top of `tracer`.
"""
