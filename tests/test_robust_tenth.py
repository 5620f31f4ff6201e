"""Round ten of the bad-input battery (bench/robust_battery.py, group `round10`): the edges it
found, one test per defect class.

- an integer longer than Python converts from text (a 5,000-digit `version:` in an allowlist)
  escaped the YAML loader as a ValueError: a traceback from `baseline diff --allowlist`, an
  "internal error" from `allowlist learn`; now one line naming the file and the line;
- an allowlist entry seen in more good runs than there were (`support: {runs: 5, total: 2}`) was
  accepted; now refused naming the field;
- `baseline diff` printed the traceback of any bug itself (exit 2, many lines); now a bug there
  is the dispatcher's, as in every other command: one line, the traceback saved to a file;
- under a `ulimit -v` of 450-700 MB the libraries failed without a line of ours: `baseline
  audit` hung in polars' streaming engine deaf to SIGTERM, jemalloc, OpenBLAS and pyarrow
  aborted or printed their own lines, a half-imported polars raised NameError, and threading's
  "can't start new thread" was called a bug; now a limit below what the libraries reserve to
  start is refused in one line before any work, and running out of threads is worded as such;
- `baseline ingest` onto a full disk left an empty `DATASET/counters/date=D/host=H` tree (and
  the dataset directory with only its lock when it created it); now nothing but whole files;
- `baseline audit -o DIR` with `DIR/.sets` a symlink wrote its output set into the link's target
  and then removed every other directory there (as root, `.sets -> /etc` emptied /etc of its
  directories); now refused naming the link, and only set directories the audit named are pruned;
- two `baseline simulate` or `baseline coverage` runs of one output started together: the one
  finishing second failed, `DIR -> DIR: Directory not empty`; now the last to finish wins, its
  tree swapped in atomically.

Inputs: the hand-written program of test_bad_inputs (pyarrow, not the code under test), the
simulator's fleet and spool, tmpfs mounts made here (root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import one_line_error as _one_line
from cli_harness import run_shell as _sh
from test_bad_inputs import PROGRAM, _events, _write

from baseline.cli import main as baseline_main
from baseline.run.allowlist import ExpectedErrors
from tracer import atomic, yamlio
from tracer.cli import common
from tracer.errors import TracebaseError
from tracer.startup import single_threaded_blas

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
ENTRY = ("  - id: learned-enoent-openat-0123456789\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
         "    path: /srv/job/cache\n    support:\n      runs: 2\n      total: 2\n")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("r10")
    good = [_write(_events(f"g{i}", PROGRAM, 10 + i), d / f"good{i}.parquet") for i in (1, 2)]
    return d, good


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from baseline.simulator.simulate import simulate

    d = tmp_path_factory.mktemp("r10fleet")
    for out, spool in ((d / "fleet", False), (d / "spooled", True)):  # `baseline simulate`'s calls, no process
        simulate(out, hosts=3, hours=1.0, seed=2, spool=spool)
    return d / "fleet", d / "spooled" / "spool"


@pytest.mark.parametrize("where", ["version", "support.runs"])
def test_a_huge_yaml_integer_is_one_line_naming_file_and_line(where, traces, capsys):
    d, good = traces
    huge = "1" * 5000
    text = "version: 1\nentries:\n" + ENTRY
    text = text.replace("version: 1", f"version: {huge}") if where == "version" else text.replace("runs: 2", f"runs: {huge}")
    y = d / f"huge-{where}.yaml"
    y.write_text(text)
    line = 1 if where == "version" else 9
    with pytest.raises(TracebaseError, match=rf"huge-{where}.yaml: expected an integer of at most 4,300 digits, "
                                             rf"found one of 5,000 digits at line {line}"):
        ExpectedErrors.load(y)
    assert baseline_main(["diff", *map(str, good), "--allowlist", str(y)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "5,000 digits" in err, err
    copy = d / f"learn-{where}.yaml"
    shutil.copy(y, copy)
    assert baseline_main(["allowlist", "learn", *map(str, good), "-o", str(copy)]) == 2
    assert "internal error" not in capsys.readouterr().err and copy.read_text() == text
    # every YAML reader goes through the loader: a pipeline config or probe set likewise
    with pytest.raises(TracebaseError, match="cfg.yaml: expected an integer of at most"):
        yamlio.safe_load(f"workers: -{huge}\n", "cfg.yaml")
    assert yamlio.safe_load("n: 12345\nx: 0x10\n", "ok.yaml") == {"n": 12345, "x": 16}


def test_support_of_more_runs_than_there_were_is_refused(traces):
    d, _ = traces
    y = d / "more.yaml"
    y.write_text("version: 1\nentries:\n" + ENTRY.replace("runs: 2", "runs: 5"))
    with pytest.raises(TracebaseError, match=r"more.yaml: entries\[0\]: field 'support': expected runs <= total, "
                                             r"found \{'runs': 5, 'total': 2\}"):
        ExpectedErrors.load(y)
    y.write_text("version: 1\nentries:\n" + ENTRY.replace("      total: 2\n", ""))  # runs alone: no total to exceed
    assert len(ExpectedErrors.load(y).entries) == 1


def test_a_bug_in_diff_is_one_line_with_the_traceback_in_a_file(traces, capsys, monkeypatch):
    import baseline.run.diff as run_diff

    d, good = traces

    def broken(*args, **kwargs):
        raise ValueError("a bug inside the differ")

    monkeypatch.setattr(run_diff, "diff_traces", broken)
    assert baseline_main(["diff", *map(str, good)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "internal error" in err and "ValueError: a bug inside the differ" in err and "traceback in" in err
    saved = Path(err.split("traceback in ")[1].strip().rstrip(")"))
    assert "a bug inside the differ" in saved.read_text()
    saved.unlink()


@pytest.mark.parametrize("command", ["audit {fleet} -o {out}/aud", "learn {fleet} -o {out}/m.parquet",
                                     "coverage {fleet} -o {out}/cov", "ingest {spool} {out}/ds --keep-spool"])
def test_an_address_space_below_what_the_libraries_need_is_refused_in_one_line(command, fleet, tmp_path):
    # 600 MB: audit hung in polars' streaming engine (SIGTERM unheard), coverage's OpenBLAS
    # printed its own lines, ingest's half-imported polars raised NameError
    argv = command.format(fleet=fleet[0], spool=fleet[1], out=tmp_path)
    proc = _sh(f"ulimit -v 600000; timeout -k 5 60 baseline {argv}", tmp_path)
    err = _one_line(proc)
    env = dict(os.environ)
    single_threaded_blas(env)  # as the console script starts
    need = common.min_address_space_mib(env)
    assert err.startswith(f"baseline: error: ulimit -v: expected an address space of at least {need:,} MiB (what "
                          "polars, Arrow and OpenBLAS reserve to start "), err
    assert err.endswith("found a limit of 585 MiB"), err
    assert not list(tmp_path.iterdir()), "nothing may be written"
    # what needs no libraries still runs: the help
    assert _sh("ulimit -v 600000; baseline --help >/dev/null", tmp_path).returncode == 0


def test_a_limit_just_above_the_floor_runs(fleet, tmp_path):
    kib = (common.min_address_space_mib() + 16) << 10
    proc = _sh(f"ulimit -v {kib}; baseline learn {fleet[0]} -o {tmp_path}/m.parquet", tmp_path)
    assert proc.returncode == 0 and (tmp_path / "m.parquet").stat().st_size > 0, proc.stderr


def test_a_thread_that_cannot_start_is_out_of_threads_not_a_bug():
    # a real "can't start new thread": its 8 MiB stack does not fit the address-space limit
    code = ("import resource, threading\n"
            "from tracer.cli import common\n"
            "vm = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize')).split()[1]) << 10\n"
            "resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 20), resource.RLIM_INFINITY))\n"
            "try:\n    threading.Thread(target=int).start()\n"
            "except RuntimeError as exc:\n    print(common._resources_exhausted(exc))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.stdout.startswith("out of memory or threads: RuntimeError: can't start new thread"), proc.stdout + proc.stderr
    assert "(ulimit -v)" in proc.stdout


def test_audit_never_writes_or_removes_through_a_symlinked_sets_directory(fleet, tmp_path):
    # `.sets -> elsewhere`: the audit wrote its set there, then removed every other directory in
    # it (as root, `.sets -> /etc` emptied /etc of its directories)
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "f").write_text("x")
    (victim / "set-20260101T000000-1-deadbeef").mkdir()  # even one named like a set
    out = tmp_path / "aud"
    out.mkdir()
    (out / ".sets").symlink_to(victim)
    err = _one_line(_sh(f"baseline audit {fleet[0]} -o {out}", tmp_path))
    assert f"{out}/.sets: expected the audit's own directory of output sets, found a symlink to {victim}" in err, err
    assert sorted(p.name for p in victim.iterdir()) == ["keep", "set-20260101T000000-1-deadbeef"]
    assert (victim / "keep" / "f").read_text() == "x"
    # in a real .sets, only the sets the audit made are pruned; what someone else put there stays
    (out / ".sets").unlink()
    (out / ".sets" / "notes").mkdir(parents=True)
    (out / ".sets" / "set-link").symlink_to(victim)
    for _ in range(2):
        proc = _sh(f"baseline audit {fleet[0]} -o {out}", tmp_path)
        assert proc.returncode == 0, proc.stderr
    left = sorted(p.name for p in (out / ".sets").iterdir())
    assert len(left) == 3 and {"notes", "set-link"} <= set(left), left
    assert (victim / "keep" / "f").exists()


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True, capture_output=True)


def _fill(mount: Path, leave: int) -> None:
    with open(mount / "filler", "wb") as fh:
        fh.write(b"\0" * max(shutil.disk_usage(mount).free - leave, 0))


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs (root)")
@pytest.mark.parametrize("leave", [0, 16384])
def test_ingest_onto_a_full_disk_leaves_no_empty_tree(leave, fleet, tmp_path):
    _, spool = fleet
    mnt = tmp_path / "full"
    _mount_tmpfs(mnt, "256k")
    try:
        _fill(mnt, leave)
        proc = _sh(f"baseline ingest {spool} {mnt}/ds --keep-spool", tmp_path)
        err = _one_line(proc)
        assert "No space left on device" in err, err
        ds = mnt / "ds"
        files = sorted(str(p.relative_to(ds)) for p in ds.rglob("*") if p.is_file()) if ds.exists() else []
        empty = [str(p.relative_to(ds)) for p in ds.rglob("*") if p.is_dir() and not any(p.iterdir())] if ds.exists() else []
        assert not empty, empty
        if not files or files == [".tracebase.lock"]:
            assert not ds.exists(), "a dataset this run created holding nothing stays behind"
        else:  # whole snapshots written before the disk filled stay, each with the lock
            assert all(f.endswith(".parquet") or f == ".tracebase.lock" for f in files), files
        # the same dataset again once there is room: complete
        (mnt / "filler").unlink()
        proc = _sh(f"baseline ingest {spool} {mnt}/ds --keep-spool", tmp_path)
        assert proc.returncode == 0 and "ingested" in proc.stdout, proc.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_staged_output_created_meanwhile_is_replaced_whole(tmp_path):
    out = tmp_path / "week"
    with atomic.staged_dir(out) as staging:
        (staging / "ours.txt").write_text("ours")
        out.mkdir()  # another run of the same output finished first
        (out / "theirs.txt").write_text("theirs")
    assert sorted(p.name for p in out.iterdir()) == ["ours.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["week"], "no staging directory left"
    # a file under that name is still refused (never replaced by a directory)
    with pytest.raises(OSError), atomic.staged_dir(tmp_path / "f") as staging:
        (tmp_path / "f").write_text("a file")
    assert (tmp_path / "f").read_text() == "a file"


def test_two_simulations_of_one_output_both_succeed(tmp_path):
    argv = [str(BIN / "baseline"), "simulate", "--hosts", "2", "--hours", "1", "--seed", "1", "-o", str(tmp_path / "sim")]
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert [p.name for p in tmp_path.iterdir()] == ["sim"]
    assert (tmp_path / "sim" / "events").is_dir()
