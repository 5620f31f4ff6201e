"""`baseline`: diff traces against known-good runs, learn expected errors, audit fleets.

Thin command-line layer: one module per group of subcommands, parsing flags and printing, over
`baseline.run`, `baseline.fleet`, `baseline.simulator` and `baseline.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracer.cli import common

SUBCOMMANDS = [
    "baseline.cli.diff",  # diff
    "baseline.cli.allowlist",  # allowlist learn
    "baseline.cli.simulate",  # simulate, evaluate
    "baseline.cli.audit",  # learn, audit, report
    "baseline.cli.coverage",  # ingest, coverage, suggest-probes
    "baseline.cli.export",  # export (Chrome Trace Event JSON)
]


def main(argv: Sequence[str] | None = None) -> int:
    return common.run("baseline", __doc__.split("\n")[0].strip("`").split(": ", 1)[-1], SUBCOMMANDS, argv)


def entry() -> None:
    """The console script: main(), then common.exit_process (no native-teardown aborts)."""
    common.exit_process(main())


if __name__ == "__main__":
    entry()
