"""The ``simdup`` command line: a thin click layer over the library.

Each command parses options, builds library objects, makes one library call, renders and
writes. Run ``simdup COMMAND --help`` for a command's options and examples.
"""

from __future__ import annotations

import errno
import io
import os
import sys

import click

from simdup import __version__
from simdup.cli.compare import compare
from simdup.cli.dedupe import dedupe_command
from simdup.cli.eval import eval_command
from simdup.cli.fingerprints import fingerprint_command, match
from simdup.cli.index import index_group
from simdup.cli.options import ExitStatus
from simdup.cli.scan import scan

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


class _ClosedBinary:
    """Stands in for the binary side of a closed standard stream: reads and writes fail."""

    def read(self, size: int = -1) -> bytes:
        raise OSError(errno.EBADF, "the stream is closed")

    def write(self, data: bytes) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def flush(self) -> None:
        """Nothing is ever buffered."""


class _ClosedText(io.TextIOBase):
    """Stands in for a standard stream the shell closed (``>&-``, ``<&-``)."""

    buffer = _ClosedBinary()

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def isatty(self) -> bool:
        return False


def _replace_closed_streams() -> None:
    """Give closed standard streams a stand-in, so using one is an error message, not a crash.

    Reading a closed stdin or writing results to a closed stdout fails with a message; messages
    meant for a closed stderr are dropped, as nobody can read them.
    """
    for name in ("stdin", "stdout"):
        if getattr(sys, name) is None:
            setattr(sys, name, _ClosedText())
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def main(args: list[str] | None = None) -> None:
    """Run the command line and exit with its status.

    Ctrl-C ends the run with status 130 and one line, and a closed output pipe
    (``simdup scan ... | head -1``) ends quietly, never with a traceback.
    """
    _replace_closed_streams()
    try:
        status = cli.main(args=args, prog_name="simdup", standalone_mode=False)
        sys.stdout.flush()
    except click.exceptions.Abort:
        click.echo("simdup: interrupted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141)
    sys.exit(status if isinstance(status, int) else ExitStatus.OK)
