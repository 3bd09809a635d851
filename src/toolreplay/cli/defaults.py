"""Defaults every command takes from the nearest config (``--config`` to name one; flags win).

A command says which config it used, on stderr in one line, when the config supplied a
setting that command used; its report on stdout stays the same bytes either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from toolreplay.cli.base import warn
from toolreplay.escape import one_line

if TYPE_CHECKING:
    from toolreplay.analyses.volatile import Volatile
    from toolreplay.config import Config


def config_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--config",
        "config_file",
        # a str, made a Path by the config's loader: verify SEALED reads no config, and pathlib
        # (with the loader, tomllib ...) is a start-up cost it need not pay
        type=click.Path(),
        help="Config file to take defaults from (default: the nearest from here up; flags win).",
    )(func)


def read_config(config_file: str | None) -> Config | None:
    """The named config, or the nearest one, or None when there is none; a warning for each
    volatile table it holds where it is not read."""
    # The loader (tomllib, pathlib) only now: verify SEALED, which shares --config, reads none
    from toolreplay.config import nearest_config

    config = nearest_config(config_file)
    for line in config.unread if config is not None else ():
        warn(line)
    return config


def announce(config: Config | None, used: Sequence[str]) -> None:
    """Say on stderr which config supplied which settings (nothing when it supplied none)."""
    if config is not None and used:
        shown = one_line(config_shown(config))
        click.echo(f"toolreplay: using config {shown} ({', '.join(sorted(used))})", err=True)


def config_shown(config: Config) -> str:
    """The config's file as a command names it: relative to the current folder when it was found."""
    return os.path.relpath(config.source) if os.path.isabs(config.source) else config.source


def setting(flag: Any, config: Config | None, name: str, used: list[str]) -> Any:
    """The one rule of every command's settings: ``flag`` when the command line gave one (not None),
    else the config's setting ``name`` when it sets one (appended to ``used``, for
    :func:`announce`), else None (the command's default)."""
    if flag is not None or config is None or name not in config.declared:
        return flag
    used.append(name)
    return getattr(config, name)


def mutators_and_lock(
    config: Config | None, mutators: Sequence[str], lock_path: str | None, used: list[str]
) -> tuple[frozenset[str], str | None]:
    """The mutator list and the tool lock a command judges with: the flags, else the config's
    ``mutators`` and ``tools_lock``, else the default list and no lock; what the config
    supplied is appended to ``used`` (for :func:`announce`)."""
    # the configuration's module only now, as in read_config: verify SEALED loads none of it
    from toolreplay.config import DEFAULT_MUTATORS

    chosen = setting(frozenset(mutators) or None, config, "mutators", used)
    return chosen or DEFAULT_MUTATORS, path_setting(lock_path, config, "tools_lock", used)


def path_setting(flag: str | None, config: Config | None, name: str, used: list[str]) -> str | None:
    """:func:`setting` for a file: the config names it from its own folder, and this gives it as
    the current directory reaches it."""
    if flag is not None or config is None or name not in config.declared:
        return flag
    # (the loader is in by now: read_config gave the config; verify shares this module)
    from toolreplay.config import config_path

    return config_path(config, setting(None, config, name, used))


def volatile_of(config: Config | None, used: list[str]) -> Volatile | None:
    """The config's volatile rules (docs/spec.md §3.6) for a command that compares, or None
    without any; ``volatile`` is appended to ``used`` (for :func:`announce`) when there are."""
    if config is None or not config.volatile:
        return None
    # (its dataclasses cost verify, which shares this module and compares nothing, milliseconds)
    from toolreplay.analyses.volatile import Volatile

    used.append("volatile")
    return Volatile(config.volatile, budget=config.pattern_budget_seconds)
