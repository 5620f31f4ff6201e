"""An output's name is checked against the directory's NAME_MAX before any work.

`baseline learn -o m.parquet --expected-out <a name too long>` wrote the model, then refused the
YAML (battery 48's borderline note): a refusal after one of two outputs was written. The name and
the temporary it is written through ('.<name>.<pid>-<8 hex>.tmp', tracer.atomic) must fit, so a
name the write would refuse is refused first, with nothing written.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

BIN = Path(__file__).resolve().parents[1] / ".venv" / "bin"


def run(*args: str | Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLARS_MAX_THREADS="1")
    return subprocess.run([str(BIN / "baseline"), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("names") / "fleet"
    r = run("simulate", "--hosts", "2", "--hours", "1", "--seed", "3", "-o", d)
    assert r.returncode == 0, r.stderr
    return d


@pytest.mark.parametrize("length", [256, 300])
def test_a_second_output_name_too_long_is_refused_before_the_first_is_written(fleet, tmp_path, length):
    yaml = tmp_path / ("y" * (length - len(".yaml")) + ".yaml")
    r = run("learn", fleet, "-o", tmp_path / "m.parquet", "--expected-out", yaml)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "--expected-out" in r.stderr and "too long" in r.stderr, r.stderr
    assert re.search(r"expected at most 255 bytes .* found " + str(length), r.stderr), r.stderr
    assert sorted(os.listdir(tmp_path)) == [], "nothing written, not even the model"


@pytest.mark.parametrize("length", [200, 233, 234, 240, 255])
def test_every_name_the_directory_allows_is_written(fleet, tmp_path, length):
    """Up to NAME_MAX itself: the temporary of a long name ('.<name>.<pid>-<hex>.tmp' is 22
    bytes longer) is named by the name's head and hash, so a name `touch` takes is not refused
    with "File name too long" (240-255 bytes were, round forty-seven)."""
    model = tmp_path / ("m" * (length - len(".parquet")) + ".parquet")
    yaml = tmp_path / ("é" * ((length - len(".yaml")) // 2) + "y" * ((length - len(".yaml")) % 2) + ".yaml")
    assert len(os.fsencode(yaml.name)) == length
    r = run("learn", fleet, "-o", model, "--expected-out", yaml)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted([model.name, yaml.name]), "both outputs, no temporary left"
    assert model.stat().st_size > 0 and yaml.read_text().strip()


def test_a_killed_writers_temporary_of_a_long_name_is_removed_by_the_next_write(fleet, tmp_path):
    """A temporary of a long name carries the name's head and hash: the next writer of the same
    name still tells it for one of its own (its pid gone) and removes it."""
    from tracer import atomic

    model = tmp_path / ("k" * 240 + ".parquet")
    stem = atomic.temporary_stem(model.name)
    assert stem != model.name and stem.endswith(".parquet")
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = tmp_path / f".{stem}.{gone.pid}-0123abcd.tmp"
    left.write_bytes(b"PAR1 half")
    r = run("learn", fleet, "-o", model)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == [model.name]


def test_export_and_simulate_write_a_255_byte_name(fleet, tmp_path):
    """The other writers go through the same temporaries: a Trace Event JSON file and a dataset
    directory (its staging directory '.<name>.<pid>-<hex>.tmp') named with 255 bytes."""
    out = tmp_path / ("e" * (255 - len(".json")) + ".json")
    r = run("export", fleet / "events", "--max-events", "100000000", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("{")
    dataset = tmp_path / ("d" * 255)
    r = run("simulate", "--hosts", "1", "--hours", "1", "--seed", "1", "-o", dataset)
    assert r.returncode == 0, r.stderr
    assert (dataset / "events").is_dir()
    assert sorted(os.listdir(tmp_path)) == sorted([out.name, dataset.name])
