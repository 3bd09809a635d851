"""`toolreplay fingerprint` and `fingerprint-diff` through the real CLI: output, exit codes, errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolreplay.cli import cli
from toolreplay.contracts.lock import load_lock, save_lock
from toolreplay.library import Recorder, ToolRegistry

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(cli, list(args), catch_exceptions=False)


def github_pair(tmp_path: Path) -> tuple[Path, Path]:
    """The GitHub sample, and a copy with one tool removed, one added, one bound tightened, one enum grown."""
    tools = json.loads((DATA / "mcp_github-mcp-server_sample.json").read_text(encoding="utf-8"))
    old = tmp_path / "old.json"
    old.write_text(json.dumps(tools), encoding="utf-8")
    by_name = {t["name"]: t for t in tools}
    props = by_name["search_code"]["inputSchema"]["properties"]
    props["perPage"]["maximum"] = 50
    props["order"]["enum"] = ["asc", "desc", "relevance"]
    tools = [t for t in tools if t["name"] != "get_job_logs"]
    tools.append(
        {"name": "list_tags", "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}}}}
    )
    new = tmp_path / "new.json"
    new.write_text(json.dumps(tools), encoding="utf-8")
    return old, new


def test_lock_diff_text_and_exit_codes(runner: CliRunner, tmp_path: Path) -> None:
    """Two locks: header, one classified line per difference, exit 1; the same lock twice exits 0."""
    old, new = github_pair(tmp_path)
    old_lock, new_lock = tmp_path / "old.tools.lock.json", tmp_path / "new.tools.lock.json"
    assert run(runner, "fingerprint", str(old), "-o", str(old_lock), "--version", "1.0").exit_code == 0
    assert run(runner, "fingerprint", str(new), "-o", str(new_lock), "--version", "1.0").exit_code == 0
    removed = load_lock(old_lock).tools["get_job_logs"].fingerprint
    added = load_lock(new_lock).tools["list_tags"].fingerprint
    result = run(runner, "fingerprint-diff", str(old_lock), str(new_lock))
    assert result.exit_code == 1
    assert result.output == (
        "tools recorded: 7\n"
        "tools live: 7\n"
        "tools drifted: 3\n"
        "breaking: 2\n"
        "findings: 4\n"
        f'get_job_logs: removed: fingerprint {removed}, version "1.0"\n'
        f'list_tags: added: fingerprint {added}, version "1.0"\n'
        "search_code: schema (compatible): /properties/order/enum"
        ' ["asc","desc"] -> ["asc","desc","relevance"]\n'
        "search_code: schema (breaking): /properties/perPage/maximum 100 -> 50\n"
    )
    same = run(runner, "fingerprint-diff", str(old_lock), str(old_lock))
    assert same.exit_code == 0
    assert same.output.endswith("tools drifted: 0\nbreaking: 0\nfindings: 0\n")


def test_lock_diff_json(runner: CliRunner, tmp_path: Path) -> None:
    """--format json carries the same findings, with a null index for contract findings."""
    old, new = github_pair(tmp_path)
    run(runner, "fingerprint", str(old), "-o", str(tmp_path / "a.tools.lock.json"))
    run(runner, "fingerprint", str(new), "-o", str(tmp_path / "b.tools.lock.json"))
    result = run(
        runner,
        "fingerprint-diff",
        str(tmp_path / "a.tools.lock.json"),
        str(tmp_path / "b.tools.lock.json"),
        "--format",
        "json",
    )
    assert result.exit_code == 1
    [report] = json.loads(result.output)["reports"]
    assert report["summary"]["breaking"] == 2
    assert report["findings"][3] == {
        "index": None,
        "kind": "tool-drift",
        "line": None,
        "message": "schema (breaking): /properties/perPage/maximum 100 -> 50",
        "path": report["file"],
        "related": None,
        "tool": "search_code",
    }
    report_file = tmp_path / "diff.report.json"
    report_file.write_text(result.output, encoding="utf-8")
    assert run(runner, "validate", str(report_file)).exit_code == 0


def test_fingerprint_is_byte_stable_and_valid(runner: CliRunner, tmp_path: Path) -> None:
    """Two runs write the same bytes, and the lock passes `toolreplay validate`."""
    lock = tmp_path / "tools.lock.json"
    first = run(runner, "fingerprint", str(DATA / "anthropic_MailCli_tools.json"))
    assert first.exit_code == 0
    lock.write_text(first.output, encoding="ascii")
    assert run(runner, "fingerprint", str(DATA / "anthropic_MailCli_tools.json")).output == first.output
    assert run(runner, "validate", str(lock)).output == f"{lock}: valid\n"


def test_a_non_ascii_version_is_fingerprinted(runner: CliRunner, tmp_path: Path) -> None:
    """`--version β` writes a lock that reads back and validates (it was an internal error, exit 3);
    a --version that is not UTF-8 text (an undecodable argument) is refused by name, exit 2."""
    lock = tmp_path / "tools.lock.json"
    source = str(DATA / "anthropic_MailCli_tools.json")
    result = runner.invoke(cli, ["fingerprint", source, "--version", "β", "-o", str(lock)])
    assert result.exit_code == 0, result.output
    assert {c.version for c in load_lock(lock).tools.values()} == {"β"}
    assert run(runner, "fingerprint-diff", str(lock), str(lock)).exit_code == 0
    assert run(runner, "validate", str(lock)).output == f"{lock}: valid\n"
    bad = runner.invoke(cli, ["fingerprint", source, "--version", "1\udcff"])
    assert bad.exit_code == 2
    assert bad.output.endswith("Error: Invalid value for '--version': '1\\udcff' is not UTF-8 text\n")


def test_bfcl_warns_per_tool_and_succeeds(tmp_path: Path) -> None:
    """Definitions that are not JSON Schema warn on stderr, one line per tool, and still fingerprint."""
    runner = CliRunner()
    out = tmp_path / "bfcl.tools.lock.json"
    result = runner.invoke(
        cli,
        ["fingerprint", str(DATA / "bfcl_simple_python_sample.jsonl"), "-o", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    warnings = result.stderr.splitlines()
    assert len(warnings) == 14
    assert all(w.startswith("toolreplay: warning: ") for w in warnings)
    assert "tool 'random_forest.train': input schema is not valid JSON Schema: \"any\"" in warnings[-1]
    assert len(load_lock(out).tools) == 12


def test_transcript_against_lock(runner: CliRunner, tmp_path: Path) -> None:
    """A recorded run whose tool changed since is reported at the call, with both fingerprints."""

    def search(query: str) -> dict[str, Any]:
        return {"hits": [query]}

    run_path = tmp_path / "run.sealed.jsonl"
    with Recorder(run_path, seal=True) as recorder:
        before = ToolRegistry(recorder=recorder)
        before.register(search, version="1")
        before.call("search", query="a")
        before.call("search", query="b")
    after = ToolRegistry()
    after.register(search, version="2")
    lock = tmp_path / "tools.lock.json"
    save_lock(after.lock(), lock)
    result = run(runner, "fingerprint-diff", str(run_path), str(lock))
    assert result.exit_code == 1
    old, new = before.contract("search").fingerprint, after.contract("search").fingerprint
    assert result.output == (
        "calls: 2\n"
        "fingerprinted calls: 2\n"
        "drifted calls: 2\n"
        "findings: 1\n"
        f"index 0: tool-drift: tool 'search' was called with fingerprint {old}; the lock has {new}"
        ' (version "2")\n'
    )
    save_lock(before.lock(), lock)
    assert run(runner, "fingerprint-diff", str(run_path), str(lock)).exit_code == 0


def test_python_source(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """module:object fingerprints a ToolRegistry with its versions, or plain callables with --version."""
    (tmp_path / "contract_cli_tools.py").write_text(
        textwrap.dedent(
            """
            from toolreplay import ToolRegistry

            registry = ToolRegistry()

            @registry.tool(version="3.1", schema={"type": "object"})
            def search(query: str, limit: int = 10) -> dict:
                return {}

            def write_file(path: str, text: str) -> None: ...

            TOOLS = [search.__wrapped__, write_file]
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from_registry = json.loads(run(runner, "fingerprint", "contract_cli_tools:registry").stdout)
    assert from_registry["tools"]["search"]["version"] == "3.1"
    assert from_registry["tools"]["search"]["signature"]["params"][1] == ["limit", "<class 'int'>", "10"]
    from_list = json.loads(run(runner, "fingerprint", "contract_cli_tools:TOOLS", "--version", "9").stdout)
    assert sorted(from_list["tools"]) == ["search", "write_file"]
    assert from_list["tools"]["write_file"]["mutates"] is True
    assert from_list["tools"]["search"]["version"] == "9"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "builtins:max",
            "builtins:max: tool 'max' has no signature to fingerprint: no signature found for builtin",
        ),
        (
            "odd_tools:LISTED",
            "odd_tools:LISTED: tool 'dict' has no signature to fingerprint: no signature found",
        ),
        (
            "odd_tools:shy",
            "odd_tools:shy: tool 'shy' has no signature to fingerprint: RuntimeError: no repr\n",
        ),
        ("odd_tools:lone", 'odd_tools:lone: tool "lone": a lock cannot hold its lone surrogate (U+D800)'),
        (
            "odd_tools:NAMED",
            'odd_tools:NAMED: tool "\\ud800x": a lock cannot hold its lone surrogate (U+D800)',
        ),
    ],
)
def test_a_python_tool_the_lock_cannot_describe_is_refused(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, message: str
) -> None:
    """A builtin with no signature (alone or in a list), a default whose repr raises, or a lone
    surrogate in a default or a name (a lock that no reader takes back) is one line, exit 2,
    and no lock is written: each was an internal error or an unreadable lock."""
    (tmp_path / "odd_tools.py").write_text(
        textwrap.dedent(
            """
            class Shy:
                def __repr__(self):
                    raise RuntimeError("no repr")

            def shy(a=Shy()): ...
            def lone(a="\\ud800"): ...
            def fine(x: int = 1): ...

            LISTED = [print, dict]
            NAMED = {"\\ud800x": fine}
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(runner, "fingerprint", spec, "-o", "out.tools.lock.json")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"toolreplay: error: {message}") and result.stderr.count("\n") == 1
    assert not (tmp_path / "out.tools.lock.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["fingerprint", "no_such_module_xyz:tools"],
            "toolreplay: error: no_such_module_xyz:tools: cannot import module 'no_such_module_xyz':"
            " ModuleNotFoundError: No module named 'no_such_module_xyz'\n",
        ),
        (["fingerprint", "missing.json"], "toolreplay: error: missing.json: no such file\n"),
        (
            ["fingerprint-diff", "a.jsonl", "b.jsonl"],
            "toolreplay: error: b.jsonl: LIVE must be a tool lock, not a transcript\n",
        ),
        (
            ["fingerprint-diff", "missing.tools.lock.json", "tools.lock.json"],
            "toolreplay: error: tools.lock.json: no such file\n",
        ),
    ],
)
def test_bad_input_exits_2(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    """Unusable sources are one line naming the file, exit 2, no traceback."""
    monkeypatch.chdir(tmp_path)
    result = run(runner, *args)
    assert result.exit_code == 2
    assert result.output == message


def test_tampered_lock_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    """A lock whose schema was edited without re-fingerprinting is refused with its pointer."""
    lock = tmp_path / "tools.lock.json"
    lock.write_text(run(runner, "fingerprint", str(DATA / "mcp_github-mcp-server_sample.json")).stdout)
    data = json.loads(lock.read_text())
    data["tools"]["search_code"]["schema"]["properties"]["perPage"]["maximum"] = 10
    lock.write_text(json.dumps(data))
    result = run(runner, "fingerprint-diff", str(lock), str(lock))
    assert result.exit_code == 2
    assert result.output.startswith(f"toolreplay: error: {lock}:1: fingerprint ")
    assert result.output.endswith("(at /tools/search_code/fingerprint)\n")


def test_fingerprint_diff_of_python_tools_reads_required_and_optional(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python tool that gains a required argument reads 'reason': str (required), never a Python repr."""
    (tmp_path / "support_v1.py").write_text(
        "def refund_order(order: str, amount: int = 0) -> dict:\n    return {}\n\nTOOLS = [refund_order]\n"
    )
    (tmp_path / "support_v2.py").write_text(
        "def refund_order(order: str, reason: str, amount: int = 5) -> dict:\n    return {}\n\n"
        "TOOLS = [refund_order]\n"
    )
    monkeypatch.chdir(tmp_path)
    for name in ("support_v1", "support_v2"):
        result = runner.invoke(cli, ["fingerprint", f"{name}:TOOLS", "-o", f"{name}.lock.json"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["fingerprint-diff", "support_v1.lock.json", "support_v2.lock.json"])
    assert result.stdout.splitlines()[-2:] == [
        "refund_order: signature (parameter added): /params/1 (absent) -> 'reason': str (required)",
        "refund_order: signature (default changed): /params/2/2 optional, default 0 -> optional, default 5",
    ]
    assert "inspect" not in result.stdout
