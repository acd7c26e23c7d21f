"""Codex reads skills from `~/.agents/skills/<name>/` (current builds) and `~/.codex/skills/<name>/` (older
builds still do), and from `<repo>/.agents/skills` and `<repo>/.codex/skills`. A version goes to both, so
whichever Codex a user runs finds the same version."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from skillopt_daemon.core import paths
from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool


class CodexInstaller(FolderInstaller):
    tool = AgentTool.CODEX

    def __init__(
        self,
        home: Path | None = None,
        user_home: Path | None = None,
        *,
        instruction_projects: Collection[Path] = (),
    ) -> None:
        super().__init__(home, instruction_projects=instruction_projects)
        self._user_home = user_home

    def user_locations(self) -> list[Location]:
        user = self._user_home or paths.user_home()
        agents = user / ".agents"
        codex = self.home()
        return [Location(agents / "skills", agents), Location(codex / "skills", codex)]

    def project_locations(self, project: Path) -> list[Location]:
        return [
            Location(project / ".agents" / "skills", project),
            Location(project / ".codex" / "skills", project),
        ]
