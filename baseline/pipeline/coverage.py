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

`weekly_report` computes a `CoverageReport`; `write_report` writes HTML (self-contained,
charts embedded as base64 PNG), Markdown and Parquet.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from baseline.pipeline.nccl import (
    DRIVER_OPS,
    ParseProblem,
    classify_failure,
    kernel_counterparts,
    verb_mapping,
)
from tracer import atomic
from tracer.errors import TracebaseError
from tracer.schema import dataset_files, polars_schema, scan, write_table

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


# --------------------------------------------------------------------------------------------
# probe sets
# --------------------------------------------------------------------------------------------
def load_probe_set(path: str | os.PathLike) -> dict[str, dict]:
    """Probe symbol -> {layer, object, operation, gate} for every symbol a probe set can trace.

    Uses tracer.fleet.probes (the one probe-set loader). Each probe contributes its default (mlx5
    namespace) symbol and every vendor alternative of the namespace gate; ``gate`` maps
    vendor -> symbol for the probe the symbol belongs to.
    """
    from tracer.fleet.probes import load_probe_set as load_set

    pset = load_set(str(path), vendor=None)
    out: dict[str, dict] = {}
    for probe in pset.probes:
        gate = {"mlx5": probe.default_symbol, **probe.vendors} if probe.vendors else {}
        attrs = {"layer": probe.layer, "object": probe.object, "operation": probe.operation, "gate": gate}
        for symbol in {probe.default_symbol, *probe.vendors.values()}:
            out[symbol] = attrs
    return out


# --------------------------------------------------------------------------------------------
# weeks
# --------------------------------------------------------------------------------------------
def week_start(week: str) -> dt.date:
    """Monday of an ISO week given as 2026-W48 or as any date inside it (2026-11-25)."""
    try:
        if "W" in week:
            year, num = week.split("-W")
            return dt.date.fromisocalendar(int(year), int(num), 1)
        day = dt.date.fromisoformat(week[:10])
    except ValueError:
        raise TracebaseError(f"--week: expected an ISO week like 2026-W48 or a date, found {week!r}") from None
    return day - dt.timedelta(days=day.weekday())


def week_label(monday: dt.date) -> str:
    year, num, _ = monday.isocalendar()
    return f"{year}-W{num:02d}"


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
    dataset = Path(dataset)
    if not dataset.is_dir():
        raise TracebaseError(f"{dataset}: dataset directory does not exist")
    all_files = dataset_files(dataset, "counters")
    if week is None:
        if not all_files:
            raise TracebaseError(f"{dataset}: no counters in the dataset; give --week or ingest first")
        newest = all_files[-1].parent.parent.name.removeprefix("date=")
        week = newest
    start = week_start(week)
    prev = start - dt.timedelta(days=7)
    end = start + dt.timedelta(days=7)
    files = [f for f in dataset_files(dataset, "counters", since=prev.isoformat())
             if f.parent.parent.name.removeprefix("date=") < end.isoformat()]
    lf = scan(files, "counters") if files else _empty_counters()
    lf = lf.filter((pl.col("snapshot_time") >= _ts(prev)) & (pl.col("snapshot_time") < _ts(end)))
    lf = lf.with_columns(current=pl.col("snapshot_time") >= _ts(start))
    label = week_label(start)
    attached = pl.col("live").fill_null(True)
    cur = pl.col("current")

    stats = (
        lf.group_by("probe")
        .agg(
            layer=pl.col("layer").drop_nulls().first(),
            invocations=pl.col("invocations").filter(cur).sum(),
            failures=pl.col("failures").filter(cur).sum(),
            prev_invocations=pl.col("invocations").filter(~cur).sum(),
            prev_failures=pl.col("failures").filter(~cur).sum(),
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
        .agg(count=pl.col("count").sum())
        .filter(pl.col("count") > 0)
        .with_columns(share=pl.col("count") / pl.col("count").sum().over("probe"))
        .sort(["probe", "count"], descending=[False, True])
        .collect()
    )
    daily = (
        lf.group_by(
            day=(pl.col("snapshot_time").dt.date() - pl.when(cur).then(pl.lit(start)).otherwise(pl.lit(prev))).dt.total_days(),
            week=pl.when(cur).then(pl.lit("current")).otherwise(pl.lit("previous")),
        )
        .agg(failures=pl.col("failures").sum(), invocations=pl.col("invocations").sum())
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


# An application failure at time t is counted by the probe in the snapshot that ends in
# (t, t + interval]; the slack absorbs clock skew between the job's log and the host's tracer.
SEEN_SLACK = dt.timedelta(seconds=10)


def _host_key(col: str) -> pl.Expr:
    # Job logs may name the host by its FQDN, the tracer by its short name (or the reverse).
    return pl.col(col).str.to_lowercase().str.split(".").list.first()


def seen_by_live_probe(failures: pl.DataFrame, counters: pl.LazyFrame) -> pl.Series:
    """Per application failure: did a live probe on a kernel counterpart of its verb count a
    failure on the same host at that time (the snapshot after it, within SEEN_SLACK)? A failure
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
    interval = dt.timedelta(seconds=float(hits["interval_s"].max() or 5.0))
    timed = pairs.filter(pl.col("time").is_not_null()).sort("time")
    matched = timed.join_asof(
        hits.select("host", "probe", "snapshot_time").sort("snapshot_time"),
        left_on="time", right_on="snapshot_time", by=["host", "probe"],
        strategy="forward", tolerance=interval + SEEN_SLACK, check_sortedness=False,  # sorted above
    ).filter(pl.col("snapshot_time").is_not_null())["i"]
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
# rendering
# --------------------------------------------------------------------------------------------
def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def render_charts(report: CoverageReport) -> dict[str, bytes]:
    """PNG charts keyed by name (matplotlib, Agg backend, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    charts: dict[str, bytes] = {}
    top = report.probes.filter((pl.col("failures") > 0) | (pl.col("prev_failures") > 0)).head(12)
    if not top.is_empty():
        names = top["probe"].to_list()[::-1]
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.2))
        y = range(len(names))
        ax.barh([i + 0.2 for i in y], top["failures"].to_list()[::-1], height=0.4, label=report.week, color="#c0392b")
        if top["prev_failures"].sum():
            ax.barh([i - 0.2 for i in y], top["prev_failures"].to_list()[::-1], height=0.4, label="previous week", color="#95a5a6")
        ax.set_yticks(list(y), names, fontsize=8)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.set_xlabel("failures (counters, exact)")
        ax.set_title("Failures per probe, week over week")
        ax.legend(loc="lower right", fontsize=8)
        charts["failures_per_probe"] = _png(fig)

    mix = report.errno_mix
    if not mix.is_empty():
        probes = report.probes.filter(pl.col("failures") > 0)["probe"].head(10).to_list()[::-1]
        top_errnos = mix.group_by("errno").agg(pl.col("count").sum()).sort("count", descending=True)["errno"].head(7).to_list()
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(probes) + 1.4))
        left = [0.0] * len(probes)
        colors = plt.get_cmap("tab10").colors
        for k, errno in enumerate([*top_errnos, "other"]):
            widths = []
            for p in probes:
                sub = mix.filter(pl.col("probe") == p)
                share = sub.filter(pl.col("errno").is_in(top_errnos) if errno == "other" else pl.col("errno") == errno)["share"].sum()
                widths.append(1 - share if errno == "other" else share)
            ax.barh(probes, widths, left=left, label=errno, color=colors[k % 10])
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the probe's failures")
        ax.set_title(f"Errno mix per probe, {report.week}")
        ax.tick_params(axis="y", labelsize=8)
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.2 / max(len(probes), 1)))
        charts["errno_mix"] = _png(fig)

    if not report.daily.is_empty():
        fig, ax = plt.subplots(figsize=(10.5, 3))
        days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        for which, style in (("current", "-o"), ("previous", "--o")):
            sub = report.daily.filter(pl.col("week") == which)
            if sub.is_empty():  # no data for the previous week: no flat line pretending zero
                continue
            values = dict(zip(sub["day"].to_list(), sub["failures"].to_list(), strict=True))
            ax.plot(days, [values.get(d, 0) for d in range(7)], style, label=report.week if which == "current" else "previous week")
        ax.set_ylabel("failures")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
        ax.set_ylim(bottom=0)
        ax.set_title("Fleet failures per day")
        ax.legend(fontsize=8)
        charts["daily_failures"] = _png(fig)

    if report.app_total:
        cats = [c for c in APP_CATEGORIES if report.app_summary.get(c)]
        fig, ax = plt.subplots(figsize=(9, 2.6))
        palette = {"probed": "#27ae60", "cleanup": "#2980b9", "read-only": "#8e44ad", "not probed": "#e67e22", "not mapped": "#7f8c8d"}
        left = 0.0
        for c in cats:
            w = report.app_summary[c]
            ax.barh([0], [w], left=left, color=palette[c], label=f"{c} {w:.0%}")
            if w > 0.06:
                ax.text(left + w / 2, 0, f"{w:.0%}", ha="center", va="center", color="white", fontsize=10, weight="bold")
            left += w
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        ax.set_title(f"Application-labelled failures ({report.app_total}) by kernel coverage")
        ax.legend(fontsize=8, ncol=len(cats), loc="upper center", bbox_to_anchor=(0.5, -0.25))
        charts["app_coverage"] = _png(fig)
    return charts


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1 else f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(f"{d['errno']}:{d['count']}" for d in value[:4]) + (" …" if len(value) > 4 else "")
    return str(value)


def _rows(frame: pl.DataFrame, columns: list[str], limit: int | None = None) -> list[list[str]]:
    frame = frame.head(limit) if limit else frame
    return [[_fmt(r[c]) for c in columns] for r in frame.iter_rows(named=True)]


def _sections(report: CoverageReport) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(title, note, header, rows) for each table, shared by HTML and Markdown."""
    probe_cols = ["probe", "layer", "invocations", "failures", "failure_rate", "prev_failures", "failures_change_pct", "trend", "hosts_live", "errno_counts"]
    gaps = report.groups.filter(pl.col("status").is_in(["missing", "partial"]))
    gate = report.groups.filter(pl.col("resolution").is_not_null()).unique(["kernel_release", "vendor", "resolution"], maintain_order=True)
    never = report.probes.filter(pl.col("never_fired"))
    out = [
        ("Probes", "Counters are exact even when the ring buffer overflows. Trend compares failures with the previous week.",
         probe_cols, _rows(report.probes, probe_cols)),
        ("Probes that never fired", "No invocation this week on any host (not attached, or the code path never ran).",
         ["probe", "layer", "hosts_live", "prev_invocations"], _rows(never, ["probe", "layer", "hosts_live", "prev_invocations"])),
        ("Probes missing on some kernels or vendors", "Probes reported as not attached (symbol absent, attach refused) on hosts of a (kernel, vendor) group. Vendor probes gated out by the namespace are left out.",
         ["kernel_release", "vendor", "probe", "hosts", "hosts_live", "hosts_not_attached", "status"],
         _rows(gaps, ["kernel_release", "vendor", "probe", "hosts", "hosts_live", "hosts_not_attached", "status"])),
        ("Namespace-gate resolution per host group", "Which vendor function carries each driver op slot on each group.",
         ["kernel_release", "vendor", "hosts", "resolution"], _rows(gate, ["kernel_release", "vendor", "hosts", "resolution"])),
        ("Application-labelled failures", f"{report.app_total} failing verbs calls this week, by whether their kernel counterpart is probed.",
         ["verb", "operation", "category", "failures", "share", "kernel_counterparts"],
         _rows(report.app, ["verb", "operation", "category", "failures", "share", "kernel_counterparts"])),
    ]
    if report.parse_problems:
        out.append(("Log lines that could not be parsed", "Reported, not fatal.", ["where", "reason", "line"],
                    [[p.source, p.reason, p.text[:160]] for p in report.parse_problems[:50]]))
    return out


def _summary_items(report: CoverageReport) -> list[tuple[str, str]]:
    inv = int(report.probes["invocations"].sum())
    fail = int(report.probes["failures"].sum())
    prev = int(report.probes["prev_failures"].sum())
    change = f"{(fail - prev) * 100 / prev:+.1f}%" if prev else "n/a"
    items = [
        ("hosts", f"{report.hosts:,}"),
        ("probes", str(report.probes.height)),
        ("invocations", f"{inv:,}"),
        ("failures", f"{fail:,} ({change} w/w)"),
        ("never fired", str(len(report.never_fired))),
    ]
    if report.app_total:
        items.append(("app failures on probed functions", f"{report.app_summary.get('probed', 0):.0%} of {report.app_total:,}"))
    return items


CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#222;padding:0 16px}
h1{font-size:24px;margin-bottom:4px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;font-size:13px} .note{color:#555;font-size:13px;margin:4px 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{background:#f5f7fa;border:1px solid #e1e5ea;border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:18px} .card span{font-size:12px;color:#666}
table{border-collapse:collapse;font-size:12px;width:100%} th,td{border:1px solid #e1e5ea;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f2f5} tr:nth-child(even) td{background:#fafbfc} td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts img{max-width:100%;display:block;margin:10px 0}
.empty{color:#888;font-style:italic}
"""


def render_html(report: CoverageReport, charts: dict[str, bytes]) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Probe coverage {e(report.week)}</title><style>{CSS}</style></head><body>",
        f"<h1>Probe coverage, {e(report.week)}</h1>",
        f"<div class='sub'>Week starting {report.start.isoformat()} (UTC)"
        + (f" · probe set {e(report.probe_set)}" if report.probe_set else "") + "</div>",
        "<div class='cards'>",
        *[f"<div class='card'><b>{e(v)}</b><span>{e(k)}</span></div>" for k, v in _summary_items(report)],
        "</div><div class='charts'>",
        *[f"<img alt='{e(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>" for name, png in charts.items()],
        "</div>",
    ]
    for title, note, header, rows in _sections(report):
        parts.append(f"<h2>{e(title)}</h2><div class='note'>{e(note)}</div>")
        if not rows:
            parts.append("<div class='empty'>none</div>")
            continue
        parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        for row in rows:
            cells = "".join(
                f"<td class='num'>{e(c)}</td>" if c.replace(",", "").replace(".", "", 1).lstrip("+-").isdigit() else f"<td>{e(c)}</td>"
                for c in row
            )
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(report: CoverageReport, chart_files: dict[str, str]) -> str:
    lines = [f"# Probe coverage, {report.week}", "", f"Week starting {report.start.isoformat()} (UTC).", ""]
    lines += [f"- **{k}**: {v}" for k, v in _summary_items(report)]
    lines.append("")
    lines += [f"![{name}]({path})" for name, path in chart_files.items()]
    for title, note, header, rows in _sections(report):
        lines += ["", f"## {title}", "", note, ""]
        if not rows:
            lines.append("_none_")
            continue
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _atomic_write(path: Path, data: bytes) -> None:
    atomic.write_bytes(path, data)


def write_report(report: CoverageReport, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write report.html, report.md, charts/*.png and the three Parquet tables into out_dir/<week>/."""
    out = Path(out_dir) / report.week
    atomic.make_dirs(out / "charts")
    charts = render_charts(report)
    chart_files = {}
    for name, png in charts.items():
        _atomic_write(out / "charts" / f"{name}.png", png)
        chart_files[name] = f"charts/{name}.png"
    written = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "probes": write_table(report.probes, out / "coverage_probes.parquet", "coverage_probes"),
        "groups": write_table(report.groups, out / "coverage_groups.parquet", "coverage_groups"),
        "app": write_table(report.app, out / "coverage_app.parquet", "coverage_app"),
    }
    _atomic_write(written["html"], render_html(report, charts).encode())
    _atomic_write(written["markdown"], render_markdown(report, chart_files).encode())
    return written
