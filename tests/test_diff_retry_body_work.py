"""Work on a file a thread did while it waited out a retry is the thread's work, not the loop's.

curl loads its CA file lazily, between sending its ClientHello and reading the server's answer
(the blind thirty-eighth set's t38_python_https_server_random_port_curl, and its fault cases of
curl --cacert). Where the answer was late, the first recvfrom failed EAGAIN, curl loaded the CA
file, polled and read the answer: a retry chain, whose rows from the failed attempt to the
success `_retried` dropped from the streams as the loop's -- the CA file's open, stat, reads and
close with them. Where the answer was there at once, no chain: the same load stayed in the
stream, and was new to the good runs' (it named 'openat ca.pem' good vs good). A retry loop's
rows that work on a file at a call site other than the loop's own stay in the streams
(`_work_on_files`).

Kept as recorded here (tests/recordings/curl_ca_load_in_wait: two runs whose answer was late,
one whose answer was ready); the set runs live in tests/test_real_programs_thirtyeighth.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "curl_ca_load_in_wait"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
READY = RECORDED / "answer_ready.parquet"


def _first_answer_read(file: Path) -> dict:
    events = pl.read_parquet(file)
    curl = events.filter(pl.col("comm") == "curl")
    sent = curl.filter(pl.col("probe") == "sendto")["seq"].min()
    return curl.filter((pl.col("probe") == "recvfrom") & (pl.col("seq") > sent)).row(0, named=True)


def _ca_loaded_before_answer(file: Path) -> bool:
    events = pl.read_parquet(file)
    answer = events.filter((pl.col("comm") == "curl") & (pl.col("probe") == "recvfrom") & pl.col("errno").is_null()
                           & (pl.col("seq") > _first_answer_read(file)["seq"] - 1))["seq"].min()
    loads = events.filter((pl.col("probe") == "openat") & pl.col("path").str.ends_with("/pki/ca.pem"))
    return bool((loads["seq"] < answer).any())


def test_the_premise_the_answer_was_late_in_the_good_runs_and_ready_in_the_third():
    for good in GOODS:
        assert _first_answer_read(good)["errno"] == "EAGAIN" and _ca_loaded_before_answer(good)
    first = _first_answer_read(READY)
    assert first["errno"] is None and first["ret"] > 0 and not _ca_loaded_before_answer(READY)


def test_the_ca_load_after_a_ready_answer_is_quiet():
    report = diff_traces(good=GOODS, bad=READY)
    assert not report.anomaly, report.render_text()


def test_a_file_the_good_runs_never_loaded_is_named(tmp_path):
    """The same run loading another CA file (a path no good run opened) where the good runs
    loaded theirs inside the wait: curl's divergence there is named (the answer's read that
    opens it), the load in it."""
    events = pl.read_parquet(READY)
    other = pl.col("path").str.ends_with("/pki/ca.pem")
    events = events.with_columns(pl.when(other).then(pl.col("path").str.replace("/pki/ca.pem", "/pki/old-ca.pem"))
                                 .otherwise(pl.col("path")).alias("path"))
    report = diff_traces(good=GOODS, bad=write_table(events, tmp_path / "old-ca.pem.parquet", "events"))
    assert report.anomaly and report.bifurcation["process"]["comm"] == "curl", report.render_text()
    assert "old-ca.pem" in report.render_text()
