"""fleetgen10: a tenth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and tests/fleet_harness.py (see generator.py
for the fleet and the decisions behind its truth).

What it adds to the nine before it: host clocks minutes off and one stepping back mid-window
(NTP), spools delivered hours late (separate part files, rows out of order), a probe rolled out
to half the fleet mid-window (rdma_lookup_get_uobject: a routine error's origin moves one frame
deeper there), a peer-memory client reloaded host by host (3-minute gaps with no client),
multi-tenant hosts where one tenant's jobs fail (a net-namespace gate) and the other's do not,
per-driver errnos (ODP refused by bnxt_re/irdma only, completion vectors irdma lacks, irdma's QP
context allocation), routine errors whose rates follow a diurnal load curve, and teardown
errors (a PD freed before its MRs: EBUSY; an MR deregistered twice: ENOENT).
"""

from fleetgen10.generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
