"""fleetgen46: a forty-sixth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, bpf/probes/*.yaml, tests/fleet_harness.py and
the other generators' docstrings only (see generator.py for the fleet and the process model).

What it adds: A CONTAMINATED LEARNING WINDOW. Every generator before it let the audit learn its
expected errors from the very data it audits, or from a window that was clean. Here the expected
errors (and the good-trace model) are learned on day D and day D+1 is audited with them, as the
scheduled pipeline does (`baseline learn D --expected-out learned.yaml`; `baseline audit D+1
--model D/baseline-model.parquet --allowlist learned.yaml`, the audit adding, as by default, what it
learns from D+1 itself; no curated entry). And the "good" day D is not all good:

  (a) two real faults already present at a low rate on D, both growing on D+1: g05's NIC fails
      CREATE_QP firmware commands with EIO at mlx5_cmd_exec (cmd_status_to_err: INT_ERR -> -EIO)
      under mlx5_qpc_create_qp, ~2 % of D's create_qp, 6 % rising to 24 % on D+1; g11's
      checkpoint-offload daemon leaks pinned host buffers, so ib_umem_get's page-list allocation
      fails with ENOMEM for reg_mr (4 % of D's last 90 minutes; 5 % rising to 30 % on D+1). A rank
      meeting either dies (its job aborts and is requeued); the health agent meeting it logs it
      and goes on;
  (b) two routine families on every host both days: the GID-table scan's empty slots (ENODATA at
      rdma_get_gid_attr under QUERY_GID_ENTRY, the scan goes on to the next index) and a CQ asked
      with 128-byte CQE padding the HCA lacks (EOPNOTSUPP at create_cq_user, asked again without);
  (c) a routine family rare on D and common on D+1: tenant kestrel's ranks run under an rdma
      cgroup hca_object limit, and their create_qp meets EAGAIN at ib_rdmacg_try_charge and is
      retried 20-80 ms later. On D kestrel ran one small job, on g03: two occurrences; on D+1 its
      sweeps share 12 hosts with tenant orca: ~300 occurrences, every process going on;
  (d) a one-off burst on D: g09's driver restart (devlink reload) kills the running job and, for
      90 s, every QP creation fails with EIO at rdma_alloc_begin_uobject (disassociate in
      progress): the requeued job crash-loops six times, the agent's check fails once. It never
      recurs.
Variants: contamination="dense" (D's faults four times denser: ~20 EIO and ~12 ENOMEM records on
D, still one host each), twin=True (a second NIC of g05's lot, in g13, failing alike on both days),
and the control (faults=False: no (a), no (d)).

The truth (records' `root_cause` and `expected_error`) and the decisions behind it:
  * (a) is a root cause on both days and must not be learned from D: each fault is on one host
    (two in the twin variant) and kills the processes that meet it, so neither the fleet spread
    nor the survival the architecture asks of a routine family holds ("One host where the
    operation fails now and succeeds then and no other host shows the error ... is that host's
    fault"). The agent's surviving occurrences do not make it routine for the agent either: the
    per-caller rule learns a surviving caller on few hosts only "where on none of its hosts the
    family ends another caller's process", and on g05/g11 it ends the ranks. So on D+1 every
    occurrence, the agent's included, is an open finding, one cluster per fault naming its hosts
    only, and each fault's hosts alert naming its errno (recurring_errno: host-specific, in 4 or
    more 15-minute buckets, 10 or more times, its origin probe failing with it on at most 3 hosts).
  * (b) is routine (expected_error) on both days: learned on D (spread over every host of the
    vendor group, every process going on: CBI Increase ~0) and set aside on D+1. The faults'
    crash loops redo these start-up errors more often on g05/g11: per the architecture that is
    the unexpected error's symptom, not an alert of its own.
  * (c) is routine (expected_error) on both days. On D the learner cannot know it: one host,
    where create_qp succeeds before and after ("on one host alone only when its operation never
    succeeds there"), so D's list must not hold it. The errno is one that tells the caller what to
    do next (EAGAIN, rdmacg_try_charge's hca_object limit), the callers go on, and on D+1 it is
    spread over 12 hosts with hundreds of runs: the documented default audit learns expected
    errors from the audited dataset too (`--no-learn-expected` is the opt-out), so D+1 itself
    carries the evidence and its records must be set aside, with no host alert (a
    host_configuration family's "bursty jobs are no rise"). The rule followed: the README's
    "learns which errors are expected ... so they never raise an alarm", judged per family on the
    data the audit learns from, not frozen to what one quiet day happened to show.
  * (d) is a root cause on D (the reload's EIO kills the ranks; one host) and must not be
    learned from D; it is absent from D+1, where nothing may name g09.
  * D+1's control (faults=False) raises nothing: no open finding, no cluster, no alert.
"""

from .generator import (
    CAUSE_HOST,
    CONTAMINATING,
    EVERYWHERE,
    FAMILIES,
    HOSTS,
    LAYER,
    ONE_OFF,
    RARE_HOST,
    RARE_THEN_COMMON,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["CAUSE_HOST", "CONTAMINATING", "EVERYWHERE", "FAMILIES", "HOSTS", "LAYER", "ONE_OFF", "RARE_HOST",
           "RARE_THEN_COMMON", "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "generate"]
