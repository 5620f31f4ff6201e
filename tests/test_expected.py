"""expected_errors.yaml: load, match, merge, save, learn."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from baseline.run.allowlist import (
    DEFAULT_PATH,
    Entry,
    ExpectedErrors,
    glob_match,
    learn_expected,
    only_match,
)
from tracer.errors import TracebaseError
from tracer.schema import write_table


def test_repo_allowlist_loads_and_every_curated_entry_has_a_reason():
    allow = ExpectedErrors.load(DEFAULT_PATH)
    assert len(allow) >= 5
    assert all(e.source == "curated" and e.reason for e in allow.entries)
    assert allow.match("openat", "ENOENT", "/lib/x<n>_<n>-linux-gnu/glibc-hwcaps/x<n>-<n>-v<n>/libc.so.<n>").id == "curated-enoent-ld-so-hwcaps"
    assert allow.match("ioctl", "ENOTTY").id == "curated-enotty-isatty"
    assert allow.match("read", "ERESTARTSYS").id == "curated-erestart-signal"
    assert allow.match("openat", "ENOENT", "/srv/data/input.txt") is None
    # a /proc scan racing with a process's exit; ENOENT there may be "the daemon is not running"
    assert allow.match("openat", "ESRCH", "/proc/<n>/environ").id == "curated-esrch-proc-scan-race"
    assert allow.match("read", "ESRCH", "/proc/<n>/task/<n>/stat").id == "curated-esrch-proc-scan-race"
    assert allow.match("openat", "ENOENT", "/proc/<n>/cmdline") is None
    assert allow.match("kill", "ESRCH") is None
    assert allow.match("openat", "EACCES", "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/0") is None
    # posix_fadvise on a pipe; nscd asked first by NSS; Python's user site-packages
    assert allow.match("fadvise64", "ESPIPE", "pipe:").id == "curated-espipe-fadvise"
    assert allow.match("fadvise64", "EBADF", "pipe:") is None
    for socket in ("unix:/var/run/nscd/socket", "unix:/run/nscd/socket"):
        assert allow.match("connect", "ENOENT", socket).id == "curated-enoent-nscd-socket"
    assert allow.match("connect", "ENOENT", "unix:/run/myservice.sock") is None
    assert allow.match("newfstatat", "ENOENT", "/root/.local/lib/python<n>.<n>/site-packages").id == \
        "curated-enoent-python-user-site"
    assert allow.match("openat", "ENOENT", "/srv/app/.local/lib/python<n>.<n>/site-packages/mod.py") is None


@pytest.mark.parametrize(
    ("pattern", "value", "hit"),
    [
        ("/sys/class/infiniband/**", "/sys/class/infiniband/mlx5_0/ports/1/x", True),
        ("/sys/*/infiniband", "/sys/class/infiniband", True),
        ("/sys/*", "/sys/class/infiniband", False),  # * stays inside one component
        ("{read,recvfrom}", "recvfrom", True),
        ("{read,recvfrom}", "recv", False),
        ("ERESTART*", "ERESTARTNOHAND", True),
        (None, "anything", True),
        ("x", None, False),
    ],
)
def test_glob(pattern, value, hit):
    assert glob_match(pattern, value) is hit


def _write(tmp_path: Path, doc) -> Path:
    path = tmp_path / "allow.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


GOOD_ENTRY = {"id": "a", "source": "curated", "reason": "r", "probe": "openat", "errno": "ENOENT"}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("version: 1\nentries: [\n", "invalid YAML at line"),
        ("- 1\n- 2\n", "expected a mapping with 'version' and 'entries', found list"),
        ({"version": 2, "entries": []}, "field 'version': expected 1, found 2"),
        ({"version": 1, "entries": {"a": 1}}, "field 'entries': expected a list, found dict"),
        ({"version": 1, "entries": [GOOD_ENTRY, {**GOOD_ENTRY, "id": "b", "errno": "ENOPE"}]},
         "entries[1]: field 'errno': expected a symbolic errno name like ENOENT, found 'ENOPE'"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "reason": None}]},
         "entries[0]: field 'reason': expected a reason for a curated entry, found none"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "probe": None}]}, "entries[0]: field 'probe': expected a value, found none"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "source": "guessed"}]}, "entries[0]: field 'source': expected one of curated|learned"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "colour": "red"}]}, "entries[0]: unknown field 'colour'"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "support": {"runs": "x"}}]}, "entries[0]: field 'support'"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "status": "zombie"}]}, "entries[0]: field 'status'"),
        ({"version": 1, "entries": [GOOD_ENTRY, GOOD_ENTRY]}, "entries[1]: field 'id': expected a unique id, found 'a' again"),
        ({"version": 1, "entries": ["just a string"]}, "entries[0]: expected a mapping, found str"),
        ({"version": 1, "entrys": [GOOD_ENTRY]}, "unknown top-level key 'entrys' (expected version and entries)"),
        ({"version": 1, "entries": [], "notes": "x"}, "unknown top-level key 'notes'"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "paht": "/x"}]}, "entries[0]: unknown field 'paht'"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "comm": ""}]},
         "entries[0]: field 'comm': expected a process name or glob like 'python*', found ''"),
        ({"version": 1, "entries": [{**GOOD_ENTRY, "comm": 3}]}, "entries[0]: field 'comm': expected a string, found 3"),
    ],
)
def test_bad_allowlists_name_file_entry_and_field(tmp_path, doc, message):
    path = _write(tmp_path, doc)
    with pytest.raises(TracebaseError) as err:
        ExpectedErrors.load(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_allowlist_file(tmp_path):
    with pytest.raises(TracebaseError, match="no such file"):
        ExpectedErrors.load(tmp_path / "nope.yaml")


def test_save_roundtrip_is_atomic_and_keeps_order(tmp_path):
    allow = ExpectedErrors.load(DEFAULT_PATH)
    out = allow.save(tmp_path / "copy.yaml")
    again = ExpectedErrors.load(out)
    assert [e.to_dict() for e in again.entries] == [e.to_dict() for e in allow.entries]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.yaml"]  # no temp file left


def _learned(probe, errno, path, runs, total, context=None):
    return Entry(id=f"l-{probe}-{errno}", source="learned", probe=probe, errno=errno, path=path, context=context,
                 support={"runs": runs, "total": total}, first_seen="2026-11-01T00:00:00Z", last_seen="2026-11-01T00:00:00Z")


def test_merge_never_overwrites_curated_and_marks_stale():
    curated = Entry(id="c", source="curated", reason="routine", probe="openat", errno="ENOENT", path="/etc/**")
    allow = ExpectedErrors([curated, _learned("stat", "ENOENT", "/old", 1, 2)])
    counts = allow.merge_learned(
        [_learned("openat", "ENOENT", "/etc/x.conf", 2, 2), _learned("read", "EAGAIN", None, 3, 4)],
        now="2026-11-29T10:00:00Z",
    )
    assert counts == {"added": 1, "updated": 0, "stale": 1, "skipped_curated": 1}
    assert allow.entries[0] == curated  # untouched
    assert allow.entries[1].status == "stale"
    assert allow.entries[2].probe == "read" and allow.entries[2].status == "active"
    # Learning the stale one again revives it and updates support/last_seen, keeping first_seen.
    again = _learned("stat", "ENOENT", "/old", 2, 2)
    again.first_seen, again.last_seen = "2026-11-20T00:00:00Z", "2026-11-29T00:00:00Z"
    counts = allow.merge_learned([again, _learned("read", "EAGAIN", None, 3, 4)])
    assert counts["updated"] == 2
    e = allow.entries[1]
    assert (e.status, e.support, e.first_seen, e.last_seen) == ("active", {"runs": 2, "total": 2}, "2026-11-01T00:00:00Z", "2026-11-29T00:00:00Z")


def test_learned_entry_without_path_matches_only_pathless_errors():
    allow = ExpectedErrors([_learned("openat", "ENOENT", None, 1, 1)])
    assert allow.match("openat", "ENOENT", None) is not None
    assert allow.match("openat", "ENOENT", "/tmp/x/config.txt") is None


def _trace(path: Path, trace_id: str, errors: list[tuple[str, str, str | None]], comm: str = "prog") -> Path:
    n = len(errors) + 1
    df = pl.DataFrame(
        {
            "trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [0] * n, "pid": [5] * n, "tid": [5] * n,
            "comm": [comm] * n, "probe": [p for p, _, _ in errors] + ["exit_group"], "depth": [0] * n,
            "ret": [-1] * len(errors) + [0], "errno": [e for _, e, _ in errors] + [None],
            "path": [x for _, _, x in errors] + [None], "kind": ["good"] * n, "command": ["prog"] * n,
        },
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "depth": pl.Int16},
    )
    return write_table(df, path, "events")


def test_learn_expected_from_good_runs_counts_support(tmp_path):
    a = _trace(tmp_path / "a.parquet", "a", [("openat", "ENOENT", "/proc/12/status"), ("ioctl", "ENOTTY", None)])
    b = _trace(tmp_path / "b.parquet", "b", [("openat", "ENOENT", "/proc/99/status")])
    entries = learn_expected([a, b])
    got = {(e.probe, e.errno, e.path, e.context): e.support for e in entries}
    assert got == {
        ("openat", "ENOENT", "/proc/<n>/status", "prog"): {"runs": 2, "total": 2},
        ("ioctl", "ENOTTY", None, "prog"): {"runs": 1, "total": 2},
    }
    assert all(e.source == "learned" and e.id.startswith("learned-") for e in entries)
    assert [e.probe for e in learn_expected([a, b], min_support=0.75)] == ["openat"]


def test_a_learned_path_matches_itself_alone_whatever_its_characters(tmp_path):
    """A learned entry's path is a path a good run took, not a pattern: a name not UTF-8 (the
    recorder's ``\\xe9``), a bracket, braces, a star or a question mark in it made it a glob
    that never matched the path it came from, and `baseline diff` named the good runs' own
    routine error (real_thirtysecond's ls of ``caf\\xe9 link``: lgetxattr ENODATA)."""
    names = ["caf\\xe9 link", "a[1].txt", "x{1,2}", "star*", "what?", "back\\slash"]
    good = _trace(tmp_path / "g.parquet", "g", [("lgetxattr", "ENODATA", f"/srv/{n}") for n in names])
    entries = learn_expected([good])
    taken = sorted(only_match(e.path) for e in entries)  # the normalised paths, as diff passes them
    assert len(taken) == len(names) and None not in taken
    assert "/srv/caf\\xe<n> link" in taken and "/srv/a[<n>].txt" in taken
    learned = ExpectedErrors(entries)
    for path in taken:
        assert learned.match("lgetxattr", "ENODATA", path, "prog") is not None, path
    # ... and nothing else: the star, the class, the question mark and the braces are literal
    for other in ["/srv/starry", "/srv/a<n>.txt", "/srv/whatx", "/srv/x<n>", "/srv/back/slash"]:
        assert learned.match("lgetxattr", "ENODATA", other, "prog") is None, other
    saved = tmp_path / "learned.yaml"
    learned.save(saved)
    again = ExpectedErrors.load(saved)
    assert all(again.match("lgetxattr", "ENODATA", path, "prog") is not None for path in taken)


@pytest.mark.parametrize(
    ("pattern", "value", "hit"),
    [
        ("**/pyvenv.cfg", "pyvenv.cfg", True),  # ** / at any depth, the top included
        ("**/pyvenv.cfg", "/usr/bin/pyvenv.cfg", True),
        ("**/pyvenv.cfg", "/usr/bin/xpyvenv.cfg", False),
        ("/a/**/z", "/a/z", True),
        ("/a/**/z", "/a/b/c/z", True),
        ("/a/**", "/a/b/c", True),
        ("/lib/[a-c]*.so", "/lib/b1.so", True),
        ("/lib/[a-c]*.so", "/lib/d1.so", False),
        ("/lib/[!a-c]*.so", "/lib/d1.so", True),
        ("/lib/[^a-c]*.so", "/lib/a1.so", False),
        ("/x/[/]y", "/x//y", False),  # a class never matches "/"
        ("/x/?", "/x/a", True),
        ("/x/?", "/x/ab", False),
        ("/x/?", "/x//", False),
        ("{open,openat{,2}}", "openat2", True),
        ("{open,openat{,2}}", "openat3", False),
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("[unterminated", "[unterminated", True),
        ("a\\{b,c\\}", "a{b,c}", True),  # an escaped brace is no alternative
        ("a\\{b,c\\}", "ab", False),
        ("{x\\,y,z}", "x,y", True),  # nor an escaped comma a separator
        ("{x\\,y,z}", "z", True),
    ],
)
def test_glob_semantics(pattern, value, hit):
    assert glob_match(pattern, value) is hit


def test_glob_with_many_stars_is_instant():
    # A backtracking matcher takes exponential time here (12 stars never finished); the
    # position-set matcher is linear in the value. Checked by work done, not by a timer:
    # the same calls with 4 and with 24 stars differ only by a constant factor.
    import baseline.run.allowlist as allowlist

    value = "a" * 200 + "b"
    for stars in (4, 12, 24):
        pattern = "a*" * stars + "c"
        assert glob_match(pattern, value) is False
        assert glob_match("**" + "*a" * stars + "b", value) is True
    steps = []
    for stars in (4, 24):
        calls = 0
        original = allowlist._closure

        def counting(toks, states, _orig=original):
            nonlocal calls
            calls += 1
            return _orig(toks, states)

        allowlist._closure = counting
        try:
            allowlist._match_tokens(allowlist._compile_glob("a*" * stars + "c"), value)
        finally:
            allowlist._closure = original
        steps.append(calls)
    assert steps[0] == steps[1] <= len(value) + 1


def test_rewriting_the_curated_file_changes_nothing(tmp_path):
    # Round-trip YAML: comments, folded reasons, quoting and key order survive load + save.
    copy = tmp_path / "expected_errors.yaml"
    copy.write_bytes(DEFAULT_PATH.read_bytes())
    ExpectedErrors.load(copy).save(copy)
    assert copy.read_bytes() == DEFAULT_PATH.read_bytes()


def test_cached_automaton_agrees_with_the_position_set_simulation():
    # The lazily built DFA (transitions cached per position set) against the plain
    # simulation, on random patterns and values over a small alphabet.
    import random

    import baseline.run.allowlist as allowlist

    rng = random.Random(7)
    pieces = ["a", "b", "/", "*", "**", "**/", "?", "[ab]", "[!a]"]
    for _ in range(400):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        glob = allowlist._Glob(pattern)
        for _ in range(10):
            value = "".join(rng.choice("ab/") for _ in range(rng.randint(0, 8)))
            assert glob.match(value) == allowlist._match_tokens(allowlist._compile_glob(pattern), value), (pattern, value)
