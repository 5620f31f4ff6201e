"""`tracer record` overhead on a real syscall-heavy workload, against the same workload
untraced and under `strace -f -o /dev/null`, all measured in the same run.

Workload: a tree of small files (default 3000) walked by find+cat, `ls -lR`, `tar | cat`,
plus 30 fork+exec of /bin/true: many small open/read/close/stat calls and process creation.

    sudo .venv/bin/python -m bench.bench_record [--quick] [--files N] [--repeat R]

Reported: median wall time of the command per mode; for the recorder both the command's
run time while traced (what the traced program experiences) and the total including
decoding, path resolution and the Parquet write; ratios traced/untraced and traced/strace;
the CPU time the command itself used (user + system, from its rusage: the BPF programs run in
its system time) and the recorder's own CPU time while the command ran (the ring buffer
consumer); events recorded, events/s and lost events. The modes are interleaved so that load
from other processes hits them alike; on a busy machine the CPU-time ratio is the steadier
figure. The BPF compile (once per process) and a first recording of /bin/true (first-use
costs: ring buffer set-up, library warm-up) are shown separately and not included.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.txt").write_text(f"file {i}\n" * 4)


def workload(root: Path) -> list[str]:
    script = (
        f"find {root} -type f -exec cat {{}} + >/dev/null; "
        f"ls -lR {root} >/dev/null; "
        f"tar -cf - -C {root} . | cat >/dev/null; "
        "for i in $(seq 30); do /bin/true; done"
    )
    return ["/bin/sh", "-c", script]


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def children_cpu() -> float:
    """CPU seconds used by reaped children (the command and its descendants)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller tree, one repetition")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    files = 500 if args.quick else args.files
    repeat = 1 if args.quick else args.repeat

    from tracer.record.recorder import SyscallRecorder

    tmp = Path(tempfile.mkdtemp(prefix="tracebase-bench-"))
    try:
        build_tree(tmp / "tree", files)
        cmd = workload(tmp / "tree")
        null = subprocess.DEVNULL
        subprocess.run(cmd, stdout=null, stderr=null, check=True)  # warm the page cache

        t0 = time.perf_counter()
        recorder = SyscallRecorder().load()
        compile_s = time.perf_counter() - t0
        devnull = os.open("/dev/null", os.O_WRONLY)
        t0 = time.perf_counter()
        recorder.record(["/bin/true"], stdout=devnull).write(tmp / "warmup.parquet")
        warmup_s = time.perf_counter() - t0

        untraced, strace, traced_run, traced_total, events, lost, raw = [], [], [], [], [], [], []
        cpu_untraced, cpu_traced, cpu_consumer = [], [], []
        follow = recorder._follow

        def timed_follow(*a, **kw):  # the recorder's own CPU while the command runs
            t0 = time.thread_time()
            try:
                return follow(*a, **kw)
            finally:
                cpu_consumer.append(time.thread_time() - t0)

        recorder._follow = timed_follow
        for _ in range(repeat):
            c0 = children_cpu()
            untraced.append(timed(lambda: subprocess.run(cmd, stdout=null, stderr=null, check=True)))
            cpu_untraced.append(children_cpu() - c0)
            if shutil.which("strace"):
                strace.append(timed(lambda: subprocess.run(
                    ["strace", "-f", "-qq", "-o", "/dev/null", *cmd], stdout=null, stderr=null, check=True)))
            t0 = time.perf_counter()
            c0 = children_cpu()
            rec = recorder.record(cmd, stdout=devnull, stderr=devnull)
            cpu_traced.append(children_cpu() - c0)
            rec.write(tmp / "trace.parquet")
            traced_total.append(time.perf_counter() - t0)
            traced_run.append(rec.duration_s)
            events.append(rec.events.num_rows)
            raw.append(rec.raw_records)
            lost.append(rec.lost_events)
            assert rec.exit_status == 0, rec.exit_status
        recorder.close()

        med = statistics.median
        u, r, tot = med(untraced), med(traced_run), med(traced_total)
        print(f"workload: {files} files (find+cat, ls -lR, tar|cat, 30 x fork+exec), "
              f"median of {repeat}; BPF compile+load {compile_s:.2f}s and first recording "
              f"{warmup_s:.2f}s (once, excluded)")
        print(f"  untraced                         {u:8.3f} s")
        if strace:
            s = med(strace)
            print(f"  strace -f -o /dev/null           {s:8.3f} s   {s / u:6.2f}x untraced")
        print(f"  tracer record (command run time) {r:8.3f} s   {r / u:6.2f}x untraced"
              + (f"   {r / s:5.2f}x strace" if strace else ""))
        print(f"  tracer record (incl. decode+write){tot:7.3f} s   {tot / u:6.2f}x untraced"
              + (f"   {tot / s:5.2f}x strace" if strace else ""))
        cu, ct_, cc = med(cpu_untraced), med(cpu_traced), med(cpu_consumer)
        print(f"  command CPU time: untraced {cu:.3f} s, traced {ct_:.3f} s   {ct_ / cu:6.2f}x; "
              f"recorder's own CPU while it ran {cc:.3f} s ({cc / r:.0%} of a core)")
        print(f"  events recorded {med(events):,.0f} (raw {med(raw):,.0f}); "
              f"{med(raw) / r:,.0f} events/s while running; lost events {max(lost)}")
        return 0 if max(lost) == 0 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
