"""A fourteenth set of real programs with one real fault each (tests/scenarios/real_fourteenth.py),
recorded for real: three good runs and one bad run per program. The diff of two good runs
against the bad one must name the fault at top 1 (syscall, errno, path); the third good run
diffed against the same two must be "same". The set: the host's network and system
configuration a GPU/RDMA job meets at start-up, each run in a network namespace of its own --
interfaces (ip's SIOCGIFINDEX ENODEV, SIOCGIFADDR EADDRNOTAVAIL, SIOCSIFMTU EINVAL and EPERM),
socket options (SO_RCVBUFFORCE EPERM, TCP_CONGESTION ENOENT, IP_ADD_MEMBERSHIP EADDRINUSE,
IP_MULTICAST_IF EADDRNOTAVAIL), routes and ports (connect EHOSTUNREACH, EINVAL, EADDRNOTAVAIL;
sendto EHOSTUNREACH), transports (socket EAFNOSUPPORT, EPROTONOSUPPORT), sysctl -p (write
ENOENT), mount -t hugetlbfs (mount EINVAL), nsenter as nobody (setns EPERM) and
sched_setaffinity EPERM. The good-vs-good noise cases (optional interfaces, fallbacks taken in
every run, retries, counts that vary) must be quiet.

The table of outcomes is printed at the end of the module (`.venv/bin/python -m
bench.scenario_accuracy --real` prints the same, for every case, standalone).
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_fourteenth import (
    BENCH_ONLY,
    QUIET_BENCH_ONLY,
    QUIET_FOURTEENTH,
    REAL_FOURTEENTH,
    quiet_teardown,
)
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, earlier_sets, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []


def _family_missing(family: int, kind: int, proto: int) -> bool:
    try:
        socket.socket(family, kind, proto).close()
    except OSError:
        return True
    return False


# Faults a host's kernel makes: with the module loaded, the transport's socket is made; with
# the algorithm built, the congestion control is set; with 16 MiB pages, the pool mounts.
NEEDS_HOST = {
    "rds_transport_missing": ("a kernel without AF_RDS", lambda: _family_missing(21, socket.SOCK_SEQPACKET, 0)),
    "sctp_transport_missing": ("a kernel without SCTP",
                               lambda: _family_missing(socket.AF_INET, socket.SOCK_STREAM, 132)),
    "congestion_control_missing": ("a kernel without bbr2", lambda: "bbr2" not in Path(
        "/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()),
    "sysctl_congestion_control_unknown": ("a kernel without bbr2", lambda: "bbr2" not in Path(
        "/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()),
    "hugetlbfs_pagesize_unsupported": ("2 MiB huge pages and no 16 MiB ones", lambda: Path(
        "/sys/kernel/mm/hugepages/hugepages-2048kB").exists() and not Path(
        "/sys/kernel/mm/hugepages/hugepages-16384kB").exists()),
}
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
FLAKY_QUIET: dict[str, str] = {}
TESTED = [s for s in REAL_FOURTEENTH if s.name not in BENCH_ONLY]
TESTED_QUIET = [c for c in QUIET_FOURTEENTH if c.name not in QUIET_BENCH_ONLY]


fourteenth_recorder = set_recorder("fourteenth_recorder", "fourteenth set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_ip():
    if shutil.which("ip") is None or shutil.which("nsenter") is None:
        pytest.skip("the set needs iproute2's ip and util-linux's nsenter")


def test_the_set_is_new_and_covers_the_fault_kinds():
    names = {s.name for s in REAL_FOURTEENTH}
    assert_set_is_new("real_fourteenth")
    assert_no_program_repeats("real_fourteenth", scripts=("python3", "sh", "setpriv"))
    earlier = [s for e in earlier_sets("real_fourteenth") for s in e.faults]
    # (call, errno) pairs no earlier set's fault had
    before = {(p, s.expect_errno) for s in earlier for p in s.expect_probe}
    new = {(p, s.expect_errno) for s in REAL_FOURTEENTH for p in s.expect_probe} - before
    assert {("ioctl", "ENODEV"), ("ioctl", "EADDRNOTAVAIL"), ("ioctl", "EINVAL"), ("ioctl", "EPERM"),
            ("setsockopt", "EPERM"), ("setsockopt", "ENOENT"), ("setsockopt", "EADDRINUSE"),
            ("setsockopt", "EADDRNOTAVAIL"), ("connect", "EHOSTUNREACH"), ("connect", "EINVAL"),
            ("connect", "EADDRNOTAVAIL"), ("sendto", "EHOSTUNREACH"), ("socket", "EAFNOSUPPORT"),
            ("socket", "EPROTONOSUPPORT"), ("write", "ENOENT"), ("mount", "EINVAL"), ("setns", "EPERM"),
            ("sched_setaffinity", "EPERM")} <= new
    assert len(REAL_FOURTEENTH) >= 15 and len(QUIET_FOURTEENTH) >= 8
    assert names >= BENCH_ONLY and {c.name for c in QUIET_FOURTEENTH} >= QUIET_BENCH_ONLY
    assert NEEDS_HOST.keys() <= names
    assert KNOWN_MISSES.keys() <= names and (QUIET_MISSES.keys() | FLAKY_QUIET.keys()) <= {c.name for c in QUIET_FOURTEENTH}


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in TESTED])
def test_fault_is_named_and_good_runs_are_quiet(name, fourteenth_recorder, tmp_path):
    sc = next(s for s in REAL_FOURTEENTH if s.name == name)
    if name in NEEDS_HOST:
        wanted, holds = NEEDS_HOST[name]
        if not holds():
            pytest.skip(f"the fault needs {wanted}; this host's kernel has it")
    check_fault_case(sc, fourteenth_recorder, tmp_path, OUTCOMES, QUIET)


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in TESTED_QUIET])
def test_run_to_run_noise_is_quiet(name, fourteenth_recorder, tmp_path):
    case = next(c for c in QUIET_FOURTEENTH if c.name == name)
    check_noise_case(case, fourteenth_recorder, tmp_path, QUIET, FLAKY_QUIET)
