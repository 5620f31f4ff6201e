"""Shared by the fleet tracer tests and bench/bench_fleet.py: build the fakeverbs test library and
its driver with cc, and write a probe set for it."""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from select import PIPE_BUF

C_DIR = Path(__file__).resolve().parent / "c"
REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]

# fv_* functions nest like the kernel's reg_mr cascade; layers as the probe set records them.
FAKE_CASCADE = [
    ("fv_uverbs_reg_mr", "uverbs", "reg_mr"),
    ("fv_mlx5_reg_user_mr", "driver", "reg_mr"),
    ("fv_umem_get", "core", "umem_get"),
    ("fv_peer_umem_get", "peer-mem", "peer_umem_get"),
    ("fv_uverbs_alloc_pd", "uverbs", "alloc_pd"),
    ("fv_mlx5_alloc_pd", "driver", "alloc_pd"),
]
# FAIL_LAYER numbers of the driver program
LAYER_UVERBS, LAYER_DRIVER, LAYER_UMEM, LAYER_PEER = 1, 2, 3, 4


def build_fakeverbs(out_dir: Path, cc: str = "cc") -> tuple[Path, Path]:
    """Compile libfakeverbs.so and fakeverbs_driver into out_dir; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / "libfakeverbs.so"
    driver = out_dir / "fakeverbs_driver"
    # no sibling-call optimisation and no inlining: every layer keeps its own frame and return
    flags = ["-O1", "-g", "-fno-optimize-sibling-calls", "-fno-inline"]
    subprocess.run([cc, *flags, "-shared", "-fPIC", "-o", str(lib), str(C_DIR / "fakeverbs.c")], check=True)
    subprocess.run([cc, *flags, "-o", str(driver), str(C_DIR / "fakeverbs_driver.c"), f"-L{out_dir}",
                    "-lfakeverbs", f"-Wl,-rpath,{out_dir}"], check=True)
    return lib, driver


def build_fakeverbs_threads(out_dir: Path, lib: Path, cc: str = "cc") -> Path:
    """Compile fakeverbs_threads (two threads with overlapping call trees) against lib."""
    prog = out_dir / "fakeverbs_threads"
    subprocess.run([cc, "-O1", "-g", "-pthread", "-o", str(prog), str(C_DIR / "fakeverbs_threads.c"),
                    f"-L{lib.parent}", "-lfakeverbs", f"-Wl,-rpath,{lib.parent}"], check=True)
    return prog


def write_fake_set(path: Path, lib: Path, extra_symbols: tuple[str, ...] = (), name: str = "fakeverbs") -> Path:
    lines = ["version: 1", f"name: {name}", "description: fakeverbs test library (uprobes)",
             "attach: uprobe", f"library: {lib}", "probes:"]
    for symbol, layer, operation in FAKE_CASCADE:
        lines.append(f"  - {{symbol: {symbol}, layer: {layer}, object: MR, operation: {operation}, ret: int}}")
    for symbol in extra_symbols:
        lines.append(f"  - {{symbol: {symbol}, layer: driver, object: MR, operation: missing, ret: int}}")
    path.write_text("\n".join(lines) + "\n")
    return path


def run_driver(driver: Path, op: str, count: int, layer: int = 0, err: int = 0, delay_us: int = 0,
               wait_ms: int = 0, env: dict | None = None, end_wait_ms: int = 0, rate: int = 0) -> int:
    """Run the driver to completion; returns the number of failed calls it reports.
    `rate`: calls per second (0: back to back)."""
    out = subprocess.run([str(driver), op, str(count), str(layer), str(err), str(delay_us), str(wait_ms),
                          str(end_wait_ms), str(rate)],
                         capture_output=True, text=True, check=True, env=env)
    return int(out.stdout.strip())


STARTUP_TIMEOUT_S = 180.0
_FILLER = "#\n"  # Daemon.hold()'s pipe filler: never a line of the daemon's
_WRITE_NR = {"x86_64": 1, "aarch64": 64}  # write(2) in /proc/PID/syscall


class Daemon:
    """A `tracer run` subprocess (optionally under a wrapper such as `unshare -m ...`); waits until
    its probes are attached. Its stderr is collected line by line in .log."""

    def __init__(self, args: list[str], spool: Path, host: str = "h1", wrapper: tuple[str, ...] | list[str] = (),
                 wait: str | None = "probes live", sighup: signal.Handlers = signal.SIG_DFL):
        self.spool = spool
        # SIGHUP as a terminal session gives it (SIG_DFL) unless asked for: the suite itself may
        # run under nohup, whose ignored SIGHUP the daemon would inherit and leave alone
        self.proc = subprocess.Popen([*wrapper, *TRACER, "run", *args, "--spool", str(spool), "--host", host],
                                     cwd=REPO, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGHUP, sighup))
        self.log: list[str] = []
        self._reading, self._parked = threading.Event(), threading.Event()
        self._reading.set()
        self._held_at = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if wait:
            # bcc compiles the set at start: seconds idle, over 30 s at load 27 (a CI failure)
            self.wait_for(wait, timeout=STARTUP_TIMEOUT_S)

    def _read(self) -> None:
        for line in self.proc.stderr:
            if line != _FILLER:
                self.log.append(line)
            if not self._reading.is_set():  # hold(): read nothing more until release()
                self._parked.set()
                self._reading.wait()
                self._parked.clear()

    def hold(self) -> None:
        """Stop reading the daemon's stderr and fill its pipe: the daemon's next log line then
        waits in write(2) until release(). A test acts while the daemon stands just before that
        line (wait_blocked), so whatever the line announces must already be done."""
        self._reading.clear()
        self._held_at = len(self.log)
        # a second writer of the same pipe; its filler lines are never logged
        fd = os.open(f"/proc/{self.proc.pid}/fd/2", os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, _FILLER.encode())  # wakes a reader waiting in read(): it parks after it
            if not self._parked.wait(30):
                raise AssertionError("the stderr reader did not stop")
            self._held_at = len(self.log)
            for chunk in (_FILLER * (PIPE_BUF // 2), _FILLER):  # whole lines, each write atomic
                with contextlib.suppress(BlockingIOError):
                    while True:
                        os.write(fd, chunk.encode())
        finally:
            os.close(fd)

    def wait_blocked(self, timeout: float = 30.0) -> None:
        """Until the daemon's main thread waits in write(2) on its stderr (a held log line)."""
        deadline = time.monotonic() + timeout
        while True:
            fields = Path(f"/proc/{self.proc.pid}/syscall").read_text().split()
            if fields[:2] == [str(_WRITE_NR[platform.machine()]), "0x2"]:
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"tracer run never waited on a log line: {''.join(self.log)}")
            time.sleep(0.01)

    def release(self) -> str:
        """Read stderr again; returns the line the daemon was held at."""
        self._reading.set()
        self.wait_for("", count=self._held_at + 1)
        return self.log[self._held_at]

    def wait_for(self, text: str, timeout: float = 30.0, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.log) < count:
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"tracer run exited ({self.proc.returncode}): {''.join(self.log)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} from tracer run: {''.join(self.log)}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        # A stop asked for while the program compiles is honoured after the compile, which on a
        # loaded machine (the suite's workers share two cores) takes as long as a start.
        rc = self.proc.wait(timeout=STARTUP_TIMEOUT_S)
        self._reader.join(timeout=5)
        return rc
