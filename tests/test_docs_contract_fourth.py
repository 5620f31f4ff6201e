"""Fourth docs-versus-behaviour battery: docs/diff-json.md field by field, and the sections of
docs/architecture.md "Compiling the BPF C at start", "The recorder's kernel side", "The fleet
tracer's kernel side", "The data model" and "Where things live".

Written blind: the oracle is the documentation (docs/*.md, README.md, the --help texts),
tracer/schema.py, bpf/*.c (which the docs describe) and what `strace -f` shows the recorded
programs doing; never the Python code under baseline/ or tracer/. The three earlier contract
modules (test_docs_contract.py, _second.py, _third.py) check the presence and types of the
`--json` keys, key order, the exit statuses, the exit-status-only anomaly, the footer keys and
columns of dataset files, and the names the docs cite; this module checks what the fields
*mean* against real recordings (`tracer record` of sh, cat, ls, mv, id and python3 doing
known things), real Parquet files, the real CLIs and the real BPF C. Each test quotes the
sentence it checks. A promise the tool breaks stays as a strict xfail naming what was found (the four this module found
-- version 1 files with a rename, a timed-out wait's next_event, the fleet tracer's reserved
records, rules/__init__.py -- are fixed, in the tool or the doc).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tracer import schema

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
PYTHON3 = "/usr/bin/python3"  # the system interpreter, not a pyenv shim (a bash script)
ARCH = ROOT / "docs" / "architecture.md"
DIFF_DOC = ROOT / "docs" / "diff-json.md"


def run(*args, cwd=None, env=None, timeout=120, check_rc=None, preexec_fn=None):
    cp = subprocess.run([a if isinstance(a, bytes) else str(a) for a in args], cwd=cwd, env=env, capture_output=True, timeout=timeout,
                        preexec_fn=preexec_fn)
    cp.stdout = cp.stdout.decode("utf-8", "surrogateescape")
    cp.stderr = cp.stderr.decode("utf-8", "surrogateescape")
    if check_rc is not None:
        assert cp.returncode == check_rc, (args, cp.returncode, cp.stdout[-2000:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr, cp.stderr[-3000:]
    return cp


def one_line(cp) -> str:
    lines = [ln for ln in cp.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, cp.stderr
    return lines[0]


def letters_dir(prefix: str) -> Path:
    """A fresh directory under /tmp whose name is lowercase letters only: nothing in it is a
    number or a random-looking token, so its masked form is itself (docs/diff-json.md,
    "What counts as the same event")."""
    while True:
        d = Path("/tmp") / (prefix + "".join(random.choice(string.ascii_lowercase) for _ in range(12)))
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue


def record(out, *cmd, cwd=None, extra=(), env=None):
    return run(TRACER, "record", "-q", "-o", out, *extra, "--", *cmd, cwd=cwd, env=env, timeout=180)


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def meta_of(path) -> dict:
    r = rows(path)[0]
    return {kv["key"]: kv["value"] for kv in (r["metadata"] or [])}


# --------------------------------------------------------------------------- recordings

# The main job: a soft error (ls of a missing path), a hard error (cat of a symlink loop), a
# 1000-byte write to stdout (a pipe), a rename (two paths), an identity query, a 3,990-byte path.
MAIN_JOB = r"""
ls "$1/present" >/dev/null
id -u >/dev/null
cat "$1/$3" >/dev/null
cat "$1/manifest"
touch "$1/a"; mv "$1/a" "$1/b"; rm "$1/b"
cat "$2" >/dev/null
"""
SHARD = "shard42" + "x" * 200 + ".dat"  # long: cat's message about it is over 256 characters
MANIFEST = "".join(string.ascii_letters[i % 52] for i in range(1000))

WAITER = r"""
import os, select, subprocess, sys
open("/proc/self/comm", "w").write("tbwaiter")
subprocess.run(["true"])
r, w = os.pipe()
if os.environ["TB_MODE"] == "ready":
    os.write(w, b"x")
p = select.poll()
p.register(r, select.POLLIN)
if p.poll(300):
    os.read(r, 1)
    sys.stdout.write("answer\n")
else:
    sys.stderr.write("no answer\n")
    sys.exit(1)
"""


def _needs_recorder():
    if os.geteuid() != 0:
        pytest.skip("tracer record needs root")


@pytest.fixture(scope="module")
def recs():
    """All recordings of the module, made at once (3 at a time)."""
    _needs_recorder()
    main = letters_dir("tbdocfourmain")
    empty = letters_dir("tbdocfourempty")
    misc = letters_dir("tbdocfourmisc")
    out = letters_dir("tbdocfourrecs")
    try:
        (main / "present").write_text("here\n")
        (main / SHARD).write_text("shard\n")
        (main / "manifest").write_text(MANIFEST)
        long_dir = main
        for _i in range(19):
            long_dir = long_dir / ("d" * 200)
        long_dir.mkdir(parents=True)
        long_file = long_dir / ("f" * (3990 - len(str(long_dir)) - 1))
        long_file.write_text("long\n")
        assert len(str(long_file)) == 3990
        (empty / "list").write_text("hello\n")
        (misc / "w.py").write_text(WAITER)
        bad_name = os.fsencode(str(misc)) + b"/caf\xe9"

        probe = record(out / "g1.parquet", "sh", "-c", MAIN_JOB, "sh", main, long_file, SHARD)
        if probe.returncode == 2:
            pytest.skip(f"tracer record cannot record here: {probe.stderr.strip()}")
        assert probe.returncode == 0, probe.stderr
        first = [
            ("g2", ("sh", "-c", MAIN_JOB, "sh", main, long_file, SHARD), {}),
            ("e1", ("sh", "-c", 'cat "$1"', "sh", empty / "list"), {}),
            ("e2", ("sh", "-c", 'cat "$1"', "sh", empty / "list"), {}),
            ("t1", (PYTHON3, misc / "w.py"), {"env": dict(os.environ, TB_MODE="ready")}),
            ("t2", (PYTHON3, misc / "w.py"), {"env": dict(os.environ, TB_MODE="ready")}),
            ("tb", (PYTHON3, misc / "w.py"), {"env": dict(os.environ, TB_MODE="late")}),
            ("cut", ("sh", "-c", 'cat "$1" 2>/dev/null; sleep 30 >/dev/null 2>&1 & echo $!', "sh", bad_name),
             {"extra": ("--linger", "0")}),
            ("printf", ("printf", "abc"), {"extra": ("--json",)}),
        ]
        with ThreadPoolExecutor(max_workers=3) as pool:
            futs = {n: pool.submit(record, out / f"{n}.parquet", *c, cwd=misc, **kw) for n, c, kw in first}
            res = {n: f.result() for n, f in futs.items()}
        for n in ("g2", "e1", "e2", "t1", "t2", "cut", "printf"):
            assert res[n].returncode == 0, (n, res[n].stderr)
        assert res["tb"].returncode == 1, res["tb"].stderr
        sleeper = int(res["cut"].stdout.split()[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, signal.SIGKILL)
        # the failing runs
        (main / "present").unlink()
        (main / SHARD).unlink()
        (main / SHARD).symlink_to(SHARD)  # a link to itself: ELOOP
        (empty / "list").write_text("")
        with ThreadPoolExecutor(max_workers=2) as pool:
            fb = pool.submit(record, out / "bad.parquet", "sh", "-c", MAIN_JOB, "sh", main, long_file, SHARD)
            fe = pool.submit(record, out / "eb.parquet", "sh", "-c", 'cat "$1"', "sh", empty / "list")
            bad, eb = fb.result(), fe.result()
        assert bad.returncode == 0, bad.stderr  # the last command (cat of the long path) succeeds
        assert eb.returncode == 0, eb.stderr
        # what cat itself says about the loop (real behaviour, outside the tracer)
        cat_msg = subprocess.run(["cat", str(main / SHARD)], capture_output=True).stderr.decode()
        assert "Too many levels of symbolic links" in cat_msg
        yield {
            "dir": out, "main": main, "empty": empty, "misc": misc, "long": long_file, "cat_msg": cat_msg,
            "bad_name": bad_name, "sleeper": sleeper, "printf": res["printf"], **{
                n: out / f"{n}.parquet" for n in ("g1", "g2", "bad", "e1", "e2", "eb", "t1", "t2", "tb", "cut")},
        }
    finally:
        for d in (main, empty, misc, out):
            shutil.rmtree(d, ignore_errors=True)


def diff_json(*files, extra=(), rc=1, env=None):
    cp = run(BASELINE, "diff", *files, "--json", *extra, env=env, check_rc=rc)
    return json.loads(cp.stdout)


@pytest.fixture(scope="module")
def main_diff(recs):
    return diff_json(recs["g1"], recs["g2"], recs["bad"])


@pytest.fixture(scope="module")
def empty_diff(recs):
    return diff_json(recs["e1"], recs["e2"], recs["eb"])


@pytest.fixture(scope="module")
def wait_diff(recs):
    return diff_json(recs["t1"], recs["t2"], recs["tb"])


def _anomaly(d, probe, errno):
    found = [a for a in d["anomalies"] if a["probe"] == probe and a["errno"] == errno]
    assert found, [(a["probe"], a["errno"], a["path"]) for a in d["anomalies"]]
    return found[0]


def _row(path, seq):
    t = pq.read_table(path)
    hit = [r for r in t.to_pylist() if r["seq"] == seq]
    assert len(hit) == 1, (path, seq)
    return hit[0]


# =========================================================================== docs/diff-json.md


def test_bifurcation_is_the_top_ranked_hard_error(recs, main_diff):
    """diff-json.md: `bifurcation` is "the top-ranked anomaly (= `anomalies[0]`)"; ranking rule 2:
    "an unexpected hard error (EACCES, EROFS, ENOSPC, EMFILE, ELOOP, EIO, ...) outranks an
    unexpected soft error (ENOENT, ...)"; `kind` `error` is "an unexpected error"; `path` is "as
    recorded". BAD: ls of a missing path (ENOENT), later cat of a symlink loop (ELOOP), both at
    call sites where the good runs succeeded (strace: statx ENOENT, openat ELOOP)."""
    b = main_diff["bifurcation"]
    assert (b["kind"], b["probe"], b["errno"]) == ("error", "openat", "ELOOP"), b
    assert b["path"] == str(recs["main"] / SHARD)
    assert b["rank"] == 1 and main_diff["anomalies"][0] == b
    soft = [a for a in main_diff["anomalies"] if a["errno"] == "ENOENT" and a["path"] == str(recs["main"] / "present")]
    assert soft and soft[0]["rank"] > 1 and soft[0]["kind"] == "error"
    assert [a["rank"] for a in main_diff["anomalies"]] == list(range(1, len(main_diff["anomalies"]) + 1))
    assert [a["score"] for a in main_diff["anomalies"]] == sorted((a["score"] for a in main_diff["anomalies"]),
                                                                 reverse=True)


@pytest.mark.parametrize(("errno", "severity"), [("ELOOP", 4.0), ("ENOENT", 2.0)])
def test_score_is_severity_plus_outcome_change_plus_never_rejoined(main_diff, errno, severity):
    """diff-json.md `score`: "severity (4 hard error, 2 soft error, ...) + 3.5 for an outcome change
    at a call site the good runs share + 1.5 when the thread never re-joins known-good
    behaviour"; `recovered`: "the thread re-joined known-good behaviour after the region". Both
    errors are outcome changes: the same call on the same path succeeded in every good run."""
    a = _anomaly(main_diff, "openat" if errno == "ELOOP" else a_probe(main_diff, errno), errno)
    assert isinstance(a["recovered"], bool)
    assert a["score"] == pytest.approx(severity + 3.5 + (0 if a["recovered"] else 1.5)), a


def a_probe(d, errno):
    return next(a["probe"] for a in d["anomalies"] if a["errno"] == errno)


def test_first_unexplained_is_the_chronologically_first(main_diff):
    """diff-json.md `first_unexplained`: "`seq` of the chronologically first anomalous event in
    BAD" -- here the ls ENOENT, which comes before the bifurcation (cat's ELOOP) but ranks
    below it."""
    b = main_diff["bifurcation"]
    soft = _anomaly(main_diff, a_probe(main_diff, "ENOENT"), "ENOENT")
    assert soft["position"] < b["position"]
    assert main_diff["first_unexplained"] == min(a["position"] for a in main_diff["anomalies"] if a["position"] >= 0)
    assert main_diff["first_unexplained"] == soft["position"]


def test_position_and_process_name_the_bad_event(recs, main_diff):
    """diff-json.md: `position` "`seq` of the named event in BAD"; `process` "`pid`, `tid`, `comm`
    of BAD's thread and its `role` (fork-tree path of exec'd names, ..., `#i` sibling rank)"."""
    for a in main_diff["anomalies"]:
        r = _row(recs["bad"], a["position"])
        assert (r["probe"], r["errno"], r["path"]) == (a["probe"], a["errno"], a["path"]), (a, r)
        p = a["process"]
        assert (p["pid"], p["tid"], p["comm"]) == (r["pid"], r["tid"], r["comm"])
    b = main_diff["bifurcation"]
    assert b["process"]["comm"] == "cat"
    assert re.fullmatch(r"sh/cat#\d+", b["process"]["role"]), b["process"]["role"]
    assert re.fullmatch(r"sh/ls#\d+", _anomaly(main_diff, a_probe(main_diff, "ENOENT"), "ENOENT")["process"]["role"])


def test_npath_masks_random_looking_tokens(recs, main_diff):
    """diff-json.md: `path` / `npath` "path as recorded / after noise masking"; "mkstemp/mktemp-
    style random tokens become `<rand>` (6+ characters of `[A-Za-z0-9_]` mixing two character
    classes under /tmp ...)". The directory is lowercase letters only (one class: kept), the
    file `shard42xxx...dat` mixes letters and digits under /tmp (masked)."""
    b = main_diff["bifurcation"]
    assert b["path"] == str(recs["main"] / SHARD)
    assert b["npath"] == str(recs["main"] / "<rand>.dat"), b["npath"]
    soft = _anomaly(main_diff, a_probe(main_diff, "ENOENT"), "ENOENT")
    assert soft["npath"] == soft["path"] == str(recs["main"] / "present")
    assert b["path2"] is None  # "the call's other path (two-path calls)": openat has one


def test_then_wrote_is_the_first_256_characters_of_the_message(recs, main_diff):
    """diff-json.md `then_wrote`: "the first 256 characters BAD wrote to stdout/stderr/ttys/pipes
    from this event on (events column `output`): this process's writes". cat's message (the
    same cat run outside the tracer prints it) is longer than 256 characters."""
    msg = recs["cat_msg"]
    assert len(msg) > 256
    assert main_diff["bifurcation"]["then_wrote"] == msg[:256]


def test_next_event_null_when_the_event_says_something(main_diff):
    """diff-json.md `next_event`: "when the named event says nothing by itself (no path, no
    errno, no output ...), the next event of the thread that does" -- an error at a path says
    something: null. `timed_out_ms` "else null"; `empty_answer` false for an error."""
    for a in main_diff["anomalies"]:
        if a["errno"] or a["path"]:
            assert a["next_event"] is None, a
        assert a["timed_out_ms"] is None
    assert main_diff["bifurcation"]["empty_answer"] is False


def test_last_common_events_are_bad_events_just_before(recs, main_diff):
    """diff-json.md `last_common`: "up to `--context` BAD events just before the region, all
    explained by the good runs"; EVENT: `seq`, `probe`, `errno`, `path`, `path2`, `pid`, `tid`,
    `comm`, `trace_id`, `output`. Each must be the BAD row of that seq, before the region."""
    bad_id = main_diff["bad_trace"]
    for a in main_diff["anomalies"]:
        lc = a["last_common"]
        assert 0 < len(lc) <= 3
        seqs = [e["seq"] for e in lc]
        assert seqs == sorted(seqs) and seqs[-1] < a["position"]
        for e in lc:
            assert e["trace_id"] == bad_id
            r = _row(recs["bad"], e["seq"])
            for k in ("probe", "errno", "path", "path2", "pid", "tid", "comm", "output"):
                assert e[k] == r[k], (k, e, r)


def test_good_instead_is_what_a_good_run_did_there(recs, main_diff):
    """diff-json.md `good_instead`: "up to `--context` events a good run did at that point (from
    `trace_id`)". For cat's ELOOP the good runs opened the same file successfully; every event
    is the row of that seq in the named good trace."""
    ids = {rows(recs[n])[0]["trace_id"]: recs[n] for n in ("g1", "g2")}
    assert set(main_diff["good_traces"]) == set(ids)
    b = main_diff["bifurcation"]
    gi = b["good_instead"]
    assert 0 < len(gi) <= 3
    assert any(e["probe"] == "openat" and e["path"] == b["path"] and e["errno"] is None for e in gi), gi
    for e in gi:
        r = _row(ids[e["trace_id"]], e["seq"])
        for k in ("probe", "errno", "path", "path2", "pid", "tid", "comm", "output"):
            assert e[k] == r[k], (k, e, r)


def test_unexplained_events_is_a_positive_count(main_diff):
    """diff-json.md `unexplained_events`: "size of the divergence region" -- at least the named
    event."""
    for a in main_diff["anomalies"]:
        assert isinstance(a["unexplained_events"], int) and a["unexplained_events"] >= 1


def test_settings_allowlist_names_the_curated_list(main_diff, recs, tmp_path):
    """diff-json.md `settings`: "`allowlist` (files used: the curated list, `+` the learned file
    when loaded), `learned_entries` (errors learned from GOOD in this run), `elapsed_s`"."""
    s = main_diff["settings"]
    assert "+" not in s["allowlist"] and Path(s["allowlist"]).name == "expected_errors.yaml"
    assert Path(s["allowlist"]).is_file()
    assert isinstance(s["elapsed_s"], float | int) and s["elapsed_s"] >= 0
    mine = tmp_path / "mine.yaml"
    mine.write_text("version: 1\nentries: []\n")
    d = diff_json(recs["g1"], recs["g2"], recs["bad"], extra=("--allowlist", mine, "--no-learn"))
    assert Path(d["settings"]["allowlist"].split("+")[0].strip()) == mine
    assert d["settings"]["learned_entries"] == 0 and d["settings"]["learn"] is False


def test_expected_ignored_total_and_sources(main_diff):
    """diff-json.md `expected_ignored`: "errors in BAD set aside as expected: `total`, and
    `by_entry` keyed by allowlist entry id with `count`, `source` (`curated` or `learned`)":
    a curated entry's id is one of the shipped list's."""
    import yaml
    curated = {e["id"] for e in yaml.safe_load((ROOT / "expected_errors.yaml").read_text())["entries"]}
    e = main_diff["expected_ignored"]
    for k, v in e["by_entry"].items():
        assert v["count"] >= 1
        if v["source"] == "curated":
            assert k in curated, k


def test_empty_answer(recs, empty_diff):
    """diff-json.md `empty_answer`: "the named event is a thread's first read of a file ... that
    came back empty -- read returned 0 -- where the good runs' first call there had content";
    "`errno` null". BAD's cat read its (now empty) input: strace shows read(3, "", ...) = 0.
    `then_wrote` "null when nothing was written"."""
    b = empty_diff["bifurcation"]
    assert b is not None and empty_diff["anomaly"] is True
    assert (b["probe"], b["errno"], b["empty_answer"]) == ("read", None, True), b
    assert b["path"] == str(recs["empty"] / "list")
    assert b["kind"] == "divergence"
    assert b["then_wrote"] is None


def test_timed_out_wait(recs, wait_diff):
    """diff-json.md `timed_out_ms`: "when the named event is a wait for a descriptor that timed out
    (poll/select/epoll_wait returned 0 after blocking ...): how long it waited, in
    milliseconds"; ranking rule: "the named event is the wait, `errno` null". BAD's python
    polls 300 ms on a pipe nobody writes (strace: poll(..., 300) = 0 (Timeout)), then prints
    "no answer"; the good runs' poll found data."""
    b = wait_diff["bifurcation"]
    assert (b["probe"], b["errno"]) == ("poll", None), b
    assert isinstance(b["timed_out_ms"], float) and 250 <= b["timed_out_ms"] <= 5000, b["timed_out_ms"]
    assert b["then_wrote"] == "no answer\n"
    assert b["empty_answer"] is False
    # score: 1 (error-free divergence) + 1.5 when the thread never re-joins
    assert b["score"] == pytest.approx(1.0 + (0 if b["recovered"] else 1.5))


def test_next_event_of_a_wait_that_says_nothing(recs, wait_diff):
    """diff-json.md `next_event`: "when the named event says nothing by itself (no path, no errno,
    no output ...), the next event of the thread that does (typically the error message written
    to stderr)". A poll on a pipe carries no errno and no output; if it carries no path either,
    next_event must be the thread's write of "no answer"."""
    b = wait_diff["bifurcation"]
    r = _row(recs["tb"], b["position"])
    assert r["output"] is None and b["errno"] is None
    if b["path"] is None:
        ne = b["next_event"]
        assert ne is not None and ne["tid"] == b["process"]["tid"] and ne["trace_id"] == wait_diff["bad_trace"]
        assert ne["output"] == "no answer\n" and ne["seq"] > b["position"]
    else:
        assert b["next_event"] is None


def test_warnings_of_another_command_text_and_json(recs):
    """diff-json.md `warnings`: "what the text report writes to stderr as `baseline diff:
    warning: ...` (a BAD trace of another command, ...)": the python waiter against cat's runs."""
    goods = (recs["e1"], recs["e2"])
    d = diff_json(*goods, recs["tb"])
    assert d["warnings"] and any("command" in w for w in d["warnings"]), d["warnings"]
    cp = run(BASELINE, "diff", *goods, recs["tb"], check_rc=1)
    text = [ln.removeprefix("baseline diff: warning: ") for ln in cp.stderr.splitlines()
            if ln.startswith("baseline diff: warning: ")]
    assert text == d["warnings"]


def test_same_answer_without_the_compiled_loops(recs, main_diff):
    """architecture.md (Where things live): "`TRACEBASE_NATIVE=0` forces the numpy versions" --
    "the same numbers": the report is the same but for the elapsed time."""
    d = diff_json(recs["g1"], recs["g2"], recs["bad"], env=dict(os.environ, TRACEBASE_NATIVE="0"))
    for x in (d, main_diff):
        x["settings"].pop("elapsed_s")
    assert d == main_diff


# =========================================================================== the data model


def test_recording_footer_table_and_version(recs):
    """architecture.md, The data model: "Every Parquet file carries `tracebase.table` and
    `tracebase.schema_version` in its footer" (schema version 2) -- a `tracer record` file too."""
    kv = {k.decode(): v.decode() for k, v in pq.read_metadata(recs["g1"]).metadata.items()}
    assert kv["tracebase.table"] == "events" and kv["tracebase.schema_version"] == str(schema.SCHEMA_VERSION) == "2"


def test_recording_column_types_and_required_columns(recs):
    """tracer/schema.py EVENTS: each column's type; trace_id, seq, ts_ns, probe, depth, ret and
    kind are not nullable; architecture.md: "other integer widths, timestamps in another unit
    ... are refused", so the recorder must write these exact types."""
    t = pq.read_table(recs["g1"])
    for f in schema.EVENTS:
        got = t.schema.field(f.name).type
        if pa.types.is_dictionary(got):
            got = got.value_type
        assert got == f.type, (f.name, got, f.type)
        if not f.nullable:
            assert t.column(f.name).null_count == 0, f.name


def test_recording_is_one_trace_with_seq_counting_up(recs):
    """architecture.md: "A syscall recording is one trace"; per trace columns "repeated on each
    row"; an events file's `seq` "counts up row by row" (schema.py: "order within the trace,
    from 0"); syscalls are top-level calls (depth 0, layer `syscall`)."""
    t = pq.read_table(recs["g1"])
    assert t.column("seq").to_pylist() == list(range(t.num_rows))
    for c in ("trace_id", "kind", "command", "exit_status", "start_time", "end_time", "host",
              "kernel_release", "lost_events", "job_id"):
        assert len(set(t.column(c).to_pylist())) == 1, c
    assert set(t.column("depth").to_pylist()) == {0}
    assert set(t.column("layer").to_pylist()) == {"syscall"}
    r = t.slice(0, 1).to_pylist()[0]
    assert r["kind"] == "full"  # --help: "default kind=full"
    assert r["exit_status"] == 0 and r["kernel_release"] == os.uname().release
    assert r["start_time"] <= r["end_time"] and str(r["start_time"].tzinfo) == "UTC"


def test_errno_symbolic_and_null_on_success(recs):
    """architecture.md: "`errno` (symbolic)"; schema.py: "symbolic ("EACCES"), null when the call
    succeeded" (a getsockopt SO_ERROR aside); exit/exit_group are emitted at entry (no ret)."""
    for r in rows(recs["bad"]):
        if r["errno"] is not None:
            assert re.fullmatch(r"E[A-Z0-9]+", r["errno"]), r
            assert r["ret"] < 0 or (r["ret"] == 0 and r["arg"] == "SO_ERROR"), r
        elif r["probe"] not in ("exit", "exit_group"):
            assert r["ret"] >= 0 or r["probe"] in ("rt_sigreturn",), r
    assert any(r["errno"] == "ELOOP" for r in rows(recs["bad"]))


def test_latency_measured_by_the_recorder(recs):
    """architecture.md: `latency_ns` "(null when not measured: fleet trees outside capture
    windows ...)"; the recorder stamps every entry (`bpf_ktime_get_ns`) and reads the exit."""
    for r in rows(recs["g1"]):
        if r["probe"] not in ("exit", "exit_group"):
            assert r["latency_ns"] is not None and r["latency_ns"] >= 0, r


def test_path_recorded_whole_up_to_path_max(recs):
    """architecture.md: "`path, arg, path2` (whole, up to PATH_MAX, 4096 bytes with its NUL:
    `tracer record` reads them so since round thirty-three, when a 3,990-byte path was cut to
    its first 511 bytes ...)". cat opens a 3,990-byte path."""
    long = str(recs["long"])
    hits = [r for r in rows(recs["g1"]) if r["probe"] in ("openat", "open") and r["path"] and r["path"].startswith(
        str(recs["main"]) + "/ddd")]
    assert hits, "no open of the long path"
    assert any(r["path"] == long for r in hits), [len(r["path"]) for r in hits]


def test_two_path_call_second_path_in_path2(recs):
    """architecture.md: `path2` the "second path of two-path syscalls"; schema.py "(rename/link
    target, ...)". mv: strace shows renameat2(AT_FDCWD, ".../a", AT_FDCWD, ".../b", ...)."""
    ren = [r for r in rows(recs["g1"]) if r["probe"].startswith("rename")]
    assert ren, "no rename recorded"
    assert (ren[0]["path"], ren[0]["path2"]) == (str(recs["main"] / "a"), str(recs["main"] / "b"))


def test_output_is_the_first_256_bytes_written(recs):
    """architecture.md: `output` "(first 256 bytes written to stdout/stderr/a tty/a pipe)": cat
    writes the 1000-byte manifest to its stdout, a pipe."""
    outs = [r["output"] for r in rows(recs["g1"]) if r["comm"] == "cat" and r["probe"] == "write" and r["output"]]
    assert MANIFEST[:256] in outs, [o[:40] for o in outs]


def test_identity_queries_carry_root(recs):
    """architecture.md: "getuid/geteuid/getgid/getegid carry arg `root` or `not root`"; `id -u`
    as root calls geteuid() = 0 (strace)."""
    q = [r for r in rows(recs["g1"]) if r["comm"] == "id" and r["probe"] in ("getuid", "geteuid", "getgid", "getegid")]
    assert q, "id's identity query not recorded"
    assert {r["arg"] for r in q} == {"root"}, [(r["probe"], r["arg"]) for r in q]


def test_wait_for_one_child_carries_pid_reaper_null(recs):
    """architecture.md: "wait4/waitid carry arg `pid` for a wait for one child ..., null for a
    reaper's wait for any". strace: python's subprocess waits wait4(<pid>, ...); sh waits
    wait4(-1, ...)."""
    t = rows(recs["t1"])
    py = [r for r in t if r["probe"] in ("wait4", "waitid") and r["comm"] == "tbwaiter"]
    assert py and all(r["arg"] == "pid" for r in py), [(r["probe"], r["arg"]) for r in py]
    sh = [r for r in rows(recs["g1"]) if r["probe"] == "wait4" and r["comm"] == "sh"]
    assert sh and all(r["arg"] is None for r in sh), [(r["probe"], r["arg"]) for r in sh]


def test_comm_follows_a_rename_through_proc_self_comm(recs):
    """architecture.md: "comm is refreshed after execve/execveat/prctl and, where the kernel has
    the `task:task_rename` tracepoint (`TASK_RENAME`), when a thread renames itself through
    `/proc/self/comm`". The python waiter writes "tbwaiter" there first."""
    if not Path("/sys/kernel/tracing/events/task/task_rename").exists():
        pytest.skip("no task:task_rename tracepoint")
    t = rows(recs["t1"])
    w = next(r for r in t if r["probe"] == "write" and r["path"] == "/proc/self/comm"
             or (r["probe"] == "write" and r["path"] and r["path"].endswith("/comm")))
    main_tid = w["tid"]
    later = [r for r in t if r["tid"] == main_tid and r["seq"] > w["seq"] and r["probe"] != "write"]
    assert later and all(r["comm"] == "tbwaiter" for r in later), {r["comm"] for r in later}
    before = [r for r in t if r["tid"] == main_tid and r["seq"] < w["seq"]]
    assert before and before[0]["comm"] != "tbwaiter"


def test_cut_off_threads_in_metadata(recs):
    """architecture.md: "Threads alive when recording stops are *cut off*: their tids go into the
    trace's metadata (`cut_off_tids`, tracer.schema.CUT_OFF_KEY ...)". `--linger 0` with
    `sleep 30 &` left running (its pid printed by `echo $!`)."""
    m = meta_of(recs["cut"])
    assert schema.CUT_OFF_KEY in m, m
    assert recs["sleeper"] in schema.cut_off_tids(m)


def test_recorder_metadata_keys_and_non_utf8_escaped(recs):
    """architecture.md: "The recorder's own metadata keys (... argv, cwd, failures_only,
    cut_off_tids, ...)"; "a name that is not UTF-8 (a path, an argument, the working directory)
    is stored as its `\\xNN` escape". cat was given `.../caf\\xe9`."""
    m = meta_of(recs["cut"])
    assert m["cwd"] == str(recs["misc"])
    escaped = str(recs["misc"]) + "/caf\\xe9"
    assert escaped in m["argv"], m["argv"]
    paths = {r["path"] for r in rows(recs["cut"]) if r["comm"] == "cat" and r["errno"] == "ENOENT"}
    assert escaped in paths, paths


def test_recorder_keys_refused_as_meta(tmp_path):
    """architecture.md: "The recorder's own metadata keys ... are refused as `--meta` keys, as is
    a key given twice" (before any command runs)."""
    _needs_recorder()
    marker = tmp_path / "ran"
    for meta in (["--meta", "argv=x"], ["--meta", "cwd=/"], ["--meta", "k=1", "--meta", "k=2"]):
        cp = run(TRACER, "record", "-q", "-o", tmp_path / "m.parquet", *meta, "--", "touch", marker)
        assert cp.returncode == 2, (meta, cp.stderr)
        one_line(cp)
        assert not marker.exists()


def test_json_summary_starts_its_own_line(recs):
    """architecture.md: "The `--json` summary starts a line of its own when the command's last
    write to our stdout did not end one". `printf abc` writes no newline."""
    out = recs["printf"].stdout
    first, _, rest = out.partition("\n")
    assert first == "abc", out
    assert isinstance(json.loads(rest.strip())["syscalls"], int)


# ---------------------------------------------------------------- versions and types read


def _rewrite(src, dst, *, version="2", change=None, drop=()):
    t = pq.read_table(src)
    if "path2" in drop:  # before schema 2 a two-path call's second path was in `arg`
        import pyarrow.compute as pc
        t = t.set_column(t.schema.get_field_index("arg"), "arg",
                         pc.if_else(pc.is_null(t.column("path2")), t.column("arg"), t.column("path2")))
    for c in drop:
        t = t.drop_columns([c])
    if change:
        t = change(t)
    md = dict(t.schema.metadata or {})
    md[b"tracebase.table"] = b"events"
    md[b"tracebase.schema_version"] = version.encode()
    pq.write_table(t.replace_schema_metadata(md), dst)
    return dst


def test_version_1_files_read(recs, main_diff, tmp_path):
    """architecture.md: "The data model (`tracer/schema.py`, schema version 2; version 1 files
    read)"; "Columns version 2 added read as null in version 1 files"; diff-json.md
    `then_wrote` "null when ... the recording has no output bytes". The three recordings
    rewritten as version 1 (no path2, output, repeat_count) give the same bifurcation."""
    v1 = [_rewrite(recs[n], tmp_path / f"{n}.parquet", version="1", drop=("path2", "output", "repeat_count"))
          for n in ("g1", "g2", "bad")]
    d = diff_json(*v1, env=dict(os.environ, TMPDIR=str(tmp_path)))  # a crash's traceback file lands here
    b, b2 = d["bifurcation"], main_diff["bifurcation"]
    assert (b["probe"], b["errno"], b["path"], b["position"]) == (b2["probe"], b2["errno"], b2["path"], b2["position"])
    assert b["then_wrote"] is None
    assert all(e["output"] is None and e["path2"] is None for e in b["last_common"] + b["good_instead"])


def test_unknown_schema_version_refused(recs, tmp_path):
    """architecture.md: "readers ... refuse a mismatch naming file, column, expected and found";
    schema version 3 is not one the readers know."""
    f = _rewrite(recs["bad"], tmp_path / "v3bad.parquet", version="3")
    cp = run(BASELINE, "diff", recs["g1"], f, "--json", check_rc=2)
    line = one_line(cp)
    assert cp.stdout == "" and "v3bad.parquet" in line and "3" in line.replace("v3bad", "")


SAME_DATA = {
    "large_string": lambda t: t.set_column(t.schema.get_field_index("path"), "path", t.column("path").cast(pa.large_string())),
    "dictionary": lambda t: t.set_column(t.schema.get_field_index("probe"), "probe", t.column("probe").dictionary_encode()),
    "etc_utc": lambda t: t.set_column(t.schema.get_field_index("start_time"), "start_time",
                                      t.column("start_time").cast(pa.timestamp("ns", tz="Etc/UTC"))),
}


@pytest.mark.parametrize("case", sorted(SAME_DATA))
def test_same_data_in_another_arrow_type_read(recs, main_diff, tmp_path, case):
    """architecture.md: "The same data in another Arrow type is not a mismatch: large or view
    strings, and dictionary-typed columns"; "A timestamp column whose zone is UTC by another name
    (`Etc/UTC`, ...) holds the same instants and is read as UTC"."""
    f = _rewrite(recs["bad"], tmp_path / "bad.parquet", change=SAME_DATA[case])
    d = diff_json(recs["g1"], recs["g2"], f)
    b, b2 = d["bifurcation"], main_diff["bifurcation"]
    assert (b["probe"], b["errno"], b["path"]) == (b2["probe"], b2["errno"], b2["path"])


REFUSED = {
    "pid_int64": ("pid", lambda t: t.set_column(t.schema.get_field_index("pid"), "pid", t.column("pid").cast(pa.int64()))),
    "start_time_us": ("start_time", lambda t: t.set_column(t.schema.get_field_index("start_time"), "start_time",
                                                           t.column("start_time").cast(pa.timestamp("us", tz="UTC")))),
    "zone_paris": ("Europe/Paris", lambda t: t.set_column(t.schema.get_field_index("start_time"), "start_time",
                                                          t.column("start_time").cast(pa.timestamp("ns", tz="Europe/Paris")))),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_other_width_unit_or_zone_refused_naming_it(recs, tmp_path, case):
    """architecture.md: "other integer widths, timestamps in another unit (Parquet 1.0, DuckDB:
    us) ... are refused naming the column"; "another zone is refused naming it"."""
    word, change = REFUSED[case]
    f = _rewrite(recs["bad"], tmp_path / "odd.parquet", change=change)
    cp = run(BASELINE, "diff", recs["g1"], f, "--json", check_rc=2)
    line = one_line(cp)
    assert cp.stdout == "" and word in line and "odd.parquet" in line, line


# =========================================================================== limits named in the docs


def test_diff_k_bounded_to_1000(recs):
    """architecture.md: "Numbers and times are bounded where the work would overflow or never end:
    ... `diff -k` to 1000"."""
    d = diff_json(recs["e1"], recs["e2"], recs["eb"], extra=("-k", "1000"))
    assert d["settings"]["k"] == 1000
    cp = run(BASELINE, "diff", recs["e1"], recs["eb"], "-k", "1001", check_rc=2)
    assert "1000" in one_line(cp) and cp.stdout == ""


def _allowlist(path, probe):
    path.write_text("version: 1\nentries:\n  - id: tb-braces\n    source: curated\n    reason: test\n"
                    f"    probe: \"{probe}\"\n    errno: ENOENT\n    path: \"/nowhere/**\"\n")
    return path


def test_brace_alternatives_bounded_at_load(recs, tmp_path):
    """architecture.md (Where things live): "a pattern's brace alternatives are bounded
    (`MAX_BRACE_ALTERNATIVES`, 1024, counted without expanding them), refused at load naming the
    entry and field". 10 groups of two = 1024 alternatives, 11 = 2048."""
    ok = _allowlist(tmp_path / "ok.yaml", "{a,b}" * 10)
    diff_json(recs["e1"], recs["e2"], recs["eb"], extra=("--allowlist", ok))
    too = _allowlist(tmp_path / "too.yaml", "{a,b}" * 11)
    cp = run(BASELINE, "diff", recs["e1"], recs["eb"], "--allowlist", too, check_rc=2)
    line = one_line(cp)
    assert ("tb-braces" in line or "entries[0]" in line) and "probe" in line, line


@pytest.mark.parametrize("case", ["duplicate_key", "huge_integer"])
def test_yaml_loader_refusals(recs, tmp_path, case):
    """architecture.md: "yamlio (the one YAML loader: a key given twice, or an integer past 4,300
    digits, is refused)" -- an allowlist given to `baseline diff` is one line, exit 2."""
    f = tmp_path / f"{case}.yaml"
    if case == "duplicate_key":
        f.write_text("version: 1\nversion: 1\nentries: []\n")
    else:
        f.write_text("version: 1\nentries: []\nnote: " + "7" * 5000 + "\n")
    cp = run(BASELINE, "diff", recs["e1"], recs["eb"], "--allowlist", f, check_rc=2)
    assert f.name in one_line(cp) and cp.stdout == ""


def test_record_open_files_limit_refused_before_the_command(tmp_path):
    """architecture.md: "checks ... `ulimit -n` (`tracer/limits.py`: below 16 open files polars
    panicked; `tracer record` asks 32 for its BPF maps ...)"."""
    _needs_recorder()
    marker = tmp_path / "ran"

    def low():
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    cp = run(TRACER, "record", "-q", "-o", tmp_path / "x.parquet", "--", "touch", marker, preexec_fn=low)
    assert cp.returncode == 2, cp.stderr
    one_line(cp)
    assert not marker.exists()


def test_record_output_checked_before_the_command(tmp_path):
    """architecture.md: "`tracer record` checks its output before the command runs where the
    write will land: ... a symlink is followed as the write follows it (a loop refused, a link
    into a missing directory refused naming both)"."""
    _needs_recorder()
    marker = tmp_path / "ran"
    loop = tmp_path / "loop.parquet"
    loop.symlink_to(loop.name)
    cp = run(TRACER, "record", "-q", "-o", loop, "--", "touch", marker)
    assert cp.returncode == 2 and "loop.parquet" in one_line(cp)
    dangling = tmp_path / "out.parquet"
    dangling.symlink_to(tmp_path / "missing" / "t.parquet")
    cp = run(TRACER, "record", "-q", "-o", dangling, "--", "touch", marker)
    line = one_line(cp)
    assert cp.returncode == 2 and "out.parquet" in line and "missing" in line, line
    assert not marker.exists() and dangling.is_symlink()


def test_run_refuses_one_file_for_two_outputs(tmp_path):
    """architecture.md: "`tracer run` refuses one file given two of `--prom`, `--metadata-file`,
    `--control-file`"."""
    _needs_recorder()
    f = tmp_path / "same"
    cp = run(TRACER, "run", "syscalls", "--spool", tmp_path / "spool", "--prom", f, "--control-file", f,
             "-d", "1s", timeout=120)
    assert cp.returncode == 2, (cp.returncode, cp.stderr[-2000:])
    assert "same" in one_line(cp)


# =========================================================================== the BPF C


def _c(name):
    return (ROOT / "bpf" / name).read_text()


def _code(text):
    """The C without comments."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def test_recorder_includes_only_ptrace_header():
    """architecture.md, Compiling the BPF C at start: "the programs include only what they use
    (`uapi/linux/ptrace.h`; `linux/sched.h` in calltree.c only where the `task_struct` offsets
    did not come from BTF)"."""
    rec = re.findall(r"^\s*#\s*include\s*<([^>]+)>", _code(_c("syscall_recorder.c")), re.M)
    assert rec == ["uapi/linux/ptrace.h"], rec
    ct = _code(_c("calltree.c"))
    inc = re.findall(r"^\s*#\s*include\s*<([^>]+)>", ct, re.M)
    assert set(inc) == {"uapi/linux/ptrace.h", "linux/sched.h"}, inc
    before = ct[:ct.index("#include <linux/sched.h>")].rstrip().splitlines()[-1]
    assert before.startswith("#if") and "TASK_" in before and "_OFF" in before, before


def test_recorder_reads_user_memory_through_typeof_pointers():
    """architecture.md: "the recorder calls `bpf_probe_read_user(_str)` through pointers declared
    like bcc's (`typeof`)"."""
    code = _code(_c("syscall_recorder.c"))
    for helper in ("bpf_probe_read_user", "bpf_probe_read_user_str"):
        assert re.search(rf"typeof\({helper}\)\s*\w+\s*=", code), helper
    assert not re.search(r"\bbpf_probe_read_user(_str)?\s*\(", code)


RECORDER_FACTS = [
    ("raw sys_enter/sys_exit programs", r"int\s+syscall_enter\s*\(\s*struct bpf_raw_tracepoint_args"),
    ("raw sys_exit program", r"int\s+syscall_exit\s*\(\s*struct bpf_raw_tracepoint_args"),
    ("sched_process_fork tracepoint", r"TRACEPOINT_PROBE\(sched,\s*sched_process_fork\)"),
    ("sched_process_exit tracepoint", r"TRACEPOINT_PROBE\(sched,\s*sched_process_exit\)"),
    ("task_rename under TASK_RENAME", r"#if TASK_RENAME\s+(?:.*\n)*?TRACEPOINT_PROBE\(task,\s*task_rename\)"),
    ("control[0] generation", r"BPF_ARRAY\(control,"),
    ("traced map", r"BPF_HASH\(traced,"),
    ("slots array", r"BPF_ARRAY\(slots,"),
    ("overflow hash", r"BPF_HASH\(overflow,"),
    ("per-CPU batches", r"BPF_PERCPU_ARRAY\(stages,"),
    ("ring buffer", r"BPF_RINGBUF_OUTPUT\(events,"),
    ("BPF_RB_NO_WAKEUP", r"ringbuf_output\([^;]*BPF_RB_NO_WAKEUP\)"),
    ("112-byte header", r"#define HEADER_BYTES 112\b"),
    ("8 KiB batches", r"#define STAGE_FLUSH 8192\b"),
    ("seccomp-refused call: number from orig_ax", r"->orig_ax"),
    ("bpf_rdonly_cast placeholder", r"KFUNC_PLACEHOLDER"),
    ("bpf_task_pt_regs fallback", r"bpf_task_pt_regs\("),
    ("bpf_ktime_get_ns at entry", r"bpf_ktime_get_ns\(\)"),
]


@pytest.mark.parametrize(("what", "pattern"), RECORDER_FACTS, ids=[w for w, _ in RECORDER_FACTS])
def test_recorder_kernel_side(what, pattern):
    """architecture.md, The recorder's kernel side: "Four programs: raw `sys_enter`/`sys_exit`
    ... and the `sched_process_fork`/`exit` tracepoints ... switched off between recordings by
    `control[0]`"; "a `traced` lookup"; "the `overflow` hash"; "where the kernel has the
    `task:task_rename` tracepoint (`TASK_RENAME`)"; "Records (112-byte header + strings) are
    built in a per-CPU batch and handed to the ring buffer 8 KiB at a time with
    `BPF_RB_NO_WAKEUP`"; "recorded with the number from `orig_ax`"; "`bpf_rdonly_cast` ...
    rewrites a placeholder helper call ...; without it, `bpf_task_pt_regs`"; "Entry stamps the
    slot (number, `bpf_ktime_get_ns`)"."""
    assert re.search(pattern, _c("syscall_recorder.c")), what


CALLTREE_FACTS = [
    ("SLOTS = 4096", r"#define SLOTS 4096\b"),
    ("slots array", r"BPF_ARRAY\(slots,\s*struct \w+,\s*SLOTS\)"),
    ("task-local storage for collisions", r"BPF_TASK_STORAGE\("),
    ("health slot collided", r"#define HEALTH_COLLIDED \d"),
    ("regs_check_hit", r"int\s+regs_check_hit\s*\("),
    ("NO_REGS_KEY", r"NO_REGS_KEY"),
    ("EXCLUDE_TGID default 0", r"#define EXCLUDE_TGID 0\b"),
    ("one per-CPU `calls`", r"BPF_PERCPU_ARRAY\(calls,"),
    ("per probe failures [generation][probe]", r"BPF_PERCPU_ARRAY\(counts,[^;]*2 \* MAX_PROBES"),
    ("`sigs` hash", r"BPF_HASH\(sigs,"),
    ("one bpf_ringbuf_output", r"ringbuf_output\("),
    ("bpf_jiffies64 outside windows", r"bpf_jiffies64\(\)"),
    ("clock_sync test-run program", r"int\s+clock_sync\s*\("),
    ("per-CPU record number", r"BPF_PERCPU_ARRAY\(rec_seq,"),
    ("thread-exit hook frees slots", r"sched_process_exit"),
    ("bpf_task_pt_regs compared in the check", r"bpf_task_pt_regs\("),
]


@pytest.mark.parametrize(("what", "pattern"), CALLTREE_FACTS, ids=[w for w, _ in CALLTREE_FACTS])
def test_calltree_kernel_side(what, pattern):
    """architecture.md, The fleet tracer's kernel side: "`slots` (SLOTS = 4096 entries ...)";
    "keeps its tree in task-local storage instead, counted in the health slot `collided`";
    "`FleetProgram.check_regs_key` attaches `regs_check_hit` ... compares ctx with
    `bpf_task_pt_regs(...)`"; "recompiled with `-DNO_REGS_KEY`"; "`EXCLUDE_TGID` 0";
    "Invocations of every probe share one per-CPU value (`calls`, [generation][probe])";
    "counted in `sigs`"; "written with one `bpf_ringbuf_output`"; "`bpf_jiffies64()` taken at
    emit"; "pairs of both clocks read by a test-run program, `clock_sync`"; "the record number
    (per-CPU counter from a random start)"; "The thread-exit tracepoint frees a slot"."""
    assert re.search(pattern, _c("calltree.c")), what


def test_calltree_emits_with_one_ringbuf_output_call_or_reserves_under_syscalls():
    """architecture.md: "Records are built in the slot and written with one `bpf_ringbuf_output`,
    except under the `syscalls` probe set (`ATTACH_SYSCALLS`) ...: that record ... is reserved in
    the ring and written in place (`ringbuf_reserve`/`submit` ...)". (The doc said only the
    first; this module's first version found the reserve/submit pair.)"""
    code = _code(_c("calltree.c"))
    assert len(re.findall(r"\.ringbuf_output\(", code)) == 1
    blocks = [m.groups() for m in re.finditer(r"#ifdef ATTACH_SYSCALLS((?:(?!#if|#endif).)*?)#else(.*?)#endif",
                                              code, re.S)]
    guarded = [b for b in blocks if "ringbuf_reserve" in b[0]]
    assert guarded, "the reserve/submit path is not under #ifdef ATTACH_SYSCALLS ... #else"
    inside, other = guarded[0]
    assert "ringbuf_reserve" in inside and "ringbuf_submit" in inside
    assert ".ringbuf_output(" in other and "ringbuf_reserve" not in other


# =========================================================================== where things live

TRACER_TOP = ["schema", "atomic", "inputs", "yamlio", "btf", "errors", "errnos", "privilege", "units", "resources"]
PACKAGES = ["tracer/record", "tracer/fleet", "tracer/cli", "baseline/run", "baseline/run/rules", "baseline/fleet",
            "baseline/simulator", "baseline/pipeline", "baseline/cli"]


@pytest.mark.parametrize("name", TRACER_TOP)
def test_tracer_top_modules_exist(name):
    """architecture.md, Where things live: "tracer/ capture side; at its top what everything may
    use: schema, atomic, inputs, yamlio, btf, errors, errnos, privilege, units, resources"."""
    assert (ROOT / "tracer" / f"{name}.py").is_file()


@pytest.mark.parametrize("pkg", PACKAGES)
def test_each_package_init_says_what_lives_there(pkg):
    """architecture.md: "one job per package, each `__init__.py` saying what lives there and what
    it may import"."""
    import importlib

    assert (ROOT / pkg / "__init__.py").is_file()
    doc = importlib.import_module(pkg.replace("/", ".")).__doc__
    assert doc and len(doc.split()) >= 5, (pkg, doc)
    # "May import ..." / "Imports only ..." / a thin layer "over `tracer.record` and ..."
    assert "import" in doc.lower() or re.search(r"\bover\s+`(tracer|baseline)\.", doc), (pkg, doc)


@pytest.mark.parametrize("rel", ["baseline/export.py", "baseline/demo.py", "baseline/run/native.py",
                                 "tracer/cli/shadowed.py", "tracer/cli/common.py", "baseline/run/normalize.py",
                                 "baseline/run/diff.py"])
def test_cited_modules_where_the_docs_put_them(rel):
    """architecture.md: "export.py Chrome Trace Event JSON export", "demo.py the main job end to
    end", "`baseline/run/native.py`", "`tracer/cli/shadowed.py`", "the dispatcher
    (`tracer/cli/common.py`)", "baseline/run/normalize.py" (diff-json.md), and diff-json.md:
    "The same object is `DiffReport.to_dict()` in `baseline/run/diff.py`"."""
    assert (ROOT / rel).is_file()


def test_run_report_and_templates_exist():
    """architecture.md: "run/report: its answer"; "templates/ report templates, style and charts";
    "bpf/ BPF C ... and probe sets (bpf/probes/*.yaml)"; "dags/ Airflow TaskFlow DAGs"."""
    assert (ROOT / "baseline/run/report.py").is_file() or (ROOT / "baseline/run/report/__init__.py").is_file()
    assert (ROOT / "baseline/templates").is_dir() and any((ROOT / "baseline/templates").iterdir())
    assert list((ROOT / "bpf/probes").glob("*.yaml"))
    assert {p.name for p in (ROOT / "bpf").glob("*.c")} >= {"syscall_recorder.c", "calltree.c"}
    assert list((ROOT / "dags").glob("*.py"))


def test_diff_report_to_dict_is_in_diff_module():
    """diff-json.md: "The same object is `DiffReport.to_dict()` in `baseline/run/diff.py`, whose
    docstring also describes the method"."""
    import baseline.run.diff as diff

    assert callable(getattr(diff.DiffReport, "to_dict", None))
    assert "to_dict" in (diff.__doc__ or ""), "baseline/run/diff.py's docstring does not describe to_dict"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
