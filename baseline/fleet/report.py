"""Render an audit (baseline.fleet.audit.AuditResult) for people: a terminal summary and a
self-contained HTML page (the shared templates of baseline.templates: one style with the
coverage report, charts embedded as base64 PNG)."""

from __future__ import annotations

import datetime as dt
import math
import os
from pathlib import Path

import polars as pl

from baseline.fleet.audit import AuditResult
from baseline.templates import charts, num, render, when
from tracer import atomic
from tracer.errors import printable


def _fmt_time(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


def terminal_report(result: AuditResult, top: int = 15) -> str:
    """Plain-text summary: counts, top root-cause clusters, host alerts."""
    f = result.findings
    n_open = f.filter(~pl.col("expected")).height if f.height else 0
    n_expected = f.height - n_open
    lines = [
        f"audit window: {_fmt_time(result.window[0])} .. {_fmt_time(result.window[1])} UTC",
        f"findings: {f.height} ({n_open} open, {n_expected} expected errors set aside)"
        + (f" from {result.traces_audited} traces" if result.traces_audited else ""),
        f"root-cause clusters: {result.clusters.height}    host alerts: {result.host_alerts.height}",
        "",
    ]
    if result.clusters.height:
        lines.append(f"{'id':>3} {'fails':>7} {'hosts':>6} {'jobs':>5} {'origin':<9} {'trend':<8} first seen        signature")
        for r in result.clusters.head(top).iter_rows(named=True):
            deeper = " *" if "deeper than probes" in r["signature"] else ""
            lines.append(
                f"{r['cluster_id']:>3} {r['failures']:>7} {r['hosts']:>6} {r['jobs']:>5} {str(r['origin_layer']):<9} "
                f"{r['trend']:<8} {_fmt_time(r['first_seen'])}  {r['signature']}{deeper}"
            )
        if result.clusters.height > top:
            lines.append(f"    ... {result.clusters.height - top} more clusters")
        lines.append("")
    if result.host_alerts.height:
        lines.append("host alerts:")
        for r in result.host_alerts.head(top).iter_rows(named=True):
            what = " ".join(["", *(str(r[k]) for k in ("probe", "errno") if r[k])]) if r["probe"] else ""
            lines.append(f"  {r['host']:<12} {r['alert']:<21}{what} since {_fmt_time(r['since'])}: {r['detail']}")
        if result.host_alerts.height > top:
            lines.append(f"  ... {result.host_alerts.height - top} more alerts")
    # hosts, probes, signatures and details come from the data: one line each, inert in a terminal
    return "\n".join(printable(line) for line in lines).rstrip() + "\n"


TOP_CLUSTERS_OVER_TIME = 6
TABLE_ROWS = 40


def _bucket(result: AuditResult) -> str:
    lo, hi = result.window
    span = (hi - lo).total_seconds() if lo is not None and hi is not None else 0
    return "1h" if span > 12 * 3600 else "10m"


def _label(cluster_id: int, signature: str) -> str:
    return f"#{cluster_id} {signature}"


def cluster_panels(result: AuditResult, every: str, now: dt.datetime) -> list[tuple[str, list[dt.datetime], list[float]]]:
    """Per top cluster: (label naming its signature, bucket times, open findings per bucket).

    A bucket in which nothing at all was audited (no finding of any kind) is NaN, a gap: no data
    is not zero failures. Buckets after `now` are left out."""
    f = result.findings
    clustered = f.filter(pl.col("cluster_id").is_not_null()) if f.height else f
    if clustered.height == 0:
        return []
    lo = min(result.window[0] or f["time"].min(), now)
    hi = min(result.window[1] or f["time"].max(), now)  # never a future interval
    buckets = pl.datetime_range(pl.lit(lo).dt.truncate(every), pl.lit(hi).dt.truncate(every), every, eager=True,
                                time_zone="UTC", time_unit="ns").alias("t").to_frame()
    present = f.select(pl.col("time").dt.truncate(every).alias("t")).unique().with_columns(data=pl.lit(True))
    panels = []
    for cid, sig, total in result.clusters.head(TOP_CLUSTERS_OVER_TIME).select("cluster_id", "signature", "failures").iter_rows():
        counts = (
            clustered.filter(pl.col("cluster_id") == cid)
            .group_by(pl.col("time").dt.truncate(every).alias("t")).agg(n=pl.len())
        )
        series = (
            buckets.join(present, on="t", how="left").join(counts, on="t", how="left")
            .with_columns(pl.when(pl.col("data")).then(pl.col("n").fill_null(0)).otherwise(None).cast(pl.Float64))
            .sort("t")
        )
        values = [math.nan if v is None else v for v in series["n"].to_list()]
        panels.append((f"#{cid} ({total:,}) {sig}", series["t"].to_list(), values))
    return panels


def _charts(result: AuditResult, now: dt.datetime) -> dict[str, charts.Chart | None]:
    out: dict[str, charts.Chart | None] = {"over_time": None, "hosts": None, "layers": None}
    f = result.findings
    every = _bucket(result)
    panels = cluster_panels(result, every, now)
    if not panels:
        return out
    times = panels[0][1]
    out["over_time"] = charts.small_multiples(
        "clusters_over_time", "Open findings per cluster", panels, ylabel=f"per {every}",
        start=times[0], end=times[-1] if len(times) > 1 else times[0] + dt.timedelta(hours=1),
    )
    c = result.clusters.head(12)
    out["hosts"] = charts.hbar(
        "hosts_per_cluster", "Hosts touched per cluster",
        [_label(i, s) for i, s in c.select("cluster_id", "signature").iter_rows()], c["hosts"].to_list(), xlabel="hosts",
    )
    open_ = f.filter(~pl.col("expected"))
    if open_.height:
        # the layer breaks ties: group_by's order differs per process, and it is the bars' order
        layers = open_.group_by("origin_layer").agg(n=pl.len()).sort(["n", "origin_layer"], descending=[True, False], nulls_last=True)
        out["layers"] = charts.hbar(
            "origin_layers", "Open findings by origin layer",
            [str(x) for x in layers["origin_layer"].to_list()], layers["n"].to_list(), xlabel="open findings",
            color=charts.PALETTE[1],
        )
    return out


def _rows(df: pl.DataFrame, limit: int = TABLE_ROWS) -> list[dict[str, str]]:
    """Display strings: counts with separators, times to the minute, scores to 2 decimals."""
    out = []
    for r in df.head(limit).iter_rows(named=True):
        row = {}
        for k, v in r.items():
            if isinstance(v, dt.datetime):
                row[k] = when(v)
            elif k == "score" and v is not None:
                row[k] = f"{v:.2f}"
            else:
                row[k] = num(v)
        if "signature" in r and "deeper than probes" in (r["signature"] or ""):
            row["signature"] += " *"
        out.append(row)
    return out


def html_report(result: AuditResult, title: str = "tracebase fleet audit", now: dt.datetime | None = None) -> str:
    """A self-contained HTML page (no scripts, no external assets), from the shared templates."""
    now = now or dt.datetime.now(dt.UTC)
    f = result.findings
    n_open = f.filter(~pl.col("expected")).height if f.height else 0
    lo, hi = result.window
    hosts = f.filter(~pl.col("expected"))["host"].n_unique() if f.height else 0
    cards = [
        {"label": "findings", "value": num(f.height)},
        {"label": "open", "value": num(n_open), "tone": "bad" if n_open else "good"},
        {"label": "expected errors set aside", "value": num(f.height - n_open)},
        {"label": "root-cause clusters", "value": num(result.clusters.height)},
        {"label": "hosts with open findings", "value": num(hosts)},
        {"label": "host alerts", "value": num(result.host_alerts.height), "tone": "warn" if result.host_alerts.height else ""},
    ]
    subtitle = f"Window {when(lo)} – {when(hi)} UTC" if lo is not None else "Empty window"
    if result.traces_audited:
        subtitle += f" · {result.traces_audited:,} traces audited"
    return render(
        "audit.html.j2", kind="Fleet audit", title=title, subtitle=subtitle, cards=cards, has_findings=f.height > 0,
        window=result.window, bucket=_bucket(result).replace("1h", "hour").replace("10m", "10 minutes"),
        top=min(TOP_CLUSTERS_OVER_TIME, result.clusters.height), charts=_charts(result, now),
        clusters=_rows(result.clusters), clusters_total=result.clusters.height,
        alerts=_rows(result.host_alerts), alerts_total=result.host_alerts.height, generated=now,
    )


def write_html(result: AuditResult, path: str | os.PathLike) -> Path:
    """Write the HTML report atomically."""
    return atomic.write_text(path, html_report(result))
