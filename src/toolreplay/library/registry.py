"""ToolRegistry: fingerprint tools at registration, record every call, replay from a snapshot."""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, overload

from toolreplay.analyses.replay import DEFAULT_MUTATORS
from toolreplay.canonical import canonical
from toolreplay.contracts.fingerprint import python_signature
from toolreplay.contracts.lock import ToolContract, ToolLock, make_contract
from toolreplay.library.errors import ToolDriftError
from toolreplay.library.recorder import Recorder
from toolreplay.library.snapshot import Snapshot

F = TypeVar("F", bound=Callable[..., Any])
#: ``state(tool, args, response)`` -> post-call state fingerprints keyed by resource id, or None
StateFn = Callable[[str, dict[str, Any], dict[str, Any]], Mapping[str, str] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredTool:
    """A registered tool: the callable and its contract."""

    fn: Callable[..., Any]
    contract: ToolContract


class ToolRegistry:
    """Tools by name, each fingerprinted when registered (SPEC §4).

    Every :meth:`call` returns the response as a JSON object (a tool that returns
    anything else is wrapped as ``{"result": value}``), records it through the
    ``recorder`` when one is given, with the tool's fingerprint and, when ``state`` is
    given, the post-call state it returns, and sets ``tool.fingerprint`` and
    ``tool.version`` on the current OpenTelemetry span when ``opentelemetry-api`` is
    installed.

    Modes:

    * live (default): the real tool runs;
    * integration: live, with ``pinned`` (a :class:`ToolLock` or name -> fingerprint):
      calling a tool whose fingerprint differs from its pinned one raises
      :class:`ToolDriftError` before it runs;
    * snapshot: with ``snapshot`` (a transcript path or a :class:`Snapshot`), responses
      come from the recording and no tool runs; a recorded call whose fingerprint
      differs from the registered tool's raises :class:`ToolDriftError`, an unrecorded
      call :class:`SnapshotMissError`.
    """

    def __init__(
        self,
        *,
        recorder: Recorder | None = None,
        state: StateFn | None = None,
        pinned: ToolLock | Mapping[str, str] | None = None,
        snapshot: Snapshot | str | os.PathLike[str] | None = None,
        mutators: frozenset[str] = DEFAULT_MUTATORS,
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.pinned: dict[str, str] = dict(
            pinned.fingerprints if isinstance(pinned, ToolLock) else pinned or {}
        )
        self.mutators = mutators
        self._tools: dict[str, RegisteredTool] = {}
        if snapshot is None or isinstance(snapshot, Snapshot):
            self._snapshot = snapshot
        else:
            self._snapshot = Snapshot.from_file(snapshot)

    # -- registration ---------------------------------------------------------------------------

    def register(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        schema: Any = None,
        version: str = "",
        deterministic: bool = True,
        mutates: bool | None = None,
        idempotent: bool = False,
    ) -> ToolContract:
        """Register ``fn`` under ``name`` (default ``fn.__name__``) and fingerprint it.

        ``schema`` is its input JSON Schema (default ``{}``); ``version`` the version you
        pin; ``mutates`` defaults to whether the name is in the registry's mutator list.
        """
        if inspect.iscoroutinefunction(fn):
            raise TypeError("async tools are not supported: register a synchronous wrapper")
        signature = python_signature(fn)
        tool = name or signature["name"]
        if tool in self._tools:
            raise ValueError(f"tool {tool!r} is already registered")
        contract = make_contract(
            name=tool,
            signature=signature,
            schema={} if schema is None else schema,
            version=version,
            deterministic=deterministic,
            mutates=tool in self.mutators if mutates is None else mutates,
            idempotent=idempotent,
        )
        self._tools[tool] = RegisteredTool(fn=fn, contract=contract)
        return contract

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        schema: Any = None,
        version: str = "",
        deterministic: bool = True,
        mutates: bool | None = None,
        idempotent: bool = False,
    ) -> Callable[[F], F]: ...
    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator form of :meth:`register`; calling the decorated function goes through :meth:`call`."""

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            contract = self.register(func, **options)
            signature = inspect.signature(func)

            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
                bound = signature.bind(*args, **kwargs)
                return self.call(contract.name, **bound.arguments)

            return wrapper

        return decorate(fn) if fn is not None else decorate

    # -- what is registered ---------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._tools))

    def contract(self, name: str) -> ToolContract:
        return self._tools[name].contract

    @property
    def fingerprints(self) -> dict[str, str]:
        """Tool name -> fingerprint of every registered tool."""
        return {name: tool.contract.fingerprint for name, tool in self._tools.items()}

    def lock(self) -> ToolLock:
        """The registered tools' contracts, as a tool lock (see ``save_lock``)."""
        return ToolLock.of(tool.contract for tool in self._tools.values())

    def check_pinned(self) -> None:
        """Raise :class:`ToolDriftError` for the first registered tool (by name) that left its pin."""
        for name in sorted(self._tools):
            self._check_pin(name)

    # -- calling --------------------------------------------------------------------------------

    def call(self, name: str, /, **args: Any) -> dict[str, Any]:
        """Call a tool with keyword arguments; return (and record) its response object."""
        if name not in self._tools:
            raise KeyError(f"no tool named {name!r} is registered")
        contract = self._tools[name].contract
        args = _as_json(args, f"arguments of tool {name!r}")
        self._check_pin(name)
        if self._snapshot is not None:
            response = self._snapshot.serve(name, args, live=contract.fingerprint)
        else:
            response = self.invoke(name, args)
        state = None
        if self.state is not None:
            found = self.state(name, args, response)
            state = dict(found) if found is not None else None
        _set_span_attributes(contract)
        if self.recorder is not None:
            self.recorder.record(
                tool=name, args=args, response=response, fingerprint=contract.fingerprint, state=state
            )
        return response

    def invoke(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run the real tool once, without recording; return its response as a JSON object."""
        value = self._tools[name].fn(**args)
        response = value if isinstance(value, dict) else {"result": value}
        return _as_json(response, f"response of tool {name!r}")

    def _check_pin(self, name: str) -> None:
        pinned = self.pinned.get(name)
        live = self._tools[name].contract.fingerprint
        if pinned is not None and pinned != live:
            raise ToolDriftError(tool=name, recorded=pinned, live=live)


def _as_json(value: dict[str, Any], what: str) -> dict[str, Any]:
    """``value`` as it reads back from its canonical JSON, so recorded and returned agree."""
    try:
        text = canonical(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"the {what} cannot be recorded as JSON: {err}") from err
    result: dict[str, Any] = json.loads(text)
    return result


@functools.cache
def _otel_trace() -> ModuleType | None:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


def _set_span_attributes(contract: ToolContract) -> None:
    trace = _otel_trace()
    if trace is None:
        return
    span = trace.get_current_span()
    span.set_attribute("tool.fingerprint", contract.fingerprint)
    span.set_attribute("tool.version", contract.version)
