"""Bad inputs, faults and signals against every CLI: rounds seven and eight (run it as root).

    .venv/bin/python bench/robust_battery.py [--quick] [--seed N]

Each case runs a real command in a subprocess and checks the edges' contract: exit status in the
allowed set, no traceback, no "internal error", at most one line on stderr for a failure, no
hung command (timeout), no hidden temporary left behind, no death by a signal. Inputs are built
here: traces written by pyarrow with other writers' options (dictionary off, dictionary-typed
columns, large/view strings, 1-row row groups, zero rows, extra/missing/reordered columns,
narrower or wider integers, timestamps in us, Parquet 1.0, other schema versions, no tracebase
metadata as polars writes), learned-allowlist YAML edited by hand (wrong types, unknown keys,
unicode, NUL, anchors, huge), `audit --since` edge values, datasets with odd partitions, -p
targets (a zombie, a kernel thread, a thread id, a PID namespace), low RLIMIT_NOFILE, and
SIGTERM/SIGINT/SIGHUP at random instants into every writer. Round eight adds: closed stdin/
stdout/stderr and a stdout on /dev/full; the environment (POLARS_MAX_THREADS, LANG=C/POSIX, odd
TZ, no HOME, a missing TMPDIR, PYTHONWARNINGS=error, a strict stdout encoding with a non-UTF-8
output name); a removed current directory; umask 077/000/027 output modes; valid Parquet with
odd values (all-null, struct and list columns, pid 0, int64 extremes, times before 1970, other
types under the same names, reversed and duplicated rows, five codecs, v1/v2 pages, 10k row
groups); a corrupt events file for expected learn/learn/audit; ingest into its own spool; kill -9 at a random instant into
every writer, then the same command again (it must succeed and leave what an unkilled run
leaves); the library's public functions called with wrong types. Prints one line per failed
case and a summary; exit 1 if any case failed. The fast suite's regressions for what this found
are in tests/test_robust_edges.py, tests/test_robust_eighth.py and tests/test_bad_inputs.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tracer import schema  # noqa: E402

BIN = Path(sys.executable).parent
NOW = dt.datetime(2026, 11, 28, 0, 30, tzinfo=dt.UTC)
PROGRAM = [("execve", 0, None, "/usr/bin/job"), ("openat", 3, None, "/etc/ld.so.cache"), ("close", 0, None, None),
           ("openat", 3, None, "/srv/job/config.ini"), ("read", 120, None, None), ("close", 0, None, None),
           ("openat", 3, None, "/srv/job/data/rows.jsonl"), ("read", 4096, None, None), ("exit_group", 0, None, None)]
BAD = PROGRAM[:6] + [("openat", -2, "ENOENT", "/srv/job/data/rows.jsonl"), ("exit_group", 1, None, None)]


@dataclass
class Result:
    case: str
    ok: bool
    detail: str


def events(trace_id: str, program: list, pid: int, kind: str) -> pa.Table:
    rows = [{"trace_id": trace_id, "seq": i, "ts_ns": 1000 * i, "pid": pid, "tid": pid, "ppid": 1, "comm": "job",
             "probe": probe, "layer": "syscall", "depth": 0, "ret": ret, "errno": errno, "latency_ns": 500,
             "path": path, "kind": kind, "command": "./job", "exit_status": 0, "start_time": NOW, "end_time": NOW,
             "host": "h1"} for i, (probe, ret, errno, path) in enumerate(program)]
    return pa.Table.from_pylist(rows, schema=schema.EVENTS)


def write(table: pa.Table, path: Path, schema_version: str = str(schema.SCHEMA_VERSION), meta: bool = True,
          **kw) -> Path:
    kv = {schema.META_TABLE: b"events", schema.META_VERSION: schema_version.encode()} if meta else None
    pq.write_table(table.replace_schema_metadata(kv), path, **kw)
    return path


def retype(table: pa.Table, name: str, to: pa.DataType) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, to, table.schema.field(i).nullable), table.column(i).cast(to))


def strings_as(table: pa.Table, how) -> pa.Table:
    return pa.table([how(c) if pa.types.is_string(c.type) else c for c in table.columns], names=table.column_names)


def trace_variants(d: Path) -> dict[str, tuple[Path, set[int]]]:
    """name -> (bad trace written another way, allowed exit statuses of `baseline diff`)."""
    b = events("b1", BAD, 30, "failure")
    v: dict[str, tuple[Path, set[int]]] = {}
    same, refused = {1}, {2}
    v["nodict"] = (write(b, d / "nodict.parquet", use_dictionary=False), same)
    v["rowgroup1"] = (write(b, d / "rg1.parquet", row_group_size=1), same)
    v["zero-rows"] = (write(b.slice(0, 0), d / "zero.parquet"), refused)
    v["large-string"] = (write(strings_as(b, lambda c: c.cast(pa.large_string())), d / "large.parquet"), same)
    v["string-view"] = (write(strings_as(b, lambda c: c.cast(pa.string_view())), d / "view.parquet"), same)
    v["dictionary-typed"] = (write(strings_as(b, lambda c: c.dictionary_encode()), d / "dict.parquet"), same)
    v["extra-column"] = (write(b.append_column("zz", pa.array([1] * len(b))), d / "extra.parquet"), same)
    v["reordered"] = (write(b.select(list(reversed(b.column_names))), d / "reorder.parquet"), same)
    v["missing-kind"] = (write(b.drop(["kind"]), d / "missing.parquet"), refused)
    v["seq-int32"] = (write(retype(b, "seq", pa.int32()), d / "seq32.parquet"), refused)
    v["ts-timestamp"] = (write(retype(b, "ts_ns", pa.timestamp("ns")), d / "tsts.parquet"), refused)
    v["ts-uint64"] = (write(retype(b, "ts_ns", pa.uint64()), d / "tsu64.parquet"), refused)
    # Parquet 1.0 stores the timestamps in us: read (cast) or refused naming the column, both fine
    v["parquet-1.0-us"] = (write(b, d / "v1.parquet", version="1.0", data_page_version="2.0"), {1, 2})
    v["schema-v1"] = (write(b, d / "sv1.parquet", schema_version="1"), same)
    v["schema-v99"] = (write(b, d / "sv99.parquet", schema_version="99"), refused)
    v["no-metadata"] = (write(b, d / "nometa.parquet", meta=False), refused)
    pl.from_arrow(b).write_parquet(d / "polars.parquet")
    v["polars-written"] = (d / "polars.parquet", refused)
    path = b.schema.get_field_index("path")
    odd = b.set_column(path, b.schema.field(path), pa.array(["/srv/\x1b[31m\n\u202e\x00x"] * len(b)))
    v["control-chars"] = (write(odd, d / "odd.parquet"), same)
    return v


def yaml_variants(d: Path) -> dict[str, tuple[Path, set[int]]]:
    entry = ("  - id: learned-enoent-openat-0123456789\n    source: learned\n    probe: openat\n    errno: ENOENT\n"
             "    path: /srv/job/cache\n    support:\n      runs: 2\n      total: 2\n"
             "    first_seen: '2026-11-29T10:00:00Z'\n    last_seen: '2026-11-29T11:00:00Z'\n")
    base = "version: 1\nentries:\n" + entry
    ok, refused = {0, 1}, {2}
    texts = {
        "empty": ("", ok), "null": ("null\n", ok), "list": ("- a\n", refused), "version-true": (base.replace("version: 1", "version: true"), refused),
        "version-str": (base.replace("version: 1", "version: '1'"), refused), "entries-dict": ("version: 1\nentries: {a: 1}\n", refused),
        "unknown-key": (base + "    colour: red\n", refused), "probe-int": (base.replace("probe: openat", "probe: 42"), refused),
        "errno-lower": (base.replace("errno: ENOENT", "errno: enoent"), refused), "runs-bool": (base.replace("runs: 2", "runs: true"), refused),
        "runs-negative": (base.replace("runs: 2", "runs: -1"), refused), "date-text": (base.replace("'2026-11-29T10:00:00Z'", "yesterday"), refused),
        "date-native": (base.replace("'2026-11-29T10:00:00Z'", "2026-11-29"), refused),
        "path-unicode": (base.replace("/srv/job/cache", "'/srv/\u00e9\U0001F600\u202e'"), ok),
        "path-nul": (base.replace("/srv/job/cache", '"/srv/a\\0b"'), ok), "path-badglob": (base.replace("/srv/job/cache", "'/srv/[z-a'"), ok),
        "dup-key": (base.replace("    probe: openat\n", "    probe: openat\n    probe: read\n"), refused),
        "dup-id": (base + entry, refused), "tab": (base.replace("    probe", "\tprobe", 1), refused),
        "python-tag": ("version: 1\nentries: !!python/object/apply:os.system ['true']\n", refused),
        "deep": ("version: 1\nentries: " + "[" * 5000 + "]" * 5000 + "\n", refused),
        "anchors": ("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                    "d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nversion: 1\n", refused),
        "huge-reason": (base + "    reason: '" + "x" * (8 << 20) + "'\n", ok),
    }
    out = {}
    for name, (text, codes) in texts.items():
        (d / f"{name}.yaml").write_text(text)
        out[name] = (d / f"{name}.yaml", codes)
    (d / "binary.yaml").write_bytes(bytes(range(256)))
    out["binary"] = (d / "binary.yaml", refused)
    (d / "utf16.yaml").write_bytes(base.encode("utf-16"))
    out["utf16"] = (d / "utf16.yaml", refused)
    return out


def run(argv: list[str], cwd: Path, codes: set[int], timeout: float = 120, limit_files: int | None = None) -> tuple[bool, str]:
    tool, *rest = argv
    pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))) if limit_files else None
    try:
        proc = subprocess.run([str(BIN / tool), *rest], cwd=cwd, capture_output=True, timeout=timeout, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        return False, f"hung > {timeout:g}s"
    err = proc.stderr.decode("utf-8", "backslashreplace")
    lines = [line for line in err.splitlines() if line.strip()]
    bad = ("Traceback" in err or "internal error" in err or proc.returncode not in codes
           or (proc.returncode == 2 and len(lines) != 1))
    return not bad, f"exit {proc.returncode}: {err.strip()[-300:]}"


def signal_trials(cwd: Path, fleet: Path, traces: list[Path], rng: random.Random, per: int) -> list[Result]:
    out_dir = cwd / "sig-out"
    writers = {
        "audit": ["baseline", "audit", str(fleet), "-o", str(out_dir / "audit")],
        "learn": ["baseline", "learn", str(fleet), "-o", str(out_dir / "model.parquet")],
        "coverage": ["baseline", "coverage", str(fleet), "-o", str(out_dir / "cov")],
        "simulate": ["baseline", "simulate", "--hosts", "4", "--hours", "1", "--seed", "1", "-o", str(out_dir / "sim")],
        "allowlist": ["baseline", "allowlist", "learn", *map(str, traces), "-o", str(out_dir / "al.yaml")],
        "export": ["baseline", "export", str(traces[0]), "-o", str(out_dir / "x.json")],
    }
    want = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 130, signal.SIGHUP: 128 + signal.SIGHUP}
    results = []
    for name, argv in writers.items():
        for sig in want:
            for _ in range(per):
                shutil.rmtree(out_dir, ignore_errors=True)
                out_dir.mkdir()
                # (from 0.3 s: a SIGINT in CPython's own start-up, while site.py reads the venv's
                # .pth files, is printed as a traceback by site.py and the program then runs on)
                delay = rng.uniform(0.3, 2.5)
                tool, *rest = argv
                proc = subprocess.Popen([str(BIN / tool), *rest], cwd=cwd, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
                time.sleep(delay)
                proc.send_signal(sig)
                _, err = proc.communicate(timeout=120)
                debris = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob(".*") if ".tmp" in p.name)
                # -sig: the signal came before the command's handlers (imports): nothing was
                # written yet, and a shell reports the same 128 + sig
                ok = (proc.returncode in (0, want[sig], -sig) and "Traceback" not in err and not debris)
                results.append(Result(f"signal {name} {sig.name} at {delay:.2f}s", ok,
                                      f"exit {proc.returncode}, debris {debris[:3]}, {err.strip()[-200:]}"))
    return results


# --------------------------------------------------------------------------------------------
# round eight: standard streams, the environment, odd Parquet values, kill -9, the library
# --------------------------------------------------------------------------------------------
def _sh(script: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(env or {})}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, timeout=timeout, env=full)


def _verdict(proc: subprocess.CompletedProcess, codes: set[int], words: str = "") -> tuple[bool, str]:
    err = proc.stderr.decode("utf-8", "backslashreplace")
    out = proc.stdout.decode("utf-8", "backslashreplace")
    lines = [line for line in err.splitlines() if line.strip()]
    ok = ("Traceback" not in err + out and "internal error" not in err + out and proc.returncode in codes
          and (proc.returncode != 2 or len(lines) <= 1) and words in err)
    return ok, f"exit {proc.returncode}: {err.strip()[-300:]}"


def stream_and_env_cases(base: Path, fleet: Path, good: list[Path], bad: Path) -> list[Result]:
    g = " ".join(map(str, good))
    results = []
    # closed standard streams: the status a command would give with them open; the error line
    # is not printed into stdout
    for name, script, want in [
        ("diff >&-", f"baseline diff {g} {bad} >&-; echo rc=$? >&2", "rc=1"),
        ("export -o - >&-", f"baseline export {good[0]} -o - >&-; echo rc=$? >&2", "rc=0"),
        ("audit >&-", f"baseline audit {fleet} -o {base}/aud-c >&-; echo rc=$? >&2", "rc=0"),
        ("diff missing 2>&-", f"baseline diff {base}/missing.parquet {bad} 2>&-; echo rc=$? >&2", "rc=2"),
        ("learn 2>&-", f"baseline learn {fleet} -o {base}/m-c.parquet 2>&- >/dev/null; echo rc=$? >&2", "rc=0"),
        ("diff <&-", f"baseline diff {g} {bad} <&- >/dev/null; echo rc=$? >&2", "rc=1"),
        ("probes check >&- 2>&-", "tracer probes check syscalls >&- 2>&-; echo rc=$? >&2", "rc=0"),
    ]:
        proc = _sh(script, base)
        err = proc.stderr.decode("utf-8", "backslashreplace")
        results.append(Result(f"stream {name}", err.strip().endswith(want) and "Traceback" not in err
                              and "error" not in proc.stdout.decode(errors="replace"), err.strip()[-300:]))
    # a stdout that cannot be written: exit 2 naming <stdout>
    for name, script in [("diff", f"baseline diff {g} {bad}"), ("audit --json", f"baseline audit {fleet} -o {base}/aud-f --json"),
                         ("report", f"baseline report {base}/aud-f"), ("export -o -", f"baseline export {good[0]} -o -"),
                         ("probes check", "tracer probes check syscalls")]:
        ok, detail = _verdict(_sh(f"{script} >/dev/full", base), {2}, "<stdout>")
        results.append(Result(f"stdout /dev/full {name}", ok, detail))
    # the environment
    non_utf8 = os.fsencode(base) + b"/out-\xfe\n.yaml"
    envs: dict[str, tuple[dict, set[int] | None]] = {
        "POLARS_MAX_THREADS=0": ({"POLARS_MAX_THREADS": "0"}, {2}), "POLARS_MAX_THREADS=abc": ({"POLARS_MAX_THREADS": "abc"}, {2}),
        "POLARS_MAX_THREADS=1": ({"POLARS_MAX_THREADS": "1"}, None), "LANG=C": ({"LANG": "C", "LC_ALL": "C"}, None),
        "LC_ALL=POSIX": ({"LC_ALL": "POSIX"}, None), "TZ=Pacific/Chatham": ({"TZ": "Pacific/Chatham"}, None),
        "TZ=bogus": ({"TZ": "Not/AZone"}, None), "HOME unset": ({"HOME": ""}, None),
        "TMPDIR missing": ({"TMPDIR": "/nonexistent/tmp"}, None), "PYTHONWARNINGS=error": ({"PYTHONWARNINGS": "error"}, None),
        "stdout strict": ({"PYTHONIOENCODING": "utf-8:strict"}, None),
    }
    for name, (env, forced) in envs.items():
        for argv, codes in ((["baseline", "diff", *map(str, good), str(bad)], {1}),
                            (["baseline", "learn", str(fleet), "-o", str(base / "m-env.parquet")], {0}),
                            (["baseline", "allowlist", "learn", *map(str, good), "-o", non_utf8], {0})):
            tool, *rest = argv
            proc = subprocess.run([str(BIN / tool), *rest], cwd=base, capture_output=True, timeout=120,
                                  env={**os.environ, **env})
            ok, detail = _verdict(proc, forced or codes, "POLARS_MAX_THREADS" if forced else "")
            results.append(Result(f"env {name} {argv[1]}", ok, detail))
    # a removed current directory: relative outputs named for it, absolute paths still work
    for name, script, codes, words in [
        ("allowlist learn (default output)", f"baseline allowlist learn {g}", {2}, "current directory"),
        ("simulate -o rel", "baseline simulate --hosts 1 --hours 1 -o rel", {2}, "current directory"),
        ("export -o rel", f"baseline export {good[0]} -o x.json", {2}, "current directory"),
        ("diff absolute", f"baseline diff {g} {bad}", {1}, ""),
    ]:
        gone = base / "gone"
        gone.mkdir(exist_ok=True)
        ok, detail = _verdict(_sh(f"cd {gone} && rmdir {gone} && {script} >/dev/null", base), codes, words)
        results.append(Result(f"removed cwd {name}", ok, detail))
    # umask: files 0666 & ~umask, no world-writable directory
    for mask in (0o077, 0o000, 0o027):
        out = base / f"umask{mask:03o}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        os.chmod(out, 0o755)
        for script in (f"baseline simulate --hosts 1 --hours 1 -o {out}/sim", f"baseline export {good[0]} -o {out}/x.json",
                       f"baseline allowlist learn {g} -o {out}/a.yaml", f"baseline learn {out}/sim"):
            _sh(f"umask {mask:03o}; {script} >/dev/null", base)
        wrong = [f"{p.relative_to(out)} {p.stat().st_mode & 0o777:o}" for p in out.rglob("*") if not p.is_symlink()
                 and ((p.is_file() and p.stat().st_mode & 0o777 != 0o666 & ~mask)
                      or (p.is_dir() and p.stat().st_mode & 0o002))]
        made = sum(1 for p in out.rglob("*") if p.is_file())
        results.append(Result(f"umask {mask:03o} output modes", made >= 6 and not wrong, f"{made} files, wrong: {wrong[:4]}"))
    return results


def odd_parquet_cases(base: Path, good: list[Path]) -> list[Result]:
    """Valid Parquet with odd values: read or refused naming a column, never a crash."""
    b = events("b1", BAD, 30, "failure")
    n = len(b)

    def col(name: str, values: pa.Array) -> pa.Table:
        i = b.schema.get_field_index(name)
        return b.set_column(i, pa.field(name, values.type), values)

    start = b.schema.field("start_time").type
    variants = {
        "errno all null": col("errno", pa.nulls(n, pa.string())), "probe all null": col("probe", pa.nulls(n, pa.string())),
        "errno null-typed": col("errno", pa.nulls(n)), "path struct": col("path", pa.array([{"a": "x"}] * n)),
        "path list": col("path", pa.array([["x"]] * n)), "pid 0": col("pid", pa.array([0] * n, b.schema.field("pid").type)),
        "ret extremes": col("ret", pa.array([2**63 - 1, -2**63] * (n // 2) + [0] * (n % 2), pa.int64())),
        "ts_ns negative": col("ts_ns", pa.array([-10**18 + i for i in range(n)], pa.int64())),
        "ts_ns int64 max": col("ts_ns", pa.array([2**63 - 1 - i for i in range(n)], pa.int64())),
        "latency negative": col("latency_ns", pa.array([-1000] * n, b.schema.field("latency_ns").type)),
        "start 1900": col("start_time", pa.array([dt.datetime(1900, 1, 1)] * n, start)),
        "start int64 min": col("start_time", pa.array([-2**63 + 1] * n, pa.int64()).cast(start)),
        "errno odd names": col("errno", pa.array((["E" * 1000, "EWHAT", "", "\x00", "123"] * n)[:n])),
        "ret as string": col("ret", pa.array([str(x) for x in b.column("ret").to_pylist()])),
        "seq float nan": col("seq", pa.array([float("nan")] * n)), "comm binary": col("comm", pa.array([b"\xff"] * n, pa.binary())),
        "rows reversed": b.take(list(reversed(range(n)))), "rows duplicated": pa.concat_tables([b, b]),
        "one trace id two pids": pa.concat_tables([b, col("pid", pa.array([99] * n, b.schema.field("pid").type))]),
    }
    results = []
    d = base / "odd-parquet"
    d.mkdir(exist_ok=True)
    for i, (name, table) in enumerate(variants.items()):
        path = write(table, d / f"v{i}.parquet")
        for argv, codes in ((["baseline", "diff", *map(str, good), str(path)], {0, 1, 2}),
                            (["baseline", "export", str(path), "-o", str(base / "x.json")], {0, 2})):
            ok, detail = run(argv, base, codes)
            results.append(Result(f"{argv[1]} parquet {name}", ok, detail))
    for codec in ("zstd", "lz4", "brotli", "none", "gzip"):
        ok, detail = run(["baseline", "diff", *map(str, good), str(write(b, d / f"{codec}.parquet", compression=codec))], base, {1})
        results.append(Result(f"diff parquet codec {codec}", ok, detail))
    for pages in ("1.0", "2.0"):
        ok, detail = run(["baseline", "diff", *map(str, good), str(write(b, d / f"p{pages}.parquet", data_page_version=pages))], base, {1})
        results.append(Result(f"diff parquet data pages v{pages}", ok, detail))
    ok, detail = run(["baseline", "diff", *map(str, good), str(write(pa.concat_tables([b] * 1250), d / "rg.parquet", row_group_size=1))],
                     base, {1})
    results.append(Result("diff parquet 10k row groups", ok, detail))
    return results


def dataset_fault_cases(base: Path, fleet: Path) -> list[Result]:
    ds = base / "ds-corrupt"
    shutil.copytree(fleet, ds)
    part = sorted((ds / "events").rglob("*.parquet"))[0]
    part.write_bytes(b"PAR1 but not really" * 8)
    results = []
    for argv in (["expected", "learn", str(ds), "-o", str(base / "e.yaml")], ["learn", str(ds), "-o", str(base / "m-x.parquet")],
                 ["audit", str(ds), "-o", str(base / "aud-x")]):
        ok, detail = run(["baseline", *argv], base, {2})
        results.append(Result(f"{argv[0]} names a corrupt events file", ok and part.name in detail, detail))
    for argv in (["diff", "", str(part)], ["learn", ""], ["export", "", "-o", str(base / "x.json")]):
        ok, detail = run(["baseline", *argv], base, {2})  # Path('') is '.': the whole cwd was read
        results.append(Result(f"{argv[0]} of an empty path argument", ok and "empty argument" in detail, detail))
    log = sorted((fleet / "joblogs").glob("*.log"))[0]
    odd = os.fsencode(base) + b"/nccl-\xff.log"
    shutil.copy(log, odd)
    ok, detail = run(["baseline", "coverage", str(fleet), "-o", str(base / "cov-x"), "--nccl-logs", odd], base, {0})
    results.append(Result("coverage job log named with a non-UTF-8 byte", ok, detail))
    return results


def ingest_overlap_cases(base: Path, spool: Path) -> list[Result]:
    """A dataset or quarantine that is, holds or lies in the spool is refused and nothing moves."""
    before = sorted(p.relative_to(spool) for p in spool.rglob("*"))
    results = []
    for name, argv in {"dataset = spool": [spool, spool], "dataset in the spool": [spool, spool / "ds"],
                       "dataset holds the spool": [spool, spool.parent],
                       "quarantine in the spool": [spool, base / "ds-o", "--quarantine", spool / "q"],
                       "quarantine in the dataset": [spool, base / "ds-o", "--quarantine", base / "ds-o" / "q"]}.items():
        ok, detail = run(["baseline", "ingest", *map(str, argv)], base, {2})
        moved = sorted(p.relative_to(spool) for p in spool.rglob("*")) != before
        results.append(Result(f"ingest {name}", ok and not moved and "apart from" in detail, detail))
    # SPOOL DATASET swapped: a dataset given as the spool
    ds = base / "ds-swapped"
    ok, _ = run(["baseline", "ingest", str(spool), str(ds), "--keep-spool"], base, {0})
    held = sorted(p.relative_to(ds) for p in ds.rglob("*"))
    ok2, detail = run(["baseline", "ingest", str(ds), str(base / "ds-other")], base, {2})
    results.append(Result("ingest DATASET SPOOL (swapped)", ok and ok2 and "found a dataset" in detail
                          and sorted(p.relative_to(ds) for p in ds.rglob("*")) == held, detail))
    return results


def _digest(d: Path) -> dict[str, object]:
    """What a reader sees: visible files (shape of each Parquet table, size > 0 of the rest)."""
    seen: dict[str, object] = {}
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        if p.suffix == ".parquet":
            try:
                seen[str(rel)] = pq.read_metadata(p).num_rows
            except Exception as exc:  # a half file a reader would take for data
                seen[str(rel)] = f"UNREADABLE {type(exc).__name__}"
        else:
            seen[str(rel)] = p.stat().st_size > 0
    return seen


def kill9_trials(base: Path, fleet: Path, good: list[Path], spool: Path | None, rng: random.Random, per: int) -> list[Result]:
    """kill -9 at a random instant of every writer, then the same command again: it succeeds and
    the visible outputs are what a run that was never killed leaves (no half file, no debris)."""
    k = base / "k9"
    writers = {
        "learn": ["baseline", "learn", str(k / "fleet")], "audit": ["baseline", "audit", str(k / "fleet")],
        "expected learn": ["baseline", "expected", "learn", str(k / "fleet"), "-o", str(k / "e.yaml")],
        "coverage": ["baseline", "coverage", str(k / "fleet"), "-o", str(k / "cov")],
        "export": ["baseline", "export", str(good[0]), "-o", str(k / "x.json")],
        "simulate": ["baseline", "simulate", "--hosts", "4", "--hours", "1", "--seed", "1", "-o", str(k / "sim")],
        "allowlist learn": ["baseline", "allowlist", "learn", *map(str, good), "-o", str(k / "al.yaml")],
    }
    if spool is not None:
        writers["ingest"] = ["baseline", "ingest", str(k / "spool"), str(k / "ds")]

    def fresh() -> None:
        shutil.rmtree(k, ignore_errors=True)
        k.mkdir()
        shutil.copytree(fleet, k / "fleet", ignore=shutil.ignore_patterns("audit", "baseline-model.parquet", "expected*"))
        if spool is not None:
            shutil.copytree(spool, k / "spool")

    results = []
    for name, argv in writers.items():
        fresh()
        subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, timeout=300)
        want = _digest(k)
        for _ in range(per):
            fresh()
            delay = rng.uniform(0.3, 2.5)
            proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            proc.kill()
            proc.wait()
            half = {p: v for p, v in _digest(k).items() if v is False or str(v).startswith("UNREADABLE")}
            again = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=300)
            got = _digest(k)
            debris = [str(p.relative_to(k)) for p in k.rglob(".*") if ".tmp" in p.name]
            differ = sorted(p for p in set(want) | set(got) if want.get(p) != got.get(p))
            results.append(Result(f"kill -9 {name} at {delay:.2f}s, rerun", again.returncode == 0 and not half
                                  and not differ and not debris,
                                  f"rerun exit {again.returncode} {again.stderr.strip()[-150:]}; half {list(half)[:3]}, "
                                  f"differ {differ[:3]}, debris {debris[:3]}"))
    return results


_LIBRARY = r"""
import json, sys
from baseline.export import export_trace
from baseline.fleet.audit import run_audit
from baseline.fleet.model import GoodTraceBaseline
from baseline.run.diff import diff_traces
from baseline.simulator.simulate import simulate
from tracer import schema
good, bad, tmp = sys.argv[1:3], sys.argv[3], sys.argv[4]
calls = {  # name: (call, the words the message must start with)
    "diff_traces(None, bad)": (lambda: diff_traces(None, bad), "paths:"),
    "diff_traces(good, 5)": (lambda: diff_traces(good, 5), "paths:"),
    "diff_traces(k=2.5)": (lambda: diff_traces(good, bad, k=2.5), "-k/--window:"),
    "diff_traces(context='x')": (lambda: diff_traces(good, bad, context="x"), "--context:"),
    "diff_traces(trace_id=3)": (lambda: diff_traces(good, bad, trace_id=3), "trace_id:"),
    "diff_traces(bytes path)": (lambda: diff_traces([good[0].encode()], bad), "paths:"),
    "run_audit(None)": (lambda: run_audit(None), "paths:"),
    "run_audit(model=3)": (lambda: run_audit(tmp, model=3), "model:"),
    "run_audit(min_layers=2.5)": (lambda: run_audit(tmp, min_layers=2.5), "min_layers:"),
    "GoodTraceBaseline().fit(None)": (lambda: GoodTraceBaseline().fit(None), "paths:"),
    "simulate(workers=0)": (lambda: simulate(tmp + "/s", hosts=1, hours=1, workers=0), "--workers:"),
    "simulate(hosts='3')": (lambda: simulate(tmp + "/s", hosts="3"), "--hosts:"),
    "export_trace(5)": (lambda: export_trace(5), "paths:"),
    "schema.read_events(None)": (lambda: schema.read_events(None), "paths:"),
}
out = {}
for name, (call, words) in calls.items():
    try:
        call()
        out[name] = ["returned", "", "", words]
    except Exception as exc:
        out[name] = [type(exc).__name__, type(exc).__mro__[1].__name__, str(exc)[:200], words]
print(json.dumps(out))
"""


def library_cases(base: Path, good: list[Path], bad: Path) -> list[Result]:
    """Public functions called with wrong types: a TypeError, ValueError or TracebaseError whose
    message starts with the argument's name, never an AttributeError (or worse) from inside."""
    import json

    proc = subprocess.run([sys.executable, "-c", _LIBRARY, *map(str, good), str(bad), str(base)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return [Result("library calls", False, proc.stderr.strip()[-300:])]
    results = []
    for name, got in json.loads(proc.stdout.splitlines()[-1]).items():
        kind, parent, message, words = got
        ok = (kind in ("TypeError", "ValueError") or "TracebaseError" in (kind, parent)) and message.startswith(words)
        results.append(Result(f"library {name}", ok, str(got)))
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="one signal and one kill -9 trial per writer (else 3)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="tracebase-battery-"))
    results: list[Result] = []
    try:
        good = [write(events(f"g{i}", PROGRAM, 10 + i, "good"), base / f"good{i}.parquet") for i in (1, 2)]
        bad = write(events("b1", BAD, 30, "failure"), base / "bad.parquet")
        for name, (path, codes) in trace_variants(base).items():
            for argv in (["baseline", "diff", *map(str, good), str(path)],
                         ["baseline", "export", str(path), "-o", str(base / "x.json")]):
                allowed = codes if argv[1] == "diff" else {0 if c == 1 else c for c in codes}
                ok, detail = run(argv, base, allowed)
                results.append(Result(f"{argv[1]} trace {name}", ok, detail))
        for name, (path, codes) in yaml_variants(base).items():
            ok, detail = run(["baseline", "diff", *map(str, good), str(bad), "--allowlist", str(path)], base,
                             {1} if codes == {0, 1} else codes)
            results.append(Result(f"allowlist {name}", ok, detail))
            copy = base / f"learn-{name}.yaml"
            shutil.copy(path, copy)
            ok, detail = run(["baseline", "allowlist", "learn", *map(str, good), "-o", str(copy)], base,
                             {0} if codes == {0, 1} else codes)
            results.append(Result(f"allowlist learn into {name}", ok, detail))
        fleet = base / "fleet"
        ok, detail = run(["baseline", "simulate", "--hosts", "6", "--hours", "2", "--seed", "3", "-o", str(fleet)], base, {0})
        results.append(Result("simulate fleet", ok, detail))
        run(["baseline", "learn", str(fleet)], base, {0})
        for since in ["0", "0s", "-0", "1us", "100000d", "99999999999d", "2026-13-01", "2026-02-30", "1970-01-01",
                      "0001-01-01", "9999-12-31", "2026-12-01T04:00:00+25:00", " 2h", "", "now", "today", "2h30m",
                      "1e2h", "0x10", "+inf", "\u0661\u0662h", "2026-11-28T00:00:00Z"]:
            ok, detail = run(["baseline", "audit", str(fleet), f"--since={since}", "-o", str(base / "aud")], base, {0, 2})
            results.append(Result(f"audit --since {since!r}", ok, detail))
        day = next((fleet / "events").iterdir())
        host = next(day.iterdir())
        odd_layouts = {
            "host-first": lambda ds: shutil.copytree(host, ds / "events" / "host=x"),
            "date-not-a-date": lambda ds: shutil.copytree(host, ds / "events" / "date=not-a-date" / host.name),
            "nested-junk": lambda ds: shutil.copytree(host, ds / "events" / day.name / "junk" / "deeper"),
            "symlinked-partition": lambda ds: os.symlink(host, ds / "events" / day.name / "host=linked"),
            "partition-is-a-file": lambda ds: (ds / "events" / day.name / "host=afile").write_text("hi"),
            "empty-host": lambda ds: shutil.copytree(host, ds / "events" / day.name / "host="),
            "dangling-symlink": lambda ds: os.symlink("/nonexistent", ds / "events" / day.name / "host=gone"),
            "symlink-loop": lambda ds: os.symlink(ds / "events", ds / "events" / day.name / "host=loop"),
            "fifo-part": lambda ds: os.mkfifo(ds / "events" / day.name / host.name / "part-fifo.parquet"),
        }
        for name, make in odd_layouts.items():
            ds = base / f"ds-{name}"
            shutil.copytree(fleet, ds)
            make(ds)
            for argv in (["learn", str(ds)], ["audit", str(ds), "-o", str(base / "aud-odd")],
                         ["coverage", str(ds), "-o", str(base / "cov-odd")]):
                ok, detail = run(["baseline", *argv], base, {0, 2}, timeout=120)
                results.append(Result(f"{argv[0]} dataset {name}", ok, detail))
        for n in (8, 12, 16):
            for argv in (["baseline", "diff", *map(str, good), str(bad)], ["baseline", "audit", str(fleet), "-o", str(base / "aud-n")],
                         ["baseline", "learn", str(fleet), "-o", str(base / "m-n.parquet")]):
                ok, detail = run(argv, base, {0, 1, 2}, limit_files=n)
                results.append(Result(f"{argv[1]} with RLIMIT_NOFILE {n}", ok, detail))
        if root:
            holder = subprocess.Popen([sys.executable, "-c", "import subprocess, threading, time\n"
                                       "subprocess.Popen(['true']); threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                                       "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
            holder.stdout.readline()
            time.sleep(0.3)
            kids = Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()
            tid = next(t for t in os.listdir(f"/proc/{holder.pid}/task") if int(t) != holder.pid)
            targets = {"kernel thread": "2", "thread id": tid, "gone": "999999999"}
            if kids:
                targets["zombie"] = kids[0]
            for what, pid in targets.items():
                for argv in (["tracer", "record", "-p", pid, "-d", "1s", "-o", str(base / "p.parquet")],
                             ["tracer", "run", "syscalls", "-p", pid, "-d", "1s", "--spool", str(base / "spool-p")]):
                    ok, detail = run(argv, base, {2}, timeout=60)
                    results.append(Result(f"{argv[1]} -p {what}", ok, detail))
            holder.kill()
            holder.wait()
            if shutil.which("unshare"):
                for argv in (["record", "-o", str(base / "ns.parquet"), "--", "true"],
                             ["run", "syscalls", "-p", "1", "-d", "1s", "--spool", str(base / "spool-ns")]):
                    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(BIN / "tracer"), *argv],
                                          capture_output=True, text=True, timeout=60)
                    results.append(Result(f"tracer {argv[0]} in a child PID namespace", proc.returncode == 2
                                          and "PID namespace" in proc.stderr, proc.stderr.strip()[-300:]))
        results += signal_trials(base, fleet, good, rng, 1 if args.quick else 3)
        # round eight
        results += stream_and_env_cases(base, fleet, good, bad)
        results += odd_parquet_cases(base, good)
        results += dataset_fault_cases(base, fleet)
        spool = base / "spool-src"
        ok, detail = run(["baseline", "simulate", "--hosts", "3", "--hours", "1", "--seed", "2", "--spool", "-o", str(spool)],
                         base, {0})
        results.append(Result("simulate spool", ok, detail))
        if ok:
            results += ingest_overlap_cases(base, spool / "spool")
        results += kill9_trials(base, fleet, good, spool / "spool" if ok else None, rng, 1 if args.quick else 3)
        results += library_cases(base, good, bad)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"FAIL {r.case}: {r.detail}")
    print(f"{len(results)} cases, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
