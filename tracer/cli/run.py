"""`tracer run`: the always-on fleet tracer daemon (spool snapshots, capture windows, counters)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tracer.cli import common
from tracer.cli.common import HelpFormatter

EPILOG = """\
examples:
  tracer run rdma --spool /var/spool/tracebase          # 13 RDMA fexit probes, 5 s snapshots
  tracer run verbs-user syscalls --best-effort          # hosts where fexit is refused
  tracer run syscalls -p 4242 -x -d 60s                 # one process, failures only, one minute
  tracer run rdma --good-every 1h --good-window 10s --sample 10 --latency-bound 50ms
  tracer run rdma --prom /var/lib/node_exporter/textfile/tracebase.prom
  pkill -USR1 -f 'tracer run'                           # open a capture window now
  pkill -USR2 -f 'tracer run'                           # write a snapshot now (interval restarts)

A probe set is a name under bpf/probes/ (rdma, verbs-user, syscalls) or a path to a YAML file.
Snapshots: <spool>/<host>/snap-<UTC time>-<seq>/{events,counters}.parquet, renamed into place
whole. SIGTERM/SIGINT write a final snapshot and detach.

exit status: 0 stopped (-d elapsed, the -p process exited, or SIGTERM/SIGINT/SIGHUP after the final
snapshot); 2 trouble (bad input or usage, not root, nothing could attach, an OS error: one line on
stderr).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run", help="run the fleet tracer daemon", description=__doc__.split(": ", 1)[1],
        formatter_class=HelpFormatter, epilog=EPILOG,
    )
    p.add_argument("sets", nargs="*", metavar="SET", default=["rdma"], help="probe sets (default: rdma)")
    p.add_argument("-p", "--pid", type=common.positive_int, metavar="PID",
                   help="trace only this process (default: every process)")
    p.add_argument("-x", "--failures", dest="failures_only", action="store_true",
                   help="failures only: no good-trace capture")
    common.hidden_alias(p, "--failures-only", dest="failures_only", action="store_true")
    p.add_argument("-d", "--duration", metavar="DURATION", type=common.duration,
                   help="stop after this long (e.g. 60s, 2h, 1d)")
    p.add_argument("-i", "--interval", metavar="INTERVAL", default=5.0, type=common.duration,
                   help="snapshot interval, 100ms to 1h (default 5s)")
    p.add_argument("--spool", default="/var/spool/tracebase", type=common.output_path("the spool directory"), help="spool directory (default %(default)s)")
    p.add_argument("--good-every", metavar="DURATION", default=3600.0, type=common.duration,
                   help="open a capture window this often (default 1h)")
    p.add_argument("--good-window", metavar="DURATION", default=10.0, type=common.duration,
                   help="capture window length (default 10s)")
    p.add_argument("--sample", type=common.positive_int, default=10, metavar="N", help="emit 1 in N good traces per probe (default 10)")
    p.add_argument("--latency-bound", metavar="DURATION", default=50_000_000, type=common.duration_ns,
                   help="good traces only under this (default 50ms)")
    p.add_argument("--ringbuf-kb", type=common.positive_int, default=256, metavar="KB", help="ring buffer size (default 256)")
    p.add_argument("--examples", type=common.positive_int, default=4, metavar="K",
                   help="full call trees per failure signature per interval; the rest are counted (default 4)")
    p.add_argument("--best-effort", action="store_true", help="run with the probes that attach; report the rest")
    p.add_argument("--prom", metavar="FILE", type=common.output_path("the Prometheus textfile", file=True), help="write counters in Prometheus text format (textfile collector)")
    p.add_argument("--metadata-file", metavar="FILE", help="YAML/JSON job metadata, re-read when it changes")
    p.add_argument("--control-file", metavar="FILE", help="open a capture window when this file appears (then deleted)")
    p.add_argument("--host", help="host name in records and spool (default: this host's name)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from tracer.errors import TracebaseError
    from tracer.fleet.config import RunConfig, check_run, host_context

    for flag, value in (("--spool", args.spool), ("--prom", args.prom), ("--metadata-file", args.metadata_file),
                        ("--control-file", args.control_file)):
        if value == "":  # Path("") is ".": never what was meant
            raise TracebaseError(f"{flag}: expected a path, found ''")
    config = RunConfig(
        sets=list(args.sets),
        spool=Path(args.spool),
        interval_s=args.interval,
        duration_s=args.duration,
        pid=args.pid or 0,
        failures_only=args.failures_only,
        good_every_s=args.good_every,
        good_window_s=args.good_window,
        sample_every=args.sample,
        latency_bound_ns=args.latency_bound,
        ringbuf_kb=args.ringbuf_kb,
        examples=args.examples,
        best_effort=args.best_effort,
        prom=Path(args.prom) if args.prom is not None else None,
        metadata_file=Path(args.metadata_file) if args.metadata_file is not None else None,
        control_file=Path(args.control_file) if args.control_file is not None else None,
        host=args.host,
    )
    # Every option is checked (tracer.fleet.config, the daemon's own check) before the daemon's
    # module and its pyarrow/numpy/polars are imported: a bad flag or file costs ~0.1 s, not ~0.6.
    ctx = host_context(config)
    checked = check_run(config, ctx)
    from tracer.fleet.daemon import run_daemon

    return run_daemon(config, ctx, checked)
