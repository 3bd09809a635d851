"""Volatile tables toolreplay does not read are named, never silently ignored: rules pasted as
``[[volatile]]`` into pyproject.toml, a mistyped table or key (issue 38); and probe
--suggest-volatile writes its rules as the configuration file in use holds them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import invoke
from tests.mcp_agent import SERVER_CMD

PYPROJECT = '[project]\nname = "x"\n\n[tool.toolreplay]\ntranscripts = ["runs/*.jsonl"]\n'
#: a rule as probe --suggest-volatile printed it before, pasted at the end of pyproject.toml (line 7)
PASTED = '\n[[volatile]]\ntool = "counter"\nat = "/response/*"\n'
#: a run whose one call counter answered twice, differently
RUN = [
    {
        "tool": "counter",
        "args": {},
        "response": {"content": [{"type": "text", "text": f"{n}"}], "structuredContent": {"result": n}},
    }
    for n in (1, 2)
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir()
    lines = [json.dumps({"index": n, **record}) for n, record in enumerate(RUN)]
    (tmp_path / "runs" / "counter.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_rules_pasted_at_the_top_level_of_pyproject_are_named(runner: CliRunner, project: Path) -> None:
    """validate calls them a problem (exit 1); check and replay warn with the file, the line and
    the table to use, and judge without them (the counter is still non-determinism)."""
    (project / "pyproject.toml").write_text(PYPROJECT + PASTED, encoding="utf-8")
    unread = (
        "pyproject.toml:7: [[volatile]] is not read: in pyproject.toml volatile rules go in"
        " [[tool.toolreplay.volatile]]"
    )
    code, out, _ = invoke(runner, "validate", "pyproject.toml", cwd=project)
    assert (code, out) == (1, f"pyproject.toml: invalid\n{unread}\n")
    code, out, err = invoke(runner, "check", "--fail-on", "non-determinism", cwd=project)
    assert code == 1 and "non-determinism" in out
    assert err.startswith(f"toolreplay: warning: {project / unread}\n")
    code, out, err = invoke(runner, "replay", "runs/counter.jsonl", cwd=project)
    assert code == 1 and err == f"toolreplay: warning: {project / unread}\n"
    # written as the table pyproject.toml reads, the same rule is read and masks the counter
    fixed = PYPROJECT + PASTED.replace("[[volatile]]", "[[tool.toolreplay.volatile]]")
    (project / "pyproject.toml").write_text(fixed, encoding="utf-8")
    assert invoke(runner, "validate", "pyproject.toml", cwd=project)[:2] == (0, "pyproject.toml: valid\n")
    code, out, err = invoke(runner, "check", "--fail-on", "non-determinism", cwd=project)
    assert (code, err) == (0, "")
    assert "non-determinism" not in out and out.endswith("masked: 4 values by 1 rule\n")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "pyproject.toml",
            PYPROJECT + PASTED.replace("[[volatile]]", "[[tool.toolreplay.volatil]]"),
            "pyproject.toml:7: [[tool.toolreplay.volatil]] is not read: in pyproject.toml volatile rules"
            " go in [[tool.toolreplay.volatile]]",
        ),
        (
            "pyproject.toml",
            PYPROJECT
            + PASTED.replace("[[volatile]]", "[[tool.toolreplay.volatile]]")
            + 'pattrn = "[0-9]+"\n',
            'pyproject.toml:10: volatile rule 1: key "pattrn" is not read: a rule\'s keys are tool, at and'
            " pattern",
        ),
        (
            "toolreplay.toml",
            'transcripts = ["runs/*.jsonl"]\n'
            + PASTED.replace("[[volatile]]", "[[tool.toolreplay.volatile]]"),
            "toolreplay.toml:3: [[tool.toolreplay.volatile]] is not read: in toolreplay.toml volatile rules"
            " go in [[volatile]]",
        ),
    ],
    ids=["mistyped-table", "unknown-key", "pyproject-form-in-toolreplay-toml"],
)
def test_a_volatile_table_the_configuration_refuses_names_its_line(
    runner: CliRunner, project: Path, name: str, text: str, problem: str
) -> None:
    """Inside the configuration's table an unread volatile table or key is refused (it always
    was: the schema knows no such key), now naming the line and what to write instead."""
    (project / name).write_text(text, encoding="utf-8")
    code, out, _ = invoke(runner, "validate", name, cwd=project)
    assert (code, out) == (1, f"{name}: invalid\n{problem}\n")
    code, out, err = invoke(runner, "check", cwd=project)
    assert (code, out, err) == (2, "", f"toolreplay: error: {project / problem}\n")


@pytest.mark.parametrize(
    ("config", "table", "where"),
    [
        ("pyproject.toml", "tool.toolreplay.volatile", "# to paste into pyproject.toml\n"),
        ("toolreplay.toml", "volatile", "# to paste into toolreplay.toml\n"),
        (
            None,
            "volatile",
            "# no configuration found: paste into a toolreplay.toml as they are, or into pyproject.toml"
            " with each [[volatile]] written [[tool.toolreplay.volatile]]\n",
        ),
    ],
)
def test_suggested_rules_are_written_for_the_configuration_in_use(
    runner: CliRunner,
    project: Path,
    config: str | None,
    table: str,
    where: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """probe --suggest-volatile writes [[tool.toolreplay.volatile]] for pyproject.toml and
    [[volatile]] for toolreplay.toml; with neither, it says which form goes where."""
    monkeypatch.setenv("COUNTER_FILE", str(project / "count"))  # counted across the rounds' servers
    if config == "pyproject.toml":
        (project / config).write_text(PYPROJECT, encoding="utf-8")
    elif config is not None:
        (project / config).write_text('transcripts = ["runs/*.jsonl"]\n', encoding="utf-8")
    argv = ["probe", "runs/counter.jsonl", "--repeat", "2", "--suggest-volatile", "--", *SERVER_CMD]
    code, out, err = invoke(runner, *argv, cwd=project)
    assert code == 0, err
    assert where in out
    assert f'[[{table}]]\ntool = "counter"\nat = "/response/structuredContent/result"\n' in out
    if config is None:
        return
    # pasted as printed, the rules are read: validate finds nothing and check masks the counter
    path = project / config
    path.write_text(path.read_text(encoding="utf-8") + out, encoding="utf-8")
    assert invoke(runner, "validate", config, cwd=project)[:2] == (0, f"{config}: valid\n")
    code, out, err = invoke(runner, "check", "--fail-on", "non-determinism", cwd=project)
    assert code == 0 and "volatile rule" not in err, out + err
    assert "non-determinism" not in out and out.endswith("masked: 4 values by 2 rules\n")
