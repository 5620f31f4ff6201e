"""fleetgen27: a twenty-seventh fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet and the decisions behind its truth).

What it adds to the twenty-six before it: scale with sparse faults, and a time-of-day surge
beside a true regression that starts in the same hour. A 300-host mlx5 RoCE training fleet
(racks of 20, 8 NICs a host, 4-host jobs of 8 ranks a host, the tracer's counters every 60 s,
capture windows of 10 s every 5 minutes) whose every host runs a fabric exporter and a UD
heartbeat daemon. Root causes: a canary half-rack (4 hosts) re-imaged mid-window onto a new
kernel build whose image lost the boot unit that turns the privileged-QKEY mode on, so the
heartbeat daemon's UD QP (a privileged QKEY) is refused at RESET->INIT (EPERM at modify_qp, the
uverbs handler's qkey check) and crash-loops under systemd -- the training ranks on the same hosts
pass the very same probe; and 2 hosts of 300 whose GFP_ATOMIC reserve runs dry, so a few INIT->RTR
a host fail ENOMEM at rdma_lag_get_ah_roce_slave (the bonded port's xmit-slave skb), fatal to the
rank (five or so failures a host in three hours). Routine: the nightly ETL batch (02:00-02:50 on
every host) whose loaders try to register writable MAP_SHARED dataset files, refused for a
long-term pin of a file-backed mapping (EFAULT at pin_user_pages_fast), then register an
anonymous staging buffer and go on (a surge in the same hour as the canary's regression); and
the exporter asking port 2 of single-port devices (EINVAL at ib_query_port) every refresh,
every host, all window. Artefacts: the canary's re-image (drain, reboot: a tracer gap, a new
boot id and kernel release), a rack drained for 40 minutes, the ranks a launcher kills when one
dies (no kernel error of their own), restarted jobs.
"""

from .generator import ROOT_CAUSES, ROUTINE, TREES, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "TREES", "generate"]
