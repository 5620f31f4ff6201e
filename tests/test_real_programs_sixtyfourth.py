"""Sixty-fourth set of real programs, recorded for real (root + bcc): device and driver discovery at a
GPU/RDMA job's start-up, on the files the machine really has, with the fault made for real in the
run's private mount (and network) namespace -- lscpu with /sys/devices/system/cpu hidden (openat
ENOENT kernel_max), lsmem with /sys/devices/system/memory hidden (faccessat2 ENOENT
block_size_bytes), free and lsirq with /proc/meminfo and /proc/interrupts masked by an unreadable
file (openat EACCES), ifconfig of a port the driver did not create (ioctl SIOCGIFFLAGS ENODEV), ip
tuntap with /dev/net/tun a regular file (ioctl TUNSETIFF ENOTTY), cat of a down link's carrier
(read EINVAL), the set's own verbs-like C
scanner with a link's mtu masked (openat EACCES) and its python3 topology script with
/sys/devices/system hidden and /dev/cpu gone (openat ENOENT); and good runs that differ only in
noise (links in other orders and counts, counters that change, a cold or cached binary, the page
cache's size, virtual links' optional numa_node ENOENT) must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from scenarios import sets
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_sixtyfourth import QUIET_SIXTYFOURTH, REAL_SIXTYFOURTH, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "nsenter", "unshare", "mount", "umount", "ip", "lscpu", "lsmem", "free", "lsirq", "ifconfig", "cat", "gcc",
         "python3", "ldd")
SCRIPTS = ("sh", "python3")


sixtyfourth_recorder = set_recorder("sixtyfourth_recorder", "sixty-fourth set of real programs", OUTCOMES, QUIET,
                                    quiet_teardown)


def _host_lacks() -> str | None:
    """Why this host cannot build the cases' namespaces and faults (None: it can)."""
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        return f"the set needs {', '.join(missing)} (apt: util-linux procps net-tools iproute2 gcc python3 libc-bin)"
    for node in ("/sys/bus/platform/uevent", "/dev/net/tun", "/dev/cpu/0/cpuid", "/sys/devices/system/memory",
                 "/sys/devices/system/node"):
        if not os.path.exists(node):
            return f"this host has no {node}"
    with tempfile.TemporaryDirectory() as d:
        ns = f"{d}/net"
        open(ns, "w").close()
        steps = [["mount", "--bind", d, d], ["mount", "--make-private", d], ["unshare", f"--net={ns}", "true"],
                 ["nsenter", f"--net={ns}", "ip", "link", "add", "t64probe", "type", "veth", "peer", "name",
                  "t64probep"], ["nsenter", f"--net={ns}", "ip", "link", "add", "t64ifb", "type", "ifb"]]
        try:
            for step in steps:
                res = subprocess.run(step, capture_output=True, text=True)
                if res.returncode:
                    return f"cannot build a case's namespace here: {' '.join(step)}: {res.stderr.strip()}"
        finally:
            subprocess.run(["umount", ns], capture_output=True)
            subprocess.run(["umount", d], capture_output=True)
    return None


@pytest.fixture(scope="module")
def _host():
    return _host_lacks()


@pytest.fixture(autouse=True)
def _needs_host(_host):
    if _host:
        pytest.skip(_host)


def test_the_set_is_new(monkeypatch):
    names = {s.name for s in REAL_SIXTYFOURTH}
    quiet = {c.name for c in QUIET_SIXTYFOURTH}
    if not any(s.module == "real_sixtyfourth" for s in sets.SETS):  # not yet listed in scenarios/sets.py
        monkeypatch.setattr(sets, "SETS", [*sets.SETS, sets.RealSet("real_sixtyfourth", REAL_SIXTYFOURTH,
                                                                    QUIET_SIXTYFOURTH, quiet_teardown)])
    assert_set_is_new("real_sixtyfourth")
    assert_no_program_repeats("real_sixtyfourth", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYFOURTH for p in s.expect_probe}
    assert {("openat", "ENOENT"), ("openat", "EACCES"), ("faccessat2", "ENOENT"), ("ioctl", "ENODEV"),
            ("ioctl", "ENOTTY"), ("read", "EINVAL")} <= pairs
    assert 8 <= len(REAL_SIXTYFOURTH) <= 10 and 5 <= len(QUIET_SIXTYFOURTH) <= 7
    programs = [s.program.split()[0] for s in REAL_SIXTYFOURTH if not s.program.startswith(SCRIPTS)]
    assert len(set(programs)) == len(programs)  # one case a program
    assert all(n.startswith("t64_") for n in names | quiet)
    # every run enters the case's namespaces: the command line is the same in good and bad runs
    assert all(s.argv(Path("/x"))[0] == "/usr/bin/nsenter" for s in REAL_SIXTYFOURTH)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYFOURTH])
def test_a_discovery_fault_is_named_and_good_runs_are_quiet(name, sixtyfourth_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYFOURTH if s.name == name)
    try:
        check_fault_case(sc, sixtyfourth_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYFOURTH])
def test_good_runs_that_differ_only_in_noise_are_quiet(name, sixtyfourth_recorder, tmp_path):
    case = next(c for c in QUIET_SIXTYFOURTH if c.name == name)
    try:
        check_noise_case(case, sixtyfourth_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()
