"""The dispatcher every command goes through (tracer.cli.common.run): one line and exit 2 for
user and OS errors, 130 on Ctrl-C, a bug reported in one line with its traceback saved."""

from __future__ import annotations

import argparse
import errno
import re
import sys
import types
from pathlib import Path

import pytest

from tracer.cli import common
from tracer.errors import TracebaseError

RAISES = {
    "enospc": OSError(errno.ENOSPC, "No space left on device", "/mnt/full/out.parquet"),
    "erofs": OSError(errno.EROFS, "Read-only file system", "/mnt/ro/x"),
    "eacces": PermissionError(errno.EACCES, "Permission denied", "/root/secret"),
    "rename": OSError(errno.EXDEV, "Invalid cross-device link", "/a/x", None, "/b/y"),
    "nameless": OSError(errno.EIO, "Input/output error"),
    "undecodable": FileNotFoundError(errno.ENOENT, "No such file or directory", "/tmp/bad-\udcff.parquet"),
    "user": TracebaseError("--trend-pct: expected a finite number > 0, found 'nan'"),
    "multiline": TracebaseError("first line\nsecond line"),
    "interrupt": KeyboardInterrupt(),
    "bug": ValueError("unexpected\nstate"),
}


@pytest.fixture(scope="module")
def commands():
    mod = types.ModuleType("tracebase_test_commands")

    def register(sub):
        p = sub.add_parser("do")
        p.add_argument("what")
        p.add_argument("-n", type=common.positive_int, default=1)
        p.add_argument("-d", "--duration", type=common.duration)
        p.set_defaults(func=handle)

    def handle(args):
        if args.what == "ok":
            return 0
        raise RAISES[args.what]

    mod.register = register
    sys.modules[mod.__name__] = mod
    yield mod.__name__
    del sys.modules[mod.__name__]


def _run(commands, capsys, *argv):
    code = common.run("prog", "test", [commands], list(argv))
    out, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("enospc", "prog: error: /mnt/full/out.parquet: No space left on device"),
        ("erofs", "prog: error: /mnt/ro/x: Read-only file system"),
        ("eacces", "prog: error: /root/secret: Permission denied"),
        ("rename", "prog: error: /a/x -> /b/y: Invalid cross-device link"),
        ("nameless", "prog: error: Input/output error"),
        ("undecodable", "prog: error: /tmp/bad-\\xff.parquet: No such file or directory"),
        ("user", "prog: error: --trend-pct: expected a finite number > 0, found 'nan'"),
        ("multiline", "prog: error: first line second line"),
    ],
)
def test_errors_are_one_line_exit_2(commands, capsys, what, message):
    code, err = _run(commands, capsys, "do", what)
    assert code == 2 and err == message + "\n"


def test_interrupt_is_130_and_quiet(commands, capsys):
    assert _run(commands, capsys, "do", "interrupt") == (130, "")


def test_interrupt_while_the_stop_handlers_are_set_up_is_130_and_quiet(commands, capsys, monkeypatch):
    """Ctrl-C landing once run() has put in its SIGINT handler but before the command starts (the
    watchdog thread starting) raised out of run(): a traceback, death by SIGINT (the adversarial
    battery's early signals, 2 in 60)."""
    def interrupted(*_args):
        raise KeyboardInterrupt

    import signal

    monkeypatch.setattr(common, "_start_watchdog", interrupted)
    monkeypatch.setattr(signal, "getsignal", lambda sig: signal.SIG_DFL)  # (as in a command's own process)
    assert _run(commands, capsys, "do", "ok") == (130, "")


def test_a_bug_is_one_line_with_the_traceback_saved(commands, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("TRACEBASE_DEBUG", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    code, err = _run(commands, capsys, "do", "bug")
    assert code == 2 and err.count("\n") == 1
    match = re.fullmatch(r"prog: error: internal error \(a bug, please report it\): ValueError: unexpected state; "
                         r"traceback in (\S+)\n", err)
    assert match, err
    assert "Traceback" in Path(match.group(1)).read_text()
    monkeypatch.setenv("TRACEBASE_DEBUG", "1")
    with pytest.raises(ValueError):
        _run(commands, capsys, "do", "bug")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["do", "ok", "-n", "0"], "prog: error: -n: expected a positive integer, found '0' (see 'prog do --help')"),
        (["do", "ok", "-d", "nan"], "prog: error: -d/--duration: expected a duration like 100us, 5ms, 10s, 2m, 1h, "
                                    "1d or plain seconds, greater than 0, found 'nan' (see 'prog do --help')"),
        (["nosuch"], "prog: error: COMMAND: invalid choice"),
        ([], "prog: error: the following arguments are required: COMMAND"),
    ],
)
def test_usage_errors_are_one_line_exit_2(commands, capsys, argv, words):
    code, err = _run(commands, capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith(words), err


def test_help_and_version_exit_0(commands, capsys):
    assert _run(commands, capsys, "--version")[0] == 0
    assert _run(commands, capsys, "do", "--help")[0] == 0
    assert _run(commands, capsys, "do", "ok") == (0, "")


# A Ctrl-C that lands while the console script is still importing the CLI (the first ~50 ms of
# every command) is raised here deterministically: an import hook interrupts the first import
# of tracer.units, which tracer.cli.common needs. The process runs the real console-script
# entry points as installed (pyproject [project.scripts]).
INTERRUPT_WHILE_IMPORTING = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "tracer.units":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
from {package}.cli import entry
entry()
"""


@pytest.mark.parametrize("package", ["tracer", "baseline"])
def test_interrupt_while_the_cli_loads_is_130_and_quiet(package):
    import subprocess

    proc = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_IMPORTING.format(package=package), "--version"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "", "")


# A stop signal that lands after the command is done, in the process's exit work (atexit
# handlers, the last flush): an atexit handler registered first (so run last) writes a file to
# say the exit work began, then sleeps, and the test sends the signal then.
STOP_DURING_EXIT = """
import atexit, os, signal, sys, time
# as a shell in a terminal starts it: a background launcher (CI's `cmd &`) passes SIGINT on ignored
signal.signal(signal.{sig}, signal.default_int_handler if signal.{sig} == signal.SIGINT else signal.SIG_DFL)
def exiting():
    open(sys.argv.pop(), "w").close()
    time.sleep(30)
atexit.register(exiting)
from {package}.cli import entry
entry()
"""


@pytest.mark.parametrize(("package", "sig", "status"), [("baseline", "SIGTERM", 143), ("tracer", "SIGHUP", 129),
                                                        ("baseline", "SIGINT", 130)])
def test_a_stop_during_the_exit_work_is_the_shells_status_not_a_death_by_signal(package, sig, status, tmp_path):
    import signal
    import subprocess
    import time

    began = tmp_path / "exiting"
    proc = subprocess.Popen([sys.executable, "-c", STOP_DURING_EXIT.format(package=package, sig=sig), "--version", str(began)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        deadline = time.monotonic() + 60
        while not began.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert began.exists(), proc.communicate(timeout=10)
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err) == (status, ""), out
    assert out.strip(), "the command's own output (--version) came out before"


def test_a_reader_that_went_away_changes_neither_status_nor_stderr():
    """`tracer probes check --json | head -c0`: stdout's reader is gone before anything is
    written (EPIPE on the first write). No traceback, nothing on stderr, and the exit status is
    the command's own (here 1 = probes missing on this host, as without the pipe), so a
    `set -o pipefail` script still learns what the command found."""
    import json
    import os
    import subprocess

    tracer = [str(Path(sys.executable).parent / "tracer"), "probes", "check", "--json"]
    plain = subprocess.run(tracer, capture_output=True, text=True, timeout=120)
    assert json.loads(plain.stdout) and plain.stderr == ""
    read, write = os.pipe()
    os.close(read)
    try:
        piped = subprocess.run(tracer, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (piped.returncode, piped.stderr) == (plain.returncode, "")


def test_baseline_command_table_names_every_module_s_subcommands():
    """`baseline CMD` builds only CMD's module's parser (baseline.cli.COMMANDS): the table
    must name exactly the subcommands each module registers, or a command would be missing."""
    import baseline.cli as cli

    registered: dict[str, str] = {}
    for module in cli.SUBCOMMANDS:
        parser = common.build_parser("baseline", "", [module])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        registered.update(dict.fromkeys(sub.choices, module))
    assert registered == cli.COMMANDS


def test_baseline_runs_a_command_built_alone(capsys):
    import baseline.cli as cli

    assert cli.main(["diff", "--help"]) == 0
    assert "name the bifurcation point" not in capsys.readouterr().err
    # a command the table does not name still gets the full parser's answer (exit 2, usage)
    assert cli.main(["no-such-command"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_stop_heard_in_polars_own_code_is_heard_again_later():
    """A handler run while polars' Python code runs -- maybe a callback of its Rust code
    (DataFrame.dtypes building a dtype object): raising there was a Rust panic (a stack
    backtrace and an internal error, 2 SIGTERMs in ~20 at the end of `baseline simulate`).
    There the stop is not raised but sent again, to be raised where our code runs."""
    import sys as _sys

    from tracer.cli import common

    scope: dict = {"__name__": "polars.datatypes.classes", "_sys": _sys}
    exec("def here():\n    return _sys._getframe()\n", scope)
    assert common._in_native_callback(scope["here"]())
    assert not common._in_native_callback(_sys._getframe())
    assert not common._in_native_callback(None)


STOP_INSIDE_A_PANIC = """
import os, signal, sys, time, types
from tracer.cli import common

class PanicException(BaseException):  # pyo3's, raised where polars' Rust code unwraps a PyErr
    pass

def handle(args):
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # heard here: Stopped raised into this frame
        time.sleep(5)
    except BaseException as exc:
        # polars' start-up (`__register_startup_deps`) importing a module when the stop landed:
        # the Stopped came back as a panic
        raise PanicException(f"called `Result::unwrap()` on an `Err` value: {exc!r}") from None
    return 0

mod = types.ModuleType("stop_in_panic")
mod.register = lambda sub: sub.add_parser("do").set_defaults(func=handle)
sys.modules["stop_in_panic"] = mod
sys.exit(common.run("prog", "test", ["stop_in_panic"], ["do"]))
"""


def test_a_stop_that_native_code_turned_into_a_panic_is_the_stop(tmp_path):
    """SIGTERM landing while polars' start-up imports a module: its Rust code unwraps the
    Stopped raised there and panics (battery 42 under load: "internal error ... PanicException"
    and the PyErr's traceback text on stderr). The stop ended the command: 143, nothing said,
    no crash file."""
    import os
    import subprocess

    proc = subprocess.run([sys.executable, "-c", STOP_INSIDE_A_PANIC], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1], env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (proc.returncode, proc.stderr) == (143, "")
    assert not list(tmp_path.glob("prog-crash-*"))


def test_a_name_given_with_a_control_character_is_escaped_while_line_breaks_fold(commands, capsys, monkeypatch):
    """A file called "odd\\nname" is named escaped (folded, the line named "odd name", a file that
    does not exist); the message's own line breaks still fold into spaces."""
    monkeypatch.setattr(sys, "argv", ["prog", "do", "dir/odd\nname.parquet"])
    assert common._names_given(sys.argv[1:]) == ["odd\nname.parquet"]
    common._say("prog", "dir/odd\nname.parquet: no such file\nor directory")
    assert capsys.readouterr().err == "prog: error: dir/odd\\nname.parquet: no such file or directory\n"
