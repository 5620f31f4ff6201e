"""Opens every file of a directory at once (like a tool holding its inputs open)."""

import os
import sys

base = sys.argv[1]
# Held open on purpose (that is the point of the program), hence no context manager.
handles = [open(os.path.join(base, name), "rb") for name in sorted(os.listdir(base))]  # noqa: SIM115
print(sum(len(h.read(16)) for h in handles))
