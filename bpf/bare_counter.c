// bare_counter.c: the reference for bench/bench_fleet.py: the cheapest useful program on a hook,
// one per-CPU counter increment. The fleet tracer's per-invocation cost is reported as a ratio
// to this program attached to the same hook in the same run.
//   ATTACH_SYSCALLS: raw sys_exit tracepoint; otherwise a plain function (uprobe/uretprobe).
// With one of these, the counter plus one ingredient of calltree.c, to show where its cost goes:
//   WITH_KTIME         one bpf_ktime_get_ns (every frame's entry and exit takes one)
//   WITH_TASK_STORAGE  the thread's slot in task-local storage (calltree.c's call stack)
//   WITH_LRU_HASH      the thread's slot in an LRU hash keyed by tid (the call stack before)
#include <uapi/linux/ptrace.h>
#include <linux/ptrace.h>
#include <linux/sched.h>

struct slot {
    u64 n;
};

BPF_PERCPU_ARRAY(hits, u64, 1);
#ifdef WITH_TASK_STORAGE
BPF_TASK_STORAGE(slots, struct slot);
#endif
#ifdef WITH_LRU_HASH
BPF_TABLE("lru_hash", u32, struct slot, slots, 10240);
#endif

static __always_inline int count_hit(void) {
    u32 zero = 0;
    u64 *v = hits.lookup(&zero);
    if (v) {
#if defined(WITH_KTIME)
        *v += bpf_ktime_get_ns();
#else
        *v += 1;
#endif
    }
#if defined(WITH_TASK_STORAGE)
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    struct slot *s = slots.task_storage_get(task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (s)
        s->n++;
#elif defined(WITH_LRU_HASH)
    u32 tid = bpf_get_current_pid_tgid();
    struct slot *s = slots.lookup(&tid);
    if (s) {
        s->n++;
    } else {
        struct slot init = {};
        slots.update(&tid, &init);
    }
#endif
    return 0;
}

#ifdef ATTACH_SYSCALLS
RAW_TRACEPOINT_PROBE(sys_exit) { return count_hit(); }
#else
int bare_hit(struct pt_regs *ctx) { return count_hit(); }
#endif
