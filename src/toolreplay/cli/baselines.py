"""Baseline commands: diff, note, sign, keygen (docs/spec.md §1.3, §1.6, §3.4)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import click

from toolreplay import signing
from toolreplay.analyses import integrity
from toolreplay.analyses.baseline import DiffResult, RunDiff, diff_tables
from toolreplay.analyses.calltable import CallTable, Store, open_twice, read_table
from toolreplay.analyses.fingerprint_diff import explain_drift
from toolreplay.analyses.freshness import Freshness, check_freshness
from toolreplay.analyses.judging import Judging, ToolBehaviour, lock_behaviour
from toolreplay.analyses.volatile import Volatile
from toolreplay.chain import ChainState, verify, verify_stream
from toolreplay.cli.base import EXISTS, EXIT_FINDINGS, atomic_output, force_option, mutator_option
from toolreplay.cli.defaults import announce, config_option, mutators_and_lock, read_config, setting
from toolreplay.cli.formats import format_option
from toolreplay.cli.gate import emit_gated, fail_on_option, fail_policy
from toolreplay.config import DEFAULT_MUTATORS, Config
from toolreplay.contracts.lock import load_lock
from toolreplay.contracts.source import source_lock
from toolreplay.driftnotes.base_settings import PullRange, judged_config
from toolreplay.driftnotes.write import draft_note
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, Line, Report, masked_line, sort_findings
from toolreplay.gate import FailPolicy
from toolreplay.git import last_commit_time, regular_baseline
from toolreplay.limits import DEFAULT_BUDGET_SECONDS
from toolreplay.transcript import read_links
from toolreplay.volatile_rules import Rule


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


def configured_comparison(
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
    config = _judging_config(config_file, base)
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


def _judging_config(config_file: str | None, base: str | None) -> Config | None:
    """The config, or with ``base`` the settings of the commit a pull request against it starts from."""
    config = read_config(config_file)
    if config is None or base is None:
        return config
    pull = PullRange(base=base, head="HEAD")
    return judged_config(config, pull, workspace=str(config.root), tree=False).config


def _with_config(flags: _Comparison, config: Config, mutators_given: bool, used: list[str]) -> _Comparison:
    """The config's settings where the flags leave them out, each one used named in ``used``."""
    chosen, tools = mutators_and_lock(
        config, tuple(flags.mutators) if mutators_given else (), flags.tools, used
    )
    max_age_days = setting(flags.max_age_days, config, "max_baseline_age_days", used)
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
@mutator_option
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
    comparison = configured_comparison(config_file, tools, mutators, max_age_days, fail_on, gated=True)
    judging = comparison.judging()
    volatile = judging.masking()
    with judging.store(volatile) as store:
        # calls as digests (docs/spec.md §3.4 compares canonical texts): memory stays the same
        # whatever the size of the baseline and the runs
        table, state = _baseline_table(store, baseline)
        if state.broken:
            ctx.exit(emit_gated([_broken_report(baseline, state)], fmt, comparison.policy))
        freshness = _freshness(baseline, comparison.max_age_days)
        run_tables = [(path, read_table(store, path, sealed=path.endswith(SEALED_SUFFIX))) for path in runs]
        result = diff_tables(table, run_tables, judging)
    reports = _diff_reports(baseline, state, freshness, result, volatile)
    # the exit code follows the findings: every reason to fail is one the reports show
    ctx.exit(emit_gated(reports, fmt, comparison.policy))


def _diff_reports(
    baseline: str, state: ChainState, freshness: Freshness | None, result: DiffResult, volatile: Volatile
) -> list[Report]:
    """A report per run; a stale baseline is a finding told once, in the first run's block, located
    at the baseline."""
    stale = _stale(baseline, freshness)
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


def _stale(baseline: str, freshness: Freshness | None) -> list[Finding]:
    """The stale-baseline finding, when the baseline is older than its limit."""
    return [integrity.stale_baseline(freshness, path=baseline)] if freshness and freshness.stale else []


def _freshness(baseline: str, max_age_days: int | None) -> Freshness | None:
    """The baseline's age against its limit, when it has one."""
    if max_age_days is None:
        return None
    return check_freshness(last_commit_time(baseline), now=int(time.time()), max_age_days=max_age_days)


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
@mutator_option
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
    if not force:
        _check_no_note(file, output)
    judging = configured_comparison(config_file, tools, mutators, base=base).judging  # built if compared
    text = draft_note(baseline, runs=runs, base=base, judging=judging)
    if file is not None and os.path.dirname(file):
        os.makedirs(os.path.dirname(file), exist_ok=True)  # the notes folder may not exist yet
    with atomic_output(output, replace=force) as out:
        out.write(text)


def _check_no_note(file: str | None, output: str | None) -> None:
    """Refuse, before the work, a note file that exists: an earlier note's reasoning is never
    replaced by a template."""
    if file is not None and os.path.isfile(file):
        raise InputError(EXISTS, path=output)


def _to_file(output: str | None) -> str | None:
    """The file ``-o`` names (None for standard output)."""
    return output if output and output != "-" else None


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
    _check_key_files(private, public)
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


def _check_key_files(private: str, public: str) -> None:
    """Two names for the new key pair, neither an existing file."""
    if os.path.abspath(private) == os.path.abspath(public):
        # the public key would be written where the private one was just put: the pair lost
        # (two existing files, even one file by two names, are refused below as existing)
        raise click.UsageError(f"PRIVATE and --public name the same file ({one_line(public)})")
    for path in (private, public):
        if os.path.exists(path):
            raise InputError("already exists; not overwriting a key", path=path)
