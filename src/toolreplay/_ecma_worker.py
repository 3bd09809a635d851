"""The worker of ``toolreplay.ecma.BoundedSearch``: ECMA-262 searches, one per line.

Run by path (``python -I _ecma_worker.py``) so that it starts fast and imports only regress.
Each request is a JSON array ``[pattern, text]`` on one line; each answer is one line:
``1`` (a match) or ``0`` (none) followed by the CPU seconds the search took, or ``E`` and a
reason. The parent kills this process when an answer takes too long.
"""

from __future__ import annotations

import json
import sys
import time

import regress


def main() -> None:
    compiled: dict[str, regress.Regex] = {}
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            pattern, text = json.loads(line)
            regex = compiled.get(pattern)
            if regex is None:
                regex = compiled[pattern] = regress.Regex(pattern, flags="u")
            start = time.thread_time()
            found = regex.find(text) is not None
            answer = b"%d %.9f" % (found, time.thread_time() - start)
        except BaseException as err:  # a panic in the engine is a BaseException
            answer = b"E" + " ".join(str(err).split()).encode("utf-8", "replace")
        out.write(answer + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
