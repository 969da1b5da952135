"""Commands that refuse options given together which cannot both do what they say.

An option a run would silently ignore is a mistake to point out, not to guess past: the
command classes here check the combination once click has parsed the command line.
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from simdup.params import CLUSTER_KINDS


def optional_value(args: list[str], option: str, values: Iterable[str], default: str) -> list[str]:
    """Return ``args`` with ``default`` after each ``option`` not followed by one of ``values``.

    So ``--clusters PATH`` reads PATH as a path, and ``--clusters linked`` as the kind.

    >>> optional_value(["--clusters", "docs/"], "--clusters", ["linked"], "representative")
    ['--clusters', 'representative', 'docs/']
    """
    out: list[str] = []
    values = set(values)
    for k, arg in enumerate(args):
        out.append(arg)
        if arg == "--":
            return out + args[k + 1 :]
        if arg == option and (k + 1 == len(args) or args[k + 1] not in values):
            out.append(default)
    return out


#: Options that cannot both do what they say: (option, option, why), by parameter name.
CONFLICTS = (
    ("blocks", "max_distance", "--max-distance chooses the tables itself"),
    ("scheme", "blocks", "--blocks chooses the tables instead of the scheme"),
    ("scheme", "max_distance", "--max-distance chooses the tables instead of the scheme"),
    ("recall", "blocks", "--recall plans the tables of --scheme auto"),
    ("recall", "max_distance", "--recall plans the tables of --scheme auto"),
    *(
        ("plan_only", other, "--plan prints the plan and stops")
        for other in (
            "report_all", "clusters", "limit", "sort", "fail_on_match", "html_file", "timings",
            "cache",
        )
    ),
)  # fmt: skip


def given(ctx: click.Context, name: str) -> bool:
    """Tell whether the option ``name`` was given (command line or environment)."""
    source = ctx.get_parameter_source(name)
    return source in (
        click.core.ParameterSource.COMMANDLINE,
        click.core.ParameterSource.ENVIRONMENT,
    )


def option_name(ctx: click.Context, name: str) -> str:
    """Return how the option ``name`` is written (its long form)."""
    for param in ctx.command.params:
        if param.name == name:
            return max(param.opts, key=len)
    return name


def refuse_conflicts(ctx: click.Context) -> None:
    """Refuse options given together that cannot both do what they say (exit status 2).

    An option the run would silently ignore is a mistake to point out, not to guess past.
    """
    params = ctx.params
    for first, second, why in CONFLICTS:
        if given(ctx, first) and given(ctx, second):
            raise click.UsageError(
                f"{option_name(ctx, first)} and {option_name(ctx, second)} cannot be given "
                f"together: {why}"
            )
    if given(ctx, "recall") and params.get("scheme", "auto") != "auto":
        raise click.UsageError(
            f"--recall plans the tables of --scheme auto; --scheme {params['scheme']} fixes them"
        )
    if given(ctx, "timings") and params.get("fmt") != "json":
        raise click.UsageError("--timings adds seconds to JSON stats: give --format json")
    output = str(params.get("output") or "")
    by_name = output.lower().endswith(".parquet") and not given(ctx, "fmt")
    parquet = params.get("fmt") == "parquet" or by_name
    if params.get("clusters") and parquet:
        raise click.UsageError(
            "--clusters: a Parquet file holds the pairs only; write the clusters with "
            "--format jsonl, json or csv"
        )
    if given(ctx, "null") and not params.get("files_from"):
        raise click.UsageError("-0 splits the list of --files-from FILE: give --files-from")
    for name in ("text_field", "id_field"):
        records = any(params.get(kind) for kind in ("jsonl", "parquet", "arrow", "reference"))
        if given(ctx, name) and not records:
            raise click.UsageError(
                f"{option_name(ctx, name)} names a JSON Lines field: give --jsonl FILE "
                "(or a table: --parquet FILE, --arrow DIR)"
            )


class CheckedCommand(click.Command):
    """A command that refuses options given together that cannot both work."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse as click does, then refuse conflicting options."""
        rest = super().parse_args(ctx, args)
        if not ctx.resilient_parsing:  # shell completion checks nothing
            refuse_conflicts(ctx)
        return rest


class PairCommand(CheckedCommand):
    """A command that lists pairs: ``--clusters`` may come without its value."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Give a bare ``--clusters`` its default kind, then parse as click does."""
        fixed = optional_value(args, "--clusters", CLUSTER_KINDS, CLUSTER_KINDS[0])
        return super().parse_args(ctx, fixed)
