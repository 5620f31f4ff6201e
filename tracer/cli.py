"""`tracer`: record syscall traces, run the fleet tracer daemon, check probe sets."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tracer.cli_common import run

SUBCOMMANDS = ["tracer.cli_record", "tracer.cli_run", "tracer.cli_probes"]


def main(argv: Sequence[str] | None = None) -> int:
    return run("tracer", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
