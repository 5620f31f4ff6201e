// fakeverbs_threads: two threads whose call trees overlap in time, for the fleet tracer's
// per-thread slot tests (a build with few slots makes them share one).
//
//   fakeverbs_threads SLOW_CALLS SLOW_DELAY_US FAST_CALLS
//     thread 1: SLOW_CALLS reg_mr calls failing EFAULT at the peer-mem layer, each sleeping
//               SLOW_DELAY_US in the leaf (its tree stays open that long)
//     thread 2: starts once thread 1 is inside its first call, then FAST_CALLS reg_mr calls
//               failing ENOMEM at the driver layer, back to back
// Prints "<tid1> <failed1> <tid2> <failed2>".
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int fv_uverbs_reg_mr(unsigned long addr, unsigned long len);
void fv_inject(int layer, int err);
void fv_set_delay_us(unsigned us);

struct job {
    long calls;
    int layer, err;
    unsigned delay_us;
    long tid, failed;
};

static volatile int slow_started;

static void *run(void *arg) {
    struct job *j = arg;
    j->tid = syscall(SYS_gettid);
    fv_inject(j->layer, j->err);
    fv_set_delay_us(j->delay_us);
    for (long i = 0; i < j->calls; i++) {
        if (j->delay_us)
            slow_started = 1;   // set before the call: the other thread waits a little more below
        j->failed += fv_uverbs_reg_mr(0x1000 + i, 4096) != 0;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SLOW_CALLS SLOW_DELAY_US FAST_CALLS\n", argv[0]);
        return 2;
    }
    struct job slow = {atol(argv[1]), 4, EFAULT, (unsigned)atoi(argv[2]), 0, 0};
    struct job fast = {atol(argv[3]), 2, ENOMEM, 0, 0, 0};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, run, &slow);
    while (!slow_started)
        usleep(100);
    usleep(2000);   // thread 1 is inside its slow call now
    pthread_create(&t2, NULL, run, &fast);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("%ld %ld %ld %ld\n", slow.tid, slow.failed, fast.tid, fast.failed);
    return 0;
}
