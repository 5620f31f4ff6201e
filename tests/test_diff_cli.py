"""`baseline diff` and `baseline allowlist learn` from the command line: results and every
user-error path (one line naming the file/field, exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from baseline.cli import main
from tracer.schema import write_table

PROGRAM = [("execve", None, "/usr/bin/prog"), ("openat", None, "/etc/ld.so.cache"), ("close", None, None),
           ("openat", None, "/srv/in.txt"), ("read", None, None), ("close", None, None),
           ("write", None, None), ("exit_group", None, None)]


def trace_frame(trace_id: str, program=PROGRAM, command: str = "prog /srv/in.txt", pid: int = 10) -> pl.DataFrame:
    n = len(program)
    return pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [i * 10 for i in range(n)],
            "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": ["prog"] * n,
            "probe": [p for p, _, _ in program], "depth": [0] * n,
            "ret": [-1 if e else 0 for _, e, _ in program], "errno": [e for _, e, _ in program],
            "path": [x for _, _, x in program], "kind": ["good"] * n, "command": [command] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )


def write(path: Path, *frames: pl.DataFrame) -> Path:
    return write_table(pl.concat(frames), path, "events")


@pytest.fixture
def traces(tmp_path):
    good = write(tmp_path / "good.parquet", trace_frame("g1"))
    same = write(tmp_path / "same.parquet", trace_frame("b0", pid=77))
    failing = PROGRAM[:3] + [("openat", "EACCES", "/srv/in.txt"), ("write", None, None), ("exit_group", None, None)]
    bad = write(tmp_path / "bad.parquet", trace_frame("b1", failing, pid=88))
    return good, same, bad


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def assert_user_error(capsys, argv, *fragments):
    status, out, err = run_cli(capsys, *argv)
    assert status == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("baseline: error: ")
    for f in fragments:
        assert str(f) in lines[0], (f, lines[0])


# ------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------
def test_no_anomaly_exits_0(capsys, traces):
    good, same, _ = traces
    status, out, _ = run_cli(capsys, "diff", good, same)
    assert status == 0
    assert out.startswith("no anomaly")


def test_anomaly_exits_1_and_json_has_the_documented_fields(capsys, traces):
    good, _, bad = traces
    status, out, _ = run_cli(capsys, "diff", good, bad, "--json", "--context", "2")
    assert status == 1
    obj = json.loads(out)
    assert obj["anomaly"] is True
    b = obj["bifurcation"]
    assert (b["probe"], b["errno"], b["path"], b["position"]) == ("openat", "EACCES", "/srv/in.txt", 3)
    assert set(b) >= {"probe", "errno", "path", "process", "position", "last_common", "good_instead", "score", "rank"}
    assert [e["probe"] for e in b["last_common"]] == ["openat", "close"]
    assert b["good_instead"][0]["path"] == "/srv/in.txt" and b["good_instead"][0]["errno"] is None
    assert obj["anomalies"][0] == b
    assert set(obj["expected_ignored"]) == {"total", "by_entry"}
    assert obj["good_traces"] == ["g1"] and obj["bad_trace"] == "b1"


def test_text_report_names_the_bifurcation(capsys, traces):
    good, _, bad = traces
    status, out, _ = run_cli(capsys, "diff", good, bad)
    assert status == 1
    assert out.splitlines()[0] == "bifurcation: openat /srv/in.txt -> EACCES"
    assert "good runs did instead:" in out


def test_directory_of_good_traces_and_trace_id_selection(capsys, tmp_path, traces):
    gdir = tmp_path / "goods"
    write(gdir / "a.parquet", trace_frame("g1"), trace_frame("g2", pid=11))
    write(gdir / "sub" / "b.parquet", trace_frame("g3", pid=12))
    _, _, bad = traces
    multi = write(tmp_path / "multi.parquet", pl.read_parquet(bad).select(trace_frame("x").columns), trace_frame("ok", pid=5))
    status, out, _ = run_cli(capsys, "diff", gdir, multi, "--trace-id", "ok", "--json")
    assert status == 0
    assert json.loads(out)["good_traces"] == ["g1", "g2", "g3"]
    status, out, _ = run_cli(capsys, "diff", gdir, multi, "--trace-id", "b1", "--json")
    assert status == 1


def test_mixed_commands_accepted_with_flag(capsys, tmp_path, traces):
    _, same, _ = traces
    g = write(tmp_path / "g.parquet", trace_frame("g1"), trace_frame("g2", command="other --flag"))
    status, _, _ = run_cli(capsys, "diff", g, same, "--mixed")
    assert status == 0


def test_good_commands_differing_only_in_temp_names_are_one_command(capsys, tmp_path, traces):
    _, same, _ = traces
    g = write(tmp_path / "g.parquet", trace_frame("g1", command="prog /tmp/tmpab12cd_x/in"),
              trace_frame("g2", command="prog /tmp/tmpzz81q_0p/in"))
    status, _, _ = run_cli(capsys, "diff", g, same)
    assert status == 0


def test_good_commands_differing_only_in_envs_settings_are_one_command(capsys, tmp_path, traces):
    # env(1)'s options and NAME=VALUE words are the run's environment (a crontab's env -i HOME=...)
    _, same, _ = traces
    g = write(tmp_path / "g.parquet", trace_frame("g1", command="env -i TZ=Asia/Tokyo LANG=C /usr/bin/stat -c %y f"),
              trace_frame("g2", command="/usr/bin/env -u HOME TZ=UTC -- /usr/bin/stat -c %y f"))
    status, _, err = run_cli(capsys, "diff", g, same)
    assert status == 0, err


@pytest.mark.parametrize("other", ["env -i TZ=UTC /usr/bin/stat -c %s f", "env -i TZ=UTC /usr/bin/ls f",
                                   "/usr/bin/stat -c %y f"])
def test_good_commands_through_env_running_another_program_or_arguments_are_refused(capsys, tmp_path, traces, other):
    g = write(tmp_path / "g.parquet", trace_frame("g1", command="env -i TZ=Asia/Tokyo /usr/bin/stat -c %y f"),
              trace_frame("g2", command=other))
    assert_user_error(capsys, ["diff", g, traces[1]], g, "command", "expected good traces of one command")


# ------------------------------------------------------------------------------------------
# user errors of `baseline diff`
# ------------------------------------------------------------------------------------------
def test_missing_good_file(capsys, tmp_path, traces):
    assert_user_error(capsys, ["diff", tmp_path / "nope.parquet", traces[2]], tmp_path / "nope.parquet", "no such file")


def test_missing_bad_file(capsys, tmp_path, traces):
    assert_user_error(capsys, ["diff", traces[0], tmp_path / "nope.parquet"], "nope.parquet", "no such file")


def test_not_parquet(capsys, tmp_path, traces):
    junk = tmp_path / "junk.parquet"
    junk.write_text("strace output, not parquet\n")
    assert_user_error(capsys, ["diff", junk, traces[2]], junk, "expected a Parquet file")


def test_wrong_table(capsys, tmp_path, traces):
    other = tmp_path / "counters.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    assert_user_error(capsys, ["diff", traces[0], other], other, "expected a tracebase 'events' table")


def test_wrong_schema_version(capsys, tmp_path, traces):
    old = tmp_path / "old.parquet"
    t = pq.read_table(traces[0])
    meta = {**t.schema.metadata, b"tracebase.schema_version": b"0"}
    pq.write_table(t.replace_schema_metadata(meta), old)
    assert_user_error(capsys, ["diff", old, traces[2]], old, "expected schema version 1 or 2, found schema version 0")


def test_empty_directory(capsys, tmp_path, traces):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_user_error(capsys, ["diff", empty, traces[2]], empty, "holds no .parquet files")


def test_empty_trace(capsys, tmp_path, traces):
    empty = write(tmp_path / "empty.parquet", trace_frame("e").head(0))
    assert_user_error(capsys, ["diff", traces[0], empty], empty, "expected events, found an empty trace")


def test_good_traces_of_different_commands_refused(capsys, tmp_path, traces):
    g = write(tmp_path / "g.parquet", trace_frame("g1"), trace_frame("g2", command="other --flag"))
    assert_user_error(capsys, ["diff", g, traces[1]], g, "command", "expected good traces of one command, found 2", "--mixed")


def test_bad_with_several_traces_needs_trace_id(capsys, tmp_path, traces):
    multi = write(tmp_path / "multi.parquet", trace_frame("x1"), trace_frame("x2", pid=3))
    assert_user_error(capsys, ["diff", traces[0], multi], multi, "expected one bad trace, found 2", "--trace-id")
    assert_user_error(capsys, ["diff", traces[0], multi, "--trace-id", "x9"], multi, "trace_id: expected 'x9'")
    # an empty id is the flag's fault, not the file's (battery 49)
    assert_user_error(capsys, ["diff", traces[0], multi, "--trace-id", ""],
                      "--trace-id: expected a trace id, found '' (an empty argument)")
    assert_user_error(capsys, ["export", multi, "--trace-id", ""],
                      "--trace-id: expected a trace id, found '' (an empty argument)")
    assert_user_error(capsys, ["export", multi, "--host", ""],
                      "--host: expected a host name, found '' (an empty argument)")


def test_only_one_trace_argument(capsys, traces):
    assert_user_error(capsys, ["diff", traces[0]], "expected at least one GOOD and one BAD trace")


def test_bad_numeric_options(capsys, traces):
    assert_user_error(capsys, ["diff", traces[0], traces[2], "--context", "-1"], "--context", "found '-1'")
    assert_user_error(capsys, ["diff", traces[0], traces[2], "-k", "0"], "--window", "found '0'")


def test_bad_yaml_allowlist(capsys, tmp_path, traces):
    allow = tmp_path / "allow.yaml"
    allow.write_text("version: 1\nentries:\n  - id: x\n    source: curated\n    probe: [unclosed\n")
    assert_user_error(capsys, ["diff", traces[0], traces[2], "--allowlist", allow], allow, "invalid YAML at line")


def test_allowlist_entry_missing_field(capsys, tmp_path, traces):
    allow = tmp_path / "allow.yaml"
    allow.write_text(yaml.safe_dump({"version": 1, "entries": [
        {"id": "ok", "source": "curated", "reason": "r", "probe": "read", "errno": "EAGAIN"},
        {"id": "nop", "source": "curated", "reason": "r", "errno": "ENOENT"}]}))
    assert_user_error(capsys, ["diff", traces[0], traces[2], "--allowlist", allow], allow, "entries[1]", "field 'probe'")


def test_allowlist_unknown_errno(capsys, tmp_path, traces):
    allow = tmp_path / "allow.yaml"
    allow.write_text(yaml.safe_dump({"version": 1, "entries": [
        {"id": "x", "source": "curated", "reason": "r", "probe": "read", "errno": "EWHATEVER"}]}))
    assert_user_error(capsys, ["diff", traces[0], traces[2], "--allowlist", allow], allow, "entries[0]",
                      "field 'errno'", "found 'EWHATEVER'")


def test_missing_allowlist(capsys, tmp_path, traces):
    assert_user_error(capsys, ["diff", traces[0], traces[2], "--allowlist", tmp_path / "no.yaml"], "no.yaml", "no such file")


def test_allowlist_makes_the_error_expected(capsys, tmp_path, traces):
    good, _, _ = traces
    probing = PROGRAM[:3] + [("openat", "EACCES", "/srv/optional.conf")] + PROGRAM[3:]
    bad = write(tmp_path / "probing.parquet", trace_frame("b2", probing, pid=91))
    allow = tmp_path / "allow.yaml"
    allow.write_text(yaml.safe_dump({"version": 1, "entries": [
        {"id": "srv-eacces", "source": "curated", "reason": "test", "probe": "openat", "errno": "EACCES",
         "path": "/srv/*"}]}))
    status, out, _ = run_cli(capsys, "diff", good, bad, "--allowlist", allow, "--json")
    obj = json.loads(out)
    assert obj["expected_ignored"]["by_entry"]["srv-eacces"]["count"] == 1
    assert status == 0 and obj["bifurcation"] is None


def test_no_allowlist_entry_covers_an_error_where_good_runs_succeeded(capsys, tmp_path, traces):
    # The good run opened /srv/in.txt successfully: the same call failing is never routine,
    # whatever the allowlist says.
    good, _, bad = traces
    allow = tmp_path / "allow.yaml"
    allow.write_text(yaml.safe_dump({"version": 1, "entries": [
        {"id": "srv-eacces", "source": "curated", "reason": "test", "probe": "openat", "errno": "EACCES",
         "path": "/srv/*"}]}))
    status, out, _ = run_cli(capsys, "diff", good, bad, "--allowlist", allow, "--json")
    obj = json.loads(out)
    assert status == 1
    assert "srv-eacces" not in obj["expected_ignored"]["by_entry"]
    b = obj["bifurcation"]
    assert (b["probe"], b["errno"], b["path"]) == ("openat", "EACCES", "/srv/in.txt")


# ------------------------------------------------------------------------------------------
# `baseline allowlist learn`
# ------------------------------------------------------------------------------------------
def test_allowlist_learn_merges_without_touching_curated(capsys, tmp_path):
    probing = PROGRAM[:1] + [("openat", "ENOENT", "/home/u/.prog.rc"), ("ioctl", "ENOTTY", None)] + PROGRAM[1:]
    g = write(tmp_path / "g.parquet", trace_frame("g1", probing), trace_frame("g2", PROGRAM, pid=3))
    out = tmp_path / "allow.yaml"
    out.write_text(yaml.safe_dump({"version": 1, "entries": [
        {"id": "tty", "source": "curated", "reason": "isatty", "probe": "ioctl", "errno": "ENOTTY"}]}))
    status, stdout, _ = run_cli(capsys, "allowlist", "learn", g, "-o", out)
    assert status == 0
    assert "learned 2 expected error(s) from 2 good trace(s): 1 added" in stdout
    doc = yaml.safe_load(out.read_text())
    assert doc["entries"][0] == {"id": "tty", "source": "curated", "reason": "isatty", "probe": "ioctl",
                                 "errno": "ENOTTY"}  # as written
    learned = doc["entries"][1]
    assert (learned["source"], learned["probe"], learned["errno"], learned["path"]) == (
        "learned", "openat", "ENOENT", "/home/u/.prog.rc")
    assert learned["support"] == {"runs": 1, "total": 2}
    assert {"first_seen", "last_seen"} <= set(learned)
    # min-support drops errors seen in too few runs.
    fresh = tmp_path / "fresh.yaml"
    run_cli(capsys, "allowlist", "learn", g, "-o", fresh, "--min-support", "0.9")
    assert yaml.safe_load(fresh.read_text())["entries"] == []


def test_allowlist_learn_writes_its_own_file_and_diff_loads_it(capsys, tmp_path, monkeypatch):
    # Learned entries go to ./expected_errors.learned.yaml, never into the curated list;
    # `baseline diff` run from that directory loads both.
    from baseline.run.allowlist import DEFAULT_PATH

    curated_before = DEFAULT_PATH.read_bytes()
    probing = PROGRAM[:1] + [("openat", "ENOENT", "/home/u/.prog.rc")] + PROGRAM[1:]
    g = write(tmp_path / "g.parquet", trace_frame("g1", probing))
    bad = write(tmp_path / "b.parquet", trace_frame("b1", probing, pid=5))
    monkeypatch.chdir(tmp_path)
    status, stdout, _ = run_cli(capsys, "allowlist", "learn", g)
    assert status == 0 and "-> expected_errors.learned.yaml" in stdout
    assert DEFAULT_PATH.read_bytes() == curated_before
    learned = yaml.safe_load((tmp_path / "expected_errors.learned.yaml").read_text())
    assert [e["path"] for e in learned["entries"]] == ["/home/u/.prog.rc"]
    status, out, _ = run_cli(capsys, "diff", g, bad, "--json", "--no-learn")
    obj = json.loads(out)
    assert status == 0
    assert obj["settings"]["allowlist"].endswith("expected_errors.learned.yaml")
    assert [v["source"] for v in obj["expected_ignored"]["by_entry"].values()] == ["learned"]


def test_allowlist_rewrite_keeps_comments_and_order(capsys, tmp_path):
    probing = PROGRAM[:1] + [("openat", "ENOENT", "/home/u/.prog.rc")] + PROGRAM[1:]
    g = write(tmp_path / "g.parquet", trace_frame("g1", probing))
    out = tmp_path / "allow.yaml"
    original = (
        "# Team allowlist: keep this header.\n"
        "version: 1\n"
        "entries:\n"
        "  # terminals: stdio redirected in CI\n"
        "  - id: tty\n"
        "    source: curated\n"
        "    reason: isatty on a pipe   # why it is routine\n"
        "    probe: \"ioctl\"\n"
        "    errno: ENOTTY\n"
    )
    out.write_text(original)
    assert run_cli(capsys, "allowlist", "learn", g, "-o", out)[0] == 0
    text = out.read_text()
    assert text.startswith(original)  # untouched, comments and quoting included
    assert "/home/u/.prog.rc" in text.split(original, 1)[1]
    assert run_cli(capsys, "allowlist", "learn", g, "-o", out)[0] == 0  # idempotent apart from dates
    assert out.read_text().startswith(original)


def test_allowlist_learn_errors(capsys, tmp_path, traces):
    out = tmp_path / "out.yaml"
    assert_user_error(capsys, ["allowlist", "learn", tmp_path / "none.parquet", "-o", out], "none.parquet", "no such file")
    assert_user_error(capsys, ["allowlist", "learn", traces[0], "--min-support", "1.5", "-o", out], "--min-support", "found '1.5'")
    assert not out.exists()
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 7\nentries: []\n")
    assert_user_error(capsys, ["allowlist", "learn", traces[0], "-o", broken], broken, "field 'version': expected 1, found 7")
    g = write(tmp_path / "g.parquet", trace_frame("g1"), trace_frame("g2", command="other"))
    assert_user_error(capsys, ["allowlist", "learn", g, "-o", tmp_path / "x.yaml"], "expected good traces of one command")


def test_diff_cli_does_not_load_polars(traces):
    # polars costs about a second to import and the diff does not need it (tracer.schema
    # imports it lazily). Run in a fresh interpreter: this test process has polars loaded.
    import subprocess
    import sys

    good, _, bad = traces
    code = ("import sys; from baseline.cli import main; "
            f"rc = main(['diff', {str(good)!r}, {str(bad)!r}, '--json']); "
            "sys.stderr.write(f'rc={rc} polars={\"polars\" in sys.modules}')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "rc=1 polars=False" in out.stderr, out.stderr
    assert json.loads(out.stdout)["bifurcation"]["errno"]


@pytest.mark.parametrize("column", ["kind", "probe", "trace_id"])
def test_nulls_in_a_required_column_are_trouble_not_same(capsys, tmp_path, traces, column):
    # A bad trace with nulls where the schema says "never null" must not come out "same"
    # (exit 0): one line naming the file and the column, exit 2.
    good, _, _ = traces
    table = pq.read_table(good)
    i = table.column_names.index(column)
    field = table.schema.field(i).with_nullable(True)
    values = table.column(i).to_pylist()
    values[2] = None
    broken = table.set_column(i, field, pa.array(values, type=field.type))
    path = tmp_path / "nulls.parquet"
    pq.write_table(broken.replace_schema_metadata(table.schema.metadata), path)
    assert_user_error(capsys, ["diff", good, path], path, column)
    assert_user_error(capsys, ["diff", path, good], path, column)


def test_undecodable_file_name_is_read(capsys, tmp_path, traces):
    # tracer.schema opens Parquet files through Python (any byte name), then Arrow reads them
    import os
    import shutil

    good, _, bad = traces
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xffgood.parquet")
    shutil.copy(good, odd)
    status, out, err = run_cli(capsys, "diff", odd, bad)
    assert status == 1 and "bifurcation: openat /srv/in.txt -> EACCES" in out and err == "", (out, err)


def test_a_bad_trace_of_another_command_is_said(tmp_path):
    """`baseline diff ls.parquet job.parquet`: good runs of `ls`, a bad run of another program
    -- a diff of two programs, exit 1 with a meaningless bifurcation and not a word (the
    data-input battery). Now a warning says which commands; --mixed (good runs of several
    commands, knowingly) says nothing."""
    from baseline.run.diff import diff_traces

    def trace(path: Path, command: str, trace_id: str) -> Path:
        rows = {"trace_id": [trace_id] * 2, "seq": [0, 1], "ts_ns": [1, 2], "pid": [7, 7], "tid": [7, 7],
                "ppid": [1, 1], "comm": ["x", "x"], "probe": ["openat", "read"], "layer": ["syscall"] * 2,
                "depth": [0, 0], "ret": [3, 1], "errno": [None, None], "latency_ns": [10, 10],
                "path": ["/etc/hosts", "/etc/hosts"], "kind": ["full"] * 2, "command": [command] * 2}
        write_table(pl.DataFrame(rows), path, "events")
        return path

    goods = [trace(tmp_path / f"g{i}.parquet", "ls /tmp", f"g{i}") for i in range(2)]
    other = diff_traces(goods, trace(tmp_path / "b.parquet", "./job.sh", "b"))
    assert other.warnings == ["the BAD trace ran './job.sh', the GOOD traces 'ls /tmp': a diff of different commands"]
    same = diff_traces(goods, trace(tmp_path / "b2.parquet", "ls /tmp", "b2"))
    assert same.warnings == [] and not same.anomaly
    # the commands as recorded (numbers are masked only to compare them), escaped once
    goods = [trace(tmp_path / f"n{i}.parquet", f"train --rank {i}", f"n{i}") for i in range(2)]
    odd = diff_traces(goods, trace(tmp_path / "b3.parquet", "eval --rank 7 \x1b[2J", "b3"))
    assert odd.warnings == ["the BAD trace ran 'eval --rank 7 \\x1b[2J', the GOOD traces 'train --rank 0': "
                            "a diff of different commands"], odd.warnings


def test_a_trace_holding_its_rows_twice_reads_as_once(capsys, tmp_path):
    """Every row twice (a file re-sent and concatenated, at-least-once shipping): each (trace,
    seq) counts once, its first copy (tracer.schema.RECORD_KEY). The doubled trace read as a
    thread doing everything twice: two good runs' copies were 'no anomaly' for nothing, and a
    doubled good run against a bad one was named at its first repeated frame."""
    good = trace_frame("g1")
    failing = PROGRAM[:3] + [("openat", "EACCES", "/srv/in.txt"), ("write", None, None), ("exit_group", None, None)]
    bad = trace_frame("b1", failing, pid=88)
    once = [write(tmp_path / "good.parquet", good), write(tmp_path / "bad.parquet", bad)]
    twice = [write(tmp_path / "good2.parquet", good, good), write(tmp_path / "bad2.parquet", bad, bad)]
    status, expect, _ = run_cli(capsys, "diff", *once, "--json")
    assert status == 1
    for pair in ((once[0], twice[1]), (twice[0], once[1]), twice):
        status, out, err = run_cli(capsys, "diff", *pair, "--json")
        got, want = json.loads(out), json.loads(expect)
        assert status == 1 and got["bifurcation"] == want["bifurcation"] and got["events"] == want["events"], out
        assert got["warnings"] == [] and err == "", (got["warnings"], err)  # copies of one record: nothing lost
    # ... but another record under a seq already taken (another time: not a copy) is data the diff
    # never looks at, said per side
    other = good.with_columns(pl.col("path").str.replace("/srv/in.txt", "/srv/other.txt"))
    moved = int((good["path"] == "/srv/in.txt").sum())
    mixed = write(tmp_path / "good3.parquet", good, other)
    status, out, err = run_cli(capsys, "diff", mixed, once[1], "--json")
    said = (f"the GOOD traces hold {moved} record sharing trace, thread and seq with another but not its call, "
            "error or path: each seq read once, its first record")
    assert moved == 1
    assert status == 1 and json.loads(out)["warnings"] == [said] and f"baseline diff: warning: {said}" in err, err
    same = write(tmp_path / "same2.parquet", trace_frame("b0", pid=77), trace_frame("b0", pid=77))
    status, out, _ = run_cli(capsys, "diff", twice[0], same)
    assert status == 0 and out.startswith("no anomaly"), out


def _recorded(path: Path, trace_id: str, failures_only: bool, program=PROGRAM) -> Path:
    """A trace as `tracer record` writes it, with (-x) only its failing calls or every call."""
    frame = trace_frame(trace_id, [c for c in program if c[1]] if failures_only else program)
    cell = [{"key": "failures_only", "value": str(failures_only).lower()}]
    frame = frame.with_columns(pl.Series("metadata", [cell] * frame.height))
    return write(path, frame)


def test_a_failing_calls_only_recording_against_full_ones_is_refused(capsys, tmp_path):
    """`tracer record -x` keeps the failing calls alone: diffed against full recordings of the same
    run, every success it lacks reads as a divergence (ls named at its execve or its first
    catalog lookup, exit 1). Refused, naming the files of each kind; -x against -x is a diff."""
    failing = [*PROGRAM[:3], ("openat", "ENOENT", "/usr/lib/locale/C.utf8/LC_IDENTIFICATION"), *PROGRAM[3:]]
    full = [_recorded(tmp_path / f"f{i}.parquet", f"f{i}", False, failing) for i in range(2)]
    only = [_recorded(tmp_path / f"x{i}.parquet", f"x{i}", True, failing) for i in range(2)]
    assert_user_error(capsys, ["diff", *full, only[0]], f"{only[0]}: expected recordings made the same way",
                      "BAD recorded with -x", "GOOD with every call")
    assert_user_error(capsys, ["diff", *only, full[0]], "GOOD recorded with -x", "BAD with every call")
    assert_user_error(capsys, ["diff", only[0], full[1], only[1]], "expected GOOD recordings made the same way")
    assert run_cli(capsys, "diff", only[0], only[1])[0] == 0
    assert run_cli(capsys, "diff", full[0], full[1])[0] == 0
