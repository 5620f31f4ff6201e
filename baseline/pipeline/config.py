"""One pipeline configuration for ingest, audit and the weekly coverage report.

The same YAML file drives the CLI, the library and the Airflow DAGs (which get its path from the
DAG param ``config``, else the Airflow Variable ``tracebase_config``, else the environment
variable ``TRACEBASE_CONFIG``). Every value is validated when loaded; a bad value raises
`ConfigError` naming the file, the key, what was expected and what was found.

Example (relative paths are resolved against the config file's directory)::

    version: 1
    paths:
      spool: /var/spool/tracebase          # tracer run writes snapshots here
      dataset: /srv/tracebase/dataset      # <table>/date=YYYY-MM-DD/host=<host>/part-*.parquet
      quarantine: /srv/tracebase/quarantine
      findings: /srv/tracebase/findings
      reports: /srv/tracebase/reports
      model: /srv/tracebase/model/baseline.parquet   # fitted good-trace baseline
      expected_errors: expected_errors.yaml
    probe_set: bpf/probes/rdma.yaml        # optional: the probe set the fleet runs
    nccl_logs: ["/srv/logs/nccl/*.log"]     # optional: application-labelled failures
    ingest_workers: 1                      # processes for ingest (hosts are ingested in parallel)
    retention:
      dataset_days: 90
      quarantine_days: 30
      findings_days: 30                    # published audit runs (findings/<stamp>/) kept this long
    thresholds:
      compact_min_files: 8                 # compact a partition once it holds this many small files
      compact_small_file_mb: 16            # files below this size count as small
      compact_days_after: 2                # compact a date's events across hosts this many days after it (0: never)
      audit_window_hours: 2                # audit failures newer than this
      baseline_window_days: 7              # learn the baseline and expected errors from this window
      trend_change_pct: 25                 # week-over-week change that counts as rising/falling
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from tracer import atomic, units, yamlio
from tracer.errors import TracebaseError, shown_value
from tracer.inputs import not_text, read_regular_text

CONFIG_VERSION = 1
VARIABLE_NAME = "tracebase_config"
ENV_NAME = "TRACEBASE_CONFIG"

PATH_KEYS = ("spool", "dataset", "quarantine", "findings", "reports", "model", "expected_errors")


class ConfigError(TracebaseError):
    """A pipeline config value is missing or has the wrong type/range."""

    def __init__(self, source: str, key: str | None, expected: str, found: str):
        where = f"{source}: key '{key}'" if key else source
        super().__init__(f"{where}: expected {expected}, found {found}")
        self.source, self.key, self.expected, self.found = source, key, expected, found


@dataclass(frozen=True)
class Retention:
    dataset_days: int = 90
    quarantine_days: int = 30
    findings_days: int = 30


@dataclass(frozen=True)
class Thresholds:
    compact_min_files: int = 8
    compact_small_file_mb: float = 16.0
    # a closed date's events compacted across hosts into day files this many days after it
    # (baseline.pipeline.ingest.compact_days: a few files instead of one per host-day, which the
    # audit pays per file); 0 never. Late snapshots of such a day are kept beside its day files
    # until the next run merges them in.
    compact_days_after: int = 2
    audit_window_hours: float = 2.0
    baseline_window_days: float = 7.0
    trend_change_pct: float = 25.0


@dataclass(frozen=True)
class PipelineConfig:
    source: str
    spool: Path
    dataset: Path
    quarantine: Path
    findings: Path
    reports: Path
    model: Path
    expected_errors: Path
    probe_set: Path | None = None
    nccl_logs: tuple[str, ...] = ()
    ingest_workers: int = 1
    retention: Retention = field(default_factory=Retention)
    thresholds: Thresholds = field(default_factory=Thresholds)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for XCom and logs)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, Path):
                out[key] = str(value)
        out["nccl_logs"] = list(self.nccl_logs)
        return out


_INT_RANGES = {"dataset_days": 1, "quarantine_days": 1, "findings_days": 1, "compact_min_files": 2, "compact_days_after": 0}
# Upper bounds for values that become durations (timedelta, int64-ns timestamps): past them a
# task failed with OverflowError deep inside instead of naming the key.
_MAX_DAYS = units.MAX_DURATION_S // 86400
_MAXIMA = {"dataset_days": _MAX_DAYS, "quarantine_days": _MAX_DAYS, "findings_days": _MAX_DAYS,
           "baseline_window_days": _MAX_DAYS, "audit_window_hours": _MAX_DAYS * 24, "compact_days_after": _MAX_DAYS}


def _describe(value: object) -> str:
    return f"{shown_value(value)} ({type(value).__name__})"


def _number(source: str, key: str, value: object, *, integer: bool, minimum: float) -> float | int:
    kind = "an integer" if integer else "a number"
    maximum = _MAXIMA.get(key.rsplit(".", 1)[-1])
    expected = f"{kind} >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and isinstance(value, float)):
        raise ConfigError(source, key, expected, _describe(value))
    # nan passed every comparison (.nan in YAML is a float)
    if not math.isfinite(value) or value < minimum or (maximum is not None and value > maximum):
        raise ConfigError(source, key, expected, repr(value))
    return int(value) if integer else float(value)


def _section(source: str, data: dict, name: str, allowed: set[str], required: bool) -> dict:
    section = data.get(name)
    if section is None:
        if required:
            raise ConfigError(source, name, f"a mapping with keys {sorted(allowed)}", "nothing")
        return {}
    if not isinstance(section, dict):
        raise ConfigError(source, name, "a mapping", _describe(section))
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise ConfigError(source, f"{name}.{unknown[0]}", f"one of {sorted(allowed)}", "an unknown key")
    return section


def config_from_dict(data: object, source: str = "<config>", base_dir: Path | None = None) -> PipelineConfig:
    """Validate a parsed config mapping; relative paths resolve against `base_dir`."""
    if not isinstance(data, dict):
        raise ConfigError(source, None, "a YAML mapping at the top level", _describe(data))
    allowed_top = {"version", "paths", "probe_set", "nccl_logs", "ingest_workers", "retention", "thresholds"}
    unknown = sorted(set(data) - allowed_top)
    if unknown:
        raise ConfigError(source, unknown[0], f"one of {sorted(allowed_top)}", "an unknown key")
    version = data.get("version", CONFIG_VERSION)
    if type(version) is not int or version != CONFIG_VERSION:  # True == 1.0 == 1 in Python
        raise ConfigError(source, "version", str(CONFIG_VERSION), repr(version))
    base = base_dir or Path.cwd()

    def as_path(key: str, value: object) -> Path:
        if not isinstance(value, str) or not value.strip() or "\0" in value:  # NUL: ValueError in every os call
            raise ConfigError(source, key, "a non-empty path string", _describe(value))
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else (base / path)

    paths = _section(source, data, "paths", set(PATH_KEYS), required=True)
    missing = [k for k in PATH_KEYS if k not in paths]
    if missing:
        raise ConfigError(source, f"paths.{missing[0]}", "a path", "nothing (key missing)")
    resolved = {k: as_path(f"paths.{k}", paths[k]) for k in PATH_KEYS}

    probe_set = data.get("probe_set")
    probe_path = as_path("probe_set", probe_set) if probe_set is not None else None

    logs = data.get("nccl_logs")
    if logs is None:  # (`false`, `0` or `{}` are no list of logs: refused below, not taken as none)
        logs = []
    if isinstance(logs, str):
        logs = [logs]
    if not isinstance(logs, list) or not all(isinstance(x, str) and x and "\0" not in x for x in logs):
        raise ConfigError(source, "nccl_logs", "a list of file paths or globs", _describe(logs))
    logs = [str(as_path("nccl_logs", x)) for x in logs]

    workers = _number(source, "ingest_workers", data.get("ingest_workers", 1), integer=True, minimum=1)

    ret = _section(source, data, "retention", {f.name for f in fields(Retention)}, required=False)
    retention = Retention(
        **{k: _number(source, f"retention.{k}", v, integer=True, minimum=_INT_RANGES[k]) for k, v in ret.items()}
    )
    thr_fields = {f.name for f in fields(Thresholds)}
    thr = _section(source, data, "thresholds", thr_fields, required=False)
    checked: dict[str, float | int] = {}
    for key, value in thr.items():
        integer = key in ("compact_min_files", "compact_days_after")
        minimum = _INT_RANGES.get(key, 0.0)
        number = _number(source, f"thresholds.{key}", value, integer=integer, minimum=minimum)
        if not integer and number <= 0:
            raise ConfigError(source, f"thresholds.{key}", "a number > 0", repr(value))
        checked[key] = number
    thresholds = Thresholds(**checked)  # type: ignore[arg-type]
    _refuse_outputs_in_tables(source, resolved)
    return PipelineConfig(
        source=source,
        probe_set=probe_path,
        nccl_logs=tuple(logs),
        ingest_workers=int(workers),
        retention=retention,
        thresholds=thresholds,
        **resolved,
    )


def load_config(path: str | os.PathLike) -> PipelineConfig:
    """Load and validate the pipeline config YAML at `path`."""
    source = str(path)
    try:
        text = read_regular_text(path, "a pipeline config file")
    except FileNotFoundError:
        raise ConfigError(source, None, "a pipeline config file", "no such file") from None
    except IsADirectoryError:
        raise ConfigError(source, None, "a readable YAML file", "a directory") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, None, "a readable YAML file", not_text(exc)) from None
    except OSError as exc:  # EACCES, ENAMETOOLONG, ELOOP, EIO...: a task's log says which, in one line
        raise ConfigError(source, None, "a readable YAML file", exc.strerror or type(exc).__name__) from None
    try:
        data = yamlio.safe_load(text, source)
    except yamlio.YamlContentError as exc:
        raise ConfigError(source, None, exc.expected, exc.found) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"invalid YAML at line {mark.line + 1}" if mark else "invalid YAML"
        raise ConfigError(source, None, "valid YAML", where) from None
    config = config_from_dict(data, source, Path(path).resolve().parent)
    _refuse_overwriting(source, Path(path), config)
    return config


# the paths the pipeline's tasks write (each a file or a directory of their outputs)
OUTPUT_KEYS = ("quarantine", "findings", "reports", "model", "expected_errors")


def _refuse_outputs_in_tables(source: str, resolved: dict[str, Path]) -> None:
    """An output at the dataset itself or inside one of its tables (`findings: dataset/events`):
    the published run's files landed among the events, and every later reader of that table
    took them for part files. Inside the dataset directory, beside the tables, is the default."""
    from baseline.pipeline.layout import among_tables

    for key in OUTPUT_KEYS:
        out = Path(os.path.abspath(resolved[key]))
        if (where := among_tables(resolved["dataset"], out)) is not None:
            raise ConfigError(source, f"paths.{key}", "a path outside the dataset's tables", f"{out} ({where})")


def _refuse_overwriting(source: str, config_path: Path, config: PipelineConfig) -> None:
    """An output path that is the config file itself (`model: pipeline.yaml`): the baseline
    refresh wrote the model over the config, and the next run could not load it."""
    here = Path(os.path.abspath(config_path))
    for key in OUTPUT_KEYS:
        out = Path(os.path.abspath(getattr(config, key)))
        if out == here or (out.exists() and here.exists() and os.path.samefile(out, here)):
            raise ConfigError(source, f"paths.{key}", "a path other than this config file", str(out))


def resolve_config_path(param: str | None = None) -> Path:
    """The config path from a DAG param, else the Airflow Variable, else $TRACEBASE_CONFIG."""
    if param:
        return _config_path(param, "the DAG param 'config'")
    try:  # only inside an Airflow task; the library and CLI never need Airflow
        from airflow.sdk import Variable

        value = Variable.get(VARIABLE_NAME, default=None)
    except Exception:  # noqa: BLE001 - no Airflow, no API server, or no such variable
        value = None
    value = value or os.environ.get(ENV_NAME)
    if not value:
        raise ConfigError(
            "<pipeline config>",
            "config",
            f"a config path in the DAG param 'config', the Airflow Variable '{VARIABLE_NAME}' or ${ENV_NAME}",
            "none set",
        )
    return _config_path(value, f"the Airflow Variable '{VARIABLE_NAME}' or ${ENV_NAME}")


def _config_path(value: object, where: str) -> Path:
    """`value` as a path, or ConfigError: a conf given to `airflow dags trigger -c` or a library
    caller may hand over a number, a list or a string with a NUL, which open() refuses with a
    TypeError/ValueError that names nothing."""
    if not isinstance(value, (str, os.PathLike)) or "\0" in os.fsdecode(value):
        raise ConfigError("<pipeline config>", "config", f"a config file path in {where}", repr(value)[:200])
    return Path(value)


def validated_config_path(param: str | None = None) -> str:
    """resolve_config_path + load_config: the first task of every DAG (a bad value fails the run
    with the key, expected and found values)."""
    path = resolve_config_path(param)
    load_config(path)
    return str(path)


def write_default_config(path: str | os.PathLike, root: str | os.PathLike) -> Path:
    """Write a config whose paths all live under `root` (for local runs and tests)."""
    root = Path(root)
    data = {
        "version": CONFIG_VERSION,
        "paths": {
            "spool": str(root / "spool"),
            "dataset": str(root / "dataset"),
            "quarantine": str(root / "quarantine"),
            "findings": str(root / "findings"),
            "reports": str(root / "reports"),
            "model": str(root / "model" / "baseline.parquet"),
            "expected_errors": str(root / "expected_errors.yaml"),
        },
        "retention": asdict(Retention()),
        "thresholds": asdict(Thresholds()),
    }
    return atomic.write_text(path, yaml.safe_dump(data, sort_keys=False))
