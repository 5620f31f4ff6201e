"""The dynamic loader's search of LD_LIBRARY_PATH in another order, and a Python traceback's
source lookups: routine probing and message composition, not the fault.

Recorded for real, three runs each; the last run is diffed against the other two.

* **ld.so's walk in another order** (baseline/run/rules/retries.py `_gaps_past_misses`, normalize.py
  `_after_directory_check` and `PLATFORM_NAMES`, expected_errors.yaml
  `curated-enoent-ld-so-legacy-hwcaps`): a job linked against libjob.so.1 finds it in l2 of
  four LD_LIBRARY_PATH directories whose order its environment file sets. glibc 2.36 tries
  every hwcaps and legacy platform subdirectory of a directory (glibc-hwcaps/x86-64-v4 ...
  tls/haswell/avx512_1/x86_64) and stats each one missing, before the directory itself; the
  good runs list l2 first or last, the diffed run in the middle: quiet. The same job with
  libjob.so.1 in none of the directories is named.
* **a traceback quoting the script** (`_enotty_known_there`, `_source_reread`): python3 runs a
  script whose config is not a number in the diffed run: ValueError, no failing call. The
  traceback reopens the script (linecache) and asks isatty of it (ioctl TCGETS: ENOTTY, as
  python did when it opened the script to run it in every run, besides FIOCLEX's success on
  it): the message is named, not the ENOTTY nor the reopen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import record_run

from baseline.run.diff import diff_traces

JOB_C = '#include <stdio.h>\nint job_n(void);\nint main(void) { printf("job %d\\n", job_n()); return 0; }\n'
LIB_C = "int job_n(void) { return 3; }\n"
LOADER_ORDERS = {
    # good, good, diffed: the library's directory first / last in the good runs, inside in the diffed
    "found first in the good runs": ("l2:l1:l3:l0", "l2:l1:l3:l0", "l0:l3:l2:l1"),
    "found last in the good runs": ("l1:l3:l0:l2", "l1:l3:l0:l2", "l3:l2:l0:l1"),
}

CONFIG_PY = "import sys\nwith open(sys.argv[1]) as fh:\n    ranks = int(fh.read())\nprint('ranks', ranks)\n"


@pytest.fixture
def base():
    root = Path(f"/tmp/tracebase-loader-walks.{os.getpid()}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _build(base: Path) -> None:
    (base / "src").mkdir()
    (base / "src" / "lib.c").write_text(LIB_C)
    (base / "src" / "job.c").write_text(JOB_C)
    for i in range(4):
        (base / f"l{i}").mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libjob.so.1", "-o", str(base / "l2" / "libjob.so.1"),
                    str(base / "src" / "lib.c")], check=True, capture_output=True)
    os.symlink("libjob.so.1", base / "l2" / "libjob.so")
    subprocess.run(["gcc", "-o", str(base / "job"), str(base / "src" / "job.c"), f"-L{base}/l2", "-ljob"],
                   check=True, capture_output=True)
    os.unlink(base / "l2" / "libjob.so")


def _diff_last(recorder, tmp_path: Path, argv: list[str], prepare):
    files = []
    for i in range(3):
        prepare(i)
        files.append(record_run(recorder, argv, tmp_path / f"run{i}.parquet", "good"))
    return diff_traces(good=files[:2], bad=files[2])


def _named(report) -> tuple | None:
    b = report.bifurcation
    return (b["probe"], b["errno"], b["path"]) if b else None


@pytest.mark.parametrize("orders", list(LOADER_ORDERS.values()), ids=list(LOADER_ORDERS))
def test_library_path_in_another_order_is_quiet(recorder, base, tmp_path, orders):
    _build(base)

    def prepare(i: int) -> None:
        (base / "lib.path").write_text(":".join(f"{base}/{d}" for d in orders[i].split(":")) + "\n")

    argv = ["/bin/sh", "-c", f"LD_LIBRARY_PATH=$(cat {base}/lib.path) exec {base}/job"]
    report = _diff_last(recorder, tmp_path, argv, prepare)
    assert not report.anomaly, _named(report)


def test_library_missing_from_every_directory_is_named(recorder, base, tmp_path):
    _build(base)

    def prepare(i: int) -> None:
        (base / "lib.path").write_text(":".join(f"{base}/{d}" for d in LOADER_ORDERS["found last in the good runs"][i]
                                                .split(":")) + "\n")
        if i == 2:  # the diffed host's copy of the bundle lost its library
            (base / "l2" / "libjob.so.1").rename(base / "libjob.so.1.removed")

    argv = ["/bin/sh", "-c", f"LD_LIBRARY_PATH=$(cat {base}/lib.path) exec {base}/job"]
    report = _diff_last(recorder, tmp_path, argv, prepare)
    named = _named(report)
    assert named is not None and named[1] == "ENOENT" and named[2].endswith("/libjob.so.1"), named


def test_traceback_names_its_message(recorder, base, tmp_path):
    (base / "job.py").write_text(CONFIG_PY)

    def prepare(i: int) -> None:
        (base / "ranks.conf").write_text("two\n" if i == 2 else "2\n")

    report = _diff_last(recorder, tmp_path, ["/usr/bin/python3", "-S", f"{base}/job.py", f"{base}/ranks.conf"],
                        prepare)
    assert _named(report) == ("write", None, "/dev/null"), report.bifurcation
    assert "ValueError" in (report.bifurcation.get("output") or report.bifurcation.get("then_wrote") or ""), \
        report.bifurcation
