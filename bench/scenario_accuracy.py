"""Bifurcation accuracy on the real fault scenarios (tests/scenarios): for each scenario,
record good runs and one bad run under `tracer record` (library), diff them, and check that
the top-1 bifurcation names the injected syscall, errno and path. Also runs the good-vs-good
cases, which must report no anomaly.

With --real, the real Debian programs of tests/scenarios/real.py, real_more.py, real_third.py,
real_fourth.py, real_fifth.py, real_sixth.py, real_seventh.py, real_eighth.py, real_ninth.py and real_tenth.py instead
(gcc, git, sort, sed -i, tar, zip, make, perl, python3, xz, patch, grep -r, xargs -P, ...): three
good runs and one bad run each; the diff of two good runs against the bad one must name the
fault at top 1, and the third good run against the same two must be quiet. real_more.py's
good-vs-good cases (timestamps and pids in names, mktemp -d, xargs -P order, hash seeds, SIGPIPE)
must be quiet too. Each set is scored separately.

    sudo .venv/bin/python -m bench.scenario_accuracy [--quick] [--real] [--only NAME ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scenarios.catalog import NO_ANOMALY, SCENARIOS  # noqa: E402
from scenarios.harness import (  # noqa: E402
    Outcome,
    format_table,
    judge,
    record_scenario,
    run_no_anomaly,
    run_scenario,
    shared_recorder,
)
from scenarios.sets import SETS  # noqa: E402


def run_real(selected, recorder, out: Path) -> tuple[list[Outcome], list[Outcome]]:
    """Each real program: 3 good + 1 bad runs; (top-1 outcomes, good-vs-good outcomes)."""
    import dataclasses

    from baseline.run.diff import diff_traces

    named, quiet = [], []
    for sc in selected:
        t0 = time.perf_counter()
        goods, bad, base = record_scenario(dataclasses.replace(sc, good_runs=3), recorder, out / sc.name)
        outcome = judge(sc, diff_traces(good=goods[:2], bad=bad), base)
        outcome.seconds = time.perf_counter() - t0
        named.append(outcome)
        r = diff_traces(good=goods[:2], bad=goods[2])
        got = "no anomaly" if not r.anomaly else f"{r.bifurcation['probe']} {r.bifurcation['errno']} {r.bifurcation['path']}"
        quiet.append(Outcome(sc.name, "no anomaly", got, not r.anomaly, 0.0))
    return named, quiet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fault scenarios only (skip good-vs-good)")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="run only these scenarios")
    parser.add_argument("--keep", metavar="DIR", help="keep the recorded traces in DIR")
    parser.add_argument("--real", action="store_true", help="the real Debian programs (tests/scenarios/real*.py: nineteen sets)")
    args = parser.parse_args(argv)
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tracebase-acc-"))
    t0 = time.perf_counter()
    recorder = shared_recorder()
    print(f"recorder loaded in {time.perf_counter() - t0:.1f}s; traces in {out}")
    if args.real:
        ok = True
        for real_set in SETS:
            title, programs, extra = f"{real_set.module}.py", real_set.faults, real_set.quiet
            chosen = [s for s in programs if not args.only or s.name in args.only]
            cases = [c for c in extra if not args.only or c.name in args.only]
            if not chosen and not cases:
                continue
            t1 = time.perf_counter()
            named, quiet = run_real(chosen, recorder, out)
            quiet += [run_no_anomaly(c, recorder, out / c.name) for c in cases]
            if real_set.teardown is not None:
                real_set.teardown()
            print(f"\n{title}: real programs (top-1 bifurcation must name the fault's syscall, errno, path):")
            print(format_table(named))
            print(f"\n{title}: good vs good (third good run vs two good runs, and noise cases; must be quiet):")
            print(format_table(quiet))
            right = sum(o.correct for o in named)
            false_alarms = sum(not o.correct for o in quiet)
            print(f"\n{title}: top-1: {right}/{len(named)}; false alarms on good-vs-good: {false_alarms}/{len(quiet)} "
                  f"in {time.perf_counter() - t1:.1f}s")
            ok = ok and right == len(named) and not false_alarms
        return 0 if ok else 1
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
