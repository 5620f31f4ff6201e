/* tb43-ring: a training job's data-loader ring on one host, the way a C/C++ loader does it.
 *
 *   tb43-ring DIR NWORKERS [--pin]
 *
 * A POSIX shared-memory ring (shm_open, ftruncate, mmap) of NSLOTS slots, two named POSIX
 * semaphores (sem_open: free slots, filled slots), NWORKERS pthread producers reading the shards
 * DIR/shards/shard-*.bin (worker i takes shards i, i+N, ...) into the ring, the main thread
 * consuming and checksumming them. With --pin the loader pins its memory first, as a pinned
 * host-memory staging buffer does: mlockall(MCL_CURRENT | MCL_FUTURE) -- every later mapping
 * (the ring, the workers' 1 MiB stacks) is locked and counted against RLIMIT_MEMLOCK.
 * Segment and semaphore names carry a random suffix (a job id), removed at the end.
 * Exit status: 0 done, 1 a failure (one line on stderr naming the call).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSLOTS 8
#define SLOT (64 * 1024)
#define MAXSHARDS 256
#define STACK (1u << 20)

struct slot { uint32_t shard; uint32_t len; unsigned char data[SLOT - 8]; };

static struct slot *ring;
static sem_t *free_slots, *filled;
static pthread_mutex_t head_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned head;
static char *shards[MAXSHARDS];
static int nshards, nworkers;

static void die(const char *what, const char *name) {
    fprintf(stderr, "tb43-ring: %s %s: %s\n", what, name ? name : "", strerror(errno));
    exit(1);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void *worker(void *arg) {
    long w = (long)arg;
    static __thread unsigned char buf[SLOT - 8];
    for (int i = (int)w; i < nshards; i += nworkers) {
        int fd = open(shards[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("open", shards[i]);
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) die("read", shards[i]);
        close(fd);
        sem_wait(free_slots);
        pthread_mutex_lock(&head_lock);
        struct slot *s = &ring[head++ % NSLOTS];
        s->shard = (uint32_t)i;
        s->len = (uint32_t)n;
        memcpy(s->data, buf, (size_t)n);
        pthread_mutex_unlock(&head_lock);
        sem_post(filled);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tb43-ring DIR NWORKERS [--pin]\n"); return 2; }
    const char *dir = argv[1];
    nworkers = atoi(argv[2]);
    int pin = argc > 3 && strcmp(argv[3], "--pin") == 0;
    if (nworkers < 1 || nworkers > 16) { fprintf(stderr, "tb43-ring: bad worker count\n"); return 2; }

    if (pin && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) die("mlockall", "");

    char path[4096];
    snprintf(path, sizeof path, "%s/shards", dir);
    DIR *d = opendir(path);
    if (!d) die("opendir", path);
    struct dirent *e;
    while ((e = readdir(d)) && nshards < MAXSHARDS)
        if (strncmp(e->d_name, "shard-", 6) == 0) {
            if (asprintf(&shards[nshards], "%s/%s", path, e->d_name) < 0) die("asprintf", "");
            nshards++;
        }
    closedir(d);
    qsort(shards, (size_t)nshards, sizeof *shards, by_name);

    unsigned job;
    int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rnd < 0 || read(rnd, &job, sizeof job) != sizeof job) die("read", "/dev/urandom");
    close(rnd);
    char ring_name[64], free_name[64], filled_name[64];
    snprintf(ring_name, sizeof ring_name, "/tb43-ring-%08x", job);
    snprintf(free_name, sizeof free_name, "/tb43-free-%08x", job);
    snprintf(filled_name, sizeof filled_name, "/tb43-filled-%08x", job);

    int shm = shm_open(ring_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (shm < 0) die("shm_open", ring_name);
    if (ftruncate(shm, (off_t)NSLOTS * SLOT) != 0) die("ftruncate", ring_name);
    ring = mmap(NULL, (size_t)NSLOTS * SLOT, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
    if (ring == MAP_FAILED) die("mmap", ring_name);
    close(shm);

    free_slots = sem_open(free_name, O_CREAT | O_EXCL, 0600, NSLOTS);
    if (free_slots == SEM_FAILED) { shm_unlink(ring_name); die("sem_open", free_name); }
    filled = sem_open(filled_name, O_CREAT | O_EXCL, 0600, 0);
    if (filled == SEM_FAILED) { shm_unlink(ring_name); sem_unlink(free_name); die("sem_open", filled_name); }

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK);
    pthread_t tids[16];
    for (long w = 0; w < nworkers; w++) {
        int rc = pthread_create(&tids[w], &attr, worker, (void *)w);
        if (rc != 0) {
            errno = rc;
            shm_unlink(ring_name); sem_unlink(free_name); sem_unlink(filled_name);
            die("pthread_create", "worker");
        }
    }
    uint64_t sum = 0;
    unsigned tail = 0;
    for (int i = 0; i < nshards; i++) {
        sem_wait(filled);
        struct slot *s = &ring[tail++ % NSLOTS];
        for (uint32_t k = 0; k < s->len; k += 512) sum = sum * 31 + s->data[k];
        sem_post(free_slots);
    }
    for (long w = 0; w < nworkers; w++) pthread_join(tids[w], NULL);
    shm_unlink(ring_name);
    sem_unlink(free_name);
    sem_unlink(filled_name);
    printf("%d shards, checksum %016llx\n", nshards, (unsigned long long)sum);
    return 0;
}
