"""``record --state-command``: post-call state from a command after each call that changes state, on
real mcp-server-git sessions driven by the MCP SDK's client through ``toolreplay record``; ``check``
then audits every mutating call (issue 27)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import invoke
from tests.gitrepo import git, git_env
from tests.mcp_agent import SERVER_CMD, TIMEOUT, TOOLREPLAY, free_port, server_env, stop, wait_for_port
from tests.realservers import python_server

#: one date for every commit, so the same session makes the same commits each time it is recorded
DATE = "1704067200 +0000"
#: the commands docs/capture.md shows for mcp-server-git (run in the recording's folder)
HEAD = "git -C repo rev-parse HEAD"
STATUS = "git -C repo status --porcelain"
STATE_OPTIONS = ("--state-command", HEAD, "--state-command", STATUS)
Calls = list[tuple[str, dict[str, Any]]]


def _calls(repo: Path) -> Calls:
    """A branch, a staged change, its commit, then a read (which changes nothing)."""
    at = {"repo_path": str(repo)}
    return [
        ("git_create_branch", {**at, "branch_name": "feature"}),
        ("git_add", {**at, "files": ["notes.txt"]}),
        ("git_commit", {**at, "message": "update notes"}),
        ("git_status", at),
    ]


def _fresh_repo(root: Path) -> Path:
    """``root/repo`` afresh: one commit, and a change to commit."""
    repo = root / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    git(root, "init", "-q", str(repo))
    (repo / "notes.txt").write_text("hello\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "start", date=DATE)
    (repo / "notes.txt").write_text("hello again\n", encoding="utf-8")
    return repo


def _record(root: Path, out: Path, *options: str, calls: Calls | None = None) -> str:
    """Record one session of mcp-server-git on a fresh ``root/repo``, the SDK's client talking to it
    through ``toolreplay record -o OUT --lock root/tools.lock.json OPTIONS`` started in ``root``;
    record's stderr."""
    repo = _fresh_repo(root)
    argv = [
        *TOOLREPLAY,
        "record",
        "-o",
        str(out),
        "--force",
        "--lock",
        str(root / "tools.lock.json"),
        *options,
        *python_server("git"),
        "--repository",
        str(repo),
    ]
    env = git_env({"GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE})
    log = root / "record.log"

    async def run() -> None:
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(root))
        with open(log, "w", encoding="utf-8") as errlog, anyio.fail_after(TIMEOUT):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
                for name, args in _calls(repo) if calls is None else calls:
                    result = await client.call_tool(name, args)
                    assert not result.is_error, result

    anyio.run(run)
    return log.read_text(encoding="utf-8")


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a killed one nobody reaped yet, a zombie, does not)."""
    if not Path("/proc/self/stat").exists():  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


CONFIG = """\
transcripts = ["runs/*.jsonl"]
baselines = ["baselines/*.sealed.jsonl"]
tools_lock = "tools.lock.json"
"""


def _project(root: Path, baseline_options: tuple[str, ...], config: str = CONFIG) -> dict[str, str]:
    """A project whose baseline (recorded with ``baseline_options``) and run (recorded with the
    config ``config`` and no options) are the same mcp-server-git session; record's stderr of each."""
    (root / "baselines").mkdir(parents=True)
    (root / "runs").mkdir()
    first = root / "first.jsonl"
    said = {"baseline": _record(root, first, *baseline_options)}
    code, _, err = invoke(CliRunner(), "seal", str(first), "-o", str(root / "baselines" / "git.sealed.jsonl"))
    assert code == 0, err
    (root / "toolreplay.toml").write_text(config, encoding="utf-8")
    said["run"] = _record(root, root / "runs" / "git.jsonl")
    return said


def _check(root: Path) -> tuple[int, str]:
    code, out, err = invoke(CliRunner(), "check", "--jobs", "1", cwd=root)
    return code, out + err


@pytest.fixture(scope="module")
def without_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    _project(root, ())
    return root


@pytest.fixture(scope="module")
def with_state(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The baseline recorded with --state-command, the run with the config's state_command."""
    root = tmp_path_factory.mktemp("state")
    config = CONFIG + f"state_command = [{json.dumps(HEAD)}, {json.dumps(STATUS)}]\n"
    return root, _project(root, STATE_OPTIONS, config)


@pytest.mark.slow
def test_state_commands_end_the_audit_incomplete_of_a_real_git_session(
    without_state: Path, with_state: tuple[Path, dict[str, str]]
) -> None:
    """The issue: a real mcp-server-git session recorded twice fails check on git_create_branch;
    recorded with the two git commands, every mutating call has its state and check passes."""
    code, out = _check(without_state)
    assert code == 1, out
    assert (
        "index 0: audit-incomplete: in run 'runs/git.jsonl': tool 'git_create_branch' changes state but"
        " neither side records its post-call state (baseline index 0)"
    ) in out
    code, out = _check(with_state[0])
    assert code == 0, out
    assert "audit-incomplete" not in out
    assert "total: 2 reports, 0 findings, 0 failing, 0 unreadable" in out


def test_each_state_is_taken_after_its_call(with_state: tuple[Path, dict[str, str]]) -> None:
    """Each mutating call's state is what the repository says right after it (the staged change
    before the commit, the new HEAD after it); the read-only git_status gets none."""
    root, said = with_state
    records = _records(root / "runs" / "git.jsonl")
    head = git(root / "repo", "rev-parse", "HEAD")
    start = git(root / "repo", "rev-parse", "HEAD~1")
    assert [(r["tool"], r.get("state")) for r in records] == [
        ("git_create_branch", {HEAD: start, STATUS: " M notes.txt\n"}),
        ("git_add", {HEAD: start, STATUS: "M  notes.txt\n"}),
        ("git_commit", {HEAD: head, STATUS: ""}),
        ("git_status", None),
    ]
    assert said["baseline"].endswith(
        "recorded 4 calls to " + str(root / "first.jsonl") + ", 3 with post-call state\n"
    )


def test_the_config_gives_the_options_state(with_state: tuple[Path, dict[str, str]]) -> None:
    """The run took its commands from the config (and says so); its states are the baseline's."""
    root, said = with_state
    assert "toolreplay: using config toolreplay.toml (state_command)\n" in said["run"]
    baseline = [r.get("state") for r in _records(root / "first.jsonl")]
    assert [r.get("state") for r in _records(root / "runs" / "git.jsonl")] == baseline


@pytest.mark.slow
def test_a_failing_and_a_hanging_command_leave_the_call_unaudited(tmp_path: Path) -> None:
    """A command that fails and one that hangs (stopped with what it started after --state-timeout)
    are one warning line each; their calls have no state, so diff still reports them."""
    hang = 'sh -c "sleep 60 & echo $! > sleeper.pid; wait"'
    options = (
        "--state-command",
        "git_add=git -C nowhere rev-parse HEAD",
        "--state-command",
        f"git_commit={hang}",
    )
    said = _record(tmp_path, tmp_path / "run.jsonl", *options, "--state-timeout", "1")
    warnings = [line for line in said.splitlines() if "state command" in line]
    assert warnings == [
        "toolreplay: warning: state command 'git -C nowhere rev-parse HEAD' for 'git_add' at index 1:"
        " it exited with status 128; its last words: fatal: cannot change to 'nowhere': No such file or"
        " directory; the call stays audit-incomplete",
        f"toolreplay: warning: state command {hang!r} for 'git_commit' at index 2: it did not finish within"
        " 1 s and was stopped; the call stays audit-incomplete",
    ]
    sleeper = int((tmp_path / "sleeper.pid").read_text())
    assert not _running(sleeper)  # what the command started was stopped with it
    assert [r.get("state") for r in _records(tmp_path / "run.jsonl")] == [None] * 4
    sealed = tmp_path / "run.sealed.jsonl"
    assert invoke(CliRunner(), "seal", str(tmp_path / "run.jsonl"), "-o", str(sealed))[0] == 0
    code, out, _ = invoke(
        CliRunner(),
        "diff",
        str(sealed),
        str(tmp_path / "run.jsonl"),
        "--tools",
        str(tmp_path / "tools.lock.json"),
    )
    assert code == 1
    assert "differences: audit-incomplete 3\n" in out


STATE_SCRIPT = """
import json, os, subprocess
print(json.dumps({
    "tool": os.environ["TOOLREPLAY_TOOL"],
    "args": json.loads(os.environ["TOOLREPLAY_ARGS"]),
    "staged": subprocess.run(["git", "-C", "repo", "diff", "--cached", "--name-only"],
                             capture_output=True, text=True, check=True).stdout,
    "calls": 1,
}))
"""


@pytest.mark.slow
def test_a_json_object_is_the_state_and_tool_eq_cmd_runs_for_that_tool_only(tmp_path: Path) -> None:
    """A command that prints a JSON object gives its members (a value that is not a string as its
    canonical JSON text), with the call's tool and arguments in its environment; ``TOOL=CMD`` runs
    after that tool's calls only, not after the other mutating ones."""
    (tmp_path / "state.py").write_text(STATE_SCRIPT, encoding="utf-8")
    command = f"git_add={shlex.quote(sys.executable)} state.py"
    said = _record(tmp_path, tmp_path / "run.jsonl", "--state-command", command)
    assert "state command" not in said
    repo = str(tmp_path / "repo")
    records = _records(tmp_path / "run.jsonl")
    assert [(r["tool"], r.get("state")) for r in records] == [
        ("git_create_branch", None),
        (
            "git_add",
            {
                "tool": "git_add",
                "args": json.dumps({"files": ["notes.txt"], "repo_path": repo}, separators=(",", ":")),
                "staged": "notes.txt\n",
                "calls": "1",
            },
        ),
        ("git_commit", None),
        ("git_status", None),
    ]
    assert said.endswith(", 1 with post-call state\n")


def test_a_command_that_cannot_be_split_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """--state-command with an unclosed quote: one line, exit 2, the server not started, nothing written."""
    out = tmp_path / "run.jsonl"
    server = [sys.executable, "-c", "open('started', 'w')"]
    code, stdout, err = invoke(
        CliRunner(), "record", "-o", str(out), "--state-command", "git_add='x", *server, cwd=tmp_path
    )
    assert code == 2
    assert (stdout, err) == (
        "",
        "toolreplay: error: --state-command 'git_add=\\'x' cannot be split into words:"
        " no closing quotation\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_config_state_command_is_checked_by_record_and_validate(tmp_path: Path) -> None:
    """A config state_command that cannot be run is refused by record (file and pointer, exit 2,
    nothing written) and reported by validate, like any other setting."""
    config = tmp_path / "toolreplay.toml"
    config.write_text('state_command = ["git status", "git_add="]\n', encoding="utf-8")
    out = tmp_path / "run.jsonl"
    code, _, err = invoke(CliRunner(), "record", "-o", str(out), sys.executable, "-c", "pass", cwd=tmp_path)
    assert code == 2
    assert err == (
        f'toolreplay: error: {config}: state_command "git_add=" names no command for tool'
        " 'git_add' (at /state_command/1)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toolreplay.toml"]
    code, out_text, _ = invoke(CliRunner(), "validate", str(config))
    assert code == 1
    assert (
        f"{config}: state_command \"git_add=\" names no command for tool 'git_add' (at /state_command/1)"
        in out_text
    )


def test_a_config_state_command_with_a_nul_character_is_refused(tmp_path: Path) -> None:
    """A TOML escape can put a NUL character in a command no process can be started with: record
    refuses it with file and pointer (exit 2, nothing written, the server not started), validate
    reports it; it never reaches the first call as a traceback in the proxy."""
    config = tmp_path / "toolreplay.toml"
    config.write_text('state_command = ["echo \\u0000x"]\n', encoding="utf-8")
    out = tmp_path / "run.jsonl"
    code, _, err = invoke(CliRunner(), "record", "-o", str(out), *python_server("time"), cwd=tmp_path)
    assert code == 2
    assert err == (
        f'toolreplay: error: {config}: state_command "echo \\u0000x" holds a NUL character, which no'
        " command's words can hold (at /state_command/0)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toolreplay.toml"]
    code, out_text, _ = invoke(CliRunner(), "validate", str(config))
    assert code == 1
    assert "holds a NUL character, which no command's words can hold (at /state_command/0)" in out_text


@pytest.mark.slow
def test_over_streamable_http_the_lock_written_decides(tmp_path: Path) -> None:
    """Through the HTTP proxy, a plain command runs after the calls of the tools the lock being
    written says change state (no annotations, destructiveHint), each seeing its call's write,
    and not after the read-only echo."""
    notes = tmp_path / "notes.txt"
    notes.write_text("", encoding="utf-8")
    server_port, proxy_port = free_port(), free_port()
    env = server_env(NOTES_FILE=str(notes))
    server = subprocess.Popen([*SERVER_CMD, "http", str(server_port)], stdout=subprocess.DEVNULL, env=env)
    out = tmp_path / "run.jsonl"
    argv = [*TOOLREPLAY, "record", "-o", str(out), "--lock", str(tmp_path / "tools.lock.json")]
    argv += ["--state-command", "cat notes.txt", "--listen", f"127.0.0.1:{proxy_port}"]
    argv += ["--target", f"http://127.0.0.1:{server_port}/mcp"]
    try:
        wait_for_port(server_port, server)
        proxy = subprocess.Popen(argv, cwd=tmp_path, stderr=subprocess.PIPE, env=env)
        wait_for_port(proxy_port, proxy)

        async def ask() -> None:
            with anyio.fail_after(TIMEOUT):
                async with Client(f"http://127.0.0.1:{proxy_port}/mcp") as client:
                    await client.list_tools()
                    for name, args in [("write_note", {"text": "first"}), ("echo", {"text": "x"})]:
                        await client.call_tool(name, args)
                    await client.call_tool("erase_notes", {})

        anyio.run(ask)
        status, err = stop(proxy)
    finally:
        stop(server)
    assert (status, err.decode()) == (0, f"toolreplay: recorded 3 calls to {out}, 2 with post-call state\n")
    assert [(r["tool"], r.get("state")) for r in _records(out)] == [
        ("write_note", {"cat notes.txt": "first\n"}),
        ("echo", None),
        ("erase_notes", {"cat notes.txt": "first\nerased\n"}),
    ]


@pytest.mark.parametrize("folder_lock", [False, True], ids=["no-command", "lock-is-a-folder"])
def test_settings_that_do_nothing_or_cannot_be_read_are_said(tmp_path: Path, folder_lock: bool) -> None:
    """--state-timeout without any state command is a warning (it would change nothing); a
    configured tools_lock that is a folder is refused, not taken for a lock not written yet."""
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {}})
    config = 'state_command = "true"\ntools_lock = "tools.lock.json"\n' if folder_lock else ""
    (tmp_path / "toolreplay.toml").write_text(config, encoding="utf-8")
    if folder_lock:
        (tmp_path / "tools.lock.json").mkdir()
    out = tmp_path / "run.jsonl"
    argv = [
        *TOOLREPLAY,
        "record",
        "-o",
        str(out),
        "--state-timeout",
        "3",
        "--",
        "sh",
        "-c",
        f"echo '{answer}'",
    ]
    done = subprocess.run(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    err = done.stderr.decode()
    if folder_lock:
        assert done.returncode == 2, err
        assert err.endswith("toolreplay: error: tools.lock.json: is a directory, not a file\n"), err
        assert not out.exists()
    else:
        assert done.returncode == 0, err
        assert err == (
            "toolreplay: warning: --state-timeout has no effect: there is no state command"
            " (--state-command, or the configuration's state_command)\n"
            f"toolreplay: recorded 0 calls to {out}\n"
        )
