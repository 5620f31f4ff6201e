// bare_counter.c: the reference for bench/bench_fleet.py: the cheapest useful program on a hook,
// one per-CPU counter increment. The fleet tracer's per-invocation cost is reported as a ratio
// to this program attached to the same hook in the same run.
//   ATTACH_SYSCALLS: raw sys_exit tracepoint; otherwise a plain function (uprobe/uretprobe).
#include <uapi/linux/ptrace.h>
#include <linux/ptrace.h>

BPF_PERCPU_ARRAY(hits, u64, 1);

static __always_inline int count_hit(void) {
    u32 zero = 0;
    u64 *v = hits.lookup(&zero);
    if (v)
        *v += 1;
    return 0;
}

#ifdef ATTACH_SYSCALLS
RAW_TRACEPOINT_PROBE(sys_exit) { return count_hit(); }
#else
int bare_hit(struct pt_regs *ctx) { return count_hit(); }
#endif
