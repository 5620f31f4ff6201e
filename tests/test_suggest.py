"""Probe-set suggestions: the four selection rules, vanished/renamed probes, BTF and symbol inputs."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from baseline.pipeline.suggest import (
    classify,
    load_reference_classes,
    parse_symbol_text,
    read_symbols,
    suggest,
)
from tracer.errors import TracebaseError

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "rdma_control_path.yaml"
REPO = Path(__file__).resolve().parents[1]

# An old (OFED-era) kernel as bpftool prints it, and a new one as /proc/kallsyms prints it.
OLD_RAW = """\
[1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED
[2] FUNC_PROTO '(anon)' ret_type_id=1 vlen=0
[10] FUNC 'ib_uverbs_reg_mr' type_id=2 linkage=static
[11] FUNC 'ib_uverbs_create_qp' type_id=2 linkage=static
[12] FUNC 'mlx5_ib_reg_user_mr' type_id=2 linkage=global
[13] FUNC 'ib_umem_get' type_id=2 linkage=global
[14] FUNC 'ib_peer_umem_get' type_id=2 linkage=global
[15] FUNC 'mlx5_ib_create_qp' type_id=2 linkage=global
[16] FUNC 'ib_uverbs_query_port' type_id=2 linkage=static
[17] FUNC 'mlx5_ib_dealloc_pd' type_id=2 linkage=static
[18] FUNC 'kfree' type_id=2 linkage=global
"""
NEW_KALLSYMS = """\
ffffffffc0a01000 t ib_uverbs_reg_mr\t[ib_uverbs]
ffffffffc0a02000 t ib_uverbs_create_qp\t[ib_uverbs]
ffffffffc0a03000 T mlx5_ib_reg_user_mr\t[mlx5_ib]
ffffffffc0a04000 T ib_umem_get_va\t[ib_core]
ffffffffc0a05000 t mlx5_ib_create_qp.isra.0\t[mlx5_ib]
ffffffffc0a06000 t ib_uverbs_query_port\t[ib_uverbs]
ffffffffc0a07000 t mlx5_ib_dealloc_pd\t[mlx5_ib]
ffffffffc0a08000 T mlx5_ib_alloc_pd\t[mlx5_ib]
ffffffffc0a09000 T ib_umem_release\t[ib_core]
ffffffffc0a0a000 t ib_uverbs_init_module\t[ib_uverbs]
ffffffffc0a0b000 T rdma_lookup_get_uobject\t[ib_uverbs]
ffffffffc0a0c000 T mlx5_cmd_exec\t[mlx5_core]
ffffffffc0a0d000 T mlx5_core_query_vport_counter\t[mlx5_core]
ffffffffc0a0e000 T ib_create_srq_user\t[ib_core]
ffffffffc0a0f000 t rdma_nl_rcv\t[ib_core]
ffffffffc0a10000 T kfree
"""
PROBES = ["ib_uverbs_reg_mr", "mlx5_ib_reg_user_mr", "ib_umem_get", "ib_peer_umem_get", "mlx5_ib_create_qp"]


@pytest.fixture(scope="module")
def report():
    old = parse_symbol_text(OLD_RAW.splitlines(), "old.txt")
    new = parse_symbol_text(NEW_KALLSYMS.splitlines(), "new.txt")
    return suggest(new, old=old, probes=PROBES)


def by_symbol(report) -> dict:
    return {s.symbol: s for s in report.suggestions}


def test_vanished_and_renamed_probes(report):
    s = by_symbol(report)
    assert s["ib_umem_get"].action == "renamed" and s["ib_umem_get"].replacement == "ib_umem_get_va"
    assert s["ib_peer_umem_get"].action == "vanished"  # OFED peer memory not in this build
    assert "missing from the new kernel" in s["ib_peer_umem_get"].reason
    assert s["mlx5_ib_create_qp"].action == "keep"  # .isra.0 clone is still the same function
    assert [x.action for x in report.suggestions[:2]] == ["vanished", "renamed"]  # listed first


def test_four_rules_include_and_exclude_with_reasons(report):
    s = by_symbol(report)
    assert s["mlx5_ib_alloc_pd"].action == "new-candidate"
    assert s["mlx5_ib_alloc_pd"].reason == "new in this kernel; creates/updates a PD ('alloc')"
    assert s["mlx5_cmd_exec"].action == "new-candidate" and "hardware communication" in s["mlx5_cmd_exec"].reason
    assert (s["ib_uverbs_query_port"].action, s["ib_uverbs_query_port"].rule) == ("exclude", "read-only")
    assert "ENOENT" in s["ib_uverbs_query_port"].reason
    assert (s["mlx5_ib_dealloc_pd"].action, s["mlx5_ib_dealloc_pd"].rule) == ("exclude", "cleanup")
    assert (s["ib_umem_release"].action, s["ib_umem_release"].rule) == ("exclude", "cleanup")
    assert (s["ib_uverbs_init_module"].action, s["ib_uverbs_init_module"].rule) == ("exclude", "generic")
    assert (s["rdma_nl_rcv"].action, s["rdma_nl_rcv"].rule) == ("exclude", "generic")  # netlink plumbing
    assert (s["rdma_lookup_get_uobject"].action, s["rdma_lookup_get_uobject"].rule) == ("exclude", "read-only")
    assert s["ib_create_srq_user"].action == "consider"  # a create, but not QP/MR/PD/CQ
    assert "kfree" not in s and "mlx5_core_query_vport_counter" not in s  # outside the RDMA namespaces
    assert s["ib_uverbs_reg_mr"].action == "keep"


def test_classify_pinning_get_is_a_create():
    assert classify("ib_umem_get").action == "candidate"
    assert classify("ib_umem_get").reason == "pins memory for a MR ('get')"
    assert classify("ib_device_get_by_name").rule == "read-only"


def test_reference_classes_override_name_rules():
    if not REFERENCE.is_file():
        pytest.skip(f"reference file {REFERENCE} not present")
    ref = load_reference_classes(REFERENCE)
    assert ref["ib_uverbs_write"] == "dispatch" and ref["rdma_get_gid_attr"] == "read_only"
    assert classify("ib_uverbs_write", ref).rule == "generic"  # dispatch glue
    assert classify("mlx5r_umr_update_mr_pas", ref).action == "candidate"
    # Every create/update function of the reference chains that is in an RDMA namespace is a candidate.
    chains = [fn for fn, cls in ref.items() if cls == "create_update"]
    new = parse_symbol_text(chains)
    actions = {s.symbol: s.action for s in suggest(new, reference=ref).suggestions}
    assert actions["ib_uverbs_reg_mr"] == actions["mlx5_ib_reg_user_mr"] == "candidate"
    assert actions["ib_uverbs_alloc_pd"] == actions["mlx5_ib_create_cq"] == "candidate"


def make_btf(names: list[str]) -> bytes:
    """A minimal but real BTF blob: one FUNC_PROTO and a FUNC per name."""
    strings = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    offsets, pos = [], 1
    for n in names:
        offsets.append(pos)
        pos += len(n) + 1
    types = struct.pack("<III", 0, 13 << 24, 0)  # [1] FUNC_PROTO, no params, void
    for off in offsets:
        types += struct.pack("<III", off, 12 << 24, 1)  # FUNC -> type 1
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def test_read_symbols_from_btf_and_text(tmp_path):
    btf = tmp_path / "mlx5_ib.btf"
    btf.write_bytes(make_btf(["mlx5_ib_reg_user_mr", "mlx5_ib_alloc_pd", "irrelevant_fn"]))
    assert set(read_symbols(btf)) == {"mlx5_ib_reg_user_mr", "mlx5_ib_alloc_pd", "irrelevant_fn"}
    plain = tmp_path / "list.txt"
    plain.write_text("# one per line\nib_uverbs_reg_mr\nmlx5_ib_create_qp.constprop.0\n")
    assert set(read_symbols(plain)) == {"ib_uverbs_reg_mr", "mlx5_ib_create_qp"}
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is : not a list\n")
    with pytest.raises(TracebaseError, match="found no functions \\(first unrecognised line: 'this is : not a list'\\)"):
        read_symbols(garbage)
    with pytest.raises(TracebaseError, match="no such BTF or symbol file"):
        read_symbols(tmp_path / "missing")


def test_cli_suggest_probes(tmp_path):
    from test_ingest import run_cli

    (tmp_path / "old.txt").write_text(OLD_RAW)
    (tmp_path / "new.txt").write_text(NEW_KALLSYMS)
    status, out, err = run_cli("suggest-probes", "--symbols", str(tmp_path / "new.txt"), "--old", str(tmp_path / "old.txt"),
                               "--probes", str(REPO / "bpf" / "probes" / "rdma.yaml"))
    assert status == 0, err
    assert "vanished      ib_peer_umem_get" in out
    assert "keep          mlx5_ib_alloc_pd  [PD]" in out  # in rdma.yaml: kept, not a candidate
    # bnxt_re/irdma equivalents on a kernel without those drivers are gated, not vanished
    assert "vanished      bnxt_re_" not in out and "vanished      irdma_" not in out
    assert "vanished      mlx5_ib_modify_qp" in out
    assert "functions excluded by the selection rules (--all lists them with the reason)" in out
    status, out, _ = run_cli("suggest-probes", "--symbols", str(tmp_path / "new.txt"), "--all")
    assert "exclude       mlx5_ib_dealloc_pd" in out
    status, _, err = run_cli("suggest-probes", "--symbols", str(tmp_path / "none.txt"))
    assert status == 2 and err == f"baseline: error: {tmp_path / 'none.txt'}: no such BTF or symbol file\n"
