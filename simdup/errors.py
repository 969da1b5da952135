"""Exceptions that carry a message meant for the person running simdup.

Every error a user can cause derives from :class:`SimdupError`; the command line turns
exactly these into a one-line message and a non-zero exit status. Any other exception is a
bug and is allowed to show its traceback.
"""

from __future__ import annotations


class SimdupError(Exception):
    """Base class of every error caused by input or options rather than by a bug."""


class ParameterError(SimdupError, ValueError):
    """An option value is out of range or inconsistent with another option."""


class InputError(SimdupError):
    """An input (file, directory, JSON Lines record) cannot be used."""


class FingerprintFormatError(SimdupError, ValueError):
    """A stored fingerprint line cannot be parsed."""


class DatasetError(InputError):
    """A dataset's content cannot be used as asked (not Parquet, no text column, schemas differ).

    Unlike an input that cannot be read (an I/O failure), the run is refused as if an
    option were wrong: exit status 2, and nothing written.
    """
