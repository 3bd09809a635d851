"""The pytest plugin looks calls up in a cassette without what the project's volatile rules mask."""

from __future__ import annotations

import pytest

from tests.acceptance.test_pytest_plugin import agent, live_calls, project

pytest_plugins = ["pytester"]
__all__ = ["project"]  # the inner project's fixture, shared with the plugin's own tests

RULE = '[[volatile]]\ntool = "search"\nat = "/args/limit"\n'
SECOND = 'assert toolreplay.call("search", query="pytest", limit=3) == {"hits": ["pytest-0", "pytest-1"]}'


def test_a_masked_argument_does_not_count_for_matching(project: pytest.Pytester) -> None:
    """With a rule on ``/args/limit`` in toolreplay.toml, a call with another limit replays the
    recorded answer without running the tool; another query still misses."""
    project.makefile(".toml", toolreplay=RULE)
    project.makepyfile(test_agent=agent())
    project.runpytest().assert_outcomes(passed=1)
    (project.path / "live.log").unlink()
    (project.path / "offline").touch()
    project.makepyfile(test_agent=agent(calls=SECOND))
    project.runpytest().assert_outcomes(passed=1)
    assert live_calls(project) == []
    project.makepyfile(test_agent=agent(calls=SECOND.replace('query="pytest"', 'query="other"')))
    project.runpytest().assert_outcomes(failed=1)
    # without the rule, the other limit is a miss
    (project.path / "toolreplay.toml").unlink()
    project.makepyfile(test_agent=agent(calls=SECOND))
    project.runpytest().assert_outcomes(failed=1)
