"""Least privilege (issue 10 item 6): analysis runs as an unprivileged user on root's outputs.

Root writes, under umask 022, what a fleet node and the pipeline write: a spool from the real
fleet daemon (`tracer run syscalls`, when BPF is available) and from the simulator, a dataset
(ingest), a learned model, an audit output set and recordings of a real program. Every file
must come out 0644 and every directory 0755, owned by root. Then nobody (uid 65534, through
setpriv) runs the analysis on them: ingest (into its own dataset), learn, audit, coverage,
report and diff. Writing into root's dataset as nobody is refused in one line, exit 2.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import tmp_nobody_reaches, tools_run_as_nobody

BIN = Path(sys.executable).parent
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to write as root and setpriv (util-linux) to run as nobody",
)

JOB = "#!/bin/sh\ncat config.ini > /dev/null && cat \"$(sed -n 's/^data=//p' config.ini)\" | wc -l\n"


def _as_root(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=lambda: os.umask(0o022))
    return proc


def _as_nobody(cmd: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "MPLCONFIGDIR": str(home / "mpl"),
           "LANG": "C.UTF-8"}
    return subprocess.run([*NOBODY, *cmd], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def root_outputs():
    tools_run_as_nobody()
    base = Path(tempfile.mkdtemp(prefix="tracebase-unpriv-", dir=tmp_nobody_reaches()))
    os.chmod(base, 0o755)
    try:  # a failed setup still removes what it made
        baseline, tracer = str(BIN / "baseline"), str(BIN / "tracer")
        steps = [
            [baseline, "simulate", "--hosts", "3", "--hours", "1", "--seed", "4", "--spool", "--out", "sim"],
        ]
        for cmd in steps:
            proc = _as_root(cmd, base)
            assert proc.returncode == 0, proc.stderr
        from conftest import bpf_unavailable_reason

        bpf = bpf_unavailable_reason() is None
        if bpf:  # the real daemon's spool beside the simulated hosts
            (base / "textfile").mkdir(mode=0o755)  # node_exporter's textfile directory exists already
            proc = _as_root([tracer, "run", "syscalls", "-d", "3s", "-i", "1s", "--spool", "sim/spool",
                             "--host", "real-node", "--prom", "textfile/tracebase.prom"], base, timeout=120)
            assert proc.returncode == 0, proc.stderr
            (base / "job").mkdir()
            (base / "traces").mkdir(mode=0o755)
            (base / "job" / "run.sh").write_text(JOB)
            (base / "job" / "run.sh").chmod(0o755)
            (base / "job" / "config.ini").write_text("data=rows.txt\n")
            (base / "job" / "rows.txt").write_text("1\n2\n")
            for name in ("g1", "g2"):
                proc = _as_root([tracer, "record", "-q", "-o", f"../traces/{name}.parquet", "--label", "good",
                                 "--", "./run.sh"], base / "job")
                assert proc.returncode == 0, proc.stderr
            (base / "job" / "rows.txt").unlink()
            proc = _as_root([tracer, "record", "-q", "-o", "../traces/bad.parquet", "--label", "bad", "--", "./run.sh"],
                            base / "job")
            assert (base / "traces" / "bad.parquet").exists(), proc.stderr
        for cmd in (
            [baseline, "ingest", "sim/spool", "dataset", "--keep-spool", "--quarantine", "quarantine"],
            [baseline, "learn", "dataset", "-o", "model.parquet"],
            [baseline, "audit", "dataset", "--out", "audit", "--html", "audit.html"],
            [baseline, "coverage", "dataset", "--out", "reports"],
        ):
            proc = _as_root(cmd, base)
            assert proc.returncode == 0, (cmd, proc.stderr)
        home = base / "nobody"
        home.mkdir()
        os.chown(home, 65534, 65534)
        yield {"base": base, "home": home, "bpf": bpf}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_root_outputs_are_readable_and_not_world_writable(root_outputs):
    base = root_outputs["base"]
    checked = 0
    for dirpath, dirnames, filenames in os.walk(base):
        if Path(dirpath).is_relative_to(root_outputs["home"]) or Path(dirpath).is_relative_to(base / "job"):
            continue
        for d in dirnames:
            mode = stat.S_IMODE(os.stat(Path(dirpath) / d).st_mode)
            if Path(dirpath, d) in (root_outputs["home"], base / "job"):
                continue
            assert mode == 0o755, f"{Path(dirpath) / d}: {mode:o}"
            checked += 1
        for f in filenames:
            st = os.stat(Path(dirpath) / f)
            assert stat.S_IMODE(st.st_mode) == 0o644, f"{Path(dirpath) / f}: {stat.S_IMODE(st.st_mode):o}"
            assert st.st_uid == 0
            checked += 1
    assert checked > 20


@pytest.mark.parametrize(
    ("name", "argv", "code"),
    [
        ("ingest", ["baseline", "ingest", "{base}/sim/spool", "ds", "--keep-spool", "--quarantine", "q"], 0),
        ("learn", ["baseline", "learn", "{base}/dataset", "-o", "model.parquet"], 0),
        ("audit", ["baseline", "audit", "{base}/dataset", "--model", "{base}/model.parquet",
                   "--out", "audit", "--html", "audit.html"], 0),
        ("coverage", ["baseline", "coverage", "{base}/dataset", "--out", "reports"], 0),
        ("report", ["baseline", "report", "{base}/audit"], 0),
        ("evaluate", ["baseline", "evaluate", "{base}/sim", "--findings", "{base}/audit"], 0),
        ("diff", ["baseline", "diff", "{base}/traces/g1.parquet", "{base}/traces/g2.parquet",
                  "{base}/traces/bad.parquet"], 1),
        ("export", ["baseline", "export", "{base}/traces/g1.parquet", "-o", "g1.json"], 0),
    ],
)
def test_analysis_as_nobody(root_outputs, name, argv, code):
    base, home = root_outputs["base"], root_outputs["home"]
    if "traces" in " ".join(argv) and not root_outputs["bpf"]:
        pytest.skip("no recordings: BPF unavailable here")
    work = home / name
    if not work.exists():
        subprocess.run([*NOBODY, "mkdir", str(work)], check=True)
    cmd = [str(BIN / argv[0]), *[a.replace("{base}", str(base)) for a in argv[1:]]]
    proc = _as_nobody(cmd, work, home)
    assert proc.returncode == code, proc.stderr + proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr


def test_nobody_writing_into_roots_dataset_is_one_line(root_outputs):
    base, home = root_outputs["base"], root_outputs["home"]
    proc = _as_nobody([str(BIN / "baseline"), "learn", str(base / "dataset"), "-o", str(base / "dataset" / "m.parquet")],
                      home, home)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("baseline: error: "), proc.stderr
    assert str(base / "dataset") in lines[0]
