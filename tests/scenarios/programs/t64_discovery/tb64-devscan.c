/* tb64-devscan: a verbs library's device discovery, on the files a machine really has.
 *
 *   tb64-devscan CLASS DEVNODE
 *
 * Walks /sys/class/CLASS (readdir, as libibverbs walks /sys/class/infiniband_verbs), reads each
 * device's attributes (ifindex, mtu, operstate, address; carrier only of a link that is up) and
 * the optional device/numa_node (a virtual device has none: ENOENT, expected, the device's node is
 * then -1), skipping the loopback device; then opens the control node DEVNODE (as a provider opens
 * /dev/infiniband/uverbsN) and asks it its features. Exit 0 with one line per device, 1 when a
 * device or its node cannot be read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int read_attr(const char *cls, const char *dev, const char *attr, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "/sys/class/%s/%s/%s", cls, dev, attr);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int err = n < 0 ? errno : 0;
    close(fd);
    if (n < 0)
        return -err;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tb64-devscan CLASS DEVNODE\n");
        return 2;
    }
    const char *cls = argv[1];
    char dir[256];
    snprintf(dir, sizeof dir, "/sys/class/%s", cls);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tb64-devscan: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    static const char *const attrs[] = {"ifindex", "mtu", "operstate", "address"};
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0)
            continue;
        char val[4][128];
        for (int i = 0; i < 4; i++) {
            int rc = read_attr(cls, e->d_name, attrs[i], val[i], sizeof val[i]);
            if (rc) {
                fprintf(stderr, "tb64-devscan: %s/%s/%s: %s\n", dir, e->d_name, attrs[i], strerror(-rc));
                closedir(d);
                return 1;
            }
        }
        char carrier[16] = "-", node[16];
        if (strcmp(val[2], "up") == 0 && read_attr(cls, e->d_name, "carrier", carrier, sizeof carrier))
            strcpy(carrier, "?");
        if (read_attr(cls, e->d_name, "device/numa_node", node, sizeof node))
            strcpy(node, "-1"); /* optional: a virtual device has no device/ */
        printf("%s ifindex=%s mtu=%s state=%s carrier=%s addr=%s node=%s\n", e->d_name, val[0], val[1], val[2],
               carrier, val[3], node);
        found++;
    }
    closedir(d);
    int fd = open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "tb64-devscan: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    unsigned int features = 0;
    if (ioctl(fd, TUNGETFEATURES, &features) < 0) {
        fprintf(stderr, "tb64-devscan: %s: TUNGETFEATURES: %s\n", argv[2], strerror(errno));
        close(fd);
        return 1;
    }
    close(fd);
    printf("%d devices, %s features 0x%x\n", found, argv[2], features);
    return 0;
}
