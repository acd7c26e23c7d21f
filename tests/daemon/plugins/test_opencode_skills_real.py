"""The real OpenCode (`opencode run`, offline against the scripted model server) lists a skill skillopt
installed for both Claude Code and OpenCode once, from OpenCode's own folder, and also lists what it finds in
the shared `.agents` folder: the facts the installer and `skillopt doctor` rely on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skillopt_daemon.registry.installers import get_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY
from testkit.opencode import opencode_cli, opencode_plugin
from testkit.opencode_cli import opencode_env, run_opencode

pytestmark = [pytest.mark.agent_cli, pytest.mark.usefixtures("opencode_plugin")]
__all__ = ["opencode_cli", "opencode_plugin"]

SKILL = b"---\nname: release-check\ndescription: how to run the release check\n---\nUse --strict.\n"
SHARED = b"---\nname: notes-style\ndescription: how to write release notes\n---\nShort lines.\n"


def _system_prompts(server: ScriptedServer) -> str:
    """The system messages OpenCode sent (where it lists the skills it found)."""
    return " ".join(
        str(m.get("content"))
        for r in server.requests
        for m in r.body.get("messages", [])
        if isinstance(m, dict) and m.get("role") == "system"
    )


def test_a_skill_installed_for_claude_code_and_opencode_is_listed_once(
    opencode_cli: Path, model_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    bundle = SkillBundle(files={"SKILL.md": SKILL})
    for tool in (AgentTool.CLAUDE_CODE, AgentTool.parse("opencode")):
        get_installer(tool).install(InstallTarget(tool, "user"), "release-check", bundle, "i1", None)
    assert (home / ".claude/skills/release-check/SKILL.md").is_file()
    shared = home / ".agents/skills/notes-style"
    shared.mkdir(parents=True)
    (shared / "SKILL.md").write_bytes(SHARED)

    env = opencode_env(home, model_server.base_url_openai, api_key=SCRIPTED_API_KEY)
    run = run_opencode(opencode_cli, "hello", cwd=project, env=env)
    assert run.returncode == 0, run.describe()
    listed = [
        (m.group(1), m.group(2))
        for m in re.finditer(
            r"<name>([^<]+)</name>.*?<location>([^<]+)</location>", _system_prompts(model_server), re.S
        )
    ]
    mine = sorted({loc for name, loc in listed if name == "release-check"})
    assert mine == [str(home / ".config/opencode/skills/release-check/SKILL.md")]
    assert str(shared / "SKILL.md") in {loc for name, loc in listed if name == "notes-style"}
