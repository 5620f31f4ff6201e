"""The package installs and runs outside the checkout (issue 11 item 1).

Builds the wheel (uv, offline from its cache: `make setup` already built the project once),
installs it into a fresh virtual environment, and runs both CLIs from another directory: the
BPF C sources, probe sets and curated expected_errors.yaml must come from the installed
package (tracer/_data), and Airflow must not be a core dependency.

The fresh venv gets the locked third-party dependencies by a path entry to the project venv's
site-packages (a plain directory entry: its .pth files, among them the editable install of
this checkout, are not processed), so the test needs no network and cannot see the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# where scripts/setup.sh finds or puts it (a venv of its own under .tools/ when none is installed)
UV = shutil.which("uv") or next((str(c) for c in (Path.home() / ".local/bin/uv", Path.home() / ".cargo/bin/uv",
                                                  REPO / ".tools/uv/bin/uv") if c.is_file()), None)


def _run(cmd: list[str], cwd: Path, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if UV is None:
        pytest.skip("uv is not installed (scripts/setup.sh installs it)")
    out = tmp_path_factory.mktemp("dist")
    proc = _run([UV, "build", "--wheel", "--offline", "-o", out], REPO)
    if proc.returncode != 0:  # first build on this machine: hatchling not cached yet
        proc = _run([UV, "build", "--wheel", "-o", out], REPO)
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("tracebase-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    proc = _run([UV, "venv", "--offline", "--python", sys.executable, root], REPO)
    assert proc.returncode == 0, proc.stderr
    proc = _run([UV, "pip", "install", "--offline", "--no-deps", "--python", root / "bin" / "python", wheel], REPO)
    assert proc.returncode == 0, proc.stderr
    site = Path(_run([root / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     REPO).stdout.strip())
    deps = [sysconfig.get_paths()["purelib"]]
    shim = REPO / ".venv" / "bcc-shim"
    if shim.is_dir():
        deps.append(str(shim))  # Debian's bcc, exposed the way scripts/setup.sh does it
    (site / "zz_tracebase_test_deps.pth").write_text("\n".join(deps) + "\n")
    return root


def test_wheel_carries_the_data_files_and_no_airflow(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    for rel in ("bpf/syscall_recorder.c", "bpf/calltree.c", "bpf/probes/rdma.yaml", "bpf/probes/verbs-user.yaml",
                "bpf/probes/syscalls.yaml", "expected_errors.yaml", "fallback_calls.yaml"):
        assert f"tracer/_data/{rel}" in names, rel
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    assert core and not any("airflow" in r.lower() for r in core), core
    assert any("apache-airflow" in r and "extra == 'airflow'" in r for r in requires), requires
    assert not any(n.startswith(("tests/", "dags/", "bench/")) for n in names)
    # the differ's hot loops: their source always, the library built from it with a compiler
    assert "baseline/run/_hotloops.c" in names
    if shutil.which("cc") or shutil.which("gcc"):
        from baseline.run._build_native import library_name

        assert f"baseline/run/{library_name()}" in names


def test_installed_clis_run_from_another_directory(venv, tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    py = venv / "bin" / "python"
    where = _run([py, "-c", "import tracer.resources as r, baseline; print(r.BPF_DIR); print(r.EXPECTED_ERRORS); "
                  "print(baseline.__file__)"], work)
    assert where.returncode == 0, where.stderr
    bpf_dir, expected, baseline_file = where.stdout.split()
    for p in (bpf_dir, expected, baseline_file):
        assert p.startswith(str(venv)) and not p.startswith(str(REPO)), p
    # the wheel's compiled hot loops load from the installed package (built with a compiler)
    if shutil.which("cc") or shutil.which("gcc"):
        fast = _run([py, "-c", "from baseline.run import native; print(native.available())"], work)
        assert fast.stdout.strip() == "True", fast.stderr
    for cli in ("tracer", "baseline"):
        out = _run([venv / "bin" / cli, "--version"], work)
        assert out.returncode == 0 and out.stdout.startswith(f"{cli} (tracebase) "), out
    assert _run([venv / "bin" / "tracer", "probes", "check", "--json"], work).returncode in (0, 1)

    if os.geteuid() != 0:
        pytest.skip("recording needs root: installed `tracer record -- true` not run")
    if not (REPO / ".venv" / "bcc-shim").is_dir():
        pytest.skip("Debian's bcc (python3-bpfcc) not installed: installed `tracer record` not run")
    for name, label, cmd in (("g1", "good", ["true"]), ("g2", "good", ["true"]), ("bad", "bad", ["ls", "/nonexistent"])):
        rec = _run([venv / "bin" / "tracer", "record", "-q", "-o", f"{name}.parquet", "--label", label, "--", *cmd], work)
        assert rec.returncode in (0, 2) if name == "bad" else rec.returncode == 0, rec.stderr
        assert (work / f"{name}.parquet").is_file(), rec.stderr
    same = _run([venv / "bin" / "baseline", "diff", "g1.parquet", "g2.parquet", "--json"], work)
    assert same.returncode == 0, same.stderr
    report = json.loads(same.stdout)
    assert report["settings"]["allowlist"] == expected  # the packaged curated allowlist, not "<none>"
    differ = _run([venv / "bin" / "baseline", "diff", "g1.parquet", "g2.parquet", "bad.parquet"], work)
    assert differ.returncode == 1, differ.stdout + differ.stderr
    assert "bifurcation" in differ.stdout


@pytest.mark.slow
def test_installed_demo_writes_under_the_current_directory(venv, tmp_path):
    """`python -m baseline.demo` of the installed package, from another directory: its outputs
    go to ./out/demo there. Its default was the package's parent directory (right for a checkout
    only), so an installed demo wrote into site-packages (a system install: a read-only tree)."""
    work = tmp_path / "elsewhere"
    work.mkdir()
    # the fleet pipeline only (recording is the test above); a small fleet: ~1 min at load 15
    demo = _run([venv / "bin" / "python", "-m", "baseline.demo", "--skip-record", "--hosts", "4", "--hours", "1"],
                work, timeout=1200)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr
    out = work / "out" / "demo"
    summary = json.loads((out / "summary.json").read_text())
    assert Path(summary["published"]["published"]).is_relative_to(out), summary["published"]
    assert Path(summary["coverage"]["files"]["html"]).is_file()
    assert Path(summary["coverage"]["files"]["html"]).is_relative_to(out)
    assert f"all outputs under {out}" in demo.stdout
    assert not [p for p in venv.rglob("summary.json")], "the demo wrote into the installed package's tree"
