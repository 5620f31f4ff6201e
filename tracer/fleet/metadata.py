"""Job metadata for the fleet tracer's records: the job id and key/values of a traced process.

From its environment (SLURM_JOB_ID, ...), its cgroup, the daemon's own environment and a
metadata file (--metadata-file, re-read when it changes). Kept apart from tracer.fleet.daemon
(pyarrow, numpy) because `tracer run` parses the metadata file among its checks, before it
imports those (tracer.fleet.config.check_run).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from tracer import yamlio
from tracer.errors import TracebaseError
from tracer.inputs import read_regular_text

# A job metadata file is a few KiB of key: value; a larger one is refused rather than parsed while
# the drain thread waits on the enricher.
MAX_METADATA_BYTES = 1 << 20

JOB_ENV_KEYS = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID")
META_ENV_PREFIXES = ("SLURM_JOB_", "SLURM_CLUSTER_NAME", "SLURM_STEP_ID", "TRACEBASE_META_")


class Enricher:
    """Job id and metadata for a traced process: its environment (SLURM_JOB_ID, ...), its cgroup,
    the daemon's own environment, and a metadata file (re-read when it changes)."""

    def __init__(self, metadata_file: Path | None, environ: dict[str, str] | None = None, log=None):
        self.metadata_file = metadata_file
        self.log = log  # where a metadata file refused while running is said (the daemon's log)
        env = dict(os.environ if environ is None else environ)
        self.base_job = next((env[k] for k in JOB_ENV_KEYS if env.get(k)), None)
        self.base_meta = {k: v for k, v in env.items() if k.startswith(META_ENV_PREFIXES)}
        self._file_meta: dict[str, str] = {}
        self._file_key: tuple | None = None
        self._by_pid: dict[int, tuple[str | None, dict[str, str]]] = {}
        if metadata_file is not None:
            self._file_meta = self._load_file(strict=True)

    @staticmethod
    def _key(st: os.stat_result) -> tuple:
        # mtime alone misses a replacement within the file system's timestamp granularity
        return st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev

    def _load_file(self, strict: bool) -> dict[str, str]:
        """The metadata file as a flat mapping. At start (strict) a bad file is refused; while
        running, a file rewritten badly (a syntax error, a duplicate key, a FIFO, a huge file) is
        logged once and the previous metadata kept: the tracer never stops or blocks for it.
        The file is opened non-blocking and must be a regular file of at most
        MAX_METADATA_BYTES: a FIFO put in its place blocked the whole daemon (its snapshots,
        SIGTERM) until a writer came, and a huge file held the drain lock while it parsed."""
        path = self.metadata_file
        try:
            self._file_key = self._key(path.stat())
            text = read_regular_text(path, "a YAML/JSON metadata file", MAX_METADATA_BYTES)
            doc = yamlio.safe_load(text, str(path))
        except FileNotFoundError:
            return self._refuse(strict, f"{path}: no such metadata file")
        except yaml.YAMLError as exc:
            return self._refuse(strict, f"{path}: expected a YAML/JSON mapping, found a syntax error "
                                        f"({str(exc).splitlines()[0]})")
        except UnicodeDecodeError as exc:
            return self._refuse(strict, f"{path}: expected UTF-8 YAML/JSON, found an undecodable byte at offset "
                                        f"{exc.start}")
        except TracebaseError as exc:  # a FIFO, a device, too big, a duplicate key, nesting
            return self._refuse(strict, str(exc))
        except OSError as exc:  # a directory, unreadable, vanished between stat and read
            return self._refuse(strict, f"{path}: expected a readable metadata file, found {exc.strerror}")
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            return self._refuse(strict, f"{path}: expected a mapping of key: value, found {type(doc).__name__}")
        return {str(k): json.dumps(v) if isinstance(v, (dict, list)) else str(v) for k, v in doc.items()}

    def _refuse(self, strict: bool, message: str) -> dict[str, str]:
        if strict:
            raise TracebaseError(message)
        if self.log is not None:
            self.log(f"--metadata-file: {message}; keeping the previous metadata")
        return self._file_meta

    def refresh(self) -> None:
        """Re-read the metadata file if it changed; forget per-process answers (pids recycle)."""
        self._by_pid.clear()
        if self.metadata_file is None:
            return
        try:
            key = self._key(self.metadata_file.stat())
        except OSError:
            return
        if key != self._file_key:
            self._file_meta = self._load_file(strict=False)

    def for_pid(self, pid: int) -> tuple[str | None, dict[str, str]]:
        if pid not in self._by_pid:
            self._by_pid[pid] = self._lookup(pid)
        return self._by_pid[pid]

    def _lookup(self, pid: int) -> tuple[str | None, dict[str, str]]:
        meta = dict(self.base_meta)
        meta.update(self._file_meta)
        job = self._file_meta.get("job_id") or self.base_job
        cgroup = process_cgroup(pid)
        if cgroup:
            meta["cgroup"] = cgroup
        penv = process_environ(pid)
        for key in JOB_ENV_KEYS:
            if penv.get(key):
                job = penv[key]
                break
        meta.update({k: v for k, v in penv.items() if k.startswith(META_ENV_PREFIXES)})
        if job is None and cgroup:
            m = re.search(r"job_(\d+)", cgroup)  # slurm's cgroup v2 layout: .../job_<id>/step_...
            job = m.group(1) if m else None
        return job, meta


def process_cgroup(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return text.splitlines()[0].split(":", 2)[-1] if text else None


def process_environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out
