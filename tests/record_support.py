"""Recording a command in tests: the small fixed environment and a quiet stdout/stderr, so
traces do not depend on the caller's shell (used by the recorder's test modules)."""

from __future__ import annotations

import os

import polars as pl

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def record(recorder, argv, **kw):
    """Record argv with `recorder` (a loaded SyscallRecorder); returns (recording, events frame)."""
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        rec = recorder.record(argv, env=ENV, stdout=null, stderr=null, **{"timeout": 60, **kw})
    finally:
        os.close(null)
    return rec, pl.from_arrow(rec.events)
