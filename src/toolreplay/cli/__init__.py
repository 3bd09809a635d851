"""The ``toolreplay`` command line: parse options, call the core, map outcomes to exit codes.

The group and its error boundary are :mod:`toolreplay.cli.base`. Start-up is paid by every
pre-commit hook and CI step, so a command's module (and what it needs: jsonschema, PyGithub,
the MCP SDK ...) is imported only when that command runs, or when ``--help`` lists them all
(``toolreplay.cli.base.COMMANDS``), and imports run under :func:`loading`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loading() -> Iterator[None]:
    """Import with the cyclic collector off, then freeze what was imported out of its way.

    Start-up is mostly imports: thousands of objects (modules, functions, click's parameters)
    that live as long as the process. The collector would walk them again and again while
    they load, and again at exit, only to find them alive: about a tenth of a small command's
    run. Frozen (``gc.freeze``), they are never walked again; what a command makes afterwards
    is collected as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


with loading():
    from toolreplay.cli.base import cli

__all__ = ["cli", "loading", "main"]


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="toolreplay")
