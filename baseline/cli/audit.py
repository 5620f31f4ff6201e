"""`baseline learn`, `baseline audit`, `baseline expected learn`, `baseline report`: fleet audit."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

from tracer import units
from tracer.atomic import temporary_name, unwritable_reason
from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError, printable
from tracer.inputs import open_parquet, refuse_overwriting_inputs

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (5-10 ms of every command's start)
if TYPE_CHECKING:
    from typing import Any

LEARN_EPILOG = """\
examples:
  baseline learn fleet/                          # writes fleet/baseline-model.parquet (audit finds it there)
  baseline learn fleet/ -o model.parquet --since 2026-11-28
  baseline learn fleet/ --since 2d --json
  baseline learn fleet/ --expected-out expected_errors.yaml   # also merge fleet-learned expected errors
"""
AUDIT_EPILOG = """\
examples:
  baseline audit fleet/            # uses fleet/baseline-model.parquet if `baseline learn` wrote it, writes fleet/audit/
  baseline audit fleet/ --model model.parquet --since 2026-11-28T06:00:00Z -o audit/
  baseline audit fleet/ --html audit.html --allowlist expected_errors.yaml
  baseline audit fleet/ --refit --since 2h --json     # learn the baseline from DATASET itself

A model given or saved is extended with DATASET's own good traces (not changed on disk); when
some of them took success paths the model never saw (an update since it was learned), the
summary's "model drift" lines name the operations (--json: model_drift): `baseline learn` again.
"""
EXPECTED_EPILOG = """\
examples:
  baseline expected learn fleet/ -o expected_errors.yaml
  baseline expected learn fleet/ --since 2026-11-28 --min-hosts 5
"""
REPORT_EPILOG = """\
examples:
  baseline report fleet/audit/
  baseline report fleet/audit/ --html audit.html
  baseline report /srv/tracebase/findings --json     # a pipeline findings directory: its LATEST run
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "learn", help="learn the good-trace baseline of a fleet dataset",
        description="Learn the known-good call chains per operation from the good traces of DATASET "
                    "(a fleet dataset root or Parquet files) and write a versioned model file.",
        formatter_class=HelpFormatter, epilog=LEARN_EPILOG,
    )
    p.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"))
    common.add_output(p, metavar="MODEL", what="the model (Parquet)",
                      help="model file to write (default: DATASET/baseline-model.parquet, where `baseline audit` looks)")
    p.add_argument("--since", metavar="T", type=common.since,
                   help="only traces starting at or after T (ISO date/time, UTC, or a time ago: 2h, 1d)")
    p.add_argument("--expected-out", metavar="YAML", type=common.output_path("the expected-errors YAML", file=True),
                   help="also learn fleet expected errors and merge them into this expected_errors.yaml")
    common.add_json(p)
    p.set_defaults(func=handle_learn)

    p = subparsers.add_parser(
        "audit", help="audit a fleet dataset: findings, root-cause clusters, host alerts",
        description="For every failure in DATASET: bifurcation against the good-trace baseline, "
                    "layered evidence, expected errors set aside; root-cause clusters by kernel-side "
                    "signature; host alerts from counters. Writes findings/clusters/host_alerts "
                    "Parquet into --out and prints a report.",
        formatter_class=HelpFormatter, epilog=AUDIT_EPILOG,
    )
    p.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"))
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", metavar="M", type=common.input_path("the model file"),
                       help="model from `baseline learn`, extended with DATASET's own good traces (default: "
                            "DATASET/baseline-model.parquet when present, else learned from DATASET)")
    model.add_argument("--refit", action="store_true",
                       help="learn the baseline from DATASET even when DATASET/baseline-model.parquet exists")
    p.add_argument("--since", metavar="T", type=common.since,
                   help="only traces starting at or after T and counters of the calls after T, i.e. snapshots after T "
                        "(ISO date/time, UTC, or a time ago: 2h, 1d)")
    common.add_output(p, metavar="DIR", help="output directory (default: DATASET/audit, where `baseline evaluate` looks)")
    p.add_argument("--html", metavar="FILE", type=common.output_path("the HTML report", file=True),
                   help="also write a self-contained HTML report")
    p.add_argument("--allowlist", metavar="FILE", type=common.input_path("the allowlist"),
                   help="expected-errors YAML (default: the repo's expected_errors.yaml)")
    p.add_argument("--no-learn-expected", action="store_true",
                   help="do not add expected errors learned from DATASET")
    common.add_json(p, "a summary (counts, files, top clusters)")
    p.set_defaults(func=handle_audit)

    p = subparsers.add_parser(
        "expected", help="fleet expected-error learning",
        description="Expected errors learned across a fleet (see `baseline expected learn -h`).",
        formatter_class=HelpFormatter, epilog=EXPECTED_EPILOG,
    )
    sub = p.add_subparsers(dest="expected_command", metavar="ACTION")
    sub.required = True
    q = sub.add_parser(
        "learn", help="learn expected errors from a fleet dataset and merge them into a YAML file",
        description="An error (probe, errno, operation) is expected when it recurs in operations "
                    "the job survives, across hosts and jobs, and CBI's Increase(P) stays <= 0 at its "
                    "upper 95% bound. Curated entries win; stale learned entries are flagged.",
        formatter_class=HelpFormatter, epilog=EXPECTED_EPILOG,
    )
    q.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"), help="dataset root")
    q.add_argument("-o", "--output", default="expected_errors.yaml", metavar="YAML",
                   type=common.output_path("the expected-errors YAML", file=True),
                   help="the YAML file the learned entries are merged into (created when missing; its curated "
                        "entries win; default ./expected_errors.yaml)")
    q.add_argument("--since", metavar="T", type=common.since,
                   help="only traces at or after T (ISO date/time, UTC, or a time ago: 2h, 1d)")
    q.add_argument("--min-hosts", type=common.positive_int, default=3, metavar="N",
                   help="an error is expected only when it recurs, survived, on at least N hosts (default 3)")
    common.add_json(q, "the learned entries")
    q.set_defaults(func=handle_expected_learn)

    p = subparsers.add_parser(
        "report", help="print (and optionally render as HTML) an audit output directory",
        description="Terminal report of the findings/clusters/host_alerts written by `baseline audit`.",
        formatter_class=HelpFormatter, epilog=REPORT_EPILOG,
    )
    p.add_argument("findings_dir", metavar="FINDINGS_DIR", type=common.input_path("the findings directory"),
                   help="output of `baseline audit`, or a pipeline findings directory (its LATEST run)")
    p.add_argument("--html", metavar="FILE", type=common.output_path("the HTML report", file=True),
                   help="also write a self-contained HTML report")
    common.add_json(p, "a summary (counts, top clusters, host alerts)")
    p.set_defaults(func=handle_report)


# The checks below run before polars, pyarrow and the fleet modules are imported (~0.5 s of
# CPU): a mistyped path or flag is refused at once. What only the data can tell (a torn file,
# an empty dataset) is found by the work itself.
def _since(since: Any) -> dt.datetime | None:
    """--since as the fleet readers take it (baseline.fleet.model.parse_since, the same
    tracer.units.parse_time, without importing polars)."""
    return units.parse_time(since, "--since")


def _check_dataset(path: str) -> None:
    try:
        os.stat(path)
    except FileNotFoundError:
        raise TracebaseError(f"{path}: no such dataset (file or directory)") from None
    except OSError as exc:  # a symbolic link loop (ELOOP), a name too long, a directory not searchable
        raise TracebaseError(f"{path}: expected a dataset (file or directory), found it unreadable "
                             f"({exc.strerror})") from None


def _check_writable_file(path: str, flag: str, inputs: list[str]) -> None:
    parent = Path(path).resolve().parent
    shown = os.path.dirname(path) or "."  # as given: `-o ../out/m.parquet` names ../out
    if parent.exists() and not parent.is_dir():
        raise TracebaseError(f"{flag} {path}: {shown} is not a directory")
    if not parent.is_dir():
        raise TracebaseError(f"{flag} {path}: directory {shown} does not exist")
    if not os.access(parent, os.W_OK):
        raise TracebaseError(f"{flag} {path}: directory {shown} is not writable ({unwritable_reason(parent)})")
    _check_name_fits(path, flag, parent)
    refuse_overwriting_inputs(path, flag, inputs)
    from baseline.pipeline import layout

    # an audit's output set is written whole by the audit alone (a reader never sees one run's
    # findings beside another's clusters): a model written into it through the audit's link broke that
    if layout.audit_output(Path(path).parent) is not None:
        raise TracebaseError(f"{flag} {path}: expected a path outside an audit's output set, found the audit "
                             f"output {Path(path).parent} (its files are replaced together by `baseline audit`)")


def _check_name_fits(path: str, flag: str, parent: Path) -> None:
    """The file name, and the temporary it is written through (tracer.atomic.temporary_name), fit
    the directory's NAME_MAX: refused before any work, not after a first output was written
    (`learn -o m.parquet --expected-out <a name too long>` wrote the model)."""
    try:
        limit = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        return
    base = os.path.basename(path)
    name = len(os.fsencode(base))
    if name > limit:
        raise TracebaseError(f"{flag} {path}: file name too long: expected at most {limit} bytes (the directory's "
                             f"limit), found {name}")
    temporary = len(os.fsencode(temporary_name(base)))
    if temporary > limit:  # a file system whose limit is below 255 bytes
        raise TracebaseError(f"{flag} {path}: file name too long for its temporary: expected a directory whose "
                             f"names may have {temporary} bytes, found a limit of {limit}")


def _reading(dataset: str):
    """The dataset's shared lock (a running `baseline ingest` finishes its interval first)."""
    from baseline.pipeline.ingest import dataset_lock

    return dataset_lock(dataset, exclusive=False)


def _emit(args: argparse.Namespace, summary: dict, lines: list[str]) -> int:
    if getattr(args, "json", False):
        print(json.dumps(summary, sort_keys=True, default=str))
    else:
        for line in lines:
            print(line)
    return 0


def handle_learn(args: argparse.Namespace) -> int:
    from baseline.pipeline import layout

    _check_dataset(args.dataset)
    since = _since(args.since)
    output = args.output or str(layout.default_model(args.dataset))
    _check_writable_file(output, "-o/--output", [args.dataset])
    layout.refuse_among_tables(layout.home(args.dataset), output, "-o/--output", "a model file")
    if args.expected_out:
        _check_writable_file(args.expected_out, "--expected-out", [args.dataset, output])
        layout.refuse_among_tables(args.dataset, args.expected_out, "--expected-out", "a YAML file")
        _check_list_to_merge(args.expected_out)  # a list it cannot merge into: refused before the model is written
    from baseline.fleet.model import fit_baseline  # polars: once the inputs are known good

    with _reading(args.dataset):
        model = fit_baseline(args.dataset, out=output, since=since)
    summary = {"model": output, "operations": model.operations_.height, "good_traces": model.n_traces_,
               "events": model.n_events_, "since": since.isoformat() if since else None}
    lines = [f"learned {model.operations_.height} operations from {model.n_traces_} good traces "
             f"({model.n_events_} events) -> {printable(str(output))}"]
    if args.expected_out:
        expected, more = _learn_expected(args.dataset, since, args.expected_out)
        summary["expected_errors"] = expected
        lines += more
    return _emit(args, summary, lines)


def _learn_expected(dataset: str, since, output: str, **params) -> tuple[dict, list[str]]:
    from baseline.fleet.expected import learn_fleet_expected, merge_into_file

    with _reading(dataset):
        result = learn_fleet_expected(dataset, since=since, **params)
    counts = merge_into_file(output, result.entries)
    entries = []
    lines = [f"expected errors: {len(result.entries)} learned of {result.candidates.height} candidates; "
             + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" -> {printable(str(output))}"]
    for e in result.entries:
        s = e.stats or {}
        entries.append({"context": e.context, "probe": e.probe, "errno": e.errno, "comm": e.comm, **s})
        # a caller's family: routine for that process only, the ones it kills named
        caller = (f"  for {e.comm} only (fatal to {', '.join(s.get('fatal_to') or []) or '-'})"
                  if e.comm is not None else "")
        lines.append(f"  {e.context}: {e.probe} {e.errno}  increase {s.get('increase'):+.3f} "
                     f"(upper {s.get('increase_upper'):+.3f}), {s.get('hosts')} hosts, {s.get('jobs')} jobs, "
                     f"{s.get('traces')} traces{caller}")
    summary = {"file": output, "learned": len(result.entries), "candidates": result.candidates.height,
               **counts, "entries": entries}
    return summary, lines


def _check_list_to_merge(path: str) -> None:
    """An existing list the learned entries will merge into loads (its version, its entries),
    before any work: a refusal after the work left its other outputs written."""
    if os.path.lexists(path):
        from baseline.run.allowlist import ExpectedErrors

        ExpectedErrors.load(path, to_merge=True)


def handle_expected_learn(args: argparse.Namespace) -> int:
    from baseline.pipeline import layout

    _check_dataset(args.dataset)
    _check_writable_file(args.output, "-o/--output", [args.dataset])
    layout.refuse_among_tables(layout.home(args.dataset), args.output, "-o/--output", "a YAML file")
    _check_list_to_merge(args.output)
    summary, lines = _learn_expected(args.dataset, _since(args.since), args.output, min_hosts=args.min_hosts)
    return _emit(args, summary, lines)


def _check_out_dir(out: Path, flag: str) -> None:
    if out.exists() and not out.is_dir():
        raise TracebaseError(f"{flag} {out}: exists and is not a directory")
    existing = out  # named as given: the nearest part of it that exists
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise TracebaseError(f"{flag} {out}: cannot create or write the directory ({existing} is not a directory)")
    if not os.access(existing, os.W_OK):
        raise TracebaseError(f"{flag} {out}: cannot create or write the directory ({existing} is not writable: "
                             f"{unwritable_reason(existing)})")


def _drift_lines(drift, top: int = 5) -> list[str]:
    """The operations whose good traces in the window took success paths a given model never
    saw: the model was learned before an update (a driver adding a frame) and wants refreshing.
    The audit knows them good all the same (it extends the model with the window's own good
    traces); the lines say the model is going stale before a window without good traces would
    show it."""
    if drift is None:
        return []
    stale = drift.filter(drift["unseen_path_traces"] > 0).sort("unseen_path_traces", descending=True)
    if stale.is_empty():
        return []
    lines = [f"  model drift: {stale.height} of {drift.height} operations took success paths the model never saw "
             "(learned before an update? `baseline learn` refreshes it)"]
    for op, good, unseen in stale.head(top).select("operation", "good_traces", "unseen_path_traces").iter_rows():
        lines.append(f"    {printable(op)}: {unseen:,} of {good:,} good traces in the window")
    if stale.height > top:
        lines.append(f"    ... and {stale.height - top} more operations")
    return lines


def _audit_summary(result, files: dict | None = None, top: int = 10) -> dict:
    import polars as pl

    clusters = result.clusters.sort("failures", descending=True, nulls_last=True).head(top)
    keep = [c for c in ("cluster_id", "signature", "failures", "hosts", "jobs", "trend", "origin_layer",
                        "first_seen", "last_seen") if c in clusters.columns]
    alerts = result.host_alerts.head(top)
    return {
        "traces_audited": result.traces_audited,
        "findings": result.findings.height,
        "open_findings": result.open_findings.height,
        "clusters": result.clusters.height,
        "host_alerts": result.host_alerts.height,
        "window": [str(w) if w is not None else None for w in (result.window or (None, None))],
        "top_clusters": clusters.select(keep).with_columns(pl.col(pl.Datetime).dt.to_string()).to_dicts(),
        "top_host_alerts": alerts.with_columns(pl.col(pl.Datetime).dt.to_string()).to_dicts(),
        "files": {k: str(v) for k, v in (files or {}).items()},
        # per operation of a given model: good traces in the window, those on paths it never saw
        "model_drift": None if result.model_drift is None else result.model_drift.to_dicts(),
        # hosts whose counters were read whole: summaries from an older rule (`baseline summarize`)
        "stale_summary_hosts": result.stale_summary_hosts,
    }


def handle_audit(args: argparse.Namespace) -> int:
    from baseline.pipeline import layout
    from baseline.run.allowlist import ExpectedErrors

    _check_dataset(args.dataset)
    since = _since(args.since)
    out = Path(args.output) if args.output else layout.default_audit_dir(args.dataset)
    _check_out_dir(out, "-o/--output")
    layout.refuse_among_tables(layout.home(args.dataset), out, "-o/--output", "an output directory")
    if args.html:
        # (the model `baseline learn` saved is read by default: an input too)
        saved = None if args.model or args.refit else layout.saved_model(args.dataset)
        _check_writable_file(args.html, "--html", [args.dataset, str(out),
                                                   *(str(p) for p in (args.model, args.allowlist, saved) if p)])
    if args.model:
        open_parquet(args.model).close()  # its path (run_audit reads the model first), before polars
    # the allowlist is read here (YAML: no polars), as run_audit would read it next
    expected = ExpectedErrors.load(args.allowlist) if args.allowlist else None
    from baseline.fleet.audit import check_output_dir, run_audit
    from baseline.fleet.report import terminal_report, write_html

    check_output_dir(out)  # a planted .sets/.current refused before minutes of work, not after
    model, source = args.model, "given"
    if model is None and not args.refit:
        saved = layout.saved_model(args.dataset)
        model, source = (str(saved), "saved by `baseline learn`") if saved else (None, "learned from the dataset")
    elif model is None:
        source = "learned from the dataset (--refit)"
    with _reading(args.dataset):
        result = run_audit(args.dataset, out_dir=out, since=since, model=model, expected=expected,
                           learn_expected=not args.no_learn_expected)
    html = str(write_html(result, args.html)) if args.html else None
    summary = {"dataset": args.dataset, "out": str(out), "model": model, "model_source": source,
               "since": since.isoformat() if since else None, "html": html, **_audit_summary(result, result.files)}
    if args.json:
        return _emit(args, summary, [])
    print(f"baseline model: {printable(str(model)) if model else 'none saved'} ({source})")  # what this audit was judged against
    for line in _drift_lines(result.model_drift):
        print(line)
    if result.stale_summary_hosts:
        hosts = f"{result.stale_summary_hosts:,} host{'s' if result.stale_summary_hosts > 1 else ''}"
        print(f"  counters: {hosts} read whole, their 15-minute summaries stale (written by "
              f"an older tracebase?): the same tables, slower; `baseline summarize {printable(args.dataset)}` writes them again")
    sys.stdout.write(terminal_report(result))
    print(f"wrote {', '.join(printable(str(p)) for p in result.files.values())}")
    if html:
        print(f"wrote {printable(str(html))}")
    return 0


def handle_report(args: argparse.Namespace) -> int:
    from baseline.fleet import paths
    from baseline.pipeline import layout

    directory = paths.audit_dir(layout.audit_output(args.findings_dir, strict=True) or Path(args.findings_dir))
    if args.html:
        _check_writable_file(args.html, "--html", [args.findings_dir, str(directory)])
    from baseline.fleet.audit import read_audit
    from baseline.fleet.report import terminal_report, write_html

    result = read_audit(directory)
    html = str(write_html(result, args.html)) if args.html else None
    if args.json:
        return _emit(args, {"findings_dir": str(directory), "html": html, **_audit_summary(result)}, [])
    sys.stdout.write(terminal_report(result))
    if html:
        print(f"wrote {printable(str(html))}")
    return 0
