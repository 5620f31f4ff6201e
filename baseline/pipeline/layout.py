"""Where the commands put their outputs inside a dataset directory, so they find each other.

    baseline simulate --out f      f/{events,counters,truth}/date=/host=/..., f/joblogs/*.log
    baseline learn f               f/baseline-model.parquet
    baseline audit f               uses f/baseline-model.parquet when present; writes f/audit/
    baseline evaluate f            reads f/audit/ (or a pipeline findings directory: LATEST)
    baseline coverage f            reads f/joblogs/*.log when present; writes f/reports/<week>/

None of these names is a table directory (<table>/date=...), so readers of the dataset's
tables never see them. For an input that is a Parquet file rather than a directory, the
defaults sit beside that file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tracer.errors import TracebaseError, shown, shown_value
from tracer.inputs import NO_SUCH_FILE, missing_reason, what_is_at

MODEL_NAME = "baseline-model.parquet"
AUDIT_DIR = "audit"
REPORTS_DIR = "reports"
JOBLOGS_GLOB = "joblogs/*.log"
LATEST = "LATEST"  # a pipeline findings directory names its newest published run here
# The tables a dataset directory holds (tracer.schema's partitioned tables: <table>/date=D/...),
# named here without importing it (the commands refuse a bad output before pyarrow loads); an
# audit's findings/ beside them is an output directory, not one of them
DATASET_TABLES = ("events", "counters", "counter_buckets", "truth")


def home(dataset: str | os.PathLike) -> Path:
    """The directory the defaults live in: the dataset directory, or a file's directory -- but
    never inside a table's partitions (`baseline learn DS/events/date=D/host=H/part.parquet`
    wrote its model among the part files, and every reader of DS then failed on it): a path
    under <table>/date=D/ has its dataset's directory."""
    path = Path(dataset)
    base = path if path.is_dir() or not path.suffix else path.parent
    parts = base.parts
    for i, name in enumerate(parts):
        if name.startswith("date=") and i >= 2 and parts[i - 1] in DATASET_TABLES:
            return Path(*parts[: i - 1])
    if base.name in DATASET_TABLES and base.parent != base and _partitioned(base):
        return base.parent
    return base


def _partitioned(table_dir: Path) -> bool:
    """`table_dir` holds date=D partitions (a table of a dataset, not a dataset named so)."""
    try:
        return any(e.name.startswith("date=") and e.is_dir() for e in os.scandir(table_dir))
    except OSError:
        return False


def default_model(dataset: str | os.PathLike) -> Path:
    return home(dataset) / MODEL_NAME


def saved_model(dataset: str | os.PathLike) -> Path | None:
    """The model `baseline learn DATASET` wrote, when there is one; something else at its path
    (a directory, a FIFO) is refused, not taken for "no model saved"."""
    from tracer.inputs import file_kind

    path = default_model(dataset)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TracebaseError(f"{path}: the saved model cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise TracebaseError(f"{path}: expected the model `baseline learn` saves, found {file_kind(st.st_mode)}")
    return path


def default_audit_dir(dataset: str | os.PathLike) -> Path:
    return home(dataset) / AUDIT_DIR


def default_reports_dir(dataset: str | os.PathLike) -> Path:
    return home(dataset) / REPORTS_DIR


def job_logs(dataset: str | os.PathLike) -> list[Path]:
    """Job logs stored with the dataset (`baseline simulate` writes them)."""
    return sorted(home(dataset).glob(JOBLOGS_GLOB))


def audit_output(directory: str | os.PathLike, *, strict: bool = False) -> Path | None:
    """The directory holding findings.parquet for an audit output or a pipeline findings
    directory (findings/LATEST names findings/<stamp>/), or None when it holds neither.

    strict: a LATEST that names no run holding findings (not UTF-8, empty, a path, a run
    removed) is an error naming it, for the readers given the directory (report, evaluate);
    otherwise such a directory is simply not an audit output."""
    base = Path(directory)
    if (base / "findings.parquet").is_file():
        return base
    latest = base / LATEST
    if not latest.is_file():
        return None
    not_a_run = f"{shown(latest)}: expected the name of the newest run (a directory beside it), found"
    try:
        stamp = latest.read_bytes().decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        if not strict:
            return None
        why = exc.strerror if isinstance(exc, OSError) else f"bytes that are not UTF-8 ({exc.reason} at byte {exc.start})"
        raise TracebaseError(f"{not_a_run} {why}") from None
    a_name = bool(stamp) and "/" not in stamp and stamp not in (".", "..")  # of a directory beside it
    if a_name and (base / stamp / "findings.parquet").is_file():
        return base / stamp
    if strict:
        if not a_name:
            raise TracebaseError(f"{not_a_run} {shown_value(stamp)}")
        raise TracebaseError(f"{shown(latest)}: names run {shown_value(stamp)}, expected "
                             f"{shown(base / stamp / 'findings.parquet')}, found {what_is_at(base / stamp / 'findings.parquet')}")
    return None


def find_audit(dataset: str | os.PathLike, findings: str | os.PathLike | None = None) -> Path | None:
    """The audit output to evaluate: `findings` when given (an audit output directory, or a
    pipeline findings directory whose LATEST run is taken; anything else is passed on as given,
    for the reader to judge), else DATASET/audit, else DATASET/findings; None when the default
    places hold nothing (the caller reports what it looked for)."""
    if findings is not None:
        return audit_output(findings, strict=True) or Path(findings)
    for candidate in (default_audit_dir(dataset), home(dataset) / "findings"):
        found = audit_output(candidate, strict=True)
        if found is not None:
            return found
    return None


# The pipeline's input directories, checked before any work (and before the command lines
# import pyarrow or polars: a mistyped path is refused at once). ingest_spool and
# weekly_report check through these too, so library callers get the same line.
def check_spool(spool: str | os.PathLike) -> Path:
    """`spool` as a Path when it is a directory, else one line naming it."""
    return _input_directory(spool, "spool")


def check_dataset(dataset: str | os.PathLike) -> Path:
    """`dataset` as a Path when it is a directory, else one line naming it."""
    return _input_directory(dataset, "dataset")


def _input_directory(given: str | os.PathLike, what: str) -> Path:
    """`given` as a Path when it is a directory; else one line saying what is there instead
    (a file was "spool directory does not exist"), or why it cannot be looked up."""
    path = Path(given)
    if path.is_dir():
        return path
    reason = missing_reason(path)
    if reason is None:
        raise TracebaseError(f"{path}: expected a {what} directory, found {what_is_at(path)}")
    if reason == NO_SUCH_FILE:
        raise TracebaseError(f"{path}: {what} directory does not exist")
    raise TracebaseError(f"{path}: {reason} (expected a {what} directory)")


def among_tables(dataset: str | os.PathLike, out: str | os.PathLike) -> str | None:
    """Where `out` lies when it is the dataset itself or inside one of its tables ("the dataset
    itself", "inside the dataset's events table"), else None: an output there lands among the
    table's part files, and every later reader of that table takes it for one (`baseline audit
    DS -o DS/events/x` made `baseline export DS/events` fail on the audit's clusters)."""
    dataset = Path(os.path.abspath(dataset))
    here = Path(os.path.abspath(out))
    if here == dataset:
        return "the dataset itself"
    inside = next((name for name in DATASET_TABLES if here == dataset / name or dataset / name in here.parents), None)
    return f"inside the dataset's {inside} table" if inside is not None else None


def refuse_inside_a_table(out: str | os.PathLike, flag: str, what: str) -> None:
    """TracebaseError naming `flag` when `out` is, or lies inside, a dataset's table directory (a
    directory named as one of DATASET_TABLES that holds date partitions): a dataset written
    there (`baseline simulate -o DS/events`) lands among DS's part files, and every later reader
    of DS refuses its table, or reads the wrong rows. The outputs that know their dataset check
    `refuse_among_tables`; this is for one that does not (a new dataset)."""
    here = Path(os.path.abspath(out))
    for place in (here, *here.parents):
        if place.name not in DATASET_TABLES:
            continue
        try:
            with os.scandir(place) as entries:
                partitioned = any(e.name.startswith("date=") for e in entries)
        except OSError:  # (not there, not a directory, not readable: no table found here)
            continue
        if partitioned:
            raise TracebaseError(f"{flag} {out}: expected {what} outside any dataset's tables, found a place "
                                 f"inside the {place.name} table {place} (date partitions)")


def refuse_among_tables(dataset: str | os.PathLike, out: str | os.PathLike, flag: str, what: str) -> None:
    """TracebaseError naming `flag` when `out` lies among the dataset's tables (among_tables)."""
    where = among_tables(dataset, out)
    if where is not None:
        raise TracebaseError(f"{flag} {out}: expected {what} outside the dataset's tables, found {where}")
