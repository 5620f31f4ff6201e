"""Battery fifty: the fleet side's counters and time inputs as other writers produce them, and
files that change under a reader.

(1) A counters file of one host written beside the simulator's (tracer/schema.py COUNTERS:
`snapshot_time` is the END of the interval the row counts, `interval_s` its length; BUCKET_OF:
"interval end, on a boundary the bucket before"), with 15-minute snapshots exactly on the
boundaries or one ns after, `interval_s` null/0/negative/NaN/huge, a snapshot repeated with
other counts, rows out of order, two files of the host overlapping in time, and summaries
(counter_buckets) that are stale, truncated, from another rule or of another file; `baseline
audit --since` on a boundary, one ns after, inside an interval. Each gives the documented
answer -- the same tables with and without summaries, every snapshot counted once -- or exit 2
with one line naming the file and the field, never a traceback.
(2) An input renamed over in a loop, truncated in place or deleted while `baseline diff`,
`export`, `audit` or `learn` reads it: the answer of one whole file, or one line naming the file
with exit 2; never a traceback, a hang or a mix.
(3) kill -9 of `baseline audit` and `baseline ingest` at random moments: no non-hidden Parquet
file under the output that fails validation, and the rerun gives the clean run's tables.

Expectations come from README.md, docs/architecture.md, --help and tracer/schema.py only.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tracer import schema

REPO = Path(__file__).resolve().parents[1]
BASELINE = str(REPO / ".venv" / "bin" / "baseline")
REC = REPO / "tests" / "recordings"
DATE = "2026-11-28"
HOST = "gpu00000"
PROBE = "mlx5_ib_create_cq"
DAY = datetime(2026, 11, 28, tzinfo=UTC)
OURS = "part-00050.parquet"  # the crafted counters file beside the simulator's part-00000
TIMEOUT = 180


# --------------------------------------------------------------------------- helpers


def run(argv, cwd: Path | None = None, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    env = dict(os.environ, TZ="UTC", LC_ALL="C.UTF-8")
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


def no_traceback(res: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr[-3000:]


def ok(res: subprocess.CompletedProcess, codes=(0,)) -> subprocess.CompletedProcess:
    no_traceback(res)
    assert res.returncode in codes, (res.returncode, res.stderr[-3000:])
    return res


def refused(res: subprocess.CompletedProcess, *words: str) -> str:
    """README: one line naming the file/field, exit 2, never a traceback."""
    no_traceback(res)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def rows_of(path: Path) -> list[str]:
    """A Parquet table as a sorted list of row texts (order-free comparison)."""
    t = pq.read_table(path)
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def audit_tables(out: Path) -> dict[str, list[str]]:
    return {name: rows_of(out / f"{name}.parquet") for name in ("findings", "clusters", "host_alerts")}


def audit(ds: Path, out: Path, *extra) -> tuple[subprocess.CompletedProcess, dict | None]:
    res = run([BASELINE, "audit", ds, "-o", out, "--json", *extra])
    no_traceback(res)
    return res, (audit_tables(out) if res.returncode == 0 else None)


def our_alerts(tables: dict) -> list[dict]:
    """The persistent_bad_state alerts of the crafted probe."""
    rows = [json.loads(r) for r in tables["host_alerts"]]
    return [r for r in rows if r["host"] == HOST and r["probe"] == PROBE and r["alert"] == "persistent_bad_state"]


def t(minutes: float, ns: int = 0) -> int:
    return int((DAY + timedelta(minutes=minutes)).timestamp()) * 1_000_000_000 + ns


BAD_ENDS = (45, 60, 75, 90)  # intervals 00:30-01:30: buckets 00:30..01:15 by BUCKET_OF
ALL_ENDS = (15, 30, 45, 60, 75, 90, 105)


def crafted_rows(shift_ns: int = 0, interval: float | None = 900.0, calls: int = 10) -> list[dict]:
    rows = []
    for m in ALL_ENDS:
        bad = m in BAD_ENDS
        rows.append({"host": HOST, "snapshot_time": t(m, shift_ns), "interval_s": interval,
                     "kernel_release": "6.8.0-1017-nvidia", "vendor": "mlx5", "probe_set": "rdma", "probe": PROBE,
                     "layer": "driver", "live": True, "invocations": calls, "failures": calls if bad else 0,
                     "errno_counts": [{"errno": "EIO", "count": calls}] if bad else [], "lost_records": 0})
    return rows


def counters_table(rows: list[dict]) -> pa.Table:
    cols = {f.name: [r[f.name] for r in rows] for f in schema.COUNTERS}
    cols["snapshot_time"] = pa.array(cols["snapshot_time"], pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
    return pa.table({f.name: pa.array(cols[f.name], f.type) if f.name != "snapshot_time" else cols[f.name]
                     for f in schema.COUNTERS}, schema=schema.COUNTERS)


def part(ds: Path, table: str = "counters", name: str = OURS) -> Path:
    return schema.partition_path(ds, table, DATE, HOST, name)


def summary_of(ds: Path, name: str = OURS) -> Path:
    return part(ds, "counter_buckets", name)


def write_ours(ds: Path, rows: list[dict], *, name: str = OURS, summary: bool = True) -> Path:
    p = schema.write_partition(counters_table(rows), ds, "counters", DATE, HOST, name)
    if summary:
        assert schema.write_counter_buckets(p) is not None
    return p


def write_foreign(path: Path, rows: list[dict]) -> None:
    """As another writer: plain pyarrow, tracebase footer keys, no host column, no summary."""
    tab = counters_table(rows).drop_columns(["host"])
    meta = {schema.META_TABLE: b"counters", schema.META_VERSION: str(schema.SCHEMA_VERSION).encode()}
    pq.write_table(tab.replace_schema_metadata(meta), path)


def drop_summaries(ds: Path) -> None:
    shutil.rmtree(ds / "counter_buckets", ignore_errors=True)


def fresh(world, tmp_path: Path, name: str = "ds") -> Path:
    ds = tmp_path / name
    shutil.copytree(world["base"], ds, symlinks=True)
    return ds


# --------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("bat50")
    base = root / "base"
    ok(run([BASELINE, "simulate", "--hosts", "3", "--hours", "2", "--seed", "7", "-o", base]))
    shutil.rmtree(base / "audit", ignore_errors=True)
    sim = pq.read_table(part(base, name="part-00000.parquet"))
    assert PROBE not in set(sim["probe"].to_pylist()), "the crafted probe must be the crafted file's alone"
    # reference answers: the crafted file on the boundaries, and one ns after them
    refs = {}
    for key, shift in (("on", 0), ("after", 1)):
        ds = root / f"ref-{key}"
        shutil.copytree(base, ds)
        write_ours(ds, crafted_rows(shift))
        t0 = time.monotonic()
        res, tabs = audit(ds, root / f"out-{key}")
        refs[key + "-took"] = time.monotonic() - t0
        ok(res)
        refs[key] = tabs
        drop_summaries(ds)
        res, raw = audit(ds, root / f"out-{key}-raw")
        ok(res)
        refs[key + "-raw"] = raw
    res, refs["without"] = audit(base, root / "out-base")  # the dataset without the crafted file
    ok(res)
    shutil.rmtree(root / "out-base")
    return {"root": root, "base": base, "refs": refs}


# --------------------------------------------------------------------------- (1) counters and time


def _alert_of(tables: dict) -> dict:
    mine = our_alerts(tables)
    assert len(mine) == 1, mine
    assert mine[0]["errno"] == "EIO" and "(40 failures)" in mine[0]["detail"], mine
    return mine[0]


def test_the_same_tables_with_and_without_summaries_on_and_after_the_boundary(world):
    """docs/architecture.md: data without summaries (another writer's) gives "the same tables,
    just slower"; on the boundaries and one ns after them."""
    assert world["refs"]["on"] == world["refs"]["on-raw"]
    assert world["refs"]["after"] == world["refs"]["after-raw"]


def test_intervals_ending_one_ns_after_the_boundaries_make_a_run_from_the_later_bucket(world):
    """Failing snapshots ending 00:45:00.000000001 .. 01:30:00.000000001: buckets 00:45 .. 01:30,
    a persistent_bad_state from 00:45, four buckets, 40 failures."""
    a = _alert_of(world["refs"]["after"])
    assert a["since"].startswith(f"{DATE} 00:45:00"), a
    assert a["detail"].startswith("4 consecutive"), a


def test_interval_ending_on_a_boundary_counts_in_the_bucket_before(world):
    """schema.BUCKET_OF / docs: "a 5-minute snapshot at 02:15:00 counts 02:10-02:15, bucket
    02:00". Failing snapshots ending 00:45..01:30 (15-minute intervals) are four bad buckets
    from 00:30 -- right after the simulated host's own start-up buckets 00:00 and 00:15, where
    EOPNOTSUPP and ENODATA fail most of a probe's calls (nothing is learned routine in a 3-host
    fleet). A persistent bad state is the host's run of buckets "in each of which a probe failed
    on most of its calls": six from 00:00, mlx5_ib_create_cq the bad probe in four of them, 40
    failures. (Written first as a strict xfail expecting "4 consecutive" since 00:30; the
    alert's detail then said create_cq failed in all six buckets, which it did in four: the
    detail now says which.) One ns later the run is apart: four buckets from 00:45 (below)."""
    a = _alert_of(world["refs"]["on"])
    assert a["since"].startswith(f"{DATE} 00:00:00"), a
    assert a["detail"].startswith("6 consecutive") and f"{PROBE} in 4 of them (40 failures)" in a["detail"], a


@pytest.mark.parametrize("interval", [None, 0.0, -900.0, math.nan, 1e300, math.inf],
                         ids=["null", "zero", "negative", "nan", "huge", "inf"])
def test_odd_interval_lengths_give_the_bucket_rule_answer_or_name_the_field(world, tmp_path, interval):
    """The bucket is by the interval's END (snapshot_time) alone: an odd `interval_s` either
    leaves the tables those of 900 s, with and without summaries, or is refused: exit 2, one line
    naming the file and `interval_s`. Never a traceback."""
    ds = fresh(world, tmp_path)
    try:
        write_ours(ds, crafted_rows(0, interval))
    except Exception as exc:  # the writer refusing the value is an answer too: name the field  # noqa: BLE001
        assert "interval_s" in str(exc), exc
        write_foreign(part(ds), crafted_rows(0, interval))
    res, tabs = audit(ds, tmp_path / "out")
    if res.returncode == 2:
        refused(res, OURS, "interval_s")
        return
    ok(res)
    assert tabs == world["refs"]["on"]
    drop_summaries(ds)
    res, raw = audit(ds, tmp_path / "out-raw")
    ok(res)
    assert raw == world["refs"]["on"]


def test_a_snapshot_repeated_with_other_counts_counts_its_first_copy(world, tmp_path):
    """schema SNAPSHOT_KEY: "A row repeating one already read ... counts once, the first copy".
    Each snapshot appended again at the end of the file with 1000 successful calls: the tables
    are those of the file without the repeats, with and without summaries."""
    rows = crafted_rows(0)
    repeats = [dict(r, invocations=1000, failures=0, errno_counts=[]) for r in rows]
    ds = fresh(world, tmp_path)
    write_ours(ds, rows + repeats)
    res, tabs = audit(ds, tmp_path / "out")
    ok(res)
    assert tabs == world["refs"]["on"]
    drop_summaries(ds)
    res, raw = audit(ds, tmp_path / "out-raw")
    ok(res)
    assert raw == world["refs"]["on"]


def test_snapshots_out_of_order_within_a_file_change_nothing(world, tmp_path):
    """Each row says its own interval (snapshot_time): the file's row order is no input."""
    rows = crafted_rows(0)
    random.Random(50).shuffle(rows)
    rows.reverse()
    ds = fresh(world, tmp_path)
    write_ours(ds, rows)
    res, tabs = audit(ds, tmp_path / "out")
    ok(res)
    assert tabs == world["refs"]["on"]


@pytest.mark.parametrize("overlap", ["interleaved", "repeated"])
def test_two_files_of_one_host_overlapping_in_time_count_every_snapshot_once(world, tmp_path, overlap):
    """Two counters files of the host spanning the same hours: interleaved snapshots (each in one
    file), or the same snapshots in both (a spool re-sent under another part name: "counts once").
    The tables are those of one file holding each snapshot once, with and without summaries."""
    rows = crafted_rows(0)
    if overlap == "interleaved":
        first, second = rows[0::2], rows[1::2]
    else:
        first, second = rows, rows[2:6]
    ds = fresh(world, tmp_path)
    write_ours(ds, first, name="part-00050.parquet")
    write_ours(ds, second, name="part-00051.parquet")
    res, tabs = audit(ds, tmp_path / "out")
    ok(res)
    assert tabs == world["refs"]["on"]
    drop_summaries(ds)
    res, raw = audit(ds, tmp_path / "out-raw")
    ok(res)
    assert raw == world["refs"]["on"]


def _summary_other_rule(ds: Path) -> None:
    """Rewrite the summary as if bucketed by the snapshot time alone (every bucket +15 min for the
    rows ending on a boundary) and say so in its footer."""
    p = summary_of(ds)
    tab = pq.ParquetFile(p).read()
    meta = {k: v for k, v in pq.read_metadata(p).metadata.items() if k != b"ARROW:schema"}
    source = json.loads(meta[schema.META_SOURCE])
    assert source["bucket_of"] == schema.BUCKET_OF
    source["bucket_of"] = "snapshot time"
    meta[schema.META_SOURCE] = json.dumps(source).encode()
    shifted = pa.array([b + timedelta(minutes=15) for b in tab["bucket"].to_pylist()], tab.schema.field("bucket").type)
    tab = tab.set_column(tab.schema.get_field_index("bucket"), "bucket", shifted).replace_schema_metadata(meta)
    pq.write_table(tab, p)


def _summary_stale(ds: Path) -> None:
    """Summary of the on-boundary file kept while the counters file is rewritten one ns later."""
    keep = summary_of(ds).read_bytes()
    write_ours(ds, crafted_rows(1), summary=False)
    summary_of(ds).write_bytes(keep)


def _summary_truncated(ds: Path) -> None:
    p = summary_of(ds)
    os.truncate(p, p.stat().st_size // 2)


def _summary_of_another_file(ds: Path) -> None:
    """The simulator's own summary of gpu00000 put under our file's name."""
    shutil.copyfile(summary_of(ds, "part-00000.parquet"), summary_of(ds))


def _summary_empty(ds: Path) -> None:
    summary_of(ds).write_bytes(b"")


SUMMARY_DAMAGE = {"stale": _summary_stale, "truncated": _summary_truncated, "other_rule": _summary_other_rule,
                  "another_files": _summary_of_another_file, "empty": _summary_empty}


@pytest.mark.parametrize("damage", sorted(SUMMARY_DAMAGE))
def test_a_summary_that_does_not_match_is_read_around(world, tmp_path, damage):
    """docs/architecture.md: the audit reads a host's summaries "only when every counters file of
    the host has one that matches it as it is now ... a stale or broken summary ... give the same
    tables, just slower"; schema: "Summaries written by another rule are not used". The tables
    are those of the counters file as it is, read without summaries."""
    ds = fresh(world, tmp_path)
    write_ours(ds, crafted_rows(0))
    SUMMARY_DAMAGE[damage](ds)
    res, tabs = audit(ds, tmp_path / "out")
    ok(res)
    want = world["refs"]["after-raw" if damage == "stale" else "on-raw"]
    assert tabs == want


SINCE = {
    "on_boundary": ("2026-11-28T00:45:00Z", "1ns-free"),
    "one_ns_after": ("2026-11-28T00:45:00.000000001Z", "1ns-free"),
    "inside_interval": ("2026-11-28T00:40:00Z", "takes-00:45"),
}


@pytest.mark.parametrize("case", sorted(SINCE))
def test_since_on_a_boundary_one_ns_after_and_inside_an_interval(world, tmp_path, case):
    """audit --help: `--since T` "counters of the calls after T, i.e. snapshots after T"; docs: a
    `--since` inside a bucket gives the same tables with or without summaries. On 00:45 (or 1 ns
    after) the snapshot ending 00:45 counts calls before T: left out, the bad run is three
    buckets from 00:45 and recovered -- a passing burst, no persistent_bad_state; at 00:40 that
    snapshot ends after T and is taken: four buckets from 00:30, the alert stays."""
    since, kind = SINCE[case]
    ds = fresh(world, tmp_path)
    write_ours(ds, crafted_rows(0))
    res, tabs = audit(ds, tmp_path / "out", "--since", since)
    if case == "one_ns_after" and res.returncode == 2:
        refused(res, "--since")  # a time finer than the tool reads is refused by name, not misread
        return
    ok(res)
    assert json.loads(res.stdout)["since"], res.stdout
    drop_summaries(ds)
    res2, raw = audit(ds, tmp_path / "out-raw", "--since", since)
    ok(res2)
    assert tabs == raw
    mine = our_alerts(tabs)
    if kind == "1ns-free":
        assert mine == [], mine
    else:
        assert len(mine) == 1 and mine[0]["since"].startswith(f"{DATE} 00:30:00"), mine


# --------------------------------------------------------------------------- (2) files changing under a reader


def _swapper(srcs: list[Path], target: Path, scratch: Path):
    stop = threading.Event()
    swaps = [0]

    def loop() -> None:
        while not stop.is_set():
            tmp = scratch / f".swap-{swaps[0] % 2}"
            tmp.unlink(missing_ok=True)
            os.link(srcs[swaps[0] % 2], tmp)
            os.replace(tmp, target)
            swaps[0] += 1

    th = threading.Thread(target=loop, daemon=True)
    return th, stop, swaps


def _stop_swapping(th: threading.Thread, stop: threading.Event, scratch: Path) -> None:
    stop.set()
    th.join(30)
    assert not th.is_alive()
    for i in (0, 1):
        (scratch / f".swap-{i}").unlink(missing_ok=True)


def _racing(argv, srcs, target, scratch, trials=3):
    results = []
    total = 0
    for _ in range(trials):
        th, stop, swaps = _swapper(srcs, target, scratch)
        th.start()
        try:
            res = run(argv)
        finally:
            _stop_swapping(th, stop, scratch)
        assert swaps[0] > 0, "the input was replaced while the command read it"
        total += swaps[0]
        results.append(res)
    assert total > 10, "the input was replaced while the command read it"
    return results


def test_export_of_a_trace_renamed_over_in_a_loop_is_one_whole_file(tmp_path):
    """README: a reader's answer is of one whole file, or one line naming it, exit 2: `baseline
    export moving.parquet` while moving.parquet is renamed over between two recordings gives
    the export of one of them, byte for byte."""
    a, b = REC / "lz4_readonly_new_host" / "good0.parquet", REC / "lz4_readonly_new_host" / "bad.parquet"
    srcs = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    shutil.copyfile(a, srcs[0])
    shutil.copyfile(b, srcs[1])
    target = tmp_path / "moving.parquet"
    refs = []
    for s in srcs:
        shutil.copyfile(s, target)
        ok(run([BASELINE, "export", target, "-o", tmp_path / "ref.json"]))
        refs.append((tmp_path / "ref.json").read_text())
    assert refs[0] != refs[1]
    out = tmp_path / "out.json"
    for res in _racing([BASELINE, "export", target, "-o", out], srcs, target, tmp_path):
        if res.returncode == 2:
            refused(res, "moving.parquet")
            continue
        ok(res)
        assert out.read_text() in refs


def _delayed(action, delay: float) -> threading.Thread:
    th = threading.Thread(target=lambda: (time.sleep(delay), action()), daemon=True)
    th.start()
    return th


@pytest.mark.parametrize("what", ["truncated", "deleted"])
def test_diff_input_truncated_or_deleted_mid_run(tmp_path, what):
    """`baseline diff good0 good1 bad` while bad.parquet is truncated in place (to half) or
    deleted at moments through the run: the whole file's answer (exit 1, its bifurcation) or one
    line naming bad.parquet, exit 2; never a traceback or a hang."""
    rec = REC / "find_delete_walk_order"
    goods = [rec / "g0.parquet", rec / "g1.parquet"]
    bad = tmp_path / "bad.parquet"
    shutil.copyfile(rec / "bad.parquet", bad)
    t0 = time.monotonic()
    whole = ok(run([BASELINE, "diff", "--json", *goods, bad]), (0, 1))
    took = time.monotonic() - t0
    want = (whole.returncode, json.loads(whole.stdout)["bifurcation"])
    size = bad.stat().st_size
    for frac in (0.1, 0.35, 0.6, 0.85):
        shutil.copyfile(rec / "bad.parquet", bad)
        act = (lambda: os.truncate(bad, size // 2)) if what == "truncated" else (lambda: bad.unlink(missing_ok=True))
        th = _delayed(act, took * frac)
        res = run([BASELINE, "diff", "--json", *goods, bad])
        th.join()
        if res.returncode == 2:
            refused(res, "bad.parquet")
            continue
        ok(res, (0, 1))
        assert (res.returncode, json.loads(res.stdout)["bifurcation"]) == want


def test_audit_with_a_counters_file_renamed_over_in_a_loop_gives_one_files_answer(world, tmp_path):
    """The crafted counters file is renamed over between its on-boundary and one-ns-later versions
    while `baseline audit` runs: the tables of one of them (its summary matches the first only;
    the other is read raw), or exit 2 naming the file -- never a mix of the two."""
    ds = fresh(world, tmp_path)
    target = write_ours(ds, crafted_rows(0))
    srcs = [tmp_path / "on.parquet", tmp_path / "after.parquet"]
    shutil.copyfile(target, srcs[0])
    write_ours(ds, crafted_rows(1), summary=False)
    shutil.copyfile(target, srcs[1])
    shutil.copyfile(srcs[0], target)
    scratch = target.parent  # os.link/os.replace need the same filesystem; dot names are not data
    want = [world["refs"]["on"], world["refs"]["after"]]
    for res in _racing([BASELINE, "audit", ds, "-o", tmp_path / "out", "--json"], srcs, target, scratch):
        if res.returncode == 2:
            refused(res, OURS)
            continue
        ok(res)
        assert audit_tables(tmp_path / "out") in want


def test_learn_with_an_events_file_renamed_over_in_a_loop_gives_one_files_model(world, tmp_path):
    """`baseline learn DS -o model.parquet` while a host's events file is renamed over between
    the simulator's and a copy holding only its first half of traces (same columns): the model
    of one whole file
    (the same rows as a learn of that version alone), or exit 2 naming the file."""
    ds = fresh(world, tmp_path)
    target = part(ds, "events", "part-00000.parquet")
    full = pq.ParquetFile(target).read()
    assert "host" not in full.column_names
    ids = list(dict.fromkeys(full["trace_id"].to_pylist()))
    half = full.filter(pc.is_in(full["trace_id"], pa.array(ids[: len(ids) // 2])))
    schema.write_table(half, tmp_path / "half.parquet", "events", omit_columns=schema.PARTITION_COLUMNS)
    assert pq.read_schema(tmp_path / "half.parquet").names == pq.read_schema(target).names
    srcs = [tmp_path / "full.parquet", tmp_path / "half.parquet"]
    shutil.copyfile(target, srcs[0])
    refs = []
    for s in srcs:
        shutil.copyfile(s, target)
        ok(run([BASELINE, "learn", ds, "-o", tmp_path / "ref.parquet"]))
        refs.append(rows_of(tmp_path / "ref.parquet"))
    assert refs[0] != refs[1], "the two versions must learn apart"
    out = tmp_path / "model.parquet"
    for res in _racing([BASELINE, "learn", ds, "-o", out], srcs, target, target.parent):
        if res.returncode == 2:
            refused(res, "part-00000.parquet")
            continue
        ok(res)
        assert rows_of(out) in refs


@pytest.mark.parametrize("what", ["truncated", "deleted"])
def test_audit_with_a_counters_file_truncated_or_deleted_mid_run(world, tmp_path, what):
    """The crafted counters file truncated in place or deleted at moments through `baseline
    audit`: the tables of the whole file (or, deleted before it was listed, of the dataset
    without it), or one line naming the file, exit 2."""
    ds = fresh(world, tmp_path)
    target = write_ours(ds, crafted_rows(0))
    keep = target.read_bytes()
    summ = summary_of(ds).read_bytes()
    took, without = world["refs"]["on-took"], world["refs"]["without"]
    for frac in (0.1, 0.5, 0.9):
        target.write_bytes(keep)
        summary_of(ds).write_bytes(summ)
        act = (lambda: os.truncate(target, len(keep) // 2)) if what == "truncated" else (lambda: target.unlink())
        th = _delayed(act, took * frac)
        res, tabs = audit(ds, tmp_path / "out")
        th.join()
        if res.returncode == 2:
            refused(res, OURS)
            continue
        ok(res)
        allowed = [world["refs"]["on"]] + ([without] if what == "deleted" else [])
        assert tabs in allowed


# --------------------------------------------------------------------------- (3) kill -9


def _killed(argv, delay: float) -> int:
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TZ="UTC"))
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    return proc.wait(60)


def _parquet_all_valid(root: Path) -> None:
    """Every Parquet file not under a dot-name validates as the table its path says (a reader
    never takes half a file for data)."""
    for p in root.rglob("*.parquet"):
        rel = p.relative_to(root).parts
        if any(x.startswith(".") for x in rel):
            continue
        table = next((x for x in rel if x in ("events", "counters", "counter_buckets", "truth")), None)
        if table is None and p.stem in ("findings", "clusters", "host_alerts"):
            table = p.stem
        assert table is not None, p
        schema.validate_file(p, table)
        pq.read_table(p)  # the pages decode too


def test_audit_killed_9_at_random_moments_leaves_only_whole_files_and_the_rerun_equals_clean(world, tmp_path):
    """docs/architecture.md: "Only a kill -9 leaves a temporary (hidden, skipped by every scan)";
    `baseline audit` killed -9 at random moments (its default output inside the dataset, then
    fresh -o directories): every Parquet file not under a dot-name validates and decodes, and
    the rerun's tables are the uninterrupted run's."""
    ds = fresh(world, tmp_path)
    write_ours(ds, crafted_rows(0))
    took, clean = world["refs"]["on-took"], world["refs"]["on"]
    rng = random.Random(5050)
    for i in range(3):
        o = ds / "audit" if i == 0 else tmp_path / f"k{i}"
        _killed([BASELINE, "audit", ds, "-o", o], took * rng.uniform(0.1, 1.0))
        if o.exists():
            _parquet_all_valid(o)
        _parquet_all_valid(ds)
        ok(run([BASELINE, "audit", ds, "-o", o]))
        assert audit_tables(o) == clean


def _dataset_rows(ds: Path) -> dict[str, list[str]]:
    got = {}
    for table in ("events", "counters"):
        files = schema.dataset_files(ds, table)
        df = schema.read(files, table)
        got[table] = sorted(set(json.dumps(r, sort_keys=True, default=str) for r in df.to_dicts()))
    return got


def test_ingest_killed_9_at_random_moments_leaves_only_whole_files_and_the_rerun_equals_clean(world, tmp_path):
    """`baseline ingest` killed -9 at random moments: every Parquet file of the dataset not under
    a dot-name validates and decodes (before and after the rerun), nothing is quarantined, and
    after the rerun the events and counters read are the uninterrupted ingest's (docs: "an
    ingest rerun over snapshots the dataset already holds (after a kill -9)" adds none twice)."""
    root = world["root"] / "spoolsim"
    if not root.exists():
        ok(run([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "9", "--spool", "-o", root]))
    spool = root / "spool"
    clean_spool = tmp_path / "spool-clean"
    shutil.copytree(spool, clean_spool)
    t0 = time.monotonic()
    ok(run([BASELINE, "ingest", clean_spool, tmp_path / "clean", "--quarantine", tmp_path / "q0"]))
    took = time.monotonic() - t0
    want = _dataset_rows(tmp_path / "clean")
    assert want["events"] and want["counters"]
    rng = random.Random(550)
    for i in range(3):
        sp, ds, q = tmp_path / f"s{i}", tmp_path / f"d{i}", tmp_path / f"q{i}"
        shutil.copytree(spool, sp)
        _killed([BASELINE, "ingest", sp, ds, "--quarantine", q], took * rng.uniform(0.1, 0.95))
        if ds.exists():
            _parquet_all_valid(ds)
        ok(run([BASELINE, "ingest", sp, ds, "--quarantine", q]))
        _parquet_all_valid(ds)
        assert not q.exists() or not any(q.rglob("*.reason")), sorted(q.rglob("*"))
        assert _dataset_rows(ds) == want
