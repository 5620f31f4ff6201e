"""fleetgen18: an eighteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the seventeen before it: a 256-rank training job (32 hosts x 8 ranks) that ONE
host's NIC firmware kills at every requeue (CREATE_QP answered BAD_SYS_STATE: EIO), while the 255
other ranks are killed by the launcher with no kernel error of their own -- their last record is
the routine empty-GID-slot ENODATA of their start-up, hundreds of processes a requeue, the same
job id across requeues (a Slurm requeue keeps it; the restart count is in the metadata), and the
culprit host's wall clock three minutes behind the fleet's, so its fatal failure is stamped
before its victims' last records; a fleet-wide maintenance window (an IPv6 renumbering push)
that doubles every host's routine ENODATA share for 8-15 minutes and then returns; a vendor mix
(mlx5, bnxt_re, irdma) where an irdma driver update makes one create_qp in twenty fail ENOMEM at
irdma_create_qp on every irdma host, the same errno routine on those same hosts one operation
over (RESET->INIT's ignored rdma_counter_bind_qp_auto ENOMEM in AUTO counter mode); and tracer
daemons restarted mid-window on two hosts (a gap, a short first interval, record numbers from a
new random start).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
