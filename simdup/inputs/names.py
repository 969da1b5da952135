"""One rule for a name met more than once: the first keeps it, every later one repeats it.

Documents are told apart by name in every output, so a scan keeps one document per name:
the first in input order (a file before a record, an earlier record before a later one).
JSON Lines ids repeated within a file follow the same rule; deduplication, which writes
every line back, keeps repeated ids and reports them instead. All of them split their
inputs with :func:`first_named`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

#: The skip reason of a document whose name an earlier input already has.
DUPLICATE_NAME = "duplicate document name"


def first_named(
    items: Iterable[T], name: Callable[[T], str], taken: Iterable[str] = ()
) -> tuple[list[T], list[T]]:
    """Split ``items`` into the first of each name and the repeats, both in input order.

    Args:
        items: Anything with a name.
        name: The name of an item.
        taken: Names held already: an item with one of them is a repeat.

    >>> first_named(["a1", "b1", "a2", "c1"], lambda s: s[0], taken=["c"])
    (['a1', 'b1'], ['a2', 'c1'])
    """
    seen = set(taken)
    first: list[T] = []
    repeats: list[T] = []
    for item in items:
        key = name(item)
        if key in seen:
            repeats.append(item)
        else:
            seen.add(key)
            first.append(item)
    return first, repeats
