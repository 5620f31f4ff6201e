"""Round seventeen: robust16's leftovers and what the round17 battery found, each a defect of main
shown by a real run (no mocks).

- a spool snapshot directory without counters.parquet (or events.parquet) was ingested without
  a word: the other file's rows went in, the snapshot left the spool, and the gap was nowhere
  to be seen (not in ingest's result, its report or its JSON);
- a fleet daemon restarted with `--prom` in *another directory* removed the temporaries of the
  new directory only: the old one's, left by the killed daemon, stayed in that directory;
- a spool host whose tracer never restarts (retired, moved to another spool) kept the
  `.snap-*.tmp` a tracer killed mid-snapshot left, for good: only the tracer removed them, at
  its restart, and ingest skips hidden names;
- (found by the round17 battery) an option between a command's positionals (`baseline diff
  good1 --json good2 bad`) was refused as 'unrecognized arguments: good2 bad'.
The wider battery is `bench/robust_battery.py --group round17`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-m", "baseline.cli"]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


def temporaries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def killed_mid_write(code: str, cwd: Path) -> None:
    """Run `code` (which opens `fh` through tracer.atomic) in a real process that is killed -9
    with half its bytes written."""
    subprocess.run([sys.executable, "-c", "import os\nfrom tracer.atomic import atomic_output\n" + code
                    + "    fh.write(b'PAR1' + bytes(4096)); fh.flush(); os.kill(os.getpid(), 9)\n"],
                   cwd=cwd, env=ENV, check=False)


@pytest.fixture
def spool(tmp_path) -> Path:
    subprocess.run([*BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "2", "--spool", "-o",
                    str(tmp_path / "sim")], cwd=tmp_path, env=ENV, check=True, capture_output=True, timeout=300)
    return tmp_path / "sim" / "spool"


def test_a_snapshot_without_one_of_its_files_is_said_by_ingest_its_report_and_its_json(spool, tmp_path):
    """One snapshot loses counters.parquet, another events.parquet: each is named in ingest's
    result (`warnings`), on stderr in one line each, and in `--json`; the files that are there
    are ingested (exit 0), as before."""
    from baseline.pipeline.ingest import ingest_spool

    snaps = sorted(spool.glob("*/snap-*"))
    no_counters, no_events = snaps[3], snaps[-2]
    (no_counters / "counters.parquet").unlink()
    (no_events / "events.parquet").unlink()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(spool), str(copy)], check=True)

    result = ingest_spool(spool, tmp_path / "ds-lib", tmp_path / "q-lib")
    assert len(result.warnings) == 2, result.warnings
    by_name = {w.split(":")[0]: w for w in result.warnings}
    assert "found no counters.parquet" in by_name[str(no_counters)]
    assert "found no events.parquet" in by_name[str(no_events)]
    assert result.rows["events"] > 0 and result.rows["counters"] > 0

    proc = subprocess.run([*BASELINE, "ingest", str(copy), str(tmp_path / "ds"), "--keep-spool"], cwd=tmp_path,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("baseline ingest: warning: ") for line in lines), lines
    assert any(no_counters.name in line and "counters.parquet" in line for line in lines), lines
    assert any(no_events.name in line and "events.parquet" in line for line in lines), lines

    proc = subprocess.run([*BASELINE, "ingest", str(copy), str(tmp_path / "ds-json"), "--json"], cwd=tmp_path,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["ingest"]["warnings"]
    assert sorted(w.split(": ")[0].rsplit("/", 1)[1] for w in warnings) == sorted([no_counters.name, no_events.name])


def test_a_daemon_restarted_with_prom_in_another_directory_removes_the_old_directorys_temporary(tmp_path):
    """A daemon (--prom old/node.prom) killed -9 while it wrote its textfile, restarted with
    --prom new/node.prom on the same spool host: prepare() removes old/'s dead temporary too,
    and says so. A live writer's temporary there, another user's and what is no textfile's
    stay. Restarted without --prom at all, the same."""
    from tracer.fleet.daemon import Daemon as FleetDaemon
    from tracer.fleet.daemon import RunConfig

    def start(prom: Path | None) -> str:
        log = io.StringIO()
        d = FleetDaemon(RunConfig(sets=["syscalls"], spool=tmp_path / "spool", host="h1", log=log, prom=prom))
        try:
            d.prepare()
        finally:
            d.lock.release()
        return log.getvalue()

    for old_name in ("old", "older"):
        old = tmp_path / old_name
        old.mkdir()
        start(old / "node.prom")  # the daemon that is then killed: it ran with --prom old/node.prom
        killed_mid_write(f"with atomic_output({str(old / 'node.prom')!r}) as fh:\n", tmp_path)
        killed_mid_write(f"with atomic_output({str(old / 'notes.txt')!r}) as fh:\n", tmp_path)
        live = old / f".gpu.prom.{os.getpid()}-0123abcd.tmp"  # another daemon's, writing now
        live.write_bytes(b"# HELP")
        dead = [p for p in temporaries(old) if p.name.startswith(".node.prom.")]
        assert len(dead) == 1
        kept = sorted({*temporaries(old)} - set(dead))
        new = tmp_path / f"new-{old_name}"
        new.mkdir()
        said = start(new / "node.prom" if old_name == "old" else None)
        assert temporaries(old) == kept, (old_name, temporaries(old))
        assert f"removed 1 stale temporary of a previous run: {dead[0]}" in said, said


def _killed_snapshot(host_dir: Path, age_s: float) -> Path:
    """A snapshot's staging directory as a tracer killed -9 inside write_snapshot leaves it
    (its events file whole, counters half written), its files last touched `age_s` ago."""
    tmp = host_dir / ".snap-20261128T001945.000Z-000099.tmp"
    tmp.mkdir(parents=True)
    (tmp / "events.parquet").write_bytes(b"PAR1" + bytes(64) + b"PAR1")
    killed_mid_write(f"with atomic_output({str(tmp / 'counters.parquet')!r}) as fh:\n", host_dir)
    then = time.time() - age_s
    for p in [*tmp.iterdir(), tmp]:
        os.utime(p, (then, then), follow_symlinks=False)
    return tmp


def test_ingest_removes_a_killed_tracers_snapshot_temporary_no_writer_holds_once_old(spool, tmp_path):
    """The host's tracer was killed -9 mid-snapshot two hours ago and never came back: ingest
    removes the staging directory and says so (report and result). One from a minute ago, one
    whose host a live tracer holds (.tracer.lock flocked by a real process) and one whose file
    carries a live pid stay; `--keep-spool` leaves the spool as it is. The lock is taken by
    tracer.fleet.spool.WriterLock itself, so ingest's name for it is checked too."""
    hosts = sorted(p for p in spool.iterdir() if p.is_dir())
    retired = _killed_snapshot(hosts[0], 2 * 3600)
    young = _killed_snapshot(hosts[1], 60)
    held_dir = spool / "gpu-held"
    held = _killed_snapshot(held_dir, 2 * 3600)
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom tracer.fleet.spool import WriterLock\n"
                               f"WriterLock({str(held_dir)!r}).acquire(); print(flush=True); sys.stdin.read()"],
                              cwd=REPO, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()
        live_dir = spool / "gpu-live"
        live = _killed_snapshot(live_dir, 2 * 3600)
        (live / f".counters.parquet.{holder.pid}-0123abcd.tmp").write_bytes(b"PAR1")
        for p in (live / f".counters.parquet.{holder.pid}-0123abcd.tmp", live):
            os.utime(p, (time.time() - 7200,) * 2)

        proc = subprocess.run([*BASELINE, "ingest", str(spool), str(tmp_path / "ds"), "--keep-spool"],
                              cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert retired.exists() and "killed tracer" not in proc.stdout

        proc = subprocess.run([*BASELINE, "ingest", str(spool), str(tmp_path / "ds"), "--json"],
                              cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert not retired.exists() and young.exists() and held.exists() and live.exists()
        removed = json.loads(proc.stdout)["ingest"]["spool_temporaries_removed"]
        assert removed == [str(retired)], removed
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # the holder gone, the held host's temporary is abandoned too; the report names it
    proc = subprocess.run([*BASELINE, "ingest", str(spool), str(tmp_path / "ds")], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"removed 2 temporaries a killed tracer left in the spool: {held}, {live}" in proc.stdout, proc.stdout
    assert young.exists() and not held.exists() and not live.exists()


def _trace(path: Path, trace_id: str, program: list[tuple[str, str | None, str | None]], pid: int) -> Path:
    import polars as pl

    from tracer.schema import write_table

    n = len(program)
    frame = pl.DataFrame(
        {"trace_id": [trace_id] * n, "seq": list(range(n)), "ts_ns": [i * 10 for i in range(n)], "pid": [pid] * n,
         "tid": [pid] * n, "ppid": [1] * n, "comm": ["prog"] * n, "probe": [p for p, _, _ in program],
         "depth": [0] * n, "ret": [-1 if e else 0 for _, e, _ in program], "errno": [e for _, e, _ in program],
         "path": [x for _, _, x in program], "kind": ["good"] * n, "command": ["prog /srv/in.txt"] * n},
        schema_overrides={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "depth": pl.Int16})
    return write_table(frame, path, "events")


def test_options_between_the_positionals_are_taken_as_with_gnu_tools(tmp_path):
    """`baseline diff good1 --json good2 bad` and `baseline allowlist learn a -o LIST b` (an
    option between the traces, as a script appending to a command line writes it): argparse
    stopped the traces at the option and refused the rest as 'unrecognized arguments' --
    naming the traces as the mistake. Now they are read as written; with `--` a name that
    starts with a dash is a trace, as before."""
    prog = [("execve", None, "/usr/bin/prog"), ("openat", None, "/etc/ld.so.cache"), ("close", None, None),
            ("openat", None, "/srv/in.txt"), ("read", None, None), ("exit_group", None, None)]
    probe = [*prog[:3], ("openat", "ENOENT", "/etc/prog/optional.conf"), *prog[3:]]
    good1 = _trace(tmp_path / "good1.parquet", "g1", prog, 10)
    good2 = _trace(tmp_path / "-good2.parquet", "g2", probe, 11)
    bad = _trace(tmp_path / "bad.parquet", "b1", [*prog[:3], ("openat", "EACCES", "/srv/in.txt"),
                                                  ("exit_group", None, None)], 12)
    proc = subprocess.run([*BASELINE, "diff", str(good1), "--json", str(good2), str(bad)], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["anomaly"], proc.stdout[:300]
    learned = tmp_path / "list.yaml"
    proc = subprocess.run([*BASELINE, "allowlist", "learn", str(good1), "-o", str(learned), str(good2)],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "optional.conf" in learned.read_text()  # the second trace, after -o, was read
    proc = subprocess.run([*BASELINE, "diff", "--json", "--", "good1.parquet", "-good2.parquet"], cwd=tmp_path,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
