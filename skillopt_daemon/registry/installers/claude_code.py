"""Claude Code reads personal skills from `<config home>/skills/<name>/` (`~/.claude`, or
`CLAUDE_CONFIG_DIR`) and project skills from `<repo>/.claude/skills/<name>/`."""

from __future__ import annotations

from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool


class ClaudeCodeInstaller(FolderInstaller):
    tool = AgentTool.CLAUDE_CODE

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]
