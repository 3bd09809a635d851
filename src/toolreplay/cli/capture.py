"""Live capture over MCP: ``serve`` and ``probe`` (docs/capture.md; ``record``: :mod:`toolreplay.cli.record`).

The MCP SDK is imported inside the commands, so the CLI starts fast and works without
the ``mcp`` extra; these commands then say how to install it (exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from toolreplay.analyses.fingerprint_diff import text_differences
from toolreplay.cli.base import EXIT_FINDINGS, Seconds
from toolreplay.cli.defaults import announce, config_option, mutators_and_lock, read_config
from toolreplay.cli.formats import emit, format_option
from toolreplay.cli.record import require_sdk
from toolreplay.cli.record import warn as _warn
from toolreplay.escape import one_line, quote
from toolreplay.reports import Line, Report

if TYPE_CHECKING:
    from toolreplay.contracts.lock import ToolContract, ToolLock
    from toolreplay.transcript import Record


@click.command(name="serve")
@click.argument("transcript")
@click.option(
    "--lock", "lock_path", metavar="LOCK", help="Refuse to start unless the recording matches this lock."
)
@click.option(
    "--listen", metavar="HOST:PORT", help="Serve Streamable HTTP at http://HOST:PORT/mcp, not stdio."
)
@click.pass_context
def serve_cmd(ctx: click.Context, transcript: str, lock_path: str | None, listen: str | None) -> None:
    """Answer MCP tool calls from TRANSCRIPT, running nothing (stdio by default).

    Identical calls get the recorded responses in order (the last one again after
    that); a call that was not recorded gets a tool error starting "snapshot miss:".
    With LOCK, a recording whose fingerprints differ from it is refused (exit 1).
    """
    require_sdk("serve")
    from toolreplay.capture.serve import (
        BrokenRecordingError,
        build_server,
        check_lock,
        load_records,
        parse_listen,
        serve_http,
        serve_stdio,
    )
    from toolreplay.contracts.lock import load_lock
    from toolreplay.library.errors import ToolDriftError

    address = parse_listen(listen) if listen is not None else None
    lock = load_lock(lock_path) if lock_path is not None else None
    try:
        records = load_records(transcript)
        if lock is not None:
            check_lock(records, lock)
    except (ToolDriftError, BrokenRecordingError) as err:
        click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
        ctx.exit(EXIT_FINDINGS)
    server = build_server(records, lock)
    if address is None:
        serve_stdio(server)
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
@click.option("--lock", "lock_path", metavar="LOCK", help="A tool lock whose mutates flags decide too.")
@click.option(
    "--timeout",
    type=Seconds(),
    default=30.0,
    show_default=True,
    help="Seconds allowed for listing the tools and for each call.",
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
    lock_path: str | None,
    timeout: float,
    config_file: str | None,
    fmt: str,
) -> None:
    """Ask a live MCP server again what TRANSCRIPT recorded; report drift (exit 1).

    The server's tools/list fingerprints are compared with the recorded ones
    (tool-drift); each distinct recorded call of a tool that does not change state is
    asked once and its answer compared with the recording (silent-drift). Per tool:
    stable, silent-drift, unavailable or not-probed.

    \b
        toolreplay probe run.sealed.jsonl -- python server.py
        toolreplay probe run.sealed.jsonl --target http://127.0.0.1:8000/mcp
    """
    require_sdk("probe")
    from toolreplay.capture.live import ask_live
    from toolreplay.capture.probe import judge, plan
    from toolreplay.capture.serve import BrokenRecordingError, load_records
    from toolreplay.contracts.lock import declared_mutators, load_lock

    if (target is None) == (not command):
        raise click.UsageError("give the server's command line after -- or --target URL (one of them)")
    # the config's mutators and lock decide too: a tool it declares as changing state is
    # never asked again on the live server
    config = read_config(config_file)
    used: list[str] = []
    configured, lock_path = mutators_and_lock(config, mutators, lock_path, used)
    announce(config, used)
    lock = load_lock(lock_path) if lock_path is not None else None
    if lock is not None:
        configured = declared_mutators(lock, configured)
    try:
        records = load_records(transcript)
    except BrokenRecordingError as err:
        click.echo(f"toolreplay: error: {one_line(str(err))}", err=True)
        ctx.exit(EXIT_FINDINGS)
    live = ask_live(
        target if target is not None else command,
        lambda listed, destructive: plan(records, configured | destructive, listed),
        timeout=timeout,
    )
    for problem in live.warnings:
        _warn(problem)
    result = judge(
        records,
        live=live.fingerprints,
        answers=live.answers,
        mutators=configured | live.destructive,
        path=transcript,
        texts={name: c.text_digest for name, c in live.contracts.items() if c.text_digest is not None},
        explain=_text_explained(records, lock, live.contracts),
    )
    header = [
        Line(key="calls", value=result.calls, text=str(result.calls)),
        Line(key="asked", value=result.asked, text=str(result.asked)),
    ]
    header += [
        Line(key=f"tool {quote(tool)}", value=verdict, text=verdict)
        for tool, verdict in result.verdicts.items()
    ]
    header.append(Line(key="findings", value=len(result.findings), text=str(len(result.findings))))
    report = Report(command="probe", path=transcript, header=tuple(header), findings=result.findings)
    ctx.exit(emit([report], fmt))
