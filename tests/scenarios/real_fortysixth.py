"""Placeholder for the fortysixth set of real programs (written blind by a helper)."""

from __future__ import annotations

from scenarios.harness import NoAnomalyCase, Scenario

REAL_FORTYSIXTH: list[Scenario] = []
QUIET_FORTYSIXTH: list[NoAnomalyCase] = []
BENCH_ONLY: set[str] = set()
QUIET_BENCH_ONLY: set[str] = set()


def quiet_teardown() -> None:
    """Nothing to clean up yet."""
