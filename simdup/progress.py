"""The progress hook the library accepts; the command line fills it with tqdm.

Library code never draws progress itself: it wraps its long loops in whatever callable it
was given, and the default does nothing, so code never branches on "is progress shown".
"""

from __future__ import annotations

from collections.abc import Iterable
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
