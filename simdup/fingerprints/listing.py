"""Fingerprints saved as text: ``simdup fingerprint`` lines, read back for matching.

Two line formats are accepted, so output of ``simdup fingerprint`` can be kept in a file
and matched later (or on another machine) without the texts:

* ``HEX  NAME`` (like sha256sum): two spaces between the hex and the name;
* JSON Lines records ``{"path": ..., "bits": ..., "seed": ..., "fingerprint": HEX, ...}``.

Without the texts the true cosine is unknown; matching reports the estimate only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.errors import FingerprintFormatError
from simdup.fingerprints.simhash import from_hex, int_to_words


@dataclass(frozen=True)
class StoredFingerprints:
    """Fingerprints read from text, with the settings they were made with."""

    names: list[str]
    fingerprints: npt.NDArray[np.uint64]
    bits: int
    seed: int | None


def parse_fingerprints(label: str, data: str, *, bits: int | None = None) -> StoredFingerprints:
    """Parse fingerprint lines (both formats; blank lines ignored).

    Args:
        label: Name of the source, for error messages.
        data: The text.
        bits: Width of ``HEX  NAME`` lines; JSON Lines records carry their own.

    Raises:
        FingerprintFormatError: naming the line, for a malformed line or mixed settings.
    """
    names: list[str] = []
    values: list[int] = []
    seen_bits: int | None = bits
    seed: int | None = None
    for number, line in enumerate(data.splitlines(), start=1):
        where = f"{label}:{number}"
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                record = json.loads(line)
                name, hex_value = str(record["path"]), str(record["fingerprint"])
                record_bits, record_seed = int(record["bits"]), int(record["seed"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise FingerprintFormatError(
                    f"{where}: expected a JSON object with path, bits, seed and fingerprint"
                ) from None
            if seen_bits is not None and record_bits != seen_bits:
                raise FingerprintFormatError(
                    f"{where}: {record_bits}-bit fingerprint among {seen_bits}-bit ones"
                )
            if seed is not None and record_seed != seed:
                raise FingerprintFormatError(
                    f"{where}: seed {record_seed} differs from seed {seed} of earlier lines"
                )
            seen_bits, seed = record_bits, record_seed
        else:
            hex_value, sep, name = line.partition("  ")
            if not sep or not name:
                raise FingerprintFormatError(f"{where}: expected 'HEX  NAME' (two spaces)")
            if seen_bits is None:
                seen_bits = len(hex_value) * 4
        try:
            value = from_hex(hex_value, seen_bits)
        except FingerprintFormatError as exc:
            raise FingerprintFormatError(f"{where}: {exc}") from None
        if len(hex_value) != -(-seen_bits // 4):
            raise FingerprintFormatError(
                f"{where}: {len(hex_value)} hex digits, expected {-(-seen_bits // 4)} for "
                f"{seen_bits} bits; pass the right --bits"
            )
        names.append(name)
        values.append(value)
    width = seen_bits or 64
    array = np.zeros((len(values), -(-width // 64)), dtype=np.uint64)
    for row, value in enumerate(values):
        array[row] = int_to_words(value, width)
    return StoredFingerprints(names, array, width, seed)
