"""`tracer record`: run a command under the syscall recorder, write one Parquet trace."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from tracer import units
from tracer.cli import common
from tracer.cli.common import HelpFormatter
from tracer.errors import TracebaseError, printable
from tracer.inputs import cwd_removed

EPILOG = """\
examples:
    tracer record -- ls -l /etc               # trace-ls-<UTC time>-<pid>.parquet here
    tracer record -o good1.parquet --label good -- ./job.sh
    tracer record -o bad.parquet --label bad -- ./job.sh
    tracer record -x -- make                  # only failing syscalls
    tracer record --json -q -o run.parquet -- ./job.sh | tail -1 | jq .syscalls
    tracer record --meta ticket=OPS-123 --meta job_id=42 -- python3 train.py
    tracer record -p 1234 -o svc.parquet      # a running process, until it exits or Ctrl-C
    tracer record -p 1234 -d 30s              # ... for at most 30 seconds
    tracer record -d 500ms -- ./server        # stop recording after 0.5 s, server keeps running
    tracer record --linger 10s -- ./start.sh  # follow the daemon start.sh leaves for up to 10 s
    tracer record --linger inf -- ./start.sh  # ... until the last descendant exits (strace -f)
    tracer record --linger 0 -- ./start.sh    # stop when start.sh itself exits

The command and all its descendants (fork, clone, threads, exec) are followed in the kernel.
When the command exits, recording goes on while descendants it left running (a daemon put in
the background, double-forked, setsid'd) are alive, for at most --linger (default 3s: a
daemon failing as it starts is caught), and stops as soon as the last one exits. Threads
still running when recording stops (linger or -d over) are cut off, not ended: the trace's
metadata lists them (cut_off_tids) and `baseline diff` does not call their end an anomaly.
The exit status is the command's (128+N when killed by signal N); 127 when the command is
not found (or the interpreter its #! line names is not), 126 when it is found but cannot
run (a directory, no execute permission, not a program), 2 for a usage or environment problem (not root, no bcc, no kernel headers).

-p PID attaches to a running process and follows the children it creates from then on;
recording stops when it exits (and those children are gone, or --linger ran out), after -d
DURATION, or on SIGINT/SIGTERM/SIGHUP (the process is not touched), and the trace is written;
exit status 0. Its command line comes from
/proc/PID/cmdline, its cwd and open fds from /proc/PID so paths resolve; the trace's
exit_status is null while it is still running (or when it was killed by a signal).
-d DURATION (10, 10s, 500ms, 2m, 1h, 1d; units ns, us, ms, s, m, h, d) with a command stops recording, not the command, like
bcc tools: the command keeps running, exit_status is null, and the exit status is 0. It
bounds the linger too (then the exit status is the command's).
SIGTERM, SIGHUP or SIGINT sent to `tracer record -- CMD` is forwarded to the command and its
descendants (Ctrl-C in a terminal reaches them directly; a second Ctrl-C kills them); if the
command has not exited 5 s later they are killed (SIGKILL). Either way the events up to its exit are written and the exit status is
the command's (143 after SIGTERM). One arriving during the linger (the command has exited)
stops the recording at once and is not forwarded: the descendants left are cut off.

The output is checked before the command starts (its directory exists, is writable, not
read-only or full; the path is not a directory). If writing still fails (say, the disk
filled up meanwhile), the trace is saved to $TMPDIR instead and the error names that file;
exit status 2. Hidden temporaries a killed recorder left beside FILE (of any trace, whatever its
name) are removed by the next recording into that directory, which names them.
Lost events (ring buffer full) are counted in the trace's lost_events column.
Needs root; the kernel may have lockdown on (only tracepoints are used).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "record",
        help="record every syscall of a command and its children into a Parquet trace",
        description="Run CMD under a BPF tracer on the raw syscall tracepoints and record every "
        "syscall of CMD and its descendants (ret, errno, latency, path arguments) into one "
        "Parquet file (tracebase events table), written atomically.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    p.add_argument("-o", "--output", metavar="FILE", type=common.output_path("the trace (Parquet)"),
                   help="Parquet file to write (default: trace-CMD-UTCTIME.parquet)")
    p.add_argument("--label", choices=["good", "bad"],
                   help="mark the run as known good (kind=good) or failing (kind=failure); "
                   "default kind=full")
    p.add_argument("-x", "--failures", action="store_true",
                   help="record only failing syscalls")
    p.add_argument("-p", "--pid", type=common.positive_int, metavar="PID",
                   help="record this running process (and the children it creates from now on) "
                   "instead of running a command")
    p.add_argument("-d", "--duration", metavar="DURATION", type=common.duration,
                   help="stop recording after this long: 100us, 500ms, 10s, 2m, 1h, 1d, plain seconds")
    p.add_argument("--linger", metavar="SECONDS", type=linger, default=None,
                   help="after the command exits, keep recording its descendants still alive "
                   "for at most this long: a duration, 0 (stop with the command) or inf (until "
                   "the last one exits); default 3s")
    p.add_argument("--host", metavar="NAME", help="host name to store (default: this host's)")
    p.add_argument("--meta", metavar="KEY=VALUE", action="append", default=[],
                   help="free-form metadata stored with the trace (repeatable; job_id=... "
                   "also fills the job_id column)")
    p.add_argument("--ringbuf-mb", type=common.positive_int, default=64, metavar="MB",
                   help="ring buffer size (default: %(default)s)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    p.add_argument("--json", action="store_true",
                   help="print the summary as one JSON line on stdout (after the command's own output)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the command to run")
    p.set_defaults(func=handle)


def linger(text: str) -> float:
    """type= for --linger: a duration (0 allowed), or inf/forever for no limit."""
    if text.strip().lower() in ("inf", "infinity", "forever"):
        return math.inf
    try:
        return units.parse_duration(text, None, allow_zero=True)
    except TracebaseError:
        raise argparse.ArgumentTypeError(
            f"expected a duration like {units.DURATION_EXAMPLES}, 0 or inf, found {text!r}") from None


def parse_meta(items: list[str]) -> dict[str, str]:
    """--meta KEY=VALUE items as a dict: a key given twice, or one the recorder writes itself
    (tracer.record.metadata_keys.RECORDER_KEYS), is refused before anything is recorded (the last
    value, or the user's, silently won)."""
    from tracer.record.metadata_keys import check_user_meta

    meta: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TracebaseError(f"--meta {item!r}: expected KEY=VALUE")
        if key.strip() in meta:
            raise TracebaseError(f"--meta {item!r}: expected each key once, found {key.strip()} given "
                                 f"before ({key.strip()}={meta[key.strip()]})")
        meta[key.strip()] = value
    check_user_meta(meta)
    return meta


def default_output(cmd: list[str]) -> Path:
    """trace-NAME-UTCTIME-PID.parquet, NAME from the command (or the -p target's comm), PID the
    recorder's: recordings started in the same second (a loop of `tracer record ... &`) each
    keep their own file (with the time alone, the last to finish replaced the others')."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(cmd[0]))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Path(f"trace-{name or 'cmd'}-{stamp}-{os.getpid()}.parquet")


def _require_current_directory(why: str) -> None:
    """A removed current directory (`cd D && rmdir ../D`) refused in one line before the BPF
    compile: a command started there fails on its first relative path, and the default output
    names a file that cannot be made (the recorder compiled for seconds first, then blamed the
    file name or, before the compile ran from /, the kernel)."""
    if cwd_removed():
        raise TracebaseError(f"current directory: expected an existing directory ({why}), found it removed; "
                             "cd to one")


def handle(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    meta = parse_meta(args.meta)
    duration = args.duration
    if args.pid is not None and cmd:
        raise TracebaseError(
            f"-p {args.pid} and a command ({cmd[0]}) exclude each other: "
            "record a running process or run a command, not both"
        )
    if args.pid is None and not cmd:
        raise TracebaseError(
            "no command given: tracer record [options] -- CMD [ARGS...], or -p PID"
        )
    from tracer.privilege import check_recording_environment, check_root, check_target_process

    check_root()  # before touching the output path: the most basic requirement first
    if cmd or not args.output:
        _require_current_directory("the command starts in it" if cmd else "the trace is written there by default")
    pinned = None
    if args.pid is not None:
        check_target_process(args.pid)  # gone, a thread id, a zombie, a kernel thread: before compiling BPF
        from tracer.record.procfs import pin_process

        pinned = pin_process(args.pid)  # its exit while the probes load is named so (attach)
    output = Path(args.output) if args.output else default_output(cmd or [_comm_of(args.pid)])
    from tracer.record.output import (
        check_output,
        remove_stale_fallback_temporaries,
        remove_stale_temporaries,
        save,
    )

    check_output(args.output or output)  # as given: Path() drops a trailing "/"
    if args.host is not None:  # the host a dataset partitions by: the rule `tracer run --host` keeps
        from tracer.fleet.options import check_host

        check_host(args.host)
    stale = remove_stale_temporaries(output)  # recorders killed with -9 while writing a trace here
    stale += remove_stale_fallback_temporaries()  # ... or while writing a fallback in $TMPDIR
    if stale:  # (with -q too: it says what was removed from the user's directory, no summary)
        print(f"tracer: removed {len(stale)} stale temporar{'y' if len(stale) == 1 else 'ies'} of a killed recording: "
              + ", ".join(printable(p.name) for p in stale[:3]) + (" ..." if len(stale) > 3 else ""),
              file=sys.stderr)
    from tracer.record.recorder import (
        DEFAULT_LINGER,
        FORWARDED_SIGNALS,
        StopSignals,
        SyscallRecorder,
        resolve_command,
    )

    lingering = DEFAULT_LINGER if args.linger is None else args.linger

    for note in filter(None, [check_recording_environment()]):
        print(f"tracer: {note}", file=sys.stderr)
    if cmd:
        executable = resolve_command(cmd[0])
        # the command's own files are its inputs: `-o job.sh -- ./job.sh` replaced the script
        # it recorded with the trace (an argument naming an existing file, `python3 job.py`, too)
        from tracer.inputs import refuse_overwriting_inputs

        refuse_overwriting_inputs(output, "-o/--output",
                                  [executable, *(a for a in cmd[1:] if os.path.isfile(a))])
    # Once the BPF program is loaded, stop signals (SIGINT/SIGTERM/SIGHUP) end the recording,
    # not the recorder: the command gets them (see SyscallRecorder.record), and one arriving
    # while the trace is written does not cut the write short. SIGUSR1/SIGUSR2 are passed on to
    # the command while it runs; before and after it, dropped (their default action ended the
    # recorder silently and lost the recording).
    with StopSignals(FORWARDED_SIGNALS), \
            SyscallRecorder(ringbuf_mb=args.ringbuf_mb, failures_only=args.failures) as recorder, StopSignals():
        for note in recorder.notes if not args.quiet else ():
            print(f"tracer: {note}", file=sys.stderr)  # e.g. the kfunc refused: a slower path
        if cmd:
            recording = recorder.record(cmd, label=args.label, host=args.host, meta=meta,
                                        duration=duration, linger=lingering)
        else:
            until = f"for {duration:g}s, until it exits" if duration else "until it exits"

            def announce() -> None:
                if not args.quiet:
                    print(f"tracer: recording pid {args.pid} {until} or Ctrl-C",
                          file=sys.stderr, flush=True)

            recording = recorder.attach(args.pid, duration=duration, label=args.label,
                                        host=args.host, meta=meta, on_start=announce,
                                        linger=lingering, pinned=pinned)
        recorder.close()  # detach before the (possibly long) write
        written = save(recording, output)
    if args.json:
        if not _stdout_at_line_start(recording.events):
            print()  # the command's last line had no end: the summary gets its own (`| tail -1 | jq`)
        print(json.dumps({
            "output": str(written), "syscalls": recording.events.num_rows, "lost_events": recording.lost_events,
            "duration_s": round(recording.duration_s, 6), "exit_status": recording.exit_status,
            "stop_reason": recording.stop_reason, "pid": recording.pid,
            "cut_off_threads": len(recording.cut_off),
        }), flush=True)
    if not args.quiet:
        rate = recording.raw_records / max(recording.duration_s, 1e-9)
        ending = describe_ending(recording, attached=args.pid is not None, linger=lingering)
        print(
            f"tracer: {recording.events.num_rows} syscalls, {recording.lost_events} lost, "
            f"{recording.duration_s:.2f}s ({rate:,.0f} events/s), {ending} -> {printable(str(written))}",
            file=sys.stderr,
        )
    if args.pid is not None or recording.exit_status is None:
        return 0  # we did not run it (-p) or did not wait for it (-d): recording succeeded
    return recording.exit_status


def describe_ending(recording, *, attached: bool, linger: float) -> str:
    """How the recording ended, for the summary line: the command's exit status (or why it
    is not known), a forwarded or received stop signal, and the threads cut off."""
    reason, sig = recording.stop_reason, recording.signal
    root_alive = not recording.exited
    if recording.exit_status is not None:
        ending = f"exit status {recording.exit_status}"
    elif root_alive:
        ending = f"stopped by {reason}, pid {recording.pid} still running"
    else:
        ending = "exited (status not observable)"
    if sig and not attached and reason != "signal":
        ending = f"{sig} forwarded to the command, {ending}"
    elif sig:
        ending = f"stopped by {sig}, {ending}"
    others = recording.cut_off - {recording.pid}
    if others and not root_alive:
        why = {"linger": f"after the {linger:g}s linger", "duration": "when -d ran out",
               "exited": "when the command exited (--linger 0)" if not linger else "when the command exited"}.get(
            reason, f"when {sig} stopped the recording" if sig else "when the recording stopped")
        ending += f"; {len(others)} descendant thread{'s' if len(others) > 1 else ''} still running {why}, cut off"
    return ending


def _stdout_at_line_start(events: Any) -> bool:
    """Whether what the command wrote to our stdout ended a line (or it wrote nothing there):
    its last write to the same file, as recorded (`path`: the label the recorder gives an
    inherited descriptor, its /proc link -- pipe:[inode], socket:[inode], a file or terminal;
    `output`: the write's first bytes). Unknown (not captured whole, our stdout not a file we
    can name) counts as not."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tracer.record.syscalls import SPECS

    try:
        label = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
    except (OSError, ValueError):
        return False
    if events is None or not events.num_rows:
        return True
    writes = pa.array(sorted(name for name, spec in SPECS.items() if spec.output is not None), pa.string())
    mine = pc.and_(pc.equal(events.column("path").cast("string"), label),
                   pc.and_(pc.is_in(events.column("probe").cast("string"), value_set=writes),
                           pc.is_null(events.column("errno"))))
    rows = pc.indices_nonzero(pc.fill_null(mine, False))
    if not len(rows):
        return True
    last = int(rows[-1].as_py())
    text, size = events.column("output")[last].as_py(), events.column("ret")[last].as_py()
    if size == 0:
        return True
    return isinstance(text, str) and text.endswith("\n") and len(text.encode("utf-8", "surrogateescape")) == size


def _comm_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() or f"pid{pid}"
    except OSError:
        return f"pid{pid}"
