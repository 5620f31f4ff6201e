"""Probe sets as data: load and validate `bpf/probes/*.yaml`, apply the vendor namespace gate,
and check whether each probe exists on this host (BTF, kallsyms, ELF symbols, syscall table).

A probe set file::

    version: 1
    name: rdma
    description: "..."
    attach: fexit            # fexit | uprobe | syscalls
    library: ibverbs         # uprobe only: a path, or a name for the dynamic linker's search
    probes:
      - symbol: mlx5_ib_reg_user_mr
        layer: driver        # uverbs | core | driver | peer-mem | syscall | user-lib
        object: MR           # QP | MR | PD | CQ | ...
        operation: reg_mr    # the `command` of a call tree whose root is this probe
        ret: int             # how the return value reads (RET_KINDS)
        vendors: {bnxt_re: bnxt_re_reg_user_mr, irdma: irdma_reg_user_mr}

The namespace gate: on a host whose RDMA driver is bnxt_re or irdma, a probe with a `vendors`
entry for that driver traces the vendor's function instead of the mlx5_ib_ one.
"""

from __future__ import annotations

import functools
import os
import re
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from tracer import resources, yamlio
from tracer.btf import BTF_FUNC, btf_sections, btf_types
from tracer.errors import TracebaseError, shown_value
from tracer.inputs import NO_SUCH_FILE, file_kind, missing_reason

PROBES_DIR = resources.PROBES_DIR

ATTACH_KINDS = ("fexit", "uprobe", "syscalls")
LAYERS = ("uverbs", "core", "driver", "peer-mem", "syscall", "user-lib")
# Same order as the RET_* constants in bpf/calltree.c.
RET_KINDS = ("int", "long", "err_ptr", "null_ptr", "pos_errno", "nonzero")
VENDORS = ("mlx5", "bnxt_re", "irdma")
VENDOR_MODULES = {"mlx5": "mlx5_ib", "bnxt_re": "bnxt_re", "irdma": "irdma"}
MAX_PROBES_PER_SET = 64
SET_KEYS = ("version", "name", "description", "attach", "library", "probes")
PROBE_KEYS = ("symbol", "layer", "object", "operation", "ret", "vendors")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" lets a trailing newline through


@dataclass(frozen=True)
class Probe:
    id: int
    symbol: str  # the function (or syscall) actually traced, after the vendor gate
    layer: str
    object: str | None
    operation: str | None
    ret: str
    vendors: dict[str, str] = field(default_factory=dict)
    default_symbol: str = ""  # the symbol as written in the file (mlx5 namespace)

    @property
    def ret_kind(self) -> int:
        return RET_KINDS.index(self.ret)


@dataclass(frozen=True)
class ProbeSet:
    name: str
    attach: str
    probes: tuple[Probe, ...]
    source: str
    description: str = ""
    library: str | None = None
    vendor: str | None = None  # driver the namespace gate picked (None: no RDMA driver found)

    def probe(self, probe_id: int) -> Probe:
        return self.probes[probe_id]


# --------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------
def resolve_set_path(name_or_path: str, probes_dir: Path = PROBES_DIR) -> Path:
    """A probe set name ('rdma') or a path to a YAML file."""
    candidate = Path(name_or_path)
    if not name_or_path:
        raise TracebaseError("probe set: expected a set name or a .yaml path, found ''")
    if candidate.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        if candidate.is_dir():
            raise TracebaseError(f"{candidate}: expected a probe set YAML file, found a directory")
        if candidate.exists() and not candidate.is_file():  # a device, a FIFO: there, but no file
            raise TracebaseError(f"{candidate}: expected a probe set YAML file, found {file_kind(candidate.stat().st_mode)}")
        if not candidate.is_file():
            reason = missing_reason(candidate) or "not a regular file"
            if reason == NO_SUCH_FILE:
                reason = "no such probe set file"
            raise TracebaseError(f"{candidate}: {reason} (expected a probe set name or YAML file)")
        return candidate
    path = probes_dir / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in probes_dir.glob("*.yaml"))) or "none"
        raise TracebaseError(f"probe set '{name_or_path}': expected one of {known} or a .yaml path, found no {path}")
    return path


def _field(doc: dict, key: str, source: str, expected: str, kinds: type | tuple, required: bool = True):
    value = doc.get(key)
    if value is None:
        if required:
            raise TracebaseError(f"{source}: field '{key}': expected {expected}, found nothing")
        return None
    if not isinstance(value, kinds):
        raise TracebaseError(f"{source}: field '{key}': expected {expected}, found {shown_value(value)}")
    return value


def load_probe_set(name_or_path: str, probes_dir: Path = PROBES_DIR, vendor: str | None = "detect") -> ProbeSet:
    """Load and validate a probe set; apply the vendor gate (`vendor="detect"` looks at the host)."""
    path = resolve_set_path(name_or_path, probes_dir)
    source = str(path)
    try:
        doc = yamlio.safe_load(path.read_text(encoding="utf-8"), source)
    except yaml.YAMLError as exc:
        raise TracebaseError(f"{source}: expected YAML, found a syntax error ({str(exc).splitlines()[0]})") from None
    except UnicodeDecodeError as exc:
        raise TracebaseError(f"{source}: expected UTF-8 YAML, found undecodable byte at offset {exc.start}") from None
    except OSError as exc:
        raise TracebaseError(f"{source}: expected a readable probe set file, found {exc.strerror}") from None
    if not isinstance(doc, dict):
        found = "an empty file" if doc is None else f"a YAML {type(doc).__name__}"
        raise TracebaseError(f"{source}: expected a mapping with version/name/attach/probes, found {found}")
    unknown = sorted(str(k) for k in doc if k not in SET_KEYS)
    if unknown:
        raise TracebaseError(f"{source}: expected only the keys {', '.join(SET_KEYS)}, found unknown key {unknown[0]!r}")
    version = doc.get("version")
    if version != 1:
        raise TracebaseError(f"{source}: field 'version': expected 1, found {shown_value(version)}")
    name = _field(doc, "name", source, "a probe set name", str)
    attach = _field(doc, "attach", source, f"one of {', '.join(ATTACH_KINDS)}", str)
    if attach not in ATTACH_KINDS:
        raise TracebaseError(f"{source}: field 'attach': expected one of {', '.join(ATTACH_KINDS)}, found {shown_value(attach)}")
    library = _field(doc, "library", source, "a library path or name", str, required=attach == "uprobe")
    entries = _field(doc, "probes", source, "a list of probes", list)
    if not entries:
        raise TracebaseError(f"{source}: field 'probes': expected at least one probe, found an empty list")
    if len(entries) > MAX_PROBES_PER_SET:
        raise TracebaseError(f"{source}: field 'probes': expected at most {MAX_PROBES_PER_SET} probes, found {len(entries)}")
    probes = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"{source}: probes[{i}]"
        if not isinstance(entry, dict):
            raise TracebaseError(f"{where}: expected a mapping with symbol/layer/ret, found {shown_value(entry)}")
        unknown = sorted(str(k) for k in entry if k not in PROBE_KEYS)
        if unknown:
            raise TracebaseError(f"{where}: expected only the keys {', '.join(PROBE_KEYS)}, found unknown key {unknown[0]!r}")
        symbol = _field(entry, "symbol", where, "a function or syscall name", str)
        if not _IDENT.match(symbol):
            raise TracebaseError(f"{where}: field 'symbol': expected a C identifier, found {shown_value(symbol)}")
        if symbol in seen:
            raise TracebaseError(f"{where}: field 'symbol': expected a unique symbol, found {shown_value(symbol)} twice")
        seen.add(symbol)
        layer = _field(entry, "layer", where, f"one of {', '.join(LAYERS)}", str)
        if layer not in LAYERS:
            raise TracebaseError(f"{where}: field 'layer': expected one of {', '.join(LAYERS)}, found {shown_value(layer)}")
        ret = entry.get("ret", "long" if attach == "syscalls" else "int")
        if ret not in RET_KINDS:
            raise TracebaseError(f"{where}: field 'ret': expected one of {', '.join(RET_KINDS)}, found {shown_value(ret)}")
        vendors = entry.get("vendors") or {}
        if not isinstance(vendors, dict) or any(v not in VENDORS for v in vendors):
            raise TracebaseError(f"{where}: field 'vendors': expected a mapping with keys from {', '.join(VENDORS)}, found {shown_value(vendors)}")
        for v, sym in vendors.items():
            if not isinstance(sym, str) or not _IDENT.match(sym):
                raise TracebaseError(f"{where}: field 'vendors.{v}': expected a C identifier, found {shown_value(sym)}")
        obj = entry.get("object")
        operation = entry.get("operation")
        probes.append(
            Probe(id=i, symbol=symbol, layer=layer, object=None if obj is None else str(obj),
                  operation=None if operation is None else str(operation), ret=ret,
                  vendors=dict(vendors), default_symbol=symbol)
        )
    pset = ProbeSet(name=name, attach=attach, probes=tuple(probes), source=source,
                    description=str(doc.get("description", "")), library=library)
    if vendor == "detect":
        vendor = detect_vendor() if any(p.vendors for p in probes) else None
    return apply_vendor_gate(pset, vendor)


def apply_vendor_gate(pset: ProbeSet, vendor: str | None) -> ProbeSet:
    """Swap mlx5 callbacks for the host driver's equivalents (the namespace gate)."""
    if vendor is not None and vendor not in VENDORS:
        raise TracebaseError(f"vendor: expected one of {', '.join(VENDORS)}, found {shown_value(vendor)}")
    probes = tuple(
        replace(p, symbol=p.vendors.get(vendor, p.default_symbol) if vendor and vendor != "mlx5" else p.default_symbol)
        for p in pset.probes
    )
    # Two entries traced as one function would count every call twice, and give the Prometheus
    # textfile two series with the same labels (node_exporter then drops the whole file).
    seen: dict[str, str] = {}
    for p in probes:
        if p.symbol in seen:
            raise TracebaseError(f"{pset.source}: field 'vendors.{vendor}': expected each probe to trace its own "
                                 f"function, found {shown_value(seen[p.symbol])} and {p.default_symbol!r} both traced as {p.symbol!r}")
        seen[p.symbol] = p.default_symbol
    return replace(pset, probes=probes, vendor=vendor)


def detect_vendor(sys_root: str = "/sys") -> str | None:
    """Which RDMA driver this host runs: a loaded module, or a device's driver link."""
    root = Path(sys_root)
    found = []
    for dev in sorted((root / "class" / "infiniband").glob("*")):
        driver = (dev / "device" / "driver")
        if driver.exists():
            found.append(driver.resolve().name)
    for module in VENDOR_MODULES.values():
        if (root / "module" / module).exists():
            found.append(module)
    for name in found:
        for vendor, module in VENDOR_MODULES.items():
            if name == module or name.startswith(vendor):
                return vendor
    return None


# --------------------------------------------------------------------------------------------
# existence checks
# --------------------------------------------------------------------------------------------
def btf_function_names(path: str, base_strings: bytes = b"") -> set[str]:
    """Names of FUNC entries in a BTF blob (module BTF is split BTF over vmlinux's strings)."""
    types, strings = btf_sections(Path(path).read_bytes())
    names: set[str] = set()
    base = len(base_strings)
    for _off, name_off, _info, kind, _vlen in btf_types(types):
        if kind == BTF_FUNC and name_off:
            table, pos = (base_strings, name_off) if name_off < base else (strings, name_off - base)
            names.add(table[pos: table.index(b"\0", pos)].decode())
    return names


@functools.lru_cache(maxsize=1)
def _kernel_btf(btf_dir: str = "/sys/kernel/btf") -> dict[str, str]:
    """function name -> 'vmlinux' or the module whose BTF has it."""
    where: dict[str, str] = {}
    vmlinux = Path(btf_dir) / "vmlinux"
    if not vmlinux.exists():
        return where
    _, base_strings = btf_sections(vmlinux.read_bytes())
    for fn in btf_function_names(str(vmlinux)):
        where[fn] = "vmlinux"
    for module in sorted(Path(btf_dir).iterdir()):
        if module.name == "vmlinux":
            continue
        try:
            for fn in btf_function_names(str(module), base_strings):
                where.setdefault(fn, module.name)
        except (OSError, ValueError, struct.error):
            continue
    return where


@functools.lru_cache(maxsize=1)
def _kallsyms(path: str = "/proc/kallsyms") -> frozenset[str]:
    names = set()
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tTwW":
                    names.add(parts[2])
    except OSError:
        pass
    return frozenset(names)


@functools.lru_cache(maxsize=1)
def syscall_numbers() -> dict[str, int]:
    """Syscall name -> number for this architecture, from the installed unistd header."""
    candidates = [
        "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
        "/usr/include/asm/unistd_64.h",
        f"/lib/modules/{os.uname().release}/build/arch/x86/include/generated/uapi/asm/unistd_64.h",
    ]
    for path in candidates:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        table = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)", text)}
        if table:
            return table
    return {}


def resolve_library(library: str) -> str | None:
    """A library path, or a name ('ibverbs', 'libibverbs.so.1') found by the dynamic linker: its
    cache first, else the usual directories. Only an ELF file: an unversioned `libc.so` in a
    library directory is often a linker script, which no uprobe can be placed in."""
    if os.sep in library:
        return library if Path(library).is_file() else None
    # bcc looks the cache up for "lib<stem>.so*": it takes the stem, bytes
    stem = library.removeprefix("lib").split(".so")[0]
    try:
        from tracer.privilege import load_bcc

        found = load_bcc().BPF.find_library(stem.encode())
    except Exception:  # noqa: BLE001 - bcc missing: no dynamic-linker lookup
        found = None
    if found:
        return found.decode() if isinstance(found, bytes) else str(found)
    for libdir in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu"):
        # the name as given first, then the others in name order
        hits = sorted(Path(libdir).glob(f"lib{stem}.so*"), key=lambda path: (path.name != library, path.name))
        for hit in hits:
            if _is_elf(hit):
                return str(hit)
    return None


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_function_symbols(path: str) -> set[str]:
    """Defined function symbols (dynamic and static tables) of an ELF file."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise TracebaseError(f"{path}: expected a 64-bit ELF file, found something else")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _name, sh_type, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if sh_type not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        str_off, str_size = sections[link][4], sections[link][5]
        strtab = data[str_off: str_off + str_size]
        for pos in range(offset, offset + size, entsize):
            st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, pos)
            if (st_info & 0xF) == 2 and st_shndx != 0 and st_name:  # STT_FUNC, defined
                names.add(strtab[st_name: strtab.index(b"\0", st_name)].decode())
    return names


@dataclass
class ProbeStatus:
    probe: str  # symbol traced
    default_symbol: str
    layer: str
    exists: bool
    where: str | None  # 'vmlinux BTF', 'module BTF mlx5_ib', 'ELF /usr/lib/..', 'syscall 257'
    vendor: str | None
    attachable: bool | None  # None: not tried
    reason: str | None  # why it does not exist / cannot attach

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def lockdown_mode(path: str = "/sys/kernel/security/lockdown") -> str | None:
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else None


def check_probe_set(pset: ProbeSet) -> list[ProbeStatus]:
    """Whether each probe's target exists on this host, and where."""
    out = []
    if pset.attach == "fexit":
        btf = _kernel_btf()
        for p in pset.probes:
            if not btf:
                exists, where, reason = False, None, "no kernel BTF at /sys/kernel/btf/vmlinux (fexit needs it)"
            elif p.symbol in btf:
                module = btf[p.symbol]
                exists, where, reason = True, "vmlinux BTF" if module == "vmlinux" else f"module BTF {module}", None
            # kallsyms only says why a probe BTF lacks is absent: reading it cost every start of a
            # set whose probes all exist 0.2 s of CPU (0.5 s of wall time) for nothing
            elif p.symbol in _kallsyms():
                exists, where = False, "kallsyms"
                reason = "in kallsyms but not in BTF (inlined or module without BTF): fexit cannot attach"
            else:
                exists, where, reason = False, None, "absent from kernel BTF and kallsyms (driver/module not loaded here)"
            out.append(ProbeStatus(p.symbol, p.default_symbol, p.layer, exists, where, pset.vendor, None, reason))
    elif pset.attach == "uprobe":
        lib = resolve_library(pset.library or "")
        symbols = elf_function_symbols(lib) if lib else set()
        for p in pset.probes:
            if not lib:
                status = ProbeStatus(p.symbol, p.default_symbol, p.layer, False, None, pset.vendor, None,
                                     f"library {pset.library!r} not found on this host")
            elif p.symbol in symbols:
                status = ProbeStatus(p.symbol, p.default_symbol, p.layer, True, f"ELF {lib}", pset.vendor, None, None)
            else:
                status = ProbeStatus(p.symbol, p.default_symbol, p.layer, False, None, pset.vendor, None,
                                     f"no function symbol {p.symbol} in {lib}")
            out.append(status)
    else:
        table = syscall_numbers()
        for p in pset.probes:
            nr = table.get(p.symbol)
            if nr is None:
                reason = "no syscall table header found" if not table else f"no syscall named {p.symbol} on this architecture"
                out.append(ProbeStatus(p.symbol, p.default_symbol, p.layer, False, None, None, None, reason))
            else:
                out.append(ProbeStatus(p.symbol, p.default_symbol, p.layer, True, f"syscall {nr}", None, None, None))
    return out
