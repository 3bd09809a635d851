"""``record``'s second half: the recording it opens once the server has said something.

:mod:`toolreplay.cli.record` starts the server first (a client waits for it); this module, the
recording's machinery and the MCP SDK's parts it reads messages with load after that, under
:func:`toolreplay.cli.loading.loading` (they live as long as the session, out of the
collector's way). Over Streamable HTTP there is no server to start: all of it loads before
the proxy listens, so no request waits for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from toolreplay import sdk
from toolreplay.capture import wire
from toolreplay.capture.http import check_target, serve_proxy
from toolreplay.capture.listen import Admission, parse_listen
from toolreplay.capture.recording import Recording
from toolreplay.cli.base import warn
from toolreplay.cli.defaults import announce, read_config, setting
from toolreplay.cli.loading import loading
from toolreplay.config import DEFAULT_MUTATORS, Config, config_path
from toolreplay.contracts.lock import ToolLock, load_lock
from toolreplay.library.post_state import StateCommand
from toolreplay.state_command import DEFAULT_TIMEOUT, Command


def check_result(result: dict[str, Any]) -> str | None:
    """Why ``result`` is not a valid ``CallToolResult`` as the SDK reads it (None: it is)."""
    try:
        sdk.mcp_types.CallToolResult.model_validate(result)
    except sdk.ValidationError as err:
        first = err.errors()[0]
        where = "/".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return None


def open_recording(
    output: str,
    *,
    seal: bool,
    lock_path: str | None,
    patterns: tuple[str, ...],
    config_file: str | None,
    commands: tuple[Command, ...],
    timeout: float | None,
) -> Recording:
    """The recording of ``record``'s options, with its state commands (docs/spec.md §8)."""
    with loading():  # what lives as long as the session, out of the collector's way
        wire.load()
    state_command, declared = state_commands(config_file, commands, timeout, lock_path)
    return Recording(
        output,
        seal=seal,
        lock_path=lock_path,
        redact=patterns,
        warn=warn,
        check_result=check_result,
        state_command=state_command,
        tools_lock=declared,
    )


def state_commands(
    config_file: str | None, commands: tuple[Command, ...], timeout: float | None, lock_path: str | None
) -> tuple[StateCommand | None, ToolLock | None]:
    """The state commands: ``--state-command`` (``commands``), else the config's ``state_command``;
    with them what decides which calls change state (the config's ``mutators``, and its
    ``tools_lock`` unless ``--lock``), as ``check`` reads them. Says which settings the config supplied."""
    config = read_config(config_file)
    used: list[str] = []
    commands = setting(commands or None, config, "state_command", used) or ()
    if not commands:
        if timeout is not None:
            warn(
                "--state-timeout has no effect: there is no state command"
                " (--state-command, or the configuration's state_command)"
            )
        return None, None
    state = _state_command(config, commands, timeout, used)
    declared = _declared_lock(config, lock_path, used)
    announce(config, used)
    return state, declared


def _state_command(
    config: Config | None, commands: Sequence[Command], timeout: float | None, used: list[str]
) -> StateCommand:
    """The state commands with their timeout (``--state-timeout``, else the config's) and the
    tools that change state (the config's ``mutators``, else the default ones)."""
    timeout = setting(timeout, config, "state_timeout_seconds", used)
    mutators = setting(None, config, "mutators", used) or DEFAULT_MUTATORS
    return StateCommand(commands, timeout=timeout or DEFAULT_TIMEOUT, mutators=mutators)


def _declared_lock(config: Config | None, lock_path: str | None, used: list[str]) -> ToolLock | None:
    """The config's tools_lock, for which calls change state, unless ``--lock`` names one (a lock
    not written yet is none; anything else at that path is read, and refused if it is no lock)."""
    if lock_path is not None or config is None or config.tools_lock is None:
        return None
    tools_lock = config_path(config, config.tools_lock)
    if not os.path.lexists(tools_lock):
        return None
    used.append("tools_lock")
    return load_lock(tools_lock)


def record_http(
    listen: str, target: str, origins: tuple[str, ...], opened: Callable[[], Recording]
) -> tuple[int, Recording]:
    """Proxy ``target`` at ``listen`` until stopped, recording to what ``opened`` opens, with the
    ``--allow-origin`` ``origins`` let in too; (exit status, the recording)."""
    address, target = parse_listen(listen), check_target(target)
    admission = Admission.of(address[0], origins)
    with opened() as recording:
        serve_proxy(*address, target, recording, admission)
    return 0, recording
