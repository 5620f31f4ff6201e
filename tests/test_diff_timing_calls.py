"""Calls whose presence is timing, recorded for real: the allocator's first look at the host,
and which descriptor a child's stdin is.

glibc's malloc opens, reads and closes /proc/sys/vm/overcommit_memory the first time a thread's
arena gives memory back (`check_may_shrink_heap`): whether and where a run does that is timing
(pigz -p 4 on one input: 13 runs in 20, by whichever worker frees first; a good run that did
was once named "a path good runs never took" against two that did not). The program below
makes it happen on demand: a worker thread grows its arena and keeps the memory, or frees it.
Those calls drop out of the diff (`ALLOCATOR_FILES`); a read of another kernel tunable by the
program itself is still named.

make -j2 gives stdin to one running job at a time and a broken pipe to the others (a pipe made,
its write end closed, the read end dup2'd onto the child's stdin before its exec): whether the
first job had finished when the second started decides which the second gets (3 make runs in 12
here did no dup2; a good run that did was named "dup2 pipe:" against two that did not). A region
whose only new events plumb descriptors, re-joining good behaviour in a run exiting as the good
runs did, is timing (`_descriptor_plumbing`); in a run exiting otherwise it is still named.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from scenarios.harness import record_run

from baseline.run.diff import diff_traces

SHRINK_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* shrink FILE: FILE holds the MODE. A worker thread (its own malloc arena) allocates 40 blocks of 64 KiB, below the
   mmap threshold, so its arena's heap grows. MODE "keep" holds them to the end; "free" frees
   them, so the heap shrinks (glibc reads /proc/sys/vm/overcommit_memory first); "tunable" frees
   them and reads /proc/sys/kernel/pid_max itself. */
static char mode[16] = "keep";

static void *work(void *arg) {
    (void)arg;
    char *blocks[40];
    for (int i = 0; i < 40; i++) {
        blocks[i] = malloc(64 << 10);
        memset(blocks[i], i, 64 << 10);
    }
    if (strcmp(mode, "keep") != 0)
        for (int i = 39; i >= 0; i--) free(blocks[i]);
    if (strcmp(mode, "tunable") == 0) {
        FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
        char line[32];
        if (f && fgets(line, sizeof line, f)) printf("pid_max %s", line);
        if (f) fclose(f);
    }
    return NULL;
}

int main(int argc, char **argv) {
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (f && fscanf(f, "%15s", mode) != 1) strcpy(mode, "keep");
    if (f) fclose(f);
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    puts("done");
    return 0;
}
"""


@pytest.fixture(scope="module")
def shrink(tmp_path_factory, need_cc) -> Path:
    out = tmp_path_factory.mktemp("allocator")
    (out / "shrink.c").write_text(SHRINK_C)
    subprocess.run([need_cc, "-O1", "-pthread", "-o", str(out / "shrink"), str(out / "shrink.c")], check=True,
                   capture_output=True)
    return out / "shrink"


def _record(recorder, program: Path, modes: list[str], tmp_path: Path) -> list[Path]:
    mode_file, runs = tmp_path / "mode", []
    for i, mode in enumerate(modes):  # one command line for every run: the mode is in a file
        mode_file.write_text(f"{mode}\n")
        runs.append(record_run(recorder, [str(program), str(mode_file)], tmp_path / f"run{i}-{mode}.parquet", "good"))
    return runs


def _paths(file: Path, probe_prefix: str) -> set[str]:
    import pyarrow.parquet as pq

    t = pq.read_table(file, columns=["probe", "path"]).to_pylist()
    return {r["path"] for r in t if r["probe"].startswith(probe_prefix) and r["path"]}


@pytest.mark.parametrize("good_modes", [["keep", "keep"], ["keep", "free"]],
                         ids=["no good run shrank", "one good run shrank"])
def test_the_allocators_own_read_of_overcommit_memory_is_quiet(recorder, shrink, tmp_path, good_modes):
    *goods, diffed = _record(recorder, shrink, [*good_modes, "free"], tmp_path)
    # the run diffed did make the calls (on this glibc), and the first good run did not
    assert "/proc/sys/vm/overcommit_memory" in _paths(diffed, "open")
    assert "/proc/sys/vm/overcommit_memory" not in _paths(goods[0], "open")
    report = diff_traces(good=goods, bad=diffed)
    assert not report.anomaly, report.bifurcation


def test_a_kernel_tunable_the_program_reads_itself_is_still_named(recorder, shrink, tmp_path):
    *goods, diffed = _record(recorder, shrink, ["free", "free", "tunable"], tmp_path)
    report = diff_traces(good=goods, bad=diffed)
    b = report.bifurcation
    assert b is not None and b["path"] == "/proc/sys/kernel/pid_max" and b["errno"] is None, b


# --- which descriptor a child's stdin is -----------------------------------------------------------
SPAWN_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* spawn FILE: FILE holds the MODE. Runs /bin/true the way make -j2 runs its second job: with the
   parent's stdin ("stdin"), or -- the first job still running -- with a broken pipe for stdin
   ("pipe": a pipe made, its write end closed, the read end dup2'd onto the child's stdin before
   its exec). "pipe-fails" does the same but runs /bin/false and exits with its status. */
int main(int argc, char **argv) {
    char mode[16] = "stdin";
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (f && fscanf(f, "%15s", mode) != 1) strcpy(mode, "stdin");
    if (f) fclose(f);
    int broken = -1;
    if (strncmp(mode, "pipe", 4) == 0) {
        int pd[2];
        if (pipe2(pd, O_CLOEXEC) != 0) return 2;
        close(pd[1]);
        broken = pd[0];
    }
    const char *prog = strcmp(mode, "pipe-fails") == 0 ? "/bin/false" : "/bin/true";
    pid_t child = fork();
    if (child == 0) {
        if (broken >= 0) dup2(broken, 0);
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    puts("job done");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"""


@pytest.fixture(scope="module")
def spawn(tmp_path_factory, need_cc) -> Path:
    out = tmp_path_factory.mktemp("plumbing")
    (out / "spawn.c").write_text(SPAWN_C)
    subprocess.run([need_cc, "-O1", "-o", str(out / "spawn"), str(out / "spawn.c")], check=True, capture_output=True)
    return out / "spawn"


@pytest.mark.parametrize(("good_modes", "diffed"), [(["stdin", "stdin"], "pipe"), (["pipe", "pipe"], "stdin"),
                                                    (["stdin", "pipe"], "pipe")],
                         ids=["a broken pipe the good runs' child never got", "the parent's stdin where they got a pipe",
                              "one good run's child got the pipe too"])
def test_a_childs_stdin_plumbed_another_way_is_quiet(recorder, spawn, tmp_path, good_modes, diffed):
    *goods, bad = _record(recorder, spawn, [*good_modes, diffed], tmp_path)
    report = diff_traces(good=goods, bad=bad)
    assert not report.anomaly, report.bifurcation


def test_the_same_plumbing_in_a_run_that_exits_otherwise_is_named(recorder, spawn, tmp_path):
    *goods, bad = _record(recorder, spawn, ["stdin", "stdin", "pipe-fails"], tmp_path)
    assert diff_traces(good=goods, bad=bad).anomaly
