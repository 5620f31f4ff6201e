"""Every set of real programs, oldest first: the one list that the test modules (is a new set
really new?) and bench/scenario_accuracy.py (every case's table) read, so a new set is added
in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scenarios import (
    real,
    real_eighteenth,
    real_eighth,
    real_eleventh,
    real_fifteenth,
    real_fifth,
    real_fiftieth,
    real_fiftyeighth,
    real_fiftyfifth,
    real_fiftyfirst,
    real_fiftyfourth,
    real_fiftyninth,
    real_fiftysecond,
    real_fiftyseventh,
    real_fiftysixth,
    real_fiftythird,
    real_fortieth,
    real_fortyeighth,
    real_fortyfifth,
    real_fortyfirst,
    real_fortyfourth,
    real_fortyninth,
    real_fortysecond,
    real_fortyseventh,
    real_fortysixth,
    real_fortythird,
    real_fourteenth,
    real_fourth,
    real_more,
    real_nineteenth,
    real_ninth,
    real_seventeenth,
    real_seventh,
    real_seventieth,
    real_seventyeighth,
    real_seventyfifth,
    real_seventyfirst,
    real_seventyfourth,
    real_seventysecond,
    real_seventyseventh,
    real_seventysixth,
    real_seventythird,
    real_sixteenth,
    real_sixth,
    real_sixtieth,
    real_sixtyeighth,
    real_sixtyfifth,
    real_sixtyfirst,
    real_sixtyfourth,
    real_sixtyninth,
    real_sixtysecond,
    real_sixtyseventh,
    real_sixtysixth,
    real_sixtythird,
    real_tenth,
    real_third,
    real_thirteenth,
    real_thirtieth,
    real_thirtyeighth,
    real_thirtyfifth,
    real_thirtyfirst,
    real_thirtyfourth,
    real_thirtyninth,
    real_thirtysecond,
    real_thirtyseventh,
    real_thirtysixth,
    real_thirtythird,
    real_twelfth,
    real_twentieth,
    real_twentyeighth,
    real_twentyfifth,
    real_twentyfirst,
    real_twentyfourth,
    real_twentyninth,
    real_twentysecond,
    real_twentyseventh,
    real_twentysixth,
    real_twentythird,
)
from scenarios.harness import NoAnomalyCase, Scenario


@dataclass(frozen=True)
class RealSet:
    """One tests/scenarios/real*.py module: its fault cases, its good-vs-good noise cases and
    the clean-up of what its noise cases leave (mounts, users' files)."""

    module: str
    faults: list[Scenario]
    quiet: list[NoAnomalyCase]
    teardown: Callable[[], None] | None = None


SETS: list[RealSet] = [
    RealSet("real", real.REAL, []),
    RealSet("real_more", real_more.REAL_MORE, real_more.QUIET_MORE),
    RealSet("real_third", real_third.REAL_THIRD, real_third.QUIET_THIRD, real_third.quiet_teardown),
    RealSet("real_fourth", real_fourth.REAL_FOURTH, real_fourth.QUIET_FOURTH, real_fourth.quiet_teardown),
    RealSet("real_fifth", real_fifth.REAL_FIFTH, real_fifth.QUIET_FIFTH, real_fifth.quiet_teardown),
    RealSet("real_sixth", real_sixth.REAL_SIXTH, real_sixth.QUIET_SIXTH, real_sixth.quiet_teardown),
    RealSet("real_seventh", real_seventh.REAL_SEVENTH, real_seventh.QUIET_SEVENTH, real_seventh.quiet_teardown),
    RealSet("real_eighth", real_eighth.REAL_EIGHTH, real_eighth.QUIET_EIGHTH, real_eighth.quiet_teardown),
    RealSet("real_ninth", real_ninth.REAL_NINTH, real_ninth.QUIET_NINTH, real_ninth.quiet_teardown),
    RealSet("real_tenth", real_tenth.REAL_TENTH, real_tenth.QUIET_TENTH, real_tenth.quiet_teardown),
    RealSet("real_eleventh", real_eleventh.REAL_ELEVENTH, real_eleventh.QUIET_ELEVENTH, real_eleventh.quiet_teardown),
    RealSet("real_twelfth", real_twelfth.REAL_TWELFTH, real_twelfth.QUIET_TWELFTH, real_twelfth.quiet_teardown),
    RealSet("real_thirteenth", real_thirteenth.REAL_THIRTEENTH, real_thirteenth.QUIET_THIRTEENTH,
            real_thirteenth.quiet_teardown),
    RealSet("real_fourteenth", real_fourteenth.REAL_FOURTEENTH, real_fourteenth.QUIET_FOURTEENTH,
            real_fourteenth.quiet_teardown),
    RealSet("real_fifteenth", real_fifteenth.REAL_FIFTEENTH, real_fifteenth.QUIET_FIFTEENTH,
            real_fifteenth.quiet_teardown),
    RealSet("real_sixteenth", real_sixteenth.REAL_SIXTEENTH, real_sixteenth.QUIET_SIXTEENTH,
            real_sixteenth.quiet_teardown),
    RealSet("real_seventeenth", real_seventeenth.REAL_SEVENTEENTH, real_seventeenth.QUIET_SEVENTEENTH,
            real_seventeenth.quiet_teardown),
    RealSet("real_eighteenth", real_eighteenth.REAL_EIGHTEENTH, real_eighteenth.QUIET_EIGHTEENTH,
            real_eighteenth.quiet_teardown),
    RealSet("real_nineteenth", real_nineteenth.REAL_NINETEENTH, real_nineteenth.QUIET_NINETEENTH,
            real_nineteenth.quiet_teardown),
    RealSet("real_twentieth", real_twentieth.REAL_TWENTIETH, real_twentieth.QUIET_TWENTIETH,
            real_twentieth.quiet_teardown),
    RealSet("real_twentyfirst", real_twentyfirst.REAL_TWENTYFIRST, real_twentyfirst.QUIET_TWENTYFIRST,
            real_twentyfirst.quiet_teardown),
    RealSet("real_twentysecond", real_twentysecond.REAL_TWENTYSECOND, real_twentysecond.QUIET_TWENTYSECOND,
            real_twentysecond.quiet_teardown),
    RealSet("real_twentythird", real_twentythird.REAL_TWENTYTHIRD, real_twentythird.QUIET_TWENTYTHIRD,
            real_twentythird.quiet_teardown),
    RealSet("real_twentyfourth", real_twentyfourth.REAL_TWENTYFOURTH, real_twentyfourth.QUIET_TWENTYFOURTH,
            real_twentyfourth.quiet_teardown),
    RealSet("real_twentyfifth", real_twentyfifth.REAL_TWENTYFIFTH, real_twentyfifth.QUIET_TWENTYFIFTH,
            real_twentyfifth.quiet_teardown),
    RealSet("real_twentysixth", real_twentysixth.REAL_TWENTYSIXTH, real_twentysixth.QUIET_TWENTYSIXTH,
            real_twentysixth.quiet_teardown),
    RealSet("real_twentyseventh", real_twentyseventh.REAL_TWENTYSEVENTH, real_twentyseventh.QUIET_TWENTYSEVENTH,
            real_twentyseventh.quiet_teardown),
    RealSet("real_twentyeighth", real_twentyeighth.REAL_TWENTYEIGHTH, real_twentyeighth.QUIET_TWENTYEIGHTH,
            real_twentyeighth.quiet_teardown),
    RealSet("real_twentyninth", real_twentyninth.REAL_TWENTYNINTH, real_twentyninth.QUIET_TWENTYNINTH,
            real_twentyninth.quiet_teardown),
    RealSet("real_thirtieth", real_thirtieth.REAL_THIRTIETH, real_thirtieth.QUIET_THIRTIETH,
            real_thirtieth.quiet_teardown),
    RealSet("real_thirtyfirst", real_thirtyfirst.REAL_THIRTYFIRST, real_thirtyfirst.QUIET_THIRTYFIRST,
            real_thirtyfirst.quiet_teardown),
    RealSet("real_thirtysecond", real_thirtysecond.REAL_THIRTYSECOND, real_thirtysecond.QUIET_THIRTYSECOND,
            real_thirtysecond.quiet_teardown),
    RealSet("real_thirtythird", real_thirtythird.REAL_THIRTYTHIRD, real_thirtythird.QUIET_THIRTYTHIRD,
            real_thirtythird.quiet_teardown),
    RealSet("real_thirtyfourth", real_thirtyfourth.REAL_THIRTYFOURTH, real_thirtyfourth.QUIET_THIRTYFOURTH,
            real_thirtyfourth.quiet_teardown),
    RealSet("real_thirtyfifth", real_thirtyfifth.REAL_THIRTYFIFTH, real_thirtyfifth.QUIET_THIRTYFIFTH,
            real_thirtyfifth.quiet_teardown),
    RealSet("real_thirtysixth", real_thirtysixth.REAL_THIRTYSIXTH, real_thirtysixth.QUIET_THIRTYSIXTH,
            real_thirtysixth.quiet_teardown),
    RealSet("real_thirtyseventh", real_thirtyseventh.REAL_THIRTYSEVENTH, real_thirtyseventh.QUIET_THIRTYSEVENTH,
            real_thirtyseventh.quiet_teardown),
    RealSet("real_thirtyeighth", real_thirtyeighth.REAL_THIRTYEIGHTH, real_thirtyeighth.QUIET_THIRTYEIGHTH,
            real_thirtyeighth.quiet_teardown),
    RealSet("real_thirtyninth", real_thirtyninth.REAL_THIRTYNINTH, real_thirtyninth.QUIET_THIRTYNINTH,
            real_thirtyninth.quiet_teardown),
    RealSet("real_fortieth", real_fortieth.REAL_FORTIETH, real_fortieth.QUIET_FORTIETH, real_fortieth.quiet_teardown),
    RealSet("real_fortyfirst", real_fortyfirst.REAL_FORTYFIRST, real_fortyfirst.QUIET_FORTYFIRST,
            real_fortyfirst.quiet_teardown),
    RealSet("real_fortysecond", real_fortysecond.REAL_FORTYSECOND, real_fortysecond.QUIET_FORTYSECOND,
            real_fortysecond.quiet_teardown),
    RealSet("real_fortythird", real_fortythird.REAL_FORTYTHIRD, real_fortythird.QUIET_FORTYTHIRD,
            real_fortythird.quiet_teardown),
    RealSet("real_fortyfourth", real_fortyfourth.REAL_FORTYFOURTH, real_fortyfourth.QUIET_FORTYFOURTH,
            real_fortyfourth.quiet_teardown),
    RealSet("real_fortyfifth", real_fortyfifth.REAL_FORTYFIFTH, real_fortyfifth.QUIET_FORTYFIFTH,
            real_fortyfifth.quiet_teardown),
    RealSet("real_fortysixth", real_fortysixth.REAL_FORTYSIXTH, real_fortysixth.QUIET_FORTYSIXTH,
            real_fortysixth.quiet_teardown),
    RealSet("real_fortyseventh", real_fortyseventh.REAL_FORTYSEVENTH, real_fortyseventh.QUIET_FORTYSEVENTH,
            real_fortyseventh.quiet_teardown),
    RealSet("real_fortyeighth", real_fortyeighth.REAL_FORTYEIGHTH, real_fortyeighth.QUIET_FORTYEIGHTH,
            real_fortyeighth.quiet_teardown),
    RealSet("real_fortyninth", real_fortyninth.REAL_FORTYNINTH, real_fortyninth.QUIET_FORTYNINTH,
            real_fortyninth.quiet_teardown),
    RealSet("real_fiftieth", real_fiftieth.REAL_FIFTIETH, real_fiftieth.QUIET_FIFTIETH,
            real_fiftieth.quiet_teardown),
    RealSet("real_fiftyfirst", real_fiftyfirst.REAL_FIFTYFIRST, real_fiftyfirst.QUIET_FIFTYFIRST,
            real_fiftyfirst.quiet_teardown),
    RealSet("real_fiftysecond", real_fiftysecond.REAL_FIFTYSECOND, real_fiftysecond.QUIET_FIFTYSECOND,
            real_fiftysecond.quiet_teardown),
    RealSet("real_fiftythird", real_fiftythird.REAL_FIFTYTHIRD, real_fiftythird.QUIET_FIFTYTHIRD,
            real_fiftythird.quiet_teardown),
    RealSet("real_fiftyfourth", real_fiftyfourth.REAL_FIFTYFOURTH, real_fiftyfourth.QUIET_FIFTYFOURTH,
            real_fiftyfourth.quiet_teardown),
    RealSet("real_fiftyfifth", real_fiftyfifth.REAL_FIFTYFIFTH, real_fiftyfifth.QUIET_FIFTYFIFTH,
            real_fiftyfifth.quiet_teardown),
    RealSet("real_fiftysixth", real_fiftysixth.REAL_FIFTYSIXTH, real_fiftysixth.QUIET_FIFTYSIXTH,
            real_fiftysixth.quiet_teardown),
    RealSet("real_fiftyseventh", real_fiftyseventh.REAL_FIFTYSEVENTH, real_fiftyseventh.QUIET_FIFTYSEVENTH,
            real_fiftyseventh.quiet_teardown),
    RealSet("real_fiftyeighth", real_fiftyeighth.REAL_FIFTYEIGHTH, real_fiftyeighth.QUIET_FIFTYEIGHTH,
            real_fiftyeighth.quiet_teardown),
    RealSet("real_fiftyninth", real_fiftyninth.REAL_FIFTYNINTH, real_fiftyninth.QUIET_FIFTYNINTH,
            real_fiftyninth.quiet_teardown),
    RealSet("real_sixtieth", real_sixtieth.REAL_SIXTIETH, real_sixtieth.QUIET_SIXTIETH,
            real_sixtieth.quiet_teardown),
    RealSet("real_sixtyfirst", real_sixtyfirst.REAL_SIXTYFIRST, real_sixtyfirst.QUIET_SIXTYFIRST,
            real_sixtyfirst.quiet_teardown),
    RealSet("real_sixtysecond", real_sixtysecond.REAL_SIXTYSECOND, real_sixtysecond.QUIET_SIXTYSECOND,
            real_sixtysecond.quiet_teardown),
    RealSet("real_sixtythird", real_sixtythird.REAL_SIXTYTHIRD, real_sixtythird.QUIET_SIXTYTHIRD,
            real_sixtythird.quiet_teardown),
    RealSet("real_sixtyfourth", real_sixtyfourth.REAL_SIXTYFOURTH, real_sixtyfourth.QUIET_SIXTYFOURTH,
            real_sixtyfourth.quiet_teardown),
    RealSet("real_sixtyfifth", real_sixtyfifth.REAL_SIXTYFIFTH, real_sixtyfifth.QUIET_SIXTYFIFTH,
            real_sixtyfifth.quiet_teardown),
    RealSet("real_sixtysixth", real_sixtysixth.REAL_SIXTYSIXTH, real_sixtysixth.QUIET_SIXTYSIXTH,
            real_sixtysixth.quiet_teardown),
    RealSet("real_sixtyseventh", real_sixtyseventh.REAL_SIXTYSEVENTH, real_sixtyseventh.QUIET_SIXTYSEVENTH,
            real_sixtyseventh.quiet_teardown),
    RealSet("real_sixtyeighth", real_sixtyeighth.REAL_SIXTYEIGHTH, real_sixtyeighth.QUIET_SIXTYEIGHTH,
            real_sixtyeighth.quiet_teardown),
    RealSet("real_sixtyninth", real_sixtyninth.REAL_SIXTYNINTH, real_sixtyninth.QUIET_SIXTYNINTH,
            real_sixtyninth.quiet_teardown),
    RealSet("real_seventieth", real_seventieth.REAL_SEVENTIETH, real_seventieth.QUIET_SEVENTIETH,
            real_seventieth.quiet_teardown),
    RealSet("real_seventyfirst", real_seventyfirst.REAL_SEVENTYFIRST, real_seventyfirst.QUIET_SEVENTYFIRST,
            real_seventyfirst.quiet_teardown),
    RealSet("real_seventysecond", real_seventysecond.REAL_SEVENTYSECOND, real_seventysecond.QUIET_SEVENTYSECOND,
            real_seventysecond.quiet_teardown),
    RealSet("real_seventythird", real_seventythird.REAL_SEVENTYTHIRD, real_seventythird.QUIET_SEVENTYTHIRD,
            real_seventythird.quiet_teardown),
    RealSet("real_seventyfourth", real_seventyfourth.REAL_SEVENTYFOURTH, real_seventyfourth.QUIET_SEVENTYFOURTH,
            real_seventyfourth.quiet_teardown),
    RealSet("real_seventyfifth", real_seventyfifth.REAL_SEVENTYFIFTH, real_seventyfifth.QUIET_SEVENTYFIFTH,
            real_seventyfifth.quiet_teardown),
    RealSet("real_seventysixth", real_seventysixth.REAL_SEVENTYSIXTH, real_seventysixth.QUIET_SEVENTYSIXTH,
            real_seventysixth.quiet_teardown),
    RealSet("real_seventyseventh", real_seventyseventh.REAL_SEVENTYSEVENTH, real_seventyseventh.QUIET_SEVENTYSEVENTH,
            real_seventyseventh.quiet_teardown),
    RealSet("real_seventyeighth", real_seventyeighth.REAL_SEVENTYEIGHTH, real_seventyeighth.QUIET_SEVENTYEIGHTH,
            real_seventyeighth.quiet_teardown),
]


def earlier_sets(module: str) -> list[RealSet]:
    """The sets written before `module`."""
    index = next(i for i, s in enumerate(SETS) if s.module == module)
    return SETS[:index]


def assert_set_is_new(module: str) -> None:
    """No fault case and no noise case of `module` repeats a name of an earlier set."""
    this = next(s for s in SETS if s.module == module)
    earlier = earlier_sets(module)
    repeated = {s.name for s in this.faults} & {s.name for e in earlier for s in e.faults}
    assert not repeated, f"{module}: fault cases named as in an earlier set: {sorted(repeated)}"
    repeated = {c.name for c in this.quiet} & {c.name for e in earlier for c in e.quiet}
    assert not repeated, f"{module}: noise cases named as in an earlier set: {sorted(repeated)}"


def assert_no_program_repeats(module: str, *, scripts: tuple[str, ...]) -> None:
    """No fault case of `module` repeats a fault (program, errno) of an earlier set, leaving out
    the programs that only run a test's script (`scripts`: python3, sh ...)."""
    this = next(s for s in SETS if s.module == module)
    earlier = {(s.program.split()[0], s.expect_errno) for e in earlier_sets(module) for s in e.faults}
    repeated = {(s.program.split()[0], s.expect_errno) for s in this.faults if not s.program.startswith(scripts)}
    assert not repeated & earlier, f"{module}: faults an earlier set has: {sorted(repeated & earlier, key=str)}"


def set_recorder(name: str, heading: str, outcomes: list, quiet: list,
                 teardown: Callable[[], None] | None = None):
    """A module-scoped pytest fixture called `name`: the session's recorder, and, when the
    module's tests are done, the set's clean-up and its two tables of outcomes (top-1 and good
    vs good) printed under `heading`."""
    import pytest

    from scenarios.harness import report_outcomes

    @pytest.fixture(scope="module", name=name)
    def fixture(recorder, request):
        yield recorder
        if teardown is not None:
            teardown()
        report_outcomes(request, [(f"{heading}, top-1 bifurcation (2 good runs vs the bad run):", outcomes),
                                  (f"{heading}, good vs good (must be quiet):", quiet)])

    return fixture
