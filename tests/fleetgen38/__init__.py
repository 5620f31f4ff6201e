"""fleetgen38: a thirty-eighth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: WHAT THE COLLECTION PATH DOES TO THE DATA. 8 mlx5 RoCE hosts for 3 hours, 5-second
snapshots. A failure storm on one host (a systemd service crash-looping at its unit's maximum
restart rate: ENOMEM at mlx5_cmd_exec under CREATE_QP), whose trees are mostly aggregated
(repeat_count in the tens), whose ring buffer lost records (lost_records > 0) and whose timed trees
are cut by the slot (lost_events > 0, the origin in the lost tail); a host whose tracer restarted
mid-window (a lost interval, a short first interval, record numbers from a new start); a host whose
tracer was down for an hour (no snapshot); a host whose snapshots of 30 minutes were re-sent (the
same counters rows and call trees again in a second part file of the same partitions), with a
short firmware-timeout fault (ETIMEDOUT at mlx5_cmd_exec under ALLOC_PD) inside the re-sent span.
Two routine families on every host (CQE compression refused at create_cq_user, EOPNOTSUPP; empty
GID slots read by a health agent, ENODATA at rdma_get_gid_attr). A control (faults=False) keeps the
collection artefacts and the routine, without the two causes.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]
