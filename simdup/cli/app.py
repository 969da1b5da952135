"""The ``simdup`` command group: every command, gathered under one click group."""

from __future__ import annotations

import click

from simdup import __version__
from simdup.cli.commands.compare import compare
from simdup.cli.commands.dedupe import dedupe_command
from simdup.cli.commands.eval import eval_command
from simdup.cli.commands.fingerprints import fingerprint_command, match
from simdup.cli.commands.index import index_group
from simdup.cli.commands.scan import scan

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="simdup")
def cli() -> None:
    """Find near-duplicate text files with SimHash fingerprints.

    \b
    Examples:
      simdup scan docs/                      pairs of near-duplicate files
      simdup scan --format jsonl docs/ | jq  one JSON object per pair
      simdup compare a.txt b.txt             why two files are (not) similar
      simdup fingerprint *.txt               one fingerprint per file

    Exit status: 0 success, 1 pairs found with --fail-on-match, 2 usage error,
    3 unreadable inputs with --strict, 4 other errors, 130 interrupted.
    """


cli.add_command(scan)
cli.add_command(compare)
cli.add_command(fingerprint_command)
cli.add_command(match)
cli.add_command(index_group)
cli.add_command(eval_command)
cli.add_command(dedupe_command)
