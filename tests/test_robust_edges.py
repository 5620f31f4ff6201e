"""Round seven of the bad-input battery (bench/robust_battery.py runs the whole of it): the edges
it found, one test per defect class.

- traces written with dictionary-typed string columns (polars' Categorical, pyarrow's
  dictionary_encode) are the same data as plain strings: `baseline diff` reads them;
- text reports show what the traced programs wrote (paths, comm) on one line and inert in a
  terminal: a newline, ESC or a right-to-left override in a file name is shown escaped;
- SIGTERM and SIGHUP unwind a command the way Ctrl-C does: a writer's temporary is removed and
  the exit status is 128 + the signal (143, 129), not a death by signal that leaves debris;
- `tracer record` in a PID namespace other than the host's refuses (it recorded an empty trace:
  the kernel reports the host's pids).

Inputs are built here with pyarrow from the hand-written program of test_bad_inputs (not by
the code under test) and by the simulator.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_bad_inputs import PROGRAM, _events, _write

BIN = Path(sys.executable).parent
ROOT = os.geteuid() == 0


def _run(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    tool, *rest = argv
    return subprocess.run([str(BIN / tool), *rest], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _bad_program(path: str) -> list:
    return PROGRAM[:6] + [("openat", -2, "ENOENT", path), ("exit_group", 1, None, None)]


def _failure(trace_id: str, program: list, pid: int) -> pa.Table:
    t = _events(trace_id, program, pid)
    return t.set_column(t.schema.get_field_index("kind"), "kind", pa.array(["failure"] * len(program)))


def _dictionary_typed(table: pa.Table) -> pa.Table:
    """Every string column as an Arrow dictionary, as polars writes a Categorical."""
    cols = [c.dictionary_encode() if pa.types.is_string(c.type) else c for c in table.columns]
    return pa.table(cols, names=table.column_names)


def test_dictionary_typed_string_columns_diff_like_plain_ones(tmp_path):
    good = [_write(_events(f"g{i}", PROGRAM, 10 + i), tmp_path / f"good{i}.parquet") for i in (1, 2)]
    bad = _failure("b1", _bad_program("/srv/job/data/rows.jsonl"), 30)
    plain = _write(bad, tmp_path / "bad.parquet")
    dictionary = _write(_dictionary_typed(bad), tmp_path / "bad-dict.parquet")
    good_dict = _write(_dictionary_typed(_events("g3", PROGRAM, 13)), tmp_path / "good-dict.parquet")
    assert pa.types.is_dictionary(pq.read_schema(dictionary).field("path").type)
    want = _run("baseline", "diff", *map(str, good), str(plain), "--json", cwd=tmp_path)
    assert want.returncode == 1, want.stderr
    for argv in ([*good, dictionary], [good[0], good_dict, dictionary], [good_dict, plain]):
        got = _run("baseline", "diff", *map(str, argv), "--json", cwd=tmp_path)
        assert got.returncode == 1 and got.stderr == "", got.stderr
        assert '"bifurcation"' in got.stdout and "/srv/job/data/rows.jsonl" in got.stdout
    # the rest of the readers take it too
    for argv in (["export", str(dictionary), "-o", str(tmp_path / "x.json")],
                 ["allowlist", "learn", str(good_dict), str(good[0]), "-o", str(tmp_path / "a.yaml")]):
        proc = _run("baseline", *argv, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_diff_text_escapes_control_characters_from_the_trace(tmp_path):
    odd = "/srv/job/\x1b[31mred\nfake line\u202ereversed\x7f"
    good = [_write(_events(f"g{i}", PROGRAM, 10 + i), tmp_path / f"good{i}.parquet") for i in (1, 2)]
    bad = _write(_failure("b1", _bad_program(odd), 30), tmp_path / "bad.parquet")
    proc = _run("baseline", "diff", *map(str, good), str(bad), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == "bifurcation: openat /srv/job/\\x1b[31mred\\nfake line\\u202ereversed\\x7f -> ENOENT", first
    assert all(line.isprintable() for line in proc.stdout.splitlines()), proc.stdout
    # --json keeps the data as it is (JSON escapes it)
    js = _run("baseline", "diff", *map(str, good), str(bad), "--json", cwd=tmp_path)
    assert "\\u001b[31mred\\nfake line" in js.stdout


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    from baseline.simulator.simulate import simulate

    base = tmp_path_factory.mktemp("fleet")
    simulate(base / "ds", hosts=8, hours=6.0, seed=4)  # `baseline simulate`'s call, without a process to start
    return base / "ds"


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_stop_signal_while_a_writer_holds_its_temporary(fleet, tmp_path, sig, status):
    """The coverage report is built in a hidden temporary directory and renamed: the signal is
    sent once that temporary exists, so it lands mid-write (on a loaded machine the writer may
    finish first: then the report is whole, and the trial is repeated)."""
    for attempt in range(5):
        out = tmp_path / f"reports{attempt}"
        out.mkdir()
        # the signal's default disposition in the writer: the suite itself may run under nohup,
        # whose ignored SIGHUP the writer inherits and rightly leaves alone (see the next test)
        proc = subprocess.Popen([str(BIN / "baseline"), "coverage", str(fleet), "-o", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(".") for p in out.iterdir()):
                proc.send_signal(sig)
                break
            time.sleep(0.002)
        else:
            proc.kill()
            pytest.fail(f"no temporary appeared in {out} (exit {proc.returncode})")
        _, err = proc.communicate(timeout=60)
        left = sorted(p.name for p in out.iterdir())
        assert not [n for n in left if n.startswith(".")], f"a temporary was left: {left}"
        assert "Traceback" not in err, err
        if proc.returncode == status:
            assert err == "" and left == [], (err, left)  # no half report either
            break
        assert proc.returncode in (0, -sig) and left, (proc.returncode, err)  # too late: whole
    else:
        pytest.fail("the signal never landed while the report was being written")
    rerun = _run("baseline", "coverage", str(fleet), "-o", str(out), cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr


def test_ignored_sighup_stays_ignored(fleet, tmp_path):
    """nohup: a SIGHUP set to be ignored is not turned into a stop."""
    out = tmp_path / "model.parquet"
    proc = subprocess.Popen([str(BIN / "baseline"), "learn", str(fleet), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    time.sleep(1.0)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.exists(), err


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None, reason="needs root and unshare (util-linux)")
@pytest.mark.parametrize("argv", [["record", "-o", "{out}", "--", "true"],
                                  ["run", "syscalls", "-p", "1", "-d", "1s", "--spool", "{spool}"]])
def test_recording_in_a_child_pid_namespace_is_refused(tmp_path, argv):
    out = tmp_path / "t.parquet"
    argv = [a.format(out=out, spool=tmp_path / "spool") for a in argv]
    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(BIN / "tracer"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "PID namespace" in lines[0] and "--pid=host" in lines[0], proc.stderr
    assert not out.exists() and not (tmp_path / "spool").exists()


@pytest.mark.parametrize("value, found", [
    (5, "found 5"), (["a.yaml"], "found ['a.yaml']"), ("cfg\0.yaml", "found 'cfg\\x00.yaml'"),
    ("x" * 5000, "File name too long"), (".", "found a directory"), ("{binary}", "found binary data"),
])
def test_dag_config_param_odd_values_fail_naming_it(tmp_path, value, found):
    """What `airflow dags trigger -c` or a library caller may pass as the config: a ConfigError
    (the task's one-line failure naming the key), never a TypeError/ValueError/OSError."""
    from baseline.pipeline.config import validated_config_path
    from tracer.errors import TracebaseError

    binary = tmp_path / "model.parquet"
    binary.write_bytes(bytes(range(256)))
    if value == "{binary}":
        value = str(binary)
    with pytest.raises(TracebaseError) as err:
        validated_config_path(value)
    assert found in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.skipif(not ROOT, reason="tracer record/run check root before the process")
@pytest.mark.parametrize("argv", [["record", "-o", "{tmp}/t.parquet", "-d", "1s"],
                                  ["run", "syscalls", "--spool", "{tmp}/spool", "-d", "1s"]])
def test_a_thread_id_is_refused_naming_its_process(tmp_path, argv):
    """/proc/TID exists for every thread; -p follows processes, so a TID recorded nothing
    (`tracer run`) or was called "no such process" (`tracer record`)."""
    holder = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                               "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                               "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()  # the thread is running
        tid = next(int(t) for t in os.listdir(f"/proc/{holder.pid}/task") if int(t) != holder.pid)
        proc = subprocess.run([str(BIN / "tracer"), *[a.format(tmp=tmp_path) for a in argv], "-p", str(tid)],
                              capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2, proc.stderr
    assert f"a thread of process {holder.pid}" in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_to_dev_stdout_whose_reader_stops_early_is_quiet(tmp_path):
    """`-o /dev/stdout | head -c 10` is the same reader going away as `-o - | head -c 10`: the
    rest is dropped quietly, exit 0 (it was "cannot write (Broken pipe)", exit 2)."""
    program = PROGRAM[:1] + [("read", 64, None, "/srv/job/data/rows.jsonl")] * 20_000 + PROGRAM[-1:]
    trace = _write(_events("big", program, 10), tmp_path / "big.parquet")
    for out in ("/dev/stdout", "-"):
        proc = subprocess.Popen([str(BIN / "baseline"), "export", str(trace), "-o", out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        head = proc.stdout.read(10)
        proc.stdout.close()  # the reader goes away with megabytes still to come
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0 and err == "", (out, proc.returncode, err)
        assert head == b'{"traceEve'
