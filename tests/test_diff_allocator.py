"""Calls the C library's allocator makes when it first needs them, recorded for real.

glibc's malloc opens, reads and closes /proc/sys/vm/overcommit_memory the first time a thread's
arena gives memory back (`check_may_shrink_heap`): whether and where a run does that is timing
(pigz -p 4 on one input: 13 runs in 20, by whichever worker frees first; a good run that did
was once named "a path good runs never took" against two that did not). The program below
makes it happen on demand: a worker thread grows its arena and keeps the memory, or frees it.
Those calls drop out of the diff (`ALLOCATOR_FILES`); a read of another kernel tunable by the
program itself is still named.
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


def _record(recorder, shrink: Path, modes: list[str], tmp_path: Path) -> list[Path]:
    mode_file, runs = tmp_path / "mode", []
    for i, mode in enumerate(modes):  # one command line for every run: the mode is in a file
        mode_file.write_text(f"{mode}\n")
        runs.append(record_run(recorder, [str(shrink), str(mode_file)], tmp_path / f"run{i}-{mode}.parquet", "good"))
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
