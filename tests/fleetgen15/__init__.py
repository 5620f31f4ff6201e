"""fleetgen15: a fifteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the fourteen before it: a firmware that slows down before it fails (the latency
of successful firmware commands grows for two hours, the good traces it slows past 50 ms stop
being sampled, then INIT->RTR times out), a peer-memory regression that comes with a kernel/OFED
upgrade on the two canary hosts that took it mid-day (GPU registrations fail ENOMEM in the peer
client while host-memory registrations on the same hosts pass; the kernel_release column tells
the release), errors that occur only in the teardown path (a routine double dereg_mr at process
exit, often the process's last record, beside a fatal destroy_qp EBUSY on one host whose library
build leaks a QP reference) and a host whose wall clock runs seven minutes ahead.
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
