"""Every command refuses a mistyped flag or a missing input before importing the heavy libraries.

polars, pyarrow, numpy, pandas, scikit-learn (and airflow, matplotlib) cost a command 0.3-0.6 s
of CPU to import. A user pays that on every typo, and the error-path tests on every row, when a
command imports them before checking what it was given. Each case runs the real console entry
point (`baseline.cli.entry` / `tracer.cli.entry`, as the installed scripts do) in a fresh
interpreter on this tree, and reads back, at the process's exit, which of those libraries had
been imported: none may have been, and the error is still the one line, exit status 2. Also
`--help` of every command. No timings: what is imported says it whatever the machine's load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("polars", "pyarrow", "numpy", "pandas", "sklearn", "scipy", "airflow", "matplotlib")
MARK = "HEAVY-IMPORTED="

# Runs the console script's entry; an atexit handler (exit_process runs them before os._exit)
# prints the heavy top-level packages then in sys.modules on stdout's last line.
PROBE = f"""
import atexit, sys
HEAVY = set({HEAVY!r})

def report():
    sys.stdout.write("\\n{MARK}" + ",".join(sorted({{m.partition(".")[0] for m in sys.modules}} & HEAVY)) + "\\n")

atexit.register(report)
prog, *sys.argv[1:] = sys.argv[1:]
sys.argv[0] = prog
if prog == "baseline":
    from baseline.cli import entry
else:
    from tracer.cli import entry
entry()
"""

# (id, argv, words the one-line error names[, "root"]); {m} is a directory that does not exist,
# {here} an empty one, {file} a file holding one line of text, {syms} a symbol list of one name. "root": refused after the
# command's check that it runs as root (a probe set, --spool, -o: root's own mistakes).
REFUSED = [
    # ---- baseline
    ("diff-flag", ["baseline", "diff", "a.parquet", "b.parquet", "--context", "nan"], "--context"),
    ("diff-missing", ["baseline", "diff", "{m}/good.parquet", "{m}/bad.parquet"], "{m}/good.parquet"),
    ("diff-one-trace", ["baseline", "diff", "{m}/bad.parquet"], "TRACE"),
    # the allowlist (YAML) is still read first, as the diff reads it: named before the traces
    ("diff-allowlist-missing", ["baseline", "diff", "{m}/g.parquet", "{m}/b.parquet", "--allowlist", "{m}/a.yaml"],
     "{m}/a.yaml"),
    ("allowlist-flag", ["baseline", "allowlist", "learn", "{m}/g.parquet", "--min-support", "2"], "--min-support"),
    ("allowlist-missing", ["baseline", "allowlist", "learn", "{m}/g.parquet", "-o", "{m}/a.yaml"], "{m}/g.parquet"),
    ("allowlist-out-dir", ["baseline", "allowlist", "learn", "{m}/g.parquet", "-o", "{here}"], "{here}"),
    ("simulate-flag", ["baseline", "simulate", "--hosts", "x", "--out", "{m}/sim"], "--hosts"),
    ("simulate-start", ["baseline", "simulate", "--start", "someday", "--out", "{m}/sim"], "--start"),
    ("evaluate-flag", ["baseline", "evaluate", "{m}", "--nosuch"], "--nosuch"),
    ("evaluate-missing", ["baseline", "evaluate", "{m}/ds"], "{m}/ds"),
    ("learn-flag", ["baseline", "learn", "{m}/ds", "--since", "yesterday"], "--since"),
    ("learn-missing", ["baseline", "learn", "{m}/ds", "-o", "{m}/model.parquet"], "{m}/ds"),
    ("audit-flag", ["baseline", "audit", "{m}/ds", "--since", "soon"], "--since"),
    ("audit-missing", ["baseline", "audit", "{m}/ds", "--out", "{m}/aud"], "{m}/ds"),
    ("audit-out-file", ["baseline", "audit", "{here}", "--out", "{file}"], "{file}"),
    ("audit-model-missing", ["baseline", "audit", "{here}", "--model", "{m}/model.parquet", "--out", "{m}/aud"],
     "{m}/model.parquet"),
    ("audit-allowlist-missing", ["baseline", "audit", "{here}", "--allowlist", "{m}/a.yaml", "--out", "{m}/aud"],
     "{m}/a.yaml"),
    ("expected-flag", ["baseline", "expected", "learn", "{m}/ds", "--min-hosts", "0"], "--min-hosts"),
    ("expected-missing", ["baseline", "expected", "learn", "{m}/ds", "-o", "{m}/e.yaml"], "{m}/ds"),
    ("report-flag", ["baseline", "report", "{m}/aud", "--html", "-"], "--html"),
    ("report-missing", ["baseline", "report", "{m}/aud"], "{m}/aud"),
    ("ingest-flag", ["baseline", "ingest", "{m}/spool", "{m}/ds", "--compact-min-files", "1"], "--compact-min-files"),
    ("ingest-missing", ["baseline", "ingest", "{m}/spool", "{m}/ds"], "{m}/spool"),
    ("coverage-flag", ["baseline", "coverage", "{m}/ds", "--trend-pct", "nan"], "--trend-pct"),
    ("coverage-missing", ["baseline", "coverage", "{m}/ds", "--out", "{m}/rep"], "{m}/ds"),
    ("suggest-flag", ["baseline", "suggest-probes", "--btf", "{m}/a", "--symbols", "{m}/b"], "not allowed"),
    ("suggest-missing", ["baseline", "suggest-probes", "--symbols", "{m}/syms.txt"], "{m}/syms.txt"),
    ("export-flag", ["baseline", "export", "{m}/t.parquet", "--kind", "bogus"], "--kind"),
    ("export-missing", ["baseline", "export", "{m}/t.parquet", "-o", "{m}/t.json"], "{m}/t.parquet"),
    ("export-diff-one", ["baseline", "export", "--diff", "{m}/t.parquet"], "--diff"),
    ("export-diff-allowlist-missing",
     ["baseline", "export", "--diff", "{m}/g.parquet", "{m}/b.parquet", "--allowlist", "{m}/a.yaml"], "{m}/a.yaml"),
    # the simulator's own limits (baseline.simulator.plan) and --out a file
    ("simulate-hours-huge", ["baseline", "simulate", "--hours", "1e308", "--out", "{m}/sim"], "2262"),
    ("simulate-hosts-huge", ["baseline", "simulate", "--hosts", "2000000", "--out", "{m}/sim"], "--hosts"),
    ("simulate-scenario", ["baseline", "simulate", "--scenario", "nosuch", "--out", "{m}/sim"], "nosuch"),
    ("simulate-spool-hosts", ["baseline", "simulate", "--hosts", "300", "--spool", "--out", "{m}/sim"], "--spool"),
    ("simulate-out-file", ["baseline", "simulate", "--hosts", "1", "--out", "{file}"], "{file}"),
    # coverage's --week, --probes, --nccl-logs and a dataset without counters
    ("coverage-week", ["baseline", "coverage", "{here}", "--week", "2026-W99", "--out", "{m}/rep"], "--week"),
    ("coverage-no-counters", ["baseline", "coverage", "{here}", "--out", "{m}/rep"], "no counters"),
    ("coverage-probes-missing",
     ["baseline", "coverage", "{here}", "--week", "2026-W48", "--probes", "{m}/p.yaml", "--out", "{m}/rep"], "{m}/p.yaml"),
    ("coverage-probes-not-a-set", ["baseline", "coverage", "{here}", "--week", "2026-W48", "--probes", "{file}"], "{file}"),
    ("coverage-nccl-missing", ["baseline", "coverage", "{here}", "--nccl-logs", "{m}/nccl.log", "--out", "{m}/rep"],
     "{m}/nccl.log"),
    ("suggest-probes-set-missing", ["baseline", "suggest-probes", "--symbols", "{syms}", "--probes", "{m}/p.yaml"],
     "{m}/p.yaml"),
    # ---- tracer
    ("record-flag", ["tracer", "record", "-d", "nan", "--", "true"], "-d/--duration"),
    ("record-no-command", ["tracer", "record"], "no command given"),
    ("record-pid-and-command", ["tracer", "record", "-p", "1", "--", "true"], "exclude each other"),
    ("record-pid-gone", ["tracer", "record", "-p", "999999999"], "999999999", "root"),
    ("record-out-dir-missing", ["tracer", "record", "-o", "{m}/t.parquet", "--", "true"], "{m}", "root"),
    ("run-flag", ["tracer", "run", "syscalls", "-i", "nan", "--spool", "{m}/spool"], "-i/--interval"),
    # tracer run's checks (tracer.fleet.config.check_run), before tracer.fleet.daemon is imported
    ("run-interval-short", ["tracer", "run", "syscalls", "-i", "1ms", "--spool", "{m}/spool"], "-i/--interval"),
    ("run-good-window-inf", ["tracer", "run", "syscalls", "--good-window", "inf", "--spool", "{m}/spool"],
     "--good-window"),
    ("run-pid-gone", ["tracer", "run", "syscalls", "-p", "999999999", "--spool", "{m}/spool"], "999999999"),
    ("run-host", ["tracer", "run", "syscalls", "--host", "../x", "--spool", "{m}/spool"], "--host"),
    ("run-unknown-set", ["tracer", "run", "nosuchset", "--spool", "{m}/spool"], "nosuchset", "root"),
    ("run-set-missing", ["tracer", "run", "{m}/set.yaml", "--spool", "{m}/spool"], "{m}/set.yaml", "root"),
    ("run-set-twice", ["tracer", "run", "syscalls", "syscalls", "--spool", "{m}/spool"], "twice", "root"),
    ("run-spool-file", ["tracer", "run", "syscalls", "--spool", "{file}"], "{file}", "root"),
    ("run-prom-dir-missing", ["tracer", "run", "syscalls", "--spool", "{here}/spool", "--prom", "{m}/t.prom"],
     "--prom", "root"),
    ("run-control-dir-missing", ["tracer", "run", "syscalls", "--spool", "{here}/spool", "--control-file", "{m}/go"],
     "--control-file", "root"),
    ("run-metadata-missing", ["tracer", "run", "syscalls", "--spool", "{here}/spool", "--metadata-file", "{m}/m.yaml"],
     "{m}/m.yaml", "root"),
    ("run-metadata-not-a-mapping", ["tracer", "run", "syscalls", "--spool", "{here}/spool", "--metadata-file", "{file}"],
     "{file}", "root"),
    ("probes-flag", ["tracer", "probes", "check", "--vendor", "acme"], "--vendor"),
    ("probes-missing", ["tracer", "probes", "check", "{m}/set.yaml"], "{m}/set.yaml"),
    ("probes-unknown-set", ["tracer", "probes", "check", "nosuchset"], "nosuchset"),
    ("probes-not-a-set", ["tracer", "probes", "check", "{file}"], "{file}"),
]

HELP = [
    ["baseline"], ["tracer"],
    *(["baseline", *c] for c in (["diff"], ["allowlist", "learn"], ["simulate"], ["evaluate"], ["learn"],
                                 ["audit"], ["expected", "learn"], ["report"], ["ingest"], ["coverage"],
                                 ["suggest-probes"], ["export"])),
    *(["tracer", *c] for c in (["record"], ["run"], ["probes", "check"])),
]


def run_entry(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The command run through its console entry in a fresh interpreter importing this tree;
    the process and the heavy packages it had imported when it exited."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("TRACEBASE_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)
    marks = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    assert len(marks) == 1, f"no report of the imports (exit {proc.returncode}):\n{proc.stderr}"
    return proc, [m for m in marks[0].removeprefix(MARK).split(",") if m]


AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="refused for not being root before this check")


@pytest.mark.parametrize(("argv", "word"), [pytest.param(a, w, id=i, marks=[AS_ROOT] if root else [])
                                            for i, a, w, *root in REFUSED])
def test_refused_before_the_heavy_imports(tmp_path, argv, word):
    names = {"m": str(tmp_path / "missing"), "here": str(tmp_path), "file": str(tmp_path / "a-file"),
             "syms": str(tmp_path / "syms.txt")}
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "syms.txt").write_text("ib_uverbs_reg_mr\n")
    argv = [a.format(**names) for a in argv]
    proc, heavy = run_entry(argv, tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2, f"exit {proc.returncode}: {err}"
    assert len(err.splitlines()) == 1 and err.startswith(f"{argv[0]}: error: "), err
    assert word.format(**names) in err, err
    assert heavy == [], f"{' '.join(argv[:3])} imported {heavy} before refusing: {err}"


@pytest.mark.parametrize("argv", [pytest.param(a, id=" ".join(a)) for a in HELP])
def test_help_before_the_heavy_imports(tmp_path, argv):
    proc, heavy = run_entry([*argv, "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: "), proc.stdout[:200]
    assert heavy == [], f"{' '.join(argv)} --help imported {heavy}"


def test_the_library_refuses_with_the_cli_line(tmp_path):
    """The checks moved before the imports are the library's own: Daemon.validate, simulate and
    weekly_report refuse with the line the command prints (library first, one message)."""
    from baseline.pipeline.coverage import weekly_report
    from baseline.simulator.simulate import simulate
    from tracer.errors import TracebaseError
    from tracer.fleet.daemon import Daemon, RunConfig

    m = tmp_path / "missing"
    cases = [
        (lambda: Daemon(RunConfig(sets=["syscalls"], spool=m / "spool", interval_s=0.001)).validate(),
         ["tracer", "run", "syscalls", "-i", "1ms", "--spool", f"{m}/spool"]),
        (lambda: simulate(m / "sim", hosts=1, hours=1e308),
         ["baseline", "simulate", "--hosts", "1", "--hours", "1e308", "--out", f"{m}/sim"]),
        (lambda: weekly_report(tmp_path, week="2026-W99"),
         ["baseline", "coverage", str(tmp_path), "--week", "2026-W99", "--out", f"{m}/rep"]),
    ]
    for call, argv in cases:
        with pytest.raises(TracebaseError) as refused:
            call()
        proc, heavy = run_entry(argv, tmp_path)
        assert (proc.returncode, proc.stderr.strip()) == (2, f"{argv[0]}: error: {refused.value}")
        assert heavy == [], argv
    assert not m.exists()  # refused before anything was made
