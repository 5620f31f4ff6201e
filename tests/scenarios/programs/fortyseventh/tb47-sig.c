/* tb47-sig: the signal and pipe handling of a small job runner, the way a C program does it.
 *
 *   tb47-sig MODE DIR
 *
 * Every mode reads its setting from DIR/MODE.conf (one line), then:
 *
 *   feed     reads its input (stdin, a pipe) under a watchdog: SIGALRM handled without
 *            SA_RESTART, setitimer of the conf's milliseconds; writes what it read to
 *            DIR/feed.out. A read cut by the watchdog fails EINTR (no retry: the job's deadline)
 *   tick     reads its input (stdin) under a progress ticker: SIGALRM every conf milliseconds,
 *            handled without SA_RESTART; a read the tick interrupts (EINTR) is retried; writes
 *            the bytes read and the ticks counted to DIR/tick.out
 *   reap     forks the conf's number of workers (each writes DIR/work-N.out), then waits for
 *            each by pid (waitpid); a launcher that left SIGCHLD ignored makes the kernel reap
 *            them itself, and waitpid fails ECHILD
 *   push     makes stdout (a pipe) non-blocking and writes records of the conf's sizes (KiB,
 *            space-separated) to it, whole (partial writes continued); a record the pipe
 *            cannot take fails EAGAIN (the runner does not poll: its reader is meant to keep up)
 *
 * Exit status: 0 done, 1 a failure (one line on stderr naming the call), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

static void fail(const char *what) {
    fprintf(stderr, "tb47-sig: %s: %s\n", what, strerror(errno));
    exit(1);
}

static char *conf(const char *mode) {
    static char line[4096];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.conf", dir, mode);
    FILE *f = fopen(path, "r");
    if (!f) fail(path);
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    line[strcspn(line, "\n")] = 0;
    return line;
}

static void on_alarm(int sig) { (void)sig; }

static int feed(void) {
    long ms = atol(conf("feed"));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: a blocked read returns EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    char out[4096];
    snprintf(out, sizeof out, "%s/feed.out", dir);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fail(out);
    char buf[8192];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0) fail("read stdin");
        if (n == 0) break;
        if (write(fd, buf, n) != n) fail("write feed.out");
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    close(fd);
    return 0;
}

static volatile sig_atomic_t ticks;

static void on_tick(int sig) {
    (void)sig;
    ticks++;
}

static int tick(void) {
    long ms = atol(conf("tick"));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick; /* no SA_RESTART: a blocked read returns EINTR, and is retried */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{ms / 1000, (ms % 1000) * 1000}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    char buf[8192];
    long total = 0;
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("read stdin");
        if (n == 0) break;
        total += n;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    char out[4096];
    snprintf(out, sizeof out, "%s/tick.out", dir);
    FILE *f = fopen(out, "w");
    if (!f) fail(out);
    fprintf(f, "%ld bytes %d ticks\n", total, (int)ticks);
    if (fclose(f) != 0) fail(out);
    return 0;
}

static int reap(void) {
    int n = atoi(conf("reap"));
    pid_t pids[64];
    if (n < 1 || n > 64) return 2;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) fail("fork");
        if (pid == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/work-%d.out", dir, i);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) _exit(1);
            char line[64];
            int len = snprintf(line, sizeof line, "worker %d pid %d\n", i, (int)getpid());
            if (write(fd, line, len) != len) _exit(1);
            close(fd);
            _exit(0);
        }
        pids[i] = pid;
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int status;
        if (waitpid(pids[i], &status, 0) < 0) fail("waitpid");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    }
    return failed ? 1 : 0;
}

static int push(void) {
    char *sizes = conf("push");
    int fl = fcntl(1, F_GETFL);
    if (fl < 0 || fcntl(1, F_SETFL, fl | O_NONBLOCK) < 0) fail("fcntl stdout");
    static char rec[1 << 20];
    for (char *tok = strtok(sizes, " "); tok; tok = strtok(NULL, " ")) {
        size_t len = (size_t)atol(tok) * 1024;
        if (len > sizeof rec) len = sizeof rec;
        memset(rec, 'r', len);
        if (len) rec[len - 1] = '\n';
        size_t done = 0;
        while (done < len) {
            ssize_t w = write(1, rec + done, len - done);
            if (w < 0) fail("write stdout");
            done += (size_t)w;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tb47-sig feed|tick|reap|push DIR\n");
        return 2;
    }
    dir = argv[2];
    if (!strcmp(argv[1], "feed")) return feed();
    if (!strcmp(argv[1], "tick")) return tick();
    if (!strcmp(argv[1], "reap")) return reap();
    if (!strcmp(argv[1], "push")) return push();
    fprintf(stderr, "tb47-sig: unknown mode %s\n", argv[1]);
    return 2;
}
