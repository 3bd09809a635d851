"""Generate a large transcript of realistic ~1 KB records (nested args and responses,
some non-ASCII text and floats), deterministically from a seed.

About one record in five carries non-ASCII text (``--non-ascii`` sets the share): tool
traffic is mostly paths, identifiers and English, with some prose in other languages.
"""

from __future__ import annotations

import argparse
import json
import random

ASCII_WORDS = ["search", "file", "docs", "install", "config", "cache", "index", "query", "result", "data"]
WORDS = [*ASCII_WORDS, "café", "naïve", "日本語", "résumé", "Straße"]
TOOLS = ["read_file", "search", "list_dir", "write_file", "http_get", "query_db"]


def record(rng: random.Random, index: int, non_ascii: float = 0.2) -> dict[str, object]:
    words = WORDS if rng.random() < non_ascii else ASCII_WORDS
    tool = rng.choice(TOOLS)
    args = {
        "path": "/".join(rng.choice(words) for _ in range(3)),
        "options": {
            "limit": rng.randint(1, 50),
            "threshold": round(rng.random(), 6),
            "tags": rng.sample(words, 3),
        },
    }
    hits = [
        {
            "path": f"docs/{rng.choice(words)}/{rng.randint(0, 999)}.md",
            "score": rng.random(),
            "snippet": " ".join(rng.choice(words) for _ in range(rng.randint(8, 14))),
            "meta": {
                "size": rng.randint(10, 10**6),
                "mtime": 1.7e9 + rng.random() * 1e7,
                "ok": rng.random() > 0.1,
            },
        }
        for _ in range(rng.randint(3, 5))
    ]
    return {
        "index": index,
        "tool": tool,
        "args": args,
        "response": {"hits": hits, "took_ms": rng.random() * 100},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--non-ascii", type=float, default=0.2, help="share of records with non-ASCII text")
    ns = parser.parse_args()
    rng = random.Random(ns.seed)
    target = ns.megabytes * 1024 * 1024
    written = index = 0
    with open(ns.output, "w", encoding="utf-8") as out:
        while written < target:
            line = json.dumps(record(rng, index, ns.non_ascii), ensure_ascii=False) + "\n"
            out.write(line)
            written += len(line.encode("utf-8"))
            index += 1
    print(f"wrote {index} records, {written / 1e6:.1f} MB to {ns.output}")


if __name__ == "__main__":
    main()
