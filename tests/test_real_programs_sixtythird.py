"""Sixty-third set of real programs, recorded for real (root + bcc): corrupt or truncated input data
read by real tools -- unzip on a zip with a damaged member, openssl x509 on a PEM cut mid-base64,
lz4 -t, brotli -t and lzop -t on streams cut short, jq on a JSON document cut mid-array, python3 tomllib on
a config cut mid-array (no call fails: each writes its complaint to stderr, the first event no good
run has), ld.so on sqlite3's vendored libsqlite3.so.0 cut to 512 bytes (a short pread64 of its
program headers, no errno) and timeout running a vendored sha256sum cut to 100 bytes (execve
ENOEXEC); and good runs of the same tools on valid inputs of other sizes and contents must be quiet.

Written blind: every expectation is the call strace -f shows for the bad run. The table of outcomes
is printed at the end of the module.
"""

from __future__ import annotations

import shutil

import pytest
from scenarios.harness import Outcome, check_fault_case, check_noise_case, xfail_param
from scenarios.real_sixtythird import QUIET_SIXTYTHIRD, REAL_SIXTYTHIRD, quiet_teardown
from scenarios.sets import assert_no_program_repeats, assert_set_is_new, set_recorder

OUTCOMES: list[Outcome] = []
QUIET: list[Outcome] = []

# Fixed: t63_unzip_batch_member_damaged named 'ioctl /dev/null -> ENOTTY', the terminal query right
# before its message, which its own report counted as an ignored curated-enotty-isatty error (4 of 4
# runs); tests/test_diff_terminal_query.py holds a recording.
KNOWN_MISSES: dict[str, str] = {}
QUIET_MISSES: dict[str, str] = {}
# A good-vs-good miss that depends on timing (an xfail when it happens, never asserted).
FLAKY_QUIET: dict[str, str] = {}
TOOLS = ("sh", "unzip", "openssl", "lz4", "jq", "brotli", "lzop", "python3", "sqlite3", "timeout", "sha256sum",
         "ldd")
SCRIPTS = ("sh", "python3")


sixtythird_recorder = set_recorder("sixtythird_recorder", "sixty-third set of real programs", OUTCOMES, QUIET,
                                   quiet_teardown)


@pytest.fixture(autouse=True)
def _needs_tools():
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"the set needs {', '.join(missing)} (apt: unzip openssl lz4 jq brotli lzop python3 sqlite3 "
                    "coreutils libc-bin)")


def test_the_set_is_new():
    names = {s.name for s in REAL_SIXTYTHIRD}
    quiet = {c.name for c in QUIET_SIXTYTHIRD}
    assert_set_is_new("real_sixtythird")
    assert_no_program_repeats("real_sixtythird", scripts=SCRIPTS)
    pairs = {(p, s.expect_errno) for s in REAL_SIXTYTHIRD for p in s.expect_probe}
    assert {("write", None), ("pread64", None), ("execve", "ENOEXEC")} <= pairs
    assert 8 <= len(REAL_SIXTYTHIRD) <= 10 and 5 <= len(QUIET_SIXTYTHIRD) <= 7
    programs = [s.program.split()[0] for s in REAL_SIXTYTHIRD if not s.program.startswith(SCRIPTS)]
    assert len(set(programs)) == len(programs)  # one case a program
    assert all(n.startswith("t63_") for n in names | quiet)
    assert KNOWN_MISSES.keys() <= names and QUIET_MISSES.keys() <= quiet
    assert FLAKY_QUIET.keys() <= names | quiet


@pytest.mark.parametrize("name", [xfail_param(s.name, KNOWN_MISSES) for s in REAL_SIXTYTHIRD])
def test_truncated_input_is_named_and_good_runs_are_quiet(name, sixtythird_recorder, tmp_path):
    sc = next(s for s in REAL_SIXTYTHIRD if s.name == name)
    try:
        check_fault_case(sc, sixtythird_recorder, tmp_path, OUTCOMES, QUIET, flaky_quiet=FLAKY_QUIET)
    finally:
        quiet_teardown()


@pytest.mark.parametrize("name", [xfail_param(c.name, QUIET_MISSES) for c in QUIET_SIXTYTHIRD])
def test_valid_inputs_of_other_sizes_are_quiet(name, sixtythird_recorder, tmp_path):
    case = next(c for c in QUIET_SIXTYTHIRD if c.name == name)
    try:
        check_noise_case(case, sixtythird_recorder, tmp_path, QUIET, FLAKY_QUIET)
    finally:
        quiet_teardown()
