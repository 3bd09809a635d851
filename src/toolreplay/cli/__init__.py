"""The ``toolreplay`` command line: parse options, call the core, map outcomes to exit codes.

The group and its error boundary are :mod:`toolreplay.cli.base`. Start-up is paid by every
pre-commit hook and CI step, so a command's module (and what it needs: jsonschema, PyGithub,
the MCP SDK ...) is imported only when that command runs, or when ``--help`` lists them all
(``toolreplay.cli.base.COMMANDS``).
"""

from __future__ import annotations

import gc

from toolreplay.cli.base import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="toolreplay")
    finally:
        # The process ends here. The interpreter's collections at exit would walk every object
        # start-up made (modules, click's, ours) only to find it alive: ~4 ms, a tenth of a small
        # command's run. Frozen, they are skipped; files are closed and stdout flushed either way.
        gc.freeze()
