"""fleetgen45: a forty-fifth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md, bpf/probes/*.yaml, tests/fleet_harness.py and
the other generators' docstrings only (see generator.py for the fleet and the process model).

What it adds: ACCEPTANCE TESTING OF A NEW RACK BESIDE PRODUCTION. A GPU cluster grows by a rack:
four new hosts are powered on a quarter of an hour into the window, join the fleet's telemetry at
once (the tracer and the GID health agent come with the provisioning image), and spend the rest of
the window in burn-in -- rdma-core's pyverbs suite in a loop and nccl-tests across the rack -- while
twelve production hosts run Slurm training jobs. For an SRE the rack is two things at once: a
source of deliberate errors that must never page anyone, and the place a provisioning defect must
be caught before the rack enters the partition.

- The burn-in's NEGATIVE TESTS provoke errors on purpose and check them: three routine families
  (neg_unmapped_va, neg_illegal_transition, neg_pd_in_use), dense, on 4 of 16 hosts only, from one
  caller (run_tests.py) that goes on after each -- never seen on production hosts.
- Two of them are LOOK-ALIKES of real faults, as negative tests are by design (they provoke what a
  fault would): neg_unmapped_va has the very tree of gpu_driver_flavor, the new rack's defect (n03
  provisioned with the proprietary NVIDIA modules: NCCL pins GPU memory with plain reg_mr, EFAULT
  at pin_user_pages_fast, fatal to every nccl-tests run until the fix), on the same rack, the same
  host (n03 runs the suite too); neg_illegal_transition has the operation, origin and errno of
  rd_atomic_over_cap (a production team's new image asking max_dest_rd_atomic over the cap: every
  INIT->RTR EINVAL at mlx5_ib_modify_qp, its jobs crash-looping over production hosts).
- memlock_after_restart: a production host whose slurmd came back without its LimitMEMLOCK drop-in
  (ENOMEM at ib_umem_get under create_cq for every job started there): a black hole, the free host
  the scheduler keeps feeding.
- Routine everywhere: CQE compression refused at create_cq_user (EOPNOTSUPP, every NCCL rank, the
  CQ created again without) and the GID agent's empty slots (ENODATA at rdma_get_gid_attr).

The truth's decisions (the README and docs/architecture.md are the standard):
  1. The negative tests are routine (expected_error true): the caller provokes and expects them
     and goes on every time; no production caller ever meets them; the README's purpose is that
     such errors "never raise an alarm". Their confinement to 4 hosts of one caller is what makes
     them hard -- the architecture learns a family spread over its vendor group's hosts, and
     otherwise per caller (`comm`), a surviving caller on few hosts with its runs standing in for
     hosts.
  2. gpu_driver_flavor and rd_atomic_over_cap are root causes though they share a negative test's
     (operation, origin probe, errno): the records' callers die of them (all_reduce_perf, python3)
     while the suite survives its own. The architecture's per-caller rule (README: `comm:` where the
     same errno at the same call site is retried through by one program and kills another) is what
     must keep them open; the suite's sub-family is learned for run_tests.py. Every record is
     labelled by its caller: the suite's unmapped-VA records on n03 are neg_unmapped_va, whatever
     n03's driver (the suite never registers GPU memory: its records are the test's own range).
  3. Each root cause is one cluster: gpu_driver_flavor naming n03 alone, memlock_after_restart
     naming p05 alone, rd_atomic_over_cap production hosts only (never a new host: the look-alike
     stays apart from the negative test). No cluster holds a routine record.
  4. Host alerts: p05 must alert, naming ENOMEM (a crash loop on one host: every create_cq's
     ib_umem_get on p05 fails while the slurmd is wrong, a new errno there: whichever of the
     architecture's persistent bad state, rising rate or recurring errno names it). Allowed: n03 naming EFAULT at its records' frames (not required: the
     architecture's recurring_errno takes an origin probe shown with the errno on at most 3 hosts,
     and the suite shows EFAULT at pin_user_pages_fast on all 4 new hosts; the cluster names n03);
     hosts where rd_atomic_over_cap failed, naming EINVAL at its frames (not required: a cause more
     than 3 hosts fail alike within an hour is left to the clusters). Nothing else: no alert on
     n01, n02, n04 (their only errors are the negative tests and the fleet's routine, new hosts
     whose rates start at their join), none on a production host without a cause, none naming a
     routine family's (probe, errno) on a host where no cause fails at that (probe, errno).
  5. The control (faults=False): the same fleet, new rack, negative tests and routine; n03 with the
     open modules, vision's image fine, p05's slurmd restarted right. Nothing may be raised.

Variants (generate's `defect` and `rack`):
  defect="rack"  the rack's provisioning image, not one host, carried the proprietary modules: the
                 defect on all four new hosts, the very hosts (and tree) of the suite's unmapped-range
                 test; only the caller tells them apart. The same truth: the defect one cluster over
                 the four new hosts, the suite's test routine; alerts on the new hosts tolerated only
                 naming the defect's EFAULT at its frames.
  rack=1         n03 alone, back from repair (RMA: its NIC replaced, the host re-imaged -- with the
                 proprietary modules), runs the burn-in alone before it rejoins the partition;
                 nccl-tests over its NIC in loopback (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE: one QP a
                 rank). LONE_HOST, a decision taken from docs/architecture.md after a first run
                 (the audit kept the suite's 25 unmapped-range records open, in the defect's
                 cluster): the architecture learns a surviving caller on fewer than min_hosts hosts
                 "its runs standing in for them, where on none of its hosts the family ends another
                 caller's process" -- here the family ends every nccl-tests rank on the suite's only
                 host, so the suite's survival there vouches for nothing and the family is that
                 host's. A documented, reasoned rule, not a defect: on a rack of one host with the
                 defect, the suite's unmapped-range records are labelled the host's cause
                 (gpu_driver_flavor, expected_error false; the same origin, errno and layer), for
                 the whole window (the learner judges the family over the window, the fix
                 included). The other two negative tests, which kill nothing there, stay routine.
"""

from .generator import (
    FAMILIES,
    GPU_HOST,
    HOSTS,
    LAYER,
    LOOK_ALIKES,
    MEMLOCK_HOST,
    NEGATIVE_TESTS,
    NEW,
    PROD,
    ROOT_CAUSES,
    ROUTINE,
    TREE_FAMILY,
    TREES,
    generate,
)

__all__ = ["FAMILIES", "GPU_HOST", "HOSTS", "LAYER", "LOOK_ALIKES", "MEMLOCK_HOST", "NEGATIVE_TESTS", "NEW", "PROD",
           "ROOT_CAUSES", "ROUTINE", "TREE_FAMILY", "TREES", "generate"]
