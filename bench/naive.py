"""The naive reference: stdlib json + hashlib, record by record, no strictness.

What a careful user would write in an afternoon. The benchmark compares toolreplay's
throughput with these (and with hashing the same bytes, the floor)."""

from __future__ import annotations

import hashlib
import json
import sys


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def seal(path: str, out_path: str) -> str:
    prev = "0" * 64
    with open(path, "rb") as src, open(out_path, "w", encoding="ascii") as out:
        for line in src:
            if not line.strip():
                continue
            link = json.loads(line)
            link["prev"] = prev
            digest = hashlib.sha256(dumps(link).encode()).hexdigest()
            link["digest"] = digest
            out.write(dumps(link) + "\n")
            prev = digest
    return prev


def verify(path: str) -> str:
    prev = "0" * 64
    with open(path, "rb") as src:
        for line in src:
            link = json.loads(line)
            digest = link.pop("digest")
            if link["prev"] != prev or hashlib.sha256(dumps(link).encode()).hexdigest() != digest:
                raise SystemExit("broken")
            prev = digest
    return prev


def replay(path: str) -> int:
    first: dict[str, str] = {}
    findings = 0
    with open(path, "rb") as src:
        for line in src:
            record = json.loads(line)
            key = dumps({"tool": record["tool"], "args": record["args"]})
            response = dumps(record["response"])
            if first.setdefault(key, response) != response:
                findings += 1
    return findings


def sha_floor(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":
    op, *args = sys.argv[1:]
    print({"seal": seal, "verify": verify, "replay": replay, "sha": sha_floor}[op](*args))
