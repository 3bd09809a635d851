"""What a person declared in a tool lock, kept when the lock is written again (docs/spec.md §1.5).

``record --lock L --force`` and ``fingerprint -o L --force`` write a lock over an existing one.
The contracts come from the tool source; the behaviour flags (``deterministic``, ``mutates``,
``idempotent``) and the ``note`` are what someone declared, often by editing the lock by hand (a tool whose
answers carry the time is ``deterministic: false``). For every tool the old lock names, its
flags win over what the source says now, and each flag kept that differs from the source's is
said, with the tool named again when its contract changed (the declaration may no longer hold).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from toolreplay.contracts.lock import ToolContract, ToolLock, load_lock
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote

#: the fields of a contract a person declares: everything in it but what the source fingerprints
DECLARED = ("deterministic", "mutates", "idempotent", "note")


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """A tool's declared fields taken from the old lock where they differ from what the source says."""

    tool: str
    #: (field, the value kept) in :data:`DECLARED` order
    fields: tuple[tuple[str, bool | str], ...]
    #: the contract's fingerprint changed: the declaration was made for another contract
    was: str | None = None
    now: str | None = None

    def text(self, lock: str) -> str:
        """One line for stderr, naming the lock, the tool and each field kept."""
        shown = ", ".join(f"{name} {_shown(value)}" for name, value in self.fields)
        if self.was is None:
            return f"{one_line(lock)}: kept what it declared for tool {quote(self.tool)}: {shown}"
        return (
            f"{one_line(lock)}: kept what it declared for tool {quote(self.tool)}, whose contract changed"
            f" ({self.was} -> {self.now}): {shown}; check that it still holds"
        )


def _shown(value: bool | str) -> str:
    """A kept value as the lock spells it: ``false``, or a note quoted on one line."""
    return quote(value) if isinstance(value, str) else str(value).lower()


def previous_lock(path: str) -> tuple[ToolLock | None, str]:
    """The lock already at ``path`` (None when there is none), and a warning when it cannot be read
    (a lock about to be replaced need not be valid, but what it declared is then not kept)."""
    if not os.path.isfile(os.path.realpath(path)):
        return None, ""
    try:
        return load_lock(path), ""
    except InputError as err:
        return None, f"{err}; what it declared is not kept"


def keep_declared(old: ToolLock | None, new: ToolLock) -> tuple[ToolLock, tuple[Kept, ...]]:
    """``new`` with the declared fields of every tool ``old`` names taken from ``old``; and what
    was kept where the two differ, in tool order."""
    if old is None:
        return new, ()
    contracts: list[ToolContract] = []
    kept: list[Kept] = []
    for name, contract in new.tools.items():
        before = old.tools.get(name)
        differ = _declared_differences(before, contract) if before is not None else ()
        if before is not None and differ:
            kept.append(_kept(before, contract, differ))
            contract = dataclasses.replace(contract, **dict(differ))
        contracts.append(contract)
    return ToolLock.of(contracts), tuple(kept)


def _declared_differences(before: ToolContract, contract: ToolContract) -> tuple[tuple[str, Any], ...]:
    """The declared fields whose value in ``before`` is not the one in ``contract``, with it."""
    return tuple(
        (field, getattr(before, field))
        for field in DECLARED
        if getattr(before, field) != getattr(contract, field)
    )


def _kept(before: ToolContract, contract: ToolContract, differ: tuple[tuple[str, Any], ...]) -> Kept:
    """What was kept of a tool, with both fingerprints when its contract changed too."""
    changed = before.fingerprint != contract.fingerprint
    return Kept(
        tool=contract.name,
        fields=differ,
        was=before.fingerprint if changed else None,
        now=contract.fingerprint if changed else None,
    )


def refreshed_lock(path: str, listed: ToolLock) -> tuple[ToolLock, tuple[Kept, ...]]:
    """The lock at ``path`` (none yet: an empty one) with the contracts of the ``listed`` tools,
    what it declared of them kept, and its other tools as they were; and what was kept."""
    old = load_lock(path) if os.path.isfile(path) else ToolLock.of([])
    lock, kept = keep_declared(old if old.tools else None, listed)
    others = [c for name, c in old.tools.items() if name not in lock.tools]
    return ToolLock.of([*lock.tools.values(), *others]), kept
