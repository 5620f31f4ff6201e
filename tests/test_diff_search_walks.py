"""A $PATH search whose entries differ only in digits (site0/bin, site1/bin, ...), recorded for
real: execvp tries each entry (execve ENOENT) before the one holding the tool. The entries are
one template (site<n>/bin), and the walk mask took a failed lookup followed by the same template
for a retry, not a step of a walk: a run trying three entries kept site0's and site1's misses
unmasked, and against good runs trying one it was named (real_twelfth's
execvp_path_entries_vary, ~1 run in 30 when the draws fell so). Every miss of the walk is one
`<search>/jobtool` now, however many entries a run tries."""

from __future__ import annotations

import shutil
from pathlib import Path

from scenarios.harness import record_run

from baseline.run.diff import diff_traces


def _launch(recorder, base: Path, entries: int, out: Path) -> Path:
    path = ":".join([*(f"{base}/site{i}/bin" for i in range(entries)), f"{base}/bin"])
    return record_run(recorder, ["/usr/bin/env", f"PATH={path}", "jobtool", "--rank", "0"], out, "good")


def test_how_many_entries_a_path_search_tries_is_no_anomaly(recorder, tmp_path: Path):
    (tmp_path / "bin").mkdir()
    shutil.copy("/usr/bin/true", tmp_path / "bin" / "jobtool")
    goods = [_launch(recorder, tmp_path, 1, tmp_path / f"good{i}.parquet") for i in range(2)]
    for entries in (3, 5):
        report = diff_traces(goods, _launch(recorder, tmp_path, entries, tmp_path / f"tries{entries}.parquet"))
        assert report.bifurcation is None, report.render_text()


def test_a_tool_in_no_entry_is_still_named(recorder, tmp_path: Path):
    (tmp_path / "bin").mkdir()
    shutil.copy("/usr/bin/true", tmp_path / "bin" / "jobtool")
    goods = [_launch(recorder, tmp_path, 2, tmp_path / f"good{i}.parquet") for i in range(2)]
    (tmp_path / "bin" / "jobtool").unlink()  # the tool's install went missing
    report = diff_traces(goods, _launch(recorder, tmp_path, 2, tmp_path / "bad.parquet"))
    b = report.bifurcation or {}
    assert (b.get("probe"), b.get("errno"), b.get("path")) == (
        "execve", "ENOENT", f"{tmp_path}/bin/jobtool"), report.render_text()
