"""`baseline`: diff traces against known-good runs, learn expected errors, audit fleets.

Thin command-line layer: one module per group of subcommands, parsing flags and printing, over
`baseline.run`, `baseline.fleet`, `baseline.simulator` and `baseline.pipeline`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

# polars' allocator setting, shared with the DAG files; entry() sets it before anything imports polars
from baseline.pipeline.allocator import ALLOCATOR_CONF, configure_allocator

__all__ = ["ALLOCATOR_CONF", "configure_allocator", "entry", "main"]

# tracer.cli.common is imported by main()/entry(), not here: the console script imports this
# module first, and a Ctrl-C while it loads must end quietly (exit 130), not in a traceback.

SUBCOMMANDS = [
    "baseline.cli.diff",  # diff
    "baseline.cli.allowlist",  # allowlist learn
    "baseline.cli.simulate",  # simulate, evaluate
    "baseline.cli.audit",  # learn, audit, report
    "baseline.cli.coverage",  # ingest, summarize, coverage, suggest-probes
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
    "summarize": "baseline.cli.coverage",
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


def main(argv: Sequence[str] | None = None) -> int:
    from tracer.cli import common

    words = sys.argv[1:] if argv is None else list(argv)
    module = COMMANDS.get(words[0]) if words else None
    return common.run("baseline", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1],
                      [module] if module else SUBCOMMANDS, argv, EPILOG)


def entry() -> None:
    """The console script: main(), then common.exit_process (no native-teardown aborts)."""
    configure_allocator(command=sys.argv[1] if len(sys.argv) > 1 else None)
    try:
        from tracer.startup import single_threaded_blas, without_pandas

        single_threaded_blas()  # before numpy loads: no command of ours calls BLAS
        without_pandas()  # which pyarrow would import at its first conversion
        from tracer.cli import common
    except KeyboardInterrupt:
        os._exit(130)
    common.exit_process(main())


if __name__ == "__main__":
    entry()
