"""Claude Code reads personal skills from `<config home>/skills/<name>/` (`~/.claude`, or
`CLAUDE_CONFIG_DIR`) and project skills from `<repo>/.claude/skills/<name>/`."""

from __future__ import annotations

from pathlib import Path

from skillopt.agents import AgentTool
from skillopt_daemon import paths
from skillopt_daemon.installers.base import FolderInstaller, Location


class ClaudeCodeInstaller(FolderInstaller):
    tool = AgentTool.CLAUDE_CODE

    def __init__(self, home: Path | None = None) -> None:
        # None: resolved at each call, so a changed CLAUDE_CONFIG_DIR or config is honoured.
        self._home = home

    def home(self) -> Path:
        if self._home is not None:
            return self._home
        try:
            from skillopt_daemon.config import tool_home

            return tool_home(self.tool)
        except Exception:  # a broken config must not stop installs to the default folder
            return paths.default_tool_home(self.tool)

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]
