"""Blind fleet generator 48: a mixed fleet on two kernel/driver releases (see generator.py)."""
