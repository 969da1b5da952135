"""The ``simdup`` command group: every command, gathered under one click group.

A command's module is imported when the command is first asked for (click's lazy group):
``simdup scan`` loads only ``scan``, ``--version`` none; ``--help`` lists them all. The
modules are light to import in any case, since each loads the pipeline inside the
functions that run it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from simdup import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: Each command, by name: the module and the attribute that define it.
COMMANDS = {
    "compare": ("simdup.cli.commands.compare", "compare"),
    "dedupe": ("simdup.cli.commands.dedupe", "dedupe_command"),
    "eval": ("simdup.cli.commands.eval", "eval_command"),
    "fingerprint": ("simdup.cli.commands.fingerprints", "fingerprint_command"),
    "index": ("simdup.cli.commands.index", "index_group"),
    "match": ("simdup.cli.commands.fingerprints", "match"),
    "scan": ("simdup.cli.commands.scan", "scan"),
    "serve": ("simdup.cli.commands.serve", "serve_command"),
}


class LazyGroup(click.Group):
    """A group whose commands are imported from their modules when first asked for."""

    def __init__(self, *args: Any, lazy: Mapping[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Return every command's name, loaded or not, in the order help lists them."""
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return the command named ``cmd_name``, importing its module the first time."""
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, attribute = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings=CONTEXT)
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
