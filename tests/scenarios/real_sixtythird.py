"""A sixty-third set of real programs with one real fault each: **corrupt or truncated input data
read by real tools** -- a file the job reads was cut short (a copy that ran out of space, a transfer
that stopped) or garbled on the bad day, and the tool reading it decides so and gives up:

- ``unzip -q -o`` on a zip whose second member's deflate data was garbled in transfer (64 bytes):
  it extracts the first member as the good runs do, inflates the second to a "bad CRC" (or
  "invalid compressed data"), asks isatty of stdout (ioctl ENOTTY, as on any file) and writes its
  message to stderr -- the good runs (-q) write nothing there -- then goes on with the third
  member and exits 2. (Cut in half instead, the zip has no central directory and unzip, after its
  message, stats batch.zip.zip and batch.zip.ZIP (ENOENT): the error ranks first there, and an
  earlier set has unzip's ENOENT);
- ``openssl x509 -fingerprint`` on a PEM certificate cut mid-base64: the decoders re-read the
  file a dozen times (lseek and read of the same file, as the good runs' one read) and then
  write "Could not read certificate" to stderr, exit 1;
- ``lz4 -q -t`` on a frame cut short: the read of the file returns less, the next two reads 0,
  then "Error 68 : Unfinished stream" to stderr;
- ``jq -e`` on a JSON document cut mid-array: "parse error: Unfinished JSON term at EOF" to
  stderr, exit 4 (the good runs write their answer to the job's out.txt, nothing to stderr);
- ``brotli -t`` on a stream cut short: "corrupt input" to stderr, exit 1;
- ``lzop -q -t`` on a file cut mid-block: "lzop: unexpected end of file" to stderr, exit 1;
- python3 ``tomllib.load`` of the job's config cut mid-array: TOMLDecodeError, its traceback to
  stderr;
- the dynamic loader (ld.so) mapping sqlite3's libsqlite3.so.0 from the job's vendored copy (the
  job's env file sets LD_LIBRARY_PATH, the same in every run), cut to 512 bytes on the bad day:
  its read of the ELF header returns 512 of 832 bytes and it reads the program headers
  (pread64, short too -- the good runs never pread that library: their headers were in the first
  832 bytes), closes it and writes "cannot read file data"; exit 127. No call fails: the
  expectation is the first of these calls at the library, no errno;
- ``timeout 60 bin/sha256sum -c`` where the job's vendored sha256sum was cut to 100 bytes (an
  ELF header with its program headers missing): the kernel refuses it, execve ENOEXEC (glibc's
  execvp then hands it to /bin/sh as a script, which fails on it too).

The expectations are what ``strace -f`` shows for the bad run: where no call fails (all but the
last), the first event of the bad run no good run has, with no errno -- the error message's
write to stderr (/dev/null in the recordings) for the tools, the short pread64 for ld.so. Every run
of a case has the same command line (``sh -c`` with the case's directory); the good runs read valid
data of other sizes and contents each time (``RunTurns``).

Noise cases (``QUIET_SIXTYTHIRD``): the same tools on valid inputs of other sizes and contents every
run -- unzip of archives of other file counts, jq of documents of other lengths, lz4 -t of frames of
other sizes, openssl x509 of three certificates, tomllib of configs of other lengths, sqlite3 on
its vendored library with databases of other row counts.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
import zipfile
from pathlib import Path

from .files import token, write_file
from .harness import PY, ROOT, NoAnomalyCase, RunTurns, Scenario, sh_argv

WRITE = frozenset({"write", "writev", "pwrite64"})
ELF_READ = frozenset({"read", "pread64", "close", "newfstatat", "fstat"})
EXECVE = frozenset({"execve", "execveat"})
STDERR = "/dev/null"  # the recordings' stdout and stderr
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
_TURNS = RunTurns()


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, env=ENV)


def _cut(path: Path, fraction: float) -> None:
    """Cut `path` to `fraction` of its size (a copy that stopped part way)."""
    data = path.read_bytes()
    path.write_bytes(data[: max(1, int(len(data) * fraction))])


def _lines(n: int, word: int = 4) -> str:
    return "".join(f"{i} {token(word)} node{i % 17} {random.randint(0, 10**6)}\n" for i in range(n))


# --- unzip on a zip with a damaged member -----------------------------------------------------------------------------
UNZIP_SH = 'unzip -q -o "$1/in/batch.zip" -d "$1/out"'


def _zip(base: Path, files: int, lines: int, *, damaged: bool = False) -> None:
    (base / "in").mkdir()
    path = base / "in" / "batch.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(files):
            z.writestr(f"part-{i:03d}.csv", _lines(lines * (i + 1)))
    if damaged:  # 64 bytes in the middle of the second member's deflate data garbled in transfer
        member = zipfile.ZipFile(path).infolist()[1]
        start = member.header_offset + 30 + len(member.filename) + member.compress_size // 2
        data = bytearray(path.read_bytes())
        data[start:start + 64] = bytes(b ^ 0x5A for b in data[start:start + 64])
        path.write_bytes(bytes(data))


def unzip_build(base: Path, bad: bool) -> None:
    files, lines = _TURNS.pick(base, bad, [(2, 40), (5, 8), (1, 300)], (3, 60))
    _zip(base, files, lines, damaged=bad)


# --- openssl x509 on a PEM cut mid-base64 -----------------------------------------------------------------------------
X509_SH = 'openssl x509 -noout -fingerprint -sha256 -in "$1/pki/node.pem" > "$1/fingerprint.txt"'


@functools.cache
def _certs() -> tuple[bytes, ...]:
    """Four self-signed certificates of other subjects and key types, made once a session."""
    pki = ROOT / "t63-pki"
    pki.mkdir(parents=True, exist_ok=True)
    out = []
    for i, (key, opt) in enumerate([("rsa:2048", None), ("ec", "ec_paramgen_curve:prime256v1"),
                                    ("rsa:3072", None), ("ec", "ec_paramgen_curve:secp384r1")]):
        argv = ["openssl", "req", "-x509", "-newkey", key, "-nodes", "-keyout", f"{pki}/k{i}.pem",
                "-out", f"{pki}/c{i}.pem", "-days", "30", "-subj", f"/CN=node{i}-{'x' * (i * 7)}.t63"]
        if opt:
            argv[5:5] = ["-pkeyopt", opt]
        _run(*argv)
        out.append((pki / f"c{i}.pem").read_bytes())
    return tuple(out)


def _x509_tree(base: Path, cert: int, *, cut: bool = False) -> None:
    pem = write_file(base / "pki" / "node.pem", _certs()[cert])
    if cut:
        _cut(pem, 0.7)


def x509_build(base: Path, bad: bool) -> None:
    _x509_tree(base, _TURNS.pick(base, bad, [1, 2, 3], 0), cut=bad)


# --- lz4 -t on a frame cut short --------------------------------------------------------------------------------------
LZ4_SH = 'lz4 -q -t "$1/spool/events.lz4"'


def _lz4_tree(base: Path, lines: int, *, cut: bool = False) -> None:
    raw = write_file(base / "spool" / "events.txt", _lines(lines, 8))
    _run("lz4", "-q", "-f", str(raw), str(base / "spool" / "events.lz4"))
    raw.unlink()
    if cut:
        _cut(base / "spool" / "events.lz4", 0.4)


def lz4_build(base: Path, bad: bool) -> None:
    _lz4_tree(base, _TURNS.pick(base, bad, [300, 30, 3000], 1500), cut=bad)


# --- jq on a JSON document cut mid-array ------------------------------------------------------------------------------
JQ_SH = 'jq -e ".nodes | map(.gpus) | add" "$1/inventory.json" > "$1/out.txt"'


def _jq_tree(base: Path, nodes: int, *, cut: bool = False) -> None:
    doc = {"cluster": token(3), "nodes": [{"name": f"n{i:04d}-{token(2)}", "gpus": random.randint(1, 8),
                                           "rack": i // 16} for i in range(nodes)]}
    path = write_file(base / "inventory.json", json.dumps(doc, indent=1))
    if cut:
        _cut(path, 0.6)


def jq_build(base: Path, bad: bool) -> None:
    _jq_tree(base, _TURNS.pick(base, bad, [40, 400, 4], 200), cut=bad)


# --- brotli -t on a stream cut short ----------------------------------------------------------------------------------
BROTLI_SH = 'brotli -t "$1/assets/bundle.js.br"'


def brotli_build(base: Path, bad: bool) -> None:
    lines = _TURNS.pick(base, bad, [100, 1000, 10], 600)
    raw = write_file(base / "assets" / "bundle.js", "".join(f"var v{i} = '{token(6)}';\n" for i in range(lines)))
    _run("brotli", "-q", "5", "-f", "-o", str(raw) + ".br", str(raw))
    raw.unlink()
    if bad:
        _cut(base / "assets" / "bundle.js.br", 0.5)


# --- lzop -t on a file cut mid-block ----------------------------------------------------------------------------------
LZOP_SH = 'lzop -q -t "$1/archive/day.log.lzo"'


def lzop_build(base: Path, bad: bool) -> None:
    lines = _TURNS.pick(base, bad, [200, 2000, 20], 1200)
    raw = write_file(base / "archive" / "day.log", _lines(lines, 6))
    _run("lzop", "-q", "-f", "-o", str(raw) + ".lzo", str(raw))
    raw.unlink()
    if bad:
        _cut(base / "archive" / "day.log.lzo", 0.6)


# --- python3 tomllib on a config cut mid-array ------------------------------------------------------------------------
TOML_PY = ("import sys, tomllib\n"
           "with open(sys.argv[1] + '/job.toml', 'rb') as f:\n"
           "    cfg = tomllib.load(f)\n"
           "open(sys.argv[1] + '/plan.txt', 'w').write(f\"{cfg['job']['name']} {len(cfg['job']['nodes'])}\\n\")\n")
TOML_SH = f'exec {PY[0]} -S -c "$2" "$1"'


def _toml_tree(base: Path, nodes: int, *, cut: bool = False) -> None:
    node_list = ", ".join(f'"n{i:03d}"' for i in range(nodes))
    text = (f'[job]\nname = "train-{token(3)}"\nnodes = [{node_list}]\nretries = {random.randint(1, 5)}\n\n'
            f'[io]\nscratch = "/scratch/{token(4)}"\n')
    path = write_file(base / "job.toml", text)
    if cut:  # the config's copy stopped inside the nodes array
        path.write_text(text[: text.index("nodes = [") + 9 + len(node_list) // 2])


def toml_build(base: Path, bad: bool) -> None:
    _toml_tree(base, _TURNS.pick(base, bad, [4, 40, 1], 16), cut=bad)


# --- ld.so: sqlite3's vendored libsqlite3.so.0 (LD_LIBRARY_PATH from the job's env file) cut short --------------------
SQLITE_SH = ('. "$1/job.env"; export LD_LIBRARY_PATH; '
             'sqlite3 "$1/state.db" "select count(*), max(step) from runs" > "$1/out.txt"')
LIBSQLITE = "libsqlite3.so.0"


@functools.cache
def _libsqlite() -> Path:
    """The system's libsqlite3.so.0 (what the job vendors)."""
    out = subprocess.run(["ldd", shutil.which("sqlite3") or "/usr/bin/sqlite3"], capture_output=True, text=True,
                         env=ENV).stdout
    line = next(ln for ln in out.splitlines() if LIBSQLITE in ln)
    return Path(line.split("=>")[1].split("(")[0].strip()).resolve()


def _sqlite_tree(base: Path, rows: int, *, cut_lib: bool = False) -> None:
    lib = base / "vendor" / "lib"
    lib.mkdir(parents=True)
    data = _libsqlite().read_bytes()
    # the bad day's deploy ran out of space 512 bytes into the library
    write_file(lib / LIBSQLITE, data[:512] if cut_lib else data)
    write_file(base / "job.env", f"LD_LIBRARY_PATH={lib}\n")
    import sqlite3

    con = sqlite3.connect(base / "state.db")
    with con:
        con.execute("create table runs (step integer, loss real, note text)")
        con.executemany("insert into runs values (?, ?, ?)",
                        [(i, random.random(), token(4)) for i in range(rows)])
    con.close()


def sqlite_build(base: Path, bad: bool) -> None:
    _sqlite_tree(base, _TURNS.pick(base, bad, [10, 1000, 100], 50), cut_lib=bad)


# --- timeout running the job's vendored sha256sum, cut to 100 bytes ---------------------------------------------------
TIMEOUT_SH = 'cd "$1/shards" && timeout 60 "$1/bin/sha256sum" --quiet -c SHA256SUMS'


def timeout_build(base: Path, bad: bool) -> None:
    shards = _TURNS.pick(base, bad, [3, 1, 6], 4)
    binary = Path(shutil.which("sha256sum") or "/usr/bin/sha256sum").read_bytes()
    # the bad day's copy stopped 100 bytes in: an ELF header whose program headers are missing
    write_file(base / "bin" / "sha256sum", binary[:100] if bad else binary, mode=0o755)
    for i in range(shards):
        write_file(base / "shards" / f"shard-{i}.bin", token(200 * (i + 1)))
    _run("sh", "-c", f'cd "{base}/shards" && sha256sum shard-*.bin > SHA256SUMS')


def _sc(name, program, argv, build, probe, errno, path, *, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, description=description)


REAL_SIXTYTHIRD: list[Scenario] = [
    _sc("t63_unzip_batch_member_damaged", "unzip -q -o batch.zip", sh_argv(UNZIP_SH), unzip_build,
        WRITE, None, lambda b: STDERR,
        description="the second member's deflate data garbled: 'bad CRC' to stderr, the third member extracted as "
                    "in good runs, exit 2 (no call fails)"),
    _sc("t63_openssl_x509_pem_cut_mid_base64", "openssl x509 -fingerprint -in node.pem", sh_argv(X509_SH),
        x509_build, WRITE, None, lambda b: STDERR,
        description="the decoders re-read the cut PEM (lseek, read) and give up: 'Could not read certificate' to "
                    "stderr, exit 1"),
    _sc("t63_lz4_test_frame_cut_short", "lz4 -q -t events.lz4", sh_argv(LZ4_SH), lz4_build,
        WRITE, None, lambda b: STDERR,
        description="the frame ends early: reads return 0, 'Error 68 : Unfinished stream' to stderr"),
    _sc("t63_jq_inventory_json_cut", "jq -e ... inventory.json", sh_argv(JQ_SH), jq_build,
        WRITE, None, lambda b: STDERR,
        description="'parse error: Unfinished JSON term at EOF' to stderr, exit 4; good runs write out.txt only"),
    _sc("t63_brotli_test_bundle_cut", "brotli -t bundle.js.br", sh_argv(BROTLI_SH), brotli_build,
        WRITE, None, lambda b: STDERR, description="'corrupt input [...]' to stderr, exit 1"),
    _sc("t63_lzop_test_day_log_cut", "lzop -q -t day.log.lzo", sh_argv(LZOP_SH), lzop_build,
        WRITE, None, lambda b: STDERR,
        description="the block's read returns less, the next 0: 'lzop: unexpected end of file' to stderr"),
    _sc("t63_python3_tomllib_config_cut", "python3 tomllib.load(job.toml)", sh_argv(TOML_SH, TOML_PY), toml_build,
        WRITE, None, lambda b: STDERR,
        description="the config ends inside the nodes array: TOMLDecodeError, its traceback to stderr"),
    _sc("t63_ld_so_vendored_libsqlite3_cut", "ld.so loading sqlite3's vendored libsqlite3.so.0 (LD_LIBRARY_PATH)",
        sh_argv(SQLITE_SH), sqlite_build, ELF_READ, None, lambda b: f"{b}/vendor/lib/{LIBSQLITE}",
        description="the library's copy is 512 bytes: the header read returns 512 of 832, the program headers' "
                    "pread64 is short, 'cannot read file data', exit 127 (no call fails)"),
    _sc("t63_timeout_vendored_sha256sum_cut", "timeout 60 bin/sha256sum -c", sh_argv(TIMEOUT_SH), timeout_build,
        EXECVE, "ENOEXEC", lambda b: f"{b}/bin/sha256sum",
        description="the vendored binary is 100 bytes: execve ENOEXEC, then /bin/sh refuses it as a script"),
]


# --- good-vs-good noise -----------------------------------------------------------------------------------------------
def unzip_noise(base: Path, run: int) -> None:
    _zip(base, *[(4, 20), (1, 500), (8, 3)][run % 3])


def jq_noise(base: Path, run: int) -> None:
    _jq_tree(base, [7, 700, 70][run % 3])


def lz4_noise(base: Path, run: int) -> None:
    _lz4_tree(base, [50, 5000, 500][run % 3])


def x509_noise(base: Path, run: int) -> None:
    _x509_tree(base, [0, 3, 1][run % 3])


def toml_noise(base: Path, run: int) -> None:
    _toml_tree(base, [2, 60, 12][run % 3])


def sqlite_noise(base: Path, run: int) -> None:
    _sqlite_tree(base, [3, 3000, 300][run % 3])


QUIET_SIXTYTHIRD: list[NoAnomalyCase] = [
    NoAnomalyCase("t63_unzip_batches_of_other_sizes", sh_argv(UNZIP_SH), unzip_noise,
                  description="unzip of 4, 1, 8 members of other sizes"),
    NoAnomalyCase("t63_jq_inventories_of_other_lengths", sh_argv(JQ_SH), jq_noise,
                  description="jq over 7, 700, 70 nodes"),
    NoAnomalyCase("t63_lz4_test_frames_of_other_sizes", sh_argv(LZ4_SH), lz4_noise,
                  description="lz4 -t of 50, 5000, 500 lines"),
    NoAnomalyCase("t63_openssl_x509_other_certificates", sh_argv(X509_SH), x509_noise,
                  description="openssl x509 of an RSA 2048, an EC P-384 and an EC P-256 certificate"),
    NoAnomalyCase("t63_python3_tomllib_configs_of_other_lengths", sh_argv(TOML_SH, TOML_PY), toml_noise,
                  description="tomllib of configs naming 2, 60, 12 nodes"),
    NoAnomalyCase("t63_sqlite3_vendored_lib_other_databases", sh_argv(SQLITE_SH), sqlite_noise,
                  description="sqlite3 through its vendored library on databases of 3, 3000, 300 rows"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case of this set (no servers, no mounts): the session's root goes at exit."""
