"""Gemini CLI reads skills from `~/.gemini/skills/<name>/` and `~/.agents/skills/<name>/` (the folder Codex
also reads), and in a trusted repository from `<repo>/.gemini/skills` and `<repo>/.agents/skills`; the
`.agents` folder of each pair wins a name found in both.

A version goes to Gemini's own folder only (`~/.gemini/skills`, which follows `GEMINI_CLI_HOME`): writing
the shared `.agents` folder too would make Codex list the skill twice. A skill of the same name that the
user keeps in the `.agents` folder hides skillopt's copy from Gemini, so `skillopt doctor` names each one
(`doctor` below), with what to do.
"""

from __future__ import annotations

from pathlib import Path

from skillopt_daemon.core import paths
from skillopt_daemon.registry.installers.base import FolderInstaller, InstallTarget, Location
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import iter_skill_dirs


class GeminiInstaller(FolderInstaller):
    tool = AgentTool.GEMINI

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]

    def shadowing(self, target: InstallTarget) -> list[Path]:
        """Skill folders in the `.agents` folder Gemini prefers that hide one of the same name in its own."""
        if target.scope == "project":
            assert target.project is not None
            shared = target.project / ".agents" / "skills"
        else:
            shared = self.home().parent / ".agents" / "skills"
        own = {d.name for loc in self.locations(target) for d in iter_skill_dirs(loc.root)}
        return [d for d in iter_skill_dirs(shared) if d.name in own]


def doctor(tool: AgentTool) -> list[tuple[str, str, str]]:
    """`skillopt doctor`'s Gemini checks: user skills that Gemini does not see because `~/.agents/skills`
    has one of the same name."""
    installer = GeminiInstaller()
    hidden = installer.shadowing(InstallTarget(tool, "user"))
    if not hidden:
        return [("skills folders", "ok", f"no skill in {paths.user_home() / '.agents' / 'skills'} hides one")]
    return [
        (
            "skills folders",
            "warn",
            f"{d} hides skillopt's {d.name} from Gemini CLI (the .agents folder wins); remove or rename one",
        )
        for d in hidden
    ]
