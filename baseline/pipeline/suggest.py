"""Probe-set suggestions from a kernel's function list (BTF or symbols).

RDMATracer picked 13 probes out of ~2,000 functions under drivers/infiniband by four rules:
exclude read-only functions (they return routine errors such as ENOENT), exclude generic kernel
internals, exclude cleanup/refcount paths (they fail by panicking, not by returning an errno),
and focus on creates/updates of QP, MR, PD and CQ. Probe-set maintenance across kernel upgrades
was the manual part. This module automates it:

* `read_symbols` reads a function list: binary BTF (/sys/kernel/btf/vmlinux, module BTF, or a
  directory of them), ``bpftool btf dump file X format raw`` output, /proc/kallsyms, or a plain
  list (one name per line);
* `classify` applies the four rules to one name (the RDMA control-path reference's class wins
  when it knows the function) and gives the reason;
* `suggest` lists candidates worth adding, and with an old list, the probes that vanished or
  were renamed in the new kernel.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from tracer import yamlio
from tracer.errors import TracebaseError
from tracer.inputs import (
    NO_SUCH_FILE,
    missing_reason,
    open_regular,
    read_regular_bytes,
    read_regular_text,
)

# RDMA subsystem namespaces (prefix -> subsystem label).
NAMESPACES: tuple[tuple[str, str], ...] = (
    ("ib_uverbs_", "uverbs"),
    ("uverbs_", "uverbs"),
    ("ib_umem", "core/umem"),
    ("ib_peer_", "peer-mem"),
    ("__ib_umem", "core/umem"),
    ("peer_mem", "peer-mem"),
    ("__ib_", "core"),
    ("_ib_", "core"),
    ("ib_", "core"),
    ("rdma_", "core"),
    ("mlx5_ib_", "driver/mlx5"),
    ("mlx5r_", "driver/mlx5"),
    ("__mlx5_ib_", "driver/mlx5"),
    ("mlx5_cmd_", "driver/mlx5-core"),
    ("mlx5_core_", "driver/mlx5-core"),
    ("bnxt_re_", "driver/bnxt_re"),
    ("bnxt_qplib_", "driver/bnxt_re"),
    ("irdma_", "driver/irdma"),
)
# mlx5_core_ also holds the Ethernet driver; only its RDMA-object commands are in scope.
MLX5_CORE_SCOPE = re.compile(r"^mlx5_(core|cmd)_.*(qp|cq|mkey|pd|srq|dct|exec)", re.I)

OBJECTS = {"qp": "QP", "mr": "MR", "mkey": "MR", "umem": "MR", "pd": "PD", "cq": "CQ"}
OTHER_OBJECTS = {"srq": "SRQ", "ah": "AH", "wq": "WQ", "xrcd": "XRCD", "mw": "MW", "dm": "DM", "ucontext": "UCONTEXT", "counter": "COUNTER", "flow": "FLOW", "dct": "DCT"}

GENERIC = re.compile(
    r"(^__bpf_trace_|^trace_|^perf_trace_|^trace_event_|^trace_raw_|__tracepoint|_init$|_exit$|^init_|_init_module|"
    r"_cleanup_module|module|debugfs|sysfs|_show$|_store$|_nl_|nldev|netlink|notifier|_work$|_workqueue|"
    r"_lock$|_unlock$|_rcu$|_print|_dump$|_suspend$|_resume$|_probe$|_shutdown$|_compat$|_ktype|_kobj|"
    r"_event_handler$|_hash$|_cmp$|_seq_|_fops|_poll$|_mmap_|_open$|_llseek)"
)
CLEANUP = ("dealloc", "destroy", "dereg", "release", "unpin", "uncharge", "abort", "put", "free", "remove",
           "del", "cleanup", "unregister", "unmap", "detach", "close", "dec", "kref", "revoke", "stop",
           "drain", "flush", "unbind", "disassociate", "teardown")
READ_ONLY = ("query", "lookup", "read", "find", "check", "show", "is", "has", "valid", "validate", "cmp",
             "link", "layer", "num", "count", "dump", "fill", "copy", "to", "from", "get")
CREATE_UPDATE = ("alloc", "create", "reg", "rereg", "modify", "bind", "pin", "charge", "commit", "add",
                 "attach", "set", "resize", "map", "begin", "import", "activate", "advise")
HARDWARE = re.compile(r"(cmd_exec|_cmd_|^mlx5_cmd|_post_cmd|cqp_|_hw_|hwreg|_fw_|qplib_|umr|_mkey|create_mkey|doorbell|_db_map)")
# 'get' pins pages for umem/peer memory: a create, not a read.
PIN_GET = re.compile(r"(umem|peer|pages).*get|get.*(umem|pages|peer)")
COMPILER_SUFFIX = re.compile(r"\.(isra|constprop|part|cold|llvm)\.?\d*.*$")


@dataclass(frozen=True)
class Symbol:
    name: str
    linkage: str | None = None  # static | global | None when unknown
    module: str | None = None


@dataclass(frozen=True)
class Suggestion:
    symbol: str
    action: str  # candidate | consider | keep | exclude | skip | vanished | renamed | new-candidate
    rule: str  # which of the four rules (or reference) decided
    object: str | None
    subsystem: str | None
    reason: str
    replacement: str | None = None  # renamed: the new name

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# reading function lists
# --------------------------------------------------------------------------------------------
RAW_FUNC = re.compile(r"^\[\d+\]\s+FUNC\s+'([^']+)'(?:.*linkage=(\w+))?")
KALLSYMS = re.compile(r"^[0-9a-fA-F]{8,16}\s+([tTwW])\s+(\S+)(?:\s+\[(\S+)\])?\s*$")
PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def parse_symbol_text(lines: Iterable[str], source: str = "<symbols>") -> dict[str, Symbol]:
    """Functions from bpftool raw BTF dump, kallsyms or plain-list text."""
    out: dict[str, Symbol] = {}
    bad = 0
    first_bad = ""
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if m := RAW_FUNC.match(line):
            name, linkage, module = m[1], m[2], None
        elif line.startswith("[") and "FUNC" not in line.split("'")[0]:
            continue  # other BTF kinds (STRUCT, INT, FUNC_PROTO, ...)
        elif m := KALLSYMS.match(line):
            name, linkage, module = m[2], "static" if m[1] in "tw" else "global", m[3]
        elif PLAIN.match(line):
            name, linkage, module = line, None, None
        else:
            bad += 1
            first_bad = first_bad or line
            continue
        base = COMPILER_SUFFIX.sub("", name)
        out.setdefault(base, Symbol(base, linkage, module))
    if not out:
        detail = f" (first unrecognised line: {first_bad[:80]!r})" if bad else ""
        raise TracebaseError(
            f"{source}: expected BTF, 'bpftool btf dump ... format raw' output, kallsyms or one function name per line, found no functions{detail}"
        )
    return out


def _is_btf(path: Path) -> bool:
    # regular files only: a FIFO would hang here, /dev/zero be parsed as one endless line
    with open_regular(path, "a BTF blob or a symbol list") as fh:
        return fh.read(2) == b"\x9f\xeb"


def read_symbols(path: str | os.PathLike, base_btf: str | os.PathLike | None = None) -> dict[str, Symbol]:
    """Function names from a BTF blob, a directory of BTF blobs (vmlinux first), or text."""
    try:
        return _read_symbols(path, base_btf)
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        # a read error names no file (EIO reading /proc/self/mem, a disk error): name the input
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path)) from None


def _read_symbols(path: str | os.PathLike, base_btf: str | os.PathLike | None = None) -> dict[str, Symbol]:
    from tracer.btf import btf_sections  # the one BTF reader
    from tracer.fleet.probes import btf_function_names

    path = Path(path)
    if (reason := missing_reason(path)) is not None:
        if reason == NO_SUCH_FILE:
            raise TracebaseError(f"{path}: no such BTF or symbol file")
        raise TracebaseError(f"{path}: {reason} (expected a BTF blob or a symbol list)")
    if base_btf is not None and (reason := missing_reason(base_btf)) is not None:
        # (read only when `path` is split BTF: named and missing, it was ignored with exit 0)
        raise TracebaseError(f"{base_btf}: {reason} (expected the base BTF blob, --base-btf)")
    if path.is_dir():
        vmlinux = path / "vmlinux"
        if not vmlinux.is_file():
            raise TracebaseError(f"{path}: expected a BTF directory with a vmlinux file, found none")
        out = read_symbols(vmlinux)
        for module in sorted(p for p in path.iterdir() if p.name != "vmlinux" and p.is_file()):
            for name, sym in read_symbols(module, base_btf=vmlinux).items():
                out.setdefault(name, Symbol(name, sym.linkage, module.name))
        return out
    if _is_btf(path):
        base = b""
        if base_btf is not None:
            try:
                base = btf_sections(read_regular_bytes(base_btf, "a BTF blob"))[1]
            except ValueError as exc:
                raise TracebaseError(f"{base_btf}: expected the base BTF blob (--base-btf), found {exc}") from None
        try:
            names = btf_function_names(str(path), base)
        except (ValueError, IndexError, UnicodeDecodeError) as exc:
            raise TracebaseError(f"{path}: expected BTF data, found unreadable BTF ({exc})") from None
        return {n: Symbol(n, None, None if path.name == "vmlinux" else path.name) for n in names}
    try:
        with path.open(encoding="utf-8") as fh:
            return parse_symbol_text(fh, str(path))
    except UnicodeDecodeError:
        raise TracebaseError(f"{path}: expected BTF or a text symbol list, found binary data") from None


def load_reference_classes(path: str | os.PathLike) -> dict[str, str]:
    """fn -> class (create_update | read_only | cleanup | dispatch) from rdma_control_path.yaml."""
    import yaml

    try:
        doc = yamlio.safe_load(read_regular_text(path, "the RDMA control-path reference YAML"), str(path))
    except UnicodeDecodeError:
        raise TracebaseError(f"{path}: expected the RDMA control-path reference YAML, found binary data") from None
    except OSError as exc:
        found = "a directory" if isinstance(exc, IsADirectoryError) else (missing_reason(path) or exc.strerror or str(exc))
        raise TracebaseError(f"{path}: expected the RDMA control-path reference YAML, found {found}") from None
    except yaml.YAMLError as exc:
        raise TracebaseError(f"{path}: expected the RDMA control-path reference YAML, found text that is no YAML "
                             f"({str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__})") from None
    out: dict[str, str] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            fn, cls = node.get("fn"), node.get("class")
            if isinstance(fn, str) and isinstance(cls, str) and re.fullmatch(r"[A-Za-z_]\w*", fn):
                out.setdefault(fn, cls)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    if not out:  # a list, a typo'd file, another YAML: say so rather than classify nothing
        raise TracebaseError(f"{path}: expected the RDMA control-path reference YAML (entries with fn: and class:), found none")
    return out


# --------------------------------------------------------------------------------------------
# the four rules
# --------------------------------------------------------------------------------------------
def subsystem_of(name: str) -> str | None:
    for prefix, label in NAMESPACES:
        if name.startswith(prefix):
            if label == "driver/mlx5-core" and not MLX5_CORE_SCOPE.match(name):
                return None
            return label
    return None


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[_\d]+", name.lower()) if t]


def object_of(name: str) -> str | None:
    tokens = _tokens(name)
    for t in tokens:
        if t in OBJECTS:
            return OBJECTS[t]
    for t in tokens:
        if t in OTHER_OBJECTS:
            return OTHER_OBJECTS[t]
    return None


def classify(name: str, reference: dict[str, str] | None = None) -> Suggestion:
    """Apply the four selection rules to one function name."""
    subsystem = subsystem_of(name)
    obj = object_of(name)
    if subsystem is None:
        return Suggestion(name, "skip", "namespace", obj, None, "outside the RDMA subsystem namespaces")
    ref = (reference or {}).get(name)
    hw = HARDWARE.search(name)
    if ref:
        if ref == "read_only":
            return Suggestion(name, "exclude", "read-only", obj, subsystem, "reference: read_only (query/lookup; returns routine errors like ENOENT)")
        if ref == "cleanup":
            return Suggestion(name, "exclude", "cleanup", obj, subsystem, "reference: cleanup (dealloc/destroy/put; fails by panicking, not by errno)")
        if ref == "dispatch":
            return Suggestion(name, "exclude", "generic", obj, subsystem, "reference: dispatch glue (every command passes here; errors are not object-specific)")
    if GENERIC.search(name) and not ref:
        return Suggestion(name, "exclude", "generic", obj, subsystem, f"generic kernel internal ({GENERIC.search(name).group(0).strip('_')})")
    tokens = _tokens(name)
    pin_get = bool(PIN_GET.search(name.lower()))
    cleanup = next((t for t in tokens if t in CLEANUP), None)
    if cleanup and not ref:
        return Suggestion(name, "exclude", "cleanup", obj, subsystem, f"cleanup/refcount path ('{cleanup}'): fails by panicking, not by returning an errno")
    create = next((t for t in tokens if t in CREATE_UPDATE), None) or ("get" if pin_get else None)
    if ref == "create_update" and not create:
        create = "reference"
    read_only = next((t for t in tokens if t in READ_ONLY and not (t == "get" and pin_get)), None)
    if read_only and not create and not ref:
        return Suggestion(name, "exclude", "read-only", obj, subsystem, f"read-only ('{read_only}'): returns routine errors like ENOENT")
    source = "reference: create_update; " if ref == "create_update" else ""
    if create and obj in ("QP", "MR", "PD", "CQ"):
        what = "pins memory for" if create == "get" else "creates/updates"
        return Suggestion(name, "candidate", "create/update", obj, subsystem, f"{source}{what} a {obj} ('{create}')")
    if hw:
        return Suggestion(name, "candidate", "hardware", obj, subsystem, f"{source}starts hardware communication ('{hw.group(0).strip('_')}')")
    if create and obj:
        return Suggestion(name, "consider", "create/update", obj, subsystem, f"{source}creates/updates a {obj} ('{create}'), outside the QP/MR/PD/CQ focus")
    if create:
        return Suggestion(name, "consider", "create/update", obj, subsystem, f"{source}changes state ('{create}') but names no RDMA object")
    return Suggestion(name, "skip", "no-rule", obj, subsystem, "no create/update verb and no hardware path in the name")


# --------------------------------------------------------------------------------------------
# suggestions
# --------------------------------------------------------------------------------------------
def find_rename(name: str, added: Iterable[str], cutoff: float = 0.8) -> tuple[str, float] | None:
    """The most similar new symbol in the same subsystem, if close enough to be a rename."""
    best: tuple[str, float] | None = None
    stripped = name.lstrip("_")
    for cand in added:
        if subsystem_of(cand) != subsystem_of(name) and cand.lstrip("_") != stripped:
            continue
        if cand.lstrip("_") == stripped or cand.startswith(name + "_") or name.startswith(cand + "_"):
            ratio = 0.99
        else:
            ratio = difflib.SequenceMatcher(None, name, cand).ratio()
        if ratio >= cutoff and (best is None or ratio > best[1]):
            best = (cand, ratio)
    return best


@dataclass
class SuggestionReport:
    kernel_symbols: int
    rdma_functions: int
    suggestions: list[Suggestion]

    def by_action(self, *actions: str) -> list[Suggestion]:
        return [s for s in self.suggestions if s.action in actions]


def suggest(
    new: dict[str, Symbol],
    *,
    old: dict[str, Symbol] | None = None,
    probes: Iterable[str] = (),
    reference: dict[str, str] | None = None,
) -> SuggestionReport:
    """Classify every RDMA function of `new`; flag probe-set symbols vanished/renamed since `old`."""
    probes = list(dict.fromkeys(probes))
    probe_set = set(probes)
    results: list[Suggestion] = []
    rdma = [n for n in sorted(new) if subsystem_of(n)]
    added = set(new) - set(old) if old is not None else set()
    for name in rdma:
        s = classify(name, reference)
        if name in probe_set:
            s = Suggestion(name, "keep", s.rule, s.object, s.subsystem, f"in the probe set; {s.reason}")
        elif old is not None and name in added and s.action == "candidate":
            s = Suggestion(name, "new-candidate", s.rule, s.object, s.subsystem, f"new in this kernel; {s.reason}")
        results.append(s)
    # Probes that the new kernel no longer has: renamed (a close new name) or vanished.
    tracked = probes or (sorted(n for n in old if classify(n, reference).action == "candidate") if old else [])
    pool = added if old is not None else set(new) - probe_set
    # Vendor equivalents of a driver the new kernel does not carry at all are not "vanished":
    # the namespace gate would never pick them on such a host.
    drivers = ("mlx5_ib_", "bnxt_re_", "irdma_")
    carried = {d for d in drivers if any(n.startswith(d) for n in new)}
    for name in tracked:
        if name in new:
            continue
        c = classify(name, reference)
        driver = next((d for d in drivers if name.startswith(d)), None)
        if driver and driver not in carried:
            results.append(Suggestion(name, "skip", c.rule, c.object, c.subsystem,
                                      f"no {driver.rstrip('_')} functions in this kernel: the namespace gate would not pick it"))
            continue
        hit = find_rename(name, pool)
        if hit:
            results.append(Suggestion(name, "renamed", c.rule, c.object, c.subsystem,
                                      f"missing from the new kernel; '{hit[0]}' looks like its new name (similarity {hit[1]:.2f})", hit[0]))
        else:
            was = "in the old kernel" if old is not None and name in old else "in the probe set"
            results.append(Suggestion(name, "vanished", c.rule, c.object, c.subsystem,
                                      f"{was} but missing from the new kernel (inlined, removed, or a build without this driver)"))
    order = {"vanished": 0, "renamed": 1, "new-candidate": 2, "candidate": 3, "keep": 4, "consider": 5, "exclude": 6, "skip": 7}
    results.sort(key=lambda s: (order.get(s.action, 9), s.object or "~", s.symbol))
    return SuggestionReport(len(new), len(rdma), results)


def render_text(report: SuggestionReport, show_all: bool = False) -> str:
    lines = [f"{report.kernel_symbols} functions, {report.rdma_functions} in RDMA namespaces"]
    sections = [
        ("Probes vanished or renamed", ("vanished", "renamed")),
        ("Candidates worth adding", ("new-candidate", "candidate")),
        ("Kept (already probed)", ("keep",)),
        ("Worth a look (outside the QP/MR/PD/CQ focus)", ("consider",)),
    ]
    if show_all:
        sections.append(("Excluded by the selection rules", ("exclude", "skip")))
    for title, actions in sections:
        items = report.by_action(*actions)
        lines += ["", f"{title} ({len(items)}):"]
        for s in items:
            target = f" -> {s.replacement}" if s.replacement else ""
            lines.append(f"  {s.action:<13} {s.symbol}{target}  [{s.object or '-'}] {s.reason}")
    if not show_all:
        n = len(report.by_action("exclude", "skip"))
        lines += ["", f"{n} functions excluded by the selection rules (--all lists them with the reason)."]
    return "\n".join(lines) + "\n"
