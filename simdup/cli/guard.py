"""No output replaces an input: the check every command makes before it reads a document.

A results file is written atomically (a temporary file renamed into place), so writing
over one of the run's own inputs would leave nothing of it. Before anything is read, each
file the run will write (``-o``, ``--html``, the ``--cache`` or ``--db`` index) is
compared with each file it will read: PATH arguments, the files found by walking the
directories, the ``--files-from`` list and the paths in it, ``--jsonl`` and ``--parquet``
files, the Arrow files of ``--arrow`` datasets and the other files a command reads whole.
Two names are the same file when they have the same device and inode, however they are
spelled (relative, ``..``, symbolic or hard links).

Re-running a command must keep working, so an existing output that simdup recognises by
its content as what this command writes there (its JSON, JSON Lines, CSV, table, HTML
page, fingerprint listing or index), or that is empty, is left out of the documents and
replaced. Any other existing file that is also an input is refused (exit status 2).
Inputs read whole (a ``--jsonl`` or ``--parquet`` file, the ``--files-from`` list,
``compare``'s and ``match``'s arguments, an index that is read) are never replaced,
recognised or not.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shlex
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import click

from simdup.cli.inputs import read_listed
from simdup.cli.parsed import Inputs, Key
from simdup.cli.status import ExitStatus
from simdup.inputs.walk import find_files
from simdup.text.display import printable

#: Bytes of an existing output read to recognise it: enough for every header simdup writes
#: (the HTML page's marker follows about 8 KiB of style sheet).
HEAD_BYTES = 1 << 16

#: What an output holds, so that simdup can recognise it when it meets it again.
Kind = Literal["pairs", "html", "fingerprints", "eval", "compare", "added", "export", "index"]

_HTML_MARKER = b'<span class="logo">simdup</span>'
_FINGERPRINT_LINE = re.compile(r"[0-9a-f]+  .*")
_ADD_LINE = re.compile(r"[\d,]+ added, [\d,]+ updated, ")


class OutputClash(click.ClickException):
    """An output of the run is one of its inputs: refused before anything is read."""

    exit_code = int(ExitStatus.USAGE)


def _lines(head: bytes) -> list[str]:
    """Return the complete lines of ``head`` (a cut-off last line is dropped)."""
    lines = head.decode("utf-8", errors="replace").split("\n")
    return lines[:-1] if len(head) >= HEAD_BYTES or lines[-1] == "" else lines


def _first_line(head: bytes) -> str:
    lines = _lines(head)
    return lines[0] if lines else ""


def _json_report(head: bytes) -> bool:
    """``scan``, ``match``, ``index query|scan`` and ``eval`` JSON."""
    return head.startswith(b'{"simdup": "')


def _pair_lines(head: bytes) -> bool:
    return head.startswith(b'{"a": ') and b'"hamming": ' in head.split(b"\n", 1)[0]


def _pair_csv(head: bytes) -> bool:
    from simdup.report.render import PAIR_FIELDS  # an output to recognise is rare: load it then

    # Without ``identical`` (earlier versions), or with the columns of --clusters.
    return _first_line(head).rstrip("\r").startswith(",".join(PAIR_FIELDS[:-1]))


def _pair_table(head: bytes) -> bool:
    from simdup.report.render import NO_PAIRS, QUERY_LABELS, pair_columns

    first = _first_line(head)
    for labels in (None, QUERY_LABELS):
        if first.split() == [word for title, _ in pair_columns(labels) for word in title.split()]:
            return True
    return first.startswith(NO_PAIRS)


def _plan(head: bytes) -> bool:
    """``scan --plan``, as lines or as JSON."""
    lines = _lines(head)
    if len(lines) >= 2 and lines[0].startswith("mode: "):
        return lines[1].startswith("bits: ")
    return head.startswith(b'{"source": "') and b'"table_count": ' in head


def _html(head: bytes) -> bool:
    return head.startswith(b"<!DOCTYPE html>") and _HTML_MARKER in head


def _fingerprints(head: bytes) -> bool:
    """``fingerprint`` listings: ``HEX  NAME`` lines, or JSON Lines."""
    if head.startswith(b'{"path": '):
        return b'"fingerprint_format": ' in head.split(b"\n", 1)[0]
    lines = _lines(head)
    return bool(lines) and all(_FINGERPRINT_LINE.fullmatch(line) for line in lines)


def _eval(head: bytes) -> bool:
    first = _first_line(head)
    return first.startswith(("table,bits,mae,", "Estimated-cosine error: "))


def _compare(head: bytes) -> bool:
    if head.startswith(b'{"a": '):
        return b'"agreement": ' in head.split(b"\n", 1)[0]
    lines = _lines(head)
    return (
        len(lines) >= 2
        and lines[0].startswith("A ")
        and lines[1].startswith("B ")
        and all(" features  " in line for line in lines[:2])
    )


def _added(head: bytes) -> bool:
    """``index add`` counts, as a line or as JSON."""
    if head.startswith(b'{"db": '):
        return b'"added": ' in head
    return _ADD_LINE.match(_first_line(head)) is not None


def _export(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    return head.startswith(b'{"id": ') and b'"fingerprint": ' in first and b'"params": ' in first


def _index(head: bytes) -> bool:
    """A simdup index: an SQLite database with simdup's application id."""
    from simdup.index.schema import APPLICATION_ID, SQLITE_MAGIC

    return (
        head.startswith(SQLITE_MAGIC)
        and len(head) >= 72
        and int.from_bytes(head[68:72], "big") == APPLICATION_ID
    )


#: What each kind of output looks like when simdup wrote it.
RECOGNISERS: dict[Kind, tuple[Callable[[bytes], bool], ...]] = {
    "pairs": (_json_report, _pair_lines, _pair_csv, _pair_table, _plan),
    "html": (_html,),
    "fingerprints": (_fingerprints,),
    "eval": (_json_report, _eval),
    "compare": (_compare,),
    "added": (_added,),
    "export": (_export,),
    "index": (_index,),
}


def written_by_simdup(path: str, kind: Kind) -> bool:
    """Tell whether the regular file ``path`` is empty or holds what simdup writes as ``kind``.

    Only the first :data:`HEAD_BYTES` are read; a file that cannot be read is not
    recognised (so it is protected).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    if kind == "pairs" and head.startswith(_PARQUET_MAGIC):
        return _pair_parquet(path)
    return not head or any(recognise(head) for recognise in RECOGNISERS[kind])


_PARQUET_MAGIC = b"PAR1"


def _pair_parquet(path: str) -> bool:
    """Tell whether a Parquet file holds ``scan``'s pairs (their columns, from its footer)."""
    from simdup.errors import SimdupError
    from simdup.inputs.tables import layout
    from simdup.report.render import PAIR_FIELDS

    try:
        return tuple(layout(path, "parquet").schema.names) == PAIR_FIELDS
    except SimdupError:
        return False


@dataclass(frozen=True)
class _Output:
    """A file the run writes: the option naming it, its path and its identity."""

    option: str
    path: str
    key: Key

    def refused(self, input_name: str, advice: str) -> OutputClash:
        """Return the refusal naming this output, the input it would replace and the fix."""
        same = "" if input_name == printable(self.path) else " (the same file)"
        return OutputClash(
            f"refusing to write {self.option} {printable(self.path)}: it is the input "
            f"{input_name}{same}, which would be replaced; {advice}"
        )


def _key(path: str) -> Key | None:
    """Return the identity of the regular file ``path`` (``-``: stdin), None for others."""
    try:
        info = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError):  # absent, or stdin closed or replaced
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _exclude_advice(name: str, roots: Sequence[str], listed: Sequence[str]) -> str:
    """Say how to keep the results where they are: leave the input out of the run."""
    elsewhere = "write the results elsewhere"
    if name in roots:
        return f"{elsewhere}, or drop {printable(name)} from the PATH arguments"
    if name in listed:
        return f"{elsewhere}, or drop {printable(name)} from the --files-from list"
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if name.startswith(prefix):
            pattern = shlex.quote(glob.escape(name[len(prefix) :]))
            return f"{elsewhere}, or leave it out with --exclude {printable(pattern)}"
    return elsewhere


@dataclass(frozen=True)
class Written:
    """The files a run writes, by option: checked against every file it reads.

    Attributes:
        kind: What ``-o`` holds, to recognise an earlier one.
        output: The ``-o`` file (None or ``-``: stdout).
        html: The ``--html`` page.
        index: The index written and read (``("--cache", path)`` or ``("--db", path)``).
    """

    kind: Kind
    output: str | None = None
    html: str | None = None
    index: tuple[str, str] | None = None


def protect_reads(written: Written, reads: Sequence[tuple[str, str]]) -> None:
    """Refuse an output that is a file read whole (for commands that read no corpus).

    ``reads`` are (option, path) of the inputs read whole (``-``: stdin); the index
    written is read too, so ``-o`` must not replace it.

    Raises:
        OutputClash: naming the output and the input it would replace (exit status 2).
    """
    _outputs(written, reads)


def protect_inputs(
    written: Written, inputs: Inputs, reads: Sequence[tuple[str, str]] = ()
) -> Inputs:
    """Refuse a run whose output is one of its inputs; leave out its own earlier outputs.

    Called by every command that reads a corpus, before it reads a document. The files
    read are the PATH arguments, the ``--files-from`` list and the paths in it, the
    record inputs (``--jsonl``, ``--parquet``, ``--arrow``), and ``reads`` (option, path)
    for other inputs read whole.

    Returns:
        The inputs to read: the run's own earlier outputs left out of the documents, and
        a ``--files-from`` list read here kept (so a list on stdin is read once).

    Raises:
        OutputClash: naming the output and the input it would replace (exit status 2).
    """
    whole = [*reads]
    whole += [("--files-from", inputs.files_from)] if inputs.files_from else []
    whole += [("--jsonl", path) for path in inputs.jsonl]
    whole += [("--parquet", path) for path in inputs.parquet]
    whole += [("--arrow", path) for path in _saved_files(inputs.arrow)]
    whole += [("", path) for path in inputs.paths if path == "-"]
    own, foreign = _outputs(written, whole)
    inputs = inputs.leaving_out(own)
    if foreign:
        inputs = _check_corpus(inputs, foreign)
    return inputs


def _saved_files(directories: Sequence[str]) -> list[str]:
    """Return the files of the saved datasets that can be listed (others fail when read)."""
    if not directories:
        return []
    from simdup.errors import SimdupError
    from simdup.inputs.tables import saved_dataset_files

    files: list[str] = []
    for directory in directories:
        with contextlib.suppress(SimdupError):
            files += saved_dataset_files(directory)
    return files


def _outputs(written: Written, whole: Sequence[tuple[str, str]]) -> tuple[set[Key], list[_Output]]:
    """Check the outputs against the inputs read whole; return the own and foreign ones."""
    files: list[tuple[str, str | None, Kind]] = [
        ("-o", written.output, written.kind),
        ("--html", written.html, "html"),
    ]
    if written.index:
        files.append((*written.index, "index"))
        whole = [*whole, written.index]  # -o must not replace the index the run adds to
    own: set[Key] = set()
    foreign: list[_Output] = []
    outputs: list[_Output] = []
    for option, path, what in files:
        if path is None or path == "-":
            continue
        key = _key(path)
        if key is None:  # a new file, or a special file (written in place)
            continue
        output = _Output(option, path, key)
        outputs.append(output)
        if written_by_simdup(path, what):
            own.add(key)
        else:
            foreign.append(output)
    for option, path in whole:
        key = _key(path)
        for output in outputs:
            if key == output.key and option != output.option:
                name = "standard input" if path == "-" else printable(path)
                raise output.refused(f"{option} {name}".strip(), "write the results elsewhere")
    return own, foreign


def index_files(path: str) -> set[Key]:
    """Return an open index and the files SQLite keeps beside it, to leave out of documents.

    Called once the index is open: a new index, its ``-wal`` and ``-shm`` files exist only
    from then on, and are never documents of the corpus they index.
    """
    keys = {_key(path + suffix) for suffix in ("", "-wal", "-shm", "-journal")}
    return {key for key in keys if key}


def _check_corpus(inputs: Inputs, foreign: list[_Output]) -> Inputs:
    """Walk the inputs as the run will, and refuse if a foreign output is among the files.

    Returns the inputs with the ``--files-from`` list, read here.
    """
    paths = [p for p in inputs.paths if p != "-"]
    listed: Sequence[str] = ()
    if inputs.files_from:
        listed = read_listed(inputs)
        inputs = replace(inputs, listed=tuple(listed))
    roots = [*paths, *listed]
    if not roots:
        return inputs
    sources, _ = find_files(roots, inputs.read)
    by_key = {output.key: output for output in foreign}
    for source in sources:
        key = _key(source.path)
        if key in by_key:
            advice = _exclude_advice(source.name, paths, listed)
            raise by_key[key].refused(printable(source.name), advice)
    return inputs
