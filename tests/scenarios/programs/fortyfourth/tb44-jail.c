/* tb44-jail: the confinement launcher of a job on a shared GPU/RDMA host, the forty-fourth set's
 * C program.
 *
 *   tb44-jail POLICY PROGRAM [ARGS...]
 *
 * reads the job's confinement from the file POLICY, applies it to itself and execs PROGRAM.
 * POLICY has one directive a line (blank lines and # comments skipped):
 *
 *   nnp                        prctl(PR_SET_NO_NEW_PRIVS): set-uid helpers run unprivileged
 *   seccomp SYSCALL ERRNO      a seccomp filter: SYSCALL (mbind, memfd_create, mlock,
 *                              io_uring_setup, ptrace) returns -ERRNO (EPERM, ENOSYS, EACCES)
 *   landlock ABI               a landlock ruleset handling every file access right of ABI
 *                              (1: read/write/exec/make, 2: + refer), the rules below
 *   ro PATH                    landlock: read and execute under PATH
 *   rw PATH                    landlock: read, write, make and remove under PATH
 *   rwr PATH                   landlock: as rw, and refer (rename/link across directories)
 *   uid UID                    setgroups(0), setgid(UID), setuid(UID) last (the job's account)
 *   userns MAP                 a user and mount namespace of the job's own (rootless runtimes):
 *                              MAP is INNER:OUTER:COUNT, the uid and gid map a helper process
 *                              outside writes (newuidmap's job), or none (no map written)
 *   tmpfs PATH                 the job's scratch tmpfs mounted on PATH inside that namespace
 *
 * Invoked as tb44-grant (a set-uid root copy: the site's helper that lets a job raise its
 * locked-memory budget), it reads the node's RDMA policy file argv[1] (root's, 0600) and prints
 * the limit it grants; invoked as tb44-setlimit (the same helper, as sites usually write them) it
 * first checks that it runs as root (geteuid) and refuses otherwise, no call failing.  Exit status: 0 done, 1 a failure (one line on stderr naming the call).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

/* unshare a user (and mount) namespace; a child left outside writes its maps (or not) */
static int userns(const char *map) {
    int go[2], done[2];
    char buf[64], path[64];
    if (pipe(go) || pipe(done))
        return -1;
    pid_t parent = getpid(), pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(go[1]);
        if (read(go[0], buf, 1) != 1)
            _exit(1);
        unsigned in, out, count;
        if (sscanf(map, "%u:%u:%u", &in, &out, &count) == 3) {
            const char *files[] = {"uid_map", "gid_map"};
            for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof path, "/proc/%d/%s", (int)parent, files[i]);
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                int n = snprintf(buf, sizeof buf, "%u %u %u\n", in, out, count);
                if (fd < 0 || write(fd, buf, n) != n) {
                    fprintf(stderr, "tb44-jail: write %s: %s\n", path, strerror(errno));
                    _exit(1);
                }
                close(fd);
            }
        }
        _exit(0);
    }
    close(go[0]);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
        return -1;
    if (write(go[1], "x", 1) != 1)
        return -1;
    close(go[1]);
    int status;
    if (waitpid(pid, &status, 0) < 0 || status)
        return errno = EPERM, -1;
    return 0;
}

static int grant(const char *policy) {
    char buf[256];
    int fd = open(policy, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "tb44-grant: open %s: %s\n", policy, strerror(errno));
        return 1;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) {
        fprintf(stderr, "tb44-grant: read %s: %s\n", policy, strerror(errno));
        return 1;
    }
    buf[n] = 0;
    printf("granted %s", buf);
    return 0;
}

static int sysnr(const char *name) {
    if (!strcmp(name, "mbind")) return SYS_mbind;
    if (!strcmp(name, "memfd_create")) return SYS_memfd_create;
    if (!strcmp(name, "mlock")) return SYS_mlock;
    if (!strcmp(name, "io_uring_setup")) return SYS_io_uring_setup;
    if (!strcmp(name, "ptrace")) return SYS_ptrace;
    return -1;
}

static int errnum(const char *name) {
    if (!strcmp(name, "EPERM")) return EPERM;
    if (!strcmp(name, "ENOSYS")) return ENOSYS;
    if (!strcmp(name, "EACCES")) return EACCES;
    return -1;
}

#define FS_V1 (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
               LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
               LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | \
               LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | \
               LANDLOCK_ACCESS_FS_MAKE_SYM)
#define FS_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static int die(const char *what, const char *arg) {
    fprintf(stderr, "tb44-jail: %s %s: %s\n", what, arg, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    const char *me = strrchr(argv[0], '/');
    me = me ? me + 1 : argv[0];
    if (!strcmp(me, "tb44-grant"))
        return argc == 2 ? grant(argv[1]) : 2;
    if (!strcmp(me, "tb44-setlimit")) {
        uid_t euid = geteuid();
        if (euid != 0) {
            fprintf(stderr, "tb44-setlimit: must be set-uid root (running as %u)\n", (unsigned)euid);
            return 1;
        }
        return argc == 2 ? grant(argv[1]) : 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: tb44-jail POLICY PROGRAM [ARGS...]\n");
        return 2;
    }
    FILE *fp = fopen(argv[1], "re");
    if (!fp)
        return die("open", argv[1]);
    char line[512];
    int ruleset = -1, uid = -1, nnp = 0, ns = 0;
    struct sock_filter prog[64];
    int n = 0;
    __u64 handled = 0;
    while (fgets(line, sizeof line, fp)) {
        char key[32], a[400], b[32];
        line[strcspn(line, "\n")] = 0;
        int k = sscanf(line, "%31s %399s %31s", key, a, b);
        if (k < 1 || key[0] == '#')
            continue;
        if (!strcmp(key, "nnp")) {
            nnp = 1;
        } else if (!strcmp(key, "userns") && k == 2) {
            if (userns(a))
                return die("userns", a);
            ns = 1;
        } else if (!strcmp(key, "tmpfs") && k == 2) {
            if (!ns || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
                mount("tb44-scratch", a, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m"))
                return die("mount tmpfs", a);
        } else if (!strcmp(key, "uid") && k == 2) {
            uid = atoi(a);
        } else if (!strcmp(key, "seccomp") && k == 3) {
            int nr = sysnr(a), e = errnum(b);
            if (nr < 0 || e < 0 || n > 60) {
                fprintf(stderr, "tb44-jail: bad seccomp rule: %s\n", line);
                return 2;
            }
            if (n == 0)
                prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
            prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1);
            prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e & SECCOMP_RET_DATA));
        } else if (!strcmp(key, "landlock") && k == 2) {
            handled = FS_V1 | (atoi(a) >= 2 ? LANDLOCK_ACCESS_FS_REFER : 0);
            struct landlock_ruleset_attr attr = {.handled_access_fs = handled};
            ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
            if (ruleset < 0)
                return die("landlock_create_ruleset", a);
        } else if ((!strcmp(key, "ro") || !strcmp(key, "rw") || !strcmp(key, "rwr")) && k == 2) {
            if (ruleset < 0) {
                fprintf(stderr, "tb44-jail: %s before landlock\n", key);
                return 2;
            }
            struct landlock_path_beneath_attr pb = {.parent_fd = open(a, O_PATH | O_CLOEXEC)};
            if (pb.parent_fd < 0)
                return die("open", a);
            pb.allowed_access = !strcmp(key, "ro") ? FS_RO : FS_V1;
            if (!strcmp(key, "rwr"))
                pb.allowed_access |= LANDLOCK_ACCESS_FS_REFER;
            pb.allowed_access &= handled;
            if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
                return die("landlock_add_rule", a);
            close(pb.parent_fd);
        } else {
            fprintf(stderr, "tb44-jail: bad policy line: %s\n", line);
            return 2;
        }
    }
    fclose(fp);
    if (uid >= 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
        return die("setuid", "job");
    if ((nnp || ruleset >= 0 || n) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return die("prctl", "PR_SET_NO_NEW_PRIVS");
    if (ruleset >= 0 && syscall(SYS_landlock_restrict_self, ruleset, 0))
        return die("landlock_restrict_self", "");
    if (n) {
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog))
            return die("prctl", "PR_SET_SECCOMP");
    }
    execv(argv[2], argv + 2);
    return die("execv", argv[2]);
}
