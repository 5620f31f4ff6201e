"""Bifurcation accuracy on the real fault scenarios (tests/scenarios): for each scenario,
record good runs and one bad run under `tracer record` (library), diff them, and check that
the top-1 bifurcation names the injected syscall, errno and path. Also runs the good-vs-good
cases, which must report no anomaly.

    sudo .venv/bin/python -m bench.scenario_accuracy [--quick] [--only NAME ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scenarios.catalog import NO_ANOMALY, SCENARIOS  # noqa: E402
from scenarios.harness import format_table, run_no_anomaly, run_scenario, shared_recorder  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fault scenarios only (skip good-vs-good)")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="run only these scenarios")
    parser.add_argument("--keep", metavar="DIR", help="keep the recorded traces in DIR")
    args = parser.parse_args(argv)
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tracebase-acc-"))
    t0 = time.perf_counter()
    recorder = shared_recorder()
    print(f"recorder loaded in {time.perf_counter() - t0:.1f}s; traces in {out}")
    selected = [s for s in SCENARIOS if not args.only or s.name in args.only]
    outcomes = [run_scenario(sc, recorder, out) for sc in selected]
    if outcomes:
        print("\nfault scenarios (top-1 bifurcation must name the injected syscall, errno, path):")
        print(format_table(outcomes))
    quiet = []
    if not args.quick:
        quiet = [run_no_anomaly(c, recorder, out) for c in NO_ANOMALY if not args.only or c.name in args.only]
        if quiet:
            print("\ngood vs good (must report no anomaly):")
            print(format_table(quiet))
    total = outcomes + quiet
    right = sum(o.correct for o in total)
    print(f"\noverall: {right}/{len(total)} correct ({right / max(len(total), 1):.0%}) "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0 if right == len(total) else 1


if __name__ == "__main__":
    sys.exit(main())
