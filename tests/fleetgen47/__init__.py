"""fleetgen47: a forty-seventh fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/*.md, bpf/probes/*.yaml, `baseline --help` and its subcommands'
--help, tests/fleet_harness.py and the other generators' docstrings only (see generator.py for the
fleet and the process model).

What it adds: A STALE GOOD-TRACE MODEL. Every generator before it audited a day with a
good-trace model learned from that day, or from a day of the same software. Here the model
(`baseline learn D0`, D0/baseline-model.parquet) was learned four weeks before the audited day D,
on the same 16 mlx5 RoCE hosts, and between D0 and D every host took an update that changed the
SUCCESS path of two operations:
  * create_qp: mlx5_ib_create_qp now begins with mlx5_ib_dev_res_srq_init (the lazy creation of
    the device's default SRQs/CQ the reference shows in the newer driver: an extra frame);
  * create_cq: mlx5_core_create_cq's firmware command is now mlx5_cmd_do then mlx5_cmd_check (the
    reference's children of mlx5_core_create_cq) where D0's driver called mlx5_cmd_exec (a
    different driver command sequence).
Two forms of the update (generate's `update`): "kernel", a kernel upgrade (kernel_release
5.15.0-122-generic on D0, 6.8.0-49-generic on D), and "dkms", MLNX_OFED 24.07's driver modules
built for the same running kernel (kernel_release unchanged, only the job metadata's
mlx5_driver says so). Every good create_qp and create_cq of D differs from the model, on every
host. The routine goes on both days on every host: the GID monitor's empty slots (ENODATA at
rdma_get_gid_attr under QUERY_GID_ENTRY, the scan goes on) and the ranks' CQ asked with 128-byte
CQE padding the HCA lacks (EOPNOTSUPP at create_cq_user, asked again without). On D, two real
faults, each through a changed path:
  * qp_fw_int_err: g04's NIC fails 8 % of its CREATE_QP firmware commands with INT_ERR (EIO at
    mlx5_cmd_exec under mlx5_qpc_create_qp: cmd_status_to_err's INT_ERR -> -EIO), all day; the
    rank dies, its job is killed and requeued (up to 4 attempts);
  * cq_fw_lim_err: from 40 minutes in, every CREATE_CQ on g09 fails LIM_ERR (ENOMEM at
    mlx5_cmd_check: LIM_ERR -> -ENOMEM); every rank dies at its first CQ, the job is requeued
    onto g09 again and again (a crash loop to the window's end).
The control (faults=False) is the same D without either fault.

The truth (records' root_cause, bifurcation, origin_layer, expected_error), and why:
  1. Each fault's bifurcation is its origin (mlx5_cmd_exec EIO; mlx5_cmd_check ENOMEM), layer
     driver. The README: the audit "names for every failure the bifurcation point where it left
     known-good behaviour", keeping "a fresh baseline of successful traces beside the failures";
     docs/architecture.md: the bifurcation is "the first frame before [the origin] on an edge no
     good trace of the operation has ..., else the origin". Every good trace of D -- thousands,
     timed, on every host -- has the update's edges (mlx5_ib_create_qp -> mlx5_ib_dev_res_srq_init,
     mlx5_core_create_cq -> mlx5_cmd_do/mlx5_cmd_check), so a failure passing them has not left
     known-good behaviour there: it leaves it where the firmware command fails. The architecture
     says as much for a kernel update: "a chain seen only on kernel releases with no good trace of
     its operation has its origin as bifurcation (another release's symbols are no shape to
     diverge from)" -- a model learned on 5.15 holds no good trace of 6.8. Under "dkms" the
     release does not tell, and the rule that decides is the README's (known-good behaviour is
     what the good traces of the day show), so the same truth holds; that reading is the
     borderline one (the audit was handed the model with `--model`), and the test says so.
  2. Each fault is one cluster naming its host alone (g04; g09), found whole, every record open,
     origin layer driver -- with the stale model (`baseline audit D --model
     D0/baseline-model.parquet`) and without it (`baseline audit D`: no model saved in D, so
     "learned from DATASET", the documented default). The audit says which model it used
     (README: "uses the saved model, says so").
  3. The update is no fault: a good trace is never a finding, no cluster or alert names a host
     without a fault, and no cluster holds anything but a fault's records. The docs describe no
     report of model drift (none is asked); what they describe is the audit of failures against
     the good traces, so the update may show nowhere but in where the faults' bifurcations fall.
  4. The routine is set aside (expected_error true): both families spread over all 16 hosts,
     every process going on, the errno one that tells the caller what to do next (ENODATA,
     EOPNOTSUPP); learned from D by the audit's default (`--no-learn-expected` is the opt-out),
     the curated list not used (`--allowlist` of no entry). g09's crash loop redoes the padding
     refusal there 4 times a restart: per the architecture "a learned family out of its band on
     a host where an unexpected error rises or persists is that error's symptom", no alert of
     its own.
  5. Host alerts: g04 naming EIO (its fault's errno at the fault's frames: a rising rate or a
     recurring errno, whichever the counters show); g09 at its fault (its persistent bad state
     named by mlx5_cmd_check, the architecture's "a bad state is named by an unexpected error's
     probe first", or naming ENOMEM); nothing on another host, nothing else on these two. The
     counters know no model, so the alerts are the same with and without it.
  6. The control raises nothing, with the stale model and without: no open finding, no cluster,
     no alert.
"""
