"""Codex reads skills from `$CODEX_HOME/skills/<name>/` (`~/.codex/skills`) and `~/.agents/skills/<name>/`,
and in a repository from `<repo>/.codex/skills` and `<repo>/.agents/skills`. It lists a skill found in both
twice, so a version goes to one folder only: the Codex one, where Codex's own skill-creator and
skill-installer put skills (and which follows `CODEX_HOME`; `.agents/skills` is shared with other tools).

Older skillopt releases wrote both; the `.agents` folders are `retired_locations`: the registry removes
skillopt's copy there when it is byte-identical to what skillopt wrote, and otherwise leaves it alone.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from skillopt_daemon.core import paths
from skillopt_daemon.registry.installers.base import FolderInstaller, InstallTarget, Location
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
        codex = self.home()
        return [Location(codex / "skills", codex)]

    def project_locations(self, project: Path) -> list[Location]:
        return [Location(project / ".codex" / "skills", project)]

    def retired_locations(self, target: InstallTarget) -> list[Location]:
        if target.scope == "project":
            assert target.project is not None
            return [Location(target.project / ".agents" / "skills", target.project)]
        agents = (self._user_home or paths.user_home()) / ".agents"
        return [Location(agents / "skills", agents)]
