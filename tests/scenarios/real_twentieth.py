"""A twentieth set of real programs with one real fault each: faults where **no system call
fails** -- or where the first failed call is only a consequence -- so the point a person needs
named is a successful call that went another way, a call whose answer was different, or a
process's death by a signal nothing failed before.

- **a wrong answer from good calls**: a model config read successfully that names another model
  (the next open is another file: ``models/legacy.bin``), a blue-green deploy's ``current``
  symlink left on the old colour (readlink answers, the next open is ``releases/blue``), an
  environment file choosing the CPU backend module over the GPU one (python imports another
  file), a VERSION file read successfully whose content fails the job's compatibility check
  (its message, exit 1);
- **a successful call with a different answer that matters**: an input directory whose listing
  comes back empty (getdents64 returns only "." and ".."; the job says "no inputs" and exits
  1), a manifest that is empty (read returns 0 at its first call; the job does nothing, exit
  0), a C line counter's export that is empty (its first read() returns 0: "no records");
- **the first failed call a consequence of a successful one**: a build step writing its result
  to the directory its config names (``staging`` on the bad host) -- it succeeds -- so the
  publish step's ``cp`` of the usual path fails ENOENT later; a supervisor whose config gives its
  worker a deadline below the worker's time, killing it (kill SIGTERM succeeds; the worker is cut
  off, the supervisor exits 1); a job with an ``alarm`` watchdog blocking in ``flock`` on a lock
  a stale process holds (flock ERESTARTSYS when SIGALRM kills it: the stall's place); a sweep
  whose widened pattern unlinks the live ``params.json`` (the next step's cp fails ENOENT);
  dash's ``cat incoming/*.csv`` over an empty directory (the glob's listing comes back empty,
  the pattern stays as it is, cat fails ENOENT on it);
- **death by a signal with no failing call before it**: SIGXCPU from ``ulimit -t`` on a job
  whose input grew, SIGFPE in a C worker dividing by a batch size of 0 read from its config
  (the python supervisor's wait4 reports the signal), abort() in a C reader after a short read
  of a truncated file (SIGABRT through tgkill), SIGBUS in a job whose mapped shard a cleaner
  process of the same run truncated (its retention pattern matched the shard: the cleaner's
  successful truncate is the first divergence, the job's death its consequence).

Each job is one python script, ``job.py`` (a plan of steps, a prefix of input reads first),
two small C programs, or a shell script around them. Same types and harness as real.py
(`Scenario`, `NoAnomalyCase`); the expectations are what ``strace -f`` shows a person looking
for the fault, decided before the differ ran.

The good-vs-good cases (`QUIET_TWENTIETH`) carry the noise of such jobs: config values and
file sizes that vary (a manifest of 1 to 2,000 lines), directory listings of 5 to 9 inputs in
any order, a release symlink whose dated target changes every deploy, a supervisor polling its
worker a varying number of times before it ends, a lock another process frees after 0 to 300
ms (flock waits or not), CPU work of varying length under ``ulimit -t``.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from .catalog import write
from .harness import NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
STDERR = "/dev/null"  # the runs' stdout and stderr: where a message without an errno goes
END = frozenset({"(end of thread)"})
PROBES_OPEN = frozenset({"openat", "open"})

JOB_PY = r'''
import fcntl, json, mmap, os, signal, subprocess, sys, time

plan = json.load(open(sys.argv[1]))


def read(s):  # the job's prefix: its inputs, one by one
    for name in sorted(os.listdir(s["dir"])):
        with open(os.path.join(s["dir"], name), "rb") as f:
            f.read()


def model(s):  # the config names the model; its header must be the job's format
    with open(s["config"]) as f:
        name = json.load(f)["model"]
    with open(os.path.join(s["models"], name + ".bin"), "rb") as f:
        head = f.read(8)
    if head != b"TBMODEL2":
        sys.exit(f"job: model {name}: unsupported format {head!r}")
    with open(s["out"], "w") as f:
        f.write(f"loaded {name}\n")


def release(s):  # the deploy's current symlink names the colour to serve
    colour = os.readlink(s["link"])
    with open(os.path.join(s["releases"], colour, "app.conf")) as f:
        conf = f.read()
    with open(s["out"], "w") as f:
        f.write(f"serving {colour}: {len(conf)} bytes of config\n")


def backend(s):  # JOB_BACKEND chooses the backend module
    sys.path.insert(0, s["dir"])
    mod = __import__("backend_" + os.environ.get("JOB_BACKEND", "gpu"))
    with open(s["out"], "w") as f:
        f.write(mod.run() + "\n")


def version(s):  # the data's format version must be one the job reads
    with open(s["file"]) as f:
        v = f.read().strip()
    if v not in s["accept"]:
        sys.exit(f"job: data format {v} is not supported (need {', '.join(s['accept'])})")
    with open(s["out"], "w") as f:
        f.write(f"format {v}\n")


def inputs(s):  # every file in the input directory, summed
    names = sorted(os.listdir(s["dir"]))
    if not names:
        sys.exit(f"job: no inputs in {s['dir']}")
    total = 0
    for n in names:
        with open(os.path.join(s["dir"], n), "rb") as f:
            total += len(f.read())
    with open(s["out"], "w") as f:
        f.write(f"{len(names)} inputs, {total} bytes\n")


def manifest(s):  # a manifest of shard names; the job copies each
    with open(s["file"]) as f:
        names = [line.strip() for line in f if line.strip()]
    with open(s["out"], "w") as out:
        for n in names:
            with open(os.path.join(s["dir"], n), "rb") as f:
                out.write(f"{n} {len(f.read())}\n")


def build(s):  # the build step writes its result where its config says
    with open(s["config"]) as f:
        out_dir = json.load(f)["out_dir"]
    os.makedirs(os.path.join(s["base"], out_dir), exist_ok=True)
    with open(os.path.join(s["base"], out_dir, "result.json"), "w") as f:
        json.dump({"ok": True}, f)


def supervise(s):  # run the worker under the config's deadline; kill it past the deadline
    with open(s["config"]) as f:
        deadline = json.load(f)["deadline"]
    child = subprocess.Popen(s["worker"])
    end = time.monotonic() + deadline
    while child.poll() is None:
        if time.monotonic() > end:
            child.send_signal(signal.SIGTERM)
            child.wait()
            sys.exit(f"job: worker over its deadline of {deadline} s: killed")
        time.sleep(0.02)
    if child.returncode:
        sys.exit(f"job: worker failed ({child.returncode})")


def locked(s):  # an alarm watchdog around taking the job's lock
    with open(s["lock"], "w") as f:
        signal.alarm(s["watchdog"])
        fcntl.flock(f, fcntl.LOCK_EX)
        signal.alarm(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        with open(s["out"], "w") as o:
            o.write("locked work done\n")
        fcntl.flock(f, fcntl.LOCK_UN)


def compute(s):  # CPU work proportional to the input's size
    with open(s["file"], "rb") as f:
        n = len(f.read())
    acc = 0
    for i in range(n * s["per_byte"]):
        acc = (acc * 31 + i) % 1000003
    with open(s["out"], "w") as f:
        f.write(f"{acc}\n")


def supervise_c(s):  # run a C worker per job config; report how each ended
    for conf in s["confs"]:
        pid = os.fork()
        if pid == 0:
            os.execv(s["worker"], [s["worker"], conf])
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            sys.exit(f"job: worker for {conf} killed by signal {os.WTERMSIG(status)}")
        if os.WEXITSTATUS(status):
            sys.exit(f"job: worker for {conf} failed")


def mapped(s):  # map a shard, let the run's cleaner go over the spool, then use the shard
    with open(s["shard"], "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    subprocess.run(s["cleaner"], check=True)
    total = 0
    for off in range(0, len(m), 4096):
        total += m[off]
    with open(s["out"], "w") as f:
        f.write(f"{total}\n")


if __name__ == "__main__":
    for step in plan:
        globals()[step["op"]](step)
'''

CLEANER_PY = r'''
import fnmatch, json, os, sys

conf = json.load(open(sys.argv[1]))
for name in sorted(os.listdir(conf["spool"])):
    if fnmatch.fnmatch(name, conf["expire"]):
        os.truncate(os.path.join(conf["spool"], name), 0)  # keep the file for its writer, drop the data
'''

WORKER_C = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    char line[128];
    volatile int batch = 1, items = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "batch=", 6) == 0) batch = atoi(line + 6);
        if (strncmp(line, "items=", 6) == 0) items = atoi(line + 6);
    }
    fclose(f);
    int rounds = items / batch;  /* batch=0: SIGFPE */
    printf("%d rounds\n", rounds);
    return 0;
}
'''

READER_C = r'''
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    uint32_t count;
    if (read(fd, &count, sizeof count) != sizeof count) abort();
    size_t want = (size_t)count * 32;
    char *buf = malloc(want);
    ssize_t got = read(fd, buf, want);
    if (got != (ssize_t)want) abort();  /* a short read: the file was cut */
    close(fd);
    unsigned long sum = 0;
    for (size_t i = 0; i < want; i++) sum += (unsigned char)buf[i];
    printf("%u records, sum %lu\n", count, sum);
    return 0;
}
'''


# --- the python job ----------------------------------------------------------------------------
def _inputs(base: Path, n: int = 30) -> None:
    data = base / "data"
    data.mkdir()
    for i in range(n):
        write(data / f"in{i:03d}.rec", f"record {i}\n" * (i % 7 + 1))


def _plan(base: Path, *steps: dict) -> None:
    _inputs(base)
    out = base / "out"
    out.mkdir()
    write(base / "job.py", JOB_PY)
    write(base / "plan.json", json.dumps([{"op": "read", "dir": f"{base}/data"}, *steps]))


def _job(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/job.py", f"{b}/plan.json"]


def _cc(base: Path, name: str, source: str) -> str:
    src = write(base / f"{name}.c", source)
    subprocess.run(["gcc", "-O1", "-o", str(base / name), str(src)], check=True)
    return str(base / name)


def model_config_names_legacy(base: Path, bad: bool) -> None:
    models = base / "models"
    models.mkdir()
    write(models / "resnet.bin", "TBMODEL2" + "w" * 4000)
    write(models / "legacy.bin", "TBMODEL1" + "w" * 4000)  # the old model, still installed
    write(base / "model.json", json.dumps({"model": "legacy" if bad else "resnet", "batch": 32}))
    _plan(base, {"op": "model", "config": f"{base}/model.json", "models": str(models), "out": f"{base}/out/model"})


def release_symlink_stale(base: Path, bad: bool) -> None:
    rel = base / "releases"
    for colour in ("blue", "green"):
        (rel / colour).mkdir(parents=True)
        write(rel / colour / "app.conf", f"colour={colour}\nworkers=8\n")
    # the switch to green never happened on the bad host: current still names blue
    (base / "current").symlink_to("blue" if bad else "green")
    _plan(base, {"op": "release", "link": f"{base}/current", "releases": str(rel), "out": f"{base}/out/serving"})


BACKEND_PY = "def run():\n    return {name!r}\n"


def env_selects_cpu_backend(base: Path, bad: bool) -> None:
    backends = base / "backends"
    backends.mkdir()
    for name in ("gpu", "cpu"):
        write(backends / f"backend_{name}.py", BACKEND_PY.format(name=name))
    # the bad host's job environment file sets the fallback backend
    write(base / "job.env", "JOB_BACKEND=cpu\n" if bad else "JOB_BACKEND=gpu\n")
    write(base / "start.sh", f"set -a\n. {base}/job.env\nexec {PY3} -S {base}/job.py {base}/plan.json\n")
    _plan(base, {"op": "backend", "dir": str(backends), "out": f"{base}/out/backend"})


def _start(b: Path) -> list[str]:
    return ["/bin/sh", f"{b}/start.sh"]


def version_unsupported(base: Path, bad: bool) -> None:
    write(base / "VERSION", "format-c\n" if bad else "format-b\n")
    _plan(base, {"op": "version", "file": f"{base}/VERSION", "accept": ["format-a", "format-b"],
                 "out": f"{base}/out/version"})


def inputs_dir_empty(base: Path, bad: bool) -> None:
    inp = base / "inputs"
    inp.mkdir()
    if not bad:  # the bad host's staging step copied nothing
        for i in range(6):
            write(inp / f"batch{i}.csv", f"{i},x\n" * 50)
    _plan(base, {"op": "inputs", "dir": str(inp), "out": f"{base}/out/summary"})


def manifest_empty(base: Path, bad: bool) -> None:
    shards = base / "shards"
    shards.mkdir()
    names = [f"shard{i}.bin" for i in range(5)]
    for n in names:
        write(shards / n, n * 100)
    # the bad host's manifest was written by a generator that crashed before writing a line
    write(base / "manifest.txt", "" if bad else "".join(f"{n}\n" for n in names))
    _plan(base, {"op": "manifest", "file": f"{base}/manifest.txt", "dir": str(shards), "out": f"{base}/out/copied"})


def build_writes_elsewhere(base: Path, bad: bool) -> None:
    (base / "out").mkdir()
    (base / "publish").mkdir()
    write(base / "job.py", JOB_PY)
    write(base / "build.json", json.dumps({"out_dir": "staging" if bad else "out"}))
    write(base / "plan.json", json.dumps([{"op": "build", "config": f"{base}/build.json", "base": str(base)}]))
    write(base / "start.sh", f"set -e\n{PY3} -S {base}/job.py {base}/plan.json\n"
          f"cp {base}/out/result.json {base}/publish/result.json\n")


def deadline_kills_worker(base: Path, bad: bool) -> None:
    write(base / "worker.sh", f"sleep 0.6\necho done > {base}/out/worker.done\n", 0o755)
    write(base / "deadline.json", json.dumps({"deadline": 0.2 if bad else 20}))
    _plan(base, {"op": "supervise", "config": f"{base}/deadline.json", "worker": ["/bin/sh", f"{base}/worker.sh"]})


class _Holder:
    """A stale process of a crashed earlier run holding a lock (outside the recording)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self, lock: Path, seconds: float = 30) -> None:
        self.stop()
        code = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
                "print('held', flush=True)\ntime.sleep(float(sys.argv[2]))\n")
        self.proc = subprocess.Popen([PY3, "-S", "-c", code, str(lock), str(seconds)], stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # the lock is held from here

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


HOLDER = _Holder()


def lock_held_alarm(base: Path, bad: bool) -> None:
    _plan(base, {"op": "locked", "lock": f"{base}/job.lock", "watchdog": 2, "out": f"{base}/out/locked"})
    write(base / "job.lock", "")
    if bad:
        HOLDER.start(base / "job.lock")


def _stop_holder(base: Path) -> None:  # noqa: ARG001 - a teardown
    HOLDER.stop()


def input_grew_cpu_limit(base: Path, bad: bool) -> None:
    # the good runs' input needs a few ms of CPU; the bad host's, 1,000 times as much: 4 s, past the limit
    write(base / "input.bin", "x" * (4_000_000 if bad else 4_000))
    _plan(base, {"op": "compute", "file": f"{base}/input.bin", "per_byte": 20, "out": f"{base}/out/acc"})
    write(base / "start.sh", f"ulimit -S -t 1\nexec {PY3} -S {base}/job.py {base}/plan.json\n")


def worker_zero_batch_sigfpe(base: Path, bad: bool) -> None:
    worker = _cc(base, "worker", WORKER_C)
    confs = []
    for i, name in enumerate(("train", "eval", "export")):
        batch = 0 if bad and name == "eval" else 16
        confs.append(str(write(base / f"{name}.conf", f"items={1000 + i * 64}\nbatch={batch}\n")))
    _plan(base, {"op": "supervise_c", "worker": worker, "confs": confs})


def reader_short_read_abort(base: Path, bad: bool) -> None:
    _cc(base, "reader", READER_C)
    count = 2000
    body = bytes(range(256)) * (count * 32 // 256)
    if bad:  # the copy was cut at 40 KiB
        body = body[:40 * 1024]
    (base / "records.bin").write_bytes(count.to_bytes(4, "little") + body)
    _inputs(base)


def _reader(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"cat {b}/data/* > /dev/null && exec {b}/reader {b}/records.bin"]


def cleaner_truncates_mapped_shard(base: Path, bad: bool) -> None:
    spool = base / "spool"
    spool.mkdir()
    write(spool / "shard-live.dat", "s" * 64 * 1024)
    write(spool / "old-1.tmp", "t" * 100)
    write(base / "cleaner.py", CLEANER_PY)
    # the bad host's retention pattern was widened to every file of the spool
    write(base / "retention.json", json.dumps({"spool": str(spool), "expire": "*" if bad else "*.tmp"}))
    _plan(base, {"op": "mapped", "shard": f"{spool}/shard-live.dat", "out": f"{base}/out/sum",
                 "cleaner": [PY3, "-S", f"{base}/cleaner.py", f"{base}/retention.json"]})


SWEEP_PY = r'''
import fnmatch, json, os, sys

conf = json.load(open(sys.argv[1]))
for name in sorted(os.listdir(conf["dir"])):
    if fnmatch.fnmatch(name, conf["stale"]):
        os.unlink(os.path.join(conf["dir"], name))
'''

STAGE_SH = """\
set -e
{py} -S {base}/sweep.py {base}/sweep.json
cat {base}/run/*.lock > /dev/null || true
cp {base}/run/params.json {base}/out/params.json
"""


def sweep_removes_live_params(base: Path, bad: bool) -> None:
    run = base / "run"
    run.mkdir()
    (base / "out").mkdir()
    write(run / "params.json", json.dumps({"lr": 0.1}))
    write(run / "old.lock", "1\n")
    write(base / "sweep.py", SWEEP_PY)
    # the bad host's sweep pattern was widened from the stale locks to everything in run/
    write(base / "sweep.json", json.dumps({"dir": str(run), "stale": "*" if bad else "*.lock"}))
    write(base / "start.sh", STAGE_SH.format(py=PY3, base=base))


COUNT_C = r'''
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 2; }
    char buf[4096];
    long lines = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    close(fd);
    if (lines == 0) { fprintf(stderr, "count: %s: no records\n", argv[1]); return 1; }
    printf("%ld records\n", lines);
    return 0;
}
'''


def c_reader_input_empty(base: Path, bad: bool) -> None:
    _cc(base, "count", COUNT_C)
    # the bad host's export step created the file and crashed before writing a record
    write(base / "export.csv", "" if bad else "".join(f"{i},row\n" for i in range(300)))
    _inputs(base)


def _count(b: Path) -> list[str]:
    return ["/bin/sh", "-c", f"cat {b}/data/* > /dev/null && exec {b}/count {b}/export.csv"]


def glob_matches_nothing(base: Path, bad: bool) -> None:
    inp = base / "incoming"
    inp.mkdir()
    (base / "out").mkdir()
    if not bad:  # the bad host's upstream transfer delivered nothing
        for i in range(4):
            write(inp / f"part{i}.csv", f"{i},x\n" * 20)
    # dash leaves a pattern that matches nothing as it is: cat then opens 'incoming/*.csv'
    write(base / "start.sh", f"cat {inp}/*.csv > {base}/out/all.csv\n")


REAL_TWENTIETH: list[Scenario] = [
    # a wrong answer from good calls
    Scenario("nofail_model_config_names_legacy", "python3 job: model from its JSON config", _job,
             model_config_names_legacy, PROBES_OPEN, None, lambda b: f"{b}/models/legacy.bin",
             description="the config, read successfully, names the legacy model: the next open is another "
                         "file (it opens too), then the job exits 1 on its format"),
    Scenario("nofail_release_symlink_left_on_blue", "python3 job: readlink current, open its release", _job,
             release_symlink_stale, PROBES_OPEN, None, lambda b: f"{b}/releases/blue/app.conf",
             description="a blue-green switch that never happened: current still names blue, the job serves "
                         "the old release, exit 0"),
    Scenario("nofail_env_file_selects_cpu_backend", "sh sources job.env, python3 imports backend_$JOB_BACKEND",
             _start, env_selects_cpu_backend, frozenset({"openat", "open", "newfstatat", "stat", "statx"}), None,
             lambda b: f"{b}/backends/backend_cpu.py",
             description="the environment file sets JOB_BACKEND=cpu: python imports the fallback module"),
    Scenario("nofail_version_file_unsupported", "python3 job: data format from VERSION", _job,
             version_unsupported, frozenset({"write"}), None, lambda b: STDERR,
             description="VERSION, read successfully, names a format the job does not read: message, exit 1"),
    # a successful call with another answer
    Scenario("nofail_inputs_dir_listing_empty", "python3 job: every file of inputs/", _job, inputs_dir_empty,
             frozenset({"getdents64", "getdents"}), None, lambda b: f"{b}/inputs",
             description="the input directory is empty: getdents64 returns 0 at its first call; 'no inputs', "
                         "exit 1"),
    Scenario("nofail_manifest_empty", "python3 job: copy the shards its manifest lists", _job, manifest_empty,
             frozenset({"read"}), None, lambda b: f"{b}/manifest.txt",
             description="the manifest is empty: its first read returns 0, the job copies nothing, exit 0"),
    # the first failed call a consequence
    Scenario("nofail_build_writes_to_staging_publish_enoent", "sh: python3 build step, then cp its result",
             _start, build_writes_elsewhere, frozenset({"openat", "open", "mkdir", "mkdirat"}), None,
             lambda b: f"{b}/staging*",
             description="the build's config names staging/ as its output: the build succeeds there, the "
                         "publish step's cp of out/result.json fails ENOENT (the consequence)"),
    Scenario("nofail_deadline_below_worker_time_killed", "python3 supervisor with a deadline from its config",
             _job, deadline_kills_worker, frozenset({"kill"}), None, lambda b: NO_PATH,
             description="the config's deadline (0.2 s) is below the worker's 0.6 s: the supervisor's kill "
                         "SIGTERM succeeds, the worker is cut off, exit 1"),
    Scenario("nofail_alarm_watchdog_lock_held", "python3 job: alarm(2) watchdog around flock", _job,
             lock_held_alarm, frozenset({"flock"}), "ERESTARTSYS", lambda b: f"{b}/job.lock",
             teardown=_stop_holder,
             description="a stale process holds the job's lock: flock blocks until SIGALRM kills the job "
                         "(the call ends ERESTARTSYS, strace: +++ killed by SIGALRM +++)"),
    # death by a signal
    Scenario("nofail_input_grew_sigxcpu", "sh: ulimit -S -t 1; python3 job computes over its input", _start,
             input_grew_cpu_limit, END, None, lambda b: NO_PATH,
             description="the input grew 1,000 times: the job is killed by SIGXCPU at its soft CPU limit "
                         "(ulimit -S -t 1) mid-computation, no call fails"),
    Scenario("nofail_worker_zero_batch_sigfpe", "python3 supervisor runs a C worker per config", _job,
             worker_zero_batch_sigfpe, END, None, lambda b: NO_PATH,
             description="eval.conf says batch=0: the C worker divides by it, SIGFPE (wait4 reports it)"),
    Scenario("nofail_short_read_abort", "sh: cat inputs, then a C reader of a record file", _reader,
             reader_short_read_abort, frozenset({"tgkill", "(end of thread)"}), None, lambda b: NO_PATH,
             description="the record file was cut at 40 KiB: read returns short, the reader calls abort() "
                         "(tgkill SIGABRT; strace: +++ killed by SIGABRT +++)"),
    Scenario("nofail_cleaner_truncates_mapped_shard_sigbus", "python3 job maps a shard, runs the cleaner, reads",
             _job, cleaner_truncates_mapped_shard, frozenset({"truncate", "ftruncate"}), None,
             lambda b: f"{b}/spool/shard-live.dat",
             description="the cleaner's retention pattern matches the live shard: its truncate succeeds, the "
                         "job touching its mapping dies of SIGBUS after"),
    Scenario("nofail_sweep_removes_live_params_cp_enoent", "sh -e: python3 sweep of run/, then cp run/params.json",
             _start, sweep_removes_live_params, frozenset({"unlink", "unlinkat"}), None,
             lambda b: f"{b}/run/params.json",
             description="the sweep's pattern matches everything in run/: its unlink of params.json succeeds, "
                         "the next step's cp fails ENOENT (the consequence)"),
    Scenario("nofail_c_reader_export_empty", "sh: cat inputs, then a C line counter of the export", _count,
             c_reader_input_empty, frozenset({"read"}), None, lambda b: f"{b}/export.csv",
             description="the export is empty: the counter's first read returns 0, it says 'no records', exit 1"),
    Scenario("nofail_glob_matches_nothing_cat_enoent", "sh (dash): cat incoming/*.csv > out/all.csv", _start,
             glob_matches_nothing, frozenset({"getdents64", "getdents"}), None, lambda b: f"{b}/incoming",
             description="incoming/ is empty: the shell's listing has only . and .., the pattern stays as "
                         "it is and cat fails ENOENT on 'incoming/*.csv' (the consequence)"),
]


# --- good-vs-good noise -----------------------------------------------------------------------
def _config_values_vary(base: Path, run: int) -> None:
    model_config_names_legacy(base, False)
    write(base / "model.json", json.dumps({"model": "resnet", "batch": random.choice([8, 32, 128, 1024]),
                                           "seed": random.randint(0, 10**9)}))


def _listing_varies(base: Path, run: int) -> None:
    inp = base / "inputs"
    inp.mkdir()
    names = [f"batch{i}-{random.randint(0, 10**6)}.csv" for i in range(random.randint(5, 9))]
    for n in names:
        write(inp / n, "1,x\n" * random.randint(1, 4000))
    _plan(base, {"op": "inputs", "dir": str(inp), "out": f"{base}/out/summary"})


def _manifest_sizes_vary(base: Path, run: int) -> None:
    shards = base / "shards"
    shards.mkdir()
    n = random.choice([1, 3, 40, 2000])
    names = [f"shard{i}.bin" for i in range(n)]
    for name in names:
        write(shards / name, "z" * random.randint(1, 9000))
    write(base / "manifest.txt", "".join(f"{name}\n" for name in names))
    _plan(base, {"op": "manifest", "file": f"{base}/manifest.txt", "dir": str(shards), "out": f"{base}/out/copied"})


def _release_dated(base: Path, run: int) -> None:
    rel = base / "releases"
    target = f"2026-12-0{run + 1}T{random.randint(10, 23)}{random.randint(10, 59)}"
    (rel / target).mkdir(parents=True)
    write(rel / target / "app.conf", "workers=8\n")
    (base / "current").symlink_to(target)
    _plan(base, {"op": "release", "link": f"{base}/current", "releases": str(rel), "out": f"{base}/out/serving"})


def _worker_time_varies(base: Path, run: int) -> None:
    write(base / "worker.sh", f"sleep 0.{random.randint(1, 4)}\necho done > {base}/out/worker.done\n", 0o755)
    write(base / "deadline.json", json.dumps({"deadline": 20}))
    _plan(base, {"op": "supervise", "config": f"{base}/deadline.json", "worker": ["/bin/sh", f"{base}/worker.sh"]})


def _lock_freed_late(base: Path, run: int) -> None:
    _plan(base, {"op": "locked", "lock": f"{base}/job.lock", "watchdog": 10, "out": f"{base}/out/locked"})
    write(base / "job.lock", "")
    HOLDER.start(base / "job.lock", seconds=random.choice([0, 0.1, 0.3]))


def _cpu_work_varies(base: Path, run: int) -> None:
    write(base / "input.bin", "x" * random.randint(500, 6000))
    _plan(base, {"op": "compute", "file": f"{base}/input.bin", "per_byte": 20, "out": f"{base}/out/acc"})
    write(base / "start.sh", f"ulimit -t 5\nexec {PY3} -S {base}/job.py {base}/plan.json\n")


QUIET_TWENTIETH: list[NoAnomalyCase] = [
    NoAnomalyCase("nofail_config_values_vary", _job, _config_values_vary,
                  description="the model config's batch and seed change every run; the model does not"),
    NoAnomalyCase("nofail_listing_of_5_to_9_inputs", _job, _listing_varies,
                  description="an input directory of 5 to 9 files, random names and sizes"),
    NoAnomalyCase("nofail_manifest_of_1_to_2000_lines", _job, _manifest_sizes_vary,
                  description="a manifest of 1, 3, 40 or 2,000 shards of random sizes"),
    NoAnomalyCase("nofail_release_symlink_dated_target", _job, _release_dated,
                  description="current names a dated release directory, another every deploy"),
    NoAnomalyCase("nofail_supervisor_polls_varying_times", _job, _worker_time_varies,
                  description="the worker takes 0.1 to 0.4 s: the supervisor polls it 5 to 20 times"),
    NoAnomalyCase("nofail_lock_freed_after_0_to_300ms", _job, _lock_freed_late,
                  description="another process frees the job's lock after 0 to 300 ms: flock waits or not"),
    NoAnomalyCase("nofail_cpu_work_of_varying_length", _start, _cpu_work_varies,
                  description="CPU work over 500 to 6,000 bytes under ulimit -t 5"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the lock holder goes with its case's teardown (stopped again
    here in case that case was interrupted, and after the noise case that starts it)."""
    HOLDER.stop()


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
