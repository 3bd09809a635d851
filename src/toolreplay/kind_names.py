"""The finding kinds by name: the order a report lists them in, the advisory ones, the ones that
stand for another, and whether a kind fails the build under a ``fail_on`` list.

In a module of its own, with no dataclass to build at import: the findings (which every
report loads) and the configuration's ``fail_on`` (which the drift-note hook reads from a
staged configuration) take these names from here; what each kind means to the outside world
is :mod:`toolreplay.kinds`.
"""

from __future__ import annotations

from collections.abc import Collection

#: Kinds in the order a report lists them when several share an index.
KIND_ORDER: tuple[str, ...] = (
    "chain-broken",
    "anchor-mismatch",
    "signature-invalid",
    "missing-drift-note",
    "invalid-drift-note",
    "drift-note-unchecked",
    "stale-baseline",
    "permission-overreach",
    "argument-overreach",
    "scope-unjudged",
    "agent-drift",
    "tool-drift",
    "contract-text-drift",
    "schema-break",
    "tools-source-failed",
    "behavior-drift",
    "effect-drift",
    "silent-drift",
    "unavailable",
    "audit-incomplete",
    "non-determinism",
    "redundant-call",
    "drift-guard-changed",
    "unguarded-sealed-file",
)

#: Kinds that only inform (the drift-note guard's warnings): they fail the build only
#: when ``fail_on`` names them, never under the default "every kind fails".
ADVISORY_KINDS: frozenset[str] = frozenset({"drift-guard-changed", "unguarded-sealed-file"})


#: kinds that stand for a finding of another kind the analysis could not rule out: they fail
#: whenever that kind fails, so spending a time budget cannot turn a failing finding into a
#: passing one under a ``fail_on`` written before the standing-in kind existed
STANDS_FOR = {"scope-unjudged": "argument-overreach", "tools-source-failed": "tool-drift"}


def kind_fails(kind: str, fail_on: Collection[str] | None) -> bool:
    """Whether a finding of ``kind`` fails the build under ``fail_on`` (None: the default).

    The one rule behind the config's ``fail_on``, the Action's ``fail-on`` and ``merge``:
    by default every kind fails but the advisory ones; a list fails exactly what it names.
    """
    if fail_on is None:
        return kind not in ADVISORY_KINDS
    # a kind that may hide another (an unjudged call may be an overreach) fails with it
    return kind in fail_on or STANDS_FOR.get(kind) in fail_on
