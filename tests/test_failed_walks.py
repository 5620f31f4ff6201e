"""A search walk that found nothing is named at its first turn no good run missed.

A failed lookup followed by a lookup of the same file name in another directory is a turn of
a search walk, masked as ``<search>/name`` (baseline.run.normalize); the last turn of a walk
that found nothing is followed by no lookup and keeps its path. So when the good runs' walks
miss routinely before they find the file, the bad run's turns match those misses and the last
one alone is new: the diff named the place the program gave up. The shapes below are the calls
strace shows for glibc's setlocale (LC_ALL=en_UK.UTF-8, a locale not installed: six spellings,
then the C locale) and for dash's $PATH lookup of a tool removed from /usr/bin. Traces are
written as real Parquet through tracer.schema.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.allowlist import ExpectedErrors
from baseline.run.diff import diff_traces
from tracer.schema import write_table

NONE = ExpectedErrors([], source="<test>")


def trace(path: Path, rows: list[tuple], trace_id: str, pid: int, comm: str, kind: str = "good") -> Path:
    """rows: (probe, errno, path, output) in one thread."""
    n = len(rows)
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [10 * i for i in range(n)],
            "pid": [pid] * n, "tid": [pid] * n, "ppid": [1] * n, "comm": [comm] * n,
            "probe": [r[0] for r in rows], "depth": [0] * n, "ret": [-1 if r[1] else 0 for r in rows],
            "errno": [r[1] for r in rows], "path": [r[2] for r in rows], "output": [r[3] for r in rows],
            "kind": [kind] * n, "command": [comm] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


def diff(tmp_path: Path, good: list[tuple], bad: list[tuple], comm: str) -> dict:
    goods = [trace(tmp_path / f"g{i}.parquet", good, f"g{i}", 10 + i, comm) for i in range(2)]
    b = trace(tmp_path / "b.parquet", bad, "b", 99, comm, kind="failure")
    bif = diff_traces(goods, b, expected=NONE).bifurcation
    assert bif is not None
    return bif


# --- glibc's setlocale: the good runs miss C.UTF-8 and find C.utf8 -------------------------------
LOCALE = "/usr/lib/locale"
CATEGORIES = ("LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_TELEPHONE")
START = [("execve", None, "/usr/bin/numfmt", None), ("openat", None, "/etc/ld.so.cache", None),
         ("openat", None, "/lib/x86_64-linux-gnu/libc.so.6", None), ("brk", None, None, None),
         ("openat", "ENOENT", f"{LOCALE}/locale-archive", None),
         ("openat", None, "/usr/share/locale/locale.alias", None), ("read", None, "/usr/share/locale/locale.alias", None),
         ("close", None, "/usr/share/locale/locale.alias", None)]
WORK = [("newfstatat", None, "/data/counts.tsv", None), ("read", None, "/data/counts.tsv", None),
        ("write", None, "/dev/pts/0", "shard-0000 491,548,787\n"), ("exit_group", None, None, None)]


def _category(name: str, found: str) -> list[tuple]:
    return [("openat", "ENOENT", f"{LOCALE}/C.UTF-8/{name}", None), ("openat", None, f"{LOCALE}/{found}/{name}", None),
            ("newfstatat", None, f"{LOCALE}/{found}/{name}", None), ("mmap", None, f"{LOCALE}/{found}/{name}", None),
            ("close", None, f"{LOCALE}/{found}/{name}", None)]


GOOD_LOCALE = START + [row for c in CATEGORIES for row in _category(c, "C.utf8")] + WORK
SPELLINGS = ("en_UK.UTF-8", "en_UK.utf8", "en_UK", "en.UTF-8", "en.utf8", "en")


def test_a_locale_not_installed_is_named_by_the_spelling_asked_for(tmp_path):
    bad = START + [("openat", "ENOENT", f"{LOCALE}/{s}/LC_IDENTIFICATION", None) for s in SPELLINGS] + WORK
    bif = diff(tmp_path, GOOD_LOCALE, bad, "numfmt")
    assert (bif["probe"], bif["errno"], bif["path"]) == ("openat", "ENOENT", f"{LOCALE}/en_UK.UTF-8/LC_IDENTIFICATION")


def test_the_allocators_calls_between_turns_do_not_end_the_walk(tmp_path):
    bad = START + [("openat", "ENOENT", f"{LOCALE}/en_UK.UTF-8/LC_IDENTIFICATION", None), ("brk", None, None, None),
                   ("futex", None, None, None)]
    bad += [("openat", "ENOENT", f"{LOCALE}/{s}/LC_IDENTIFICATION", None) for s in SPELLINGS[1:]] + WORK
    bif = diff(tmp_path, GOOD_LOCALE, bad, "numfmt")
    assert bif["path"] == f"{LOCALE}/en_UK.UTF-8/LC_IDENTIFICATION"


# --- dash's $PATH lookup: the good runs miss three directories and find the tool in /usr/bin ---------
PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SH = [("execve", None, "/bin/sh", None), ("openat", None, "/etc/ld.so.cache", None),
      ("openat", None, "/lib/x86_64-linux-gnu/libc.so.6", None), ("newfstatat", None, "/job/run.sh", None)]


def test_a_tool_removed_from_path_is_named_where_the_good_runs_found_it(tmp_path):
    good = SH + [("execve", "ENOENT", f"{d}/nvidia-smi", None) for d in PATH_DIRS[:3]]
    good += [("execve", None, "/usr/bin/nvidia-smi", None), ("exit_group", None, None, None)]
    bad = SH + [("execve", "ENOENT", f"{d}/nvidia-smi", None) for d in PATH_DIRS]
    bad += [("write", None, "/dev/pts/0", "sh: 1: nvidia-smi: not found\n"), ("exit_group", None, None, None)]
    bif = diff(tmp_path, good, bad, "sh")
    assert (bif["probe"], bif["errno"], bif["path"]) == ("execve", "ENOENT", "/usr/bin/nvidia-smi")


def test_a_walk_new_only_at_its_last_turn_keeps_that_turn(tmp_path):
    """The good runs miss /usr/local/sbin and find the tool in /usr/local/bin; the bad run's walk
    misses both and stops there (a PATH of two directories): its last turn is the first no good
    run missed, and stays named."""
    good = SH + [("execve", "ENOENT", "/usr/local/sbin/nvidia-smi", None),
                 ("execve", None, "/usr/local/bin/nvidia-smi", None), ("exit_group", None, None, None)]
    bad = SH + [("execve", "ENOENT", "/usr/local/sbin/nvidia-smi", None),
                ("execve", "ENOENT", "/usr/local/bin/nvidia-smi", None),
                ("write", None, "/dev/pts/0", "sh: 1: nvidia-smi: not found\n"), ("exit_group", None, None, None)]
    bif = diff(tmp_path, good, bad, "sh")
    assert (bif["probe"], bif["errno"], bif["path"]) == ("execve", "ENOENT", "/usr/local/bin/nvidia-smi")


def test_a_lookup_that_is_no_walk_keeps_its_name(tmp_path):
    """A failed open after a failed open of another file name is no walk: the second is named
    as before (the config the good runs read)."""
    good = SH + [("openat", "ENOENT", "/etc/job/optional.conf", None), ("openat", None, "/etc/job/job.conf", None),
                 ("read", None, "/etc/job/job.conf", None), ("exit_group", None, None, None)]
    bad = SH + [("openat", "ENOENT", "/etc/job/optional.conf", None), ("openat", "ENOENT", "/etc/job/job.conf", None),
                ("write", None, "/dev/pts/0", "run.sh: cannot open /etc/job/job.conf\n"),
                ("exit_group", None, None, None)]
    bif = diff(tmp_path, good, bad, "sh")
    assert (bif["probe"], bif["errno"], bif["path"]) == ("openat", "ENOENT", "/etc/job/job.conf")
