"""t65-publish.py STAGE DEST: a job's last step, publishing its result (tests/scenarios/real_sixtyfifth.py).
It writes STAGE/result.json.tmp, then renames it over DEST, retrying a busy destination (EBUSY: a
reader's bind mount still over it) up to four times with a doubling backoff (20, 40, 80 ms), and
gives up with exit 75 (EX_TEMPFAIL) when every try failed."""

import errno
import json
import os
import sys
import time

TRIES = 4


def main() -> int:
    stage, dest = sys.argv[1], sys.argv[2]
    tmp = os.path.join(stage, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"job": "t65", "loss": 0.125, "steps": 1000}, f)
    for i in range(TRIES):
        try:
            os.rename(tmp, dest)
            print(f"published {dest}")
            return 0
        except OSError as exc:
            if exc.errno not in (errno.EBUSY, errno.ETXTBSY):
                raise
            print(f"t65-publish: {dest} busy (try {i + 1} of {TRIES})", file=sys.stderr)
            if i + 1 < TRIES:
                time.sleep(0.02 * 2**i)
    print(f"t65-publish: giving up on {dest}", file=sys.stderr)
    return 75


if __name__ == "__main__":
    sys.exit(main())
