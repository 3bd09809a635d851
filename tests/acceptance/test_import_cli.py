"""``toolreplay import`` as a user runs it: stdin/stdout, several inputs, refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli
from toolreplay.cli.importers import session_names

ONE = (
    b'[{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",'
    b' "input": {"city": "Paris"}}]},\n'
    b' {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rain"}]}]\n'
)
ONE_LINE = b'{"args":{"city":"Paris"},"index":0,"response":{"content":"rain"},"tool":"get_weather"}\n'
TWO = b'{"messages": [{"role": "tool", "tool_call_id": "a", "content": "x"}]}\n{"messages": []}\n'
SUMMARY_TAIL = ", 0 with arguments not valid JSON, 0 without arguments\n"


def _invoke(runner: CliRunner, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["import", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_stdin_to_stdout(runner: CliRunner) -> None:
    """'-' in and '-o -' out: the one session's transcript on stdout, the summary on stderr."""
    code, out, err = _invoke(runner, "--from", "anthropic", "-", "-o", "-", stdin=ONE)
    assert (code, out) == (0, ONE_LINE.decode())
    head = "-: anthropic: 1 session, 1 call, 0 without a result, 0 results without a call"
    assert err == head + SUMMARY_TAIL


def test_stdout_refuses_several_sessions_and_prints_nothing(runner: CliRunner) -> None:
    """-o - takes one session; an input with more is refused before anything is printed."""
    code, out, err = _invoke(runner, "-", "-o", "-", stdin=TWO)
    assert (code, out) == (2, "")
    assert err == "toolreplay: error: -: holds more than one session; -o - prints one: pass -o DIR\n"


def test_stdout_takes_one_input(runner: CliRunner, tmp_path: Path) -> None:
    """-o - with two inputs is a usage error."""
    code, _, err = _invoke(runner, "a.json", "b.json", "-o", "-")
    assert code == 2
    assert err == "toolreplay: error: -o - prints one session: give exactly one FILE\n"


def test_a_bad_input_writes_nothing_and_the_good_ones_are_imported(runner: CliRunner, tmp_path: Path) -> None:
    """Each input is all or nothing: the malformed one leaves no file (not even a temp file),
    the others are written, and the exit code is 2."""
    good = tmp_path / "good.json"
    good.write_bytes(ONE)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(TWO + b'{"messages": [{"role": "tool"}]}\n')
    out = tmp_path / "out"
    code, stdout, err = _invoke(runner, "--from", "openai-chat", str(bad), str(good), "-o", str(out))
    assert (code, stdout) == (2, "")
    assert err.splitlines() == [
        f'toolreplay: error: {bad}:3: a tool message has no "tool_call_id" (at /messages/0)',
        f"{good}: openai-chat: 1 session, 0 calls, 0 without a result, 0 results without a call"
        + SUMMARY_TAIL.rstrip("\n"),
    ]
    assert sorted(p.name for p in out.iterdir()) == ["good.jsonl"]


def test_a_name_the_file_system_refuses_leaves_no_session_written(runner: CliRunner, tmp_path: Path) -> None:
    """An input's sessions are placed all or none: a long input name whose second session's
    label makes a name past the file system's limit used to leave the first one written."""
    long_name = tmp_path / ("s" * 200 + ".jsonl")
    episodes = [
        {"messages": [{"role": "user", "content": "hi"}], "episode_id": label} for label in ("a", "b" * 64)
    ]
    long_name.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    out = tmp_path / "out"
    code, stdout, err = _invoke(runner, "--from", "openai-chat", str(long_name), "-o", str(out))
    assert (code, stdout) == (2, "")
    assert err.startswith(f"toolreplay: error: {out}/{'s' * 200}-{'b' * 64}.jsonl: cannot write here: ")
    assert list(out.iterdir()) == []


def test_names_that_would_collide_are_refused_before_writing(runner: CliRunner, tmp_path: Path) -> None:
    """Two inputs with the same name would overwrite each other's transcripts: refused, nothing made."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.json").write_bytes(ONE)
    out = tmp_path / "out"
    inputs = [str(tmp_path / "a" / "run.json"), str(tmp_path / "b" / "run.json")]
    code, _, err = _invoke(runner, *inputs, "-o", str(out))
    assert code == 2
    assert "would both be written as run*.jsonl" in err
    assert not out.exists()


def test_an_input_is_never_overwritten_by_its_own_transcript(runner: CliRunner, tmp_path: Path) -> None:
    """Importing x.jsonl into its own folder would replace it with its transcript: refused."""
    trace = tmp_path / "x.jsonl"
    content = b'{"role": "tool", "tool_call_id": "a", "content": "x"}\n{"role": "user", "content": "hi"}\n'
    trace.write_bytes(content)
    code, _, err = _invoke(runner, str(trace), "-o", str(tmp_path))
    assert code == 2
    assert "would overwrite its own input" in err
    assert trace.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]


def test_output_must_be_a_directory(runner: CliRunner, tmp_path: Path) -> None:
    """-o naming a regular file is a usage error."""
    target = tmp_path / "file"
    target.write_text("")
    code, _, err = _invoke(runner, "-", "-o", str(target), stdin=ONE)
    assert code == 2
    assert err == f"toolreplay: error: {target}: is not a directory\n"


def test_a_missing_input_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    """A file that does not exist is reported like any bad input."""
    code, _, err = _invoke(runner, str(tmp_path / "nope.json"), "-o", str(tmp_path / "out"))
    assert code == 2
    assert err == f"toolreplay: error: {tmp_path / 'nope.json'}: no such file\n"


def test_help_lists_the_formats(runner: CliRunner) -> None:
    """--from offers auto and every importer."""
    result = runner.invoke(cli, ["import", "--help"], catch_exceptions=False)
    assert "[auto|openai-chat|openai-responses|anthropic|otel|swe-agent|tau2|inspect]" in result.output


@pytest.mark.parametrize(
    ("count", "first", "last"),
    [
        (1, "s.jsonl", "s.jsonl"),
        (2, "s-0000.jsonl", "s-0001.jsonl"),
        (10001, "s-00000.jsonl", "s-10000.jsonl"),
    ],
)
def test_session_names(count: int, first: str, last: str) -> None:
    """One session keeps the input's name; several are numbered, zero-padded so they sort."""
    names = session_names("s", count)
    assert (len(names), names[0], names[-1]) == (count, first, last)


def test_real_process_pipes_stdin_to_stdout() -> None:
    """The installed entry point reads a trace from a pipe and writes the transcript to a pipe."""
    done = subprocess.run(
        [sys.executable, "-c", "from toolreplay.cli import main; main()", "import", "-", "-o", "-"],
        input=ONE,
        capture_output=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, ONE_LINE)
    assert done.stderr.startswith(b"-: anthropic (detected): 1 session, 1 call,")


def test_stdin_into_a_directory_is_named_stdin(runner: CliRunner, tmp_path: Path) -> None:
    """'-' with -o DIR writes DIR/stdin.jsonl (several sessions: stdin-0000.jsonl ...)."""
    code, _, _ = _invoke(runner, "-", "-o", str(tmp_path), stdin=ONE)
    assert code == 0
    assert (tmp_path / "stdin.jsonl").read_bytes() == ONE_LINE
    code, _, _ = _invoke(runner, "--from", "openai-chat", "-", "-o", str(tmp_path / "two"), stdin=TWO)
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["stdin-0000.jsonl", "stdin-0001.jsonl"]
