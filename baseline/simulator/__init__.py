"""A labelled fleet simulator: `simulate` drives hosts (`host`) drawn from the RDMA reference
(`catalog`) and writes tables (`tables`) and spool snapshots (`writers`) with ground truth.

May import `baseline.run` and `tracer` (the data model and spool writer); never the pipeline.
"""
