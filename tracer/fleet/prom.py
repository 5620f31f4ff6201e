"""The fleet tracer's Prometheus textfile (node_exporter's textfile collector), written with
prometheus_client: one family per metric with its HELP and TYPE, samples grouped under it.

Families (labels host, set, probe, layer unless said):
    tracebase_probe_invocations_total   counter  calls of a probed function since the tracer started
    tracebase_probe_failures_total      counter  failed calls
    tracebase_probe_errno_total         counter  failed calls by errno (+ errno)
    tracebase_probe_live                gauge    1 when the probe is attached
    tracebase_lost_records_total        counter  call trees the ring buffer had no room for (host, set)
    tracebase_slot_collisions_total     counter  call trees kept in task-local storage because another
                                                 live thread held their per-thread slot (host, set)
    tracebase_snapshots_total           counter  snapshots written (host)
    tracebase_last_snapshot_timestamp_seconds  gauge  Unix time of the last snapshot (host):
                                                     alert on time() - this > a few intervals
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tracer import atomic

PROBE_LABELS = ["host", "set", "probe", "layer"]


@dataclass(frozen=True)
class ProbeSample:
    """Cumulative figures of one probe, as the textfile shows them."""

    set: str
    probe: str
    layer: str
    invocations: int
    failures: int
    errnos: dict[str, int]
    live: bool


@dataclass(frozen=True)
class SetSample:
    set: str
    lost_records: int
    collided: int = 0  # trees kept in task storage: their slot was held by another thread


class _Snapshot:
    """A one-shot collector over figures already gathered (nothing is read at collect time)."""

    def __init__(self, host: str, probes: list[ProbeSample], sets: list[SetSample], snapshots: int,
                 last_snapshot_s: float | None, held_snapshots: int = 0):
        self.host, self.probes, self.sets = host, probes, sets
        self.snapshots, self.last_snapshot_s, self.held = snapshots, last_snapshot_s, held_snapshots

    def collect(self) -> Iterator[Metric]:
        h = self.host
        inv = CounterMetricFamily("tracebase_probe_invocations", "Calls of a probed function since the tracer started.",
                                  labels=PROBE_LABELS)
        fail = CounterMetricFamily("tracebase_probe_failures", "Failed calls of a probed function since the tracer started.",
                                   labels=PROBE_LABELS)
        errs = CounterMetricFamily("tracebase_probe_errno", "Failed calls of a probed function by errno.",
                                   labels=[*PROBE_LABELS, "errno"])
        live = GaugeMetricFamily("tracebase_probe_live", "1 when the probe is attached, 0 when it could not attach.",
                                 labels=PROBE_LABELS)
        for p in self.probes:
            labels = [h, p.set, p.probe, p.layer]
            inv.add_metric(labels, p.invocations)
            fail.add_metric(labels, p.failures)
            live.add_metric(labels, 1 if p.live else 0)
            for name, count in sorted(p.errnos.items()):
                errs.add_metric([*labels, name], count)
        lost = CounterMetricFamily("tracebase_lost_records", "Call-tree records the ring buffer had no room for "
                                   "(their counters are exact; only the example is lost).", labels=["host", "set"])
        collided = CounterMetricFamily("tracebase_slot_collisions", "Call trees kept in task-local storage because "
                                       "another live thread held their per-thread slot (a slower path; trees and "
                                       "counters stay exact).", labels=["host", "set"])
        for s in self.sets:
            lost.add_metric([h, s.set], s.lost_records)
            collided.add_metric([h, s.set], s.collided)
        snaps = CounterMetricFamily("tracebase_snapshots", "Spool snapshots written since the tracer started.",
                                    labels=["host"])
        snaps.add_metric([h], self.snapshots)
        last = GaugeMetricFamily("tracebase_last_snapshot_timestamp_seconds",
                                 "Unix time of the last spool snapshot (stale when the tracer stopped).",
                                 labels=["host"])
        if self.last_snapshot_s is not None:  # none yet: no sample (a 0 would read as 1970)
            last.add_metric([h], self.last_snapshot_s)
        held = GaugeMetricFamily("tracebase_held_snapshots",
                                 "Closed intervals held in memory because the spool could not be written "
                                 "(full, read-only); retried every interval.", labels=["host"])
        held.add_metric([h], self.held)
        yield from (inv, fail, errs, live, lost, collided, snaps, last, held)


def prometheus_text(host: str, probes: Iterable[ProbeSample], sets: Iterable[SetSample], *, snapshots: int,
                    last_snapshot_s: float | None, held_snapshots: int = 0) -> str:
    """The textfile's content (Prometheus text exposition format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(host, list(probes), list(sets), snapshots, last_snapshot_s, held_snapshots))
    return generate_latest(registry).decode()


def write_textfile(path: str | os.PathLike, text: str) -> Path:
    """Replace the textfile atomically (node_exporter must never read half a file). Rewritten
    every interval: the rename is enough, no fsync. The mode follows the umask (tracer.atomic),
    so node_exporter, running as its own user, can read it under the usual umask 022."""
    return atomic.write_text(path, text, durable=False)


def stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Temporaries of textfile writes left by a killed tracer in this textfile's directory:
    this textfile's ('.<name>.*.tmp'), and any other *.prom's of ours whose writer is gone -- a
    tracer killed while writing another --prom name left it there, and no later run writes
    that name again (node_exporter skips dot files, but they pile up in its directory). Another
    user's and a live writer's (another daemon's textfile) are left alone."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    own = sorted(p for p in path.parent.iterdir()
                 if atomic.is_temporary_for(p.name, path.name) and (p.is_file() or p.is_symlink()))
    return own + [p for p in dead_temporaries(path.parent) if p not in own]


def dead_temporaries(directory: str | os.PathLike) -> list[Path]:
    """The *.prom temporaries in `directory` that are ours (our uid, a regular file) and whose
    writer is gone: no one will rename them."""
    found = []
    for p in Path(directory).glob(".*.prom.*.tmp"):
        owner = atomic.temporary_of(p.name)
        if owner is None or not owner[0].endswith(".prom") or not atomic.writer_gone(owner[1]):
            continue
        with contextlib.suppress(OSError):
            st = p.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                found.append(p)
    return sorted(found)


# The spool host directory's writer lock file (tracer.fleet.spool.WriterLock) holds the writer's
# pid, then 'prom <absolute --prom path>': a daemon restarted with --prom in another directory
# (or none) learns there where the killed one wrote, and clears that directory's temporaries.
def textfile_note(path: str | os.PathLike | None) -> bytes:
    """What a daemon with this --prom writes after its pid in the writer lock file."""
    return b"" if path is None else b"prom " + os.fsencode(os.path.abspath(path)) + b"\n"


def previous_textfile(lock_content: bytes) -> Path | None:
    """The --prom path the last daemon on a spool host directory wrote (its textfile_note)."""
    for line in lock_content.split(b"\n")[1:]:
        if line.startswith(b"prom /") and b"\0" not in line:
            return Path(os.fsdecode(line[5:]))
    return None
