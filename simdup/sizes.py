"""Sizes in bytes, as people write and read them: ``--memory 2G``, ``about 1.5 GiB``."""

from __future__ import annotations

import math

import regex

from simdup.errors import SimdupError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1000**3,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1000**4,
    "tib": 1 << 40,
}


def parse_size(text: str) -> int:
    """Return the bytes of a size such as ``512M``, ``2G``, ``1.5GiB`` or ``300000000``.

    ``K``, ``M``, ``G``, ``T`` and ``KiB`` ... are powers of 1024; ``KB``, ``MB`` ...
    powers of 1000.

    >>> parse_size("512M"), parse_size("1.5GiB"), parse_size("2gb")
    (536870912, 1610612736, 2000000000)
    """
    match = regex.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise SimdupError(
            f"cannot read the size {text!r}; write a number with an optional unit, "
            "e.g. 512M, 2G or 1.5GiB"
        )
    size = float(match.group(1)) * _UNITS[unit]
    if not math.isfinite(size) or size < 1:
        raise SimdupError(f"the size {text!r} is not a positive number of bytes")
    return int(size)


def format_size(size: float) -> str:
    """Return a size for people: bytes, KiB, MiB or GiB.

    >>> format_size(3 << 30), format_size(300 << 20), format_size(10), format_size(5000)
    ('3.0 GiB', '300 MiB', '10 bytes', '5 KiB')
    """
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.0f} MiB"
    if size >= 1 << 10:
        return f"{size / (1 << 10):.0f} KiB"
    return f"{size:.0f} bytes"


def size_option(size: int) -> str:
    """Return ``--memory`` value that allows ``size`` bytes, rounded up to a MiB.

    >>> size_option(99 * (1 << 20) + 1)
    '100M'
    """
    return f"{-(-size // (1 << 20))}M"
