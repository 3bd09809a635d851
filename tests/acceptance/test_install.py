"""The README's install line works as printed with the pip a fresh venv ships (23.2 on Python 3.11.7).

The line is taken from README.md, with this checkout at its HEAD commit standing in for
``github.com/OWNER/toolreplay@COMMIT`` (as ``git+file://localhost/...``, the form the README
gives for a clone on disk). To stay offline and quick, pip builds without isolation and
installs no dependencies: a ``.pth`` file lends the fresh venv this environment's
site-packages (hatchling to build; click and the rest to run), so what is installed from
the commit is toolreplay alone, into the fresh venv.
"""

from __future__ import annotations

import re
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import ROOT


def readme_install_line() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r'^pip install "(toolreplay @ git\+https://github\.com/OWNER/toolreplay@COMMIT)"$', text, re.M
    )
    assert match is not None
    return match.group(1)


def test_readme_names_the_local_url_form() -> None:
    """The README says how to write the URL of a clone on disk for the pip a fresh venv ships."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "git+file://localhost/" in text


@pytest.mark.slow
def test_install_line_works_with_a_fresh_venvs_pip(tmp_path: Path) -> None:
    """pip as a fresh venv ships it installs toolreplay, with extras, from the README's line at a commit."""
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    python = fresh / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    requirement = (
        readme_install_line()
        .replace("toolreplay @", "toolreplay[mcp,github] @")
        .replace("https://github.com/OWNER/toolreplay", f"file://localhost{ROOT.as_posix()}")
        .replace("@COMMIT", f"@{commit}")
    )
    installed = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            requirement,
        ],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    where = subprocess.run(
        [python, "-c", "import toolreplay, sys; print(toolreplay.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(fresh)
    version = subprocess.run([fresh / "bin" / "toolreplay", "--version"], capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
