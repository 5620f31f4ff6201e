"""A fifteenth set of real programs with one real fault each: the credentials, the confinement
and the file-system features a job's runtime and its libraries use -- extended attributes,
inode flags, leases, pipe sizes and memfd seals, a seccomp launcher's policy, capabilities a
wrapper dropped, and the kernel's key quota -- in (call, errno) pairs the first fourteen sets
do not have.

- **extended attributes** (the job tags its outputs with a checksum and a provenance, as data
  pipelines and cache layers do): a checksum list past the 64 KiB value limit (setxattr E2BIG),
  a provenance past what one ext4 block holds (setxattr ENOSPC), a tag created with
  XATTR_CREATE on a file that already has it (setxattr EEXIST), one replaced with
  XATTR_REPLACE on a file that has none (setxattr ENODATA), a ``user.`` tag on an output that
  became a symlink (lsetxattr EPERM), a ``trusted.`` tag set by an unprivileged job through its
  descriptor (fsetxattr EPERM), a stale-lock tag the job removes and nobody set
  (removexattr ENODATA);
- **inode flags** (``chattr`` by an administrator): ``mv`` rotating an immutable log (rename
  EPERM), an append-only log truncated (truncate EPERM), a tag on an immutable file (setxattr
  EPERM);
- **leases, pipes and seals**: a read lease asked by an unprivileged job on a file it does not
  own (fcntl F_SETLEASE EACCES), the job's log pipe shrunk below what it holds (fcntl
  F_SETPIPE_SZ EBUSY), a shared buffer the producer sealed before the job appends (write
  EPERM), seals asked of a plain file where the runtime fell back from memfd (fcntl
  F_ADD_SEALS EINVAL on ext4);
- **seccomp** (``sandbox``, a small C launcher of the test's own that installs a filter read
  from a policy file and execs the job): fdatasync refused ENOSYS, flock refused EPERM (util-linux
  ``flock``), mkdir refused ENOSYS (coreutils ``mkdir -p``);
- **capabilities** dropped by ``capsh --drop``: a BPF map the runtime creates (bpf EPERM),
  ``dmesg`` without CAP_SYSLOG under kernel.dmesg_restrict=1 (openat /dev/kmsg EPERM);
- **keys**: a token past the unprivileged key quota (kernel.keys.maxbytes 20000) added to a
  session keyring of its own (add_key EDQUOT);
- **the required miss after routine ones of the same kind**: optional tags missing on other
  files in every run, then the required one (getxattr ENODATA); the optional tag missing on
  the same file, then the required one there -- the trace does not name the attribute, so
  both are (getxattr, path, ENODATA), as are two removexattr ENODATA; a policy refusing statx
  ENOSYS in every run and fdatasync ENOSYS in the bad one; the optional cache key past the
  quota in every run, then the required token (add_key EDQUOT, no path).

Most faults go through one python3 program, ``cred.py``, a job's start-up as a plan of steps
(files read, tags set, leases, pipes, buffers, keys), so each fault sits among the other steps'
successful calls; the rest are mv, flock, mkdir, dmesg, capsh and the sandbox. Same types and
harness as real.py (`Scenario`, `NoAnomalyCase`); the expectations are what ``strace -f`` shows
a person looking for the fault (calls without a path: ``*``).

The good-vs-good cases (`QUIET_FIFTEENTH`) carry the noise of such start-ups: tags of varying
size read (Python's getxattr retries ERANGE with a bigger buffer), optional tags probed and
missing (ENODATA) on a varying number of files, XATTR_CREATE refused EEXIST in every run and the
tag replaced, a sandbox refusing statx ENOSYS in every run (glibc falls back to fstatat), capsh
dropping varying unrelated capabilities, a lease refused in every run and the file read anyway,
pipe sizes, key counts, sealed buffers and listed files that vary; and a trusted.* tag refused
in the last run only and user.* taken right after on the same file (a retry that succeeds:
recovered, quiet by the differ's rule for a call failing and then succeeding on its path).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import random
import shutil
import subprocess
from pathlib import Path

from .catalog import write
from .harness import ROOT, NoAnomalyCase, Scenario

PY3 = "/usr/bin/python3"
NO_PATH = "*"
NOBODY_UID = 65534
SETPRIV_NOBODY = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

CRED_PY = r'''
import ctypes, fcntl, mmap, os, subprocess, sys
base = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_add_key, SYS_keyctl, SYS_bpf = 248, 250, 321
KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 1, -3


def die(msg):
    sys.stderr.write(f"cred: {msg}\n")
    sys.exit(1)


def syscall(*args):
    r = libc.syscall(*args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def value(spec):
    """a tag's value: inline text, or @file for a file's bytes"""
    if spec.startswith("@"):
        with open(spec[1:], "rb") as fh:
            return fh.read()
    return spec.encode()


held = []
buffers = {}
for line in open(os.path.join(base, "plan")):
    op, *a = line.split()
    try:
        if op == "probe":  # an optional file: missing is fine
            try:
                with open(a[0]) as fh:
                    fh.read()
            except OSError:
                pass
        elif op == "read":
            with open(a[0]) as fh:
                fh.read()
        elif op == "write":  # file text: an output written
            with open(a[0], "w") as fh:
                fh.write(a[1] + "\n")
        # --- extended attributes
        elif op == "tag":  # file name value [create|replace]
            flags = {"create": os.XATTR_CREATE, "replace": os.XATTR_REPLACE}.get(a[3] if a[3:] else "", 0)
            os.setxattr(a[0], a[1], value(a[2]), flags)
        elif op == "tag_upsert":  # file name value: created, or replaced when it exists
            try:
                os.setxattr(a[0], a[1], value(a[2]), os.XATTR_CREATE)
            except FileExistsError:
                os.setxattr(a[0], a[1], value(a[2]), os.XATTR_REPLACE)
        elif op == "ltag":  # path name value: the link itself is tagged, never its target
            os.setxattr(a[0], a[1], value(a[2]), follow_symlinks=False)
        elif op == "ftag":  # file name value [fallback-name]: through the open descriptor
            fd = os.open(a[0], os.O_RDONLY)
            try:
                os.setxattr(fd, a[1], value(a[2]))
            except PermissionError:
                if not a[3:]:
                    raise
                os.setxattr(fd, a[3], value(a[2]))
            os.close(fd)
        elif op == "untag":  # file name: a stale lock's tag, required
            os.removexattr(a[0], a[1])
        elif op == "untag_opt":  # file name: an optional tag dropped, missing is fine
            try:
                os.removexattr(a[0], a[1])
            except OSError:
                pass
        elif op == "gettag":  # file name: required
            os.getxattr(a[0], a[1])
        elif op == "gettag_opt":  # name files...: optional, missing is fine
            for path in a[1:]:
                try:
                    os.getxattr(path, a[0])
                except OSError:
                    pass
        # --- inode flags
        elif op == "truncate":  # file: the log emptied in place
            os.truncate(a[0], 0)
        # --- leases, pipes, seals
        elif op == "lease":  # file [fallback]: a read lease, to learn when a writer comes
            fd = os.open(a[0], os.O_RDONLY)
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            except PermissionError:
                if not a[1:]:
                    raise
            os.read(fd, 4096)
            os.close(fd)
        elif op == "pipe":  # bytes size: the log pipe filled, then resized
            r, w = os.pipe()
            os.write(w, b"l" * int(a[0]))
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, int(a[1]))
            os.read(r, int(a[0]))
            held.append(r)
            held.append(w)
        elif op == "buffer":  # name memfd|file bytes: the shared buffer
            if a[1] == "memfd":
                fd = os.memfd_create(a[0], os.MFD_ALLOW_SEALING)
            else:
                fd = os.open(os.path.join(base, a[0]), os.O_RDWR | os.O_CREAT, 0o600)
            os.write(fd, b"b" * int(a[2]))
            buffers[a[0]] = fd
        elif op == "seal":  # name seals: the producer's seals (grow,shrink,write)
            bits = {"grow": fcntl.F_SEAL_GROW, "shrink": fcntl.F_SEAL_SHRINK, "write": fcntl.F_SEAL_WRITE}
            seals = 0
            for s in a[1].split(","):
                seals |= bits[s]
            fcntl.fcntl(buffers[a[0]], fcntl.F_ADD_SEALS, seals)
        elif op == "append":  # name bytes: the job's records appended to the buffer
            os.write(buffers[a[0]], b"r" * int(a[1]))
        elif op == "sync":  # file: the job's checkpoint written and made durable
            fd = os.open(a[0], os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"checkpoint\n")
            os.fdatasync(fd)
            os.close(fd)
        # --- bpf, keys
        elif op == "bpf_map":  # entries: the runtime's BPF hash map
            attr = (ctypes.c_uint32 * 30)(1, 4, 8, int(a[0]))  # BPF_MAP_TYPE_HASH, key 4, value 8
            held.append(syscall(SYS_bpf, 0, attr, ctypes.sizeof(attr)))
        elif op == "keys":  # payload-file count: tokens in a session keyring of the job's own
            syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
            payload = value(a[0])
            for i in range(int(a[1])):
                syscall(SYS_add_key, b"user", f"job:token{i}".encode(), payload, len(payload),
                        ctypes.c_int(KEY_SPEC_SESSION_KEYRING))
        elif op == "key_opt":  # payload-file: a cache key, optional (over quota: the cache stays on disk)
            syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
            payload = value(a[0])
            try:
                syscall(SYS_add_key, b"user", b"job:cache", payload, len(payload),
                        ctypes.c_int(KEY_SPEC_SESSION_KEYRING))
            except OSError:
                pass
        elif op == "run":  # argv...: a tool the job runs
            subprocess.run(a, stdout=subprocess.DEVNULL, check=True)
        else:
            die(f"unknown step {op}")
    except OSError as e:
        die(f"{op} {a[0] if a else ''}: {e.strerror}")
for fd in held:
    os.close(fd)
print("cred: ready")
'''

SANDBOX_C = r'''
/* sandbox POLICY PROGRAM ARGS...: the job's launcher confines it with a seccomp filter read
 * from POLICY (lines "syscall-number errno-number": each listed call fails with that errno,
 * every other call is allowed), then execs PROGRAM. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct sock_filter prog[130];
    int n = 0, nr, err, rules = 0, nrs[64], errs[64];
    FILE *fh;
    if (argc < 3) { fprintf(stderr, "usage: sandbox POLICY PROGRAM ARGS...\n"); return 2; }
    if (!(fh = fopen(argv[1], "r"))) { perror(argv[1]); return 2; }
    while (rules < 64 && fscanf(fh, "%d %d", &nr, &err) == 2) { nrs[rules] = nr; errs[rules] = err; rules++; }
    fclose(fh);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (int i = 0; i < rules; i++) {
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nrs[i], 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (errs[i] & SECCOMP_RET_DATA));
    }
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = { .len = (unsigned short)n, .filter = prog };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog)) {
        perror("sandbox: seccomp");
        return 2;
    }
    execv(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
}
'''

# x86_64 syscall numbers and errnos of the sandbox's policies
NR = {"fdatasync": 75, "flock": 73, "mkdir": 83, "statx": 332, "ptrace": 101, "kexec_load": 246,
      "acct": 163, "swapon": 167, "reboot": 169}
EPERM, ENOSYS = 1, 38


def _sandbox() -> Path:
    """The launcher, compiled once per session (the same path in every run of a case)."""
    key = hashlib.sha256(SANDBOX_C.encode()).hexdigest()[:16]
    built = ROOT / "_cc15" / key / "sandbox"
    if not built.exists():
        built.parent.mkdir(parents=True, exist_ok=True)
        built.parent.chmod(0o755)
        src = built.parent / "sandbox.c"
        src.write_text(SANDBOX_C)
        tmp = built.parent / ".sandbox.tmp"
        subprocess.run(["gcc", "-O1", "-o", str(tmp), str(src)], check=True, capture_output=True)
        tmp.rename(built)
    return built


def _policy(base: Path, *rules: tuple[str, int]) -> None:
    write(base / "policy", "".join(f"{NR[name]} {err}\n" for name, err in rules))


# --- how a run starts ---------------------------------------------------------------------------
def _cred(b: Path) -> list[str]:
    return [PY3, "-S", f"{b}/cred.py", str(b)]


def _cred_nobody(b: Path) -> list[str]:
    return [*SETPRIV_NOBODY, PY3, "-S", f"{b}/cred.py", str(b)]


def _start(b: Path) -> list[str]:
    """The job's start script: what it runs comes from the run's files, so argv is the same."""
    return ["/bin/sh", f"{b}/start.sh"]


def _usual(base: Path, *mid: str, owner: int | None = None) -> None:
    """What every start does around its own steps: an optional host file probed (missing in
    every run), the job's config read, its output written."""
    write(base / "cred.py", CRED_PY)
    write(base / "job.conf", "ranks 2\n")
    write(base / "plan", "\n".join(["probe /etc/tracebase-cred.conf", f"probe {base}/cred.local",
                                    f"read {base}/job.conf", *mid]) + "\n")
    if owner is not None:  # an unprivileged job's own files
        for p in base.iterdir():
            os.chown(p, owner, owner, follow_symlinks=False)


def _script(base: Path, *lines: str) -> None:
    write(base / "start.sh", "set -e\n" + "\n".join(lines) + "\n")


def _output(base: Path, name: str = "out.dat", text: str = "result 42\n", owner: int | None = None) -> Path:
    out = write(base / name, text)
    if owner is not None:
        os.chown(out, owner, owner)
    return out


def _chattr(*args: str) -> None:
    subprocess.run(["/usr/bin/chattr", *args], check=True, capture_output=True)


def _clear_flags(base: Path) -> None:
    """Teardown of the inode-flag cases: an immutable or append-only file cannot be removed."""
    if base.exists():
        for p in base.iterdir():
            if p.is_file() and not p.is_symlink():
                subprocess.run(["/usr/bin/chattr", "-i", "-a", str(p)], capture_output=True)


# --- extended attributes --------------------------------------------------------------------------
def tag_too_big(base: Path, bad: bool) -> None:
    # the checksum list has one line per chunk; the bad run's input has 5000 chunks
    _output(base)
    write(base / "sums", "".join(f"{i:08d} {'0' * 64}\n" for i in range(5000 if bad else 20)))
    _usual(base, f"tag {base}/out.dat user.checksums @{base}/sums")


def tag_no_space(base: Path, bad: bool) -> None:
    # the provenance (the job's resolved config, inline) outgrows one ext4 block in the bad run
    _output(base)
    write(base / "prov", "".join(f"param{i}=value{i}\n" for i in range(400 if bad else 10)))
    _usual(base, f"tag {base}/out.dat user.provenance @{base}/prov")


def tag_create_exists(base: Path, bad: bool) -> None:
    # the bad run's output is a copy of an earlier one, tag and all (cp --preserve=xattr)
    out = _output(base)
    if bad:
        os.setxattr(out, "user.job", b"run-0041")
    _usual(base, f"tag {base}/out.dat user.job run-0042 create")


def tag_replace_missing(base: Path, bad: bool) -> None:
    # the job bumps the generation tag the producer set; the bad run's input came untagged
    out = _output(base)
    if not bad:
        os.setxattr(out, "user.generation", b"6")
    _usual(base, f"tag {base}/out.dat user.generation 7 replace")


def tag_symlink(base: Path, bad: bool) -> None:
    # the bad run's output is a symlink to the shared copy (a user tag on a link: EPERM)
    if bad:
        _output(base, "shared.dat")
        (base / "out.dat").symlink_to("shared.dat")
    else:
        _output(base)
    _usual(base, f"ltag {base}/out.dat user.job run-0042")


def trusted_tag_nobody(base: Path, bad: bool) -> None:
    # the job (its own account) tags its output in the namespace its config names; the bad
    # config was copied from a root-run service: trusted.*
    _output(base, owner=NOBODY_UID)
    ns = "trusted" if bad else "user"
    _usual(base, f"ftag {base}/out.dat {ns}.job run-0042", owner=NOBODY_UID)


def untag_missing(base: Path, bad: bool) -> None:
    # the job clears the lock tag its previous attempt left; in the bad run nothing set it
    out = _output(base)
    if not bad:
        os.setxattr(out, "user.lock", b"host-3:pid-771")
    _usual(base, f"untag {base}/out.dat user.lock")


def required_tag_among_optional(base: Path, bad: bool) -> None:
    # the parts' optional checksums are missing in every run (ENODATA); the output's required
    # generation tag is missing in the bad run: a fourth getxattr ENODATA, fatal
    parts = [_output(base, f"part{i}.dat") for i in range(3)]
    out = _output(base)
    if not bad:
        os.setxattr(out, "user.generation", b"6")
    _usual(base, f"gettag_opt user.checksum {' '.join(map(str, parts))}", f"gettag {base}/out.dat user.generation")


def required_tag_after_optional_same_file(base: Path, bad: bool) -> None:
    # on one file: the optional cache tag is missing in every run (getxattr ENODATA), the
    # required generation tag right after is missing in the bad run -- the same call, path and
    # errno as the routine miss (the tag's name is not in the trace), then the job stops
    out = _output(base)
    if not bad:
        os.setxattr(out, "user.generation", b"6")
    _usual(base, f"gettag_opt user.cache {base}/out.dat", f"gettag {base}/out.dat user.generation")


def stale_lock_after_optional_untag(base: Path, bad: bool) -> None:
    # the job drops its optional cache tag (missing in every run: removexattr ENODATA, fine),
    # then the lock tag its previous attempt left, required -- missing in the bad run
    out = _output(base)
    if not bad:
        os.setxattr(out, "user.lock", b"host-3:pid-771")
    _usual(base, f"untag_opt {base}/out.dat user.cache", f"untag {base}/out.dat user.lock")


# --- inode flags ----------------------------------------------------------------------------------
def log_immutable(base: Path, bad: bool) -> None:
    # an administrator froze the log (chattr +i) after an incident; the job rotates it with mv
    write(base / "job.log", "line\n" * 50)
    _usual(base)
    _script(base, f"/usr/bin/mv {base}/job.log {base}/job.log.1", f"exec {PY3} -S {base}/cred.py {base}")
    if bad:
        _chattr("+i", str(base / "job.log"))


def sticky_spool_target(base: Path, bad: bool) -> None:
    # the job (its own account) publishes its output into a shared spool (mode 1777, like
    # /tmp) over its previous one; in the bad run that name holds root's file: mv's rename
    # over it is EPERM, about the target (the sticky bit protects root's file)
    work = base / "work"
    work.mkdir()
    _output(base, "work/out.tmp", owner=NOBODY_UID)
    os.chown(work, NOBODY_UID, NOBODY_UID)
    spool = base / "spool"
    spool.mkdir()
    spool.chmod(0o1777)
    _output(base, "spool/out.dat", "previous\n", owner=0 if bad else NOBODY_UID)
    _usual(base)
    _script(base, f"{' '.join(SETPRIV_NOBODY)} /usr/bin/mv {work}/out.tmp {spool}/out.dat",
            f"exec {PY3} -S {base}/cred.py {base}")


def log_append_only(base: Path, bad: bool) -> None:
    # the bad host's log is append-only (chattr +a): emptying it in place is refused
    write(base / "job.log", "line\n" * 50)
    _usual(base, f"truncate {base}/job.log")
    if bad:
        _chattr("+a", str(base / "job.log"))


def tag_immutable(base: Path, bad: bool) -> None:
    # the output the job tags was frozen (chattr +i) by the archiver in the bad run
    _output(base)
    _usual(base, f"tag {base}/out.dat user.job run-0042")
    if bad:
        _chattr("+i", str(base / "out.dat"))


# --- leases, pipes, seals -------------------------------------------------------------------------
def lease_not_owner(base: Path, bad: bool) -> None:
    # the job (its own account) leases its input to learn of writers; the bad run's input
    # belongs to root (restored from a backup as root)
    inp = write(base / "input.dat", "rows\n" * 100)
    _usual(base, f"lease {base}/input.dat", owner=NOBODY_UID)
    if bad:
        os.chown(inp, 0, 0)


def pipe_shrink_busy(base: Path, bad: bool) -> None:
    # the job's log pipe is shrunk to one page after start-up; the bad run logged more first
    _usual(base, f"pipe {9000 if bad else 2000} 4096")


def buffer_sealed(base: Path, bad: bool) -> None:
    # the producer's seals come from its config: the bad one also seals writes
    # (no F_SEAL_GROW: the job's append grows the buffer)
    _usual(base, "buffer ring memfd 4096", f"seal ring {'shrink,write' if bad else 'shrink'}", "append ring 512")


def seal_plain_file(base: Path, bad: bool) -> None:
    # the bad config's runtime falls back from memfd to a file in the job's dir (a container
    # without memfd in its seccomp profile): seals on ext4 are EINVAL
    _usual(base, f"buffer ring {'file' if bad else 'memfd'} 4096", "seal ring grow,shrink")


# --- seccomp --------------------------------------------------------------------------------------
def sandbox_fdatasync(base: Path, bad: bool) -> None:
    # the bad host's policy (a newer profile) refuses fdatasync
    _usual(base, f"sync {base}/ckpt")
    _policy(base, ("ptrace", EPERM), *([("fdatasync", ENOSYS)] if bad else []))
    _script(base, f"exec {_sandbox()} {base}/policy {PY3} -S {base}/cred.py {base}")


def sandbox_fdatasync_among_statx(base: Path, bad: bool) -> None:
    # the policy refuses statx ENOSYS in every run (ls falls back to fstatat); the bad host's
    # also refuses fdatasync: the same errno, on a call the job cannot do without
    for i in range(3):
        _output(base, f"part{i}.dat")
    _usual(base, f"sync {base}/ckpt")
    _policy(base, ("statx", ENOSYS), *([("fdatasync", ENOSYS)] if bad else []))
    _script(base, f"{_sandbox()} {base}/policy /usr/bin/ls -l {base}",
            f"exec {_sandbox()} {base}/policy {PY3} -S {base}/cred.py {base}")


def sandbox_flock(base: Path, bad: bool) -> None:
    _usual(base)
    write(base / "job.lock", "")
    _policy(base, ("ptrace", EPERM), *([("flock", EPERM)] if bad else []))
    _script(base, f"exec {_sandbox()} {base}/policy /usr/bin/flock {base}/job.lock "
            f"{PY3} -S {base}/cred.py {base}")


def sandbox_mkdir(base: Path, bad: bool) -> None:
    _usual(base)
    _policy(base, ("ptrace", EPERM), *([("mkdir", ENOSYS)] if bad else []))
    # relative to the job's dir: mkdir -p's first mkdir is out's (absolute: /tmp's, EEXIST)
    _script(base, f"cd {base}", f"{_sandbox()} {base}/policy /usr/bin/mkdir -p out/shard0",
            f"exec {PY3} -S {base}/cred.py {base}")


# --- capabilities ---------------------------------------------------------------------------------
def _capsh(base: Path, drop: str, then: str) -> None:
    write(base / "drop", drop + "\n")
    _script(base, f'exec /usr/sbin/capsh --drop="$(cat {base}/drop)" -- -c "{then}"')


def caps_bpf(base: Path, bad: bool) -> None:
    # the bad host's wrapper drops CAP_BPF and CAP_SYS_ADMIN as well
    _usual(base, "bpf_map 64")
    _capsh(base, "cap_sys_time,cap_bpf,cap_sys_admin" if bad else "cap_sys_time",
           f"exec {PY3} -S {base}/cred.py {base}")


def caps_syslog(base: Path, bad: bool) -> None:
    # the job's start-up logs the kernel's last lines; the bad wrapper drops CAP_SYSLOG
    _usual(base)
    _capsh(base, "cap_sys_time,cap_syslog" if bad else "cap_sys_time",
           f"/usr/bin/dmesg >/dev/null; exec {PY3} -S {base}/cred.py {base}")


# --- keys -----------------------------------------------------------------------------------------
def key_quota(base: Path, bad: bool) -> None:
    # the job (its own account) keeps its credential in a session keyring; the bad run's
    # credential (a certificate chain) is past the 20000-byte quota of an unprivileged user
    write(base / "token", "k" * (25000 if bad else 1000))
    _usual(base, f"keys @{base}/token 1", owner=NOBODY_UID)


def key_quota_after_optional(base: Path, bad: bool) -> None:
    # the job's optional cache key is past the quota in every run (add_key EDQUOT, the cache
    # stays on disk); its required token is too in the bad run: a second add_key EDQUOT, a
    # call without a path, the same errno as the routine one
    write(base / "cache", "c" * 25000)
    write(base / "token", "k" * (25000 if bad else 1000))
    _usual(base, f"key_opt @{base}/cache", f"keys @{base}/token 1", owner=NOBODY_UID)


def _no_flags(base: Path) -> None:
    _clear_flags(base)


REAL_FIFTEENTH: list[Scenario] = [
    Scenario("checksum_tag_past_value_limit", "python3 cred: setxattr user.checksums (5000 lines)",
             _cred, tag_too_big, frozenset({"setxattr"}), "E2BIG", lambda b: f"{b}/out.dat",
             description="a checksum list past the 64 KiB value limit: setxattr E2BIG"),
    Scenario("provenance_tag_past_ext4_block", "python3 cred: setxattr user.provenance (400 lines)",
             _cred, tag_no_space, frozenset({"setxattr"}), "ENOSPC", lambda b: f"{b}/out.dat",
             description="a provenance past what one ext4 block holds: setxattr ENOSPC"),
    Scenario("tag_created_on_a_copied_output", "python3 cred: setxattr XATTR_CREATE",
             _cred, tag_create_exists, frozenset({"setxattr"}), "EEXIST", lambda b: f"{b}/out.dat",
             description="the output is a copy with the tag already set: XATTR_CREATE EEXIST"),
    Scenario("tag_replaced_on_an_untagged_input", "python3 cred: setxattr XATTR_REPLACE",
             _cred, tag_replace_missing, frozenset({"setxattr"}), "ENODATA", lambda b: f"{b}/out.dat",
             description="the producer did not tag the input: XATTR_REPLACE ENODATA"),
    Scenario("user_tag_on_a_symlinked_output", "python3 cred: lsetxattr user.job",
             _cred, tag_symlink, frozenset({"lsetxattr"}), "EPERM", lambda b: f"{b}/out.dat",
             description="the output is a symlink; user.* tags on links are refused: lsetxattr EPERM"),
    Scenario("trusted_tag_as_nobody", "python3 cred (nobody): fsetxattr trusted.job",
             _cred_nobody, trusted_tag_nobody, frozenset({"fsetxattr"}), "EPERM", lambda b: "*",
             description="the config names the trusted namespace; the job has no CAP_SYS_ADMIN: fsetxattr EPERM"),
    Scenario("stale_lock_tag_never_set", "python3 cred: removexattr user.lock",
             _cred, untag_missing, frozenset({"removexattr"}), "ENODATA", lambda b: f"{b}/out.dat",
             description="the lock tag the job clears was never set: removexattr ENODATA"),
    Scenario("required_tag_missing_among_optional_ones", "python3 cred: getxattr user.checksum x3, user.generation",
             _cred, required_tag_among_optional, frozenset({"getxattr"}), "ENODATA", lambda b: f"{b}/out.dat",
             description="three optional tags missing in every run; the required one missing in the bad run"),
    Scenario("required_tag_missing_after_optional_on_same_file", "python3 cred: getxattr user.cache, user.generation",
             _cred, required_tag_after_optional_same_file, frozenset({"getxattr"}), "ENODATA",
             lambda b: f"{b}/out.dat",
             description="the optional tag is missing in every run; the required one on the same file in the bad "
             "run: a second getxattr ENODATA at the same path"),
    Scenario("lock_tag_missing_after_optional_untag", "python3 cred: removexattr user.cache, user.lock",
             _cred, stale_lock_after_optional_untag, frozenset({"removexattr"}), "ENODATA", lambda b: f"{b}/out.dat",
             description="removexattr ENODATA of the optional tag in every run; of the required lock tag in the "
             "bad run, on the same file"),
    Scenario("rotation_of_an_immutable_log", "mv job.log job.log.1 (start.sh)",
             _start, log_immutable, frozenset({"rename", "renameat", "renameat2"}), "EPERM",
             lambda b: f"{b}/job.log", teardown=_no_flags,
             description="chattr +i on the log: mv's rename EPERM"),
    Scenario("publish_over_roots_file_in_a_sticky_spool", "mv (nobody) over root's file in a 1777 spool",
             _start, sticky_spool_target, frozenset({"rename", "renameat", "renameat2"}), "EPERM",
             lambda b: f"{b}/spool/out.dat",
             description="the spool's name holds root's file; the sticky bit refuses the replace: rename EPERM"),
    Scenario("append_only_log_truncated", "python3 cred: truncate job.log",
             _cred, log_append_only, frozenset({"truncate"}), "EPERM", lambda b: f"{b}/job.log",
             teardown=_no_flags, description="chattr +a on the log: truncate EPERM"),
    Scenario("tag_on_an_immutable_output", "python3 cred: setxattr on a chattr +i file",
             _cred, tag_immutable, frozenset({"setxattr"}), "EPERM", lambda b: f"{b}/out.dat",
             teardown=_no_flags, description="the archiver froze the output: setxattr EPERM"),
    Scenario("read_lease_on_roots_file", "python3 cred (nobody): fcntl F_SETLEASE",
             _cred_nobody, lease_not_owner, frozenset({"fcntl"}), "EACCES", lambda b: "*",
             description="the input belongs to root; a lease needs the owner or CAP_LEASE: fcntl EACCES"),
    Scenario("log_pipe_shrunk_below_its_data", "python3 cred: fcntl F_SETPIPE_SZ 4096",
             _cred, pipe_shrink_busy, frozenset({"fcntl"}), "EBUSY", lambda b: "*",
             description="9000 bytes in the pipe, one page asked: fcntl F_SETPIPE_SZ EBUSY"),
    Scenario("append_to_a_write_sealed_buffer", "python3 cred: write to a memfd with F_SEAL_WRITE",
             _cred, buffer_sealed, frozenset({"write"}), "EPERM", lambda b: "*",
             description="the producer sealed writes too: the job's append is write EPERM"),
    Scenario("seals_on_a_plain_file", "python3 cred: fcntl F_ADD_SEALS on an ext4 file",
             _cred, seal_plain_file, frozenset({"fcntl"}), "EINVAL", lambda b: "*",
             description="the runtime fell back from memfd to a file: F_ADD_SEALS EINVAL"),
    Scenario("sandbox_refuses_fdatasync", "sandbox (seccomp) python3 cred: fdatasync",
             _start, sandbox_fdatasync, frozenset({"fdatasync"}), "ENOSYS", lambda b: "*",
             description="the launcher's policy refuses fdatasync: ENOSYS at the checkpoint"),
    Scenario("sandbox_refuses_fdatasync_among_statx", "sandbox (seccomp: statx, fdatasync) ls -l, python3 cred",
             _start, sandbox_fdatasync_among_statx, frozenset({"fdatasync"}), "ENOSYS", lambda b: "*",
             description="statx ENOSYS in every run (ls falls back); fdatasync ENOSYS too in the bad run"),
    Scenario("sandbox_refuses_flock", "flock job.lock under sandbox (seccomp)",
             _start, sandbox_flock, frozenset({"flock"}), "EPERM", lambda b: "*",
             description="the launcher's policy refuses flock: util-linux flock's lock EPERM"),
    Scenario("sandbox_refuses_mkdir", "mkdir -p under sandbox (seccomp)",
             _start, sandbox_mkdir, frozenset({"mkdir", "mkdirat"}), "ENOSYS", lambda b: "*out",
             description="the launcher's policy refuses mkdir: mkdir -p's first mkdir ENOSYS"),
    Scenario("bpf_map_without_cap_bpf", "capsh --drop=...cap_bpf python3 cred: bpf(BPF_MAP_CREATE)",
             _start, caps_bpf, frozenset({"bpf"}), "EPERM", lambda b: "*",
             description="the wrapper dropped CAP_BPF and CAP_SYS_ADMIN: bpf EPERM"),
    Scenario("dmesg_without_cap_syslog", "capsh --drop=...cap_syslog dmesg",
             _start, caps_syslog, frozenset({"openat", "open"}), "EPERM", lambda b: "/dev/kmsg",
             description="kernel.dmesg_restrict=1 and no CAP_SYSLOG: dmesg's open of /dev/kmsg EPERM"),
    Scenario("session_key_past_user_quota", "python3 cred (nobody): add_key 25000 bytes",
             _cred_nobody, key_quota, frozenset({"add_key"}), "EDQUOT", lambda b: "*",
             description="a credential past kernel.keys.maxbytes of an unprivileged user: add_key EDQUOT"),
    Scenario("session_key_past_quota_after_optional_cache_key", "python3 cred (nobody): add_key cache, add_key token",
             _cred_nobody, key_quota_after_optional, frozenset({"add_key"}), "EDQUOT", lambda b: "*",
             description="the optional cache key refused EDQUOT in every run; the required token too in the bad run"),
]


# --- good-vs-good noise ---------------------------------------------------------------------------
def _big_tags(base: Path, run: int) -> None:
    out = _output(base)
    os.setxattr(out, "user.provenance", b"p" * random.choice([300, 1200, 3000]))
    _usual(base, f"gettag {base}/out.dat user.provenance")


def _optional_tags(base: Path, run: int) -> None:
    files = [_output(base, f"part{i}.dat") for i in range(random.choice([1, 2, 4]))]
    _usual(base, f"gettag_opt user.checksum {' '.join(map(str, files))}")


def _upsert(base: Path, run: int) -> None:
    out = _output(base)
    os.setxattr(out, "user.job", b"run-0041")
    _usual(base, f"tag_upsert {base}/out.dat user.job run-{42 + run:04d}")


def _statx_refused(base: Path, run: int) -> None:
    for i in range(random.choice([1, 3, 5])):
        _output(base, f"part{i}.dat")
    _usual(base)
    _policy(base, ("statx", ENOSYS))
    _script(base, f"{_sandbox()} {base}/policy /usr/bin/ls -l {base}", f"exec {PY3} -S {base}/cred.py {base}")


def _namespace_fallback_once(base: Path, run: int) -> None:
    # the job tries its config's namespace and falls back to user.* when refused; the last
    # host's config names trusted.*, refused to the job's account: the same call on the same
    # file succeeds right after, and the run goes on as the others did
    _output(base, owner=NOBODY_UID)
    ns = "trusted" if run == 2 else "user"
    _usual(base, f"ftag {base}/out.dat {ns}.job run-0042 user.job", owner=NOBODY_UID)


def _caps_vary(base: Path, run: int) -> None:
    _usual(base, f"tag {base}/out.dat user.job run-0042")
    _output(base)
    _capsh(base, random.choice(["cap_sys_time", "cap_sys_time,cap_wake_alarm", "cap_audit_write,cap_sys_boot"]),
           f"exec {PY3} -S {base}/cred.py {base}")


def _lease_fallback(base: Path, run: int) -> None:
    # the input belongs to root in every run: the lease is refused, the job reads it anyway
    write(base / "input.dat", "rows\n" * random.choice([10, 100, 1000]))
    _usual(base, f"lease {base}/input.dat fallback")


def _pipe_sizes(base: Path, run: int) -> None:
    _usual(base, f"pipe {random.choice([100, 2000, 4000])} {random.choice([8192, 65536, 262144])}")


def _keys_vary(base: Path, run: int) -> None:
    write(base / "token", "k" * random.choice([64, 256, 1000]))
    _usual(base, f"keys @{base}/token {random.choice([1, 2, 4])}")


def _sealed_buffers(base: Path, run: int) -> None:
    steps = []
    for i in range(random.choice([1, 2, 3])):
        steps += [f"buffer ring{i} memfd {random.choice([1024, 4096, 65536])}", f"append ring{i} 256",
                  f"seal ring{i} grow,shrink,write"]
    _usual(base, *steps)


def _lsattr_vary(base: Path, run: int) -> None:
    for i in range(random.choice([2, 4, 6])):
        _output(base, f"part{i}.dat")
    _usual(base)
    _script(base, f"/usr/bin/lsattr {base} >/dev/null", f"exec {PY3} -S {base}/cred.py {base}")


def _policy_vary(base: Path, run: int) -> None:
    _usual(base, f"sync {base}/ckpt")
    rules = [("ptrace", EPERM), ("kexec_load", EPERM), ("acct", EPERM), ("swapon", EPERM), ("reboot", EPERM)]
    _policy(base, *rules[:random.choice([1, 3, 5])])
    _script(base, f"exec {_sandbox()} {base}/policy {PY3} -S {base}/cred.py {base}")


QUIET_FIFTEENTH: list[NoAnomalyCase] = [
    NoAnomalyCase("tag_sizes_vary_getxattr_retries", _cred, _big_tags,
                  description="a 300 to 3000 byte tag read: getxattr ERANGE on Python's first buffer, then read"),
    NoAnomalyCase("optional_tags_probed_on_varying_parts", _cred, _optional_tags,
                  description="user.checksum looked up and missing (ENODATA) on 1 to 4 files"),
    NoAnomalyCase("tag_create_refused_then_replaced", _cred, _upsert,
                  description="XATTR_CREATE EEXIST in every run, then XATTR_REPLACE"),
    NoAnomalyCase("sandbox_statx_refused_every_run", _start, _statx_refused,
                  description="the policy refuses statx ENOSYS in every run; ls falls back; 1 to 5 files"),
    NoAnomalyCase("tag_namespace_refused_once_then_user", _cred_nobody, _namespace_fallback_once,
                  description="fsetxattr trusted.* EPERM in the last run only, user.* taken right after on "
                  "the same file (a retry that succeeds: recovered)"),
    NoAnomalyCase("capsh_drops_vary", _start, _caps_vary,
                  description="capsh drops varying capabilities the job never uses"),
    NoAnomalyCase("lease_refused_every_run", _cred_nobody, _lease_fallback,
                  description="F_SETLEASE EACCES as nobody on root's input in every run; read anyway"),
    NoAnomalyCase("pipe_sizes_vary", _cred, _pipe_sizes, description="F_SETPIPE_SZ to 8 KiB .. 256 KiB"),
    NoAnomalyCase("session_keys_vary", _cred, _keys_vary, description="1 to 4 tokens of 64 to 1000 bytes"),
    NoAnomalyCase("sealed_buffers_vary", _cred, _sealed_buffers, description="1 to 3 memfds filled and sealed"),
    NoAnomalyCase("lsattr_listing_varies", _start, _lsattr_vary, description="lsattr over 2 to 6 files"),
    NoAnomalyCase("sandbox_policy_length_varies", _start, _policy_vary,
                  description="1 to 5 unused calls refused by the sandbox's policy"),
]


def quiet_teardown() -> None:
    """Remove the launcher this session compiled."""
    shutil.rmtree(ROOT / "_cc15", ignore_errors=True)


atexit.register(quiet_teardown)


# Cases repeating a tested case's kind of fault, left to the benchmark (the CI subset stays
# under ~90 s).
TESTED_HERE = frozenset({s.name for s in REAL_FIFTEENTH})
QUIET_TESTED_HERE = frozenset({c.name for c in QUIET_FIFTEENTH})
BENCH_ONLY = frozenset(s.name for s in REAL_FIFTEENTH) - TESTED_HERE
QUIET_BENCH_ONLY = frozenset(c.name for c in QUIET_FIFTEENTH) - QUIET_TESTED_HERE
