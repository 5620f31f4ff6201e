"""Round twenty-five: what a blind adversarial battery of faults and crashes found (a helper that
read neither the tests nor bench/robust_battery.py; ~1,160 cases: kill -9 at random moments of
every writer, full and read-only volumes, `ulimit -n`/`-v`, signals, concurrency, umasks). Kill
-9, read-only mounts, permissions, descriptor limits and umasks held; one test per break fixed:

- `baseline audit` whose output directory was removed while it wrote (`rm -rf` mid-run) made
  the output directory and its links again, pointing at a set that was gone, and exited 0 naming
  files that did not exist; now one line, exit 2;
- an output that could not be made was named by our hidden temporary
  (`/ro/.fleet.11443-ceadd6a0.tmp: Read-only file system`): now by the path the user gave;
- `baseline ingest` under `ulimit -v` 1.4-1.6 GB (above the 960 MiB floor it refuses below):
  Arrow's jemalloc failed to start its background threads (13,000 lines, then SIGABRT), or
  polars' library failed to load ("Polars binary is missing!", then a NameError called an
  internal error); Arrow's pool is the system allocator under a limit now, and a polars that
  cannot load is one line naming the limit.

(Two ingests of one spool: test_ingest's `take_turns` and `removed_while` tests.)
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import one_line_error, run_shell
from test_ingest import make_spool

from tracer import atomic
from tracer.errors import TracebaseError

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a read-only tmpfs (needs root)")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    d = tmp_path_factory.mktemp("r25fleet")
    simulate(d / "fleet", hosts=3, hours=1.0, seed=3)
    return d / "fleet"


def test_an_audit_whose_output_went_away_while_it_wrote_says_so(fleet, tmp_path, monkeypatch):
    """The output directory removed between the set's write and the links' check (what `rm -rf`
    of the output did mid-run, 5 of 6 trials): exit 2 naming it, not a success naming files
    that are not there."""
    from baseline.fleet import audit

    result = audit.run_audit(fleet)
    out = tmp_path / "sub" / "a"
    real = audit._remove_stale_sets

    def removed_meanwhile(where: Path) -> None:
        real(where)
        shutil.rmtree(where / audit.SETS_DIR)  # another process's rm -rf, at this moment

    monkeypatch.setattr(audit, "_remove_stale_sets", removed_meanwhile)
    with pytest.raises(TracebaseError, match=r"expected the audit's tables there once written, found "
                                             r"findings.parquet, clusters.parquet, host_alerts.parquet missing"):
        audit.write_audit(result, out)
    monkeypatch.setattr(audit, "_remove_stale_sets", real)
    written = audit.write_audit(result, out)  # the next run writes them
    assert all(path.exists() for path in written.values())


@ROOT_ONLY
def test_an_output_that_cannot_be_made_is_named_as_given_not_by_our_temporary(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], check=True)
    try:
        with pytest.raises(OSError) as file_error, atomic.atomic_output(ro / "al.yaml"):
            pass
        assert file_error.value.filename == str(ro / "al.yaml"), file_error.value
        with pytest.raises(OSError) as tree_error, atomic.staged_dir(ro / "fleet"):
            pass
        assert tree_error.value.filename == str(ro / "fleet"), tree_error.value
        err = one_line_error(run_shell(f"baseline simulate --hosts 1 --hours 0.1 --seed 1 -o {ro}/fleet", tmp_path))
        assert err == f"baseline: error: {ro}/fleet: Read-only file system", err
    finally:
        subprocess.run(["umount", str(ro)], check=True)


@pytest.mark.parametrize("limit_kib", [1_400_000, 1_500_000, 1_600_000])
def test_ingest_under_an_address_space_limit_above_the_floor_runs(tmp_path, limit_kib):
    spool = tmp_path / "spool"
    make_spool(spool, hosts=2, snapshots=3)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_kib << 10, resource.RLIM_INFINITY))

    proc = subprocess.run([sys.executable, "-m", "baseline.cli", "ingest", str(spool), str(tmp_path / "ds"),
                           "--quarantine", str(tmp_path / "q")], capture_output=True, text=True, timeout=300,
                          preexec_fn=limited)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout.startswith("ingested 6 snapshots (12 events rows, 12 counters rows)"), proc.stdout


def test_polars_that_cannot_load_is_out_of_memory_not_a_bug():
    """polars' own warning when its library does not import, made an error under a limit, is
    worded as the machine's state with the limit (as a MemoryError is)."""
    code = ("import resource\n"
            "from tracer.cli import common\n"
            "resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))\n"
            "print(common._resources_exhausted(UserWarning('Polars binary is missing!')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == ("out of memory or threads: UserWarning: polars' library could not be loaded; "
                                   "the address space is limited to 8192 MiB (ulimit -v)"), proc.stdout + proc.stderr
