"""fleetgen9: a ninth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md and docs/architecture.md (see generator.py for the fleet)."""

from fleetgen9.generator import ROOT_CAUSES, generate

__all__ = ["ROOT_CAUSES", "generate"]
