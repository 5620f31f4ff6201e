"""A sixty-seventh set of real programs with one real fault each: **connection teardown on
loopback** -- clients whose good runs end their connections in timing-dependent ways (the server
closing first or waiting for the client's close, a half-close met by a FIN or by a reset after
the whole reply, a keep-alive connection reused or a second one opened), and teardowns that ARE
faults.

One loopback server (python3, outside the recording, started by each run's setup with that run's
behaviour, readiness polled, stopped by the teardown) answers every case with the same reply (an
HTTP/1.1 200 with a 1280-byte body). Its behaviours (``SERVER_PY``'s modes):

- ``close``: read the request head, answer, close at once (the server closes first);
- ``wait``: answer, then read until the client's EOF, then close (the client closes first);
- ``eof_first``: read until the client's half-close, answer, close (FIN);
- ``eof_rst``: as eof_first but close with SO_LINGER 0 (a RST after the whole reply);
- ``keepalive``: answer every request on the connection (Connection: keep-alive) until EOF;
- ``upload``: answer ``100 Continue``, read the body, answer;
- faults: ``cut`` (a third of the body, then a RST), ``silent`` (read the request, close without
  answering), ``abort_on_eof`` (the client's half-close read as an abort: a RST, no answer),
  ``gone_after_continue`` (100 Continue, then close: the body meets a closed peer).

Fault cases (``REAL_SIXTYSEVENTH``): three good runs taking the good behaviours in turn
(``RunTurns``), the bad run its fault. Each expectation is what ``strace -f`` shows the bad run
doing (netcat-openbsd 1.219, socat 1.7.4.4, perl 5.36, python 3.11, Linux 6.x):

- ``nc -N`` (half-closes at stdin's EOF) against a server that takes the half-close for an abort:
  shutdown(SHUT_WR) = 0, then poll returns POLLIN|POLLERR|POLLHUP, nc closes the socket and reads
  from fd -1: ``read(-1, ...) = -1 EBADF``; nothing written, exit 0 (good runs: poll POLLIN|POLLHUP,
  read 1340 bytes, read 0, shutdown(SHUT_RD) ENOTCONN -- in every good run, either server side);
- ``socat - TCP:...,shut-down`` against a server that resets mid-response: read(5) returns 486
  bytes (written to stdout), the next ``read(5) = -1 ECONNRESET``, then shutdown(SHUT_RDWR) ENOTCONN;
- perl IO::Socket upload with ``Expect: 100-continue`` whose server closes after the interim reply
  (corked, so the reply and the FIN arrive together): the first 4096-byte body write succeeds (the
  closed peer answers it with a RST; the socket was in CLOSE_WAIT), the second ``write = -1 EPIPE``,
  killed by SIGPIPE. (Uncorked, the server's close sometimes came after all 16 writes were queued,
  and the run met ``read ECONNRESET`` instead: 1 of 2 runs before the cork.)
- python3 asyncio ``open_connection`` with the job's conf naming a port nothing listens on:
  connect EINPROGRESS, epoll EPOLLOUT|EPOLLERR|EPOLLHUP, ``getsockopt(SO_ERROR) = [ECONNREFUSED]``;
- python3 ``sock.shutdown(SHUT_WR)`` then read to EOF, against a server that reads the request and
  closes without answering: the first ``recvfrom = 0`` where good runs' returned the 1340-byte reply
  (no call fails: the missing data is the fault), then "short reply", exit 1;
- python3 ``sock.shutdown(SHUT_WR)`` then read to EOF, against a server that takes the half-close
  for an abort: the first ``recvfrom = -1 ECONNRESET`` (good runs: recvfrom 1340 bytes), exit 1.

Noise cases (``QUIET_SIXTYSEVENTH``): five good runs each, the server's behaviour alternating, each
run diffed against the other four, and run 1 (the second behaviour) against only runs of the other
behaviours (a teardown the good runs never showed); same output, exit 0 every run. What strace -f
showed varying (4-8 runs each alone, 12 beside two busy loops):

- nc -N: whether the poll after its shutdown(SHUT_WR) reported POLLIN or POLLIN|POLLHUP (the
  server's FIN already in or not), and one poll more or less before the last read; the final
  shutdown(SHUT_RD) ENOTCONN in every run;
- socat shut-down: whether pselect6 reported the socket readable with stdin's EOF (the reply
  before socat's shutdown(SHUT_WR)) or after it; read 0 then shutdown(SHUT_RDWR) ENOTCONN;
- python3 half-close: the read after the whole reply returns 0 (FIN) or fails ECONNRESET (the
  server's SO_LINGER 0 close), caught as the reply's end; shutdown(SHUT_RDWR) ENOTCONN either way;
- perl IO::Socket half-close: the same, sysread 0 or ECONNRESET after the whole reply;
- curl fetching two URLs: one connection reused (keep-alive) or a second connect after the server
  closed the first;
- python3 asyncio streams' ``writer.close(); await writer.wait_closed()``: whether an epoll_wait
  after the reply already reported EPOLLIN (the server's FIN) or nothing (the client closes first).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path

from .files import write_file
from .harness import PY, NoAnomalyCase, RunTurns, Scenario, _port_block, sh_argv

READ = frozenset({"read"})
RECV = frozenset({"recvfrom", "read", "recvmsg", "recv"})
SEND = frozenset({"sendto", "write", "sendmsg", "send"})
SO_ERROR = frozenset({"getsockopt"})

SERVER_PORT, WRONG_PORT = _port_block(2)  # WRONG_PORT is reserved and never listened on
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
RUNS = 5  # noise cases: each run against the other four
_TURNS = RunTurns()

SERVER_PY = r"""
import socket, struct, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
BODY = b"".join(b"line %03d of the teardown report\n" % i for i in range(40))
def head(n, keep=False):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n" % (
        n, b"keep-alive" if keep else b"close")
def rst(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
def read_head(c, buf=b""):
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None, buf
        buf += d
    return buf.split(b"\r\n\r\n", 1)
def to_eof(c):
    try:
        while c.recv(65536):
            pass
    except OSError:
        pass
def handle(c):
    try:
        if mode in ("eof_first", "eof_rst", "abort_on_eof"):
            to_eof(c)
            if mode == "abort_on_eof":
                return rst(c)
            c.sendall(head(len(BODY)) + BODY)
            return rst(c) if mode == "eof_rst" else c.close()
        if mode == "keepalive":
            buf = b""
            while True:
                h, buf = read_head(c, buf)
                if h is None:
                    return c.close()
                c.sendall(head(len(BODY), True) + BODY)
        h, rest = read_head(c)
        if h is None:  # a readiness probe
            return c.close()
        if mode == "silent":
            return c.close()
        if mode in ("upload", "gone_after_continue"):
            if mode == "gone_after_continue":  # corked: the interim reply and the FIN go out together
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                return c.close()
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            n = int(h.split(b"Content-Length: ")[1].split(b"\r\n")[0]) - len(rest)
            while n > 0:
                d = c.recv(65536)
                if not d:
                    break
                n -= len(d)
            c.sendall(head(len(BODY)) + BODY)
            return c.close()
        if mode == "cut":
            c.sendall(head(len(BODY)) + BODY[: len(BODY) // 3])
            return rst(c)
        c.sendall(head(len(BODY)) + BODY)
        if mode == "wait":
            to_eof(c)
        c.close()
    except OSError:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""

_SERVERS: list[subprocess.Popen] = []


def stop_servers(_base: Path | None = None) -> None:
    while _SERVERS:
        proc = _SERVERS.pop()
        with contextlib.suppress(Exception):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _ready(proc: subprocess.Popen) -> None:
    """Poll until the server accepts a connection, or fail saying why."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the t67 server on {SERVER_PORT} exited {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", SERVER_PORT), timeout=2):
            return
        time.sleep(0.02)
    raise RuntimeError(f"the t67 server on {SERVER_PORT} not ready in 30 s")


def serve(mode: str) -> None:
    """(Re)start the server with `mode` for the next run."""
    stop_servers()
    proc = subprocess.Popen(["/usr/bin/python3", "-S", "-c", SERVER_PY, mode, str(SERVER_PORT)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV, start_new_session=True)
    _SERVERS.append(proc)
    _ready(proc)


REQUEST = "GET /report HTTP/1.0\r\nHost: t67\r\n\r\n"


def _request(base: Path) -> None:
    write_file(base / "req", REQUEST)


# --- the clients ------------------------------------------------------------------------------------------------------
NC_SH = f'nc -N 127.0.0.1 {SERVER_PORT} < "$1/req" > "$1/out"'
SOCAT_SH = f'socat -t 5 - TCP:127.0.0.1:{SERVER_PORT},shut-down < "$1/req" > "$1/out"'
CURL_SH = (f'curl -sS --http1.1 -o "$1/a.out" http://127.0.0.1:{SERVER_PORT}/a '
           f'-o "$1/b.out" http://127.0.0.1:{SERVER_PORT}/b')

PERL_PL = r"""
use strict; use IO::Socket::INET;
my ($port, $out) = @ARGV;
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp")
    or die "connect: $!\n";
print $s "GET /report HTTP/1.0\r\nHost: t67\r\n\r\n";
shutdown($s, 1);
sub whole { my ($h, $b) = split /\r\n\r\n/, $_[0], 2; my ($l) = ($h // "") =~ /Content-Length: (\d+)/;
            return defined $l && defined $b && length($b) == $l; }
my $data = ""; my $n;
while (($n = sysread($s, my $buf, 65536))) { $data .= $buf; }
die "read: $!\n" unless defined $n || ($!{ECONNRESET} && whole($data));  # a reset after the whole reply
close $s;
die "short reply\n" unless whole($data);
open my $fh, ">", $out or die "$out: $!\n"; print $fh ((split /\r\n\r\n/, $data, 2)[1]); close $fh;
"""

HALFCLOSE_PY = r"""
import socket, sys
port, out = int(sys.argv[1]), sys.argv[2]
def whole(data):
    head, _, body = data.partition(b"\r\n\r\n")
    return b"Content-Length: " in head and len(body) == int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /report HTTP/1.0\r\nHost: t67\r\n\r\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    try:
        d = s.recv(65536)
    except ConnectionResetError:
        if whole(data):
            break  # the server reset after sending everything: the reply is whole
        raise
    if not d:
        break
    data += d
try:
    s.shutdown(socket.SHUT_RDWR)
except OSError:
    pass
s.close()
if not whole(data):
    sys.exit("short reply")
open(out, "wb").write(data.partition(b"\r\n\r\n")[2])
"""

ASYNCIO_PY = r"""
import asyncio, sys
async def main(conf, out):
    port = int(open(conf).read().split("=")[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /report HTTP/1.1\r\nHost: t67\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    body = await reader.readexactly(int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]))
    writer.close()
    await writer.wait_closed()
    open(out, "wb").write(body)
asyncio.run(main(*sys.argv[1:]))
"""

UPLOAD_PL = r"""
use strict; use IO::Socket::INET;
my ($port, $out) = @ARGV;
my $chunk = "x" x 4096;
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp")
    or die "connect: $!\n";
syswrite($s, "PUT /upload HTTP/1.1\r\nHost: t67\r\nExpect: 100-continue\r\nContent-Length: "
             . (16 * length $chunk) . "\r\n\r\n") or die "write: $!\n";
my $interim = "";
while ($interim !~ /\r\n\r\n/) { sysread($s, my $c, 1) or die "no interim reply\n"; $interim .= $c; }
for (1 .. 16) { defined syswrite($s, $chunk) or die "write: $!\n"; }
my $data = ""; my $n;
while (($n = sysread($s, my $buf, 65536))) { $data .= $buf; }
close $s;
open my $fh, ">", $out or die "$out: $!\n"; print $fh ((split /\r\n\r\n/, $data, 2)[1]); close $fh;
"""


def _perl(b: Path) -> list[str]:
    return ["/usr/bin/perl", "-e", PERL_PL, str(SERVER_PORT), f"{b}/out"]


def _halfclose(b: Path) -> list[str]:
    return [*PY, "-c", HALFCLOSE_PY, str(SERVER_PORT), f"{b}/out"]


def _asyncio(b: Path) -> list[str]:
    return [*PY, "-c", ASYNCIO_PY, f"{b}/job.conf", f"{b}/out"]


def _upload(b: Path) -> list[str]:
    return ["/usr/bin/perl", "-e", UPLOAD_PL, str(SERVER_PORT), f"{b}/out"]


def _fault_setup(goods: list[str], bad_mode: str, *, conf: bool = False):
    def setup(base: Path, bad: bool) -> None:
        _request(base)
        if conf:  # the job's conf: the bad day's names a port nothing listens on
            write_file(base / "job.conf", f"port={WRONG_PORT if bad else SERVER_PORT}\n")
        serve(_TURNS.pick(base, bad, goods, bad_mode))
    return setup


def _peer(b: Path) -> str:
    return f"inet:127.0.0.1:{SERVER_PORT}"


def _sc(name, program, argv, setup, probe, errno, path, description=""):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=stop_servers, description=description)


REAL_SIXTYSEVENTH: list[Scenario] = [
    _sc("t67_nc_halfclose_taken_for_an_abort", "nc -N (a request, half-closed at stdin's EOF)",
        sh_argv(NC_SH), _fault_setup(["close", "wait", "close"], "abort_on_eof"), READ, "EBADF", lambda b: "*",
        description="the server resets on nc's half-close: poll POLLERR, nc closes the socket, read(-1) EBADF, "
                    "nothing written"),
    _sc("t67_socat_server_resets_mid_response", "socat - TCP:...,shut-down (a request)",
        sh_argv(SOCAT_SH), _fault_setup(["wait", "close", "wait"], "cut"), READ, "ECONNRESET", _peer,
        description="a third of the reply, then a RST: read(5) ECONNRESET"),
    _sc("t67_perl_io_socket_upload_peer_gone_before_the_body", "perl IO::Socket::INET upload (Expect: 100-continue)",
        _upload, _fault_setup(["upload", "upload", "upload"], "gone_after_continue"), SEND, "EPIPE", _peer,
        description="the server closes after 100 Continue: the second body write EPIPE, SIGPIPE"),
    _sc("t67_python_asyncio_conf_names_the_wrong_port", "python3 asyncio.open_connection (port from job.conf)",
        _asyncio, _fault_setup(["close", "wait", "close"], "close", conf=True), SO_ERROR, "ECONNREFUSED",
        lambda b: f"inet:127.0.0.1:{WRONG_PORT}",
        description="nothing listens on the conf's port: getsockopt(SO_ERROR) ECONNREFUSED"),
    _sc("t67_python_halfclose_server_closes_without_answering", "python3 socket shutdown(SHUT_WR), read to EOF",
        _halfclose, _fault_setup(["eof_first", "eof_rst", "eof_first"], "silent"), RECV, None, _peer,
        description="the server reads the request and closes: the first recvfrom returns 0, 'short reply', "
                    "exit 1"),
    _sc("t67_python_halfclose_taken_for_an_abort", "python3 socket shutdown(SHUT_WR), read to EOF",
        _halfclose, _fault_setup(["eof_first", "eof_rst", "eof_first"], "abort_on_eof"), RECV, "ECONNRESET", _peer,
        description="the server resets on the half-close without answering: the first recvfrom ECONNRESET, exit 1"),
]


# --- good runs whose teardowns differ -----------------------------------------------------------------------------
# a noise case -> the server's behaviour in its runs, in turn (run i: modes[i % len(modes)])
NOISE_MODES: dict[str, list[str]] = {
    "t67_nc_halfclose_server_or_client_closes_first": ["close", "wait"],
    "t67_socat_shut_down_server_or_client_closes_first": ["wait", "close"],
    "t67_python_halfclose_fin_or_reset_after_the_reply": ["eof_first", "eof_rst"],
    "t67_perl_io_socket_fin_or_reset_after_the_reply": ["close", "eof_rst", "eof_first"],
    "t67_curl_two_urls_connection_reused_or_closed": ["keepalive", "close"],
    "t67_python_asyncio_wait_closed_either_side_first": ["close", "wait"],
}


def run_mode(name: str, run: int) -> str:
    modes = NOISE_MODES[name]
    return modes[run % len(modes)]


def _noise_setup(name: str, *, conf: bool = False):
    def setup(base: Path, run: int) -> None:
        _request(base)
        if conf:
            write_file(base / "job.conf", f"port={SERVER_PORT}\n")
        serve(run_mode(name, run))
    return setup


def _noise(name, argv, description, conf=False):
    return NoAnomalyCase(name, argv, _noise_setup(name, conf=conf), runs=RUNS, description=description)


QUIET_SIXTYSEVENTH: list[NoAnomalyCase] = [
    _noise("t67_nc_halfclose_server_or_client_closes_first", sh_argv(NC_SH),
           "the server closes at once or after nc's half-close; shutdown(SHUT_RD) ENOTCONN"),
    _noise("t67_socat_shut_down_server_or_client_closes_first", sh_argv(SOCAT_SH),
           "the reply before or after socat's shutdown(SHUT_WR); shutdown(SHUT_RDWR) ENOTCONN"),
    _noise("t67_python_halfclose_fin_or_reset_after_the_reply", _halfclose,
           "after the whole reply recvfrom returns 0 or fails ECONNRESET (SO_LINGER 0)"),
    _noise("t67_perl_io_socket_fin_or_reset_after_the_reply", _perl,
           "after the whole reply sysread returns 0 or fails ECONNRESET"),
    _noise("t67_curl_two_urls_connection_reused_or_closed", sh_argv(CURL_SH),
           "keep-alive: one connection for both URLs; Connection: close: a second connect"),
    _noise("t67_python_asyncio_wait_closed_either_side_first", _asyncio,
           "writer.close(); wait_closed() with the server's FIN already in or not", conf=True),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the server is stopped."""
    stop_servers()
