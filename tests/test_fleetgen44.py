"""The weekly probe-coverage report (`baseline coverage`) scored on tests/fleetgen44, a forty-fourth
fleet generator written blind (from reference/rdma_control_path.yaml, tracer/schema.py, README.md,
docs/architecture.md, bpf/probes/*.yaml, tests/fleet_harness.py and the other generators'
docstrings; without reading the simulator, the other generators' code, or the coverage code).

What it is for: COVERAGE EXACTNESS. Three ISO weeks (2026-W52, 2026-W53 -- 2026 has a week 53, it
holds the new year -- and 2027-W01) of counter snapshots of the rdma probe set on eight hosts of
four (kernel, vendor) groups, with every per-probe total computed by the generator from the rows
it wrote: invocations, failures, errno mix, week-over-week change and trend, hosts live, probes
that never fired (and ones that fired on one host), the OFED-only probes not attached on the
bnxt_re groups (missing there, not never fired), one host's refused attach (partial), a cumulative
exporter's counter reset (a negative delta row counts nothing, the counts before it stay), a day's
snapshots delivered twice, a daemon down for 7 hours, a host joining and one leaving mid-week,
snapshots 5 s either side of both Monday 00:00 UTC boundaries and of the new year, and NCCL logs
whose failures a live probe saw or did not (an exact fraction per week).

What the report must say (the decisions, argued in tests/fleetgen44/__init__.py): every number
of `--json`, coverage_probes, coverage_groups and coverage_app equal to the truth (floats: the
same ratio of the exact integers); the same tables read from the counters files alone (without
the 15-minute summaries); `--week` as a date of the week, the default week the newest data's, an
ISO week that does not exist refused (exit 2). What the report gets wrong is a strict xfail.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from fleet_harness import (
    assert_counters_agree_with_the_records,
    assert_files_valid_and_truth_one_row_per_record,
    assert_generator_is_blind,
    assert_trees_from_the_reference,
    dataset_counters,
)
from fleetgen44 import (
    FAMILIES,
    GAP,
    HOSTS,
    JOINS,
    LAYER,
    LEAVES,
    SNAP,
    TREE_FAMILY,
    TREES,
    WEEKS,
    generate,
    host_probes,
    iso_week,
)

from tracer.schema import read

# 8 hosts x 3 weeks, a snapshot a host every half hour: ~92,000 counters rows (~5 s of CPU to
# build, ~3 s a week to report); the control: the same fleet without a failure or a job log
SHAPE = {"seed": 44}
CONTROL = {"seed": 4444, "faults": False}
BASELINE = Path(sys.executable).with_name("baseline")
PROBES = Path(__file__).resolve().parents[1] / "bpf" / "probes" / "rdma.yaml"
TABLES = {"probes": "coverage_probes", "groups": "coverage_groups", "app": "coverage_app"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BASELINE), *args], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def _coverage(root: Path, *args: str) -> dict:
    done = _run("coverage", str(root), "--probes", str(PROBES), "--json", *args)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def _tables(report: dict) -> dict[str, pl.DataFrame]:
    return {k: read(report["files"][k], t) for k, t in TABLES.items()}


@pytest.fixture(scope="module")
def fleet44(tmp_path_factory, generated_fleet):
    root = tmp_path_factory.mktemp("fleetgen44") / "fleet"
    summary = generated_fleet("fleetgen44", generate, root, **SHAPE)
    reports = {w: _coverage(root, "--week", w) for w in WEEKS}
    print(json.dumps({w: {k: v for k, v in r.items() if k != "files"} for w, r in reports.items()}, indent=1))
    return root, summary, reports


@pytest.fixture(scope="module")
def control44(tmp_path_factory, generated_fleet):
    root = tmp_path_factory.mktemp("fleetgen44-control") / "fleet"
    summary = generated_fleet("fleetgen44", generate, root, **CONTROL)
    return root, summary, _coverage(root, "--week", "2026-W53")


# ------------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------------
def test_generator_is_blind():
    assert_generator_is_blind("fleetgen44", tracer_modules={"tracer.schema"})


def test_trees_from_the_reference():
    assert_trees_from_the_reference(TREES, FAMILIES, LAYER, TREE_FAMILY)
    # every probe a host reports is one of the rdma set, resolved for its vendor
    text = PROBES.read_text()
    for host in HOSTS:
        for probe in host_probes(host):
            assert probe in text, (host, probe)


def test_files_valid_and_counters_exact(fleet44, control44):
    for root, _, _ in (fleet44, control44):
        assert_files_valid_and_truth_one_row_per_record(root)
    assert_counters_agree_with_the_records(fleet44[0], FAMILIES)
    assert_counters_agree_with_the_records(control44[0], {})


def test_generator_deterministic(tmp_path, fleet44):
    """The same seed writes the same counters and truth; another seed other ones."""
    _, summary, _ = fleet44
    again = generate(tmp_path / "a", **SHAPE)
    assert again == summary
    other = generate(tmp_path / "b", seed=45)
    assert other["coverage"] != summary["coverage"]
    a, b = (dataset_counters(tmp_path / n).sort("host", "snapshot_time", "probe") for n in ("a", "b"))
    assert a.height == summary["rows"] and not a.equals(b)


def test_the_cases_are_in_the_data(fleet44):
    """The data as the theme means it: 2026 has an ISO week 53 holding the new year (2025 has
    none); the host that joins, the one that leaves and the daemon's gap; the exporter's
    negative row; the snapshots delivered twice; the boundary snapshots."""
    root, summary, _ = fleet44
    assert dt.date(2026, 12, 31).isocalendar()[:2] == (2026, 53) and iso_week(dt.datetime(2027, 1, 1)) == "2026-W53"
    assert dt.date(2025, 12, 28).isocalendar()[1] == 52 and dt.date(2027, 1, 4).isocalendar()[:2] == (2027, 1)
    cov = summary["coverage"]
    assert [len(cov[w]["hosts"]) for w in WEEKS] == [7, 8, 7]
    assert JOINS[0] not in cov["2026-W52"]["hosts"] and LEAVES[0] not in cov["2027-W01"]["hosts"]
    raw = read(sorted((root / "counters").rglob("*.parquet")), "counters")
    gap = raw.filter((pl.col("host") == GAP[0]) & pl.col("snapshot_time").is_between(GAP[1], GAP[2], closed="left"))
    assert gap.height == 0
    assert raw.filter(pl.col("invocations") < 0)["host"].unique().to_list() == ["fg44-b01"]
    assert raw.height > dataset_counters(root).height  # a day delivered twice
    edges = [b + d for b in (dt.datetime(2026, 12, 28, tzinfo=dt.UTC), dt.datetime(2027, 1, 1, tzinfo=dt.UTC),
                             dt.datetime(2027, 1, 4, tzinfo=dt.UTC)) for d in (-SNAP, SNAP)]
    boundary = dataset_counters(root).filter((pl.col("host") == "fg44-a01") & (pl.col("probe") == "mlx5_ib_create_qp")
                                             & pl.col("snapshot_time").is_in(edges))
    assert boundary.height == 6
    assert [iso_week(t) for t in boundary.sort("snapshot_time")["snapshot_time"]] == [
        "2026-W52", "2026-W53", "2026-W53", "2026-W53", "2026-W53", "2027-W01"]
    # a probe that fired on one host only, never fired ones, a missing group, trends of every kind
    probes = cov["2026-W53"]["probes"]
    assert probes["ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"]["hosts_fired"] == ["fg44-a01"]
    assert cov["2027-W01"]["never_fired"] and cov["2026-W53"]["never_fired"]
    trends = {p["trend"] for w in WEEKS for p in cov[w]["probes"].values()}
    assert {"new", "rising", "falling", "steady", "gone", "quiet"} <= trends
    for w in WEEKS:  # no change within 5 points of the threshold: the trend is not a rounding matter
        for name, p in cov[w]["probes"].items():
            assert p["failures_change_pct"] is None or abs(abs(p["failures_change_pct"]) - 25) > 5, (w, name)
    assert 0 < cov["2026-W53"]["app_seen"] < cov["2026-W53"]["app_failures"]


# ------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("week", WEEKS)
def test_json_summary_exact(fleet44, week):
    _, summary, reports = fleet44
    truth, got = summary["coverage"][week], reports[week]
    assert got["week"] == week
    assert got["hosts"] == len(truth["hosts"])
    assert got["probes"] == len(truth["probes"])
    assert sorted(got["never_fired"]) == truth["never_fired"]
    assert got["app_failures"] == truth["app_failures"]
    frac = got["app_seen_fraction"]
    assert round(frac * truth["app_failures"]) == truth["app_seen"] and frac == pytest.approx(truth["app_seen_fraction"],
                                                                                               rel=1e-12)


@pytest.mark.parametrize("week", WEEKS)
def test_probe_totals_exact(fleet44, week):
    """coverage_probes: per probe the week's counted calls, failures and errno mix (a negative
    delta counts nothing, a snapshot delivered twice once, each snapshot in the ISO week of its
    time), the previous week's, the change and trend, hosts live, never fired."""
    _, summary, reports = fleet44
    truth = summary["coverage"][week]["probes"]
    table = _tables(reports[week])["probes"]
    assert sorted(table["probe"]) == sorted(truth)
    assert (table["week"] == week).all()
    for row in table.iter_rows(named=True):
        want = truth[row["probe"]]
        got = {k: row[k] for k in ("layer", "invocations", "failures", "prev_invocations", "prev_failures", "trend",
                                   "hosts_live", "never_fired")}
        assert got == {k: want[k] for k in got}, row["probe"]
        assert {e["errno"]: e["count"] for e in row["errno_counts"] or []} == want["errno_counts"], row["probe"]
        for k in ("failure_rate", "failures_change_pct"):
            assert (row[k] is None) == (want[k] is None), (row["probe"], k)
            if want[k] is not None:
                assert row[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12), (row["probe"], k)


@pytest.mark.parametrize("week", WEEKS)
def test_groups_exact(fleet44, week):
    """coverage_groups: per (kernel, vendor) group and probe its hosts reported, the hosts, hosts
    live and not attached and the status -- the OFED-only probes `missing` on the bnxt_re groups
    (and not never fired fleet-wide), the refused attach `partial`; the other vendor's driver
    functions gated, never missing."""
    _, summary, reports = fleet44
    truth = summary["coverage"][week]
    table = _tables(reports[week])["groups"]
    seen = set()
    for row in table.iter_rows(named=True):
        key = f"{row['kernel_release']}|{row['vendor']}|{row['probe']}"
        if key in truth["groups"]:
            seen.add(key)
            got = {k: row[k] for k in ("hosts", "hosts_live", "hosts_not_attached", "status")}
            assert got == truth["groups"][key], key
        else:
            assert row["status"] in ("gated", "no data") and row["hosts_live"] == 0, row
            assert row["probe"].startswith(("mlx5_ib_", "bnxt_re_", "irdma_")) or row["status"] == "no data", row
    assert seen == set(truth["groups"])
    missing = {r["probe"] for r in table.filter(pl.col("status") == "missing").iter_rows(named=True)}
    assert missing == {"__ib_umem_get", "ib_peer_umem_get", "ib_umem_activate_invalidation_notifier"}
    assert not missing & set(reports[week]["never_fired"])


@pytest.mark.parametrize("week", WEEKS)
def test_application_failures_exact(fleet44, week):
    """coverage_app: per verb the week's logged failures and how many a live probe saw (the
    kernel counterpart failing on that host in the interval holding the log line; not while the
    daemon was down, not after the host left, not where the probes counted no failure, never for
    a cleanup verb), and each verb's share of the week's failures."""
    _, summary, reports = fleet44
    truth = summary["coverage"][week]
    table = _tables(reports[week])["app"]
    got = {r["verb"]: {"operation": r["operation"], "failures": r["failures"], "seen": r["seen"]}
           for r in table.iter_rows(named=True)}
    assert got == truth["app_verbs"]
    for r in table.iter_rows(named=True):
        assert r["share"] == pytest.approx(r["failures"] / truth["app_failures"], rel=1e-12)
        assert r["category"] == ("cleanup" if r["verb"] == "ibv_dealloc_pd" else "probed"), r


def test_week_boundaries_and_week_option(fleet44, tmp_path):
    """A date names its ISO week (the new year's day is 2026-W53, the Monday after 2027-W01); the
    default week is the newest data's; a week that does not exist is refused, naming --week."""
    root, _, reports = fleet44
    for date, week in (("2027-01-01", "2026-W53"), ("2027-01-04", "2027-W01")):
        got = _coverage(root, "--week", date, "-o", str(tmp_path / date))
        assert got["week"] == week
        assert {k: v for k, v in got.items() if k != "files"} == {k: v for k, v in reports[week].items() if k != "files"}
    default = _coverage(root, "-o", str(tmp_path / "default"))
    assert default["week"] == "2027-W01"
    for bad in ("2027-W53", "2025-W53", "2026-W54"):
        done = _run("coverage", str(root), "--week", bad, "-o", str(tmp_path / bad))
        assert done.returncode == 2 and "--week" in done.stderr and "Traceback" not in done.stderr, (bad, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / bad).exists()


def test_report_files(fleet44):
    """DATASET/reports/<week>/: the three tables, the Markdown and HTML reports and their charts;
    the Markdown's headline numbers are the truth's."""
    root, summary, reports = fleet44
    for week in WEEKS:
        truth, files = summary["coverage"][week], reports[week]["files"]
        here = root / "reports" / week
        for name in ("probes", "groups", "app", "markdown", "html"):
            assert Path(files[name]).resolve().parent == here.resolve(), (week, name, files[name])
            assert Path(files[name]).stat().st_size > 0
        assert list((here / "charts").glob("*.png"))
        md = Path(files["markdown"]).read_text()
        assert md.startswith(f"# Probe coverage, {week}\n")
        pct = round(100 * truth["app_seen"] / truth["app_failures"])
        assert f"**{pct} %** of {truth['app_failures']} application-labelled failures" in md
        assert f"- **hosts reporting**: {len(truth['hosts'])}\n" in md
        assert f"- **invocations**: {truth['invocations']:,}\n" in md
        assert f"- **failures**: {truth['failures']:,}\n" in md
        assert f"- **probes that never fired**: {len(truth['never_fired'])}\n" in md
        html = Path(files["html"]).read_text()
        assert week in html and "<html" in html.lower()


def test_same_report_without_the_summaries(fleet44, tmp_path):
    """The counters files alone (another writer's dataset: no counter_buckets) give the same
    tables: the reset row and the repeated snapshots counted by the same rules."""
    root, _, reports = fleet44
    bare = tmp_path / "bare"
    shutil.copytree(root / "counters", bare / "counters")
    shutil.copytree(root / "joblogs", bare / "joblogs")
    for week in ("2026-W53", "2027-W01"):
        got = _coverage(bare, "--week", week)
        assert {k: v for k, v in got.items() if k != "files"} == {k: v for k, v in reports[week].items() if k != "files"}
        a, b = _tables(got)["probes"].sort("probe"), _tables(reports[week])["probes"].sort("probe")
        assert a.equals(b)


def test_control_quiet(control44):
    root, summary, report = control44
    truth = summary["coverage"]["2026-W53"]
    assert report["app_failures"] == 0 and report["app_seen_fraction"] is None
    table = _tables(report)["probes"]
    assert table["failures"].sum() == 0 and set(table["trend"]) == {"quiet"}
    assert dict(zip(table["probe"], table["invocations"], strict=True)) == {
        n: p["invocations"] for n, p in truth["probes"].items()}
    assert sorted(report["never_fired"]) == truth["never_fired"]


def test_trend_threshold_option(fleet44, tmp_path):
    """--trend-pct moves the line between steady and rising; a value that is no percentage is
    refused, naming the flag."""
    root, summary, _ = fleet44
    got = _tables(_coverage(root, "--week", "2027-W01", "--trend-pct", "3", "-o", str(tmp_path / "t3")))["probes"]
    truth = summary["coverage"]["2027-W01"]["probes"]
    for row in got.iter_rows(named=True):
        change = truth[row["probe"]]["failures_change_pct"]
        if change is not None and change != 0:
            assert row["trend"] == ("rising" if change >= 3 else "falling" if change <= -3 else "steady"), row
    assert got.filter(pl.col("probe") == "ib_uverbs_reg_mr")["trend"].to_list() == ["rising"]
    for bad in ("nan", "-5", "x"):
        done = _run("coverage", str(root), "--trend-pct", bad, "-o", str(tmp_path / f"bad{bad}"))
        assert done.returncode == 2 and "--trend-pct" in done.stderr and "Traceback" not in done.stderr, (bad, done.stderr)


def test_logs_named_twice_count_once(fleet44, tmp_path):
    root, _, reports = fleet44
    logs = sorted((root / "joblogs").glob("*.log"))
    got = _coverage(root, "--week", "2026-W53", "-o", str(tmp_path / "r"), "--nccl-logs",
                    str(root / "joblogs" / "*.log"), str(logs[0]), str(logs[0]))
    assert got["app_failures"] == reports["2026-W53"]["app_failures"]
    assert got["app_seen_fraction"] == reports["2026-W53"]["app_seen_fraction"]


# A failing verbs call is logged after the kernel returned its error: the snapshot that counted the
# kernel failure may close between the two. A line 0.3 s and 1 s after such a snapshot (interval
# 5 s) is a failure a live probe saw, within a snapshot interval of it.
LOGGED_AFTER_WRONG = (
    "baseline coverage DATASET --week 2026-W52 --nccl-logs LOG, LOG holding 'ibv_create_qp failed ... "
    "Operation not supported' on fg44-a01 0.3 s and 1 s after a 5-second snapshot of that host whose "
    "mlx5_ib_create_qp and ib_uverbs_create_qp counted EOPNOTSUPP failures: expected app_seen_fraction 1.0 "
    "(the kernel counterpart failed on the same host within a snapshot interval of the log line), got 0.0; "
    "a line 15 s BEFORE the same snapshot, which cannot be the failure it counted, is reported seen")


# (a strict xfail until round thirty-three: LOGGED_AFTER_WRONG was what the report did)
def test_failure_logged_just_after_its_snapshot_is_seen(fleet44, tmp_path):
    root, _, _ = fleet44
    counters = dataset_counters(root).filter((pl.col("host") == "fg44-a01") & (pl.col("probe") == "mlx5_ib_create_qp")
                                             & (pl.col("failures") > 0))
    t = counters.filter(pl.col("snapshot_time") < dt.datetime(2026, 12, 28, tzinfo=dt.UTC))["snapshot_time"].min()
    log = tmp_path / "after.log"
    lines = []
    for pid, delay in ((11, 0.3), (12, 1.0)):
        when = t + dt.timedelta(seconds=delay)
        lines.append(f"{when:%Y-%m-%dT%H:%M:%S}.{when.microsecond // 1000:03d}Z fg44-a01:{pid}:{pid} [0] NCCL WARN "
                     "Call to ibv_create_qp failed with error Operation not supported errno 95")
    log.write_text("\n".join(lines) + "\n")
    got = _coverage(root, "--week", "2026-W52", "--nccl-logs", str(log), "-o", str(tmp_path / "r"))
    assert got["app_failures"] == 2
    assert got["app_seen_fraction"] == 1.0
