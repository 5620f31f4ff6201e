"""A shutdown() answered ENOTCONN because the connection had finished closing is timing, not a
fault (`baseline.run.diff.PEER_GONE_TIMING`), recorded for real.

`nc -N` shuts its write side at stdin's end and its read side when the peer's EOF arrives; the
second is ENOTCONN when the kernel finished the close in between (strace -f: in 40 of 40 runs of
real set 61's nc-through-a-proxy case under strace; without it, now and then -- CI's stop run of
round forty-four named it between two good runs). Here a client does the same, and the server
either holds its end open for a moment (the read-side shutdown succeeds) or closes at once and
the close is over before the client shuts its read side (ENOTCONN): the client is the same, only
the peer's timing differs. That run must be quiet against the others; a connection refused in
the same program must still be named.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
from scenarios.harness import record_run

from baseline.run.diff import diff_traces

CLIENT = """\
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /data\\n")
s.shutdown(socket.SHUT_WR)
reply = b""
while len(reply) < 6:
    chunk = s.recv(64)
    if not chunk:
        break
    reply += chunk
time.sleep(0.05)  # the reply's work, before the read side is shut
try:
    s.shutdown(socket.SHUT_RD)
except OSError:  # the connection is over either way (nc and socketserver say nothing either)
    pass
s.close()
sys.exit(0 if reply == b"ready\\n" else 1)
"""


def _server(hold: float) -> tuple[socket.socket, threading.Thread]:
    """Serve one request: read to the client's EOF, answer, hold the connection `hold` s, close."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # the kernel assigns the port
    listener.listen(4)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while conn.recv(64):
                pass
            conn.sendall(b"ready\n")
            time.sleep(hold)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def _run(recorder, out: Path, late: bool) -> Path:
    """One client run; `late`: the server closes at once, so the close is over by the time the
    client shuts its read side (otherwise the server holds its end 0.5 s, well past that)."""
    listener, thread = _server(0.0 if late else 0.5)
    try:
        argv = ["/usr/bin/python3", "-S", "-c", CLIENT, str(listener.getsockname()[1])]
        return record_run(recorder, argv, out, "good")
    finally:
        thread.join(5)
        listener.close()


def _shutdown_errnos(path: Path) -> list[str | None]:
    table = pq.read_table(path, columns=["probe", "errno"]).to_pylist()
    return [row["errno"] for row in table if row["probe"] == "shutdown"]


def test_a_read_side_shutdown_after_the_close_finished_is_quiet(recorder, tmp_path: Path):
    goods = [_run(recorder, tmp_path / f"good{i}.parquet", late=False) for i in range(2)]
    late = _run(recorder, tmp_path / "late.parquet", late=True)
    # the situation happened for real: the early runs' two shutdowns succeed, the late run's
    # read-side one is ENOTCONN
    assert all(_shutdown_errnos(g) == [None, None] for g in goods)
    assert _shutdown_errnos(late) == [None, "ENOTCONN"]
    report = diff_traces(goods, late)
    assert report.bifurcation is None, report.render_text()


def test_a_refused_connection_is_still_named(recorder, tmp_path: Path):
    goods = [_run(recorder, tmp_path / f"good{i}.parquet", late=False) for i in range(2)]
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, nobody listening: connect is refused
    port = dead.getsockname()[1]
    try:
        bad = record_run(recorder, ["/usr/bin/python3", "-S", "-c", CLIENT, str(port)],
                         tmp_path / "bad.parquet", "bad")
    finally:
        dead.close()
    report = diff_traces(goods, bad)
    b = report.bifurcation or {}
    assert (b.get("probe"), b.get("errno"), b.get("path")) == (
        "connect", "ECONNREFUSED", f"inet:127.0.0.1:{port}"), report.render_text()
