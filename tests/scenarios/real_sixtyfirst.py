"""A sixty-first set of real programs with one real fault each: **network clients misled by their
environment, on loopback** -- a proxy variable pointing at a dead port (the refusal is the proxy's,
not the target's), no_proxy missing, a proxy variable pointing at a service that is no proxy, a CA
bundle variable pointing at a symlink loop or a missing file, a TLS server whose certificate the
client's bundle cannot verify:

- ``nc -X connect -x $PROXY`` with the job's proxy.env copied from a host whose proxy listens on
  another port: the non-blocking connect's ``getsockopt(SO_ERROR)`` ECONNREFUSED at the proxy;
- ``rsync rsync://...`` with ``RSYNC_PROXY`` at a dead port: the same getsockopt ECONNREFUSED;
- ``openssl s_client -proxy`` at a dead port: its (blocking) connect ECONNREFUSED;
- python3 urllib with ``http_proxy`` at a dead port and, on the bad day, no ``no_proxy``: the
  request goes to the proxy: its socket has a timeout (non-blocking connect), so getsockopt(SO_ERROR)
  ECONNREFUSED at the proxy (the good runs' no_proxy bypasses it);
- curl with ``CURL_CA_BUNDLE`` a symlink to itself (a botched bundle rotation): openat ELOOP;
- perl HTTP::Tiny with ``http_proxy`` at the site's metrics port (a service that resets what it
  does not understand): ECONNRESET at that port in whichever call meets the RST first -- strace -f
  of 15 runs: the reply's read (7), the request's write (7), the non-blocking connect's
  getsockopt(SO_ERROR) (1);
- python3 urllib over https with ``SSL_CERT_FILE`` at a bundle the rotation removed: openat ENOENT
  (then CERTIFICATE_VERIFY_FAILED);
- wget over https whose server certificate was reissued by another CA, not in wget's
  ``--ca-certificate`` bundle: no call fails. strace -f: the TLS 1.3 handshake completes (GnuTLS
  reads the server's records, sends its Finished and reads a session ticket, as in good runs), wget
  then checks the certificate, looks up its message catalogue (as good runs do later) and
  ``close``s the socket without writing the GET request -- the good runs never close it (they
  write the request, read the reply and exit with it open). That close of the socket is the first
  event of the bad run no good run explains: the expectation is ``close``, no errno.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; the job's environment is a file beside it (proxy.env), the same in every run except
for the bad day's value. Servers (an HTTP CONNECT/forwarding proxy, plain and TLS http.server, a
resetting port, an rsync daemon) run outside the recording, started by a case's setup (readiness
polled) and stopped by its teardown.

Noise cases (``QUIET_SIXTYFIRST``): curl through the proxy to the TLS server, wget over https with
the right bundle, python3 urllib following a redirect, nc through the CONNECT proxy, openssl
s_client through the proxy -- other payloads and sizes, the clients' ephemeral ports, session
tickets and random TLS bytes every run.

Loopback: six ports of this set's own (``harness._port_block``); DEAD_PORT is reserved and never
listened on.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import time
from pathlib import Path

from .files import token, write_file
from .harness import PY, ROOT, NoAnomalyCase, RunTurns, Scenario, _port_block, sh_argv

OPEN = frozenset({"openat", "open"})
CONNECT = frozenset({"connect"})
SO_ERROR = frozenset({"getsockopt"})
# HTTP::Tiny's connect is non-blocking: the proxy port's RST shows in whichever call meets it first
RESET = frozenset({"getsockopt", "write", "sendto", "writev", "read", "recvfrom", "recvmsg", "readv"})
CLOSE = frozenset({"close"})

PROXY_PORT, DEAD_PORT, HTTP_PORT, TLS_PORT, RESET_PORT, RSYNC_PORT = _port_block(6)
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
_TURNS = RunTurns()

# --- the servers (outside the recording) -----------------------------------------------------------------------------
SERVER_PY = r"""
import functools, http.server, socket, socketserver, ssl, struct, sys, threading
from urllib.parse import urlsplit
mode, port = sys.argv[1], int(sys.argv[2])
class TS(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
class Proxy(socketserver.BaseRequestHandler):
    def handle(self):
        data = b''
        while b'\r\n\r\n' not in data:
            d = self.request.recv(65536)
            if not d:
                return
            data += d
        head, rest = data.split(b'\r\n\r\n', 1)
        lines = head.split(b'\r\n')
        meth, target, _ = lines[0].decode().split()
        if meth == 'CONNECT':
            host, p = target.rsplit(':', 1)
            up = socket.create_connection((host, int(p)))
            self.request.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
        else:
            u = urlsplit(target)
            up = socket.create_connection((u.hostname, u.port or 80))
            path = u.path + ('?' + u.query if u.query else '')
            keep = [h for h in lines[1:] if not h.lower().startswith((b'proxy-', b'connection'))]
            up.sendall(f'{meth} {path} HTTP/1.0\r\n'.encode() + b''.join(h + b'\r\n' for h in keep)
                       + b'Connection: close\r\n\r\n')
        if rest:
            up.sendall(rest)
        t = threading.Thread(target=pipe, args=(self.request, up), daemon=True)
        t.start()
        pipe(up, self.request)
        t.join(5)
        up.close()
class Reset(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        self.request.close()
class Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path.startswith('/moved/'):
            self.send_response(302)
            self.send_header('Location', '/' + self.path[len('/moved/'):])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        super().do_GET()
if mode == 'proxy':
    srv = TS(('127.0.0.1', port), Proxy)
elif mode == 'reset':
    srv = TS(('127.0.0.1', port), Reset)
else:
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(Files, directory=sys.argv[3]))
    if mode == 'https':
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
"""

_SERVERS: list[subprocess.Popen] = []


def _stop_servers(_base: Path | None = None) -> None:
    while _SERVERS:
        proc = _SERVERS.pop()
        with contextlib.suppress(Exception):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _ready(port: int, proc: subprocess.Popen, what: str) -> None:
    """Poll until `port` accepts a connection (the server is up), or fail saying why."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} on {port} exited {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.02)
    raise RuntimeError(f"{what} on {port} not ready in 30 s")


def _start(argv: list[str], port: int, what: str) -> None:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV, start_new_session=True)
    _SERVERS.append(proc)
    _ready(port, proc, what)


def _serve(mode: str, port: int, *args: str) -> None:
    _start(["/usr/bin/python3", "-S", "-c", SERVER_PY, mode, str(port), *args], port, f"{mode} server")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, env=ENV)


@functools.cache
def _pki() -> Path:
    """Two CAs and the server's key with a certificate from each (CN localhost, SAN 127.0.0.1):
    made once a session, under the session's root."""
    pki = ROOT / "t61-pki"
    pki.mkdir(parents=True, exist_ok=True)
    for ca in ("ca1", "ca2"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/{ca}.key",
                 "-out", f"{pki}/{ca}.pem", "-days", "30", "-subj", f"/CN=tracebase t61 {ca}")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/srv.key", "-out", f"{pki}/srv.csr",
             "-subj", "/CN=localhost")
    write_file(pki / "ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for ca in ("ca1", "ca2"):
        _openssl("x509", "-req", "-in", f"{pki}/srv.csr", "-CA", f"{pki}/{ca}.pem", "-CAkey", f"{pki}/{ca}.key",
                 "-CAcreateserial", "-out", f"{pki}/srv-{ca}.pem", "-days", "30", "-extfile", f"{pki}/ext")
    return pki


def _www(base: Path, size: int) -> Path:
    write_file(base / "www" / "data.txt", "".join(f"{token(4)} line {i}\n" for i in range(size)))
    write_file(base / "www" / "index.html", "<h1>job</h1>\n")
    return base / "www"


def _https(base: Path, size: int, ca: str = "ca1") -> None:
    pki = _pki()
    _serve("https", TLS_PORT, str(_www(base, size)), f"{pki}/srv-{ca}.pem", f"{pki}/srv.key")


def _http(base: Path, size: int) -> None:
    _serve("http", HTTP_PORT, str(_www(base, size)))


def _proxy() -> None:
    _serve("proxy", PROXY_PORT)


# --- nc -X connect -x $PROXY: the proxy.env from another host ---------------------------------------------------------
NC_SH = ('. "$1/proxy.env"; printf "GET /data.txt HTTP/1.0\\r\\n\\r\\n" | '
         f'nc -N -X connect -x "$PROXY" 127.0.0.1 {HTTP_PORT} > "$1/out.txt"')


def _nc_tree(base: Path, *, size: int, dead: bool = False) -> None:
    _stop_servers()
    _http(base, size)
    _proxy()
    write_file(base / "proxy.env", f"PROXY=127.0.0.1:{DEAD_PORT if dead else PROXY_PORT}\n")


def nc_build(base: Path, bad: bool) -> None:
    _nc_tree(base, size=_TURNS.pick(base, bad, [20, 400, 5], 20), dead=bad)


# --- rsync with RSYNC_PROXY ------------------------------------------------------------------------------------------
RSYNC_SH = ('. "$1/proxy.env"; export RSYNC_PROXY; '
            f'rsync -a rsync://127.0.0.1:{RSYNC_PORT}/pub/ "$1/mirror/"')


def rsync_build(base: Path, bad: bool) -> None:
    _stop_servers()
    n = _TURNS.pick(base, bad, [3, 8, 1], 3)
    for i in range(n):
        write_file(base / "pub" / f"{token(3)}-{i}.dat", token(50 * (i + 1)))
    write_file(base / "rsyncd.conf", f"use chroot = no\nuid = root\ngid = root\n[pub]\npath = {base}/pub\n"
                                     "read only = yes\n")
    _start(["/usr/bin/rsync", "--daemon", "--no-detach", f"--port={RSYNC_PORT}", "--address=127.0.0.1",
            f"--config={base}/rsyncd.conf"], RSYNC_PORT, "rsync daemon")
    _proxy()
    write_file(base / "proxy.env", f"RSYNC_PROXY=127.0.0.1:{DEAD_PORT if bad else PROXY_PORT}\n")


# --- openssl s_client -proxy ------------------------------------------------------------------------------------------
S_CLIENT_SH = ('. "$1/proxy.env"; printf "GET /data.txt HTTP/1.0\\r\\n\\r\\n" | '
               f'openssl s_client -quiet -ign_eof -ignore_unexpected_eof -proxy "$PROXY" -connect 127.0.0.1:{TLS_PORT} '
               '-CAfile "$1/ca.pem" -verify_return_error > "$1/out.txt" 2>/dev/null')


def _s_client_tree(base: Path, *, size: int, dead: bool = False) -> None:
    _stop_servers()
    _https(base, size)
    _proxy()
    write_file(base / "ca.pem", (_pki() / "ca1.pem").read_bytes())
    write_file(base / "proxy.env", f"PROXY=127.0.0.1:{DEAD_PORT if dead else PROXY_PORT}\n")


def s_client_build(base: Path, bad: bool) -> None:
    _s_client_tree(base, size=_TURNS.pick(base, bad, [30, 300, 3], 30), dead=bad)


# --- python3 urllib: http_proxy at a dead port, no_proxy missing on the bad day -----------------------------------------
URLLIB_PY = ("import sys, urllib.request\n"
             "url = open(sys.argv[1] + '/url').read().strip()\n"
             "data = urllib.request.urlopen(url, timeout=20).read()\n"
             "open(sys.argv[1] + '/out.txt', 'wb').write(data)\n")
URLLIB_SH = f'. "$1/proxy.env"; export http_proxy https_proxy no_proxy; exec {PY[0]} -S -c "$2" "$1"'


def urllib_build(base: Path, bad: bool) -> None:
    _stop_servers()
    _http(base, _TURNS.pick(base, bad, [10, 700, 60], 10))
    write_file(base / "url", f"http://127.0.0.1:{HTTP_PORT}/data.txt\n")
    env = f"http_proxy=http://127.0.0.1:{DEAD_PORT}/\nhttps_proxy=http://127.0.0.1:{DEAD_PORT}/\n"
    if not bad:  # the bad day's env file was regenerated without the site's no_proxy line
        env += "no_proxy=127.0.0.1,localhost\n"
    write_file(base / "proxy.env", env)


# --- curl with CURL_CA_BUNDLE a symlink to itself -----------------------------------------------------------------------
CURL_SH = ('. "$1/proxy.env"; export CURL_CA_BUNDLE; '
           f'curl -sS -o "$1/out.txt" https://127.0.0.1:{TLS_PORT}/data.txt')


def _curl_tree(base: Path, *, size: int, loop: bool = False) -> None:
    _stop_servers()
    _https(base, size)
    (base / "pki").mkdir()
    if loop:  # the rotation's `ln -sf bundle.pem bundle.pem` ran in pki/
        (base / "pki" / "bundle.pem").symlink_to("bundle.pem")
    else:
        write_file(base / "pki" / "bundle-2026.pem", (_pki() / "ca1.pem").read_bytes())
        (base / "pki" / "bundle.pem").symlink_to("bundle-2026.pem")
    write_file(base / "proxy.env", f"CURL_CA_BUNDLE={base}/pki/bundle.pem\n")


def curl_build(base: Path, bad: bool) -> None:
    _curl_tree(base, size=_TURNS.pick(base, bad, [40, 4, 900], 40), loop=bad)


# --- perl HTTP::Tiny with http_proxy at a port whose service resets strangers --------------------------------------------
TINY_PL = ('use HTTP::Tiny; my $r = HTTP::Tiny->new(timeout => 20)->get($ARGV[1]); '
           'die "$r->{status} $r->{content}\\n" unless $r->{success}; '
           'open(my $f, ">", "$ARGV[0]/out.txt") or die; print $f $r->{content};')
TINY_SH = '. "$1/proxy.env"; export http_proxy; exec perl -e "$2" "$1" "$(cat "$1/url")"'


def tiny_build(base: Path, bad: bool) -> None:
    _stop_servers()
    _http(base, _TURNS.pick(base, bad, [15, 150, 1500], 15))
    _proxy()
    _serve("reset", RESET_PORT)
    write_file(base / "url", f"http://127.0.0.1:{HTTP_PORT}/data.txt\n")
    # the bad day's http_proxy names the metrics agent's port, not the proxy's
    write_file(base / "proxy.env", f"http_proxy=http://127.0.0.1:{RESET_PORT if bad else PROXY_PORT}/\n")


# --- python3 urllib over https with SSL_CERT_FILE at a removed bundle ---------------------------------------------------
SSLFILE_SH = f'. "$1/proxy.env"; export SSL_CERT_FILE; exec {PY[0]} -S -c "$2" "$1"'


def sslfile_build(base: Path, bad: bool) -> None:
    _stop_servers()
    _https(base, _TURNS.pick(base, bad, [25, 250, 2], 25))
    write_file(base / "url", f"https://127.0.0.1:{TLS_PORT}/data.txt\n")
    if not bad:  # the bad day's rotation removed the bundle and wrote the new one elsewhere
        write_file(base / "pki" / "ca-bundle.pem", (_pki() / "ca1.pem").read_bytes())
    else:
        write_file(base / "pki.new" / "ca-bundle.pem", (_pki() / "ca1.pem").read_bytes())
    write_file(base / "proxy.env", f"SSL_CERT_FILE={base}/pki/ca-bundle.pem\n")


# --- wget over https: the server's certificate reissued by a CA not in the bundle ---------------------------------------
WGET_SH = (f'wget -q -O "$1/out.txt" --ca-certificate="$1/ca.pem" https://127.0.0.1:{TLS_PORT}/data.txt')


def _wget_tree(base: Path, *, size: int, other_ca: bool = False) -> None:
    _stop_servers()
    _https(base, size, ca="ca2" if other_ca else "ca1")
    write_file(base / "ca.pem", (_pki() / "ca1.pem").read_bytes())


def wget_build(base: Path, bad: bool) -> None:
    _wget_tree(base, size=_TURNS.pick(base, bad, [12, 1200, 120], 12), other_ca=bad)


def _teardown(_base: Path) -> None:
    _stop_servers()


def _sc(name, program, argv, build, probe, errno, path, *, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=_teardown, description=description)


REAL_SIXTYFIRST: list[Scenario] = [
    _sc("t61_nc_connect_proxy_port_dead", "nc -X connect -x $PROXY (proxy.env)",
        sh_argv(NC_SH), nc_build, SO_ERROR, "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{DEAD_PORT}",
        description="proxy.env from a host whose proxy listens elsewhere: connect EINPROGRESS, then "
                    "getsockopt(SO_ERROR) ECONNREFUSED at the proxy's port, nc exit 1"),
    _sc("t61_rsync_rsync_proxy_dead", "rsync rsync://... with RSYNC_PROXY (proxy.env)",
        sh_argv(RSYNC_SH), rsync_build, SO_ERROR, "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{DEAD_PORT}",
        description="RSYNC_PROXY at a dead port: getsockopt(SO_ERROR) ECONNREFUSED, 'failed to connect', exit 10"),
    _sc("t61_openssl_s_client_proxy_dead", "openssl s_client -proxy $PROXY -connect (proxy.env)",
        sh_argv(S_CLIENT_SH), s_client_build, CONNECT, "ECONNREFUSED", lambda b: f"inet:127.0.0.1:{DEAD_PORT}",
        description="the proxy's port is dead: BIO_connect's connect ECONNREFUSED"),
    _sc("t61_python_urllib_no_proxy_missing", "python3 urllib with http_proxy, no_proxy dropped",
        sh_argv(URLLIB_SH, URLLIB_PY), urllib_build, SO_ERROR, "ECONNREFUSED",
        lambda b: f"inet:127.0.0.1:{DEAD_PORT}",
        description="good runs' no_proxy bypasses the dead proxy; the bad day's env lacks it: the socket has a "
                    "timeout, so connect EINPROGRESS, then getsockopt(SO_ERROR) ECONNREFUSED at the proxy, not the target"),
    _sc("t61_curl_ca_bundle_symlink_loop", "curl https with CURL_CA_BUNDLE (proxy.env)",
        sh_argv(CURL_SH), curl_build, OPEN, "ELOOP", lambda b: f"{b}/pki/bundle.pem",
        description="the bundle is a symlink to itself: openat ELOOP, curl exit 77"),
    _sc("t61_perl_http_tiny_proxy_resets", "perl HTTP::Tiny with http_proxy (proxy.env)",
        sh_argv(TINY_SH, TINY_PL), tiny_build, RESET, "ECONNRESET", lambda b: f"inet:127.0.0.1:{RESET_PORT}",
        description="http_proxy names a service that resets strangers: ECONNRESET in the first call that meets the "
                    "RST -- getsockopt(SO_ERROR), the request's write or the reply's read (strace: all three), "
                    "status 599"),
    _sc("t61_python_ssl_cert_file_removed", "python3 urllib https with SSL_CERT_FILE (proxy.env)",
        sh_argv(SSLFILE_SH, URLLIB_PY), sslfile_build, OPEN, "ENOENT", lambda b: f"{b}/pki/ca-bundle.pem",
        description="SSL_CERT_FILE names a removed bundle: openat ENOENT, then CERTIFICATE_VERIFY_FAILED"),
    _sc("t61_wget_server_cert_from_unknown_ca", "wget https --ca-certificate=ca.pem",
        sh_argv(WGET_SH), wget_build, CLOSE, None, lambda b: f"inet:127.0.0.1:{TLS_PORT}",
        description="the server's certificate was reissued by another CA: the handshake completes, wget rejects "
                    "the certificate and closes the socket without sending the GET (no call fails), exit 5"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
CURL_PROXY_SH = (f'curl -sS -x http://127.0.0.1:{PROXY_PORT} --cacert "$1/ca.pem" -o "$1/out.txt" '
                 f'https://127.0.0.1:{TLS_PORT}/data.txt')


def curl_proxy_noise(base: Path, run: int) -> None:
    _stop_servers()
    _https(base, [50, 5000, 500][run % 3])
    _proxy()
    write_file(base / "ca.pem", (_pki() / "ca1.pem").read_bytes())


def wget_noise(base: Path, run: int) -> None:
    _wget_tree(base, size=[3, 3000, 300][run % 3])


URLLIB_REDIRECT_SH = f'exec {PY[0]} -S -c "$2" "$1"'


def urllib_redirect_noise(base: Path, run: int) -> None:
    _stop_servers()
    _http(base, [100, 10, 2000][run % 3])
    write_file(base / "url", f"http://127.0.0.1:{HTTP_PORT}/moved/data.txt\n")


def nc_noise(base: Path, run: int) -> None:
    _nc_tree(base, size=[7, 700, 70][run % 3])


def s_client_noise(base: Path, run: int) -> None:
    _s_client_tree(base, size=[2, 200, 2000][run % 3])


QUIET_SIXTYFIRST: list[NoAnomalyCase] = [
    NoAnomalyCase("t61_curl_via_connect_proxy_sizes", sh_argv(CURL_PROXY_SH), curl_proxy_noise,
                  description="curl https through the CONNECT proxy: 50, 5000, 500 lines, random TLS bytes"),
    NoAnomalyCase("t61_wget_https_right_bundle_sizes", sh_argv(WGET_SH), wget_noise,
                  description="wget https with the right CA: 3, 3000, 300 lines, session tickets every run"),
    NoAnomalyCase("t61_python_urllib_follows_redirect", sh_argv(URLLIB_REDIRECT_SH, URLLIB_PY),
                  urllib_redirect_noise, description="urllib following a 302 to the file: 100, 10, 2000 lines"),
    NoAnomalyCase("t61_nc_through_connect_proxy_sizes", sh_argv(NC_SH), nc_noise,
                  description="nc -X connect through the proxy: 7, 700, 70 lines, ephemeral ports"),
    NoAnomalyCase("t61_openssl_s_client_via_proxy_sizes", sh_argv(S_CLIENT_SH), s_client_noise,
                  description="openssl s_client through the proxy: 2, 200, 2000 lines"),
]



def quiet_teardown() -> None:
    """Stop the servers a case started (its proxy, its http.server, its rsync daemon)."""
    _stop_servers()
