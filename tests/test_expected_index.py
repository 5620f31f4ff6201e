"""Matching errors against a large expected-error set.

`baseline diff` learns one entry per distinct good error. A real program walking a tree
(`ls -lR` asks each file for its ACL and security label: ENODATA per file) brings thousands,
and the bad run brings as many errors: testing each error against every entry made the diff
of a 22,461-call `ls -lR /usr/share/doc` with itself run for minutes. `ExpectedErrors.match`
now looks entries up by (probe, errno[, path]); these tests check it finds the same first entry
as a scan of the whole list, that it tests a bounded number of entries per error, and the real
case end to end (root + bcc; need_bpf)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from baseline.run.allowlist import Entry, ExpectedErrors, load_default

REPO = Path(__file__).resolve().parents[1]


def scan_match(rules: ExpectedErrors, probe, errno, path, context) -> Entry | None:
    """The definition: the first active entry in set order (curated, then learned)."""
    for e in rules.curated() + rules.learned():
        if e.matches(probe, errno, path, context):
            return e
    return None


def learned(i: int, probe: str, errno: str, path: str | None, context: str | None = "ls") -> Entry:
    return Entry(id=f"learned-{i}", source="learned", probe=probe, errno=errno, path=path, context=context)


def mixed_set() -> ExpectedErrors:
    """The curated file's globs, hand-written globs in every field and learned literals that
    overlap them (the same error covered by a curated glob and by a learned entry)."""
    rules = load_default()
    extra = [
        Entry(id="c-brace", source="curated", probe="{getxattr,lgetxattr}", errno="ENODATA", path="/srv/**"),
        Entry(id="c-errno-glob", source="curated", probe="openat", errno="E*", path="/opt/*/conf"),
        Entry(id="c-no-path", source="curated", probe="ioctl", errno="ENOTTY"),
        Entry(id="c-context", source="curated", probe="access", errno="ENOENT", path="/etc/x", context="python*"),
        Entry(id="c-class", source="curated", probe="stat", errno="ENOENT", path="/data/file[0-9]"),
        Entry(id="c-escape", source="curated", probe="stat", errno="ENOENT", path="/data/a\\*b"),
    ]
    rows = [
        learned(1, "getxattr", "ENODATA", "/srv/a"),  # behind the curated brace glob
        learned(2, "getxattr", "ENODATA", "/home/a"),
        learned(3, "lgetxattr", "ENODATA", "/home/a", context=None),
        learned(4, "ioctl", "ENOTTY", None),  # learned without a path: says nothing about paths
        learned(5, "openat", "ENOENT", "/opt/x/conf"),
        learned(6, "stat", "ENOENT", "/data/file1"),
        learned(7, "stat", "ENOENT", "/data/a*b"),
        learned(8, "stat", "ENOENT", "/data/a<n>b"),
        learned(9, "access", "ENOENT", "/etc/x", context="python3"),
    ]
    stale = learned(10, "stat", "ENOENT", "/home/stale")
    stale.status = "stale"
    return rules + ExpectedErrors(extra + rows + [stale])


QUERIES = [
    ("getxattr", "ENODATA", "/srv/a", "ls"),
    ("getxattr", "ENODATA", "/srv/deep/b", "ls"),
    ("getxattr", "ENODATA", "/home/a", "ls"),
    ("getxattr", "ENODATA", "/home/a", "cp"),
    ("lgetxattr", "ENODATA", "/home/a", "cp"),
    ("lgetxattr", "EOPNOTSUPP", "/home/a", "ls"),
    ("ioctl", "ENOTTY", None, "ls"),
    ("ioctl", "ENOTTY", "/dev/pts/0", "ls"),
    ("openat", "ENOENT", "/opt/x/conf", "ls"),
    ("openat", "EACCES", "/opt/y/conf", "ls"),
    ("openat", "ENOENT", "/opt/x/y/conf", "ls"),
    ("stat", "ENOENT", "/data/file1", "ls"),
    ("stat", "ENOENT", "/data/file12", "ls"),
    ("stat", "ENOENT", "/data/a*b", "ls"),
    ("stat", "ENOENT", "/data/a<n>b", "ls"),
    ("stat", "ENOENT", "/home/stale", "ls"),
    ("access", "ENOENT", "/etc/x", "python3"),
    ("access", "ENOENT", "/etc/x", "bash"),
    ("access", "ENOENT", "/etc/ld.so.preload", "bash"),
    ("openat", "ENOENT", "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libc.so.6", "bash"),
    ("stat", "ENOENT", "/venv/pyvenv.cfg", "python3"),
    ("read", "EAGAIN", None, "ls"),
    ("getxattr", None, "/home/a", "ls"),
]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "-".join(str(x) for x in q))
def test_match_finds_the_first_entry_a_full_scan_finds(query):
    rules = mixed_set()
    want = scan_match(rules, *query)
    got = rules.match(*query)
    assert (got.id if got else None) == (want.id if want else None)


def test_the_index_follows_entries_added_after_a_match():
    rules = ExpectedErrors([learned(1, "stat", "ENOENT", "/a")])
    assert rules.match("stat", "ENOENT", "/b", "ls") is None
    counts = rules.merge_learned([learned(2, "stat", "ENOENT", "/b")])
    assert counts["added"] == 1
    assert rules.match("stat", "ENOENT", "/b", "ls").id == "learned-2"


def entries_tested(monkeypatch) -> list[int]:
    """A one-item list counting `Entry.matches` calls from now on (the real method runs)."""
    tested = [0]
    original = Entry.matches

    def counting(self, *args, **kwargs):
        tested[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Entry, "matches", counting)
    return tested


def test_each_error_tests_a_bounded_number_of_entries(monkeypatch):
    """20,000 learned entries and 20,000 errors: a scan tests 400 million pairs; the index
    tests the entries that can match (the curated globs, and the error's own entry)."""
    n = 20_000
    rules = load_default() + ExpectedErrors(
        [learned(i, "lgetxattr", "ENODATA", f"/usr/share/doc/pkg{i}/copyright") for i in range(n)])
    tested = entries_tested(monkeypatch)
    found = sum(rules.match("lgetxattr", "ENODATA", f"/usr/share/doc/pkg{i}/copyright", "ls") is not None
                for i in range(n))
    assert found == n
    assert tested[0] <= n * (len(rules.curated()) + 2), tested[0]


def test_merging_many_learned_entries_is_not_quadratic(monkeypatch):
    """`allowlist learn` over a tree walk merges thousands of entries into a list: each is
    checked against the curated entries once (indexed), its id against a set; ids that clash
    are still made unique."""
    n = 20_000
    rules = load_default()
    curated = len(rules.curated())
    tested = entries_tested(monkeypatch)
    fresh = [learned(i, "lgetxattr", "ENODATA", f"/d/f{i}") for i in range(n)]
    fresh.append(learned(0, "lgetxattr", "ENODATA", "/d/other"))  # the same id, another key
    counts = rules.merge_learned(fresh)
    assert counts["added"] == n + 1 and len(rules.learned()) == n + 1
    assert len({e.id for e in rules.entries}) == len(rules.entries)
    assert tested[0] <= (n + 1) * (curated + 1), tested[0]


def test_diff_of_a_tree_walk_with_itself_is_quiet(need_bpf, tmp_path):
    """A real `ls -lR` over 4,000 files (one ENODATA per file and attribute) recorded twice;
    diffed either way round: no anomaly, every error set aside by a learned entry."""
    tree = tmp_path / "tree"
    for d in range(40):
        sub = tree / f"d{d:02}"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"f{f:03}.txt").write_text("x")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    traces = []
    for run in ("a", "b"):
        out = tmp_path / f"{run}.parquet"
        rec = subprocess.run([sys.executable, "-m", "tracer.cli", "record", "-o", str(out), "--",
                              "ls", "-lR", str(tree)], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)
        assert rec.returncode == 0, rec.stderr
        traces.append(out)
    proc = subprocess.run([sys.executable, "-m", "baseline.cli", "diff", "--json", str(traces[0]), str(traces[1])],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["anomaly"] is False, report.get("bifurcation")
    ignored = report["expected_ignored"]
    assert ignored["total"] >= 4_000, ignored.get("total")
