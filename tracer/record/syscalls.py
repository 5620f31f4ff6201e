"""Syscall numbers, names and argument roles (x86_64), shared by the BPF program and user space.

The BPF side only needs to know which argument registers hold user-space strings (read at
entry); that is encoded per syscall number into the `specs` array map (bit layout mirrored in
bpf/syscall_recorder.c). Everything else here (which argument is a dirfd, an fd, open flags,
which calls create/duplicate/close fds or change the cwd) drives the user-space resolution in
tracer.record.fdtable and the `arg` column.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import lru_cache

from tracer.errors import EnvironmentProblem

# BPF spec bits (bpf/syscall_recorder.c)
SPEC_PATH2_SHIFT = 3
SPEC_SOCKADDR = 1 << 6
SPEC_AT_ENTER = 1 << 7
SPEC_STATE = 1 << 8
SPEC_OUT_SHIFT = 9  # 2 bits: OUTPUT_KINDS
SPEC_FDPAIR = 1 << 11
SPEC_FDPAIR_ARG3 = 1 << 12
SPEC_SOCKERR = 1 << 13  # getsockopt: SO_ERROR's value read at exit (4 bytes where output goes)
OUTPUT_KINDS = {"buf": 1, "iov": 2, "msg": 3}  # what argument 1 of a write-like call is

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
P_PID, P_PIDFD = 1, 3  # waitid's idtypes naming one child
AT_REMOVEDIR = 0x200
CLONE_THREAD = 0x10000
F_DUPFD, F_SETFD, F_DUPFD_CLOEXEC = 0, 2, 1030
FD_CLOEXEC = 1
O_CLOEXEC = 0o2000000
SOL_SOCKET, SO_ERROR = 1, 4  # x86_64 (asm-generic); bpf/syscall_recorder.c has the same
RENAME_FLAGS = ((1, "RENAME_NOREPLACE"), (2, "RENAME_EXCHANGE"), (4, "RENAME_WHITEOUT"))

# From arch/x86/entry/syscalls/syscall_64.tbl (kernel 6.18).
X86_64_NAMES: dict[int, str] = {
    0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 6: "lstat", 7: "poll",
    8: "lseek", 9: "mmap", 10: "mprotect", 11: "munmap", 12: "brk", 13: "rt_sigaction",
    14: "rt_sigprocmask", 15: "rt_sigreturn", 16: "ioctl", 17: "pread64", 18: "pwrite64",
    19: "readv", 20: "writev", 21: "access", 22: "pipe", 23: "select", 24: "sched_yield",
    25: "mremap", 26: "msync", 27: "mincore", 28: "madvise", 29: "shmget", 30: "shmat",
    31: "shmctl", 32: "dup", 33: "dup2", 34: "pause", 35: "nanosleep", 36: "getitimer",
    37: "alarm", 38: "setitimer", 39: "getpid", 40: "sendfile", 41: "socket", 42: "connect",
    43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 48: "shutdown",
    49: "bind", 50: "listen", 51: "getsockname", 52: "getpeername", 53: "socketpair",
    54: "setsockopt", 55: "getsockopt", 56: "clone", 57: "fork", 58: "vfork", 59: "execve",
    60: "exit", 61: "wait4", 62: "kill", 63: "uname", 64: "semget", 65: "semop", 66: "semctl",
    67: "shmdt", 68: "msgget", 69: "msgsnd", 70: "msgrcv", 71: "msgctl", 72: "fcntl", 73: "flock",
    74: "fsync", 75: "fdatasync", 76: "truncate", 77: "ftruncate", 78: "getdents", 79: "getcwd",
    80: "chdir", 81: "fchdir", 82: "rename", 83: "mkdir", 84: "rmdir", 85: "creat", 86: "link",
    87: "unlink", 88: "symlink", 89: "readlink", 90: "chmod", 91: "fchmod", 92: "chown",
    93: "fchown", 94: "lchown", 95: "umask", 96: "gettimeofday", 97: "getrlimit", 98: "getrusage",
    99: "sysinfo", 100: "times", 101: "ptrace", 102: "getuid", 103: "syslog", 104: "getgid",
    105: "setuid", 106: "setgid", 107: "geteuid", 108: "getegid", 109: "setpgid", 110: "getppid",
    111: "getpgrp", 112: "setsid", 113: "setreuid", 114: "setregid", 115: "getgroups",
    116: "setgroups", 117: "setresuid", 118: "getresuid", 119: "setresgid", 120: "getresgid",
    121: "getpgid", 122: "setfsuid", 123: "setfsgid", 124: "getsid", 125: "capget", 126: "capset",
    127: "rt_sigpending", 128: "rt_sigtimedwait", 129: "rt_sigqueueinfo", 130: "rt_sigsuspend",
    131: "sigaltstack", 132: "utime", 133: "mknod", 134: "uselib", 135: "personality",
    136: "ustat", 137: "statfs", 138: "fstatfs", 139: "sysfs", 140: "getpriority",
    141: "setpriority", 142: "sched_setparam", 143: "sched_getparam", 144: "sched_setscheduler",
    145: "sched_getscheduler", 146: "sched_get_priority_max", 147: "sched_get_priority_min",
    148: "sched_rr_get_interval", 149: "mlock", 150: "munlock", 151: "mlockall",
    152: "munlockall", 153: "vhangup", 154: "modify_ldt", 155: "pivot_root", 156: "_sysctl",
    157: "prctl", 158: "arch_prctl", 159: "adjtimex", 160: "setrlimit", 161: "chroot",
    162: "sync", 163: "acct", 164: "settimeofday", 165: "mount", 166: "umount2", 167: "swapon",
    168: "swapoff", 169: "reboot", 170: "sethostname", 171: "setdomainname", 172: "iopl",
    173: "ioperm", 174: "create_module", 175: "init_module", 176: "delete_module",
    177: "get_kernel_syms", 178: "query_module", 179: "quotactl", 180: "nfsservctl",
    181: "getpmsg", 182: "putpmsg", 183: "afs_syscall", 184: "tuxcall", 185: "security",
    186: "gettid", 187: "readahead", 188: "setxattr", 189: "lsetxattr", 190: "fsetxattr",
    191: "getxattr", 192: "lgetxattr", 193: "fgetxattr", 194: "listxattr", 195: "llistxattr",
    196: "flistxattr", 197: "removexattr", 198: "lremovexattr", 199: "fremovexattr", 200: "tkill",
    201: "time", 202: "futex", 203: "sched_setaffinity", 204: "sched_getaffinity",
    205: "set_thread_area", 206: "io_setup", 207: "io_destroy", 208: "io_getevents",
    209: "io_submit", 210: "io_cancel", 211: "get_thread_area", 212: "lookup_dcookie",
    213: "epoll_create", 214: "epoll_ctl_old", 215: "epoll_wait_old", 216: "remap_file_pages",
    217: "getdents64", 218: "set_tid_address", 219: "restart_syscall", 220: "semtimedop",
    221: "fadvise64", 222: "timer_create", 223: "timer_settime", 224: "timer_gettime",
    225: "timer_getoverrun", 226: "timer_delete", 227: "clock_settime", 228: "clock_gettime",
    229: "clock_getres", 230: "clock_nanosleep", 231: "exit_group", 232: "epoll_wait",
    233: "epoll_ctl", 234: "tgkill", 235: "utimes", 236: "vserver", 237: "mbind",
    238: "set_mempolicy", 239: "get_mempolicy", 240: "mq_open", 241: "mq_unlink",
    242: "mq_timedsend", 243: "mq_timedreceive", 244: "mq_notify", 245: "mq_getsetattr",
    246: "kexec_load", 247: "waitid", 248: "add_key", 249: "request_key", 250: "keyctl",
    251: "ioprio_set", 252: "ioprio_get", 253: "inotify_init", 254: "inotify_add_watch",
    255: "inotify_rm_watch", 256: "migrate_pages", 257: "openat", 258: "mkdirat", 259: "mknodat",
    260: "fchownat", 261: "futimesat", 262: "newfstatat", 263: "unlinkat", 264: "renameat",
    265: "linkat", 266: "symlinkat", 267: "readlinkat", 268: "fchmodat", 269: "faccessat",
    270: "pselect6", 271: "ppoll", 272: "unshare", 273: "set_robust_list", 274: "get_robust_list",
    275: "splice", 276: "tee", 277: "sync_file_range", 278: "vmsplice", 279: "move_pages",
    280: "utimensat", 281: "epoll_pwait", 282: "signalfd", 283: "timerfd_create", 284: "eventfd",
    285: "fallocate", 286: "timerfd_settime", 287: "timerfd_gettime", 288: "accept4",
    289: "signalfd4", 290: "eventfd2", 291: "epoll_create1", 292: "dup3", 293: "pipe2",
    294: "inotify_init1", 295: "preadv", 296: "pwritev", 297: "rt_tgsigqueueinfo",
    298: "perf_event_open", 299: "recvmmsg", 300: "fanotify_init", 301: "fanotify_mark",
    302: "prlimit64", 303: "name_to_handle_at", 304: "open_by_handle_at", 305: "clock_adjtime",
    306: "syncfs", 307: "sendmmsg", 308: "setns", 309: "getcpu", 310: "process_vm_readv",
    311: "process_vm_writev", 312: "kcmp", 313: "finit_module", 314: "sched_setattr",
    315: "sched_getattr", 316: "renameat2", 317: "seccomp", 318: "getrandom", 319: "memfd_create",
    320: "kexec_file_load", 321: "bpf", 322: "execveat", 323: "userfaultfd", 324: "membarrier",
    325: "mlock2", 326: "copy_file_range", 327: "preadv2", 328: "pwritev2", 329: "pkey_mprotect",
    330: "pkey_alloc", 331: "pkey_free", 332: "statx", 333: "io_pgetevents", 334: "rseq",
    424: "pidfd_send_signal", 425: "io_uring_setup", 426: "io_uring_enter",
    427: "io_uring_register", 428: "open_tree", 429: "move_mount", 430: "fsopen", 431: "fsconfig",
    432: "fsmount", 433: "fspick", 434: "pidfd_open", 435: "clone3", 436: "close_range",
    437: "openat2", 438: "pidfd_getfd", 439: "faccessat2", 440: "process_madvise",
    441: "epoll_pwait2", 442: "mount_setattr", 443: "quotactl_fd", 444: "landlock_create_ruleset",
    445: "landlock_add_rule", 446: "landlock_restrict_self", 447: "memfd_secret",
    448: "process_mrelease", 449: "futex_waitv", 450: "set_mempolicy_home_node", 451: "cachestat",
    452: "fchmodat2", 453: "map_shadow_stack", 454: "futex_wake", 455: "futex_wait",
    456: "futex_requeue", 457: "statmount", 458: "listmount", 459: "lsm_get_self_attr",
    460: "lsm_set_self_attr", 461: "lsm_list_modules", 462: "mseal", 463: "setxattrat",
    464: "getxattrat", 465: "listxattrat", 466: "removexattrat", 467: "open_tree_attr",
    468: "file_getattr", 469: "file_setattr",
}


@dataclass(frozen=True)
class Spec:
    """What a syscall's arguments mean, as far as the recorder cares.

    path / path2: (argument index of a path string, argument index of its dirfd or None);
    path2 goes to the `path2` column.
    path2_kind: "path" (resolved like path), "raw" (kept as the program passed it: a symlink's
    target, which is relative to the link, not to the cwd; a mount source).
    path_kind: "path" (resolved against the cwd or dirfd), "mqueue" (a POSIX message queue's
    name, which is no file path: labelled ``mqueue:/NAME``, as ``unix:`` labels a socket's).
    fd: argument index of an fd whose path labels the call when it has no path argument.
    fd2: argument index of a second fd whose path fills `path2` (sendfile, copy_file_range).
    pipe_second: of fd and fd2, the end that is a pipe goes to `path2` (splice: one end is always
    a pipe, which says nothing; the file or socket at the other end is what the call is about --
    a full volume's ENOSPC named `pipe:` when the pipe was the end read).
    arg_kind: how to render `arg`: open_flags, access_mode, at_flags, socket, rename_flags,
    wait4/waitid ("pid" for a wait for one child, blocking or not).
    role: effect on the fd table / process state (see tracer.record.fdtable).
    output: what argument 1 of a write-like call is ("buf", "iov", "msg"): the BPF side copies
    the first bytes written, user space keeps them for stdout/stderr, ttys and pipes.
    fdpair: argument index of the int[2] a pipe/socketpair call fills with its new fds.
    sockerr: getsockopt: for (SOL_SOCKET, SO_ERROR) the BPF side reads the int the call wrote
    (the error a non-blocking connect ended with), which becomes the event's errno.
    empty_flags: argument index of an *at call's flags: with AT_EMPTY_PATH there, a path string
    the BPF side could not read is taken as "" (the call is about its dirfd). glibc's fexecve
    and fstat pass a "" from its read-only data, whose page a forked child has not touched yet:
    the probe cannot fault it in, yet the call is about the descriptor.
    """

    path: tuple[int, int | None] | None = None
    path2: tuple[int, int | None] | None = None
    path2_kind: str = "path"
    path_kind: str = "path"
    sockaddr: int | None = None  # argument index of a struct sockaddr (length is the next one)
    fd: int | None = None
    fd2: int | None = None
    arg_kind: str | None = None
    arg_index: int | None = None
    role: str | None = None
    at_enter: bool = False
    output: str | None = None
    fdpair: int | None = None
    sockerr: bool = False
    empty_flags: int | None = None
    pipe_second: bool = False


def _specs() -> dict[str, Spec]:
    s: dict[str, Spec] = {}
    # plain path syscalls (no dirfd)
    for name in ("stat", "lstat", "readlink", "mkdir", "rmdir", "unlink", "chmod", "chown",
                 "lchown", "truncate", "utime", "utimes", "mknod", "statfs", "getxattr",
                 "lgetxattr", "setxattr", "lsetxattr", "listxattr", "llistxattr", "removexattr",
                 "lremovexattr", "umount2", "swapon", "swapoff", "acct", "uselib", "chroot"):
        s[name] = Spec(path=(0, None))
    s["access"] = Spec(path=(0, None), arg_kind="access_mode", arg_index=1)
    s["open"] = Spec(path=(0, None), arg_kind="open_flags", arg_index=1, role="open")
    s["creat"] = Spec(path=(0, None), role="open")
    s["chdir"] = Spec(path=(0, None), role="chdir")
    s["execve"] = Spec(path=(0, None), role="exec")
    # *at syscalls: dirfd in argument 0, path in argument 1
    for name in ("newfstatat", "readlinkat", "mkdirat", "fchmodat", "fchmodat2", "fchownat",
                 "futimesat", "utimensat", "mknodat", "name_to_handle_at", "mount_setattr",
                 "getxattrat", "setxattrat", "listxattrat", "removexattrat", "file_getattr",
                 "file_setattr", "statx"):
        s[name] = Spec(path=(1, 0))
    for name, flags in (("newfstatat", 3), ("statx", 2), ("fchownat", 4), ("fchmodat2", 3),
                        ("name_to_handle_at", 4)):
        s[name] = Spec(path=(1, 0), empty_flags=flags)
    # utimensat(fd, NULL, ...) / futimesat(fd, NULL, ...) are about the fd itself (glibc's
    # futimens: touch, cp -p, tar): labelled with the fd's path when there is no path string.
    for name in ("utimensat", "futimesat"):
        s[name] = Spec(path=(1, 0), fd=0)
    s["openat"] = Spec(path=(1, 0), arg_kind="open_flags", arg_index=2, role="open")
    s["openat2"] = Spec(path=(1, 0), role="open")
    s["faccessat"] = Spec(path=(1, 0), arg_kind="access_mode", arg_index=2)
    s["faccessat2"] = Spec(path=(1, 0), arg_kind="access_mode", arg_index=2)
    s["unlinkat"] = Spec(path=(1, 0), arg_kind="at_flags", arg_index=2)
    s["execveat"] = Spec(path=(1, 0), role="exec", empty_flags=4)
    s["open_tree"] = Spec(path=(1, 0), role="newfd")
    s["open_tree_attr"] = Spec(path=(1, 0), role="newfd")
    s["inotify_add_watch"] = Spec(path=(1, None), fd=0)
    s["quotactl"] = Spec(path=(1, None))  # the block device ("special") argument
    s["fanotify_mark"] = Spec(path=(4, 3), fd=0)
    # two paths: the first (source / the link being made) in `path`, the second in `path2`
    for name in ("rename", "link"):
        s[name] = Spec(path=(0, None), path2=(1, None))
    for name in ("renameat", "linkat", "move_mount"):
        s[name] = Spec(path=(1, 0), path2=(3, 2))
    s["renameat2"] = Spec(path=(1, 0), path2=(3, 2), arg_kind="rename_flags", arg_index=4)
    s["symlink"] = Spec(path=(1, None), path2=(0, None), path2_kind="raw")
    s["symlinkat"] = Spec(path=(2, 1), path2=(0, None), path2_kind="raw")
    s["pivot_root"] = Spec(path=(0, None), path2=(1, None))
    s["mount"] = Spec(path=(1, None), path2=(0, None), path2_kind="raw")
    # sockets: the address is the "path"
    s["socket"] = Spec(arg_kind="socket", arg_index=0, role="newfd")
    s["connect"] = Spec(sockaddr=1, fd=0, role="connect")
    s["bind"] = Spec(sockaddr=1, fd=0, role="connect")
    s["sendto"] = Spec(sockaddr=4, fd=0, output="buf")
    s["pipe"] = Spec(role="pipe", fdpair=0)
    s["pipe2"] = Spec(role="pipe", fdpair=0, arg_kind="pipe_flags", arg_index=1)
    s["socketpair"] = Spec(arg_kind="socket", arg_index=0, role="pipe", fdpair=3)
    for name in ("accept", "accept4", "eventfd", "eventfd2", "epoll_create", "epoll_create1",
                 "timerfd_create", "signalfd", "signalfd4", "inotify_init", "inotify_init1",
                 "fanotify_init", "perf_event_open", "userfaultfd", "pidfd_open", "pidfd_getfd",
                 "memfd_create", "memfd_secret", "io_uring_setup", "fsopen", "fsmount",
                 "landlock_create_ruleset", "open_by_handle_at", "bpf"):
        s[name] = Spec(role="newfd")
    # POSIX message queues: glibc passes the name without its leading "/"; the queue's
    # descriptor labels the calls on it, so a full queue's mq_timedsend names the queue
    s["mq_open"] = Spec(path=(0, None), path_kind="mqueue", role="newfd")
    s["mq_unlink"] = Spec(path=(0, None), path_kind="mqueue")
    for name in ("mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"):
        s[name] = Spec(fd=0)
    # calls on an fd: labelled with the fd's path
    for name in ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
                 "preadv2", "pwritev2", "fstat", "fstatfs", "lseek", "fsync", "fdatasync",
                 "ftruncate", "fallocate", "getdents", "getdents64", "fchmod", "fchown", "flock",
                 "ioctl", "fadvise64", "readahead", "fgetxattr", "fsetxattr", "flistxattr",
                 "fremovexattr", "syncfs", "sync_file_range", "listen", "shutdown",
                 "getsockopt", "setsockopt", "getsockname", "getpeername", "recvfrom",
                 "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "splice", "tee", "vmsplice",
                 "finit_module", "setns"):
        s[name] = Spec(fd=0)
    # write-like calls: the first bytes written are captured (output column)
    for name in ("write", "pwrite64"):
        s[name] = Spec(fd=0, output="buf")
    for name in ("writev", "pwritev", "pwritev2"):
        s[name] = Spec(fd=0, output="iov")
    s["sendmsg"] = Spec(fd=0, output="msg")
    # a non-blocking connect's outcome comes back in getsockopt(SO_ERROR)'s value, ret 0
    s["getsockopt"] = Spec(fd=0, arg_kind="sockopt", arg_index=1, sockerr=True)
    # a wait for one child (wait4(pid > 0), waitid(P_PID/P_PIDFD)) against a reaper's wait for
    # any: ECHILD ends the second routinely, and means the first's child was reaped elsewhere
    s["wait4"] = Spec(arg_kind="wait4", arg_index=2)  # pid in argument 0, options in 2
    s["waitid"] = Spec(arg_kind="waitid", arg_index=3)  # idtype in argument 0, options in 3
    # fd to fd: the second fd's path in path2
    s["sendfile"] = Spec(fd=0, fd2=1)  # out_fd, in_fd
    s["copy_file_range"] = Spec(fd=0, fd2=2)  # fd_in, fd_out
    s["splice"] = Spec(fd=0, fd2=2, pipe_second=True)  # fd_in, fd_out: the end that is no pipe first
    s["tee"] = Spec(fd=0, fd2=1)
    s["mmap"] = Spec(fd=4)
    s["close"] = Spec(fd=0, role="close")
    s["close_range"] = Spec(role="close_range")
    s["dup"] = Spec(fd=0, role="dup")
    s["dup2"] = Spec(fd=0, role="dup")
    s["dup3"] = Spec(fd=0, role="dup")
    s["fcntl"] = Spec(fd=0, role="fcntl")
    s["fchdir"] = Spec(fd=0, role="fchdir")
    for name in ("fork", "vfork", "clone", "clone3"):
        s[name] = Spec(role="fork")
    for name in ("exit", "exit_group"):
        s[name] = Spec(at_enter=True)
    return s


SPECS: dict[str, Spec] = _specs()
STATE_ROLES = frozenset({"open", "newfd", "dup", "close", "close_range", "fcntl", "chdir",
                         "fchdir", "fork", "exec", "connect", "pipe"})


def syscall_names() -> dict[int, str]:
    """Number -> name for the running architecture."""
    machine = platform.machine()
    if machine != "x86_64":
        raise EnvironmentProblem(
            f"tracer record knows the syscall table of x86_64 only, this machine is {machine}"
        )
    return X86_64_NAMES


def name_of(nr: int) -> str:
    return X86_64_NAMES.get(nr, f"syscall_{nr}")


def bpf_spec(spec: Spec) -> int:
    """Encode a Spec into the bits the BPF program reads from its `specs` map."""
    bits = 0
    if spec.sockaddr is not None:
        bits |= (spec.sockaddr + 1) | SPEC_SOCKADDR
    elif spec.path is not None:
        bits |= spec.path[0] + 1
    if spec.path2 is not None:
        bits |= (spec.path2[0] + 1) << SPEC_PATH2_SHIFT
    if spec.at_enter:
        bits |= SPEC_AT_ENTER
    if spec.role in STATE_ROLES:
        bits |= SPEC_STATE
    if spec.output is not None:
        bits |= OUTPUT_KINDS[spec.output] << SPEC_OUT_SHIFT
    if spec.fdpair is not None:
        bits |= SPEC_FDPAIR | (SPEC_FDPAIR_ARG3 if spec.fdpair == 3 else 0)
    if spec.sockerr:
        bits |= SPEC_SOCKERR
    return bits


def bpf_spec_table() -> dict[int, int]:
    """syscall number -> spec bits, for every syscall with a non-zero encoding."""
    out = {}
    for nr, name in syscall_names().items():
        spec = SPECS.get(name)
        if spec is not None and (bits := bpf_spec(spec)):
            out[nr] = bits
    return out


# ---------------------------------------------------------------------------------------------
# rendering of `arg`
# ---------------------------------------------------------------------------------------------
_OPEN_FLAGS = [  # x86_64 kernel values (O_LARGEFILE is 0 in glibc's 64-bit headers, not here)
    (0o20200000, "O_TMPFILE"), (0o4010000, "O_SYNC"), (0o10000000, "O_PATH"),
    (0o100, "O_CREAT"), (0o200, "O_EXCL"), (0o400, "O_NOCTTY"), (0o1000, "O_TRUNC"),
    (0o2000, "O_APPEND"), (0o4000, "O_NONBLOCK"), (0o10000, "O_DSYNC"), (0o20000, "O_ASYNC"),
    (0o40000, "O_DIRECT"), (0o100000, "O_LARGEFILE"), (0o200000, "O_DIRECTORY"),
    (0o400000, "O_NOFOLLOW"), (0o1000000, "O_NOATIME"), (0o2000000, "O_CLOEXEC"),
]
_ACCMODE = {0: "O_RDONLY", 1: "O_WRONLY", 2: "O_RDWR", 3: "O_ACCMODE"}


@lru_cache(maxsize=4096)
def open_flags(flags: int) -> str:
    """Symbolic open(2) flags: 0o2000000 -> 'O_RDONLY|O_CLOEXEC'."""
    flags &= 0xFFFFFFFF
    parts = [_ACCMODE[flags & 3]]
    rest = flags & ~3
    for value, name in _OPEN_FLAGS:
        if rest & value == value:
            parts.append(name)
            rest &= ~value
    if rest:
        parts.append(hex(rest))
    return "|".join(parts)


@lru_cache(maxsize=256)
def access_mode(mode: int) -> str:
    mode &= 0xFFFFFFFF
    if mode == 0:
        return "F_OK"
    names = [n for bit, n in ((4, "R_OK"), (2, "W_OK"), (1, "X_OK")) if mode & bit]
    if mode & ~7:
        names.append(hex(mode & ~7))
    return "|".join(names)


_FAMILIES = {1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET"}
_SOCK_TYPES = {1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 5: "SOCK_SEQPACKET"}


@lru_cache(maxsize=256)
def socket_arg(domain: int, type_: int) -> str:
    fam = _FAMILIES.get(domain & 0xFFFF, f"AF_{domain}")
    kind = _SOCK_TYPES.get(type_ & 0xF, f"SOCK_{type_ & 0xF}")
    extra = [n for bit, n in ((0o4000, "SOCK_NONBLOCK"), (0o2000000, "SOCK_CLOEXEC")) if type_ & bit]
    return ",".join([fam, "|".join([kind, *extra])])


def render_arg(spec: Spec, args) -> str | None:
    """The `arg` column for a call, from its raw argument registers."""
    kind = spec.arg_kind
    if kind is None:
        return None
    value = int(args[spec.arg_index])
    if kind == "open_flags":
        return open_flags(value)
    if kind == "access_mode":
        return access_mode(value)
    if kind == "at_flags":
        return "AT_REMOVEDIR" if value & AT_REMOVEDIR else None
    if kind == "socket":
        return socket_arg(value, int(args[1]))
    if kind == "sockopt":  # getsockopt(fd, level, optname, ...): only the one the errno comes from
        return "SO_ERROR" if value & 0xFFFFFFFF == SOL_SOCKET and int(args[2]) & 0xFFFFFFFF == SO_ERROR else None
    if kind == "rename_flags":
        return "|".join(n for bit, n in RENAME_FLAGS if value & bit) or None
    if kind in ("wait4", "waitid"):  # "pid" for a wait for one child, none for a wait for any
        # (not its WNOHANG: whether a pool's join polls or blocks is timing -- multiprocessing)
        target = int(args[0]) & 0xFFFFFFFF
        return "pid" if (0 < target < 0x80000000 if kind == "wait4" else target in (P_PID, P_PIDFD)) else None
    if kind == "pipe_flags":
        names = [n for bit, n in ((O_CLOEXEC, "O_CLOEXEC"), (0o4000, "O_NONBLOCK"), (0o40000, "O_DIRECT"))
                 if value & bit]
        return "|".join(names) or None
    return None


def sockaddr_text(raw: bytes) -> str | None:
    """A struct sockaddr as text: inet:127.0.0.1:80, inet6:[::1]:80, unix:/run/x, unix:@abstract."""
    if len(raw) < 2:
        return None
    family = int.from_bytes(raw[:2], "little")
    if family == 1:
        body = raw[2:]
        if body[:1] == b"\x00":
            return "unix:@" + body[1:].split(b"\x00", 1)[0].decode("utf-8", "replace")
        return "unix:" + body.split(b"\x00", 1)[0].decode("utf-8", "replace")
    if family == 2 and len(raw) >= 8:
        port = int.from_bytes(raw[2:4], "big")
        return f"inet:{'.'.join(str(b) for b in raw[4:8])}:{port}"
    if family == 10 and len(raw) >= 24:
        import ipaddress

        port = int.from_bytes(raw[2:4], "big")
        return f"inet6:[{ipaddress.IPv6Address(raw[8:24])}]:{port}"
    return _FAMILIES.get(family, f"af{family}")
