"""CPU of the footer checks every dataset reader makes (`tracer.schema.validate_file` on each
events and counters file), this tree against another checkout, interleaved in one run.

    .venv/bin/python -m bench.bench_footers DATASET --before DIR [--repeat 2]

Each measurement is a fresh process: a warm-up on the first 50 files (the footer schemas a
dataset's files share are cached, as in one audit), then every file once; the figure is that
pass's CPU time. Round nineteen added the time-range check (`validate_ranges`, from the row
groups' statistics) to this path; on the 10,000-host day (20,374 footers) the ratio is within
the runs' spread (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tracer import schema
files = [(f, t) for t in ("events", "counters") for f in schema.dataset_files(sys.argv[2], t)]
for f, t in files[:50]:
    schema.validate_file(f, t)
t0 = time.process_time()
for f, t in files:
    schema.validate_file(f, t)
print(time.process_time() - t0, len(files))
"""


def measure(tree: Path, dataset: Path) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", CODE, str(tree), str(dataset)], capture_output=True, text=True,
                         check=True, timeout=1200).stdout.split()
    return float(out[0]), int(out[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="another checkout (its tracer package is measured)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    ratios = []
    for i in range(args.repeat):
        before, n = measure(args.before, args.dataset)
        now, _ = measure(REPO, args.dataset)
        ratios.append(now / before)
        print(f"pair {i + 1}: before {before:.2f} s, this tree {now:.2f} s CPU for {n:,} footers (x{now / before:.3f})")
    print(f"median ratio x{statistics.median(ratios):.3f} (this tree / before)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
