"""Where `baseline diff`'s peak RSS is made: the CLI run in this process, sampled every ~2 ms.

Each sample holds the resident set (/proc/self/statm), glibc's heap size and bytes in use
(mallinfo2: heap minus in-use is the heap's holes) and the innermost baseline/tracer frame
of the main thread. Printed: VmHWM, the sample at the peak, and for each stage (function) the
highest RSS, heap and in-use seen while it ran, in the order the stages first ran. A stage
where the heap grows while in-use stays below the heap is one whose new arrays fit no hole.

    .venv/bin/python -m bench.diff_memory GOOD.parquet BAD.parquet [diff flags...]

The files of `bench.bench_diff --keep DIR` are the usual input. The sampler thread costs a
few MiB and some wall time; compare runs of this script with each other, not with bench_diff.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import time


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ["arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"]]


def _where(frame: object) -> str:
    """The innermost frame in the project's code, as file:function."""
    while frame is not None:
        code = frame.f_code  # type: ignore[attr-defined]
        if "/baseline/" in code.co_filename or "/tracer/" in code.co_filename:
            return f"{os.path.basename(code.co_filename)}:{code.co_name}"
        frame = frame.f_back  # type: ignore[attr-defined]
    return "(imports)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    # the CLI sets one malloc arena when it starts; set it before the sampler thread exists,
    # or the thread's first malloc would open an arena of its own
    libc.mallopt(-8, 1)
    statm = os.open("/proc/self/statm", os.O_RDONLY)
    main_id = threading.get_ident()
    samples: list[tuple[float, float, float, float, str]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            rss = int(os.pread(statm, 100, 0).split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
            mi = libc.mallinfo2()
            where = _where(sys._current_frames().get(main_id))
            samples.append((time.perf_counter(), rss, mi.arena / 2**20, (mi.uordblks + mi.hblkhd) / 2**20, where))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    from baseline.cli import main as cli_main

    with contextlib.redirect_stdout(open(os.devnull, "w")):  # noqa: SIM115 (closed at exit)
        status = cli_main(["diff", *args])
    done.set()
    sampler.join()
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM"))
    peak = max(samples, key=lambda s: s[1])
    print(f"exit {status}, {time.perf_counter() - t0:.2f} s, VmHWM {int(hwm) / 1024:.1f} MiB; "
          f"peak sample at {peak[0] - t0:.2f} s: RSS {peak[1]:.1f}, heap {peak[2]:.1f}, in use {peak[3]:.1f} MiB "
          f"in {peak[4]}; highest in use {max(s[3] for s in samples):.1f} MiB, heap {max(s[2] for s in samples):.1f} MiB")
    stages: dict[str, list[float]] = {}
    for _, rss, heap, used, where in samples:
        top = stages.setdefault(where, [0.0, 0.0, 0.0, 0])
        top[0], top[1], top[2] = max(top[0], rss), max(top[1], heap), max(top[2], used)
        top[3] += 1
    print(f"{'stage (innermost project function)':48} {'RSS':>7} {'heap':>7} {'in use':>7} {'samples':>8}  (max MiB)")
    for where, (rss, heap, used, n) in stages.items():
        print(f"{where:48} {rss:7.1f} {heap:7.1f} {used:7.1f} {n:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
