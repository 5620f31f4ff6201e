"""The simulator's plan checked without the simulator: every argument `simulate` and
`plan_fleet` refuse, in a module that imports neither numpy, polars nor pyarrow.

`baseline simulate` calls `check_simulate` before importing baseline.simulator.simulate (~1 s
of CPU for polars, pyarrow, numpy and pandas), so a fleet too big, a span past 2262, an unknown
--scenario or an --out that is a file is refused at once; `simulate` and `plan_fleet` call the
same checks, so a library caller gets the same line.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from datetime import UTC, datetime

from tracer import units
from tracer.atomic import check_staged_dir
from tracer.errors import TracebaseError

NS = 1_000_000_000
DEFAULT_START = "2026-11-28T00:00:00Z"
DEFAULT_GOOD_RATE = 0.005
MAX_SPOOL_HOSTS = 200
# The largest fleet the simulator plans (hosts are permuted and profiled up front); a typo of
# a few digits more is refused at once instead of failing in numpy or running for days.
MAX_HOSTS = 1_000_000
MAX_TIME_NS = int(units.MAX_TIME.timestamp()) * NS

# The root causes (baseline.simulator.catalog says what each does): here, in the light module,
# because `baseline simulate --help` lists them and --scenario is checked against them.
INJECTED_CAUSES = (
    "dmabuf_peer_fallback",  # (a)
    "efault_peer_cascade",  # (b)
    "dmabuf_eperm_new_driver",  # (c)
    "mkey_cache_enomem",  # (d)
    "crash_loop_fw_bad_state",  # (e)
    "cleanup_ebusy_unprobed",  # (f)
)
BACKGROUND_CAUSES = ("memlock_limit", "stale_qp_handle", "neigh_resolve_timeout", "gid_query_empty_slot",
                     "rdmacg_eagain_retry")
SCENARIOS = INJECTED_CAUSES + BACKGROUND_CAUSES


def parse_start(start: str | datetime | None) -> int:
    """UTC start as ns since the epoch. Accepts ISO 8601 ('2026-11-28T00:00:00Z')."""
    if start is None:
        start = DEFAULT_START
    if isinstance(start, str):
        try:
            dt = datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError:
            raise TracebaseError(f"--start: expected an ISO 8601 time like {DEFAULT_START}, found {start!r}") from None
    else:
        dt = start
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        in_range = units.MIN_TIME <= dt <= units.MAX_TIME
    except OverflowError:  # an offset that carries the time past year 1 or 9999
        in_range = False
    if not in_range:
        raise TracebaseError(f"--start: expected a time between {units.MIN_TIME:%Y} and {units.MAX_TIME:%Y} "
                             f"(int64-nanosecond timestamps), found {start!r}")
    return int(dt.timestamp()) * NS + dt.microsecond * 1000


def parse_scenarios(scenarios: str | Iterable[str] | None) -> frozenset[str]:
    """'all' (default), 'none', or names from SCENARIOS (comma-separated or a list)."""
    if scenarios is None:
        return frozenset(SCENARIOS)
    if isinstance(scenarios, str):
        scenarios = [s for s in scenarios.split(",") if s.strip()]
    names = {s.strip() for s in scenarios}
    if names == {"all"}:
        return frozenset(SCENARIOS)
    if not names:  # '' or ',': a name lost from a script's variable, not a request for none
        raise TracebaseError(f"--scenario: expected names from {', '.join(SCENARIOS)} (or all, none), found ''")
    if names == {"none"}:
        return frozenset()
    unknown = sorted(names - set(SCENARIOS))
    if unknown:
        raise TracebaseError(f"--scenario: expected names from {', '.join(SCENARIOS)} (or all, none), found {', '.join(unknown)}")
    return frozenset(names)


def check_plan(hosts: int, hours: float, seed: int, start: str | datetime | None = None,
               good_rate: float = DEFAULT_GOOD_RATE,
               scenarios: str | Iterable[str] | None = None) -> tuple[frozenset[str], int]:
    """plan_fleet's checks: the scenarios and the start (ns since the epoch) they parse to."""
    if not isinstance(hosts, int) or not 1 <= hosts <= MAX_HOSTS:
        raise TracebaseError(f"--hosts: expected an integer in [1, {MAX_HOSTS}], found {hosts!r}")
    if not (isinstance(hours, (int, float)) and math.isfinite(hours) and hours > 0):
        raise TracebaseError(f"--hours: expected a positive number, found {hours!r}")
    if not 0.0 <= good_rate <= 1.0:
        raise TracebaseError(f"--good-rate: expected a probability in 0..1, found {good_rate!r}")
    # numbers.Integral takes numpy's integers too (numpy registers them) without importing numpy
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:  # SeedSequence: >= 0
        raise TracebaseError(f"--seed: expected an integer >= 0, found {seed!r}")
    sc = parse_scenarios(scenarios)
    start_ns = parse_start(start)
    # timestamps are int64 ns (Arrow, polars): the simulated span must end before they wrap
    if start_ns + hours * 3600 * NS > MAX_TIME_NS:
        raise TracebaseError(f"--hours: expected a span ending before {units.MAX_TIME:%Y} "
                             f"(int64-nanosecond timestamps), found {hours!r}")
    return sc, start_ns


def check_simulate(out_dir: str | os.PathLike, hosts: int, hours: float, seed: int,
                   start: str | datetime | None = None, *, spool: bool = False,
                   scenarios: str | Iterable[str] | None = None, good_rate: float = DEFAULT_GOOD_RATE,
                   events_target: int | None = None, workers: int = 1) -> None:
    """Everything `simulate` refuses before it writes, in its order: the plan, --workers,
    --spool's fleet size, --events-target, then --out (a name taken by a file)."""
    check_plan(hosts, hours, seed, start, good_rate, scenarios)
    units.positive_int(workers, "--workers")  # 0 divided by zero sizing the tasks
    if spool and hosts > MAX_SPOOL_HOSTS:
        raise TracebaseError(f"--spool: writes one directory per host snapshot; expected at most {MAX_SPOOL_HOSTS} hosts, found {hosts}")
    if events_target is not None and events_target < 1:
        raise TracebaseError(f"--events-target: expected a positive integer, found {events_target!r}")
    check_staged_dir(out_dir)
