"""How a run ends: the exit statuses of every command, and the errors that carry them."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import click

from simdup.errors import DatasetError, ParameterError, SimdupError

TYPE_CHECKING = False  # mypy reads the import below; nothing here needs it at run time
if TYPE_CHECKING:
    from simdup.model import Skip


class ExitStatus(enum.IntEnum):
    """Exit statuses of every simdup command (documented in the README)."""

    OK = 0
    MATCHES = 1  # with --fail-on-match: at least one pair reported
    USAGE = 2  # bad option or argument
    UNREADABLE = 3  # with --strict: some input could not be read
    ERROR = 4  # an input or output problem stopped the run
    INTERRUPTED = 130  # Ctrl-C
    TERMINATED = 143  # kill (SIGTERM)


class RunError(click.ClickException):
    """A failure message with a chosen exit status."""

    exit_code = int(ExitStatus.ERROR)


class BadInput(click.ClickException):
    """An input whose content cannot be used as asked: one line, exit status 2."""

    exit_code = int(ExitStatus.USAGE)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn library errors into one-line messages: bad settings and data exit 2, others 4."""
    try:
        yield
    except ParameterError as exc:
        raise click.UsageError(str(exc)) from exc
    except DatasetError as exc:
        raise BadInput(str(exc)) from exc
    except SimdupError as exc:
        raise RunError(str(exc)) from exc


def unreadable(strict: bool, skipped: Iterable[Skip]) -> bool:
    """Tell whether ``--strict`` ends the run with :attr:`ExitStatus.UNREADABLE`."""
    return strict and any(skip.unreadable for skip in skipped)
