"""The process pool the parallel paths (:mod:`toolreplay.parallel`) run on: how its workers
start, and the allocator setting they inherit.

A module of its own, imported only when a large file starts a pool: multiprocessing,
concurrent.futures and ctypes are a start-up cost the usual run (a small file) need not pay.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import sys
import threading
from concurrent.futures import ProcessPoolExecutor


def start_method() -> str:
    """How worker processes start: a forked worker starts in milliseconds with everything
    imported, a spawned one imports toolreplay again (a tenth of a second per worker, on a
    run that may take half a second). Fork only where it is safe: Linux, and no other
    thread whose locks the child would copy."""
    return "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"


def reuse_freed_memory() -> None:
    """Ask glibc's allocator to keep the memory a range's buffers free for the next range.

    Each range makes a few buffers of some MiB (the bytes read, the lines, the texts sent
    back). By default glibc maps each such block on its own and unmaps it when freed, so
    every range faults fresh pages in again: up to a fifth of a worker's time on a virtual
    machine, where a page fault is dear. Served from the heap, and the heap not trimmed
    below 64 MiB, the pages are reused: the peak memory stays what it was. Set once, before
    the workers fork, which inherit it; a no-op where the C library has no ``mallopt``.

    It holds for the rest of the process: a program calling toolreplay as a library keeps
    up to 64 MiB of freed heap that glibc would have handed back. (glibc raises its own
    thresholds the same way once a large block is freed, to that block's size; this
    process benefits too: 15,000 page faults to seal 100 MB where it took 41,000.)"""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc (macOS, Windows, musl without it)
        return
    mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)  # glibc's largest allowed value
    mallopt(_M_TRIM_THRESHOLD, 64 * 1024 * 1024)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes, started as :func:`start_method` says (on Linux with
    :func:`reuse_freed_memory` set first, which the workers inherit)."""
    if sys.platform == "linux":
        reuse_freed_memory()
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(start_method()))
