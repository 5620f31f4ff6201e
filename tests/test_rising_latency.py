"""rising_latency host alerts (baseline.fleet.latency) on fleets written as real events Parquet.

The call trees are the reference's (/work/shared/reference/rdma_control_path.yaml: the operation's
`tree`, its first frames under the write handler); the latencies are what the scenario says: a
CREATE_QP firmware command at ~0.4 ms, ~6 ms on a NIC whose firmware got slow. Jobs start their
ranks together (a burst of good traces within a second), one job per host every 10 minutes."""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl
import yaml

from baseline.fleet.latency import _median, good_root_latencies, rising_latency
from tracer.schema import polars_schema, write_partition

REFERENCE = Path("/work/shared/reference/rdma_control_path.yaml")
START = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
HOURS = 4
JOB_EVERY_S = 600
RANKS = 4
FAST_NS, SLOW_NS = 400_000, 6_000_000


@functools.cache
def _tree(operation: str) -> tuple[str, ...]:
    """The operation's frames from the reference, depth 0 first (the first three levels)."""
    tree = yaml.safe_load(REFERENCE.read_text())["operations"][operation]["tree"]
    return tuple(frame["fn"] for frame in tree if 0 <= frame["depth"] <= 2)


# latency of a rank's create_qp: (host index, job start) -> ns
Latency = Callable[[int, dt.datetime, random.Random], float]


def _fleet(root: Path, hosts: int, latency: Latency, jobs_of: Callable[[int], int] | None = None,
           seed: int = 7) -> Path:
    """Write `hosts` hosts' events: every JOB_EVERY_S a job whose RANKS ranks each make one good
    create_qp (the reference's frames, the root's latency from `latency`)."""
    rng = random.Random(seed)
    frames = _tree("create_qp")
    for h in range(hosts):
        name = f"lat-h{h:02d}"
        rows = []
        jobs = jobs_of(h) if jobs_of else HOURS * 3600 // JOB_EVERY_S
        step = HOURS * 3600 / jobs
        for j in range(jobs):
            at = START + dt.timedelta(seconds=j * step + rng.uniform(0, 60))
            for r in range(RANKS):
                root_ns = int(latency(h, at, rng) * rng.lognormvariate(0, 0.1))
                start = at + dt.timedelta(milliseconds=150 * r)
                trace = f"{name}:0:{j}:{r}"
                for seq, fn in enumerate(frames):
                    rows.append({
                        "trace_id": trace, "seq": seq, "ts_ns": seq * 1000, "pid": 1000 + j, "tid": 1000 + j,
                        "probe": fn, "layer": "uverbs" if seq == 0 else "core", "depth": seq, "ret": 0,
                        "errno": None, "latency_ns": root_ns // (seq + 1), "kind": "good", "command": "create_qp",
                        "exit_status": 0, "start_time": start, "end_time": start + dt.timedelta(microseconds=root_ns // 1000),
                        "host": name, "kernel_release": "5.15.0-1067-nvidia",
                    })
        frame = pl.DataFrame(rows).with_columns(pl.col("depth").cast(pl.Int16), pl.col("pid", "tid").cast(pl.Int32),
                                                pl.col("exit_status").cast(pl.Int32))
        write_partition(frame, root, "events", START.date().isoformat(), name, "part-0.parquet", durable=False)
    return root


def _alerts(root: Path) -> pl.DataFrame:
    return rising_latency(good_root_latencies(root))


def _after(fraction: float) -> dt.datetime:
    return START + dt.timedelta(hours=HOURS * fraction)


def test_a_slow_host_is_named(tmp_path):
    """One host's create_qp 15x slower from 40 % of the window on: one alert, on that host, naming
    the root probe, since when, and the medians before and after."""
    since = _after(0.4)
    root = _fleet(tmp_path, 12, lambda h, at, rng: SLOW_NS if h == 3 and at >= since else FAST_NS)
    alerts = _alerts(root)
    assert alerts.height == 1, alerts
    row = alerts.row(0, named=True)
    assert row["host"] == "lat-h03" and row["alert"] == "rising_latency" and row["errno"] is None
    assert row["probe"] == _tree("create_qp")[0]
    assert since <= row["since"] <= since + dt.timedelta(seconds=JOB_EVERY_S + 60)
    assert 10 <= row["score"] <= 22, row
    was, now = (float(x) for x in re.search(r"([\d.]+) ms -> ([\d.]+) ms", row["detail"]).groups())
    assert row["detail"].startswith("create_qp:") and 0.35 <= was <= 0.45 and 5.5 <= now <= 6.5, row["detail"]
    assert alerts.schema == polars_schema("host_alerts")


def test_a_fleet_wide_slowdown_names_no_host(tmp_path):
    """Every host slower from the same time (a firmware rollout, a loaded fabric): no host stands
    out from the fleet, no alert."""
    since = _after(0.4)
    assert _alerts(_fleet(tmp_path, 12, lambda h, at, rng: SLOW_NS if at >= since else FAST_NS)).is_empty()


def test_a_loaded_hour_names_no_host(tmp_path):
    """One host slow for one hour in the middle, then fast again: a burst, not a state."""
    lo, hi = _after(0.4), _after(0.65)
    assert _alerts(_fleet(tmp_path, 12, lambda h, at, rng: SLOW_NS if h == 3 and lo <= at < hi else FAST_NS)).is_empty()


def test_a_noisy_host_names_no_host(tmp_path):
    """A host whose jobs are fast or 15x slower at random all day: its medians before and after any
    split may differ, but the two periods are not separated -- nothing changed on it."""
    coin: dict[tuple[int, dt.datetime], bool] = {}

    def latency(h: int, at: dt.datetime, rng: random.Random) -> float:
        slow = coin.setdefault((h, at), rng.random() < 0.5)
        return SLOW_NS if h == 3 and slow else FAST_NS

    assert _alerts(_fleet(tmp_path, 12, latency)).is_empty()


def test_too_few_traces_name_no_host(tmp_path):
    """The slow host timed in three jobs only (two before, one after: 4 good traces since): too few
    for a median after, no alert -- though the rise is the same."""
    since = _after(0.4)
    root = _fleet(tmp_path, 12, lambda h, at, rng: SLOW_NS if h == 3 and at >= since else FAST_NS,
                  jobs_of=lambda h: 3 if h == 3 else HOURS * 3600 // JOB_EVERY_S)
    assert _alerts(root).is_empty()


def test_too_few_peers_name_no_host(tmp_path):
    """Four hosts: no fleet level to compare with (fewer than min_peer_hosts timed), no alert."""
    since = _after(0.4)
    assert _alerts(_fleet(tmp_path, 4, lambda h, at, rng: SLOW_NS if h == 3 and at >= since else FAST_NS)).is_empty()


def test_no_good_traces():
    """Events without timed good traces give an empty table of the schema."""
    empty = good_root_latencies(pl.DataFrame(schema=polars_schema("events")))
    assert empty.is_empty()
    assert rising_latency(empty).schema == polars_schema("host_alerts")


def test_the_split_search_median_is_numpys():
    """The change-point search's median (a sort's middle, for speed) is np.median's value
    exactly, odd and even counts, at every scale the relative log latencies take."""
    import numpy as np

    rng = np.random.default_rng(7)
    for n in [*range(1, 40), 999, 1000]:
        for scale in (1e-3, 1.0, 1e6):
            values = rng.normal(size=n) * scale
            assert _median(values) == float(np.median(values))


def test_the_audits_good_roots_are_the_targeted_reads_in_one_chunk_a_batch(tmp_path):
    """collect_traces' good_roots (the audit's rows for this alert) are the rows
    good_root_latencies reads on its own, and each batch's come as one chunk: filtered from a
    scan they came in a chunk per file, and the alert's group-bys over a fleet day's ~10,000
    chunks took twice the CPU."""
    from baseline.fleet.model import collect_traces
    from baseline.simulator.simulate import simulate

    simulate(str(tmp_path / "ds"), hosts=12, hours=2.0, seed=5)
    parts: list[pl.DataFrame] = []
    collect_traces(tmp_path / "ds", batch_rows=100, good_roots=parts)
    assert len(parts) > 1 and all(p.n_chunks() == 1 for p in parts)
    together = pl.concat(parts).sort(pl.all())
    assert together.height > 0
    assert together.equals(good_root_latencies(tmp_path / "ds").sort(pl.all()))
