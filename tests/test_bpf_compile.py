"""What a start pays to compile its BPF programs.

bcc compiles bpf/*.c in-process at every `tracer record` / `tracer run` start, and parses every
header three times per compile (tracepoint pass, rewrite, code generation): linux/ptrace.h and
linux/sched.h were most of a start's CPU. The programs now include only what they use, so each
shipped program (the recorder, a probe set of each attach kind, the no-BTF fallback) must compile
to the very instructions and maps it compiles to with the headers it was written against. And a
start compiles each program once, with bcc's one kernel-symbol lookup per compile and no more
(it made one more at every call of a helper named bpf_probe_read_user), and the fexit probe
check reads /proc/kallsyms only for a probe BTF lacks.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tracer.fleet.probes import ProbeSet, load_probe_set
from tracer.fleet.program import CALLTREE_C, FleetProgram, _quiet_bpf_class
from tracer.record.btf import pt_regs_cast_ids
from tracer.record.recorder import BPF_SOURCE, SyscallRecorder

REPO = Path(__file__).resolve().parents[1]

# The headers the programs were written against (calltree.c had all three, the recorder the
# first and the last). Included first, as they were; the programs' own includes then add nothing.
FULL_HEADERS = "#include <uapi/linux/ptrace.h>\n#include <linux/ptrace.h>\n#include <linux/sched.h>\n"


def with_full_headers(source: str) -> str:
    """The program as written before: every header, and bcc's own names for the user-memory
    reads (the shipped recorder calls them under other names; see syscall_recorder.c)."""
    source = re.sub(r"(?<![\w(])probe_read_user(_str)?\(", r"bpf_probe_read_user\1(", source)
    return FULL_HEADERS + source


def compiled(source: str, cflags: list[str]):
    """Compile only: bcc's autoload (which would load and attach tracepoint__ functions) is off."""
    return _quiet_bpf_class()(text=source.encode(), cflags=cflags)


def fingerprint(bpf) -> dict:
    """Every function's instructions (map fds replaced by the map's name: the two compiles have
    maps of their own) and every map's definition."""
    from tracer.privilege import load_bcc

    lib = load_bcc().libbcc.lib
    lib.bpf_num_tables.restype, lib.bpf_num_tables.argtypes = ctypes.c_ulonglong, [ctypes.c_void_p]
    lib.bpf_table_name.restype = ctypes.c_char_p
    lib.bpf_table_name.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
    for fn in (lib.bpf_table_key_size, lib.bpf_table_leaf_size):
        fn.restype, fn.argtypes = ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_char_p]
    module = bpf.module
    maps, fd_names = {}, {}
    for i in range(lib.bpf_num_tables(module)):
        name = lib.bpf_table_name(module, i)
        fd_names[lib.bpf_table_fd(module, name)] = name
        maps[name.decode()] = (lib.bpf_table_type_id(module, i), lib.bpf_table_max_entries_id(module, i),
                               lib.bpf_table_flags_id(module, i), lib.bpf_table_key_size(module, name),
                               lib.bpf_table_leaf_size(module, name), lib.bpf_table_key_desc(module, name),
                               lib.bpf_table_leaf_desc(module, name))
    functions = {}
    for i in range(lib.bpf_num_functions(module)):
        fn = lib.bpf_function_name(module, i)
        code = bytearray(ctypes.string_at(lib.bpf_function_start(module, fn), lib.bpf_function_size(module, fn)))
        for off in range(0, len(code), 8):
            opcode, regs, _off, imm = struct.unpack_from("<BBhi", code, off)
            if opcode == 0x18 and regs >> 4 == 1:  # ld_imm64 of a map fd (BPF_PSEUDO_MAP_FD)
                struct.pack_into("<i", code, off + 4, zlib.crc32(fd_names[imm]) & 0x7FFFFFFF)
        functions[fn.decode()] = bytes(code)
    return {"maps": maps, "functions": functions}


def fleet_flags(name: str, btf_offsets: bool = True, probes: int = 2) -> list[str]:
    """A shipped set's flags, cut to its first probes (each probe is the same macro expanded
    again: two make the comparison as strong, at a fraction of the compile time)."""
    pset = load_probe_set(name)
    flags = FleetProgram(dataclasses.replace(pset, probes=pset.probes[:probes])).cflags()
    # without BTF the program reads task_struct through the headers (task_details' fallback)
    return flags if btf_offsets else [f for f in flags if not f.startswith("-DTASK_")]


RECORDER_INCLUDES = ["uapi/linux/ptrace.h"]
# linux/sched.h only where the task_struct offsets did not come from BTF
CALLTREE_INCLUDES = ["uapi/linux/ptrace.h", "linux/sched.h"]
PROGRAMS = {  # program: (source, its includes, cflags)
    "recorder": lambda: (BPF_SOURCE, RECORDER_INCLUDES, SyscallRecorder().cflags(regs_cast=pt_regs_cast_ids() is not None)),
    "syscalls": lambda: (CALLTREE_C, CALLTREE_INCLUDES, fleet_flags("syscalls")),
    "fexit": lambda: (CALLTREE_C, CALLTREE_INCLUDES, fleet_flags("rdma-queries")),
    "uprobe": lambda: (CALLTREE_C, CALLTREE_INCLUDES, fleet_flags("verbs-user")),
    "syscalls-without-btf": lambda: (CALLTREE_C, CALLTREE_INCLUDES, fleet_flags("syscalls", btf_offsets=False)),
}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_same_instructions_and_maps_as_with_the_full_headers(need_bpf, program):
    path, includes, cflags = PROGRAMS[program]()
    source = path.read_text()
    assert re.findall(r"^#include <(.+?)>", source, re.M) == includes
    shipped = fingerprint(compiled(source, cflags))
    before = fingerprint(compiled(with_full_headers(source), cflags))
    assert shipped["maps"] == before["maps"]
    assert sorted(shipped["functions"]) == sorted(before["functions"])
    differ = [fn for fn, code in shipped["functions"].items() if before["functions"][fn] != code]
    assert not differ, f"{program}: instructions differ in {differ}"


def test_the_reference_calls_the_helpers_by_bcc_s_names():
    """The comparison above is with the recorder as it was, not with the shipped one twice: the
    shipped code never calls a helper named bpf_probe_read_user(_str) (the kallsyms read), the
    reference does wherever the shipped one calls it under its other name."""

    def calls(pattern: str, source: str) -> int:
        return len(re.findall(pattern, re.sub(r"//.*", "", source)))

    shipped = BPF_SOURCE.read_text()
    renamed = calls(r"(?<![\w(])probe_read_user(?:_str)?\(", shipped)
    assert renamed >= 2
    assert calls(r"\bbpf_probe_read_user(?:_str)?\(", shipped) == 0
    assert calls(r"\bbpf_probe_read_user(?:_str)?\(", with_full_headers(shipped)) == renamed


# A start of each command, in a process of its own: `tracer record`'s load and `tracer run`'s
# start of a syscall and a uprobe set. Every compile is counted by a subclass of bcc.BPF installed
# in its place; the process waits for a line on stdin before it starts, so that the test can
# hook it first.
START = r"""
import json, sys, tempfile
from pathlib import Path
from tracer.privilege import load_bcc

bcc = load_bcc()
compiles = []


class CountingBPF(bcc.BPF):
    def __init__(self, *args, **kwargs):
        compiles.append(Path((kwargs.get("src_file") or b"<text>").decode()).name)
        super().__init__(*args, **kwargs)


bcc.BPF = CountingBPF
from tracer.record.recorder import SyscallRecorder
from tracer.fleet.daemon import Daemon, RunConfig

sys.stdin.readline()
recorder = SyscallRecorder().load()
out = {"recorder": compiles[:], "regs_cast": recorder.regs_cast}
recorder.close()
del compiles[:]
with tempfile.TemporaryDirectory() as spool:
    daemon = Daemon(RunConfig(sets=["syscalls", "verbs-user"], spool=Path(spool), best_effort=True,
                              log=sys.stderr))
    daemon.start()
    out["daemon"] = compiles[:]
    out["key_check"] = [p.key_check.regs if p.key_check else None for p in daemon.programs]
    daemon.close()
print(json.dumps(out))
"""

# Calls of libbcc's kernel-symbol lookup in one process. bcc 0.26 rebuilds its index of the
# ~120,000 kallsyms names at every lookup (duplicate names keep the index smaller than the list,
# which it takes for stale): ~0.1 s of CPU each.
LOOKUP_COUNTER = """
BPF_ARRAY(lookups, u64, 1);
int lookup(struct pt_regs *ctx) {
    int zero = 0;
    u64 *n = lookups.lookup(&zero);
    if (n)
        __sync_fetch_and_add(n, 1);
    return 0;
}
"""


def mapped_path(fragment: str) -> str:
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fragment in fields[5]:
            return fields[5]
    raise AssertionError(f"{fragment} is not mapped in this process")


def test_a_start_compiles_each_program_once_with_one_symbol_lookup_each(need_bpf):
    """Each compile costs bcc one kernel-symbol lookup of its own (its check for
    bpf_probe_read_kernel). A helper called by the name bpf_probe_read_user cost one more per
    call (the recorder's: 7 lookups, ~0.7 s of CPU), and a second compile a whole start more."""
    from tracer.privilege import load_bcc

    bcc = load_bcc()
    libbcc = mapped_path("libbcc.so")
    child = subprocess.Popen([sys.executable, "-c", START], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    counter = None
    try:
        counter = bcc.BPF(text=LOOKUP_COUNTER.encode())
        counter.attach_uprobe(name=libbcc.encode(), sym=b"bcc_symcache_resolve_name", fn_name=b"lookup", pid=child.pid)
        stdout, stderr = child.communicate("go\n", timeout=300)
        lookups = int(counter[b"lookups"][ctypes.c_int(0)].value)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if counter is not None:
            counter.cleanup()
    assert child.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    # the recorder compiles again only where the kernel refuses bpf_rdonly_cast
    assert out["recorder"] == ["syscall_recorder.c"] * (1 if out["regs_cast"] or pt_regs_cast_ids() is None else 2)
    # one compile per probe set; a uprobe set compiles again only when the slot-key check fails
    assert out["daemon"] == ["calltree.c"] * (2 + (out["key_check"][1] is False))
    compiles = len(out["recorder"]) + len(out["daemon"])
    assert 0 < lookups <= compiles, f"{lookups} kernel-symbol lookups for {compiles} compiles"


def fexit_set(path: Path, symbols: list[str]) -> ProbeSet:
    lines = ["version: 1", f"name: {path.stem}", "description: test", "attach: fexit", "probes:"]
    lines += [f"  - {{symbol: {s}, layer: core, object: X, operation: op, ret: int}}" for s in symbols]
    path.write_text("\n".join(lines) + "\n")
    return load_probe_set(str(path))


def test_fexit_probe_check_reads_kallsyms_only_for_probes_btf_lacks(need_bpf, tmp_path):
    """Each fexit set's check looked every probe up in BTF and read /proc/kallsyms as well
    (0.2 s of CPU, 0.5 s of wall time here), which only says why a probe BTF lacks is absent.
    probes._kallsyms is the module's one reader of it; its cache counts the reads."""
    from tracer.fleet import probes

    in_btf = sorted(fn for fn, where in probes._kernel_btf().items() if where == "vmlinux")[:2]
    assert len(in_btf) == 2
    probes._kallsyms.cache_clear()
    statuses = probes.check_probe_set(fexit_set(tmp_path / "present.yaml", in_btf))
    assert [s.exists for s in statuses] == [True, True]
    assert probes._kallsyms.cache_info().misses == 0
    [status] = probes.check_probe_set(fexit_set(tmp_path / "missing.yaml", ["tracebase_no_such_function"]))
    assert not status.exists and probes._kallsyms.cache_info().misses == 1
    assert status.reason == "absent from kernel BTF and kallsyms (driver/module not loaded here)"
