"""Ask a live MCP server (a command over stdio, or a Streamable HTTP URL) through the MCP SDK's client."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreplay.capture.probe import Answer, Failure
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.contracts.lock import ToolContract
from toolreplay.contracts.mcp import describe, innermost_error, server_said
from toolreplay.contracts.text import text_of_tool
from toolreplay.errors import InputError
from toolreplay.escape import one_line
from toolreplay.transcript import Record

#: seconds between two rounds of the same calls (``repeat``): many servers tell the time to the second
ROUND_GAP = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Live:
    """What the live server said: its tools' fingerprints and its answers by call key."""

    fingerprints: dict[str, str]
    #: tools whose live annotations say outright that they destroy (``destructiveHint: true``)
    destructive: frozenset[str]
    answers: dict[str, Answer]
    #: what was wrong with the listed definitions (a name listed twice with other schemas, ...)
    warnings: tuple[str, ...] = ()
    #: the listed tools' contracts (their contract text included), by name
    contracts: dict[str, ToolContract] = field(default_factory=dict)
    #: with ``repeat``: every answer to each call, in the order they came (the first is in ``answers``)
    repeated: dict[str, list[Answer]] | None = None


def ask_live(
    target: Sequence[str] | str,
    choose: Callable[[frozenset[str], frozenset[str]], Sequence[Record]],
    *,
    timeout: float,
    repeat: int = 1,
) -> Live:
    """Connect, list the tools (every page), ask the calls ``choose`` picks: ``repeat`` rounds of
    them, :data:`ROUND_GAP` seconds apart.

    ``choose`` gets the listed tool names and those the server declares destructive.

    ``target`` is a server command line (started over stdio) or a URL. Not getting the
    tool list is an ``InputError`` naming the target; a call that gets no answer within
    ``timeout`` seconds is a :class:`Failure` answer.
    """
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    name = target if isinstance(target, str) else describe(target)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:

        async def run() -> Live:
            server: Any
            if isinstance(target, str):
                server = target
            else:
                # the server sees this environment, as it would started from a shell
                params = StdioServerParameters(command=target[0], args=list(target[1:]), env=dict(os.environ))
                server = stdio_client(params, errlog=errlog)
            async with Client(server) as client:
                with anyio.fail_after(timeout):
                    tools = await _list_tools(client)
                info = client.server_info
                version = info.version if info is not None else ""
                imported = import_definitions(tools, version=version, path="tools/list")
                fingerprints = {contract.name: contract.fingerprint for contract in imported.contracts}
                repeated: dict[str, list[Answer]] = {}
                destructive = frozenset(t.name for t in tools if says_destructive(t.annotations))
                chosen = list(choose(frozenset(fingerprints), destructive))
                for round_ in range(repeat):
                    if round_:
                        await anyio.sleep(ROUND_GAP)  # a value to the second changes between rounds
                    for record in chosen:
                        answer: Answer
                        try:
                            with anyio.fail_after(timeout):
                                result = await client.call_tool(record.tool, record.args)
                            answer = result.model_dump(by_alias=True, exclude_unset=True, mode="json")
                        except MCPError as err:
                            # as record keeps an error: its data too, when it has some
                            answer = {"error": err.error.model_dump(exclude_none=True)}
                        except TimeoutError:
                            answer = Failure(problem=f"no answer within {timeout:g} s")
                        repeated.setdefault(record.call_key, []).append(answer)
                return Live(
                    fingerprints=fingerprints,
                    destructive=destructive,
                    answers={key: found[0] for key, found in repeated.items()},
                    warnings=imported.warnings,
                    contracts={contract.name: contract for contract in imported.contracts},
                    repeated=repeated if repeat > 1 else None,
                )

        try:
            return anyio.run(run)
        except TimeoutError as err:
            problem = f"the MCP server did not list its tools within {timeout:g} s"
            raise InputError(problem + server_said(errlog), path=name) from err
        except Exception as err:  # the SDK and the OS raise many kinds; all mean the same here
            cause = innermost_error(err)
            problem = f"cannot talk to the MCP server: {type(cause).__name__}: {one_line(str(cause))}"
            raise InputError(problem + server_said(errlog), path=name) from err


def says_destructive(annotations: dict[str, Any] | None) -> bool:
    """Whether a tool's annotations say outright that it destroys (not MCP's default for silence)."""
    return (
        annotations is not None
        and annotations.get("destructiveHint") is True
        and annotations.get("readOnlyHint") is not True
    )


async def _list_tools(client: Any) -> list[ToolDefinition]:
    out: list[ToolDefinition] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
            annotations = data.get("annotations")
            out.append(
                ToolDefinition(
                    name=data["name"],
                    schema=data.get("inputSchema", {}),
                    shape="mcp",
                    annotations=annotations if isinstance(annotations, dict) else None,
                    text=text_of_tool(data),
                )
            )
        cursor = page.next_cursor
        if not cursor:
            return out
