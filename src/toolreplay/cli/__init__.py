"""The ``toolreplay`` command line: parse options, call the core, map outcomes to exit codes.

The group and its error boundary are :mod:`toolreplay.cli.group`. Start-up is paid by every
pre-commit hook and CI step, so a command's module (and what it needs: jsonschema, PyGithub,
the MCP SDK ...) is imported only when that command runs, or when ``--help`` lists them all
(``toolreplay.cli.group.COMMANDS``), and imports run under :func:`loading`.
"""

from __future__ import annotations

from toolreplay.cli.loading import loading

with loading():
    from toolreplay.cli.group import cli

__all__ = ["cli", "loading", "main"]


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="toolreplay")
