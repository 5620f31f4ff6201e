"""fleetgen7: a seventh, blind fleet generator (see generator.py for its shape)."""

from .generator import generate
from .templates import ROOT_CAUSES

__all__ = ["ROOT_CAUSES", "generate"]
