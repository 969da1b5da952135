"""The C allocator gives back what a run's arrays free, so the budget is what stays resident."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

GLIBC = hasattr(ctypes.CDLL(None), "mallopt")

# A process does ``SETUP``, frees a large array (mapped apart, so glibc raises its threshold
# to that size: it does up to 32 MiB), then makes and frees a smaller one, larger than any
# free space the setup may have left on the heap, and prints how many MiB stayed resident.
KEPT_AFTER_FREE = """
import os, sys
import numpy as np
from simdup import Document, allocator, find_duplicates

def resident():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

SETUP
large = np.ones(30 << 20, np.uint8)
del large
before = resident()
smaller = np.ones(24 << 20, np.uint8)
del smaller
print((resident() - before) >> 20)
"""

# A scan in a process whose every plan counts as tight (or none does).
A_SCAN = """
allocator.TIGHT = float(sys.argv[1])
words = [f"w{k}" for k in range(300)]
docs = [Document(f"d{i}", " ".join(words[i % 7 :: 3])) for i in range(40)]
assert find_duplicates(docs, memory=1 << 30).pair_list()
"""


def _kept(setup: str, argument: str = "") -> int:
    """Return the MiB a process kept resident of a freed array after ``setup``."""
    script = KEPT_AFTER_FREE.replace("SETUP", setup)
    done = subprocess.run(
        [sys.executable, "-c", script, argument], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_a_bounded_allocator_gives_back_a_freed_array_that_glibc_would_keep() -> None:
    assert _kept("") >= 16  # the 24 MiB made on the heap, and kept there when freed
    assert _kept("allocator.bound()") == 0


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_a_scan_whose_plan_is_tight_bounds_the_allocator_and_a_roomy_one_does_not() -> None:
    assert _kept(A_SCAN, "0.0") == 0  # every plan is tight
    assert _kept(A_SCAN, "1.0") >= 16  # a plan that fits is never past the whole budget
