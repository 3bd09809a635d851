"""A drift note written for a change (docs/spec.md §1.6): the baseline's heads as git committed it
and as it is now, what comparing them found, and the note's text (YAML front matter in a stable
order, then the reason). ``note`` and ``accept`` print or write what this builds."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolreplay.analyses.baseline import diff_baseline
from toolreplay.analyses.judging import Judging
from toolreplay.chain import verify
from toolreplay.driftnotes.changes import file_head
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, sort_findings
from toolreplay.git import committed_blob, merge_base, repo_path
from toolreplay.kinds import NOTE_KINDS, TOOL_DRIFT
from toolreplay.transcript import GENESIS, Record, parse_links, read_input, read_records


def head_of(data: bytes, label: str) -> tuple[list[Record], str]:
    """A guarded file's records and head: a sealed baseline's chain, or the tool lock's digest (no
    records: a note accepts its change as bytes, docs/spec.md §1.6)."""
    if not label.endswith(SEALED_SUFFIX):
        return [], file_head(data)
    links = list(parse_links(io.BytesIO(data), label))
    state = verify(links)
    if state.broken:
        raise InputError(
            f"the chain is broken at index {state.broken.position} ({state.broken.reason}); fix it first",
            path=label,
            line=state.broken.line,
        )
    return [link.record for link in links], state.head


def note_text(
    *,
    baseline: str,
    before: str,
    after: str | None,
    kinds: Sequence[str],
    tools: Sequence[str],
    found: Sequence[str],
    reason: str | None = None,
) -> str:
    """The drift-note template: YAML front matter (stable key order), then room for the reason
    (or the ``reason`` given).

    Block style, every value a double-quoted scalar: a digest of digits only (or 64
    zeros) would otherwise read as a number, so both digests are always quoted.
    """

    front = [f"baseline: {_scalar(baseline)}", f"from: {_scalar(before)}"]
    if after is not None:
        front.append(f"to: {_scalar(after)}")
    lines = ["---", *front, *_listed("kinds", kinds), *_listed("tools", tools)]
    if not kinds:
        lines.append("# kinds: none found by comparison; add what drifted if you know:")
        lines.append("# kinds: [signature, schema, version, behavior, effect, agent]")
    if found:
        lines.append("# what toolreplay diff found (a summary for the reviewer; edit kinds/tools as needed):")
        lines += [f"#   {one_line(item)}" for item in found]
    asked = (
        "<!-- Why is this drift accepted? Replace this comment with the reason;"
        " a note without one is refused. -->"
    )
    lines += ["---", asked if reason is None else reason.strip(), ""]
    return "\n".join(lines)


def _listed(key: str, values: Sequence[str]) -> list[str]:
    """A list of the front matter in block style; nothing when empty (the schema wants a list
    non-empty when present)."""
    if not values:
        return []
    return [f"{key}:", *(f"  - {_scalar(v)}" for v in values)]


def _scalar(value: str) -> str:
    # a JSON string is a valid YAML double-quoted scalar (ASCII, every control escaped)
    return json.dumps(value, ensure_ascii=True)


def note_of(heads: Heads, drift: NoteDrift, reason: str | None = None) -> str:
    """The note of a change measured by ``heads``, with what the comparison found (and the reason)."""
    return note_text(
        baseline=heads.name,
        before=heads.before,
        after=heads.after,
        kinds=sorted(drift.kinds),
        tools=sorted(drift.tools),
        found=drift.found,
        reason=reason,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Heads:
    """A baseline as committed in git HEAD (or at a pull request's start) and as it is now."""

    path: str
    #: its path in the repository, as a note names it
    name: str
    committed: bool
    before_records: list[Record]
    before: str
    #: None when the baseline is deleted
    after_records: list[Record] | None
    after: str | None


def baseline_heads(
    baseline: str, base: str | None = None, now: tuple[list[Record] | None, str | None] | None = None
) -> Heads:
    """A baseline's head in HEAD, or where a pull request against ``base`` starts (the genesis value
    when new), and now (``now``: its records and head to be, else as on disk); refused when unchanged."""
    heads, since = measured_heads(baseline, base, now)
    if heads.after is not None and heads.after == heads.before:
        raise InputError(
            f"is unchanged since {since} (from == to, head {heads.before}): there is no drift to accept;"
            " re-seal the baseline first, then write its note",
            path=baseline,
        )
    return heads


def measured_heads(
    baseline: str, base: str | None, now: tuple[list[Record] | None, str | None] | None
) -> tuple[Heads, str]:
    """A baseline's heads as :func:`baseline_heads` measures them, changed or not; and how
    messages name where they are measured from."""
    name = repo_path(baseline)
    rev, since = _measured_from(baseline, base)
    blob = committed_blob(baseline, rev)
    label = f"{rev[:12]}:{name}"  # (HEAD, or a commit's short id)
    before_records, before = head_of(blob, label) if blob is not None else ([], GENESIS)
    if now is None and blob is None:
        _refuse_if_missing(baseline, "git HEAD" if base is None else since)
    after_records, after = _as_now(baseline) if now is None else now
    heads = Heads(
        path=baseline,
        name=name,
        committed=blob is not None,
        before_records=before_records,
        before=before,
        after_records=after_records,
        after=after,
    )
    return heads, since


def _refuse_if_missing(baseline: str, measured_from: str) -> None:
    """Refuse a baseline that is neither on disk nor committed where it is measured from."""
    if not os.path.exists(baseline):
        raise InputError(f"no such file, and not in {measured_from} either", path=baseline)


def accepting_notes(
    files: Sequence[tuple[str, bytes]],
    *,
    run: str,
    base: str | None,
    judging: Callable[[], Judging],
    reason: str,
) -> list[tuple[str, str]]:
    """The drift notes accepting each of ``files`` (a path and its bytes to be; the baseline first)
    with ``reason``, for ``accept``: kinds and tools from comparing the baseline as measured with
    ``run`` judged by ``judging``, as ``note --run`` does (from a pull request's start, with the
    base commit's settings, as ``note --base``); a file unchanged since then gets none.
    (path, text) each."""
    notes: list[tuple[str, str]] = []
    drift = NoteDrift()
    for number, (path, data) in enumerate(files):
        records, head = head_of(data, path)
        heads, _ = measured_heads(path, base, (records, head))
        if number == 0 and heads.committed:
            drift = drift_found(heads.before_records, [(run, records)], judging())
        if heads.after == heads.before:
            continue
        text = note_of(heads, drift, reason)
        notes.append((heads.name, text))
    return notes


def _measured_from(baseline: str, base: str | None) -> tuple[str, str]:
    """The commit a note measures from (HEAD, or where a pull request against ``base`` starts),
    and how messages name it."""
    if base is None:
        return "HEAD", "HEAD"
    rev = merge_base(baseline, base)
    return rev, f"the merge base of {quote(base)} and HEAD ({rev[:12]})"


def _as_now(baseline: str) -> tuple[list[Record] | None, str | None]:
    """The baseline's records and head as it is now; None for both when it is deleted."""
    if not os.path.exists(baseline):
        return None, None
    return head_of(read_input(baseline), baseline)


def compared_runs(heads: Heads, runs: Sequence[str]) -> list[tuple[str, list[Record]]]:
    """What the committed baseline is compared with: the runs given, else the baseline as it is now."""
    if not heads.committed:
        return []  # a new baseline: nothing drifted from anything
    if runs:
        return [(path, read_records(path)) for path in runs]
    if heads.after_records is not None:
        return [(heads.path, heads.after_records)]
    return []


@dataclass(frozen=True, slots=True, kw_only=True)
class NoteDrift:
    """What a comparison found, for a note's kinds, tools and summary."""

    kinds: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    found: tuple[str, ...] = ()


def drift_found(
    before: list[Record], compared: list[tuple[str, list[Record]]], judging: Judging
) -> NoteDrift:
    """The comparison of the committed baseline with the runs, as a note words it."""
    result = diff_baseline(before, compared, judging)
    findings = [(run.path, f) for run in result.runs for f in sort_findings(list(run.findings))]
    return NoteDrift(
        kinds=frozenset(NOTE_KINDS[f.kind] for _, f in findings if f.kind in NOTE_KINDS),
        tools=frozenset(f.tool for _, f in findings),
        found=tuple(_found_lines(findings, named=len(result.runs) > 1)),
    )


def _found_lines(findings: list[tuple[str, Finding]], *, named: bool) -> list[str]:
    """The note's summary of the findings, each naming its run when ``named`` (several runs)."""
    found = [f"{path + ' ' if named else ''}index {f.index}: {f.kind}: {f.message}" for path, f in findings]
    if any(f.kind == TOOL_DRIFT for _, f in findings):
        found.append("tool-drift: run toolreplay fingerprint-diff to tell signature, schema or version")
    return found


def draft_note(
    baseline: str, *, runs: Sequence[str], base: str | None, judging: Callable[[], Judging]
) -> str:
    """The note template accepting the change to ``baseline`` since HEAD (or since where a pull
    request against ``base`` starts), its kinds and tools from comparing the committed baseline
    with ``runs`` (else with the baseline as it is now) judged by what ``judging`` builds, only when
    there is a comparison (a tool lock not written yet is then never read)."""
    heads = baseline_heads(baseline, base)
    compared = compared_runs(heads, runs)
    drift = drift_found(heads.before_records, compared, judging()) if compared else NoteDrift()
    return note_of(heads, drift)
