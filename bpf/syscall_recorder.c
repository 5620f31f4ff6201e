// syscall_recorder.c: record every syscall of a process tree (tracer record).
//
// Compiled by bcc; tracer/record/recorder.py specialises it with -D defines:
//   RINGBUF_PAGES   ring buffer size in pages (power of two)
//   MAX_PATH        bytes kept per path argument (power of two)
//   FAILURES_ONLY   1: emit only failing calls (plus the few calls user space needs to
//                   keep its fd table and cwd right, flagged SPEC_STATE)
//   WAKEUP_EVERY    wake the consumer every N records per CPU (it also polls on a timer)
//   MAX_TRACED      capacity of the traced-process map
//
// Why these attach points: the kernel here runs with lockdown=confidentiality, which refuses
// kprobes/fentry and bpf_probe_read_kernel. The raw_syscalls tracepoints hand us the syscall
// number and the six argument registers as plain tracepoint fields, and sched_process_fork
// hands us the child pid, so nothing here reads kernel memory; path strings come from user
// memory with bpf_probe_read_user_str at syscall entry (after an execve the old image's
// memory is gone, so exit would be too late).
//
// Which arguments are paths is per-architecture knowledge kept in user space
// (tracer/record/syscalls.py) and loaded into the `specs` array, indexed by syscall number.

#include <uapi/linux/ptrace.h>

#ifndef RINGBUF_PAGES
#define RINGBUF_PAGES 8192
#endif
#ifndef MAX_PATH
#define MAX_PATH 512
#endif
#ifndef FAILURES_ONLY
#define FAILURES_ONLY 0
#endif
#ifndef WAKEUP_EVERY
#define WAKEUP_EVERY 64
#endif
#ifndef MAX_TRACED
#define MAX_TRACED 32768
#endif
#define MAX_SYSCALLS 1024
#define SOCKADDR_MAX 128

// specs[nr] bit layout (must match tracer/record/syscalls.py)
#define SPEC_PATH1_MASK 0x7      // argument index + 1 of the first path string, 0 = none
#define SPEC_PATH2_SHIFT 3       // argument index + 1 of the second path string
#define SPEC_SOCKADDR (1 << 6)   // first "path" is a sockaddr; its length is the next argument
#define SPEC_AT_ENTER (1 << 7)   // never returns (exit, exit_group): emit at entry
#define SPEC_STATE (1 << 8)      // user space needs it even on success (fd table, cwd, forks)

#define F_ACTIVE 1               // event.flags: entry seen, exit pending
#define F_AT_ENTER 2             // event.flags: emitted at entry, ret/latency meaningless
#define F_RETRY 4                // event.flags: a path was unreadable at entry, retry at exit

// One record in the ring buffer: a fixed header then len1 + len2 bytes of path data
// (path 2 starts right after path 1, so records are only as long as their strings).
struct event {
    u64 ts_ns;        // entry, bpf_ktime_get_ns (CLOCK_MONOTONIC)
    u64 latency_ns;
    s64 ret;
    u64 args[6];
    u32 pid;          // thread group id
    u32 tid;
    u32 ppid;         // thread group that forked this one (from the traced map)
    u16 nr;
    u16 flags;
    u16 len1;         // bytes of path 1 incl. NUL (or sockaddr bytes), 0 = none
    u16 len2;
    u32 spec;
    char comm[16];
    char data[2 * MAX_PATH];
};
#define HEADER_SIZE (sizeof(struct event) - 2 * MAX_PATH)

BPF_RINGBUF_OUTPUT(events, RINGBUF_PAGES);
// traced thread groups -> the thread group that forked them
BPF_HASH(traced, u32, u32, MAX_TRACED);
// the call in progress per thread; the value doubles as the record we emit at exit
BPF_TABLE("lru_hash", u32, struct event, inflight, MAX_TRACED);
BPF_ARRAY(specs, u32, MAX_SYSCALLS);
BPF_PERCPU_ARRAY(zero_event, struct event, 1);
BPF_PERCPU_ARRAY(lost, u64, 1);       // ring buffer full: records dropped
BPF_PERCPU_ARRAY(wakeups, u64, 1);

static __always_inline void emit(struct event *e)
{
    u32 size = HEADER_SIZE + (u32)e->len1 + (u32)e->len2;
    if (size > sizeof(struct event))
        size = sizeof(struct event);
    u64 flags = BPF_RB_NO_WAKEUP;
    int zero = 0;
    u64 *count = wakeups.lookup(&zero);
    if (count) {
        *count += 1;
        if (*count % WAKEUP_EVERY == 0)
            flags = BPF_RB_FORCE_WAKEUP;
    }
    if (events.ringbuf_output(e, size, flags) != 0) {
        u64 *n = lost.lookup(&zero);
        if (n)
            *n += 1;
    }
}

static __always_inline u32 read_string(char *dst, u64 src)
{
    if (!src)
        return 0;
    int n = bpf_probe_read_user_str(dst, MAX_PATH, (const void *)src);
    return n > 0 ? (u32)n : 0;
}

// Read the call's path strings (or sockaddr) into e->data. Returns 0 when a string argument
// could not be read: bpf_probe_read_user cannot fault pages in, and a string in a page the
// program has not touched yet (say, in a freshly exec'd binary's rodata) reads as -EFAULT.
static __always_inline int read_paths(struct event *e)
{
    u32 spec = e->spec;
    int ok = 1;
    e->len1 = 0;
    e->len2 = 0;
    u32 a1 = spec & SPEC_PATH1_MASK;
    if (a1 >= 1 && a1 <= 6) {
        u64 ptr = e->args[(a1 - 1) & 7];
        if (spec & SPEC_SOCKADDR) {
            u64 len = a1 < 6 ? e->args[a1 & 7] : 0;
            if (len > SOCKADDR_MAX)
                len = SOCKADDR_MAX;
            if (ptr && len > 0) {
                if (bpf_probe_read_user(e->data, len & (SOCKADDR_MAX * 2 - 1), (const void *)ptr) == 0)
                    e->len1 = (u16)len;
                else
                    ok = 0;
            }
        } else {
            e->len1 = (u16)read_string(e->data, ptr);
            if (ptr && !e->len1)
                ok = 0;
        }
    }
    u32 a2 = (spec >> SPEC_PATH2_SHIFT) & SPEC_PATH1_MASK;
    if (a2 >= 1 && a2 <= 6) {
        u32 off = e->len1;
        if (off > MAX_PATH)
            off = MAX_PATH;
        u64 ptr2 = e->args[(a2 - 1) & 7];
        e->len2 = (u16)read_string(&e->data[off], ptr2);
        if (ptr2 && !e->len2)
            ok = 0;
    }
    return ok;
}

TRACEPOINT_PROBE(raw_syscalls, sys_enter)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    u32 *ppid = traced.lookup(&tgid);
    if (!ppid)
        return 0;

    struct event *e = inflight.lookup(&tid);
    if (!e) {
        int zero = 0;
        struct event *blank = zero_event.lookup(&zero);
        if (!blank)
            return 0;
        inflight.update(&tid, blank);
        e = inflight.lookup(&tid);
        if (!e)
            return 0;
    }
    u32 nr = (u32)args->id;
    u32 spec = 0;
    u32 *sp = specs.lookup(&nr);
    if (sp)
        spec = *sp;

    e->ts_ns = bpf_ktime_get_ns();
    e->latency_ns = 0;
    e->ret = 0;
    e->pid = tgid;
    e->tid = tid;
    e->ppid = *ppid;
    e->nr = (u16)nr;
    e->spec = spec;
    e->flags = F_ACTIVE;
#pragma unroll
    for (int i = 0; i < 6; i++)
        e->args[i] = args->args[i];

    if (!read_paths(e) && !(spec & SPEC_AT_ENTER))
        e->flags |= F_RETRY;

    if (spec & SPEC_AT_ENTER) {
        e->flags = F_AT_ENTER;
        bpf_get_current_comm(&e->comm, sizeof(e->comm));
        emit(e);
    }
    return 0;
}

TRACEPOINT_PROBE(raw_syscalls, sys_exit)
{
    u32 tid = (u32)bpf_get_current_pid_tgid();
    struct event *e = inflight.lookup(&tid);
    if (!e || !(e->flags & F_ACTIVE))
        return 0;
    u16 retry = e->flags & F_RETRY;
    e->flags = 0;
    s64 ret = args->ret;
#if FAILURES_ONLY
    if (!(ret < 0 && ret >= -4095) && !(e->spec & SPEC_STATE))
        return 0;
#endif
    // The syscall itself has faulted the string's page in by now (unless a successful
    // execve replaced the memory, in which case the read fails again and the path stays
    // empty).
    if (retry)
        read_paths(e);
    e->ret = ret;
    e->latency_ns = bpf_ktime_get_ns() - e->ts_ns;
    bpf_get_current_comm(&e->comm, sizeof(e->comm));
    emit(e);
    return 0;
}

// A traced thread group forked: trace the child too. The tracepoint fires in the parent
// before the child can run, so the child's first syscall is already covered. For a new
// thread child_pid is a tid, which is harmless in this map (lookups are by tgid).
TRACEPOINT_PROBE(sched, sched_process_fork)
{
    u32 parent = bpf_get_current_pid_tgid() >> 32;
    if (!traced.lookup(&parent))
        return 0;
    u32 child = args->child_pid;
    if (child != parent)
        traced.update(&child, &parent);
    return 0;
}

TRACEPOINT_PROBE(sched, sched_process_exit)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    inflight.delete(&tid);
    // The leader's exit ends the thread group in all but the rare pthread_exit-from-main
    // case; dropping the entry keeps a recycled pid from being traced later.
    if (tid == tgid)
        traced.delete(&tgid);
    else
        traced.delete(&tid);
    return 0;
}
