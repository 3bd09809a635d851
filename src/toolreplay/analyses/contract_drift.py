"""A tool's contract drift in one call against another or against the lock: the two digests a
call carries (the contract fingerprint, ``tool-drift``; the contract-text digest,
``contract-text-drift``), where each is read, and the one wording of each drift."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from toolreplay.analyses.calltable import CallTable
from toolreplay.analyses.judging import ToolBehaviour
from toolreplay.canonical import canonical
from toolreplay.contracts.text import text_drift_message
from toolreplay.escape import quote
from toolreplay.kinds import CONTRACT_TEXT_DRIFT, TOOL_DRIFT
from toolreplay.transcript import Record


def fingerprint_message(
    tool: str, recorded: str, other: str, *, side: str = "", against: str = "the lock", explain: str = ""
) -> str:
    """The one wording of a ``tool-drift`` between two fingerprints, whichever check found it.

    ``side`` says where the call was recorded ("in the run", "in the baseline (index 3)"),
    ``against`` what holds the other fingerprint; ``explain`` is what changed, as
    ``fingerprint-diff`` words it, when the tool source is known.
    """
    where = f" {side}" if side else ""
    text = f"tool {quote(tool)} was called with fingerprint {recorded}{where}; {against} has {other}"
    return text + (f"; {explain}" if explain else "")


@dataclass(frozen=True)
class Digest:
    """A digest a call carries and a lock may hold (the fingerprint, the contract-text digest):
    the finding its drift is, where to read it, and how that drift is worded."""

    kind: str
    #: the digest of a call ("" or None: not recorded)
    of: Callable[[Record], str | None]
    #: the digest the lock holds for a tool (empty: none)
    locked: Callable[[ToolBehaviour], str | None]
    #: the baseline's first call of a tool that recorded the digest
    first: Callable[[CallTable], Mapping[str, Record]]
    #: the message when a baseline call and a run call differ: (tool, baseline call, run call, why)
    between: Callable[[str, Record, Record, str], str]
    #: the message when a call is not the lock's: (tool, its digest, the baseline call or None for
    #: the run's, what the lock declares, why)
    off_lock: Callable[[str, str, Record | None, ToolBehaviour, str], str]


def _fingerprint_off_lock(tool: str, digest: str, b: Record | None, declared: ToolBehaviour, why: str) -> str:
    side = "in the run" if b is None else f"in the baseline (index {b.index})"
    shown = _with_version(declared.fingerprint or "", declared.version)
    return fingerprint_message(tool, digest, shown, side=side, explain=why)


def _text_off_lock(tool: str, digest: str, b: Record | None, declared: ToolBehaviour, why: str) -> str:
    where = "in the run" if b is None else f"baseline index {b.index}"
    return _text_message(tool, digest, declared.text_digest or "", where=where, against="the lock", why=why)


#: the digests held to each other and to the lock, in the order their findings are added
DIGESTS = (
    Digest(
        kind=TOOL_DRIFT,
        of=lambda record: record.fingerprint,
        locked=lambda declared: declared.fingerprint,
        first=lambda table: table.recorded,
        between=lambda tool, b, r, why: fingerprint_message(
            tool,
            r.fingerprint or "",
            b.fingerprint or "",
            side="in the run",
            against=f"the baseline (index {b.index})",
            explain=why,
        ),
        off_lock=_fingerprint_off_lock,
    ),
    Digest(
        kind=CONTRACT_TEXT_DRIFT,
        of=lambda record: record.text_digest,
        locked=lambda declared: declared.text_digest,
        first=lambda table: table.described,
        between=lambda tool, b, r, why: _text_message(
            tool,
            b.text_digest or "",
            r.text_digest or "",
            where=f"baseline index {b.index}",
            against="the run",
            why=why,
        ),
        off_lock=_text_off_lock,
    ),
)


def digest_drift(
    digest: Digest,
    b: Record | None,
    r: Record,
    declared: ToolBehaviour | None,
    explain: Mapping[str, str],
    lock_checks_runs: bool,
) -> str | None:
    """The drift message of a run call's ``digest`` (and of the baseline call it aligns with, if
    any): a baseline that differs from the run first, then a baseline or a run that is not the lock's."""
    why = explain.get(r.tool, "")
    ours, theirs = digest.of(r), digest.of(b) if b is not None else None
    locked = digest.locked(declared) if declared is not None else None
    if b is not None and _differ(theirs, ours):
        if not lock_checks_runs and _differ(ours, locked):
            return None  # the run's own check against the lock reports this call
        return digest.between(r.tool, b, r, why)
    if declared is None or not locked:
        return None
    return _off_lock(digest, r.tool, (theirs, b), ours if lock_checks_runs else None, declared, why)


def _differ(one: str | None, other: str | None) -> bool:
    """Both digests were recorded (are not "" or None), and they differ."""
    return bool(one and other and one != other)


def _off_lock(
    digest: Digest,
    tool: str,
    baseline: tuple[str | None, Record | None],
    ours: str | None,
    declared: ToolBehaviour,
    why: str,
) -> str | None:
    """The message of a baseline call (first) or a run call whose digest is not the lock's."""
    locked = digest.locked(declared)
    theirs, b = baseline
    if theirs and theirs != locked:
        return digest.off_lock(tool, theirs, b, declared, why)
    if ours and ours != locked:
        return digest.off_lock(tool, ours, None, declared, why)
    return None


def _text_message(tool: str, recorded: str, other: str, *, where: str, against: str, why: str) -> str:
    """A contract-text-drift message, with what changed when the tool source says."""
    return text_drift_message(
        tool, recorded, other, where=where, against=against, differences=(why,) if why else ()
    )


def _with_version(fingerprint: str, version: str | None) -> str:
    """A locked fingerprint, with its contract's version when it has one."""
    return f"{fingerprint} (version {canonical(version)})" if version else fingerprint
