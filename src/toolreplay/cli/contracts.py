"""Tool contract commands: fingerprint, fingerprint-diff."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from toolreplay.analyses.fingerprint_diff import carries_no_versions, compare_transcript, lock_report
from toolreplay.analyses.schema_break import changed_schemas, schema_breaks
from toolreplay.cli.base import Seconds, atomic_output, force_option, mutator_option, warn
from toolreplay.cli.defaults import announce, config_option, path_setting, read_config
from toolreplay.cli.formats import emit, format_option
from toolreplay.config import DEFAULT_MUTATORS, Config
from toolreplay.contracts.definitions import import_definitions, read_definitions
from toolreplay.contracts.keep import keep_declared, previous_lock
from toolreplay.contracts.lock import ToolLock, dump_lock, load_lock
from toolreplay.contracts.mcp import describe, url_lock
from toolreplay.contracts.source import is_python_source, source_lock
from toolreplay.errors import InputError
from toolreplay.escape import quote, url_shown
from toolreplay.findings import Line, Report, sort_findings
from toolreplay.transcript import Record, iter_records


def _version_text(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    # an argument that is not UTF-8 arrives with lone surrogates, which no fingerprint or lock can hold
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise click.BadParameter(f"{quote(value)} is not UTF-8 text") from None
    return value


@click.command(name="fingerprint")
@click.argument("source", nargs=-1)
@click.option(
    "-o", "--output", metavar="LOCK", help="Write the tool lock here (atomically) instead of stdout."
)
@click.option(
    "--version",
    "tool_version",
    callback=_version_text,
    metavar="VERSION",
    help="The version pinned for every tool that does not declare its own (default: none; with --mcp,"
    " the server's serverInfo.version, as record --lock pins it).",
)
@force_option
@click.option("--mcp", is_flag=True, help="SOURCE... is the command line of an MCP stdio server to start.")
@click.option("--target", metavar="URL", help="Ask the MCP server at this Streamable HTTP URL (no SOURCE).")
@mutator_option
@click.option(
    "--timeout",
    type=Seconds(),
    default=30.0,
    show_default=True,
    help="Seconds allowed for a module or an MCP server to give its tools.",
)
def fingerprint_cmd(
    source: tuple[str, ...],
    output: str | None,
    tool_version: str | None,
    mcp: bool,
    target: str | None,
    mutators: tuple[str, ...],
    timeout: float,
    force: bool,
) -> None:
    """Fingerprint the tools in SOURCE into a tool lock.

    SOURCE is a JSON or JSON Lines file of tool definitions (MCP tools/list, OpenAI
    tools, Anthropic tools), an OpenTelemetry trace (OTLP JSON) whose spans declare the
    tools offered to the model, a Python object as module:object (a ToolRegistry, a
    callable, or a list or dict of callables), or, with --mcp, the command line of an
    MCP server (options go before the --), or, with --target, a Streamable HTTP server's URL:

    \b
        toolreplay fingerprint -o tools.lock.json --mcp -- python server.py
        toolreplay fingerprint -o tools.lock.json --target http://127.0.0.1:8000/mcp
    """
    lock, warnings, named = _fingerprinted(source, mcp, target, tool_version, mutators, timeout)
    _warn(warnings)
    if output is not None and force:
        lock = _keep_declared(output, lock)
    try:
        text = dump_lock(lock)
    except InputError as err:  # a schema too deep for a lock to hold
        raise InputError(err.problem, path=named) from err
    with atomic_output(output, replace=force) as out:
        out.write(text)


def _fingerprinted(
    source: tuple[str, ...],
    mcp: bool,
    target: str | None,
    version: str | None,
    mutators: tuple[str, ...],
    timeout: float,
) -> tuple[ToolLock, tuple[str, ...], str]:
    """The lock of what the options name, its warnings, and how errors name it."""
    if target is not None:
        if source or mcp:
            raise click.UsageError("--target asks a server by its URL: give no SOURCE and no --mcp")
        return _url_fingerprinted(target, version, timeout)
    if not mcp and len(source) != 1:
        raise click.UsageError("give one SOURCE (or --mcp and a server command line, or --target URL)")
    return _source_fingerprinted(source, mcp, version, mutators, timeout)


def _source_fingerprinted(
    source: tuple[str, ...], mcp: bool, version: str | None, mutators: tuple[str, ...], timeout: float
) -> tuple[ToolLock, tuple[str, ...], str]:
    """The lock of a definitions file, a module or a server (``--mcp``), its warnings, and how
    errors name it."""
    chosen = frozenset(mutators) if mutators else DEFAULT_MUTATORS
    lock, warnings = _lock_of(source, mcp=mcp, version=version, mutators=chosen, timeout=timeout)
    return lock, tuple(warnings), describe(source) if mcp else source[0]


def _url_fingerprinted(
    target: str, version: str | None, timeout: float
) -> tuple[ToolLock, tuple[str, ...], str]:
    """The lock of the server at the URL ``target``, its warnings, and the URL as errors show it."""
    lock, warnings = url_lock(target, version=version, timeout=timeout)
    return lock, tuple(warnings), url_shown(target)


def _lock_of(
    source: tuple[str, ...], *, mcp: bool, version: str | None, mutators: frozenset[str], timeout: float
) -> tuple[ToolLock, tuple[str, ...]]:
    """The lock of a definitions file, or of a module or server's tools, and its warnings."""
    if not mcp and not is_python_source(source[0], root=Path.cwd()):
        imported = import_definitions(
            read_definitions(source[0]), version=version or "", mutators=mutators, path=source[0]
        )
        return ToolLock.of(imported.contracts), imported.warnings
    # a module or a server is code: it runs in a child process, and its answer is data; the
    # user named it, so it gets the user's environment (as record and probe start a server)
    return source_lock(
        source if mcp else source[0],
        root=Path.cwd(),
        mutators=mutators,
        version=version,
        timeout=timeout,
        caller_env=True,
    )


def _warn(warnings: Iterable[str]) -> None:
    for warning in warnings:
        warn(warning)


def _keep_declared(output: str, lock: ToolLock) -> ToolLock:
    """``lock`` with what the lock it replaces declared (its flags), each field kept said on stderr."""
    old, problem = previous_lock(output)
    if problem:
        warn(problem)
    lock, kept = keep_declared(old, lock)
    for item in kept:
        click.echo(f"toolreplay: {item.text(output)}", err=True)
    return lock


@click.command(name="fingerprint-diff")
@click.argument("recorded", required=False)
@click.argument("live", required=False)
@click.option(
    "--calls",
    "calls",
    multiple=True,
    metavar="TRANSCRIPT",
    help="A transcript whose recorded calls are validated against each changed input schema (repeatable).",
)
@config_option
@format_option
@click.pass_context
def fingerprint_diff_cmd(
    ctx: click.Context,
    recorded: str | None,
    live: str | None,
    calls: tuple[str, ...],
    config_file: str | None,
    fmt: str,
) -> None:
    """Classify how the tools in LIVE (a tool lock) drifted from RECORDED.

    RECORDED is a tool lock (every difference: added, removed, signature, schema
    breaking/compatible, version, with JSON pointer and old -> new) or a transcript
    (*.jsonl, *.sealed.jsonl) whose per-call fingerprints are checked against LIVE.
    With --calls, every recorded call of a tool whose input schema changed is validated
    against the new schema; each one it refuses is a schema-break. Exit 1 when anything
    drifted. Left out, RECORDED is the config's tools_lock and
    LIVE its tools_source, fingerprinted now (a source without versions is not said to
    change them).
    """
    config = read_config(config_file)
    used: list[str] = []
    recorded = _recorded_lock(config, recorded, used)
    live, live_lock, unversioned = _live_lock(config, live, used)
    if _is_transcript(recorded):
        if calls:
            raise click.UsageError("--calls needs RECORDED to be a tool lock")
        report = _transcript_report(recorded, iter_records(recorded), live_lock)
        ctx.exit(emit([report], fmt))
    recorded_lock = load_lock(recorded)
    reports = [
        lock_report(recorded_lock, live_lock, command="fingerprint-diff", path=live, unversioned=unversioned)
    ]
    if calls:
        schemas = changed_schemas(recorded_lock, live_lock)
        reports.extend(_calls_report(path, schemas) for path in calls)
    ctx.exit(emit(reports, fmt))


def _live_lock(config: Config | None, live: str | None, used: list[str]) -> tuple[str, ToolLock, bool]:
    """(its name, its lock, whether it carries no versions): LIVE, a tool lock, else the config's
    tools_source fingerprinted now."""
    if live is None:
        return _configured_source(config, used)
    announce(config, used)
    if _is_transcript(live):
        raise InputError("LIVE must be a tool lock, not a transcript", path=live)
    return live, load_lock(live), False


def _recorded_lock(config: Config | None, recorded: str | None, used: list[str]) -> str:
    """RECORDED, else the config's tools_lock."""
    lock = path_setting(recorded, config, "tools_lock", used)
    if lock is None:
        raise click.UsageError("give RECORDED and LIVE, or set tools_lock and tools_source in the config")
    return lock


def _calls_report(path: str, schemas: dict[str, Any]) -> Report:
    """One transcript's recorded calls against the changed input schemas."""
    records = iter_records(path)
    counted = [0]

    def counting() -> Iterable[Record]:
        for record in records:
            counted[0] += 1
            yield record

    findings = sort_findings(schema_breaks(counting(), schemas, path=path))
    return Report(
        command="fingerprint-diff",
        path=path,
        header=(
            Line(key="calls", value=counted[0], text=str(counted[0])),
            Line(key="schemas changed", value=len(schemas), text=str(len(schemas))),
            Line(key="findings", value=len(findings), text=str(len(findings))),
        ),
        findings=tuple(findings),
    )


def _configured_source(config: Config | None, used: list[str]) -> tuple[str, ToolLock, bool]:
    """(its name, its lock, whether it carries no versions): the config's tools_source, fingerprinted
    now."""
    if config is None or config.tools_source is None:
        raise click.UsageError("give LIVE, or set tools_source in the config")
    used.append("tools_source")
    announce(config, used)
    lock, warnings = source_lock(config.tools_source, root=config.root, mutators=config.mutators)
    _warn(warnings)
    source = config.tools_source
    name = url_shown(source) if isinstance(source, str) else describe(source)
    return name, lock, carries_no_versions(lock)


def _is_transcript(path: str) -> bool:
    return path.endswith(".jsonl")


def _transcript_report(path: str, records: Iterable[Record], live: ToolLock) -> Report:
    result = compare_transcript(records, live, path=path)
    findings = sort_findings(result.findings)
    return Report(
        command="fingerprint-diff",
        path=path,
        header=(
            Line(key="calls", value=result.calls, text=str(result.calls)),
            Line(key="fingerprinted calls", value=result.fingerprinted, text=str(result.fingerprinted)),
            Line(key="drifted calls", value=result.drifted, text=str(result.drifted)),
            Line(key="findings", value=len(findings), text=str(len(findings))),
        ),
        findings=tuple(findings),
    )
