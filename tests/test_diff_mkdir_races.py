"""Processes of one run racing to make a directory, recorded for real: each calls os.makedirs
and takes FileExistsError for done (py_compile under `python3 -m compileall -j 4`, whose
workers each make the __pycache__ of the module they were given). Which worker makes it is
their timing; the others' mkdir fails EEXIST with nothing after it (no check of the path, as
`mkdir -p` makes). A good run whose first worker made it, against a run whose second did, was
named at the first worker's EEXIST (real_twentyseventh's compileall noise case, ~1 run in 6).
An EEXIST on a directory the run itself made before is that directory (`_made_earlier_in_run`);
a directory that was there before the run, or a file in its place, stays an error -- and is now
named at that mkdir rather than at the consequence (the good runs' own lost races no longer
make its EEXIST a known error: an open in the file's place failing ENOTDIR was named)."""

from __future__ import annotations

import secrets
from pathlib import Path

from scenarios.harness import record_run

from baseline.run.diff import diff_traces

# Two forked workers each read a source of their own (one the index's, the other the blobs'),
# make <dir>/cache and write their output into it: what comes before and after a worker's
# makedirs is its own work (compileall's workers: the module each was given), not the race's. Each waits for a byte on its
# own pipe before its makedirs and passes one on after it: the parent starts the worker argv[2]
# names, so which one makes the directory (and which gets EEXIST) is chosen, not raced.
PROGRAM = """\
import os, sys
top, first = sys.argv[1], int(sys.argv[2])
pipes = [os.pipe(), os.pipe()]
kids = []
for me in (0, 1):
    pid = os.fork()
    if pid == 0:
        os.read(pipes[me][0], 1)
        with open(os.path.join(top, ("index.src", "blobs.src")[me])) as f:
            f.read()
        try:
            os.makedirs(os.path.join(top, "cache"))
        except FileExistsError:
            pass
        os.write(pipes[1 - me][1], b"x")
        with open(os.path.join(top, "cache", ("index", "blobs")[me]), "w") as f:
            f.write("done")
        os._exit(0)
    kids.append(pid)
os.write(pipes[first][1], b"x")
for pid in kids:
    os.waitpid(pid, 0)
"""


def _run(recorder, top: Path, first: int, out: Path, prepare=None) -> Path:
    top.mkdir(exist_ok=True)
    for name in ("index.src", "blobs.src"):
        (top / name).write_text(f"{name}\n")
    for f in top.glob("cache/*"):
        f.unlink()
    if (top / "cache").is_dir():
        (top / "cache").rmdir()
    if prepare is not None:
        prepare(top)
    return record_run(recorder, ["/usr/bin/python3", "-S", "-c", PROGRAM, str(top), str(first)], out, "good")


def test_which_worker_makes_the_directory_is_no_anomaly(recorder, tmp_path: Path):
    top = tmp_path / "tree"
    goods = [_run(recorder, top, 0, tmp_path / f"good{i}.parquet") for i in range(2)]
    report = diff_traces(goods, _run(recorder, top, 1, tmp_path / "other_first.parquet"))
    assert report.bifurcation is None, report.render_text()
    report = diff_traces(goods, _run(recorder, top, 0, tmp_path / "same_first.parquet"))
    assert report.bifurcation is None, report.render_text()


def test_a_file_in_the_directory_s_place_is_still_named(recorder, tmp_path: Path):
    top = tmp_path / "tree"
    goods = [_run(recorder, top, 0, tmp_path / f"good{i}.parquet") for i in range(2)]
    bad = _run(recorder, top, 1, tmp_path / "bad.parquet", prepare=lambda t: (t / "cache").write_text("stale\n"))
    report = diff_traces(goods, bad)
    b = report.bifurcation or {}
    assert (b.get("probe"), b.get("errno"), b.get("path")) == ("mkdir", "EEXIST", f"{top}/cache"), report.render_text()


# `mkdir -p` of a manifest (xargs): the parent of each nested argument is made or found (mkdir
# EEXIST: idempotent), then mkdir goes back to its start directory -- except after its last
# argument, before which it closes the saved directory. Whether the manifest's last line is a
# top-level directory or a nested one is the data's; a run ending on a nested one, against good
# runs ending on a top-level one, ended in calls the good runs all made, in another order.
def _manifest(base: Path, last_nested: bool) -> list[str]:
    """Six top-level directories of a few nested ones each, every name a random draw of the
    run (the differ masks them alike); the last line a nested directory or a seventh top."""
    tops = [f"p{secrets.token_hex(3)}" for _ in range(7)]
    lines = [x for t in tops[:6] for x in (t, *(f"{t}/r{secrets.token_hex(3)}" for _ in range(3)))]
    return lines if last_nested else [*lines, tops[6]]


def _mkdir_p(recorder, base: Path, last_nested: bool, out: Path, file_in_place: bool = False) -> Path:
    stage = base / "stage"
    if stage.exists():
        for p in sorted(stage.rglob("*"), key=lambda p: -len(p.parts)):
            p.rmdir() if p.is_dir() else p.unlink()
    stage.mkdir(parents=True, exist_ok=True)
    lines = _manifest(base, last_nested)
    if file_in_place:
        (stage / lines[-1].split("/")[0]).write_text("not a directory\n")
    (base / "dirs.list").write_text("\n".join(lines) + "\n")
    return record_run(recorder, ["/bin/sh", "-c", f'cd "{stage}" && xargs -a "{base}/dirs.list" mkdir -p'], out, "good")


def test_mkdir_p_ending_on_a_nested_directory_is_no_anomaly(recorder, tmp_path: Path):
    goods = [_mkdir_p(recorder, tmp_path, False, tmp_path / f"good{i}.parquet") for i in range(2)]
    report = diff_traces(goods, _mkdir_p(recorder, tmp_path, True, tmp_path / "nested_last.parquet"))
    assert report.bifurcation is None, report.render_text()


def test_mkdir_p_onto_a_file_at_the_end_is_still_named(recorder, tmp_path: Path):
    goods = [_mkdir_p(recorder, tmp_path, True, tmp_path / f"good{i}.parquet") for i in range(2)]
    bad = _mkdir_p(recorder, tmp_path, True, tmp_path / "bad.parquet", file_in_place=True)
    b = diff_traces(goods, bad).bifurcation or {}
    assert (b.get("probe"), b.get("errno")) in {("mkdir", "EEXIST"), ("mkdir", "ENOTDIR"), ("chdir", "ENOTDIR")}, b
    assert b.get("path", "").startswith(f"{tmp_path}/stage/p"), b
