"""t64-topo: what a GPU/RDMA job's runtime reads before its first verb to place itself (as NCCL's
topology detection and libnuma do), on the files the machine really has.

    python3 -S t64-topo.py

1. /proc/self/mountinfo: is /dev/shm a tmpfs (the shared-memory transport needs one);
2. the NUMA nodes: listdir /sys/devices/system/node, each nodeN's cpulist and its meminfo's first line;
3. the network devices: listdir /sys/class/net, each device's mtu and its optional device/numa_node
   (a virtual device has none: ENOENT, expected, node -1);
4. the CPU's identity from the cpuid driver's node /dev/cpu/0/cpuid (leaf 0: the vendor).

One line per finding on stdout; a missing node directory or device node ends the job (exit 1).
"""

import os
import sys


def read(path):
    with open(path) as f:
        return f.read().strip()


def main():
    shm = [line.split()[4] for line in read("/proc/self/mountinfo").splitlines() if " - tmpfs " in line]
    print("shm", "/dev/shm" in shm)
    try:
        nodes = sorted(n for n in os.listdir("/sys/devices/system/node") if n.startswith("node") and n[4:].isdigit())
    except OSError as exc:
        print(f"t64-topo: NUMA nodes: {exc}", file=sys.stderr)
        return 1
    for n in nodes:
        base = f"/sys/devices/system/node/{n}"
        print(n, read(f"{base}/cpulist"), read(f"{base}/meminfo").splitlines()[0].split()[-2])
    for dev in sorted(os.listdir("/sys/class/net")):
        try:
            node = read(f"/sys/class/net/{dev}/device/numa_node")
        except FileNotFoundError:  # a virtual device: no device/
            node = "-1"
        print(dev, read(f"/sys/class/net/{dev}/mtu"), node)
    try:
        fd = os.open("/dev/cpu/0/cpuid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        print(f"t64-topo: cpuid: {exc}", file=sys.stderr)
        return 1
    try:
        regs = os.pread(fd, 16, 0)
    finally:
        os.close(fd)
    print("cpu", (regs[4:8] + regs[12:16] + regs[8:12]).decode("ascii", "replace"))
    return 0


sys.exit(main())
