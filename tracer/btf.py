"""The one reader of BTF blobs (/sys/kernel/btf/vmlinux and module BTF): the format is
include/uapi/linux/btf.h -- a header, then `struct btf_type` records (type id 1 onwards) each
followed by kind-specific bytes, then the string section. Used by the fleet tracer (task_struct
offsets, which functions exist), the recorder (type ids for kfunc calls) and suggest-probes."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
BTF_STRUCT = 4
BTF_FUNC = 12
KIND = {"struct": BTF_STRUCT, "func": BTF_FUNC}
BTF_KIND_EXTRA = {  # bytes that follow struct btf_type, per kind: (fixed, per vlen entry)
    1: (4, 0), 2: (0, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 7: (0, 0), 8: (0, 0),
    9: (0, 0), 10: (0, 0), 11: (0, 0), 12: (0, 0), 13: (0, 8), 14: (4, 0), 15: (0, 12),
    16: (0, 0), 17: (4, 0), 18: (0, 0), 19: (0, 12),
}
_HEADER = struct.Struct("<HBBIIIII")


def btf_sections(data: bytes) -> tuple[bytes, bytes]:
    """(type section, string section) of a BTF blob; ValueError when it is not BTF (a blob
    shorter than the header included: a 2-byte file with the magic is no BTF either)."""
    if len(data) < _HEADER.size:
        raise ValueError("not BTF (shorter than its header)")
    magic, _ver, _flags, hdr_len, type_off, type_len, str_off, str_len = _HEADER.unpack_from(data)
    if magic != 0xEB9F:
        raise ValueError("not BTF")
    if hdr_len + max(type_off + type_len, str_off + str_len) > len(data):
        # (a blob cut short: its header's sections end past it -- read as nothing before)
        raise ValueError(f"not BTF (cut short: its header's sections end at byte "
                         f"{hdr_len + max(type_off + type_len, str_off + str_len):,}, the blob has {len(data):,})")
    types = data[hdr_len + type_off: hdr_len + type_off + type_len]
    strings = data[hdr_len + str_off: hdr_len + str_off + str_len]
    return types, strings


def btf_types(types: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """Walk the type section: (offset, name_off, info, kind, vlen) of each struct btf_type, in
    type id order (the n-th yielded is id n)."""
    off, end = 0, len(types)
    unpack = struct.Struct("<III").unpack_from
    while off + 12 <= end:
        name_off, info, _ = unpack(types, off)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        yield off, name_off, info, kind, vlen
        fixed, per = BTF_KIND_EXTRA.get(kind, (0, 0))
        off += 12 + fixed + per * vlen


def type_ids(data: bytes, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The ids of the (kind, name) pairs in `wanted` (kind: "struct" or "func") found in the
    BTF blob `data`; missing ones are left out. ValueError when it is not BTF.

    The names are looked up in the string section first (each string follows a NUL), then the
    walk compares offsets and stops once every pair is found: `tracer record` asks for two ids
    of ~126,000 types at every start (89 -> ~27 ms)."""
    types, strings = btf_sections(data)
    wanted_at: dict[int, list[tuple[int, tuple[str, str]]]] = {}
    for kind, name in wanted:
        needle = b"\0" + name.encode() + b"\0"
        at = strings.find(needle)
        while at != -1:
            wanted_at.setdefault(at + 1, []).append((KIND[kind], (kind, name)))
            at = strings.find(needle, at + 1)
    found: dict[tuple[str, str], int] = {}
    if not wanted_at:
        return found
    for type_id, (_off, name_off, _info, kind, _vlen) in enumerate(btf_types(types), start=1):
        if name_off in wanted_at:
            for want_kind, pair in wanted_at[name_off]:
                if kind == want_kind and pair not in found:
                    found[pair] = type_id
            if len(found) == len(wanted):
                break
    return found
