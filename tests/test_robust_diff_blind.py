"""A blind robustness battery for `baseline diff`: real `tracer record` outputs
(tests/recordings/c_rehash_readonly) edited with pyarrow into odd-but-schema-valid shapes (one
event, every event of one thread, a million identical events, seq out of order or duplicated,
ts_ns backwards, pids at the int32 edges, paths of 100 KB, with newlines or raw bytes, errnos
outside the errno list, unknown probes, a command per row, several traces in one file), inputs
that are not what they claim (another table with a proper footer, a future schema version, a
truncated file, a FIFO, a directory of oddities), allowlist and learned-list edge cases and output
oddities (a reader that stops after one byte, /dev/full, a closed stdout). Every case runs a
real `baseline` process (no mocks), from an empty working directory (no learned list picked up).

Failing cases: exit status 2, no traceback, one line on stderr naming the path or flag, every
input unchanged (sha256 before/after). Valid-but-odd cases: no crash, exit 0 or 1 agreeing with
the JSON's `anomaly`, the JSON parseable and holding the documented keys.

Written blind (from the README, docs/architecture.md's diff and schema parts, the commands'
--help and tracer/schema.py). Cases the tool fails are kept as they should be and marked
xfail(strict=True) with the behaviour observed. Fixed with it: 2000 one-event processes took 33 s
(a loop over every stream per region ended in the thread's end, this round's `_reordered_at_end`
siblings: 3 s now, as before it). Fixed since: `--` after an option placed between positionals;
two GOOD runs under one trace id (refused, naming both); an empty file inside a GOOD directory
(left out with a warning naming it). (`--learned`/`--allowlist` given twice kept the last: both
are loaded now.)"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
BASELINE = str(REPO / ".venv" / "bin" / "baseline")
SOURCE = REPO / "tests" / "recordings" / "c_rehash_readonly"
JSON_KEYS = {"anomaly", "anomalies", "anomaly_count", "bifurcation", "bad_trace", "good_traces", "expected_ignored",
             "events", "version"}
BIFURCATION_KEYS = {"probe", "errno", "path", "process", "position", "last_common", "good_instead", "score", "rank"}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def run(args, *, cwd, timeout=120, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([BASELINE, "diff", *map(str, args)], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True, errors="replace", timeout=timeout, check=False)


def tail(p) -> str:
    return f"exit {p.returncode}; stderr: {(p.stderr or '').strip().splitlines()[-3:]}"


def assert_refused(p, *names: str) -> None:
    """Exit 2, one line on stderr naming each of `names`, no traceback."""
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode == 2, tail(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, tail(p)
    for n in names:
        assert str(n) in lines[0], (n, lines[0])


def assert_sane(p, *, json_out=True) -> dict | None:
    """A valid input: no crash, exit 0/1, JSON with the documented keys agreeing with the status."""
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode in (0, 1), tail(p)
    if not json_out:
        return None
    obj = json.loads(p.stdout)
    assert set(obj) >= JSON_KEYS, sorted(obj)
    assert obj["anomaly"] is (p.returncode == 1), (obj["anomaly"], p.returncode)
    if p.returncode == 1:
        assert set(obj["bifurcation"]) >= BIFURCATION_KEYS, sorted(obj["bifurcation"])
    else:
        assert obj["bifurcation"] is None
    return obj


def digest(*paths: Path) -> dict[str, str]:
    """sha256 of files, or of every file under a directory (FIFOs by their type)."""
    out = {}
    for path in map(Path, paths):
        items = [path] if not path.is_dir() else sorted(path.rglob("*"))
        for p in items:
            if p.is_fifo():
                out[str(p)] = "fifo"
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def edited(src: Path, dst: Path, fn) -> Path:
    """`src` read, changed by `fn` (an Arrow table -> table), written to `dst` with the footer
    keys kept (tracebase.table, schema_version, recorder)."""
    t = pq.read_table(src)
    meta = t.schema.metadata
    pq.write_table(fn(t).replace_schema_metadata(meta), dst)
    return dst


def setcol(t: pa.Table, name: str, values) -> pa.Table:
    i = t.schema.get_field_index(name)
    field = t.schema.field(i)
    arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(values, type=field.type)
    return t.set_column(i, field.with_nullable(field.nullable or arr.null_count > 0), arr)


def row_of_seq(t: pa.Table, seq: int) -> int:
    return t.column("seq").to_pylist().index(seq)


def bif(obj: dict) -> tuple:
    b = obj["bifurcation"]
    return None if b is None else (b["probe"], b["errno"], b["path"], b["position"])


@pytest.fixture(scope="module")
def rec(tmp_path_factory) -> dict[str, Path]:
    """Copies of a real recording set (two good runs, one bad: c_rehash into a read-only dir)."""
    d = tmp_path_factory.mktemp("blind")
    out = {}
    for name in ("good0", "good1", "bad"):
        out[name] = Path(shutil.copy(SOURCE / f"{name}.parquet", d / f"{name}.parquet"))
    return out


@pytest.fixture(scope="module")
def reference(rec, tmp_path_factory) -> dict:
    """The diff of the unedited recordings, as JSON."""
    p = run([rec["good0"], rec["good1"], rec["bad"], "--json"], cwd=tmp_path_factory.mktemp("cwd"))
    obj = assert_sane(p)
    assert p.returncode == 1 and obj["bifurcation"]["errno"] == "EROFS"
    return obj


@pytest.fixture()
def cwd(tmp_path) -> Path:
    d = tmp_path / "cwd"
    d.mkdir()
    return d


def diff_sane(rec, cwd, bad, *extra, goods=None):
    goods = goods if goods is not None else [rec["good0"], rec["good1"]]
    inputs = [*goods, bad]
    before = digest(*inputs)
    p = run([*goods, bad, "--json", *extra], cwd=cwd)
    obj = assert_sane(p)
    assert digest(*inputs) == before
    return p, obj


def diff_refused(cwd, args, inputs, *names):
    before = digest(*inputs)
    p = run(args, cwd=cwd, timeout=60)
    assert_refused(p, *names)
    assert digest(*inputs) == before
    assert p.stdout == "", p.stdout[:200]
    return p


# ---------------------------------------------------------------------------------------------
# odd-but-valid shapes: a sane answer
# ---------------------------------------------------------------------------------------------
def test_bad_of_one_event(rec, tmp_path, cwd):
    bad = edited(rec["bad"], tmp_path / "one.parquet", lambda t: t.slice(0, 1))
    _, obj = diff_sane(rec, cwd, bad)
    assert obj["bad_trace"] == pq.read_table(bad).column("trace_id")[0].as_py()


def test_good_and_bad_of_the_same_single_event_are_the_same(rec, tmp_path, cwd):
    g = edited(rec["good0"], tmp_path / "g.parquet", lambda t: t.slice(0, 1))
    b = edited(rec["bad"], tmp_path / "b.parquet", lambda t: t.slice(0, 1))
    p, obj = diff_sane(rec, cwd, b, goods=[g])
    assert p.returncode == 0 and obj["anomaly"] is False


def test_every_event_on_one_thread(rec, tmp_path, cwd):
    def one_thread(t):
        n = t.num_rows
        return setcol(setcol(setcol(t, "pid", [4242] * n), "tid", [4242] * n), "ppid", [1] * n)
    bad = edited(rec["bad"], tmp_path / "one_thread.parquet", one_thread)
    diff_sane(rec, cwd, bad)


def test_a_million_identical_events_finishes(rec, tmp_path, cwd):
    n = 1_000_000
    t = pq.read_table(rec["bad"])
    first = t.slice(0, 1)
    many = pa.concat_tables([first] * 1).take(pa.array([0] * n))
    many = setcol(many, "seq", pa.array(range(n), pa.int64()))
    many = setcol(many, "ts_ns", pa.array(range(10**12, 10**12 + n), pa.int64()))
    many = setcol(many, "probe", ["getpid"] * n)
    many = setcol(many, "errno", pa.nulls(n, pa.string()))
    many = setcol(many, "ret", pa.array([4242] * n, pa.int64()))
    for c in ("path", "path2", "arg", "output"):
        many = setcol(many, c, pa.nulls(n, pa.string()))
    bad = tmp_path / "million.parquet"
    pq.write_table(many.replace_schema_metadata(t.schema.metadata), bad)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1  # a program calling getpid a million times is no c_rehash run


def test_two_thousand_one_event_processes_finish_in_seconds(rec, tmp_path, cwd):
    n = 2000
    t = pq.read_table(rec["bad"])
    many = t.take(pa.array([i % t.num_rows for i in range(n)]))
    many = setcol(setcol(many, "seq", list(range(n))), "ts_ns", list(range(n)))
    many = setcol(setcol(many, "pid", [100000 + i for i in range(n)]), "tid", [100000 + i for i in range(n)])
    many = setcol(many, "ppid", [1] * n)
    bad = tmp_path / "threads2000.parquet"
    pq.write_table(many.replace_schema_metadata(t.schema.metadata), bad)
    before = digest(bad)
    p = run([rec["good0"], rec["good1"], bad, "--json"], cwd=cwd, timeout=15)
    assert_sane(p)
    assert digest(bad) == before


def test_rows_stored_out_of_seq_order_give_the_same_answer(rec, tmp_path, cwd, reference):
    """seq is the order within the trace; the rows' order in the file is not."""
    bad = edited(rec["bad"], tmp_path / "reversed_rows.parquet",
                 lambda t: t.take(pa.array(range(t.num_rows - 1, -1, -1))))
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1 and bif(obj) == bif(reference)


def test_seq_duplicated(rec, tmp_path, cwd):
    """Two different events under one seq (a hand-edited file): an answer or a refusal naming the
    file, never a crash."""
    def dup(t):
        seq = t.column("seq").to_pylist()
        seq[10] = seq[9]
        return setcol(t, "seq", seq)
    bad = edited(rec["bad"], tmp_path / "dupseq.parquet", dup)
    before = digest(bad)
    p = run([rec["good0"], rec["good1"], bad, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, bad, "seq")
    else:
        assert_sane(p)
    assert digest(bad) == before


@pytest.mark.parametrize("role", ["good", "bad"])
def test_negative_seq_is_refused_naming_file_and_column(rec, tmp_path, cwd, role):
    src = rec["good1"] if role == "good" else rec["bad"]
    odd = edited(src, tmp_path / f"neg_{role}.parquet", lambda t: setcol(t, "seq", [s - 5 for s in t["seq"].to_pylist()]))
    args = [rec["good0"], odd, rec["bad"]] if role == "good" else [rec["good0"], rec["good1"], odd]
    diff_refused(cwd, args, [odd, rec["good0"]], odd, "seq")


def test_ts_ns_going_backwards(rec, tmp_path, cwd):
    bad = edited(rec["bad"], tmp_path / "backwards.parquet",
                 lambda t: setcol(t, "ts_ns", [10**15 - i * 1000 for i in range(t.num_rows)]))
    diff_sane(rec, cwd, bad)


def test_pids_at_the_int32_edge_give_the_same_answer(rec, tmp_path, cwd, reference):
    """Pids are masked: the same run under pids near 2^31-1 bifurcates at the same event."""
    top = 2**31 - 1

    def remap(t):
        for c in ("pid", "tid", "ppid"):
            t = setcol(t, c, [None if v is None else top - (v % 100000) for v in t[c].to_pylist()])
        return t
    bad = edited(rec["bad"], tmp_path / "bigpids.parquet", remap)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1 and bif(obj)[:3] == bif(reference)[:3]


def test_pid_and_tid_zero(rec, tmp_path, cwd):
    def zero(t):
        n = t.num_rows
        return setcol(setcol(setcol(t, "pid", [0] * n), "tid", [0] * n), "ppid", [0] * n)
    bad = edited(rec["bad"], tmp_path / "zero.parquet", zero)
    diff_sane(rec, cwd, bad)


def test_a_path_of_100_kb_at_the_bifurcation(rec, tmp_path, cwd, reference):
    long = "/srv/" + "x" * 100_000
    pos = reference["bifurcation"]["position"]

    def longpath(t):
        paths = t["path"].to_pylist()
        paths[row_of_seq(t, pos)] = long
        return setcol(t, "path", paths)
    bad = edited(rec["bad"], tmp_path / "long.parquet", longpath)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1
    text = run([rec["good0"], rec["good1"], bad], cwd=cwd)
    assert_sane(text, json_out=False)


def test_a_path_with_a_newline_is_one_escaped_line_in_text_and_as_is_in_json(rec, tmp_path, cwd, reference):
    pos = reference["bifurcation"]["position"]
    odd = "/tmp/evil\nbifurcation: forged line\x1b[31m"

    def newline(t):
        paths = t["path"].to_pylist()
        paths[row_of_seq(t, pos)] = odd
        return setcol(t, "path", paths)
    bad = edited(rec["bad"], tmp_path / "newline.parquet", newline)
    p, obj = diff_sane(rec, cwd, bad)
    assert [a["path"] for a in obj["anomalies"] if a["position"] == pos] == [odd]  # JSON: as it is
    text = run([rec["good0"], rec["good1"], bad], cwd=cwd)
    assert_sane(text, json_out=False)
    assert "\x1b" not in text.stdout
    lines = text.stdout.splitlines()
    assert any("/tmp/evil\\nbifurcation: forged line\\x1b[31m" in line for line in lines), text.stdout[:2000]
    assert not any(line.startswith("bifurcation: forged") for line in lines)


def test_a_path_with_literal_escape_text(rec, tmp_path, cwd):
    """The text `\\xff` (backslash, x, f, f) in a path, as a recorder escapes odd bytes: valid UTF-8."""
    bad = edited(rec["bad"], tmp_path / "escapes.parquet",
                 lambda t: setcol(t, "path", [None if v is None else v + "\\xff\\x00" for v in t["path"].to_pylist()]))
    diff_sane(rec, cwd, bad)


def test_a_path_holding_bytes_that_are_not_utf8(rec, tmp_path, cwd):
    """A string column with raw bytes that are not UTF-8 (another writer copied a kernel path
    unchecked): refused naming the file (and the column), or read; never a traceback."""
    def raw(t):
        values = [None if v is None else v.encode() + b"\xff\xfe" for v in t["path"].to_pylist()]
        return setcol(t, "path", pa.array(values, pa.binary()).view(pa.string()))
    bad = edited(rec["bad"], tmp_path / "raw.parquet", raw)
    before = digest(bad)
    p = run([rec["good0"], rec["good1"], bad, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, bad)
    else:
        assert_sane(p)
    assert digest(bad) == before


@pytest.mark.parametrize("errno", ["EWHATEVER", "", None])
def test_errno_outside_the_errno_list_where_a_call_failed(rec, tmp_path, cwd, reference, errno):
    pos = reference["bifurcation"]["position"]

    def odd(t):
        values = t["errno"].to_pylist()
        values[row_of_seq(t, pos)] = errno
        return setcol(t, "errno", values)
    bad = edited(rec["bad"], tmp_path / "errno.parquet", odd)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1  # the symlink still failed (ret < 0) where the good runs' succeeded


def test_unknown_probe_names(rec, tmp_path, cwd):
    bad = edited(rec["bad"], tmp_path / "probes.parquet",
                 lambda t: setcol(t, "probe", [f"frobnicate_{i % 7}" if i % 50 == 0 else v
                                               for i, v in enumerate(t["probe"].to_pylist())]))
    p, _ = diff_sane(rec, cwd, bad)
    assert p.returncode == 1


def test_a_command_that_differs_per_row(rec, tmp_path, cwd):
    """One trace whose trace-level `command` differs row by row: an answer, or a refusal naming
    the file and the column."""
    good = edited(rec["good1"], tmp_path / "cmd_good.parquet",
                  lambda t: setcol(t, "command", [f"c_rehash variant {i}" for i in range(t.num_rows)]))
    bad = edited(rec["bad"], tmp_path / "cmd_bad.parquet",
                 lambda t: setcol(t, "command", [f"c_rehash variant {i}" for i in range(t.num_rows)]))
    for args in ([rec["good0"], good, rec["bad"]], [rec["good0"], rec["good1"], bad]):
        odd = good if good in args else bad
        before = digest(odd)
        p = run([*args, "--json"], cwd=cwd)
        if p.returncode == 2:
            assert_refused(p, odd, "command")
        else:
            assert_sane(p)
        assert digest(odd) == before


def test_seq_with_huge_gaps_and_at_the_int64_end(rec, tmp_path, cwd, reference):
    """seq only orders the frames: the same run numbered 0, 2^40, 2*2^40, ... or ending at 2^63-1
    bifurcates at the same call."""
    for name, fn in (("gaps", lambda s, n: [v << 40 for v in s]), ("top", lambda s, n: [2**63 - 1 - (n - 1 - v) for v in s])):
        bad = edited(rec["bad"], tmp_path / f"seq_{name}.parquet",
                     lambda t, fn=fn: setcol(t, "seq", fn(t["seq"].to_pylist(), t.num_rows)))
        p, obj = diff_sane(rec, cwd, bad)
        assert p.returncode == 1 and bif(obj)[:3] == bif(reference)[:3], name


def test_ts_ns_negative_and_at_the_int64_edges(rec, tmp_path, cwd):
    def edges(t):
        n = t.num_rows
        return setcol(t, "ts_ns", [-(2**63) + i if i < n // 2 else 2**63 - 1 - (n - i) for i in range(n)])
    bad = edited(rec["bad"], tmp_path / "ts_edges.parquet", edges)
    diff_sane(rec, cwd, bad)


def test_ret_at_the_int64_edges_and_latency_null(rec, tmp_path, cwd):
    def edges(t):
        n = t.num_rows
        rets = [(-(2**63)) if e is not None else 2**63 - 1 for e in t["errno"].to_pylist()]
        return setcol(setcol(t, "ret", rets), "latency_ns", pa.nulls(n, pa.int64()))
    bad = edited(rec["bad"], tmp_path / "ret_edges.parquet", edges)
    diff_sane(rec, cwd, bad)


def test_trace_level_columns_null(rec, tmp_path, cwd):
    def nulls(t):
        n = t.num_rows
        for c in ("command", "exit_status", "start_time", "end_time", "host", "kernel_release", "lost_events",
                  "job_id", "metadata", "comm", "layer"):
            t = setcol(t, c, pa.nulls(n, t.schema.field(c).type))
        return t
    bad = edited(rec["bad"], tmp_path / "nulls.parquet", nulls)
    diff_sane(rec, cwd, bad)


@pytest.mark.parametrize("value", ["abc -1 1e3", "99999999999999999999999999 16562", "4294967296 18446744073709551616"])
def test_cut_off_tids_hand_edited(rec, tmp_path, cwd, value):
    """Words in cut_off_tids that are not thread ids are ignored (tracer.schema.cut_off_tids: a
    hand-edited file must not stop a diff), numbers beyond any tid included."""
    def meta(t):
        cell = [*[m for m in t["metadata"][0].as_py() if m["key"] != "cut_off_tids"],
                {"key": "cut_off_tids", "value": value}]
        return setcol(t, "metadata", [cell] * t.num_rows)
    bad = edited(rec["bad"], tmp_path / "cut.parquet", meta)
    diff_sane(rec, cwd, bad)


@pytest.mark.parametrize("options", [{"row_group_size": 7}, {"write_statistics": False},
                                     {"compression": "gzip", "use_dictionary": False}, {"compression": "none"}],
                         ids=["row-groups-of-7", "no-statistics", "gzip-plain", "uncompressed"])
def test_another_parquet_layout_gives_the_same_answer(rec, tmp_path, cwd, reference, options):
    t = pq.read_table(rec["bad"])
    bad = tmp_path / "layout.parquet"
    pq.write_table(t, bad, **options)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1 and bif(obj) == bif(reference) and obj["events"] == reference["events"]


def test_empty_trace_id(rec, tmp_path, cwd):
    bad = edited(rec["bad"], tmp_path / "noid.parquet", lambda t: setcol(t, "trace_id", [""] * t.num_rows))
    before = digest(bad)
    p = run([rec["good0"], rec["good1"], bad, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, bad, "trace_id")
    else:
        assert assert_sane(p)["bad_trace"] == ""
    assert digest(bad) == before


def test_bad_given_as_a_directory(rec, cwd, reference):
    d = cwd / "bad-dir"
    d.mkdir()
    shutil.copy(rec["bad"], d / "x.parquet")
    p = run([rec["good0"], rec["good1"], d, "--json"], cwd=cwd)
    assert p.returncode == 1 and bif(assert_sane(p)) == bif(reference)


def test_dash_named_bad_after_double_dash(rec, cwd, reference):
    shutil.copy(rec["bad"], cwd / "-bad.parquet")
    p = run(["--json", rec["good0"], rec["good1"], "--", "-bad.parquet"], cwd=cwd)
    assert p.returncode == 1 and bif(assert_sane(p)) == bif(reference)


def test_dash_named_bad_after_an_option_between_the_positionals(rec, cwd, reference):
    shutil.copy(rec["bad"], cwd / "-bad.parquet")
    p = run([rec["good0"], rec["good1"], "--json", "--", "-bad.parquet"], cwd=cwd)
    assert p.returncode == 1 and bif(assert_sane(p)) == bif(reference)


# ---------------------------------------------------------------------------------------------
# several traces in one file, the same file twice
# ---------------------------------------------------------------------------------------------
@pytest.fixture()
def two_traces(rec, tmp_path) -> Path:
    """good1's trace and the bad trace in one file."""
    g, b = pq.read_table(rec["good1"]), pq.read_table(rec["bad"])
    path = tmp_path / "two.parquet"
    pq.write_table(pa.concat_tables([g, b]).replace_schema_metadata(b.schema.metadata), path)
    return path


def test_bad_file_of_two_traces_with_trace_id_is_the_bad_trace_alone(rec, two_traces, cwd, reference):
    bad_id = reference["bad_trace"]
    p, obj = diff_sane(rec, cwd, two_traces, "--trace-id", bad_id)
    assert p.returncode == 1 and obj["bad_trace"] == bad_id and bif(obj) == bif(reference)


def test_bad_file_of_two_traces_without_trace_id_names_flag(rec, two_traces, cwd):
    diff_refused(cwd, [rec["good0"], two_traces], [two_traces, rec["good0"]], two_traces, "--trace-id")


def test_trace_id_naming_a_good_trace_is_refused(rec, cwd, reference):
    good_id = reference["good_traces"][0]
    diff_refused(cwd, [rec["good0"], rec["good1"], rec["bad"], "--trace-id", good_id],
                 [rec["good0"], rec["good1"], rec["bad"]], rec["bad"], good_id)


def test_good_file_of_two_traces_is_two_good_runs(rec, tmp_path, cwd, reference):
    g0, g1 = pq.read_table(rec["good0"]), pq.read_table(rec["good1"])
    both = tmp_path / "goods.parquet"
    pq.write_table(pa.concat_tables([g0, g1]).replace_schema_metadata(g0.schema.metadata), both)
    p, obj = diff_sane(rec, cwd, rec["bad"], goods=[both])
    assert p.returncode == 1 and bif(obj) == bif(reference)
    assert sorted(obj["good_traces"]) == sorted(reference["good_traces"])


def test_same_file_as_good_and_bad_is_refused_naming_it(rec, cwd):
    """A trace is explained by itself: no anomaly, or (as the tool says) a refusal naming it."""
    diff_refused(cwd, [rec["good0"], rec["good0"], "--json"], [rec["good0"]], rec["good0"], "trace_id")


def test_bad_also_among_the_goods_is_refused_naming_it(rec, cwd):
    diff_refused(cwd, [rec["good0"], rec["good1"], rec["bad"], rec["bad"]], [rec["good0"], rec["good1"], rec["bad"]],
                 rec["bad"], "trace_id")


def test_a_good_file_given_twice_changes_nothing(rec, cwd, reference):
    p = run([rec["good0"], rec["good1"], rec["good1"], rec["bad"], "--json"], cwd=cwd)
    obj = assert_sane(p)
    assert p.returncode == 1 and bif(obj) == bif(reference)


# ---------------------------------------------------------------------------------------------
# GOOD directories
# ---------------------------------------------------------------------------------------------
def test_good_directory_with_a_non_parquet_file_and_an_empty_subdirectory(rec, tmp_path, cwd, reference):
    d = tmp_path / "goods"
    (d / "empty-sub").mkdir(parents=True)
    shutil.copy(rec["good0"], d)
    shutil.copy(rec["good1"], d)
    (d / "NOTES.txt").write_text("recorded on monday\n")
    (d / "good0.parquet.sha256").write_text("deadbeef\n")
    p, obj = diff_sane(rec, cwd, rec["bad"], goods=[d])
    assert p.returncode == 1 and bif(obj) == bif(reference)
    assert sorted(obj["good_traces"]) == sorted(reference["good_traces"])


def test_good_directory_holding_the_bad_file_too_is_refused_naming_it(rec, tmp_path, cwd):
    """`baseline diff runs/ runs/bad.parquet`: the bad trace is among the goods."""
    d = tmp_path / "runs"
    d.mkdir()
    for name in ("good0", "good1", "bad"):
        shutil.copy(rec[name], d)
    diff_refused(cwd, [d, d / "bad.parquet"], [d], "bad.parquet", "trace_id")


def test_good_directory_of_only_a_text_file_and_a_subdirectory_is_refused(rec, tmp_path, cwd):
    d = tmp_path / "goods"
    (d / "sub").mkdir(parents=True)
    (d / "README").write_text("nothing here\n")
    diff_refused(cwd, [d, rec["bad"]], [d, rec["bad"]], d)


def test_good_directory_with_a_junk_parquet_names_that_file(rec, tmp_path, cwd):
    d = tmp_path / "goods"
    d.mkdir()
    shutil.copy(rec["good0"], d)
    junk = d / "zz-junk.parquet"
    junk.write_text("PAR1 not really\n")
    diff_refused(cwd, [d, rec["bad"]], [d, rec["bad"]], junk)


def test_good_directory_with_a_fifo_parquet_does_not_hang(rec, tmp_path, cwd):
    d = tmp_path / "goods"
    d.mkdir()
    shutil.copy(rec["good0"], d)
    fifo = d / "stream.parquet"
    os.mkfifo(fifo)
    diff_refused(cwd, [d, rec["bad"]], [d, rec["bad"]], fifo)


def test_good_directory_with_a_trace_of_no_events_names_that_file(rec, tmp_path, cwd, reference):
    """Left out and said (a directory of part files may hold an empty one; named on its own, an
    empty trace is refused: test_robust_diff's empty-input cases)."""
    d = tmp_path / "goods"
    d.mkdir()
    shutil.copy(rec["good0"], d)
    empty = edited(rec["good1"], d / "empty.parquet", lambda t: t.slice(0, 0))
    p, obj = diff_sane(rec, cwd, rec["bad"], goods=[d])
    assert p.returncode == 1 and bif(obj) == bif(reference)
    assert f"warning: {empty}" in p.stderr and "no events" in p.stderr, p.stderr


def test_two_good_runs_under_one_trace_id_is_refused_naming_both(rec, tmp_path, cwd):
    g0_id = pq.read_table(rec["good0"], columns=["trace_id"])["trace_id"][0].as_py()
    clash = edited(rec["good1"], tmp_path / "g1_sameid.parquet", lambda t: setcol(t, "trace_id", [g0_id] * t.num_rows))
    diff_refused(cwd, [rec["good0"], clash, rec["bad"]], [rec["good0"], clash, rec["bad"]], clash, rec["good0"], g0_id)


def test_a_copy_of_a_good_file_is_one_run_read_twice(rec, tmp_path, cwd, reference):
    copy = tmp_path / "copy.parquet"
    shutil.copy(rec["good1"], copy)
    p, obj = diff_sane(rec, cwd, rec["bad"], goods=[rec["good0"], rec["good1"], copy])
    assert p.returncode == 1 and bif(obj) == bif(reference) and p.stderr == ""


# ---------------------------------------------------------------------------------------------
# files that are not what they claim
# ---------------------------------------------------------------------------------------------
def test_good_directory_holding_a_directory_named_parquet(rec, tmp_path, cwd):
    d = tmp_path / "goods"
    (d / "x.parquet").mkdir(parents=True)
    shutil.copy(rec["good0"], d)
    diff_refused(cwd, [d, rec["bad"]], [d, rec["bad"]], d / "x.parquet")


def test_a_symlink_to_dev_zero_is_refused(rec, tmp_path, cwd):
    z = tmp_path / "zero.parquet"
    z.symlink_to("/dev/zero")
    diff_refused(cwd, [z, rec["bad"]], [rec["bad"]], z)


def test_an_extra_unknown_column_and_a_dictionary_path_column_give_the_same_answer(rec, tmp_path, cwd, reference):
    def odd(t):
        t = t.append_column("vendor_note", pa.array(["x"] * t.num_rows))
        i = t.schema.get_field_index("path")
        return t.set_column(i, "path", t["path"].dictionary_encode())
    bad = edited(rec["bad"], tmp_path / "extra.parquet", odd)
    p, obj = diff_sane(rec, cwd, bad)
    assert p.returncode == 1 and bif(obj) == bif(reference)


@pytest.mark.parametrize(("column", "arrow_type"), [("seq", pa.int32()), ("start_time", pa.timestamp("us", tz="UTC")),
                                                    ("ret", pa.string())])
def test_a_column_of_another_type_names_file_and_column(rec, tmp_path, cwd, column, arrow_type):
    odd = edited(rec["bad"], tmp_path / f"type_{column}.parquet", lambda t: t.set_column(
        t.schema.get_field_index(column), column, t[column].cast(arrow_type)))
    diff_refused(cwd, [rec["good0"], odd], [rec["good0"], odd], odd, column)


def test_a_counters_table_given_as_good_is_refused(rec, tmp_path, cwd):
    from tracer.schema import COUNTERS

    n = 3
    t = pa.table({
        "host": ["h"] * n, "snapshot_time": pa.array([10**18 + i for i in range(n)], pa.timestamp("ns", tz="UTC")),
        "interval_s": [5.0] * n, "kernel_release": ["6.1"] * n, "vendor": [None] * n, "probe_set": ["rdma"] * n,
        "probe": ["ib_create_qp"] * n, "layer": ["core"] * n, "live": [True] * n, "invocations": [3] * n,
        "failures": [1] * n, "errno_counts": [[{"errno": "ENOMEM", "count": 1}]] * n, "lost_records": [0] * n,
    }, schema=COUNTERS)
    counters = tmp_path / "counters.parquet"
    pq.write_table(t.replace_schema_metadata({b"tracebase.table": b"counters", b"tracebase.schema_version": b"2"}),
                   counters)
    diff_refused(cwd, [counters, rec["bad"]], [counters, rec["bad"]], counters, "events", "counters")


def test_a_future_schema_version_is_refused(rec, tmp_path, cwd):
    t = pq.read_table(rec["good0"])
    future = tmp_path / "future.parquet"
    pq.write_table(t.replace_schema_metadata({**t.schema.metadata, b"tracebase.schema_version": b"3"}), future)
    diff_refused(cwd, [future, rec["bad"]], [future, rec["bad"]], future, "schema version 3")


@pytest.mark.parametrize("cut", [1, 9, 4096])
def test_a_truncated_bad_file_is_refused(rec, tmp_path, cwd, cut):
    data = rec["bad"].read_bytes()
    short = tmp_path / "short.parquet"
    short.write_bytes(data[: len(data) - cut])
    diff_refused(cwd, [rec["good0"], short], [rec["good0"], short], short)


def test_a_fifo_as_bad_does_not_hang(rec, tmp_path, cwd):
    fifo = tmp_path / "bad.parquet"
    os.mkfifo(fifo)
    diff_refused(cwd, [rec["good0"], fifo], [rec["good0"]], fifo)


def test_a_negative_depth_is_refused_naming_column(rec, tmp_path, cwd):
    odd = edited(rec["bad"], tmp_path / "depth.parquet", lambda t: setcol(t, "depth", [-1] * t.num_rows))
    diff_refused(cwd, [rec["good0"], odd], [rec["good0"], odd], odd, "depth")


@pytest.mark.parametrize(("column", "value"), [("kind", "weird"), ("lost_events", -3), ("repeat_count", 0)])
def test_values_no_writer_makes_in_columns_the_diff_may_not_read(rec, tmp_path, cwd, column, value):
    """EVENT_VALUE_RULES are checked per column `baseline diff` reads: refused naming the column,
    or (a column it does not read) a sane answer."""
    odd = edited(rec["bad"], tmp_path / f"{column}.parquet", lambda t: setcol(t, column, [value] * t.num_rows))
    before = digest(odd)
    p = run([rec["good0"], rec["good1"], odd, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, odd, column)
    else:
        assert_sane(p)
    assert digest(odd) == before


def test_a_start_time_past_2262_is_refused(rec, tmp_path, cwd):
    far = 2**63 - 10
    odd = edited(rec["bad"], tmp_path / "far.parquet",
                 lambda t: setcol(t, "start_time", pa.array([far] * t.num_rows, pa.timestamp("ns", tz="UTC"))))
    diff_refused(cwd, [rec["good0"], odd], [rec["good0"], odd], odd, "start_time")


# ---------------------------------------------------------------------------------------------
# allowlists and learned lists
# ---------------------------------------------------------------------------------------------
def entry(**kw) -> str:
    base = {"id": "x", "source": "curated", "reason": "r", "probe": "read", "errno": "EAGAIN"}
    base.update(kw)
    return "  - " + "\n    ".join(f"{k}: {json.dumps(v)}" for k, v in base.items()) + "\n"


def test_allowlist_entry_of_an_unknown_probe(rec, tmp_path, cwd):
    allow = tmp_path / "allow.yaml"
    allow.write_text("version: 1\nentries:\n" + entry(id="unknown-probe", probe="no_such_syscall_xyz", errno="EROFS"))
    before = digest(allow)
    p = run([rec["good0"], rec["good1"], rec["bad"], "--allowlist", allow, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, allow)
    else:
        assert p.returncode == 1 and assert_sane(p)
    assert digest(allow) == before


def test_allowlist_glob_matching_everything(rec, tmp_path, cwd, reference):
    allow = tmp_path / "allow.yaml"
    allow.write_text("version: 1\nentries:\n" + entry(id="everything", probe="*", errno="*", path="**"))
    p, obj = diff_sane(rec, cwd, rec["bad"], "--allowlist", allow)
    assert obj["expected_ignored"]["total"] >= reference["expected_ignored"]["total"]
    # (no entry covers an error where the good runs succeeded: the EROFS links stay named)
    assert p.returncode == 1 and bif(obj) == bif(reference)


def test_allowlist_that_is_an_empty_file(rec, tmp_path, cwd):
    allow = tmp_path / "empty.yaml"
    allow.write_text("")
    p = run([rec["good0"], rec["good1"], rec["bad"], "--allowlist", allow, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, allow)
    else:
        assert_sane(p)
    assert allow.read_text() == ""


def test_allowlist_that_is_a_yaml_list_is_refused(rec, tmp_path, cwd):
    allow = tmp_path / "list.yaml"
    allow.write_text(entry(id="a-list"))
    diff_refused(cwd, [rec["good0"], rec["bad"], "--allowlist", allow], [allow, rec["bad"]], allow)


@pytest.mark.parametrize("flag", ["--allowlist", "--learned"])
def test_allowlist_or_learned_that_is_a_fifo_does_not_hang(rec, tmp_path, cwd, flag):
    fifo = tmp_path / "list.yaml"
    os.mkfifo(fifo)
    diff_refused(cwd, [rec["good0"], rec["bad"], flag, fifo], [rec["good0"], rec["bad"]], fifo)


@pytest.mark.parametrize(("text", "words"), [
    (b"version: 2\nentries: []\n", ["version"]),
    (b"version: 1\nentries:\n  - id: \xff\xfe\n    source: curated\n    reason: r\n    probe: read\n    errno: EAGAIN\n",
     []),
], ids=["future-version", "not-utf8"])
def test_allowlist_future_version_or_not_utf8_is_refused(rec, tmp_path, cwd, text, words):
    allow = tmp_path / "allow.yaml"
    allow.write_bytes(text)
    diff_refused(cwd, [rec["good0"], rec["bad"], "--allowlist", allow], [allow, rec["bad"]], allow, *words)


def test_allowlist_that_is_a_parquet_file_is_refused(rec, cwd):
    diff_refused(cwd, [rec["good0"], rec["bad"], "--allowlist", rec["good1"]], [rec["good1"], rec["bad"]], rec["good1"])


@pytest.mark.parametrize("flag", ["--learned", "--allowlist"])
def test_a_list_flag_given_twice_loads_both_or_is_refused(rec, tmp_path, cwd, flag):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("version: 1\nentries:\n" + entry(id="a-lseek", probe="lseek", errno="ESPIPE"))
    b.write_text("version: 1\nentries:\n" + entry(id="b-newfstatat", probe="newfstatat", errno="ENOENT"))
    before = digest(a, b)
    p = run([rec["good0"], rec["good1"], rec["bad"], "--no-learn", "--json", flag, a, flag, b], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, flag)
    else:
        used = assert_sane(p)["expected_ignored"]["by_entry"]
        assert {"a-lseek", "b-newfstatat"} <= set(used), used
    assert digest(a, b) == before


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_learned_that_is_missing_or_a_directory(rec, tmp_path, cwd, what):
    learned = tmp_path / "team.learned.yaml"
    if what == "directory":
        learned.mkdir()
    diff_refused(cwd, [rec["good0"], rec["bad"], "--learned", learned], [rec["good0"], rec["bad"]], learned)


# ---------------------------------------------------------------------------------------------
# options and outputs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "flag"), [(["-k", "1001"], "--window"), (["--max-anomalies", "-1"], "--max-anomalies"),
                                            (["--context", "1e3"], "--context"), (["--trace-id", ""], "--trace-id"),
                                            (["--max-anomalies", "nan"], "--max-anomalies")])
def test_bad_option_values_name_the_flag(rec, cwd, args, flag):
    diff_refused(cwd, [rec["good0"], rec["bad"], *args], [rec["good0"], rec["bad"]], flag)


def test_a_context_of_thirty_digits(rec, cwd, reference):
    p = run([rec["good0"], rec["good1"], rec["bad"], "--context", "9" * 30, "--json"], cwd=cwd)
    if p.returncode == 2:
        assert_refused(p, "--context")
    else:
        assert bif(assert_sane(p)) == bif(reference)


def test_largest_window_and_no_context(rec, cwd):
    p = run([rec["good0"], rec["good1"], rec["bad"], "-k", "1000", "--context", "0", "--max-anomalies", "1", "--json"],
            cwd=cwd)
    assert_sane(p)


def test_json_into_a_reader_that_stops_after_one_byte(rec, cwd):
    """`baseline diff ... --json | head -c1`: the diff's own status, nothing on stderr. The output
    is made large (--context 1000) so the reader really goes away mid-write."""
    proc = subprocess.Popen([BASELINE, "diff", rec["good0"], rec["good1"], rec["bad"], "--json", "--context", "1000"],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    reader.start()
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()
    rc = proc.wait(timeout=60)
    reader.join()
    assert b"Traceback" not in err[0], err[0][-500:]
    assert rc == 1 and err[0] == b"", (rc, err[0][-500:])


def test_json_onto_dev_full(rec, cwd):
    with open("/dev/full", "w") as full:
        p = run([rec["good0"], rec["good1"], rec["bad"], "--json", "--context", "1000"], cwd=cwd, stdout=full)
    assert_refused(p, "<stdout>", "No space left on device")


def test_closed_stdout_keeps_the_status(rec, cwd):
    script = f'"{BASELINE}" diff "{rec["good0"]}" "{rec["good1"]}" "{rec["bad"]}" --json >&-'
    p = subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert "Traceback" not in p.stderr and p.returncode == 1 and p.stderr == "", (p.returncode, p.stderr[-500:])
