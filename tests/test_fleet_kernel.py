"""The kernel side of the fleet tracer, for real: calltree.c loaded with uprobes/uretprobes on the
fakeverbs library (a user-space reg_mr cascade), the raw-syscall variant on a real program, and
the fexit variant compiled with bcc (loaded only where the kernel allows fexit)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest
from fleet_support import (
    LAYER_DRIVER,
    LAYER_PEER,
    LAYER_UMEM,
    build_fakeverbs,
    run_driver,
    write_fake_set,
)

from tracer.fleet.probes import load_probe_set
from tracer.fleet.program import FleetProgram, HostContext, decode_tree, tree_rows
from tracer.fleet.spool import events_table
from tracer.schema import read_events, write_table

RINGBUF_KB = 4  # one page: small enough for a burst to overflow it
REG_MR_LAYERS = ["uverbs", "driver", "core", "peer-mem"]


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
    program.poll()
    program.read_deltas()
    return program


@pytest.fixture
def driver(fake):
    return fake[1]


def _probe_names(prog, tree):
    return [prog.probe_set.probe(f.probe_id).symbol for f in tree.frames]


def test_failure_emits_whole_chain_with_each_layers_return(prog, driver, tmp_path):
    assert run_driver(driver, "reg_mr", 5, LAYER_PEER, errno.EFAULT) == 5
    trees = prog.poll()
    assert len(trees) == 5
    for tree in trees:
        assert tree.kind == "failure"
        assert _probe_names(prog, tree) == ["fv_uverbs_reg_mr", "fv_mlx5_reg_user_mr", "fv_umem_get", "fv_peer_umem_get"]
        assert [f.depth for f in tree.frames] == [0, 1, 2, 3]
        assert [f.ret for f in tree.frames] == [-errno.EFAULT] * 4  # EFAULT at every layer: deeper than the driver
        assert tree.frames[0].latency_ns >= tree.frames[3].latency_ns > 0
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
    n_fail, n_ok = 3000, 500
    assert run_driver(driver, "reg_mr", n_fail, LAYER_UMEM, errno.ENOMEM) == n_fail
    run_driver(driver, "reg_mr", n_ok)
    received = len(prog.poll())
    delta = prog.read_deltas()
    ids = {p.symbol: p.id for p in prog.probe_set.probes}
    top, umem, peer = (delta.probes[ids[s]] for s in ("fv_uverbs_reg_mr", "fv_umem_get", "fv_peer_umem_get"))
    assert top.invocations == n_fail + n_ok and top.failures == n_fail and top.errnos == {"ENOMEM": n_fail}
    assert umem.failures == n_fail and umem.errnos == {"ENOMEM": n_fail}
    assert peer.invocations == n_fail + n_ok and peer.failures == 0 and peer.errnos == {}
    assert 0 < received < n_fail  # a 4 KiB ring buffer holds a few dozen records
    assert delta.lost == n_fail - received  # the loss counter accounts for every missing record
    assert delta.emitted == received


def test_pid_filter_traces_only_the_target(prog, driver):
    proc = subprocess.Popen([str(driver), "reg_mr", "3", str(LAYER_PEER), str(errno.EFAULT), "0", "400"],
                            stdout=subprocess.PIPE, text=True)
    prog.configure(target_pid=proc.pid)
    run_driver(driver, "reg_mr", 4, LAYER_PEER, errno.EFAULT)  # another process: not traced
    proc.wait(timeout=10)
    trees = prog.poll()
    assert len(trees) == 3 and {t.pid for t in trees} == {proc.pid}
    assert prog.read_deltas().probes[0].failures == 3


def test_decode_rejects_nothing_it_cannot_hold():
    assert decode_tree(bytes(48)).frames == []


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
        proc.wait(timeout=10)
        trees = [t for t in prog.poll(100) if t.pid == proc.pid]
        delta = prog.read_deltas()
    finally:
        prog.close()
    ids = {p.symbol: p.id for p in prog.probe_set.probes}
    assert delta.probes[ids["readlink"]].errnos == {"ENOENT": 7}
    assert delta.probes[ids["close"]].errnos.get("EBADF") == 7
    by_probe = {}
    for t in trees:
        assert len(t.frames) == 1 and t.frames[0].depth == 0 and t.kind == "failure"
        by_probe.setdefault(prog.probe_set.probe(t.frames[0].probe_id).symbol, []).append(t.frames[0].ret)
    assert by_probe["readlink"] == [-errno.ENOENT] * 7
    assert by_probe["close"].count(-errno.EBADF) == 7


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
        assert names == {"kfunc__do_sys_openat2", "kretfunc__do_sys_openat2", "kfunc__vfs_open", "kretfunc__vfs_open"}
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
