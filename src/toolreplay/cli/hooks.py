"""``toolreplay hook ...``: the group of the commands the pre-commit hooks run (.pre-commit-hooks.yaml).

Each hook's command is its own module, imported when it runs: ``hook verify`` reads chains,
``hook drift-note`` asks git (and reads YAML only for a staged note).
"""

from __future__ import annotations

import click

from toolreplay.cli.base import LazyGroup

#: each hook's command, as ``"module:attr"``
HOOKS: dict[str, str] = {
    "drift-note": "toolreplay.cli.drift_note_hook:drift_note_hook",
    "verify": "toolreplay.cli.hook_verify:verify_hook",
}


@click.group(name="hook", cls=LazyGroup, lazy=HOOKS)
def hook() -> None:
    """Commands the pre-commit hooks run."""
