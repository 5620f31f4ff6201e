"""NCCL log parsing into the app_failures table, and the ibv_* -> kernel counterpart map."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from baseline.pipeline.nccl import (
    SAMPLE_LINES,
    VERBS,
    classify_failure,
    kernel_counterparts,
    load_app_failures,
    parse_nccl_lines,
)
from tracer.errors import TracebaseError
from tracer.schema import read, write_table

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "rdma_control_path.yaml"


def test_sample_lines_parse_into_app_failures():
    parsed = parse_nccl_lines(SAMPLE_LINES, "nccl.log")
    rows = parsed.failures.select("host", "pid", "tid", "device", "verb", "errno", "source").rows()
    assert rows == [
        ("gpu-a017", 2186421, 2186563, "3", "ibv_modify_qp", "ETIMEDOUT", "nccl.log:2"),
        ("gpu-a017", 2186421, 2186563, "3", "ibv_reg_mr_iova2", "EFAULT", "nccl.log:3"),
        ("gpu-a018", 99121, 99250, "1", "ibv_create_qp", "ENOMEM", "nccl.log:4"),
        ("gpu-a018", 99121, 99250, "1", "ibv_dealloc_pd", "EBUSY", "nccl.log:5"),
        ("gpu-a019", 4410, 4482, "7", "ibv_query_gid", "EINVAL", "nccl.log:6"),
        ("gpu-a019", 4410, 4482, "7", "ibv_reg_dmabuf_mr", "EFAULT", "nccl.log:7"),  # from strerror text
        ("gpu-a021", 5120, 5188, "4", "ibv_post_send", "ENOMEM", "nccl.log:9"),
    ]
    assert parsed.failures["time"].to_list()[-1] == dt.datetime(2026, 11, 25, 3, 14, 7, 512000, tzinfo=dt.UTC)
    assert parsed.problems == [] and parsed.lines == 9 and parsed.ignored == 2  # INFO line, completion error


def test_malformed_lines_are_reported_not_fatal():
    lines = [
        "gpu-a017:2186421:2186563 [3] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110",
        "gpu-a017:2186421 [3] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno 14",  # no tid
        "gpu-a017:1:2 [0] NCCL WARN Call to ibv_reg_mr failed with error Bad address errno fourteen",
        "gpu-a017:1:2 [0] NCCL WARN NET/IB : ibv_ failed",  # truncated verb name
        "2026-13-45T99:00:00Z gpu-a017:1:2 [0] NCCL WARN Call to ibv_alloc_pd failed with error Cannot allocate memory errno 12",
        "\x00\x01 binary junk",
        "python: some unrelated output",
    ]
    parsed = parse_nccl_lines(lines, "job.log")
    assert parsed.failures.height == 1
    assert [(p.source, p.reason) for p in parsed.problems] == [
        ("job.log:2", "NCCL line without a 'host:pid:tid [dev]' prefix"),
        ("job.log:3", "errno field is not a number ('fourteen')"),
        ("job.log:4", "names an ibv_* call but not in 'ibv_X failed ...' form"),
        ("job.log:5", "bad timestamp '2026-13-45T99:00:00Z'"),
    ]
    assert parsed.ignored == 2


def test_load_from_logs_and_parquet(tmp_path):
    log = tmp_path / "nccl-1.log"
    log.write_text("\n".join(SAMPLE_LINES) + "\n")
    parsed = load_app_failures([str(tmp_path / "nccl-*.log")])
    assert parsed.failures.height == 7
    table = write_table(parsed.failures, tmp_path / "app_failures.parquet", "app_failures")
    again = load_app_failures([table, log])
    assert again.failures.height == 14
    assert read(table, "app_failures").equals(parsed.failures)
    with pytest.raises(TracebaseError, match="nope.log: expected an application log or app_failures file, found no such"):
        load_app_failures([tmp_path / "nope.log"])
    # a device (said as such, not "no such"); a binary caught by a wide glob (it matched no line,
    # and the report said nothing of it)
    with pytest.raises(TracebaseError, match="/dev/zero: expected an application log .*, found a character device"):
        load_app_failures(["/dev/zero"])
    (tmp_path / "nccl-tool.log").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    with pytest.raises(TracebaseError, match=r"nccl-tool.log: expected .* \(text\), found binary data"):
        load_app_failures([str(tmp_path / "nccl-*.log")])


def test_verbs_map_to_uverbs_handlers_and_driver_ops():
    counterparts = kernel_counterparts("ibv_reg_mr")
    assert counterparts[:2] == ("ib_uverbs_reg_mr", "ib_uverbs_handler_UVERBS_METHOD_REG_MR")
    assert {"mlx5_ib_reg_user_mr", "bnxt_re_reg_user_mr", "irdma_reg_user_mr"} <= set(counterparts)
    assert kernel_counterparts("ibv_post_send") == ()
    probes = {"ib_uverbs_reg_mr", "mlx5_ib_create_qp"}
    assert classify_failure("ibv_reg_mr_iova2", probes) == "probed"
    assert classify_failure("ibv_create_qp", probes) == "probed"  # via the driver op
    assert classify_failure("ibv_dealloc_pd", probes) == "cleanup"
    assert classify_failure("ibv_query_gid", probes) == "read-only"
    assert classify_failure("ibv_modify_qp", probes) == "not probed"
    assert classify_failure("ibv_post_send", probes) == "not mapped"


def test_verb_map_agrees_with_the_reference():
    if not REFERENCE.is_file():
        pytest.skip(f"reference file {REFERENCE} not present")
    import yaml

    ref = yaml.safe_load(REFERENCE.read_text())
    text = REFERENCE.read_text()
    for mapping in VERBS.values():
        op = ref["operations"].get(mapping.operation)
        if op is not None:  # destroy_cq is not in the reference
            assert op["op_class"] == mapping.op_class, mapping.verb
            for handler in mapping.handlers:
                assert handler in text, handler
