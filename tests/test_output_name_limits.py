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


@pytest.mark.parametrize("length", [240, 255, 256])  # (240: over for any pid of 1+ digits)
def test_a_second_output_name_too_long_is_refused_before_the_first_is_written(fleet, tmp_path, length):
    yaml = tmp_path / ("y" * (length - len(".yaml")) + ".yaml")
    r = run("learn", fleet, "-o", tmp_path / "m.parquet", "--expected-out", yaml)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "--expected-out" in r.stderr and "too long" in r.stderr, r.stderr
    assert re.search(r"expected at most \d+ bytes .* found " + str(length), r.stderr), r.stderr
    assert sorted(os.listdir(tmp_path)) == [], "nothing written, not even the model"


def test_a_name_that_fits_with_its_temporary_is_written(fleet, tmp_path):
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    room = limit - len(f"..{os.getpid()}-00000000.tmp") - 10  # (the child's pid may have more digits)
    model = tmp_path / ("m" * (room - len(".parquet")) + ".parquet")
    r = run("learn", fleet, "-o", model)
    assert r.returncode == 0, r.stderr
    assert model.is_file() and sorted(os.listdir(tmp_path)) == [model.name]
