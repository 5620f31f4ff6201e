// fakeverbs.c: a user-space stand-in for the RDMA reg_mr cascade, for testing the fleet tracer's
// kernel-side logic with uprobes on a machine without RDMA hardware or fexit.
//
//   fv_uverbs_reg_mr -> fv_mlx5_reg_user_mr -> fv_umem_get -> fv_peer_umem_get
//   fv_uverbs_alloc_pd -> fv_mlx5_alloc_pd
//
// Every layer returns 0 or a negative errno, like the kernel functions it imitates. A failure is
// injected at one layer with fv_inject(layer, errno) (per thread); the layers above pass it up unchanged
// (so the trace shows where it first appears and how far it propagates). fv_set_delay_us()
// sleeps in the leaf to test the latency bound of good traces.
#include <errno.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, used))

enum { LAYER_NONE = 0, LAYER_UVERBS = 1, LAYER_DRIVER = 2, LAYER_UMEM = 3, LAYER_PEER = 4 };

// per thread: concurrent threads fail differently (tests/c/fakeverbs_threads.c)
static __thread int fail_layer = LAYER_NONE;
static __thread int fail_errno = 0;
static __thread unsigned delay_us = 0;
volatile int fv_sink;   // keeps the compiler from folding the cascade

NOINLINE void fv_inject(int layer, int err) { fail_layer = layer; fail_errno = err; }
NOINLINE void fv_set_delay_us(unsigned us) { delay_us = us; }

static int fails_at(int layer) { return fail_layer == layer ? -fail_errno : 0; }

NOINLINE int fv_peer_umem_get(unsigned long addr, unsigned long len) {
    if (delay_us)
        usleep(delay_us);
    fv_sink += (int)(addr + len);
    return fails_at(LAYER_PEER);
}

NOINLINE int fv_umem_get(unsigned long addr, unsigned long len) {
    int ret = fv_peer_umem_get(addr, len);
    if (ret)
        return ret;
    fv_sink++;
    return fails_at(LAYER_UMEM);
}

NOINLINE int fv_mlx5_reg_user_mr(unsigned long addr, unsigned long len) {
    int ret = fv_umem_get(addr, len);
    if (ret)
        return ret;
    fv_sink++;
    return fails_at(LAYER_DRIVER);
}

NOINLINE int fv_uverbs_reg_mr(unsigned long addr, unsigned long len) {
    int ret = fv_mlx5_reg_user_mr(addr, len);
    if (ret)
        return ret;
    fv_sink++;
    return fails_at(LAYER_UVERBS);
}

NOINLINE int fv_mlx5_alloc_pd(void) {
    fv_sink++;
    return fails_at(LAYER_DRIVER);
}

NOINLINE int fv_uverbs_alloc_pd(void) {
    int ret = fv_mlx5_alloc_pd();
    if (ret)
        return ret;
    fv_sink++;
    return fails_at(LAYER_UVERBS);
}
