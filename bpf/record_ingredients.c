// record_ingredients.c: the pieces of syscall_recorder.c one at a time, for the ingredient
// table of bench/bench_record.py (CPU added per call of a tight syscall loop, against the same
// loop with nothing attached).
//
// The base is the recorder's skeleton: raw sys_enter and raw sys_exit programs, the recording
// generation checked, the thread's array slot (indexed by tid, owner check) taken at entry --
// through a hash lookup of its tgid the first time -- and checked at exit, a per-CPU counter.
// Defines replace a piece of it or add one:
//   EMPTY              both programs return at once: the floor (the kernel's syscall slow path
//                      and two tracepoint dispatches)
//   HASH_FILTER        instead of the slot: the traced tgid looked up in a hash at entry and
//                      exit (the recorder before)
//   TASK_STORAGE       instead of the array slot: task-local storage (get+create at entry, get
//                      at exit; the recorder before)
//   CLASSIC_ENTER      sys_enter as the classic raw_syscalls:sys_enter tracepoint (the kernel
//                      copies the syscall number and six arguments into a perf buffer record)
//   CLASSIC_EXIT       sys_exit as the classic raw_syscalls:sys_exit tracepoint
//   KTIME              bpf_ktime_get_ns at entry and at exit
//   PT_REGS_ARGS       the six argument registers read at exit through bpf_task_pt_regs
//   COMM               bpf_get_current_comm at every exit
//   PATH               the second argument read as a string at exit (bpf_probe_read_user_str)
//   OUTPUT=N           N bytes at the second argument copied at exit (bpf_probe_read_user)
//   EMIT               a 112-byte record appended to a per-CPU batch at exit, the batch handed
//                      to the ring buffer every 8 KiB (BPF_RB_NO_WAKEUP)
//   REGS_KEY           the slot found by the address of the thread's saved user registers (the
//                      raw tracepoints' args[0], unique per live thread: no helper call)
//                      instead of by tid (bpf_get_current_pid_tgid at entry and exit)
//   EXIT_ONLY          no sys_enter program at all (the bench attaches sys_exit alone): the
//                      slot is taken and checked at exit
//   KTIME_EXIT         bpf_ktime_get_ns at exit only
// Only the headers it uses (bcc parses each three times per compile; see syscall_recorder.c).
#include <uapi/linux/ptrace.h>

#define SLOTS 32768

struct slot {
    u32 owner;
    u32 gen;
    u64 ts;
    u64 nr;
    u64 key;
};

struct stage {
    u32 pos;
    u32 count;
    u64 buf[2048];
};

struct strbuf {
    char s[512];
};

BPF_PERCPU_ARRAY(hits, u64, 1);
BPF_HASH(traced, u32, u32, 1024);
BPF_ARRAY(control, u32, 1);            // [0]: the generation
BPF_ARRAY(slots, struct slot, SLOTS);
#ifdef TASK_STORAGE
BPF_TASK_STORAGE(inflight, struct slot);
#endif
BPF_PERCPU_ARRAY(strbufs, struct strbuf, 1);
BPF_PERCPU_ARRAY(stages, struct stage, 1);
BPF_RINGBUF_OUTPUT(events, 16384);     // 64 MiB: one timed run never fills it

static __always_inline void count(u64 v)
{
    int zero = 0;
    u64 *n = hits.lookup(&zero);
    if (n)
        *n += v;
}

static __always_inline u32 generation(void)
{
    int zero = 0;
    u32 *g = control.lookup(&zero);
    return g ? *g : 0;
}

static __always_inline struct slot *enter_slot(u64 key, u32 gen)
{
#if defined(REGS_KEY)
    u32 i = (key >> 14) & (SLOTS - 1);
    struct slot *s = slots.lookup(&i);
    if (!s)
        return 0;
    if (s->key != key || s->gen != gen) {
        u32 tgid = bpf_get_current_pid_tgid() >> 32;
        if (!traced.lookup(&tgid))
            return 0;
        s->key = key;
        s->gen = gen;
    }
    return s;
#else
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id, tgid = id >> 32;
#endif
#if defined(REGS_KEY)
#elif defined(HASH_FILTER)
    if (!traced.lookup(&tgid))
        return 0;
    u32 i = tid & (SLOTS - 1);
    return slots.lookup(&i);
#elif defined(TASK_STORAGE)
    if (!traced.lookup(&tgid))
        return 0;
    return inflight.task_storage_get(bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
#else
    u32 i = tid & (SLOTS - 1);
    struct slot *s = slots.lookup(&i);
    if (!s)
        return 0;
    if (s->owner != tid || s->gen != gen) {
        if (!traced.lookup(&tgid))
            return 0;
        s->owner = tid;
        s->gen = gen;
    }
    return s;
#endif
}

static __always_inline struct slot *exit_slot(u64 key, u32 gen)
{
#if defined(EXIT_ONLY)
    return enter_slot(key, gen);
#elif defined(REGS_KEY)
    u32 i = (key >> 14) & (SLOTS - 1);
    struct slot *s = slots.lookup(&i);
    return s && s->key == key && s->gen == gen ? s : 0;
#else
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id, tgid = id >> 32;
#endif
#if defined(REGS_KEY) || defined(EXIT_ONLY)
#elif defined(HASH_FILTER)
    if (!traced.lookup(&tgid))
        return 0;
    u32 i = tid & (SLOTS - 1);
    return slots.lookup(&i);
#elif defined(TASK_STORAGE)
    return inflight.task_storage_get(bpf_get_current_task_btf(), 0, 0);
#else
    u32 i = tid & (SLOTS - 1);
    struct slot *s = slots.lookup(&i);
    return s && s->owner == tid && s->gen == gen ? s : 0;
#endif
}

static __always_inline int on_enter(u32 nr, u64 key)
{
#ifndef EMPTY
    u32 gen = generation();
    if (!gen)
        return 0;
    struct slot *s = enter_slot(key, gen);
    if (!s)
        return 0;
    s->nr = nr;
#ifdef KTIME
    s->ts = bpf_ktime_get_ns();
#endif
#endif
    return 0;
}

#ifdef CLASSIC_ENTER
TRACEPOINT_PROBE(raw_syscalls, sys_enter)
{
    return on_enter((u32)args->id, 0);
}
#else
RAW_TRACEPOINT_PROBE(sys_enter)
{
    return on_enter((u32)ctx->args[1], ctx->args[0]);
}
#endif

static __always_inline int on_exit(u64 key);

#ifdef CLASSIC_EXIT
TRACEPOINT_PROBE(raw_syscalls, sys_exit)
{
    return on_exit(0);
}
#else
RAW_TRACEPOINT_PROBE(sys_exit)
{
    return on_exit(ctx->args[0]);
}
#endif

static __always_inline int on_exit(u64 key)
{
#ifndef EMPTY
    u32 gen = generation();
    if (!gen)
        return 0;
    struct slot *s = exit_slot(key, gen);
    if (!s)
        return 0;
    u64 v = s->nr;
#ifdef KTIME
    v += bpf_ktime_get_ns() - s->ts;
#endif
#ifdef KTIME_EXIT
    v += bpf_ktime_get_ns();
#endif
#if defined(PT_REGS_ARGS) || defined(PATH) || defined(OUTPUT)
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(
        (struct task_struct *)bpf_get_current_task_btf());
#endif
#ifdef PT_REGS_ARGS
    v += regs->di + regs->si + regs->dx + regs->r10 + regs->r8 + regs->r9;
#endif
#ifdef COMM
    char comm[16];
    bpf_get_current_comm(&comm, sizeof(comm));
    v += comm[0];
#endif
#if defined(PATH) || defined(OUTPUT)
    int zero = 0;
    struct strbuf *buf = strbufs.lookup(&zero);
    if (!buf)
        return 0;
#endif
#ifdef PATH
    v += bpf_probe_read_user_str(buf->s, sizeof(buf->s), (const void *)regs->si);
#endif
#ifdef OUTPUT
    v += bpf_probe_read_user(buf->s, OUTPUT, (const void *)regs->si);
#endif
#ifdef EMIT
    int zero2 = 0;
    struct stage *st = stages.lookup(&zero2);
    if (!st)
        return 0;
    u32 at = (st->pos >> 3) & 1023;
    u64 *dst = &st->buf[at];
#pragma unroll
    for (int i = 0; i < 14; i++)
        dst[i] = v + i;
    u32 pos = at * 8 + 112;
    if (pos >= 8192) {
        events.ringbuf_output((char *)st + 8, 8192, BPF_RB_NO_WAKEUP);
        pos = 0;
    }
    st->pos = pos;
#endif
    count(v);
#endif
    return 0;
}
