"""Blind robustness battery (thirty-first): the fleet pipeline under kills, races, odd layouts,
odd host names, other users, swapped models and odd clocks.

Built from README.md, docs/architecture.md, each command's --help and tracer/schema.py only.
Every case runs the real CLIs (`baseline simulate/ingest/learn/audit/coverage`, `tracer run`)
on a small simulated fleet (3 hosts, 1 hour) and asserts exact outcomes: exit status, the one
line on stderr, row counts, findings, the state of the files a reader would take for data.

Each test builds what it needs (a module fixture caches the simulated spool and the clean
pipeline's results; no test relies on another having run). Scratch lives under pytest's
tmp_path; children that are signalled get explicit signal dispositions (the suite may run
under nohup, with SIGINT/SIGHUP ignored).

Its four strict xfails were fixed in the same round: a host partition under a directory not
named date=... (now refused naming it), a 253-character host name that stopped every ingest
(host names are at most 250 characters: "host=<name>" is one file name), the week of 1678-01-02
(a week holding a day of the range is covered), `learn -o` into an audit's output set (refused).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
BASELINE = str(VENV_BIN / "baseline") if (VENV_BIN / "baseline").exists() else str(REPO / ".venv/bin/baseline")
TRACER = str(VENV_BIN / "tracer") if (VENV_BIN / "tracer").exists() else str(REPO / ".venv/bin/tracer")
NOBODY = 65534
SIM_START = "2026-11-28T00:00:00Z"
DATE = "2026-11-28"


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def _default_signals() -> None:
    """In the child: the stop signals at their defaults whatever the test runner ignores."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("POLARS_MAX_THREADS", None)
    env.update({"LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra)
    return env


def run(*args: str, cwd: Path | None = None, user: int | None = None, umask: int | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    argv = list(args)
    if user is not None:
        tools_run_as_nobody()
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]

    def pre() -> None:
        _default_signals()
        if umask is not None:
            os.umask(umask)

    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout,
                          preexec_fn=pre)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def one_line_error(proc: subprocess.CompletedProcess, *names: str) -> str:
    """Exit 2, one line on stderr naming each of `names`, no traceback."""
    assert proc.returncode == 2, f"exit {proc.returncode}\nstdout: {proc.stdout[-1500:]}\nstderr: {proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def js(proc: subprocess.CompletedProcess) -> dict:
    ok(proc)
    return json.loads(proc.stdout)


def copytree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(list(args), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)


def stop_at(proc: subprocess.Popen, delay: float, sig: int) -> tuple[int, str]:
    """Send `sig` after `delay` seconds (if still running); the exit status and stderr."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    if proc.poll() is None:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def visible_files(root: Path):
    """Every file a reader walks into: dot-named directories skipped (readers skip them),
    symlinks followed (the audit's table links go through .current)."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                yield Path(dirpath) / name


def assert_nothing_half_written(root: Path) -> None:
    """Every *.parquet a reader would take for data reads whole, every JSON parses, every HTML
    report ends its document; no link points at nothing."""
    if not root.exists():
        return
    for path in visible_files(root):
        if path.is_symlink():
            assert path.exists(), f"dangling link a reader would open: {path} -> {os.readlink(path)}"
        if path.suffix == ".parquet":
            try:
                pq.read_table(path)
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                pytest.fail(f"half-written or unreadable data file {path}: {exc}")
        elif path.suffix == ".json":
            try:
                json.loads(path.read_text())
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"half-written JSON {path}: {exc}")
        elif path.suffix == ".html":
            text = path.read_text(errors="replace").rstrip()
            assert text.endswith("</html>"), f"half-written HTML {path}: ends {text[-80:]!r}"


def _host_of(path: Path) -> str | None:
    for part in path.parts:
        if part.startswith("host="):
            return part[len("host="):]
    return None


def table_keys(dataset: Path, table: str) -> list[tuple]:
    """Every row's identity in a dataset table (events: host, trace_id, seq; counters: host,
    probe, snapshot_time), the host from the column when stored, else from the partition."""
    cols = {"events": ("trace_id", "seq"), "counters": ("probe", "snapshot_time")}[table]
    keys: list[tuple] = []
    base = dataset / table
    if not base.exists():
        return keys
    for path in visible_files(base):
        if path.suffix != ".parquet":
            continue
        t = pq.read_table(path)
        hosts = t.column("host").to_pylist() if "host" in t.column_names else [_host_of(path)] * t.num_rows
        a = t.column(cols[0]).to_pylist()
        b = t.column(cols[1]).to_pylist()
        keys.extend(zip(hosts, a, b, strict=True))
    return keys


def dataset_counts(dataset: Path) -> dict[str, tuple[int, int]]:
    """Per table (rows, distinct keys)."""
    out = {}
    for table in ("events", "counters"):
        keys = table_keys(dataset, table)
        out[table] = (len(keys), len(set(keys)))
    return out


def trace_kinds(dataset: Path) -> dict[str, int]:
    """Distinct traces (host, trace_id) per kind in a dataset's events: what learn counts as
    good traces and what the audit gives one finding each (failures)."""
    seen: dict[tuple, str] = {}
    for path in visible_files(dataset / "events"):
        if path.suffix != ".parquet":
            continue
        t = pq.read_table(path, columns=["trace_id", "kind"])
        host = _host_of(path)
        for tid, kind in zip(t.column("trace_id").to_pylist(), t.column("kind").to_pylist(), strict=True):
            seen.setdefault((host, tid), kind)
    out: dict[str, int] = {}
    for kind in seen.values():
        out[kind] = out.get(kind, 0) + 1
    return out


def findings_view(audit_dir: Path) -> list[tuple]:
    t = pq.read_table(audit_dir / "findings.parquet")
    rows = zip(*(t.column(c).to_pylist() for c in ("host", "trace_id", "expected", "bifurcation_probe",
                                                     "bifurcation_errno", "signature")), strict=True)
    return sorted(rows, key=repr)


def clusters_view(audit_dir: Path) -> list[tuple]:
    t = pq.read_table(audit_dir / "clusters.parquet")
    return sorted(zip(*(t.column(c).to_pylist() for c in ("signature", "failures", "hosts")), strict=True), key=repr)


def alerts_view(audit_dir: Path) -> list[tuple]:
    t = pq.read_table(audit_dir / "host_alerts.parquet")
    return sorted(zip(*(t.column(c).to_pylist() for c in ("host", "alert", "probe", "errno", "score")), strict=True),
                  key=repr)


def model_view(model: Path) -> list[tuple]:
    t = pq.read_table(model)
    cols = [c for c in t.column_names]
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True), key=repr)


def spool_snapshots(spool: Path) -> set[str]:
    return {f"{h.name}/{s.name}" for h in spool.iterdir() if h.is_dir() for s in h.iterdir()
            if s.name.startswith("snap-")}


# ----------------------------------------------------------------------------------------------
# fixtures: one simulated spool and the clean pipeline's results, built once per module
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("rb31p")
    os.chmod(root, 0o755)
    sim = root / "sim"
    ok(run(BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "1", "--start", SIM_START,
           "--spool", "-o", str(sim), "--json"))
    spool = sim / "spool"
    clean = root / "clean"
    took = {}
    t0 = time.monotonic()
    ing = js(run(BASELINE, "ingest", str(copytree(spool, root / "spool-clean")), str(clean),
                 "--quarantine", str(root / "q-clean"), "--json"))
    took["ingest"] = time.monotonic() - t0
    assert ing["ingest"]["quarantined"] == []
    t0 = time.monotonic()
    learn = js(run(BASELINE, "learn", str(clean), "--json"))
    took["learn"] = time.monotonic() - t0
    t0 = time.monotonic()
    audit = js(run(BASELINE, "audit", str(clean), "--json", "--html", str(root / "clean.html")))
    took["audit"] = time.monotonic() - t0
    t0 = time.monotonic()
    cov = js(run(BASELINE, "coverage", str(clean), "--json"))
    took["coverage"] = time.monotonic() - t0
    w = {
        "root": root,
        "spool": spool,
        "clean": clean,
        "ingest": ing,
        "learn": learn,
        "audit": audit,
        "coverage": cov,
        "counts": dataset_counts(clean),
        "findings": findings_view(clean / "audit"),
        "clusters": clusters_view(clean / "audit"),
        "alerts": alerts_view(clean / "audit"),
        "model": model_view(clean / "baseline-model.parquet"),
        "snapshots": spool_snapshots(spool),
        "took": took,
    }
    # the clean run holds no duplicate and every failure trace has a finding
    assert w["counts"]["events"][0] == w["counts"]["events"][1] > 0
    assert w["counts"]["counters"][0] == w["counts"]["counters"][1] > 0
    assert audit["findings"] == len(w["findings"]) > 0
    kinds = trace_kinds(clean)
    assert (kinds.get("good", 0), kinds.get("failure", 0)) == (learn["good_traces"], audit["findings"])
    return w


@pytest.fixture
def open_tmp():
    """Scratch an unprivileged user can reach (pytest's own tmp root is 0700): /tmp/rb31p-UID/."""
    base = Path("/tmp") / f"rb31p-{os.geteuid()}"  # one per user: a root run leaves it root's
    base.mkdir(mode=0o755, exist_ok=True)
    os.chmod(base, 0o755)
    path = Path(tempfile.mkdtemp(prefix="t-", dir=base))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def hour2(world):
    """A second simulated hour (seed 2) of three more hosts, gpu00003-5 (the simulator numbers
    each run's trace ids afresh: gpu00000-2 again would repeat the first hour's record keys), and
    the clean dataset with it ingested."""
    root = world["root"]
    sim = root / "sim-hour2"
    ok(run(BASELINE, "simulate", "--hosts", "6", "--hours", "1", "--seed", "2", "--start", "2026-11-28T01:00:00Z",
           "--spool", "-o", str(sim)))
    for host in ("gpu00000", "gpu00001", "gpu00002"):
        shutil.rmtree(sim / "spool" / host)
    after = copytree(world["clean"], root / "after-hour2")
    for extra in ("audit", "reports", "baseline-model.parquet"):
        target = after / extra
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
    ok(run(BASELINE, "ingest", str(copytree(sim / "spool", root / "sp-hour2")), str(after)))
    kinds = trace_kinds(after)
    return {"spool": sim / "spool", "after": after, "counts": dataset_counts(after),
            "good": kinds.get("good", 0), "failures": kinds.get("failure", 0)}


def fresh_dataset(world, name: str, tmp_path: Path, *, with_outputs: bool = False) -> Path:
    ds = copytree(world["clean"], tmp_path / name)
    if not with_outputs:
        for extra in ("audit", "reports"):
            shutil.rmtree(ds / extra, ignore_errors=True)
        (ds / "baseline-model.parquet").unlink(missing_ok=True)
    return ds


# ----------------------------------------------------------------------------------------------
# kills at random moments
# ----------------------------------------------------------------------------------------------
def _moments(n: int, took: float, seed: int) -> list[float]:
    """n moments spread over a clean run's duration (measured in this session, under this
    load), most of them after the interpreter and libraries have loaded: stratified so each
    stretch of the run is hit once."""
    rng = random.Random(seed)
    lo, hi = 0.3 * took, 1.1 * took
    width = (hi - lo) / n
    return [lo + width * (k + rng.random()) for k in range(n)]


def test_ingest_killed_9_at_ten_random_moments_rerun_equals_the_clean_run(world, tmp_path):
    """kill -9 of `baseline ingest` at 10 random moments: no half file a reader takes for data,
    no snapshot lost from both spool and dataset; the rerun gives exactly the clean run's rows
    (no duplicate, no loss) and empties the spool."""
    killed = 0
    for i, delay in enumerate(_moments(10, world["took"]["ingest"], seed=3101)):
        spool = copytree(world["spool"], tmp_path / f"spool{i}")
        ds = tmp_path / f"ds{i}"
        rc, err = stop_at(start(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / f"q{i}")),
                          delay, signal.SIGKILL)
        assert rc in (0, -signal.SIGKILL), (i, delay, rc, err)
        killed += rc == -signal.SIGKILL
        assert "Traceback" not in err
        assert_nothing_half_written(ds)
        # every snapshot is still somewhere: in the spool or (partly) in the dataset
        left = spool_snapshots(spool)
        assert left <= world["snapshots"]
        counts = dataset_counts(ds)
        assert counts["events"][0] == counts["events"][1], ("duplicated events after the kill", i, delay)
        assert counts["counters"][0] == counts["counters"][1], ("duplicated counters after the kill", i, delay)
        again = js(run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / f"q{i}"), "--json"))
        assert again["ingest"]["quarantined"] == [], (i, delay, again)
        assert spool_snapshots(spool) == set(), (i, delay)
        assert_nothing_half_written(ds)
        assert dataset_counts(ds) == world["counts"], (i, delay)
        assert not (tmp_path / f"q{i}").exists() or not any((tmp_path / f"q{i}").iterdir())
        debris = [str(p.relative_to(ds)) for p in ds.rglob("*")
                  if (p.name.startswith(".") and p.name != ".tracebase.lock") or "tmp" in p.name]
        assert debris == [], (i, delay, debris)
    assert killed >= 1, "no kill landed before the ingest ended"


def test_ingest_stopped_by_sigterm_and_sigint_at_random_moments_exits_its_status_and_the_rerun_completes(
        world, tmp_path):
    stops = [(signal.SIGTERM, 143), (signal.SIGINT, 130)]
    for i, delay in enumerate(_moments(2, world["took"]["ingest"], seed=3102)):
        sig, status = stops[i]
        spool = copytree(world["spool"], tmp_path / f"spool{i}")
        ds = tmp_path / f"ds{i}"
        rc, err = stop_at(start(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / "q")),
                          delay, sig)
        assert rc in (0, status), (delay, rc, err)
        assert "Traceback" not in err, err
        assert len([line for line in err.splitlines() if line.strip()]) <= 1, err
        assert_nothing_half_written(ds)
        ok(run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / "q")))
        assert dataset_counts(ds) == world["counts"], (delay, sig)
        assert spool_snapshots(spool) == set()


def test_learn_stopped_at_random_moments_leaves_the_old_model_or_none_and_the_rerun_equals_clean(world, tmp_path):
    """kill -9 / SIGTERM / SIGINT of `baseline learn` over an existing model: the model a reader
    opens is always a whole one (the old one, kept byte for byte, or the new one)."""
    ds = fresh_dataset(world, "ds", tmp_path)
    model = ds / "baseline-model.parquet"
    old = tmp_path / "old-model.parquet"
    # an older model in place: learned on the first half hour only
    ok(run(BASELINE, "learn", str(ds), "--since", "2026-11-28T00:30:00Z", "-o", str(old)))
    sigs = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT]
    for i, delay in enumerate(_moments(len(sigs), world["took"]["learn"], seed=3103)):
        shutil.copy2(old, model)
        before = model.read_bytes()
        rc, err = stop_at(start(BASELINE, "learn", str(ds)), delay, sigs[i])
        assert rc in (0, -9, 143, 130), (delay, rc, err)
        assert "Traceback" not in err
        data = model.read_bytes()
        assert data == before or model_view(model) == world["model"], (i, delay, rc)
        assert sorted(p.name for p in ds.iterdir() if not p.name.startswith(".")) == sorted(
            ["baseline-model.parquet", "counters", "counter_buckets", "events", "_ingest_watermark.json"])
    ok(run(BASELINE, "learn", str(ds)))
    assert model_view(model) == world["model"]


def test_audit_with_html_and_json_stopped_at_random_moments_then_rerun_equals_clean(world, tmp_path):
    """The audit's tables always come from one whole set, the HTML is whole or absent, and a
    rerun gives the clean run's findings, clusters and host alerts."""
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    shutil.rmtree(ds / "audit")
    html = tmp_path / "audit.html"
    sigs = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT]
    for i, delay in enumerate(_moments(len(sigs), world["took"]["audit"], seed=3104)):
        rc, err = stop_at(start(BASELINE, "audit", str(ds), "--html", str(html), "--json"), delay, sigs[i])
        assert rc in (0, -9, 143, 130), (delay, rc, err)
        assert "Traceback" not in err, err
        assert_nothing_half_written(ds)
        assert_nothing_half_written(tmp_path)
        if (ds / "audit" / "findings.parquet").exists():
            assert findings_view(ds / "audit") == world["findings"], (i, delay)
            assert clusters_view(ds / "audit") == world["clusters"], (i, delay)
        leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("ds", "audit.html")]
        assert leftovers == [], (i, delay, leftovers)
    out = js(run(BASELINE, "audit", str(ds), "--html", str(html), "--json"))
    assert out["findings"] == world["audit"]["findings"]
    assert findings_view(ds / "audit") == world["findings"]
    assert clusters_view(ds / "audit") == world["clusters"]
    assert alerts_view(ds / "audit") == world["alerts"]
    assert html.read_text().rstrip().endswith("</html>")
    sets = [p for p in (ds / "audit" / ".sets").iterdir()]
    assert len(sets) == 1, sets


def test_coverage_killed_9_at_random_moments_leaves_no_partial_week_and_the_rerun_equals_clean(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path)
    week = world["coverage"]["week"]
    names = sorted(Path(p).name for p in world["coverage"]["files"].values())
    for i, delay in enumerate(_moments(2, world["took"]["coverage"], seed=3105)):
        rc, err = stop_at(start(BASELINE, "coverage", str(ds), "--json"), delay, signal.SIGKILL)
        assert rc in (0, -9), (delay, rc, err)
        assert_nothing_half_written(ds)
        report = ds / "reports" / week
        if report.exists():
            assert sorted(p.name for p in report.iterdir() if p.is_file()) == names, (i, delay)
    out = js(run(BASELINE, "coverage", str(ds), "--json"))
    for key in ("week", "hosts", "probes", "never_fired", "app_failures"):
        assert out[key] == world["coverage"][key], key
    clean_probes = pq.read_table(world["clean"] / "reports" / week / "coverage_probes.parquet")
    assert pq.read_table(ds / "reports" / week / "coverage_probes.parquet").equals(clean_probes)


def test_tracer_run_killed_9_mid_run_leaves_only_whole_snapshots_that_ingest_takes(tmp_path):
    """kill -9 of the fleet daemon (100 ms snapshots) at random moments: every snapshot under
    its final name holds both files, readable; ingest quarantines nothing."""
    spool = tmp_path / "spool"
    for delay in _moments(1, 1.5, seed=3106):
        proc = start(TRACER, "run", "syscalls", "-x", "-i", "100ms", "--spool", str(spool), "--host", "kill9host")
        # wait until it is snapshotting, then a random moment more
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not list(spool.glob("kill9host/snap-*")):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        rc, err = stop_at(proc, delay, signal.SIGKILL)
        assert rc == -9, (rc, err)
    snaps = sorted(spool.glob("kill9host/snap-*"))
    assert snaps
    for snap in snaps:
        assert sorted(p.name for p in snap.iterdir()) == ["counters.parquet", "events.parquet"], snap
        pq.read_table(snap / "counters.parquet")
        pq.read_table(snap / "events.parquet")
    out = js(run(BASELINE, "ingest", str(spool), str(tmp_path / "ds"), "--quarantine", str(tmp_path / "q"), "--json"))
    assert out["ingest"]["quarantined"] == []
    assert out["ingest"]["snapshots"] == len(snaps)
    assert_nothing_half_written(tmp_path / "ds")
    counts = dataset_counts(tmp_path / "ds")
    assert counts["counters"][0] == counts["counters"][1] > 0


# ----------------------------------------------------------------------------------------------
# concurrency
# ----------------------------------------------------------------------------------------------
def test_two_learns_at_once_on_one_dataset_both_finish_with_the_clean_model(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path)
    a, b = start(BASELINE, "learn", str(ds), "--json"), start(BASELINE, "learn", str(ds), "--json")
    for p in (a, b):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out)["good_traces"] == world["learn"]["good_traces"]
    assert model_view(ds / "baseline-model.parquet") == world["model"]
    assert [p.name for p in ds.iterdir() if p.name.startswith(".") and p.name != ".tracebase.lock"] == []


def test_two_audits_at_once_into_one_output_and_one_html_leave_one_whole_set(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    shutil.rmtree(ds / "audit")
    html = tmp_path / "r.html"
    procs = [start(BASELINE, "audit", str(ds), "--html", str(html), "--json") for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out)["findings"] == world["audit"]["findings"]
    assert findings_view(ds / "audit") == world["findings"]
    assert alerts_view(ds / "audit") == world["alerts"]
    assert len(list((ds / "audit" / ".sets").iterdir())) == 1
    assert_nothing_half_written(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "r.html"]


def test_learn_and_audit_while_an_ingest_adds_an_hour_see_before_or_after_never_half(world, hour2, tmp_path):
    """A second hour ingested while learn and audit read: each reads the dataset before the
    ingest or after it (they take the shared lock), never a part of it."""
    ds = fresh_dataset(world, "ds", tmp_path)
    n_after, f_after = hour2["good"], hour2["failures"]
    n_before, f_before = world["learn"]["good_traces"], world["audit"]["findings"]
    assert n_after > n_before and f_after > f_before
    ing = start(BASELINE, "ingest", str(copytree(hour2["spool"], tmp_path / "spool")), str(ds))
    time.sleep(0.3)
    lrn = start(BASELINE, "learn", str(ds), "-o", str(tmp_path / "m.parquet"), "--json")
    aud = start(BASELINE, "audit", str(ds), "--refit", "-o", str(tmp_path / "aud"), "--json")
    outs = {}
    for name, p in (("ingest", ing), ("learn", lrn), ("audit", aud)):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, (name, err)
        outs[name] = out
    assert json.loads(outs["learn"])["good_traces"] in (n_before, n_after)
    assert json.loads(outs["audit"])["findings"] in (f_before, f_after)
    assert dataset_counts(ds) == hour2["counts"]


# ----------------------------------------------------------------------------------------------
# odd layouts
# ----------------------------------------------------------------------------------------------
def test_host_and_date_partitions_symlinked_from_elsewhere_read_as_plain_and_ingest_writes_through(
        world, hour2, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path)
    other = tmp_path / "other-volume"
    other.mkdir()
    host_part = ds / "events" / f"date={DATE}" / "host=gpu00001"
    shutil.move(host_part, other / "host=gpu00001")
    host_part.symlink_to(other / "host=gpu00001")
    date_part = ds / "counters" / f"date={DATE}"
    shutil.move(date_part, other / "counters-date")
    date_part.symlink_to(other / "counters-date")
    js(run(BASELINE, "audit", str(ds), "--json"))
    assert findings_view(ds / "audit") == world["findings"]
    assert alerts_view(ds / "audit") == world["alerts"]
    # a second hour ingested through the links: the links stay links, nothing is counted twice
    ok(run(BASELINE, "ingest", str(copytree(hour2["spool"], tmp_path / "sp2")), str(ds)))
    assert host_part.is_symlink() and date_part.is_symlink()
    assert dataset_counts(ds) == hour2["counts"]
    assert len(list((other / "host=gpu00001").glob("*.parquet"))) == 1
    assert sorted(p.name for p in (other / "counters-date").iterdir()) == [f"host=gpu0000{k}" for k in range(6)]
    assert_nothing_half_written(ds)


def test_a_host_partition_under_a_misnamed_date_directory_is_not_dropped_in_silence(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path)
    (ds / "events" / "dateX").mkdir()
    shutil.move(ds / "events" / f"date={DATE}" / "host=gpu00000", ds / "events" / "dateX" / "host=gpu00000")
    proc = run(BASELINE, "audit", str(ds), "--json")
    if proc.returncode == 2:
        one_line_error(proc, "dateX")
    else:
        ok(proc)
        assert json.loads(proc.stdout)["findings"] == world["audit"]["findings"]


def test_a_date_directory_naming_no_real_date_loses_nothing(world, tmp_path):
    """events/date=2026-13-45/host=H: read (the traces' own times count) or refused naming it."""
    ds = fresh_dataset(world, "ds", tmp_path)
    (ds / "events" / "date=2026-13-45").mkdir()
    shutil.move(ds / "events" / f"date={DATE}" / "host=gpu00000", ds / "events" / "date=2026-13-45" / "host=gpu00000")
    learn = run(BASELINE, "learn", str(ds), "--json")
    if learn.returncode == 2:
        one_line_error(learn, "date=2026-13-45")
        return
    assert json.loads(ok(learn).stdout)["good_traces"] == world["learn"]["good_traces"]
    js(run(BASELINE, "audit", str(ds), "--json"))
    assert findings_view(ds / "audit") == world["findings"]


def test_a_zero_row_events_file_for_a_day_without_events_changes_nothing(world, tmp_path):
    """A day with zero events (an empty part file on the next date, counters as usual) between
    days with data: learn, audit and coverage give the same numbers."""
    ds = fresh_dataset(world, "ds", tmp_path)
    src = next((ds / "events" / f"date={DATE}" / "host=gpu00000").glob("*.parquet"))
    empty_dir = ds / "events" / "date=2026-11-29" / "host=gpu00000"
    empty_dir.mkdir(parents=True)
    t = pq.read_table(src)
    pq.write_table(t.slice(0, 0), empty_dir / "part-0000000000000000.parquet")
    learn = js(run(BASELINE, "learn", str(ds), "--json"))
    assert learn["good_traces"] == world["learn"]["good_traces"]
    audit = js(run(BASELINE, "audit", str(ds), "--json"))
    assert audit["findings"] == world["audit"]["findings"]
    assert findings_view(ds / "audit") == world["findings"]


def test_a_spool_with_a_day_of_no_snapshots_between_two_days_runs_end_to_end(world, tmp_path):
    ok(run(BASELINE, "simulate", "--hosts", "4", "--hours", "1", "--seed", "4", "--start", "2026-11-30T00:00:00Z",
           "--spool", "-o", str(tmp_path / "later")))
    for host in ("gpu00000", "gpu00001", "gpu00002"):  # the first day's hosts' ids would repeat
        shutil.rmtree(tmp_path / "later" / "spool" / host)
    spool = copytree(world["spool"], tmp_path / "spool")
    shutil.copytree(tmp_path / "later" / "spool" / "gpu00003", spool / "gpu00003")
    later_events = sum(pq.read_metadata(f).num_rows for f in spool.glob("gpu00003/snap-*/events.parquet"))
    later_counters = sum(pq.read_metadata(f).num_rows for f in spool.glob("gpu00003/snap-*/counters.parquet"))
    ds = tmp_path / "ds"
    ok(run(BASELINE, "ingest", str(spool), str(ds)))
    assert sorted(p.name for p in (ds / "events").iterdir()) == ["date=2026-11-28", "date=2026-11-30"]
    assert dataset_counts(ds) == {"events": (world["counts"]["events"][0] + later_events,) * 2,
                                  "counters": (world["counts"]["counters"][0] + later_counters,) * 2}
    kinds = trace_kinds(ds)
    assert kinds["failure"] > world["audit"]["findings"]
    audit = js(run(BASELINE, "audit", str(ds), "--json"))
    assert audit["traces_audited"] == sum(kinds.values())
    assert audit["findings"] == kinds["failure"]


# ----------------------------------------------------------------------------------------------
# host names
# ----------------------------------------------------------------------------------------------
def test_host_names_with_dots_underscores_and_250_characters_run_end_to_end(world, tmp_path):
    names = {"gpu00000": "gpu-a.rack_1.example.com", "gpu00001": "h" * 250, "gpu00002": "gpu00002"}
    spool = copytree(world["spool"], tmp_path / "spool")
    for old, new in names.items():
        if old != new:
            (spool / old).rename(spool / new)
    ds = tmp_path / "ds"
    out = js(run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / "q"), "--json"))
    assert out["ingest"]["quarantined"] == []
    assert sorted(p.name for p in (ds / "events" / f"date={DATE}").iterdir()) == sorted(
        f"host={n}" for n in names.values())
    counts = dataset_counts(ds)
    assert {t: c[0] for t, c in counts.items()} == {t: c[0] for t, c in world["counts"].items()}
    audit = js(run(BASELINE, "audit", str(ds), "--json"))
    assert audit["findings"] == world["audit"]["findings"]
    hosts = set(pq.read_table(ds / "audit" / "findings.parquet").column("host").to_pylist())
    assert hosts == set(names.values())


def test_a_host_name_too_long_for_a_partition_does_not_wedge_the_other_hosts(world, tmp_path):
    spool = copytree(world["spool"], tmp_path / "spool")
    long_name = "a" * 253
    (spool / "gpu00001").rename(spool / long_name)
    kept = {s for s in spool_snapshots(spool) if s.startswith(long_name)}
    ds = tmp_path / "ds"
    proc = run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / "q"), "--json")
    # nothing of the long-named host is lost: still in the spool or in the quarantine
    quarantined = {f"{h.name}/{s.name}" for h in (tmp_path / "q").glob("*") for s in h.glob("snap-*")}
    assert kept <= spool_snapshots(spool) | quarantined
    # the other hosts went in
    assert (ds / "events" / f"date={DATE}" / "host=gpu00000").is_dir(), proc.stderr
    assert (ds / "events" / f"date={DATE}" / "host=gpu00002").is_dir(), proc.stderr
    assert not [s for s in spool_snapshots(spool) if not s.startswith(long_name)]


def test_a_spool_host_named_in_unicode_is_quarantined_with_its_reason_and_the_rest_ingested(world, tmp_path):
    spool = copytree(world["spool"], tmp_path / "spool")
    odd = "gpü-nöde.example"
    (spool / "gpu00000").rename(spool / odd)
    n_odd = len([s for s in spool_snapshots(spool) if s.startswith(odd)])
    ds, q = tmp_path / "ds", tmp_path / "q"
    proc = run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(q), "--json")
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in (ds / "events" / f"date={DATE}").iterdir()) == ["host=gpu00001", "host=gpu00002"]
    in_spool = [s for s in spool_snapshots(spool) if s.startswith(odd)]
    in_q = [p for p in (q / odd).glob("snap-*") if p.is_dir()] if (q / odd).exists() else []
    reasons = list((q / odd).glob("*.reason")) if (q / odd).exists() else []
    assert len(in_spool) + len(in_q) == n_odd
    if in_q:
        assert reasons and all(odd in r.read_text() for r in reasons)


# ----------------------------------------------------------------------------------------------
# other users, umask
# ----------------------------------------------------------------------------------------------
def test_an_unprivileged_audit_of_an_unreadable_events_part_is_one_line_and_makes_no_output(world, open_tmp):
    tmp_path = open_tmp
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    shutil.rmtree(ds / "audit")
    part = next((ds / "events" / f"date={DATE}" / "host=gpu00001").glob("*.parquet"))
    os.chown(part, NOBODY + 1 if NOBODY + 1 < 65536 else 1, 0)
    os.chmod(part, 0o600)
    outdir = tmp_path / "nobody"
    outdir.mkdir()
    os.chmod(outdir, 0o777)
    proc = run(BASELINE, "audit", str(ds), "-o", str(outdir / "audit"), "--html", str(outdir / "a.html"),
               "--json", user=NOBODY)
    one_line_error(proc, part.name, "Permission denied")
    assert list(outdir.iterdir()) == []
    learn = run(BASELINE, "learn", str(ds), "-o", str(outdir / "m.parquet"), user=NOBODY)
    one_line_error(learn, part.name)
    assert list(outdir.iterdir()) == []
    # the host directory unreadable instead of the file
    os.chmod(part, 0o644)
    os.chmod(part.parent, 0o700)
    proc = run(BASELINE, "audit", str(ds), "-o", str(outdir / "audit"), "--json", user=NOBODY)
    one_line_error(proc, "host=gpu00001")
    assert list(outdir.iterdir()) == []


def test_an_unprivileged_ingest_into_a_root_dataset_moves_nothing_out_of_the_spool(world, hour2, open_tmp):
    tmp_path = open_tmp
    ds = fresh_dataset(world, "ds", tmp_path)
    # a new hour the dataset does not hold, so ingest has something to write
    spool = copytree(hour2["spool"], tmp_path / "spool")
    for dirpath, _dirnames, filenames in os.walk(spool):
        os.chown(dirpath, NOBODY, NOBODY)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), NOBODY, NOBODY)
    before = spool_snapshots(spool)
    q = tmp_path / "q"
    q.mkdir()
    os.chown(q, NOBODY, NOBODY)
    proc = run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(q), user=NOBODY)
    one_line_error(proc, str(ds.name))
    assert spool_snapshots(spool) == before
    assert dataset_counts(ds) == world["counts"]
    assert list(q.iterdir()) == []


def test_pipeline_outputs_under_umask_027_are_group_readable_only(world, tmp_path):
    spool = copytree(world["spool"], tmp_path / "spool")
    ds = tmp_path / "ds"
    ok(run(BASELINE, "ingest", str(spool), str(ds), umask=0o027))
    ok(run(BASELINE, "learn", str(ds), umask=0o027))
    ok(run(BASELINE, "audit", str(ds), "--html", str(tmp_path / "a.html"), umask=0o027))
    ok(run(BASELINE, "coverage", str(ds), umask=0o027))
    bad = []
    for dirpath, dirnames, filenames in os.walk(ds):
        for name in dirnames:
            p = Path(dirpath) / name
            if p.is_symlink():
                continue
            mode = stat.S_IMODE(p.lstat().st_mode)
            if mode & 0o027 or mode & 0o050 != 0o050:
                bad.append((str(p), oct(mode)))
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                continue
            mode = stat.S_IMODE(p.lstat().st_mode)
            if mode & 0o027 or not mode & 0o040:
                bad.append((str(p), oct(mode)))
    mode = stat.S_IMODE((tmp_path / "a.html").stat().st_mode)
    if mode != 0o640:
        bad.append(("a.html", oct(mode)))
    assert bad == []


# ----------------------------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------------------------
def test_a_model_missing_operations_still_gives_every_failure_a_finding(world, tmp_path):
    """A model learned on part of the fleet (fewer operations, as on another probe set): the
    audit uses it, says so, and still writes one finding per failure trace."""
    ds = fresh_dataset(world, "ds", tmp_path)
    small = js(run(BASELINE, "learn", str(ds), "--since", "2026-11-28T00:45:00Z", "--json"))
    assert small["operations"] < world["learn"]["operations"]
    audit = js(run(BASELINE, "audit", str(ds), "--json"))
    assert audit["model"] == str(ds / "baseline-model.parquet")
    assert audit["findings"] == world["audit"]["findings"]
    assert audit["traces_audited"] == world["audit"]["traces_audited"]
    ids = sorted(r[1] for r in findings_view(ds / "audit"))
    assert ids == sorted(r[1] for r in world["findings"])


def test_a_model_file_swapped_for_one_of_another_model_version_is_refused_naming_it(world, tmp_path):
    """The model's footer says model_version 2; the same file claiming another version (99, 1)
    is refused naming the file and the version, or read -- never a traceback, never a half
    output."""
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    shutil.rmtree(ds / "audit")
    model = ds / "baseline-model.parquet"
    t = pq.read_table(model)
    meta = dict(t.schema.metadata)
    info = json.loads(meta[b"tracebase.model"])
    assert info["model_version"] == 2
    for version in (99, 1):
        info2 = dict(info, model_version=version)
        meta2 = {**meta, b"tracebase.model": json.dumps(info2).encode()}
        pq.write_table(t.replace_schema_metadata(meta2), model)
        proc = run(BASELINE, "audit", str(ds), "--json")
        if version == 99:
            line = one_line_error(proc, "baseline-model.parquet")
            assert "99" in line
        else:
            if proc.returncode == 2:
                line = one_line_error(proc, "baseline-model.parquet")
                assert "1" in line
            else:
                assert json.loads(ok(proc).stdout)["findings"] == world["audit"]["findings"]
        assert not (ds / "audit").exists() or proc.returncode == 0


def test_a_model_of_another_fleet_swapped_in_between_learn_and_audit(world, tmp_path):
    """Another fleet's model (other scenarios, other seed) dropped in place of the dataset's:
    the audit reads it as the saved model and still accounts for every failure trace."""
    ds = fresh_dataset(world, "ds", tmp_path)
    ok(run(BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "9", "--scenario", "none",
           "-o", str(tmp_path / "other")))
    ok(run(BASELINE, "learn", str(tmp_path / "other")))
    shutil.copy2(tmp_path / "other" / "baseline-model.parquet", ds / "baseline-model.parquet")
    audit = js(run(BASELINE, "audit", str(ds), "--json"))
    assert audit["model_source"] == world["audit"]["model_source"]
    assert audit["findings"] == world["audit"]["findings"]


# ----------------------------------------------------------------------------------------------
# clocks
# ----------------------------------------------------------------------------------------------
def _pipeline(tmp_path: Path, start_time: str, *, analyse: bool = True) -> dict:
    sim = tmp_path / "sim"
    ok(run(BASELINE, "simulate", "--hosts", "3", "--hours", "1", "--seed", "1", "--start", start_time,
           "--spool", "-o", str(sim)))
    ds = tmp_path / "ds"
    ing = js(run(BASELINE, "ingest", str(sim / "spool"), str(ds), "--quarantine", str(tmp_path / "q"), "--json"))
    if not analyse:
        return {"quarantined": ing["ingest"]["quarantined"], "ds": ds}
    audit = js(run(BASELINE, "audit", str(ds), "--json"))  # no saved model: learned from DATASET
    return {
        "rows": ing["ingest"]["rows"], "quarantined": ing["ingest"]["quarantined"],
        "audit": (audit["findings"], audit["clusters"], audit["host_alerts"], audit["traces_audited"]),
        "signatures": sorted(r[5] for r in findings_view(ds / "audit")),
        "ds": ds,
    }


@pytest.mark.parametrize("when", ["2200-01-01T00:00:00Z", "1970-01-01T00:00:00Z"])
def test_a_fleet_far_in_the_future_or_at_the_epoch_audits_as_the_present_one(world, tmp_path, when):
    now = {
        "rows": world["ingest"]["ingest"]["rows"], "quarantined": [],
        "audit": (world["audit"]["findings"], world["audit"]["clusters"], world["audit"]["host_alerts"],
                  world["audit"]["traces_audited"]),
        "signatures": sorted(r[5] for r in world["findings"]),
    }
    other = _pipeline(tmp_path / "other", when)
    for key in ("rows", "quarantined", "audit", "signatures"):
        assert other[key] == now[key], key
    assert sorted(p.name for p in (other["ds"] / "events").iterdir()) == [f"date={when[:10]}"]


def test_coverage_of_a_fleet_on_the_first_days_of_the_time_range(tmp_path):
    res = _pipeline(tmp_path, "1678-01-02T00:00:00Z", analyse=False)
    assert res["quarantined"] == []
    cov = run(BASELINE, "coverage", str(res["ds"]), "--json")
    assert json.loads(ok(cov).stdout)["week"] == "1677-W52"


def _write_like(template: Path, table: pa.Table, dest: Path) -> None:
    meta = pq.read_schema(template).metadata
    pq.write_table(table.replace_schema_metadata(meta), dest)


def test_a_daemon_restart_shipping_backwards_counters_changes_no_alert_and_no_coverage_total(world, tmp_path):
    """A snapshot whose deltas go backwards (cumulative counts restarted, shipped as new - old)
    is ingested and counts no calls and no errors: host alerts and the coverage report's per-probe
    totals equal the clean run's."""
    spool = copytree(world["spool"], tmp_path / "spool")
    host = spool / "gpu00002"
    snaps = sorted(host.glob("snap-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    last = snaps[-1]
    seq = int(last.name.rsplit("-", 1)[1]) + 1
    counters = pq.read_table(last / "counters.parquet")
    snap_time = counters.column("snapshot_time")[0].as_py() + __import__("datetime").timedelta(seconds=5)
    name = f"snap-{snap_time.strftime('%Y%m%dT%H%M%S')}.000Z-{seq:06d}"
    new = host / name
    new.mkdir()
    n = counters.num_rows
    rows = counters.to_pylist()
    for r in rows:
        r["snapshot_time"] = snap_time
        r["invocations"] = -5000
        r["failures"] = -7000 if r["probe"].endswith("alloc_pd") else -6000
        r["errno_counts"] = [{"errno": "EIO", "count": -20}]
    back = pa.Table.from_pylist(rows, schema=counters.schema)
    assert back.num_rows == n
    _write_like(last / "counters.parquet", back, new / "counters.parquet")
    events = pq.read_table(last / "events.parquet")
    _write_like(last / "events.parquet", events.slice(0, 0), new / "events.parquet")
    ds = tmp_path / "ds"
    out = js(run(BASELINE, "ingest", str(spool), str(ds), "--quarantine", str(tmp_path / "q"), "--json"))
    assert out["ingest"]["quarantined"] == []
    assert out["ingest"]["rows"]["counters"] == world["counts"]["counters"][0] + n
    js(run(BASELINE, "audit", str(ds), "--json"))
    assert alerts_view(ds / "audit") == world["alerts"]
    assert findings_view(ds / "audit") == world["findings"]
    cov = js(run(BASELINE, "coverage", str(ds), "--json"))
    week = cov["week"]
    mine = pq.read_table(ds / "reports" / week / "coverage_probes.parquet")
    clean = pq.read_table(world["clean"] / "reports" / week / "coverage_probes.parquet")
    assert mine.equals(clean), (mine.to_pylist()[:3], clean.to_pylist()[:3])


# ----------------------------------------------------------------------------------------------
# outputs over inputs
# ----------------------------------------------------------------------------------------------
def test_audit_html_onto_its_own_model_or_a_data_part_is_refused_and_both_are_kept(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    shutil.rmtree(ds / "audit")
    shutil.rmtree(ds / "reports")
    model = ds / "baseline-model.parquet"
    part = next((ds / "events" / f"date={DATE}" / "host=gpu00000").glob("*.parquet"))
    for target in (model, part):
        before = target.read_bytes()
        proc = run(BASELINE, "audit", str(ds), "--html", str(target), "--json")
        one_line_error(proc, target.name)
        assert target.read_bytes() == before
        assert not (ds / "audit").exists()
    # the coverage report's output given as the dataset's events table
    proc = run(BASELINE, "coverage", str(ds), "-o", str(ds / "events"))
    one_line_error(proc, "events")
    assert dataset_counts(ds) == world["counts"]


def test_learn_output_onto_the_audits_clusters_link_is_refused_and_the_set_kept(world, tmp_path):
    ds = fresh_dataset(world, "ds", tmp_path, with_outputs=True)
    link = ds / "audit" / "clusters.parquet"
    assert link.is_symlink()
    before = link.read_bytes()
    proc = run(BASELINE, "learn", str(ds), "-o", str(link), "--json")
    assert link.is_symlink()
    assert link.read_bytes() == before, (
        f"exit {proc.returncode}: the audit's clusters table now holds a "
        f"{pq.read_schema(link).metadata.get(b'tracebase.table')!r} file")
    one_line_error(proc, "clusters.parquet")
