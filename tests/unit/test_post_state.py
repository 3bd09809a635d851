"""State commands: the ``CMD`` / ``TOOL=CMD`` grammar, what their output becomes, and the library's
``Recorder(state_command=...)`` with a ``ToolRegistry`` whose tool commits to a real git repository."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import Repo
from toolreplay import Recorder, StateCommand, StateCommandWarning, ToolRegistry
from toolreplay.state_command import parse_state_command
from toolreplay.transcript import read_transcript

PYTHON = shlex.quote(sys.executable)


@pytest.mark.parametrize(
    ("given", "tool", "argv"),
    [
        ("git -C repo rev-parse HEAD", None, ("git", "-C", "repo", "rev-parse", "HEAD")),
        ("git_add=git status --porcelain", "git_add", ("git", "status", "--porcelain")),
        ("git log -1 --format=%H", None, ("git", "log", "-1", "--format=%H")),
        ("sha256sum 'my notes.md'", None, ("sha256sum", "my notes.md")),
        ("fs.write=cat 'a=b'", "fs.write", ("cat", "a=b")),
    ],
)
def test_the_grammar(given: str, tool: str | None, argv: tuple[str, ...]) -> None:
    """``TOOL=`` names a tool only when TOOL is a tool name; the rest splits as a POSIX shell splits words."""
    command = parse_state_command(given)
    assert (command.tool, command.argv) == (tool, argv)
    assert command.text == given.removeprefix(f"{tool}=")


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("git status 'x", "cannot be split into words: no closing quotation"),
        ("   ", "names no command"),
        ("git_add=", "names no command for tool 'git_add'"),
        ("echo a\0b", "holds a NUL character, which no command's words can hold"),
    ],
)
def test_a_command_that_cannot_run_is_refused(given: str, problem: str) -> None:
    with pytest.raises(ValueError, match=f"^{problem}$"):
        parse_state_command(given)


def _printing(text: bytes) -> str:
    """A command that writes ``text`` to its stdout, as bytes."""
    return f"{PYTHON} -c " + shlex.quote(f"import sys; sys.stdout.buffer.write({text!r})")


@pytest.mark.parametrize(
    ("output", "state"),
    [
        (
            b'{"head": "abc", "dirty": false, "files": ["a", "b"]}\n',
            {"head": "abc", "dirty": "false", "files": '["a","b"]'},
        ),
        (b"4f1c\n", None),  # text: under the command's own words
        (b'"4f1c"', None),  # JSON, but no object: text too
        (b'{"a": 1, "a": 2}', None),  # an object the strict reader refuses: text
        (b"", None),
    ],
)
def test_output_becomes_the_state(output: bytes, state: dict[str, str] | None) -> None:
    """A JSON object's members (a value that is not a string as canonical JSON), any other output
    as text under the command's words."""
    command = _printing(output)
    taken, warning = StateCommand(command).take("write_file", {})
    assert warning == ""
    assert taken == (state if state is not None else {command: output.decode()})


def test_output_that_is_not_utf8_gives_no_state() -> None:
    taken, warning = StateCommand(_printing(b"\xff")).take("write_file", {}, index=4)
    assert taken is None
    assert warning.endswith(
        "for 'write_file' at index 4: its output is not UTF-8 text; the call stays audit-incomplete"
    )


def test_a_tool_name_with_a_nul_character_gives_a_warning_not_a_crash() -> None:
    """A tool name (a client's or a server's) the environment cannot hold: the call has no state and
    one warning says why; the process is never started."""
    taken, warning = StateCommand("echo hi").take("write\0file", {}, mutates=True, index=2)
    assert taken is None
    assert warning == (
        "state command 'echo hi' for 'write\\x00file' at index 2: cannot start 'echo': its words or the"
        " tool's name hold a NUL character; the call stays audit-incomplete"
    )


def test_two_commands_that_give_the_same_key_give_no_state() -> None:
    one, two = _printing(b'{"head": "a"}'), _printing(b'{"head": "b"}')
    taken, warning = StateCommand([one, two]).take("write_file", {})
    assert taken is None
    assert "gives 'head', which an earlier state command of the call gave too" in warning


@pytest.fixture
def notes(tmp_path: Path, git_isolated: None) -> Repo:
    repo = Repo.create(tmp_path / "repo")
    repo.write("notes.md", "start\n")
    repo.commit_all("start")
    return repo


def _registry(repo: Repo, recorder: Recorder) -> ToolRegistry:
    """``save_note`` commits to the repository (a mutator), ``read_note`` reads it."""

    def save_note(text: str) -> dict[str, Any]:
        repo.write("notes.md", text)
        repo.commit_all(text)
        return {"saved": True}

    def read_note() -> dict[str, Any]:
        return {"text": (repo.path / "notes.md").read_text()}

    registry = ToolRegistry(recorder=recorder, mutators=frozenset({"save_note"}))
    registry.register(save_note, version="1")
    registry.register(read_note, version="1")
    return registry


def test_the_recorder_takes_the_state_after_a_mutating_call(notes: Repo, tmp_path: Path) -> None:
    """Through a registry, each call of the mutator gets the repository's HEAD right after it; the
    read gets none; the tool and arguments reach the command in its environment."""
    head = f"git -C {shlex.quote(str(notes.path))} rev-parse HEAD"
    seen = f"{PYTHON} -c " + shlex.quote(
        "import json, os; print(json.dumps({os.environ['TOOLREPLAY_TOOL']: os.environ['TOOLREPLAY_ARGS']}))"
    )
    out = tmp_path / "run.jsonl"
    with Recorder(out, state_command=[head, seen]) as recorder:
        registry = _registry(notes, recorder)
        registry.call("save_note", text="one")
        first = notes.head()
        registry.call("read_note")
        registry.call("save_note", text="two")
    records = read_transcript(str(out))
    assert [(r.tool, r.state) for r in records] == [
        ("save_note", {head: first + "\n", "save_note": '{"text":"one"}'}),
        ("read_note", None),
        ("save_note", {head: notes.head() + "\n", "save_note": '{"text":"two"}'}),
    ]
    assert first != notes.head()


def test_a_failing_command_is_a_warning_and_no_state(notes: Repo, tmp_path: Path) -> None:
    """The call is recorded without a state (never a guessed one) and a StateCommandWarning names it."""
    out = tmp_path / "run.jsonl"
    with Recorder(out, state_command="git -C nowhere rev-parse HEAD") as recorder:
        registry = _registry(notes, recorder)
        with pytest.warns(StateCommandWarning) as caught:
            registry.call("save_note", text="one")
    assert [str(w.message) for w in caught] == [
        "state command 'git -C nowhere rev-parse HEAD' for 'save_note' at index 0: it exited with status"
        " 128; its last words: fatal: cannot change to 'nowhere': No such file or directory;"
        " the call stays audit-incomplete"
    ]
    assert [r.state for r in read_transcript(str(out))] == [None]


def test_the_recorder_alone_decides_by_its_mutators(tmp_path: Path) -> None:
    """Without a registry, the state command's mutators (default: the default list) decide; a tool a
    command names gets its state whatever they say."""
    out = tmp_path / "run.jsonl"
    stamp, named = _printing(b'{"v": "1"}'), "lookup=" + _printing(b'{"w": "2"}')
    with Recorder(out, state_command=StateCommand([stamp, named])) as recorder:
        for tool in ("write_file", "search", "lookup"):
            recorder.record(tool=tool, args={}, response={})
    assert [r.state for r in read_transcript(str(out))] == [{"v": "1"}, None, {"w": "2"}]
