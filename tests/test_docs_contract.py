"""Docs-versus-behaviour contract: README.md, docs/diff-json.md and every `--help` epilog.

Blind check: only the docs were read, never the code. Each case runs the real CLIs
(subprocess, tmp_path) and asserts what the docs promise. Recording needs root and bcc;
those cases skip with a printed reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from recent_data import recent_start

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
PY = str(BIN / "python")
IS_ROOT = os.geteuid() == 0

needs_root = pytest.mark.skipif(not IS_ROOT, reason="tracer record/run need root")


def run(*args, cwd=None, env=None, timeout=60, check_rc=None):
    cp = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check_rc is not None:
        assert cp.returncode == check_rc, (args, cp.returncode, cp.stdout[-2000:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr, cp.stderr
    return cp


def one_line_error(cp):
    lines = [ln for ln in cp.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, cp.stderr
    return lines[0]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    """`baseline simulate --hosts 2 --hours 1 -o DS`, then learn and audit (README's order)."""
    d = tmp_path_factory.mktemp("fleet") / "DS"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "-o", d, check_rc=0)
    run(BASELINE, "learn", d, check_rc=0)
    run(BASELINE, "audit", d, check_rc=0)
    return d


@pytest.fixture(scope="module")
def recent_ds(tmp_path_factory):
    """Data of the last two hours (`--start 2h`), so `--since 2h` sees it."""
    d = tmp_path_factory.mktemp("recent") / "DSN"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--start", recent_start(2), "-o", d, check_rc=0)
    return d


def _record(out, *cmd, label=None, env=None, cwd=None, extra=()):
    args = [TRACER, "record", "-q", "-o", out, *extra]
    if label:
        args += ["--label", label]
    return run(*args, "--", *cmd, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    if not IS_ROOT:
        print("skip: recording needs root")
        pytest.skip("recording needs root")
    if shutil.which("cat") is None:
        pytest.skip("no cat")
    d = tmp_path_factory.mktemp("recs")
    (d / "in.txt").write_text("hi\n")
    job = d / "job.sh"
    job.write_text('#!/bin/sh\ncat "$F" >/dev/null\nls "$G" >/dev/null\ncat "$H" >/dev/null\nexit ${CODE:-$?}\n')
    job.chmod(0o755)
    good_env = dict(os.environ, F=str(d / "in.txt"), G=str(d), H=str(d / "in.txt"))
    probe = _record(d / "g1.parquet", job, label="good", env=good_env, cwd=d)
    if probe.returncode == 2:
        print(f"skip: tracer record cannot record here: {probe.stderr.strip()}")
        pytest.skip(f"tracer record cannot record here: {probe.stderr.strip()}")
    assert probe.returncode == 0, probe.stderr
    bad_env = dict(good_env, F=str(d / "nope1"), H=str(d / "nope2"))
    with ThreadPoolExecutor(max_workers=4) as pool:
        futs = [
            pool.submit(_record, d / "g2.parquet", job, label="good", env=good_env, cwd=d),
            pool.submit(_record, d / "g3.parquet", job, label="good", env=good_env, cwd=d),
            pool.submit(_record, d / "bad.parquet", job, label="bad", env=bad_env, cwd=d),
            pool.submit(_record, d / "status.parquet", job, label="bad", env=dict(good_env, CODE="3"), cwd=d),
        ]
        rcs = [f.result().returncode for f in futs]
    assert rcs == [0, 0, 1, 3]  # the recorded command's own status (cat's 1, the script's 3)
    return d


@pytest.fixture(scope="module")
def diff_json(recs):
    d = recs
    cp = run(BASELINE, "diff", d / "g1.parquet", d / "g2.parquet", d / "bad.parquet", "--json", cwd=d)
    assert cp.returncode == 1, cp.stderr
    return cp.stdout


# --------------------------------------------------------------------------- help / version

BASELINE_CMDS = [
    ["diff"], ["allowlist", "learn"], ["simulate"], ["evaluate"], ["learn"], ["audit"],
    ["expected", "learn"], ["report"], ["ingest"], ["coverage"], ["suggest-probes"], ["export"],
]
TRACER_CMDS = [["record"], ["run"], ["probes", "check"]]


@pytest.mark.parametrize("tool,cmd", [("baseline", c) for c in BASELINE_CMDS] + [("tracer", c) for c in TRACER_CMDS])
def test_every_command_help_has_examples_and_exit_status(tool, cmd):
    """README: 'Every command has examples and its exit status in --help'."""
    exe = BASELINE if tool == "baseline" else TRACER
    cp = run(exe, *cmd, "--help", check_rc=0)
    assert "examples:" in cp.stdout
    assert "exit status" in cp.stdout


@pytest.mark.parametrize("exe,cmd", [(TRACER, ["probes"]), (BASELINE, ["allowlist"])])
def test_group_help_has_examples_and_exit_status(exe, cmd):
    """(A strict xfail as written: `tracer probes --help` had neither, `baseline allowlist --help`
    no exit status.)"""
    cp = run(exe, *cmd, "--help", check_rc=0)
    assert "examples:" in cp.stdout and "exit status" in cp.stdout


@pytest.mark.parametrize("exe", [BASELINE, TRACER])
def test_version(exe):
    cp = run(exe, "--version", check_rc=0)
    assert "tracebase" in cp.stdout


# --------------------------------------------------------------------------- fleet examples


def test_fleet_examples_run_as_shown(ds, tmp_path):
    """Examples of simulate/learn/audit/evaluate/report/expected/coverage/export --help, paths adapted."""
    model = tmp_path / "model.parquet"
    run(BASELINE, "learn", ds, "-o", model, "--since", "2026-11-28", check_rc=0)
    run(BASELINE, "learn", ds, "--expected-out", tmp_path / "exp.yaml", check_rc=0)
    # the audit example's --since is after this 1-hour dataset ends; the form is what is checked
    run(BASELINE, "audit", ds, "--model", model, "--since", "2026-11-28T00:00:00Z", "-o", tmp_path / "audit",
        check_rc=0)
    run(BASELINE, "audit", ds, "--html", tmp_path / "audit.html", "--allowlist", ROOT / "expected_errors.yaml",
        check_rc=0)
    assert (tmp_path / "audit.html").stat().st_size > 0
    run(BASELINE, "evaluate", ds, check_rc=0)
    cp = run(BASELINE, "evaluate", ds, "--findings", tmp_path / "audit", "--json", check_rc=0)
    json.loads(cp.stdout)
    run(BASELINE, "report", ds / "audit", "--html", tmp_path / "r.html", check_rc=0)
    json.loads(run(BASELINE, "report", ds / "audit", "--json", check_rc=0).stdout)
    run(BASELINE, "expected", "learn", ds, "--since", "2026-11-28", "--min-hosts", 5, "-o", tmp_path / "ee.yaml",
        check_rc=0)
    json.loads(run(BASELINE, "coverage", ds, "--json", check_rc=0).stdout)
    run(BASELINE, "coverage", ds, "--week", "2026-W48", "--out", tmp_path / "reports", check_rc=0)
    assert list((tmp_path / "reports").rglob("report.html"))
    run(BASELINE, "coverage", ds, "--probes", ROOT / "bpf" / "probes" / "rdma.yaml",
        "--nccl-logs", str(ds / "joblogs") + "/*.log", "-o", tmp_path / "rep2", check_rc=0)
    run(BASELINE, "export", ds / "events", "--host", "gpu00001", "--kind", "failure", "-o", tmp_path / "f.json",
        check_rc=0)
    json.loads((tmp_path / "f.json").read_text())


def test_simulate_spool_then_ingest_examples(tmp_path):
    sp = tmp_path / "trial"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--start", recent_start(2), "--spool", "--out", sp, check_rc=0)
    assert (sp / "spool").is_dir()
    dset = tmp_path / "dataset"
    run(BASELINE, "ingest", sp / "spool", dset, "--quarantine", tmp_path / "q", "--keep-spool", check_rc=0)
    out = json.loads(run(BASELINE, "ingest", sp / "spool", dset, "--compact-min-files", 4, "--json",
                         check_rc=0).stdout)
    assert out["ingest"]["already_ingested"] > 0  # idempotent
    run(BASELINE, "ingest", sp / "spool", dset, "--compact-days-after", 2, check_rc=0)


@pytest.mark.parametrize("argv", [
    ["simulate", "--hosts", "2", "--hours", "1", "--seed", "3", "--json"],
    ["simulate", "--hosts", "1", "--hours", "1", "--start", "2026-11-28", "--json"],
    ["simulate", "--hosts", "1", "--hours", "1", "--scenario", "efault_peer_cascade,crash_loop_fw_bad_state",
     "--json"],
])
def test_simulate_json_forms(tmp_path, argv):
    cp = run(BASELINE, *argv, "-o", tmp_path / "o", check_rc=0)
    assert isinstance(json.loads(cp.stdout), dict)


@pytest.mark.parametrize("since", ["2h", "1d", "2026-11-28", "2026-11-28T00:00:00Z", "2026-11-28T00:00:00+02:00"])
def test_since_forms_accepted(recent_ds, since):
    """--since: ISO dates or date-times, an offset, or a time ago (learn and audit examples)."""
    cp = run(BASELINE, "learn", recent_ds, "--since", since, "-o", recent_ds / f"m-{since[:4]}.parquet",
             "--json", check_rc=0)
    assert json.loads(cp.stdout)["good_traces"] > 0


def test_audit_refit_since_2h_json(recent_ds):
    cp = run(BASELINE, "audit", recent_ds, "--refit", "--since", "2h", "--json", check_rc=0)
    assert json.loads(cp.stdout)["findings"] > 0


def test_since_naive_date_in_other_zone_notes_utc(ds):
    """README: UTC whatever TZ says; the command notes on stderr how it read the time."""
    cp = run(BASELINE, "learn", ds, "--since", "2026-11-28", "--json",
             "-o", ds / "tzmodel.parquet", env=dict(os.environ, TZ="Europe/Berlin"), check_rc=0)
    assert json.loads(cp.stdout)["since"].startswith("2026-11-28T00:00:00+00:00")
    assert "UTC" in cp.stderr


@pytest.mark.parametrize("argv", [
    ["simulate", "--hosts", "2", "--hours", "nan"],
    ["simulate", "--hosts", "2", "--hours", "inf"],
    ["simulate", "--hosts", "2", "--hours", "-1"],
    ["learn", "DS", "--since", "nan"],
    ["learn", "DS", "--since", "-2h"],
])
def test_nan_inf_negative_refused_one_line(ds, tmp_path, argv):
    argv = [str(ds) if a == "DS" else a for a in argv]
    if argv[0] == "simulate":
        argv += ["-o", str(tmp_path / "x")]
    cp = run(BASELINE, *argv, check_rc=2)
    assert cp.stdout == ""
    one_line_error(cp)


@pytest.mark.parametrize("argv", [
    ["simulate", "--hosts", "1", "--hours", "1", "-o", "-"],
    ["learn", "DS", "-o", "-"],
])
def test_dash_output_refused_by_file_writers(ds, argv):
    """README: `-o -` is refused by the commands that write Parquet, a directory or a YAML file."""
    argv = [str(ds) if a == "DS" else a for a in argv]
    cp = run(BASELINE, *argv, check_rc=2)
    assert "-o" in one_line_error(cp)


def test_missing_input_one_line_exit_2(tmp_path):
    cp = run(BASELINE, "diff", tmp_path / "nope.parquet", tmp_path / "bad.parquet", "--json", check_rc=2)
    assert cp.stdout == ""
    assert "nope.parquet" in one_line_error(cp)


# --------------------------------------------------------------------------- diff (needs recordings)

EVENT_KEYS = {"seq", "probe", "errno", "path", "path2", "pid", "tid", "comm", "trace_id", "output"}
TOP_TYPES = {
    "version": int, "anomaly": bool, "bifurcation": (dict, type(None)), "first_unexplained": (int, type(None)),
    "anomalies": list, "anomaly_count": int, "reorderings": list, "expected_ignored": dict,
    "good_traces": list, "bad_trace": str, "events": dict, "settings": dict, "warnings": list,
}
ANOMALY_TYPES = {
    "rank": int, "score": (float, int), "kind": str, "probe": str, "errno": (str, type(None)),
    "path": (str, type(None)), "npath": (str, type(None)), "path2": (str, type(None)),
    "then_wrote": (str, type(None)), "next_event": (dict, type(None)), "timed_out_ms": (float, type(None)),
    "empty_answer": bool, "process": dict, "position": int, "recovered": bool, "unexplained_events": int,
    "last_common": list, "good_instead": list,
    # round forty-six: the same anomaly in sibling processes of one role, folded into this one
    "repeats": int, "repeated_in": list,
}


@needs_root
def test_diff_json_top_level_fields(diff_json):
    d = json.loads(diff_json)
    assert diff_json.strip().count("\n") == 0 or diff_json.strip().startswith("{")
    assert set(d) == set(TOP_TYPES), set(d) ^ set(TOP_TYPES)
    for k, t in TOP_TYPES.items():
        assert isinstance(d[k], t), (k, d[k])
    assert d["version"] == 1
    assert d["anomaly"] is (d["anomaly_count"] > 0)
    assert d["bifurcation"] == d["anomalies"][0]
    assert all(isinstance(t, str) for t in d["good_traces"])
    assert set(d["events"]) == {"good", "bad"}
    assert set(d["settings"]) >= {"k", "learn", "allowlist", "learned_entries", "elapsed_s"}
    assert d["settings"]["k"] == 4 and d["settings"]["learn"] is True
    assert all(isinstance(w, str) for w in d["warnings"])


@needs_root
def test_diff_json_keys_sorted(diff_json):
    """docs/diff-json.md: exactly one JSON object on stdout (keys sorted)."""
    def walk(o):
        if isinstance(o, dict):
            assert list(o) == sorted(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(json.loads(diff_json))


@needs_root
def test_diff_json_anomaly_and_event_fields(diff_json, recs):
    d = json.loads(diff_json)
    assert d["anomaly_count"] == 2 and [a["rank"] for a in d["anomalies"]] == [1, 2]
    for a in d["anomalies"]:
        assert set(a) == set(ANOMALY_TYPES), set(a) ^ set(ANOMALY_TYPES)
        for k, t in ANOMALY_TYPES.items():
            assert isinstance(a[k], t), (k, a[k])
        assert a["kind"] in {"error", "divergence", "missing_process", "reordering"}
        assert set(a["process"]) == {"pid", "tid", "comm", "role"}
        for ev in a["last_common"] + a["good_instead"]:
            assert set(ev) == EVENT_KEYS
        assert len(a["last_common"]) <= 3  # --context default 3
        assert a["good_instead"] and all(ev["trace_id"] in d["good_traces"] for ev in a["good_instead"])
    b = d["bifurcation"]
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "ENOENT", str(recs / "nope1"))
    assert d["anomalies"][1]["path"] == str(recs / "nope2")
    assert b["then_wrote"] and "nope1" in b["then_wrote"]
    assert d["first_unexplained"] == b["position"]
    assert b["process"]["comm"] == "cat"


@needs_root
def test_diff_json_expected_ignored(diff_json):
    e = json.loads(diff_json)["expected_ignored"]
    assert set(e) == {"total", "by_entry"}
    assert e["total"] == sum(v["count"] for v in e["by_entry"].values())
    for v in e["by_entry"].values():
        assert {"count", "source", "probe", "errno", "path", "context"} <= set(v)
        assert v["source"] in {"curated", "learned"}


@needs_root
def test_diff_json_event_counts_match_recordings(recs):
    counts = {}
    for name in ("g1", "g2"):
        cp = run(TRACER, "record", "--json", "-q", "-o", recs / f"c{name}.parquet", "--", "true", check_rc=0)
        counts[name] = json.loads(cp.stdout.strip().splitlines()[-1])["syscalls"]
    cp = run(BASELINE, "diff", recs / "cg1.parquet", recs / "cg2.parquet", "--json", check_rc=0)
    d = json.loads(cp.stdout)
    assert d["events"] == {"good": counts["g1"], "bad": counts["g2"]}
    assert d["bifurcation"] is None and d["first_unexplained"] is None and d["anomalies"] == []


@needs_root
def test_diff_exit_status_0_1_2_text_and_json(recs):
    g = [recs / "g1.parquet", recs / "g2.parquet"]
    for extra in ([], ["--json"]):
        assert run(BASELINE, "diff", *g, recs / "g3.parquet", *extra).returncode == 0
        assert run(BASELINE, "diff", *g, recs / "bad.parquet", *extra).returncode == 1
        assert run(BASELINE, "diff", *g, recs / "missing.parquet", *extra).returncode == 2


@needs_root
def test_diff_max_anomalies_context_window_learned(recs, tmp_path):
    g = [recs / "g1.parquet", recs / "g2.parquet"]
    learned = tmp_path / "team.learned.yaml"
    run(BASELINE, "allowlist", "learn", *g, "-o", learned, check_rc=0)
    cp = run(BASELINE, "diff", *g, recs / "bad.parquet", "--json", "--max-anomalies", 1, "--context", 1,
             "-k", 7, "--no-learn", "--learned", learned, check_rc=1)
    d = json.loads(cp.stdout)
    assert d["anomaly_count"] == 2 and len(d["anomalies"]) == 1
    assert len(d["bifurcation"]["last_common"]) <= 1
    assert d["settings"]["k"] == 7 and d["settings"]["learn"] is False
    assert "+" in d["settings"]["allowlist"]  # curated + the learned file when loaded


@needs_root
def test_diff_exit_status_only_anomaly(recs):
    """docs/diff-json.md: only the exit status differs -> divergence, score 2.5, good_instead empty,
    warnings say both statuses."""
    cp = run(BASELINE, "diff", recs / "g1.parquet", recs / "g2.parquet", recs / "status.parquet", "--json",
             check_rc=1)
    d = json.loads(cp.stdout)
    assert d["anomaly_count"] == 1
    b = d["bifurcation"]
    assert b["kind"] == "divergence" and b["score"] == 2.5 and b["good_instead"] == []
    assert any("3" in w and "0" in w for w in d["warnings"])


@needs_root
def test_diff_examples_and_option_placement(recs):
    g1, g2, g3, bad = (recs / f"{n}.parquet" for n in ("g1", "g2", "g3", "bad"))
    gdir = recs / "good-runs"
    gdir.mkdir(exist_ok=True)
    for g in (g1, g2):
        shutil.copy(g, gdir)
    run(BASELINE, "diff", g1, g2, g3, bad, "--context", 5, check_rc=1)
    d = json.loads(run(BASELINE, "diff", gdir, bad, "--json", check_rc=1).stdout)
    run(BASELINE, "diff", gdir, bad, "--trace-id", d["bad_trace"], "--allowlist", ROOT / "expected_errors.yaml",
        check_rc=1)
    run(BASELINE, "diff", gdir, bad, "--no-learn", check_rc=1)
    # options between positionals (README)
    json.loads(run(BASELINE, "diff", g1, "--json", g2, bad, check_rc=1).stdout)
    # after `--` every word is a positional
    dash = recs / "-bad.parquet"
    shutil.copy(bad, dash)
    run(BASELINE, "diff", "--", g1, "-bad.parquet", cwd=recs, check_rc=1)


@needs_root
def test_diff_reader_stops_early(recs):
    """README: `baseline diff good bad | head -1` changes neither output nor status."""
    p = subprocess.Popen([BASELINE, "diff", recs / "g1.parquet", recs / "g2.parquet", recs / "bad.parquet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=30) == 1
    assert first.startswith(b"bifurcation")
    assert "Traceback" not in err and "BrokenPipe" not in err


@needs_root
def test_diff_good_trace_of_no_events_refused(recs, tmp_path):
    zero = tmp_path / "zero.parquet"
    run(PY, "-c", "import pyarrow.parquet as pq, sys; t = pq.read_table(sys.argv[1]);"
        " pq.write_table(t.slice(0, 0), sys.argv[2])", recs / "g1.parquet", zero, check_rc=0)
    cp = run(BASELINE, "diff", zero, recs / "bad.parquet", check_rc=2)
    assert "zero.parquet" in one_line_error(cp)


@needs_root
def test_control_characters_escaped_in_text_raw_in_json(recs):
    weird = str(recs / "a\nb\x1bc")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futs = [pool.submit(_record, recs / f"{n}.parquet", "cat", recs / "in.txt", cwd=recs) for n in ("w1", "w2")]
        futs.append(pool.submit(_record, recs / "wb.parquet", "cat", weird, cwd=recs))
        for f in futs:
            f.result()
    g = [recs / "w1.parquet", recs / "w2.parquet", recs / "wb.parquet"]
    text = run(BASELINE, "diff", *g, check_rc=1).stdout
    first = text.splitlines()[0]
    assert "a\\nb\\x1bc" in first
    d = json.loads(run(BASELINE, "diff", *g, "--json", check_rc=1).stdout)
    assert d["bifurcation"]["path"] == weird


@needs_root
def test_export_examples(recs, tmp_path):
    run(BASELINE, "export", recs / "g1.parquet", "-o", tmp_path / "run.json", check_rc=0)
    json.loads((tmp_path / "run.json").read_text())
    json.loads(run(BASELINE, "export", recs / "g1.parquet", "-o", "-", check_rc=0).stdout)
    run(BASELINE, "export", "--diff", recs / "g1.parquet", recs / "g2.parquet", recs / "bad.parquet",
        "-o", tmp_path / "diff.json", check_rc=0)
    json.loads((tmp_path / "diff.json").read_text())


@needs_root
def test_allowlist_learn_examples(recs, tmp_path):
    gdir = tmp_path / "good-runs"
    gdir.mkdir()
    for n in ("g1", "g2"):
        shutil.copy(recs / f"{n}.parquet", gdir)
    run(BASELINE, "allowlist", "learn", gdir, cwd=tmp_path, check_rc=0)
    assert (tmp_path / "expected_errors.learned.yaml").is_file()  # the default output
    run(BASELINE, "allowlist", "learn", gdir / "g1.parquet", gdir / "g2.parquet", "--min-support", 0.5,
        "-o", tmp_path / "allow.yaml", check_rc=0)
    d = json.loads(run(BASELINE, "allowlist", "learn", gdir, "-o", tmp_path / "team.learned.yaml", "--json",
                       check_rc=0).stdout)
    assert "added" in d
    cp = run(BASELINE, "allowlist", "learn", gdir, "-o", "-", check_rc=2)
    one_line_error(cp)


# --------------------------------------------------------------------------- tracer record


@needs_root
def test_record_forms(recs, tmp_path):
    cwd = tmp_path / "dflt"
    cwd.mkdir()
    rec = [TRACER, "record"]
    jobs = {
        # -x: only failing syscalls
        "x": (rec + ["-q", "-x", "-o", tmp_path / "x.parquet", "--", "cat", recs / "nope"], 1),
        # --json: one JSON line after the command's output
        "json": (rec + ["--json", "-q", "-o", tmp_path / "j.parquet", "--", "echo", "hello"], 0),
        # -d stops recording, not the command; exit 0
        "d500ms": (rec + ["-q", "-d", "500ms", "-o", tmp_path / "d1.parquet", "--", "sleep", "2"], 0),
        "d0.5": (rec + ["-q", "-d", "0.5", "-o", tmp_path / "d2.parquet", "--", "sleep", "2"], 0),
        "linger0": (rec + ["-q", "--linger", "0", "-o", tmp_path / "l0.parquet", "--", "true"], 0),
        "lingerinf": (rec + ["-q", "--linger", "inf", "-o", tmp_path / "li.parquet", "--", "true"], 0),
        "linger10s": (rec + ["-q", "--linger", "10s", "-o", tmp_path / "l10.parquet", "--", "true"], 0),
        "linger-nan": (rec + ["--linger", "nan", "-o", tmp_path / "n.parquet", "--", "true"], 2),
        "d-neg": (rec + ["-d", "-1s", "-o", tmp_path / "n.parquet", "--", "true"], 2),
        "d-inf": (rec + ["-d", "inf", "-o", tmp_path / "n.parquet", "--", "true"], 2),
        "dash-o": (rec + ["-o", "-", "--", "true"], 2),
        # exit statuses: the command's, 127 not found, 126 cannot run
        "exit3": (rec + ["-q", "-o", tmp_path / "s3.parquet", "--", "sh", "-c", "exit 3"], 3),
        "127": (rec + ["-q", "-o", tmp_path / "s127.parquet", "--", tmp_path / "nosuch"], 127),
        "126": (rec + ["-q", "-o", tmp_path / "s126.parquet", "--", tmp_path], 126),
        # default output name: trace-CMD-UTCTIME*.parquet here
        "default-o": (rec + ["-q", "--", "ls", "-l", "/etc"], 0),
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futs = {k: pool.submit(run, *argv, cwd=cwd) for k, (argv, _) in jobs.items()}
        res = {k: f.result() for k, f in futs.items()}
    for k, (_, rc) in jobs.items():
        assert res[k].returncode == rc, (k, res[k].returncode, res[k].stderr)
        if rc == 2:
            one_line_error(res[k])
    cp = run(PY, "-c", "import pyarrow.parquet as pq, sys; t = pq.read_table(sys.argv[1]).to_pydict();"
             " print(len(t['errno']), sum(e is None for e in t['errno']))",
             tmp_path / "x.parquet", check_rc=0)
    n, nulls = cp.stdout.split()
    assert int(n) > 0 and int(nulls) == 0
    lines = res["json"].stdout.splitlines()
    assert lines[0] == "hello" and json.loads(lines[-1])["syscalls"] > 0
    assert [p.name for p in cwd.glob("trace-ls-*.parquet")]


@needs_root
def test_record_label_and_meta_columns(recs, tmp_path):
    out = tmp_path / "m.parquet"
    run(TRACER, "record", "-q", "--meta", "ticket=OPS-123", "--meta", "job_id=42", "-o", out, "--", "true",
        check_rc=0)
    code = ("import pyarrow.parquet as pq, sys\n"
            "for f in sys.argv[1:]:\n"
            "    t = pq.read_table(f).to_pydict(); print(sorted(set(t['kind'])), sorted(set(map(str, t['job_id']))))")
    cp = run(PY, "-c", code, recs / "g1.parquet", recs / "bad.parquet", out, check_rc=0)
    assert cp.stdout.splitlines() == ["['good'] ['None']", "['failure'] ['None']", "['full'] ['42']"]


@needs_root
def test_record_pid_with_duration(tmp_path):
    p = subprocess.Popen(["sleep", "30"])
    try:
        cp = run(TRACER, "record", "-q", "-p", p.pid, "-d", "1s", "-o", tmp_path / "p.parquet", check_rc=0)
        assert (tmp_path / "p.parquet").is_file(), cp.stderr
        assert p.poll() is None  # the process is not touched
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait()


# --------------------------------------------------------------------------- tracer run / probes


@needs_root
def test_tracer_run_forms(tmp_path):
    sp = tmp_path / "spool"
    cp = run(TRACER, "run", "syscalls", "-p", os.getpid(), "-x", "-d", "1s", "-i", "100ms", "--spool", sp)
    if cp.returncode == 2 and "bcc" in cp.stderr:
        pytest.skip(cp.stderr.strip())
    assert cp.returncode == 0, cp.stderr
    assert list(sp.glob("*/snap-*/events.parquet"))
    for bad in ("50ms", "2h"):
        cp = run(TRACER, "run", "syscalls", "-d", "1s", "-i", bad, "--spool", sp, check_rc=2)
        assert "-i" in one_line_error(cp)


def test_probes_check_exit_status_and_json():
    cp = run(TRACER, "probes", "check", "syscalls", "--json")
    assert cp.returncode in (0, 1)
    json.loads(cp.stdout)
    cp = run(TRACER, "probes", "check", "rdma")
    # 1 when some probe is missing; 0 when all present
    assert cp.returncode == (1 if " absent" in cp.stdout or "--" in cp.stdout else 0)
    cp = run(TRACER, "probes", "check", "nosuchset", check_rc=2)
    one_line_error(cp)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
