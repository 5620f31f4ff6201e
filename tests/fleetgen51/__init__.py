"""Blind fleet generator 51: the tracer daemon's life on a host (restarts, joins, leaves, gaps,
a snapshot delivered twice) beside a peer-memory fault on three hosts, written as a spool."""
