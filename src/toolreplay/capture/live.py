"""Ask a live MCP server (a command over stdio, or a Streamable HTTP URL) through the MCP SDK's client.

The SDK's client speaks the protocol; what the server *said* is read off the transport (a tap
on the SDK's message streams), so a tool's answer is compared as sent (``1`` stays ``1``, not
the model's ``1.0``), and an answer the server never sent (the SDK's own "Connection closed")
is a :class:`Failure`, never an answer. The SDK's log records (a traceback for a line that is
not JSON-RPC, or for a notification its models refuse, quoting the server's text) are collected,
not printed: each kind becomes one warning line.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from toolreplay import sdk
from toolreplay.analyses.fingerprint_diff import text_differences
from toolreplay.analyses.volatile import Volatile
from toolreplay.capture.probe import (
    Answer,
    Failure,
    Plan,
    ProbeResult,
    Receipted,
    Rules,
    Unjudged,
    judge,
    plan,
)
from toolreplay.contracts.definitions import ToolDefinition, import_definitions
from toolreplay.contracts.lock import ToolContract, ToolLock, declared_mutators, declared_nondeterministic
from toolreplay.contracts.mcp import describe, innermost_error, server_said
from toolreplay.contracts.text import text_of_tool
from toolreplay.errors import InputError
from toolreplay.escape import one_line, quote, url_shown
from toolreplay.locate import pointer_of
from toolreplay.transcript import Record

#: seconds between two rounds of the same calls (``repeat``): many servers tell the time to the second
ROUND_GAP = 1.0


#: what probe answers a server's own requests with: a refusal (JSON-RPC "method not found"
#: would say the client cannot; this says it will not), so no made-up answer reaches a tool
REFUSAL_CODE = -32600
REFUSAL = "toolreplay probe does not answer {method}: the call's answer is not compared"


@dataclass(frozen=True, slots=True, kw_only=True)
class Declared:
    """What probe's client declares, so that the server lists the tools it listed for the
    recorded client: the capabilities whose requests probe refuses, and the client's name."""

    #: the ``sampling`` capability as declared (its ``context`` and ``tools``); None: none
    sampling: dict[str, Any] | None = None
    elicitation: bool = False
    roots: bool = False
    #: the ``clientInfo`` name and version; None: the MCP SDK's own
    client: tuple[str, str] | None = None


#: without a recorded ``initialize``: sampling, elicitation and roots, as an interactive client
EVERY_CAPABILITY = Declared(sampling={}, elicitation=True, roots=True)


def recorded_client(session: Sequence[Record], path: str) -> Declared:
    """What the client declared in the first ``initialize`` of the session file ``path`` that the
    server answered (read with the MCP SDK's model); :data:`EVERY_CAPABILITY` without one."""
    record = next((r for r in session if r.tool == "initialize" and "result" in r.response), None)
    if record is None:
        return EVERY_CAPABILITY
    try:
        params = sdk.types.InitializeRequestParams.model_validate(record.args)
    except sdk.ValidationError as err:
        first = err.errors()[0]
        problem = f"the recorded initialize is not one an MCP client sends: {one_line(first['msg'])}"
        raise InputError(
            problem, path=path, line=record.line, pointer=pointer_of(("args", *first["loc"]))
        ) from err
    capabilities, info = params.capabilities, params.client_info
    sampling = capabilities.sampling
    return Declared(
        sampling=None if sampling is None else sampling.model_dump(by_alias=True, exclude_none=True),
        elicitation=capabilities.elicitation is not None,
        roots=capabilities.roots is not None,
        client=(info.name, info.version),
    )


def _declaring(declared: Declared) -> dict[str, Any]:
    """The MCP SDK client's options that declare ``declared``: the SDK derives each capability
    from the callback given for it, and each callback refuses."""
    options: dict[str, Any] = {}
    if declared.sampling is not None:
        options["sampling_callback"] = _refuser("sampling/createMessage")
        options["sampling_capabilities"] = sdk.types.SamplingCapability.model_validate(declared.sampling)
    if declared.elicitation:
        options["elicitation_callback"] = _refuser("elicitation/create")
    if declared.roots:
        options["list_roots_callback"] = _refuser("roots/list")
    if declared.client is not None:
        options["client_info"] = sdk.types.Implementation(name=declared.client[0], version=declared.client[1])
    return options


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """What the live ``tools/list`` says: the tool names, and what their annotations declare."""

    listed: frozenset[str]
    #: ``destructiveHint: true`` (and not ``readOnlyHint: true``)
    destructive: frozenset[str]
    #: ``readOnlyHint: true``
    readonly: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Live:
    """What the live server said: its tools' fingerprints and its answers by record index."""

    fingerprints: dict[str, str]
    destructive: frozenset[str]
    readonly: frozenset[str]
    #: per asked record index, its answers (one per repeat)
    answers: dict[int, tuple[Answer, ...]]
    #: what was wrong with the listed definitions, and lines the client could not read
    warnings: tuple[str, ...] = ()
    #: the listed tools' contracts (their contract text included), by name
    contracts: dict[str, ToolContract] = field(default_factory=dict)
    version: str = ""
    #: the server's name, as its ``serverInfo`` gives it
    server: str = ""
    #: with ``repeat``: every answer to each call, by its call key, in the order they came
    repeated: dict[str, list[Answer]] | None = None


@dataclass(slots=True)
class _Tap:
    """The messages the server sent, read off the transport before the SDK's models touch them."""

    #: the id of the last ``tools/call`` request sent, and the raw answer to it when one came
    call_id: Any = None
    answer: dict[str, Any] | None = None
    #: the methods of the requests the server sent during the current call
    asked: list[str] = field(default_factory=list)
    #: the lines the client could not read, as the SDK's transport handed them on (its exceptions)
    errors: list[BaseException] = field(default_factory=list)

    def begin(self) -> None:
        """Forget the last call: the next one may never reach :meth:`sent` (a closed connection)."""
        self.call_id, self.answer, self.asked = None, None, []

    def sent(self, item: Any) -> None:
        message = getattr(getattr(item, "message", None), "method", None)
        if message == "tools/call":
            self.call_id = item.message.id
            self.answer = None
            self.asked = []

    def received(self, item: Any) -> None:
        if isinstance(item, Exception):
            self.errors.append(item)
            return
        message = getattr(item, "message", None)
        ident, method = getattr(message, "id", None), getattr(message, "method", None)
        if method is not None and ident is not None:
            self.asked.append(str(method))  # a request of the server's own
        elif ident is not None and self.call_id is not None and str(ident) == str(self.call_id):
            data = message.model_dump(by_alias=True, exclude_unset=True) if message is not None else {}
            if "result" in data and isinstance(data["result"], dict):
                self.answer = data["result"]
            elif "error" in data and isinstance(data["error"], dict):
                self.answer = {"error": {k: v for k, v in data["error"].items() if v is not None}}


class _Stream:
    """One side of the SDK's transport, passed through: what is not overridden goes to ``inner``."""

    def __init__(self, inner: Any, tap: _Tap) -> None:
        self._inner, self._tap = inner, tap

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TapRead(_Stream):
    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tap.received(item)
        return item

    def __aiter__(self) -> _TapRead:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._tap.received(item)
        return item


class _TapWrite(_Stream):
    async def send(self, item: Any, /) -> None:
        self._tap.sent(item)
        await self._inner.send(item)


class _Tapped:
    """A transport whose streams pass every message by the tap."""

    def __init__(self, inner: Any, tap: _Tap) -> None:
        self._inner, self._tap = inner, tap

    async def __aenter__(self) -> tuple[_TapRead, _TapWrite]:
        read, write = await self._inner.__aenter__()
        return _TapRead(read, self._tap), _TapWrite(write, self._tap)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


_T = TypeVar("_T")

#: why ``--repeat`` over a URL may see drift that is the server's state
ONE_PROCESS = (
    "--repeat asks every round of the one server behind --target (probe cannot start it afresh):"
    " what it keeps between calls can read as drift"
)


def _refuser(method: str) -> Callable[..., Any]:
    async def refuse(*_: Any) -> Any:
        return sdk.types.ErrorData(code=REFUSAL_CODE, message=REFUSAL.format(method=method))

    return refuse


def ask_live(
    target: Sequence[str] | str,
    choose: Callable[[Listing], Sequence[Record]],
    *,
    timeout: float,
    repeat: int = 1,
    declared: Declared = EVERY_CAPABILITY,
) -> Live:
    """Connect declaring ``declared``, list the tools (every page), ask the calls ``choose``
    picks, in its order: ``repeat`` rounds of them, :data:`ROUND_GAP` seconds apart, each of a
    fresh server process (a URL's one server is asked every round, with :data:`ONE_PROCESS`).

    ``target`` is a server command line (started over stdio) or a URL. Not getting the
    tool list is an ``InputError`` naming the target. Each call is asked ``repeat`` times;
    a call that gets no answer from the server (``timeout`` seconds, a closed connection)
    is a :class:`Failure`; one during which the server asked the client something (probe
    refuses) is :class:`Unjudged`.
    """
    name = url_shown(target) if isinstance(target, str) else describe(target)
    tap = _Tap()
    logged: list[logging.LogRecord] = []
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog,
        sdk.logs_routed(logged.append),
    ):

        def new_client() -> Any:
            inner: Any
            if isinstance(target, str):
                inner = sdk.streamable_http_client(target)
            else:
                # the server sees this environment, as it would started from a shell
                params = sdk.StdioServerParameters(
                    command=target[0], args=list(target[1:]), env=dict(os.environ)
                )
                inner = sdk.stdio_client(params, errlog=errlog)
            return sdk.Client(_Tapped(inner, tap), cache=None, **_declaring(declared))

        async def opened(work: Callable[[Any], Awaitable[_T]]) -> _T:
            client = new_client()
            # the connection and the handshake are bounded too; the calls, each by its own timeout
            with sdk.anyio.CancelScope(deadline=sdk.anyio.current_time() + timeout) as opening:
                async with client:
                    opening.deadline = math.inf
                    return await work(client)
            raise _NoHandshake

        chosen: list[Record] = []
        # each round asks a fresh server process, so what a server keeps between calls is not
        # taken for drift; a URL's server cannot be started again: all rounds ask it
        fresh = not isinstance(target, str)

        async def one_round(client: Any) -> dict[int, tuple[Answer, ...]]:
            return await _rounds(client, tap, chosen, repeat=1, timeout=timeout)

        async def run() -> Live:
            live = await opened(lambda client: session(client, 1 if fresh else repeat))
            answers = dict(live.answers)
            for _ in range(1, repeat if fresh else 1):
                await sdk.anyio.sleep(ROUND_GAP)  # a value to the second changes between rounds
                try:
                    more = await opened(one_round)
                except _NoHandshake:
                    unasked = Failure(
                        problem=f"not asked: a fresh server did not answer within {timeout:g} s"
                    )
                    more = {record.index: (unasked,) for record in chosen}
                answers.update({index: (*answers.get(index, ()), *got) for index, got in more.items()})
            repeated = {r.call_key: list(answers[r.index]) for r in chosen} if repeat > 1 else None
            live = replace(live, answers=answers, repeated=repeated)
            return live if fresh or repeat == 1 else _with_warnings(live, [ONE_PROCESS])

        async def session(client: Any, rounds: int) -> Live:
            with sdk.anyio.fail_after(timeout):
                tools, raw = await _list_tools(client)
            info = client.server_info
            version = info.version if info is not None else ""
            server = info.name if info is not None else ""
            imported = import_definitions(tools, version=version, path="tools/list")
            fingerprints = {contract.name: contract.fingerprint for contract in imported.contracts}
            listing = Listing(
                listed=frozenset(fingerprints),
                destructive=frozenset(t.name for t in tools if says_destructive(t.annotations)),
                readonly=frozenset(t["name"] for t in raw if _says_read_only(t.get("annotations"))),
            )
            chosen.extend(choose(listing))
            answers = await _rounds(client, tap, chosen, repeat=rounds, timeout=timeout)
            return Live(
                fingerprints=fingerprints,
                destructive=listing.destructive,
                readonly=listing.readonly,
                answers=answers,
                warnings=imported.warnings,
                contracts={contract.name: contract for contract in imported.contracts},
                version=version,
                server=server,
            )

        try:
            live = sdk.anyio.run(run)
        except _NoHandshake as err:
            problem = f"the MCP server did not complete the handshake within {timeout:g} s (unavailable)"
            raise InputError(problem + server_said(errlog), path=name) from err
        except TimeoutError as err:
            problem = f"the MCP server did not list its tools within {timeout:g} s"
            raise InputError(problem + server_said(errlog), path=name) from err
        except Exception as err:  # the SDK and the OS raise many kinds; all mean the same here
            cause = innermost_error(err)
            problem = f"cannot talk to the MCP server: {type(cause).__name__}: {one_line(str(cause))}"
            raise InputError(problem + server_said(errlog), path=name) from err
        said = [_unreadable_warning(len(tap.errors)), _sdk_warning(logged, tap.errors)]
        return _with_warnings(live, [warning for warning in said if warning])


def _unreadable_warning(count: int) -> str:
    if not count:
        return ""
    plural = "s" if count != 1 else ""
    return f"the server sent {count} line{plural} that an MCP client cannot read (not JSON-RPC); ignored"


def _sdk_warning(logged: Sequence[logging.LogRecord], told: Sequence[BaseException]) -> str:
    """What the SDK logged besides the lines :func:`_unreadable_warning` counts (a notification its
    models refuse, say), as one line: how many, and the first one's message without its traceback
    (which quotes the server's own text)."""
    said = [record for record in logged if not (record.exc_info and record.exc_info[1] in told)]
    if not said:
        return ""
    first = quote(said[0].getMessage())
    if len(said) == 1:
        return f"the MCP SDK refused what the server sent: {first}; ignored"
    return f"the MCP SDK refused what the server sent {len(said)} times, first: {first}; ignored"


def _with_warnings(live: Live, warnings: Sequence[str]) -> Live:
    return replace(live, warnings=(*live.warnings, *warnings)) if warnings else live


class _NoHandshake(Exception):
    """The server did not connect and answer the handshake within the timeout."""


async def _rounds(
    client: Any, tap: _Tap, chosen: Sequence[Record], *, repeat: int, timeout: float
) -> dict[int, tuple[Answer, ...]]:
    """Each of ``chosen`` asked ``repeat`` times, rounds :data:`ROUND_GAP` seconds apart. Once a
    call gets no answer within ``timeout`` the server is taken for hung: the calls after it are
    not asked (each a :class:`Failure` saying so) rather than each waiting out the timeout."""
    answers: dict[int, tuple[Answer, ...]] = {}
    hung: Failure | None = None
    for round_ in range(repeat):
        if round_ and hung is None:
            await sdk.anyio.sleep(ROUND_GAP)  # a value to the second changes between rounds
        for record in chosen:
            got = hung or await _ask(client, tap, record, timeout)
            if hung is None and isinstance(got, Failure) and got.problem.startswith(NO_ANSWER):
                hung = Failure(problem=f"not asked: an earlier call got {got.problem}")
            answers[record.index] = (*answers.get(record.index, ()), got)
    return answers


#: how a call that got no answer in time is described (:func:`_ask`)
NO_ANSWER = "no answer within"


async def _ask(client: Any, tap: _Tap, record: Record, timeout: float) -> Answer:
    """One call's answer as the server sent it, or why there is none to compare."""
    problem = ""
    tap.begin()  # else a call the SDK never sends would take the previous call's answer
    try:
        with sdk.anyio.fail_after(timeout):
            await client.call_tool(record.tool, record.args)
    except TimeoutError:
        problem = f"{NO_ANSWER} {timeout:g} s"
    except Exception as err:  # an error answer, a closed connection, a result the SDK refuses
        problem = one_line(str(innermost_error(err))) or type(err).__name__
    if tap.asked:
        methods = ", ".join(quote(method) for method in sorted(set(tap.asked)))
        return Unjudged(reason=f"the server asked the client {methods} during the call, which probe refuses")
    if tap.answer is not None:
        return tap.answer
    return Failure(problem=problem or "no answer")


def says_destructive(annotations: dict[str, Any] | None) -> bool:
    """Whether a tool's annotations say outright that it destroys (not MCP's default for silence)."""
    return (
        annotations is not None
        and annotations.get("destructiveHint") is True
        and annotations.get("readOnlyHint") is not True
    )


def _says_read_only(annotations: Any) -> bool:
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


async def _list_tools(client: Any) -> tuple[list[ToolDefinition], list[dict[str, Any]]]:
    out: list[ToolDefinition] = []
    raw: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
            annotations = data.get("annotations")
            raw.append(data)
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
            return out, raw


def probe_live(
    records: Sequence[Record],
    target: Sequence[str] | str,
    *,
    configured: frozenset[str],
    allowed: frozenset[str],
    lock: ToolLock | None,
    sequence: bool,
    timeout: float,
    path: str,
    explain: Callable[[dict[str, ToolContract]], dict[str, str]],
    repeat: int = 1,
    volatile: Volatile | None = None,
    receipt: Mapping[int, Receipted] | None = None,
    declared: Declared = EVERY_CAPABILITY,
) -> tuple[ProbeResult, Live, Plan]:
    """``toolreplay probe``: plan by the rules, ask the live server (``repeat`` rounds) as a
    client that declares ``declared``, judge with the ``volatile`` rules' values masked, or
    against a ``receipt``'s digests (docs/capture.md). Also what was planned (the records asked,
    in order)."""
    mutators = declared_mutators(lock, configured) if lock is not None else configured
    declared_readonly = frozenset(n for n, c in lock.tools.items() if not c.mutates) if lock else frozenset()
    base = Rules(
        allowed=allowed,
        mutators=mutators,
        shape_only=declared_nondeterministic(lock) if lock is not None else frozenset(),
        deterministic=frozenset(n for n, c in lock.tools.items() if c.deterministic) if lock else frozenset(),
        sequence=sequence,
    )
    planned: list[Plan] = []
    rules: list[Rules] = []

    def choose(listing: Listing) -> Sequence[Record]:
        now = replace(
            base,
            readonly=(declared_readonly | listing.readonly) - listing.destructive,
            mutators=base.mutators | listing.destructive,
        )
        rules.append(now)
        planned.append(plan(records, now, listing.listed))
        return planned[0].ask

    live = ask_live(target, choose, timeout=timeout, repeat=repeat, declared=declared)
    result = judge(
        records,
        live=live.fingerprints,
        answers=live.answers,
        skipped=planned[0].skipped if planned else {},
        rules=rules[0] if rules else base,
        path=path,
        texts={name: c.text_digest for name, c in live.contracts.items() if c.text_digest is not None},
        explain=explain(live.contracts),
        volatile=volatile,
        receipt=receipt,
    )
    return result, live, planned[0] if planned else Plan(ask=(), skipped={})


def text_explained(
    records: Sequence[Record], lock: ToolLock | None, live: Mapping[str, ToolContract]
) -> dict[str, str]:
    """Per tool whose recorded contract text the lock holds: what changed in it live."""
    if lock is None:
        return {}
    out: dict[str, str] = {}
    for name, old in lock.tools.items():
        new = live.get(name)
        if new is not None and _text_recorded_and_changed(records, old, new):
            out[name] = "; ".join(d.text() for d in text_differences(old, new))
    return out


def _text_recorded_and_changed(records: Sequence[Record], old: ToolContract, new: ToolContract) -> bool:
    """Whether ``old``'s contract text is one a record was made with, and ``new`` has another."""
    if old.text_digest is None or old.text_digest == new.text_digest:
        return False
    return any(r.tool == old.name and r.text_digest == old.text_digest for r in records)
