"""Untrusted text made safe to print: quoted or kept on one line (:func:`quote`,
:func:`one_line`), and inert in a GitHub workflow step's log (:func:`inert`,
:func:`workflow_command`).

A module of its own, with no dataclass to build: every command prints through it, the
pre-commit hooks too, whose start-up should not pay for the report's values.

For the workflow commands, what the runner does with a step's output, and therefore what we
escape:

* @actions/core (``packages/core/src/command.ts``) builds ``::name k=v,k=v::message``;
  ``escapeData`` replaces ``%`` -> ``%25``, ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A``, and
  ``escapeProperty`` does the same plus ``:`` -> ``%3A`` and ``,`` -> ``%2C``
  (``toCommandValue`` first turns a non-string into JSON). GitHub's "Workflow commands for
  GitHub Actions" page documents the same percent-encoding. ``%`` goes first so an
  existing ``%0A`` in the text survives as text.
* actions/runner (``src/Runner.Common/ActionCommand.cs``, ``TryParseV2``) reads the output
  line by line, trims LEADING whitespace, and treats a line as a command when it then
  starts with ``::`` and the name up to the next ``::`` is a registered command. The legacy
  ``TryParse`` is tried too (``ActionCommandManager.TryProcessCommand``) and looks for
  ``##[name]`` ANYWHERE in the line, so that prefix is neutralised wherever it occurs.

So a line we print is safe when it holds no line break, does not start (after leading
whitespace) with ``::``, and contains no ``##[``. :func:`inert` makes any text so; only the
commands built by :func:`workflow_command` start with ``::``, and their values are escaped.

Both also spell out every other non-printable character (:func:`one_line`): an ANSI escape in
a file name (``runs/a\x1b[31m.jsonl``) would colour or hide text in a log or a terminal, and
click strips such sequences when it prints to a pipe, which turned that name into
``runs/a.jsonl``, another file. Spelled out, a name stays distinguishable and inert.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

# Every boundary str.splitlines() knows, a superset of the runner's \r and \n: text is cut
# into lines wherever any reader of the log might see a new one.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LEGACY_PREFIX = "##["

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(text: str) -> str:
    """Single-quote untrusted text so it stays on one line and cannot end the quotes.

    Backslash, quote and every non-printable character (controls, U+2028, U+2029,
    bidi overrides, lone surrogates) become escapes.
    """
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable() and ch != "\x7f":
            out.append(ch)
        else:
            out.append(_code_escape(ord(ch)))
    return "'" + "".join(out) + "'"


def _code_escape(code: int) -> str:
    """A non-printable character's escape by its code point: ``\\xHH``, ``\\uHHHH`` or ``\\UHHHHHHHH``."""
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(text: str) -> str:
    """Make free text safe to print as one line: non-printable characters become escapes.

    Backslashes are left alone, so text already built with :func:`quote` is not escaped twice.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else quote(ch)[1:-1] for ch in text)


def escape_data(text: str) -> str:
    """Escape a command's message the way @actions/core's ``escapeData`` does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a command property's value the way @actions/core's ``escapeProperty`` does."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _ignorable(ch: str) -> bool:
    # What the runner's TrimStart() drops, widened to every space, control and format
    # character so that no definition of "leading whitespace" can expose a "::".
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def _lead(line: str) -> int:
    """How many leading characters a runner might trim from ``line``."""
    n = 0
    while n < len(line) and _ignorable(line[n]):
        n += 1
    return n


def starts_command(line: str) -> bool:
    """Would the runner (or its legacy parser) read this one line as a workflow command?"""
    return line[_lead(line) :].startswith("::") or _LEGACY_PREFIX in line


def _inert_line(line: str) -> str:
    line = line.replace(_LEGACY_PREFIX, "##%5B")
    lead = _lead(line)
    if line[lead:].startswith("::"):
        line = line[:lead] + "%3A" + line[lead + 1 :]
    return line


def inert(text: str) -> str:
    """Make untrusted text safe to print in a workflow step's log.

    Every line of the result (split at ``\\n``, ``\\r`` or any other line boundary) is a
    line of ``text`` that cannot start a workflow command: a leading ``::`` becomes
    ``%3A:`` and any ``##[`` becomes ``##%5B``; other non-printable characters are spelled
    out (:func:`one_line`). Line breaks are normalised to ``\\n``. Text that needs no change
    is returned as it is.
    """
    return "\n".join(_inert_line(one_line(line)) for line in _LINE_BREAK.split(text))


def workflow_command(
    command: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    """One workflow command line, every value escaped (``::error file=F,line=N,title=T::M``).

    Each value is first made one line (:func:`one_line`: a control character in a file name
    is spelled out, never sent raw), then percent-encoded as @actions/core does.
    """
    message = one_line(message)
    props = []
    if file:
        props.append(f"file={escape_property(one_line(file))}")
    if line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(one_line(title))}")
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    # The message may hold "::" or "##[" as they are: the runner parses this line as our
    # command first (TryParseV2) and only tries the legacy "##[" form when that fails.
    return f"{head}::{escape_data(message)}"


def url_shown(url: str) -> str:
    """A server's URL as messages name it: its scheme and host (and port) only, never the
    credentials or the query it may carry (``https://user:pass@host/mcp?key=...`` is
    ``https://host``), for messages go to logs and, in a proxy's 502, to the client."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.scheme and parts.netloc else url


#: what :func:`neutral` breaks with a zero-width joiner after its first character: mentions,
#: tags and comments, issue references, workflow commands
_LIVE = re.compile(r"@|<|#(?=\d)|::|##\[")
_BLANKS = re.compile(r"\s+")


def neutral(text: str, *, max_len: int) -> str:
    """Untrusted prose (a PR comment's reason) made one inert line of at most ``max_len`` characters.

    White space (line breaks included) becomes one space, other non-printable characters are
    spelled out (:func:`one_line`), the text is cut to ``max_len`` (ending in ``…``), and a
    zero-width joiner follows each ``@``, ``<``, a ``#`` before a digit and the first colon of
    ``::`` (and ``#`` of ``##[``): no mention, HTML tag, issue reference or workflow command is
    live in it, in Markdown, a commit message or a log.
    """
    body = one_line(_BLANKS.sub(" ", text).strip())
    if len(body) > max_len:
        body = body[: max_len - 1].rstrip() + "…"
    return _LIVE.sub(lambda m: m.group(0)[0] + "\u200d" + m.group(0)[1:], body)
