"""Blind robustness battery, round forty-five: concurrency and interruption.

Two processes at once on the same outputs, readers beside a writer, and writers stopped by
kill -9, SIGTERM or SIGINT at several points followed by a rerun.  Promises come only from
README.md, docs/*.md and each command's --help:

* README "Exit status": "130 Ctrl-C, 143 SIGTERM ... (these unwind like Ctrl-C: a writer removes
  its temporary, no half output ...)"; never a traceback.
* docs/architecture.md: "Writes go through `schema.write_table` (Parquet) and `tracer/atomic.py`
  (everything else): temp file in the same directory, fsync, rename."; "Only a kill -9 leaves a
  temporary (hidden, skipped by every scan)"; "Outputs of many files (a new simulated dataset,
  ...) are written into a hidden sibling directory renamed into place at the end
  (`atomic.staged_dir`), so a full disk or a kill -9 leaves no partial tree under the final name
  (two runs of one output: the last to finish wins ...)".
* docs/architecture.md, `baseline audit --out DIR`: "a reader never sees findings of one run
  beside clusters of another"; "two audits into one directory prune each other's finished sets
  but never one being written, and a writer superseded before its end removes its own set after
  releasing the lock, so once both end one set is left".
* docs/airflow.md: "Ingest, compaction and retention hold an exclusive `flock` on
  `<dataset>/.tracebase.lock`; `refresh_baseline`, `refresh_expected`, the audit and the coverage
  report hold it shared. So the audit never fits a model on, or audits, an interval that ingest
  is still writing (it waits for the run to commit)"; "Ingest is idempotent ... rerunning an
  interval (or a run that died before cleaning the spool) adds no duplicate rows"; "ingest
  removes the hidden temporaries (`.part-*.tmp`, ...) a killed run left, at start, under the lock".
* README, `baseline export`: "a dataset's events are read under its shared lock, as by `audit`".
* README, `baseline allowlist learn`: "runs into one list at once merge in turn".
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
if not (BIN / "baseline").exists():  # an installed checkout elsewhere: the interpreter's own bin
    BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
RECS = REPO / "tests" / "recordings"
SQLITE = [str(RECS / "sqlite_rw_fallback" / f"good{i}.parquet") for i in (0, 1)]
REHASH = [str(RECS / "c_rehash_readonly" / f"good{i}.parquet") for i in (0, 1)]
TIMEOUT = 180
SIM = ["--hosts", "20", "--hours", "2", "--seed", "5"]


# --------------------------------------------------------------------------- helpers


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTHONWARNINGS", "PYTHONPATH", "PYTEST_CURRENT_TEST", "LC_ALL"):
        env.pop(key, None)
    env["LANG"] = "C.UTF-8"
    return env


def start(argv: list[str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"{proc.args} still running after {TIMEOUT} s") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"))


def run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return finish(start(argv, cwd))


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, (proc.args, proc.returncode, proc.stderr[-3000:])
    return proc


def timed(argv: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = ok(run(argv))
    return proc, time.monotonic() - t0


def kill_after(argv: list[str], delay: float, sig: int = signal.SIGKILL) -> subprocess.CompletedProcess:
    """Start argv and send `sig` after `delay` seconds (if it is still running)."""
    proc = start(argv)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    return finish(proc)


def visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def tree_bytes(root: Path) -> dict[str, bytes]:
    """The files a reader sees under root (hidden names are other writers' own)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and visible(p, root)}


def temporaries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(".tmp"))


def rows(ds: Path, table: str) -> list[str]:
    """Every row a reader of the visible Parquet files gets, partition values restored, sorted.
    A file that does not read is a half file taken for data: that fails here."""
    out = []
    base = ds / table
    for f in sorted(base.rglob("*.parquet")) if base.exists() else []:
        if not visible(f, ds) or any(p.startswith("_") for p in f.relative_to(ds).parts):
            continue
        try:
            tab = pq.read_table(f)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            raise AssertionError(f"a reader meets an unreadable file {f}: {exc}") from None
        keys = dict(p.split("=", 1) for p in f.relative_to(base).parts[:-1] if "=" in p)
        for row in tab.to_pylist():
            for key, value in keys.items():
                row.setdefault(key, value)
            out.append(json.dumps(row, sort_keys=True, default=str))
    return sorted(out)


def dataset_rows(ds: Path) -> dict[str, list[str]]:
    return {t: rows(ds, t) for t in ("events", "counters")}


def model_content(path: Path):
    """A model file's rows (sorted) and its metadata without the save time."""
    tab = pq.read_table(path)
    meta = dict(tab.schema.metadata or {})
    model = json.loads(meta.pop(b"tracebase.model"))
    model.pop("saved_at", None)
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in tab.to_pylist()), meta, model


def audit_summary(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines()
            if not line.startswith(("wrote ", "baseline model:"))]


def exclusively_locked(lock: Path) -> bool:
    """True while another process holds the dataset lock exclusively (docs/airflow.md)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def snapshots(spool: Path) -> list[Path]:
    return sorted(p for p in spool.glob("*/snap-*") if p.is_dir())


# --------------------------------------------------------------------------- the world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small dataset (learned, audited), a spool of 6 hosts and its clean ingest, the clean
    outputs every interrupted or concurrent run is compared with, and how long each took."""
    root = tmp_path_factory.mktemp("conc45")
    w: dict = {"root": root, "t": {}}
    ok(run([BASELINE, "simulate", "--hosts", "4", "--hours", "1", "--seed", "3", "-o", str(root / "ds")]))
    ok(run([BASELINE, "simulate", "--hosts", "6", "--hours", "1", "--seed", "21", "--spool", "-o",
            str(root / "sp")]))
    w["ds"] = root / "ds"
    w["spool"] = root / "sp" / "spool"
    w["nsnap"] = len(snapshots(w["spool"]))
    assert w["nsnap"] > 100, w["nsnap"]

    # clean ingest of the whole spool (a copy: ingest empties it)
    shutil.copytree(w["spool"], root / "spool-copy")
    _, w["t"]["ingest"] = timed([BASELINE, "ingest", str(root / "spool-copy"), str(root / "full" / "dset")])
    w["full"] = root / "full" / "dset"
    w["full_rows"] = dataset_rows(w["full"])
    assert len(w["full_rows"]["events"]) == 547 and len(w["full_rows"]["counters"]) == 676

    # readers' answers on the fully ingested dataset
    proc = ok(run([BASELINE, "learn", str(w["full"]), "-o", str(root / "full-model.parquet")]))
    w["full_learn"] = proc.stdout.split(" -> ")[0]
    proc = ok(run([BASELINE, "audit", str(w["full"]), "-o", str(root / "full-audit")]))
    w["full_audit"] = audit_summary(proc.stdout)
    proc = ok(run([BASELINE, "export", str(w["full"] / "events"), "-o", str(root / "full.json")]))
    w["full_export"] = json.loads((root / "full.json").read_text())["traceEvents"]

    # the small dataset: model, audit, report
    proc, w["t"]["learn"] = timed([BASELINE, "learn", str(w["ds"]), "-o", str(root / "model.parquet")])
    w["model"] = model_content(root / "model.parquet")
    proc, w["t"]["audit"] = timed([BASELINE, "audit", str(w["ds"]), "-o", str(root / "audit")])
    w["audit"] = tree_bytes(root / "audit")
    assert sorted(w["audit"]) == ["clusters.parquet", "findings.parquet", "host_alerts.parquet"], w["audit"]
    w["audit_stdout"] = audit_summary(proc.stdout)
    w["report"] = ok(run([BASELINE, "report", str(root / "audit")])).stdout
    assert "findings:" in w["report"]

    # a simulated dataset written fresh
    _, w["t"]["simulate"] = timed([BASELINE, "simulate", *SIM, "-o", str(root / "sim")])
    w["sim"] = tree_bytes(root / "sim")
    assert any(k.startswith("events/") for k in w["sim"])

    # allowlists: A then B, B then A (each learned alone first)
    for order, name in (((SQLITE, REHASH), "ab"), ((REHASH, SQLITE), "ba")):
        for goods in order:
            _, w["t"]["allowlist"] = timed([BASELINE, "allowlist", "learn", *goods, "-o", str(root / f"{name}.yaml")])
        w[name] = (root / f"{name}.yaml").read_bytes()
    ok(run([BASELINE, "allowlist", "learn", *SQLITE, "-o", str(root / "a.yaml")]))
    w["a"] = (root / "a.yaml").read_bytes()
    assert w["ab"] != w["ba"] and w["a"] not in (w["ab"], w["ba"])
    return w


def delays(w, name: str, fracs=(0.15, 0.45, 0.75)) -> list[float]:
    return [w["t"][name] * f for f in fracs]


# --------------------------------------------------------------------------- audit


def test_two_audits_into_one_directory_with_a_reader(world, tmp_path):
    """docs/architecture.md: "two audits into one directory prune each other's finished sets but
    never one being written, and a writer superseded before its end removes its own set after
    releasing the lock, so once both end one set is left"; "a reader never sees findings of one
    run beside clusters of another"."""
    out = tmp_path / "audit"
    ok(run([BASELINE, "audit", str(world["ds"]), "-o", str(out)]))
    argv = [BASELINE, "audit", str(world["ds"]), "-o", str(out)]
    for _round in range(2):
        writers = [start(argv), start(argv)]
        reports = []
        while any(p.poll() is None for p in writers):
            reports.append(run([BASELINE, "report", str(out)]))
        for proc in map(finish, writers):
            ok(proc)
            assert audit_summary(proc.stdout) == world["audit_stdout"]
        for rep in reports:
            ok(rep)
            assert rep.stdout == world["report"]
        assert tree_bytes(out) == world["audit"]
        sets = [p.name for p in (out / ".sets").iterdir()]
        assert len(sets) == 1, sets


@pytest.mark.parametrize("frac", [0.2, 0.5, 0.8])
def test_audit_killed_then_rerun(world, tmp_path, frac):
    """docs/architecture.md: `baseline audit --out DIR` "writes a whole output set ... and swaps
    the `DIR/.current` symlink ... so a reader never sees findings of one run beside clusters of
    another"; a kill -9 leaves at most hidden temporaries; the rerun writes the clean outputs."""
    out = tmp_path / "audit"
    argv = [BASELINE, "audit", str(world["ds"]), "-o", str(out)]
    kill_after(argv, world["t"]["audit"] * frac)
    left = tree_bytes(out)
    assert left in ({}, world["audit"]), sorted(left)
    if left:
        rep = ok(run([BASELINE, "report", str(out)]))
        assert rep.stdout == world["report"]
    proc = ok(run(argv))
    assert audit_summary(proc.stdout) == world["audit_stdout"]
    assert tree_bytes(out) == world["audit"]
    assert ok(run([BASELINE, "report", str(out)])).stdout == world["report"]


# --------------------------------------------------------------------------- ingest


def test_ingest_while_a_writer_adds_snapshots(world, tmp_path):
    """docs/airflow.md: "Ingest is idempotent ... rerunning an interval ... adds no duplicate
    rows"; `baseline ingest --help`: "Move complete spool snapshots into DATASET". Ingest runs
    again and again while a writer renames new snapshot directories into the spool (as `tracer
    run` does: a hidden temporary renamed in); once the writer stops, one more ingest leaves the
    dataset holding exactly the rows of a clean ingest of the whole spool, the spool empty and
    nothing quarantined."""
    src = tmp_path / "src"
    shutil.copytree(world["spool"], src)
    live = tmp_path / "spool"
    for host in src.iterdir():
        (live / host.name).mkdir(parents=True)
    ds = tmp_path / "data" / "dset"
    order = sorted(snapshots(src), key=lambda p: (p.name.split("-")[1], p.parent.name))
    done = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            for i, snap in enumerate(order):
                tmp = live / snap.parent.name / f".snap-w{i}.tmp"
                os.rename(snap, tmp)
                os.rename(tmp, live / snap.parent.name / snap.name)
                time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    runs = 0
    try:
        while not done.is_set() or runs < 2:
            ok(run([BASELINE, "ingest", str(live), str(ds)]))
            runs += 1
    finally:
        thread.join()
    assert not errors, errors
    ok(run([BASELINE, "ingest", str(live), str(ds)]))
    assert dataset_rows(ds) == world["full_rows"]
    assert snapshots(live) == []
    assert temporaries(ds) == []
    quarantine = tmp_path / "data" / "quarantine"
    assert not quarantine.exists() or not [p for p in quarantine.rglob("*") if p.is_file()]


def test_readers_wait_for_a_running_ingest(world, tmp_path):
    """docs/airflow.md: "the audit never fits a model on, or audits, an interval that ingest is
    still writing (it waits for the run to commit)"; README: `baseline export` "a dataset's events
    are read under its shared lock, as by `audit`". Readers started while ingest holds the
    dataset's exclusive lock answer as on the dataset after the ingest."""
    first, second = tmp_path / "sp1", tmp_path / "sp2"
    hosts = sorted(p.name for p in world["spool"].iterdir())
    for host in hosts[:2]:
        shutil.copytree(world["spool"] / host, first / host)
    for host in hosts[2:]:
        shutil.copytree(world["spool"] / host, second / host)
    ds = tmp_path / "data" / "dset"
    ok(run([BASELINE, "ingest", str(first), str(ds)]))
    ingest = start([BASELINE, "ingest", str(second), str(ds)])
    seen_lock = False
    deadline = time.monotonic() + TIMEOUT
    while ingest.poll() is None and time.monotonic() < deadline:
        if exclusively_locked(ds / ".tracebase.lock"):
            seen_lock = True
            break
        time.sleep(0.002)
    readers = {
        "learn": start([BASELINE, "learn", str(ds), "-o", str(tmp_path / "m.parquet")]),
        "audit": start([BASELINE, "audit", str(ds), "-o", str(tmp_path / "audit")]),
        "export": start([BASELINE, "export", str(ds / "events"), "-o", str(tmp_path / "e.json")]),
    }
    ok(finish(ingest))
    got = {name: ok(finish(p)) for name, p in readers.items()}
    assert got["learn"].stdout.split(" -> ")[0] == world["full_learn"], seen_lock
    assert audit_summary(got["audit"].stdout) == world["full_audit"], seen_lock
    events = json.loads((tmp_path / "e.json").read_text())["traceEvents"]
    assert len(events) == len(world["full_export"]), seen_lock
    assert dataset_rows(ds) == world["full_rows"]


@pytest.mark.parametrize("frac", [0.3, 0.6, 0.85])
def test_ingest_killed_then_rerun(world, tmp_path, frac):
    """docs/airflow.md: "Every write is temp file + rename; ingest removes the hidden temporaries
    (`.part-*.tmp`, ...) a killed run left, at start, under the lock"; "rerunning an interval (or
    a run that died before cleaning the spool) adds no duplicate rows". After the kill every
    visible file reads whole; after the rerun the dataset holds exactly the clean ingest's rows."""
    spool = tmp_path / "spool"
    shutil.copytree(world["spool"], spool)
    ds = tmp_path / "data" / "dset"
    kill_after([BASELINE, "ingest", str(spool), str(ds)], world["t"]["ingest"] * frac)
    half = dataset_rows(ds)  # raises on a half file
    for table, got in half.items():
        extra = Counter(got) - Counter(world["full_rows"][table])
        assert not extra, (table, len(extra), "rows not in the spool's, or twice")
    ok(run([BASELINE, "ingest", str(spool), str(ds)]))
    assert dataset_rows(ds) == world["full_rows"]
    assert snapshots(spool) == []
    assert temporaries(ds) == []


def test_two_ingests_of_one_spool_into_one_dataset(world, tmp_path):
    """docs/airflow.md: "Ingest, compaction and retention hold an exclusive `flock` on
    `<dataset>/.tracebase.lock`"; "Ingest is idempotent". Two at once of one spool into one
    dataset: both succeed and the dataset holds the spool's rows once."""
    spool = tmp_path / "spool"
    shutil.copytree(world["spool"], spool)
    ds = tmp_path / "data" / "dset"
    procs = [start([BASELINE, "ingest", str(spool), str(ds)]) for _ in range(2)]
    for proc in procs:
        ok(finish(proc))
    assert dataset_rows(ds) == world["full_rows"]
    assert snapshots(spool) == []
    assert temporaries(ds) == []


def test_two_keep_spool_ingests_into_two_datasets(world, tmp_path):
    """docs/architecture.md: the spool's lock is "shared for `--keep-spool`; two ingests of one
    spool into two datasets put the same snapshots in both"."""
    spool = tmp_path / "spool"
    shutil.copytree(world["spool"], spool)
    dss = [tmp_path / f"data{i}" / "dset" for i in (1, 2)]
    procs = [start([BASELINE, "ingest", "--keep-spool", str(spool), str(ds)]) for ds in dss]
    for proc in procs:
        ok(finish(proc))
    for ds in dss:
        assert dataset_rows(ds) == world["full_rows"]
    assert len(snapshots(spool)) == world["nsnap"]


# --------------------------------------------------------------------------- simulate


def test_two_simulates_into_one_new_directory(world, tmp_path):
    """docs/architecture.md: outputs of many files are "written into a hidden sibling directory
    renamed into place at the end ... (two runs of one output: the last to finish wins, its tree
    swapped in with `renameat2(RENAME_EXCHANGE)`)". Two runs of one seed at once: both succeed
    and the tree is the clean run's."""
    out = tmp_path / "sim"
    procs = [start([BASELINE, "simulate", *SIM, "-o", str(out)]) for _ in range(2)]
    for proc in procs:
        ok(finish(proc))
    assert tree_bytes(out) == world["sim"]
    assert [p.name for p in tmp_path.iterdir()] == ["sim"]


def test_two_simulates_again_into_an_existing_dataset(world, tmp_path):
    """docs/architecture.md: "a dataset simulated again into an existing one is staged in a hidden
    directory inside it and its files moved into place at the end, under the dataset's lock".
    Two runs of one seed at once into an existing dataset of that seed: both succeed, and the
    tree is the clean run's."""
    out = tmp_path / "sim"
    argv = [BASELINE, "simulate", *SIM, "-o", str(out)]
    ok(run(argv))
    procs = [start(argv) for _ in range(2)]
    for proc in procs:
        ok(finish(proc))
    assert tree_bytes(out) == world["sim"]
    assert temporaries(out) == []


@pytest.mark.parametrize("frac", [0.3, 0.6, 0.9])
def test_simulate_killed_then_rerun(world, tmp_path, frac):
    """docs/architecture.md: "a full disk or a kill -9 leaves no partial tree under the final
    name"; the rerun writes the clean tree."""
    out = tmp_path / "sim"
    argv = [BASELINE, "simulate", *SIM, "-o", str(out)]
    kill_after(argv, world["t"]["simulate"] * frac)
    left = tree_bytes(out)
    assert left in ({}, world["sim"]), sorted(left)[:10]
    ok(run(argv))
    assert tree_bytes(out) == world["sim"]


# --------------------------------------------------------------------------- learn, allowlist


def test_two_learns_into_one_model(world, tmp_path):
    """docs/architecture.md: Parquet writes are "temp file in the same directory, fsync, rename".
    Three learns into one model file at once: all succeed, and the file is one whole model."""
    model = tmp_path / "model.parquet"
    procs = [start([BASELINE, "learn", str(world["ds"]), "-o", str(model)]) for _ in range(3)]
    for proc in procs:
        ok(finish(proc))
    assert model_content(model) == world["model"]
    assert [p.name for p in tmp_path.iterdir()] == ["model.parquet"]


@pytest.mark.parametrize("frac", [0.3, 0.6, 0.9])
def test_learn_killed_then_rerun(world, tmp_path, frac):
    """docs/architecture.md: "Writes go through `schema.write_table` (Parquet) ...: temp file in
    the same directory, fsync, rename." A kill -9 leaves no model file or a whole one; the rerun
    writes the clean model."""
    model = tmp_path / "model.parquet"
    argv = [BASELINE, "learn", str(world["ds"]), "-o", str(model)]
    kill_after(argv, world["t"]["learn"] * frac)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] in ([], ["model.parquet"])
    if model.exists():
        assert model_content(model) == world["model"]
    ok(run(argv))
    assert model_content(model) == world["model"]


@pytest.mark.parametrize("attempt", range(3))
def test_two_allowlist_learns_merge_in_turn(world, tmp_path, attempt):  # noqa: ARG001
    """README, `baseline allowlist learn`: "runs into one list at once merge in turn". Two runs
    learning different programs' errors into one new list at once leave what one run after the
    other leaves (either order), never one run's entries alone."""
    out = tmp_path / "list.yaml"
    procs = [start([BASELINE, "allowlist", "learn", *goods, "-o", str(out)]) for goods in (SQLITE, REHASH)]
    for proc in procs:
        ok(finish(proc))
    got = out.read_bytes()
    assert got in (world["ab"], world["ba"]), f"{got.count(b'- id:')} entries; merged would be 99"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["list.yaml"]


@pytest.mark.parametrize("frac", [0.3, 0.6, 0.9])
def test_allowlist_killed_then_rerun(world, tmp_path, frac):
    """docs/architecture.md: "(everything else): temp file in the same directory, fsync, rename."
    A kill -9 of a merge into an existing list leaves the old list or the new one, whole; a rerun
    after an old list leaves the merged list."""
    out = tmp_path / "list.yaml"
    out.write_bytes(world["a"])
    argv = [BASELINE, "allowlist", "learn", *REHASH, "-o", str(out)]
    kill_after(argv, world["t"]["allowlist"] * frac)
    left = out.read_bytes()
    assert left in (world["a"], world["ab"]), left[:300]
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["list.yaml"]
    if left == world["a"]:
        ok(run(argv))
        assert out.read_bytes() == world["ab"]


# --------------------------------------------------------------------------- SIGTERM / SIGINT

SIGNALS = [pytest.param(signal.SIGTERM, 143, id="TERM"), pytest.param(signal.SIGINT, 130, id="INT")]


def _stopped(proc: subprocess.CompletedProcess, code: int) -> bool:
    """Exit 128+signal (or 0 when it had finished); never a traceback. True when stopped.
    Killed by the signal itself (a SIGTERM landing while the interpreter starts, before any
    handler exists) is what a shell also reports as 128+signal: accepted as stopped."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (code, 128 - code, 0), (proc.returncode, proc.stderr[-2000:])
    return proc.returncode != 0


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
@pytest.mark.parametrize("name", ["simulate", "learn", "audit", "allowlist"])
def test_signal_leaves_no_output_and_no_temporary(world, tmp_path, name, sig, code):
    """README: "130 Ctrl-C, 143 SIGTERM ... (these unwind like Ctrl-C: a writer removes its
    temporary, no half output ...)"; docs/architecture.md: "directories a failed audit created are
    removed again when empty". A new output stopped half-way: nothing at all is left (no output,
    no temporary) and the rerun writes the clean output."""
    work = tmp_path / "work"
    work.mkdir()
    argv, check = {
        "simulate": ([BASELINE, "simulate", *SIM, "-o", str(work / "sim")],
                     lambda: tree_bytes(work / "sim") == world["sim"]),
        "learn": ([BASELINE, "learn", str(world["ds"]), "-o", str(work / "m.parquet")],
                  lambda: model_content(work / "m.parquet") == world["model"]),
        "audit": ([BASELINE, "audit", str(world["ds"]), "-o", str(work / "audit")],
                  lambda: tree_bytes(work / "audit") == world["audit"]),
        "allowlist": ([BASELINE, "allowlist", "learn", *SQLITE, "-o", str(work / "a.yaml")],
                      lambda: (work / "a.yaml").read_bytes() == world["a"]),
    }[name]
    proc = kill_after(argv, world["t"][name] * 0.5, sig)
    left = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    if _stopped(proc, code) and left:
        # the stop landed after the output was renamed into place (under load the half-way
        # point can be the end): the whole clean output, nothing beside it
        assert not any(part.startswith(".") for x in left for part in Path(x).parts), left
        assert check(), left
    elif not _stopped(proc, code):
        assert check()
    ok(run(argv))
    assert check()


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_signal_to_ingest_then_rerun(world, tmp_path, sig, code):
    """`baseline ingest --help`: "130 interrupted (Ctrl-C), 143 SIGTERM"; README: "a writer
    removes its temporary, no half output"; docs/architecture.md: a failed ingest removes the
    partition directories it made, "whole files it renamed in stay". After the stop every visible
    file reads, no temporary is left, and the rerun leaves exactly the clean ingest's rows."""
    spool = tmp_path / "spool"
    shutil.copytree(world["spool"], spool)
    ds = tmp_path / "data" / "dset"
    proc = kill_after([BASELINE, "ingest", str(spool), str(ds)], world["t"]["ingest"] * 0.5, sig)
    _stopped(proc, code)
    dataset_rows(ds)  # raises on a half file
    if ds.exists():
        assert temporaries(ds) == []
    ok(run([BASELINE, "ingest", str(spool), str(ds)]))
    assert dataset_rows(ds) == world["full_rows"]
    assert snapshots(spool) == []
