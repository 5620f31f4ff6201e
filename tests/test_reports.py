"""Both HTML reports (fleet audit, weekly coverage) from the one template set: readable numbers
and charts, "no data" notices, and, when Chromium is installed, a real render in headless
Chromium with no console errors and every chart decoded (screenshots kept for people to look at:
set TRACEBASE_SCREENSHOTS=DIR to keep them there)."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import sys
from pathlib import Path

import polars as pl
import pytest
from browser import chromium, open_page
from test_coverage import APP_LINES, PROBE_SET, build_dataset

from baseline.fleet.audit import AuditResult, run_audit
from baseline.fleet.report import cluster_panels, html_report
from baseline.pipeline.coverage import _daily_series, render_charts, weekly_report, write_report
from baseline.pipeline.nccl import parse_nccl_lines
from baseline.run.allowlist import ExpectedErrors
from baseline.templates import charts, pct
from tracer.schema import polars_schema

NOW = dt.datetime(2026, 11, 26, 15, 30, tzinfo=dt.UTC)  # Thursday of 2026-W48


@pytest.fixture(scope="module")
def audit(tmp_path_factory) -> AuditResult:
    from baseline.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("fleet")
    simulate(root, hosts=12, hours=6, seed=5, start="2026-11-26T06:00:00Z")
    return run_audit(root, expected=ExpectedErrors([]))


@pytest.fixture(scope="module")
def coverage(tmp_path_factory):
    root = build_dataset(tmp_path_factory.mktemp("cov") / "ds")
    parsed = parse_nccl_lines(APP_LINES, "app.log")
    return weekly_report(root, week="2026-W48", probe_set=PROBE_SET, app_failures=parsed.failures,
                         parse_problems=parsed.problems)


def empty_audit() -> AuditResult:
    return AuditResult(pl.DataFrame(schema=polars_schema("findings")), pl.DataFrame(schema=polars_schema("clusters")),
                       pl.DataFrame(schema=polars_schema("host_alerts")))


def visible_text(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<img [^>]*>", "", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


def assert_readable(page: str) -> None:
    text = visible_text(page)
    assert not re.search(r"\d\d:\d\d:\d\d", text), "times are shown to the minute"
    # a number with four or more decimals is unrounded; a dotted version (a NIC firmware's
    # 28.41.1000, which a cluster names when its hosts share it) is not a number
    assert not re.search(r"(?<![\d.])\d+\.\d{4,}(?![\d.])", text), "no unrounded numbers"
    assert "http://" not in page and "https://" not in page and "<script" not in page  # self-contained


# --------------------------------------------------------------------------------------------
# the audit report
# --------------------------------------------------------------------------------------------
def test_audit_report_is_readable(audit):
    page = html_report(audit, now=NOW + dt.timedelta(days=1))
    assert_readable(page)
    assert page.count("data:image/png;base64,") == 3
    top = audit.clusters.row(0, named=True)
    # the chart legend names each cluster by its signature, not by a bare id
    alts = re.findall(r'alt="([^"]*)"', page)
    (over_time,) = [a for a in alts if a.startswith("Open findings per cluster")]
    assert f"#{top['cluster_id']} ({top['failures']:,}) {top['signature'][:40]}" in over_time
    (hosts,) = [a for a in alts if a.startswith("Hosts touched per cluster")]
    assert f"#{top['cluster_id']} {top['signature'][:40]}" in hosts
    assert "Fleet audit" in page and "Root-cause clusters" in page


def test_cluster_series_gaps_and_no_future(audit):
    every = "10m"
    f = audit.findings
    start = f["time"].min()
    # Cut the window short: a 'now' inside it; and drop every finding of one interval (no data then).
    now = start + dt.timedelta(hours=3)
    hole = (start + dt.timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
    holed = AuditResult(f.filter(pl.col("time").dt.truncate(every) != hole), audit.clusters, audit.host_alerts,
                        window=audit.window)
    panels = cluster_panels(holed, every, now)
    assert panels
    for _, times, values in panels:
        assert max(times) <= now  # nothing after now
        gaps = [t for t, v in zip(times, values, strict=True) if math.isnan(v)]
        assert hole in gaps  # an interval without data is a gap, not a zero
        assert all(v == int(v) for v in values if not math.isnan(v))
    # a cluster that did not fail in an interval with data is a real zero
    assert any(v == 0 for _, _, values in panels for v in values)


def test_empty_audit_says_no_data():
    page = html_report(empty_audit(), now=NOW)
    assert "No findings in this window" in page and "No host alerts in this window" in page
    assert "data:image/png" not in page


# --------------------------------------------------------------------------------------------
# the coverage report
# --------------------------------------------------------------------------------------------
def test_coverage_report_headline_and_numbers(coverage, tmp_path):
    page = write_report(coverage, tmp_path, now=NOW)["html"].read_text()
    assert_readable(page)
    # headline: seen by a live probe (none here: host gpu-1 is not in the dataset), the rest by operation
    assert "0 %" in page and "of 99 application-labelled failures" in page
    assert "reg_mr" in visible_text(page) and "dealloc_pd" in visible_text(page)
    assert "8.00 %" in page and "+200 %" in page  # failure rate and week-over-week change, rounded
    md = (tmp_path / "2026-W48" / "report.md").read_text()
    assert "| ib_uverbs_reg_mr | uverbs | 150 | 12 | 8.00 % | 4 | +200 % | rising | 3 | EFAULT 8, ENOMEM 4 |" in md


def test_coverage_charts_log_scale_integer_ticks_and_no_future_days(coverage):
    cs = render_charts(coverage, now=NOW)
    assert set(cs) == {"app_coverage", "failures_per_probe", "errno_mix", "daily_failures"}
    # Thursday: Fri..Sun of this week are not plotted; the previous week has no data on most days
    cur = _daily_series(coverage, "current", NOW.date())
    assert [math.isnan(v) for v in cur[4:]] == [True, True, True] and cur[2] == 20  # Wed: host a 10 + 6, host b 2 + 2
    prev = _daily_series(coverage, "previous", NOW.date())
    assert prev[2] == 9 and sum(not math.isnan(v) for v in prev) == 1  # days without counters are gaps
    assert "Fri" not in cs["daily_failures"].alt.split(":", 1)[1].split("previous")[0]
    # one dominant bar turns the axis logarithmic, each bar labelled
    big = charts.hbar("t", "t", ["routine", "rare"], [5_000_000, 3], xlabel="failures")
    assert "(log scale)" in big.alt and "rare 3" in big.alt
    small = charts.hbar("t", "t", ["a", "b"], [10, 3], xlabel="failures")
    assert "(log scale)" not in small.alt


def test_count_axes_have_integer_ticks():
    plt = charts._pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 3])
    charts._value_axis(ax.yaxis, [1, 3])
    ticks = [t for t in ax.get_yticks() if 0 <= t <= 3]
    plt.close(fig)
    assert ticks and all(t == int(t) for t in ticks)


def test_empty_week_says_no_data(tmp_path):
    root = build_dataset(tmp_path / "ds")
    report = weekly_report(root, week="2026-W40", probe_set=PROBE_SET)
    page = write_report(report, tmp_path / "out", now=NOW)["html"].read_text()
    assert "No data for 2026-W40" in page and "No application-labelled failures this week" in page
    assert "No probe counted a failure this week or the week before" in page
    assert "data:image/png" not in page


def test_percentages_do_not_round_to_the_ends():
    assert pct(553 / 555) == "99.6 %" and pct(1.0) == "100 %" and pct(0.004) == "<1 %" and pct(0.734) == "73 %"


# --------------------------------------------------------------------------------------------
# rendered in headless Chromium
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    if not chromium():
        reason = "chromium not installed (apt-get install chromium; scripts/setup.sh installs it as root)"
        print(f"SKIP (browser): {reason}", file=sys.stderr)
        pytest.skip(reason)
    keep = os.environ.get("TRACEBASE_SCREENSHOTS")
    out = Path(keep) if keep else tmp_path_factory.mktemp("shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.mark.parametrize("which", ["audit", "audit-empty", "coverage", "coverage-empty"])
def test_reports_render_in_chromium_without_errors(which, audit, coverage, shots, tmp_path):
    if which == "audit":
        page = html_report(audit, now=NOW + dt.timedelta(days=1))
    elif which == "audit-empty":
        page = html_report(empty_audit(), now=NOW)
    elif which == "coverage":
        page = write_report(coverage, tmp_path, now=NOW)["html"].read_text()
    else:
        empty = weekly_report(build_dataset(tmp_path / "ds"), week="2026-W40", probe_set=PROBE_SET)
        page = write_report(empty, tmp_path, now=NOW)["html"].read_text()
    html = tmp_path / f"{which}.html"
    html.write_text(page)
    result = open_page(html, shots / f"{which}.png")
    print(f"screenshot: {shots / f'{which}.png'} ({result.height} px tall)", file=sys.stderr)
    assert result.errors == []
    assert result.broken_images == [] and result.images == page.count("<img ")
    assert (shots / f"{which}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 600 < result.height < 12_000
    assert ("No data" in result.text) == which.endswith("empty")
