"""fleetgen13: a thirteenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twelve before it: a kernel upgrade rolling across one platform during the
day whose new release refuses one registration mode (a regression on exactly the upgraded hosts),
hosts joining (autoscaling, no history) and drained mid-day, multi-host jobs whose every rank
fails because ONE host's NIC is bad (its peers show the peer-side ETIMEDOUT of neighbour
resolution; only the bad host must alert), an errno storm from one crash-looping agent whose
failures are almost all in repeat_count, a GPU driver reload failing peer-memory registrations
for two minutes on every host of one driver version (a version in the metadata only), one
failure in the whole window on one host in a probe nobody else fails on, hosts whose tracer runs
a reduced probe set (handlers only: routine errors seen at the root), and an errno routine inside
one tenant's namespace only (RAW_PACKET QPs refused without CAP_NET_RAW).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
