"""Round thirty: a blind battery of what an SRE really hands the analysis CLIs, every case run
as a real `baseline`/`tracer` process (no mocks): corrupt and odd inputs reached through other
subcommands than `diff` (a model cut mid-file, a findings file with its footer zeroed, a truth
file gzip'd, a part file that is a FIFO or a directory, a column of another type, a column
missing, /dev/null, a symlink loop, a non-UTF-8 name with a newline), YAML lists that are
malformed in new ways (a duplicate id, a billion laughs, a sparse 300 MiB file, a broken list
to merge into), OS faults made for real (a read-only bind mount, a 64 KiB tmpfs filled up, a
bind-mounted file, a sticky directory as an unprivileged user, a file where a directory should
be), outputs that are the command's own inputs (an implicit one among them), option values no
one should accept, data oddities (one host, a part file delivered twice, traces at epoch 0 and
two centuries ahead), environment oddities (HOME unset, TMPDIR missing, umask 077/000, a
rewritten file's mode and owner) and signals while a command writes (SIGTERM, SIGINT, kill -9:
no half output, the rerun works).

Each failing case: exit status 2, one line on stderr naming the path or flag, no traceback,
the inputs unchanged (sha256 before/after) and no partial output. Mounts are made inside a
private mount namespace (`unshare --mount`) and unmounted (`umount -l`) by the same script, so
none outlives its case even when it fails.

Written blind (from the README, docs/architecture.md, the commands' --help and tracer/schema.py).
Its ten first failures, six faults, were fixed with it: `--html` onto the model the audit reads
by default; a file this user may not write replaced by the rename (tracer.atomic refuses it
now); a FIFO or a directory where `baseline learn` saves its model taken for no model; an empty
--since window's message naming neither the dataset nor the flag; `-o FILE/m.parquet` said
FILE did not exist; `report FILE` said no such directory."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import tools_run_as_nobody

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
RECORDINGS = REPO / "tests" / "recordings" / "c_rehash_readonly"
LOCK = ".tracebase.lock"  # a dataset's lock file: made by its readers, holds no data
NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def run(args, *, cwd=None, env=None, timeout=120, user=None, umask=None, tool=BASELINE, stdin=None):
    cmd = [tool, *map(str, args)]
    if user == "nobody":
        tools_run_as_nobody()
        cmd = [*NOBODY, *cmd]
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(cmd, cwd=cwd, env=env if env is not None else os.environ.copy(),
                          capture_output=True, text=True, errors="replace", timeout=timeout,
                          preexec_fn=preexec, stdin=stdin if stdin is not None else subprocess.DEVNULL)


def in_mount_ns(script: str, timeout=120) -> subprocess.CompletedProcess:
    """Run a sh script in a private mount namespace: its mounts never reach the host's."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, errors="replace", timeout=timeout)


def tail(p) -> str:
    lines = (p.stderr or "").strip().splitlines()
    return f"exit {p.returncode}; stderr tail: {lines[-3:]}"


def assert_refused(p, *names: str) -> None:
    """Exit 2, one line naming each of `names`, no traceback."""
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode == 2, tail(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, tail(p)
    for n in names:
        assert n in lines[0], (n, tail(p))


def assert_ok(p, codes=(0,)) -> None:
    assert "Traceback" not in p.stderr, tail(p)
    assert p.returncode in codes, tail(p)


def digest(path: Path) -> dict[str, str]:
    """sha256 of a file, or of every file under a directory (symlinks by target)."""
    path = Path(path)
    if path.is_file():
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    out = {}
    for p in sorted(path.rglob("*")):
        if p.name == LOCK:
            continue
        if p.is_symlink():
            out[str(p.relative_to(path))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def temporaries(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in Path(root).rglob(".*") if p.name.endswith(".tmp")]


def first_part(ds: Path, table: str, host: str = "gpu00001") -> Path:
    return sorted(ds.glob(f"{table}/date=*/host={host}/*.parquet"))[0]


def rewrite(path: Path, fn) -> None:
    t = pq.read_table(path)
    meta = t.schema.metadata
    pq.write_table(fn(t).replace_schema_metadata(meta), path)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """A small simulated fleet (3 hosts, 1 h) with its learned model and an audit: copied by the
    cases that change it."""
    root = tmp_path_factory.mktemp("r14fleet")
    ds = root / "ds"
    for args in (["simulate", "--hosts", "3", "--hours", "1", "--seed", "14", "-o", ds],
                 ["learn", ds], ["audit", ds]):
        p = run(args)
        assert p.returncode == 0, tail(p)
    return ds


@pytest.fixture(scope="module")
def bigfleet(tmp_path_factory) -> Path:
    """A fleet big enough that export, audit and coverage take a second or two (signals land
    while they run); never changed by the cases."""
    ds = tmp_path_factory.mktemp("r14big") / "fleet"
    p = run(["simulate", "--hosts", "100", "--hours", "6", "--seed", "14", "-o", ds])
    assert p.returncode == 0, tail(p)
    return ds


@pytest.fixture()
def ds(fleet, tmp_path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(fleet, copy, symlinks=True)
    return copy


@pytest.fixture()
def shared_dir():
    """A directory nobody can traverse (pytest's tmp_path is root's 0700)."""
    d = Path(tempfile.mkdtemp(prefix="r14-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# corrupt and odd inputs, through the fleet subcommands
# ---------------------------------------------------------------------------------------------
def test_audit_model_cut_mid_file_is_refused_and_no_output_made(ds, tmp_path):
    model = tmp_path / "model.parquet"
    data = (ds / "baseline-model.parquet").read_bytes()
    model.write_bytes(data[: len(data) // 2])
    before = digest(model)
    p = run(["audit", ds, "--model", model, "-o", tmp_path / "out"])
    assert_refused(p, "model.parquet")
    assert digest(model) == before
    assert not (tmp_path / "out").exists()


def test_audit_model_that_is_an_events_file_is_refused(ds, tmp_path):
    """A valid Parquet file of another table given as --model (an operator's slip of the tab key)."""
    events = first_part(ds, "events")
    before = digest(events)
    p = run(["audit", ds, "--model", events, "-o", tmp_path / "out"])
    assert_refused(p, "part-")
    assert digest(events) == before
    assert not (tmp_path / "out").exists()


def test_report_of_findings_with_a_zeroed_footer_is_refused(ds):
    target = (ds / "audit" / "findings.parquet").resolve()
    with open(target, "r+b") as fh:
        fh.seek(-8, os.SEEK_END)
        fh.write(b"\0" * 8)
    before = digest(ds / "audit")
    p = run(["report", ds / "audit"])
    assert_refused(p, "findings.parquet")
    assert digest(ds / "audit") == before


def test_evaluate_with_a_gzipped_truth_file_is_refused(ds):
    truth = sorted((ds / "truth").rglob("*.parquet"))[0]
    truth.write_bytes(gzip.compress(truth.read_bytes()))
    before = digest(ds)
    p = run(["evaluate", ds])
    assert_refused(p, truth.name)
    assert digest(ds) == before


def test_learn_with_a_fifo_part_file_does_not_hang(ds, tmp_path):
    fifo = first_part(ds, "events").with_name("part-00077.parquet")
    os.mkfifo(fifo)
    p = run(["learn", ds, "-o", tmp_path / "m.parquet"], timeout=60)
    assert_refused(p, "part-00077.parquet")
    assert not (tmp_path / "m.parquet").exists()


def test_export_of_a_dataset_with_a_column_of_another_type_names_file_and_column(ds, tmp_path):
    part = first_part(ds, "events")
    rewrite(part, lambda t: t.set_column(t.schema.get_field_index("depth"), "depth",
                                         pc.cast(t["depth"], pa.string())))
    before = digest(ds / "events")
    p = run(["export", ds / "events", "-o", tmp_path / "e.json"])
    assert_refused(p, part.name, "depth")
    assert digest(ds / "events") == before
    assert not (tmp_path / "e.json").exists() and temporaries(tmp_path) == []


def test_coverage_with_a_counters_column_missing_names_file_and_column(ds, tmp_path):
    shutil.rmtree(ds / "counter_buckets")  # (so the counters files are read themselves)
    part = first_part(ds, "counters")
    rewrite(part, lambda t: t.drop_columns(["probe"]))
    before = digest(ds / "counters")
    p = run(["coverage", ds, "-o", tmp_path / "cov"])
    assert_refused(p, part.name, "probe")
    assert digest(ds / "counters") == before
    assert not (tmp_path / "cov").exists()


def test_allowlist_learn_from_dev_null_is_refused(tmp_path):
    p = run(["allowlist", "learn", "/dev/null", "-o", tmp_path / "x.yaml"])
    assert_refused(p, "/dev/null")
    assert not (tmp_path / "x.yaml").exists()


def test_expected_learn_from_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    p = run(["expected", "learn", tmp_path / "a", "-o", tmp_path / "x.yaml"])
    assert_refused(p, "a")
    assert not (tmp_path / "x.yaml").exists()


def test_good_directory_with_a_loop_inside_is_read_once(tmp_path):
    """A good-runs directory holding a link back to itself and a dangling loop beside the trace:
    valid input, the diff just runs (same answer as the plain directory)."""
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(RECORDINGS / "good0.parquet", good)
    plain = run(["diff", good, RECORDINGS / "bad.parquet", "--json"])
    (good / "again").symlink_to("../good")
    (good / "x").symlink_to("y")
    (good / "y").symlink_to("x")
    p = run(["diff", good, RECORDINGS / "bad.parquet", "--json"])
    assert_ok(p, (0, 1))
    assert p.returncode == plain.returncode and _timeless(p.stdout) == _timeless(plain.stdout)


def _timeless(text: str):
    """A JSON document without its run times."""
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k != "elapsed_s"}
        return [strip(v) for v in o] if isinstance(o, list) else o
    return strip(json.loads(text))


def test_non_utf8_name_with_a_newline_is_one_escaped_line(tmp_path):
    name = b"g\nood\xff.parquet"
    bad = os.path.join(os.fsencode(tmp_path), name)
    with open(bad, "wb"):
        pass  # an empty file
    p = subprocess.run([BASELINE, "diff", os.fsencode(RECORDINGS / "good0.parquet"), bad],
                       capture_output=True, timeout=60)
    err = p.stderr.decode("utf-8")  # (what the tool prints is UTF-8 whatever the name)
    assert p.returncode == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "\\xff.parquet" in err, err


def test_ingest_of_a_spool_that_is_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "spool")
    p = run(["ingest", tmp_path / "spool", tmp_path / "dataset"], timeout=60)
    assert_refused(p, "spool")
    assert not (tmp_path / "dataset").exists() or not any((tmp_path / "dataset").iterdir())


# ---------------------------------------------------------------------------------------------
# YAML lists malformed in new ways
# ---------------------------------------------------------------------------------------------
ENTRY = "  - id: {id}\n    source: curated\n    reason: r\n    probe: {probe}\n    errno: {errno}\n"


def test_allowlist_with_a_duplicate_id_names_both_places(tmp_path):
    y = tmp_path / "dup.yaml"
    y.write_text("version: 1\nentries:\n" + ENTRY.format(id="x", probe="openat", errno="ENOENT")
                 + ENTRY.format(id="x", probe="read", errno="EIO"))
    p = run(["diff", "--allowlist", y, RECORDINGS / "good0.parquet", RECORDINGS / "bad.parquet"])
    assert_refused(p, "dup.yaml", "'x'")


def test_allowlist_billion_laughs_is_refused_quickly(tmp_path):
    y = tmp_path / "laughs.yaml"
    levels = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefg", "bcdefgh", strict=False):
        levels.append(f"&{cur} [{levels[-1]}" + f",*{prev}" * 8 + "]")
    y.write_text("version: 1\nentries: " + levels[-1] + "\n")
    t0 = time.monotonic()
    p = run(["audit", "--allowlist", y, "/nonexistent-dataset-r14"], timeout=60)
    assert_refused(p)
    assert time.monotonic() - t0 < 30
    p = run(["diff", "--allowlist", y, RECORDINGS / "good0.parquet", RECORDINGS / "bad.parquet"], timeout=60)
    assert_refused(p, "laughs.yaml")


def test_allowlist_sparse_300_mib_file_is_refused_by_size(tmp_path):
    y = tmp_path / "huge.yaml"
    with open(y, "wb") as fh:
        fh.write(b"version: 1\nentries: []\n# ")
        fh.truncate(300 << 20)  # sparse: no disk used
    t0 = time.monotonic()
    p = run(["diff", "--allowlist", y, RECORDINGS / "good0.parquet", RECORDINGS / "bad.parquet"], timeout=60)
    assert_refused(p, "huge.yaml")
    assert time.monotonic() - t0 < 20


def test_allowlist_learn_into_a_broken_list_keeps_it(tmp_path):
    """Merging into a file that does not parse must not replace it with a fresh list."""
    y = tmp_path / "team.yaml"
    y.write_text("# the team's list, hand-edited\nversion: 1\nentries:\n  - id: [unclosed\n")
    before = digest(y)
    p = run(["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", y])
    assert_refused(p, "team.yaml")
    assert digest(y) == before and temporaries(tmp_path) == []


def test_learn_expected_out_with_entries_of_the_wrong_type_is_kept(ds, tmp_path):
    y = tmp_path / "exp.yaml"
    y.write_text("version: 1\nentries: all of them\n")
    before = digest(y)
    p = run(["learn", ds, "-o", tmp_path / "m.parquet", "--expected-out", y])
    assert_refused(p, "exp.yaml")
    assert digest(y) == before
    assert not (tmp_path / "m.parquet").exists() or pq.read_metadata(tmp_path / "m.parquet")


def test_audit_allowlist_with_an_unknown_top_level_key_is_refused(ds, tmp_path):
    y = tmp_path / "a.yaml"
    y.write_text("version: 1\nentires: []\n")  # a typo of entries
    p = run(["audit", ds, "--allowlist", y, "-o", tmp_path / "out"])
    assert_refused(p, "a.yaml", "entires")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# OS faults made for real
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", ["allowlist learn", "export", "coverage", "expected learn"])
def test_outputs_into_a_read_only_bind_mount(ds, tmp_path, cmd):
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro / "out"
    args = {"allowlist learn": ["allowlist", "learn", RECORDINGS / "good0.parquet", "-o", out],
            "export": ["export", RECORDINGS / "bad.parquet", "-o", out],
            "coverage": ["coverage", ds, "-o", out],
            "expected learn": ["expected", "learn", ds, "-o", out]}[cmd]
    before = digest(ds)
    cli = " ".join(f"'{a}'" for a in [BASELINE, *args])
    p = in_mount_ns(f"mount --bind '{ro}' '{ro}' && mount -o remount,bind,ro '{ro}' || exit 99\n"
                    f"{cli} >/dev/null; rc=$?; umount -l '{ro}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, "ro")
    assert not out.exists() and list(ro.iterdir()) == []
    assert digest(ds) == before


@pytest.mark.parametrize("cmd", ["simulate", "coverage"])
def test_outputs_onto_a_full_tmpfs_leave_nothing(ds, tmp_path, cmd):
    full = tmp_path / "full"
    full.mkdir()
    args = {"simulate": ["simulate", "--hosts", "3", "--hours", "1", "-o", full / "sim"],
            "coverage": ["coverage", ds, "-o", full / "cov"]}[cmd]
    cli = " ".join(f"'{a}'" for a in [BASELINE, *args])
    p = in_mount_ns(f"mount -t tmpfs -o size=64k r14full '{full}' || exit 99\n"
                    f"{cli} >/dev/null; rc=$?; ls -A '{full}'; umount -l '{full}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, "No space left on device", str(full))
    assert p.stdout.strip() == "", f"left on the full file system: {p.stdout!r}"


def test_merge_into_a_list_on_a_full_tmpfs_keeps_the_old_list(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    keep = "# curated by hand\nversion: 1\nentries: []\n"
    cli = f"'{BASELINE}' allowlist learn '{RECORDINGS / 'good0.parquet'}' '{RECORDINGS / 'good1.parquet'}' -o '{full}/t.yaml'"
    p = in_mount_ns(f"mount -t tmpfs -o size=64k r14full '{full}' || exit 99\n"
                    f"printf '{keep}' > '{full}/t.yaml'; dd if=/dev/zero of='{full}/fill' bs=4k count=15 2>/dev/null\n"
                    f"{cli} >/dev/null; rc=$?; echo ===; cat '{full}/t.yaml'; echo ===; ls -A '{full}';"
                    f" umount -l '{full}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, "t.yaml", "No space left on device")
    _, content, listing = p.stdout.split("===")
    assert content.strip("\n") == keep.strip("\n")
    assert sorted(listing.split()) == ["fill", "t.yaml"], listing


def test_output_onto_a_bind_mounted_file_is_refused_and_leaves_no_temporary(tmp_path):
    """`-o` naming a file that is a mount point (a ConfigMap subPath, a bind-mounted file):
    the rename over it fails (EBUSY); one line, the mounted file and its source unchanged."""
    src, dst = tmp_path / "src.yaml", tmp_path / "mnt.yaml"
    src.write_text("# mounted\nversion: 1\nentries: []\n")
    dst.write_text("version: 1\nentries: []\n")
    before = digest(src)
    cli = f"'{BASELINE}' allowlist learn '{RECORDINGS / 'good0.parquet'}' -o '{dst}'"
    p = in_mount_ns(f"mount --bind '{src}' '{dst}' || exit 99\n{cli} >/dev/null; rc=$?; umount -l '{dst}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, "mnt.yaml")
    assert digest(src) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["mnt.yaml", "src.yaml"]


def test_unprivileged_merge_into_a_root_file_in_a_sticky_dir_is_refused(shared_dir):
    shared_dir.chmod(0o1777)
    shutil.copy(RECORDINGS / "good0.parquet", shared_dir)
    (shared_dir / "good0.parquet").chmod(0o644)
    y = shared_dir / "root.yaml"
    y.write_text("# root's\nversion: 1\nentries: []\n")
    y.chmod(0o644)
    before = digest(y)
    p = run(["allowlist", "learn", "good0.parquet", "-o", "root.yaml"], cwd=shared_dir, user="nobody")
    assert_refused(p, "root.yaml")
    assert digest(y) == before and y.stat().st_uid == 0
    assert sorted(x.name for x in shared_dir.iterdir()) == ["good0.parquet", "root.yaml"]


@pytest.mark.parametrize("cmd", ["expected learn", "coverage"])
def test_unreadable_counters_as_nobody_names_the_partition(fleet, shared_dir, cmd):
    shared_dir.chmod(0o1777)
    ds = shared_dir / "ds"
    shutil.copytree(fleet, ds, symlinks=True)
    shutil.rmtree(ds / "counter_buckets")
    part = first_part(ds, "counters")
    part.chmod(0)
    out = shared_dir / "out"
    args = {"expected learn": ["expected", "learn", ds, "-o", out],
            "coverage": ["coverage", ds, "-o", out]}[cmd]
    p = run(args, user="nobody")
    assert_refused(p, part.name, "Permission denied")
    assert not out.exists()


@pytest.mark.parametrize("cmd", ["expected learn", "coverage", "report --html", "learn"])
def test_output_whose_parent_is_a_file(ds, tmp_path, cmd):
    afile = tmp_path / "afile"
    afile.write_text("not a directory\n")
    out = afile / "x"
    args = {"expected learn": ["expected", "learn", ds, "-o", out],
            "coverage": ["coverage", ds, "-o", out],
            "report --html": ["report", ds / "audit", "--html", out],
            "learn": ["learn", ds, "-o", out]}[cmd]
    p = run(args)
    assert_refused(p, "afile")
    assert afile.read_text() == "not a directory\n"


def test_learn_output_under_a_file_says_not_a_directory(ds, tmp_path):
    """The message should say what was found: a file, not a missing directory."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    p = run(["learn", ds, "-o", afile / "m.parquet"])
    assert_refused(p, "afile")
    assert "does not exist" not in p.stderr, tail(p)


def test_audit_html_over_the_implicit_model_is_refused(ds, tmp_path):
    model = ds / "baseline-model.parquet"
    before = digest(model)
    p = run(["audit", ds, "--html", model, "-o", tmp_path / "out"])
    assert digest(model) == before, f"the model audit read was overwritten: {tail(p)}"
    assert_refused(p, "--html", "baseline-model.parquet")


# ---------------------------------------------------------------------------------------------
# option values no one should accept
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tool,args,flag", [
    (TRACER, ["record", "--linger", "-1", "--", "true"], "--linger"),
    (TRACER, ["record", "-d", "0", "--", "true"], "--duration"),
    (TRACER, ["record", "--ringbuf-mb", "0", "--", "true"], "--ringbuf-mb"),
    (TRACER, ["run", "-i", "2h"], "--interval"),
    (TRACER, ["run", "--ringbuf-kb", "0"], "--ringbuf-kb"),
    (BASELINE, ["ingest", "--compact-days-after", "99999", "s", "d"], "--compact-days-after"),
    (BASELINE, ["simulate", "--start", "yesterday", "-o", "x"], "--start"),
    (BASELINE, ["simulate", "--hours", "1e9", "-o", "x"], "--hours"),
    (BASELINE, ["audit", "--since", "1e400", "ds"], "--since"),
    (BASELINE, ["learn", "--since", "nan", "ds"], "--since"),
    (BASELINE, ["diff", "-k", "1001", RECORDINGS / "good0.parquet", RECORDINGS / "bad.parquet"], "--window"),
    (BASELINE, ["coverage", "--week", "2026-W00", "{fleet}", "-o", "cov"], "--week"),
    (BASELINE, ["allowlist", "learn", "--min-support", "inf", "g"], "--min-support"),
    (BASELINE, ["export", "--max-events", "-1", "t"], "--max-events"),
])
def test_bad_option_values(fleet, tmp_path, tool, args, flag):
    args = [fleet if a == "{fleet}" else a for a in args]
    before = digest(fleet)
    p = run(args, tool=tool, cwd=tmp_path, timeout=60)
    assert digest(fleet) == before
    assert_refused(p, flag)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# data oddities: valid input, the tools just work
# ---------------------------------------------------------------------------------------------
def test_one_host_fleet_runs_end_to_end(tmp_path):
    ds = tmp_path / "one"
    for args in (["simulate", "--hosts", "1", "--hours", "1", "-o", ds], ["learn", ds], ["audit", ds],
                 ["evaluate", ds], ["coverage", ds], ["report", ds / "audit"],
                 ["expected", "learn", ds, "-o", tmp_path / "e.yaml"]):
        assert_ok(run(args))


def test_a_part_file_delivered_twice_counts_once(ds, tmp_path):
    once = run(["audit", ds, "--refit", "-o", tmp_path / "a", "--json"])
    assert_ok(once)
    part = first_part(ds, "events")
    shutil.copy(part, part.with_name("part-00099.parquet"))
    twice = run(["audit", ds, "--refit", "-o", tmp_path / "b", "--json"])
    assert_ok(twice)
    assert (pq.read_table(tmp_path / "a" / "findings.parquet").num_rows
            == pq.read_table(tmp_path / "b" / "findings.parquet").num_rows)


def test_traces_at_epoch_zero_and_two_centuries_ahead(ds, tmp_path):
    ahead = 200 * 365 * 86400 * 10**9

    def shift(t, how):
        for c in ("start_time", "end_time"):
            col = t[c].cast(pa.int64())
            col = pc.subtract(col, pc.min(col)) if how == "zero" else pc.add(col, pa.scalar(ahead, pa.int64()))
            t = t.set_column(t.schema.get_field_index(c), t.schema.field(c), col.cast(t.schema.field(c).type))
        return t

    rewrite(first_part(ds, "events", "gpu00001"), lambda t: shift(t, "zero"))
    rewrite(first_part(ds, "events", "gpu00002"), lambda t: shift(t, "ahead"))
    before = digest(ds / "events")
    for args in (["learn", ds, "-o", tmp_path / "m.parquet"], ["audit", ds, "--refit", "-o", tmp_path / "a"],
                 ["export", ds / "events", "-o", tmp_path / "e.json"],
                 ["expected", "learn", ds, "-o", tmp_path / "e.yaml"]):
        assert_ok(run(args))
    assert digest(ds / "events") == before


def test_a_dataset_with_its_tables_but_no_files_is_refused(tmp_path):
    ds = tmp_path / "empty"
    for t in ("events", "counters"):
        (ds / t / "date=2026-11-28" / "host=h1").mkdir(parents=True)
    for args in (["learn", ds], ["audit", ds], ["coverage", ds]):
        p = run(args)
        assert_refused(p, "empty")
    assert sorted(p.name for p in ds.iterdir() if p.name != LOCK) == ["counters", "events"]


# ---------------------------------------------------------------------------------------------
# environment oddities
# ---------------------------------------------------------------------------------------------
def test_home_unset_and_tmpdir_missing(ds, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME")}
    env["TMPDIR"] = str(tmp_path / "no" / "such" / "tmp")
    for args in (["coverage", ds, "-o", tmp_path / "cov"], ["simulate", "--hosts", "2", "--hours", "1", "-o", tmp_path / "s"],
                 ["audit", ds, "-o", tmp_path / "a", "--html", tmp_path / "a.html"]):
        assert_ok(run(args, env=env))
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("mask,file_mode,most_dir", [(0o077, 0o600, 0o700), (0o000, 0o666, 0o775)])
def test_outputs_honour_the_umask(ds, tmp_path, mask, file_mode, most_dir):
    out = tmp_path / "o"
    out.mkdir()
    for args in (["expected", "learn", ds, "-o", out / "e.yaml"], ["report", ds / "audit", "--html", out / "r.html"],
                 ["export", RECORDINGS / "bad.parquet", "-o", out / "e.json"], ["coverage", ds, "-o", out / "cov"]):
        assert_ok(run(args, umask=mask))
    for p in out.rglob("*"):
        mode = stat.S_IMODE(p.lstat().st_mode)
        if p.is_symlink():
            continue
        if p.is_dir():
            assert mode & ~most_dir == 0 and not mode & 0o002, (p, oct(mode))
        else:
            assert mode == file_mode, (p, oct(mode))


def test_a_rewritten_list_keeps_its_mode_and_owner(shared_dir):
    shutil.copy(RECORDINGS / "good0.parquet", shared_dir)
    y = shared_dir / "team.yaml"
    y.write_text("# team\nversion: 1\nentries: []\n")
    y.chmod(0o640)
    os.chown(y, 65534, 65534)
    p = run(["allowlist", "learn", "good0.parquet", "-o", "team.yaml"], cwd=shared_dir, umask=0o022)
    assert_ok(p)
    st = y.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640 and (st.st_uid, st.st_gid) == (65534, 65534)
    assert y.read_text().startswith("# team\n") and "learned" in y.read_text()


# ---------------------------------------------------------------------------------------------
# signals while writing
# ---------------------------------------------------------------------------------------------
def _start(args, cwd) -> subprocess.Popen:
    # SIGHUP as a terminal session gives it (SIG_DFL): the suite may run under nohup, whose
    # ignored SIGHUP the command would inherit and rightly leave alone
    return subprocess.Popen([BASELINE, *map(str, args)], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))


def _wait_for(cond, proc, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            pytest.fail(f"finished before {what}: exit {proc.returncode} {proc.stderr.read()[-500:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _finish(proc, timeout=60) -> str:
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("still running after the signal")


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_simulate_stopped_while_writing_leaves_nothing(tmp_path, sig, code):
    proc = _start(["simulate", "--hosts", "600", "--hours", "24", "-o", "fleet"], tmp_path)
    _wait_for(lambda: any((p / "events").exists() for p in tmp_path.glob(".*")), proc, "the first part file")
    time.sleep(0.3)
    proc.send_signal(sig)
    err = _finish(proc)
    assert proc.returncode == code, err[-800:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-800:]
    assert list(tmp_path.iterdir()) == [], [p.name for p in tmp_path.iterdir()]


def test_simulate_killed_then_rerun_into_the_same_directory(tmp_path):
    proc = _start(["simulate", "--hosts", "600", "--hours", "24", "-o", "fleet"], tmp_path)
    _wait_for(lambda: any((p / "events").exists() for p in tmp_path.glob(".*")), proc, "the first part file")
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "fleet").exists(), "a half dataset under the name asked for"
    p = run(["simulate", "--hosts", "2", "--hours", "1", "-o", "fleet"], cwd=tmp_path)
    assert_ok(p)
    assert [x.name for x in tmp_path.iterdir()] == ["fleet"], "the killed run's debris was left"
    assert_ok(run(["learn", tmp_path / "fleet"]))


def test_export_stopped_while_writing_leaves_no_half_json(bigfleet, tmp_path):
    """SIGTERM at several instants of an export of a fleet's events: each run either finishes
    (exit 0) or stops (exit 143); whatever is at the output path is one whole JSON document."""
    src = bigfleet
    seen = set()
    for n, delay in enumerate((0.3, 0.7, 1.0, 1.3, 1.6)):
        out = tmp_path / f"out{n}"
        out.mkdir()
        proc = _start(["export", src / "events", "-o", out / "all.json"], tmp_path)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        err = _finish(proc)
        assert proc.returncode in (0, 143), (delay, err[-800:])
        assert "Traceback" not in err, err[-800:]
        left = [p.name for p in out.iterdir()]
        assert left in ([], ["all.json"]), (delay, left)
        if left:
            json.loads((out / "all.json").read_text())
        seen.add(proc.returncode)
    assert 143 in seen, "no trial was stopped: the export is too quick for this case"


def test_audit_killed_while_writing_then_rerun(bigfleet, tmp_path):
    src = bigfleet
    before = digest(src)
    out = tmp_path / "aud"
    proc = _start(["audit", src, "-o", out], tmp_path)
    _wait_for(lambda: out.exists() and any(out.rglob("*")), proc, "the audit's first output")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for name in ("findings.parquet", "clusters.parquet", "host_alerts.parquet"):
        f = out / name
        if f.exists():  # a visible output is a whole one
            pq.read_table(f)
    assert digest(src) == before
    p = run(["audit", src, "-o", out, "--json"])
    assert_ok(p)
    for name in ("findings.parquet", "clusters.parquet", "host_alerts.parquet"):
        pq.read_table(out / name)
    assert_ok(run(["report", out]))


def test_coverage_stopped_while_writing_leaves_no_half_report(bigfleet, tmp_path):
    """SIGINT (Ctrl-C) at several instants of a weekly report: exit 0 or 130; the report
    directory is absent or whole (its Parquet tables read, its HTML ends), no hidden debris."""
    before = digest(bigfleet)
    seen = set()
    for n, delay in enumerate((0.5, 0.9, 1.2, 1.5)):
        out = tmp_path / f"cov{n}"
        proc = _start(["coverage", bigfleet, "-o", out], tmp_path)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        err = _finish(proc)
        assert proc.returncode in (0, 130), (delay, err[-800:])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-800:]
        if out.exists():
            assert temporaries(out) == [], temporaries(out)
            for week in out.iterdir():
                for t in ("coverage_probes", "coverage_groups", "coverage_app"):
                    pq.read_table(week / f"{t}.parquet")
                assert (week / "report.html").read_text().rstrip().endswith("</html>")
        seen.add(proc.returncode)
    assert digest(bigfleet) == before
    assert 130 in seen, "no trial was stopped: the report is too quick for this case"


def test_ingest_onto_a_full_dataset_loses_no_snapshot(tmp_path):
    """The dataset's file system fills up part-way through an ingest: exit 2 naming it; what
    was not committed stays in the spool, and the rerun (with room) ends with the same rows as
    an ingest that never failed."""
    sim = tmp_path / "sim"
    assert_ok(run(["simulate", "--hosts", "3", "--hours", "1", "--spool", "-o", sim]))
    shutil.copytree(sim / "spool", tmp_path / "spool0")
    full, partial = tmp_path / "full", tmp_path / "partial"
    full.mkdir()
    cli = f"'{BASELINE}' ingest '{sim / 'spool'}' '{full / 'ds'}' --quarantine '{full / 'q'}'"
    p = in_mount_ns(f"mount -t tmpfs -o size=64k r14ingest '{full}' || exit 99\n"
                    f"dd if=/dev/zero of='{full}/fill' bs=4k count=10 2>/dev/null\n"
                    f"{cli} >/dev/null; rc=$?; cp -a '{full}/ds' '{partial}'; umount -l '{full}'; exit $rc")
    assert p.returncode != 99, p.stderr
    assert_refused(p, "No space left on device", "full/ds")
    assert temporaries(partial) == [], temporaries(partial)
    assert_ok(run(["ingest", sim / "spool", partial, "--quarantine", tmp_path / "q1"]))
    assert_ok(run(["ingest", tmp_path / "spool0", tmp_path / "clean", "--quarantine", tmp_path / "q2"]))
    from tracer.schema import dataset_files, read

    for table in ("events", "counters"):
        got = read(dataset_files(partial, table), table).height
        want = read(dataset_files(tmp_path / "clean", table), table).height
        assert got == want, (table, got, want)
    assert not any((tmp_path / "q1").rglob("*.parquet")) if (tmp_path / "q1").exists() else True


@pytest.mark.parametrize("cmd", ["allowlist learn", "learn"])
def test_an_unprivileged_user_cannot_replace_a_file_it_cannot_write(fleet, shared_dir, cmd):
    own = shared_dir / "mine"
    own.mkdir()
    shutil.copy(RECORDINGS / "good0.parquet", own)
    if cmd == "allowlist learn":
        target = own / "team.yaml"
        target.write_text("# root's list\nversion: 1\nentries: []\n")
        args = ["allowlist", "learn", "good0.parquet", "-o", "team.yaml"]
    else:
        shutil.copytree(fleet, own / "ds", symlinks=True)
        target = own / "ds" / "baseline-model.parquet"
        args = ["learn", "ds"]
    for p in [own, *own.rglob("*")]:
        if p != target:
            os.chown(p, 65534, 65534, follow_symlinks=False)
    target.chmod(0o644)
    before = digest(target)
    p = run(args, cwd=own, user="nobody")
    st = target.stat()
    assert (st.st_uid, digest(target)) == (0, before), f"replaced, now uid {st.st_uid}: {tail(p)}"
    assert_refused(p, target.name)


@pytest.mark.parametrize("what", ["FIFO", "directory"])
def test_audit_implicit_model_that_is_not_a_file_is_refused(ds, tmp_path, what):
    model = ds / "baseline-model.parquet"
    model.unlink()
    os.mkfifo(model) if what == "FIFO" else model.mkdir()
    p = run(["audit", ds, "-o", tmp_path / "out"], timeout=60)
    assert_refused(p, "baseline-model.parquet")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("cmd", ["audit", "audit --refit", "expected learn"])
def test_since_after_the_newest_trace_names_dataset_and_flag(ds, tmp_path, cmd):
    since = "2026-11-28T23:00:00Z"  # the fleet covers 00:00-01:00 of that day
    args = {"audit": ["audit", ds, "--since", since, "-o", tmp_path / "out"],
            "audit --refit": ["audit", ds, "--refit", "--no-learn-expected", "--since", since, "-o", tmp_path / "out"],
            "expected learn": ["expected", "learn", ds, "--since", since, "-o", tmp_path / "e.yaml"]}[cmd]
    p = run(args)
    assert_refused(p, "--since", "ds")
    assert not (tmp_path / "out").exists() and not (tmp_path / "e.yaml").exists()


def test_report_of_a_file_says_what_it_found(tmp_path):
    f = tmp_path / "findings.parquet"
    shutil.copy(RECORDINGS / "bad.parquet", f)
    p = run(["report", f])
    assert_refused(p, "findings.parquet")
    assert "no such" not in p.stderr, tail(p)


@pytest.mark.parametrize("case", ["probes check FIFO set", "suggest-probes FIFO set", "suggest-probes /dev/null",
                                  "record -o a directory", "record -o under a file", "run --spool /dev/null",
                                  "run --spool a file", "run --metadata-file FIFO"])
def test_tracer_side_odd_paths_are_refused_before_any_work(tmp_path, case):
    """Odd paths given to the capture side and the probe tools: refused at once (no hang on a
    FIFO, no BPF loaded, no command run), one line naming the path."""
    fifo = tmp_path / "set.yaml"
    os.mkfifo(fifo)
    afile = tmp_path / "afile"
    afile.write_text("x")
    marker = tmp_path / "ran"
    tool, args, name = {
        "probes check FIFO set": (TRACER, ["probes", "check", fifo], "set.yaml"),
        "suggest-probes FIFO set": (BASELINE, ["suggest-probes", "--symbols", "/proc/kallsyms", "--probes", fifo],
                                    "set.yaml"),
        "suggest-probes /dev/null": (BASELINE, ["suggest-probes", "--symbols", "/dev/null"], "/dev/null"),
        "record -o a directory": (TRACER, ["record", "-o", tmp_path, "--", "touch", marker], str(tmp_path)),
        "record -o under a file": (TRACER, ["record", "-o", afile / "t.parquet", "--", "touch", marker], "afile"),
        "run --spool /dev/null": (TRACER, ["run", "syscalls", "--spool", "/dev/null", "-d", "1s"], "/dev/null"),
        "run --spool a file": (TRACER, ["run", "syscalls", "--spool", afile, "-d", "1s"], "afile"),
        "run --metadata-file FIFO": (TRACER, ["run", "syscalls", "--metadata-file", fifo, "-d", "1s",
                                              "--spool", tmp_path / "spool"], "set.yaml"),
    }[case]
    p = run(args, tool=tool, timeout=60)
    assert_refused(p, name)
    assert not marker.exists(), "the command ran"
    assert afile.read_text() == "x" and not (tmp_path / "spool").exists()
