"""Benchmark `baseline learn` (events/s, peak RSS) and `baseline audit` (wall time per fleet-day).

    .venv/bin/python -m bench.bench_audit --quick
    .venv/bin/python -m bench.bench_audit --learn-events 100000000 --audit-hosts 10000
    .venv/bin/python -m bench.bench_audit --quality [--quality-hosts 300 --quality-hours 6]
    .venv/bin/python -m bench.bench_audit --audit DATASET [--before CHECKOUT] [--repeat N]
    .venv/bin/python -m bench.bench_audit --stages DATASET      # the audit's memory, time and faults per stage
    .venv/bin/python -m bench.bench_audit --timeline DATASET [--before CHECKOUT] [--repeat N]  # serial CPU per stage
    .venv/bin/python -m bench.bench_audit --pipeline-forms DATASET [--parts 4] [--repeat 3]

`--pipeline-forms` is the pipeline's real path: the scheduled audit reads the ingested dataset,
whose host-day partitions hold one part file per ingest run until compaction merges them (1-7
files), while a simulated day (the bar's) holds one, as a compacted one does; a closed day is then
compacted across hosts by tidy (`compact_days`: a few day files). The forms are audited,
interleaved and labelled, "compacted (as given)", "uncompacted (N parts)", "compacted by tidy"
and "day files across hosts" (`--no-day`: not that one), with each compaction's own cost and the
outputs compared. `--audit DAY --before CHECKOUT --before-dataset GIVEN` pairs this checkout on
one form with the before checkout on another (CPU and wall ratios by round).

`--quality` scores the audit (`baseline evaluate`) on twenty-one generators in one run: the project's
simulator; tests/fleetgen, an independent messy-fleet generator that shares no code with it
(routine errors originating below the root probe, sampled good traces, truncated trees, kernel
updates mid-window, a host seen only through its counters; see tests/fleetgen/model.py); and
tests/fleetgen3, tests/fleetgen4, tests/fleetgen5, tests/fleetgen6, tests/fleetgen7, tests/fleetgen8, tests/fleetgen9,
tests/fleetgen10, tests/fleetgen11, tests/fleetgen12, tests/fleetgen13, tests/fleetgen14, tests/fleetgen15, tests/fleetgen16, tests/fleetgen17, tests/fleetgen18, tests/fleetgen19, tests/fleetgen20 and tests/fleetgen21, each written blind (without reading the
simulator, the other generators or the audit) from the reference and the docs (see their
__init__.py). Host alerts are scored both ways against the generators' truth (`alert_hosts`:
host -> the errnos its fault shows): false_host_alerts (alerts on other hosts or naming another
errno, less what a generator tolerates) and missed_host_alerts (of truth_alert_hosts, the hosts
that must alert, without an alert showing their fault: recall; fleetgen11 was written for it;
fleetgen12 adds counters going backwards after a daemon restart, snapshots delivered twice and
hourly good traces; fleetgen13 multi-host jobs failing because of one host's NIC, whose peers must
not alert, an errno storm in repeat_count, a rolling kernel upgrade and reduced probe sets;
fleetgen14 a fault on one NIC port of a four-NIC host, a rack's tracers restarted at once, a
leak doubling hourly and one errno one tenant retries through and the other dies of;
fleetgen15 a firmware slowing before it times out, a peer-memory ENOMEM arriving with an upgrade
on the two canary hosts that took it, and failures confined to the teardown path;
fleetgen16 a rolling driver-restart wave whose routine EIO burst one host never leaves, the wave's
errno at another frame, two errors in one call tree and snapshots shipped twice across midnight;
fleetgen17 bnxt_re chains with the inlined static frames missing, a crash loop's storm in
repeat_count, a firmware timing out once per boot on the first registration, and a routine EAGAIN
more than doubling on one host without a failed job, which must not alert;
fleetgen18 a 256-rank job one host's CREATE_QP EIO kills at every requeue, whose 255 victims die
with no kernel error and must not alert, a fleet-wide maintenance window lifting a routine ENODATA
on every host, an irdma driver regression beside the same errno routine one operation over, and
tracer daemons restarted mid-window;
fleetgen19 a storm one record of which stands for 40,000 failures beside a fault of one record on
each of 40 hosts, the same errno a diagnostic's routine on one host, a driver rollout in waves
bringing a benign errno to every upgraded host and a firmware regression to one wave, a rack's
leaf switch, hosts joining and drained, and a probe set upgraded mid-day;
fleetgen20 an update's error every process survives at the cost of seconds of retries a QP, the
same update's errno a routine fallback on one NIC model and fatal on two hosts of another, a broken
NIC only the node agent meets after the scheduler drained its jobs, and a rare fatal ETIMEDOUT one
per host beside a daemon surviving it on two hosts;
fleetgen21 a scheduler requeueing jobs under the same id whose dying rank frees what it made before
it exits, one bad port of a dual-port NIC in every job on its host, a peer-memory ENOMEM of one GPU
driver version named in the metadata only, the cgroup's EAGAIN retried by create_qp and fatal to
create_cq, clocks stepping back so snapshot intervals overlap, and a latency-only firmware regression).
fleetgen3, 5, 6, 8, 13, 14, 15, 16, 17, 18, 19, 20 and 21 tell the two apart: their `alert_hosts` is what is
acceptable (every host with a share of a fault, a fleet-wide one too) and `required_alert_hosts`
what must alert.

Each measured command runs as a subprocess (the real CLI); peak RSS is
resource.getrusage(RUSAGE_CHILDREN).ru_maxrss of that child alone (one child per measurement
process). References measured in the same run: bare polars scans of the same events files (the
floor for any streaming pass), so the learn figure is also printed as ratios: "scan" reads two
columns (depth summed, probe's distinct values; the reference of the earlier figures), "scan of
learn's columns" decodes every column `baseline learn` reads (trace_id, seq, depth, probe, layer,
errno, command, kind, host restored from the partition path) with learn's good-trace filter and a
trivial reduction (sums of values and string lengths): what learn costs beyond reading its input.

    .venv/bin/python -m bench.bench_audit --datasets LEARN AUDIT --before CHECKOUT --repeat 3 [--only learn]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]


def measure(argv: list[str], code_root: Path = REPO) -> dict:
    """Run argv in a fresh measuring process; wall seconds, the child's CPU seconds (user + system,
    all its threads: the figure that other processes' load does not inflate much) and its peak RSS (MiB).
    code_root: the checkout whose baseline/tracer packages run (another one = a "before")."""
    code = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        f"r = subprocess.run({argv!r}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
        "w = time.perf_counter() - t\n"
        "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'rc': r.returncode, 'wall_s': w, 'cpu_s': ru.ru_utime + ru.ru_stime,\n"
        "                  'peak_rss_mib': ru.ru_maxrss / 1024, 'err': r.stderr[-500:]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=code_root, check=True)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {result['err']}")
    return result


def simulate(root: Path, hosts: int, hours: float, events_target: int | None, workers: int) -> dict:
    """Simulate in a fresh process (the simulator's fork pool must not inherit our threads)."""
    code = (
        "import json, time\n"
        "from baseline.simulator.simulate import simulate\n"
        "t = time.perf_counter()\n"
        f"s = simulate({str(root)!r}, hosts={hosts}, hours={hours}, seed=42, events_target={events_target!r}, workers={workers})\n"
        "s['sim_wall_s'] = time.perf_counter() - t\n"
        "print(json.dumps(s, default=str))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def scan_reference(root: Path) -> dict:
    code = (
        "import polars as pl, sys\n"
        f"from tracer.schema import dataset_files\n"
        f"fs = [str(f) for f in dataset_files({str(root)!r}, 'events')]\n"
        "print(pl.scan_parquet(fs).select(pl.col('depth').cast(pl.Int64).sum(), pl.col('probe').n_unique()).collect(engine='streaming'))\n"
    )
    return measure([sys.executable, "-c", code])


def scan_learn_columns(root: Path) -> dict:
    """Bare scan of the columns `baseline learn` decodes, through the same reader (validated
    footers, host restored from the path), good rows only, reduced to sums."""
    code = (
        "import polars as pl\n"
        "from tracer.schema import dataset_files, scan_parquet_files, validate_file\n"
        f"fs = dataset_files({str(root)!r}, 'events')\n"
        "for f in fs: validate_file(f, 'events')\n"
        "cols = ['trace_id', 'seq', 'depth', 'probe', 'layer', 'errno', 'command', 'host']\n"
        "lf = scan_parquet_files(fs, 'events').filter(pl.col('kind') == 'good').select(cols)\n"
        "ints, strs = ['seq', 'depth'], [c for c in cols if c not in ('seq', 'depth')]\n"
        "print(lf.select(*[pl.col(c).cast(pl.Int64).sum() for c in ints],\n"
        "                *[pl.col(c).str.len_bytes().sum() for c in strs]).collect(engine='streaming'))\n"
    )
    return measure([sys.executable, "-c", code])


def compare(learn_ds: Path, audit_ds: Path, before: Path | None, repeat: int, work: str | None,
            only: str | None = None) -> int:
    """learn and audit of existing datasets, with this checkout and optionally `before`, each
    against the bare polars scans of the same events in the same run (best of `repeat`).
    only="learn": the learn figures alone (no audit)."""
    import pyarrow.parquet as pq

    from tracer.schema import dataset_files

    events = sum(pq.read_metadata(f).num_rows for f in dataset_files(learn_ds, "events"))
    roots = [("now", REPO)] + ([("before", before.resolve())] if before else [])
    best: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        cmds = ("scan", "scan-learn", "learn") if only == "learn" else ("scan", "scan-learn", "learn", "audit")
        for _ in range(repeat):
            for cmd in cmds:
                for name, root in roots:
                    if cmd.startswith("scan") and name != "now":
                        continue
                    argv = {"learn": BASELINE + ["learn", str(learn_ds), "-o", f"{tmp}/{name}.parquet"],
                            "audit": BASELINE + ["audit", str(audit_ds), "--out", f"{tmp}/{name}-audit"]}.get(cmd)
                    if argv is None:
                        r = scan_reference(learn_ds) if cmd == "scan" else scan_learn_columns(learn_ds)
                    else:
                        r = measure(argv, root)
                    key = (cmd, name)
                    if key not in best or r["wall_s"] < best[key]["wall_s"]:
                        best[key] = r
    ref, ref_cols = best[("scan", "now")], best[("scan-learn", "now")]
    print(f"reference: bare polars scan of {learn_ds} events ({events:,}): {ref['wall_s']:.2f} s, "
          f"peak RSS {ref['peak_rss_mib']:.0f} MiB; scan of learn's columns {ref_cols['wall_s']:.2f} s "
          f"({events / ref_cols['wall_s']:,.0f} events/s), peak RSS {ref_cols['peak_rss_mib']:.0f} MiB "
          f"(best of {repeat})")
    for name, _root in roots:
        ln = best[("learn", name)]
        line = (f"{name:7s} learn {ln['wall_s']:.2f} s = {events / ln['wall_s']:,.0f} events/s "
                f"({ln['wall_s'] / ref['wall_s']:.1f}x the scan, {ln['wall_s'] / ref_cols['wall_s']:.2f}x the scan "
                f"of learn's columns), peak RSS {ln['peak_rss_mib']:.0f} MiB")
        if only != "learn":
            au = best[("audit", name)]
            line += (f"; audit {audit_ds.name} {au['wall_s']:.2f} s ({au['wall_s'] / ref['wall_s']:.1f}x), "
                     f"peak RSS {au['peak_rss_mib']:.0f} MiB")
        print(line)
    return 0


def scan_audit_reference(root: Path) -> dict:
    """The floor for an audit of `root`: a bare streaming polars scan of the same events and
    counters files (the columns the audit reads most), in a fresh process."""
    code = (
        "import polars as pl\n"
        "from tracer.schema import dataset_files\n"
        f"ev = [str(f) for f in dataset_files({str(root)!r}, 'events')]\n"
        f"co = [str(f) for f in dataset_files({str(root)!r}, 'counters')]\n"
        "a = pl.scan_parquet(ev).select(pl.col('depth').cast(pl.Int64).sum(), pl.col('trace_id').n_unique(),\n"
        "                               pl.col('probe').n_unique(), pl.col('errno').n_unique())\n"
        "b = pl.scan_parquet(co).select(pl.col('invocations').sum(), pl.col('probe').n_unique(),\n"
        "                               pl.col('errno_counts').list.len().sum())\n"
        "print(pl.collect_all([a, b], engine='streaming'))\n"
    )
    return measure([sys.executable, "-c", code])


def form_label(dataset: Path) -> str:
    """Which form of the pipeline's a dataset's events are in: day files across hosts (a closed
    day after `compact_days`), one file per host-day (compacted, or simulated), or more."""
    from collections import Counter

    from tracer.schema import dataset_files, is_day_file

    files = dataset_files(dataset, "events")
    days = [f for f in files if is_day_file(f)]
    per = Counter(f.parent for f in files if not is_day_file(f))
    most = max(per.values(), default=0)
    parts = []
    if days:
        parts.append(f"day layout: {len(days):,} day files across hosts")
    if per:
        parts.append(("one file per host-day" if most == 1 else f"up to {most} events files per host-day")
                     + (f" ({len(per):,} host partitions)" if days else ""))
    return " + ".join(parts) or "no events"


def audit_compare(dataset: Path, before: Path | None, repeat: int, work: str | None,
                  before_dataset: Path | None = None) -> int:
    """`baseline audit` of an existing dataset (e.g. a simulated 10,000-host day) with this
    checkout and optionally `before`, interleaved, each against the bare scan of the same files
    in the same run (best of `repeat` wall; peak RSS of that run). `before_dataset`: the before
    checkout audits that dataset instead (the same day in another form: main on the day as
    given, this checkout on it compacted across hosts), and its scan is measured too."""
    import pyarrow.parquet as pq

    from tracer.schema import counter_buckets_for, dataset_files

    events = sum(pq.read_metadata(f).num_rows for f in dataset_files(dataset, "events"))
    counter_files = dataset_files(dataset, "counters")
    counters = sum(pq.read_metadata(f).num_rows for f in counter_files)
    summarised = sum(counter_buckets_for(f) is not None for f in counter_files)
    roots = [("now", REPO)] + ([("before", before.resolve())] if before else [])
    data = {"now": dataset, "before": before_dataset or dataset}
    scans = ["scan"] + (["scan-before"] if before_dataset else [])
    best: dict[str, dict] = {}
    runs: dict[str, list[dict]] = {}
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        for _ in range(repeat):
            for name, root in [*((s, REPO) for s in scans), *roots]:
                if name.startswith("scan"):
                    r = scan_audit_reference(dataset if name == "scan" else data["before"])
                else:  # --refit: the model is learned from the dataset in both (no saved model used)
                    r = measure(BASELINE + ["audit", str(data[name]), "--refit", "--out", f"{tmp}/{name}"], root)
                runs.setdefault(name, []).append(r)
                if name not in best or r["wall_s"] < best[name]["wall_s"]:
                    best[name] = r
    ref = best["scan"]
    print(f"dataset {dataset} ({form_label(dataset)}): {events:,} events, {counters:,} counter rows in {len(counter_files):,} files "
          f"({summarised:,} with a matching counter_buckets summary); load average {load_start:.1f} at the "
          f"start, {os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs)")
    if before_dataset:
        print(f"before audits {before_dataset} ({form_label(before_dataset)}); scan-before is its bare scan")
    print(f"reference: bare polars scan of the same events and counters files: {ref['wall_s']:.2f} s "
          f"({ref['cpu_s']:.1f} CPU s), peak RSS {ref['peak_rss_mib']:.0f} MiB (best of {repeat})")
    for name, _root in roots:
        au = best[name]
        print(f"{name:7s} audit {au['wall_s']:.2f} s ({au['wall_s'] / ref['wall_s']:.1f}x the scan), "
              f"{au['cpu_s']:.1f} CPU s ({au['cpu_s'] / ref['cpu_s']:.1f}x), "
              f"peak RSS {au['peak_rss_mib']:.0f} MiB ({au['peak_rss_mib'] / 1024:.2f} GiB)")
    if repeat > 1:  # the wall time mostly measures the machine's load: every run's CPU and peak
        for name in (*scans, *(n for n, _ in roots)):
            print(f"  {name:11s} every run: " + ", ".join(
                f"{r['wall_s']:.1f} s / {r['cpu_s']:.1f} CPU s / {r['peak_rss_mib']:.0f} MiB" for r in runs[name]))
    if before:  # paired by round: the two ran minutes apart, under the same load
        cpu = [a["cpu_s"] / b["cpu_s"] for a, b in zip(runs["now"], runs["before"], strict=True)]
        wall = [a["wall_s"] / b["wall_s"] for a, b in zip(runs["now"], runs["before"], strict=True)]
        print("  now / before by round: CPU " + ", ".join(f"x{x:.2f}" for x in cpu)
              + "; wall " + ", ".join(f"x{x:.2f}" for x in wall))
    return 0


# --------------------------------------------------------------------------------------------
# the day as the scheduled pipeline stores it (--pipeline-forms)
# --------------------------------------------------------------------------------------------
# The pipeline (dags/trace_ingest.py, dags/baseline_audit.py) audits the ingested dataset, never
# the hosts' spool: ingest writes one part file per (table, date, host) partition per run (every
# 5 minutes) and compaction merges a partition once it holds `compact_min_files` (8) small files,
# so between compactions a partition holds 1-7 part files and after one a single file. A
# simulated day (`baseline simulate`) holds one file per partition: compaction's end state.
SPLIT_TABLES = ("events", "counters")


def split_partition(job: tuple[str, str, str, str, int]) -> int:
    """One dataset partition (table, date, host) of `src` written into `dst` as up to `parts` part
    files, as `parts` ingest runs of the day would have left it before a compaction: whole
    traces by the part of the partition's time span their first event starts in, counter rows by
    their snapshot time; each file named and footed as ingest names it (snapshot ids), each counters file with
    its counter_buckets summary (ingest writes both). Returns the files written."""
    import json as _json

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from baseline.pipeline.ingest import part_name
    from tracer.schema import conform, partition_path, write_counter_buckets, write_partition

    src, dst, table, date_host, parts = job
    date, host = date_host.split("/")
    files = sorted(partition_path(src, table, date, host, "x").parent.glob("*.parquet"))
    data = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
    if "host" not in data.column_names:
        data = data.append_column("host", pa.array([host] * data.num_rows, pa.string()))
    data = conform(data, table)
    if table == "events":  # a trace lands in one snapshot (the one it ended in): never split one
        start = data["start_time"].cast(pa.int64()).to_numpy()
        _, inverse = np.unique(data["trace_id"].to_numpy(zero_copy_only=False), return_inverse=True)
        first = np.full(inverse.max(initial=-1) + 1, np.iinfo(np.int64).max)
        np.minimum.at(first, inverse, start)
        when = first[inverse]
    else:
        when = data["snapshot_time"].cast(pa.int64()).to_numpy()
    # `parts` runs spread evenly over the partition's time (a day: one every 24 h / parts)
    low, span = (int(when.min()), int(when.max()) - int(when.min()) + 1) if len(when) else (0, 1)
    which = np.clip((when - low) * parts // span, 0, parts - 1)
    written = 0
    for k in range(parts):
        rows = data.filter(pa.array(which == k))
        if not rows.num_rows:
            continue
        ids = [f"{host}/snap-{date}-{k}"]
        out = write_partition(rows, dst, table, date, host, part_name(ids),
                              extra_metadata={"snapshots": _json.dumps(ids)}, durable=False)
        if table == "counters":
            write_counter_buckets(out, rows, durable=False)
        written += 1
    return written


def split_dataset(src: Path, dst: Path, parts: int, workers: int = 2) -> dict:
    """`src` with every events and counters partition split as `split_partition` does, in a
    fresh process (its process pool must not inherit our threads); the other tables (truth) and
    job logs are linked, so `baseline evaluate` scores the copy. Wall and CPU seconds."""
    code = (
        "import json, resource, sys, time\n"
        "from pathlib import Path\n"
        "from bench.bench_audit import split_partition, SPLIT_TABLES\n"
        "from tracer.pools import process_pool, results_in_order\n"
        f"src, dst, parts, workers = {str(src)!r}, {str(dst)!r}, {parts}, {workers}\n"
        "jobs = [(src, dst, t, f'{d.name[5:]}/{h.name[5:]}', parts) for t in SPLIT_TABLES\n"
        "        for d in sorted((Path(src) / t).glob('date=*')) for h in sorted(d.glob('host=*'))]\n"
        "t = time.perf_counter()\n"
        "with process_pool(workers, 'fork', 'split') as pool:\n"
        "    files = sum(results_in_order(pool, split_partition, jobs))\n"
        "ru = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]\n"
        "print(json.dumps({'partitions': len(jobs), 'files': files, 'wall_s': time.perf_counter() - t,\n"
        "                  'cpu_s': sum(r.ru_utime + r.ru_stime for r in ru)}))\n"
    )
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        if entry.name not in (*SPLIT_TABLES, "counter_buckets") and not entry.name.startswith("."):
            (dst / entry.name).symlink_to(entry.resolve())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout)


def day_compact_cost(dataset: Path) -> dict:
    """compact_days (the pipeline's tidy step for a closed day) of `dataset` in a fresh process:
    wall, CPU s, peak RSS and what it merged. Durable writes, as the pipeline's."""
    code = (
        "import datetime as dt, json, resource, time\n"
        "from baseline.pipeline.ingest import compact_days\n"
        "t = time.perf_counter()\n"
        f"r = compact_days({str(dataset)!r}, days_after=1, today=dt.date(9999, 1, 1))\n"
        "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(json.dumps({**r.to_dict(), 'wall_s': time.perf_counter() - t, 'cpu_s': ru.ru_utime + ru.ru_stime,\n"
        "                  'peak_rss_mib': ru.ru_maxrss / 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout)


def compact_cost(dataset: Path, min_files: int) -> dict:
    """compact_dataset (the pipeline's tidy step) of `dataset` in a fresh process: wall, CPU s
    and what it merged. Durable writes, as the pipeline's."""
    code = (
        "import json, resource, time\n"
        "from baseline.pipeline.ingest import compact_dataset\n"
        "t = time.perf_counter()\n"
        f"r = compact_dataset({str(dataset)!r}, min_files={min_files})\n"
        "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(json.dumps({**r.to_dict(), 'wall_s': time.perf_counter() - t, 'cpu_s': ru.ru_utime + ru.ru_stime}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout)


def dataset_shape(dataset: Path) -> dict:
    """Files per table and the most part files in one partition (what the audit opens)."""
    from collections import Counter

    from tracer.schema import dataset_files

    shape = {}
    for table in (*SPLIT_TABLES, "counter_buckets"):
        files = dataset_files(dataset, table)
        per = Counter(f.parent for f in files)
        shape[table] = {"files": len(files), "partitions": len(per), "max_per_partition": max(per.values(), default=0)}
    return shape


def audit_outputs(out: Path, dataset: Path) -> dict:
    """What two audits must agree on: the tables row for row (findings in their written order,
    clusters, host alerts) and `baseline evaluate`'s scores of the findings."""
    import hashlib

    import polars as pl

    digest = {}
    for table in ("findings", "clusters", "host_alerts"):
        df = pl.read_parquet(out / f"{table}.parquet")
        digest[table] = (df.height, hashlib.sha1(df.hash_rows(seed=1).to_numpy().tobytes()).hexdigest()[:16])
    r = subprocess.run(BASELINE + ["evaluate", str(dataset), "--findings", str(out), "--json"],
                       capture_output=True, text=True, cwd=REPO)
    digest["evaluate"] = r.stdout if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()[-200:]}"
    return digest


def pipeline_forms(dataset: Path, parts: int, repeat: int, work: str | None, modes: list[str],
                   keep: Path | None = None, compaction: bool = True, window_hours: float = 2.0,
                   day: bool = True) -> int:
    """The audit of `dataset` in the two forms the pipeline stores a day in, interleaved round by
    round: "compacted" (one file per host-day partition, `dataset` as given: a simulated day is
    in that form already) and "uncompacted" (the same rows as `parts` ingest runs leave them
    before a compaction: `parts` files per partition), plus the cost of that compaction; the
    audits' outputs compared. modes: "refit" (the model learned by the audit, as --audit does)
    and/or "model" (a model fitted once by `baseline learn`, as the pipeline's refresh_baseline
    task does before its audit task) and/or "window" (that model, and only the last
    `window_hours` of the day: the scheduled audit's `--since`, which still lists and opens every
    file of the day's partitions). compaction=False: no compacted copy (compacting a
    10,000-host day takes ~10 CPU minutes; measure compact_cost on a sample instead)."""
    shape = dataset_shape(dataset)
    if shape["events"]["max_per_partition"] != 1:
        print(f"note: {dataset} holds up to {shape['events']['max_per_partition']} events files per partition: "
              f"'compacted' below is the dataset as given")
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        base = keep or Path(tmp)
        split = base / f"uncompacted-{parts}"
        if not split.exists():
            built = split_dataset(dataset, split, parts)
            print(f"built {split}: {built['files']:,} part files from {built['partitions']:,} partitions in "
                  f"{built['wall_s']:.0f} s ({built['cpu_s']:.0f} CPU s)")
        compacted = base / f"compacted-{parts}"
        if compaction and not compacted.exists():
            subprocess.run(["cp", "-a", str(split), str(compacted)], check=True)
            cost = compact_cost(compacted, min_files=parts)
            print(f"compaction of the uncompacted day (compact_dataset, min_files={parts}): {cost['wall_s']:.1f} s wall, "
                  f"{cost['cpu_s']:.1f} CPU s; {cost['partitions']:,} partitions, {cost['files_in']:,} files in, "
                  f"{cost['files_out']:,} out")
        days = base / "compacted-across-hosts"
        if day and not days.exists():  # a closed day's end state: tidy's day compaction of the day as given
            subprocess.run(["cp", "-a", str(dataset), str(days)], check=True)
            cost = day_compact_cost(days)
            print(f"day compaction of the day as given (compact_days): {cost['wall_s']:.1f} s wall, "
                  f"{cost['cpu_s']:.1f} CPU s, peak RSS {cost['peak_rss_mib']:.0f} MiB; {cost['days']} days, "
                  f"{cost['day_files_in']:,} files in, {cost['day_files_out']:,} day files out"
                  + (f"; left: {cost['days_left']}" if cost["days_left"] else ""))
        forms = [("compacted (as given)", dataset), (f"uncompacted ({parts} parts)", split)]
        forms += [("compacted by tidy", compacted)] if compaction else []
        forms += [("day files across hosts", days)] if day else []
        dates = sorted(d.name.removeprefix("date=") for d in (dataset / "events").glob("date=*"))
        hh = 24 - window_hours
        window_since = f"{dates[-1]}T{int(hh):02d}:{int(hh % 1 * 60):02d}:00Z"
        for name, ds in forms:
            sh = dataset_shape(ds)
            print(f"  {name:24s} [{form_label(ds)}] " + ", ".join(f"{t} {v['files']:,} files (<= {v['max_per_partition']} a partition)"
                                                for t, v in sh.items()))
        model = Path(tmp) / "model.parquet"
        if {"model", "window"} & set(modes):
            subprocess.run(BASELINE + ["learn", str(dataset), "-o", str(model)], check=True,
                           stdout=subprocess.DEVNULL, cwd=REPO)
        runs: dict[tuple[str, str], list[dict]] = {}
        outputs: dict[tuple[str, str], dict] = {}
        load_start = os.getloadavg()[0]
        for r in range(repeat):
            for mode in modes:
                for name, ds in forms:
                    out = Path(tmp) / f"out-{mode}-{len(runs)}-{r}"
                    how = ["--refit"] if mode == "refit" else ["--model", str(model)]
                    how += ["--since", window_since] if mode == "window" else []
                    runs.setdefault((mode, name), []).append(measure(BASELINE + ["audit", str(ds), *how, "--out", str(out)]))
                    if r == 0:
                        outputs[(mode, name)] = audit_outputs(out, ds)
                    shutil.rmtree(out, ignore_errors=True)
        if "window" in modes:
            print(f"window: --since {window_since} (the last {window_hours:g} h of the day's last date)")
        print(f"load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs); "
              f"{repeat} rounds interleaved (every run: wall / CPU s / peak RSS)")
        for mode in modes:
            ref = runs[(mode, forms[0][0])]
            for name, _ds in forms:
                rs = runs[(mode, name)]
                ratio = [b["cpu_s"] / a["cpu_s"] for a, b in zip(ref, rs, strict=True)]
                same = outputs[(mode, name)] == outputs[(mode, forms[0][0])]
                print(f"  {mode:6s} {name:24s} " + ", ".join(
                    f"{x['wall_s']:.1f} s / {x['cpu_s']:.1f} / {x['peak_rss_mib']:.0f} MiB" for x in rs)
                    + f"; CPU x{min(ratio):.2f}-{max(ratio):.2f} of compacted by round; outputs "
                    + ("identical" if same else f"DIFFER: {outputs[(mode, name)]}"))
        print(f"  outputs: {json.dumps({k: v for k, v in outputs[(modes[0], forms[0][0])].items() if k != 'evaluate'})}")
    return 0


# run_audit's stages, in order (functions of these modules wrapped by audit_stages)
AUDIT_STAGES = (("baseline.fleet.audit", ("counter_sources", "counter_buckets", "collect_traces")),
                ("baseline.fleet.expected", ("release_history", "expected_from_traces")),
                ("baseline.fleet.audit", ("host_alerts", "_filter_by_column", "_findings_of_failing", "cluster_findings",
                                          "write_audit")))
STAGES_CODE = """
import concurrent.futures, importlib, json, os, resource, sys, threading, time
stage, peaks, spent, side = ["start"], {}, {}, {}
MAIN = threading.main_thread()
clock = [time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF), time.thread_time()]
def charge(name):  # wall, CPU of all threads and of the main thread, page faults since the last boundary, to `name`
    now, ru, main = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
    t0, r0, m0 = clock
    s = spent.setdefault(name, {"wall_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "minflt": 0, "main_s": 0.0, "wait_s": 0.0})
    s["wall_s"] += now - t0
    s["user_s"] += ru.ru_utime - r0.ru_utime
    s["sys_s"] += ru.ru_stime - r0.ru_stime
    s["minflt"] += ru.ru_minflt - r0.ru_minflt
    s["main_s"] += main - m0
    clock[:] = [now, ru, main]
waited = {}
_result = concurrent.futures.Future.result
def result(self, timeout=None):  # the main thread's waits on other threads (read-ahead, stages run beside it)
    if threading.current_thread() is not MAIN:
        return _result(self, timeout)
    t = time.perf_counter()
    try:
        return _result(self, timeout)
    finally:
        waited[stage[0]] = waited.get(stage[0], 0.0) + time.perf_counter() - t
concurrent.futures.Future.result = result
def rollup():
    out = {}
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            key, value = line.split()[:2]
            if key in ("Rss:", "Anonymous:", "LazyFree:"):
                out[key[:-1]] = int(value) // 1024
    return out
def record():
    r, s = rollup(), stage[0]
    if r["Rss"] > peaks.get(s, {"Rss": -1})["Rss"]:
        peaks[s] = r
def sample():
    while True:
        record()
        time.sleep(0.01)
def wrap(module, name):
    fn = getattr(module, name, None)
    if fn is None:
        return
    def inner(*a, **k):  # a sample at each stage's start and end too (a stage may take < 10 ms)
        if threading.current_thread() is not MAIN:  # a stage run beside the main thread: its own wall and CPU
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                s = side.setdefault(name, {"wall_s": 0.0, "thread_s": 0.0})
                s["wall_s"] += time.perf_counter() - t
                s["thread_s"] += time.thread_time() - c
        if stage[0] == name:  # a recursive or nested call of the same stage: charged to the outer one
            return fn(*a, **k)
        outer = stage[0]
        charge(outer)
        stage[0] = name
        record()
        try:
            return fn(*a, **k)
        finally:
            record()
            charge(name)
            stage[0] = "after " + name if not outer or outer.startswith("after ") or outer == "start" else outer
    setattr(module, name, inner)
for module, names in STAGES:
    for name in names:
        wrap(importlib.import_module(module), name)
if SAMPLE:
    threading.Thread(target=sample, daemon=True).start()
from baseline.fleet.audit import run_audit
t = time.perf_counter()
run_audit(DATASET, OUT)
wall = time.perf_counter() - t
charge(stage[0])
time.sleep(0.05)
ru = resource.getrusage(resource.RUSAGE_SELF)
for name, w in waited.items():
    spent.setdefault(name, {"wall_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "minflt": 0, "main_s": 0.0, "wait_s": 0.0})
    spent[name]["wait_s"] = w
print(json.dumps({"stages": peaks, "spent": spent, "side": side, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mib": ru.ru_maxrss / 1024, "minflt": ru.ru_minflt}))
"""


def audit_stages(dataset: Path, work: str | None, code_root: Path = REPO, sample: bool = True) -> dict:
    """run_audit of `dataset` in a fresh process with a thread sampling its memory every 10 ms:
    per stage (AUDIT_STAGES; "after X": between X and the next stage) the sample of highest RSS,
    with the anonymous memory and the MADV_FREEd pages (LazyFree, still counted in the RSS) in it.
    The allocator is configured as the baseline CLI configures it. Without `sample`, memory is
    read at the stages' boundaries only: the sampler's reads of smaps_rollup walk the page tables
    under the lock page faults take too, and inflate the stages' system CPU time."""
    sys.path.insert(0, str(code_root))
    from baseline.cli import configure_allocator

    env = dict(os.environ)
    configure_allocator(env)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        code = (f"STAGES = {AUDIT_STAGES!r}\nDATASET = {str(dataset)!r}\nOUT = {tmp + '/audit'!r}\nSAMPLE = {sample!r}\n"
                + STAGES_CODE)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=code_root, env=env,
                             check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_stages(dataset: Path, work: str | None, sample: bool = True) -> int:
    r = audit_stages(dataset, work, sample=sample)
    print(f"run_audit of {dataset} in-process: {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU s, peak RSS "
          f"{r['peak_rss_mib']:.0f} MiB; load average {os.getloadavg()[0]:.1f}. Highest RSS sample per stage (MiB):")
    print(f"  {'stage':32s} {'RSS':>6s} {'anon':>6s} {'LazyFree':>8s} {'wall s':>7s} {'user s':>7s} {'sys s':>6s} "
          f"{'faults':>9s} {'main s':>7s} {'wait s':>7s}")
    none = {"wall_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "minflt": 0, "main_s": 0.0, "wait_s": 0.0}
    for name in dict.fromkeys([*r["stages"], *r["spent"]]):
        if name not in r["spent"] or r["spent"][name]["wall_s"] < 0.005 and r["stages"].get(name, {}).get("Rss", 0) == 0:
            continue  # a stage boundary with nothing between it and the next stage
        m, t = r["stages"].get(name, {"Rss": 0, "Anonymous": 0, "LazyFree": 0}), r["spent"].get(name, none)
        print(f"  {name:32s} {m['Rss']:6d} {m['Anonymous']:6d} {m['LazyFree']:8d} {t['wall_s']:7.2f} "
              f"{t['user_s']:7.2f} {t['sys_s']:6.2f} {t['minflt']:9,} {t['main_s']:7.2f} {t['wait_s']:7.2f}")
    # main s: the main thread's own CPU (time.thread_time); wait s: its waits on other threads'
    # futures. Their sum is the part of the critical path the load does not stretch much; the rest
    # of the main thread's wall is its waits inside polars/pyarrow calls (their pools' work)
    main = sum(t["main_s"] for t in r["spent"].values())
    wait = sum(t["wait_s"] for t in r["spent"].values())
    print(f"  main thread: {main:.2f} CPU s + {wait:.2f} s waiting on other threads = {main + wait:.2f} s")
    for name, t in r.get("side", {}).items():
        print(f"  beside the main thread: {name:24s} {t['wall_s']:7.2f} s wall, {t['thread_s']:7.2f} CPU s of its thread")
    return 0


# run_audit's stages for --timeline (main-thread calls of these functions; "after X" is the time
# between X and the next stage: e.g. "after collect_traces" is the wait for the counters' thread)
TIMELINE_STAGES = (("baseline.fleet.audit", ("collect_traces",)),
                   ("baseline.fleet.expected", ("release_history", "expected_from_traces")),
                   ("baseline.fleet.audit", ("host_alerts", "_filter_by_column", "_findings_of_failing", "cluster_findings",
                                             "write_audit")))
TIMELINE_CODE = """
import importlib, json, os, resource, threading, time
stage, MAIN, MAINTID = ["start"], threading.main_thread(), threading.get_native_id()
def wrap(module, name):
    fn = getattr(module, name, None)
    if fn is None:
        return
    def inner(*a, **k):
        if threading.current_thread() is not MAIN or stage[0] == name:
            return fn(*a, **k)
        outer, stage[0] = stage[0], name
        samples.append((time.perf_counter(), name, snap()))  # a sample at each stage's start and end
        try:                                                   # too: a stage may end within one period
            return fn(*a, **k)
        finally:
            stage[0] = "after " + name if outer == "start" or outer.startswith("after ") else outer
            samples.append((time.perf_counter(), stage[0], snap()))
    setattr(module, name, inner)
for module, names in STAGES:
    for name in names:
        wrap(importlib.import_module(module), name)
samples, done, me = [], threading.Event(), [0]
def snap():  # per thread: (name, ns on a core, ns runnable on a run queue) from schedstat
    # key 0: the process's CPU less the sampler's (threads that ended between two samples too)
    out, process_ns, sampler_ns = {}, time.process_time_ns(), 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me[0]:
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    sampler_ns = int(f.read().split()[0])
            except (OSError, ValueError):
                pass
            continue
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
            with open(f"/proc/self/task/{tid}/comm") as f:
                comm = f.read().strip()
        except (OSError, ValueError):
            continue
        out[int(tid)] = (comm, int(run), int(wait))
    out[0] = ("(process)", process_ns - sampler_ns, 0)
    return out
peaks, PAGE = {}, os.sysconf("SC_PAGE_SIZE")
def sampler():
    me[0] = threading.get_native_id()
    while not done.is_set():
        st = stage[0]
        samples.append((time.perf_counter(), st, snap()))
        with open("/proc/self/statm") as f:  # (not smaps_rollup: statm walks no page tables)
            rss = int(f.read().split()[1]) * PAGE / 2**20
        peaks[st] = max(peaks.get(st, 0.0), rss)
        time.sleep(PERIOD)
from baseline.fleet.audit import run_audit
threading.Thread(target=sampler, daemon=True).start()
t0, c0 = time.perf_counter(), os.times()
result = run_audit(DATASET, OUT)
wall, c1 = time.perf_counter() - t0, os.times()
done.set()
time.sleep(PERIOD * 2)
samples.append((time.perf_counter(), "end", snap()))
samples.sort(key=lambda s: s[0])  # the sampler's and the stages' own, in time order
per = {}
# Each thread's counters as a running maximum: the sampler's and a stage's snapshots overlap in
# time, so one started later may have read a thread before the other did (a negative delta).
seen = {t: (v[1], v[2]) for t, v in samples[0][2].items()}
for (ta, st, _), (tb, _, b) in zip(samples, samples[1:]):
    dt = tb - ta
    ran, waited = {}, {}
    for t, (_comm, run_ns, wait_ns) in b.items():
        run_before, wait_before = seen.get(t, (0, 0))
        ran[t], waited[t] = max(0, run_ns - run_before), max(0, wait_ns - wait_before)
        seen[t] = (max(run_before, run_ns), max(wait_before, wait_ns))
    # the process's CPU in the interval: more than its live threads' when one ended since the
    # last sample (a pool's short-lived worker: the stage's CPU all the same)
    process, _ = ran.pop(0, 0), waited.pop(0, 0)
    run = sum(ran.values())
    want = run + sum(waited.values())
    s = per.setdefault(st, dict.fromkeys(("wall_s", "cpu_s", "runnable_s", "serial_cpu_s", "serial_wall_s",
                                          "two_core_s", "main_cpu_s"), 0.0) | {"threads": {}})
    s["wall_s"] += dt
    s["cpu_s"] += max(run, process) / 1e9
    s["runnable_s"] += want / 1e9
    s["two_core_s"] += max(run / 2, max(ran.values(), default=0)) / 1e9
    s["main_cpu_s"] += ran.get(MAINTID, 0) / 1e9
    if want / 1e9 < 1.5 * dt:
        s["serial_cpu_s"] += run / 1e9
        s["serial_wall_s"] += dt
    for t, ns in ran.items():
        if ns:
            key = "main" if t == MAINTID else b[t][0].rstrip("0123456789-_ ") or b[t][0]
            s["threads"][key] = s["threads"].get(key, 0.0) + ns / 1e9
for st, rss in peaks.items():
    per.setdefault(st, dict.fromkeys(("wall_s", "cpu_s", "runnable_s", "serial_cpu_s", "serial_wall_s",
                                      "two_core_s", "main_cpu_s"), 0.0) | {"threads": {}})["rss_mib"] = rss
print(json.dumps({"stages": per, "wall_s": wall, "cpu_s": c1.user + c1.system - c0.user - c0.system,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "load": os.getloadavg()[0]}))
"""


def audit_timeline(dataset: Path, out: Path, code_root: Path = REPO, period: float = 0.05) -> dict:
    """run_audit of `dataset` (outputs into `out`) in a fresh process of `code_root`'s checkout,
    with a thread reading every thread's /proc/self/task/*/schedstat every `period` s: per stage,
    wall, CPU of all threads (the process's, less the sampler's: threads that ended between two
    samples too), runnable thread-seconds (on a core or waiting for one: a figure other
    processes' load does not change), "serial" CPU and wall (intervals in which fewer than 1.5
    threads were runnable on average: one thread's work, whatever the load), a two-core estimate
    (each interval's max(CPU / 2, its busiest thread's CPU)), the main thread's CPU and each
    thread name's CPU and the highest RSS sampled (/proc/self/statm). The allocator is configured as the baseline CLI configures it."""
    sys.path.insert(0, str(code_root))
    from baseline.cli import configure_allocator

    env = dict(os.environ)
    configure_allocator(env)
    env["PYTHONPATH"] = str(code_root)
    code = (f"STAGES = {TIMELINE_STAGES!r}\nDATASET = {str(dataset)!r}\nOUT = {str(out)!r}\nPERIOD = {period!r}\n"
            + TIMELINE_CODE)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=code_root, env=env)
    if r.returncode != 0:
        raise SystemExit(f"timeline of {dataset} in {code_root} failed: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def print_timeline(dataset: Path, before: Path | None, repeat: int, work: str | None) -> int:
    import hashlib

    import polars as pl

    checkouts = [("this", REPO)] + ([("before", before)] if before else [])
    runs: dict[str, list] = {name: [] for name, _ in checkouts}
    digests: dict[str, set] = {name: set() for name, _ in checkouts}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        for i in range(repeat):
            for name, root in checkouts:  # interleaved: each round runs every checkout once
                out = Path(tmp) / f"{name}-{i}"
                r = audit_timeline(dataset, out, root)
                runs[name].append(r)
                digests[name].add(tuple(
                    (t, hashlib.sha1(pl.read_parquet(out / f"{t}.parquet").hash_rows(seed=1).to_numpy().tobytes())
                     .hexdigest()[:16]) for t in ("findings", "clusters", "host_alerts")))
                shutil.rmtree(out)
                tot = {k: sum(s[k] for s in r["stages"].values()) for k in ("serial_cpu_s", "two_core_s", "runnable_s")}
                print(f"round {i + 1} {name}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s, "
                      f"{tot['serial_cpu_s']:.2f} serial CPU s, two-core estimate {tot['two_core_s']:.1f} s, "
                      f"{tot['runnable_s'] / r['wall_s']:.2f} threads runnable on average, "
                      f"peak {r['peak_rss_mib']:.0f} MiB, load {r['load']:.1f}", flush=True)
                print(f"  {'stage':28s} {'wall s':>7s} {'CPU s':>6s} {'serial':>6s} {'ser. wall':>9s} "
                      f"{'2-core':>6s} {'main':>5s} {'RSS':>5s}  CPU by thread")
                for stage, s in r["stages"].items():
                    top = sorted(s["threads"].items(), key=lambda kv: -kv[1])[:4]
                    print(f"  {stage:28s} {s['wall_s']:7.2f} {s['cpu_s']:6.2f} {s['serial_cpu_s']:6.2f} "
                          f"{s['serial_wall_s']:9.2f} {s['two_core_s']:6.2f} {s['main_cpu_s']:5.2f} "
                          f"{s.get('rss_mib', 0):5.0f}  "
                          + ", ".join(f"{k} {v:.1f}" for k, v in top), flush=True)
    for name, _ in checkouts:
        serial = sorted(sum(s["serial_cpu_s"] for s in r["stages"].values()) for r in runs[name])
        cpu = sorted(r["cpu_s"] for r in runs[name])
        print(f"{name}: serial CPU s {', '.join(f'{x:.2f}' for x in serial)}; CPU s {', '.join(f'{x:.1f}' for x in cpu)}; "
              f"outputs {'the same in every run' if len(digests[name]) == 1 else 'DIFFER between runs'}")
    if before:
        print("outputs (findings row for row, clusters, host alerts): "
              + ("identical" if digests["this"] == digests["before"] else "DIFFER"))
    return 0


QUALITY_KEYS = ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
                "false_findings_on_good", "routine_set_aside", "routine_open_findings", "false_findings",
                "expected_error_precision", "expected_error_recall")


QUALITY_GENERATORS = ("simulate", "fleetgen", "fleetgen3", "fleetgen4", "fleetgen5", "fleetgen6", "fleetgen7",
                      "fleetgen8", "fleetgen9", "fleetgen10", "fleetgen11", "fleetgen12", "fleetgen13", "fleetgen14",
                      "fleetgen15", "fleetgen16", "fleetgen17", "fleetgen18", "fleetgen19", "fleetgen20",
                      "fleetgen21")


def _generate(package: str, root: Path, hosts: int, hours: float, seed: int) -> None:
    code = ("import sys, json\n"
            f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
            f"from {package} import generate\n"
            f"print(json.dumps(generate({str(root)!r}, hosts={hosts}, hours={hours}, seed={seed})))\n")
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)


def _false_host_alerts(name: str, root: Path, alerts) -> int:
    """Host alerts on hosts without a host-level fault (fleetgen), or (fleetgen3) also alerts
    whose errno is not one the host's fault shows; -1 for the simulator (not scored)."""
    import polars as pl

    if name == "fleetgen":
        truth_hosts = set(json.loads((root / "fleetgen.json").read_text())["alert_hosts"])
        return alerts.filter(~pl.col("host").is_in(list(truth_hosts))).height
    if name in ("fleetgen3", "fleetgen4", "fleetgen5", "fleetgen6", "fleetgen7", "fleetgen8"):
        truth = json.loads((root / f"{name}.json").read_text())["alert_hosts"]
        return sum(1 for host, errno in alerts.select("host", "errno").iter_rows()
                   if host not in truth or (errno is not None and errno not in truth[host]))
    if name == "fleetgen9":
        # a rising alert on the two hosts whose routine EAGAIN jumped is tolerated (see its docstring)
        summary = json.loads((root / "fleetgen9.json").read_text())
        truth, tolerated = summary["alert_hosts"], summary["tolerated_alerts"]
        return sum(1 for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows()
                   if not (host in truth and errno in truth[host])
                   and not (host in tolerated and alert == "rising_errno_rate" and errno in tolerated[host]))
    if name in ("fleetgen11", "fleetgen12"):
        # fleetgen11: a drained host's EIO and the out-of-tree driver's ENOTSUPP on its four hosts
        # are tolerated; fleetgen12: EAGAIN on a firmware 28.41 host. A persistent bad state
        # names its probe, not an errno (see their generators)
        summary = json.loads((root / f"{name}.json").read_text())
        truth, tolerated = summary["alert_hosts"], summary["tolerated_alerts"]
        return sum(1 for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows()
                   if not (host in tolerated and errno in (*tolerated[host], None))
                   and not (host in truth and (errno in truth[host] or (errno is None and alert == "persistent_bad_state"))))
    if name in ("fleetgen13", "fleetgen14", "fleetgen15", "fleetgen16", "fleetgen17", "fleetgen18", "fleetgen19",
                "fleetgen20", "fleetgen21"):
        # `alert_hosts` is what is acceptable (fleetgen13: the rare fault's host, the upgraded hosts'
        # regression besides the two that must alert; fleetgen14: the mkey hosts' EAGAIN and the
        # ARP-dropping rack's ETIMEDOUT besides the port's and the leak's hosts; fleetgen17: the
        # cold-init hosts' ETIMEDOUT besides the QP-limit host; fleetgen18: the irdma hosts'
        # ENOMEM besides the culprit's EIO; fleetgen19: the leaf switch's rack's ETIMEDOUT and the
        # second wave's EINVAL besides the storm host's ENOMEM; fleetgen20: the upgraded ConnectX-7
        # hosts' EBUSY and the ConnectX-6 Dx hosts' EOPNOTSUPP besides the broken NIC's EIO; fleetgen21: the
        # tight-cgroup hosts' EAGAIN and the 560 driver's hosts' ENOMEM besides the bad port's ETIMEDOUT); a persistent bad
        # state names its probe, not an errno; fleetgen21's slow host is what a rising_latency alert is for
        summary = json.loads((root / f"{name}.json").read_text())
        truth, slow = summary["alert_hosts"], summary.get("slow_host")
        return sum(1 for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows()
                   if not (host in truth and (errno in truth[host] or (errno is None and alert == "persistent_bad_state")))
                   and not (host == slow and alert == "rising_latency"))
    if name == "fleetgen10":
        # any alert on a host whose peer client was reloaded (3 minutes down) is tolerated; a
        # persistent bad state names its probe, not an errno (see its generator's docstring)
        summary = json.loads((root / "fleetgen10.json").read_text())
        truth, tolerated = summary["alert_hosts"], summary["tolerated_alerts"]
        return sum(1 for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows()
                   if not (host in tolerated and errno in (*tolerated[host], None))
                   and not (host in truth and (errno in truth[host] or (errno is None and alert == "persistent_bad_state"))))
    return -1


def _required_alert_hosts(summary: dict) -> dict | list:
    """The hosts a generator's truth says must alert: `required_alert_hosts` where the generator
    tells it apart from `alert_hosts` (fleetgen3, 5, 6, 8, 13, 14, 15, 16, 17, 18, 19, 20, 21: there `alert_hosts` is what is
    acceptable, every host with a fault of its own or a share of a fleet's cause), else
    `alert_hosts` (fleetgen, 4, 7, 9, 10, 11 name only hosts that must alert)."""
    return summary.get("required_alert_hosts", summary["alert_hosts"])


def _missed_host_alerts(name: str, root: Path, alerts) -> int:
    """Hosts the generator's truth says must alert (`_required_alert_hosts`) on which the audit
    raised no alert showing the host's fault, by the rule `_false_host_alerts` applies to that
    generator: for fleetgen any alert on the host, for fleetgen3-14 one whose errno is one the
    host's fault shows or a persistent bad state (which names a probe, not an errno), except for
    fleetgen9, whose truth asks for the errno; -1 for the simulator (its truth names no alert hosts)."""
    if name == "simulate":
        return -1
    truth = _required_alert_hosts(json.loads((root / f"{name}.json").read_text()))
    seen: dict[str, set] = {}
    for host, alert, errno in alerts.select("host", "alert", "errno").iter_rows():
        seen.setdefault(host, set()).add(None if errno is None and alert == "persistent_bad_state" else errno)
    if name == "fleetgen":
        return sum(1 for host in truth if host not in seen)
    bad_state_counts = name != "fleetgen9"
    return sum(1 for host, errnos in truth.items()
               if not (seen.get(host, set()) & (set(errnos) | ({None} if bad_state_counts else set()))))


def quality(tmp: Path, hosts: int, hours: float, seed: int, seed3: int = 3, seed4: int = 4, seed5: int = 5,
            seed6: int = 6, seed7: int = 7, seed8: int = 8, seed9: int = 9, seed10: int = 10,
            seed11: int = 11, seed12: int = 12, seed13: int = 13, seed14: int = 14, seed15: int = 15,
            seed16: int = 16, seed17: int = 17, seed18: int = 18, seed19: int = 19, seed20: int = 20,
            seed21: int = 21) -> dict:
    """evaluate scores of the audit on the simulator's and the twenty fleetgens' data (same size)."""
    import polars as pl

    out = {}
    sim = tmp / "q-simulate"
    simulate(sim, hosts, hours, None, 1)
    gen, gen3, gen4, gen5 = tmp / "q-fleetgen", tmp / "q-fleetgen3", tmp / "q-fleetgen4", tmp / "q-fleetgen5"
    gen6, gen7, gen8, gen9 = tmp / "q-fleetgen6", tmp / "q-fleetgen7", tmp / "q-fleetgen8", tmp / "q-fleetgen9"
    gen10, gen11, gen12, gen13 = tmp / "q-fleetgen10", tmp / "q-fleetgen11", tmp / "q-fleetgen12", tmp / "q-fleetgen13"
    _generate("fleetgen", gen, hosts, hours, seed)
    _generate("fleetgen3", gen3, hosts, hours, seed3)
    _generate("fleetgen4", gen4, hosts, hours, seed4)
    _generate("fleetgen5", gen5, hosts, hours, seed5)
    _generate("fleetgen6", gen6, hosts, hours, seed6)
    _generate("fleetgen7", gen7, hosts, hours, seed7)
    _generate("fleetgen8", gen8, hosts, hours, seed8)
    _generate("fleetgen9", gen9, hosts, hours, seed9)
    _generate("fleetgen10", gen10, hosts, hours, seed10)
    _generate("fleetgen11", gen11, hosts, hours, seed11)
    _generate("fleetgen12", gen12, hosts, hours, seed12)
    _generate("fleetgen13", gen13, hosts, hours, seed13)
    gen14 = tmp / "q-fleetgen14"
    _generate("fleetgen14", gen14, hosts, hours, seed14)
    gen15 = tmp / "q-fleetgen15"
    _generate("fleetgen15", gen15, hosts, hours, seed15)
    gen16 = tmp / "q-fleetgen16"
    _generate("fleetgen16", gen16, hosts, hours, seed16)
    gen17 = tmp / "q-fleetgen17"
    _generate("fleetgen17", gen17, hosts, hours, seed17)
    gen18 = tmp / "q-fleetgen18"
    _generate("fleetgen18", gen18, hosts, hours, seed18)
    gen19 = tmp / "q-fleetgen19"
    _generate("fleetgen19", gen19, hosts, hours, seed19)
    gen20 = tmp / "q-fleetgen20"
    _generate("fleetgen20", gen20, hosts, hours, seed20)
    gen21 = tmp / "q-fleetgen21"
    _generate("fleetgen21", gen21, hosts, hours, seed21)
    for name, root in zip(QUALITY_GENERATORS, (sim, gen, gen3, gen4, gen5, gen6, gen7, gen8, gen9, gen10, gen11, gen12, gen13,
                                                     gen14, gen15, gen16, gen17, gen18, gen19, gen20, gen21),
                          strict=True):
        audit = measure(BASELINE + ["audit", str(root), "--out", str(root / "audit")])
        ev = subprocess.run(BASELINE + ["evaluate", str(root), "--findings", str(root / "audit"), "--json"],
                            capture_output=True, text=True, cwd=REPO, check=True)
        scores = json.loads(ev.stdout)
        alerts = pl.read_parquet(root / "audit" / "host_alerts.parquet")
        out[name] = {k: scores[k] for k in QUALITY_KEYS} | {
            "audit_wall_s": round(audit["wall_s"], 1), "failures_scored": scores["failures_scored"],
            "routine_traces": scores["routine_traces"], "host_alerts": alerts.height,
            # the fleetgens know which hosts have a real host-level problem (the simulator: not scored)
            "false_host_alerts": _false_host_alerts(name, root, alerts),
            # recall: hosts with a host-level fault the audit did not alert on
            "missed_host_alerts": _missed_host_alerts(name, root, alerts),
            # (the hosts that must alert: see _required_alert_hosts)
            "truth_alert_hosts": -1 if name == "simulate" else len(_required_alert_hosts(
                json.loads((root / f"{name}.json").read_text()))),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--learn-events", type=int, default=100_000_000, help="events in the learn dataset")
    # 200 hosts cap at ~15.6M events (every successful call captured): 100M events need ~2,000
    p.add_argument("--learn-hosts", type=int, default=2000,
                   help="hosts of the learn dataset (default 2000: enough calls for --learn-events 1e8)")
    p.add_argument("--audit-hosts", type=int, default=10_000, help="fleet size for the one-day audit")
    p.add_argument("--audit-hours", type=float, default=24.0)
    p.add_argument("--workers", type=int, default=1, help="simulator worker processes")
    p.add_argument("--dir", help="work directory (default: a temp dir, removed)")
    p.add_argument("--audit-dataset", metavar="DIR",
                   help="audit this existing fleet dataset instead of simulating one (e.g. a kept fleet-day)")
    p.add_argument("--datasets", metavar="DIR", nargs=2,
                   help="learn on the first, audit the second existing dataset (no simulation)")
    p.add_argument("--audit", metavar="DATASET",
                   help="audit this existing dataset only (e.g. a simulated 10,000-host day), against the bare "
                        "scan of its events and counters in the same run; with --before, also the before checkout")
    p.add_argument("--pipeline-forms", metavar="DATASET",
                   help="audit this day in both forms the scheduled pipeline stores it in: compacted (one file per "
                        "host-day partition, as given) and uncompacted (--parts files per partition, as ingest's "
                        "runs leave it before a compaction), interleaved; the compaction's own cost; outputs compared")
    p.add_argument("--parts", type=int, default=4,
                   help="with --pipeline-forms: part files per partition before compaction (ingest writes one a "
                        "run; the pipeline compacts at 8: between 1 and 7, 4 on average)")
    p.add_argument("--modes", default="refit,model,window",
                   help="with --pipeline-forms: refit (the audit learns the model, as --audit), model (a model "
                        "from `baseline learn`, as the pipeline's refresh_baseline task), window (that model and "
                        "the last --window-hours only, as the hourly scheduled audit)")
    p.add_argument("--no-day", action="store_true",
                   help="with --pipeline-forms: no day-compacted copy (compact_days across hosts)")
    p.add_argument("--before-dataset", metavar="DIR",
                   help="with --audit and --before: the before checkout audits DIR (the same day in another form)")
    p.add_argument("--no-compaction", action="store_true",
                   help="with --pipeline-forms: no compacted copy (its cost: ~10 CPU minutes for 10,000 hosts)")
    p.add_argument("--window-hours", type=float, default=2.0,
                   help="with --pipeline-forms and the window mode: the audit's window (the pipeline's "
                        "audit_window_hours, 2)")
    p.add_argument("--keep", metavar="DIR",
                   help="with --pipeline-forms: build (or reuse) the uncompacted and compacted copies here")
    p.add_argument("--stages", metavar="DATASET",
                   help="run_audit of this dataset in-process in a fresh process: the highest RSS sampled in each "
                        "stage (where the audit's peak is), with its anonymous and MADV_FREEd (LazyFree) parts, and "
                        "each stage's wall, user and system CPU seconds (all threads) and page faults")
    p.add_argument("--timeline", metavar="DATASET",
                   help="run_audit of this dataset with every thread's schedstat sampled every 50 ms: per stage the "
                        "CPU, the serial CPU (seconds in which one thread was runnable: what a second core cannot "
                        "speed up, a figure the machine's load does not change) and a two-core estimate; with "
                        "--before and --repeat, interleaved with that checkout's runs")
    p.add_argument("--no-sampler", action="store_true",
                   help="with --stages: memory read at the stages' boundaries only, not every 10 ms (the sampler's "
                        "reads of /proc/self/smaps_rollup add system CPU time to the stages it samples)")
    p.add_argument("--before", metavar="CHECKOUT",
                   help="with --datasets, --audit or --timeline: also run the commands from this checkout (e.g. a worktree at "
                        "the previous commit), interleaved with this one's, in the same run")
    p.add_argument("--repeat", type=int, default=1,
                   help="with --datasets, --audit or --timeline: measurements per command (best kept)")
    p.add_argument("--only", choices=["learn"], help="with --datasets: the learn figures only (no audit)")
    p.add_argument("--quality", action="store_true", help="only: evaluate scores on the twenty-one generators")
    p.add_argument("--quality-hosts", type=int, default=300)
    p.add_argument("--quality-hours", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=9, help="fleetgen seed for --quality")
    p.add_argument("--seed3", type=int, default=3, help="fleetgen3 seed for --quality")
    p.add_argument("--seed4", type=int, default=4, help="fleetgen4 seed for --quality")
    p.add_argument("--seed5", type=int, default=5, help="fleetgen5 seed for --quality")
    p.add_argument("--seed6", type=int, default=6, help="fleetgen6 seed for --quality")
    p.add_argument("--seed7", type=int, default=7, help="fleetgen7 seed for --quality")
    p.add_argument("--seed8", type=int, default=8, help="fleetgen8 seed for --quality")
    p.add_argument("--seed9", type=int, default=9, help="fleetgen9 seed for --quality")
    p.add_argument("--seed10", type=int, default=10, help="fleetgen10 seed for --quality")
    p.add_argument("--seed11", type=int, default=11, help="fleetgen11 seed for --quality")
    p.add_argument("--seed12", type=int, default=12, help="fleetgen12 seed for --quality")
    p.add_argument("--seed13", type=int, default=13, help="fleetgen13 seed for --quality")
    p.add_argument("--seed14", type=int, default=14, help="fleetgen14 seed for --quality")
    p.add_argument("--seed15", type=int, default=15, help="fleetgen15 seed for --quality")
    p.add_argument("--seed16", type=int, default=16, help="fleetgen16 seed for --quality")
    p.add_argument("--seed17", type=int, default=17, help="fleetgen17 seed for --quality")
    p.add_argument("--seed18", type=int, default=18, help="fleetgen18 seed for --quality")
    p.add_argument("--seed19", type=int, default=19, help="fleetgen19 seed for --quality")
    p.add_argument("--seed20", type=int, default=20, help="fleetgen20 seed for --quality")
    p.add_argument("--seed21", type=int, default=21, help="fleetgen21 seed for --quality")
    args = p.parse_args(argv)
    if args.quality:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            scores = quality(Path(tmp), args.quality_hosts, args.quality_hours, args.seed, args.seed3, args.seed4,
                             args.seed5, args.seed6, args.seed7, args.seed8, args.seed9, args.seed10, args.seed11, args.seed12,
                             args.seed13, args.seed14, args.seed15, args.seed16, args.seed17,
                             args.seed18, args.seed19, args.seed20, args.seed21)
        print(f"audit quality, {args.quality_hosts} hosts x {args.quality_hours:g} h (baseline evaluate):")
        print(f"  {'':24s}" + "".join(f" {g:>10s}" for g in QUALITY_GENERATORS))
        for key in (*QUALITY_KEYS, "failures_scored", "routine_traces", "host_alerts", "false_host_alerts",
                    "missed_host_alerts", "truth_alert_hosts", "audit_wall_s"):
            values = [scores[g][key] for g in QUALITY_GENERATORS]
            fmt = (lambda v: f"{v:>10,}") if isinstance(values[0], int) else (lambda v: f"{v:>10.3f}")
            print(f"  {key:24s}" + "".join(f" {fmt(v)}" for v in values))
        return 0
    if args.pipeline_forms:
        modes = [m for m in args.modes.split(",") if m]
        if args.parts < 1 or not modes or set(modes) - {"refit", "model", "window"} or not 0 < args.window_hours < 24:
            p.error(f"--parts, --modes, --window-hours: expected >= 1, some of refit,model,window and 0-24 h, "
                    f"found {args.parts}, {args.modes!r} and {args.window_hours}")
        return pipeline_forms(Path(args.pipeline_forms), args.parts, args.repeat,
                              args.dir, modes, Path(args.keep) if args.keep else None,
                              compaction=not args.no_compaction, window_hours=args.window_hours,
                              day=not args.no_day)
    if args.timeline:
        return print_timeline(Path(args.timeline), Path(args.before) if args.before else None, args.repeat, args.dir)
    if args.stages:
        return print_stages(Path(args.stages), args.dir, sample=not args.no_sampler)
    if args.audit:
        if args.before_dataset and not args.before:
            p.error("--before-dataset: expected with --before CHECKOUT, found no --before")
        return audit_compare(Path(args.audit), Path(args.before) if args.before else None, args.repeat, args.dir,
                             Path(args.before_dataset) if args.before_dataset else None)
    if args.datasets:
        return compare(Path(args.datasets[0]), Path(args.datasets[1]), Path(args.before) if args.before else None,
                       args.repeat, args.dir, args.only)
    if args.quick:
        args.learn_events, args.learn_hosts, args.audit_hosts, args.audit_hours = 300_000, 20, 50, 24.0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        learn_ds = tmp / "learn"
        s = simulate(learn_ds, args.learn_hosts, 24.0, args.learn_events, args.workers)
        events = s["events"]
        ref, ref_cols = scan_reference(learn_ds), scan_learn_columns(learn_ds)
        learn = measure(BASELINE + ["learn", str(learn_ds), "-o", str(tmp / "m.parquet")])
        print(f"learn: {events:,} events ({s['bytes'].get('events', 0) / max(events, 1):.1f} B/event on disk), "
              f"{learn['wall_s']:.1f} s, {events / learn['wall_s']:,.0f} events/s, peak RSS {learn['peak_rss_mib']:.0f} MiB; "
              f"reference polars scan {ref['wall_s']:.1f} s ({learn['wall_s'] / ref['wall_s']:.1f}x), scan of learn's "
              f"columns {ref_cols['wall_s']:.1f} s ({learn['wall_s'] / ref_cols['wall_s']:.2f}x); simulate {s['sim_wall_s']:.0f} s")
        if args.audit_dataset:
            audit_ds = Path(args.audit_dataset)
            audit = measure(BASELINE + ["audit", str(audit_ds), "--out", str(tmp / "out")])
            print(f"audit: {audit_ds}: {audit['wall_s']:.1f} s wall, peak RSS {audit['peak_rss_mib']:.0f} MiB")
            return 0
        audit_ds = tmp / "audit"
        a = simulate(audit_ds, args.audit_hosts, args.audit_hours, None, args.workers)
        audit = measure(BASELINE + ["audit", str(audit_ds), "--out", str(tmp / "out")])
        # (the simulated day holds one file per host-day partition: the pipeline's compacted form,
        # its best; --pipeline-forms measures the uncompacted one beside it)
        print(f"audit (compacted form: one file per host-day): {args.audit_hosts} hosts x {args.audit_hours:g} h = "
              f"{a['events']:,} events, {a['traces']:,} traces: "
              f"{audit['wall_s']:.1f} s wall, peak RSS {audit['peak_rss_mib']:.0f} MiB "
              f"({audit['wall_s'] / args.audit_hosts * 1000:.1f} ms per host-day; simulate {a['sim_wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
