"""Type ids from the running kernel's BTF (/sys/kernel/btf/vmlinux), for BPF code that names
kernel types or kfuncs by id (bpf/syscall_recorder.c's PT_REGS_BTF_ID). The format is
include/uapi/linux/btf.h: a header, then `struct btf_type` records (id 1 onwards) each followed
by kind-specific bytes, then the string section."""

from __future__ import annotations

import functools
import struct
from pathlib import Path

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
KIND = {"struct": 4, "func": 12}
# bytes after each struct btf_type, per kind: (fixed, per vlen entry)
_EXTRA = {
    1: (4, 0), 2: (0, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 7: (0, 0), 8: (0, 0),
    9: (0, 0), 10: (0, 0), 11: (0, 0), 12: (0, 0), 13: (0, 8), 14: (4, 0), 15: (0, 12),
    16: (0, 0), 17: (4, 0), 18: (0, 0), 19: (0, 12),
}


def type_ids(data: bytes, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The ids of the (kind, name) pairs in `wanted` (kind: "struct" or "func") found in the
    BTF blob `data`; missing ones are left out. ValueError when it is not BTF."""
    if len(data) < 24:
        raise ValueError("not BTF")
    magic, _ver, _flags, hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<HBBIIIII", data)
    if magic != 0xEB9F:
        raise ValueError("not BTF")
    types = data[hdr_len + type_off: hdr_len + type_off + type_len]
    strings = data[hdr_len + str_off: hdr_len + str_off + str_len]
    by_name: dict[bytes, list[tuple[int, str]]] = {}
    for kind, name in wanted:
        by_name.setdefault(name.encode() + b"\0", []).append((KIND[kind], kind))
    found: dict[tuple[str, str], int] = {}
    unpack = struct.Struct("<III").unpack_from
    off, end, type_id = 0, len(types), 1
    while off + 12 <= end:
        name_off, info, _ = unpack(types, off)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        if name_off:
            for want_kind, label in by_name.get(strings[name_off: strings.find(b"\0", name_off) + 1], ()):
                if kind == want_kind:
                    name = strings[name_off: strings.find(b"\0", name_off)].decode()
                    found.setdefault((label, name), type_id)
        fixed, per = _EXTRA.get(kind, (0, 0))
        off += 12 + fixed + per * vlen
        type_id += 1
    return found


@functools.lru_cache(maxsize=1)
def pt_regs_cast_ids() -> tuple[int, int] | None:
    """(struct pt_regs id, bpf_rdonly_cast id) in the running kernel's BTF, or None."""
    try:
        ids = type_ids(VMLINUX_BTF.read_bytes(), {("struct", "pt_regs"), ("func", "bpf_rdonly_cast")})
    except (OSError, ValueError, struct.error):
        return None
    if len(ids) != 2:
        return None
    return ids[("struct", "pt_regs")], ids[("func", "bpf_rdonly_cast")]
