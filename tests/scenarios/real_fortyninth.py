"""A forty-ninth set of real programs with one real fault each: good runs that processed
different data from each other (placeholder: being written)."""

from __future__ import annotations

from .harness import NoAnomalyCase, Scenario

REAL_FORTYNINTH: list[Scenario] = []
QUIET_FORTYNINTH: list[NoAnomalyCase] = []


def quiet_teardown() -> None:
    """Nothing left running or mounted by this set's cases."""
