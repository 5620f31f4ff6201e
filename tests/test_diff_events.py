"""The diff's event details on schema-2 recordings: both paths of two-path calls, the bytes
the bad run wrote (`output`), the informative event after a content-free call, and names
that vary run to run. Traces written as real Parquet through tracer.schema (columns as the
recorder writes them: `path2` for the second path, `output` on writes to stdout/stderr)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from baseline.cli import main
from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")
START = [("execve", None, "/usr/bin/tool", None, None), ("openat", None, "/etc/ld.so.cache", None, None),
         ("close", None, "/etc/ld.so.cache", None, None)]


def trace(path: Path, rows, trace_id: str, pid: int = 100, kind: str = "good") -> Path:
    """rows: (probe, errno, path, path2, output) in one thread."""
    n = len(rows)
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
            "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": ["tool"] * n,
            "probe": [r[0] for r in rows], "depth": [0] * n, "ret": [-1 if r[1] else 0 for r in rows],
            "errno": [r[1] for r in rows], "path": [r[2] for r in rows], "path2": [r[3] for r in rows],
            "output": [r[4] for r in rows], "kind": [kind] * n, "command": ["tool"] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


def test_two_path_call_reports_the_target_that_failed_and_keeps_both(tmp_path):
    body = [("newfstatat", None, "/srv/in/a.txt", None, None),
            ("renameat2", None, "/srv/in/a.txt", "/srv/out/a.txt", None),
            ("exit_group", None, None, None, None)]
    bad_body = [body[0], ("renameat2", "EACCES", "/srv/in/a.txt", "/srv/out/a.txt", None),
                ("write", None, "/dev/pts/0", None, "mv: cannot move 'a.txt': Permission denied\n"),
                body[2]]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}", pid=10 + i) for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b", pid=99, kind="failure")
    r = diff_traces(g, b, expected=NONE)
    bif = r.bifurcation
    assert (bif["probe"], bif["errno"], bif["path"], bif["path2"]) == (
        "renameat2", "EACCES", "/srv/out/a.txt", "/srv/in/a.txt")
    assert bif["then_wrote"] == "mv: cannot move 'a.txt': Permission denied\n"
    text = r.render_text()
    assert "renameat2 /srv/out/a.txt (other path: /srv/in/a.txt) -> EACCES" in text
    assert 'the bad run then wrote: "mv: cannot move \'a.txt\': Permission denied\\n"' in text


def test_a_message_cut_at_its_first_characters_says_so(tmp_path):
    body = [("newfstatat", None, "/srv/in/a.txt", None, None),
            ("renameat2", None, "/srv/in/a.txt", "/srv/out/a.txt", None),
            ("exit_group", None, None, None, None)]
    long = "mv: cannot move 'a.txt': Permission denied; " + "x" * 300 + "\n"
    bad_body = [body[0], ("renameat2", "EACCES", "/srv/in/a.txt", "/srv/out/a.txt", None),
                ("write", None, "/dev/pts/0", None, long), body[2]]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}", pid=10 + i) for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b", pid=99, kind="failure")
    r = diff_traces(g, b, expected=NONE)
    assert r.bifurcation["then_wrote"] == long[:256]
    assert "the bad run then wrote (its first 256 characters): \"mv: cannot move" in r.render_text()


def test_source_blamed_when_the_bad_run_shows_it_missing(tmp_path):
    # The source failing the same way just before (a routine probe the good runs also make,
    # so not itself an anomaly) says the source is what is missing.
    body = [("access", "ENOENT", "/srv/in/a.txt", None, None),
            ("linkat", None, "/srv/in/a.txt", "/srv/out/a.txt", None)]
    bad_body = [("access", "ENOENT", "/srv/in/a.txt", None, None),
                ("linkat", "ENOENT", "/srv/in/a.txt", "/srv/out/a.txt", None)]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}") for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b")
    bif = diff_traces(g, b).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"], bif["path2"]) == (
        "linkat", "ENOENT", "/srv/in/a.txt", "/srv/out/a.txt")
    # Without that evidence, the target's directory is what is missing.
    b2 = trace(tmp_path / "b2.parquet", START + bad_body[1:], "b2")
    g2 = [trace(tmp_path / f"h{i}.parquet", START + body[1:], f"h{i}") for i in range(2)]
    bif = diff_traces(g2, b2).bifurcation
    assert (bif["path"], bif["path2"]) == ("/srv/out/a.txt", "/srv/in/a.txt")


@pytest.mark.parametrize(("source", "target"), [("/var/log/app/epilog.log.3", "/var/log/app/epilog.log.4"),
                                                ("/var/log/app/old/epilog.log.3", "/var/log/app/epilog.log.4"),
                                                ("/epilog.log.3", "/epilog.log.4"),
                                                ("old/epilog.log.3", "epilog.log.4")])  # relative: the cwd
def test_a_lookup_error_is_the_sources_when_the_targets_directory_is_on_its_path(tmp_path, source, target):
    # a log rotation's mv chain (real_fiftyfirst: `mv -f log.3 log.4` with log.3 removed):
    # renameat2 ENOENT, and nothing before says the source is missing (mv stats it only after)
    # -- but the target's directory is the source's, or one of its ancestors: that lookup
    # cannot fail where the source's succeeded, so the missing name is the source
    body = [("renameat2", None, source, target, None), ("exit_group", None, None, None, None)]
    bad_body = [("renameat2", "ENOENT", source, target, None), ("newfstatat", "ENOENT", source, None, None),
                ("write", None, "/dev/pts/0", None, "mv: cannot stat: No such file or directory\n"), body[1]]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}", pid=10 + i) for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b", pid=99, kind="failure")
    bif = diff_traces(g, b, expected=NONE).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"], bif["path2"]) == ("renameat2", "ENOENT", source, target)


def test_an_entry_matching_the_second_path_makes_the_error_expected(tmp_path):
    body = [("renameat", "EXDEV", "/srv/in/a.txt", "/mnt/other/a.txt", None), ("exit_group", None, None, None, None)]
    g = [trace(tmp_path / "g.parquet", START + [("renameat", None, "/srv/in/b.txt", "/srv/in/c.txt", None),
                                                 body[1]], "g")]
    b = trace(tmp_path / "b.parquet", START + [("renameat", None, "/srv/in/b.txt", "/srv/in/c.txt", None)] + body, "b")
    from baseline.run.allowlist import Entry

    allow = ExpectedErrors([Entry("cross-fs", "curated", "renameat", "EXDEV", reason="mv falls back to copy",
                                  path="/mnt/**")])
    r = diff_traces(g, b, expected=allow)
    assert r.expected_ignored["by_entry"]["cross-fs"]["count"] == 1


def test_an_entry_naming_a_caller_covers_that_process_only(tmp_path):
    """`comm:` on an entry: routine for the process it names (here `tool`), not for another."""
    body = [("renameat", "EXDEV", "/srv/in/a.txt", "/mnt/other/a.txt", None), ("exit_group", None, None, None, None)]
    g = [trace(tmp_path / "g.parquet", START + [("renameat", None, "/srv/in/b.txt", "/srv/in/c.txt", None),
                                                 body[1]], "g")]
    b = trace(tmp_path / "b.parquet", START + [("renameat", None, "/srv/in/b.txt", "/srv/in/c.txt", None)] + body, "b")
    from baseline.run.allowlist import Entry

    def ignored(comm: str) -> int:
        allow = ExpectedErrors([Entry("cross-fs", "curated", "renameat", "EXDEV", reason="mv falls back to copy",
                                      comm=comm)])
        return diff_traces(g, b, expected=allow).expected_ignored["by_entry"].get("cross-fs", {}).get("count", 0)

    assert ignored("to?l") == 1
    assert ignored("rsync") == 0


def test_content_free_divergence_shows_the_next_informative_event(tmp_path):
    body = [("openat", None, "/srv/conf", None, None), ("read", None, "/srv/conf", None, None),
            ("exit_group", None, None, None, None)]
    bad_body = [("openat", None, "/srv/conf", None, None), ("getpid", None, None, None, None),
                ("write", None, "/dev/pts/0", None, "tool: bad value for 'threads' on line 3\n"),
                ("exit_group", None, None, None, None)]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}") for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b")
    status = main(["diff", *map(str, g), str(b), "--json", "--no-learn"])
    assert status == 1


def test_content_free_divergence_json_and_text(tmp_path, capsys):
    body = [("openat", None, "/srv/conf", None, None), ("read", None, "/srv/conf", None, None),
            ("exit_group", None, None, None, None)]
    bad_body = [("openat", None, "/srv/conf", None, None), ("getpid", None, None, None, None),
                ("write", None, "/dev/pts/0", None, "tool: bad value for 'threads' on line 3\n"),
                ("exit_group", None, None, None, None)]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}") for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b")
    assert main(["diff", *map(str, g), str(b), "--json", "--allowlist", str(_empty(tmp_path))]) == 1
    obj = json.loads(capsys.readouterr().out)
    bif = obj["bifurcation"]
    assert bif["probe"] == "getpid" and bif["errno"] is None
    assert bif["next_event"]["probe"] == "write"
    assert bif["next_event"]["output"] == "tool: bad value for 'threads' on line 3\n"
    assert bif["then_wrote"] == "tool: bad value for 'threads' on line 3\n"
    assert main(["diff", *map(str, g), str(b), "--allowlist", str(_empty(tmp_path))]) == 1
    text = capsys.readouterr().out
    assert "  then: seq 5: write /dev/pts/0 wrote \"tool: bad value" in text
    assert "the bad run then wrote: \"tool: bad value for 'threads' on line 3\\n\"" in text


def _empty(tmp_path: Path) -> Path:
    p = tmp_path / "empty.yaml"
    p.write_text("version: 1\nentries: []\n")
    return p


@pytest.mark.parametrize(
    ("good_names", "bad_name"),
    [
        # mkstemp in /tmp: a random token mixing character classes
        (["/tmp/ccQ3xZpa.s", "/tmp/ccM1kLw9.s"], "/tmp/cc7TyHq2.s"),
        # beside the target, lowercase only: learned from what varies between the good runs
        (["/srv/d/sedkqwhzt", "/srv/d/sedpfmvbx"], "/srv/d/sedyrjcnd"),
        # per-run object ids in a fan-out directory, the same in both good runs (same second)
        (["/r/.git/objects/3f/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"] * 2,
         "/r/.git/objects/c2/0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f708192"),
    ],
)
def test_run_to_run_varying_names_are_not_new_behaviour(tmp_path, good_names, bad_name):
    def body(name):
        return [("openat", None, name, None, None), ("write", None, name, None, None),
                ("unlink", None, name, None, None), ("exit_group", None, None, None, None)]

    g = [trace(tmp_path / f"g{i}.parquet", START + body(n), f"g{i}") for i, n in enumerate(good_names)]
    b = trace(tmp_path / "b.parquet", START + body(bad_name), "b")
    r = diff_traces(g, b, expected=NONE)
    assert not r.anomaly, r.bifurcation


def test_a_fault_at_a_varying_name_is_still_named(tmp_path):
    def body(name, errno=None):
        return [("openat", errno, name, None, None), ("exit_group", None, None, None, None)]

    g = [trace(tmp_path / f"g{i}.parquet", START + body(n), f"g{i}")
         for i, n in enumerate(["/tmp/sortQ3xZpa", "/tmp/sortM1kLw9"])]
    b = trace(tmp_path / "b.parquet", START + body("/tmp/sort7TyHq2", "EACCES"), "b")
    bif = diff_traces(g, b, expected=NONE).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("openat", "EACCES", "/tmp/sort7TyHq2")
    assert bif["npath"] == "/tmp/<rand>"


def test_outcome_change_outranks_novelty(tmp_path):
    # good runs: readlink(p) fails ENOENT (routine); bad: the same call fails ENOTDIR, and a
    # later unrecovered hard error at a path no good run had
    body = [("readlink", "ENOENT", "/srv/app/current", None, None), ("openat", None, "/srv/app/x", None, None),
            ("exit_group", None, None, None, None)]
    bad_body = [("readlink", "ENOTDIR", "/srv/app/current", None, None),
                ("openat", "EACCES", "/srv/app/fallback", None, None)]
    g = [trace(tmp_path / f"g{i}.parquet", START + body, f"g{i}") for i in range(2)]
    b = trace(tmp_path / "b.parquet", START + bad_body, "b")
    r = diff_traces(g, b)
    assert (r.bifurcation["probe"], r.bifurcation["errno"]) == ("readlink", "ENOTDIR")


def _with_status(path: Path, status: int) -> Path:
    """The trace at `path` rewritten with the command's exit status in every row (as tracer
    record writes it)."""
    df = pl.read_parquet(path).with_columns(pl.lit(status, dtype=pl.Int32).alias("exit_status"))
    return write_table(df, path, "events")


# zstd --rm of a log another account owns, in a sticky spool (as `strace -f` shows it): the
# .zst is written, copying the log's owner to it fails chown EPERM twice (ignored: chmod goes
# on as in the good runs), then the log's unlink fails EPERM and zstd reports that one.
ZST, LOG = "/spool/service.log.zst", "/spool/service.log"
ZSTD_GOOD = [("openat", None, LOG, None, None), ("openat", None, ZST, None, None), ("write", None, ZST, None, None),
             ("close", None, ZST, None, None), ("utimensat", None, ZST, None, None), ("chown", None, ZST, None, None),
             ("chmod", None, ZST, None, None), ("chown", None, ZST, None, None), ("close", None, LOG, None, None),
             ("newfstatat", None, LOG, None, None), ("unlink", None, LOG, None, None),
             ("exit_group", None, None, None, None)]


def _zstd_bad(report_chown: bool = False) -> list[tuple]:
    """The bad run: both chowns EPERM, the unlink EPERM and zstd's message; with `report_chown`
    a message right after the first chown's error too."""
    bad = [(c, "EPERM", pth, p2, o) if c in ("chown", "unlink") else (c, e, pth, p2, o)
           for c, e, pth, p2, o in ZSTD_GOOD]
    bad.insert(11, ("write", None, "/dev/pts/0", None, f"zstd: {LOG}: Operation not permitted\n"))
    if report_chown:
        bad.insert(6, ("write", None, "/dev/pts/0", None, f"zstd: {ZST}: cannot change owner\n"))
    return bad


def test_an_error_passed_over_in_silence_does_not_name_the_region_the_message_reports(tmp_path):
    g = [_with_status(trace(tmp_path / f"g{i}.parquet", START + ZSTD_GOOD, f"g{i}", pid=10 + i), 0) for i in range(2)]
    b = _with_status(trace(tmp_path / "b.parquet", START + _zstd_bad(), "b", pid=99, kind="failure"), 1)
    bif = diff_traces(g, b, expected=NONE).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("unlink", "EPERM", LOG)


def test_a_reported_error_under_the_earlier_errors_path_keeps_the_earlier_one(tmp_path):
    # the later error is on a path under the earlier one's (a directory not made, then a file
    # in it): the earlier error is the cause, whatever the message quotes
    good = [("mkdir", None, "/srv/out", None, None), ("openat", None, "/srv/out/a.txt", None, None),
            ("write", None, "/srv/out/a.txt", None, None), ("exit_group", None, None, None, None)]
    bad = [("mkdir", "EACCES", "/srv/out", None, None), ("openat", "EACCES", "/srv/out/a.txt", None, None),
           ("write", None, "/dev/pts/0", None, "tool: /srv/out/a.txt: Permission denied\n"),
           ("exit_group", None, None, None, None)]
    g = [_with_status(trace(tmp_path / f"g{i}.parquet", START + good, f"g{i}", pid=10 + i), 0) for i in range(2)]
    b = _with_status(trace(tmp_path / "b.parquet", START + bad, "b", pid=99, kind="failure"), 1)
    bif = diff_traces(g, b, expected=NONE).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("mkdir", "EACCES", "/srv/out")


def test_an_error_the_thread_reported_keeps_the_name_before_a_later_one(tmp_path):
    # the thread wrote a message right after the first error: it was reported, not passed over
    bad = _zstd_bad(report_chown=True)
    g = [_with_status(trace(tmp_path / f"g{i}.parquet", START + ZSTD_GOOD, f"g{i}", pid=10 + i), 0) for i in range(2)]
    b = _with_status(trace(tmp_path / "b.parquet", START + bad, "b", pid=99, kind="failure"), 1)
    bif = diff_traces(g, b, expected=NONE).bifurcation
    assert (bif["probe"], bif["errno"], bif["path"]) == ("chown", "EPERM", ZST)
