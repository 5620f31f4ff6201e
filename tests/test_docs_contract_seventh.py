"""Seventh docs-versus-behaviour battery: the promises README.md, docs/architecture.md and
docs/diff-json.md gained on 2026-12-07 (`git log -p --since='2026-12-07 14:00' -- README.md docs/`).

`baseline summarize` (what it writes, idempotence, `--date`, `-j`, the orphans it removes, the
file it leaves and lists), the audit's `stale_summary_hosts`, stdout written whole (a short
write under `ulimit -f` is one line naming <stdout>, exit 2), and the diff's new rules: the sibling
fold (`repeats`, `repeated_in`, `anomaly_count` counting it once), a `sleep` role never a
missing process, two outcome changes a re-join apart being two anomalies, a directory listed
right after a file's miss being no fallback lookup.

Blind: the oracle is the docs, the --help texts, tracer/schema.py and what `strace -f` shows the
recorded programs doing (noted beside each program); never the code under baseline/ or tracer/.
Inputs are real: `tracer record` of small shell and python programs written here (root + bcc;
those cases skip with the reason otherwise), `baseline simulate` fleets, the real CLIs. The
earlier contract modules (test_docs_contract.py ... _sixth.py) check none of these sentences.
Each test quotes the sentence it checks; a promise the tool breaks stays as a strict xfail
naming what was found.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
SYS_PY = shutil.which("python3", path="/usr/bin:/bin") or "python3"
START = "2026-12-01T22:30:00Z"  # 3 hours over midnight: two dates
DATES = ("2026-12-01", "2026-12-02")


def run(*args, cwd=None, env=None, timeout=240, check_rc=None, preexec_fn=None, stdout=None):
    cp = subprocess.run([str(a) for a in args], cwd=cwd, env=env, timeout=timeout, text=True,
                        stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
                        stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE)
    if check_rc is not None:
        assert cp.returncode == check_rc, (args, cp.returncode, (cp.stdout or "")[-2000:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr, cp.stderr
    return cp


def one_line_error(cp) -> str:
    lines = [ln for ln in cp.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, cp.stderr
    return lines[0]


# --------------------------------------------------------------------------- fleet inputs

@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """`baseline simulate` of 3 hosts over 3 hours across midnight: 6 counters files, each
    with its summary beside it, as the simulator writes them."""
    ds = tmp_path_factory.mktemp("fleet") / "ds"
    run(BASELINE, "simulate", "--hosts", "3", "--hours", "3", "--start", START, "-o", ds, check_rc=0)
    assert len(counters_files(ds)) == 6
    return ds


def counters_files(ds: Path) -> list[Path]:
    return sorted((ds / "counters").rglob("*.parquet"))


def summary_files(ds: Path) -> list[Path]:
    return sorted((ds / "counter_buckets").rglob("*.parquet"))


def summary_of(ds: Path, counters: Path) -> Path:
    return ds / "counter_buckets" / counters.relative_to(ds / "counters")


def sorted_rows(path: Path) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda r: (r["probe"], r["bucket"]))


def copy_ds(fleet: Path, tmp_path: Path, name: str = "ds") -> Path:
    dst = tmp_path / name
    shutil.copytree(fleet, dst)
    shutil.rmtree(dst / "audit", ignore_errors=True)
    return dst


def summarize(ds: Path, *extra) -> dict:
    cp = run(BASELINE, "summarize", ds, *extra, "--json", check_rc=0)
    return json.loads(cp.stdout)


def audit(ds: Path, out: Path, *extra) -> tuple[dict, subprocess.CompletedProcess]:
    cp = run(BASELINE, "audit", ds, "-o", out, "--json", *extra, check_rc=0)
    return json.loads(cp.stdout), cp


def audit_tables(out: Path) -> dict[str, list[dict]]:
    tables = {}
    for name in ("findings", "clusters", "host_alerts"):
        files = sorted(out.rglob(f"{name}*.parquet"))
        assert files, (name, list(out.rglob("*")))
        rows = [r for f in files for r in pq.read_table(f).to_pylist()]
        tables[name] = sorted(rows, key=repr)
    return tables


def make_stale(summary: Path) -> None:
    """Rewrite a summary, its rows unchanged, as if an older rule had written it: its footer's
    `tracebase.source` states another bucket rule (the rule before round forty-five: by the
    snapshot time alone)."""
    t = pq.read_table(summary)
    meta = {k: v for k, v in pq.ParquetFile(summary).metadata.metadata.items() if k != b"ARROW:schema"}
    src = json.loads(meta[b"tracebase.source"])
    assert src.get("bucket_of"), src  # what tracer.schema.BUCKET_OF names
    src["bucket_of"] = "snapshot time"
    meta[b"tracebase.source"] = json.dumps(src).encode()
    pq.write_table(t.replace_schema_metadata(meta), summary)


@pytest.fixture(scope="module")
def plain_audit(fleet, tmp_path_factory) -> tuple[dict, dict]:
    out = tmp_path_factory.mktemp("plain") / "audit"
    summary, _ = audit(fleet, out)
    return summary, audit_tables(out)


# --------------------------------------------------------------------------- baseline summarize

def test_summarize_writes_missing_summaries_as_the_writer_did_and_is_idempotent(fleet, tmp_path):
    """README: "`baseline summarize DATASET [--date D] [-j N]` | write the counters' 15-minute
    summaries that are missing or stale"; architecture.md: "writes the summaries that are missing
    or stale under the dataset's writer lock (...; idempotent; ...)"; --help: "--json print the
    result (files looked at, current, written, left with the reason)"."""
    ds = copy_ds(fleet, tmp_path)
    before = {p: sorted_rows(p) for p in summary_files(ds)}
    assert len(before) == 6
    for p in before:
        p.unlink()
    first = summarize(ds)
    assert first["files"] == 6 and first["written"] == 6 and first["left"] == [], first
    for p, rows in before.items():
        assert p.is_file(), p
        assert sorted_rows(p) == rows, p  # the same per-probe, per-bucket counts as the simulator's
    stamps = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in summary_files(ds)}
    again = summarize(ds)
    assert again["files"] == 6 and again["written"] == 0 and again["current"] == 6, again
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in summary_files(ds)} == stamps
    # the text form says it too, exit 0
    cp = run(BASELINE, "summarize", ds, check_rc=0)
    assert cp.stdout.strip() or cp.stderr.strip()


def test_summarize_date_writes_only_that_dates_summaries(fleet, tmp_path):
    """README: "`baseline summarize DATASET [--date D] [-j N]`"; --help: "--date YYYY-MM-DD only
    this date's counters (repeat for more; default: every date)"."""
    ds = copy_ds(fleet, tmp_path)
    for p in summary_files(ds):
        p.unlink()
    got = summarize(ds, "--date", DATES[1])
    assert got["written"] == 3, got
    assert {p.parent.parent.name for p in summary_files(ds)} == {f"date={DATES[1]}"}
    got = summarize(ds, "--date", DATES[0], "--date", DATES[1])
    assert got["written"] == 3 and got["current"] == 3, got
    assert len(summary_files(ds)) == 6


def test_summarize_workers_write_what_one_process_writes(fleet, tmp_path):
    """README: "`baseline summarize DATASET [--date D] [-j N]`"; --help: "-j N, --workers N
    summarize partitions in N processes (default 1)": the same summaries either way."""
    one, two = copy_ds(fleet, tmp_path, "one"), copy_ds(fleet, tmp_path, "two")
    for ds in (one, two):
        for p in summary_files(ds):
            p.unlink()
    a, b = summarize(one), summarize(two, "-j", "2")
    assert a["written"] == b["written"] == 6, (a, b)
    for p in summary_files(one):
        q = two / p.relative_to(one)
        assert pq.read_table(p).equals(pq.read_table(q)), p


# (found by this module and fixed in round forty-six, strict xfails here: a summary under a host or
# date with no counters file left was kept, orphans_removed 0)


@pytest.mark.parametrize("where", ["beside", "host_gone", "date_gone"])
def test_summarize_removes_a_summary_whose_counters_file_is_gone(fleet, tmp_path, where):
    """--help: "Write the 15-minute summary ... and remove summaries whose counters file is gone".
    The orphan: a summary beside the host's counters summary under another name (beside), in a
    host partition with no counters at all (host_gone), in a date no counters have (date_gone)."""
    ds = copy_ds(fleet, tmp_path)
    src = summary_files(ds)[0]
    part = {"beside": src.parent, "host_gone": src.parent.parent / "host=gpu00009",
            "date_gone": ds / "counter_buckets" / "date=2026-12-05" / src.parent.name}[where]
    orphan = part / ("part-00007.parquet" if where == "beside" else src.name)
    part.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, orphan)
    got = summarize(ds)
    assert not orphan.exists(), got
    assert got.get("orphans_removed") == 1, got
    assert len(summary_files(ds)) == 6


def test_summarize_lists_a_file_whose_counts_no_interval_can_hold(fleet, tmp_path):
    """architecture.md: "`baseline summarize` ... (...; a file whose counts no interval can hold
    gets none and is listed)"; --help: "exit status: 0 done (files left without a summary are
    listed: the audit reads them whole)". tracer/schema.py's check_counts: failures above the
    row's invocations cannot be one interval's."""
    ds = copy_ds(fleet, tmp_path)
    bad = [p for p in counters_files(ds) if "gpu00002" in str(p) and DATES[1] in str(p)][0]
    t = pq.read_table(bad)
    calls = t.column("invocations").to_pylist()
    failures = t.column("failures").to_pylist()
    failures[0] = calls[0] + 5
    import pyarrow as pa
    t = t.set_column(t.schema.get_field_index("failures"), t.schema.field("failures"),
                     pa.array(failures, pa.int64()))
    pq.write_table(t, bad)
    summary_of(ds, bad).unlink()
    got = summarize(ds)
    assert not summary_of(ds, bad).exists()
    assert len(got["left"]) == 1, got
    assert "gpu00002" in json.dumps(got["left"][0]), got
    assert got["written"] == 0 and got["current"] == 5, got


# --------------------------------------------------------------------------- stale_summary_hosts

def test_audit_names_hosts_read_whole_for_stale_summaries_then_summarize_fixes_them(fleet, plain_audit, tmp_path):
    """architecture.md: "The audit says how many hosts it read whole because their summaries were
    there but stale (`stale_summary_hosts`; a summary from before a rule change, such as the
    bucket rule, is stale)" and "a stale or broken summary ... give the same tables, just slower";
    README: "(after an upgrade: the audit names how many hosts it read whole without them)"."""
    plain, plain_tables = plain_audit
    assert plain["stale_summary_hosts"] == 0, plain
    ds = copy_ds(fleet, tmp_path)
    stale = [p for p in summary_files(ds) if "host=gpu00001" in str(p)]
    assert len(stale) == 2
    for p in stale:
        make_stale(p)
    got, cp = audit(ds, tmp_path / "a1")
    assert got["stale_summary_hosts"] == 1, got
    assert audit_tables(tmp_path / "a1") == plain_tables
    text = run(BASELINE, "audit", ds, "-o", tmp_path / "a2", check_rc=0)
    said = [ln for ln in (text.stdout + text.stderr).splitlines() if "stale" in ln.lower()]
    assert said and any("1" in ln for ln in said), (text.stdout, text.stderr)
    fixed = summarize(ds)
    assert fixed["written"] == 2 and fixed["current"] == 4, fixed
    after, _ = audit(ds, tmp_path / "a3")
    assert after["stale_summary_hosts"] == 0, after
    assert audit_tables(tmp_path / "a3") == plain_tables


def test_a_missing_summary_is_not_a_stale_one(fleet, plain_audit, tmp_path):
    """architecture.md: "how many hosts it read whole because their summaries were there but
    stale": a host with no summary at all is read whole too (same tables) but is not counted."""
    _, plain_tables = plain_audit
    ds = copy_ds(fleet, tmp_path)
    for p in summary_files(ds):
        if "host=gpu00000" in str(p):
            p.unlink()
    got, _ = audit(ds, tmp_path / "a")
    assert got["stale_summary_hosts"] == 0, got
    assert audit_tables(tmp_path / "a") == plain_tables


# --------------------------------------------------------------------------- recordings

@pytest.fixture(scope="module")
def bpf_ok():
    from conftest import bpf_unavailable_reason

    reason = bpf_unavailable_reason()
    if reason:
        pytest.skip(f"recording needs root and bcc: {reason}")


# strace -f: 13 sibling cat processes each openat("data.txt") -> ENOENT in BAD (found in good
# runs), then write(2, "cat: data.txt: No such file or directory\n"); the script exits 0.
REP_SH = """\
#!/bin/sh
cat input.txt > /dev/null
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do cat data.txt > /dev/null 2>&1; done
cat input.txt > /dev/null
exit 0
"""

# strace -f: good runs fork sleep 0.01 (clock_nanosleep) and /bin/true; BAD_SLEEP runs no
# sleep, BAD_TRUE runs no true; everything else is the same cat of input.txt twice, exit 0.
WAIT_SH = """\
#!/bin/sh
cat input.txt > /dev/null
[ -n "$SKIP_SLEEP" ] || sleep 0.01
[ -n "$SKIP_TRUE" ] || /bin/true
cat input.txt > /dev/null
exit 0
"""

# strace -f (bad): openat("opt1.conf") ENOENT; openat("known.txt") ok, fstat, ioctl TCGETS
# ENOTTY, lseek, read, read, close; openat("opt2.conf") ENOENT; then tail.txt read; exit 0.
OPTS_PY = """\
def rd(p):
    try:
        with open(p) as f:
            return f.read()
    except FileNotFoundError:
        return None
rd("opt1.conf")
rd("known.txt")
rd("opt2.conf")
rd("tail.txt")
"""

# strace -f (bad): openat("cache.idx", O_RDONLY|O_CLOEXEC) ENOENT; the very next call
# openat("src", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3; getdents64 x2; close;
# openat("/proc/sys/kernel/ostype", O_WRONLY|O_CREAT|O_TRUNC) EACCES (root too: a 0444 sysctl);
# then tail.txt read; exit 0. Good runs: cache.idx read, no listing, no rebuild.
CACHE_PY = """\
import os
def rd(p):
    try:
        with open(p) as f:
            return f.read()
    except FileNotFoundError:
        return None
if rd("cache.idx") is None:
    names = sorted(os.listdir("src"))
    try:
        with open("/proc/sys/kernel/ostype", "w") as f:
            f.write("\\n".join(names))
    except PermissionError:
        pass
rd("tail.txt")
"""


def _record(d: Path, name: str, cmd: list[str], env: dict | None = None) -> Path:
    out = d / f"{name}.parquet"
    run(TRACER, "record", "-q", "-o", out, "--", *cmd, cwd=d, env={**os.environ, **(env or {})}, check_rc=0)
    return out


def _group_rep(base: Path) -> dict[str, Path]:
    d = base / "rep"
    d.mkdir()
    (d / "rep.sh").write_text(REP_SH)
    (d / "rep.sh").chmod(0o755)
    (d / "input.txt").write_text("in\n")
    (d / "data.txt").write_text("data\n")
    out = {f"rep_g{i}": _record(d, f"g{i}", ["./rep.sh"]) for i in (1, 2)}
    (d / "data.txt").unlink()
    out["rep_bad"] = _record(d, "bad", ["./rep.sh"])
    return out


def _group_wait(base: Path) -> dict[str, Path]:
    d = base / "wait"
    d.mkdir()
    (d / "wait.sh").write_text(WAIT_SH)
    (d / "wait.sh").chmod(0o755)
    (d / "input.txt").write_text("in\n")
    out = {f"wait_g{i}": _record(d, f"g{i}", ["./wait.sh"]) for i in (1, 2)}
    out["wait_nosleep"] = _record(d, "nosleep", ["./wait.sh"], {"SKIP_SLEEP": "1"})
    out["wait_notrue"] = _record(d, "notrue", ["./wait.sh"], {"SKIP_TRUE": "1"})
    return out


def _group_py(base: Path) -> dict[str, Path]:
    out = {}
    d = base / "opts"
    d.mkdir()
    (d / "opts.py").write_text(OPTS_PY)
    for f in ("opt1.conf", "known.txt", "opt2.conf", "tail.txt"):
        (d / f).write_text(f"{f}\n")
    out.update({f"opts_g{i}": _record(d, f"g{i}", [SYS_PY, "opts.py"]) for i in (1, 2)})
    (d / "opt1.conf").unlink()
    (d / "opt2.conf").unlink()
    out["opts_bad"] = _record(d, "bad", [SYS_PY, "opts.py"])
    d = base / "cache"
    d.mkdir()
    (d / "cache.py").write_text(CACHE_PY)
    (d / "src").mkdir()
    for f in ("a.c", "b.c"):
        (d / "src" / f).write_text("int x;\n")
    (d / "cache.idx").write_text("a.c\nb.c\n")
    (d / "tail.txt").write_text("t\n")
    out.update({f"cache_g{i}": _record(d, f"g{i}", [SYS_PY, "cache.py"]) for i in (1, 2)})
    (d / "cache.idx").unlink()
    out["cache_bad"] = _record(d, "bad", [SYS_PY, "cache.py"])
    return out


@pytest.fixture(scope="module")
def recs(tmp_path_factory, bpf_ok) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("recs")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futs = [pool.submit(g, base) for g in (_group_rep, _group_wait, _group_py)]
        out: dict[str, Path] = {}
        for f in futs:
            out.update(f.result())
    return out


def diff_json(*traces: Path, rc: int | None = None) -> dict:
    cp = run(BASELINE, "diff", *traces, "--json", "--max-anomalies", "100")
    assert cp.returncode in (0, 1), (cp.returncode, cp.stderr)
    if rc is not None:
        assert cp.returncode == rc, (cp.returncode, cp.stdout[:3000])
    return json.loads(cp.stdout)


@pytest.fixture(scope="module")
def rep_diff(recs) -> dict:
    return diff_json(recs["rep_g1"], recs["rep_g2"], recs["rep_bad"], rc=1)


def _named(a: dict) -> tuple:
    return (a["probe"], a["errno"], a["path"])


def test_same_anomaly_in_sibling_processes_is_folded_into_one(rep_diff):
    """diff-json.md, `repeats`: "how many more sibling processes of the same role (...) had the
    same anomaly -- the same call, errno and path named -- folded into this one: a shell loop
    running the same command again (...) is one fault, listed once"; `repeated_in`: "the roles
    of the first 10 of those processes". 13 cat processes each failed openat(data.txt) ENOENT."""
    misses = [a for a in rep_diff["anomalies"] if a["errno"] == "ENOENT" and (a["path"] or "").endswith("data.txt")]
    assert len(misses) == 1, [_named(a) for a in rep_diff["anomalies"]]
    a = misses[0]
    assert a["rank"] == 1, a
    assert a["repeats"] == 12, a
    assert len(a["repeated_in"]) == 10, a
    assert len(set(a["repeated_in"])) == 10, a["repeated_in"]
    assert all("cat" in r for r in a["repeated_in"]), a["repeated_in"]
    assert a["process"]["role"] not in a["repeated_in"], (a["process"], a["repeated_in"])
    assert all(r.split("#")[0] == a["process"]["role"].split("#")[0] for r in a["repeated_in"]), a


def test_anomaly_count_counts_a_repeated_anomaly_once(rep_diff):
    """diff-json.md: "`anomaly_count` | number of anomalies before truncation (an anomaly repeated
    in sibling processes counts once: `repeats`)"; `repeats`: "0 when none"."""
    anomalies = rep_diff["anomalies"]
    assert rep_diff["anomaly_count"] == len(anomalies), (rep_diff["anomaly_count"], len(anomalies))
    keys = [(_named(a), a["process"]["role"].split("#")[0]) for a in anomalies]
    assert len(keys) == len(set(keys)), keys
    assert all(isinstance(a["repeats"], int) and a["repeats"] >= 0 for a in anomalies)
    # (round forty-seven: an anomaly repeated only in its own thread has repeats and no other role)
    assert all(a["repeats"] >= len(a["repeated_in"]) for a in anomalies)


def test_a_sleep_role_is_never_a_missing_process(recs):
    """diff-json.md, `kind`: "`missing_process` (a process role every good run has and BAD lacks;
    never one whose program only waits -- `sleep`, `usleep`: how many waits a retry loop made is
    timing)". Both good runs ran `sleep 0.01`; BAD ran none."""
    got = diff_json(recs["wait_g1"], recs["wait_g2"], recs["wait_nosleep"])
    missing = [a for a in got["anomalies"] if a["kind"] == "missing_process"]
    assert not missing, missing


def test_a_role_that_does_work_is_a_missing_process(recs):
    """diff-json.md, `kind`: "`missing_process` (a process role every good run has and BAD
    lacks ...)"; `probe`: "`(process missing)`"; `position`: "-1 for a missing process". The
    control of the case above: BAD ran no /bin/true, which both good runs ran."""
    got = diff_json(recs["wait_g1"], recs["wait_g2"], recs["wait_notrue"], rc=1)
    missing = [a for a in got["anomalies"] if a["kind"] == "missing_process"]
    assert len(missing) == 1, [(a["kind"], _named(a)) for a in got["anomalies"]]
    assert missing[0]["probe"] == "(process missing)" and missing[0]["position"] == -1, missing[0]
    assert "true" in json.dumps(missing[0]), missing[0]


def test_two_outcome_changes_a_rejoin_apart_are_two_anomalies(recs):
    """diff-json.md: "Unexplained runs less than k events apart make one region, except where the
    thread re-joined the good runs (a whole window of their events) between two outcome changes:
    two independent faults a few known calls apart (an optional input missing, the next read as
    the good runs read it, a third missing) are two anomalies, the first keeping the whole
    stretch's "never re-joins" (a cause is not outranked by its consequence)". opt1.conf missing,
    known.txt read as the good runs read it (7 calls), opt2.conf missing."""
    got = diff_json(recs["opts_g1"], recs["opts_g2"], recs["opts_bad"], rc=1)
    named = [_named(a) for a in got["anomalies"]]
    first = [a for a in got["anomalies"] if a["errno"] == "ENOENT" and (a["path"] or "").endswith("opt1.conf")]
    second = [a for a in got["anomalies"] if a["errno"] == "ENOENT" and (a["path"] or "").endswith("opt2.conf")]
    assert len(first) == 1 and len(second) == 1, named
    assert got["bifurcation"]["path"].endswith("opt1.conf"), named
    assert first[0]["score"] >= second[0]["score"], (first[0]["score"], second[0]["score"])
    assert got["anomaly_count"] >= 2


def test_a_directory_listed_after_a_miss_is_no_fallback_lookup(recs):
    """diff-json.md: "A soft error answered by a directory opened for listing (O_DIRECTORY) is no
    fallback lookup (below): the listing is the work the miss set off (a cache index missing, its
    sources listed to rebuild it), and the miss names its region." cache.idx ENOENT (found in the
    good runs), the very next call lists src/ (O_DIRECTORY), then the rebuild's write-open fails
    EACCES."""
    got = diff_json(recs["cache_g1"], recs["cache_g2"], recs["cache_bad"], rc=1)
    b = got["bifurcation"]
    assert b["errno"] == "ENOENT" and b["path"].endswith("cache.idx"), [_named(a) for a in got["anomalies"]]
    assert b["kind"] == "error", b
    assert not any(r.get("errno") == "ENOENT" and (r.get("path") or "").endswith("cache.idx")
                   for r in got["reorderings"]), got["reorderings"]


# --------------------------------------------------------------------------- stdout written whole

def _fsize_limit(limit: int):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


@pytest.mark.parametrize("what", ["export", "diff"])
def test_a_short_write_to_stdout_is_one_line_naming_stdout_exit_2(recs, tmp_path, what):
    """README: "User errors and OS errors (... a stdout that cannot be written, or takes only part
    of the output -- a disk filling up, `ulimit -f`: `<stdout>: No space left on device`, ...)
    print one line naming the file, flag or variable, what was expected and what was found, and
    exit with status 2; never a traceback." architecture.md: "stdout is written whole by the
    dispatcher (...), as Python's buffered stream took a short write (...) for a whole one and
    dropped the rest without a word"."""
    if what == "export":
        argv = [BASELINE, "export", recs["rep_bad"]]
    else:
        argv = [BASELINE, "diff", recs["rep_g1"], recs["rep_g2"], recs["rep_bad"], "--json"]
    whole = run(*argv)
    assert whole.returncode in (0, 1), whole.stderr
    size = len(whole.stdout.encode())
    json.loads(whole.stdout)
    limit = 2048
    assert size > 2 * limit, size
    out = tmp_path / "out.json"
    with open(out, "w") as fh:
        cp = run(*argv, stdout=fh, preexec_fn=_fsize_limit(limit))
    assert cp.returncode == 2, (cp.returncode, cp.stderr)
    assert "<stdout>" in one_line_error(cp)
    assert out.stat().st_size <= limit


# --------------------------------------------------------------------------- a bad bucket

BAD_PROBE = "ib_peer_umem_get"  # no row of it 01:00-02:20 on either host
BAD_FROM = "2026-12-01T01:00:00Z"  # 5 buckets, 01:00-02:15, over a 4-hour window


def _add_failing_rows(ds: Path, host: str, failures_per_bucket: list[int], errno: str = "EIO") -> None:
    """Add 3 snapshots a bucket (01:00:30, 01:05:30, 01:10:30, ...) of BAD_PROBE on `host`, 4
    calls each (12 a bucket), failing `errno` `failures_per_bucket[i]` times in all in each of 5
    buckets; the probe has no other row there. The file is rewritten with its footer."""
    import datetime as dt

    import pyarrow as pa

    path = [p for p in counters_files(ds) if f"host={host}" in str(p)][0]
    t = pq.read_table(path)
    kv = {k: v for k, v in pq.ParquetFile(path).metadata.metadata.items() if k != b"ARROW:schema"}
    rows = t.to_pylist()
    start = dt.datetime.fromisoformat(BAD_FROM)
    end = start + dt.timedelta(minutes=15 * len(failures_per_bucket))
    assert not [r for r in rows if r["probe"] == BAD_PROBE and start < r["snapshot_time"] <= end + dt.timedelta(minutes=5)]
    template = next(r for r in rows if r["probe"] == BAD_PROBE)
    new = []
    for b, fails in enumerate(failures_per_bucket):
        split = [fails // 3 + (1 if i < fails % 3 else 0) for i in range(3)]
        for i in range(3):
            when = start + dt.timedelta(minutes=15 * b + 5 * i, seconds=30)
            new.append({**template, "snapshot_time": when, "interval_s": 300.0, "invocations": 4,
                        "failures": split[i], "errno_counts": [{"errno": errno, "count": split[i]}] if split[i] else [],
                        "lost_records": 0})
    out = pa.Table.from_pylist(sorted(rows + new, key=lambda r: r["snapshot_time"]), schema=t.schema)
    pq.write_table(out.replace_schema_metadata(kv), path)
    summary_of(ds, path).unlink()


@pytest.fixture(scope="module")
def bad_bucket_audit(tmp_path_factory) -> list[dict]:
    base = tmp_path_factory.mktemp("badbucket")
    ds = base / "ds"
    run(BASELINE, "simulate", "--hosts", "4", "--hours", "4", "--scenario", "none",
        "--start", "2026-12-01T00:00:00Z", "-o", ds, check_rc=0)
    _add_failing_rows(ds, "gpu00001", [6] * 5)  # exactly half of 12 calls, 5 buckets
    # under half, 5 buckets; another errno, so that it is no routine family gpu00001's EIO falls in
    _add_failing_rows(ds, "gpu00002", [5] * 5, "ENOMEM")
    assert summarize(ds)["written"] == 2
    audit(ds, base / "audit")
    return [r for f in sorted((base / "audit").rglob("host_alerts*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_a_bad_bucket_is_half_of_a_probes_calls_or_more(bad_bucket_audit):
    """architecture.md: "a persistent bad state needs a run of 4 or more 15-minute buckets (an
    hour) in each of which a probe failed on most of its calls (half of them or more,
    `bad_ratio`; with an error the host's routine families do not explain), 3 times a bucket or
    more over the run". gpu00001: ib_peer_umem_get failed EIO on 6 of 12 calls in each of 5 buckets
    (exactly half): a persistent bad state; gpu00002: ENOMEM on 5 of 12 (under half): none. (The
    under-half control fails with another errno: with EIO too, gpu00001's exact half fell inside
    the band gpu00002's 5 of 12 gave the family -- "with an error the host's routine families do
    not explain" -- and neither host got the alert.)"""
    bad = [(r["host"], r["probe"], r["errno"]) for r in bad_bucket_audit if r["alert"] == "persistent_bad_state"]
    assert ("gpu00001", BAD_PROBE, "EIO") in bad, bad_bucket_audit
    assert not [b for b in bad if b[0] == "gpu00002"], bad_bucket_audit
