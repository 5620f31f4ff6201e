"""Fleet audit: good-trace baseline per operation (`model`), fleet-learned expected errors
(`expected`), the audit into findings/clusters/host alerts (`audit`), reports (`report`) and
scoring against ground truth (`evaluate`).

May import `baseline.run` and the top of `tracer`; never `baseline.pipeline` or `baseline.cli`.
"""
