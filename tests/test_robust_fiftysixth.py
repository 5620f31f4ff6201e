"""Battery fifty-six (blind): expected-errors lists as people edit them and carry them around.

A learned entry as `baseline expected learn` writes it (the ib_uverbs_create_qp EAGAIN a small
simulated fleet retries through), then edited by hand: its `stats` (fatal_hosts a string, not a
list; fatal_since with an offset, after the data, in no ISO form, as epoch seconds;
fatal_when_returned "yes"; rate_upper negative or above 1; unknown keys; counts as strings),
carried from another day (hosts and callers this dataset lacks), a duplicated id, a key given
twice, a list of an older layout (no comm/stats/status) and one of a newer version, a BOM, CRLF
line ends, tab indentation, a 10 MB list, a glob that cannot be a pattern (a brace bomb, an
unclosed brace), a missing errno, a curated entry without its reason.  Readers: `baseline audit
DATASET --allowlist L --no-learn-expected` (so the list alone decides what is routine, read in
the findings' `expected` column), `baseline diff --allowlist L` (a real recording), and the
mergers `baseline expected learn -o L` / `baseline allowlist learn -o L`.

Promises used (written blind, from README.md, docs/architecture.md, docs/diff-json.md, the
--help texts and the format documented at the top of baseline/run/allowlist.py; no code under
baseline/ or tracer/ was read to decide an answer):
* format: `version: 1`; entries with `id` ("unique"), `source` (curated | learned), `reason`
  ("required for curated"), `probe`, `errno` (a name or a glob), optional `path`/`context`/
  `comm`, `support`, `first_seen`/`last_seen`, `stats: {...}` ("optional fleet statistics"),
  `status`; "A missing path/context/comm matches anything"; "An entry with comm matches only
  errors whose process name is known and matches it"; a file without `comm` "loads as before".
* architecture: a learned family is not routine on the hosts of "`stats.fatal_hosts` and
  `stats.fatal_since`, kept open there from the stop on"; entries "marked
  `stats.fatal_when_returned`, and the audit keeps open every occurrence its operation
  returned"; "a pattern's brace alternatives are bounded (MAX_BRACE_ALTERNATIVES, 1024 ...),
  refused at load naming the entry and field".
* README: "times are ISO dates or date-times (UTC unless an offset is given ...)"; "negative
  numbers are refused"; user errors ("a YAML file with a key given twice", a bad value) print
  "one line naming the file, flag or variable, what was expected and what was found, and exit
  with status 2; never a traceback"; `expected learn -o`: "its curated entries win";
  `allowlist learn`: "the file's comments and order are kept".

So each case is either the list used as documented (the findings' `expected` per host compared
with what the docs make of the entry) or a refusal: exit 2, one line naming the file and the
entry or field.  Where the docs leave both open the docstring says so and either passes, both
checked in full (a refusal must be clear; a use must be the documented meaning, never a silent
third answer).  A case the tool fails keeps its assertion and is a strict xfail saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from cli_harness import one_line_error

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
REC = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
TIMEOUT = 180
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith(("RUST_", "POLARS_", "PYTEST_", "COV_")) and k != "PYTHONPATH"}
ENV.update({"LC_ALL": "C.UTF-8", "TZ": "UTC"})

FAMILY_ID = "learned-eagain-ib_uverbs_create_qp-b32d031d33"
FATAL_HOST = "gpu00002"  # the host with the most create_qp EAGAIN traces in the seed-3 day


def run(argv, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=TIMEOUT)


def refused(proc: subprocess.CompletedProcess, file: str, *words) -> str:
    """Exit 2, one line naming `file` and each word (a tuple: any one of them)."""
    line = one_line_error(proc, 2)
    assert "internal error" not in line, line
    assert file in line, (file, line)
    for word in words:
        assert any(w in line for w in ((word,) if isinstance(word, str) else word)), (word, line)
    return line


# --------------------------------------------------------------------------- the data


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """A 6-host, 1-hour simulated day: create_qp EAGAIN on several hosts, retried through."""
    root = tmp_path_factory.mktemp("b56")
    proc = run([BASELINE, "simulate", "--hosts", 6, "--hours", 1, "--seed", 3, "-o", root / "ds"], root)
    assert proc.returncode == 0, proc.stderr
    return root / "ds"


ENTRY = f"""\
  - id: {FAMILY_ID}
    source: learned
    probe: ib_uverbs_create_qp
    errno: EAGAIN
    context: create_qp
    support:
      runs: 11
      total: 40
    first_seen: '2026-11-28T00:05:43Z'
    last_seen: '2026-11-28T00:46:37Z'
    stats:
      increase: -0.025
      increase_upper: 0.254413
      traces: 11
      hosts: 4
      jobs: 4
      vendors: mlx5
      covers:
        - ib_uverbs_create_qp
      host_configuration: true
      rate_upper:
        ib_uverbs_create_qp: 0.005435
{{extra}}    status: active
"""


def listing(extra: str = "", entries: str | None = None, head: str = "version: 1\n") -> str:
    """A list as `expected learn` writes it, `extra` lines added to the entry's stats."""
    body = ENTRY.format(extra=extra) if entries is None else entries
    return f"# our team's expected errors\n{head}entries:\n{body}"


def audit(fleet: Path, tmp: Path, text: str | bytes, name: str = "expected_errors.yaml"):
    """`baseline audit` with only this list; (proc, {host: {expected values}} of create_qp EAGAIN)."""
    lst = tmp / name
    (lst.write_bytes if isinstance(text, bytes) else lst.write_text)(text)
    out = tmp / "audit"
    proc = run([BASELINE, "audit", fleet, "--allowlist", lst, "--no-learn-expected", "-o", out, "--json"], tmp)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if proc.returncode != 0:
        return proc, None
    f = pl.read_parquet(out / "findings.parquet").filter(
        (pl.col("operation") == "create_qp") & (pl.col("bifurcation_errno") == "EAGAIN"))
    by_host: dict[str, set] = {}
    for host, expected in f.select("host", "expected").iter_rows():
        by_host.setdefault(host, set()).add(expected)
    return proc, by_host


def all_expected(by_host) -> bool:
    return bool(by_host) and all(v == {True} for v in by_host.values())


def none_expected(by_host) -> bool:
    return bool(by_host) and all(v == {False} for v in by_host.values())


def fatal_on_one(by_host) -> bool:
    """The documented meaning of fatal_hosts [FATAL_HOST] from before the data on."""
    return (by_host.get(FATAL_HOST) == {False} and len(by_host) > 1
            and all(v == {True} for h, v in by_host.items() if h != FATAL_HOST))


def used_or_refused(proc, by_host, lst: str, field: str, meaning) -> None:
    """The docs leave both open: a clear refusal naming the field, or the documented meaning."""
    if proc.returncode == 0:
        assert meaning(by_host), f"accepted, but the findings are {by_host}"
    else:
        refused(proc, lst, field)


# --------------------------------------------------------------------------- controls


def test_list_as_learned_sets_the_family_aside_and_empty_list_does_not(fleet, tmp_path):
    """The unedited learned entry sets every create_qp EAGAIN aside; an empty list none."""
    proc, by_host = audit(fleet, tmp_path, listing())
    assert proc.returncode == 0, proc.stderr
    assert all_expected(by_host) and len(by_host) >= 3, by_host
    (tmp_path / "e").mkdir()
    proc, by_host = audit(fleet, tmp_path / "e", "version: 1\nentries: []\n")
    assert proc.returncode == 0, proc.stderr
    assert none_expected(by_host), by_host


def test_fatal_hosts_list_keeps_that_host_open(fleet, tmp_path):
    """stats.fatal_hosts + fatal_since before the data: open on that host, routine elsewhere."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: '2026-11-28T00:00:00Z'\n"))
    assert proc.returncode == 0, proc.stderr
    assert fatal_on_one(by_host), by_host


# --------------------------------------------------------------------------- stats edited by hand


# Found by this battery and fixed in round forty-eight (see the module's last comment).
def test_fatal_hosts_as_a_string(fleet, tmp_path):
    """`fatal_hosts: gpu00002` (a string, not a list): the one host, or refused naming the field;
    never read as its characters nor dropped (the host's findings set aside)."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: {FATAL_HOST}\n      fatal_since: '2026-11-28T00:00:00Z'\n"))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_hosts", fatal_on_one)


def test_fatal_since_with_an_offset_is_that_instant(fleet, tmp_path):
    """'2026-11-28T00:30:00+01:00' is 2026-11-27T23:30Z, before every trace: the host is open
    for the whole day (README: UTC unless an offset is given)."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: '2026-11-28T00:30:00+01:00'\n"))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_since", fatal_on_one)


def test_fatal_since_space_separated_unquoted(fleet, tmp_path):
    """An unquoted `2026-11-28 00:00:00` (YAML reads a timestamp, not a string): the same instant,
    or refused naming fatal_since."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: 2026-11-28 00:00:00\n"))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_since", fatal_on_one)


# Found by this battery and fixed in round forty-eight (see the module's last comment).
def test_fatal_since_after_the_data_keeps_the_family_routine(fleet, tmp_path):
    """Kept open "from the stop on": a stop the next day leaves today's occurrences routine."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: '2026-11-29T00:00:00Z'\n"))
    assert proc.returncode == 0, proc.stderr
    assert all_expected(by_host), by_host


# Found by this battery and fixed in round forty-eight (see the module's last comment).
def test_fatal_since_not_a_time(fleet, tmp_path):
    """'28/11/2026 00:00' is no ISO date-time: refused naming the file and fatal_since."""
    proc, _ = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: '28/11/2026 00:00'\n"))
    refused(proc, "expected_errors.yaml", "fatal_since", "28/11/2026")


def test_fatal_since_as_epoch_seconds(fleet, tmp_path):
    """1764288000 (2026-11-28T00:00:00Z as Unix seconds): that instant or refused naming it."""
    proc, by_host = audit(fleet, tmp_path, listing(
        f"      fatal_hosts: [{FATAL_HOST}]\n      fatal_since: 1764288000\n"))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_since", fatal_on_one)


def test_fatal_when_returned_yes_string(fleet, tmp_path):
    """fatal_when_returned: "yes" (a quoted string): true (every returned occurrence open: all
    these findings are create_qp returning EAGAIN) or refused naming the field; not ignored."""
    proc, by_host = audit(fleet, tmp_path, listing('      fatal_when_returned: "yes"\n'))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_when_returned", none_expected)


# Found by this battery and fixed in round forty-eight (see the module's last comment).
def test_fatal_when_returned_no_string(fleet, tmp_path):
    """fatal_when_returned: "no" (a quoted string, as someone switching the mark off writes it):
    false (the family routine, every finding set aside) or refused naming the field -- a
    non-empty string taken as true would keep open what the editor meant to set aside."""
    proc, by_host = audit(fleet, tmp_path, listing('      fatal_when_returned: "no"\n'))
    used_or_refused(proc, by_host, "expected_errors.yaml", "fatal_when_returned", _same_as_unedited)


def test_fatal_when_returned_true_control(fleet, tmp_path):
    """The documented form: `fatal_when_returned: true` keeps the returned occurrences open."""
    proc, by_host = audit(fleet, tmp_path, listing("      fatal_when_returned: true\n"))
    assert proc.returncode == 0, proc.stderr
    assert none_expected(by_host), by_host


def _same_as_unedited(by_host) -> bool:
    return all_expected(by_host) and len(by_host) >= 3


def test_rate_upper_negative(fleet, tmp_path):
    """A negative rate bound is no rate ("negative numbers are refused"): refused naming
    rate_upper, or (accepted) the findings unchanged -- the band is for host alerts only."""
    text = listing().replace("ib_uverbs_create_qp: 0.005435", "ib_uverbs_create_qp: -0.2")
    proc, by_host = audit(fleet, tmp_path, text)
    used_or_refused(proc, by_host, "expected_errors.yaml", "rate_upper", _same_as_unedited)


def test_rate_upper_above_one(fleet, tmp_path):
    """A rate of 3.5 (errors per call above 1): refused naming rate_upper, or findings unchanged."""
    text = listing().replace("ib_uverbs_create_qp: 0.005435", "ib_uverbs_create_qp: 3.5")
    proc, by_host = audit(fleet, tmp_path, text)
    used_or_refused(proc, by_host, "expected_errors.yaml", "rate_upper", _same_as_unedited)


def test_unknown_stats_keys_are_kept_out_of_the_way(fleet, tmp_path):
    """`stats: {...}` is "optional fleet statistics": keys a newer learner writes are no error."""
    proc, by_host = audit(fleet, tmp_path, listing(
        "      reviewed_by: alice\n      future_score: 0.7\n      notes: {ticket: OPS-1234}\n"))
    assert proc.returncode == 0, proc.stderr
    assert _same_as_unedited(by_host), by_host


def test_counts_as_strings(fleet, tmp_path):
    """support runs/total and stats counts as quoted strings: read as the numbers, or refused
    naming the field; either way no traceback."""
    text = (listing().replace("runs: 11", "runs: '11'").replace("total: 40", "total: '40'")
            .replace("traces: 11", "traces: '11'").replace("hosts: 4", "hosts: '4'"))
    proc, by_host = audit(fleet, tmp_path, text)
    used_or_refused(proc, by_host, "expected_errors.yaml", ("runs", "total", "support", "traces", "hosts"),
                    _same_as_unedited)


def test_support_runs_above_total(fleet, tmp_path):
    """support runs 50 of total 40 (a hand edit): refused naming support, or used unchanged."""
    proc, by_host = audit(fleet, tmp_path, listing().replace("runs: 11", "runs: 50"))
    used_or_refused(proc, by_host, "expected_errors.yaml", ("support", "runs"), _same_as_unedited)


# --------------------------------------------------------------------------- carried from another day


def test_carried_entry_naming_hosts_this_dataset_lacks(fleet, tmp_path):
    """fatal_hosts / absent_hosts of hosts not in this dataset change nothing here."""
    proc, by_host = audit(fleet, tmp_path, listing(
        "      fatal_hosts: [gpu09999]\n      fatal_since: '2026-11-20T00:00:00Z'\n"
        "      absent_hosts: [gpu08888]\n      fatal_to: [brisk-worker]\n"))
    assert proc.returncode == 0, proc.stderr
    assert _same_as_unedited(by_host), by_host


def test_carried_entry_for_a_caller_this_dataset_lacks(fleet, tmp_path):
    """comm: "brisk-*" (another tenant's caller): "matches only errors whose process name ...
    matches it" -- none of this day's create_qp EAGAIN (python3 / pt_main_thread) is set aside."""
    text = listing().replace("    context: create_qp\n", '    context: create_qp\n    comm: "brisk-*"\n')
    proc, by_host = audit(fleet, tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    assert none_expected(by_host), by_host


def test_older_layout_without_comm_stats_status(fleet, tmp_path):
    """A list as an older version wrote it (no comm, stats, status, support, seen times): "a file
    without [comm] loads as before", the rest optional: the family is set aside."""
    old = (f"  - id: {FAMILY_ID}\n    source: learned\n    probe: ib_uverbs_create_qp\n"
           "    errno: EAGAIN\n    context: create_qp\n")
    proc, by_host = audit(fleet, tmp_path, listing(entries=old))
    assert proc.returncode == 0, proc.stderr
    assert _same_as_unedited(by_host), by_host


def test_newer_version_is_refused(fleet, tmp_path):
    """`version: 2`: a format this tool does not know; refused naming the file and version."""
    proc, _ = audit(fleet, tmp_path, listing(head="version: 2\n"))
    refused(proc, "expected_errors.yaml", "version", "2")


# --------------------------------------------------------------------------- structure


def test_duplicated_ids_refused(fleet, tmp_path):
    """Two entries with one id ("id: ... # unique"): refused naming the id, not one kept silently."""
    other = (f"  - id: {FAMILY_ID}\n    source: learned\n    probe: bnxt_re_alloc_pd\n"
             "    errno: EIO\n    context: alloc_pd\n")
    proc, _ = audit(fleet, tmp_path, listing(entries=ENTRY.format(extra="") + other))
    refused(proc, "expected_errors.yaml", FAMILY_ID)


def test_key_given_twice_in_an_entry_refused(fleet, tmp_path):
    """errno twice in one entry (README: "a YAML file with a key given twice" is a user error)."""
    text = listing().replace("    errno: EAGAIN\n", "    errno: EAGAIN\n    errno: EIO\n")
    proc, _ = audit(fleet, tmp_path, text)
    refused(proc, "expected_errors.yaml", "errno")


def test_missing_errno_refused(fleet, tmp_path):
    """A typo (`erno:`) leaves the entry without errno: refused naming the entry or the field."""
    text = listing().replace("    errno: EAGAIN\n", "    erno: EAGAIN\n")
    proc, _ = audit(fleet, tmp_path, text)
    refused(proc, "expected_errors.yaml", (FAMILY_ID, "errno"))


def test_curated_entry_without_reason_refused(fleet, tmp_path):
    """`reason` is "required for curated"."""
    cur = ("  - id: curated-eagain-create-qp\n    source: curated\n    probe: ib_uverbs_create_qp\n"
           "    errno: EAGAIN\n")
    proc, _ = audit(fleet, tmp_path, listing(entries=cur))
    refused(proc, "expected_errors.yaml", ("curated-eagain-create-qp", "reason"))


def test_bom_and_crlf_read_as_the_same_list(fleet, tmp_path):
    """A UTF-8 BOM and CRLF line ends (the list saved by a Windows editor): the same list."""
    text = ("\ufeff" + listing()).replace("\n", "\r\n").encode("utf-8")
    proc, by_host = audit(fleet, tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    assert _same_as_unedited(by_host), by_host


def test_tab_indentation_refused(fleet, tmp_path):
    """Tabs indenting the entry (YAML forbids them): one line naming the file."""
    text = listing().replace("    probe: ib_uverbs_create_qp\n", "\t  probe: ib_uverbs_create_qp\n")
    proc, _ = audit(fleet, tmp_path, text)
    refused(proc, "expected_errors.yaml")


def test_ten_megabyte_list(fleet, tmp_path):
    """A 10 MB list (the family plus ~40,000 entries for probes this fleet lacks): the family
    still set aside, in bounded time -- or a clear refusal naming the file."""
    filler = "".join(
        f"  - id: carried-{i:06d}\n    source: learned\n    probe: other_probe_{i}\n"
        f"    errno: ENOENT\n    context: op{i % 97}\n    reason: carried from the {i % 28}th of last month\n"
        for i in range(66000))
    text = listing(entries=ENTRY.format(extra="") + filler)
    assert len(text) >= 10_000_000
    proc, by_host = audit(fleet, tmp_path, text)
    used_or_refused(proc, by_host, "expected_errors.yaml", ("size", "large", "MB", "bytes"), _same_as_unedited)


def test_brace_bomb_refused_naming_entry_and_field(fleet, tmp_path):
    """2^11 = 2048 brace alternatives in probe (over MAX_BRACE_ALTERNATIVES, 1024): "refused at
    load naming the entry and field" (by its id or its place, entries[0])."""
    bomb = "ib_uverbs_create_qp" + "{a,b}" * 11
    text = listing().replace("    probe: ib_uverbs_create_qp\n", f'    probe: "{bomb}"\n')
    proc, _ = audit(fleet, tmp_path, text)
    refused(proc, "expected_errors.yaml", (FAMILY_ID, "entries[0]"), "probe")


# Found by this battery and fixed in round forty-eight (see the module's last comment).
def test_unclosed_brace(fleet, tmp_path):
    """probe "{ib_uverbs_create_qp,ib_uverbs_modify_qp" (no closing brace): refused naming the
    field, or a literal that matches no probe -- never a pattern that matches create_qp's."""
    text = listing().replace("    probe: ib_uverbs_create_qp\n",
                             '    probe: "{ib_uverbs_create_qp,ib_uverbs_modify_qp"\n')
    proc, by_host = audit(fleet, tmp_path, text)
    used_or_refused(proc, by_host, "expected_errors.yaml", "probe", none_expected)


# --------------------------------------------------------------------------- baseline diff


def diff(tmp: Path, text: str | bytes):
    lst = tmp / "team.yaml"
    (lst.write_bytes if isinstance(text, bytes) else lst.write_text)(text)
    proc = run([BASELINE, "diff", REC / "good0.parquet", REC / "good1.parquet", REC / "bad.parquet",
                "--allowlist", lst, "--json"], tmp)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


ENOTTY = ('  - id: team-enotty\n    source: curated\n    reason: "isatty on a pipe"\n'
          '    probe: ioctl\n    errno: ENOTTY\n')


def test_diff_reads_a_bom_crlf_list_like_the_plain_one(tmp_path):
    """baseline diff --allowlist: the same list with BOM + CRLF sets aside what the plain one does."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = diff(tmp_path / "a", "version: 1\nentries:\n" + ENOTTY)
    assert plain.returncode in (0, 1), plain.stderr
    want = json.loads(plain.stdout)["expected_ignored"]["by_entry"]
    assert want.get("team-enotty", {}).get("count", 0) > 0, want
    odd = diff(tmp_path / "b", ("\ufeffversion: 1\nentries:\n" + ENOTTY).replace("\n", "\r\n").encode())
    assert odd.returncode == plain.returncode, odd.stderr
    assert json.loads(odd.stdout)["expected_ignored"]["by_entry"] == want


def test_diff_brace_bomb_refused(tmp_path):
    """The same bound for `baseline diff`'s list: refused naming the entry and field."""
    text = "version: 1\nentries:\n" + ENOTTY.replace("probe: ioctl", 'probe: "ioctl' + "{a,b}" * 11 + '"')
    refused(diff(tmp_path, text), "team.yaml", ("team-enotty", "entries[0]"), "probe")


def test_diff_duplicated_ids_refused(tmp_path):
    """Two entries with one id in `baseline diff`'s list: refused naming the id."""
    text = "version: 1\nentries:\n" + ENOTTY + ENOTTY.replace("ioctl", "openat").replace("ENOTTY", "ENOENT")
    refused(diff(tmp_path, text), "team.yaml", "team-enotty")


# --------------------------------------------------------------------------- merging into an edited list


def test_expected_learn_into_an_invalid_list_leaves_it_untouched(fleet, tmp_path):
    """`expected learn -o L` where L carries a hand edit the loader refuses (version 2): exit 2
    naming L, and L byte for byte as it was (nothing the user had is lost)."""
    lst = tmp_path / "team.yaml"
    original = listing(head="version: 2\n").encode()
    lst.write_bytes(original)
    proc = run([BASELINE, "expected", "learn", fleet, "-o", lst, "--min-hosts", 2], tmp_path)
    refused(proc, "team.yaml", "version")
    assert lst.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.yaml"]


def test_expected_learn_into_a_bom_crlf_curated_list(fleet, tmp_path):
    """`expected learn -o L` where L is a curated list saved with BOM + CRLF naming the same
    family: "its curated entries win" (the curated entry stays, no learned twin of it), the
    comment is kept, and the merged list still loads (the audit sets the family aside)."""
    lst = tmp_path / "team.yaml"
    cur = ("\ufeff# team list: keep this comment\nversion: 1\nentries:\n"
           "  - id: curated-eagain-create-qp\n    source: curated\n"
           "    reason: the launcher retries a full QP table\n"
           "    probe: ib_uverbs_create_qp\n    errno: EAGAIN\n    context: create_qp\n")
    lst.write_bytes(cur.replace("\n", "\r\n").encode())
    proc = run([BASELINE, "expected", "learn", fleet, "-o", lst, "--min-hosts", 2], tmp_path)
    assert proc.returncode == 0, proc.stderr
    merged = lst.read_text(encoding="utf-8-sig")
    assert "keep this comment" in merged
    assert "curated-eagain-create-qp" in merged and "the launcher retries a full QP table" in merged
    assert "learned-eagain-ib_uverbs_create_qp" not in merged, merged
    out = tmp_path / "audit"
    proc = run([BASELINE, "audit", fleet, "--allowlist", lst, "--no-learn-expected", "-o", out], tmp_path)
    assert proc.returncode == 0, proc.stderr
    f = pl.read_parquet(out / "findings.parquet").filter(
        (pl.col("operation") == "create_qp") & (pl.col("bifurcation_errno") == "EAGAIN"))
    assert f.height > 0 and f["expected"].all(), f.select("host", "expected")


def test_allowlist_learn_into_a_tab_indented_list_leaves_it_untouched(tmp_path):
    """`allowlist learn -o L` where L has a tab-indented line: exit 2 naming L, L unchanged."""
    lst = tmp_path / "team.yaml"
    original = ("version: 1\nentries:\n" + ENOTTY.replace("    probe: ioctl", "\t  probe: ioctl")).encode()
    lst.write_bytes(original)
    proc = run([BASELINE, "allowlist", "learn", REC / "good0.parquet", REC / "good1.parquet", "-o", lst], tmp_path)
    refused(proc, "team.yaml")
    assert lst.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.yaml"]


# Found by this battery and fixed in round forty-eight: a hand-edited list was read another way without a word --
# fatal_when_returned: "no" as true (any non-empty string), fatal_hosts: gpu00002 (a string) as no host, a
# fatal_since in no ISO form ignored, one fatal_since time for every fatal host ignored (the learner writes one
# per host), a probe '{a,b' with no closing brace matching a. The statistics the audit acts on are now checked
# at load (a clear error naming the entry and field, exit 2), one fatal_since time holds for every host of
# fatal_hosts, and a glob's unclosed brace is refused (baseline/run/allowlist.py _check_stats, check_glob).
