"""A sixty-second set of real programs with one real fault each: **permissions, ownership and
capabilities** -- a file's owner or a directory's search bit changed between the good days and the
bad day, the sticky bit of a shared spool, a umask that makes a report another user cannot read, a
capability the bad day's hardening dropped, a read-only output, a script without its x bit, a noexec
or read-only mount, an append-only ledger:

- ``comm`` (as nobody) comparing today's list with yesterday's: a restore ran as root and left
  yesterday's list root's, mode 0600 (it was nobody's, 0600): openat EACCES;
- ``cksum`` (as nobody) of a file in a directory a ``chmod -R a-x`` left without its search bit
  (0644): openat EACCES;
- ``unlink`` (as nobody) of the job's lock in the shared sticky spool (1777, root's): the bad day's
  lock was left by root's job, not nobody's: unlink EPERM (the sticky bit, not the mode);
- the producer (root) writes a report under the job's umask (job.env) and the consumer ``nl`` runs
  as nobody: the bad day's umask is 077, the report 0600: ``nl``'s openat EACCES (good days 022,
  002);
- ``chgrp`` run by a wrapper under ``setpriv --inh-caps=-all --bounding-set=$DROP`` (caps.env): the
  bad day's hardening also drops ``chown``: fchownat EPERM;
- ``uniq`` (as nobody) writing its output over the previous run's, which an archiver made
  read-only (0444): openat(O_WRONLY|O_CREAT|O_TRUNC) EACCES;
- ``stdbuf -oL`` running the job's report script, deployed without its x bit (0644): execve EACCES
  (root too needs an x bit);
- ``ionice -c 3`` running a tool from a tmpfs the bad host mounts noexec: execve EACCES;
- ``csplit`` writing its parts into out/, a read-only bind mount on the bad host: openat EROFS;
- ``dd conv=notrunc`` writing a record into its slot of a ledger an administrator made
  append-only (``chattr +a``): openat(O_WRONLY|O_CREAT) EPERM.

The expectations are what ``strace -f`` shows for the bad run. Every run of a case has the same
command line; what the bad day changed is in the files and mounts the setup builds (a job.env or
caps.env beside the job where the change is the job's own settings). The cases marked *as nobody*
run under the harness's NOBODY setpriv prefix (``Scenario.unprivileged``).

Noise cases (``QUIET_SIXTYSECOND``): root reading files of other modes and other owners (root
reads them all), a umask that differs where nothing reads the result back, a script run with
other x bits, nobody removing its own lock from a sticky spool whose other files change owners, a
ledger with other harmless inode flags (``+A``, ``+d``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .files import NOBODY_UID, token, write_file
from .harness import NoAnomalyCase, RunTurns, Scenario, argv_in, sh_argv

OPEN = frozenset({"openat", "open", "openat2", "creat"})
UNLINK = frozenset({"unlink", "unlinkat"})
CHOWN = frozenset({"fchownat", "chown", "lchown", "fchown"})
EXEC = frozenset({"execve", "execveat"})

_TURNS = RunTurns()


def _lines(n: int) -> str:
    return "".join(f"{token(3)} item {i}\n" for i in range(n))


def _chown(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True)


# --- comm as nobody: yesterday's list restored by root ---------------------------------------------------------------
def comm_build(base: Path, bad: bool) -> None:
    n = _TURNS.pick(base, bad, [20, 200, 5], 20)
    today = sorted(f"host{i:04d}" for i in range(n))
    yesterday = sorted(f"host{i:04d}" for i in range(1, n + 1))
    _chown(write_file(base / "lists" / "today.txt", "".join(f"{h}\n" for h in today), 0o600), NOBODY_UID)
    old = write_file(base / "lists" / "yesterday.txt", "".join(f"{h}\n" for h in yesterday), 0o600)
    _chown(old, 0 if bad else NOBODY_UID)  # the bad day's restore ran as root


# --- cksum as nobody: the input directory lost its search bit ------------------------------------------------------------
def cksum_build(base: Path, bad: bool) -> None:
    write_file(base / "in" / "payload.bin", os.urandom(_TURNS.pick(base, bad, [4096, 70000, 300], 4096)))
    (base / "in").chmod(0o644 if bad else 0o755)  # `chmod -R a-x` meant for the files took the directory's x


# --- unlink as nobody in the sticky spool ---------------------------------------------------------------------------------
def unlink_build(base: Path, bad: bool) -> None:
    spool = base / "spool"
    spool.mkdir()
    spool.chmod(0o1777)
    lock = write_file(spool / "job.lock", f"{token(4)}\n", 0o666)
    if not bad:  # the job's own lock from its previous run; the bad day's was left by root's job
        _chown(lock, NOBODY_UID)
    for i in range(_TURNS.pick(base, bad, [1, 4, 2], 1)):
        write_file(spool / f"other-{i}.tmp", token(8))


# --- root producer under job.env's umask, nl as nobody reads the report ---------------------------------------------------
UMASK_SH = ('. "$1/job.env"; umask "$UMASK"; sort "$1/in.txt" > "$1/report.txt" && '
            'exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups nl "$1/report.txt" > /dev/null')


def umask_build(base: Path, bad: bool) -> None:
    size, umask = _TURNS.pick(base, bad, [(30, "022"), (300, "002"), (3, "022")], (30, "077"))
    write_file(base / "in.txt", _lines(size))
    write_file(base / "job.env", f"UMASK={umask}\n")


# --- chgrp under setpriv --bounding-set from caps.env -----------------------------------------------------------------------
CHGRP_SH = ('. "$1/caps.env"; exec /usr/bin/setpriv --inh-caps=-all --bounding-set="$DROP" '
            'chgrp 65534 "$1/out/a.dat" "$1/out/b.dat"')


def chgrp_build(base: Path, bad: bool) -> None:
    size = _TURNS.pick(base, bad, [10, 1000, 100], 10)
    write_file(base / "out" / "a.dat", token(size))
    write_file(base / "out" / "b.dat", token(size + 1))
    # the bad day's hardening drops chown from the job's bounding set too
    write_file(base / "caps.env", f"DROP={'-chown,' if bad else ''}-sys_module,-sys_rawio\n")


# --- uniq as nobody over a read-only output -----------------------------------------------------------------------------------
def uniq_build(base: Path, bad: bool) -> None:
    n = _TURNS.pick(base, bad, [40, 4, 400], 40)
    write_file(base / "in.txt", "".join(f"line {i // 3}\n" for i in range(n)))
    out = write_file(base / "out.txt", "previous run\n", 0o444 if bad else 0o644)  # an archiver froze it
    _chown(out, NOBODY_UID)
    _chown(base, NOBODY_UID)


# --- stdbuf runs a script deployed without its x bit ------------------------------------------------------------------------
REPORT_SH = '#!/bin/sh\nsort "$1/data.txt" > "$1/sorted.txt"\n'


def stdbuf_build(base: Path, bad: bool) -> None:
    write_file(base / "data.txt", _lines(_TURNS.pick(base, bad, [25, 250, 2], 25)))
    write_file(base / "bin" / "report", REPORT_SH, 0o644 if bad else 0o755)  # a tar without modes


# --- ionice runs a tool from a tmpfs mounted noexec on the bad host ------------------------------------------------------------
def ionice_build(base: Path, bad: bool) -> None:
    write_file(base / "data.txt", _lines(_TURNS.pick(base, bad, [12, 120, 1200], 12)))
    tools = base / "tools"
    tools.mkdir()
    opts = "size=1m,mode=0755" + (",noexec" if bad else "")
    _run("mount", "-t", "tmpfs", "-o", opts, "tracebase-t62", str(tools))
    write_file(tools / "compact", REPORT_SH, 0o755)


# --- csplit writes its parts into a read-only bind mount ------------------------------------------------------------------------
def csplit_build(base: Path, bad: bool) -> None:
    n = _TURNS.pick(base, bad, [3, 8, 1], 3)
    write_file(base / "log.txt", "".join(f"{_lines(4)}--\n" for _ in range(n)))
    out = base / "out"
    out.mkdir()
    if bad:  # the bad host exports out/ read-only
        _run("mount", "--bind", str(out), str(out))
        _run("mount", "-o", "remount,bind,ro", str(out))


# --- dd writes a ledger slot; the ledger is append-only on the bad day ---------------------------------------------------------
DD_SH = ('read SLOT < "$1/slot"; dd if="$1/rec" of="$1/ledger" bs=64 seek="$SLOT" conv=notrunc status=none')


def _ledger(base: Path, slot: int, flags: str | None) -> None:
    write_file(base / "ledger", "".join(f"{token(31)} \n" for _ in range(8)))  # 8 slots of 64 bytes
    write_file(base / "rec", f"{token(31)} \n")
    write_file(base / "slot", f"{slot}\n")
    if flags:
        _run("/usr/bin/chattr", flags, str(base / "ledger"))


def dd_build(base: Path, bad: bool) -> None:
    _ledger(base, _TURNS.pick(base, bad, [2, 5, 7], 3), "+a" if bad else None)


def _clear_flags(base: Path) -> None:
    """An append-only or immutable file cannot be removed: clear the flags before the next setup."""
    if (base / "ledger").exists():
        subprocess.run(["/usr/bin/chattr", "-i", "-a", "-A", "-d", str(base / "ledger")], capture_output=True)


def _sc(name, program, argv, build, probe, errno, path, *, unprivileged=False, teardown=None, description=""):
    return Scenario(name, program, argv, build, probe, errno, path, teardown=teardown, unprivileged=unprivileged,
                    description=description)


REAL_SIXTYSECOND: list[Scenario] = [
    _sc("t62_comm_list_restored_by_root", "comm today.txt yesterday.txt (as nobody)",
        argv_in(["/usr/bin/comm", "-3", "{b}/lists/today.txt", "{b}/lists/yesterday.txt"]), comm_build, OPEN,
        "EACCES", lambda b: f"{b}/lists/yesterday.txt", unprivileged=True,
        description="yesterday's list now root's, mode 0600: openat EACCES"),
    _sc("t62_cksum_dir_lost_search_bit", "cksum in/payload.bin (as nobody)",
        argv_in(["/usr/bin/cksum", "{b}/in/payload.bin"]), cksum_build, OPEN, "EACCES",
        lambda b: f"{b}/in/payload.bin", unprivileged=True,
        description="in/ is 0644 (no x): openat of a file in it EACCES"),
    _sc("t62_unlink_sticky_spool_other_owner", "unlink spool/job.lock (as nobody)",
        argv_in(["/usr/bin/unlink", "{b}/spool/job.lock"]), unlink_build, UNLINK, "EPERM",
        lambda b: f"{b}/spool/job.lock", unprivileged=True,
        description="the lock in the sticky spool is root's: unlink EPERM though the spool is 1777"),
    _sc("t62_nl_report_written_under_umask_077", "nl report.txt (as nobody) after root's sort under job.env's umask",
        sh_argv(UMASK_SH), umask_build, OPEN, "EACCES", lambda b: f"{b}/report.txt",
        description="the bad day's umask 077 makes report.txt 0600 root's: nl's openat EACCES"),
    _sc("t62_chgrp_bounding_set_drops_chown", "chgrp under setpriv --inh-caps=-all --bounding-set (caps.env)",
        sh_argv(CHGRP_SH), chgrp_build, CHOWN, "EPERM", lambda b: f"{b}/out/a.dat",
        description="the bad day's bounding set lacks CAP_CHOWN: fchownat EPERM"),
    _sc("t62_uniq_output_made_read_only", "uniq in.txt out.txt (as nobody)",
        argv_in(["/usr/bin/uniq", "{b}/in.txt", "{b}/out.txt"]), uniq_build, OPEN, "EACCES",
        lambda b: f"{b}/out.txt", unprivileged=True,
        description="out.txt is 0444: openat(O_WRONLY|O_CREAT|O_TRUNC) EACCES"),
    _sc("t62_stdbuf_script_without_x_bit", "stdbuf -oL bin/report",
        argv_in(["/usr/bin/stdbuf", "-oL", "{b}/bin/report", "{b}"]), stdbuf_build, EXEC, "EACCES",
        lambda b: f"{b}/bin/report",
        description="bin/report deployed 0644: execve EACCES, stdbuf exit 126"),
    _sc("t62_ionice_tool_on_noexec_tmpfs", "ionice -c 3 tools/compact",
        argv_in(["/usr/bin/ionice", "-c", "3", "{b}/tools/compact", "{b}"]), ionice_build, EXEC, "EACCES",
        lambda b: f"{b}/tools/compact",
        description="tools/ is a noexec tmpfs on the bad host: execve EACCES, ionice exit 126"),
    _sc("t62_csplit_parts_on_read_only_mount", "csplit -f out/part- log.txt /^--$/ {*}",
        argv_in(["/usr/bin/csplit", "-s", "-z", "-f", "{b}/out/part-", "{b}/log.txt", "/^--$/", "{*}"]),
        csplit_build, OPEN, "EROFS", lambda b: f"{b}/out/part-00",
        description="out/ is a read-only bind mount: openat of the first part EROFS"),
    _sc("t62_dd_ledger_slot_append_only", "dd conv=notrunc of=ledger seek=$SLOT",
        sh_argv(DD_SH), dd_build, OPEN, "EPERM", lambda b: f"{b}/ledger", teardown=_clear_flags,
        description="chattr +a on the ledger: openat(O_WRONLY|O_CREAT) EPERM"),
]


# --- good-vs-good noise --------------------------------------------------------------------------------------------
def cksum_modes_noise(base: Path, run: int) -> None:
    mode = [0o644, 0o600, 0o400][run % 3]
    for i in range(3):
        write_file(base / "in" / f"part-{i}.bin", os.urandom(1000 * (run + 1) + i), mode)
    (base / "in").chmod([0o755, 0o700, 0o750][run % 3])


def comm_owners_noise(base: Path, run: int) -> None:
    owner = [0, NOBODY_UID, 1000][run % 3]
    n = [15, 150, 1][run % 3]
    for name, lo in (("today.txt", 0), ("yesterday.txt", 1)):
        f = write_file(base / "lists" / name, "".join(f"host{i:04d}\n" for i in range(lo, n + lo)), 0o640)
        _chown(f, owner)


UMASK_ONLY_SH = '. "$1/job.env"; umask "$UMASK"; sort "$1/in.txt" > "$1/report.txt"'


def umask_noise(base: Path, run: int) -> None:
    write_file(base / "in.txt", _lines([9, 90, 900][run % 3]))
    write_file(base / "job.env", f"UMASK={['022', '077', '027'][run % 3]}\n")


def stdbuf_modes_noise(base: Path, run: int) -> None:
    write_file(base / "data.txt", _lines([7, 70, 700][run % 3]))
    write_file(base / "bin" / "report", REPORT_SH, [0o755, 0o700, 0o555][run % 3])


def unlink_neighbours_noise(base: Path, run: int) -> None:
    spool = base / "spool"
    spool.mkdir()
    spool.chmod(0o1777)
    _chown(write_file(spool / "job.lock", f"{token(4)}\n", 0o644), NOBODY_UID)
    for i in range([2, 5, 1][run % 3]):
        _chown(write_file(spool / f"other-{i}.tmp", token(8), [0o600, 0o644, 0o666][run % 3]),
               [0, 1000, 4242][(run + i) % 3])


def dd_attrs_noise(base: Path, run: int) -> None:
    _ledger(base, [1, 4, 6][run % 3], [None, "+A", "+d"][run % 3])


def _unprivileged(cmd: list[str]):
    return argv_in(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd])


QUIET_SIXTYSECOND: list[NoAnomalyCase] = [
    NoAnomalyCase("t62_cksum_root_reads_other_modes",
                  argv_in(["/usr/bin/cksum", "{b}/in/part-0.bin", "{b}/in/part-1.bin", "{b}/in/part-2.bin"]),
                  cksum_modes_noise, description="root sums files of mode 0644, 0600, 0400 in dirs 0755, 0700, 0750"),
    NoAnomalyCase("t62_comm_root_reads_other_owners",
                  argv_in(["/usr/bin/comm", "-3", "{b}/lists/today.txt", "{b}/lists/yesterday.txt"]),
                  comm_owners_noise, description="root compares lists owned by root, nobody, uid 1000 (0640)"),
    NoAnomalyCase("t62_sort_umask_not_read_back", sh_argv(UMASK_ONLY_SH), umask_noise,
                  description="the report is written under umask 022, 077, 027 and nothing reads it back"),
    NoAnomalyCase("t62_stdbuf_script_other_x_bits", argv_in(["/usr/bin/stdbuf", "-oL", "{b}/bin/report", "{b}"]),
                  stdbuf_modes_noise, description="root runs bin/report of mode 0755, 0700, 0555"),
    NoAnomalyCase("t62_unlink_own_lock_sticky_neighbours", _unprivileged(["/usr/bin/unlink", "{b}/spool/job.lock"]),
                  unlink_neighbours_noise,
                  description="nobody removes its own lock; the spool's other files change owners and modes"),
    NoAnomalyCase("t62_dd_ledger_other_inode_flags", sh_argv(DD_SH), dd_attrs_noise,
                  description="dd writes a ledger slot; the ledger has no flag, +A (noatime), +d (nodump)"),
]


def quiet_teardown() -> None:
    """Nothing outlives a case: mounts and inode flags are undone by each case's own clean-up."""
