"""Second documentation-contract battery: docs/airflow.md and docs/architecture.md, written blind.

Every case turns one checkable sentence of docs/airflow.md or docs/architecture.md (cited as
file:line in each test) into a run of the tools as the docs show them: the documented commands
and Python recipes in a temporary directory on small simulated data (`baseline simulate --hosts 2
--hours 1`), the documented file layouts (dataset tables and partitions, closed days' day files,
`findings/<stamp>/...`, `LATEST`, report files, the ingest watermark, quarantine), the Parquet
footers and columns (read with pyarrow), the documented reader recipes (pandas, pyarrow, DuckDB,
polars), the config keys and their defaults, the refusals and exit statuses, the names the docs
cite (module, function, constant: they must exist where the doc says), and the DAGs' schedules,
tasks, retries, timeouts, assets and params (the DAG objects from Airflow's DagBag, and real runs
with `airflow dags test` / `dag.test()` against a throw-away SQLite AIRFLOW_HOME).

Written blind: the oracle is the documentation alone (docs/airflow.md, docs/architecture.md,
README.md, expected_errors.yaml, the --help texts); no code under baseline/, tracer/ or dags/ was
read to decide what is right. tests/test_docs_contract.py already checks README.md,
docs/diff-json.md and the --help texts; this module does not repeat it. Where the docs and the
tools disagree the case is `xfail(strict=True)` with the doc's words and what the tool did.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import glob
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow
import pyarrow.dataset
import pyarrow.parquet as pq
import pytest
from recent_data import recent_start

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BASELINE = str(BIN / "baseline")
TRACER = str(BIN / "tracer")
AIRFLOW = str(BIN / "airflow")
PY = sys.executable
DAGS = REPO / "dags"
DAG_IDS = ("trace_ingest", "baseline_audit", "probe_coverage_weekly")


# ----------------------------------------------------------------------------- helpers


def _env(**extra):
    env = dict(os.environ)
    env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    for k in list(env):   # the suite's conftest sets Airflow's unit-test mode: not what users run
        if k.startswith(("AIRFLOW", "TRACEBASE_")):
            env.pop(k)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(argv, cwd=None, timeout=240, env=None, **kw):
    return subprocess.run(
        argv if isinstance(argv, str) else [str(a) for a in argv], cwd=cwd, env=env or _env(), capture_output=True, text=True,
        timeout=timeout, **kw,
    )


def ok(argv, **kw):
    p = run(argv, **kw)
    assert p.returncode == 0, f"{argv}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p


def one_line_error(p):
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-2000:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return lines[0]


def simulate(out, *extra, hosts=2, hours=1):
    ok([BASELINE, "simulate", "--hosts", hosts, "--hours", hours, "--out", out, *extra])
    return Path(out)


_TEMPLATE: dict = {}


def trial(tmp: Path, real=False):
    """docs/airflow.md:211-213: spool with recent timestamps + the default config (a copy of
    one made at the session's start unless `real`)."""
    if not real:
        shutil.copytree(_TEMPLATE["dir"], tmp, dirs_exist_ok=True, symlinks=True,
                        ignore=shutil.ignore_patterns(".built"))
        return tmp / "pipeline.yaml"
    ok([BASELINE, "simulate", "--hosts", 2, "--hours", 1, "--start", recent_start(2), "--spool", "--out", "."], cwd=tmp)
    ok([PY, "-c", 'from baseline.pipeline.config import write_default_config as w; w("pipeline.yaml", ".")'], cwd=tmp)
    return tmp / "pipeline.yaml"


def iso_week(when=None):
    year, week = (when or dt.datetime.now(dt.UTC)).isocalendar()[:2]
    return f"{year}-W{week:02d}"


def footer(path):
    md = pq.read_metadata(path).metadata or {}
    return {k.decode(): v.decode("utf-8", "replace") for k, v in md.items() if k != b"ARROW:schema"}


def nrows(files):
    return sum(pq.read_metadata(f).num_rows for f in files)


def table_files(ds, table):
    return sorted(glob.glob(f"{ds}/{table}/**/*.parquet", recursive=True))


def py(code, cwd, timeout=240, env=None):
    return ok([PY, "-c", code], cwd=cwd, timeout=timeout, env=env)


def set_in_yaml(path: Path, replacements: dict):
    text = path.read_text()
    for old, new in replacements.items():
        assert old in text, (old, text)
        text = text.replace(old, new)
    path.write_text(text)


def snapshots(spool: Path):
    return sorted(p for p in spool.glob("*/snap-*") if p.is_dir())


def _shared(tmp_path_factory, name, build):
    """Build an expensive fixture once per session, shared by the xdist workers (flock)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    target = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if not (target / ".built").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            (target / ".built").write_text("ok")
    return target


# ----------------------------------------------------------------------------- shared data


@pytest.fixture(scope="session", autouse=True)
def _trial_template(tmp_path_factory):
    _TEMPLATE["dir"] = _shared(tmp_path_factory, "trial", lambda d: trial(d, real=True))


@pytest.fixture(scope="session")
def sim_ds(tmp_path_factory):
    """A simulated dataset (default start 2026-11-28), read-only for the tests."""
    def build(d):
        simulate(d / "ds")
    return _shared(tmp_path_factory, "sim", build) / "ds"


@pytest.fixture(scope="session")
def day_ds(tmp_path_factory):
    """A closed day ingested from a spool and compacted across hosts (thresholds 2 days)."""
    def build(d):
        simulate(d / "sp", "--spool")
        ok([BASELINE, "ingest", d / "sp" / "spool", d / "ds", "--quarantine", d / "q"])
        ok([BASELINE, "ingest", d / "sp" / "spool", d / "ds", "--quarantine", d / "q", "--compact-days-after", 2])
    return _shared(tmp_path_factory, "day", build) / "ds"


@pytest.fixture(scope="session")
def pipeline_run(tmp_path_factory):
    """The docs/airflow.md:179-188 recipe run once on trial data (read-only for the tests)."""
    def build(d):
        trial(d)
        week = iso_week()
        res = py(
            "import json\n"
            "from baseline.pipeline.config import load_config\n"
            "from baseline.pipeline import tasks as pipeline\n"
            "cfg = load_config('pipeline.yaml')\n"
            "out = {}\n"
            "out['ingest'] = pipeline.ingest_once(cfg); out['tidy'] = pipeline.tidy(cfg)\n"
            "out['refresh_baseline'] = pipeline.refresh_baseline(cfg); out['refresh_expected'] = pipeline.refresh_expected(cfg)\n"
            "out['publish'] = pipeline.publish_findings(cfg, pipeline.audit_new_failures(cfg))\n"
            f"out['coverage'] = pipeline.weekly_coverage(cfg, week={week!r})\n"
            "out['cfg'] = cfg.to_dict()\n"
            "open('result.json', 'w').write(json.dumps(out, default=str))\n",
            cwd=d,
        )
        assert res.returncode == 0
        (d / "week").write_text(week)
    return _shared(tmp_path_factory, "pipeline", build)


AIRFLOW_SCRIPT = r'''
import json, os, shutil, sys
from airflow.dag_processing.dagbag import DagBag
work = sys.argv[1]
good = os.path.join(work, "pipeline.yaml")
bad = os.path.join(work, "bad.yaml")
week = open(os.path.join(work, "week")).read()
bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
res = {}
if sys.argv[2:] == ["variables"]:
    res = json.load(open(os.path.join(work, "airflow_result.json")))
def go(name, did, conf, env=None):
    saved = {k: os.environ.get(k) for k in ("TRACEBASE_CONFIG", "AIRFLOW_VAR_TRACEBASE_CONFIG")}
    for k in saved:
        os.environ.pop(k, None)
    os.environ.update(env or {})
    try:
        dr = bag.dags[did].test(run_conf=conf)
        tis = dr.get_task_instances()
        out = {"run": str(dr.state), "tasks": {t.task_id: str(t.state) for t in tis},
               "tries": {t.task_id: t.try_number for t in tis}, "xcom": {}}
        for t in tis:
            try:
                out["xcom"][t.task_id] = t.xcom_pull(task_ids=t.task_id)
            except Exception as e:
                out["xcom"][t.task_id] = "xcom error %r" % (e,)
    except Exception as e:
        out = {"run": "exception %r" % (e,)}
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
    res[name] = out
    json.dump(res, open(os.path.join(work, "airflow_result.json"), "w"), default=str)
if sys.argv[2:] == ["variables"]:
    # a process of its own: a Variable looked up once (found or not) is not looked up again
    # in the same process, so the Variable is set here before any run reads it
    go("env_loses_to_variable", "probe_coverage_weekly", {"week": week},
       {"AIRFLOW_VAR_TRACEBASE_CONFIG": bad, "TRACEBASE_CONFIG": good})
    go("param_over_variable", "probe_coverage_weekly", {"config": good, "week": week},
       {"AIRFLOW_VAR_TRACEBASE_CONFIG": bad})
    sys.exit(0)
go("ingest_nothing_new", "trace_ingest", {"config": good})
shutil.copytree(os.path.join(work, "more", "spool"), os.path.join(work, "spool"), dirs_exist_ok=True)
go("ingest_new_rows", "trace_ingest", {"config": good})
go("audit", "baseline_audit", {"config": good})
go("bad_config", "trace_ingest", {"config": bad})
go("weekly_default_week", "probe_coverage_weekly", {"config": good})
# the config's path: param, else Variable, else $TRACEBASE_CONFIG
go("env_only", "probe_coverage_weekly", {"week": week}, {"TRACEBASE_CONFIG": good})
'''


def _airflow_build(d):
    """docs/airflow.md:193-197 as shown (db migrate, `airflow dags test trace_ingest -c ...`),
    then the three DAGs run with dag.test() on the same trial data and AIRFLOW_HOME."""
    work = d / "trial"
    work.mkdir()
    cfg = trial(work)
    bad = work / "bad.yaml"
    bad.write_text(cfg.read_text().replace("dataset_days: 90", "dataset_days: ninety"))
    simulate(work / "more", "--spool", "--seed", 1, "--start", recent_start(1))
    (work / "week").write_text(iso_week())
    home = d / "airflow_home"
    home.mkdir()
    env = _env(AIRFLOW_HOME=home, AIRFLOW__CORE__DAGS_FOLDER=DAGS, AIRFLOW__CORE__LOAD_EXAMPLES="False")
    p = run([AIRFLOW, "db", "migrate"], env=env, cwd=REPO, timeout=300)
    (d / "migrate.log").write_text(p.stdout + p.stderr)
    (d / "migrate.rc").write_text(str(p.returncode))
    p = run([AIRFLOW, "dags", "test", "trace_ingest", "-c", json.dumps({"config": str(cfg)})],
            env=env, cwd=REPO, timeout=300)
    (d / "dagstest.log").write_text(p.stdout + p.stderr)
    (d / "dagstest.rc").write_text(str(p.returncode))
    (d / "watermark_after_cli.json").write_text(
        (work / "dataset" / "_ingest_watermark.json").read_text()
        if (work / "dataset" / "_ingest_watermark.json").exists() else "null")
    p = run([PY, "-c", AIRFLOW_SCRIPT, work], env=env, cwd=REPO, timeout=400)
    (d / "script.log").write_text(p.stdout + p.stderr)
    p = run([PY, "-c", AIRFLOW_SCRIPT, work, "variables"], env=env, cwd=REPO, timeout=300)
    (d / "script_variables.log").write_text(p.stdout + p.stderr)


def _shared_root(tmp_path_factory):
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def _start_airflow(tmp_path_factory, background):
    """Start the Airflow runs once per session (a thread of the first worker to ask, so both
    workers go on with other cases meanwhile); returns the thread it started, if any."""
    root = _shared_root(tmp_path_factory)
    target = root / "shared-airflow"
    with open(root / "shared-airflow.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if target.exists():
            return None
        target.mkdir()

        def work():
            try:
                _airflow_build(target)
            finally:
                (target / ".built").write_text("ok")
        if not background:
            work()
            return None
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread


@pytest.fixture(scope="session", autouse=True)
def _airflow_background(request, tmp_path_factory, _trial_template):
    wanted = any("airflow_run" in getattr(item, "fixturenames", ()) for item in request.session.items)
    thread = _start_airflow(tmp_path_factory, background=True) if wanted else None
    yield
    if thread is not None:
        thread.join(timeout=900)


@pytest.fixture(scope="session")
def airflow_run(tmp_path_factory):
    _start_airflow(tmp_path_factory, background=False)
    target = _shared_root(tmp_path_factory) / "shared-airflow"
    deadline = time.monotonic() + 900
    while not (target / ".built").exists():
        assert time.monotonic() < deadline, "the Airflow runs did not finish in 15 minutes"
        time.sleep(0.5)
    return target


def _result(airflow_run, name):
    res = json.loads((airflow_run / "trial" / "airflow_result.json").read_text())
    assert name in res, (name, (airflow_run / "script.log").read_text()[-3000:])
    return res[name]


_DAGS_CODE = r'''
import json, os, sys, datetime
from airflow.dag_processing.dagbag import DagBag
folder = os.environ["AIRFLOW__CORE__DAGS_FOLDER"]
KEYS = ("_RJEM_MALLOC_CONF", "OPENBLAS_NUM_THREADS")
parse = {}
for f in ("trace_ingest.py", "baseline_audit.py", "probe_coverage_weekly.py"):
    for k in KEYS:
        os.environ.pop(k, None)
    DagBag(dag_folder=os.path.join(folder, f))
    parse[f] = {k: os.environ.get(k) for k in KEYS}
os.environ["_RJEM_MALLOC_CONF"] = "dirty_decay_ms:5000"
os.environ["OPENBLAS_NUM_THREADS"] = "3"
DagBag(dag_folder=os.path.join(folder, "baseline_audit.py"))
parse["user"] = {k: os.environ.get(k) for k in KEYS}
bag = DagBag(dag_folder=folder)
def s(x):
    return x.total_seconds() if isinstance(x, datetime.timedelta) else (None if x is None else str(x))
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {}, "parse": parse}
for did, d in bag.dags.items():
    tt = d.timetable
    inner = getattr(tt, "timetable", None)
    out["dags"][did] = {
        "timetable": type(tt).__name__,
        "delta": s(getattr(tt, "delta", None)),
        "expression": getattr(tt, "expression", None) or getattr(inner, "expression", None) or getattr(inner, "_expression", None),
        "timezone": str(getattr(tt, "timezone", None) or getattr(inner, "timezone", None) or getattr(inner, "_timezone", None)),
        "inner": type(inner).__name__ if inner is not None else None,
        "asset_condition": repr(getattr(tt, "asset_condition", None)),
        "max_active_runs": d.max_active_runs, "catchup": d.catchup,
        "dagrun_timeout": s(d.dagrun_timeout), "doc_md": d.doc_md, "paused": d.is_paused_upon_creation,
        "fileloc": d.fileloc,
        "params": {k: {"value": d.params.get_param(k).value, "description": d.params.get_param(k).description} for k in d.params},
        "tasks": {t.task_id: {"retries": t.retries, "timeout": s(t.execution_timeout),
                              "upstream": sorted(t.upstream_task_ids), "doc_md": t.doc_md,
                              "outlets": [getattr(o, "name", repr(o)) for o in t.outlets]} for t in d.tasks},
    }
from airflow.configuration import conf
out["paused_at_creation"] = conf.getboolean("core", "dags_are_paused_at_creation")
json.dump(out, open(sys.argv[1], "w"))
'''


@pytest.fixture(scope="session")
def dags(tmp_path_factory):
    """The DAG objects as Airflow's DagBag parses them (a subprocess with its own AIRFLOW_HOME,
    each DAG file also parsed alone first, for what parsing it sets in the environment)."""
    def build(d):
        (d / "home").mkdir()
        env = _env(AIRFLOW_HOME=d / "home", AIRFLOW__CORE__DAGS_FOLDER=DAGS, AIRFLOW__CORE__LOAD_EXAMPLES="False")
        ok([PY, "-c", _DAGS_CODE, d / "dags.json"], env=env, cwd=d, timeout=300)
    return json.loads((_shared(tmp_path_factory, "dags", build) / "dags.json").read_text())


# ============================================================================= names the docs cite

NAMES = [
    # docs/airflow.md:3-6
    ("baseline.pipeline.tasks", None), ("baseline.pipeline.ingest", None), ("baseline.fleet.model", None),
    ("baseline.fleet.expected", None), ("baseline.fleet.audit", None), ("baseline.pipeline.coverage", None),
    ("baseline.pipeline.allocator", None),
    # docs/airflow.md:180-187
    ("baseline.pipeline.config", "load_config"), ("baseline.pipeline.config", "write_default_config"),
    ("baseline.pipeline.tasks", "ingest_once"), ("baseline.pipeline.tasks", "tidy"),
    ("baseline.pipeline.tasks", "refresh_baseline"), ("baseline.pipeline.tasks", "refresh_expected"),
    ("baseline.pipeline.tasks", "publish_findings"), ("baseline.pipeline.tasks", "audit_new_failures"),
    ("baseline.pipeline.tasks", "weekly_coverage"),
    # docs/architecture.md (data model and dataset layout)
    ("tracer.schema", "HIVE_KEYS"), ("tracer.schema", "DAY_TABLES"), ("tracer.schema", "COUNTER_BUCKETS"),
    ("tracer.schema", "_check_stored_partition_values"), ("tracer.schema", "check_counts"),
    ("tracer.schema", "SNAPSHOT_KEY"), ("tracer.schema", "RECORD_KEY"), ("tracer.schema", "counted_delta"),
    ("tracer.schema", "EVENT_VALUE_RULES"), ("tracer.schema", "COUNT_LIMIT"), ("tracer.schema", "UTC_ZONES"),
    ("tracer.schema", "write_table"), ("tracer.schema", "write_table_batches"), ("tracer.schema", "encoding_options"),
    ("tracer.schema", "validate_ranges"), ("tracer.schema", "scan"), ("tracer.schema", "read_events"),
    ("tracer.schema", "validate_file"), ("tracer.schema", "traces_of"), ("tracer.schema", "snapshot_order"),
    ("tracer.schema", "read"), ("tracer.schema", "CUT_OFF_KEY"), ("tracer.schema", "first_frame_metadata"),
    ("tracer.schema", "trace_metadata_summary"),
    ("tracer.atomic", "dataset_lock"), ("tracer.atomic", "staged_dir"), ("tracer.atomic", "staged_merge"),
    ("tracer.atomic", "output_dirs"), ("tracer.atomic", "abandon_pending"), ("tracer.atomic", "_forget_pending"),
    ("tracer.atomic", "_named"),
    ("tracer.pools", "process_pool"), ("tracer.pools", "thread_pool"),
    ("tracer.cli.common", "_hear_again"), ("tracer.cli.common", "STOP_GRACE_S"), ("tracer.cli.common", "exit_process"),
    ("tracer.cli.common", "output_path"), ("tracer.cli.common", "min_address_space_mib"),
    ("tracer.cli.common", "library_threads"), ("tracer.cli.common", "_parse_intermixed_with_separator"),
    ("tracer.inputs", "refuse_overwriting_inputs"), ("tracer.inputs", "not_text"),
    ("tracer.inputs", "_refuse_second_names"), ("tracer.inputs", "_refuse_misnamed_dates"),
    ("tracer.fleet.options", "HOST_NAME"), ("tracer.fleet.program", "open_files_needed"),
    ("tracer.fleet.program", "FleetProgram"), ("tracer.record.metadata_keys", "RECORDER_KEYS"),
    ("tracer.privilege", "compiler_locale"), ("tracer.units", "parse_time"), ("tracer.units", "naive_time_note"),
    ("tracer.errors", "TracebaseError"),
    ("tracer.startup", None), ("tracer.limits", None), ("tracer.yamlio", None), ("tracer.btf", None),
    ("tracer.errnos", None), ("tracer.resources", None),
    ("tracer.record.ringbuf", None), ("tracer.record.decode", None), ("tracer.record.fdtable", None),
    ("tracer.fleet.probes", None), ("tracer.fleet.daemon", None), ("tracer.fleet.spool", None), ("tracer.fleet.prom", None),
    ("baseline.pipeline.layout", "among_tables"), ("baseline.pipeline.config", "_refuse_overwriting"),
    ("baseline.pipeline.config", "_refuse_outputs_in_tables"), ("baseline.pipeline.tasks", "one_line_failure"),
    ("baseline.pipeline.ingest", "compact_dataset"), ("baseline.pipeline.ingest", "compact_days"),
    ("baseline.pipeline.nccl", None), ("baseline.pipeline.suggest", None),
    ("baseline.cli", "COMMANDS"),
    ("baseline.fleet.model", "GoodTraceBaseline"), ("baseline.fleet.model", "collect_traces"),
    ("baseline.fleet.model", "event_batches"), ("baseline.fleet.model", "host_qualified_ids"),
    ("baseline.fleet.model", "_ids_name_their_host"), ("baseline.fleet.model", "own_trace_ids"),
    ("baseline.fleet.model", "without_repeated_records"), ("baseline.fleet.model", "checked_values"),
    ("baseline.fleet.model", "trace_table_columns"), ("baseline.fleet.model", "trace_flags"),
    ("baseline.fleet.model", "job_metadata"), ("baseline.fleet.model", "trace_metadata"),
    ("baseline.fleet.model", "collected_ahead"),
    ("baseline.fleet.counters", "split_cell_attributes"), ("baseline.fleet.counters", "cell_attributes"),
    ("baseline.fleet.counters", "impossible_counts"),
    ("baseline.fleet.audit", "analyse_traces"), ("baseline.fleet.latency", None),
    ("baseline.fleet.report", None), ("baseline.fleet.evaluate", None),
    ("baseline.run.diff", "_beyond_cut_off"), ("baseline.run.rules.processes", "_Teardowns"),
    ("baseline.run.rules.processes", "_lost_children"), ("baseline.run.rules.files", "ENVIRONMENT_DATA"),
    ("baseline.run.rules.files", "_warm_caches_refilled_by_children"),
    ("baseline.run.rules.waits", None), ("baseline.run.rules.blame", None),
    ("baseline.run.normalize", "background"), ("baseline.run.normalize", "read_ahead_for_prepare"),
    ("baseline.run.normalize", "NameTemplates"), ("baseline.run.normalize", "HEX_SPAN"),
    ("baseline.run.native", "read_dictionary_chunk"), ("baseline.run.native", "read_int_dictionary_chunk"),
    ("baseline.run.allowlist", "load_fallbacks"),
    ("baseline.run.traces", "command_identity"), ("baseline.run.traces", "check_failures_only"),
    ("baseline.run.align", None), ("baseline.run.report", None),
    ("baseline.export", None), ("baseline.demo", None), ("baseline.simulator", None),
]


@pytest.mark.parametrize(("module", "name"), NAMES, ids=[f"{m}.{n}" if n else m for m, n in NAMES])
def test_cited_name_exists(module, name):
    """docs/airflow.md:3-6,180-187 and docs/architecture.md passim: each cited name exists there."""
    mod = importlib.import_module(module)
    if name:
        # at the module's top, or inside a class the module defines (the doc names the file)
        owners = [mod] + [v for v in vars(mod).values()
                          if isinstance(v, type) and v.__module__ == mod.__name__]
        assert any(name in vars(o) for o in owners), f"{module} has no {name}"


def test_cited_constants_have_documented_values():
    """docs/architecture.md: STOP_GRACE_S 0.5 s (:1024), COUNT_LIMIT 2^50 (:149),
    DAY_COMPACTION_BUDGET_S 300 s (:59), CUT_OFF_KEY cut_off_tids (:921), RECORDER_KEYS (:924),
    SNAPSHOT_KEY host, probe, snapshot_time (:121), RECORD_KEY host, trace id, frame (:131),
    DAY_TABLES the events (:47), UTC by other names (:1003-1004), host names <= 250 chars (:113-114)."""
    import baseline.pipeline.ingest as ingest
    import tracer.cli.common as common
    import tracer.fleet.options as options
    import tracer.record.metadata_keys as mk
    import tracer.schema as schema

    assert common.STOP_GRACE_S == 0.5
    assert schema.COUNT_LIMIT == 2**50
    assert ingest.DAY_COMPACTION_BUDGET_S == 300
    assert schema.CUT_OFF_KEY == "cut_off_tids"
    assert {"argv", "cwd", "failures_only", "cut_off_tids"} <= set(mk.RECORDER_KEYS)
    assert tuple(schema.SNAPSHOT_KEY) == ("host", "probe", "snapshot_time")
    key = tuple(schema.RECORD_KEY)
    assert key[:2] == ("host", "trace_id") and len(key) == 3
    assert set(schema.DAY_TABLES) == {"events"}
    assert {"UTC", "Etc/UTC", "GMT", "+00:00"} <= set(schema.UTC_ZONES)
    pat = options.HOST_NAME
    match = pat.match if hasattr(pat, "match") else re.compile(str(pat)).match
    assert match("a" * 250) and not match("a" * 251)


def test_hive_keys_date32_and_string():
    """docs/airflow.md:115-116: `tracer.schema.HIVE_KEYS`: date `date32`, host `string`."""
    import tracer.schema as schema
    keys = schema.HIVE_KEYS
    assert keys.field("date").type == pyarrow.date32()
    assert keys.field("host").type == pyarrow.string()


def test_abandoned_after_is_an_hour():
    """docs/airflow.md:79: `ABANDONED_AFTER_S` (an hour). The doc names no module: looked up in
    the ingest module, where the sentence is about."""
    import baseline.pipeline.ingest as ingest
    assert float(ingest.ABANDONED_AFTER_S) == 3600


def test_commands_registry_covers_every_command():
    """docs/architecture.md:1202: `baseline CMD ...` builds the parser of CMD's module alone
    (`baseline.cli.COMMANDS`)."""
    import baseline.cli
    for cmd in ("diff", "allowlist", "simulate", "learn", "audit", "evaluate", "export", "ingest",
                "coverage", "suggest-probes"):
        assert cmd in baseline.cli.COMMANDS, cmd


def test_public_function_names_wrong_argument():
    """docs/architecture.md:1200-1201: public library functions name a wrong argument
    (`paths: expected a path or an iterable of paths, found NoneType`)."""
    import tracer.schema as schema
    with pytest.raises(Exception) as e:
        schema.read(None, "events")
    assert "paths: expected a path or an iterable of paths, found NoneType" in str(e.value)


def test_user_errors_are_tracebase_errors(tmp_path):
    """docs/architecture.md:1190: errors a user can fix are `tracer.errors.TracebaseError`
    (a bad config value, docs/airflow.md:20-22)."""
    from baseline.pipeline.config import load_config
    from tracer.errors import TracebaseError
    p = tmp_path / "c.yaml"
    p.write_text("version: 1\nretention: {dataset_days: ninety}\n")
    with pytest.raises(TracebaseError):
        load_config(str(p))


CITED_FILES = [
    "tests/test_ingest_kill.py", "tests/test_dags.py", "tests/test_dataset_readers.py",          # airflow.md:49,191; architecture.md:72
    "bench/coverage_pipeline.py", "baseline/pipeline/config.py", "baseline/pipeline/layout.py",  # airflow.md:301,18,166
    "bpf/probes/rdma.yaml", "uv.lock", "bench/bench_start.py", "bench/bench_record.py",          # airflow.md:161,280; architecture.md:831,854
    "bench/bench_fleet.py", "bench/diff_memory.py", "baseline/run/_hotloops.c", "hatch_build.py",
    "scripts/setup.sh", "fallback_calls.yaml", "tests/test_audit_overlap.py", "tests/test_bpf_compile.py",
    "tests/test_audit.py", "bpf/syscall_recorder.c", "bpf/calltree.c", "tests/c/fakeverbs.c",
    "tracer/limits.py", ".ci/run", "Makefile", "tests/test_native.py", "tests/test_diff_pages.py",
]


@pytest.mark.parametrize("rel", CITED_FILES)
def test_cited_file_exists(rel):
    """docs/airflow.md and docs/architecture.md name these files (tests, benches, sources)."""
    assert (REPO / rel).exists(), rel


def test_pinned_versions():
    """docs/airflow.md:280-282: Python 3.11 with `apache-airflow==3.3.2`, from `uv.lock`."""
    from importlib.metadata import version
    assert sys.version_info[:2] == (3, 11)
    assert version("apache-airflow") == "3.3.2"
    lock = (REPO / "uv.lock").read_text()
    assert re.search(r'name = "apache-airflow"\nversion = "3\.3\.2"', lock)


def test_import_layers_kept():
    """docs/architecture.md:1086-1109: layers checked by `lint-imports` (contracts in
    pyproject.toml): dags import only baseline.pipeline; baseline imports tracer, never the
    reverse; no import cycles between siblings."""
    p = ok([str(BIN / "lint-imports"), "--no-cache"], cwd=REPO, timeout=300)
    assert re.search(r"Contracts: \d+ kept, 0 broken", p.stdout), p.stdout[-2000:]
    text = p.stdout.lower()
    assert "dag" in text and "cycle" in text


# ============================================================================= DAGs (DagBag)


def test_three_dags_import_cleanly(dags):
    """docs/airflow.md:3,10-14: three DAGs in dags/, one file each."""
    assert dags["errors"] == {}
    assert set(dags["dags"]) == set(DAG_IDS)
    for did in DAG_IDS:
        assert Path(dags["dags"][did]["fileloc"]).parent == DAGS


def test_trace_ingest_every_5_minutes(dags):
    """docs/airflow.md:12: `trace_ingest` | every 5 minutes."""
    d = dags["dags"]["trace_ingest"]
    assert d["delta"] == 300 or d["expression"] in ("*/5 * * * *",), d


def test_baseline_audit_hourly_or_asset(dags):
    """docs/airflow.md:13: hourly **or** when `tracebase_dataset` updates (`AssetOrTimeSchedule`)."""
    d = dags["dags"]["baseline_audit"]
    assert d["timetable"] == "AssetOrTimeSchedule"
    assert d["expression"] in ("0 * * * *", "@hourly"), d
    assert "tracebase_dataset" in d["asset_condition"]


def test_probe_coverage_weekly_monday_midnight_utc_interval(dags):
    """docs/airflow.md:14: Monday 00:00 UTC (its data interval is the ISO week that just ended)."""
    d = dags["dags"]["probe_coverage_weekly"]
    assert d["expression"] == "0 0 * * 1"
    assert d["timezone"] == "UTC"
    assert d["timetable"] == "CronDataIntervalTimetable"   # data interval: the week before the run


TASKS = {
    "trace_ingest": {"validate_config": set(), "ingest": {"validate_config"},
                     "compact_and_expire": {"ingest"}, "announce_new_data": {"ingest"}},
    "baseline_audit": {"validate_config": set(), "refresh_baseline": {"validate_config"},
                       "refresh_expected": {"validate_config"},
                       "audit": {"refresh_baseline", "refresh_expected"}, "publish": {"audit"},
                       # (round forty-seven: beside publish, skipped unless the audit met stale summaries)
                       "refresh_summaries": {"audit"}},
    "probe_coverage_weekly": {"validate_config": set(), "coverage_report": {"validate_config"}},
}


@pytest.mark.parametrize("did", DAG_IDS)
def test_task_graph(dags, did):
    """docs/airflow.md:12-14: the tasks and their order (`validate_config` -> ...)."""
    tasks = dags["dags"][did]["tasks"]
    assert set(tasks) == set(TASKS[did])
    for tid, ups in TASKS[did].items():
        assert ups <= set(tasks[tid]["upstream"]), (tid, tasks[tid]["upstream"])
        if tid != "validate_config":
            assert "validate_config" in tasks[tid]["upstream"] or ups


def test_assets_outlets(dags):
    """docs/airflow.md:12-13: `announce_new_data` updates `tracebase_dataset`; publishing
    updates `tracebase_findings`."""
    ti = dags["dags"]["trace_ingest"]["tasks"]
    assert ti["announce_new_data"]["outlets"] == ["tracebase_dataset"]
    ba = dags["dags"]["baseline_audit"]["tasks"]
    assert ba["publish"]["outlets"] == ["tracebase_findings"]


@pytest.mark.parametrize("did", DAG_IDS)
def test_data_tasks_retry_twice_validate_config_never(dags, did):
    """docs/airflow.md:86-87: the DAGs retry their data tasks twice (not `validate_config`)."""
    tasks = dags["dags"][did]["tasks"]
    assert tasks["validate_config"]["retries"] == 0
    data = {"trace_ingest": ("ingest", "compact_and_expire"),
            "baseline_audit": ("refresh_baseline", "refresh_expected", "audit", "publish"),
            "probe_coverage_weekly": ("coverage_report",)}[did]
    for tid in data:
        assert tasks[tid]["retries"] == 2, tid


@pytest.mark.parametrize(("did", "task_s", "run_s"), [
    ("trace_ingest", 20 * 60, 3600), ("baseline_audit", 45 * 60, 2 * 3600),
    ("probe_coverage_weekly", 2 * 3600, 6 * 3600)])
def test_timeouts(dags, did, task_s, run_s):
    """docs/airflow.md:89-91: `execution_timeout` 20 min / 45 min / 2 h, `dagrun_timeout` 1 h / 2 h / 6 h."""
    d = dags["dags"][did]
    assert d["dagrun_timeout"] == run_s
    for tid, t in d["tasks"].items():
        assert t["timeout"] == task_s, tid


@pytest.mark.parametrize("did", [
    # (probe_coverage_weekly was a strict xfail when written: Airflow's default of 16 runs)
    "trace_ingest", "baseline_audit", "probe_coverage_weekly",
])
def test_one_run_at_a_time(dags, did):
    """docs/airflow.md:88 (each DAG runs one run at a time) and :276 (`max_active_runs=1`)."""
    assert dags["dags"][did]["max_active_runs"] == 1


def test_catchup_off_and_new_dags_paused(dags):
    """docs/airflow.md:240: New DAGs start paused and `catchup` is off."""
    for did in DAG_IDS:
        d = dags["dags"][did]
        assert d["catchup"] is False
        assert d["paused"] is True or (d["paused"] is None and dags["paused_at_creation"] is True)


def test_doc_md_and_param_descriptions(dags):
    """docs/airflow.md:92-93: the DAGs' and tasks' docs (`doc_md`) and each param's description."""
    for did in DAG_IDS:
        d = dags["dags"][did]
        assert d["doc_md"] and d["doc_md"].strip()
        for tid, t in d["tasks"].items():
            assert t["doc_md"] and t["doc_md"].strip(), (did, tid)
        for name, p in d["params"].items():
            assert p["description"], (did, name)


def test_params_config_and_week(dags):
    """docs/airflow.md:19 (DAG param `config` on all three), :14,219 (the `week` param of
    probe_coverage_weekly)."""
    for did in DAG_IDS:
        assert "config" in dags["dags"][did]["params"], did
    assert "week" in dags["dags"]["probe_coverage_weekly"]["params"]


def _jemalloc_opts(conf):
    opts = {}
    for item in (conf or "").split(","):   # jemalloc reads left to right: the last one wins
        if ":" in item:
            k, v = item.split(":", 1)
            opts[k] = v
    return opts


@pytest.mark.parametrize("dag_file", ["trace_ingest.py", "baseline_audit.py", "probe_coverage_weekly.py"])
def test_dag_file_sets_polars_allocator_and_openblas(dags, dag_file):
    """docs/airflow.md:6-8: each DAG file sets polars' allocator (freed pages returned after
    100 ms, not kept); docs/architecture.md:1177-1179: and holds OpenBLAS to one thread."""
    env = dags["parse"][dag_file]
    opts = _jemalloc_opts(env["_RJEM_MALLOC_CONF"])
    assert opts.get("dirty_decay_ms") == "100"
    assert opts.get("muzzy_decay_ms") == "0"
    assert env["OPENBLAS_NUM_THREADS"] == "1"


def test_workers_rjem_malloc_conf_and_openblas_still_win(dags):
    """docs/airflow.md:8: `_RJEM_MALLOC_CONF` in the workers' environment still wins;
    docs/architecture.md:1179: a user's `OPENBLAS_NUM_THREADS` wins."""
    env = dags["parse"]["user"]
    assert _jemalloc_opts(env["_RJEM_MALLOC_CONF"])["dirty_decay_ms"] == "5000"
    assert env["OPENBLAS_NUM_THREADS"] == "3"


# ============================================================================= config


DOC_CONFIG = """\
version: 1
paths:
  spool: {t}/spool            # where `tracer run` writes 5 s snapshots
  dataset: {t}/dataset        # <table>/date=YYYY-MM-DD/host=<host>/part-*.parquet
  quarantine: {t}/quarantine  # unreadable files + <file>.reason
  findings: {t}/findings      # <stamp>/{{findings,clusters,host_alerts}}.parquet, report.html + LATEST
  reports: {t}/reports        # <ISO week>/report.{{html,md}} + coverage_*.parquet
  model: {t}/model/baseline.parquet
  expected_errors: {t}/expected_errors.yaml
probe_set: {repo}/bpf/probes/rdma.yaml   # optional
nccl_logs: ["{t}/logs/nccl/*.log"]              # optional: application-labelled failures
retention: {{dataset_days: 90, quarantine_days: 30, findings_days: 30}}
thresholds:
  compact_min_files: 8
  compact_small_file_mb: 16
  compact_days_after: 2            # a closed day's events compacted across hosts (0: never)
  audit_window_hours: 2
  baseline_window_days: 7
  trend_change_pct: 25
"""

DOC_VALUES = {
    "retention": {"dataset_days": 90, "quarantine_days": 30, "findings_days": 30},
    "thresholds": {"compact_min_files": 8, "compact_small_file_mb": 16, "compact_days_after": 2,
                   "audit_window_hours": 2, "baseline_window_days": 7, "trend_change_pct": 25},
}


def test_documented_config_example_loads(tmp_path):
    """docs/airflow.md:24-44: the documented YAML (paths moved to a temp dir) is accepted as is."""
    from baseline.pipeline.config import load_config
    p = tmp_path / "pipeline.yaml"
    p.write_text(DOC_CONFIG.format(t=tmp_path, repo=REPO))
    d = load_config(str(p)).to_dict()
    for section, values in DOC_VALUES.items():
        for k, v in values.items():
            assert d[section][k] == v, (section, k, d[section][k])
    assert Path(d["dataset"]) == tmp_path / "dataset"
    assert Path(d["model"]) == tmp_path / "model" / "baseline.parquet"
    assert d["nccl_logs"] == [f"{tmp_path}/logs/nccl/*.log"]
    assert Path(d["probe_set"]) == REPO / "bpf" / "probes" / "rdma.yaml"


def test_optional_keys_and_documented_defaults(tmp_path):
    """docs/airflow.md:34-35 (probe_set, nccl_logs optional), :36-43 and docs/architecture.md:49
    (`thresholds.compact_days_after`, 2 days): a config with the paths only gets those values."""
    from baseline.pipeline.config import load_config
    text = DOC_CONFIG.format(t=tmp_path, repo=REPO).split("probe_set:")[0]
    p = tmp_path / "pipeline.yaml"
    p.write_text(text)
    d = load_config(str(p)).to_dict()
    assert not d["probe_set"] and not d["nccl_logs"]
    for section, values in DOC_VALUES.items():
        for k, v in values.items():
            assert d[section][k] == v, (section, k)


def test_write_default_config_has_documented_values(tmp_path):
    """docs/airflow.md:213 (`write_default_config("pipeline.yaml", ".")`) and :36-43."""
    from baseline.pipeline.config import load_config
    ok([PY, "-c", 'from baseline.pipeline.config import write_default_config as w; w("pipeline.yaml", ".")'],
       cwd=tmp_path)
    d = load_config(str(tmp_path / "pipeline.yaml")).to_dict()
    for section, values in DOC_VALUES.items():
        for k, v in values.items():
            assert d[section][k] == v
    for key in ("spool", "dataset", "quarantine", "findings", "reports"):
        assert Path(d[key]).parent == tmp_path, (key, d[key])


def test_bad_value_is_one_line_as_documented(tmp_path):
    """docs/airflow.md:20-22: `<path>: key 'retention.dataset_days': expected an integer >= 1 and
    <= 106751, found 'ninety' (str)`."""
    p = tmp_path / "pipeline.yaml"
    p.write_text(DOC_CONFIG.format(t=tmp_path, repo=REPO).replace("dataset_days: 90", "dataset_days: ninety"))
    r = run([PY, "-c", f"from baseline.pipeline.config import load_config\nload_config({str(p)!r})"])
    assert r.returncode != 0
    assert (f"{p}: key 'retention.dataset_days': expected an integer >= 1 and <= 106751, "
            "found 'ninety' (str)") in r.stderr


@pytest.mark.parametrize("value", ["0", "106752"])
def test_dataset_days_bounds(tmp_path, value):
    """docs/airflow.md:22: dataset_days is an integer >= 1 and <= 106751."""
    from baseline.pipeline.config import load_config
    from tracer.errors import TracebaseError
    p = tmp_path / "pipeline.yaml"
    p.write_text(DOC_CONFIG.format(t=tmp_path, repo=REPO).replace("dataset_days: 90", f"dataset_days: {value}"))
    with pytest.raises(TracebaseError, match="retention.dataset_days"):
        load_config(str(p))


@pytest.mark.parametrize("where", ["findings_in_table", "reports_is_config", "model_at_dataset"])
def test_config_refuses_outputs_in_tables_or_itself(tmp_path, where):
    """docs/architecture.md:116-117: the pipeline config refuses an output that is the config
    file itself or lies at the dataset or inside one of its tables."""
    from baseline.pipeline.config import load_config
    from tracer.errors import TracebaseError
    p = tmp_path / "pipeline.yaml"
    text = DOC_CONFIG.format(t=tmp_path, repo=REPO)
    (tmp_path / "dataset" / "events").mkdir(parents=True)
    if where == "findings_in_table":
        text = text.replace(f"findings: {tmp_path}/findings", f"findings: {tmp_path}/dataset/events/f")
    elif where == "reports_is_config":
        text = text.replace(f"reports: {tmp_path}/reports", f"reports: {p}")
    else:
        text = text.replace(f"model: {tmp_path}/model/baseline.parquet", f"model: {tmp_path}/dataset")
    p.write_text(text)
    with pytest.raises(TracebaseError):
        load_config(str(p))


def test_duplicate_key_refused(tmp_path):
    """docs/architecture.md:1092: the one YAML loader refuses a key given twice."""
    from baseline.pipeline.config import load_config
    from tracer.errors import TracebaseError
    p = tmp_path / "pipeline.yaml"
    p.write_text(DOC_CONFIG.format(t=tmp_path, repo=REPO) + "retention: {dataset_days: 5}\n")
    with pytest.raises(TracebaseError):
        load_config(str(p))


def test_ingest_workers_key(tmp_path):
    """docs/airflow.md:319: set `ingest_workers` (hosts are ingested in parallel processes)."""
    cfg = trial(tmp_path)
    with open(cfg, "a") as fh:
        fh.write("ingest_workers: 2\n")
    before = nrows(glob.glob(f"{tmp_path}/spool/*/snap-*/events.parquet"))
    r = py("import json\nfrom baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
           "c = load_config('pipeline.yaml')\nprint(json.dumps({'w': c.to_dict()['ingest_workers'], "
           "'r': tasks.ingest_once(c)}, default=str))", cwd=tmp_path)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["w"] == 2
    assert nrows(table_files(tmp_path / "dataset", "events")) == before


# ============================================================================= trial data / python recipe


def test_trial_recipe_spool_recent_and_config_append(tmp_path):
    """docs/airflow.md:211-214: `simulate --start 2h --spool --out .` writes spool/<host>/snap-*
    of the last 2 hours; write_default_config; an appended `nccl_logs:` line is accepted."""
    cfg = trial(tmp_path, real=True)
    snaps = snapshots(tmp_path / "spool")
    assert snaps
    now = dt.datetime.now(dt.UTC)
    for s in snaps:
        assert (s / "events.parquet").exists() or (s / "counters.parquet").exists()
        ts = dt.datetime.strptime(s.name.split("-")[1], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=dt.UTC)
        assert now - dt.timedelta(hours=2, minutes=5) <= ts <= now, s.name
    with open(cfg, "a") as fh:
        fh.write(f'nccl_logs: ["{tmp_path}/joblogs/*.log"]\n')
    from baseline.pipeline.config import load_config
    assert load_config(str(cfg)).to_dict()["nccl_logs"] == [f"{tmp_path}/joblogs/*.log"]


def test_default_start_and_audit_no_events(tmp_path):
    """docs/airflow.md:206-207: simulate starts on 2026-11-28 by default, so the audit's window
    holds no events and the audit fails with "no events"."""
    simulate(tmp_path / "dataset")
    assert [p.name for p in (tmp_path / "dataset" / "events").iterdir()] == ["date=2026-11-28"]
    ok([PY, "-c", 'from baseline.pipeline.config import write_default_config as w; w("pipeline.yaml", ".")'],
       cwd=tmp_path)
    r = run([PY, "-c", "from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
                       "c = load_config('pipeline.yaml')\ntasks.audit_new_failures(c)"], cwd=tmp_path)
    assert r.returncode != 0
    assert "no events" in r.stderr


def test_python_recipe_outputs(pipeline_run):
    """docs/airflow.md:179-188 and :27-33: the task functions write each path of the config:
    the dataset, the model, the expected errors, findings/<stamp>/... + LATEST, reports/<week>/."""
    d = pipeline_run
    res = json.loads((d / "result.json").read_text())
    cfg = res["cfg"]
    assert res["ingest"]["snapshots"] > 0 and not list((d / "spool").glob("*/snap-*"))
    assert Path(cfg["model"]).is_file()
    assert Path(cfg["expected_errors"]).is_file()
    findings = Path(cfg["findings"])
    stamp = (findings / "LATEST").read_text().strip()
    assert re.fullmatch(r"\d{8}T\d{6}Z", stamp), stamp
    for f in ("findings.parquet", "clusters.parquet", "host_alerts.parquet", "report.html"):
        assert (findings / stamp / f).exists(), f
    week = (d / "week").read_text()
    rep = Path(cfg["reports"]) / week
    assert {"report.html", "report.md"} <= {p.name for p in rep.iterdir()}
    assert glob.glob(f"{rep}/coverage_*.parquet")


def test_watermark_committed_until_newest_snapshot(tmp_path):
    """docs/airflow.md:71-73: each completed ingest writes `<dataset>/_ingest_watermark.json`:
    `committed_until`, the newest snapshot time committed."""
    trial(tmp_path)
    newest = max(s.name.split("-")[1] for s in snapshots(tmp_path / "spool"))
    ok([BASELINE, "ingest", "spool", "dataset"], cwd=tmp_path)
    wm = json.loads((tmp_path / "dataset" / "_ingest_watermark.json").read_text())
    got = dt.datetime.fromisoformat(wm["committed_until"].replace("Z", "+00:00"))
    want = dt.datetime.strptime(newest, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=dt.UTC)
    assert got == want


def test_publish_rerun_succeeds_and_latest_only_moves_forward(tmp_path):
    """docs/airflow.md:83-86: `publish` of a run already published succeeds (the rerun replaces
    findings/<stamp>/ whole); `LATEST` only moves forward."""
    trial(tmp_path)
    r = py(
        "import json, time\nfrom baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
        "c = load_config('pipeline.yaml')\ntasks.ingest_once(c)\n"
        "a = tasks.audit_new_failures(c)\ntime.sleep(1.2)\nb = tasks.audit_new_failures(c)\n"
        "pb = tasks.publish_findings(c, b)\nl1 = open('findings/LATEST').read().strip()\n"
        "pa = tasks.publish_findings(c, a)\nl2 = open('findings/LATEST').read().strip()\n"
        "pa2 = tasks.publish_findings(c, a)\n"
        "print(json.dumps({'a': a['stamp'], 'b': b['stamp'], 'l1': l1, 'l2': l2}))", cwd=tmp_path)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["a"] < out["b"]
    assert out["l1"] == out["b"] and out["l2"] == out["b"]
    for stamp in (out["a"], out["b"]):
        assert (tmp_path / "findings" / stamp / "findings.parquet").exists()
    assert not list((tmp_path / "findings").glob(".staging-*"))


# ============================================================================= ingest


def test_ingest_idempotent_named_after_snapshots(tmp_path):
    """docs/airflow.md:46-48: each part file records the snapshot ids it holds in its footer and
    is named after them; rerunning an interval adds no duplicate rows."""
    trial(tmp_path)
    spool = tmp_path / "spool"
    snaps = {s.parent.name: set() for s in snapshots(spool)}
    for s in snapshots(spool):
        snaps[s.parent.name].add(s.name)
    rows = nrows(glob.glob(f"{spool}/*/snap-*/events.parquet"))
    ok([BASELINE, "ingest", spool, "ds1", "--keep-spool"], cwd=tmp_path)
    ok([BASELINE, "ingest", spool, "ds2", "--keep-spool"], cwd=tmp_path)
    files1 = sorted(os.path.relpath(f, tmp_path / "ds1") for f in table_files(tmp_path / "ds1", "events"))
    files2 = sorted(os.path.relpath(f, tmp_path / "ds2") for f in table_files(tmp_path / "ds2", "events"))
    assert files1 == files2            # the names follow the snapshots held
    ok([BASELINE, "ingest", spool, "ds1"], cwd=tmp_path)      # the same interval again
    assert nrows(table_files(tmp_path / "ds1", "events")) == rows
    assert sorted(os.path.relpath(f, tmp_path / "ds1") for f in table_files(tmp_path / "ds1", "events")) == files1
    # (a host's part files together: an hour simulated from `--start 2h` before 02:00 UTC spans
    # two days, each day's partition holding its own snapshots)
    held: dict[str, str] = {}
    for f in table_files(tmp_path / "ds1", "events"):
        host = re.search(r"host=([^/]+)", f).group(1)
        held[host] = held.get(host, "") + " " + " ".join(footer(f).values())
    for host, names in snaps.items():
        assert all(name in held.get(host, "") for name in names), (host, sorted(names - set(held.get(host, "").split())))


def test_unreadable_file_quarantined_rest_ingested(tmp_path):
    """docs/airflow.md:55-58: an unreadable snapshot file goes to
    `quarantine/<host>/<snapshot>/<file>` with `<file>.reason` (one line); the rest of the
    snapshot and of the spool is ingested."""
    trial(tmp_path)
    spool = tmp_path / "spool"
    victim = next(s for s in snapshots(spool) if (s / "events.parquet").exists()
                  and pq.read_metadata(s / "events.parquet").num_rows > 0)
    ev_rows = nrows(glob.glob(f"{spool}/*/snap-*/events.parquet")) - pq.read_metadata(victim / "events.parquet").num_rows
    ctr_rows = nrows(glob.glob(f"{spool}/*/snap-*/counters.parquet"))
    (victim / "events.parquet").write_bytes(b"this is not parquet\n")
    p = ok([BASELINE, "ingest", spool, tmp_path / "dataset", "--quarantine", tmp_path / "quarantine"])
    q = tmp_path / "quarantine" / victim.parent.name / victim.name
    assert (q / "events.parquet").read_bytes() == b"this is not parquet\n", p.stderr
    reason = (q / "events.parquet.reason").read_text()
    assert len(reason.strip().splitlines()) == 1
    assert "events.parquet" in reason
    assert nrows(table_files(tmp_path / "dataset", "events")) == ev_rows
    assert nrows(table_files(tmp_path / "dataset", "counters")) == ctr_rows


@pytest.mark.parametrize("kind", ["wrong_type", "wrong_table"])
def test_bad_column_or_table_quarantined_with_reason(tmp_path, kind):
    """docs/airflow.md:55-58: a wrong table or a column of the wrong type goes to quarantine with
    `<file>.reason`, one line: file, column, expected, found."""
    trial(tmp_path)
    victim = next(s for s in snapshots(tmp_path / "spool") if (s / "counters.parquet").exists()
                  and (s / "events.parquet").exists())
    f = victim / "counters.parquet"
    if kind == "wrong_table":
        shutil.copy(victim / "events.parquet", f)
    else:
        t = pq.read_table(f)
        i = t.schema.get_field_index("invocations")
        t = t.set_column(i, pyarrow.field("invocations", pyarrow.string()),
                         pyarrow.array([str(v) for v in t.column(i).to_pylist()], pyarrow.string()))
        pq.write_table(t.replace_schema_metadata(pq.read_schema(f).metadata), f)
    ok([BASELINE, "ingest", "spool", "dataset", "--quarantine", "quarantine"], cwd=tmp_path)
    reason = (tmp_path / "quarantine" / victim.parent.name / victim.name / "counters.parquet.reason").read_text()
    assert len(reason.strip().splitlines()) == 1
    assert "counters.parquet" in reason
    if kind == "wrong_type":
        assert "invocations" in reason and "expected int64" in reason and "found string" in reason, reason
    else:
        assert "events" in reason and "counters" in reason, reason


def test_symlinked_host_dir_quarantined_as_link(tmp_path):
    """docs/airflow.md:59-61: a symlinked host directory is quarantined as the link itself
    (`quarantine/_spool/<name>`); its target is never read, moved or deleted."""
    trial(tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(tmp_path / "spool" / "gpu00001", outside)
    before = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    (tmp_path / "spool" / "evil").symlink_to(outside)
    ok([BASELINE, "ingest", "spool", "dataset", "--quarantine", "quarantine"], cwd=tmp_path)
    link = tmp_path / "quarantine" / "_spool" / "evil"
    assert link.is_symlink() and Path(os.readlink(link)) == outside
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == before
    assert not list((tmp_path / "dataset").glob("*/date=*/host=evil"))


def test_unsafe_host_directory_name_quarantined(tmp_path):
    """docs/airflow.md:61-63: host directory names must be one safe partition value; the
    snapshots of any other host directory are quarantined with the reason."""
    trial(tmp_path)
    spool = tmp_path / "spool"
    (spool / "gpu00001").rename(spool / "bad host")
    ok([BASELINE, "ingest", "spool", "dataset", "--quarantine", "quarantine"], cwd=tmp_path)
    assert not list((tmp_path / "dataset").glob("*/date=*/host=bad*"))
    reasons = list((tmp_path / "quarantine").rglob("*.reason"))
    assert reasons
    assert any("bad host" in str(r) or "bad host" in r.read_text() for r in reasons)


def test_dataset_that_cannot_be_written_exit_2_spool_kept(tmp_path):
    """docs/airflow.md:64-65: a dataset that cannot be written stops the run with one line and
    exit status 2, and the spool is left as it was."""
    trial(tmp_path)
    (tmp_path / "afile").write_text("x")
    before = sorted(str(p) for p in (tmp_path / "spool").rglob("*"))
    p = run([BASELINE, "ingest", "spool", "afile/dataset"], cwd=tmp_path)
    one_line_error(p)
    assert sorted(str(p) for p in (tmp_path / "spool").rglob("*")) == before


def _hold(path, mode):
    fh = open(path, "a+")  # noqa: SIM115 - held by the caller
    fcntl.flock(fh, mode)
    return fh


def test_ingest_takes_exclusive_dataset_lock(tmp_path):
    """docs/airflow.md:66-67: ingest holds an exclusive `flock` on `<dataset>/.tracebase.lock`;
    readers hold it shared: while a reader holds it, ingest writes nothing."""
    trial(tmp_path)
    ds = tmp_path / "dataset"
    ds.mkdir()
    fh = _hold(ds / ".tracebase.lock", fcntl.LOCK_SH)
    try:
        proc = subprocess.Popen([BASELINE, "ingest", "spool", "dataset"], cwd=tmp_path, env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        assert not table_files(ds, "events")
        still = proc.poll() is None
    finally:
        fh.close()
    out, err = proc.communicate(timeout=120)
    assert still, (proc.returncode, err)
    assert proc.returncode == 0, err
    assert table_files(ds, "events")


def test_audit_waits_for_exclusive_lock_and_shares(sim_ds, tmp_path):
    """docs/airflow.md:66-70: the audit holds the lock shared: it waits while ingest (exclusive)
    commits, and runs beside another shared holder."""
    ds = tmp_path / "ds"
    shutil.copytree(sim_ds, ds, symlinks=True)
    fh = _hold(ds / ".tracebase.lock", fcntl.LOCK_EX)
    try:
        proc = subprocess.Popen([BASELINE, "audit", str(ds)], env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        waited = proc.poll() is None
    finally:
        fh.close()
    out, err = proc.communicate(timeout=180)
    assert waited and proc.returncode == 0, err
    fh = _hold(ds / ".tracebase.lock", fcntl.LOCK_SH)
    try:
        ok([BASELINE, "audit", ds, "-o", tmp_path / "a2"], timeout=180)
    finally:
        fh.close()


def test_simulate_into_existing_dataset_holds_its_lock(sim_ds, tmp_path):
    """docs/architecture.md:85: `baseline simulate` into an existing dataset holds its lock
    (`tracer.atomic.dataset_lock`) as ingest does."""
    ds = tmp_path / "ds"
    shutil.copytree(sim_ds, ds, symlinks=True)
    fh = _hold(ds / ".tracebase.lock", fcntl.LOCK_SH)
    try:
        proc = subprocess.Popen([BASELINE, "simulate", "--hosts", "2", "--hours", "1", "--seed", "3",
                                 "--out", str(ds)], env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        waited = proc.poll() is None
    finally:
        fh.close()
    out, err = proc.communicate(timeout=120)
    assert waited, (proc.returncode, err)
    assert proc.returncode == 0, err


def test_ingest_removes_hidden_part_temporaries(tmp_path):
    """docs/airflow.md:74-75: ingest removes the hidden temporaries (`.part-*.tmp`) a killed
    run left, at start."""
    trial(tmp_path)
    ok([BASELINE, "ingest", "spool", "dataset", "--keep-spool"], cwd=tmp_path)
    part_dir = Path(table_files(tmp_path / "dataset", "events")[0]).parent
    debris = part_dir / ".part-deadbeef.tmp"
    debris.write_bytes(b"half a file")
    ok([BASELINE, "ingest", "spool", "dataset"], cwd=tmp_path)
    assert not debris.exists()


@pytest.mark.parametrize("keep", [False, True])
def test_abandoned_spool_temporaries(tmp_path, keep):
    """docs/airflow.md:76-80: a host's `.snap-*.tmp` unchanged for an hour (no tracer holding the
    host, no live pid in the name) is removed by ingest; a fresh one stays; `--keep-spool`
    leaves them."""
    trial(tmp_path)
    host = tmp_path / "spool" / "gpu00000"
    old, new = host / ".snap-abandoned.tmp", host / ".snap-fresh.tmp"
    for d in (old, new):
        d.mkdir()
        (d / "events.parquet").write_bytes(b"partial")
    t = time.time() - 2 * 3600
    os.utime(old / "events.parquet", (t, t))
    os.utime(old, (t, t))
    argv = [BASELINE, "ingest", "spool", "dataset"] + (["--keep-spool"] if keep else [])
    ok(argv, cwd=tmp_path)
    assert new.exists()
    assert old.exists() is keep


def test_snapshot_missing_a_file_ingested_with_warning(tmp_path):
    """docs/airflow.md:81-82: a snapshot directory without one of its two files is ingested and
    named in the run's `warnings` (a CLI warning line on stderr)."""
    trial(tmp_path)
    victim = next(s for s in snapshots(tmp_path / "spool") if (s / "counters.parquet").exists()
                  and (s / "events.parquet").exists())
    (victim / "counters.parquet").unlink()
    p = ok([BASELINE, "ingest", "spool", "dataset", "--json"], cwd=tmp_path)
    res = json.loads(p.stdout)
    res = res.get("ingest", res)
    assert any(victim.name in str(w) for w in res["warnings"]), res["warnings"]
    assert victim.name in p.stderr
    assert not victim.exists()


def test_spool_inside_dataset_refused(tmp_path):
    """docs/architecture.md:102-104: the spool, the dataset and the quarantine are refused when
    one is, holds or lies in another; a spool laid out as a dataset is refused before anything
    moves."""
    trial(tmp_path)
    one_line_error(run([BASELINE, "ingest", "spool", "spool/dataset"], cwd=tmp_path))
    simulate(tmp_path / "ds")
    before = sorted(str(p) for p in (tmp_path / "ds").rglob("*"))
    one_line_error(run([BASELINE, "ingest", "ds", "dataset2"], cwd=tmp_path))
    assert sorted(str(p) for p in (tmp_path / "ds").rglob("*")) == before


def test_retention_dataset_days_keeps_newest_day(tmp_path):
    """docs/airflow.md:94-96: `retention.dataset_days` drops date partitions; each table's
    newest day is always kept (`tidy` reports it as `kept_newest`)."""
    simulate(tmp_path / "dataset", "--start", "2026-11-20T23:30:00Z")
    dates = sorted(p.name for p in (tmp_path / "dataset" / "events").iterdir())
    assert dates == ["date=2026-11-20", "date=2026-11-21"]
    ok([PY, "-c", 'from baseline.pipeline.config import write_default_config as w; w("pipeline.yaml", ".")'],
       cwd=tmp_path)
    set_in_yaml(tmp_path / "pipeline.yaml", {"dataset_days: 90": "dataset_days: 1"})
    r = py("import json\nfrom baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
           "print(json.dumps(tasks.tidy(load_config('pipeline.yaml')), default=str))", cwd=tmp_path)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert sorted(p.name for p in (tmp_path / "dataset" / "events").iterdir()) == ["date=2026-11-21"]
    assert res["expired"]["kept_newest"] >= 1


def test_retention_findings_keeps_latest(pipeline_run, tmp_path):
    """docs/airflow.md:97-98: `retention.findings_days` removes published audit runs and
    abandoned staging directories; the run `LATEST` names is always kept."""
    d = tmp_path / "p"
    shutil.copytree(pipeline_run, d, symlinks=True)
    set_in_yaml(d / "pipeline.yaml", {"findings_days: 30": "findings_days: 1"})
    findings = d / "findings"
    latest = (findings / "LATEST").read_text().strip()
    old = findings / "20200101T000000Z"
    shutil.copytree(findings / latest, old, symlinks=True)
    staging = findings / ".staging-20200101T000000Z"
    staging.mkdir()
    (staging / "findings.parquet").write_bytes(b"partial")
    t = time.time() - 10 * 86400
    for p in [old, *old.rglob("*"), staging, *staging.rglob("*"), findings / latest,
              *(findings / latest).rglob("*")]:
        os.utime(p, (t, t), follow_symlinks=False)
    py("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
       "c = load_config('pipeline.yaml')\ntasks.tidy(c)\n", cwd=d)
    assert (findings / latest / "findings.parquet").exists()      # LATEST's run, however old
    py("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
       "c = load_config('pipeline.yaml')\ntasks.publish_findings(c, tasks.audit_new_failures(c))\n", cwd=d)
    assert not old.exists()
    assert not staging.exists()
    assert (findings / (findings / "LATEST").read_text().strip() / "findings.parquet").exists()


def test_retention_quarantine_days(tmp_path):
    """docs/airflow.md:94-97: `retention.quarantine_days` expires quarantined files."""
    trial(tmp_path)
    victim = snapshots(tmp_path / "spool")[0]
    (victim / "counters.parquet").write_bytes(b"junk")
    py("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
       "tasks.ingest_once(load_config('pipeline.yaml'))", cwd=tmp_path)
    q = tmp_path / "quarantine"
    files = [p for p in q.rglob("*") if p.is_file()]
    assert files
    set_in_yaml(tmp_path / "pipeline.yaml", {"quarantine_days: 30": "quarantine_days: 1"})
    t = time.time() - 10 * 86400
    for p in [*q.rglob("*")]:
        os.utime(p, (t, t), follow_symlinks=False)
    py("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
       "tasks.tidy(load_config('pipeline.yaml'))", cwd=tmp_path)
    assert not [p for p in q.rglob("*") if p.is_file()]


# ============================================================================= dataset layout, readers

LAYOUT = re.compile(r"^(events|counters|counter_buckets|truth)/date=\d{4}-\d{2}-\d{2}/host=[A-Za-z0-9_][A-Za-z0-9._-]*/part-[^/]*\.parquet$")


def test_dataset_layout_and_host_only_in_path(pipeline_run):
    """docs/airflow.md:102-103 and docs/architecture.md:42-43:
    `<dataset>/<table>/date=YYYY-MM-DD/host=<host>/part-*.parquet`, `host` in the directory only."""
    ds = pipeline_run / "dataset"
    files = [os.path.relpath(f, ds) for f in glob.glob(f"{ds}/**/*.parquet", recursive=True)]
    assert files
    for f in files:
        assert LAYOUT.match(f), f
        assert "host" not in pq.read_schema(ds / f).names, f


def test_simulate_one_file_per_host_day(sim_ds):
    """docs/architecture.md:72-73: `baseline simulate` writes a day as ingest leaves it (one file
    per host-day), same layout + truth table (:27-28)."""
    for table in ("events", "counters", "truth"):
        parts = glob.glob(f"{sim_ds}/{table}/date=*/host=*")
        assert parts, table
        for part in parts:
            assert len(glob.glob(f"{part}/*.parquet")) == 1, part
        for f in table_files(sim_ds, table):
            assert LAYOUT.match(os.path.relpath(f, sim_ds)), f


def test_counter_buckets_beside_each_counters_file(pipeline_run, sim_ds):
    """docs/architecture.md:74-77: beside each counters file its writer (ingest, the simulator)
    puts its 15-minute summary `counter_buckets/date=D/host=H/<same name>`; its footer names the
    counters file's size."""
    for ds in (pipeline_run / "dataset", sim_ds):
        for f in table_files(ds, "counters"):
            rel = os.path.relpath(f, ds / "counters")
            summary = ds / "counter_buckets" / rel
            assert summary.exists(), summary
            assert str(os.path.getsize(f)) in " ".join(footer(summary).values())


READ_RECIPES = {
    "pandas": lambda: __import__("pandas").read_parquet("dataset/events"),
    "pyarrow.parquet": lambda: pq.read_table("dataset/events"),
    "pyarrow.dataset": lambda: pyarrow.dataset.dataset("dataset/events", partitioning="hive").to_table(),
    "duckdb": lambda: __import__("duckdb").sql(
        "select host, count(*) from read_parquet('dataset/events/**/*.parquet', hive_partitioning = true) group by host"),
    "polars": lambda: __import__("polars").read_parquet("dataset/events"),
    "polars.scan": lambda: __import__("polars").scan_parquet("dataset/events", hive_partitioning=True).collect(),
}


def _hosts_and_rows(name, obj):
    if name == "duckdb":
        rows = obj.fetchall()
        return {h for h, _ in rows}, sum(n for _, n in rows)
    if name == "pandas":
        return set(obj["host"].astype(str)), len(obj)
    if name.startswith("polars"):
        return set(obj["host"].cast(str).to_list()), obj.height
    return {str(h) for h in obj.column("host").to_pylist()}, obj.num_rows


@pytest.mark.parametrize("name", list(READ_RECIPES))
def test_reader_recipe_reads_table_directory(pipeline_run, monkeypatch, name):
    """docs/airflow.md:105-111 and docs/architecture.md:43: each table directory reads as is
    with hive partitioning (the recipes as shown)."""
    monkeypatch.chdir(pipeline_run)
    hosts, rows = _hosts_and_rows(name, READ_RECIPES[name]())
    assert hosts == {"gpu00000", "gpu00001"}
    assert rows == nrows(table_files("dataset", "events"))


def test_counters_read_with_pyarrow(pipeline_run, monkeypatch):
    """docs/airflow.md:107: `pyarrow.parquet.read_table("dataset/counters")`."""
    monkeypatch.chdir(pipeline_run)
    t = pq.read_table("dataset/counters")
    assert t.num_rows == nrows(table_files("dataset", "counters"))
    assert "host" in t.column_names and "date" in t.column_names


def test_inferred_key_types_as_documented(pipeline_run, monkeypatch):
    """docs/airflow.md:106,113-114: `date` is a string to pyarrow and pandas (host, date as
    categories) but a date to polars and DuckDB."""
    import duckdb
    import pandas
    import polars
    monkeypatch.chdir(pipeline_run)
    t = pyarrow.dataset.dataset("dataset/events", partitioning="hive").to_table()
    assert pyarrow.types.is_string(t.schema.field("date").type)
    df = pandas.read_parquet("dataset/events")      # airflow.md:106: host, date as categories
    assert isinstance(df["date"].dtype, pandas.CategoricalDtype)
    assert isinstance(df["host"].dtype, pandas.CategoricalDtype)
    assert isinstance(df["date"].astype(object).iloc[0], str)
    assert polars.read_parquet("dataset/events").schema["date"] == polars.Date
    rel = duckdb.sql("select * from read_parquet('dataset/events/**/*.parquet', hive_partitioning = true)")
    types = dict(zip([d[0] for d in rel.description], rel.types, strict=True))
    assert str(types["date"]) == "DATE"


@pytest.fixture()
def digit_hosts(pipeline_run, tmp_path, monkeypatch):
    """The trial dataset with its hosts renamed to all-digit names (host=0042, host=0043)."""
    ds = tmp_path / "dataset"
    shutil.copytree(pipeline_run / "dataset", ds, symlinks=True)
    for table in ds.iterdir():
        if table.is_dir():
            for part in table.glob("date=*/host=*"):
                part.rename(part.with_name({"host=gpu00000": "host=0042", "host=gpu00001": "host=0043"}[part.name]))
    monkeypatch.chdir(tmp_path)
    return ds


def test_digit_hosts_lose_zeros_when_inferred(digit_hosts):
    """docs/airflow.md:114-115: a fleet whose host names are all digits reads as integers with
    the leading zeros lost (inferred)."""
    import polars
    hosts = polars.read_parquet("dataset/events")["host"]
    assert hosts.dtype.is_integer()
    assert set(hosts.to_list()) == {42, 43}


def _pinned(name):
    import duckdb
    import pandas
    import polars

    import tracer.schema
    keys = pyarrow.dataset.partitioning(tracer.schema.HIVE_KEYS, flavor="hive")
    if name == "pyarrow.dataset":
        t = pyarrow.dataset.dataset("dataset/events", partitioning=keys).to_table()
        return t.column("host").to_pylist(), t.schema.field("date").type == pyarrow.date32()
    if name == "pandas":
        df = pandas.read_parquet("dataset/events", partitioning=keys)
        return [str(h) for h in df["host"]], isinstance(df["date"].iloc[0], dt.date)
    if name == "polars":
        df = polars.scan_parquet("dataset/events/**/*.parquet",
                                 hive_schema={"date": polars.Date, "host": polars.String}).collect()
        return df["host"].to_list(), df.schema["date"] == polars.Date
    rel = duckdb.sql("select * from read_parquet('dataset/events/**/*.parquet', hive_partitioning = true, "
                     "hive_types = {'date': DATE, 'host': VARCHAR})")
    cols = [d[0] for d in rel.description]
    rows = rel.fetchall()
    return [r[cols.index("host")] for r in rows], str(rel.types[cols.index("date")]) == "DATE"


@pytest.mark.parametrize("name", ["pyarrow.dataset", "pandas", "polars", "duckdb"])
def test_pinned_keys_recipes(digit_hosts, name):
    """docs/airflow.md:115-125: pin the keys (`tracer.schema.HIVE_KEYS`: date `date32`, host
    `string`): the recipes as shown keep `host=0042` a string and read `date` as a date."""
    hosts, date_is_date = _pinned(name)
    assert set(hosts) == {"0042", "0043"}
    assert date_is_date


def test_schema_read_of_a_file_list_restores_host(pipeline_run):
    """docs/airflow.md:127-129: tracebase's own readers restore `host` from the path: reading a
    list of files, use `tracer.schema.read(files, table)`."""
    import tracer.schema
    files = table_files(pipeline_run / "dataset", "events")
    df = tracer.schema.read(files, "events")
    assert set(df["host"].to_list()) == {"gpu00000", "gpu00001"}
    assert df.height == nrows(files)


def test_readers_accept_files_that_store_the_host(pipeline_run, tmp_path):
    """docs/airflow.md:127-128: our readers also read files that still carry the host column."""
    import polars

    import tracer.schema
    ds = tmp_path / "dataset"
    shutil.copytree(pipeline_run / "dataset", ds, symlinks=True)
    f = Path(table_files(ds, "events")[0])
    host = re.search(r"host=([^/]+)", str(f)).group(1)
    t = pq.read_table(f)
    t = t.append_column("host", pyarrow.array([host] * t.num_rows, pyarrow.string()))
    t = t.replace_schema_metadata(pq.read_schema(f).metadata)
    pq.write_table(t, f)
    df = tracer.schema.read(table_files(ds, "events"), "events")
    assert df.filter(polars.col("host") == host).height == t.num_rows


def test_stored_host_disagreeing_with_directory_refused(pipeline_run, tmp_path):
    """docs/architecture.md:44-46: a part that stores a `host` column must say its directory's
    host, else every reader refuses it naming the file and column."""
    ds = tmp_path / "dataset"
    shutil.copytree(pipeline_run / "dataset", ds, symlinks=True)
    f = Path(table_files(ds, "events")[0])
    t = pq.read_table(f)
    t = t.append_column("host", pyarrow.array(["elsewhere"] * t.num_rows, pyarrow.string()))
    t = t.replace_schema_metadata(pq.read_schema(f).metadata)
    pq.write_table(t, f)
    line = one_line_error(run([BASELINE, "audit", ds, "-o", tmp_path / "out", "--refit"]))
    assert f.name in line and "host" in line


def test_empty_host_partition_refused(pipeline_run, tmp_path):
    """docs/architecture.md:46: an empty `host=` is refused the same way."""
    ds = tmp_path / "dataset"
    shutil.copytree(pipeline_run / "dataset", ds, symlinks=True)
    part = Path(table_files(ds, "events")[0]).parent
    part.rename(part.with_name("host="))
    line = one_line_error(run([BASELINE, "audit", ds, "-o", tmp_path / "out", "--refit"]))
    assert "host=" in line


def test_file_without_footer_keys_refused(pipeline_run, tmp_path):
    """docs/architecture.md:996-999: files without the footer keys (as polars writes a frame)
    are refused naming the missing key."""
    import polars
    ds = tmp_path / "dataset"
    shutil.copytree(pipeline_run / "dataset", ds, symlinks=True)
    f = Path(table_files(ds, "events")[0])
    polars.read_parquet(f).write_parquet(f)
    line = one_line_error(run([BASELINE, "audit", ds, "-o", tmp_path / "out", "--refit"]))
    assert f.name in line and "tracebase" in line and "table" in line


# ============================================================================= day files


def test_day_compaction_layout(day_ds):
    """docs/airflow.md:131-134 and docs/architecture.md:46-53: a closed day's events are
    compacted into `events/date=D/day-NNNN.parquet`: whole hosts a file, sorted by host then
    time, the `host` column stored, row groups of at most 65,536, the first and last host and
    the ingest manifest (`tracebase.day_snapshots`) in the footer; counters stay per host-day."""
    days = sorted(glob.glob(f"{day_ds}/events/date=*/day-*.parquet"))
    assert days and all(re.search(r"/date=\d{4}-\d{2}-\d{2}/day-\d{4}\.parquet$", f) for f in days)
    assert not glob.glob(f"{day_ds}/events/date=*/host=*")
    for f in days:
        meta = pq.ParquetFile(f).metadata
        assert all(meta.row_group(i).num_rows <= 65536 for i in range(meta.num_row_groups))
        t = pq.read_table(f)
        assert "host" in t.column_names
        hosts = t.column("host").to_pylist()
        assert hosts == sorted(hosts)
        foot = footer(f)
        assert "tracebase.day_snapshots" in foot, foot.keys()
        assert hosts[0] in " ".join(foot.values()) and hosts[-1] in " ".join(foot.values())
    assert glob.glob(f"{day_ds}/counters/date=*/host=*/*.parquet")


@pytest.fixture()
def mixed_day(day_ds, sim_ds, tmp_path, monkeypatch):
    """The closed day plus a late host partition beside the day files (docs/airflow.md:133-134)."""
    ds = tmp_path / "dataset"
    shutil.copytree(day_ds, ds, symlinks=True)
    src = table_files(sim_ds, "events")[0]
    date = re.search(r"date=([^/]+)", src).group(1)
    late = ds / "events" / f"date={date}" / "host=late0"
    late.mkdir()
    shutil.copy(src, late / "part-late.parquet")
    monkeypatch.chdir(tmp_path)
    return nrows(table_files(ds, "events")), ds


@pytest.mark.parametrize("name", ["pyarrow.dataset", "pandas"])
def test_two_depths_read_with_pinned_keys(mixed_day, name):
    """docs/airflow.md:134-135: pandas and pyarrow read the two-depth table with the keys pinned."""
    total, _ = mixed_day
    hosts, _ = _pinned(name)
    assert len(hosts) == total
    assert "late0" in set(hosts) and "gpu00000" in set(hosts)


def test_two_depths_polars_recipe(mixed_day):
    """docs/airflow.md:139-142: the polars recipe stacking the two forms."""
    import polars
    total, _ = mixed_day
    df = polars.concat([
        polars.scan_parquet("dataset/events/date=*/host=*/*.parquet", hive_schema={"date": polars.Date, "host": polars.String}).drop("date"),
        polars.scan_parquet("dataset/events/date=*/day-*.parquet", hive_partitioning=False),
    ], how="diagonal_relaxed").collect()
    assert df.height == total
    assert {"late0", "gpu00000", "gpu00001"} == set(df["host"].to_list())


def test_two_depths_duckdb_recipe(mixed_day):
    """docs/airflow.md:143-145: the DuckDB recipe stacking the two forms."""
    import duckdb
    total, _ = mixed_day
    rel = duckdb.sql("select * exclude (date) from read_parquet('dataset/events/date=*/host=*/*.parquet', hive_partitioning = true, "
                     "hive_types = {'date': DATE, 'host': VARCHAR}) "
                     "union all by name select * from read_parquet('dataset/events/date=*/day-*.parquet')")
    cols = [d[0] for d in rel.description]
    rows = rel.fetchall()
    assert len(rows) == total
    assert {r[cols.index("host")] for r in rows} == {"late0", "gpu00000", "gpu00001"}


def test_polars_refuses_two_depths_in_one_hive_scan(mixed_day):
    """docs/airflow.md:135-136: polars refuses two depths in one hive scan."""
    import polars
    with pytest.raises(polars.exceptions.PolarsError):
        polars.scan_parquet("dataset/events/**/*.parquet", hive_partitioning=True).collect()


def test_tracebase_readers_read_two_depths(mixed_day):
    """docs/architecture.md:71-72: or use tracebase's readers (both forms, host restored)."""
    import tracer.schema
    total, ds = mixed_day
    df = tracer.schema.read(table_files(ds, "events"), "events")
    assert df.height == total
    assert {"late0", "gpu00000", "gpu00001"} == set(df["host"].to_list())


def test_ingest_compact_days_after_zero_never(tmp_path, sim_ds):
    """docs/airflow.md:40 and docs/architecture.md:49: `compact_days_after` 0: never."""
    ds = tmp_path / "ds"
    shutil.copytree(sim_ds, ds, symlinks=True)
    (tmp_path / "spool").mkdir()
    ok([BASELINE, "ingest", tmp_path / "spool", ds, "--compact-days-after", 0])
    assert not glob.glob(f"{ds}/events/date=*/day-*.parquet")
    ok([BASELINE, "ingest", tmp_path / "spool", ds, "--compact-days-after", 2])
    assert glob.glob(f"{ds}/events/date=*/day-*.parquet")


# ============================================================================= data model


def _written_files(pipeline_run, sim_ds):
    ds = pipeline_run / "dataset"
    res = json.loads((pipeline_run / "result.json").read_text())
    findings = pipeline_run / "findings" / (pipeline_run / "findings" / "LATEST").read_text().strip()
    rep = Path(res["cfg"]["reports"]) / (pipeline_run / "week").read_text()
    out = {
        "events": table_files(ds, "events")[0], "counters": table_files(ds, "counters")[0],
        "counter_buckets": table_files(ds, "counter_buckets")[0], "truth": table_files(sim_ds, "truth")[0],
        "findings": findings / "findings.parquet", "clusters": findings / "clusters.parquet",
        "host_alerts": findings / "host_alerts.parquet", "baseline_model": res["cfg"]["model"],
    }
    for f in glob.glob(f"{rep}/coverage_*.parquet"):
        out[Path(f).stem] = f
    return out


def test_every_parquet_file_carries_table_and_version(pipeline_run, sim_ds):
    """docs/architecture.md:993-994 (every Parquet file carries `tracebase.table` and
    `tracebase.schema_version`), :991 (schema version 2), :1068-1073 (the tables)."""
    files = _written_files(pipeline_run, sim_ds)
    assert any(k.startswith("coverage_") for k in files)
    for table, f in files.items():
        foot = footer(f)
        assert foot.get("tracebase.schema_version") == "2", (table, foot)
        assert foot.get("tracebase.table") == table, (table, foot.get("tracebase.table"))


EVENT_COLUMNS = ["trace_id", "seq", "ts_ns", "pid", "tid", "ppid", "comm", "probe", "layer", "depth", "ret",
                 "errno", "latency_ns", "path", "arg", "path2", "output", "kind", "command", "exit_status",
                 "start_time", "end_time", "host", "kernel_release", "lost_events", "job_id", "metadata",
                 "repeat_count"]


def test_events_columns(pipeline_run, day_ds):
    """docs/architecture.md:1048-1057: the events columns (host in the path in a host partition,
    stored in a day file); kind good|failure|full; errno symbolic."""
    f = table_files(pipeline_run / "dataset", "events")[0]
    assert pq.read_schema(f).names == [c for c in EVENT_COLUMNS if c != "host"]
    day = glob.glob(f"{day_ds}/events/date=*/day-*.parquet")[0]
    assert sorted(pq.read_schema(day).names) == sorted(EVENT_COLUMNS)
    t = pq.read_table(f)
    assert set(t.column("kind").to_pylist()) <= {"good", "failure", "full"}
    errnos = {e for e in t.column("errno").to_pylist() if e}
    assert errnos and all(re.fullmatch(r"E[A-Z0-9]+", e) for e in errnos)
    for c in ("start_time", "end_time"):
        assert pyarrow.types.is_timestamp(t.schema.field(c).type)


def test_counters_columns(pipeline_run):
    """docs/architecture.md:1068-1069: counters: per host, snapshot and probe: invocation,
    failure and errno-histogram deltas, `live`, `lost_records`."""
    names = set(pq.read_schema(table_files(pipeline_run / "dataset", "counters")[0]).names)
    assert {"snapshot_time", "probe", "live", "lost_records"} <= names
    assert any("invocation" in n for n in names) and any("failure" in n for n in names)
    assert any("errno" in n for n in names)


def test_parquet_layout_zstd_and_seq_delta(pipeline_run, sim_ds, day_ds):
    """docs/architecture.md:1009-1011: zstd, dictionaries for strings, an events file's `seq`
    delta-coded."""
    for f in (table_files(pipeline_run / "dataset", "events")[0], table_files(sim_ds, "events")[0],
              glob.glob(f"{day_ds}/events/date=*/day-*.parquet")[0]):
        rg = pq.ParquetFile(f).metadata.row_group(0)
        cols = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
        assert all(c.compression == "ZSTD" for c in cols.values()), f
        assert "DELTA_BINARY_PACKED" in cols["seq"].encodings, (f, cols["seq"].encodings)
        assert any("DICTIONARY" in e for e in cols["probe"].encodings), f


def _partition_compacted(tmp_path):
    """Ingest a trial spool one snapshot at a time, then let tidy compact the partition (8 files)."""
    trial(tmp_path)
    snaps = [s for s in snapshots(tmp_path / "spool") if s.parent.name == "gpu00001"][:9]
    py("import os, shutil, sys\nfrom baseline.pipeline.config import load_config\n"
       "from baseline.pipeline import tasks\nc = load_config('pipeline.yaml')\n"
       f"snaps = {[str(s) for s in snaps]!r}\n"
       "shutil.move('spool', 'all')\n"
       "for s in snaps:\n"
       "    h, n = s.split('/')[-2:]\n"
       "    os.makedirs(f'spool/{h}', exist_ok=True)\n"
       "    shutil.move(f'all/{h}/{n}', f'spool/{h}/{n}')\n"
       "    tasks.ingest_once(c)\n", cwd=tmp_path)
    # compaction in a process of its own, as the DAG's compact_and_expire task runs
    py("from baseline.pipeline.config import load_config\nfrom baseline.pipeline import tasks\n"
       "tasks.tidy(load_config('pipeline.yaml'))\n", cwd=tmp_path)
    return tmp_path / "dataset"


@pytest.mark.parametrize("writer", [
    "simulator", "ingest",
    # (both were strict xfails when written: compaction in a process without polars loaded --
    # the DAG's compact_and_expire task, `baseline ingest --compact-min-files` -- wrote no summary;
    # the dataset's writers now ask for it, round forty)
    "compaction-partition", "compaction-day",
])
def test_events_footer_trace_metadata(writer, sim_ds, pipeline_run, day_ds, tmp_path):
    """docs/architecture.md:1058-1063: events files of the simulator, ingest and compaction carry
    `tracebase.trace_metadata` (pairs, row count, least start_time)."""
    if writer == "simulator":
        f = table_files(sim_ds, "events")[0]
    elif writer == "ingest":
        f = table_files(pipeline_run / "dataset", "events")[0]
    elif writer == "compaction-day":
        f = glob.glob(f"{day_ds}/events/date=*/day-*.parquet")[0]
    else:
        ds = _partition_compacted(tmp_path)
        part_files = glob.glob(f"{ds}/events/date=*/host=gpu00001/*.parquet")
        f = max(part_files, key=lambda p: pq.read_metadata(p).num_rows)
        assert len(part_files) < 8 and footer(f)["tracebase.snapshots"].count("snap-") >= 8, part_files
    foot = footer(f)
    assert "tracebase.trace_metadata" in foot, (writer, sorted(foot))
    summary = json.loads(foot["tracebase.trace_metadata"])
    assert str(pq.read_metadata(f).num_rows) in json.dumps(summary)


# ============================================================================= local CLI (airflow.md section 1)


def test_local_commands_as_shown(tmp_path):
    """docs/airflow.md:154-162 (ingest, learn --since 7d --expected-out, audit --since 2h
    --allowlist, coverage --week --probes --nccl-logs, suggest-probes) and :165-170 (outputs
    inside the dataset directory)."""
    trial(tmp_path)
    ds = tmp_path / "dataset"
    ok([BASELINE, "ingest", "spool", ds], cwd=tmp_path)
    ok([BASELINE, "learn", ds, "--since", "7d", "--expected-out", "expected_errors.yaml"], cwd=tmp_path)
    assert (ds / "baseline-model.parquet").exists() and (tmp_path / "expected_errors.yaml").exists()
    a = ok([BASELINE, "audit", ds, "--since", "2h", "--allowlist", "expected_errors.yaml"], cwd=tmp_path)
    assert "baseline-model.parquet" in a.stdout + a.stderr    # says which model it used
    assert {"findings.parquet", "clusters.parquet", "host_alerts.parquet"} <= {p.name for p in (ds / "audit").iterdir()}
    week = iso_week()
    ok([BASELINE, "coverage", ds, "--week", week, "--probes", REPO / "bpf/probes/rdma.yaml",
        "--nccl-logs", f"{tmp_path}/joblogs/*.log"], cwd=tmp_path)
    assert (ds / "reports" / week / "report.html").exists()
    if Path("/sys/kernel/btf/vmlinux").exists():
        ok([BASELINE, "suggest-probes", "--btf", "/sys/kernel/btf", "--probes", REPO / "bpf/probes/rdma.yaml"])


def test_simulate_learn_audit_evaluate_chain(tmp_path):
    """docs/airflow.md:165-174: `simulate && learn && audit && evaluate`, each finding the
    previous one's output inside the dataset; the audit prints the model it used; `--refit`
    learns one instead; `--json` prints one JSON document."""
    chain = ok(f"{BASELINE} simulate --hosts 2 --hours 1 --out f && {BASELINE} learn f && {BASELINE} audit f "
               f"&& {BASELINE} evaluate f", shell=True, cwd=tmp_path)
    f = tmp_path / "f"
    assert (f / "baseline-model.parquet").exists() and (f / "audit" / "findings.parquet").exists()
    assert "baseline-model.parquet" in chain.stdout + chain.stderr    # the audit says which model
    refit = ok([BASELINE, "audit", f, "--refit", "--json"], cwd=tmp_path)
    doc = json.loads(refit.stdout)                                   # one JSON document
    assert "baseline-model.parquet" not in json.dumps(doc)
    json.loads(ok([BASELINE, "evaluate", f, "--json"], cwd=tmp_path).stdout)


def test_evaluate_pipeline_findings_dir_latest(tmp_path):
    """docs/airflow.md:168-169: `evaluate` with `--findings` reads a pipeline `findings/`
    directory: its `LATEST` run."""
    simulate(tmp_path / "f")
    ok([BASELINE, "audit", tmp_path / "f", "-o", tmp_path / "findings" / "20261128T010000Z"])
    (tmp_path / "findings" / "LATEST").write_text("20261128T010000Z\n")
    a = json.loads(ok([BASELINE, "evaluate", tmp_path / "f", "--findings", tmp_path / "findings", "--json"]).stdout)
    shutil.copytree(tmp_path / "findings" / "20261128T010000Z", tmp_path / "f" / "audit", symlinks=True)
    b = json.loads(ok([BASELINE, "evaluate", tmp_path / "f", "--json"]).stdout)
    assert a == b


def test_coverage_reads_dataset_joblogs_by_default(sim_ds, tmp_path):
    """docs/airflow.md:169-170: `coverage` writes `DATASET/reports/<week>/` and reads
    `DATASET/joblogs/*.log` when present."""
    ds = tmp_path / "ds"
    shutil.copytree(sim_ds, ds, symlinks=True)
    assert glob.glob(f"{ds}/joblogs/*.log")
    out = json.loads(ok([BASELINE, "coverage", ds, "--json"]).stdout)
    assert "app" in json.dumps(out)
    assert (ds / "reports" / "2026-W48" / "report.md").exists()
    assert re.search(r'"app_failures": [1-9]', json.dumps(out)), out


def test_finished_week_report_is_reproducible(sim_ds, tmp_path):
    """docs/airflow.md:14: a finished week's report is a function of its data: a rerun on the
    same data writes the same bytes (charts, HTML, Markdown, Parquet)."""
    def digest(d):
        return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(d.rglob("*")) if p.is_file()}
    ok([BASELINE, "coverage", sim_ds, "--week", "2026-W48", "-o", tmp_path / "r1"])
    time.sleep(1.1)
    ok([BASELINE, "coverage", sim_ds, "--week", "2026-W48", "-o", tmp_path / "r2"])
    d1, d2 = digest(tmp_path / "r1"), digest(tmp_path / "r2")
    assert d1 and d1 == d2
    kinds = {Path(k).suffix for k in d1}
    assert {".html", ".md", ".parquet", ".png"} <= kinds


def test_nccl_glob_matching_no_file_warns(sim_ds, tmp_path):
    """docs/architecture.md:119-120: a `--nccl-logs` glob matching no file is a warning (in the
    report's problems and on stderr)."""
    p = ok([BASELINE, "coverage", sim_ds, "--week", "2026-W48", "-o", tmp_path / "r",
            "--nccl-logs", f"{tmp_path}/nothing-*.log"])
    assert "nothing-*.log" in p.stderr
    assert "nothing-*.log" in (tmp_path / "r" / "2026-W48" / "report.md").read_text()


@pytest.mark.parametrize("argv", [
    ["audit", "{ds}", "-o", "{ds}/events/out"],
    ["learn", "{ds}", "-o", "{ds}/counters/m.parquet"],
    ["learn", "{ds}", "--expected-out", "{ds}/events/e.yaml"],
    ["coverage", "{ds}", "--out", "{ds}/events/r"],
])
def test_cli_refuses_outputs_inside_tables(sim_ds, tmp_path, argv):
    """docs/architecture.md:118-119: the CLI refuses places inside the tables for `audit -o`,
    `learn -o`/`--expected-out` and `coverage --out` (`layout.among_tables`)."""
    ds = tmp_path / "ds"
    shutil.copytree(sim_ds, ds, symlinks=True)
    before = sorted(str(p) for p in ds.rglob("*"))
    one_line_error(run([BASELINE, *[a.format(ds=ds) for a in argv]]))
    assert sorted(str(p) for p in ds.rglob("*")) == before


def test_audit_output_set_and_links(sim_ds, tmp_path):
    """docs/architecture.md:1074-1077: `baseline audit --out DIR` writes a set to
    `DIR/.sets/<set>/` and swaps the `DIR/.current` symlink; `DIR/<table>.parquet` are links
    through it; a symlink at `DIR/.sets` is refused."""
    out = tmp_path / "out"
    ok([BASELINE, "audit", sim_ds, "--out", out])
    cur = out / ".current"
    assert cur.is_symlink() and os.readlink(cur).startswith(".sets/")
    for t in ("findings", "clusters", "host_alerts"):
        link = out / f"{t}.parquet"
        assert link.is_symlink() and os.readlink(link) == f".current/{t}.parquet"
        assert footer(link)["tracebase.table"] == t
    bad = tmp_path / "bad"
    bad.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (bad / ".sets").symlink_to(tmp_path / "elsewhere")
    one_line_error(run([BASELINE, "audit", sim_ds, "--out", bad]))


def test_simulate_hosts_bounded(tmp_path):
    """docs/architecture.md:1205-1206: `simulate --hosts` bounded to 1,000,000."""
    line = one_line_error(run([BASELINE, "simulate", "--hosts", "1000001", "--hours", "1", "--out", tmp_path / "x"]))
    assert "--hosts" in line
    assert not (tmp_path / "x").exists()


def test_version_on_unwritable_stdout_exit_2(tmp_path):
    """docs/architecture.md:1158-1159: `--help`/`--version` on an unwritable stdout exit 2."""
    for exe in (BASELINE, TRACER):
        for flag in ("--version", "--help"):
            with open("/dev/full", "w") as full:
                p = subprocess.run([exe, flag], stdout=full, stderr=subprocess.PIPE, text=True,
                                   env=_env(), timeout=60)
            assert p.returncode == 2, (exe, flag, p.stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="tracer record needs root")
def test_record_default_output_name(tmp_path):
    """docs/architecture.md:838-840: the default name carries the recorder's pid:
    `trace-NAME-UTCTIME-PID.parquet`; a name ending in "/" is refused."""
    p = run([TRACER, "record", "--", "/bin/true"], cwd=tmp_path, timeout=180)
    if p.returncode == 2 and ("bcc" in p.stderr or "BPF" in p.stderr or "bpf" in p.stderr):
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr
    names = [f.name for f in tmp_path.glob("*.parquet")]
    assert len(names) == 1 and re.fullmatch(r"trace-true-\d{8}T\d{6}Z?-\d+\.parquet", names[0]), names
    one_line_error(run([TRACER, "record", "-o", f"{tmp_path}/newdir/", "--", "/bin/true"], cwd=tmp_path))


# ============================================================================= DAG runs


def test_airflow_dags_test_as_shown(airflow_run):
    """docs/airflow.md:193-197: `airflow db migrate` then `airflow dags test trace_ingest -c
    '{"config": ...}'` runs the DAG in-process against SQLite; the spool lands in the dataset."""
    assert (airflow_run / "migrate.rc").read_text() == "0", (airflow_run / "migrate.log").read_text()[-3000:]
    assert (airflow_run / "dagstest.rc").read_text() == "0", (airflow_run / "dagstest.log").read_text()[-3000:]
    ds = airflow_run / "trial" / "dataset"
    assert table_files(ds, "events") and table_files(ds, "counters")
    wm = json.loads((airflow_run / "watermark_after_cli.json").read_text())
    assert wm and wm["committed_until"]


def test_announce_new_data_skipped_when_nothing_landed(airflow_run):
    """docs/airflow.md:12: `announce_new_data` updates the asset when rows landed (skipped otherwise)."""
    nothing = _result(airflow_run, "ingest_nothing_new")
    assert nothing["run"] == "success", nothing
    assert nothing["tasks"]["announce_new_data"] == "skipped"
    landed = _result(airflow_run, "ingest_new_rows")
    assert landed["run"] == "success", landed
    assert landed["tasks"]["announce_new_data"] == "success"
    assert all(s == "success" for s in landed["tasks"].values()), landed["tasks"]


def test_baseline_audit_run_publishes_and_xcom_ingested_until(airflow_run):
    """docs/airflow.md:13 (publish: findings/<stamp>/{findings,clusters,host_alerts}.parquet +
    report.html, findings/LATEST) and :72-73 (the audit's XCom records `committed_until` as
    `ingested_until`)."""
    r = _result(airflow_run, "audit")
    assert r["run"] == "success", r
    # (refresh_summaries is skipped: ingest wrote current summaries, docs/airflow.md:13)
    assert {t: s for t, s in r["tasks"].items() if t != "refresh_summaries"} == {
        t: "success" for t in r["tasks"] if t != "refresh_summaries"}, r["tasks"]
    assert r["tasks"].get("refresh_summaries") == "skipped", r["tasks"]
    work = airflow_run / "trial"
    wm = json.loads((work / "dataset" / "_ingest_watermark.json").read_text())
    assert r["xcom"]["audit"]["ingested_until"] == wm["committed_until"]
    stamp = (work / "findings" / "LATEST").read_text().strip()
    run_dir = work / "findings" / stamp
    for f in ("findings.parquet", "clusters.parquet", "host_alerts.parquet", "report.html"):
        assert (run_dir / f).exists(), f


def test_weekly_run_with_week_param(airflow_run):
    """docs/airflow.md:14,218-219: trigger `probe_coverage_weekly` with the param `week`;
    docs/airflow.md:31: reports <ISO week>/report.{html,md} + coverage_*.parquet."""
    r = _result(airflow_run, "param_over_variable")
    assert r["run"] == "success", r
    week = (airflow_run / "trial" / "week").read_text()
    rep = airflow_run / "trial" / "reports" / week
    assert (rep / "report.html").exists() and (rep / "report.md").exists()
    assert glob.glob(f"{rep}/coverage_*.parquet")


def test_weekly_manual_run_reports_last_complete_week(airflow_run):
    """docs/airflow.md:14: a manual run without `week` reports the last ISO week complete when
    triggered (:218-219: data of the current week needs the param)."""
    r = _result(airflow_run, "weekly_default_week")
    last = iso_week(dt.datetime.now(dt.UTC) - dt.timedelta(days=7))
    assert r["run"] == "success", r
    assert r["xcom"]["coverage_report"]["week"] == last, r["xcom"]["coverage_report"]
    assert (airflow_run / "trial" / "reports" / last / "report.html").exists()


def test_bad_config_fails_validate_config_once_with_one_line(airflow_run):
    """docs/airflow.md:20-22 (a bad value fails `validate_config` with one line), :86-87 (not
    retried), docs/architecture.md:1193-1195 (`Task exited exit_code=<message>`, no traceback)."""
    r = _result(airflow_run, "bad_config")
    assert r["run"] == "failed", r
    assert r["tasks"]["validate_config"] == "failed"
    assert r["tasks"]["ingest"] == "upstream_failed"
    assert r["tries"]["validate_config"] == 1
    log = (airflow_run / "script.log").read_text()
    msg = (f"{airflow_run / 'trial' / 'bad.yaml'}: key 'retention.dataset_days': expected an integer "
           ">= 1 and <= 106751, found 'ninety' (str)")
    lines = [ln for ln in log.splitlines() if "Task exited" in ln and "ninety" in ln]
    assert lines, log[-4000:]
    assert any(re.search(r"Task exited\b.*exit_code=\"?" + re.escape(msg), ln) for ln in lines), lines


@pytest.mark.parametrize(("name", "expect"), [
    ("env_only", "success"), ("env_loses_to_variable", "failed"), ("param_over_variable", "success")])
def test_config_path_param_then_variable_then_env(airflow_run, name, expect):
    """docs/airflow.md:18-19: the path comes from the DAG param `config`, else the Airflow
    Variable `tracebase_config`, else `$TRACEBASE_CONFIG` (a bad one fails validate_config)."""
    r = _result(airflow_run, name)
    assert r["tasks"]["validate_config"] == expect, r
