"""Blind fleet generator 50: three NIC vendors, skewed host clocks, three planted faults."""
