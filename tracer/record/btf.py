"""The recorder's kernel type ids (bpf/syscall_recorder.c's PT_REGS_BTF_ID and the
bpf_rdonly_cast kfunc), read from the running kernel's BTF through tracer.btf."""

from __future__ import annotations

import functools
import struct

from tracer import btf


@functools.lru_cache(maxsize=1)
def pt_regs_cast_ids() -> tuple[int, int] | None:
    """(struct pt_regs id, bpf_rdonly_cast id) in the running kernel's BTF, or None."""
    try:
        ids = btf.type_ids(btf.VMLINUX_BTF.read_bytes(), {("struct", "pt_regs"), ("func", "bpf_rdonly_cast")})
    except (OSError, ValueError, struct.error):
        return None
    if len(ids) != 2:
        return None
    return ids[("struct", "pt_regs")], ids[("func", "bpf_rdonly_cast")]
