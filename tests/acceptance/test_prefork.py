"""The warm start the server tests use (tests/prefork.py) behaves as the cold start it stands in
for: the same streams, arguments, environment, folder and exit, signals passed on, and no server
left behind when its launcher is killed. Each case runs one script both ways and compares."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realservers import Zygote

SCRIPT = """
import json, os, sys, time
mode = sys.argv[1]
if mode == "echo":
    said = sys.stdin.read()
    seen = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("PREFORK_PROBE"), "stdin": said,
            "path0": sys.path[0], "name": __name__, "unbuffered": "PYTHONUNBUFFERED" in os.environ}
    sys.stdout.write(json.dumps(seen))
    sys.stderr.write("d\\u00e9j\\u00e0 vu\\n")
    sys.exit(3)
if mode == "wait":
    print(os.getpid(), flush=True)
    time.sleep(60)
if mode == "raise":
    raise ValueError("boom")
if mode == "message":
    sys.exit("a message, not a code")
"""


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    """A zygote that imports nothing (the servers' one imports the MCP SDK; the mechanism is the same)."""
    made = Zygote([])
    yield made
    made.stop()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "script.py"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def both(zygote: Zygote, script: Path, *args: str) -> dict[str, list[str]]:
    cold = [sys.executable, str(script), *args]
    return {"cold": cold, "warm": zygote.command(cold)}


def test_streams_arguments_environment_folder_and_exit_are_the_cold_starts(
    zygote: Zygote, script: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PREFORK_PROBE": "seen"}
    env.pop("PYTHONUNBUFFERED", None)
    runs = {
        how: subprocess.run(argv, input=b"in\n", capture_output=True, env=env, cwd=tmp_path, timeout=60)
        for how, argv in both(zygote, script, "echo", "two words").items()
    }
    cold, warm = runs["cold"], runs["warm"]
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert cold.returncode == 3
    assert json.loads(cold.stdout) == {
        "argv": ["echo", "two words"],
        "cwd": str(tmp_path),
        "env": "seen",
        "stdin": "in\n",
        "path0": str(script.parent),
        "name": "__main__",
        "unbuffered": False,
    }


@pytest.mark.parametrize(
    ("mode", "last"), [("raise", "ValueError: boom"), ("message", "a message, not a code")]
)
def test_a_failing_script_ends_as_it_does_cold(zygote: Zygote, script: Path, mode: str, last: str) -> None:
    for how, argv in both(zygote, script, mode).items():
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert (done.returncode, done.stderr.splitlines()[-1]) == (1, last), how


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_launcher_reaches_the_server_and_ends_both_alike(
    zygote: Zygote, script: Path, signum: signal.Signals
) -> None:
    codes = {}
    for how, argv in both(zygote, script, "wait").items():
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        ) as process:
            assert process.stdout is not None
            server = int(process.stdout.readline())
            process.send_signal(signum)
            codes[how] = process.wait(timeout=60)
        assert _gone(server), how
    assert codes == {"cold": -signum, "warm": -signum}


def test_a_killed_launcher_leaves_no_server_behind(zygote: Zygote, script: Path) -> None:
    with subprocess.Popen(
        zygote.command([sys.executable, str(script), "wait"]), stdout=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        server = int(process.stdout.readline())
        assert server != process.pid  # the server is the zygote's child, not the launcher
        process.kill()
        assert process.wait(timeout=60) == -signal.SIGKILL
    assert _gone(server)


def _gone(pid: int) -> bool:
    """Whether process ``pid`` ends within 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True  # reaped between the two looks
        if state == "Z":
            return True  # ended, not yet reaped by its parent
        time.sleep(0.02)
    return False
