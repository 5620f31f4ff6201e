"""Score an audit (findings / clusters tables) against a simulated dataset's ground truth.

`evaluate(dataset_dir, findings_dir) -> dict`. The population scored is the truth table of
`baseline.simulator.simulate` joined to the audit's findings on trace_id.

Metrics (fractions in 0..1, counts as integers):
cluster_purity
    Over clustered open findings (expected = false, cluster_id not null): each cluster's most
    common truth label (root_cause, "(good)" for good traces), summed, over all clustered
    findings. 1.0 = no cluster mixes root causes.
cluster_completeness
    Over observable unexpected failure traces (truth kind failure, expected_error false, root
    cause not null, not an unobserved row): for each root cause the share of its traces in its
    single largest cluster (a trace without a clustered finding counts as missed), weighted by
    traces. 1.0 = every root cause entirely in one cluster.
bifurcation_top1
    Same population: finding (bifurcation_probe, bifurcation_errno) == truth, nulls equal.
origin_layer_top1
    Same population: finding origin_layer == truth origin_layer.
false_findings_on_good
    Open findings (expected = false) on held-out good traces.
routine_set_aside / routine_open_findings / false_findings
    Over observable routine traces (truth expected_error = true): the share set aside as expected
    (a trace without a finding is not set aside) and the share left as *open* findings. An open
    finding on a routine trace is a false finding, as is one on any good trace:
    false_findings = open findings on truth-good traces + on routine traces (an outside scorer
    counts them so; `false_findings_on_good` alone hides an audit that alarms on routine errors).
expected_error_precision / expected_error_recall
    Findings with expected = true vs truth expected_error = true (observable traces). Precision
    over findings set aside as expected (1.0 when none are); recall over truth expected traces
    (1.0 when there are none); a truth-expected trace without a finding is a miss.
per_root_cause
    Per truth root cause: traces, hosts, observable, detected (has an open finding), set aside as
    expected, dominant cluster and its share, bifurcation and origin-layer accuracy. A cause with
    both observed traces and unobservable truth rows keeps the two parts apart: the observed
    part is scored and `unobservable_traces` counts the rest (it is never summarised as wholly
    unobservable). Clusters mixing causes show in `dominant_cluster_purity`.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from baseline.fleet import paths
from tracer.errors import TracebaseError
from tracer.inputs import file_kind, missing_reason
from tracer.schema import dataset_files, parquet_files, read

UNOBSERVED_MARK = ":unobserved-"  # trace_id of a truth row with no events (see baseline.simulator.simulate)
HEADLINE = (
    "cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
    "false_findings_on_good", "expected_error_precision", "expected_error_recall",
    "routine_set_aside", "routine_open_findings", "false_findings",
)
COUNTS = ("false_findings_on_good", "false_findings")  # integers; the other headline figures are fractions


def load_truth(dataset_dir: str | os.PathLike) -> pl.DataFrame:
    root = paths.dataset_dir(dataset_dir)
    files = dataset_files(root, "truth")
    if not files:
        raise TracebaseError(
            f"{root}: no truth table (expected {root}/truth/date=*/host=*/part-*.parquet written by `baseline simulate`)"
        )
    truth = read(files, "truth")
    if truth.is_empty():  # every simulated trace has a truth row: none is a damaged or emptied table
        raise TracebaseError(f"{root}/truth: expected a row per simulated trace, found no rows in {len(files):,} "
                             f"file{'s' if len(files) != 1 else ''}")
    return truth


def _findings_files(dataset_dir: Path, findings_dir: str | os.PathLike | None) -> tuple[list[Path], list[Path]]:
    candidates = [Path(findings_dir)] if findings_dir is not None else [
        dataset_dir / "audit", dataset_dir / "findings", dataset_dir,
    ]
    for base in candidates:
        if findings_dir is not None and not base.exists():
            raise TracebaseError(f"{base}: no such findings directory")
        f_flat, f_dir = base / "findings.parquet", base / "findings"
        if os.path.lexists(f_flat) and not f_flat.is_file() and not f_flat.is_dir():
            # there, but no file to read (a FIFO, a symlink loop): "no findings" hid what it is
            reason = missing_reason(f_flat) or f"found {file_kind(f_flat.stat().st_mode)}"
            raise TracebaseError(f"{f_flat}: {reason} (expected findings.parquet written by `baseline audit`)")
        if f_flat.is_file():
            findings = [f_flat]
        elif f_dir.is_dir() and any(f_dir.rglob("*.parquet")):
            findings = parquet_files(f_dir)
        elif base.name == "findings" and base.is_dir() and any(base.rglob("*.parquet")):
            findings = parquet_files(base)
        else:
            continue
        c_flat, c_dir = base / "clusters.parquet", base / "clusters"
        clusters = [c_flat] if c_flat.is_file() else (parquet_files(c_dir) if c_dir.is_dir() and any(c_dir.rglob("*.parquet")) else [])
        return findings, clusters
    where = candidates[0] if findings_dir is not None else f"{dataset_dir}/audit, {dataset_dir}/findings or {dataset_dir}"
    raise TracebaseError(f"{where}: no findings (expected findings.parquet written by `baseline audit`; pass --findings DIR)")


def _frac(num: int, den: int, empty: float = 1.0) -> float:
    return float(num) / den if den else empty


def evaluate(dataset_dir: str | os.PathLike, findings_dir: str | os.PathLike | None = None) -> dict:
    """Scores of the audit's findings in `findings_dir` against the truth of `dataset_dir`."""
    truth = load_truth(dataset_dir)
    f_files, _ = _findings_files(Path(dataset_dir), findings_dir)
    findings = read(f_files, "findings")
    _refuse_unrelated(truth, findings, f_files)
    return score(truth, findings)


def _refuse_unrelated(truth: pl.DataFrame, findings: pl.DataFrame, files: list[Path]) -> None:
    """Findings none of whose traces the truth table holds are another dataset's audit (or the
    truth is of another simulation): scored, each would count as '(not in truth)' and a
    perfect purity be reported for nothing compared."""
    if findings.is_empty():
        return
    ids = truth.select(pl.col("trace_id").cast(pl.String))
    shared = findings.select(pl.col("trace_id").cast(pl.String)).join(ids, on="trace_id", how="semi").height
    if shared == 0:
        where = files[0].parent if len(files) > 1 else files[0]
        raise TracebaseError(f"{where}: expected findings of the dataset's traces, found none of their "
                             f"{findings.height:,} traces in its truth table (the audit of another dataset?)")


def score(truth: pl.DataFrame, findings: pl.DataFrame) -> dict:
    """The metrics of the module docstring from in-memory truth and findings tables."""
    # a trace is (host, trace id): a collector may number each host's traces from 1 (the
    # audit's findings keep the ids as the data gives them); a truth without hosts has the id
    key = ["host", "trace_id"] if truth.get_column("host").null_count() == 0 else ["trace_id"]
    # one finding per trace: prefer an open finding, then the highest score
    f = (
        findings.sort(["expected", "score"], descending=[False, True], nulls_last=True)
        .unique(key, keep="first", maintain_order=True)
        .select(
            *(pl.col(c).cast(pl.String) for c in key), pl.col("expected").fill_null(False).alias("f_expected"), "cluster_id",
            pl.col("bifurcation_probe").alias("f_bif_probe"), pl.col("bifurcation_errno").alias("f_bif_errno"),
            pl.col("origin_layer").alias("f_origin"),
        )
    )
    t = truth.with_columns(
        *(pl.col(c).cast(pl.String) for c in key),
        observable=~pl.col("trace_id").str.contains(UNOBSERVED_MARK, literal=True),
        label=pl.col("root_cause").fill_null("(good)"),
    )
    joined = t.join(f, on=key, how="left").with_columns(has_finding=pl.col("f_expected").is_not_null())
    unexpected_fail = joined.filter(
        (pl.col("kind") == "failure") & ~pl.col("expected_error").fill_null(False)
        & pl.col("root_cause").is_not_null() & pl.col("observable")
    ).with_columns(
        open_finding=pl.col("has_finding") & ~pl.col("f_expected"),
        bif_ok=(pl.col("f_bif_probe").eq_missing(pl.col("bifurcation_probe"))
                & pl.col("f_bif_errno").eq_missing(pl.col("bifurcation_errno")) & pl.col("has_finding")),
        origin_ok=pl.col("f_origin").eq_missing(pl.col("origin_layer")) & pl.col("has_finding"),
    )
    n_fail = unexpected_fail.height

    # purity over clustered open findings (including ones on traces the truth calls good/expected)
    clustered = joined.filter(pl.col("has_finding") & ~pl.col("f_expected") & pl.col("cluster_id").is_not_null())
    # findings whose trace is missing from the truth table count as their own label
    orphan = f.join(t.select(key), on=key, how="anti").filter(
        ~pl.col("f_expected") & pl.col("cluster_id").is_not_null()
    ).with_columns(label=pl.lit("(not in truth)"))
    labels = pl.concat([clustered.select("cluster_id", "label"), orphan.select("cluster_id", "label")])
    by_cluster = labels.group_by("cluster_id", "label").len()
    majority = by_cluster.group_by("cluster_id").agg(pl.col("len").max().alias("top"), pl.col("len").sum().alias("n"))
    purity = _frac(int(majority["top"].sum() or 0), int(majority["n"].sum() or 0))

    # completeness per root cause: share of its traces in its largest cluster
    in_cluster = unexpected_fail.filter(pl.col("open_finding") & pl.col("cluster_id").is_not_null())
    dominant = (
        in_cluster.group_by("root_cause", "cluster_id").len()
        .sort(["root_cause", "len", "cluster_id"], descending=[False, True, False])
        .unique("root_cause", keep="first", maintain_order=True)
        .rename({"cluster_id": "dominant_cluster", "len": "in_dominant"})
    )
    per = (
        unexpected_fail.group_by("root_cause").agg(
            traces=pl.len(), hosts=pl.col("host").n_unique(),
            detected=pl.col("open_finding").sum(), set_aside=(pl.col("has_finding") & pl.col("f_expected")).sum(),
            bif_ok=pl.col("bif_ok").sum(), origin_ok=pl.col("origin_ok").sum(),
        ).join(dominant, on="root_cause", how="left").with_columns(pl.col("in_dominant").fill_null(0))
    )
    completeness = _frac(int(per["in_dominant"].sum() or 0), n_fail)

    held_good = joined.filter(pl.col("held_out").fill_null(False) & (pl.col("kind") == "good"))
    false_on_good = int(held_good.filter(pl.col("has_finding") & ~pl.col("f_expected")).height)

    observable = joined.filter(pl.col("observable"))
    flagged = observable.filter(pl.col("has_finding") & pl.col("f_expected"))
    exp_truth = observable.filter(pl.col("expected_error").fill_null(False))
    precision = _frac(int(flagged["expected_error"].fill_null(False).sum()), flagged.height)
    recall = _frac(int((exp_truth["has_finding"] & exp_truth["f_expected"].fill_null(False)).sum()), exp_truth.height)

    # routine (truth-expected) traces: set aside vs left open; open ones are false findings
    routine_open = int((exp_truth["has_finding"] & ~exp_truth["f_expected"].fill_null(True)).sum())
    routine_aside = int((exp_truth["has_finding"] & exp_truth["f_expected"].fill_null(False)).sum())
    good_open = int(joined.filter((pl.col("kind") == "good") & pl.col("has_finding") & ~pl.col("f_expected")).height)

    per_root: dict[str, dict] = {}
    for row in per.sort("root_cause").iter_rows(named=True):
        per_root[row["root_cause"]] = {
            "traces": row["traces"], "hosts": row["hosts"], "observable": True,
            "detected": row["detected"], "set_aside_as_expected": row["set_aside"],
            "dominant_cluster": row["dominant_cluster"],
            "cluster_completeness": _frac(row["in_dominant"], row["traces"]),
            "bifurcation_top1": _frac(row["bif_ok"], row["traces"]),
            "origin_layer_top1": _frac(row["origin_ok"], row["traces"]),
        }
    # clusters that mix causes: purity per dominant cluster
    if by_cluster.height:
        purity_by_cluster = {int(r["cluster_id"]): _frac(r["top"], r["n"]) for r in majority.iter_rows(named=True)}
        for entry in per_root.values():
            c = entry["dominant_cluster"]
            entry["dominant_cluster_purity"] = purity_by_cluster.get(c) if c is not None else None
    for cause, grp in exp_truth.group_by("root_cause"):
        per_root[str(cause[0])] = {
            "traces": grp.height, "hosts": grp["host"].n_unique(), "observable": True, "expected_error": True,
            "set_aside_as_expected": int((grp["has_finding"] & grp["f_expected"].fill_null(False)).sum()),
            "open_findings": int((grp["has_finding"] & ~grp["f_expected"].fill_null(True)).sum()),
        }
    for cause, grp in joined.filter(~pl.col("observable")).group_by("root_cause"):
        entry = per_root.get(str(cause[0]))
        if entry is not None:  # observed in part: the observed part stays scored
            entry["unobservable_traces"] = grp.height
        else:
            per_root[str(cause[0])] = {"traces": grp.height, "hosts": grp["host"].n_unique(), "observable": False,
                                       "unobservable_traces": grp.height}

    return {
        "cluster_purity": purity,
        "cluster_completeness": completeness,
        "bifurcation_top1": _frac(int(unexpected_fail["bif_ok"].sum()), n_fail),
        "origin_layer_top1": _frac(int(unexpected_fail["origin_ok"].sum()), n_fail),
        "false_findings_on_good": false_on_good,
        "expected_error_precision": precision,
        "expected_error_recall": recall,
        "routine_set_aside": _frac(routine_aside, exp_truth.height),
        "routine_open_findings": _frac(routine_open, exp_truth.height, empty=0.0),
        "false_findings": good_open + routine_open,
        "routine_traces": exp_truth.height,
        "failures_scored": n_fail,
        "failures_detected": int(unexpected_fail["open_finding"].sum()),
        "held_out_good_traces": held_good.height,
        "clusters": int(majority.height),
        "findings": findings.height,
        "per_root_cause": per_root,
    }


def format_report(scores: dict) -> str:
    lines = ["audit vs ground truth"]
    for key in HEADLINE:
        value = scores[key]
        lines.append(f"  {key:26s} {value:>8}" if key in COUNTS else f"  {key:26s} {value:8.3f}")
    lines.append(f"  ({scores['failures_detected']:,} of {scores['failures_scored']:,} unexpected failures found, "
                 f"{scores['clusters']} clusters, {scores['findings']:,} findings)")
    lines.append("")
    lines.append(f"  {'root cause':34s} {'traces':>8} {'hosts':>6} {'found':>8} {'cluster':>8} {'bif':>6} {'origin':>6}")
    for cause, e in sorted(scores["per_root_cause"].items()):
        if not e.get("observable", True):
            lines.append(f"  {cause:34s} {e['traces']:>8,} {e['hosts']:>6,}   (no events: outside probe coverage)")
        elif e.get("expected_error"):
            lines.append(f"  {cause:34s} {e['traces']:>8,} {e['hosts']:>6,}   expected: {e['set_aside_as_expected']:,} set aside, "
                         f"{e['open_findings']:,} open")
        else:
            unobs = f"   (+{e['unobservable_traces']:,} without events)" if e.get("unobservable_traces") else ""
            lines.append(f"  {cause:34s} {e['traces']:>8,} {e['hosts']:>6,} {e['detected']:>8,} "
                         f"{e['cluster_completeness']:8.2f} {e['bifurcation_top1']:6.2f} {e['origin_layer_top1']:6.2f}"
                         f"{unobs}")
    return "\n".join(lines)
