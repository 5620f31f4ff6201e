"""stdout is written whole, or the command says it was not (tracer.cli.common._ClosablePipe).

Python's buffered stdout takes a short write -- the part of a block that fitted under `ulimit -f`
or on a disk filling up -- for a whole one and drops the rest without a word: a cut JSON and
exit 0 (battery 51). And a full non-blocking pipe's EAGAIN dropped the rest the same way. Real
`baseline` processes, real descriptors.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

BASELINE = [sys.executable, "-m", "baseline.cli"]
SIMULATE = ["simulate", "--hosts", "10", "--hours", "3", "--seed", "3"]


@pytest.fixture(scope="module")
def big_output(tmp_path_factory) -> tuple[list[str], bytes]:
    """A command whose stdout is ~350 KB (the simulator's JSON summary of a fleet is small; an
    export of its events is not), and that output as a regular file gets it."""
    root = tmp_path_factory.mktemp("whole")
    done = subprocess.run([*BASELINE, *SIMULATE, "-o", str(root / "fleet")], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    argv = [*BASELINE, "export", str(root / "fleet" / "events"), "-o", "-"]
    with open(root / "ref.json", "wb") as out:
        ref = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, timeout=300)
    assert ref.returncode == 0, ref.stderr
    data = (root / "ref.json").read_bytes()
    assert len(data) > 200_000 and json.loads(data)["traceEvents"]
    return argv, data


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # as a login shell leaves it
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("limit", [4096, 100_000])
def test_a_file_size_limit_is_one_line_naming_stdout(big_output, tmp_path, limit):
    argv, _ = big_output
    with open(tmp_path / "out.json", "wb") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True, timeout=300,
                              preexec_fn=_file_size_limit(limit))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == ["baseline: error: <stdout>: File too large"]
    assert (tmp_path / "out.json").stat().st_size <= limit


def test_a_non_blocking_pipe_read_slowly_gets_the_whole_output(big_output):
    """O_NONBLOCK on the pipe (set by whoever made it): each full pipe is waited on, not cut."""
    argv, ref = big_output
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    got = bytearray()

    def read_slowly() -> None:
        while chunk := os.read(r, 4096):
            got.extend(chunk)
            time.sleep(0.002)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    try:
        done = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(w)
        reader.join(timeout=300)
        os.close(r)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert bytes(got) == ref


def test_a_reader_that_stops_early_is_still_quiet(big_output):
    argv, _ = big_output
    done = subprocess.run(["sh", "-c", " ".join(argv) + " | head -c 10"], capture_output=True, timeout=300)
    assert done.returncode == 0 and done.stdout == b'{"traceEve', (done.stdout, done.stderr)
    assert done.stderr == b""
