"""Post-call state from commands: what runs after a call that changes state (docs/spec.md §8).

``record --state-command``, the :class:`~toolreplay.library.recorder.Recorder`'s
``state_command=`` and the pytest plugin's ``toolreplay_mcp`` all run a call's state commands
here. Each runs without a shell (its words as :mod:`toolreplay.state_command` split them), in
the caller's folder and environment plus ``TOOLREPLAY_TOOL`` and ``TOOLREPLAY_ARGS``, with
nothing on its stdin and its output going to temporary files, so a command that leaves a
process behind holding its output cannot hang the recording; its process group is killed
when it ends or its time is up. A command that fails gives no state, never a guessed one.
"""

from __future__ import annotations

import math
import os
import subprocess
import tempfile
from collections.abc import Collection, Mapping, Sequence
from typing import IO, Any

from toolreplay.canonical import canonical, decode
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.errors import InputError
from toolreplay.escape import quote
from toolreplay.processes import end_group, last_words, status_of
from toolreplay.state_command import (
    ARGS_VARIABLE,
    DEFAULT_TIMEOUT,
    TOOL_VARIABLE,
    Command,
    parse_state_command,
)

#: Bytes of standard output a state command may write: a state is fingerprints, not contents.
MAX_OUTPUT = 1 << 20


class StateCommand:
    """The commands whose standard output becomes a call's post-call ``state``.

    ``commands``: each ``CMD`` (after every call of a tool that changes state) or ``TOOL=CMD``
    (after every call of TOOL), as strings or parsed :class:`~toolreplay.state_command.Command`
    values; a string that cannot be run raises ``ValueError``. ``mutators`` are the tools that
    change state when the caller does not say (:meth:`take`'s ``mutates``); each command may run
    ``timeout`` seconds.
    """

    def __init__(
        self,
        commands: str | Command | Sequence[str | Command],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        mutators: Collection[str] = DEFAULT_MUTATORS,
    ) -> None:
        given = [commands] if isinstance(commands, str | Command) else list(commands)
        self.commands = tuple(c if isinstance(c, Command) else parse_state_command(c) for c in given)
        if not self.commands:
            raise ValueError("no state command given")
        self.timeout = _checked_timeout(timeout)
        self.mutators = frozenset(mutators)

    def for_call(self, tool: str, mutates: bool | None = None) -> tuple[Command, ...]:
        """The commands that run after a call of ``tool``: those named for it, and the others when
        it changes state (``mutates``; None: when :attr:`mutators` names it)."""
        changes = self._changes(tool, mutates)
        return tuple(c for c in self.commands if c.tool == tool or (c.tool is None and changes))

    def _changes(self, tool: str, mutates: bool | None) -> bool:
        """Whether a call of ``tool`` changes state: ``mutates``, else whether :attr:`mutators` names it."""
        return tool in self.mutators if mutates is None else mutates

    def take(
        self, tool: str, args: Mapping[str, Any], *, mutates: bool | None = None, index: int = 0
    ) -> tuple[dict[str, str] | None, str]:
        """Run the call's commands in order: (the state, "") or, when none applies, (None, "");
        when one fails, (None, the one-line warning naming it, the tool and the record's ``index``)."""
        commands = self.for_call(tool, mutates)
        if not commands:
            return None, ""
        env = {**os.environ, TOOL_VARIABLE: tool, ARGS_VARIABLE: canonical(args)}
        state: dict[str, str] = {}
        for command in commands:
            part, problem = self._state(command, env)
            problem = problem or _clash(state, part)
            if part is None or problem:
                return None, _warning(command, tool, index, problem, changes=self._changes(tool, mutates))
            state.update(part)
        return state, ""

    def _state(self, command: Command, env: dict[str, str]) -> tuple[dict[str, str] | None, str]:
        """What one command says of the state, or why it says nothing."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            problem = self._run(command, env, out, err)
            if problem:
                return None, problem
            out.seek(0)
            raw = out.read(MAX_OUTPUT + 1)
        if len(raw) > MAX_OUTPUT:
            return None, f"it wrote more than {MAX_OUTPUT} bytes"
        return state_of(command, raw)

    def _run(self, command: Command, env: dict[str, str], out: IO[bytes], err: IO[bytes]) -> str:
        """Run one command to its end, its output into ``out`` and ``err``; why it failed ("": it did not)."""
        try:
            process = subprocess.Popen(
                command.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,  # one group: the command and whatever it starts end together
            )
        except OSError as error:
            return f"cannot start {quote(command.argv[0])}: {error.strerror or error}"
        except ValueError:  # a NUL character in the environment: the called tool's name
            nul = "its words or the tool's name hold a NUL character"
            return f"cannot start {quote(command.argv[0])}: {nul}"
        try:
            code: int | None = process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            end_group(process)
        if code is None:
            return f"it did not finish within {self.timeout:g} s and was stopped"
        return status_of(code) + last_words(err) if code != 0 else ""


def _checked_timeout(timeout: object) -> float:
    """A state command's ``timeout`` in seconds; ``ValueError`` unless a positive finite number."""
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"a state command's timeout is a positive number of seconds, not {timeout!r}")
    return float(timeout)


def _clash(state: Mapping[str, str], part: Mapping[str, str] | None) -> str:
    """Why a command's ``part`` of the state cannot join what earlier commands gave ("": it can)."""
    clash = next((key for key in part or () if key in state), None)
    if clash is None:
        return ""
    return f"gives {quote(clash)}, which an earlier state command of the call gave too"


def _warning(command: Command, tool: str, index: int, problem: str, *, changes: bool) -> str:
    after = "the call stays audit-incomplete" if changes else "the call has no post-call state"
    return f"state command {quote(command.text)} for {quote(tool)} at index {index}: {problem}; {after}"


def state_of(command: Command, raw: bytes) -> tuple[dict[str, str] | None, str]:
    """A command's standard output as state: a JSON object's members (a value that is not a
    string as its canonical JSON text), any other output as text under the command's own words."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "its output is not UTF-8 text"
    try:
        value = decode(raw, max_bytes=MAX_OUTPUT, what="output")
    except InputError:
        value = None
    if not isinstance(value, dict):
        return {command.text: text}, ""
    return {key: item if isinstance(item, str) else canonical(item) for key, item in value.items()}, ""
