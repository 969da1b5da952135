"""Ctrl-C and ``kill`` on the command line: the signals received, and where they end a run.

Python raises the interrupt in whatever code runs when the signal arrives. Where that code is
a finaliser or a weak-reference callback (the import machinery runs many), the exception is
only reported, and the code that was running goes on as if nothing happened. So every signal
is also recorded here, and the run stops at the next :func:`checkpoint`: before anything
more is written, results or messages. An interrupted run writes its one line and nothing
else, however late the interrupt is noticed.

This module is imported by the entry point before click, rich and numpy: it uses the
standard library only.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

#: The Ctrl-C and ``kill`` signals this run received (see :func:`on_signal`).
RECEIVED: list[int] = []

#: The process whose signals end the run; forked workers take ``kill`` as by default.
_main_pid = 0
#: Whether :func:`on_signal` and :func:`checkpoint` raise: only while the entry point can
#: catch what they raise.
_raising = False


def on_signal(number: int, frame: FrameType | None) -> None:
    """Record Ctrl-C (or ``kill``); while a run is in charge, raise :class:`KeyboardInterrupt`."""
    if number == signal.SIGTERM and os.getpid() != _main_pid:  # a forked worker: as default
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    RECEIVED.append(number)
    if _raising:
        raise KeyboardInterrupt


def checkpoint() -> None:
    """Raise :class:`KeyboardInterrupt` if the run received a signal that was lost on the way.

    Called before results or messages are written, so that a run whose interrupt fell in a
    finaliser does not go on to write them before it ends. Outside a command-line run (a
    library caller, a test through click's runner) it does nothing.
    """
    if _raising and RECEIVED:
        raise KeyboardInterrupt


def set_raising(raising: bool) -> None:
    """Say whether the entry point is in charge (signals raise) or not (they are recorded)."""
    global _raising
    _raising = raising


def terminated() -> bool:
    """Tell whether the first signal received was ``kill`` (SIGTERM) rather than Ctrl-C."""
    return bool(RECEIVED) and RECEIVED[0] == signal.SIGTERM


def unraisable(report: Callable[[Any], object], info: Any) -> None:
    """Drop reports of an interrupt raised in a finaliser: the run ends for it at a checkpoint."""
    if not isinstance(info.exc_value, KeyboardInterrupt):
        report(info)


def watch() -> dict[int, Any]:
    """Route Ctrl-C and ``kill`` through :func:`on_signal`; return the handlers replaced.

    A run the shell told to ignore Ctrl-C (a background job) keeps ignoring it; a SIGTERM
    handler set before (an embedding program's) is kept.
    """
    global _main_pid
    if threading.current_thread() is not threading.main_thread():
        return {}
    _main_pid = os.getpid()
    replaced: dict[int, Any] = {}
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    for number, default in defaults.items():
        previous = signal.getsignal(number)
        if previous == default:
            replaced[number] = previous
            signal.signal(number, on_signal)
    return replaced
