"""A blind robustness battery of the pipeline side: `baseline ingest` of spools with odd snapshot
files (a half-written temporary, a future schema version, a host column naming '/', '..' or
nothing, a host directory that is no host name, duplicated snapshots, snapshots named in 1970 or
2200, symbolic links out of the spool, a file of another user read as nobody), ingest onto a
read-only dataset or with a full quarantine volume, two ingests at once, kill -9 of ingest and
of both compactions at several moments, an audit during a day compaction, `report`/`evaluate`
on partial, empty or other-version audit outputs, an audit with another fleet's model, and the
DAGs run as `airflow dags test` with odd configuration.

Every case runs the real commands (no mocks). A failing case: exit status 2, one line on stderr
naming the path or flag, no traceback, the inputs unchanged (sha256 before/after) and no partial
output; a valid odd input: exit 0, nothing lost (rows equal a clean run's). Mounts are made in a
private mount namespace (`unshare --mount`) and unmounted (`umount -l`) by the same script.

Written blind (from the README, docs/architecture.md, the commands' --help, tracer/schema.py and
dags/*.py). Its eight first failures, four faults, were fixed with it: a snapshot sequence number
past int64 (ingested, then every day compaction crashed); a snapshot whose name's date is not its
counters' (filed under 1970 or 2200); a file named like a snapshot quarantined as a misnamed one;
ingest as a user who may not empty the spool (its snapshots stayed for good, silently), and a
quarantine's reason left for a snapshot it could not move."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
AIRFLOW = str(BIN / "airflow")
LOCK = ".tracebase.lock"
NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounts, chown and setpriv need root")
SNAP3 = "snap-20261128T000100.000Z-000003"  # a snapshot of host gpu00000 in the small spool
WEEK = "2026-W48"


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def run(args, *, cwd=None, env=None, timeout=120, user=None):
    cmd = [BASELINE, *map(str, args)]
    if user == "nobody":
        tools_run_as_nobody()
        cmd = [*NOBODY, *cmd]
    return subprocess.run(cmd, cwd=cwd, env=env if env is not None else os.environ.copy(), capture_output=True,
                          text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)


def start(args) -> subprocess.Popen:
    return subprocess.Popen([BASELINE, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True)


def in_mount_ns(script: str, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, errors="replace", timeout=timeout)


def tail(p) -> str:
    lines = (p.stderr or "").strip().splitlines()
    return f"exit {p.returncode}; stderr tail: {lines[-3:]}"


def assert_refused(p, *names: str) -> None:
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode == 2, tail(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, tail(p)
    for n in names:
        assert n in lines[0], (n, tail(p))


def assert_ok(p) -> None:
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode == 0, tail(p)


def digest(path: Path) -> dict[str, str]:
    path = Path(path)
    if path.is_file():
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    out = {}
    for p in sorted(path.rglob("*")):
        if p.name == LOCK:
            continue
        if p.is_symlink():
            out[str(p.relative_to(path))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def rows(ds: Path) -> dict[str, int]:
    """Rows a reader sees in each table (reading every visible file: a half file fails here)."""
    from tracer.schema import dataset_files, read

    return {t: read(dataset_files(ds, t), t).height if dataset_files(ds, t) else 0 for t in ("events", "counters")}


def visible_debris(ds: Path) -> list[str]:
    """Files a reader of a table could take for data that are not finished Parquet files."""
    out = []
    for table in ("events", "counters", "counter_buckets"):
        for p in (Path(ds) / table).rglob("*"):
            rel = p.relative_to(ds)
            if any(part.startswith(".") for part in rel.parts):
                continue  # readers skip dot-named entries
            if p.is_file() and not p.name.endswith(".parquet"):
                out.append(str(rel))
    return out


def snapshots(spool: Path) -> list[str]:
    return sorted(str(p.relative_to(spool)) for p in Path(spool).glob("*/snap-*") if p.is_dir())


def week_invocations(ds: Path, out: Path) -> int:
    p = run(["coverage", ds, "--week", WEEK, "-o", out, "--json"])
    assert_ok(p)
    t = pq.read_table(out / WEEK / "coverage_probes.parquet")
    return sum(x or 0 for x in t["invocations"].to_pylist())


def set_column(path: Path, name: str, value) -> None:
    t = pq.read_table(path)
    meta = t.schema.metadata
    i = t.schema.get_field_index(name)
    t = t.set_column(i, t.schema.field(i), pa.array([value] * t.num_rows, t.schema.field(i).type))
    pq.write_table(t.replace_schema_metadata(meta), path)


def set_footer(path: Path, key: bytes, value: bytes) -> None:
    real = Path(os.path.realpath(path))
    t = pq.read_table(real)
    meta = dict(t.schema.metadata or {})
    meta[key] = value
    real.unlink()
    pq.write_table(t.replace_schema_metadata(meta), real)


# ---------------------------------------------------------------------------------------------
# fixtures: a small spool and its clean ingest; a larger one for the kill and concurrency cases
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("pbsmall")
    assert_ok(run(["simulate", "--hosts", "2", "--hours", "0.05", "--seed", "1", "--spool", "-o", root / "sim"]))
    spool = root / "sim" / "spool"
    assert (spool / "gpu00000" / SNAP3).is_dir()
    clean = root / "clean"
    assert_ok(run(["ingest", spool, clean, "--keep-spool", "--quarantine", root / "q"]))
    return {"spool": spool, "clean": clean, "rows": rows(clean), "snaps": snapshots(spool),
            "week": week_invocations(clean, root / "cov")}


@pytest.fixture()
def spool(small, tmp_path) -> Path:
    s = tmp_path / "spool"
    shutil.copytree(small["spool"], s, symlinks=True)
    return s


@pytest.fixture(scope="module")
def medium(tmp_path_factory):
    root = tmp_path_factory.mktemp("pbmed")
    assert_ok(run(["simulate", "--hosts", "8", "--hours", "0.5", "--seed", "3", "--spool", "-o", root / "sim"]))
    spool = root / "sim" / "spool"
    clean = root / "clean"
    t0 = time.monotonic()
    assert_ok(run(["ingest", spool, clean, "--keep-spool", "--quarantine", root / "q"]))
    took = time.monotonic() - t0
    return {"root": root, "spool": spool, "clean": clean, "rows": rows(clean), "took": took,
            "snaps": snapshots(spool)}


@pytest.fixture()
def mspool(medium, tmp_path) -> Path:
    s = tmp_path / "mspool"
    shutil.copytree(medium["spool"], s, symlinks=True)
    return s


@pytest.fixture()
def shared_dir():
    d = Path(tempfile.mkdtemp(prefix="pb-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# odd snapshot files in the spool
# ---------------------------------------------------------------------------------------------
def test_half_written_hidden_temporary_in_the_spool_is_not_ingested(small, spool, tmp_path):
    tmp = spool / "gpu00000" / ".snap-20261128T000400.000Z-000009.tmp"
    tmp.mkdir()
    whole = (spool / "gpu00000" / SNAP3 / "events.parquet").read_bytes()
    (tmp / "events.parquet").write_bytes(whole[: len(whole) // 3])
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert rows(tmp_path / "ds") == small["rows"]
    assert visible_debris(tmp_path / "ds") == []
    assert snapshots(spool) == []


def test_truncated_counters_file_is_quarantined_with_its_reason_and_bytes(small, spool, tmp_path):
    f = spool / "gpu00000" / SNAP3 / "counters.parquet"
    f.write_bytes(f.read_bytes()[:500])
    before = hashlib.sha256(f.read_bytes()).hexdigest()
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    q = tmp_path / "q" / "gpu00000" / SNAP3 / "counters.parquet"
    assert hashlib.sha256(q.read_bytes()).hexdigest() == before  # nothing lost: the bytes kept
    assert "counters.parquet" in Path(f"{q}.reason").read_text()
    assert rows(tmp_path / "ds")["events"] == small["rows"]["events"]


def test_snapshot_of_a_future_schema_version_is_quarantined_naming_the_version(small, spool, tmp_path):
    f = spool / "gpu00000" / SNAP3 / "counters.parquet"
    set_footer(f, b"tracebase.schema_version", b"3")
    before = hashlib.sha256(f.read_bytes()).hexdigest()
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert "schema version 3" in p.stdout + p.stderr, tail(p)
    q = tmp_path / "q" / "gpu00000" / SNAP3 / "counters.parquet"
    assert hashlib.sha256(q.read_bytes()).hexdigest() == before
    assert "schema version 3" in Path(f"{q}.reason").read_text()
    got = rows(tmp_path / "ds")
    assert got["events"] == small["rows"]["events"] and got["counters"] < small["rows"]["counters"]


@pytest.mark.parametrize("host", ["../evil", "a/b", "", "..", "gpu00001"])
def test_host_column_naming_another_place_stays_in_its_spool_hosts_partition(small, spool, tmp_path, host):
    """The host column of a snapshot's files says '../evil', 'a/b', nothing, '..' or another
    host: the spool directory names the host; no partition is made outside host=gpu00000/1 and
    nothing is written outside the dataset and the quarantine."""
    for f in (spool / "gpu00000" / SNAP3).glob("*.parquet"):
        set_column(f, "host", host)
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode in (0, 2), tail(p)
    if p.returncode == 2:
        assert_refused(p, SNAP3)
    assert sorted(x.name for x in tmp_path.iterdir()) in (["ds", "q", "spool"], ["ds", "spool"]), list(tmp_path.iterdir())
    parts = {d.name for d in (tmp_path / "ds").glob("*/date=*/*") if d.is_dir()}
    assert parts <= {"host=gpu00000", "host=gpu00001"}, parts
    if p.returncode == 0:
        from tracer.schema import dataset_files, read

        hosts = set(read(dataset_files(tmp_path / "ds", "counters"), "counters")["host"].to_list())
        assert hosts <= {"gpu00000", "gpu00001"}, hosts


@pytest.mark.parametrize("name", ["gpu[0]", "host=gpu9", "date=2026-11-28"])
def test_spool_host_directory_that_is_no_host_name_is_kept_not_ingested(small, spool, tmp_path, name):
    (spool / "gpu00001").rename(spool / name)
    theirs = digest(spool / name)
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert name in p.stdout + p.stderr, tail(p)
    parts = {d.name for d in (tmp_path / "ds").glob("*/date=*/*") if d.is_dir()}
    assert parts == {"host=gpu00000"}, parts
    # nothing of the odd host lost: each of its files is in the spool or the quarantine
    kept = {k: v for k, v in digest(spool / name).items()}
    quarantined = digest(tmp_path / "q" / name) if (tmp_path / "q" / name).exists() else {}
    for rel, h in theirs.items():
        assert kept.get(rel) == h or quarantined.get(rel) == h, rel


def test_duplicated_snapshots_count_once(small, spool, tmp_path):
    host = spool / "gpu00000"
    shutil.copytree(host / SNAP3, host / "snap-20261128T000100.000Z-000099")
    shutil.copytree(host / "snap-20261128T000110.000Z-000005", host / "snap-20261128T000111.000Z-000005")
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert week_invocations(tmp_path / "ds", tmp_path / "cov") == small["week"]
    assert rows(tmp_path / "ds")["events"] == small["rows"]["events"]


@pytest.mark.parametrize("stamp", ["19700101T000000.000Z", "22000101T000000.000Z"])
def test_snapshot_named_in_another_century_loses_nothing(small, spool, tmp_path, stamp):
    """The snapshot's name (the tracer's wall clock, which steps) says 1970 or 2200; its rows say
    2026-11-28. Either it is refused to quarantine with the reason, or its rows are where a
    reader of their week finds them: nothing silently drops out of the week's report."""
    host = spool / "gpu00000"
    (host / SNAP3).rename(host / f"snap-{stamp}-000003")
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    if (tmp_path / "q").exists() and any((tmp_path / "q").rglob("*.reason")):
        return  # refused visibly, with the reason: nothing silently lost
    assert week_invocations(tmp_path / "ds", tmp_path / "cov") == small["week"]
    assert stamp[:4] not in p.stdout, p.stdout


@pytest.mark.parametrize("seq", ["9223372036854775808", "18446744073709551621"])
def test_snapshot_sequence_number_past_64_bits_does_not_wedge_the_day_compaction(small, spool, tmp_path, seq):
    host = spool / "gpu00000"
    (host / SNAP3).rename(host / f"snap-20261128T000100.000Z-{seq}")
    ds = tmp_path / "ds"
    p = run(["ingest", spool, ds, "--keep-spool", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run(["ingest", empty, ds, "--quarantine", tmp_path / "q", "--compact-days-after", "1"])
    assert "internal error" not in p.stderr, tail(p)
    assert_ok(p)
    assert list(ds.glob("events/date=*/day-*.parquet")), "no day file"
    got = rows(ds)
    quarantined = (tmp_path / "q").exists() and any((tmp_path / "q").rglob("*.reason"))
    assert got == small["rows"] or quarantined, got
    # the re-sent spool is recognised as already ingested (the day manifest holds it)
    p = run(["ingest", spool, ds, "--keep-spool", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert rows(ds) == got


@pytest.mark.parametrize("kind", ["regular file", "FIFO"])
def test_non_directory_named_like_a_snapshot_is_quarantined_saying_what_it_is(small, spool, tmp_path, kind):
    odd = spool / "gpu00000" / "snap-20261128T000400.000Z-000020"
    if kind == "FIFO":
        os.mkfifo(odd)
    else:
        odd.write_text("x\n")
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"], timeout=60)
    assert_ok(p)
    assert rows(tmp_path / "ds") == small["rows"]
    reason = (tmp_path / "q" / "gpu00000" / f"{odd.name}.reason").read_text()
    assert odd.name in reason and ("FIFO" if kind == "FIFO" else "regular file") in reason, reason


@pytest.mark.parametrize("what", ["snapshot directory", "file"])
def test_symlink_out_of_the_spool_is_not_followed_and_its_target_untouched(small, spool, tmp_path, what):
    outside = tmp_path / "outside"
    outside.mkdir()
    snap = spool / "gpu00000" / SNAP3
    if what == "snapshot directory":
        snap.rename(outside / SNAP3)
        snap.symlink_to(outside / SNAP3)
    else:
        (snap / "events.parquet").rename(outside / "ev.parquet")
        (snap / "events.parquet").symlink_to(outside / "ev.parquet")
    before = digest(outside)
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert "symlink" in p.stdout + p.stderr and SNAP3 in p.stdout + p.stderr, tail(p)
    assert digest(outside) == before
    assert rows(tmp_path / "ds")["counters"] <= small["rows"]["counters"]
    assert not any(d.is_symlink() for d in (tmp_path / "ds").rglob("*"))


@ROOT_ONLY
def test_file_of_another_user_mode_0600_read_as_nobody(small, shared_dir):
    spool = shared_dir / "spool"
    shutil.copytree(small["spool"], spool)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(spool)], check=True)
    secret = spool / "gpu00000" / SNAP3 / "events.parquet"
    os.chown(secret, 0, 0)
    secret.chmod(0o600)
    out = shared_dir / "w"
    out.mkdir()
    out.chmod(0o777)
    before = digest(spool)
    p = run(["ingest", spool, out / "ds", "--quarantine", out / "q"], user="nobody")
    assert_refused(p, f"gpu00000/{SNAP3}/events.parquet", "Permission denied")
    assert digest(spool) == before  # nothing moved out of the spool
    assert not list(out.rglob("*.parquet"))
    secret.chmod(0o644)
    p = run(["ingest", spool, out / "ds", "--quarantine", out / "q"], user="nobody")
    assert_ok(p)
    assert rows(out / "ds") == small["rows"]


@ROOT_ONLY
def test_spool_the_user_cannot_move_out_of_is_said(small, shared_dir):
    spool = shared_dir / "spool"
    shutil.copytree(small["spool"], spool)
    out = shared_dir / "w"
    out.mkdir()
    out.chmod(0o777)
    p = run(["ingest", spool, out / "ds", "--quarantine", out / "q"], user="nobody")
    assert "Traceback" not in p.stderr, tail(p)
    if p.returncode == 2:
        assert_refused(p, "spool")
        assert not list(out.rglob("*.parquet"))
    else:
        assert p.returncode == 0, tail(p)
        # ingested but not moved: at least a warning naming the spool
        assert "spool" in p.stderr and "Permission denied" in p.stderr, tail(p)
    assert snapshots(spool) == small["snaps"]


@ROOT_ONLY
def test_snapshot_that_cannot_be_quarantined_leaves_no_stray_reason(small, shared_dir):
    spool = shared_dir / "spool"
    shutil.copytree(small["spool"], spool)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(spool)], check=True)
    (spool / "gpu00000" / SNAP3).chmod(0)
    out = shared_dir / "w"
    out.mkdir()
    out.chmod(0o777)
    p = run(["ingest", spool, out / "ds", "--quarantine", out / "q"], user="nobody")
    assert_refused(p, SNAP3, "Permission denied")
    assert not list(out.rglob("*.parquet"))
    strays = [str(r) for r in out.rglob("*.reason") if not Path(str(r)[: -len(".reason")]).exists()]
    assert strays == [], strays


def test_spool_given_as_a_relative_path_with_dotdot(small, spool, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    p = run(["ingest", "../spool", "ds", "--quarantine", "q"], cwd=work)
    assert_ok(p)
    assert rows(work / "ds") == small["rows"]
    assert snapshots(spool) == []


def test_spool_inside_the_dataset_is_refused_before_anything_moves(small, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(small["clean"], ds)
    shutil.copytree(small["spool"], ds / "incoming")
    before = digest(ds)
    p = run(["ingest", ds / "incoming", ds, "--quarantine", tmp_path / "q"])
    assert_refused(p, "incoming")
    assert digest(ds) == before


# ---------------------------------------------------------------------------------------------
# OS faults under the dataset or the quarantine
# ---------------------------------------------------------------------------------------------
@ROOT_ONLY
def test_ingest_onto_a_read_only_dataset_loses_nothing_and_the_rerun_completes(small, spool, tmp_path):
    ds = tmp_path / "vol" / "ds"
    ds.parent.mkdir()
    first = tmp_path / "first"
    for s in small["snaps"][: len(small["snaps"]) // 2]:
        (first / s).parent.mkdir(parents=True, exist_ok=True)
        (spool / s).rename(first / s)
    assert_ok(run(["ingest", first, ds, "--quarantine", tmp_path / "q"]))
    before_spool, before_ds = digest(spool), digest(ds)
    vol = tmp_path / "vol"
    cli = f"'{BASELINE}' ingest '{spool}' '{ds}' --quarantine '{tmp_path / 'q'}'"
    p = in_mount_ns(f"mount --bind '{vol}' '{vol}' && mount -o remount,bind,ro '{vol}' || exit 99\n"
                    f"{cli} >/dev/null; rc=$?; umount -l '{vol}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, str(ds), "Read-only file system")
    assert digest(spool) == before_spool and digest(ds) == before_ds
    assert_ok(run(["ingest", spool, ds, "--quarantine", tmp_path / "q"]))
    assert rows(ds) == small["rows"]
    assert snapshots(spool) == []


@ROOT_ONLY
def test_quarantine_on_a_full_volume_keeps_the_bad_file_in_the_spool(small, spool, tmp_path):
    bad = spool / "gpu00000" / SNAP3 / "counters.parquet"
    bad.write_bytes(b"not parquet at all\n" * 2000)
    bad_hash = hashlib.sha256(bad.read_bytes()).hexdigest()
    qvol = tmp_path / "qvol"
    qvol.mkdir()
    cli = f"'{BASELINE}' ingest '{spool}' '{tmp_path / 'ds'}' --quarantine '{qvol / 'q'}'"
    p = in_mount_ns(f"mount -t tmpfs -o size=64k pbq '{qvol}' || exit 99\n"
                    f"dd if=/dev/zero of='{qvol}/fill' bs=4k count=16 2>/dev/null\n"
                    f"{cli} >/dev/null; rc=$?; umount -l '{qvol}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert "Traceback" not in p.stderr, tail(p)
    if p.returncode == 2:
        assert_refused(p, "No space left on device")
    # the bad file is nowhere lost: still in the spool (the tmpfs is gone with its namespace)
    assert bad.exists() and hashlib.sha256(bad.read_bytes()).hexdigest() == bad_hash, tail(p)
    assert visible_debris(tmp_path / "ds") == [] if (tmp_path / "ds").exists() else True
    p = run(["ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q"])
    assert_ok(p)
    assert (tmp_path / "q" / "gpu00000" / SNAP3 / "counters.parquet").exists()
    assert rows(tmp_path / "ds")["events"] == small["rows"]["events"]


@ROOT_ONLY
def test_day_compaction_onto_a_full_volume_keeps_whole_data(medium, tmp_path):
    vol = tmp_path / "vol"
    vol.mkdir()
    size = sum(f.stat().st_size for f in medium["clean"].rglob("*") if f.is_file())
    empty = tmp_path / "empty"
    empty.mkdir()
    cli = f"'{BASELINE}' ingest '{empty}' '{vol}/ds' --quarantine '{vol}/q' --compact-days-after 1"
    kib = size // 1024 + 400
    p = in_mount_ns(f"mount -t tmpfs -o size={kib}k pbfull '{vol}' || exit 99\n"
                    f"cp -a '{medium['clean']}' '{vol}/ds' || exit 98\n"
                    f"dd if=/dev/zero of='{vol}/fill' bs=4k 2>/dev/null; "
                    f"{cli} >/dev/null; rc=$?; rm -f '{vol}/fill'; cp -a '{vol}/ds' '{tmp_path}/after'; "
                    f"umount -l '{vol}'; exit $rc")
    assert p.returncode not in (98, 99), p.stderr
    assert "Traceback" not in p.stderr, tail(p)
    if p.returncode == 2:
        assert_refused(p, "No space left on device")
    else:
        assert p.returncode == 0, tail(p)
    after = tmp_path / "after"
    assert rows(after) == medium["rows"]
    assert visible_debris(after) == []
    p = run(["ingest", empty, after, "--quarantine", tmp_path / "q", "--compact-days-after", "1"])
    assert_ok(p)
    assert rows(after) == medium["rows"]
    assert not [d for d in after.iterdir() if d.name.startswith(".compact")]


# ---------------------------------------------------------------------------------------------
# concurrency
# ---------------------------------------------------------------------------------------------
def _either_ran_or_refused(p: subprocess.Popen) -> tuple[int, str]:
    out, err = p.communicate(timeout=120)
    assert "Traceback" not in err, err[-2000:]
    assert p.returncode in (0, 2), (p.returncode, err[-2000:])
    if p.returncode == 2:
        assert len(err.strip().splitlines()) == 1, err
    return p.returncode, err


def test_two_ingests_of_one_spool_into_one_dataset_at_once(medium, mspool, tmp_path):
    ds = tmp_path / "ds"
    a = start(["ingest", mspool, ds, "--quarantine", tmp_path / "q"])
    b = start(["ingest", mspool, ds, "--quarantine", tmp_path / "q"])
    codes = [_either_ran_or_refused(a)[0], _either_ran_or_refused(b)[0]]
    assert 0 in codes, codes
    assert_ok(run(["ingest", mspool, ds, "--quarantine", tmp_path / "q"]))
    assert rows(ds) == medium["rows"]
    assert snapshots(mspool) == []
    assert not (tmp_path / "q").exists() or not any((tmp_path / "q").rglob("*.parquet"))


def test_two_ingests_of_two_spools_into_one_dataset_at_once(medium, mspool, tmp_path):
    other = tmp_path / "other"
    hosts = sorted(d.name for d in mspool.iterdir())
    other.mkdir()
    for h in hosts[: len(hosts) // 2]:
        (mspool / h).rename(other / h)
    ds = tmp_path / "ds"
    a = start(["ingest", mspool, ds, "--quarantine", tmp_path / "q"])
    b = start(["ingest", other, ds, "--quarantine", tmp_path / "q"])
    _either_ran_or_refused(a)
    _either_ran_or_refused(b)
    for s in (mspool, other):
        assert_ok(run(["ingest", s, ds, "--quarantine", tmp_path / "q"]))
    assert rows(ds) == medium["rows"]


def test_ingest_with_workers_killed_then_rerun(medium, mspool, tmp_path):
    ds = tmp_path / "ds"
    p = start(["ingest", mspool, ds, "-j", "2", "--quarantine", tmp_path / "q"])
    time.sleep(max(0.8, medium["took"] * 0.7))
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)
    time.sleep(0.2)  # the workers die with their parent
    rows(ds) if ds.exists() else None  # readers see whole files only
    assert_ok(run(["ingest", mspool, ds, "--quarantine", tmp_path / "q"]))
    assert rows(ds) == medium["rows"]
    assert snapshots(mspool) == []


@pytest.mark.parametrize("frac", [0.35, 0.6, 0.85])
def test_ingest_killed_at_a_moment_then_rerun_equals_a_clean_run(medium, mspool, tmp_path, frac):
    ds = tmp_path / "ds"
    p = start(["ingest", mspool, ds, "--quarantine", tmp_path / "q"])
    time.sleep(medium["took"] * frac)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)
    if ds.exists():
        rows(ds)  # every visible file whole
        assert visible_debris(ds) == []
    # nothing lost in between: every snapshot is in the spool or committed
    assert_ok(run(["ingest", mspool, ds, "--quarantine", tmp_path / "q"]))
    assert rows(ds) == medium["rows"]
    assert snapshots(mspool) == []
    assert not (tmp_path / "q").exists() or not any((tmp_path / "q").rglob("*.parquet"))


@pytest.fixture(scope="module")
def multipart(medium):
    """The medium spool ingested in three runs: every partition holds three part files."""
    root = medium["root"]
    ds = root / "multipart"
    parts = [root / f"part{i}" for i in range(3)]
    for i, s in enumerate(medium["snaps"]):
        dest = parts[i % 3] / s
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(medium["spool"] / s, dest)
    for s in parts:
        assert_ok(run(["ingest", s, ds, "--quarantine", root / "mq", "--compact-min-files", "0"]))
    assert rows(ds) == medium["rows"]
    return ds


@pytest.mark.parametrize("kind,frac", [("partitions", 0.5), ("partitions", 0.8), ("days", 0.7)])
def test_compaction_killed_at_a_moment_then_rerun(medium, multipart, tmp_path, kind, frac):
    ds = tmp_path / "ds"
    shutil.copytree(multipart, ds)
    empty = tmp_path / "empty"
    empty.mkdir()
    flag = ["--compact-min-files", "2"] if kind == "partitions" else ["--compact-days-after", "1"]
    args = ["ingest", empty, ds, "--quarantine", tmp_path / "q", *flag]
    t0 = time.monotonic()
    p = start(args)
    time.sleep(max(0.3, 1.4 * frac))
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)
    assert time.monotonic() - t0 < 60
    assert rows(ds) == medium["rows"]  # readers see the parts or the merged files, never both
    assert visible_debris(ds) == []
    p = run(args)
    assert_ok(p)
    assert rows(ds) == medium["rows"]
    assert not [d.name for d in ds.iterdir() if d.name.startswith(".compact")]
    if kind == "days":
        assert list(ds.glob("events/date=*/day-*.parquet")), "the rerun compacted nothing"


def test_audit_during_a_day_compaction_sees_whole_data(medium, multipart, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(multipart, ds)
    ref = run(["audit", ds, "-o", tmp_path / "ref", "--json", "--no-learn-expected"])
    assert_ok(ref)
    want = json.loads(ref.stdout)
    empty = tmp_path / "empty"
    empty.mkdir()
    c = start(["ingest", empty, ds, "--quarantine", tmp_path / "q", "--compact-days-after", "1",
               "--compact-min-files", "2"])
    time.sleep(0.5)
    a = run(["audit", ds, "-o", tmp_path / "during", "--json", "--no-learn-expected"])
    code, _ = _either_ran_or_refused(c)
    assert code == 0
    assert "Traceback" not in a.stderr, tail(a)
    if a.returncode == 2:
        assert_refused(a)
        assert not (tmp_path / "during").exists()
    else:
        assert a.returncode == 0, tail(a)
        got = json.loads(a.stdout)
        for k in ("findings", "clusters", "host_alerts", "traces_audited"):
            assert got[k] == want[k], (k, got[k], want[k])
    assert rows(ds) == medium["rows"]


# ---------------------------------------------------------------------------------------------
# report / evaluate / coverage on partial, empty or other-version outputs; another fleet's model
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("pbfleet")
    ds = root / "fa"
    assert_ok(run(["simulate", "--hosts", "3", "--hours", "0.5", "--seed", "5", "-o", ds]))
    assert_ok(run(["learn", ds]))
    assert_ok(run(["audit", ds]))
    return ds


@pytest.fixture()
def fa(fleet, tmp_path) -> Path:
    copy = tmp_path / "fa"
    shutil.copytree(fleet, copy, symlinks=True)
    return copy


def test_report_of_an_audit_whose_current_set_is_gone(fa, tmp_path):
    shutil.rmtree(fa / "audit" / ".sets")
    before = digest(fa / "audit")
    p = run(["report", fa / "audit", "--html", tmp_path / "r.html"])
    assert_refused(p, "findings.parquet")
    assert digest(fa / "audit") == before
    assert not (tmp_path / "r.html").exists()


def test_evaluate_of_an_audit_missing_its_findings(fa):
    os.unlink(os.path.realpath(fa / "audit" / "findings.parquet"))
    before = digest(fa)
    p = run(["evaluate", fa])
    assert_refused(p, "findings.parquet")
    assert digest(fa) == before


def test_report_of_an_empty_audit_directory_writes_no_html(tmp_path):
    (tmp_path / "audit").mkdir()
    p = run(["report", tmp_path / "audit", "--html", tmp_path / "r.html"])
    assert_refused(p, "findings.parquet")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("cmd", ["report", "evaluate"])
def test_audit_output_of_a_newer_version_is_refused_naming_it(fa, cmd):
    set_footer(fa / "audit" / "findings.parquet", b"tracebase.schema_version", b"9")
    before = digest(fa / "audit")
    p = run(["report", fa / "audit"] if cmd == "report" else ["evaluate", fa])
    assert_refused(p, "findings.parquet", "schema version 9")
    assert digest(fa / "audit") == before


def test_audit_output_of_the_older_version_is_read(fa):
    for t in ("findings", "clusters", "host_alerts"):
        set_footer(fa / "audit" / f"{t}.parquet", b"tracebase.schema_version", b"1")
    p = run(["report", fa / "audit", "--json"])
    assert_ok(p)
    assert "findings" in json.loads(p.stdout)


def test_audit_output_that_is_a_file_of_another_table(fa):
    real = Path(os.path.realpath(fa / "audit" / "clusters.parquet"))
    real.unlink()
    shutil.copy(os.path.realpath(fa / "audit" / "host_alerts.parquet"), real)
    p = run(["report", fa / "audit"])
    assert_refused(p, "clusters.parquet")


def test_audit_with_a_model_learned_on_another_fleet(fleet, tmp_path):
    other = tmp_path / "fb"
    assert_ok(run(["simulate", "--hosts", "2", "--hours", "0.5", "--seed", "6", "-o", other]))
    model = fleet / "baseline-model.parquet"
    before = digest(model)
    p = run(["audit", other, "--model", model, "-o", tmp_path / "out", "--json"])
    assert "Traceback" not in p.stderr, tail(p)
    if p.returncode == 2:
        assert_refused(p, "baseline-model.parquet")
        assert not (tmp_path / "out").exists()
    else:
        assert p.returncode == 0, tail(p)
        assert json.loads(p.stdout)["model_source"] == "given"
    assert digest(model) == before


def test_audit_with_a_model_file_that_is_a_counters_summary(fa, tmp_path):
    summary = sorted(fa.glob("counter_buckets/date=*/host=*/*.parquet"))[0]
    before = digest(fa)
    p = run(["audit", fa, "--model", summary, "-o", tmp_path / "out"])
    assert_refused(p, summary.name)
    assert digest(fa) == before
    assert not (tmp_path / "out").exists()


def test_coverage_of_a_dataset_holding_events_only(fa, tmp_path):
    for t in ("counters", "counter_buckets"):
        shutil.rmtree(fa / t, ignore_errors=True)
    p = run(["coverage", fa, "-o", tmp_path / "rep"])
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode in (0, 2), tail(p)
    if p.returncode == 2:
        assert_refused(p, "counters")
        assert not (tmp_path / "rep").exists() or not any((tmp_path / "rep").rglob("*.html"))


# ---------------------------------------------------------------------------------------------
# the DAGs, run as `airflow dags test` with odd configuration
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory):
    home = tmp_path_factory.mktemp("pbairflow")
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("TRACEBASE_CONFIG", None)
    p = subprocess.run([AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return env


def dag_test(env, dag_id: str, conf: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([AIRFLOW, "dags", "test", dag_id, "-c", conf], env=env, cwd=cwd, capture_output=True,
                          text=True, errors="replace", timeout=120)


def pipeline_yaml(paths: dict[str, str]) -> str:
    return "version: 1\npaths:\n" + "".join(f"  {k}: {v}\n" for k, v in paths.items())


PATHS = {"spool": "spool", "dataset": "data/ds", "quarantine": "data/q", "findings": "data/findings",
         "reports": "data/reports", "model": "data/model.parquet", "expected_errors": "data/expected.yaml"}


def test_trace_ingest_dag_with_relative_paths_run_from_elsewhere(small, airflow_env, tmp_path):
    """Relative paths are the config file's directory's, whatever the worker's cwd."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    shutil.copytree(small["spool"], cfg / "spool")
    (cfg / "pipe.yaml").write_text(pipeline_yaml(PATHS))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = dag_test(airflow_env, "trace_ingest", json.dumps({"config": str(cfg / "pipe.yaml")}), elsewhere)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "Traceback" not in out
    assert rows(cfg / "data" / "ds") == small["rows"]
    assert list(elsewhere.iterdir()) == []
    assert snapshots(cfg / "spool") == []


def test_trace_ingest_dag_config_without_a_dataset_path_fails_in_one_line(small, airflow_env, tmp_path):
    shutil.copytree(small["spool"], tmp_path / "spool")
    paths = {k: v for k, v in PATHS.items() if k != "dataset"}
    (tmp_path / "pipe.yaml").write_text(pipeline_yaml(paths))
    before = digest(tmp_path / "spool")
    p = dag_test(airflow_env, "trace_ingest", json.dumps({"config": str(tmp_path / "pipe.yaml")}), tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert "paths.dataset" in out and "pipe.yaml" in out, out[-3000:]
    assert digest(tmp_path / "spool") == before
    assert not (tmp_path / "data").exists()


def test_trace_ingest_dag_config_param_of_the_wrong_type_runs_no_task(small, airflow_env, tmp_path):
    shutil.copytree(small["spool"], tmp_path / "spool")
    before = digest(tmp_path / "spool")
    p = dag_test(airflow_env, "trace_ingest", json.dumps({"config": 5}), tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    assert "param config" in out, out[-3000:]
    assert "[DAG TEST] running task" not in out
    assert digest(tmp_path / "spool") == before
