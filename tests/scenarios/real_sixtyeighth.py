"""A sixty-eighth set of real programs with one real fault each: **answers that come back empty**
(docs/diff-json.md's ``empty_answer``) over every kind of channel -- clients whose peer or source
gives them nothing where the good runs got data, over TCP on loopback, over a unix socket, over a
pipe from a producer that printed nothing, and from an empty file -- and good runs where an empty
first read is normal (by timing or by design), which must stay quiet.

Two loopback servers (python3, outside the recording, started by each run's setup with that run's
behaviour, readiness polled, stopped by the teardown) answer the network cases: a TCP one
(``TCP_SERVER_PY``: ``answer`` reads the request head, answers an HTTP/1.1 200 with a 1200-byte
body and closes; ``silent`` reads the request head and closes without answering; ``keepalive``
answers every request on the connection; ``ka_close`` answers with ``Connection: keep-alive``,
then closes the connection gracefully -- shutdown(SHUT_WR), reading whatever comes until the
client's EOF -- so a client reusing it meets a peer gone) and a unix one (``UNIX_SERVER_PY``:
``answer`` reads a request line and answers four lines; ``silent`` reads the line and the
client's EOF, and closes without answering).

Fault cases (``REAL_SIXTYEIGHTH``): three good runs and the bad run. Each expectation is what
``strace -f`` shows the bad run doing (netcat-openbsd 1.219, socat 1.7.4.4, coreutils 9.1,
mawk 1.3.4, python 3.11, curl 7.88.1, Linux 6.x):

- ``nc 127.0.0.1 PORT < req`` against a server that reads the request and closes: poll reports
  the socket readable and ``read(3, "", 16384) = 0`` is nc's first read of it (the good runs':
  the 1260-byte reply); shutdown(SHUT_RD), nothing written to stdout, exit 0;
- ``socat - UNIX-CONNECT:run/app.sock`` against a unix server that reads the request line and
  the client's EOF and closes: socat writes the line, reads stdin's EOF, shutdown(SHUT_WR),
  pselect6, and ``read(5, "", 8192) = 0`` is its first read of the socket (good runs: 53 bytes,
  written to stdout, then read 0); shutdown(SHUT_RDWR), exit 0, nothing written;
- python3 ``urllib.request.urlopen`` against a server that reads the request and closes ("Empty
  reply from server"): the first ``recvfrom(3, ...) = 0`` where good runs' returned the reply;
  http.client raises RemoteDisconnected, traceback, exit 1;
- ``producer | awk`` where the producer (python3 listing the hosts marked up in inventory.json)
  printed nothing -- every host is down in the bad run's inventory: awk's first
  ``read(0, "", ...) = 0`` (the pipe; good runs: the host names), then awk writes an empty
  upstreams.conf, exit 0 (the producer's own calls are the good runs' but its one write);
- ``md5sum -c MANIFEST`` with an empty manifest: ``read(3, "", ...) = 0`` is the manifest's
  first read (good runs: three checksum lines), then "no properly formatted checksum lines
  found", exit 1;
- python3 ``json.load`` of an empty job.json: ``read(3, "", ...) = 0`` after fstat says size 0
  (good runs: the config), then JSONDecodeError, exit 1.

Noise cases (``QUIET_SIXTYEIGHTH``): five good runs each, the behaviour alternating, each run
diffed against the other four, and run 1 (the second behaviour) against only runs of the other
behaviour (an empty read the good runs never showed); same output, exit 0 every run. What strace
-f showed varying (5 runs each alone, 5 beside two busy loops):

- python3 http.client reusing its connection (a pool of one): with ``keepalive`` the three
  requests go over one connection; with ``ka_close`` the reused connection's first
  ``recvfrom(3, "", 8192) = 0`` (the server closed it while idle), RemoteDisconnected caught, a new
  connect, the request again -- for /b and again for /c: three connects, two empty reads;
- curl fetching three URLs from a server saying keep-alive: one connection, or (``ka_close``)
  curl finding the idle connection dead before reusing it (its check's poll reports POLLIN and
  ``recvfrom(5, "", 1, MSG_PEEK) = 0``) and connecting again: three connects, two empty peeks,
  in every run traced (5 alone, 5 beside two busy loops). (Closed at once, with no shutdown and
  drain, the server's close met curl's next request unread and answered it with a RST: curl's
  ``recvfrom = -1 ECONNRESET``, retried; 2 of 4 module runs named that reset -- another errno than
  this set's theme, so the server closes gracefully);
- a python3 TCP server (the recorded job) whose client health-checks first (connects, closes,
  then sends its request on a second connection) or sends at once: the server's first
  ``recvfrom = 0`` on the health check's connection, close, the next accept;
- a python3 unix-socket server taking three connections, the second of which the client
  sometimes closes without sending (a cancelled request): that connection's first
  ``recvfrom = 0``, close, the next accept;
- ``producer | consumer`` with the consumer's stdin non-blocking: ``read(0) = -1 EAGAIN`` then
  select, then the data (the producer sleeping 0.3 s first: two EAGAIN in every run) -- or, with
  no delay, 0 or 1 EAGAIN as the two python3 start-ups race;
- ``tail -f --pid`` of a log its service writes: the tail attached before the service wrote
  (``read(3, "", 8192) = 0``, then inotify waits, kill(pid, 0) = 0 every 50 ms, the lines one by
  one, kill ESRCH) or after it finished (the five lines at once, read 0, kill ESRCH).

Seen while writing the set, not a case (it depends on timing): when the unix server closes right
after reading the line (no wait for socat's EOF), under load the server's close is sometimes in
before socat's pselect6 after its write (pselect6 = 3: stdin's EOF and the socket both readable),
and socat's sequence is read(req) = 0, read(app.sock) = 0, shutdown, shutdown -- the first read
of the socket empty where the good runs' had 53 bytes -- and the diff reported no anomaly (3 of 10
recordings beside two busy loops, 1 of 4 module runs alone); with pselect6's second wake between
them (the close after the shutdown), the same empty read is named. The ``silent`` server waits for
the EOF so the case is not a coin toss.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, RunTurns, Scenario, _port_block, sh_argv

READ = frozenset({"read"})
RECV = frozenset({"recvfrom", "read", "recvmsg", "recv"})

TCP_PORT, HC_PORT = _port_block(2)  # HC_PORT: the recorded server of the health-check case
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
RUNS = 5  # noise cases: each run against the other four
_TURNS = RunTurns()

TCP_SERVER_PY = r"""
import socket, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
BODY = b"".join(b"row %03d of the inventory\n" % i for i in range(48))
def head(keep):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n" % (
        len(BODY), b"keep-alive" if keep else b"close")
def handle(c):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            _, buf = buf.split(b"\r\n\r\n", 1)
            if mode == "silent":
                return
            c.sendall(head(mode in ("keepalive", "ka_close")) + BODY)
            if mode == "ka_close":  # close the idle connection gracefully: a FIN, and whatever comes read
                c.shutdown(socket.SHUT_WR)  # (a close with a request unread would answer it with a RST)
                while c.recv(65536):
                    pass
            if mode != "keepalive":
                return
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""

UNIX_SERVER_PY = r"""
import os, socket, sys, threading
mode, path = sys.argv[1], sys.argv[2]
def handle(c):
    try:
        line = b""
        while b"\n" not in line:
            d = c.recv(4096)
            if not d:
                break
            line += d
        if line and mode == "answer":
            c.sendall(b"status ok\nqueue 3 jobs\nworkers 2 busy\nuptime 36000 s\n")
        elif line:  # silent: the request, then the client's EOF, and no answer
            while c.recv(4096):
                pass
    except OSError:
        pass
    c.close()
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""

_PROCS: list[subprocess.Popen] = []


def stop_servers(_base: Path | None = None) -> None:
    """Stop every helper a setup started (servers, clients), each by its own process group."""
    while _PROCS:
        proc = _PROCS.pop()
        with contextlib.suppress(Exception):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(Exception):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _spawn(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV, start_new_session=True)
    _PROCS.append(proc)
    return proc


def _ready(proc: subprocess.Popen, family: int, address, what: str) -> None:
    """Poll until the server accepts a connection, or fail saying why."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the t68 {what} server exited {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.socket(family) as s:
            s.settimeout(2)
            s.connect(address)
            return
        time.sleep(0.02)
    raise RuntimeError(f"the t68 {what} server not ready in 30 s")


def serve_tcp(mode: str) -> None:
    """(Re)start the TCP server with `mode` for the next run."""
    stop_servers()
    proc = _spawn(["/usr/bin/python3", "-S", "-c", TCP_SERVER_PY, mode, str(TCP_PORT)])
    _ready(proc, socket.AF_INET, ("127.0.0.1", TCP_PORT), "tcp")


def serve_unix(mode: str, path: Path) -> None:
    """(Re)start the unix server at `path` with `mode` for the next run."""
    stop_servers()
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = _spawn(["/usr/bin/python3", "-S", "-c", UNIX_SERVER_PY, mode, str(path)])
    _ready(proc, socket.AF_UNIX, str(path), "unix")


REQUEST = "GET /inventory HTTP/1.0\r\nHost: t68\r\n\r\n"


# --- the fault cases' clients -----------------------------------------------------------------------------------------
NC_SH = f'nc 127.0.0.1 {TCP_PORT} < "$1/req" > "$1/out"'
SOCAT_SH = 'socat -t 5 - "UNIX-CONNECT:$1/run/app.sock" < "$1/req" > "$1/out"'
URLLIB_PY = r"""
import sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/inventory", timeout=20) as r:
    body = r.read()
open(out, "wb").write(body)
"""
PRODUCER_PY = r"""
import json, sys
for h in json.load(open(sys.argv[1])):
    if h["up"]:
        print(h["name"])
"""
AWK_SH = ("/usr/bin/python3 -S -c \"$2\" \"$1/inventory.json\" "
          "| awk '{ print \"server \" $1 \":8080;\" }' > \"$1/upstreams.conf\"")
MD5_SH = 'cd "$1/release" && md5sum -c "$1/release/MANIFEST" > "$1/check.log"'
JSON_PY = r"""
import json, sys
conf = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write("%s:%d\n" % (conf["host"], conf["port"]))
"""


def _urllib(b: Path) -> list[str]:
    return [*PY, "-c", URLLIB_PY, str(TCP_PORT), f"{b}/out"]


def _json(b: Path) -> list[str]:
    return [*PY, "-c", JSON_PY, f"{b}/job.json", f"{b}/endpoint"]


def _tcp_setup(goods: list[str], bad_mode: str):
    def setup(base: Path, bad: bool) -> None:
        write_file(base / "req", REQUEST)
        serve_tcp(_TURNS.pick(base, bad, goods, bad_mode))
    return setup


def _unix_setup(base: Path, bad: bool) -> None:
    write_file(base / "req", "STATUS\n")
    serve_unix("silent" if bad else "answer", base / "run" / "app.sock")


HOSTS = ["app-a", "app-b", "app-c", "app-d"]


def _inventory_setup(base: Path, bad: bool) -> None:
    i = _TURNS.index(base, bad)
    hosts = [{"name": h, "up": (not bad) and (k + max(i, 0)) % 4 != 3} for k, h in enumerate(HOSTS)]
    write_file(base / "inventory.json", json.dumps(hosts, indent=1) + "\n")


def _manifest_setup(base: Path, bad: bool) -> None:
    import hashlib

    lines = []
    for name in ("app.bin", "lib.so", "data.pak"):
        data = (name * 300).encode()
        write_file(base / "release" / name, data)
        lines.append(f"{hashlib.md5(data).hexdigest()}  {name}\n")
    write_file(base / "release" / "MANIFEST", "" if bad else "".join(lines))


def _json_setup(base: Path, bad: bool) -> None:
    write_file(base / "job.json", "" if bad else json.dumps({"host": "db-1", "port": 5432, "pool": 8}) + "\n")


def _peer(_b: Path) -> str:
    return f"inet:127.0.0.1:{TCP_PORT}"


def _sc(name, program, argv, setup, probe, path, description=""):
    return Scenario(name, program, argv, setup, probe, None, path, teardown=stop_servers, description=description)


REAL_SIXTYEIGHTH: list[Scenario] = [
    _sc("t68_nc_server_reads_the_request_and_closes", "nc 127.0.0.1 PORT (a request on stdin)",
        sh_argv(NC_SH), _tcp_setup(["answer"], "silent"), READ, _peer,
        description="the server closes without answering: nc's first read of the socket returns 0"),
    _sc("t68_socat_unix_socket_server_closes_without_answering", "socat - UNIX-CONNECT:run/app.sock",
        sh_argv(SOCAT_SH), _unix_setup, READ, lambda b: f"unix:{b}/run/app.sock",
        description="the unix server reads the line and closes: socat's first read of the socket returns 0"),
    _sc("t68_python_urllib_empty_reply_from_server", "python3 urllib.request.urlopen",
        _urllib, _tcp_setup(["answer"], "silent"), RECV, _peer,
        description="the first recvfrom returns 0: RemoteDisconnected, exit 1"),
    _sc("t68_awk_producer_printed_nothing", "awk (reading a python3 producer's pipe)",
        sh_argv(AWK_SH, PRODUCER_PY), _inventory_setup, READ, lambda b: "pipe:*",
        description="every host is down: the producer prints nothing, awk's first read(0) returns 0"),
    _sc("t68_md5sum_check_of_an_empty_manifest", "md5sum -c MANIFEST",
        sh_argv(MD5_SH), _manifest_setup, READ, lambda b: f"{b}/release/MANIFEST",
        description="the manifest is empty: its first read returns 0, 'no properly formatted checksum lines'"),
    _sc("t68_python_json_load_of_an_empty_config", "python3 json.load(job.json)",
        _json, _json_setup, READ, lambda b: f"{b}/job.json",
        description="job.json is empty: its first read returns 0, JSONDecodeError, exit 1"),
]


# --- good runs where an empty first read is normal ------------------------------------------------------------------
POOL_PY = r"""
import http.client, sys
port, out = int(sys.argv[1]), sys.argv[2]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
bodies = []
for path in ("/a", "/b", "/c"):
    for attempt in (1, 2):
        try:
            conn.request("GET", path)
            bodies.append(conn.getresponse().read())
            break
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            conn.close()  # the pooled idle connection was closed by the server: reconnect once
            if attempt == 2:
                raise
open(out, "wb").write(b"".join(bodies))
"""
CURL_SH = (f'curl -sS --http1.1 -o "$1/a.out" http://127.0.0.1:{TCP_PORT}/a -o "$1/b.out" '
           f'http://127.0.0.1:{TCP_PORT}/b -o "$1/c.out" http://127.0.0.1:{TCP_PORT}/c')

HC_SERVER_PY = r"""
import socket, sys
port, log = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(8)
while True:
    c, _ = s.accept()
    data = c.recv(4096)
    if not data:  # a health check: connected and closed
        c.close()
        continue
    c.sendall(b"pong " + data)
    c.close()
    break
open(log, "w").write("served %s\n" % data.decode().strip())
"""
HC_CLIENT_PY = r"""
import socket, sys, time
port, probe = int(sys.argv[1]), sys.argv[2] == "probe"
deadline = time.monotonic() + 30
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.01)
if probe:  # a health check first: connect, close, then the real request
    s.close()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"ping 42\n")
s.recv(4096)
s.close()
"""

UNIX_TALLY_PY = r"""
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
got = []
for _ in range(3):
    c, _ = s.accept()
    data = b""
    while not data.endswith(b"\n"):
        d = c.recv(4096)
        if not d:
            break  # the client closed without sending (a cancelled request)
        data += d
    if data:
        got.append(data.decode().strip())
        c.sendall(b"ok\n")
    c.close()
os.unlink(path)
open(log, "w").write("".join(sorted(set(g + "\n" for g in got))))
"""
UNIX_CLIENT_PY = r"""
import os, socket, sys, time
path, cancel = sys.argv[1], sys.argv[2] == "cancel"
deadline = time.monotonic() + 30
while not os.path.exists(path):
    if time.monotonic() > deadline:
        sys.exit("no server")
    time.sleep(0.01)
def connect():
    while True:  # the path is bound before the server listens
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            return s
        except ConnectionRefusedError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
for i in range(3):
    s = connect()
    if cancel and i == 1:
        s.close()  # cancelled before sending
        continue
    s.sendall(b"job %d\n" % min(i, 1))
    s.recv(16)
    s.close()
"""

PRODUCER_DELAY_PY = r"""
import sys, time
time.sleep(float(open(sys.argv[1]).read()))
sys.stdout.write("".join("metric_%02d %d\n" % (i, i * 7) for i in range(30)))
"""
CONSUMER_NB_PY = r"""
import os, select, sys
os.set_blocking(0, False)
data = b""
while True:
    try:
        d = os.read(0, 65536)
    except BlockingIOError:  # the producer has not written yet
        select.select([0], [], [], 20)
        continue
    if not d:
        break
    data += d
sys.stdout.write("%d lines\n" % data.count(b"\n"))
"""
NB_SH = '/usr/bin/python3 -S -c "$2" "$1/delay" | /usr/bin/python3 -S -c "$3" > "$1/out"'

# a job step: its service (a subshell of sh builtins but the sleep) writes the log, and a tail attached to it
# follows the log until the service exits; "$1/delay" holds the two sleeps: the service's before it writes,
# the tail's before it attaches (0.4 0: the log still empty when tail reads it; 0 0.3: the lines already there)
TAIL_SH = ('read w t < "$1/delay"; { sleep "$w"; i=0; while [ $i -lt 5 ]; do '
           'printf "event %d: job step done\\n" $i >> "$1/app.log"; i=$((i + 1)); done; } & '
           'sleep "$t"; tail -s 0.05 --pid=$! -n +1 -f "$1/app.log" > "$1/out"')

# a noise case -> the behaviour of its runs, in turn (run i: modes[i % len(modes)])
NOISE_MODES: dict[str, list[str]] = {
    "t68_python_http_pool_reconnects_after_idle_close": ["keepalive", "ka_close"],
    "t68_curl_three_urls_idle_connection_closed": ["keepalive", "ka_close"],
    "t68_python_server_client_health_checks_first": ["direct", "probe"],
    "t68_python_unix_server_client_cancels_a_request": ["all", "cancel"],
    "t68_python_nonblocking_read_races_the_producer": ["0", "0.3"],
    "t68_tail_follows_a_log_still_empty": ["0 0.3", "0.4 0"],
}


def run_mode(name: str, run: int) -> str:
    modes = NOISE_MODES[name]
    return modes[run % len(modes)]


def _tcp_noise(name: str):
    def setup(base: Path, run: int) -> None:
        serve_tcp(run_mode(name, run))
    return setup


def _hc_setup(base: Path, run: int) -> None:
    stop_servers()
    _spawn(["/usr/bin/python3", "-S", "-c", HC_CLIENT_PY, str(HC_PORT),
            run_mode("t68_python_server_client_health_checks_first", run)])


def _unix_noise_setup(base: Path, run: int) -> None:
    stop_servers()
    (base / "run").mkdir()
    _spawn(["/usr/bin/python3", "-S", "-c", UNIX_CLIENT_PY, f"{base}/run/tally.sock",
            run_mode("t68_python_unix_server_client_cancels_a_request", run)])


def _delay_setup(name: str, *, log: bool = False):
    def setup(base: Path, run: int) -> None:
        write_file(base / "delay", run_mode(name, run) + "\n")
        if log:
            write_file(base / "app.log", "")
    return setup


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SIXTYEIGHTH: list[NoAnomalyCase] = [
    _noise("t68_python_http_pool_reconnects_after_idle_close",
           lambda b: [*PY, "-c", POOL_PY, str(TCP_PORT), f"{b}/out"],
           _tcp_noise("t68_python_http_pool_reconnects_after_idle_close"),
           "the reused connection's recvfrom returns 0 (closed while idle), reconnect, the request again"),
    _noise("t68_curl_three_urls_idle_connection_closed", sh_argv(CURL_SH),
           _tcp_noise("t68_curl_three_urls_idle_connection_closed"),
           "curl finds the kept-alive connection closed (before or after sending) and connects again"),
    _noise("t68_python_server_client_health_checks_first",
           lambda b: [*PY, "-c", HC_SERVER_PY, str(HC_PORT), f"{b}/served"], _hc_setup,
           "the server's first recvfrom on the health check's connection returns 0, the next accept"),
    _noise("t68_python_unix_server_client_cancels_a_request",
           lambda b: [*PY, "-c", UNIX_TALLY_PY, f"{b}/run/tally.sock", f"{b}/tally"], _unix_noise_setup,
           "a connection closed without sending: its first recvfrom returns 0, the next accept"),
    _noise("t68_python_nonblocking_read_races_the_producer", sh_argv(NB_SH, PRODUCER_DELAY_PY, CONSUMER_NB_PY),
           _delay_setup("t68_python_nonblocking_read_races_the_producer"),
           "read(0) EAGAIN then select then the data, or the data at once"),
    _noise("t68_tail_follows_a_log_still_empty", sh_argv(TAIL_SH),
           _delay_setup("t68_tail_follows_a_log_still_empty", log=True),
           "tail's first read of the log returns 0 (still empty) or has the lines"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the servers and clients are stopped."""
    stop_servers()
