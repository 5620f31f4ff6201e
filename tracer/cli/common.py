"""Shared plumbing for the `tracer` and `baseline` command lines.

Each subcommand lives in its own module exposing ``register(subparsers)``; it adds its parser
with ``set_defaults(func=handler)`` where ``handler(args) -> int`` returns the exit status.
Subcommand modules import heavy libraries (polars, pyarrow, numpy, the fleet and simulator
modules: 0.3-0.6 s of CPU) inside their handlers, after the handler's cheap checks -- flag
values, input paths, output directories -- so `--help`, a mistyped flag and a missing input
are answered at once. The checks are the library's own, kept in light modules both call
(tracer.inputs.input_paths / open_parquet, baseline.pipeline.layout.check_spool /
check_dataset, baseline.fleet.paths, tracer.fleet.config.check_run for `tracer run`,
baseline.simulator.plan for the simulator's limits, baseline.pipeline.coverage_inputs for
coverage's --week/--probes/--nccl-logs), so the line is the same either way;
tests/test_cli_startup.py holds every command to this. Left after the imports: what only the
data tells (a torn Parquet file, a log's lines, a dataset's tables).

The edges every command shares live here:
- `run` turns every user error into one line on stderr and exit status 2: a TracebaseError, an
  OSError on a user's path (ENOSPC, EROFS, EACCES, EISDIR, ENOTDIR, ENOENT, ...), a bad flag
  (argparse); Ctrl-C exits 130 quietly, SIGTERM 143 and SIGHUP 129 (writers clean up first,
  as for Ctrl-C); a closed stdout pipe (`| head -1`) drops the rest of
  the output quietly and the command finishes with its own exit status.
- argparse `type=` converters over `tracer.units` (`duration`, `since`, `positive_int`, ...),
  so a bad value is refused before anything runs, naming the flag:
  ``tracer run: error: argument -i/--interval: expected a duration like ..., found 'nan'``.
- the common flag vocabulary: `-x/--failures`, `-d/--duration`, `-i/--interval`,
  `-o/--output` (`--out` a hidden alias), `--json`, `--version`.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import importlib
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

from tracer import units
from tracer.errors import TracebaseError, printable
from tracer.inputs import cwd_removed
from tracer.limits import require_open_files, soft_limit
from tracer.startup import BLAS_THREAD_SETTINGS, M_ARENA_MAX, own_default, set_malloc

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (5-10 ms of every command's start)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-written examples in epilogs as they are."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors in the style of every other error:
    `tracer: error: -i/--interval: expected ..., found 'soon' (see 'tracer run --help')`, exit 2.

    Subparsers inherit the class (argparse creates them with type(parent)).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A negative number with a unit (`-d -5ms`) is a value, as `-d -1` is: argparse took it
        # for an option and said "expected one argument" to a user who gave one. No option of
        # ours starts with a digit.
        self._negative_number_matcher = re.compile(r"^-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[A-Za-zµ]*$")

    def _print_message(self, message: str, file: Any = None) -> None:
        """--help, --version and usage text: argparse drops an OSError writing them (`--help
        >/dev/full` exited 0 having printed nothing); here a write error on stdout is trouble
        like any other output error (one line naming <stdout>, exit 2) and a reader that went
        away (`--help | head -1`) ends the text quietly."""
        if not message:
            return
        file = file or sys.stderr
        # (stdout through _ClosablePipe: written whole, where a part that fitted under `ulimit -f`
        # was taken for the whole text, exit 0: battery 52)
        # (a reader gone from stdout is _ClosablePipe's to end quietly; one gone from stderr is
        # nothing to say)
        out = _ClosablePipe(file) if file is sys.stdout else file
        try:
            out.write(message)
            out.flush()
        except OSError as exc:
            if file is sys.stdout:
                _silence_stdout()  # the text left in the buffer must not fail again at exit
                raise _on_stdout(exc) from None
            # stderr unwritable: the exit status still says it

    _intermixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """A command's options may come before, between or after its positionals, as with GNU
        tools (`baseline diff good1 --json good2 bad`, `allowlist learn a -o list b`): plain
        argparse stops a `nargs='+'` positional at the first option and calls the rest
        "unrecognized arguments", naming the traces as if they were the mistake. Commands whose
        shape intermixing cannot parse (sub-commands, `tracer record`'s `-- CMD...`), and any
        command line with `--` (Python 3.11's intermixed parse drops it and reads a `-name`
        after it as an option), parse as before."""
        if self._intermixing or not self._can_intermix() or args is None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # parse_known_intermixed_args calls parse_known_args itself
        try:
            if "--" in args:
                return self._parse_intermixed_with_separator(list(args), namespace)
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def _parse_intermixed_with_separator(self, args: list[str], namespace: Any) -> Any:
        """`diff good1 --json good2 -- -bad.parquet`: every word after the first `--` is a
        positional, the words before it intermix. Python 3.11's intermixed parse loses the
        `--`, so the words after it stand in as marks no option can look like (a NUL cannot be
        in an argv word), with the positionals' types held back until the real words are in."""
        cut = args.index("--")
        marks = {f"\0{k}": word for k, word in enumerate(args[cut + 1:])}
        positionals = [a for a in self._actions if not a.option_strings]
        types = [(a, a.type) for a in positionals]
        for action in positionals:
            action.type = None
        try:
            namespace, extras = self.parse_known_intermixed_args(args[:cut] + list(marks), namespace)
        finally:
            for action, kind in types:
                action.type = kind

        def real(action: argparse.Action, value: Any) -> Any:
            if not isinstance(value, str):
                return value  # a default that is not a string is taken as it is (as argparse does)
            return self._get_value(action, marks.get(value, value))

        for action in positionals:
            value = getattr(namespace, action.dest, None)
            if isinstance(value, list):
                setattr(namespace, action.dest, [real(action, v) for v in value])
            elif value is not None:
                setattr(namespace, action.dest, real(action, value))
        return namespace, [marks.get(e, e) for e in extras]

    def _can_intermix(self) -> bool:
        if any(isinstance(a, argparse._SubParsersAction) or a.nargs in (argparse.REMAINDER, argparse.PARSER)
               for a in self._actions):
            return False
        return not any(any(not a.option_strings for a in g._group_actions) for g in self._mutually_exclusive_groups)

    def error(self, message: str) -> NoReturn:
        root = self.prog.split(" ", 1)[0]
        message = message.removeprefix("argument ")
        _say(root, f"{message} (see '{self.prog} --help')")
        sys.exit(2)


def version() -> str:
    """The installed distribution's version; the checkout's pyproject when not installed."""
    from importlib import metadata

    try:
        return metadata.version("tracebase")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse._VersionAction):
    """--version with the version looked up when asked for: importlib.metadata costs every
    command ~20 ms of CPU at start otherwise."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option_string: Any = None) -> None:
        self.version = f"{self.version} {version()}"
        super().__call__(parser, namespace, values, option_string)


# What every command's --help says about its exit status unless it documents its own (diff's
# 1 = anomaly, record's = the command's): scripts and cron wrappers branch on it.
EXIT_STATUS = ("exit status: 0 done; 2 trouble (bad input or usage, an OS error such as a full disk: one line\n"
               "on stderr naming the file or flag); 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP.")


def build_parser(prog: str, description: str, modules: Sequence[str], epilog: str = "") -> argparse.ArgumentParser:
    """The command's parser; `epilog` (examples, exit status) is shown by `prog --help`."""
    parser = ArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter, epilog=epilog or None)
    parser.add_argument("--version", action=_VersionAction, version=f"{prog} (tracebase)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in modules:
        importlib.import_module(name).register(sub)
    _document_exit_status(sub)
    return parser


def _document_exit_status(sub: argparse._SubParsersAction) -> None:
    for parser in dict.fromkeys(sub.choices.values()):
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in nested:
            _document_exit_status(action)
        # (a command group too: `baseline allowlist --help` is where a user looks first)
        if "exit status" not in (parser.epilog or "").lower():
            parser.epilog = f"{parser.epilog.rstrip()}\n\n{EXIT_STATUS}" if parser.epilog else EXIT_STATUS


class Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C (KeyboardInterrupt) does, so every writer's
    cleanup runs (atomic temporaries removed, no half output), then exit 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


# Set by our handlers once the main thread has heard a stop signal (Python runs handlers only
# between bytecodes of the main thread): from then on the ordinary unwinding cleans up.
_HEARD: list[int] = []

# How long a stop signal may wait for the main thread before the watchdog ends the process. A
# native polars/pyarrow call (a streaming collect, a Parquet write) hears nothing until it
# returns: on the 10,000-host day `baseline learn` went on for 2.5 s after SIGTERM (round 11,
# bench/robust_battery.py), and a call on more data longer. A Python-level stop unwinds in
# well under this (temporaries removed, exit 143).
STOP_GRACE_S = 0.5


# While a command runs: the signals whose handlers are ours (-> the disposition before), and the
# watchdog's wakeup pipe. A forked child (ingest's -j workers, multiprocessing's fork context)
# inherits both the handlers and the C-level wakeup fd -- the write end of the parent's pipe --
# but not the watchdog thread. The SIGTERM multiprocessing sends its pool's workers when the
# pool closes then woke the parent's watchdog, which had not heard it and ended the parent 143
# half a second later (a fresh-clone CI run, round twelve). The child gets the dispositions
# from before and no wakeup fd (`_forget_stop_signals`, run by os.register_at_fork).
_OURS: dict[int, Any] = {}
_WAKEUP_PIPE: list[int] = []


def _forget_stop_signals() -> None:
    """In a forked child: the stop signals as they were before the command's handlers, no
    wakeup fd, the parent's watchdog pipe closed (a signal to the child is the child's)."""
    import signal

    if not _OURS and not _WAKEUP_PIPE and not _AFTER_STOP:
        return
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for sig, previous in [*_OURS.items(), *_AFTER_STOP.items()]:
        with contextlib.suppress(ValueError, OSError, TypeError):
            signal.signal(sig, previous)
    for fd in _WAKEUP_PIPE:
        with contextlib.suppress(OSError):
            os.close(fd)
    _OURS.clear()
    _AFTER_STOP.clear()
    _WAKEUP_PIPE.clear()


# Between fork() and the child's _forget_stop_signals there is a window where the child still
# has the parent's handlers and wakeup fd: a SIGTERM landing in it (a pool ended at once when
# its next pipe failed under `ulimit -n 16`: `ingest -j 2`, 2 runs in 8, round sixteen) was
# written into the parent's wakeup pipe, and the parent's watchdog ended the parent 143 with
# no line. The stop signals are blocked across the fork: the child unblocks them once its
# handlers are its own (a signal that came meanwhile is then delivered to those), the parent
# once the fork is done (one sent to it meanwhile is delivered then).
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_BLOCKED_FOR_FORK: list[set[signal.Signals]] = []


def _block_stop_signals() -> None:
    if _OURS:
        with contextlib.suppress(OSError, ValueError):
            _BLOCKED_FOR_FORK.append(signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS))


def _restore_signal_mask() -> None:
    if _BLOCKED_FOR_FORK:
        with contextlib.suppress(OSError, ValueError):
            signal.pthread_sigmask(signal.SIG_SETMASK, _BLOCKED_FOR_FORK.pop())


def _child_after_fork() -> None:
    _forget_stop_signals()
    _restore_signal_mask()


os.register_at_fork(before=_block_stop_signals, after_in_parent=_restore_signal_mask,
                    after_in_child=_child_after_fork)


# Only the first stop signal unwinds. A second (Ctrl-C pressed twice, a service manager's
# SIGTERM then SIGINT) raised again inside the first one's cleanup -- a pool's shutdown, a
# temporary's removal -- and ended the process by a traceback and SIGINT (round fourteen, 1 in 6
# trials of `learn`/`simulate`), cutting the cleanup short. Later ones are noted and dropped: the
# cleanup takes milliseconds, the exit status is the first signal's, and SIGKILL still ends it.
def _raise_stopped(signum: int, frame: Any) -> None:
    if _SENDING_AGAIN[0]:
        return  # (inside _stop_swallowed: the stop is sent again, to be heard outside it)
    if _first_stop(signum):
        if _in_native_callback(frame):
            _hear_again(signum)
            return
        _RAISED[:] = [Stopped(signum)]
        raise _RAISED[0]


def _raise_interrupt(signum: int, frame: Any) -> None:
    if _SENDING_AGAIN[0]:
        return
    if _first_stop(signum):
        if _in_native_callback(frame):
            _hear_again(signum)
            return
        _RAISED[:] = [KeyboardInterrupt()]
        raise _RAISED[0]


# Python code of these libraries may be running as a callback of their native code (polars
# building a dtype's Python object for DataFrame.dtypes): an exception raised there is no Python
# exception to the caller but a Rust panic (`Result::unwrap()` on the PyErr: a 30-frame stack
# backtrace and an internal error, exit 2 -- 2 SIGTERMs in ~20 at the end of `baseline simulate`).
_NATIVE_CALLERS = ("polars", "pyarrow")


def _in_native_callback(frame: Any) -> bool:
    """The handler runs in a polars or pyarrow module's own Python code (maybe called back from
    native code): the stop is not raised there but heard again a moment later (_hear_again),
    where our code runs."""
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return isinstance(module, str) and module.partition(".")[0] in _NATIVE_CALLERS


def _hear_again(signum: int) -> None:
    """The stop heard but not raised: sent again (_send_again) until a handler raises it where it
    unwinds; it counts as heard meanwhile (the watchdog leaves the main thread to unwind)."""
    import threading

    _AGAIN[0] = True
    if _RESENDER and _RESENDER[0].is_alive():
        return
    with contextlib.suppress(RuntimeError):
        _RESENDER[:] = [threading.Thread(target=_send_again, args=(signum,), name="stop-again", daemon=True)]
        _RESENDER[0].start()


_RESENDER: list[Any] = []  # the thread sending a deferred stop again (_hear_again)


def _first_stop(signum: int) -> bool:
    """Note a stop signal heard; True for the one that unwinds: the first, or the first since
    the one before was swallowed (see _stop_swallowed) -- unless a stop is unwinding the main
    thread already. Polars has a SIGINT handler of its own (chained before Python's): a Ctrl-C
    during a collect raises its own KeyboardInterrupt there, and our handler, run after it at the
    first bytecode of the unwinding (a `with` block's exit), raised a second one that cut the
    cleanup short (the staging directory left: pola-rs/polars#23988)."""
    underway = isinstance(sys.exc_info()[1], (KeyboardInterrupt, Stopped))
    first = not underway and (not _HEARD or _AGAIN[0])
    _AGAIN[0] = False
    _HEARD.append(signum)
    return first


# The stop our handler raised last. Python runs a handler at the next bytecode of the main
# thread, which may be inside a weakref callback or a __del__ the collector called: an
# exception there cannot propagate -- Python printed "Exception ignored in: ..." with a
# traceback and went on, and so did the command, its stop spent (1 in ~8 storms of Ctrl-C on
# `baseline simulate`, a fresh-clone CI). `_stop_swallowed` hears it and has it sent again.
_RAISED: list[BaseException] = []
_AGAIN = [False]  # the last stop was swallowed: the next one heard unwinds
_SENDING_AGAIN = [False]  # True while _stop_swallowed runs: a handler run in it raises nothing
_UNRAISABLE_BEFORE: list[Any] = [sys.unraisablehook]
# How often a swallowed stop is sent again until the main thread hears it where it unwinds.
RESEND_EVERY_S = 0.02


def _stop_swallowed(unraisable: Any) -> None:
    """sys.unraisablehook while a command runs: the stop our handler raised, swallowed where no
    exception propagates, is sent again by a thread until a handler raises it where it unwinds
    (a handler can only raise in the main thread, and one run inside this hook would be
    swallowed too). The stop still counts as heard meanwhile: the watchdog leaves the main
    thread to unwind. Anything else goes to the hook from before."""
    import threading

    if not (_RAISED and unraisable.exc_value is _RAISED[0] and _HEARD):
        _UNRAISABLE_BEFORE[0](unraisable)
        return
    _SENDING_AGAIN[0] = True
    _RAISED.clear()
    _AGAIN[0] = True
    with contextlib.suppress(RuntimeError):  # (no thread to be had: the next stop sent unwinds)
        threading.Thread(target=_send_again, args=(_HEARD[0],), name="stop-again", daemon=True).start()
    _SENDING_AGAIN[0] = False  # (the last step: no call after it, where a handler could run)


# The dispositions from before of the signals `_late_stop` now drops (see _stop_signals_unwind).
_AFTER_STOP: dict[int, Any] = {}


def _late_stop(signum: int, frame: Any) -> None:
    """A stop signal after a command was stopped, while its process ends: dropped."""


def _send_again(signum: int) -> None:
    """Send `signum` to this process until the main thread has raised it again, while our
    handlers are in place (the command done, the signal would meet another disposition)."""
    import time

    while _AGAIN[0] and signum in _OURS:
        time.sleep(RESEND_EVERY_S)
        if _AGAIN[0] and signum in _OURS and not _SENDING_AGAIN[0]:
            with contextlib.suppress(OSError):
                os.kill(os.getpid(), signum)


def _stop_watchdog(read_fd: int, ours: dict[int, Any], done: Any) -> None:
    """A thread woken by Python's C-level signal handler (signal.set_wakeup_fd writes the signal
    number at once, whatever the main thread is doing). When a stop signal whose handler is
    still ours is not heard by the main thread within STOP_GRACE_S -- it is inside a native
    call -- remove this process's temporaries and exit as the unwinding would have: no half
    output, exit 128 + signal. A handler a command installed itself (`tracer record`, `tracer
    run` forward or drain) is left to do its work."""
    import signal
    import time

    while True:
        try:
            data = os.read(read_fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if done.is_set() or not data:
            return
        for signum in data:
            if signum not in ours or signal.getsignal(signum) is not ours[signum]:
                continue
            deadline = time.monotonic() + STOP_GRACE_S
            while time.monotonic() < deadline and not _HEARD and not done.is_set():
                time.sleep(0.02)
            if _HEARD or done.is_set():
                return  # the main thread unwinds (or has finished): its cleanup runs
            # tracer.atomic tracks the temporaries; a process that never imported it has none
            # (and --help or a refused flag does not pay for importing it and shutil here)
            atomic = sys.modules.get("tracer.atomic")
            if atomic is not None:
                atomic.abandon_pending()
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os._exit(128 + signum)


@contextlib.contextmanager
def _stop_signals_unwind() -> Any:
    """SIGTERM/SIGHUP raise Stopped while a command runs (SIGINT KeyboardInterrupt, as always),
    and a watchdog thread makes the stop prompt when the main thread is inside a native call.
    Left alone: a signal someone set to be ignored (nohup's SIGHUP) or handled, and threads other
    than the main one (no handlers)."""
    import signal
    import threading

    installed: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    for sig, handler in ((signal.SIGTERM, _raise_stopped), (signal.SIGHUP, _raise_stopped),
                         (signal.SIGINT, _raise_interrupt)):
        current = signal.getsignal(sig)
        if current is _late_stop:  # (an earlier command of this process was stopped)
            signal.signal(sig, handler)
            installed[sig] = _AFTER_STOP.pop(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        elif current is signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler):
            installed[sig] = signal.signal(sig, handler)
    _OURS.update(installed)
    _HEARD.clear()
    _RAISED.clear()
    _AGAIN[0] = False
    if installed:
        _UNRAISABLE_BEFORE[0], sys.unraisablehook = sys.unraisablehook, _stop_swallowed
    done = threading.Event()
    watchdog = None
    try:  # (a stop landing while the watchdog starts is heard, and the handlers put back, too)
        watchdog = _start_watchdog({sig: signal.getsignal(sig) for sig in installed}, done) if installed else None
        yield
    finally:
        done.set()
        if watchdog is not None:
            watchdog()
        for sig, previous in installed.items():
            # A stopped command's process is ending: further stops (Ctrl-C held down, a storm
            # of them) are dropped until it has -- the disposition from before raised
            # KeyboardInterrupt in the exit's own work (a pool's shutdown, an atexit handler):
            # a traceback, or death by SIGINT (a fresh-clone CI). The next command of this
            # process, if any, restores it (see above).
            if _HEARD:
                _AFTER_STOP[sig] = previous
                signal.signal(sig, _late_stop)
            else:
                signal.signal(sig, previous)
            _OURS.pop(sig, None)
        if installed and sys.unraisablehook is _stop_swallowed:
            sys.unraisablehook = _UNRAISABLE_BEFORE[0]


def _abandon_writes() -> None:
    """A stop that landed between a writer's temporary being made and its clean-up being armed
    (tracer.atomic's few lines between them) left it behind, registered: removed here, once the
    command has unwound, as the stop watchdog does (an audit --html stopped at 2.2 s left
    '.audit.html.<pid>-<hex>.tmp' beside the output)."""
    atomic = sys.modules.get("tracer.atomic")
    if atomic is not None:
        atomic.abandon_pending()


def _start_watchdog(ours: dict[int, Any], done: Any) -> Callable[[], None] | None:
    """Start _stop_watchdog on a wakeup pipe; returns what stops it (None: could not start, as
    under a thread or descriptor limit -- the stop is then heard when the native call returns)."""
    import signal
    import threading

    try:
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    os.set_blocking(read_fd, True)
    try:
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(read_fd)
        os.close(write_fd)
        return None
    size = threading.stack_size()
    try:
        threading.stack_size(256 << 10)  # a few frames deep: not 8 MiB of the address space
        thread = threading.Thread(target=_stop_watchdog, args=(read_fd, ours, done), name="tracebase-stop",
                                  daemon=True)
        thread.start()
    except (RuntimeError, ValueError, MemoryError):
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return None
    finally:
        threading.stack_size(size)

    _WAKEUP_PIPE[:] = [read_fd, write_fd]

    def stop() -> None:
        _WAKEUP_PIPE.clear()
        signal.set_wakeup_fd(previous)
        with contextlib.suppress(OSError):
            os.write(write_fd, b"\0")  # wakes the thread, which sees `done`
        thread.join(timeout=1)
        os.close(write_fd)
        if not thread.is_alive():
            os.close(read_fd)

    return stop


def run(prog: str, description: str, modules: Sequence[str], argv: Sequence[str] | None, epilog: str = "") -> int:
    """Parse argv and run the subcommand; every failure a user can cause is one line, exit 2."""
    _reserve_standard_streams()
    _fit_address_space_limit()
    try:
        with _stop_signals_unwind():
            return _run(prog, description, modules, argv, epilog)
    except Stopped as exc:  # one that landed after the command's own handler returned
        return 128 + exc.signum
    except KeyboardInterrupt:  # Ctrl-C while the handlers were being set up (the watchdog starting)
        return 130


def _reserve_standard_streams() -> None:
    """Give a closed stdin, stdout or stderr (`cmd >&-`, `2>&-`, a daemon's cron) /dev/null.

    Python leaves sys.stdout None for a closed fd 1, and the next file a command opens takes
    that number: a `print` would then land in its output file, and every `sys.stdout.write`
    fail with an AttributeError. On /dev/null the output is dropped as for a reader that went
    away (`| head -1`), the exit status still says what the command found, and an error's one
    line is lost but not its status 2. The descriptor is not inheritable, so a command that
    `tracer record` runs still finds the stream closed, as the caller left it.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:  # lower descriptors are open (checked or reserved): this one gets `fd`
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        except OSError:  # EMFILE at start: nothing to reserve with, and nothing will be opened
            continue
        if null != fd:
            os.dup2(null, fd, inheritable=False)
            os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115
    # Under a UTF-8 locale other than C.UTF-8 (en_US.UTF-8) Python's stdout is strict: a file
    # name with a byte that is not UTF-8 (an output named by the user, a path in a trace) made
    # the line saying the file was written fail after it was, as an internal error.
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream
                stream.reconfigure(errors=_ESCAPE)


# polars' warning when its compiled library fails to import (polars/_utils/polars_version.py)
_POLARS_NOT_LOADED = "Polars binary is missing"


def _fit_address_space_limit() -> None:
    """Under a finite address-space limit (`ulimit -v`, a container's RLIMIT_AS), one malloc
    arena for all threads.

    glibc gives each new thread its own arena, reserving 64 MiB of address space apiece
    (HEAP_MAX_SIZE); with Arrow's, polars' and jemalloc's threads that is most of a GiB of
    reservations that hold no data. Under `ulimit -v 1000000` `baseline learn` aborted (SIGABRT
    in polars' allocator, exit 134, no line) in a run whose data needs ~100 MiB; with one arena
    the same limit runs it, and a limit too low for the libraries still fails as a Python
    MemoryError or an import that cannot map a library: one line naming the limit
    (`_resources_exhausted`). Runs before polars or pyarrow are imported (their threads take
    their arenas at start); without a limit nothing changes (the threads' arenas avoid lock
    contention)."""
    import resource

    if soft_limit(resource.RLIMIT_AS) is None:
        return
    import warnings

    set_malloc(M_ARENA_MAX, 1)  # (musl has no per-thread arenas)
    # Arrow's jemalloc starts background purging threads; refused under the limit, each failure
    # printed a line (13,000 of them under `ulimit -v 1600000`, `baseline ingest`) and the
    # process aborted (134): the system allocator (one arena, above) instead. Read when
    # pyarrow loads, after this.
    own_default("ARROW_DEFAULT_MEMORY_POOL", "system")
    # polars' library that cannot be mapped is only a warning of polars' ("Polars binary is
    # missing!"), then a NameError at its first use: an error here, worded by
    # _resources_exhausted with the limit
    warnings.filterwarnings("error", message=_POLARS_NOT_LOADED, category=UserWarning)


# The address space (`ulimit -v`, RLIMIT_AS) a command needs before its input counts: what
# Python, polars, Arrow, jemalloc and OpenBLAS reserve to start their threads. Below it the
# failures print no line of ours (round ten: `baseline audit` hung in polars' streaming engine,
# deaf to SIGTERM; jemalloc, OpenBLAS and pyarrow aborted; a half-imported polars raised
# NameError). It grows with the threads the libraries start, which is not the CPU count alone
# (round eleven, bench/robust_battery.py; least limit at which `baseline audit` / `learn` of a
# 3-host fleet ran, 16 MiB steps, 2 CPUs): default 798 / 523 MiB, POLARS_MAX_THREADS=16
# 910 / 610 (+8 MiB per polars thread), POLARS_MAX_THREADS=1 OPENBLAS_NUM_THREADS=1 735 / 485
# (an OpenBLAS thread: its 32 MiB buffer and its stack). The floor keeps round ten's ~160 MiB
# of margin over the audit: 960 MiB on this 2-CPU VM, as before.
_ADDRESS_SPACE_BASE_MIB = 848
_POLARS_THREAD_MIB = 8
_ARROW_THREAD_MIB = 8
_BLAS_THREAD_MIB = 40


def _env_count(*names: str, environ: Mapping[str, str] = os.environ) -> int | None:
    """The first of `names` set to a positive integer (as the library reading it takes it)."""
    for name in names:
        value = environ.get(name, "").strip()
        if value.isascii() and value.isdigit() and int(value) > 0:
            return int(value)
    return None


def _cgroup_cpu_limit() -> int | None:
    """CPUs a cgroup v2 `cpu.max` quota allows this process (ceil(quota / period)), as Rust's
    available_parallelism (polars' default thread count) reads it; None without a quota."""
    try:
        with open("/proc/self/cgroup") as fh:
            line = next((row for row in fh if row.startswith("0::")), None)
        if line is None:
            return None
        with open(f"/sys/fs/cgroup{line[3:].strip()}/cpu.max") as fh:
            quota, period = fh.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return max(1, -(-int(quota) // int(period)))


def library_threads(environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """The worker threads polars, OpenBLAS and Arrow will start in this process, from the same
    settings they read: polars POLARS_MAX_THREADS, else the CPUs this process may run on
    (affinity, `taskset`, and a cgroup quota); OpenBLAS OPENBLAS_NUM_THREADS / GOTO_NUM_THREADS
    / OMP_NUM_THREADS capped at the CPUs of the affinity mask (it never starts more); Arrow
    OMP_NUM_THREADS capped by OMP_THREAD_LIMIT, else the machine's CPU count (it ignores
    affinity)."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 1
    quota = _cgroup_cpu_limit()
    usable = min(affinity, quota) if quota else affinity
    polars = _env_count("POLARS_MAX_THREADS", environ=environ) or usable
    blas = min(_env_count(*BLAS_THREAD_SETTINGS, environ=environ) or affinity, affinity)
    arrow = _env_count("OMP_NUM_THREADS", environ=environ) or os.cpu_count() or 1
    limit = _env_count("OMP_THREAD_LIMIT", environ=environ)
    return {"polars": polars, "openblas": blas, "arrow": min(arrow, limit) if limit else arrow}


def min_address_space_mib(environ: Mapping[str, str] = os.environ) -> int:
    """The least `ulimit -v` (MiB) a command starts under here (see _ADDRESS_SPACE_BASE_MIB)."""
    threads = library_threads(environ)
    return (_ADDRESS_SPACE_BASE_MIB + _POLARS_THREAD_MIB * threads["polars"] + _BLAS_THREAD_MIB * threads["openblas"]
            + _ARROW_THREAD_MIB * threads["arrow"])


def _refuse_too_little_address_space() -> None:
    """Under a `ulimit -v` below what the libraries take to start, one line naming the limit
    (exit 2) before any work: past that point the failures print nothing, hang or abort. A
    data-segment limit (`ulimit -d`: private writable mappings, which the libraries' heaps and
    thread stacks are) is held to the same floor: under 100 MiB a command failed in one of a
    MemoryError, an unloadable library ("cannot map zero-fill pages") or a traceback printed by
    hashlib's import."""
    import resource

    need = min_address_space_mib()
    for limit, flag, what in ((resource.RLIMIT_AS, "-v", "an address space"),
                              (resource.RLIMIT_DATA, "-d", "a data segment")):
        soft = soft_limit(limit)
        if soft is not None and soft < need << 20:
            threads = library_threads()
            raise TracebaseError(f"ulimit {flag}: expected {what} of at least {need:,} MiB (what polars, "
                                 f"Arrow and OpenBLAS reserve to start {threads['polars']}, {threads['arrow']} and "
                                 f"{threads['openblas']} worker threads; POLARS_MAX_THREADS, OMP_NUM_THREADS and "
                                 f"OPENBLAS_NUM_THREADS set them), found a limit of {soft >> 20:,} MiB")


# Threads a command starts beside the libraries' pools: the read-ahead and background workers,
# the counters' thread, jemalloc's purging thread
_OWN_THREADS = 4


def _refuse_too_few_threads() -> None:
    """Under a process limit (`ulimit -u`, RLIMIT_NPROC: the user's processes and threads, root
    exempt) with no room for the threads the libraries start, one line naming the limit (exit
    2) before any work: at the limit jemalloc printed a line per refused purging thread (~25,000
    under `ulimit -u 4`), polars panicked, and a diff blamed a sound input's column for the
    thread its reader could not start. Room is tried, not computed (the limit counts every
    process of the user): that many threads are started, parked and released (~1 ms)."""
    import resource
    import threading

    soft = soft_limit(resource.RLIMIT_NPROC)
    if soft is None or os.geteuid() == 0:
        return
    threads = library_threads()
    need = threads["polars"] + threads["arrow"] + _OWN_THREADS
    release = threading.Event()
    started: list[threading.Thread] = []
    try:
        for _ in range(need):
            t = threading.Thread(target=release.wait, daemon=True)
            t.start()
            started.append(t)
    except RuntimeError:  # "can't start new thread"
        pass
    finally:
        release.set()
        for t in started:
            t.join()
    if len(started) < need:
        raise TracebaseError(f"ulimit -u: expected room for {need} threads (polars' {threads['polars']} and "
                             f"Arrow's {threads['arrow']} workers and the command's own; POLARS_MAX_THREADS and "
                             f"OMP_NUM_THREADS set them), found room for {len(started)} under the limit of {soft} "
                             "processes and threads of this user")


# The fewest open files a command is started with: polars' runtime opens its own descriptors
# (epoll, eventfds) at the first query and, refused (`ulimit -n 8`), panicked -- a Rust
# backtrace, then "internal error" -- where 9-12 gave the one-line EMFILE. tracer record's BPF
# programs need more (tracer.record.recorder's RECORD_MIN_FILES).
MIN_OPEN_FILES = 16


def _escape_unencodable(exc: UnicodeError) -> tuple[str, int]:
    """Error handler: a lone surrogate (an undecodable byte of a file name) as \\xNN, as error
    messages show it; any other character the stream's encoding lacks as a Python escape."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                   else c.encode("ascii", "backslashreplace").decode("ascii") for c in bad), exc.end


_ESCAPE = "tracebase.escape"
codecs.register_error(_ESCAPE, _escape_unencodable)


# Settings read from the environment by the libraries underneath, which panic (polars: "Worker
# threads cannot be set to 0", a traceback at the first query) or warn on every command
# instead of naming the variable.
_POSITIVE_INT_ENV = ("POLARS_MAX_THREADS",)
# ... and make a thread each up to the number asked: 100,000 took polars' pool minutes to start
# (the command seemed hung; 1,000 added 16 s to a learn of 0.3 s)
MAX_POOL_THREADS = 1024


def _check_environment() -> None:
    import warnings

    # joblib (under scikit-learn's clustering in the audit) warns in three lines when it cannot
    # make its semaphore (`ulimit -f 0`: EFBIG in /dev/shm) and runs serially, which is right:
    # the result is the same, and the command's own line, if any, says what failed.
    warnings.filterwarnings("ignore", message=r".*joblib will operate in serial mode")
    for name in _POSITIVE_INT_ENV:
        value = os.environ.get(name)
        if value is not None:
            units.int_range(value, f"environment variable {name}", lo=1, hi=MAX_POOL_THREADS)


def _run(prog: str, description: str, modules: Sequence[str], argv: Sequence[str] | None, epilog: str = "") -> int:
    try:
        _check_environment()
        parser = build_parser(prog, description, modules, epilog)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version, a usage error: a status, for in-process callers
            return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
        _refuse_too_little_address_space()
        _refuse_too_few_threads()
        require_open_files(MIN_OPEN_FILES, "polars', Arrow's and the inputs' descriptors")
        pipe = _ClosablePipe(sys.stdout)
        stdout, sys.stdout = sys.stdout, pipe
        try:
            status = int(args.func(args) or 0)
        except BaseException:
            with contextlib.suppress(OSError, ValueError):  # (the error it ends with is what is said)
                pipe.flush()
            raise
        finally:
            sys.stdout = stdout
        pipe.flush()  # the output's last block: an error writing it is trouble, not a quiet cut
        return status
    except TracebaseError as exc:
        _say(prog, str(exc))
        return exc.exit_status
    except KeyboardInterrupt:
        _abandon_writes()
        return 130
    except Stopped as exc:  # SIGTERM 143, SIGHUP 129: as a shell reports a command they ended
        _abandon_writes()
        return 128 + exc.signum
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:
        if _HEARD and _in_main_thread():  # (other threads install no handlers: _HEARD is not theirs)
            # A stop landed inside code that turned it into another exception -- a native
            # module's initialisation ("ImportError: initialization failed", a coverage report
            # stopped while matplotlib loaded), a clean-up that failed on the way out: the stop
            # is what ended the command.
            _abandon_writes()
            return 128 + _HEARD[0]
        return _failed(prog, exc)
    except BaseException as exc:
        # A Rust panic in polars (pyo3's PanicException derives from BaseException, so that
        # `except Exception` does not swallow it): a bug or an environment polars refuses, one
        # line all the same, not a traceback and exit 1.
        if type(exc).__name__ != "PanicException":
            raise
        if _HEARD and _in_main_thread():  # a stop polars' start-up turned into a panic (it
            # unwraps the Stopped its import of a module raised): the stop ended the command
            _abandon_writes()
            return 128 + _HEARD[0]
        return _internal_error(prog, exc)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _failed(prog: str, exc: Exception) -> int:
    """The exit status and line of a command that failed with `exc` (not a stop)."""
    try:
        raise exc
    except OSError as exc:
        _say(prog, str(_unreadable_data(exc) or describe_os_error(exc)))
        return 2
    except RecursionError as exc:  # pathological input (deep nesting): say so, do not dump
        _say(prog, f"input too deeply nested ({exc})")
        return 2
    except RuntimeError as exc:
        loop = _symlink_loop(exc)
        if loop is None:
            return _internal_error(prog, exc)
        _say(prog, loop)
        return 2
    except Exception as exc:
        return _internal_error(prog, exc)


def _internal_error(prog: str, exc: BaseException) -> int:
    """A bug (or corrupt data a reader did not name): one line, the traceback saved to a file."""
    named = _unreadable_data(exc)
    if named is not None:
        _say(prog, str(named))
        return named.exit_status
    exhausted = _resources_exhausted(exc)
    if exhausted is not None:
        _say(prog, exhausted)
        return 2
    from tracer.cli.shadowed import shadowing_module

    if (shadowed := shadowing_module(exc)) is not None:  # the environment's: a module on PYTHONPATH
        _say(prog, shadowed)
        return 2
    if os.environ.get("TRACEBASE_DEBUG"):
        raise exc
    where = _save_traceback(prog)
    _say(prog, f"internal error (a bug, please report it): {type(exc).__name__}: "
               f"{_one_line(str(exc))}{where}")
    return 2


# How running out of memory or threads surfaces from Python, the dynamic loader (a library
# imported late cannot be mapped) and polars (a Rust panic when a thread cannot be spawned).
_EXHAUSTED = ("failed to map segment", "cannot map zero-fill pages", "can't start new thread", "cannot allocate memory",
              "memory allocation of", "resource temporarily unavailable", "out of memory")


def _resources_exhausted(exc: BaseException) -> str | None:
    """Out of memory or threads (a low `ulimit -v`/`-u`, a container's limit) is the machine's
    state, not a bug: one line saying so and naming the address-space limit when one is set.
    (An allocation failing inside Rust or jemalloc aborts the process: no line is possible.)"""
    text = str(exc)
    # (RuntimeError: threading's "can't start new thread", when the stack cannot be mapped)
    native = (isinstance(exc, ImportError) or type(exc).__name__ == "PanicException"
              or (isinstance(exc, RuntimeError) and "can't start new thread" in text))
    if isinstance(exc, UserWarning) and _POLARS_NOT_LOADED in text:
        text = "polars' library could not be loaded"
    elif not isinstance(exc, MemoryError) and not (native and any(s in text.lower() for s in _EXHAUSTED)):
        return None
    return f"out of memory or threads: {type(exc).__name__}: {_one_line(text)}{_memory_limits()}"


def _memory_limits() -> str:
    """'; the address space is limited to N MiB (ulimit -v)', and the data segment's (ulimit
    -d) and the processes' (ulimit -u) when set: what a process out of memory or threads ran
    into (empty when nothing is limited)."""
    import resource

    said = []
    for limit, words, unit in ((resource.RLIMIT_AS, "the address space is limited to {} (ulimit -v)", "MiB"),
                               (resource.RLIMIT_DATA, "the data segment is limited to {} (ulimit -d)", "MiB"),
                               (resource.RLIMIT_NPROC, "the user's processes and threads are limited to {} "
                                                       "(ulimit -u)", "")):
        soft = soft_limit(limit)
        if soft is not None and (unit or os.geteuid() != 0):  # (root is exempt from -u)
            said.append(words.format(f"{soft >> 20} MiB" if unit else soft))
    return "".join(f"; {w}" for w in said)


_SYMLINK_LOOP = "Symlink loop from "


def _symlink_loop(exc: RuntimeError) -> str | None:
    """Python < 3.13's Path.resolve() reports a symlink loop in a user's path as RuntimeError
    ('Symlink loop from PATH') where every other call raises OSError ELOOP: word it the same."""
    text = str(exc)
    if not text.startswith(_SYMLINK_LOOP):
        return None
    path = text[len(_SYMLINK_LOOP):].strip("'\"")
    return f"{_printable(path)}: {os.strerror(errno.ELOOP)}"


def _exit_at_once(signum: int, frame: Any) -> None:
    os._exit(128 + signum)


def exit_process(code: int) -> NoReturn:
    """End a command-line process with `code`, skipping C++ static destructors.

    Python's own exit work runs (atexit handlers: bcc's cleanup, multiprocessing's pool
    shutdown; buffered output is flushed), then os._exit. Arrow's and polars' native thread
    pools are torn down by static destructors, which now and then abort with "terminate called
    without an active exception" (SIGABRT) when a worker is still alive (apache/arrow#34314),
    turning a finished command's exit status 0 or 2 into -6. The console scripts and
    `python -m tracer.cli` / `python -m baseline.cli` end here; `main(argv)` itself returns.

    A stop signal from here on finds the command done: the process ends at once, as the default
    action would, but with the status a shell gives a command it ended (143, 129, 130), not a
    death by signal (-15) that a caller reading the wait status takes for a crash (a SIGTERM
    landing in `baseline export`'s exit work, after its output was written).
    """
    import atexit
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(ValueError):  # (not the main thread: no handlers)
            if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(sig, _exit_at_once)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BrokenPipeError:
                _silence_stdout()
            except OSError as exc:
                # the last of the output (--help, --version, a short report) did not reach a
                # full disk or /dev/full: trouble, not a silent success
                if stream is sys.stdout:
                    _say(os.path.basename(sys.argv[0]) or "tracebase", describe_os_error(_on_stdout(exc)))
                    code = 2
            except ValueError:  # closed by the handler
                pass
        os._exit(code & 0xFF if code >= 0 else 1)


def _on_stdout(exc: OSError) -> OSError:
    """A write error on standard output names it, as one on a file names the file."""
    if exc.filename is None:
        exc.filename = "<stdout>"
    return exc


# How Rust's std (polars' file reads) words EMFILE in an error with no errno of Python's
_RUST_EMFILE = f"(os error {errno.EMFILE})"


def describe_os_error(exc: OSError) -> str:
    """'PATH: No space left on device' (PATH -> PATH2 for rename/link errors)."""
    reason = exc.strerror or _one_line(str(exc)) or type(exc).__name__
    relative = exc.filename is None or not os.path.isabs(os.fsdecode(exc.filename))
    if exc.errno == errno.ENOENT and relative and cwd_removed():
        # getcwd() fails, and a relative path (a default output, a temporary beside it) with
        # it: the file the error names, if any, is not what is missing
        return ("current directory: expected an existing directory, found it removed; "
                "cd to one or give absolute paths")
    if exc.errno == errno.EMFILE or (exc.errno is None and _RUST_EMFILE in reason):
        # often no file to name (a pipe for a pool's worker, a socket): name the limit instead;
        # polars' own reads raise it with no errno ("Too many open files (os error 24): PATH")
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        reason += f" (ulimit -n: expected room for more open files, found the limit of {soft} reached)"
    if exc.filename is not None:
        where = os.fsdecode(exc.filename) if isinstance(exc.filename, bytes) else str(exc.filename)
        if exc.filename2 is not None:
            where += f" -> {exc.filename2}"
        return f"{_printable(where)}: {reason}"
    return _printable(reason)


def _unreadable_data(exc: BaseException) -> TracebaseError | None:
    """A read that failed on corrupt Parquet pages is bad input, not a bug: name the file."""
    if "tracer.schema" not in sys.modules:  # nothing was read through the data model
        return None
    from tracer.schema import unreadable_file_error

    try:
        return unreadable_file_error(exc)
    except OSError:  # finding the file failed too (a limit reached): the error as it is says more
        return None


def _say(prog: str, message: str) -> None:
    for name in _names_given(sys.argv[1:]):
        message = message.replace(name, printable(name))
    with contextlib.suppress(OSError, ValueError):  # stderr closed: the exit status still says it
        print(f"{prog}: error: {printable(_printable(_one_line(message)))}", file=sys.stderr, flush=True)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _names_given(argv: Sequence[str]) -> list[str]:
    """The parts of the command line's words (between "/" and "=") holding a control character
    (a file called "odd\nname"), longest first: an error line shows them escaped, so it names
    that file and not "odd name", while a message's own line breaks fold into spaces."""
    names = {part for word in argv for part in re.split(r"[/=]", word)
             if not part.isprintable() and any(c.isprintable() and not c.isspace() for c in part)}
    return sorted(names, key=len, reverse=True)


def _printable(text: str) -> str:
    # Undecodable bytes in a file name arrive as lone surrogates (surrogateescape): show them
    # as \xNN rather than failing to print the error about that very file.
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class _ClosablePipe:
    """stdout for a command's handler: when the reader goes away (`baseline diff ... | head -1`)
    the rest of the output is dropped and the command finishes, so its exit status still says
    what it found (diff: 1 = anomaly) and what it writes to files is complete.

    Written whole or not at all: the text is encoded here and written to the descriptor in a
    loop until every byte is out. Python's buffered stdout takes a short write for a whole one
    and drops the rest without a word -- a stdout file reaching `ulimit -f` or a disk that
    fills after the first bytes (write returns the part that fitted, the next one would fail)
    left a cut JSON and exit 0. Now the next write's error names <stdout> (exit 2). A
    non-blocking stdout (O_NONBLOCK set by whoever opened the pipe) is waited on when full
    (STDOUT_STALL_S at most, then its EAGAIN names <stdout>), where the buffered stream dropped
    what did not fit (battery 51). A terminal gets each line
    as it is written, anything else blocks of STDOUT_BLOCK bytes. Streams without a descriptor
    (a test's io.StringIO) are written as they are."""

    def __init__(self, stream: Any):
        self._stream, self._closed = stream, False
        self._pending = bytearray()
        try:
            self._fd: int | None = stream.fileno()
            self._lines = stream.isatty()
        except (OSError, ValueError, AttributeError):
            self._fd, self._lines = None, False
        self._encoding = getattr(stream, "encoding", None) or "utf-8"
        self._errors = getattr(stream, "errors", None) or "strict"
        self._started = False

    def write(self, text: str) -> int:
        if self._closed:
            return len(text)
        if self._fd is None:
            self._on_stream(self._stream.write, text)
            return len(text)
        if not self._started:  # what the stream held from before the handler ran goes first
            self._started = True
            self._on_stream(self._stream.flush)
        data = text.encode(self._encoding, self._errors)
        if len(data) >= STDOUT_BLOCK:  # (a whole document at once: written as it is, not copied again)
            self._drain()
            self._write_all(data)
            return len(text)
        self._pending += data
        if len(self._pending) >= STDOUT_BLOCK or (self._lines and "\n" in text):
            self._drain()
        return len(text)

    def flush(self) -> None:
        if self._closed:
            return
        if self._fd is None:
            self._on_stream(self._stream.flush)
        else:
            self._drain()

    def _on_stream(self, call: Callable[..., Any], *args: Any) -> None:
        """`call` on the stream itself: a reader gone ends the output quietly, another error
        (ENOSPC: /dev/full, a full disk; EIO) names <stdout>."""
        try:
            call(*args)
        except BrokenPipeError:
            self._close()
        except OSError as exc:
            raise _on_stdout(exc) from None

    def _drain(self) -> None:
        # (taken out first: an error leaves nothing to fail again in the exit's flush)
        data, self._pending = self._pending, bytearray()
        self._write_all(data)

    def _write_all(self, data: bytes | bytearray) -> None:
        import select

        view, done = memoryview(data), 0
        while done < len(view) and not self._closed:
            try:
                done += os.write(self._fd, view[done:])
            except BlockingIOError as exc:  # a full non-blocking pipe: wait until it takes more
                if not select.select([], [self._fd], [], STDOUT_STALL_S)[1]:
                    # a blocking write would wait for ever; a reader that only reads once the
                    # command has ended never comes: said, as GNU tools say EAGAIN at once
                    exc.strerror = f"{exc.strerror} (a non-blocking stdout nothing read for {STDOUT_STALL_S:.0f} s)"
                    raise _on_stdout(exc) from None
            except BrokenPipeError:
                self._close()
            except OSError as exc:
                raise _on_stdout(exc) from None

    def _close(self) -> None:
        self._closed = True
        self._pending.clear()
        _silence_stdout()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer, ...
        return getattr(self._stream, name)


# stdout's write size for anything but a terminal (io.DEFAULT_BUFFER_SIZE, as the stream's)
STDOUT_BLOCK = 8192
# How long a full non-blocking stdout is waited on for its reader before the write is an error
STDOUT_STALL_S = 10.0


def _silence_stdout() -> None:
    # Python flushes stdout at exit and would print "Exception ignored ... BrokenPipeError".
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _save_traceback(prog: str) -> str:
    import tempfile
    import traceback  # here, not at the top: --help and the refused flags never need it

    try:
        fd, path = tempfile.mkstemp(prefix=f"{prog}-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            traceback.print_exc(file=fh)
    except OSError:
        return "; rerun with TRACEBASE_DEBUG=1 for the traceback"
    return f"; traceback in {path}"


# --------------------------------------------------------------------------------------------
# argparse type converters over tracer.units (the flag is named by argparse's own prefix)
# --------------------------------------------------------------------------------------------
def _converter(fn: Callable[..., Any], name: str, **kwargs: Any) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return fn(text, None, **kwargs)
        except TracebaseError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name  # argparse names the converter in some messages
    return convert


duration = _converter(units.parse_duration, "duration")
"""type= for a duration in seconds (> 0): 100us, 5ms, 10s, 2m, 1h, 1d, plain seconds."""
duration_or_zero = _converter(units.parse_duration, "duration", allow_zero=True)
duration_ns = _converter(units.parse_duration_ns, "duration")


def since(text: str) -> Any:
    """type= for a time: ISO date/date-time (naive = UTC), 'now', or a duration ago (2h). A time
    without an offset is read as UTC everywhere; when the local zone differs, one note on stderr
    says how it was read (the command goes on), so a local time is never silently shifted."""
    try:
        parsed = units.parse_time(text, None)
    except TracebaseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    note = units.naive_time_note(text, parsed) if parsed is not None else None
    if note:
        with contextlib.suppress(OSError, ValueError):  # stderr closed: the note is advice only
            print(f"{os.path.basename(sys.argv[0]) or 'tracebase'}: {_printable(note)}", file=sys.stderr, flush=True)
    return parsed


since.__name__ = "time"
positive_int = _converter(units.positive_int, "positive integer")
non_negative_int = _converter(units.non_negative_int, "integer")
positive_float = _converter(units.positive_float, "number")
non_negative_float = _converter(units.non_negative_float, "number")
fraction = _converter(units.fraction, "fraction")
finite_float = _converter(units.finite_float, "number")


def output_path(what: str, file: bool = False, stdout: bool = False) -> Callable[[str], str]:
    """type= for an output path of a command that cannot write to stdout (Parquet, a directory,
    a YAML file merged in place, a file beside a command's own output): `-` is refused, naming
    the flag, rather than written as a file called `-` in the current directory (what `-o -`
    did everywhere but `baseline export`, which writes its JSON to stdout: `stdout=True`).
    `./-` names such a file. An empty argument is refused too (Path('') is the current
    directory). With `file`, a name ending in "/" -- a directory's -- is refused: Path() drops
    the slash, and `-o new/` wrote a file called `new`."""

    def convert(text: str) -> str:
        if text == "-" and not stdout:
            raise argparse.ArgumentTypeError(
                f"expected a path for {what}, found '-' (this command does not write to stdout; "
                "./- is a file named -)")
        if text == "":
            raise argparse.ArgumentTypeError(f"expected a path for {what}, found '' (an empty argument)")
        if file and text.endswith("/"):
            raise argparse.ArgumentTypeError(
                f"expected a file name for {what}, found a directory's name ({text}: it ends in /)")
        return text

    convert.__name__ = "path"
    return convert


def input_path(what: str) -> Callable[[str], str]:
    """type= for a path a command reads: an empty argument is refused, naming the flag
    (Path('') is the current directory: `--findings ''` read ./ and blamed it for holding no
    findings, `--model ''` said ': no such file')."""

    def convert(text: str) -> str:
        if text == "":
            raise argparse.ArgumentTypeError(f"expected a path for {what}, found '' (an empty argument)")
        return text

    convert.__name__ = "path"
    return convert


def non_empty(what: str) -> Callable[[str], str]:
    """type= for a name a command looks up (a trace id): an empty argument is refused, naming
    the flag (`--trace-id ''` was taken for a trace id, and the diff blamed the file: "trace_id:
    expected '', found ...")."""

    def convert(text: str) -> str:
        if text == "":
            raise argparse.ArgumentTypeError(f"expected {what}, found '' (an empty argument)")
        return text

    convert.__name__ = "name"
    return convert


def float_range(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> Callable[[str], float]:
    """type= for a finite number in [lo, hi]."""
    return _converter(units.finite_float, "number", lo=lo, hi=hi, lo_open=lo_open)


def int_range(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """type= for an integer in [lo, hi]."""
    return _converter(units.int_range, "integer", lo=lo, hi=hi)


# --------------------------------------------------------------------------------------------
# the shared flag vocabulary
# --------------------------------------------------------------------------------------------
def hidden_alias(parser: argparse.ArgumentParser | argparse._ActionsContainer, *flags: str, dest: str,
                 **kwargs: Any) -> None:
    """Accept `flags` as another spelling of `dest` without listing them in --help."""
    parser.add_argument(*flags, dest=dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)


def add_output(parser: argparse.ArgumentParser, *, help: str, metavar: str = "FILE", required: bool = False,
               dest: str = "output", what: str | None = None, **kwargs: Any) -> None:
    """`-o/--output` (`--out` accepted as a hidden alias); dest `output`.

    `required=True` puts both spellings in a required group, so `--out DIR` satisfies it too.
    `-` is stdout only for a command that passes its own `type=` (export's JSON); for the rest
    it is refused naming the flag (`output_path`, `what` saying what the output is).
    """
    kwargs.setdefault("type", output_path(what or ("a directory" if metavar == "DIR" else "a file"),
                                          file=metavar != "DIR"))
    target: Any = parser.add_mutually_exclusive_group(required=True) if required else parser
    target.add_argument("-o", "--output", metavar=metavar, help=help, dest=dest, **kwargs)
    hidden_alias(target, "--out", dest=dest, metavar=metavar)


def add_json(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON document on stdout")
