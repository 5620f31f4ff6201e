"""fleetgen23: a twenty-third fleet, written blind (reference/rdma_control_path.yaml, tracer/schema.py,
README.md, docs/architecture.md and the other generators' docstrings only), aimed at what the
twenty-two before it leave out: an Ethernet inference fleet that is mostly Intel E810 (irdma,
RoCEv2) with a Broadcom (bnxt_re) island, whose workers are short-lived processes spawned by an
autoscaler; irdma's rule that a user QP's buffer must be registered (reg_mr of type QP) before
create_qp, which a new container image's provider breaks for one model's bulk QP only; one host
running out of QPs for good; and two routine refusals, one vendor-neutral in the core (an
alternate path asked of a RoCE port), one irdma-only in the driver (a memory pool probing the
largest MR it may register).

The fleet: racks of 8 (`fg23-r<RR>-h<H>`), every host on 6.8.0-60-generic (upstream, no peer
memory). Rack mod 5 == 4 is bnxt_re (Broadcom Thor), every other rack irdma in RoCE mode, so 40
hosts are 32 irdma and 8 bnxt_re. The serving stack's container image is `serve:2026.12` (its
provider from rdma-core 53) on the irdma hosts of racks mod 5 in {0, 1} and on two bnxt_re hosts
(h0, h1), `serve:2026.11` (rdma-core 50) everywhere else; the image, its rdma-core and the model a
worker serves (`llama-405b` for a quarter of the workers, `llama-70b` for the rest) are in each
trace's metadata only.

Work: two worker slots a host. A KV-cache transfer worker (comm `kvxfer`, one process, job id its
pod) lives 3-7 minutes: it allocates a PD; on irdma its memory pool first tries to register the
whole 512 GiB pool, then registers two chunks; on irdma it registers the CQ's buffer (reg_mr type
CQ) and creates the CQ (bnxt_re: the driver pins it itself); then for each of two RC QPs (a
control QP, then the bulk KV QP) it registers the QP's buffer on irdma (type QP) and creates the
QP, and moves it RESET->INIT->RTR->RTS; afterwards it registers a KV block every 45-90 s until
it exits (teardown is cleanup, outside the probe set). The transfer library asks for automatic
path migration on its first QP: RTR->RTS with IB_QP_ALT_PATH, refused on RoCE, and it repeats the
transition without it (later QPs of the process do not ask again). A worker that fails fatally
exits at once; the autoscaler starts the slot's next worker 15-45 s later (5-40 s after a normal
exit).

The daemon (`tracer run rdma -i 60s`, fexit on the handlers, the core and the driver entry points
below): 60 s snapshots at a per-host phase, a row for every probe in every snapshot, every call
counted; a tree is emitted when any of its probes fails, the first 3 of a signature (frames and
errnos) per snapshot as records, the third carrying the rest in repeat_count; good trees only
when the root entered a capture window (the first 30 s of every 5 minutes at a per-host phase),
timed there; outside, a failure's frames all carry the 4 ms tick its root returned in, latency
null.

Routine families (truth expected_error, root_cause = the family's name; the process goes on):
  alt_path_refused_roce   RTR->RTS with IB_QP_ALT_PATH: _ib_modify_qp EINVAL ("ALT_PATH on
                          non-IB port (RoCE)"), once per worker on every host of both vendors; the
                          library repeats the transition without the alternate path, which passes.
  irdma_pool_probe_einval the pool's first registration asks for more than max_mr_size:
                          irdma_reg_user_mr EINVAL ("len > max_mr_size"), once per worker on every
                          irdma host; the pool then registers in chunks. bnxt_re workers never ask.
Root causes (truth root_cause, expected_error False; what an SRE must be shown):
  bnxt_qp_limit_exhausted   from 40 % of the window, one bnxt_re host (r04-h6) has no QP left (a
                          sidecar leaked them): every create_qp fails EINVAL at bnxt_re_create_qp
                          ("max QPs exceeded"; bnxt_re_test_qp_limits itself passes), every worker
                          dies there, the autoscaler respawns into the same failure until the end:
                          a crash loop a host alert must name (EINVAL or a persistent bad state).
  irdma_qp_buf_unregistered the subtle one. serve:2026.12's provider skips the type-QP
                          registration of a bulk QP whose send queue spans more than one huge
                          page: on the new-image irdma hosts, 60 % of the llama-405b workers' bulk
                          create_qp fail ENODATA at irdma_create_qp ("user WQE buffer not found in
                          qp_reg_mem_list (not pre-registered)") and the worker dies. ENODATA is
                          an errno callers usually take as "go on", the fault touches ~15 % of the
                          workers of 16 hosts at a steady rate, the image's bnxt_re hosts and every
                          llama-70b worker pass: one cluster, over the new-image irdma hosts, that
                          should say they share image=serve:2026.12 (16 of the 18 hosts showing it).
                          No host stands out from its peers: no host alert is required (one naming
                          ENODATA on those hosts is tolerated).
  irdma_qp_ctx_dma_enomem   one irdma host (r02-h5, old image) with fragmented memory: 15 % of its
                          create_qp fail ENOMEM at irdma_create_qp (dma_alloc_coherent of the QP
                          context) all window, the worker dies: an intermittent host-local fault
                          at the same origin probe as the previous cause with another errno; a host
                          alert must name ENOMEM.
Reasons for the truth: a routine family is one the process goes on from at no cost (the retry or
the chunked registration passes at once, the worker serves for minutes after); a root cause kills
the worker, whatever its errno's usual meaning. Processes killed by a fatal error leave no trace
of their own after it; nothing else dies.
"""

from __future__ import annotations

import datetime as dt
import errno as errno_module
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tracer.schema import metadata_list, write_counter_buckets, write_partition

KERNEL = "6.8.0-60-generic"
START = dt.datetime(2026, 12, 3, 8, 0, tzinfo=dt.UTC)
IMAGES = ("serve:2026.11", "serve:2026.12")
RDMA_CORE = {"serve:2026.11": "50.0", "serve:2026.12": "53.0"}
MODELS = ("llama-70b", "llama-405b")
SNAPSHOT_S = 60
WINDOW_EVERY_S = 300
WINDOW_S = 30
FIRST_K = 3
LIMIT_ONSET = 0.4
BUF_P = 0.6  # share of the new image's llama-405b bulk QPs whose buffer was not registered
ENOMEM_P = 0.15

ROUTINE = {
    "alt_path_refused_roce": ("_ib_modify_qp", "EINVAL", "core"),
    "irdma_pool_probe_einval": ("irdma_reg_user_mr", "EINVAL", "driver"),
}
ROOT_CAUSES = {
    "bnxt_qp_limit_exhausted": ("bnxt_re_create_qp", "EINVAL", "driver"),
    "irdma_qp_buf_unregistered": ("irdma_create_qp", "ENODATA", "driver"),
    "irdma_qp_ctx_dma_enomem": ("irdma_create_qp", "ENOMEM", "driver"),
}

DRIVER = {
    "irdma": {"alloc_pd": "irdma_alloc_pd", "reg_mr": "irdma_reg_user_mr", "create_cq": "irdma_create_cq",
              "create_qp": "irdma_create_qp", "modify_qp": "irdma_modify_qp_roce"},
    "bnxt_re": {"alloc_pd": "bnxt_re_alloc_pd", "reg_mr": "bnxt_re_reg_user_mr", "create_cq": "bnxt_re_create_cq",
                "create_qp": "bnxt_re_create_qp", "modify_qp": "bnxt_re_modify_qp"},
}


# ------------------------------------------------------------------------------------------------
# call trees: (depth, probe, layer, errno or None), in entry order
# ------------------------------------------------------------------------------------------------
def _alloc_pd(v: str) -> list[tuple]:
    return [(0, "ib_uverbs_alloc_pd", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
            (2, "ib_rdmacg_try_charge", "core", None), (1, DRIVER[v]["alloc_pd"], "driver", None),
            (1, "rdma_restrack_add", "core", None)]


def _reg_mr(v: str) -> list[tuple]:
    return [(0, "ib_uverbs_reg_mr", "uverbs", None), (1, "rdma_alloc_begin_uobject", "core", None),
            (2, "ib_rdmacg_try_charge", "core", None), (1, "rdma_lookup_get_uobject", "core", None),
            (1, DRIVER[v]["reg_mr"], "driver", None), (2, "ib_umem_get", "core", None),
            (1, "rdma_restrack_add", "core", None), (1, "rdma_lookup_put_uobject", "core", None)]


def _reg_mr_pool_probe() -> list[tuple]:
    e = "EINVAL"
    return [(0, "ib_uverbs_reg_mr", "uverbs", e), (1, "rdma_alloc_begin_uobject", "core", None),
            (2, "ib_rdmacg_try_charge", "core", None), (1, "rdma_lookup_get_uobject", "core", None),
            (1, "irdma_reg_user_mr", "driver", e), (1, "rdma_lookup_put_uobject", "core", None),
            (1, "rdma_alloc_abort_uobject", "core", None)]


def _create_cq(v: str) -> list[tuple]:
    tree = [(0, "ib_uverbs_create_cq", "uverbs", None), (1, "create_cq", "uverbs", None),
            (2, "rdma_alloc_begin_uobject", "core", None), (3, "ib_rdmacg_try_charge", "core", None),
            (2, DRIVER[v]["create_cq"], "driver", None)]
    if v == "bnxt_re":
        tree.append((3, "ib_umem_get", "core", None))
    return [*tree, (2, "rdma_restrack_add", "core", None)]


def _create_qp(v: str, fail: str | None = None) -> list[tuple]:
    e = fail
    head = [(0, "ib_uverbs_create_qp", "uverbs", e), (1, "create_qp", "uverbs", e),
            (2, "rdma_alloc_begin_uobject", "core", None), (3, "ib_rdmacg_try_charge", "core", None),
            (2, "rdma_lookup_get_uobject", "core", None), (2, "rdma_lookup_get_uobject", "core", None),
            (2, "ib_create_qp_user", "core", e), (3, "create_qp", "core", e),
            (4, DRIVER[v]["create_qp"], "driver", e)]
    if v == "bnxt_re":
        head.append((5, "bnxt_re_test_qp_limits", "driver", None))
        if fail is None:
            head.append((5, "ib_umem_get", "core", None))
    if fail is not None:
        return [*head, (2, "rdma_lookup_put_uobject", "core", None), (2, "rdma_lookup_put_uobject", "core", None),
                (2, "rdma_alloc_abort_uobject", "core", None)]
    return [*head, (3, "ib_create_qp_security", "core", None), (3, "rdma_restrack_add", "core", None),
            (2, "ib_qp_usecnt_inc", "core", None), (2, "rdma_lookup_put_uobject", "core", None),
            (2, "rdma_lookup_put_uobject", "core", None)]


def _modify_qp(v: str, transition: str, alt_path: bool = False) -> list[tuple]:
    if alt_path:
        e = "EINVAL"
        return [(0, "ib_uverbs_modify_qp", "uverbs", e), (1, "modify_qp", "uverbs", e),
                (2, "rdma_lookup_get_uobject", "core", None), (2, "ib_modify_qp_with_udata", "core", e),
                (3, "_ib_modify_qp", "core", e), (2, "rdma_lookup_put_uobject", "core", None)]
    tree = [(0, "ib_uverbs_modify_qp", "uverbs", None), (1, "modify_qp", "uverbs", None),
            (2, "rdma_lookup_get_uobject", "core", None), (2, "ib_modify_qp_with_udata", "core", None),
            (3, "_ib_modify_qp", "core", None)]
    drv = (4, DRIVER[v]["modify_qp"], "driver", None)
    if transition == "RESET->INIT":
        tree += [(4, "rdma_counter_bind_qp_auto", "core", None), drv]
    elif transition == "INIT->RTR":
        tree += [(4, "rdma_fill_sgid_attr", "core", None), (5, "rdma_get_gid_attr", "core", None),
                 (4, "ib_resolve_eth_dmac", "core", None), (4, "rdma_lag_get_ah_roce_slave", "core", None),
                 drv, (4, "rdma_lag_put_ah_roce_slave", "core", None)]
    else:
        tree.append(drv)
    return [*tree, (2, "rdma_lookup_put_uobject", "core", None)]


TREES: dict[str, list[tuple]] = {}
for _v in DRIVER:
    TREES[f"alloc_pd/{_v}"] = _alloc_pd(_v)
    TREES[f"reg_mr/{_v}"] = _reg_mr(_v)
    TREES[f"create_cq/{_v}"] = _create_cq(_v)
    TREES[f"create_qp/{_v}"] = _create_qp(_v)
    for _t in ("RESET->INIT", "INIT->RTR", "RTR->RTS"):
        TREES[f"modify_qp {_t}/{_v}"] = _modify_qp(_v, _t)
    TREES[f"modify_qp alt_path/{_v}"] = _modify_qp(_v, "RTR->RTS", alt_path=True)
TREES["reg_mr pool probe/irdma"] = _reg_mr_pool_probe()
TREES["create_qp EINVAL/bnxt_re"] = _create_qp("bnxt_re", "EINVAL")
TREES["create_qp ENODATA/irdma"] = _create_qp("irdma", "ENODATA")
TREES["create_qp ENOMEM/irdma"] = _create_qp("irdma", "ENOMEM")

PROBES: dict[str, dict[str, str]] = {}  # vendor -> probe -> layer (first seen)
for _name, _tree in TREES.items():
    _vendor = _name.rsplit("/", 1)[1]
    for _d, _fn, _layer, _e in _tree:
        PROBES.setdefault(_vendor, {}).setdefault(_fn, _layer)


# ------------------------------------------------------------------------------------------------
# hosts
# ------------------------------------------------------------------------------------------------
def _hosts(n: int) -> list[dict]:
    out = []
    for i in range(n):
        rack, h = divmod(i, 8)
        vendor = "bnxt_re" if rack % 5 == 4 else "irdma"
        new = (rack % 5 in (0, 1)) if vendor == "irdma" else h in (0, 1)
        out.append({"name": f"fg23-r{rack:02d}-h{h}", "index": i, "rack": rack, "h": h, "vendor": vendor,
                    "image": IMAGES[1] if new else IMAGES[0]})
    limit = [x for x in out if x["vendor"] == "bnxt_re" and x["h"] == 6][:1]
    enomem = [x for x in out if x["vendor"] == "irdma" and x["rack"] % 5 == 2 and x["h"] == 5][:1]
    for x in out:
        x["qp_limit"] = x in limit
        x["enomem"] = x in enomem
    return out


class _Call:
    __slots__ = ("t", "op", "arg", "frames", "family", "fatal", "worker")

    def __init__(self, t, op, arg, frames, family, fatal, worker):
        self.t, self.op, self.arg, self.frames = t, op, arg, frames
        self.family, self.fatal, self.worker = family, fatal, worker


def _worker_calls(host: dict, t0: float, end_s: float, rng: random.Random, worker: dict,
                  onset_s: float) -> tuple[list[_Call], float, bool]:
    """The calls of one worker starting at t0 (seconds from START): (calls, last call time, died)."""
    v = host["vendor"]
    calls: list[_Call] = []
    t = t0
    life = rng.uniform(180, 420)

    def add(op, frames, arg=None, family=None, fatal=False):
        nonlocal t
        t += rng.uniform(0.002, 0.02)
        calls.append(_Call(t, op, arg, frames, family, fatal, worker))

    add("alloc_pd", _alloc_pd(v))
    if v == "irdma":
        add("reg_mr", _reg_mr_pool_probe(), family="irdma_pool_probe_einval")
    add("reg_mr", _reg_mr(v))
    add("reg_mr", _reg_mr(v))
    if v == "irdma":
        add("reg_mr", _reg_mr(v))  # the CQ's buffer, type CQ
    add("create_cq", _create_cq(v))
    for q in (0, 1):
        if v == "irdma":
            add("reg_mr", _reg_mr(v))  # the QP's buffer, type QP
        fail = None
        if host["qp_limit"] and t >= onset_s:
            fail = ("bnxt_qp_limit_exhausted", "EINVAL")
        elif host["enomem"] and rng.random() < ENOMEM_P:
            fail = ("irdma_qp_ctx_dma_enomem", "ENOMEM")
        elif (q == 1 and v == "irdma" and host["image"] == IMAGES[1] and worker["model"] == MODELS[1]
              and worker["buf_bug"]):
            fail = ("irdma_qp_buf_unregistered", "ENODATA")
        if fail:
            add("create_qp", _create_qp(v, fail[1]), family=fail[0], fatal=True)
            return calls, t, True
        add("create_qp", _create_qp(v))
        add("modify_qp", _modify_qp(v, "RESET->INIT"), "RESET->INIT")
        add("modify_qp", _modify_qp(v, "INIT->RTR"), "INIT->RTR")
        if q == 0:
            add("modify_qp", _modify_qp(v, "RTR->RTS", alt_path=True), "RTR->RTS", family="alt_path_refused_roce")
        add("modify_qp", _modify_qp(v, "RTR->RTS"), "RTR->RTS")
    stop = min(t0 + life, end_s)
    while True:
        nxt = t + rng.uniform(45, 90)
        if nxt >= stop:
            break
        t = nxt
        add("reg_mr", _reg_mr(v))
    return calls, max(t, stop), False


def _frame_times(frames: list[tuple], t0_ns: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """Entry times and latencies (ns) of a timed tree's frames: a parent's span holds its children's."""
    n = len(frames)
    parent = [-1] * n
    stack: list[int] = []
    for i, f in enumerate(frames):
        while stack and frames[stack[-1]][0] >= f[0]:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    children: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        if parent[i] >= 0:
            children[parent[i]].append(i)
    own = []
    for f in frames:
        if f[2] == "driver" and f[3] is None and f[1].endswith(("create_qp", "create_cq", "modify_qp_roce",
                                                                   "modify_qp", "reg_user_mr")):
            own.append(rng.randint(80_000, 400_000))  # a firmware / control-queue command
        else:
            own.append(rng.randint(500, 6_000))
    dur = [0] * n
    for i in reversed(range(n)):
        dur[i] = own[i] + sum(dur[c] + 200 for c in children[i])
    entry = [0] * n
    entry[0] = t0_ns
    for i in range(n):
        cursor = entry[i] + own[i] // 2
        for c in children[i]:
            entry[c] = cursor
            cursor += dur[c] + 200
    return entry, dur


# ------------------------------------------------------------------------------------------------
# the fleet
# ------------------------------------------------------------------------------------------------
def generate(root: str | Path, hosts: int = 40, hours: float = 3.0, seed: int = 23) -> dict:
    """Write the fleet's events, counters (+ counter_buckets) and truth under `root`; return a
    summary: roles of hosts, the onset of the QP limit, which hosts must and may alert."""
    root = Path(root)
    fleet = _hosts(hosts)
    end_s = hours * 3600.0
    onset_s = LIMIT_ONSET * end_s
    date = START.strftime("%Y-%m-%d")
    start_ns = int(START.timestamp()) * 1_000_000_000
    totals: dict[str, int] = defaultdict(int)
    family_hosts: dict[str, set] = defaultdict(set)
    pid_base = 4000
    for host in fleet:
        rng = random.Random(seed * 100_003 + host["index"])
        name = host["name"]
        snap_phase = rng.uniform(0, SNAPSHOT_S)
        win_phase = rng.uniform(0, WINDOW_EVERY_S)
        boot_ns = start_ns - rng.randint(2, 20) * 86_400 * 1_000_000_000 - rng.randint(0, 86_400) * 1_000_000_000
        boot_id = f"{rng.getrandbits(32):08x}"
        calls: list[_Call] = []
        n_worker = 0
        for slot in (0, 1):
            t = rng.uniform(0, 60)
            while t < end_s - 5:
                n_worker += 1
                pid_base += rng.randint(3, 40)
                model = MODELS[1] if rng.random() < 0.25 else MODELS[0]
                worker = {"pid": pid_base, "job": f"kvx-{name[5:]}-{slot}-{n_worker:04d}", "model": model,
                          "buf_bug": rng.random() < BUF_P, "ppid": 1800 + slot}
                wc, last, died = _worker_calls(host, t, end_s, rng, worker, onset_s)
                calls += [c for c in wc if c.t < end_s]
                t = last + (rng.uniform(15, 45) if died else rng.uniform(5, 40))
        calls.sort(key=lambda c: c.t)

        ev: dict[str, list] = defaultdict(list)
        truth: dict[str, list] = defaultdict(list)
        counts: dict[tuple[int, str], list] = {}
        seen_sig: dict[tuple, list] = {}  # (snapshot, signature) -> [records emitted, events row of the 3rd]
        n_trace = 0
        n_good = 0
        for c in calls:
            k = max(0, int(-(-(c.t - snap_phase) // SNAPSHOT_S)))
            failed = c.frames[0][3] is not None
            for _d, fn, _layer, e in c.frames:
                cell = counts.setdefault((k, fn), [0, 0, defaultdict(int)])
                cell[0] += 1
                if e is not None:
                    cell[1] += 1
                    cell[2][e] += 1
            timed = ((c.t - win_phase) % WINDOW_EVERY_S) < WINDOW_S
            if not failed and not timed:
                continue
            if failed:
                sig = (k, tuple((f[0], f[1], f[3]) for f in c.frames))
                state = seen_sig.setdefault(sig, [0, None])
                if state[0] >= FIRST_K:
                    first, n_frames = state[1]
                    count = (ev["repeat_count"][first] or 1) + 1
                    ev["repeat_count"][first:first + n_frames] = [count] * n_frames
                    totals[f"aggregated:{c.family}"] += 1
                    continue
                state[0] += 1
            n_trace += 1
            trace_id = f"{name}:{boot_id}:{c.worker['pid']}:{n_trace}"
            t_ns = start_ns + int(c.t * 1e9)
            mono0 = t_ns - boot_ns
            if timed:
                entries, lats = _frame_times(c.frames, mono0, rng)
                start_wall = t_ns
                end_wall = t_ns + lats[0]
            else:
                _, lats = _frame_times(c.frames, mono0, rng)
                tick = (mono0 + lats[0]) // 4_000_000 * 4_000_000
                entries = [tick] * len(c.frames)
                lats = [None] * len(c.frames)
                start_wall = end_wall = boot_ns + tick
            root_err = c.frames[0][3]
            exit_status = -getattr(errno_module, root_err) if root_err else 0
            meta = metadata_list({"image": host["image"], "rdma_core": RDMA_CORE[host["image"]],
                                  "model": c.worker["model"]})
            first_row = len(ev["seq"])
            for seq, (d, fn, layer, e) in enumerate(c.frames):
                ev["trace_id"].append(trace_id)
                ev["seq"].append(seq)
                ev["ts_ns"].append(entries[seq])
                ev["pid"].append(c.worker["pid"])
                ev["tid"].append(c.worker["pid"])
                ev["ppid"].append(c.worker["ppid"])
                ev["comm"].append("kvxfer")
                ev["probe"].append(fn)
                ev["layer"].append(layer)
                ev["depth"].append(d)
                ev["ret"].append(-getattr(errno_module, e) if e else 0)
                ev["errno"].append(e)
                ev["latency_ns"].append(lats[seq])
                ev["arg"].append(c.arg if seq == 0 else None)
                ev["kind"].append("failure" if failed else "good")
                ev["command"].append(c.op)
                ev["exit_status"].append(exit_status)
                ev["start_time"].append(start_wall)
                ev["end_time"].append(end_wall)
                ev["kernel_release"].append(KERNEL)
                ev["lost_events"].append(0)
                ev["job_id"].append(c.worker["job"])
                ev["metadata"].append(meta)
                ev["repeat_count"].append(None)
            if failed and seen_sig[sig][0] == FIRST_K:
                seen_sig[sig][1] = (first_row, len(c.frames))
            if not failed:
                n_good += 1
            origin = next((f for f in reversed(c.frames) if f[3] is not None), None) if failed else None
            fam = c.family if failed else None
            truth["trace_id"].append(trace_id)
            truth["host"].append(name)
            truth["kind"].append("failure" if failed else "good")
            truth["root_cause"].append(fam)
            truth["bifurcation_probe"].append(origin[1] if origin else None)
            truth["bifurcation_errno"].append(origin[3] if origin else None)
            truth["origin_layer"].append(origin[2] if origin else None)
            truth["expected_error"].append(bool(fam in ROUTINE))
            truth["held_out"].append(bool(not failed and n_good % 10 == 0))
            if failed:
                totals[fam] += 1
                family_hosts[fam].add(name)
            else:
                totals["good"] += 1

        _write_events(root, date, name, ev)
        _write_truth(root, date, name, truth)
        _write_counters(root, date, host, counts, snap_phase, end_s, start_ns)

    roles = {
        "irdma": [h["name"] for h in fleet if h["vendor"] == "irdma"],
        "bnxt_re": [h["name"] for h in fleet if h["vendor"] == "bnxt_re"],
        "new_image": [h["name"] for h in fleet if h["image"] == IMAGES[1]],
        "new_image_irdma": [h["name"] for h in fleet if h["image"] == IMAGES[1] and h["vendor"] == "irdma"],
        "qp_limit": [h["name"] for h in fleet if h["qp_limit"]],
        "enomem": [h["name"] for h in fleet if h["enomem"]],
    }
    required = {h: ["EINVAL"] for h in roles["qp_limit"]} | {h: ["ENOMEM"] for h in roles["enomem"]}
    acceptable = {h: ["ENODATA"] for h in family_hosts["irdma_qp_buf_unregistered"]}
    for h, errnos in required.items():
        acceptable[h] = sorted(set(acceptable.get(h, [])) | set(errnos))
    return {
        "roles": roles,
        "qp_limit_onset": (START + dt.timedelta(seconds=onset_s)).isoformat(),
        "window": [START.isoformat(), (START + dt.timedelta(seconds=end_s)).isoformat()],
        "traces": dict(totals),
        "family_hosts": {k: sorted(v) for k, v in family_hosts.items()},
        "required_alert_hosts": required,
        "alert_hosts": acceptable,
    }


def _ts(values: list[int]) -> pa.Array:
    return pa.array(values, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))


def _write_events(root: Path, date: str, host: str, ev: dict) -> None:
    if not ev["seq"]:
        return
    cols = {k: v for k, v in ev.items() if k not in ("start_time", "end_time")}
    table = pa.table(cols)
    table = table.append_column("start_time", _ts(ev["start_time"])).append_column("end_time", _ts(ev["end_time"]))
    write_partition(table, root, "events", date, host, "part-0.parquet", durable=False)


def _write_truth(root: Path, date: str, host: str, truth: dict) -> None:
    if truth["trace_id"]:
        write_partition(pa.table(truth), root, "truth", date, host, "part-0.parquet", durable=False)


def _write_counters(root: Path, date: str, host: dict, counts: dict, phase: float, end_s: float,
                    start_ns: int) -> None:
    probes = PROBES[host["vendor"]]
    last = int(-(-(end_s - phase) // SNAPSHOT_S))
    rows: dict[str, list] = defaultdict(list)
    for k in range(last + 1):
        when = start_ns + int((phase + k * SNAPSHOT_S) * 1e9)
        for fn, layer in probes.items():
            calls, fails, errnos = counts.get((k, fn), (0, 0, {}))
            rows["snapshot_time"].append(when)
            rows["host"].append(host["name"])
            rows["interval_s"].append(float(SNAPSHOT_S))
            rows["kernel_release"].append(KERNEL)
            rows["vendor"].append(host["vendor"])
            rows["probe_set"].append("rdma")
            rows["probe"].append(fn)
            rows["layer"].append(layer)
            rows["live"].append(True)
            rows["invocations"].append(calls)
            rows["failures"].append(fails)
            rows["errno_counts"].append([{"errno": e, "count": n} for e, n in sorted(errnos.items())] or None)
            rows["lost_records"].append(0)
    cols = {k: v for k, v in rows.items() if k != "snapshot_time"}
    cols["errno_counts"] = pa.array(rows["errno_counts"],
                                    pa.list_(pa.struct([("errno", pa.string()), ("count", pa.int64())])))
    table = pa.table(cols).append_column("snapshot_time", _ts(rows["snapshot_time"]))
    path = write_partition(table, root, "counters", date, host["name"], "part-0.parquet", durable=False)
    write_counter_buckets(path, durable=False)
