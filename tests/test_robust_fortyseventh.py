"""Blind robustness battery, round forty-seven: the data model's versions and evolution.

Files written by an older schema version (fewer columns, an older version in the footer), by a
newer one (an extra column; a higher version), by other tools (pyarrow without the footer,
polars, DuckDB, pandas) with other Arrow types for the documented columns, and datasets mixing
versions across hosts.  Promises come only from README.md, docs/*.md, tracer/schema.py (the
documented data model) and each command's --help:

* docs/architecture.md "The data model": "Every Parquet file carries `tracebase.table` and
  `tracebase.schema_version` in its footer; readers (`schema.scan`, `read_events`,
  `validate_file`) refuse a mismatch naming file, column, expected and found. The same data in
  another Arrow type is not a mismatch: large or view strings, and dictionary-typed columns
  (polars writes a Categorical so); other integer widths, timestamps in another unit (Parquet
  1.0, DuckDB: us) and files without the footer keys (as polars or DuckDB write a frame) are
  refused naming the column or the missing key".
* same: "A timestamp column whose zone is UTC by another name (`Etc/UTC`, ...) holds the same
  instants and is read as UTC; another zone is refused naming it. A timestamp without a zone (a
  Parquet column, ...) is UTC in every reader".
* same, events: "Columns version 2 added read as null in version 1 files."; findings: "an added
  column read as null in findings written before it".
* tracer/schema.py: "Files of these versions are read; columns a version added
  (ADDED_COLUMNS) read as null in older files, so a dataset written before an upgrade stays
  readable." (READABLE_VERSIONS = ("1", "2")); validate_schema: "Extra columns are allowed
  (forward compatibility within a version); missing columns or type mismatches are not".
* each --help: "exit status: ... 2 trouble (bad input or usage ...: one line on stderr naming
  the file or flag)"; docs/airflow.md: a snapshot file that cannot be read "(not Parquet, wrong
  table or schema version, a column of the wrong type, nulls in a non-null column) ... is moved
  to `quarantine/<host>/<snapshot>/<file>` with `<file>.reason` (one line: file, column,
  expected, found); the rest of the snapshot and of the spool is ingested."
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():  # an installed checkout elsewhere: the interpreter's own bin
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
RECS = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
GOOD = [RECS / "good0.parquet", RECS / "good1.parquet"]
BAD = RECS / "bad.parquet"
TIMEOUT = 120
ADDED = ("path2", "output", "repeat_count")
# "refused naming ... the missing key": the line says which footer key it missed (tracebase ... table)
# and that none was found
NO_FOOTER = ("tracebase", "table", "none")


# --------------------------------------------------------------------------- helpers


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTHONWARNINGS", "PYTHONPATH", "PYTEST_CURRENT_TEST", "LC_ALL"):
        env.pop(key, None)
    env["LANG"] = "C.UTF-8"
    return env


def run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace", timeout=TIMEOUT, check=False)


def ok(proc: subprocess.CompletedProcess, codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in codes, (proc.args, proc.returncode, proc.stderr[-3000:])
    return proc


def refused(proc: subprocess.CompletedProcess, path: Path, *words: str) -> str:
    """Exit 2, no traceback, ONE line on stderr naming the file and each of `words`."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2, (proc.args, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert path.name in line, (path.name, line)
    for word in words:
        assert word in line, (word, line)
    return line


def footer(table: str = "events", version: str = "2", **extra: str) -> dict[bytes, bytes]:
    meta = {b"tracebase.table": table.encode(), b"tracebase.schema_version": version.encode()}
    meta.update({k.encode(): v.encode() for k, v in extra.items()})
    return meta


def rewrite(src: Path, dst: Path, fn: Callable[[pa.Table], pa.Table] | None = None,
            meta: dict[bytes, bytes] | None = None, keep_meta: bool = False) -> Path:
    """src's rows through fn, written by plain pyarrow with the footer `meta` (None: no footer
    keys at all, as another tool writes); keep_meta: src's footer keys, `meta` over them."""
    table = pq.read_table(src)
    old = dict(pq.read_metadata(src).metadata or {}) if keep_meta else {}
    old.pop(b"ARROW:schema", None)
    if fn is not None:
        table = fn(table)
    merged = {**old, **(meta or {})}
    table = table.replace_schema_metadata(merged or None)
    dst.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, dst)
    return dst


def cast(name: str, typ: pa.DataType, nullable: bool | None = None) -> Callable[[pa.Table], pa.Table]:
    def fn(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index(name)
        old = t.schema.field(i)
        field = pa.field(name, typ, nullable=old.nullable if nullable is None else nullable)
        return t.set_column(i, field, pc.cast(t.column(i), typ, safe=False))
    return fn


def drop(*names: str) -> Callable[[pa.Table], pa.Table]:
    return lambda t: t.drop_columns(list(names))


def diff_json(bad: Path, goods: list[Path] = GOOD) -> tuple[int, object]:
    proc = ok(run([BASELINE, "diff", "--json", *map(str, goods), str(bad)]), (0, 1))
    return proc.returncode, json.loads(proc.stdout).get("bifurcation")


@pytest.fixture(scope="module")
def reference():
    return diff_json(BAD)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet47")
    ds = root / "ds"
    ok(run([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "3", "-o", str(ds)]))
    audit = ok(run([BASELINE, "audit", str(ds), "-o", str(root / "audit"), "--json"]))
    return ds, json.loads(audit.stdout), root / "audit"


def copy_ds(fleet, tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    shutil.copytree(fleet[0], ds, symlinks=True)
    return ds


def part(ds: Path, table: str, host: str) -> Path:
    (path,) = sorted((ds / table).glob(f"date=*/host={host}/*.parquet"))
    return path


def summary_counts(doc: dict) -> dict:
    # (stale_summary_hosts says how the counters were read -- rewritten files' summaries are
    # stale -- not what the audit found)
    return {k: v for k, v in doc.items() if isinstance(v, int | float) and not isinstance(v, bool)
            and "time" not in k and "second" not in k and not k.endswith("_s") and k != "stale_summary_hosts"}


# --------------------------------------------------------------------------- baseline diff: events files


def test_version_1_recording_without_added_columns_reads(tmp_path, reference):
    """architecture.md: "Columns version 2 added read as null in version 1 files."; schema.py
    READABLE_VERSIONS = ("1", "2")."""
    goods = [rewrite(g, tmp_path / f"v1-{g.name}", drop(*ADDED), footer(version="1")) for g in GOOD]
    bad = rewrite(BAD, tmp_path / "v1-bad.parquet", drop(*ADDED), footer(version="1"))
    # (the recordings' added columns are null here, so the diff must be the same)
    if any(pq.read_table(f, columns=list(ADDED)).column(c).null_count < pq.read_metadata(f).num_rows
           for f in (*GOOD, BAD) for c in ADDED):
        assert diff_json(bad, goods)[0] in (0, 1)
    else:
        assert diff_json(bad, goods) == reference


def test_version_1_missing_a_version_1_column_is_refused(tmp_path):
    """schema.py validate_schema: "missing columns or type mismatches are not [allowed], except
    columns a later version added"; architecture.md: "refuse a mismatch naming file, column,
    expected and found"."""
    bad = rewrite(BAD, tmp_path / "nolayer.parquet", drop(*ADDED, "layer"), footer(version="1"))
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "layer")


def test_extra_column_same_version_is_accepted(tmp_path, reference):
    """schema.py validate_schema: "Extra columns are allowed (forward compatibility within a
    version)"."""
    def extra(t: pa.Table) -> pa.Table:
        return t.append_column("future_col", pa.array(["x"] * t.num_rows, pa.string()))
    bad = rewrite(BAD, tmp_path / "extra.parquet", extra, footer())
    assert diff_json(bad) == reference


@pytest.mark.parametrize("version", ["3", "2.1", "10", "0"])
def test_unknown_version_is_refused_naming_it(tmp_path, version):
    """schema.py: "Readers refuse a file whose table, version or columns do not match, naming
    the file, the column, what was expected and what was found." (READABLE_VERSIONS 1, 2)."""
    def extra(t: pa.Table) -> pa.Table:
        return t.append_column("future_col", pa.array([1] * t.num_rows, pa.int64()))
    bad = rewrite(BAD, tmp_path / f"v{version}.parquet", extra, footer(version=version))
    line = refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "version")
    assert version in line.split("version")[-1] or f"version {version}" in line, line


def test_file_without_footer_keys_is_refused(tmp_path):
    """architecture.md: "files without the footer keys (as polars or DuckDB write a frame) are
    refused naming the column or the missing key"."""
    bad = rewrite(BAD, tmp_path / "plain.parquet", None, None)
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, *NO_FOOTER)


def test_pandas_written_trace_without_footer_is_refused(tmp_path):
    """architecture.md: "files without the footer keys (as polars or DuckDB write a frame) are
    refused naming the column or the missing key" (pandas writes its own `pandas` key only)."""
    pd = pytest.importorskip("pandas")
    df = pq.read_table(BAD).to_pandas()
    assert isinstance(df, pd.DataFrame)
    bad = tmp_path / "pandas.parquet"
    df.to_parquet(bad, engine="pyarrow", index=False)
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, *NO_FOOTER)


def test_columns_in_another_order_read_the_same(tmp_path, reference):
    """architecture.md: readers refuse "a mismatch naming file, column, expected and found"
    (columns are matched by name: the documented columns all there is a match)."""
    def shuffle(t: pa.Table) -> pa.Table:
        return t.select(list(reversed(t.column_names)))
    goods = [rewrite(g, tmp_path / f"rev-{g.name}", shuffle, footer()) for g in GOOD]
    bad = rewrite(BAD, tmp_path / "rev-bad.parquet", shuffle, footer())
    assert diff_json(bad, goods) == reference


@pytest.mark.parametrize(("column", "typ", "want"), [
    ("seq", pa.int32(), "int64"),
    ("lost_events", pa.int32(), "int64"),
    ("pid", pa.int64(), "int32"),
    ("depth", pa.int32(), "int16"),
    ("exit_status", pa.int64(), "int32"),
])
def test_other_integer_width_is_refused_naming_column(tmp_path, column, typ, want):
    """architecture.md: "other integer widths ... are refused naming the column"; schema.py:
    "naming the file, the column, what was expected and what was found"."""
    bad = rewrite(BAD, tmp_path / f"{column}.parquet", cast(column, typ), footer())
    line = refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, column, want, str(typ))
    assert line.count("\n") == 0


@pytest.mark.parametrize("how", ["large_string", "dictionary", "string_view"])
def test_other_string_types_read_the_same(tmp_path, reference, how):
    """architecture.md: "The same data in another Arrow type is not a mismatch: large or view
    strings, and dictionary-typed columns (polars writes a Categorical so)"."""
    def convert(t: pa.Table) -> pa.Table:
        for i, f in enumerate(t.schema):
            if pa.types.is_string(f.type):
                col = t.column(i)
                if how == "dictionary":
                    col = pc.dictionary_encode(col)
                else:
                    col = col.cast(pa.large_string() if how == "large_string" else pa.string_view())
                t = t.set_column(i, pa.field(f.name, col.type, nullable=f.nullable), col)
        return t
    goods = [rewrite(g, tmp_path / f"{how}-{g.name}", convert, footer()) for g in GOOD]
    bad = rewrite(BAD, tmp_path / f"{how}-bad.parquet", convert, footer())
    assert diff_json(bad, goods) == reference


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_timestamps_in_another_unit_are_refused(tmp_path, unit):
    """architecture.md: "timestamps in another unit (Parquet 1.0, DuckDB: us) ... are refused
    naming the column"."""
    bad = rewrite(BAD, tmp_path / f"{unit}.parquet", cast("start_time", pa.timestamp(unit, tz="UTC")), footer())
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "start_time")


@pytest.mark.parametrize("tz", [None, "Etc/UTC", "GMT", "+00:00"])
def test_utc_by_another_name_or_no_zone_reads_the_same(tmp_path, reference, tz):
    """architecture.md: "A timestamp column whose zone is UTC by another name (`Etc/UTC`, ...,
    `GMT`, `+00:00`) holds the same instants and is read as UTC ... A timestamp without a zone
    (a Parquet column, ...) is UTC in every reader"."""
    def zone(t: pa.Table) -> pa.Table:
        for name in ("start_time", "end_time"):
            t = cast(name, pa.timestamp("ns", tz=tz))(t)
        return t
    goods = [rewrite(g, tmp_path / f"tz-{g.name}", zone, footer()) for g in GOOD]
    bad = rewrite(BAD, tmp_path / "tz-bad.parquet", zone, footer())
    assert diff_json(bad, goods) == reference


def test_another_zone_is_refused_naming_it(tmp_path):
    """architecture.md: "another zone is refused naming it"."""
    bad = rewrite(BAD, tmp_path / "berlin.parquet", cast("start_time", pa.timestamp("ns", tz="Europe/Berlin")),
                  footer())
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "start_time", "Europe/Berlin")


def test_nullable_schema_without_nulls_reads_the_same(tmp_path, reference):
    """architecture.md: "The same data in another Arrow type is not a mismatch"; schema.py
    validate_required: "Raise SchemaError naming the first non-nullable column of `table` that
    holds nulls" (a column declared nullable holding none is the same data)."""
    def loosen(t: pa.Table) -> pa.Table:
        return t.cast(pa.schema([f.with_nullable(True) for f in t.schema]))
    goods = [rewrite(g, tmp_path / f"null-{g.name}", loosen, footer()) for g in GOOD]
    bad = rewrite(BAD, tmp_path / "null-bad.parquet", loosen, footer())
    assert diff_json(bad, goods) == reference


def test_null_in_a_required_column_is_refused(tmp_path):
    """docs/airflow.md: unreadable includes "nulls in a non-null column"; schema.py: "Raise
    SchemaError naming the first non-nullable column of `table` that holds nulls"."""
    def hole(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("probe")
        vals = t.column(i).to_pylist()
        vals[len(vals) // 2] = None
        return t.set_column(i, pa.field("probe", pa.string()), pa.array(vals, pa.string()))
    bad = rewrite(BAD, tmp_path / "hole.parquet", hole, footer())
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "probe")


def test_wrong_table_in_footer_is_refused(tmp_path):
    """schema.py: "Readers refuse a file whose table, version or columns do not match"."""
    bad = rewrite(BAD, tmp_path / "counters-named.parquet", None, footer(table="counters"), keep_meta=True)
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "events", "counters")


def test_polars_written_trace_with_footer_reads_the_same(tmp_path, reference):
    """architecture.md: "The same data in another Arrow type is not a mismatch: large or view
    strings, and dictionary-typed columns (polars writes a Categorical so)"; schema.py (polars
    "large_list ... of structs of large_string" files with the footer keys are accepted)."""
    pl = pytest.importorskip("polars")

    def via_polars(src: Path, dst: Path) -> Path:
        df = pl.read_parquet(src).with_columns(pl.col("comm").cast(pl.Categorical))
        df.write_parquet(dst, metadata={"tracebase.table": "events", "tracebase.schema_version": "2"})
        return dst
    goods = [via_polars(g, tmp_path / f"pl-{g.name}") for g in GOOD]
    bad = via_polars(BAD, tmp_path / "pl-bad.parquet")
    assert diff_json(bad, goods) == reference


def test_polars_written_trace_without_footer_is_refused(tmp_path):
    """architecture.md: "files without the footer keys (as polars or DuckDB write a frame) are
    refused naming the column or the missing key"."""
    pl = pytest.importorskip("polars")
    bad = tmp_path / "pl-plain.parquet"
    pl.read_parquet(BAD).write_parquet(bad)
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, *NO_FOOTER)


def test_duckdb_written_trace_with_footer(tmp_path, reference):
    """architecture.md: "timestamps in another unit (Parquet 1.0, DuckDB: us) ... are refused
    naming the column"; "The same data in another Arrow type is not a mismatch" (a DuckDB file
    keeping ns times and the footer keys reads the same)."""
    duckdb = pytest.importorskip("duckdb")
    bad = tmp_path / "duck.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM read_parquet('{BAD}')) TO '{bad}' (FORMAT parquet, "
                "KV_METADATA {'tracebase.table': 'events', 'tracebase.schema_version': '2'})")
    con.close()
    if pq.read_schema(bad).field("start_time").type.unit == "ns":
        assert diff_json(bad) == reference
        return
    refused(run([BASELINE, "diff", *map(str, GOOD), str(bad)]), bad, "_time")


def test_export_reads_a_version_1_recording(tmp_path):
    """architecture.md: "Columns version 2 added read as null in version 1 files." (`baseline
    export`: "TRACE (events Parquet files or directories: a recording, ...)")."""
    v1 = rewrite(BAD, tmp_path / "v1.parquet", drop(*ADDED), footer(version="1"))
    out = tmp_path / "v1.json"
    ok(run([BASELINE, "export", str(v1), "-o", str(out)]))
    ref = ok(run([BASELINE, "export", str(BAD), "-o", "-"]))
    assert len(json.loads(out.read_text())["traceEvents"]) == len(json.loads(ref.stdout)["traceEvents"])


def test_export_refuses_a_newer_version_writing_nothing(tmp_path):
    """schema.py: "Readers refuse a file whose table, version or columns do not match, naming
    the file ..."; --help: "2 trouble (bad input ...: one line on stderr naming the file"."""
    v3 = rewrite(BAD, tmp_path / "v3.parquet", None, footer(version="3"))
    out = tmp_path / "v3.json"
    refused(run([BASELINE, "export", str(v3), "-o", str(out)]), v3, "version")
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_allowlist_learn_reads_version_1_and_refuses_version_3(tmp_path):
    """schema.py READABLE_VERSIONS = ("1", "2"): "Files of these versions are read"; others are
    refused naming the file (allowlist --help: "2 trouble ... one line on stderr naming the
    file")."""
    goods = [rewrite(g, tmp_path / f"v1-{g.name}", drop(*ADDED), footer(version="1")) for g in GOOD]
    ok(run([BASELINE, "allowlist", "learn", *map(str, goods), "-o", str(tmp_path / "a.yaml")]))
    v3 = rewrite(GOOD[0], tmp_path / "v3.parquet", None, footer(version="3"))
    out = tmp_path / "b.yaml"
    refused(run([BASELINE, "allowlist", "learn", str(v3), str(goods[1]), "-o", str(out)]), v3, "version")
    assert not out.exists()


# --------------------------------------------------------------------------- fleet datasets


def test_dataset_mixing_versions_across_hosts_audits_the_same(fleet, tmp_path):
    """schema.py: "columns a version added (ADDED_COLUMNS) read as null in older files, so a
    dataset written before an upgrade stays readable"; extra columns "are allowed (forward
    compatibility within a version)"."""
    ds = copy_ds(fleet, tmp_path)
    ev1 = part(ds, "events", "gpu00001")
    assert all(pq.read_table(ev1).column(c).null_count == pq.read_metadata(ev1).num_rows for c in ADDED)
    rewrite(ev1, ev1, drop(*ADDED), footer(version="1"), keep_meta=True)
    c0 = part(ds, "counters", "gpu00000")
    rewrite(c0, c0, lambda t: t.append_column("future_col", pa.array([0.5] * t.num_rows)),
            footer(table="counters", version="2"), keep_meta=True)
    c1 = part(ds, "counters", "gpu00001")
    rewrite(c1, c1, None, footer(table="counters", version="1"), keep_meta=True)
    doc = json.loads(ok(run([BASELINE, "audit", str(ds), "-o", str(tmp_path / "out"), "--json"])).stdout)
    assert summary_counts(doc) == summary_counts(fleet[1])


def test_dataset_with_a_newer_major_version_file_is_refused_nothing_written(fleet, tmp_path):
    """schema.py: "Readers refuse a file whose table, version or columns do not match, naming
    the file, the column, what was expected and what was found"; audit --help: "2 trouble (bad
    input ...: one line on stderr naming the file or flag)"; architecture.md: "directories a
    failed audit created are removed again when empty"."""
    ds = copy_ds(fleet, tmp_path)
    ev1 = part(ds, "events", "gpu00001")
    rewrite(ev1, ev1, lambda t: t.append_column("v3_col", pa.array([1] * t.num_rows, pa.int64())),
            footer(version="3"), keep_meta=True)
    out = tmp_path / "out"
    refused(run([BASELINE, "audit", str(ds), "-o", str(out)]), ev1, "version")
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_learn_refuses_an_int32_column_writing_no_model(fleet, tmp_path):
    """architecture.md: "other integer widths ... are refused naming the column"; learn --help:
    "2 trouble (bad input ...: one line on stderr naming the file"."""
    ds = copy_ds(fleet, tmp_path)
    ev0 = part(ds, "events", "gpu00000")
    rewrite(ev0, ev0, cast("seq", pa.int32()), footer(), keep_meta=True)
    model = tmp_path / "model.parquet"
    refused(run([BASELINE, "learn", str(ds), "-o", str(model)]), ev0, "seq", "int64", "int32")
    assert not model.exists()


def test_audit_refuses_counters_in_us(fleet, tmp_path):
    """architecture.md: "timestamps in another unit (Parquet 1.0, DuckDB: us) ... are refused
    naming the column"."""
    ds = copy_ds(fleet, tmp_path)
    c0 = part(ds, "counters", "gpu00000")
    rewrite(c0, c0, cast("snapshot_time", pa.timestamp("us", tz="UTC")), footer(table="counters"), keep_meta=True)
    out = tmp_path / "out"
    refused(run([BASELINE, "audit", str(ds), "-o", str(out)]), c0, "snapshot_time")
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_model_of_a_newer_version_is_refused(fleet, tmp_path):
    """schema.py: "Readers refuse a file whose table, version or columns do not match, naming
    the file ..." (baseline_model is one of the tables); audit --help "--model M   model from
    `baseline learn`"."""
    ds = copy_ds(fleet, tmp_path)
    model = tmp_path / "model.parquet"
    ok(run([BASELINE, "learn", str(ds), "-o", str(model)]))
    newer = rewrite(model, tmp_path / "model-v3.parquet", None, footer(table="baseline_model", version="3"),
                    keep_meta=True)
    out = tmp_path / "out"
    refused(run([BASELINE, "audit", str(ds), "--model", str(newer), "-o", str(out)]), newer, "version")
    assert not out.exists() or not any(out.rglob("*.parquet"))


def _findings_dir(fleet, tmp_path: Path) -> Path:
    d = tmp_path / "findings"
    d.mkdir()
    for name in ("findings", "clusters", "host_alerts"):
        shutil.copyfile(fleet[2] / f"{name}.parquet", d / f"{name}.parquet")
    return d


def test_report_reads_findings_written_before_comm(fleet, tmp_path):
    """architecture.md: "findings carry the trace's `comm`, an added column read as null in
    findings written before it"; schema.py ADDED_COLUMNS findings: {"comm"}."""
    d = _findings_dir(fleet, tmp_path)
    ref = json.loads(ok(run([BASELINE, "report", str(d), "--json"])).stdout)
    f = d / "findings.parquet"
    rewrite(f, f, drop("comm"), footer(table="findings", version="1"), keep_meta=True)
    got = json.loads(ok(run([BASELINE, "report", str(d), "--json"])).stdout)
    assert summary_counts(got) == summary_counts(ref)


@pytest.mark.parametrize(("name", "how", "words"), [
    ("findings", "v3", ("version",)),
    ("clusters", "int64", ("cluster_id", "int32", "int64")),
    ("host_alerts", "nofooter", NO_FOOTER),
])
def test_report_refuses_mismatched_audit_tables(fleet, tmp_path, name, how, words):
    """schema.py: "Readers refuse a file whose table, version or columns do not match, naming
    the file, the column, what was expected and what was found"; report --help: "2 trouble (bad
    input ...: one line on stderr naming the file"."""
    d = _findings_dir(fleet, tmp_path)
    f = d / f"{name}.parquet"
    if how == "v3":
        rewrite(f, f, None, footer(table=name, version="3"), keep_meta=True)
    elif how == "int64":
        rewrite(f, f, cast("cluster_id", pa.int64()), footer(table=name), keep_meta=True)
    else:
        rewrite(f, f, None, None)
    html = tmp_path / "r.html"
    refused(run([BASELINE, "report", str(d), "--html", str(html)]), f, *words)
    assert not html.exists()


def _app_failures(tmp_path: Path, meta: dict[bytes, bytes] | None, unit: str = "ns") -> Path:
    t = pa.table({
        "time": pa.array([1_795_824_000_000_000_000 // {"ns": 1, "us": 1000}[unit]],
                         pa.timestamp(unit, tz="UTC")),
        "host": ["gpu00000"], "pid": pa.array([7], pa.int32()), "tid": pa.array([7], pa.int32()),
        "device": ["0"], "job_id": ["j1"], "verb": ["ibv_reg_mr"], "errno": ["ENOMEM"],
        "message": ["ibv_reg_mr failed"], "source": ["x.log:1"],
    })
    path = tmp_path / f"app-{unit}-{'meta' if meta else 'plain'}.parquet"
    pq.write_table(t.replace_schema_metadata(meta), path)
    return path


def test_coverage_reads_an_app_failures_table_from_a_log_pipeline(fleet, tmp_path):
    """coverage --help: "--nccl-logs ... or app_failures .parquet files"; "baseline coverage
    DATASET --nccl-logs app_failures.parquet    # a log pipeline's table (tracer.schema's
    app_failures)"."""
    ds = copy_ds(fleet, tmp_path)
    app = _app_failures(tmp_path, footer(table="app_failures"))
    ok(run([BASELINE, "coverage", str(ds), "--nccl-logs", str(app), "-o", str(tmp_path / "rep"), "--json"]))


@pytest.mark.parametrize("how", ["plain", "us"])
def test_coverage_refuses_an_app_failures_table_out_of_schema(fleet, tmp_path, how):
    """architecture.md: "timestamps in another unit ... and files without the footer keys (as
    polars or DuckDB write a frame) are refused naming the column or the missing key"; coverage
    --help: "2 trouble ... one line on stderr naming the file"."""
    ds = copy_ds(fleet, tmp_path)
    if how == "plain":
        app, words = _app_failures(tmp_path, None), NO_FOOTER
    else:
        app, words = _app_failures(tmp_path, footer(table="app_failures"), unit="us"), ("time",)
    rep = tmp_path / "rep"
    refused(run([BASELINE, "coverage", str(ds), "--nccl-logs", str(app), "-o", str(rep)]), app, *words)
    assert not rep.exists() or not any(rep.rglob("*.parquet"))


# --------------------------------------------------------------------------- ingest


@pytest.fixture(scope="module")
def spool(tmp_path_factory):
    root = tmp_path_factory.mktemp("spool47")
    ok(run([BASELINE, "simulate", "--hosts", "1", "--hours", "0.3", "--seed", "2", "--spool", "-o", str(root)]))
    return root / "spool"


def test_ingest_takes_version_1_and_quarantines_version_3_snapshots(spool, tmp_path):
    """docs/airflow.md: a snapshot file that cannot be read ("wrong table or schema version")
    "is moved to `quarantine/<host>/<snapshot>/<file>` with `<file>.reason` (one line: file,
    column, expected, found); the rest of the snapshot and of the spool is ingested";
    schema.py: "a dataset written before an upgrade stays readable"."""
    sp = tmp_path / "spool"
    shutil.copytree(spool, sp)
    snaps = sorted(p for p in sp.glob("*/snap-*") if (p / "events.parquet").exists()
                   and pq.read_metadata(p / "events.parquet").num_rows)
    assert len(snaps) >= 2
    old, new = snaps[0], snaps[-1]
    rewrite(old / "events.parquet", old / "events.parquet", drop(*ADDED), footer(version="1"), keep_meta=True)
    rewrite(new / "events.parquet", new / "events.parquet",
            lambda t: t.append_column("v3_col", pa.array([1] * t.num_rows, pa.int64())),
            footer(version="3"), keep_meta=True)
    old_rows = pq.read_metadata(old / "events.parquet").num_rows
    expected = sum(pq.read_metadata(p / "events.parquet").num_rows for p in snaps if p != new)
    ds, quar = tmp_path / "ds", tmp_path / "quarantine"
    ok(run([BASELINE, "ingest", str(sp), str(ds), "--quarantine", str(quar), "--json"]))
    reasons = sorted(quar.rglob("*.reason"))
    assert [r.parent.name for r in reasons] == [new.name], reasons
    text = reasons[0].read_text().strip()
    assert "\n" not in text and "version" in text and "3" in text, text
    assert (reasons[0].parent / "events.parquet").exists()
    total = sum(pq.read_metadata(f).num_rows for f in (ds / "events").rglob("*.parquet"))
    assert total == expected and total >= old_rows
