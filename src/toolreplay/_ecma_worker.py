"""The worker of ``toolreplay.ecma.BoundedSearch``: ECMA-262 searches, one per line.

Run by path (``python -I _ecma_worker.py``) so that it starts fast and imports only regress.
Each request is a JSON array ``[pattern, text, seconds]`` on one line; each answer is one
line: ``1`` (a match) or ``0`` (none) followed by the CPU seconds the search took, or ``E``
and a reason. The parent kills this process when an answer takes too long.

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

import regress

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: the parent's kill is the only bound
    resource = None  # type: ignore[assignment]


def _cap_cpu(seconds: float) -> None:
    """End this process (SIGXCPU) once it has used ``seconds`` more CPU time, and a margin."""
    if resource is None:  # pragma: no cover
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def main() -> None:
    compiled: dict[str, regress.Regex] = {}
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            pattern, text, seconds = json.loads(line)
            regex = compiled.get(pattern)
            if regex is None:
                regex = compiled[pattern] = regress.Regex(pattern, flags="u")
            _cap_cpu(float(seconds))
            start = time.thread_time()
            found = regex.find(text) is not None
            answer = b"%d %.9f" % (found, time.thread_time() - start)
        except BaseException as err:  # a panic in the engine is a BaseException
            answer = b"E" + " ".join(str(err).split()).encode("utf-8", "replace")
        out.write(answer + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
