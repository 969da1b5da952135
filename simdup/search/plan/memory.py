"""What the machine and the run hold: the default budget, and the memory resident now.

The budget is checked against what a run holds when its plan is made (its own pages and
its workers' proportional share) plus what the plan will add (:mod:`.budget`).
"""

from __future__ import annotations

import os

from simdup.allocator import give_back

#: Default budget: at most this, and at most half of the physical memory.
DEFAULT_CAP = 4 << 30

#: Bytes a term-count entry takes at most in memory when the corpus is held there: its
#: count and id while counting, then its weight and id, and the verification index.
HELD_ENTRY_BYTES = 24

#: A corpus whose entries take less than this is always held in memory: the store would
#: cost more than it saves.
MIN_HELD_CORPUS = 128 << 20


def held_entries(budget: int) -> int:
    """Return the term-count entries a corpus holds in memory within ``budget`` bytes.

    An eighth of the budget, and never less than :data:`MIN_HELD_CORPUS`: past them the
    corpus is stored (:func:`simdup.search.plan.budget.spill_limits`), and a corpus past
    those of the default budget is priced as stored whatever its own
    (:data:`simdup.search.plan.survey.STORED_ENTRIES`).
    """
    return max(budget // 8, MIN_HELD_CORPUS) // HELD_ENTRY_BYTES


def physical_memory() -> int | None:
    """Return the machine's physical memory in bytes (None when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def default_memory() -> int:
    """Return the default budget: the smaller of 4 GiB and half of physical memory."""
    physical = physical_memory()
    return DEFAULT_CAP if physical is None else min(DEFAULT_CAP, physical // 2)


def resident_memory() -> int:
    """Return the run's resident memory now, in bytes (0 where unknown).

    This process's, and the proportional share of its worker processes still running
    (pages they share with it are counted once). The allocator first gives back the free
    pages it keeps (:func:`give_back`): the planner's samples have just been freed, and
    pages kept for reuse would be counted here and again as what the plan adds.
    """
    give_back()
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
        own = pages * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        return 0
    return own + sum(_proportional(pid) for pid in _children())


def _children() -> list[int]:
    """Return the process ids of this process's children (none where unknown)."""
    pids: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
                pids += [int(p) for p in handle.read().split()]
    except (OSError, ValueError):
        return []
    return pids


def _proportional(pid: int) -> int:
    """Return a process's proportional set size in bytes (0 where unknown)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            lines = handle.read().splitlines()
        for line in lines:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
