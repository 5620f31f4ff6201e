"""fleetgen11: an eleventh fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and tests/fleet_harness.py (see generator.py
for the fleet and the decisions behind its truth).

What it adds to the ten before it: host-alert recall (its truth names the hosts that must alert
and the errno each alert must show, `alert_hosts`), a slow-burn leak (ENOMEM rising from 0.1 %
to 30 % over the window on one host), one bad host among all, a rolling maintenance drain
(device disassociated under live jobs, host by host for 10 minutes: a root cause, no alert
required), a full ring buffer (records in repeat_count, then counters only), an out-of-tree
driver's kernel-internal errno (ENOTSUPP, -524), a host whose tracer crashes while its fault
goes on, a NIC swap (vendor change), dma-buf MR failures nine frames deep under the ioctl
dispatch chain, and a batch scheduler packing 1,800 short jobs an hour on some hosts.
"""

from fleetgen11.generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
