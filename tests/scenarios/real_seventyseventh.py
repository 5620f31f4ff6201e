"""A seventy-seventh set of real programs: **credential, key and trust files of clients** -- what
ssh, ssh-keygen, gpg, wget, curl and openssl read (or write) before doing their work: a private key
missing, a public key that is a directory, an identity file named by ``-i`` missing, a server port
closed, a GNUPGHOME that is a file, a ``~/.netrc`` that is a directory, an immutable CSR
output; and good runs whose credential files legitimately differ (a known_hosts present or not, gpg
creating its homedir files or reusing them, random lock and temporary names, a key agent socket
present or not, netrc entries in another order, a CApath holding other certificates).

Every run gets HOME=BASE/home (a home of the case's own: nothing touches /root); ssh takes its home
from the password database, not HOME, so its runs name their config with ``-F BASE/ssh_config``
(UserKnownHostsFile BASE/home/.ssh/known_hosts). Loopback services run in this test process (not in
the recording): an HTTP server demanding Basic auth (user t77) and a stub SSH server that sends its
banner, shuts its side down and drains the client (ssh: "Connection closed by remote host", exit
255, in every run that reaches it).

Fault cases (``REAL_SEVENTYSEVENTH``): three good runs and the bad run, one fault each. What
``strace -f`` showed each bad run doing (OpenSSH 9.2p1, GnuPG 2.2.40, wget 1.21.3, OpenSSL 3.0,
curl 7.88), written down before the tool was run:

- ``ssh-keygen -y -f BASE/keys/id_ed25519`` (print the public half of a private key), the key
  missing: ``newfstatat(AT_FDCWD, ".../keys/id_ed25519", ..) = -1 ENOENT``, ".../keys/id_ed25519: No
  such file or directory", exit 255 (good runs: the stat = 0, the key read, its public half printed);
- ``ssh-keygen -l -f BASE/keys/deploy.pub`` (a fingerprint), deploy.pub a directory:
  ``openat(AT_FDCWD, ".../keys/deploy.pub", O_RDONLY) = 3`` (a directory opens), ``newfstatat(3, "",
  {S_IFDIR..}) = 0``, ``read(3, .., 4096) = -1 EISDIR``, "... is not a public key file.", exit 255;
- ``ssh -F BASE/ssh_config -i BASE/home/.ssh/id_deploy -p PORT 127.0.0.1 true`` (BatchMode), the
  identity file missing: before connecting, ``newfstatat(AT_FDCWD, ".../home/.ssh/id_deploy", ..) =
  -1 ENOENT``, "Warning: Identity file ... not accessible: No such file or directory.", then the
  same connect as the good runs (the stub server: exit 255 every run);
- ``ssh -F BASE/ssh_config -p PORT 127.0.0.1 true``, nothing listening on PORT in the bad run; the
  config's ConnectTimeout makes ssh connect without blocking: ``connect(3, {AF_INET,
  sin_port=htons(PORT), sin_addr=127.0.0.1}, 16) = -1 EINPROGRESS`` (the good runs' too), ``poll(..,
  5000) = 1 (POLLERR|POLLHUP)``, ``getsockopt(3, SOL_SOCKET, SO_ERROR, [ECONNREFUSED], [4]) = 0`` (the
  refusal: docs/diff-json.md's getsockopt errno, path the peer), "ssh: connect to host 127.0.0.1 port
  PORT: Connection refused", exit 255 (good runs: the stub answers). (First written as a blocking
  ``connect = -1 ECONNREFUSED``, from an strace of ssh without the config's ConnectTimeout: corrected
  from an strace of the case's own argv.);
- ``gpg --batch --list-keys`` with GNUPGHOME=BASE/gnupg a regular file (good runs: an empty 0700
  directory, where gpg creates pubring.kbx and trustdb.gpg): ``newfstatat(AT_FDCWD, ".../gnupg", ..)
  = 0`` (a file), then its first look inside, ``access(".../gnupg/gpg.conf-2.2.40", R_OK) = -1
  ENOTDIR`` (gpg.conf-<version>, the good runs' ENOENT), and so on to "gpg: Fatal: can't create lock
  for '.../gnupg/trustdb.gpg'", exit 2;
- ``wget -q -O BASE/out/secret.txt http://127.0.0.1:PORT/secret.txt`` (the server demands Basic
  auth; the good runs' ~/.netrc holds the login), ~/.netrc a directory: ``newfstatat(.., ".../home/
  .netrc", {S_IFDIR..}) = 0``, ``openat(AT_FDCWD, ".../home/.netrc", O_RDONLY) = 4``, ``read(4, ..,
  4096) = -1 EISDIR``, and on without a login (401, "Username/Password Authentication Failed.",
  exit 6);
- ``openssl req -new -key BASE/pki/client.key -subj /CN=t77 -out BASE/pki/client.csr``, an earlier
  client.csr there in every run, made immutable (``chattr +i``) in the bad run: ``openat(AT_FDCWD,
  ".../pki/client.csr", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EPERM``, "Can't open ... for writing,
  Operation not permitted", exit 1.

``extra`` holds what the case checks beyond the bifurcation: ``comm`` (the process strace shows
failing), ``says`` (what that process writes to stderr next, as strace shows: the named event's
``then_wrote``; none for wget -q, which writes nothing) and, where strace leaves no doubt,
``recovered`` (ssh -i goes on to the same connect, banner exchange and exit as the good runs: True;
ssh-keygen and openssl write their message and exit where the good runs went on reading or
writing: False).

Noise cases (``QUIET_SEVENTYSEVENTH``): five good runs each, every run diffed against the other four;
same exit status every run. What varies between the runs:

- ``ssh -G -F BASE/ssh_config 127.0.0.1`` with BASE/home/.ssh/known_hosts present in runs 0, 2, 4,
  absent in runs 1, 3 (-G only prints the configuration);
- ``gpg --batch --list-keys`` in a fresh empty homedir (runs 0, 2, 4: gpg creates pubring.kbx and
  trustdb.gpg, its dotlock files .#lk0x<address>.<host>.<pid> and their links) or in one an earlier
  gpg run (in the setup, not recorded) filled (runs 1, 3: the files opened and read);
- ``gpg --batch --import-ownertrust`` into a filled homedir: the dotlock names (a heap address and
  the pid, other each run);
- the ssh of the closed-port case against the stub server with SSH_AUTH_SOCK exported as a socket
  of a random name (BASE/agent/ssh-XXXXXXXX/agent.<n>, bound and listening, as ssh-agent's) in runs
  0, 2, 4, and unset in runs 1, 3;
- ``ssh-keygen -R example.org -f BASE/home/.ssh/known_hosts``: its temporary known_hosts.XXXXXXXXXX of
  a random name, renamed over known_hosts; a known_hosts.old of an earlier run present in runs 1, 3
  (unlink = 0) and absent in runs 0, 2, 4 (unlink = -1 ENOENT);
- ``curl --netrc-file BASE/netrc`` fetching the auth server's secret: the netrc's three machine
  entries in another order each run (the matching one first, second or third);
- ``openssl verify -CApath BASE/certs BASE/leaf.pem``: the CApath (``openssl rehash``) holding the CA
  and 0 to 4 other, unrelated CA certificates (other hash names, never looked up);
- ``git credential fill`` (its request piped in by sh) with ``credential.helper 'store
  --file=BASE/creds'``: git runs ``/bin/sh -c "git credential-store --file=... get"``, which opens and
  reads the store; the store's three entries in another order each run (the matching one first,
  second or third).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import secrets
import shutil
import socket
import socketserver
import subprocess
import threading
from pathlib import Path

from .files import write_file
from .harness import ROOT, NoAnomalyCase, Scenario, _port_block, sh_argv

SSH = "/usr/bin/ssh"
SSH_KEYGEN = "/usr/bin/ssh-keygen"
GPG = "/usr/bin/gpg"
WGET = "/usr/bin/wget"
CURL = "/usr/bin/curl"
OPENSSL = "/usr/bin/openssl"
GIT = "/usr/bin/git"
CHATTR = "/usr/bin/chattr"

OPENS = frozenset({"openat", "open", "creat"})
READS = frozenset({"read", "pread64", "readv"})
STATS = frozenset({"newfstatat", "stat", "statx", "lstat", "fstatat64"})
ACCESS = frozenset({"access", "faccessat", "faccessat2"})
SO_ERROR = frozenset({"getsockopt"})  # a non-blocking connect's refusal: getsockopt(SO_ERROR)

AUTH_PORT, SSH_PORT = _port_block(2)
USER, PASSWORD = "t77", "s3cret-t77"
SECRET = "the t77 secret\n" * 40
RUNS = 5  # noise cases: each run against the other four

MATERIAL = ROOT / "_t77_material"


# --- loopback services (in this process, outside the recording) ---------------------------------------------------------
class _AuthHandler(http.server.BaseHTTPRequestHandler):
    """GET of anything: 401 with a Basic challenge without the login t77's, else SECRET; one request per connection."""

    want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.headers.get("Authorization") != self.want:
            body = b"login required\n"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="t77"')
        else:
            body = SECRET.encode()
            self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        # said outright: without it wget (asking Keep-Alive) sometimes found the 401's connection still open,
        # sent its retry with the login on it and met the close (getpeername, an empty read, a new connection
        # after a pause): a difference between good runs of this server's timing, not of the programs'
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _BannerHandler(socketserver.BaseRequestHandler):
    """A stub SSH server: its banner, its side shut, the client drained (no reset)."""

    def handle(self):
        sock = self.request
        sock.settimeout(10)
        with contextlib.suppress(OSError):
            sock.sendall(b"SSH-2.0-t77stub\r\n")
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass


class _Threaded(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


class _Service:
    def __init__(self, port: int, handler) -> None:
        self.port, self.handler, self.server = port, handler, None

    def start(self) -> None:
        if self.server is None:
            self.server = _Threaded(("127.0.0.1", self.port), self.handler)
            threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


AUTH = _Service(AUTH_PORT, _AuthHandler)
BANNER = _Service(SSH_PORT, _BannerHandler)
_AGENT_SOCKETS: list[socket.socket] = []


def _run(*argv: str, **kw) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, timeout=60, **kw)


@functools.cache
def material() -> Path:
    """Keys and certificates, made once per process: an ed25519 ssh key pair, an openssl client key,
    a CA and a leaf it signed, and four unrelated CA certificates."""
    if MATERIAL.exists():
        shutil.rmtree(MATERIAL)
    ROOT.mkdir(mode=0o755, exist_ok=True)
    MATERIAL.mkdir(mode=0o755)
    m = MATERIAL
    _run(SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "t77", "-f", str(m / "id_ed25519"))
    _run(OPENSSL, "genpkey", "-algorithm", "ed25519", "-out", str(m / "client.key"))
    _run(OPENSSL, "req", "-x509", "-newkey", "ed25519", "-nodes", "-keyout", str(m / "ca.key"), "-out",
         str(m / "ca.pem"), "-subj", "/CN=t77 CA", "-days", "3650")
    _run(OPENSSL, "req", "-new", "-key", str(m / "client.key"), "-subj", "/CN=t77 leaf", "-out", str(m / "leaf.csr"))
    _run(OPENSSL, "x509", "-req", "-in", str(m / "leaf.csr"), "-CA", str(m / "ca.pem"), "-CAkey", str(m / "ca.key"),
         "-CAcreateserial", "-days", "3650", "-out", str(m / "leaf.pem"))
    for k in range(4):
        _run(OPENSSL, "req", "-x509", "-newkey", "ed25519", "-nodes", "-keyout", str(m / f"other{k}.key"), "-out",
             str(m / f"other{k}.pem"), "-subj", f"/CN=t77 other {k}", "-days", "3650")
    return m


def _home(base: Path) -> Path:
    (base / "home" / ".ssh").mkdir(parents=True, exist_ok=True)
    (base / "home" / ".ssh").chmod(0o700)
    return base / "home"


def _ssh_config(base: Path) -> None:
    _home(base)
    write_file(base / "ssh_config", f"UserKnownHostsFile {base}/home/.ssh/known_hosts\nStrictHostKeyChecking yes\n"
                                    "BatchMode yes\nConnectTimeout 5\nUser t77\n")


def _known_hosts(base: Path) -> None:
    pub = " ".join((material() / "id_ed25519.pub").read_text().split()[:2])
    write_file(base / "home" / ".ssh" / "known_hosts",
               f"[127.0.0.1]:{SSH_PORT} {pub}\nexample.org {pub}\nbuild.example.net {pub}\n", 0o600)


def _netrc(base: Path, path: Path, order: int = 0) -> None:
    entries = [f"machine 127.0.0.1 login {USER} password {PASSWORD}\n",
               "machine mirror.example.org login anon password none\n",
               "machine ci.example.net login bot password token\n"]
    k = order % 3
    write_file(path, "".join(entries[k:] + entries[:k]), 0o600)


# --- fault cases -------------------------------------------------------------------------------------------------------
HOME_SH = 'HOME="$1/home"; export HOME; shift; exec "$@"'


def _in_home(*argv: str):
    """argv(base): the program under `sh -c` with HOME=BASE/home; `{b}` in an argument is BASE."""
    return lambda b: ["/bin/sh", "-c", HOME_SH, "sh", str(b), *[a.replace("{b}", str(b)) for a in argv]]


def _keygen_y_setup(base: Path, bad: bool) -> None:
    _home(base)
    (base / "keys").mkdir()
    if not bad:
        shutil.copy(material() / "id_ed25519", base / "keys" / "id_ed25519")
        (base / "keys" / "id_ed25519").chmod(0o600)


def _keygen_l_setup(base: Path, bad: bool) -> None:
    _home(base)
    (base / "keys").mkdir()
    if bad:
        (base / "keys" / "deploy.pub").mkdir()
    else:
        shutil.copy(material() / "id_ed25519.pub", base / "keys" / "deploy.pub")


def _ssh_identity_setup(base: Path, bad: bool) -> None:
    _ssh_config(base)
    _known_hosts(base)
    BANNER.start()
    if not bad:
        shutil.copy(material() / "id_ed25519", base / "home" / ".ssh" / "id_deploy")
        (base / "home" / ".ssh" / "id_deploy").chmod(0o600)


def _ssh_port_setup(base: Path, bad: bool) -> None:
    _ssh_config(base)
    _known_hosts(base)
    if bad:
        BANNER.stop()
    else:
        BANNER.start()


def _gpg_setup(fault: str):
    def setup(base: Path, bad: bool) -> None:
        _home(base)
        if bad and fault == "file":
            write_file(base / "gnupg", "not a directory\n", 0o600)
            return
        (base / "gnupg").mkdir(mode=0o700)
        (base / "gnupg").chmod(0o700)
    return setup


def _wget_setup(base: Path, bad: bool) -> None:
    home = _home(base)
    AUTH.start()
    (base / "out").mkdir()
    if bad:
        (home / ".netrc").mkdir()
    else:
        _netrc(base, home / ".netrc")


def _openssl_setup(base: Path, bad: bool) -> None:
    _home(base)
    (base / "pki").mkdir()
    shutil.copy(material() / "client.key", base / "pki" / "client.key")
    write_file(base / "pki" / "client.csr", "an earlier CSR\n")
    if bad:
        _run(CHATTR, "+i", str(base / "pki" / "client.csr"))


GPG_HOME_SH = 'HOME="$1/home" GNUPGHOME="$1/gnupg"; export HOME GNUPGHOME; shift; exec "$@"'


def _gpg_argv(*args: str):
    return lambda b: ["/bin/sh", "-c", GPG_HOME_SH, "sh", str(b), GPG, "--batch", *[a.replace("{b}", str(b))
                                                                                     for a in args]]


def _teardown(base: Path | None = None) -> None:
    if base is not None and (base / "pki" / "client.csr").exists():
        subprocess.run([CHATTR, "-i", str(base / "pki" / "client.csr")], capture_output=True)
    BANNER.stop()


def _sc(name, program, argv, setup, probe, errno, path, *, description="", **extra):
    return Scenario(name, program, argv, setup, probe, errno, path, teardown=_teardown, description=description,
                    extra=extra)


SSH_TO = ["-F", "{b}/ssh_config", "-p", str(SSH_PORT), "127.0.0.1", "true"]

REAL_SEVENTYSEVENTH: list[Scenario] = [
    _sc("t77_ssh_keygen_public_half_of_a_missing_private_key", "ssh-keygen -y (public half of a private key)",
        _in_home(SSH_KEYGEN, "-y", "-f", "{b}/keys/id_ed25519"), _keygen_y_setup, STATS, "ENOENT",
        lambda b: f"{b}/keys/id_ed25519", comm="ssh-keygen", says="keys/id_ed25519: No such file or directory",
        recovered=False,
        description="the private key named by -f is missing: its stat fails ENOENT"),
    _sc("t77_ssh_keygen_fingerprint_of_a_directory", "ssh-keygen -l (fingerprint of a public key)",
        _in_home(SSH_KEYGEN, "-l", "-f", "{b}/keys/deploy.pub"), _keygen_l_setup, READS, "EISDIR",
        lambda b: f"{b}/keys/deploy.pub", comm="ssh-keygen", says="is not a public key file", recovered=False,
        description="the public key named by -f is a directory: it opens, the read fails EISDIR"),
    _sc("t77_ssh_identity_file_named_by_i_missing", "ssh -i (identity file; a stub server on loopback)",
        _in_home(SSH, "-i", "{b}/home/.ssh/id_deploy", *SSH_TO), _ssh_identity_setup, STATS, "ENOENT",
        lambda b: f"{b}/home/.ssh/id_deploy", comm="ssh", says="Warning: Identity file", recovered=True,
        description="the identity file named by -i is missing: a warning, its stat fails ENOENT before connecting"),
    _sc("t77_ssh_to_a_closed_loopback_port", "ssh (a stub server on loopback, down in the bad run)",
        _in_home(SSH, *SSH_TO), _ssh_port_setup, SO_ERROR, "ECONNREFUSED",
        lambda b: f"inet:127.0.0.1:{SSH_PORT}", comm="ssh", says=f"port {SSH_PORT}: Connection refused",
        description="nothing listens on the server's port: the non-blocking connect refused (getsockopt SO_ERROR)"),
    _sc("t77_gpg_homedir_is_a_regular_file", "gpg --list-keys (GNUPGHOME of the case's own)",
        _gpg_argv("--list-keys"), _gpg_setup("file"), ACCESS, "ENOTDIR", lambda b: f"{b}/gnupg/gpg.conf-*",
        comm="gpg", says="Not a directory", description="GNUPGHOME is a regular file: the first look inside it fails ENOTDIR"),
    _sc("t77_wget_netrc_is_a_directory", "wget (~/.netrc login; an auth server on loopback)",
        _in_home(WGET, "-q", "-O", "{b}/out/secret.txt", f"http://127.0.0.1:{AUTH_PORT}/secret.txt"), _wget_setup,
        READS, "EISDIR", lambda b: f"{b}/home/.netrc", comm="wget",
        description="~/.netrc is a directory: it opens, the read fails EISDIR, wget goes on without a login (401)"),
    _sc("t77_openssl_req_csr_output_immutable", "openssl req -new (a CSR of a client key)",
        _in_home(OPENSSL, "req", "-new", "-key", "{b}/pki/client.key", "-subj", "/CN=t77", "-out",
                 "{b}/pki/client.csr"), _openssl_setup, OPENS, "EPERM", lambda b: f"{b}/pki/client.csr",
        comm="openssl", says="for writing, Operation not permitted", recovered=False, description="the CSR to rewrite is immutable (chattr +i): its open for writing fails EPERM"),
]


# --- good runs whose credential files legitimately differ ----------------------------------------------------------------
def _ssh_g_quiet(base: Path, run: int) -> None:
    _ssh_config(base)
    if run % 2 == 0:
        _known_hosts(base)


def _gpg_fill(base: Path) -> None:
    env = {**os.environ, "HOME": str(base / "home"), "GNUPGHOME": str(base / "gnupg")}
    _run(GPG, "--batch", "--list-keys", env=env)


def _gpg_list_quiet(base: Path, run: int) -> None:
    _home(base)
    (base / "gnupg").mkdir(mode=0o700)
    (base / "gnupg").chmod(0o700)
    if run % 2 == 1:
        _gpg_fill(base)


def _gpg_trust_quiet(base: Path, run: int) -> None:
    _home(base)
    (base / "gnupg").mkdir(mode=0o700)
    (base / "gnupg").chmod(0o700)
    _gpg_fill(base)
    write_file(base / "ownertrust.txt", "0123456789ABCDEF0123456789ABCDEF01234567:6:\n"
                                        "89ABCDEF0123456789ABCDEF0123456789ABCDEF:4:\n")


AGENT_SH = ('HOME="$1/home"; export HOME; if [ -f "$1/agent.env" ]; then . "$1/agent.env"; export SSH_AUTH_SOCK; '
            'else unset SSH_AUTH_SOCK; fi; shift; exec "$@"')


def _agent_quiet(base: Path, run: int) -> None:
    _ssh_config(base)
    _known_hosts(base)
    BANNER.start()
    if run % 2 == 0:
        d = base / "agent" / f"ssh-{secrets.token_hex(5)}"
        d.mkdir(parents=True, mode=0o700)
        path = d / f"agent.{4000 + secrets.randbelow(60000)}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        sock.listen(1)
        _AGENT_SOCKETS.append(sock)
        write_file(base / "agent.env", f"SSH_AUTH_SOCK={path}\n")


def _keygen_r_quiet(base: Path, run: int) -> None:
    _home(base)
    _known_hosts(base)
    if run % 2 == 1:
        write_file(base / "home" / ".ssh" / "known_hosts.old", "example.org ssh-ed25519 AAAA-old\n", 0o600)


def _curl_quiet(base: Path, run: int) -> None:
    _home(base)
    AUTH.start()
    (base / "out").mkdir()
    _netrc(base, base / "netrc", run)


def _capath_quiet(base: Path, run: int) -> None:
    m = material()
    _home(base)
    (base / "certs").mkdir()
    shutil.copy(m / "ca.pem", base / "certs" / "t77-ca.pem")
    for k in range((run * 3) % 5):  # 0, 3, 1, 4, 2 other certificates
        shutil.copy(m / f"other{k}.pem", base / "certs" / f"other{k}.pem")
    _run(OPENSSL, "rehash", str(base / "certs"))
    shutil.copy(m / "leaf.pem", base / "leaf.pem")


GIT_FILL_SH = ('HOME="$1/home" GIT_TERMINAL_PROMPT=0; export HOME GIT_TERMINAL_PROMPT; '
               f'printf "protocol=https\\nhost=git.example.org\\n\\n" | {GIT} -c credential.helper="store --file=$1/creds" '
               'credential fill')


def _git_store_quiet(base: Path, run: int) -> None:
    _home(base)
    entries = ["https://bob:pw1@mirror.example.org\n", f"https://{USER}:{PASSWORD}@git.example.org\n",
               "https://ci:tok@ci.example.net\n"]
    k = run % 3
    write_file(base / "creds", "".join(entries[k:] + entries[:k]), 0o600)


def _noise(name, argv, setup, description):
    return NoAnomalyCase(name, argv, setup, runs=RUNS, description=description)


QUIET_SEVENTYSEVENTH: list[NoAnomalyCase] = [
    _noise("t77_ssh_print_config_with_and_without_known_hosts",
           _in_home(SSH, "-G", "-F", "{b}/ssh_config", "127.0.0.1"), _ssh_g_quiet,
           "ssh -G with the user's known_hosts present in some runs, absent in others"),
    _noise("t77_gpg_first_run_creates_homedir_files_or_reuses_them", _gpg_argv("--list-keys"), _gpg_list_quiet,
           "gpg --list-keys creating pubring.kbx and trustdb.gpg in an empty homedir, or reading them"),
    _noise("t77_gpg_ownertrust_import_takes_locks_of_other_names",
           _gpg_argv("--import-ownertrust", "{b}/ownertrust.txt"), _gpg_trust_quiet,
           "gpg --import-ownertrust: dotlock files named by a heap address and the pid, other each run"),
    _noise("t77_ssh_with_and_without_an_agent_socket",
           lambda b: ["/bin/sh", "-c", AGENT_SH, "sh", str(b), SSH, *[a.replace("{b}", str(b)) for a in SSH_TO]],
           _agent_quiet, "ssh to the stub server with SSH_AUTH_SOCK a socket of a random name, or unset"),
    _noise("t77_ssh_keygen_remove_host_through_a_random_temporary",
           _in_home(SSH_KEYGEN, "-R", "example.org", "-f", "{b}/home/.ssh/known_hosts"), _keygen_r_quiet,
           "ssh-keygen -R: a temporary of a random name renamed over known_hosts; an old known_hosts.old or none"),
    _noise("t77_curl_netrc_file_entries_in_another_order",
           _in_home(CURL, "-sS", "--netrc-file", "{b}/netrc", "-o", "{b}/out/secret.txt",
                    f"http://127.0.0.1:{AUTH_PORT}/secret.txt"), _curl_quiet,
           "curl --netrc-file: the matching machine entry first, second or third"),
    _noise("t77_openssl_verify_capath_holding_other_certificates",
           _in_home(OPENSSL, "verify", "-CApath", "{b}/certs", "{b}/leaf.pem"), _capath_quiet,
           "openssl verify -CApath: the CA's hash link beside 0 to 4 unrelated certificates"),
    _noise("t77_git_credential_store_entries_in_another_order", sh_argv(GIT_FILL_SH), _git_store_quiet,
           "git credential fill through credential-store: the matching entry first, second or third"),
]


def quiet_teardown() -> None:
    """Stop the stub servers and close the agent sockets the setups made (the case directories go with the harness's
    clean-up; the key material stays for the session, under the harness's ROOT, removed at exit)."""
    BANNER.stop()
    AUTH.stop()
    while _AGENT_SOCKETS:
        with contextlib.suppress(OSError):
            _AGENT_SOCKETS.pop().close()
