"""Bad inputs, faults and signals against every CLI: round seven's battery (run it as root).

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
SIGTERM/SIGINT/SIGHUP at random instants into every writer. Prints one line per failed case
and a summary; exit 1 if any case failed. The fast suite's regressions for what this found are
in tests/test_robust_edges.py and tests/test_bad_inputs.py.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="one signal trial per writer and signal (else 3)")
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
    finally:
        shutil.rmtree(base, ignore_errors=True)
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"FAIL {r.case}: {r.detail}")
    print(f"{len(results)} cases, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
