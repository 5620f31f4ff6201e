"""Blind fleet generator 54: correlated fleet events (see generator.py)."""
