"""``record``: the recording proxy's command, and what the capture commands share.

This module stays light (click and a few small modules of ours): a client waits for
``record`` to start its server, so the server is started first, and the recording's
machinery (and the MCP SDK) is imported once the server has said something.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from toolreplay.capture import wire
from toolreplay.capture.exchange import session_path
from toolreplay.cli.base import EXISTS, Seconds, force_option
from toolreplay.cli.defaults import announce, config_option, read_config
from toolreplay.cli.loading import loading
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.extras import require
from toolreplay.mutators import DEFAULT_MUTATORS
from toolreplay.state_command import DEFAULT_TIMEOUT, Command, parse_state_command

if TYPE_CHECKING:
    from toolreplay.capture.recording import Recording
    from toolreplay.contracts.lock import ToolLock
    from toolreplay.library.post_state import StateCommand


def require_sdk(command: str) -> None:
    """Refuse (exit 2) with the install hint when the MCP SDK is not installed (found, not imported)."""
    require("mcp", f"toolreplay {command}")


def warn(text: str) -> None:
    click.echo(f"toolreplay: warning: {one_line(text)}", err=True)


def check_result(result: dict[str, Any]) -> str | None:
    """Why ``result`` is not a valid ``CallToolResult`` as the SDK reads it (None: it is)."""
    from mcp.types import CallToolResult
    from pydantic import ValidationError

    try:
        CallToolResult.model_validate(result)
    except ValidationError as err:
        first = err.errors()[0]
        where = "/".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Opening:
    """What the recording is opened with. It opens once the server has said something, and so
    is the configuration read then (a client waits for its server; start-up is the server's)."""

    output: str
    seal: bool
    lock_path: str | None
    patterns: tuple[str, ...]
    config_file: str | None = None
    #: ``--state-command``, parsed (they replace the config's ``state_command``)
    commands: tuple[Command, ...] = ()
    #: ``--state-timeout``
    timeout: float | None = None

    def open(self) -> Recording:
        """The recording, with its state commands (docs/spec.md §8)."""
        from toolreplay.capture.recording import Recording

        state_command, declared = self._state_command()
        return Recording(
            self.output,
            seal=self.seal,
            lock_path=self.lock_path,
            redact=self.patterns,
            warn=warn,
            check_result=check_result,
            state_command=state_command,
            tools_lock=declared,
        )

    def _state_command(self) -> tuple[StateCommand | None, ToolLock | None]:
        """The state commands: ``--state-command``, else the config's ``state_command``; with them
        what decides which calls change state (the config's ``mutators``, and its ``tools_lock``
        unless ``--lock``), as ``check`` reads them. Says which settings the config supplied."""
        from toolreplay.config import config_path
        from toolreplay.contracts.lock import load_lock
        from toolreplay.library.post_state import StateCommand

        config = read_config(self.config_file)
        used: list[str] = []
        commands, timeout = self.commands, self.timeout
        if not commands and config is not None and config.state_command:
            commands = config.state_command
            used.append("state_command")
        if not commands:
            return None, None
        mutators, declared = DEFAULT_MUTATORS, None
        if config is not None:
            if timeout is None and "state_timeout_seconds" in config.declared:
                timeout = config.state_timeout_seconds
                used.append("state_timeout_seconds")
            if "mutators" in config.declared:
                mutators = config.mutators
                used.append("mutators")
            tools_lock = config_path(config, config.tools_lock) if config.tools_lock is not None else None
            if self.lock_path is None and tools_lock is not None and os.path.isfile(tools_lock):
                declared = load_lock(tools_lock)
                used.append("tools_lock")
        announce(config, used)
        return StateCommand(commands, timeout=timeout or DEFAULT_TIMEOUT, mutators=mutators), declared


def _parsed(value: str) -> Command:
    try:
        return parse_state_command(value)
    except ValueError as err:
        raise InputError(f"--state-command {quote(value)} {err}") from None


# the server's command line is the first argument on: its options are its own, with or without "--"
@click.command(name="record", context_settings={"allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
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
@click.option(
    "--state-command",
    "state_commands",
    multiple=True,
    metavar="[TOOL=]CMD",
    help="After each call of a tool that changes state (TOOL=: of TOOL), run CMD (no shell) and record"
    " its output as the call's post-call state (repeatable; replaces the config's state_command).",
)
@click.option(
    "--state-timeout",
    type=Seconds(),
    metavar="SECONDS",
    help=f"Stop a state command after this long; the call then has no state (default {DEFAULT_TIMEOUT:g}).",
)
@click.option("--listen", metavar="HOST:PORT", help="Proxy Streamable HTTP: listen here (with --target).")
@click.option("--target", metavar="URL", help="The MCP server's Streamable HTTP URL (with --listen).")
@force_option
@config_option
@click.pass_context
def record_cmd(
    ctx: click.Context,
    command: tuple[str, ...],
    output: str,
    seal: bool,
    lock_path: str | None,
    patterns: tuple[str, ...],
    state_commands: tuple[str, ...],
    state_timeout: float | None,
    listen: str | None,
    target: str | None,
    force: bool,
    config_file: str | None,
) -> None:
    """Run the MCP server COMMAND behind a recording proxy (stdio), or proxy a URL.

    Put this where your MCP client starts the server; every message passes both ways
    unchanged, and each tools/call with its answer is written to OUT as it finishes.
    Give record's options first: from COMMAND on, every argument is the server's (no -- needed).
    Exits with the server's exit status. Over Streamable HTTP, point the client at
    http://HOST:PORT with the target URL's path; stop the proxy with Ctrl-C (exit 0).

    \b
        toolreplay record -o run.sealed.jsonl --seal python server.py
        toolreplay record -o run.jsonl --listen 127.0.0.1:8001 --target http://127.0.0.1:8000/mcp
    """
    require_sdk("record")
    if (listen is None) != (target is None) or (listen is not None) == bool(command):
        raise click.UsageError("give the server's command line after --, or --listen and --target")
    if lock_path is not None and os.path.realpath(lock_path) == os.path.realpath(output):
        raise click.UsageError("-o and --lock name the same file; give the lock its own name")
    if not force:
        # an earlier session's recording (a baseline in the making) is never lost by accident
        for path in (output, session_path(output), lock_path):
            if path is not None and os.path.isfile(os.path.realpath(path)):
                raise InputError(EXISTS, path=path)
    opening = Opening(
        output=output,
        seal=seal,
        lock_path=lock_path,
        patterns=patterns,
        config_file=config_file,
        commands=tuple(_parsed(value) for value in state_commands),  # refused before anything starts
        timeout=state_timeout,
    )
    if listen is not None and target is not None:
        status, recording = _record_http(opening, listen, target)
    else:
        status, recording = _record_stdio(command, opening)
    for kept in recording.kept:
        click.echo(f"toolreplay: {kept.text(lock_path or '')}", err=True)
    redacted, calls = recording.redactor.count, recording.count
    note = f", {recording.states} with post-call state" if recording.state_command is not None else ""
    note += f", {redacted} value{'s' if redacted != 1 else ''} redacted" if patterns else ""
    click.echo(
        f"toolreplay: recorded {calls} call{'s' if calls != 1 else ''} to {one_line(output)}{note}",
        err=True,
    )
    ctx.exit(status)


def _record_stdio(command: tuple[str, ...], opening: Opening) -> tuple[int, Recording]:
    """Start the server, then load the recording while it boots; (exit status, the recording)."""
    from toolreplay.capture.early import Early
    from toolreplay.capture.redact import Redactor
    from toolreplay.capture.stdio import proxy, start_server

    Redactor(opening.patterns)  # a bad pattern is refused before anything starts
    if not _plainly_writable(opening.output, opening.lock_path):
        # the recording says why it cannot be written (exit 2), before the server starts
        with opening.open() as recording:
            return proxy(command, recording, warn=warn), recording
    child = start_server(command)
    early = Early()
    opened: list[Recording] = []

    def load() -> None:  # once the server has said something (its CPU is its own until then)
        while not early.first.wait(0.05) and child.poll() is None:
            pass
        with loading():  # what lives as long as the session, out of the collector's way
            opened.append(opening.open())
            wire.load()  # the recording reads the lines kept so far with it at once
        early.attach(opened[0])

    try:
        status = proxy(child, early, warn=warn, meanwhile=load)
    finally:
        for recording in opened:
            recording.close()
    return status, opened[0]


def _plainly_writable(*paths: str | None) -> bool:
    """Whether each path's folder plainly takes a new file (else the recording is opened first)."""
    for path in paths:
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK) or os.path.isdir(path):
            return False
        if os.path.lexists(path) and not os.access(path, os.W_OK):
            return False
    return True


def _record_http(opening: Opening, listen: str, target: str) -> tuple[int, Recording]:
    from toolreplay.capture.http import check_target, serve_proxy
    from toolreplay.capture.serve import parse_listen

    address, target = parse_listen(listen), check_target(target)
    with loading():  # before the first request, not during it; out of the collector's way
        wire.load()
        recording = opening.open()
    with recording:
        serve_proxy(*address, target, recording)
    return 0, recording
