"""Deduplicating files: what was read, a reviewable shell script, and careful moves.

Files are never deleted here. A plan is either written as a POSIX shell script for a person
to review and run, or carried out by moving each removed file under a directory (its path
kept), never overwriting anything there. A move happens only if the kept file it
duplicates is still exactly as it was read (size, modification time and a BLAKE2b hash of
its bytes) and so is the removed file: a file edited since the scan may no longer be a
duplicate.

Each file is one document however it was reached (hard links and followed symbolic links
resolve to one name, see :mod:`simdup.inputs.walk`), so a file is never its own duplicate.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from simdup.dedupe.keep import Entry
from simdup.engines.local.counting import read_inputs
from simdup.errors import InputError
from simdup.inputs.files import FileState, ReadOptions, digest, read_bytes
from simdup.inputs.walk import find_files
from simdup.model import Skip
from simdup.params import LINK_KINDS
from simdup.progress import Progress, no_progress
from simdup.text.display import printable

__all__ = [
    "LINK_KINDS",
    "FileState",
    "Moved",
    "Step",
    "changed",
    "link_files",
    "move_files",
    "move_target",
    "read_files",
    "shell_script",
]


def read_files(
    paths: Sequence[str],
    options: ReadOptions,
    *,
    exclude: Sequence[FileState] = (),
    progress: Progress = no_progress,
    jobs: int = 1,
) -> tuple[list[Entry], list[FileState], list[Skip]]:
    """Find and read every file under ``paths``, keeping what each held.

    Files are read over ``jobs`` worker processes as a scan reads them
    (:func:`simdup.engines.local.counting.read_inputs`), each file's state taken in the
    same read; the result never depends on ``jobs``.

    Args:
        paths: Files and directories.
        options: How files are found and decoded.
        exclude: Files already read elsewhere (reference files): not read again here.
        progress: Progress hook (label ``read``).
        jobs: Worker processes (0: every core).

    Returns:
        One entry per file read (time: modification time, size: bytes on disk), its
        state, and the inputs skipped with reasons: the walk's, then the others in the
        order files are listed.
    """
    sources, skipped = find_files(paths, options)
    taken = {(f.device, f.inode) for f in exclude}
    entries: list[Entry] = []
    states: list[FileState] = []
    unread: list[Skip] = []
    for chunk in read_inputs(sources, options, state=True, jobs=jobs, progress=progress):
        unread += chunk.skipped
        for document, state in zip(chunk.documents, chunk.states, strict=True):
            assert state is not None  # every input is a file
            if (state.device, state.inode) in taken:
                unread.append(Skip(document.name, "also a reference file", unreadable=False))
                continue
            entries.append(Entry(document.name, document.text, state.mtime_ns / 1e9, state.size))
            states.append(state)
    unread.sort(key=lambda s: os.fsencode(s.path))  # as listed: by the bytes of the name
    return entries, states, skipped + unread


def changed(state: FileState, options: ReadOptions) -> str | None:
    """Return why a file is no longer as it was read, or None if it is unchanged."""
    try:
        info = os.stat(state.path, follow_symlinks=state.follow_symlinks)
    except OSError as exc:
        return (exc.strerror or type(exc).__name__).lower()
    if (info.st_dev, info.st_ino) != (state.device, state.inode):
        return "replaced by another file"
    if info.st_size != state.size or info.st_mtime_ns != state.mtime_ns:
        return "modified"
    try:
        data = read_bytes(state.path, options, follow_symlinks=state.follow_symlinks)
    except InputError as exc:
        return str(exc)
    return None if digest(data) == state.digest else "modified"


def move_target(name: str, move_to: str) -> str:
    """Return where ``name`` goes under ``move_to``: its path, kept, made relative.

    A name under the current directory keeps its path from there; any other keeps its
    absolute path without the leading ``/``. Either way the target is inside ``move_to``.

    >>> move_target("docs/a.txt", "dupes"), move_target("/srv/b.txt", "dupes")
    ('dupes/docs/a.txt', 'dupes/srv/b.txt')
    """
    absolute = os.path.abspath(name)
    here = os.getcwd()
    if absolute.startswith(here.rstrip("/") + "/"):
        relative = os.path.relpath(absolute, here)
    else:
        relative = absolute.lstrip("/")
    return os.path.join(move_to, relative)


def shell_quote(name: str) -> bytes:
    r"""Quote a name for a POSIX shell, byte for byte: single quotes, ``'`` as ``'\''``.

    Inside single quotes every byte but ``'`` itself is literal (newlines, ``$``,
    backticks, invalid UTF-8), so the name reaches the command exactly.

    >>> shell_quote("it's $HOME")
    b"'it'\\''s $HOME'"
    """
    raw = os.fsencode(name)
    return b"'" + raw.replace(b"'", b"'\\''") + b"'"


@dataclass(frozen=True)
class Step:
    """One file to remove or move, and the kept document it duplicates."""

    name: str
    kept: str
    cosine: float
    kept_is_file: bool = True


def shell_script(
    steps: Sequence[Step], *, move_to: str | None = None, link: str | None = None
) -> bytes:
    """Return a POSIX shell script carrying out ``steps``: ``rm --``, ``mv --`` or ``ln`` lines.

    Each line is preceded by a comment naming the kept file and the cosine (in printable
    form: a comment must stay on one line). The script changes to the directory it was
    made in first, as names are relative to it. With ``move_to``, a file is moved only if
    nothing exists at its target, and the target's directories are created first. With
    ``link`` (``hard`` or ``symbolic``), a file is replaced by a link to its kept file:
    the link is made under a new name beside it and renamed over it, so the file is
    never gone without its link.
    """
    here = os.getcwd()
    out = [
        b"#!/bin/sh\n",
        b"# Near-duplicates found by simdup dedupe. Review before running: sh THIS_FILE\n",
        b"# Each file below duplicates the kept file named above it.\n",
        b"cd -- " + shell_quote(here) + b" || exit 1\n",
    ]
    made: set[str] = set()
    for step in steps:
        what = "kept file" if step.kept_is_file else "kept"
        comment = f"# {what}: {printable(step.kept)} (cosine {step.cosine:.6f})\n"
        out.append(comment.encode("utf-8", errors="surrogateescape"))
        if link is not None:
            out.append(_link_line(step, link) if step.kept_is_file else b"# not a file: kept\n")
            continue
        if move_to is None:
            out.append(b"rm -- " + shell_quote(step.name) + b"\n")
            continue
        target = move_target(step.name, move_to)
        parent = os.path.dirname(target)
        if parent not in made:
            made.add(parent)
            out.append(b"mkdir -p -- " + shell_quote(parent) + b"\n")
        quoted = shell_quote(target)
        out.append(
            b"[ -e " + quoted + b" ] || [ -h " + quoted + b" ] || mv -- "
            + shell_quote(step.name) + b" " + quoted + b"\n"
        )  # fmt: skip
    return b"".join(out)


def link_target(name: str, kept: str, kind: str) -> str:
    """Return what a link at ``name`` holds: ``kept`` (hard), or its path from the link.

    A symbolic link is relative to the link's directory, so it still resolves when the
    tree is moved or mounted elsewhere.

    >>> link_target("a/b/c.txt", "a/d.txt", "symbolic"), link_target("c.txt", "d.txt", "hard")
    ('../d.txt', 'd.txt')
    """
    if kind == "hard":
        return kept
    start = os.path.dirname(os.path.abspath(name))
    return os.path.relpath(os.path.abspath(kept), start)


def _beside(name: str, tag: str = "") -> str:
    """Return a name beside ``name`` for a link made before it is renamed over ``name``."""
    folder, base = os.path.split(name)
    return os.path.join(folder, f".{base}.simdup-link{tag}")


def _link_line(step: Step, kind: str) -> bytes:
    """Return the shell lines replacing ``step.name`` with a link to its kept file."""
    flag = b"" if kind == "hard" else b"-s "
    temporary = shell_quote(_beside(step.name))
    target = shell_quote(link_target(step.name, step.kept, kind))
    return (
        b"ln " + flag + b"-- " + target + b" " + temporary
        + b" && mv -f -- " + temporary + b" " + shell_quote(step.name) + b"\n"
    )  # fmt: skip


def replace_with_link(name: str, kept: str, kind: str) -> None:
    """Replace the file ``name`` by a link to ``kept``, never leaving ``name`` missing.

    The link is made under a new name in the same directory and renamed over ``name``
    (one atomic step): if making the link fails, ``name`` is untouched.

    Raises:
        OSError: the link cannot be made (``EXDEV``: a hard link across file systems).
    """
    target = link_target(name, kept, kind)
    for attempt in range(100):
        temporary = _beside(name, f"-{os.getpid()}-{attempt}")
        try:
            if kind == "hard":
                os.link(target, temporary, follow_symlinks=False)
            else:
                os.symlink(target, temporary)
        except FileExistsError:
            continue
        try:
            os.rename(temporary, name)
        except BaseException:
            os.unlink(temporary)
            raise
        return
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it")


def _link_or_copy(source: str, target: str) -> None:
    """Put ``source`` at ``target`` without ever replacing an existing ``target``.

    A hard link is made when both are on one file system (it fails if the target
    exists); otherwise the bytes (or the link) are copied into a newly created file.

    Raises:
        FileExistsError: something exists at ``target``.
    """
    try:
        os.link(source, target, follow_symlinks=False)
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
        return
    with open(source, "rb") as reader, open(target, "xb") as writer:
        try:
            shutil.copyfileobj(reader, writer)
            shutil.copystat(source, target)
        except BaseException:
            os.unlink(target)  # a partial copy is not left behind; the source stays
            raise


@dataclass(frozen=True)
class Moved:
    """The outcome of one move: the file, its target, and why not (None: moved)."""

    name: str
    target: str
    refused: str | None = None


def move_files(
    moves: Sequence[tuple[FileState, FileState | None]],
    move_to: str,
    options: ReadOptions,
) -> list[Moved]:
    """Move each removed file under ``move_to`` if it and its kept file are unchanged.

    Args:
        moves: Pairs of (removed file, the kept file it duplicates; None when the kept
            document is not a file).
        move_to: Directory receiving the files, their paths kept.
        options: How files were read (for the unchanged check).

    Returns:
        One outcome per move, in order; a refused move leaves both files where they are.
    """
    outcomes = []
    for removed, kept in moves:
        target = move_target(removed.name, move_to)
        why = _changed_pair(removed, kept, options)
        if why is None and os.path.lexists(target):
            why = f"{printable(target)} already exists"
        if why is None:
            try:
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                _link_or_copy(removed.path, target)
                os.unlink(removed.path)
            except FileExistsError:
                why = f"{printable(target)} already exists"
            except OSError as exc:
                why = f"cannot move to {printable(target)}: {(exc.strerror or str(exc)).lower()}"
        outcomes.append(Moved(removed.name, target, why))
    return outcomes


def _changed_pair(removed: FileState, kept: FileState | None, options: ReadOptions) -> str | None:
    """Return why a removal can no longer be carried out safely (None: both unchanged)."""
    if kept is not None and (reason := changed(kept, options)) is not None:
        return f"kept file {printable(kept.name)} changed since it was read ({reason})"
    if (reason := changed(removed, options)) is not None:
        return f"changed since it was read ({reason})"
    return None


def _other_file_system(kept: FileState) -> str:
    """Return why a hard link to ``kept`` cannot be made: it is on another file system."""
    return (
        f"on another file system than {printable(kept.name)}; hard links cannot cross "
        "file systems (use --link symbolic)"
    )


def link_files(
    links: Sequence[tuple[FileState, FileState | None]], kind: str, options: ReadOptions
) -> list[Moved]:
    """Replace each removed file with a ``kind`` link to its kept file, if both are unchanged.

    Args:
        links: Pairs of (removed file, the kept file it duplicates; None when the kept
            document is not a file: nothing to link to).
        kind: ``hard`` or ``symbolic``.
        options: How files were read (for the unchanged check).

    Returns:
        One outcome per link, in order (``target``: the kept file); a refused link
        leaves the removed file as it was. Hard links across file systems are refused.
    """
    outcomes = []
    for removed, kept in links:
        if kept is None:
            outcomes.append(Moved(removed.name, "", "its kept document is not a file"))
            continue
        why = _changed_pair(removed, kept, options)
        if why is None and kind == "hard" and removed.device != kept.device:
            why = _other_file_system(kept)
        if why is None:
            try:
                replace_with_link(removed.path, kept.path, kind)
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    why = _other_file_system(kept)
                else:
                    reason = (exc.strerror or str(exc)).lower()
                    why = f"cannot link to {printable(kept.name)}: {reason}"
        outcomes.append(Moved(removed.name, kept.name, why))
    return outcomes
