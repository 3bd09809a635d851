"""Every refusal of docs/spec.md §1.1 through the real CLI.

One line naming file and line, exit 2, no traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli
from toolreplay.limits import MAX_RECORD_BYTES

GOOD = b'{"index":0,"tool":"t","args":{},"response":{}}'


def rec(index: object = 0, **fields: object) -> bytes:
    import json

    value = {"index": index, "tool": "t", "args": {}, "response": {}}
    value.update(fields)
    return json.dumps(value).encode()


# (case id, file bytes, expected line number, expected problem text)
MATRIX: list[tuple[str, bytes, int | None, str]] = [
    ("invalid-json", b"{not json}\n", 1, "invalid JSON: Expecting property name enclosed in double quotes"),
    ("truncated-json", GOOD[:-5] + b"\n", 1, "invalid JSON"),
    ("not-an-object", b"[1,2]\n", 1, "a record must be a JSON object, not an array"),
    (
        "invalid-utf8",
        b'{"index":0,"tool":"t\xc3\x28","args":{},"response":{}}\n',
        1,
        "invalid UTF-8 at byte 21",
    ),
    ("bom", b"\xef\xbb\xbf" + GOOD + b"\n", 1, "starts with a UTF-8 byte-order mark"),
    (
        "duplicate-key-top",
        b'{"index":0,"index":0,"tool":"t","args":{},"response":{}}\n',
        1,
        'duplicate key "index"',
    ),
    (
        "duplicate-key-deep",
        GOOD + b'\n{"index":1,"tool":"t","args":{"a":{"b":[{"c":1,"c":2}]}},"response":{}}\n',
        2,
        'duplicate key "c"',
    ),
    ("nan", b'{"index":0,"tool":"t","args":{"x":NaN},"response":{}}\n', 1, "NaN is not valid JSON"),
    (
        "infinity",
        b'{"index":0,"tool":"t","args":{},"response":{"x":Infinity}}\n',
        1,
        "Infinity is not valid JSON",
    ),
    ("overflow-1e400", b'{"index":0,"tool":"t","args":{"x":1e400},"response":{}}\n', 1, "too large"),
    ("lone-surrogate", b'{"index":0,"tool":"t\\ud800","args":{},"response":{}}\n', 1, "lone surrogate"),
    (
        "control-character",
        b'{"index":0,"tool":"t\x01","args":{},"response":{}}\n',
        1,
        "invalid JSON: Invalid control character at column 21",
    ),
    ("index-bool", rec(True) + b"\n", 1, 'field "index" must be an integer, not a boolean'),
    ("index-float", rec(1.0) + b"\n", 1, 'field "index" must be an integer, not a number'),
    ("index-string", rec("0") + b"\n", 1, 'field "index" must be an integer, not a string'),
    ("index-out-of-order", GOOD + b"\n" + rec(2) + b"\n", 2, "index 2 is out of order: expected 1"),
    ("index-not-zero", rec(1) + b"\n", 1, "index 1 is out of order: expected 0"),
    ("missing-field", b'{"index":0,"tool":"t","args":{}}\n', 1, 'missing field "response"'),
    ("unknown-field", rec(0, extra=1) + b"\n", 1, 'unknown field "extra"'),
    ("tool-empty", rec(0, tool="") + b"\n", 1, 'field "tool" must not be empty'),
    ("tool-number", rec(0, tool=3) + b"\n", 1, 'field "tool" must be a string, not an integer'),
    ("args-array", rec(0, args=[]) + b"\n", 1, 'field "args" must be an object, not an array'),
    ("response-null", rec(0, response=None) + b"\n", 1, 'field "response" must be an object, not null'),
    ("fingerprint-upper", rec(0, fingerprint="ABCDEF0123456789") + b"\n", 1, "16 lowercase hex digits"),
    ("state-not-strings", rec(0, state={"r": 1}) + b"\n", 1, "state values must be strings"),
    (
        "deep-nesting",
        b'{"index":0,"tool":"t","args":' + b"[" * 10_000 + b"]" * 10_000 + b',"response":{}}\n',
        1,
        "nesting is deeper than 128 levels",
    ),
    (
        "long-integer",
        b'{"index":0,"tool":"t","args":{"n":' + b"9" * 5000 + b'},"response":{}}\n',
        1,
        "integer with 5000 digits is longer than 4300",
    ),
    (
        "over-size-cap",
        b'{"index":0,"tool":"t","args":{"s":"' + b"x" * MAX_RECORD_BYTES + b'"},"response":{}}\n',
        1,
        f"record is over the {MAX_RECORD_BYTES}-byte limit",
    ),
]


def run_cli(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("content", "line", "problem"), [m[1:] for m in MATRIX], ids=[m[0] for m in MATRIX])
@pytest.mark.parametrize("command", ["replay", "seal"])
def test_refused_with_one_line(
    tmp_path: Path, runner: CliRunner, command: str, content: bytes, line: int, problem: str
) -> None:
    """The CLI refuses the input with exit 2 and exactly one stderr line `FILE:LINE: problem`."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code, out, err = run_cli(runner, command, str(path))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"toolreplay: error: {path}:{line}: ")
    assert problem in lines[0]
    assert "Traceback" not in err


def test_seal_output_not_half_written(tmp_path: Path, runner: CliRunner) -> None:
    """A refusal on a late line leaves no output file and no temp file behind."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(GOOD + b"\n" + rec(1) + b"\n" + b"{oops\n")
    out = tmp_path / "out.sealed.jsonl"
    code, _, err = run_cli(runner, "seal", str(path), "-o", str(out))
    assert code == 2 and f"{path}:3:" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_seal_keeps_old_output_on_failure(tmp_path: Path, runner: CliRunner) -> None:
    """An existing output file is left untouched when sealing fails."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"{oops\n")
    out = tmp_path / "out.sealed.jsonl"
    out.write_text("previous\n")
    assert run_cli(runner, "seal", str(path), "-o", str(out))[0] == 2
    assert out.read_text() == "previous\n"


@pytest.mark.parametrize("command", ["replay", "seal", "verify", "validate"])
def test_missing_file(tmp_path: Path, runner: CliRunner, command: str) -> None:
    """A missing file is a usage error naming it."""
    missing = tmp_path / "nope.jsonl"
    code, _, err = run_cli(runner, command, str(missing))
    assert code == 2
    assert err == f"toolreplay: error: {missing}: no such file\n"


def test_directory(tmp_path: Path, runner: CliRunner) -> None:
    """A directory is a usage error naming it."""
    code, _, err = run_cli(runner, "replay", str(tmp_path))
    assert (code, err) == (2, f"toolreplay: error: {tmp_path}: is a directory, not a file\n")


def test_bad_option(runner: CliRunner, tmp_path: Path) -> None:
    """An unknown option is exit 2 (click's usage error)."""
    assert runner.invoke(cli, ["replay", "--nope", str(tmp_path)]).exit_code == 2


@pytest.mark.parametrize(
    ("content", "calls"),
    [
        (b"", 0),
        (b"\n\n  \n", 0),
        (GOOD, 1),
        (GOOD + b"\r\n" + rec(1, tool="u") + b"\r\n", 2),
        (b"\n" + GOOD + b"\n\n" + rec(1, tool="u"), 2),
        (b'{"index":0,"tool":"t","args":{"s":"a\xe2\x80\xa8b"},"response":{}}\n', 1),
        (b'{"index":0,"tool":"t","args":{"s":"a\xc2\x85b"},"response":{}}\n', 1),
    ],
    ids=["empty", "blank-lines", "no-final-newline", "crlf", "blank-between", "raw-u2028", "raw-nel"],
)
def test_accepted_layouts(tmp_path: Path, runner: CliRunner, content: bytes, calls: int) -> None:
    """Empty files, blank lines, CRLF, no final newline and raw U+2028/U+0085 inside strings are fine."""
    path = tmp_path / "ok.jsonl"
    path.write_bytes(content)
    code, out, _ = run_cli(runner, "replay", str(path))
    assert code == 0
    assert out.splitlines()[0] == f"calls: {calls}"


@pytest.mark.slow
def test_no_traceback_in_real_process(tmp_path: Path) -> None:
    """Through a real interpreter, every matrix input exits 2 with one line and no traceback."""
    for name, content, _, _ in MATRIX:
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(content)
        proc = subprocess.run(
            [sys.executable, "-m", "toolreplay", "replay", str(path)], capture_output=True, check=False
        )
        assert proc.returncode == 2, name
        assert b"Traceback" not in proc.stderr, name
        assert proc.stderr.count(b"\n") == 1, name
