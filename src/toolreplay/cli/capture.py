"""Live capture over MCP: ``record``, ``serve`` and ``probe`` (docs/capture.md).

The MCP SDK is imported inside the commands, so the CLI starts fast and works without
the ``mcp`` extra; these commands then say how to install it (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from toolreplay.analyses.fingerprint_diff import text_differences
from toolreplay.capture.exchange import session_path
from toolreplay.cli.base import EXISTS, EXIT_CLEAN, EXIT_FINDINGS, Seconds, force_option
from toolreplay.cli.defaults import announce, config_option, mutators_and_lock, read_config, volatile_of
from toolreplay.cli.formats import format_option
from toolreplay.cli.gate import emit_gated, fail_on_option, fail_policy
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.extras import require
from toolreplay.reports import Line, Report, masked_line

if TYPE_CHECKING:
    from toolreplay.capture.probe import Answer
    from toolreplay.contracts.lock import ToolContract, ToolLock
    from toolreplay.transcript import Record


def require_sdk(command: str) -> None:
    """Refuse (exit 2) with the install hint when the MCP SDK is not installed."""
    require("mcp", f"toolreplay {command}")


def _warn(text: str) -> None:
    click.echo(f"toolreplay: warning: {one_line(text)}", err=True)


def _check_result(result: dict[str, Any]) -> str | None:
    from mcp.types import CallToolResult
    from pydantic import ValidationError

    try:
        CallToolResult.model_validate(result)
    except ValidationError as err:
        first = err.errors()[0]
        where = "/".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return None


@click.command(name="record")
@click.argument("command", nargs=-1)
@click.option("-o", "--output", required=True, metavar="OUT", help="The transcript to write.")
@click.option("--seal", is_flag=True, help="Write a sealed transcript, chained link by link as calls finish.")
@click.option("--lock", "lock_path", metavar="LOCK", help="Also write the listed tools as a tool lock.")
@click.option(
    "--redact",
    "patterns",
    multiple=True,
    metavar="REGEX",
    help="Replace matches with [REDACTED] in args and responses before writing (repeatable).",
)
@click.option("--listen", metavar="HOST:PORT", help="Proxy Streamable HTTP: listen here (with --target).")
@click.option("--target", metavar="URL", help="The MCP server's Streamable HTTP URL (with --listen).")
@force_option
@click.pass_context
def record_cmd(
    ctx: click.Context,
    command: tuple[str, ...],
    output: str,
    seal: bool,
    lock_path: str | None,
    patterns: tuple[str, ...],
    listen: str | None,
    target: str | None,
    force: bool,
) -> None:
    """Run the MCP server COMMAND behind a recording proxy (stdio), or proxy a URL.

    Put this where your MCP client starts the server; every message passes both ways
    unchanged, and each tools/call with its answer is written to OUT as it finishes.
    Exits with the server's exit status. Over Streamable HTTP, point the client at
    http://HOST:PORT with the target URL's path; stop the proxy with Ctrl-C (exit 0).

    \b
        toolreplay record -o run.sealed.jsonl --seal -- python server.py
        toolreplay record -o run.jsonl --listen 127.0.0.1:8001 --target http://127.0.0.1:8000/mcp
    """
    require_sdk("record")
    from toolreplay.capture.recording import Recording

    if (listen is None) != (target is None) or (listen is not None) == bool(command):
        raise click.UsageError("give the server's command line after --, or --listen and --target")
    if lock_path is not None and os.path.realpath(lock_path) == os.path.realpath(output):
        raise click.UsageError("-o and --lock name the same file; give the lock its own name")
    if not force:
        # an earlier session's recording (a baseline in the making) is never lost by accident
        for path in (output, session_path(output), lock_path):
            if path is not None and os.path.isfile(os.path.realpath(path)):
                raise InputError(EXISTS, path=path)
    address = None
    if listen is not None and target is not None:
        from toolreplay.capture.http import check_target
        from toolreplay.capture.serve import parse_listen

        address, target = parse_listen(listen), check_target(target)
    with Recording(
        output, seal=seal, lock_path=lock_path, redact=patterns, warn=_warn, check_result=_check_result
    ) as recording:
        if address is not None and target is not None:
            from toolreplay.capture.http import serve_proxy

            serve_proxy(*address, target, recording)
            status = 0
        else:
            from toolreplay.capture.stdio import proxy

            status = proxy(command, recording, warn=_warn)
    for kept in recording.kept:
        click.echo(f"toolreplay: {kept.text(lock_path or '')}", err=True)
    redacted = recording.redactor.count
    note = f", {redacted} value{'s' if redacted != 1 else ''} redacted" if patterns else ""
    click.echo(
        f"toolreplay: recorded {recording.count} call{'s' if recording.count != 1 else ''}"
        f" to {one_line(output)}{note}",
        err=True,
    )
    ctx.exit(status)


@click.command(name="serve")
@click.argument("transcript")
@click.option(
    "--lock", "lock_path", metavar="LOCK", help="Refuse to start unless the recording matches this lock."
)
@click.option(
    "--listen", metavar="HOST:PORT", help="Serve Streamable HTTP at http://HOST:PORT/mcp, not stdio."
)
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
    from toolreplay.capture.serve import (
        BrokenRecordingError,
        build_server,
        check_lock,
        handshake_only,
        load_records,
        load_session,
        miss_log,
        parse_listen,
        serve_http,
        serve_stdio,
    )
    from toolreplay.contracts.lock import load_lock
    from toolreplay.library.errors import ToolDriftError

    address = parse_listen(listen) if listen is not None else None
    lock = load_lock(lock_path) if lock_path is not None else None
    config = read_config(config_file)
    used: list[str] = []
    volatile = volatile_of(config, used)
    announce(config, used)
    try:
        records = load_records(transcript)
        session = load_session(transcript)
        if lock is not None:
            check_lock(records, lock)
    except (ToolDriftError, BrokenRecordingError) as err:
        click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
        ctx.exit(EXIT_FINDINGS)
    server = build_server(
        records,
        lock,
        session,
        miss_log(misses_path) if misses_path is not None else None,
        volatile=volatile,
    )
    if address is None:
        serve_stdio(server, handshake=handshake_only(session))
    else:
        serve_http(server, *address)


def _text_explained(
    records: Sequence[Record], lock: ToolLock | None, live: dict[str, ToolContract]
) -> dict[str, str]:
    """Per tool whose recorded contract text the lock holds: what changed in it live."""
    if lock is None:
        return {}
    out: dict[str, str] = {}
    for name, old in lock.tools.items():
        new = live.get(name)
        if new is None or old.text_digest is None or old.text_digest == new.text_digest:
            continue
        if any(r.tool == name and r.text_digest == old.text_digest for r in records):
            out[name] = "; ".join(d.text() for d in text_differences(old, new))
    return out


@click.command(name="probe")
@click.argument("transcript")
@click.argument("command", nargs=-1)
@click.option("--target", metavar="URL", help="A Streamable HTTP server to ask instead of starting COMMAND.")
@click.option(
    "--mutator",
    "mutators",
    multiple=True,
    metavar="TOOL",
    help="A tool that changes state and is never re-run (repeatable; replaces the config's"
    " mutators, else the default list).",
)
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
    type=click.IntRange(min=2),
    metavar="N",
    help="Ask each read-only call N times (with --suggest-volatile).",
)
@click.option(
    "--suggest-volatile",
    is_flag=True,
    help="Print, as TOML to paste into the config, the volatile rules that make the N answers of"
    " each call compare equal, with the values seen (the config is never written).",
)
@config_option
@format_option
@click.pass_context
def probe_cmd(
    ctx: click.Context,
    transcript: str,
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
    config_file: str | None,
    fmt: str,
) -> None:
    """Ask a live MCP server again what TRANSCRIPT recorded; report drift (exit 1 for a
    finding of a kind in --fail-on, else the config's fail_on, else every kind).

    The server's tools/list fingerprints are compared with the recorded ones
    (tool-drift); each distinct recorded call of a tool known not to change state
    (readOnlyHint, a lock, --allow), made before any call that may have changed state,
    is asked once and its answer compared with the recording (silent-drift); a call
    that gets no answer is unavailable. Per tool: stable, silent-drift, unavailable or
    not-probed (with the reason).

    \b
        toolreplay probe run.sealed.jsonl -- python server.py
        toolreplay probe run.sealed.jsonl --target http://127.0.0.1:8000/mcp
        toolreplay probe run.sealed.jsonl --sequence -- python server.py --db /tmp/scratch.db
    """
    require_sdk("probe")
    from toolreplay.capture.live import probe_live
    from toolreplay.capture.serve import BrokenRecordingError, load_records
    from toolreplay.contracts.lock import load_lock

    if (target is None) == (not command):
        raise click.UsageError("give the server's command line after -- or --target URL (one of them)")
    if sequence and target is not None:
        raise click.UsageError("--sequence needs a server it starts afresh: give its command line after --")
    if (repeat is None) != (not suggest_volatile):
        raise click.UsageError("--repeat N and --suggest-volatile go together (N answers to compare)")
    # the config's mutators and lock decide too: a tool it declares as changing state is
    # never asked again on the live server
    config = read_config(config_file)
    used: list[str] = []
    configured, lock_path = mutators_and_lock(config, mutators, lock_path, used)
    policy = fail_policy(config, fail_on, used)
    volatile = volatile_of(config, used)
    announce(config, used)
    lock = load_lock(lock_path) if lock_path is not None else None
    try:
        records = load_records(transcript)
    except BrokenRecordingError as err:
        click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
        ctx.exit(EXIT_FINDINGS)
    result, live = probe_live(
        records,
        target if target is not None else command,
        configured=configured,
        allowed=frozenset(allowed),
        lock=lock,
        sequence=sequence,
        timeout=timeout,
        path=transcript,
        explain=lambda contracts: _text_explained(records, lock, contracts),
        repeat=repeat or 1,
        volatile=volatile,
    )
    for problem in live.warnings:
        _warn(problem)
    if repeat is not None:
        click.echo(_suggestions(records, live.repeated or {}, repeat), nl=False)
        ctx.exit(EXIT_CLEAN)
    header = [
        Line(key="calls", value=result.calls, text=str(result.calls)),
        Line(key="asked", value=result.asked, text=str(result.asked)),
    ]
    for tool, verdict in result.verdicts.items():
        note = result.notes.get(tool)
        text = f"{verdict} ({one_line(note)})" if note else verdict
        header.append(Line(key=f"tool {quote(tool)}", value=verdict, text=text))
    if volatile is not None:
        header.append(masked_line(volatile.counts(transcript)))
    header.append(Line(key="findings", value=len(result.findings), text=str(len(result.findings))))
    report = Report(command="probe", path=transcript, header=tuple(header), findings=result.findings)
    ctx.exit(emit_gated([report], fmt, policy))


def _suggestions(records: Sequence[Record], repeated: Mapping[str, Sequence[Answer]], repeat: int) -> str:
    """``probe --suggest-volatile``'s TOML: per tool, the rules its repeated answers call for."""
    from toolreplay.analyses.suggest import Suggestion, suggest, toml
    from toolreplay.capture.probe import Failure, _tool_answer

    found: dict[str, list[Suggestion]] = {}
    for record in records:
        answers = repeated.get(record.call_key)
        if not answers or any(isinstance(answer, Failure) for answer in answers):
            continue
        mine = found.setdefault(record.tool, [])
        for suggestion in suggest(record.tool, [_tool_answer(a) for a in answers if isinstance(a, dict)]):
            # one rule per place, with the values of the first call that needed it
            if all((s.rule, s.at) != (suggestion.rule, suggestion.at) for s in mine):
                mine.append(suggestion)
    return toml(found, repeat)
