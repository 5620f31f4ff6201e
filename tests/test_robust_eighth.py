"""Round eight of the bad-input battery (bench/robust_battery.py, group `round8`): the edges it
found, one test per defect class.

- a closed stdin/stdout/stderr (`>&-`, `2>&-`): two AttributeError tracebacks and exit 1, or
  the error line printed on stdout; now the streams get /dev/null and the exit status stays;
- a stdout that cannot be written (/dev/full) is named: `<stdout>: No space left on device`;
- POLARS_MAX_THREADS=0 made polars panic (a BaseException: a traceback, exit 1) in every
  analysis command; out of memory or threads is one line naming `ulimit -v`, not "a bug";
- a strict stdout (PYTHONIOENCODING=utf-8:strict, what Python uses under en_US.UTF-8) failed
  printing a non-UTF-8 output name after writing the file;
- a removed current directory was "No such file or directory" naming nothing;
- `expected learn` called a corrupt events file "no events"; `coverage` died on a job log whose
  name is not UTF-8;
- the library: wrong argument types gave an AttributeError, a polars ComputeError or a
  ZeroDivisionError deep inside; a str filter was taken letter by letter.

Inputs: the hand-written program of test_bad_inputs (pyarrow, not the code under test) and the
simulator.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from cli_harness import run_shell as _sh
from test_bad_inputs import PROGRAM, _events, _write

BIN = Path(sys.executable).parent


def _clean(proc: subprocess.CompletedProcess) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert "Traceback" not in stream and "internal error" not in stream, stream


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("r8")
    good = [_write(_events(f"g{i}", PROGRAM, 10 + i), d / f"good{i}.parquet") for i in (1, 2)]
    t = _events("b1", PROGRAM[:6] + [("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"), ("exit_group", 1, None, None)], 30)
    bad = _write(t.set_column(t.schema.get_field_index("kind"), "kind", pa.array(["failure"] * len(t))), d / "bad.parquet")
    return d, good, bad


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    d = tmp_path_factory.mktemp("r8fleet") / "fleet"
    simulate(d, hosts=4, hours=1.0, seed=2)  # `baseline simulate`'s call, without a process to start
    return d


def test_closed_standard_streams_keep_the_exit_status(traces):
    d, (g1, g2), bad = traces
    # stdout closed: the report goes nowhere, the status still says "anomaly" (1)
    proc = _sh(f"baseline diff {g1} {g2} {bad} >&-; echo rc=$? >&2", d)
    assert proc.stderr.strip() == "rc=1", proc.stderr
    proc = _sh(f"baseline export {g1} -o - >&-; echo rc=$? >&2", d)
    assert proc.stderr.strip() == "rc=0", proc.stderr
    # stderr closed: the error line is lost, not printed into stdout; the status is 2
    proc = _sh(f"baseline diff {d}/missing.parquet {bad} 2>&-; echo rc=$?", d)
    assert proc.stdout.strip() == "rc=2", proc.stdout
    proc = _sh(f"baseline diff {g1} {bad} --json <&- | head -c 1; echo ' rc='${{PIPESTATUS[0]}}", d)
    assert proc.stdout.split() == ["{", "rc=1"], proc.stdout
    _clean(proc)


def test_a_stdout_that_cannot_be_written_is_named(traces, fleet):
    d, (g1, g2), bad = traces
    for script in (f"baseline diff {g1} {g2} {bad} >/dev/full", f"baseline evaluate {fleet} --json >/dev/full"
                   if (fleet / "audit").exists() else f"baseline learn {fleet} -o {d}/m.parquet >/dev/full"):
        proc = _sh(script, d)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().endswith("<stdout>: No space left on device"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "abc", "", "100000"])
def test_polars_thread_count_from_the_environment_is_checked(fleet, tmp_path, value):
    """0 made polars panic; 100,000 seemed to hang (its pool starting a thread each: minutes)."""
    proc = _sh(f"baseline learn {fleet} -o {tmp_path}/m.parquet", tmp_path, {"POLARS_MAX_THREADS": value})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"baseline: error: environment variable POLARS_MAX_THREADS: expected an integer "
                                   f"in [1, 1024], found {value!r}")


def test_out_of_memory_is_named_not_called_a_bug():
    # a real MemoryError under a real address-space limit, worded by the dispatcher's rule
    code = ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))\n"
            "from tracer.cli import common\n"
            "try:\n    bytearray(4 << 30)\nexcept MemoryError as exc:\n    print(common._resources_exhausted(exc))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout.startswith("out of memory or threads: MemoryError"), proc.stdout + proc.stderr
    assert "limited to 1024 MiB (ulimit -v)" in proc.stdout


def test_strict_stdout_prints_an_output_name_that_is_not_utf8(traces):
    d, (g1, g2), _ = traces
    out = os.fsencode(d) + b"/learned-\xfe.yaml"
    proc = subprocess.run([str(BIN / "baseline"), "allowlist", "learn", str(g1), str(g2), "-o", out],
                          capture_output=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().rstrip().endswith("learned-\\xfe.yaml")
    assert os.path.exists(out)


def test_a_removed_current_directory_is_named(traces):
    d, (g1, g2), _ = traces
    gone = d / "gone"
    gone.mkdir()
    # the default output is relative (./expected_errors.learned.yaml): getcwd fails first
    proc = _sh(f"cd {gone} && rmdir {gone} && baseline allowlist learn {g1} {g2}", d)
    assert proc.returncode == 2
    assert "current directory: expected an existing directory, found it removed" in proc.stderr
    _clean(proc)


def test_expected_learn_names_a_corrupt_file_and_coverage_reads_an_odd_log_name(fleet, tmp_path):
    import shutil

    ds = tmp_path / "ds"
    shutil.copytree(fleet, ds)
    part = sorted((ds / "events").rglob("*.parquet"))[0]
    part.write_bytes(b"not parquet at all" * 10)
    proc = subprocess.run([str(BIN / "baseline"), "expected", "learn", str(ds), "-o", str(tmp_path / "e.yaml")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert part.name in proc.stderr and "Parquet" in proc.stderr, proc.stderr
    log = sorted((fleet / "joblogs").glob("*.log"))[0]
    odd = os.fsencode(tmp_path) + b"/nccl-\xff.log"
    shutil.copy(log, odd)
    proc = subprocess.run([str(BIN / "baseline"), "coverage", str(fleet), "-o", str(tmp_path / "cov"),
                           "--nccl-logs", odd], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_library_arguments_of_the_wrong_type_are_named(traces, tmp_path):
    from baseline.export import export_trace
    from baseline.fleet.audit import run_audit
    from baseline.run.diff import diff_traces
    from baseline.simulator.simulate import simulate
    from tracer.errors import TracebaseError

    _, good, bad = traces
    with pytest.raises(TypeError, match="^paths: expected a path or an iterable of paths, found NoneType"):
        diff_traces(None, bad)
    with pytest.raises(TypeError, match="^trace_id: "):
        diff_traces(good, bad, trace_id=3)
    with pytest.raises(TracebaseError, match="^-k/--window: "):
        diff_traces(good, bad, k=2.5)
    with pytest.raises(TracebaseError, match="^--context: "):
        diff_traces(good, bad, context="x")
    with pytest.raises(TypeError, match="^model: expected a GoodTraceBaseline"):
        run_audit(tmp_path, model=3)
    with pytest.raises(TracebaseError, match="^min_layers: "):
        run_audit(tmp_path, model=None, min_layers=2.5)
    with pytest.raises(TracebaseError, match="^--workers: "):
        simulate(tmp_path / "sim", hosts=1, hours=1, workers=0)
    # one str is one value (it was taken letter by letter: "kind g, o, o, d")
    assert export_trace(good[0], kinds="good")["otherData"]["traces"] == 1


def test_ingest_refuses_a_dataset_or_quarantine_overlapping_the_spool(tmp_path):
    # `baseline ingest S S` wrote the dataset's tables into the spool; the next run took them
    # for hosts and moved them to quarantine
    src = tmp_path / "sim"
    proc = subprocess.run([str(BIN / "baseline"), "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "--spool",
                           "-o", str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    spool = src / "spool"
    before = sorted(p.relative_to(spool) for p in spool.rglob("*"))
    for argv, words in (([spool, spool], "found the spool itself"), ([spool, spool / "ds"], "found inside the spool"),
                        ([spool, src], "found holding the spool"),
                        ([spool, tmp_path / "ds", "--quarantine", spool / "q"], "quarantine directory apart from the spool"),
                        ([spool, tmp_path / "ds", "--quarantine", tmp_path / "ds" / "q"], "apart from the dataset")):
        proc = subprocess.run([str(BIN / "baseline"), "ingest", *map(str, argv)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert sorted(p.relative_to(spool) for p in spool.rglob("*")) == before  # nothing moved
    proc = subprocess.run([str(BIN / "baseline"), "ingest", str(spool), str(tmp_path / "ds")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_ingest_refuses_a_dataset_given_as_the_spool(fleet, tmp_path):
    # SPOOL DATASET swapped: the dataset's tables were taken for hosts, moved to quarantine
    before = sorted(p.relative_to(fleet) for p in fleet.rglob("*"))
    proc = subprocess.run([str(BIN / "baseline"), "ingest", str(fleet), str(tmp_path / "ds")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert "expected a spool (host directories of snap-* snapshots), found a dataset" in proc.stderr, proc.stderr
    assert sorted(p.relative_to(fleet) for p in fleet.rglob("*")) == before


def test_an_empty_path_argument_is_refused_not_read_as_the_current_directory(traces):
    d, (g1, _), bad = traces
    (d / "stray").mkdir(exist_ok=True)
    for argv in (["diff", "", str(bad)], ["export", "", "-o", str(d / "x.json")], ["allowlist", "learn", "", str(g1)]):
        proc = subprocess.run([str(BIN / "baseline"), *argv], cwd=d, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        assert proc.stderr == "baseline: error: expected a file or directory path, found '' (an empty argument)\n"


def test_ingest_rerun_restores_a_summary_a_kill_left_unwritten(tmp_path):
    # kill -9 between the rename of a counters part file and that of its 15-minute summary:
    # the rerun found the snapshots ingested and never wrote the summary (readers fell back to
    # the raw counters of that host for good)
    from tracer.schema import counter_buckets_for

    src = tmp_path / "sim"
    proc = subprocess.run([str(BIN / "baseline"), "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "--spool",
                           "-o", str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ds = tmp_path / "ds"
    argv = [str(BIN / "baseline"), "ingest", str(src / "spool"), str(ds), "--keep-spool"]
    assert subprocess.run(argv, capture_output=True, timeout=300).returncode == 0
    parts = sorted((ds / "counters").rglob("part-*.parquet"))
    assert parts and all(counter_buckets_for(p) is not None for p in parts)
    summary = counter_buckets_for(parts[0])[0]
    summary.unlink()  # the state the kill leaves: counters file in place, spool not yet cleaned
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert summary.is_file() and counter_buckets_for(parts[0]) is not None
