"""Shared fixtures: paths to the shipped samples and a CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
