"""Blind robustness battery, forty-third pass: the paths earlier batteries touched least.

Promises taken only from README.md, docs/*.md, each command's --help and tracer/schema.py:
bad input or an OS error gives exit status 2 and ONE line on stderr starting with the program's
name, naming the file/flag/field, with what was expected and what was found, never a traceback;
outputs honour the umask; writes are atomic (a kill -9 leaves no half file a reader takes for
data, the previous output stays intact, and a rerun equals a clean run).

Covered: `baseline coverage`, `baseline suggest-probes`, `baseline ingest` of odd spools,
`baseline report` / `baseline evaluate` of damaged inputs, `baseline allowlist learn` and
`baseline diff --allowlist` with wrongly typed YAML, and `tracer` flags with bad values.
Where a promise is broken the test stays, marked xfail(strict=True) with what was observed.

Fixed since written (round forty-one; 11 strict xfails in 8 groups when written): suggest-probes'
read error on /proc/self/mem named no file; a snapshot named with a non-ASCII digit was ingested
(a regex digit class matched it: the file-name patterns are ASCII now); a findings directory's LATEST not UTF-8
was an internal error, and one naming a removed run blamed the run's findings.parquet (LATEST
is named now); `evaluate --findings ''` read the current directory (empty path arguments are
refused); a truth table with no rows scored a perfect audit; a nested YAML value was echoed
whole in the error (348,884 bytes; through nine levels of aliases repr never returned: values
are cut short, tracer.errors.shown_value). `tracer record -d '5 m'` is accepted as five minutes
(as systemd reads it), not refused: the test now says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
_BIN = REPO / ".venv" / "bin"
if not (_BIN / "baseline").exists():  # an installed checkout elsewhere: the interpreter's own bin
    _BIN = Path(sys.executable).parent
BASELINE = str(_BIN / "baseline")
TRACER = str(_BIN / "tracer")
RECORDINGS = REPO / "tests" / "recordings" / "sqlite_rw_fallback"
WEEK = "2026-W48"  # the simulator's default start, 2026-11-28, lies in it
SEED = 43


# --------------------------------------------------------------------------------------------
# helpers


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TMPDIR"] = str(work / "tmp")  # crash reports, temporaries: inside the test's directory
    env.pop("NO_COLOR", None)
    return env


def run(prog: str, *args: object, work: Path, cwd: Path | None = None, timeout: float = 60,
        umask: int | None = None) -> subprocess.CompletedProcess:
    def pre() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run([prog, *map(str, args)], cwd=cwd or work, env=_env(work), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, encoding="utf-8",
                          errors="backslashreplace", preexec_fn=pre if umask is not None else None)


def refused(proc: subprocess.CompletedProcess, prog: str, *names: str) -> str:
    """Exit 2, exactly one stderr line starting with the program's name, no traceback, naming
    every one of `names`. Returns the line."""
    err = proc.stderr
    assert "Traceback" not in err, err[-2000:]
    assert proc.returncode == 2, f"exit {proc.returncode}, stderr {err[-1000:]!r}"
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {err[:1500]!r}"
    line = lines[0]
    assert line.startswith(prog), line
    assert "internal error" not in line, line
    for name in names:
        assert name in line, f"{name!r} not named in {line!r}"
    return line


def visible_files(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every regular file under root outside dot-named entries."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def table_rows(dataset: Path, table: str) -> list[str]:
    """Every row of a dataset table (host restored from the path), canonical and sorted."""
    rows: list[str] = []
    base = dataset / table
    if not base.exists():
        return rows
    for path in sorted(base.rglob("*.parquet")):
        rel = path.relative_to(dataset).parts
        if any(part.startswith(".") for part in rel):
            continue
        host = next((p[5:] for p in rel if p.startswith("host=")), None)
        for row in pq.read_table(path).to_pylist():
            row.setdefault("host", host)
            rows.append(json.dumps(row, sort_keys=True, default=str))
    return sorted(rows)


def kill_after(cmd: list[str], delay: float, work: Path) -> int | None:
    """Start cmd in its own session, SIGKILL that session after `delay` s (if still running).
    Returns the exit status when it finished first, None when killed."""
    proc = subprocess.Popen(cmd, cwd=work, env=_env(work), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # our own session: the command and its workers
        proc.wait()
        return None


@contextlib.contextmanager
def tmpfs(path: Path, options: str):
    """A tmpfs at path (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(mount: Path, leave: int) -> None:
    """Fill a tmpfs until about `leave` bytes are free."""
    st = os.statvfs(mount)
    free = st.f_bavail * st.f_frsize
    with open(mount / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


# --------------------------------------------------------------------------------------------
# fixtures (module scope: one dataset, one spool)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("robust43")
    (w / "tmp").mkdir()
    return w


@pytest.fixture(scope="module")
def dataset(work: Path) -> Path:
    ds = work / "ds"
    done = run(BASELINE, "simulate", "--hosts", 8, "--hours", 2, "--seed", SEED, "-o", ds, work=work)
    assert done.returncode == 0, done.stderr
    for step in (("learn", ds), ("audit", ds)):
        done = run(BASELINE, *step, work=work)
        assert done.returncode == 0, done.stderr
    return ds


@pytest.fixture(scope="module")
def clean_coverage(work: Path, dataset: Path) -> dict[str, str]:
    out = work / "cov-clean"
    done = run(BASELINE, "coverage", dataset, "-o", out, work=work)
    assert done.returncode == 0, done.stderr
    files = visible_files(out)
    assert any(name.endswith("report.html") for name in files), files
    return files


@pytest.fixture(scope="module")
def spool(work: Path) -> Path:
    out = work / "sim-spool"
    done = run(BASELINE, "simulate", "--hosts", 8, "--hours", 2, "--seed", SEED, "-o", out, "--spool", work=work)
    assert done.returncode == 0, done.stderr
    sp = out / "spool"
    assert sorted(p.name for p in sp.iterdir())[:1] == ["gpu00000"], list(sp.iterdir())
    return sp


_counter = iter(range(10_000))


def small_spool(work: Path, spool: Path, snapshots: int = 3) -> Path:
    """A fresh spool of one host's first few snapshots."""
    dest = work / f"spool-{next(_counter)}"
    (dest / "gpu00000").mkdir(parents=True)
    for snap in sorted((spool / "gpu00000").iterdir())[:snapshots]:
        shutil.copytree(snap, dest / "gpu00000" / snap.name, symlinks=True)
    return dest


def extra_snapshot(spool: Path) -> Path:
    """A real snapshot directory that small_spool does not copy."""
    return sorted((spool / "gpu00000").iterdir())[4]


def ingest_json(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["ingest"]


# ============================================================================================
# baseline suggest-probes


def _btf_header(claimed: int) -> bytes:
    # struct btf_header {u16 magic 0xeB9F; u8 version; u8 flags; u32 hdr_len, type_off, type_len, str_off, str_len}
    return struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, claimed, claimed, claimed)


def _make_input(kind: str, work: Path) -> Path:
    base = work / "sp-in"
    base.mkdir(exist_ok=True)
    p = base / f"{kind}-{next(_counter)}"
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "random":
        p.write_bytes(os.urandom(4096))
    elif kind == "truncated-btf":
        p.write_bytes(_btf_header(100_000) + b"\0" * 100)
    elif kind == "magic-only":
        p.write_bytes(b"\x9f\xeb\x01\x00")
    elif kind == "dir":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "text":
        p.write_text("hello world\nnot a symbol list at all ###\n")
    elif kind == "nul-in-text":
        p.write_bytes(b"ib_create_qp\n\x00\xff\xfe\n")
    elif kind == "missing":
        pass
    elif kind == "symlink-loop":
        os.symlink(p.name, p)
    else:
        raise AssertionError(kind)
    return p


SYMBOL_INPUTS = ["empty", "random", "truncated-btf", "fifo", "text", "symlink-loop"]


@pytest.mark.parametrize("kind", SYMBOL_INPUTS)
def test_suggest_symbols_bad_input(work, kind):
    path = _make_input(kind, work)
    refused(run(BASELINE, "suggest-probes", "--symbols", path, work=work, timeout=30), "baseline", str(path))


@pytest.mark.parametrize("kind", ["dir", "magic-only"])
def test_suggest_btf_bad_input(work, kind):
    path = _make_input(kind, work)
    refused(run(BASELINE, "suggest-probes", "--btf", path, work=work, timeout=30), "baseline", str(path))


@pytest.mark.parametrize("device", ["/dev/null"])
def test_suggest_symbols_device(work, device):
    refused(run(BASELINE, "suggest-probes", "--symbols", device, work=work, timeout=30), "baseline", device)


def test_suggest_symbols_unreadable_proc_file(work):
    refused(run(BASELINE, "suggest-probes", "--symbols", "/proc/self/mem", work=work, timeout=30),
            "baseline", "/proc/self/mem")


@pytest.mark.parametrize("kind", ["truncated-btf"])
def test_suggest_old_bad_input(work, kind):
    ok = work / "sp-ok.txt"
    ok.write_text("ib_create_qp\nmlx5_ib_reg_user_mr\n")
    path = _make_input(kind, work)
    refused(run(BASELINE, "suggest-probes", "--symbols", ok, "--old", path, work=work, timeout=30), "baseline", str(path))


@pytest.mark.parametrize("content,found", [("- a\n- b\n", "list"), (None, "FIFO")])
def test_suggest_probes_set_bad_yaml(work, content, found):
    ok = work / "sp-ok.txt"
    ok.write_text("ib_create_qp\n")
    path = work / f"set-{next(_counter)}.yaml"
    if content is None:
        os.mkfifo(path)
    elif content == "dir":
        path.mkdir()
    else:
        path.write_text(content)
    line = refused(run(BASELINE, "suggest-probes", "--symbols", ok, "--probes", path, work=work, timeout=30),
                   "baseline", str(path))
    assert found in line


@pytest.mark.parametrize("content", [b"\x00\x01\x02binary"])
def test_suggest_reference_bad(work, content):
    ok = work / "sp-ok.txt"
    ok.write_text("ib_create_qp\n")
    path = work / f"ref-{next(_counter)}.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    refused(run(BASELINE, "suggest-probes", "--symbols", ok, "--reference", path, work=work, timeout=30),
            "baseline", str(path))


@pytest.mark.parametrize("kind", ["random"])
def test_suggest_base_btf_bad(work, kind):
    if not Path("/sys/kernel/btf/vmlinux").is_file():
        pytest.skip("no /sys/kernel/btf/vmlinux")
    path = _make_input(kind, work)
    refused(run(BASELINE, "suggest-probes", "--btf", "/sys/kernel/btf/vmlinux", "--base-btf", path, work=work,
                timeout=30), "baseline", str(path), "--base-btf")


# ============================================================================================
# baseline coverage: flags


@pytest.mark.parametrize("week", ["2026-W99", "nan"])
def test_coverage_bad_week(work, dataset, week):
    line = refused(run(BASELINE, "coverage", dataset, "--week", week, "-o", work / "cov-x", work=work),
                   "baseline", "--week")
    assert repr(week) in line
    assert not (work / "cov-x").exists()


@pytest.mark.parametrize("pct", ["nan", "-1"])
def test_coverage_bad_trend_pct(work, dataset, pct):
    refused(run(BASELINE, "coverage", dataset, "--trend-pct", pct, "-o", work / "cov-x", work=work),
            "baseline", "--trend-pct")
    assert not (work / "cov-x").exists()


@pytest.mark.parametrize("kind", ["random", "dir", "missing"])
def test_coverage_bad_nccl_logs(work, dataset, kind):
    path = Path("/dev/null") if kind == "devnull" else _make_input(kind, work)
    refused(run(BASELINE, "coverage", dataset, "--nccl-logs", path, "-o", work / "cov-x", work=work, timeout=30),
            "baseline", str(path))


def test_coverage_nccl_logs_parquet_of_another_table(work, dataset):
    path = dataset / "audit" / "findings.parquet"
    line = refused(run(BASELINE, "coverage", dataset, "--nccl-logs", path, "-o", work / "cov-x", work=work),
                   "baseline", str(path))
    assert "app_failures" in line and "findings" in line


def test_coverage_output_is_a_file(work, dataset):
    target = work / "cov-a-file"
    target.write_text("keep me\n")
    refused(run(BASELINE, "coverage", dataset, "-o", target, work=work), "baseline", str(target))
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("out", ["-"])
def test_coverage_output_dash_or_empty(work, dataset, out):
    refused(run(BASELINE, "coverage", dataset, "-o", out, work=work), "baseline", "-o/--output")


@pytest.mark.parametrize("inside", ["counters"])
def test_coverage_output_inside_dataset_tables(work, dataset, inside):
    target = dataset / inside if inside else dataset
    before = visible_files(dataset / "counters")
    refused(run(BASELINE, "coverage", dataset, "-o", target, work=work), "baseline", str(target))
    assert visible_files(dataset / "counters") == before


@pytest.mark.parametrize("kind", ["fifo"])
def test_coverage_dataset_not_a_directory(work, kind):
    if kind == "devnull":
        path = Path("/dev/null")
    else:
        path = work / f"notds-{next(_counter)}"
        if kind == "file":
            path.write_text("x")
        else:
            os.mkfifo(path)
    refused(run(BASELINE, "coverage", path, work=work, timeout=30), "baseline", str(path))


def test_coverage_missing_dataset_with_week(work):
    path = work / "no-such-dataset"
    refused(run(BASELINE, "coverage", path, "--week", WEEK, "-o", work / "cov-x", work=work), "baseline", str(path))


def test_coverage_missing_dataset_says_missing(work):
    path = work / "no-such-dataset-2"
    line = refused(run(BASELINE, "coverage", path, work=work), "baseline", str(path))
    assert "does not exist" in line or "no such" in line.lower()


# ============================================================================================
# baseline coverage: damaged datasets


def _damaged(work: Path, dataset: Path) -> tuple[Path, Path]:
    copy = work / f"dmg-{next(_counter)}"
    shutil.copytree(dataset, copy, symlinks=True, ignore=shutil.ignore_patterns("reports", "audit"))
    part = sorted((copy / "counters").glob("date=*/host=gpu00002/*.parquet"))[0]
    return copy, part


@pytest.mark.parametrize("damage", ["truncated", "other-table", "directory", "other-version"])
def test_coverage_damaged_counters_part(work, dataset, damage):
    copy, part = _damaged(work, dataset)
    shutil.rmtree(copy / "counter_buckets")  # the summaries would stand in for the damaged part
    if damage == "truncated":
        os.truncate(part, 100)
    elif damage == "zero-bytes":
        os.truncate(part, 0)
    elif damage == "random":
        part.write_bytes(os.urandom(3000))
    elif damage == "other-table":
        shutil.copyfile(dataset / "audit" / "findings.parquet", part)
    elif damage == "directory":
        part.unlink()
        part.mkdir()
    elif damage == "symlink-loop":
        part.unlink()
        os.symlink(part.name, part)
    elif damage == "other-version":
        table = pq.read_table(part)
        meta = dict(table.schema.metadata or {})
        meta[b"tracebase.schema_version"] = b"9"
        pq.write_table(table.replace_schema_metadata(meta), part)
    out = work / f"cov-dmg-{next(_counter)}"
    refused(run(BASELINE, "coverage", copy, "-o", out, work=work), "baseline", str(part))
    assert visible_files(out) == {}


def test_coverage_broken_summary_is_read_around(work, dataset, clean_coverage):
    """docs/architecture.md: a stale or broken summary gives the same tables, just slower."""
    copy, _ = _damaged(work, dataset)
    summary = sorted((copy / "counter_buckets").glob("date=*/host=gpu00002/*.parquet"))[0]
    os.truncate(summary, 100)
    out = work / "cov-broken-summary"
    done = run(BASELINE, "coverage", copy, "-o", out, work=work)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = visible_files(out)
    for name in (f"{WEEK}/coverage_probes.parquet", f"{WEEK}/coverage_groups.parquet", f"{WEEK}/report.md"):
        assert got[name] == clean_coverage[name], name


def test_coverage_without_counters_table(work, dataset):
    copy, _ = _damaged(work, dataset)
    shutil.rmtree(copy / "counters")
    shutil.rmtree(copy / "counter_buckets")
    refused(run(BASELINE, "coverage", copy, "-o", work / "cov-x", work=work), "baseline", str(copy))


# ============================================================================================
# baseline coverage: umask, OS errors, kill -9


@pytest.mark.parametrize("umask,file_mode,dir_mode", [(0o077, 0o600, 0o700), (0o022, 0o644, 0o755)])
def test_coverage_honours_umask(work, dataset, umask, file_mode, dir_mode):
    out = work / f"cov-umask-{umask:o}"
    done = run(BASELINE, "coverage", dataset, "-o", out, work=work, umask=umask)
    assert done.returncode == 0, done.stderr
    seen = 0
    for dirpath, dirnames, filenames in os.walk(out):
        for d in dirnames:
            assert (Path(dirpath) / d).stat().st_mode & 0o777 == dir_mode, (d, oct((Path(dirpath) / d).stat().st_mode))
        for f in filenames:
            mode = (Path(dirpath) / f).stat().st_mode & 0o777
            assert mode == file_mode, (f, oct(mode))
            seen += 1
    assert seen >= 5


def test_coverage_read_only_output(work, dataset):
    with tmpfs(work / "mnt-ro-cov", "ro,size=64k") as mount:
        target = mount / "rep"
        refused(run(BASELINE, "coverage", dataset, "-o", target, work=work), "baseline", str(target))


def test_coverage_full_disk_leaves_nothing(work, dataset):
    with tmpfs(work / "mnt-full-cov", "size=64k") as mount:
        target = mount / "rep"
        line = refused(run(BASELINE, "coverage", dataset, "-o", target, work=work), "baseline", str(target))
        assert "No space left" in line
        assert visible_files(target) == {}


def test_coverage_full_disk_keeps_previous_report(work, dataset, clean_coverage):
    with tmpfs(work / "mnt-full-cov2", "size=2m") as mount:
        target = mount / "rep"
        done = run(BASELINE, "coverage", dataset, "-o", target, work=work)
        assert done.returncode == 0, done.stderr
        assert visible_files(target) == clean_coverage
        fill(mount, 16 << 10)
        line = refused(run(BASELINE, "coverage", dataset, "-o", target, work=work), "baseline", str(target))
        assert "No space left" in line
        assert visible_files(target) == clean_coverage


@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 2.0])
def test_coverage_kill9_fresh_then_rerun(work, dataset, clean_coverage, delay):
    out = work / f"cov-kill-{delay}"
    cmd = [BASELINE, "coverage", str(dataset), "-o", str(out)]
    kill_after(cmd, delay, work)
    partial = visible_files(out)
    for name, digest in partial.items():  # whatever is visible is whole (the report is reproducible)
        assert clean_coverage.get(name) == digest, f"half or foreign file visible after kill -9: {name}"
    done = run(*cmd, work=work)
    assert done.returncode == 0, done.stderr
    assert visible_files(out) == clean_coverage


@pytest.mark.parametrize("delay", [0.4, 1.0])
def test_coverage_kill9_keeps_previous_report(work, dataset, clean_coverage, delay):
    out = work / f"cov-prev-{delay}"
    shutil.copytree(work / "cov-clean", out)
    kill_after([BASELINE, "coverage", str(dataset), "-o", str(out)], delay, work)
    assert visible_files(out) == clean_coverage


# ============================================================================================
# baseline ingest: odd spool contents (quarantined with the reason, the rest ingested, exit 0)

SNAP = "snap-20261128T000400.000Z-000050"


def _quarantined(result: dict, fragment: str) -> str:
    reasons = [q["reason"] for q in result["quarantined"] if fragment in q["path"] or fragment in q["reason"]]
    assert reasons, f"{fragment!r} not quarantined: {result['quarantined']}"
    return reasons[0]


def _odd_entry(sp: Path, kind: str, src: Path) -> str:
    host = sp / "gpu00000"
    name = SNAP
    if kind == "regular-file":
        (host / name).write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(host / name)
    elif kind == "symlink-loop":
        os.symlink(name, host / name)
    elif kind == "symlink-out":
        os.symlink(src, host / name)
    elif kind == "zero-byte-files":
        (host / name).mkdir()
        (host / name / "events.parquet").write_bytes(b"")
        (host / name / "counters.parquet").write_bytes(b"")
    elif kind == "newline-name":
        name = SNAP + "\n"
        shutil.copytree(src, host / name)
    elif kind == "space-name":
        name = SNAP + " copy"
        shutil.copytree(src, host / name)
    elif kind == "seq-past-int64":
        name = "snap-20261128T000400.000Z-99999999999999999999"
        shutil.copytree(src, host / name)
    elif kind == "name-hours-off":
        name = "snap-20261128T090000.000Z-000060"
        shutil.copytree(src, host / name)
    else:
        raise AssertionError(kind)
    return name


@pytest.mark.parametrize("kind,found", [
    ("regular-file", "regular file"), ("fifo", "FIFO"), ("symlink-loop", "symlink"), ("zero-byte-files", "0 bytes"),
    ("newline-name", "snap-YYYY"), ("name-hours-off", "snapshot_time")])
def test_ingest_odd_snapshot_is_quarantined(work, spool, kind, found):
    sp = small_spool(work, spool)
    name = _odd_entry(sp, kind, extra_snapshot(spool))
    ds, q = work / f"ing-{next(_counter)}", work / f"q-{next(_counter)}"
    result = ingest_json(run(BASELINE, "ingest", sp, ds, "--quarantine", q, "--json", work=work, timeout=60))
    reason = _quarantined(result, name.split("\n")[0].split(" ")[0])
    assert found in reason, reason
    assert result["snapshots"] == 3
    assert len(table_rows(ds, "counters")) > 0


@pytest.mark.parametrize("fault", ["other-schema-version", "other-table"])
def test_ingest_snapshot_of_another_kind(work, spool, dataset, fault):
    sp = small_spool(work, spool)
    snap = sorted((sp / "gpu00000").iterdir())[-1]
    if fault == "other-schema-version":
        target = snap / "counters.parquet"
        table = pq.read_table(target)
        meta = dict(table.schema.metadata or {})
        meta[b"tracebase.schema_version"] = b"9"
        pq.write_table(table.replace_schema_metadata(meta), target)
        want = "schema version"
    else:
        target = snap / "events.parquet"
        shutil.copyfile(dataset / "audit" / "findings.parquet", target)
        want = "events"
    ds, q = work / f"ing-{next(_counter)}", work / f"q-{next(_counter)}"
    result = ingest_json(run(BASELINE, "ingest", sp, ds, "--quarantine", q, "--json", work=work))
    reason = _quarantined(result, snap.name)
    assert want in reason and target.name in reason, reason


@pytest.mark.parametrize("host", ["gpu 01", "gpu\n03"])
def test_ingest_odd_host_directory_is_quarantined(work, spool, host):
    sp = small_spool(work, spool)
    src = extra_snapshot(spool)
    (sp / host).mkdir()
    shutil.copytree(src, sp / host / src.name)
    ds, q = work / f"ing-{next(_counter)}", work / f"q-{next(_counter)}"
    result = ingest_json(run(BASELINE, "ingest", sp, ds, "--quarantine", q, "--json", work=work))
    reason = _quarantined(result, "host name")
    assert "expected a host name" in reason
    assert sorted(p.name for p in (ds / "counters").glob("date=*/*")) == ["host=gpu00000"]


def test_ingest_non_ascii_digit_in_snapshot_name(work, spool):
    sp = small_spool(work, spool)
    src = extra_snapshot(spool)
    odd = src.name[:-1] + "\u0664"
    shutil.copytree(src, sp / "gpu00000" / odd)
    ds, q = work / f"ing-{next(_counter)}", work / f"q-{next(_counter)}"
    result = ingest_json(run(BASELINE, "ingest", sp, ds, "--quarantine", q, "--json", work=work))
    _quarantined(result, odd)


def test_ingest_snapshot_missing_events_is_a_warning(work, spool):
    """docs/airflow.md: a snapshot directory without one of its two files is ingested and named in
    the run's warnings (a CLI warning line on stderr)."""
    sp = small_spool(work, spool)
    src = extra_snapshot(spool)
    (sp / "gpu00000" / src.name).mkdir()
    shutil.copyfile(src / "counters.parquet", sp / "gpu00000" / src.name / "counters.parquet")
    ds, q = work / f"ing-{next(_counter)}", work / f"q-{next(_counter)}"
    proc = run(BASELINE, "ingest", sp, ds, "--quarantine", q, "--json", work=work)
    result = ingest_json(proc)
    assert any(src.name in w and "events.parquet" in w for w in result["warnings"]), result["warnings"]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("baseline") and src.name in lines[0], proc.stderr


# ============================================================================================
# baseline ingest: bad arguments


@pytest.mark.parametrize("kind", ["fifo"])
def test_ingest_spool_not_a_directory(work, kind):
    if kind == "devnull":
        path = Path("/dev/null")
    else:
        path = work / f"notspool-{next(_counter)}"
        if kind == "file":
            path.write_text("x")
        elif kind == "fifo":
            os.mkfifo(path)
    refused(run(BASELINE, "ingest", path, work / "ing-x", work=work, timeout=30), "baseline", str(path))
    assert not (work / "ing-x").exists()


def test_ingest_dataset_is_the_spool(work, spool):
    sp = small_spool(work, spool)
    refused(run(BASELINE, "ingest", sp, sp, work=work), "baseline", str(sp))
    assert len(list((sp / "gpu00000").iterdir())) == 3


def test_ingest_dataset_inside_spool(work, spool):
    sp = small_spool(work, spool)
    refused(run(BASELINE, "ingest", sp, sp / "gpu00000", work=work), "baseline", str(sp / "gpu00000"))
    assert len(list((sp / "gpu00000").iterdir())) == 3


def test_ingest_quarantine_inside_spool(work, spool):
    sp = small_spool(work, spool)
    refused(run(BASELINE, "ingest", sp, work / "ing-y", "--quarantine", sp / "q", work=work), "baseline", str(sp / "q"))


def test_ingest_arguments_swapped(work, dataset):
    before = visible_files(dataset / "counters")
    refused(run(BASELINE, "ingest", dataset, work / "ing-z", work=work), "baseline", str(dataset))
    assert visible_files(dataset / "counters") == before


@pytest.mark.parametrize("flag,value", [("-j", "0"), ("--compact-days-after", "36501")])
def test_ingest_bad_numbers(work, spool, flag, value):
    sp = small_spool(work, spool)
    refused(run(BASELINE, "ingest", sp, work / "ing-n", flag, value, work=work), "baseline", flag)
    assert len(list((sp / "gpu00000").iterdir())) == 3


def test_ingest_read_only_dataset(work, spool):
    sp = small_spool(work, spool)
    with tmpfs(work / "mnt-ro-ing", "ro,size=64k") as mount:
        refused(run(BASELINE, "ingest", sp, mount / "ds", "--quarantine", work / "q-ro", work=work),
                "baseline", str(mount / "ds"))
    assert len(list((sp / "gpu00000").iterdir())) == 3


def test_ingest_full_disk_keeps_spool_and_rerun_equals_clean(work, spool):
    sp = small_spool(work, spool, snapshots=64)
    clean_sp = small_spool(work, spool, snapshots=64)
    clean = work / "ing-clean-64"
    assert run(BASELINE, "ingest", clean_sp, clean, "--quarantine", work / "q-c64", work=work).returncode == 0
    with tmpfs(work / "mnt-full-ing", "size=128k") as mount:
        ds = mount / "ds"
        ds.mkdir()
        fill(mount, 20 << 10)
        line = refused(run(BASELINE, "ingest", sp, ds, "--quarantine", work / "q-full", work=work), "baseline", str(ds))
        assert "No space left" in line
        # snapshots gone from the spool were committed: the rerun below must give the clean dataset
        (mount / "filler").unlink()
        done = run(BASELINE, "ingest", sp, ds, "--quarantine", work / "q-full", work=work)
        assert done.returncode == 0, done.stderr
        for table in ("events", "counters"):
            assert table_rows(ds, table) == table_rows(clean, table), table


# ============================================================================================
# baseline ingest: kill -9


@pytest.fixture(scope="module")
def kill_spool_clean(work: Path, spool: Path) -> tuple[Path, dict[str, list[str]]]:
    src = work / "kill-spool-src"
    src.mkdir()
    for host in ("gpu00000", "gpu00001", "gpu00002"):
        shutil.copytree(spool / host, src / host)
    sp = work / "kill-spool-clean"
    shutil.copytree(src, sp)
    ds = work / "ing-kill-clean"
    done = run(BASELINE, "ingest", sp, ds, "--quarantine", work / "q-kill-clean", work=work)
    assert done.returncode == 0, done.stderr
    return src, {t: table_rows(ds, t) for t in ("events", "counters")}


@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0, 1.5])
def test_ingest_kill9_then_rerun_equals_clean(work, kill_spool_clean, delay):
    src, clean = kill_spool_clean
    sp = work / f"kill-spool-{delay}"
    shutil.copytree(src, sp)
    ds = work / f"ing-kill-{delay}"
    q = work / f"q-kill-{delay}"
    cmd = [BASELINE, "ingest", str(sp), str(ds), "--quarantine", str(q)]
    kill_after(cmd, delay, work)
    for path in ds.rglob("*.parquet") if ds.exists() else ():
        rel = path.relative_to(ds).parts
        if any(part.startswith(".") for part in rel):
            continue
        pq.read_metadata(path)  # a visible part is a whole Parquet file
    done = run(*cmd, work=work)
    assert done.returncode == 0, done.stderr
    for table in ("events", "counters"):
        assert table_rows(ds, table) == clean[table], f"{table} after kill at {delay}s + rerun differs from clean"
    assert not q.exists() or visible_files(q) == {}, visible_files(q)


# ============================================================================================
# baseline report: damaged audit directories


def _audit_copy(work: Path, dataset: Path) -> Path:
    copy = work / f"audit-{next(_counter)}"
    shutil.copytree(dataset / "audit", copy)
    return copy


@pytest.mark.parametrize("table", ["clusters", "host_alerts"])
def test_report_missing_table(work, dataset, table):
    audit = _audit_copy(work, dataset)
    (audit / f"{table}.parquet").unlink()
    refused(run(BASELINE, "report", audit, work=work), "baseline", f"{table}.parquet")


@pytest.mark.parametrize("damage", ["other-table", "truncated", "directory", "missing-column"])
def test_report_damaged_table(work, dataset, damage):
    audit = _audit_copy(work, dataset)
    target = audit / "clusters.parquet"
    if damage == "other-table":
        shutil.copyfile(audit / "findings.parquet", target)
    elif damage == "truncated":
        os.truncate(target, 200)
    elif damage == "zero-bytes":
        os.truncate(target, 0)
    elif damage == "directory":
        target.unlink()
        target.mkdir()
    elif damage == "symlink-loop":
        target.unlink()
        os.symlink(target.name, target)
    elif damage == "random":
        target.write_bytes(os.urandom(5000))
    elif damage == "other-version":
        table = pq.read_table(target)
        meta = dict(table.schema.metadata or {})
        meta[b"tracebase.schema_version"] = b"7"
        pq.write_table(table.replace_schema_metadata(meta), target)
    elif damage == "missing-column":
        table = pq.read_table(target)
        pq.write_table(table.drop_columns([table.column_names[0]]).replace_schema_metadata(table.schema.metadata),
                       target)
    refused(run(BASELINE, "report", audit, work=work), "baseline", "clusters.parquet")


@pytest.mark.parametrize("kind", ["file"])
def test_report_not_an_audit_directory(work, kind):
    if kind == "devnull":
        path = Path("/dev/null")
    else:
        path = work / f"notaudit-{next(_counter)}"
        if kind == "file":
            path.write_text("x")
        else:
            path.mkdir()
    refused(run(BASELINE, "report", path, work=work), "baseline", str(path))


def test_report_html_is_an_input(work, dataset):
    audit = _audit_copy(work, dataset)
    before = (audit / "findings.parquet").read_bytes()
    refused(run(BASELINE, "report", audit, "--html", audit / "findings.parquet", work=work),
            "baseline", "findings.parquet")
    assert (audit / "findings.parquet").read_bytes() == before


def _findings_dir(work: Path, dataset: Path, latest: bytes) -> Path:
    root = work / f"findings-{next(_counter)}"
    shutil.copytree(dataset / "audit", root / "20261128T0000")
    (root / "LATEST").write_bytes(latest)
    return root


def test_report_pipeline_findings_dir_reads_latest(work, dataset):
    root = _findings_dir(work, dataset, b"20261128T0000\n")
    done = run(BASELINE, "report", root, "--json", work=work)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


@pytest.mark.parametrize("command", ["report", "evaluate"])
def test_findings_dir_latest_not_utf8(work, dataset, command):
    root = _findings_dir(work, dataset, b"20261128T0000\xff\n")
    args = (root,) if command == "report" else (dataset, "--findings", root)
    refused(run(BASELINE, command, *args, work=work), "baseline", "LATEST")


def test_report_latest_names_missing_run(work, dataset):
    root = _findings_dir(work, dataset, b"20990101T0000\n")
    refused(run(BASELINE, "report", root, work=work), "baseline", "LATEST")


# ============================================================================================
# baseline evaluate: truth tables of the wrong shape


def _eval_copy(work: Path, dataset: Path) -> tuple[Path, Path]:
    copy = work / f"eval-{next(_counter)}"
    copy.mkdir()
    shutil.copytree(dataset / "truth", copy / "truth")
    shutil.copytree(dataset / "audit", copy / "audit")
    part = sorted((copy / "truth").glob("date=*/host=gpu00003/*.parquet"))[0]
    return copy, part


@pytest.mark.parametrize("damage,found", [("other-table", "findings"), ("missing-column", "no such column"),
                                          ("strings", "string")])
def test_evaluate_truth_wrong_shape(work, dataset, damage, found):
    copy, part = _eval_copy(work, dataset)
    if damage == "other-table":
        shutil.copyfile(dataset / "audit" / "findings.parquet", part)
    elif damage == "truncated":
        os.truncate(part, 300)
    else:
        table = pq.read_table(part)
        if damage == "missing-column":
            table = table.drop_columns(["held_out"]).replace_schema_metadata(table.schema.metadata)
        else:
            table = pa.table({c: pa.array([None if v is None else str(v) for v in table.column(c).to_pylist()],
                                          type=pa.string()) for c in table.column_names},
                             metadata=table.schema.metadata)
        pq.write_table(table, part)
    line = refused(run(BASELINE, "evaluate", copy, work=work), "baseline", str(part))
    assert found in line


def test_evaluate_without_truth(work, dataset):
    copy, _ = _eval_copy(work, dataset)
    shutil.rmtree(copy / "truth")
    refused(run(BASELINE, "evaluate", copy, work=work), "baseline", str(copy), "truth")


def test_evaluate_misnamed_date_partition(work, dataset):
    copy, part = _eval_copy(work, dataset)
    (copy / "truth" / "dateX").mkdir()
    shutil.copyfile(part, copy / "truth" / "dateX" / "part-00000.parquet")
    refused(run(BASELINE, "evaluate", copy, work=work), "baseline", "dateX")


def test_evaluate_findings_empty_argument(work, dataset):
    line = refused(run(BASELINE, "evaluate", dataset, "--findings", "", work=work), "baseline", "--findings")
    assert "''" in line, line


def test_evaluate_truth_with_no_rows(work, dataset):
    copy, _ = _eval_copy(work, dataset)
    for part in (copy / "truth").rglob("*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.slice(0, 0), part)
    refused(run(BASELINE, "evaluate", copy, work=work), "baseline", "truth")


# ============================================================================================
# baseline allowlist learn / diff --allowlist: YAML valid as YAML, wrong as an allowlist

GOOD = [RECORDINGS / "good0.parquet", RECORDINGS / "good1.parquet"]
BAD = RECORDINGS / "bad.parquet"

_ENTRY = "  - id: curated-x\n    source: curated\n    reason: r\n    probe: openat\n    errno: ENOENT\n"

ALLOWLISTS = {
    "list-at-top": ("- a\n- b\n", "list"),
    "version-as-string": ('version: "1"\nentries: []\n', "version"),
    "errno-unknown": (_ENTRY.join(["version: 1\nentries:\n", ""]).replace("ENOENT", "ENOTANERRNO"), "ENOTANERRNO"),
    "errno-a-number": (_ENTRY.join(["version: 1\nentries:\n", ""]).replace("ENOENT", "2"), "errno"),
    "support-strings": ("version: 1\nentries:\n  - id: learned-x\n    source: learned\n    probe: openat\n"
                        "    errno: ENOENT\n    context: x\n    support:\n      runs: \"2\"\n      total: two\n"
                        "    status: active\n", "support"),
    "duplicate-top-key": ("version: 1\nversion: 1\nentries: []\n", "version"),
    "duplicate-id": ("version: 1\nentries:\n" + _ENTRY + _ENTRY, "curated-x"),
    "python-tag": ('!!python/object/apply:os.system ["echo PWNED"]\n', "python"),
}


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="tests/recordings/sqlite_rw_fallback not in this checkout")
@pytest.mark.parametrize("name", sorted(ALLOWLISTS))
def test_allowlist_learn_refuses_wrong_yaml(work, name):
    text, found = ALLOWLISTS[name]
    target = work / f"allow-{name}.yaml"
    target.write_text(text)
    line = refused(run(BASELINE, "allowlist", "learn", *GOOD, "-o", target, work=work), "baseline", str(target))
    assert found in line
    assert target.read_text() == text  # never rewritten when refused


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="tests/recordings/sqlite_rw_fallback not in this checkout")
@pytest.mark.parametrize("name", ["errno-unknown"])
def test_diff_allowlist_refuses_wrong_yaml(work, name):
    text, found = ALLOWLISTS[name]
    target = work / f"diffallow-{name}.yaml"
    target.write_text(text)
    line = refused(run(BASELINE, "diff", *GOOD, BAD, "--allowlist", target, work=work), "baseline", str(target))
    assert found in line


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="tests/recordings/sqlite_rw_fallback not in this checkout")
def test_allowlist_learn_ten_megabytes_of_comments(work):
    target = work / "allow-huge.yaml"
    text = "version: 1\nentries: []\n" + "#\n" * 5_000_000
    target.write_text(text)
    line = refused(run(BASELINE, "allowlist", "learn", *GOOD, "-o", target, work=work, timeout=30),
                   "baseline", str(target))
    assert "lines" in line
    assert target.stat().st_size == len(text)


def _alias_list(depth: int) -> str:
    names = "abcdefghi"[:depth]
    parts = ["&a [x,x,x,x,x,x,x,x,x]"]
    parts += [f"&{n} [" + ",".join([f"*{p}"] * 9) + "]" for p, n in zip(names, names[1:], strict=False)]
    return "[" + ", ".join(parts) + "]"


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="tests/recordings/sqlite_rw_fallback not in this checkout")
def test_allowlist_wrong_type_error_is_short(work):
    target = work / "allow-nested.yaml"
    target.write_text("version: 1\nentries:\n  - id: curated-x\n    source: curated\n    probe: openat\n"
                      "    errno: ENOENT\n    reason: " + _alias_list(5) + "\n")
    line = refused(run(BASELINE, "allowlist", "learn", *GOOD, "-o", target, work=work, timeout=30),
                   "baseline", str(target), "reason")
    assert len(line) < 2000, f"{len(line):,} characters"


def _bomb_refused_promptly(work: Path, *args: object, target: Path) -> None:
    try:
        proc = run(BASELINE, *args, work=work, timeout=4)
    except subprocess.TimeoutExpired:
        pytest.fail("no answer within 4 s to an alias bomb (seen: > 30 s and > 1.2 GB resident)")
    refused(proc, "baseline", str(target))


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="tests/recordings/sqlite_rw_fallback not in this checkout")
@pytest.mark.parametrize("command", ["learn", "diff"])
def test_allowlist_alias_bomb(work, command):
    target = work / f"allow-bomb-{command}.yaml"
    target.write_text("version: 1\nentries:\n  - id: curated-x\n    source: curated\n    probe: openat\n"
                      "    errno: ENOENT\n    reason: " + _alias_list(9) + "\n")
    if command == "learn":
        _bomb_refused_promptly(work, "allowlist", "learn", *GOOD, "-o", target, target=target)
    else:
        _bomb_refused_promptly(work, "diff", *GOOD, BAD, "--allowlist", target, target=target)


# ============================================================================================
# tracer: flags with bad values (checked before anything is attached)


@pytest.mark.parametrize("value", ["-1s", "1e309", "nan", ""])
def test_tracer_record_bad_duration(work, value):
    line = refused(run(TRACER, "record", "-d", value, "-p", 999999, "-o", work / "tr.parquet", work=work), "tracer",
                   "-d/--duration")
    assert repr(value) in line
    assert not (work / "tr.parquet").exists()


def test_tracer_record_duration_with_space_means_the_same(work):
    """(Changed by the lead from a strict xfail expecting a refusal: '5 m' is accepted as systemd's
    time spans accept it, and means five minutes, as the documented '5m' does -- the reading is
    the same, so nothing is misread.)"""
    from tracer import units

    assert units.parse_duration("5 m", "-d/--duration") == units.parse_duration("5m", "-d/--duration") == 300.0
    refused(run(TRACER, "record", "-d", "5 m", "-p", 999999, "-o", work / "tr.parquet", work=work), "tracer",
            "-p 999999")


@pytest.mark.parametrize("value", ["-1s", "2h"])
def test_tracer_run_bad_interval(work, value):
    refused(run(TRACER, "run", "-i", value, "-d", "1s", "--spool", work / "tr-spool", work=work), "tracer",
            "-i/--interval")
    assert not (work / "tr-spool").exists()


@pytest.mark.parametrize("flag,value", [("--linger", "-1"), ("--ringbuf-mb", "0")])
def test_tracer_record_bad_flag_values(work, flag, value):
    refused(run(TRACER, "record", flag, value, "-p", 999999, "-o", work / "tr.parquet", work=work), "tracer", flag)


@pytest.mark.parametrize("value", ["abc"])
def test_tracer_record_bad_pid_syntax(work, value):
    refused(run(TRACER, "record", "-p", value, "-d", "1s", "-o", work / "tr.parquet", work=work), "tracer", "-p")


@pytest.mark.parametrize("command", ["run"])
def test_tracer_pid_that_does_not_exist(work, command):
    pid = 4_000_000  # above pid_max's ceiling (2^22)
    extra = ["-o", work / "tr.parquet"] if command == "record" else ["--spool", work / "tr-spool"]
    refused(run(TRACER, command, "-p", pid, "-d", "1s", *extra, work=work), "tracer", f"{pid}")


@pytest.mark.parametrize("command", ["record", "run"])
def test_tracer_pid_of_kernel_thread(work, command):
    comm = Path("/proc/2/comm")
    if not comm.exists() or comm.read_text().strip() != "kthreadd" or Path("/proc/2/cmdline").read_bytes():
        pytest.skip("pid 2 is not kthreadd here")
    extra = ["-o", work / "tr.parquet"] if command == "record" else ["--spool", work / "tr-spool"]
    line = refused(run(TRACER, command, "-p", 2, "-d", "1s", *extra, work=work), "tracer", "2")
    assert "kernel thread" in line


def test_tracer_record_pid_of_zombie(work):
    child = subprocess.Popen(["true"])
    try:
        for _ in range(100):
            if Path(f"/proc/{child.pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                break
            time.sleep(0.02)
        refused(run(TRACER, "record", "-p", child.pid, "-d", "100ms", "-o", work / "tr.parquet", work=work),
                "tracer", f"-p {child.pid}")
    finally:
        child.wait()


def test_tracer_record_pid_of_thread(work):
    code = ("import threading, time\n"
            "def f():\n    print(threading.get_native_id(), flush=True); time.sleep(30)\n"
            "threading.Thread(target=f, daemon=True).start(); time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(proc.stdout.readline())
        line = refused(run(TRACER, "record", "-p", tid, "-d", "100ms", "-o", work / "tr.parquet", work=work),
                       "tracer", f"-p {tid}")
        assert str(proc.pid) in line
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "30"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("host", ["a/b"])
def test_tracer_record_bad_host(work, sleeper, host):
    refused(run(TRACER, "record", "--host", host, "-d", "100ms", "-p", sleeper, "-o", work / "tr.parquet", work=work),
            "tracer", "--host")
    assert not (work / "tr.parquet").exists()


@pytest.mark.parametrize("out", ["-"])
def test_tracer_record_output_dash_or_empty(work, out):
    refused(run(TRACER, "record", "-o", out, "-p", 999999, work=work), "tracer", "-o/--output")


def test_tracer_record_pid_and_command(work, sleeper):
    refused(run(TRACER, "record", "-p", sleeper, "-o", work / "tr.parquet", "--", "true", work=work), "tracer",
            f"-p {sleeper}")
