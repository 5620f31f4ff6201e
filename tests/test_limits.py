"""tracer.limits: the process limits checked before work. A read whose size is known beforehand
is weighed against what is left of the address space under `ulimit -v` (a native allocator
would abort the process where Python's MemoryError gives the one out-of-memory line)."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tracer import limits

_UNDER_LIMIT = """
import resource, sys
from tracer import limits
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]) << 20, resource.RLIM_INFINITY))
limits.require_address_space(1 << 20, "a small read")  # fits: no error
try:
    limits.require_address_space(int(sys.argv[1]) << 20, "reading the events of big.parquet")
except MemoryError as exc:
    print(exc)
"""


def test_a_read_larger_than_the_address_space_left_is_a_memory_error_saying_both_sizes():
    proc = subprocess.run([sys.executable, "-c", _UNDER_LIMIT, "2048"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith("reading the events of big.parquet needs about 2,048 MiB of memory, ") \
        and line.endswith(" MiB of the address space is left"), line
    left = int(line.split(", ")[-1].split()[0].replace(",", ""))
    assert 0 < left < 2048


@pytest.mark.skipif(limits.soft_limit(resource.RLIMIT_AS) is not None, reason="this process runs under ulimit -v")
def test_no_address_space_limit_no_check():
    limits.require_address_space(1 << 62, "anything")  # nothing to weigh against: no error
    assert limits.soft_limit(resource.RLIMIT_AS) is None
