"""Cursor reads skills from `<repo>/.cursor/skills/<name>/` and, for the user, `~/.cursor/skills/<name>/`."""

from __future__ import annotations

from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool


class CursorInstaller(FolderInstaller):
    tool = AgentTool.CURSOR

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]
