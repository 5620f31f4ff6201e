"""Every example shown in every `--help` runs (issue 11 item 2).

The examples are read from the parsers themselves (every subcommand's epilog, "examples:"
section), so a new example is run as soon as it is written. Each runs through bash in a fresh
sandbox directory holding the small data the examples name: recordings of a real job script
(root + bcc), a simulated fleet with its learned model and audit, a spool, NCCL job logs,
symbol lists, the probe sets (bpf/ linked from the installed data) and the reference YAML.

The examples are documentation, so they name production paths and sizes. The test rewrites
only those (SUBSTITUTIONS: /tmp/fleet -> fleet, SPOOL -> spool, --hosts 10000 -> --hosts 3,
-p 1234 -> a live process, a daemon example gets `-d 2s`...), never the command or its flags.
An example whose needs this machine cannot meet (an RDMA module's BTF, fexit under lockdown)
must still end cleanly: exit 0, or exit 2 with one line saying why (EXPECTED_HERE).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracer import resources

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ROOT = os.geteuid() == 0


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of both CLIs by its prog ('baseline expected learn', ...)."""
    from baseline import cli as baseline_cli
    from tracer import cli as tracer_cli
    from tracer.cli.common import build_parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser) -> None:
        found[parser.prog] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    walk(sub)

    for name, mod in (("tracer", tracer_cli), ("baseline", baseline_cli)):
        walk(build_parser(name, "", mod.SUBCOMMANDS, mod.EPILOG))
    return found


def _examples() -> list[str]:
    lines: list[str] = []
    for parser in _parsers().values():
        epilog = parser.epilog or ""
        if "examples:" not in epilog:
            continue
        block = epilog.split("examples:", 1)[1]
        for line in block.splitlines():
            stripped = line.strip()
            if stripped and not line.startswith(" "):
                break  # the next section ("exit status ...", prose)
            # a command line starts with a program; a comment after 2+ spaces or '#' is dropped
            if re.match(r"^(tracer|baseline|kill|bpftool)\b", stripped):
                command = re.split(r"\s{2,}|\s#", stripped, maxsplit=1)[0].strip()
                if command not in lines:
                    lines.append(command)
    return lines


EXAMPLES = _examples()

# Production paths and sizes in the examples -> the sandbox's (applied in order, as whole words).
SUBSTITUTIONS = [
    ("/var/spool/tracebase", "spool"), ("/srv/tracebase/dataset", "dataset"),
    ("/srv/tracebase/quarantine", "quarantine"), ("/var/lib/node_exporter/textfile/", "textfile/"),
    ("/srv/tracebase/findings", "pipe/findings"), ("/tmp/fleet", "fleet"), ("/tmp/spool", "sim-spool"), ("/tmp/out", "fleet/findings"), ("/tmp/f", "sim-f"),
    ("/data/fleet", "sim-big"), ("/data/big", "sim-big2"), ("SPOOL", "spool"), ("DATASET", "dataset"),
    ("--hosts 10000", "--hosts 3"), ("--hosts 2000", "--hosts 3"), ("--hosts 50", "--hosts 3"),
    ("--hosts 20", "--hosts 3"), ("--hours 24", "--hours 1"), ("--events-target 100000000", "--events-target 20000"),
    ("--workers 2", "--workers 1"),
    ("/sys/kernel/btf/mlx5_ib", "/sys/kernel/btf/vmlinux"),  # no RDMA module here: the same dump of vmlinux
]

# Examples that cannot fully work on this machine: allowed exit statuses and why.
EXPECTED_HERE = {
    "tracer run rdma": ({0, 2}, "the rdma set needs fexit, which a lockdown kernel refuses (one-line reason)"),
    "tracer probes check": ({0, 1}, "exit 1 when some probe of a set is absent here (no RDMA driver)"),
    "baseline diff": ({0, 1}, "exit 1 is 'anomaly found', the point of the example"),
}


def _expected(command: str) -> tuple[set[int], str]:
    for prefix, allowed in EXPECTED_HERE.items():
        if command.startswith(prefix):
            return allowed
    return {0}, ""


JOB = textwrap.dedent("""\
    #!/bin/sh
    # a small job: reads its config, then the data file the config names
    data=$(sed -n 's/^data *= *//p' config.ini)
    cat "$data" > /dev/null && echo "rows: $(wc -l < "$data")"
""")


def _run(cmd: list[str] | str, cwd: Path, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def _tool(name: str) -> str:
    return str(BIN / name)


@pytest.fixture(scope="module")
def data(tmp_path_factory, request) -> Path:
    """The files the examples name, built once (copied into each example's sandbox)."""
    base = tmp_path_factory.mktemp("help-data")
    (base / "job.sh").write_text(JOB)
    (base / "job.sh").chmod(0o755)
    (base / "config.ini").write_text(f"[job]\ndata = {base}/rows.txt\n")
    (base / "rows.txt").write_text("a\nb\n")
    (base / "train.py").write_text("import json, sys\nprint(json.dumps({'loss': 0.1}))\n")
    (base / "server").write_text("#!/bin/sh\nsleep 2\n")
    (base / "server").chmod(0o755)
    # a start script: puts a short-lived daemon in the background and returns (--linger)
    (base / "start.sh").write_text("#!/bin/sh\n( sleep 0.3; cat config.ini > /dev/null ) &\necho started\n")
    (base / "start.sh").chmod(0o755)
    (base / "Makefile").write_text("all:\n\t@test -e missing-optional-file || true\n")
    os.symlink(resources.BPF_DIR, base / "bpf")
    shutil.copy(resources.EXPECTED_ERRORS, base / "expected_errors.yaml")
    shutil.copy(REPO / "reference" / "rdma_control_path.yaml", base / "rdma_control_path.yaml")
    baseline = _tool("baseline")
    # A fleet of the last hour (examples say `--since 2h`): dataset, learned model and audit where
    # the commands look by default, and under the names the examples give.
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=70)).strftime("%Y-%m-%dT%H:%M:00Z")
    for argv in (
        [baseline, "simulate", "--hosts", "3", "--hours", "1", "--seed", "1", "--start", start, "--out", "fleet"],
        [baseline, "simulate", "--hosts", "2", "--hours", "0.05", "--seed", "2", "--start", start, "--spool",
         "--out", "spooled"],
        [baseline, "learn", "fleet", "-o", "model.parquet"],
        [baseline, "audit", "fleet", "--model", "model.parquet", "-o", "audit"],
        [baseline, "learn", "fleet"],
        [baseline, "audit", "fleet"],
        [baseline, "audit", "fleet", "-o", "fleet/findings"],
    ):
        proc = _run(argv, base)
        assert proc.returncode == 0, (argv, proc.stderr)
    _pipeline_findings(base)
    shutil.move(base / "spooled" / "spool", base / "spool")
    shutil.copytree(base / "fleet", base / "dataset", ignore=shutil.ignore_patterns("findings"))
    logs = sorted((base / "fleet").rglob("*.log"))
    (base / "logs").mkdir()
    for i, log in enumerate(logs[:3]):
        shutil.copy(log, base / "logs" / f"nccl-{i}.log")
    from baseline.pipeline.nccl import load_app_failures
    from tracer.schema import write_table

    if logs:
        write_table(load_app_failures(logs).failures, base / "app_failures.parquet", "app_failures")
    dump = _run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw"], base) \
        if shutil.which("bpftool") else None
    if dump is not None and dump.returncode == 0:
        (base / "new.txt").write_text(dump.stdout)
        # the older kernel: one function renamed, one gone
        text = dump.stdout.replace("'ib_", "'old_ib_", 1) if "'ib_" in dump.stdout else dump.stdout
        (base / "old.txt").write_text(text)
    else:
        (base / "new.txt").write_text(Path("/proc/kallsyms").read_text())
        (base / "old.txt").write_text(Path("/proc/kallsyms").read_text())
    # recordings of the job (real program, real BPF) for the diff/export/allowlist examples
    from conftest import bpf_unavailable_reason

    if bpf_unavailable_reason() is None:
        # Recorded by the session's loaded recorder, as `tracer record` records (the same
        # SyscallRecorder.record and output.save): four `tracer record` processes compiled the
        # BPF program four times (~3.5 s CPU each). The examples showing `tracer record` still
        # run the CLI itself.
        from tracer.record.output import save

        recorder = request.getfixturevalue("recorder")

        def record(name: str, label: str) -> int | None:
            null = os.open(os.devnull, os.O_RDWR)
            try:
                rec = recorder.record([str(base / "job.sh")], label=label, cwd=base, stdin=null, stdout=null,
                                      stderr=null, timeout=60)
            finally:
                os.close(null)
            save(rec, base / f"{name}.parquet")
            return rec.exit_status

        for name in ("g1", "g2", "g3"):
            assert record(name, "good") == 0
        (base / "rows.txt").rename(base / "rows.moved")
        assert record("bad", "bad") == 1  # cat fails: the job's own status
        (base / "rows.moved").rename(base / "rows.txt")
        for alias, src in (("good1", "g1"), ("good2", "g2"), ("good", "g1"), ("run", "g1"), ("failures", "bad")):
            shutil.copy(base / f"{src}.parquet", base / f"{alias}.parquet")
        for d in ("good-runs", "good"):
            (base / d).mkdir()
            for src in ("g1", "g2"):
                shutil.copy(base / f"{src}.parquet", base / d / f"{src}.parquet")
        proc = _run([baseline, "allowlist", "learn", "good-runs", "-o", "team.learned.yaml"], base)
        assert proc.returncode == 0, proc.stderr
    return base


def _pipeline_findings(base: Path) -> None:
    """A findings directory as the scheduled pipeline publishes it (findings/<stamp>/ + LATEST)."""
    from baseline.pipeline import tasks
    from baseline.pipeline.config import load_config, write_default_config

    cfg_path = write_default_config(base / "pipe" / "pipeline.yaml", base / "pipe")
    shutil.copytree(base / "fleet", base / "pipe" / "dataset", ignore=shutil.ignore_patterns("audit", "findings"))
    cfg = load_config(cfg_path)
    tasks.publish_findings(cfg, tasks.audit_new_failures(cfg))


def _ids(data: Path) -> dict[str, str]:
    """Trace ids and host names the examples name, from the data built here."""
    import polars as pl

    from tracer.schema import scan_events

    out: dict[str, str] = {}
    if (data / "failures.parquet").exists():
        out["host1:42"] = pl.read_parquet(data / "failures.parquet", columns=["trace_id"])["trace_id"][0]
    failures = scan_events(data / "dataset" / "events").filter(pl.col("kind") == "failure") \
        .select("trace_id", "host").head(1).collect()
    out["gpu00017:42"] = failures["trace_id"][0]
    out["gpu00017"] = failures["host"][0]
    return out


def _needs_recordings(command: str) -> bool:
    names = ("good.parquet", "bad.parquet", "good1.parquet", "g1.parquet", "run.parquet", "good-runs/", "good/",
             "failures.parquet")
    return command.startswith("tracer record") or any(n in command.split() for n in names) or \
        any(n in command for n in names)


@pytest.mark.parametrize("example", EXAMPLES)
def test_help_example_runs(example: str, data: Path, tmp_path: Path):
    from conftest import bpf_unavailable_reason

    reason = bpf_unavailable_reason()
    if _needs_recordings(example) and reason:
        pytest.skip(f"needs recordings of a real program: {reason}")
    if (example.startswith(("tracer run", "kill ")) or "--attach" in example) and reason:
        pytest.skip(f"loads BPF: {reason}")
    for tool in ("jq", "bpftool"):
        if re.search(rf"(^|\|\s*){tool}\b", example) and shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it as root)")
    box = tmp_path / "box"
    shutil.copytree(data, box, symlinks=True)
    (box / "textfile").mkdir()
    command = example
    for old, new in SUBSTITUTIONS:
        command = re.sub(rf"(?<![\w/.-]){re.escape(old)}(?![\w-])", new, command)
    for old, new in _ids(data).items():
        command = command.replace(old, new)
    helpers: list[subprocess.Popen] = []
    try:
        sleeper = None
        if re.search(r"-p \d+", command):  # a running process to attach to, ended once attached
            sleeper = subprocess.Popen(["sleep", "120"], cwd=box)
            helpers.append(sleeper)
            command = re.sub(r"-p \d+", f"-p {sleeper.pid}", command)
        if command.startswith("tracer run"):
            command = re.sub(r"-d \S+", "-d 2s", command) if " -d " in command else command + " -d 2s"
            if "--spool" not in command:
                command += " --spool spool-run"
        if command.startswith("kill "):  # the signal goes to a running daemon
            daemon = subprocess.Popen([_tool("tracer"), "run", "syscalls", "-d", "20s", "--spool", "spool-run"],
                                      cwd=box, stderr=subprocess.PIPE, text=True)
            helpers.append(daemon)
            _wait_for(lambda: any((box / "spool-run").glob("*/snap-*")), 60)
            command = command.replace("$(pidof tracer)", str(daemon.pid))
        env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
        if sleeper is not None and command.startswith("tracer record"):
            proc = _record_attached(command, box, env, sleeper)
        else:
            proc = _run(["bash", "-o", "pipefail", "-c", command], box, timeout=240, env=env)
        if command.startswith("kill "):
            assert proc.returncode == 0, proc.stderr
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(timeout=60) == 0
            _, err = daemon.communicate()
            assert "capture window" in err, err
            return
    finally:
        for h in helpers:
            if h.poll() is None:
                h.kill()
                h.wait()
    allowed, why = _expected(example)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in allowed, f"{command!r} exited {proc.returncode} ({why or 'expected 0'}):\n{proc.stderr}"
    if proc.returncode == 2:
        # one line saying why, last; a daemon may have announced its start before it (those
        # progress lines are its log, e.g. "tracer run: pid N writing ...; compiling rdma")
        lines = proc.stderr.strip().splitlines()
        errors = [line for line in lines if ": error: " in line or not line.startswith("tracer run: ")]
        assert errors == lines[-1:], proc.stderr


def _record_attached(command: str, box: Path, env: dict, target: subprocess.Popen) -> subprocess.CompletedProcess:
    """Run a `tracer record -p PID` example; end the target once the recorder announces it is
    attached (a fixed sleep would race a slow BPF compile on a loaded machine)."""
    rec = subprocess.Popen(["bash", "-c", command], cwd=box, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    first = ""
    while True:  # until "tracer: recording pid N ..." (or an error and EOF)
        line = rec.stderr.readline()
        first += line
        if not line or "recording pid" in line:
            break
    target.terminate()
    target.wait()
    out, rest = rec.communicate(timeout=240)
    return subprocess.CompletedProcess(rec.args, rec.returncode, out, first + rest)


def _wait_for(cond, timeout: float) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the daemon's first snapshot")


def _runnable_or_top(prog: str, parser: argparse.ArgumentParser) -> bool:
    return prog in ("tracer", "baseline") or not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def test_every_command_has_examples():
    missing = [prog for prog, p in _parsers().items() if _runnable_or_top(prog, p) and "examples:" not in (p.epilog or "")]
    assert missing == [], f"--help without examples: {missing}"


def test_every_command_documents_its_exit_status():
    """Scripts branch on it: 0/1/2 (and 130 for Ctrl-C where the command does not catch it)."""
    parsers = _parsers()
    missing = [prog for prog, p in parsers.items()
               if _runnable_or_top(prog, p) and "exit status" not in p.format_help().lower()]
    assert missing == [], f"--help without the exit status: {missing}"
    assert "1 `diff` found an anomaly" in parsers["baseline"].format_help()
    assert "1 anomaly found" in parsers["baseline diff"].format_help()
    assert "0 done; 2 trouble" in parsers["baseline audit"].format_help()


def test_examples_are_found():
    assert len(EXAMPLES) > 30, EXAMPLES
    assert all(shlex.split(e) for e in EXAMPLES)


def test_help_texts_render_cleanly():
    for prog, parser in _parsers().items():
        text = parser.format_help()
        assert "%%" not in text and "%(" not in text, f"{prog} --help: {text}"


# The shared vocabulary: a short flag means the same long option in every command.
VOCABULARY = {"-o": "--output", "-x": "--failures", "-d": "--duration", "-i": "--interval", "-p": "--pid",
              "-q": "--quiet", "-h": "--help"}


def test_short_flags_mean_the_same_everywhere():
    seen: dict[str, set[str]] = {}
    for prog, parser in _parsers().items():
        for action in parser._actions:
            shorts = [o for o in action.option_strings if len(o) == 2]
            longs = [o for o in action.option_strings if o.startswith("--")]
            for s in shorts:
                seen.setdefault(s, set()).update(longs[:1])
                if s in VOCABULARY:
                    assert VOCABULARY[s] in longs, f"{prog}: {s} is {longs}, expected {VOCABULARY[s]}"
    assert all(len(longs) == 1 for longs in seen.values()), seen


def test_hidden_aliases_are_accepted():
    parsers = _parsers()
    assert parsers["baseline simulate"].parse_args(["--out", "d"]).out == "d"
    assert parsers["baseline simulate"].parse_args(["-o", "d"]).out == "d"
    assert parsers["tracer run"].parse_args(["--failures-only"]).failures_only is True
    assert parsers["tracer run"].parse_args(["-x"]).failures_only is True
    for prog in ("baseline audit", "baseline coverage", "baseline learn"):
        assert parsers[prog].parse_args(["ds", "--out", "x"]).output == "x", prog
    for prog, parser in parsers.items():
        assert "--out " not in parser.format_usage() and "--failures-only" not in parser.format_help(), prog


@pytest.mark.parametrize("prog", ["tracer", "baseline"])
def test_version(prog):
    proc = _run([_tool(prog), "--version"], REPO)
    assert proc.returncode == 0 and re.fullmatch(rf"{prog} \(tracebase\) \d+\.\d+\.\d+\S*\n", proc.stdout), proc
