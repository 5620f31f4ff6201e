"""The weekly coverage report is a function of its input: the same dataset and job logs give the
same bytes in every file (charts, HTML, Markdown, Parquet), whichever process renders them and
whenever, once the week is over -- so reports can be diffed and cached.

The fleet is built from the reference (every errno the reference documents for a handful of
its functions, each failing equally often), so errnos tie in count within a probe and in the
fleet's totals: the ties a hash-ordered group_by would break differently in each process.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from baseline.pipeline.coverage import weekly_report, write_report
from tracer.schema import partition_path, write_table

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "reference" / "rdma_control_path.yaml"
WEEK = "2026-W48"
MONDAY = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
HOSTS = {"gpu-a": ("6.8.0", "mlx5"), "gpu-b": ("6.8.0", "bnxt_re"), "gpu-c": ("6.11.0", "mlx5")}


def reference_errors(limit: int = 8) -> dict[str, list[str]]:
    """Function -> the errnos the reference documents for it (first `limit` functions with 3+)."""
    found: dict[str, list[str]] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            errors = node.get("errors")
            if isinstance(node.get("fn"), str) and isinstance(errors, list):
                names = [e["errno"].lstrip("-") for e in errors if isinstance(e, dict) and isinstance(e.get("errno"), str)]
                names = list(dict.fromkeys(n for n in names if re.fullmatch(r"E[A-Z]+", n)))
                if len(names) >= 3 and node["fn"] not in found:
                    found[node["fn"]] = names
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(REFERENCE.read_text()))
    return dict(list(found.items())[:limit])


def build_fleet(root: Path) -> Path:
    """Counters for the week and the one before: on every host, each reference function fails
    2x with each of its errnos per snapshot (a tie within the probe), twice a day, Mon..Thu."""
    errors = reference_errors()
    assert len(errors) >= 6 and len({e for es in errors.values() for e in es}) >= 9  # enough ties to matter
    for host, (kernel, vendor) in HOSTS.items():
        for week_ago in (0, 7):
            for day in range(4):
                stamps = [MONDAY + dt.timedelta(days=day - week_ago, hours=h) for h in (3, 15)]
                rows = [(when, fn, errnos) for when in stamps for fn, errnos in errors.items()]
                frame = pl.DataFrame({
                    "host": host, "snapshot_time": [r[0] for r in rows], "interval_s": 5.0, "kernel_release": kernel,
                    "vendor": vendor, "probe_set": "rdma", "probe": [r[1] for r in rows], "layer": "core", "live": True,
                    "invocations": [50 * len(r[2]) for r in rows], "failures": [2 * len(r[2]) for r in rows],
                    "errno_counts": [[{"errno": e, "count": 2} for e in r[2]] for r in rows], "lost_records": 0,
                })
                date = stamps[0].date().isoformat()
                write_table(frame, partition_path(root, "counters", date, host, "part-0.parquet"), "counters")
    return root


def job_log(path: Path) -> Path:
    """Failing verbs calls (NCCL's wording), two verbs with equal counts."""
    lines = ["gpu-a:10:11 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14"] * 5
    lines += ["gpu-b:10:11 [0] NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory errno 12"] * 5
    path.write_text("\n".join(lines) + "\n")
    return path


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("repro")
    return build_fleet(base / "ds"), job_log(base / "nccl.log")


def test_separate_processes_write_the_same_bytes(fleet, tmp_path):
    """`baseline coverage` in three processes with different hash seeds: every file byte for byte.
    Before, the errno totals' tie order (polars group_by, seeded per process) picked the errno_mix
    chart's colours and its 7 errnos (on main, 6 runs of this fleet gave 5 different errno_mix.png),
    and the HTML footer carried the minute it was written."""
    ds, log = fleet
    outs = []
    for seed in ("0", "1", "2"):
        out = tmp_path / f"out{seed}"
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": seed, "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run([sys.executable, "-m", "baseline.cli", "coverage", str(ds), "--week", WEEK,
                               "--nccl-logs", str(log), "-o", str(out)], capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append(files(out))
    first = outs[0]
    assert {f"{WEEK}/charts/{c}.png" for c in ("app_coverage", "failures_per_probe", "errno_mix", "daily_failures")} <= set(first)
    assert {f"{WEEK}/{f}" for f in ("report.html", "report.md", "coverage_probes.parquet", "coverage_groups.parquet",
                                    "coverage_app.parquet")} <= set(first)
    for other in outs[1:]:
        assert sorted(first) == sorted(other)
        assert [name for name in first if first[name] != other[name]] == []


def test_a_finished_week_does_not_carry_its_run_time(fleet, tmp_path):
    """Rendered a day and a month after the week ended: the same page (no wall-clock time in it).
    A week still running says when it was rendered: days after that are left out."""
    ds, _ = fleet
    report = weekly_report(ds, week=WEEK)
    pages = [write_report(report, tmp_path / str(k), now)["html"].read_bytes()
             for k, now in enumerate((MONDAY + dt.timedelta(days=8, hours=1), MONDAY + dt.timedelta(days=40, minutes=7)))]
    assert pages[0] == pages[1]
    assert b"Generated by tracebase" in pages[0] and b"The week is not over" not in pages[0]
    running = write_report(report, tmp_path / "running", MONDAY + dt.timedelta(days=3, hours=9, minutes=5))
    page = running["html"].read_text()
    assert "Generated 2026-11-26 09:05 UTC by tracebase" in page and "days after 2026-11-26 are not shown" in page


def _png_text_keys(png: bytes) -> list[str]:
    """The keywords of a PNG's text chunks (tEXt, zTXt, iTXt)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    keys, at = [], 8
    while at < len(png):
        (length,), kind = struct.unpack(">I", png[at:at + 4]), png[at + 4:at + 8]
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            keys.append(png[at + 8:at + 8 + length].split(b"\0", 1)[0].decode("latin-1"))
        at += 12 + length
    return keys


def test_charts_do_not_name_the_plotting_library_version(fleet, tmp_path):
    """matplotlib writes a "Software" text chunk with its version by default: upgrading it alone
    changed every chart's bytes. The charts carry no text chunk that depends on the machine."""
    ds, _ = fleet
    written = write_report(weekly_report(ds, week=WEEK), tmp_path / "r", MONDAY + dt.timedelta(days=8))
    charts = sorted((tmp_path / "r").rglob("*.png"))
    assert len(charts) >= 3, written  # per probe, errno mix, daily (app coverage needs job logs)
    for chart in charts:
        keys = _png_text_keys(chart.read_bytes())
        assert "Software" not in keys, (chart, keys)
