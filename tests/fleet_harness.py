"""What every blind fleet generator's test module does the same way: generate a fleet, audit it
with learned expected errors only and score it against the generator's truth; and check that
the generator was written without the code it scores."""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def strict_xfails(misses: dict[str, str]) -> tuple[Callable, Callable]:
    """(known, params) for a module's KNOWN_MISSES (a test's name, or `name[id]`, -> what the tool
    wrote): `known` makes a test named there a strict xfail; `params(test_name, ids)` gives the
    parametrize values of `test_name`, those whose `name[id]` is there strict xfails."""
    import pytest

    def known(test):
        if test.__name__ in misses:
            return pytest.mark.xfail(reason=misses[test.__name__], strict=True)(test)
        return test

    def params(test_name: str, ids) -> list:
        out = []
        for i in ids:
            reason = misses.get(f"{test_name}[{i}]")
            out.append(pytest.param(i, id=i, marks=[pytest.mark.xfail(reason=reason, strict=True)] if reason else []))
        return out

    return known, params


def audited_fleet(name: str, generate: Callable[..., dict], *, package: str | None = None, **shape):
    """A module-scoped pytest fixture called `name`: `generate(root, **shape)` into a fresh
    directory, `baseline audit` of it with learned expected errors only (the curated list must
    not be what sets the routine aside), and `baseline evaluate`'s scores, printed. The fixture
    gives (root, generator summary, audit result, scores)."""
    import pytest

    from baseline.fleet.audit import run_audit
    from baseline.fleet.evaluate import evaluate
    from baseline.run.allowlist import ExpectedErrors

    @pytest.fixture(scope="module", name=name)
    def fixture(tmp_path_factory, generated_fleet):
        # the generated fleet is shared with any other module auditing the same (conftest.py)
        root = tmp_path_factory.mktemp(package or name) / "fleet"
        summary = generated_fleet(package or name, generate, root, **shape)
        result = run_audit(root, out_dir=root / "audit", expected=ExpectedErrors([]))
        scores = evaluate(root, root / "audit")
        print(json.dumps({k: v for k, v in scores.items() if k != "per_root_cause"}, indent=1))
        return root, summary, result, scores

    return fixture


# A generated dataset's tables as its tests read them: each record's truth is keyed by the
# audit's trace key (host, trace_id).
TRUTH_KEY = ["host", "trace_id"]


def dataset_events(root: Path):
    """Every events row of the dataset at `root`."""
    from tracer.schema import dataset_files, read

    return read(dataset_files(root, "events"), "events")


def dataset_truth(root: Path):
    """The generator's truth table: one row per record."""
    from tracer.schema import dataset_files, read

    return read(dataset_files(root, "truth"), "truth")


def dataset_counters(root: Path):
    """The counters, each snapshot's row once (SNAPSHOT_KEY: a re-sent snapshot counts once)."""
    from tracer.schema import SNAPSHOT_KEY, dataset_files, read

    return read(dataset_files(root, "counters"), "counters").unique(list(SNAPSHOT_KEY), keep="first")


def roots_with_truth(root: Path, events=None):
    """The records' root frames (of `events`, or of every events row) with their truth."""
    import polars as pl

    roots = (dataset_events(root) if events is None else events).filter(pl.col("seq") == 0)
    return roots.join(dataset_truth(root).select(*TRUTH_KEY, "root_cause", "expected_error"), on=TRUTH_KEY,
                      how="left")


def findings_with_truth(root: Path):
    """The audit's findings (`root`/audit) with each one's truth."""
    from tracer.schema import read

    findings = read(root / "audit" / "findings.parquet", "findings")
    return findings.join(dataset_truth(root).select(*TRUTH_KEY, "kind", "root_cause", "expected_error"),
                         on=TRUTH_KEY, how="left")


def assert_trees_from_the_reference(trees: dict, families: dict, layer: dict, tree_family: dict) -> None:
    """Every function of every tree (`trees`: name -> (operation, argument, frames of (depth,
    function, errno))) is in the reference; every family's errno (`families`: key -> (probe,
    errno, layer)) is one the reference gives near its origin, at the layer `layer` gives its
    probe; every failing frame of a tree fails with its family's errno (`tree_family`: tree ->
    family), and the family's origin is one of them; a tree with no failing frame has none."""
    assert_functions_in_reference({fn for _, _, frames in trees.values() for _, fn, _ in frames})
    for key, (probe, errno, origin_layer) in families.items():
        assert_errno_from_reference(key, probe, errno)
        assert layer[probe] == origin_layer, key
    for name, (_, _, frames) in trees.items():
        failing = [(fn, e) for _, fn, e in frames if e]
        if failing:
            probe, errno, _ = families[tree_family[name]]
            assert (probe, errno) in failing, name
            assert {e for _, e in failing} == {errno}, name
        else:
            assert name not in tree_family, name


def assert_files_valid_and_truth_one_row_per_record(root: Path, events=None) -> None:
    """Events, counters, their summaries and truth validate through tracer.schema; truth has one
    row per record (host, trace_id: of `events`, or of every events row) and none more; every
    counters file has its summary."""
    from tracer.schema import counter_buckets_for, dataset_files, validate_file

    for table in ("events", "counters", "truth", "counter_buckets"):
        files = dataset_files(root, table)
        assert files, table
        for f in files:
            validate_file(f, table)
    for f in dataset_files(root, "counters"):
        assert counter_buckets_for(f) is not None, f
    records = (dataset_events(root) if events is None else events).select(TRUTH_KEY).unique()
    truth = dataset_truth(root)
    assert truth.select(TRUTH_KEY).is_unique().all()
    assert truth.height == records.height
    assert truth.join(records, on=TRUTH_KEY, how="anti").height == 0


def assert_counters_agree_with_the_records(root: Path, families: dict) -> None:
    """Per (probe, errno) the counters' failures equal the records' failing frames, each weighted
    by its record's repeat_count (every failure recorded, none lost); every family is counted."""
    import polars as pl

    cells = dataset_counters(root).select("probe", "errno_counts").explode("errno_counts").unnest("errno_counts")
    counted = dict(((p, e), n) for p, e, n in cells.filter(pl.col("count") > 0).group_by("probe", "errno")
                   .agg(pl.col("count").sum()).iter_rows())
    ev = dataset_events(root)
    weight = ev.filter(pl.col("seq") == 0).select(*TRUTH_KEY, pl.col("repeat_count").fill_null(1).alias("w"))
    frames = ev.filter(pl.col("errno").is_not_null()).join(weight, on=TRUTH_KEY)
    recorded = dict(((p, e), n) for p, e, n in frames.group_by("probe", "errno").agg(pl.col("w").sum()).iter_rows())
    assert counted == recorded
    for family, (probe, errno, _) in families.items():
        assert counted.get((probe, errno), 0) > 0, family


def imported_modules(path: Path) -> set[str]:
    """Every module a Python file imports (absolute names)."""
    tree = ast.parse(path.read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return modules | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def assert_generator_is_blind(package: str, *, tracer_modules: set[str]) -> None:
    """tests/`package` imports nothing of the simulator, the audit (`baseline`) or the other
    generators, and of the tracer only `tracer_modules` (the data model's writers)."""
    for path in (TESTS / package).glob("*.py"):
        modules = imported_modules(path)
        others = {m for m in modules if m.startswith(("baseline", "fleetgen")) and m.split(".")[0] != package}
        assert not others, (path, others)
        assert {m for m in modules if m.startswith("tracer")} <= tracer_modules, (path, modules)


PERFECT = ("cluster_purity", "cluster_completeness", "bifurcation_top1", "origin_layer_top1",
           "expected_error_precision", "expected_error_recall", "routine_set_aside")


def assert_every_cause_found(scores: dict, root_causes) -> None:
    """`baseline evaluate`'s scores of a generator the audit gets right: every ratio 1.0, no
    false finding, and every trace of each root cause detected, none set aside as expected."""
    for key in PERFECT:
        assert scores[key] == 1.0, (key, scores[key])
    assert scores["false_findings"] == 0 and scores["false_findings_on_good"] == 0
    for cause, e in scores["per_root_cause"].items():
        if cause in root_causes:
            assert e["detected"] == e["traces"] and e["set_aside_as_expected"] == 0, (cause, e)


REFERENCE = TESTS.parent / "reference" / "rdma_control_path.yaml"


@functools.cache
def _reference_text() -> str:
    return REFERENCE.read_text()


def assert_functions_in_reference(functions: set[str]) -> None:
    """Every function a generator's call trees use is named in the reference."""
    text = _reference_text()
    missing = {fn for fn in functions if not re.search(rf"\b{re.escape(fn)}\b", text)}
    assert not missing, missing


def assert_errno_from_reference(key: str, fn: str, errno: str, *, window: int = 900,
                                firmware: tuple[str, ...] = ("mlx5_cmd_exec",)) -> None:
    """`errno` is one the reference gives within `window` characters of `fn`, or, for the mlx5
    firmware command functions (`firmware`), one of the errno_conventions' firmware mapping."""
    text = _reference_text()
    conventions = text[text.index("errno_conventions"):text.index("name_corrections_vs_brief")]
    near = [text[max(0, m.start() - window):m.end() + window] for m in re.finditer(rf"\b{re.escape(fn)}\b", text)]
    from_firmware = fn in firmware and f"-{errno}" in conventions
    assert from_firmware or any(f"-{errno}" in w for w in near), (key, fn, errno)
