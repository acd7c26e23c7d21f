"""Help that lists the agent tools names every built-in one (Gemini CLI was missing from `install`'s)."""

from __future__ import annotations

import pytest
from harness import cli

from skillopt_lib.agents import AgentTool


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_install_help_names_every_built_in_tool(command: str) -> None:
    out = cli.here(command, "--help").stdout
    missing = [t.value for t in AgentTool if t.value not in out]
    assert missing == [], out
