"""The ``simdup`` command line: a thin click layer over the library.

Each command parses options, builds library objects, makes one library call, renders and
writes. Run ``simdup COMMAND --help`` for a command's options and examples.

This module is the console script's entry point and stays light: :func:`main` is running,
ready for Ctrl-C, before click, rich, numpy and the commands are imported. The click group
itself is :data:`simdup.cli.app.cli` (also importable from here).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import gc
import io
import os
import signal
import sys
import threading
from typing import Any, NoReturn

from simdup.cli import interrupts

TYPE_CHECKING = False  # mypy reads the import below; at run time __getattr__ provides it
if TYPE_CHECKING:
    from simdup.cli.app import cli

__all__ = ["cli", "main"]

#: The cyclic collector's thresholds for a run (Python's default: 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 100)

#: Exit status of a run ended by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: Exit status of a run ended by ``kill`` (128 + SIGTERM).
TERMINATED = 143


def __getattr__(name: str) -> object:
    """Provide ``cli`` (the click group) without importing it with this module."""
    if name != "cli":
        raise AttributeError(f"module 'simdup.cli' has no attribute {name!r}")
    from simdup.cli.app import cli

    return cli


class _ClosedBinary:
    """Stands in for the binary side of a closed standard stream: reads and writes fail."""

    def read(self, size: int = -1) -> bytes:
        raise OSError(errno.EBADF, "the stream is closed")

    def write(self, data: bytes) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def flush(self) -> None:
        """Nothing is ever buffered."""


class _ClosedText(io.TextIOBase):
    """Stands in for a standard stream the shell closed (``>&-``, ``<&-``)."""

    buffer = _ClosedBinary()

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def isatty(self) -> bool:
        return False


def _replace_closed_streams() -> None:
    """Give closed standard streams a stand-in, so using one is an error message, not a crash.

    Reading a closed stdin or writing results to a closed stdout fails with a message; messages
    meant for a closed stderr are dropped, as nobody can read them.
    """
    for name in ("stdin", "stdout"):
        if getattr(sys, name) is None:
            setattr(sys, name, _ClosedText())
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def _interrupted(*, end_line: bool = True) -> None:
    """End the run after Ctrl-C: one line on stderr, exit status 130, whatever was running.

    After ``kill`` (SIGTERM) the same, but "terminated" and status 143. Either way the
    run's temporary files are gone by then.

    Args:
        end_line: First end the terminal's ``^C`` line (click has done it when it aborts).
    """
    killed = interrupts.terminated()
    line = "simdup: terminated\n" if killed else "simdup: interrupted\n"
    try:
        sys.stderr.write("\n" + line if end_line and not killed else line)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: nobody can read the line
        pass
    sys.exit(TERMINATED if killed else INTERRUPTED)


def _entry_point() -> bool:
    """Tell whether this process is the command line (the console script, ``-m simdup``).

    A spawned worker re-imports the program as ``__mp_main__``: it is not the command line.
    """
    program = sys.modules.get("__main__")
    if getattr(program, "__name__", None) != "__main__":
        return False
    spec = getattr(program, "__spec__", None)
    if spec is not None and spec.name == "simdup.__main__":
        return True
    path = getattr(program, "__file__", None) or ""
    return os.path.basename(path).removesuffix(".exe") == "simdup"


if _entry_point():  # from here on, Ctrl-C ends the run with status 130 and one line
    interrupts.watch()


def main(args: list[str] | None = None) -> None:
    """Run the command line and exit with its status.

    Ctrl-C at any moment, even while the modules are still loading, ends the run with status
    130 and one line, and a closed output pipe (``simdup scan ... | head -1``) ends quietly,
    never with a traceback.
    """
    # numpy asks for huge pages for its large arrays by default; where the kernel then
    # compacts memory on each first touch, that made arrays 3 to 10 times slower to fill
    # (a 100,000-document scan 13% slower, held fingerprints of 1,000,000 documents 30%).
    # Set before numpy loads, here and in worker processes; an explicit value is kept.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    # OpenBLAS starts its threads as numpy loads, and by default they spin for 2**28 cycles
    # (about a tenth of a second of a core) waiting for work before they sleep: most runs
    # never multiply matrices, and on a busy machine that core is someone else's. Here
    # they sleep at once; a matrix product wakes them, in the same seconds.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    # A run holds millions of small objects (names, listed files) that live until it
    # ends, and the collector's default pace walks them again and again: the walk of
    # 1,000,000 files took 6.0 s, 5.0 s with this pace, 4.6 s without collections. Cycles
    # are still collected, less often. A caller in this process gets its own pace back.
    pace = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    hook = sys.unraisablehook
    replaced: dict[int, Any] = {}
    try:
        try:
            replaced = interrupts.watch()
            sys.unraisablehook = functools.partial(interrupts.unraisable, hook)
            interrupts.set_raising(True)
            interrupts.checkpoint()
            _replace_closed_streams()
            status = _run(args)
        except KeyboardInterrupt:
            _interrupted()
        if interrupts.RECEIVED:
            _interrupted()
        sys.exit(status)
    except SystemExit as exc:
        if interrupts.RECEIVED and exc.code not in (INTERRUPTED, TERMINATED):
            _interrupted()
        if exc.code in _FINISHED and _entry_point() and _only_thread():
            _leave(int(exc.code or 0))
        raise
    finally:
        # The status is decided: a later Ctrl-C changes nothing. A caller in this process
        # (a test) gets its own handler back.
        interrupts.set_raising(False)
        interrupts.RECEIVED.clear()
        sys.unraisablehook = hook
        gc.set_threshold(*pace)
        for number, previous in replaced.items():
            signal.signal(number, previous)


#: Exit statuses of a run that finished its work (nothing to clean up after a failure).
_FINISHED = (None, 0, 1, 3)


def _only_thread() -> bool:
    """Tell whether no thread but this one would hold up the interpreter's exit."""
    main = threading.main_thread()
    return all(t is main or t.daemon or not t.is_alive() for t in threading.enumerate())


def _leave(status: int) -> NoReturn:
    """End the command line's process now: exit handlers run, streams flushed, no teardown.

    The output is written and every file closed by then. Freeing the run's objects and
    modules one by one, which nothing needs, took 50-80 ms of a 0.8 s scan of a thousand
    files. Only a run that finished its work leaves so: one that failed may hold what
    only freeing its objects cleans up. A caller in this process (a test, a program)
    keeps its interpreter.
    """
    atexit._run_exitfuncs()  # temporary directories' finalizers, logging, Dask
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing reaches it
            stream.flush()
    os._exit(status)


def _run(args: list[str] | None) -> int:
    """Import the commands, run the one asked for, and return the exit status."""
    import click

    from simdup.cli.app import cli
    from simdup.cli.status import ExitStatus

    try:
        status = cli.main(args=args, prog_name="simdup", standalone_mode=False)
        sys.stdout.flush()
    except click.exceptions.Abort:
        _interrupted(end_line=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141)
    return status if isinstance(status, int) else int(ExitStatus.OK)
