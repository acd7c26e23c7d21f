"""Where OpenCode reads skills, and what `skillopt doctor` says about them (checked with OpenCode 1.18.33 by
listing the skills it offered the model, `tests/daemon/plugins/test_opencode_skills_real.py`).

OpenCode lists `<name>/SKILL.md` from its own folders, `~/.config/opencode/skills` and `skill` (the config
folder follows `XDG_CONFIG_HOME`) and in a project `.opencode/skills` and `.opencode/skill`, and also from
the folders of other tools, `~/.claude/skills`, `~/.agents/skills`, `<project>/.claude/skills` and
`<project>/.agents/skills` (unless `OPENCODE_DISABLE_EXTERNAL_SKILLS` or `OPENCODE_DISABLE_CLAUDE_CODE_SKILLS`
is set). A name found in several is listed once, and its own folders win.

A version therefore goes to OpenCode's own `skills` folder only: a skill that skillopt also installs for
Claude Code (into `~/.claude/skills`) is still listed once, from OpenCode's copy, and writing the shared
folders would change what Claude Code or Codex see. What OpenCode also picks up from the other tools'
folders, and which of those skillopt's copies hide, `doctor` names.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillopt_daemon.core import paths
from skillopt_daemon.registry.installers.base import FolderInstaller, InstallTarget, Location
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import iter_skill_dirs

# The other tools' skill folders OpenCode also reads, relative to the user's home or the project.
SHARED_DIRS = (".claude/skills", ".agents/skills")
# Set to skip those folders (OpenCode's own variables).
SHARED_OFF_ENV = (
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS",
    "OPENCODE_DISABLE_CLAUDE_CODE",
)


def config_dir() -> Path:
    """OpenCode's config folder: `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else paths.user_home() / ".config") / "opencode"


class OpenCodeInstaller(FolderInstaller):
    tool = AgentTool.declare("opencode")

    def user_locations(self) -> list[Location]:
        config = config_dir()
        return [Location(config / "skills", config)]

    def project_locations(self, project: Path) -> list[Location]:
        return [Location(project / ".opencode" / "skills", project)]

    def shared_folders(self, target: InstallTarget) -> list[Path]:
        """The other tools' skill folders OpenCode reads for this target (none when they are switched off)."""
        if any(os.environ.get(name, "").strip().lower() in ("1", "true") for name in SHARED_OFF_ENV):
            return []
        base = target.project if target.scope == "project" else paths.user_home()
        assert base is not None
        return [base / rel for rel in SHARED_DIRS]

    def shared_skills(self, target: InstallTarget) -> list[Path]:
        """Skill folders OpenCode lists from the other tools' folders for this target."""
        return [d for folder in self.shared_folders(target) for d in iter_skill_dirs(folder)]

    def hidden(self, target: InstallTarget) -> list[Path]:
        """The other tools' skill folders hidden from OpenCode by one of the same name in its own folder."""
        own = {d.name for loc in self.locations(target) for d in iter_skill_dirs(loc.root)}
        return [d for d in self.shared_skills(target) if d.name in own]


def doctor(tool: AgentTool) -> list[tuple[str, str, str]]:
    """`skillopt doctor`'s OpenCode checks: which other tools' skills OpenCode also lists, and which of them
    a skill in OpenCode's own folder hides (OpenCode lists each name once, its own folder first)."""
    installer = OpenCodeInstaller()
    target = InstallTarget(tool, "user")
    own = installer.user_locations()[0].root
    folders = installer.shared_folders(target)
    if not folders:
        return [
            (
                "skills folders",
                "info",
                f"OpenCode reads only {own}: its scans of other tools' folders are off",
            )
        ]
    shared = installer.shared_skills(target)
    hidden = installer.hidden(target)
    checks = [
        (
            "skills folders",
            "info",
            f"OpenCode reads {own} and also {', '.join(str(f) for f in folders)} "
            f"({len(shared)} skill{'s' if len(shared) != 1 else ''} there now); skillopt installs to {own} only, "
            "so a skill installed for several tools is listed once",
        )
    ]
    checks += [
        (
            "skills folders",
            "info",
            f"OpenCode uses {own / d.name} and ignores {d} (same name; its own folder wins)",
        )
        for d in hidden
    ]
    return checks
