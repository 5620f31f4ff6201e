// bare_counter.c: the reference for bench/bench_fleet.py: the cheapest useful program on a hook,
// one per-CPU counter increment. The fleet tracer's per-invocation cost is reported as a ratio
// to this program attached to the same hook in the same run.
//   ATTACH_SYSCALLS: raw sys_exit tracepoint; otherwise a plain function (uprobe/uretprobe).
// With one of these, the counter plus one ingredient of calltree.c, to show where its cost goes:
//   WITH_KTIME            one bpf_ktime_get_ns (a frame's entry and exit in a capture window)
//   WITH_JIFFIES          one bpf_jiffies64 (tick resolution; bpf_ktime_get_coarse_ns is refused
//                         for tracing programs)
//   WITH_TASK_STORAGE     the thread's slot in task-local storage (the call stack before)
//   WITH_LRU_HASH         the thread's slot in an LRU hash keyed by tid (the call stack before that)
//   WITH_ARRAY_SLOT       the thread's slot in an array indexed by tid, owner checked (calltree.c)
//   WITH_ARRAY_CLAIM      the same slot claimed with a compare-and-swap and released (a tree's root)
//   WITH_RINGBUF_OUTPUT=N bpf_ringbuf_output of N bytes (build, then copy); WAKE_EVERY=M: the
//                         reader woken by every M-th record (BPF_RB_FORCE_WAKEUP: an irq_work)
//   WITH_RINGBUF_RESERVE=N bpf_ringbuf_reserve of N bytes, 32 of them written, submit
//   WITH_COMM             bpf_get_current_comm
//   WITH_SIGS_HASH        a lookup in a hash keyed by a 16-byte signature key (the aggregation map)
//   WITH_PID_TGID         bpf_get_current_pid_tgid
//   WITH_TASK_PID         the tid read through bpf_get_current_task_btf (TASK_PID_OFF)
//   WITH_TASK_COMM        the comm read through bpf_get_current_task_btf (TASK_COMM_OFF)
//   WITH_SMP_ID           bpf_get_smp_processor_id
// Only the headers it uses (bcc parses each three times per compile; see calltree.c).
#include <uapi/linux/ptrace.h>

#define SLOTS 4096

struct slot {
    u64 owner;
    u64 n;
};

struct sig_key {
    u64 sig;
    u32 gen;
    u32 pad;
};

BPF_PERCPU_ARRAY(hits, u64, 1);
#ifdef WITH_TASK_STORAGE
BPF_TASK_STORAGE(slots, struct slot);
#endif
#ifdef WITH_LRU_HASH
BPF_TABLE("lru_hash", u32, struct slot, slots, 10240);
#endif
#if defined(WITH_ARRAY_SLOT) || defined(WITH_ARRAY_CLAIM)
BPF_ARRAY(slots, struct slot, SLOTS);
#endif
#if defined(WITH_RINGBUF_OUTPUT) || defined(WITH_RINGBUF_RESERVE)
BPF_RINGBUF_OUTPUT(rb, 256);
#endif
#ifdef WITH_RINGBUF_OUTPUT
struct scratch {
    u8 bytes[WITH_RINGBUF_OUTPUT];
};
BPF_PERCPU_ARRAY(scratch, struct scratch, 1);
#endif
#ifdef WITH_SIGS_HASH
BPF_HASH(sigs, struct sig_key, u64, 8192);
#endif

static __always_inline int count_hit(void) {
    u32 zero = 0;
    u64 *v = hits.lookup(&zero);
    if (!v)
        return 0;
#if defined(WITH_KTIME)
    *v += bpf_ktime_get_ns();
#elif defined(WITH_JIFFIES)
    *v += bpf_jiffies64();
#elif defined(WITH_PID_TGID)
    *v += bpf_get_current_pid_tgid();
#elif defined(WITH_TASK_PID)
    void *task = bpf_get_current_task_btf();
    *v += *(u32 *)(task + TASK_PID_OFF);
#elif defined(WITH_TASK_COMM)
    void *task = bpf_get_current_task_btf();
    *v += *(u64 *)(task + TASK_COMM_OFF) + *(u64 *)(task + TASK_COMM_OFF + 8);
#elif defined(WITH_SMP_ID)
    *v += bpf_get_smp_processor_id();
#else
    *v += 1;
#endif
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
#elif defined(WITH_ARRAY_SLOT) || defined(WITH_ARRAY_CLAIM)
    u32 tid = bpf_get_current_pid_tgid();
    u32 idx = tid & (SLOTS - 1);
    struct slot *s = slots.lookup(&idx);
    if (!s)
        return 0;
#if defined(WITH_ARRAY_CLAIM)
    if (__sync_val_compare_and_swap(&s->owner, 0, (u64)tid) == 0) {
        s->n++;
        s->owner = 0;
    }
#else
    if (s->owner == tid)
        s->n++;
    else
        s->owner = tid;
#endif
#elif defined(WITH_RINGBUF_OUTPUT)
    struct scratch *b = scratch.lookup(&zero);
    if (b) {
        b->bytes[0] = (u8)*v;
#ifdef WAKE_EVERY   // the consumer woken by every WAKE_EVERY-th record (an irq_work each)
        rb.ringbuf_output(b, sizeof(*b), (*v % WAKE_EVERY) == 0 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
#else
        rb.ringbuf_output(b, sizeof(*b), BPF_RB_NO_WAKEUP);
#endif
    }
#elif defined(WITH_RINGBUF_RESERVE)
    u64 *r = rb.ringbuf_reserve(WITH_RINGBUF_RESERVE);
    if (r) {
        r[0] = *v;
        r[1] = *v;
        r[2] = *v;
        r[3] = *v;
        rb.ringbuf_submit(r, BPF_RB_NO_WAKEUP);
    }
#elif defined(WITH_COMM)
    char comm[16];
    bpf_get_current_comm(&comm, sizeof(comm));
    *v += comm[0];
#elif defined(WITH_SIGS_HASH)
    struct sig_key key = {.sig = *v & 15, .gen = 1};
    u64 *n = sigs.lookup(&key);
    if (n)
        *n += 1;
    else
        { u64 one = 1; sigs.insert(&key, &one); }
#endif
    return 0;
}

#ifdef ATTACH_SYSCALLS
RAW_TRACEPOINT_PROBE(sys_exit) { return count_hit(); }
#else
int bare_hit(struct pt_regs *ctx) { return count_hit(); }
#endif
