"""`tracer record` overhead on a real syscall-heavy workload, against the same workload
untraced and under `strace -f -o /dev/null`, all measured in the same run; and where the
recorder's time per call goes (the ingredient table).

    sudo .venv/bin/python -m bench.bench_record [--quick] [--files N] [--repeat R]
        [--before CHECKOUT] [--ablate CLOCK,ARGS,PATHS,ENTER] [--calls N] [--rounds R]
        [--no-ingredients] [--no-workload] [--no-strace] [--only DEFINES]

1. Workload: a tree of small files (default 3000) walked by find+cat, `ls -lR`, `tar | cat`,
   plus 30 fork+exec of /bin/true: many small open/read/close/stat calls and process creation.
   Reported: median wall time of the command per mode (for the recorder the command's run
   time while traced, what the traced program experiences, and the total including decoding,
   path resolution and the Parquet write); the CPU time the command itself used (user + system,
   from its rusage: the BPF programs run in its system time); the recorder's own CPU while the
   command ran (the ring buffer consumer); events recorded, events/s and lost events. Ratios are
   of medians; the range of the per-round ratios is shown beside them. "Untraced" has nothing
   attached to the syscall tracepoints (the recorder attaches its programs for a recording
   only: an attached sys_enter/sys_exit program slows every syscall of the machine).
   With --before CHECKOUT, the recorder of another checkout (a directory holding its `tracer`
   package and `bpf/`, e.g. `git archive REV | tar -x -C DIR`) is measured too, interleaved.
   With --ablate, this recorder is measured again with one piece left out each (the
   ABLATE_NO_* defines of bpf/syscall_recorder.c: the clock reads, the argument registers,
   path and output bytes, the sys_enter program): what each piece costs on the real workload,
   where cache effects make it dearer than in the tight loops below. Those recordings are
   incomplete; they are measured, never kept.
2. Ingredients: CPU added per call of a tight C loop (bench/c/syscall_loop.c: getppid, openat of
   a missing path, a 64-byte write to /dev/null, a 4 KiB pwrite64 to a file), traced minus
   untraced, for bpf/record_ingredients.c's variants (the recorder's skeleton and one piece
   more or different each) and for the whole recorder(s). The loop's own thread CPU time, so
   other processes' load does not count; median over rounds, all variants interleaved per round.

Every recorder, this one and --before, runs in a child process of its own (`--serve`), so two
versions of the `tracer` package never meet in one interpreter; the modes are interleaved so
that load from other processes hits them alike; on a busy machine the CPU-time ratio is the
steadier figure. The BPF compile and a first recording of /bin/true (first-use costs) are shown
separately and not included. Load averages are printed with each section, and whether
kernel.bpf_stats_enabled is on (it slows every BPF program run by tens of ns).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes as ct
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOOP_C = REPO / "bench" / "c" / "syscall_loop.c"
INGREDIENTS_C = REPO / "bpf" / "record_ingredients.c"
LOOP_KINDS = ("getppid", "openat", "write64", "write4k")
ABLATIONS = {  # --ablate piece -> row label
    "CLOCK": "without the clock reads",
    "ARGS": "without argument registers (+paths)",
    "PATHS": "without path and output bytes",
    "RINGBUF": "without the ring buffer copy",
    "ENTER": "without sys_enter (exit time only)",
}

# (label, defines, loop kind, reference label): each ingredient's row is compared with the
# reference row measured on the same call kind in the same rounds.
INGREDIENTS = [
    ("floor: raw sys_enter + raw sys_exit, empty", "EMPTY", "getppid", None),
    ("skeleton: generation + array slot by tid", "", "getppid", "floor: raw sys_enter + raw sys_exit, empty"),
    ("  tgid hash at entry and exit instead of the slot", "HASH_FILTER", "getppid", "skeleton: generation + array slot by tid"),
    ("  task-local storage instead of the slot", "TASK_STORAGE", "getppid", "skeleton: generation + array slot by tid"),
    ("  classic sys_enter tracepoint instead of raw", "CLASSIC_ENTER", "getppid", "skeleton: generation + array slot by tid"),
    ("  classic sys_exit tracepoint instead of raw", "CLASSIC_EXIT", "getppid", "skeleton: generation + array slot by tid"),
    ("  classic sys_enter and sys_exit", "CLASSIC_ENTER,CLASSIC_EXIT", "getppid", "skeleton: generation + array slot by tid"),
    ("  + bpf_ktime_get_ns at entry and exit", "KTIME", "getppid", "skeleton: generation + array slot by tid"),
    ("  + 6 argument registers via bpf_task_pt_regs", "PT_REGS_ARGS", "getppid", "skeleton: generation + array slot by tid"),
    ("  + bpf_get_current_comm every call", "COMM", "getppid", "skeleton: generation + array slot by tid"),
    ("  + 112-byte record into the per-CPU batch", "EMIT", "getppid", "skeleton: generation + array slot by tid"),
    ("  slot by the saved registers' address, not tid", "REGS_KEY", "getppid", "skeleton: generation + array slot by tid"),
    ("  no sys_enter program (sys_exit takes the slot)", "EXIT_ONLY", "getppid", "skeleton: generation + array slot by tid"),
    ("  + bpf_ktime_get_ns at exit only", "KTIME_EXIT", "getppid", "skeleton: generation + array slot by tid"),
    ("floor, sys_exit alone (empty)", "EMPTY,EXIT_ONLY", "getppid", "floor: raw sys_enter + raw sys_exit, empty"),
    ("skeleton (openat of a missing path)", "", "openat", None),
    ("  + the path read (bpf_probe_read_user_str)", "PATH", "openat", "skeleton (openat of a missing path)"),
    ("skeleton (64-byte write)", "", "write64", None),
    ("  + 64 bytes copied (bpf_probe_read_user)", "OUTPUT=64", "write64", "skeleton (64-byte write)"),
    ("skeleton (4 KiB pwrite64)", "", "write4k", None),
    ("  + 256 bytes copied", "OUTPUT=256", "write4k", "skeleton (4 KiB pwrite64)"),
]


def build_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.txt").write_text(f"file {i}\n" * 4)


def workload(root: Path) -> list[str]:
    script = (
        f"find {root} -type f -exec cat {{}} + >/dev/null; "
        f"ls -lR {root} >/dev/null; "
        f"tar -cf - -C {root} . | cat >/dev/null; "
        "for i in $(seq 30); do /bin/true; done"
    )
    return ["/bin/sh", "-c", script]


def children_cpu() -> float:
    """CPU seconds used by reaped children (the command and its descendants)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def others_on_syscalls() -> str:
    """BPF programs other processes hold on the syscall tracepoints (from `bpftool perf list`).
    They confound the figures: each keeps every syscall on the kernel's slow path, and one on
    the classic raw_syscalls:sys_enter pays the perf-buffer copy of every call for all."""
    if not shutil.which("bpftool"):
        return "other programs on sys_enter/sys_exit: unknown (no bpftool)"
    try:
        lines = subprocess.run(["bpftool", "perf", "list"], capture_output=True, text=True,
                               timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "other programs on sys_enter/sys_exit: unknown"
    mine = {os.getpid(), *(rp.proc.pid for rp in RecorderProcess.live)}
    found: dict[str, int] = {}
    for line in lines:
        parts = line.split()
        if (len(parts) >= 2 and parts[0] == "pid" and parts[-1] in ("sys_enter", "sys_exit")
                and int(parts[1]) not in mine):
            kind = f"{parts[-2]} {parts[-1]}"
            found[kind] = found.get(kind, 0) + 1
    return "other programs on sys_enter/sys_exit: " + (
        ", ".join(f"{n} {k}" for k, n in sorted(found.items())) or "none")


def run_counts() -> dict[int, int]:
    """Per loaded BPF program, its run count: it grows only while BPF run-time stats are on,
    through the sysctl or while some process holds a BPF_ENABLE_STATS fd (bench_fleet does;
    the sysctl then still reads 0). Stats on add two clock reads to every program run (~75 ns
    a program here): the floor row doubles."""
    if not shutil.which("bpftool"):
        return {}
    try:
        out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                             timeout=30).stdout
        return {p["id"]: p.get("run_cnt", 0) for p in json.loads(out or "[]")}
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return {}


def stats_were_on(before: dict[int, int], after: dict[int, int]) -> bool:
    return any(after[i] > n for i, n in before.items() if i in after)


def disturbed(before: dict[int, int]) -> tuple[bool, dict[int, int]]:
    """Was the round that started with run counts `before` disturbed (another process's
    program on sys_enter/sys_exit now, or BPF stats on meanwhile)? And the counts now."""
    now = run_counts()
    return (not others_on_syscalls().endswith("none") or stats_were_on(before, now)), now


def machine_state() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        stats = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    except OSError:
        stats = "?"
    return f"load average {load}; kernel.bpf_stats_enabled={stats}; {others_on_syscalls()}"


# -- a recorder in a child process ------------------------------------------------------------
def serve() -> int:
    """Child side: load the recorder of the checkout `tracer` is imported from, then record
    each command read from stdin (one JSON line) and answer with one JSON line."""
    import tracer
    from tracer.record.recorder import SyscallRecorder

    extra = os.environ.get("BENCH_RECORD_CFLAGS", "").split()
    if extra:  # --ablate: the recorder with a piece left out (bpf/syscall_recorder.c ABLATE_*)
        base = SyscallRecorder.cflags
        SyscallRecorder.cflags = lambda self, *a: [*base(self, *a), *extra]
        if "-DABLATE_NO_ENTER" in extra:
            SyscallRecorder.PROGRAMS = tuple(p for p in SyscallRecorder.PROGRAMS if p[1] != b"sys_enter")
    recorder = SyscallRecorder().load()
    manual = not hasattr(recorder, "_attach")  # older recorders stay attached once loaded
    programs = (("raw", b"sys_enter", b"raw_tracepoint__sys_enter"),
                ("tp", b"raw_syscalls:sys_enter", b"tracepoint__raw_syscalls__sys_enter"),
                ("raw", b"sys_exit", b"raw_tracepoint__sys_exit"),
                ("tp", b"sched:sched_process_fork", b"tracepoint__sched__sched_process_fork"),
                ("tp", b"sched:sched_process_exit", b"tracepoint__sched__sched_process_exit"))
    bpf = recorder.bpf
    present = [p for p in programs if p[2] in bpf.funcs]

    def attach(on: bool) -> None:
        for kind, hook, fn in present:
            if kind == "raw":
                bpf.attach_raw_tracepoint(tp=hook, fn_name=fn) if on else bpf.detach_raw_tracepoint(hook)
            else:
                bpf.attach_tracepoint(tp=hook, fn_name=fn) if on else bpf.detach_tracepoint(hook)

    if manual:
        attach(False)
    follow = recorder._follow
    consumer: list[float] = []

    def timed_follow(*a, **kw):  # the recorder's own CPU while the command runs
        t0 = time.thread_time()
        try:
            return follow(*a, **kw)
        finally:
            consumer.append(time.thread_time() - t0)

    recorder._follow = timed_follow
    print(json.dumps({"ready": str(Path(tracer.__file__).parents[1])}), flush=True)
    devnull = os.open("/dev/null", os.O_RDWR)
    for line in sys.stdin:
        req = json.loads(line)
        if manual:
            attach(True)
        c0 = children_cpu()
        rec = recorder.record(req["argv"], stdin=devnull, stdout=devnull, stderr=devnull)
        cpu = children_cpu() - c0
        if manual:
            attach(False)
        t0 = time.perf_counter()
        if req.get("write"):
            rec.write(req["write"])
        print(json.dumps({
            "run_s": rec.duration_s, "cpu_s": cpu, "post_s": time.perf_counter() - t0,
            "consumer_s": consumer[-1], "events": rec.events.num_rows, "raw": rec.raw_records,
            "lost": rec.lost_events, "exit_status": rec.exit_status,
        }), flush=True)
    return 0


class RecorderProcess:
    """A recorder of `checkout` in a child process (see serve())."""

    live: list[RecorderProcess] = []

    def __init__(self, checkout: Path, label: str, cflags: str = ""):
        self.label = label
        self.ablated = bool(cflags)
        env = dict(os.environ, PYTHONPATH=str(checkout), BENCH_RECORD_CFLAGS=cflags)
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     cwd=checkout, text=True)
        ready = json.loads(self.proc.stdout.readline())
        self.load_s = time.perf_counter() - t0
        if Path(ready["ready"]).resolve() != checkout.resolve():
            raise SystemExit(f"{label}: imported tracer from {ready['ready']}, not {checkout}")
        RecorderProcess.live.append(self)

    def record(self, argv: list[str], write: Path | None = None) -> dict:
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps({"argv": argv, "write": str(write) if write else None}) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        out["total_s"] = time.perf_counter() - t0
        return out

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# -- 1. the workload ------------------------------------------------------------------------
def bench_workload(recorders: list[RecorderProcess], cmd: list[str], repeat: int, tmp: Path,
                   strace: bool = True) -> bool:
    null = subprocess.DEVNULL
    wall: dict[str, list[float]] = {"untraced": [], "strace": []}
    cpu: dict[str, list[float]] = {"untraced": [], "strace": []}
    info: dict[str, list[dict]] = {}
    have_strace = strace and shutil.which("strace") is not None

    def run(argv: list[str]) -> tuple[float, float]:
        c0, t0 = children_cpu(), time.perf_counter()
        subprocess.run(argv, stdout=null, stderr=null, check=True)
        return time.perf_counter() - t0, children_cpu() - c0

    print(f"workload ({machine_state()} at the start)")
    dirty: list[int] = []  # rounds with other programs on the syscall tracepoints or BPF stats on
    counts = run_counts()
    for r in range(repeat):
        bad, counts = disturbed(counts)
        if bad:
            dirty.append(r)
        order = ["untraced", "strace", *[rp.label for rp in recorders]]
        if r % 2:
            order.reverse()
        for mode in order:
            if mode == "untraced":
                w, c = run(cmd)
            elif mode == "strace":
                if not have_strace:
                    continue
                w, c = run(["strace", "-f", "-qq", "-o", "/dev/null", *cmd])
            else:
                rp = next(x for x in recorders if x.label == mode)
                out = rp.record(cmd, write=tmp / "trace.parquet")
                assert out["exit_status"] == 0, out
                w, c = out["run_s"], out["cpu_s"]
                info.setdefault(mode, []).append(out)
            wall.setdefault(mode, []).append(w)
            cpu.setdefault(mode, []).append(c)
        bad, counts = disturbed(counts)
        if bad and (not dirty or dirty[-1] != r):
            dirty.append(r)
    clean = [r for r in range(repeat) if r not in dirty]
    if dirty and len(clean) >= 3:
        # Another process's program on sys_enter/sys_exit keeps every syscall on the slow path
        # (and adds its own cost), BPF stats add two clock reads to every program run: in some
        # modes of a round and not others. Those rounds are left out.
        print(f"  ({len(dirty)} of {repeat} rounds had other programs on sys_enter/sys_exit or "
              f"BPF stats on: left out)")
        for values in (wall, cpu):
            for mode in values:
                values[mode] = [v for i, v in enumerate(values[mode]) if i in clean]
        info = {m: [o for i, o in enumerate(outs) if i in clean] for m, outs in info.items()}
    elif dirty:
        print(f"  ({len(dirty)} of {repeat} rounds had other programs on sys_enter/sys_exit or "
              "BPF stats on: figures confounded, rerun)")
    repeat = len(wall["untraced"])
    med = statistics.median
    u, cu = med(wall["untraced"]), med(cpu["untraced"])

    def ratios(mode: str, values: dict[str, list[float]]) -> str:
        per_round = [t / b for t, b in zip(values[mode], values["untraced"], strict=True)]
        return f"{med(values[mode]) / med(values['untraced']):5.2f}x ({min(per_round):.2f}-{max(per_round):.2f})"

    print(f"  {'mode':34s} {'wall':>8s}  {'vs untraced':20s} {'command CPU':>11s}  vs untraced")
    print(f"  {'untraced':34s} {u:8.3f}s {'':20s} {cu:10.3f}s")
    if have_strace:
        print(f"  {'strace -f -o /dev/null':34s} {med(wall['strace']):8.3f}s {ratios('strace', wall):20s} "
              f"{med(cpu['strace']):10.3f}s  {ratios('strace', cpu)}")
    ok = True
    for rp in recorders:
        m = rp.label
        outs = info[m]
        if rp.ablated:
            print(f"  {'  ' + m:34s} {med(wall[m]):8.3f}s {ratios(m, wall):20s} "
                  f"{med(cpu[m]):10.3f}s  {ratios(m, cpu)}")
            continue
        print(f"  {'tracer record (' + m + ')':34s} {med(wall[m]):8.3f}s {ratios(m, wall):20s} "
              f"{med(cpu[m]):10.3f}s  {ratios(m, cpu)}")
        total = med([o["run_s"] + o["post_s"] for o in outs])
        cons = med([o["consumer_s"] for o in outs])
        lost = max(o["lost"] for o in outs)
        events, raw = med([o["events"] for o in outs]), med([o["raw"] for o in outs])
        print(f"    incl. decode, paths, Parquet write {total:.3f}s ({total / u:.2f}x); recorder's own CPU "
              f"while the command ran {cons:.3f}s ({cons / med(wall[m]):.0%} of a core); events {events:,.0f} "
              f"(raw {raw:,.0f}), {raw / med(wall[m]):,.0f}/s; lost {lost}; BPF compile+load and first "
              f"recording {rp.load_s:.1f}s (once, excluded)")
        ok = ok and lost == 0
    if "before" in cpu and "this" in cpu:
        # paired in each round: load from other processes hits both alike
        pairs = [t / b for t, b in zip(cpu["this"], cpu["before"], strict=True)]
        print(f"  this vs before, command CPU per round: median {med(pairs):.3f} "
              f"({min(pairs):.3f}-{max(pairs):.3f})")
    print(f"  ({machine_state()} at the end; median of {repeat}, modes interleaved)")
    return ok


# -- 2. ingredients -------------------------------------------------------------------------
def build_loop(tmp: Path) -> Path:
    exe = tmp / "syscall_loop"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(LOOP_C)], check=True)
    return exe


def loop_cpu(loop: Path, kind: str, calls: int, out: Path, trace=None) -> float:
    """CPU ns per call of one loop run; `trace(pid)` starts tracing it before it runs."""
    proc = subprocess.Popen([str(loop), kind, str(calls), str(out)], stdin=subprocess.PIPE)
    if trace is not None:
        trace(proc.pid)
    proc.stdin.write(b"g")
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit(f"{loop} {kind} failed")
    return float(out.read_text().split()[0])


class Variant:
    def __init__(self, label: str, defines: str, kind: str, ref: str | None):
        from tracer.privilege import load_bcc

        BPF = load_bcc().BPF  # noqa: N806 - bcc's class name
        self.label, self.kind, self.ref = label, kind, ref
        cflags = [f"-D{d}" for d in defines.split(",") if d]
        self.classic = "-DCLASSIC_ENTER" in cflags
        self.classic_exit = "-DCLASSIC_EXIT" in cflags
        self.exit_only = "-DEXIT_ONLY" in cflags
        self.bpf = BPF(src_file=str(INGREDIENTS_C).encode(), cflags=cflags)
        self._hook(False)  # bcc attached them
        self.bpf[b"control"][ct.c_int(0)] = ct.c_uint(1)
        from tracer.record.ringbuf import ring_reader

        self.ring = ring_reader(self.bpf, b"events", 16384)
        self.added: list[float] = []

    def _hook(self, on: bool) -> None:
        b = self.bpf
        if self.classic:
            if on:
                b.attach_tracepoint(tp=b"raw_syscalls:sys_enter", fn_name=b"tracepoint__raw_syscalls__sys_enter")
            else:
                b.detach_tracepoint(b"raw_syscalls:sys_enter")
        elif self.exit_only:
            if not on:  # bcc attached it at load
                with contextlib.suppress(Exception):
                    b.detach_raw_tracepoint(b"sys_enter")
        elif on:
            b.attach_raw_tracepoint(tp=b"sys_enter", fn_name=b"raw_tracepoint__sys_enter")
        else:
            b.detach_raw_tracepoint(b"sys_enter")
        if self.classic_exit:
            if on:
                b.attach_tracepoint(tp=b"raw_syscalls:sys_exit", fn_name=b"tracepoint__raw_syscalls__sys_exit")
            else:
                b.detach_tracepoint(b"raw_syscalls:sys_exit")
        elif on:
            b.attach_raw_tracepoint(tp=b"sys_exit", fn_name=b"raw_tracepoint__sys_exit")
        else:
            b.detach_raw_tracepoint(b"sys_exit")

    def traced(self, loop: Path, calls: int, out: Path) -> float:
        self._hook(True)
        try:
            return min(loop_cpu(loop, self.kind, calls, out,
                                lambda pid: self.bpf[b"traced"].__setitem__(ct.c_uint(pid), ct.c_uint(1)))
                       for _ in range(2))
        finally:
            self._hook(False)
            self.ring.skip()
            self.bpf[b"traced"].clear()

    def close(self) -> None:
        self.ring.close()
        self.bpf.cleanup()


def selected_ingredients(only: list[str] | None) -> list[tuple[str, str, str, str | None]]:
    """The ingredient rows whose defines are named in `only` (all when None), with the rows
    they are compared with."""
    if not only:
        return INGREDIENTS
    wanted = {v[0] for v in INGREDIENTS if v[1] in only or (not v[1] and "SKELETON" in only)}
    wanted |= {v[3] for v in INGREDIENTS if v[0] in wanted and v[3]}
    return [v for v in INGREDIENTS if v[0] in wanted]


def bench_ingredients(recorders: list[RecorderProcess], calls: int, rounds: int, tmp: Path,
                      only: list[str] | None = None) -> None:
    loop = build_loop(tmp)
    out = tmp / "loop.out"
    variants = [Variant(*v) for v in selected_ingredients(only)]
    whole: dict[tuple[str, str], list[float]] = {}
    untraced: dict[str, list[float]] = {k: [] for k in LOOP_KINDS}
    print(f"\ningredients: CPU ns added per call of a tight loop, traced minus untraced "
          f"({calls:,} calls a run, best of 2, median of {rounds} rounds, all interleaved; "
          f"{machine_state()} at the start)")
    dirty: list[int] = []
    counts = run_counts()
    try:
        for r in range(rounds):
            bad, counts = disturbed(counts)
            if bad:
                dirty.append(r)
            for v in variants:
                base = min(loop_cpu(loop, v.kind, calls, out) for _ in range(2))
                v.added.append(v.traced(loop, calls, out) - base)
            for rp in recorders:
                if rp.ablated:
                    continue
                for kind in LOOP_KINDS:
                    base = min(loop_cpu(loop, kind, calls, out) for _ in range(2))
                    untraced[kind].append(base)
                    best = None
                    for _ in range(2):
                        rp.record([str(loop), kind, str(calls), str(out)])
                        value = float(out.read_text().split()[0])
                        best = value if best is None else min(best, value)
                    whole.setdefault((rp.label, kind), []).append(best - base)
            bad, counts = disturbed(counts)
            if bad and (not dirty or dirty[-1] != r):
                dirty.append(r)
    finally:
        for v in variants:
            v.close()
    clean = [r for r in range(rounds) if r not in dirty]
    if dirty and len(clean) >= 2:
        print(f"  ({len(dirty)} of {rounds} rounds had other programs on sys_enter/sys_exit or BPF stats on: "
              "left out)")
        for v in variants:
            v.added = [x for i, x in enumerate(v.added) if i in clean]
        whole = {k: [x for i, x in enumerate(xs) if i in clean] for k, xs in whole.items()}
        per_round = max(1, sum(not rp.ablated for rp in recorders))  # untraced values a round
        untraced = {k: [x for i, x in enumerate(xs) if i // per_round in clean] for k, xs in untraced.items()}
    elif dirty:
        print(f"  ({len(dirty)} of {rounds} rounds had other programs on sys_enter/sys_exit or BPF stats on: "
              "confounded, rerun)")
    med = statistics.median
    by_label = {v.label: med(v.added) for v in variants}
    print(f"  {'variant':52s} {'call':8s} {'added':>7s} {'vs its reference':>17s}")
    for v in variants:
        added = by_label[v.label]
        delta = f"{added - by_label[v.ref]:+7.0f} ns" if v.ref in by_label else ""
        print(f"  {v.label:52s} {v.kind:8s} {added:7.0f} {delta:>17s}")
    if recorders:
        print("  untraced loop CPU per call: " + ", ".join(
            f"{k} {med(untraced[k]):.0f} ns" for k in LOOP_KINDS))
    for rp in (rp for rp in recorders if not rp.ablated):
        row = ", ".join(f"{k} {med(whole[(rp.label, k)]):.0f}" for k in LOOP_KINDS)
        print(f"  whole recorder ({rp.label}): {row} ns added per call")
    print(f"  ({machine_state()} at the end)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller tree and loops, one repetition")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout whose recorder to measure too")
    parser.add_argument("--calls", type=int, default=50_000, help="calls per ingredient loop run")
    parser.add_argument("--rounds", type=int, default=5, help="ingredient rounds")
    parser.add_argument("--ablate", help="also this recorder without CLOCK, ARGS, PATHS, RINGBUF or "
                        "ENTER (comma-separated; workload only)")
    parser.add_argument("--no-strace", action="store_true", help="leave strace out of the workload")
    parser.add_argument("--no-ingredients", action="store_true")
    parser.add_argument("--only", help="ingredient rows to measure: their defines, comma-separated "
                        "(SKELETON for the skeleton rows; the rows they are compared with come too)")
    parser.add_argument("--no-workload", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    if os.geteuid() != 0:
        print("bench_record: needs root (BPF)", file=sys.stderr)
        return 2
    files = 500 if args.quick else args.files
    repeat = 1 if args.quick else args.repeat
    calls, rounds = (10_000, 1) if args.quick else (args.calls, args.rounds)

    tmp = Path(tempfile.mkdtemp(prefix="tracebase-bench-"))
    recorders: list[RecorderProcess] = []
    try:
        recorders.append(RecorderProcess(REPO, "this"))
        if args.before:
            recorders.append(RecorderProcess(args.before, "before"))
        for piece in (args.ablate.split(",") if args.ablate else []):
            if piece not in ABLATIONS:
                parser.error(f"--ablate: expected some of {','.join(ABLATIONS)}, found {piece}")
            recorders.append(RecorderProcess(REPO, ABLATIONS[piece], f"-DABLATE_NO_{piece}"))
        for rp in recorders:  # first-use costs (ring buffer set-up, library warm-up)
            rp.record(["/bin/true"])
        ok = True
        if not args.no_workload:
            build_tree(tmp / "tree", files)
            cmd = workload(tmp / "tree")
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # page cache
            print(f"workload: {files} files (find+cat, ls -lR, tar|cat, 30 x fork+exec)")
            ok = bench_workload(recorders, cmd, repeat, tmp, strace=not args.no_strace)
        if not args.no_ingredients:
            bench_ingredients(recorders, calls, rounds, tmp,
                              args.only.split(",") if args.only is not None else None)
        return 0 if ok else 1
    finally:
        for rp in recorders:
            rp.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
