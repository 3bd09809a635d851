"""No command's -o replaces an existing file unless --force says so: nothing is lost by accident."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tests.gitrepo import Repo
from tests.mcp_agent import record_calls
from tests.realservers import python_server
from toolreplay.cli import cli

TRANSCRIPT = SAMPLES / "session-clean.jsonl"
TOOLS = Path(__file__).resolve().parent.parent / "data" / "tools" / "openai_MailCli_tools.json"
KEPT = "the earlier reasoning, which must survive\n"


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    # through list_commands/get_command: the CLI loads a command's module only when asked
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def _writes_files(command: click.Command) -> bool:
    return any("-o" in p.opts for p in command.params if isinstance(p, click.Option))


def _seal(tmp: Path) -> tuple[list[str], Path]:
    return ["seal", str(TRANSCRIPT)], tmp / "out.sealed.jsonl"


def _fingerprint(tmp: Path) -> tuple[list[str], Path]:
    return ["fingerprint", str(TOOLS)], tmp / "tools.lock.json"


def _sign(tmp: Path) -> tuple[list[str], Path]:
    sealed, key = tmp / "s.sealed.jsonl", tmp / "key.pem"
    runner = CliRunner()
    assert runner.invoke(cli, ["seal", str(TRANSCRIPT), "-o", str(sealed)]).exit_code == 0
    assert runner.invoke(cli, ["keygen", str(key)]).exit_code == 0
    return ["sign", str(sealed), "--key", str(key)], tmp / "s.sig"


def _note(tmp: Path) -> tuple[list[str], Path]:
    repo = Repo.create(tmp / "repo")
    repo.write_baseline("b.sealed.jsonl", 2)
    repo.commit_all("baseline")
    repo.write_baseline("b.sealed.jsonl", 3)
    return ["note", str(repo.path / "b.sealed.jsonl")], repo.path / "drift-notes" / "b.md"


def _import(tmp: Path) -> tuple[list[str], Path]:
    # -o names the folder; the transcript written into it is what must not be replaced
    source = tmp / "chat.json"
    source.write_text(
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}'
    )
    return ["import", "--from", "openai-chat", str(source)], tmp / "out" / "chat.jsonl"


def _record(tmp: Path) -> tuple[list[str], Path]:
    # a server that exits at once: the proxy records nothing and exits with its status (0)
    return ["record", "--", sys.executable, "-c", "pass"], tmp / "run.jsonl"


def _probe(tmp: Path) -> tuple[list[str], Path]:
    # a receipt of a real server's stable call (mcp-server-time's convert_time)
    server = python_server("time")
    call = ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"})
    recording, _ = record_calls(tmp, server, [call])
    return ["probe", str(recording), "--repeat", "2", "--", *server], tmp / "receipt.sealed.jsonl"


def _render(tmp: Path) -> tuple[list[str], Path]:
    return ["render", str(TRANSCRIPT)], tmp / "chain.svg"


CASES: dict[str, Callable[[Path], tuple[list[str], Path]]] = {
    "record": _record,
    "seal": _seal,
    "fingerprint": _fingerprint,
    "sign": _sign,
    "note": _note,
    "import": _import,
    "render": _render,
    "probe": _probe,
}


def test_every_command_with_an_output_file_is_covered() -> None:
    """Each command that takes -o has --force and a case below (a new -o cannot skip the rule)."""
    writers = sorted(name for name, command in _commands(cli) if _writes_files(command))
    assert writers == sorted(CASES)
    for name, command in _commands(cli):
        if name in CASES:
            assert "force" in {p.name for p in command.params}, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_existing_output_is_kept_without_force(
    name: str, tmp_path: Path, runner: CliRunner, git_isolated: None
) -> None:
    """-o onto an existing file is exit 2 with one line naming it, the file untouched; --force replaces it."""
    args, target = CASES[name](tmp_path)
    output = str(target.parent) if name == "import" else str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(KEPT)
    # options go right after the command's name: record's server command line ends the arguments
    result = runner.invoke(cli, [args[0], "-o", output, *args[1:]], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert (
        result.output
        == f"toolreplay: error: {target}: already exists; not replacing it (--force replaces it)\n"
    )
    assert target.read_text() == KEPT
    assert sorted(p.name for p in target.parent.iterdir() if p.name.startswith(".toolreplay-")) == []
    forced = runner.invoke(cli, [args[0], "-o", output, "--force", *args[1:]], catch_exceptions=False)
    assert forced.exit_code == 0, forced.output
    assert target.read_text() != KEPT


def test_sign_keeps_an_existing_default_signature(tmp_path: Path, runner: CliRunner) -> None:
    """sign without -o writes SEALED.sig, and does not replace one that exists either."""
    args, _ = _sign(tmp_path)
    sig = Path(args[1] + ".sig")
    sig.write_text(KEPT)
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert (result.exit_code, sig.read_text()) == (2, KEPT)
    assert runner.invoke(cli, [*args, "--force"], catch_exceptions=False).exit_code == 0
    assert sig.read_text() != KEPT
