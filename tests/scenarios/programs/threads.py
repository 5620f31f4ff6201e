"""Several threads each read a few files; the thread interleaving differs run to run."""

import os
import sys
import threading

base = sys.argv[1]


def work(index: int) -> None:
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name), "rb") as fh:
            fh.read()


threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
