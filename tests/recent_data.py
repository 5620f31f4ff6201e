"""Simulated data of "the last hours" inside one UTC day.

`baseline simulate --start 2h --hours 1` run between 01:00 and 02:00 UTC spans midnight: the
hour lands in two date partitions, and a test reading "the" file of a host, or counting days,
saw half of it (CI 128 at 00:00; these contract tests at 01:49). `recent_start` is `--start 2h`
moved back, when it must be, so that the hour ends at midnight: still recent (data of the last
two to three hours), never over two days."""

from __future__ import annotations

import datetime as dt


def recent_start(hours_ago: float = 2, hours: float = 1, now: dt.datetime | None = None) -> str:
    """An ISO start `hours_ago` before now (to the minute), or earlier so that `hours` of data
    from it end by the next midnight."""
    now = now or dt.datetime.now(dt.UTC)
    start = (now - dt.timedelta(hours=hours_ago)).replace(second=0, microsecond=0)
    end = start + dt.timedelta(hours=hours)
    if end.date() != start.date() and end != dt.datetime.combine(end.date(), dt.time(), dt.UTC):
        start = dt.datetime.combine(end.date(), dt.time(), dt.UTC) - dt.timedelta(hours=hours)
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")
