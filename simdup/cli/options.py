"""The options commands share: their declarations, and the callbacks that check their values.

A command declares its options with the bundles below; :mod:`simdup.cli.parsed` turns
click's parameters into typed values once. Declaring them loads no stage of the pipeline
(``simdup --help`` and shell completion stay instant): the callbacks load what they check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from simdup.cli.status import ExitStatus
from simdup.errors import ParameterError, SimdupError
from simdup.params import (
    CLUSTER_KINDS,
    DEFAULT_MAX_SIZE,
    DEFAULT_MIN_FEATURES,
    DEFAULT_MIN_SIZE,
    INSTALL_HINT,
    SCHEME_CHOICES,
    SEGMENT_MODES,
    SORT_KEYS,
    TEXT_MODES,
    WEIGHTINGS,
    Params,
    parse_setting,
)

F = TypeVar("F", bound=Callable[..., Any])
DEFAULTS = Params()

#: Pairs a terminal shows unless ``--limit`` says otherwise.
TERMINAL_ROWS = 50


def described(*decls: str, **attrs: Any) -> Callable[[str], Callable[[F], F]]:
    """Return an option that commands declare alike but for its help text."""

    def option(text: str) -> Callable[[F], F]:
        return click.option(*decls, help=text, **attrs)

    return option


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


#: ``--seed`` (the first of several seeds in ``eval``); ``help`` says which.
seed_option = described(
    "--seed",
    type=click.IntRange(0, 2**53 - 1),
    default=DEFAULTS.seed,
    show_default=True,
)


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
        seed_option("Hash seed, 0 <= SEED < 2**53. Fingerprints compare only at equal seeds."),
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
    from simdup.text.segment import fell_back, segmentation

    if value == "auto" and segmentation(value) == "bigrams":

        def note() -> None:
            from simdup.cli.output import stderr_console

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


def format_option(
    formats: Iterable[str],
    default: str,
    help: str = "Output format.",  # noqa: A002
) -> Callable[[F], F]:
    """The ``--format`` option, choosing among ``formats``."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(tuple(formats)),
        default=default,
        show_default=True,
        help=help,
    )


def output_options(formats: Iterable[str], default: str = "table") -> Callable[[F], F]:
    """Options for where and how results are written, and how chatty simdup is."""
    return compose(
        format_option(formats, default),
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


#: ``--html``: also write a self-contained HTML page; ``help`` says of what.
html_option = described("--html", "html_file", type=click.Path(dir_okay=False))


#: ``--text``: how the text of markup is read.
text_option = click.option(
    "--text",
    type=click.Choice(TEXT_MODES),
    default="auto",
    show_default=True,
    help="Read the text of markup: html (also XML), markdown, man (troff), or plain "
    "as it is; auto by file name (.html, .xml, .md, man pages such as ls.1.gz; "
    "other files plain). Records (JSON Lines, tables) are plain unless a mode is given.",
)


def encoding_options(codec: str, errors: str) -> Callable[[F], F]:
    """The ``--encoding`` and ``--encoding-errors`` options, with their help texts."""
    return compose(
        click.option("--encoding", default="utf-8", show_default=True, help=codec),
        click.option(
            "--encoding-errors",
            type=click.Choice(["replace", "strict"]),
            default="replace",
            show_default=True,
            help=errors,
        ),
    )


def record_options(func: F) -> F:
    """Options that read records (JSON Lines lines, table rows) and name their fields."""
    return compose(
        click.option(
            "--jsonl",
            multiple=True,
            metavar="FILE|GLOB|URL",
            callback=_jsonl_value,
            help="Read documents from JSON Lines files (one object per line; .gz detected; "
            "- for stdin; quote a glob such as 'shards/*.jsonl.gz'; repeatable).",
        ),
        click.option(
            "--parquet",
            multiple=True,
            metavar="FILE|GLOB|URL",
            callback=_parquet_value,
            help="Read documents from Parquet files, one per row (needs simdup[parquet]; "
            "quote a glob such as 'shards/*.parquet'; repeatable).",
        ),
        click.option(
            "--arrow",
            multiple=True,
            metavar="DIR",
            type=click.Path(exists=True, file_okay=False),
            help="Read documents from a dataset saved with datasets' save_to_disk, one per row "
            "(needs simdup[parquet]; repeatable).",
        ),
        click.option(
            "--text-field",
            default="text",
            show_default=True,
            help="Record field holding the text (JSONL, Parquet, Arrow; a.b: a nested field).",
        ),
        click.option(
            "--id-field",
            default="id",
            show_default=True,
            help="Record field naming the document (line or row number when absent).",
        ),
    )(func)


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
        record_options,
        text_option,
        encoding_options(
            "Codec of files without a byte-order mark.",
            "replace: decode bad bytes as U+FFFD; strict: skip such files.",
        ),
        click.option(
            "--strict",
            is_flag=True,
            help=f"Exit with status {int(ExitStatus.UNREADABLE)} if any input could not be read.",
        ),
    )(func)


def size_options(func: F) -> F:
    """Options that leave out documents too small to compare (stubs, empty modules)."""
    return compose(
        click.option(
            "--min-size",
            type=click.IntRange(min=0),
            default=DEFAULT_MIN_SIZE,
            show_default=True,
            metavar="BYTES",
            help="Skip files smaller than this many bytes (after gzip decompression).",
        ),
        click.option(
            "--min-features",
            type=click.IntRange(min=0),
            metavar="N",
            help="Skip documents with fewer than N distinct words (after noise words): "
            "stubs such as '.so' man pages and near-empty modules, whose similarity "
            f"means little. 0 compares every document. [default: {DEFAULT_MIN_FEATURES}; 0 "
            "with --jsonl, --parquet or --arrow]",
        ),
    )(func)


def _jsonl_value(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Return the JSON Lines inputs named by ``--jsonl``: globs expanded, each once, sorted.

    Shell completion (``resilient_parsing``) takes them as given: it loads no reader.
    """
    if not value or ctx.resilient_parsing:
        return list(value)
    from simdup.inputs.jsonl import expand_jsonl

    return _expanded(expand_jsonl, value)


def _parquet_value(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """Return the Parquet files named by ``--parquet``, as :func:`_jsonl_value` does."""
    if not value or ctx.resilient_parsing:
        return list(value)
    from simdup.inputs.tables import expand_parquet

    return _expanded(expand_parquet, value)


def _expanded(expand: Callable[[tuple[str, ...]], list[str]], value: tuple[str, ...]) -> list[str]:
    """Return ``expand(value)``, its errors as the option's."""
    try:
        return expand(value)
    except SimdupError as exc:
        raise click.BadParameter(str(exc)) from None


def jobs_option(help: str) -> Callable[[F], F]:  # noqa: A002 (click's name)
    """``-j/--jobs``: worker processes; ``help`` says what they do."""
    return click.option(
        "-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True, help=help
    )


def engine_options(jobs: str) -> Callable[[F], F]:
    """Options that choose how many workers scan for pairs, here or on a Dask cluster.

    Args:
        jobs: The help of ``-j/--jobs``: what the workers do.
    """
    return compose(
        jobs_option(jobs),
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
    )


#: ``--scheme`` (blocking); ``help`` says what it is for.
scheme_option = described(
    "--scheme",
    type=click.Choice(SCHEME_CHOICES),
    default=DEFAULTS.scheme,
    show_default=True,
)

#: ``--threshold``: the true cosine that makes a pair similar.
threshold_option = described(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=DEFAULTS.threshold,
    show_default=True,
)

#: ``--recall``: what ``--scheme auto`` plans for.
recall_option = described(
    "--recall",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=DEFAULTS.recall,
    show_default=True,
)


def blocking_options(func: F) -> F:
    """Options choosing how candidate pairs are found and which are reported."""
    return compose(
        scheme_option(
            "Blocking: strict=1 block, balanced=4, loose=8; auto plans from --threshold."
        ),
        click.option(
            "--blocks",
            type=click.IntRange(min=1),
            help="Split fingerprints into N blocks (overrides --scheme; N <= --bits).",
        ),
        click.option(
            "--max-distance",
            type=click.IntRange(min=0),
            help="Find every pair within this Hamming distance (overrides both).",
        ),
        threshold_option("Report pairs whose true cosine is at least this."),
        recall_option("With --scheme auto: find pairs at the threshold with this probability."),
    )(func)


#: ``--all``: every candidate pair, not only those at the threshold; ``help`` says where.
all_option = described("--all", "report_all", is_flag=True)

#: ``--limit``: how many results are shown; ``help`` says of what.
limit_option = described("--limit", type=click.IntRange(min=0))


def size_value(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Return the bytes of a ``--memory`` size such as ``512M``, ``2G`` or ``1.5GiB``."""
    if value is None or ctx.resilient_parsing:  # shell completion checks nothing
        return None
    from simdup.sizes import parse_size

    try:
        return parse_size(value)
    except SimdupError as exc:
        raise click.BadParameter(str(exc)) from exc


def plan_options(func: F) -> F:
    """``--memory`` and ``--plan``: the budget of the pair search, and the plan alone."""
    return compose(_memory_option(), _plan_option())(func)


def spill_plan_options(func: F) -> F:
    """:func:`plan_options` with ``--tmp-dir``: where a corpus too large for the budget spills."""
    return compose(_memory_option(), _tmp_dir_option(), _plan_option())(func)


def spill_options(func: F) -> F:
    """``--memory`` and ``--tmp-dir``, for a command that reads a corpus but plans no pairs."""
    memory = _memory_option(
        "Memory the run may use, e.g. 512M, 2G, 1.5GiB [default: the smaller of 4 GiB and "
        "half the machine]; a corpus past its share is stored under --tmp-dir."
    )
    return compose(memory, _tmp_dir_option())(func)


def _tmp_dir_option() -> Callable[[F], F]:
    """``--tmp-dir``: where a corpus too large for the budget spills."""
    return click.option(
        "--tmp-dir",
        type=click.Path(exists=True, file_okay=False),
        help="Where a corpus too large to hold within --memory spills its weights, names and "
        "pairs [default: the system's temporary directory]; the files go when the run ends.",
    )


#: The help of ``--memory`` where it bounds a pair search.
_MEMORY_HELP = (
    "Memory the scan may use, e.g. 512M, 2G, 1.5GiB [default: the smaller of 4 GiB and half "
    "the machine]. A plan that cannot fit is refused before any pair work."
)


def _memory_option(help: str = _MEMORY_HELP) -> Callable[[F], F]:  # noqa: A002 (click's name)
    """``--memory``: the bytes the run may use; ``help`` says what it bounds."""
    return click.option("--memory", metavar="SIZE", callback=size_value, help=help)


def _plan_option() -> Callable[[F], F]:
    """``--plan``: print the plan and stop."""
    return click.option(
        "--plan",
        "plan_only",
        is_flag=True,
        help="Print the plan (exact or tables, width, expected recall, cost, memory) and stop.",
    )


def report_options(func: F) -> F:
    """Options choosing which pairs are shown, as in ``simdup scan``."""
    return compose(
        all_option("Report every candidate pair."),
        click.option(
            "--clusters",
            type=click.Choice(CLUSTER_KINDS),
            metavar="[representative|linked]",
            help="Also report groups: each member at or above --threshold with the group's "
            "representative (default), or linked: single-link chains, labelled by their "
            "weakest link.",
        ),
        limit_option(
            f"Show at most N pairs (0: all) [default: all; on a terminal {TERMINAL_ROWS}]."
        ),
        click.option(
            "--sort",
            type=click.Choice(SORT_KEYS),
            default="cosine",
            show_default=True,
            help="Order of pairs: cosine (highest first), hamming (lowest first) or path.",
        ),
        click.option(
            "--fail-on-match",
            is_flag=True,
            help="Exit with status 1 if any pair reaches --threshold (shown or not).",
        ),
        click.option("--timings", is_flag=True, help="Add per-stage seconds to JSON stats."),
    )(func)


def corpus_options(func: F) -> F:
    """Options of a command that fingerprints a corpus for pairs: inputs, fingerprint, blocking."""
    return compose(input_options, fingerprint_options, blocking_options)(func)
