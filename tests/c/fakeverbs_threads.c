// fakeverbs_threads: threads whose call trees overlap in time, for the fleet tracer's
// per-thread slot tests (a build with few slots makes them share one).
//
//   fakeverbs_threads SLOW_CALLS SLOW_DELAY_US FAST_CALLS [FAST_THREADS]
//     thread 1: SLOW_CALLS reg_mr calls failing EFAULT at the peer-mem layer, each sleeping
//               SLOW_DELAY_US in the leaf (its tree stays open that long)
//     fast threads (1 unless FAST_THREADS): start once thread 1 is inside its first call, then
//               FAST_CALLS reg_mr calls each, back to back, all at once; fast thread k fails
//               at layer FAST_LAYER[k % 3] with FAST_ERRNO[k % 4] (thread 2: ENOMEM at the
//               driver layer), so a tree carrying another thread's frames would show
// Prints "<tid1> <failed1> <tid2> <failed2> ...".
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
static const int FAST_LAYER[3] = {2, 3, 4};
static const int FAST_ERRNO[4] = {ENOMEM, EAGAIN, EIO, ENOSPC};
#define MAX_FAST 16

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
    int nfast = argc > 4 ? atoi(argv[4]) : 1;
    if (argc < 4 || nfast < 1 || nfast > MAX_FAST) {
        fprintf(stderr, "usage: %s SLOW_CALLS SLOW_DELAY_US FAST_CALLS [FAST_THREADS 1..%d]\n", argv[0], MAX_FAST);
        return 2;
    }
    struct job slow = {atol(argv[1]), 4, EFAULT, (unsigned)atoi(argv[2]), 0, 0};
    struct job fast[MAX_FAST];
    pthread_t t1, tf[MAX_FAST];
    pthread_create(&t1, NULL, run, &slow);
    while (!slow_started)
        usleep(100);
    usleep(2000);   // thread 1 is inside its slow call now
    for (int k = 0; k < nfast; k++) {
        fast[k] = (struct job){atol(argv[3]), FAST_LAYER[k % 3], FAST_ERRNO[k % 4], 0, 0, 0};
        pthread_create(&tf[k], NULL, run, &fast[k]);
    }
    pthread_join(t1, NULL);
    printf("%ld %ld", slow.tid, slow.failed);
    for (int k = 0; k < nfast; k++) {
        pthread_join(tf[k], NULL);
        printf(" %ld %ld", fast[k].tid, fast[k].failed);
    }
    printf("\n");
    return 0;
}
