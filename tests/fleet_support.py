"""Shared by the fleet tracer tests and bench/bench_fleet.py: build the fakeverbs test library and
its driver with cc, and write a probe set for it."""

from __future__ import annotations

import subprocess
from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"

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
               wait_ms: int = 0, env: dict | None = None, end_wait_ms: int = 0) -> int:
    """Run the driver to completion; returns the number of failed calls it reports."""
    out = subprocess.run([str(driver), op, str(count), str(layer), str(err), str(delay_us), str(wait_ms),
                          str(end_wait_ms)],
                         capture_output=True, text=True, check=True, env=env)
    return int(out.stdout.strip())
