"""What starting the tracer costs: bcc's compile and the load, per program, against an empty bcc
program compiled in the same run.

    sudo .venv/bin/python -m bench.bench_start [--quick] [--repeat N] [--checkout DIR ...]

Each start runs in a process of its own (bcc keeps state per process; imports are not counted):
`tracer record`'s `SyscallRecorder.load()` (compile, load, attach and detach of the sched
tracepoints, the ring buffer mapped) and `tracer run`'s start of each shipped probe set
(`FleetProgram.compile()` + `attach(best_effort=True)`: the probe check, the uprobe slot-key
check, the attach of what exists here). CPU is the process's user+system time over that section
(children none), wall its elapsed time; "compile" is the part spent inside `bcc.BPF(...)`.
The reference is `bcc.BPF(text=<an empty function>)` in a process of its own: bcc's fixed cost
(LLVM and clang set-up, helpers.h, one kallsyms lookup). Ratios are of CPU, against the
reference's median in the same run.

`--checkout DIR` measures the tree at DIR instead (its tracer/ and bpf/, e.g. /work/main for the
figures before a change); with several, the starts are interleaved, checkout by checkout, so a
change of load hits all alike. Timings under load are noise: compare CPU, paired.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Runs in the measured process: prints one JSON line.
CHILD = r"""
import json, resource, sys, time
from tracer.privilege import load_bcc

bcc = load_bcc()
spent = {"compile_cpu": 0.0, "compiles": 0}


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class TimedBPF(bcc.BPF):
    def __init__(self, *args, **kwargs):
        start = cpu()
        try:
            super().__init__(*args, **kwargs)
        finally:
            spent["compile_cpu"] += cpu() - start
            spent["compiles"] += 1


bcc.BPF = TimedBPF
what = sys.argv[1]
if what == "recorder":
    from tracer.record.recorder import SyscallRecorder
elif what != "empty":
    from tracer.fleet.probes import load_probe_set
    from tracer.fleet.program import FleetProgram
    pset = load_probe_set(what)
c0, w0 = cpu(), time.perf_counter()
if what == "empty":
    TimedBPF(text=b"int empty(void *ctx) { return 0; }").cleanup()
elif what == "recorder":
    SyscallRecorder().load().close()
else:
    prog = FleetProgram(pset)
    prog.compile()
    prog.attach(best_effort=True)
    prog.close()
print(json.dumps({"cpu": cpu() - c0, "wall": time.perf_counter() - w0, **spent}))
"""

PROGRAMS = ("empty", "recorder", "syscalls", "verbs-user", "rdma", "rdma-queries")
QUICK = ("empty", "recorder", "syscalls", "verbs-user")


def start(checkout: Path, program: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run([sys.executable, "-c", CHILD, program], capture_output=True, text=True, env=env,
                         cwd=checkout, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"bench_start: {program} in {checkout} failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the recorder, the syscalls and the uprobe set only")
    parser.add_argument("--repeat", type=int, default=None, help="starts per program (default 3, --quick 2)")
    parser.add_argument("--checkout", type=Path, action="append", help="tree to measure (default: this one)")
    parser.add_argument("--json", action="store_true", help="every start as a JSON line as well")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_start: needs root (bcc loads BPF programs)", file=sys.stderr)
        return 2
    repeat = args.repeat or (2 if args.quick else 3)
    checkouts = [c.resolve() for c in (args.checkout or [REPO])]
    programs = QUICK if args.quick else PROGRAMS
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(repeat):
        for program in programs:
            for checkout in checkouts:
                result = start(checkout, program)
                runs.setdefault((str(checkout), program), []).append(result)
                if args.json:
                    print(json.dumps({"checkout": str(checkout), "program": program, **result}), flush=True)
    print(f"{repeat} starts each, one process per start; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'checkout':<28} {'program':<13} {'CPU s':>7} {'compile':>8} {'wall s':>7} {'x empty':>8} {'compiles':>9}")
    for checkout in checkouts:
        empty = statistics.median(r["cpu"] for r in runs[(str(checkout), "empty")])
        for program in programs:
            rs = runs[(str(checkout), program)]
            cpu = statistics.median(r["cpu"] for r in rs)
            print(f"{str(checkout)[-28:]:<28} {program:<13} {cpu:7.2f} "
                  f"{statistics.median(r['compile_cpu'] for r in rs):8.2f} "
                  f"{statistics.median(r['wall'] for r in rs):7.2f} {cpu / empty:8.1f} "
                  f"{max(r['compiles'] for r in rs):9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
