"""A connection refused by one peer, then the thread's next connection going to another peer
(`rules.retries._same_peer`), recorded for real.

A thread pool asking five backends, one of them down: the worker refused fails fast, is idle
when the fifth task comes, and takes it -- where the pool usually starts a fifth worker. Its
refused connect and its next, successful one are at one call site (ports are masked: the
kernel assigns them anew each run) with a wait between them, the shape of a retry loop that
got through; but a retry goes to the same peer, and this one never got through to the backend
that is down (real_twentysecond's nd_pool_third_backend_refused, named at the error message's
write instead, 1 in ~30 runs under load). Here one thread asks two backends in turn.
"""

from __future__ import annotations

import socket
from pathlib import Path

from scenarios.harness import record_run

from baseline.run.diff import diff_traces

PROGRAM = """\
import socket, sys, time
failed = 0
for port in sys.argv[1:]:
    time.sleep(0.01)  # the work before each ask
    try:
        with socket.create_connection(("127.0.0.1", int(port))) as s:
            s.sendall(b"shard\\n")
    except OSError as e:
        print(f"client: {e}", file=sys.stderr)
        failed += 1
sys.exit(1 if failed else 0)
"""


def _backend(listening: bool) -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # the kernel assigns the port
    if listening:  # a crashed backend's port stays bound, but nobody listens there
        s.listen(16)
    return s


def test_a_refused_peer_then_another_peer_is_no_retry(recorder, tmp_path: Path):
    up, also_up, down = _backend(True), _backend(True), _backend(False)
    down_port = down.getsockname()[1]
    try:
        argv = ["/usr/bin/python3", "-S", "-c", PROGRAM]
        goods = [record_run(recorder, [*argv, str(up.getsockname()[1]), str(also_up.getsockname()[1])],
                            tmp_path / f"good{i}.parquet", "good") for i in range(2)]
        bad = record_run(recorder, [*argv, str(down_port), str(also_up.getsockname()[1])],
                         tmp_path / "bad.parquet", "good")
    finally:
        for s in (up, also_up, down):
            s.close()
    report = diff_traces(goods, bad)
    b = report.bifurcation or {}
    assert (b.get("probe"), b.get("errno"), b.get("path")) == (
        "connect", "ECONNREFUSED", f"inet:127.0.0.1:{down_port}"), report.render_text()
