"""Turn the recorder's raw ring-buffer records into the tracebase `events` table, columnar.

A record is struct event from bpf/syscall_recorder.c: a fixed 112-byte header, then len1 +
len2 bytes of path strings and len3 bytes of output (what a write-like call wrote, the fd
pair of a pipe, or getsockopt(SOL_SOCKET, SO_ERROR)'s value: `socket_errors`). Records arrive in bulk (tracer.record.ringbuf.Batch: one bytes span and the
offsets of its samples); the headers are joined into one numpy structured array, sorting is
an index permutation (records are not copied), and strings are decoded only for the records
that carry one. Trimming, errno names,
probe names, comm and the `arg` column are computed per column (per distinct value, not per
event). Only what depends on the order of calls -- each process's cwd and fd table, which
label fd-based calls and resolve relative paths -- is replayed event by event, and only for
the events that need it (tracer.record.fdtable); absolute paths of calls that change no state are
cleaned outside that loop.

The per-event rules are tracer.record.fdtable.PathResolver.apply's; this module only decides which
events can skip it, so the result is the same as feeding every event to apply() in order
(tests/test_record_units.py checks that on synthetic and recorded data).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pyarrow as pa

from tracer.errnos import MAX_ERRNO, errno_name
from tracer.errors import escaped_name
from tracer.record.fdtable import PIPE_LABEL, SOCKETPAIR_LABEL, PathResolver, clean
from tracer.record.ringbuf import Batch
from tracer.record.syscalls import (
    AT_FDCWD,
    O_CLOEXEC,
    SPEC_SOCKADDR,
    SPEC_SOCKERR,
    SPECS,
    Spec,
    render_arg,
    sockaddr_text,
)
from tracer.schema import METADATA_TYPE, conform, metadata_list

F_AT_ENTER = 2

# struct event header in bpf/syscall_recorder.c; path bytes follow it
HEADER = np.dtype(
    [
        ("ts_ns", "<u8"), ("latency_ns", "<u8"), ("ret", "<i8"), ("args", "<u8", (6,)),
        ("pid", "<u4"), ("tid", "<u4"), ("ppid", "<u4"), ("nr", "<u2"), ("flags", "<u2"),
        ("len1", "<u2"), ("len2", "<u2"), ("spec", "<u2"), ("len3", "<u2"), ("comm", "S16"),
    ]
)
HEADER_SIZE = HEADER.itemsize  # 112

# How an event's path column is found (per syscall number). The replay handles the commonest
# kinds inline with exactly PathResolver.apply's rules, and hands everything else to apply().
NO_SPEC = 0      # nothing to resolve; only the process's first event matters (state creation)
PLAIN_PATH = 1   # a path argument, no effect on state: absolute paths need no replay
FD_LABEL = 2     # labelled with an fd's path, no effect on state: a dict lookup in the replay
CLOSE = 3        # close(fd): labelled with the fd's path, then the fd is gone
OPEN = 4         # open/openat/creat: resolve the path; on success the fd points to it
GENERAL = 5      # everything else goes through PathResolver.apply


@dataclass
class Decoded:
    """Records in entry-time order: their headers, and where each one's bytes are."""

    head: np.ndarray     # HEADER structured array
    data: bytes          # the records' bytes as received (not reordered)
    start: np.ndarray    # per row of `head`: offset of its record in `data`

    def __len__(self) -> int:
        return len(self.head)

    def record(self, row: int) -> bytes:
        """Row's whole record (header and strings), e.g. for a reference decoder."""
        h = self.head[row]
        size = HEADER_SIZE + int(h["len1"]) + int(h["len2"]) + int(h["len3"])
        at = int(self.start[row])
        return self.data[at:at + size]


_LENGTHS = struct.Struct("<HH2xH")  # len1, len2, (spec), len3 at HEADER offset 88


def split_records(regions: list[bytes]) -> Batch:
    """The records in `regions` (the BPF side's per-CPU batches: records back to back, each
    padded to 8 bytes) as one Batch with an offset per record."""
    data = regions[0] if len(regions) == 1 else b"".join(regions)
    unpack, at = _LENGTHS.unpack_from, HEADER.fields["len1"][1]
    offsets: list[int] = []
    lengths: list[int] = []
    add_offset, add_length = offsets.append, lengths.append
    pos, end = 0, len(data) - HEADER_SIZE
    while pos <= end:
        len1, len2, len3 = unpack(data, pos + at)
        size = HEADER_SIZE + len1 + len2 + len3
        add_offset(pos)
        add_length(size)
        pos += (size + 7) & ~7
    return Batch(data, np.asarray(offsets, np.int64), np.asarray(lengths, np.int64))


def batch_of(records: list[bytes]) -> Batch:
    """Separate records (e.g. made up by a test) as one Batch."""
    lengths = np.fromiter((len(r) for r in records), np.int64, len(records))
    offsets = np.zeros(len(records), np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return Batch(b"".join(records), offsets, lengths)


def decode(batches: list[Batch] | Batch, execve_nrs: list[int], trim_before_exec_of: int | None,
           since_ns: int = 0) -> Decoded:
    """Headers of all records, sorted by (entry time, tid); with trim_before_exec_of, that
    process's calls before its first execve are dropped (the recorder's fork-to-exec stub).
    Records of calls entered before since_ns (CLOCK_MONOTONIC) are dropped: a thread that was
    inside a syscall when an earlier recording stopped still has it pending."""
    if isinstance(batches, Batch):
        batches = [batches]
    base = 0
    starts = []
    for b in batches:
        starts.append(b.offsets + base)
        base += len(b.data)
    data = b"".join(b.data for b in batches) if len(batches) != 1 else batches[0].data
    start = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    head = np.frombuffer(b"".join([data[o:o + HEADER_SIZE] for o in start.tolist()]), dtype=HEADER)
    keep = head["ts_ns"] >= since_ns
    if not keep.all():
        head, start = head[keep], start[keep]
    order = np.lexsort((head["tid"], head["ts_ns"]))
    head, start = head[order], start[order]
    if trim_before_exec_of is not None:
        root = head["pid"] == trim_before_exec_of
        root_exec = np.flatnonzero(root & np.isin(head["nr"], execve_nrs))
        if len(root_exec):
            keep = ~root | (np.arange(len(head)) >= root_exec[0])
            head, start = head[keep], start[keep]
    return Decoded(head, data, start)


def _kind(spec: Spec | None) -> int:
    if spec is None:
        return NO_SPEC
    if spec.role == "close" and spec.fd is not None and spec.path is None and spec.arg_kind is None:
        return CLOSE
    if (spec.role == "open" and spec.path is not None and spec.path2 is None
            and spec.sockaddr is None):
        return OPEN
    if (spec.role is not None or spec.sockaddr is not None or spec.path2 is not None
            or spec.fd2 is not None or spec.path_kind != "path"):
        return GENERAL
    if spec.path is not None:
        return PLAIN_PATH
    if spec.fd is not None:
        return FD_LABEL
    return NO_SPEC  # a spec with only an arg rendering (none today): arg column only


def _escaped(text: str | None) -> str | None:
    """`text` as Arrow can store it (UTF-8): a byte of a name that is not UTF-8 (kept as a
    surrogate escape when decoded) as its \\xNN escape, the way the command lines show it. A
    path, an argument or the working directory naming a file `f\\xff` failed the whole
    recording (UnicodeEncodeError, no trace written)."""
    return None if text is None else escaped_name(text)


def _text_column(values: list[str | None]) -> pa.Array:
    """A string column of names as the traced program gave them (see `_escaped`)."""
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:  # (rare: a name that is not UTF-8)
        return pa.array([_escaped(v) for v in values], pa.string())


def _strings(decoded: Decoded, offset: np.ndarray, length: np.ndarray) -> list[str | None]:
    """Decode each row's NUL-terminated string at HEADER_SIZE + offset in its record (length
    incl. the NUL; 0 = none)."""
    out: list[str | None] = [None] * len(length)
    rows = np.flatnonzero(length)
    data = decoded.data
    starts = (decoded.start[rows] + offset[rows] + HEADER_SIZE).tolist()
    for i, s, k in zip(rows.tolist(), starts, length[rows].tolist(), strict=True):
        out[i] = data[s:s + k].rstrip(b"\x00").decode("utf-8", "surrogateescape")
    return out


def _bytes_at(decoded: Decoded, row: int, offset: int, length: int) -> bytes:
    at = int(decoded.start[row]) + HEADER_SIZE + offset
    return decoded.data[at:at + length]


def _int32_arg(regs: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per row, the int argument in register index[row] (like fdtable.as_int32)."""
    return (_pick(regs, index) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _render_args(head: np.ndarray, specs: dict[int, Spec]) -> list[str | None]:
    """The `arg` column from argument registers, rendered once per distinct value per syscall."""
    n = len(head)
    out: list[str | None] = [None] * n
    nrs = head["nr"]
    for nr, spec in specs.items():
        if spec.arg_kind is None:
            continue
        rows = np.flatnonzero(nrs == nr)
        if not len(rows):
            continue
        regs = head["args"][rows]
        # socket renders args 0 and 1, sockopt 1 and 2 (level, name), wait 0 and its options;
        # the others one register
        cols = ([spec.arg_index, 1] if spec.arg_kind == "socket"
                else [1, 2] if spec.arg_kind == "sockopt"
                else [0, spec.arg_index] if spec.arg_kind in ("wait4", "waitid") else [spec.arg_index])
        values, inverse = np.unique(regs[:, cols], axis=0, return_inverse=True)
        rendered = []
        for row in values.tolist():
            fake = [0] * 6
            for c, v in zip(cols, row, strict=True):
                fake[c] = v
            rendered.append(render_arg(spec, fake))
        inverse = inverse.reshape(-1)
        for r, u in zip(rows.tolist(), inverse.tolist(), strict=True):
            out[r] = rendered[u]
    return out


# Where a write-like call's bytes are worth keeping: stdout/stderr whatever they point to,
# and fds labelled as a tty, a pipe or a local socket (syslog, journald). Regular files are
# not output a user saw; network peers may get secrets.
OUTPUT_FDS = (1, 2)
OUTPUT_LABELS = ("/dev/pts/", "/dev/tty", "/dev/console", PIPE_LABEL, SOCKETPAIR_LABEL, "pipe:[",
                 "socket:[", "unix:")


def output_text(fd: int, label: str | None, raw: bytes, ret: int) -> str | None:
    """The `output` column of a write-like call on fd (labelled `label` by the fd table) that
    tried to write `raw` (the first bytes, as BPF copied them at entry) and returned ret.

    Only the bytes actually written are kept when the call wrote fewer; UTF-8 with
    replacement characters, control characters (newlines, escapes) kept as they are."""
    if fd not in OUTPUT_FDS and (label is None or not label.startswith(OUTPUT_LABELS)):
        return None
    if 0 <= ret < len(raw):
        raw = raw[:ret]
    return raw.decode("utf-8", "replace")


def fd_pair(raw: bytes) -> tuple[int, int] | None:
    """The two fds a pipe/socketpair call wrote (int[2], read by BPF at exit)."""
    if len(raw) < 8:
        return None
    return int.from_bytes(raw[0:4], "little", signed=True), int.from_bytes(raw[4:8], "little", signed=True)


def socket_errors(decoded: Decoded) -> np.ndarray:
    """Per row, the error a socket reported in getsockopt(SOL_SOCKET, SO_ERROR)'s value as a
    negative errno (like `ret`), 0 for every other row and for SO_ERROR 0.

    A non-blocking connect returns EINPROGRESS in good and bad runs alike; whether the peer
    refused is only in that value, which the call returns with ret 0 (strace:
    `getsockopt(3, SOL_SOCKET, SO_ERROR, [ECONNREFUSED], [4]) = 0`). The BPF side copies
    the int for those calls only (SPEC_SOCKERR, 4 bytes where output goes)."""
    head = decoded.head
    out = np.zeros(len(head), np.int64)
    rows = np.flatnonzero(((head["spec"] & SPEC_SOCKERR) != 0) & (head["len3"] == 4) & (head["ret"] == 0))
    if not len(rows):
        return out
    at = (head["len1"][rows].astype(np.int64) + head["len2"][rows]).tolist()
    for i, a in zip(rows.tolist(), at, strict=True):
        value = int.from_bytes(_bytes_at(decoded, i, a, 4), "little", signed=True)
        if 0 < value <= MAX_ERRNO:  # anything else is not an errno: left as a plain success
            out[i] = -value
    return out


def resolve_columns(decoded: Decoded, names: dict[int, str], cwd: str,
                    initial_fds: dict[int, str | None] | None = None,
                    cloexec_fds: frozenset[int] = frozenset()) -> tuple[list, list, list, list]:
    """The (path, path2, arg, output) columns, replaying each process's cwd and fd table in
    entry order."""
    head = decoded.head
    n = len(head)
    nrs = head["nr"]
    present = {int(v): SPECS.get(names.get(int(v), f"syscall_{int(v)}")) for v in np.unique(nrs)}
    specs = {nr: spec for nr, spec in present.items() if spec is not None}
    kind_of = np.zeros(65536, dtype=np.int8)
    fd_reg = np.zeros(65536, dtype=np.int8)      # FD_LABEL/CLOSE: the fd's register
    dirfd_reg = np.full(65536, -1, np.int8)      # PLAIN_PATH/OPEN: the dirfd's, -1 = AT_FDCWD
    flags_reg = np.full(65536, -1, np.int8)      # OPEN: the open flags', -1 = no flags
    writes = np.zeros(65536, dtype=bool)         # write-like: output bytes captured
    for nr, spec in specs.items():
        kind_of[nr] = _kind(spec)
        fd_reg[nr] = spec.fd or 0
        if spec.path is not None and spec.path[1] is not None:
            dirfd_reg[nr] = spec.path[1]
        if spec.arg_index is not None:
            flags_reg[nr] = spec.arg_index
        writes[nr] = spec.output is not None
    kinds = kind_of[nrs]

    len1 = head["len1"].astype(np.int64)
    len2 = head["len2"].astype(np.int64)
    sockaddr = (head["spec"] & SPEC_SOCKADDR) != 0
    str1 = _strings(decoded, np.zeros(n, np.int64), np.where(sockaddr, 0, len1))
    for i in np.flatnonzero(sockaddr & (len1 > 0)).tolist():
        str1[i] = sockaddr_text(_bytes_at(decoded, i, 0, int(len1[i])))
    str2 = _strings(decoded, len1, len2)

    paths: list[str | None] = [None] * n
    paths2: list[str | None] = [None] * n
    args_col = _render_args(head, specs)

    # Plain absolute paths: no state involved.
    replay = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(kinds == PLAIN_PATH).tolist():
        s = str1[i]
        if s is not None and s.startswith("/"):
            paths[i] = clean(s)
        else:
            replay[i] = True  # relative (cwd/dirfd) or unreadable
    replay |= kinds >= FD_LABEL
    # A process's state is created at its first event (a copy of its parent's at that time).
    _, first = np.unique(head["pid"], return_index=True)
    replay[first] = True

    idx = np.flatnonzero(replay)
    sub_nrs = nrs[idx]
    regs = head["args"][idx]
    fds = _int32_arg(regs, fd_reg[sub_nrs]).tolist()
    dirfd_index = dirfd_reg[sub_nrs]
    dirfds = np.where(dirfd_index >= 0, _int32_arg(regs, np.maximum(dirfd_index, 0)), AT_FDCWD).tolist()
    flags_index = flags_reg[sub_nrs]
    opened_cloexec = ((flags_index >= 0)
                      & (_pick(regs, np.maximum(flags_index, 0)) & O_CLOEXEC != 0)).tolist()
    rets = head["ret"][idx].astype(np.int64)
    failed = ((rets < 0) & (rets >= -4095)).tolist()
    rets = rets.tolist()
    pids = head["pid"][idx].tolist()
    ppids = head["ppid"][idx].tolist()
    # who gave an fd out and when its call returned: a close entering meanwhile on another
    # thread freed the file before it (fdtable.ProcessState.close)
    tids = head["tid"][idx].tolist()
    starts = head["ts_ns"][idx].astype(np.int64)
    starts_l = starts.tolist()
    ends = (starts + head["latency_ns"][idx].astype(np.int64)).tolist()

    resolver = PathResolver(cwd, initial_fds, cloexec_fds)
    procs, state, apply, resolve = resolver.procs, resolver.state, resolver.apply, resolver.resolve
    rows = zip(idx.tolist(), kinds[idx].tolist(), pids, ppids, fds, dirfds, strict=True)
    for j, (i, kind, pid, ppid, fd, dirfd) in enumerate(rows):
        st = procs.get(pid)
        if st is None:
            st = state(pid, ppid)
        if kind == FD_LABEL:  # st.fd_path(fd, tid, start), inline: the commonest kind
            entry = st.fds.get(fd)
            given = st.given.get(fd)
            if given is not None and given[0] != tids[j] and given[1] > starts_l[j]:
                entry = given[2]  # another thread's call gave the number out after this one entered
            paths[i] = entry[0] if entry else None
        elif kind == CLOSE:
            entry = st.close(fd, tids[j], starts_l[j])  # Linux releases the fd even on EINTR/EIO
            paths[i] = entry[0] if entry else None
        elif kind == NO_SPEC:
            continue
        elif kind != GENERAL and str1[i] is not None:  # PLAIN_PATH (relative) or OPEN
            path = paths[i] = resolve(st, str1[i], dirfd)
            if kind == OPEN and not failed[j]:
                st.install(rets[j], (path, opened_cloexec[j]), tids[j], ends[j])
        else:  # GENERAL, or no readable path: the full rules
            nr = int(sub_nrs[j])
            spec = specs[nr]
            pair = None
            if spec.fdpair is not None and not failed[j]:
                pair = fd_pair(_bytes_at(decoded, i, int(len1[i] + len2[i]), int(head["len3"][i])))
            paths[i], paths2[i], args_col[i] = apply(
                pid, ppid, names.get(nr, f"syscall_{nr}"), spec, regs[j].tolist(),
                rets[j], failed[j], str1[i], str2[i], pair, tids[j], starts_l[j], ends[j],
            )
    return paths, paths2, args_col, _outputs(decoded, writes[nrs], paths)


def _outputs(decoded: Decoded, write_like: np.ndarray, labels: list[str | None]) -> list[str | None]:
    """The `output` column: for write-like calls with captured bytes, on an output fd."""
    head = decoded.head
    out: list[str | None] = [None] * len(head)
    rows = np.flatnonzero(write_like & (head["len3"] > 0))
    if not len(rows):
        return out
    fds = _int32_arg(head["args"][rows], np.zeros(len(rows), np.int8)).tolist()
    at = (head["len1"][rows].astype(np.int64) + head["len2"][rows]).tolist()
    lens = head["len3"][rows].tolist()
    rets = head["ret"][rows].tolist()
    for i, fd, a, k, ret in zip(rows.tolist(), fds, at, lens, rets, strict=True):
        out[i] = output_text(fd, labels[i], _bytes_at(decoded, i, a, k), ret)
    return out


# Calls whose return value is no status: rt_sigreturn hands back the interrupted context's
# restored register -- the -ENOENT of a stat that a SIGCHLD handler interrupted right after it
# failed (make -j2 reaping its recipes), which named "rt_sigreturn ENOENT" in a good-vs-good diff.
RETURNS_NO_STATUS = frozenset({"rt_sigreturn", "sigreturn"})
# Calls that cannot fail and whose answer steers the program: a set-uid helper's "am I root?"
# (geteuid under a nosuid mount answers the caller's uid: the helper refuses and no call fails).
# Their `arg` says "root" or "not root" -- not the number, which a differ masks as run-to-run noise.
IDENTITY_QUERIES = frozenset({"getuid", "geteuid", "getgid", "getegid"})


def _pick(regs: np.ndarray, index: np.ndarray) -> np.ndarray:
    return regs[np.arange(len(regs)), index]


def build_table(head: np.ndarray, columns: tuple[list, list, list, list], names: dict[int, str],
                trace: dict, failures_only: bool = False,
                sock_errors: np.ndarray | None = None) -> pa.Table:
    """The events table: event columns from the records (columns: resolve_columns' path,
    path2, arg and output), trace columns repeated per row. sock_errors (socket_errors'):
    the errno of a getsockopt(SO_ERROR) whose value is an error, its ret staying 0."""
    paths, paths2, argcol, output = columns
    rets = head["ret"].astype(np.int64)
    identity = [nr for nr, name in names.items() if name in IDENTITY_QUERIES]
    if identity:
        for i in np.flatnonzero(np.isin(head["nr"], identity)).tolist():
            if argcol[i] is None:
                argcol[i] = "root" if rets[i] == 0 else "not root"
    errs = np.where((rets < 0) & (rets >= -4095), rets, 0)
    not_status = [nr for nr, name in names.items() if name in RETURNS_NO_STATUS]
    if not_status:
        errs[np.isin(head["nr"], not_status)] = 0
    if sock_errors is not None:
        errs = np.where(sock_errors != 0, sock_errors, errs)
    if failures_only:
        keep = np.flatnonzero(errs != 0)
        head, rets, errs = head[keep], rets[keep], errs[keep]
        rows = keep.tolist()
        paths, paths2 = [paths[i] for i in rows], [paths2[i] for i in rows]
        argcol, output = [argcol[i] for i in rows], [output[i] for i in rows]
    n = len(head)
    at_enter = (head["flags"] & F_AT_ENTER) != 0

    def dictionary(values: np.ndarray, label) -> pa.DictionaryArray:
        uniq, index = np.unique(values, return_inverse=True)
        return pa.DictionaryArray.from_arrays(
            pa.array(index.reshape(-1).astype(np.int32)),
            pa.array([label(v) for v in uniq.tolist()], pa.string()),
        )

    probe = dictionary(head["nr"], lambda v: names.get(v, f"syscall_{v}"))
    comm = dictionary(head["comm"], lambda c: c.split(b"\x00", 1)[0].decode("utf-8", "replace"))
    errno = dictionary(errs, errno_name)
    latency = pa.array(head["latency_ns"].astype(np.int64), mask=at_enter)

    def constant(value, type_):
        value = _escaped(value) if isinstance(value, str) else value
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], type_))

    def timestamp(dt: datetime):
        ns = int(dt.timestamp() * 1_000_000) * 1000
        return pa.array(np.full(n, ns, np.int64)).cast(pa.timestamp("ns", tz="UTC"))

    meta_items = pa.array([{k: _escaped(v) for k, v in item.items()} for item in metadata_list(trace["metadata"]) or []],
                          METADATA_TYPE.value_type)
    k = len(meta_items)
    metadata = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n * k + 1, k, dtype=np.int32) if k else np.zeros(n + 1, np.int32)),
        meta_items.take(pa.array(np.tile(np.arange(k), n))) if k else meta_items,
    )
    exit_status = trace["exit_status"]
    columns = {
        "trace_id": constant(trace["trace_id"], pa.string()),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "ts_ns": pa.array(head["ts_ns"].astype(np.int64)),
        "pid": pa.array(head["pid"].astype(np.int32)),
        "tid": pa.array(head["tid"].astype(np.int32)),
        "ppid": pa.array(head["ppid"].astype(np.int32)),
        "comm": comm,
        "probe": probe,
        "layer": constant("syscall", pa.string()),
        "depth": pa.array(np.zeros(n, np.int16)),
        "ret": pa.array(rets),
        "errno": errno,
        "latency_ns": latency,
        "path": _text_column(paths),
        "arg": _text_column(argcol),
        "path2": _text_column(paths2),
        "output": pa.array(output, pa.string()),
        "kind": constant(trace["kind"], pa.string()),
        "command": constant(trace["command"], pa.string()),
        "exit_status": (pa.nulls(n, pa.int32()) if exit_status is None
                        else pa.array(np.full(n, exit_status, np.int32))),
        "start_time": timestamp(trace["start_time"]),
        "end_time": timestamp(trace["end_time"]),
        "host": constant(trace["host"], pa.string()),
        "kernel_release": constant(trace["kernel_release"], pa.string()),
        "lost_events": pa.array(np.full(n, trace["lost_events"], np.int64)),
        "job_id": pa.nulls(n, pa.string()) if trace["job_id"] is None else constant(trace["job_id"], pa.string()),
        "metadata": metadata,
    }
    return conform(pa.table(columns), "events")
