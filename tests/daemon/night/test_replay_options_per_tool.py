"""Replay options belong to each tool: `tools.<tool>.replay_options` over the tool's own defaults, the same
for the night and `skillopt replay`; the retired Claude-only keys still load, moved, with a warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings, load_settings
from skillopt_daemon.night.agents import make_agent, make_chat, replay_missing, replayable_tools
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConfigError


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "skillopt" / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def test_each_tool_takes_its_own_replay_options(config_file: Path) -> None:
    config_file.write_text(
        '[tools.claude-code.replay_options]\npermission_mode = "plan"\n'
        '[tools.gemini.replay_options]\npermission_mode = "auto_edit"\n'
    )
    from skillopt_daemon.core import paths

    assert paths.config_file() == config_file
    settings = load_settings()
    claude = make_agent(settings, AgentTool.CLAUDE_CODE)
    assert claude.limits.permission_mode == "plan"
    assert claude.limits.allowed_tools == (
        "Bash",
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
    )  # the row's default
    gemini = make_agent(settings, AgentTool.GEMINI, max_turns=5, model="gemini-2.5-flash")
    argv = gemini.build_argv("gemini", "do it", gemini.limits, Path("."))
    assert argv[argv.index("--approval-mode") + 1] == "auto_edit"
    assert argv[argv.index("--model") + 1] == "gemini-2.5-flash"
    assert gemini.limits.max_turns == 5


def test_the_retired_claude_keys_still_load_moved_to_the_tool(
    config_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config_file.write_text('[replay]\nclaude_permission_mode = "default"\nclaude_allowed_tools = ["Read"]\n')
    with caplog.at_level(logging.WARNING, logger="skillopt.config"):
        settings = load_settings()
    assert settings.tool(AgentTool.CLAUDE_CODE).replay_options == {
        "permission_mode": "default",
        "allowed_tools": ["Read"],
    }
    assert "tools.claude-code.replay_options" in caplog.text
    assert make_agent(settings, AgentTool.CLAUDE_CODE).limits.allowed_tools == ("Read",)


def test_which_tools_replay_comes_from_their_rows() -> None:
    settings = Settings()
    assert AgentTool.GEMINI in replayable_tools()
    assert AgentTool.OPENCLAW not in replayable_tools()
    assert "no headless runner" in (replay_missing(settings, AgentTool.DEVIN) or "")
    with pytest.raises(ConfigError, match="devin cannot be replayed") as exc:
        make_agent(settings, AgentTool.DEVIN)
    assert "gemini" in (exc.value.hint or "")


def test_a_night_model_that_is_an_agent_cli_is_refused_before_the_night_spends_anything(
    config_file: Path,
) -> None:
    """`optimizer.backend = "claude-code"` names the replaying agent, not a chat model: the night says so
    when it builds its backends, instead of failing at the optimizer's first call."""
    settings = Settings()
    settings.optimizer.backend = "claude-code"
    with pytest.raises(ConfigError) as exc:
        make_chat(settings, settings.optimizer, "optimizer")
    assert exc.value.message == "the optimizer backend 'claude-code' is not a chat model"
    assert "claude-code-chat" in (exc.value.hint or "")
    settings.optimizer.backend = "claude-code-chat"
    assert make_chat(settings, settings.optimizer, "optimizer").name == "claude-code-chat"
