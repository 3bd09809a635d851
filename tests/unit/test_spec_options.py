"""docs/spec.md §2.2 lists every command and every option the command line has, and no other."""

from __future__ import annotations

import re

import click

from tests.conftest import ROOT
from toolreplay.cli import cli


def _commands(group: click.Group, ctx: click.Context, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found |= _commands(command, ctx, f"{prefix}{name} ")
            if command.invoke_without_command:  # (``action``: a command with its own subcommand)
                found[prefix + name] = command
        else:
            found[prefix + name] = command
    return found


def _table() -> dict[str, str]:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    section = text.split("### 2.2 Options", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z -]+)` \|[^|]*\|(.*)\|$", section, re.M)
    return {name: options for name, options in rows}


def test_the_options_table_is_the_command_line() -> None:
    """Every command has a row, every row a command, and each row names exactly its long options."""
    commands = _commands(cli, click.Context(cli))
    table = _table()
    assert sorted(table) == sorted(commands)
    for name, command in commands.items():
        options = {
            max(p.opts, key=len) for p in command.params if isinstance(p, click.Option) and not p.hidden
        } - {"--help"}
        assert set(re.findall(r"`(--[a-z-]+)", table[name])) == options, name
