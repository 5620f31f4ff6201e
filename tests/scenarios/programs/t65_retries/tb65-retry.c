/* tb65-retry: the set's own retrying client (tests/scenarios/real_sixtyfifth.py). Each mode
 * tries one operation up to TRIES times with a doubling backoff (20, 40, 80 ms ...), as a job's
 * start-up does with a resource another process may still hold, and gives up with exit 75
 * (EX_TEMPFAIL) when every try failed:
 *   lock FILE   -- fcntl(F_SETLK, F_WRLCK) of FILE (EAGAIN while another process holds it),
 *                  then writes its pid into it;
 *   fifo FIFO   -- open(FIFO, O_WRONLY|O_NONBLOCK) (ENXIO while no reader has it open), then
 *                  writes a record into it;
 *   wait FIFO   -- open(FIFO, O_RDONLY|O_NONBLOCK), then a read with a 50 ms alarm (no
 *                  SA_RESTART: an interrupted read is EINTR) until a record arrives. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TRIES 4

static void backoff(int attempt)
{
    struct timespec ts = {0, 20000000L << attempt};
    nanosleep(&ts, NULL);
}

static void on_alarm(int sig) { (void)sig; }

static int do_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) { perror(path); return 1; }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    for (int i = 0; i < TRIES; i++) {
        if (fcntl(fd, F_SETLK, &fl) == 0) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
            if (ftruncate(fd, 0) || write(fd, buf, n) != n) { perror("write"); return 1; }
            close(fd);
            return 0;
        }
        if (errno != EAGAIN && errno != EACCES) { perror("fcntl"); return 1; }
        fprintf(stderr, "tb65-retry: %s is locked (try %d of %d)\n", path, i + 1, TRIES);
        if (i + 1 < TRIES) backoff(i);
    }
    fprintf(stderr, "tb65-retry: giving up on %s\n", path);
    return 75;
}

static int do_fifo(const char *path)
{
    for (int i = 0; i < TRIES; i++) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            static const char rec[] = "job=t65 state=ready\n";
            if (write(fd, rec, sizeof rec - 1) != (ssize_t)(sizeof rec - 1)) { perror("write"); return 1; }
            close(fd);
            return 0;
        }
        if (errno != ENXIO) { perror(path); return 1; }
        fprintf(stderr, "tb65-retry: no reader on %s (try %d of %d)\n", path, i + 1, TRIES);
        if (i + 1 < TRIES) backoff(i);
    }
    fprintf(stderr, "tb65-retry: giving up on %s\n", path);
    return 75;
}

static int do_wait(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC); /* RDWR: the open never waits for a writer */
    if (fd < 0) { perror(path); return 1; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: the read comes back EINTR */
    sigaction(SIGALRM, &sa, NULL);
    char buf[256];
    for (int i = 0; i < TRIES; i++) {
        struct itimerval it = {{0, 0}, {0, 50000}};
        setitimer(ITIMER_REAL, &it, NULL);
        ssize_t n = read(fd, buf, sizeof buf);
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        if (n > 0) {
            if (write(1, buf, n) != n) return 1;
            return 0;
        }
        if (n < 0 && errno != EINTR) { perror("read"); return 1; }
        fprintf(stderr, "tb65-retry: nothing on %s yet (try %d of %d)\n", path, i + 1, TRIES);
        if (i + 1 < TRIES) backoff(i);
    }
    fprintf(stderr, "tb65-retry: giving up on %s\n", path);
    return 75;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: tb65-retry lock|fifo|wait PATH\n"); return 2; }
    if (!strcmp(argv[1], "lock")) return do_lock(argv[2]);
    if (!strcmp(argv[1], "fifo")) return do_fifo(argv[2]);
    if (!strcmp(argv[1], "wait")) return do_wait(argv[2]);
    fprintf(stderr, "tb65-retry: unknown mode %s\n", argv[1]);
    return 2;
}
