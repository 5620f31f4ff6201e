"""Sixth docs-versus-behaviour battery: what each command's `--help` says about its options.

The earlier contract modules (test_docs_contract.py ... _fifth.py) and test_help_examples.py run
every `--help` example and check README.md, docs/diff-json.md, docs/airflow.md and
docs/architecture.md. This module checks the sentences of the option lists and epilogs they
leave out: each described default is the real one (the command run with and without the
default spelled out gives the same answer, and what the default names is what happened), each
unit and format as described, and the exit statuses the epilogs name that were not yet run
(128+N for a command killed by a signal, 126 for a file that is not a program, 127 for a
missing #! interpreter, `tracer run -p` stopping with 0 when its process exits).

Blind: the oracle is the `--help` texts, README.md, tracer/schema.py and what the recorded
programs do (a shell script running cat, ls and wc); never the code under baseline/ or tracer/.
Inputs are real: `tracer record` recordings of a small job script (root + bcc; those cases
skip with the reason otherwise), `baseline simulate` fleets, the real CLIs. Each test quotes
the help sentence it checks. A promise the tool breaks stays as a strict xfail naming what
was found.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
PY = str(BIN / "python")
IS_ROOT = os.geteuid() == 0
HOSTNAME = socket.gethostname()


def run(*args, cwd=None, env=None, timeout=180, check_rc=None):
    cp = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                        timeout=timeout, stdin=subprocess.DEVNULL)
    if check_rc is not None:
        assert cp.returncode == check_rc, (args, cp.returncode, cp.stdout[-2000:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr, cp.stderr
    return cp


def one_line_error(cp) -> str:
    lines = [ln for ln in cp.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, cp.stderr
    return lines[0]


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under root (a simulated fleet is byte-reproducible)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def parquet_rows(root: Path, table: str) -> list[dict]:
    out: list[dict] = []
    for f in sorted((root / table).rglob("*.parquet")):
        out.extend(pq.read_table(f).to_pylist())
    return out


@pytest.fixture(scope="module")
def bpf_ok():
    from conftest import bpf_unavailable_reason

    reason = bpf_unavailable_reason()
    if reason:
        pytest.skip(f"recording needs root and bcc: {reason}")


# --------------------------------------------------------------------------- recordings

JOB = """\
#!/bin/sh
# a small job: reads its config, maybe an optional file, then its data file
cat config.ini > /dev/null
if [ -n "$PROBE_OPT" ]; then cat optional.conf 2>/dev/null; fi
if [ -n "$MANY" ]; then
  # 27 programs, each failing on a missing file: over 20 distinct anomalies
  for p in cat head tail wc od nl tac cksum sort uniq cut paste fold fmt pr expand unexpand tsort shuf \\
           sum stat du readlink md5sum sha1sum base64 ptx; do
    "$p" "/nonexistent/by-$p" > /dev/null 2>&1
  done
fi
data="${DATA:-rows.txt}"
cat "$data" > /dev/null && echo "rows: $(wc -l < "$data")"
"""


@pytest.fixture(scope="module")
def recs(tmp_path_factory, bpf_ok) -> Path:
    """Real `tracer record` runs of job.sh, plus the runs whose exit status or options are checked.

    g1 (also probes a missing optional.conf), g2 (recorded without -q, its stderr kept), g3:
    good; bad: its data file is missing (cat fails, the job exits 1); many: 27 different programs
    each failing on a missing file (over 20 distinct anomalies);
    host: `--host h6-node -- true`."""
    base = tmp_path_factory.mktemp("recs")
    (base / "job.sh").write_text(JOB)
    (base / "job.sh").chmod(0o755)
    (base / "config.ini").write_text("[job]\n")
    (base / "rows.txt").write_text("a\nb\n")

    def rec(name, *extra, env=None, cmd=("./job.sh",), quiet=True):
        full = {**os.environ, **(env or {})}
        args = [TRACER, "record", *(["-q"] if quiet else []), "-o", base / f"{name}.parquet", *extra, "--", *cmd]
        return name, run(*args, cwd=base, env=full)

    def goods():  # one after the other: g2 starts after g1 ended (the --align check needs the gap)
        return [rec("g1", "--label", "good", env={"PROBE_OPT": "1"}), rec("g2", "--label", "good", quiet=False)]

    with ThreadPoolExecutor(max_workers=2) as pool:
        futs = [pool.submit(goods),
                pool.submit(lambda: [rec("g3", "--label", "good"),
                                     rec("bad", "--label", "bad", env={"DATA": "nope.txt"}),
                                     rec("many", "--label", "bad", env={"MANY": "1"}),
                                     rec("host", "--host", "h6-node", cmd=("true",))])]
        done = dict(item for f in futs for item in f.result())
    want = {"g1": 0, "g2": 0, "g3": 0, "bad": 1, "many": 0, "host": 0}
    for name, rc in want.items():
        assert done[name].returncode == rc, (name, done[name].returncode, done[name].stderr)
    (base / "g2.stderr").write_text(done["g2"].stderr)
    return base


# --------------------------------------------------------------------------- tracer record


def test_record_host_default_and_given(recs):
    """tracer record --help: "--host NAME  host name to store (default: this host's)"."""
    assert {r["host"] for r in rows(recs / "g3.parquet")} == {HOSTNAME}
    assert {r["host"] for r in rows(recs / "host.parquet")} == {"h6-node"}


def test_record_summary_line_unless_quiet(recs, tmp_path):
    """tracer record --help: "-q, --quiet  no summary line on stderr" -- so without -q there is
    one (and the command's own stderr is the command's)."""
    lines = [ln for ln in (recs / "g2.stderr").read_text().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tracer"), lines
    assert "g2.parquet" in lines[0]  # it names what it wrote
    quiet = run(TRACER, "record", "-q", "-o", tmp_path / "q.parquet", "--", "true", check_rc=0)
    assert quiet.stderr == ""
    assert rows(tmp_path / "q.parquet")


def test_record_killed_by_signal_is_128_plus_n(recs, tmp_path):
    """tracer record --help: "The exit status is the command's (128+N when killed by signal N)"."""
    cp = run(TRACER, "record", "-q", "-o", tmp_path / "k.parquet", "--", "sh", "-c", "kill -USR1 $$")
    assert cp.returncode == 128 + 10, (cp.returncode, cp.stderr)
    assert (tmp_path / "k.parquet").is_file()


@pytest.mark.parametrize("case", ["interpreter-missing", "not-a-program"])
def test_record_127_126_forms(recs, tmp_path, case):
    """tracer record --help: "127 when the command is not found (or the interpreter its #! line
    names is not), 126 when it is found but cannot run (a directory, no execute permission, not a
    program)". (Not found and a directory are checked by test_docs_contract.py.)"""
    prog = tmp_path / "prog"
    if case == "interpreter-missing":
        prog.write_text("#!/nonexistent/h6-interp\necho hi\n")
        want = 127
    else:
        prog.write_bytes(bytes(range(1, 64)) * 4)  # executable bit, no ELF header, no #! line
        want = 126
    prog.chmod(0o755)
    cp = run(TRACER, "record", "-q", "-o", tmp_path / "x.parquet", "--", prog)
    assert cp.returncode == want, (cp.returncode, cp.stderr)
    assert "prog" in one_line_error(cp)  # README: one line naming the file


def _sleepers(marker: str) -> list[int]:
    """Pids of the `sleep MARKER` processes this module started (MARKER is unique to the run)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(int(proc.name))
    return found


def _kill_left(marker: str) -> None:
    """End the sleeper a `-d` recording left running (it stops recording, not the command)."""
    for pid in _sleepers(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)


def _sleep_recording(tmp_path: Path, duration: str) -> tuple[int, float, bool, Path, str]:
    """`tracer record -q -d DURATION -- sleep 47.N`: its status, how long it took, whether the
    sleeper was still running when it returned, the trace and the log."""
    marker = f"47.{os.getpid() % 1000}{len(duration)}"
    out = tmp_path / f"d-{duration}.parquet"
    log = tmp_path / f"log-{duration}"
    t0 = time.monotonic()
    try:
        # output to a file, not a pipe: the sleeper left running holds what it inherited open
        with log.open("w") as sink:
            rc = subprocess.run([TRACER, "record", "-q", "-d", duration, "-o", str(out), "--", "sleep", marker],
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, timeout=120).returncode
        took = time.monotonic() - t0
        alive = bool(_sleepers(marker))
    finally:
        _kill_left(marker)
    return rc, took, alive, out, log.read_text()


def test_record_duration_small_units(recs, tmp_path):
    """tracer record --help: "-d DURATION (10, 10s, 500ms, 2m, 1h, 1d; units ns, us, ms, s, m, h,
    d) with a command stops recording, not the command ...: the command keeps running,
    exit_status is null, and the exit status is 0" -- 0.7 s in nanoseconds and in microseconds."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = dict(zip(("ns", "us"), pool.map(lambda d: _sleep_recording(tmp_path, d), ["700000000ns", "700000us"]), strict=True))
    for unit, (rc, took, alive, out, log) in got.items():
        assert rc == 0, (unit, log)
        assert took < 40, (unit, took)  # far from the sleeper's 47 s: recording stopped at -d
        assert alive, (unit, "the command keeps running")
        assert {r["exit_status"] for r in rows(out)} == {None}, unit


def test_record_duration_large_units_bound_the_linger(recs, tmp_path):
    """tracer record --help: "-d DURATION ... units ... m, h, d ... It bounds the linger too (then
    the exit status is the command's)" -- a command ending well before -d keeps its status."""
    def one(duration):
        out = tmp_path / f"d-{duration}.parquet"
        cp = run(TRACER, "record", "-q", "-d", duration, "-o", out, "--", "sh", "-c", "exit 3")
        return cp.returncode, cp.stderr, {r["exit_status"] for r in rows(out)} if out.exists() else None

    with ThreadPoolExecutor(max_workers=3) as pool:
        got = dict(zip(("2m", "1h", "1d"), pool.map(one, ["2m", "1h", "1d"]), strict=True))
    assert got == {d: (3, "", {3}) for d in ("2m", "1h", "1d")}, got


# --------------------------------------------------------------------------- tracer run / probes

SNAP = re.compile(r"^snap-(\d{8}T\d{6}(?:\.\d+)?Z)-(\d+)$")


def _snap_time(name: str) -> dt.datetime:
    stamp = SNAP.match(name).group(1)
    fmt = "%Y%m%dT%H%M%S.%fZ" if "." in stamp else "%Y%m%dT%H%M%SZ"
    return dt.datetime.strptime(stamp, fmt).replace(tzinfo=dt.UTC)


# fails the same openat every 20 ms until STOP exists (one failure signature, many failures)
FAILER = """
import os, sys, time
stop = sys.argv[1]
while not os.path.exists(stop):
    try:
        open("/nonexistent/h6-missing")
    except OSError:
        pass
    time.sleep(0.02)
"""


def _snaps(spool: Path, host: str) -> list[Path]:
    return sorted(p for p in (spool / host).glob("snap-*") if p.is_dir() and SNAP.match(p.name))


def _wait_for(what, timeout=150.0):
    """Poll until what() is true (readiness, not a sleep standing in for it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what.__doc__ or what}")


def _trees_and_failures(snap: Path) -> tuple[int, int]:
    """Failure call trees of the openat signature in one snapshot, and the failures counted."""
    ev = rows(snap / "events.parquet") if (snap / "events.parquet").exists() else []
    trees = {r["trace_id"] for r in ev if r["probe"] == "openat" and r["errno"] == "ENOENT" and r["kind"] == "failure"}
    cn = rows(snap / "counters.parquet") if (snap / "counters.parquet").exists() else []
    failures = sum(e["count"] for r in cn if r["probe"] == "openat" for e in (r["errno_counts"] or [])
                   if e["errno"] == "ENOENT")
    return len(trees), failures


def _gaps(snaps: list[Path]) -> list[float]:
    """Seconds between consecutive snapshots, the final one (written at stop) left out."""
    times = [_snap_time(s.name) for s in snaps[:-1]]
    return [(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)]


def test_run_pid_exit_stops_with_0_default_host_examples_and_interval(bpf_ok, tmp_path):
    """tracer run --help: "exit status: 0 stopped (-d elapsed, the -p process exited, ...)";
    "--host HOST  host name in records and spool (default: this host's name)"; "Snapshots:
    <spool>/<host>/snap-<UTC time>-<seq>/{events,counters}.parquet"; "-i INTERVAL  snapshot
    interval, 100ms to 1h"; "--examples K  full call trees per failure signature per interval;
    the rest are counted (default 4)"."""
    spool, stop = tmp_path / "spool", tmp_path / "stop"
    target = subprocess.Popen([PY, "-c", FAILER, str(stop)])
    before = dt.datetime.now(dt.UTC)
    log = (tmp_path / "log").open("w")
    try:
        daemon = subprocess.Popen([TRACER, "run", "syscalls", "-p", str(target.pid), "-x", "-i", "500ms",
                                   "--spool", str(spool)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            def four_snapshots():
                """four snapshots in the spool"""
                return daemon.poll() is not None or (spool / HOSTNAME).is_dir() and len(_snaps(spool, HOSTNAME)) >= 4
            _wait_for(four_snapshots)
            stop.touch()  # the -p process exits now
            target.wait(timeout=60)
            rc = daemon.wait(timeout=120)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
    finally:
        stop.touch()
        target.wait(timeout=60)
        log.close()
    after = dt.datetime.now(dt.UTC)
    assert rc == 0, (tmp_path / "log").read_text()
    assert [p.name for p in spool.iterdir() if p.is_dir()] == [HOSTNAME]
    snaps = _snaps(spool, HOSTNAME)
    assert sorted(p.name for p in (spool / HOSTNAME).iterdir() if p.is_dir()) == [s.name for s in snaps]
    for snap in snaps:
        when = _snap_time(snap.name)
        assert before - dt.timedelta(seconds=2) <= when <= after + dt.timedelta(seconds=2), (snap.name, before, after)
        assert {p.name for p in snap.iterdir()} <= {"events.parquet", "counters.parquet"}
    seqs = [int(SNAP.match(s.name).group(2)) for s in snaps]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    gaps = _gaps(snaps)
    assert gaps and all(abs(g - 0.5) < 0.2 for g in gaps), gaps
    per = [_trees_and_failures(s) for s in snaps]
    assert all(trees == min(4, failures) for trees, failures in per), per
    assert any(failures > 4 for _, failures in per), per  # the cap was reached: the rest counted


def test_run_default_interval_host_given_examples_and_sigterm(bpf_ok, tmp_path):
    """tracer run --help: "-i INTERVAL  snapshot interval, 100ms to 1h (default 5s)"; "--host HOST
    host name in records and spool"; "--examples K ... the rest are counted"; "SIGTERM/SIGINT
    write a final snapshot and detach"; exit status "0 stopped (... SIGTERM/SIGINT/SIGHUP after
    the final snapshot)"."""
    spool, stop = tmp_path / "spool", tmp_path / "stop"
    target = subprocess.Popen([PY, "-c", FAILER, str(stop)])
    log = (tmp_path / "log").open("w")
    try:
        daemon = subprocess.Popen([TRACER, "run", "syscalls", "--host", "h6-box", "-p", str(target.pid), "-x",
                                   "--examples", "2", "--spool", str(spool)],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            def three_snapshots():
                """three snapshots in the spool"""
                return daemon.poll() is not None or (spool / "h6-box").is_dir() and len(_snaps(spool, "h6-box")) >= 3
            _wait_for(three_snapshots)
            written = len(_snaps(spool, "h6-box"))
            daemon.send_signal(signal.SIGTERM)
            rc = daemon.wait(timeout=120)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
    finally:
        stop.touch()
        target.wait(timeout=60)
        log.close()
    assert rc == 0, (tmp_path / "log").read_text()
    assert [p.name for p in spool.iterdir() if p.is_dir()] == ["h6-box"]
    snaps = _snaps(spool, "h6-box")
    assert len(snaps) == written + 1, (written, [s.name for s in snaps])  # the final snapshot
    gaps = _gaps(snaps)
    assert gaps and all(abs(g - 5.0) < 0.3 for g in gaps), gaps
    assert {r["host"] for s in snaps for f in s.glob("*.parquet") for r in rows(f)} == {"h6-box"}
    per = [_trees_and_failures(s) for s in snaps]
    assert all(trees == min(2, failures) for trees, failures in per), per
    assert any(failures > 2 for _, failures in per), per


def test_probes_check_default_is_every_shipped_set():
    """tracer probes check --help: "SET  probe set names or YAML paths (default: all shipped
    sets)"; tracer run --help: "A probe set is a name under bpf/probes/"."""
    from tracer import resources

    shipped = sorted(p.stem for p in (Path(resources.BPF_DIR) / "probes").glob("*.yaml"))
    dflt = run(TRACER, "probes", "check", "--json")
    named = run(TRACER, "probes", "check", *shipped, "--json")
    assert dflt.returncode in (0, 1) and dflt.returncode == named.returncode
    assert sorted(s["set"] for s in json.loads(dflt.stdout)) == shipped
    assert json.loads(dflt.stdout) == json.loads(named.stdout)


# --------------------------------------------------------------------------- baseline diff


def _diff(recs, bad, *extra, rc=1):
    return run(BASELINE, "diff", recs / "g1.parquet", recs / "g2.parquet", recs / f"{bad}.parquet", *extra,
               cwd=recs, check_rc=rc).stdout


def _timeless(text: str) -> dict:
    """The diff's JSON without its run time (settings.elapsed_s differs from run to run)."""
    d = json.loads(text)
    d["settings"].pop("elapsed_s", None)
    return d


def test_diff_context_default_3(recs):
    """baseline diff --help: "--context N  events shown before the divergence and of the good runs
    (default 3)"."""
    dflt, three, one = (_diff(recs, "bad", *x) for x in ([], ["--context", "3"], ["--context", "1"]))
    assert dflt == three and one != dflt
    b = json.loads(_diff(recs, "bad", "--json"))["bifurcation"]
    # the bad run has hundreds of events before its divergence, the good runs hundreds after
    assert len(b["last_common"]) == 3 and len(b["good_instead"]) == 3, b
    b1 = json.loads(_diff(recs, "bad", "--json", "--context", "1"))["bifurcation"]
    assert len(b1["last_common"]) == 1 and len(b1["good_instead"]) == 1, b1


def test_diff_window_default_4(recs):
    """baseline diff --help: "-k K, --window K  window length of the good-behaviour model
    (default 4, at most 1000)"."""
    dflt = _timeless(_diff(recs, "bad", "--json"))
    four = _timeless(_diff(recs, "bad", "--json", "-k", "4"))
    assert dflt == four
    assert dflt["settings"]["k"] == 4
    assert _timeless(_diff(recs, "many", "--json")) == _timeless(_diff(recs, "many", "--json", "-k", "4"))


def test_diff_max_anomalies_default_20(recs):
    """baseline diff --help: "--max-anomalies N  anomalies listed at most (default 20)" -- on a bad
    run with more than 20 anomalies."""
    dflt = _timeless(_diff(recs, "many", "--json"))
    assert dflt["anomaly_count"] > 20, dflt["anomaly_count"]
    assert len(dflt["anomalies"]) == 20
    assert dflt == _timeless(_diff(recs, "many", "--json", "--max-anomalies", "20"))
    assert len(json.loads(_diff(recs, "many", "--json", "--max-anomalies", "25"))["anomalies"]) == 25
    text = _diff(recs, "many")
    assert text == _diff(recs, "many", "--max-anomalies", "20")
    # the text lists the bifurcation (1.) and the later ones ranked 2., 3., ...: 20 in all
    ranked = [int(n) for n in re.findall(r"^  (\d+)\. \[", text, re.M)]
    assert ranked == list(range(2, 21)), ranked
    assert f"ranked, {dflt['anomaly_count'] - 1} in all" in text


def test_diff_allowlist_default_is_the_package_list(recs):
    """baseline diff --help: "--allowlist FILE  curated expected-errors YAML, repeatable (default:
    the package's expected_errors.yaml)"."""
    from tracer import resources

    dflt = _diff(recs, "bad", "--json")
    named = _diff(recs, "bad", "--json", "--allowlist", resources.EXPECTED_ERRORS)
    assert json.loads(dflt)["expected_ignored"] == json.loads(named)["expected_ignored"]
    # each program's loader looks for /etc/ld.so.preload (strace: access(..., R_OK) = -1 ENOENT),
    # which the package's list names: the default list is in use
    assert "curated-enoent-ld-so-preload" in json.dumps(json.loads(dflt)["expected_ignored"])
    assert json.loads(dflt)["bifurcation"] == json.loads(named)["bifurcation"]


# --------------------------------------------------------------------------- allowlist learn


def test_allowlist_min_support_default_0_is_a_fraction(recs, tmp_path):
    """baseline allowlist learn --help: "--min-support F  keep errors seen in at least this
    fraction of good runs (0..1, default 0)"; "Learned entries carry ... support (good runs seen
    / total)". g1 alone probed the missing optional.conf: kept by default (1 of 2), dropped at 1."""
    g = [recs / "g1.parquet", recs / "g2.parquet"]

    def learn(name, *extra):
        out = tmp_path / name
        d = json.loads(run(BASELINE, "allowlist", "learn", *g, "-o", out, "--json", *extra, cwd=tmp_path,
                           check_rc=0).stdout)
        return d, out.read_text()

    dflt, dflt_text = learn("d.yaml")
    zero, _ = learn("z.yaml", "--min-support", "0")
    half, _ = learn("h.yaml", "--min-support", "0.5")
    full, full_text = learn("f.yaml", "--min-support", "1")
    strip = {"output"}
    assert {k: v for k, v in dflt.items() if k not in strip} == {k: v for k, v in zero.items() if k not in strip}
    opt = [e for e in dflt["entries"] if (e.get("path") or "").endswith("/optional.conf")]
    assert len(opt) == 1 and opt[0]["support"] == {"runs": 1, "total": 2}, opt
    assert "optional.conf" in dflt_text and "optional.conf" not in full_text
    assert any((e.get("path") or "").endswith("/optional.conf") for e in half["entries"])
    assert full["entries"] and all(e["support"]["runs"] == e["support"]["total"] == 2 for e in full["entries"])


def test_allowlist_relearn_marks_vanished_entries_stale_keeps_comments(recs, tmp_path):
    """baseline allowlist learn --help: "learned entries the good runs no longer show become stale;
    the file's comments and order are kept". Learned from g1+g2 (g1 probed optional.conf), then
    again into the same file from g2+g3 (neither did)."""
    out = tmp_path / "team.learned.yaml"
    run(BASELINE, "allowlist", "learn", recs / "g1.parquet", recs / "g2.parquet", "-o", out, check_rc=0)
    out.write_text("# kept: the team's note\n" + out.read_text())
    before = yaml.safe_load(out.read_text())
    d = json.loads(run(BASELINE, "allowlist", "learn", recs / "g2.parquet", recs / "g3.parquet", "-o", out, "--json",
                       check_rc=0).stdout)
    text = out.read_text()
    after = yaml.safe_load(text)
    assert text.startswith("# kept: the team's note\n")

    def entries(doc):
        return doc["entries"] if isinstance(doc, dict) else doc

    ids_before = [e["id"] for e in entries(before)]
    ids_after = [e["id"] for e in entries(after)]
    assert ids_after[:len(ids_before)] == ids_before  # order kept (new entries, if any, after)
    opt = [e for e in entries(after) if str(e.get("path", "")).endswith("/optional.conf")]
    assert len(opt) == 1 and opt[0]["status"] == "stale", opt
    assert d["stale"] >= 1
    assert all(e["status"] == "active" for e in entries(after) if e["support"]["runs"] == 2
               and e["support"]["total"] == 2 and e not in opt)


# --------------------------------------------------------------------------- export


def _events(text: str) -> list[dict]:
    return json.loads(text)["traceEvents"]


def _by_pid(events: list[dict]) -> dict[int, int]:
    """Track id -> the recorded process id its process_name names ("HOST pid N (comm)")."""
    out = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            m = re.search(r"pid (\d+)", e["args"]["name"])
            if m:
                out[e["pid"]] = int(m.group(1))
    return out


def _syscalls(events: list[dict]) -> list[tuple]:
    return sorted((e["name"], e.get("dur")) for e in events if e.get("ph") == "X")


def test_export_output_default_is_stdout(recs, tmp_path):
    """baseline export --help: "-o FILE, --output FILE  output JSON file (default: stdout, also
    `-o -`)"."""
    dflt = run(BASELINE, "export", recs / "g3.parquet", cwd=tmp_path, check_rc=0)
    dash = run(BASELINE, "export", recs / "g3.parquet", "-o", "-", cwd=tmp_path, check_rc=0)
    run(BASELINE, "export", recs / "g3.parquet", "-o", tmp_path / "f.json", cwd=tmp_path, check_rc=0)
    assert json.loads(dflt.stdout) == json.loads(dash.stdout) == json.loads((tmp_path / "f.json").read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]  # no file written by default
    assert _syscalls(_events(dflt.stdout))


def test_export_align_default_wall_clock(recs):
    """baseline export --help: "--align {wall,start}  place traces at their wall-clock start
    (default) or all at 0". g2 was recorded after g1 ended: on the wall clock its events come
    later by the time between the two starts; with --align start both begin at 0."""
    g1, g2 = recs / "g1.parquet", recs / "g2.parquet"
    starts = {n: rows(recs / f"{n}.parquet")[0]["start_time"] for n in ("g1", "g2")}
    pids = {n: {r["pid"] for r in rows(recs / f"{n}.parquet")} for n in ("g1", "g2")}
    gap_us = (starts["g2"] - starts["g1"]).total_seconds() * 1e6
    assert gap_us > 300_000, gap_us

    def firsts(argv):
        ev = _events(run(BASELINE, "export", g1, g2, *argv, check_rc=0).stdout)
        track = _by_pid(ev)
        out = {}
        for n in ("g1", "g2"):
            out[n] = min(e["ts"] for e in ev if e.get("ph") == "X" and track.get(e["pid"]) in pids[n])
        return ev, out

    dflt_ev, dflt = firsts([])
    wall_ev, _ = firsts(["--align", "wall"])
    _, start = firsts(["--align", "start"])
    assert dflt_ev == wall_ev
    assert abs((dflt["g2"] - dflt["g1"]) - gap_us) < 250_000, (dflt, gap_us)
    assert abs(start["g2"] - start["g1"]) < 250_000, start


def test_export_kind_and_host_select_traces(recs, tmp_path):
    """baseline export --help: "--host HOST  only this host (repeatable)"; "--kind
    {good,failure,full}  only traces of this kind (repeatable)"; "TRACE  events Parquet files or
    directories". Selecting from a directory gives what exporting that one recording gives."""
    d = tmp_path / "all"
    d.mkdir()
    for n in ("g1", "bad", "host"):
        shutil.copy(recs / f"{n}.parquet", d / f"{n}.parquet")

    def syscalls(*argv):
        return _syscalls(_events(run(BASELINE, "export", *argv, check_rc=0).stdout))

    assert syscalls(d, "--kind", "failure") == syscalls(recs / "bad.parquet")
    assert syscalls(d, "--kind", "full") == syscalls(recs / "host.parquet")
    assert syscalls(d, "--host", "h6-node") == syscalls(recs / "host.parquet")
    both = syscalls(d, "--kind", "failure", "--kind", "good")
    assert both == sorted(syscalls(recs / "bad.parquet") + syscalls(recs / "g1.parquet"))


# --------------------------------------------------------------------------- baseline simulate


@pytest.fixture(scope="module")
def sim_default(tmp_path_factory) -> Path:
    """`baseline simulate --hours 1 -o DIR`: every other option at its default."""
    out = tmp_path_factory.mktemp("simdef") / "fleet"
    run(BASELINE, "simulate", "--hours", "1", "-o", out, check_rc=0)
    return out


@pytest.mark.parametrize("flag", [["--hosts", "10"], ["--seed", "0"], ["--good-rate", "0.005"],
                                  ["--workers", "1"], ["--scenario", "all"],
                                  ["--start", "2026-11-28T00:00:00Z"]],
                         ids=lambda f: f[0].lstrip("-"))
def test_simulate_default_spelled_out_same_bytes(sim_default, tmp_path, flag):
    """baseline simulate --help: "--hosts HOSTS (default 10 ...)", "--seed SEED (default 0)",
    "--good-rate P ... (default 0.005)", "--workers WORKERS (default 1)", "--scenario NAMES ...
    all (default)", "--start T ... default 2026-11-28T00:00:00Z": spelling the default out
    writes the same fleet, byte for byte."""
    out = tmp_path / "fleet"
    run(BASELINE, "simulate", "--hours", "1", *flag, "-o", out, check_rc=0)
    assert tree_digest(out) == tree_digest(sim_default)


def test_simulate_default_hosts_and_start_in_the_data(sim_default):
    """baseline simulate --help: "--hosts HOSTS  number of hosts (default 10 ...)"; "--start T  UTC
    start time ... default 2026-11-28T00:00:00Z"; layout <out>/<table>/date=/host=/part-*.parquet."""
    hosts = {p.name.split("=", 1)[1] for p in sim_default.glob("counters/date=*/host=*")}
    assert len(hosts) == 10, hosts
    assert {p.name for p in sim_default.glob("counters/date=*")} == {"date=2026-11-28"}
    times = [r["snapshot_time"] for r in parquet_rows(sim_default, "counters")]
    start = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    assert min(times) >= start and min(times) - start <= dt.timedelta(minutes=10), min(times)
    assert max(times) <= start + dt.timedelta(hours=1, minutes=1), max(times)


def test_simulate_hours_default_24(tmp_path):
    """baseline simulate --help: "--hours HOURS  simulated hours (default 24)"."""
    out = tmp_path / "day"
    run(BASELINE, "simulate", "--hosts", "1", "-o", out, check_rc=0)
    times = [r["snapshot_time"] for r in parquet_rows(out, "counters")]
    span = max(times) - min(times)
    assert dt.timedelta(hours=23) <= span <= dt.timedelta(hours=24), span
    assert {p.name for p in out.glob("counters/date=*")} == {"date=2026-11-28"}


def test_simulate_scenario_none_and_one(tmp_path):
    """baseline simulate --help: "--scenario NAMES  comma-separated root causes to inject: all
    (default), none, or dmabuf_peer_fallback, ...": none labels no root cause; one name labels
    that one alone."""
    causes = {}
    for what in ("none", "crash_loop_fw_bad_state"):
        out = tmp_path / what
        run(BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--scenario", what, "-o", out, check_rc=0)
        causes[what] = {r["root_cause"] for r in parquet_rows(out, "truth")} - {None}
    assert causes["none"] == set()
    assert causes["crash_loop_fw_bad_state"] == {"crash_loop_fw_bad_state"}


def test_simulate_events_target_about_n_rows(tmp_path):
    """baseline simulate --help: "--events-target N  raise the good-trace rate until about N event
    rows are written" (and "--good-rate P ... (default 0.005)" otherwise)."""
    counts = {}
    for target in (None, 10_000):
        out = tmp_path / f"t{target}"
        extra = ["--events-target", str(target)] if target else []
        run(BASELINE, "simulate", "--hosts", "4", "--hours", "6", *extra, "-o", out, check_rc=0)
        counts[target] = len(parquet_rows(out, "events"))
    assert counts[None] < 5_000, counts  # the default rate writes far fewer
    assert 8_500 <= counts[10_000] <= 11_500, counts


def test_simulate_start_now(tmp_path):
    """baseline simulate --help: "--start T  UTC start time: ISO date/time, 'now', or a time ago"."""
    out = tmp_path / "now"
    before = dt.datetime.now(dt.UTC)
    run(BASELINE, "simulate", "--hosts", "1", "--hours", "0.5", "--start", "now", "-o", out, check_rc=0)
    first = min(r["snapshot_time"] for r in parquet_rows(out, "counters"))
    assert before - dt.timedelta(minutes=2) <= first <= before + dt.timedelta(minutes=10), (before, first)


# --------------------------------------------------------------------------- evaluate / audit / coverage


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("small") / "fleet"
    run(BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "6", "-o", out, check_rc=0)
    return out


def test_evaluate_findings_default_audit_else_findings(small_fleet, tmp_path):
    """baseline evaluate --help: "--findings DIR ... default DATASET/audit (where `baseline audit
    DATASET` writes), else DATASET/findings"."""
    ds = tmp_path / "fleet"
    shutil.copytree(small_fleet, ds)
    run(BASELINE, "audit", ds, "--since", "2026-11-28T00:30:00Z", "-o", ds / "findings", check_rc=0)
    assert not (ds / "audit").exists()
    dflt = json.loads(run(BASELINE, "evaluate", ds, "--json", check_rc=0).stdout)
    named = json.loads(run(BASELINE, "evaluate", ds, "--findings", ds / "findings", "--json", check_rc=0).stdout)
    assert dflt == named
    run(BASELINE, "audit", ds, check_rc=0)  # now DATASET/audit exists: it wins
    assert (ds / "audit").is_dir()
    dflt = json.loads(run(BASELINE, "evaluate", ds, "--json", check_rc=0).stdout)
    named = json.loads(run(BASELINE, "evaluate", ds, "--findings", ds / "audit", "--json", check_rc=0).stdout)
    assert dflt == named


def test_audit_model_and_refit_are_exclusive(small_fleet, tmp_path):
    """baseline audit --help: usage "[--model M | --refit]" (one or the other); exit status "2
    trouble (bad input or usage ...: one line on stderr naming the file or flag)"."""
    cp = run(BASELINE, "audit", small_fleet, "--model", tmp_path / "m.parquet", "--refit", "-o",
             tmp_path / "out", check_rc=2)
    line = one_line_error(cp)
    assert "--refit" in line or "--model" in line, line
    assert not (tmp_path / "out").exists()


def test_coverage_week_default_newest_and_a_date_in_it(tmp_path):
    """baseline coverage --help: "--week WEEK  ISO week (2026-W48) or a date in it (default: newest
    data)"; "-o DIR (default: DATASET/reports)". 50 hours from Saturday 2026-11-28 00:00 UTC end
    on Monday 2026-11-30 02:00, in ISO week 2026-W49."""
    ds = tmp_path / "fleet"
    run(BASELINE, "simulate", "--hosts", "2", "--hours", "50", "-o", ds, check_rc=0)
    dflt = json.loads(run(BASELINE, "coverage", ds, "--json", check_rc=0).stdout)
    assert dflt["week"] == "2026-W49", dflt["week"]
    assert (ds / "reports" / "2026-W49").is_dir()
    by_date = json.loads(run(BASELINE, "coverage", ds, "--week", "2026-12-03", "-o", tmp_path / "r2", "--json",
                             check_rc=0).stdout)
    assert by_date["week"] == "2026-W49"
    strip = {"files"}
    assert {k: v for k, v in by_date.items() if k not in strip} == {k: v for k, v in dflt.items() if k not in strip}
    older = json.loads(run(BASELINE, "coverage", ds, "--week", "2026-11-28", "-o", tmp_path / "r3", "--json",
                           check_rc=0).stdout)
    assert older["week"] == "2026-W48"


# --------------------------------------------------------------------------- suggest-probes


def test_suggest_probes_btf_default(tmp_path):
    """baseline suggest-probes --help: "--btf FILE  BTF blob or directory (default /sys/kernel/btf)"."""
    if not Path("/sys/kernel/btf/vmlinux").exists():
        pytest.skip("this kernel exposes no BTF at /sys/kernel/btf")
    dflt = run(BASELINE, "suggest-probes", "--all", check_rc=0).stdout
    named = run(BASELINE, "suggest-probes", "--all", "--btf", "/sys/kernel/btf", check_rc=0).stdout
    assert dflt == named and dflt.strip()
