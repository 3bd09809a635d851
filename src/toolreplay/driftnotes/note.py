"""Drift notes: Markdown with YAML front matter that accepts one change of a baseline (docs/spec.md §1.6).

The front matter is read with PyYAML's safe loader only, and more strictly than YAML
allows: a duplicate key (which PyYAML would silently resolve to the last value), an
alias, a non-string key, an unknown tag (``!!python/object`` and friends), more than one
document, or a front matter that is not a mapping is refused. What is left must satisfy
``schemas/drift-note.schema.json``, and the prose after the front matter must say
something (HTML comments, where a template puts its prompts, do not count).

Every problem is an :class:`InputError` naming the note's file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from toolreplay.errors import InputError
from toolreplay.limits import MAX_DEPTH, MAX_INT_DIGITS, long_integer_line
from toolreplay.locate import pointer_token
from toolreplay.schemas import validator

#: Largest drift note accepted, in bytes.
MAX_NOTE_BYTES = 1024 * 1024
#: The line that opens and closes the front matter.
FENCE = "---"

_STR_TAG = "tag:yaml.org,2002:str"
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftNote:
    """A valid drift note: the change it accepts and why."""

    path: str
    baseline: str
    from_head: str
    #: ``None`` when the note accepts the deletion of the baseline
    to_head: str | None
    kinds: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    prose: str = ""


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases (no shared or exponential structures) and deep
    nesting (PyYAML composes recursively: it would run out of stack)."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise ComposerError(None, None, "aliases (*name) are not allowed in a drift note", mark)
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise ComposerError(None, None, f"nesting is deeper than {MAX_DEPTH} levels", mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


@dataclass(frozen=True, slots=True, kw_only=True)
class _FrontMatter:
    value: dict[str, Any]
    #: JSON pointer -> (file line, node) for every key and array item
    nodes: dict[str, tuple[int, Node]]
    prose: str
    prose_line: int


def _text(raw: bytes, path: str) -> str:
    if len(raw) > MAX_NOTE_BYTES:
        raise InputError(f"a drift note is limited to {MAX_NOTE_BYTES} bytes", path=path)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise InputError("starts with a UTF-8 byte-order mark; save the note without it", path=path, line=1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError("not valid UTF-8", path=path, line=line) from err


def _split(text: str, path: str) -> tuple[str, str, int]:
    """Return (front matter text, prose, file line where the prose starts)."""
    lines = text.split("\n")
    if lines[0].rstrip("\r \t") != FENCE:
        raise InputError(
            f"a drift note starts with a line {FENCE!r} that opens its YAML front matter", path=path, line=1
        )
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip("\r \t") == FENCE:
            return "\n".join(lines[1 : number - 1]), "\n".join(lines[number:]), number + 1
    raise InputError(f"the front matter is not closed by a line {FENCE!r}", path=path, line=1)


def _yaml_error(err: yaml.YAMLError, path: str) -> InputError:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    if context and "constructor" not in problem:
        problem = f"{context}: {problem}"
    # the front matter starts on the file's second line
    line = mark.line + 2 if mark is not None else None
    return InputError(f"front matter: {problem}", path=path, line=line)


def _reader_error(err: yaml.reader.ReaderError, front: str, path: str) -> InputError:
    """A character YAML does not take (a control character), at its line, in one line."""
    character = err.character if isinstance(err.character, int) else ord(err.character)
    line = front.count("\n", 0, err.position) + 2  # the front matter starts on the second line
    return InputError(
        f"front matter: character U+{character:04X} is not allowed in YAML", path=path, line=line
    )


def _long_integer(front: str, path: str) -> InputError:
    """The error for an integer the int constructor refused: past Python's digit limit."""

    line = long_integer_line(front)
    return InputError(
        f"front matter: an integer longer than {MAX_INT_DIGITS} digits",
        path=path,
        line=None if line is None else line + 1,  # the front matter starts on the second line
    )


def _check_nodes(node: Node, path: str) -> None:
    """Refuse what the safe loader would accept silently: duplicate and non-string keys."""
    if isinstance(node, MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            _check_key(key, seen, path)
            _check_nodes(value, path)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _check_nodes(item, path)


def _check_key(key: Node, seen: dict[str, int], path: str) -> None:
    """A key is a string the mapping has not had before (``seen``: the keys so far, by line)."""
    line = key.start_mark.line + 2
    if not isinstance(key, ScalarNode) or key.tag != _STR_TAG:
        raise InputError("front matter: every key must be a string", path=path, line=line)
    if key.value in seen:
        raise InputError(
            f"front matter: duplicate key {key.value!r} (first on line {seen[key.value]})",
            path=path,
            line=line,
        )
    seen[key.value] = line


def _pointers(node: MappingNode) -> dict[str, tuple[int, Node]]:
    out: dict[str, tuple[int, Node]] = {}
    for key, value in node.value:
        name = "/" + pointer_token(str(key.value))
        out[name] = (key.start_mark.line + 2, value)
        if isinstance(value, SequenceNode):
            for i, item in enumerate(value.value):
                out[f"{name}/{i}"] = (item.start_mark.line + 2, item)
    return out


def _front_matter(raw: bytes, path: str) -> _FrontMatter:
    front, prose, prose_line = _split(_text(raw, path), path)
    try:
        loader = _StrictLoader(front)  # (its reader refuses control characters here)
    except yaml.reader.ReaderError as err:
        raise _reader_error(err, front, path) from err
    try:
        node = _mapping(loader.get_single_node(), path)
        _check_nodes(node, path)
        value = loader.construct_document(node)
    except yaml.reader.ReaderError as err:
        raise _reader_error(err, front, path) from err
    except yaml.YAMLError as err:
        raise _yaml_error(err, path) from err
    except ValueError as err:  # an integer past Python's digit limit, from the int constructor
        raise _long_integer(front, path) from err
    finally:
        loader.dispose()
    return _FrontMatter(value=value, nodes=_pointers(node), prose=prose, prose_line=prose_line)


def _mapping(node: Node | None, path: str) -> MappingNode:
    """The front matter's one node, which must be a mapping."""
    if node is None:
        raise InputError("front matter is empty: it must be a mapping with baseline and from", path=path)
    if not isinstance(node, MappingNode):
        raise InputError(
            "front matter must be a mapping (key: value lines)", path=path, line=node.start_mark.line + 2
        )
    return node


def _schema_problems(front: _FrontMatter, path: str) -> list[InputError]:
    out = []
    errors = sorted(
        validator("drift-note").iter_errors(front.value),
        key=lambda e: (list(map(str, e.absolute_path)), e.message),
    )
    for error in errors:
        pointer = "".join("/" + pointer_token(str(p)) for p in error.absolute_path)
        line, node = front.nodes.get(pointer, (1, None))
        line = _extra_key_line(error, front, pointer, line)
        message = error.message
        if error.validator in ("type", "$ref", "pattern") and _unquoted_non_string(node):
            message += "; YAML read the unquoted value as a non-string: put it in double quotes"
        out.append(InputError(message, path=path, line=line, pointer=pointer or "/"))
    return out


def _extra_key_line(error: Any, front: _FrontMatter, pointer: str, line: int) -> int:
    """For a key the schema does not know, the line of that key rather than of its object."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return line
    extra = _unknown_keys(error)
    if not extra:
        return line
    return front.nodes.get(pointer + "/" + pointer_token(str(extra[0])), (line, None))[0]


def _unknown_keys(error: Any) -> list[Any]:
    """The keys of an object the schema's ``properties`` do not name."""
    known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    return [key for key in error.instance if key not in known]


def _unquoted_non_string(node: Any) -> bool:
    """Whether YAML read a plain (unquoted) scalar as something other than a string."""
    return isinstance(node, ScalarNode) and node.style is None and node.tag != _STR_TAG


def _prose_problem(front: _FrontMatter, path: str) -> InputError | None:
    if _COMMENT.sub("", front.prose).strip():
        return None
    return InputError(
        "the note has no explanation: below the front matter, write why this drift is accepted",
        path=path,
        line=front.prose_line,
    )


def _check(raw: bytes, path: str) -> tuple[_FrontMatter | None, list[InputError]]:
    try:
        front = _front_matter(raw, path)
    except InputError as err:
        return None, [err]
    problems = _schema_problems(front, path)
    prose = _prose_problem(front, path)
    if prose is not None:
        problems.append(prose)
    return front, problems


def note_problems(raw: bytes, path: str) -> list[InputError]:
    """Every problem of a drift note (empty when it is valid)."""
    return _check(raw, path)[1]


def parse_note(raw: bytes, path: str) -> DriftNote:
    """Parse a drift note's bytes; ``path`` names it in errors. Raises the first problem."""
    front, problems = _check(raw, path)
    if problems or front is None:
        raise problems[0]
    value = front.value
    return DriftNote(
        path=path,
        baseline=value["baseline"],
        from_head=value["from"],
        to_head=value.get("to"),
        kinds=tuple(value.get("kinds", ())),
        tools=tuple(value.get("tools", ())),
        prose=front.prose,
    )
