"""Blind robustness battery, round forty-nine: numbers, times, process ids and argument parsing.

Every numeric, time and pid option of every CLI (`tracer record/run`, `baseline diff/allowlist
learn/simulate/learn/audit/expected learn/ingest/coverage/export`) given values earlier rounds did
not try: NaN and infinities in other spellings (`NaN`, `-nan`, `+inf`, `-Infinity`, `1e309`),
negative zero and `0e0`, a negative tiny number, hex/underscored/full-width/Unicode-minus numbers,
2**63 and 2**64+1 (which wraps to 1, PID 1, in 64- and 32-bit arithmetic), a fraction for an
integer, empty and blank strings, units where the help does not promise them; the edges of the
documented ranges (durations to the int64-nanosecond range, `-i` 100ms..1h, `-k` 1..1000,
`--compact-days-after` ..36,500, `--min-support` 0..1, ISO weeks that do not exist, times outside
1678-2262); then the parsing itself: ambiguous and unique abbreviations of long options, unknown
subcommands and abbreviated ones, an option given twice, an option without its value, a flag given
a value, `--` before options, empty positionals; and `-p` with a thread id, a zombie, the tracer
itself and a process that exits while the recorder attaches, `-d` of one microsecond.

Promises (README.md, docs/architecture.md, each --help; the code under baseline/ and tracer/ was
not read):

* README: "Durations are `100us`, `5ms`, `10s`, `2m`, `1h`, `1d` or plain seconds; times are ISO
  dates or date-times ... or a time ago (`--since 2h`); nan, inf and negative numbers are refused
  (except `--linger inf`: no limit)."  "User errors ... (... a bad flag value ...) print one line
  naming the file, flag or variable, what was expected and what was found, and exit with status 2;
  never a traceback."  "after `--` every word is a positional".  `tracer record -p`: "a thread id,
  a zombie or a kernel thread is refused".
* docs/architecture.md: "Numbers and times are bounded where the work would overflow or never end:
  durations and times to the int64-nanosecond range every timestamp ends in (about 292 years;
  1678-2262), `simulate --hosts` to 1,000,000, `diff -k` to 1000".
* --help texts: `tracer run -i` "100ms to 1h"; `diff -k` "at most 1000"; `allowlist learn
  --min-support` "0..1"; `ingest --compact-days-after` "at most 36,500"; `coverage --week` "ISO
  week (2026-W48)"; `tracer record -d` "with a command stops recording, not the command ...: the
  command keeps running, exit_status is null, and the exit status is 0"; `-p` "recording stops
  when it exits ... exit status 0".

Readings this module takes where the docs list formats but do not say what else is refused: a
number is decimal (the documented forms; test_bad_inputs already holds `--context 1_0` refused), so
hex, octal, underscores, full-width digits and U+2212 are bad values; an integer option given a
fraction is a bad value (truncating it misreads it); a refusal shows what was found (the repr of
the value, or "empty" for an empty one).  Where an outcome is not documented (an option given
twice, a unique abbreviation, a blank-padded number) either a one-line refusal or the documented
meaning is accepted, and the result is compared with the unambiguous spelling.

Each refusal: exit status 2, exactly one line on stderr, starting with the program's name, naming
the option and showing the value found, no traceback, and nothing written: the case's directory
(outputs, the working directory, $TMPDIR) is exactly as before.  Cases the tools fail keep the
right assertion and are strict xfails saying what happened (none when written: every case held).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tracer.schema import read_events, validate_file

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
TRACER = str(BIN / "tracer")
BASELINE = str(BIN / "baseline")
RECORDINGS = REPO / "tests" / "recordings" / "c_rehash_readonly"
G0, G1, BAD = (str(RECORDINGS / n) for n in ("good0.parquet", "good1.parquet", "bad.parquet"))
NO_PID = "4194305"  # above PID_MAX_LIMIT (2**22): no process ever has it
TIMEOUT = 120

# Known misses: case id -> what happened (each made a strict xfail). None when written.
KNOWN_MISSES: dict[str, str] = {}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _child_setup() -> None:
    # the suite may run under nohup; a child must see the terminal's dispositions
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(prog: str, *args, cwd: Path, timeout: float = TIMEOUT, env=None) -> subprocess.CompletedProcess:
    tmp = cwd / ".tmpdir"
    tmp.mkdir(exist_ok=True)
    environ = {**os.environ, "TMPDIR": str(tmp), **(env or {})}
    environ.pop("TZ", None)
    return subprocess.run([prog, *map(str, args)], cwd=cwd, env=environ, capture_output=True, text=True,
                          errors="replace", timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=_child_setup)


def tree(root: Path) -> list[str]:
    """Every name under root (hidden ones too), with each regular file's size."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out.append(os.path.relpath(os.path.join(dirpath, d), root) + "/")
        for f in filenames:
            p = os.path.join(dirpath, f)
            out.append(f"{os.path.relpath(p, root)} {os.lstat(p).st_size}")
    return sorted(out)


def tail(p: subprocess.CompletedProcess) -> str:
    return f"rc={p.returncode} stderr={p.stderr.strip().splitlines()[-4:]!r} stdout={p.stdout[-300:]!r}"


def shows_found(line: str, value: str) -> bool:
    """The value found is in the line: quoted, as a word of it, or (a number) as the float it is."""
    if not value.strip():  # a blank value may be shown stripped
        return repr(value) in line or "''" in line or "empty" in line.lower()
    if repr(value) in line or value in line.replace(":", " ").split():
        return True
    with contextlib.suppress(ValueError, OverflowError):
        number = float(value)
        return any(_float_or_none(w) == number for w in line.replace(",", " ").split())
    return False


def _float_or_none(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def refused(p: subprocess.CompletedProcess, prog: str, *names: str) -> str:
    """Exit 2, one line on stderr starting with the program's name and naming each of `names`."""
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.returncode == 2, tail(p)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, found {len(lines)}: {lines[:6]!r}"
    line = lines[0]
    assert line.startswith(f"{prog}:"), line
    for n in names:
        assert n in line, f"{n!r} not named in {line!r}"
    return line


def xfail_known(request, case_id: str) -> None:
    if case_id in KNOWN_MISSES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_MISSES[case_id], strict=True))


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def proc_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# module fixtures: a small simulated dataset and spool (read-only for every case)
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("robust49")
    fleet, sim_spool = base / "fleet", base / "simspool"
    for argv in (["simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", fleet],
                 ["simulate", "--hosts", "1", "--hours", "1", "--seed", "2", "--spool", "-o", sim_spool]):
        p = run(BASELINE, *argv, cwd=base)
        assert p.returncode == 0, tail(p)
    w = {"base": base, "fleet": fleet, "spool": sim_spool / "spool"}
    before = {k: _data_tree(v) for k, v in w.items() if k != "base"}
    yield w
    for k, t in before.items():
        assert _data_tree(w[k]) == t, f"the shared {k} was changed by a case"


def _data_tree(root: Path) -> list[str]:
    """tree() less the dataset's lock file, which readers create to take their shared lock
    (docs/airflow.md: `<dataset>/.tracebase.lock`)."""
    return [e for e in tree(root) if not e.startswith(".tracebase.lock")]


@pytest.fixture
def case(tmp_path) -> Path:
    d = tmp_path / "case"
    d.mkdir()
    (d / ".tmpdir").mkdir()
    return d


# ---------------------------------------------------------------------------------------------
# the options: (id, program, argv before the option, option as written, name in the message, kind)
# "{case}" is the case's directory, "{fleet}"/"{spool}" the shared inputs.
# ---------------------------------------------------------------------------------------------
REC = ["record", "-q", "-p", NO_PID, "-o", "{case}/t.parquet"]
REC_CMD = ["record", "-q", "-d", "1s", "-o", "{case}/t.parquet"]
RUN = ["run", "syscalls", "--spool", "{case}/spool", "-p", NO_PID]
RUN_D = ["run", "syscalls", "--spool", "{case}/spool", "-d", "1s"]
SIM = ["simulate", "--hosts", "1", "--hours", "0.1", "-o", "{case}/sim"]

OPTIONS = [
    # tracer record
    ("record-duration", TRACER, REC, "--duration", "--duration", "duration"),
    ("record-linger", TRACER, REC, "--linger", "--linger", "linger"),
    ("record-ringbuf-mb", TRACER, [*REC_CMD, "{opt}", "--", "/bin/true"], "--ringbuf-mb", "--ringbuf-mb", "count"),
    ("record-pid", TRACER, REC_CMD, "--pid", "-p", "pid"),
    # tracer run
    ("run-duration", TRACER, RUN, "--duration", "--duration", "duration"),
    ("run-interval", TRACER, RUN, "--interval", "--interval", "duration"),
    ("run-good-every", TRACER, RUN, "--good-every", "--good-every", "duration"),
    ("run-good-window", TRACER, RUN, "--good-window", "--good-window", "duration"),
    ("run-latency-bound", TRACER, RUN, "--latency-bound", "--latency-bound", "duration"),
    ("run-sample", TRACER, RUN, "--sample", "--sample", "count"),
    ("run-ringbuf-kb", TRACER, RUN, "--ringbuf-kb", "--ringbuf-kb", "count"),
    ("run-examples", TRACER, RUN, "--examples", "--examples", "count"),
    ("run-pid", TRACER, RUN_D, "--pid", "-p", "pid"),
    # baseline
    ("diff-context", BASELINE, ["diff", G0, BAD], "--context", "--context", "count0"),
    ("diff-window", BASELINE, ["diff", G0, BAD], "--window", "--window", "count"),
    ("diff-max-anomalies", BASELINE, ["diff", G0, BAD], "--max-anomalies", "--max-anomalies", "count"),
    ("allowlist-min-support", BASELINE, ["allowlist", "learn", G0, G1, "-o", "{case}/a.yaml"],
     "--min-support", "--min-support", "fraction"),
    ("simulate-hosts", BASELINE, ["simulate", "--hours", "0.1", "-o", "{case}/sim"], "--hosts", "--hosts", "count"),
    ("simulate-hours", BASELINE, ["simulate", "--hosts", "1", "-o", "{case}/sim"], "--hours", "--hours", "real"),
    ("simulate-seed", BASELINE, SIM, "--seed", "--seed", "count0"),
    ("simulate-good-rate", BASELINE, SIM, "--good-rate", "--good-rate", "fraction"),
    ("simulate-events-target", BASELINE, SIM, "--events-target", "--events-target", "count"),
    ("simulate-workers", BASELINE, SIM, "--workers", "--workers", "count"),
    ("simulate-start", BASELINE, SIM, "--start", "--start", "time"),
    ("learn-since", BASELINE, ["learn", "{fleet}", "-o", "{case}/m.parquet"], "--since", "--since", "time"),
    ("audit-since", BASELINE, ["audit", "{fleet}", "-o", "{case}/aud"], "--since", "--since", "time"),
    ("expected-since", BASELINE, ["expected", "learn", "{fleet}", "-o", "{case}/e.yaml"], "--since", "--since",
     "time"),
    ("expected-min-hosts", BASELINE, ["expected", "learn", "{fleet}", "-o", "{case}/e.yaml"], "--min-hosts",
     "--min-hosts", "count"),
    ("ingest-compact-min-files", BASELINE, ["ingest", "--keep-spool", "{spool}", "{case}/ds"],
     "--compact-min-files", "--compact-min-files", "count0"),
    ("ingest-compact-days-after", BASELINE, ["ingest", "--keep-spool", "{spool}", "{case}/ds"],
     "--compact-days-after", "--compact-days-after", "count0"),
    ("ingest-workers", BASELINE, ["ingest", "--keep-spool", "{spool}", "{case}/ds"], "--workers", "--workers",
     "count"),
    ("coverage-trend-pct", BASELINE, ["coverage", "{fleet}", "-o", "{case}/rep"], "--trend-pct", "--trend-pct",
     "real"),
    ("export-max-events", BASELINE, ["export", G0, "-o", "{case}/x.json"], "--max-events", "--max-events", "count"),
]

# The full set of bad values is tried on one option of each parser family (REPRESENTATIVES), a
# short set on the others (the module's time budget).
REPRESENTATIVES = {"record-duration", "record-linger", "record-pid", "run-pid", "run-interval", "diff-window",
                   "diff-context", "allowlist-min-support", "simulate-hours", "learn-since", "simulate-start"}
# Blank, NaN and infinity spellings, a tiny negative.
COMMON = ["", " ", "NaN", "-nan", "+inf", "-Infinity", "1e309", "-1e-300"]
COMMON_SHORT = ["", "NaN", "1e309"]
# Not decimal numbers (hex, octal, underscores, full-width digits, U+2212 minus).
NOT_DECIMAL = ["0x10", "0o10", "1_000", "\uff15", "\u22121"]
NOT_DECIMAL_REAL = ["0x1", "0.2_5", "\uff10.5", "\u22120.5"]
# Zero in other spellings: refused wherever zero is (positive kinds).
ZEROISH = ["-0", "0e0"]
# 2**63 and 2**64 + 1 (1 after a 64- or 32-bit wrap).
HUGE = ["9223372036854775808", "18446744073709551617"]
# Huge is refused only where the docs bound it or it cannot be meant: durations (int64 ns),
# -k (1000), --hosts (1,000,000), pids, --hours (2262), --compact-days-after (36,500), and the
# sizes and counts the kernel side holds in fixed-width integers.
HUGE_REFUSED = {"record-duration", "record-linger", "record-ringbuf-mb", "record-pid", "run-duration", "run-interval",
                "run-good-every", "run-good-window", "run-latency-bound", "run-sample", "run-ringbuf-kb",
                "run-examples", "run-pid", "diff-window", "simulate-hosts", "simulate-hours",
                "ingest-compact-days-after"}
TIME_BAD = ["-2h", "0x10h", "1_0h", "\uff12h", "\u22122h", "1e309h", "2262-04-12", "1677-09-20", "2026-02-30",
            "2026-13-01", "2026-11-28T24:30:00Z", "2026-11-28T00:00:00+24:00", "2026-11-28 garbage"]
TIME_BAD_SHORT = ["-2h", "1e309h", "2262-04-12", "2026-02-30"]


def _values(oid: str, kind: str) -> list[str]:
    full = oid in REPRESENTATIVES
    vals = list(COMMON if full else COMMON_SHORT)
    if kind == "linger":  # `inf` is its documented no-limit; +inf/1e309 may be read the same
        vals = [v for v in vals if v not in ("+inf", "1e309")]
    if kind == "time":
        return vals + (TIME_BAD if full else TIME_BAD_SHORT)
    if kind in ("fraction", "real"):
        vals += NOT_DECIMAL_REAL if full else NOT_DECIMAL_REAL[:2]
    else:
        vals += NOT_DECIMAL if full else NOT_DECIMAL[:1] + NOT_DECIMAL[2:3]
    if kind in ("count", "count0", "pid") and full:
        vals.append("1.5")
    if kind in ("count", "pid", "duration", "real"):
        vals += ZEROISH if full else ZEROISH[:1]
    if kind == "pid":
        vals += ["+0", "00", "-1", "2147483648", "4294967297"]
    if oid in HUGE_REFUSED:
        vals += HUGE if full else HUGE[1:]
    return vals


MATRIX = [pytest.param(o, v, id=f"{o[0]}[{v!r}]") for o in OPTIONS for v in _values(o[0], o[5])]


def _argv(template: list[str], case: Path, world: dict[str, Path]) -> list[str]:
    return [a.replace("{case}", str(case)).replace("{fleet}", str(world["fleet"])).replace("{spool}", str(world["spool"]))
            for a in template]


def _with_option(argv: list[str], option: str) -> list[str]:
    return [option if a == "{opt}" else a for a in argv] if "{opt}" in argv else [*argv, option]


@pytest.mark.parametrize("opt,value", MATRIX)
def test_bad_value_refused_in_one_line_naming_option_and_value(request, world, case, opt, value):
    oid, prog, template, flag, name, _kind = opt
    xfail_known(request, f"{oid}[{value!r}]")
    before = tree(case)
    p = run(prog, *_with_option(_argv(template, case, world), f"{flag}={value}"), cwd=case, timeout=90)
    line = refused(p, Path(prog).name, name)
    assert shows_found(line, value), f"the value found is not shown: {line!r}"
    assert tree(case) == before, "something was written"


# ---------------------------------------------------------------------------------------------
# a negative value given as its own word (argparse reads "-1s" as an option)
# ---------------------------------------------------------------------------------------------
SEPARATE = [
    ("record-duration", TRACER, REC, "-d", "--duration", "-1s"),
    ("record-linger", TRACER, REC, "--linger", "--linger", "-inf"),
    ("run-interval", TRACER, RUN, "-i", "--interval", "-5s"),
    ("allowlist-min-support", BASELINE, ["allowlist", "learn", G0, "-o", "{case}/a.yaml"], "--min-support",
     "--min-support", "-0.5"),
    ("learn-since", BASELINE, ["learn", "{fleet}", "-o", "{case}/m.parquet"], "--since", "--since", "-2h"),
    ("simulate-start", BASELINE, SIM, "--start", "--start", "-1d"),
]


@pytest.mark.parametrize("spec", SEPARATE, ids=[f"{s[0]}-{s[5]}" for s in SEPARATE])
def test_negative_value_as_its_own_word(request, world, case, spec):
    oid, prog, template, flag, name, value = spec
    xfail_known(request, f"separate:{oid}")
    before = tree(case)
    p = run(prog, *_argv(template, case, world), flag, value, cwd=case)
    refused(p, Path(prog).name, name)
    assert tree(case) == before


# ---------------------------------------------------------------------------------------------
# documented ranges: the edge inside is accepted, the edge outside refused
# The tracer's option is accepted when the refusal that follows names -p (a pid no process has)
# and not the option under test.
# ---------------------------------------------------------------------------------------------
TRACER_EDGES = [
    # (id, base, option, value, accepted?)
    ("record-d-106751d", REC, "--duration", "106751d", True),       # < 2**63 ns
    ("record-d-9223372036s", REC, "--duration", "9223372036", True),
    ("record-d-106752d", REC, "--duration", "106752d", False),      # > 2**63 ns
    ("record-d-9223372037s", REC, "--duration", "9223372037s", False),
    ("record-d-1us", REC, "--duration", "1us", True),
    ("record-linger-0", REC, "--linger", "0", True),
    ("record-linger-inf", REC, "--linger", "inf", True),
    ("record-linger-106752d", REC, "--linger", "106752d", False),
    ("run-i-100ms", RUN, "--interval", "100ms", True),
    ("run-i-0.1", RUN, "--interval", "0.1", True),
    ("run-i-100000us", RUN, "--interval", "100000us", True),
    ("run-i-1h", RUN, "--interval", "1h", True),
    ("run-i-3600", RUN, "--interval", "3600", True),
    ("run-i-60m", RUN, "--interval", "60m", True),
    ("run-i-99ms", RUN, "--interval", "99ms", False),
    ("run-i-99999us", RUN, "--interval", "99999us", False),
    ("run-i-0.0999", RUN, "--interval", "0.0999", False),
    ("run-i-3601", RUN, "--interval", "3601", False),
    ("run-i-61m", RUN, "--interval", "61m", False),
    ("run-i-1d", RUN, "--interval", "1d", False),
    ("run-d-106752d", RUN, "--duration", "106752d", False),
    ("run-good-window-106752d", RUN, "--good-window", "106752d", False),
]


@pytest.mark.parametrize("spec", TRACER_EDGES, ids=[s[0] for s in TRACER_EDGES])
def test_tracer_range_edges(request, world, case, spec):
    eid, base, flag, value, accepted = spec
    xfail_known(request, eid)
    before = tree(case)
    p = run(TRACER, *_argv(base, case, world), f"{flag}={value}", cwd=case, timeout=90)
    if accepted:
        line = refused(p, "tracer", NO_PID)
        assert flag not in line, line
    else:
        line = refused(p, "tracer", flag)
        assert shows_found(line, value) or _shows_seconds(line, value), line
    assert tree(case) == before


UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _seconds(text: str) -> float | None:
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            number = _float_or_none(text[: -len(unit)])
            return None if number is None else number * UNITS[unit]
    return _float_or_none(text)


def _shows_seconds(line: str, value: str) -> bool:
    """The duration found shown in another unit (`99ms` as `0.099s`)."""
    want = _seconds(value)
    return want is not None and any(
        (got := _seconds(w.strip("'\",()"))) is not None and abs(got - want) <= 1e-9 * max(1.0, want)
        for w in line.split())


def _json(p: subprocess.CompletedProcess) -> dict:
    """The one JSON document on stdout, without the run's own timing (settings.elapsed_s)."""
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    docs = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert len(docs) == 1, p.stdout[-2000:]
    doc = json.loads(docs[0])
    if isinstance(doc.get("settings"), dict):
        doc["settings"].pop("elapsed_s", None)
    return doc


@pytest.mark.parametrize("k,accepted", [("1", True), ("1000", True), ("1001", False)])
def test_diff_window_edges(request, case, k, accepted):
    xfail_known(request, f"diff-k-{k}")
    p = run(BASELINE, "diff", G0, G1, BAD, "--json", f"--window={k}", cwd=case)
    if accepted:
        assert p.returncode in (0, 1), tail(p)
        doc = _json(p)
        assert doc["anomaly"] is (p.returncode == 1)
    else:
        line = refused(p, "baseline", "--window")
        assert "1000" in line, line
    assert tree(case) == [".tmpdir/"]


@pytest.mark.parametrize("support,accepted", [("0", True), ("1", True), ("1.0000001", False), ("-0.0", None)])
def test_allowlist_min_support_edges(request, case, support, accepted):
    out = case / "a.yaml"
    p = run(BASELINE, "allowlist", "learn", G0, G1, "-o", out, f"--min-support={support}", cwd=case)
    if accepted is None:  # negative zero: zero, or refused as negative
        accepted = p.returncode == 0
    if accepted:
        assert p.returncode == 0, tail(p)
        assert out.stat().st_size > 0
    else:
        refused(p, "baseline", "--min-support")
        assert not out.exists()
    assert sorted(x.name for x in case.iterdir()) == sorted([".tmpdir", *(["a.yaml"] if accepted else [])])
    assert list((case / ".tmpdir").iterdir()) == []


@pytest.mark.parametrize("days,accepted", [("36500", True), ("36501", False)])
def test_ingest_compact_days_after_edge(world, case, days, accepted):
    ds = case / "ds"
    p = run(BASELINE, "ingest", "--keep-spool", world["spool"], ds, f"--compact-days-after={days}", cwd=case)
    if accepted:
        assert p.returncode == 0, tail(p)
        assert list(ds.glob("events/date=*/host=*/*.parquet")), tree(ds)
    else:
        line = refused(p, "baseline", "--compact-days-after")
        assert "36" in line and not ds.exists(), line


def test_simulate_hosts_past_a_million_is_refused_naming_the_bound(case):
    p = run(BASELINE, "simulate", "--hosts=1000001", "--hours", "0.1", "-o", case / "sim", cwd=case)
    line = refused(p, "baseline", "--hosts")
    assert "1000000" in line.replace(",", "") and not (case / "sim").exists(), line


def test_simulate_start_whose_end_passes_2262_is_refused(case):
    """A start inside the int64-ns range whose simulated hours run past its end."""
    p = run(BASELINE, "simulate", "--hosts", "1", "--hours", "2", "--start", "2262-04-11T23:00:00Z",
            "-o", case / "sim", cwd=case)
    line = refused(p, "baseline")
    assert "--start" in line or "--hours" in line, line
    assert not (case / "sim").exists()


@pytest.mark.parametrize("week", ["", " ", "2025-W53", "2026-W00", "2026-W-1", "2026-W4_8", "\uff12026-W48",
                                  "2026-W48-8", "2026W48x", "2026-11-31"])
def test_coverage_week_that_does_not_exist(world, case, week):
    p = run(BASELINE, "coverage", world["fleet"], "-o", case / "rep", f"--week={week}", cwd=case)
    line = refused(p, "baseline", "--week")
    assert shows_found(line, week), line
    assert tree(case) == [".tmpdir/"]


def test_coverage_week_53_of_a_year_that_has_one_is_a_week(world, case):
    """2026 has 53 ISO weeks (it starts on a Thursday): 2026-W53 is a week, only one without data."""
    p = run(BASELINE, "coverage", world["fleet"], "-o", case / "rep", "--week=2026-W53", "--json", cwd=case)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    if p.returncode == 2:  # a week without data may be refused, naming it
        refused(p, "baseline", "2026-W53")
    else:
        assert p.returncode == 0, tail(p)
        assert _json(p)["week"] == "2026-W53"


@pytest.mark.parametrize("flag,value,meant", [("--hours", "30m", 0.5), ("--hours", "2h", 2.0)])
def test_simulate_hours_with_a_unit_is_refused_or_read_right(case, flag, value, meant):
    """--hours is a number of hours (its help names no unit): a unit is refused, or read as meant."""
    p = run(BASELINE, "simulate", "--hosts", "1", f"{flag}={value}", "-o", case / "sim", "--json", cwd=case)
    if p.returncode == 2:
        line = refused(p, "baseline", flag)
        assert shows_found(line, value) and not (case / "sim").exists(), line
    else:
        assert p.returncode == 0, tail(p)
        assert _json(p)["hours"] == meant


@pytest.mark.parametrize("spec", [
    ("record-ringbuf-1G", TRACER, REC, "--ringbuf-mb", "1G"),
    ("run-ringbuf-1M", TRACER, RUN, "--ringbuf-kb", "1M"),
    ("run-sample-10s", TRACER, RUN, "--sample", "10s"),
    ("run-examples-4k", TRACER, RUN, "--examples", "4k"),
    ("diff-context-3s", BASELINE, ["diff", G0, BAD], "--context", "3s"),
    ("export-max-events-2M", BASELINE, ["export", G0, "-o", "{case}/x.json"], "--max-events", "2M"),
    ("ingest-days-after-2d", BASELINE, ["ingest", "--keep-spool", "{spool}", "{case}/ds"], "--compact-days-after",
     "48h"),
    ("trend-pct-25%", BASELINE, ["coverage", "{fleet}", "-o", "{case}/rep"], "--trend-pct", "25%"),
], ids=lambda s: s[0])
def test_a_unit_the_help_does_not_promise_is_refused(request, world, case, spec):
    sid, prog, template, flag, value = spec
    xfail_known(request, sid)
    before = tree(case)
    p = run(prog, *_argv(template, case, world), f"{flag}={value}", cwd=case, timeout=90)
    line = refused(p, Path(prog).name, flag)
    assert shows_found(line, value), line
    assert tree(case) == before


# ---------------------------------------------------------------------------------------------
# argument parsing
# ---------------------------------------------------------------------------------------------
def test_unknown_subcommands_and_abbreviated_ones(case):
    marker = case / "ran"
    for prog, argv, word in [
        (BASELINE, ["dif", G0, BAD], "dif"),
        (BASELINE, ["allowlist", "lea", G0, "-o", case / "a.yaml"], "lea"),
        (BASELINE, ["simulat", "--hosts", "1", "-o", case / "sim"], "simulat"),
        (TRACER, ["rec", "-q", "-o", case / "t.parquet", "--", "/usr/bin/touch", marker], "rec"),
        (TRACER, ["probes", "chk"], "chk"),
        (BASELINE, [""], "''"),
    ]:
        p = run(prog, *argv, cwd=case)
        refused(p, Path(prog).name, word)
    assert tree(case) == [".tmpdir/"]


AMBIGUOUS = [
    ("export-al", BASELINE, ["export", G0, "-o", "{case}/x.json", "--al", "start"], "--al"),
    ("diff-m", BASELINE, ["diff", G0, BAD, "--m", "3"], "--m"),
    ("run-good", TRACER, [*RUN, "--good", "1h"], "--good"),
    ("record-l", TRACER, [*REC, "--l", "good"], "--l"),
    ("audit-h", BASELINE, ["audit", "{fleet}", "-o", "{case}/aud", "--h", "{case}/a.html"], "--h"),
]


@pytest.mark.parametrize("spec", AMBIGUOUS, ids=[a[0] for a in AMBIGUOUS])
def test_ambiguous_abbreviation_is_one_line_naming_it(request, world, case, spec):
    aid, prog, template, word = spec
    xfail_known(request, f"ambiguous:{aid}")
    p = run(prog, *_argv(template, case, world), cwd=case)
    refused(p, Path(prog).name, word)
    assert tree(case) == [".tmpdir/"]


UNUSABLE = [
    ("unknown-option", BASELINE, ["diff", G0, BAD, "--contxt", "3"], "--contxt"),
    ("value-missing-at-end", BASELINE, ["diff", G0, BAD, "--context"], "--context"),
    ("value-missing-record", TRACER, ["record", "-q", "-o"], "-o"),
    ("flag-given-a-value", BASELINE, ["diff", G0, BAD, "--json=yes"], "--json"),
    ("choice-abbreviated", BASELINE, ["export", G0, "-o", "{case}/x.json", "--kind", "fail"], "--kind"),
    ("choice-case", TRACER, [*REC, "--label", "GOOD"], "--label"),
    ("record-no-command", TRACER, ["record", "-q", "-o", "{case}/t.parquet", "--"], "record"),
    ("run-set-empty", TRACER, ["run", "", "--spool", "{case}/spool", "-d", "1s"], "''"),
    ("simulate-no-output", BASELINE, ["simulate", "--hosts", "1", "-o"], "-o"),
]


@pytest.mark.parametrize("spec", UNUSABLE, ids=[u[0] for u in UNUSABLE])
def test_unusable_command_line_is_one_line(request, world, case, spec):
    uid, prog, template, word = spec
    xfail_known(request, f"unusable:{uid}")
    p = run(prog, *_argv(template, case, world), cwd=case, timeout=90)
    refused(p, Path(prog).name, word)
    assert tree(case) == [".tmpdir/"]


EMPTY_POSITIONAL = [
    ("diff-bad", ["diff", G0, ""]),
    ("diff-good", ["diff", "", BAD]),
    ("export", ["export", "", "-o", "{case}/x.json"]),
    ("allowlist-learn", ["allowlist", "learn", "", "-o", "{case}/a.yaml"]),
    ("learn", ["learn", ""]),
    ("audit", ["audit", ""]),
    ("expected-learn", ["expected", "learn", "", "-o", "{case}/e.yaml"]),
    ("coverage", ["coverage", ""]),
    ("report", ["report", ""]),
    ("evaluate", ["evaluate", ""]),
    ("ingest-spool", ["ingest", "", "{case}/ds"]),
    ("ingest-dataset", ["ingest", "--keep-spool", "{spool}", ""]),
]


@pytest.mark.parametrize("spec", EMPTY_POSITIONAL, ids=[e[0] for e in EMPTY_POSITIONAL])
def test_empty_positional_is_not_the_current_directory(request, world, case, spec):
    """An empty path is refused (round forty-one: `evaluate --findings ''` read the current
    directory). The working directory is a copy of the dataset, so a '' read as '.' would find
    data there and write its outputs beside it."""
    eid, template = spec
    xfail_known(request, f"empty:{eid}")
    shutil.copytree(world["fleet"], case, dirs_exist_ok=True)
    before = tree(case)
    p = run(BASELINE, *_argv(template, case, world), cwd=case)
    refused(p, "baseline")
    assert tree(case) == before, "written into the working directory"


def test_empty_value_of_a_path_option_is_refused(world, case):
    before = tree(case)
    for argv, flag in [(["export", G0, "-o", ""], "-o"), (["diff", G0, BAD, "--allowlist", ""], "--allowlist"),
                       (["audit", world["fleet"], "-o", case / "aud", "--model", ""], "--model"),
                       (["learn", world["fleet"], "-o", ""], "-o"),
                       (["coverage", world["fleet"], "-o", case / "rep", "--probes", ""], "--probes")]:
        p = run(BASELINE, *argv, cwd=case)
        refused(p, "baseline", flag)
    assert tree(case) == before


def test_double_dash_makes_option_words_positional(case):
    """`baseline export -- GOOD -o x.json`: after `--`, `-o` and `x.json` are traces to read (missing
    files), not an output: refused naming one of them, nothing written, no JSON on stdout."""
    p = run(BASELINE, "export", "--", G0, "-o", "x.json", cwd=case)
    line = refused(p, "baseline")
    assert "'-o'" in line or "x.json" in line or " -o" in line, line
    assert p.stdout == "" and tree(case) == [".tmpdir/"]


def test_double_dash_before_every_positional_changes_nothing(case):
    plain = run(BASELINE, "diff", G0, G1, BAD, "--json", cwd=case)
    dashed = run(BASELINE, "diff", "--json", "--", G0, G1, BAD, cwd=case)
    assert plain.returncode in (0, 1) and dashed.returncode == plain.returncode, (tail(plain), tail(dashed))
    assert _json(dashed) == _json(plain)


_DIFF_CACHE: dict[tuple[str, ...], tuple[int, dict | None, subprocess.CompletedProcess]] = {}


def _diff_json(case: Path, *extra: str) -> tuple[int, dict | None, subprocess.CompletedProcess]:
    """`baseline diff G0 G1 BAD --json EXTRA...` (the same command line is run once per module)."""
    if extra in _DIFF_CACHE:
        return _DIFF_CACHE[extra]
    _DIFF_CACHE[extra] = result = _diff_json_run(case, *extra)
    return result


def _diff_json_run(case: Path, *extra: str) -> tuple[int, dict | None, subprocess.CompletedProcess]:
    p = run(BASELINE, "diff", G0, G1, BAD, "--json", *extra, cwd=case)
    if p.returncode == 2:
        return 2, None, p
    assert p.returncode in (0, 1), tail(p)
    return p.returncode, _json(p), p


@pytest.mark.parametrize("given,meant,flag", [
    (["--cont", "0"], ["--context", "0"], "--cont"),                        # a unique abbreviation
    (["--max-a", "1"], ["--max-anomalies", "1"], "--max-a"),
    (["--context", " 0"], ["--context", "0"], "--context"),                 # blank-padded number
    (["--context", "5", "--context", "0"], ["--context", "0"], "--context"),  # given twice: the last
    (["--window", "2", "-k", "6"], ["--window", "6"], "--window"),
])
def test_undocumented_spellings_are_refused_or_mean_the_plain_one(case, given, meant, flag):
    rc, doc, p = _diff_json(case, *given)
    if rc == 2:
        refused(p, "baseline", flag)
        return
    rc_plain, plain, _ = _diff_json(case, *meant)
    assert (rc, doc) == (rc_plain, plain), f"{given} read otherwise than {meant}"


@pytest.mark.parametrize("cmd", ["export", "learn"])
def test_output_given_twice_writes_one_file_or_is_refused(world, case, cmd):
    a, b = case / "a.out", case / "b.out"
    argv = ["export", G0] if cmd == "export" else ["learn", world["fleet"]]
    p = run(BASELINE, *argv, "-o", a, "-o", b, cwd=case)
    if p.returncode == 2:
        refused(p, "baseline", "-o")
        assert tree(case) == [".tmpdir/"]
    else:
        assert p.returncode == 0, tail(p)
        assert b.exists() and not a.exists(), tree(case)
        assert list((case / ".tmpdir").iterdir()) == []


# ---------------------------------------------------------------------------------------------
# -p: odd processes for tracer run (tracer record's are test_bad_inputs', test_robust_tracer_blind's
# and test_robust_fortythird's), and a process that exits while tracer record attaches
# ---------------------------------------------------------------------------------------------
def _snapshots_whole(spool: Path) -> None:
    if not spool.exists():
        return
    for p in spool.rglob("*"):
        assert not p.name.endswith(".tmp"), f"temporary left: {p}"
        if p.name.startswith("snap-"):
            assert sorted(x.name for x in p.iterdir()) == ["counters.parquet", "events.parquet"], p


@pytest.mark.parametrize("what", ["thread", "zombie"])
def test_run_pid_of_a_thread_or_a_zombie(need_bpf, request, case, what):  # noqa: ARG001
    xfail_known(request, f"run-pid-{what}")
    spool = case / "spool"
    release = threading.Event()
    holder = None
    if what == "thread":
        tids: list[int] = []
        worker = threading.Thread(target=lambda: (tids.append(threading.get_native_id()), release.wait(60)))
        worker.start()
        wait_for(lambda: tids, "the thread")
        pid = tids[0]
        assert pid != os.getpid()
    else:
        holder = subprocess.Popen(["/bin/true"])
        pid = holder.pid
        wait_for(lambda: proc_state(pid) == "Z", "the zombie")
    try:
        p = run(TRACER, "run", "syscalls", "--spool", spool, "-d", "2s", "-p", pid, cwd=case, timeout=90)
    finally:
        release.set()
        if holder:
            holder.wait()
    if what == "thread":  # tracing "this process" by a thread's id would trace nothing, silently
        refused(p, "tracer", str(pid))
    else:  # the process has exited: refused, or stopped at once (exit 0, "the -p process exited")
        assert "Traceback" not in p.stderr
        if p.returncode == 2:
            refused(p, "tracer", str(pid))
        else:
            assert p.returncode == 0, tail(p)
    _snapshots_whole(spool)
    assert list((case / ".tmpdir").iterdir()) == []


def test_run_pid_of_the_tracer_itself(need_bpf, request, case):  # noqa: ARG001
    xfail_known(request, "run-pid-itself")
    spool = case / "spool"
    p = subprocess.run(["/bin/sh", "-c", f'exec {TRACER} run syscalls --spool {spool} -d 500ms -p $$'],
                       capture_output=True, text=True, timeout=90, cwd=case, preexec_fn=_child_setup,
                       env={**os.environ, "TMPDIR": str(case / ".tmpdir")})
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    if p.returncode == 2:
        refused(p, "tracer", "-p")
    else:
        assert p.returncode == 0, tail(p)
    _snapshots_whole(spool)


def test_record_pid_that_exits_while_the_recorder_attaches(need_bpf, case):  # noqa: ARG001
    out = case / "t.parquet"
    # alive when the recorder starts (~0.2 s), gone before its BPF program is loaded and attached
    target = subprocess.Popen(["/bin/sh", "-c", "cat /etc/hostname >/dev/null; sleep 0.4; exit 3"])
    try:
        p = run(TRACER, "record", "-q", "-o", out, "-p", target.pid, cwd=case, timeout=90)
    finally:
        with contextlib.suppress(ProcessLookupError):
            target.kill()
        target.wait()
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    if p.returncode == 2:  # gone by the time it was looked at
        refused(p, "tracer", str(target.pid))
        assert not out.exists()
    else:
        assert p.returncode == 0, tail(p)
        validate_file(out, "events")
    assert [x for x in case.iterdir() if x.name not in (".tmpdir", "t.parquet")] == []
    assert list((case / ".tmpdir").iterdir()) == []


def test_record_duration_of_one_microsecond_leaves_the_command_running(need_bpf, case):  # noqa: ARG001
    """-d 1us with a command: recording stops, the command does not; exit 0, exit_status null."""
    out, marker = case / "t.parquet", case / "done"
    p = run(TRACER, "record", "-q", "-d", "1us", "-o", out, "--", "/bin/sh", "-c",
            f"sleep 1; : > {marker}", cwd=case, timeout=90)
    assert p.returncode == 0, tail(p)
    events = read_events(out)
    assert events["exit_status"][0] is None, events["exit_status"][0]
    wait_for(marker.exists, "the command's own end (it was stopped with the recording)", timeout=30)


def test_record_words_after_double_dash_reach_the_command(need_bpf, case):  # noqa: ARG001
    out, args = case / "t.parquet", case / "args.txt"
    words = ["-d", "5", "--json", "--", "-p", "1", "--output=x", "-o", "y"]
    p = run(TRACER, "record", "-q", "-o", out, "--", "/bin/sh", "-c", f'printf "%s\\n" "$@" > {args}', "sh",
            *words, cwd=case, timeout=90)
    assert p.returncode == 0, tail(p)
    assert args.read_text().splitlines() == words
    assert p.stdout == ""  # --json was the command's word, not the recorder's
    validate_file(out, "events")
    assert sorted(x.name for x in case.iterdir()) == [".tmpdir", "args.txt", "t.parquet"]


@pytest.mark.parametrize("word", ["-p", "--help", "-d"])
def test_record_command_word_that_looks_like_an_option_is_the_command(case, word):
    """`tracer record -o T -- -p 1`: after `--`, `-p` is the command (not found: 127, the --help's
    "127 when the command is not found"), never an attach to pid 1 nor the recorder's help."""
    out = case / "t.parquet"
    p = run(TRACER, "record", "-q", "-o", out, "--", word, "1", cwd=case, timeout=90)
    assert p.returncode == 127 and "Traceback" not in p.stderr, tail(p)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and word in lines[0] and p.stdout == "", (lines, p.stdout[:300])
    assert not any(x.name.endswith(".tmp") for x in case.iterdir())
    assert list((case / ".tmpdir").iterdir()) == []


def test_run_duration_of_one_microsecond_stops_cleanly(need_bpf, case):  # noqa: ARG001
    spool = case / "spool"
    t0 = time.monotonic()
    p = run(TRACER, "run", "syscalls", "--spool", spool, "-d", "1us", cwd=case, timeout=90)
    assert p.returncode == 0, tail(p)
    assert "Traceback" not in p.stderr and time.monotonic() - t0 < 60
    _snapshots_whole(spool)
    assert list((case / ".tmpdir").iterdir()) == []


# ---------------------------------------------------------------------------------------------
# huge values that still mean something: the documented meaning, or one line
# ---------------------------------------------------------------------------------------------
H64 = "18446744073709551617"  # 2**64 + 1


@pytest.mark.parametrize("flag,plain", [("--context", "1000000"), ("--max-anomalies", "1000000")])
def test_diff_huge_count_means_all(case, flag, plain):
    """`--context`/`--max-anomalies` 2**64+1 (no bound documented): all, as a million is for this
    small trace, or refused in one line -- never wrapped round to 1."""
    rc, doc, p = _diff_json(case, f"{flag}={H64}")
    if rc == 2:
        refused(p, "baseline", flag)
        return
    rc_plain, plain_doc, _ = _diff_json(case, f"{flag}={plain}")
    assert (rc, doc) == (rc_plain, plain_doc)


def test_export_huge_max_events_is_no_limit(case):
    a, b = case / "a.json", case / "b.json"
    p = run(BASELINE, "export", G0, "-o", a, f"--max-events={H64}", cwd=case)
    if p.returncode == 2:
        refused(p, "baseline", "--max-events")
        assert not a.exists()
        return
    assert p.returncode == 0, tail(p)
    q = run(BASELINE, "export", G0, "-o", b, cwd=case)
    assert q.returncode == 0, tail(q)
    assert json.loads(a.read_text()) == json.loads(b.read_text())


@pytest.mark.parametrize("argv,flag", [
    (["simulate", "--hosts", "1", "--hours", "0.1", "-o", "{case}/out", f"--seed={H64}"], "--seed"),
    (["simulate", "--hosts", "1", "--hours", "0.1", "-o", "{case}/out", f"--workers={H64}"], "--workers"),
    (["expected", "learn", "{fleet}", "-o", "{case}/out", f"--min-hosts={H64}"], "--min-hosts"),
    (["coverage", "{fleet}", "-o", "{case}/out", "--trend-pct=1e308"], "--trend-pct"),
    (["ingest", "--keep-spool", "{spool}", "{case}/out", f"--compact-min-files={H64}"], "--compact-min-files"),
    (["learn", "{fleet}", "-o", "{case}/out", "--since=1678-01-01T00:00:00Z"], "--since"),
], ids=["seed", "workers", "min-hosts", "trend-pct", "compact-min-files", "since-1678"])
def test_huge_but_meaningful_value_does_its_work_or_is_refused(world, case, argv, flag):
    p = run(BASELINE, *_argv(argv, case, world), cwd=case)
    if p.returncode == 2:
        refused(p, "baseline", flag)
        assert not (case / "out").exists()
    else:
        assert p.returncode == 0 and "Traceback" not in p.stderr, tail(p)
        assert (case / "out").exists()
    assert list((case / ".tmpdir").iterdir()) == []


# ---------------------------------------------------------------------------------------------
# durations at the int64-nanosecond edge, really used (not only parsed); -d shorter than -i
# ---------------------------------------------------------------------------------------------
EDGE_S = "9223372036"  # seconds: just under 2**63 ns


@pytest.mark.parametrize("flag,code", [("--duration", 0), ("--linger", 4)])
def test_record_duration_at_the_int64_edge_is_used_without_overflow(need_bpf, case, flag, code):  # noqa: ARG001
    """A duration just under 2**63 ns, added to the clock, ends nowhere near the edge's overflow:
    the command exits, the recording ends with it, the exit status is the command's."""
    out = case / "t.parquet"
    t0 = time.monotonic()
    p = run(TRACER, "record", "-q", f"{flag}={EDGE_S}", "-o", out, "--", "/bin/sh", "-c", f"exit {code}", cwd=case,
            timeout=90)
    assert p.returncode == code and "Traceback" not in p.stderr, tail(p)
    assert time.monotonic() - t0 < 60
    validate_file(out, "events")


def _start(argv: list, case: Path) -> tuple[subprocess.Popen, Path]:
    err = case / "stderr.txt"
    with err.open("w") as fh:
        proc = subprocess.Popen([TRACER, *map(str, argv)], cwd=case, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=fh, preexec_fn=_child_setup,
                                env={**os.environ, "TMPDIR": str(case / ".tmpdir")})
    return proc, err


def test_run_duration_at_the_int64_edge_then_sigterm(need_bpf, case):  # noqa: ARG001
    spool = case / "spool"
    proc, err = _start(["run", "syscalls", "--spool", spool, f"--duration={EDGE_S}", f"--good-every={EDGE_S}"], case)
    try:
        # started once the spool's host directory holds its lock (docs/airflow.md) or it ended
        # started once it has said something (its capture-window line) or ended
        wait_for(lambda: proc.poll() is not None or err.stat().st_size > 0, "the daemon's start", 60)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
    text = err.read_text()
    assert rc == 0 and "Traceback" not in text, text[-2000:]
    assert list(spool.glob("*/snap-*")), "no final snapshot"
    _snapshots_whole(spool)


def test_run_duration_shorter_than_the_interval_stops_at_the_duration(need_bpf, case):  # noqa: ARG001
    spool = case / "spool"
    t0 = time.monotonic()
    p = run(TRACER, "run", "syscalls", "--spool", spool, "-d", "500ms", "-i", "1h", cwd=case, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode == 0 and "Traceback" not in p.stderr, tail(p)
    assert took < 60, f"-d 500ms with -i 1h took {took:.0f} s"
    _snapshots_whole(spool)


def test_run_pid_1_is_traced_or_refused_in_one_line(need_bpf, case):  # noqa: ARG001
    spool = case / "spool"
    p = run(TRACER, "run", "syscalls", "--spool", spool, "-d", "500ms", "-p", "1", cwd=case, timeout=90)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    if p.returncode == 2:
        refused(p, "tracer", "1")
    else:
        assert p.returncode == 0, tail(p)
    _snapshots_whole(spool)
