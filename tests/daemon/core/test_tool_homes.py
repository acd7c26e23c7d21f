"""The installers skip loading the settings only when the settings would give every tool its default home
and log nothing (`core/tool_homes.py`): each config here is checked against what loading it really does."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings, load_settings, tool_home
from skillopt_daemon.core.tool_homes import may_set_tool_home
from skillopt_lib.agents import AgentTool


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.upper().startswith("SKILLOPT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = paths.config_file()
    path.parent.mkdir(parents=True)
    return path


# Configs whose loading gives every tool its default home, without a word: the settings are not loaded.
DEFAULT_HOMES = [
    "",
    '[optimizer]\nconsent = "no"\n',
    "[tools.codex]\nenabled = false\n[tools.claude-code.replay_options]\npermission_mode = 'plan'\n",
    "[replay]\nmax_turns = 12\n[night]\nmin_tasks = 2\n",
    "[nightt]\nx = 1\n",  # does not load: the installers fall back to the default home
    "[night]\nmin_tasks = 'many'\n",
]
# Configs that may name another home, or warn when loaded, or are not TOML: the settings are loaded.
LOADED = [
    '[tools.claude-code]\nhome = "/elsewhere"\n',
    '[tools.claude]\nhome = "/elsewhere"\n',
    'tools = "x"\n',
    '[replay]\nclaude_permission_mode = "plan"\n',
    '[replay]\nclaude_allowed_tools = ["Read"]\n',
    "[night]\nsplit_ratios = [0.5, 0.5]\n",
    "replay = 3\n",
    "not toml [",
]


@pytest.mark.parametrize("text", DEFAULT_HOMES)
def test_a_config_that_names_no_home_is_not_loaded(
    config_file: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    config_file.write_text(text)
    assert may_set_tool_home() is False
    with caplog.at_level(logging.WARNING):
        for tool in AgentTool:
            try:
                home = tool_home(tool)
            except Exception:  # the installers' fallback for a config that does not load
                home = paths.default_tool_home(tool)
            assert home == paths.default_tool_home(tool)
    assert caplog.records == []


@pytest.mark.parametrize("text", LOADED)
def test_a_config_that_may_name_a_home_or_warns_is_loaded(config_file: Path, text: str) -> None:
    config_file.write_text(text)
    assert may_set_tool_home() is True


def test_no_config_file_is_not_loaded(config_file: Path) -> None:
    assert not config_file.exists()
    assert may_set_tool_home() is False
    assert tool_home(AgentTool.CLAUDE_CODE) == paths.default_tool_home(AgentTool.CLAUDE_CODE)


def test_the_retired_keys_warn_when_loaded(config_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The configs of LOADED that load at all, with the warning the installers' shortcut must not swallow.
    for text in (t for t in LOADED if "claude_" in t or "split_ratios" in t):
        config_file.write_text(text)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            load_settings()
        assert caplog.records, text


@pytest.mark.parametrize(
    "name",
    [
        "SKILLOPT_TOOLS__CLAUDE_CODE__HOME",
        "skillopt_tools",
        "SKILLOPT_REPLAY__CLAUDE_PERMISSION_MODE",
        "SKILLOPT_NIGHT",
    ],
)
def test_a_variable_for_the_tools_replay_or_night_settings_is_loaded(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "x")
    assert may_set_tool_home() is True


def test_variables_that_are_not_those_settings_are_not_loaded(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_NO_DESKTOP_NOTIFY", "1")
    monkeypatch.setenv("SKILLOPT_OPTIMIZER__MODEL", "m")
    assert may_set_tool_home() is False


def test_a_home_set_by_a_variable_is_the_one_the_settings_give(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SKILLOPT_TOOLS__CLAUDE_CODE__HOME", str(tmp_path / "elsewhere"))
    assert may_set_tool_home() is True
    assert tool_home(AgentTool.CLAUDE_CODE) == tmp_path / "elsewhere"


def test_the_sections_checked_are_settings() -> None:
    from skillopt_daemon.core import tool_homes

    assert set(tool_homes._SECTIONS_READ) <= set(Settings.model_fields)
