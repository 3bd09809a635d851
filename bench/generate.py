"""Generate a large transcript of realistic ~1 KB records (nested args and responses,
some non-ASCII text and floats), deterministically from a seed."""

from __future__ import annotations

import argparse
import json
import random

WORDS = ["search", "file", "docs", "install", "config", "café", "naïve", "日本語", "résumé", "Straße", "data"]
TOOLS = ["read_file", "search", "list_dir", "write_file", "http_get", "query_db"]


def record(rng: random.Random, index: int) -> dict[str, object]:
    tool = rng.choice(TOOLS)
    args = {
        "path": "/".join(rng.choice(WORDS) for _ in range(3)),
        "options": {
            "limit": rng.randint(1, 50),
            "threshold": round(rng.random(), 6),
            "tags": rng.sample(WORDS, 3),
        },
    }
    hits = [
        {
            "path": f"docs/{rng.choice(WORDS)}/{rng.randint(0, 999)}.md",
            "score": rng.random(),
            "snippet": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))),
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
    ns = parser.parse_args()
    rng = random.Random(ns.seed)
    target = ns.megabytes * 1024 * 1024
    written = index = 0
    with open(ns.output, "w", encoding="utf-8") as out:
        while written < target:
            line = json.dumps(record(rng, index), ensure_ascii=False) + "\n"
            out.write(line)
            written += len(line.encode("utf-8"))
            index += 1
    print(f"wrote {index} records, {written / 1e6:.1f} MB to {ns.output}")


if __name__ == "__main__":
    main()
