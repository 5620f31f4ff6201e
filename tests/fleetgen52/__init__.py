"""Blind fleet generator 52: probe-coverage edge cases (application failures with and without a
kernel counterpart, kernel failures no application logged, reduced probe sets, a tracer down, a
week boundary), written as a spool plus the jobs' application-failure records and NCCL logs."""
