"""Fifth docs-versus-behaviour battery: docs/architecture.md's fleet side.

The dataset layout's counter_buckets summaries (the bucket rule, a snapshot delivered twice,
when a summary is used and that using it or not gives the same tables), "What is routine"
(a learned family, "stopped" on a host: `stats.fatal_hosts`/`fatal_since`, kept open there),
the host alerts (persistent_bad_state over a run of 4 buckets, an ongoing run of two, a
recovered burst, a once-a-bucket probe, a cause many hosts share, recurring_errno), the
root-cause clusters (one host-local fault over three operations; "hosts share ...") and the
audit's output tables' columns.

Written blind: the oracle is docs/architecture.md, the --help texts, tracer/schema.py and
../shared/reference/rdma_control_path.yaml (call chains and errnos); never the code under
baseline/ or tracer/ (other than tracer/schema.py, whose writers build the data). The fleet
below is this module's own: 12 mlx5 hosts, 6 hours of 5-minute counters snapshots (exact
counts of every call) and call trees (every failure, one good trace per operation and
interval), written in the documented layout `<table>/date=D/host=H/part-*.parquet`; the real
CLIs (`baseline ingest`, `learn`, `audit`) run on it. Each test quotes the sentence it checks.
A promise the tool breaks stays as a strict xfail naming what was found.

Hosts (each a scenario of the doc):
  gpu00, gpu06-gpu09 healthy apart from the routine family and the shared cause;
  every host: create_qp's EAGAIN at ib_rdmacg_try_charge (rdma cgroup limit), retried at once
      by the same process, which goes on: routine;
  gpu01: alloc_pd fails EIO in the firmware command (mlx5_cmd_exec) on every call 01:00-03:00
      (8 buckets), a crash loop, then recovers: persistent_bad_state;
  gpu02: the same for 01:00-01:30 (2 buckets), then recovers: a passing burst;
  gpu03: the same from 05:30 to the window's end (its last 2 buckets): an outage in progress;
  gpu04: a capability probe failing create_cq with EINVAL once a bucket, all window long;
  gpu05-gpu09: reg_mr's memlock ENOMEM at ib_umem_get on 4 of 6 calls 02:00-04:00 (a cause
      5 hosts share; they alone carry gpu_driver=560.35.03);
  gpu10: from 04:00 every create_qp fails the routine EAGAIN and its processes die (its rdma
      cgroup limit at zero): the routine family "stopped" on that host;
  gpu12: EIO on every alloc_pd 04:00-04:30, then no snapshot at all (its tracer crashed);
  gpu13: EIO on every alloc_pd 02:15-02:45, then drained: snapshots counting no calls;
  gpu14: 12 alloc_pd an interval; EIO 01:00-02:00 (exactly four buckets by interval end);
  gpu11: a dead firmware command interface (ENXIO) fails alloc_pd, create_cq and create_qp
      03:00-03:45 (3 buckets), then recovers.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml

from tracer import schema
from tracer.schema import partition_path, write_table

ROOT = Path(__file__).resolve().parents[1]
BASELINE = str(ROOT / ".venv" / "bin" / "baseline")
DOC = "docs/architecture.md"

START = dt.datetime(2026, 11, 20, 0, 0, tzinfo=dt.UTC)
DATE = "2026-11-20"
INTERVALS = 72  # 5-minute snapshots, 6 hours
SNAP = dt.timedelta(minutes=5)
KERNEL = "6.8.0-48-generic"
HOSTS = [f"gpu{i:02d}" for i in range(15)]
SHARED = {"gpu05", "gpu06", "gpu07", "gpu08", "gpu09"}
ERRNO_NUM = {"EIO": 5, "EAGAIN": 11, "ENOMEM": 12, "EINVAL": 22, "ENXIO": 6}


def at(hh: int, mm: int = 0) -> dt.datetime:
    return START + dt.timedelta(hours=hh, minutes=mm)


def k_of(hh: int, mm: int = 0) -> int:
    """The 5-minute interval starting at hh:mm."""
    return (hh * 60 + mm) // 5


# ------------------------------------------------------------------ call chains (reference)
# (probe, depth, layer) per operation, from rdma_control_path.yaml's trees: uverbs_cmd.c ->
# uverbs, core/ -> core, hw/mlx5 and mlx5/core -> driver
CHAINS = {
    "alloc_pd": [("ib_uverbs_alloc_pd", 0, "uverbs"), ("rdma_alloc_begin_uobject", 1, "core"),
                 ("ib_rdmacg_try_charge", 2, "core"), ("mlx5_ib_alloc_pd", 1, "driver"),
                 ("mlx5_cmd_exec", 2, "driver")],
    "create_cq": [("ib_uverbs_create_cq", 0, "uverbs"), ("create_cq", 1, "uverbs"),
                  ("rdma_alloc_begin_uobject", 2, "core"), ("ib_rdmacg_try_charge", 3, "core"),
                  ("mlx5_ib_create_cq", 2, "driver"), ("mlx5_cmd_exec", 3, "driver")],
    "create_qp": [("ib_uverbs_create_qp", 0, "uverbs"), ("create_qp", 1, "uverbs"),
                  ("rdma_alloc_begin_uobject", 2, "core"), ("ib_rdmacg_try_charge", 3, "core"),
                  ("ib_create_qp_user", 2, "core"), ("mlx5_ib_create_qp", 3, "driver"),
                  ("mlx5_cmd_exec", 4, "driver")],
    "reg_mr": [("ib_uverbs_reg_mr", 0, "uverbs"), ("rdma_alloc_begin_uobject", 1, "core"),
               ("ib_rdmacg_try_charge", 2, "core"), ("rdma_lookup_get_uobject", 1, "core"),
               ("mlx5_ib_reg_user_mr", 1, "driver"), ("ib_umem_get", 2, "core"),
               ("pin_user_pages_fast", 3, "core")],
}
# failure modes: operation -> the frames kept (prefix of names) and those failing
FAILS = {
    # firmware command failing: the driver op and the handler pass mlx5_cmd_exec's errno up
    "fw": lambda op: {
        "alloc_pd": (None, {"ib_uverbs_alloc_pd", "mlx5_ib_alloc_pd", "mlx5_cmd_exec"}),
        "create_cq": (None, {"ib_uverbs_create_cq", "create_cq", "mlx5_ib_create_cq", "mlx5_cmd_exec"}),
        "create_qp": (None, {"ib_uverbs_create_qp", "create_qp", "ib_create_qp_user", "mlx5_ib_create_qp",
                             "mlx5_cmd_exec"}),
    }[op],
    # rdmacg hca_object limit: -EAGAIN from ib_rdmacg_try_charge up through the uobject alloc
    "rdmacg": lambda op: ("ib_rdmacg_try_charge", {"ib_uverbs_create_qp", "create_qp",
                                                   "rdma_alloc_begin_uobject", "ib_rdmacg_try_charge"}),
    # pinned_vm + npages > RLIMIT_MEMLOCK: -ENOMEM at ib_umem_get before pinning
    "memlock": lambda op: ("ib_umem_get", {"ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "ib_umem_get"}),
    # comp_vector >= num_comp_vectors: -EINVAL at create_cq, before the uobject
    "compvec": lambda op: ("create_cq", {"ib_uverbs_create_cq", "create_cq"}),
}


def frames_of(op: str, mode: str | None) -> list[tuple[str, int, str, bool]]:
    chain = CHAINS[op]
    if mode is None:
        return [(p, d, lay, False) for p, d, lay in chain]
    last, failing = FAILS[mode](op)
    out = []
    for p, d, lay in chain:
        out.append((p, d, lay, p in failing))
        if p == last:
            break
    return out


class Fleet:
    """Rows of the events, counters and truth tables, built call by call."""

    def __init__(self, start: dt.datetime) -> None:
        self.start = start
        self.events: list[dict] = []
        self.counters: dict = {}
        self.n = 0

    def call(self, host: str, k: int, t_s: float, op: str, pid: int, job: str, mode: str | None = None,
             errno: str | None = None, record: bool = True) -> None:
        frames = frames_of(op, mode)
        snap_at = self.start + (k + 1) * SNAP
        for probe, _d, layer, failed in frames:
            c = self.counters.setdefault((host, snap_at, probe), [layer, 0, 0, {}])
            c[1] += 1
            if failed:
                c[2] += 1
                c[3][errno] = c[3].get(errno, 0) + 1
        if not record:
            return
        self.n += 1
        trace_id = f"{host}:b1:{pid}:{self.n:06d}"
        start = self.start + k * SNAP + dt.timedelta(seconds=t_s)
        root_failed = frames[0][3]
        root_ret = -ERRNO_NUM[errno] if root_failed else 0
        driver = "560.35.03" if host in SHARED else "550.90.07"
        meta = [{"key": "gpu_driver", "value": driver}]
        mono = 10**12 + int((start - self.start).total_seconds() * 1e9)
        for seq, (probe, depth, layer, failed) in enumerate(frames):
            self.events.append({
                "trace_id": trace_id, "seq": seq, "ts_ns": mono + seq * 2_000, "pid": pid, "tid": pid,
                "ppid": 1, "comm": "trainer", "probe": probe, "layer": layer, "depth": depth,
                "ret": -ERRNO_NUM[errno] if failed else 0, "errno": errno if failed else None,
                "latency_ns": 30_000 - seq * 2_000, "path": None, "arg": None, "path2": None, "output": None,
                "kind": "failure" if any(f[3] for f in frames) else "good", "command": op,
                "exit_status": root_ret, "start_time": start, "end_time": start + dt.timedelta(microseconds=30),
                "host": host, "kernel_release": KERNEL, "lost_events": 0, "job_id": job, "metadata": meta,
                "repeat_count": None,
            })

    def counters_frame(self) -> pl.DataFrame:
        rows = [{"host": h, "snapshot_time": t, "interval_s": 300.0, "kernel_release": KERNEL, "vendor": "mlx5",
                 "probe_set": "rdma", "probe": p, "layer": c[0], "live": True, "invocations": c[1],
                 "failures": c[2], "errno_counts": [{"errno": e, "count": n} for e, n in sorted(c[3].items())],
                 "lost_records": 0}
                for (h, t, p), c in self.counters.items()]
        return pl.DataFrame(rows, schema=schema.polars_schema("counters"))


def fw_state(host: str, k: int) -> str | None:
    """The errno of a host's dead firmware in interval k, else None."""
    if host == "gpu01" and k_of(1) <= k < k_of(3):
        return "EIO"
    if host == "gpu02" and k_of(1) <= k < k_of(1, 30):
        return "EIO"
    if host == "gpu03" and k >= k_of(5, 30):
        return "EIO"
    if host == "gpu12" and k_of(4) <= k < k_of(4, 30):
        return "EIO"
    if host == "gpu13" and k_of(2, 15) <= k < k_of(2, 45):
        return "EIO"
    if host == "gpu14" and k_of(1) <= k < k_of(2):
        return "EIO"
    if host == "gpu11" and k_of(3) <= k < k_of(3, 45):
        return "ENXIO"
    return None


def build_fleet(hosts: list[str] = HOSTS, faults: bool = True, routine_on: set[str] | None = None,
                start: dt.datetime = START) -> Fleet:
    """The fleet of the module docstring (`faults=False`: only the routine family, on the hosts
    of `routine_on`, default all)."""
    routine_on = set(hosts) if routine_on is None else routine_on
    f = Fleet(start)
    all_probes = sorted({p for chain in CHAINS.values() for p, _d, _l in chain})
    layers = {p: lay for chain in CHAINS.values() for p, _d, lay in chain}
    for hi, host in enumerate(hosts):
        for k in range(INTERVALS):
            hour = k // 12
            job = f"{host}-job{hour}"
            pid = 10_000 + hi * 1_000 + hour * 10
            restart_pid = 50_000 + hi * 1_000 + k * 10  # a crash loop's new process each restart
            dead = fw_state(host, k) if faults else None
            if faults and host == "gpu12" and k >= k_of(4, 30):
                break  # its tracer crashed while failing: no snapshot after 04:30
            if faults and host == "gpu13" and k >= k_of(2, 45):  # drained: reports, calls nothing
                for probe in all_probes:
                    f.counters[(host, start + (k + 1) * SNAP, probe)] = [layers[probe], 0, 0, {}]
                continue
            if dead == "EIO":  # each restart allocates a PD, fails, dies
                for r in range(4):
                    f.call(host, k, 10 + r * 60, "alloc_pd", restart_pid + r, job, "fw", "EIO")
                continue
            if dead == "ENXIO":  # every command fails: the first verb of each restart
                for r, op in enumerate(("alloc_pd", "create_cq", "create_qp")):
                    f.call(host, k, 10 + r * 60, op, restart_pid + r, job, "fw", "ENXIO")
                continue
            if faults and host == "gpu10" and k >= k_of(4):  # rdma cgroup limit at zero: each rank dies at its QP
                for r in range(3):
                    f.call(host, k, 10 + r * 80, "alloc_pd", restart_pid + r, job)
                    f.call(host, k, 11 + r * 80, "create_cq", restart_pid + r, job)
                    f.call(host, k, 12 + r * 80, "create_qp", restart_pid + r, job, "rdmacg", "EAGAIN")
                continue
            t = 5.0
            for i in range(12 if faults and host == "gpu14" else 4):
                f.call(host, k, t, "alloc_pd", pid, job, record=i == 0)
                t += 2
            if not (faults and host == "gpu04"):
                for i in range(4):
                    f.call(host, k, t, "create_cq", pid, job, record=i == 0)
                    t += 2
            elif k % 3 == 0:  # a capability probe once a bucket; the process goes on
                f.call(host, k, t, "create_cq", pid, job, "compvec", "EINVAL")
                t += 2
            for i in range(6):
                if i == 1 and (k + hi) % 2 == 0 and host in routine_on:  # the routine EAGAIN, retried at once
                    f.call(host, k, t, "create_qp", pid, job, "rdmacg", "EAGAIN")
                    t += 0.5
                    f.call(host, k, t, "create_qp", pid, job)
                else:
                    f.call(host, k, t, "create_qp", pid, job, record=i == 0)
                t += 2
            memlock = faults and host in SHARED and k_of(2) <= k < k_of(4)
            for i in range(6):
                if memlock and i < 4:  # a rank past RLIMIT_MEMLOCK: dies at its registration
                    f.call(host, k, t, "reg_mr", restart_pid + i, job, "memlock", "ENOMEM")
                else:
                    f.call(host, k, t, "reg_mr", pid, job, record=i == 5)
                t += 2
    return f


def write_fleet(root: Path, f: Fleet, date: str = DATE) -> None:
    ev = pl.DataFrame(f.events, schema=schema.polars_schema("events"))
    co = f.counters_frame()
    for table, df in (("events", ev), ("counters", co)):
        for (host,), part in df.group_by("host"):
            write_table(part, partition_path(root, table, date, host, "part-00000.parquet"), table,
                        omit_columns=("host",), durable=False)


# ------------------------------------------------------------------ running the CLIs
def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    p = subprocess.run([BASELINE, *args], capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (args, p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    return p


def audit(ds: Path, out: Path, *extra: str) -> dict:
    p = run("audit", str(ds), "--refit", "-o", str(out), "--json", *extra)
    tables = {t: pl.read_parquet(out / f"{t}.parquet") for t in ("findings", "clusters", "host_alerts")}
    return {"json": json.loads(p.stdout), "stdout": p.stdout, "stderr": p.stderr, "out": out, **tables}


def same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """Two tables equal as sets of rows (each sorted on every column)."""
    return a.columns == b.columns and a.sort(a.columns, nulls_last=True).equals(b.sort(b.columns, nulls_last=True))


def alerts_of(result: dict, host: str) -> list[dict]:
    return result["host_alerts"].filter(pl.col("host") == host).to_dicts()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("fleet5")
    f = build_fleet()
    ds = base / "plain"  # another writer's dataset: the documented layout, no summaries
    write_fleet(ds, f)
    return {"base": base, "ds": ds, "fleet": f}


@pytest.fixture(scope="module")
def plain_audit(fleet) -> dict:
    return audit(fleet["ds"], fleet["base"] / "audit-plain")


@pytest.fixture(scope="module")
def learned(fleet) -> dict:
    out = fleet["base"] / "expected.yaml"
    p = run("learn", str(fleet["ds"]), "-o", str(fleet["base"] / "model.parquet"), "--expected-out", str(out), "--json")
    doc = yaml.safe_load(out.read_text())
    return {"json": json.loads(p.stdout), "entries": doc["entries"]}


def family(entries: list[dict], probe: str, errno: str, context: str) -> dict:
    found = [e for e in entries if (e.get("probe"), e.get("errno"), e.get("context")) == (probe, errno, context)]
    assert len(found) == 1, entries
    return found[0]


def counters_files(ds: Path) -> list[Path]:
    return sorted((ds / "counters").glob("date=*/host=*/*.parquet"))


@pytest.fixture(scope="module")
def summarised(fleet) -> dict:
    """Copies of the dataset with summaries: `good` (each counters file's, as its writer puts
    it), `mixed` (gpu01's stale: written for a healthy version of its counters file, which was
    then rewritten with the real rows; gpu03's broken: its pages overwritten, footer intact)."""
    out = {}
    for name in ("good", "mixed"):
        ds = fleet["base"] / name
        shutil.copytree(fleet["ds"], ds)
        for f in counters_files(ds):
            host = f.parent.name.removeprefix("host=")
            if name == "mixed" and host == "gpu01":
                real = pl.read_parquet(f).with_columns(pl.lit(host).alias("host"))
                healthy = real.with_columns(
                    pl.lit(0, pl.Int64).alias("failures"),
                    pl.lit([], schema.polars_schema("counters")["errno_counts"]).alias("errno_counts"))
                write_table(healthy, f, "counters", durable=False, omit_columns=("host",))
                assert schema.write_counter_buckets(f, durable=False) is not None
                write_table(real, f, "counters", durable=False, omit_columns=("host",))
                continue
            summary = schema.write_counter_buckets(f, durable=False)
            assert summary is not None and summary.is_file(), f
            assert schema.counter_buckets_for(f) is not None, f  # a summary that matches its file
            if name == "mixed" and host == "gpu03":
                raw = bytearray(summary.read_bytes())
                footer_at = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
                raw[4:footer_at] = b"\xa5" * (footer_at - 4)  # every page, none of the footer
                summary.write_bytes(bytes(raw))
                assert schema.counter_buckets_for(f) is not None  # its footer still matches ...
                with pytest.raises(Exception):  # noqa: B017, PT011 (... but its pages do not decode)
                    pl.read_parquet(summary)
        if name == "mixed":
            assert schema.counter_buckets_for(counters_files(ds)[1]) is None  # gpu01's: stale
        out[name] = ds
    return out




# ------------------------------------------------------------------ the dataset layout: summaries
def snapshot_dir(spool: Path, host: str, when: dt.datetime, seq: int) -> Path:
    return spool / host / f"snap-{when:%Y%m%dT%H%M%S}.000Z-{seq}"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> dict:
    """A spool of one host, 5-minute snapshots 02:05..02:20 (one of them delivered twice, under
    another sequence number), ingested by `baseline ingest`."""
    base = tmp_path_factory.mktemp("ingest5")
    spool, ds = base / "spool", base / "dataset"
    counts = {at(2, 5): (10, 1), at(2, 10): (20, 2), at(2, 15): (40, 4), at(2, 20): (80, 8)}
    f = Fleet(at(2))
    f.call("gpu00", 0, 30, "alloc_pd", 100, "j1")
    events = pl.DataFrame(f.events, schema=schema.polars_schema("events"))
    deliveries = [(when, seq) for seq, when in enumerate(counts)] + [(at(2, 10), 9)]  # 02:10 again
    for when, seq in deliveries:
        calls, fails = counts[when]
        snap = snapshot_dir(spool, "gpu00", when, seq)
        snap.mkdir(parents=True)
        rows = pl.DataFrame([{
            "host": "gpu00", "snapshot_time": when, "interval_s": 300.0, "kernel_release": KERNEL, "vendor": "mlx5",
            "probe_set": "rdma", "probe": "mlx5_cmd_exec", "layer": "driver", "live": True, "invocations": calls,
            "failures": fails, "errno_counts": [{"errno": "EIO", "count": fails}], "lost_records": 0}],
            schema=schema.polars_schema("counters"))
        write_table(rows, snap / "counters.parquet", "counters", durable=False)
        write_table(events.with_columns(pl.lit(f"gpu00:b1:100:{seq}").alias("trace_id")), snap / "events.parquet",
                    "events", durable=False)
    p = run("ingest", str(spool), str(ds), "--quarantine", str(base / "quarantine"), "--json")
    summaries = sorted((ds / "counter_buckets").glob("date=*/host=gpu00/*.parquet"))
    return {"ds": ds, "ingest": p, "summaries": summaries, "counts": counts}


def test_summary_bucket_is_the_one_the_interval_ends_in(ingested):
    """docs/architecture.md (dataset layout): "A counters row counts the calls of the interval
    that ends at its `snapshot_time`, so its bucket is the one that interval ends in, an end on a
    boundary belonging to the bucket before ... a 5-minute snapshot at 02:15:00 counts
    02:10-02:15, bucket 02:00"; "Beside each counters file its writer (ingest, ...) puts its
    15-minute summary ... per probe and bucket the calls, errno counts". Checked on what
    `baseline ingest` wrote: 02:05, 02:10, 02:15 in bucket 02:00, 02:20 in bucket 02:15."""
    assert ingested["summaries"], "ingest wrote no counter_buckets summary"
    rows = pl.concat([pl.read_parquet(s) for s in ingested["summaries"]])
    got = {r["bucket"]: (r["n"], {e["errno"]: e["count"] for e in r["errno_counts"] or []})
           for r in rows.filter(pl.col("probe") == "mlx5_cmd_exec").to_dicts()}
    c = ingested["counts"]
    first = sum(c[at(2, m)][0] for m in (5, 10, 15)), sum(c[at(2, m)][1] for m in (5, 10, 15))
    assert got == {at(2): (first[0], {"EIO": first[1]}), at(2, 15): (c[at(2, 20)][0], {"EIO": c[at(2, 20)][1]})}


def test_summary_counts_a_snapshot_delivered_twice_once(ingested):
    """docs/architecture.md: "A snapshot delivered twice (the same `tracer.schema.SNAPSHOT_KEY`:
    host, probe, snapshot_time; a spool re-sent after a crash, a duplicated file) counts once,
    its first copy, in the summaries and in the raw counters alike". The 02:10 snapshot was in
    the spool twice (sequence 1 and 9): bucket 02:00 holds its 20 calls once."""
    rows = pl.concat([pl.read_parquet(s) for s in ingested["summaries"]])
    n = rows.filter((pl.col("probe") == "mlx5_cmd_exec") & (pl.col("bucket") == at(2)))["n"].sum()
    assert n == 10 + 20 + 40


def test_same_tables_with_without_stale_or_broken_summaries(fleet, summarised, plain_audit):
    """docs/architecture.md: "The audit ... read[s] a host's summaries ... only when every
    counters file of the host has one that matches it as it is now, else that host's counters
    files: data written by other code (the documented events/counters layout only), a stale or
    broken summary (one whose pages do not decode is read around from its host's counters
    files) ... give the same tables, just slower". Three copies of one fleet: no summaries (our
    own writer), every summary, and gpu01's stale (written for a healthy version of the file:
    taken, it would hide gpu01's bad state) and gpu03's pages broken."""
    good = audit(summarised["good"], fleet["base"] / "audit-good")
    mixed = audit(summarised["mixed"], fleet["base"] / "audit-mixed")
    for t in ("findings", "clusters", "host_alerts"):
        assert same(plain_audit[t], good[t]), t
        assert same(plain_audit[t], mixed[t]), (t, mixed[t])
    assert alerts_of(mixed, "gpu01"), "the stale summary's healthy gpu01 was taken"


def test_since_inside_a_bucket_same_tables(fleet, summarised):
    """docs/architecture.md: "... or a `--since` inside a bucket give the same tables, just
    slower"; "`--since T` takes the snapshots after T". `--since 01:05` (inside bucket 01:00)
    on the dataset with summaries and on the one without give the same three tables."""
    since = "2026-11-20T01:05:00Z"
    a = audit(fleet["ds"], fleet["base"] / "since-plain", "--since", since)
    b = audit(summarised["good"], fleet["base"] / "since-good", "--since", since)
    for t in ("findings", "clusters", "host_alerts"):
        assert same(a[t], b[t]), t
    assert a["findings"]["time"].min() >= at(1, 5)


def test_bucket_rule_in_the_audit_a_run_of_exactly_four(plain_audit):
    """docs/architecture.md: "its bucket is the one that interval ends in, an end on a boundary
    belonging to the bucket before (`tracer.schema.BUCKET_OF`, `snapshot_bucket`) ... (by the
    snapshot time alone, a fault that began at 02:00 shared its first bucket with the successes
    of 01:55-02:00 ...)"; a persistent bad state needs a run of 4 buckets. gpu14 makes 12
    alloc_pd calls an interval, but during its firmware fault 01:00-02:00 only 4 a crash loop's
    restarts, each failing EIO: by interval end that is exactly buckets 01:00-01:45, all bad; by
    snapshot time alone 01:00 and 02:00 would each be mostly successes and the run only 3 (a
    passing burst)."""
    got = [a for a in alerts_of(plain_audit, "gpu14") if a["alert"] == "persistent_bad_state"]
    assert len(got) == 1, alerts_of(plain_audit, "gpu14")
    assert got[0]["errno"] == "EIO" and got[0]["since"] == at(1), got


# ------------------------------------------------------------------ the audit's output tables
def test_output_tables_have_the_documented_columns(plain_audit):
    """docs/architecture.md (data model): "**findings / clusters / host_alerts** (audit;
    findings carry the trace's `comm` ...)"; tracer/schema.py FINDINGS, CLUSTERS, HOST_ALERTS:
    the columns and types, trend one of rising | steady | falling | new, alert one of
    persistent_bad_state | rising_errno_rate | recurring_errno | rising_latency."""
    for t, sch in (("findings", schema.FINDINGS), ("clusters", schema.CLUSTERS), ("host_alerts", schema.HOST_ALERTS)):
        got = pq.read_schema(plain_audit["out"] / f"{t}.parquet")
        assert got.names == sch.names, t
        for field in sch:
            assert got.field(field.name).type == field.type, (t, field.name)
        assert pq.read_metadata(plain_audit["out"] / f"{t}.parquet").metadata[schema.META_TABLE] == t.encode()
    assert set(plain_audit["findings"]["comm"].unique()) == {"trainer"}
    assert set(plain_audit["clusters"]["trend"]) <= {"rising", "steady", "falling", "new"}
    assert set(plain_audit["host_alerts"]["alert"]) <= {"persistent_bad_state", "rising_errno_rate",
                                                        "recurring_errno", "rising_latency"}


def test_cluster_counts_are_its_findings(plain_audit):
    """tracer/schema.py CLUSTERS (failures, hosts, jobs, first_seen, last_seen,
    example_trace_id) and FINDINGS.cluster_id: each cluster's numbers are those of the
    findings that name it (no repeat_count here: one failure a trace)."""
    fi, cl = plain_audit["findings"], plain_audit["clusters"]
    assert cl.height >= 4
    assert set(fi["cluster_id"].drop_nulls()) == set(cl["cluster_id"])
    for c in cl.to_dicts():
        mine = fi.filter(pl.col("cluster_id") == c["cluster_id"])
        assert c["failures"] == mine.height, c
        assert c["hosts"] == mine["host"].n_unique(), c
        assert c["jobs"] == mine["job_id"].n_unique(), c
        assert (c["first_seen"], c["last_seen"]) == (mine["time"].min(), mine["time"].max()), c
        assert c["example_trace_id"] in set(mine["trace_id"]), c
        assert not mine["expected"].any(), c


# ------------------------------------------------------------------ what is routine
def test_routine_family_learned_where_it_originates(learned):
    """docs/architecture.md "What is routine": "an error is learned where it originates
    (operation, origin probe, errno) and set aside when processes go on after it"; "A learned
    family that is absorbed or carries such an errno [EAGAIN] is marked `host_configuration`".
    The rdma cgroup's EAGAIN at ib_rdmacg_try_charge under create_qp, retried at once by every
    host's trainer: one entry, origin probe and operation, host_configuration."""
    e = family(learned["entries"], "ib_rdmacg_try_charge", "EAGAIN", "create_qp")
    assert e["stats"]["host_configuration"] is True
    assert e.get("comm") is None  # consistent fleet-wide: one entry without comm
    others = [x for x in learned["entries"] if x["errno"] in ("EIO", "ENXIO", "ENOMEM", "EINVAL")]
    assert not others, others  # the faults (crash loops, memlock deaths, one host's EINVAL) are not routine


def test_stopped_on_a_host_named_with_its_stop(learned):
    """docs/architecture.md: "A learned family is not routine either on the few hosts where its
    operation stopped succeeding (the counters of its root probe: every call failing with its
    errno for two 15-minute buckets or more after one succeeded, a window seeing a process die
    of it, no caller going on through it there): `stats.fatal_hosts` and `stats.fatal_since`".
    gpu10's every create_qp fails the EAGAIN from 04:00, each rank dying of it."""
    st = family(learned["entries"], "ib_rdmacg_try_charge", "EAGAIN", "create_qp")["stats"]
    assert st.get("fatal_hosts") == ["gpu10"], st
    since = dt.datetime.fromisoformat(str(st["fatal_since"]["gpu10"]).replace("Z", "+00:00"))
    assert at(4) <= since < at(4, 15), since


def test_routine_set_aside_but_kept_open_from_the_stop_on(plain_audit):
    """docs/architecture.md: "... `stats.fatal_hosts` and `stats.fatal_since`, kept open there
    from the stop on". The audit's findings of the EAGAIN: expected (set aside) everywhere but
    on gpu10 from 04:00, where they are open."""
    fi = plain_audit["findings"].filter(pl.col("bifurcation_errno") == "EAGAIN")
    before = fi.filter((pl.col("host") != "gpu10") | (pl.col("time") < at(4)))
    after = fi.filter((pl.col("host") == "gpu10") & (pl.col("time") >= at(4)))
    assert before.height > 300 and before["expected"].all()
    assert after.height == 72 and not after["expected"].any()
    assert after["cluster_id"].null_count() == 0


def test_host_alerts_on_a_learned_family(plain_audit):
    """docs/architecture.md: "Host alerts ... fire on a learned family only when a host's rate
    ... leaves the family's band ... -- or, whatever its rate over the window, on a host its
    entry names in `stats.fatal_hosts`, from the bucket of `fatal_since` on". The routine EAGAIN
    at about the same rate everywhere: no alert naming it but gpu10's, from 04:00."""
    eagain = plain_audit["host_alerts"].filter(pl.col("errno") == "EAGAIN").to_dicts()
    assert [a["host"] for a in eagain] == ["gpu10"], eagain
    assert eagain[0]["since"] >= at(4), eagain


@pytest.fixture(scope="module")
def absent(tmp_path_factory) -> dict:
    """Two days of 8 healthy hosts: on the first (learned) gpu00 never meets the EAGAIN, which
    every other host retries through; on the second (audited with the first's list) it does."""
    base = tmp_path_factory.mktemp("absent5")
    hosts = HOSTS[:8]
    write_fleet(base / "learn", build_fleet(hosts, faults=False, routine_on=set(hosts) - {"gpu00"}))
    write_fleet(base / "day2", build_fleet(hosts, faults=False, start=START + dt.timedelta(days=1)), "2026-11-21")
    listing = base / "expected.yaml"
    run("learn", str(base / "learn"), "-o", str(base / "model.parquet"), "--expected-out", str(listing))
    entries = yaml.safe_load(listing.read_text())["entries"]
    result = audit(base / "day2", base / "audit", "--allowlist", str(listing), "--no-learn-expected")
    return {"entries": entries, "audit": result}


def test_absent_on_a_host_named_and_kept_open(absent):
    """docs/architecture.md: "Nor is it routine on the hosts where it is new (**absent on a
    host**): hosts whose processes of the family's callers made enough timed traces of its
    operation in the window to expect seven occurrences at the family's own rate, and showed
    none, are named in `stats.absent_hosts` and the audit keeps its occurrences there open".
    gpu00 made 72+ timed create_qp traces without one EAGAIN (the others: 36 each)."""
    st = family(absent["entries"], "ib_rdmacg_try_charge", "EAGAIN", "create_qp")["stats"]
    assert st.get("absent_hosts") == ["gpu00"], st
    fi = absent["audit"]["findings"].filter(pl.col("bifurcation_errno") == "EAGAIN")
    assert not fi.filter(pl.col("host") == "gpu00")["expected"].any()
    assert fi.filter(pl.col("host") == "gpu00").height == 36
    assert fi.filter(pl.col("host") != "gpu00")["expected"].all()


# ------------------------------------------------------------------ host alerts
def test_persistent_bad_state_after_a_run_of_four_buckets(plain_audit):
    """docs/architecture.md: "a persistent bad state needs a run of 4 or more 15-minute buckets
    (an hour) in each of which a probe failed on most of its calls, 3 times a bucket or more over
    the run (a crash loop ...)"; "a bad state is named by an unexpected error's probe first, and
    by the errno most of that probe's unexpected failures in the run returned". gpu01's alloc_pd
    failed EIO in the firmware command on every call 01:00-03:00 (8 buckets, 12 a bucket)."""
    got = [a for a in alerts_of(plain_audit, "gpu01") if a["alert"] == "persistent_bad_state"]
    assert len(got) == 1, alerts_of(plain_audit, "gpu01")
    a = got[0]
    assert a["errno"] == "EIO"
    assert a["probe"] in {"ib_uverbs_alloc_pd", "mlx5_ib_alloc_pd", "mlx5_cmd_exec"}
    assert a["since"] == at(1)


@pytest.mark.parametrize("host, since, why", [
    ("gpu03", (5, 30), "still on in the host's last bucket"),
    ("gpu12", (4, 0), "a host that stopped reporting while failing"),
    ("gpu13", (2, 15), "its bad probe never called again on a host that reports on (drained)"),
])
def test_ongoing_run_of_two_buckets_alerts(plain_audit, host, since, why):
    """docs/architecture.md: "... or two such buckets when the run is still on in the host's
    last bucket (an outage in progress ...; or a host that stopped reporting while failing, its
    tracer crashed: its last known state is the bad one; or a run after which its bad probe is
    never called again on a host that reports on -- drained, its jobs gone elsewhere, while
    failing". Each host: EIO on every alloc_pd for two buckets, then: the window ends (gpu03),
    no snapshot at all (gpu12), snapshots whose every probe counts 0 calls (gpu13)."""
    got = [a for a in alerts_of(plain_audit, host) if a["alert"] == "persistent_bad_state"]
    assert len(got) == 1, (why, alerts_of(plain_audit, host))
    assert got[0]["errno"] == "EIO" and got[0]["since"] == at(*since), got


@pytest.mark.parametrize("host", [
    "gpu02",
    # gpu11 (three buckets) was a strict xfail: its ENXIO crossed the rising alert's CUSUM (fixed:
    # a rise whose failing buckets are all in one passing burst is that burst)
    "gpu11",
])
def test_recovered_burst_is_no_host_alert(plain_audit, host):
    """docs/architecture.md: "A run of two or three bad buckets the host recovered from (it calls
    the probe successfully again) is a passing burst: no host alert, its failures are the
    root-cause clusters'". gpu02: EIO on every alloc_pd for 2 buckets; gpu11: ENXIO on every
    firmware command for 3 buckets; both call the probes successfully afterwards."""
    assert alerts_of(plain_audit, host) == []
    fi = plain_audit["findings"].filter((pl.col("host") == host) & pl.col("bifurcation_errno").is_in(["EIO", "ENXIO"]))
    assert fi.height > 0 and fi["cluster_id"].null_count() == 0


def test_once_a_bucket_failure_is_no_bad_state_but_recurring(plain_audit):
    """docs/architecture.md: a persistent bad state needs a probe failing on most of its calls
    "3 times a bucket or more over the run (a crash loop, not a once-per-process capability
    probe on a host that differs)"; "`recurring_errno`: an unexpected errno that comes back
    host-specific in 4 or more buckets, 10 or more times, and whose origin probe ... shows it on
    at most 3 hosts ..., alerts though no bucket is bad". gpu04's one create_cq a bucket fails
    EINVAL (comp_vector), all 24 buckets, on no other host."""
    got = alerts_of(plain_audit, "gpu04")
    assert not [a for a in got if a["alert"] == "persistent_bad_state"], got
    rec = [a for a in got if a["alert"] == "recurring_errno"]
    assert len(rec) == 1 and rec[0]["errno"] == "EINVAL" and rec[0]["probe"] in {"create_cq", "ib_uverbs_create_cq"}, got


def test_cause_many_hosts_share_is_left_to_the_clusters(plain_audit):
    """docs/architecture.md: "Evidence is taken only from hosts unlike the fleet: a cause more
    than 3 hosts ... fail alike within an hour -- on most of their calls ... -- ... is left to
    the clusters (a rollout's library), except on a host down on the probe (>= 90 % of its calls
    failing, 3 or more)". gpu05-gpu09 each fail 4 of 6 reg_mr calls (67 %: most, not down) with
    the memlock ENOMEM 02:00-04:00: no host alert; one cluster of the 5 hosts."""
    ha = plain_audit["host_alerts"]
    assert ha.filter(pl.col("host").is_in(sorted(SHARED))).height == 0, ha
    assert ha.filter(pl.col("errno") == "ENOMEM").height == 0
    fi = plain_audit["findings"].filter(pl.col("bifurcation_errno") == "ENOMEM")
    assert fi["cluster_id"].n_unique() == 1 and fi["cluster_id"].null_count() == 0
    assert set(fi["host"]) == SHARED


# ------------------------------------------------------------------ clusters
def test_cluster_says_its_hosts_share_a_metadata_value(plain_audit):
    """docs/architecture.md: "A cluster over two hosts or more whose hosts all show one
    job-metadata value, and hold at least 75 % of the hosts showing it, says so ("| hosts share
    gpu_driver=560.35.03 (12 of 12 hosts with it)")". gpu05-gpu09 alone carry 560.35.03."""
    cid = plain_audit["findings"].filter(pl.col("bifurcation_errno") == "ENOMEM")["cluster_id"][0]
    sig = plain_audit["clusters"].filter(pl.col("cluster_id") == cid)["signature"][0]
    assert "| hosts share gpu_driver=560.35.03 (5 of 5 hosts with it)" in sig, sig
    others = plain_audit["clusters"].filter(pl.col("cluster_id") != cid)["signature"].to_list()
    assert not [s for s in others if "hosts share" in s], others  # their hosts share no value alone


def test_host_local_fault_is_one_cluster_over_operations(plain_audit):
    """docs/architecture.md: "Root-cause clusters merge ... those of one host-local fault: the
    same errno at the same origin layer, open findings from the same one or two hosts and no
    other (a dead firmware command interface fails alloc_pd, create_cq and create_qp alike)".
    gpu11's ENXIO at mlx5_cmd_exec under all three operations: one cluster, gpu11's alone."""
    fi = plain_audit["findings"].filter(pl.col("bifurcation_errno") == "ENXIO")
    assert set(fi["operation"]) == {"alloc_pd", "create_cq", "create_qp"}
    assert set(fi["origin_layer"]) == {"driver"}
    assert fi["cluster_id"].n_unique() == 1 and fi["cluster_id"].null_count() == 0
    c = plain_audit["clusters"].filter(pl.col("cluster_id") == fi["cluster_id"][0]).to_dicts()[0]
    assert c["hosts"] == 1 and c["failures"] == fi.height == 27


# ------------------------------------------------------------------ delivered twice
def test_records_and_snapshots_delivered_twice_count_once(fleet, plain_audit):
    """docs/architecture.md: "A snapshot delivered twice (the same `tracer.schema.SNAPSHOT_KEY`
    ...) counts once, its first copy, in the summaries and in the raw counters alike"; "A call
    tree delivered twice (the same `tracer.schema.RECORD_KEY`: host, trace id, frame; a
    snapshot's trees re-sent in a second part file) counts once, its first copy, in learn, the
    audit and `baseline export`". gpu04's events part and gpu01's counters part copied beside
    themselves as second part files: the audit's three tables are the plain dataset's, and the
    export of gpu04's failures holds each frame once."""
    base = fleet["base"]
    ds = base / "twice"
    shutil.copytree(fleet["ds"], ds)
    for table, host in (("events", "gpu04"), ("counters", "gpu01")):
        part = ds / table / f"date={DATE}" / f"host={host}"
        shutil.copyfile(part / "part-00000.parquet", part / "part-00001.parquet")
    twice = audit(ds, base / "audit-twice")
    for t in ("findings", "clusters", "host_alerts"):
        assert same(plain_audit[t], twice[t]), t
    frames = {}
    for name, root in (("plain", fleet["ds"]), ("twice", ds)):
        out = base / f"export-{name}.json"
        run("export", str(root / "events"), "--host", "gpu04", "--kind", "failure", "-o", str(out))
        doc = json.loads(out.read_text())
        evs = doc["traceEvents"] if isinstance(doc, dict) else doc
        frames[name] = sorted(json.dumps(e, sort_keys=True) for e in evs if e.get("ph") == "X")
    assert len(frames["plain"]) == 24 * 2 + 36 * 4  # create_cq EINVAL trees of 2 frames, EAGAIN of 4
    assert frames["twice"] == frames["plain"]
