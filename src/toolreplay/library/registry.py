"""ToolRegistry: fingerprint tools at registration, record every call, replay from a snapshot."""

from __future__ import annotations

import functools
import inspect
import json
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, TypeVar, overload

from toolreplay.analyses.baseline import call_drift, compare_call, stop_drift
from toolreplay.analyses.difference import ABSENT, first_difference
from toolreplay.analyses.fingerprint_diff import compare_contracts
from toolreplay.analyses.judging import ToolBehaviour
from toolreplay.canonical import canonical
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.contracts.definitions import definition_contract
from toolreplay.contracts.fingerprint import python_signature
from toolreplay.contracts.lock import ToolContract, ToolLock, make_contract
from toolreplay.extras import installed
from toolreplay.findings import Finding
from toolreplay.kinds import AUDIT_INCOMPLETE, BEHAVIOR_DRIFT, EFFECT_DRIFT
from toolreplay.library.failures import (
    AuditIncompleteError,
    AuditIncompleteWarning,
    ContractTextDriftError,
    ReplayDivergenceError,
    ToolDriftError,
    audit_message,
)
from toolreplay.library.recorder import Recorder
from toolreplay.library.snapshot import Snapshot
from toolreplay.transcript import Record, make_record

F = TypeVar("F", bound=Callable[..., Any])
#: ``state(tool, args, response)`` -> post-call state fingerprints keyed by resource id, or None
StateFn = Callable[[str, dict[str, Any], dict[str, Any]], Mapping[str, str] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredTool:
    """A registered tool: the callable and its contract."""

    fn: Callable[..., Any]
    contract: ToolContract


class ToolRegistry:
    """Tools by name, each fingerprinted when registered (docs/spec.md §4).

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
      call :class:`SnapshotMissError`;
    * re-execution: with ``reexecute`` (a transcript path or a :class:`Snapshot`), every
      call runs live, meant for a sandbox or pinned environment, and is held against the
      recorded call at its position, as ``toolreplay diff`` holds a run against a
      baseline: another call raises :class:`ReplayDivergenceError` (``agent-drift``)
      before the tool runs, another response (``behavior-drift``) or another post-call
      ``state`` (``effect-drift``) after it; a state-changing call whose state is not
      recorded on both sides raises :class:`AuditIncompleteError`, or with
      ``allow_incomplete`` warns (:class:`AuditIncompleteWarning`) and lists it in
      :attr:`audit_gaps`. Leaving the registry's ``with`` block (or :meth:`finish`)
      before every recorded call was made raises ``agent-drift`` too.
    """

    def __init__(
        self,
        *,
        recorder: Recorder | None = None,
        state: StateFn | None = None,
        pinned: ToolLock | Mapping[str, str] | None = None,
        snapshot: Snapshot | str | os.PathLike[str] | None = None,
        mutators: frozenset[str] = DEFAULT_MUTATORS,
        reexecute: Snapshot | str | os.PathLike[str] | None = None,
        allow_incomplete: bool = False,
    ) -> None:
        if snapshot is not None and reexecute is not None:
            raise ValueError(
                "snapshot and reexecute exclude each other: one answers from the recording,"
                " the other runs the tools"
            )
        self.recorder = recorder
        self.state = state
        self.pinned: dict[str, str] = _pinned_fingerprints(pinned)
        #: the pinned contracts, when a lock was given: a drift then names what changed
        self._pinned_lock = pinned if isinstance(pinned, ToolLock) else None
        self.mutators = mutators
        self.allow_incomplete = allow_incomplete
        #: re-execution: the audit-incomplete findings downgraded to warnings, in call order
        self.audit_gaps: list[Finding] = []
        self._tools: dict[str, RegisteredTool] = {}
        self._snapshot = _load(snapshot)
        self._recording = _load(reexecute)
        self._replayed: list[Record] = []
        self._diverged = False

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
        _check_synchronous(fn)
        signature = python_signature(fn)
        tool = name or signature["name"]
        self._check_unregistered(tool)
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

    def _check_unregistered(self, tool: str) -> None:
        if tool in self._tools:
            raise ValueError(f"tool {tool!r} is already registered")

    def register_definition(
        self,
        definition: Mapping[str, Any],
        fn: Callable[..., Any],
        *,
        version: str = "",
        deterministic: bool = True,
        mutates: bool | None = None,
        idempotent: bool | None = None,
    ) -> ToolContract:
        """Register ``fn`` under a JSON/MCP tool definition and fingerprint it as the definition.

        ``definition`` is one tool as ``fingerprint`` reads it (an MCP ``tools/list`` tool, an
        OpenAI or Anthropic tool): its name, input schema, signature (derived from the schema)
        and contract text are the definition's, so the contract matches what ``fingerprint
        --mcp`` and ``record`` give for the same tool and version. ``mutates`` and ``idempotent``
        default to what the MCP annotations say (for other shapes: the mutator list, false).
        """
        _check_synchronous(fn)
        contract = definition_contract(definition, version=version, mutators=self.mutators)
        self._check_unregistered(contract.name)
        contract = replace(
            contract,
            deterministic=deterministic,
            mutates=contract.mutates if mutates is None else mutates,
            idempotent=contract.idempotent if idempotent is None else idempotent,
        )
        self._tools[contract.name] = RegisteredTool(fn=fn, contract=contract)
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
        args = as_json(args, f"arguments of tool {name!r}")
        self._check_pin(name)
        if self._recording is not None:
            self._check_call(self._recording, name, args, contract.fingerprint)
        response = self._response(name, args, contract.fingerprint)
        state = self._state_after(name, args, response)
        _set_span_attributes(contract)
        if self.recorder is not None:
            # the recorder's state commands may have given the state the state function did not
            state = self.recorder.record(
                tool=name,
                args=args,
                response=response,
                fingerprint=contract.fingerprint,
                state=state,
                text_digest=contract.text_digest,
                mutates=contract.mutates,
            ).state
        if self._recording is not None:
            self._check_outcome(self._recording, name, args, response, contract.fingerprint, state)
        return response

    def invoke(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run the real tool once, without recording; return its response as a JSON object."""
        value = self._tools[name].fn(**args)
        response = value if isinstance(value, dict) else {"result": value}
        return as_json(response, f"response of tool {name!r}")

    # -- re-execution ---------------------------------------------------------------------------

    @property
    def replayed(self) -> int:
        """Re-execution: how many recorded calls were made again so far."""
        return len(self._replayed)

    def _response(self, name: str, args: dict[str, Any], live: str) -> dict[str, Any]:
        """The answer to a call: the snapshot's, else the tool's own."""
        if self._snapshot is not None:
            return self._snapshot.serve(name, args, live=live)
        return self.invoke(name, args)

    def _state_after(
        self, name: str, args: dict[str, Any], response: dict[str, Any]
    ) -> dict[str, str] | None:
        """The post-call state the ``state`` function reports, if there is one."""
        if self.state is None:
            return None
        found = self.state(name, args, response)
        return dict(found) if found is not None else None

    def finish(self) -> None:
        """Re-execution: raise :class:`ReplayDivergenceError` if recorded calls were not made.

        Leaving the registry's ``with`` block calls it (unless an exception is leaving
        too, or a divergence was already raised).
        """
        if self._recording is None or self._diverged:
            return
        finding = stop_drift(self._recording.records, self._replayed, path=self._recording.path)
        if finding is not None:
            self._diverged = True
            raise ReplayDivergenceError(finding)

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is None:
            self.finish()

    def _check_call(self, recording: Snapshot, name: str, args: dict[str, Any], live: str) -> None:
        """Before the tool runs: is this the recorded call at this position, by the same tool?"""
        position = len(self._replayed)
        recorded = recording.records
        probe = make_record(index=position, tool=name, args=args, response={})
        finding = call_drift(
            recorded, [*self._replayed, probe], path=recording.path, volatile=recording.volatile
        )
        if finding is not None:
            self._diverged = True
            same_tool = position < len(recorded) and recorded[position].tool == name
            pointer, old, new = _where(recorded[position].args if same_tool else ABSENT, args)
            raise ReplayDivergenceError(finding, pointer=pointer, recorded_value=old, live_value=new)
        self._check_contract(recorded[position], name, live)

    def _check_contract(self, recorded: Record, name: str, live: str) -> None:
        """The call's tool has the contract text and the fingerprint it was recorded with."""
        position = len(self._replayed)
        said, text = recorded.text_digest, self._tools[name].contract.text_digest
        if said is not None and text is not None and said != text:
            self._diverged = True
            raise ContractTextDriftError(tool=name, recorded=said, live=text, index=position)
        fingerprint = recorded.fingerprint
        if fingerprint is not None and fingerprint != live:
            self._diverged = True
            raise ToolDriftError(
                tool=name,
                recorded=fingerprint,
                live=live,
                index=position,
                differences=self._what_changed(name, fingerprint),
            )

    def _check_outcome(
        self,
        recording: Snapshot,
        name: str,
        args: dict[str, Any],
        response: dict[str, Any],
        fingerprint: str,
        state: dict[str, str] | None,
    ) -> None:
        """After the tool ran: the same response and the same post-call state as recorded?"""
        position = len(self._replayed)
        recorded = recording.records[position]
        live = make_record(
            index=position, tool=name, args=args, response=response, fingerprint=fingerprint, state=state
        )
        self._replayed.append(live)
        behaviour = {
            tool: ToolBehaviour(deterministic=entry.contract.deterministic, mutates=entry.contract.mutates)
            for tool, entry in self._tools.items()
        }
        found = compare_call(
            recorded,
            live,
            path=recording.path,
            behaviour=behaviour,
            mutators=self.mutators,
            volatile=recording.volatile,
        )
        findings = {finding.kind: finding for finding in found}
        self._check_values(findings, recording, recorded, live)
        gap = findings.get(AUDIT_INCOMPLETE)
        if gap is not None:
            self._audit_gap(gap)

    def _check_values(
        self, findings: dict[str, Finding], recording: Snapshot, recorded: Record, live: Record
    ) -> None:
        """The response, then the post-call state, the same as recorded (the error points at what was
        compared: a masked value shows as ``<volatile>``)."""
        volatile = recording.volatile
        was, now = (recorded, live) if volatile is None else (volatile.shown(recorded), volatile.shown(live))
        for kind, old, new in (
            (BEHAVIOR_DRIFT, was.response, now.response),
            (EFFECT_DRIFT, was.state, now.state),
        ):
            if kind in findings:
                self._diverged = True
                pointer, old_value, new_value = _where(old, new)
                resource = _first_resource(recorded.state, live.state) if kind == EFFECT_DRIFT else None
                raise ReplayDivergenceError(
                    findings[kind],
                    pointer=pointer,
                    recorded_value=old_value,
                    live_value=new_value,
                    resource=resource,
                )

    def _audit_gap(self, gap: Finding) -> None:
        """A post-call state left out: an error, or a warning kept in ``audit_gaps`` when allowed."""
        if not self.allow_incomplete:
            self._diverged = True
            raise AuditIncompleteError(gap)
        self.audit_gaps.append(gap)
        warnings.warn(audit_message(gap), AuditIncompleteWarning, stacklevel=4)

    def _check_pin(self, name: str) -> None:
        pinned = self.pinned.get(name)
        live = self._tools[name].contract.fingerprint
        if pinned is not None and pinned != live:
            raise ToolDriftError(
                tool=name, recorded=pinned, live=live, differences=self._what_changed(name, pinned)
            )

    def _what_changed(self, name: str, recorded: str) -> tuple[str, ...]:
        """The fingerprint-diff lines from the pinned contract with ``recorded``'s fingerprint
        to the registered one; none when no pinned lock holds that contract."""
        old = self._pinned_lock.tools.get(name) if self._pinned_lock is not None else None
        if old is None or old.fingerprint != recorded:
            return ()

        return tuple(d.text() for d in compare_contracts(old, self._tools[name].contract))


def _load(recording: Snapshot | str | os.PathLike[str] | None) -> Snapshot | None:
    if recording is None or isinstance(recording, Snapshot):
        return recording
    return Snapshot.from_file(recording)


def as_json(value: dict[str, Any], what: str) -> dict[str, Any]:
    """``value`` as it reads back from its canonical JSON, so recorded and returned agree."""
    try:
        text = canonical(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"the {what} cannot be recorded as JSON: {err}") from err
    result: dict[str, Any] = json.loads(text)
    return result


@functools.cache
def _otel_trace() -> ModuleType | None:
    if not installed("otel"):  # span attributes are a bonus: without the extra, none are set
        return None
    from opentelemetry import trace

    return trace


def _set_span_attributes(contract: ToolContract) -> None:
    trace = _otel_trace()
    if trace is None:
        return
    span = trace.get_current_span()
    span.set_attribute("tool.fingerprint", contract.fingerprint)
    span.set_attribute("tool.version", contract.version)


def _where(recorded: Any, live: Any) -> tuple[str | None, Any, Any]:
    """Where two values first differ, and both values there (nothing when they do not, or when
    nothing was recorded to compare with)."""
    if recorded is ABSENT:
        return None, ABSENT, ABSENT
    return first_difference(recorded, live) or (None, ABSENT, ABSENT)


def _first_resource(recorded: dict[str, str] | None, live: dict[str, str] | None) -> str | None:
    """The first resource (by name) whose post-call state differs, when both sides record one."""
    if recorded is None or live is None:
        return None
    return min(key for key in recorded.keys() | live.keys() if recorded.get(key) != live.get(key))


def _pinned_fingerprints(pinned: ToolLock | Mapping[str, str] | None) -> dict[str, str]:
    """The pinned fingerprints by tool: a lock's, or the mapping given (none: none pinned)."""
    return dict(pinned.fingerprints if isinstance(pinned, ToolLock) else pinned or {})


def _check_synchronous(fn: Callable[..., Any]) -> None:
    """A tool is a plain function: the registry calls it and records what it returns."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError("async tools are not supported: register a synchronous wrapper")
