"""What recording needs and where the tracer finds it: bcc's Python bindings and kernel headers.

bcc's bindings are found where the distribution installed them.

Debian's python3-bpfcc installs bcc for the system interpreter only. A venv made by another
interpreter (pyenv, uv's managed Pythons) or without --system-site-packages does not see it, and
`tracer record` used to stop there ("bcc Python bindings are not importable") although bcc is
pure Python over libbcc.so and runs under any Python 3. `load_bcc` loads that one package from
the system directory, without putting the directory (the distribution's numpy, ...) on sys.path.

Those tests run a fresh interpreter with -S (no site: neither the venv's packages nor the .pth
shim scripts/setup.sh adds), so bcc is not importable the ordinary way.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracer.privilege import SYSTEM_BCC_DIRS, nearest_installed_headers

REPO = Path(__file__).resolve().parents[1]
SYSTEM_BCC = next((Path(d) / "bcc" for d in SYSTEM_BCC_DIRS if (Path(d) / "bcc" / "__init__.py").is_file()), None)


def _run_bare(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-S", "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(SYSTEM_BCC is None, reason=f"no system bcc package in {SYSTEM_BCC_DIRS} (apt-get install python3-bpfcc)")
def test_the_system_package_is_loaded_when_bcc_is_not_importable():
    done = _run_bare("""
        import json, sys
        try:
            import bcc
            sys.exit("bcc importable without site: the test proves nothing")
        except ImportError:
            pass
        path_before = list(sys.path)
        from tracer.privilege import load_bcc
        bcc = load_bcc()
        from bcc import BPF  # the ordinary import now finds the loaded package
        print(json.dumps({"file": bcc.__file__, "same": BPF is bcc.BPF, "lib": hasattr(bcc, "lib"),
                          "path_unchanged": sys.path == path_before,
                          "libc": bool(BPF.find_library(b"c"))}))
    """)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert Path(got["file"]).parent == SYSTEM_BCC
    assert got["same"] and got["lib"] and got["libc"]
    assert got["path_unchanged"]  # the distribution's other packages stay out of reach


def test_no_bcc_anywhere_is_one_clear_error(tmp_path):
    done = _run_bare(f"""
        import tracer.privilege as privilege
        from tracer.errors import EnvironmentProblem
        privilege.SYSTEM_BCC_DIRS = ({str(tmp_path)!r},)
        try:
            privilege.check_bcc()
        except EnvironmentProblem as exc:
            print(exc)
        else:
            raise SystemExit("no error")
    """)
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "bcc Python bindings are not importable" in message
    assert "apt-get install python3-bpfcc" in message and str(tmp_path) in message


def test_a_broken_system_copy_is_skipped_not_half_loaded(tmp_path):
    broken = tmp_path / "bcc"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise OSError('libbcc.so.0: cannot open shared object file')\n")
    done = _run_bare(f"""
        import sys
        import tracer.privilege as privilege
        from tracer.errors import EnvironmentProblem
        privilege.SYSTEM_BCC_DIRS = ({str(tmp_path)!r},)
        try:
            privilege.load_bcc()
        except EnvironmentProblem as exc:
            print("bcc" in sys.modules, exc)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("False ") and "not importable" in done.stdout


TRACER = [sys.executable, "-m", "tracer.cli"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1) (a private mount namespace)")
@pytest.mark.skipif(nearest_installed_headers() is None, reason="no Debian kernel headers tree in /usr/src")
def test_missing_kernel_headers_name_the_links_that_fix_them(tmp_path):
    """A kernel without a headers package (this one) and no link made yet: the error gives the
    exact commands, and running them makes recording work. In a private mount namespace whose
    /lib/modules is an empty tmpfs, so the machine's own links are untouched."""
    out = tmp_path / "run.parquet"
    record = shlex.join([*TRACER, "record", "-o", str(out), "--", "true"])
    script = f"""
        mount --make-rprivate / && mount -t tmpfs none /lib/modules || exit 97
        {record} 2> {tmp_path}/first.err; echo "first=$?"
        fix=$(sed -n 's/.*link the nearest installed ones: \\(.*\\) (scripts.*/\\1/p' {tmp_path}/first.err)
        [ -n "$fix" ] || exit 98
        sh -c "$fix" && {record} 2> {tmp_path}/second.err; echo "second=$?"
    """
    done = subprocess.run(["unshare", "-m", "sh", "-c", textwrap.dedent(script)], cwd=REPO,
                          capture_output=True, text=True, timeout=180)
    first = (tmp_path / "first.err").read_text()
    assert done.returncode == 0, (done.stdout, done.stderr, first)
    assert "first=2" in done.stdout and first.count("\n") == 1 and "Traceback" not in first
    assert f"kernel headers for {os.uname().release} are missing" in first
    assert "second=0" in done.stdout, (tmp_path / "second.err").read_text()
    assert out.stat().st_size > 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (tracer record loads BPF programs)")
def test_too_few_open_files_for_the_recorder_is_one_line_naming_the_limit(tmp_path):
    """`ulimit -n 20`: bcc printed "could not open bpf map ... Too many open files" and the
    load failed as "check `dmesg` and that the kernel allows BPF tracepoint programs" (the
    recorder takes ~25 descriptors: a recording failed at 24 and 28, ran at 30). Now one line
    naming the limit and how a command meets a lower one; at 32 it records."""
    import resource

    def limit(n: int):
        return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [*TRACER, "record", "-o", str(tmp_path / "t.parquet"), "--", "/bin/true"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=limit(20))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "ulimit -n" in lines[0] and "limit of 20" in lines[0] and "sh -c 'ulimit -n" in lines[0], lines
    assert not (tmp_path / "t.parquet").exists()
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=limit(32))
    assert proc.returncode == 0 and (tmp_path / "t.parquet").exists(), proc.stderr
