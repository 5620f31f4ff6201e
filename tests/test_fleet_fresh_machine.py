"""The fleet tracer on a fresh machine, where tracefs is not mounted yet.

Each test runs its command in a private mount namespace (`unshare -m`, mounts made private) in
which tracefs (and debugfs, whose `tracing` directory automounts it) is unmounted first, so the
host's mounts are untouched and the test sees what a first boot sees. Before the fix, uprobes
attached (through the perf PMU) but bcc's cleanup raised "Failed to detach BPF from uprobe" and
`tracer run` exited 1.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from fleet_support import (
    LAYER_PEER,
    REPO,
    STARTUP_TIMEOUT_S,
    TRACER,
    Daemon,
    build_fakeverbs,
    run_driver,
    write_fake_set,
)

from tracer.fleet.spool import list_snapshots, read_snapshot

# Each command below compiles BPF first: seconds idle, over 60 s at load 39 (three timeouts in a
# fresh clone's `make test` here), so each has the suite's start-up bound and a minute to run.
_TIMEOUT_S = STARTUP_TIMEOUT_S + 60

# Unmount every tracefs/debugfs (stacked mounts too), prove none is left, then run the command.
_UNMOUNT = textwrap.dedent("""\
    for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
        while umount "$m" 2>/dev/null; do :; done
    done
    if grep -Eq ' (tracefs|debugfs) ' /proc/self/mounts; then
        echo "fresh: tracefs still mounted" >&2; exit 97
    fi
    echo "fresh: no tracefs" >&2
    exec "$@"
""")


@pytest.fixture(scope="module")
def fresh(need_bpf) -> list[str]:  # noqa: ARG001
    """A command prefix running its command where tracefs is not mounted."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is not installed")
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _UNMOUNT, "fresh"]
    probe = subprocess.run([*wrapper, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP (fresh machine): cannot make a private mount namespace: {probe.stderr.strip()}",
              file=sys.stderr)
        pytest.skip(f"cannot make a private mount namespace: {probe.stderr.strip()}")
    return wrapper


@pytest.fixture(scope="module")
def fake(tmp_path_factory, need_cc):
    out = tmp_path_factory.mktemp("fakeverbs-fresh")
    lib, driver = build_fakeverbs(out, need_cc)
    return write_fake_set(out / "fakeverbs.yaml", lib), driver


def test_tracer_run_mounts_tracefs_and_exits_cleanly(fresh, fake, tmp_path):
    set_file, driver = fake
    d = Daemon([str(set_file), "-x", "-i", "60s"], tmp_path / "spool", wrapper=fresh)
    assert any("fresh: no tracefs" in line for line in d.log)
    assert any("mounted tracefs at /sys/kernel/tracing" in line for line in d.log), d.log
    assert run_driver(driver, "reg_mr", 5, LAYER_PEER, errno.EIO) == 5
    assert d.stop() == 0, "".join(d.log)
    log = "".join(d.log)
    assert "Traceback" not in log and "Failed to detach" not in log and "detaching set" not in log
    (snap,) = list_snapshots(tmp_path / "spool")
    events, _ = read_snapshot(snap)
    roots = events.filter(events["seq"] == 0)  # examples of one signature stand for all five
    assert roots["repeat_count"].sum() == 5 and set(events["errno"]) == {"EIO"}


def test_syscalls_set_runs_without_tracefs_mounted(fresh, tmp_path):
    out = subprocess.run([*fresh, *TRACER, "run", "syscalls", "-x", "-d", "1s", "-i", "1s",
                          "--spool", str(tmp_path / "spool"), "--host", "h1"],
                         cwd=REPO, capture_output=True, text=True, timeout=_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "stopped:" in out.stderr
    assert list_snapshots(tmp_path / "spool")


def test_probes_check_attach_mounts_tracefs(fresh, fake):
    set_file, _ = fake
    out = subprocess.run([*fresh, *TRACER, "probes", "check", str(set_file), "--attach", "--json"],
                         cwd=REPO, capture_output=True, text=True, timeout=_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert "mounted tracefs" in out.stderr and "Traceback" not in out.stderr
    (entry,) = json.loads(out.stdout)
    assert all(p["attachable"] is True for p in entry["probes"])


def test_close_never_raises_when_tracefs_vanishes(fresh, fake):
    """Attach, then take tracefs away under the program: close() reports, never raises, and
    bcc's atexit hook has nothing left to trip over."""
    set_file, _ = fake
    script = textwrap.dedent(f"""\
        import ctypes, sys
        from tracer.fleet.probes import load_probe_set
        from tracer.fleet.program import FleetProgram
        prog = FleetProgram(load_probe_set({str(set_file)!r}))
        assert all(r.live for r in prog.attach())
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.umount2(b"/sys/kernel/tracing", 2) == 0, ctypes.get_errno()  # MNT_DETACH
        problems = prog.close()
        print(len(problems))
        assert prog.close() == []  # closing twice is harmless
    """)
    out = subprocess.run([*fresh, sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                         timeout=_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 12  # 6 uprobes + 6 uretprobes could not be removed through tracefs
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr
