"""Tables derived from installed data, kept between runs in the user's cache folder.

Some tables every run needs are derived from data files of installed packages and from
the Unicode tables of the interpreter: the noise-word lists of every language, normalised
and cut as text is, for instance, take longer to build than a small scan takes to run.
They are the same from run to run until one of their sources changes, so the first run
keeps them as JSON in ``$SIMDUP_CACHE_DIR``, else ``$XDG_CACHE_HOME/simdup``, else
``~/.cache/simdup``, under a key naming every source, and later runs read them back.

A table is only ever a copy of what would be computed: a missing, damaged, unreadable
or stale file is computed again, and a folder that cannot be written is left alone (the
run goes on without keeping the table). ``SIMDUP_CACHE_DIR=""`` turns keeping off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

from simdup.atomic import write_atomic

T = TypeVar("T")

#: Environment variable naming the folder (empty: keep nothing).
CACHE_ENV = "SIMDUP_CACHE_DIR"


def cache_dir() -> str | None:
    """Return the folder tables are kept in (None: keeping is turned off)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return chosen or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "simdup")


def stamp(*paths: str) -> str | None:
    """Return the names, sizes and change times of files a table is derived from, for its key.

    Module files are among them, so that a changed rule is never read back from a table
    kept by an earlier copy of it. None when one cannot be looked at (a zipped install):
    such a table is then built every time, never kept.
    """
    parts = []
    for path in paths:
        try:
            found = os.stat(path)
        except OSError:
            return None
        parts.append(f"{path}:{found.st_size}:{found.st_mtime_ns}")
    return "|".join(parts)


def kept(
    name: str,
    key: str | None,
    compute: Callable[[], T],
    encode: Callable[[T], Any],
    decode: Callable[[Any], T],
) -> T:
    """Return the table ``name`` kept under ``key``, or ``compute()`` it and keep it.

    ``encode`` turns the table into JSON-ready data and ``decode`` turns that back; a
    kept table is used only when it was kept under the same ``key`` (None: its sources
    cannot be told, so it is computed and not kept).
    """
    folder = cache_dir()
    path = None if folder is None or key is None else os.path.join(folder, f"{name}.json")
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                stored = json.load(handle)
            if isinstance(stored, dict) and stored.get("key") == key:
                return decode(stored["value"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing, unreadable or damaged: computed again
    table = compute()
    if path is not None:
        data = json.dumps({"key": key, "value": encode(table)}, ensure_ascii=False)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_atomic(path, data.encode("utf-8"))
        except OSError:
            pass  # a folder that cannot be written: the run goes on without keeping it
    return table
