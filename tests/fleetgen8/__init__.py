"""fleetgen8: an eighth, blind fleet generator (see generator.py for its shape)."""

from .chains import ROOT_CAUSES
from .generator import generate

__all__ = ["ROOT_CAUSES", "generate"]
