"""Listing a dataset's files: each directory read once, the same files as pathlib's rglob.

A fleet-day is ~10,000 host directories per table; pathlib's rglob (Python 3.11) lists every
directory twice, and the audit lists the events and counters tables, so the listing was ~40,000
directory reads where ~20,000 give the same files. The reference here is rglob itself, on a
dataset the simulator writes and on a tree with the awkward entries a hand-kept or half-written
dataset has (dot names, nested directories, symlinks, a directory with a Parquet name)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_harness import one_line_error, run_shell

from baseline.simulator.simulate import simulate
from tracer import inputs
from tracer.errors import TracebaseError
from tracer.schema import dataset_files


def _rglob_reference(date_dir: Path) -> list[Path]:
    """What table_partition_files took of one date directory before: rglob, dot names dropped."""
    return sorted(f for f in date_dir.rglob("*.parquet") if not f.name.startswith("."))


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    listed: list[str] = []
    real = os.scandir

    def counting(path: str | os.PathLike[str] = ".") -> os.ScandirIterator:  # type: ignore[name-defined]
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(inputs.os, "scandir", counting)
    return listed


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listing")
    simulate(root, hosts=4, hours=1, seed=11, start="2026-11-28T00:00:00Z")
    return root


@pytest.mark.parametrize("table", ["events", "counters"])
def test_simulated_dataset_lists_each_directory_once(simulated: Path, table: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    date_dirs = sorted((simulated / table).glob("date=*"))
    expected = [f for d in date_dirs for f in _rglob_reference(d)]
    directories = [p for d in date_dirs for p in [d, *d.rglob("*")] if p.is_dir()]
    listed = _count_listings(monkeypatch)
    files = dataset_files(simulated, table)
    assert files == expected and len(files) >= 4, (files, expected)
    # one read per directory (the table's own, for its date directories, included), none twice
    assert sorted(listed) == sorted(map(str, [simulated / table, *directories])), listed


def test_awkward_tree_lists_what_rglob_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    date = tmp_path / "events" / "date=2026-11-28"
    (date / "host=a").mkdir(parents=True)
    (date / "host=a" / "part-0.parquet").write_bytes(b"x")
    (date / "host=a" / ".part-1.parquet.tmp").write_bytes(b"x")  # a write in progress
    (date / "host=a" / ".hidden.parquet").write_bytes(b"x")  # dot name: skipped
    (date / "host=a" / "notes.txt").write_bytes(b"x")
    (date / "host=a" / "UPPER.PARQUET").write_bytes(b"x")  # case-sensitive, as rglob
    (date / "host=b" / "sub" / "deeper").mkdir(parents=True)  # files at any depth
    (date / "host=b" / "sub" / "deeper" / "part-2.parquet").write_bytes(b"x")
    (date / "host=b" / "sub" / "part-3.parquet").write_bytes(b"x")
    (date / "host=c.parquet").mkdir()  # a directory with a Parquet name: rglob lists it too
    (date / "host=c.parquet" / "part-4.parquet").write_bytes(b"x")
    (date / ".staging" / "host=d").mkdir(parents=True)  # a dot directory's files: rglob lists them, readers do not
    (date / ".staging" / "host=d" / "part-5.parquet").write_bytes(b"x")
    decoy = tmp_path / "decoy"  # a symlinked directory: not descended into by rglob, by a dataset's listing yes
    decoy.mkdir()
    (decoy / "part-6.parquet").write_bytes(b"x")
    (date / "host=e").symlink_to(decoy, target_is_directory=True)
    (date / "host=a" / "dangling.parquet").symlink_to(tmp_path / "missing")  # named, as rglob names it
    (tmp_path / "events" / "date=2026-11-27" / "host=a").mkdir(parents=True)
    (tmp_path / "events" / "date=2026-11-27" / "host=a" / "part-7.parquet").write_bytes(b"x")

    found = [f for d in sorted((tmp_path / "events").glob("date=*")) for f in _rglob_reference(d)]
    assert {f.name for f in found} >= {"part-0.parquet", "part-2.parquet", "part-5.parquet", "part-7.parquet",
                                        "host=c.parquet", "dangling.parquet"}
    # (a compaction's staging partition, date=D/.host=H.<pid>-<hex>.tmp/host=H, is such a directory)
    expected = sorted([f for f in found if ".staging" not in f.parts and "2026-11-27" not in str(f)]
                      + [date / "host=e" / "part-6.parquet"])
    expected = [f for f in found if "2026-11-27" in str(f)] + expected
    listed = _count_listings(monkeypatch)
    assert dataset_files(tmp_path, "events") == expected
    assert len(listed) == len(set(listed)), listed  # each directory once
    # since: the earlier date's directory is not read at all
    listed.clear()
    since = dataset_files(tmp_path, "events", since="2026-11-28")
    assert since == sorted([f for f in _rglob_reference(date) if ".staging" not in f.parts]
                           + [date / "host=e" / "part-6.parquet"]) and not any("2026-11-27" in p for p in listed), listed
    # a directory of traces (parquet_files_under): dot directories are skipped there
    under = inputs.parquet_files_under(tmp_path / "events")
    assert under == sorted(f for f in (tmp_path / "events").rglob("*.parquet")
                           if not any(part.startswith(".") for part in f.relative_to(tmp_path / "events").parts))
    assert "part-5.parquet" not in {f.name for f in under} and "part-0.parquet" in {f.name for f in under}


def _copy(simulated: Path, dst: Path) -> tuple[Path, Path, Path]:
    """A copy of the simulated dataset and the events partitions of its first two hosts."""
    import shutil

    shutil.copytree(simulated, dst)
    first, second = sorted((dst / "events").glob("date=*/host=*"))[:2]
    return dst, first, second


@pytest.mark.parametrize("link", ["symlink", "hardlink", "same-partition"])
def test_a_second_name_of_a_file_is_refused(simulated: Path, tmp_path: Path, link: str) -> None:
    """A link in host B's partition to host A's file read A's records a second time as B's (the
    host comes from the directory): 285 traces became 312, exit 0. Two names of one file in a
    table are refused by every reader of the dataset, naming both."""
    root, first, second = _copy(simulated, tmp_path / "ds")
    target = first / sorted(p.name for p in first.glob("*.parquet"))[0]
    name = (first if link == "same-partition" else second) / "part-99999.parquet"
    if link == "hardlink":
        os.link(target, name)
    else:
        name.symlink_to(os.path.relpath(target, name.parent))
    with pytest.raises(TracebaseError) as err:
        dataset_files(root, "events")
    assert str(err.value).startswith(f"{name}: expected a file of its own, found another name of {target}")
    for command in ("audit ds -o out", "learn ds -o model.parquet", "export ds -o out.jsonl"):
        proc = run_shell(f"baseline {command}", cwd=tmp_path)
        assert f"{name.relative_to(tmp_path)}: expected a file of its own" in one_line_error(proc), command


def test_files_linked_from_elsewhere_and_copies_are_read(simulated: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A dataset assembled from symlinks to files kept elsewhere (one name each in the table) is
    read as the files themselves; a copy is data (a second delivery), not a second name; and in
    the usual case the check costs no system call (the listing's inode numbers)."""
    import shutil

    store = tmp_path / "store"
    linked = tmp_path / "linked"
    shutil.copytree(simulated, store)
    for f in dataset_files(store, "events"):
        dst = linked / f.relative_to(store)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(f)
    assert [f.relative_to(linked) for f in dataset_files(linked, "events")] == [
        f.relative_to(store) for f in dataset_files(store, "events")]
    root, first, second = _copy(simulated, tmp_path / "copied")
    shutil.copyfile(next(first.glob("*.parquet")), second / "part-99999.parquet")
    assert second / "part-99999.parquet" in dataset_files(root, "events")
    stats: list[str] = []
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: stats.append(os.fspath(p)) or real(p, *a, **k))
    assert len(dataset_files(simulated, "events")) >= 4
    assert not [p for p in stats if p.endswith(".parquet")], stats  # (the table directory's own is_dir only)


def test_a_dataset_root_reads_as_its_table(simulated: Path, tmp_path: Path) -> None:
    """`baseline export DS` (and any reader of one table given a dataset root) reads DS's events
    table, as `baseline export DS/events` does, where it read every table's files and refused
    the first counters file ("expected a tracebase 'events' table, found table 'counter_buckets'")."""
    from tracer.schema import scan

    assert scan(simulated, "events").collect().equals(scan(simulated / "events", "events").collect())
    outs = []
    for given in (simulated, simulated / "events"):
        proc = run_shell(f"baseline export {given} -o x.json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outs.append((tmp_path / "x.json").read_text())
    assert outs[0] == outs[1] and '"ph"' in outs[0]


def test_a_partition_linked_in_from_elsewhere_is_read(simulated: Path, tmp_path: Path) -> None:
    """A host partition kept on another volume and symlinked into the dataset is read (it was
    skipped: that host's findings, alerts and coverage missing with exit 0); a link back to a
    directory the walk is in is not walked round; two links to one directory are refused."""
    root, first, _ = _copy(simulated, tmp_path / "ds")
    want = [f.relative_to(root) for f in dataset_files(root, "events")]
    elsewhere = tmp_path / "volume2" / first.name
    elsewhere.parent.mkdir()
    first.rename(elsewhere)
    first.symlink_to(elsewhere, target_is_directory=True)
    assert [f.relative_to(root) for f in dataset_files(root, "events")] == want
    (elsewhere / "loop").symlink_to(first.parent, target_is_directory=True)  # .../date=D/host=H/loop -> date=D
    assert [f.relative_to(root) for f in dataset_files(root, "events")] == want
    twin = first.parent / "host=gpu09999"
    twin.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(TracebaseError, match="a link to the directory"):
        dataset_files(root, "events")
