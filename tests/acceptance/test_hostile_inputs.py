"""Hostile inputs and odd output targets through the real CLI: exit 2 with one line, never exit 3."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tests.conftest import invoke as run
from toolreplay.cli import cli

TRANSCRIPT = SAMPLES / "session-dirty.jsonl"
TOOLS = Path(__file__).resolve().parent.parent / "data" / "tools" / "openai_MailCli_tools.json"


@pytest.fixture
def sealed(tmp_path: Path, runner: CliRunner) -> Path:
    path = tmp_path / "s.sealed.jsonl"
    assert run(runner, "seal", str(TRANSCRIPT), "-o", str(path))[0] == 0
    return path


@pytest.fixture
def private_key(tmp_path: Path, runner: CliRunner) -> Path:
    key = tmp_path / "k"
    assert run(runner, "keygen", str(key))[0] == 0
    return key


def _writers(tmp_path: Path, sealed: Path, key: Path) -> dict[str, list[str]]:
    return {
        "seal": ["seal", str(TRANSCRIPT)],
        "fingerprint": ["fingerprint", str(TOOLS)],
        "sign": ["sign", str(sealed), "--key", str(key)],
    }


@pytest.mark.parametrize("command", ["seal", "fingerprint", "sign"])
def test_output_to_a_directory_is_a_usage_error(
    tmp_path: Path, runner: CliRunner, sealed: Path, private_key: Path, command: str
) -> None:
    """-o naming a directory is exit 2 with one line naming it, and leaves no temp file behind."""
    target = tmp_path / "outdir"
    target.mkdir()
    args = _writers(tmp_path, sealed, private_key)[command]
    code, out, err = run(runner, *args, "-o", str(target))
    assert (code, out, err) == (2, "", f"toolreplay: error: {target}: is a directory, not a file\n")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".toolreplay-")]


@pytest.mark.parametrize("command", ["seal", "fingerprint", "sign"])
def test_empty_output_path_is_a_usage_error(
    tmp_path: Path, runner: CliRunner, sealed: Path, private_key: Path, command: str
) -> None:
    """-o '' is exit 2 (not an internal error, and not silently the default file)."""
    args = _writers(tmp_path, sealed, private_key)[command]
    code, out, err = run(runner, *args, "-o", "")
    assert (code, out) == (2, "")
    assert err == "toolreplay: error: the output path is empty\n"
    assert not (tmp_path / "s.sealed.jsonl.sig").exists()


def test_output_through_a_symlink_writes_the_file_it_names(tmp_path: Path, runner: CliRunner) -> None:
    """-o LINK writes the link's target, like a shell redirection, and keeps the link."""
    real = tmp_path / "real.sealed.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.sealed.jsonl"
    link.symlink_to(real.name)
    assert run(runner, "seal", str(TRANSCRIPT), "-o", str(link), "--force")[0] == 0
    assert link.is_symlink()
    assert real.read_text().startswith('{"args":')


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_output_to_a_fifo_writes_into_it(tmp_path: Path, runner: CliRunner) -> None:
    """-o FIFO (or /dev/stdout) writes into it instead of replacing it with a regular file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # a non-blocking reader lets the writer open the FIFO; the output fits its buffer
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code = run(runner, "seal", str(TRANSCRIPT), "-o", str(fifo))[0]
        try:
            received = os.read(reader, 1 << 16)
        except BlockingIOError:
            received = b""
    finally:
        os.close(reader)
    assert code == 0
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert received.count(b"\n") == 6


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_output_files_get_the_usual_mode(tmp_path: Path, runner: CliRunner) -> None:
    """A new output file is readable as the umask allows (not 0600), an existing one keeps its mode."""
    old = os.umask(0o022)
    try:
        new = tmp_path / "new.sealed.jsonl"
        assert run(runner, "seal", str(TRANSCRIPT), "-o", str(new))[0] == 0
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        kept = tmp_path / "kept.sealed.jsonl"
        kept.write_text("")
        kept.chmod(0o640)
        assert run(runner, "seal", str(TRANSCRIPT), "-o", str(kept), "--force")[0] == 0
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
        lock = tmp_path / "tools.lock.json"
        assert run(runner, "fingerprint", str(TOOLS), "-o", str(lock))[0] == 0
        assert stat.S_IMODE(lock.stat().st_mode) == 0o644
    finally:
        os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_keygen_private_key_stays_private(tmp_path: Path, runner: CliRunner) -> None:
    """The private key is still 0600 and the public key 0644 whatever the umask."""
    old = os.umask(0)
    try:
        assert run(runner, "keygen", str(tmp_path / "k"))[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "k.pub").stat().st_mode) == 0o644


def test_keygen_writes_no_half_pair(tmp_path: Path, runner: CliRunner) -> None:
    """When the public key cannot be written, the private key is not left behind either."""
    private = tmp_path / "k"
    code, _, err = run(runner, "keygen", str(private), "--public", str(tmp_path / "missing" / "k.pub"))
    assert code == 2 and "cannot write here" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("public", ["k", "./k", "sub/../k"])
def test_keygen_refuses_one_file_for_both_keys(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, public: str
) -> None:
    """PRIVATE and --public naming one file is a usage error before anything is written: the
    public key used to land first, and the private key was lost with an 'already exists'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    code, _, err = run(runner, "keygen", "k", "--public", public)
    assert code == 2 and f"PRIVATE and --public name the same file ({public})" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


@pytest.mark.skipif(os.name != "posix", reason="file names with a line break")
@pytest.mark.parametrize("fmt", ["text", "github"])
def test_header_lines_keep_a_hostile_file_name_on_one_line(
    tmp_path: Path, runner: CliRunner, fmt: str
) -> None:
    """A file name with a line break and a bidi override stays escaped on its header line."""
    name = tmp_path / "a\n::error::b\u202e.jsonl"
    name.write_bytes(TRANSCRIPT.read_bytes())
    code, out, _ = run(runner, "validate", str(name), "--format", fmt)
    assert code == 0
    assert out.splitlines()[-1] == f"{tmp_path}/a\\n::error::b\\u202e.jsonl: valid"


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$ref": "#/$defs/nope"}, "cannot resolve $ref: PointerToNowhere: '/$defs/nope' does not exist"),
        (
            {"$ref": "https://example.com/s.json"},
            "cannot resolve $ref: Unresolvable: https://example.com/s.json",
        ),
        ({"$ref": "file:///etc/passwd"}, "cannot resolve $ref: Unresolvable: file:///etc/passwd"),
        ({"$ref": "#"}, "the schema refers to itself without end"),
        (
            {"$defs": {"x": {"$ref": "#/$defs/x"}}, "$ref": "#/$defs/x"},
            "the schema refers to itself without end",
        ),
    ],
    ids=["dangling", "remote", "file", "self", "loop"],
)
def test_scope_schema_that_cannot_be_followed_is_a_usage_error(
    tmp_path: Path, runner: CliRunner, schema: object, problem: str
) -> None:
    """A $ref that resolves nowhere, or only to itself, is exit 2 naming the scope file (was exit 3)."""
    import json

    scope = tmp_path / "scope.json"
    scope.write_text(json.dumps({"agent": "a", "allowed_tools": ["t"], "arguments": {"t": schema}}))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"index":0,"tool":"t","args":{"p":1},"response":{}}\n')
    code, out, err = run(runner, "scope", str(transcript), str(scope))
    assert (code, out) == (2, "")
    assert err.startswith(f"toolreplay: error: {scope}: ")
    assert problem in err and err.endswith(" (at /arguments/t)\n") and err.count("\n") == 1


def test_scope_unknown_field_pointer_is_escaped(tmp_path: Path, runner: CliRunner) -> None:
    """An unknown scope field with '/' or '~' in its name gets a valid JSON pointer (RFC 6901)."""
    scope = tmp_path / "scope.json"
    scope.write_text('{"agent": "a", "allowed_tools": [], "a/b~c": 1}')
    code, _, err = run(runner, "scope", str(TRANSCRIPT), str(scope))
    assert (code, err) == (2, f"toolreplay: error: {scope}:1: unknown field 'a/b~c' (at /a~1b~0c)\n")


@pytest.mark.parametrize("value", ["xyz", "", "0" * 63, "g" * 64])
def test_expect_head_must_be_a_digest(runner: CliRunner, sealed: Path, value: str) -> None:
    """--expect-head that is not 64 hex digits is a bad option (exit 2), not a head mismatch (exit 1)."""
    code, out, err = run(runner, "verify", str(sealed), "--expect-head", value)
    assert (code, out) == (2, "")
    assert "Invalid value for '--expect-head': must be a SHA-256 digest (64 hex digits)" in err


def test_expect_head_ignores_hex_case(runner: CliRunner, sealed: Path) -> None:
    """An upper-case copy of the head anchors the chain like the lower-case one."""
    import json

    report = json.loads(run(runner, "verify", str(sealed), "--format", "json")[1])["reports"][0]
    head = report["summary"]["head"]
    code, out, _ = run(runner, "verify", str(sealed), "--expect-head", head.upper())
    assert code == 0 and "anchor: head match" in out


def test_verify_stdin_with_key_needs_signature(runner: CliRunner, tmp_path: Path, private_key: Path) -> None:
    """verify - --key has no SEALED.sig to default to: a usage error, not a file called '-.sig'."""
    result = runner.invoke(cli, ["verify", "-", "--key", f"{private_key}.pub"], input="")
    assert result.exit_code == 2
    assert "--signature is required when SEALED is '-' (stdin)" in result.stderr
    assert "-.sig" not in result.stderr


def test_deeply_nested_toml_config_is_a_usage_error(tmp_path: Path) -> None:
    """A config nested past what tomllib can read is exit 2 naming the file, not a crash."""
    from click.testing import CliRunner

    from toolreplay.cli import cli

    config = tmp_path / "toolreplay.toml"
    config.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    result = CliRunner().invoke(cli, ["check", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"{config}: invalid TOML: nested too deeply to read" in result.output


def test_a_toml_integer_past_the_digit_limit_is_named_at_its_line(tmp_path: Path, runner: CliRunner) -> None:
    """tomllib lets Python's 4300-digit limit escape as a bare ValueError: check refuses the
    configuration (exit 2) and validate reports it (exit 1), each naming file and line."""
    config = tmp_path / "toolreplay.toml"
    config.write_text('transcripts = ["*.jsonl"]\n\nmutators = ["a"]\nx = 1_' + "0" * 4300 + "\n")
    result = runner.invoke(cli, ["check", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 2
    problem = f"{config}:4: invalid TOML: an integer longer than 4300 digits\n"
    assert result.output == f"toolreplay: error: {problem}"
    result = runner.invoke(cli, ["validate", str(config)], catch_exceptions=False)
    assert result.exit_code == 1
    assert problem in result.output


def test_a_scope_whose_allowed_tools_are_not_names_is_invalid_not_a_crash(
    tmp_path: Path, runner: CliRunner
) -> None:
    """An object in allowed_tools is a schema problem (exit 1, its pointer), not an unhashable-type crash."""
    scope = tmp_path / "scope.json"
    scope.write_text('{"agent": "a", "allowed_tools": [{"x": 1}], "arguments": {"a": {}}}')
    code, out, err = run(runner, "validate", str(scope))
    assert (code, err) == (1, "")
    assert "is not of type 'string' (at /allowed_tools/0)" in out


@pytest.mark.parametrize("tool", ["tool = 1", 'tool = "toolreplay"', "[tool]\ntoolreplay = 3"])
def test_a_pyproject_whose_tool_is_not_a_table_holds_no_config(
    tool: str, tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone's pyproject.toml with a `tool` that is not a table: no configuration there, in one
    line, for validate and check, and commands that look for a config up the tree go on."""
    (tmp_path / "pyproject.toml").write_text(tool + "\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(runner, "validate", "pyproject.toml")
    assert (code, err) == (1, "")
    assert "pyproject.toml: has no [tool.toolreplay] table" in out
    code, out, err = run(runner, "check")
    assert code == 2 and err.startswith("toolreplay: error: no configuration found") and err[-1:] == "\n"
    code, out, err = run(runner, "replay", str(SAMPLES / "session-clean.jsonl"))
    assert (code, err) == (0, "")


def test_merge_refuses_a_shard_number_with_a_fraction(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "index": 1.0 passes JSON Schema's "integer"; merge names the problem instead of crashing."""
    import json
    import shutil

    shutil.copy(SAMPLES / "session-clean.jsonl", tmp_path / "run.jsonl")
    (tmp_path / "toolreplay.toml").write_text('transcripts = ["*.jsonl"]\n')
    monkeypatch.chdir(tmp_path)
    code, report, _ = run(runner, "check", "--shard", "1/1", "--format", "json")
    assert code == 0
    data = json.loads(report)
    data["check"]["shard"] = {"index": 1.0, "count": 1.0}
    (tmp_path / "shard.json").write_text(json.dumps(data))
    code, out, err = run(runner, "merge", "shard.json")
    assert (code, out) == (2, "")
    assert err == (
        "toolreplay: error: shard.json: the shard's index and count must be integers (at /check/shard)\n"
    )


UNREADABLE = "/proc/self/mem"  # opens, then every read of it fails (EIO): a file that cannot be read


@pytest.mark.skipif(not os.path.exists(UNREADABLE), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    "args",
    [
        ["check", "--config", UNREADABLE],
        ["replay", "TRANSCRIPT", "--config", UNREADABLE],
        ["scope", "TRANSCRIPT", UNREADABLE],
        ["fingerprint", UNREADABLE],
        ["fingerprint-diff", UNREADABLE, UNREADABLE],
        ["validate", "--kind", "scope", UNREADABLE],
        ["validate", "--kind", "drift-note", UNREADABLE],
        ["validate", "--kind", "config", UNREADABLE],
        ["sign", "SEALED", "--key", UNREADABLE],
        ["verify", "SEALED", "--key", UNREADABLE],
        ["diff", UNREADABLE, "TRANSCRIPT"],
    ],
)
def test_a_file_that_opens_but_cannot_be_read_is_a_usage_error(
    runner: CliRunner, sealed: Path, args: list[str]
) -> None:
    """Every reader of a whole file names it and the system's reason, exit 2: a read error
    (not only one on opening) used to be an internal error in the readers of configurations,
    scopes, tool definitions, locks, keys and drift notes."""
    transcript = str(SAMPLES / "session-clean.jsonl")
    argv = [{"TRANSCRIPT": transcript, "SEALED": str(sealed)}.get(arg, arg) for arg in args]
    code, out, err = run(runner, *argv)
    assert (code, out) == (2, "")
    assert err.endswith(f"toolreplay: error: {UNREADABLE}: Input/output error\n")


@pytest.mark.parametrize(
    ("key", "commands"),
    [
        ("scope", [["check"], ["scope", "t.jsonl"]]),
        ("tools_lock", [["check"], ["replay", "t.jsonl"], ["diff", "SEALED", "t.jsonl"]]),
    ],
)
def test_a_configured_path_with_a_nul_is_a_usage_error(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sealed: Path,
    key: str,
    commands: list[list[str]],
) -> None:
    """TOML can spell a NUL (\\u0000), which no path may hold: a one-line error, not a crash."""
    (tmp_path / "t.jsonl").write_bytes((SAMPLES / "session-clean.jsonl").read_bytes())
    (tmp_path / "toolreplay.toml").write_text(f'transcripts = ["t.jsonl"]\n{key} = "a\\u0000b"\n')
    monkeypatch.chdir(tmp_path)
    for command in commands:
        args = [str(sealed) if arg == "SEALED" else arg for arg in command]
        code, out, err = run(runner, *args)
        assert (code, out) == (2, ""), args
        assert err.endswith("a\\0b: a path cannot hold a NUL character\n"), (args, err)
