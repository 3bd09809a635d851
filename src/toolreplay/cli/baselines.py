"""Baseline commands: diff, note, sign, keygen (docs/spec.md §1.3, §1.6, §3.4)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import click

from toolreplay import signing
from toolreplay.analyses import integrity
from toolreplay.analyses.baseline import (
    DiffResult,
    Freshness,
    RunDiff,
    check_freshness,
    diff_baseline,
    diff_tables,
)
from toolreplay.analyses.calltable import CallTable, Store, open_twice, read_table
from toolreplay.analyses.fingerprint_diff import explain_drift
from toolreplay.analyses.judging import Judging, ToolBehaviour, lock_behaviour
from toolreplay.analyses.volatile import Volatile
from toolreplay.chain import ChainState, verify, verify_stream
from toolreplay.cli.base import EXISTS, EXIT_FINDINGS, atomic_output, force_option
from toolreplay.cli.defaults import announce, config_option, read_config
from toolreplay.cli.formats import format_option
from toolreplay.cli.gate import emit_gated, fail_on_option, fail_policy
from toolreplay.config import Config, config_path
from toolreplay.contracts.lock import load_lock
from toolreplay.contracts.source import source_lock
from toolreplay.driftnotes.guard import file_head
from toolreplay.driftnotes.pull import PullRange, judged_config
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, sort_findings
from toolreplay.gate import FailPolicy
from toolreplay.git import committed_blob, last_commit_time, merge_base, regular_baseline, repo_path
from toolreplay.kinds import NOTE_KINDS, TOOL_DRIFT
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.mutators import DEFAULT_MUTATORS
from toolreplay.reports import Line, Report, masked_line
from toolreplay.transcript import GENESIS, Record, parse_links, read_input, read_links, read_transcript
from toolreplay.volatile_rules import Rule


def _is_sealed(path: str) -> bool:
    return os.path.basename(path).endswith(".sealed.jsonl")


def _read_run(path: str) -> list[Record]:
    # whole records: the volatile rules mask their values
    if _is_sealed(path):
        return [link.record for link in read_links(path)]
    return list(read_transcript(path))


def _baseline_table(store: Store, path: str) -> tuple[CallTable, ChainState]:
    """The baseline's chain state, and its calls as a table (read after the chain is checked;
    stdin or a pipe is copied as it is checked, and the copy read)."""
    stream, again = open_twice(store, path)
    try:
        state = verify_stream(stream, path)
    finally:
        stream.close()
    return read_table(store, path, sealed=True, again=again), state


def _freshness_line(freshness: Freshness | None) -> Line:
    if freshness is None:
        return Line(key="freshness", value="not checked", text="not checked")
    days = f"{freshness.max_age_days} days"
    if freshness.uncommitted:
        return Line(
            key="freshness",
            value="not committed",
            text=f"not committed yet (its age counts from its first commit; limit {days})",
        )
    if freshness.stale:
        return Line(
            key="freshness",
            value="stale",
            text=f"STALE: last committed {freshness.committed}, more than {days} ago; re-record it",
        )
    return Line(key="freshness", value="fresh", text=f"last committed {freshness.committed}, within {days}")


def _run_report(
    baseline: str,
    state: ChainState,
    freshness: Freshness | None,
    run: RunDiff,
    result: DiffResult,
    extra: Sequence[Finding] = (),
    masked: Sequence[int] | None = None,
) -> Report:
    counts = ", ".join(f"{kind} {n}" for kind, n in run.counts) or "none"
    header = [
        Line(key="baseline", value=baseline, text=baseline),
        Line(key="baseline links", value=state.links, text=str(state.links)),
        Line(key="baseline head", value=state.head, text=state.head),
        _freshness_line(freshness),
        Line(key="calls", value=run.calls, text=str(run.calls)),
        Line(key="aligned", value=run.aligned, text=str(run.aligned)),
        Line(key="differences", value=counts, text=counts),
    ]
    header += [
        Line(key=f"tool {quote(tool)}", value=result.verdicts[tool], text=result.verdicts[tool])
        for tool in run.tools
    ]
    if masked is not None:  # the values masked in the baseline and this run
        header.append(masked_line(masked))
    findings = sort_findings([*extra, *run.findings])
    header.append(_findings_line(run, len(findings)))
    return Report(command="diff", path=run.path, header=tuple(header), findings=tuple(findings))


def _findings_line(run: RunDiff, count: int) -> Line:
    """How many findings: differences: counts every one and a finding line shows the first call of
    each tool with each kind, so where the two numbers part, the line says so."""
    shown = str(count)
    if sum(n for _, n in run.counts) > len(run.findings):
        shown += " (the first call of each tool and kind; differences: counts every one)"
    return Line(key="findings", value=count, text=shown)


def _broken_report(baseline: str, state: ChainState) -> Report:
    assert state.broken is not None
    b = state.broken
    return Report(
        command="diff",
        path=baseline,
        header=(
            Line(key="baseline", value=baseline, text=baseline),
            Line(key="chain", value="broken", text="broken"),
            Line(key="first broken link", value=b.position, text=f"index {b.position}"),
        ),
        findings=(integrity.chain_broken(b, path=baseline, suffix="; nothing was compared"),),
    )


def _behaviour(tools: str | None) -> dict[str, ToolBehaviour]:
    return lock_behaviour(tools) if tools else {}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Comparison:
    """How a baseline is compared: each setting from its flag, else the config's, else the default."""

    tools: str | None = None
    mutators: frozenset[str] = DEFAULT_MUTATORS
    max_age_days: int | None = None
    #: what changed per tool between the lock and the config's tools_source (empty without both)
    explain: Mapping[str, str] = field(default_factory=dict)
    policy: FailPolicy
    volatile: tuple[Rule, ...] = ()
    #: the time the rules' patterns may take on one file (the config's pattern_budget_seconds)
    pattern_budget: float = DEFAULT_BUDGET_SECONDS

    def judging(self) -> Judging:
        """What the baseline and the runs are judged with: these settings, as ``check`` judges."""
        return Judging(
            mutators=self.mutators,
            behaviour=_behaviour(self.tools),
            volatile=self.volatile,
            pattern_budget=self.pattern_budget,
            explain=self.explain,
        )


def _configured(
    config_file: str | None,
    tools: str | None,
    mutators: tuple[str, ...],
    max_age_days: int | None = None,
    fail_on: str | None = None,
    *,
    gated: bool = False,
    base: str | None = None,
) -> _Comparison:
    """The comparison's settings; which findings fail (``--fail-on``, else ``fail_on``; the config's
    is said to be used only for a ``gated`` command, one that exits by it). Measured from where a
    pull request against ``base`` starts, the base commit's settings judge, as ``check --base``'s."""
    config = read_config(config_file)
    if config is not None and base is not None:
        pull = PullRange(base=base, head="HEAD")
        config = judged_config(config, pull, workspace=str(config.root), tree=False).config
    used: list[str] = []
    flags = _Comparison(
        tools=tools,
        mutators=frozenset(mutators) if mutators else DEFAULT_MUTATORS,
        max_age_days=max_age_days,
        policy=fail_policy(config, fail_on, used if gated else []),
    )
    comparison = flags if config is None else _with_config(flags, config, bool(mutators), used)
    announce(config, used)
    return comparison


def _with_config(flags: _Comparison, config: Config, mutators_given: bool, used: list[str]) -> _Comparison:
    """The config's settings where the flags leave them out, each one used named in ``used``."""
    tools = _lock_setting(flags.tools, config, used)
    chosen = _mutators_setting(flags.mutators, config, mutators_given, used)
    max_age_days = _max_age_setting(flags.max_age_days, config, used)
    explain = _source_explanations(config, tools, chosen, used)
    if config.volatile:
        used.append("volatile")
    return replace(
        flags,
        tools=tools,
        mutators=chosen,
        max_age_days=max_age_days,
        explain=explain,
        volatile=config.volatile,
        pattern_budget=config.pattern_budget_seconds,
    )


def _lock_setting(tools: str | None, config: Config, used: list[str]) -> str | None:
    """``--tools``, else the config's tools_lock."""
    if tools is not None or config.tools_lock is None:
        return tools
    used.append("tools_lock")
    return config_path(config, config.tools_lock)


def _mutators_setting(
    mutators: frozenset[str], config: Config, given: bool, used: list[str]
) -> frozenset[str]:
    """The ``--mutator`` tools, else the config's mutators (the default list unless it declares them;
    over a pull request's range, the base commit's)."""
    if given:
        return mutators
    if "mutators" in config.declared:
        used.append("mutators")
    return config.mutators


def _max_age_setting(max_age_days: int | None, config: Config, used: list[str]) -> int | None:
    """``--max-age-days``, else the config's max_baseline_age_days."""
    if max_age_days is not None or config.max_baseline_age_days is None:
        return max_age_days
    used.append("max_baseline_age_days")
    return config.max_baseline_age_days


def _source_explanations(
    config: Config, tools: str | None, mutators: frozenset[str], used: list[str]
) -> dict[str, str]:
    """What changed, per tool, between the lock and the config's tools_source as it is now (nothing
    without both)."""
    if config.tools_source is None or tools is None:
        return {}
    used.append("tools_source")
    source, _ = source_lock(config.tools_source, root=config.root, mutators=mutators)
    return explain_drift(load_lock(tools), source)


@click.command(name="diff")
@click.argument("baseline")
@click.argument("runs", metavar="RUN...", nargs=-1, required=True)
@click.option("--tools", "tools", metavar="LOCK", help="Tool lock: live fingerprints and declared behaviour.")
@click.option(
    "--mutator",
    "mutators",
    multiple=True,
    metavar="TOOL",
    help="A tool that changes state (repeatable; replaces the default list; a lock's mutates wins).",
)
@click.option(
    "--max-age-days",
    type=click.IntRange(min=0),
    metavar="N",
    help="Report the baseline stale when its last git commit is more than N days old.",
)
@fail_on_option
@config_option
@format_option
@click.pass_context
def diff_cmd(
    ctx: click.Context,
    baseline: str,
    runs: tuple[str, ...],
    tools: str | None,
    mutators: tuple[str, ...],
    max_age_days: int | None,
    fail_on: str | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Compare each RUN with the sealed BASELINE, call by call.

    Reports agent, tool, contract-text, behavior and effect drift, mutating calls whose
    effect cannot be audited, and a determinism verdict per tool. Several RUNs are also compared with
    each other. Exit 1 when a finding of a kind in --fail-on (or the config's fail_on;
    default: every kind but the advisory ones) is reported, 0 when every run is faithful.

    --tools, --mutator, --max-age-days and --fail-on default to the config's tools_lock,
    mutators, max_baseline_age_days and fail_on (the nearest config, or --config).
    """

    regular_baseline(baseline)
    comparison = _configured(config_file, tools, mutators, max_age_days, fail_on, gated=True)
    judging = comparison.judging()
    volatile = judging.masking()
    with judging.store(volatile) as store:
        # calls as digests (docs/spec.md §3.4 compares canonical texts): memory stays the same
        # whatever the size of the baseline and the runs
        table, state = _baseline_table(store, baseline)
        if state.broken:
            ctx.exit(emit_gated([_broken_report(baseline, state)], fmt, comparison.policy))
        freshness = _freshness(baseline, comparison.max_age_days)
        run_tables = [(path, read_table(store, path, sealed=_is_sealed(path))) for path in runs]
        result = diff_tables(table, run_tables, judging)
    reports = _diff_reports(baseline, state, freshness, result, volatile)
    # the exit code follows the findings: every reason to fail is one the reports show
    ctx.exit(emit_gated(reports, fmt, comparison.policy))


def _diff_reports(
    baseline: str, state: ChainState, freshness: Freshness | None, result: DiffResult, volatile: Volatile
) -> list[Report]:
    """A report per run; a stale baseline is a finding told once, in the first run's block, located
    at the baseline."""
    stale = [integrity.stale_baseline(freshness, path=baseline)] if freshness and freshness.stale else []
    return [
        _run_report(
            baseline,
            state,
            freshness,
            run,
            result,
            stale if n == 0 else (),
            volatile.counts(baseline, run.path) if volatile else None,
        )
        for n, run in enumerate(result.runs)
    ]


def _freshness(baseline: str, max_age_days: int | None) -> Freshness | None:
    """The baseline's age against its limit, when it has one."""
    if max_age_days is None:
        return None
    return check_freshness(last_commit_time(baseline), now=int(time.time()), max_age_days=max_age_days)


# --- note ------------------------------------------------------------------------------


def _head_of(data: bytes, label: str) -> tuple[list[Record], str]:
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


@click.command(name="note")
@click.argument("baseline")
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="RUN",
    help="Compare the committed baseline with this run to fill kinds and tools (repeatable).",
)
@click.option("--tools", "tools", metavar="LOCK", help="Tool lock for the comparison (as in diff).")
@click.option(
    "--mutator",
    "mutators",
    multiple=True,
    metavar="TOOL",
    help="A tool that changes state, for the comparison (as in diff).",
)
@click.option(
    "--base",
    metavar="REF",
    help="Measure from the baseline as committed where a pull request against REF starts (as check --base).",
)
@click.option(
    "-o", "--output", help="Write the note here (atomically) instead of stdout; an existing note is kept."
)
@force_option
@config_option
def note_cmd(
    baseline: str,
    runs: tuple[str, ...],
    tools: str | None,
    mutators: tuple[str, ...],
    base: str | None,
    output: str | None,
    force: bool,
    config_file: str | None,
) -> None:
    """Write a drift-note template accepting the change to BASELINE.

    The note's from is the head of BASELINE as committed in git HEAD (the genesis value
    when it is new), its to the head as it is now (left out when it is deleted); a
    baseline unchanged since HEAD is refused (exit 2). With --base REF, from is the head
    as committed where the pull request starts (the merge base of REF and HEAD), so a
    baseline re-sealed and committed in the pull request gets its note. Its kinds and tools come from
    comparing the committed baseline with each --run, or, without --run, with the
    baseline as it is now. The reason is left for you to write.
    --tools and --mutator default to the config's, as check reads them.
    """

    regular_baseline(baseline)
    file = _to_file(output)
    if file is not None and not force and os.path.isfile(file):
        # before the work: an earlier note's reasoning is never replaced by a template
        raise InputError(EXISTS, path=output)
    comparison = _configured(config_file, tools, mutators, base=base)
    heads = _baseline_heads(baseline, base)
    compared = _compared_runs(heads, runs)
    drift = _drift_found(heads.before_records, compared, comparison) if compared else _NoteDrift()
    text = _note_of(heads, drift)
    if file is not None and os.path.dirname(file):
        os.makedirs(os.path.dirname(file), exist_ok=True)  # the notes folder may not exist yet
    with atomic_output(output, replace=force) as out:
        out.write(text)


def _note_of(heads: _BaselineHeads, drift: _NoteDrift, reason: str | None = None) -> str:
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


def _to_file(output: str | None) -> str | None:
    """The file ``-o`` names (None for standard output)."""
    return output if output and output != "-" else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _BaselineHeads:
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


def _baseline_heads(
    baseline: str, base: str | None = None, now: tuple[list[Record] | None, str | None] | None = None
) -> _BaselineHeads:
    """A baseline's head in HEAD, or where a pull request against ``base`` starts (the genesis value
    when new), and now (``now``: its records and head to be, else as on disk); refused when unchanged."""
    heads, since = _measured_heads(baseline, base, now)
    if heads.after is not None and heads.after == heads.before:
        raise InputError(
            f"is unchanged since {since} (from == to, head {heads.before}): there is no drift to accept;"
            " re-seal the baseline first, then write its note",
            path=baseline,
        )
    return heads


def _measured_heads(
    baseline: str, base: str | None, now: tuple[list[Record] | None, str | None] | None
) -> tuple[_BaselineHeads, str]:
    """A baseline's heads as :func:`_baseline_heads` measures them, changed or not; and how
    messages name where they are measured from."""
    name = repo_path(baseline)
    rev, since = _measured_from(baseline, base)
    blob = committed_blob(baseline, rev)
    label = f"{rev[:12]}:{name}"  # (HEAD, or a commit's short id)
    before_records, before = _head_of(blob, label) if blob is not None else ([], GENESIS)
    if now is None and not os.path.exists(baseline) and blob is None:
        raise InputError(
            f"no such file, and not in {'git HEAD' if base is None else since} either", path=baseline
        )
    after_records, after = _now(baseline) if now is None else now
    heads = _BaselineHeads(
        path=baseline,
        name=name,
        committed=blob is not None,
        before_records=before_records,
        before=before,
        after_records=after_records,
        after=after,
    )
    return heads, since


def accepting_notes(
    files: Sequence[tuple[str, bytes]],
    *,
    run: str,
    base: str | None,
    config_file: str | None,
    reason: str,
) -> list[tuple[str, str]]:
    """The drift notes accepting each of ``files`` (a path and its bytes to be; the baseline first)
    with ``reason``, for ``accept``: kinds and tools from comparing the baseline as measured with
    ``run``, as ``note --run`` does; a file unchanged since then gets none. (path, text) each."""
    comparison = _configured(config_file, None, ())
    notes: list[tuple[str, str]] = []
    drift = _NoteDrift()
    for number, (path, data) in enumerate(files):
        records, head = _head_of(data, path)
        heads, _ = _measured_heads(path, base, (records, head))
        if number == 0 and heads.committed:
            drift = _drift_found(heads.before_records, [(run, records)], comparison)
        if heads.after == heads.before:
            continue
        text = _note_of(heads, drift, reason)
        notes.append((heads.name, text))
    return notes


def _measured_from(baseline: str, base: str | None) -> tuple[str, str]:
    """The commit a note measures from (HEAD, or where a pull request against ``base`` starts),
    and how messages name it."""
    if base is None:
        return "HEAD", "HEAD"
    rev = merge_base(baseline, base)
    return rev, f"the merge base of {quote(base)} and HEAD ({rev[:12]})"


def _now(baseline: str) -> tuple[list[Record] | None, str | None]:
    """The baseline's records and head as it is now; None for both when it is deleted."""
    if not os.path.exists(baseline):
        return None, None
    return _head_of(read_input(baseline), baseline)


def _compared_runs(heads: _BaselineHeads, runs: Sequence[str]) -> list[tuple[str, list[Record]]]:
    """What the committed baseline is compared with: the runs given, else the baseline as it is now."""
    if not heads.committed:
        return []  # a new baseline: nothing drifted from anything
    if runs:
        return [(path, _read_run(path)) for path in runs]
    if heads.after_records is not None:
        return [(heads.path, heads.after_records)]
    return []


@dataclass(frozen=True, slots=True, kw_only=True)
class _NoteDrift:
    """What a comparison found, for a note's kinds, tools and summary."""

    kinds: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    found: tuple[str, ...] = ()


def _drift_found(
    before: list[Record], compared: list[tuple[str, list[Record]]], comparison: _Comparison
) -> _NoteDrift:
    """The comparison of the committed baseline with the runs, as a note words it."""
    result = diff_baseline(before, compared, comparison.judging())
    findings = [(run.path, f) for run in result.runs for f in sort_findings(list(run.findings))]
    return _NoteDrift(
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


# --- signatures ------------------------------------------------------------------------


@click.command(name="sign")
@click.argument("sealed")
@click.option("--key", "key_path", required=True, metavar="PRIV", help="Ed25519 private key (PEM).")
@click.option("-o", "--output", metavar="SIG", help="Signature file (default: SEALED.sig; - for stdout).")
@force_option
@click.pass_context
def sign_cmd(ctx: click.Context, sealed: str, key_path: str, output: str | None, force: bool) -> None:
    """Write a detached signature (DSSE, Ed25519) over SEALED's head digest and link count."""

    key = signing.load_private_key(key_path)
    state = verify(read_links(sealed))
    if state.broken:
        b = state.broken
        click.echo(
            f"toolreplay: {one_line(sealed)}:{b.line}: not signed: the chain is broken at index"
            f" {b.position} ({b.reason}); run toolreplay verify",
            err=True,
        )
        ctx.exit(EXIT_FINDINGS)
    envelope = signing.sign(signing.Statement(head=state.head, count=state.links), key)
    with atomic_output(sealed + ".sig" if output is None else output, replace=force) as out:
        out.write(envelope)


@click.command(name="keygen")
@click.argument("private")
@click.option("--public", metavar="PUB", help="Where to write the public key (default: PRIVATE.pub).")
def keygen_cmd(private: str, public: str | None) -> None:
    """Make an Ed25519 key pair for sign / verify --key: PRIVATE and PRIVATE.pub (PEM).

    Existing files are never overwritten. The private key is written readable by you only.
    """

    public = public or private + ".pub"
    if os.path.abspath(private) == os.path.abspath(public):
        # the public key would be written where the private one was just put: the pair lost
        # (two existing files, even one file by two names, are refused below as existing)
        raise click.UsageError(f"PRIVATE and --public name the same file ({one_line(public)})")
    for path in (private, public):
        if os.path.exists(path):
            raise InputError("already exists; not overwriting a key", path=path)
    private_pem, public_pem = signing.generate_keypair()
    # nested: when either file cannot be written, neither is renamed into place
    with atomic_output(private, private=True) as private_out, atomic_output(public) as public_out:
        private_out.write(private_pem.decode("ascii"))
        public_out.write(public_pem.decode("ascii"))
    if sys.platform != "win32":
        os.chmod(public, 0o644)
    click.echo(f"private key: {private} (keep it secret; sign with it)")
    click.echo(f"public key: {public} (commit it; verify --key with it)")
    click.echo(f"keyid: {signing.keyid(signing.load_public_key(public))}")
