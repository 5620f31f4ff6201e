"""`tracer`: record syscall traces, run the fleet tracer daemon, check probe sets.

Thin command-line layer: one module per subcommand (`record`, `run`, `probes`) parsing flags and
printing, over `tracer.record` and `tracer.fleet`; `common` holds the shared parser helpers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# tracer.cli.common is imported by main()/entry(), not here: the console script imports this
# module first, and a Ctrl-C while it loads must end quietly (exit 130), not in a traceback.

SUBCOMMANDS = ["tracer.cli.record", "tracer.cli.run", "tracer.cli.probes"]

# `tracer --help`: a few examples (each also in its subcommand's --help, where a test runs it)
EPILOG = """\
examples:
  tracer record -o bad.parquet --label bad -- ./job.sh
  tracer run rdma --spool /var/spool/tracebase          # 13 RDMA fexit probes, 5 s snapshots
  tracer probes check rdma             # BTF/kallsyms lookup, vendor gate, lockdown

exit status: 0 done; 1 `probes check` found missing probes; `record`: the recorded command's;
2 trouble (bad input or usage, an OS error: one line on stderr); 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP
(`run`: 0, its normal stop, after the final snapshot).
'tracer COMMAND --help' shows each command's flags, examples and exit status."""


def main(argv: Sequence[str] | None = None) -> int:
    from tracer.cli import common

    return common.run("tracer", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1], SUBCOMMANDS, argv,
                      EPILOG)


def entry() -> None:
    """The console script: main(), then common.exit_process (no native-teardown aborts)."""
    try:
        from tracer.startup import single_threaded_blas, without_pandas

        single_threaded_blas()  # before numpy loads; a recorded command gets the user's setting
        without_pandas()  # which pyarrow would import at its first conversion
        from tracer.cli import common
    except KeyboardInterrupt:
        os._exit(130)
    common.exit_process(main())


if __name__ == "__main__":
    entry()
