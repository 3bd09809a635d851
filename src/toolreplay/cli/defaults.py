"""Defaults every command takes from the nearest config (``--config`` to name one; flags win).

A command says which config it used, on stderr in one line, when the config supplied a
setting that command used; its report on stdout stays the same bytes either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from toolreplay.config import Config, nearest_config
from toolreplay.findings import one_line


def config_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path),
        help="Config file to take defaults from (default: the nearest from here up; flags win).",
    )(func)


def read_config(config_file: Path | None) -> Config | None:
    """The named config, or the nearest one, or None when there is none."""
    return nearest_config(config_file)


def announce(config: Config | None, used: Sequence[str]) -> None:
    """Say on stderr which config supplied which settings (nothing when it supplied none)."""
    if config is not None and used:
        shown = os.path.relpath(config.source) if os.path.isabs(config.source) else config.source
        click.echo(f"toolreplay: using config {one_line(shown)} ({', '.join(used)})", err=True)
