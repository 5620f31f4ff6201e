"""Blind fleet generator 53: alert precision under diurnal load (see generator.py)."""
