"""Generate a large transcript of ~1.2 KB tool-call records, deterministically from a seed.

Three mixes (``--mix``), for figures that do not flatter one kind of data:

* ``ascii``: paths, identifiers and English; numbers as scores, sizes and timestamps carry
  them (doubles with 15-17 significant digits, integers up to 2**40).
* ``realistic`` (the default): the same, plus what real agent traffic holds: one record in
  five with non-ASCII text (accents, CJK, emoji beyond the BMP), half the lines written
  with raw UTF-8 and half with ``\\u`` escapes (different recorders do either), 15 % of
  calls repeating an earlier call (a tenth of those with another response), one record in
  fifty nested 20-40 levels deep, one in a hundred with a 4-16 KB string (a file's text),
  and 60 tools.
* ``non-ascii-heavy``: as ``realistic``, with four records in five carrying non-ASCII text.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

ASCII_WORDS = ["search", "file", "docs", "install", "config", "cache", "index", "query", "result", "data"]
OTHER_WORDS = [
    "café",
    "naïve",
    "日本語",
    "résumé",
    "Straße",
    "Ελληνικά",
    "данные",
    "😀",
    "🚀",
    "中文字符",
    "한국어",
]
TOOLS = [
    f"{verb}_{noun}" for verb in ("read", "write", "list", "search", "get", "query") for noun in "abcdefghij"
]
MIXES = {"ascii": 0.0, "realistic": 0.2, "non-ascii-heavy": 0.8}


def _nested(rng: random.Random, depth: int) -> Any:
    value: Any = {"leaf": rng.random(), "id": rng.randint(0, 2**40)}
    for level in range(depth - 1):
        value = {"level": level, "child": value} if level % 2 else [value, rng.randint(0, 9)]
    return value


def record(rng: random.Random, index: int, non_ascii: float, *, varied: bool) -> dict[str, Any]:
    """One fresh call: a tool, its arguments and a response."""
    words = ASCII_WORDS + OTHER_WORDS if rng.random() < non_ascii else ASCII_WORDS
    args: dict[str, Any] = {
        "path": "/".join(rng.choice(words) for _ in range(3)),
        "options": {
            "limit": rng.randint(1, 50),
            "threshold": rng.random(),
            "tags": rng.sample(words, 3),
        },
    }
    hits = [
        {
            "path": f"docs/{rng.choice(words)}/{rng.randint(0, 999)}.md",
            "score": rng.random(),
            "probability": rng.random() * 10 ** rng.randint(-3, 0),
            "snippet": " ".join(rng.choice(words) for _ in range(rng.randint(8, 14))),
            "meta": {
                "size": rng.randint(0, 2**40),
                "mtime": 1.7e9 + rng.random() * 1e7,
                "ok": rng.random() > 0.1,
                "etag": None,
            },
        }
        for _ in range(rng.randint(3, 5))
    ]
    response: dict[str, Any] = {"hits": hits, "took_ms": rng.random() * 100}
    if varied and rng.random() < 0.02:
        response["tree"] = _nested(rng, rng.randint(20, 40))
    if varied and rng.random() < 0.01:
        response["content"] = " ".join(rng.choice(words) for _ in range(rng.randint(600, 2400)))
    return {"index": index, "tool": rng.choice(TOOLS), "args": args, "response": response}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--mix", choices=sorted(MIXES), default="realistic")
    ns = parser.parse_args()
    rng = random.Random(ns.seed)
    share = MIXES[ns.mix]
    varied = ns.mix != "ascii"
    target = ns.megabytes * 1024 * 1024
    written = index = 0
    earlier: list[dict[str, Any]] = []
    with open(ns.output, "w", encoding="utf-8") as out:
        while written < target:
            if varied and earlier and rng.random() < 0.15:
                again = dict(rng.choice(earlier), index=index)  # the same call, asked again
                if rng.random() < 0.1:
                    again["response"] = {**again["response"], "took_ms": rng.random() * 100}
                value = again
            else:
                value = record(rng, index, share, varied=varied)
                if len(earlier) < 1000:
                    earlier.append(value)
                else:
                    earlier[rng.randrange(1000)] = value
            raw = varied and rng.random() < 0.5
            line = json.dumps(value, ensure_ascii=not raw) + "\n"
            out.write(line)
            written += len(line.encode("utf-8"))
            index += 1
    print(f"wrote {index} records ({ns.mix}), {written / 1e6:.1f} MB to {ns.output}")


if __name__ == "__main__":
    main()
