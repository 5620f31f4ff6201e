"""`baseline`: diff traces against known-good runs, learn expected errors, audit fleets.

Thin command-line layer: one module per group of subcommands, parsing flags and printing, over
`baseline.run`, `baseline.fleet`, `baseline.simulator` and `baseline.pipeline`.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping, Sequence

# tracer.cli.common is imported by main()/entry(), not here: the console script imports this
# module first, and a Ctrl-C while it loads must end quietly (exit 130), not in a traceback.

SUBCOMMANDS = [
    "baseline.cli.diff",  # diff
    "baseline.cli.allowlist",  # allowlist learn
    "baseline.cli.simulate",  # simulate, evaluate
    "baseline.cli.audit",  # learn, audit, report
    "baseline.cli.coverage",  # ingest, coverage, suggest-probes
    "baseline.cli.export",  # export (Chrome Trace Event JSON)
]

# The subcommands each module registers. A command line naming one builds that module's parser
# alone: registering the others imports their modules and data (the simulator's scenario
# catalog, ...), ~15-30 ms of CPU at the start of every `baseline diff`. Kept in step with the
# modules by tests/test_cli_common.py.
COMMANDS = {
    "diff": "baseline.cli.diff",
    "allowlist": "baseline.cli.allowlist",
    "simulate": "baseline.cli.simulate",
    "evaluate": "baseline.cli.simulate",
    "learn": "baseline.cli.audit",
    "audit": "baseline.cli.audit",
    "expected": "baseline.cli.audit",
    "report": "baseline.cli.audit",
    "ingest": "baseline.cli.coverage",
    "coverage": "baseline.cli.coverage",
    "suggest-probes": "baseline.cli.coverage",
    "export": "baseline.cli.export",
}

# `baseline --help`: a few examples (each also in its subcommand's --help, where a test runs it)
EPILOG = """\
examples:
  baseline diff good.parquet bad.parquet
  baseline simulate --hosts 50 --hours 24 --seed 1 --out /tmp/fleet
  baseline audit fleet/            # uses fleet/baseline-model.parquet if `baseline learn` wrote it, writes fleet/audit/
  baseline export run.parquet -o run.json

exit status: 0 done; 1 `diff` found an anomaly (like diff(1)); 2 trouble (bad input or usage,
an OS error: one line on stderr); 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP.
'baseline COMMAND --help' shows each command's flags, examples and exit status."""


# polars' allocator (jemalloc, configured through _RJEM_MALLOC_CONF when polars is first imported;
# polars itself sets dirty_decay_ms:500,muzzy_decay_ms:1000 and a background purging thread).
# muzzy_decay_ms:0: pages that have been dirty for the 500 ms are returned with MADV_DONTNEED
# at once instead of being MADV_FREEd and kept for another second. A MADV_FREEd page still counts
# in the process's RSS until the kernel needs the memory, and an audit frees hundreds of MiB
# within seconds: on a 10,000-host day up to ~0.55 GiB of the RSS while the findings are built
# was such pages (the peak RSS ~190 MiB lower, a few % more page faults; bench_audit --audit).
# dirty_decay_ms:100: freed pages are purged after 100 ms instead of 500. An audit's peak is its
# live set (~1.15 GiB on a 10,000-host day) plus what it freed in the last half second and
# jemalloc had not returned yet (a page freed in one thread's arena is not reused by another's),
# so the faster the machine ran the audit, the higher its peak: 1.27-1.57 GiB for the same code
# and day. At 100 ms, five paired CLI runs of the day (both layouts, load 3-8): 1.16-1.28 GiB
# against 1.28-1.46, CPU +3 % (at 0 ms: +27 %).
ALLOCATOR_CONF = "muzzy_decay_ms:0,dirty_decay_ms:100"


def configure_allocator(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set ALLOCATOR_CONF for polars' allocator; effective only before polars is first imported,
    so the entry points call it before anything runs. A setting the user gives in
    _RJEM_MALLOC_CONF comes after ours and wins (jemalloc takes the last value of an option)."""
    user = environ.get("_RJEM_MALLOC_CONF")
    environ["_RJEM_MALLOC_CONF"] = f"{ALLOCATOR_CONF},{user}" if user else ALLOCATOR_CONF


def main(argv: Sequence[str] | None = None) -> int:
    import sys

    from tracer.cli import common

    words = sys.argv[1:] if argv is None else list(argv)
    module = COMMANDS.get(words[0]) if words else None
    return common.run("baseline", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1],
                      [module] if module else SUBCOMMANDS, argv, EPILOG)


def entry() -> None:
    """The console script: main(), then common.exit_process (no native-teardown aborts)."""
    configure_allocator()
    try:
        from tracer.cli import common
    except KeyboardInterrupt:
        os._exit(130)
    common.exit_process(main())


if __name__ == "__main__":
    entry()
