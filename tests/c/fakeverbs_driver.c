// fakeverbs_driver: calls the fakeverbs library in patterns for the fleet tracer tests/bench.
//
//   fakeverbs_driver OP COUNT [FAIL_LAYER ERRNO [DELAY_US [START_WAIT_MS [END_WAIT_MS]]]]
//     OP          reg_mr | alloc_pd | syscalls (readlink of a missing path + close(-1), COUNT each:
//                 syscalls a program's startup never makes, so the ground truth is exact)
//     COUNT       calls made back to back (a burst)
//     FAIL_LAYER  0 none, 1 uverbs, 2 driver, 3 umem, 4 peer-mem
//     ERRNO       positive errno the failing layer returns
//     DELAY_US    sleep inside the leaf of every call (latency injection)
//     START_WAIT_MS  sleep before the first call (lets a tracer attach to this pid)
//     END_WAIT_MS    sleep after the last call (the process stays for /proc enrichment)
//     RATE           calls per second (paced in steps of 16 calls; 0 = back to back)
// Prints the number of calls that failed, for the test's ground truth.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int fv_uverbs_reg_mr(unsigned long addr, unsigned long len);
int fv_uverbs_alloc_pd(void);
void fv_inject(int layer, int err);
void fv_set_delay_us(unsigned us);

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s OP COUNT [FAIL_LAYER ERRNO [DELAY_US [START_WAIT_MS]]]\n", argv[0]);
        return 2;
    }
    const char *op = argv[1];
    long count = atol(argv[2]);
    int layer = argc > 3 ? atoi(argv[3]) : 0;
    int err = argc > 4 ? atoi(argv[4]) : 0;
    unsigned delay = argc > 5 ? (unsigned)atoi(argv[5]) : 0;
    int wait_ms = argc > 6 ? atoi(argv[6]) : 0;
    int end_wait_ms = argc > 7 ? atoi(argv[7]) : 0;
    long rate = argc > 8 ? atol(argv[8]) : 0;
    if (wait_ms > 0)
        usleep((useconds_t)wait_ms * 1000);
    fv_inject(layer, err);
    fv_set_delay_us(delay);
    long failed = 0;
    if (strcmp(op, "syscalls") == 0) {
        char buf[64];
        for (long i = 0; i < count; i++) {
            failed += syscall(SYS_readlink, "/nonexistent-tracebase-probe", buf, sizeof(buf)) < 0;
            failed += syscall(SYS_close, -1) < 0;
        }
        printf("%ld\n", failed);
        return 0;
    }
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < count; i++) {
        if (rate > 0 && i % 16 == 0 && i > 0) {   // absolute deadlines: no drift
            long step_ns = 16 * 1000000000L / rate;
            next.tv_nsec += step_ns;
            while (next.tv_nsec >= 1000000000L) {
                next.tv_nsec -= 1000000000L;
                next.tv_sec++;
            }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        int ret = strcmp(op, "alloc_pd") == 0 ? fv_uverbs_alloc_pd() : fv_uverbs_reg_mr(0x1000 + i, 4096);
        failed += ret != 0;
    }
    printf("%ld\n", failed);
    fflush(stdout);
    if (end_wait_ms > 0)
        usleep((useconds_t)end_wait_ms * 1000);
    return 0;
}
