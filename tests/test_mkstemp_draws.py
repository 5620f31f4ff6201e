"""Random names compare alike whichever characters they drew: a property test over the temp-name
schemes of real tools, seeded.

Each tool's scheme is written down here from the tool's own conventions (glibc's mkstemp draws 6
of [A-Za-z0-9] for XXXXXX; Python's tempfile 8 of [a-z0-9_]; git names its loose objects, pack
and index `tmp_obj_`/`tmp_pack_`/`tmp_idx_` + 6 beside their target and renames a pack to
`.tmp-<pid>-pack-<sha1>.<ext>`; sort `sortXXXXXX` and gcc `ccXXXXXX.s` in $TMPDIR; sed -i
`sedXXXXXX` beside the file; mktemp -d `tmp.XXXXXXXXXX`; bash here-documents `sh-thd.XXXXXX`;
systemd `.#<name>XXXXXX` beside the file; ssh-agent `ssh-XXXXXXXXXXXX/agent.<ppid>`; zip
`ziXXXXXX` beside the archive), never from the differ's masks. Each run draws its names in one
character class or another -- mixed, all lower case, all capitals, all digits, a letter then
digits, a digit run then letters -- and its process ids anywhere in a pid space that wraps at
32768 (3 to 5 digits: a CI machine's pids cross 9999 and wrap). The runs are real Parquet traces
(tracer.schema) of one program's temp-file dance: create the temp name, write, close, rename it
to its fixed target.

* good vs good (two good runs against a third, as the real sets' noise cases): no anomaly, in
  every draw;
* the rename's target directory read-only in the bad run (EACCES): named top-1, at that rename;
* a different fixed name (another extension, another directory, another prefix) still shows.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_diff_events import NONE, START, trace

from baseline.run.diff import diff_traces

LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
GLIBC = LOWER + UPPER + DIGITS  # mkstemp's XXXXXX
PYTHON = LOWER + DIGITS + "_"  # tempfile._RandomNameSequence


def _draw(rng: random.Random, n: int, how: str, alphabet: str = GLIBC) -> str:
    """n characters of `alphabet` drawn in one way: the classes a real draw falls in now and then."""
    pools = {"mixed": alphabet, "lower": LOWER, "upper": UPPER, "digits": DIGITS}
    if how in pools:
        pool = "".join(c for c in pools[how] if c in alphabet) or alphabet
        return "".join(rng.choice(pool) for _ in range(n))
    if how == "letter_then_digits":  # d76543
        return rng.choice(LOWER) + "".join(rng.choice(DIGITS) for _ in range(n - 1))
    if how == "digits_then_letters":  # 76dasc
        k = rng.randint(1, n - 1)
        return "".join(rng.choice(DIGITS) for _ in range(k)) + "".join(rng.choice(LOWER) for _ in range(n - k))
    if how == "lower_and_digits":  # d76asc: two classes, no capital
        return "".join(rng.choice(LOWER + DIGITS) for _ in range(n - 1)) + rng.choice(LOWER)
    raise ValueError(how)


HOWS = ("mixed", "lower", "upper", "digits", "letter_then_digits", "digits_then_letters", "lower_and_digits")


@dataclass(frozen=True)
class Scheme:
    """One tool's temp-file naming: `temp(rng, how, pid)` -> the temp path; `target(pid)` -> the
    fixed path it is renamed to (the target may carry the run's pid or a content hash)."""

    tool: str
    temp: Callable[[random.Random, str, int], str]
    target: Callable[[random.Random, int], str]
    then: Callable[[random.Random, str, str], list[tuple]] = lambda rng, how, target: []  # rows after the rename


def _git_pack_then(rng: random.Random, how: str, target: str) -> list[tuple]:
    """git pack-objects after renaming its index: chmod of the `.tmp-<pid>-pack-<sha>` names, its
    reverse index written the same way (`tmp_rev_XXXXXX`), then both moved to `pack-<sha>.*`."""
    rev_tmp = f"/srv/repo/.git/objects/pack/tmp_rev_{_draw(rng, 6, how)}"
    rev = target[: -len(".idx")] + ".rev"
    final = target.replace("/.tmp-", "/").split("-pack-")
    final_idx = "/srv/repo/.git/objects/pack/pack-" + final[1]
    return [("chmod", None, target, None, None), ("openat", None, rev_tmp, None, None),
            ("write", None, rev_tmp, None, None), ("close", None, rev_tmp, None, None),
            ("rename", None, rev_tmp, rev, None), ("chmod", None, rev, None, None),
            ("rename", None, target, final_idx, None), ("rename", None, rev, final_idx[: -len(".idx")] + ".rev", None)]


def _sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(16)).hexdigest()


SCHEMES = [
    Scheme("sort", lambda r, h, p: f"/tmp/sort{_draw(r, 6, h)}", lambda r, p: "/srv/job/sorted.txt"),
    Scheme("gcc", lambda r, h, p: f"/tmp/cc{_draw(r, 6, h)}.s", lambda r, p: "/srv/build/main.s"),
    Scheme("sed", lambda r, h, p: f"/srv/conf/sed{_draw(r, 6, h)}", lambda r, p: "/srv/conf/app.ini"),
    Scheme("git_idx", lambda r, h, p: f"/srv/repo/.git/objects/pack/tmp_idx_{_draw(r, 6, h)}",
           lambda r, p: f"/srv/repo/.git/objects/pack/.tmp-{p}-pack-{_sha(r)}.idx", _git_pack_then),
    Scheme("git_pack", lambda r, h, p: f"/srv/repo/.git/objects/pack/tmp_pack_{_draw(r, 6, h)}",
           lambda r, p: f"/srv/repo/.git/objects/pack/.tmp-{p}-pack-{_sha(r)}.pack"),
    Scheme("git_obj", lambda r, h, p: f"/srv/repo/.git/objects/4f/tmp_obj_{_draw(r, 6, h)}",
           lambda r, p: "/srv/repo/.git/objects/4f/ac17c0b5e5b7c1f5a4d0c1b3e0d5a6f7e8c9d0a1"),
    Scheme("python_tempfile", lambda r, h, p: f"/tmp/tmp{_draw(r, 8, h, PYTHON)}", lambda r, p: "/srv/out/result.json"),
    Scheme("mktemp_d", lambda r, h, p: f"/tmp/tmp.{_draw(r, 10, h)}/part.txt", lambda r, p: "/srv/out/part.txt"),
    Scheme("bash_heredoc", lambda r, h, p: f"/tmp/sh-thd.{_draw(r, 6, h)}", lambda r, p: "/srv/job/input.txt"),
    Scheme("systemd", lambda r, h, p: f"/etc/.#hostname{_draw(r, 6, h)}", lambda r, p: "/etc/hostname"),
    Scheme("ssh_agent", lambda r, h, p: f"/tmp/ssh-{_draw(r, 12, h)}/agent.{p}", lambda r, p: "/srv/job/agent.sock"),
    Scheme("zip", lambda r, h, p: f"/srv/out/zi{_draw(r, 6, h)}", lambda r, p: "/srv/out/logs.zip"),
]


def _pid(rng: random.Random) -> int:
    return rng.randrange(300, 32768)


def _body(temp: str, target: str, errno: str | None = None, then: list[tuple] = ()) -> list[tuple]:
    """The temp-file dance, one thread: create, write, close, rename onto the target (and what
    the tool does next, when the rename worked)."""
    rows = [("openat", None, temp, None, None), ("write", None, temp, None, None),
            ("close", None, temp, None, None), ("rename", errno, temp, target, None)]
    rows += [("write", None, "/dev/pts/0", None, f"cannot rename: {errno}\n")] if errno else list(then)
    return [*rows, ("exit_group", None, None, None, None)]


def _runs(scheme: Scheme, seed: int) -> list[tuple[str, str, int, list[tuple]]]:
    """Three good runs' (temp, target, pid) and the bad run's, drawn from `seed`: the draws' classes
    cycle so that every pair of classes meets."""
    rng = random.Random(f"{scheme.tool}:{seed}")
    out = []
    for k in range(4):
        pid = _pid(rng)
        how = HOWS[(seed + k * (1 + seed // len(HOWS))) % len(HOWS)]
        temp, target = scheme.temp(rng, how, pid), scheme.target(rng, pid)
        out.append((temp, target, pid, scheme.then(rng, how, target)))
    return out


def _write(tmp_path: Path, name: str, temp: str, target: str, pid: int, then: list[tuple],
           errno: str | None = None) -> Path:
    return trace(tmp_path / f"{name}.parquet", START + _body(temp, target, errno, then), name, pid=pid,
                 kind="failure" if errno else "good")


SEEDS = range(14)  # 14 x 3 draws per scheme: every class in every run position, every pair


@pytest.mark.parametrize("scheme", SCHEMES, ids=[s.tool for s in SCHEMES])
def test_good_runs_are_quiet_whatever_their_names_drew(scheme, tmp_path):
    misses = []
    for seed in SEEDS:
        runs = _runs(scheme, seed)
        files = [_write(tmp_path, f"s{seed}g{k}", *runs[k]) for k in range(3)]
        for left_out in range(3):  # each run in turn against the two others
            good = [f for k, f in enumerate(files) if k != left_out]
            report = diff_traces(good, files[left_out], expected=NONE)
            if report.anomaly:
                misses.append((seed, [r[0] for r in runs[:3]], runs[left_out][0], report.bifurcation.get("npath")))
    assert not misses, f"{scheme.tool}: good vs good reported {len(misses)} times, e.g. {misses[:3]}"


@pytest.mark.parametrize("scheme", SCHEMES, ids=[s.tool for s in SCHEMES])
def test_a_read_only_target_next_to_a_random_name_is_named_top1(scheme, tmp_path):
    for seed in SEEDS[::2]:
        runs = _runs(scheme, seed)
        good = [_write(tmp_path, f"s{seed}g{k}", *runs[k]) for k in range(2)]
        bad = _write(tmp_path, f"s{seed}b", *runs[3], errno="EACCES")
        bif = diff_traces(good, bad, expected=NONE).bifurcation
        assert bif is not None, (scheme.tool, seed)
        assert (bif["probe"], bif["errno"]) == ("rename", "EACCES"), (scheme.tool, seed, bif)
        assert runs[3][0] in (bif["path"], bif["path2"]), (scheme.tool, seed, bif)


@pytest.mark.parametrize(("tool", "other"), [
    ("git_idx", lambda t: t.replace(".idx", ".mtx")),  # an extension as long, which no good run wrote
    ("git_idx", lambda t: t.replace("/pack/.tmp-", "/info/.tmp-")),  # another directory
    ("sed", lambda t: t.replace("/srv/conf/", "/srv/conv/")),
    ("systemd", lambda t: "/etc/hostnamectl"),  # another fixed name
    ("gcc", lambda t: t.replace("/srv/build/main.s", "/srv/build/main.o")),
])
def test_a_different_fixed_name_next_to_random_ones_still_shows(tool, other, tmp_path):
    scheme = next(s for s in SCHEMES if s.tool == tool)
    for seed in SEEDS[::3]:
        runs = _runs(scheme, seed)
        good = [_write(tmp_path, f"s{seed}g{k}", *runs[k]) for k in range(2)]
        temp, target, pid, then = runs[3]
        bad = _write(tmp_path, f"s{seed}b", temp, other(target), pid, then)
        report = diff_traces(good, bad, expected=NONE)
        assert report.anomaly, (tool, seed, other(target))
        assert report.bifurcation["probe"] == "rename", (tool, seed, report.bifurcation)
