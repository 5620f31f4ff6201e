"""A sixth fleet generator, written blind: from the reference call chains
(reference/rdma_control_path.yaml), the data model (tracer/schema.py), README.md and
docs/architecture.md only, without reading the project's simulator, the other generators or the
audit. It exists to score `baseline learn` / `audit` / host alerts on data shaped by someone
else's reading of the same reference.

`generate(out_dir, hosts, hours, seed) -> summary` writes a dataset (events, counters, truth;
counter_buckets for half of the hosts) and returns what it put in (see generator.py).
"""

from .generator import ROOT_CAUSES, generate

__all__ = ["ROOT_CAUSES", "generate"]
