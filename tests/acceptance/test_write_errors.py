"""A full disk, a file size limit or a closed pipe on any output is one line naming the output
and exit 2, never an internal error, and leaves nothing half-written. Real processes write to
/dev/full (ENOSPC for real), to a pipe whose reading end is closed, under RLIMIT_FSIZE, and
into a small tmpfs where the system lets a test mount one."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.gitrepo import git_env

FULL = "toolreplay: error: <stdout>: cannot write: No space left on device\n"
CLOSED = (
    "toolreplay: error: <stdout>: cannot write: the reading end of the pipe was closed (output incomplete)\n"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with a transcript big enough to fill a pipe, its baseline, a scope, a
    lock, tool definitions, a trace to import, a config and a signing key."""
    root = tmp_path_factory.mktemp("project")
    lines = [
        f'{{"args":{{"i":{i}}},"index":{i},"response":{{"text":"{"x" * 200}"}},"tool":"search"}}'
        for i in range(2000)
    ]
    (root / "run.jsonl").write_text("".join(line + "\n" for line in lines))
    shutil.copy(SAMPLES / "session-clean.jsonl", root / "t.jsonl")
    shutil.copy(SAMPLES / "baselines" / "session-clean.sealed.jsonl", root / "t.sealed.jsonl")
    shutil.copy(SAMPLES / "scope.json", root / "scope.json")
    shutil.copy(ROOT / "tests/cases/cli/replay-tools-lock/tools.lock.json", root / "tools.lock.json")
    shutil.copy(ROOT / "tests/data/tools/openai_MailCli_tools.json", root / "tools.json")
    calls = [{"role": "user", "content": "hi"}]
    for i in range(50):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
        calls.append({"role": "assistant", "content": None, "tool_calls": [call]})
        calls.append({"role": "tool", "tool_call_id": f"c{i}", "content": "z" * 50})
    (root / "chat.json").write_text(json.dumps({"messages": calls}))
    (root / "toolreplay.toml").write_text('transcripts = ["t.jsonl"]\nbaselines = ["*.sealed.jsonl"]\n')
    env = git_env()
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    assert toolreplay(root, ["keygen", "key"]).returncode == 0
    # a baseline not committed yet: note has a change (from the genesis value) to write about
    shutil.copy(SAMPLES / "baselines" / "session-clean.sealed.jsonl", root / "new.sealed.jsonl")
    return root


#: every command that writes to stdout, with arguments that make it print
STDOUT_COMMANDS = [
    ["version"],
    ["seal", "run.jsonl"],
    ["verify", "t.sealed.jsonl"],
    ["verify", "--format", "sarif", "t.sealed.jsonl"],
    ["replay", "run.jsonl"],
    ["scope", "t.jsonl", "scope.json"],
    ["diff", "t.sealed.jsonl", "t.jsonl"],
    ["validate", "t.jsonl"],
    ["check"],
    ["hook", "verify", "t.sealed.jsonl"],
    ["hook", "drift-note"],
    ["note", "new.sealed.jsonl"],
    ["fingerprint", "tools.json"],
    ["fingerprint-diff", "tools.lock.json", "tools.lock.json"],
    ["import", "--from", "openai-chat", "-o", "-", "chat.json"],
    ["sign", "t.sealed.jsonl", "--key", "key", "-o", "-"],
]


def failure(stderr: str) -> str:
    """stderr without the notes some commands print on the way (note: "... unchanged since HEAD")."""
    return "".join(
        line for line in stderr.splitlines(keepends=True) if not line.startswith("toolreplay: note:")
    )


def toolreplay(
    cwd: Path, args: list[str], *, stdout: int | None = None, limit: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolreplay", *args],
        cwd=cwd,
        env=git_env(),
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )


@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=" ".join)
def test_a_full_disk_on_stdout_is_one_line(project: Path, args: list[str]) -> None:
    """Writing to /dev/full (ENOSPC) is exit 2 and one line naming <stdout>, for every command."""
    assert toolreplay(project, args).stdout  # the command does print something
    with open("/dev/full", "w") as full:
        done = toolreplay(project, args, stdout=full.fileno())
    assert (done.returncode, failure(done.stderr)) == (2, FULL)


@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=" ".join)
def test_a_closed_pipe_on_stdout_is_one_line(project: Path, args: list[str]) -> None:
    """Writing into a pipe nobody reads (`| head` gone) is exit 2 and one line, for every command:
    never exit 0, which would let `set -o pipefail` pass a report that was never read."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = toolreplay(project, args, stdout=write_end)
    finally:
        os.close(write_end)
    assert (done.returncode, failure(done.stderr)) == (2, CLOSED)


def test_head_of_a_big_seal(project: Path) -> None:
    """`toolreplay seal big.jsonl | head -1`: head gets its line, toolreplay one error line, no traceback."""
    done = subprocess.run(
        f"{sys.executable} -m toolreplay seal run.jsonl | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert done.stdout.startswith('{"args":{"i":0},"digest":"') and done.stdout.count("\n") == 1
    assert (done.returncode, done.stderr) == (2, CLOSED)


def _small_files() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


#: commands writing a file with -o: (arguments, the output they name)
FILE_COMMANDS = [
    (["seal", "run.jsonl", "-o", "out/run.sealed.jsonl"], "out/run.sealed.jsonl"),
    (["fingerprint", "tools.json", "-o", "out/tools.lock.json"], "out/tools.lock.json"),
    (["import", "--from", "openai-chat", "-o", "out", "chat.json"], "out"),
]


@pytest.mark.parametrize(("args", "output"), FILE_COMMANDS, ids=[c[0][0] for c in FILE_COMMANDS])
def test_a_file_size_limit_on_an_output_is_one_line(project: Path, args: list[str], output: str) -> None:
    """Past RLIMIT_FSIZE (EFBIG) the output is named, exit 2, and nothing half-written is left."""
    (project / "out").mkdir(exist_ok=True)
    for name in os.listdir(project / "out"):
        os.unlink(project / "out" / name)
    done = toolreplay(project, args, limit=_small_files)
    assert (done.returncode, done.stderr) == (
        2,
        f"toolreplay: error: {output}: cannot write: File too large\n",
    )
    assert os.listdir(project / "out") == []


def test_a_full_tmpfs_under_seal_o(project: Path, tmp_path: Path) -> None:
    """On a full filesystem (a 64 KiB tmpfs, ENOSPC) `seal -o` names the file, leaves the old one
    untouched and no temp file behind. Skipped where no mount namespace can be made."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    mount = tmp_path / "small"
    mount.mkdir()
    script = (
        f"mount -t tmpfs -o size=64k tmpfs {mount} || exit 99; "
        f"echo previous > {mount}/run.sealed.jsonl; "
        f"{sys.executable} -m toolreplay seal run.jsonl -o {mount}/run.sealed.jsonl --force; code=$?; "
        f"ls -A {mount}; cat {mount}/run.sealed.jsonl; exit $code"
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=project, capture_output=True, text=True)
    if done.returncode == 99 or "unshare:" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 2
    assert (
        done.stderr == f"toolreplay: error: {mount}/run.sealed.jsonl: cannot write: No space left on device\n"
    )
    assert done.stdout == "run.sealed.jsonl\nprevious\n"


def test_a_full_temp_folder_under_the_stdout_spool(project: Path, tmp_path: Path) -> None:
    """Output over 8 MiB is spooled to the temp folder before stdout; when that folder is full
    (a 64 KiB tmpfs as TMPDIR) the error names the output and where it was spooled, exit 2,
    and nothing reaches stdout. Skipped where no mount namespace can be made."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    big = tmp_path / "big.jsonl"
    line = '{"args":{},"index":%d,"response":{"text":"' + "x" * 1000 + '"},"tool":"t"}\n'
    big.write_text("".join(line % i for i in range(9000)))
    mount = tmp_path / "small"
    mount.mkdir()
    script = (
        f"mount -t tmpfs -o size=64k tmpfs {mount} || exit 99; "
        f"TMPDIR={mount} {sys.executable} -m toolreplay seal {big} > {tmp_path}/out.txt; code=$?; "
        f"ls -A {mount}; exit $code"
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=project, capture_output=True, text=True)
    if done.returncode == 99 or "unshare:" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 2
    assert done.stderr == (
        f"toolreplay: error: <stdout> (spooled in {mount}): cannot write: No space left on device\n"
    )
    assert done.stdout == ""  # the spool's temp file is gone
    assert (tmp_path / "out.txt").read_text() == ""


def test_step_outputs_on_a_full_disk_name_the_file() -> None:
    """GITHUB_OUTPUT that cannot be written (/dev/full) is an error naming it, not an internal error."""
    from toolreplay.errors import InputError
    from toolreplay.github.action import write_outputs

    with pytest.raises(InputError) as caught:
        write_outputs("/dev/full", {"exit-code": "0"})
    assert str(caught.value) == "/dev/full: cannot write: No space left on device"
