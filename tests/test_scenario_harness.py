"""The scenario harness's recordings (tests/scenarios/harness.py): a run whose recording got a
stop signal is refused, not diffed. `test_real_programs_twentysecond[nd_xz_t2_spool_unwritable]`
failed once under a 240 s per-module cap as good-vs-good `write None pipe:`: `timeout` sent
SIGTERM to the test's process group, the recorder forwarded it to xz, and xz's signal handler
(xz 5.4 src/xz/signals.c) wrote its self-pipe -- a killed run the diff rightly named."""

from __future__ import annotations

import pytest
from scenarios.harness import record_run


def test_a_recording_that_got_a_stop_signal_is_refused(recorder, tmp_path):
    # the program signals the test process (its parent: the recorder spawned it), as a
    # runner's time cap would; the recorder holds the signal and forwards it to the program
    argv = ["/bin/sh", "-c", "kill -TERM $PPID; exec sleep 30"]
    with pytest.raises(AssertionError, match=r"killed\.parquet: the recording got SIGTERM and forwarded it"):
        record_run(recorder, argv, tmp_path / "killed.parquet", "good")
    assert not (tmp_path / "killed.parquet").exists()
