"""A blind robustness battery of the learned models and lists: `baseline learn`, `baseline
expected learn` and `baseline allowlist learn` given odd data (only failures, only good traces,
one trace, null kinds, every host on another kernel release, two datasets, a single part file,
--since/--until oddities), their outputs written into the dataset's own tables, merged into a
hand-written list (comments and hand entries kept), a list of a future version, with a
duplicate id or a status no version knows, `audit --model` with models of a future version,
another kind, no header or a .yaml name, `evaluate` without its truth table, `suggest-probes`
and `tracer probes check` with odd BTF files and probe sets, `report` of an audit of no
findings, kill -9 of `learn`/`allowlist learn` then the rerun, two `allowlist learn` into one
list at once, and the umask, mode and owner of what they write.

Every case runs the real commands (no mocks). A refused case: exit status 2, one line on stderr
naming the path or flag, no traceback, the inputs unchanged (sha256 before/after) and no partial
output; a valid odd input: exit 0 and an output that parses with the keys it should have.

Written blind (from the README, docs/architecture.md, the commands' --help, tracer/schema.py
and expected_errors.yaml). Its sixteen first failures, ten faults, were fixed with it: traces of
kind failure learned as good runs by `allowlist learn`; `learn`/`audit` of a part file writing
into the events table; `--since` past the last date not named; `expected learn -o` into a table;
a model written before the --expected-out list was refused; a version error contradicting
itself; a BTF blob cut after its header read as no functions, a junk --base-btf an internal
error; the text report's `None` for an alert without an errno."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
RECORDINGS = REPO / "tests" / "recordings" / "c_rehash_readonly"
LOCK = ".tracebase.lock"  # a dataset's lock file: made by its readers, holds no data
NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown and setpriv need root")
MODEL_KEY = b"tracebase.model"
PART = "events/date=2026-11-28/host=gpu00002/part-00000.parquet"

HAND_LIST = """\
# Team list: do not remove this header.
version: 1
entries:
  # our own note about the GID query
  - id: hand-enodata-gid
    source: curated
    reason: written by hand, keep me
    probe: "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"
    errno: ENODATA
  - id: hand-eio-foo  # a trailing comment
    source: curated
    reason: a second hand-written entry
    probe: "foo"
    errno: EIO
  - id: learned-old-stale
    source: learned
    probe: bar
    errno: EBUSY
    status: stale
"""


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def run(args, *, cwd=None, timeout=120, user=None, umask=None, tool=BASELINE, env=None):
    cmd = [tool, *map(str, args)]
    if user == "nobody":
        tools_run_as_nobody()
        cmd = [*NOBODY, *cmd]
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          errors="replace", timeout=timeout, preexec_fn=preexec, stdin=subprocess.DEVNULL)


def tail(p) -> str:
    lines = (p.stderr or "").strip().splitlines()
    return f"exit {p.returncode}; stderr tail: {lines[-3:]}"


def assert_refused(p, *names: str) -> str:
    """Exit 2, one line naming each of `names`, no traceback; returns the line."""
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, tail(p)
    assert p.returncode == 2, tail(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, tail(p)
    for n in names:
        assert n in lines[0], (n, tail(p))
    return lines[0]


def assert_ok(p) -> None:
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, tail(p)
    assert p.returncode == 0, tail(p)


def digest(path: Path) -> dict[str, str]:
    """sha256 of a file, or of every file under a directory (symlinks by target)."""
    path = Path(path)
    if path.is_file():
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    out = {}
    for p in sorted(path.rglob("*")):
        if p.name == LOCK:
            continue
        if p.is_symlink():
            out[str(p.relative_to(path))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def table_files(ds: Path) -> list[str]:
    """Every file below the dataset's tables (what a reader of a table would meet)."""
    return sorted(str(p.relative_to(ds)) for t in ("events", "counters", "counter_buckets", "truth")
                  for p in (ds / t).rglob("*") if not p.is_dir() and p.name != LOCK)


def model_header(path: Path) -> dict:
    meta = pq.read_metadata(path).metadata
    return json.loads(meta[MODEL_KEY])


def load_list(path: Path) -> dict:
    doc = yaml.safe_load(Path(path).read_text())
    assert isinstance(doc, dict) and doc.get("version") == 1 and isinstance(doc.get("entries"), list), doc
    return doc


def ids(path: Path) -> list[str]:
    return [e["id"] for e in load_list(path)["entries"]]


def rewrite_events(ds: Path, fn) -> None:
    """Rewrite every events part file of `ds` through fn(table) -> table, footer kept."""
    for f in sorted((ds / "events").rglob("*.parquet")):
        t = pq.read_table(f)
        meta = t.schema.metadata
        pq.write_table(fn(t).replace_schema_metadata(meta), f)


def keep_kind(kind: str):
    return lambda t: t.filter(pc.equal(t["kind"], kind))


def with_header(src: Path, dst: Path, change) -> Path:
    """A copy of model `src` whose footer header JSON is change(header) (None: no header)."""
    t = pq.read_table(src)
    meta = dict(t.schema.metadata)
    header = json.loads(meta[MODEL_KEY])
    new = change(header)
    if new is None:
        meta.pop(MODEL_KEY)
    else:
        meta[MODEL_KEY] = new if isinstance(new, bytes) else json.dumps(new).encode()
    pq.write_table(t.replace_schema_metadata(meta), dst)
    return dst


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """3 hosts, 1 h, with its learned model (never changed by the cases: they copy it)."""
    ds = tmp_path_factory.mktemp("mbfleet") / "ds"
    for args in (["simulate", "--hosts", "3", "--hours", "1", "--seed", "21", "-o", ds], ["learn", ds]):
        p = run(args)
        assert p.returncode == 0, tail(p)
    return ds


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A fleet with ~250,000 good-trace events: `learn` takes a moment to run."""
    ds = tmp_path_factory.mktemp("mbbig") / "big"
    p = run(["simulate", "--hosts", "20", "--hours", "2", "--seed", "3", "--events-target", "1500000", "-o", ds])
    assert p.returncode == 0, tail(p)
    return ds


def copy_of(fleet: Path, dst: Path, *, model=False) -> Path:
    shutil.copytree(fleet, dst, symlinks=True)
    if not model:
        (dst / "baseline-model.parquet").unlink()
    return dst


@pytest.fixture()
def ds(fleet, tmp_path) -> Path:
    return copy_of(fleet, tmp_path / "ds", model=True)


# ---------------------------------------------------------------------------------------------
# learning from odd data
# ---------------------------------------------------------------------------------------------
def test_learn_from_a_dataset_of_only_failures_is_refused_naming_it(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "onlyfail")
    rewrite_events(d, keep_kind("failure"))
    before = digest(d)
    p = run(["learn", d])
    assert_refused(p, "onlyfail", "good")
    assert digest(d) == before
    assert not (d / "baseline-model.parquet").exists()
    # the audit then has no model either: refused the same way, no output directory made
    p = run(["audit", d, "-o", tmp_path / "out"])
    assert_refused(p, "onlyfail")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("what", ["recording labelled bad", "fleet failures only"])
def test_allowlist_learn_from_failures_only_learns_nothing_as_good(fleet, tmp_path, what):
    if what == "recording labelled bad":
        src = tmp_path / "bad.parquet"
        shutil.copy(RECORDINGS / "bad.parquet", src)
        args = ["allowlist", "learn", src, "-o", tmp_path / "l.yaml"]
    else:
        d = copy_of(fleet, tmp_path / "onlyfail")
        rewrite_events(d, keep_kind("failure"))
        src = d / "events"
        args = ["allowlist", "learn", "--mixed", src, "-o", tmp_path / "l.yaml"]
    before = digest(src)
    p = run(args)
    assert digest(src) == before
    assert_refused(p, str(src.name))
    assert not (tmp_path / "l.yaml").exists()


def test_learn_and_audit_a_dataset_of_only_good_traces(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "onlygood")
    rewrite_events(d, keep_kind("good"))
    before = digest(d)
    p = run(["learn", d, "-o", tmp_path / "m.parquet", "--json"])
    assert_ok(p)
    out = json.loads(p.stdout)
    assert out["good_traces"] > 0 and out["operations"] > 0, out
    assert model_header(tmp_path / "m.parquet")["model"] == "GoodTraceBaseline"
    p = run(["audit", d, "--model", tmp_path / "m.parquet", "-o", tmp_path / "a", "--json"])
    assert_ok(p)
    assert json.loads(p.stdout)["findings"] == 0
    assert pq.read_table(tmp_path / "a" / "findings.parquet").num_rows == 0
    assert digest(d) == before


def test_report_of_an_audit_of_zero_findings(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "onlygood")
    rewrite_events(d, keep_kind("good"))
    assert_ok(run(["audit", d, "--refit", "-o", tmp_path / "a"]))
    before = digest(tmp_path / "a")
    p = run(["report", tmp_path / "a"])
    assert_ok(p)
    assert re.search(r"findings: 0\b", p.stdout), p.stdout[:500]
    p = run(["report", tmp_path / "a", "--json", "--html", tmp_path / "r.html"])
    assert_ok(p)
    out = json.loads(p.stdout)
    assert out["findings"] == 0 and out["clusters"] == 0 and out["top_clusters"] == [], out
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert digest(tmp_path / "a") == before


def test_text_report_shows_no_python_none_for_a_missing_errno(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "onlygood")
    rewrite_events(d, keep_kind("good"))
    assert_ok(run(["audit", d, "--refit", "-o", tmp_path / "a"]))
    p = run(["report", tmp_path / "a"])
    assert_ok(p)
    alerts = [ln for ln in p.stdout.splitlines() if "persistent_bad_state" in ln or "rising_" in ln]
    assert alerts, p.stdout[:800]
    assert not any(re.search(r"\bNone\b", ln) for ln in alerts), alerts


def test_one_good_trace_is_enough_to_learn_and_audit(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "one")
    kept = []

    def one(t):
        good = t.filter(pc.equal(t["kind"], "good"))
        if kept or not good.num_rows:
            return t.slice(0, 0)
        kept.append(good["trace_id"][0].as_py())
        return t.filter(pc.equal(t["trace_id"], kept[0]))

    rewrite_events(d, one)
    assert kept
    p = run(["learn", d, "--json"])
    assert_ok(p)
    assert json.loads(p.stdout)["good_traces"] == 1
    assert model_header(d / "baseline-model.parquet")["n_traces"] == 1
    p = run(["expected", "learn", d, "-o", tmp_path / "e.yaml", "--json"])
    assert_ok(p)
    load_list(tmp_path / "e.yaml")
    assert_ok(run(["audit", d, "-o", tmp_path / "a", "--json"]))


@pytest.mark.parametrize("cmd", ["learn", "expected learn", "audit --refit"])
def test_null_kinds_are_refused_naming_file_and_column(fleet, tmp_path, cmd):
    d = copy_of(fleet, tmp_path / "nullkind")
    part = d / PART
    t = pq.read_table(part)
    meta = t.schema.metadata
    i = t.schema.get_field_index("kind")
    t = t.set_column(i, pa.field("kind", pa.string(), nullable=True), pa.nulls(t.num_rows, pa.string()))
    pq.write_table(t.replace_schema_metadata(meta), part)
    before = digest(d)
    args = {"learn": ["learn", d, "-o", tmp_path / "m.parquet"],
            "expected learn": ["expected", "learn", d, "-o", tmp_path / "e.yaml"],
            "audit --refit": ["audit", d, "--refit", "-o", tmp_path / "a"]}[cmd]
    assert_refused(run(args), "part-00000.parquet", "kind")
    assert digest(d) == before
    assert not any(tmp_path.glob("[mea]*")), sorted(tmp_path.iterdir())


def test_every_host_on_another_kernel_release(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "otherkr")
    for table in ("events", "counters", "counter_buckets"):
        for f in (d / table).rglob("*.parquet"):
            t = pq.read_table(f)
            if "kernel_release" in t.schema.names:
                i = t.schema.get_field_index("kernel_release")
                t = t.set_column(i, t.schema.field(i), pa.array(["7.1.0-9999-other"] * t.num_rows, pa.string()))
                pq.write_table(t, f)
    before = digest(d)
    p = run(["learn", d, "--json"])
    assert_ok(p)
    assert json.loads(p.stdout)["good_traces"] > 0
    assert_ok(run(["expected", "learn", d, "-o", tmp_path / "e.yaml"]))
    load_list(tmp_path / "e.yaml")
    # a model learned on the original release audits the moved fleet
    p = run(["audit", d, "--model", fleet / "baseline-model.parquet", "-o", tmp_path / "a", "--json"])
    assert_ok(p)
    assert json.loads(p.stdout)["findings"] > 0
    after = digest(d)
    after.pop("baseline-model.parquet")
    assert after == before


@pytest.mark.parametrize("cmd", ["learn", "expected learn", "audit"])
def test_two_datasets_are_refused_naming_the_second(fleet, tmp_path, cmd):
    other = copy_of(fleet, tmp_path / "second")
    before = digest(fleet), digest(other)
    args = {"learn": ["learn", fleet, other, "-o", tmp_path / "m.parquet"],
            "expected learn": ["expected", "learn", fleet, other, "-o", tmp_path / "e.yaml"],
            "audit": ["audit", fleet, other, "-o", tmp_path / "a"]}[cmd]
    assert_refused(run(args), "second")
    assert (digest(fleet), digest(other)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["second"]


def test_learn_of_a_single_part_file_writes_nothing_into_the_table(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "pf")
    before = table_files(d)
    p = run(["learn", d / PART])
    assert "Traceback" not in p.stderr and p.returncode in (0, 2), tail(p)
    assert table_files(d) == before, "a file was written inside the events table"
    assert_ok(run(["learn", d, "-o", tmp_path / "m.parquet"]))


def test_learn_of_a_single_part_file_with_an_output(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "pf")
    before = digest(d)
    p = run(["learn", d / PART, "-o", tmp_path / "m.parquet", "--json"])
    assert_ok(p)
    out = json.loads(p.stdout)
    assert out["model"].endswith("m.parquet") and out["good_traces"] > 0, out
    assert model_header(tmp_path / "m.parquet")["n_traces"] == out["good_traces"]
    assert digest(d) == before


def test_audit_of_a_single_part_file_writes_nothing_into_the_table(fleet, tmp_path):
    d = copy_of(fleet, tmp_path / "pf")
    before = table_files(d)
    p = run(["audit", d / PART])
    assert "Traceback" not in p.stderr and p.returncode in (0, 2), tail(p)
    assert table_files(d) == before, "files were written inside the events table"
    assert_ok(run(["expected", "learn", d, "-o", tmp_path / "e.yaml"]))


def test_since_with_an_offset_is_read_as_that_instant(fleet, tmp_path):
    # 05:30+05:00 is 00:30 UTC: half of the fleet's hour
    p = run(["learn", fleet, "--since", "2026-11-28T05:30:00+05:00", "-o", tmp_path / "m.parquet", "--json"])
    assert_ok(p)
    half = json.loads(p.stdout)["good_traces"]
    p = run(["learn", fleet, "-o", tmp_path / "all.parquet", "--json"])
    assert_ok(p)
    assert 0 < half < json.loads(p.stdout)["good_traces"]


@pytest.mark.parametrize("cmd", ["learn", "expected learn", "allowlist learn"])
def test_until_is_not_an_option_and_is_named(fleet, tmp_path, cmd):
    args = {"learn": ["learn", fleet, "--until", "2h", "-o", tmp_path / "m.parquet"],
            "expected learn": ["expected", "learn", fleet, "--until", "2h", "-o", tmp_path / "e.yaml"],
            "allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", "--until", "2h",
                                "-o", tmp_path / "l.yaml"]}[cmd]
    assert_refused(run(args), "--until")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("since", ["", "-2h", "2026-11-28T25:00:00Z", "1600-01-01", "2h ago"])
def test_learn_since_values_no_one_should_accept(fleet, tmp_path, since):
    assert_refused(run(["learn", fleet, "--since", since, "-o", tmp_path / "m.parquet"]), "--since")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cmd", ["learn", "expected learn", "audit"])
def test_since_after_the_last_date_names_dataset_and_flag(ds, tmp_path, cmd):
    args = {"learn": ["learn", ds, "--since", "2026-11-29", "-o", tmp_path / "m.parquet"],
            "expected learn": ["expected", "learn", ds, "--since", "2026-11-29", "-o", tmp_path / "e.yaml"],
            "audit": ["audit", ds, "--since", "2026-11-29", "-o", tmp_path / "a"]}[cmd]
    before = digest(ds)
    p = run(args)
    assert digest(ds) == before
    assert not any(tmp_path.glob("[mea]*"))
    assert_refused(p, "ds", "--since")


# ---------------------------------------------------------------------------------------------
# where the outputs go
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["events/m.parquet", "counters/date=2026-11-28/m.parquet",
                                   "counter_buckets/date=2026-11-28/host=gpu00000/m.parquet",
                                   "truth/date=2026-11-28/host=gpu00001/m.parquet"])
def test_learn_output_into_a_table_is_refused(ds, where):
    before = digest(ds)
    p = run(["learn", ds, "-o", ds / where])
    assert_refused(p, "-o", where.split("/")[0])
    assert digest(ds) == before


def test_learn_expected_out_into_a_table_is_refused_and_writes_no_model(ds, tmp_path):
    before = digest(ds)
    p = run(["learn", ds, "-o", tmp_path / "m.parquet", "--expected-out", ds / "events" / "e.yaml"])
    assert_refused(p, "--expected-out", "events")
    assert digest(ds) == before
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.parametrize("where", ["events/e.yaml", "counter_buckets/e.yaml"])
def test_expected_learn_output_into_a_table_is_refused(ds, where):
    before = digest(ds)
    p = run(["expected", "learn", ds, "-o", ds / where])
    assert digest(ds) == before, "a list was written inside the dataset's tables"
    assert_refused(p, where.split("/")[0])


# ---------------------------------------------------------------------------------------------
# merging into existing lists
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", ["expected learn", "learn --expected-out", "allowlist learn"])
def test_merge_into_a_hand_written_list_keeps_its_comments_and_entries(fleet, tmp_path, cmd):
    lst = tmp_path / "team.yaml"
    lst.write_text(HAND_LIST)
    args = {"expected learn": ["expected", "learn", fleet, "-o", lst],
            "learn --expected-out": ["learn", fleet, "-o", tmp_path / "m.parquet", "--expected-out", lst],
            "allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", RECORDINGS / "good1.parquet",
                                "-o", lst]}[cmd]
    before = digest(fleet)
    assert_ok(run(args))
    assert digest(fleet) == before
    text = lst.read_text()
    for line in ("# Team list: do not remove this header.", "# our own note about the GID query",
                 "# a trailing comment"):
        assert line in text, (line, text[:600])
    doc = load_list(lst)
    by_id = {e["id"]: e for e in doc["entries"]}
    assert by_id["hand-enodata-gid"]["reason"] == "written by hand, keep me"
    assert by_id["hand-eio-foo"]["probe"] == "foo" and by_id["hand-eio-foo"]["source"] == "curated"
    assert by_id["learned-old-stale"]["status"] == "stale"
    assert len(by_id) == len(doc["entries"]), "an id twice"
    if cmd == "allowlist learn":
        assert any(e["source"] == "learned" and e["id"] not in ("learned-old-stale",) for e in doc["entries"])
    # merged again: the same list (nothing added twice)
    once = lst.read_text()
    assert_ok(run(args))
    assert lst.read_text() == once


@pytest.mark.parametrize("cmd", ["expected learn", "learn --expected-out", "allowlist learn"])
@pytest.mark.parametrize("version", ["2", "'1'"])
def test_list_of_another_version_is_refused_and_kept(fleet, tmp_path, cmd, version):
    lst = tmp_path / "future.yaml"
    lst.write_text(f"# from the future\nversion: {version}\nentries: []\n")
    args = {"expected learn": ["expected", "learn", fleet, "-o", lst],
            "learn --expected-out": ["learn", fleet, "-o", tmp_path / "m.parquet", "--expected-out", lst],
            "allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", lst]}[cmd]
    before = digest(lst)
    assert_refused(run(args), "future.yaml", "version")
    assert digest(lst) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "m.parquet") == ["future.yaml"]


@pytest.mark.parametrize("where", ["-o", "default"])
def test_learn_with_a_list_it_refuses_writes_no_model(ds, tmp_path, where):
    lst = tmp_path / "future.yaml"
    lst.write_text("version: 2\nentries: []\n")
    args = ["learn", ds, "--expected-out", lst]
    if where == "-o":
        args += ["-o", tmp_path / "m.parquet"]
    before = digest(ds)
    p = run(args)
    assert_refused(p, "future.yaml")
    assert not (tmp_path / "m.parquet").exists()
    assert digest(ds) == before


@pytest.mark.parametrize("cmd", ["expected learn", "learn --expected-out", "allowlist learn"])
def test_list_with_a_duplicate_id_is_refused_naming_both_entries(fleet, tmp_path, cmd):
    lst = tmp_path / "dup.yaml"
    lst.write_text("version: 1\nentries:\n"
                   "  - {id: x1, source: curated, reason: one, probe: foo, errno: EIO}\n"
                   "  - {id: x1, source: curated, reason: two, probe: bar, errno: EIO}\n")
    args = {"expected learn": ["expected", "learn", fleet, "-o", lst],
            "learn --expected-out": ["learn", fleet, "-o", tmp_path / "m.parquet", "--expected-out", lst],
            "allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", lst]}[cmd]
    before = digest(lst)
    assert_refused(run(args), "dup.yaml", "entries[1]", "entries[0]", "x1")
    assert digest(lst) == before


@pytest.mark.parametrize("cmd", ["expected learn", "allowlist learn"])
@pytest.mark.parametrize("status", ["retired", "ACTIVE"])
def test_list_with_a_status_no_version_knows_is_refused(fleet, tmp_path, cmd, status):
    lst = tmp_path / "st.yaml"
    lst.write_text(HAND_LIST.replace("status: stale", f"status: {status}"))
    args = {"expected learn": ["expected", "learn", fleet, "-o", lst],
            "allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", lst]}[cmd]
    before = digest(lst)
    assert_refused(run(args), "st.yaml", "entries[2]", "status")
    assert digest(lst) == before


# ---------------------------------------------------------------------------------------------
# audit --model with odd models
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case,change,words", [
    ("future", lambda h: {**h, "model_version": 99}, ["99"]),
    ("otherkind", lambda h: {**h, "model": "IsolationForest"}, ["GoodTraceBaseline"]),
    ("noheader", lambda h: None, ["GoodTraceBaseline"]),
    ("badjson", lambda h: b"{not json", ["GoodTraceBaseline"]),
    ("noversion", lambda h: {k: v for k, v in h.items() if k != "model_version"}, ["version"]),
])
def test_audit_with_a_model_it_cannot_use_is_refused_naming_it(fleet, tmp_path, case, change, words):
    model = with_header(fleet / "baseline-model.parquet", tmp_path / f"m_{case}.parquet", change)
    before = digest(model), digest(fleet)
    p = run(["audit", fleet, "--model", model, "-o", tmp_path / "out"])
    assert_refused(p, model.name, *words)
    assert (digest(model), digest(fleet)) == before
    assert not (tmp_path / "out").exists()


def test_model_version_as_text_is_not_shown_as_the_number(fleet, tmp_path):
    model = with_header(fleet / "baseline-model.parquet", tmp_path / "m.parquet",
                        lambda h: {**h, "model_version": str(h["model_version"])})
    p = run(["audit", fleet, "--model", model, "-o", tmp_path / "out"])
    assert "Traceback" not in p.stderr, tail(p)
    if p.returncode == 2:
        line = assert_refused(p, "m.parquet")
        m = re.search(r"expected (.*?), found (.*?)(?: \(|$)", line)
        assert m and m.group(1) != m.group(2), line
    else:
        assert_ok(p)


def test_audit_with_a_model_renamed_yaml_reads_it_by_content(fleet, tmp_path):
    model = tmp_path / "model.yaml"
    shutil.copy(fleet / "baseline-model.parquet", model)
    before = digest(model)
    p = run(["audit", fleet, "--model", model, "-o", tmp_path / "out", "--json"])
    assert "Traceback" not in p.stderr, tail(p)
    assert digest(model) == before
    if p.returncode == 2:
        assert_refused(p, "model.yaml")
    else:
        assert_ok(p)
        assert json.loads(p.stdout)["findings"] > 0


@pytest.mark.parametrize("what", ["expected list", "events part"])
def test_audit_with_a_model_of_another_kind_of_file(fleet, tmp_path, what):
    if what == "expected list":
        model = tmp_path / "model.parquet"
        shutil.copy(REPO / "expected_errors.yaml", model)
    else:
        model = tmp_path / "part-00000.parquet"
        shutil.copy(fleet / PART, model)
    before = digest(model)
    assert_refused(run(["audit", fleet, "--model", model, "-o", tmp_path / "out"]), model.name)
    assert digest(model) == before
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# evaluate without its truth
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["removed", "emptied", "a file"])
def test_evaluate_without_a_truth_table_names_it(fleet, tmp_path, how):
    d = copy_of(fleet, tmp_path / "nt", model=True)
    assert_ok(run(["audit", d]))
    shutil.rmtree(d / "truth")
    if how == "emptied":
        (d / "truth").mkdir()
    elif how == "a file":
        (d / "truth").write_text("x\n")
    before = digest(d)
    assert_refused(run(["evaluate", d, "--json"]), "nt", "truth")
    assert digest(d) == before


# ---------------------------------------------------------------------------------------------
# suggest-probes and tracer probes check
# ---------------------------------------------------------------------------------------------
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
NEED_BTF = pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="no /sys/kernel/btf/vmlinux")


@pytest.mark.parametrize("how", ["missing", "dev-null", "empty dir", "empty symbols"])
def test_suggest_probes_odd_inputs_are_refused(tmp_path, how):
    if how == "missing":
        args, name = ["--btf", tmp_path / "nope"], "nope"
    elif how == "dev-null":
        args, name = ["--btf", "/dev/null"], "/dev/null"
    elif how == "empty dir":
        (tmp_path / "btfdir").mkdir()
        args, name = ["--btf", tmp_path / "btfdir"], "btfdir"
    else:
        (tmp_path / "syms.txt").write_text("")
        args, name = ["--symbols", tmp_path / "syms.txt"], "syms.txt"
    assert_refused(run(["suggest-probes", *args]), name)


@NEED_BTF
@pytest.mark.parametrize("size", [24, 100])
def test_suggest_probes_btf_cut_short_is_refused(tmp_path, size):
    cut = tmp_path / "cut.btf"
    with open(VMLINUX_BTF, "rb") as fh:
        cut.write_bytes(fh.read(size))
    assert_refused(run(["suggest-probes", "--btf", cut]), "cut.btf")


@NEED_BTF
def test_suggest_probes_base_btf_that_is_not_btf_is_named(tmp_path):
    junk = tmp_path / "junk.btf"
    junk.write_text("hello\n")
    # TMPDIR: an internal error's traceback file stays in this case's directory
    p = run(["suggest-probes", "--btf", VMLINUX_BTF, "--base-btf", junk], env={"TMPDIR": str(tmp_path)})
    assert_refused(p, "junk.btf")


PROBE_SETS = {
    "empty": ("", "empty"),
    "no probes": ("version: 1\nname: none\nattach: fexit\nprobes: []\n", "probes"),
    "future version": ("version: 2\nname: fut\nattach: fexit\nprobes: []\n", "version"),
    "unknown attach": ("version: 1\nname: odd\nattach: kretprobe\nprobes:\n"
                       "  - {symbol: x, layer: core, object: QP, operation: q, ret: int}\n", "attach"),
    "symbol not an identifier": ("version: 1\nname: odd\nattach: fexit\nprobes:\n"
                                 "  - {symbol: 'x; rm -rf /', layer: core, object: QP, operation: q, ret: int}\n",
                                 "symbol"),
    "symbol twice": ("version: 1\nname: dup\nattach: fexit\nprobes:\n"
                     "  - {symbol: ib_uverbs_reg_mr, layer: uverbs, object: MR, operation: reg_mr, ret: int}\n"
                     "  - {symbol: ib_uverbs_reg_mr, layer: uverbs, object: MR, operation: reg_mr, ret: int}\n",
                     "probes[1]"),
    "key twice": ("version: 1\nname: odd\nattach: fexit\nprobes:\n"
                  "  - {symbol: x, layer: core, object: QP, operation: q, ret: int, symbol: y}\n", "symbol"),
    "an allowlist": ((REPO / "expected_errors.yaml").read_text(), "entries"),
}


@pytest.mark.parametrize("case,tool", [*((c, "tracer probes check") for c in sorted(PROBE_SETS)),
                                       *((c, "suggest-probes --probes") for c in
                                         ("an allowlist", "no probes", "symbol twice", "key twice"))])
def test_odd_probe_sets_are_refused_naming_file_and_field(tmp_path, case, tool):
    text, field = PROBE_SETS[case]
    s = tmp_path / "set.yaml"
    s.write_text(text)
    before = digest(s)
    if tool == "tracer probes check":
        p = run(["probes", "check", s, "--json"], tool=TRACER)
    else:
        (tmp_path / "syms.txt").write_text("ib_create_qp\nmlx5_ib_create_qp\n")
        p = run(["suggest-probes", "--symbols", tmp_path / "syms.txt", "--probes", s])
    assert_refused(p, "set.yaml", field)
    assert digest(s) == before


@pytest.mark.parametrize("name", ["../../etc/passwd", "rdma/../syscalls", "/dev/null", "nosuchset"])
def test_tracer_probes_check_odd_set_names(tmp_path, name):
    p = run(["probes", "check", name], tool=TRACER, cwd=tmp_path)
    assert_refused(p, name)


# ---------------------------------------------------------------------------------------------
# kill -9 while writing, and two writers of one list
# ---------------------------------------------------------------------------------------------
def _killed_after(args, delay, cwd) -> int:
    proc = subprocess.Popen([BASELINE, *map(str, args)], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    return proc.wait(timeout=60)


def test_learn_killed_at_moments_leaves_no_half_model_and_the_rerun_works(big, tmp_path):
    clean = tmp_path / "clean.parquet"
    assert_ok(run(["learn", big, "-o", clean]))
    want = pq.read_table(clean).sort_by([("record", "ascending")]).num_rows
    before = digest(big)
    out = tmp_path / "o"
    out.mkdir()
    for delay in (0.2, 0.4, 0.55, 0.7, 0.9):
        model = out / "m.parquet"
        model.unlink(missing_ok=True)
        _killed_after(["learn", big, "-o", model], delay, tmp_path)
        if model.exists():  # the rename happened: then it is whole
            assert model_header(model)["model"] == "GoodTraceBaseline"
            assert pq.read_table(model).num_rows == want
        assert not [p.name for p in out.iterdir() if p.name != "m.parquet" and not p.name.startswith(".")]
        assert_ok(run(["learn", big, "-o", model]))
        assert pq.read_table(model).num_rows == want
    assert digest(big) == before


@pytest.mark.parametrize("cmd", ["allowlist learn", "expected learn"])
def test_list_learn_killed_then_rerun_merges_once(big, tmp_path, cmd):
    learn = (["allowlist", "learn", RECORDINGS / "good0.parquet", RECORDINGS / "good1.parquet"]
             if cmd == "allowlist learn" else ["expected", "learn", big])
    ref = tmp_path / "ref.yaml"
    ref.write_text(HAND_LIST)
    assert_ok(run([*learn, "-o", ref]))
    assert ref.read_text() != HAND_LIST
    for delay in (0.25, 0.45, 0.6, 0.75, 0.9):
        lst = tmp_path / "team.yaml"
        lst.write_text(HAND_LIST)
        _killed_after([*learn, "-o", lst], delay, tmp_path)
        assert lst.read_text() in (HAND_LIST, ref.read_text()), f"half a list after a kill at {delay}s"
        assert_ok(run([*learn, "-o", lst]))
        assert lst.read_text() == ref.read_text(), f"rerun after a kill at {delay}s differs from one clean run"
        assert len(ids(lst)) == len(set(ids(lst)))


def test_two_allowlist_learns_into_one_list_at_once_lose_nothing(tmp_path):
    a = ["allowlist", "learn", RECORDINGS / "good0.parquet", RECORDINGS / "good1.parquet"]
    other = RECORDINGS.parent / "sqlite_rw_fallback"  # another program's good runs
    b = ["allowlist", "learn", other / "good0.parquet", other / "good1.parquet"]
    seq = tmp_path / "seq.yaml"
    seq.write_text(HAND_LIST)
    assert_ok(run([*a, "-o", seq]))
    assert_ok(run([*b, "-o", seq]))
    want = set(ids(seq))
    for _ in range(3):
        lst = tmp_path / "team.yaml"
        lst.write_text(HAND_LIST)
        procs = [subprocess.Popen([BASELINE, *map(str, [*args, "-o", lst])], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for args in (a, b)]
        errs = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        for rc, err in errs:
            assert "Traceback" not in err and rc == 0, (rc, err)
        got = ids(lst)
        assert len(got) == len(set(got)) and set(got) == want, sorted(want ^ set(got))
        assert lst.read_text().startswith("# Team list: do not remove this header.\n")
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------------------------------------
# umask, mode and owner
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mask,file_mode", [(0o077, 0o600), (0o000, 0o666)])
def test_learned_outputs_honour_the_umask(fleet, tmp_path, mask, file_mode):
    d = copy_of(fleet, tmp_path / "ds")
    out = tmp_path / "o"
    out.mkdir()
    for args in (["learn", d], ["learn", d, "-o", out / "m.parquet", "--expected-out", out / "e.yaml"],
                 ["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", out / "a.yaml"],
                 ["expected", "learn", d, "-o", out / "x.yaml"]):
        assert_ok(run(args, umask=mask))
    for p in [d / "baseline-model.parquet", *out.iterdir()]:
        assert stat.S_IMODE(p.stat().st_mode) == file_mode, (p, oct(p.stat().st_mode))


@ROOT_ONLY
@pytest.mark.parametrize("what", ["model", "expected list"])
def test_a_rewritten_model_or_list_keeps_its_mode_and_owner(fleet, tmp_path, what):
    if what == "model":
        target = tmp_path / "m.parquet"
        shutil.copy(fleet / "baseline-model.parquet", target)
        args = ["learn", fleet, "--since", "2026-11-28T00:30:00Z", "-o", target]
    else:
        target = tmp_path / "e.yaml"
        target.write_text("# kept\nversion: 1\nentries: []\n")
        args = ["expected", "learn", fleet, "-o", target]
    target.chmod(0o640)
    os.chown(target, 1234, 2345)
    before = digest(target)
    assert_ok(run(args, umask=0o022))
    st = target.stat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o640, 1234, 2345)
    assert digest(target) != before


@ROOT_ONLY
@pytest.mark.parametrize("cmd", ["learn", "allowlist learn", "expected learn"])
def test_an_owners_read_only_file_is_refused_not_replaced(fleet, cmd):
    d = Path(tempfile.mkdtemp(prefix="mbro-"))
    try:
        d.chmod(0o755)
        shutil.copytree(fleet, d / "ds", symlinks=True)
        shutil.copy(RECORDINGS / "good0.parquet", d)
        if cmd == "learn":
            target = d / "m.parquet"
            shutil.copy(fleet / "baseline-model.parquet", target)
            args = ["learn", "ds", "-o", "m.parquet"]
        else:
            target = d / "l.yaml"
            target.write_text("version: 1\nentries: []\n")
            args = (["allowlist", "learn", "good0.parquet", "-o", "l.yaml"] if cmd == "allowlist learn"
                    else ["expected", "learn", "ds", "-o", "l.yaml"])
        for p in [d, *d.rglob("*")]:
            os.chown(p, 65534, 65534, follow_symlinks=False)
        target.chmod(0o444)
        before = digest(target)
        p = run(args, cwd=d, user="nobody")
        assert_refused(p, target.name)
        assert digest(target) == before and stat.S_IMODE(target.stat().st_mode) == 0o444
        assert not [q.name for q in d.iterdir() if q.name.startswith(".")]
    finally:
        shutil.rmtree(d, ignore_errors=True)
