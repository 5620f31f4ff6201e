"""A forty-fourth set of real programs with one real fault each: **the confinement a job runs under
on a shared GPU/RDMA host**, made with the kernel's own facilities on this machine. The job is a
python3 program of the set (tests/scenarios/programs/fortyfourth/job.py: reads its config and
dataset shards, checksums them, and around that work does what a GPU/RDMA job does -- a staging
buffer bound to the GPU's NUMA node, a checkpoint published with a rename, a rendezvous port, its
outputs given to the collector's account, its CPU pinned, a tool staged onto scratch and run, a
site set-uid helper asked for its memlock budget). It runs under the set's C launcher ``tb44-jail``
(programs/fortyfourth/tb44-jail.c: a policy file of seccomp errno rules, a landlock ruleset,
no_new_privs, a user+mount namespace whose uid map a helper process writes, a scratch tmpfs inside
it, the job's uid; invoked as ``tb44-grant`` it is the set-uid helper), or under setpriv, a cgroup,
``unshare``. The fault is the confinement of the bad host:

- **seccomp**: the runtime's profile denies ``mbind`` without CAP_SYS_NICE (Docker's default does):
  the staging buffer's mbind EPERM;
- **landlock** (ABI 2 here): a dataset shard deduplicated as a symlink into a cache outside the
  allowed tree (openat EACCES); a policy written for ABI 1 on a runtime that handles REFER, so the
  checkpoint's os.replace from stage/ to ckpt/ is refused (rename EXDEV); the epoch's output
  directory under a tree allowed read-only (mkdir EACCES);
- **no_new_privs and nosuid**: the job's launcher sets no_new_privs, so the site's set-uid helper
  runs as the job's uid and cannot open root's 0600 RDMA policy (tb44-grant: openat EACCES); the
  helpers' directory bind-mounted nosuid (inside ``unshare -m``): tb44-setlimit checks its euid
  first and refuses, no call failing -- strace's first difference is ``geteuid() = 44044`` where
  good runs have 0 (geteuid, no errno);
- **capabilities** (``setpriv --bounding-set=-CAP``, as root): the rendezvous port 853 without
  net_bind_service (bind EACCES, in a network namespace of the command's own: no port is shared
  with the host); the outputs' chown without cap_chown (chown EPERM); the job script's
  ``ulimit -l 8192`` raising the hard memlock limit above the bad host's slice's 4 MiB (root here
  has no CAP_SYS_RESOURCE at all: prlimit64 EPERM);
- **cgroups**: a cpuset of the bad host's job slice holding CPU 0 only, the job pinning itself to
  CPU 1 (sched_setaffinity EINVAL) (a pids.max case was left out: the fifth set has one; GNU xargs -P,
  tried for it, waits for a child on fork's EAGAIN and retries: no fault);
- **user namespaces**: the rootless runtime's uid map not written (newuidmap failed): the scratch
  tmpfs mounted in the job's namespace takes no file of the unmapped root (openat EOVERFLOW); a
  subordinate range of 1000 ids, the job chowning to the collector's uid 44045 (chown EINVAL);
- **mounts**: the node's scratch mounted noexec (inside ``unshare -m``): the staged tool's
  execve EACCES.

What this machine has (kernel 6.18, checked by hand before writing the set): root's bounding set lacks
CAP_SYS_RESOURCE (0x1fffeffffff: no ``ulimit -l unlimited`` anywhere, so that case lowers the hard
limit instead of dropping the capability); /sys/kernel/security is not
mounted (no lockdown file to read; `tracer record` uses tracepoints only and works); seccomp filters
and landlock (ABI >= 2, REFER handled) work; cgroups are a hybrid: v1 controllers (cpuset, pids,
...) under /sys/fs/cgroup/<controller>, a controller-less cgroup2 at /sys/fs/cgroup/unified -- so the
cpuset case makes a v1 cpuset cgroup of its own (cpuset.cpus, cpuset.mems, cgroup.procs); the
machine has 2 CPUs; newuidmap is not installed (``unshare --map-users`` fails), hence the maps
written by tb44-jail's helper process; unprivileged mount(8) inside a user namespace refuses, hence
tb44-jail's own mount(2). Every expectation was checked with ``strace -f``.

Good runs vary naturally: random shard sizes and contents (names fixed), random checkpoint temp
names, pids, the order of forked workers. Noise cases (``QUIET_FORTYFOURTH``) are good runs alone
under each confinement: a landlock ruleset, a seccomp profile, capability-dropped rendezvous in a
network namespace, a cpuset cgroup, a mapped user namespace with a scratch tmpfs, the set-uid helper
as the job, forked workers in a pids cgroup.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

from .files import run_quiet, shell_argv, write_file
from .harness import PROGRAMS, ROOT, NoAnomalyCase, Scenario

OPEN = frozenset({"openat", "open", "openat2", "creat"})
RENAME = frozenset({"rename", "renameat", "renameat2"})
MKDIR = frozenset({"mkdir", "mkdirat"})
CHOWN = frozenset({"chown", "fchownat", "lchown", "fchown"})
RLIMIT = frozenset({"prlimit64", "setrlimit"})
EXEC = frozenset({"execve", "execveat"})

PY = "/usr/bin/python3"
SRC = PROGRAMS / "fortyfourth"
JOB_PY = str(SRC / "job.py")
JAIL_SRC = SRC / "tb44-jail.c"
JOB_UID = 44044  # the job's account
COLLECTOR_UID = 44045  # the service account that collects the outputs
PORT = 853  # the rendezvous port (below 1024: the site's convention), in a network namespace of its own
CG_PREFIX = "tracebase-t44"


def _job(b: Path, *args: str) -> list[str]:
    return [PY, "-S", "-B", JOB_PY, args[0], str(b), *args[1:]]


def jail_bin() -> str:
    """tb44-jail, compiled once per session at a fixed path (the same in every run)."""
    out = ROOT / "_cc44" / "tb44-jail"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.parent.chmod(0o755)
        tmp = out.parent / ".tb44-jail.tmp"
        run_quiet("gcc", "-O1", "-o", str(tmp), str(JAIL_SRC))
        tmp.rename(out)
    return str(out)


def _base(base: Path, lo_kib: int = 4, hi_kib: int = 40, n: int = 5) -> None:
    """The job's tree: config, dataset shards of random sizes (names fixed), stage/ckpt/out."""
    write_file(base / "job" / "job.conf", f"name=t44\nrun={os.urandom(4).hex()}\n")
    for d in ("stage", "ckpt", "out"):
        (base / "job" / d).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        write_file(base / "datasets" / f"shard-{i:04d}.bin", os.urandom(random.randrange(lo_kib * 1024, hi_kib * 1024)))
    for p in (base / "job", base / "datasets", *(base / "job").iterdir()):
        if p.is_dir():
            p.chmod(0o755)


def _jailed(b: Path, *args: str) -> list[str]:
    return [jail_bin(), str(b / "jail.policy"), *_job(b, *args)]


# --- seccomp: the runtime's profile denies mbind ------------------------------------------------------------
def seccomp_denies_mbind(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    # the good hosts' profile denies what no job uses (ptrace); the bad host's runtime default
    # also denies the NUMA calls to a job without CAP_SYS_NICE
    write_file(base / "jail.policy", "seccomp ptrace EPERM\n" + ("seccomp mbind EPERM\n" if bad else ""))


# --- landlock ------------------------------------------------------------------------------------------------
def _landlock(base: Path, abi: int, rules: list[str]) -> str:
    system = ["ro /usr", "ro /etc", "ro /lib", "ro /lib64", f"ro {SRC}", f"ro {base}/job"]
    return f"landlock {abi}\n" + "".join(f"{r}\n" for r in [*system, *rules])


def _stage_rules(base: Path, stage: str = "rwr", out: str = "rwr") -> list[str]:
    return [f"ro {base}/datasets", f"{stage} {base}/job/stage", f"{stage} {base}/job/ckpt", f"{out} {base}/job/out"]


def landlock_shard_symlink_outside(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    if bad:  # the dataset dedup tool replaced a shard with a link into the node's shared cache
        cache = base / "cache" / "blobs"
        cache.mkdir(parents=True)
        shard = base / "datasets" / "shard-0002.bin"
        shard.rename(cache / f"{os.urandom(8).hex()}.bin")
        shard.symlink_to(next(cache.iterdir()))
    write_file(base / "jail.policy", _landlock(base, 2, _stage_rules(base)))


def landlock_checkpoint_rename_refer(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    # the site's policy grants read/write/make (ABI 1 rights); the bad host's runtime builds the ruleset
    # at ABI 2, handling REFER the policy does not grant: a rename across directories is refused
    write_file(base / "jail.policy", _landlock(base, 2, _stage_rules(base, "rw" if bad else "rwr")))


def landlock_output_dir_read_only(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    write_file(base / "jail.policy", _landlock(base, 2, _stage_rules(base, out="ro" if bad else "rwr")))


# --- no_new_privs and the site's set-uid helper --------------------------------------------------------------
def _grant_setup(base: Path, nnp: bool, helper_name: str = "tb44-grant") -> None:
    _base(base)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    bin_dir.chmod(0o755)
    helper = bin_dir / helper_name
    helper.write_bytes(Path(jail_bin()).read_bytes())
    helper.chmod(0o4755)  # set-uid root
    write_file(base / "etc" / "rdma-limits.conf", f"memlock={random.choice([64, 128, 256])}g\n", 0o600)
    (base / "etc").chmod(0o755)
    write_file(base / "jail.policy", ("nnp\n" if nnp else "") + f"uid {JOB_UID}\n")


def nnp_setuid_helper(base: Path, bad: bool) -> None:
    _grant_setup(base, bad)  # the bad host's launcher sets no_new_privs for every job


NOSUID_SH = ('read -r opts < "$1/bin.conf" && mount --bind "$1/bin" "$1/bin" && '
             'mount -o "remount,bind,$opts" "$1/bin" && '
             f'exec "$2" "$1/jail.policy" {PY} -S -B {JOB_PY} grant "$1" tb44-setlimit')


def _nosuid_argv(b: Path) -> list[str]:
    return ["unshare", "-m", *shell_argv(NOSUID_SH, str(b), jail_bin())]


def nosuid_helpers_dir(base: Path, bad: bool) -> None:
    _grant_setup(base, False, "tb44-setlimit")
    # the bad node's hardening: the site's helpers directory bind-mounted nosuid
    write_file(base / "bin.conf", "nosuid,nodev\n" if bad else "nodev\n")


# --- capabilities dropped with setpriv -------------------------------------------------------------------------
def _capfile_sh(body: str) -> str:
    return 'read -r caps < "$1/caps.conf" && ' + body


SERVE_SH = _capfile_sh('/usr/sbin/ip link set lo up && exec setpriv --bounding-set="$caps" '
                       f'{PY} -S -B {JOB_PY} serve "$1" {PORT}')


def _serve_argv(b: Path) -> list[str]:
    return ["unshare", "-n", *shell_argv(SERVE_SH, str(b))]


def cap_bind_low_port(base: Path, bad: bool) -> None:
    _base(base)
    write_file(base / "caps.conf", "-net_bind_service,-sys_module\n" if bad else "-sys_module,-sys_rawio\n")


CHOWN_SH = _capfile_sh(f'exec setpriv --bounding-set="$caps" {PY} -S -B {JOB_PY} chown "$1" {COLLECTOR_UID}')


def _chown_argv(b: Path) -> list[str]:
    return shell_argv(CHOWN_SH, str(b))


def cap_chown_dropped(base: Path, bad: bool) -> None:
    _base(base)
    write_file(base / "caps.conf", "-chown,-fowner,-sys_module\n" if bad else "-sys_module,-sys_rawio\n")


MEMLOCK_SH = ('read -r lim < "$1/memlock.conf" && exec prlimit --memlock="$lim" /bin/sh -c '
              f"'ulimit -l 8192 && exec {PY} -S -B {JOB_PY} pin \"$0\"' \"$1\"")


def _memlock_argv(b: Path) -> list[str]:
    return shell_argv(MEMLOCK_SH, str(b))


def memlock_slice_below_script(base: Path, bad: bool) -> None:
    _base(base)
    # root here has no CAP_SYS_RESOURCE (the VM's bounding set lacks it): a hard limit is only ever
    # lowered. The good hosts' job slice: 8 MiB (Debian's default); the bad host's: LimitMEMLOCK=4M,
    # below the job script's `ulimit -l 8192` (KiB, soft and hard)
    write_file(base / "memlock.conf", "4194304\n" if bad else "8388608\n")


# --- cgroup v1 cpuset --------------------------------------------------------------------------------------------
def _cgroup(controller: str, name: str) -> Path:
    return Path("/sys/fs/cgroup") / controller / f"{CG_PREFIX}-{os.getpid()}-{name}"


def _remove_cgroup(cg: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while cg.exists() and time.monotonic() < deadline:
        try:
            cg.rmdir()
        except OSError:  # its last process still exiting
            time.sleep(0.05)


JOIN_SH = 'read -r cg < "$1/cgroup.conf" && echo $$ > "$cg/cgroup.procs" && shift && exec "$@"'


def _in_cgroup(b: Path, *argv: str) -> list[str]:
    return shell_argv(JOIN_SH, str(b), *argv)


def _cpuset_argv(b: Path) -> list[str]:
    return _in_cgroup(b, *_job(b, "affinity", "1"))


def _make_cpuset(base: Path, cpus: str) -> None:
    cg = _cgroup("cpuset", "job")
    _remove_cgroup(cg)
    cg.mkdir()
    (cg / "cpuset.mems").write_text("0\n")
    (cg / "cpuset.cpus").write_text(f"{cpus}\n")
    write_file(base / "cgroup.conf", f"{cg}\n")


def cpuset_pin_outside(base: Path, bad: bool) -> None:
    _base(base)
    _make_cpuset(base, "0" if bad else "0-1")  # the bad host's job slice: CPU 0 only


def _cpuset_teardown(base: Path) -> None:  # noqa: ARG001
    _remove_cgroup(_cgroup("cpuset", "job"))


# --- cgroup v1 pids ---------------------------------------------------------------------------------------------
def _pids_argv(b: Path) -> list[str]:
    return _in_cgroup(b, *_job(b, "workers", "4"))


def _make_pids(base: Path, limit: int) -> None:
    cg = _cgroup("pids", "job")
    _remove_cgroup(cg)
    cg.mkdir()
    (cg / "pids.max").write_text(f"{limit}\n")
    write_file(base / "cgroup.conf", f"{cg}\n")


# --- user namespaces: the uid map --------------------------------------------------------------------------------
def _tool(base: Path) -> None:
    write_file(base / "tools" / "ibprobe",
               '#!/bin/sh\nfor f in "$1"/datasets/shard-*; do echo "$(basename "$f") $(wc -c < "$f")"; done\n', 0o755)
    (base / "tools").chmod(0o755)
    (base / "scratch").mkdir()
    (base / "scratch").chmod(0o755)


def userns_unmapped_scratch(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    _tool(base)
    # the bad host's newuidmap failed (the runtime went on): the namespace has no map at all
    write_file(base / "jail.policy", f"userns {'none' if bad else '0:0:65536'}\ntmpfs {base}/scratch\n")


def userns_short_subuid_range(base: Path, bad: bool) -> None:
    jail_bin()
    _base(base)
    # /etc/subuid of the bad host gives the runtime 1000 ids: the collector's uid 44045 is not mapped
    write_file(base / "jail.policy", f"userns 0:0:{1000 if bad else 65536}\n")


# --- a noexec scratch mount ----------------------------------------------------------------------------------------
SCRATCH_SH = ('read -r opts < "$1/scratch.conf" && mount -t tmpfs -o "$opts" tb44-scratch "$1/scratch" && '
              f'exec {PY} -S -B {JOB_PY} tool "$1"')


def _noexec_argv(b: Path) -> list[str]:
    return ["unshare", "-m", "--propagation", "private", *shell_argv(SCRATCH_SH, str(b))]


def noexec_scratch_tool(base: Path, bad: bool) -> None:
    _base(base)
    _tool(base)
    # the bad node's fstab: scratch hardened with noexec
    write_file(base / "scratch.conf", "size=16m,mode=0755,nosuid,nodev" + (",noexec\n" if bad else "\n"))


REAL_FORTYFOURTH: list[Scenario] = [
    Scenario("t44_seccomp_denies_mbind", "python3 job.py pin (under tb44-jail's seccomp profile)",
             lambda b: _jailed(b, "pin"), seccomp_denies_mbind, frozenset({"mbind"}), "EPERM", lambda b: "*",
             description="the runtime's seccomp profile denies mbind: the staging buffer bound to the GPU's NUMA "
                         "node (mbind EPERM)"),
    Scenario("t44_landlock_shard_symlink_outside", "python3 job.py stage (under tb44-jail's landlock ruleset)",
             lambda b: _jailed(b, "stage", "3"), landlock_shard_symlink_outside, OPEN, "EACCES",
             lambda b: f"{b}/datasets/shard-0002.bin",
             description="a shard deduplicated into a symlink to a cache outside the landlock tree (openat EACCES)"),
    Scenario("t44_landlock_checkpoint_rename_refer", "python3 job.py stage (landlock ABI 2 without refer)",
             lambda b: _jailed(b, "stage", "3"), landlock_checkpoint_rename_refer, RENAME, "EXDEV",
             lambda b: f"{b}/job/stage/ckpt-*.tmp",
             description="the checkpoint's os.replace from stage/ to ckpt/ under a ruleset handling REFER that the "
                         "policy does not grant (rename EXDEV)"),
    Scenario("t44_landlock_output_dir_read_only", "python3 job.py stage (landlock: out/ read-only)",
             lambda b: _jailed(b, "stage", "3"), landlock_output_dir_read_only, MKDIR, "EACCES",
             lambda b: f"{b}/job/out/epoch-3",
             description="the epoch's output directory made under a tree the ruleset allows read-only "
                         "(mkdir EACCES)"),
    Scenario("t44_nnp_setuid_helper_unprivileged", "tb44-grant (set-uid helper, job under no_new_privs)",
             lambda b: _jailed(b, "grant"), nnp_setuid_helper, OPEN, "EACCES",
             lambda b: f"{b}/etc/rdma-limits.conf",
             description="the launcher sets no_new_privs: the set-uid helper runs as the job and cannot read "
                         "root's 0600 RDMA policy (openat EACCES)"),
    Scenario("t44_nosuid_helper_checks_euid", "tb44-setlimit (set-uid helper on a nosuid bind mount)",
             _nosuid_argv, nosuid_helpers_dir, frozenset({"geteuid"}), None, lambda b: "*",
             description="the helpers' directory bind-mounted nosuid: tb44-setlimit's geteuid() returns the "
                         "job's 44044, it refuses (no errno)"),
    Scenario("t44_cap_bind_rendezvous_low_port", "python3 job.py serve 853 (setpriv -net_bind_service)",
             _serve_argv, cap_bind_low_port, frozenset({"bind"}), "EACCES", lambda b: f"*{PORT}*",
             description="the rendezvous store binds port 853 without net_bind_service in the bounding set "
                         "(bind EACCES)"),
    Scenario("t44_cap_chown_outputs_dropped", "python3 job.py chown (setpriv -chown)",
             _chown_argv, cap_chown_dropped, CHOWN, "EPERM", lambda b: f"{b}/job/out/shard-*.sum",
             description="the outputs given to the collector's account without cap_chown (chown EPERM)"),
    Scenario("t44_ulimit_memlock_above_slice_hard", "sh job script: ulimit -l 8192 (under a 4 MiB hard limit)",
             _memlock_argv, memlock_slice_below_script, RLIMIT, "EPERM", lambda b: "*",
             description="the RDMA job script's ulimit -l 8192 raising the hard limit above the slice's 4 MiB "
                         "without CAP_SYS_RESOURCE (prlimit64 EPERM)"),
    Scenario("t44_cpuset_pin_outside_slice", "python3 job.py affinity 1 (in a cpuset cgroup of CPU 0)",
             _cpuset_argv, cpuset_pin_outside, frozenset({"sched_setaffinity"}), "EINVAL", lambda b: "*",
             teardown=_cpuset_teardown,
             description="the job pins itself to the GPU's local CPU 1, outside its cpuset (sched_setaffinity "
                         "EINVAL)"),
    Scenario("t44_userns_unmapped_scratch_create", "python3 job.py tool (tb44-jail: userns without a map)",
             lambda b: _jailed(b, "tool"), userns_unmapped_scratch, OPEN, "EOVERFLOW",
             lambda b: f"{b}/scratch/ibprobe",
             description="newuidmap failed, no uid map: staging the tool onto the namespace's scratch tmpfs "
                         "(openat EOVERFLOW)"),
    Scenario("t44_userns_short_subuid_chown", "python3 job.py chown (tb44-jail: userns of 1000 ids)",
             lambda b: _jailed(b, "chown", str(COLLECTOR_UID)), userns_short_subuid_range, CHOWN, "EINVAL",
             lambda b: f"{b}/job/out/shard-*.sum",
             description="a subordinate range of 1000 ids: chown to the collector's uid 44045, unmapped "
                         "(chown EINVAL)"),
    Scenario("t44_noexec_scratch_staged_tool", "python3 job.py tool (scratch tmpfs mounted noexec)",
             _noexec_argv, noexec_scratch_tool, EXEC, "EACCES", lambda b: f"{b}/scratch/ibprobe",
             description="the staged tool run from a scratch mounted noexec (execve EACCES)"),
]


# --- good-vs-good noise -----------------------------------------------------------------------------------------------
def _n_seccomp(base: Path, run: int) -> None:  # noqa: ARG001
    seccomp_denies_mbind(base, False)


def _n_landlock(base: Path, run: int) -> None:  # noqa: ARG001
    landlock_checkpoint_rename_refer(base, False)


def _n_serve(base: Path, run: int) -> None:  # noqa: ARG001
    cap_bind_low_port(base, False)


def _n_cpuset(base: Path, run: int) -> None:  # noqa: ARG001
    cpuset_pin_outside(base, False)


def _n_userns(base: Path, run: int) -> None:  # noqa: ARG001
    userns_unmapped_scratch(base, False)


def _n_grant(base: Path, run: int) -> None:  # noqa: ARG001
    jail_bin()
    _grant_setup(base, False)


def _n_pids(base: Path, run: int) -> None:  # noqa: ARG001
    _base(base, n=8)
    _make_pids(base, 32)


QUIET_FORTYFOURTH: list[NoAnomalyCase] = [
    NoAnomalyCase("t44_seccomp_profile_pin", lambda b: _jailed(b, "pin"), _n_seccomp,
                  description="tb44-jail's seccomp profile (ptrace denied): a NUMA-bound staging buffer"),
    NoAnomalyCase("t44_landlock_stage_checkpoint", lambda b: _jailed(b, "stage", "3"), _n_landlock,
                  description="a landlock ruleset granting refer: checkpoint temp names random, published by rename"),
    NoAnomalyCase("t44_setpriv_rendezvous_netns", _serve_argv, _n_serve,
                  description="a network namespace, a capability-dropped rendezvous on 853, a forked worker"),
    NoAnomalyCase("t44_cpuset_pinned_job", _cpuset_argv, _n_cpuset,
                  description="the job in a cpuset cgroup of both CPUs pins itself to CPU 1"),
    NoAnomalyCase("t44_userns_scratch_tool", lambda b: _jailed(b, "tool"), _n_userns,
                  description="a mapped user namespace, a scratch tmpfs inside it, the staged tool run from it"),
    NoAnomalyCase("t44_setuid_helper_as_job", lambda b: _jailed(b, "grant"), _n_grant,
                  description="the set-uid helper run by the job (uid 44044) without no_new_privs"),
    NoAnomalyCase("t44_pids_cgroup_workers", _pids_argv, _n_pids,
                  description="four forked workers in a pids cgroup (pids.max 32), finishing in any order"),
]


def quiet_teardown() -> None:
    """Remove the cgroups any case may have left (a failed teardown) and unmount what is left."""
    _remove_cgroup(_cgroup("cpuset", "job"))
    _remove_cgroup(_cgroup("pids", "job"))
    for sc in [*REAL_FORTYFOURTH, *QUIET_FORTYFOURTH]:
        scratch = ROOT / sc.name / "scratch"
        if os.path.ismount(scratch):
            subprocess.run(["umount", "-l", str(scratch)], capture_output=True)


BENCH_ONLY: frozenset[str] = frozenset()
QUIET_BENCH_ONLY: frozenset[str] = frozenset()
