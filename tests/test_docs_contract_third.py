"""Third docs-versus-behaviour battery: every `--help` example, the flags and bench commands
docs/benchmarks.md and docs/architecture.md cite, the `--json` outputs the docs describe, and the
documented format of expected_errors.yaml.

Blind: the oracle is README.md, docs/*.md and the `--help` texts only, never the code under
baseline/, tracer/ or dags/. Each example line of each help text is run as written, with small
real inputs substituted for its placeholders (recordings made by `tracer record`, a 2-host,
1-hour `baseline simulate`); sizes that would take minutes are scaled down and said so.
Where the docs and the tool disagree the case is a strict xfail naming both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno as errno_mod
import importlib
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

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml
from recent_data import recent_start

from tracer.schema import polars_schema, write_table

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
PY = str(BIN / "python")
DOCS = ROOT / "docs"


def _bcc_missing() -> str | None:
    if os.geteuid() != 0:
        return "tracer record/run need root"
    if not Path("/usr/lib/python3/dist-packages/bcc").exists():
        return "bcc (python3-bpfcc) is not installed"
    return None


def needs_bpf():
    why = _bcc_missing()
    if why:
        print(f"skip: {why}")
        pytest.skip(why)


def run(*args, cwd=None, env=None, timeout=90, check_rc=None, shell=False):
    cmd = args[0] if shell else [str(a) for a in args]
    environ = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    if env:
        environ.update(env)
    cp = subprocess.run(cmd, cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout, shell=shell)
    if check_rc is not None:
        assert cp.returncode == check_rc, (args, cp.returncode, cp.stdout[-2000:], cp.stderr[-2000:])
    assert "Traceback" not in cp.stderr, cp.stderr
    return cp


def one_json(text: str):
    return json.loads(text)


def rows(path) -> list[dict]:
    files = [path] if Path(path).is_file() else sorted(Path(path).rglob("*.parquet"))
    out = []
    for f in files:
        out += pq.read_table(f).to_pylist()
    return out


def help_text(*cmd: str) -> str:
    exe = TRACER if cmd[0] == "tracer" else BASELINE
    return run(exe, *cmd[1:], "--help", check_rc=0).stdout


# --------------------------------------------------------------------------- every help's examples


def example_lines(*cmd: str) -> list[str]:
    """The example lines of `cmd --help` (lines under "examples:" starting with a tool name)."""
    text = help_text(*cmd)
    after = text.split("examples:", 1)[1]
    out = []
    for line in after.splitlines():
        s = line.strip()
        if re.match(r"(tracer|baseline|kill|bpftool) ", s):
            out.append(re.split(r"\s{2,}|\s#", s)[0].strip())
    return out


COMMANDS = [
    ("tracer",), ("tracer", "record"), ("tracer", "run"), ("tracer", "probes"), ("tracer", "probes", "check"),
    ("baseline",), ("baseline", "diff"), ("baseline", "allowlist"), ("baseline", "allowlist", "learn"),
    ("baseline", "simulate"), ("baseline", "evaluate"), ("baseline", "learn"), ("baseline", "audit"),
    ("baseline", "expected"), ("baseline", "expected", "learn"), ("baseline", "report"), ("baseline", "ingest"),
    ("baseline", "coverage"), ("baseline", "suggest-probes"), ("baseline", "export"),
]

# Every example line (as the help prints it, comment cut) -> the case below that runs it.
EXAMPLE_CASES = {
    "tracer record -o bad.parquet --label bad -- ./job.sh": "rec_bad",
    "tracer run rdma --spool /var/spool/tracebase": "run_rdma",
    "tracer probes check rdma": "probes_rdma",
    "tracer record -- ls -l /etc": "rec_ls",
    "tracer record -o good1.parquet --label good -- ./job.sh": "rec_good",
    "tracer record -x -- make": "rec_x_make",
    "tracer record --json -q -o run.parquet -- ./job.sh | tail -1 | jq .syscalls": "rec_json",
    "tracer record --meta ticket=OPS-123 --meta job_id=42 -- python3 train.py": "rec_meta",
    "tracer record -p 1234 -o svc.parquet": "rec_pid",
    "tracer record -p 1234 -d 30s": "rec_pid_d",
    "tracer record -d 500ms -- ./server": "rec_d_server",
    "tracer record --linger 10s -- ./start.sh": "rec_linger10",
    "tracer record --linger inf -- ./start.sh": "rec_linger_inf",
    "tracer record --linger 0 -- ./start.sh": "rec_linger0",
    "tracer run verbs-user syscalls --best-effort": "run_best_effort",
    "tracer run syscalls -p 4242 -x -d 60s": "run_pid_x",
    "tracer run rdma --good-every 1h --good-window 10s --sample 10 --latency-bound 50ms": "run_rdma_windows",
    "tracer run rdma --prom /var/lib/node_exporter/textfile/tracebase.prom": "run_rdma_prom",
    "pkill -USR1 -f 'tracer run'": "run_usr1_usr2",
    "pkill -USR2 -f 'tracer run'": "run_usr1_usr2",
    "tracer probes check": "probes_all",
    "tracer probes check verbs-user --json": "probes_verbs_json",
    "tracer probes check syscalls --attach": "probes_attach",
    "baseline diff good.parquet bad.parquet": "diff_one_good",
    "baseline simulate --hosts 50 --hours 24 --seed 1 --out /tmp/fleet": "sim_layout",
    "baseline audit fleet/": "audit_default",
    "baseline export run.parquet -o run.json": "export_recording",
    "baseline diff good-runs/ bad.parquet --json | jq .bifurcation": "diff_jq",
    "baseline diff g1.parquet g2.parquet g3.parquet bad.parquet --context 5": "diff_context",
    "baseline diff good/ failures.parquet --trace-id host1:42 --allowlist expected_errors.yaml": "diff_trace_id",
    "baseline diff good/ bad.parquet --no-learn": "diff_no_learn",
    "baseline diff good/ bad.parquet --learned team.learned.yaml": "diff_learned",
    "baseline allowlist learn good-runs/": "allow_default",
    "baseline allowlist learn g1.parquet g2.parquet --min-support 0.5 -o allow.yaml": "allow_support",
    "baseline allowlist learn good-runs/ -o team.learned.yaml --json | jq .added": "allow_jq",
    "baseline simulate --hosts 4 --hours 1 --out /tmp/spool --spool": "sim_spool",
    "baseline simulate --hosts 10000 --hours 24 --workers 2 --out /data/fleet": "sim_workers",
    "baseline simulate --hosts 2000 --events-target 100000000 --out /data/big": "sim_events_target",
    "baseline simulate --hosts 20 --scenario efault_peer_cascade,crash_loop_fw_bad_state --out /tmp/f": "sim_scenario",
    "baseline simulate --hosts 8 --hours 2 --start 2h --spool --out /tmp/trial": "sim_trial",
    "baseline simulate --hosts 10 --hours 2 --out /tmp/f && baseline learn /tmp/f && baseline audit /tmp/f": "sim_chain",
    "baseline evaluate /tmp/fleet": "eval_default",
    "baseline evaluate /tmp/fleet --findings /tmp/out --json": "eval_findings_json",
    "baseline evaluate /tmp/fleet --findings /srv/tracebase/findings": "eval_pipeline",
    "baseline learn fleet/": "learn_default",
    "baseline learn fleet/ -o model.parquet --since 2026-11-28": "learn_since_date",
    "baseline learn fleet/ --since 2d --json": "learn_since_json",
    "baseline learn fleet/ --expected-out expected_errors.yaml": "learn_expected_out",
    "baseline audit fleet/ --model model.parquet --since 2026-11-28T06:00:00Z -o audit/": "audit_model_since",
    "baseline audit fleet/ --html audit.html --allowlist expected_errors.yaml": "audit_html",
    "baseline audit fleet/ --refit --since 2h --json": "audit_refit_json",
    "baseline expected learn fleet/ -o expected_errors.yaml": "expected_learn_o",
    "baseline expected learn fleet/ --since 2026-11-28 --min-hosts 5": "expected_learn_since",
    "baseline report fleet/audit/": "report_text",
    "baseline report fleet/audit/ --html audit.html": "report_html",
    "baseline report /srv/tracebase/findings --json": "report_pipeline_json",
    "baseline ingest /var/spool/tracebase /srv/tracebase/dataset": "ingest_plain",
    "baseline ingest SPOOL DATASET --quarantine /srv/tracebase/quarantine --keep-spool": "ingest_keep",
    "baseline ingest SPOOL DATASET --compact-min-files 4 --json": "ingest_compact_json",
    "baseline ingest SPOOL DATASET --compact-days-after 2": "ingest_days_after",
    "baseline coverage /srv/tracebase/dataset": "cov_default",
    "baseline coverage DATASET --week 2026-W48 --out reports/": "cov_week_out",
    "baseline coverage DATASET --probes bpf/probes/rdma.yaml --nccl-logs 'logs/nccl-*.log'": "cov_probes_logs",
    "baseline coverage DATASET --nccl-logs app_failures.parquet": "cov_app_failures",
    "baseline coverage DATASET --json": "cov_json",
    "baseline suggest-probes --btf /sys/kernel/btf": "suggest_btf",
    "bpftool btf dump file /sys/kernel/btf/mlx5_ib format raw > new.txt": "suggest_bpftool",
    "baseline suggest-probes --symbols new.txt --old old.txt --probes bpf/probes/rdma.yaml": "suggest_old",
    "baseline suggest-probes --symbols /proc/kallsyms --reference rdma_control_path.yaml --all": "suggest_all",
    "baseline export DATASET/events --host gpu00017 --kind failure -o failures.json": "export_host_kind",
    "baseline export DATASET/events --trace-id gpu00017:42 --align start -o tree.json": "export_trace_align",
    "baseline export --diff good1.parquet good2.parquet bad.parquet -o diff.json": "export_diff",
}


@pytest.mark.parametrize("cmd", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_help_example_has_a_case(cmd):
    """Each example line of each help is one this battery runs (a new example fails here)."""
    lines = example_lines(*cmd)
    assert lines, f"{' '.join(cmd)} --help shows no example"
    missing = [ln for ln in lines if ln not in EXAMPLE_CASES]
    assert not missing, missing


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """`baseline simulate --hosts 2 --hours 1` (2026-11-28T00:00Z, the default start)."""
    d = tmp_path_factory.mktemp("fleet") / "fleet"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--seed", 1, "-o", d, check_rc=0)
    return d


@pytest.fixture(scope="module")
def audited(fleet, tmp_path_factory):
    """A copy of `fleet` after `baseline learn` and `baseline audit` (README's order)."""
    d = tmp_path_factory.mktemp("audited") / "fleet"
    shutil.copytree(fleet, d, symlinks=True)
    run(BASELINE, "learn", d, check_rc=0)
    run(BASELINE, "audit", d, check_rc=0)
    return d


@pytest.fixture(scope="module")
def recent(tmp_path_factory):
    d = tmp_path_factory.mktemp("recent") / "fleet"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--start", recent_start(2), "-o", d, check_rc=0)
    return d


@pytest.fixture(scope="module")
def pipeline_findings(audited, tmp_path_factory):
    """A pipeline findings directory as docs/airflow.md draws it: findings/<stamp>/{findings,
    clusters,host_alerts}.parquet + findings/LATEST naming the run."""
    d = tmp_path_factory.mktemp("pipe") / "findings"
    stamp = "20261128T010000Z"
    (d / stamp).mkdir(parents=True)
    for t in ("findings", "clusters", "host_alerts"):
        shutil.copyfile(audited / "audit" / f"{t}.parquet", d / stamp / f"{t}.parquet")
    (d / "LATEST").write_text(stamp + "\n")
    return d


def copy_of(src: Path, tmp_path: Path, name="fleet") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst, symlinks=True)
    return dst


JOB = '#!/bin/sh\ncat "$F" >/dev/null\nls "$G" >/dev/null\ncat "$H" >/dev/null\n'


@pytest.fixture(scope="module")
def recs(bpf_batch):
    return bpf_batch[3]


def _recs(d):
    """good.parquet/g1..g3 (good runs of ./job.sh) and bad.parquet (a failing run), in good-runs/."""
    d.mkdir()
    (d / "in.txt").write_text("hi\n")
    job = d / "job.sh"
    job.write_text(JOB)
    job.chmod(0o755)
    good = {"F": str(d / "in.txt"), "G": str(d), "H": str(d / "in.txt")}
    bad = dict(good, F=str(d / "nope1"), H=str(d / "nope2"))
    (d / "good-runs").mkdir()
    jobs = [(d / "good-runs" / f"g{i}.parquet", "good", good) for i in (1, 2, 3)] + [(d / "bad.parquet", "bad", bad)]
    with ThreadPoolExecutor(4) as pool:
        cps = list(pool.map(lambda j: run(TRACER, "record", "-q", "-o", j[0], "--label", j[1], "--", "./job.sh",
                                          cwd=d, env=j[2]), jobs))
    if cps[0].returncode == 2:
        print(f"skip: tracer record cannot record here: {cps[0].stderr.strip()}")
        pytest.skip(f"tracer record cannot record here: {cps[0].stderr.strip()}")
    assert [c.returncode for c in cps] == [0, 0, 0, 1], [c.stderr for c in cps]
    for i in (1, 2, 3):
        shutil.copyfile(d / "good-runs" / f"g{i}.parquet", d / f"g{i}.parquet")
    shutil.copyfile(d / "g1.parquet", d / "good.parquet")
    shutil.copytree(d / "good-runs", d / "good")
    shutil.copyfile(d / "bad.parquet", d / "failures.parquet")
    shutil.copyfile(ROOT / "expected_errors.yaml", d / "expected_errors.yaml")
    return d


# --------------------------------------------------------------------------- tracer record examples

SERVER = '#!/bin/sh\necho $$ > server.pid\nexec sleep 30\n'
START = '#!/bin/sh\n( sleep 1.5; cat "$PWD/late.txt" >/dev/null ) &\nexit 0\n'
MAKEFILE = "all:\n\t@cat /nonexistent-tracebase-file 2>/dev/null || true\n"


def _write_exec(p: Path, text: str):
    p.write_text(text)
    p.chmod(0o755)


@pytest.fixture(scope="module")
def bpf_batch(tmp_path_factory):
    """The record examples, the run examples and the signalled daemon, all at once (threads): most
    of their time is bcc compiling and waiting for durations."""
    needs_bpf()
    base = tmp_path_factory.mktemp("bpf")
    with ThreadPoolExecutor(4) as pool:
        futs = [pool.submit(f, base / n) for f, n in ((_record_examples, "rec"), (_run_examples, "run"),
                                                     (_daemon_signals, "usr"), (_recs, "recs"))]
        return [f.result() for f in futs]


@pytest.fixture(scope="module")
def record_examples(bpf_batch):
    return bpf_batch[0]


@pytest.fixture(scope="module")
def run_examples(bpf_batch):
    return bpf_batch[1]


@pytest.fixture(scope="module")
def daemon_signals(bpf_batch):
    return bpf_batch[2]


def _record_examples(base):
    """Run every `tracer record --help` example at once (threads), each in its own directory."""
    dirs = {}
    base.mkdir()
    for name in ("rec_ls", "rec_good", "rec_bad", "rec_x_make", "rec_json", "rec_meta", "rec_pid", "rec_pid_d",
                 "rec_d_server", "rec_linger10", "rec_linger_inf", "rec_linger0"):
        d = base / name
        d.mkdir()
        (d / "in.txt").write_text("hi\n")
        (d / "late.txt").write_text("late\n")
        _write_exec(d / "job.sh", JOB)
        _write_exec(d / "server", SERVER)
        _write_exec(d / "start.sh", START)
        (d / "Makefile").write_text(MAKEFILE)
        (d / "train.py").write_text("print('training')\n")
        dirs[name] = d
    good = {"F": "in.txt", "G": ".", "H": "in.txt"}
    bad = dict(good, F="nope1", H="nope2")
    alive_after: dict[str, bool] = {}

    def server_alive(pidfile: Path):
        try:
            os.kill(int(pidfile.read_text()), 0)
            alive_after["server"] = True
        except (ProcessLookupError, FileNotFoundError, ValueError):
            alive_after["server"] = False

    procs = {}
    # the running processes the -p examples attach to
    procs["rec_pid"] = subprocess.Popen(["sh", "-c", "while [ ! -e go ]; do sleep 0.1; done; cat in.txt >/dev/null"], cwd=dirs["rec_pid"])
    procs["rec_pid_d"] = subprocess.Popen(["sh", "-c", "while :; do cat in.txt >/dev/null; sleep 0.2; done"],
                                          cwd=dirs["rec_pid_d"])
    argv = {
        "rec_pid": ([TRACER, "record", "-p", str(procs["rec_pid"].pid), "-o", "svc.parquet"], None),
        "rec_pid_d": ([TRACER, "record", "-p", str(procs["rec_pid_d"].pid), "-d", "2s"], None),  # 30s -> 2s
        "rec_ls": ([TRACER, "record", "--", "ls", "-l", "/etc"], None),
        "rec_good": ([TRACER, "record", "-o", "good1.parquet", "--label", "good", "--", "./job.sh"], good),
        "rec_bad": ([TRACER, "record", "-o", "bad.parquet", "--label", "bad", "--", "./job.sh"], bad),
        "rec_x_make": ([TRACER, "record", "-x", "--", "make"], None),
        "rec_json": (f"{TRACER} record --json -q -o run.parquet -- ./job.sh | tail -1 | jq .syscalls", good),
        "rec_meta": ([TRACER, "record", "--meta", "ticket=OPS-123", "--meta", "job_id=42", "--", "python3",
                      "train.py"], None),
        "rec_d_server": ([TRACER, "record", "-d", "500ms", "--", "./server"], None),
        "rec_linger10": ([TRACER, "record", "-o", "t.parquet", "--linger", "10s", "--", "./start.sh"], None),
        "rec_linger_inf": ([TRACER, "record", "-o", "t.parquet", "--linger", "inf", "--", "./start.sh"], None),
        "rec_linger0": ([TRACER, "record", "-o", "t.parquet", "--linger", "0", "--", "./start.sh"], None),
    }

    def go(name):
        cmd, env = argv[name]
        t0 = time.monotonic()
        if name == "rec_pid":  # let the process go on (and exit) once the recorder says it attached
            p = subprocess.Popen([str(c) for c in cmd], cwd=dirs[name], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            first = p.stderr.readline()
            (dirs[name] / "go").touch()
            out, err = p.communicate(timeout=90)
            cp = subprocess.CompletedProcess(cmd, p.returncode, out, first + err)
        elif isinstance(cmd, str):
            cp = run(cmd, cwd=dirs[name], env=env, shell=True)
        else:
            cp = run(*cmd, cwd=dirs[name], env=env)
        secs = time.monotonic() - t0
        if name == "rec_d_server":  # alive right after the recording returned?
            server_alive(dirs[name] / "server.pid")
        return name, cp, secs

    with ThreadPoolExecutor(len(argv)) as pool:
        results = {n: (cp, secs) for n, cp, secs in pool.map(go, argv)}
    for name, p in procs.items():
        alive_after[name] = p.poll() is None
        p.kill()
        p.wait()
    if (dirs["rec_d_server"] / "server.pid").exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int((dirs["rec_d_server"] / "server.pid").read_text()), signal.SIGKILL)
    first = results["rec_good"][0]
    if first.returncode == 2:
        print(f"skip: tracer record cannot record here: {first.stderr.strip()}")
        pytest.skip(f"tracer record cannot record here: {first.stderr.strip()}")
    return dirs, results, alive_after


def _trace_rows(p: Path) -> list[dict]:
    return pq.read_table(p).to_pylist()


def _one(d: Path, pattern: str) -> Path:
    found = sorted(d.glob(pattern))
    assert len(found) == 1, (pattern, [f.name for f in d.iterdir()])
    return found[0]


def test_record_example_ls_default_name(record_examples):
    dirs, res, _ = record_examples
    cp, _ = res["rec_ls"]
    assert cp.returncode == 0, cp.stderr
    f = _one(dirs["rec_ls"], "trace-ls-*.parquet")
    assert re.fullmatch(r"trace-ls-\d{8}T\d{6}.*-\d+\.parquet", f.name), f.name
    assert any(r["path"] and r["path"].startswith("/etc") for r in _trace_rows(f))


@pytest.mark.parametrize(("case", "label", "kind", "rc"), [("rec_good", "good", "good", 0),
                                                           ("rec_bad", "bad", "failure", 1)])
def test_record_example_label(record_examples, case, label, kind, rc):
    dirs, res, _ = record_examples
    cp, _ = res[case]
    assert cp.returncode == rc, cp.stderr  # the recorded command's status (cat's 1)
    rs = _trace_rows(dirs[case] / f"{'good1' if label == 'good' else 'bad'}.parquet")
    assert rs and {r["kind"] for r in rs} == {kind}
    assert {r["exit_status"] for r in rs} == {rc}


def test_record_example_failures_only_make(record_examples):
    dirs, res, _ = record_examples
    cp, _ = res["rec_x_make"]
    assert cp.returncode == 0, cp.stderr
    rs = _trace_rows(_one(dirs["rec_x_make"], "trace-make-*.parquet"))
    assert rs and all(r["errno"] for r in rs), [r for r in rs if not r["errno"]][:3]
    assert any(r["path"] == "/nonexistent-tracebase-file" and r["errno"] == "ENOENT" for r in rs)


def test_record_example_json_pipe_jq_syscalls(record_examples):
    dirs, res, _ = record_examples
    cp, _ = res["rec_json"]
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr == ""  # -q: no summary line on stderr
    n = json.loads(cp.stdout.strip().splitlines()[-1])
    assert isinstance(n, int) and n > 0
    assert (dirs["rec_json"] / "run.parquet").is_file()


def test_record_json_summary_is_one_json_line(recs, tmp_path):
    """`--json`: the summary as one JSON line on stdout, after the command's own output."""
    cp = run(TRACER, "record", "--json", "-q", "-o", tmp_path / "e.parquet", "--", "echo", "hello", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0] == "hello" and len(lines) == 2
    doc = json.loads(lines[1])
    assert isinstance(doc, dict) and isinstance(doc["syscalls"], int)
    assert doc["syscalls"] == len(_trace_rows(tmp_path / "e.parquet"))


def test_record_example_meta_and_job_id(record_examples):
    dirs, res, _ = record_examples
    cp, _ = res["rec_meta"]
    assert cp.returncode == 0, cp.stderr
    rs = _trace_rows(_one(dirs["rec_meta"], "trace-python3-*.parquet"))
    assert {str(r["job_id"]) for r in rs} == {"42"}
    assert "OPS-123" in json.dumps(rs[0]["metadata"], default=str)


def test_record_example_pid_until_exit(record_examples):
    dirs, res, alive = record_examples
    cp, _ = res["rec_pid"]
    assert cp.returncode == 0, cp.stderr
    assert not alive["rec_pid"]  # recording stopped because the process exited
    rs = _trace_rows(dirs["rec_pid"] / "svc.parquet")
    assert any(r["path"] and r["path"].endswith("in.txt") for r in rs)  # a child created after attach


def test_record_example_pid_duration(record_examples):
    dirs, res, alive = record_examples
    cp, secs = res["rec_pid_d"]
    assert cp.returncode == 0, cp.stderr
    assert alive["rec_pid_d"]  # the process is not touched
    rs = _trace_rows(_one(dirs["rec_pid_d"], "trace-*.parquet"))
    assert any(r["path"] and r["path"].endswith("in.txt") for r in rs)
    assert {r["exit_status"] for r in rs} == {None}  # null while it is still running


def test_record_example_duration_server_keeps_running(record_examples):
    dirs, res, alive = record_examples
    cp, secs = res["rec_d_server"]
    assert cp.returncode == 0, cp.stderr
    assert alive.get("server"), "the server must keep running after -d 500ms"
    rs = _trace_rows(_one(dirs["rec_d_server"], "trace-server-*.parquet"))
    assert {r["exit_status"] for r in rs} == {None}


@pytest.mark.parametrize(("case", "late_seen"), [("rec_linger10", True), ("rec_linger_inf", True),
                                                 ("rec_linger0", False)])
def test_record_example_linger(record_examples, case, late_seen):
    dirs, res, _ = record_examples
    cp, secs = res[case]
    assert cp.returncode == 0, cp.stderr
    rs = _trace_rows(dirs[case] / "t.parquet")
    seen = any(r["path"] and r["path"].endswith("late.txt") for r in rs)
    assert seen == late_seen, (case, secs)
    if case == "rec_linger10":  # stops as soon as the last descendant exits, not after 10 s of waiting
        r = rs[0]
        assert (r["end_time"] - r["start_time"]).total_seconds() < 8, (r["start_time"], r["end_time"])


# --------------------------------------------------------------------------- tracer run examples


def _rdma_all_absent() -> bool:
    cp = run(TRACER, "probes", "check", "rdma", "--json")
    doc = json.loads(cp.stdout)
    return not any(p["exists"] for s in doc for p in s["probes"])


def _snapshots(spool: Path) -> list[Path]:
    return sorted(spool.glob(f"{socket.gethostname()}/snap-*"))


def _run_examples(base):
    base.mkdir()
    target = subprocess.Popen(["sh", "-c", "sleep 30"])
    argv = {
        "run_rdma": ["rdma", "--spool", base / "s1"],
        "run_best_effort": ["verbs-user", "syscalls", "--best-effort", "--spool", base / "s2"],
        "run_pid_x": ["syscalls", "-p", target.pid, "-x", "--spool", base / "s3"],  # -d 60s -> 2s below
        "run_rdma_windows": ["rdma", "--good-every", "1h", "--good-window", "10s", "--sample", "10",
                             "--latency-bound", "50ms", "--spool", base / "s4"],
        "run_rdma_prom": ["rdma", "--prom", base / "tracebase.prom", "--spool", base / "s5"],
    }

    def go(name):
        return name, run(TRACER, "run", *argv[name], "-d", "2s", timeout=60)

    with ThreadPoolExecutor(5) as pool:
        res = dict(pool.map(go, argv))
    target.kill()
    target.wait()
    return base, res


@pytest.mark.parametrize("case", ["run_rdma", "run_rdma_windows", "run_rdma_prom"])
def test_run_rdma_examples(run_examples, case):
    """Where no RDMA probe exists (this VM) the documented outcome is exit 2, one line:
    'nothing could attach'; on an RDMA host, snapshots (and the textfile)."""
    base, res = run_examples
    cp = res[case]
    if _rdma_all_absent():
        assert cp.returncode == 2
        errs = [ln for ln in cp.stderr.splitlines() if "error" in ln]
        assert len(errs) == 1, cp.stderr
    else:
        assert cp.returncode == 0, cp.stderr
        spool = base / {"run_rdma": "s1", "run_rdma_windows": "s4", "run_rdma_prom": "s5"}[case]
        assert _snapshots(spool)
        if case == "run_rdma_prom":
            assert (base / "tracebase.prom").is_file()


@pytest.mark.parametrize("case", ["run_best_effort", "run_pid_x"])
def test_run_examples_write_snapshots(run_examples, case):
    base, res = run_examples
    cp = res[case]
    assert cp.returncode == 0, cp.stderr
    snaps = _snapshots(base / {"run_best_effort": "s2", "run_pid_x": "s3"}[case])
    assert snaps, cp.stderr
    for s in snaps:
        assert re.fullmatch(r"snap-\d{8}T\d{6}(\.\d+)?Z-\d+", s.name), s.name
        assert (s / "events.parquet").is_file() and (s / "counters.parquet").is_file()
    if case == "run_pid_x":  # -x: failures only, no good-trace capture
        kinds = {r["kind"] for s in snaps for r in _trace_rows(s / "events.parquet")}
        assert "good" not in kinds


def _daemon_signals(base):
    """`tracer run syscalls -i 1h -d 8s`, then SIGUSR1 and SIGUSR2 to it; which processes the help's
    `pkill -f 'tracer run'` pattern matches (pgrep -f, the same matching)."""
    spool = base / "spool"
    p = subprocess.Popen([TRACER, "run", "syscalls", "-i", "1h", "-d", "8s", "--spool", str(spool)],
                         stderr=subprocess.PIPE, text=True)
    err = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        err.append(line)
        if "probes live" in line or not line:
            break
    time.sleep(0.5)
    pidof = run("pgrep -f 'tracer run'", shell=True).stdout.split()
    os.kill(p.pid, signal.SIGUSR1)
    time.sleep(0.5)
    os.kill(p.pid, signal.SIGUSR2)
    time.sleep(1.5)
    before_end = _snapshots(spool)
    rest = p.stderr.read()
    rc = p.wait(timeout=30)
    return {"pid": p.pid, "pidof": pidof, "rc": rc, "stderr": "".join(err) + rest, "before_end": before_end,
            "all": _snapshots(spool)}


def test_run_example_usr1_usr2_signals(daemon_signals):
    """USR1 opens a capture window (the daemon goes on); USR2 writes a snapshot now."""
    r = daemon_signals
    assert r["rc"] == 0, r["stderr"]
    assert len(r["all"]) >= 2  # the USR2 one and the final one


def test_run_example_pkill_pattern_finds_the_daemon(daemon_signals):
    """(The help said `kill -USR1 $(pidof tracer)`, which signalled no process: the daemon runs as
    `python .../bin/tracer` and pidof needs -x for scripts.)"""
    assert str(daemon_signals["pid"]) in daemon_signals["pidof"]


# --------------------------------------------------------------------------- tracer probes check examples


def _exists_all(doc) -> bool:
    return all(p["exists"] for s in doc for p in s["probes"])


@pytest.mark.parametrize("sets", [[], ["rdma"], ["verbs-user"]], ids=["all", "rdma", "verbs-user"])
def test_probes_check_examples_exit_status_matches_json(sets):
    text = run(TRACER, "probes", "check", *sets)
    js = run(TRACER, "probes", "check", *sets, "--json")
    doc = json.loads(js.stdout)  # one JSON document
    assert text.returncode == js.returncode == (0 if _exists_all(doc) else 1), (text.stderr, js.stderr)
    if not sets:
        shipped = {p.stem for p in (ROOT / "bpf" / "probes").glob("*.yaml")}
        assert {s["set"] for s in doc} == shipped  # every set under bpf/probes/


def test_probes_check_json_fields():
    """README: does each probe exist here, which vendor equivalent the gate picked, can it attach."""
    doc = json.loads(run(TRACER, "probes", "check", "--json").stdout)
    assert isinstance(doc, list) and doc
    for s in doc:
        assert isinstance(s["set"], str) and isinstance(s["probes"], list)
        for p in s["probes"]:
            assert isinstance(p["probe"], str)
            assert isinstance(p["exists"], bool)
            assert "vendor" in p and (p["vendor"] is None or isinstance(p["vendor"], str))
            assert p["attachable"] in (None, True, False)


def test_probes_check_example_attach():
    needs_bpf()
    cp = run(TRACER, "probes", "check", "syscalls", "--attach", "--json", timeout=120)
    doc = json.loads(cp.stdout)
    ok = all(p["exists"] and p["attachable"] for s in doc for p in s["probes"])
    assert cp.returncode == (0 if ok else 1), cp.stderr
    assert run(TRACER, "probes", "check", "syscalls", "--attach", timeout=120).returncode == cp.returncode


# --------------------------------------------------------------------------- baseline diff / allowlist examples


def test_diff_example_one_good(recs):
    cp = run(BASELINE, "diff", "good.parquet", "bad.parquet", cwd=recs)
    assert cp.returncode == 1, cp.stderr
    assert "bifurcation" in cp.stdout


def test_diff_example_json_jq_bifurcation(recs):
    cp = run("baseline diff good-runs/ bad.parquet --json | jq .bifurcation", cwd=recs, shell=True)
    assert cp.returncode == 0, cp.stderr
    assert isinstance(json.loads(cp.stdout), dict)


@pytest.mark.parametrize("argv", [
    ["g1.parquet", "g2.parquet", "g3.parquet", "bad.parquet", "--context", "5"],
    ["good/", "bad.parquet", "--no-learn"],
], ids=["context5", "no-learn"])
def test_diff_examples_anomaly(recs, argv):
    cp = run(BASELINE, "diff", *argv, cwd=recs)
    assert cp.returncode == 1, cp.stderr


def test_diff_example_trace_id_and_allowlist(recs):
    tid = _trace_rows(recs / "failures.parquet")[0]["trace_id"]
    cp = run(BASELINE, "diff", "good/", "failures.parquet", "--trace-id", tid, "--allowlist",
             "expected_errors.yaml", "--json", cwd=recs)
    assert cp.returncode == 1, cp.stderr
    doc = json.loads(cp.stdout)
    assert "expected_errors.yaml" in doc["settings"]["allowlist"]


def test_allowlist_learn_examples_then_diff_learned(recs, tmp_path):
    for name in ("good-runs", "good"):
        shutil.copytree(recs / name, tmp_path / name)
    for f in ("g1.parquet", "g2.parquet", "bad.parquet"):
        shutil.copyfile(recs / f, tmp_path / f)
    cp = run(BASELINE, "allowlist", "learn", "good-runs/", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "expected_errors.learned.yaml").is_file()
    cp = run(BASELINE, "allowlist", "learn", "g1.parquet", "g2.parquet", "--min-support", "0.5", "-o",
             "allow.yaml", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    for e in yaml.safe_load((tmp_path / "allow.yaml").read_text())["entries"]:
        assert _support_fraction(e) >= 0.5, e
    cp = run("baseline allowlist learn good-runs/ -o team.learned.yaml --json | jq .added", cwd=tmp_path,
             shell=True)
    assert cp.returncode == 0, cp.stderr
    added = json.loads(cp.stdout)
    assert added is not None
    cp = run(BASELINE, "diff", "good/", "bad.parquet", "--learned", "team.learned.yaml", "--json", cwd=tmp_path)
    assert cp.returncode == 1, cp.stderr
    assert "team.learned.yaml" in json.loads(cp.stdout)["settings"]["allowlist"]


def test_allowlist_learn_json_counts_and_entries(recs, tmp_path):
    cp = run(BASELINE, "allowlist", "learn", recs / "good-runs", "-o", tmp_path / "a.yaml", "--json")
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert isinstance(doc, dict) and "added" in doc
    assert any(isinstance(v, list) for v in doc.values()), doc  # the entries learned


# --------------------------------------------------------------------------- expected_errors.yaml format

DOC_KEYS = {"id", "source", "reason", "probe", "errno", "path", "context", "comm"}


def _support_fraction(e) -> float:
    s = e["support"]
    if isinstance(s, dict):  # {runs: seen, total: ...}
        return s["runs"] / s["total"]
    if isinstance(s, str) and "/" in s:
        a, b = s.split("/")
        return int(a) / int(b)
    return float(s)


def _errno_ok(pattern: str) -> bool:
    names = set(errno_mod.errorcode.values())
    alts = re.sub(r"[{}]", ",", pattern).split(",")
    return all(a in names or a in ("*", "") or any(ch in a for ch in "*?[") for a in alts)


def test_shipped_expected_errors_documented_format():
    doc = yaml.safe_load((ROOT / "expected_errors.yaml").read_text())
    assert doc["version"] == 1 and isinstance(doc["entries"], list) and doc["entries"]
    ids = [e["id"] for e in doc["entries"]]
    assert len(ids) == len(set(ids))
    for e in doc["entries"]:
        assert set(e) <= DOC_KEYS, set(e) - DOC_KEYS
        assert e["source"] == "curated" and e["id"].startswith("curated-")
        assert isinstance(e["reason"], str) and e["reason"].strip()
        assert isinstance(e["probe"], str) and isinstance(e["errno"], str)
        assert _errno_ok(e["errno"]), e["errno"]
        for k in ("path", "context", "comm"):
            assert k not in e or isinstance(e[k], str)


def test_learned_entries_documented_format(recs, tmp_path):
    """Learned entries carry probe, errno, normalised path, process name (context), support
    (good runs seen / total), first/last seen and source: learned."""
    out = tmp_path / "learned.yaml"
    run(BASELINE, "allowlist", "learn", recs / "good-runs", "-o", out, check_rc=0)
    doc = yaml.safe_load(out.read_text())
    assert doc["version"] == 1 and doc["entries"]
    for e in doc["entries"]:
        assert e["source"] == "learned"
        assert isinstance(e["id"], str) and isinstance(e["probe"], str) and _errno_ok(e["errno"])
        assert isinstance(e["context"], str) and e["context"]
        assert 0 < _support_fraction(e) <= 1
        seen = {k for k in e if "first" in k} and {k for k in e if "last" in k}
        assert seen, e
        if "path" in e:
            assert not re.search(r"/\d+(/|$)", e["path"]), e["path"]  # digits normalised (<n>)
    assert any(e["errno"] == "ENOENT" for e in doc["entries"])


def test_learning_into_curated_file_keeps_curated_entries_and_comments(recs, tmp_path):
    out = tmp_path / "expected_errors.yaml"
    shutil.copyfile(ROOT / "expected_errors.yaml", out)
    before = yaml.safe_load(out.read_text())["entries"]
    run(BASELINE, "allowlist", "learn", recs / "good-runs", "-o", out, check_rc=0)
    text = out.read_text()
    assert text.startswith("# Curated expected errors")
    after = yaml.safe_load(text)["entries"]
    assert after[: len(before)] == before
    assert all(e["source"] == "learned" for e in after[len(before):])


def test_readme_comm_entry_loads(recs, tmp_path):
    entry = {"version": 1, "entries": [{
        "id": "curated-etimedout-aria-retries-arp", "source": "curated",
        "reason": "aria's launcher retries an INIT->RTR whose neighbour did not resolve; brisk's does not",
        "probe": "rdma_addr_find_l2_eth_by_grh", "errno": "ETIMEDOUT", "context": "modify_qp", "comm": "python3"}]}
    f = tmp_path / "comm.yaml"
    f.write_text(yaml.safe_dump(entry))
    cp = run(BASELINE, "diff", recs / "good.parquet", recs / "bad.parquet", "--allowlist", f)
    assert cp.returncode == 1, cp.stderr


def test_fleet_learned_entries_documented_format(fleet, tmp_path):
    ds = copy_of(fleet, tmp_path)
    out = tmp_path / "expected_errors.yaml"
    shutil.copyfile(ROOT / "expected_errors.yaml", out)
    before = yaml.safe_load(out.read_text())["entries"]
    cp = run(BASELINE, "learn", ds, "--expected-out", out)
    assert cp.returncode == 0, cp.stderr
    assert (ds / "baseline-model.parquet").is_file()
    doc = yaml.safe_load(out.read_text())
    assert doc["entries"][: len(before)] == before
    for e in doc["entries"][len(before):]:
        assert e["source"] == "learned" and isinstance(e["probe"], str) and _errno_ok(e["errno"])
        assert "comm" not in e or isinstance(e["comm"], str)


# --------------------------------------------------------------------------- simulate examples

NOW = dt.datetime.now(dt.UTC)


def _layout_ok(d: Path):
    for t in ("events", "counters"):
        assert list(d.glob(f"{t}/date=*/host=*/part-*.parquet")), t


def _snap_times(spool: Path) -> list[dt.datetime]:
    out = []
    for s in spool.glob("*/snap-*"):
        m = re.match(r"snap-(\d{8}T\d{6})", s.name)
        out.append(dt.datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=dt.UTC))
    return out


SIM_CASES = {  # example -> (argv with sizes scaled to 2 hosts / 1 hour, check)
    "sim_layout": ["--hosts", "2", "--hours", "1", "--seed", "1"],
    "sim_spool": ["--hosts", "4", "--hours", "1", "--spool"],
    "sim_workers": ["--hosts", "2", "--hours", "1", "--workers", "2"],
    "sim_events_target": ["--hosts", "2", "--hours", "1", "--events-target", "600"],
    "sim_scenario": ["--hosts", "2", "--hours", "1", "--scenario", "efault_peer_cascade,crash_loop_fw_bad_state"],
    "sim_trial": ["--hosts", "2", "--hours", "2", "--start", "2h", "--spool"],
}
SCENARIOS = ["dmabuf_peer_fallback", "efault_peer_cascade", "dmabuf_eperm_new_driver", "mkey_cache_enomem",
             "crash_loop_fw_bad_state", "cleanup_ebusy_unprobed", "memlock_limit", "stale_qp_handle",
             "neigh_resolve_timeout", "gid_query_empty_slot", "rdmacg_eagain_retry"]


@pytest.mark.parametrize("case", list(SIM_CASES))
def test_simulate_examples(case, tmp_path):
    out = tmp_path / "out"
    cp = run(BASELINE, "simulate", *SIM_CASES[case], "--out", out)
    assert cp.returncode == 0, cp.stderr
    if case in ("sim_spool", "sim_trial"):
        hosts = [h for h in (out / "spool").iterdir() if h.is_dir()]
        assert len(hosts) == (4 if case == "sim_spool" else 2)
        for h in hosts:
            snaps = list(h.glob("snap-*"))
            assert snaps
            for s in snaps:
                assert re.fullmatch(r"snap-\d{8}T\d{6}(\.\d+)?Z-\d+", s.name), s.name
                assert {p.name for p in s.iterdir()} >= {"events.parquet", "counters.parquet"}
        if case == "sim_trial":  # the last two hours: inside the audit's window (now - 2 h)
            times = _snap_times(out / "spool")
            assert min(times) >= NOW - dt.timedelta(hours=2, minutes=1)
            assert max(times) <= dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
        return
    _layout_ok(out)
    if case == "sim_events_target":
        n = len(rows(out / "events"))
        assert 300 <= n <= 1200, n  # "about N event rows" (2 hosts' hour holds ~850 at most)
    if case == "sim_scenario":
        text = json.dumps(rows(out / "truth"), default=str)
        named = {s for s in SCENARIOS if s in text}
        assert named and named <= {"efault_peer_cascade", "crash_loop_fw_bad_state"}, named


def test_simulate_learn_audit_chain_then_evaluate(tmp_path):
    f = tmp_path / "f"
    cp = run(f"baseline simulate --hosts 2 --hours 1 --out {f} && baseline learn {f} && baseline audit {f}",
             shell=True)
    assert cp.returncode == 0, cp.stderr
    assert (f / "baseline-model.parquet").is_file()
    assert {p.name for p in (f / "audit").glob("*.parquet")} >= {"findings.parquet", "clusters.parquet",
                                                                  "host_alerts.parquet"}
    cp = run(BASELINE, "evaluate", f)
    assert cp.returncode == 0, cp.stderr and cp.stdout


def test_simulate_json_summary(tmp_path):
    cp = run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--json", "-o", tmp_path / "s")
    doc = json.loads(cp.stdout)
    assert cp.returncode == 0 and isinstance(doc, dict)
    assert doc["hosts"] == 2 and doc["hours"] == 1 and doc["seed"] == 0


# --------------------------------------------------------------------------- learn / audit / evaluate / report


def test_learn_examples(fleet, recent, tmp_path):
    ds = copy_of(fleet, tmp_path)
    run(BASELINE, "learn", "fleet/", cwd=tmp_path, check_rc=0)
    assert (ds / "baseline-model.parquet").is_file()
    run(BASELINE, "learn", "fleet/", "-o", "model.parquet", "--since", "2026-11-28", cwd=tmp_path, check_rc=0)
    assert (tmp_path / "model.parquet").is_file()
    r = copy_of(recent, tmp_path, "recent")
    cp = run(BASELINE, "learn", r, "--since", "2d", "--json", check_rc=0)
    doc = json.loads(cp.stdout)
    assert isinstance(doc, dict)


def test_audit_default_uses_saved_model_and_says_so(audited):
    cp = run(BASELINE, "audit", "fleet/", cwd=audited.parent, check_rc=0)
    assert "baseline-model.parquet" in cp.stdout + cp.stderr
    assert {p.name for p in (audited / "audit").glob("*.parquet")} >= {"findings.parquet", "clusters.parquet",
                                                                       "host_alerts.parquet"}


def test_audit_json_model_drift_names_operations(audited, tmp_path):
    """A saved model is extended with DATASET's good traces; --json: model_drift names operations."""
    ds = copy_of(audited, tmp_path)
    doc = json.loads(run(BASELINE, "audit", ds, "--json", check_rc=0).stdout)
    assert isinstance(doc["model_drift"], list) and doc["model_drift"]
    for d in doc["model_drift"]:
        assert isinstance(d["operation"], str)


def test_audit_example_model_since_out(audited, tmp_path):
    ds = copy_of(audited, tmp_path)
    run(BASELINE, "learn", ds, "-o", tmp_path / "model.parquet", check_rc=0)
    # the data spans 00:00-01:00 of 2026-11-28: the example's 06:00 moved to 00:30
    cp = run(BASELINE, "audit", "fleet/", "--model", "model.parquet", "--since", "2026-11-28T00:30:00Z", "-o",
             "audit/", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "audit" / "findings.parquet").exists()
    ts = [r for r in rows(tmp_path / "audit" / "findings.parquet")]
    assert ts is not None


def test_audit_example_html_allowlist(audited, tmp_path):
    shutil.copyfile(ROOT / "expected_errors.yaml", tmp_path / "expected_errors.yaml")
    ds = copy_of(audited, tmp_path)
    cp = run(BASELINE, "audit", ds, "--html", "audit.html", "--allowlist", "expected_errors.yaml", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    html = (tmp_path / "audit.html").read_text()
    assert html.lstrip().lower().startswith(("<!doctype html", "<html"))
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", html)  # self-contained


def test_audit_example_refit_since_json(recent, tmp_path):
    ds = copy_of(recent, tmp_path)
    cp = run(BASELINE, "audit", ds, "--refit", "--since", "2h", "--json")
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    # "a summary (counts, files, top clusters)"
    assert isinstance(doc["findings"], int) and isinstance(doc["clusters"], int)
    assert isinstance(doc["host_alerts"], int)
    assert isinstance(doc["files"], dict) and all(Path(p).exists() for p in doc["files"].values())
    assert isinstance(doc["top_clusters"], list)


def test_evaluate_examples(audited, tmp_path):
    cp = run(BASELINE, "evaluate", audited)
    assert cp.returncode == 0, cp.stderr
    out = tmp_path / "out"
    run(BASELINE, "audit", copy_of(audited, tmp_path), "-o", out, check_rc=0)
    cp = run(BASELINE, "evaluate", audited, "--findings", out, "--json")
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert isinstance(doc, dict) and doc
    assert all(isinstance(v, (int, float, dict, list, str, type(None))) for v in doc.values())


def test_evaluate_example_pipeline_findings_latest(audited, pipeline_findings):
    a = json.loads(run(BASELINE, "evaluate", audited, "--json", check_rc=0).stdout)
    cp = run(BASELINE, "evaluate", audited, "--findings", pipeline_findings, "--json")
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)["findings"] == a["findings"]


def test_report_examples(audited, pipeline_findings, tmp_path):
    cp = run(BASELINE, "report", "fleet/audit/", cwd=audited.parent)
    assert cp.returncode == 0 and cp.stdout.strip(), cp.stderr
    cp = run(BASELINE, "report", audited / "audit", "--html", tmp_path / "audit.html")
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "audit.html").read_text().lstrip().lower().startswith(("<!doctype html", "<html"))
    cp = run(BASELINE, "report", pipeline_findings, "--json")
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)  # a summary (counts, top clusters, host alerts)
    assert isinstance(doc, dict)
    assert any("cluster" in k for k in doc) and any("alert" in k for k in doc), sorted(doc)


def test_expected_learn_examples(audited, tmp_path):
    ds = copy_of(audited, tmp_path)
    cp = run(BASELINE, "expected", "learn", "fleet/", "-o", "expected_errors.yaml", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    doc = yaml.safe_load((tmp_path / "expected_errors.yaml").read_text())
    assert doc["version"] == 1 and isinstance(doc["entries"], list)
    for e in doc["entries"]:
        assert {"id", "source", "probe", "errno"} <= set(e)
    cp = run(BASELINE, "expected", "learn", ds, "--since", "2026-11-28", "--min-hosts", "5", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    cp = run(BASELINE, "expected", "learn", ds, "-o", tmp_path / "e2.yaml", "--json", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout) is not None  # "the learned entries as one JSON document"


# --------------------------------------------------------------------------- ingest examples


@pytest.fixture()
def spool(tmp_path):
    out = tmp_path / "sim"
    run(BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--spool", "--out", out, check_rc=0)
    return out / "spool"


def test_ingest_example_plain(spool, tmp_path):
    ds = tmp_path / "dataset"
    cp = run(BASELINE, "ingest", spool, ds)
    assert cp.returncode == 0, cp.stderr
    _layout_ok(ds)
    assert not list(spool.glob("*/snap-*"))  # moved, not copied


def test_ingest_example_quarantine_keep_spool(spool, tmp_path):
    before = sorted(p.name for p in spool.glob("*/snap-*"))
    cp = run(BASELINE, "ingest", spool, tmp_path / "ds", "--quarantine", tmp_path / "q", "--keep-spool")
    assert cp.returncode == 0, cp.stderr
    assert sorted(p.name for p in spool.glob("*/snap-*")) == before


def test_ingest_example_compact_json(spool, tmp_path):
    ds = tmp_path / "ds"
    cp = run(BASELINE, "ingest", spool, ds, "--compact-min-files", "4", "--json")
    assert cp.returncode == 0, cp.stderr
    assert isinstance(json.loads(cp.stdout), dict)
    for part in ds.glob("events/date=*/host=*"):
        assert len(list(part.glob("part-*.parquet"))) < 4, part


def test_ingest_example_compact_days_after(spool, tmp_path):
    ds = tmp_path / "ds"
    cp = run(BASELINE, "ingest", spool, ds, "--compact-days-after", "2")
    assert cp.returncode == 0, cp.stderr
    day = ds / "events" / "date=2026-11-28"
    assert list(day.glob("*.parquet")), sorted(p.name for p in day.iterdir())  # day files across hosts


# --------------------------------------------------------------------------- coverage examples


@pytest.fixture(scope="module")
def coverage_runs(audited, tmp_path_factory):
    base = tmp_path_factory.mktemp("cov")
    dsets = {}
    for name in ("cov_default", "cov_week_out", "cov_probes_logs", "cov_json"):
        dsets[name] = base / name / "DATASET"
        shutil.copytree(audited, dsets[name], symlinks=True)
    w = base / "cov_probes_logs"
    (w / "bpf").symlink_to(ROOT / "bpf")
    (w / "logs").mkdir()
    for i, log in enumerate(sorted((audited / "joblogs").glob("*.log"))):
        shutil.copyfile(log, w / "logs" / f"nccl-{i}.log")
    argv = {
        "cov_default": ["DATASET"],
        "cov_week_out": ["DATASET", "--week", "2026-W48", "--out", "reports/"],
        "cov_probes_logs": ["DATASET", "--probes", "bpf/probes/rdma.yaml", "--nccl-logs", "logs/nccl-*.log"],
        "cov_json": ["DATASET", "--json"],
    }
    with ThreadPoolExecutor(4) as pool:
        res = dict(pool.map(lambda n: (n, run(BASELINE, "coverage", *argv[n], cwd=base / n)), argv))
    return base, res


@pytest.mark.parametrize("case", ["cov_default", "cov_week_out", "cov_probes_logs", "cov_json"])
def test_coverage_examples(coverage_runs, case):
    base, res = coverage_runs
    cp = res[case]
    assert cp.returncode == 0, cp.stderr
    where = base / case / ("reports" if case == "cov_week_out" else "DATASET/reports") / "2026-W48"
    names = {p.suffix for p in where.iterdir()}
    assert {".html", ".md", ".parquet"} <= names, names  # HTML, Markdown, Parquet


def test_coverage_json_summary(coverage_runs):
    """(week, hosts, probes, never fired, application-failure coverage, files)"""
    doc = json.loads(coverage_runs[1]["cov_json"].stdout)
    assert doc["week"] == "2026-W48"
    assert isinstance(doc["hosts"], int) and doc["hosts"] == 2
    assert isinstance(doc["probes"], int)
    assert isinstance(doc["never_fired"], list) and all(isinstance(p, str) for p in doc["never_fired"])
    assert any(k.startswith("app") and isinstance(v, float) and 0 <= v <= 1 for k, v in doc.items()), sorted(doc)
    assert isinstance(doc["files"], dict)
    assert all(Path(coverage_runs[0] / "cov_json" / p).exists() or Path(p).exists() for p in doc["files"].values())


def test_coverage_example_app_failures_table(coverage_runs, tmp_path):
    """`--nccl-logs app_failures.parquet`: a log pipeline's table of tracer.schema's app_failures
    (architecture.md: the weekly report's input, the NCCL logs parsed or such a table). (The help
    first said "the app_failures table" and architecture.md listed it among the weekly report's
    outputs; no command writes one.)"""
    base, _ = coverage_runs
    ds = base / "cov_default" / "DATASET"
    rows = [{"time": dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.UTC), "host": "gpu00001", "pid": 4242, "tid": 4242,
             "device": "0", "job_id": "j1", "verb": "ibv_create_qp", "errno": "ENOMEM",
             "message": "Call to ibv_create_qp failed", "source": "pipeline:1"},
            {"time": dt.datetime(2026, 11, 24, 10, 5, tzinfo=dt.UTC), "host": "gpu00002", "pid": 4243, "tid": 4243,
             "device": "1", "job_id": "j1", "verb": "ibv_reg_mr", "errno": "EFAULT",
             "message": "Call to ibv_reg_mr failed", "source": "pipeline:2"}]
    write_table(pl.DataFrame(rows, schema=polars_schema("app_failures")), tmp_path / "app_failures.parquet",
                "app_failures")
    cp = run(BASELINE, "coverage", ds, "--week", "2026-W48", "--nccl-logs", "app_failures.parquet",
             "-o", tmp_path / "r", "--json", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)["app_failures"] == 2


# --------------------------------------------------------------------------- suggest-probes examples


def test_suggest_probes_btf():
    if not Path("/sys/kernel/btf").is_dir():
        pytest.skip("no /sys/kernel/btf")
    cp = run(BASELINE, "suggest-probes", "--btf", "/sys/kernel/btf")
    assert cp.returncode == 0, cp.stderr


def test_suggest_probes_bpftool_symbols_old(tmp_path):
    """bpftool's raw dump as --symbols; an old list holding a probe the new one lacks names it vanished."""
    if shutil.which("bpftool") is None or not Path("/sys/kernel/btf/vmlinux").exists():
        pytest.skip("no bpftool or vmlinux BTF")
    # mlx5_ib is not loaded on this VM: vmlinux's BTF stands in for the module's
    cp = run("bpftool btf dump file /sys/kernel/btf/vmlinux format raw > new.txt", cwd=tmp_path, shell=True)
    assert cp.returncode == 0, cp.stderr
    probes = yaml.safe_load((ROOT / "bpf" / "probes" / "rdma.yaml").read_text())
    (tmp_path / "old.txt").write_text("ib_uverbs_reg_mr\nib_uverbs_create_qp\n")
    (tmp_path / "bpf").symlink_to(ROOT / "bpf")
    cp = run(BASELINE, "suggest-probes", "--symbols", "new.txt", "--old", "old.txt", "--probes",
             "bpf/probes/rdma.yaml", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert probes and "ib_uverbs_reg_mr" in cp.stdout


def test_suggest_probes_kallsyms_reference_all_json():
    cp = run(BASELINE, "suggest-probes", "--symbols", "/proc/kallsyms", "--reference", "rdma_control_path.yaml",
             "--all", cwd=ROOT / "reference")
    assert cp.returncode == 0, cp.stderr
    js = run(BASELINE, "suggest-probes", "--symbols", "/proc/kallsyms", "--reference", "rdma_control_path.yaml",
             "--all", "--json", cwd=ROOT / "reference")
    assert js.returncode == 0, js.stderr
    for line in js.stdout.splitlines():  # JSON lines
        if line.strip():
            assert isinstance(json.loads(line), dict)


# --------------------------------------------------------------------------- export examples


def _trace_events(p: Path) -> list[dict]:
    doc = json.loads(p.read_text())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_export_example_recording(recs, tmp_path):
    shutil.copyfile(recs / "good.parquet", tmp_path / "run.parquet")
    run(BASELINE, "export", "run.parquet", "-o", "run.json", cwd=tmp_path, check_rc=0)
    ev = [e for e in _trace_events(tmp_path / "run.json") if e.get("ph") == "X"]
    assert ev and {"pid", "tid", "ts", "dur", "name"} <= set(ev[0])
    assert len({(e["pid"], e["tid"]) for e in ev}) >= 2  # a track per process/thread (sh, cat, ls)


def test_export_examples_dataset(audited, tmp_path):
    ev_rows = rows(audited / "events")
    fail = [r for r in ev_rows if r["kind"] == "failure"]
    host = fail[0]["host"] if "host" in fail[0] else fail[0]["trace_id"].split(":")[0]
    cp = run(BASELINE, "export", audited / "events", "--host", host, "--kind", "failure", "-o", tmp_path / "f.json")
    assert cp.returncode == 0, cp.stderr
    assert [e for e in _trace_events(tmp_path / "f.json") if e.get("ph") == "X"]
    tid = fail[0]["trace_id"]
    cp = run(BASELINE, "export", audited / "events", "--trace-id", tid, "--align", "start", "-o",
             tmp_path / "tree.json")
    assert cp.returncode == 0, cp.stderr
    xs = [e for e in _trace_events(tmp_path / "tree.json") if e.get("ph") == "X"]
    assert xs and min(e["ts"] for e in xs) == 0  # all at 0


def test_export_example_diff(recs, tmp_path):
    cp = run(BASELINE, "export", "--diff", recs / "g1.parquet", recs / "g2.parquet", recs / "bad.parquet", "-o",
             tmp_path / "diff.json")
    assert cp.returncode == 0, cp.stderr
    ev = _trace_events(tmp_path / "diff.json")
    assert any(e.get("ph") in ("i", "I") for e in ev)  # the bifurcation as an instant event


# --------------------------------------------------------------------------- docs: flags, bench commands, names

DOC_FILES = [DOCS / "benchmarks.md", DOCS / "architecture.md"]
SUBS = {"tracer": {"record", "run", "probes"}, "baseline": {
    "diff", "allowlist", "simulate", "evaluate", "learn", "audit", "expected", "report", "ingest", "coverage",
    "suggest-probes", "export"}}


def _spans() -> list[str]:
    out = []
    for f in DOC_FILES:
        out += re.findall(r"`([^`\n]+)`", f.read_text())
    return out


def _cited_flags():
    cited = set()
    for span in _spans():
        words = span.split()
        if not words or words[0] not in SUBS or len(words) < 2 or words[1] not in SUBS[words[0]]:
            continue
        cmd = [words[0], words[1]]
        rest = words[2:]
        if rest and cmd[1] in ("probes", "allowlist", "expected") and not rest[0].startswith("-"):
            cmd.append(rest[0])
            rest = rest[1:]
        for w in rest:
            if w == "--":
                break
            m = re.match(r"^\[?(--?[a-zA-Z][\w-]*)", w)
            if m:
                cited.add((" ".join(cmd), m.group(1)))
    return sorted(cited)


CITED_FLAGS = _cited_flags()


@pytest.mark.parametrize(("cmd", "flag"), CITED_FLAGS, ids=[f"{c} {f}" for c, f in CITED_FLAGS])
def test_docs_cited_flag_in_help(cmd, flag):
    text = help_text(*cmd.split())
    assert re.search(rf"(^|[\s,\[]){re.escape(flag)}([\s,=\]]|$)", text, re.M), f"{cmd} --help has no {flag}"


def _cited_bench():
    cited: dict[str, set[str]] = {}
    for span in _spans():
        m = re.match(r"^(?:\.venv/bin/python -m |python -m )?bench[._]?(?:\.)?([a-z_]+)(.*)$", span)
        if not m or span.startswith("bench/"):
            continue
        name = m.group(1)
        name = name if name.startswith("bench_") or (ROOT / "bench" / f"{name}.py").exists() else f"bench_{name}"
        flags = cited.setdefault(name, set())
        for w in m.group(2).split():
            fm = re.match(r"^\[?(--[a-zA-Z][\w-]*)", w)
            if fm:
                flags.add(fm.group(1))
    for f in DOC_FILES:
        for name in re.findall(r"bench/([a-z_]+)\.py", f.read_text()):
            cited.setdefault(name, set())
    cited.pop("NAME", None)
    return cited


CITED_BENCH = _cited_bench()


BENCH_XFAIL: dict[str, str] = {}  # (diff_memory printed its usage to stderr, exit 2, for --help)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=BENCH_XFAIL[n]))
                                  if n in BENCH_XFAIL else n for n in sorted(CITED_BENCH)])
def test_docs_cited_bench_help(name):
    """Each `bench_X` the docs cite starts (`python -m bench.X --help`, exit 0) and has the flags cited."""
    assert (ROOT / "bench" / f"{name}.py").is_file(), name
    cp = run(PY, "-m", f"bench.{name}", "--help", cwd=ROOT, timeout=60)
    assert cp.returncode == 0, cp.stderr
    missing = [f for f in sorted(CITED_BENCH[name]) if not re.search(rf"(^|[\s,\[]){re.escape(f)}\b", cp.stdout,
                                                                      re.M)]
    assert not missing, f"bench.{name} --help lacks {missing}"


def test_make_bench_full_flag():
    cp = run(PY, "-m", "bench.run_all", "--help", cwd=ROOT, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert "--full" in cp.stdout


def _cited_names():
    out = set()
    for span in re.findall(r"`([^`\n]+)`", (DOCS / "benchmarks.md").read_text()):
        s = span.removesuffix("()")
        if re.fullmatch(r"(baseline|tracer)(\.[A-Za-z_]\w*)+", s):
            out.add(s)
    # benchmarks.md: "(`baseline.run.early`, ...) was built, measured and reverted": history, not a name
    out.discard("baseline.run.early")
    return sorted(out)


CITED_NAMES = _cited_names()


@pytest.mark.parametrize("dotted", CITED_NAMES)
def test_benchmarks_cited_module_or_name_exists(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            assert hasattr(obj, attr), f"{'.'.join(parts[:i])} has no {attr} ({dotted})"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"no module of {dotted}")
