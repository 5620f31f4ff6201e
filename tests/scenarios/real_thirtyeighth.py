"""A thirty-eighth set of real programs with one real fault each: **TLS and certificates in a
service's start-up and its clients** -- done with real tools on loopback: ``openssl req`` and
``openssl x509 -req`` making a CA and its certificates, ``openssl verify``, ``openssl s_server``
and ``s_client``, ``c_rehash`` of a certificate directory, ``curl --cacert/--capath/--cert/--key``
and ``wget --ca-certificate`` to a local ``openssl s_server``, and a Python service and client
(``ssl.SSLContext.load_cert_chain``, ``load_verify_locations(capath=...)``). Every case's setup
makes a fresh CA (EC P-256, a random serial per certificate) with the same subject, so the
subject hash of the CA (its ``<hash>.0`` link) is the same in every run. The fault is one a
deploy gives the service:

- **the key and the certificates' volume**: ``openssl req -keyout`` onto a secrets tmpfs the new
  pod spec mounts read-only (open EROFS), ``openssl x509 -req -out`` onto a certificate tmpfs a
  stale backup filled (write ENOSPC), ``c_rehash`` of a certificate directory on a read-only
  volume (symlink EROFS);
- **the trust store's shape**: ``openssl verify -CAfile ca/ca.pem`` where a deploy copied the
  bundle to ``ca`` itself (open ENOTDIR), ``curl --capath`` of a "directory" that is the bundle
  file (the hashed lookup's stat ENOTDIR), ``curl --cert`` of a client certificate path config
  management made a directory (read EISDIR), ``openssl s_client -CAfile`` of an alternatives
  symlink loop (open ELOOP), ``wget --ca-certificate`` of a bundle a clean-up removed (open
  ENOENT), a Python client's ``capath`` whose ``<hash>.0`` link dangles after the CA file was
  renamed (stat ENOENT -- the good runs' stat of ``<hash>.1`` fails ENOENT too);
- **the service's user and port**: ``curl --cacert`` of a bundle rewritten 0600 root, curl run as
  nobody (open EACCES), a Python TLS service dropped to nobody loading a key a rotation job
  rewrote 0600 root (open EACCES), ``openssl s_server`` on a port a stale server still holds
  (bind EADDRINUSE).

Faults (``t38_`` cases): openssl's openat EROFS, openssl's write ENOSPC, c_rehash's symlink EROFS,
openssl's openat ENOTDIR, curl's newfstatat ENOTDIR, curl's read EISDIR, openssl's openat ELOOP,
wget's openat ENOENT, python3's newfstatat ENOENT, curl's openat EACCES, python3's openat EACCES,
openssl's bind EADDRINUSE.

Good runs vary naturally: fresh keys, random serials, session tickets, handshake timing, pids.
Noise cases (``QUIET_THIRTYEIGHTH``) are good runs alone: ``openssl req -x509`` + ``x509 -req``
with random serials then ``openssl verify``, a Python HTTPS server on a random port (port 0) and
curl against it, a Python TLS 1.3 client resuming its session with a ticket on a random port,
``s_client -sess_out``/``-sess_in`` to an ``s_server``, ``openssl rehash`` of randomly named
certificates then ``verify -CApath``, and curl ``--capath`` of a c_rehash'd directory with a
client certificate to an ``s_server`` asking for one.

Loopback: the ports are a block of this set's own (`harness._port_block`), as the harness's 18
``PORTS`` are all taken by earlier sets; the noise cases' Python servers bind port 0.
"""

from __future__ import annotations

import functools
import os
import random
import secrets
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .catalog import fill_up, umount
from .files import mounted_tmpfs, shell_argv, write_file
from .harness import PY, ROOT, NoAnomalyCase, Scenario, _port_block, skip_if_loopback_down

OPEN = frozenset({"openat", "open", "openat2"})
WRITE = frozenset({"write", "writev", "pwrite64"})
STAT = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
READ = frozenset({"read", "pread64", "readv"})
SYMLINK = frozenset({"symlink", "symlinkat"})
BIND = frozenset({"bind"})
OPENSSL = "/usr/bin/openssl"
CA_SUBJECT = "/CN=tb38 test CA/O=tracebase"  # the same in every run: the CA's <hash>.0 name is too
# this set's own ports: the fault cases' s_server (plain, and one asking for a client certificate),
# the port a stale server holds, the noise cases' s_servers
SERVE_PORT, MTLS_PORT, TAKEN_PORT, NOISE_PORT, NOISE_MTLS_PORT = _port_block(5)


def _openssl(*args: str) -> None:
    subprocess.run([OPENSSL, *args], check=True, capture_output=True, timeout=30)


def _serial() -> str:
    return "0x" + secrets.token_hex(8)


def _key_and_csr(d: Path, name: str, subject: str, san: str | None = None) -> None:
    args = ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"), "-subj", subject]
    if san:
        args += ["-addext", f"subjectAltName={san}"]
    _openssl(*args)


def _ca(d: Path, subject: str = CA_SUBJECT, name: str = "ca") -> None:
    d.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.pem"), "-days", "30", "-subj", subject,
             "-set_serial", _serial())


def _sign(d: Path, name: str, ca: str = "ca") -> None:
    _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / f"{ca}.pem"), "-CAkey",
             str(d / f"{ca}.key"), "-set_serial", _serial(), "-days", "30", "-copy_extensions", "copy",
             "-out", str(d / f"{name}.pem"))


def _pki(d: Path, client: bool = False) -> Path:
    """A fresh CA, a server certificate for localhost (and a client certificate) under d."""
    _ca(d)
    _key_and_csr(d, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    _sign(d, "server")
    if client:
        _key_and_csr(d, "client", "/CN=tb38-client")
        _sign(d, "client")
    for p in d.iterdir():
        p.chmod(0o644)
    return d


@functools.cache
def _subject_hash() -> str:
    """The CA subject's hash (openssl x509 -hash: the name of its <hash>.0 link), the same in every run."""
    with tempfile.TemporaryDirectory() as tmp:
        _ca(Path(tmp))
        return subprocess.run([OPENSSL, "x509", "-noout", "-hash", "-in", f"{tmp}/ca.pem"], check=True,
                              capture_output=True, text=True).stdout.strip()


def _remount_ro(target: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True, capture_output=True)


# --- background services (not recorded): started by a setup, stopped by a teardown ------------------
_PROCS: list[subprocess.Popen] = []
_SOCKS: list[socket.socket] = []
_THREADS: list[threading.Thread] = []


def _wait_port(port: int, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    skip_if_loopback_down()
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def _s_server(pki: Path, port: int, *extra: str) -> None:
    """openssl s_server -www on 127.0.0.1:port with pki's server certificate, until stopped."""
    proc = subprocess.Popen([OPENSSL, "s_server", "-www", "-quiet", "-accept", f"127.0.0.1:{port}",
                             "-cert", str(pki / "server.pem"), "-key", str(pki / "server.key"), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _PROCS.append(proc)
    # a probe connection without a handshake: s_server logs it and goes on
    _wait_port(port)


def _stop_services(base: Path | None = None) -> None:  # noqa: ARG001 (a teardown's signature)
    while _PROCS:
        proc = _PROCS.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    while _SOCKS:
        _SOCKS.pop().close()
    while _THREADS:
        _THREADS.pop().join(timeout=15)


def _umounting_and_stopping(*names: str):
    def teardown(base: Path) -> None:
        _stop_services()
        for n in names:
            umount(base / n)
    return teardown


# --- openssl req -keyout: the secrets volume the new pod spec mounts read-only -----------------------------
def _req_argv(b: Path) -> list[str]:
    return [OPENSSL, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{b}/secrets/server.key", "-out", f"{b}/csr/server.csr", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]


def openssl_req_key_on_readonly_secrets(base: Path, bad: bool) -> None:
    (base / "csr").mkdir()
    secrets_dir = mounted_tmpfs(base / "secrets", "1m")
    write_file(secrets_dir / "README", "keys of the web tier\n")
    if bad:  # the new pod spec mounts the secrets volume readOnly: true
        _remount_ro(secrets_dir)


# --- openssl x509 -req: signing onto a certificate tmpfs a stale backup filled -------------------------------
def _x509_argv(b: Path) -> list[str]:
    return [OPENSSL, "x509", "-req", "-in", f"{b}/pki/server.csr", "-CA", f"{b}/pki/ca.pem", "-CAkey",
            f"{b}/pki/ca.key", "-CAserial", f"{b}/pki/ca.srl", "-days", "30", "-copy_extensions", "copy",
            "-out", f"{b}/certs/server.pem"]


def openssl_x509_sign_certs_volume_full(base: Path, bad: bool) -> None:
    pki = base / "pki"
    _ca(pki)
    _key_and_csr(pki, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    write_file(pki / "ca.srl", secrets.token_hex(8).upper() + "\n")  # the CA's next serial: random
    certs = mounted_tmpfs(base / "certs", "1m")
    write_file(certs / "old" / f"server-{random.randrange(1000, 9999)}.pem", os.urandom(random.randrange(1, 64) * 1024))
    if bad:  # a backup of the old certificates, with their logs, filled the volume
        fill_up(certs)


# --- c_rehash: the certificate directory on a read-only volume --------------------------------------------------
def _c_rehash_argv(b: Path) -> list[str]:
    return ["/usr/bin/c_rehash", f"{b}/certs"]


def c_rehash_certs_readonly(base: Path, bad: bool) -> None:
    _ca(base / "pki")
    certs = mounted_tmpfs(base / "certs", "1m")
    write_file(certs / "tb38-ca.pem", (base / "pki" / "ca.pem").read_bytes())
    if bad:  # the image build's certificate layer, now mounted read-only
        _remount_ro(certs)


# --- openssl verify -CAfile ca/ca.pem: the deploy copied the bundle to ca itself ---------------------------------
def _verify_argv(b: Path) -> list[str]:
    return [OPENSSL, "verify", "-CAfile", f"{b}/etc/tls/ca/ca.pem", f"{b}/pki/server.pem"]


def openssl_verify_cafile_parent_is_file(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    tls = base / "etc" / "tls"
    if bad:  # `cp ca.pem /etc/tls/ca` before the directory existed: ca is the bundle
        write_file(tls / "ca", (pki / "ca.pem").read_bytes())
    else:
        write_file(tls / "ca" / "ca.pem", (pki / "ca.pem").read_bytes())


# --- curl --capath: the "directory" is the bundle file -------------------------------------------------------------
def _curl_capath_argv(b: Path) -> list[str]:
    return ["curl", "-sS", "--max-time", "10", "--capath", f"{b}/etc/tls/certs", "-o", f"{b}/out/status.html",
            f"https://localhost:{SERVE_PORT}/"]


def curl_capath_is_bundle_file(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    certs = base / "etc" / "tls" / "certs"
    (base / "out").mkdir()
    if bad:  # the deploy wrote the bundle where the hashed directory belongs
        write_file(certs, (pki / "ca.pem").read_bytes())
    else:
        write_file(certs / "tb38-ca.pem", (pki / "ca.pem").read_bytes())
        subprocess.run([OPENSSL, "rehash", str(certs)], check=True, capture_output=True)
    _s_server(pki, SERVE_PORT)


# --- curl --cert: the client certificate path config management made a directory ------------------------------------
def _curl_cert_argv(b: Path) -> list[str]:
    return ["curl", "-sS", "--max-time", "10", "--cacert", f"{b}/pki/ca.pem", "--cert", f"{b}/etc/tls/client.pem",
            "--key", f"{b}/etc/tls/client.key", "-o", f"{b}/out/status.html", f"https://localhost:{MTLS_PORT}/"]


def curl_client_cert_is_directory(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki", client=True)
    tls = base / "etc" / "tls"
    (base / "out").mkdir()
    write_file(tls / "client.key", (pki / "client.key").read_bytes(), 0o600)
    if bad:  # a manifest's `ensure => directory` on the certificate's path (meant for its parent)
        (tls / "client.pem").mkdir()
    else:
        write_file(tls / "client.pem", (pki / "client.pem").read_bytes())
    _s_server(pki, MTLS_PORT, "-Verify", "1", "-CAfile", str(pki / "ca.pem"))


# --- openssl s_client -CAfile: an alternatives symlink loop ---------------------------------------------------------
def _s_client_argv(b: Path) -> list[str]:
    return [OPENSSL, "s_client", "-connect", f"127.0.0.1:{SERVE_PORT}", "-servername", "localhost", "-brief",
            "-verify_return_error", "-CAfile", f"{b}/etc/tls/ca.pem"]


def openssl_s_client_cafile_symlink_loop(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    tls = base / "etc" / "tls"
    alt = base / "etc" / "alternatives"
    write_file(alt / "tb38-ca.pem.real", (pki / "ca.pem").read_bytes())
    tls.mkdir(parents=True)
    # etc/tls/ca.pem -> alternatives/tb38-ca.pem -> the real file; the bad run's update-alternatives
    # pointed the alternative back at etc/tls/ca.pem
    (alt / "tb38-ca.pem").symlink_to(tls / "ca.pem" if bad else alt / "tb38-ca.pem.real")
    (tls / "ca.pem").symlink_to(alt / "tb38-ca.pem")
    _s_server(pki, SERVE_PORT)


# --- wget --ca-certificate: a bundle a clean-up removed ---------------------------------------------------------------
def _wget_argv(b: Path) -> list[str]:
    return ["wget", "-q", "-T", "10", "-t", "1", f"--ca-certificate={b}/etc/tls/internal-ca.pem",
            "-O", f"{b}/out/status.html", f"https://localhost:{SERVE_PORT}/"]


def wget_ca_certificate_removed(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    (base / "out").mkdir()
    tls = base / "etc" / "tls"
    write_file(tls / "internal-ca-2025.pem", (pki / "ca.pem").read_bytes())
    if not bad:  # the bad run's clean-up of old CA files matched internal-ca.pem too
        write_file(tls / "internal-ca.pem", (pki / "ca.pem").read_bytes())
    _s_server(pki, SERVE_PORT)


# --- python3 -S: a client whose capath's <hash>.0 link dangles ---------------------------------------------------------
CAPATH_CLIENT_PY = """import socket, ssl, sys
base, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(capath=f"{base}/etc/tls/certs")
with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
    try:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            body = b""
            while chunk := tls.recv(65536):
                body += chunk
    except ssl.SSLError as err:
        sys.exit(f"tls: {err}")
open(f"{base}/out/status.html", "wb").write(body)
"""


def _capath_client_argv(b: Path) -> list[str]:
    return [*PY, "-c", CAPATH_CLIENT_PY, str(b), str(SERVE_PORT)]


def python_capath_hash_link_dangles(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    certs = base / "etc" / "tls" / "certs"
    (base / "out").mkdir()
    write_file(certs / "tb38-ca.pem", (pki / "ca.pem").read_bytes())
    write_file(certs / "other-ca.pem", (pki / "server.pem").read_bytes())  # another file, hashed too
    subprocess.run([OPENSSL, "rehash", str(certs)], check=True, capture_output=True)
    if bad:  # the CA file renamed by a deploy, no rehash after it: <hash>.0 points at nothing
        (certs / "tb38-ca.pem").rename(certs / "tb38-ca-2026.pem")
    _s_server(pki, SERVE_PORT)


# --- curl --cacert: a bundle rewritten 0600 root, curl as nobody -------------------------------------------------------
def _curl_cacert_argv(b: Path) -> list[str]:
    return ["curl", "-sS", "--max-time", "10", "--cacert", f"{b}/etc/tls/ca-bundle.pem", "-o", "/dev/null",
            f"https://localhost:{SERVE_PORT}/"]


def curl_cacert_root_only(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    # the bad run's bundle: rewritten by a root job with umask 077
    write_file(base / "etc" / "tls" / "ca-bundle.pem", (pki / "ca.pem").read_bytes(), 0o600 if bad else 0o644)
    _s_server(pki, SERVE_PORT)


# --- python3 -S: a TLS service dropped to nobody, its key rewritten 0600 root --------------------------------------------
TLS_SERVICE_PY = """import socket, ssl, sys
base = sys.argv[1]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_2
ctx.load_cert_chain(f"{base}/etc/tls/server.pem", f"{base}/etc/tls/private/server.key")
ctx.load_verify_locations(cafile=f"{base}/etc/tls/ca.pem")
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print("ready", srv.getsockname()[1], flush=True)  # a --check-config start: up, then gone
srv.close()
"""


def _tls_service_argv(b: Path) -> list[str]:
    return [*PY, "-c", TLS_SERVICE_PY, str(b)]


def python_tls_service_key_root_only(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    tls = base / "etc" / "tls"
    write_file(tls / "server.pem", (pki / "server.pem").read_bytes())
    write_file(tls / "ca.pem", (pki / "ca.pem").read_bytes())
    # the good runs' key: group-readable by the service (nogroup); the bad run's: a rotation job's 0600 root
    key = write_file(tls / "private" / "server.key", (pki / "server.key").read_bytes(), 0o600 if bad else 0o640)
    if not bad:
        os.chown(key, 0, 65534)


# --- openssl s_server: a port a stale server still holds -------------------------------------------------------------------
def _s_server_argv(b: Path) -> list[str]:
    return [OPENSSL, "s_server", "-www", "-quiet", "-naccept", "1", "-accept", f"127.0.0.1:{TAKEN_PORT}",
            "-cert", f"{b}/pki/server.pem", "-key", f"{b}/pki/server.key"]


def _one_client(ca: Path, port: int) -> None:
    """A client (in this process, not recorded) that waits for the server and fetches / once."""
    ctx = ssl.create_default_context(cafile=str(ca))
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.02)
            continue
        try:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"GET / HTTP/1.0\r\n\r\n")
                while tls.recv(65536):
                    pass
        except OSError:
            pass
        return


def openssl_s_server_port_taken(base: Path, bad: bool) -> None:
    pki = _pki(base / "pki")
    if bad:  # the previous deploy's server, never stopped, still listens there
        stale = socket.socket()
        stale.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        stale.bind(("127.0.0.1", TAKEN_PORT))
        stale.listen(8)
        _SOCKS.append(stale)
    else:  # the health check that the good runs' server answers before it exits (-naccept 1)
        t = threading.Thread(target=_one_client, args=(pki / "ca.pem", TAKEN_PORT), daemon=True)
        t.start()
        _THREADS.append(t)


REAL_THIRTYEIGHTH: list[Scenario] = [
    Scenario("t38_openssl_req_key_on_readonly_secrets", "openssl req -new -newkey ec (a key and a CSR)",
             _req_argv, openssl_req_key_on_readonly_secrets, OPEN, "EROFS", lambda b: f"{b}/secrets/server.key",
             teardown=_umounting_and_stopping("secrets"),
             description="openssl req writing a new key onto a secrets tmpfs the new pod spec mounts read-only "
                         "(open EROFS)"),
    Scenario("t38_openssl_x509_sign_certs_volume_full", "openssl x509 -req (signing a server certificate)",
             _x509_argv, openssl_x509_sign_certs_volume_full, WRITE, "ENOSPC", lambda b: f"{b}/certs/server.pem",
             teardown=_umounting_and_stopping("certs"),
             description="openssl x509 -req signing a CSR onto a certificate tmpfs a stale backup filled "
                         "(write ENOSPC)"),
    Scenario("t38_c_rehash_certs_readonly", "c_rehash (a certificate directory's hash links)", _c_rehash_argv,
             c_rehash_certs_readonly, SYMLINK, "EROFS", lambda b: f"{b}/certs/{_subject_hash()}.0",
             teardown=_umounting_and_stopping("certs"),
             description="c_rehash of a certificate directory on a read-only image layer (symlink EROFS)"),
    Scenario("t38_openssl_verify_cafile_parent_is_file", "openssl verify -CAfile (a server certificate)",
             _verify_argv, openssl_verify_cafile_parent_is_file, OPEN, "ENOTDIR",
             lambda b: f"{b}/etc/tls/ca/ca.pem",
             description="openssl verify -CAfile etc/tls/ca/ca.pem where a deploy copied the bundle to "
                         "etc/tls/ca itself (open ENOTDIR)"),
    Scenario("t38_curl_capath_is_bundle_file", "curl --capath (https to an openssl s_server)", _curl_capath_argv,
             curl_capath_is_bundle_file, STAT, "ENOTDIR", lambda b: f"{b}/etc/tls/certs/{_subject_hash()}.0",
             teardown=_umounting_and_stopping(),
             description="curl --capath of a hashed directory a deploy replaced with the bundle file: the "
                         "hashed lookup's stat of certs/<hash>.0 (stat ENOTDIR)"),
    Scenario("t38_curl_client_cert_is_directory", "curl --cert --key (mutual TLS to an openssl s_server)",
             _curl_cert_argv, curl_client_cert_is_directory, READ, "EISDIR", lambda b: f"{b}/etc/tls/client.pem",
             teardown=_umounting_and_stopping(),
             description="curl --cert of a client certificate path config management made a directory "
                         "(the open succeeds, its read EISDIR)"),
    Scenario("t38_openssl_s_client_cafile_symlink_loop", "openssl s_client -CAfile (to an openssl s_server)",
             _s_client_argv, openssl_s_client_cafile_symlink_loop, OPEN, "ELOOP", lambda b: f"{b}/etc/tls/ca.pem",
             teardown=_umounting_and_stopping(),
             description="openssl s_client -CAfile of a CA symlink an alternatives change pointed back at "
                         "itself (open ELOOP)"),
    Scenario("t38_wget_ca_certificate_removed", "wget --ca-certificate (https to an openssl s_server)",
             _wget_argv, wget_ca_certificate_removed, OPEN, "ENOENT", lambda b: f"{b}/etc/tls/internal-ca.pem",
             teardown=_umounting_and_stopping(),
             description="wget --ca-certificate of a CA bundle a clean-up of old CA files removed (open ENOENT)"),
    Scenario("t38_python_capath_hash_link_dangles", "python3 -S (an ssl client, load_verify_locations capath)",
             _capath_client_argv, python_capath_hash_link_dangles, STAT, "ENOENT",
             lambda b: f"{b}/etc/tls/certs/{_subject_hash()}.0", teardown=_umounting_and_stopping(),
             description="a Python TLS client whose capath's <hash>.0 link dangles after a deploy renamed the "
                         "CA file without a rehash (stat ENOENT of <hash>.0; the good runs' of <hash>.1 too)"),
    Scenario("t38_curl_cacert_root_only", "curl --cacert (as nobody, https to an openssl s_server)",
             _curl_cacert_argv, curl_cacert_root_only, OPEN, "EACCES", lambda b: f"{b}/etc/tls/ca-bundle.pem",
             teardown=_umounting_and_stopping(), unprivileged=True,
             description="curl as nobody with --cacert of a bundle a root job rewrote 0600 (open EACCES)"),
    Scenario("t38_python_tls_service_key_root_only", "python3 -S (a TLS service's start-up: load_cert_chain, "
             "as nobody)", _tls_service_argv, python_tls_service_key_root_only, OPEN, "EACCES",
             lambda b: f"{b}/etc/tls/private/server.key", unprivileged=True,
             description="a Python TLS service run as nobody loading a key a rotation job rewrote 0600 root "
                         "(open EACCES)"),
    Scenario("t38_openssl_s_server_port_taken", "openssl s_server -naccept 1 (a TLS service's start-up)",
             _s_server_argv, openssl_s_server_port_taken, BIND, "EADDRINUSE",
             lambda b: f"inet:127.0.0.1:{TAKEN_PORT}",
             teardown=_umounting_and_stopping(),
             description="openssl s_server on a port the previous deploy's server still holds (bind EADDRINUSE)"),
]


# --- good-vs-good noise ----------------------------------------------------------------------------
MINT_NOISE_SH = (
    'set -e; cd "$1"; '
    'openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 '
    '-subj "/CN=tb38 noise CA" 2>/dev/null; '
    'openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr '
    '-subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null; '
    'openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAserial ca.srl -CAcreateserial -days 30 '
    '-copy_extensions copy -out server.pem 2>/dev/null; '
    'exec openssl verify -CAfile ca.pem server.pem')


def _mint_noise(base: Path, run: int) -> None:  # noqa: ARG001
    pass  # fresh keys and random serials (-CAcreateserial draws one): all of it is the run's own


HTTPS_NOISE_PY = """import http.server, os, ssl, subprocess, sys, threading
base = sys.argv[1]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{base}/pki/server.pem", f"{base}/pki/server.key")
os.chdir(f"{base}/www")
srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
port = srv.server_address[1]
t = threading.Thread(target=srv.serve_forever, daemon=True)
t.start()
rc = subprocess.run(["curl", "-sS", "--max-time", "10", "--cacert", f"{base}/pki/ca.pem", "-o", f"{base}/out/a",
                     f"https://localhost:{port}/index.html", "-o", f"{base}/out/b", f"https://localhost:{port}/data.bin"]
                    ).returncode
srv.shutdown()
srv.server_close()
sys.exit(rc)
"""


def _https_noise_argv(b: Path) -> list[str]:
    return [*PY, "-c", HTTPS_NOISE_PY, str(b)]


def _https_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _pki(base / "pki")
    write_file(base / "www" / "index.html", f"<p>build {secrets.token_hex(8)}</p>\n")
    write_file(base / "www" / "data.bin", os.urandom(random.randrange(4, 64) * 1024))
    (base / "out").mkdir()


RESUME_NOISE_PY = """import socket, ssl, sys, threading
base = sys.argv[1]
sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
sctx.load_cert_chain(f"{base}/pki/server.pem", f"{base}/pki/server.key")
sctx.num_tickets = 2
cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cctx.load_verify_locations(cafile=f"{base}/pki/ca.pem")
cctx.minimum_version = ssl.TLSVersion.TLSv1_3
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
port = srv.getsockname()[1]

def serve():
    for _ in range(2):
        conn, _ = srv.accept()
        with sctx.wrap_socket(conn, server_side=True) as tls:
            data = tls.recv(1024)
            tls.sendall(b"pong " + data)

t = threading.Thread(target=serve)
t.start()
session, resumed = None, []
for _ in range(2):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with cctx.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            tls.sendall(b"ping")
            tls.recv(1024)
            resumed.append(tls.session_reused)
            session = tls.session
t.join()
srv.close()
print("resumed", resumed)
"""


def _resume_noise_argv(b: Path) -> list[str]:
    return [*PY, "-c", RESUME_NOISE_PY, str(b)]


def _resume_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _pki(base / "pki")


SESS_NOISE_SH = (
    'cd "$1" && '
    f'openssl s_client -connect 127.0.0.1:{NOISE_PORT} -servername localhost -brief -verify_return_error '
    '-CAfile pki/ca.pem -sess_out sess.pem -ign_eof < req.txt > out1.txt 2>&1 && '
    f'exec openssl s_client -connect 127.0.0.1:{NOISE_PORT} -servername localhost -brief -verify_return_error '
    '-CAfile pki/ca.pem -sess_in sess.pem -ign_eof < req.txt > out2.txt 2>&1')


def _sess_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_services()  # a server an earlier failed run left
    pki = _pki(base / "pki")
    write_file(base / "req.txt", "GET / HTTP/1.0\r\n\r\n")
    # the server exits after the health probe and the two clients
    _s_server(pki, NOISE_PORT, "-naccept", "3")


REHASH_NOISE_SH = ('openssl rehash "$1/certs" && '
                   'exec openssl verify -CApath "$1/certs" -untrusted "$1/pki/inter.pem" "$1/pki/server.pem"')


def _rehash_noise(base: Path, run: int) -> None:  # noqa: ARG001
    pki = base / "pki"
    _ca(pki)
    _key_and_csr(pki, "inter", "/CN=tb38 intermediate")
    _inter(pki)
    _key_and_csr(pki, "server", "/CN=localhost", "DNS:localhost")
    _sign(pki, "server", ca="inter")
    certs = base / "certs"
    write_file(certs / f"root-{secrets.token_hex(4)}.pem", (pki / "ca.pem").read_bytes())
    for _ in range(2):  # other, unrelated CAs of the host, randomly named
        other = base / "other" / secrets.token_hex(4)
        _ca(other, subject=f"/CN=tb38 other CA {len(list(certs.iterdir()))}")
        write_file(certs / f"ca-{secrets.token_hex(4)}.crt", (other / "ca.pem").read_bytes())


def _inter(pki: Path) -> None:
    ext = write_file(pki / "inter.ext", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
    _openssl("x509", "-req", "-in", str(pki / "inter.csr"), "-CA", str(pki / "ca.pem"), "-CAkey", str(pki / "ca.key"),
             "-set_serial", _serial(), "-days", "30", "-extfile", str(ext), "-out", str(pki / "inter.pem"))


def _mtls_noise_argv(b: Path) -> list[str]:
    return ["curl", "-sS", "--max-time", "10", "--capath", f"{b}/certs", "--cert", f"{b}/pki/client.pem", "--key",
            f"{b}/pki/client.key", "-o", f"{b}/out/status.html", f"https://localhost:{NOISE_MTLS_PORT}/"]


def _mtls_noise(base: Path, run: int) -> None:  # noqa: ARG001
    _stop_services()
    pki = _pki(base / "pki", client=True)
    certs = base / "certs"
    write_file(certs / f"tb38-{secrets.token_hex(3)}.pem", (pki / "ca.pem").read_bytes())
    subprocess.run(["/usr/bin/c_rehash", str(certs)], check=True, capture_output=True)
    (base / "out").mkdir()
    _s_server(pki, NOISE_MTLS_PORT, "-Verify", "1", "-CAfile", str(pki / "ca.pem"), "-naccept", "2")


QUIET_THIRTYEIGHTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t38_openssl_mint_ca_and_server_cert", lambda b: shell_argv(MINT_NOISE_SH, str(b)), _mint_noise,
                  description="openssl req -x509 of a CA, req -new and x509 -req -CAcreateserial of a server "
                              "certificate (fresh keys, a random serial), then openssl verify"),
    NoAnomalyCase("t38_python_https_server_random_port_curl", _https_noise_argv, _https_noise,
                  description="a Python HTTPS server on port 0 (a random port) and curl --cacert fetching two "
                              "files of random contents from it"),
    NoAnomalyCase("t38_python_tls13_ticket_resumption", _resume_noise_argv, _resume_noise,
                  description="a Python TLS 1.3 server and client on port 0, the second connection resuming the "
                              "first's session from a ticket"),
    NoAnomalyCase("t38_openssl_s_client_sess_out_sess_in", lambda b: shell_argv(SESS_NOISE_SH, str(b)), _sess_noise,
                  description="openssl s_client -sess_out, then -sess_in resuming, to an openssl s_server -www"),
    NoAnomalyCase("t38_openssl_rehash_random_names_verify_capath", lambda b: shell_argv(REHASH_NOISE_SH, str(b)),
                  _rehash_noise,
                  description="openssl rehash of three randomly named CA files, then verify -CApath -untrusted of "
                              "a chain with random serials"),
    NoAnomalyCase("t38_curl_capath_client_cert_s_server", _mtls_noise_argv, _mtls_noise,
                  description="curl --capath (a c_rehash'd directory, a random file name) --cert --key to an "
                              "openssl s_server asking for a client certificate"),
]


def quiet_teardown() -> None:
    """Stop what any failed case may have left running, and unmount its volumes."""
    _stop_services()
    for sc in REAL_THIRTYEIGHTH:
        base = ROOT / sc.name
        for n in ("secrets", "certs"):
            umount(base / n)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
