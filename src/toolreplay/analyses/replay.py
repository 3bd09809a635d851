"""Replay a transcript against itself: non-determinism and redundant calls (SPEC §3.1, §3.2)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from hashlib import sha256

from toolreplay.findings import Finding, quote
from toolreplay.transcript import Record

DEFAULT_MUTATORS = frozenset({"write_file", "delete_file", "create_file", "move_file", "run_command"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayResult:
    calls: int
    divergence: int | None
    findings: list[Finding]


def replay(
    records: Iterable[Record],
    *,
    mutators: frozenset[str] = DEFAULT_MUTATORS,
    state_aware: bool = False,
    nondeterministic: frozenset[str] = frozenset(),
    path: str = "",
) -> ReplayResult:
    """Find non-determinism and redundant calls in one transcript.

    Non-determinism: the first response to each distinct call is remembered; a later
    identical call with another response is reported against it. In the default
    (0.6) mode that holds even across a mutating call; with ``state_aware`` a call to
    a mutator forgets what was remembered, since the world may have changed.

    Tools in ``nondeterministic`` (a tool lock's ``deterministic: false``) are expected to
    answer differently, so their responses are not compared.

    Redundancy: a call is redundant when the call just before it is the identical
    call and that tool is not a mutator, so nothing could have changed in between.
    """
    # Remember SHA-256 digests, not texts: memory then grows with the number of distinct
    # calls by a few dozen bytes each, whatever the size of the responses.
    first: dict[bytes, tuple[int, bytes]] = {}
    findings: list[Finding] = []
    divergence: int | None = None
    previous_key: bytes | None = None
    previous_index = -1
    calls = 0
    for record in records:
        calls += 1
        key = sha256(record.call_key.encode("ascii")).digest()
        response = sha256(record.canon_response.encode("ascii")).digest()
        mutator = record.tool in mutators
        if key == previous_key and not mutator:
            findings.append(
                Finding(
                    kind="redundant-call",
                    index=record.index,
                    tool=record.tool,
                    related=previous_index,
                    path=path,
                    line=record.line,
                    message=(
                        f"tool {quote(record.tool)} repeats the identical call at index "
                        f"{previous_index} with no state change between them"
                    ),
                )
            )
        seen = first.get(key)
        if seen is None:
            first[key] = (record.index, response)
        elif seen[1] != response and record.tool not in nondeterministic:
            if divergence is None:
                divergence = record.index
            findings.append(
                Finding(
                    kind="non-determinism",
                    index=record.index,
                    tool=record.tool,
                    related=seen[0],
                    path=path,
                    line=record.line,
                    message=(
                        f"tool {quote(record.tool)} returned a different response than the "
                        f"identical call at index {seen[0]}"
                    ),
                )
            )
        if mutator and state_aware:
            first.clear()
        previous_key, previous_index = key, record.index
    return ReplayResult(calls=calls, divergence=divergence, findings=findings)
