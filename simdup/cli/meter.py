"""The command line's progress displays: tqdm bars of documents, with bytes and their rate.

Shown on stderr when it is a terminal (``disable=None``), never with ``--quiet``; tqdm
loads only to draw one.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from simdup.progress import Advance, Meter, Progress, no_meter, no_progress

T = TypeVar("T")


def byte_size(size: float) -> str:
    """Return a byte count for people, in powers of 1024.

    >>> byte_size(512), byte_size(3 * 1024 * 1024), byte_size(5.5 * 1024**4)
    ('512 B', '3.0 MiB', '5632.0 GiB')
    """
    units = ("B", "KiB", "MiB", "GiB")
    step = 0
    while size >= 1024 and step < len(units) - 1:
        size /= 1024
        step += 1
    return f"{size:.0f} B" if step == 0 else f"{size:.1f} {units[step]}"


def _drawn() -> bool:
    """Tell whether tqdm would draw on stderr (``disable=None``: only on a terminal)."""
    return not hasattr(sys.stderr, "isatty") or sys.stderr.isatty()


def make_meter(quiet: bool) -> Meter:
    """Return a meter: a tqdm bar on stderr when it is a terminal, else silent."""
    if quiet or not _drawn():
        return no_meter

    from tqdm import tqdm

    @contextlib.contextmanager
    def meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
        bar = tqdm(
            total=total,
            desc=desc,
            unit=unit,
            unit_scale=unit != "doc",  # millions of pairs read better as 1.2M
            disable=None,
            file=sys.stderr,
            leave=False,
        )
        started = time.perf_counter()
        done = 0

        def advance(documents: int, size: int = 0) -> None:
            nonlocal done
            done += size
            if size:
                rate = done / max(time.perf_counter() - started, 1e-9)
                bar.set_postfix_str(f"{byte_size(done)}, {byte_size(rate)}/s", refresh=False)
            bar.update(documents)

        try:
            yield advance
        finally:
            bar.close()

    return meter


def make_progress(quiet: bool) -> Progress:
    """Return a progress hook: tqdm on stderr when it is a terminal, else silent."""
    if quiet or not _drawn():
        return no_progress

    from tqdm import tqdm

    def progress(items: Iterable[T], *, desc: str, total: int | None = None) -> Iterable[T]:
        return tqdm(  # type: ignore[no-any-return]
            items, desc=desc, total=total, disable=None, file=sys.stderr, leave=False, unit="doc"
        )

    return progress
