"""The contract text of a tool: what an agent reads about it, beside what the fingerprint hashes.

The seed fingerprint (:mod:`toolreplay.contracts.fingerprint`) covers the signature, the input
schema and the version, and stays the seeds' formula. But a tool's description is part of the
agent's prompt: a server that rewrites it after it was approved (tool poisoning, the "rug pull")
changes what the agent does without changing what a caller may send. So a lock keeps, beside
the fingerprint, the text an agent reads::

    {"title": T, "description": D, "params": {NAME: DESCRIPTION},
     "annotations": {"readOnlyHint": B, ...}, "output_schema": SCHEMA}

each member only when the tool has it, and its digest::

    text_digest = sha256_hex(canonical(text))

A transcript record may carry the digest (``text_digest``) of the tool it called, so a
rewritten description is told from the recorded one without the text itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from toolreplay.canonical import canonical
from toolreplay.escape import one_line, quote
from toolreplay.locate import pointer_token

#: MCP's behaviour hints, the annotations that are contract text
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
#: the members of a contract text, in the order differences are listed
MEMBERS = ("title", "description", "params", "annotations", "output_schema")
#: the digest of a contract text: 64 lowercase hex digits
DIGEST_LENGTH = 64


def contract_text(
    *,
    title: Any = None,
    description: Any = None,
    schema: Any = None,
    annotations: Any = None,
    output_schema: Any = None,
) -> dict[str, Any]:
    """The contract text of a tool from the parts of its definition (each may be absent: None).

    ``params`` holds the ``description`` of each top-level property of the input schema that
    has a string one; ``annotations`` the four behaviour hints the tool states (any JSON value,
    kept as stated: a hint that is not a boolean is text that changed too).
    """
    text: dict[str, Any] = {}
    if isinstance(title, str):
        text["title"] = title
    if isinstance(description, str):
        text["description"] = description
    params = _parameter_descriptions(schema)
    if params:
        text["params"] = params
    hints = _stated_hints(annotations)
    if hints:
        text["annotations"] = hints
    if output_schema is not None:
        text["output_schema"] = output_schema
    return text


def _parameter_descriptions(schema: Any) -> dict[str, str]:
    """The string ``description`` of each top-level property of an input schema that has one."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {
        name: prop["description"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and isinstance(prop.get("description"), str)
    }


def _stated_hints(annotations: Any) -> dict[str, Any]:
    """The behaviour hints among a tool's annotations that it states (not null)."""
    if not isinstance(annotations, dict):
        return {}
    return {key: annotations[key] for key in HINTS if annotations.get(key) is not None}


def text_of_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """The contract text of an MCP ``tools/list`` tool object (the MCP shape's field names)."""
    annotations = tool.get("annotations")
    title = tool.get("title")
    if title is None and isinstance(annotations, dict):
        title = annotations.get("title")  # the 2025-03-26 revision put it among the annotations
    return contract_text(
        title=title,
        description=tool.get("description"),
        schema=tool.get("inputSchema"),
        annotations=annotations,
        output_schema=tool.get("outputSchema"),
    )


def text_digest(text: dict[str, Any]) -> str:
    """The digest of a contract text: SHA-256 of its canonical JSON, 64 hex digits."""
    return hashlib.sha256(canonical(text).encode("ascii")).hexdigest()


def text_problem(text: Any) -> tuple[str, str] | None:
    """(problem, pointer) for a lock's ``text`` that is not a contract text; None when it is one."""
    if not isinstance(text, dict):
        return "a contract text must be a JSON object", ""
    for problem_of in (_members_problem, _params_problem, _hints_problem):
        problem = problem_of(text)
        if problem is not None:
            return problem
    return None


def _members_problem(text: dict[str, Any]) -> tuple[str, str] | None:
    """An unknown member, or a title or description that is not a string."""
    unknown = sorted(set(text) - set(MEMBERS))
    if unknown:
        return f"unknown field {json.dumps(unknown[0])}", "/" + pointer_token(unknown[0])
    for key in ("title", "description"):
        if key in text and not isinstance(text[key], str):
            return f'field "{key}" must be a string', "/" + key
    return None


def _params_problem(text: dict[str, Any]) -> tuple[str, str] | None:
    """``params`` that is not an object of strings."""
    params = text.get("params", {})
    if not isinstance(params, dict):
        return 'field "params" must be an object of strings', "/params"
    for name, value in params.items():
        if not isinstance(value, str):
            return "a parameter description must be a string", "/params/" + pointer_token(name)
    return None


def _hints_problem(text: dict[str, Any]) -> tuple[str, str] | None:
    """``annotations`` that is not an object of the behaviour hints."""
    hints = text.get("annotations", {})
    if not isinstance(hints, dict):
        return 'field "annotations" must be an object', "/annotations"
    unknown = sorted(set(hints) - set(HINTS))
    if unknown:
        return f"unknown annotation {json.dumps(unknown[0])}", "/annotations/" + pointer_token(unknown[0])
    return None


def _recorded_at(index: int | None, where: str) -> str:
    """Which call recorded the digest: ``where``, else the call at ``index``."""
    if where:
        return f" ({where})"
    return f" (recorded call at index {index})" if index is not None else ""


def text_drift_message(
    tool: str,
    recorded: str,
    live: str | None,
    *,
    index: int | None = None,
    against: str = "",
    differences: Sequence[str] = (),
    where: str = "",
) -> str:
    """The one wording of a ``contract-text-drift``, whichever check found it (digests shown by
    their first 16 hex digits; ``differences``: what changed, as ``fingerprint-diff`` words it;
    ``where``: which call recorded the digest, when not the recorded call at ``index``)."""
    at = _recorded_at(index, where)
    holder = f"{against} has" if against else "is now"
    now = f"{holder} {live[:16]}" if live is not None else "the tool is gone"
    what = (
        "; ".join(one_line(d) for d in differences)
        if differences
        else "its title, description, parameter descriptions, annotations or output schema changed"
    )
    return (
        f"tool {quote(tool)}: contract text drifted: recorded with text digest {recorded[:16]}{at},"
        f" {now}; {what}"
    )
