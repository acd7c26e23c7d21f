"""Cursor reads skills from `<repo>/.cursor/skills/<name>/` and, for the user, `~/.cursor/skills/<name>/`."""

from __future__ import annotations

from pathlib import Path

from skillopt.agents import AgentTool
from skillopt_daemon import paths
from skillopt_daemon.installers.base import FolderInstaller, Location


class CursorInstaller(FolderInstaller):
    tool = AgentTool.CURSOR

    def __init__(self, home: Path | None = None) -> None:
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
