"""The progress hooks the library accepts; the command line fills them with tqdm.

Library code never draws progress itself: it wraps its long loops in whatever callable it
was given, and the defaults do nothing, so code never branches on "is progress shown".

Two shapes: a :class:`Progress` wraps an iterable and counts its items; a :class:`Meter`
is told how much work is done, in documents and bytes, for stages whose units of work
(a chunk of files read and tokenised by a worker) are not the units people count. A
:data:`Tell` is told what a person should know before the work, not after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    """Wrap an iterable, reporting items as they are consumed."""

    def __call__(self, items: Iterable[T], *, desc: str, total: int | None = None) -> Iterable[T]:
        """Return an iterable over ``items`` that reports progress labelled ``desc``."""
        ...


def no_progress(items: Iterable[T], *, desc: str, total: int | None = None) -> Iterable[T]:
    """Return ``items`` unchanged: the silent progress display."""
    return items


class Advance(Protocol):
    """Report that more documents (and their bytes) are done."""

    def __call__(self, documents: int, size: int = 0) -> None:
        """Add ``documents`` done and ``size`` bytes read."""
        ...


class Meter(Protocol):
    """Open a display of documents (or other units) and bytes done, for one stage."""

    def __call__(
        self, *, desc: str, total: int | None = None, unit: str = "doc"
    ) -> AbstractContextManager[Advance]:
        """Return a context whose value is told what is done; ``total`` in ``unit``."""
        ...


#: Told a message as soon as it is known (a plan's warning, before the work it warns of).
Tell = Callable[[str], None]


def no_tell(message: str) -> None:
    """Tell nothing."""


def _ignore(documents: int, size: int = 0) -> None:
    """Count nothing."""


@contextlib.contextmanager
def no_meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
    """Show nothing: the silent meter."""
    yield _ignore
