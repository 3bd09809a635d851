"""Core commands: seal, verify, replay."""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import click

from toolreplay import parallel
from toolreplay.analyses import integrity
from toolreplay.chain import Break, ChainState, seal_lines, verify_stream
from toolreplay.cli.base import atomic_output, force_option
from toolreplay.cli.defaults import announce, config_option, mutators_and_lock, read_config, volatile_of
from toolreplay.cli.formats import emit, format_option
from toolreplay.findings import Finding, sort_findings
from toolreplay.reports import Line, Report, masked_line, replay_header
from toolreplay.transcript import open_input

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from toolreplay.analyses.replay import Call, ReplayResult
    from toolreplay.analyses.volatile import Volatile


@click.command(name="seal")
@click.argument("transcript")
@click.option("-o", "--output", help="Write here (atomically) instead of stdout.")
@force_option
@click.pass_context
def seal_cmd(ctx: click.Context, transcript: str, output: str | None, force: bool) -> None:
    """Print TRANSCRIPT sealed into a SHA-256 hash chain."""
    with atomic_output(output, replace=force) as out:
        if transcript != "-" and parallel.worth_it(transcript):
            try:
                for block in parallel.seal_blocks(transcript):
                    out.write(block)
                return
            except parallel.Fallback:
                out.seek(0)
                out.truncate()
        stream = open_input(transcript)
        try:
            for line in seal_lines(stream, transcript):
                out.write(line + "\n")
        finally:
            if transcript != "-":
                stream.close()


def _verify(sealed: str) -> ChainState:
    if sealed != "-" and parallel.worth_it(sealed):
        try:
            links, head = parallel.verify_head(sealed)
            return ChainState(links=links, head=head, broken=None)
        except parallel.Fallback:
            pass  # the sequential walk names the first link that does not follow
    stream = open_input(sealed)
    try:
        return verify_stream(stream, sealed)
    finally:
        if sealed != "-":
            stream.close()


def _digest(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    if not re.fullmatch("[0-9a-fA-F]{64}", value):
        raise click.BadParameter("must be a SHA-256 digest (64 hex digits)")
    return value.lower()


@click.command(name="verify")
@click.argument("sealed", required=False)
@click.option(
    "--expect-head",
    metavar="DIGEST",
    callback=_digest,
    help="Anchor: the head digest the chain must end on.",
)
@click.option(
    "--expect-count", type=click.IntRange(min=0), metavar="N", help="Anchor: how many links there must be."
)
@click.option("--key", "key", metavar="PUB", help="Anchor: check the signature with this Ed25519 public key.")
@click.option("--signature", metavar="SIG", help="Signature file for --key (default: SEALED.sig).")
@config_option
@format_option
@click.pass_context
def verify_cmd(
    ctx: click.Context,
    sealed: str | None,
    expect_head: str | None,
    expect_count: int | None,
    key: str | None,
    signature: str | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Recompute the hash chain of SEALED (default: every baseline the config names, each a
    regular file of the repository as check wants it: a symlink among them is refused).

    A chain alone proves the links follow one another, not that the file is the one
    that was sealed: a cut tail or a re-sealed forgery follows too. Anchor it with
    --expect-head / --expect-count, a head committed in git, or a signature made by
    toolreplay sign (--key).
    """
    if sealed is None:
        anchored = any(v is not None for v in (expect_head, expect_count, key, signature))
        paths = _configured_baselines(config_file, anchored=anchored)
        ctx.exit(emit([_verify_report(path, None, None, None, None) for path in paths], fmt))
    ctx.exit(emit([_verify_report(sealed, expect_head, expect_count, key, signature)], fmt))


def _configured_baselines(config_file: str | None, *, anchored: bool) -> list[str]:
    """The sealed baselines the config names, for verify without SEALED (and so without anchors).

    They are baselines, so what ``check`` refuses to read as one (a symlink, a file under a
    symlinked folder or in a submodule: docs/spec.md §6) is refused here too, before any is read.
    """
    from toolreplay.config import config_path, expand
    from toolreplay.errors import InputError
    from toolreplay.files import SEALED_SUFFIX
    from toolreplay.hooks.settings import unjudged_baseline

    config = read_config(config_file)
    if config is None or not config.baselines:
        raise click.UsageError(
            "give SEALED, or set baselines in the config ([tool.toolreplay] or toolreplay.toml)"
        )
    if anchored:
        raise click.UsageError("anchors (--expect-head, --expect-count, --key) need one SEALED")
    announce(config, ["baselines"])
    found = [p for p in expand(config, config.baselines) if p.endswith(SEALED_SUFFIX)]
    for path in found:
        refused = unjudged_baseline(config, path)
        if refused is not None:
            raise InputError(refused, path=config_path(config, path))
    return [config_path(config, p) for p in found]


def _verify_report(
    sealed: str, expect_head: str | None, expect_count: int | None, key: str | None, signature: str | None
) -> Report:
    public = _public_key(sealed, key, signature)
    state = _verify(sealed)
    if state.broken:
        header = _broken_header(state.broken)
        findings = [integrity.chain_broken(state.broken, path=sealed)]
    else:
        header = [
            Line(key="chain", value="intact", text="intact"),
            Line(key="links", value=state.links, text=str(state.links)),
            Line(key="head", value=state.head, text=state.head),
            _anchor_line(state, expect_head, expect_count, signed=public is not None),
        ]
        findings = integrity.anchor_mismatches(
            path=sealed,
            head=state.head,
            links=state.links,
            expect_head=expect_head,
            expect_count=expect_count,
        )
        if public is not None:
            line, problem = _signature_line(sealed, signature or sealed + ".sig", public, state)
            header.append(line)
            findings += problem
    # the exit code follows the findings, so a failure is never one the reports leave out
    return Report(
        command="verify", path=sealed, header=tuple(header), findings=tuple(sort_findings(findings))
    )


def _public_key(sealed: str, key: str | None, signature: str | None) -> Ed25519PublicKey | None:
    """The --key to check the signature with; a bad key is a usage error before anything else."""
    if key is None:
        if signature is not None:
            raise click.UsageError("--signature needs --key")
        return None
    from toolreplay import signing

    public = signing.load_public_key(key)
    if signature is None and sealed == "-":
        raise click.UsageError("--signature is required when SEALED is '-' (stdin)")
    return public


def _broken_header(b: Break) -> list[Line]:
    return [
        Line(key="chain", value="broken", text="broken"),
        Line(
            key="first_broken_link", label="first broken link", value=b.position, text=f"index {b.position}"
        ),
        Line(key="expected", value=b.expected, text=b.expected),
        Line(key="found", value=b.found, text=b.found),
        Line(key="reason", value=b.reason, text=f"{b.reason} (line {b.line})"),
    ]


def _anchor_line(
    state: ChainState, expect_head: str | None, expect_count: int | None, *, signed: bool
) -> Line:
    """What an intact chain is anchored by: the anchors that match or do not, a signature, or nothing."""
    mismatches = _mismatches(state, expect_head, expect_count)
    anchored = [a for a, v in (("head", expect_head), ("count", expect_count)) if v is not None]
    if mismatches:
        text = "mismatch: " + "; ".join(mismatches)
    elif anchored:
        text = " and ".join(anchored) + " match"
    elif signed:
        text = "signature"
    else:
        text = (
            "none: the links follow one another, which a cut tail or a re-sealed file"
            " would too; pin the head with --expect-head/--expect-count or git"
        )
    return Line(key="anchor", value=text, text=text)


def _mismatches(state: ChainState, expect_head: str | None, expect_count: int | None) -> list[str]:
    """The anchors given that the chain does not match."""
    mismatches: list[str] = []
    if expect_head is not None and expect_head != state.head:
        mismatches.append(f"head is {state.head}, expected {expect_head}")
    if expect_count is not None and expect_count != state.links:
        mismatches.append(f"{state.links} links, expected {expect_count}")
    return mismatches


def _signature_line(
    sealed: str, signature_path: str, public: Ed25519PublicKey, state: ChainState
) -> tuple[Line, list[Finding]]:
    """The signature's line of the header, and its finding when it does not check."""
    from toolreplay import signing

    check = signing.check(signature_path, public, signing.Statement(head=state.head, count=state.links))
    if check.problem:
        finding = integrity.signature_invalid(check.problem, path=sealed, signature=signature_path)
        return Line(key="signature", value="invalid", text=f"invalid: {check.problem}"), [finding]
    text = f"valid: head and count signed by key {check.keyid}"
    return Line(key="signature", value="valid", text=text), []


@click.command(name="replay")
@click.argument("transcript")
@click.option(
    "--mutator",
    "mutators",
    multiple=True,
    metavar="TOOL",
    help="A tool that changes state (repeatable; replaces the default list and the config's mutators).",
)
@click.option(
    "--state-aware/--no-state-aware",
    default=None,
    help="Do not report non-determinism across a call to a mutator (default: the config's"
    " state_aware, else off, as in 0.6).",
)
@click.option(
    "--tools",
    "lock_path",
    metavar="LOCK",
    help="Tool lock (default: the config's tools_lock): its mutates flags decide for the tools it"
    " names, and tools it declares not deterministic are not reported for non-determinism.",
)
@config_option
@format_option
@click.pass_context
def replay_cmd(
    ctx: click.Context,
    transcript: str,
    mutators: tuple[str, ...],
    state_aware: bool | None,
    lock_path: str | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Replay TRANSCRIPT against itself: non-determinism and redundant calls.

    A call to a mutator (a --mutator tool, the config's mutators, a tool the lock says
    mutates, or any call that recorded its state) is never redundant. Non-determinism is
    reported across mutators unless --state-aware (0.6's default; check is state-aware).
    """
    # here, not at the top: verify and seal, in the same module, judge no calls
    from toolreplay.analyses.replay import replay_calls

    chosen, state_aware, nondeterministic, volatile = _replay_settings(
        config_file, mutators, lock_path, state_aware
    )
    judge = functools.partial(
        replay_calls,
        mutators=chosen,
        state_aware=bool(state_aware),
        nondeterministic=nondeterministic,
        path=transcript,
    )
    result = _replay(transcript, judge, volatile)
    findings = sort_findings(result.findings)
    header = replay_header(result.calls, result.divergence, len(findings))
    if volatile is not None:
        header += (masked_line(volatile.counts(transcript)),)
    report = Report(command="replay", path=transcript, header=header, findings=tuple(findings))
    code = emit([report], fmt)
    if result.across_mutators and fmt == "text":
        # the report keeps 0.6's lines byte for byte; the knob is named beside it, on stderr
        click.echo(
            f"toolreplay: note: {result.across_mutators} non-determinism finding(s) compare calls with a"
            " mutator between them (0.6's default); --state-aware, or state_aware = true in the config,"
            " compares only calls with no state change between them",
            err=True,
        )
    ctx.exit(code)


def _replay_settings(
    config_file: str | None, mutators: tuple[str, ...], lock_path: str | None, state_aware: bool | None
) -> tuple[frozenset[str], bool | None, frozenset[str], Volatile | None]:
    """(mutators, state-aware, tools declared not deterministic, volatile rules): the flags, else
    the config's and its lock's."""
    config = read_config(config_file)
    used: list[str] = []
    chosen, lock_path = mutators_and_lock(config, mutators, lock_path, used)
    if config is not None and state_aware is None and config.state_aware is not None:
        state_aware = config.state_aware
        used.append("state_aware")
    volatile = volatile_of(config, used)
    announce(config, used)
    if lock_path is None:
        return chosen, state_aware, frozenset(), volatile
    from toolreplay.contracts.lock import declared_mutators, declared_nondeterministic, load_lock

    lock = load_lock(lock_path)
    return declared_mutators(lock, chosen), state_aware, declared_nondeterministic(lock), volatile


def _replay(
    transcript: str, judge: Callable[[Iterable[Call]], ReplayResult], volatile: Volatile | None
) -> ReplayResult:
    """Judge a transcript's calls, on every core when the file is worth it (and no volatile
    rule masks: the parallel reader's workers digest the raw texts)."""
    from toolreplay.analyses.replay import read_calls

    if volatile is None and transcript != "-" and parallel.worth_it(transcript):
        # a refused line or an index out of order: the sequential reader names it
        with contextlib.suppress(parallel.Fallback):
            return judge(parallel.file_calls(transcript))
    return judge(read_calls(transcript, volatile))
