"""Live capture over MCP: ``serve`` and ``probe`` (docs/capture.md; ``record``: :mod:`toolreplay.cli.record`).

The MCP SDK is imported on first use (:mod:`toolreplay.sdk`), so the CLI works without the
``mcp`` extra; these commands then say how to install it (exit 2).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import click

from toolreplay import sdk
from toolreplay.analyses.fingerprint_diff import text_explained
from toolreplay.analyses.suggest import toml
from toolreplay.capture.listen import Admission, parse_listen
from toolreplay.capture.live import EVERY_CAPABILITY, probe_live, recorded_client
from toolreplay.capture.receipt import (
    NOT_SEALED,
    read_receipt,
    receipt_records,
    repeat_of,
    rules_by_tool,
    suggested,
    write_receipt,
)
from toolreplay.capture.serve import (
    BrokenRecordingError,
    SessionLockError,
    build_server,
    handshake_only,
    load_checked,
    load_records,
    load_session,
    miss_log,
)
from toolreplay.capture.serving import serve_http, serve_stdio
from toolreplay.cli.base import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    Seconds,
    allow_origin_option,
    atomic_output,
    force_option,
    mutator_option,
    plural,
    warn,
)
from toolreplay.cli.defaults import (
    announce,
    config_option,
    config_shown,
    mutators_and_lock,
    read_config,
    volatile_of,
)
from toolreplay.cli.formats import format_option
from toolreplay.cli.gate import emit_gated, fail_on_option, fail_policy
from toolreplay.cli.record import require_sdk
from toolreplay.contracts.lock import declared_nondeterministic, load_lock
from toolreplay.errors import InputError
from toolreplay.escape import inert, one_line, quote
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.findings import Line, Report, masked_line, receipt_line
from toolreplay.library.failures import ToolDriftError
from toolreplay.limits import MAX_REPEAT

if TYPE_CHECKING:
    from toolreplay.analyses.volatile import Volatile
    from toolreplay.capture.live import Declared, Live
    from toolreplay.capture.probe import Answer, Plan, ProbeResult, Receipted
    from toolreplay.config import Config
    from toolreplay.contracts.lock import ToolLock
    from toolreplay.transcript import Record


@click.command(name="serve")
@click.argument("transcript")
@click.option(
    "--lock", "lock_path", metavar="LOCK", help="Refuse to start unless the recording matches this lock."
)
@click.option(
    "--listen", metavar="HOST:PORT", help="Serve Streamable HTTP at http://HOST:PORT/mcp, not stdio."
)
@allow_origin_option
@click.option(
    "--misses",
    "misses_path",
    metavar="FILE",
    help="Also append each call that misses to FILE, one JSON line {tool, args} each.",
)
@config_option
@click.pass_context
def serve_cmd(
    ctx: click.Context,
    transcript: str,
    lock_path: str | None,
    listen: str | None,
    origins: tuple[str, ...],
    misses_path: str | None,
    config_file: str | None,
) -> None:
    """Answer MCP tool calls from TRANSCRIPT, running nothing (stdio by default).

    Identical calls get the recorded responses in order (the last one again after
    that); a call that was not recorded gets a tool error starting "snapshot miss:".
    An argument the config's volatile rules mask does not count for matching.
    With LOCK, a recording whose fingerprints differ from it is refused (exit 1).
    """
    require_sdk("serve")

    http = _http_listening(listen, origins)
    lock = load_lock(lock_path) if lock_path is not None else None
    config = read_config(config_file)
    used: list[str] = []
    volatile = volatile_of(config, used)
    announce(config, used)
    try:
        records, session = load_checked(transcript, lock)
    except (ToolDriftError, BrokenRecordingError, SessionLockError) as err:
        _refused(ctx, err)
    server = build_server(
        records,
        lock,
        session,
        miss_log(misses_path) if misses_path is not None else None,
        volatile=volatile,
        path=transcript,
    )
    calls = plural(len(records), "recorded call")

    def ready(where: str) -> None:  # one line, so a CI job can wait for it
        click.echo(f"toolreplay: serving {inert(one_line(transcript))} ({calls}) at {where}", err=True)

    with sdk.logs_routed(_warn_logged):
        if http is None:
            ready("stdio")
            serve_stdio(server, handshake=handshake_only(session))
        else:
            (host, port), admission = http
            serve_http(server, host, port, admission, ready=ready)


def _http_listening(listen: str | None, origins: tuple[str, ...]) -> tuple[tuple[str, int], Admission] | None:
    """``--listen``'s address and who it admits (``--allow-origin``); None to serve stdio."""
    if listen is None:
        if origins:
            raise click.UsageError("--allow-origin goes with --listen")
        return None
    address = parse_listen(listen)
    return address, Admission.of(address[0], origins)


def _refused(ctx: click.Context, err: Exception) -> NoReturn:
    """A recording that cannot be served or probed as it is: one error line, exit 1."""
    click.echo(f"toolreplay: error: {inert(one_line(str(err)))}", err=True)
    ctx.exit(EXIT_FINDINGS)


def _warn_logged(record: logging.LogRecord) -> None:
    """What the SDK logs while serving (a client's message it refuses, say) as one warning line:
    its traceback, which quotes what the client sent, left out."""
    warn(f"{record.name}: {record.getMessage()}")


@click.command(name="probe")
@click.argument("transcript", required=False)
@click.argument("command", nargs=-1)
@click.option("--target", metavar="URL", help="A Streamable HTTP server to ask instead of starting COMMAND.")
@mutator_option
@click.option(
    "--allow",
    "allowed",
    multiple=True,
    metavar="TOOL",
    help="Re-run TOOL as if it were declared read-only (repeatable); by default only tools the"
    ' server annotates readOnlyHint: true, or the lock declares "mutates": false, are re-run.',
)
@click.option(
    "--sequence",
    is_flag=True,
    help="Replay the whole recording in order, mutators included, against the server COMMAND"
    " starts (it must be disposable), and compare every answer.",
)
@click.option("--lock", "lock_path", metavar="LOCK", help="A tool lock whose mutates flags decide too.")
@click.option(
    "--timeout",
    type=Seconds(),
    default=30.0,
    show_default=True,
    help="Seconds allowed for listing the tools and for each call.",
)
@fail_on_option
@click.option(
    "--repeat",
    type=click.IntRange(min=2, max=MAX_REPEAT),
    metavar="N",
    help="Ask each probed call N times, a second apart: every answer is compared, and a tool the"
    " lock declares deterministic that gives two different answers is silent-drift.",
)
@click.option(
    "--suggest-volatile",
    is_flag=True,
    help="With --repeat: print, as TOML to paste into the config, the volatile rules that make the"
    " N answers of each call compare equal, with the values seen (the config is never written).",
)
@click.option(
    "-o",
    "--output",
    metavar="RECEIPT",
    help="With --repeat: also write a receipt, a sealed transcript (*.sealed.jsonl) of each call's"
    " answer digests, the tools' fingerprints and the server's version.",
)
@force_option
@click.option(
    "--against",
    metavar="RECEIPT",
    help="Ask the calls of RECEIPT (in place of TRANSCRIPT) N times again and compare the digests"
    " of the answers with the receipt's.",
)
@config_option
@format_option
@click.pass_context
def probe_cmd(
    ctx: click.Context,
    transcript: str | None,
    command: tuple[str, ...],
    target: str | None,
    mutators: tuple[str, ...],
    allowed: tuple[str, ...],
    sequence: bool,
    lock_path: str | None,
    timeout: float,
    fail_on: str | None,
    repeat: int | None,
    suggest_volatile: bool,
    output: str | None,
    force: bool,
    against: str | None,
    config_file: str | None,
    fmt: str,
) -> None:
    """Ask a live MCP server again what TRANSCRIPT recorded; report drift (exit 1 for a
    finding of a kind in --fail-on, else the config's fail_on, else every kind).

    The server's tools/list fingerprints are compared with the recorded ones
    (tool-drift); each distinct recorded call of a tool known not to change state
    (readOnlyHint, a lock, --allow), made before any call that may have changed state,
    is asked once (N times with --repeat) and its answer compared with the recording
    (silent-drift); a call that gets no answer is unavailable. Per tool: stable,
    silent-drift, unavailable or not-probed (with the reason). With --against RECEIPT
    (no TRANSCRIPT), the receipt's calls are asked and the digests of their answers
    compared with the receipt's.

    \b
        toolreplay probe run.sealed.jsonl -- python server.py
        toolreplay probe run.sealed.jsonl --target http://127.0.0.1:8000/mcp
        toolreplay probe run.sealed.jsonl --sequence -- python server.py --db /tmp/scratch.db
        toolreplay probe run.sealed.jsonl --repeat 3 -o receipt.sealed.jsonl -- python server.py
        toolreplay probe --against receipt.sealed.jsonl -- python server.py
    """
    require_sdk("probe")

    command = _probe_usage(
        _ProbeForm(
            transcript=transcript,
            command=command,
            target=target,
            sequence=sequence,
            repeat=repeat,
            suggest_volatile=suggest_volatile,
            output=output,
            against=against,
        )
    )
    # the config's mutators and lock decide too: a tool it declares as changing state is
    # never asked again on the live server
    config = read_config(config_file)
    used: list[str] = []
    configured, lock_path = mutators_and_lock(config, mutators, lock_path, used)
    policy = fail_policy(config, fail_on, used)
    # against a receipt, the answers are digested with the rules the receipt holds
    volatile = volatile_of(config, used) if against is None else None
    announce(config, used)
    lock = load_lock(lock_path) if lock_path is not None else None
    source = against if against is not None else str(transcript)
    records, receipt, declared = _probed(ctx, source, against is not None)
    times = _times_asked(repeat, receipt)

    def run() -> tuple[ProbeResult, Live, Plan]:
        return probe_live(
            records,
            target if target is not None else command,
            configured=configured,
            allowed=frozenset(allowed),
            lock=lock,
            sequence=sequence,
            timeout=timeout,
            path=source,
            explain=lambda contracts: text_explained(records, lock, contracts),
            repeat=times,
            volatile=volatile,
            receipt=receipt,
            declared=declared,
        )

    result, live = _run_probe(run, output, force=force, lock=lock, volatile=volatile)
    for problem in live.warnings:
        warn(problem)
    if suggest_volatile:
        click.echo(_suggestions(records, live.repeated or {}, times, config), nl=False)
        ctx.exit(EXIT_CLEAN)
    answers = times if receipt is not None else None
    header = _probe_header(result, volatile, source, answers)
    report = Report(command="probe", path=source, header=header, findings=result.findings)
    ctx.exit(emit_gated([report], fmt, policy))


@dataclass(frozen=True, slots=True, kw_only=True)
class _ProbeForm:
    """Which of probe's forms the command line asks for (what ``_probe_usage`` checks)."""

    transcript: str | None
    command: tuple[str, ...]
    target: str | None
    sequence: bool
    repeat: int | None
    suggest_volatile: bool
    output: str | None
    against: str | None


def _probe_usage(form: _ProbeForm) -> tuple[str, ...]:
    """The server's command line; a usage error for a combination probe does not take."""
    command = _server_command(form)
    if (form.target is None) == (not command):
        raise click.UsageError("give the server's command line after -- or --target URL (one of them)")
    _repeat_usage(form)
    _receipt_usage(form)
    return command


def _repeat_usage(form: _ProbeForm) -> None:
    """A usage error for --sequence, --repeat and what needs --repeat, given together wrongly."""
    if form.sequence and form.target is not None:
        raise click.UsageError("--sequence needs a server it starts afresh: give its command line after --")
    if form.sequence and form.repeat is not None:
        raise click.UsageError("--sequence replays the recording once: --repeat does not go with it")
    if form.repeat is None and (form.suggest_volatile or form.output is not None):
        raise click.UsageError("--suggest-volatile and -o RECEIPT need --repeat N (N answers to compare)")


def _server_command(form: _ProbeForm) -> tuple[str, ...]:
    """The server's command line as given: with ``--against`` (no TRANSCRIPT) the first argument
    starts it; a usage error for a form that names neither or both of TRANSCRIPT and RECEIPT."""
    if form.against is None:
        if form.transcript is None:
            raise click.UsageError("give TRANSCRIPT (the recording to ask again) or --against RECEIPT")
        return form.command
    return _against_command(form)


def _against_command(form: _ProbeForm) -> tuple[str, ...]:
    """With ``--against RECEIPT``: the server's command line, from the first argument on; a usage
    error for TRANSCRIPT given too, or an option that does not go with a receipt."""
    if form.transcript is not None and form.transcript.endswith(".jsonl"):
        raise click.UsageError("--against RECEIPT takes the place of TRANSCRIPT: give one of them")
    if form.output is not None or form.sequence or form.suggest_volatile:
        raise click.UsageError("--against RECEIPT goes with neither -o, --sequence nor --suggest-volatile")
    return (form.transcript, *form.command) if form.transcript is not None else form.command


def _receipt_usage(form: _ProbeForm) -> None:
    """A usage error for an ``-o RECEIPT`` probe cannot write."""
    if form.output is None:
        return
    if form.suggest_volatile:
        raise click.UsageError("--suggest-volatile prints rules, not a report: -o does not go with it")
    if not form.output.endswith(SEALED_SUFFIX):
        raise click.UsageError(f"-o {one_line(form.output)}: {NOT_SEALED}")
    if form.transcript is not None and _same_file(form.output, form.transcript):
        raise click.UsageError("-o RECEIPT must not be TRANSCRIPT itself")


def _same_file(one: str, other: str) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def _probed(
    ctx: click.Context, source: str, receipt: bool
) -> tuple[tuple[Record, ...], dict[int, Receipted] | None, Declared]:
    """The records to probe (a recording's, or a receipt's with what each holds) and what the
    client declares (what the recorded client did; for a receipt, everything); a sealed file
    whose chain is broken is exit 1."""

    try:
        if receipt:
            records, receipted = read_receipt(source)
            return records, receipted, EVERY_CAPABILITY
        # the client declares what the recorded one did, so the server lists the same tools
        records, session = load_records(source), load_session(source)
    except BrokenRecordingError as err:
        _refused(ctx, err)
    return records, None, recorded_client(session or (), session_path(source))


def _run_probe(
    run: Callable[[], tuple[ProbeResult, Live, Plan]],
    output: str | None,
    *,
    force: bool,
    lock: ToolLock | None,
    volatile: Volatile | None,
) -> tuple[ProbeResult, Live]:
    """Probe; with ``-o RECEIPT``, write the receipt of its answers too."""
    if output is None:
        result, live, _ = run()
        return result, live
    return _with_receipt(run, output, force=force, lock=lock, volatile=volatile)


def _with_receipt(
    run: Callable[[], tuple[ProbeResult, Live, Plan]],
    output: str,
    *,
    force: bool,
    lock: ToolLock | None,
    volatile: Volatile | None,
) -> tuple[ProbeResult, Live]:
    """Probe, and write what the answers gave as a receipt to ``output`` (whole, or not at all)."""

    with atomic_output(output, replace=force) as out:
        result, live, planned = run()
        records = receipt_records(
            planned.ask,
            live.answers,
            fingerprints=live.fingerprints,
            texts={name: contract.text_digest for name, contract in live.contracts.items()},
            server=(live.server, live.version),
            shape_only=declared_nondeterministic(lock) if lock is not None else frozenset(),
            rules=rules_by_tool(volatile, {record.tool for record in planned.ask}),
        )
        if not records:
            raise InputError("not written: no call was answered every time it was asked", path=output)
        write_receipt(out, records)
    click.echo(
        f"toolreplay: wrote a receipt of {plural(len(records), 'call')}"
        f" ({records[0].response['answers']} answers each) to {one_line(output)}",
        err=True,
    )
    return result, live


def _probe_header(
    result: ProbeResult, volatile: Volatile | None, source: str, answers: int | None
) -> tuple[Line, ...]:
    """calls, asked, against a receipt the answers asked a call, a verdict per tool, masked, findings."""
    header = [
        Line(key="calls", value=result.calls, text=str(result.calls)),
        Line(key="asked", value=result.asked, text=str(result.asked)),
    ]
    if answers is not None:
        header.append(receipt_line(answers))
    for tool, verdict in result.verdicts.items():
        note = result.notes.get(tool)
        text = f"{verdict} ({one_line(note)})" if note else verdict
        header.append(Line(key=f"tool {quote(tool)}", value=verdict, text=text))
    if volatile is not None:
        header.append(masked_line(volatile.counts(source)))
    header.append(Line(key="findings", value=len(result.findings), text=str(len(result.findings))))
    return tuple(header)


def _times_asked(repeat: int | None, receipt: dict[int, Receipted] | None) -> int:
    """How many times each call is asked: --repeat, else as often as the receipt's were, else once."""
    if repeat is None and receipt is not None:
        return repeat_of(receipt)
    return repeat or 1


def _suggestions(
    records: Sequence[Record], repeated: Mapping[str, Sequence[Answer]], repeat: int, config: Config | None
) -> str:
    """``probe --suggest-volatile``'s TOML: per tool, the rules its repeated answers call for, as
    the configuration file ``config`` (None: none was found) holds rules."""
    into = None if config is None else one_line(config_shown(config))
    return toml(suggested(records, repeated), repeat, into)
