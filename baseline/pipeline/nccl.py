"""Application-labelled failures: the input format, an NCCL log parser, and the verb map.

Input format (table ``app_failures`` in tracer/schema.py; Parquet, or parsed from logs):
one row per failing verbs call seen by the application — time (UTC, may be null), host, pid,
tid, device, job_id, verb (``ibv_reg_mr``), errno (symbolic, may be null), message, source
(``file:line``). Any producer can write that table; NCCL logs are parsed here.

NCCL log lines look like (``NCCL_DEBUG=WARN``, optionally prefixed with an ISO timestamp by the
log collector)::

    gpu-a017:2186421:2186563 [3] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110

The verb map sends each ibv_* call to its kernel counterparts (uverbs handler for each ABI and
the driver op slot) with the operation class from the RDMA control-path reference
(classification_heuristics: create_update | read_only | cleanup). Verbs with no system call
(data path: post_send, poll_cq, ...) or not in the reference are "not mapped".
"""

from __future__ import annotations

import datetime as dt
import errno as _errno
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from baseline.pipeline.coverage_inputs import (  # light: the CLI checks the paths first
    expand_paths,
    unmatched_globs,
)
from tracer.errnos import errno_name
from tracer.errors import TracebaseError
from tracer.schema import polars_schema, read


@dataclass(frozen=True)
class VerbMapping:
    verb: str
    operation: str
    op_class: str  # create_update | read_only | cleanup
    handlers: tuple[str, ...]  # uverbs handlers, one per ABI (write, write_ex, ioctl)
    driver_slot: str | None  # ib_device_ops slot; vendor functions via DRIVER_OPS

    @property
    def category_if_unprobed(self) -> str:
        return {"cleanup": "cleanup", "read_only": "read-only"}.get(self.op_class, "not probed")


# ib_device_ops slot -> the vendor implementations (reference: vendor_equivalents.ops).
DRIVER_OPS: dict[str, dict[str, str]] = {
    "alloc_pd": {"mlx5": "mlx5_ib_alloc_pd", "bnxt_re": "bnxt_re_alloc_pd", "irdma": "irdma_alloc_pd"},
    "dealloc_pd": {"mlx5": "mlx5_ib_dealloc_pd", "bnxt_re": "bnxt_re_dealloc_pd", "irdma": "irdma_dealloc_pd"},
    "create_cq": {"mlx5": "mlx5_ib_create_cq", "bnxt_re": "bnxt_re_create_cq", "irdma": "irdma_create_cq"},
    "destroy_cq": {"mlx5": "mlx5_ib_destroy_cq", "bnxt_re": "bnxt_re_destroy_cq", "irdma": "irdma_destroy_cq"},
    "create_qp": {"mlx5": "mlx5_ib_create_qp", "bnxt_re": "bnxt_re_create_qp", "irdma": "irdma_create_qp"},
    "modify_qp": {"mlx5": "mlx5_ib_modify_qp", "bnxt_re": "bnxt_re_modify_qp", "irdma": "irdma_modify_qp_roce"},
    "destroy_qp": {"mlx5": "mlx5_ib_destroy_qp", "bnxt_re": "bnxt_re_destroy_qp", "irdma": "irdma_destroy_qp"},
    "reg_user_mr": {"mlx5": "mlx5_ib_reg_user_mr", "bnxt_re": "bnxt_re_reg_user_mr", "irdma": "irdma_reg_user_mr"},
    "reg_user_mr_dmabuf": {
        "mlx5": "mlx5_ib_reg_user_mr_dmabuf",
        "bnxt_re": "bnxt_re_reg_user_mr_dmabuf",
        "irdma": "irdma_reg_user_mr_dmabuf",
    },
    "dereg_mr": {"mlx5": "mlx5_ib_dereg_mr", "bnxt_re": "bnxt_re_dereg_mr", "irdma": "irdma_dereg_mr"},
    "query_device": {"mlx5": "mlx5_ib_query_device", "bnxt_re": "bnxt_re_query_device", "irdma": "irdma_query_device"},
    "query_port": {"mlx5": "mlx5_ib_query_port", "bnxt_re": "bnxt_re_query_port", "irdma": "irdma_query_port"},
    "query_gid": {"mlx5": "mlx5_ib_query_gid", "irdma": "irdma_query_gid"},
}


def _m(verbs: Iterable[str], operation: str, op_class: str, handlers: Iterable[str], slot: str | None) -> dict:
    return {v: VerbMapping(v, operation, op_class, tuple(handlers), slot) for v in verbs}


# From rdma_control_path.yaml operations.*: entry handlers and op_class. destroy_cq's handler
# is not in the reference (ib_uverbs_destroy_cq by the same naming; marked so in the report).
VERBS: dict[str, VerbMapping] = {
    **_m(["ibv_alloc_pd"], "alloc_pd", "create_update", ["ib_uverbs_alloc_pd"], "alloc_pd"),
    **_m(["ibv_dealloc_pd"], "dealloc_pd", "cleanup", ["ib_uverbs_dealloc_pd"], "dealloc_pd"),
    **_m(
        ["ibv_create_cq", "ibv_create_cq_ex"],
        "create_cq",
        "create_update",
        ["ib_uverbs_create_cq", "ib_uverbs_ex_create_cq", "ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE"],
        "create_cq",
    ),
    **_m(["ibv_destroy_cq"], "destroy_cq", "cleanup", ["ib_uverbs_destroy_cq"], "destroy_cq"),
    **_m(
        ["ibv_create_qp", "ibv_create_qp_ex"],
        "create_qp",
        "create_update",
        ["ib_uverbs_create_qp", "ib_uverbs_ex_create_qp", "ib_uverbs_handler_UVERBS_METHOD_QP_CREATE"],
        "create_qp",
    ),
    **_m(["ibv_modify_qp"], "modify_qp", "create_update", ["ib_uverbs_modify_qp", "ib_uverbs_ex_modify_qp"], "modify_qp"),
    **_m(["ibv_destroy_qp"], "destroy_qp", "cleanup", ["ib_uverbs_destroy_qp"], "destroy_qp"),
    **_m(
        ["ibv_reg_mr", "ibv_reg_mr_iova", "ibv_reg_mr_iova2"],
        "reg_mr",
        "create_update",
        ["ib_uverbs_reg_mr", "ib_uverbs_handler_UVERBS_METHOD_REG_MR"],
        "reg_user_mr",
    ),
    **_m(
        ["ibv_reg_dmabuf_mr"],
        "reg_dmabuf_mr",
        "create_update",
        ["ib_uverbs_handler_UVERBS_METHOD_REG_DMABUF_MR"],
        "reg_user_mr_dmabuf",
    ),
    **_m(["ibv_dereg_mr"], "dereg_mr", "cleanup", ["ib_uverbs_dereg_mr"], "dereg_mr"),
    **_m(
        ["ibv_query_device", "ibv_query_device_ex"],
        "query_device",
        "read_only",
        ["ib_uverbs_query_device", "ib_uverbs_ex_query_device"],
        "query_device",
    ),
    **_m(
        ["ibv_query_port"],
        "query_port",
        "read_only",
        ["ib_uverbs_query_port", "ib_uverbs_handler_UVERBS_METHOD_QUERY_PORT"],
        "query_port",
    ),
    **_m(
        ["ibv_query_gid", "ibv_query_gid_ex"],
        "query_gid",
        "read_only",
        ["ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY"],
        "query_gid",
    ),
}


def verb_mapping(verb: str) -> VerbMapping | None:
    return VERBS.get(verb)


def kernel_counterparts(verb: str) -> tuple[str, ...]:
    """Every kernel function that carries `verb`: its uverbs handlers and all vendor driver ops."""
    mapping = VERBS.get(verb)
    if mapping is None:
        return ()
    driver = tuple(DRIVER_OPS.get(mapping.driver_slot or "", {}).values())
    return mapping.handlers + driver


def classify_failure(verb: str, probes: set[str] | frozenset[str]) -> str:
    """probed | cleanup | read-only | not probed | not mapped (the 73% analysis categories)."""
    mapping = VERBS.get(verb)
    if mapping is None:
        return "not mapped"
    if any(fn in probes for fn in kernel_counterparts(verb)):
        return "probed"
    return mapping.category_if_unprobed


# --------------------------------------------------------------------------------------------
# NCCL log parsing
# --------------------------------------------------------------------------------------------
HEADER_RE = re.compile(
    r"^(?:(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+)?"
    r"(?P<host>[A-Za-z0-9_.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] "
    r"NCCL (?P<level>INFO|WARN|TRACE|ABORT|VERSION|ERROR)\b ?(?P<msg>.*)$"
)
LOOKS_LIKE_NCCL = re.compile(r"\bNCCL (INFO|WARN|TRACE|ABORT|ERROR)\b")
VERB_RE = re.compile(r"\b(ibv_[a-z0-9_]+)\b")
FAILED_RE = re.compile(
    r"\b(?P<verb>ibv_[a-z0-9_]+)(?:\(\))? failed(?: with error| with|:)?\s*(?P<err>.*?)\s*(?:errno (?P<num>-?\S+))?\s*$"
)
STRERROR = {os.strerror(n): name for n, name in _errno.errorcode.items()}

# Realistic NCCL 2.2x output around verbs failures (net_ib.cc / ibvwrap.cc wording).
SAMPLE_LINES = [
    "gpu-a017:2186421:2186421 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.20.1.17<0>",
    "gpu-a017:2186421:2186563 [3] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110",
    "gpu-a017:2186421:2186563 [3] NCCL WARN NET/IB : Unable to register memory addr=0x7f3c40000000 size=1073741824 : ibv_reg_mr_iova2 failed with error Bad address errno 14",
    "gpu-a018:99121:99250 [1] NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory errno 12",
    "gpu-a018:99121:99250 [1] NCCL WARN Call to ibv_dealloc_pd failed with error Device or resource busy errno 16",
    "gpu-a019:4410:4482 [7] NCCL WARN Call to ibv_query_gid failed with error Invalid argument errno 22",
    "gpu-a019:4410:4482 [7] NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Bad address",
    "gpu-a020:7781:7790 [2] NCCL WARN NET/IB : Got completion from peer 10.20.1.18<33411> with status=12 opcode=0 len=0 vendor err 129 (Send) hca mlx5_0",
    "2026-11-25T03:14:07.512Z gpu-a021:5120:5188 [4] NCCL WARN Call to ibv_post_send failed with error Cannot allocate memory errno 12",
]


@dataclass(frozen=True)
class ParseProblem:
    source: str  # file:line
    reason: str
    text: str

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}: {self.text[:120]!r}" if self.text else f"{self.source}: {self.reason}"


@dataclass
class ParsedLog:
    failures: pl.DataFrame  # app_failures table
    problems: list[ParseProblem] = field(default_factory=list)
    lines: int = 0
    ignored: int = 0  # lines that are not NCCL WARN lines about a verbs call


def _errno_from(err_text: str, num: str | None) -> tuple[str | None, str | None]:
    """Symbolic errno from 'errno N' or the strerror text; second value is a problem, if any."""
    if num is not None:
        try:
            value = int(num)
        except ValueError:
            return None, f"errno field is not a number ({num!r})"
        return errno_name(-abs(value)) if value else None, None
    if err_text:
        return STRERROR.get(err_text.strip().rstrip(".")), None
    return None, None


def _parse_time(ts: str | None) -> dt.datetime | None:
    if not ts:
        return None
    parsed = dt.datetime.fromisoformat(ts.replace("Z", "+00:00").replace(" ", "T"))
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


def parse_nccl_lines(
    lines: Iterable[str], source: str = "<lines>", job_id: str | None = None
) -> ParsedLog:
    """Parse NCCL log lines into app_failures rows; malformed lines become ParseProblems."""
    # A log's file name may hold any bytes (undecodable ones arrive as lone surrogates); the
    # `source` column is a UTF-8 string, so such bytes are kept as \xNN text.
    source = source.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    rows: list[dict] = []
    problems: list[ParseProblem] = []
    count = ignored = 0
    for number, raw in enumerate(lines, start=1):
        count += 1
        line = raw.rstrip("\r\n")
        where = f"{source}:{number}"
        m = HEADER_RE.match(line)
        if m is None:
            if LOOKS_LIKE_NCCL.search(line):
                problems.append(ParseProblem(where, "NCCL line without a 'host:pid:tid [dev]' prefix", line))
            else:
                ignored += 1
            continue
        msg = m["msg"]
        if m["level"] not in ("WARN", "ERROR", "ABORT") or "ibv_" not in msg:
            ignored += 1
            continue
        failed = FAILED_RE.search(msg)
        if failed is None:
            # A verb named without 'failed' (e.g. a completion error) is data-path noise, not a call failure.
            if " failed" in msg:
                problems.append(ParseProblem(where, "names an ibv_* call but not in 'ibv_X failed ...' form", line))
            else:
                ignored += 1
            continue
        errno, problem = _errno_from(failed["err"], failed["num"])
        if problem:
            problems.append(ParseProblem(where, problem, line))
            continue
        try:
            time = _parse_time(m["ts"])
        except ValueError:
            problems.append(ParseProblem(where, f"bad timestamp {m['ts']!r}", line))
            continue
        rows.append(
            {
                "time": time,
                "host": m["host"],
                "pid": int(m["pid"]),
                "tid": int(m["tid"]),
                "device": m["dev"],
                "job_id": job_id,
                "verb": failed["verb"],
                "errno": errno,
                "message": msg,
                "source": where,
            }
        )
    frame = pl.DataFrame(rows, schema=polars_schema("app_failures"))
    return ParsedLog(frame, problems, count, ignored)


def load_app_failures(paths: Iterable[str | os.PathLike]) -> ParsedLog:
    """Read app_failures Parquet files and/or NCCL text logs into one ParsedLog."""
    frames: list[pl.DataFrame] = []
    problems: list[ParseProblem] = []
    lines = ignored = 0
    paths = list(paths)
    problems.extend(ParseProblem(p, "a glob that matched no file (no application failures read from it)", "")
                    for p in unmatched_globs(paths))
    for path in expand_paths(paths):
        if path.suffix == ".parquet":
            frames.append(read(path, "app_failures"))
            continue
        try:
            with path.open(encoding="utf-8", errors="replace") as fh:
                parsed = parse_nccl_lines(fh, str(path))
        except OSError as exc:
            raise TracebaseError(f"{path}: cannot read ({exc.strerror})") from None
        frames.append(parsed.failures)
        problems.extend(parsed.problems)
        lines += parsed.lines
        ignored += parsed.ignored
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=polars_schema("app_failures"))
    return ParsedLog(frame, problems, lines, ignored)
