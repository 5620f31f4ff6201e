"""Round forty: a blind battery aimed at the pipeline side, every case a real process on real
files (no mocks): the fleet daemon `tracer run` (the `--prom` textfile read while it is
rewritten, a flood of SIGUSR2 snapshots, ingest running in a loop while the daemon writes the
spool, bad `--host`/`--spool`/`--prom` values), `baseline ingest` (a spool that is a file, a
dataset or quarantine that is a file, a read-only quarantine, snapshots with a foreign table,
stray files, an empty or half snapshot, a snapshot that arrives late and out of order, a spool
re-sent after its day was compacted, a `--keep-spool` ingest killed -9 at random moments), the
pipeline config the DAGs read (bad YAML, wrong types, unknown keys, relative paths), the DAGs
themselves (`dag.test()` with a bad and a good config), and readers (`baseline export`,
`baseline coverage`) running while ingest writes: each must see a whole before or after.

The promise checked everywhere: bad input is one line on stderr naming the file or flag,
expected vs found, exit status 2, never a traceback; nothing is lost (every snapshot ends in the
dataset exactly once, or stays in the spool, or sits in the quarantine with its reason).

Written blind, from the README, docs/*.md, deploy/README.md, the commands' --help and
tracer/schema.py. Cases the tool fails are kept as they should be and marked xfail(strict=True)
with what happened."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
IS_ROOT = os.geteuid() == 0


def run(*argv: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)


def assert_one_line_error(proc: subprocess.CompletedProcess, *names: str) -> str:
    """Exit 2, no traceback, one line on stderr naming each of `names`."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or 'dir') of everything under root."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def dataset_keys(ds: Path) -> dict[str, list[tuple]]:
    """Every row's identity in the dataset's events (RECORD_KEY) and counters (SNAPSHOT_KEY),
    read file by file (per-host parts and day files), hidden directories skipped."""
    out: dict[str, list[tuple]] = {"events": [], "counters": []}
    for table, key in (("events", ("trace_id", "seq")), ("counters", ("probe", "snapshot_time"))):
        root = ds / table
        if not root.exists():
            continue
        for f in sorted(root.rglob("*.parquet")):
            rel = f.relative_to(root).parts
            if any(p.startswith((".", "_")) for p in rel):
                continue
            host = next((p[5:] for p in rel if p.startswith("host=")), None)
            d = pq.read_table(f).to_pydict()
            hosts = d["host"] if "host" in d else [host] * len(d[key[0]])
            out[table].extend(zip(hosts, d[key[0]], d[key[1]], strict=True))
    return out


def spool_keys(spool: Path) -> dict[str, list[tuple]]:
    """The same identities read straight from a spool's snapshot files."""
    out: dict[str, list[tuple]] = {"events": [], "counters": []}
    for table, key in (("events", ("trace_id", "seq")), ("counters", ("probe", "snapshot_time"))):
        for f in sorted(spool.glob(f"*/snap-*/{table}.parquet")):
            d = pq.read_table(f).to_pydict()
            hosts = d["host"] if "host" in d else [f.parent.parent.name] * len(d[key[0]])
            out[table].extend(zip(hosts, d[key[0]], d[key[1]], strict=True))
    return out


def assert_exactly_once(ds: Path, expected: dict[str, list[tuple]]) -> None:
    got = dataset_keys(ds)
    for table in ("events", "counters"):
        dupes = [k for k, n in collections.Counter(got[table]).items() if n > 1]
        assert not dupes, f"{table}: {len(dupes)} rows twice, e.g. {dupes[:3]}"
        assert set(got[table]) == set(expected[table]), (
            table, len(set(got[table])), len(set(expected[table])),
            sorted(set(expected[table]) - set(got[table]))[:3], sorted(set(got[table]) - set(expected[table]))[:3])


def snapshots(spool: Path) -> list[Path]:
    return sorted(p for p in spool.glob("*/snap-*") if p.is_dir())


@pytest.fixture(scope="module")
def sim_spool(tmp_path_factory) -> Path:
    """A simulated 3-host hour, 06:00 three days ago (inside one UTC day: `--start 3d` run near
    midnight spread the hour over two days, and the compaction test found 2 days, CI 128), in the
    spool layout of `tracer run`."""
    import datetime as dt

    out = tmp_path_factory.mktemp("sim")
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(days=3)).strftime("%Y-%m-%dT06:00:00Z")
    proc = run(BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--start", start, "--spool",
               "--seed", "40", "-o", str(out / "sim"))
    assert proc.returncode == 0, proc.stderr
    return out / "sim" / "spool"


@pytest.fixture(scope="module")
def expected(sim_spool) -> dict[str, list[tuple]]:
    keys = spool_keys(sim_spool)
    assert keys["events"] and keys["counters"]
    return keys


@pytest.fixture
def spool(sim_spool, tmp_path) -> Path:
    dst = tmp_path / "spool"
    shutil.copytree(sim_spool, dst, symlinks=True)
    return dst


need_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (bind mounts, BPF)")


# ---------------------------------------------------------------------------------------------
# baseline ingest: places that are not what they should be


def test_ingest_spool_that_is_a_regular_file_is_named_as_a_file(tmp_path):
    """(A strict xfail as written: 'FILE: spool directory does not exist', the file being there.)"""
    (tmp_path / "spoolfile").write_text("not a spool\n")
    proc = run(BASELINE, "ingest", "spoolfile", "ds", cwd=tmp_path)
    line = assert_one_line_error(proc, "spoolfile")
    assert not (tmp_path / "ds").exists()
    assert (tmp_path / "spoolfile").read_text() == "not a spool\n"
    assert "does not exist" not in line and ("file" in line.lower() or "not a directory" in line.lower()), line


def test_ingest_spool_missing_is_one_line_and_creates_no_dataset(tmp_path):
    proc = run(BASELINE, "ingest", "nospool", "ds", cwd=tmp_path)
    assert_one_line_error(proc, "nospool")
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("which", ["dataset", "quarantine"])
def test_ingest_dataset_or_quarantine_that_is_a_file_moves_nothing(spool, tmp_path, which):
    (tmp_path / "afile").write_text("x")
    before = tree_digest(spool)
    argv = [BASELINE, "ingest", "spool", "afile" if which == "dataset" else "ds"]
    if which == "quarantine":
        argv += ["--quarantine", "afile"]
    proc = run(*argv, cwd=tmp_path)
    assert_one_line_error(proc, "afile")
    assert tree_digest(spool) == before
    assert (tmp_path / "afile").read_text() == "x"


@need_root
def test_read_only_quarantine_stops_with_one_line_loses_nothing_and_the_rerun_completes(spool, tmp_path, expected):
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) for a private mount namespace")
    first = snapshots(spool)[0]
    bad = first / "counters.parquet"
    d = pq.read_table(bad).to_pydict()
    bad_rows = {(first.parent.name, probe, t) for probe, t in zip(d["probe"], d["snapshot_time"], strict=True)}
    assert bad_rows
    bad.write_bytes(b"not parquet at all\n")
    q = tmp_path / "q"
    q.mkdir()
    before = tree_digest(spool)
    script = f'mount --bind -o ro "{q}" "{q}" && exec "{BASELINE}" ingest spool ds --quarantine q'
    proc = run("unshare", "--mount", "sh", "-c", script, cwd=tmp_path)
    assert_one_line_error(proc, "q/")
    assert tree_digest(spool) == before, "a failed ingest changed the spool"
    # the rerun with a writable quarantine takes everything else, exactly once
    proc = run(BASELINE, "ingest", "spool", "ds", "--quarantine", "q", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reasons = list(q.rglob("counters.parquet.reason"))
    assert len(reasons) == 1 and "counters.parquet" in reasons[0].read_text()
    assert_exactly_once(tmp_path / "ds", {"events": expected["events"],
                                          "counters": [k for k in expected["counters"] if k not in bad_rows]})
    assert not snapshots(spool)


# ---------------------------------------------------------------------------------------------
# baseline ingest: odd snapshots


def test_foreign_stray_empty_and_half_snapshots_are_quarantined_or_said_and_the_rest_ingested_once(spool, tmp_path):
    host = spool / "gpu00000"
    snaps = sorted(p for p in host.iterdir() if p.name.startswith("snap-"))
    assert len(snaps) >= 6
    keep = spool_keys(spool)
    lost = set()
    # a counters file where the events file belongs (a foreign table)
    lost |= {k for k in keep["events"] if _in(spool, snaps[0], "events", k)}
    shutil.copyfile(snaps[0] / "counters.parquet", snaps[0] / "events.parquet")
    # stray files beside a whole snapshot
    (snaps[1] / "README.txt").write_text("hello\n")
    shutil.copyfile(snaps[1] / "events.parquet", snaps[1] / "extra.parquet")
    # an empty snapshot directory
    lost |= {k for t in ("events", "counters") for k in keep[t] if _in(spool, snaps[2], t, k)}
    for f in snaps[2].iterdir():
        f.unlink()
    # events.parquet that is a directory
    lost |= {k for k in keep["events"] if _in(spool, snaps[3], "events", k)}
    (snaps[3] / "events.parquet").unlink()
    (snaps[3] / "events.parquet").mkdir()
    # a zero-byte counters file
    lost |= {k for k in keep["counters"] if _in(spool, snaps[4], "counters", k)}
    (snaps[4] / "counters.parquet").write_bytes(b"")
    # a stray file and a nested directory beside the snapshots
    (host / "notes.txt").write_text("x\n")
    (host / "subdir" / "snap-x").mkdir(parents=True)
    proc = run(BASELINE, "ingest", "spool", "ds", "--quarantine", "q", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)["ingest"]
    quarantined = {Path(q["path"]).name: q["reason"] for q in result["quarantined"]}
    for name in ("events.parquet", "README.txt", "extra.parquet", "counters.parquet", "notes.txt", "subdir"):
        assert name in quarantined, (name, quarantined)
        assert name in quarantined[name], quarantined[name]
    for q in result["quarantined"]:
        assert (tmp_path / q["path"]).exists() or os.path.lexists(tmp_path / q["path"]), q
        assert Path(str(tmp_path / q["path"]) + ".reason").exists(), q
    assert any(snaps[2].name in w for w in result["warnings"]), result["warnings"]
    expected = {t: [k for k in keep[t] if k not in lost] for t in keep}
    assert_exactly_once(tmp_path / "ds", expected)
    assert not snapshots(spool)


def _in(spool: Path, snap: Path, table: str, key: tuple) -> bool:  # noqa: ARG001
    f = snap / f"{table}.parquet"
    d = pq.read_table(f).to_pydict()
    cols = ("trace_id", "seq") if table == "events" else ("probe", "snapshot_time")
    return (key[1], key[2]) in set(zip(d[cols[0]], d[cols[1]], strict=True)) and key[0] == snap.parent.name


def test_a_snapshot_arriving_late_and_out_of_order_is_taken_and_the_watermark_never_goes_back(spool, tmp_path, expected):
    late = sorted((spool / "gpu00001").glob("snap-*"))[2]
    held = tmp_path / "held"
    held.mkdir()
    shutil.move(late, held / late.name)
    proc = run(BASELINE, "ingest", "spool", "ds", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    mark = json.loads((tmp_path / "ds" / "_ingest_watermark.json").read_text())["committed_until"]
    shutil.move(held / late.name, spool / "gpu00001" / late.name)
    proc = run(BASELINE, "ingest", "spool", "ds", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ingest"]["snapshots"] == 1
    again = json.loads((tmp_path / "ds" / "_ingest_watermark.json").read_text())["committed_until"]
    assert again >= mark, (mark, again)
    assert_exactly_once(tmp_path / "ds", expected)


def test_a_spool_resent_after_its_day_was_compacted_adds_no_row(sim_spool, spool, tmp_path, expected):
    proc = run(BASELINE, "ingest", "spool", "ds", "--compact-days-after", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "ds" / "events").glob("date=*/day-*.parquet")), "no day file made"
    for _ in range(2):  # the whole spool re-sent twice (an exporter retrying after a crash)
        shutil.rmtree(spool)
        shutil.copytree(sim_spool, spool)
        proc = run(BASELINE, "ingest", "spool", "ds", "--json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["ingest"]["rows"] == {"events": 0, "counters": 0}
        assert_exactly_once(tmp_path / "ds", expected)


def test_keep_spool_ingests_killed_9_at_random_moments_then_a_moving_ingest_takes_everything_once(spool, tmp_path, expected):
    rng = random.Random(40)
    held = [s.relative_to(spool) for s in snapshots(spool)]
    for _ in range(4):
        p = subprocess.Popen([BASELINE, "ingest", "spool", "ds", "--keep-spool", "--compact-min-files", "2"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.25, 1.0))
        p.kill()
        _, err = p.communicate(timeout=30)
        assert "Traceback" not in err
    assert [s.relative_to(spool) for s in snapshots(spool)] == held  # --keep-spool moved nothing
    proc = run(BASELINE, "ingest", "spool", "ds", "--compact-min-files", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_once(tmp_path / "ds", expected)
    assert not snapshots(spool)
    leftovers = [p for p in (tmp_path / "ds").rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


# ---------------------------------------------------------------------------------------------
# readers while ingest writes


def _split_spool(spool: Path, tmp_path: Path) -> Path:
    """Move the last host out of `spool` into a second spool; returns the second spool."""
    second = tmp_path / "spool2"
    second.mkdir()
    host = sorted(spool.iterdir())[-1]
    shutil.move(host, second / host.name)
    return second


def test_export_while_ingest_writes_sees_the_dataset_before_or_after(spool, tmp_path):
    second = _split_spool(spool, tmp_path)
    assert run(BASELINE, "ingest", "spool", "ds", cwd=tmp_path).returncode == 0

    def events_exported(name: str) -> int:
        proc = run(BASELINE, "export", "ds", "-o", name, cwd=tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        data = json.loads((tmp_path / name).read_text())
        return sum(1 for e in data["traceEvents"] if e.get("ph") != "M")

    before = events_exported("before.json")
    seen = []
    ingest = subprocess.Popen([BASELINE, "ingest", "spool2", "ds", "--compact-min-files", "2"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    i = 0
    while ingest.poll() is None or i < 2:
        seen.append(events_exported(f"during{i}.json"))
        i += 1
    _, err = ingest.communicate(timeout=60)
    assert ingest.returncode == 0, err
    after = events_exported("after.json")
    assert after > before
    assert set(seen) <= {before, after}, (before, after, seen)
    del second


def test_coverage_while_ingest_writes_is_the_report_of_before_or_of_after(spool, tmp_path):
    snap = snapshots(spool)[0].name
    _split_spool(spool, tmp_path)
    assert run(BASELINE, "ingest", "spool", "ds", cwd=tmp_path).returncode == 0
    week = "2026-W01"
    day = f"{snap[5:9]}-{snap[9:11]}-{snap[11:13]}"

    def report(out: str) -> bytes:
        proc = run(BASELINE, "coverage", "ds", "--week", day, "-o", out, "--json", cwd=tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        nonlocal week
        week = json.loads(proc.stdout)["week"]
        return (tmp_path / out / week / "report.md").read_bytes()

    before = report("cov_before")
    ingest = subprocess.Popen([BASELINE, "ingest", "spool2", "ds"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    i = 0
    while ingest.poll() is None or i < 1:
        seen.append(report(f"cov_during{i}"))
        i += 1
    _, err = ingest.communicate(timeout=60)
    assert ingest.returncode == 0, err
    after = report("cov_after")
    assert before != after
    for j, got in enumerate(seen):
        assert got in (before, after), f"report {j} during the ingest is neither the one before nor after"


# ---------------------------------------------------------------------------------------------
# the pipeline config the DAGs read

BASE_CONFIG = """version: 1
paths:
  spool: spool
  dataset: dataset
  quarantine: quarantine
  findings: findings
  reports: reports
  model: model/baseline.parquet
  expected_errors: expected_errors.yaml
retention:
  dataset_days: 90
  quarantine_days: 30
  findings_days: 30
thresholds:
  compact_min_files: 8
  compact_small_file_mb: 16.0
  compact_days_after: 2
  audit_window_hours: 2.0
  baseline_window_days: 7.0
  trend_change_pct: 25.0
"""

BAD_CONFIGS = {
    # name: (text, words the one line must hold)
    "unclosed_flow": ("version: 1\npaths: [unclosed\n", ["YAML", "line"]),
    "tab_indent": (BASE_CONFIG.replace("  spool", "\tspool"), ["YAML", "line"]),
    "empty": ("", ["mapping"]),
    "top_list": ("- a\n- b\n", ["mapping", "list"]),
    "version_2": (BASE_CONFIG.replace("version: 1", "version: 2"), ["version", "2"]),
    "version_text": (BASE_CONFIG.replace("version: 1", "version: '1'"), ["version", "'1'"]),
    "unknown_top_key": (BASE_CONFIG + "retension: {dataset_days: 3}\n", ["retension", "unknown"]),
    "unknown_path_key": (BASE_CONFIG.replace("paths:\n", "paths:\n  spoool: x\n"), ["paths.spoool", "unknown"]),
    "bool_for_int": (BASE_CONFIG.replace("dataset_days: 90", "dataset_days: true"), ["retention.dataset_days", "True"]),
    "float_for_int": (BASE_CONFIG.replace("dataset_days: 90", "dataset_days: 90.5"), ["retention.dataset_days", "90.5"]),
    "nan": (BASE_CONFIG.replace("trend_change_pct: 25.0", "trend_change_pct: .nan"), ["thresholds.trend_change_pct", "nan"]),
    "inf": (BASE_CONFIG.replace("audit_window_hours: 2.0", "audit_window_hours: .inf"), ["thresholds.audit_window_hours", "inf"]),
    "duration_text": (BASE_CONFIG.replace("audit_window_hours: 2.0", "audit_window_hours: 2h"), ["thresholds.audit_window_hours", "2h"]),
    "negative": (BASE_CONFIG.replace("compact_min_files: 8", "compact_min_files: -1"), ["thresholds.compact_min_files", "-1"]),
    "huge_int": (BASE_CONFIG.replace("dataset_days: 90", "dataset_days: " + "9" * 5000), ["digits", "line"]),
    "path_list": (BASE_CONFIG.replace("  spool: spool", "  spool: [a, b]"), ["paths.spool", "list"]),
    "path_null": (BASE_CONFIG.replace("  spool: spool", "  spool: null"), ["paths.spool", "None"]),
    "path_empty": (BASE_CONFIG.replace("  spool: spool", "  spool: ''"), ["paths.spool"]),
    "path_nul_byte": (BASE_CONFIG.replace("  spool: spool", '  spool: "a\\0b"'), ["paths.spool"]),
    "duplicate_key": (BASE_CONFIG.replace("paths:\n", "paths:\n  spool: other\n"), ["spool", "line"]),
    "section_list": (BASE_CONFIG.replace("retention:\n  dataset_days: 90\n  quarantine_days: 30\n  findings_days: 30\n",
                                         "retention: [1, 2]\n"), ["retention", "list"]),
    "nccl_ints": (BASE_CONFIG + "nccl_logs: [1, 2]\n", ["nccl_logs"]),
    "workers_zero": (BASE_CONFIG + "ingest_workers: 0\n", ["ingest_workers", "0"]),
    "model_is_config": (BASE_CONFIG.replace("model/baseline.parquet", "pipeline.yaml"), ["paths.model"]),
    "expected_in_table": (BASE_CONFIG.replace("  expected_errors: expected_errors.yaml",
                                              "  expected_errors: dataset/events/x.yaml"), ["paths.expected_errors"]),
    "not_utf8": (None, ["UTF-8"]),
}

_LOAD_ALL = r"""
import json, sys
from baseline.pipeline.config import load_config
out = {}
for path in sys.argv[1:]:
    try:
        cfg = load_config(path)
        out[path] = {"ok": True, "spool": str(cfg.spool), "dataset": str(cfg.dataset)}
    except BaseException as e:  # what escapes is what a DAG task would log
        out[path] = {"ok": False, "type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                     "message": str(e)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def config_results(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("configs")
    paths = []
    for name, (text, _) in BAD_CONFIGS.items():
        d = root / name
        d.mkdir()
        p = d / "pipeline.yaml"
        if text is None:
            p.write_bytes(BASE_CONFIG.encode().replace(b"spool: spool", b"spool: sp\xff"))
        else:
            p.write_text(text)
        paths.append(str(p))
    good = root / "good" / "sub"
    good.mkdir(parents=True)
    (good / "pipeline.yaml").write_text(BASE_CONFIG)
    paths.append(str(good / "pipeline.yaml"))
    proc = run(PYTHON, "-c", _LOAD_ALL, *paths, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return root, json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_pipeline_config_is_one_clear_line_naming_file_and_key(config_results, name):
    root, results = config_results
    path = str(root / name / "pipeline.yaml")
    got = results[path]
    assert not got["ok"], f"{name}: accepted ({got})"
    assert "TracebaseError" in got["mro"], got  # the library's own error, not a TypeError/KeyError
    message = got["message"]
    assert "\n" not in message and "Traceback" not in message, message
    assert path in message, message
    for word in BAD_CONFIGS[name][1]:
        assert word in message, (word, message)


def test_relative_config_paths_are_read_against_the_config_files_directory(config_results):
    root, results = config_results
    got = results[str(root / "good" / "sub" / "pipeline.yaml")]
    assert got["ok"], got
    assert got["spool"] == str(root / "good" / "sub" / "spool")
    assert got["dataset"] == str(root / "good" / "sub" / "dataset")


@pytest.mark.parametrize("edit", [("  dataset: dataset", "  dataset: spool"), ("  quarantine: quarantine", "  quarantine: spool/q")])
def test_a_config_whose_spool_overlaps_dataset_or_quarantine_moves_nothing(spool, tmp_path, edit):
    (tmp_path / "pipeline.yaml").write_text(BASE_CONFIG.replace(*edit))
    before = tree_digest(spool)
    code = ("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
            "tasks.ingest_once(load_config('pipeline.yaml'))\n")
    script = f"import sys\ntry:\n    exec({code!r})\nexcept Exception as e:\n    print(type(e).__name__, '|', e); sys.exit(2)\n"
    proc = run(PYTHON, "-c", script, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    kind, _, message = proc.stdout.partition(" | ")
    assert kind in ("TracebaseError", "ConfigError"), proc.stdout
    assert str(spool) in message, message
    assert tree_digest(spool) == before


# ---------------------------------------------------------------------------------------------
# the DAGs

_DAG_RUNS = r"""
import json, os, sys, tempfile
home = tempfile.mkdtemp()
os.environ.update(AIRFLOW_HOME=home, AIRFLOW__CORE__DAGS_FOLDER=sys.argv[1], AIRFLOW__CORE__LOAD_EXAMPLES="False")
from airflow.utils import db
db.initdb()
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
out = {"import_errors": {k: str(v)[-300:] for k, v in bag.import_errors.items()}, "dags": sorted(bag.dag_ids), "runs": {}}
for conf in sys.argv[2:]:
    dr = bag.get_dag("trace_ingest").test(run_conf={"config": conf})
    out["runs"][conf] = {"state": str(dr.state), "tasks": {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}}
print("RESULT " + json.dumps(out))
"""


def test_trace_ingest_dag_refuses_a_bad_config_before_ingest_and_runs_a_good_one_exactly_once(spool, tmp_path, expected):
    pytest.importorskip("airflow")
    (tmp_path / "bad.yaml").write_text(BASE_CONFIG.replace("compact_min_files: 8", "compact_min_files: 1"))
    (tmp_path / "good.yaml").write_text(BASE_CONFIG)
    bad, missing, good = str(tmp_path / "bad.yaml"), str(tmp_path / "nope.yaml"), str(tmp_path / "good.yaml")
    # one process: the bad config, a config that does not exist, then the good one
    proc = run(PYTHON, "-c", _DAG_RUNS, str(REPO / "dags"), bad, missing, good, cwd=tmp_path, timeout=180)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = json.loads(line[7:])
    assert out["import_errors"] == {}
    assert out["dags"] == ["baseline_audit", "probe_coverage_weekly", "trace_ingest"]
    for conf in (bad, missing):
        r = out["runs"][conf]
        assert r["state"] == "failed" and r["tasks"]["validate_config"] == "failed", r
        assert r["tasks"]["ingest"] != "success", r
    logs = proc.stdout + proc.stderr
    assert "thresholds.compact_min_files" in logs and "nope.yaml" in logs
    assert out["runs"][good]["state"] == "success", out["runs"][good]
    assert_exactly_once(tmp_path / "dataset", expected)
    assert not snapshots(spool)


# ---------------------------------------------------------------------------------------------
# the fleet daemon `tracer run`

need_bpf = pytest.mark.skipif(not IS_ROOT, reason="tracer run needs root to load BPF")


@need_bpf
@pytest.mark.parametrize("argv, names", [
    (["--host", "../evil"], ["--host", "../evil"]),
    (["--host", ".hidden"], ["--host", ".hidden"]),
    (["--host", "x" * 251], ["--host"]),
    (["--host", "a b"], ["--host", "a b"]),
    (["--spool", "afile"], ["--spool", "afile"]),
    (["--prom", "spool/t.prom"], ["--prom", "spool"]),
    (["--prom", "adir.prom"], ["--prom", "adir.prom"]),
    (["--prom", "nodir/t.prom"], ["--prom", "nodir"]),
    (["--prom", "t.prom", "--metadata-file", "t.prom"], ["--metadata-file", "t.prom"]),
    (["--control-file", "nodir/ctl"], ["--control-file", "nodir"]),
])
def test_tracer_run_bad_places_are_refused_before_anything_is_written(tmp_path, argv, names):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.prom").mkdir()
    full = [TRACER, "run", "syscalls", "-d", "1s", "-i", "1s"]
    if "--spool" not in argv:
        full += ["--spool", "spool"]
    if "--host" not in argv:
        full += ["--host", "h"]
    proc = run(*full, *argv, cwd=tmp_path)
    assert_one_line_error(proc, *names)
    assert not list(tmp_path.rglob("snap-*")), "a refused daemon wrote snapshots"
    assert (tmp_path / "afile").read_text() == "x"


def _parse_prom(text: str) -> dict[str, float]:
    """A textfile as node_exporter reads it: whole lines, '# HELP'/'# TYPE' or 'name{labels} value'."""
    assert text.endswith("\n"), "textfile does not end in a newline (cut)"
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            assert not line or line.startswith(("# HELP ", "# TYPE ")), line
            continue
        name, _, value = line.rpartition(" ")
        values[name] = float(value)
    return values


def _totals_from_spool_or_dataset(files: list[Path]) -> collections.Counter:
    tot: collections.Counter = collections.Counter()
    for f in files:
        d = pq.read_table(f, columns=["probe", "invocations"]).to_pydict()
        for probe, n in zip(d["probe"], d["invocations"], strict=True):
            tot[probe] += n
    return tot


def _prom_invocations(values: dict[str, float]) -> collections.Counter:
    tot: collections.Counter = collections.Counter()
    for name, v in values.items():
        if name.startswith("tracebase_probe_invocations_total{"):
            probe = name.split('probe="', 1)[1].split('"', 1)[0]
            tot[probe] += int(v)
    return tot


@need_bpf
def test_prom_textfile_read_while_rewritten_is_always_whole_and_agrees_with_the_spool(tmp_path):
    (tmp_path / "textfile").mkdir()
    prom = tmp_path / "textfile" / "tracebase.prom"
    daemon = subprocess.Popen([TRACER, "run", "syscalls", "-i", "100ms", "-d", "3s", "--spool", "spool",
                               "--host", "h", "--prom", str(prom)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reads = 0
    while daemon.poll() is None:
        try:
            text = prom.read_text()
        except FileNotFoundError:
            time.sleep(0.005)
            continue
        values = _parse_prom(text)
        assert any(k.startswith("tracebase_snapshots_total") for k in values), text[-300:]
        reads += 1
    out, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0, err
    assert "Traceback" not in err
    assert reads > 10
    values = _parse_prom(prom.read_text())
    snaps = sorted((tmp_path / "spool" / "h").glob("snap-*"))
    assert values['tracebase_snapshots_total{host="h"}'] == len(snaps)
    assert _prom_invocations(values) == _totals_from_spool_or_dataset([s / "counters.parquet" for s in snaps])
    leftovers = [p.name for p in (tmp_path / "textfile").iterdir() if p.name != "tracebase.prom"]
    assert not leftovers, leftovers


@need_bpf
def test_ingest_in_a_loop_while_the_daemon_writes_under_a_sigusr2_flood_takes_every_snapshot_once(tmp_path):
    (tmp_path / "textfile").mkdir()
    prom = tmp_path / "textfile" / "t.prom"
    daemon = subprocess.Popen([TRACER, "run", "syscalls", "-i", "200ms", "-d", "5s", "--spool", "spool",
                               "--host", "h", "--prom", str(prom)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()

    def flood() -> None:
        while not (tmp_path / "spool" / "h").exists() and not stop.is_set():
            time.sleep(0.05)
        time.sleep(0.5)
        for _ in range(40):
            if stop.is_set() or daemon.poll() is not None:
                return
            daemon.send_signal(signal.SIGUSR2)
            time.sleep(0.02)

    flooder = threading.Thread(target=flood)
    flooder.start()
    runs = 0
    try:
        while daemon.poll() is None:
            if (tmp_path / "spool").exists():
                proc = run(BASELINE, "ingest", "spool", "ds", "--quarantine", "q", "--json", cwd=tmp_path)
                assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
                assert json.loads(proc.stdout)["ingest"]["quarantined"] == []
                runs += 1
            else:
                time.sleep(0.1)
    finally:
        stop.set()
        flooder.join()
    out, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0, err
    assert "Traceback" not in err
    proc = run(BASELINE, "ingest", "spool", "ds", "--quarantine", "q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert runs >= 2
    assert not list((tmp_path / "spool" / "h").glob("snap-*")), "snapshots left in the spool"
    assert not (tmp_path / "q").exists() or not any((tmp_path / "q").rglob("*")), list((tmp_path / "q").rglob("*"))
    values = _parse_prom(prom.read_text())
    total = int(values['tracebase_snapshots_total{host="h"}'])
    # 5 s at 200 ms plus the flood: ~25-60 on an idle machine; a loaded one (a CI beside other
    # suites: 25 once) runs fewer intervals and merges pending SIGUSR2s. What is checked below is
    # that each of them reached the dataset once, whatever their number
    assert total >= 15
    got = dataset_keys(tmp_path / "ds")["counters"]
    assert len(got) == len(set(got)), "a counters row twice"
    times = {t for _, _, t in got}
    assert len(times) == total, (len(times), total)
    files = [f for f in (tmp_path / "ds" / "counters").rglob("*.parquet")
             if not any(p.startswith(".") for p in f.relative_to(tmp_path / "ds").parts)]
    assert _totals_from_spool_or_dataset(files) == _prom_invocations(values)


# ---------------------------------------------------------------------------------------------
# readers while compaction runs, and after it was killed -9 (before any rerun)


def _many_small_parts(spool: Path, tmp_path: Path, chunks: int = 5) -> Path:
    """A dataset whose every host-day holds `chunks` part files (the spool ingested in turns)."""
    for i, snap in enumerate(snapshots(spool)):
        dst = tmp_path / f"chunk{i % chunks}" / snap.parent.name
        dst.mkdir(parents=True, exist_ok=True)
        shutil.move(snap, dst / snap.name)
    for i in range(chunks):
        proc = run(BASELINE, "ingest", f"chunk{i}", "ds", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    (tmp_path / "empty").mkdir()
    return tmp_path / "ds"


def _export_count(tmp_path: Path, name: str) -> int:
    proc = run(BASELINE, "export", "ds", "-o", name, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads((tmp_path / name).read_text())
    return sum(1 for e in data["traceEvents"] if e.get("ph") != "M")


def test_export_and_coverage_during_compaction_see_the_same_data_as_before(spool, tmp_path, expected):
    day = snapshots(spool)[0].name
    day = f"{day[5:9]}-{day[9:11]}-{day[11:13]}"
    _many_small_parts(spool, tmp_path)
    before = _export_count(tmp_path, "before.json")

    def coverage(out: str) -> bytes:
        proc = run(BASELINE, "coverage", "ds", "--week", day, "-o", out, "--json", cwd=tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        week = json.loads(proc.stdout)["week"]
        return (tmp_path / out / week / "report.md").read_bytes()

    cov_before = coverage("cov_before")
    results: dict[str, list] = {"export": [], "coverage": [], "errors": []}
    done = threading.Event()

    def reader(kind: str, k: int) -> None:
        i = 0
        while not done.is_set() or i == 0:
            try:
                if kind == "export":
                    results[kind].append(_export_count(tmp_path, f"during{k}-{i}.json"))
                else:
                    results[kind].append(coverage(f"cov_during{k}-{i}"))
            except AssertionError as e:  # reported below, not lost in the thread
                results["errors"].append(str(e))
            i += 1

    threads = [threading.Thread(target=reader, args=(kind, k)) for k, kind in enumerate(("export", "coverage"))]
    for t in threads:
        t.start()
    time.sleep(0.2)
    proc = run(BASELINE, "ingest", "empty", "ds", "--compact-min-files", "2", "--compact-days-after", "1", "--json",
               cwd=tmp_path)
    done.set()
    for t in threads:
        t.join(timeout=120)
    assert proc.returncode == 0, proc.stderr
    compact = json.loads(proc.stdout)["compact"]
    assert compact["files_in"] > compact["files_out"] and compact["days"] == 1, compact
    assert not results["errors"], results["errors"][:2]
    assert set(results["export"]) == {before}, (before, results["export"])
    assert all(r == cov_before for r in results["coverage"]), "coverage during compaction differs from before"
    assert coverage("cov_after") == cov_before, "compaction changed the weekly report"
    assert_exactly_once(tmp_path / "ds", expected)


def test_readers_after_a_compaction_killed_9_see_every_row_once_before_any_rerun(spool, tmp_path, expected):
    _many_small_parts(spool, tmp_path)
    before = _export_count(tmp_path, "before.json")
    rng = random.Random(4040)
    for i in range(3):
        p = subprocess.Popen([BASELINE, "ingest", "empty", "ds", "--compact-min-files", "2", "--compact-days-after", "1"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.3, 0.8))
        p.kill()
        _, err = p.communicate(timeout=30)
        assert "Traceback" not in err
        # no rerun yet: what a reader sees now must be the whole data, each row once
        assert _export_count(tmp_path, f"after_kill{i}.json") == before, f"kill {i}"
        assert_exactly_once(tmp_path / "ds", expected)
    proc = run(BASELINE, "ingest", "empty", "ds", "--compact-min-files", "2", "--compact-days-after", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_exactly_once(tmp_path / "ds", expected)
    debris = [p for p in (tmp_path / "ds").iterdir() if p.name.startswith(".compact-")]
    assert not debris, debris


def test_a_watermark_that_is_a_directory_is_one_line_and_nothing_is_lost(spool, tmp_path, expected):
    second = _split_spool(spool, tmp_path)
    assert run(BASELINE, "ingest", "spool", "ds", cwd=tmp_path).returncode == 0
    mark = tmp_path / "ds" / "_ingest_watermark.json"
    mark.unlink()
    mark.mkdir()
    before = spool_keys(second)
    proc = run(BASELINE, "ingest", "spool2", "ds", cwd=tmp_path)
    line = assert_one_line_error(proc, "_ingest_watermark.json")
    # refused before anything moved (its write came last: the run failed having done its work)
    assert "expected the ingest watermark" in line and "found a directory" in line, line
    assert spool_keys(second) == before
    # whatever it did, every snapshot is in the dataset once or still in the spool
    left = spool_keys(second)
    got = dataset_keys(tmp_path / "ds")
    for table in ("events", "counters"):
        assert len(got[table]) == len(set(got[table]))
        assert set(got[table]) | set(left[table]) == set(expected[table]), table


def test_two_bad_hosts_whose_names_escape_alike_are_both_quarantined_whole(sim_spool, tmp_path):
    """b'h\\xfe' (not UTF-8) and the text 'h\\\\xfe' print the same; neither may overwrite the other."""
    src = sorted((sim_spool / "gpu00000").glob("snap-*"))[0]
    spool = tmp_path / "spool"
    for name in (b"h\xfe", b"h\\xfe"):
        d = os.path.join(bytes(spool), name, src.name.encode())
        os.makedirs(d)
        for f in src.iterdir():
            shutil.copyfile(f, os.path.join(d, f.name.encode()))
        with open(os.path.join(d, b"mark.txt"), "wb") as fh:
            fh.write(name)
    proc = run(BASELINE, "ingest", "spool", "ds", "--quarantine", "q", "--json", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    quarantined = json.loads(proc.stdout)["ingest"]["quarantined"]
    assert len(quarantined) == 2, quarantined
    marks = sorted(p.read_bytes() for p in (tmp_path / "q").rglob("mark.txt"))
    assert marks == sorted([b"h\xfe", b"h\\xfe"]), marks
    for q in quarantined:
        assert os.path.exists(str(tmp_path / q["path"]) + ".reason"), q
