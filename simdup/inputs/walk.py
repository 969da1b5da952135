"""Find the files to read: walk roots and directories, each file once, skips reported.

Names are paths as found under the roots the user gave (``sample_corpus/doc0.txt``), like
``find`` and ``grep`` print them; bytes that are not valid UTF-8 in a file name are kept
losslessly as Python's surrogate escapes. Directories are walked depth-first in byte
order; hidden names, ``--exclude`` and ``--include`` globs and symbolic links are decided
here, and whatever is not a regular file becomes a :class:`~simdup.model.Skip` with its
reason. Nothing is opened for reading: that is :mod:`simdup.inputs.files`.

Each file is counted once, however it was reached: a directory given twice, nested roots
and hard links all resolve to the same device and inode, and one name is kept: the one
with the fewest path components (the least roundabout way to it), then the first in byte
order. So a file is never reported as its own duplicate.
"""

from __future__ import annotations

import fnmatch
import functools
import operator
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from simdup.inputs.files import ReadOptions, Source, file_kind, os_reason
from simdup.model import Skip
from simdup.progress import Advance, Meter, no_meter


def _matches(patterns: Sequence[str], name: str, relative: str) -> bool:
    """Tell whether a glob of ``patterns`` matches an entry's name or its path under the root."""
    match = _glob(tuple(patterns))
    return bool(match(name) or match(relative))


@functools.lru_cache(maxsize=64)
def _glob(patterns: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    """Return a match of any of ``patterns``, as :func:`fnmatch.fnmatchcase` matches each."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)).match


@dataclass
class _Frame:
    """A directory being walked: where it is, its identity, and its entries still to visit."""

    directory: str
    relative: str
    key: tuple[int, int]
    entries: Iterator[os.DirEntry[str]]


class _Walker:
    """Collect regular files under roots, remembering skips and visited inodes."""

    def __init__(self, options: ReadOptions, found: Advance) -> None:
        self.options = options
        self.found = found
        self.sources: list[tuple[Source, tuple[int, int]]] = []
        #: Skips with the (device, inode) of what was skipped, when known: a FIFO or a
        #: broken link reached under two names is reported once.
        self.skipped: list[tuple[Skip, tuple[int, int] | None]] = []
        self._active_dirs: set[tuple[int, int]] = set()
        #: The ``include`` globs that matched a file walked so far.
        self.included: set[str] = set()

    def skip(self, skip: Skip, key: tuple[int, int] | None = None) -> None:
        self.skipped.append((skip, key))

    def add_root(self, root: str) -> None:
        if "\0" in root:  # from a path list split by lines that was meant for -0
            self.skip(Skip(root, "name contains a NUL byte (NUL-separated list? use -0)"))
            return
        try:
            info = os.stat(root)
        except FileNotFoundError:
            kind = "broken symbolic link" if os.path.islink(root) else "no such file or directory"
            self.skip(Skip(root, kind))
            return
        except OSError as exc:
            self.skip(Skip(root, os_reason(exc)))
            return
        if stat.S_ISDIR(info.st_mode):
            self._walk(root, info)
        else:
            self._file(root, info, follow_symlinks=True)

    def _file(self, name: str, info: os.stat_result, *, follow_symlinks: bool) -> None:
        if (info.st_dev, info.st_ino) in self.options.leave_out:
            return
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            self.skip(Skip(name, f"not a regular file ({kind})"), (info.st_dev, info.st_ino))
            return
        self.sources.append((Source(name, name, follow_symlinks), (info.st_dev, info.st_ino)))
        self.found(1, info.st_size)

    def _walk(self, root: str, info: os.stat_result) -> None:
        """Walk a directory tree depth-first in byte order, without recursion.

        An explicit stack, not recursion: a tree thousands of directories deep (which a
        path of 4,096 bytes allows) must not exhaust Python's recursion limit.
        """
        stack: list[_Frame] = []
        self._enter(root, "", info, stack)
        opts = self.options
        patterns = bool(opts.exclude or opts.include)
        excluded = _glob(tuple(opts.exclude)) if opts.exclude else None
        while stack:
            frame = stack[-1]
            for entry in frame.entries:
                if not opts.hidden and entry.name.startswith("."):
                    continue
                rel = ""  # the path under the root, for the globs: made only for them
                if patterns:
                    rel = f"{frame.relative}/{entry.name}" if frame.relative else entry.name
                    if excluded is not None and (excluded(entry.name) or excluded(rel)):
                        continue
                name = entry.path  # the directory and the entry's name joined
                entry_key = (frame.key[0], entry.inode())  # the entry itself, not a target
                try:
                    if entry.is_symlink() and not opts.follow_symlinks:
                        if opts.include and not self._wanted_link(entry, rel):
                            continue
                        self.skip(
                            Skip(name, "symbolic link (use --follow-symlinks)", unreadable=False),
                            entry_key,
                        )
                        continue
                    entry_info = entry.stat(follow_symlinks=True)
                except FileNotFoundError:
                    reason = (
                        "broken symbolic link" if os.path.islink(name) else "vanished while listing"
                    )
                    self.skip(Skip(name, reason), entry_key)
                    continue
                except OSError as exc:
                    self.skip(Skip(name, os_reason(exc)), entry_key)
                    continue
                if stat.S_ISDIR(entry_info.st_mode):
                    if not patterns:
                        rel = f"{frame.relative}/{entry.name}" if frame.relative else entry.name
                    self._enter(name, rel, entry_info, stack)
                    break  # its entries first; this directory's others after them
                if opts.include:
                    matching = [p for p in opts.include if _matches((p,), entry.name, rel)]
                    if not matching:
                        continue
                    self.included.update(matching)
                self._file(name, entry_info, follow_symlinks=opts.follow_symlinks)
            else:  # every entry of the directory visited
                stack.pop()
                self._active_dirs.discard(frame.key)

    def _wanted_link(self, entry: os.DirEntry[str], relative: str) -> bool:
        """Tell whether a link not followed is worth a skip under ``--include``.

        A link to a file is one only if the include globs match it: a file they filter
        out was never meant to be read. A link to a directory always is (``-L`` would walk
        it).
        """
        if _matches(self.options.include, entry.name, relative):
            return True
        try:
            return entry.is_dir(follow_symlinks=True)
        except OSError:
            return False

    def _enter(
        self, directory: str, relative: str, info: os.stat_result, stack: list[_Frame]
    ) -> None:
        """List a directory and push it on the walk's stack (unless it is an ancestor)."""
        key = (info.st_dev, info.st_ino)
        if key in self._active_dirs:
            # An ancestor reached again through a link: its files are being read anyway.
            self.skip(
                Skip(directory, "symbolic link loop (directory already scanned)", unreadable=False)
            )
            return
        try:
            with os.scandir(directory) as it:
                entries = list(it)
            entries.sort(key=_ENTRY_NAME if _plain(e.name for e in entries) else _entry_bytes)
        except OSError as exc:
            self.skip(Skip(directory, os_reason(exc)), key)
            return
        self._active_dirs.add(key)
        stack.append(_Frame(directory, relative, key, iter(entries)))


def _plain(names: Iterable[str]) -> bool:
    """Tell whether ``names`` sort by their bytes as they sort as text: all are ASCII.

    A name with bytes that are not UTF-8 holds surrogate escapes, which sort elsewhere
    among characters than the bytes they stand for among bytes.
    """
    return all(map(str.isascii, names))


_ENTRY_NAME = operator.attrgetter("name")


def _entry_bytes(entry: os.DirEntry[str]) -> bytes:
    return os.fsencode(entry.name)


def _preference(name: str) -> tuple[int, bytes]:
    """Rank the names of one file: fewest path components first, then byte order."""
    raw = os.fsencode(name)
    return len([part for part in raw.split(b"/") if part not in (b"", b".")]), raw


def find_files(
    paths: Iterable[str],
    options: ReadOptions,
    *,
    meter: Meter = no_meter,
    unmatched: list[str] | None = None,
) -> tuple[list[Source], list[Skip]]:
    """Return the regular files under ``paths`` (sorted by name, each file once) and skips.

    A file reached more than once (a root given twice, nested roots, hard links, links
    followed with ``follow_symlinks``) is kept under one name, see the module docstring.
    ``meter`` is told each file found and its size (label ``walk``). ``unmatched``, when
    given, receives the ``include`` globs that matched no file in a walked directory.
    """
    with meter(desc="walk") as found:
        walker = _Walker(options, found)
        for root in paths:
            walker.add_root(root)
    if unmatched is not None:
        unmatched += [p for p in options.include if p not in walker.included]
    keys = {key for _, key in walker.sources}
    if len(keys) == len(walker.sources):  # no file reached twice: no name to prefer
        kept = [source for source, _ in walker.sources]
    else:
        unique: dict[tuple[int, int], Source] = {}
        for source, key in sorted(walker.sources, key=lambda item: _preference(item[0].name)):
            unique.setdefault(key, source)
        kept = list(unique.values())
    if _plain(s.name for s in kept):
        ordered = sorted(kept, key=operator.attrgetter("name"))
    else:
        ordered = sorted(kept, key=lambda s: os.fsencode(s.name))
    once: dict[object, Skip] = {}
    for skip, skip_key in sorted(walker.skipped, key=lambda item: _preference(item[0].path)):
        once.setdefault(skip if skip_key is None else skip_key, skip)
    skipped = sorted(once.values(), key=lambda s: (os.fsencode(s.path), s.reason))
    return ordered, skipped
