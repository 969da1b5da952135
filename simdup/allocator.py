"""The C allocator, kept from holding memory the budget does not see (glibc; elsewhere nothing).

A run's memory budget counts the arrays it makes. glibc keeps what they free for reuse,
in ways that leave pages resident that no array holds:

* each thread that allocates gets an arena of its own (up to eight per core), and keeps
  in it what that thread freed;
* after a large array mapped apart is freed, glibc raises the size from which arrays are
  mapped apart to that array's (up to 32 MiB), so the arrays that follow are made on the
  heap, and their freed pages stay there until its top is free.

Measured on a scan of 25,026 real files held in memory with ``--memory 600M`` (two
verifying threads, two tables bucketed ahead): 593-603 MiB of proportional set size at the
peak; 529 MiB with two arenas; 500 MiB with two arenas and arrays of 4 MiB and more always
mapped apart. Arrays from 128 KiB mapped apart (glibc's first threshold, held fixed) gave
483 MiB but took 2.4 times as long: each new array is then paged in again.
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


def bound() -> None:
    """Make the allocator keep fewer freed pages: two arenas, 4 MiB arrays mapped apart.

    Called once a run knows it works within a budget, before it starts threads or forks
    workers (which inherit the settings); later calls do nothing. It applies to the whole
    process, and to every thread and worker it starts after.
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
