"""Option bundles, error conversion and output plumbing shared by every command.

This package is the only place that imports click, rich's console or tqdm, or writes to
the standard streams. stdout carries data; stderr carries messages for people.
"""

from __future__ import annotations

import codecs
import enum
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TypeVar

import click
from rich.console import Console

from simdup.errors import ParameterError, SimdupError
from simdup.inputs.files import DEFAULT_MAX_SIZE, ReadOptions
from simdup.inputs.jsonl import JsonlOptions, expand_jsonl
from simdup.params import INSTALL_HINT, SEGMENT_MODES, WEIGHTINGS, Params, parse_setting
from simdup.text.segment import fell_back, segmentation

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
DEFAULTS = Params()


class ExitStatus(enum.IntEnum):
    """Exit statuses of every simdup command (documented in the README)."""

    OK = 0
    MATCHES = 1  # with --fail-on-match: at least one pair reported
    USAGE = 2  # bad option or argument
    UNREADABLE = 3  # with --strict: some input could not be read
    ERROR = 4  # an input or output problem stopped the run
    INTERRUPTED = 130  # Ctrl-C


class RunError(click.ClickException):
    """A failure message with a chosen exit status."""

    exit_code = int(ExitStatus.ERROR)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn library errors into one-line messages: bad settings exit 2, others exit 4."""
    try:
        yield
    except ParameterError as exc:
        raise click.UsageError(str(exc)) from exc
    except SimdupError as exc:
        raise RunError(str(exc)) from exc


def compose(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Return one decorator applying ``decorators`` top to bottom (as if stacked)."""

    def apply(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def bits_value(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Return ``"auto"`` or a positive width from ``--bits``.

    ``auto`` is the planner's choice in a scan, and 64 wherever fingerprints are stored.
    """
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise click.BadParameter(f"{value!r} is not a positive integer or auto")


def fingerprint_options(func: F) -> F:
    """Options that define a fingerprint: bits, seed and the :func:`term_options`."""
    return compose(
        click.option(
            "--bits",
            metavar="BITS",
            callback=bits_value,
            default="64",
            show_default=True,
            help="Fingerprint width in bits (any positive integer; 64, 128, 256 are common; "
            "auto: scan prices 64 to 512 and keeps the cheapest plan).",
        ),
        click.option(
            "--seed",
            type=click.IntRange(0, 2**53 - 1),
            default=DEFAULTS.seed,
            show_default=True,
            help="Hash seed, 0 <= SEED < 2**53. Fingerprints compare only at equal seeds.",
        ),
        term_options,
    )(func)


def term_options(func: F) -> F:
    """Options that turn text into weighted features: weighting, n-grams, stop words."""
    return compose(
        click.option(
            "--weighting",
            type=click.Choice(WEIGHTINGS),
            default=DEFAULTS.weighting,
            show_default=True,
            help="tf: term counts; log: 1+ln(tf); binary: presence only; tfidf: tf x idf.",
        ),
        click.option(
            "--ngram",
            type=click.IntRange(min=1),
            default=DEFAULTS.ngram,
            show_default=True,
            help="Word shingle size: 1 compares words, 2 or 3 also compares word order.",
        ),
        # -- noise words and Chinese segmentation (simdup.text.languages, simdup.text.segment) -----
        click.option(
            "--stopwords",
            default=DEFAULTS.stopwords,
            show_default=True,
            metavar="auto|LANG[,LANG]",
            callback=_stopwords_value,
            help="Noise words removed before weighting: auto = the list of each document's "
            "guessed language plus English; or lists by language code (de, fr,es, ...).",
        ),
        click.option(
            "--no-stopwords",
            is_flag=True,
            is_eager=True,
            expose_value=False,
            callback=_no_stopwords,
            help="Keep every word.",
        ),
        click.option(
            "--segment",
            type=click.Choice(SEGMENT_MODES),
            default=DEFAULTS.segment,
            show_default=True,
            callback=_segment_value,
            help="Chinese text: words (needs simdup[zh]) or character bigrams; "
            "auto = words when simdup[zh] is installed.",
        ),
        # -----------------------------------------------------------------------------------
    )(func)


_NO_STOPWORDS = "simdup.no_stopwords"


def _no_stopwords(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[_NO_STOPWORDS] = True


def _stopwords_value(ctx: click.Context, param: click.Parameter, value: str) -> str | bool:
    """Return the stop-word setting: ``False`` with --no-stopwords, else the canonical name."""
    if ctx.meta.get(_NO_STOPWORDS):
        if ctx.get_parameter_source("stopwords") is click.core.ParameterSource.COMMANDLINE:
            raise click.BadParameter("give either --stopwords or --no-stopwords, not both")
        # Given on the command line, as --stopwords/--no-stopwords was: it beats stored values.
        ctx.set_parameter_source("stopwords", click.core.ParameterSource.COMMANDLINE)
        return False
    try:
        return parse_setting(value).name
    except ParameterError as exc:
        raise click.BadParameter(str(exc)) from None


def _segment_value(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Note once, at the end of the run, when ``auto`` falls back to bigrams."""
    if value == "auto" and segmentation(value) == "bigrams":

        def note() -> None:
            if not ctx.params.get("quiet") and fell_back():
                stderr_console().print(
                    f"note: Chinese text is cut into character bigrams; {INSTALL_HINT} "
                    "segments it into words (--segment bigrams hides this note)",
                    markup=False,
                )

        ctx.call_on_close(note)
    return value


def _check_output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or value == "-":
        return value
    parent = os.path.dirname(os.path.abspath(value)) or "."
    if not os.path.isdir(parent):
        raise click.BadParameter(f"directory {parent!r} does not exist; create it first")
    if os.path.isdir(value):
        raise click.BadParameter(f"{value!r} is a directory; give a file name")
    return value


def output_options(formats: Iterable[str], default: str = "table") -> Callable[[F], F]:
    """Options for where and how results are written, and how chatty simdup is."""
    return compose(
        click.option(
            "--format",
            "fmt",
            type=click.Choice(tuple(formats)),
            default=default,
            show_default=True,
            help="Output format.",
        ),
        click.option(
            "-o",
            "--output",
            type=click.Path(dir_okay=False, allow_dash=True),
            callback=_check_output,
            help="Write results to this file (atomically: a temporary file renamed into place).",
        ),
        click.option("-q", "--quiet", is_flag=True, help="Print only results and errors."),
        click.option("-v", "--verbose", is_flag=True, help="List skipped inputs with reasons."),
    )


def input_options(func: F) -> F:
    """Options that choose and decode inputs (shared by scan, fingerprint and index)."""
    return compose(
        click.option("--hidden", is_flag=True, help="Also read hidden files and directories."),
        click.option(
            "-L", "--follow-symlinks", is_flag=True, help="Follow symbolic links while walking."
        ),
        click.option(
            "--include",
            multiple=True,
            metavar="GLOB",
            help="Only read files whose name or relative path matches (repeatable).",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="GLOB",
            help="Skip files and directories whose name or relative path matches (repeatable).",
        ),
        click.option(
            "--max-size",
            type=click.IntRange(min=0),
            default=DEFAULT_MAX_SIZE,
            show_default=True,
            help="Skip files larger than this many bytes (after gzip decompression).",
        ),
        click.option(
            "--files-from",
            type=click.Path(exists=True, dir_okay=False, allow_dash=True),
            help="Read the paths to scan from FILE, or - for stdin.",
        ),
        click.option(
            "-0",
            "--null",
            is_flag=True,
            help="--files-from paths are NUL-separated (find -print0).",
        ),
        click.option(
            "--jsonl",
            multiple=True,
            metavar="FILE|GLOB|URL",
            callback=_jsonl_value,
            help="Read documents from JSON Lines files (one object per line; .gz detected; "
            "- for stdin; quote a glob such as 'shards/*.jsonl.gz'; repeatable).",
        ),
        click.option(
            "--text-field", default="text", show_default=True, help="JSONL field holding the text."
        ),
        click.option(
            "--id-field",
            default="id",
            show_default=True,
            help="JSONL field naming the document (line number when absent).",
        ),
        click.option(
            "--encoding",
            default="utf-8",
            show_default=True,
            help="Codec of files without a byte-order mark.",
        ),
        click.option(
            "--encoding-errors",
            type=click.Choice(["replace", "strict"]),
            default="replace",
            show_default=True,
            help="replace: decode bad bytes as U+FFFD; strict: skip such files.",
        ),
        click.option(
            "--strict",
            is_flag=True,
            help=f"Exit with status {int(ExitStatus.UNREADABLE)} if any input could not be read.",
        ),
    )(func)


def _jsonl_value(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Return the JSON Lines inputs named by ``--jsonl``: globs expanded, each once, sorted."""
    try:
        return expand_jsonl(value)
    except SimdupError as exc:
        raise click.BadParameter(str(exc)) from None


def engine_options(func: F) -> F:
    """Options that choose where the pair scan runs: here, or on a Dask cluster."""
    return compose(
        click.option(
            "--engine",
            type=click.Choice(("local", "dask")),
            default="local",
            show_default=True,
            help="Run the stages here, or on a Dask cluster (needs: pip install 'simdup[dask]').",
        ),
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            help="With --engine dask: the scheduler, e.g. tcp://host:8786 (default: a local "
            "cluster of --jobs worker processes).",
        ),
    )(func)


def check_engine(kwargs: dict[str, Any]) -> None:
    """Refuse ``--scheduler`` without ``--engine dask``."""
    if kwargs["engine"] != "dask" and kwargs["scheduler"]:
        raise click.UsageError("--scheduler needs --engine dask")


def read_options(kwargs: dict[str, Any]) -> ReadOptions:
    """Build :class:`ReadOptions` from parsed input options."""
    with user_errors():
        return ReadOptions(
            hidden=kwargs["hidden"],
            follow_symlinks=kwargs["follow_symlinks"],
            include=tuple(kwargs["include"]),
            exclude=tuple(kwargs["exclude"]),
            max_size=kwargs["max_size"],
            encoding=kwargs["encoding"],
            encoding_errors=kwargs["encoding_errors"],
            leave_out=kwargs.get("leave_out", frozenset()),
        )


def jsonl_options(kwargs: dict[str, Any]) -> JsonlOptions:
    """Build :class:`JsonlOptions` from parsed input options."""
    return JsonlOptions(text_field=kwargs["text_field"], id_field=kwargs["id_field"] or None)


def read_input_bytes(path: str) -> bytes:
    """Return the bytes of a file argument, or of stdin for ``-``."""
    if path == "-":
        try:
            return sys.stdin.buffer.read()
        except OSError as exc:
            raise RunError(f"cannot read standard input: {exc.strerror or exc}") from exc
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror}") from exc


def stderr_console() -> Console:
    """Return the console for messages (stderr; colour only on a terminal, NO_COLOR honoured)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def make_progress(quiet: bool) -> Any:
    """Return a progress hook: tqdm on stderr when it is a terminal, else silent."""
    if quiet:
        from simdup.progress import no_progress

        return no_progress

    from tqdm import tqdm

    def progress(items: Iterable[T], *, desc: str, total: int | None = None) -> Iterable[T]:
        return tqdm(  # type: ignore[no-any-return]
            items, desc=desc, total=total, disable=None, file=sys.stderr, leave=False, unit="doc"
        )

    return progress


def write_output(data: bytes | Iterable[bytes], output: str | None) -> None:
    """Write result bytes (or pieces of them, in order) to stdout or, atomically, to ``output``.

    The file is written to a temporary file in the same directory and renamed into place,
    so an interrupted run leaves the old file or the complete new one, never a part. A
    symbolic link is written through (the link stays), and an existing special file
    (``/dev/null``, a FIFO) is written in place, never replaced.

    Raises:
        RunError: when the file cannot be written (exit status 4).
    """
    if output is None or output == "-":
        try:
            _write_all(sys.stdout.buffer, data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full disk or a closed descriptor behind stdout
            raise RunError(f"cannot write to standard output: {exc.strerror or exc}") from exc
        return
    target = os.path.realpath(output)
    try:
        try:
            mode = os.stat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            with open(target, "wb") as handle:
                _write_all(handle, data)
            return
        _replace(data, target, mode)
    except OSError as exc:
        raise RunError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _write_all(handle: BinaryIO, data: bytes | Iterable[bytes]) -> None:
    """Write ``data``, or each of its pieces in turn (a long result need not be one string)."""
    if isinstance(data, bytes):
        handle.write(data)
        return
    for piece in data:
        handle.write(piece)


def _replace(data: bytes | Iterable[bytes], target: str, mode: int | None) -> None:
    """Write ``target`` through a temporary file renamed into place (keeping its mode)."""
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temporary = tempfile.mkstemp(prefix=".simdup-", suffix=".tmp", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), stat.S_IMODE(mode))
            _write_all(handle, data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _name_bytes(exc: UnicodeError) -> tuple[bytes, int]:
    """Encode escaped name bytes (U+DC80-U+DCFF) as those bytes, other surrogates as ``\\uXXXX``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start : exc.end]
    out = b"".join(
        bytes([ord(ch) - 0xDC00]) if 0xDC80 <= ord(ch) <= 0xDCFF else b"\\u%04x" % ord(ch)
        for ch in chunk
    )
    return out, exc.end


codecs.register_error("simdup-names", _name_bytes)


def encode_output(text: str) -> bytes:
    """Encode rendered text; undecodable name bytes go out as the original bytes.

    A lone surrogate that is not an escaped byte (a JSON Lines id such as ``"\\ud800"``)
    has no bytes to go back to and is written as the six characters ``\\ud800``.

    >>> encode_output("a\\udcffb\\ud800")
    b'a\\xffb\\\\ud800'
    """
    return text.encode("utf-8", errors="simdup-names")
