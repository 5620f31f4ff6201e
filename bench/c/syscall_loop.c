// syscall_loop.c: the tight loop bench/bench_record.py times each recorder ingredient with.
//
//   syscall_loop KIND CALLS OUT
//
// makes CALLS calls of one kind and writes "<cpu ns per call> <wall ns per call>" to OUT (the
// loop's own thread CPU time, so load from other processes does not count, and wall time):
//   getppid   nothing to read at entry or exit (the floor of every traced call)
//   openat    openat of a missing path (a path string read, a failing call)
//   write64   a 64-byte write to /dev/null (output bytes copied)
//   write4k   a 4096-byte pwrite64 to a regular file (output bytes of a file write)
// It reads one byte (or EOF) from stdin before it starts: the bench starts it, traces its pid,
// then lets it go.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: syscall_loop getppid|openat|write64|write4k CALLS OUT\n");
        return 2;
    }
    const char *kind = argv[1];
    long calls = atol(argv[2]);
    static char buf[4096];
    memset(buf, 'x', sizeof(buf));
    int fd = -1;
    if (!strcmp(kind, "write64"))
        fd = open("/dev/null", O_WRONLY);
    else if (!strcmp(kind, "write4k")) {
        char path[] = "/tmp/syscall_loop.XXXXXX";
        fd = mkstemp(path);
        unlink(path);
    }
    char go;
    if (read(0, &go, 1) < 0)  // a gate: the bench starts the loop once it traces this process
        return 1;
    long long c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < calls; i++) {
        switch (kind[0] == 'g' ? 0 : kind[0] == 'o' ? 1 : kind[5] == '6' ? 2 : 3) {
        case 0:
            syscall(SYS_getppid);
            break;
        case 1:
            syscall(SYS_openat, AT_FDCWD, "/nonexistent-tracebase-bench/some/dir/file.txt", O_RDONLY);
            break;
        case 2:
            syscall(SYS_write, fd, buf, 64);
            break;
        default:
            syscall(SYS_pwrite64, fd, buf, sizeof(buf), 0);
            break;
        }
    }
    long long c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
    FILE *out = fopen(argv[3], "w");
    if (!out)
        return 1;
    fprintf(out, "%.1f %.1f\n", (double)(c1 - c0) / calls, (double)(w1 - w0) / calls);
    return fclose(out) != 0;
}
