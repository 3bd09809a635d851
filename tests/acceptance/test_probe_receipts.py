"""Determinism receipts against real MCP servers from the registries (issue 26): ``probe --repeat N
-o RECEIPT`` writes what N answers gave, ``probe --against RECEIPT`` asks again and names the calls
whose digests changed; a tool the lock declares deterministic that answers twice differently fails
at once."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import invoke
from tests.gitrepo import git
from tests.mcp_agent import record_calls
from tests.realservers import python_server
from toolreplay.canonical import canonical

pytestmark = pytest.mark.slow


CONVERT = ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"})
NOW = ("get_current_time", {"timezone": "UTC"})


@dataclass(frozen=True)
class Written:
    """A recording of mcp-server-time, its locks, and the receipt written from it."""

    run: Path
    lock: Path
    shape_lock: Path
    receipt: Path
    result: tuple[int, str, str]


@pytest.fixture(scope="module")
def time_receipt(tmp_path_factory: pytest.TempPathFactory) -> Written:
    folder = tmp_path_factory.mktemp("time")
    run, lock = record_calls(folder, python_server("time"), [CONVERT, NOW])
    data = json.loads(lock.read_text(encoding="utf-8"))
    data["tools"]["get_current_time"]["deterministic"] = False
    shape_lock = folder / "shape.lock.json"
    shape_lock.write_text(json.dumps(data), encoding="utf-8")
    receipt = folder / "time.sealed.jsonl"
    argv = ["probe", str(run), "--lock", str(shape_lock), "--repeat", "3", "-o", str(receipt), "--"]
    result = invoke(CliRunner(), *argv, *python_server("time"))
    return Written(run=run, lock=lock, shape_lock=shape_lock, receipt=receipt, result=result)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_receipt_holds_each_calls_digests_sealed(time_receipt: Written) -> None:
    """--repeat 3 -o asks each read-only call three times and writes one sealed record per call: its
    recorded args, the live fingerprint, the server's name and version, and the digests of the
    answers (convert_time's canonical answer; get_current_time's shape, the lock declaring it not
    deterministic)."""
    assert time_receipt.result == (
        0,
        "calls: 2\nasked: 2\ntool 'convert_time': stable\n"
        "tool 'get_current_time': stable (shape only: declared not deterministic)\nfindings: 0\n",
        f"toolreplay: wrote a receipt of 2 calls (3 answers each) to {time_receipt.receipt}\n",
    )
    code, out, _ = invoke(CliRunner(), "verify", str(time_receipt.receipt))
    assert code == 0 and "chain: intact\nlinks: 2\n" in out
    recorded = _lines(time_receipt.run)
    receipt = _lines(time_receipt.receipt)
    assert [(r["tool"], r["args"], r["fingerprint"]) for r in receipt] == [
        (r["tool"], r["args"], r["fingerprint"]) for r in recorded
    ]
    version = recorded[0]["response"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]
    # the answer without the protocol's envelope, as probe compares it
    answer = {k: v for k, v in recorded[0]["response"].items() if k not in ("_meta", "resultType")}
    assert receipt[0]["response"] == {
        "answers": 3,
        "compared": "answer",
        "digests": [hashlib.sha256(canonical({"isError": False, **answer}).encode()).hexdigest()],
        "server": {"name": "mcp-time", "version": version},
        "volatile": [],
    }
    assert receipt[1]["response"]["compared"] == "shape"
    assert len(receipt[1]["response"]["digests"]) == 1


def test_probe_against_the_receipt_of_the_same_server_passes(time_receipt: Written) -> None:
    """The receipt alone (no TRANSCRIPT) is asked again: the same digests, exit 0."""
    argv = ["probe", "--against", str(time_receipt.receipt), "--repeat", "2", "--", *python_server("time")]
    code, out, err = invoke(CliRunner(), *argv)
    assert (code, out) == (
        0,
        "calls: 2\nasked: 2\nreceipt: 2 answers a call\ntool 'convert_time': stable\n"
        "tool 'get_current_time': stable (shape only: the receipt holds the digests of shapes)\n"
        "findings: 0\n",
    ), err


def test_a_tool_declared_deterministic_that_answers_twice_differently_fails_at_once(
    time_receipt: Written,
) -> None:
    """With the lock record wrote (every tool deterministic), get_current_time's two answers a second
    apart are silent-drift at once, naming both digests and where the answers differ."""
    argv = ["probe", str(time_receipt.run), "--lock", str(time_receipt.lock), "--repeat", "2", "--"]
    code, out, err = invoke(CliRunner(), *argv, *python_server("time"))
    assert code == 1, out + err
    assert "tool 'convert_time': stable\ntool 'get_current_time': silent-drift\nfindings: 1\n" in out
    assert re.search(
        r"^index 1: silent-drift: tool 'get_current_time' is declared deterministic but answered the call"
        r" recorded at index 1 with 2 different answers in 2 asks \(2 digests [0-9a-f]{16}, [0-9a-f]{16}\),"
        r" first at '/content/0/text#/datetime': \"\d{4}-",
        out,
        re.M,
    ), out


def test_a_tampered_receipt_and_bad_combinations_are_refused(time_receipt: Written, tmp_path: Path) -> None:
    """A receipt whose chain is broken is exit 1, a file that is not a receipt exit 2 naming its line,
    and the forms probe does not take are usage errors; no server is started for any of them."""
    runner, server = CliRunner(), python_server("time")
    tampered = tmp_path / "tampered.sealed.jsonl"
    text = time_receipt.receipt.read_text(encoding="utf-8")
    digest = json.loads(text.splitlines()[0])["response"]["digests"][0]
    tampered.write_text(text.replace(digest, "0" * 64, 1), encoding="utf-8")
    code, out, err = invoke(runner, "probe", "--against", str(tampered), "--", *server)
    assert (code, out) == (1, "")
    assert err.startswith(f"toolreplay: error: {tampered}: the chain is broken at index 0 (digest does not")
    sealed = tmp_path / "run.sealed.jsonl"
    assert invoke(runner, "seal", str(time_receipt.run), "-o", str(sealed))[0] == 0
    code, _, err = invoke(runner, "probe", "--against", str(sealed), "--", *server)
    assert code == 2
    assert err.startswith(f"toolreplay: error: {sealed}:1: not a probe receipt: ")
    before = time_receipt.receipt.read_bytes()
    receipt, run = str(time_receipt.receipt), str(time_receipt.run)
    refusals = {
        ("probe", run, "--against", receipt, "--"): "--against RECEIPT takes the place of TRANSCRIPT",
        ("probe", run, "-o", str(tmp_path / "new.sealed.jsonl"), "--"): "need --repeat N",
        ("probe", run, "--repeat", "2", "-o", str(tmp_path / "r.jsonl"), "--"): "must end in .sealed.jsonl",
        ("probe", run, "--repeat", "2", "-o", receipt, "--"): "already exists; not replacing it",
        ("probe", run, "--sequence", "--repeat", "2", "--"): "--repeat does not go with it",
        ("probe", "--against", receipt, "--sequence", "--"): "goes with neither -o, --sequence",
    }
    for argv, problem in refusals.items():
        code, out, err = invoke(runner, *argv, *server)
        assert (code, out) == (2, ""), argv
        assert problem in err and "Traceback" not in err, (argv, err)
    code, _, err = invoke(runner, "probe", "--target", "http://127.0.0.1:9/mcp")
    assert code == 2 and "give TRANSCRIPT (the recording to ask again) or --against RECEIPT" in err
    assert time_receipt.receipt.read_bytes() == before
    assert not (tmp_path / "new.sealed.jsonl").exists() and not (tmp_path / "r.jsonl").exists()


#: a real server behind a relay that kills it when the second tools/call comes, before passing it
#: on (each round of --repeat starts a fresh one)
DYING = """
import os, subprocess, sys
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
calls = 0
for line in sys.stdin.buffer:
    if b'"tools/call"' in line:
        calls += 1
        if calls == 2:
            server.kill(); server.wait(); os._exit(0)
    server.stdin.write(line); server.stdin.flush()
"""


def test_a_call_after_the_server_died_takes_no_earlier_answer(time_receipt: Written, tmp_path: Path) -> None:
    """mcp-server-time dies as each round of --repeat 3 asks its second call: that call is
    unavailable and takes no answer of the call before it (get_current_time was given
    convert_time's answer)."""
    relay = tmp_path / "dying.py"
    relay.write_text(DYING, encoding="utf-8")
    server = [sys.executable, str(relay), *python_server("time")]
    argv = ["probe", str(time_receipt.run), "--lock", str(time_receipt.lock), "--repeat", "3", "--"]
    code, out, _ = invoke(CliRunner(), *argv, *server)
    assert code == 1
    assert "tool 'convert_time': stable\ntool 'get_current_time': unavailable\nfindings: 1\n" in out, out


@pytest.mark.parametrize("answers", [1, 1_000_000])
def test_a_resealed_receipt_asking_too_few_or_too_many_answers_is_refused(
    time_receipt: Written, tmp_path: Path, answers: int
) -> None:
    """A receipt edited and sealed again to ask each call once (no determinism left to prove) or a
    million times, a second apart (days of probing): exit 2 naming its line and place before any
    server starts; --repeat has the same bounds."""
    records = _lines(time_receipt.receipt)
    for record in records:
        del record["digest"], record["prev"]
        record["response"]["answers"] = answers
        record["response"]["digests"] = record["response"]["digests"][:1]
    plain, edited = tmp_path / "edited.jsonl", tmp_path / "edited.sealed.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    runner = CliRunner()
    assert invoke(runner, "seal", str(plain), "-o", str(edited))[0] == 0
    server = [sys.executable, "-c", "open('started', 'w')"]
    code, out, err = invoke(runner, "probe", "--against", str(edited), "--", *server, cwd=tmp_path)
    bound = "less than the minimum of 2" if answers == 1 else "greater than the maximum of 100"
    assert (code, out, err) == (
        2,
        "",
        f"toolreplay: error: {edited}:1: not a probe receipt: {answers} is {bound} (at /response/answers)\n",
    )
    assert not (tmp_path / "started").exists()
    code, _, err = invoke(
        runner, "probe", "--against", str(time_receipt.receipt), "--repeat", "101", "--", *server
    )
    assert code == 2 and "101 is not in the range 2<=x<=100" in err


def test_git_answers_that_change_are_silent_drift_naming_both_digests(tmp_path: Path) -> None:
    """mcp-server-git: a receipt of git_status and git_log passes against the same repository; after
    another commit, git_log's digest is not the receipt's: silent-drift naming its args and both
    digests, git_status (a clean tree either way) stays stable."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n", encoding="utf-8")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one", date="2024-01-01T00:00:00Z")
    server = [*python_server("git"), "--repository", str(repo)]
    calls = [("git_status", {"repo_path": str(repo)}), ("git_log", {"repo_path": str(repo)})]
    run, _ = record_calls(tmp_path, server, calls)
    receipt = tmp_path / "git.sealed.jsonl"
    runner = CliRunner()
    code, out, err = invoke(runner, "probe", str(run), "--repeat", "2", "-o", str(receipt), "--", *server)
    assert code == 0, out + err
    same = invoke(runner, "probe", "--against", str(receipt), "--", *server)
    assert same[:2] == (
        0,
        "calls: 2\nasked: 2\nreceipt: 2 answers a call\ntool 'git_log': stable\ntool 'git_status': stable\n"
        "findings: 0\n",
    )
    (repo / "b.txt").write_text("b\n", encoding="utf-8")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "two", date="2024-01-02T00:00:00Z")
    code, out, err = invoke(runner, "probe", "--against", str(receipt), "--", *server)
    assert code == 1, err
    before = _lines(receipt)[1]["response"]["digests"][0][:16]
    args = json.dumps({"repo_path": str(repo)}, separators=(",", ":"))
    found = re.fullmatch(
        "calls: 2\nasked: 2\nreceipt: 2 answers a call\ntool 'git_log': silent-drift\n"
        "tool 'git_status': stable\nfindings: 1\n"
        f"index 1: silent-drift: tool 'git_log' answered the call with args {re.escape(args)} differently:"
        f" the receipt holds digest {before} over 2 answers, now digest ([0-9a-f]{{16}}) over 2\n",
        out,
    )
    assert found is not None and found.group(1) != before, out
    # the advice: the receipt written again from its recording (a note alone would accept nothing,
    # the receipt being unchanged), and the command it prints does that
    code, markdown, _ = invoke(
        runner, "probe", "--against", str(receipt), "--format", "markdown", "--", *server
    )
    assert code == 1 and f"toolreplay note {receipt}\n" not in markdown
    assert (
        "A drift note alone accepts nothing here: it accepts a change to a file, and the receipt" in markdown
    )
    (command,) = re.findall(r"```sh\n(.*?)\n```", markdown, re.DOTALL)
    assert command == f"toolreplay probe RECORDING --repeat 2 -o {receipt} --force -- CMD"
    words = shlex.split(command.replace("RECORDING", shlex.quote(str(run))))
    argv = [*words[1:-1], *server]
    assert invoke(runner, *argv)[0] == 1  # the recording's git_log answer drifted too, as it should
    assert invoke(runner, "probe", "--against", str(receipt), "--", *server)[0] == 0


def test_a_sealed_recording_that_drifted_is_recorded_again_not_noted(
    time_receipt: Written, tmp_path: Path
) -> None:
    """probe of a sealed recording whose answer the server no longer gives: the Markdown report says
    to record a new run and accept it as the recording (which has not changed, so a note of it alone
    would accept nothing), and never prints toolreplay note for it."""
    runner = CliRunner()
    records = _lines(time_receipt.run)
    records[0]["response"]["content"][0]["text"] = "an answer the server no longer gives"
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    recording = tmp_path / "time.sealed.jsonl"
    assert invoke(runner, "seal", str(edited), "-o", str(recording))[0] == 0
    argv = ["probe", str(recording), "--lock", str(time_receipt.shape_lock), "--format", "markdown", "--"]
    code, markdown, err = invoke(runner, *argv, *python_server("time"))
    assert code == 1, markdown + err
    assert "toolreplay note" not in markdown
    run = tmp_path / "time.new.jsonl"
    assert re.findall(r"```sh\n(.*?)\n```", markdown, re.DOTALL) == [
        f"toolreplay record -o {run} --force -- CMD\ntoolreplay accept {recording} --run {run} --reason WHY"
    ]
    assert "and the recording has not changed, the server has." in markdown
