"""baseline evaluate: metrics on hand-made findings (perfect and with known mistakes), CLI errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from baseline.cli import main as baseline_main
from baseline.fleet.evaluate import COUNTS, HEADLINE, evaluate, score
from baseline.simulator.simulate import simulate
from tracer.schema import dataset_files, read, write_table


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("evalfleet")
    simulate(out, hosts=8, hours=16, seed=11)
    return out


@pytest.fixture(scope="module")
def truth(dataset) -> pl.DataFrame:
    return read(dataset_files(dataset, "truth"), "truth")


def perfect_findings(truth: pl.DataFrame) -> pl.DataFrame:
    """What an ideal audit would write: one finding per observed failure, one cluster per cause."""
    fails = truth.filter((pl.col("kind") == "failure") & ~pl.col("trace_id").str.contains(":unobserved-"))
    causes = sorted(fails.filter(~pl.col("expected_error"))["root_cause"].unique())
    ids = pl.DataFrame({"root_cause": causes, "cluster_id": list(range(len(causes)))},
                       schema={"root_cause": pl.String, "cluster_id": pl.Int32})
    return fails.join(ids, on="root_cause", how="left").select(
        "trace_id", "host", pl.col("expected_error").alias("expected"), "bifurcation_probe", "bifurcation_errno",
        "origin_layer", pl.when(pl.col("expected_error")).then(None).otherwise(pl.col("cluster_id")).alias("cluster_id"),
        pl.lit(1.0).alias("score"),
    )


def test_perfect_findings_score_one(truth):
    s = score(truth, perfect_findings(truth))
    for key in HEADLINE:
        assert s[key] == (0 if key in COUNTS or key == "routine_open_findings" else 1.0), key
    assert s["per_root_cause"]["cleanup_ebusy_unprobed"]["observable"] is False
    assert s["failures_detected"] == s["failures_scored"] > 0


def test_known_mistakes_give_known_fractions(truth):
    f = perfect_findings(truth)
    open_ = f.filter(~pl.col("expected"))
    counts = open_.join(truth.select("trace_id", "root_cause"), on="trace_id").group_by("root_cause").len()
    n = dict(counts.iter_rows())
    total = sum(n.values())
    # 1) merge two causes into one cluster: purity loses the smaller one, completeness unchanged
    a, b = "efault_peer_cascade", "mkey_cache_enomem"
    ids = dict(open_.join(truth.select("trace_id", "root_cause"), on="trace_id")
               .select("root_cause", "cluster_id").unique().iter_rows())
    merged = f.with_columns(pl.when(pl.col("cluster_id") == ids[b]).then(ids[a]).otherwise(pl.col("cluster_id"))
                            .alias("cluster_id"))
    s = score(truth, merged)
    assert s["cluster_purity"] == pytest.approx((total - min(n[a], n[b])) / total)
    assert s["cluster_completeness"] == 1.0
    # 2) wrong origin layer and bifurcation for one cause
    wrong_ids = truth.filter(pl.col("root_cause") == a)["trace_id"].implode()
    wrong = f.with_columns(
        pl.when(pl.col("trace_id").is_in(wrong_ids)).then(pl.lit("driver")).otherwise(pl.col("origin_layer")).alias("origin_layer"),
        pl.when(pl.col("trace_id").is_in(wrong_ids)).then(pl.lit("mlx5_ib_reg_user_mr")).otherwise(pl.col("bifurcation_probe")).alias("bifurcation_probe"),
    )
    s = score(truth, wrong)
    assert s["origin_layer_top1"] == pytest.approx(1 - n[a] / total)
    assert s["bifurcation_top1"] == pytest.approx(1 - n[a] / total)
    assert s["per_root_cause"][a]["origin_layer_top1"] == 0.0
    # 3) a cause split in two clusters: completeness keeps the larger half
    tids = truth.filter(pl.col("root_cause") == a)["trace_id"].sort()
    half = tids[: len(tids) // 2].implode()
    split = f.with_columns(pl.when(pl.col("trace_id").is_in(half)).then(999).otherwise(pl.col("cluster_id")).alias("cluster_id"))
    s = score(truth, split)
    assert s["cluster_completeness"] == pytest.approx((total - len(tids) // 2) / total)
    assert s["cluster_purity"] == 1.0
    # 4) findings missing for one cause: detection and the accuracies drop
    s = score(truth, f.filter(~pl.col("trace_id").is_in(wrong_ids)))
    assert s["failures_detected"] == total - n[a]
    assert s["bifurcation_top1"] == pytest.approx(1 - n[a] / total)


def test_false_findings_on_good_and_expected_flags(truth):
    f = perfect_findings(truth)
    held = truth.filter(pl.col("held_out")).head(3)
    extra = pl.DataFrame({"trace_id": held["trace_id"], "host": held["host"], "expected": False, "bifurcation_probe": "p",
                          "bifurcation_errno": None, "origin_layer": "core", "cluster_id": 500, "score": 1.0},
                         schema_overrides={"cluster_id": pl.Int32, "bifurcation_errno": pl.String})
    s = score(truth, pl.concat([f, extra], how="vertical_relaxed"))
    assert s["false_findings_on_good"] == 3
    assert s["cluster_purity"] == 1.0  # its own cluster, labelled "(good)": pure, but a false finding
    # expected errors: un-flag half of them (recall 0.5), flag one real failure as expected (precision < 1)
    exp = f.filter(pl.col("expected"))["trace_id"].sort()
    unflag = exp[: len(exp) // 2].implode()
    real = f.filter(~pl.col("expected"))["trace_id"][0]
    g = f.with_columns(
        pl.when(pl.col("trace_id").is_in(unflag)).then(False)
        .when(pl.col("trace_id") == real).then(True).otherwise(pl.col("expected")).alias("expected"))
    s = score(truth, g)
    assert s["expected_error_recall"] == pytest.approx((len(exp) - len(exp) // 2) / len(exp))
    flagged = len(exp) - len(exp) // 2 + 1
    assert s["expected_error_precision"] == pytest.approx((flagged - 1) / flagged)


def test_evaluate_reads_audit_output_and_cli_json(dataset, truth, tmp_path, capsys):
    audit = tmp_path / "audit"
    write_table(perfect_findings(truth), audit / "findings.parquet", "findings")
    s = evaluate(dataset, audit)
    assert s["cluster_purity"] == 1.0
    assert baseline_main(["evaluate", str(dataset), "--findings", str(audit), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in HEADLINE:
        assert key in out
    assert isinstance(out["false_findings_on_good"], int)
    assert all(0.0 <= out[k] <= 1.0 for k in HEADLINE if k not in COUNTS)
    assert baseline_main(["evaluate", str(dataset), "--findings", str(audit)]) == 0
    assert "cluster_purity" in capsys.readouterr().out


def test_evaluate_with_the_real_audit(dataset, tmp_path):
    """End to end with baseline.fleet.audit when it is importable (built in parallel by another engineer)."""
    audit_mod = pytest.importorskip("baseline.fleet.audit")
    work = tmp_path / "d"
    shutil.copytree(dataset, work)
    audit_mod.run_audit(str(work), out_dir=work / "audit")
    s = evaluate(work)  # default: DATASET/audit
    assert set(HEADLINE) <= set(s)
    print("real audit scores:", {k: s[k] for k in HEADLINE})


def _err(capsys) -> str:
    return capsys.readouterr().err


def test_cli_evaluate_user_errors(dataset, tmp_path, capsys):
    assert baseline_main(["evaluate", str(tmp_path / "missing")]) == 2
    err = _err(capsys)
    assert err.startswith("baseline: error: ") and "no such dataset directory" in err and err.count("\n") == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert baseline_main(["evaluate", str(empty)]) == 2
    err = _err(capsys)
    assert "no truth table" in err and err.count("\n") == 1
    assert baseline_main(["evaluate", str(dataset), "--findings", str(tmp_path / "nofindings")]) == 2
    err = _err(capsys)
    assert "no such findings directory" in err and err.count("\n") == 1
    bare = tmp_path / "bare"
    bare.mkdir()
    assert baseline_main(["evaluate", str(dataset), "--findings", str(bare)]) == 2
    err = _err(capsys)
    assert "no findings" in err and err.count("\n") == 1
    bad = tmp_path / "bad"
    write_table(read(dataset_files(dataset, "truth"), "truth"), bad / "findings.parquet", "truth")
    assert baseline_main(["evaluate", str(dataset), "--findings", str(bad)]) == 2
    err = _err(capsys)
    assert "expected a tracebase 'findings' table" in err and err.count("\n") == 1
