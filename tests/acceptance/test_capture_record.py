"""toolreplay record: a real SDK client talks to a real SDK server through the recording proxy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from tests.mcp_agent import (
    INITIALIZE,
    INITIALIZED,
    MALFORMED,
    SERVER_CMD,
    TIMEOUT,
    TOOLREPLAY,
    PipeAgent,
    dump,
    request,
    server_env,
)
from toolreplay.cli import cli


async def _session(argv: list[str], env: dict[str, str]) -> tuple[list[dict[str, Any]], list[float]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    results: list[dict[str, Any]] = []
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(TIMEOUT):
        async with Client(stdio_client(params)) as client:
            await client.list_tools()
            for tool, args in [
                ("echo", {"text": "hi", "times": 2}),
                ("fail", {"reason": "no"}),
                ("picture", {}),
                ("greet", {"name": "Zoë"}),
                ("big", {"megabytes": 2}),
            ]:
                results.append(dump(await client.call_tool(tool, args)))
            concurrent: dict[str, dict[str, Any]] = {}

            async def slow(seconds: float, tag: str) -> None:
                answer = await client.call_tool(
                    "slow", {"seconds": seconds, "tag": tag}, progress_callback=on_progress
                )
                concurrent[tag] = dump(answer)

            async with anyio.create_task_group() as group:
                for seconds, tag in [(0.6, "a"), (0.3, "b"), (0.0, "c")]:
                    group.start_soon(slow, seconds, tag)
            results.extend(concurrent[tag] for tag in "cba")
    return results, progress


@pytest.mark.slow
def test_record_passes_everything_and_records_each_call(runner: CliRunner, tmp_path: Path) -> None:
    """Images, MBs, non-ASCII, errors, progress and concurrent calls reach the client as the server
    sent them, and each call is a sealed record (in answer order) with the live tool's fingerprint."""
    out, lock = tmp_path / "run.sealed.jsonl", tmp_path / "recorded.lock.json"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--lock", str(lock), "--", *SERVER_CMD]
    results, progress = anyio.run(_session, argv, server_env())

    lines = out.read_text(encoding="ascii").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["tool"] for r in records] == ["echo", "fail", "picture", "greet", "big", "slow", "slow", "slow"]
    assert [r["args"].get("tag") for r in records[5:]] == ["c", "b", "a"]  # the order answers came in
    # what the client got is what was recorded, byte for byte of the value
    assert [r["response"] for r in records] == results
    assert records[1]["response"]["isError"] is True
    assert records[2]["response"]["content"][0]["mimeType"] == "image/png"
    assert records[3]["response"]["content"][0]["text"] == "Grüße, Zoë — 你好 🎉\u2028!"
    assert len(records[4]["response"]["content"][0]["text"]) == 2 * 1024 * 1024
    assert progress == [0.5, 0.5, 0.5]

    verified = runner.invoke(cli, ["verify", str(out)], catch_exceptions=False)
    assert verified.exit_code == 0 and verified.output.startswith("chain: intact\nlinks: 8\n")
    # the fingerprints are those `toolreplay fingerprint --mcp` gives the same server and version
    live = tmp_path / "live.lock.json"
    result = runner.invoke(
        cli, ["fingerprint", "-o", str(live), "--version", "1.0.0", "--mcp", "--", *SERVER_CMD]
    )
    assert result.exit_code == 0, result.output
    assert lock.read_bytes() == live.read_bytes()
    fingerprints = json.loads(live.read_text(encoding="ascii"))["tools"]
    assert all(r["fingerprint"] == fingerprints[r["tool"]]["fingerprint"] for r in records)


@pytest.mark.slow
def test_proxy_changes_no_byte(tmp_path: Path) -> None:
    """The same bytes, sent to the server directly and through the proxy, get the same bytes back;
    a malformed client line is passed on with a one-line warning and nothing is recorded for it."""
    script = [
        (INITIALIZE, True),
        (INITIALIZED, False),
        # odd spacing, key order and escapes must reach the server as they are
        (
            b'{ "params" : {"name":"greet","arguments":{"name":"Jos\\u00e9"}}, "method":"tools/call",'
            b' "id":"x-1", "jsonrpc":"2.0" }\n',
            True,
        ),
        (b"{this is not json\n", False),
        (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}\n', False),
        (request(2, "tools/call", {"name": "picture"}), True),
        (request(3, "ping"), True),
    ]

    def run(argv: list[str]) -> tuple[list[bytes], int, bytes]:
        agent = PipeAgent(argv, env=server_env(), cwd=tmp_path)
        for line, answered in script:
            if answered:
                agent.ask(line)
            else:
                agent.send(line)
        status, rest, err = agent.finish()
        return [*agent.received, rest], status, err

    direct, direct_status, _ = run(SERVER_CMD)
    out = tmp_path / "run.jsonl"
    proxied, status, err = run([*TOOLREPLAY, "record", "-o", str(out), "--", *SERVER_CMD])
    assert proxied == direct
    assert status == direct_status == 0
    assert b"toolreplay: warning: client message 4: unreadable: invalid JSON: " in err
    assert err.decode().endswith("toolreplay: recorded 2 calls to " + str(out) + "\n")
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [(r["tool"], r["args"]) for r in records] == [("greet", {"name": "José"}), ("picture", {})]
    assert "fingerprint" not in records[0]  # the session never listed its tools


@pytest.mark.slow
def test_sigkill_mid_session_leaves_a_verifying_file(runner: CliRunner, tmp_path: Path) -> None:
    """A proxy killed with SIGKILL while a large answer is being written leaves a file whose
    complete lines form an intact chain holding every call answered before."""
    out = tmp_path / "run.sealed.jsonl"
    agent = PipeAgent([*TOOLREPLAY, "record", "-o", str(out), "--seal", "--", *SERVER_CMD], env=server_env())
    agent.ask(INITIALIZE)
    agent.send(INITIALIZED)
    for i in range(5):
        agent.ask(request(10 + i, "tools/call", {"name": "echo", "arguments": {"text": str(i)}}))
    size = out.stat().st_size
    # 3 MB of text, twice in the result (content and structuredContent): a 6 MB record
    agent.send(request(20, "tools/call", {"name": "big", "arguments": {"megabytes": 3}}))
    deadline = time.monotonic() + TIMEOUT
    while out.stat().st_size == size and time.monotonic() < deadline:
        time.sleep(0.001)  # wait until the big record has begun to land, then kill
    agent.process.send_signal(signal.SIGKILL)
    assert out.stat().st_size > size
    agent.process.communicate(timeout=TIMEOUT)

    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    kept = tmp_path / "kept.sealed.jsonl"
    kept.write_bytes(complete)
    result = runner.invoke(cli, ["verify", str(kept)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    links = complete.count(b"\n")
    assert links in (5, 6)
    assert result.output.startswith(f"chain: intact\nlinks: {links}\n")


def test_server_that_dies_at_start(tmp_path: Path) -> None:
    """A server that exits at once: its stderr passes through, one warning line, its exit status,
    and an empty transcript."""
    out = tmp_path / "run.jsonl"
    dying = [sys.executable, "-c", "import sys; print('no config', file=sys.stderr); sys.exit(3)"]
    result = subprocess.run(
        [*TOOLREPLAY, "record", "-o", str(out), "--", *dying],
        input=INITIALIZE,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 3
    assert result.stdout == b""
    assert result.stderr.decode() == (
        "no config\n"
        "toolreplay: warning: the MCP server exited with status 3 before it said anything\n"
        f"toolreplay: recorded 0 calls to {out}\n"
    )
    assert out.read_bytes() == b""


def test_malformed_server_line(tmp_path: Path) -> None:
    """A line from the server that is not JSON-RPC reaches the client unchanged, is named in one
    warning line, and records nothing; the well-formed answer after it is recorded."""
    fake = tmp_path / "fake.py"
    fake.write_text(
        "import sys\n"
        "sys.stdin.readline()\n"
        "sys.stdout.write('garbage\\n[1, 2]\\n')\n"
        'sys.stdout.write(\'{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}\\n\')\n',
        encoding="utf-8",
    )
    out = tmp_path / "run.jsonl"
    result = subprocess.run(
        [*TOOLREPLAY, "record", "-o", str(out), "--", sys.executable, str(fake)],
        input=request(7, "tools/call", {"name": "t", "arguments": {"a": 1}}),
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0
    assert result.stdout.startswith(b"garbage\n[1, 2]\n{")
    assert result.stderr.decode().splitlines() == [
        "toolreplay: warning: server message 1: unreadable: invalid JSON: Expecting value at column 1;"
        " passed on, not looked at",
        "toolreplay: warning: server message 2: not a JSON-RPC message an MCP peer reads;"
        " passed on, not looked at",
        f"toolreplay: recorded 1 call to {out}",
    ]
    assert json.loads(out.read_text(encoding="ascii")) == {
        "args": {"a": 1},
        "index": 0,
        "response": {"content": [], "isError": False},
        "tool": "t",
    }


def test_client_lines_record_cannot_judge_pass_on_and_the_session_goes_on(tmp_path: Path) -> None:
    """After initialize, client lines no MCP peer reads (a method [1] or {}, params that are not an
    object, a batch of such, odd results and ids) each reach the server with one warning line, and the
    tools/call after them is answered and recorded (a method [1] stopped all forwarding, exit 0)."""
    out = tmp_path / "run.jsonl"
    agent = PipeAgent([*TOOLREPLAY, "record", "-o", str(out), "--", *SERVER_CMD], env=server_env())
    agent.ask(INITIALIZE)
    agent.send(INITIALIZED)
    for line, _ in MALFORMED:
        agent.send(line + b"\n")
    agent.send(request(20, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
    answer = agent.answer_to(20)
    status, _, err = agent.finish()
    assert status == 0
    assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [record["args"] for record in records] == [{"text": "hi"}]
    assert err.decode().splitlines() == [
        *(f"toolreplay: warning: client message {n}: {said}" for n, (_, said) in enumerate(MALFORMED, 3)),
        f"toolreplay: recorded 1 call to {out}",
    ]


def test_command_that_does_not_exist(runner: CliRunner, tmp_path: Path) -> None:
    """A server command that cannot be started is one line and exit 2."""
    result = runner.invoke(
        cli, ["record", "-o", str(tmp_path / "x.jsonl"), "--", str(tmp_path / "no-such-server")]
    )
    assert result.exit_code == 2
    assert result.output == (
        f"toolreplay: error: cannot start the MCP server '{tmp_path / 'no-such-server'}':"
        " No such file or directory\n"
    )


def test_bad_redact_pattern(runner: CliRunner, tmp_path: Path) -> None:
    """An invalid --redact pattern is refused before anything starts or is written."""
    out = tmp_path / "x.jsonl"
    result = runner.invoke(cli, ["record", "-o", str(out), "--redact", "(", "--", "true"])
    assert result.exit_code == 2
    assert result.output == (
        "toolreplay: error: --redact '(' is not a valid regular expression:"
        " missing ), unterminated subpattern at position 0\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["record", "-o", "{out}", "--", "true"],
        ["serve", "{out}"],
        ["probe", "{out}", "--", "true"],
    ],
    ids=["record", "serve", "probe"],
)
def test_without_the_sdk_says_how_to_install_it(tmp_path: Path, argv: list[str]) -> None:
    """With the MCP SDK not importable, each capture command says how to install it (exit 2)
    and starts or writes nothing."""
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from toolreplay.cli import main\n"
        "sys.argv = ['toolreplay', *sys.argv[1:]]\n"
        "main()\n"
    )
    out = tmp_path / "x.jsonl"
    args = [a.replace("{out}", str(out)) for a in argv]
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, timeout=TIMEOUT, env=dict(os.environ)
    )
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"toolreplay: error: toolreplay {argv[0]} needs the MCP SDK: pip install 'toolreplay[mcp]'\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([], "give the server's command line after --, or --listen and --target"),
        (["--listen", "127.0.0.1:1"], "give the server's command line after --, or --listen and --target"),
        (["--listen", "nowhere", "--target", "http://x/mcp"], "--listen 'nowhere' is not HOST:PORT"),
        # a digit str.isdigit takes and int() does not, and more digits than int() converts
        (["--listen", "h:\u00b2", "--target", "http://x/mcp"], "--listen 'h:\u00b2' is not HOST:PORT"),
        (["--listen", "h:" + "1" * 4301, "--target", "http://x/mcp"], "is not HOST:PORT"),
        (
            ["--listen", "127.0.0.1:9", "--target", "ftp://x/mcp"],
            "--target 'ftp://x/mcp' is not an http:// or https:// URL",
        ),
    ],
)
def test_record_options_are_checked_before_anything_starts(
    runner: CliRunner, tmp_path: Path, options: list[str], message: str
) -> None:
    """Missing or malformed transport options are a usage error (exit 2) and write nothing."""
    out = tmp_path / "x.jsonl"
    result = runner.invoke(cli, ["record", "-o", str(out), *options])
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


def test_record_seal_refuses_a_name_without_the_sealed_suffix(runner: CliRunner, tmp_path: Path) -> None:
    """``record --seal -o run.jsonl`` is a usage error (exit 2) before the server starts: a sealed
    file under a plain transcript's name made replay and diff fail on its "digest" field."""
    out, started = tmp_path / "run.jsonl", tmp_path / "started"
    result = runner.invoke(cli, ["record", "-o", str(out), "--seal", "--", "touch", str(started)])
    assert result.exit_code == 2
    assert result.output.endswith(
        f"-o {out}: --seal writes a sealed transcript: its name must end in .sealed.jsonl\n"
    )
    assert not out.exists() and not started.exists()
    assert not (tmp_path / "run.jsonl.mcp").exists()


def test_record_into_a_missing_folder(runner: CliRunner, tmp_path: Path) -> None:
    """An output that cannot be created is one line naming it (exit 2); the server is not started."""
    out = tmp_path / "no" / "run.jsonl"
    result = runner.invoke(cli, ["record", "-o", str(out), "--", "true"])
    assert result.exit_code == 2
    assert (
        result.output == f"toolreplay: error: {out}: cannot write the transcript: No such file or directory\n"
    )


@pytest.mark.parametrize("lock", ["x.jsonl", "./x.jsonl"])
def test_record_refuses_one_file_for_the_transcript_and_the_lock(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lock: str
) -> None:
    """-o and --lock naming the same file is a usage error (exit 2) before the server starts: the
    first tools/list's lock replaced the transcript being written, and the recording was lost."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli, ["record", "-o", "x.jsonl", "--lock", lock, "--force", "--", "true"])
    assert result.exit_code == 2
    assert result.output.endswith("-o and --lock name the same file; give the lock its own name\n")
    assert not (tmp_path / "x.jsonl").exists()


def test_record_into_a_missing_lock_folder(runner: CliRunner, tmp_path: Path) -> None:
    """A --lock that cannot be written is one line naming it (exit 2) before the server starts and
    before the transcript is created; it used to end the session at the first tools/list (exit 3)."""
    out, lock = tmp_path / "run.jsonl", tmp_path / "no" / "tools.lock.json"
    result = runner.invoke(cli, ["record", "-o", str(out), "--lock", str(lock), "--", "true"])
    assert result.exit_code == 2
    assert result.output == f"toolreplay: error: {lock}: cannot write the lock: No such file or directory\n"
    assert not out.exists()


def test_a_lock_that_cannot_be_rewritten_is_a_warning_not_the_end_of_the_session(tmp_path: Path) -> None:
    """When the lock's folder goes away mid-session, the tools/list is still recorded as far as it
    can be: one warning line, and the calls after it are recorded."""
    from toolreplay.capture.recording import Recording
    from toolreplay.transcript import read_transcript

    folder = tmp_path / "locks"
    folder.mkdir()
    warnings: list[str] = []
    out = tmp_path / "run.jsonl"
    with Recording(str(out), lock_path=str(folder / "tools.lock.json"), warn=warnings.append) as recording:
        folder.rmdir()
        recording.from_client(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n')
        recording.from_server(b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t"}]}}\n')
        recording.from_client(
            b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t"}}\n'
        )
        recording.from_server(b'{"jsonrpc": "2.0", "id": 2, "result": {"content": []}}\n')
    assert [r.tool for r in read_transcript(str(out))] == ["t"]
    assert warnings == [
        f"server message 1: {folder / 'tools.lock.json'}: cannot write the lock: No such file or directory"
    ]


async def _echo_session(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(TIMEOUT):
        # errlog given: its default is the sys.stderr of the first import, maybe a finished CliRunner's
        async with Client(stdio_client(params, errlog=sys.stderr)) as client:
            await client.list_tools()
            return dump(await client.call_tool("echo", {"text": "é"}))


@pytest.mark.slow
def test_a_non_ascii_server_version_is_recorded_and_probed(runner: CliRunner, tmp_path: Path) -> None:
    """A server whose serverInfo.version is "1.0-é" is recorded past its tools/list (the proxy died there
    with a UnicodeEncodeError), the lock keeps the version, and probe fingerprints it the same way."""
    out, lock = tmp_path / "run.sealed.jsonl", tmp_path / "recorded.lock.json"
    env = server_env(SERVER_VERSION="1.0-é")
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--seal", "--lock", str(lock), "--", *SERVER_CMD]
    answer = anyio.run(_echo_session, argv, env)

    assert answer["content"][0]["text"] == "é"
    records = [json.loads(line) for line in out.read_text(encoding="ascii").splitlines()]
    assert [r["tool"] for r in records] == ["echo"]
    contract = json.loads(lock.read_text(encoding="ascii"))["tools"]["echo"]
    assert contract["version"] == "1.0-é"
    assert records[0]["fingerprint"] == contract["fingerprint"]
    probed = subprocess.run(
        [*TOOLREPLAY, "probe", str(out), "--lock", str(lock), "--", *SERVER_CMD],
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (probed.returncode, probed.stderr) == (0, b"")
    assert b"tool 'echo': stable\n" in probed.stdout
