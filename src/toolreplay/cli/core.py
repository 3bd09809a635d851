"""Core commands: seal and verify."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

import click

from toolreplay import parallel
from toolreplay.analyses import integrity
from toolreplay.chain import Break, ChainState, seal_lines, verify_stream
from toolreplay.cli.base import atomic_output, force_option
from toolreplay.cli.defaults import announce, config_option, read_config
from toolreplay.cli.formats import emit, format_option
from toolreplay.errors import InputError
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.findings import Finding, Line, Report, sort_findings
from toolreplay.transcript import open_input

if TYPE_CHECKING:
    from toolreplay.config import Config

#: the signature's part of verify's report, given the chain's state (a line, and its finding)
SignatureAnchor = Callable[[str, ChainState], tuple[Line, list[Finding]]]


@click.command(name="seal")
@click.argument("transcript")
@click.option("-o", "--output", help="Write here (atomically) instead of stdout.")
@force_option
@click.pass_context
def seal_cmd(ctx: click.Context, transcript: str, output: str | None, force: bool) -> None:
    """Print TRANSCRIPT sealed into a SHA-256 hash chain.

    With -o OUT named *.sealed.jsonl, TRANSCRIPT's session file (TRANSCRIPT.mcp, what serve
    answers besides the calls) is sealed into OUT.mcp with it: one sealed unit.
    """
    session = _session_of(transcript, output)
    with atomic_output(output, replace=force) as out:
        if session is None or output is None:
            _seal(transcript, out)
            return
        with atomic_output(session_path(output), replace=force) as session_out:
            _seal_in_order(session, session_out)
            _seal(transcript, out)


def _seal(transcript: str, out: IO[str]) -> None:
    """Seal ``transcript`` into ``out``: on every core when the file is worth it, else in order."""
    parallel_done = (
        transcript != "-" and parallel.worth_it(transcript) and _sealed_in_parallel(transcript, out)
    )
    if not parallel_done:
        _seal_in_order(transcript, out)


def _session_of(transcript: str, output: str | None) -> str | None:
    """The session file ``seal`` carries to ``output``'s (docs/spec.md §1.3): TRANSCRIPT's, when it
    has one and ``output`` is a sealed file's name (serve reads a sealed recording's session sealed)."""
    if transcript == "-" or output is None or not output.endswith(SEALED_SUFFIX):
        return None
    beside = session_path(transcript)
    return beside if os.path.lexists(beside) else None


def _sealed_in_parallel(transcript: str, out: IO[str]) -> bool:
    """Seal a large file on every core; False (and nothing written) when a range is in doubt."""
    try:
        for block in parallel.seal_blocks(transcript):
            out.write(block)
    except parallel.Fallback:
        out.seek(0)
        out.truncate()
        return False
    return True


def _seal_in_order(transcript: str, out: IO[str]) -> None:
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
    # the loader (tomllib, pathlib) only here: verify SEALED reads no config
    from toolreplay.config import config_path, expand

    config = _config_with_baselines(config_file, anchored=anchored)
    announce(config, ["baselines"])
    found = [p for p in expand(config, config.baselines) if p.endswith(SEALED_SUFFIX)]
    _refuse_unjudged(config, found)
    return [config_path(config, p) for p in found]


def _config_with_baselines(config_file: str | None, *, anchored: bool) -> Config:
    """The config, when it names baselines to verify and no anchor is given (each anchors one file)."""
    config = read_config(config_file)
    if config is None or not config.baselines:
        raise click.UsageError(
            "give SEALED, or set baselines in the config ([tool.toolreplay] or toolreplay.toml)"
        )
    if anchored:
        raise click.UsageError("anchors (--expect-head, --expect-count, --key) need one SEALED")
    return config


def _refuse_unjudged(config: Config, paths: list[str]) -> None:
    """Refuse the first of ``paths`` that ``check`` would not read as a baseline."""
    from toolreplay.config import config_path
    from toolreplay.driftnotes.settings import unjudged_baseline

    for path in paths:
        refused = unjudged_baseline(config, path)
        if refused is not None:
            raise InputError(refused, path=config_path(config, path))


def _verify_report(
    sealed: str, expect_head: str | None, expect_count: int | None, key: str | None, signature: str | None
) -> Report:
    signed = _signature_check(sealed, key, signature)
    state = _verify(sealed)
    if state.broken:
        header = _broken_header(state.broken)
        findings = [integrity.chain_broken(state.broken, path=sealed)]
    else:
        header = [
            Line(key="chain", value="intact", text="intact"),
            Line(key="links", value=state.links, text=str(state.links)),
            Line(key="head", value=state.head, text=state.head),
            _anchor_line(state, expect_head, expect_count, signed=signed is not None),
        ]
        findings = integrity.anchor_mismatches(
            path=sealed,
            head=state.head,
            links=state.links,
            expect_head=expect_head,
            expect_count=expect_count,
        )
        if signed is not None:
            line, problem = signed(signature or sealed + ".sig", state)
            header.append(line)
            findings += problem
    # the exit code follows the findings, so a failure is never one the reports leave out
    return Report(
        command="verify", path=sealed, header=tuple(header), findings=tuple(sort_findings(findings))
    )


def _signature_check(sealed: str, key: str | None, signature: str | None) -> SignatureAnchor | None:
    """The --key anchor: None without one; a bad key is a usage error before anything else."""
    if key is None:
        if signature is not None:
            raise click.UsageError("--signature needs --key")
        return None
    # cryptography's adapter only now: verify without --key signs nothing (its values cost milliseconds)
    from toolreplay import signing

    public = signing.load_public_key(key)
    if signature is None and sealed == "-":
        raise click.UsageError("--signature is required when SEALED is '-' (stdin)")

    def check(signature_path: str, state: ChainState) -> tuple[Line, list[Finding]]:
        """The signature's line of the header, and its finding when it does not check."""
        statement = signing.Statement(head=state.head, count=state.links)
        outcome = signing.check(signature_path, public, statement)
        if outcome.problem:
            finding = integrity.signature_invalid(outcome.problem, path=sealed, signature=signature_path)
            return Line(key="signature", value="invalid", text=f"invalid: {outcome.problem}"), [finding]
        text = f"valid: head and count signed by key {outcome.keyid}"
        return Line(key="signature", value="valid", text=text), []

    return check


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
    if mismatches:
        text = "mismatch: " + "; ".join(mismatches)
    else:
        text = _matched_anchor(expect_head, expect_count, signed=signed)
    return Line(key="anchor", value=text, text=text)


def _matched_anchor(expect_head: str | None, expect_count: int | None, *, signed: bool) -> str:
    """What anchors a chain that matches every anchor given: those anchors, a signature, or nothing."""
    anchored = [a for a, v in (("head", expect_head), ("count", expect_count)) if v is not None]
    if anchored:
        return " and ".join(anchored) + " match"
    if signed:
        return "signature"
    return (
        "none: the links follow one another, which a cut tail or a re-sealed file"
        " would too; pin the head with --expect-head/--expect-count or git"
    )


def _mismatches(state: ChainState, expect_head: str | None, expect_count: int | None) -> list[str]:
    """The anchors given that the chain does not match."""
    mismatches: list[str] = []
    if expect_head is not None and expect_head != state.head:
        mismatches.append(f"head is {state.head}, expected {expect_head}")
    if expect_count is not None and expect_count != state.links:
        mismatches.append(f"{state.links} links, expected {expect_count}")
    return mismatches
