"""The inputs of the weekly coverage report checked without polars: --week, --probes,
--nccl-logs (and the dataset directory).

`baseline coverage` calls `check_coverage_inputs` before it imports baseline.pipeline.coverage
and .nccl (polars, pyarrow, numpy: ~0.4 s of CPU), so a mistyped week, a missing probe set or
log is refused at once; `weekly_report` and `load_app_failures` go through the same functions
(week_start, load_probe_set, expand_paths), so the line is the same either way. What only the
files' contents tell (a log's lines, an app_failures file's schema) is still read after.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from baseline.pipeline.layout import check_dataset
from tracer import units
from tracer.errors import TracebaseError, printable
from tracer.inputs import table_partition_files, what_is_at


# --------------------------------------------------------------------------------------------
# probe sets
# --------------------------------------------------------------------------------------------
def load_probe_set(path: str | os.PathLike) -> dict[str, dict]:
    """Probe symbol -> {layer, object, operation, gate} for every symbol a probe set can trace.

    Uses tracer.fleet.probes (the one probe-set loader). Each probe contributes its default (mlx5
    namespace) symbol and every vendor alternative of the namespace gate; ``gate`` maps
    vendor -> symbol for the probe the symbol belongs to.
    """
    from tracer.fleet.probes import load_probe_set as load_set

    pset = load_set(str(path), vendor=None)
    out: dict[str, dict] = {}
    for probe in pset.probes:
        gate = {"mlx5": probe.default_symbol, **probe.vendors} if probe.vendors else {}
        attrs = {"layer": probe.layer, "object": probe.object, "operation": probe.operation, "gate": gate}
        for symbol in dict.fromkeys((probe.default_symbol, *probe.vendors.values())):  # a set's order varies by PYTHONHASHSEED
            out[symbol] = attrs
    return out


# --------------------------------------------------------------------------------------------
# weeks
# --------------------------------------------------------------------------------------------
def week_start(week: str) -> dt.date:
    """Monday of an ISO week given as 2026-W48 or as any date inside it (2026-11-25, or a
    date-time in it). Weeks outside the int64-nanosecond range of the data's timestamps are
    refused here, naming the flag, rather than overflowing later."""
    expected = WEEK_WORDS
    week = week.strip()
    try:
        iso = _ISO_WEEK.fullmatch(week)
        if iso:
            monday = dt.date.fromisocalendar(int(iso.group(1)), int(iso.group(2)), 1)
        elif _ISO_DAY.match(week) and (len(week) == 10 or week[10] in "Tt "):
            day = dt.date.fromisoformat(week[:10])
            monday = day - dt.timedelta(days=day.weekday())
        else:
            raise ValueError(week)
    except (ValueError, OverflowError):  # OverflowError: the Monday of 0001-W01 is in year 0
        raise TracebaseError(f"--week: expected {expected}, found {week!r}") from None
    # a week holding a day of the range is covered: the Monday of 1678-01-02's week, 1677-12-27,
    # is still inside the int64-nanosecond range (from 1677-09-21), MIN_TIME being a round bound
    # (monday + 6 days overflows at 9999-W52: the bound moves instead)
    if monday < units.MIN_TIME.date() - dt.timedelta(days=6) or monday > (units.MAX_TIME - dt.timedelta(days=14)).date():
        raise TracebaseError(f"--week: expected {expected} {_week_range()}, found {week!r}")
    return monday


WEEK_WORDS = "an ISO week like 2026-W48 or a date"


def _week_range() -> str:
    """The weeks a report can cover: inside the int64-nanosecond range of the timestamps."""
    return f"between {units.MIN_TIME:%Y} and {units.MAX_TIME:%Y}"


# ASCII digits only: int() and fromisoformat would take other scripts' digits
_ISO_WEEK = re.compile(r"(\d{4})-[Ww](\d{2})", re.ASCII)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def week_label(monday: dt.date) -> str:
    year, num, _ = monday.isocalendar()
    return f"{year}-W{num:02d}"


def expand_paths(patterns: Iterable[str | os.PathLike]) -> list[Path]:
    """The files `patterns` name (globs expanded), each once: a log named twice, or named and
    also matched by a glob (`--nccl-logs all.log all.log`, `a.log *.log`), was read twice and
    its failures counted twice."""
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()  # (device, inode): one file under two names too
    for pattern in map(str, patterns):
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for m in matches:
            if not Path(m).is_file():
                raise TracebaseError(f"{printable(m)}: expected an application log or app_failures file, "
                                     f"found {what_is_at(m)}")
            if _binary(Path(m)):
                # (an executable or an image given by a glob too wide: parsed, it matched no line
                # and the report said nothing of it)
                raise TracebaseError(f"{printable(m)}: expected an application log or app_failures file (text), "
                                     "found binary data (NUL bytes)")
            st = os.stat(m)
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                out.append(Path(m))
    return out


def unmatched_globs(patterns: Iterable[str | os.PathLike]) -> list[str]:
    """The glob patterns among `patterns` matching no file (a typo, or a week without logs):
    expand_paths takes them for nothing, and the report said nothing of them."""
    return [printable(p) for p in map(str, patterns) if glob.has_magic(p) and not glob.glob(p)]


def _binary(path: Path) -> bool:
    """A NUL byte in the file's first 8 KiB (what grep and git call binary). A Parquet
    app_failures file is binary by design: its magic bytes say so."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False  # the reader names the error
    return b"\0" in head and not head.startswith(b"PAR1")


def newest_week(dataset: Path) -> str:
    """The date of the newest counters partition: the week a report without --week covers."""
    table = dataset / "counters"
    files = table_partition_files(table) if table.is_dir() else []  # tracer.schema.dataset_files' listing
    if not files:
        raise TracebaseError(f"{dataset}: no counters in the dataset; give --week or ingest first")
    return files[-1].parent.parent.name.removeprefix("date=")


def counter_weeks(dataset: str | os.PathLike) -> list[str]:
    """The ISO weeks (2026-W48) the dataset's counters partitions fall in, oldest first."""
    table = Path(dataset) / "counters"
    files = table_partition_files(table) if table.is_dir() else []
    weeks: list[str] = []
    for day in dict.fromkeys(f.parent.parent.name.removeprefix("date=") for f in files):
        try:
            year, week, _ = dt.date.fromisoformat(day).isocalendar()
        except ValueError:  # a partition the readers refuse by name: not a week of data
            continue
        if (name := f"{year}-W{week:02d}") not in weeks:
            weeks.append(name)
    return weeks


def empty_week_note(dataset: str | os.PathLike, week: str, hosts: int) -> str | None:
    """A line for a report of a week no host reported counters in (a mistyped --week, or a
    fleet that stopped shipping): which weeks do have counters. None when some host reported."""
    if hosts:
        return None
    weeks = counter_weeks(dataset)
    have = (f"the dataset's counters cover {weeks[0]}" + (f" to {weeks[-1]}" if len(weeks) > 1 else "")
            if weeks else "the dataset has no counters")
    return f"no host reported counters in {week}: the report is empty ({have})"


@dataclass(frozen=True)
class CoverageInputs:
    dataset: Path
    week: dt.date  # the Monday of --week, else of the newest counters' week
    probes: dict[str, dict]  # load_probe_set(--probes); {} without one
    logs: list[Path]  # --nccl-logs expanded (globs), every one a file


def check_coverage_inputs(dataset: str | os.PathLike, week: str | None = None,
                          probe_set: str | os.PathLike | None = None,
                          logs: Iterable[str | os.PathLike] | None = None) -> CoverageInputs:
    """The dataset directory, the application logs' paths, --week (or that there are counters
    to take the week from) and --probes, in that order (the order the report meets them), each
    refused with the line the report would give."""
    path = check_dataset(dataset)
    found = expand_paths(logs) if logs else []
    if week is None:
        newest = newest_week(path)
        try:
            monday = week_start(newest)
        except TracebaseError as exc:  # named as the dataset's, not as a --week never given
            raise TracebaseError(f"{path}: the newest counters ({newest}) are in no week a report covers "
                                 f"({WEEK_WORDS} {_week_range()}); give --week") from exc
    else:
        monday = week_start(week)
    probes = load_probe_set(probe_set) if probe_set else {}
    return CoverageInputs(path, monday, probes, found)
