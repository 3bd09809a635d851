"""The release's distributions build, pass ``twine check --strict`` and work from a fresh venv.

The release workflow's own Build and Smoke test steps (.github/workflows/release.yml) run here
with bash, in a copy of this checkout (the build writes dist/ there): ``python -m build`` makes
the sdist and the wheel, twine checks them, and the wheel goes into a fresh venv with its
``[github]`` extra, every dependency resolved by that venv's pip (its cache and the configured
index make a rerun quick), where toolreplay validates, verifies and checks the shipped samples.
``python`` on PATH is this test environment's, where the workflow has actions/setup-python's.
Like the Action's steps under act, these are the workflow tier: they run in CI, or with
``TOOLREPLAY_WORKFLOW_TESTS=1`` (two builds and two fresh venvs, about a minute of the machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import NOT_COPIED, ROOT
from tests.unit.test_release_workflow import step
from toolreplay import __version__

pytestmark = pytest.mark.workflow


def run(name: str, checkout: Path, temp: Path) -> subprocess.CompletedProcess[str]:
    script = temp / f"{name}.sh"
    script.write_text(step(name)["run"], encoding="utf-8")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "RUNNER_", "VIRTUAL_ENV", "PYTHON"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["RUNNER_TEMP"] = str(temp)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=480,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of this checkout where the Build step ran once (the folder, what it printed)."""
    checkout = tmp_path_factory.mktemp("release") / "checkout"
    shutil.copytree(ROOT, checkout, ignore=NOT_COPIED, symlinks=True)
    proc = run("Build", checkout, tmp_path_factory.mktemp("runner-temp"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return checkout, proc.stdout


def test_the_release_builds_checks_and_smoke_tests_the_distributions(
    built: tuple[Path, str], tmp_path: Path
) -> None:
    """Build: one sdist and one wheel of this version, twine check --strict passing, the sdist
    carrying the samples and the wheel the schemas; Smoke test: the wheel in a fresh venv runs
    the samples (check exits 1 on the dirty one, as the README says) and the step passes."""
    checkout, printed = built
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    assert sorted(p.name for p in (checkout / "dist").iterdir()) == [
        f"toolreplay-{__version__}-py3-none-any.whl",
        f"toolreplay-{__version__}.tar.gz",
    ]
    assert "PASSED" in printed and "WARNING" not in printed
    with zipfile.ZipFile(checkout / "dist" / f"toolreplay-{__version__}-py3-none-any.whl") as wheel:
        assert "toolreplay/schemas/report.schema.json" in wheel.namelist()
    with tarfile.open(checkout / "dist" / f"toolreplay-{__version__}.tar.gz") as sdist:
        assert f"toolreplay-{__version__}/samples/session-dirty.jsonl" in sdist.getnames()

    smoke = run("Smoke test", checkout, temp)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert f"toolreplay {__version__}" in smoke.stdout
    venv = temp / "smoke-venv"
    assert (venv / "bin" / "toolreplay").exists()
    # the fresh venv resolved the dependencies itself (the [github] extra's PyGithub among them)
    listed = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"toolreplay=={__version__}" in listed
    assert "PyGithub==" in listed and "jsonschema==" in listed


def test_a_wheel_without_the_schemas_fails_the_smoke_test(built: tuple[Path, str], tmp_path: Path) -> None:
    """A wheel without the published schemas (what a wheel built from the sdist held while the
    schemas came only through the src/toolreplay/schemas symlink) fails the Smoke test step."""
    [wheel_path] = (built[0] / "dist").glob("*.whl")
    checkout = tmp_path / "checkout"
    (checkout / "dist").mkdir(parents=True)
    shutil.copytree(ROOT / "samples", checkout / "samples")
    with (
        zipfile.ZipFile(wheel_path) as wheel,
        zipfile.ZipFile(checkout / "dist" / wheel_path.name, "w") as out,
    ):
        for item in wheel.infolist():
            if not item.filename.startswith("toolreplay/schemas/"):
                out.writestr(item, wheel.read(item))
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    smoke = run("Smoke test", checkout, temp)
    assert smoke.returncode != 0
    assert "scope.schema.json" in smoke.stdout + smoke.stderr
