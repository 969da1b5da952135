"""The C allocator, kept from holding memory the budget does not see (glibc; elsewhere nothing).

A run's memory budget counts the arrays it makes. glibc keeps what they free for reuse,
in ways that leave pages resident that no array holds:

* each thread that allocates gets an arena of its own (up to eight per core), and keeps
  in it what that thread freed;
* after a large array mapped apart is freed, glibc raises the size from which arrays are
  mapped apart to that array's (up to 32 MiB), so the arrays that follow are made on the
  heap, and their freed pages stay there until its top is free.

Holding it to two arenas and mapping apart every array of 4 MiB or more costs time (each
such array is paged in afresh), so a run does it only when its plan leaves the budget
little room (:func:`tight`). Measured, proportional set size of all processes at the peak
and seconds (``benchmarks/treemem.py``):

* 25,026 real files held in memory, ``--memory 600M`` (plan: 536 MiB): 595 and 599 MiB,
  76 and 77 s as glibc has it; 530 and 547 MiB, 74 and 79 s bounded;
* 200,000 generated documents, default budget: 1,217-1,360 MiB, 51-53 s as glibc has it;
  1,092-1,098 MiB, 57-66 s with arrays mapped apart from 4 MiB; two arenas alone cost no
  time and gave no steady saving. Arrays mapped apart from 128 KiB (glibc's first
  threshold, held fixed) took 2.4 times as long.
"""

from __future__ import annotations

from typing import Any

#: glibc's ``mallopt`` parameters (``malloc.h``).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

#: Arenas the threads of a run share.
ARENAS = 2

#: Arrays of at least this many bytes are mapped apart, and unmapped when freed.
MAP_APART = 4 << 20

#: A plan whose predicted memory is past this share of the budget bounds the allocator.
TIGHT = 0.8

#: glibc's functions once looked up (False: this C library does not have them).
_functions: dict[str, Any] = {}
_bounded = False


def _function(name: str) -> Any:
    """Return the C library's function ``name``, or False where it has none."""
    if name not in _functions:
        import ctypes

        try:
            _functions[name] = getattr(ctypes.CDLL(None), name)
        except (AttributeError, OSError, TypeError):  # no such function, or no C library
            _functions[name] = False
    return _functions[name]


def tight(predicted: int, budget: int) -> bool:
    """Tell whether a plan predicted to hold ``predicted`` bytes leaves ``budget`` little room.

    >>> tight(500, 600), tight(400, 600)
    (True, False)
    """
    return predicted > TIGHT * budget


def bound() -> None:
    """Make the allocator keep fewer freed pages: two arenas, 4 MiB arrays mapped apart.

    Called when a run's plan is :func:`tight`, before the pair stage starts its threads
    (arenas already made stay); later calls do nothing. It applies to the whole process
    from then on, and to the workers it forks after.
    """
    global _bounded
    if _bounded:
        return
    _bounded = True
    mallopt = _function("mallopt")
    if mallopt:
        mallopt(M_ARENA_MAX, ARENAS)
        mallopt(M_MMAP_THRESHOLD, MAP_APART)


def give_back() -> None:
    """Return the C allocator's free heap pages to the system.

    glibc keeps freed memory of its heap for reuse; after a large array is freed, arrays up
    to its size are made on that heap too (its threshold for mapping them apart grows), so
    a process's resident size stays at its high-water mark even when the arrays that follow
    are mapped apart and never reuse it. ``malloc_trim`` releases it.
    """
    trim = _function("malloc_trim")
    if trim:
        trim(0)
