// calltree.c: the one generic program of the fleet tracer (tracer/fleet/program.py compiles it with bcc).
//
// Every probe of a probe set enters on_entry() and leaves through on_exit(). A per-thread call
// tree (map `stacks`, keyed by tid) records the frames of one top-level invocation in call order;
// when the depth-0 call returns the tree is emitted whole if any frame failed, or as a sampled
// good trace while a capture window is open and the root finished within the latency bound.
// The success path outside a capture window writes nothing to the ring buffer. Per-CPU counters
// are updated before any ring-buffer work, so they stay exact when the ring buffer overflows.
//
// Specialised with -D flags (never with generated C):
//   ATTACH_UPROBE | ATTACH_FEXIT | ATTACH_SYSCALLS   which hook kind the probe set uses
//   PROBES=P(0,sym0)P(1,sym1)...                      probe ids and symbols (uprobe, fexit)
//   MAX_PROBES                                         size of the per-probe maps
//   RINGBUF_PAGES                                      ring buffer size in pages (power of 2)
//   TASK_REAL_PARENT_OFF, TASK_TGID_OFF                task_struct offsets from the kernel's BTF
#include <uapi/linux/ptrace.h>
#include <linux/ptrace.h>
#include <linux/sched.h>

#ifndef MAX_PROBES
#define MAX_PROBES 64
#endif
#ifndef RINGBUF_PAGES
#define RINGBUF_PAGES 64
#endif
#define MAX_FRAMES 16    // frames kept per call tree (power of 2: used as an index mask)
#define MAX_DEPTH 8      // open nesting levels tracked per thread (power of 2)
#define ERRNO_BUCKETS 136  // 0 = failure without errno, 1..133 = errno, 134 = kernel-internal, 135 = other
#define SYSCALL_SLOTS 1024

// How a probe's raw return value is read (tracer/fleet/probes.py RET_KINDS, same order).
#define RET_INT 0        // int, negative errno on failure (kernel convention)
#define RET_LONG 1       // long / ssize_t, negative errno on failure (syscalls)
#define RET_ERR_PTR 2    // pointer, ERR_PTR(-errno) on failure
#define RET_NULL_PTR 3   // pointer, NULL on failure (errno not visible)
#define RET_POS_ERRNO 4  // int, positive errno on failure (ibv_modify_qp, pthread style)
#define RET_NONZERO 5    // int, any non-zero value is a failure

#define KIND_FAILURE 1
#define KIND_GOOD 2

#define HEALTH_LOST 0       // records the ring buffer had no room for
#define HEALTH_EMITTED 1    // records written
#define HEALTH_TRUNCATED 2  // frames not recorded (tree deeper/wider than the limits)
#define HEALTH_ORPHAN 3     // returns without a matching entry (attached mid-call)
#define HEALTH_SLOTS 4

struct frame {            // 32 bytes; tracer/fleet/program.py FRAME_FORMAT
    u64 ts;               // entry time, bpf_ktime_get_ns
    u64 latency;          // ns
    s64 ret;              // normalised return value
    u16 probe;
    u8 depth;
    u8 failed;
    u32 pad;
};

struct tree {             // 48-byte header + frames; tracer/fleet/program.py HEADER_FORMAT
    u32 pid;
    u32 tid;
    u32 ppid;
    u8 kind;
    u8 nframes;
    u8 open;              // nesting levels currently open
    u8 failed;            // some frame of this tree failed
    u16 truncated;
    u16 skipped_open;     // open calls not recorded (beyond the limits)
    u32 pad;
    char comm[16];
    u8 path[MAX_DEPTH];   // frame index of each open level
    struct frame frames[MAX_FRAMES];
};

struct settings {
    u32 capture_open;     // good-trace capture window (set by user space)
    u32 target_tgid;      // 0 = every process
    u64 latency_bound_ns;
    u32 failures_only;
    u32 exclude_tgid;     // the tracer itself (its own syscalls would feed back)
};

struct probe_conf {
    u32 ret_kind;
    u32 sample_every;     // emit 1 in N good traces of this root probe
};

struct counts {
    u64 invocations;
    u64 failures;
    u64 errnos[ERRNO_BUCKETS];
};

BPF_RINGBUF_OUTPUT(events, RINGBUF_PAGES);
BPF_ARRAY(settings, struct settings, 1);
BPF_ARRAY(probe_conf, struct probe_conf, MAX_PROBES);
BPF_ARRAY(good_seen, u64, MAX_PROBES);
BPF_PERCPU_ARRAY(counts, struct counts, MAX_PROBES);
BPF_PERCPU_ARRAY(health, u64, HEALTH_SLOTS);
BPF_PERCPU_ARRAY(scratch, struct tree, 1);
BPF_TABLE("lru_hash", u32, struct tree, stacks, 10240);
#ifdef ATTACH_SYSCALLS
BPF_ARRAY(syscall_probe, u32, SYSCALL_SLOTS);   // syscall nr -> probe id + 1 (0 = not traced)
#endif

// ppid = current->real_parent->tgid at the running kernel's offsets (TASK_*_OFF, read from its
// BTF by tracer/fleet/program.py): the headers bcc compiles with may be another version's, and a read at
// a wrong offset returns 0 after a fault that costs ~1 us. With the offsets, the reads go through
// the BTF task pointer (verifier-checked loads against the kernel's BTF, no helper calls: ~80 ns
// cheaper per record than two bpf_probe_read_kernel); without BTF, the headers' offsets.
static __always_inline u32 current_ppid(void) {
#if defined(TASK_REAL_PARENT_OFF) && defined(TASK_TGID_OFF)
    void *task = bpf_get_current_task_btf();
    void *parent = *(void **)(task + TASK_REAL_PARENT_OFF);
    return *(u32 *)(parent + TASK_TGID_OFF);
#else
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    struct task_struct *parent = NULL;
    u32 tgid = 0;
    bpf_probe_read_kernel(&parent, sizeof(parent), &task->real_parent);
    if (parent)
        bpf_probe_read_kernel(&tgid, sizeof(tgid), &parent->tgid);
    return tgid;
#endif
}

static __always_inline void health_add(u32 slot) {
    u64 *v = health.lookup(&slot);
    if (v)
        *v += 1;
}

// The settings when this process is traced (the -p target, never the tracer itself), else NULL.
static __always_inline struct settings *traced_settings(u32 tgid) {
    u32 zero = 0;
    struct settings *s = settings.lookup(&zero);
    if (!s || (s->target_tgid && s->target_tgid != tgid) || s->exclude_tgid == tgid)
        return NULL;
    return s;
}

static __always_inline int on_entry(u32 probe) {
    u32 zero = 0;
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id, tgid = id >> 32;
    struct settings *s = traced_settings(tgid);
    if (!s)
        return 0;
    struct tree *t = stacks.lookup(&tid);
    if (!t) {
        struct tree *init = scratch.lookup(&zero);   // too big for the BPF stack
        if (!init)
            return 0;
        init->open = 0;
        stacks.update(&tid, init);
        t = stacks.lookup(&tid);
        if (!t)
            return 0;
    }
    if (t->open == 0) {   // a new top-level call: start a new tree (comm/ppid: at emit time)
        t->pid = tgid;
        t->tid = tid;
        t->nframes = 0;
        t->failed = 0;
        t->truncated = 0;
        t->skipped_open = 0;
    }
    if (t->skipped_open || t->open >= MAX_DEPTH || t->nframes >= MAX_FRAMES) {
        t->skipped_open++;
        t->truncated++;
        health_add(HEALTH_TRUNCATED);
        return 0;
    }
    u32 idx = t->nframes & (MAX_FRAMES - 1);
    struct frame *f = &t->frames[idx];
    f->ts = bpf_ktime_get_ns();
    f->latency = 0;
    f->ret = 0;
    f->probe = probe;
    f->depth = t->open;
    f->failed = 0;
    t->path[t->open & (MAX_DEPTH - 1)] = idx;
    t->open++;
    t->nframes++;
    return 0;
}

// Decides failure and errno bucket from the raw return value; *ret gets the signed value.
static __always_inline u32 classify(u32 kind, u64 raw, s64 *ret, u32 *bucket) {
    s64 v = (s64)raw;
    s64 err = 0;
    u32 failed = 0;
    if (kind == RET_INT || kind == RET_POS_ERRNO || kind == RET_NONZERO)
        v = (s64)(s32)raw;   // the upper half of the register is undefined for an int
    if (kind == RET_INT || kind == RET_LONG) {
        failed = v < 0;
        err = -v;
    } else if (kind == RET_ERR_PTR) {
        failed = raw >= (u64)-4095;
        err = -v;
    } else if (kind == RET_NULL_PTR) {
        failed = raw == 0;
    } else if (kind == RET_POS_ERRNO) {
        failed = v != 0;
        err = v > 0 ? v : -v;
    } else {
        failed = v != 0;
        err = v < 0 ? -v : 0;
    }
    *ret = v;
    if (!failed || err <= 0 || err > 4095)
        *bucket = 0;
    else if (err <= 133)
        *bucket = err;
    else if (err >= 512 && err <= 530)
        *bucket = 134;
    else
        *bucket = 135;
    return failed;
}

static __always_inline int on_exit(u32 probe, u64 raw) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id, tgid = id >> 32;
    struct settings *s = traced_settings(tgid);
    if (!s)
        return 0;
    struct probe_conf *conf = probe_conf.lookup(&probe);
    if (!conf)
        return 0;
    s64 ret = 0;
    u32 bucket = 0;
    u32 failed = classify(conf->ret_kind, raw, &ret, &bucket);

    // Control plane first: exact whatever happens to the ring buffer below.
    struct counts *c = counts.lookup(&probe);
    if (c) {
        c->invocations++;
        if (failed) {
            c->failures++;
            if (bucket < ERRNO_BUCKETS)
                c->errnos[bucket]++;
        }
    }

    struct tree *t = stacks.lookup(&tid);
    if (!t || t->open == 0) {
        health_add(HEALTH_ORPHAN);
        return 0;
    }
    if (t->skipped_open) {
        t->skipped_open--;
        if (failed)
            t->failed = 1;
        return 0;
    }
    u32 level = (t->open - 1) & (MAX_DEPTH - 1);
    u32 idx = t->path[level] & (MAX_FRAMES - 1);
    struct frame *f = &t->frames[idx];
    if (f->probe != probe) {   // entry missed (attached mid-call): drop this tree
        t->open = 0;
        health_add(HEALTH_ORPHAN);
        return 0;
    }
    f->latency = bpf_ktime_get_ns() - f->ts;
    f->ret = ret;
    f->failed = failed;
    if (failed)
        t->failed = 1;
    t->open--;
    if (t->open)
        return 0;

    // The top-level call returned: emit on failure, or as a sampled good trace.
    if (t->failed) {
        t->kind = KIND_FAILURE;
    } else {
        if (!s->capture_open || s->failures_only || f->latency > s->latency_bound_ns)
            return 0;
        u32 every = conf->sample_every;
        if (every > 1) {
            u64 *seen = good_seen.lookup(&probe);
            if (!seen)
                return 0;
            u64 n = __sync_fetch_and_add(seen, 1);
            if (n % every)
                return 0;
        }
        t->kind = KIND_GOOD;
    }
    // Only records pay for the process details.
    t->ppid = current_ppid();
    bpf_get_current_comm(&t->comm, sizeof(t->comm));
    u32 n = t->nframes;
    if (n > MAX_FRAMES)
        n = MAX_FRAMES;
    u64 size = sizeof(struct tree) - MAX_FRAMES * sizeof(struct frame) + n * sizeof(struct frame);
    if (size > sizeof(struct tree))
        size = sizeof(struct tree);
    // No wake-up per record (an irq_work each: it tripled the cost of the failure path);
    // user space polls on a timer (100 ms in tracer run) and is woken by the first and every
    // 64th record of a CPU: bursts drain before the buffer fills, and a failure is read (and
    // enriched from /proc/<pid>) while its process most likely still runs.
    u32 emitted_slot = HEALTH_EMITTED;
    u64 *emitted = health.lookup(&emitted_slot);   // one lookup: wake-up cadence and the count
    u64 flags = (emitted && (*emitted & 63) == 0) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
    if (events.ringbuf_output(t, size, flags) == 0) {
        if (emitted)
            *emitted += 1;
    } else
        health_add(HEALTH_LOST);
    return 0;
}

#if defined(ATTACH_UPROBE)
#define P(id, sym)                                                                      \
    int entry__##sym(struct pt_regs *ctx) { return on_entry(id); }                      \
    int return__##sym(struct pt_regs *ctx) { return on_exit(id, PT_REGS_RC(ctx)); }
PROBES
#elif defined(ATTACH_FEXIT)
// fentry/fexit: bpf_get_func_ret reads the return value without knowing the argument count.
#define P(id, sym)                                                                      \
    KFUNC_PROBE(sym) { return on_entry(id); }                                           \
    KRETFUNC_PROBE(sym) {                                                               \
        u64 ret = 0;                                                                    \
        bpf_get_func_ret(ctx, &ret);                                                    \
        return on_exit(id, ret);                                                        \
    }
PROBES
#elif defined(ATTACH_SYSCALLS)
RAW_TRACEPOINT_PROBE(sys_enter) {
    u32 nr = ctx->args[1];
    u32 *slot = syscall_probe.lookup(&nr);
    if (!slot || *slot == 0)
        return 0;
    return on_entry(*slot - 1);
}

RAW_TRACEPOINT_PROBE(sys_exit) {
    struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
    long nr = 0;
    bpf_probe_read_kernel(&nr, sizeof(nr), &regs->orig_ax);
    u32 key = nr;
    u32 *slot = syscall_probe.lookup(&key);
    if (!slot || *slot == 0)
        return 0;
    return on_exit(*slot - 1, (u64)ctx->args[1]);
}
#else
#error "define one of ATTACH_UPROBE, ATTACH_FEXIT, ATTACH_SYSCALLS"
#endif
