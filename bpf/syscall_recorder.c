// syscall_recorder.c: record every syscall of a process tree (tracer record).
//
// Compiled by bcc; tracer/record/recorder.py specialises it with -D defines:
//   RINGBUF_PAGES   ring buffer size in pages (power of two)
//   MAX_PATH        bytes kept per path argument (power of two)
//   MAX_OUTPUT      bytes kept of what a write-like call writes (power of two)
//   FAILURES_ONLY   1: emit only failing calls (plus the few calls user space needs to
//                   keep its fd table and cwd right, flagged SPEC_STATE)
//   MAX_TRACED      capacity of the traced-process map
//   STAGE_FLUSH     bytes of records batched per CPU before they go to the ring buffer
//   NR_EXECVE, NR_EXECVEAT, NR_PRCTL  the running architecture's numbers of those calls
//
// Why these attach points: the kernel here runs with lockdown=confidentiality, which refuses
// kprobes/fentry and bpf_probe_read_kernel. The raw_syscalls:sys_enter tracepoint hands us
// the syscall number and the six argument registers as plain tracepoint fields, and
// sched_process_fork hands us the child pid, so nothing here reads kernel memory; path
// strings and written bytes come from user memory with bpf_probe_read_user* at syscall entry
// (after an execve the old image's memory is gone, so exit would be too late). The exit side
// needs only the return value, which the *raw* sys_exit tracepoint passes in its context
// (args[1]) without the perf-buffer copy a classic tracepoint makes: that is most of the
// exit side's cost gone.
//
// The call in progress lives in task-local storage (one struct event per traced thread,
// freed with the task): no hash computed, no LRU bookkeeping, no per-thread cleanup.
//
// Records are batched per CPU (a BPF program runs on one CPU from start to end, so a per-CPU
// buffer needs no lock) and each batch of ~STAGE_FLUSH bytes goes to the ring buffer as one
// record with BPF_RB_NO_WAKEUP: a ring buffer reservation takes a spinlock with interrupts off,
// which cost more than the rest of the exit side. The consumer (tracer/record/ringbuf.py)
// maps the buffer and reads it in bulk on a timer, so nothing costs a wakeup; at the end it
// reads the part-filled batches from the `stages` map itself, after setting control[0] = 0
// (stopped), which every program checks first.
//
// comm is read when a thread's storage is created and refreshed after execve/execveat/prctl
// (the calls that change it; a write to /proc/PID/comm is not seen until the next of those),
// not at every call: it cost as much as the ring buffer.
//
// Which arguments are paths (or written bytes) is per-architecture knowledge kept in user
// space (tracer/record/syscalls.py) and loaded into the `specs` array, indexed by syscall
// number.

#include <uapi/linux/ptrace.h>

#ifndef RINGBUF_PAGES
#define RINGBUF_PAGES 8192
#endif
#ifndef MAX_PATH
#define MAX_PATH 512
#endif
#ifndef MAX_OUTPUT
#define MAX_OUTPUT 256
#endif
#ifndef FAILURES_ONLY
#define FAILURES_ONLY 0
#endif
#ifndef MAX_TRACED
#define MAX_TRACED 32768
#endif
#ifndef STAGE_FLUSH
#define STAGE_FLUSH 8192         // bytes of records batched per CPU before one ring buffer record
#endif
#ifndef NR_EXECVE
#define NR_EXECVE 59             // x86_64; user space passes the running architecture's
#define NR_EXECVEAT 322
#define NR_PRCTL 157
#endif
#define MAX_SYSCALLS 1024
#define SOCKADDR_MAX 128
#define MAX_IOV 4               // iovecs looked at for writev/sendmsg output
#define OFFSET_MASK (4 * MAX_PATH - 1)   // > 2 * MAX_PATH + MAX_OUTPUT: MAX_OUTPUT <= MAX_PATH
#define DATA_SIZE (4 * MAX_PATH + MAX_OUTPUT)

// specs[nr] bit layout (must match tracer/record/syscalls.py)
#define SPEC_PATH1_MASK 0x7      // argument index + 1 of the first path string, 0 = none
#define SPEC_PATH2_SHIFT 3       // argument index + 1 of the second path string
#define SPEC_SOCKADDR (1 << 6)   // first "path" is a sockaddr; its length is the next argument
#define SPEC_AT_ENTER (1 << 7)   // never returns (exit, exit_group): emit at entry
#define SPEC_STATE (1 << 8)      // user space needs it even on success (fd table, cwd, forks)
#define SPEC_OUT_SHIFT 9         // 2 bits: what argument 1 is for the output bytes
#define OUT_BUF 1                //   a buffer, its length in argument 2 (write, sendto)
#define OUT_IOV 2                //   an iovec array, its count in argument 2 (writev)
#define OUT_MSG 3                //   a struct msghdr (sendmsg)
#define SPEC_FDPAIR (1 << 11)    // writes int[2] of new fds (pipe, pipe2): read it at exit
#define SPEC_FDPAIR_ARG3 (1 << 12) // ... from argument 3 (socketpair) instead of 0

#define F_ACTIVE 1               // event.flags: entry seen, exit pending
#define F_AT_ENTER 2             // event.flags: emitted at entry, ret/latency meaningless
#define F_RETRY 4                // event.flags: a path was unreadable at entry, retry at exit
#define F_OUT_RETRY 8            // event.flags: output bytes unreadable at entry, retry at exit

// One record in the ring buffer: a fixed header then len1 + len2 + len3 bytes of data
// (path 1, path 2 right after it, then the output bytes), so records are only as long as
// their strings. The header layout is mirrored by tracer/record/decode.py:HEADER.
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
    u16 spec;
    u16 len3;         // output bytes (or the 8 bytes of a new fd pair)
    char comm[16];
    // Records use at most 2 * MAX_PATH + MAX_OUTPUT of it; the slack lets copy_out bound its
    // offset with a power-of-two mask, which the verifier follows (compares get lost when
    // clang moves them to a register copy).
    char data[DATA_SIZE];
};
#define HEADER_SIZE (sizeof(struct event) - DATA_SIZE)

struct iov {
    u64 base;
    u64 len;
};

#define HEADER_BYTES 112         // == HEADER_SIZE (a constant here: bcc sizes map values itself)
#define HEADER_WORDS (HEADER_BYTES / 8)
#define CHUNK_WORDS 8            // variable-length data moves in 64-byte chunks
// Word index mask for a record's start in a stage: > STAGE_FLUSH / 8, a power of two, so the
// verifier sees every store bounded (compares get lost when clang moves them around).
#define STAGE_MASK (2 * STAGE_FLUSH / 8 - 1)
#define STAGE_WORDS (STAGE_MASK + 1 + HEADER_WORDS + (2 * MAX_PATH + MAX_OUTPUT) / 8 + CHUNK_WORDS)
struct stage {
    u32 pos;          // bytes used in buf (records back to back, each padded to 8 bytes)
    u32 count;        // records in buf
    u64 buf[STAGE_WORDS];
};

BPF_RINGBUF_OUTPUT(events, RINGBUF_PAGES);
// traced thread groups -> the thread group that forked them
BPF_HASH(traced, u32, u32, MAX_TRACED);
// the call in progress per thread; the value doubles as the record we emit at exit
BPF_TASK_STORAGE(inflight, struct event);
BPF_ARRAY(specs, u32, MAX_SYSCALLS);
BPF_ARRAY(control, u32, 1);           // [0]: 1 while recording, 0 when stopped
BPF_PERCPU_ARRAY(stages, struct stage, 1);
BPF_PERCPU_ARRAY(lost, u64, 1);       // ring buffer full: records dropped

static __always_inline int recording(void)
{
    int zero = 0;
    u32 *on = control.lookup(&zero);  // an array lookup: inlined by the verifier
    return on && *on;
}

// Append the record to this CPU's batch; hand the batch to the ring buffer when it is full.
static __always_inline void emit(struct event *e)
{
    int zero = 0;
    struct stage *st = stages.lookup(&zero);
    if (!st)
        return;
    u32 data = (u32)e->len1 + (u32)e->len2 + (u32)e->len3;
    if (data > 2 * MAX_PATH + MAX_OUTPUT)
        data = 2 * MAX_PATH + MAX_OUTPUT;
    u32 at = (st->pos >> 3) & STAGE_MASK;  // in words; always < STAGE_FLUSH / 8 in fact
    u64 *dst = &st->buf[at];
    const u64 *src = (const u64 *)e;
#pragma unroll
    for (int i = 0; i < HEADER_WORDS; i++)
        dst[i] = src[i];
    dst += HEADER_WORDS;
    src = (const u64 *)e->data;
#pragma unroll
    for (int c = 0; c < (2 * MAX_PATH + MAX_OUTPUT) / 8 / CHUNK_WORDS; c++) {
        if (c * CHUNK_WORDS * 8 >= data)
            break;
#pragma unroll
        for (int i = 0; i < CHUNK_WORDS; i++)
            dst[c * CHUNK_WORDS + i] = src[c * CHUNK_WORDS + i];
    }
    u32 pos = at * 8 + ((HEADER_BYTES + data + 7) & ~7);
    st->count += 1;
    if (pos >= STAGE_FLUSH) {
        if (pos > STAGE_WORDS * 8)
            pos = STAGE_WORDS * 8;
        // (char *)st + 8 is st->buf: bcc's rewriter trips over a map value's member here
        if (events.ringbuf_output((char *)st + 8, pos, BPF_RB_NO_WAKEUP) != 0) {
            u64 *n = lost.lookup(&zero);
            if (n)
                *n += st->count;
        }
        pos = 0;
        st->count = 0;
    }
    st->pos = pos;
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

// Copy up to `room` bytes from user address src to e->data[at]. Returns the bytes copied
// (0 on a fault).
static __always_inline u32 copy_out(struct event *e, u32 at, u64 src, u64 len, u32 room)
{
    if (len > room)
        len = room;
    // clang knows len <= MAX_OUTPUT here and would drop the checks the verifier needs to see
    // on the very registers it uses: make it forget first (libbpf's barrier_var).
    asm volatile("" : "+r"(len));
    asm volatile("" : "+r"(at));
    if (!src || !len || len > MAX_OUTPUT || at > 2 * MAX_PATH + MAX_OUTPUT)
        return 0;
    at &= OFFSET_MASK;  // a no-op on real offsets; bounds it for the verifier
    if (bpf_probe_read_user(&e->data[at], len, (const void *)src) != 0)
        return 0;
    return (u32)len;
}

// The first MAX_OUTPUT bytes a write-like call writes (write/pwrite64/sendto: a buffer;
// writev/pwritev: an iovec array; sendmsg: a msghdr's iovecs), after the paths. Whether the
// call's fd is worth keeping this for (stdout/stderr, a tty, a pipe) is decided in user space
// from the fd table it replays; reading here costs only the write-like calls.
static __always_inline int read_output(struct event *e)
{
    u32 kind = (e->spec >> SPEC_OUT_SHIFT) & 3;
    u32 at = (u32)e->len1 + (u32)e->len2;
    e->len3 = 0;
    if (kind == OUT_BUF) {
        u64 len = e->args[2];
        e->len3 = (u16)copy_out(e, at, e->args[1], len, MAX_OUTPUT);
        return e->len3 || !len;
    }
    u64 iov = e->args[1], cnt = e->args[2];
    if (kind == OUT_MSG) {
        // struct user_msghdr: msg_iov at offset 16, msg_iovlen at 24
        u64 mh[2] = {};
        if (!iov || bpf_probe_read_user(mh, sizeof(mh), (const void *)(iov + 16)) != 0)
            return 0;
        iov = mh[0];
        cnt = mh[1];
    }
    u32 got = 0;
#pragma unroll
    for (int i = 0; i < MAX_IOV; i++) {
        if (i >= cnt || got >= MAX_OUTPUT)
            break;
        struct iov v = {};
        if (bpf_probe_read_user(&v, sizeof(v), (const void *)(iov + i * sizeof(v))) != 0)
            return got > 0;
        got += copy_out(e, at + got, v.base, v.len, MAX_OUTPUT - got);
    }
    e->len3 = (u16)got;
    return 1;
}

TRACEPOINT_PROBE(raw_syscalls, sys_enter)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    u32 *ppid = traced.lookup(&tgid);
    if (!ppid || !recording())
        return 0;

    struct event *e = inflight.task_storage_get(bpf_get_current_task_btf(), 0,
                                                BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!e)
        return 0;
    if (!e->comm[0])  // storage just created (zeroed): this thread's first call
        bpf_get_current_comm(&e->comm, sizeof(e->comm));
    u32 nr = (u32)args->id;
    u32 spec = 0;
    u32 *sp = specs.lookup(&nr);
    if (sp)
        spec = *sp;

    e->ts_ns = bpf_ktime_get_ns();
    e->pid = tgid;
    e->tid = tid;
    e->ppid = *ppid;
    e->nr = (u16)nr;
    e->spec = (u16)spec;
    e->flags = F_ACTIVE;
    e->len1 = 0;
    e->len2 = 0;
    e->len3 = 0;
#pragma unroll
    for (int i = 0; i < 6; i++)
        e->args[i] = args->args[i];
    if (!spec)
        return 0;  // the common case: nothing to read at entry

    if (spec & (SPEC_PATH1_MASK | (SPEC_PATH1_MASK << SPEC_PATH2_SHIFT))) {
        if (!read_paths(e) && !(spec & SPEC_AT_ENTER))
            e->flags |= F_RETRY;
    }
    if ((spec >> SPEC_OUT_SHIFT) & 3) {
        if (!read_output(e))
            e->flags |= F_OUT_RETRY;
    }

    if (spec & SPEC_AT_ENTER) {
        e->flags = F_AT_ENTER;
        e->ret = 0;
        e->latency_ns = 0;
        emit(e);
    }
    return 0;
}

// The raw tracepoint: ctx->args[0] is the pt_regs pointer (unreadable under lockdown, and
// not needed), ctx->args[1] the return value.
RAW_TRACEPOINT_PROBE(sys_exit)
{
    struct event *e = inflight.task_storage_get(bpf_get_current_task_btf(), 0, 0);
    if (!e || !(e->flags & F_ACTIVE) || !recording())
        return 0;
    u16 flags = e->flags;
    e->flags = 0;
    s64 ret = (s64)ctx->args[1];
    u32 spec = e->spec;
    if (e->nr == NR_EXECVE || e->nr == NR_EXECVEAT || e->nr == NR_PRCTL)
        bpf_get_current_comm(&e->comm, sizeof(e->comm));
#if FAILURES_ONLY
    if (!(ret < 0 && ret >= -4095) && !(spec & SPEC_STATE))
        return 0;
#endif
    // The syscall itself has faulted the string's page in by now (unless a successful
    // execve replaced the memory, in which case the read fails again and the path stays
    // empty).
    if (flags & F_RETRY) {
        read_paths(e);
        if ((spec >> SPEC_OUT_SHIFT) & 3)
            read_output(e);
    } else if (flags & F_OUT_RETRY) {
        read_output(e);
    }
    if ((spec & SPEC_FDPAIR) && ret == 0) {
        u64 ptr = (spec & SPEC_FDPAIR_ARG3) ? e->args[3] : e->args[0];
        e->len3 = (u16)copy_out(e, (u32)e->len1 + (u32)e->len2, ptr, 8, 8);
    }
    e->ret = ret;
    e->latency_ns = bpf_ktime_get_ns() - e->ts_ns;
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
    // The leader's exit ends the thread group in all but the rare pthread_exit-from-main
    // case; dropping the entry keeps a recycled pid from being traced later. (The task's
    // inflight storage goes with the task.)
    if (tid == tgid)
        traced.delete(&tgid);
    else
        traced.delete(&tid);
    return 0;
}
