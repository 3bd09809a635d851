"""``record``: the recording proxy's command, and what the capture commands share.

This module stays light (click and a few small modules of ours): a client waits for
``record`` to start its server, so the server is started first, and the recording's
machinery (and the MCP SDK) is imported once the server has said something.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import click

from toolreplay.capture import otlp_proto
from toolreplay.capture.early import Early
from toolreplay.capture.redact import Redactor
from toolreplay.capture.stdio import proxy, start_server
from toolreplay.cli.base import EXISTS, Seconds, allow_origin_option, force_option, plural, warn
from toolreplay.cli.defaults import config_option
from toolreplay.cli.loading import loading
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote
from toolreplay.extras import require
from toolreplay.files import SEALED_SUFFIX, session_path
from toolreplay.lazy import resolve
from toolreplay.state_command import DEFAULT_TIMEOUT, Command, parse_state_command

if TYPE_CHECKING:
    from toolreplay.capture.recording import Recording


#: why ``record --seal`` refuses an output name (docs/spec.md §8)
NOT_SEALED = f"--seal writes a sealed transcript: its name must end in {SEALED_SUFFIX}"


def require_sdk(command: str) -> None:
    """Refuse (exit 2) with the install hint when the MCP SDK is not installed (found, not imported)."""
    require("mcp", f"toolreplay {command}")


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
        """The recording (its machinery loads now: the server has said something, or is remote)."""
        recording: Recording = _machinery().open_recording(
            self.output,
            seal=self.seal,
            lock_path=self.lock_path,
            patterns=self.patterns,
            config_file=self.config_file,
            commands=self.commands,
            timeout=self.timeout,
        )
        return recording


def _machinery() -> ModuleType:
    """The recording's machinery and the MCP SDK: :mod:`toolreplay.cli.record_open` (imported
    under :func:`loading`: it lives as long as the session, out of the collector's way)."""
    with loading():
        from toolreplay.cli import record_open

    return record_open


def _parsed(value: str) -> Command:
    try:
        return parse_state_command(value)
    except ValueError as err:
        raise InputError(f"--state-command {quote(value)} {err}") from None


# the server's command line is the first argument on: its options are its own, with or without "--"
@click.command(name="record", context_settings={"allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "-o", "--output", required=True, metavar="OUT", help="The transcript to write (with --otlp: the folder)."
)
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
@click.option(
    "--otlp",
    metavar="[HOST:]PORT",
    help="Receive OpenTelemetry traces over OTLP/HTTP here (loopback unless HOST is given); -o is a"
    " folder that gets one sealed transcript per trace.",
)
@allow_origin_option
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
    otlp: str | None,
    origins: tuple[str, ...],
    force: bool,
    config_file: str | None,
) -> None:
    """Run the MCP server COMMAND behind a recording proxy (stdio), or proxy a URL.

    Put this where your MCP client starts the server; every message passes both ways
    unchanged, and each tools/call with its answer is written to OUT as it finishes.
    Give record's options first: from COMMAND on, every argument is the server's (no -- needed).
    Exits with the server's exit status. Over Streamable HTTP, point the client at
    http://HOST:PORT with the target URL's path; stop the proxy with Ctrl-C (exit 0).

    With --otlp, receive an agent's OpenTelemetry traces instead (OTLP/HTTP, protobuf or JSON, at
    /v1/traces) and write each trace's tool calls to OUT/TRACEID.sealed.jsonl as they arrive.

    \b
        toolreplay record -o run.sealed.jsonl --seal python server.py
        toolreplay record -o run.jsonl --listen 127.0.0.1:8001 --target http://127.0.0.1:8000/mcp
        toolreplay record -o traces/ --otlp 4318
    """
    if otlp is not None:
        _check_otlp_alone(command, listen, target, lock_path, state_commands, state_timeout)
        otlp_proto.require_receiver()
        ctx.exit(_record_otlp(otlp, output, patterns, origins, force))
    require_sdk("record")
    _check_options(command, listen, target, origins)
    _check_outputs(output, seal, lock_path, force=force)
    opening = Opening(
        output=output,
        seal=seal,
        lock_path=lock_path,
        patterns=patterns,
        config_file=config_file,
        commands=tuple(_parsed(value) for value in state_commands),  # refused before anything starts
        timeout=state_timeout,
    )
    status, recording = _record(command, listen, target, origins, opening)
    for kept in recording.kept:
        click.echo(f"toolreplay: {kept.text(lock_path or '')}", err=True)
    click.echo(_recorded_line(recording, output, redacting=bool(patterns)), err=True)
    ctx.exit(status)


def _check_otlp_alone(
    command: tuple[str, ...],
    listen: str | None,
    target: str | None,
    lock_path: str | None,
    state_commands: tuple[str, ...],
    state_timeout: float | None,
) -> None:
    """--otlp receives traces: it takes none of the options of a proxy."""
    if command or listen or target or lock_path or state_commands or state_timeout is not None:
        raise click.UsageError(
            "--otlp takes none of a server's command line, --listen, --target, --lock,"
            " --state-command or --state-timeout"
        )


def _check_options(
    command: tuple[str, ...], listen: str | None, target: str | None, origins: tuple[str, ...]
) -> None:
    """A server's command line, or --listen with --target (and --allow-origin only with --listen)."""
    if (listen is None) != (target is None) or (listen is not None) == bool(command):
        raise click.UsageError("give the server's command line after --, or --listen and --target")
    if origins and listen is None:
        raise click.UsageError("--allow-origin goes with --listen")


def _check_outputs(output: str, seal: bool, lock_path: str | None, *, force: bool) -> None:
    """The recording's files: a sealed one named so, the lock apart, none replaced unless --force."""
    _check_names(output, seal, lock_path)
    if not force:
        _check_fresh(output, session_path(output), lock_path)


def _check_names(output: str, seal: bool, lock_path: str | None) -> None:
    """A sealed recording named so, and a lock with a name of its own."""
    if seal and not output.endswith(SEALED_SUFFIX):
        # replay, diff and check read a file by its name: a sealed one named *.jsonl fails there
        raise click.UsageError(f"-o {one_line(output)}: {NOT_SEALED}")
    if lock_path is not None and os.path.realpath(lock_path) == os.path.realpath(output):
        raise click.UsageError("-o and --lock name the same file; give the lock its own name")


def _check_fresh(*paths: str | None) -> None:
    """Refuse a file that exists: an earlier session's recording (a baseline in the making) is
    never lost by accident."""
    for path in paths:
        if path is not None and os.path.isfile(os.path.realpath(path)):
            raise InputError(EXISTS, path=path)


def _recorded_line(recording: Recording, output: str, *, redacting: bool) -> str:
    """The line that says what was recorded."""
    redacted, calls = recording.redactor.count, recording.count
    note = f", {recording.states} with post-call state" if recording.state_command is not None else ""
    note += _redacted_note(redacted) if redacting else ""
    return f"toolreplay: recorded {plural(calls, 'call')} to {one_line(output)}{note}"


def _redacted_note(redacted: int) -> str:
    return f", {plural(redacted, 'value')} redacted"


def _record_otlp(
    otlp: str, folder: str, patterns: tuple[str, ...], origins: tuple[str, ...], force: bool
) -> int:
    """Receive traces at ``otlp`` into ``folder`` until stopped; the exit status."""

    def ready(url: str) -> None:
        click.echo(f"toolreplay: receiving OTLP traces at {url}, writing to {one_line(folder)}", err=True)

    record_traces = resolve("toolreplay.capture.otlp:record_traces")  # the receiver's half, only now
    files = record_traces(
        otlp, folder, patterns=patterns, origins=origins, force=force, ready=ready, warn=warn
    )
    calls, traces = plural(files.count, "call"), plural(len(files.chains), "trace")
    note = _redacted_note(files.redactor.count) if patterns else ""
    click.echo(f"toolreplay: recorded {calls} in {traces} to {one_line(folder)}{note}", err=True)
    return 0


def _record(
    command: tuple[str, ...],
    listen: str | None,
    target: str | None,
    origins: tuple[str, ...],
    opening: Opening,
) -> tuple[int, Recording]:
    """Proxy over Streamable HTTP (--listen and --target) or stdio until done; (exit status,
    the recording)."""
    if listen is not None and target is not None:
        status, recording = _machinery().record_http(listen, target, origins, opening.open)
        return status, recording
    return _record_stdio(command, opening)


def _record_stdio(command: tuple[str, ...], opening: Opening) -> tuple[int, Recording]:
    """Start the server, then load the recording while it boots; (exit status, the recording)."""
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
        opened.append(opening.open())
        early.attach(opened[0])

    try:
        status = proxy(child, early, warn=warn, meanwhile=load)
    finally:
        for recording in opened:
            recording.close()
    return status, opened[0]


def _plainly_writable(*paths: str | None) -> bool:
    """Whether each path's folder plainly takes a new file (else the recording is opened first)."""
    return all(_takes_new_file(path) for path in paths if path is not None)


def _takes_new_file(path: str) -> bool:
    """Whether ``path``'s folder plainly takes a new file there (and an old one may be replaced)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK) or os.path.isdir(path):
        return False
    return not (os.path.lexists(path) and not os.access(path, os.W_OK))
