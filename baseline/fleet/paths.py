"""The fleet readers' input directories, each checked in one place.

Light (no polars, no pyarrow): the command lines run these before importing the audit or the
evaluation, so a mistyped path is refused at once, with the line the reader itself gives
(load_truth and read_audit check through these too, for library callers).
"""

from __future__ import annotations

import os
from pathlib import Path

from tracer.errors import TracebaseError
from tracer.inputs import what_is_at


def dataset_dir(dataset: str | os.PathLike) -> Path:
    """A simulated dataset's root (the truth table's home) as a Path, else one line naming it."""
    root = Path(dataset)
    if not root.exists():
        raise TracebaseError(f"{root}: no such dataset directory")
    if not root.is_dir():
        raise TracebaseError(f"{root}: expected a dataset directory, found {what_is_at(root)}")
    return root


def audit_dir(out_dir: str | os.PathLike) -> Path:
    """An audit output directory (findings/clusters/host_alerts) as a Path, else one line."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise TracebaseError(f"{out}: expected an audit output directory, found {what_is_at(out)}")
    if not out.is_dir():
        raise TracebaseError(f"{out}: no such audit output directory")
    return out
