"""Imports at start-up, with the cyclic collector out of their way (the standard library only)."""

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
