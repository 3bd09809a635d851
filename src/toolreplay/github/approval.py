"""What ``/toolreplay accept`` reads and says: the command in a PR comment, the hidden lines of the
sticky comment that name the head commit it described and the baselines it listed, and the replies.

Everything here is text in, text out (docs/spec.md §5.2). The comment's reason is untrusted: it
goes through :func:`~toolreplay.escape.neutral` before it is written anywhere, and the replies
show paths and reasons in code spans (:func:`~toolreplay.report.inert.md_code`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolreplay.escape import neutral
from toolreplay.findings import Report
from toolreplay.report.inert import code_span, fenced, md_code
from toolreplay.report.review import WHY, baseline_accepts, shell_word

#: what a comment starts with to ask for an accept
COMMAND = "/toolreplay accept"
#: the longest reason kept (in the note, the commit message and the reply), in characters
MAX_REASON = 300
#: the sticky comment's hidden line naming the pull request's head commit it described
HEAD_LINE = "<!-- toolreplay-head: {} -->"
#: the sticky comment's hidden line listing what its accept commands accept (JSON)
ACCEPTS_LINE = "<!-- toolreplay-accepts: {} -->"
_HEAD = re.compile(r"^<!-- toolreplay-head: ([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE)
_ACCEPTS = re.compile(r"^<!-- toolreplay-accepts: (\[.*\]) -->$", re.MULTILINE)
_PATHS = re.compile(r"^([^\s,:]+\.sealed\.jsonl(?:\s*,\s*[^\s,:]+\.sealed\.jsonl)*):(?:\s+|$)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A ``/toolreplay accept`` comment: the baselines it names (none: every one listed) and its
    reason (as written: untrusted)."""

    paths: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Unit:
    """One accept command the sticky comment printed: ``accept BASELINE --run RUN [--base BASE]``."""

    baseline: str
    run: str
    base: str | None = None

    def words(self, reason: str = WHY) -> list[str]:
        since = ["--base", self.base] if self.base is not None else []
        return ["toolreplay", "accept", self.baseline, "--run", self.run, *since, "--reason", reason]


@dataclass(frozen=True, slots=True, kw_only=True)
class Described:
    """What a sticky comment says it described: the head commit (None: a comment from before the
    head was written into it) and the accept commands it printed."""

    head: str | None
    units: tuple[Unit, ...]


def parse_request(body: str) -> Request | None:
    """The request of a comment whose first line starts with ``/toolreplay accept`` (None: another
    comment). The reason is the rest of the comment; ``PATH: reason`` (paths separated by commas,
    each ``*.sealed.jsonl``) names the baselines."""
    text = body.lstrip()
    if not text.startswith(COMMAND):
        return None
    rest = text[len(COMMAND) :]
    if rest and not rest[0].isspace():
        return None  # "/toolreplay acceptance ..."
    rest = rest.strip()
    match = _PATHS.match(rest)
    if match is None:
        return Request(paths=(), reason=rest)
    paths = tuple(dict.fromkeys(p.strip() for p in match.group(1).split(",")))
    return Request(paths=paths, reason=rest[match.end() :].strip())


def listed_units(reports: Sequence[Report], base: str | None) -> tuple[Unit, ...]:
    """The ``accept`` commands the comment of ``reports`` prints, one per baseline, sorted."""
    found: dict[str, Unit] = {}
    for report in reports:
        for words in baseline_accepts(report, report.findings, base):
            if words[:2] != ["toolreplay", "accept"]:
                continue  # a note of a changed baseline: nothing to seal, a reviewer writes it
            since = words[words.index("--base") + 1] if "--base" in words else None
            found.setdefault(words[2], Unit(baseline=words[2], run=words[4], base=since))
    return tuple(sorted(found.values()))


def described_lines(head: str | None, units: Sequence[Unit]) -> list[str]:
    """The sticky comment's hidden lines: the head it describes and what it lists (none without a head)."""
    if head is None:
        return []
    listed = json.dumps([[u.baseline, u.run, u.base] for u in units], ensure_ascii=True)
    # no "<" or ">" in an HTML comment's text: a path cannot end the comment
    listed = listed.replace("<", "\\u003c").replace(">", "\\u003e")
    return [HEAD_LINE.format(head), ACCEPTS_LINE.format(listed)]


def read_described(body: str) -> Described:
    """The head and the accept commands a sticky comment's hidden lines name."""
    text = body.replace("\r\n", "\n")
    head = _HEAD.search(text)
    listed = _ACCEPTS.search(text)
    units = _listed_units(listed.group(1)) if listed is not None else ()
    return Described(head=head.group(1) if head else None, units=units)


def _listed_units(listed: str) -> tuple[Unit, ...]:
    """The units of the accepts line's JSON: its well-formed rows (none when it holds no list)."""
    try:
        rows = json.loads(listed)
    except ValueError:
        return ()
    if not isinstance(rows, list):
        return ()
    return tuple(Unit(baseline=row[0], run=row[1], base=row[2]) for row in rows if _is_row(row))


def _is_row(row: object) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and isinstance(row[1], str)
        and (row[2] is None or isinstance(row[2], str))
    )


def safe_reason(reason: str) -> str:
    """The reason as it is written anywhere: one inert line, at most :data:`MAX_REASON` characters."""
    return neutral(reason, max_len=MAX_REASON)


def note_reason(reason: str, *, login: str, number: int) -> str:
    """A drift note's prose: the quoted reason and who accepted it where."""
    return (
        f'"{safe_reason(reason)}"\n\n'
        f"Accepted by {neutral(login, max_len=100)} with /toolreplay accept on pull request #{number}."
    )


def commit_message(units: Sequence[Unit], reason: str, *, login: str, number: int) -> str:
    """The commit's message: what it accepts, who asked, and the quoted reason."""
    who = neutral(login, max_len=100)
    names = ", ".join(neutral(u.baseline, max_len=200) for u in units)
    return (
        f"Accept the drift of {names}\n\n"
        f'Reason: "{safe_reason(reason)}"\n\n'
        f"Accepted by {who} with /toolreplay accept on pull request #{number}.\n"
    )


def _command_lines(units: Sequence[Unit]) -> list[str]:
    return [" ".join(shell_word(w) for w in unit.words()) for unit in units]


def reply_done(
    units: Sequence[Unit], written: Sequence[str], *, commit: str, branch: str, reason: str
) -> str:
    """The reply once pushed: the commit, the branch, the files written and the reason."""
    files = [f"- {md_code(path, in_table=False)}" for path in written]
    names = ", ".join(md_code(u.baseline, in_table=False) for u in units)
    return "\n".join(
        [
            f"toolreplay accepted the drift of {names} and pushed {commit[:12]} to"
            f" {md_code(branch, in_table=False)}, with this reason in the drift notes:",
            "",
            f"> {code_span(safe_reason(reason))}",
            "",
            "It wrote:",
            "",
            *files,
        ]
    )


def reply_refused(why: str) -> str:
    """The reply when nothing was done (``why`` is our own Markdown)."""
    return f"toolreplay did not accept anything: {why}"


def reply_fork(units: Sequence[Unit]) -> str:
    """The reply to a pull request from a fork: the commands to run in a checkout of it."""
    why = (
        "this pull request comes from a fork, and the workflow's token may not push there"
        " (nor check a fork's content out). Its author can accept the drift from a checkout of"
        " the pull request, then commit and push"
    )
    commands = _command_lines(units)
    if not commands:
        return reply_refused(f"{why}: the accept commands are in the toolreplay report.")
    saying = f", saying why in place of {md_code(WHY, in_table=False)}:"
    return "\n".join([reply_refused(why + saying), "", *fenced(commands, "sh")])


def missing_paths(request: Request, units: Sequence[Unit]) -> list[str]:
    """The baselines the request names that the sticky comment did not list."""
    listed = {u.baseline for u in units}
    return [p for p in request.paths if p not in listed]


def chosen_units(request: Request, units: Sequence[Unit]) -> list[Unit]:
    """The listed units the request accepts: the ones it names, else all."""
    if not request.paths:
        return list(units)
    return [u for u in units if u.baseline in request.paths]
