"""The README documents every command and option, and its examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from simdup.cli import cli

README = (Path(__file__).parent.parent / "README.md").read_text()


def all_commands() -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []

    def visit(prefix: str, command: click.Command) -> None:
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):  # loads the commands of a lazy group
                sub = command.get_command(context, name)
                assert sub is not None, name
                visit(f"{prefix} {name}".strip(), sub)
        else:
            found.append((prefix, command))

    visit("", cli)
    return found


@pytest.mark.parametrize(("name", "command"), all_commands(), ids=lambda v: str(v))
def test_every_command_has_help_and_is_in_the_readme(name: str, command: click.Command) -> None:
    assert command.help, f"simdup {name} has no help text"
    assert f"simdup {name}" in README, f"simdup {name} is not documented in README.md"


@pytest.mark.parametrize(("name", "command"), all_commands(), ids=lambda v: str(v))
def test_every_option_is_in_the_readme(name: str, command: click.Command) -> None:
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            longs = [o for o in param.opts + param.secondary_opts if o.startswith("--")]
            assert any(o in README for o in longs), f"{longs} of simdup {name} not in README.md"


def test_readme_python_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parent.parent)
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"print": lambda *a: None})
