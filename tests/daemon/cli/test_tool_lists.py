"""Help that lists the agent tools names every built-in one (Gemini CLI was missing from `install`'s)."""

from __future__ import annotations

import pytest

from skillopt_lib.agents import BUILTIN_TOOLS
from testkit import cli


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_install_help_names_every_built_in_tool(command: str) -> None:
    out = cli.here(command, "--help").stdout
    # A plugin's tool (OpenCode's, registered by skillopt's own entry point) is not in this fixed text.
    missing = [row.tool.value for row in BUILTIN_TOOLS if row.tool.value not in out]
    assert missing == [], out


def test_a_replay_without_an_exec_agent_names_every_tool_that_can_replay(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The error a replay gives a chat model as its agent lists the tools that can replay, Gemini CLI too."""
    from skillopt_daemon.night.agents import replayable_tools
    from skillopt_daemon.night.learning.replay import ReplayEnvironment
    from skillopt_daemon.night.tasks import NightTask
    from skillopt_lib.errors import ConfigError
    from skillopt_lib.skill import SkillBundle

    seed = SkillBundle.from_text("---\nname: s\ndescription: A skill. Use when asked.\n---\nBody.\n")
    env = ReplayEnvironment(
        [NightTask(id="t", prompt="fix lint", split="val")], seed_skill=seed, workspaces_root=tmp_path
    )
    (item,) = env.splits().val
    with pytest.raises(ConfigError) as err:
        env.run(item, seed, object())  # type: ignore[arg-type]
    assert all(t.value in str(err.value) for t in replayable_tools()) and "gemini" in str(err.value)
