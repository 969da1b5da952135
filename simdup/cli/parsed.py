"""What a command's options ask for, as typed values built once from click's parameters.

A command parses its options into these (:class:`Inputs`, :class:`Output`,
:class:`Engine`, :class:`PairReport`, :func:`build_params`) and hands them to the helpers
that do the work; nothing downstream reads click's parameters. The option types of the
stages load when options are parsed, not when a command is declared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import click

from simdup.cli.status import user_errors
from simdup.params import DEFAULT_MIN_FEATURES, Params

if TYPE_CHECKING:
    from simdup.inputs.files import ReadOptions
    from simdup.inputs.jsonl import JsonlOptions
    from simdup.report.shown import ReportOptions

#: A file's identity: (device, inode).
Key = tuple[int, int]


def pick(opts: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Return the parsed options among ``names`` that the command has (by name)."""
    return {name: opts[name] for name in names if name in opts}


#: The options that are settings of :class:`Params`, by the same names.
PARAM_OPTIONS = (
    "bits",
    "seed",
    "weighting",
    "ngram",
    "stopwords",
    "segment",
    "scheme",
    "blocks",
    "max_distance",
    "threshold",
    "recall",
    "min_features",
)


def build_params(opts: Mapping[str, Any]) -> Params:
    """Return :class:`Params` from parsed options (library validation, usage errors).

    Settings the command has no option for keep their defaults. ``--min-features`` not
    given is :data:`~simdup.params.DEFAULT_MIN_FEATURES` for files, and 0 when records
    (``--jsonl``, ``--parquet``, ``--arrow``) are read: stubs are files, while short records
    are what a dataset holds.
    """
    settings = pick(opts, PARAM_OPTIONS)
    if "min_features" in settings and settings["min_features"] is None:
        records = any(opts.get(name) for name in ("jsonl", "parquet", "arrow"))
        settings["min_features"] = 0 if records else DEFAULT_MIN_FEATURES
    with user_errors():
        return Params(**settings)


@dataclass(frozen=True)
class Output:
    """Where and how results are written, and how chatty the run is (:func:`output_options`).

    Attributes:
        fmt: The ``--format``.
        path: The ``-o`` file (None or ``-``: stdout).
        quiet: Print only results and errors.
        verbose: List skipped inputs with reasons.
    """

    fmt: str
    path: str | None = None
    quiet: bool = False
    verbose: bool = False

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> Output:
        """Return the output options of a command (those it does not take are off).

        An ``-o`` name ending in ``.parquet`` chooses Parquet when ``--format`` is not
        given and the command writes it.
        """
        fmt, path = opts["fmt"], opts.get("output")
        if path and path.lower().endswith(".parquet") and _default_format():
            fmt = "parquet"
        return cls(fmt, path, opts.get("quiet", False), opts.get("verbose", False))


def _default_format() -> bool:
    """Tell whether the running command takes ``--format parquet`` and was given no format."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT:
        return False
    choices = [getattr(p.type, "choices", ()) for p in ctx.command.params if p.name == "fmt"]
    return any("parquet" in c for c in choices)


#: The options that are settings of :class:`ReadOptions`, by the same names.
READ_OPTIONS = (
    "hidden",
    "follow_symlinks",
    "include",
    "exclude",
    "max_size",
    "encoding",
    "encoding_errors",
    "text",
    "min_size",
)


@dataclass(frozen=True)
class Inputs:
    """The documents a command reads: PATH arguments and :func:`input_options`.

    Attributes:
        paths: PATH arguments (``-``: standard input, where the command takes it).
        files_from: The file listing more paths (``-``: stdin), or None.
        null: The list is NUL-separated.
        jsonl: JSON Lines inputs, globs expanded (``-``: stdin).
        parquet: Parquet files, globs expanded.
        arrow: Directories of datasets saved with ``save_to_disk``.
        read: How files are found and decoded, and the files left out of the documents.
        text_field: Record field holding the text (a dotted path in tables).
        id_field: Record field naming the document, as given (empty: line or row numbers).
        strict: Inputs that cannot be read end the run with exit status 3.
        listed: The ``--files-from`` list once read (None: not read yet).
    """

    paths: tuple[str, ...]
    files_from: str | None
    null: bool
    jsonl: tuple[str, ...]
    read: ReadOptions
    text_field: str
    id_field: str
    strict: bool
    listed: tuple[str, ...] | None = None
    parquet: tuple[str, ...] = ()
    arrow: tuple[str, ...] = ()

    @classmethod
    def parsed(cls, paths: Iterable[str], opts: Mapping[str, Any]) -> Inputs:
        """Return the inputs named by ``paths`` and the input options (usage errors)."""
        from simdup.inputs.files import ReadOptions

        with user_errors():
            read = ReadOptions(**pick(opts, READ_OPTIONS))
        return cls(
            paths=tuple(paths),
            files_from=opts["files_from"],
            null=opts["null"],
            jsonl=tuple(opts["jsonl"]),
            read=read,
            text_field=opts["text_field"],
            id_field=opts["id_field"],
            strict=opts["strict"],
            parquet=tuple(opts.get("parquet", ())),
            arrow=tuple(opts.get("arrow", ())),
        )

    @property
    def records(self) -> bool:
        """Tell whether records are read: ``--jsonl``, ``--parquet`` or ``--arrow``."""
        return bool(self.jsonl or self.parquet or self.arrow)

    @property
    def tables(self) -> bool:
        """Tell whether table inputs are read: ``--parquet`` or ``--arrow``."""
        return bool(self.parquet or self.arrow)

    @property
    def fields(self) -> JsonlOptions:
        """Which fields of a JSON Lines record hold the text and the id."""
        from simdup.inputs.jsonl import JsonlOptions

        return JsonlOptions(text_field=self.text_field, id_field=self.id_field or None)

    def leaving_out(self, keys: Iterable[Key]) -> Inputs:
        """Return these inputs with more files, by identity, left out of the documents."""
        return replace(self, read=replace(self.read, leave_out=self.read.leave_out | set(keys)))

    def settings(self) -> dict[str, Any]:
        """Return the input settings that change results, for JSON ``params``."""
        read = self.read
        return {
            "hidden": read.hidden,
            "follow_symlinks": read.follow_symlinks,
            "include": list(read.include),
            "exclude": list(read.exclude),
            "max_size": read.max_size,
            "encoding": read.encoding,
            "encoding_errors": read.encoding_errors,
            "text": read.text,
            "min_size": read.min_size,
            "jsonl": bool(self.jsonl),
            **({"parquet": True} if self.parquet else {}),
            **({"arrow": True} if self.arrow else {}),
            "text_field": self.text_field,
            "id_field": self.id_field,
        }


@dataclass(frozen=True)
class Engine:
    """Where the pair scan runs (:func:`engine_options`) and with how many workers.

    Attributes:
        name: ``local`` or ``dask``.
        scheduler: The Dask scheduler's address (None: a local cluster).
        jobs: Workers (0: every core).
        memory: Bytes the scan may use (None: the default budget).
        tmp_dir: Where a large corpus spills (None: the system's temporary directory).
    """

    name: str
    scheduler: str | None
    jobs: int
    memory: int | None = None
    tmp_dir: str | None = None

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> Engine:
        """Return the engine options; refuse ``--scheduler`` without ``--engine dask``."""
        if opts["engine"] != "dask" and opts["scheduler"]:
            raise click.UsageError("--scheduler needs --engine dask")
        return cls(
            opts["engine"], opts["scheduler"], opts["jobs"], opts.get("memory"), opts.get("tmp_dir")
        )

    @property
    def dask(self) -> bool:
        """Tell whether the scan runs on a Dask cluster."""
        return self.name == "dask"

    def settings(self) -> dict[str, Any]:
        """Return the engine for JSON ``params``: named only when it is not the local one."""
        return {"engine": "dask"} if self.dask else {}


@dataclass(frozen=True)
class PairReport:
    """How a command that lists pairs reports them (:func:`report_options`).

    Attributes:
        output: Format, file and messages.
        options: Which pairs are shown, and how.
        fail_on_match: Exit with status 1 when a pair reaches the threshold.
        show_all: ``--limit 0``: every pair, on a terminal too.
        labels: The headers of a table's name columns (None: ``Document A``, ``B``).
    """

    output: Output
    options: ReportOptions
    fail_on_match: bool
    show_all: bool = False
    labels: tuple[str, str] | None = None

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> PairReport:
        """Return the report of a pair-listing command (usage errors for bad values)."""
        from simdup.report.shown import ReportOptions

        chosen = pick(opts, (f.name for f in fields(ReportOptions)))
        show_all = chosen.get("limit") == 0
        if show_all:  # --limit 0: no limit
            chosen["limit"] = None
        with user_errors():
            options = ReportOptions(**chosen)
        return cls(Output.parsed(opts), options, opts["fail_on_match"], show_all)
