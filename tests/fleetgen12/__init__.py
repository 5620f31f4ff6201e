"""fleetgen12: a twelfth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other
generators' docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds to the eleven before it: counters reset by a daemon restart and shipped by a
cumulative exporter as negative deltas (one snapshot going backwards), at-least-once shipping
(a half hour of a host's snapshots, call trees included, delivered twice in a second part
file), good traces sampled only ten seconds an hour (`--good-every 1h --good-window 10s`),
16 ranks a host per job, dma-buf attach failing under GPU memory pressure in episodes, a
whole rack's firmware flashed for 20 minutes (mlx5_cmd_exec EIO, then recovered: a cluster,
no host alert), and an errno that is routine on one firmware and a fault on another with the
same kernel and driver (NO_RES -> EAGAIN at mlx5_cmd_exec under create_qp: retried through on
firmware 22.x, persistent on 28.x, whose ranks die)."""

from .generator import ROOT_CAUSES, generate

__all__ = ["ROOT_CAUSES", "generate"]
