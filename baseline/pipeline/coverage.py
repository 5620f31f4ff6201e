"""Weekly probe-coverage report: are the probes still covering what fails?

From the fleet dataset's counters table (exact per-probe invocations, failures and errno
histograms, per host and snapshot) and, optionally, application-labelled failures
(baseline.pipeline.nccl), for one ISO week and the week before it:

* per probe: invocations, failures, failure rate, errno mix, week-over-week trend;
* probes that never fired (attached but no invocations, or in the probe set and never seen);
* per host group (kernel release x vendor): which probes are live, partial, missing, or gated
  out by the vendor namespace (mlx5_ib_ / bnxt_re_ / irdma_), and how each driver op slot
  resolves for that group;
* application failures: the fraction whose kernel counterpart is probed, the rest by exclusion
  category (cleanup, read-only, not probed, not mapped) — RDMATracer's 73% analysis.

`weekly_report` computes a `CoverageReport`; `write_report` writes HTML (the shared templates of
baseline.templates, self-contained, charts embedded as base64 PNG), Markdown and Parquet. The
headline is RDMATracer's figure: the share of application-labelled failures whose kernel
counterpart a live probe saw, with the uncovered ones listed by operation.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from baseline.fleet.counters import ImpossibleCounts, impossible_counts, named_file
from baseline.pipeline.coverage_inputs import (  # light: `baseline coverage` checks them before polars
    load_probe_set,
    newest_week,
    week_label,
    week_start,
)
from baseline.pipeline.layout import check_dataset
from baseline.pipeline.nccl import (
    DRIVER_OPS,
    ParseProblem,
    classify_failure,
    kernel_counterparts,
    verb_mapping,
)
from baseline.templates import change, charts, num, pct, render
from tracer import atomic
from tracer.errors import printable
from tracer.schema import (
    SNAPSHOT_KEY,
    counted_delta,
    dataset_files,
    polars_schema,
    scan,
    write_table,
)

VENDOR_PREFIXES = (
    ("mlx5_ib_", "mlx5"),
    ("mlx5r_", "mlx5"),
    ("mlx5_", "mlx5"),
    ("bnxt_re_", "bnxt_re"),
    ("bnxt_qplib_", "bnxt_re"),
    ("irdma_", "irdma"),
)
SLOT_OF = {fn: (slot, vendor) for slot, impls in DRIVER_OPS.items() for vendor, fn in impls.items()}
APP_CATEGORIES = ("probed", "cleanup", "read-only", "not probed", "not mapped")


def probe_vendor(probe: str) -> str | None:
    """The vendor namespace a probe belongs to, or None for vendor-neutral (core/uverbs) probes."""
    for prefix, vendor in VENDOR_PREFIXES:
        if probe.startswith(prefix):
            return vendor
    return None


def _ts(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), dt.UTC)


# --------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------
@dataclass
class CoverageReport:
    week: str
    start: dt.date
    hosts: int
    probes: pl.DataFrame  # coverage_probes
    errno_mix: pl.DataFrame  # probe, errno, count, share
    daily: pl.DataFrame  # day (0-6), week (current|previous), failures
    groups: pl.DataFrame  # coverage_groups
    app: pl.DataFrame  # coverage_app
    app_summary: dict[str, float] = field(default_factory=dict)  # category -> fraction
    app_total: int = 0
    parse_problems: list[ParseProblem] = field(default_factory=list)
    probe_set: str | None = None

    @property
    def never_fired(self) -> list[str]:
        return self.probes.filter(pl.col("never_fired"))["probe"].to_list()


def _empty_counters() -> pl.LazyFrame:
    return pl.LazyFrame(schema=polars_schema("counters"))


def _first_copies(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The counters rows less those repeating a SNAPSHOT_KEY read before them (file order): a
    snapshot delivered twice counts once, as in the audit (baseline.fleet.counters). Repeats are
    found per (host, snapshot) -- one group a snapshot, not a row -- and only when there are
    any are the rows of the repeated snapshots read again to find the later copies."""
    repeated = (lf.group_by("host", "snapshot_time")
                .agg(pl.len().alias("_rows"), pl.col("probe").n_unique().alias("_probes"))
                .filter(pl.col("_rows") > pl.col("_probes")).select("host", "snapshot_time")
                .collect(engine="streaming"))
    if repeated.is_empty():
        return lf
    rows = (lf.with_row_index("_i").join(repeated.lazy(), on=["host", "snapshot_time"], how="semi")
            .select("_i", *SNAPSHOT_KEY).collect().sort("_i"))
    again = rows.filter(~pl.struct(*SNAPSHOT_KEY).is_first_distinct()).get_column("_i")
    return lf.with_row_index("_i").filter(~pl.col("_i").is_in(again.implode())).drop("_i")


def weekly_report(
    dataset: str | os.PathLike,
    *,
    week: str | None = None,
    probe_set: str | os.PathLike | None = None,
    app_failures: pl.DataFrame | None = None,
    parse_problems: Iterable[ParseProblem] = (),
    trend_change_pct: float = 25.0,
) -> CoverageReport:
    """Compute the coverage report for `week` (default: the week of the newest counters)."""
    dataset = check_dataset(dataset)
    if week is None:
        week = newest_week(dataset)
    start = week_start(week)
    prev = start - dt.timedelta(days=7)
    end = start + dt.timedelta(days=7)
    files = [f for f in dataset_files(dataset, "counters", since=prev.isoformat())
             if f.parent.parent.name.removeprefix("date=") < end.isoformat()]
    lf = scan(files, "counters") if files else _empty_counters()
    lf = lf.filter((pl.col("snapshot_time") >= _ts(prev)) & (pl.col("snapshot_time") < _ts(end)))
    # counts no interval holds (ingest quarantines them; another writer's dataset may have them):
    # a failure rate over 1, or sums that overflowed, in the report without a word
    odd = impossible_counts(lf).collect()
    if odd.height:
        raise named_file(ImpossibleCounts(*odd.row(0)), files)
    lf = _first_copies(lf).with_columns(current=pl.col("snapshot_time") >= _ts(start))
    label = week_label(start)
    attached = pl.col("live").fill_null(True)
    cur = pl.col("current")
    # deltas counted as the audit counts them (a counter reset's negative delta adds nothing)
    calls, fails = counted_delta("invocations"), counted_delta("failures")

    stats = (
        lf.group_by("probe")
        .agg(
            layer=pl.col("layer").drop_nulls().first(),
            invocations=calls.filter(cur).sum(),
            failures=fails.filter(cur).sum(),
            prev_invocations=calls.filter(~cur).sum(),
            prev_failures=fails.filter(~cur).sum(),
            hosts_live=pl.col("host").filter(cur & attached).n_unique(),
        )
        .collect()
    )
    errno_mix = (
        lf.filter(cur)
        .select("probe", "errno_counts")
        .explode("errno_counts")
        .drop_nulls("errno_counts")
        .unnest("errno_counts")
        .group_by("probe", "errno")
        .agg(count=counted_delta("count").sum())
        .filter(pl.col("count") > 0)
        .with_columns(share=pl.col("count") / pl.col("count").sum().over("probe"))
        # errno breaks ties: group_by's row order differs from run to run (polars hashes with a
        # per-process seed), and this order is the errno_counts lists' in coverage_probes.parquet
        # and the Markdown/HTML "errnos" cells
        .sort(["probe", "count", "errno"], descending=[False, True, False])
        .collect()
    )
    daily = (
        lf.group_by(
            day=(pl.col("snapshot_time").dt.date() - pl.when(cur).then(pl.lit(start)).otherwise(pl.lit(prev))).dt.total_days(),
            week=pl.when(cur).then(pl.lit("current")).otherwise(pl.lit("previous")),
        )
        .agg(failures=fails.sum(), invocations=calls.sum())
        .sort("week", "day")
        .collect()
    )
    host_probe = (
        lf.filter(cur)
        .group_by("kernel_release", "vendor", "host", "probe")
        .agg(live=attached.any())
        .collect()
    )
    hosts_total = host_probe["host"].n_unique()

    declared = load_probe_set(probe_set) if probe_set else {}
    fleet_vendors = set(host_probe["vendor"].drop_nulls().to_list())
    # A vendor alternative of the namespace gate only counts where that vendor runs.
    relevant = {p for p in declared if probe_vendor(p) is None or not fleet_vendors or probe_vendor(p) in fleet_vendors}
    universe = sorted(set(stats["probe"].to_list()) | relevant)
    stats = (
        pl.DataFrame({"probe": universe}, schema={"probe": pl.String})
        .join(stats, on="probe", how="left")
        .with_columns(
            pl.col("layer").fill_null(
                pl.col("probe").replace_strict(
                    {p: str(a.get("layer")) for p, a in declared.items() if a.get("layer")}, default=None
                )
            ),
            *[pl.col(c).fill_null(0) for c in ("invocations", "failures", "prev_invocations", "prev_failures", "hosts_live")],
        )
        .with_columns(
            failure_rate=pl.when(pl.col("invocations") > 0).then(pl.col("failures") / pl.col("invocations")),
            failures_change_pct=pl.when(pl.col("prev_failures") > 0).then(
                (pl.col("failures") - pl.col("prev_failures")) * 100.0 / pl.col("prev_failures")
            ),
            never_fired=pl.col("invocations") == 0,
        )
        .with_columns(
            trend=pl.when((pl.col("failures") == 0) & (pl.col("prev_failures") == 0)).then(pl.lit("quiet"))
            .when(pl.col("prev_failures") == 0).then(pl.lit("new"))
            .when(pl.col("failures") == 0).then(pl.lit("gone"))
            .when(pl.col("failures_change_pct") >= trend_change_pct).then(pl.lit("rising"))
            .when(pl.col("failures_change_pct") <= -trend_change_pct).then(pl.lit("falling"))
            .otherwise(pl.lit("steady")),
            week=pl.lit(label),
        )
    )
    histo = errno_mix.group_by("probe").agg(errno_counts=pl.struct(pl.col("errno"), pl.col("count")))
    stats = stats.join(histo, on="probe", how="left").sort(["failures", "invocations", "probe"], descending=[True, True, False])
    stats = stats.select(polars_schema("coverage_probes").names()).cast(dict(polars_schema("coverage_probes")))

    groups = _group_resolution(host_probe, universe, label, declared)
    probed = set(declared) if declared else set(stats.filter(pl.col("hosts_live") > 0)["probe"].to_list())
    app, summary, total = _app_coverage(app_failures, probed, start, end, label, lf.filter(cur))
    return CoverageReport(
        week=label,
        start=start,
        hosts=hosts_total,
        probes=stats,
        errno_mix=errno_mix,
        daily=daily,
        groups=groups,
        app=app,
        app_summary=summary,
        app_total=total,
        parse_problems=list(parse_problems),
        probe_set=str(probe_set) if probe_set else None,
    )


def _group_resolution(host_probe: pl.DataFrame, universe: list[str], label: str, declared: dict[str, dict]) -> pl.DataFrame:
    """Per (kernel_release, vendor) group and probe: live/partial/missing/gated + resolution."""
    rows: list[dict] = []
    if host_probe.is_empty():
        return pl.DataFrame(schema=polars_schema("coverage_groups"))
    group_hosts = host_probe.group_by("kernel_release", "vendor").agg(hosts=pl.col("host").n_unique())
    per_probe = host_probe.group_by("kernel_release", "vendor", "probe").agg(
        hosts_live=pl.col("live").sum(), hosts_not_attached=(~pl.col("live")).sum()
    )
    counts = {
        (r["kernel_release"], r["vendor"], r["probe"]): (r["hosts_live"], r["hosts_not_attached"])
        for r in per_probe.iter_rows(named=True)
    }
    for g in group_hosts.sort("kernel_release", "vendor", nulls_last=True).iter_rows(named=True):
        kernel, vendor, hosts = g["kernel_release"], g["vendor"], g["hosts"]
        for probe in universe:
            n_live, n_off = counts.get((kernel, vendor, probe), (0, 0))
            owner = probe_vendor(probe)
            slot = SLOT_OF.get(probe, (None, None))[0]
            # The gate from the probe set wins; else the ib_device_ops slot from the reference.
            gate = declared.get(probe, {}).get("gate") or (DRIVER_OPS[slot] if slot else {})
            resolution = None
            if gate:
                name = f"ops.{slot}" if slot else gate.get("mlx5", probe)
                impl = gate.get(vendor or "")
                if impl:
                    i_live, i_off = counts.get((kernel, vendor, impl), (0, 0))
                    state = [f"live on {i_live}/{hosts}"] if i_live else []
                    state += [f"not attached on {i_off}/{hosts}"] if i_off else []
                    resolution = f"{name} -> {impl} ({', '.join(state) or 'no data this week'})"
                else:
                    resolution = f"{name} -> no {vendor} equivalent"
            # Hosts without rows for a probe simply never called it (idle intervals are not
            # written); only an explicit live=false row says the probe is not attached.
            if owner and vendor and owner != vendor:
                status = "gated"
            elif n_off and n_live:
                status = "partial"
            elif n_off:
                status = "missing"
            elif n_live:
                status = "live"
            else:
                status = "no data"
            rows.append(
                {"week": label, "kernel_release": kernel, "vendor": vendor, "probe": probe, "hosts": hosts,
                 "hosts_live": n_live, "hosts_not_attached": n_off, "status": status, "resolution": resolution}
            )
    return pl.DataFrame(rows, schema=polars_schema("coverage_groups"))


# An application failure logged at time t is counted by the probe in a snapshot ending near it:
# the kernel call failed before the job logged it, so the snapshot that counted the failure ends
# in (t - latency, t + interval] -- it can close between the failure and the log line. The slack
# absorbs that latency and the clock skew between the job's log and the host's tracer, both ways.
SEEN_SLACK = dt.timedelta(seconds=10)


# The longest snapshot interval taken for one: a week (the report's span; `tracer run -i` is at
# most an hour, another writer's daily export still fits).
LONGEST_INTERVAL_S = 7 * 86400.0


def _longest_interval(interval_s: pl.Series) -> float:
    """The longest interval of the counters' `interval_s` (seconds), 5 s when none is given. A
    value no interval can have (null, 0, negative, NaN, infinite: another writer's) is left
    out: an infinite one ended `baseline coverage` in "internal error: OverflowError"."""
    usable = interval_s.filter(interval_s.is_finite() & (interval_s > 0))
    longest = usable.max() if usable.len() else None
    return min(float(longest), LONGEST_INTERVAL_S) if longest is not None else 5.0


def _host_key(col: str) -> pl.Expr:
    # Job logs may name the host by its FQDN, the tracer by its short name (or the reverse).
    return pl.col(col).str.to_lowercase().str.split(".").list.first()


def seen_by_live_probe(failures: pl.DataFrame, counters: pl.LazyFrame) -> pl.Series:
    """Per application failure: did a live probe on a kernel counterpart of its verb count a
    failure on the same host at that time (a snapshot ending from SEEN_SLACK before it to one
    interval and SEEN_SLACK after it)? A failure
    without a timestamp counts as seen when such a probe counted failures on the host that week.
    """
    n = failures.height
    if n == 0:
        return pl.Series("seen", [], pl.Boolean)
    probes_of = {v: list(kernel_counterparts(v)) for v in failures["verb"].unique().to_list()}
    pairs = (
        failures.with_row_index("i")
        .select("i", "time", host=_host_key("host"),
                probe=pl.col("verb").replace_strict(probes_of, return_dtype=pl.List(pl.String)))
        .explode("probe")
        .drop_nulls(["probe", "host"])
    )
    hits = (
        counters.filter((pl.col("failures") > 0) & pl.col("live").fill_null(True))
        .select("snapshot_time", "interval_s", "probe", host=_host_key("host"))
        .collect()
    )
    if pairs.is_empty() or hits.is_empty():
        return pl.Series("seen", [False] * n)
    interval = dt.timedelta(seconds=_longest_interval(hits["interval_s"]))
    timed = pairs.filter(pl.col("time").is_not_null()).sort("time")
    snapshots = hits.select("host", "probe", "snapshot_time").sort("snapshot_time")
    matched = pl.concat([
        timed.join_asof(snapshots, left_on="time", right_on="snapshot_time", by=["host", "probe"],
                        strategy=strategy, tolerance=tolerance, check_sortedness=False)  # sorted above
        .filter(pl.col("snapshot_time").is_not_null())["i"]
        for strategy, tolerance in (("forward", interval + SEEN_SLACK), ("backward", SEEN_SLACK))
    ])
    untimed = pairs.filter(pl.col("time").is_null()).join(
        hits.select("host", "probe").unique(), on=["host", "probe"], how="semi")["i"]
    seen = set(matched.to_list()) | set(untimed.to_list())
    return pl.Series("seen", [i in seen for i in range(n)])


def _app_coverage(
    failures: pl.DataFrame | None, probed: set[str], start: dt.date, end: dt.date, label: str,
    counters: pl.LazyFrame | None = None,
) -> tuple[pl.DataFrame, dict[str, float], int]:
    schema = polars_schema("coverage_app")
    if failures is None or failures.is_empty():
        return pl.DataFrame(schema=schema), {}, 0
    # Lines without a timestamp (plain NCCL logs) belong to the week they are reported for.
    in_week = failures.filter(
        pl.col("time").is_null() | ((pl.col("time") >= _ts(start)) & (pl.col("time") < _ts(end)))
    )
    if counters is not None:
        in_week = in_week.with_columns(seen_by_live_probe(in_week, counters))
    else:
        in_week = in_week.with_columns(seen=pl.lit(None, pl.Boolean))
    counts = in_week.group_by("verb").agg(failures=pl.len(), seen=pl.col("seen").sum()).sort(
        "failures", "verb", descending=[True, False])
    total = int(counts["failures"].sum()) if not counts.is_empty() else 0
    rows = []
    for verb, n, seen in counts.iter_rows():
        mapping = verb_mapping(verb)
        rows.append(
            {
                "week": label,
                "verb": verb,
                "operation": mapping.operation if mapping else None,
                "category": classify_failure(verb, probed),
                "kernel_counterparts": ", ".join(kernel_counterparts(verb)) or None,
                "failures": n,
                "share": n / total if total else None,
                "seen": seen if counters is not None else None,
            }
        )
    app = pl.DataFrame(rows, schema=schema)
    by_cat = dict(app.group_by("category").agg(pl.col("failures").sum()).iter_rows())
    summary = {c: by_cat.get(c, 0) / total for c in APP_CATEGORIES if total}
    if total and counters is not None:
        summary["seen"] = int(app["seen"].sum()) / total
    return app, summary, total


# --------------------------------------------------------------------------------------------
# rendering: the shared templates and chart style of baseline.templates
# --------------------------------------------------------------------------------------------
WEEK_COLOR, PREV_COLOR = charts.PALETTE[0], charts.MUTED
APP_PARTS = (  # (key, legend, colour, why uncovered)
    ("seen", "seen by a live probe", "#3f9b5c", None),
    ("probed", "probed, not seen", "#d9822b", "its probes were not live on that host, or counted nothing then"),
    ("cleanup", "cleanup (not probed)", "#3b6ea8", "cleanup path: not probed on purpose (fails by panicking, not errno)"),
    ("read-only", "read-only (not probed)", "#7e5aa6", "read-only query: not probed on purpose (routine errors)"),
    ("not probed", "not probed", "#c23b3b", "no probe on any of its kernel functions"),
    ("not mapped", "not mapped", "#6f7780", "no system call (data path) or a verb outside the reference"),
)
RDMATRACER_FIGURE = 0.73  # RDMATracer (NAIC '26): application failures that fell on probed functions


def _app_parts(report: CoverageReport) -> dict[str, int]:
    """Failures per headline part: seen, probed but unseen, and the static categories."""
    parts = dict.fromkeys((k for k, *_ in APP_PARTS), 0)
    for r in report.app.iter_rows(named=True):
        seen = r["seen"] or 0
        parts["seen"] += seen
        parts[r["category"]] += r["failures"] - seen
    return parts


def uncovered_by_operation(report: CoverageReport) -> pl.DataFrame:
    """Application failures no live probe saw, by operation and reason, largest first."""
    why = {k: reason for k, _, _, reason in APP_PARTS if reason}
    app = report.app.with_columns(uncovered=pl.col("failures") - pl.col("seen").fill_null(0)).filter(pl.col("uncovered") > 0)
    return (
        app.group_by(pl.col("operation").fill_null("–"), "category")
        .agg(verbs=pl.col("verb").sort().str.join(", "), failures=pl.col("uncovered").sum())
        .with_columns(reason=pl.col("category").replace_strict(why, default=None))
        .sort(["failures", "operation", "category"], descending=[True, False, False])  # one row per key: no ties
    )


def _daily_series(report: CoverageReport, which: str, today: dt.date) -> list[float]:
    """Failures per weekday; NaN where there is no data (no counter rows) or the day is still ahead."""
    sub = report.daily.filter(pl.col("week") == which)
    values = dict(zip(sub["day"].to_list(), sub["failures"].to_list(), strict=True))
    monday = report.start if which == "current" else report.start - dt.timedelta(days=7)
    return [math.nan if monday + dt.timedelta(days=d) > today or d not in values else float(values[d]) for d in range(7)]


def render_charts(report: CoverageReport, now: dt.datetime | None = None) -> dict[str, charts.Chart]:
    """Charts keyed by name (matplotlib, Agg backend); a chart without data is left out."""
    today = (now or dt.datetime.now(dt.UTC)).date()
    out: dict[str, charts.Chart] = {}
    if report.app_total:
        parts = _app_parts(report)
        shown = [(label, [parts[k] / report.app_total], color) for k, label, color, _ in APP_PARTS if parts[k]]
        out["app_coverage"] = charts.stacked_shares(
            "app_coverage", f"Application-labelled failures ({report.app_total:,}) by kernel coverage",
            [report.week], shown, xlabel="share of application-labelled failures")
    top = report.probes.filter((pl.col("failures") > 0) | (pl.col("prev_failures") > 0)).head(12)
    if not top.is_empty():
        groups = [(report.week, top["failures"].to_list(), WEEK_COLOR)]
        if top["prev_failures"].sum():
            groups.append(("previous week", top["prev_failures"].to_list(), PREV_COLOR))
        out["failures_per_probe"] = charts.grouped_hbar(
            "failures_per_probe", "Failures per probe, week over week", top["probe"].to_list(), groups,
            xlabel="failures (counters, exact)")
    mix = report.errno_mix
    if not mix.is_empty():
        probes = report.probes.filter(pl.col("failures") > 0)["probe"].head(10).to_list()
        # errno breaks ties in the totals: group_by's order varies per process, and it picks each
        # errno's colour and, at the 7th place, which errnos are drawn (the chart's bytes)
        top_errnos = (mix.group_by("errno").agg(pl.col("count").sum()).sort(["count", "errno"], descending=[True, False])
                      ["errno"].head(7).to_list())
        share = {(p, e): v for p, e, v in mix.select("probe", "errno", "share").iter_rows()}
        parts = [(e, [share.get((p, e), 0.0) for p in probes], charts.PALETTE[k % len(charts.PALETTE)])
                 for k, e in enumerate(top_errnos)]
        rest = [max(0.0, 1 - sum(v[i] for _, v, _ in parts)) for i in range(len(probes))]
        if any(r > 1e-9 for r in rest):
            parts.append(("other", rest, charts.MUTED))
        out["errno_mix"] = charts.stacked_shares("errno_mix", f"Errno mix per probe, {report.week}", probes, parts,
                                                 xlabel="share of the probe's failures")
    if not report.daily.is_empty():
        series = [(report.week, _daily_series(report, "current", today), WEEK_COLOR, "-o")]
        prev = _daily_series(report, "previous", today)
        if not all(math.isnan(v) for v in prev):
            series.append(("previous week", prev, PREV_COLOR, "--o"))
        if not all(math.isnan(v) for _, vals, _, _ in series for v in vals):
            out["daily_failures"] = charts.week_lines("daily_failures", "Fleet failures per day", series,
                                                      ylabel="failures")
    return out


def _errnos(value: list | None) -> str:
    if not value:
        return "–"
    ranked = sorted(value, key=lambda d: -d["count"])
    return ", ".join(f"{d['errno']} {d['count']:,}" for d in ranked[:2]) + (f" +{len(ranked) - 2}" if len(ranked) > 2 else "")


def _cell(column: str, value: object) -> str:
    if column == "failure_rate":
        return pct(value, 2)
    if column == "share":
        return pct(value, 1)
    if column == "failures_change_pct":
        return change(value)
    if column == "errno_counts":
        return _errnos(value)  # type: ignore[arg-type]
    return num(value)


NUMERIC = {"invocations", "failures", "failure_rate", "prev_failures", "prev_invocations", "failures_change_pct",
           "hosts_live", "hosts", "hosts_not_attached", "share", "seen"}
HEADERS = {"failure_rate": "failure rate", "prev_failures": "prev. week", "failures_change_pct": "change",
           "hosts_live": "hosts live", "errno_counts": "errnos", "prev_invocations": "prev. invocations",
           "hosts_not_attached": "not attached", "kernel_release": "kernel", "kernel_counterparts": "kernel counterparts"}


@dataclass
class Section:
    title: str
    note: str
    columns: list[tuple[str, str, str]]  # key, header, kind (text | n | code | pill)
    rows: list[dict[str, str]]
    empty: str

    @property
    def header(self) -> list[str]:
        return [h for _, h, _ in self.columns]


def _section(title: str, note: str, frame: pl.DataFrame, columns: list[str], empty: str, pills: tuple[str, ...] = (),
             code: tuple[str, ...] = ("probe",)) -> Section:
    kinds = [(c, HEADERS.get(c, c.replace("_", " ")), "n" if c in NUMERIC else "pill" if c in pills else
              "code" if c in code else "nowrap" if c == "errno_counts" else "text") for c in columns]
    rows = [{c: _cell(c, r[c]) for c in columns} for r in frame.iter_rows(named=True)]
    return Section(title, note, kinds, rows, empty)


def _sections(report: CoverageReport) -> list[Section]:
    """The tables of the report, shared by HTML and Markdown."""
    probe_cols = ["probe", "layer", "invocations", "failures", "failure_rate", "prev_failures", "failures_change_pct",
                  "trend", "hosts_live", "errno_counts"]
    gaps = report.groups.filter(pl.col("status").is_in(["missing", "partial"]))
    gate = report.groups.filter(pl.col("resolution").is_not_null()).unique(["kernel_release", "vendor", "resolution"], maintain_order=True)
    never = report.probes.filter(pl.col("never_fired"))
    out = [
        _section("Application-labelled failures no live probe saw, by operation",
                 "Failing verbs calls from the job logs whose kernel counterpart no live probe counted on that host at that time.",
                 uncovered_by_operation(report), ["operation", "verbs", "category", "failures", "reason"],
                 "Every application-labelled failure this week was seen by a live probe." if report.app_total else
                 "No application-labelled failures this week (give job logs with --nccl-logs).", code=("verbs",)),
        _section("Probes", "Counters are exact even when the ring buffer overflows. Change and trend compare failures "
                 "with the previous week.", report.probes, probe_cols, "No probe reported counters this week.",
                 pills=("trend",)),
        _section("Probes that never fired", "No invocation this week on any host (not attached, or the code path never ran).",
                 never, ["probe", "layer", "hosts_live", "prev_invocations"], "Every probe fired this week."),
        _section("Probes missing on some kernels or vendors",
                 "Probes reported as not attached (symbol absent, attach refused) on hosts of a (kernel, vendor) group. "
                 "Vendor probes gated out by the namespace are left out.", gaps,
                 ["kernel_release", "vendor", "probe", "hosts", "hosts_live", "hosts_not_attached", "status"],
                 "No probe is missing on any host group.", pills=("status",)),
        _section("Namespace-gate resolution per host group", "Which vendor function carries each driver op slot on each group.",
                 gate, ["kernel_release", "vendor", "hosts", "resolution"], "No host group reported this week.",
                 code=("resolution",)),
        _section("Application-labelled failures by verb",
                 f"{report.app_total:,} failing verbs calls this week, by whether their kernel counterpart is probed "
                 "and whether a live probe saw them.", report.app,
                 ["verb", "operation", "category", "failures", "seen", "share", "kernel_counterparts"],
                 "No application-labelled failures this week (give job logs with --nccl-logs).",
                 code=("verb",)),
    ]
    if report.parse_problems:
        out.append(Section("Log lines that could not be parsed", "Reported, not fatal.",
                           [("where", "where", "code"), ("reason", "reason", "text"), ("line", "line", "code")],
                           [{"where": p.source, "reason": p.reason, "line": p.text[:160]} for p in report.parse_problems[:50]],
                           ""))
    return out


def _headline(report: CoverageReport) -> dict[str, str] | None:
    if not report.app_total:
        return None
    parts = _app_parts(report)
    uncovered = [(parts[k], label) for k, label, *_ in APP_PARTS[1:] if parts[k]]
    rest = "; ".join(f"{n:,} {label}" for n, label in sorted(uncovered, reverse=True))
    return {
        "figure": pct(parts["seen"] / report.app_total),
        "what": f"of {report.app_total:,} application-labelled failures (NCCL/verbs errors in job logs) "
                "were seen by a live probe",
        "detail": (f"Not seen: {rest}. " if rest else "")
        + f"RDMATracer reports {RDMATRACER_FIGURE:.0%} on Meta's fleet (the rest excluded on purpose: cleanup, read-only).",
    }


def _summary_items(report: CoverageReport) -> list[dict[str, str]]:
    inv = int(report.probes["invocations"].sum())
    fail = int(report.probes["failures"].sum())
    prev = int(report.probes["prev_failures"].sum())
    items = [
        {"label": "hosts reporting", "value": num(report.hosts)},
        {"label": "probes", "value": num(report.probes.height)},
        {"label": "invocations", "value": num(inv)},
        {"label": "failures", "value": num(fail)},
        {"label": "failures vs previous week", "value": change((fail - prev) * 100 / prev) if prev else "–"},
        {"label": "probes that never fired", "value": num(len(report.never_fired)),
         "tone": "warn" if report.never_fired else "good"},
    ]
    if report.app_total:
        items.append({"label": "app failures on probed functions", "value": pct(report.app_summary.get("probed", 0))})
    return items


def render_html(report: CoverageReport, chart_set: dict[str, charts.Chart], now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    end = report.start + dt.timedelta(days=6)
    has_data = bool(report.hosts) or int(report.probes["invocations"].sum()) > 0
    subtitle = f"{report.start.isoformat()} – {end.isoformat()} (UTC)" + (f" · probe set {report.probe_set}" if report.probe_set else "")
    partial = end >= now.date()
    return render(
        "coverage.html.j2", kind="Weekly probe coverage", title=f"Probe coverage, {report.week}", subtitle=subtitle,
        headline=_headline(report), cards=_summary_items(report), charts=chart_set, sections=_sections(report),
        has_data=has_data, week=report.week, partial=partial, today=now.date(),
        # A finished week's page depends on its data alone: no run time in it, so a rerun on the
        # same data is byte-identical (reports diff and cache). A week still running is "as of"
        # its run: days after today are left out, so it says when.
        generated=now if partial else None,
    )


def render_markdown(report: CoverageReport, chart_files: dict[str, str]) -> str:
    end = report.start + dt.timedelta(days=6)
    lines = [f"# Probe coverage, {report.week}", "", f"{report.start.isoformat()} – {end.isoformat()} (UTC).", ""]
    head = _headline(report)
    if head:
        lines += [printable(f"**{head['figure']}** {head['what']}. {head['detail']}"), ""]
    else:
        lines += ["_No application-labelled failures this week (give job logs with --nccl-logs)._", ""]
    lines += [f"- **{item['label']}**: {item['value']}" for item in _summary_items(report)]
    lines.append("")
    lines += [f"![{name}]({path})" for name, path in chart_files.items()]
    for sec in _sections(report):
        lines += ["", printable(f"## {sec.title}"), "", printable(sec.note), ""]
        if not sec.rows:
            lines.append(f"_{sec.empty}_")
            continue
        lines.append("| " + " | ".join(sec.header) + " |")
        lines.append("|" + "".join("---:|" if kind == "n" else "---|" for _, _, kind in sec.columns))
        # cells from the data (probe and errno names): control characters escaped, so a newline
        # cannot start a forged line nor an escape sequence reach whoever cats the file
        lines += ["| " + " | ".join(printable(row[k]).replace("|", "\\|") for k, _, _ in sec.columns) + " |"
                  for row in sec.rows]
    return "\n".join(lines) + "\n"


def write_report(report: CoverageReport, out_dir: str | os.PathLike, now: dt.datetime | None = None) -> dict[str, Path]:
    """Write report.html, report.md, charts/*.png and the three Parquet tables into out_dir/<week>/."""
    final = Path(out_dir) / report.week
    # a new week's report appears whole or not at all (a rerun rewrites its files in place)
    with atomic.staged_dir(final) as out:
        atomic.make_dirs(out / "charts")
        chart_set = render_charts(report, now)
        chart_files = {}
        for name, chart in chart_set.items():
            atomic.write_bytes(out / "charts" / f"{name}.png", chart.png)
            chart_files[name] = f"charts/{name}.png"
        write_table(report.probes, out / "coverage_probes.parquet", "coverage_probes")
        write_table(report.groups, out / "coverage_groups.parquet", "coverage_groups")
        write_table(report.app, out / "coverage_app.parquet", "coverage_app")
        atomic.write_text(out / "report.html", render_html(report, chart_set, now))
        atomic.write_text(out / "report.md", render_markdown(report, chart_files))
    return {
        "html": final / "report.html",
        "markdown": final / "report.md",
        "probes": final / "coverage_probes.parquet",
        "groups": final / "coverage_groups.parquet",
        "app": final / "coverage_app.parquet",
    }
