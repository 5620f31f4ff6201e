"""Benchmark `baseline diff` on two 1,000,000-event traces against GNU diff on text dumps.

Two synthetic-but-realistic recordings of one program are generated: a shell starts a
4-thread data loader and a compressor child; the loader threads each walk their share of
~130k input files (futex hand-off, openat, fstat, reads, close, write), after the dynamic
loader's search-path walk and Python-style startup probing. The bad run differs by one
injected failure (openat -> EACCES on one input, logged and skipped) and by run-to-run noise:
other pids/tids, another temp directory name, another thread interleaving.

Measured in one run, each in its own child process (wall time, peak RSS via wait4):
* ``baseline diff`` as a library call (python -c ... diff_traces) and as the CLI;
* GNU ``diff`` on one-line-per-event text dumps of the same traces, twice: the *raw* dump
  (``pid probe(path) = ret``, what strace -f users diff) and a *masked* dump (no pid/ret,
  temp names masked: the most GNU diff can be helped without a per-thread split).

    .venv/bin/python -m bench.bench_diff [--quick] [--events N] [--keep DIR] [--repeat N] [--before CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from tracer.schema import write_table

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

LD_SEARCH = [
    "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/{lib}",
    "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2/{lib}",
    "/lib/x86_64-linux-gnu/{lib}",
]
LIBS = ["libpython3.11.so.1.0", "libc.so.6", "libm.so.6", "libz.so.1", "libexpat.so.1"]


def _startup(pid: int, comm: str) -> list[tuple]:
    """ld.so + interpreter start: (probe, errno, path, ret)."""
    ev: list[tuple] = [("execve", None, f"/usr/bin/{comm}", 0),
                       ("access", "ENOENT", "/etc/ld.so.preload", -2),
                       ("openat", None, "/etc/ld.so.cache", 3), ("newfstatat", None, None, 0),
                       ("mmap", None, None, 0x7F0000000000), ("close", None, None, 0)]
    for lib in LIBS:
        for i, tpl in enumerate(LD_SEARCH):
            last = i == len(LD_SEARCH) - 1
            ev.append(("openat", None if last else "ENOENT", tpl.format(lib=lib), 3 if last else -2))
        ev += [("read", None, None, 832), ("newfstatat", None, None, 0), ("mmap", None, None, 0x7F0000001000),
               ("mmap", None, None, 0x7F0000002000), ("close", None, None, 0)]
    ev += [("newfstatat", "ENOENT", "/usr/lib/python311.zip", -2),
           ("newfstatat", None, "/usr/lib/python3.11", 0),
           ("openat", None, "/usr/lib/python3.11", 3), ("getdents64", None, None, 800),
           ("getdents64", None, None, 0), ("close", None, None, 0),
           ("ioctl", "ENOTTY", None, -25), ("getrandom", None, None, 24)]
    return ev


def _file_names(n: int, rng: np.random.Generator) -> list[str]:
    words = ["img", "rec", "part", "shard", "blob", "chunk"]
    ids = rng.integers(0, 16**8, size=n)
    return [f"/data/in/{words[i % len(words)]}_{ids[i]:08x}.bin" for i in range(n)]


def synth_trace(n_events: int, run_seed: int, pid_base: int, tmpdir: str, inject: int | None,
                names: list[str], reads: np.ndarray, trace_id: str, kind: str) -> pl.DataFrame:
    """One recording; `inject` = index of the input file whose openat fails with EACCES."""
    rng = np.random.default_rng(run_seed)
    shell, loader, gz = pid_base, pid_base + 3, pid_base + 9
    threads = [loader + i for i in range(4)]
    streams: dict[tuple[int, int, int, str], list[tuple]] = {}
    streams[(shell, shell, 1, "sh")] = _startup(shell, "sh") + [("clone", None, None, loader),
                                                             ("wait4", None, None, loader)]
    main = _startup(loader, "python3") + [("clone", None, None, t) for t in threads[1:]]
    main += [("mkdir", None, tmpdir, 0), ("clone", None, None, gz)]
    streams[(loader, loader, shell, "python3")] = main
    per_file = 5 + reads.mean()
    n_files = min(len(names), int(n_events / per_file))
    for w, tid in enumerate(threads):
        ev: list[tuple] = streams.get((loader, tid, shell, "python3"), [])
        for j in range(w, n_files, len(threads)):
            ev.append(("futex", None, None, 0))
            if j == inject:
                ev += [("openat", "EACCES", names[j], -13), ("write", None, None, 64)]
                continue
            ev += [("openat", None, names[j], 7), ("newfstatat", None, None, 0)]
            ev += [("read", None, None, 65536)] * int(reads[j])
            ev += [("close", None, None, 0), ("write", None, f"{tmpdir}/out.part", 65536)]
        if w == 0:
            ev += [("rename", None, f"{tmpdir}/out.part", 0), ("wait4", None, None, gz),
                   ("exit_group", None, None, 0)]
        else:
            ev += [("exit", None, None, 0)]
        streams[(loader, tid, shell, "python3")] = ev
    streams[(gz, gz, loader, "gzip")] = _startup(gz, "gzip") + [
        ("read", None, None, 65536), ("write", None, None, 4096)] * 2000 + [("exit_group", None, None, 0)]

    # Interleave threads at random (another interleaving per run), keeping per-thread order.
    keys = list(streams)
    owner = np.concatenate([np.full(len(streams[k]), i) for i, k in enumerate(keys)])
    order = np.argsort(rng.random(len(owner)), kind="stable")
    owner = owner[order]
    counters = [0] * len(keys)
    rows = {c: [] for c in ("pid", "tid", "ppid", "comm", "probe", "errno", "path", "ret")}
    for o in owner.tolist():
        pid, tid, ppid, comm = keys[o]
        probe, errno, path, ret = streams[keys[o]][counters[o]]
        counters[o] += 1
        rows["pid"].append(pid)
        rows["tid"].append(tid)
        rows["ppid"].append(ppid)
        rows["comm"].append(comm)
        rows["probe"].append(probe)
        rows["errno"].append(errno)
        rows["path"].append(path)
        rows["ret"].append(ret)
    n = len(owner)
    df = pl.DataFrame(rows, schema={"pid": pl.Int32, "tid": pl.Int32, "ppid": pl.Int32, "comm": pl.String,
                                    "probe": pl.String, "errno": pl.String, "path": pl.String, "ret": pl.Int64})
    return df.with_columns(
        pl.lit(trace_id).alias("trace_id"),
        pl.int_range(0, n, dtype=pl.Int64).alias("seq"),
        (pl.int_range(0, n, dtype=pl.Int64) * 1500 + run_seed).alias("ts_ns"),
        pl.lit(0, dtype=pl.Int16).alias("depth"),
        pl.lit("syscall").alias("layer"),
        pl.lit(kind).alias("kind"),
        pl.lit("sh -c 'python3 loader.py /data/in | gzip'").alias("command"),
        pl.lit(0, dtype=pl.Int32).alias("exit_status"),
    )


def dump_text(df: pl.DataFrame, path: Path, style: str) -> None:
    """One line per event: ``raw`` (strace-like, in recorded order), ``masked`` (no pid/ret,
    temp names masked, recorded order) or ``threads`` (masked and grouped per thread by its
    rank in the trace: the best case for a line diff, only the injected event differs)."""
    masked = pl.concat_str([pl.col("probe"), pl.lit("("),
                            pl.col("path").fill_null("").str.replace_all(r"tmp[a-z0-9_]{8}", "tmpXXXXXXXX"),
                            pl.lit(") "), pl.col("errno").fill_null("")])
    if style == "raw":
        line = pl.concat_str([pl.col("pid").cast(pl.String), pl.lit(" "), pl.col("probe"), pl.lit("("),
                              pl.col("path").fill_null(""), pl.lit(") = "), pl.col("ret").cast(pl.String),
                              pl.lit(" "), pl.col("errno").fill_null("")])
        out = df.select(line.alias("l"))
    elif style == "masked":
        out = df.select(masked.alias("l"))
    else:
        out = df.sort([pl.col("tid") - pl.col("tid").min(), "seq"]).select(masked.alias("l"))
    out.write_csv(path, include_header=False, quote_style="never")


def measure(cmd: list[str], out_path: Path | None = None, cwd: str | None = None) -> dict:
    """Wall time, CPU time and peak RSS of one child, via GNU time (its own fork, so the
    peak RSS is the child's, not inherited from this big parent)."""
    timing = Path(tempfile.mktemp(prefix="bench-time-"))
    full = ["/usr/bin/time", "-o", str(timing), "-f", "%e %U %S %M", *cmd] if shutil.which("time") or Path("/usr/bin/time").exists() else cmd
    t0 = time.perf_counter()
    with open(out_path or os.devnull, "wb") as out:
        proc = subprocess.run(full, stdout=out, stderr=subprocess.PIPE, cwd=cwd)
    wall = time.perf_counter() - t0
    err = proc.stderr.decode().strip()[-300:]
    try:
        fields = timing.read_text().split()[-4:]
        _, user, system, rss_kib = map(float, fields)
        cpu, rss = user + system, rss_kib / 1024
    except (OSError, ValueError):
        cpu, rss = float("nan"), float("nan")
    timing.unlink(missing_ok=True)
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss, "status": proc.returncode, "stderr": err}


FLOOR = "floor: python + pyarrow import"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100,000 events instead of 1,000,000")
    ap.add_argument("--events", type=int, help="events per trace (default 1,000,000)")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated files in DIR")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds, each running every measurement once (interleaved), best kept (default 3)")
    ap.add_argument("--before", metavar="CHECKOUT",
                    help="also run the CLI of another checkout (e.g. `git archive REV | tar -x -C DIR`) "
                         "on the same files, interleaved: before/after in one run")
    ap.add_argument("--no-masked", action="store_true",
                    help="skip GNU diff on the masked dump (tens of seconds at 1M events)")
    args = ap.parse_args(argv)
    n_events = args.events or (100_000 if args.quick else 1_000_000)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-diff-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        rng = np.random.default_rng(1)
        n_names = n_events // 7 + 10
        names = _file_names(n_names, rng)
        reads = rng.integers(1, 4, size=n_names)
        good = synth_trace(n_events, 11, 4100, "/tmp/tmpk3j9x_2a", None, names, reads, "good-1", "good")
        bad = synth_trace(n_events, 22, 9300, "/tmp/tmpq8w1zz_0", int(n_names * 0.6), names, reads, "bad-1", "failure")
        gp, bp = work / "good.parquet", work / "bad.parquet"
        write_table(good, gp, "events")
        write_table(bad, bp, "events")
        for name, df in (("good", good), ("bad", bad)):
            for style in ("raw", "masked", "threads"):
                dump_text(df, work / f"{name}.{style}.txt", style)
        print(f"generated {good.height:,} good + {bad.height:,} bad events in {time.perf_counter() - t0:.1f} s ({work})")

        lib_code = (
            "import sys,time,json;from baseline.run.diff import diff_traces;"
            "t=time.perf_counter();c=time.process_time();"
            f"r=diff_traces([{str(gp)!r}],{str(bp)!r});"
            "print(json.dumps({'s':time.perf_counter()-t,'cpu':time.process_time()-c,"
            "'b':r.bifurcation and [r.bifurcation['probe'],r.bifurcation['errno'],r.bifurcation['path']]}))"
        )
        runs = {
            "baseline diff (library)": [PY, "-c", lib_code],
            "baseline diff (CLI)": [PY, "-m", "baseline.cli", "diff", str(gp), str(bp), "--json"],
            **({"baseline diff (CLI, before)": [PY, "-m", "baseline.cli", "diff", str(gp), str(bp), "--json"]}
               if args.before else {}),
            # what any Python CLI reading Parquet pays before its first row: the interpreter and
            # the pyarrow/numpy imports (the floor under the CLI's ratio to GNU diff)
            FLOOR: [PY, "-c", "import pyarrow.lib"],
            "GNU diff, raw dump": ["diff", str(work / "good.raw.txt"), str(work / "bad.raw.txt")],
            "GNU diff, masked dump": ["diff", str(work / "good.masked.txt"), str(work / "bad.masked.txt")],
            "GNU diff, per-thread dump": ["diff", str(work / "good.threads.txt"), str(work / "bad.threads.txt")],
        }
        if args.no_masked:
            del runs["GNU diff, masked dump"]
        # Byte-compile both checkouts first: an installed package has its .pyc files, and a
        # checkout gets them on its first run unless PYTHONDONTWRITEBYTECODE is set (as in
        # some CI and sandbox environments); compiling the sources again on every run would
        # add ~0.07 s of CPU to each diff that no user pays.
        for tree in [REPO, *([Path(args.before)] if args.before else [])]:
            subprocess.run([PY, "-m", "compileall", "-q", str(tree / "baseline"), str(tree / "tracer")], check=False,
                           stdout=subprocess.DEVNULL)
        refs = [k for k in runs if k.startswith("GNU")]
        results: dict[str, dict] = {}
        samples: dict[str, list[dict]] = {}
        loads = []

        def out_of(label: str) -> Path:
            return work / (label.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "") + ".out")

        # Rounds interleave the measurements, so a load change on the shared machine hits all
        # of them alike; each figure is the best of the rounds, taken separately.
        for _ in range(args.repeat):
            loads.append(os.getloadavg()[0])
            for label, cmd in runs.items():
                out = out_of(label)
                m = measure(cmd, out, cwd=args.before if label.endswith("before)") else None)
                if label.endswith("(library)"):
                    m["inner"] = json.loads(out.read_text().splitlines()[-1])
                samples.setdefault(label, []).append(m)
                best = results.get(label)
                if best is None:
                    results[label] = dict(m)
                    continue
                for key in ("wall_s", "cpu_s", "rss_mib"):
                    best[key] = min(best[key], m[key])
                if "inner" in m:
                    best["inner"]["s"] = min(best["inner"]["s"], m["inner"]["s"])
                    best["inner"]["cpu"] = min(best["inner"]["cpu"], m["inner"]["cpu"])
        for label, best in results.items():
            out = out_of(label)
            with open(out, "rb") as fh:
                best["output_lines"] = sum(1 for _ in fh)
            if "(CLI" in label:
                obj = json.loads(out.read_text())
                b = obj["bifurcation"]
                best["bifurcation"] = b and f"{b['probe']} {b['path']} -> {b['errno']}"
        print(f"\nbest of {args.repeat} interleaved rounds (wall, cpu and peak RSS taken separately)")
        print(f"{'measurement':28} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'exit':>5} {'out lines':>10}")
        for label, m in results.items():
            print(f"{label:28} {m['wall_s']:8.3f} {m['cpu_s']:8.3f} {m['rss_mib']:13.1f} {m['status']:>5} "
                  f"{m['output_lines']:>10,}")
        if args.repeat > 1:
            print(f"\nmedian of the {args.repeat} rounds (peak RSS varies by ~10-25 MiB from run to run: the glibc heap's "
                  "fragmentation depends on the order its holes are reused)")
            for label, ms in samples.items():
                med = {key: float(np.median([m[key] for m in ms])) for key in ("wall_s", "cpu_s", "rss_mib")}
                print(f"{label:28} {med['wall_s']:8.3f} {med['cpu_s']:8.3f} {med['rss_mib']:13.1f}")
                results[label]["median"] = med
        if args.before and args.repeat > 1:
            # each round's CLI over the before CLI of the same round: the load changes between
            # rounds hit both alike, so these ratios spread less than the bests and medians
            print("\nCLI / CLI (before), paired by round: median (min-max) of the per-round ratios")
            pairs = list(zip(samples["baseline diff (CLI)"], samples["baseline diff (CLI, before)"], strict=True))
            for key in ("wall_s", "cpu_s", "rss_mib"):
                r = sorted(a[key] / max(b[key], 1e-3) for a, b in pairs)
                print(f"  {key:8} x{float(np.median(r)):.3f} (x{r[0]:.3f}-x{r[-1]:.3f})")
        lib = results["baseline diff (library)"]
        print(f"\nlibrary call inside its process (after imports): wall {lib['inner']['s']:.3f} s, "
              f"cpu {lib['inner']['cpu']:.3f} s; bifurcation: {lib['inner']['b']}")
        print(f"CLI bifurcation: {results['baseline diff (CLI)'].get('bifurcation')}")
        if args.before:
            print(f"CLI (before) bifurcation: {results['baseline diff (CLI, before)'].get('bifurcation')}")
        print(f"load average at each round: {', '.join(f'{x:.2f}' for x in loads)}, now {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} CPUs (wall times are inflated under load; cpu s = user+sys of the child)")
        for ref in refs:
            r = results[ref]
            print(f"\nvs {ref}:")
            for label in [k for k in results if k.startswith("baseline") or k == FLOOR]:
                m = results[label]
                print(f"  {label}: wall x{m['wall_s'] / r['wall_s']:.2f}, cpu x{m['cpu_s'] / max(r['cpu_s'], 1e-3):.2f}, "
                      f"peak RSS x{m['rss_mib'] / r['rss_mib']:.2f}"
                      + (f" (medians: wall x{m['median']['wall_s'] / r['median']['wall_s']:.2f}, "
                         f"cpu x{m['median']['cpu_s'] / max(r['median']['cpu_s'], 1e-3):.2f}, "
                         f"peak RSS x{m['median']['rss_mib'] / r['median']['rss_mib']:.2f})" if "median" in m else ""))
            print(f"  in-process library call: wall x{lib['inner']['s'] / r['wall_s']:.2f}, "
                  f"cpu x{lib['inner']['cpu'] / max(r['cpu_s'], 1e-3):.2f}")
        for label, m in results.items():
            if m["status"] not in (0, 1):
                print(f"!! {label} exit {m['status']}: {m['stderr']}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
