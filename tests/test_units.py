"""The one parser of durations, times and numeric option values (tracer.units), and the CLI's
argparse converters over it: every bad value is refused naming the flag, with expected/found."""

from __future__ import annotations

import datetime as dt

import pytest

from tracer import units
from tracer.errors import TracebaseError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("100us", 1e-4), ("100µs", 1e-4), ("250ns", 2.5e-7), ("5ms", 0.005), ("10s", 10.0), ("10", 10.0),
     ("0.5", 0.5), (".5s", 0.5), ("2m", 120.0), ("1h", 3600.0), ("1d", 86400.0), ("1.5d", 129600.0),
     (" 3 s ", 3.0), (7, 7.0), (0.25, 0.25)],
)
def test_durations(text, seconds):
    assert units.parse_duration(text, "-d") == seconds


@pytest.mark.parametrize("bad", ["nan", "inf", "-1", "-1s", "1e3", "10x", "s", "", "1 0s", "1w", "0", "0ms",
                                 float("nan"), float("inf"), -2.0, 0, True,
                                 # past int64 nanoseconds (~292 years); other scripts' digits; '1_0'
                                 "9999999999d", "99999999999999999999d", 1e20, "\u0661\u0660s", "1_0s"])
def test_bad_durations_name_the_flag(bad):
    with pytest.raises(TracebaseError) as err:
        units.parse_duration(bad, "--good-every")
    assert str(err.value).startswith("--good-every: expected a duration like 100us, 5ms, 10s, 2m, 1h, 1d")
    assert str(err.value).endswith(f"found {bad!r}")


@pytest.mark.parametrize("bad", ["1e-9", "1e3", "2E3ms", " 1.5e2 s", ".5e1"])
def test_an_exponent_is_named_as_the_reason(bad):
    """A number in exponent form is refused for that, with the units it may take (battery 49:
    '-d 1e-9' said only "greater than 0", which it is)."""
    with pytest.raises(TracebaseError) as err:
        units.parse_duration(bad, "-d")
    assert ", written without an exponent (units ns, us, ms, s, m, h, d), found " in str(err.value)


def test_zero_duration_only_when_allowed():
    assert units.parse_duration("0", "x", allow_zero=True) == 0.0
    assert units.parse_duration_ns("50ms", "x") == 50_000_000
    assert units.parse_duration_ns("100us", "x") == 100_000


def test_times():
    now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
    assert units.parse_time("2h", now=now) == dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)
    assert units.parse_time("1d", now=now) == dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    assert units.parse_time("now", now=now) == now
    assert units.parse_time("2026-11-28") == dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    assert units.parse_time("2026-11-28T06:00:00Z") == dt.datetime(2026, 11, 28, 6, tzinfo=dt.UTC)
    assert units.parse_time("2026-11-28 06:00") == dt.datetime(2026, 11, 28, 6, tzinfo=dt.UTC)
    plus2 = units.parse_time("2026-11-28T08:00:00+02:00")
    assert plus2 == dt.datetime(2026, 11, 28, 6, tzinfo=dt.UTC)
    assert units.parse_time(None) is None
    assert units.parse_time(dt.datetime(2026, 1, 1)).tzinfo is not None


@pytest.mark.parametrize("bad", ["yesterday", "nan", "-2h", "2026-13-01", "2026-11-31", "inf", "",
                                 # outside the int64-nanosecond timestamps (1677..2262), before year 1
                                 "0001-01-01", "2300-01-01", "0001-01-01T00:00:00+23:59", "200000d",
                                 "9999-12-31T23:59:59-23:59", dt.datetime(1, 1, 1)])
def test_bad_times_name_the_flag(bad):
    with pytest.raises(TracebaseError, match=r"^--since: expected .*found"):
        units.parse_time(bad, "--since")


@pytest.mark.parametrize(
    ("fn", "good", "bad"),
    [
        (units.positive_int, {"1": 1, "42": 42, " 7 ": 7, "+3": 3}, ["0", "-1", "1.5", "nan", "x", "", "1_0",
                                                                     "\u0661", "\uff11"]),
        (units.non_negative_int, {"0": 0, "3": 3}, ["-1", "nan", "2.0"]),
        (units.fraction, {"0": 0.0, "1": 1.0, "0.25": 0.25}, ["-0.1", "1.01", "nan", "inf"]),
        (units.positive_float, {"25": 25.0, "0.1": 0.1}, ["0", "-3", "nan", "inf", "-inf"]),
        (units.non_negative_float, {"0": 0.0}, ["-1e-9", "nan"]),
        (units.finite_float, {"-3": -3.0, "1e3": 1000.0}, ["nan", "inf", "-inf", "x", "1_0", "\u0661.5"]),
    ],
)
def test_numbers(fn, good, bad):
    for text, value in good.items():
        assert fn(text, "--n") == value
    for text in bad:
        with pytest.raises(TracebaseError, match=rf"^--n: expected .*, found {text!r}$"):
            fn(text, "--n")


def test_ranges():
    assert units.int_range("5", "--k", lo=1, hi=10) == 5
    with pytest.raises(TracebaseError, match=r"--k: expected an integer in \[1, 10\], found '11'"):
        units.int_range("11", "--k", lo=1, hi=10)
    with pytest.raises(TracebaseError, match=r"expected a finite number in \(0, 100\], found '0'"):
        units.finite_float("0", "--pct", lo=0, hi=100, lo_open=True)


@pytest.mark.parametrize("fn", [units.positive_int, units.non_negative_int])
def test_an_integer_past_pythons_digit_limit_is_refused_naming_the_flag(fn):
    """int() refuses more than 4,300 digits with a ValueError, which reached `baseline simulate
    --hosts 111...1` as an internal error and a crash file."""
    with pytest.raises(TracebaseError, match=r"^--hosts: expected .*, found '1{20}\.\.\. \(4,301 digits\)'$"):
        fn("1" * 4301, "--hosts")


def test_compact_days_after_past_the_calendar_names_its_range(tmp_path):
    """--compact-days-after 3000000 overflowed the date arithmetic (an internal error and a crash
    file): the flag takes at most a century, and the library compacts nothing that old."""
    import datetime as dt

    from cli_harness import one_line_error, run_shell

    from baseline.pipeline.ingest import compact_days

    for days in ("3000000", "9" * 40):
        proc = run_shell(f"baseline ingest spool ds --compact-days-after {days}", cwd=tmp_path)
        assert "--compact-days-after: expected an integer in [0, 36500]" in one_line_error(proc)
    (tmp_path / "ds" / "events" / "date=2026-11-28").mkdir(parents=True)
    result = compact_days(tmp_path / "ds", days_after=10**9, today=dt.date(2026, 12, 5))
    assert result.days == 0 and not result.days_left  # (no date is that old)
