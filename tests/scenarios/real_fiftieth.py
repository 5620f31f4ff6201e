"""A fiftieth set of real programs with one real fault each: **the launch files of a multi-node
training job, built on the head node by its launcher script** -- what runs between "the scheduler
gave us 16 nodes" and the first rank starting: the allocation joined with the node inventory, the
inventory's memory column made numeric, the launch stages put in order, the NCCL settings pulled
out of the job's YAML, the rendezvous store checked, the node agents' GPU reports merged into a
rank table, the rank table shown, an MPI rankfile and a hostfile written, the launcher's lock
taken and the per-rank environment rendered -- with the text and data tools an SRE's launcher
uses for that on this Debian host (join, numfmt, tsort, yq, bash's /dev/tcp, jq, column, awk,
sort | tee, mkdir, m4).

Earlier sets ran a launcher's process control (twelfth: what happens between "start the job" and
its first instruction), a rendezvous port (ninth) and the data a job reads (forty-ninth); none
built the launch files themselves. Each case's good runs are allocations of other sizes (4, 16,
8 nodes) with other node names (``gpu-h100-NNN``), and the bad run is yet another allocation plus
one real fault:

- ``join --check-order`` of the allocation with the inventory, where the node registrar appended
  a new node at the end of the sorted inventory (no call fails: "is not sorted" on stderr, exit 1);
- ``numfmt --from=iec`` of the inventory's memory column, one upgraded node agent reporting
  ``1536Gi`` (no call fails: "invalid suffix in input" on stderr, exit 2);
- ``tsort`` of the launch stages, an edit making ``collect-logs`` run before ``stage-data``: a
  loop (no call fails: "input contains a loop" on stderr, exit 1);
- ``yq -r`` of the job's launch.yaml, a hand edit indenting one NCCL key with a tab (no call fails:
  PyYAML's ScannerError on stderr, exit 1);
- the bash pre-flight's ``exec 3<>/dev/tcp/127.0.0.1/PORT`` to the rendezvous store, which is not
  running on the bad day (connect ECONNREFUSED);
- ``jq -s`` as nobody over the node agents' GPU reports, one written 0600 by a re-imaged node's
  agent (openat EACCES);
- ``column -t`` of the rank table through a ``ranktable.csv`` link left pointing at the previous
  job's table, which the cleaner removed (openat ENOENT at the link);
- ``awk`` writing the MPI rankfile under a site profile that sets ``ulimit -f 4`` on the bad host
  (write EFBIG, then SIGXFSZ kills awk);
- ``sort -u | tee`` publishing the hostfile to the shared job directory, mounted read-only on the
  bad head node (tee's openat EROFS);
- ``mkdir`` of the launcher's lock directory, left behind by a crashed earlier attempt (mkdir
  EEXIST);
- ``m4`` rendering the per-rank environment into a tmpfs (a 1 MiB /dev/shm-like mount) that the
  previous job filled (write ENOSPC).

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; its data is picked by the run (the setup counts the good runs; the bad run has its
own allocation).

Noise cases (``QUIET_FIFTIETH``): good runs alone, no fault -- ``join`` of allocations of 4 to 16
nodes, ``tsort`` of stage graphs with an optional profiling stage and 2 to 16 per-node checks,
``jq`` over 2 to 16 agent reports of 4 or 8 GPUs (some without an HCA), the bash pre-flight against
a store that answers after 0 to 60 ms, ``m4`` for clusters with and without InfiniBand HCAs
(``ifdef``), ``awk`` rankfiles of 16 to 256 ranks (one to several buffer flushes) and the ``mkdir``
lock taken in a rendezvous directory holding 0 to 5 earlier attempts' records.

Loopback: the rendezvous store's port is a block of this set's own (``harness._port_block``), as
the harness's 18 ``PORTS`` are all taken by earlier sets.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from pathlib import Path

from .files import chown_nobody, mounted_tmpfs, run_quiet, token, write_file
from .harness import (
    ROOT,
    NoAnomalyCase,
    RunTurns,
    Scenario,
    _port_block,
    sh_argv,
    skip_if_loopback_down,
    unmount_under,
)

STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
OPEN = frozenset({"openat", "open"})
WRITE = frozenset({"write", "writev"})
CONNECT = frozenset({"connect"})
MKDIR = frozenset({"mkdir", "mkdirat"})

STORE_PORT, STORE_NOISE_PORT = _port_block(2)  # the rendezvous store's (fault case, noise case)

_TURNS = RunTurns()  # which good run of each case is being set up


def _nodes(n: int, pool: int = 400) -> list[str]:
    """n node names of the cluster, sorted (the scheduler's expanded nodelist)."""
    return [f"gpu-h100-{k:03d}" for k in sorted(random.sample(range(1, pool), n))]


# --- join --check-order: allocation x inventory; a node appended to the sorted inventory --------------------------
JOIN_SH = ('exec /usr/bin/join --check-order -t, "$1/alloc/nodes.csv" "$1/inventory/nodes.csv" '
           '> "$1/run/joined.csv"')


def _inventory_rows(nodes: list[str]) -> list[str]:
    return [f"{n},{random.choice([8, 8, 4])},rack-{random.randrange(1, 40):02d},mlx5_0:mlx5_{random.choice([1, 3])}"
            for n in nodes]


def join_build(base: Path, bad: bool, count: int | None = None) -> None:
    count = count or _TURNS.pick(base, bad, [4, 16, 8], 12)
    inventory = _nodes(count + random.randrange(2, 9), pool=300)
    alloc = sorted(random.sample(inventory, count))
    rows = _inventory_rows(inventory)
    if bad:  # the registrar appended a new node (gpu-h100-3NN sorts after every other; this one does not)
        last = int(inventory[-1].rsplit("-", 1)[1])
        late = f"gpu-h100-{random.choice([k for k in range(1, last) if f'gpu-h100-{k:03d}' not in inventory]):03d}"
        rows.append(f"{late},8,rack-41,mlx5_0:mlx5_1")
        alloc = sorted([*alloc[:-1], late])
    write_file(base / "inventory" / "nodes.csv", "".join(r + "\n" for r in rows))
    write_file(base / "alloc" / "nodes.csv", "".join(f"{n},job-{token(3)}\n" for n in alloc))
    (base / "run").mkdir()


# --- numfmt --from=iec of the memory column; one agent reports 1536Gi -----------------------------------------------
NUMFMT_SH = ('exec /usr/bin/numfmt -d, --field=3 --from=iec --header < "$1/inventory/mem.csv" '
             '> "$1/run/mem-bytes.csv"')


def numfmt_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    rows = [f"{n},{random.choice([4, 8])},{random.choice(['512G', '1T', '1536G', '2T'])}" for n in _nodes(count)]
    if bad:  # the third node's agent was upgraded: it reports IEC units with the "i"
        host, gpus, _mem = rows[2].split(",")
        rows[2] = f"{host},{gpus},1536Gi"
    write_file(base / "inventory" / "mem.csv", "host,gpus,mem\n" + "".join(r + "\n" for r in rows))
    (base / "run").mkdir()


# --- tsort of the launch stages; an edit makes a loop ----------------------------------------------------------------
TSORT_SH = 'exec /usr/bin/tsort "$1/stages/launch.dep" > "$1/run/launch.order"'
STAGES = [("fetch-image", "stage-data"), ("stage-data", "check-ib"), ("check-ib", "check-nccl"),
          ("check-nccl", "launch"), ("launch", "collect-logs"), ("fetch-image", "warm-cache")]


def _stage_lines(nodes: list[str], profile: bool) -> list[str]:
    lines = [f"{a} {b}" for a, b in STAGES]
    for n in nodes:  # every node's GPU check runs after the image, before the NCCL check
        lines += [f"fetch-image check-gpu-{n}", f"check-gpu-{n} check-nccl"]
    if profile:  # the optional profiler stage of a profiling run
        lines += ["check-nccl start-profiler", "start-profiler launch"]
    return lines


def tsort_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    lines = _stage_lines(_nodes(count), profile=False)
    if bad:  # "collect the old logs before staging": collect-logs -> stage-data closes a loop
        lines.insert(3, "collect-logs stage-data")
    write_file(base / "stages" / "launch.dep", "".join(line + "\n" for line in lines))
    (base / "run").mkdir()


# --- yq -r of the job's launch.yaml; a tab in the nccl block ----------------------------------------------------------
YQ_SH = 'exec /usr/bin/yq -r "$2" "$1/conf/launch.yaml" > "$1/run/nccl.env"'
YQ_FILTER = '.nccl | to_entries[] | "export \\(.key)=\\(.value)"'


def _launch_yaml(nodes: list[str], hcas: bool = True, tab: bool = False) -> str:
    nccl = ["NCCL_SOCKET_IFNAME: bond0", "NCCL_DEBUG: WARN"]
    if hcas:
        nccl.insert(0, "NCCL_IB_HCA: mlx5_0,mlx5_1,mlx5_2,mlx5_3")
    text = f"job:\n  name: pretrain-{token(3)}\n  nodes: {len(nodes)}\n  gpus_per_node: 8\nnccl:\n"
    for k, line in enumerate(nccl):
        text += ("\t" if tab and k == 1 else "  ") + line + "\n"
    text += "hosts:\n" + "".join(f"  - {n}\n" for n in nodes)
    return text


def yq_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    write_file(base / "conf" / "launch.yaml", _launch_yaml(_nodes(count), tab=bad))
    (base / "run").mkdir()


# --- the bash pre-flight: /dev/tcp to the rendezvous store -----------------------------------------------------------
PREFLIGHT = """\
set -u
. "$1/conf/rdv.env"
exec 3<>"/dev/tcp/$RDV_HOST/$RDV_PORT" || exit 3
printf 'HELLO %s %s\\n' "$JOB_ID" "$NNODES" >&3
IFS= read -r reply <&3
exec 3>&-
[ "${reply%% *}" = OK ] || exit 4
printf '%s\\n' "$reply" > "$1/run/rdv.ok"
"""


def _preflight_argv(b: Path) -> list[str]:
    return ["/bin/bash", "-c", PREFLIGHT, "bash", str(b)]


class Store:
    """A rendezvous store on loopback (not recorded): answers each HELLO line with 'OK ...' after
    `delay` seconds. Runs in a thread of the test process until stopped."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.thread: threading.Thread | None = None
        self.stop_flag = threading.Event()

    def start(self, port: int, delay: float = 0.0) -> None:
        self.stop()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            skip_if_loopback_down()
            raise
        sock.listen(16)
        sock.settimeout(0.05)
        self.sock, self.stop_flag = sock, threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(sock, self.stop_flag, delay), daemon=True)
        self.thread.start()

    @staticmethod
    def _serve(sock: socket.socket, stop: threading.Event, delay: float) -> None:
        epoch = random.randrange(1, 900)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(5)
                try:
                    line = conn.makefile("rb").readline()
                    if line.startswith(b"HELLO"):
                        time.sleep(delay)
                        conn.sendall(f"OK epoch={epoch} members={random.randrange(1, 64)}\n".encode())
                except OSError:
                    pass

    def stop(self, base: Path | None = None) -> None:  # noqa: ARG002 (a teardown's signature)
        if self.thread is not None:
            self.stop_flag.set()
            self.thread.join(timeout=10)
            self.thread = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None


STORE = Store()


def _rdv_env(base: Path, port: int, nnodes: int) -> None:
    write_file(base / "conf" / "rdv.env", f"RDV_HOST=127.0.0.1\nRDV_PORT={port}\nJOB_ID={random.randrange(10**5, 10**6)}"
                                          f"\nNNODES={nnodes}\n")
    (base / "run").mkdir()


def preflight_build(base: Path, bad: bool) -> None:
    nnodes = _TURNS.pick(base, bad, [4, 16, 8], 12)
    _rdv_env(base, STORE_PORT, nnodes)
    if not bad:  # on the bad day the store's service did not come back after the node reboot
        STORE.start(STORE_PORT)


# --- jq -s as nobody over the node agents' GPU reports; one report 0600 root -----------------------------------------
JQ_SH = 'exec /usr/bin/jq -c -s "$2" "$1"/agents/*.json > "$1/out/ranks.json"'
JQ_FILTER = "map({host, gpus: (.gpus | length), hcas: (.hcas | join(\",\"))})"


def _agent_report(node: str, gpus: int, hcas: bool = True) -> str:
    return json.dumps({"host": node, "driver": "535.104.05",
                       "gpus": [{"index": g, "uuid": f"GPU-{token(4)}-{token(2)}", "mem_mib": 81559}
                                for g in range(gpus)],
                       "hcas": [f"mlx5_{k}" for k in range(4)] if hcas else []}, indent=1) + "\n"


def jq_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    for k, node in enumerate(_nodes(count)):
        path = write_file(base / "agents" / f"{node}.json", _agent_report(node, random.choice([4, 8])))
        if bad and k == 2:  # the re-imaged node's agent runs with umask 077
            path.chmod(0o600)
    (base / "out").mkdir()
    chown_nobody(base / "out")


# --- column -t of the rank table through a link left at the previous job's table ------------------------------------
COLUMN_SH = 'exec /usr/bin/column -t -s, "$1/run/ranktable.csv" > "$1/run/ranktable.txt"'


def column_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    job = random.randrange(10**5, 10**6)
    rows = ["rank,host,local_rank,gpu,hca"]
    for n, node in enumerate(_nodes(count)):
        rows += [f"{n * 8 + g},{node},{g},{g},mlx5_{g // 2}" for g in range(8)]
    write_file(base / "ranktables" / f"job-{job}.csv", "".join(r + "\n" for r in rows))
    (base / "run").mkdir()
    # the launcher points the link at the job's table; on the bad day the link step ran with the
    # previous job's id, whose table the cleaner had removed
    target = job - random.randrange(1, 50) if bad else job
    os.symlink(f"../ranktables/job-{target}.csv", base / "run" / "ranktable.csv")


# --- awk writing the MPI rankfile under the site's limits; ulimit -f 4 on the bad host ------------------------------
RANKFILE_AWK = """\
BEGIN { FS = "," }
{ for (g = 0; g < $2; g++) printf "rank %d=%s slot=%d:%d\\n", r++, $1, int(g / 4), g % 4 }
"""
AWK_SH = ('. "$1/conf/site-limits.sh" && exec /usr/bin/awk -f "$1/bin/rankfile.awk" "$1/run/hosts.csv" '
          '> "$1/run/rankfile"')


def _rankfile_inputs(base: Path, nodes: list[str], gpus: int, limits: str) -> None:
    write_file(base / "bin" / "rankfile.awk", RANKFILE_AWK)
    write_file(base / "conf" / "site-limits.sh", limits)
    write_file(base / "run" / "hosts.csv", "".join(f"{n},{gpus}\n" for n in nodes))


def awk_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    # the site profile: open files raised everywhere; the bad host's copy also caps file sizes (2 KiB)
    limits = "ulimit -n 4096\n" + ("ulimit -f 4\n" if bad else "")
    _rankfile_inputs(base, _nodes(count), 8, limits)


# --- sort -u | tee: the hostfile published to the shared job directory, read-only on the bad head node -------------
TEE_SH = ('/usr/bin/sort -u "$1/run/hosts.txt" | /usr/bin/tee "$1/shared/job/hostfile" '
          '> "$1/run/hostfile.local"')


def tee_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    nodes = _nodes(count)
    lines = [f"{n} slots=8" for n in nodes for _ in range(random.choice([1, 2]))]  # one line per task: repeats
    random.shuffle(lines)
    write_file(base / "run" / "hosts.txt", "".join(line + "\n" for line in lines))
    shared = base / "shared" / "job"
    shared.mkdir(parents=True)
    if bad:  # the shared file system went read-only on this head node (its server had an error)
        run_quiet("mount", "--bind", str(shared), str(shared))
        run_quiet("mount", "-o", "remount,bind,ro", str(shared))


# --- mkdir of the launcher's lock directory; a crashed attempt left it -----------------------------------------------
LOCK_SH = """\
/usr/bin/mkdir "$1/rdv/launch.lock" || exit 75
printf '%s\\n' "$$" > "$1/rdv/launch.lock/owner"
n=$(/usr/bin/ls "$1/rdv/attempts" | /usr/bin/wc -l)
printf 'attempt %s nodes %s\\n' "$n" "$(/usr/bin/wc -l < "$1/run/hostfile")" > "$1/rdv/attempts/$n"
/usr/bin/rm -r "$1/rdv/launch.lock"
"""


def _lock_inputs(base: Path, count: int, attempts: int) -> None:
    write_file(base / "run" / "hostfile", "".join(f"{n} slots=8\n" for n in _nodes(count)))
    (base / "rdv" / "attempts").mkdir(parents=True)
    for k in range(attempts):
        write_file(base / "rdv" / "attempts" / str(k), f"attempt {k} nodes {random.randrange(2, 17)}\n")


def lock_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    _lock_inputs(base, count, 1)
    if bad:  # the earlier attempt's launcher was OOM-killed holding the lock
        write_file(base / "rdv" / "launch.lock" / "owner", f"{random.randrange(2000, 90000)}\n")


# --- m4 rendering the per-rank environment into a tmpfs the previous job filled -------------------------------------
M4_SH = 'exec /usr/bin/m4 -I "$1/conf" "$1/conf/ranks.env.m4" > "$1/shm/ranks.env"'
RANKS_M4 = """\
include(`cluster.m4')dnl
define(`forloop', `pushdef(`$1', `$2')_forloop($@)popdef(`$1')')dnl
define(`_forloop', `$4`'ifelse($1, `$3', `', `define(`$1', incr($1))$0($@)')')dnl
MASTER_ADDR=MASTER_NODE
WORLD_SIZE=eval(NNODES * GPUS)
ifdef(`IB_HCAS', `NCCL_IB_HCA=IB_HCAS', `NCCL_IB_DISABLE=1')
forloop(`r', `0', eval(NNODES * GPUS - 1), `[rank r]
HOST=indir(`NODE_'eval(r / GPUS))
LOCAL_RANK=eval(r % GPUS)
CUDA_VISIBLE_DEVICES=eval(r % GPUS)
')dnl
"""


def _m4_inputs(base: Path, nodes: list[str], gpus: int, hcas: bool) -> None:
    defs = [f"define(`NNODES', `{len(nodes)}')dnl", f"define(`GPUS', `{gpus}')dnl",
            f"define(`MASTER_NODE', `{nodes[0]}')dnl"]
    defs += [f"define(`NODE_{k}', `{n}')dnl" for k, n in enumerate(nodes)]
    if hcas:
        defs.append("define(`IB_HCAS', `mlx5_0,mlx5_1,mlx5_2,mlx5_3')dnl")
    write_file(base / "conf" / "cluster.m4", "".join(d + "\n" for d in defs))
    write_file(base / "conf" / "ranks.env.m4", RANKS_M4)


def m4_build(base: Path, bad: bool) -> None:
    count = _TURNS.pick(base, bad, [4, 16, 8], 12)
    _m4_inputs(base, _nodes(count), 8, hcas=True)
    mounted_tmpfs(base / "shm", "1m")
    if bad:  # the previous job's rank 0 left its 1020 KiB staging buffer: 4 KiB free
        write_file(base / "shm" / "nccl-staging.buf", b"\0" * (1024 - 4) * 1024)


REAL_FIFTIETH: list[Scenario] = [
    Scenario("t50_join_inventory_appended_node", "join --check-order (allocations of 4, 16, 8 nodes)", sh_argv(JOIN_SH),
        join_build, WRITE, None, lambda b: STDERR,
        description="join --check-order -t, of the allocation's nodelist with the sorted node inventory; the "
                    "bad day's inventory has a node the registrar appended at the end out of order (and in the "
                    "allocation): no call fails, join writes 'is not sorted' to stderr, exit 1"),
    Scenario("t50_numfmt_mem_iec_i_suffix", "numfmt --from=iec (4, 16, 8 nodes)", sh_argv(NUMFMT_SH), numfmt_build, WRITE,
        None, lambda b: STDERR,
        description="numfmt --from=iec of the inventory's memory column (512G, 1T, 1536G, 2T); one node's "
                    "upgraded agent reports 1536Gi: no call fails, 'invalid suffix in input' on stderr, exit 2"),
    Scenario("t50_tsort_launch_stage_loop", "tsort (stages with 4, 16, 8 per-node checks)", sh_argv(TSORT_SH),
        tsort_build, WRITE, None, lambda b: STDERR,
        description="tsort of the launch stages (fetch-image -> stage-data -> check-ib -> check-nccl -> launch "
                    "-> collect-logs, a GPU check per node); the bad edit adds collect-logs -> stage-data: no "
                    "call fails, tsort writes 'input contains a loop' to stderr, exit 1"),
    Scenario("t50_yq_launch_yaml_tab", "yq -r (launch.yaml of 4, 16, 8 hosts)", sh_argv(YQ_SH, YQ_FILTER), yq_build,
        WRITE, None, lambda b: STDERR,
        description="yq -r of the NCCL block of the job's launch.yaml into an env file; a hand edit indented "
                    "one key with a tab: no call fails, yq writes 'Error running jq: ScannerError' to stderr "
                    "(its jq child gets an empty stdin), exit 1"),
    Scenario("t50_bash_devtcp_store_down", "bash pre-flight: exec 3<>/dev/tcp (store)", _preflight_argv,
        preflight_build, CONNECT, "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{STORE_PORT}", teardown=STORE.stop,
        description="the launcher's bash pre-flight sources rdv.env and opens /dev/tcp/127.0.0.1/PORT to the "
                    "rendezvous store, says HELLO and reads OK; on the bad day the store is not running: "
                    "connect ECONNREFUSED, exit 3"),
    Scenario("t50_jq_agent_report_0600", "jq -s as nobody (4, 16, 8 agent reports)", sh_argv(JQ_SH, JQ_FILTER), jq_build,
        OPEN, "EACCES", lambda b: f"{b}/agents/gpu-h100-*.json", unprivileged=True,
        description="jq -s as nobody over agents/<node>.json (4 or 8 GPUs each) into a rank table; the bad "
                    "allocation's third report was written 0600 root by a re-imaged node's agent: openat EACCES, "
                    "exit 2"),
    Scenario("t50_column_ranktable_stale_link", "column -t (rank tables of 32, 128, 64 ranks)", sh_argv(COLUMN_SH),
        column_build, OPEN, "ENOENT", lambda b: f"{b}/run/ranktable.csv",
        description="column -t -s, of run/ranktable.csv, a link to ../ranktables/job-<id>.csv; on the bad day "
                    "the link names the previous job's table, which the cleaner removed: openat ENOENT, exit 1"),
    Scenario("t50_awk_rankfile_ulimit_f", "awk rankfile under the site's limits (4, 16, 8 nodes)", sh_argv(AWK_SH),
        awk_build, WRITE, "EFBIG", lambda b: f"{b}/run/rankfile",
        description="awk writes the MPI rankfile (rank N=host slot=S:G, 8 per node) after the launcher sources "
                    "the site's limits; the bad host's copy has ulimit -f 4 (2 KiB): the first write of 4096 "
                    "is cut to 2048, the next fails EFBIG and SIGXFSZ kills awk"),
    Scenario("t50_tee_hostfile_shared_ro", "tee after sort -u (hostfiles of 4, 16, 8 nodes)", sh_argv(TEE_SH), tee_build,
        OPEN, "EROFS", lambda b: f"{b}/shared/job/hostfile", teardown=unmount_under,
        description="sort -u of the per-task host list piped to tee, which publishes the hostfile to the "
                    "shared job directory; on the bad head node that directory is mounted read-only: tee's "
                    "openat O_CREAT fails EROFS (tee still copies to its stdout, exit 1)"),
    Scenario("t50_mkdir_stale_launch_lock", "mkdir lock directory (4, 16, 8 nodes)", sh_argv(LOCK_SH), lock_build, MKDIR,
        "EEXIST", lambda b: f"{b}/rdv/launch.lock",
        description="the launcher takes its lock with mkdir rdv/launch.lock, records the attempt, removes the "
                    "lock; a crashed earlier attempt left the lock directory: mkdir EEXIST, exit 75"),
    Scenario("t50_m4_rank_env_shm_full", "m4 per-rank env (32, 128, 64 ranks) into a tmpfs", sh_argv(M4_SH), m4_build,
        WRITE, "ENOSPC", lambda b: f"{b}/shm/ranks.env", teardown=unmount_under,
        description="m4 renders ranks.env (8 lines a rank) into shm/, a 1 MiB tmpfs; the previous job's "
                    "staging buffer left 4 KiB: write ENOSPC, m4 'write error', exit 1"),
]


# --- good-vs-good noise ------------------------------------------------------------------------------------------------
def join_noise(base: Path, run: int) -> None:
    join_build(base, False, count=[4, 16, 8, 12][run % 4])


def tsort_noise(base: Path, run: int) -> None:
    count = [2, 16, 8, 5][run % 4]
    write_file(base / "stages" / "launch.dep",
               "".join(line + "\n" for line in _stage_lines(_nodes(count), profile=run in (1, 3))))
    (base / "run").mkdir()


def jq_noise(base: Path, run: int) -> None:
    count = [2, 16, 8, 5][run % 4]
    for k, node in enumerate(_nodes(count)):  # a CPU-only node (no HCA) in every run but the first
        write_file(base / "agents" / f"{node}.json", _agent_report(node, random.choice([4, 8]), hcas=(k != 1)))
    (base / "out").mkdir()


def preflight_noise(base: Path, run: int) -> None:
    _rdv_env(base, STORE_NOISE_PORT, [4, 16, 8, 12][run % 4])
    STORE.start(STORE_NOISE_PORT, delay=[0.0, 0.02, 0.06, 0.005][run % 4])


def m4_noise(base: Path, run: int) -> None:
    count = [2, 16, 8, 5][run % 4]
    _m4_inputs(base, _nodes(count), [8, 4][run % 2], hcas=run != 2)  # run 2: an Ethernet-only cluster
    (base / "shm").mkdir()


def awk_noise(base: Path, run: int) -> None:
    count = [2, 32, 8, 12][run % 4]
    _rankfile_inputs(base, _nodes(count), [8, 4][run % 2], "ulimit -n 4096\n")


def lock_noise(base: Path, run: int) -> None:
    _lock_inputs(base, [4, 16, 8, 12][run % 4], [0, 3, 1, 5][run % 4])


QUIET_FIFTIETH: list[NoAnomalyCase] = [
    NoAnomalyCase("t50_join_allocation_sizes", sh_argv(JOIN_SH), join_noise, runs=4,
                  description="join --check-order of allocations of 4, 16, 8, 12 nodes with inventories of 2 to "
                              "8 more nodes (other names each run)"),
    NoAnomalyCase("t50_tsort_optional_profiler_stage", sh_argv(TSORT_SH), tsort_noise, runs=4,
                  description="tsort of the launch stages with 2, 16, 8, 5 per-node GPU checks; runs 1 and 3 "
                              "have the optional start-profiler stage"),
    NoAnomalyCase("t50_jq_agent_reports_gpu_counts", sh_argv(JQ_SH, JQ_FILTER), jq_noise, runs=4,
                  description="jq -s over 2, 16, 8, 5 agent reports of 4 or 8 GPUs, one node of each run after "
                              "the first without an HCA (an empty list)"),
    NoAnomalyCase("t50_bash_preflight_store_latency", _preflight_argv, preflight_noise, runs=4,
                  description="the bash /dev/tcp pre-flight against a store that answers after 0, 20, 60, 5 ms "
                              "(bash's read of the reply blocks for as long)"),
    NoAnomalyCase("t50_m4_cluster_with_or_without_ib", sh_argv(M4_SH), m4_noise, runs=4,
                  description="m4 per-rank env for 2, 16, 8, 5 nodes of 8 or 4 GPUs; run 2's cluster defines no "
                              "IB_HCAS (the ifdef's other branch: NCCL_IB_DISABLE=1); into a plain directory"),
    NoAnomalyCase("t50_awk_rankfile_sizes", sh_argv(AWK_SH), awk_noise, runs=4,
                  description="awk rankfiles of 16, 128, 64, 48 ranks (2 to 32 nodes of 8 or 4 GPUs): one "
                              "buffer flush to several"),
    NoAnomalyCase("t50_mkdir_lock_earlier_attempts", sh_argv(LOCK_SH), lock_noise, runs=4,
                  description="the mkdir lock taken and released in a rendezvous directory holding 0, 3, 1, 5 "
                              "earlier attempts' records"),
]


def quiet_teardown() -> None:
    """Stop the store, unmount anything a case of this set left mounted (a failed teardown) and
    forget the runs' counts."""
    STORE.stop()
    for name in [*_TURNS.good_runs, *(s.name for s in REAL_FIFTIETH), *(c.name for c in QUIET_FIFTIETH)]:
        base = ROOT / name
        if base.exists():
            unmount_under(base)
    _TURNS.good_runs.clear()
