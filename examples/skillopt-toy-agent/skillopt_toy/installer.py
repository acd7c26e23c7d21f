"""toy-agent reads user skills from `~/.toy-agent/skills/<name>/SKILL.md` (and in a repository from
`.toy-agent/skills`, the row's first project folder, which `FolderInstaller` uses by default)."""

from __future__ import annotations

from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool


class ToyInstaller(FolderInstaller):
    tool = AgentTool("toy-agent")

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]
