"""Each built-in tool's integration module (named by its row) places what that tool needs: here, the MCP
server entry in Copilot's own shape, and nothing beyond the skill for a tool without a module (Gemini)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.integrations.placements import JsonPlacement
from skillopt_daemon.integrations.plan import plan_placements, resolve_target
from skillopt_lib.agents import AgentTool


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    for var in ("COPILOT_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_copilot_gets_skillopts_mcp_server_in_its_own_shape(home: Path) -> None:
    placed = plan_placements(resolve_target(AgentTool.COPILOT), executable="/opt/bin/skillopt")
    (mcp,) = [p for p in placed if isinstance(p, JsonPlacement)]
    assert mcp.path == home / ".copilot" / "mcp-config.json"
    assert mcp.add({})["mcpServers"]["skillopt"] == {
        "type": "local",
        "command": "/opt/bin/skillopt",
        "args": ["mcp"],
        "tools": ["*"],
    }


def test_a_tool_without_an_integration_module_gets_the_skill_only(home: Path) -> None:
    placed = plan_placements(resolve_target(AgentTool.GEMINI), executable="skillopt")
    assert [p.path for p in placed] == [home / ".gemini" / "skills" / "skillopt" / "SKILL.md"]  # type: ignore[attr-defined]
