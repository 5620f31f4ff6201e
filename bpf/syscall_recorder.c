// syscall_recorder.c: record every syscall of a process tree (tracer record).
//
// Compiled by bcc; tracer/record/recorder.py specialises it with -D defines:
//   RINGBUF_PAGES   ring buffer size in pages (power of two)
//   MAX_PATH        bytes kept per path argument (power of two)
//   MAX_OUTPUT      bytes kept of what a write-like call writes (power of two)
//   FAILURES_ONLY   1: emit only failing calls (plus the few calls user space needs to
//                   keep its fd table and cwd right, flagged SPEC_STATE)
//   MAX_TRACED      capacity of the traced-process map
//   SLOTS           per-thread slots (power of two)
//   STAGE_FLUSH     bytes of records batched per CPU before they go to the ring buffer
//   NR_EXECVE, NR_EXECVEAT, NR_PRCTL, NR_EXIT, NR_EXIT_GROUP  the running architecture's
//                   numbers of those calls
//   GROUP_DEAD      1: sched_process_exit has the group_dead field
//   TASK_RENAME     1: the kernel has the task:task_rename tracepoint (a thread's own rename
//                   through /proc/self/comm is seen at once; see there)
//   PT_REGS_BTF_ID  the running kernel's BTF type id of struct pt_regs: when set, the argument
//                   registers are read through bpf_rdonly_cast of the tracepoints' regs
//                   pointer (see user_regs_at); KFUNC_PLACEHOLDER is the helper number the
//                   recorder rewrites into that kfunc call before loading
//   ABLATE_NO_*     bench only (bench_record --ablate), the recording is incomplete: what one
//                   piece costs on a real workload. CLOCK: no clock reads (ts_ns, latency 0);
//                   ARGS: no argument registers (and so no paths); PATHS: no path or output
//                   bytes; RINGBUF: batches never reach the ring buffer; ENTER: no sys_enter
//                   program (the recorder attaches sys_exit alone), the number from orig_ax,
//                   ts_ns the exit time, exec paths and exit/exit_group records lost
//
// Attach points: the kernel here runs with lockdown=confidentiality, which refuses kprobes,
// fentry/tp_btf and bpf_probe_read_kernel. Both syscall hooks are *raw* tracepoints: the
// classic raw_syscalls:sys_enter tracepoint copied the number and six arguments into a perf
// buffer record for every call (~55 ns a call here). The raw sys_enter hands us the syscall
// number, the raw sys_exit the return value; the argument registers are read where they are
// used, at exit, through bpf_task_pt_regs (a BTF pointer the verifier lets us load from, no
// kernel-memory helper): on x86_64 a syscall leaves its argument registers alone, so at exit
// they still hold the arguments. Path strings and written bytes are read at exit too, straight
// into the record (the syscall has faulted their pages in by then). Two exceptions, handled at
// entry: execve/execveat (a successful exec replaces the registers and the memory: the
// arguments and the path are kept in `execs`, by thread group, until exit; a thread other than
// the leader that execs comes back with the leader's pid as its tid, and is found through
// `execs`) and exit/exit_group (never return: emitted at entry).
//
// Per traced thread, the call in progress (entry time, number, parent, comm) lives in an array
// slot with an owner check (~7 ns a lookup here; task-local storage cost ~36, a hash ~38). The
// slot is found by the thread's key: the address of its saved user registers, which both raw
// syscall tracepoints hand us as args[0] (unique per live thread: each has its own kernel
// stack, >= 16 KiB apart), so the common case calls no helper at all; pid, tid and comm are
// kept in the slot when the thread takes it (bpf_get_current_pid_tgid was two helper calls a
// syscall, ~25 ns). A thread that execs keeps its stack, so it keeps its slot when it takes
// over the leader's pid (a non-leader's execve); its tid and comm are refreshed at that exit.
// The slot's `gen` is the recording's generation (control[0]; 0 = stopped), so slots of an
// earlier recording and threads still inside a call when recording stops are ignored without
// clearing anything. A thread whose slot another traced thread holds with a call in flight
// (keys equal modulo SLOTS) keeps its call in the `overflow` hash instead. sched_process_exit
// frees a dead thread's slot, so a later thread on the same stack never inherits a call.
//
// Records are built in place in a per-CPU batch (a BPF program runs on one CPU from start to
// end, so a per-CPU buffer needs no lock): header words, then the strings read by
// bpf_probe_read_user* directly at their place, no staging copy. A batch of ~STAGE_FLUSH bytes
// goes to the ring buffer as one record with BPF_RB_NO_WAKEUP: a ring buffer reservation takes
// a spinlock with interrupts off, which cost more than the rest of the exit side. The consumer
// (tracer/record/ringbuf.py) maps the buffer and reads it in bulk on a timer, so nothing costs
// a wakeup; at the end it reads the part-filled batches from the `stages` map itself, after
// setting control[0] = 0 (stopped), which every program checks first.
//
// comm is read when a thread takes its slot and refreshed after execve/execveat/prctl (the
// calls that change it) and when the thread renames itself through /proc/self/comm (the
// task_rename tracepoint, which fires only then), not at every call (~60 ns here). A thread
// another one renames (/proc/PID/task/TID/comm) keeps its old name until its next
// execve/prctl: its slot's key is the address of its own saved registers.
//
// Which arguments are paths (or written bytes) is per-architecture knowledge kept in user
// space (tracer/record/syscalls.py) and loaded into the `specs` array, indexed by syscall
// number.

// Headers: bcc parses them three times per compile (tracepoint pass, rewrite, code
// generation), so only what the program uses. struct pt_regs comes from uapi/linux/ptrace.h;
// struct task_struct is only ever a pointer here (incomplete type). linux/sched.h cost ~1 s of
// CPU per start for the same instructions (tests/test_bpf_compile.py compares them).
#include <uapi/linux/ptrace.h>

// bpf_probe_read_user(_str) under other names: bcc's frontend looks the name up among the
// kernel's symbols at every call so named (to fall back to bpf_probe_read on kernels before
// 5.5, where this program cannot run: it needs the ring buffer, 5.8, and bpf_task_pt_regs,
// 5.15), and bcc 0.26 rebuilds its index of the ~120,000 kallsyms names at each lookup: ~0.1 s
// of CPU a call, 0.7 s a start. The same helpers, declared exactly as bcc declares them.
static typeof(bpf_probe_read_user) probe_read_user = (void *)BPF_FUNC_probe_read_user;
static typeof(bpf_probe_read_user_str) probe_read_user_str = (void *)BPF_FUNC_probe_read_user_str;

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
#ifndef SLOTS
#define SLOTS 32768
#endif
#ifndef STAGE_FLUSH
#define STAGE_FLUSH 8192         // bytes of records batched per CPU before one ring buffer record
#endif
#ifndef NR_EXECVE
#define NR_EXECVE 59             // x86_64; user space passes the running architecture's
#define NR_EXECVEAT 322
#define NR_PRCTL 157
#define NR_EXIT 60
#define NR_EXIT_GROUP 231
#endif
#ifndef GROUP_DEAD
#define GROUP_DEAD 0
#endif
#ifndef TASK_RENAME
#define TASK_RENAME 0
#endif
#ifndef PT_REGS_BTF_ID
#define PT_REGS_BTF_ID 0
#endif
#define MAX_SYSCALLS 1024
#define SOCKADDR_MAX 128
#define MAX_IOV 4               // iovecs looked at for writev/sendmsg output
#define DATA_MAX (2 * MAX_PATH + MAX_OUTPUT)  // string bytes of one record at most

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
#define SPEC_SOCKERR (1 << 13)   // getsockopt: for (SOL_SOCKET, SO_ERROR), read the int value at exit
#ifndef SOL_SOCKET_
#define SOL_SOCKET_ 1            // x86_64 (asm-generic) values; user space mirrors them
#define SO_ERROR_ 4
#endif

#define F_ACTIVE 1               // slot.flags: entry seen, exit pending
#define F_AT_ENTER 2             // record flags: emitted at entry, ret/latency meaningless
#define F_EXEC 4                 // slot.flags: arguments and path kept in `execs` at entry

// A record: a fixed 112-byte header then len1 + len2 + len3 bytes of data (path 1, path 2
// right after it, then the output bytes), padded to 8 bytes. The header layout is mirrored by
// tracer/record/decode.py:HEADER:
//   u64 ts_ns (entry, bpf_ktime_get_ns = CLOCK_MONOTONIC); u64 latency_ns; s64 ret;
//   u64 args[6]; u32 pid (thread group); u32 tid; u32 ppid (thread group that forked this
//   one); u16 nr; u16 flags; u16 len1, len2 (path bytes incl. NUL, or sockaddr bytes; 0 =
//   none); u16 spec; u16 len3 (output bytes, the 8 bytes of a new fd pair, or the 4 bytes of
//   getsockopt(SOL_SOCKET, SO_ERROR)'s value); char comm[16]
#define HEADER_BYTES 112
#define HEADER_WORDS (HEADER_BYTES / 8)
#define W_PIDS 9                 // header word: pid | tid << 32
#define W_PPID 10                // ppid | nr << 32 | flags << 48
#define W_LENS 11                // len1 | len2 << 16 | spec << 32 | len3 << 48
#define W_COMM 12                // comm, two words

struct slot {
    u64 key;          // the thread's saved-registers address (0 = free)
    u32 owner;        // its tid
    u32 gen;          // recording generation it was taken in
    u32 pid;          // its thread group
    u32 ppid;         // the thread group that forked that one (from the traced map)
    u64 ts_ns;        // entry time of the call in progress
    u16 nr;
    u16 flags;
    u32 pad;
    char comm[16];
};

struct exec_args {
    u64 args[6];
    u32 len;          // path bytes incl. NUL, 0 = none
    u32 tid;          // the thread that called it
    char path[MAX_PATH];
};

struct iov {
    u64 base;
    u64 len;
};

#define CHUNK_WORDS 8            // exec paths move into the record in 64-byte chunks
// Word index mask for a record's start in a stage: > STAGE_FLUSH / 8, a power of two, so the
// verifier sees every store bounded (compares get lost when clang moves them around).
#define STAGE_MASK (2 * STAGE_FLUSH / 8 - 1)
// (3 * MAX_PATH: room for the offset masks below, which bound offsets the verifier cannot
// follow through clang's register copies; real records use at most DATA_MAX of it)
#define STAGE_WORDS (STAGE_MASK + 1 + HEADER_WORDS + (3 * MAX_PATH + MAX_OUTPUT) / 8 + CHUNK_WORDS)
struct stage {
    u32 pos;          // bytes used in buf (records back to back, each padded to 8 bytes)
    u32 count;        // records in buf
    u64 buf[STAGE_WORDS];
};

BPF_RINGBUF_OUTPUT(events, RINGBUF_PAGES);
// traced thread groups -> the thread group that forked them (looked up when a thread first
// takes its slot, not per call)
BPF_HASH(traced, u32, u32, MAX_TRACED);
BPF_ARRAY(slots, struct slot, SLOTS);
BPF_HASH(overflow, u64, struct slot, 1024);   // threads whose slot another thread holds, by key
BPF_HASH(execs, u32, struct exec_args, 1024); // execve/execveat in progress, by thread group
BPF_PERCPU_ARRAY(exec_init, struct exec_args, 1);  // zeroed value to create `execs` entries from
BPF_ARRAY(specs, u32, MAX_SYSCALLS);
// [0]: the recording's generation, 0 when stopped; [1]: 1 when `overflow` holds threads;
// [2]: the recorder's pid while it spawns the command (its child is traced from birth), else 0
BPF_ARRAY(control, u32, 3);
BPF_PERCPU_ARRAY(stages, struct stage, 1);
BPF_PERCPU_ARRAY(exit_key, u64, 1);   // current_key's scratch word (see there)
BPF_PERCPU_ARRAY(lost, u64, 1);       // ring buffer full (or no room to keep a call): records dropped

static __always_inline u32 generation(void)
{
    int zero = 0;
    u32 *g = control.lookup(&zero);   // an array lookup: inlined by the verifier
    return g ? *g : 0;
}

static __always_inline void count_lost(u64 n)
{
    int zero = 0;
    u64 *l = lost.lookup(&zero);
    if (l)
        *l += n;
}

// Slot index of a thread key: kernel stacks are THREAD_SIZE (>= 16 KiB) apart.
static __always_inline u32 slot_index(u64 key)
{
    return (u32)(key >> 14) & (SLOTS - 1);
}

static __always_inline u32 overflow_in_use(void)
{
    int one = 1;
    u32 *rare = control.lookup(&one);
    return rare ? *rare : 0;
}

// The slot of a traced thread for the call in progress, or NULL (not traced, or no call).
static __always_inline struct slot *thread_slot(u64 key, u32 gen)
{
    u32 i = slot_index(key);
    struct slot *s = slots.lookup(&i);
    if (s && s->key == key && s->gen == gen)
        return s;
    if (overflow_in_use()) {
        struct slot *o = overflow.lookup(&key);
        if (o && o->gen == gen)
            return o;
    }
    return 0;
}

// At entry: the slot a thread of a traced process keeps its call in, taking it on the thread's
// first call of the recording; NULL when the process is not traced.
static __always_inline struct slot *claim_slot(u64 key, u32 gen)
{
    u32 i = slot_index(key);
    struct slot *s = slots.lookup(&i);
    if (!s)
        return 0;
    if (s->key == key && s->gen == gen)
        return s;  // the common case: no helper call
    if (overflow_in_use()) {
        struct slot *o = overflow.lookup(&key);
        if (o && o->gen == gen)
            return o;
    }
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    u32 *ppid = traced.lookup(&tgid);
    if (!ppid)
        return 0;
    if (s->gen == gen && s->key && (s->flags & F_ACTIVE)) {
        // Another traced thread (same index) has a call in flight here.
        struct slot init = {};
        init.gen = gen;
        overflow.update(&key, &init);
        s = overflow.lookup(&key);
        if (!s) {
            count_lost(1);
            return 0;
        }
        int one = 1;
        u32 *rare = control.lookup(&one);
        if (rare)
            *rare = 1;
    }
    s->key = key;
    s->owner = (u32)id;
    s->gen = gen;
    s->pid = tgid;
    s->ppid = *ppid;
    s->flags = 0;
    bpf_get_current_comm(&s->comm, sizeof(s->comm));
    return s;
}

static __always_inline struct pt_regs *user_regs(void)
{
    return (struct pt_regs *)bpf_task_pt_regs((struct task_struct *)bpf_get_current_task_btf());
}

#if PT_REGS_BTF_ID
// bpf_rdonly_cast(obj, btf_id), a kfunc the verifier replaces by a register move: the regs
// pointer the raw syscall tracepoints hand us (a number to the verifier) becomes a read-only
// struct pt_regs pointer, loads through it are fault-checked. bcc 0.26 cannot emit a kfunc
// call, so this calls helper number KFUNC_PLACEHOLDER, and tracer/record/recorder.py rewrites
// those call instructions into calls of the kfunc before loading. It saves the two helper
// calls of user_regs() (bpf_get_current_task_btf, bpf_task_pt_regs), ~45 ns a syscall here.
static void *(*rdonly_cast)(const void *obj, u32 btf_id) = (void *)KFUNC_PLACEHOLDER;
#endif

// The current thread's key outside the syscall tracepoints (sched_process_exit, task_rename):
// the same address the syscall tracepoints get as args[0], as a number (through a map value:
// the verifier allows no arithmetic on a pointer, even the index's shift). 0: no scratch word.
static __always_inline int current_key(u64 *key)
{
    int zero = 0;
    u64 *scratch = exit_key.lookup(&zero);
    if (!scratch)
        return 0;
    *(volatile u64 *)scratch = (u64)user_regs();
    *key = *(volatile u64 *)scratch;
    return 1;
}

// The registers the thread entered the kernel with; key: the tracepoints' args[0].
static __always_inline struct pt_regs *user_regs_at(u64 key)
{
#if PT_REGS_BTF_ID
    return (struct pt_regs *)rdonly_cast((const void *)key, PT_REGS_BTF_ID);
#else
    return user_regs();
#endif
}

static __always_inline void read_args_from(struct pt_regs *regs, u64 *args)
{
    args[0] = regs->di;
    args[1] = regs->si;
    args[2] = regs->dx;
    args[3] = regs->r10;
    args[4] = regs->r8;
    args[5] = regs->r9;
}


// This CPU's batch and the word index where the next record starts.
static __always_inline struct stage *this_stage(u32 *at)
{
    int zero = 0;
    struct stage *st = stages.lookup(&zero);
    if (st)
        *at = (st->pos >> 3) & STAGE_MASK;  // always < STAGE_FLUSH / 8 in fact
    return st;
}

// The record at word `at` is complete with `data` string bytes: advance, and hand the batch to
// the ring buffer when it is full.
static __always_inline void commit(struct stage *st, u32 at, u32 data)
{
    u32 pos = at * 8 + ((HEADER_BYTES + data + 7) & ~7);
    st->count += 1;
    if (pos >= STAGE_FLUSH) {
        // pos < STAGE_FLUSH + one record < 2 * STAGE_FLUSH: the mask is a no-op that bounds
        // it for the verifier. (char *)st + 8 is st->buf: bcc's rewriter trips over a map
        // value's member here.
        u32 size = pos & (2 * STAGE_FLUSH - 1);
#ifndef ABLATE_NO_RINGBUF
        if (events.ringbuf_output((char *)st + 8, size, BPF_RB_NO_WAKEUP) != 0)
            count_lost(st->count);
#endif
        pos = 0;
        st->count = 0;
    }
    st->pos = pos;
}

static __always_inline void write_header(u64 *h, struct slot *s, u32 tid, u32 nr, u16 flags,
                                         u64 *args)
{
    const u64 *comm = (const u64 *)s->comm;
#pragma unroll
    for (int i = 0; i < 6; i++)
        h[3 + i] = args[i];
    h[W_PIDS] = (u64)s->pid | (u64)tid << 32;
    h[W_PPID] = (u64)s->ppid | (u64)nr << 32 | (u64)flags << 48;
    h[W_COMM] = comm[0];
    h[W_COMM + 1] = comm[1];
}

// A NUL-terminated string from user memory to dst (at most MAX_PATH bytes); its length incl.
// the NUL, 0 when unreadable or no pointer.
static __always_inline u32 read_string(char *dst, u64 src)
{
    if (!src)
        return 0;
    int n = probe_read_user_str(dst, MAX_PATH, (const void *)src);
    return n > 0 ? (u32)n : 0;
}

// A successful exec's file name, from the new image's stack (`regs`: the registers it returns
// to user space with): at sp, argc, argv[argc] and a NULL, envp and a NULL, then the auxiliary
// vector, whose AT_EXECFN names the copy of the path the kernel put on that stack. For a path the
// entry could not read (a literal on a page the old image had not touched: posix_spawn's
// "/bin/cat", an exec from a thread): the old image is gone at exit, the new stack is resident.
// Environments of more than EXEC_ENV_CHUNKS * 8 entries keep the path unread (null).
#define EXEC_ENV_CHUNKS 128
#define EXEC_AUX_CHUNKS 16
#define AT_NULL_ 0
#define AT_EXECFN_ 31
static __always_inline u32 read_exec_filename(char *dst, struct pt_regs *regs)
{
    u64 sp = regs->sp;
    u64 argc = 0;
    if (probe_read_user(&argc, sizeof(argc), (const void *)sp) != 0 || argc > (1 << 24))
        return 0;
    u64 at = sp + 8 * (argc + 2);  // envp[0]
    u64 words[8];
    int found = 0;
    for (int c = 0; c < EXEC_ENV_CHUNKS && !found; c++) {
        if (probe_read_user(words, sizeof(words), (const void *)at) != 0)
            return 0;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            if (!found && !words[i]) {
                found = 1;
                at += 8 * (i + 1);  // the auxiliary vector's first (type, value) pair
            }
        }
        if (!found)
            at += sizeof(words);
    }
    if (!found)
        return 0;
    for (int c = 0; c < EXEC_AUX_CHUNKS; c++) {
        if (probe_read_user(words, sizeof(words), (const void *)at) != 0)
            return 0;
#pragma unroll
        for (int i = 0; i < 8; i += 2) {
            if (words[i] == AT_NULL_)
                return 0;
            if (words[i] == AT_EXECFN_)
                return read_string(dst, words[i + 1]);
        }
        at += sizeof(words);
    }
    return 0;
}

// Copy up to `room` bytes from user address src to data[at]. Returns the bytes copied (0 on a
// fault).
static __always_inline u32 copy_out(char *data, u32 at, u64 src, u64 len, u32 room)
{
    if (len > room)
        len = room;
    // clang knows len <= MAX_OUTPUT here and would drop the checks the verifier needs to see
    // on the very registers it uses: make it forget first (libbpf's barrier_var).
    asm volatile("" : "+r"(len));
    asm volatile("" : "+r"(at));
    if (!src || !len || len > MAX_OUTPUT || at > 2 * MAX_PATH + MAX_OUTPUT)
        return 0;
    at &= (4 * MAX_PATH - 1);  // a no-op on real offsets (MAX_OUTPUT <= MAX_PATH); bounds it
    if (probe_read_user(&data[at], len, (const void *)src) != 0)
        return 0;
    return (u32)len;
}

// The first MAX_OUTPUT bytes a write-like call wrote (write/pwrite64/sendto: a buffer;
// writev/pwritev: an iovec array; sendmsg: a msghdr's iovecs), at data[at]. Whether the
// call's fd is worth keeping this for (stdout/stderr, a tty, a pipe) is decided in user space
// from the fd table it replays; reading here costs only the write-like calls.
static __always_inline u32 read_output(char *data, u32 at, u32 kind, u64 *args)
{
    if (kind == OUT_BUF)
        return copy_out(data, at, args[1], args[2], MAX_OUTPUT);
    u64 iov = args[1], cnt = args[2];
    if (kind == OUT_MSG) {
        // struct user_msghdr: msg_iov at offset 16, msg_iovlen at 24
        u64 mh[2] = {};
        if (!iov || probe_read_user(mh, sizeof(mh), (const void *)(iov + 16)) != 0)
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
        if (probe_read_user(&v, sizeof(v), (const void *)(iov + i * sizeof(v))) != 0)
            break;
        got += copy_out(data, at + got, v.base, v.len, MAX_OUTPUT - got);
    }
    return got;
}

// The raw tracepoints: ctx->args[0] is the pt_regs pointer (not readable as such under
// lockdown: bpf_task_pt_regs gives the same registers as a BTF pointer; here it is the thread's
// key), ctx->args[1] the syscall number at entry, the return value at exit.
// (Plain functions, not RAW_TRACEPOINT_PROBE: bcc would load those at once, before the
// recorder rewrote their kfunc calls; the recorder attaches them to sys_enter and sys_exit.)
int syscall_enter(struct bpf_raw_tracepoint_args *ctx)
{
    u32 gen = generation();
    if (!gen)
        return 0;
    struct slot *s = claim_slot(ctx->args[0], gen);
    if (!s)
        return 0;
    u32 nr = (u32)ctx->args[1];
#ifndef ABLATE_NO_CLOCK
    s->ts_ns = bpf_ktime_get_ns();
#endif
    s->nr = (u16)nr;
    s->flags = F_ACTIVE;
    if (nr == NR_EXECVE || nr == NR_EXECVEAT) {
        // A successful exec replaces the registers and the memory the path is in: keep both.
        u32 tgid = s->pid;
        struct exec_args *x = execs.lookup(&tgid);
        if (!x) {
            int zero = 0;
            struct exec_args *init = exec_init.lookup(&zero);
            if (!init)
                return 0;
            execs.update(&tgid, init);
            x = execs.lookup(&tgid);
            if (!x)
                return 0;
        }
        x->tid = s->owner;
        read_args_from(user_regs_at(ctx->args[0]), x->args);
        x->len = read_string(x->path, nr == NR_EXECVE ? x->args[0] : x->args[1]);
        s->flags = F_ACTIVE | F_EXEC;
    } else if (nr == NR_EXIT || nr == NR_EXIT_GROUP) {
        s->flags = 0;
        u32 at;
        struct stage *st = this_stage(&at);
        if (!st)
            return 0;
        u64 args[6];
        read_args_from(user_regs_at(ctx->args[0]), args);
        u64 *h = &st->buf[at];
        h[0] = s->ts_ns;
        h[1] = 0;
        h[2] = 0;
        write_header(h, s, s->owner, nr, F_AT_ENTER, args);
        u32 *sp = specs.lookup(&nr);
        h[W_LENS] = (u64)(sp ? (u16)*sp : 0) << 32;
        commit(st, at, 0);
    }
    return 0;
}

int syscall_exit(struct bpf_raw_tracepoint_args *ctx)
{
    u32 gen = generation();
    if (!gen)
        return 0;
#ifdef ABLATE_NO_ENTER
    struct slot *s = claim_slot(ctx->args[0], gen);
    if (!s)
        return 0;
    struct pt_regs *regs = user_regs_at(ctx->args[0]);
    s->nr = (u16)regs->orig_ax;
    u16 flags = 0;
#else
    struct slot *s = thread_slot(ctx->args[0], gen);
    if (!s) {
        // A failed call of a thread with no slot yet: a traced thread's first call, refused
        // by seccomp before its entry (a forked rank binding its memory first thing). Only
        // failures pay the traced lookup here; a new thread or child returning 0 from clone
        // stays out.
        s64 r = (s64)ctx->args[1];
        if (!(r < 0 && r >= -4095))
            return 0;
        s = claim_slot(ctx->args[0], gen);
        if (!s)
            return 0;
    }
    u16 flags = s->flags;
    if (!(flags & F_ACTIVE)) {
        // An exit with no entry: a call seccomp refused (SECCOMP_RET_ERRNO and RET_TRAP skip
        // the call, and the sys_enter tracepoint with it, but not sys_exit: Docker's profile
        // refusing set_mempolicy or mbind with EPERM). Its number is orig_ax; its time the
        // exit (latency 0).
        struct pt_regs *regs = user_regs_at(ctx->args[0]);
        s->nr = (u16)regs->orig_ax;
#ifndef ABLATE_NO_CLOCK
        s->ts_ns = bpf_ktime_get_ns();
#endif
    }
#endif
    s->flags = 0;
    s64 ret = (s64)ctx->args[1];
    u32 nr = s->nr;
    u32 tid = s->owner, tgid = s->pid;
    if (nr == NR_EXECVE || nr == NR_EXECVEAT || nr == NR_PRCTL) {
        bpf_get_current_comm(&s->comm, sizeof(s->comm));
        // a thread other than the leader that exec'd comes back with the leader's pid as tid
        s->owner = (u32)bpf_get_current_pid_tgid();
    }
    u32 idx = nr;
    u32 *sp = specs.lookup(&idx);
    u32 spec = sp ? *sp : 0;
    struct exec_args *x = 0;
    if (flags & F_EXEC) {
        x = execs.lookup(&tgid);
        if (!x)
            return 0;
    }
#if FAILURES_ONLY
    // (getsockopt is kept too: a socket error comes back in SO_ERROR's value with ret 0; user
    // space keeps the calls whose value is an error)
    if (!(ret < 0 && ret >= -4095) && !(spec & (SPEC_STATE | SPEC_SOCKERR))) {
        if (x)
            execs.delete(&tgid);
        return 0;
    }
#endif
#ifndef ABLATE_NO_CLOCK
    u64 now = bpf_ktime_get_ns();
#else
    u64 now = 0;
#endif
#ifdef ABLATE_NO_ENTER
    s->ts_ns = now;
#endif
    u32 at;
    struct stage *st = this_stage(&at);
    if (!st)
        return 0;
    u64 *h = &st->buf[at];
    char *data = (char *)&h[HEADER_WORDS];
    u64 args[6];
    u32 len1 = 0, len2 = 0, len3 = 0;
    if (x) {
#pragma unroll
        for (int i = 0; i < 6; i++)
            args[i] = x->args[i];
        len1 = x->len;
        if (len1 > MAX_PATH)
            len1 = MAX_PATH;
        const u64 *src = (const u64 *)x->path;
        u64 *dst = (u64 *)data;
#pragma unroll
        for (int c = 0; c < MAX_PATH / 8 / CHUNK_WORDS; c++) {
            if (c * CHUNK_WORDS * 8 >= len1)
                break;
#pragma unroll
            for (int i = 0; i < CHUNK_WORDS; i++)
                dst[c * CHUNK_WORDS + i] = src[c * CHUNK_WORDS + i];
        }
        tid = x->tid;
        execs.delete(&tgid);
        // A failed exec whose path was unreadable at entry (a literal on a page the process had
        // not touched yet: probe_read_user cannot fault it in) is read again now: the kernel
        // read it meanwhile, and a failed exec keeps the memory it is in.
        if (len1 == 0 && ret < 0)
            len1 = read_string(data, nr == NR_EXECVE ? args[0] : args[1]);
        // (execve only: execveat's AT_EXECFN is "/dev/fd/N/..." for a path relative to a dirfd)
        else if (len1 == 0 && ret == 0 && nr == NR_EXECVE)
            len1 = read_exec_filename(data, user_regs_at(ctx->args[0]));
    } else {
#if defined(ABLATE_NO_ENTER)
        read_args_from(regs, args);
#elif !defined(ABLATE_NO_ARGS)
        read_args_from(user_regs_at(ctx->args[0]), args);
#else
        for (int i = 0; i < 6; i++) args[i] = 0;
#endif
#ifdef ABLATE_NO_PATHS
        spec = spec & ~(SPEC_PATH1_MASK | (SPEC_PATH1_MASK << SPEC_PATH2_SHIFT) | (3 << SPEC_OUT_SHIFT) | SPEC_FDPAIR | SPEC_SOCKERR);
#endif
        u32 a1 = spec & SPEC_PATH1_MASK;
        if (a1 >= 1 && a1 <= 6) {
            u64 ptr = args[(a1 - 1) & 7];
            if (spec & SPEC_SOCKADDR) {
                u64 len = a1 < 6 ? args[a1 & 7] : 0;
                if (len > SOCKADDR_MAX)
                    len = SOCKADDR_MAX;
                if (ptr && len > 0 &&
                    probe_read_user(data, len & (SOCKADDR_MAX * 2 - 1), (const void *)ptr) == 0)
                    len1 = (u32)len;
            } else {
                len1 = read_string(data, ptr);
            }
        }
        u32 a2 = (spec >> SPEC_PATH2_SHIFT) & SPEC_PATH1_MASK;
        if (a2 >= 1 && a2 <= 6) {
            u32 off = len1;
            asm volatile("" : "+r"(off));
            off &= (MAX_PATH - 1) | MAX_PATH;  // <= 2 * MAX_PATH - 1; real offsets <= MAX_PATH
            len2 = read_string(&data[off], args[(a2 - 1) & 7]);
        }
        u32 out = (spec >> SPEC_OUT_SHIFT) & 3;
        if (out)
            len3 = read_output(data, len1 + len2, out, args);
        // One test of spec for both (no added work on other calls' path): a new fd pair, or
        // the error a non-blocking connect ended with, which getsockopt(fd, SOL_SOCKET,
        // SO_ERROR, &err, &len) returns in err with ret 0 (curl, ssh, python's
        // create_connection with a timeout, libpq: strace's `[ECONNREFUSED]`).
        if ((spec & (SPEC_FDPAIR | SPEC_SOCKERR)) && ret == 0) {
            if (!(spec & SPEC_SOCKERR)) {
                u64 ptr = (spec & SPEC_FDPAIR_ARG3) ? args[3] : args[0];
                len3 = copy_out(data, len1 + len2, ptr, 8, 8);
            } else if ((u32)args[1] == SOL_SOCKET_ && (u32)args[2] == SO_ERROR_) {
                len3 = copy_out(data, len1 + len2, args[3], 4, 4);
            }
        }
    }
    h[0] = s->ts_ns;
    h[1] = now - s->ts_ns;
    h[2] = (u64)ret;
    write_header(h, s, tid, nr, 0, args);
    h[W_LENS] = (u64)len1 | (u64)len2 << 16 | (u64)(u16)spec << 32 | (u64)len3 << 48;
    u32 total = len1 + len2 + len3;
    asm volatile("" : "+r"(total));
    if (total > DATA_MAX)
        total = DATA_MAX;
    commit(st, at, total);
    return 0;
}

// A traced thread group (or the recorder spawning the command) forked: trace the child too.
// The tracepoint fires in the parent before the child can run, so the child's first syscall
// is already covered. For a new thread child_pid is a tid, which is harmless in this map
// (lookups are by tgid).
TRACEPOINT_PROBE(sched, sched_process_fork)
{
    u32 parent = bpf_get_current_pid_tgid() >> 32;
    if (!traced.lookup(&parent)) {
        int two = 2;
        u32 *spawner = control.lookup(&two);
        if (!spawner || *spawner != parent)
            return 0;
    }
    u32 child = args->child_pid;
    if (child != parent)
        traced.update(&child, &parent);
    return 0;
}

TRACEPOINT_PROBE(sched, sched_process_exit)
{
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    u64 key;
    if (!current_key(&key))
        return 0;
    u32 i = slot_index(key);
    struct slot *s = slots.lookup(&i);
    if (s && s->key == key)
        s->key = 0;
    if (overflow_in_use())
        overflow.delete(&key);
    // Dropping the group's entry when the group ends keeps a recycled pid from being traced
    // later. Where the tracepoint says whether the group is dead (GROUP_DEAD, kernels from
    // 6.16), a leader that dies first (killed by another thread's execve, which then takes
    // its pid; pthread_exit from main) leaves it in place; elsewhere the leader's exit stands
    // for the group's.
#if GROUP_DEAD
    if (args->group_dead)
        traced.delete(&tgid);
#else
    if (tid == tgid)
        traced.delete(&tgid);
#endif
    if (tid != tgid)
        traced.delete(&tid);
    return 0;
}

#if TASK_RENAME
// A thread renamed itself during a call (a write to /proc/self/comm; prctl(PR_SET_NAME) is also
// refreshed at its exit): the call's row and the thread's later rows carry the new name. Fires
// at renames only, so the syscall paths pay nothing for it.
TRACEPOINT_PROBE(task, task_rename)
{
    u32 gen = generation();
    if (!gen)
        return 0;
    if (args->pid != (u32)bpf_get_current_pid_tgid())
        return 0;  // renamed by another thread: its key is not ours to compute (see the top)
    u64 key;
    if (!current_key(&key))
        return 0;
    struct slot *s = thread_slot(key, gen);
    if (s)
        __builtin_memcpy(s->comm, args->newcomm, sizeof(s->comm));
    return 0;
}
#endif
