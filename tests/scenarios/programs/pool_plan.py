"""A thread pool whose work is handed out by plan, so a test can force which worker takes which
part (a real pool hands parts out in scheduling order).

usage: pool_plan.py BASE 'PARTS PARTS ...'  -- one comma-separated list per worker, run after
all workers started. An even part is written to BASE/out/part<i>.bin, an odd one read from
BASE/in/<i>.dat (stat, then read); a part that is a name reads BASE/in/<name>.cfg.
"""

import os
import sys
import threading

base = sys.argv[1]
plan = [w.split(",") for w in sys.argv[2].split()]
start = threading.Barrier(len(plan))


def task(part: str) -> None:
    if not part.isdigit():
        with open(os.path.join(base, "in", f"{part}.cfg"), "rb") as fh:
            fh.read()
    elif int(part) % 2:
        path = os.path.join(base, "in", f"{part}.dat")
        os.stat(path)
        with open(path, "rb") as fh:
            fh.read()
    else:
        with open(os.path.join(base, "out", f"part{part}.bin"), "wb") as fh:
            for _ in range(4):
                fh.write(bytes([65 + int(part)]) * 4096)


def worker(parts: list[str]) -> None:
    start.wait()
    for part in parts:
        task(part)


threads = [threading.Thread(target=worker, args=(p,)) for p in plan]
for t in threads:
    t.start()
for t in threads:
    t.join()
