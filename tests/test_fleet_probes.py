"""Probe sets as data: validation, the vendor namespace gate, existence checks, `tracer probes check`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_support import build_fakeverbs, write_fake_set

from tracer.errors import TracebaseError
from tracer.fleet.probes import (
    PROBES_DIR,
    apply_vendor_gate,
    btf_function_names,
    check_probe_set,
    detect_vendor,
    elf_function_symbols,
    load_probe_set,
    syscall_numbers,
)

REPO = Path(__file__).resolve().parents[1]
TRACER = [sys.executable, "-m", "tracer.cli"]


@pytest.fixture(scope="module")
def fake_set(tmp_path_factory, need_cc):
    out = tmp_path_factory.mktemp("fakeverbs-probes")
    lib, _ = build_fakeverbs(out, need_cc)
    return write_fake_set(out / "fakeverbs.yaml", lib), lib


def test_shipped_sets_load():
    rdma = load_probe_set("rdma", vendor=None)
    assert rdma.attach == "fexit" and len(rdma.probes) == 13
    layers = [p.layer for p in rdma.probes]
    assert layers.count("uverbs") == 5 and layers.count("driver") + layers.count("core") == 6
    assert layers.count("peer-mem") == 2
    assert load_probe_set("verbs-user").attach == "uprobe"
    syscalls = load_probe_set("syscalls")
    assert {p.ret for p in syscalls.probes} == {"long"} and {p.layer for p in syscalls.probes} == {"syscall"}


def test_vendor_gate_swaps_mlx5_callbacks():
    rdma = load_probe_set("rdma", vendor=None)
    by_default = {p.default_symbol: p for p in apply_vendor_gate(rdma, "bnxt_re").probes}
    assert by_default["mlx5_ib_reg_user_mr"].symbol == "bnxt_re_reg_user_mr"
    assert by_default["ib_uverbs_reg_mr"].symbol == "ib_uverbs_reg_mr"  # device-agnostic: unchanged
    irdma = {p.default_symbol: p.symbol for p in apply_vendor_gate(rdma, "irdma").probes}
    assert irdma["mlx5_ib_modify_qp"] == "irdma_modify_qp_roce"
    assert apply_vendor_gate(rdma, "mlx5").probes[5].symbol == "mlx5_ib_reg_user_mr"


def test_detect_vendor_from_sysfs(tmp_path):
    assert detect_vendor(str(tmp_path)) is None
    (tmp_path / "module" / "irdma").mkdir(parents=True)
    assert detect_vendor(str(tmp_path)) == "irdma"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 2\n", "field 'version': expected 1, found 2"),
        ("", "expected a mapping with version/name/attach/probes, found an empty file"),
        ("- a\n- b\n", "expected a mapping with version/name/attach/probes, found a YAML list"),
        ("version: 1\nname: x\nattach: kprobe\nprobes: []\n", "field 'attach': expected one of fexit, uprobe, syscalls, found 'kprobe'"),
        ("version: 1\nname: x\nattach: fexit\nprobes: []\n", "field 'probes': expected at least one probe, found an empty list"),
        ("version: 1\nname: x\nattach: fexit\nprobes:\n  - {symbol: f, layer: gpu}\n",
         "probes[0]: field 'layer': expected one of uverbs, core, driver, peer-mem, syscall, user-lib, found 'gpu'"),
        ("version: 1\nname: x\nattach: fexit\nprobes:\n  - {symbol: f, layer: core, ret: float}\n",
         "probes[0]: field 'ret': expected one of int, long, err_ptr, null_ptr, pos_errno, nonzero, found 'float'"),
        ("version: 1\nname: x\nattach: fexit\nprobes:\n  - {symbol: 'f; drop', layer: core}\n",
         "probes[0]: field 'symbol': expected a C identifier, found 'f; drop'"),
        ("version: 1\nname: x\nattach: uprobe\nprobes:\n  - {symbol: f, layer: core}\n",
         "field 'library': expected a library path or name, found nothing"),
        ("version: 1\nname: x\nattach: fexit\nprobes:\n  - {symbol: f, layer: core, vendors: {nvidia: g}}\n",
         "probes[0]: field 'vendors': expected a mapping with keys from mlx5, bnxt_re, irdma"),
        ("a: [\n", "expected YAML, found a syntax error"),
    ],
)
def test_bad_probe_set_names_file_field_expected_found(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TracebaseError) as info:
        load_probe_set(str(path))
    assert str(info.value).startswith(str(path)) and message in str(info.value)


def test_vendor_gate_refuses_two_probes_traced_as_one_function(tmp_path):
    """Two mlx5 callbacks whose equivalent on another driver is one function would count each
    call twice and duplicate that probe's Prometheus series; the mlx5 names stay usable."""
    path = tmp_path / "shared.yaml"
    path.write_text("version: 1\nname: x\nattach: fexit\nprobes:\n"
                    "  - {symbol: mlx5_ib_create_qp, layer: driver, vendors: {irdma: irdma_create_qp}}\n"
                    "  - {symbol: mlx5_ib_create_srq, layer: driver, vendors: {irdma: irdma_create_qp}}\n")
    assert [p.symbol for p in load_probe_set(str(path), vendor="mlx5").probes] == ["mlx5_ib_create_qp", "mlx5_ib_create_srq"]
    with pytest.raises(TracebaseError) as info:
        load_probe_set(str(path), vendor="irdma")
    assert str(info.value) == (f"{path}: field 'vendors.irdma': expected each probe to trace its own function, found "
                               "'mlx5_ib_create_qp' and 'mlx5_ib_create_srq' both traced as 'irdma_create_qp'")


def test_existence_checks_against_this_host(fake_set):
    set_file, lib = fake_set
    assert {"fv_uverbs_reg_mr", "fv_peer_umem_get"} <= elf_function_symbols(str(lib))
    statuses = check_probe_set(load_probe_set(str(set_file)))
    assert all(s.exists and s.where == f"ELF {lib}" for s in statuses)
    assert syscall_numbers()["openat"] == 257
    if Path("/sys/kernel/btf/vmlinux").exists():
        names = btf_function_names("/sys/kernel/btf/vmlinux")
        assert "do_sys_openat2" in names and len(names) > 10_000


def test_probes_check_text_for_test_set_and_absent_rdma(fake_set):
    set_file, lib = fake_set
    ok = subprocess.run([*TRACER, "probes", "check", str(set_file)], cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "fakeverbs (uprobe): 6/6 probes present"
    assert "ok fv_uverbs_reg_mr" in ok.stdout and f"ELF {lib}" in ok.stdout

    rdma = subprocess.run([*TRACER, "probes", "check", "rdma"], cwd=REPO, capture_output=True, text=True)
    if "0/13" not in rdma.stdout:
        pytest.skip("this host has RDMA drivers: the absent-probe report is not reproducible here")
    assert rdma.returncode == 1
    assert rdma.stdout.splitlines()[0] == "rdma (fexit, vendor gate: no RDMA driver found, mlx5 names): 0/13 probes present"
    assert "-- mlx5_ib_reg_user_mr" in rdma.stdout
    assert "absent from kernel BTF and kallsyms (driver/module not loaded here)" in rdma.stdout

    gated = subprocess.run([*TRACER, "probes", "check", "rdma", "--vendor", "bnxt_re", "--json"], cwd=REPO,
                           capture_output=True, text=True)
    (entry,) = json.loads(gated.stdout)
    probes = {p["default_symbol"]: p for p in entry["probes"]}
    assert entry["vendor"] == "bnxt_re" and probes["mlx5_ib_create_qp"]["probe"] == "bnxt_re_create_qp"
    assert probes["mlx5_ib_create_qp"]["exists"] is False and probes["mlx5_ib_create_qp"]["reason"]


def test_probes_check_attach_for_real(fake_set, need_bpf):  # noqa: ARG001
    set_file, _ = fake_set
    out = subprocess.run([*TRACER, "probes", "check", str(set_file), "--attach", "--json"], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(out.stdout)
    assert all(p["attachable"] is True for p in entry["probes"])


def test_probes_check_unknown_set_is_exit_2():
    out = subprocess.run([*TRACER, "probes", "check", "nosuch"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"tracer: error: probe set 'nosuch': expected one of rdma, rdma-queries, syscalls, verbs-user or a .yaml path, "
        f"found no {PROBES_DIR / 'nosuch.yaml'}"
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda d: _mkdir(d / "adir.yaml"), ["adir.yaml: expected a probe set YAML file, found a directory"]),
        (lambda d: _write(d / "l1.yaml", "name: caf\xe9\n".encode("latin-1")),
         ["l1.yaml: expected UTF-8 YAML, found undecodable byte"]),
        (lambda d: _write(d / "k.yaml", b"version: 1\nname: x\nattach: syscalls\nprobes:\n"
                                        b"  - {symbol: openat, layer: syscall, colour: red}\n"),
         ["k.yaml: probes[0]: expected only the keys symbol, layer", "found unknown key 'colour'"]),
        (lambda d: d / "missing.yaml", ["missing.yaml: no such probe set file"]),
        # a device is there: "no such file" misled (battery)
        (lambda d: "/dev/null", ["/dev/null: expected a probe set YAML file, found a character device"]),
        (lambda d: "", ["probe set: expected a set name or a .yaml path, found ''"]),
    ],
)
def test_probes_check_bad_set_files_are_one_line_exit_2(tmp_path, make, words):
    target = str(make(tmp_path))
    out = subprocess.run([*TRACER, "probes", "check", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    for word in words:
        assert word in out.stderr, out.stderr


def test_a_library_name_resolves_to_the_shared_object_not_a_linker_script():
    """'c' and 'libc.so.6' name libc's shared object. Debian's unversioned
    /usr/lib/x86_64-linux-gnu/libc.so is a linker script (text), where no uprobe can be placed;
    and bcc's cache lookup takes the name's stem ('c'), so a full name never matched there."""
    from tracer.fleet.probes import resolve_library

    for name in ("c", "libc", "libc.so.6"):
        path = resolve_library(name)
        assert path is not None and Path(path).name.startswith("libc.so."), (name, path)
        assert Path(path).read_bytes()[:4] == b"\x7fELF", (name, path)
    assert resolve_library("no-such-library-anywhere") is None
