"""A call the diffed run's environment refused, recovered by another means, is no anomaly; the
same refusal reported and skipped is. And a server's clean-up EBADF after the stop signal.

Recorded for real, three runs each; the last run is diffed against the other two.

* **Recovered fallbacks** (baseline/run/rules/retries.py, `_recovered_fallbacks`; fallback_calls.yaml):
  a small C program copies a file with copy_file_range, its source on /dev/shm (another file
  system) in the diffed run only: EXDEV, then read/write, is quiet; EXDEV, then a warning and
  the copy skipped (exit 0), or skipped silently, is named. It takes a lock file O_EXCL, which
  exists in the diffed run only: joining it (the same call on the same path) is quiet; reading
  the pid there, saying a live job holds it and skipping the work (exit 0) is named -- the
  tenth set's `ckpt_pidfile_process_alive` reported that way. real_thirteenth.py's
  `*_only_in_last_run` cases are the python3 runtime's versions (io_uring, mq_open, copy).
* **shutdown EBADF after SIGTERM** (`_unwind_cleanups`): a threaded http.server stopped by its
  start script's `kill` while its main thread is still inside process_request, the handler
  long done, so socketserver's `except: shutdown_request(request)` shuts the closed socket
  down (EBADF): quiet. The same EBADF before any signal (a double shutdown) is named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from scenarios.harness import PORTS, record_run

from baseline.run.allowlist import load_fallbacks
from baseline.run.diff import diff_traces
from tracer.errors import TracebaseError

FB_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fb copy SRC DST MODE: copy_file_range; on EXDEV, MODE fallback (read/write), warn (a
   message, the copy skipped) or skip (skipped silently).
   fb lock PATH OUT MODE: the job's lock file, O_EXCL; on EEXIST, MODE join (open the same
   file) or check (read the pid: a live job holds it, say so and skip the work); then the
   work (OUT written). */
int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const char *op = argv[1], *a = argv[2], *b = argv[3], *mode = argv[4];
    if (!strcmp(op, "copy")) {
        int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0) { perror("fb: open"); return 1; }
        ssize_t n;
        while ((n = copy_file_range(in, NULL, out, NULL, 1 << 20, 0)) > 0) ;
        if (n < 0 && errno == EXDEV) {
            if (!strcmp(mode, "fallback")) {
                char buf[65536];
                while ((n = read(in, buf, sizeof buf)) > 0)
                    if (write(out, buf, n) != n) { perror("fb: write"); return 1; }
            } else if (!strcmp(mode, "warn")) {
                fprintf(stderr, "fb: %s: on another file system, not copied\n", a);
            }
        } else if (n < 0) { perror("fb: copy_file_range"); return 1; }
        close(in);
        close(out);
    } else {
        int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0 && errno == EEXIST) {
            if (!strcmp(mode, "join")) {
                fd = open(a, O_WRONLY | O_APPEND);
            } else {
                char pid[32] = {0};
                int old = open(a, O_RDONLY);
                if (old >= 0) { if (read(old, pid, sizeof pid - 1) < 0) pid[0] = 0; close(old); }
                if (atoi(pid) > 0 && kill(atoi(pid), 0) == 0) {
                    fprintf(stderr, "fb: %s: job %d still running, nothing to do\n", a, atoi(pid));
                    return 0;
                }
            }
        }
        if (fd < 0) { perror("fb: open"); return 1; }
        dprintf(fd, "%d\n", (int)getpid());
        close(fd);
        int w = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (w < 0 || write(w, "done\n", 5) != 5) { perror("fb: work"); return 1; }
        close(w);
    }
    puts("fb: ok");
    return 0;
}
"""

# The server of real_sixth.py's http cases, whose main thread may still be in process_request
# when the start script stops it: with `late`, it waits there for the handler (the request
# closed) and then for the signal, as a loaded host's scheduler may leave it; with `double`, it
# shuts the closed request down itself first (a bug: EBADF before any signal). It says
# 'served' when done with the request; the script stops it after that line.
# "served" is printed once process_request has returned (service_actions, back in serve_forever's
# loop), except in the late mode: there the start script's kill must land inside process_request.
# Printed inside it in every mode, the kill landed there in a good run now and then under load (the
# main thread preempted between its write and its return), and that run had the clean-up EBADF too.
SERVER_PY = ("import functools, http.server, os, select, signal, sys, threading\n"
             "root, port, mode = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read().strip()\n"
             "class Quiet(http.server.SimpleHTTPRequestHandler):\n"
             "    def log_message(self, *args):\n"
             "        pass\n"
             "class Server(http.server.ThreadingHTTPServer):\n"
             "    allow_reuse_address = True\n"
             "    daemon_threads = False\n"
             "    served = False\n"
             "    def process_request(self, request, client_address):\n"
             "        super().process_request(request, client_address)\n"
             "        if mode != 'normal':\n"
             "            for t in threading.enumerate():\n"
             "                if t is not threading.main_thread():\n"
             "                    t.join()\n"
             "        if mode == 'double':\n"
             "            try:\n"
             "                request.shutdown(1)\n"
             "            except OSError:\n"
             "                pass\n"
             "        if mode == 'late':\n"
             "            print('served', flush=True)\n"
             "            select.select([], [], [], 30)\n"
             "        self.served = True\n"
             "    def service_actions(self):\n"
             "        super().service_actions()\n"
             "        if self.served:\n"
             "            self.served = False\n"
             "            print('served', flush=True)\n"
             "srv = Server(('127.0.0.1', port), functools.partial(Quiet, directory=root))\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
             "print('ready', flush=True)\n"
             "try:\n"
             "    srv.serve_forever()\n"
             "finally:\n"
             "    srv.server_close()\n")
SERVE_SH = ('coproc SRV {{ exec /usr/bin/python3 -S {b}/server.py {b}/www {port} {b}/mode; }}\n'
            'read -r line <&"${{SRV[0]}}"\n'
            '/usr/bin/curl -sf -o {b}/page.html http://127.0.0.1:{port}/index.html\n'
            'rc=$?\n'
            'read -r line <&"${{SRV[0]}}"\n'
            'kill $SRV_PID; wait $SRV_PID\n'
            'exit $rc\n')
PORT = PORTS[10]  # real_sixth.py's http server's: the cases of a session run one at a time


@pytest.fixture
def base():
    root = Path(f"/tmp/tracebase-fallbacks.{os.getpid()}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def stage():
    """A directory on /dev/shm: another file system than the case's directory under /tmp."""
    path = Path(f"/dev/shm/tracebase-fallbacks.{os.getpid()}")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def fb(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("fb")
    (out / "fb.c").write_text(FB_C)
    subprocess.run(["gcc", "-O1", "-o", str(out / "fb"), str(out / "fb.c")], check=True, capture_output=True)
    return str(out / "fb")


def _diff_last(recorder, tmp_path: Path, argv, prepare):
    """Three runs (prepare(i) before each, returning the run's argv); the last one diffed
    against the other two."""
    files = []
    for i in range(3):
        files.append(record_run(recorder, argv(prepare(i)), tmp_path / f"run{i}.parquet", "good"))
    return diff_traces(good=files[:2], bad=files[2])


def _named(report) -> tuple:
    b = report.bifurcation
    return (b["probe"], b["errno"], b["path"]) if b else None


@pytest.mark.parametrize(("mode", "named"), [("fallback", False), ("warn", True), ("skip", True)],
                         ids=["read/write fallback", "warned and skipped", "skipped silently"])
def test_copy_exdev_only_in_the_diffed_run(recorder, fb, base, stage, tmp_path, mode, named):
    def prepare(i: int) -> Path:
        src = (stage if i == 2 else base) / "shard0"  # the last host stages on /dev/shm
        src.write_bytes(b"x" * 65536)
        (base / "ckpt.shard0").unlink(missing_ok=True)
        return src

    report = _diff_last(recorder, tmp_path, lambda src: [fb, "copy", str(src), str(base / "ckpt.shard0"), mode],
                        prepare)
    if named:
        assert _named(report) == ("copy_file_range", "EXDEV", str(stage / "shard0")), report.bifurcation
    else:
        assert not report.anomaly, _named(report)
        assert [(a["probe"], a["errno"]) for a in report.reorderings] == [("copy_file_range", "EXDEV")]


@pytest.mark.parametrize(("mode", "named"), [("join", False), ("check", True)],
                         ids=["joined", "a live job's: reported and skipped"])
def test_lock_file_exists_only_in_the_diffed_run(recorder, fb, base, tmp_path, mode, named):
    lock, out = base / "job.lock", base / "out"

    def prepare(i: int) -> None:
        lock.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
        if i == 2:  # another rank (join), or a job still running (check: this test's own pid)
            lock.write_text(f"{os.getpid()}\n")

    report = _diff_last(recorder, tmp_path, lambda _: [fb, "lock", str(lock), str(out), mode], prepare)
    if named:
        assert _named(report)[:3] in {(p, "EEXIST", str(lock)) for p in ("open", "openat")}, report.bifurcation
    else:
        assert not report.anomaly, _named(report)


@pytest.mark.parametrize(("mode", "named"), [("late", False), ("double", True)],
                         ids=["SIGTERM inside process_request", "shut down twice before the signal"])
def test_server_stopped_inside_process_request(recorder, base, tmp_path, mode, named):
    (base / "www").mkdir()
    (base / "www" / "index.html").write_text("<html><body>build 41</body></html>\n")
    (base / "server.py").write_text(SERVER_PY)
    (base / "serve.sh").write_text(SERVE_SH.format(b=base, port=PORT))

    def prepare(i: int) -> None:
        (base / "mode").write_text(mode if i == 2 else "normal")
        (base / "page.html").unlink(missing_ok=True)

    report = _diff_last(recorder, tmp_path, lambda _: ["/bin/bash", str(base / "serve.sh")], prepare)
    assert (base / "page.html").exists()
    if named:
        assert _named(report)[:2] == ("shutdown", "EBADF"), report.bifurcation
    else:
        assert not report.anomaly, (_named(report), report.anomalies[0] if report.anomalies else None)


# --- the curated table ---------------------------------------------------------------------------
def test_the_curated_fallback_table_loads():
    families = load_fallbacks()
    assert {"epoll_create1", "epoll_ctl"} <= families[("io_uring_setup", "EPERM")]
    assert {"read", "write"} <= families[("copy_file_range", "EXDEV")]
    assert "clone" in families[("clone3", "ENOSYS")]


@pytest.mark.parametrize(("text", "says"), [
    ("version: 2\nfallbacks: []\n", "field 'version': expected 1, found 2"),
    ("version: 1\nfallbacks: {}\n", "field 'fallbacks': expected a list, found dict"),
    ("version: 1\nfallbacks:\n  - call: statx\n    errnos: [ENOSYS]\n", "fallbacks[0]: expected the keys call, errnos, instead"),
    ("version: 1\nfallbacks:\n  - {call: statx, errnos: [ENOSYSS], instead: [stat]}\n",
     "fallbacks[0]: field 'errnos': expected errno names, found 'ENOSYSS'"),
    ("version: 1\nfallbacks:\n  - {call: statx, errnos: [ENOSYS], instead: []}\n",
     "fallbacks[0]: field 'instead': expected a list of names, found []"),
    ("version: 1\nfallbacks: [\n", "invalid YAML"),
])
def test_a_bad_fallback_table_is_one_line_naming_the_field(tmp_path, text, says):
    path = tmp_path / "fallback_calls.yaml"
    path.write_text(text)
    with pytest.raises(TracebaseError) as err:
        load_fallbacks(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and says in message and "\n" not in message, message
