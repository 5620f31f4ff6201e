"""Export traces to the Chrome Trace Event Format, for the Perfetto UI and chrome://tracing.

Three views, each one JSON object ``{"traceEvents": [...], "displayTimeUnit": "ns",
"otherData": {...}}``:

* a recorded trace (`tracer record`): one track per process and thread (the real pid/tid in the
  track names), every syscall a complete event (``ph: "X"``) at its entry time with its duration,
  ``args`` holding ret, errno, path, path2, arg and seq;
* fleet call trees (`tracer run`, the simulator): the probed frames of each tree as nested
  complete events on the calling thread, one process track per host and process;
* a diff (`baseline diff`): the bad run and a good run side by side as separate processes, both
  starting at 0, the bifurcation an instant event (``ph: "i"``) on the bad thread and the point
  where the good run did something else another instant on the good thread.

Timestamps (``ts``, ``dur``) are microseconds with nanosecond decimals. Wall-clock placement:
a trace's events sit at its ``start_time`` plus their offset on the host clock (``ts_ns`` is a
per-host monotonic clock, so traces of different hosts line up only through ``start_time``);
``align="start"`` instead starts every trace at 0, which is what a side-by-side comparison needs.

Complete events on one thread must nest (a child inside its parent, siblings disjoint) or the
viewers draw them wrongly; `chrome_trace` guarantees it: a frame that ends after its parent (clock
skew between the entry and exit probes) is clipped to the parent's end and marked
``args.clipped_ns``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import polars as pl

from baseline.fleet.model import checked_values
from tracer import atomic, limits
from tracer.errors import TracebaseError
from tracer.schema import RECORD_KEY, parquet_files, scan, unreadable_data_error

if TYPE_CHECKING:
    from baseline.run.allowlist import ExpectedErrors

DEFAULT_MAX_EVENTS = 2_000_000  # a few hundred MB of JSON: about what the Perfetto UI loads comfortably
# Files read again in full with pyarrow before an export, up to this many bytes in all (see
# `_check_pages`): a recording or a few, not a fleet dataset's day
CHECKED_BYTES = 512 << 20
COLUMNS = ["trace_id", "seq", "ts_ns", "pid", "tid", "comm", "probe", "layer", "depth", "ret", "errno",
           "latency_ns", "path", "path2", "arg", "output", "kind", "command", "exit_status", "start_time",
           "host", "repeat_count"]
ARG_COLUMNS = ("ret", "errno", "path", "path2", "arg", "output")


@dataclass(frozen=True)
class Side:
    """Events to draw as one group of process tracks, e.g. the bad run of a diff."""

    events: pl.DataFrame
    label: str | None = None  # prefix of the process names ("bad", "good"), None for none


def _values(given: str | Iterable[str]) -> list[str]:
    """A filter's values; one str is one value (list('good') would be its letters)."""
    return [given] if isinstance(given, str) else list(given)


def _paths(given: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str | os.PathLike]:
    return [given] if isinstance(given, (str, os.PathLike)) else list(given)


def load_events(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    trace_ids: Iterable[str] = (),
    hosts: Iterable[str] = (),
    kinds: Iterable[str] = (),
    max_events: int = DEFAULT_MAX_EVENTS,
) -> pl.DataFrame:
    """Events of Parquet files or directories (a recording, a dataset's events), filtered.

    Raises TracebaseError naming the filter when nothing is left, and when more than
    `max_events` events would be exported (narrow with trace ids, hosts or kinds).
    """
    # a record delivered twice (at-least-once shipping: the same frames in a second part file)
    # is one, as learn and audit count it: its first copy
    lf = scan(paths, "events").select(COLUMNS).unique(list(RECORD_KEY), keep="first", maintain_order=True)
    trace_ids, hosts, kinds = _values(trace_ids), _values(hosts), _values(kinds)
    filters = []
    if trace_ids:
        filters.append(pl.col("trace_id").is_in(trace_ids))
    if hosts:
        filters.append(pl.col("host").is_in(hosts))
    for f in filters:
        lf = lf.filter(f)
    if kinds:
        # a kind no trace has is a damaged file, not a trace the filter leaves out (audit refuses it)
        checked_values(lf.select(pl.col("kind").unique()).collect(), paths)
        lf = lf.filter(pl.col("kind").is_in(kinds))
    n = lf.select(pl.len()).collect().item()
    what = ", ".join(
        f"{name} {', '.join(values)}" for name, values in (("trace", trace_ids), ("host", hosts), ("kind", kinds)) if values
    )
    source = ", ".join(map(str, [paths] if isinstance(paths, (str, os.PathLike)) else paths))
    if n == 0:
        raise TracebaseError(f"{source}: expected events{' of ' + what if what else ''}, found none")
    if n > max_events:
        raise TracebaseError(
            f"{source}: expected at most {max_events:,} events to export, found {n:,}; "
            "narrow with --trace-id, --host or --kind (or raise --max-events)"
        )
    _check_pages(paths)
    _check_room(paths, source)
    # the data model's value rules (a repeat count of 0, a negative depth): refused as audit does
    return checked_values(lf.collect(), paths)


# What a read holds at its peak per byte of the columns it decodes: the decoded pages, the
# frame and the de-duplicated copy (a 300 MiB path needed ~3x that before the JSON was written)
_READ_PEAK_FACTOR = 3


def _check_room(paths: str | os.PathLike | Sequence[str | os.PathLike], source: str) -> None:
    """Under a finite `ulimit -v`, refuse a read the address space cannot hold as out of memory
    before polars starts it: its allocator aborts the process when an allocation fails, where a
    Python handler would have said so in one line. The columns' decoded sizes are in the files'
    footers; nothing is read when no limit is set."""
    import resource

    import pyarrow as pa
    import pyarrow.parquet as pq

    if limits.soft_limit(resource.RLIMIT_AS) is None:
        return
    wanted, decoded = set(COLUMNS), 0
    for f in parquet_files(_paths(paths), "events"):
        try:
            meta = pq.ParquetFile(f).metadata
        except (OSError, pa.ArrowException):
            continue  # the read itself names what is wrong with it
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            decoded += sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)
                           if group.column(c).path_in_schema.split(".")[0] in wanted)
    limits.require_address_space(decoded * _READ_PEAK_FACTOR, f"reading the events of {source}")


def _check_pages(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> None:
    """Refuse files whose data pages do not decode. polars reads a page whose definition levels
    are damaged as nulls without a word (a bit flip in a recording's path column: 483 of 760
    events exported without their path, exit 0), where pyarrow, which diff and learn read with,
    refuses it; the export must not be the one reader that shows a damaged file as data. A
    second read, so only up to CHECKED_BYTES of files."""
    budget = CHECKED_BYTES
    for f in parquet_files(_paths(paths), "events"):
        budget -= os.path.getsize(f)
        if budget < 0:
            return
        error = unreadable_data_error(f)
        if error is not None:
            raise error


def _placed(events: pl.DataFrame, align: str) -> pl.DataFrame:
    """Add `t0` (ns on the export's time line) and `t1` (end) to every event.

    Within a trace, events keep their offsets on the host clock; the trace is placed at its
    wall-clock start_time (align="wall") or at 0 (align="start")."""
    # (a trace is (host, id): another collector may number each host's traces from 1)
    first = pl.col("ts_ns").min().over("host", "trace_id")
    if align == "start":
        base = pl.lit(0, dtype=pl.Int64)
    elif align == "wall":
        base = pl.col("start_time").dt.epoch("ns").fill_null(0)
    else:
        raise ValueError(f"align: expected 'wall' or 'start', found {align!r}")
    # in 128 bits: ts_ns is any int64 (another clock's), and an offset across more than 2^63 ns
    # wrapped around, placing the earliest event last
    start = base.cast(pl.Int128) + (pl.col("ts_ns").cast(pl.Int128) - first.cast(pl.Int128))
    # A call that never returned (exit_group, a killed process) has no latency, nor does a fleet
    # tree's call outside a capture window (not timed): a zero-length event.
    return events.with_columns(t0=start, t1=start + pl.col("latency_ns").fill_null(0).clip(lower_bound=0))


def _nest(t0: list[int], t1: list[int], order: list[int]) -> tuple[list[int], list[int]]:
    """Clip ends so that complete events on one thread nest: each one inside the innermost open
    event that contains its start (events sorted by start, longest first). Returns the new ends
    and the amount clipped from each."""
    ends = list(t1)
    clipped = [0] * len(t1)
    stack: list[int] = []  # ends of the open events
    for i in order:
        while stack and stack[-1] <= t0[i]:
            stack.pop()
        if stack and ends[i] > stack[-1]:
            clipped[i] = ends[i] - stack[-1]
            ends[i] = stack[-1]
        stack.append(ends[i])
    return ends, clipped


def _process_name(label: str | None, host: str | None, pid: int | None, comm: str | None, multi_host: bool) -> str:
    parts = [f"{label}:" if label else None, host if multi_host or label is None and host else None,
             f"pid {pid}" if pid is not None else "pid ?", f"({comm})" if comm else None]
    return " ".join(p for p in parts if p)


def chrome_trace(sides: Sequence[Side], *, align: str = "wall", other: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Trace Event JSON object for one or more groups of events (see the module docstring).

    Each distinct (side, host, pid) becomes one process track with a synthetic integer pid (real
    pids repeat across hosts and runs), each (process, tid) one thread track.
    """
    placed = [(side, _placed(side.events, align)) for side in sides]
    origin = min((int(p["t0"].min()) for _, p in placed if p.height), default=0)
    out: list[dict[str, Any]] = []  # metadata first
    calls: list[dict[str, Any]] = []
    next_pid = 1
    for sort_index, (side, ev) in enumerate(placed):
        if ev.height == 0:
            continue
        multi_host = ev["host"].n_unique() > 1
        ev = ev.with_columns(pl.col("pid").fill_null(-1), pl.col("tid").fill_null(pl.col("pid")).fill_null(-1))
        # The name a process ends with (after its exec), from its main thread when recorded.
        main = pl.col("comm").filter(pl.col("tid") == pl.col("pid")).drop_nulls()
        procs = ev.sort("trace_id", "seq").group_by("host", "pid", maintain_order=True).agg(
            comm=pl.coalesce(main.last(), pl.col("comm").drop_nulls().last())
        )
        pid_of: dict[tuple[str | None, int], int] = {}
        for host, pid, comm in procs.iter_rows():
            pid_of[(host, pid)] = next_pid
            name = _process_name(side.label, host, pid if pid >= 0 else None, comm, multi_host)
            out.append({"ph": "M", "name": "process_name", "pid": next_pid, "tid": 0, "args": {"name": name}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": next_pid, "tid": 0,
                        "args": {"sort_index": sort_index * 1_000_000 + next_pid}})
            next_pid += 1
        threads = ev.sort("trace_id", "seq").group_by("host", "pid", "tid", maintain_order=True).agg(comm=pl.col("comm").drop_nulls().last())
        for host, pid, tid, comm in threads.iter_rows():
            label = f"{comm or 'thread'} {tid}" if tid >= 0 else "thread ?"
            out.append({"ph": "M", "name": "thread_name", "pid": pid_of[(host, pid)], "tid": tid, "args": {"name": label}})
        calls.extend(_complete_events(ev, pid_of, origin))
    # Time order (parents before the children they contain) reads best and loads fastest.
    calls.sort(key=lambda e: (e["ts"], -e["dur"]))
    out.extend(calls)
    meta = {"producer": "tracebase baseline export", "align": align, **(other or {})}
    return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": meta}


def _complete_events(ev: pl.DataFrame, pid_of: dict[tuple[str | None, int], int], origin: int) -> list[dict[str, Any]]:
    # Per thread: by start, then longest first (a parent before the children it contains), then
    # depth and seq so that equal intervals keep their tree order.
    ev = ev.with_columns(dur=pl.col("t1") - pl.col("t0")).sort(
        ["host", "pid", "tid", "t0", "dur", "depth", "trace_id", "seq"],
        descending=[False, False, False, False, True, False, False, False], nulls_last=True,
    )
    rows = ev.to_dicts()
    out: list[dict[str, Any]] = []
    start = 0
    while start < len(rows):
        key = (rows[start]["host"], rows[start]["pid"], rows[start]["tid"])
        stop = start
        while stop < len(rows) and (rows[stop]["host"], rows[stop]["pid"], rows[stop]["tid"]) == key:
            stop += 1
        thread = rows[start:stop]
        t0 = [r["t0"] for r in thread]
        ends, clipped = _nest(t0, [r["t1"] for r in thread], list(range(len(thread))))
        for r, end, cut in zip(thread, ends, clipped, strict=True):
            args = {c: r[c] for c in ARG_COLUMNS if r[c] is not None}
            args["seq"] = r["seq"]
            args["trace_id"] = r["trace_id"]
            if r["repeat_count"] not in (None, 1):
                args["repeat_count"] = r["repeat_count"]
            if r["latency_ns"] is None:  # a recorded call that never returned, or a fleet tree
                if r["kind"] == "full":    # outside a capture window (returned, not timed)
                    args["returned"] = False
                else:
                    args["latency"] = "not measured"
            if cut:
                args["clipped_ns"] = cut
            event = {
                "name": r["probe"], "cat": r["layer"] or "call", "ph": "X",
                "ts": (r["t0"] - origin) / 1000, "dur": (end - r["t0"]) / 1000,
                "pid": pid_of[(r["host"], r["pid"])], "tid": r["tid"], "args": args,
            }
            if r["errno"]:
                event["cname"] = "terrible"  # chrome://tracing's reserved red; Perfetto ignores it
            out.append(event)
        start = stop
    return out


def export_trace(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    trace_ids: Iterable[str] = (),
    hosts: Iterable[str] = (),
    kinds: Iterable[str] = (),
    align: str = "wall",
    max_events: int = DEFAULT_MAX_EVENTS,
) -> dict[str, Any]:
    """A recording or fleet call trees (events Parquet files/directories) as Trace Event JSON."""
    events = load_events(paths, trace_ids=trace_ids, hosts=hosts, kinds=kinds, max_events=max_events)
    return chrome_trace([Side(events)], align=align, other={"traces": events["trace_id"].n_unique()})


def export_diff(
    good: Sequence[str | os.PathLike],
    bad: str | os.PathLike,
    *,
    allowlist: ExpectedErrors | str | os.PathLike | None = None,
    trace_id: str | None = None,
    mixed: bool = False,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> dict[str, Any]:
    """The bad run beside the good run the diff compared it with, both starting at 0, and the
    bifurcation (and what the good run did there instead) as instant events. `allowlist`: as
    diff_traces' `expected` (a loaded list, a YAML path, None for the curated one)."""
    from baseline.run.diff import diff_traces

    good = _paths(good)
    report = diff_traces(good, bad, expected=allowlist, trace_id=trace_id, mixed=mixed)
    bad_ev = load_events(bad, trace_ids=[trace_id] if trace_id else (), max_events=max_events)
    bif = report.bifurcation
    good_ids = [e["trace_id"] for e in (bif or {}).get("good_instead", [])] or report.good_traces[:1]
    good_ev = load_events(good, trace_ids=good_ids[:1], max_events=max_events)
    trace = chrome_trace([Side(bad_ev, "bad"), Side(good_ev, "good")], align="start",
                         other={"bad_trace": report.bad_trace, "good_trace": good_ids[0],
                                "anomaly_count": report.anomaly_count,
                                "allowlist": report.settings.get("allowlist")})
    if bif is not None:
        trace["traceEvents"].extend(_marks(trace["traceEvents"], bif, bad_ev["trace_id"][0], good_ids[0]))
    return trace


def _marks(events: list[dict[str, Any]], bif: dict[str, Any], bad_trace: str, good_trace: str) -> list[dict[str, Any]]:
    """Instant events at the bifurcation (bad run) and at the first thing the good run did instead."""
    by_seq = {(e["args"]["trace_id"], e["args"]["seq"]): e for e in events if e["ph"] == "X"}
    what = " ".join(str(x) for x in (bif["probe"], bif["errno"], bif["path"]) if x)
    args = {"kind": bif["kind"], "score": bif["score"], "probe": bif["probe"], "errno": bif["errno"],
            "path": bif["path"], "recovered": bif["recovered"], "seq": bif["position"]}
    marks = []
    at = by_seq.get((bad_trace, bif["position"]))
    if at is None:  # a missing process or the end of a thread: mark the end of the bad run
        bad_x = [e for e in events if e["ph"] == "X" and e["args"]["trace_id"] == bad_trace]
        at = max(bad_x, key=lambda e: e["ts"] + e["dur"]) if bad_x else None
    if at is not None:
        marks.append({"name": f"bifurcation: {what}", "cat": "diff", "ph": "i", "s": "t", "ts": at["ts"],
                      "pid": at["pid"], "tid": at["tid"], "args": args})
    instead = bif.get("good_instead") or []
    g = by_seq.get((good_trace, instead[0]["seq"])) if instead and instead[0].get("seq") is not None else None
    if g is not None:
        marks.append({"name": f"good run instead: {g['name']}", "cat": "diff", "ph": "i", "s": "t", "ts": g["ts"],
                      "pid": g["pid"], "tid": g["tid"], "args": {"seq": instead[0]["seq"], "path": instead[0].get("path")}})
    return marks


def dumps(trace: dict[str, Any]) -> str:
    """Compact JSON (one line: the viewers do not care, files stay small)."""
    return json.dumps(trace, separators=(",", ":"), default=str) + "\n"


def dump(trace: dict[str, Any], fh: TextIO) -> None:
    fh.write(dumps(trace))


def write_json(trace: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write the Trace Event JSON atomically."""
    return atomic.write_text(path, dumps(trace))
