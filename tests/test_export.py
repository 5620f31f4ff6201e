"""`baseline export`: Chrome Trace Event JSON of a real recording, of fleet call trees and of a diff,
checked against the Trace Event Format rules by a checker written here (not the exporter's code)."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import polars as pl
import pytest
import yaml

from baseline.cli import main
from tracer.schema import read_events, write_table

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "reference" / "rdma_control_path.yaml"
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
PHASES = {"X", "B", "E", "i", "I", "M", "C", "b", "e", "n", "s", "t", "f", "P", "O", "N", "D"}


# --------------------------------------------------------------------------------------------
# the format rules (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
# --------------------------------------------------------------------------------------------
def check_trace_event_format(obj: dict) -> list[dict]:
    """Assert the JSON Object Format rules; returns the events."""
    assert isinstance(obj, dict) and isinstance(obj.get("traceEvents"), list)
    assert obj.get("displayTimeUnit") in ("ms", "ns")
    events = obj["traceEvents"]
    for e in events:
        assert e["ph"] in PHASES, e
        for key in ("pid", "tid"):
            assert type(e[key]) is int, (key, e)  # ints, not strings or bools
        assert isinstance(e["name"], str) and e["name"], e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"), e
            assert "name" in e["args"] or "sort_index" in e["args"], e
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "i":
            assert e.get("s", "t") in ("g", "p", "t"), e
    check_nesting(events)
    return events


def check_nesting(events: list[dict]) -> None:
    """Complete events on one thread nest: each lies inside or entirely after the open ones."""
    threads: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)  # compare in integer ns: no float slop
            threads.setdefault((e["pid"], e["tid"]), []).append((start, start + round(e["dur"] * 1000)))
    for key, spans in threads.items():
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"thread {key}: [{start}, {end}] overlaps its parent ending {stack[-1]}"
            stack.append(end)


def names(events: list[dict], what: str) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == what}


def export(tmp_path: Path, *argv) -> dict:
    out = tmp_path / "trace.json"
    status = main(["export", *map(str, argv), "-o", str(out)])
    assert status == 0
    return json.loads(out.read_text())


# --------------------------------------------------------------------------------------------
# a real recording
# --------------------------------------------------------------------------------------------
THREADED = textwrap.dedent(
    """
    import os, subprocess, sys, threading
    def work():
        try:
            open("/nonexistent/tracebase-export-probe")
        except FileNotFoundError:
            pass
    t = threading.Thread(target=work); t.start(); t.join()
    subprocess.run(["/bin/cat", sys.argv[1]], stdout=subprocess.DEVNULL)
    os.rename(sys.argv[1], sys.argv[1] + ".moved")
    """
)


@pytest.fixture(scope="module")
def recording(recorder, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("rec")
    (base / "prog.py").write_text(THREADED)
    (base / "data.txt").write_text("x\n")
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        rec = recorder.record(["/usr/bin/python3", "-S", str(base / "prog.py"), str(base / "data.txt")],
                              env=ENV, stdout=null, stderr=null, timeout=60)
    finally:
        os.close(null)
    return rec.write(base / "run.parquet")


def test_recording_exports_a_track_per_thread_with_syscall_args(recording, tmp_path):
    df = read_events(recording)
    events = check_trace_event_format(export(tmp_path, recording))
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == df.height  # every syscall, once
    # one process track per real pid, one thread track per real tid, named after them
    procs, threads = names(events, "process_name"), names(events, "thread_name")
    real = df.select("pid", "tid").unique()
    assert len(procs) == real["pid"].n_unique() and len(threads) == real.height
    assert {int(n.split("pid ")[1].split()[0]) for n in procs.values()} == set(real["pid"].to_list())
    assert {int(n.rsplit(" ", 1)[1]) for n in threads.values()} == set(real["tid"].to_list())
    # the thread's failing open: its own thread track, errno and path in args, duration in us
    failing = df.filter(pl.col("path") == "/nonexistent/tracebase-export-probe").row(0, named=True)
    assert failing["tid"] != failing["pid"]
    (e,) = [e for e in xs if e["args"].get("path") == "/nonexistent/tracebase-export-probe"]
    assert e["name"] == failing["probe"] and e["args"]["errno"] == "ENOENT" and e["args"]["ret"] == failing["ret"]
    assert e["dur"] == pytest.approx(failing["latency_ns"] / 1000)
    assert threads[(e["pid"], e["tid"])].endswith(str(failing["tid"]))
    # ts in microseconds: the gap between two syscalls matches the recorded ns
    first = df.filter(pl.col("seq") == 0).row(0, named=True)
    (e0,) = [x for x in xs if x["args"]["seq"] == 0]
    assert e["ts"] - e0["ts"] == pytest.approx((failing["ts_ns"] - first["ts_ns"]) / 1000, abs=1e-3)
    # a two-path syscall carries both paths (path2 once the recorder fills it: schema version 2)
    (mv,) = [x for x in xs if x["name"] in ("rename", "renameat", "renameat2") and x["args"].get("path", "").endswith("data.txt")]
    assert mv["args"].get("path2") == df.filter(pl.col("seq") == mv["args"]["seq"])["path2"][0]
    # the child process (cat) is a process of its own
    assert any("(cat)" in n for n in procs.values())


def test_diff_shows_good_beside_bad_and_marks_the_bifurcation(recorder, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.py").write_text("import sys\nprint(open(sys.argv[1]).read())\n")
    (job / "in.txt").write_text("data\n")
    null = os.open("/dev/null", os.O_WRONLY)
    argv = ["/usr/bin/python3", "-S", str(job / "job.py"), str(job / "in.txt")]
    try:
        for i in (1, 2):
            recorder.record(argv, env=ENV, cwd=job, stdout=null, stderr=null, label="good").write(tmp_path / f"good{i}.parquet")
        (job / "in.txt").unlink()
        recorder.record(argv, env=ENV, cwd=job, stdout=null, stderr=null, label="bad").write(tmp_path / "bad.parquet")
    finally:
        os.close(null)
    events = check_trace_event_format(
        export(tmp_path, "--diff", tmp_path / "good1.parquet", tmp_path / "good2.parquet", tmp_path / "bad.parquet"))
    procs = names(events, "process_name")
    bad_pids = {pid for (pid, _), n in procs.items() if n.startswith("bad:")}
    good_pids = {pid for (pid, _), n in procs.items() if n.startswith("good:")}
    assert bad_pids and good_pids and not bad_pids & good_pids  # separate processes
    marks = [e for e in events if e["ph"] == "i"]
    bif = [m for m in marks if m["name"].startswith("bifurcation:")]
    assert len(bif) == 1 and bif[0]["pid"] in bad_pids
    assert "ENOENT" in bif[0]["name"] and bif[0]["args"]["path"].endswith("in.txt")
    # the mark sits on the failing open itself
    (at,) = [e for e in events if e["ph"] == "X" and e["pid"] == bif[0]["pid"] and e["args"].get("errno") == "ENOENT"
             and e["args"].get("path", "").endswith("in.txt")]
    assert (at["ts"], at["tid"]) == (bif[0]["ts"], bif[0]["tid"])
    # both runs start at 0, so they line up side by side
    starts = {side: min(e["ts"] for e in events if e["ph"] == "X" and e["pid"] in pids)
              for side, pids in (("bad", bad_pids), ("good", good_pids))}
    assert starts == {"bad": 0, "good": 0}
    assert any(m["name"].startswith("good run instead:") and m["pid"] in good_pids for m in marks)


# --------------------------------------------------------------------------------------------
# fleet call trees, built from the reference's operation trees
# --------------------------------------------------------------------------------------------
def reference_call_trees(n_per_op: int = 3) -> pl.DataFrame:
    """Call trees of every reference operation: frames in tree order with their depth; each frame
    entered 100 ns after the previous one, returning 50 ns after its last child; the deepest
    frame of the first tree of each operation fails. In one tree the last frame ends 30 ns after
    the root (an exit probe firing late), which the export must clip."""
    ref = yaml.safe_load(REFERENCE.read_text())
    rows = []
    t_wall = 1_764_547_200_000_000_000  # 2025-12-01T00:00:00Z
    n = 0
    for op, spec in ref["operations"].items():
        frames = [(f["depth"], f["fn"]) for f in spec.get("tree", []) if isinstance(f.get("depth"), int) and f["depth"] >= 0]
        if not frames:
            continue
        for k in range(n_per_op):
            trace = f"host-{n % 2}:{n}"
            t = 5_000_000 * n
            starts, ends, nesting, stack = [], [0] * len(frames), [], []
            for i, (depth, _) in enumerate(frames):
                while stack and frames[stack[-1]][0] >= depth:
                    j = stack.pop()
                    ends[j] = t = t + 50
                t += 100
                starts.append(t)
                nesting.append(len(stack))  # depth among the frames present (unlisted callers skipped)
                stack.append(i)
            while stack:
                j = stack.pop()
                ends[j] = t = t + 50
            deepest = max(range(len(frames)), key=lambda i: frames[i][0])
            if n == 1 and len(frames) > 1:  # late exit probe: the last frame ends after the root
                ends[-1] = ends[0] + 30
            for i, (_, fn) in enumerate(frames):
                depth = nesting[i]
                fails = k == 0 and (i == deepest or depth < nesting[deepest] and i < deepest)
                rows.append({
                    "trace_id": trace, "seq": i, "ts_ns": starts[i], "pid": 100 + n % 3, "tid": 1000 + n % 5,
                    "comm": "pt_main_thread", "probe": fn, "layer": "kernel", "depth": depth,
                    "ret": -14 if fails else 0, "errno": "EFAULT" if fails else None,
                    "latency_ns": ends[i] - starts[i], "kind": "failure" if k == 0 else "good", "command": op,
                    "host": f"host-{n % 2}", "start_time": t_wall + 5_000_000 * n,
                })
            n += 1
    return pl.DataFrame(rows).with_columns(
        pl.col("start_time").cast(pl.Datetime("ns", "UTC")),
        pl.col("pid", "tid").cast(pl.Int32), pl.col("depth").cast(pl.Int16),
    )


def test_fleet_call_trees_nest_on_their_thread(tmp_path):
    df = reference_call_trees()
    path = write_table(df, tmp_path / "events" / "part-0.parquet", "events")
    events = check_trace_event_format(export(tmp_path, tmp_path / "events"))
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == df.height
    # each tree: the root contains every other frame of its trace, and depth = nesting level
    depth = dict(zip(zip(df["trace_id"], df["seq"], strict=True), df["depth"], strict=True))
    for (trace,) in df.select("trace_id").unique().iter_rows():
        mine = sorted((e for e in xs if e["args"]["trace_id"] == trace), key=lambda e: e["args"]["seq"])
        assert len({(e["pid"], e["tid"]) for e in mine}) == 1  # one thread
        for e in mine:
            inside = [p for p in mine if p is not e and p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] + 1e-9]
            assert len(inside) == depth[(trace, e["args"]["seq"])], (trace, e["name"])
    clipped = [e for e in xs if "clipped_ns" in e["args"]]
    assert len(clipped) == 1 and clipped[0]["args"]["trace_id"] == "host-1:1" and clipped[0]["args"]["clipped_ns"] >= 30
    # processes are per host: the same pid on two hosts is two tracks, named with the host
    procs = names(events, "process_name")
    assert len(procs) == df.select("host", "pid").unique().height
    assert all(n.startswith("host-") for n in procs.values())
    # wall clock: traces 5 ms apart in start_time are 5000 us apart
    roots = {e["args"]["trace_id"]: e["ts"] for e in xs if e["args"]["seq"] == 0}
    assert roots["host-1:1"] - roots["host-0:0"] == pytest.approx(5000.0)
    # filters
    only = check_trace_event_format(export(tmp_path, path, "--host", "host-0", "--kind", "failure"))
    ids = {e["args"]["trace_id"] for e in only if e["ph"] == "X"}
    assert ids == set(df.filter((pl.col("host") == "host-0") & (pl.col("kind") == "failure"))["trace_id"].unique())


def test_simulated_fleet_trees_pass_the_format_checks(tmp_path):
    from baseline.simulator.simulate import simulate

    simulate(tmp_path / "fleet", hosts=2, hours=1, seed=3)
    events = check_trace_event_format(export(tmp_path, tmp_path / "fleet" / "events", "--kind", "failure"))
    assert any(e["ph"] == "X" and e["args"].get("errno") for e in events)
    # records delivered twice (a part file shipped again beside the first) export once, as
    # learn and audit count them (the data-input battery: every event twice)
    from baseline.export import load_events

    once = load_events(tmp_path / "fleet" / "events").height
    part = sorted((tmp_path / "fleet" / "events").rglob("*.parquet"))[0]
    shutil.copy(part, part.with_name("part-99999.parquet"))
    assert load_events(tmp_path / "fleet" / "events").height == once


# --------------------------------------------------------------------------------------------
# user errors: one line, exit 2
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["{missing}"], ["missing.parquet", "no such file"]),
        (["{events}", "--trace-id", "nope"], ["expected events of trace nope", "found none"]),
        (["{events}", "--max-events", "3"], ["expected at most 3 events", "--trace-id"]),
        (["{events}", "--max-events", "0"], ["--max-events", "positive"]),
        (["--diff", "{events}"], ["--diff", "GOOD... BAD"]),
        (["{events}", "--allowlist", "x.yaml"], ["--allowlist", "only with --diff"]),
        (["{events}", "--learned", "x.yaml"], ["--learned", "only with --diff"]),
        (["{events}", "-o", "{tmp}"], ["cannot write", "Is a directory"]),
        (["{events}", "-o", "/proc/tracebase-export.json"], ["cannot write"]),
    ],
)
def test_bad_input(tmp_path, capsys, argv, words):
    events = write_table(reference_call_trees(1), tmp_path / "ev.parquet", "events")
    argv = [a.format(missing=tmp_path / "missing.parquet", events=events, tmp=tmp_path) for a in argv]
    status = main(["export", *argv])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err


LEARNED = """\
version: 1
entries:
  - id: learned-enoent-team-optional-conf
    source: learned
    reason: the team's optional config, absent on most hosts
    probe: openat
    errno: ENOENT
    path: "/etc/team/optional.conf"
"""


def test_diff_export_judges_with_the_learned_list_beside_it_as_diff_does(tmp_path, monkeypatch):
    """`baseline diff` run from a directory holding ./expected_errors.learned.yaml loads it;
    `baseline export --diff` from there does too (it did not: the two could disagree on one pair
    of traces). The export says which lists judged it (otherData.allowlist)."""
    recorded = REPO / "tests" / "recordings" / "c_rehash_readonly"
    traces = [recorded / "good0.parquet", recorded / "good1.parquet", recorded / "bad.parquet"]

    def judged_with(cwd: Path) -> str:
        monkeypatch.chdir(cwd)
        return export(tmp_path, "--diff", *traces)["otherData"]["allowlist"]

    plain = tmp_path / "plain"
    plain.mkdir()
    assert "expected_errors.learned.yaml" not in judged_with(plain)
    team = tmp_path / "team"
    team.mkdir()
    (team / "expected_errors.learned.yaml").write_text(LEARNED)
    assert "expected_errors.learned.yaml" in judged_with(team)
    monkeypatch.chdir(plain)  # ... and one named with --learned, from anywhere
    named = export(tmp_path, "--diff", "--learned", team / "expected_errors.learned.yaml", *traces)
    assert "expected_errors.learned.yaml" in named["otherData"]["allowlist"]
