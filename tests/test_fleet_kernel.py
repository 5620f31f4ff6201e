"""The kernel side of the fleet tracer, for real: calltree.c loaded with uprobes/uretprobes on the
fakeverbs library (a user-space reg_mr cascade), the raw-syscall variant on a real program, and
the fexit variant compiled with bcc (loaded only where the kernel allows fexit)."""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fleet_support import (
    LAYER_DRIVER,
    LAYER_PEER,
    LAYER_UMEM,
    LAYER_UVERBS,
    build_fakeverbs,
    build_fakeverbs_threads,
    run_driver,
    write_fake_set,
)

from tracer.fleet.config import DEFAULT_SLOTS
from tracer.fleet.probes import load_probe_set
from tracer.fleet.program import (
    DEFAULT_EXAMPLES,
    HEADER_SIZE,
    MAX_EXAMPLES,
    Batch,
    FleetProgram,
    HostContext,
    assign_repeats,
    decode_tree,
    events_from_batch,
    tree_rows,
)
from tracer.fleet.spool import events_table
from tracer.schema import read_events, write_table

RINGBUF_KB = 4  # one page: small enough for a burst to overflow it
REG_MR_LAYERS = ["uverbs", "driver", "core", "peer-mem"]
REG_MR_CHAIN = ["fv_uverbs_reg_mr", "fv_mlx5_reg_user_mr", "fv_umem_get", "fv_peer_umem_get"]
K = DEFAULT_EXAMPLES


@pytest.fixture(scope="module")
def fake(tmp_path_factory, need_bpf, need_cc):  # noqa: ARG001 - fixtures gate the module
    out = tmp_path_factory.mktemp("fakeverbs")
    lib, driver = build_fakeverbs(out, need_cc)
    pset = load_probe_set(str(write_fake_set(out / "fakeverbs.yaml", lib)))
    prog = FleetProgram(pset, ringbuf_kb=RINGBUF_KB, sample_every=1)
    prog.compile()
    results = prog.attach()
    assert all(r.live for r in results)
    yield prog, driver
    prog.close()


@pytest.fixture
def prog(fake):
    """The shared program, reset to: capture closed, sample 1, 50 ms bound, all processes."""
    program, _ = fake
    program.configure(sample_every=1, latency_bound_ns=50_000_000, target_pid=0, failures_only=False)
    program.set_capture(False)
    program.rotate()
    program.poll()
    return program


@pytest.fixture
def driver(fake):
    return fake[1]


def _probe_names(prog, tree):
    return [prog.probe_set.probe(f.probe_id).symbol for f in tree.frames]


def test_failure_emits_whole_chain_with_each_layers_return(prog, driver, tmp_path):
    before = time.monotonic_ns()
    assert run_driver(driver, "reg_mr", K, LAYER_PEER, errno.EFAULT) == K
    trees = prog.poll()
    after = time.monotonic_ns()
    assert len(trees) == K
    for tree in trees:
        assert tree.kind == "failure"
        assert _probe_names(prog, tree) == ["fv_uverbs_reg_mr", "fv_mlx5_reg_user_mr", "fv_umem_get", "fv_peer_umem_get"]
        assert [f.depth for f in tree.frames] == [0, 1, 2, 3]
        assert [f.ret for f in tree.frames] == [-errno.EFAULT] * 4  # EFAULT at every layer: deeper than the driver
        # outside a capture window: no latencies, every frame at the tick the root returned in
        assert not tree.timed and [f.latency_ns for f in tree.frames] == [None] * 4
        assert len({f.ts_ns for f in tree.frames}) == 1
        assert before - 2 * prog.clock.tick_ns <= tree.frames[0].ts_ns <= after
        assert tree.comm == "fakeverbs_drive"
        assert tree.ppid == os.getpid()  # the driver's parent: read at the running kernel's offsets

    # A driver-level failure: the layers below succeeded, the errno appears at the driver.
    assert run_driver(driver, "reg_mr", 1, LAYER_DRIVER, errno.ENOMEM) == 1
    (tree,) = prog.poll()
    assert [f.ret for f in tree.frames] == [-errno.ENOMEM, -errno.ENOMEM, 0, 0]

    rows = tree_rows(tree, prog.probe_set, HostContext(host="h1"), job_id="77", metadata={"cgroup": "/x"})
    assert [r["layer"] for r in rows] == REG_MR_LAYERS
    assert [r["errno"] for r in rows] == ["ENOMEM", "ENOMEM", None, None]
    assert {r["command"] for r in rows} == {"reg_mr"} and {r["kind"] for r in rows} == {"failure"}
    assert rows[0]["exit_status"] == -errno.ENOMEM and rows[0]["trace_id"].startswith("h1:")
    path = write_table(events_table(rows), tmp_path / "e.parquet", "events")
    back = read_events(path)
    assert back["seq"].to_list() == [0, 1, 2, 3] and back["job_id"].to_list() == ["77"] * 4


def test_no_success_record_outside_capture_window(prog, driver):
    assert run_driver(driver, "reg_mr", 30) == 0
    assert prog.poll() == []
    delta = prog.read_deltas()
    for p in prog.probe_set.probes[:4]:
        assert delta.probes[p.id].invocations == 30 and delta.probes[p.id].failures == 0
    assert delta.emitted == 0 and delta.lost == 0


def test_failures_only_suppresses_good_traces(prog, driver):
    prog.set_capture(True)
    prog.configure(failures_only=True)
    run_driver(driver, "reg_mr", 5)
    run_driver(driver, "reg_mr", 2, LAYER_UMEM, errno.EAGAIN)
    assert [t.kind for t in prog.poll()] == ["failure", "failure"]


def test_good_traces_in_window_are_sampled_1_in_n(prog, driver):
    prog.set_capture(True)
    run_driver(driver, "reg_mr", 6)
    trees = prog.poll()
    assert [t.kind for t in trees] == ["good"] * 6
    assert all(_probe_names(prog, t)[0] == "fv_uverbs_reg_mr" and len(t.frames) == 4 for t in trees)
    assert all(f.ret == 0 for t in trees for f in t.frames)

    prog.configure(sample_every=4)
    run_driver(driver, "reg_mr", 16)  # any 16 consecutive calls hold exactly 4 multiples of 4
    assert len(prog.poll()) == 4
    run_driver(driver, "alloc_pd", 8)  # the sampling counter is per root probe
    trees = prog.poll()
    assert len(trees) == 2 and all(_probe_names(prog, t) == ["fv_uverbs_alloc_pd", "fv_mlx5_alloc_pd"] for t in trees)


def test_latency_bound_keeps_slow_successes_out(prog, driver):
    prog.set_capture(True)
    run_driver(driver, "reg_mr", 2, delay_us=60_000)  # 60 ms > 50 ms bound
    assert prog.poll() == []
    run_driver(driver, "reg_mr", 2, delay_us=5_000)  # 5 ms: a good trace
    trees = prog.poll()
    assert len(trees) == 2 and all(5_000_000 <= t.frames[0].latency_ns < 50_000_000 for t in trees)
    prog.configure(latency_bound_ns=2_000_000)  # a 2 ms bound now excludes them
    run_driver(driver, "reg_mr", 2, delay_us=5_000)
    assert prog.poll() == []
    # slow failures are always emitted
    run_driver(driver, "reg_mr", 1, LAYER_PEER, errno.EIO, delay_us=60_000)
    assert [t.kind for t in prog.poll()] == ["failure"]


def test_counters_exact_when_ring_buffer_overflows(prog, driver):
    # 12 signatures x 4 examples of ~190 bytes: more than one 4 KiB page holds
    errnos = list(range(1, 13))
    n_each, n_ok = 25, 500
    for err in errnos:
        assert run_driver(driver, "reg_mr", n_each, LAYER_UMEM, err) == n_each
    run_driver(driver, "reg_mr", n_ok)
    batch = prog.poll_batch()
    closed = prog.rotate()
    delta = closed.counters
    n_fail = n_each * len(errnos)
    ids = {p.symbol: p.id for p in prog.probe_set.probes}
    top, umem, peer = (delta.probes[ids[s]] for s in ("fv_uverbs_reg_mr", "fv_umem_get", "fv_peer_umem_get"))
    assert top.invocations == n_fail + n_ok and top.failures == n_fail
    assert umem.failures == n_fail and umem.errnos == {errno.errorcode[e]: n_each for e in errnos}
    assert peer.invocations == n_fail + n_ok and peer.failures == 0 and peer.errnos == {}
    assert 0 < len(batch) < K * len(errnos)  # the page held some examples, not all
    assert delta.emitted == len(batch) and delta.deferred > 0
    # every failing tree is accounted for: an example, a repeat of one, or lost (no example)
    repeat, lost = assign_repeats(batch, closed)
    assert repeat.sum() + lost == n_fail


def test_repeats_counted_after_k_examples_per_interval(prog, driver):
    assert run_driver(driver, "reg_mr", 10, LAYER_DRIVER, errno.ENOMEM) == 10
    batch = prog.poll_batch()
    assert len(batch) == K and len(set(batch.head["sig"].tolist())) == 1
    closed = prog.rotate()
    assert closed.repeats == {int(batch.head["sig"][0]): 10 - K}
    repeat, lost = assign_repeats(batch, closed)
    assert sorted(repeat.tolist()) == [1] * (K - 1) + [10 - K + 1] and lost == 0
    assert repeat.sum() == closed.counters.probes[0].failures == 10
    # the next interval starts afresh: K new examples of the same signature
    run_driver(driver, "reg_mr", 6, LAYER_DRIVER, errno.ENOMEM)
    again = prog.poll_batch()
    assert len(again) == K and set(again.head["sig"].tolist()) == set(batch.head["sig"].tolist())
    assert prog.rotate().repeats == {int(batch.head["sig"][0]): 6 - K}


def test_distinct_signatures_each_have_an_example_and_exact_repeat_counts(fake, driver):
    # the default ring buffer (256 KiB); every (layer, errno) pair is its own signature
    pset = fake[0].probe_set
    prog = FleetProgram(pset, sample_every=1)
    try:
        prog.compile()
        prog.attach()
        truth = {}
        for layer in (LAYER_UVERBS, LAYER_DRIVER, LAYER_UMEM, LAYER_PEER):
            for err in (errno.ENOMEM, errno.EFAULT, errno.EINVAL, errno.EAGAIN, errno.EIO):
                truth[(layer, err)] = run_driver(driver, "reg_mr", 3 + layer * 4, layer, err)
        run_driver(driver, "reg_mr", 50)
        batch = prog.poll_batch()
        closed = prog.rotate()
        batch = Batch.concat([batch, prog.poll_batch()])
    finally:
        prog.close()
    repeat, lost = assign_repeats(batch, closed)
    assert lost == 0 and closed.counters.lost == 0 and closed.counters.deferred == 0
    # name each example by where it first failed (the deepest failed frame) and its errno
    got: dict[tuple[int, int], list[int]] = {}
    for tree, rc in zip(batch.trees(), repeat.tolist(), strict=True):
        assert tree.kind == "failure" and [pset.probe(f.probe_id).symbol for f in tree.frames] == REG_MR_CHAIN
        deepest = max(i for i, f in enumerate(tree.frames) if f.failed)
        got.setdefault((LAYER_UVERBS + deepest, -tree.frames[deepest].ret), []).append(rc)
    assert set(got) == set(truth)  # every signature has at least one full example
    for key, counts in got.items():
        assert 1 <= len(counts) <= K and sum(counts) == truth[key], key
    assert sum(truth.values()) == closed.counters.probes[0].failures == repeat.sum()


def test_reserve_failure_does_not_use_up_the_signature(prog, driver):
    # fill the one-page ring buffer (no poll), then a new signature meets a full buffer
    for err in range(1, 9):
        run_driver(driver, "reg_mr", 8, LAYER_PEER, err)
    assert run_driver(driver, "reg_mr", 3, LAYER_DRIVER, errno.ENOTTY) == 3
    first = prog.poll_batch()
    assert not any(_failing_errno(t) == errno.ENOTTY for t in first.trees())  # no room for it
    run_driver(driver, "reg_mr", 2, LAYER_DRIVER, errno.ENOTTY)  # room again: these are its examples
    second = prog.poll_batch()
    closed = prog.rotate()
    assert [_failing_errno(t) for t in second.trees()] == [errno.ENOTTY] * 2
    batch = Batch.concat([first, second])
    repeat, lost = assign_repeats(batch, closed)
    mine = [rc for t, rc in zip(batch.trees(), repeat.tolist(), strict=True) if _failing_errno(t) == errno.ENOTTY]
    assert sorted(mine) == [1, 4]  # two examples stand for all five trees
    assert closed.counters.deferred >= 3
    assert repeat.sum() + lost == 8 * 8 + 5 == closed.counters.probes[0].failures


def _failing_errno(tree) -> int:
    return -min(f.ret for f in tree.frames)


def test_batch_table_matches_row_builder(prog, driver):
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EIO)  # outside a capture window: untimed
    prog.set_capture(True)
    run_driver(driver, "reg_mr", 2)
    run_driver(driver, "reg_mr", 3, LAYER_UMEM, errno.EAGAIN)
    run_driver(driver, "alloc_pd", 1, LAYER_DRIVER, errno.EINVAL)
    batch = prog.poll_batch()
    assert len(batch) == 8 and batch.head["timed"].tolist() == [0, 0] + [1] * 6
    ctx = HostContext(host="h9")
    jobs = [f"j{i}" for i in range(len(batch))]
    metas = [{"k": str(i)} if i % 2 else None for i in range(len(batch))]
    repeat = [-1 if h["kind"] == 2 else i + 1 for i, h in enumerate(batch.head)]
    fast = events_from_batch(batch, prog.probe_set, ctx, jobs, metas, np.array(repeat))
    rows = []
    for tree, job, meta, rc in zip(batch.trees(), jobs, metas, repeat, strict=True):
        rows += tree_rows(tree, prog.probe_set, ctx, job, meta, None if rc < 0 else rc)
    assert fast.equals(events_table(rows))


def test_pid_filter_traces_only_the_target(prog, driver):
    proc = subprocess.Popen([str(driver), "reg_mr", "3", str(LAYER_PEER), str(errno.EFAULT), "0", "400"],
                            stdout=subprocess.PIPE, text=True)
    prog.configure(target_pid=proc.pid)
    run_driver(driver, "reg_mr", 4, LAYER_PEER, errno.EFAULT)  # another process: not traced
    proc.wait(timeout=10)
    trees = prog.poll()
    assert len(trees) == 3 and {t.pid for t in trees} == {proc.pid}
    assert prog.read_deltas().probes[0].failures == 3


def test_capture_window_times_frames_outside_it_latency_is_null(prog, driver, tmp_path):
    prog.set_capture(True)
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EFAULT, delay_us=1000)
    timed = prog.poll_batch()
    prog.set_capture(False)
    run_driver(driver, "reg_mr", 2, LAYER_PEER, errno.EFAULT, delay_us=1000)
    untimed = prog.poll_batch()
    for tree in timed.trees():  # per-frame entry times and latencies: nested calls inside their callers
        lat = [f.latency_ns for f in tree.frames]
        assert tree.timed and lat[0] >= lat[1] >= lat[2] >= lat[3] >= 1_000_000  # the leaf sleeps 1 ms
        assert [f.ts_ns for f in tree.frames] == sorted(f.ts_ns for f in tree.frames)
    for tree in untimed.trees():
        assert not tree.timed and [f.latency_ns for f in tree.frames] == [None] * 4
        assert [f.ret for f in tree.frames] == [-errno.EFAULT] * 4
    table = events_from_batch(Batch.concat([timed, untimed]), prog.probe_set, HostContext(host="h1"))
    ev = table.to_pydict()
    timed_rows = [i for i, t in enumerate(ev["trace_id"]) if t in set(ev["trace_id"][:8])]
    assert len(timed_rows) == 8 and table.num_rows == 16
    assert all(ev["latency_ns"][i] is not None for i in timed_rows)
    assert all(ev["latency_ns"][i] is None for i in range(16) if i not in timed_rows)  # null, never a fake 0
    for i in range(8, 16):  # untimed: the trace starts and ends at the tick its root returned in
        assert ev["start_time"][i] == ev["end_time"][i]
        assert ev["ts_ns"][i] == ev["ts_ns"][8 + (i - 8) // 4 * 4]
    assert len(set(ev["trace_id"])) == 4  # record numbers keep untimed traces apart
    # the trace export: timed calls nest with their durations, untimed ones are marked, not "never returned"
    from baseline.export import export_trace

    events = [e for e in export_trace(write_table(table, tmp_path / "e.parquet", "events"))["traceEvents"]
              if e["ph"] == "X"]
    untimed_ids = set(ev["trace_id"][8:])
    assert len(events) == 16
    for e in events:
        if e["args"]["trace_id"] in untimed_ids:
            assert e["dur"] == 0 and e["args"]["latency"] == "not measured" and "returned" not in e["args"]
        else:
            assert e["dur"] >= 1000 and "latency" not in e["args"]  # >= 1 ms: the leaf's sleep


# fakeverbs_threads: fast thread k fails at FAST_LAYER[k % 3] with FAST_ERRNO[k % 4]; the
# returns each layer sees (the layers below the failing one succeed)
FAST = [(LAYER_DRIVER, errno.ENOMEM), (LAYER_UMEM, errno.EAGAIN), (LAYER_PEER, errno.EIO), (LAYER_DRIVER, errno.ENOSPC)]


def _rets(layer: int, err: int) -> list[int]:
    """Returns of the reg_mr chain (uverbs, driver, umem, peer) when `layer` fails with err."""
    return [-err] * layer + [0] * (4 - layer)


def _overlapping_threads(prog, threads_bin: Path, fast_threads: int, slow=(3, 20000), fast_calls: int = 40):
    """Run fakeverbs_threads under `prog`: a slow thread whose trees stay open 20 ms and
    `fast_threads` threads failing differently meanwhile. Checks that every tree is whole and
    carries only its own thread's frames, and that the counters are exact; returns the interval."""
    out = subprocess.run([str(threads_bin), str(slow[0]), str(slow[1]), str(fast_calls), str(fast_threads)],
                         capture_output=True, text=True, check=True)
    nums = list(map(int, out.stdout.split()))
    tids, failed = nums[0::2], nums[1::2]
    want = {tids[0]: (slow[0], [-errno.EFAULT] * 4)}
    for k, tid in enumerate(tids[1:]):
        layer, err = FAST[k % 4]
        want[tid] = (fast_calls, _rets(layer, err))
    assert failed == [n for n, _ in want.values()] and len(want) == fast_threads + 1
    batch = prog.poll_batch()
    closed = prog.rotate()
    batch = Batch.concat([batch, prog.poll_batch()])
    pset = prog.probe_set
    trees = batch.trees()
    total = sum(n for n, _ in want.values())
    assert len(trees) == total  # every tree a record, none lost, none split
    for tree in trees:
        n, rets = want[tree.tid]
        assert [pset.probe(f.probe_id).symbol for f in tree.frames] == REG_MR_CHAIN
        assert [f.depth for f in tree.frames] == [0, 1, 2, 3] and tree.truncated == 0
        assert [f.ret for f in tree.frames] == rets, tree.tid  # another thread's frame would show here
    assert {t.tid: sum(1 for u in trees if u.tid == t.tid) for t in trees} == {tid: n for tid, (n, _) in want.items()}
    (pid,) = {t.pid for t in trees}  # read at emit from the task: the process, not a worker thread
    assert pid not in want and {t.comm for t in trees} == {"fakeverbs_threa"}
    delta = closed.counters
    assert delta.probes[0].failures == total and delta.probes[0].invocations == total
    errs = {}
    for n, rets in want.values():
        name = errno.errorcode[-rets[1]]
        errs[name] = errs.get(name, 0) + n
    assert delta.probes[1].errnos == errs
    repeat, lost = assign_repeats(batch, closed)
    assert repeat.sum() == total and lost == 0 and delta.orphans == 0
    return closed


def test_uprobe_slot_key_is_checked_at_load(fake, need_cc, tmp_path):
    """The slots of uprobe trees are keyed by the uprobe's ctx only after a check at load saw ctx
    == task_pt_regs(current) at every run of a uprobe and a uretprobe, in two threads; then
    several threads' overlapping trees stay apart."""
    pset = fake[0].probe_set
    threads = build_fakeverbs_threads(tmp_path, Path(pset.library), need_cc)
    prog = FleetProgram(pset, examples=MAX_EXAMPLES)
    try:
        prog.compile()
        assert all(r.live for r in prog.attach())
        check = prog.key_check
        assert check is not None and check.regs, check
        assert check.mismatches == 0 and check.hits >= 6  # 3 calls, entry and return each
        assert 0 < check.regs_off < 1 << 20 and check.regs_off % 8 == 0  # inside the kernel stack
        assert int(prog.bpf[b"settings"][ctypes.c_int(0)].regs_off) == check.regs_off  # for the thread-exit hook
        assert "regs_check_hit" in prog.function_names() and "-DNO_REGS_KEY" not in prog.cflags()
        assert len(prog.bpf.uprobe_fds) == 2 * len(pset.probes)  # the check's getpid probes are gone
        assert "-DEXCLUDE_TGID=0" in prog.cflags()  # the tracer has not mapped the library: no tgid per tree
        _overlapping_threads(prog, threads, fast_threads=4)
    finally:
        prog.close()


def test_tid_keys_where_the_slot_key_check_fails(fake, need_cc, tmp_path, monkeypatch):
    """Where the check cannot confirm the key (here: its libc function is missing), the program
    is recompiled with tid keys; with one slot for all, several threads' trees stay exact."""
    from tracer.fleet import program as program_module

    monkeypatch.setattr(program_module, "REGS_CHECK_SYMBOL", "no_such_function_here")
    pset = fake[0].probe_set
    threads = build_fakeverbs_threads(tmp_path, Path(pset.library), need_cc)
    prog = FleetProgram(pset, slots=1, examples=MAX_EXAMPLES)
    try:
        prog.compile()
        assert all(r.live for r in prog.attach())
        check = prog.key_check
        assert not check.regs and "no_such_function_here" in check.reason, check
        assert check.note().startswith("slots keyed by tid")
        assert "-DNO_REGS_KEY" in prog.cflags() and "regs_check_hit" not in prog.function_names()
        closed = _overlapping_threads(prog, threads, fast_threads=3)
    finally:
        prog.close()
    assert closed.counters.collided >= 1  # one slot: the fast threads met the slow one's open tree


def _owned_slots(prog) -> list[int]:
    return [k.value for k, v in prog.bpf[b"slots"].items() if v.owner]


def test_threads_sharing_a_slot_keep_their_trees_apart(fake, need_cc, tmp_path):
    """One slot for every thread (SLOTS=1): a thread whose slot another thread holds keeps its
    tree in task storage; no tree mixes frames of two threads and the counters stay exact."""
    pset = fake[0].probe_set
    threads = build_fakeverbs_threads(tmp_path, Path(pset.library), need_cc)
    prog = FleetProgram(pset, slots=1, examples=MAX_EXAMPLES)
    try:
        prog.compile()
        prog.attach()
        assert prog.key_check.regs
        closed = _overlapping_threads(prog, threads, fast_threads=3)
    finally:
        prog.close()
    assert closed.counters.collided >= 1  # the fast threads met the slow one's open tree at least once


@pytest.mark.parametrize("slots", [1, DEFAULT_SLOTS])
def test_a_thread_killed_inside_a_call_frees_its_slot(fake, driver, slots):
    """With the daemon's slot count too: there the hook's hash of the key was refused by the
    verifier of kernel 6.18 (a pointer spilled as u32), silently, and a killed thread's slot
    stayed taken for good; with one slot the hash is a constant and the hook loaded."""
    pset = fake[0].probe_set
    prog = FleetProgram(pset, slots=slots, examples=MAX_EXAMPLES)
    try:
        prog.compile()
        prog.attach()
        assert prog.thread_exit_hook
        # inside the leaf for 10 s: its uretprobes never fire, the thread-exit hook frees the slot
        proc = subprocess.Popen([str(driver), "reg_mr", "1", "0", "0", "10000000"])
        deadline = time.monotonic() + 10
        while not _owned_slots(prog) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert len(_owned_slots(prog)) == 1
        proc.kill()
        proc.wait(timeout=10)
        assert _owned_slots(prog) == []
        assert run_driver(driver, "reg_mr", 2, LAYER_UMEM, errno.EIO) == 2
        trees = prog.poll()
        delta = prog.rotate().counters
    finally:
        prog.close()
    assert [[f.ret for f in t.frames] for t in trees] == [[-errno.EIO, -errno.EIO, -errno.EIO, 0]] * 2
    assert delta.collided == 0


def test_decode_rejects_nothing_it_cannot_hold():
    assert decode_tree(bytes(HEADER_SIZE)).frames == []


# --------------------------------------------------------------------------------------------
# the syscall variant on a real program
# --------------------------------------------------------------------------------------------
def test_syscalls_set_on_a_real_program(need_bpf, need_cc, tmp_path):  # noqa: ARG001
    _, driver = build_fakeverbs(tmp_path, need_cc)
    prog = FleetProgram(load_probe_set("syscalls"), ringbuf_kb=64, failures_only=True)
    try:
        prog.compile()
        assert all(r.live for r in prog.attach())
        proc = subprocess.Popen([str(driver), "syscalls", "7", "0", "0", "0", "500"], stdout=subprocess.PIPE)
        prog.configure(target_pid=proc.pid)
        prog.rotate()  # a fresh interval: no other process shares the signatures' repeat counts
        prog.poll()
        proc.wait(timeout=10)
        batch = prog.poll_batch(100)
        closed = prog.rotate()
        batch = Batch.concat([batch, prog.poll_batch()])
    finally:
        prog.close()
    delta = closed.counters
    ids = {p.symbol: p.id for p in prog.probe_set.probes}
    assert delta.probes[ids["readlink"]].errnos == {"ENOENT": 7}
    assert delta.probes[ids["close"]].errnos.get("EBADF") == 7
    repeat, _ = assign_repeats(batch, closed)
    by_probe = {}
    for t, rc in zip(batch.trees(), repeat.tolist(), strict=True):
        assert len(t.frames) == 1 and t.frames[0].depth == 0 and t.kind == "failure"
        assert not t.timed and t.frames[0].latency_ns is None
        if t.pid == proc.pid:
            by_probe.setdefault(prog.probe_set.probe(t.frames[0].probe_id).symbol, []).append((t.frames[0].ret, rc))
    # K examples of each signature, standing for all 7 calls
    assert [r for r, _ in by_probe["readlink"]] == [-errno.ENOENT] * K
    assert sum(rc for _, rc in by_probe["readlink"]) == 7
    assert sum(rc for r, rc in by_probe["close"] if r == -errno.EBADF) == 7


# --------------------------------------------------------------------------------------------
# the fexit variant: compiles here; loads only where the kernel allows fentry/fexit
# --------------------------------------------------------------------------------------------
def test_fexit_program_compiles_and_loads_where_allowed(need_bpf, tmp_path):  # noqa: ARG001
    # RDMA functions are absent from this kernel's BTF; these vmlinux functions stand in for them.
    set_file = tmp_path / "fexit.yaml"
    set_file.write_text(
        "version: 1\nname: fexit-standin\nattach: fexit\nprobes:\n"
        "  - {symbol: do_sys_openat2, layer: core, operation: openat, ret: long}\n"
        "  - {symbol: vfs_open, layer: core, operation: vfs_open, ret: int}\n"
    )
    prog = FleetProgram(load_probe_set(str(set_file)))
    prog.compile()
    try:
        names = set(prog.function_names())
        assert names == {"kfunc__do_sys_openat2", "kretfunc__do_sys_openat2", "kfunc__vfs_open", "kretfunc__vfs_open",
                         "raw_tracepoint__sched_process_exit", "clock_sync"}
        assert prog.bpf.funcs == {}  # compiling loaded nothing into the kernel
        results = prog.attach(best_effort=True)
        if not any(r.live for r in results):
            reason = results[0].reason
            assert "fexit" in reason and "EPERM" in reason
            print(f"SKIP (fexit load): {reason}", file=sys.stderr)
            pytest.skip(f"fexit load refused here: {reason}")
        with pytest.raises(FileNotFoundError):
            open(tmp_path / "missing-file")  # noqa: SIM115
        trees = prog.poll(100)
        assert any(prog.probe_set.probe(t.frames[0].probe_id).symbol == "do_sys_openat2" for t in trees)
    finally:
        prog.close()
