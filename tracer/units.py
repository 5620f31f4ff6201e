"""The one parser for durations, times and numeric option values, shared by every CLI and config.

Durations: a number with an optional unit, `100us`, `5ms`, `10s`, `2m`, `1h`, `1d` (`ns` and
`µs` too); a bare number is seconds. Times: an ISO date or date-time (`2026-11-28`,
`2026-11-28T06:00:00Z`; naive means UTC), `now`, or a duration meaning that long ago
(`--since 2h` = now - 2 hours).

Every parser takes the text and the flag (or config field) it came from, and raises a
TracebaseError naming that flag with what was expected and what was found:
``--trend-pct: expected a finite number, found 'nan'``. nan, inf and negative values are
refused everywhere: no option of tracebase means anything by them. `tracer.cli.common` wraps
these as argparse `type=` converters.
"""

from __future__ import annotations

import datetime as dt
import math
import re

from tracer.errors import TracebaseError

UNIT_NS: dict[str, int] = {
    "ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9,
    "h": 3600 * 10**9, "d": 86400 * 10**9,
}
# ASCII digits only (no sign, no exponent, no nan/inf, no '1_000', no other scripts' digits,
# which Python's int/float/Decimal would all take): the forms a user types for a duration.
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h|d)?\s*$", re.ASCII)
_EXPONENT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+\s*[a-zµ]*\s*$")
_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
DURATION_EXAMPLES = "100us, 5ms, 10s, 2m, 1h, 1d or plain seconds"
# Every duration and time ends up as int64 nanoseconds (BPF maps, Arrow timestamp('ns') columns,
# polars Datetime('ns')): beyond that a value overflows deep inside (OverflowError from
# timedelta, a wrapped BPF bound) instead of being refused here, naming the flag.
MAX_DURATION_S = (2**63 - 1) // 10**9  # ~292 years
MAX_DURATION_WORDS = f"at most {MAX_DURATION_S // 86400}d"
MIN_TIME = dt.datetime(1678, 1, 1, tzinfo=dt.UTC)  # int64 ns timestamps span 1677-09-21 .. 2262-04-11
MAX_TIME = dt.datetime(2262, 1, 1, tzinfo=dt.UTC)


def _name(flag: str | None) -> str:
    return f"{flag}: " if flag else ""


def _fail(flag: str | None, expected: str, found: object) -> TracebaseError:
    return TracebaseError(f"{_name(flag)}expected {expected}, found {found!r}")


def parse_duration(text: str | float | int, flag: str | None = "--duration", *, allow_zero: bool = False) -> float:
    """'100us' -> 1e-4, '500ms' -> 0.5, '10' / '10s' -> 10.0, '2m' -> 120.0, '1d' -> 86400.0.

    Seconds, finite, > 0 (>= 0 with `allow_zero`). Numbers (from a config file) are seconds.
    """
    what = f"a duration like {DURATION_EXAMPLES}" + (" (0 allowed)" if allow_zero else ", greater than 0")
    if isinstance(text, bool):
        raise _fail(flag, what, text)
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        match = _DURATION.match(str(text))
        if not match:
            if _EXPONENT.match(str(text)):  # '1e-9': a number, but not in a form the listed ones take
                raise _fail(flag, f"{what}, written without an exponent (units ns, us, ms, s, m, h, d)", text)
            raise _fail(flag, what, text)
        # Decimal so that '100us' is exactly 1e-4 s, not 100 * 1e-6 (imported here: only a
        # duration given needs it, not --help)
        from decimal import Decimal

        seconds = float(Decimal(match.group(1)) * UNIT_NS[match.group(2) or "s"] / 10**9)
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise _fail(flag, what, text)
    if seconds > MAX_DURATION_S:
        raise _fail(flag, f"{what}, {MAX_DURATION_WORDS}", text)
    return seconds


def parse_duration_ns(text: str | float | int, flag: str | None = "--duration", *, allow_zero: bool = False) -> int:
    """parse_duration in integer nanoseconds (BPF-side bounds such as --latency-bound)."""
    return round(parse_duration(text, flag, allow_zero=allow_zero) * 10**9)


def epoch_ns(when: dt.datetime) -> int:
    """An aware datetime as nanoseconds since the epoch, exactly: no float seconds (at today's
    dates `timestamp() * 1e6` can land a microsecond off), and a pendulum DateTime, as Airflow
    hands a task its interval, too (its difference is no timedelta)."""
    import calendar

    return calendar.timegm(when.utctimetuple()) * 1_000_000_000 + when.microsecond * 1000


def parse_time(
    value: str | dt.datetime | dt.date | None,
    flag: str | None = "--since",
    *,
    now: dt.datetime | None = None,
) -> dt.datetime | None:
    """ISO date/date-time (naive = UTC), 'now', or a duration ago ('2h' = now - 2h) -> aware UTC.

    None stays None (the option was not given).
    """
    if value is None:
        return None
    expected = "an ISO date or time (2026-11-29, 2026-11-29T10:00:00Z) or a time ago (2h, 1d)"
    parsed = _parse_time(value, flag, expected, now)
    try:  # an offset can carry a time past year 1 or 9999 once in UTC
        in_range = MIN_TIME <= parsed <= MAX_TIME
    except OverflowError:
        in_range = False
    if not in_range:
        raise _fail(flag, f"{expected} between {MIN_TIME:%Y} and {MAX_TIME:%Y}", value)
    return parsed


def _parse_time(value: str | dt.datetime | dt.date, flag: str | None, expected: str,
                now: dt.datetime | None) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    text = str(value).strip()
    current = now or dt.datetime.now(dt.UTC)
    if text.lower() == "now":
        return current
    if _DURATION.match(text):
        ago = parse_duration(text, flag, allow_zero=True)
        try:
            return current - dt.timedelta(seconds=ago)
        except OverflowError:  # before year 1: refused by the range check with the flag named
            return dt.datetime.min.replace(tzinfo=dt.UTC)
    # A trailing "Z" is what people paste; spell it as an offset so the accepted forms do not
    # depend on the interpreter's fromisoformat.
    iso = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        parsed = dt.datetime.fromisoformat(iso)
    except ValueError:
        raise _fail(flag, expected, value) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def naive_time_note(value: str, parsed: dt.datetime) -> str | None:
    """What to tell a user whose ISO time without an offset (`2026-11-28T10:00`, `2026-11-28`)
    was read as UTC -- the rule every reader follows (options, configs, Parquet timestamps
    without a zone, NCCL log lines) -- while the machine's local zone (TZ) is another at that
    time: a user in Berlin typing 10:00 may mean 09:00 UTC. None when the text carries an
    offset, is relative ('2h', 'now'), or local time is UTC then (nothing to confuse)."""
    text = str(value).strip()
    if text.lower() == "now" or _DURATION.match(text) or text[-1:] in ("Z", "z"):
        return None
    try:
        given = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if given.tzinfo is not None:
        return None
    try:
        local = parsed.astimezone()  # the zone of TZ / /etc/localtime at that instant
    except (OverflowError, OSError, ValueError):  # outside the platform's local-time range
        return None
    offset = local.utcoffset()
    if not offset:
        return None
    sign, minutes = ("+" if offset >= dt.timedelta(0) else "-"), abs(int(offset.total_seconds())) // 60
    zone = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return (f"note: time {text!r} has no time zone: read as UTC ({parsed:%Y-%m-%dT%H:%M:%SZ}), not local time "
            f"({local.tzname()}, {zone}); write {text}{zone if 'T' in text or ' ' in text else 'T00:00' + zone} "
            "for local time")


# --------------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------------
def _as_int(text: str | int, flag: str | None, expected: str) -> int:
    if isinstance(text, bool):
        raise _fail(flag, expected, text)
    if isinstance(text, int):
        return text
    if not _INTEGER.fullmatch(str(text)):  # int() would take '1_000' and non-ASCII digits
        raise _fail(flag, expected, text)
    try:
        return int(str(text).strip(), 10)
    except ValueError:  # past Python's 4,300 digits (no flag takes such a number)
        raise _fail(flag, expected, f"{str(text).strip()[:20]}... ({len(str(text).strip()):,} digits)") from None


def positive_int(text: str | int, flag: str | None = None) -> int:
    """An integer >= 1."""
    value = _as_int(text, flag, "a positive integer")
    if value < 1:
        raise _fail(flag, "a positive integer", text)
    return value


def non_negative_int(text: str | int, flag: str | None = None) -> int:
    """An integer >= 0."""
    value = _as_int(text, flag, "an integer >= 0")
    if value < 0:
        raise _fail(flag, "an integer >= 0", text)
    return value


def int_range(text: str | int, flag: str | None = None, *, lo: int | None = None, hi: int | None = None) -> int:
    """An integer in [lo, hi] (either bound optional)."""
    expected = _range_words("an integer", lo, hi)
    value = _as_int(text, flag, expected)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise _fail(flag, expected, text)
    return value


def finite_float(
    text: str | float,
    flag: str | None = None,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
) -> float:
    """A finite number in [lo, hi] ((lo, hi] with `lo_open`); never nan or inf."""
    expected = _range_words("a finite number", lo, hi, lo_open)
    if isinstance(text, bool) or isinstance(text, str) and (not text.isascii() or "_" in text):
        raise _fail(flag, expected, text)  # float() would take '1_0' and other scripts' digits
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _fail(flag, expected, text) from None
    if not math.isfinite(value):
        raise _fail(flag, expected, text)
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise _fail(flag, expected, text)
    if hi is not None and value > hi:
        raise _fail(flag, expected, text)
    return value


def positive_float(text: str | float, flag: str | None = None) -> float:
    """A finite number > 0."""
    return finite_float(text, flag, lo=0.0, lo_open=True)


def non_negative_float(text: str | float, flag: str | None = None) -> float:
    """A finite number >= 0."""
    return finite_float(text, flag, lo=0.0)


def fraction(text: str | float, flag: str | None = None) -> float:
    """A number in [0, 1] (a probability, a share)."""
    return finite_float(text, flag, lo=0.0, hi=1.0)


def _range_words(what: str, lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    def fmt(x: float) -> str:
        return f"{x:g}"

    if lo is not None and hi is not None:
        return f"{what} in {'(' if lo_open else '['}{fmt(lo)}, {fmt(hi)}]"
    if lo is not None:
        return f"{what} {'>' if lo_open else '>='} {fmt(lo)}"
    if hi is not None:
        return f"{what} <= {fmt(hi)}"
    return what
