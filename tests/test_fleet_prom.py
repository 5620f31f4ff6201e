"""The Prometheus textfile as node_exporter and Prometheus read it: prometheus_client's own
parser finds grouped, typed families (0 of type unknown), the last-snapshot gauge, and every
sample under the family its HELP/TYPE announce."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tracer.fleet.prom import ProbeSample, SetSample, prometheus_text

PROBES = [
    ProbeSample("rdma", "ib_uverbs_reg_mr", "uverbs", 120, 7, {"EFAULT": 5, "ENOMEM": 2}, True),
    ProbeSample("rdma", "mlx5_ib_reg_user_mr", "driver", 118, 7, {"EFAULT": 5, "ENOMEM": 2}, True),
    ProbeSample("rdma", "bnxt_re_create_qp", "driver", 0, 0, {}, False),
    ProbeSample("syscalls", "openat", "syscall", 10_000_000, 12_345, {"ENOENT": 12_340, "EACCES": 5}, True),
]
SETS = [SetSample("rdma", 3, 17), SetSample("syscalls", 0)]


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_families_are_grouped_and_typed():
    text = prometheus_text("gpu-node-01.c1", PROBES, SETS, snapshots=42, last_snapshot_s=1_796_000_000.25)
    fams = families(text)
    assert {n: f.type for n, f in fams.items()} == {
        "tracebase_probe_invocations": "counter",
        "tracebase_probe_failures": "counter",
        "tracebase_probe_errno": "counter",
        "tracebase_probe_live": "gauge",
        "tracebase_lost_records": "counter",
        "tracebase_slot_collisions": "counter",
        "tracebase_snapshots": "counter",
        "tracebase_last_snapshot_timestamp_seconds": "gauge",
        "tracebase_held_snapshots": "gauge",
    }
    # each family's samples are contiguous: one HELP and one TYPE line per family
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(names) == len(set(names)) == 9
    openat = {s.labels["errno"]: s.value for s in fams["tracebase_probe_errno"].samples
              if s.labels["probe"] == "openat" and s.name.endswith("_total")}
    assert openat == {"ENOENT": 12_340, "EACCES": 5}
    live = {s.labels["probe"]: s.value for s in fams["tracebase_probe_live"].samples}
    assert live == {"ib_uverbs_reg_mr": 1, "mlx5_ib_reg_user_mr": 1, "bnxt_re_create_qp": 0, "openat": 1}
    inv = {s.labels["probe"]: s.value for s in fams["tracebase_probe_invocations"].samples if s.name.endswith("_total")}
    assert inv["openat"] == 10_000_000
    (last,) = fams["tracebase_last_snapshot_timestamp_seconds"].samples
    assert last.labels == {"host": "gpu-node-01.c1"} and last.value == 1_796_000_000.25
    lost = {s.labels["set"]: s.value for s in fams["tracebase_lost_records"].samples if s.name.endswith("_total")}
    assert lost == {"rdma": 3, "syscalls": 0}
    collided = {s.labels["set"]: s.value for s in fams["tracebase_slot_collisions"].samples if s.name.endswith("_total")}
    assert collided == {"rdma": 17, "syscalls": 0}


def test_no_probes_still_reports_liveness_of_the_tracer():
    fams = families(prometheus_text("h", [], [], snapshots=0, last_snapshot_s=0.0))
    assert all(f.type != "unknown" for f in fams.values())
    assert [s.value for s in fams["tracebase_last_snapshot_timestamp_seconds"].samples] == [0.0]


def test_no_snapshot_yet_has_no_timestamp_sample_and_held_snapshots_show():
    """Before the first snapshot reaches the spool there is no timestamp (0 would read as 1970,
    and a staleness alert would fire for the wrong reason); held intervals are a gauge."""
    fams = families(prometheus_text("h", [], [], snapshots=0, last_snapshot_s=None, held_snapshots=3))
    assert fams["tracebase_last_snapshot_timestamp_seconds"].samples == []
    assert [s.value for s in fams["tracebase_held_snapshots"].samples] == [3.0]


def test_odd_label_values_round_trip_and_series_are_unique():
    """A probe-set name is free text from its YAML (quotes, backslashes, a newline, non-ASCII):
    the exposition escapes it, the parser gives it back, and no two samples share a series."""
    odd = 'team "a"\\b\nc-é'
    text = prometheus_text("h", [ProbeSample(odd, "openat", "syscall", 3, 1, {"ENOENT": 1}, True)],
                           [SetSample(odd, 0)], snapshots=1, last_snapshot_s=1.0)
    assert all(line.startswith(("#", "tracebase_")) for line in text.splitlines() if line)  # no line broken
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert {s.labels["set"] for s in samples if "set" in s.labels} == {odd}
    series = [(s.name, tuple(sorted(s.labels.items()))) for s in samples]
    assert len(series) == len(set(series))
