"""The determinism probe: call a tool N times with the same arguments, keep the evidence."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolreplay.canonical import canonical
from toolreplay.library.recorder import Recorder
from toolreplay.library.registry import ToolRegistry


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """What the probe saw."""

    tool: str
    calls: int
    #: how many different responses came back (1 for a deterministic tool)
    distinct: int
    #: the transcript the calls were written to
    path: str

    @property
    def stable(self) -> bool:
        return self.distinct <= 1


def probe_determinism(
    tool: ToolRegistry | Callable[..., Any],
    args: Mapping[str, Any],
    *,
    path: str | os.PathLike[str],
    times: int = 5,
    name: str | None = None,
    seal: bool = False,
) -> ProbeResult:
    """Call a tool ``times`` times with the same ``args`` and write the calls as a transcript.

    ``tool`` is a registry (then ``name`` picks the tool) or a plain callable (fingerprinted
    with an empty schema and no version). The transcript (sealed with ``seal``) is the input
    ``toolreplay replay`` reads for non-determinism and ``toolreplay diff`` compares.
    """
    if times < 1:
        raise ValueError("times must be at least 1")
    if isinstance(tool, ToolRegistry):
        registry = tool
        if name is None:
            raise ValueError("name the tool to probe in the registry")
    else:
        registry = ToolRegistry()
        name = registry.register(tool, name=name).name
    contract = registry.contract(name)
    responses = set()
    with Recorder(path, seal=seal) as recorder:
        for _ in range(times):
            response = registry.invoke(name, dict(args))
            responses.add(canonical(response))
            recorder.record(tool=name, args=dict(args), response=response, fingerprint=contract.fingerprint)
    return ProbeResult(tool=name, calls=times, distinct=len(responses), path=os.fspath(path))
