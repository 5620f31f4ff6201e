"""The same failed call met again in one thread is one failure: the first names it.

c_rehash on a read-only certs volume (the blind thirty-eighth set's t38_c_rehash_certs_readonly)
links each certificate twice: its subject hash (57904111.0), then its old md5 hash (b3b18db6.0).
Both symlinks fail EROFS; c_rehash goes on after the first and gives up after the second, so the
second scored the give-up (not recovered) and was named. Regions named by the same call (probe,
errno) in one thread, on paths of one directory, take the group's highest score, and the first
ranks first (`_first_of_repeats`).

Kept as recorded here (tests/recordings/c_rehash_readonly: two good runs and the bad run).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from baseline.run.diff import diff_traces
from tracer.schema import write_table

RECORDED = Path(__file__).resolve().parent / "recordings" / "c_rehash_readonly"
GOODS = [RECORDED / "good0.parquet", RECORDED / "good1.parquet"]
BAD = RECORDED / "bad.parquet"


def test_the_premise_both_links_failed_the_first_went_on():
    failed = pl.read_parquet(BAD).filter((pl.col("probe") == "symlink") & (pl.col("errno") == "EROFS"))
    assert [p.rsplit("/", 1)[1] for p in failed.sort("seq")["path"]] == ["57904111.0", "b3b18db6.0"]


def test_the_first_of_the_repeated_failures_is_named():
    report = diff_traces(good=GOODS, bad=BAD)
    top = report.bifurcation
    assert (top["probe"], top["errno"]) == ("symlink", "EROFS") and top["path"].endswith("/certs/57904111.0")


def test_another_failure_after_it_is_another(tmp_path):
    """The second link failing with another errno (EACCES: not the volume again): not the same
    failure met again -- the one after which c_rehash gave up is named first, as before."""
    events = pl.read_parquet(BAD)
    second = (pl.col("probe") == "symlink") & pl.col("path").str.ends_with("/b3b18db6.0")
    events = events.with_columns(pl.when(second).then(pl.lit("EACCES")).otherwise(pl.col("errno")).alias("errno"),
                                 pl.when(second).then(pl.lit(-13, pl.Int64)).otherwise(pl.col("ret")).alias("ret"))
    report = diff_traces(good=GOODS, bad=write_table(events, tmp_path / "eacces.parquet", "events"))
    top = report.bifurcation
    assert (top["errno"], top["path"].rsplit("/", 1)[1]) == ("EACCES", "b3b18db6.0"), report.render_text()


SQLITE = Path(__file__).resolve().parent / "recordings" / "sqlite_rw_fallback"


def test_a_failure_handled_at_once_is_no_first_of_repeats():
    """sqlite in a database directory it may not write (tests/scenarios/real_sixth.py's
    sqlite_wal_dir_not_writable): the read-write open of jobs.db fails EACCES and sqlite opens
    it read-only at once; the WAL's create in the same directory then fails EACCES and the job
    stops. The same call and errno in one directory, but the first was dealt with: the WAL's
    is named (recorded: tests/recordings/sqlite_rw_fallback)."""
    events = pl.read_parquet(SQLITE / "bad.parquet")
    failed = events.filter((pl.col("probe") == "openat") & (pl.col("errno") == "EACCES")).sort("seq")
    assert [p.rsplit("/", 1)[1] for p in failed["path"]] == ["jobs.db", "jobs.db-wal"]
    report = diff_traces(good=[SQLITE / "good0.parquet", SQLITE / "good1.parquet"], bad=SQLITE / "bad.parquet")
    top = report.bifurcation
    assert (top["probe"], top["errno"]) == ("openat", "EACCES") and top["path"].endswith("/db/jobs.db-wal")


LZ4 = Path(__file__).resolve().parent / "recordings" / "lz4_readonly_new_host"


def test_the_first_of_a_cascade_in_one_region_is_named():
    """lz4 -q -d -m segments/*.lz4 into a read-only directory (the blind forty-ninth set's
    t49_lz4_segments_read_only): the first segment is a host's the good runs never had
    (api-ams-9), its output's create fails EROFS, then so does each next one's -- the ones the
    good runs created. All in one region: the later ones change an outcome the good runs had,
    the first does not, and the later one was named. The first of the cascade (the same call
    and errno in the same directory, earlier in the region) is named, carrying the outcome
    change (`_first_of_cascade`; recorded: tests/recordings/lz4_readonly_new_host)."""
    failed = pl.read_parquet(LZ4 / "bad.parquet").filter(pl.col("errno") == "EROFS").sort("seq")
    names = [p.rsplit("/", 1)[1] for p in failed["path"]]
    assert names[0].startswith("api-ams-9-") and len(names) == 4  # the premise: the new host's first
    goods = pl.concat([pl.read_parquet(LZ4 / f"good{i}.parquet") for i in (0, 1)])
    assert not goods.filter(pl.col("path").str.contains("api-ams-9")).height  # ... a name no good run had
    report = diff_traces(good=[LZ4 / "good0.parquet", LZ4 / "good1.parquet"], bad=LZ4 / "bad.parquet")
    top = report.bifurcation
    assert (top["probe"], top["errno"], top["path"].rsplit("/", 1)[1]) == ("openat", "EROFS", names[0])
    assert report.anomaly_count == 1 and top["then_wrote"].startswith(failed["path"][0])


def test_a_soft_miss_before_the_outcome_change_names_nothing(tmp_path):
    """The same cascade with ENOENT (a lookup's miss, often a probe for an optional name before
    the one that matters): the first-of-cascade rule is for hard errors only, so the outcome
    change (a segment the good runs created) stays named."""
    events = pl.read_parquet(LZ4 / "bad.parquet")
    erofs = pl.col("errno") == "EROFS"
    events = events.with_columns(pl.when(erofs).then(pl.lit("ENOENT")).otherwise(pl.col("errno")).alias("errno"),
                                 pl.when(erofs).then(pl.lit(-2, pl.Int64)).otherwise(pl.col("ret")).alias("ret"))
    report = diff_traces(good=[LZ4 / "good0.parquet", LZ4 / "good1.parquet"],
                         bad=write_table(events, tmp_path / "enoent.parquet", "events"))
    top = report.bifurcation
    assert top["errno"] == "ENOENT" and "api-ams-9" not in top["path"], report.render_text()
