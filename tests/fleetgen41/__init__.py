"""fleetgen41: a forty-first fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, tests/fleet_harness.py and the other generators'
docstrings only (see generator.py for the fleet and the decisions behind its truth).

What it adds: TIME BOUNDARIES. 10 mlx5 RoCE hosts observed from 21:00 to 03:00 UTC: the data
crosses midnight, so every table has two date partitions (date=D and date=D+1). A GID-table fault
(the RoCE IP removed from the interface: ENODATA at rdma_get_gid_attr on every INIT->RTR, fatal to
the rank) runs from 23:40 to 00:40 on 2 hosts: one cause, one cluster across the date boundary,
naming both. A short UMR fault entirely after midnight on one host (reg_mr EFAULT at
mlx5r_umr_update_mr_pas, 01:30-01:50). Two routine families on both sides of midnight (CQE
compression refused at create_cq_user, EOPNOTSUPP, done without; empty GID slots read by a health
agent, ENODATA at rdma_get_gid_attr). Collection realities at the boundary: one fault host's
snapshots of 23:55-00:05 arrive late, in a second part file of their own date's partition (the
schema docs: a snapshot ingested late for day D goes to date=D/host=H/); the other fault host's
tracer restarts at 00:00 (log rotation: the interval it was killed in lost, 15 s unseen, a short
first interval, record numbers from a new start). The control (faults=False) keeps the artefacts
and the routine, without the two causes.
"""

from .generator import FAMILIES, LAYER, ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["FAMILIES", "LAYER", "ROOT_CAUSES", "ROUTINE", "TREES", "generate"]
