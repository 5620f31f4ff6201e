"""`baseline`: diff traces against known-good runs, learn expected errors, audit fleets."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tracer.cli_common import run

SUBCOMMANDS = [
    "baseline.cli_diff",  # diff
    "baseline.cli_allowlist",  # allowlist learn
    "baseline.cli_simulate",  # simulate, evaluate
    "baseline.cli_audit",  # learn, audit, report
    "baseline.cli_coverage",  # ingest, coverage, suggest-probes
]


def main(argv: Sequence[str] | None = None) -> int:
    return run("baseline", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1], SUBCOMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
