"""A forty-eighth set of real programs with one real fault each: good runs recorded in
environments that differ from each other (placeholder: being written)."""

from __future__ import annotations

from .harness import NoAnomalyCase, Scenario

REAL_FORTYEIGHTH: list[Scenario] = []
QUIET_FORTYEIGHTH: list[NoAnomalyCase] = []


def quiet_teardown() -> None:
    """Nothing left running or mounted by this set's cases."""
