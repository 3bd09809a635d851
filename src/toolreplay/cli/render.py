"""``toolreplay render``: a transcript or sealed file drawn as its chain of calls (SVG)."""

from __future__ import annotations

import os

import click

from toolreplay.analyses.integrity import chain_broken
from toolreplay.analyses.replay import replay
from toolreplay.chain import seal, verify
from toolreplay.cli.base import atomic_output, force_option
from toolreplay.cli.defaults import announce, config_option, read_config
from toolreplay.config import DEFAULT_MUTATORS
from toolreplay.errors import InputError
from toolreplay.files import SEALED_SUFFIX
from toolreplay.findings import Finding, sort_findings
from toolreplay.report.chain_svg import ChainCall, chain_svg
from toolreplay.transcript import Record, read_links, read_transcript


def _chain(path: str) -> tuple[list[Record], list[str], list[Finding]]:
    """The records, each link's digest, and a broken link as a finding (a sealed file's own
    digests; a transcript's as ``seal`` would write them)."""
    if os.path.basename(path).endswith(SEALED_SUFFIX):
        return _sealed_chain(path)
    records = list(read_transcript(path))
    return records, [digest for digest, _ in seal(records)], []


def _sealed_chain(path: str) -> tuple[list[Record], list[str], list[Finding]]:
    """A sealed file's records, its own digests, and its first broken link as a finding."""
    links = list(read_links(path))
    state = verify(links)
    broken = [chain_broken(state.broken, path=path)] if state.broken else []
    return [link.record for link in links], [link.digest for link in links], broken


@click.command(name="render")
@click.argument("transcript")
@click.option("-o", "--output", required=True, metavar="FILE.svg", help="Where to write the picture.")
@force_option
@config_option
def render_cmd(transcript: str, output: str, force: bool, config_file: str | None) -> None:
    """Draw TRANSCRIPT (or a sealed file) as its hash chain of calls, findings marked by kind.

    The findings are replay's (non-determinism, redundant calls, with the config's mutators)
    and, for a sealed file, a broken link. The picture is deterministic: the same file gives
    the same bytes.
    """
    if not output.endswith(".svg"):
        raise InputError("the picture is SVG: name it FILE.svg", path=output)
    config = read_config(config_file)
    mutators = DEFAULT_MUTATORS
    if config is not None and "mutators" in config.declared:
        mutators = config.mutators
        announce(config, ["mutators"])
    records, digests, broken = _chain(transcript)
    result = replay(records, mutators=mutators, path=transcript)
    findings = sort_findings([*broken, *result.findings])
    calls = [ChainCall(index=r.index, tool=r.tool, digest=d) for r, d in zip(records, digests, strict=True)]
    with atomic_output(output, replace=force) as out:
        out.write(
            chain_svg(calls, findings, title=os.path.basename(transcript), divergence=result.divergence)
        )
