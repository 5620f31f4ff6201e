"""An independent, deliberately messy RDMA fleet generator for scoring the audit.

Written from reference/rdma_control_path.yaml alone; it shares no code with baseline.simulator
(only tracer.schema, to write the tables). See fleetgen.model.generate.
"""

from fleetgen.model import generate

__all__ = ["generate"]
