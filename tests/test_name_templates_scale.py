"""NameTemplates' search of the bad trace's new paths against the good ones (`learn`, step 2)
looks only at good values that agree with a candidate where no template could vary
(`_TwinIndex`): the same templates as trying every good value of the shape, at a cost that
grows with the paths, not with their square (6.4 s at 88,000 paths before round twenty-three).

The paths are shaped as the tools make them (git pack-objects' `.tmp-<pid>-pack-<sha1>` beside
its mkstemp `tmp_idx_XXXXXX`, shards under a per-run mkstemp directory, uuids, python
tempfile names, git's object fan-out), with pids from anywhere in the wrapping pid space."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pyarrow as pa
import pytest

from baseline.run import normalize
from baseline.run.normalize import TEMP_RULES, NameTemplates, Values, _TwinIndex, apply_rules

MIXED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CLASSES = (MIXED, "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "0123456789abcdef",
           "abcdefghijklmnopqrstuvwxyz0123456789_")


def _draw(rng: random.Random, n: int) -> str:
    """n characters of one alphabet, drawn per name (mkstemp's 62, or a single class by luck)."""
    alphabet = rng.choice(CLASSES)
    return "".join(rng.choice(alphabet) for _ in range(n))


def _run_paths(run: int, n: int, seed: int) -> list[str]:
    """About n paths of one run: its own pid, temp directory and draws."""
    rng = random.Random(f"{seed}-{run}")
    pid = rng.choice([rng.randrange(300, 1000), rng.randrange(1000, 10000), rng.randrange(10000, 32768)])
    stage = _draw(rng, 6)
    out: list[str] = []
    for i in range(n // 4):  # shards under the run's own temp directory (no twin but the same shard)
        out.append(f"/srv/job/stage-{stage}/shard-{i:05d}.part")
    for i in range(n // 16):  # git pack-objects, pid beside the hash
        sha = hashlib.sha1(f"{seed}-{run}-{i}".encode()).hexdigest()
        pack = "/srv/repo/.git/objects/pack/"
        out += [f"{pack}.tmp-{pid}-pack-{sha}.{ext}" for ext in ("pack", "idx", "rev")]
        out.append(f"{pack}tmp_{rng.choice(['idx', 'rev', 'pack'])}_{_draw(rng, 6)}")
    for i in range(n // 8):  # loose objects in their fan-out directories
        sha = hashlib.sha1(f"{seed}-obj-{run}-{i}".encode()).hexdigest()
        out.append(f"/srv/repo/.git/objects/{sha[:2]}/tmp_obj_{_draw(rng, 6)}")
    for i in range(n // 8):  # python tempfile names beside a fixed result
        out.append(f"/srv/out/r{i:04d}/tmp{_draw(rng, 8).lower()}_/result.json")
    while len(out) < n:  # uuids of run-own objects
        out.append(f"/var/cache/app/{hashlib.md5(f'{seed}{run}{len(out)}'.encode()).hexdigest()}.blob")
    return out


def _inputs(n: int, seed: int) -> tuple[Values, np.ndarray, np.ndarray]:
    """Three good runs and a bad one (trace key -1), each about n / 4 paths, as `learn` takes them."""
    runs = [_run_paths(r, n // 4, seed) for r in range(4)]
    rows = [(k if k < 3 else -1, p) for k, paths in enumerate(runs) for p in paths]
    distinct = sorted({p for _, p in rows})
    index = {p: i for i, p in enumerate(distinct)}
    values = Values(apply_rules(pa.array(distinct, type=pa.string()), TEMP_RULES))
    return (values, np.array([index[p] for _, p in rows], dtype=np.int64),
            np.array([k for k, _ in rows], dtype=np.int64))


def _every_value(self: _TwinIndex, key: tuple, runs: tuple[str, ...], shape: tuple[int, ...]):
    """The search as it was: every good value of the shape, in order."""
    yield from self.table.get(key, ())


@pytest.mark.parametrize("seed", range(6))
def test_the_index_learns_the_templates_every_good_value_would(seed, monkeypatch):
    values, codes, tkey = _inputs(1600, seed)
    indexed = NameTemplates.learn(values, codes, tkey)
    monkeypatch.setattr(_TwinIndex, "twins", _every_value)
    scanned = NameTemplates.learn(values, codes, tkey)
    assert indexed.by_shape == scanned.by_shape and indexed.by_number_shape == scanned.by_number_shape
    assert len(indexed) > 10  # (the paths do teach templates: the comparison is not of two empty sets)


def test_the_search_grows_with_the_paths_not_their_square(monkeypatch):
    # the pairs the search weighs (each a `_drawn_alike` call), counted: four times the paths
    # may take about four times the pairs; the full scan took about sixteen (every shard
    # against every good shard of its shape)
    pairs = 0
    drawn_alike = normalize._drawn_alike

    def counted(token: str, other: str) -> bool:
        nonlocal pairs
        pairs += 1
        return drawn_alike(token, other)

    monkeypatch.setattr(normalize, "_drawn_alike", counted)
    weighed = []
    for n in (2000, 8000):
        pairs = 0
        NameTemplates.learn(*_inputs(n, seed=7))
        weighed.append(pairs)
    assert weighed[0] > 100 and weighed[1] < 6 * weighed[0], weighed


def _spool_inputs(n: int, seed: int) -> tuple[Values, np.ndarray, np.ndarray]:
    """Three good runs and a bad one of `rm -rf spool/day-*`: n / 4 message files each, named
    `day-DD/qQ/msg-NNN-XXXX` with four random hex digits (all digits by chance in ~15 %: a
    number, not a token to agree at), no two runs sharing a name."""
    rows = []
    for run in range(4):
        rng = random.Random(f"{seed}-spool-{run}")
        for i in range(n // 4):
            draw = "".join(rng.choice("0123456789abcdef") for _ in range(4))
            rows.append((run if run < 3 else -1, f"/var/spool/tracebase/day-{i % 30:02d}/q{i % 3}/msg-{i % 997:03d}-{draw}"))
    distinct = sorted({p for _, p in rows})
    index = {p: i for i, p in enumerate(distinct)}
    values = Values(apply_rules(pa.array(distinct, type=pa.string()), TEMP_RULES))
    return (values, np.array([index[p] for _, p in rows], dtype=np.int64),
            np.array([k for k, _ in rows], dtype=np.int64))


def test_short_draws_differing_alone_are_not_searched(monkeypatch):
    """A bad-only name that differs from the good names of its shape only at short tokens and
    numbers teaches nothing (`_drawn_alike` needs MIN_TOKEN characters): the search passes such
    good names over unseen. It met every good name of the shape for each bad-only name whose
    short draw was all digits (5 CPU s of a 5,000-event `rm -rf` diff, tests/test_real_programs_
    fiftyfifth.py); the templates are the ones the full scan learns."""
    values, codes, tkey = _spool_inputs(2000, seed=3)
    seen = 0
    twins = _TwinIndex.twins

    def counted(self, key, runs, shape):
        nonlocal seen
        for other in twins(self, key, runs, shape):
            seen += 1
            yield other

    monkeypatch.setattr(_TwinIndex, "twins", counted)
    indexed = NameTemplates.learn(values, codes, tkey)
    assert seen < 100, seen
    monkeypatch.setattr(_TwinIndex, "twins", _every_value)
    scanned = NameTemplates.learn(values, codes, tkey)
    assert indexed.by_shape == scanned.by_shape and indexed.by_number_shape == scanned.by_number_shape
