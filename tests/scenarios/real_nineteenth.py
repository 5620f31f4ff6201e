"""A nineteenth set of real programs with one real fault each: where in a process tree the
failing call is made -- not by the process the job started, but by a grandchild, a daemon
whose parent already exited, the middle stage of a pipeline, one of several parallel workers,
a process whose exec fails inside a spawn, a wrapper's child or an orphan reparented to a
subreaper -- with ordinary faults (a missing, unreadable or non-executable file, a full
tmpfs, a refused bind on loopback) placed there.

- **a grandchild**: bash's subshell whose ``cat`` of a stage's config finds it missing
  (openat ENOENT, two forks below the script);
- **a double-forked daemon** (fork, setsid, fork, the middle process exits at once; the
  launcher waits on the daemon's readiness pipe): the daemon's state file unreadable to the
  job's account (openat EACCES); a daemon nobody waits for, its spool file missing 0.3 s after
  its launcher exited (openat ENOENT);
- **the middle stage of a pipeline**: ``grep -F -f patterns`` between ``cat`` and ``sort``
  under bash's ``set -o pipefail`` (openat ENOENT: the pattern file missing), and the same with
  4 MB flowing and SIGPIPE ignored, so cat upstream then fails write EPIPE (the consequence,
  later, and a hard error); ``tee`` between
  ``cat`` and ``wc -l`` under dash without pipefail, its copy on a full tmpfs (write ENOSPC:
  the pipeline's status is wc's, 0);
- **one of several parallel workers while the others succeed**: ``xargs -P4`` running ``cp``
  per item, one item unreadable to the job's account (openat EACCES); ``make -j4`` whose one
  recipe writes to a full tmpfs (write ENOSPC); a python ``multiprocessing`` pool of 4 whose
  worker finds one item missing (openat ENOENT);
- **an exec failing inside a spawn**: a supervisor starting its workers with
  ``os.posix_spawn`` (glibc: clone(CLONE_VM|CLONE_VFORK), the exec's error handed back to the
  parent), one worker's binary not executable (execve EACCES), or a spawn file action (stdout
  to a log) failing in the child before its exec (openat ENOENT); ``subprocess.run(cwd=...)``
  whose child cannot chdir to its step's directory (chdir ENOENT, back through the exec pipe);
- **a wrapper's child**: ``timeout 20 python3 server`` whose server's port a stale process
  holds (bind EADDRINUSE); ``setsid -w rotate.sh`` whose ``mv`` finds the archive directory
  missing (rename ENOENT);
- **an orphan reparented to a subreaper**: a supervisor with PR_SET_CHILD_SUBREAPER starting
  ``sh -c 'cat shard > out &'`` -- the shell exits, the ``cat`` is reparented to the
  supervisor, which reaps it -- the shard unreadable to the job's account (openat EACCES).

The python programs are one script, ``tree.py``, a job as a plan of steps (a prefix of input
reads first), the others bash, dash, xargs, make, timeout and setsid with their children.
Same types and harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what
``strace -f`` shows a person looking for the fault.

The good-vs-good cases (`QUIET_NINETEENTH`) carry the noise of process trees: the order in
which parallel workers run and which worker takes which item (``xargs -P4``, ``make -j4``, a
pool's ``imap_unordered``, with jitter in every item's time), pids, a pipeline's stages
interleaving over inputs of varying size, a daemon's middle process exiting before or after
the daemon's first calls, orphans ending (and reaped by a subreaper) in any order, and a
detached daemon outliving its launcher by 50 to 300 ms.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from .catalog import Listener, fill_up, mount_tmpfs, umount_after, write
from .harness import PORTS, NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
NOBODY_UID = 65534
SERVER_PORT = PORTS[15]  # the wrapped server's port (its own: no other set binds it)
STALE = Listener()  # the stale server holding SERVER_PORT in the bad run

TREE_PY = r'''
import ctypes, json, os, sys, time

plan = json.load(open(sys.argv[1]))


def read(s):  # the job's prefix: its inputs, one by one
    for name in sorted(os.listdir(s["dir"])):
        with open(os.path.join(s["dir"], name), "rb") as f:
            f.read()


def daemon(s):  # fork, setsid, fork: the middle process exits, the launcher waits for readiness
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(r)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        time.sleep(s.get("settle", 0))
        try:
            with open(s["state"], "rb") as f:
                f.read()
            with open(s["pid"], "w") as f:
                f.write(str(os.getpid()))
            os.write(w, b"ready\n")
            code = 0
        except OSError as e:
            os.write(w, f"error: {e}\n".encode())
            code = 1
        os._exit(code)
    os.close(w)
    os.waitpid(middle, 0)
    msg = b""
    while chunk := os.read(r, 256):
        msg += chunk
    if not msg.startswith(b"ready"):
        sys.exit(f"tree: daemon failed to start: {msg.decode().strip()}")


def detach(s):  # a daemon the launcher does not wait for: it works on after the launcher exits
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    time.sleep(s["after"])
    with open(s["spool"], "rb") as f:
        f.read()
    with open(s["done"], "w") as f:
        f.write("done\n")


def spawn_logged(s):  # posix_spawn with its stdout sent to a log file (a spawn file action)
    pids = []
    for path, log in s["workers"]:
        acts = [(os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
        try:
            pids.append(os.posix_spawn(path, [path], {"PATH": "/usr/bin:/bin"}, file_actions=acts))
        except OSError as e:
            sys.exit(f"tree: cannot start {path}: {e}")
    for pid in pids:
        os.waitpid(pid, 0)


def popen_cwd(s):  # subprocess runs each step in its own directory: a chdir error comes back
    import subprocess
    for cwd, argv in s["steps"]:
        try:
            subprocess.run(argv, cwd=cwd, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"tree: {e}")


def spawn(s):  # workers started with posix_spawn (vfork-like): an exec error comes back to us
    pids = []
    for path in s["workers"]:
        try:
            pids.append(os.posix_spawn(path, [path], {"PATH": "/usr/bin:/bin"}))
        except OSError as e:
            sys.exit(f"tree: cannot start {path}: {e}")
    for pid in pids:
        os.waitpid(pid, 0)


def subreaper(s):  # orphans of our launchers are reparented to us; reap them all
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit("tree: prctl: " + os.strerror(ctypes.get_errno()))
    for cmd in s["launch"]:
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/sh", ["sh", "-c", cmd])
    failed = 0
    while True:
        try:
            _, status = os.wait()
        except ChildProcessError:
            break
        failed += status != 0
    if failed:
        sys.exit(f"tree: {failed} processes failed")


def _item(arg):
    path, out, delay = arg
    time.sleep(delay)
    with open(path, "rb") as f:
        data = f.read()
    with open(out, "wb") as f:
        f.write(data.upper())
    return len(data)


def pool(s):
    import multiprocessing
    items = [(os.path.join(s["dir"], n), os.path.join(s["out"], n), d) for n, d in s["items"]]
    with multiprocessing.get_context("fork").Pool(4) as p:
        try:
            for _ in p.imap_unordered(_item, items):
                pass
        except OSError as e:
            sys.exit(f"tree: {e}")


if __name__ == "__main__":
    for step in plan:
        globals()[step["op"]](step)
'''


# --- the python job ----------------------------------------------------------------------------
def _inputs(base: Path, n: int = 40) -> None:
    data = base / "data"
    data.mkdir()
    for i in range(n):
        write(data / f"in{i:03d}.rec", f"record {i}\n" * (i % 7 + 1))


def _plan(base: Path, *steps: dict) -> None:
    _inputs(base)
    out = base / "out"
    out.mkdir()
    out.chmod(0o777)  # some runs are the job's account (nobody)
    write(base / "tree.py", TREE_PY)
    write(base / "plan.json", json.dumps([{"op": "read", "dir": f"{base}/data"}, *steps]))


def _tree(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/tree.py", f"{b}/plan.json"]


def daemon_state_unreadable(base: Path, bad: bool) -> None:
    state = base / "state"
    state.mkdir()
    write(state / "daemon.state", "epoch=41\n", 0o000 if bad else 0o644)
    _plan(base, {"op": "daemon", "state": f"{state}/daemon.state", "pid": f"{base}/out/daemon.pid"})


def spawn_worker_not_executable(base: Path, bad: bool) -> None:
    bin_ = base / "bin"
    bin_.mkdir()
    (base / "in").mkdir()
    workers = []
    for i in range(4):
        write(base / "in" / f"w{i}.txt", f"work {i}\n" * 50)
        # the bad host's deploy copied worker2 without its mode
        mode = 0o644 if bad and i == 2 else 0o755
        workers.append(str(write(bin_ / f"worker{i}", f"#!/bin/sh\ntr a-z A-Z < {base}/in/w{i}.txt > {base}/out/w{i}.txt\n",
                                 mode)))
    _plan(base, {"op": "spawn", "workers": workers})


def orphan_shard_unreadable(base: Path, bad: bool) -> None:
    shards = base / "shards"
    shards.mkdir()
    launch = []
    for i in range(3):
        write(shards / f"shard{i}.bin", f"shard {i}\n" * 100, 0o000 if bad and i == 1 else 0o644)
        launch.append(f"cat {shards}/shard{i}.bin > {base}/out/shard{i}.bin &")
    _plan(base, {"op": "subreaper", "launch": launch})


def pool_item_missing(base: Path, bad: bool) -> None:
    items = base / "items"
    items.mkdir()
    names = [f"item{i:02d}.txt" for i in range(16)]
    for n in names:
        if not (bad and n == "item09.txt"):
            write(items / n, f"{n}\n" * 30)
    _plan(base, {"op": "pool", "dir": str(items), "out": f"{base}/out", "items": [[n, 0] for n in names]})


def daemon_spool_missing_after_exit(base: Path, bad: bool) -> None:
    spool = base / "spool"
    spool.mkdir()
    if not bad:
        write(spool / "batch.dat", "job\n" * 200)
    _plan(base, {"op": "detach", "after": 0.3, "spool": f"{spool}/batch.dat", "done": f"{base}/out/done"})


def spawn_log_dir_missing(base: Path, bad: bool) -> None:
    workers = []
    for i in range(4):
        log = base / "logs" / f"w{i}"
        if not (bad and i == 2):  # the bad host's provisioning skipped worker 2's log directory
            log.mkdir(parents=True)
        workers.append(["/bin/date", f"{log}/out.log"])
    _plan(base, {"op": "spawn_logged", "workers": workers})


def popen_step_dir_missing(base: Path, bad: bool) -> None:
    steps = []
    for i in range(4):
        work = base / "work" / f"step{i}"
        if not (bad and i == 2):
            work.mkdir(parents=True)
            write(work / "input.txt", "".join(f"{(j * 7919) % 1000}\n" for j in range(500)))
        steps.append([str(work), ["/usr/bin/sort", "-n", "-o", "sorted.txt", "input.txt"]])
    _plan(base, {"op": "popen_cwd", "steps": steps})


# --- shells and wrappers ---------------------------------------------------------------------
def _start(b: Path) -> list[str]:
    return ["/bin/bash", f"{b}/start.sh"]


def _dash(b: Path) -> list[str]:
    return ["/bin/sh", f"{b}/start.sh"]


def _texts(base: Path, n: int = 3, lines: int = 200) -> None:
    (base / "in").mkdir()
    (base / "out").mkdir()
    for i in range(n):
        write(base / "in" / f"part{i}.txt", "".join(f"{i} line {j} level={'warn' if j % 5 else 'error'}\n"
                                                      for j in range(lines)))


def grandchild_conf_missing(base: Path, bad: bool) -> None:
    _texts(base)
    (base / "conf").mkdir()
    if not bad:
        write(base / "conf" / "stage.conf", "stage=2\n")
    write(base / "start.sh", "set -e\n"
          f"for i in 0 1 2; do cat {base}/in/part$i.txt > {base}/out/part$i.txt; done\n"
          # the subshell forks, and forks again for cat: cat is the script's grandchild
          f"( cat {base}/conf/stage.conf > {base}/out/stage.conf; touch {base}/out/stage.done )\n")


def pipefail_middle_patterns_missing(base: Path, bad: bool) -> None:
    _texts(base)
    (base / "conf").mkdir()
    if not bad:
        write(base / "conf" / "patterns.txt", "level=error\n")
    write(base / "start.sh", "set -o pipefail\n"
          f"cat {base}/in/part0.txt {base}/in/part1.txt {base}/in/part2.txt"
          f" | grep -F -f {base}/conf/patterns.txt | sort > {base}/out/hits.txt\n")


def pipefail_middle_fails_upstream_epipe(base: Path, bad: bool) -> None:
    _texts(base, lines=40000)  # 3 x ~1.3 MB: cat is still writing when grep exits
    (base / "conf").mkdir()
    if not bad:
        write(base / "conf" / "patterns.txt", "level=error\n")
    # SIGPIPE ignored, as a CI runner's children inherit it: cat's write fails EPIPE, every time,
    # and cat says so (killed by the signal instead, its EPIPE is there in some runs only)
    write(base / "start.sh", "set -o pipefail\ntrap '' PIPE\n"
          f"cat {base}/in/part0.txt {base}/in/part1.txt {base}/in/part2.txt"
          f" | grep -F -f {base}/conf/patterns.txt | sort > {base}/out/hits.txt\n")


def pipeline_middle_tee_full(base: Path, bad: bool) -> None:
    _texts(base, lines=3000)
    mount_tmpfs(base / "mnt", "1m")
    if bad:
        fill_up(base / "mnt")
    # dash, no pipefail: the pipeline's status is wc's, the lost copy goes unnoticed
    write(base / "start.sh", f"cat {base}/in/part0.txt {base}/in/part1.txt"
          f" | tee {base}/mnt/copy.txt | wc -l > {base}/out/count.txt\n")


def _items(base: Path, n: int = 12) -> list[str]:
    (base / "in").mkdir()
    out = base / "out"
    out.mkdir()
    out.chmod(0o777)
    names = [f"item{i:02d}.dat" for i in range(n)]
    for name in names:
        write(base / "in" / name, f"{name}\n" * 400)
    return names


def xargs_item_unreadable(base: Path, bad: bool) -> None:
    names = _items(base)
    if bad:
        (base / "in" / "item07.dat").chmod(0o000)
    write(base / "list.txt", "".join(f"{base}/in/{n}\n" for n in names))


def _xargs(b: Path) -> list[str]:
    return ["/usr/bin/xargs", "-P4", "-a", f"{b}/list.txt", "-I{}", "/usr/bin/cp", "{}", f"{b}/out/"]


MAKEFILE = """\
SRC := {base}/src
OUT := {base}/out
all: $(OUT)/a.txt $(OUT)/b.txt $(OUT)/c.txt $(OUT)/d.txt $(OUT)/e.txt {base}/mnt/index.txt
$(OUT)/%.txt: $(SRC)/%.txt
\t{sleep}tr a-z A-Z < $< > $@
{base}/mnt/index.txt: $(SRC)/index.txt
\ttr a-z A-Z < $< > $@
"""


def _make_tree(base: Path, sleep: str = "", tmpfs: bool = True) -> None:
    src = base / "src"
    src.mkdir()
    (base / "out").mkdir()
    for n in "abcde":
        write(src / f"{n}.txt", f"{n} chapter\n" * 300)
    write(src / "index.txt", "index entry\n" * 3000)
    if tmpfs:
        mount_tmpfs(base / "mnt", "1m")
    else:  # a noise case has no teardown to unmount it
        (base / "mnt").mkdir()
    write(base / "Makefile", MAKEFILE.format(base=base, sleep=sleep))


def make_recipe_disk_full(base: Path, bad: bool) -> None:
    _make_tree(base)
    if bad:
        fill_up(base / "mnt")


def _make(b: Path) -> list[str]:
    return ["/usr/bin/make", "-j4", "-s", "-f", f"{b}/Makefile", "all"]


SERVE_PY = """\
import socket, sys
port = int(open(sys.argv[1]).read())
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart within TIME_WAIT is fine; a live holder is not
try:
    s.bind(("127.0.0.1", port))
except OSError as e:
    sys.exit(f"serve: bind 127.0.0.1:{port}: {e}")
s.listen(8)
c = socket.create_connection(("127.0.0.1", port))  # the readiness self-check
a, _ = s.accept()
c.sendall(b"ping")
a.recv(4)
c.close()  # the client closes first: its TIME_WAIT is on its ephemeral port, never on ours
while a.recv(64):
    pass
a.close()
s.close()
"""


def wrapped_server_port_taken(base: Path, bad: bool) -> None:
    _texts(base, n=1)
    write(base / "serve.py", SERVE_PY)
    write(base / "port", str(SERVER_PORT))
    if bad:  # a stale server from the previous deploy still holds the port
        STALE.start(SERVER_PORT)
    else:
        STALE.stop()


def _stop_stale(base: Path) -> None:
    STALE.stop()


def _timeout(b: Path) -> list[str]:
    return ["/usr/bin/timeout", "20", PY3, "-S", f"{b}/serve.py", f"{b}/port"]


def setsid_rotate_archive_missing(base: Path, bad: bool) -> None:
    logs = base / "logs"
    logs.mkdir()
    write(logs / "app.log", "started\n" * 500)
    if not bad:
        (logs / "old").mkdir()
    write(base / "rotate.sh", f"gzip -c {logs}/app.log > {base}/app.log.gz\n"
          f"mv {logs}/app.log {logs}/old/app.log.1\n: > {logs}/app.log\n", 0o755)


def _setsid(b: Path) -> list[str]:
    return ["/usr/bin/setsid", "-w", f"{b}/rotate.sh"]


REAL_NINETEENTH: list[Scenario] = [
    Scenario("grandchild_cat_conf_missing", "bash: a subshell's cat (the script's grandchild)", _start,
             grandchild_conf_missing, frozenset({"openat", "open"}), "ENOENT", lambda b: f"{b}/conf/stage.conf",
             description="a subshell's cat, two forks below the script, finds the stage config missing"),
    Scenario("double_forked_daemon_state_unreadable", "python3 daemon (fork, setsid, fork) as the job",
             _tree, daemon_state_unreadable, frozenset({"openat", "open"}), "EACCES",
             lambda b: f"{b}/state/daemon.state", unprivileged=True,
             description="a double-forked daemon, its parent gone, cannot read its state file: EACCES"),
    Scenario("pipefail_middle_grep_patterns_missing", "bash set -o pipefail: cat | grep -F -f | sort", _start,
             pipefail_middle_patterns_missing, frozenset({"openat", "open"}), "ENOENT",
             lambda b: f"{b}/conf/patterns.txt",
             description="the middle stage of a pipefail pipeline, grep -f, finds its pattern file missing"),
    Scenario("pipefail_middle_fails_upstream_epipe", "bash set -o pipefail, SIGPIPE ignored: cat (4 MB) | grep -F -f | sort",
             _start, pipefail_middle_fails_upstream_epipe, frozenset({"openat", "open"}), "ENOENT",
             lambda b: f"{b}/conf/patterns.txt",
             description="grep -f in the middle of a pipeline exits at once; cat upstream, still writing, "
                         "then meets EPIPE (SIGPIPE ignored: the consequence, not the fault)"),
    Scenario("pipeline_middle_tee_disk_full", "sh (dash): cat | tee copy | wc -l", _dash,
             pipeline_middle_tee_full, frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/copy.txt",
             teardown=umount_after("mnt"),
             description="tee in the middle of a pipeline without pipefail writes its copy to a full tmpfs"),
    Scenario("xargs_p4_one_item_unreadable", "xargs -P4 cp (12 items, as the job)", _xargs, xargs_item_unreadable,
             frozenset({"openat", "open"}), "EACCES", lambda b: f"{b}/in/item07.dat", unprivileged=True,
             description="one of xargs -P4's cp workers cannot read its item while the others copy theirs"),
    Scenario("make_j4_one_recipe_disk_full", "make -j4 (6 recipes, one on a tmpfs)", _make, make_recipe_disk_full,
             frozenset({"write"}), "ENOSPC", lambda b: f"{b}/mnt/index.txt", teardown=umount_after("mnt"),
             description="one of make -j4's parallel recipes writes to a full tmpfs: write ENOSPC"),
    Scenario("pool_worker_item_missing", "python3 multiprocessing Pool(4).imap_unordered", _tree,
             pool_item_missing, frozenset({"openat", "open"}), "ENOENT", lambda b: f"{b}/items/item09.txt",
             description="one worker of a python pool of 4 finds its item missing while the others succeed"),
    Scenario("posix_spawn_worker_not_executable", "python3 supervisor os.posix_spawn x4", _tree,
             spawn_worker_not_executable, frozenset({"execve", "execveat"}), "EACCES",
             lambda b: f"{b}/bin/worker2",
             description="a worker started by posix_spawn (vfork-like) whose binary lost its x bit: "
                         "execve EACCES reported back to the supervisor"),
    Scenario("detached_daemon_spool_missing", "python3 daemon the launcher does not wait for", _tree,
             daemon_spool_missing_after_exit, frozenset({"openat", "open"}), "ENOENT",
             lambda b: f"{b}/spool/batch.dat",
             description="a double-forked daemon finds its spool file missing 0.3 s after its launcher exited"),
    Scenario("posix_spawn_file_action_log_dir_missing", "python3 posix_spawn x4, stdout to a log file", _tree,
             spawn_log_dir_missing, frozenset({"openat", "open"}), "ENOENT", lambda b: f"{b}/logs/w2/out.log",
             description="a posix_spawn file action (stdout to a log) fails in the spawned child before exec"),
    Scenario("popen_cwd_step_dir_missing", "python3 subprocess.run(cwd=step dir) x4", _tree,
             popen_step_dir_missing, frozenset({"chdir"}), "ENOENT", lambda b: f"{b}/work/step2",
             description="subprocess's child cannot chdir to its step's directory: the error comes back "
                         "through the exec pipe"),
    Scenario("timeout_wrapped_server_port_taken", "timeout 20 python3 server", _timeout, wrapped_server_port_taken,
             frozenset({"bind"}), "EADDRINUSE", lambda b: f"inet:127.0.0.1:{SERVER_PORT}", teardown=_stop_stale,
             description="a server started under timeout finds its loopback port held by a stale server"),
    Scenario("setsid_rotate_archive_missing", "setsid -w rotate.sh (gzip, mv)", _setsid,
             setsid_rotate_archive_missing, frozenset({"rename", "renameat", "renameat2"}), "ENOENT",
             lambda b: f"{b}/logs/*app.log*",
             description="a log rotation run through setsid: mv into a missing archive directory"),
    Scenario("subreaper_orphan_shard_unreadable", "python3 subreaper reaping sh -c 'cat &' orphans (as the job)",
             _tree, orphan_shard_unreadable, frozenset({"openat", "open"}), "EACCES",
             lambda b: f"{b}/shards/shard1.bin", unprivileged=True,
             description="an orphaned cat, reparented to a PR_SET_CHILD_SUBREAPER supervisor, cannot read "
                         "its shard"),
]


# --- good-vs-good noise -----------------------------------------------------------------------
def _xargs_jitter(base: Path, run: int) -> None:
    names = _items(base)
    random.shuffle(names)
    write(base / "list.txt", "".join(f"{n} 0.{random.randint(0, 40):03d}\n" for n in names))
    write(base / "copy.sh", f"sleep $2\ncp {base}/in/$1 {base}/out/\n", 0o755)


def _xargs_jitter_argv(b: Path) -> list[str]:
    return ["/usr/bin/xargs", "-P4", "-L1", "-a", f"{b}/list.txt", "/bin/sh", f"{b}/copy.sh"]


def _make_jitter(base: Path, run: int) -> None:
    _make_tree(base, sleep="sleep 0.0$(shell shuf -i 0-4 -n 1); ", tmpfs=False)


def _pool_jitter(base: Path, run: int) -> None:
    items = base / "items"
    items.mkdir()
    names = [f"item{i:02d}.txt" for i in range(16)]
    for n in names:
        write(items / n, f"{n}\n" * 30)
    random.shuffle(names)
    _plan(base, {"op": "pool", "dir": str(items), "out": f"{base}/out",
                 "items": [[n, random.randint(0, 20) / 1000] for n in names]})


def _pipeline_sizes(base: Path, run: int) -> None:
    _texts(base, lines=random.randint(500, 6000))
    (base / "conf").mkdir()
    write(base / "conf" / "patterns.txt", "level=error\n")
    write(base / "start.sh", "set -o pipefail\n"
          f"cat {base}/in/part0.txt {base}/in/part1.txt {base}/in/part2.txt"
          f" | grep -F -f {base}/conf/patterns.txt | sort | uniq -c > {base}/out/hits.txt\n")


def _daemon_race(base: Path, run: int) -> None:
    daemon_state_unreadable(base, False)
    plan = json.loads((base / "plan.json").read_text())
    plan[-1]["settle"] = random.choice([0, 0.005, 0.02])  # the middle exits before or after the daemon reads
    write(base / "plan.json", json.dumps(plan))


def _orphans_jitter(base: Path, run: int) -> None:
    shards = base / "shards"
    shards.mkdir()
    launch = []
    for i in range(4):
        write(shards / f"shard{i}.bin", f"shard {i}\n" * 100)
        launch.append(f"sleep 0.0{random.randint(0, 3)}; cat {shards}/shard{i}.bin > {base}/out/shard{i}.bin &")
    _plan(base, {"op": "subreaper", "launch": launch})


def _detached_after_varies(base: Path, run: int) -> None:
    spool = base / "spool"
    spool.mkdir()
    write(spool / "batch.dat", "job\n" * 200)
    _plan(base, {"op": "detach", "after": random.choice([0.05, 0.15, 0.3]), "spool": f"{spool}/batch.dat",
                 "done": f"{base}/out/done"})


QUIET_NINETEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("xargs_p4_workers_take_items_in_any_order", _xargs_jitter_argv, _xargs_jitter,
                  description="xargs -P4 over 12 shuffled items with 0 to 40 ms of jitter each"),
    NoAnomalyCase("make_j4_recipes_interleave", _make, _make_jitter,
                  description="make -j4's six recipes, each after 0 to 40 ms, in any order"),
    NoAnomalyCase("pool_workers_take_items_in_any_order", _tree, _pool_jitter,
                  description="a python pool of 4 over 16 shuffled items with 0 to 20 ms of jitter each"),
    NoAnomalyCase("pipeline_stages_interleave", _start, _pipeline_sizes,
                  description="cat | grep | sort | uniq -c over 500 to 6000 lines a part"),
    NoAnomalyCase("daemon_middle_exits_early_or_late", _tree, _daemon_race,
                  description="a double-forked daemon reading its state 0 to 20 ms after its parent's fork"),
    NoAnomalyCase("subreaper_reaps_orphans_in_any_order", _tree, _orphans_jitter,
                  description="four orphaned cats, each after 0 to 30 ms, reaped by a subreaper as they end"),
    NoAnomalyCase("detached_daemon_outlives_launcher_by_varying_time", _tree, _detached_after_varies,
                  description="a detached daemon reading its spool 50 to 300 ms after its launcher exited"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: the fault cases unmount their tmpfs, the stale listener goes
    with its case's teardown (stopped again here in case that case was interrupted)."""
    STALE.stop()


# Cases repeating a tested case's kind of fault, left to the benchmark.
BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
