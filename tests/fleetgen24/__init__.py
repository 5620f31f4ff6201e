"""fleetgen24: a twenty-fourth fleet generator, written blind from reference/rdma_control_path.yaml,
tracer/schema.py, README.md, docs/architecture.md and the other generators' docstrings only (see
generator.py for the fleet, the writer's choices and the decisions behind its truth).

What it adds to the twenty-three before it: a dataset written by ANOTHER team's collector
("hermes"), following tracer/schema.py and docs/architecture.md to the letter but taking every
choice they leave open its own way: only the columns a reader needs (comm, ppid, job_id,
metadata, path, lost_events all null; path2, output, repeat_count and the host column absent),
sparse counters (no row for an idle probe; vendor, layer, live, interval_s null), several part
files per partition of other sizes, row groups, codecs, string encodings, timestamp zones, column
orders and extra columns of its own, empty uploads, rows not in time order (frames interleaved on
four hosts), snapshots delivered twice, a host whose counters stop for an hour across
midnight. The fleet: mlx5 RoCE hosts on a RHEL 9.5 kernel, KV-cache servers restarted by a
supervisor; two routine refusals (ex_query_device EINVAL, create_cq comp_vector EINVAL) and three
root causes (a host out of mkeys, a host whose firmware commands time out now and then, a rack
whose RoCE GID entry vanished: ENODATA, an errno callers usually go on from, here fatal).
"""

from .generator import ROOT_CAUSES, ROUTINE, generate

__all__ = ["ROOT_CAUSES", "ROUTINE", "generate"]
