"""Weekly probe-coverage report on a constructed dataset with known answers."""

from __future__ import annotations

import base64
import datetime as dt
import re
from pathlib import Path

import polars as pl
import pytest

from baseline.pipeline.coverage import week_start, weekly_report, write_report
from baseline.pipeline.nccl import parse_nccl_lines
from tracer.errors import TracebaseError
from tracer.schema import partition_path, read, write_table

REPO = Path(__file__).resolve().parents[1]
PROBE_SET = REPO / "bpf" / "probes" / "rdma.yaml"
THIS_WEEK = dt.datetime(2026, 11, 25, 12, tzinfo=dt.UTC)  # Wednesday of 2026-W48
LAST_WEEK = THIS_WEEK - dt.timedelta(days=7)

# host -> (kernel, vendor); probe rows: (when, probe, live, invocations, failures, errnos)
HOSTS = {"a": ("6.8.0", "mlx5"), "b": ("6.8.0", "bnxt_re"), "c": ("6.11.0", "mlx5")}
ROWS = {
    "a": [
        (THIS_WEEK, "ib_uverbs_reg_mr", True, 100, 10, {"EFAULT": 6, "ENOMEM": 4}),
        (THIS_WEEK, "mlx5_ib_reg_user_mr", True, 100, 6, {"EFAULT": 6}),
        (THIS_WEEK, "ib_uverbs_create_qp", True, 50, 0, {}),
        (LAST_WEEK, "ib_uverbs_reg_mr", True, 80, 4, {"EFAULT": 4}),
        (LAST_WEEK, "ib_uverbs_create_qp", True, 50, 5, {"ETIMEDOUT": 5}),
    ],
    "b": [
        (THIS_WEEK, "ib_uverbs_reg_mr", True, 40, 2, {"EFAULT": 2}),
        (THIS_WEEK, "bnxt_re_reg_user_mr", True, 40, 2, {"EFAULT": 2}),
    ],
    "c": [
        (THIS_WEEK, "ib_uverbs_reg_mr", True, 10, 0, {}),
        (THIS_WEEK, "mlx5_ib_reg_user_mr", False, 0, 0, {}),  # symbol missing on this kernel
    ],
}


def build_dataset(root: Path, interval_s: float | None = 5.0) -> Path:
    for host, rows in ROWS.items():
        kernel, vendor = HOSTS[host]
        for when in {r[0] for r in rows}:
            sel = [r for r in rows if r[0] == when]
            frame = pl.DataFrame(
                {
                    "host": host, "snapshot_time": [when] * len(sel), "interval_s": pl.Series([interval_s] * len(sel), dtype=pl.Float64), "kernel_release": kernel,
                    "vendor": vendor, "probe_set": "rdma", "probe": [r[1] for r in sel], "layer": None,
                    "live": [r[2] for r in sel], "invocations": [r[3] for r in sel], "failures": [r[4] for r in sel],
                    "errno_counts": [[{"errno": e, "count": c} for e, c in r[5].items()] for r in sel],
                    "lost_records": 0,
                }
            )
            write_table(frame, partition_path(root, "counters", when.date().isoformat(), host, "part-0.parquet"), "counters")
    return root


APP_LINES = (
    ["gpu-1:10:11 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14"] * 73
    + ["gpu-1:10:11 [0] NCCL WARN Call to ibv_dealloc_pd failed with error Device or resource busy errno 16"] * 21
    + ["gpu-1:10:11 [0] NCCL WARN Call to ibv_query_gid failed with error Invalid argument errno 22"] * 3
    + ["gpu-1:10:11 [0] NCCL WARN Call to ibv_post_send failed with error Cannot allocate memory errno 12"] * 2
    + ["2026-11-10T00:00:00Z gpu-1:10:11 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14"]  # other week
    + ["gpu-1:10 [0] NCCL WARN Call to ibv_reg_mr failed"]  # malformed
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = build_dataset(tmp_path_factory.mktemp("cov") / "ds")
    parsed = parse_nccl_lines(APP_LINES, "app.log")
    return weekly_report(root, week="2026-W48", probe_set=PROBE_SET, app_failures=parsed.failures,
                         parse_problems=parsed.problems)


def probe_row(report, probe: str) -> dict:
    return report.probes.filter(pl.col("probe") == probe).row(0, named=True)


def test_per_probe_counts_errno_mix_and_trend(report):
    assert report.week == "2026-W48" and report.hosts == 3
    reg = probe_row(report, "ib_uverbs_reg_mr")
    assert (reg["invocations"], reg["failures"], reg["prev_failures"], reg["hosts_live"]) == (150, 12, 4, 3)
    assert reg["failure_rate"] == pytest.approx(12 / 150)
    assert reg["failures_change_pct"] == pytest.approx(200.0) and reg["trend"] == "rising"
    assert sorted((d["errno"], d["count"]) for d in reg["errno_counts"]) == [("EFAULT", 8), ("ENOMEM", 4)]
    mix = report.errno_mix.filter(pl.col("probe") == "ib_uverbs_reg_mr")
    assert dict(mix.select("errno", "share").rows()) == pytest.approx({"EFAULT": 8 / 12, "ENOMEM": 4 / 12})
    qp = probe_row(report, "ib_uverbs_create_qp")
    assert (qp["failures"], qp["prev_failures"], qp["trend"]) == (0, 5, "gone")
    assert probe_row(report, "bnxt_re_reg_user_mr")["trend"] == "new"


def test_never_fired_includes_probe_set_members_without_data(report):
    never = set(report.never_fired)
    assert {"ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR", "ib_uverbs_modify_qp", "__ib_umem_get", "bnxt_re_create_qp"} <= never
    assert "ib_uverbs_reg_mr" not in never
    assert not any(p.startswith("irdma_") for p in report.probes["probe"])  # no irdma host in the fleet


def test_groups_missing_gated_and_namespace_resolution(report):
    g = report.groups
    status = {(r["kernel_release"], r["vendor"], r["probe"]): (r["status"], r["hosts_live"]) for r in g.iter_rows(named=True)}
    assert status[("6.11.0", "mlx5", "mlx5_ib_reg_user_mr")] == ("missing", 0)  # reported live=false
    assert status[("6.11.0", "mlx5", "ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR")] == ("no data", 0)  # never called: not a gap
    assert status[("6.8.0", "mlx5", "mlx5_ib_reg_user_mr")] == ("live", 1)
    assert status[("6.8.0", "bnxt_re", "mlx5_ib_reg_user_mr")] == ("gated", 0)
    assert status[("6.8.0", "mlx5", "bnxt_re_reg_user_mr")] == ("gated", 0)
    res = set(g.filter((pl.col("vendor") == "bnxt_re") & pl.col("resolution").is_not_null())["resolution"])
    assert "ops.reg_user_mr -> bnxt_re_reg_user_mr (live on 1/1)" in res
    assert "ops.create_qp -> bnxt_re_create_qp (no data this week)" in res
    res_c = set(g.filter(pl.col("kernel_release") == "6.11.0")["resolution"].drop_nulls())
    assert "ops.reg_user_mr -> mlx5_ib_reg_user_mr (not attached on 1/1)" in res_c


def test_application_failure_coverage_matches_the_73_percent_shape(report):
    assert report.app_total == 99  # the line dated in another week is left out
    assert report.app_summary == pytest.approx(
        {"probed": 73 / 99, "cleanup": 21 / 99, "read-only": 3 / 99, "not probed": 0.0, "not mapped": 2 / 99,
         "seen": 0.0}  # host gpu-1 is not in the dataset: no probe there saw them
    )
    cats = dict(report.app.select("verb", "category").rows())
    assert cats == {"ibv_reg_mr": "probed", "ibv_dealloc_pd": "cleanup", "ibv_query_gid": "read-only", "ibv_post_send": "not mapped"}
    assert [p.source for p in report.parse_problems] == ["app.log:101"]


def test_written_report_is_self_contained(report, tmp_path):
    written = write_report(report, tmp_path)
    html = written["html"].read_text()
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 4
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert "http://" not in html and "https://" not in html  # nothing fetched from the network
    assert "ops.reg_user_mr -&gt; bnxt_re_reg_user_mr (live on 1/1)" in html
    md = written["markdown"].read_text()
    assert "| ib_uverbs_reg_mr | uverbs | 150 | 12 | 8.00 % | 4 | +200 % | rising | 3 | EFAULT 8, ENOMEM 4 |" in md  # layer from the probe set
    assert (tmp_path / "2026-W48" / "charts" / "errno_mix.png").is_file()
    assert read(written["probes"], "coverage_probes").height == report.probes.height
    assert read(written["app"], "coverage_app")["failures"].sum() == 99


def test_week_parsing_and_errors(tmp_path):
    assert week_start("2026-W48") == dt.date(2026, 11, 23)
    assert week_start("2026-11-29") == dt.date(2026, 11, 23)
    with pytest.raises(TracebaseError, match="--week: expected an ISO week like 2026-W48 or a date, found 'last'"):
        week_start("last")
    with pytest.raises(TracebaseError, match="dataset directory does not exist"):
        weekly_report(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TracebaseError, match="no counters in the dataset"):
        weekly_report(tmp_path / "empty")


def test_cli_coverage(tmp_path):
    from test_ingest import run_cli

    root = build_dataset(tmp_path / "ds")
    log = tmp_path / "nccl.log"
    log.write_text("\n".join(APP_LINES) + "\n")
    status, out, err = run_cli("coverage", str(root), "--week", "2026-W48", "--probes", str(PROBE_SET),
                               "--nccl-logs", str(log), "--out", str(tmp_path / "out"))
    assert status == 0, err
    assert "2026-W48: 3 hosts" in out and "74% of 99 app failures on probed functions" in out
    assert "warning: " in err and "nccl.log:101" in err
    # a log named twice, or named and matched by a glob, or under another name, is read once
    (tmp_path / "same.log").symlink_to(log)
    status, again, err = run_cli("coverage", str(root), "--week", "2026-W48", "--probes", str(PROBE_SET),
                                 "--nccl-logs", str(log), str(log), str(tmp_path / "*.log"),
                                 "--out", str(tmp_path / "out2"))
    assert status == 0 and "74% of 99 app failures on probed functions" in again, again + err
    # a glob matching nothing (a typo, a week without logs) is said, not taken silently for no logs
    status, again, err = run_cli("coverage", str(root), "--week", "2026-W48", "--probes", str(PROBE_SET),
                                 "--nccl-logs", str(log), str(tmp_path / "ncl-*.log"), "--out", str(tmp_path / "out3"))
    assert status == 0 and "74% of 99 app failures on probed functions" in again, again + err
    assert f"warning: {tmp_path}/ncl-*.log: a glob that matched no file (no application failures read from it)" in err
    status, _, err = run_cli("coverage", str(root), "--week", "someday")
    assert status == 2 and err == "baseline: error: --week: expected an ISO week like 2026-W48 or a date, found 'someday'\n"
    status, _, err = run_cli("coverage", str(root), "--probes", str(tmp_path / "none.yaml"))
    assert status == 2 and "none.yaml: no such probe set file" in err


def test_a_week_without_counters_is_said(tmp_path):
    """A report of a week no host reported counters in (a mistyped --week, a fleet that
    stopped shipping) is still written, with a warning naming the weeks the dataset has; a
    week with counters gets none."""
    from test_ingest import run_cli

    from baseline.pipeline.coverage_inputs import counter_weeks, empty_week_note

    root = build_dataset(tmp_path / "ds")
    assert counter_weeks(root) == ["2026-W47", "2026-W48"]
    status, out, err = run_cli("coverage", str(root), "--week", "2026-W10", "--out", str(tmp_path / "out"))
    assert status == 0, err
    assert "2026-W10: 0 hosts, 0 probes" in out and (tmp_path / "out" / "2026-W10" / "report.md").is_file()
    assert err == ("baseline coverage: warning: no host reported counters in 2026-W10: the report is empty "
                   "(the dataset's counters cover 2026-W47 to 2026-W48)\n")
    status, out, err = run_cli("coverage", str(root), "--week", "2026-W48", "--out", str(tmp_path / "out"))
    assert status == 0 and "warning" not in err, err
    assert empty_week_note(tmp_path / "empty", "2026-W48", 0).endswith("(the dataset has no counters)")
    assert empty_week_note(root, "2026-W48", 3) is None


# interval_s values no interval can have (another writer's): the failure is looked for in the
# 5 s before a snapshot, as with no interval given; an infinite one was "internal error:
# OverflowError", a NaN one a ValueError (battery 50's borderline, found on coverage)
@pytest.mark.parametrize("interval_s", [5.0, None, 0.0, -5.0, float("nan"), float("inf"), float("-inf")])
def test_app_failures_seen_by_a_live_probe_at_that_time(tmp_path, interval_s):
    """The headline: a failure counts as seen when a live probe on a kernel counterpart of its
    verb counted a failure on the same host in the snapshot after it."""
    root = build_dataset(tmp_path / "ds", interval_s)  # host a: ib_uverbs_reg_mr failed 10x in the snapshot at THIS_WEEK
    at = THIS_WEEK - dt.timedelta(seconds=3)
    stamp = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.000Z")  # noqa: E731
    lines = [
        f"{stamp(at)} a:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # seen
        f"{stamp(at)} A.cluster.example:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # FQDN: seen
        f"{stamp(at)} c:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # c counted no failure
        f"{stamp(at - dt.timedelta(hours=1))} a:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # no snapshot then
        f"{stamp(at)} a:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with error Invalid argument errno 22",  # its probes counted nothing
        "a:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # untimed, a failed this week: seen
        f"{stamp(at)} a:1:2 [0] NCCL WARN Call to ibv_dealloc_pd failed with error Device or resource busy errno 16",  # cleanup
    ]
    parsed = parse_nccl_lines(lines, "job.log")
    report = weekly_report(root, week="2026-W48", probe_set=PROBE_SET, app_failures=parsed.failures)
    page = write_report(report, tmp_path / "out")["html"].read_text()
    assert "42.9 %" not in page and "43 %" in page and "of 7 application-labelled failures" in page
    app = {r["verb"]: (r["failures"], r["seen"], r["category"]) for r in report.app.iter_rows(named=True)}
    assert app == {"ibv_reg_mr": (5, 3, "probed"), "ibv_modify_qp": (1, 0, "probed"), "ibv_dealloc_pd": (1, 0, "cleanup")}
    assert report.app_summary["seen"] == pytest.approx(3 / 7)


def test_a_counter_reset_adds_no_negative_calls(tmp_path):
    """A daemon restarted under an exporter that ships cumulative counts as new - old sends one
    snapshot whose deltas go backwards: the report counts it from 0 up, as the audit does
    (tracer.schema.counted_delta). Before, host d's -500 calls and -40 EFAULT were summed:
    ib_uverbs_reg_mr's week showed fewer calls and failures than the probes counted."""
    root = build_dataset(tmp_path / "ds")
    later = THIS_WEEK + dt.timedelta(minutes=1)
    rows = [(THIS_WEEK, 30, 3, 3), (later, -500, -40, -40), (later + dt.timedelta(minutes=1), 20, 1, 1)]
    frame = pl.DataFrame(
        {
            "host": "d", "snapshot_time": [r[0] for r in rows], "interval_s": 60.0, "kernel_release": "6.8.0",
            "vendor": "mlx5", "probe_set": "rdma", "probe": "ib_uverbs_reg_mr", "layer": None, "live": True,
            "invocations": [r[1] for r in rows], "failures": [r[2] for r in rows],
            "errno_counts": [[{"errno": "EFAULT", "count": r[3]}] for r in rows], "lost_records": 0,
        }
    )
    write_table(frame, partition_path(root, "counters", THIS_WEEK.date().isoformat(), "d", "part-0.parquet"), "counters")
    report = weekly_report(root, week="2026-W48", probe_set=PROBE_SET)
    reg = probe_row(report, "ib_uverbs_reg_mr")
    # hosts a, b, c: 150 calls, 12 failures, EFAULT 8 (test_per_probe_counts_errno_mix_and_trend); d: 50, 4, 4
    assert (reg["invocations"], reg["failures"]) == (200, 16)
    assert sorted((d["errno"], d["count"]) for d in reg["errno_counts"]) == [("EFAULT", 12), ("ENOMEM", 4)]
    day = report.daily.filter((pl.col("week") == "current") & (pl.col("failures") > 0))
    assert day["failures"].sum() == 16 + 4 + 4  # every probe's failures of the week: a, b, d (from 0 up)


def test_a_snapshot_delivered_twice_counts_once(tmp_path):
    """A spool re-sent after a crash repeats host a's snapshot of THIS_WEEK in a second part
    file: counted once (its first copy, tracer.schema.SNAPSHOT_KEY), as the audit counts it."""
    root = build_dataset(tmp_path / "ds")
    first = partition_path(root, "counters", THIS_WEEK.date().isoformat(), "a", "part-0.parquet")
    again = read([first], "counters").filter(pl.col("snapshot_time") == THIS_WEEK)
    write_table(again, first.with_name("part-resent.parquet"), "counters")
    report = weekly_report(root, week="2026-W48", probe_set=PROBE_SET)
    reg = probe_row(report, "ib_uverbs_reg_mr")
    assert again.height == 3 and (reg["invocations"], reg["failures"]) == (150, 12)
    assert sorted((d["errno"], d["count"]) for d in reg["errno_counts"]) == [("EFAULT", 8), ("ENOMEM", 4)]
