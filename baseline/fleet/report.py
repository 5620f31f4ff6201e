"""Render an audit (baseline.fleet.audit.AuditResult) for people: a terminal summary and a
self-contained HTML page with plots (matplotlib PNGs embedded as base64)."""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import polars as pl

from baseline.fleet.audit import AuditResult
from tracer import atomic


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
            what = f" {r['probe']} {r['errno']}" if r["probe"] else ""
            lines.append(f"  {r['host']:<12} {r['alert']:<21}{what} since {_fmt_time(r['since'])}: {r['detail']}")
        if result.host_alerts.height > top:
            lines.append(f"  ... {result.host_alerts.height - top} more alerts")
    return "\n".join(lines).rstrip() + "\n"


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _plots(result: AuditResult, top: int = 8) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    open_ = result.findings.filter(pl.col("cluster_id").is_not_null()) if result.findings.height else result.findings
    if open_.height:
        top_ids = result.clusters.head(top)["cluster_id"].to_list()
        span = (result.window[1] - result.window[0]).total_seconds() if result.window[0] else 0
        every = "1h" if span > 6 * 3600 else "10m"
        series = (
            open_.filter(pl.col("cluster_id").is_in(top_ids))
            .group_by("cluster_id", pl.col("time").dt.truncate(every).alias("t"))
            .agg(pl.len().alias("n"))
            .sort("t")
        )
        fig, ax = plt.subplots(figsize=(9, 3.5))
        for cid in top_ids:
            s = series.filter(pl.col("cluster_id") == cid)
            ax.plot(s["t"].to_list(), s["n"].to_list(), marker=".", label=f"#{cid}")
        ax.set_ylabel(f"failures per {every}")
        ax.set_title("Root-cause clusters over time")
        ax.legend(fontsize=7, ncol=4)
        fig.autofmt_xdate()
        out.append(("Clusters over time", _png(fig)))

        fig, ax = plt.subplots(figsize=(9, 3.5))
        c = result.clusters.head(top)
        ax.barh([f"#{i}" for i in c["cluster_id"].to_list()][::-1], c["hosts"].to_list()[::-1])
        ax.set_xlabel("hosts")
        ax.set_title("Hosts touched per cluster")
        out.append(("Hosts per cluster", _png(fig)))

        layers = open_.group_by("origin_layer").agg(pl.len().alias("n")).sort("n", descending=True)
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar([str(x) for x in layers["origin_layer"].to_list()], layers["n"].to_list())
        ax.set_title("Origin layer of open findings")
        out.append(("Origin layers", _png(fig)))
    return out


def _table(df: pl.DataFrame, columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for r in df.select(columns).iter_rows():
        rows.append("<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in r) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def html_report(result: AuditResult, title: str = "tracebase fleet audit") -> str:
    """A self-contained HTML page (no external assets)."""
    plots = "".join(
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(name)}</figcaption></figure>'
        for name, data in _plots(result)
    )
    summary = html.escape(terminal_report(result, top=0).split("\n\n")[0])
    clusters = _table(result.clusters, ["cluster_id", "signature", "failures", "hosts", "jobs", "origin_layer",
                                        "first_seen", "last_seen", "trend", "example_trace_id"]) if result.clusters.height else "<p>none</p>"
    alerts = _table(result.host_alerts, ["host", "alert", "probe", "errno", "since", "score", "detail"]) if result.host_alerts.height else "<p>none</p>"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}th{{background:#eee}}pre{{background:#f6f6f6;padding:1em}}
figure{{display:inline-block;margin:0.5em}}</style></head><body>
<h1>{html.escape(title)}</h1><pre>{summary}</pre>
{plots}
<h2>Root-cause clusters</h2>{clusters}
<h2>Host alerts</h2>{alerts}
</body></html>
"""


def write_html(result: AuditResult, path: str | os.PathLike) -> Path:
    """Write the HTML report atomically."""
    return atomic.write_text(path, html_report(result))
