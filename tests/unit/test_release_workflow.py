""".github/workflows/release.yml is code: its jobs' permissions and conditions, and its run: steps.

The steps that decide something (the version, the release notes) are run here with bash as the
runner would run them: their ``env:`` given by the test, a fresh ``GITHUB_OUTPUT``, the
working directory a folder holding the files they read.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from toolreplay import __version__

RELEASE = ROOT / ".github" / "workflows" / "release.yml"
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    return data


def step(name: str) -> dict[str, Any]:
    [found] = [s for job in workflow()["jobs"].values() for s in job["steps"] if s.get("name") == name]
    return found


def run_step(
    name: str, folder: Path, env: dict[str, str], scratch: Path | None = None
) -> tuple[int, str, dict[str, str]]:
    """Run one run: step in ``folder``; (exit code, stdout and stderr, the outputs it set).

    The script and its GITHUB_OUTPUT are written to ``scratch`` (default: ``folder``)."""
    scratch = scratch or folder
    output = scratch / "github-output"
    output.write_text("")
    script = scratch / "step.sh"
    script.write_text(step(name)["run"], encoding="utf-8")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "GITHUB_OUTPUT": str(output), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return proc.returncode, proc.stdout + proc.stderr, outputs


def test_triggers_are_a_version_tag_and_a_manual_dry_run() -> None:
    """A vX.Y.Z tag releases; workflow_dispatch (the dry run) has no input that could publish."""
    on = workflow()[True]  # YAML 1.1 reads the key `on` as true
    assert on == {"push": {"tags": ["v*.*.*"]}, "workflow_dispatch": None}


def test_permissions_are_granted_per_job_and_least() -> None:
    """The workflow grants nothing; each job the least it needs: read to build, OIDC to attest and
    publish, contents write only to create the release and move the major tag."""
    data = workflow()
    assert data["permissions"] == {}
    assert {name: job["permissions"] for name, job in data["jobs"].items()} == {
        "build": {"contents": "read"},
        "attest": {"id-token": "write", "attestations": "write"},
        "pypi": {"id-token": "write"},
        "github-release": {"contents": "write"},
    }


def test_only_a_tag_push_attests_publishes_or_releases() -> None:
    """Every job after the build runs on a push (a tag) only, so a manual run is a dry run; the
    build job is the only one that checks out or builds."""
    jobs = workflow()["jobs"]
    assert "if" not in jobs["build"]
    for name in ("attest", "pypi", "github-release"):
        assert jobs[name]["if"] == "github.event_name == 'push'", name
        assert not any(s.get("uses", "").startswith("actions/checkout@") for s in jobs[name]["steps"])
        assert not any("python -m build" in s.get("run", "") for s in jobs[name]["steps"])
    assert jobs["pypi"]["needs"] == ["build", "attest"]
    assert jobs["github-release"]["needs"] == ["build", "pypi"]


def test_pypi_is_trusted_publishing_without_a_token() -> None:
    """The publish step has no password or token: PyPI trusts the job's OIDC token."""
    [publish] = [
        s for s in workflow()["jobs"]["pypi"]["steps"] if "gh-action-pypi-publish" in s.get("uses", "")
    ]
    assert publish["with"] == {"packages-dir": "dist/"}
    assert "secrets." not in RELEASE.read_text(encoding="utf-8")


def test_actions_are_pinned_and_scripts_hold_no_expressions() -> None:
    """Every action is pinned to a commit SHA; no run: script holds ${{ }} (values come through env:)."""
    for job in workflow()["jobs"].values():
        for s in job["steps"]:
            if "uses" in s:
                assert _PINNED.match(s["uses"]), s["uses"]
            else:
                assert "${{" not in s["run"], s["name"]
                assert s["run"].startswith("set -euo pipefail\n"), s["name"]


def test_checkout_and_setup_python_pins_match_ci() -> None:
    """checkout and setup-python are the commits the project's CI pins."""
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    build = [s["uses"] for s in workflow()["jobs"]["build"]["steps"] if "uses" in s]
    assert build[0].startswith("actions/checkout@") and build[0] in ci
    assert build[1].startswith("actions/setup-python@") and build[1] in ci


# -- the version ---------------------------------------------------------------------------------


def version_folder(tmp_path: Path, version: str) -> Path:
    (tmp_path / "src" / "toolreplay").mkdir(parents=True)
    (tmp_path / "src" / "toolreplay" / "_version.py").write_text(f'__version__ = "{version}"\n')
    return tmp_path


def test_the_version_step_reads_the_package_version(tmp_path: Path) -> None:
    """On this checkout the Version step says the version src/toolreplay/_version.py sets."""
    code, printed, outputs = run_step(
        "Version", ROOT, {"EVENT": "workflow_dispatch", "REF": "refs/heads/main"}, tmp_path
    )
    assert code == 0, printed
    assert outputs == {"version": __version__}


def test_a_tag_naming_the_package_version_releases(tmp_path: Path) -> None:
    """A push of the tag v1.2.3 on a commit whose package says 1.2.3 goes on."""
    folder = version_folder(tmp_path, "1.2.3")
    code, printed, outputs = run_step("Version", folder, {"EVENT": "push", "REF": "refs/tags/v1.2.3"})
    assert (code, outputs) == (0, {"version": "1.2.3"}), printed


@pytest.mark.parametrize("ref", ["refs/tags/v1.2.4", "refs/tags/v1.2.3.1", "refs/tags/v1.2"])
def test_a_tag_that_is_not_the_package_version_stops_the_release(tmp_path: Path, ref: str) -> None:
    """A tag other than v + the package's version stops the release with one ::error naming both."""
    folder = version_folder(tmp_path, "1.2.3")
    code, printed, outputs = run_step("Version", folder, {"EVENT": "push", "REF": ref})
    assert code == 1 and outputs == {}
    tag = ref.removeprefix("refs/tags/")
    assert printed == (
        f"::error title=release::the tag is {tag}, but src/toolreplay/_version.py says 1.2.3 (tag v1.2.3)\n"
    )


# -- the release notes ---------------------------------------------------------------------------

CHANGELOG = """\
# Changelog

Intro line.

## [Unreleased]

### Added

- Not released yet.

## [1.0.0] - 2026-12-06


### Added

- `toolreplay release`: one line.

### Fixed

- Another line.


## [1.0.0-rc.1] - 2026-12-01

- The candidate.

## [0.7.0] - 2026-12-01

### Added

- An older line.

[1.0.0]: https://example.invalid/compare/v0.7.0...v1.0.0
[0.7.0]: https://example.invalid/releases/v0.7.0
"""


def notes(tmp_path: Path, changelog: str, version: str) -> tuple[int, str, str]:
    (tmp_path / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    code, printed, _ = run_step("Release notes", tmp_path, {"VERSION": version})
    written = tmp_path / "notes" / "notes.md"
    return code, printed, written.read_text(encoding="utf-8") if written.exists() else ""


def test_notes_are_the_versions_section(tmp_path: Path) -> None:
    """The notes are the lines under `## [1.0.0] - 2026-12-06` up to the next section, without the
    blank lines around them."""
    code, printed, text = notes(tmp_path, CHANGELOG, "1.0.0")
    assert code == 0, printed
    assert text == "### Added\n\n- `toolreplay release`: one line.\n\n### Fixed\n\n- Another line.\n"


def test_the_last_sections_notes_stop_at_the_link_definitions(tmp_path: Path) -> None:
    """The oldest section ends where Keep a Changelog's link definitions start."""
    code, printed, text = notes(tmp_path, CHANGELOG, "0.7.0")
    assert code == 0, printed
    assert text == "### Added\n\n- An older line.\n"


@pytest.mark.parametrize(
    ("changelog", "version"),
    [
        (CHANGELOG, "1.0.1"),  # no such section
        (CHANGELOG, "1.0"),  # a prefix of a version is not the version
        (CHANGELOG.replace("## [1.0.0] - 2026-12-06", "## [1.0.0]"), "1.0.0"),  # not dated
        (CHANGELOG.replace("## [1.0.0] - 2026-12-06", "## [1.0.0] - soon"), "1.0.0"),
        ("## [1.0.0] - 2026-12-06\n\n## [0.7.0] - 2026-12-01\n- x\n", "1.0.0"),  # empty
    ],
)
def test_a_version_without_its_dated_section_stops_the_release(
    tmp_path: Path, changelog: str, version: str
) -> None:
    """No `## [X.Y.Z] - YYYY-MM-DD` section with lines under it: one ::error on CHANGELOG.md, exit 1."""
    code, printed, text = notes(tmp_path, changelog, version)
    assert code == 1
    assert printed == (
        "::error file=CHANGELOG.md,title=release::"
        f'no "## [{version}] - YYYY-MM-DD" section with lines under it\n'
    )
    assert text == ""


def test_every_dated_section_of_the_changelog_gives_notes(tmp_path: Path) -> None:
    """The project's own CHANGELOG.md: each dated section's notes start with its first line."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    dated = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}\n+(.+)$", changelog, re.MULTILINE)
    assert dated
    for version, first in dated:
        code, printed, text = notes(tmp_path, changelog, version)
        assert code == 0, printed
        assert text.splitlines()[0] == first


# -- the major tag -------------------------------------------------------------------------------

#: a stand-in for the GitHub CLI (not installed here): answers `gh api` from the tags in $TAGS and
#: whether the major tag exists from $MAJOR_EXISTS, and logs every call's arguments
_GH = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$GH_LOG"
case "$*" in
  *matching-refs*) for tag in $TAGS; do echo "refs/tags/$tag"; done ;;
  "api repos/"*"/git/ref/tags/"*" --silent") [ "$MAJOR_EXISTS" = yes ] || exit 1 ;;
esac
"""


def fake_gh(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a step whose ``gh`` is the fake above, and the log its calls go to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(_GH)
    (bin_dir / "gh").chmod(0o755)
    log = tmp_path / "gh.log"
    log.write_text("")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "GH_LOG": str(log)}, log


def move_major(tmp_path: Path, version: str, tags: str, major_exists: bool) -> tuple[int, str, list[str]]:
    env, log = fake_gh(tmp_path)
    env |= {
        "TAGS": tags,
        "MAJOR_EXISTS": "yes" if major_exists else "no",
        "REPO": "owner/toolreplay",
        "VERSION": version,
        "SHA": "c0ffee",
    }
    code, printed, _ = run_step("Move the major tag", tmp_path, env)
    return code, printed, log.read_text().splitlines()


def test_the_newest_release_moves_the_major_tag(tmp_path: Path) -> None:
    """v1.10.0 is newer than v1.9.0 (version order, not text order): v1 is moved to its commit."""
    code, printed, calls = move_major(tmp_path, "1.10.0", "v1.9.0 v1.10.0 v1.2.0 v10.0.0", True)
    assert code == 0, printed
    assert calls[0] == "api --paginate repos/owner/toolreplay/git/matching-refs/tags/v1. --jq .[].ref"
    assert (
        calls[-1]
        == "api --method PATCH repos/owner/toolreplay/git/refs/tags/v1 -f sha=c0ffee -F force=true --silent"
    )
    assert printed == "v1 -> v1.10.0 (c0ffee)\n"


def test_the_first_release_of_a_major_creates_its_tag(tmp_path: Path) -> None:
    """With no v1 yet, the first v1.y.z creates it."""
    code, printed, calls = move_major(tmp_path, "1.0.0", "v1.0.0", False)
    assert code == 0, printed
    assert (
        calls[-1]
        == "api --method POST repos/owner/toolreplay/git/refs -f ref=refs/tags/v1 -f sha=c0ffee --silent"
    )


def test_a_fix_on_an_older_line_leaves_the_major_tag(tmp_path: Path) -> None:
    """Releasing v1.0.5 after v1.2.0 leaves v1 on v1.2.0: nothing is written."""
    code, printed, calls = move_major(tmp_path, "1.0.5", "v1.0.5 v1.2.0 v1.0.0-rc1", True)
    assert code == 0, printed
    assert printed == "v1 stays: v1.0.5 is not the newest v1.y.z (v1.2.0 is)\n"
    assert not any("--method" in call for call in calls)


def test_the_release_is_created_from_the_tag_with_the_notes(tmp_path: Path) -> None:
    """The GitHub release is made for the existing tag, with the distributions and the notes file."""
    env, log = fake_gh(tmp_path)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "toolreplay-1.0.0.tar.gz").write_text("")
    (tmp_path / "dist" / "toolreplay-1.0.0-py3-none-any.whl").write_text("")
    env["VERSION"] = "1.0.0"
    code, printed, _ = run_step("Create the release", tmp_path, env)
    assert code == 0, printed
    assert log.read_text() == (
        "release create v1.0.0 dist/toolreplay-1.0.0-py3-none-any.whl dist/toolreplay-1.0.0.tar.gz"
        " --verify-tag --title toolreplay 1.0.0 --notes-file notes/notes.md\n"
    )
