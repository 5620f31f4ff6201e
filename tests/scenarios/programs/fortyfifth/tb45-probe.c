/* tb45-probe: the tuning and introspection side of a GPU job runtime, its profiler and its
 * health agent, the way a C runtime does it.
 *
 *   tb45-probe MODE DIR
 *
 * Every mode first walks the job's inputs DIR/shards/shard-*.bin (reading each: the run's own
 * work, of random sizes), reads its setting from DIR/MODE.conf (one line), then makes its calls:
 *
 *   perf       perf_event_open(task-clock) on itself, exclude_kernel from the conf (1 or 0)
 *   heartbeat  forks a worker that drops to the conf's uid (dumpable), drops itself to nobody
 *              and samples the worker's heartbeat with process_vm_readv
 *   stack      the same worker, sampled by PTRACE_ATTACH / PEEKDATA / DETACH
 *   uring      io_uring_setup with the conf's queue depth, its rings mapped
 *   stage      a 4 MiB staging buffer in the conf's directory: open, ftruncate, mmap MAP_SHARED
 *   numa       set_mempolicy(MPOL_BIND) to the conf's node, then a buffer touched
 *   affinity   one pthread per conf CPU, each pinning itself (sched_setaffinity) to its CPU
 *   pin        mlock of a buffer of the conf's MiB
 *   health     /proc/PID/stat and /proc/PID/status of every pid in the conf
 *   devsize    BLKGETSIZE64 of the conf's scratch device node
 *   work       the walk alone
 *
 * Exit status: 0 done, 1 a failure (one line on stderr naming the call), 2 usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static char conf[512];

static void die(const char *what, const char *name) {
    fprintf(stderr, "tb45-probe: %s %s: %s\n", what, name ? name : "", strerror(errno));
    exit(1);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static unsigned long walk(void) {
    char path[4096], *names[256];
    int n = 0;
    snprintf(path, sizeof path, "%s/shards", dir);
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (strncmp(e->d_name, "shard-", 6) == 0) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    unsigned long sum = 0;
    static unsigned char buf[65536];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/shards/%s", dir, names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open", path);
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0)
            for (ssize_t j = 0; j < r; j++) sum += buf[j];
        close(fd);
        free(names[i]);
    }
    return sum;
}

static void read_conf(const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.conf", dir, mode);
    FILE *f = fopen(path, "re");
    if (!f) die("open", path);
    if (!fgets(conf, sizeof conf, f)) conf[0] = 0;
    fclose(f);
    conf[strcspn(conf, "\n")] = 0;
}

static void drop_to(uid_t uid) {
    if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
        die("setresuid", "");
}

static long mode_perf(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.exclude_kernel = atoi(conf) != 0;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) die("perf_event_open", "task-clock");
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    walk();
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t ns = 0;
    if (read(fd, &ns, sizeof ns) != sizeof ns) die("read", "perf counter");
    printf("task-clock %llu ns\n", (unsigned long long)ns);
    return 0;
}

static volatile uint64_t heartbeat[8];

/* a worker as uid `uid`, bumping its heartbeat until its pipe closes */
static pid_t worker(uid_t uid, int *keep) {
    int ready[2], hold[2];
    if (pipe2(ready, O_CLOEXEC) || pipe2(hold, O_CLOEXEC)) die("pipe2", "");
    pid_t pid = fork();
    if (pid < 0) die("fork", "");
    if (pid == 0) {
        close(ready[0]);
        close(hold[1]);
        drop_to(uid);
        prctl(PR_SET_DUMPABLE, 1);  /* the runtime's workers stay inspectable by their own user */
        fcntl(hold[0], F_SETFL, O_NONBLOCK);
        char c = 1;
        if (write(ready[1], &c, 1) != 1) _exit(1);
        close(ready[1]);
        for (;;) {
            heartbeat[0]++;
            heartbeat[1] = (uint64_t)getpid();
            if (read(hold[0], &c, 1) == 0) _exit(0);
            usleep(1000);
        }
    }
    close(ready[1]);
    close(hold[0]);
    char c;
    if (read(ready[0], &c, 1) != 1) die("read", "worker ready");
    close(ready[0]);
    *keep = hold[1];
    return pid;
}

static long mode_heartbeat(void) {
    int keep;
    pid_t pid = worker((uid_t)atoi(conf), &keep);
    drop_to(65534);
    uint64_t seen[8];
    for (int i = 0; i < 4; i++) {
        struct iovec local = {seen, sizeof seen}, remote = {(void *)heartbeat, sizeof seen};
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0) die("process_vm_readv", "heartbeat");
        walk();
    }
    printf("worker %d heartbeat %llu\n", (int)pid, (unsigned long long)seen[0]);
    close(keep);
    waitpid(pid, NULL, 0);
    return 0;
}

static long mode_stack(void) {
    int keep;
    pid_t pid = worker((uid_t)atoi(conf), &keep);
    drop_to(65534);
    walk();
    if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) != 0) die("ptrace attach", "worker");
    int st;
    waitpid(pid, &st, 0);
    errno = 0;
    long word = ptrace(PTRACE_PEEKDATA, pid, (void *)heartbeat, NULL);
    if (errno) die("ptrace peekdata", "worker");
    ptrace(PTRACE_DETACH, pid, NULL, NULL);
    printf("worker %d heartbeat %ld\n", (int)pid, word);
    close(keep);
    waitpid(pid, NULL, 0);
    return 0;
}

static long mode_uring(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    unsigned entries = (unsigned)strtoul(conf, NULL, 10);
    walk();
    int fd = (int)syscall(SYS_io_uring_setup, entries, &p);
    if (fd < 0) die("io_uring_setup", conf);
    size_t sq = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    void *s = mmap(NULL, sq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    void *c = mmap(NULL, cq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
    if (s == MAP_FAILED || c == MAP_FAILED) die("mmap", "io_uring rings");
    printf("ring of %u/%u\n", p.sq_entries, p.cq_entries);
    close(fd);
    return 0;
}

static long mode_stage(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/stage-%d-%lx.buf", conf, (int)getpid(), (unsigned long)random());
    walk();
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) die("open", path);
    size_t len = 4u << 20;
    if (ftruncate(fd, (off_t)len) != 0) die("ftruncate", path);
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die("mmap", path);
    for (size_t i = 0; i < len; i += 4096) p[i] = (unsigned char)i;
    munmap(p, len);
    close(fd);
    unlink(path);
    return 0;
}

static long mode_numa(void) {
    unsigned long mask = 1ul << atoi(conf);
    walk();
    if (syscall(SYS_set_mempolicy, 2 /* MPOL_BIND */, &mask, 64ul) != 0) die("set_mempolicy", conf);
    size_t len = 8u << 20;
    unsigned char *p = malloc(len);
    if (!p) die("malloc", "");
    memset(p, 1, len);
    free(p);
    return 0;
}

static int cpus[64], ncpus;

static void *pin_thread(void *arg) {
    long i = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[i], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity", "");
    walk();
    return NULL;
}

static long mode_affinity(void) {
    for (char *t = strtok(conf, " ,"); t && ncpus < 64; t = strtok(NULL, " ,")) cpus[ncpus++] = atoi(t);
    pthread_t th[64];
    for (long i = 0; i < ncpus; i++)
        if (pthread_create(&th[i], NULL, pin_thread, (void *)i) != 0) die("pthread_create", "");
    for (int i = 0; i < ncpus; i++) pthread_join(th[i], NULL);
    return 0;
}

static long mode_pin(void) {
    size_t len = (size_t)atoi(conf) << 20;
    walk();
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap", "");
    if (mlock(p, len) != 0) die("mlock", conf);
    memset(p, 7, len);
    munlock(p, len);
    munmap(p, len);
    return 0;
}

static long mode_health(void) {
    walk();
    char path[64], buf[4096];
    for (char *t = strtok(conf, " ,"); t; t = strtok(NULL, " ,")) {
        const char *files[] = {"stat", "status"};
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "/proc/%s/%s", t, files[k]);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) die("open", path);
            if (read(fd, buf, sizeof buf) < 0) die("read", path);
            close(fd);
        }
    }
    return 0;
}

static long mode_devsize(void) {
    walk();
    int fd = open(conf, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open", conf);
    uint64_t size = 0;
    if (ioctl(fd, BLKGETSIZE64, &size) != 0) die("ioctl BLKGETSIZE64", conf);
    printf("%s: %llu bytes\n", conf, (unsigned long long)size);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tb45-probe MODE DIR\n"); return 2; }
    const char *mode = argv[1];
    dir = argv[2];
    srandom((unsigned)getpid() ^ (unsigned)time(NULL));
    if (strcmp(mode, "work") == 0) { printf("%lu\n", walk()); return 0; }
    read_conf(mode);
    if (strcmp(mode, "perf") == 0) return (int)mode_perf();
    if (strcmp(mode, "heartbeat") == 0) return (int)mode_heartbeat();
    if (strcmp(mode, "stack") == 0) return (int)mode_stack();
    if (strcmp(mode, "uring") == 0) return (int)mode_uring();
    if (strcmp(mode, "stage") == 0) return (int)mode_stage();
    if (strcmp(mode, "numa") == 0) return (int)mode_numa();
    if (strcmp(mode, "affinity") == 0) return (int)mode_affinity();
    if (strcmp(mode, "pin") == 0) return (int)mode_pin();
    if (strcmp(mode, "health") == 0) return (int)mode_health();
    if (strcmp(mode, "devsize") == 0) return (int)mode_devsize();
    fprintf(stderr, "tb45-probe: unknown mode %s\n", mode);
    return 2;
}
