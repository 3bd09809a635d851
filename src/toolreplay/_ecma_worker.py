"""The worker of ``toolreplay.ecma.BoundedSearch``: ECMA-262 searches, one per line.

Run by path (``python -I _ecma_worker.py``) so that it starts fast and imports only regress.
Each request is one line of JSON, of one of two kinds:

- ``[pattern, text, seconds]``, a search: one answer, ``1`` (a match) or ``0`` (none)
  followed by the CPU seconds the search took;
- ``{"cut": [[pattern, text], ...], "seconds": seconds}``, the matches of many values read
  at once: one answer per value, in order, each the CPU seconds it took and the UTF-8 byte
  ranges of its matches (``0.000012 3 7 12 16``), written as soon as that value is done.

An answer that could not be computed is ``E`` and a reason. The parent kills this process
when an answer takes too long.

A parent that dies mid-search (killed, or a cancelled CI step) cannot kill it, and the
engine holds the interpreter's lock, so no thread here could notice. So each search runs
under a CPU-time limit a second or two past ``seconds`` (``RLIMIT_CPU``): past it the
kernel ends this process, and an orphan never spins for the minutes or hours a
catastrophic pattern would take.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import regress

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: the parent's kill is the only bound
    resource = None  # type: ignore[assignment]


#: the CPU limit last set (soft, hard): set again only when it moves (a batch asks for it per value)
_CAP: list[int] = []


def _cap_cpu(seconds: float) -> None:
    """End this process (SIGXCPU) once it has used ``seconds`` more CPU time, and a margin."""
    if resource is None:  # pragma: no cover
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1
    if not _CAP:
        _CAP[:] = [-1, resource.getrlimit(resource.RLIMIT_CPU)[1]]
    hard = _CAP[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    if soft != _CAP[0]:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        _CAP[0] = soft


_COMPILED: dict[str, regress.Regex] = {}


def _regex(pattern: str) -> regress.Regex:
    regex = _COMPILED.get(pattern)
    if regex is None:
        regex = _COMPILED[pattern] = regress.Regex(pattern, flags="u")
    return regex


def _search(pattern: str, text: str, seconds: float) -> bytes:
    regex = _regex(pattern)
    _cap_cpu(seconds)
    start = time.thread_time()
    found = regex.find(text) is not None
    return b"%d %.9f" % (found, time.thread_time() - start)


def _cut(pattern: str, text: str, seconds: float) -> bytes:
    regex = _regex(pattern)
    _cap_cpu(seconds)
    start = time.thread_time()
    matches = regex.find_iter(text) or ()
    took = time.thread_time() - start
    spans = [b"%d %d" % (found.start, found.stop) for found in (match.range() for match in matches)]
    return b" ".join([b"%.9f" % took, *spans])


def _error(err: BaseException) -> bytes:
    return b"E" + " ".join(str(err).split()).encode("utf-8", "replace")


def _answer(step: Callable[..., bytes], *args: Any) -> bytes:
    try:
        return step(*args)
    except BaseException as err:  # a panic in the engine is a BaseException
        return _error(err)


def _answers(line: bytes) -> Iterator[bytes]:
    """The answers to one request line, each as soon as it is ready."""
    asked = json.loads(line)
    if isinstance(asked, dict):
        seconds = float(asked["seconds"])
        for pattern, text in asked["cut"]:
            yield _answer(_cut, pattern, text, seconds)
    else:
        pattern, text, seconds = asked
        yield _answer(_search, pattern, text, float(seconds))


def main() -> None:
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            for answer in _answers(line):
                out.write(answer + b"\n")
                out.flush()  # the parent times each value from the answer before it
        except Exception as err:  # a line that is no request: one error answer
            out.write(_error(err) + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
