"""The ``toolreplay`` command line: parse options, call the core, map outcomes to exit codes.

The group and its error boundary are :mod:`toolreplay.cli.base`; each module here registers
its commands on it, imported below for that effect.
"""

from __future__ import annotations

from toolreplay.cli import action as _action  # noqa: F401
from toolreplay.cli import baselines as _baselines  # noqa: F401
from toolreplay.cli import capture as _capture  # noqa: F401
from toolreplay.cli import check as _check  # noqa: F401
from toolreplay.cli import contracts as _contracts  # noqa: F401
from toolreplay.cli import core as _core  # noqa: F401
from toolreplay.cli import hooks as _hooks  # noqa: F401
from toolreplay.cli import importers as _importers  # noqa: F401
from toolreplay.cli.base import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="toolreplay")
