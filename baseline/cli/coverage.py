"""`baseline ingest`, `baseline summarize`, `baseline coverage`, `baseline suggest-probes`: the scheduled pipeline by hand.

These are the same library calls the Airflow DAGs make (baseline.pipeline.ingest, baseline.pipeline.coverage,
baseline.pipeline.suggest), so the pipeline runs without Airflow too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import printable

MAX_DAYS_AFTER = 36_500  # a century: --compact-days-after past it names no date the calendar has

INGEST_EPILOG = """examples:
  baseline ingest /var/spool/tracebase /srv/tracebase/dataset
  baseline ingest SPOOL DATASET --quarantine /srv/tracebase/quarantine --keep-spool
  baseline ingest SPOOL DATASET --compact-min-files 4 --json
  baseline ingest SPOOL DATASET --compact-days-after 2     # closed days' events into day files across hosts
"""

SUMMARIZE_EPILOG = """examples:
  baseline summarize /srv/tracebase/dataset                  # after upgrading tracebase: the audit is fast again
  baseline summarize DATASET --date 2026-12-01 --date 2026-12-02 -j 2
  baseline summarize DATASET --json

exit status: 0 done (files left without a summary are listed: the audit reads them whole); 2 trouble
(bad input or usage, an OS error such as a full disk: one line on stderr naming the file or flag);
130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP.
"""

COVERAGE_EPILOG = """examples:
  baseline coverage /srv/tracebase/dataset                      # week of the newest data -> DATASET/reports/<week>/
  baseline coverage DATASET --week 2026-W48 --out reports/
  baseline coverage DATASET --probes bpf/probes/rdma.yaml --nccl-logs 'logs/nccl-*.log'
  baseline coverage DATASET --nccl-logs app_failures.parquet    # a log pipeline's table (tracer.schema's app_failures)
  baseline coverage DATASET --json                              # DATASET/joblogs/*.log used when present
"""

SUGGEST_EPILOG = """examples:
  baseline suggest-probes --btf /sys/kernel/btf                 # vmlinux + module BTF
  bpftool btf dump file /sys/kernel/btf/mlx5_ib format raw > new.txt
  baseline suggest-probes --symbols new.txt --old old.txt --probes bpf/probes/rdma.yaml
  baseline suggest-probes --symbols /proc/kallsyms --reference rdma_control_path.yaml --all
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="move spool snapshots into the partitioned dataset (idempotent)",
        description="Move complete spool snapshots into DATASET/<table>/date=/host=/part-*.parquet, "
        "quarantine unreadable files with the reason, and compact partitions of small files.",
        formatter_class=HelpFormatter,
        epilog=INGEST_EPILOG,
    )
    p.add_argument("spool", metavar="SPOOL", type=common.input_path("the spool"), help="spool directory written by `tracer run`")
    p.add_argument("dataset", metavar="DATASET", type=common.output_path("the dataset directory"), help="dataset root")
    p.add_argument("--quarantine", metavar="DIR", type=common.output_path("the quarantine directory"), help="where unreadable files go (default: DATASET/../quarantine)")
    p.add_argument("--keep-spool", action="store_true", help="leave ingested snapshots in the spool")
    p.add_argument("--compact-min-files", type=common.non_negative_int, default=8, metavar="N",
                   help="compact a partition holding at least N small files (default 8; 0 disables)")
    p.add_argument("--compact-days-after", type=common.int_range(0, MAX_DAYS_AFTER), default=0, metavar="DAYS",
                   help="compact the events of every date at least DAYS days old (UTC) across hosts into day "
                        "files (the pipeline's tidy does at 2; default 0: never; at most 36,500)")
    p.add_argument("-j", "--workers", type=common.positive_int, default=1, metavar="N", help="ingest hosts in N processes (default 1)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_ingest)

    m = subparsers.add_parser(
        "summarize",
        help="write the counters' 15-minute summaries that are missing or stale (after an upgrade)",
        description="Write the 15-minute summary (counter_buckets) of every counters file of the dataset whose "
        "summary is missing or was written by another rule (an older tracebase, another writer), and remove "
        "summaries whose counters file is gone. The audit reads summaries instead of the snapshot rows; a host "
        "without them is read whole (the same tables, slower). Ingest and compaction write them for what they "
        "write; this is for days nothing writes any more. Idempotent.",
        formatter_class=HelpFormatter,
        epilog=SUMMARIZE_EPILOG,
    )
    m.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"), help="dataset root")
    m.add_argument("--date", action="append", type=_iso_date, metavar="YYYY-MM-DD",
                   help="only this date's counters (repeat for more; default: every date)")
    m.add_argument("-j", "--workers", type=common.positive_int, default=1, metavar="N",
                   help="summarize partitions in N processes (default 1)")
    common.add_json(m, "the result (files looked at, current, written, left with the reason)")
    m.set_defaults(func=cmd_summarize)

    c = subparsers.add_parser(
        "coverage",
        help="weekly probe-coverage report (HTML, Markdown, Parquet)",
        description="Per-probe invocations, failures, errno mix and week-over-week trend from the "
        "counters; probes that never fired; probes missing per kernel/vendor group and the "
        "namespace-gate resolution; coverage of application-labelled failures.",
        formatter_class=HelpFormatter,
        epilog=COVERAGE_EPILOG,
    )
    c.add_argument("dataset", metavar="DATASET", type=common.input_path("the dataset"), help="dataset root")
    c.add_argument("--week", metavar="WEEK", help="ISO week (2026-W48) or a date in it (default: newest data)")
    c.add_argument("--probes", metavar="SET.yaml", type=common.input_path("the probe set"), help="probe set the fleet runs (for never-fired and app coverage)")
    c.add_argument("--nccl-logs", nargs="+", default=None, metavar="FILE",
                   help="NCCL logs (globs allowed) or app_failures .parquet files "
                        "(default: DATASET/joblogs/*.log when present, as `baseline simulate` writes them)")
    common.add_output(c, metavar="DIR", help="output directory (default: DATASET/reports)")
    c.add_argument("--trend-pct", type=common.positive_float, default=25.0, metavar="PCT",
                   help="week-over-week change that counts as rising/falling (default 25)")
    common.add_json(c, "a summary (week, hosts, probes, never fired, application-failure coverage, files)")
    c.set_defaults(func=cmd_coverage)

    s = subparsers.add_parser(
        "suggest-probes",
        help="probe-set suggestions from a kernel's BTF or symbol list",
        description="List RDMA functions worth probing by RDMATracer's four rules (no read-only, "
        "no generic internals, no cleanup/refcount paths; creates/updates of QP/MR/PD/CQ and "
        "hardware paths), and probes that vanished or were renamed since an older kernel.",
        formatter_class=HelpFormatter,
        epilog=SUGGEST_EPILOG,
    )
    src = s.add_mutually_exclusive_group()
    src.add_argument("--btf", metavar="FILE", type=common.input_path("the BTF"), help="BTF blob or directory (default /sys/kernel/btf)")
    src.add_argument("--symbols", metavar="FILE", type=common.input_path("the symbol list"), help="bpftool raw dump, kallsyms, or one name per line")
    s.add_argument("--base-btf", metavar="FILE", type=common.input_path("the base BTF"), help="vmlinux BTF for a module's split BTF")
    s.add_argument("--old", metavar="FILE", type=common.input_path("the previous kernel's BTF or symbols"), help="the previous kernel's BTF or symbol list")
    s.add_argument("--probes", metavar="SET.yaml", type=common.input_path("the probe set"), help="current probe set (checked for vanished/renamed)")
    s.add_argument("--reference", metavar="FILE", type=common.input_path("the reference"), help="rdma_control_path.yaml: its function classes win")
    s.add_argument("--all", action="store_true", help="also list excluded functions with the reason")
    s.add_argument("--json", action="store_true", help="print suggestions as JSON lines")
    s.set_defaults(func=cmd_suggest)


def _iso_date(text: str) -> str:
    import datetime as dt

    if len(text) == 10:  # (fromisoformat also takes 20261201 and 2026-W48-1)
        with contextlib.suppress(ValueError):
            return dt.date.fromisoformat(text).isoformat()
    raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, found {printable(text)!r}")


def cmd_summarize(args: argparse.Namespace) -> int:
    from baseline.pipeline.summaries import summarize_dataset

    result = summarize_dataset(args.dataset, dates=args.date, workers=args.workers)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    print(f"{result.files} counters files: {result.written} summaries written, {result.current} current already"
          + (f", {result.orphans_removed} without a counters file removed" if result.orphans_removed else ""))
    for item in result.left:  # (the reason names the file, mostly: then it is said once)
        reason = item["reason"] if item["path"] in item["reason"] else f"{item['path']}: {item['reason']}"
        print(f"left without a summary (the audit reads it whole): {printable(reason)}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from pathlib import Path

    from baseline.pipeline import layout
    from tracer.errors import TracebaseError

    if args.compact_min_files == 1:
        raise TracebaseError(f"--compact-min-files: expected 0 or a number >= 2, found {args.compact_min_files}")
    quarantine = Path(args.quarantine) if args.quarantine else Path(args.dataset).resolve().parent / "quarantine"
    if quarantine.exists() and not quarantine.is_dir():
        raise TracebaseError(f"--quarantine {quarantine}: expected a directory, found a file")
    layout.check_spool(args.spool)  # ingest_spool's first check, before pyarrow is imported
    from baseline.pipeline.ingest import compact_dataset, ingest_spool

    result = ingest_spool(args.spool, args.dataset, quarantine, remove_ingested=not args.keep_spool, workers=args.workers)
    compacted = compact_dataset(args.dataset, min_files=args.compact_min_files,
                                days_after=args.compact_days_after or None, quarantine=quarantine) \
        if args.compact_min_files or args.compact_days_after else None
    for w in result.warnings:  # with --json too: in the JSON ("warnings") and said where a person looks
        print(f"baseline ingest: warning: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"ingest": result.to_dict(), "compact": compacted.to_dict() if compacted else None}))
        return 0
    rows = ", ".join(f"{n} {t} rows" for t, n in result.rows.items())
    print(f"ingested {result.snapshots} snapshots ({rows}); {result.already_ingested} already in the dataset")
    for q in result.quarantined:
        print(f"quarantined {q['path']}: {q['reason']}")
    if result.stale_temporaries_removed:
        print(f"removed {result.stale_temporaries_removed} temporaries an interrupted run left")
    if result.spool_temporaries_removed:
        gone = result.spool_temporaries_removed
        print(f"removed {len(gone)} temporar{'y' if len(gone) == 1 else 'ies'} a killed tracer left in the spool: "
              + ", ".join(gone[:3]) + (" ..." if len(gone) > 3 else ""))
    if result.watermark:
        print(f"dataset complete up to {result.watermark} (newest snapshot committed)")
    if compacted and compacted.partitions:
        print(f"compacted {compacted.partitions} partitions ({compacted.files_in} files -> {compacted.files_out})")
    if compacted and compacted.days:
        print(f"compacted {compacted.days} closed days across hosts ({compacted.day_files_in} files -> "
              f"{compacted.day_files_out} day files)")
    for q in compacted.quarantined if compacted else ():
        print(f"quarantined {q['path']}: {q['reason']}")
    for left in compacted.days_left if compacted else ():
        print(f"baseline ingest: warning: {left}", file=sys.stderr)
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from baseline.pipeline import layout
    from baseline.pipeline.coverage_inputs import check_coverage_inputs, empty_week_note

    layout.check_dataset(args.dataset)  # weekly_report's first check, before anything else is looked at
    if args.output:
        layout.refuse_among_tables(args.dataset, args.output, "--out", "a reports directory")
    logs = args.nccl_logs
    if logs is None:  # the dataset's own job logs (baseline simulate writes them beside the tables)
        logs = [str(p) for p in layout.job_logs(args.dataset)]
    # the logs' paths, --week and --probes checked as the report checks them, before polars is
    # imported (~0.4 s of CPU): a typo is refused at once
    check_coverage_inputs(args.dataset, args.week, args.probes, logs)
    from baseline.pipeline.coverage import weekly_report, write_report
    from baseline.pipeline.ingest import dataset_lock
    from baseline.pipeline.nccl import load_app_failures
    from baseline.pipeline.tasks import coverage_summary

    parsed = load_app_failures(logs) if logs else None
    with dataset_lock(args.dataset, exclusive=False):  # a running ingest finishes its interval first
        report = weekly_report(
            args.dataset,
            week=args.week,
            probe_set=args.probes,
            app_failures=parsed.failures if parsed else None,
            parse_problems=parsed.problems if parsed else (),
            trend_change_pct=args.trend_pct,
        )
    written = write_report(report, args.output or layout.default_reports_dir(args.dataset))
    summary = coverage_summary(report, written) | {"nccl_logs": len(logs or [])}
    if (note := empty_week_note(args.dataset, report.week, report.hosts)) is not None:
        print(f"baseline coverage: warning: {note}", file=sys.stderr)
    for problem in report.parse_problems:  # with --json too: counted there, said where a person looks
        print(f"baseline coverage: warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary, sort_keys=True, default=str))
        return 0
    probed = (f"; {report.app_summary.get('probed', 0):.0%} of {report.app_total} app failures on probed functions, "
              f"{report.app_summary.get('seen', 0):.0%} seen by a live probe") if report.app_total else ""
    print(f"{report.week}: {report.hosts} hosts, {report.probes.height} probes, {len(report.never_fired)} never fired{probed}")
    print(f"wrote {printable(str(written['html']))}, {printable(str(written['markdown']))} and 3 Parquet tables")
    return 0


def cmd_suggest(args: argparse.Namespace) -> int:
    from baseline.pipeline.suggest import load_reference_classes, read_symbols, render_text, suggest

    new = read_symbols(args.symbols or args.btf or "/sys/kernel/btf", base_btf=args.base_btf)
    old = read_symbols(args.old, base_btf=args.base_btf) if args.old else None
    probes: list = []
    if args.probes:
        from baseline.pipeline.coverage_inputs import load_probe_set

        probes = list(load_probe_set(args.probes))
    reference = load_reference_classes(args.reference) if args.reference else None
    report = suggest(new, old=old, probes=probes, reference=reference)
    if args.json:
        for s in report.suggestions:
            if args.all or s.action not in ("exclude", "skip"):
                print(json.dumps(s.to_dict()))
        return 0
    sys.stdout.write(render_text(report, show_all=args.all))
    return 0
