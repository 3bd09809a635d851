"""The parts of the Markdown report a reviewer approves a change from: the guard's own settings
changing, each changed baseline (its note's reason, both versions, what differs), drift side by
side, and the exact commands that accept a baseline's drift (or, for a probe, that write its
recording or receipt again: a note accepts a change to a file, and there the server changed).

Every value here is untrusted and goes through :func:`~toolreplay.report.markdown.md_code` or a
fenced block; nothing is put in a table cell that could make a table wider than the page.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote as url_quote

from toolreplay.escape import one_line
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import RECEIPT, Finding, Report, Review
from toolreplay.kinds import (
    DRIFT_GUARD_CHANGED,
    MISSING_DRIFT_NOTE,
    NOTE_ACCEPTS,
    REWRITE_ACCEPTS,
)
from toolreplay.report.inert import defuse, fenced, md_code

#: a value longer than this goes into a fenced block under its line instead of a code span
INLINE_VALUE = 60
#: with caps (the PR comment): the first this many changes of a baseline are shown
OPEN_CHANGES = 5
#: with caps: a note's reason is shortened to this many characters
CAPPED_REASON = 300
#: with caps: the tools a line counting the differences not shown names
NAMED_TOOLS = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """How the report is drawn: where links go, the pull request's base, and whether it is capped
    (the PR comment) or whole (the job summary)."""

    server: str | None = None
    repository: str | None = None
    base: str | None = None
    caps: bool = True

    def blob(self, commit: str, path: str) -> str | None:
        """The file at ``commit`` on GitHub (None without links)."""
        if self.server is None or self.repository is None or not path or path.startswith(("/", "..")):
            return None
        return f"{self.server}/{self.repository}/blob/{commit}/{url_quote(path, safe='/')}"


def code(text: str, *, max_len: int | None = None) -> str:
    """Untrusted text as an inert inline code span, out of tables."""
    return md_code(text, in_table=False, max_len=max_len)


def values(baseline: str, run: str, *, old: str, new: str, indent: str = "  ") -> list[str]:
    """Two differing values side by side: inline when short, else a fenced block under the line."""
    if len(baseline) <= INLINE_VALUE and len(run) <= INLINE_VALUE:
        return [f"{indent}{old} {code(baseline)} → {new} {code(run)}"]
    return ["", *fenced([f"{old}: {baseline}", f"{new}: {run}"], indent=indent)]


def change_item(
    f: Finding, where: str, *, old: str = "baseline", new: str = "run", message: bool = True
) -> list[str]:
    """One difference as a list item: where, kind, tool, the message (unless a table above has
    it), then both values."""
    tool = f" · {code(f.tool, max_len=80)}" if f.tool else ""
    said = f": {code(f.message, max_len=300)}" if message else ""
    head = f"- {where} · {f.kind}{tool}{said}"
    if f.change is None:
        return [head]
    c = f.change
    return [head, f"  at {code(c.pointer)}:", *values(c.baseline, c.run, old=old, new=new), ""]


def guard_block(report: Report, view: View) -> list[str]:
    """A change to the guard's own settings: each part on its own line, never folded."""
    parts = [p for f in report.findings if f.kind == DRIFT_GUARD_CHANGED for p in f.message.split("; ")]
    if not parts:
        return []
    versions = _guard_versions(report, view)
    out = ["", f"**The drift guard's settings change** in {code(report.path)}{versions}:", ""]
    out += [f"- {code(part)}" for part in parts]
    return out


def _guard_versions(report: Report, view: View) -> str:
    """`` (base version → head version)``, each linked, when the report knows both commits."""
    if report.review is None:
        return ""
    base, head = report.review.base, report.review.head
    old = _link("base version", view.blob(base, report.path), base)
    new = _link("head version", view.blob(head, report.path), head)
    return f" ({old} → {new})"


def is_guard_change(report: Report) -> bool:
    """A report of the guard's own settings changing (shown first, never folded)."""
    return any(f.kind == DRIFT_GUARD_CHANGED for f in report.findings)


def review_block(report: Report, review: Review, view: View, *, opened: bool) -> list[str]:
    """One changed baseline: accepted or not, the note's reason, from → to, what differs."""
    changed = _plural(len(review.changes), "difference")
    summary = f"<code>{_html(report.path)}</code>: {_status(report, review)} · {changed}"
    out = ["", f"<details{' open' if opened else ''}>", f"<summary>{summary}</summary>", ""]
    out.append(_versions(report, review, view))
    out += _reason(review.reason, capped=view.caps)
    out += _differences(review.changes, capped=view.caps)
    return [*out, "", "</details>"]


def _status(report: Report, review: Review) -> str:
    """Whether a note accepts the changed baseline (HTML, for the block's summary)."""
    if review.note is not None:
        return f"accepted by <code>{_html(review.note)}</code>"
    return "<b>no note accepts it</b>" if report.findings else "accepted"


def _versions(report: Report, review: Review, view: View) -> str:
    """From which digest to which, each version linked, and the kinds the note accepts."""
    heads = {line.key: line.text for line in report.header}
    frm, to = heads.get("from", ""), heads.get("to", "")
    base_url, head_url = view.blob(review.base, report.path), view.blob(review.head, report.path)
    kinds = f" · kinds: {', '.join(code(k) for k in review.kinds)}" if review.kinds else ""
    return (
        f"from {code(frm[:16])} ({_link('base version', base_url, review.base)})"
        f" → to {code(to[:16])} ({_link('head version', head_url, review.head)}){kinds}"
    )


def _reason(reason: str, *, capped: bool) -> list[str]:
    """The note's reason quoted, shortened when capped."""
    if not reason:
        return []
    out = ["", "The note's reason (as written in the pull request):", ""]
    return out + [
        f"> {code(line)}" for line in _shortened(reason, capped=capped).splitlines() if line.strip()
    ]


def _shortened(reason: str, *, capped: bool) -> str:
    """The reason, cut to :data:`CAPPED_REASON` characters when capped."""
    if capped and len(reason) > CAPPED_REASON:
        return reason[: CAPPED_REASON - 1] + "…"
    return reason


def _differences(changes: Sequence[Finding], *, capped: bool) -> list[str]:
    """What differs between the two versions, the first few when capped."""
    if not changes:
        return []
    out = ["", "What differs, base → head (as `toolreplay diff` finds it):", ""]
    shown = changes[:OPEN_CHANGES] if capped else changes
    for f in shown:
        out += change_item(f, _change_place(f), old="base", new="head")
    if len(shown) < len(changes):
        out += ["", more_line(changes[len(shown) :], "run `toolreplay diff` on the two versions.")]
    return out


def _change_place(f: Finding) -> str:
    """Where a change between two versions of a baseline is: a call's index, or the contract."""
    return f"index {f.index}" if f.index is not None else "contract"


def more_line(rest: Sequence[Finding], then: str) -> str:
    """How many more differences there are, and in which tools (the first :data:`NAMED_TOOLS`,
    sorted), then what shows them."""
    tools = sorted({f.tool for f in rest if f.tool})
    named = _tools_named(tools)
    where = f" (tool{'s' * (len(tools) != 1)} {named})" if tools else ""
    return f"{_plural(len(rest), 'more difference')}{where}: {then}"


def _tools_named(tools: list[str]) -> str:
    """The first :data:`NAMED_TOOLS` tools, and how many more there are."""
    named = ", ".join(code(tool, max_len=80) for tool in tools[:NAMED_TOOLS])
    if len(tools) > NAMED_TOOLS:
        named += f" and {_plural(len(tools) - NAMED_TOOLS, 'more tool')}"
    return named


#: what an accept command leaves for the reviewer to say (``--reason WHY``)
WHY = "WHY"


def accept_commands(report: Report, findings: Sequence[Finding], base: str | None) -> list[list[str]]:
    """The exact commands (as words) that accept a baseline's drift from a clean checkout of the pull
    request: ``accept`` the run as the baseline when a run drifted from it (the reason left for the
    reviewer), else write the note of the baseline's change."""
    if report.note is None:
        return []
    runs = drifted_runs(report, findings)
    if not _needs_accepting(report, findings, runs):
        return []
    since = ["--base", base] if base is not None else []
    if runs:
        return [accept_words(report.path, runs[0], since)]
    return [["toolreplay", "note", report.path, *since, "-o", report.note]]


def baseline_accepts(report: Report, findings: Sequence[Finding], base: str | None) -> list[list[str]]:
    """The commands (as words) that accept a baseline's drift, as the PR comment prints them: those of
    :func:`accept_commands` for a baseline that names its note, else ``accept`` of the first run that
    drifted from a checked sealed baseline (measured from HEAD); none for anything else."""
    if report.note is not None:
        return accept_commands(report, findings, base)
    if not _sealed_baseline_drifted(report, findings):
        return []
    return [accept_words(report.path, drifted_runs(report, findings)[0])]


def _sealed_baseline_drifted(report: Report, findings: Sequence[Finding]) -> bool:
    """Whether a checked sealed baseline has drift a note accepts."""
    if report.command != "check" or not report.path.endswith(SEALED_SUFFIX):
        return False
    return any(f.kind in NOTE_ACCEPTS for f in findings)


def accept_words(baseline: str, run: str, since: Sequence[str] = ()) -> list[str]:
    """``toolreplay accept BASELINE --run RUN [--base REF] --reason WHY``, as words."""
    return ["toolreplay", "accept", baseline, "--run", run, *since, "--reason", WHY]


def drifted_runs(report: Report, findings: Sequence[Finding]) -> list[str]:
    """The runs that drifted from a baseline in ways a drift note accepts, sorted."""
    return sorted({f.path for f in findings if f.kind in NOTE_ACCEPTS and f.path and f.path != report.path})


def _needs_accepting(report: Report, findings: Sequence[Finding], runs: list[str]) -> bool:
    """A checked baseline needs accepting when a run drifted from it; a changed one (the guard's
    report) when no note accepts it."""
    if report.command == "check":
        return bool(runs)
    return any(f.kind == MISSING_DRIFT_NOTE for f in findings)


@dataclass(frozen=True, slots=True, kw_only=True)
class Advice:
    """How to accept what a report found where no note of its own file does: a sentence (Markdown,
    its untrusted parts in code spans) and the commands, as words."""

    text: str
    commands: tuple[tuple[str, ...], ...]


def other_advice(report: Report, findings: Sequence[Finding]) -> Advice | None:
    """What accepts the drift ``diff`` or ``probe`` found (None: nothing of theirs to accept).

    ``diff``'s file is the run: the run becomes the baseline, and the note is the baseline's.
    ``probe``'s is a recording or a receipt that has not changed (the server has): it is written
    again, and a note, where the guard counts it as a baseline, accepts that new version.
    """
    if report.command == "probe" and any(f.kind in REWRITE_ACCEPTS for f in findings):
        return _probe_advice(report)
    if report.command == "diff" and any(f.kind in NOTE_ACCEPTS for f in findings):
        return _diff_advice(report)
    return None


def _probe_advice(report: Report) -> Advice:
    """``probe``'s: write the receipt again (with the answers it was recorded from), or record again."""
    answers = _header_value(report, RECEIPT)
    return _rewrite_receipt(report.path, answers) if answers is not None else _record_again(report.path)


def _diff_advice(report: Report) -> Advice | None:
    """``diff``'s: the run becomes the baseline its header names (None: it names none)."""
    baseline = _header_value(report, "baseline")
    return _run_as_baseline(report.path, baseline) if isinstance(baseline, str) else None


def _header_value(report: Report, key: str) -> object:
    """The value of the report's header line ``key`` (None without one)."""
    return next((line.value for line in report.header if line.key == key), None)


_NOT_A_NOTE = (
    " A drift note alone accepts nothing here: it accepts a change to a file, and {what} has not"
    " changed, the server has."
)


def _rewrite_receipt(receipt: str, answers: object) -> Advice:
    return Advice(
        text=(
            f"If these answers are intended, review them, then write the receipt {code(receipt)} again"
            " from the recording it was written from (`RECORDING`), with the lock and the server"
            " (`CMD`) it was written with, and commit it with this pull request, with a drift note"
            f" ({code('toolreplay note ' + receipt)}) where the drift-note guard counts it as a baseline."
            + _NOT_A_NOTE.format(what="the receipt")
        ),
        commands=(
            (
                "toolreplay",
                "probe",
                "RECORDING",
                "--repeat",
                str(answers),
                "-o",
                receipt,
                "--force",
                "--",
                "CMD",
            ),
        ),
    )


def _record_again(recording: str) -> Advice:
    if recording.endswith(SEALED_SUFFIX):
        return _record_and_accept(recording)
    return Advice(
        text=(
            f"If these answers are intended, record {code(recording)} again: run your agent through"
            " `toolreplay record` against the server (`CMD`), review what changed, and commit the new"
            " recording with this pull request, with a drift note where the drift-note guard counts it"
            " as a baseline." + _NOT_A_NOTE.format(what="the recording")
        ),
        commands=(("toolreplay", "record", "-o", recording, "--force", "--", "CMD"),),
    )


def _record_and_accept(recording: str) -> Advice:
    """A sealed recording (a baseline): record a new run, then accept it as the recording."""
    run = recording[: -len(SEALED_SUFFIX)] + ".new.jsonl"
    return Advice(
        text=(
            f"If these answers are intended, record a new run through `toolreplay record` against the"
            f" server (`CMD`, your agent the client), review it, then accept it as {code(recording)}"
            f" (its session file, lock entries and drift notes with it), saying why in place of"
            f" {code(WHY)}, and commit what it wrote with this pull request."
            + _NOT_A_NOTE.format(what="the recording")
        ),
        commands=(
            ("toolreplay", "record", "-o", run, "--force", "--", "CMD"),
            tuple(accept_words(recording, run)),
        ),
    )


def _run_as_baseline(run: str, baseline: str) -> Advice | None:
    if "-" in (run, baseline):
        return None  # stdin: no file to name
    return Advice(
        text=(
            "If this drift is intended, accept it: make this run the baseline with its session file, lock"
            " entries and drift notes (from the folder the paths are relative to), say why in place of"
            f" {code(WHY)}, and commit what it wrote with this pull request."
        ),
        commands=(tuple(accept_words(baseline, run)),),
    )


def _link(text: str, url: str | None, commit: str) -> str:
    label = f"{text} {commit[:12]}"
    return f"[{label}]({url})" if url else label


def _html(text: str) -> str:
    return html.escape(defuse(one_line(text)), quote=True)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- the accept commands, as a reader copies them --------------------------------------


def shell_word(word: str) -> str:
    """``word`` for a copied shell command: :func:`shlex.quote`, or ANSI-C ``$'...'`` when it holds
    ``@``, ``<`` (kept out of the raw body, see :func:`defuse`), a control or invisible character,
    which are written as escapes so the pasted command names the exact file."""
    if all(_plain(ch) for ch in word):
        return shlex.quote(word)
    return "$'" + "".join(_ansi_c(ch) for ch in word) + "'"


def _plain(ch: str) -> bool:
    """A character a pasted command shows as itself."""
    return ch == " " or (ch.isprintable() and ch not in "@<" and not ch.isspace())


def _ansi_c(ch: str) -> str:
    """One character inside ``$'...'``: itself, backslashed, or as its code point's escape."""
    if ch in "\\'":
        return "\\" + ch
    if _plain(ch):
        return ch
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def accept_block(report: Report, findings: Sequence[Finding], base: str | None) -> list[str]:
    """How to accept a baseline's drift: the exact commands, run from a clean checkout of the pull
    request, that re-seal the baseline (when the run drifted from it) and write a note of a new name."""
    commands = baseline_accepts(report, findings, base)
    if report.note is not None:
        return _accept_change(report, report.note, commands)
    if report.command != "check":  # diff's file is the run, probe's a recording or receipt: no baseline
        return _advised(other_advice(report, findings))
    return _accept_drift(commands[0]) if commands else []


def _accept_drift(words: Sequence[str]) -> list[str]:
    """A checked baseline's drift: the accept command of the first run that drifted."""
    return [
        "",
        "If this drift is intended, accept it: run this (from the folder the paths are relative to),"
        f" saying why in place of {md_code(WHY, in_table=False)}; it makes the run the baseline and writes"
        " the drift notes. Commit what it wrote with this pull request.",
        "",
        *fenced([_shell_command(words)], "sh"),
    ]


def _advised(advice: Advice | None) -> list[str]:
    """What accepts a diff's or a probe's drift, where it is not a note of the report's file."""
    if advice is None:
        return []
    return ["", advice.text, "", *fenced([_shell_command(words) for words in advice.commands], "sh")]


def _accept_change(report: Report, note: str, commands: list[list[str]]) -> list[str]:
    """How to accept a changed baseline that names its note: the commands, if any are needed."""
    if not commands:
        return []
    return [
        "",
        "If this change is intended, accept it: run this from the folder the paths are relative to (a"
        f" clean checkout of this pull request), saying why (in place of {md_code(WHY, in_table=False)},"
        " or in the note it writes), and commit what it wrote with this pull request. The note goes to"
        f" {md_code(note, in_table=False)}.",
        "",
        *fenced([_shell_command(words) for words in commands], "sh"),
    ]


def _shell_command(words: Sequence[str]) -> str:
    return " ".join(shell_word(word) for word in words)
