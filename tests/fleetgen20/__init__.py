"""fleetgen20: a twentieth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the nineteen before it: cases at the edges of the learner's two newest rules -- an
update's error that every process survives but that costs each upgraded host seconds of retries a
QP (create_qp EBUSY at mlx5_cmd_exec, the good traces' durations grown a hundredfold); the same
update's create_cq EOPNOTSUPP, a routine fallback on ConnectX-7 hosts but fatal on two ConnectX-6 Dx
hosts the scheduler then drains (a few fatal beside thousands survived); a host whose NIC fails every
CREATE_MKEY (reg_mr EIO) after its jobs were drained, so only the node agent meets it and retries
(one host, no process dying: the caller's-own-use rule's shape) beside a memtest host whose ENOMEM is
truly routine; and a rare fatal INIT->RTR ETIMEDOUT spread one per host over eight hosts, the errno a
pingmesh daemon on two hosts survives every round.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
