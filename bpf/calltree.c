// calltree.c: the one generic program of the fleet tracer (tracer/fleet/program.py compiles it with bcc).
//
// Every probe of a probe set enters on_entry() and leaves through on_exit(). A per-thread call
// tree records the frames of one top-level invocation in call order; when the depth-0 call
// returns the tree is emitted whole if any frame failed, or as a sampled good trace while a
// capture window is open and the root finished within the latency bound. Per-CPU counters are
// updated before any ring-buffer work, so they stay exact when the ring buffer overflows.
//
// Cost per invocation (bench/bench_fleet.py; helper calls cost ~15 ns each on the reference VM,
// bpf_ktime_get_ns ~57 ns, a task-storage lookup ~45 ns, an inlined array lookup ~3 ns):
// - The thread's tree lives in a slot of the array `slots` (an inlined lookup) chosen by the
//   thread's key: the address of its saved user registers (pt_regs, at the top of its kernel
//   stack: unique per live thread) where the hook hands it over - raw syscall tracepoints pass
//   it in args[0], a uprobe's ctx is it (checked once at load: regs_check_hit) - else (fexit,
//   or where that check failed) its tid. So a nested entry and a return inside a tree need no
//   helper call at all; a uprobe tree's root calls none either unless a process filter needs
//   the tgid (pid and tid are read at emit, from the task). A slot is owned by one thread at a
//   time: a tree's root entry claims a free slot with a compare-and-swap, its root exit
//   releases it. A thread whose slot another live thread holds (a collision) keeps its tree in
//   task-local storage instead (`stacks`, the slower path) and counts in HEALTH_COLLIDED;
//   `guests` in the slot tells that thread's other frames to look there. No collision can mix two threads' frames or change a counter. The thread-exit
//   tracepoint frees a dying thread's slot (a tid reused later never continues its tree).
// - Timestamps only inside capture windows: a tree whose root entered while the window was open
//   is "timed" (bpf_ktime_get_ns at every frame's entry and exit: per-frame latencies, the
//   latency bound of good traces). Outside windows the success path touches the counter and
//   the slot only (invocations of every probe share one per-CPU value, `calls`); a failure
//   record carries one bpf_jiffies64() taken at emit (the tick the
//   root returned in; user space converts it to the monotonic clock) and no latencies.
// - Records are written from the slot with one bpf_ringbuf_output (the syscall variant's
//   one-frame records: reserved and written in place); comm and ppid are loads
//   through the task's BTF pointer (bpf_get_current_comm costs ~70 ns here). With aggregation
//   off (AGG_EXAMPLES = 2^31-1) a failure record skips the `sigs` hash unless the ring is full.
//
// Repeated failures are aggregated in the kernel. A failing call tree's signature (root probe,
// frame chain with depths, the return value of every failed frame) is hashed; per snapshot
// interval each signature sends its first AGG_EXAMPLES trees through the ring buffer and is only
// counted after that, in map `sigs`, which user space reads and clears at each snapshot. A
// signature is claimed only by a record that was actually submitted: when the ring buffer has
// no room, the tree is counted as a repeat and the next occurrence may still be the example.
//
// Snapshot intervals: settings.interval is incremented by user space at each snapshot. Counters,
// health slots and `sigs` keys carry its low bit (the generation), so the interval user space
// closes is quiescent while it is read: what it reads for one interval is exactly consistent.
//
// Specialised with -D flags (never with generated C):
//   ATTACH_UPROBE | ATTACH_FEXIT | ATTACH_SYSCALLS   which hook kind the probe set uses
//   PROBES=P(0,sym0,kind0)P(1,sym1,kind1)...           probe ids, symbols, return kinds (uprobe, fexit)
//   MAX_PROBES                                         size of the per-probe maps
//   RINGBUF_PAGES                                      ring buffer size in pages (power of 2)
//   AGG_EXAMPLES                                       examples per signature per interval
//   MAX_SIGNATURES                                     signatures tracked per two intervals
//   SLOTS                                              per-thread tree slots (power of 2)
//   RELEASE_STORE                                      a plain store releases (x86: stores stay in order)
//   EXCLUDE_TGID                                       the tracer itself (its syscalls would feed back;
//                                                      0 for a uprobe set whose library it has not mapped)
//   NO_REGS_KEY                                        uprobes: slots keyed by tid (the load-time check of
//                                                      the saved-registers key failed)
//   TASK_REAL_PARENT_OFF, TASK_TGID_OFF, TASK_PID_OFF, TASK_COMM_OFF, TASK_STACK_OFF
//                                                      task_struct offsets (BTF)
// Profiling only (bench/bench_fleet.py: the program minus one piece, never deployed):
//   PROFILE_NO_ENTRY / PROFILE_NO_EXIT   uprobe entries / returns do nothing once the key is read
//   PROFILE_NO_COUNT                     no counter update
//   PROFILE_CONST_KEY                    uprobes use a constant key (one thread only: measures thread_key)
// Headers: bcc parses them three times per compile (tracepoint pass, rewrite, code
// generation), so only what the program uses: struct pt_regs (uprobe ctx, PT_REGS_RC) from
// uapi/linux/ptrace.h; struct task_struct's members only where the task_struct offsets did not
// come from BTF (task_details' fallback). linux/ptrace.h and linux/sched.h cost 1.2-2.5 s of CPU
// per program for the same instructions (tests/test_bpf_compile.py compares them).
#include <uapi/linux/ptrace.h>
#if !(defined(TASK_REAL_PARENT_OFF) && defined(TASK_TGID_OFF) && defined(TASK_PID_OFF) && defined(TASK_COMM_OFF))
#include <linux/sched.h>
#endif

#ifndef MAX_PROBES
#define MAX_PROBES 64
#endif
#ifndef RINGBUF_PAGES
#define RINGBUF_PAGES 64
#endif
#ifndef AGG_EXAMPLES
#define AGG_EXAMPLES 4
#endif
#ifndef MAX_SIGNATURES
#define MAX_SIGNATURES 8192
#endif
#ifndef SLOTS
#define SLOTS 4096       // 4096 x 600 bytes = 2.3 MiB; tids are dense, so live threads rarely share one
#endif
#ifndef EXCLUDE_TGID
#define EXCLUDE_TGID 0
#endif
#define AGG_ALL (AGG_EXAMPLES >= 2147483647)   // aggregation off: every failing tree a record
#if defined(ATTACH_SYSCALLS) || (defined(ATTACH_UPROBE) && defined(TASK_STACK_OFF) && !defined(NO_REGS_KEY))
#define KEY_REGS 1       // slots keyed by the thread's user pt_regs address (else by tid)
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

#define HEALTH_LOST 0       // failing trees with neither a record nor a repeat count (`sigs` full, ring full)
#define HEALTH_EMITTED 1    // records written
#define HEALTH_TRUNCATED 2  // frames not recorded (tree deeper/wider than the limits)
#define HEALTH_ORPHAN 3     // returns without a matching entry (attached mid-call)
#define HEALTH_DEFERRED 4   // failing trees counted as repeats because the ring buffer was full
#define HEALTH_COLLIDED 5   // trees kept in task storage: their slot was held by another thread
#define HEALTH_SLOTS 6

struct frame {            // 32 bytes; tracer/fleet/program.py FRAME
    u64 ts;               // entry time, bpf_ktime_get_ns (timed trees only)
    u64 latency;          // ns (timed trees only)
    s64 ret;              // normalised return value
    u16 probe;
    u8 depth;
    u8 failed;
    u32 pad;
};

struct record {           // 80-byte header + frames; tracer/fleet/program.py HEADER
    u32 pid;
    u32 tid;
    u32 ppid;
    u32 interval;         // snapshot interval the tree ended in
    u8 kind;
    u8 nframes;
    u8 open;              // nesting levels currently open
    u8 failed;            // some frame of this tree failed
    u8 timed;             // the root entered in a capture window: frames carry ts and latency
    u8 pad0;
    u16 truncated;
    u16 skipped_open;     // open calls not recorded (beyond the limits)
    u16 pad1;
    u32 pad2;
    u8 path[MAX_DEPTH];   // frame index of each open level (in the slot's first cache line)
    char comm[16];
    u64 sig;              // signature of a failing tree (0 for good traces)
    u64 time;             // end of the tree: ktime ns (timed) or bpf_jiffies64 (untimed)
    u64 seq;              // record number: per-CPU counter from a random start (unique id)
    struct frame frames[MAX_FRAMES];
};

struct tree {             // a slot: its owner, then the record it builds
    u64 owner;            // key of the thread holding the slot (thread_key), 0 = free (slots only)
    u64 guests;           // threads hashed here keeping their tree in task storage (slots only)
    struct record r;
};

struct settings {         // runtime settings (user space writes them); static ones are #defines
    u32 capture_open;     // good-trace capture window
    u32 target_tgid;      // 0 = every process
    u64 latency_bound_ns;
    u32 failures_only;
    u32 interval;         // current snapshot interval; its low bit selects the generation
    u64 regs_off;         // uprobe KEY_REGS: task_pt_regs - task->stack (regs_check; thread exit)
};

struct probe_conf {
    u32 sample_every;     // emit 1 in N good traces of this root probe
    u32 pad;
};

struct counts {           // failures of one probe (a call that succeeded touches only `calls`)
    u64 failures;
    u64 errnos[ERRNO_BUCKETS];
};

struct calls {            // invocations of every probe, both generations: one value, few cache lines
    u64 n[2 * MAX_PROBES];   // [generation][probe]
};

struct sig_key {
    u64 sig;
    u32 gen;
    u32 pad;
};

struct sig_val {
    u64 claims;           // examples claimed (submitted, or in flight)
    u64 repeats;          // failing trees of this signature sent as no record
};

struct clock_pair {       // clock_sync(): user space converts jiffies to the monotonic clock
    u64 jiffies;
    u64 ktime;
};

BPF_RINGBUF_OUTPUT(events, RINGBUF_PAGES);
BPF_ARRAY(settings, struct settings, 1);
BPF_ARRAY(probe_conf, struct probe_conf, MAX_PROBES);
BPF_ARRAY(good_seen, u64, MAX_PROBES);
BPF_PERCPU_ARRAY(calls, struct calls, 1);
BPF_PERCPU_ARRAY(counts, struct counts, 2 * MAX_PROBES);   // [generation][probe]
BPF_PERCPU_ARRAY(health, u64, 2 * HEALTH_SLOTS);           // [generation][slot]
BPF_PERCPU_ARRAY(rec_seq, u64, 1);                         // user space seeds a random start per CPU
BPF_HASH(sigs, struct sig_key, struct sig_val, MAX_SIGNATURES);
BPF_ARRAY(slots, struct tree, SLOTS);
BPF_TASK_STORAGE(stacks, struct tree);                     // collisions only
BPF_ARRAY(clock, struct clock_pair, 1);
#if defined(KEY_REGS) && defined(ATTACH_UPROBE)
BPF_PERCPU_ARRAY(key_scratch, u64, 1);
struct regs_check {       // what regs_check_hit saw (tracer/fleet/program.py check_regs_key)
    u64 hits;             // uprobe and uretprobe runs
    u64 mismatches;       // runs whose ctx was not the thread's saved user registers
    u64 regs_off;         // task_pt_regs(current) - current->stack
};
BPF_ARRAY(regs_check, struct regs_check, 1);
#endif
#ifdef ATTACH_SYSCALLS
BPF_ARRAY(syscall_probe, u32, SYSCALL_SLOTS);   // syscall nr -> probe id + 1 (0 = not traced)
#endif

// The current task through its BTF pointer: pid, tid, comm and ppid are plain verifier-checked
// loads at the running kernel's offsets (TASK_*_OFF, read from its BTF by
// tracer/fleet/program.py: the headers bcc compiles with may be another version's). Without
// them, helpers and the headers. Emit runs on the tree's own thread (its root returns there),
// so the tree's root needs no helper for its pid and tid.
static __always_inline void task_details(struct record *r) {
#if defined(TASK_REAL_PARENT_OFF) && defined(TASK_TGID_OFF) && defined(TASK_PID_OFF) && defined(TASK_COMM_OFF)
    void *task = bpf_get_current_task_btf();
    r->pid = *(u32 *)(task + TASK_TGID_OFF);
    r->tid = *(u32 *)(task + TASK_PID_OFF);
    void *parent = *(void **)(task + TASK_REAL_PARENT_OFF);
    r->ppid = *(u32 *)(parent + TASK_TGID_OFF);
    *(u64 *)&r->comm[0] = *(u64 *)(task + TASK_COMM_OFF);
    *(u64 *)&r->comm[8] = *(u64 *)(task + TASK_COMM_OFF + 8);
#else
    u64 id = bpf_get_current_pid_tgid();
    r->pid = id >> 32;
    r->tid = (u32)id;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    struct task_struct *parent = NULL;
    u32 tgid = 0;
    bpf_probe_read_kernel(&parent, sizeof(parent), &task->real_parent);
    if (parent)
        bpf_probe_read_kernel(&tgid, sizeof(tgid), &parent->tgid);
    r->ppid = tgid;
    bpf_get_current_comm(&r->comm, sizeof(r->comm));
#endif
}

static __always_inline void health_add(u32 gen, u32 slot) {
    u32 key = (gen & 1) * HEALTH_SLOTS + slot;
    u64 *v = health.lookup(&key);
    if (v)
        *v += 1;
}

// The thread's key: its user pt_regs address (KEY_REGS), else its pid_tgid. Never 0.
static __always_inline struct tree *slot_of(u64 key) {
#ifdef KEY_REGS
    u32 idx = (u32)(((key >> 12) * 0x9E3779B97F4A7C15ULL) >> 40) & (SLOTS - 1);   // stacks are >= 16 KiB apart
#else
    u32 idx = (u32)key & (SLOTS - 1);
#endif
    return slots.lookup(&idx);
}

// The thread's open tree in task storage, when it keeps one there (a collision), else NULL.
static __always_inline struct tree *guest_tree(struct tree *slot) {
    if (!slot->guests)
        return NULL;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    struct tree *g = stacks.task_storage_get(task, 0, 0);
    return g && g->r.open ? g : NULL;
}

// The tree this thread's next frame goes to: its slot or its task storage if it is inside a
// tree, else a new tree in its slot (claimed) or, when another thread holds the slot, in task
// storage. NULL: no room (task storage refused).
static __always_inline struct tree *tree_for_entry(struct tree *slot, u64 key, u32 gen) {
    if (slot->owner == key)
        return slot;
    struct tree *g = guest_tree(slot);
    if (g)
        return g;
    if (slot->owner == 0 && __sync_val_compare_and_swap(&slot->owner, 0, key) == 0) {
        slot->r.open = 0;
        return slot;
    }
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    g = stacks.task_storage_get(task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!g)
        return NULL;
    g->r.open = 0;
    __sync_fetch_and_add(&slot->guests, 1);
    health_add(gen, HEALTH_COLLIDED);
    return g;
}

// The tree a return belongs to, or NULL (no open tree: attached mid-call, or not traced).
static __always_inline struct tree *tree_for_exit(struct tree *slot, u64 key) {
    if (slot->owner == key)
        return slot->r.open ? slot : NULL;
    return guest_tree(slot);
}

// The tree ended (emitted or not): give the slot back, or leave the guests. The release must
// be seen after every write to the tree and every read of the emit: an atomic exchange, or on
// x86 (stores are not reordered with earlier loads or stores) a plain store after a compiler
// barrier.
static __always_inline void release(struct tree *t, struct tree *slot) {
    if (t == slot) {
#ifdef RELEASE_STORE
        asm volatile("" ::: "memory");
        *(volatile u64 *)&slot->owner = 0;
#else
        __sync_lock_test_and_set(&slot->owner, 0);
#endif
    } else {
        __sync_fetch_and_add(&slot->guests, -1);
    }
}

// The settings when this process is traced (the -p target, never the tracer itself), else NULL.
static __always_inline struct settings *traced_settings(u32 tgid) {
    u32 zero = 0;
    if (tgid == EXCLUDE_TGID)
        return NULL;
    struct settings *s = settings.lookup(&zero);
    if (!s || (s->target_tgid && s->target_tgid != tgid))
        return NULL;
    return s;
}

// One frame more in an open tree; 1 when it was not recorded (beyond the limits).
static __always_inline int push_frame(struct record *t, u32 probe) {
    if (t->skipped_open || t->open >= MAX_DEPTH || t->nframes >= MAX_FRAMES) {
        t->skipped_open++;
        t->truncated++;
        return 1;
    }
    u32 idx = t->nframes & (MAX_FRAMES - 1);
    struct frame *f = &t->frames[idx];
    if (t->timed)
        f->ts = bpf_ktime_get_ns();
    f->probe = probe;
    f->depth = t->open;
    f->failed = 0;
    t->path[t->open & (MAX_DEPTH - 1)] = idx;
    t->open++;
    t->nframes++;
    return 0;
}

static __always_inline int enter_frame(struct record *t, struct settings *s, u32 probe) {
    if (t->open == 0) {   // a top-level call: start a new tree (pid, tid, comm, ppid: at emit time)
        t->nframes = 0;
        t->failed = 0;
        t->truncated = 0;
        t->skipped_open = 0;
        t->timed = s->capture_open != 0;
    }
    return push_frame(t, probe);
}

#if defined(KEY_REGS) && defined(ATTACH_UPROBE)
// A pointer becomes a number through a map value (allowed to privileged programs; arithmetic
// on a ctx pointer is not).
static __always_inline u64 as_number(void *p) {
    u32 zero = 0;
    u64 *k = key_scratch.lookup(&zero);
    if (!k)
        return 0;
    *(volatile u64 *)k = (u64)p;
    return *(volatile u64 *)k;
}

// The uprobe's ctx is the thread's saved user registers (task_pt_regs(current)): checked once
// at load by regs_check_hit (tracer/fleet/program.py check_regs_key), which falls back to tid
// keys (NO_REGS_KEY) where it is not.
static __always_inline u64 thread_key(struct pt_regs *ctx) {
    return as_number(ctx);
}

// The thread's key for the root's process filter: the tgid is read (a helper call) only where a
// filter needs it, else 0 (every process traced, the tracer itself not hooked: EXCLUDE_TGID 0).
static __always_inline u64 filter_id(u64 key, struct settings *s) {
    return (EXCLUDE_TGID != 0 || s->target_tgid) ? bpf_get_current_pid_tgid() : 0;
}
#else
#ifndef ATTACH_SYSCALLS
// fexit (or uprobes keyed by tid): the pid_tgid, so a root entry asks only once
static __always_inline u64 thread_key(void *ctx) {
    return bpf_get_current_pid_tgid();
}
#endif

static __always_inline u64 filter_id(u64 key, struct settings *s) {
#ifdef ATTACH_SYSCALLS
    return bpf_get_current_pid_tgid();
#else
    return key;
#endif
}
#endif

// The settings when this process is traced (the -p target, never the tracer itself), else NULL.
static __always_inline struct settings *root_settings(u64 key) {
    u32 zero = 0;
    struct settings *s = settings.lookup(&zero);
    if (!s)
        return NULL;
    u32 tgid = filter_id(key, s) >> 32;
    if (EXCLUDE_TGID != 0 && tgid == EXCLUDE_TGID)
        return NULL;
    if (s->target_tgid && s->target_tgid != tgid)
        return NULL;
    return s;
}

static __always_inline int on_entry(u32 probe, u64 key) {
#ifdef PROFILE_NO_ENTRY
    if (probe < MAX_PROBES)
        return 0;
#endif
    if (!key)
        return 0;
    struct tree *slot = slot_of(key);
    if (!slot)
        return 0;
    if (slot->owner == key) {   // inside this thread's tree: a frame more, nothing else read
        if (push_frame(&slot->r, probe)) {
            u32 zero = 0;
            struct settings *s = settings.lookup(&zero);
            if (s)
                health_add(s->interval, HEALTH_TRUNCATED);
        }
        return 0;
    }
    struct settings *s = root_settings(key);
    if (!s)
        return 0;
    struct tree *t = tree_for_entry(slot, key, s->interval);
    if (!t) {
        health_add(s->interval, HEALTH_TRUNCATED);
        return 0;
    }
    if (enter_frame(&t->r, s, probe))
        health_add(s->interval, HEALTH_TRUNCATED);
    return 0;
}

// Decides failure and errno bucket from the raw return value; *ret gets the signed value.
// `kind` is a compile-time constant at every call site: the other branches fold away.
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

// Signature of a failing tree: every frame's probe and depth, and the return value of every
// failed frame (successful frames' values - fds, pointers - differ between identical trees).
static __always_inline u64 tree_signature(struct record *t) {
    u64 h = 0xcbf29ce484222325ULL ^ (t->truncated ? 1 : 0);
    u32 n = t->nframes;
    if (n > MAX_FRAMES)
        n = MAX_FRAMES;
    for (u32 i = 0; i < n; i++) {
        struct frame *f = &t->frames[i & (MAX_FRAMES - 1)];   // the mask: provably in bounds
        u64 w = (u64)f->probe | ((u64)f->depth << 16) | ((u64)f->failed << 24);
        if (f->failed)
            w ^= (u64)f->ret << 32 ^ (u64)((u64)f->ret >> 32);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

// Writes the record; 0 when it was submitted.
static __always_inline int emit(struct record *t, u32 gen, u64 end_ns) {
    u64 time = t->timed ? end_ns : bpf_jiffies64();
    u32 zero = 0;
    u64 *seq = rec_seq.lookup(&zero);
    u64 n = 0;
    if (seq) {
        n = *seq;
        *seq = n + 1;
    }
    // The kernel's adaptive wake-up (flags 0): only the first record after the reader emptied
    // the ring wakes it (an irq_work, ~2 us on a VM), and the reader drains at most every few
    // ms (RingReader.wait), so wake-ups stay at a few hundred per second whatever the record
    // rate. Forcing one every 64th record cost 31 ns per record here.
#ifdef ATTACH_SYSCALLS
    // Syscall trees have one frame: the record has a constant size, so it is reserved in the
    // ring and written in place (~10 ns less than building it in the slot and copying it).
    struct record *r = events.ringbuf_reserve(sizeof(struct record) - (MAX_FRAMES - 1) * sizeof(struct frame));
    if (!r)
        return -1;
    __builtin_memcpy(r, t, offsetof(struct record, comm));
    task_details(r);   // only records pay for the process details
    r->sig = t->sig;
    r->time = time;
    r->seq = n;
    __builtin_memcpy(&r->frames[0], &t->frames[0], sizeof(struct frame));
    events.ringbuf_submit(r, 0);
#else
    task_details(t);   // only records pay for the process details
    t->time = time;
    t->seq = n;
    u32 nf = t->nframes;
    if (nf > MAX_FRAMES)
        nf = MAX_FRAMES;
    u64 size = sizeof(struct record) - MAX_FRAMES * sizeof(struct frame) + nf * sizeof(struct frame);
    if (size > sizeof(struct record))
        size = sizeof(struct record);
    if (events.ringbuf_output(t, size, 0) != 0)
        return -1;
#endif
    health_add(gen, HEALTH_EMITTED);
    return 0;
}

// The signature's repeat count in `sigs` (inserted when new), or NULL when the table is full.
static __always_inline struct sig_val *sig_entry(u64 sig, u32 gen) {
    struct sig_key key = {.sig = sig, .gen = gen & 1};
    struct sig_val *v = sigs.lookup(&key);
    if (v)
        return v;
    struct sig_val zero = {};
    sigs.insert(&key, &zero);   // a concurrent insert of the same key wins: fine
    return sigs.lookup(&key);
}

// A failing tree: one of the first AGG_EXAMPLES of its signature in this interval is sent
// whole, any other is counted in `sigs`.
static __always_inline void on_failed_tree(struct record *t, u32 gen, u64 end_ns) {
    t->kind = KIND_FAILURE;
    t->sig = tree_signature(t);
    struct sig_val *v;
    if (AGG_ALL) {   // every tree a record; `sigs` only counts trees the full ring turned away
        if (emit(t, gen, end_ns) == 0)
            return;
        v = sig_entry(t->sig, gen);
        if (!v) {
            health_add(gen, HEALTH_LOST);
            return;
        }
        health_add(gen, HEALTH_DEFERRED);
        __sync_fetch_and_add(&v->repeats, 1);
        return;
    }
    v = sig_entry(t->sig, gen);
    if (!v) {   // table full: no aggregation for this one
        t->sig = 0;
        if (emit(t, gen, end_ns) != 0)
            health_add(gen, HEALTH_LOST);
        return;
    }
    if (v->claims < AGG_EXAMPLES && __sync_fetch_and_add(&v->claims, 1) < AGG_EXAMPLES) {
        if (emit(t, gen, end_ns) == 0)
            return;
        __sync_fetch_and_add(&v->claims, -1);   // not seen: a later occurrence can be the example
        health_add(gen, HEALTH_DEFERRED);
    }
    __sync_fetch_and_add(&v->repeats, 1);
}

// Records the return in the frame; 1 when the tree ended (its root returned), else 0.
static __always_inline int exit_frame(struct record *t, struct settings *s, u32 probe, s64 ret, u32 failed) {
    u32 gen = s->interval;
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
        health_add(gen, HEALTH_ORPHAN);
        return 1;
    }
    u64 end_ns = 0;
    if (t->timed) {
        end_ns = bpf_ktime_get_ns();
        f->latency = end_ns - f->ts;
    }
    f->ret = ret;
    f->failed = failed;
    if (failed)
        t->failed = 1;
    t->open--;
    if (t->open)
        return 0;

    // The top-level call returned: emit on failure, or as a sampled good trace.
    t->interval = gen;
    if (t->failed) {
        on_failed_tree(t, gen, end_ns);
        return 1;
    }
    if (!t->timed || !s->capture_open || s->failures_only || f->latency > s->latency_bound_ns)
        return 1;
    struct probe_conf *conf = probe_conf.lookup(&probe);
    u32 every = conf ? conf->sample_every : 1;
    if (every > 1) {
        u64 *seen = good_seen.lookup(&probe);
        if (!seen)
            return 1;
        u64 n = __sync_fetch_and_add(seen, 1);
        if (n % every)
            return 1;
    }
    t->kind = KIND_GOOD;
    t->sig = 0;
    if (emit(t, gen, end_ns) != 0)
        health_add(gen, HEALTH_LOST);
    return 1;
}

// Counters first: exact whatever happens to the ring buffer below. Invocations of all probes
// share one per-CPU value (a success touches one or two cache lines, not one per probe);
// failures and their errno histogram are per probe.
static __always_inline void count_call(u32 gen, u32 probe, u32 failed, u32 bucket) {
#ifdef PROFILE_NO_COUNT
    return;
#endif
    u32 key = (gen & 1) * MAX_PROBES + probe;
    u32 zero = 0;
    struct calls *n = calls.lookup(&zero);
    if (n && key < 2 * MAX_PROBES)
        n->n[key]++;
    if (!failed)
        return;
    struct counts *c = counts.lookup(&key);
    if (c) {
        c->failures++;
        if (bucket < ERRNO_BUCKETS)
            c->errnos[bucket]++;
    }
}

static __always_inline int on_exit(u32 probe, u32 kind, u64 raw, u64 key) {
#ifdef PROFILE_NO_EXIT
    if (probe < MAX_PROBES)
        return 0;
#endif
    if (!key)
        return 0;
    struct tree *slot = slot_of(key);
    if (!slot)
        return 0;
    s64 ret = 0;
    u32 bucket = 0;
    u32 failed = classify(kind, raw, &ret, &bucket);
    struct settings *s;
    struct tree *t;
    if (slot->owner == key && slot->r.open) {   // inside this thread's tree: its root passed the filter
        u32 zero = 0;
        s = settings.lookup(&zero);
        if (!s)
            return 0;
        count_call(s->interval, probe, failed, bucket);
        if (exit_frame(&slot->r, s, probe, ret, failed))
            release(slot, slot);
        return 0;
    }
    s = root_settings(key);   // a return outside this thread's slot tree: the filter again
    if (!s)
        return 0;
    count_call(s->interval, probe, failed, bucket);
    t = tree_for_exit(slot, key);
    if (!t) {
        health_add(s->interval, HEALTH_ORPHAN);
        return 0;
    }
    if (exit_frame(&t->r, s, probe, ret, failed))
        release(t, slot);
    return 0;
}

#ifndef ATTACH_SYSCALLS
// A thread exits: a slot it holds (a call that never returned: killed inside it) is freed, so a
// later thread with the same tid never continues its tree. (The syscall variant needs none:
// every traced syscall's exit releases the slot, a killed thread's too.)
RAW_TRACEPOINT_PROBE(sched_process_exit) {
#ifdef KEY_REGS
    u32 zero = 0;
    struct settings *s = settings.lookup(&zero);
    if (!s || s->regs_off == 0)
        return 0;
    void *task = bpf_get_current_task_btf();
    // its task_pt_regs: its slot key. The loaded task->stack is a pointer to the verifier
    // (untrusted memory since 6.x); slot_of's hash of it spilled as u32 was refused ("invalid
    // size of register spill") and the hook never attached: a number through the map first.
    u64 key = as_number(*(void **)(task + TASK_STACK_OFF)) + s->regs_off;
#else
    u64 key = bpf_get_current_pid_tgid();
#endif
    struct tree *slot = slot_of(key);
    if (!slot)
        return 0;
    if (slot->owner == key) {
        slot->r.open = 0;
        release(slot, slot);
        return 0;
    }
    struct tree *g = guest_tree(slot);
    if (g) {
        g->r.open = 0;
        release(g, slot);
    }
    return 0;
}
#endif

// Never attached: user space runs it (BPF_PROG_TEST_RUN) to pair bpf_jiffies64 with the
// monotonic clock, which converts untimed records' tick times.
int clock_sync(struct bpf_raw_tracepoint_args *ctx) {
    u32 zero = 0;
    struct clock_pair *c = clock.lookup(&zero);
    if (c) {
        c->ktime = bpf_ktime_get_ns();
        c->jiffies = bpf_jiffies64();
    }
    return 0;
}

#if defined(KEY_REGS) && defined(ATTACH_UPROBE)
// Never one of the probes: the loader attaches it to a uprobe and a uretprobe of a libc function
// in its own process only, calls that function from two threads, and keys slots by the saved
// registers only if every run saw ctx == task_pt_regs(current) (else it recompiles with tid keys).
int regs_check_hit(struct pt_regs *ctx) {
    u32 zero = 0;
    struct regs_check *c = regs_check.lookup(&zero);
    if (!c)
        return 0;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
    u64 regs = as_number((void *)bpf_task_pt_regs(task));
    __sync_fetch_and_add(&c->hits, 1);
    if (thread_key(ctx) != regs)
        __sync_fetch_and_add(&c->mismatches, 1);
    c->regs_off = regs - *(u64 *)((void *)task + TASK_STACK_OFF);
    return 0;
}
#endif

#if defined(ATTACH_UPROBE)
#ifdef PROFILE_CONST_KEY
#define PROBE_KEY(ctx) 0x4000ULL
#else
#define PROBE_KEY(ctx) thread_key(ctx)
#endif
#define P(id, sym, kind)                                                                \
    int entry__##sym(struct pt_regs *ctx) { return on_entry(id, PROBE_KEY(ctx)); }      \
    int return__##sym(struct pt_regs *ctx) {                                            \
        return on_exit(id, kind, PT_REGS_RC(ctx), PROBE_KEY(ctx));                      \
    }
PROBES
#elif defined(ATTACH_FEXIT)
// fentry/fexit: bpf_get_func_ret reads the return value without knowing the argument count.
#define P(id, sym, kind)                                                                \
    KFUNC_PROBE(sym) { return on_entry(id, thread_key(ctx)); }                          \
    KRETFUNC_PROBE(sym) {                                                               \
        u64 ret = 0;                                                                    \
        bpf_get_func_ret(ctx, &ret);                                                    \
        return on_exit(id, kind, ret, thread_key(ctx));                                 \
    }
PROBES
#elif defined(ATTACH_SYSCALLS)
RAW_TRACEPOINT_PROBE(sys_enter) {
    u32 nr = ctx->args[1];
    u32 *probe = syscall_probe.lookup(&nr);
    if (!probe || *probe == 0)
        return 0;
    struct settings *s = traced_settings(bpf_get_current_pid_tgid() >> 32);
    if (!s)
        return 0;
    u64 key = ctx->args[0];   // the thread's user pt_regs
    struct tree *slot = slot_of(key);
    if (!slot)
        return 0;
    struct tree *t = tree_for_entry(slot, key, s->interval);
    if (!t)
        return 0;
    t->r.open = 0;   // syscalls do not nest: an exit we never saw (attach) leaves nothing open
    enter_frame(&t->r, s, *probe - 1);
    return 0;
}

// The open frame of the thread's tree says which traced syscall returns: no read of the
// syscall number from pt_regs; a thread in no traced syscall costs one inlined slot lookup.
RAW_TRACEPOINT_PROBE(sys_exit) {
    u64 key = ctx->args[0];
    struct tree *slot = slot_of(key);
    if (!slot)
        return 0;
    struct tree *t = tree_for_exit(slot, key);
    if (!t)
        return 0;
    u32 zero = 0;
    struct settings *s = settings.lookup(&zero);
    if (!s)
        return 0;
    u32 probe = t->r.frames[0].probe;
    s64 ret = 0;
    u32 bucket = 0;
    u32 failed = classify(RET_LONG, (u64)ctx->args[1], &ret, &bucket);
    count_call(s->interval, probe, failed, bucket);
    exit_frame(&t->r, s, probe, ret, failed);
    release(t, slot);
    return 0;
}
#else
#error "define one of ATTACH_UPROBE, ATTACH_FEXIT, ATTACH_SYSCALLS"
#endif
