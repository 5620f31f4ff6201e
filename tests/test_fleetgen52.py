"""Blind test set 52: the weekly probe-coverage report's edge cases (tests/fleetgen52).

Expectations come from README.md, docs/*.md, `--help`, tracer/schema.py, bpf/probes/*.yaml and
the RDMA reference only. The generator writes a spool; everything goes through the real CLIs:
`baseline ingest` -> `baseline coverage`.

What is promised, and where:
* README: the report is "headed by RDMATracer's figure: the share of application-labelled
  failures (NCCL/verbs errors in the job logs) whose kernel counterpart a live probe saw";
  schema.COVERAGE_APP: `seen` = "failures whose kernel counterpart a live probe saw (counted a
  failure on the same host within a snapshot interval)"; categories probed | cleanup |
  read-only | not mapped | not probed (anchors.md: cleanup such as ibv_dealloc_pd and read-only
  such as ibv_query_gid are excluded on purpose). So a user-space refusal, a host whose probes
  were not attached, a host whose tracer was down and a host never traced are all "not seen";
  kernel failures nobody logged count in the probes' figures, never in the application share.
* `--week`: an ISO week (or a date in it); the default is the week of the newest data. A failure
  belongs to the week its time falls in (Monday 00:00 UTC starts it, docs/airflow.md).
* `--nccl-logs`: NCCL logs or app_failures Parquet; "reads each file once however often it is
  named or matched" (docs/architecture.md).
* coverage_probes / coverage_groups columns (schema.COVERAGE_PROBES/GROUPS): per probe the
  week's invocations, failures, errno histogram, layer, hosts reporting it attached, never fired;
  failures_change_pct "null when the previous week had none"; `--trend-pct` 25 by default.
Not asserted (the docs leave them open): how a log naming ranks maps to hosts, how far a log's
clock may be from the snapshots' beyond one interval, never_fired of a probe that was called but
never failed, the `nccl_logs`/`parse_problems` counts.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fleetgen52 import generator as gen

BIN = Path(__file__).resolve().parents[1] / ".venv" / "bin"
RDMA = Path(__file__).resolve().parents[1] / "bpf" / "probes" / "rdma.yaml"


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLARS_MAX_THREADS="1", TZ="UTC")
    return subprocess.run([str(BIN / "baseline"), *args], capture_output=True, text=True, env=env, timeout=180)


def coverage(ds: Path, out: Path, *args: str) -> dict:
    r = run("coverage", str(ds), "--probes", str(RDMA), "-o", str(out), "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleetgen52")
    info = gen.generate(root)
    ds = root / "dataset"
    r = run("ingest", str(info["spool"]), str(ds), "--json")
    assert r.returncode == 0, r.stderr
    info["ingest"] = json.loads(r.stdout)
    info["ds"] = ds
    info["w49"] = coverage(ds, root / "rep-table", "--week", gen.WEEK, "--nccl-logs", str(info["app_failures"]))
    info["w49_dir"] = root / "rep-table" / gen.WEEK
    info["w48"] = coverage(ds, root / "rep-w48", "--week", gen.PREV_WEEK, "--nccl-logs", str(info["app_failures"]))
    info["w48_dir"] = root / "rep-w48" / gen.PREV_WEEK
    logs = str(root / "logs" / "*.log")
    info["logs"] = coverage(ds, root / "rep-logs", "--week", gen.WEEK, "--nccl-logs", logs, logs,
                            str(root / "logs" / "j100.log"))
    info["logs_dir"] = root / "rep-logs" / gen.WEEK
    return info


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def app_truth(week: str) -> dict:
    out: dict = defaultdict(lambda: {"failures": 0, "seen": 0, "category": None})
    for a in gen.APP:
        if gen.week_of(a.time) != week:
            continue
        cell = out[a.verb]
        cell["failures"] += 1
        cell["seen"] += a.seen
        cell["category"] = a.category
    return out


def test_ingest_takes_every_snapshot(fleet):
    ing = fleet["ingest"]["ingest"]
    assert ing["snapshots"] == fleet["snapshots"]
    assert ing["rows"]["counters"] == fleet["snapshots"] * len(gen.PROBES)


def test_headline_share_counts_each_failure_once(fleet):
    s = fleet["w49"]
    w49 = [a for a in gen.APP if gen.week_of(a.time) == gen.WEEK]
    assert s["week"] == gen.WEEK
    assert s["app_failures"] == len(w49) == 11
    assert s["app_seen_fraction"] == pytest.approx(sum(a.seen for a in w49) / len(w49)) == pytest.approx(5 / 11)
    assert s["app_probed_fraction"] == pytest.approx(sum(a.category == "probed" for a in w49) / len(w49))
    assert s["hosts"] == len(gen.HOSTS)  # h07 never reported: a log names it, no snapshot does
    assert s["probes"] == len(gen.PROBES)


def test_per_verb_seen_and_category(fleet):
    got = {r["verb"]: r for r in rows(fleet["w49_dir"] / "coverage_app.parquet")}
    want = app_truth(gen.WEEK)
    assert set(got) == set(want)
    total = sum(w["failures"] for w in want.values())
    for verb, w in want.items():
        r = got[verb]
        assert r["week"] == gen.WEEK
        assert (r["failures"], r["seen"], r["category"]) == (w["failures"], w["seen"], w["category"]), verb
        assert r["share"] == pytest.approx(w["failures"] / total), verb
        assert r["operation"] == verb.removeprefix("ibv_"), verb


def test_unseen_reasons_named_in_the_report(fleet):
    text = (fleet["w49_dir"] / "report.md").read_text()
    assert "45 %" in text and "of 11 application-labelled failures" in text
    # what it could not match: per operation, the probed failures no live probe saw
    unseen = defaultdict(int)
    for a in gen.APP:
        if gen.week_of(a.time) == gen.WEEK and not a.seen:
            unseen[(a.verb.removeprefix("ibv_"), a.category)] += 1
    for (op, cat), n in unseen.items():
        assert f"| {op} | ibv_{op} | {cat} | {n} |" in text, (op, cat, n)


def test_per_probe_week_totals(fleet):
    truth = fleet["truth"][gen.WEEK]
    got = {r["probe"]: r for r in rows(fleet["w49_dir"] / "coverage_probes.parquet")}
    assert set(got) == set(gen.PROBES)
    for probe, (layer, _) in gen.PROBES.items():
        r, w = got[probe], truth[probe]
        assert r["layer"] == layer, probe
        assert r["invocations"] == w["invocations"], probe
        assert r["failures"] == w["failures"], probe
        errnos = {e["errno"]: e["count"] for e in (r["errno_counts"] or [])}
        assert errnos == dict(w["errnos"]), probe
        assert r["hosts_live"] == len(w["hosts_live"]), probe
        if w["invocations"]:
            assert r["failure_rate"] == pytest.approx(w["failures"] / w["invocations"]), probe
        if w["failures"]:
            assert r["never_fired"] is False, probe
    assert got[gen.NEVER_CALLED]["never_fired"] is True
    assert fleet["w49"]["never_fired"] == [gen.NEVER_CALLED]
    # kernel failures no application logged still count: create_cq EINVAL, the absorbed GPU pin
    assert got["ib_uverbs_create_cq"]["failures"] == 1
    assert got["__ib_umem_get"]["failures"] == 4


def test_per_layer_failures(fleet):
    truth = fleet["truth"][gen.WEEK]
    want: dict = defaultdict(int)
    for probe, (layer, _) in gen.PROBES.items():
        want[layer] += truth[probe]["failures"]
    got: dict = defaultdict(int)
    for r in rows(fleet["w49_dir"] / "coverage_probes.parquet"):
        got[r["layer"]] += r["failures"]
    assert dict(got) == dict(want) == {"uverbs": 7, "driver": 7, "core": 4, "peer-mem": 3}


def test_reduced_probe_set_is_partial_on_its_group(fleet):
    got = {r["probe"]: r for r in rows(fleet["w49_dir"] / "coverage_groups.parquet")
           if r["probe"] in gen.REDUCED["h04"]}
    assert set(got) == set(gen.REDUCED["h04"])
    for probe, r in got.items():
        assert (r["kernel_release"], r["vendor"]) == (gen.RELEASE, "mlx5"), probe
        assert (r["hosts"], r["hosts_live"], r["hosts_not_attached"]) == (6, 5, 1), probe
        assert r["status"] == "partial", probe


def test_week_before_holds_only_its_own_failure(fleet):
    s = fleet["w48"]
    assert s["week"] == gen.PREV_WEEK
    assert s["app_failures"] == 1
    assert s["app_seen_fraction"] == pytest.approx(1.0)
    truth = fleet["truth"][gen.PREV_WEEK]
    got = {r["probe"]: r for r in rows(fleet["w48_dir"] / "coverage_probes.parquet")}
    for probe in gen.PROBES:
        assert got[probe]["invocations"] == truth[probe]["invocations"], probe
        assert got[probe]["failures"] == truth[probe]["failures"], probe


def test_week_over_week_change(fleet):
    prev, cur = fleet["truth"][gen.PREV_WEEK], fleet["truth"][gen.WEEK]
    got = {r["probe"]: r for r in rows(fleet["w49_dir"] / "coverage_probes.parquet")}
    for probe in gen.PROBES:
        r = got[probe]
        assert r["prev_invocations"] == prev[probe]["invocations"], probe
        assert r["prev_failures"] == prev[probe]["failures"], probe
        if prev[probe]["failures"]:
            pct = 100.0 * (cur[probe]["failures"] - prev[probe]["failures"]) / prev[probe]["failures"]
            assert r["failures_change_pct"] == pytest.approx(pct), probe
            assert r["trend"] == "rising", probe  # +200 % and more, over the default 25
        else:
            assert r["failures_change_pct"] is None, probe


def test_nccl_logs_give_the_table_figures_each_file_once(fleet):
    s = fleet["logs"]
    assert s["app_failures"] == 11  # the timeout and the no-device lines name no failing verb
    assert s["app_seen_fraction"] == pytest.approx(5 / 11)
    got = {r["verb"]: (r["failures"], r["seen"], r["category"])
           for r in rows(fleet["logs_dir"] / "coverage_app.parquet")}
    want = {v: (w["failures"], w["seen"], w["category"]) for v, w in app_truth(gen.WEEK).items()}
    assert got == want


def test_week_given_as_a_date_and_by_default(fleet, tmp_path):
    by_date = coverage(fleet["ds"], tmp_path / "d", "--week", "2026-12-03", "--nccl-logs", str(fleet["app_failures"]))
    default = coverage(fleet["ds"], tmp_path / "n", "--nccl-logs", str(fleet["app_failures"]))
    for s in (by_date, default):
        assert s["week"] == gen.WEEK
        assert s["app_failures"] == 11
        assert s["app_seen_fraction"] == pytest.approx(5 / 11)


def _unmatched_glob_run(fleet, out: Path, *extra: str) -> subprocess.CompletedProcess:
    glob = str(out.parent / "no-such-logs" / "*.log")
    r = run("coverage", str(fleet["ds"]), "--probes", str(RDMA), "--week", gen.WEEK, "-o", str(out),
            "--nccl-logs", glob, str(fleet["app_failures"]), *extra)
    assert r.returncode == 0, r.stderr
    return r


def test_a_glob_matching_no_log_is_a_warning(fleet, tmp_path):
    # docs/architecture.md: "a glob matching no file is a warning (in the report's problems and on
    # stderr), not silently no logs"; the files that did match are still read
    r = _unmatched_glob_run(fleet, tmp_path / "rep")
    glob = str(tmp_path / "no-such-logs" / "*.log")
    assert glob in r.stderr and "warning" in r.stderr
    assert glob in (tmp_path / "rep" / gen.WEEK / "report.md").read_text()
    got = {r["verb"]: r["failures"] for r in rows(tmp_path / "rep" / gen.WEEK / "coverage_app.parquet")}
    assert sum(got.values()) == 11


def test_a_glob_matching_no_log_is_a_warning_on_stderr_under_json(fleet, tmp_path):
    r = _unmatched_glob_run(fleet, tmp_path / "rep", "--json")
    assert json.loads(r.stdout)["app_failures"] == 11
    glob = str(tmp_path / "no-such-logs" / "*.log")
    assert glob in r.stderr
