"""Contract-text drift: what changed in the text an agent reads about a tool (docs/contracts.md).

Three classes, beside ``fingerprint_diff``'s signature/schema/version:

* ``description``: the title, the description, or a parameter's description (the latter
  inside the input schema, whose ``description`` and ``title`` keywords land here);
* ``annotations``: a behaviour hint (``readOnlyHint``, ``destructiveHint``,
  ``idempotentHint``, ``openWorldHint``) changed, appeared or went; one that weakens safety
  says so;
* ``output-schema``: the output schema, pointer by pointer.

Text is shown quoted and escaped (:func:`toolreplay.escape.quote`), the changed words marked
``[-removed-]`` on the old side and ``{+added+}`` on the new, and long text shortened around
the change with ``...``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from toolreplay.analyses.difference import ABSENT
from toolreplay.escape import quote

#: the text classes, in the order they are listed within one tool
TEXT_CLASSES = ("description", "annotations", "output-schema")
#: a text longer than this is shortened around its changes
LONG = 160
#: words (with the spaces between them) kept on each side of a change in shortened text
CONTEXT = 8
_TOKENS = re.compile(r"^\s+|\S+\s*")
#: a hint's value that is the safe one: losing it weakens the tool's promise
SAFE_VALUE = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_WEAKENED = {
    "readOnlyHint": "the tool no longer says it is read-only",
    "destructiveHint": "the tool no longer says it is not destructive",
    "idempotentHint": "the tool no longer says it is idempotent",
    "openWorldHint": "the tool no longer says it stays in a closed world",
}


def weakens(hint: str, old: Any, new: Any) -> str:
    """Why a hint's change weakens safety ("" when it does not): the safe value lost or the hint removed."""
    if new is ABSENT and old is not ABSENT:
        return f"hint removed: {_WEAKENED.get(hint, 'MCP takes its worst-case default')}"
    if hint in SAFE_VALUE and old is SAFE_VALUE[hint] and new is not SAFE_VALUE[hint]:
        return _WEAKENED[hint]
    return ""


def diff_text(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str, Any, Any]]:
    """(class, detail, pointer, old, new) for the title, description and annotation changes of two
    contract texts (absent values are ``None``). Parameter descriptions are in the input schema,
    where :func:`is_description` finds them; the output schema is the caller's to walk."""
    out: list[tuple[str, str, str, Any, Any]] = []
    for key in ("title", "description"):
        a, b = old.get(key), new.get(key)
        if a != b:
            out.append(("description", "", "/" + key, a, b))
    old_hints, new_hints = old.get("annotations", {}), new.get("annotations", {})
    for hint in sorted(set(old_hints) | set(new_hints)):
        a, b = old_hints.get(hint, ABSENT), new_hints.get(hint, ABSENT)
        if not _same_hint(a, b):
            detail = "weakens safety" if weakens(hint, a, b) else ""
            out.append(("annotations", detail, "/annotations/" + hint, _or_none(a), _or_none(b)))
    return out


def _same_hint(a: Any, b: Any) -> bool:
    """Whether a hint is there on both sides with the same value (``true`` is not ``1``)."""
    return a is not ABSENT and b is not ABSENT and a == b and type(a) is type(b)


def _or_none(value: Any) -> Any:
    return None if value is ABSENT else value


def is_description(pointer: str) -> bool:
    """Whether an input-schema pointer ends at a ``description`` or ``title`` keyword (text an
    agent reads, not a constraint). ``/properties/description`` is a property, not the keyword."""
    tokens = pointer.split("/")
    return tokens[-1] in ("description", "title") and (len(tokens) < 3 or tokens[-2] not in _NAME_MAPS)


#: keywords whose members are named by the user: a member called "description" is no keyword
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def hint_effect(pointer: str, old: Any, new: Any) -> str:
    """What a hint change means (empty when it weakens nothing)."""
    hint = pointer.rsplit("/", 1)[-1]
    return weakens(hint, ABSENT if old is None else old, ABSENT if new is None else new)


def marked(old: str, new: str) -> tuple[str, str]:
    """Both texts quoted and escaped, the removed words marked ``[-...-]`` in the old and the
    added ones ``{+...+}`` in the new, each shortened around its changes when long."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    old_parts: list[tuple[str, bool]] = []
    new_parts: list[tuple[str, bool]] = []
    for op, i1, i2, j1, j2 in _matcher(a, b).get_opcodes():
        _add_parts(op == "equal", a[i1:i2], old_parts)
        _add_parts(op == "equal", b[j1:j2], new_parts)
    return _render(old_parts, "[-", "-]"), _render(new_parts, "{+", "+}")


def _add_parts(equal: bool, tokens: list[str], parts: list[tuple[str, bool]]) -> None:
    """Add one side of an opcode's words to ``parts``: each word kept as it is, or the words
    changed as one part (none when that side has none)."""
    if equal:
        parts.extend((token, False) for token in tokens)
    elif tokens:
        parts.append(("".join(tokens), True))


def _matcher(a: list[str], b: list[str]) -> difflib.SequenceMatcher[str]:
    """Words are compared without the spaces after them: a last word is the same word."""
    return difflib.SequenceMatcher(None, [t.strip() for t in a], [t.strip() for t in b], autojunk=False)


def _render(parts: list[tuple[str, bool]], start: str, end: str) -> str:
    """The parts quoted, each change between ``start`` and ``end``, a run of parts left out as ``...``."""
    out: list[str] = []
    skipping = False
    for (text, change), kept in zip(parts, _kept(parts), strict=True):
        if kept:
            out.append(_part(text, change, start, end))
        elif not skipping:
            out.append("...")
        skipping = not kept
    return "'" + "".join(out) + "'"


def _kept(parts: list[tuple[str, bool]]) -> list[bool]:
    """Which parts a text shows: all of a short one; of a long one, those near a change (the first
    few when nothing changed)."""
    if sum(len(text) for text, _ in parts) <= LONG:
        return [True] * len(parts)
    return _kept_of_long(parts)


def _kept_of_long(parts: list[tuple[str, bool]]) -> list[bool]:
    """Which parts a long text shows: those near a change (the first few when nothing changed)."""
    changed = [i for i, (_, change) in enumerate(parts) if change]
    if not changed:
        return [i < CONTEXT for i in range(len(parts))]
    return [_near(i, changed) for i in range(len(parts))]


def _near(i: int, changed: list[int]) -> bool:
    """Whether part ``i`` is within :data:`CONTEXT` parts of a change."""
    return any(abs(i - c) <= CONTEXT for c in changed)


def _part(text: str, change: bool, start: str, end: str) -> str:
    """One part escaped; a change marked, and shortened in its middle when long."""
    body = quote(text)[1:-1]
    if not change:
        return body
    if len(body) > LONG:
        body = body[: LONG // 2] + "..." + body[-LONG // 2 :]
    return f"{start}{body}{end}"
