"""Round thirty-one (diff side): a blind battery against `baseline diff`, `baseline allowlist
learn`, `baseline export`, `baseline coverage` and `baseline report`, every case run as a real
process (no mocks), aimed at angles the earlier rounds did not take:

* Parquet files that are valid Parquet but wrong for the events schema (a column missing, a
  nested list or struct where a string belongs, a required column all null, NaN doubles for the
  time, an unsigned seq, millisecond timestamps, an Arrow map for the metadata, zero row groups,
  footer key-values that lie about the table or the version) -- through export and allowlist
  learn as well as diff;
* truncations and byte flips of the footer at many offsets, a footer length that lies, data
  pages corrupted in place, a gzip'd file named .parquet inside a directory of good traces;
* layouts that must change nothing (dictionary columns, one row per row group, a schema
  version 1 file, rows shuffled, a garbage footer summary), a 20 MB string, thousands of trace ids;
* outputs (-o / --html / --out / stdout) onto a full 64 KiB tmpfs, a tmpfs remounted read-only,
  a directory an unprivileged user may not write, /dev/full, a pipe closed after one byte, a
  closed stdout, a symlink loop, a FIFO, a directory, a name past NAME_MAX; kill -9 at moments
  of a large write; umask 077 and 027; concurrent runs onto one output.

Each refusal: exit status 2, one line on stderr naming the file and what was wrong, never a
traceback, and nothing written (an existing output byte-for-byte unchanged).

Written blind (README.md, docs/architecture.md, the commands' --help, tracer/schema.py).
Mounts are made by the test itself (root only) and unmounted in a `finally`. Its four strict
xfails were fixed in the same round: a corrupt data page that export read as nulls (polars), a
column chunk path that is not UTF-8 (an internal error), a newline in an unreadable file's name
shown as a space, coverage's relative -o naming its staging directory on ENOSPC."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
BASELINE = str(REPO / ".venv" / "bin" / "baseline")
RECORDINGS = REPO / "tests" / "recordings" / "c_rehash_readonly"
GOOD0, GOOD1, BAD = (RECORDINGS / n for n in ("good0.parquet", "good1.parquet", "bad.parquet"))
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# every user can enter it (the unprivileged cases run in it); one per user, as another user's
# (a root run's, left behind) cannot be written into
SCRATCH = Path("/tmp") / f"rb31d-{os.geteuid()}"
IS_ROOT = os.geteuid() == 0

needs_root = pytest.mark.skipif(not IS_ROOT, reason="mounts and setpriv need root")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _child_signals() -> None:
    # this module may run under nohup (SIGHUP/SIGINT ignored): give the children defaults
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)


def run(args, *, cwd, umask=None, user=None, stdout=subprocess.PIPE, timeout=120):
    cmd = [BASELINE, *(a if isinstance(a, bytes) else str(a) for a in args)]
    if user == "nobody":
        tools_run_as_nobody()
        cmd = NOBODY + cmd

    def pre():
        _child_signals()
        if umask is not None:
            os.umask(umask)

    p = subprocess.run(cmd, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout,
                       preexec_fn=pre, stdin=subprocess.DEVNULL)
    p.err = p.stderr.decode("utf-8", "replace")
    p.out = (p.stdout or b"").decode("utf-8", "replace")
    return p


def run_all(jobs, workers=2):
    """Run independent (args, kwargs) jobs two at a time; their results in order."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: run(job[0], **job[1]), jobs))


def assert_refused(p, *needles):
    err = p.err
    for word in err.split():  # an internal error's crash file: the fault is asserted below, leave no debris
        if word.startswith("/tmp/baseline-crash-") and word.endswith(".txt"):
            Path(word).unlink(missing_ok=True)
    assert p.returncode == 2, (p.returncode, err[-3000:])
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    assert lines[0].startswith("baseline: error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree(path) -> dict[str, str]:
    """Every file below `path` (hidden ones included) with its hash: what a run left."""
    out = {}
    for root, dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, path)] = sha(p) if os.path.isfile(p) else "special"
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path) + "/"] = "dir"
    return out


@pytest.fixture
def work():
    """A scratch directory every user can enter (the unprivileged cases run in it)."""
    SCRATCH.mkdir(mode=0o755, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="t-", dir=SCRATCH))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def dataset():
    """A small simulated fleet with its audit (for `report` and `coverage`)."""
    SCRATCH.mkdir(mode=0o755, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="ds-", dir=SCRATCH))
    d.chmod(0o755)
    ds = d / "fleet"
    try:
        for args in (["simulate", "--hosts", "2", "--hours", "1", "--seed", "31", "-o", ds],
                     ["learn", ds], ["audit", ds]):
            p = run(args, cwd=d, timeout=300)
            assert p.returncode == 0, p.err[-2000:]
        for root, dirs, files in os.walk(d):  # readable by the unprivileged cases
            for n in dirs + files:
                os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
        yield ds
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def tiny_tmpfs(where: Path, size="64k"):
    where.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(volume: Path) -> None:
    """Fill a tmpfs to the last block."""
    fd = os.open(volume / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def setcol(table: pa.Table, name: str, arr) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, arr.type), arr)


def recording(name=BAD) -> pa.Table:
    return pq.read_table(name)


# ---------------------------------------------------------------------------------------------
# valid Parquet, wrong for the schema: diff (as BAD and as GOOD), export, allowlist learn
# ---------------------------------------------------------------------------------------------
def _wrong(kind: str, src: Path, dest: Path) -> tuple[str, ...]:
    """Write a file `kind` made of the recording `src`; returns what the refusal must name."""
    t = recording(src)
    n = t.num_rows
    meta = t.schema.metadata
    if kind == "missing_probe":
        pq.write_table(t.drop_columns(["probe"]), dest)
        return ("'probe'", "no such column")
    if kind == "path_as_list":
        pq.write_table(setcol(t, "path", pa.array([[v] for v in t["path"].to_pylist()], pa.list_(pa.string()))), dest)
        return ("'path'", "list")
    if kind == "path_as_struct":
        pq.write_table(setcol(t, "path", pa.array([{"a": v} for v in t["path"].to_pylist()],
                                                  pa.struct([("a", pa.string())]))), dest)
        return ("'path'", "struct")
    if kind == "ret_all_null":
        pq.write_table(setcol(t, "ret", pa.nulls(n, pa.int64())), dest)
        return ("'ret'", "null")
    if kind == "ts_ns_nan_doubles":
        pq.write_table(setcol(t, "ts_ns", pa.array([float("nan")] * n)), dest)
        return ("'ts_ns'", "double")
    if kind == "seq_uint64":
        pq.write_table(setcol(t, "seq", pc.cast(t["seq"], pa.uint64())), dest)
        return ("'seq'", "uint64")
    if kind == "start_time_ms":
        pq.write_table(setcol(t, "start_time", pc.cast(t["start_time"], pa.timestamp("ms", tz="UTC"), safe=False)), dest)
        return ("'start_time'", "timestamp[ms")
    if kind == "metadata_as_map":
        pq.write_table(setcol(t, "metadata", pa.nulls(n, pa.map_(pa.string(), pa.string()))), dest)
        return ("'metadata'", "map")
    if kind == "zero_row_groups":
        pq.ParquetWriter(dest, t.schema).close()
        return ("expected events",)
    if kind == "footer_says_counters":
        pq.write_table(t.replace_schema_metadata({**meta, b"tracebase.table": b"counters"}), dest)
        return ("'events'", "'counters'")
    if kind == "version_from_the_future":
        pq.write_table(t.replace_schema_metadata({**meta, b"tracebase.schema_version": b"99"}), dest)
        return ("99",)
    if kind == "version_not_utf8":
        pq.write_table(t.replace_schema_metadata({**meta, b"tracebase.schema_version": b"\xff\xfe"}), dest)
        return ("tracebase.schema_version", "UTF-8")
    if kind == "no_footer_key_values":
        pq.write_table(t.replace_schema_metadata(None), dest)
        return ("'events'",)
    raise AssertionError(kind)


WRONG = ["missing_probe", "path_as_list", "path_as_struct", "ret_all_null", "ts_ns_nan_doubles",
         "start_time_ms", "metadata_as_map", "zero_row_groups", "footer_says_counters", "version_from_the_future"]


@pytest.mark.parametrize("kind", WRONG)
def test_a_trace_wrong_for_the_schema_is_refused_by_diff_export_and_learn(work, kind):
    bad = work / f"{kind}.parquet"
    needles = _wrong(kind, BAD, bad)
    good = work / f"good-{kind}.parquet"
    _wrong(kind, GOOD0, good)
    before = sha(bad)
    jobs = [((["diff", GOOD0, bad]), bad.name), ((["export", bad, "-o", work / "out.json"]), bad.name),
            ((["allowlist", "learn", good, "-o", work / "l.yaml"]), good.name)]
    if kind in ("path_as_list", "ret_all_null", "zero_row_groups"):  # (a GOOD trace: the same checks)
        jobs.append(((["diff", good, GOOD1, BAD]), good.name))
    for (_args, name), p in zip(jobs, run_all([(args, {"cwd": work}) for args, _ in jobs]), strict=True):
        assert_refused(p, name, *needles)
    assert not (work / "out.json").exists() and not (work / "l.yaml").exists()
    assert sha(bad) == before
    assert sorted(os.listdir(work)) == sorted([bad.name, good.name])


# ---------------------------------------------------------------------------------------------
# the footer fuzzed: truncations, flips, a length that lies
# ---------------------------------------------------------------------------------------------
def _footer_cases() -> list[tuple[str, bytes, bool]]:
    """(name, bytes, must_refuse): truncations and lying lengths must be refused; a flipped byte
    may land in a statistic and leave a readable file, but never a traceback."""
    data = BAD.read_bytes()
    n = len(data)
    flen = struct.unpack("<I", data[-8:-4])[0]
    rnd = random.Random(3101)
    cases = []
    offsets = {0, 8, n // 2, n - flen - 8, n - flen // 2, n - 9, n - 4, n - 1}
    offsets |= {rnd.randrange(n - flen - 8, n) for _ in range(1)}
    for off in sorted(offsets):
        cases.append((f"cut{off}", data[:off], True))
    for length in (0, flen + 1, 2**32 - 1):
        b = bytearray(data)
        b[-8:-4] = struct.pack("<I", length)
        cases.append((f"len{length}", bytes(b), True))
    # a flip inside a column chunk's path_in_schema string is test_a_column_chunk_path_...'s fault
    footer = data[n - 8 - flen:n - 8]
    chunk_paths = set()
    for name in pq.ParquetFile(BAD).schema_arrow.names:
        at = footer.rfind(name.encode())
        chunk_paths |= set(range(n - 8 - flen + at, n - 8 - flen + at + len(name)))
    flips = 0
    while flips < 4:
        b = bytearray(data)
        pos = rnd.randrange(n - flen - 8, n - 8)
        if pos in chunk_paths:
            continue
        flips += 1
        b[pos] ^= rnd.choice([0x01, 0x80, 0xFF])
        cases.append((f"flip{pos}", bytes(b), False))
    b = bytearray(data)
    b[-4:] = b"PAR2"
    cases.append(("magic", bytes(b), True))
    return cases


def test_a_bad_trace_cut_or_flipped_anywhere_in_its_footer_is_one_line(work):
    cases = _footer_cases()

    def one(case):
        name, body, must_refuse = case
        f = work / f"{name}.parquet"
        f.write_bytes(body)
        return case, run(["diff", GOOD0, GOOD1, f], cwd=work)

    problems = []
    with ThreadPoolExecutor(2) as pool:
        for (name, _body, must_refuse), p in pool.map(one, cases):
            err = p.err
            if "Traceback" in err or "internal error" in err or p.returncode not in (0, 1, 2):
                problems.append((name, p.returncode, err[-500:]))
            elif must_refuse and p.returncode != 2:
                problems.append((name, "accepted", p.returncode))
            elif p.returncode == 2 and (len(err.strip().splitlines()) != 1 or f"{name}.parquet" not in err):
                problems.append((name, err[-500:]))
    assert not problems, problems


def test_a_column_chunk_path_that_is_not_utf8_is_refused_in_one_line(work):
    data = GOOD0.read_bytes()
    at = data.rfind(b"kernel_release")  # the last: the column chunk's path_in_schema in the footer
    assert at > len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    f = work / "chunkpath.parquet"
    f.write_bytes(data[:at] + b"kernel_relea\xf3e" + data[at + len(b"kernel_release"):])
    assert_refused(run(["diff", GOOD1, f], cwd=work), "chunkpath.parquet")
    assert_refused(run(["diff", f, GOOD1, BAD], cwd=work), "chunkpath.parquet")
    assert_refused(run(["allowlist", "learn", f, "-o", work / "l.yaml"], cwd=work), "chunkpath.parquet")
    assert not (work / "l.yaml").exists()


def test_export_and_learn_of_a_directory_holding_cut_files_name_each(work):
    data = GOOD0.read_bytes()
    d = work / "d"
    d.mkdir()
    shutil.copy(GOOD1, d / "a.parquet")
    (d / "b.parquet").write_bytes(data[:len(data) // 3])
    for p in run_all([(["export", d, "-o", work / "o.json"], {"cwd": work}),
                      (["allowlist", "learn", d, "-o", work / "l.yaml"], {"cwd": work}),
                      (["diff", d, BAD], {"cwd": work})]):
        assert_refused(p, "b.parquet")
    assert not (work / "o.json").exists() and not (work / "l.yaml").exists()


# ---------------------------------------------------------------------------------------------
# a data page corrupted in place (the footer intact)
# ---------------------------------------------------------------------------------------------
def _corrupt_path_levels(dest: Path) -> None:
    """bad.parquet with 8 bytes of the `path` column's data page (its definition levels, stored
    uncompressed) overwritten: pyarrow refuses the file ("Malformed levels")."""
    data = bytearray(BAD.read_bytes())
    col = pq.ParquetFile(BAD).metadata.row_group(0).column(pq.ParquetFile(BAD).schema_arrow.get_field_index("path"))
    assert col.path_in_schema == "path"
    pos = 7485  # inside the path column's data page (found by a seeded fuzz run)
    assert col.data_page_offset <= pos < col.data_page_offset + col.total_compressed_size, \
        "recording changed: re-find a position"
    data[pos:pos + 8] = bytes.fromhex("c8cbccc935f6cd1f")
    dest.write_bytes(bytes(data))
    with pytest.raises(Exception, match="(?i)malformed|corrupt|invalid"):
        pq.read_table(dest)


def test_diff_refuses_a_trace_whose_path_page_is_corrupt(work):
    f = work / "pagerot.parquet"
    _corrupt_path_levels(f)
    assert_refused(run(["diff", GOOD0, f], cwd=work), "pagerot.parquet", "'path'")


def test_export_refuses_a_trace_whose_path_page_is_corrupt(work):
    f = work / "pagerot.parquet"
    _corrupt_path_levels(f)
    p = run(["export", f, "-o", work / "out.json"], cwd=work)
    assert_refused(p, "pagerot.parquet")
    assert not (work / "out.json").exists()


# ---------------------------------------------------------------------------------------------
# gzip'd files named .parquet
# ---------------------------------------------------------------------------------------------
def test_a_gzipd_trace_named_parquet_among_good_ones_is_named_by_every_reader(work):
    d = work / "goods"
    d.mkdir()
    shutil.copy(GOOD0, d / "g0.parquet")
    shutil.copy(GOOD1, d / "g1.parquet")
    (d / "g2.parquet").write_bytes(gzip.compress(GOOD1.read_bytes()))
    gz_bad = work / "bad.parquet"
    gz_bad.write_bytes(gzip.compress(BAD.read_bytes()))
    listing = tree(work)
    cases = ((["diff", d, BAD], "g2.parquet"), (["diff", GOOD0, gz_bad], "bad.parquet"),
             (["export", d, "-o", work / "o.json"], "g2.parquet"),
             (["export", "--diff", d, BAD, "-o", work / "o.json"], "g2.parquet"),
             (["allowlist", "learn", d, "-o", work / "l.yaml"], "g2.parquet"))
    for (_args, name), p in zip(cases, run_all([(args, {"cwd": work}) for args, _ in cases]), strict=True):
        assert_refused(p, name, "Parquet")
    assert tree(work) == listing


# ---------------------------------------------------------------------------------------------
# layouts that must change nothing
# ---------------------------------------------------------------------------------------------
def _variant(kind: str, dest: Path) -> None:
    t = recording(GOOD0)
    meta = t.schema.metadata
    if kind == "dictionary_columns":
        for c in ("trace_id", "probe", "path", "comm", "errno"):
            t = setcol(t, c, pc.dictionary_encode(t[c]))
        pq.write_table(t, dest)
    elif kind == "a_row_group_per_row":
        pq.write_table(t, dest, row_group_size=1)
    elif kind == "rows_shuffled":
        idx = list(range(t.num_rows))
        random.Random(31).shuffle(idx)
        pq.write_table(t.take(pa.array(idx)), dest)
    elif kind == "garbage_footer_summary":
        pq.write_table(t.replace_schema_metadata({**meta, b"tracebase.trace_metadata": b"{not json"}), dest)
    elif kind == "lying_footer_summary":
        summary = json.dumps({"job_id": ["x"] * 50000}).encode()
        pq.write_table(t.replace_schema_metadata({**meta, b"tracebase.trace_metadata": summary}), dest)
    elif kind == "no_statistics_and_no_compression":
        pq.write_table(t, dest, write_statistics=False, compression="none")
    else:
        raise AssertionError(kind)


def _outcomes(f: Path, work: Path, label: str):
    e, learn, diff = run_all([(["export", f, "-o", work / f"{label}.json"], {"cwd": work}),
                              (["allowlist", "learn", f, "-o", work / f"{label}.yaml", "--json"], {"cwd": work}),
                              (["diff", f, GOOD1, BAD, "--json"], {"cwd": work})])
    assert e.returncode == 0 and "Traceback" not in e.err, e.err
    assert learn.returncode == 0, learn.err
    assert diff.returncode == 1, diff.err
    return ((work / f"{label}.json").read_bytes(), json.loads(learn.out).get("added"),
            json.loads(diff.out).get("bifurcation"))


@pytest.fixture(scope="module")
def plain_outcomes():
    SCRATCH.mkdir(mode=0o755, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="plain-", dir=SCRATCH))
    try:
        (d / "plain").mkdir()
        shutil.copy(GOOD0, d / "plain" / "good0.parquet")
        yield _outcomes(d / "plain" / "good0.parquet", d, "plain")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("kind", ["dictionary_columns", "a_row_group_per_row", "garbage_footer_summary",
                                  "no_statistics_and_no_compression"])
def test_export_and_learn_of_another_layout_give_the_same_bytes(work, kind, plain_outcomes):
    odd = work / "odd" / "good0.parquet"
    odd.parent.mkdir()
    _variant(kind, odd)
    got = _outcomes(odd, work, "odd")
    assert got[0] == plain_outcomes[0]
    assert got[1] == plain_outcomes[1]
    assert got[2] == plain_outcomes[2]


# ---------------------------------------------------------------------------------------------
# sizes and counts
# ---------------------------------------------------------------------------------------------
def test_a_20_mb_written_string_is_shown_bounded_and_exported_whole(work):
    t = recording(BAD)
    big = "A" * (20 << 20)
    f = work / "huge.parquet"
    pq.write_table(setcol(t, "output", pa.array([big] + [None] * (t.num_rows - 1), pa.string())), f)
    p = run(["diff", GOOD0, GOOD1, f], cwd=work)
    assert p.returncode == 1 and p.err == "", p.err[-2000:]
    assert len(p.stdout) < 200_000, len(p.stdout)
    p = run(["export", f, "-o", work / "h.json"], cwd=work)
    assert p.returncode == 0, p.err[-2000:]
    json.loads((work / "h.json").read_bytes())  # valid JSON whatever it keeps of the string


def test_a_bad_file_of_thousands_of_trace_ids_is_refused_quickly_naming_the_flag(work):
    t = pa.concat_tables([recording(BAD)] * 8)
    f = work / "many.parquet"
    pq.write_table(setcol(t, "trace_id", pa.array([f"h:{i}" for i in range(t.num_rows)])), f)
    t0 = time.monotonic()
    line = assert_refused(run(["diff", GOOD0, f], cwd=work), "many.parquet", "--trace-id", str(t.num_rows))
    assert time.monotonic() - t0 < 60
    assert len(line) < 1000, line  # the ids are not all listed
    p = run(["export", f, "-o", work / "m.json", "--trace-id", "h:17"], cwd=work)
    assert p.returncode == 0, p.err
    events = json.loads((work / "m.json").read_bytes())["traceEvents"]
    assert {e["args"]["trace_id"] for e in events if e.get("ph") == "X"} == {"h:17"}


# ---------------------------------------------------------------------------------------------
# odd names
# ---------------------------------------------------------------------------------------------
def test_a_newline_in_an_unreadable_name_is_shown_escaped_not_as_a_space(work):
    (work / "bad\nname.parquet").write_bytes(gzip.compress(BAD.read_bytes()))
    shutil.copy(BAD, work / "bad name.parquet")  # a valid file the message must not seem to name
    for args in (["export", "bad\nname.parquet", "-o", "o.json"],
                 ["allowlist", "learn", "bad\nname.parquet", "-o", "l.yaml"],
                 ["diff", GOOD0, "bad\nname.parquet"]):
        assert_refused(run(args, cwd=work), "bad\\nname.parquet")


def test_a_non_utf8_unreadable_name_is_shown_with_the_byte_escaped(work):
    name = b"bad\xffname.parquet"
    with open(os.path.join(os.fsencode(work), name), "wb") as fh:
        fh.write(b"PAR1 not really")
    for args in ([b"export", name, b"-o", b"o.json"], [b"allowlist", b"learn", name, b"-o", b"l.yaml"]):
        assert_refused(run(args, cwd=work), "bad\\xffname.parquet")
    assert sorted(os.listdir(os.fsencode(work))) == [name]


def test_export_output_with_a_newline_in_its_name_is_written_and_said_escaped(work):
    p = run(["export", BAD, "-o", "new\nout.json"], cwd=work)
    assert p.returncode == 0, p.err
    assert "new\\nout.json" in p.err + p.out and len((p.err + p.out).strip().splitlines()) == 1
    json.loads((work / "new\nout.json").read_bytes())


# ---------------------------------------------------------------------------------------------
# outputs that are not files to write: a symlink loop, a FIFO, a directory, a name too long
# ---------------------------------------------------------------------------------------------
def _odd_output(work: Path, what: str) -> str:
    if what == "symlink_loop":
        os.symlink("loop2", work / "loop1")
        os.symlink("loop1", work / "loop2")
        return "loop1"
    if what == "directory":
        (work / "adir").mkdir()
        return "adir"
    if what == "name_too_long":
        return "n" * 300
    if what == "under_a_file":
        (work / "afile").write_text("x")
        return "afile/out"  # (refusals name "afile": not a directory)
    raise AssertionError(what)


@pytest.mark.parametrize("what", ["symlink_loop", "directory", "name_too_long", "under_a_file"])
def test_outputs_that_cannot_be_files_are_refused_in_one_line(work, dataset, what):
    out = _odd_output(work, what)
    listing = tree(work)
    shown = out[:40] if what != "under_a_file" else "afile"
    jobs = [["export", "--diff", GOOD0, BAD, "-o", out + ("" if what != "under_a_file" else ".json")],
            ["allowlist", "learn", GOOD0, "-o", out],
            ["report", dataset / "audit", "--html", out]]
    if what != "directory":  # (a directory is what coverage writes into)
        jobs.append(["coverage", dataset, "-o", out])
    for p in run_all([(args, {"cwd": work}) for args in jobs]):
        assert_refused(p, shown)
    assert tree(work) == listing


def test_an_input_that_is_a_fifo_or_a_loop_does_not_hang_export_or_learn(work):
    os.mkfifo(work / "fifo.parquet")
    os.symlink("l2.parquet", work / "l1.parquet")
    os.symlink("l1.parquet", work / "l2.parquet")
    for name, needle in (("fifo.parquet", "FIFO"), ("l1.parquet", "symbolic links")):
        assert_refused(run(["export", name, "-o", "o.json"], cwd=work, timeout=60), name, needle)
        assert_refused(run(["allowlist", "learn", name, "-o", "l.yaml"], cwd=work, timeout=60), name, needle)
        assert_refused(run(["export", "--diff", GOOD0, name, "-o", "o.json"], cwd=work, timeout=60), name, needle)
    assert not (work / "o.json").exists() and not (work / "l.yaml").exists()


# ---------------------------------------------------------------------------------------------
# a full volume (ENOSPC) and a read-only one (EROFS)
# ---------------------------------------------------------------------------------------------
@needs_root
def test_export_onto_a_full_tmpfs_keeps_the_previous_output_whole(work):
    with tiny_tmpfs(work / "mnt") as mnt:
        (mnt / "out.json").write_text('{"previous": true}\n')
        before = tree(mnt)
        for args in (["export", BAD, "-o", mnt / "out.json"], ["export", "--diff", GOOD0, GOOD1, BAD, "-o", mnt / "out.json"]):
            assert_refused(run(args, cwd=work), "out.json", "No space left on device")
            assert tree(mnt) == before
        fill(mnt)
        before = tree(mnt)
        assert_refused(run(["export", BAD, "-o", mnt / "new.json"], cwd=work), "new.json", "No space left")
        assert tree(mnt) == before


@needs_root
def test_report_html_onto_a_full_tmpfs_leaves_nothing(work, dataset):
    with tiny_tmpfs(work / "mnt", size="32k") as mnt:
        (mnt / "r.html").write_text("<p>previous</p>\n")
        before = tree(mnt)
        p = run(["report", dataset / "audit", "--html", mnt / "r.html"], cwd=work)
        assert_refused(p, "r.html", "No space left on device")
        assert tree(mnt) == before


@needs_root
def test_coverage_onto_a_full_tmpfs_names_the_output_not_its_temporary(work, dataset):
    with tiny_tmpfs(work / "mnt") as mnt:
        p = run(["coverage", dataset, "-o", "mnt/cov"], cwd=work)  # (relative: given absolute, it is named well)
        assert tree(mnt) == {} or tree(mnt) == {"cov/": "dir"}, tree(mnt)  # nothing half-written
        line = assert_refused(p, "No space left on device")
        assert ".tmp" not in line, line
        assert str(mnt / "cov") in line or "mnt/cov" in line, line


@needs_root
def test_coverage_onto_a_full_tmpfs_leaves_no_half_report(work, dataset):
    with tiny_tmpfs(work / "mnt") as mnt:
        p = run(["coverage", dataset, "-o", mnt / "cov"], cwd=work)
        assert p.returncode == 2 and "Traceback" not in p.err and len(p.err.strip().splitlines()) == 1, p.err
        assert "No space left on device" in p.err
        left = tree(mnt)
        assert left in ({}, {"cov/": "dir"}), left


@needs_root
def test_every_writer_onto_a_read_only_tmpfs_is_refused_and_changes_nothing(work, dataset):
    with tiny_tmpfs(work / "mnt", size="1m") as mnt:
        (mnt / "out.json").write_text("previous\n")
        (mnt / "l.yaml").write_text("# hand kept\nversion: 1\nentries: []\n")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        before = tree(mnt)
        for args, name in ((["export", BAD, "-o", mnt / "out.json"], "out.json"),
                           (["export", BAD, "-o", mnt / "sub" / "x.json"], "x.json"),
                           (["allowlist", "learn", GOOD0, "-o", mnt / "l.yaml"], "l.yaml"),
                           (["report", dataset / "audit", "--html", mnt / "r.html"], "r.html"),
                           (["coverage", dataset, "-o", mnt / "cov"], "cov")):
            line = assert_refused(run(args, cwd=work), name)
            assert "Read-only file system" in line or "not writable" in line, line
        assert tree(mnt) == before


# ---------------------------------------------------------------------------------------------
# a directory an unprivileged user may not write
# ---------------------------------------------------------------------------------------------
@needs_root
def test_an_unprivileged_user_writing_into_roots_directory_is_refused(work, dataset):
    ro = work / "ro"
    ro.mkdir(mode=0o755)
    (ro / "out.json").write_text("root's\n")
    before = tree(ro)
    cases = ((["export", BAD, "-o", "out.json"], "out.json"),
             (["export", BAD, "-o", "new.json"], "new.json"),
             (["allowlist", "learn", GOOD0], "expected_errors.learned.yaml"),
             (["report", dataset / "audit", "--html", "r.html"], "r.html"),
             (["coverage", dataset, "-o", "cov"], "cov"))
    for (_args, name), p in zip(cases, run_all([(a, {"cwd": ro, "user": "nobody"}) for a, _ in cases]), strict=True):
        line = assert_refused(p, name)
        assert "ermission denied" in line or "not writable" in line, line
    assert tree(ro) == before
    # and reading is fine: the analysis needs no root
    p = run(["diff", GOOD0, GOOD1, BAD], cwd=ro, user="nobody")
    assert p.returncode == 1 and p.err == "", p.err


# ---------------------------------------------------------------------------------------------
# stdout: full, a reader that stops after one byte, closed
# ---------------------------------------------------------------------------------------------
def _stdout_commands(work: Path, dataset: Path):
    return [
        (["diff", "--json", GOOD0, GOOD1, BAD], 1),
        (["export", "--diff", GOOD0, BAD, "-o", "-"], 0),
        (["allowlist", "learn", GOOD0, "-o", work / "l.yaml", "--json"], 0),
        (["coverage", dataset, "-o", work / "cov", "--json"], 0),
        (["report", dataset / "audit"], 0),
    ]


def test_stdout_onto_dev_full_is_named_for_every_command(work, dataset):
    with open("/dev/full", "wb") as full:
        for p in run_all([(args, {"cwd": work, "stdout": full}) for args, _ in _stdout_commands(work, dataset)]):
            assert_refused(p, "<stdout>", "No space left on device")


def _shell_all(work, dataset, redirect):
    jobs = [(args, status) for args, status in _stdout_commands(work, dataset) if args[0] != "coverage"]

    def one(job):
        args, status = job
        cmd = " ".join("'" + str(a).replace("'", "'\\''") + "'" for a in [BASELINE, *args])
        p = subprocess.run(["bash", "-c", redirect.format(cmd=cmd)], cwd=work, capture_output=True, text=True,
                           timeout=120, preexec_fn=_child_signals)
        return args, status, p

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, jobs))


def test_a_reader_that_stops_after_one_byte_changes_neither_status_nor_stderr(work, dataset):
    for args, status, p in _shell_all(work, dataset, "{cmd} | head -c1 >/dev/null; exit ${{PIPESTATUS[0]}}"):
        assert p.returncode == status, (args, p.returncode, p.stderr[-1500:])
        assert p.stderr == "", (args, p.stderr[-1500:])


def test_a_closed_stdout_keeps_the_status(work, dataset):
    for args, status, p in _shell_all(work, dataset, "{cmd} >&-"):
        assert p.returncode == status, (args, p.returncode, p.stderr[-1500:])
        assert "Traceback" not in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# kill -9 while writing
# ---------------------------------------------------------------------------------------------
def _large_trace(dest: Path, rows: int) -> None:
    t = recording(BAD)
    reps = -(-rows // t.num_rows)
    big = pa.concat_tables([t] * reps).slice(0, rows)
    big = setcol(big, "seq", pa.array(range(rows), pa.int64()))
    big = setcol(big, "ts_ns", pa.array(range(1000, 1000 + rows * 1000, 1000), pa.int64()))
    pq.write_table(big, dest, compression="zstd")


def test_export_killed_at_moments_of_a_large_write_leaves_the_previous_output_or_the_new_whole(work):
    src = work / "big.parquet"
    _large_trace(src, 60_000)
    out = work / "out" / "trace.json"
    out.parent.mkdir()
    previous = b'{"traceEvents": [], "previous": true}\n'
    out.write_bytes(previous)
    rnd = random.Random(3131)
    outcomes = set()
    for delay in sorted(rnd.uniform(0.3, 2.5) for _ in range(3)):
        proc = subprocess.Popen([BASELINE, "export", str(src), "-o", str(out)], cwd=work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, preexec_fn=_child_signals)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        body = out.read_bytes()
        if body == previous:
            outcomes.add("previous")
        else:
            doc = json.loads(body)  # never half a file
            assert len([e for e in doc["traceEvents"] if e.get("ph") == "X"]) == 60_000
            outcomes.add("new")
            out.write_bytes(previous)
        visible = [n for n in os.listdir(out.parent) if not n.startswith(".")]
        assert visible == ["trace.json"], visible
    p = run(["export", src, "-o", out], cwd=work)
    assert p.returncode == 0, p.err
    assert [n for n in os.listdir(out.parent)] == ["trace.json"], os.listdir(out.parent)  # no debris either
    assert outcomes, outcomes


def test_coverage_killed_at_moments_keeps_the_previous_report_whole(work, dataset):
    out = work / "cov"
    p = run(["coverage", dataset, "-o", out], cwd=work)
    assert p.returncode == 0, p.err
    before = tree(out)
    rnd = random.Random(3132)
    for delay in sorted(rnd.uniform(0.3, 1.8) for _ in range(2)):
        proc = subprocess.Popen([BASELINE, "coverage", str(dataset), "-o", str(out)], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_child_signals)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        now = {k: v for k, v in tree(out).items() if not any(part.startswith(".") for part in Path(k).parts)}
        assert set(now) == set(before), (set(now) ^ set(before))
        # each file whole: the report is a complete page
        for name in now:
            if name.endswith("report.html"):
                assert (out / name).read_text().rstrip().endswith("</html>")


def test_allowlist_learn_killed_at_moments_keeps_the_list_parseable(work):
    import yaml

    out = work / "l.yaml"
    p = run(["allowlist", "learn", GOOD0, "-o", out], cwd=work)
    assert p.returncode == 0, p.err
    rnd = random.Random(3133)
    for delay in sorted(rnd.uniform(0.1, 1.5) for _ in range(3)):
        proc = subprocess.Popen([BASELINE, "allowlist", "learn", str(GOOD0), str(GOOD1), "-o", str(out)], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_child_signals)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        doc = yaml.safe_load(out.read_text())
        assert isinstance(doc, dict) and doc.get("entries"), doc
        assert [n for n in os.listdir(work) if not n.startswith(".")] == ["l.yaml"], os.listdir(work)
    p = run(["allowlist", "learn", GOOD0, GOOD1, "-o", out], cwd=work)
    assert p.returncode == 0, p.err


# ---------------------------------------------------------------------------------------------
# the umask
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o077, 0o027])
def test_every_output_honours_the_umask(work, dataset, umask):
    out = work / "out"
    out.mkdir()
    jobs = [["export", BAD, "-o", out / "made" / "deep" / "e.json"],
            ["allowlist", "learn", GOOD0, "-o", out / "l.yaml"],
            ["report", dataset / "audit", "--html", out / "r.html"],
            ["coverage", dataset, "-o", out / "cov"]]
    for args, p in zip(jobs, run_all([(a, {"cwd": work, "umask": umask}) for a in jobs]), strict=True):
        assert p.returncode == 0, (args, p.err)
    allowed_file = 0o666 & ~umask
    allowed_dir = 0o777 & ~umask
    seen = 0
    for root, dirs, files in os.walk(out):
        for d in dirs:
            mode = stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode)
            assert mode & ~allowed_dir == 0, (d, oct(mode))
        for f in files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode)
            assert mode & ~allowed_file == 0, (f, oct(mode))
            assert mode & 0o600 == 0o600, (f, oct(mode))
            seen += 1
    assert seen >= 10


# ---------------------------------------------------------------------------------------------
# concurrent runs onto one output
# ---------------------------------------------------------------------------------------------
def test_concurrent_exports_onto_one_output_leave_one_whole_file(work):
    out = work / "o" / "same.json"
    out.parent.mkdir()
    expected = {}
    for f, p in zip((GOOD0, GOOD1, BAD), run_all([(["export", f, "-o", work / f"ref-{f.stem}.json"], {"cwd": work})
                                                   for f in (GOOD0, GOOD1, BAD)]), strict=True):
        assert p.returncode == 0, p.err
        expected[sha(work / f"ref-{f.stem}.json")] = f.stem
    procs = [subprocess.Popen([BASELINE, "export", str(f), "-o", str(out)], cwd=work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, preexec_fn=_child_signals)
             for _ in range(2) for f in (GOOD0, GOOD1, BAD)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-1500:]
    assert sha(out) in expected
    assert os.listdir(out.parent) == ["same.json"], os.listdir(out.parent)


def test_concurrent_reports_and_coverages_onto_one_output_leave_whole_files(work, dataset):
    html = work / "r.html"
    cov = work / "cov"
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen([BASELINE, "report", str(dataset / "audit"), "--html", str(html)], cwd=work,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_child_signals))
        procs.append(subprocess.Popen([BASELINE, "coverage", str(dataset), "-o", str(cov)], cwd=work,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_child_signals))
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()[-1500:]
    assert html.read_text().rstrip().endswith("</html>")
    weeks = [n for n in os.listdir(cov)]
    assert len(weeks) == 1 and not weeks[0].startswith("."), weeks
    names = sorted(os.listdir(cov / weeks[0]))
    assert "report.html" in names and not [n for n in names if n.startswith(".")], names
    assert sorted(n for n in os.listdir(work) if n not in ("cov", "r.html")) == [], os.listdir(work)
