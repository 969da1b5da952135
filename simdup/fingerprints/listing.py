"""Fingerprints saved as text, and the settings that define them.

:func:`fingerprint_settings` is what an index, a ``simdup fingerprint`` record and a
comparison record say a fingerprint was made with.

Two line formats are accepted, so output of ``simdup fingerprint`` can be kept in a file
and matched later (or on another machine) without the texts:

* ``HEX  NAME`` (like sha256sum): two spaces between the hex and the name;
* JSON Lines records ``{"path": ..., "bits": ..., "seed": ..., "fingerprint": HEX, ...}``,
  which also record each document's distinct features (``"features": 378``).

Without the texts the true cosine is unknown; matching reports the estimate only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import FingerprintFormatError
from simdup.fingerprints.simhash import from_hex, int_to_words
from simdup.params import LANGUAGES, Params, parse_setting
from simdup.text.languages import lists_digest
from simdup.text.segment import segmentation, segmenter_version

#: Version of the fingerprint definition (tokenizer + weighting + hash). Stored with every
#: saved fingerprint; it changes whenever the same text could fingerprint differently.
FINGERPRINT_FORMAT = 1


def fingerprint_settings(params: Params) -> dict[str, Any]:
    """Return the settings that define a fingerprint (what an index must match).

    Lists read from the stop-word data package are identified by their digest, and
    word segmentation by the segmenter's version, so that fingerprints made with
    other lists or another dictionary are never mixed; the English list and bigrams
    add no key, so settings written before either existed still match. The width is
    the fixed one (``auto`` fingerprints are stored at the reference width).
    """
    setting = parse_setting(params.stopwords)
    settings: dict[str, Any] = {
        "bits": params.fixed_bits,
        "seed": params.seed,
        "weighting": params.weighting,
        "ngram": params.ngram,
        # The English list alone is True, as settings stored it before other lists.
        "stopwords": True if setting.languages == ("en",) else setting.name,
        "fingerprint_format": FINGERPRINT_FORMAT,
    }
    if setting.uses_data_package():
        codes = LANGUAGES if setting.auto else setting.languages
        settings["stopword_lists"] = lists_digest(codes)
    if segmentation(params.segment) == "words":
        settings["segment"] = f"words ({segmenter_version()})"
    return settings


#: The feature count of a fingerprint whose listing does not record one.
UNKNOWN_FEATURES = -1


@dataclass(frozen=True)
class StoredFingerprints:
    """Fingerprints read from text, with the settings they were made with.

    Attributes:
        names: Document names.
        fingerprints: uint64 (n, words).
        bits: Width.
        seed: Hash seed (None: not recorded).
        features: Distinct features of each document as recorded (JSON Lines records'
            ``features``), :data:`UNKNOWN_FEATURES` where the listing does not say.
    """

    names: list[str]
    fingerprints: npt.NDArray[np.uint64]
    bits: int
    seed: int | None
    features: list[int]


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
    features: list[int] = []
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
                count = int(record.get("features", UNKNOWN_FEATURES))
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
            count = UNKNOWN_FEATURES
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
        features.append(count)
    width = seen_bits or 64
    array = np.zeros((len(values), -(-width // 64)), dtype=np.uint64)
    for row, value in enumerate(values):
        array[row] = int_to_words(value, width)
    return StoredFingerprints(names, array, width, seed, features)
